"""The CPU reference executor against an independent numpy implementation of
the shipped MLP (weights read with the onnx package), forward and one SGD step."""
import numpy as np
import onnx
import onnx.numpy_helper
import pytest

import tpusim


@pytest.fixture
def mlp(mlp_path):
    model = onnx.load(mlp_path)
    weights = {t.name: onnx.numpy_helper.to_array(t).astype(np.float32) for t in model.graph.initializer}
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 784), dtype=np.float32)
    labels = rng.integers(0, 10, size=16).astype(np.int64)
    return weights, x, labels


def forward(w, x):
    h1 = np.maximum(x @ w["0.weight"].T + w["0.bias"], 0)
    h2 = np.maximum(h1 @ w["2.weight"].T + w["2.bias"], 0)
    return h1, h2, h2 @ w["4.weight"].T + w["4.bias"]


def test_inference_logits_match_numpy(mlp_path, mlp):
    weights, x, _ = mlp
    out = tpusim.reference(mlp_path, {"image": x}, mode="inference", batch=16)
    np.testing.assert_allclose(out["logits"], forward(weights, x)[2], rtol=1e-5, atol=1e-6)


def test_training_step_matches_numpy_backprop(mlp_path, mlp):
    weights, x, labels = mlp
    lr = 0.05
    out = tpusim.reference(mlp_path, {"image": x, "labels": labels}, batch=16, learning_rate=lr, threads=2)
    h1, h2, logits = forward(weights, x)
    shifted = logits - logits.max(axis=1, keepdims=True)
    softmax = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    loss = -np.log(softmax[np.arange(16), labels]).mean()
    np.testing.assert_allclose(out["loss:loss"], loss, rtol=1e-5)
    dlogits = softmax.copy()
    dlogits[np.arange(16), labels] -= 1
    dlogits /= 16
    grads = {"4.weight": dlogits.T @ h2, "4.bias": dlogits.sum(0)}
    dh2 = (dlogits @ weights["4.weight"]) * (h2 > 0)
    grads.update({"2.weight": dh2.T @ h1, "2.bias": dh2.sum(0)})
    dh1 = (dh2 @ weights["2.weight"]) * (h1 > 0)
    grads.update({"0.weight": dh1.T @ x, "0.bias": dh1.sum(0)})
    for name, grad in grads.items():
        np.testing.assert_allclose(out[name + ":updated"], weights[name] - lr * grad, rtol=1e-5, atol=1e-6)


def test_reference_errors(mlp_path, mlp):
    _, x, _ = mlp
    with pytest.raises(tpusim.Error, match="no value given for label 'labels'"):
        tpusim.reference(mlp_path, {"image": x}, batch=16)
    with pytest.raises(tpusim.Error, match="image"):
        tpusim.reference(mlp_path, {"image": x[:, :100]}, mode="inference", batch=16)


def test_reference_returns_only_the_tensors_asked_for_with_the_same_values(mlp_path, mlp):
    _, x, labels = mlp
    feeds = {"image": x, "labels": labels}
    every = tpusim.reference(mlp_path, feeds, batch=16)
    asked = ["loss:loss", "0.weight:updated", "/1/Relu_output_0"]  # an activation, freed if not asked for
    some = tpusim.reference(mlp_path, feeds, batch=16, tensors=asked)
    assert sorted(some) == sorted(asked)
    for name in asked:
        np.testing.assert_array_equal(some[name], every[name])
    with pytest.raises(tpusim.Error, match="the step has no tensor named 'no such tensor'"):
        tpusim.reference(mlp_path, feeds, batch=16, tensors=["loss:loss", "no such tensor"])
