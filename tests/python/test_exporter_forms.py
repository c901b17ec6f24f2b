"""Forms that torch.onnx.export writes and that must import as the model meant them: Pad in its
three modes (against numpy.pad, forward and through a training step) and Identity nodes of
initializers, which stand for separate parameters (DenseNet's BatchNormalization statistics,
once an internal error)."""
import json
import pathlib
import subprocess

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as onh
import pytest

import tpusim

F = onnx.TensorProto.FLOAT


def save(tmp_path, name, nodes, inputs, outputs, initializers=(), opset=17):
    graph = oh.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    path = tmp_path / f"{name}.onnx"
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)]), str(path))
    return str(path)


def ints(name, values):
    return onh.from_array(np.array(values, dtype=np.int64), name)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_matches_numpy(tmp_path, mode):
    pads = [0, 0, 1, 2, 0, 0, 2, 1]  # [N, C, H, W]: H by 1 before and 2 after, W by 2 and 1
    nodes = [oh.make_node("Pad", ["x", "pads"] + (["value"] if mode == "constant" else []), ["y"], mode=mode)]
    inits = [ints("pads", pads)] + ([onh.from_array(np.array(1.5, dtype=np.float32), "value")]
                                    if mode == "constant" else [])
    path = save(tmp_path, "pad_" + mode, nodes, [oh.make_tensor_value_info("x", F, [2, 3, 4, 5])],
                [oh.make_tensor_value_info("y", F, [2, 3, 7, 8])], inits)
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype(np.float32)
    out = tpusim.reference(path, {"x": x}, mode="inference", batch=2)
    widths = [(0, 0), (0, 0), (1, 2), (2, 1)]
    expected = np.pad(x, widths, mode="constant", constant_values=1.5) if mode == "constant" else np.pad(
        x, widths, mode=mode)
    np.testing.assert_array_equal(out["y"], expected)


def test_pad_with_axes_and_negative_pads_cuts_and_pads_only_those_axes(tmp_path):
    nodes = [oh.make_node("Pad", ["x", "pads", "", "axes"], ["y"], mode="constant")]
    path = save(tmp_path, "pad_axes", nodes, [oh.make_tensor_value_info("x", F, [2, 6, 4])],
                [oh.make_tensor_value_info("y", F, [2, 5, 7])], [ints("pads", [-1, 1, 0, 2]), ints("axes", [-2, 2])],
                opset=18)
    x = np.arange(48, dtype=np.float32).reshape(2, 6, 4)
    out = tpusim.reference(path, {"x": x}, mode="inference", batch=2)
    np.testing.assert_array_equal(out["y"], np.pad(x[:, 1:, :], [(0, 0), (0, 0), (1, 2)]))


def test_a_reflect_padded_convolution_trains_like_numpy(tmp_path):
    """Reflect padding before a 1x1 convolution, then the sum of squares as the loss: the weight's
    gradient flows back through the pad (each mirrored element counts where it lands)."""
    w = np.random.default_rng(2).standard_normal((2, 3, 1, 1)).astype(np.float32)
    nodes = [oh.make_node("Pad", ["x", "pads"], ["p"], mode="reflect"), oh.make_node("Conv", ["p", "w"], ["y"])]
    path = save(tmp_path, "pad_train", nodes, [oh.make_tensor_value_info("x", F, [2, 3, 4, 4])],
                [oh.make_tensor_value_info("y", F, [2, 2, 6, 6])],
                [ints("pads", [0, 0, 1, 1, 0, 0, 1, 1]), onh.from_array(w, "w")])
    x = np.random.default_rng(3).standard_normal((2, 3, 4, 4)).astype(np.float32)
    target = np.zeros((2, 2, 6, 6), dtype=np.float32)
    lr = 0.01
    out = tpusim.reference(path, {"x": x, "targets": target}, batch=2, learning_rate=lr, loss="mse")
    p = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="reflect")
    y = np.einsum("nchw,oc->nohw", p, w[:, :, 0, 0])
    dy = 2 * (y - target) / y.size
    dw = np.einsum("nohw,nchw->oc", dy, p)[:, :, None, None]
    np.testing.assert_allclose(out["w:updated"], w - lr * dw, rtol=1e-5, atol=1e-6)


