"""One-node ONNX models of the activations the TPU v4 validation data uses (LeakyRelu, PRelu,
Elu, Selu, and the binary step Cast(GreaterOrEqual(x, 0), FLOAT) that jax and torch export),
float16 [64, 128], through `tpusim run --hw tpuv4 --mode inference --functional`: each
simulates, charges the vector unit its ops per element (frontend/lower/vector_costs.hpp), and
computes the closed form."""
import json
import subprocess

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper
import pytest

SHAPE = [64, 128]
ELEMENTS = 64 * 128
SLOPE = np.linspace(-0.5, 1.5, 128).astype(np.float16)  # PRelu's, one per column
SELU_ALPHA = 1.67326319217681884765625
SELU_GAMMA = 1.05070102214813232421875


def elu(x, alpha):
    return np.where(x >= 0, x, alpha * np.expm1(x))


# Each f16 element loaded or stored costs CONVERT ALU operations on the v4 vector unit, which
# has no f16 ALU (vpu.f16_unpack_ops and vpu.f16_pack_ops, set by the test so that a refit
# preset does not move them).
CONVERT = 12
# name: (nodes, constants, VPU ops per element, closed form of the float32 input)
CASES = {
    # 2 + f16 in and out
    "leaky_relu": ([oh.make_node("LeakyRelu", ["x"], ["y"], alpha=0.1)], {}, 2 + 2 * CONVERT,
                   lambda x: np.where(x >= 0, x, 0.1 * x)),
    # relu, scale, relu, mul, sub fused in one kernel: x loaded once, y stored once
    "prelu": ([oh.make_node("PRelu", ["x", "slope"], ["y"])], {"slope": SLOPE}, 5 + 2 * CONVERT,
              lambda x: np.where(x >= 0, x, SLOPE.astype(np.float32) * x)),
    "elu": ([oh.make_node("Elu", ["x"], ["y"])], {}, 4 + 2 * CONVERT, lambda x: elu(x, 1.0)),
    "selu": ([oh.make_node("Selu", ["x"], ["y"])], {}, 4 + 2 * CONVERT,
             lambda x: SELU_GAMMA * elu(x, SELU_ALPHA)),
    # Compare and Cast, 1 each, fused in one kernel: x converted as it is loaded, y stored as f32.
    "binary_step": ([oh.make_node("GreaterOrEqual", ["x", "zero"], ["mask"]),
                     oh.make_node("Cast", ["mask"], ["y"], to=onnx.TensorProto.FLOAT)],
                    {"zero": np.zeros([], np.float16)}, 2 + CONVERT, lambda x: (x >= 0).astype(np.float32)),
}


def model(tmp_path, name):
    nodes, constants, _, _ = CASES[name]
    constant_nodes = [oh.make_node("Constant", [], [key], value=onnx.numpy_helper.from_array(value, key))
                      for key, value in constants.items()]
    out_type = onnx.TensorProto.FLOAT if name == "binary_step" else onnx.TensorProto.FLOAT16
    graph = oh.make_graph(constant_nodes + nodes, name,
                          [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT16, SHAPE)],
                          [oh.make_tensor_value_info("y", out_type, SHAPE)])
    path = tmp_path / f"{name}.onnx"
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)]), str(path))
    return path


@pytest.mark.parametrize("name", list(CASES))
def test_activation_simulates_with_its_vector_cost_and_closed_form(tpusim_bin, tmp_path, name):
    out = tmp_path / "out"
    converts = ("--set", f"vpu.f16_unpack_ops={CONVERT}", "--set", f"vpu.f16_pack_ops={CONVERT}")
    result = subprocess.run([tpusim_bin, "run", str(model(tmp_path, name)), "--hw", "tpuv4", "--mode", "inference",
                             "--out", str(out), "--functional", *converts], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads((out / "report.json").read_text())
    element_ops = sum(unit["element_ops"] for unit in report["units"].values() if "element_ops" in unit)
    assert element_ops == ELEMENTS * CASES[name][2]
    entries = {e["name"]: e for e in report["functional"]["inputs"] + report["functional"]["outputs"]}
    assert entries["x"]["dtype"] == "f16"
    x = np.load(out / entries["x"]["file"])  # f16 values, written as float32
    y = np.load(out / entries["y"]["file"])
    assert y.shape == tuple(SHAPE) and np.array_equal(x, x.astype(np.float16).astype(np.float32))
    assert (x < 0).any() and (x > 0).any()
    expected = CASES[name][3](x.astype(np.float32))
    if name == "binary_step":
        np.testing.assert_array_equal(y, expected)
    else:
        # Computed in float32 and rounded to float16 once.
        np.testing.assert_allclose(y.astype(np.float32), expected.astype(np.float16).astype(np.float32),
                                   rtol=2e-3, atol=1e-4)
