"""A shape-only model (its initializers keep shapes, not values) runs in `tpusim reference` and
`tpusim run --functional` with made-up weights (frontend/import/weight_init.hpp): the same seed
gives both sides the same values, so their comparison is exact with the MXU numerics."""
import json
import subprocess

import numpy as np
import onnx
import onnx.helper as oh
import pytest


def cli(tpusim_bin, *args):
    result = subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result


def shape_only(name, dims):
    tensor = onnx.TensorProto(name=name, data_type=onnx.TensorProto.FLOAT)
    tensor.dims.extend(dims)
    return tensor


@pytest.fixture(scope="module")
def small_cnn(tmp_path_factory):
    """Conv -> BatchNormalization -> Relu -> MaxPool -> Flatten -> Gemm, every weight shape-only."""
    nodes = [
        oh.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], name="/conv/Conv", pads=[1, 1, 1, 1]),
        oh.make_node("BatchNormalization", ["c", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"],
                     ["b"], name="/bn/BatchNormalization"),
        oh.make_node("Relu", ["b"], ["r"], name="/relu/Relu"),
        oh.make_node("MaxPool", ["r"], ["p"], name="/pool/MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
        oh.make_node("Flatten", ["p"], ["f"], name="/Flatten"),
        oh.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="/fc/Gemm", transB=1),
    ]
    weights = [shape_only("conv.weight", [4, 3, 3, 3]), shape_only("conv.bias", [4])]
    weights += [shape_only("bn." + n, [4]) for n in ("weight", "bias", "running_mean", "running_var")]
    weights += [shape_only("fc.weight", [10, 64]), shape_only("fc.bias", [10])]
    graph = oh.make_graph(nodes, "small_cnn", [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 3, 8, 8])],
                          [oh.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, ["batch", 10])],
                          initializer=weights)
    path = tmp_path_factory.mktemp("model") / "small_cnn.onnx"
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)]), str(path))
    return str(path)


def reference(tpusim_bin, model, out, seed, numerics="reference"):
    cli(tpusim_bin, "reference", model, "--batch", "4", "--backend", "cpu", "--seed", seed, "--numerics", numerics,
        "--warmup", "0", "--repeats", "1", "--out", str(out))
    return json.loads((out / "report.json").read_text())


def outputs(out, report):
    return {e["name"]: np.load(out / e["file"]) for e in report["outputs"]}


def test_the_reference_makes_up_each_weight_by_the_op_that_reads_it(tpusim_bin, small_cnn, tmp_path):
    report = reference(tpusim_bin, small_cnn, tmp_path / "a", "3")
    made_up = report["generated_weights"]
    assert made_up["count"] == 8 and made_up["seed"] == 3 and "PyTorch's default" in made_up["method"]
    assert made_up["rules"] == {
        "Conv weight: U(+-1/sqrt(fan_in))": 1, "Conv bias: 0": 1, "BatchNormalization scale: 1": 1,
        "BatchNormalization bias: 0": 1, "BatchNormalization running mean: 0": 1,
        "BatchNormalization running variance: 1": 1, "Gemm B: U(+-1/sqrt(fan_in))": 1, "Gemm C: 0": 1}
    values = outputs(tmp_path / "a", report)
    # Random weights of a 10-way classifier start near chance: the loss is near log(10).
    assert abs(float(values["loss:loss"]) - np.log(10)) < 1.0
    assert all(np.isfinite(v).all() for v in values.values())
    # The same seed gives the same bits; another seed, other weights.
    again = outputs(tmp_path / "b", reference(tpusim_bin, small_cnn, tmp_path / "b", "3"))
    other = outputs(tmp_path / "c", reference(tpusim_bin, small_cnn, tmp_path / "c", "4"))
    for name, value in values.items():
        assert np.array_equal(value, again[name]), name
    assert not np.array_equal(values["logits"], other["logits"])


def test_the_functional_simulation_uses_the_same_made_up_weights(tpusim_bin, small_cnn, tmp_path):
    cli(tpusim_bin, "run", small_cnn, "--batch", "4", "--functional", "--seed", "3", "--no-instructions",
        "--out", str(tmp_path / "sim"))
    sim = json.loads((tmp_path / "sim" / "report.json").read_text())
    assert sim["functional"]["generated_weights"]["count"] == 8
    reference(tpusim_bin, small_cnn, tmp_path / "ref", "3", numerics="mxu")
    cli(tpusim_bin, "compare", str(tmp_path / "sim" / "report.json"), str(tmp_path / "ref" / "report.json"),
        "--out", str(tmp_path / "cmp"))
    numerics = json.loads((tmp_path / "cmp" / "compare.json").read_text())["numerics"]["outputs"]
    assert len(numerics) >= 8
    for row in numerics:  # the MXU's numerics on both sides, and the same weights: exactly equal
        assert row["max_abs_error"] == 0, row


def test_int8_inference_quantizes_the_made_up_weights(tpusim_bin, small_cnn, tmp_path):
    """--precision int8 stores each quantized weight as int8 values and scales: for a shape-only
    model both come from the made-up f32 weight, so the reference and the functional simulation
    run, agree exactly (int8 sums are exact), and an f32 run of the same seed reads the same weights."""
    common = ["--batch", "4", "--mode", "inference", "--seed", "3"]
    cli(tpusim_bin, "reference", small_cnn, *common, "--precision", "int8", "--backend", "cpu", "--warmup", "0",
        "--repeats", "1", "--out", str(tmp_path / "ref"))
    report = json.loads((tmp_path / "ref" / "report.json").read_text())
    assert report["generated_weights"]["count"] == 8  # conv.weight and fc.weight counted once, as their int8 form
    assert "quantized from its made-up f32 values" in report["generated_weights"]["method"]
    cli(tpusim_bin, "run", small_cnn, *common, "--precision", "int8", "--functional", "--no-instructions",
        "--out", str(tmp_path / "sim"))
    cli(tpusim_bin, "compare", str(tmp_path / "sim" / "report.json"), str(tmp_path / "ref" / "report.json"),
        "--out", str(tmp_path / "cmp"))
    rows = json.loads((tmp_path / "cmp" / "compare.json").read_text())["numerics"]["outputs"]
    assert [row["output"] for row in rows] == ["logits"] and rows[0]["max_abs_error"] == 0, rows
    # Against f32 with the same made-up weights: int8's rounding error, small beside the logits.
    cli(tpusim_bin, "reference", small_cnn, *common, "--backend", "cpu", "--warmup", "0", "--repeats", "1",
        "--out", str(tmp_path / "f32"))
    int8 = outputs(tmp_path / "ref", report)["logits"]
    f32 = outputs(tmp_path / "f32", json.loads((tmp_path / "f32" / "report.json").read_text()))["logits"]
    assert 0 < np.abs(int8 - f32).max() < 0.05 * np.abs(f32).max()