def densenet_like(tmp_path, shared):
    """Conv -> Concat with its input -> BatchNormalization -> Relu -> Pad -> AveragePool ->
    Conv -> BatchNormalization -> GlobalAveragePool -> Flatten -> Gemm. With `shared`, the
    second BatchNormalization's four parameters are Identity nodes of the first's, as
    torch.onnx.export writes equal initializers; else initializers of their own."""
    rng = np.random.default_rng(4)
    def bn(prefix):
        return [onh.from_array(np.ones(8, np.float32), prefix + ".weight"),
                onh.from_array(np.zeros(8, np.float32), prefix + ".bias"),
                onh.from_array(np.zeros(8, np.float32), prefix + ".running_mean"),
                onh.from_array(np.ones(8, np.float32), prefix + ".running_var")]
    inits = [onh.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32) * 0.2, "c1.weight"),
             onh.from_array(rng.standard_normal((8, 8, 1, 1)).astype(np.float32) * 0.3, "c2.weight"),
             onh.from_array(rng.standard_normal((10, 8)).astype(np.float32) * 0.3, "fc.weight"),
             onh.from_array(np.zeros(10, np.float32), "fc.bias"), ints("pads", [0] * 8)] + bn("bn1")
    nodes = [oh.make_node("Conv", ["x", "c1.weight"], ["c1"], pads=[1, 1, 1, 1]),
             oh.make_node("Concat", ["x", "c1"], ["cat"], axis=1),
             oh.make_node("BatchNormalization", ["cat", "bn1.weight", "bn1.bias", "bn1.running_mean",
                                                 "bn1.running_var"], ["b1"], name="/norm1/BatchNormalization"),
             oh.make_node("Relu", ["b1"], ["r1"]),
             oh.make_node("Pad", ["r1", "pads"], ["p1"], mode="constant"),
             oh.make_node("AveragePool", ["p1"], ["a1"], kernel_shape=[2, 2], strides=[2, 2]),
             oh.make_node("Conv", ["a1", "c2.weight"], ["c2"])]
    names = ["bn2.weight", "bn2.bias", "bn2.running_mean", "bn2.running_var"]
    if shared:
        nodes += [oh.make_node("Identity", ["bn1." + n.split(".", 1)[1]], [n]) for n in names]
    else:
        inits += bn("bn2")
    nodes += [oh.make_node("BatchNormalization", ["c2"] + names, ["b2"], name="/norm2/BatchNormalization"),
              oh.make_node("GlobalAveragePool", ["b2"], ["g"]), oh.make_node("Flatten", ["g"], ["f"]),
              oh.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], transB=1)]
    return save(tmp_path, "densenet_like_" + ("shared" if shared else "own"), nodes,
                [oh.make_tensor_value_info("x", F, ["batch", 4, 8, 8])],
                [oh.make_tensor_value_info("logits", F, ["batch", 10])], inits, opset=14)


