"""HLO modules (tests/hlo/) on the CPU reference executor against numpy: a
hand-written MLP training step, convolutions in three layouts, batched dots,
and slice/concatenate/compare/select/reduce-max."""
import pathlib

import numpy as np

import tpusim

HLO = pathlib.Path(__file__).resolve().parents[1] / "hlo"


def numpy_conv_nchw(x, w, strides, pads, dilations, group):
    """x [N, C, H, W], w [O, C/group, KH, KW], pads (top, left, bottom, right)."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (xp.shape[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (xp.shape[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, m, oh, ow))
    per_group = m // group
    for o in range(m):
        first = (o // per_group) * cg
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, first:first + cg,
                           i * strides[0]:i * strides[0] + dilations[0] * (kh - 1) + 1:dilations[0],
                           j * strides[1]:j * strides[1] + dilations[1] * (kw - 1) + 1:dilations[1]]
                y[:, o, i, j] = np.tensordot(patch, w[o], axes=([1, 2, 3], [0, 1, 2]))
    return y


def test_mlp_train_step_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 8)]
    w1 = (rng.standard_normal((16, 32)) * 0.3).astype(np.float32)
    b1 = (rng.standard_normal(32) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((32, 4)) * 0.3).astype(np.float32)
    b2 = (rng.standard_normal(4) * 0.1).astype(np.float32)
    feeds = {"Arg_0.1": x, "Arg_1.2": y, "Arg_2.3": w1, "Arg_3.4": b1, "Arg_4.5": w2, "Arg_5.6": b2}
    out = tpusim.reference(str(HLO / "mlp_train_step.hlo"), feeds)

    # The same step in float64 numpy: forward, softmax cross-entropy, backward, SGD at 0.1.
    z1 = x @ w1 + b1
    a1 = np.maximum(z1, 0)
    z2 = a1 @ w2 + b2
    s = z2 - z2.max(axis=1, keepdims=True)
    logp = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    loss = -(y * logp).sum() / 8
    dz2 = (np.exp(logp) - y) / 8
    dw2 = a1.T @ dz2
    dz1 = (dz2 @ w2.T) * (z1 > 0)
    dw1 = x.T @ dz1
    np.testing.assert_allclose(out["multiply.42"], loss, rtol=1e-5)
    np.testing.assert_allclose(out["subtract.63"], w1 - 0.1 * dw1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["subtract.66"], b1 - 0.1 * dz1.sum(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["subtract.69"], w2 - 0.1 * dw2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["subtract.72"], b2 - 0.1 * dz2.sum(axis=0), rtol=1e-5, atol=1e-6)


def test_convolutions_in_three_layouts_match_numpy():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 9, 9, 3)).astype(np.float32)   # NHWC
    k1 = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)  # HWIO
    k2 = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)  # OIHW, 2 groups
    k3 = rng.standard_normal((5, 2, 2, 3)).astype(np.float32)  # O, H, W, I
    out = tpusim.reference(str(HLO / "conv_layouts.hlo"), {"Arg_0.1": x, "Arg_1.2": k1, "Arg_2.3": k2, "Arg_3.4": k3})
    x_nchw = x.transpose(0, 3, 1, 2)
    c1 = numpy_conv_nchw(x_nchw, k1.transpose(3, 2, 0, 1), (2, 2), (1, 1, 1, 1), (1, 1), 1)
    np.testing.assert_allclose(out["convolution.5"], c1.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)
    c2 = numpy_conv_nchw(c1, k2, (1, 1), (0, 0, 1, 1), (1, 1), 2)
    np.testing.assert_allclose(out["convolution.7"], c2, rtol=1e-4, atol=1e-4)
    c3 = numpy_conv_nchw(x_nchw, k3.transpose(0, 3, 1, 2), (1, 1), (0, 0, 0, 0), (2, 2), 1)
    np.testing.assert_allclose(out["convolution.8"], c3, rtol=1e-4, atol=1e-4)
    # 01oi: dimension 2 of k1 is the output feature; rhs_reversal flips both spatial dimensions.
    flipped = k1.transpose(2, 3, 0, 1)[:, :, ::-1, ::-1]
    c4 = numpy_conv_nchw(c1, flipped, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    np.testing.assert_allclose(out["convolution.10"], c4.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(out["reverse.11"], x[:, ::-1, :, ::-1])
    # lhs_dilate=2x2: zeros between the 5x5 outputs (9x9), then the flipped kernel with pad 1.
    dilated = np.zeros((2, 4, 9, 9))
    dilated[:, :, ::2, ::2] = c1
    c5 = numpy_conv_nchw(dilated, flipped, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    np.testing.assert_allclose(out["convolution.12"], c5.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)
    # f01b_i01o->01bf is the weight gradient of a stride-1 pad-1 conv: dW[kh, kw, c, o] =
    # sum over n, h, w of x_padded[n, h + kh, w + kw, c] * dy[n, h, w, o].
    dy = numpy_conv_nchw(x_nchw, k1.transpose(3, 2, 0, 1), (1, 1), (1, 1, 1, 1), (1, 1), 1).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(out["convolution.13"], dy, rtol=1e-4, atol=1e-4)
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    dw = np.zeros((3, 3, 3, 4))
    for kh in range(3):
        for kw in range(3):
            dw[kh, kw] = np.einsum("nhwc,nhwo->co", xp[:, kh:kh + 9, kw:kw + 9, :], out["convolution.13"])
    np.testing.assert_allclose(out["convolution.14"], dw, rtol=1e-4, atol=1e-3)


def test_batched_dots_match_einsum():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((3, 5, 6)).astype(np.float32)
    c = rng.standard_normal((2, 5, 3)).astype(np.float32)
    d = rng.standard_normal((3, 7, 5)).astype(np.float32)
    out = tpusim.reference(str(HLO / "batched_dot.hlo"), {"Arg_0.1": a, "Arg_1.2": b, "Arg_2.4": c, "Arg_3.5": d})
    np.testing.assert_allclose(out["dot.3"], np.einsum("bmk,bkn->bmn", a, b), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["dot.6"], np.einsum("mkb,bnk->bmn", c, d), rtol=1e-5, atol=1e-5)


def test_slice_concat_select_and_reductions_match_numpy():
    x = np.arange(32, dtype=np.float32).reshape(4, 8) / 10 - 1.2
    i = np.array([-3, 0, 2, 7], dtype=np.int64)
    out = tpusim.reference(str(HLO / "slice_select.hlo"), {"x": x, "i": i.astype(np.int32)})
    s1 = x[0:4, 1:8:2]
    c2 = np.concatenate([s1, x[1:3, 0:4], np.arange(1, 9, dtype=np.float32).reshape(2, 4)])
    np.testing.assert_array_equal(out["c2"], c2)
    sel = np.where(c2 > 0.5, c2, 0.5)
    np.testing.assert_allclose(out["ar"], 2 / np.sqrt(sel.max(axis=1)), rtol=1e-6)
    np.testing.assert_array_equal(out["inc"], i + 1)
    np.testing.assert_array_equal(out["ge"], (i + 1 >= 1).astype(np.int64))
    np.testing.assert_array_equal(out["rmin"], x.min(axis=0))
    np.testing.assert_array_equal(out["clamped"], np.clip(s1, -1, 1))
    # padding=1_-1_1x2_0 with 0.5: rows 1 low, interior 1, -1 high (7); columns 2 low (6).
    padded = np.full((9, 6), 0.5, dtype=np.float32)
    padded[1:8:2, 2:] = s1
    np.testing.assert_array_equal(out["padded"], padded[:7])


def test_iota_bitcast_and_tuple_parameters(tmp_path):
    path = tmp_path / "iota.hlo"
    path.write_text("""HloModule m
