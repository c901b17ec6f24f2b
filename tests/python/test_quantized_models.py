"""Models as quantization tools write them, in both of their forms: QOperator (QuantizeLinear,
QLinearConv, QLinearMatMul, DequantizeLinear) and QDQ (QuantizeLinear and DequantizeLinear
pairs around float ops). The CPU reference matches a numpy model of ONNX's integer
arithmetic (int32 accumulation; requantizing in float32, rounding halves to even), and the
simulator runs the products as int8 work on the MXU (docs/frontend.md)."""
import json
import subprocess

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as onh

import tpusim

F = onnx.TensorProto.FLOAT


def init(name, value):
    return onh.from_array(value, name)


def save(tmp_path, name, nodes, inits, out_shape):
    graph = oh.make_graph(nodes, name, [oh.make_tensor_value_info("x", F, ["batch", 3, 8, 8])],
                          [oh.make_tensor_value_info("logits", F, out_shape)], inits)
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return str(path)


def quantize(v, scale, zero_point, dtype):
    info = np.iinfo(dtype)
    return np.clip(np.rint(v.astype(np.float32) / np.float32(scale)) + zero_point, info.min, info.max).astype(dtype)


def conv2d(x, w, stride, pad):
    """[N, C, H, W] by [M, C, K, K] in int64, zero padding."""
    x = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    n, c, h, wd = x.shape
    m, _, k, _ = w.shape
    oh_, ow = (h - k) // stride + 1, (wd - k) // stride + 1
    out = np.zeros((n, m, oh_, ow), dtype=np.int64)
    for i in range(oh_):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + k, j * stride:j * stride + k]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out


RNG = np.random.default_rng(0)
W = RNG.integers(-60, 60, (6, 3, 3, 3)).astype(np.int8)
W_SCALE = np.linspace(0.01, 0.02, 6).astype(np.float32)  # per output channel
BIAS = RNG.integers(-200, 200, 6).astype(np.int32)
W2 = RNG.integers(0, 256, (6 * 4 * 4, 5)).astype(np.uint8)


def qoperator_model(tmp_path):
    nodes = [
        oh.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        oh.make_node("QLinearConv", ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["yq"], pads=[1, 1, 1, 1],
                     strides=[2, 2]),
        oh.make_node("Reshape", ["yq", "shape"], ["flat"]),
        oh.make_node("QLinearMatMul", ["flat", "ys", "yz", "w2", "w2s", "w2z", "zs", "zz"], ["zq"]),
        oh.make_node("DequantizeLinear", ["zq", "zs", "zz"], ["logits"]),
    ]
    inits = [init("xs", np.float32(0.02)), init("xz", np.uint8(128)), init("w", W), init("ws", W_SCALE),
             init("wz", np.zeros(6, np.int8)), init("ys", np.float32(0.05)), init("yz", np.uint8(10)),
             init("b", BIAS), init("shape", np.array([-1, 96], np.int64)), init("w2", W2),
             init("w2s", np.float32(0.003)), init("w2z", np.uint8(120)), init("zs", np.float32(0.1)),
             init("zz", np.uint8(128))]
    return save(tmp_path, "qoperator", nodes, inits, ["batch", 5])


def qoperator_numpy(x):
    xq = quantize(x, 0.02, 128, np.uint8).astype(np.int64) - 128
    acc = conv2d(xq, W.astype(np.int64), 2, 1) + BIAS.reshape(1, 6, 1, 1)
    multiplier = (np.float32(0.02) * W_SCALE / np.float32(0.05)).reshape(1, 6, 1, 1)
    yq = quantize(acc.astype(np.float32) * multiplier, 1.0, 10, np.uint8)
    acc2 = (yq.reshape(-1, 96).astype(np.int64) - 10) @ (W2.astype(np.int64) - 120)
    zq = quantize(acc2.astype(np.float32) * (np.float32(0.05) * np.float32(0.003) / np.float32(0.1)), 1.0, 128,
                  np.uint8)
    return (zq.astype(np.float32) - 128) * np.float32(0.1)


def test_a_qoperator_model_matches_onnx_integer_arithmetic(tmp_path):
    path = qoperator_model(tmp_path)
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    out = tpusim.reference(path, {"x": x}, mode="inference", batch=2)
    np.testing.assert_array_equal(out["logits"], qoperator_numpy(x))


def test_a_qdq_model_matches_numpy(tmp_path):
    """QDQ: the weights stored int8 and dequantized, the activation quantized and dequantized
    around a float Conv, as onnxruntime's static quantization writes it."""
    nodes = [
        oh.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        oh.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        oh.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
        oh.make_node("Conv", ["xd", "wd"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2]),
        oh.make_node("GlobalAveragePool", ["y"], ["pooled"]),
        oh.make_node("Flatten", ["pooled"], ["logits"]),
    ]
    inits = [init("xs", np.float32(0.02)), init("xz", np.uint8(128)), init("w", W), init("ws", W_SCALE),
             init("wz", np.zeros(6, np.int8))]
    path = save(tmp_path, "qdq", nodes, inits, ["batch", 6])
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    out = tpusim.reference(path, {"x": x}, mode="inference", batch=2)
    xd = (quantize(x, 0.02, 128, np.uint8).astype(np.float32) - 128) * np.float32(0.02)
    wd = W.astype(np.float32) * W_SCALE.reshape(6, 1, 1, 1)
    y = np.zeros((2, 6, 4, 4), np.float64)
    padded = np.pad(xd, [(0, 0), (0, 0), (1, 1), (1, 1)])
    for i in range(4):
        for j in range(4):
            y[:, :, i, j] = np.tensordot(padded[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3], wd, axes=([1, 2, 3], [1, 2, 3]))
    np.testing.assert_allclose(out["logits"], y.mean(axis=(2, 3)), rtol=1e-5, atol=1e-6)


def test_the_simulator_runs_the_products_on_the_mxu_in_int8(tmp_path, tpusim_bin):
    path = qoperator_model(tmp_path)
    done = subprocess.run([tpusim_bin, "run", path, "--mode", "inference", "--batch", "8", "--no-instructions",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    rows = {row["op"]: row for row in report["per_op"]}
    for product in ("QLinearConv_1.product", "QLinearMatMul_3.product"):
        assert rows[product]["mxu_busy_cycles"] > 0, rows[product]
    # QLinearMatMul's int8 products: 2 x 8 x 96 x 5 MACs; the zero points' sums are vector work.
    assert rows["QLinearMatMul_3.product"]["flops"] == 2 * 8 * 96 * 5
    assert rows["QLinearMatMul_3.row_sums.sum"]["mxu_busy_cycles"] == 0