def test_identity_of_an_initializer_is_a_parameter_of_its_own(tmp_path, tpusim_bin):
    shared, own = densenet_like(tmp_path, True), densenet_like(tmp_path, False)
    x = np.random.default_rng(5).standard_normal((4, 4, 8, 8)).astype(np.float32)
    labels = np.arange(4, dtype=np.int64)
    for mode in ("inference", "training"):
        feeds = {"x": x} if mode == "inference" else {"x": x, "labels": labels}
        a = tpusim.reference(shared, feeds, mode=mode, batch=4)
        b = tpusim.reference(own, feeds, mode=mode, batch=4)
        np.testing.assert_array_equal(a["logits"], b["logits"])
        if mode == "training":  # the copies are trained on their own, as bn2's own weights are
            np.testing.assert_array_equal(a["bn2.weight:updated"], b["bn2.weight:updated"])
            assert not np.array_equal(a["bn2.weight:updated"], a["bn1.weight:updated"])
        reports = []
        for path, out in ((shared, "a"), (own, "b")):
            done = subprocess.run([tpusim_bin, "run", path, "--mode", mode, "--batch", "4", "--no-instructions",
                                   "--out", str(tmp_path / (mode + out))], capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            reports.append(json.loads((tmp_path / (mode + out) / "report.json").read_text()))
        assert reports[0]["memory"]["bytes_by_role"] == reports[1]["memory"]["bytes_by_role"]


@pytest.mark.parametrize("nodes, inits, message", [
    ([oh.make_node("Pad", ["x", "pads"], ["y"], mode="wrap")], [ints("pads", [0, 1, 0, 1])], "mode 'wrap'"),
    ([oh.make_node("Pad", ["x", "pads"], ["y"])], [ints("pads", [1, 1])], "2 pads for 2 axes"),
    ([oh.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")], [ints("pads", [0, 4, 0, 0])], "reflect padding"),
    ([oh.make_node("Pad", ["x", "pads"], ["y"])], [ints("pads", [0, -2, 0, -2])], "leaves dimension 1"),
])
def test_bad_pads_are_one_line_errors(tmp_path, tpusim_bin, nodes, inits, message):
    path = save(tmp_path, "bad_pad", nodes, [oh.make_tensor_value_info("x", F, [2, 4])],
                [oh.make_tensor_value_info("y", F, None)], inits)
    done = subprocess.run([tpusim_bin, "run", path, "--mode", "inference", "--no-instructions", "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert done.returncode in (3, 4), done.stderr
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_a_small_densenet_export_trains_and_infers(tpusim_bin, tmp_path):
    """tests/onnx/densenet_small.onnx: torchvision's DenseNet(growth_rate=8, block_config=(2, 2),
    num_init_features=16, num_classes=10) exported by torch 1.13 (opset 14, eval mode), its
    float initializers' values dropped (shapes kept). It holds what stopped densenet121: Identity
    nodes of BatchNormalization statistics (an internal "freeze() of a computed tensor") and
    the transitions' Pad; and in training a fusion group that had absorbed a producer before
    its leader was itself absorbed, and lost that producer (an internal "not a permutation")."""
    model = str(pathlib.Path(__file__).parents[1] / "onnx" / "densenet_small.onnx")
    for mode in ("inference", "training"):
        done = subprocess.run([tpusim_bin, "run", model, "--mode", mode, "--batch", "2", "--no-instructions", "--out",
                               str(tmp_path / mode)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        report = json.loads((tmp_path / mode / "report.json").read_text())
        assert report["total_cycles"] > 0


def softplus(z):
    return np.log(np.exp(z) + 1)


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


# ONNX op, attributes, f, f' (numpy, float64).
ACTIVATIONS = {
    "Softplus": ({}, softplus, sigmoid),
    "Softsign": ({}, lambda z: z / (1 + np.abs(z)), lambda z: 1 / (1 + np.abs(z)) ** 2),
    "HardSigmoid": ({"alpha": 0.3, "beta": 0.4}, lambda z: np.clip(0.3 * z + 0.4, 0, 1),
                    lambda z: np.where((0.3 * z + 0.4 > 0) & (0.3 * z + 0.4 < 1), 0.3, 0.0)),
    "HardSwish": ({}, lambda z: z * np.clip(z / 6 + 0.5, 0, 1),
                  lambda z: np.clip(z / 6 + 0.5, 0, 1) + z * np.where(np.abs(z) < 3, 1 / 6, 0.0)),
    "Mish": ({}, lambda z: z * np.tanh(softplus(z)),
             lambda z: np.tanh(softplus(z)) + z * (1 - np.tanh(softplus(z)) ** 2) * sigmoid(z)),
    "Celu": ({"alpha": 2.0}, lambda z: np.where(z > 0, z, 2.0 * (np.exp(z / 2.0) - 1)),
             lambda z: np.where(z > 0, 1.0, np.exp(z / 2.0))),
}


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
def test_composed_activations_compute_and_train_like_numpy(tmp_path, op):
    """y = f(x w), loss mean(y^2): the forward values and w's SGD step against numpy's f and f'."""
    attributes, f, derivative = ACTIVATIONS[op]
    rng = np.random.default_rng(7)
    x = rng.uniform(-5, 5, (8, 16)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, 16).astype(np.float32)
    nodes = [oh.make_node("Mul", ["x", "w"], ["z"]), oh.make_node(op, ["z"], ["y"], **attributes)]
    path = save(tmp_path, op, nodes, [oh.make_tensor_value_info("x", F, [8, 16])],
                [oh.make_tensor_value_info("y", F, [8, 16])], [onh.from_array(w, "w")])
    z = x.astype(np.float64) * w
    inference = tpusim.reference(path, {"x": x}, mode="inference", batch=8)
    np.testing.assert_allclose(inference["y"], f(z), rtol=2e-5, atol=2e-6)
    lr = 0.1
    out = tpusim.reference(path, {"x": x, "targets": np.zeros((8, 16), np.float32)}, batch=8, learning_rate=lr,
                           loss="mse")
    dw = (2 * f(z) / z.size * derivative(z) * x).sum(axis=0)
    np.testing.assert_allclose(out["w:updated"], w - lr * dw, rtol=1e-4, atol=1e-6)


def test_clip_max_min_floor_ceil_sign_round(tmp_path):
    i = lambda name: oh.make_tensor_value_info(name, F, [3, 4])
    nodes = [oh.make_node("Clip", ["x", "lo", "hi"], ["clipped"]), oh.make_node("Clip", ["x", "", "hi"], ["capped"]),
             oh.make_node("Max", ["x", "y", "row"], ["largest"]), oh.make_node("Min", ["x", "y"], ["smallest"]),
             oh.make_node("Floor", ["x"], ["floor"]), oh.make_node("Ceil", ["x"], ["ceil"]),
             oh.make_node("Sign", ["x"], ["sign"]), oh.make_node("Round", ["x"], ["round"])]
    inits = [onh.from_array(np.array(-0.5, np.float32), "lo"), onh.from_array(np.array(1.0, np.float32), "hi"),
             onh.from_array(np.array([0.25, -1, 3, 0], np.float32), "row")]
    outputs = ["clipped", "capped", "largest", "smallest", "floor", "ceil", "sign", "round"]
    path = save(tmp_path, "clamps", nodes, [i("x"), i("y")], [i(name) for name in outputs], inits)
    x = np.array([[-2.5, -0.5, 0.0, 0.5], [1.5, 2.5, -1.49, 3.7], [-0.0, 7.0, -3.2, 0.2]], np.float32)
    y = np.random.default_rng(8).standard_normal((3, 4)).astype(np.float32)
    out = tpusim.reference(path, {"x": x, "y": y}, mode="inference", batch=3)
    row = np.array([0.25, -1, 3, 0], np.float32)
    expected = {"clipped": np.clip(x, -0.5, 1.0), "capped": np.minimum(x, 1.0), "largest": np.maximum(np.maximum(x, y), row),
                "smallest": np.minimum(x, y), "floor": np.floor(x), "ceil": np.ceil(x), "sign": np.sign(x),
                "round": np.round(x)}  # numpy rounds halves to even, as ONNX's Round
    for name, value in expected.items():
        np.testing.assert_array_equal(out[name], value, err_msg=name)


def conv1d(x, w, stride, pad, dilation):
    """numpy: y[n, m, o] = sum_c,k x[n, c, o stride + k dilation - pad] w[m, c, k]."""
    n, c, length = x.shape
    m, _, kernel = w.shape
    padded = np.pad(x, [(0, 0), (0, 0), (pad, pad)])
    out = (length + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
    y = np.zeros((n, m, out))
    for o in range(out):
        for k in range(kernel):
            y[:, :, o] += padded[:, :, o * stride + k * dilation] @ w[:, :, k].T
    return y


def conv_transpose1d(x, w, stride, pad, output_padding):
    """numpy: y[n, m, i stride + k - pad] += x[n, c, i] w[c, m, k], then the pads cut off."""
    n, c, length = x.shape
    _, m, kernel = w.shape
    full = stride * (length - 1) + kernel + output_padding
    y = np.zeros((n, m, full))
    for i in range(length):
        for k in range(kernel):
            y[:, :, i * stride + k] += x[:, :, i] @ w[:, :, k]
    return y[:, :, pad:full - pad]


def test_a_1d_convolution_computes_and_trains_like_numpy(tmp_path):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 11)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3)).astype(np.float32)
    nodes = [oh.make_node("Conv", ["x", "w"], ["y"], strides=[2], pads=[1, 1], dilations=[2])]
    out_len = (11 + 2 - 4 - 1) // 2 + 1
    path = save(tmp_path, "conv1d", nodes, [oh.make_tensor_value_info("x", F, [2, 3, 11])],
                [oh.make_tensor_value_info("y", F, [2, 4, out_len])], [onh.from_array(w, "w")])
    y = conv1d(x.astype(np.float64), w.astype(np.float64), 2, 1, 2)
    np.testing.assert_allclose(tpusim.reference(path, {"x": x}, mode="inference", batch=2)["y"], y, rtol=1e-5,
                               atol=1e-5)
    lr = 0.05
    out = tpusim.reference(path, {"x": x, "targets": np.zeros_like(y, np.float32)}, batch=2, learning_rate=lr,
                           loss="mse")
    dy = 2 * y / y.size
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (1, 1)])
    dw = np.stack([np.einsum("nmo,nco->mc", dy, padded[:, :, k * 2:k * 2 + 2 * out_len:2]) for k in range(3)], -1)
    np.testing.assert_allclose(out["w:updated"], w - lr * dw, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("rank", [1, 2])
def test_conv_transpose_computes_and_trains_like_numpy(tmp_path, rank):
    """Stride 2, pads 1, output_padding 1; in 2-D the same along both axes, checked axis by axis
    on a weight that is an outer product (so the 2-D transposed convolution separates)."""
    rng = np.random.default_rng(10)
    length, kernel = 5, 3
    out_len = 2 * (length - 1) + kernel + 1 - 2
    if rank == 1:
        x = rng.standard_normal((2, 3, length)).astype(np.float32)
        w = rng.standard_normal((3, 4, kernel)).astype(np.float32)
        y = conv_transpose1d(x.astype(np.float64), w.astype(np.float64), 2, 1, 1)
        shape_x, shape_y = [2, 3, length], [2, 4, out_len]
        attrs = dict(strides=[2], pads=[1, 1], output_padding=[1])
    else:
        x = rng.standard_normal((2, 3, 1, length)).astype(np.float32)
        w = rng.standard_normal((3, 4, 1, kernel)).astype(np.float32)
        y = conv_transpose1d(x[:, :, 0].astype(np.float64), w[:, :, 0].astype(np.float64), 2, 1, 1)[:, :, None, :]
        shape_x, shape_y = [2, 3, 1, length], [2, 4, 1, out_len]
        attrs = dict(strides=[1, 2], pads=[0, 1, 0, 1], output_padding=[0, 1])
    nodes = [oh.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)]
    path = save(tmp_path, f"convtranspose{rank}d", nodes, [oh.make_tensor_value_info("x", F, shape_x)],
                [oh.make_tensor_value_info("y", F, shape_y)], [onh.from_array(w, "w")])
    np.testing.assert_allclose(tpusim.reference(path, {"x": x}, mode="inference", batch=2)["y"], y, rtol=1e-5,
                               atol=1e-5)
    lr = 0.05
    out = tpusim.reference(path, {"x": x, "targets": np.zeros_like(y, np.float32)}, batch=2, learning_rate=lr,
                           loss="mse")
    # dL/dw[c, m, k] = sum over n, i of x[n, c, i] dy[n, m, 2 i + k - 1] (inside the output)
    dy = (2 * y / y.size).reshape(2, 4, out_len)
    xs = x.reshape(2, 3, length).astype(np.float64)
    dw = np.zeros((3, 4, kernel))
    for i in range(length):
        for k in range(kernel):
            o = 2 * i + k - 1
            if 0 <= o < out_len:
                dw[:, :, k] += xs[:, :, i].T @ dy[:, :, o]
    np.testing.assert_allclose(out["w:updated"], w - lr * dw.reshape(w.shape), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("op", ["ReduceL2", "ReduceLogSumExp", "ReduceMax"])
def test_composed_reductions_train_like_numpy(tmp_path, op):
    """y = Reduce(x w) over axis 1 (opset 13: the axes an attribute), loss mean(y^2): w's SGD step."""
    rng = np.random.default_rng(11)
    x = rng.uniform(0.5, 2, (6, 5)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, 5).astype(np.float32)
    nodes = [oh.make_node("Mul", ["x", "w"], ["z"]), oh.make_node(op, ["z"], ["y"], axes=[1], keepdims=0)]
    path = save(tmp_path, op, nodes, [oh.make_tensor_value_info("x", F, [6, 5])],
                [oh.make_tensor_value_info("y", F, [6])], [onh.from_array(w, "w")], opset=13)
    z = x.astype(np.float64) * w
    if op == "ReduceL2":
        y = np.sqrt((z * z).sum(1))
        dz = z / y[:, None]
    elif op == "ReduceLogSumExp":
        y = np.log(np.exp(z).sum(1))
        dz = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    else:
        y = z.max(1)
        dz = (z == y[:, None]).astype(np.float64)
    lr = 0.1
    out = tpusim.reference(path, {"x": x, "targets": np.zeros(6, np.float32)}, batch=6, learning_rate=lr, loss="mse")
    dw = ((2 * y / y.size)[:, None] * dz * x).sum(0)
    np.testing.assert_allclose(out["w:updated"], w - lr * dw, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("per", ["group", "channel"])
def test_group_normalization_matches_numpy(tmp_path, per):
    """opset 18 scales each of num_groups groups; opset 21 each channel."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 6, 3, 4)).astype(np.float32)
    count = 3 if per == "group" else 6
    scale = rng.uniform(0.5, 2, count).astype(np.float32)
    bias = rng.standard_normal(count).astype(np.float32)
    nodes = [oh.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=3, epsilon=1e-3)]
    path = save(tmp_path, "groupnorm_" + per, nodes, [oh.make_tensor_value_info("x", F, [2, 6, 3, 4])],
                [oh.make_tensor_value_info("y", F, [2, 6, 3, 4])],
                [onh.from_array(scale, "scale"), onh.from_array(bias, "bias")], opset=18 if per == "group" else 21)
    rows = x.astype(np.float64).reshape(2, 3, -1)
    normal = ((rows - rows.mean(2, keepdims=True)) / np.sqrt(rows.var(2, keepdims=True) + 1e-3))
    if per == "group":
        expected = (normal * scale[:, None] + bias[:, None]).reshape(x.shape)
    else:
        expected = normal.reshape(x.shape) * scale[:, None, None] + bias[:, None, None]
    out = tpusim.reference(path, {"x": x}, mode="inference", batch=2)
    np.testing.assert_allclose(out["y"], expected, rtol=1e-4, atol=1e-5)


def test_matmul_with_1d_operands_drops_the_unit_dimension(tmp_path):
    nodes = [oh.make_node("MatMul", ["v", "m"], ["vm"]), oh.make_node("MatMul", ["m", "u"], ["mu"]),
             oh.make_node("MatMul", ["v", "v2"], ["dot"])]
    path = save(tmp_path, "matmul1d", nodes,
                [oh.make_tensor_value_info("v", F, [4]), oh.make_tensor_value_info("m", F, [2, 4, 3]),
                 oh.make_tensor_value_info("u", F, [3]), oh.make_tensor_value_info("v2", F, [4])],
                [oh.make_tensor_value_info("vm", F, [2, 3]), oh.make_tensor_value_info("mu", F, [2, 4]),
                 oh.make_tensor_value_info("dot", F, [])])
    rng = np.random.default_rng(13)
    feeds = {"v": rng.standard_normal(4), "m": rng.standard_normal((2, 4, 3)), "u": rng.standard_normal(3),
             "v2": rng.standard_normal(4)}
    feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    out = tpusim.reference(path, feeds, mode="inference", batch=4)  # the first input's leading dimension
    for name, expected in {"vm": feeds["v"] @ feeds["m"], "mu": feeds["m"] @ feeds["u"],
                           "dot": feeds["v"] @ feeds["v2"]}.items():
        assert out[name].shape == expected.shape, name
        np.testing.assert_allclose(out[name], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_upsamples_and_trains_like_numpy(tmp_path, mode):
    """x w upsampled 2x along W (half_pixel, torch's F.interpolate default), loss mean(y^2)."""
    rng = np.random.default_rng(14)
    x = rng.standard_normal((2, 3, 1, 4)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, (3, 1, 1)).astype(np.float32)
    scales = onh.from_array(np.array([1, 1, 1, 2], np.float32), "scales")
    nodes = [oh.make_node("Mul", ["x", "w"], ["z"]),
             oh.make_node("Resize", ["z", "", "scales"], ["y"], mode=mode)]
    path = save(tmp_path, "resize_" + mode, nodes, [oh.make_tensor_value_info("x", F, [2, 3, 1, 4])],
                [oh.make_tensor_value_info("y", F, [2, 3, 1, 8])], [onh.from_array(w, "w"), scales])
    # Each output column's source columns and weights along W (half_pixel: (o + 0.5) / 2 - 0.5).
    mix = np.zeros((8, 4))
    for o in range(8):
        source = (o + 0.5) / 2 - 0.5
        if mode == "nearest":
            mix[o, min(max(int(np.floor(source)) if source - np.floor(source) <= 0.5 else int(np.ceil(source)), 0), 3)] = 1
        else:
            low = int(np.floor(source))
            t = source - low
            mix[o, min(max(low, 0), 3)] += 1 - t
            mix[o, min(max(low + 1, 0), 3)] += t
    z = x.astype(np.float64) * w
    y = z @ mix.T
    np.testing.assert_allclose(tpusim.reference(path, {"x": x}, mode="inference", batch=2)["y"], y, rtol=1e-5,
                               atol=1e-6)
    lr = 0.1
    out = tpusim.reference(path, {"x": x, "targets": np.zeros_like(y, np.float32)}, batch=2, learning_rate=lr,
                           loss="mse")
    dz = (2 * y / y.size) @ mix
    dw = (dz * x).sum(axis=(0, 2, 3)).reshape(3, 1, 1)
    np.testing.assert_allclose(out["w:updated"], w - lr * dw, rtol=1e-4, atol=1e-6)


def test_trilu_and_onehot_compute_and_trilu_trains(tmp_path):
    """A causal mask (Trilu lower) on x w trains only the kept positions; OneHot of labels."""
    rng = np.random.default_rng(15)
    x = rng.standard_normal((4, 4)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, 4).astype(np.float32)
    nodes = [oh.make_node("Mul", ["x", "w"], ["z"]), oh.make_node("Trilu", ["z"], ["y"], upper=0)]
    path = save(tmp_path, "trilu", nodes, [oh.make_tensor_value_info("x", F, [4, 4])],
                [oh.make_tensor_value_info("y", F, [4, 4])], [onh.from_array(w, "w")])
    z = x.astype(np.float64) * w
    y = np.tril(z)
    np.testing.assert_allclose(tpusim.reference(path, {"x": x}, mode="inference", batch=4)["y"], y, rtol=1e-6)
    lr = 0.1
    out = tpusim.reference(path, {"x": x, "targets": np.zeros((4, 4), np.float32)}, batch=4, learning_rate=lr,
                           loss="mse")
    dw = (2 * y / y.size * np.tril(np.ones((4, 4))) * x).sum(0)
    np.testing.assert_allclose(out["w:updated"], w - lr * dw, rtol=1e-4, atol=1e-6)
    hot = save(tmp_path, "onehot", [oh.make_node("OneHot", ["labels", "depth", "values"], ["h"], axis=0)],
               [oh.make_tensor_value_info("labels", onnx.TensorProto.INT64, [3])],
               [oh.make_tensor_value_info("h", F, [5, 3])],
               [ints("depth", 5), onh.from_array(np.array([-1, 2], np.float32), "values")])
    labels = np.array([0, 4, -2], np.int64)
    expected = np.full((5, 3), -1.0)
    expected[[0, 4, 3], [0, 1, 2]] = 2
    np.testing.assert_array_equal(tpusim.reference(hot, {"labels": labels}, mode="inference", batch=3)["h"], expected)


@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization_computes_and_trains_like_numpy(tmp_path, p):
    """y = LpNormalization(x w) along axis 1, loss mean(y^2): the output and w's SGD step."""
    rng = np.random.default_rng(14)
    x = rng.uniform(0.5, 2, (4, 5)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, 5).astype(np.float32)
    nodes = [oh.make_node("Mul", ["x", "w"], ["z"]), oh.make_node("LpNormalization", ["z"], ["y"], axis=1, p=p)]
    path = save(tmp_path, f"lp{p}", nodes, [oh.make_tensor_value_info("x", F, [4, 5])],
                [oh.make_tensor_value_info("y", F, [4, 5])], [onh.from_array(w, "w")], opset=13)
    z = x.astype(np.float64) * w  # positive, so |z| = z
    norm = z.sum(1, keepdims=True) if p == 1 else np.sqrt((z * z).sum(1, keepdims=True))
    y = z / norm
    np.testing.assert_allclose(tpusim.reference(path, {"x": x}, mode="inference", batch=4)["y"], y, rtol=1e-5)
    lr = 0.1
    out = tpusim.reference(path, {"x": x, "targets": np.zeros((4, 5), np.float32)}, batch=4, learning_rate=lr,
                           loss="mse")
    dy = 2 * y / y.size
    # Per row, dz = (dy - sum(dy y)) / norm for p 1 and (dy - y sum(dy y)) / norm for p 2.
    projected = (dy * y).sum(1, keepdims=True)
    dz = (dy - (projected if p == 1 else y * projected)) / norm
    np.testing.assert_allclose(out["w:updated"], w - lr * (dz * x).sum(0), rtol=1e-4, atol=1e-6)