ENTRY e {
  p = (f32[2,6]{1,0}, s32[]) parameter(0)
  x = f32[2,6]{1,0} get-tuple-element(p), index=0
  b = f32[3,4]{1,0} bitcast(x)
  i = s32[3,4]{1,0} iota(), iota_dimension=1
  f = f32[3,4] iota(), iota_dimension=0
  s = f32[3,4] add(b, f)
  k = s32[] get-tuple-element(p), index=1
  ks = s32[3,4] broadcast(k), dimensions={}
  j = s32[3,4] multiply(i, ks)
  ROOT t = (f32[3,4], s32[3,4]) tuple(s, j)
}
""")
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    out = tpusim.reference(str(path), {"p.0": x, "p.1": np.array(3)})
    np.testing.assert_array_equal(out["s"], x.reshape(3, 4) + np.arange(3, dtype=np.float32)[:, None])
    np.testing.assert_array_equal(out["j"], 3 * np.tile(np.arange(4), (3, 1)))


def test_convert_between_dtypes_is_a_cast(tmp_path):
    path = tmp_path / "convert.hlo"
    path.write_text("""HloModule m
ENTRY e {
  x = f32[6] parameter(0)
  b = bf16[6] convert(x)
  i = s32[6] convert(x)
  p = pred[6] convert(i)
  f = f32[6] convert(p)
  k = s32[] constant(7)
  kf = f32[] convert(k)
  ROOT t = (bf16[6], s32[6], f32[6], f32[]) tuple(b, i, f, kf)
}
""")
    x = np.array([1 / 3, -2.7, 2.7, 0.4, 1000.5, -0.0], dtype=np.float32)
    out = tpusim.reference(str(path), {"x": x})
    # bf16 keeps 8 significant bits (round to nearest even); to s32 truncates toward zero.
    bits = x.view(np.uint32)
    bf16 = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).view(np.float32)
    np.testing.assert_array_equal(out["b"], bf16)
    np.testing.assert_array_equal(out["i"], np.trunc(x).astype(np.int64))
    np.testing.assert_array_equal(out["f"], (np.trunc(x) != 0).astype(np.float32))
    assert out["kf"] == 7.0
