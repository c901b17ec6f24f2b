"""Conv on the CPU reference executor against a direct numpy convolution, over
strides, asymmetric pads, dilations, groups, bias and auto_pad; and its
gradients through one training step against numpy's."""
import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper
import pytest

import tpusim


def numpy_conv(x, w, strides, pads, dilations, group):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh_ = (xp.shape[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow_ = (xp.shape[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, m, oh_, ow_), dtype=np.float64)
    per_group = m // group
    for o in range(m):
        first = (o // per_group) * cg
        for i in range(oh_):
            for j in range(ow_):
                patch = xp[:, first:first + cg,
                           i * strides[0]:i * strides[0] + dilations[0] * (kh - 1) + 1:dilations[0],
                           j * strides[1]:j * strides[1] + dilations[1] * (kw - 1) + 1:dilations[1]]
                y[:, o, i, j] = np.tensordot(patch, w[o], axes=([1, 2, 3], [0, 1, 2]))
    return y


def conv_model(path, x_shape, w, bias, **attrs):
    nodes = [oh.make_node("Conv", ["x", "w", "b"] if bias is not None else ["x", "w"], ["y"], **attrs)]
    inits = [onnx.numpy_helper.from_array(w, "w")]
    if bias is not None:
        inits.append(onnx.numpy_helper.from_array(bias, "b"))
    graph = oh.make_graph(nodes, "conv", [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x_shape)],
                          [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], inits)
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    onnx.save(model, path)


CASES = [
    dict(strides=[1, 1], pads=[0, 0, 0, 0], dilations=[1, 1], group=1),
    dict(strides=[2, 1], pads=[1, 0, 2, 1], dilations=[1, 1], group=1),
    dict(strides=[1, 2], pads=[1, 1, 1, 1], dilations=[2, 1], group=1),
    dict(strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1], group=2),
]


@pytest.mark.parametrize("case", CASES)
def test_conv_matches_numpy(tmp_path, case):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 7, 6), dtype=np.float32)
    w = rng.standard_normal((6, 4 // case["group"], 3, 2), dtype=np.float32)
    b = rng.standard_normal(6, dtype=np.float32)
    path = str(tmp_path / "conv.onnx")
    conv_model(path, x.shape, w, b, **case)
    out = tpusim.reference(path, {"x": x}, mode="inference", threads=2)
    expected = numpy_conv(x, w, **case) + b.reshape(1, 6, 1, 1)
    np.testing.assert_allclose(out["y"], expected, rtol=1e-5, atol=1e-5)


def test_conv_same_upper_keeps_the_size(tmp_path):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 2, 5, 5), dtype=np.float32)
    w = rng.standard_normal((3, 2, 3, 3), dtype=np.float32)
    path = str(tmp_path / "same.onnx")
    conv_model(path, x.shape, w, None, auto_pad="SAME_UPPER", strides=[2, 2])
    out = tpusim.reference(path, {"x": x}, mode="inference")
    # ceil(5 / 2) = 3; total pad (3 - 1) * 2 + 3 - 5 = 2, one on each side
    np.testing.assert_allclose(out["y"], numpy_conv(x, w, [2, 2], [1, 1, 1, 1], [1, 1], 1), rtol=1e-5, atol=1e-5)


def test_conv_training_step_matches_numpy_gradients(tmp_path):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 2, 5, 5), dtype=np.float32)
    w = rng.standard_normal((4, 2, 3, 3), dtype=np.float32) * 0.3
    path = str(tmp_path / "train.onnx")
    # conv -> flatten -> logits over 4 * 3 * 3 = 36 classes
    nodes = [oh.make_node("Conv", ["x", "w"], ["c"]), oh.make_node("Flatten", ["c"], ["logits"])]
    graph = oh.make_graph(nodes, "t", [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
                          [oh.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, None)],
                          [onnx.numpy_helper.from_array(w, "w")])
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)]), path)
    labels = np.array([0, 17, 35], dtype=np.int64)
    out = tpusim.reference(path, {"x": x, "labels": labels}, batch=3, learning_rate=1.0)
    logits = numpy_conv(x, w, [1, 1], [0, 0, 0, 0], [1, 1], 1).reshape(3, -1)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(3), labels] -= 1
    dy = (p / 3).reshape(3, 4, 3, 3)
    dw = np.zeros_like(w, dtype=np.float64)
    for i in range(3):
        for j in range(3):
            dw += np.tensordot(dy[:, :, i, j], x[:, :, i:i + 3, j:j + 3], axes=([0], [0]))
    np.testing.assert_allclose(out["w:updated"], w - dw, rtol=1e-4, atol=1e-5)
