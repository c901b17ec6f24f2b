"""The optimizers on the shipped MLP, through tpusim.reference, against numpy
implementations written from the papers, over several steps: each step's
gradient comes from a plain SGD step at learning rate 1 (g = w - w')."""
import numpy as np
import onnx
import onnx.numpy_helper
import pytest

import tpusim

BATCH = 8


@pytest.fixture
def mlp(mlp_path):
    model = onnx.load(mlp_path)
    weights = {t.name: onnx.numpy_helper.to_array(t).astype(np.float32) for t in model.graph.initializer}
    rng = np.random.default_rng(7)
    x = rng.standard_normal((BATCH, 784), dtype=np.float32)
    labels = rng.integers(0, 10, size=BATCH).astype(np.int64)
    return weights, {"image": x, "labels": labels}


def gradients(mlp_path, weights, inputs):
    out = tpusim.reference(mlp_path, {**inputs, **weights}, batch=BATCH, learning_rate=1.0)
    return {name: (w.astype(np.float64) - out[name + ":updated"]) for name, w in weights.items()}


def numpy_step(kind, w, g, state, step, lr, warmup, beta1=0.9, beta2=0.999, eps=1e-8, wd=0.0, nesterov=False):
    rate = lr * min(1.0, (step + 1) / warmup) if warmup else lr
    if kind == "momentum":
        state["v"] = beta1 * state["v"] + g
        return w - rate * (g + beta1 * state["v"] if nesterov else state["v"])
    if kind == "adam":  # AdamW when wd > 0 (Loshchilov & Hutter): decoupled decay
        t = step + 1
        state["m"] = beta1 * state["m"] + (1 - beta1) * g
        state["v"] = beta2 * state["v"] + (1 - beta2) * g * g
        corrected = rate * np.sqrt(1 - beta2**t) / (1 - beta1**t)
        return w - corrected * state["m"] / (np.sqrt(state["v"]) + eps) - rate * wd * w
    if kind == "lars":  # You et al. 2017, Algorithm 1, trust coefficient 0.001
        g = g + wd * w
        trust = 0.001 * np.linalg.norm(w) / (np.linalg.norm(g - wd * w) + wd * np.linalg.norm(w))
        state["v"] = beta1 * state["v"] + rate * trust * g
        return w - state["v"]
    raise ValueError(kind)


@pytest.mark.parametrize(
    "kind,kwargs,state_names",
    [
        ("momentum", {"nesterov": True, "warmup_steps": 2}, ["velocity"]),
        # epsilon 1e-3: Adam normalizes the gradient, so for gradients near 0 (which w - w'
        # recovers only to float rounding) a tiny epsilon would amplify that rounding.
        ("adam", {"warmup_steps": 3, "epsilon": 1e-3}, ["m", "v"]),
        ("adam", {"adamw": True, "weight_decay": 0.1, "epsilon": 1e-3}, ["m", "v"]),
        ("lars", {"weight_decay": 1e-3}, ["velocity"]),
    ],
)
def test_optimizer_matches_numpy_over_three_steps(mlp_path, mlp, kind, kwargs, state_names):
    weights, inputs = mlp
    lr = 0.5 if kind == "lars" else 1e-2
    feeds = {name: w.copy() for name, w in weights.items()}
    expected = {name: w.astype(np.float64) for name, w in weights.items()}
    states = {name: {"m": 0.0, "v": 0.0} for name in weights}
    warmup = kwargs.get("warmup_steps", 0)
    for step in range(3):
        grads = gradients(mlp_path, {n: w.astype(np.float32) for n, w in expected.items()}, inputs)
        for name in weights:
            expected[name] = numpy_step(kind, expected[name], grads[name], states[name], step, lr, warmup,
                                        eps=kwargs.get("epsilon", 1e-8), wd=kwargs.get("weight_decay", 0.0),
                                        nesterov=kwargs.get("nesterov", False))
        out = tpusim.reference(mlp_path, {**inputs, **feeds}, batch=BATCH, learning_rate=lr, optimizer=kind, **kwargs)
        assert out["step:updated"] == step + 1
        for name in weights:
            feeds[name] = out[name + ":updated"]
            for state in state_names:
                feeds[f"{name}.{state}"] = out[f"{name}.{state}:updated"]
        feeds["step"] = out["step:updated"]
    for name in weights:
        np.testing.assert_allclose(feeds[name], expected[name], rtol=1e-4, atol=1e-6)
        assert not np.allclose(feeds[name], weights[name])


def test_mse_loss_matches_numpy(mlp_path, mlp):
    weights, inputs = mlp
    targets = np.random.default_rng(3).standard_normal((BATCH, 10)).astype(np.float32)
    out = tpusim.reference(mlp_path, {"image": inputs["image"], "targets": targets}, batch=BATCH, loss="mse")
    np.testing.assert_allclose(out["loss:loss"], ((out["logits"] - targets) ** 2).mean(), rtol=1e-5)


def test_run_takes_training_options(mlp_path):
    sgd = tpusim.run(mlp_path, batch=8)
    adam = tpusim.run(mlp_path, batch=8, optimizer="adam", learning_rate=1e-3, warmup_steps=10, micro_batches=2,
                      remat="all")
    assert adam["total_cycles"] > sgd["total_cycles"]
    with pytest.raises(tpusim.Error, match="unknown keyword argument 'optimiser'"):
        tpusim.run(mlp_path, optimiser="adam")
    with pytest.raises(tpusim.Error, match="does not divide into 3 micro-batches"):
        tpusim.run(mlp_path, batch=8, micro_batches=3)
    with pytest.raises(tpusim.Error, match="unknown optimizer"):
        tpusim.run(mlp_path, optimizer="rmsprop")
