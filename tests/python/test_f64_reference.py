"""float64 through tpusim.reference: an ONNX DOUBLE model takes and returns
float64 arrays, computed in double (a matmul-free model, as the MXU has no f64);
an f32 model still returns float32 and rounds float64 feeds to float once."""
import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper

import tpusim


def save_model(path, elem_type, w):
    # y = tanh(x * w) / 3, then a training step of MSE against targets.
    nodes = [oh.make_node("Mul", ["x", "w"], ["xw"]), oh.make_node("Tanh", ["xw"], ["t"]),
             oh.make_node("Div", ["t", "three"], ["y"])]
    inits = [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(np.array([3], w.dtype), "three")]
    graph = oh.make_graph(nodes, "f64", [oh.make_tensor_value_info("x", elem_type, [2, 3])],
                          [oh.make_tensor_value_info("y", elem_type, None)], inits)
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)]), path)


def test_double_model_runs_in_float64(tmp_path):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3))
    w = rng.standard_normal(3)
    path = str(tmp_path / "f64.onnx")
    save_model(path, onnx.TensorProto.DOUBLE, w)
    out = tpusim.reference(path, {"x": x}, mode="inference")
    assert out["y"].dtype == np.float64
    np.testing.assert_allclose(out["y"], np.tanh(x * w) / 3, rtol=1e-15, atol=0)
    # One SGD step of MSE: w' = w - lr * mean-gradient, in double.
    targets = rng.standard_normal((2, 3))
    step = tpusim.reference(path, {"x": x, "targets": targets}, loss="mse", learning_rate=0.1)
    t = np.tanh(x * w)
    dy = 2 * (t / 3 - targets) / 6
    grad = (dy / 3 * (1 - t * t) * x).sum(axis=0)
    assert step["w:updated"].dtype == np.float64
    np.testing.assert_allclose(step["w:updated"], w - 0.1 * grad, rtol=1e-14)


def test_float_model_rounds_float64_feeds_once(tmp_path):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3))
    w = rng.standard_normal(3).astype(np.float32)
    path = str(tmp_path / "f32.onnx")
    save_model(path, onnx.TensorProto.FLOAT, w)
    wide = tpusim.reference(path, {"x": x}, mode="inference")["y"]
    narrow = tpusim.reference(path, {"x": x.astype(np.float32)}, mode="inference")["y"]
    assert wide.dtype == np.float32
    np.testing.assert_array_equal(wide, narrow)
