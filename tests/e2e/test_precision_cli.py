"""`tpusim run --precision`: Keras-style mixed precision (frontend/train/precision_policy.hpp)."""
import json
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRACES = ROOT / "traces"


def tpusim(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=300)


def run(tpusim_bin, out, model, *args):
    result = tpusim(tpusim_bin, "run", str(TRACES / model), "--out", str(out), *args)
    assert result.returncode == 0, result.stderr
    return json.loads((out / "report.json").read_text())


def test_mixed_bfloat16_halves_resnet50_memory_and_speeds_its_step(tpusim_bin, tmp_path):
    args = ("--batch", "16", "--no-instructions")
    f32 = run(tpusim_bin, tmp_path / "f32", "resnet50.onnx", *args)
    bf16 = run(tpusim_bin, tmp_path / "bf16", "resnet50.onnx", *args, "--precision", "mixed_bfloat16")
    assert f32["precision"] == "float32" and bf16["precision"] == "mixed_bfloat16"
    # Activations and their gradients are half the bytes; the f32 weights and their updates are not.
    assert bf16["memory"]["peak_bytes"] < 0.6 * f32["memory"]["peak_bytes"]
    assert bf16["memory"]["bytes_by_role"]["weight"] == f32["memory"]["bytes_by_role"]["weight"]
    assert bf16["total_cycles"] < 0.7 * f32["total_cycles"]


def test_mixed_bfloat16_is_no_slower_than_float32_on_the_mlp(tpusim_bin, tmp_path):
    # Every cast fuses into the ops that read it (the matmuls, the bias epilogues, the SGD
    # updates of the bias gradients): no kernel of bf16's is a cast pass float32 does not have.
    f32 = run(tpusim_bin, tmp_path / "f32", "mlp.onnx")
    bf16 = run(tpusim_bin, tmp_path / "bf16", "mlp.onnx", "--precision", "mixed_bfloat16")
    assert bf16["total_cycles"] <= f32["total_cycles"]
    casts = [op for op in bf16["per_op"] if op["type"] == "Cast"]
    assert casts and all(op["tiling"] in ("fused into the ops that read it",) or op["tiling"].startswith("fused behind")
                         for op in casts)


def test_mixed_bfloat16_functional_step_stays_near_float32(tpusim_bin, tmp_path):
    args = ("--batch", "8", "--functional", "--seed", "3")
    run(tpusim_bin, tmp_path / "f32", "mlp.onnx", *args)  # the float32 tensors, read below
    bf16 = run(tpusim_bin, tmp_path / "bf16", "mlp.onnx", *args, "--precision", "mixed_bfloat16")
    files = {e["name"]: e for e in bf16["functional"]["outputs"]}
    assert files["0.weight:updated"]["dtype"] == "f32"  # the variables stay f32
    for name in ("logits", "0.weight:updated", "4.bias:updated"):
        a = np.load(tmp_path / "bf16" / files[name]["file"]).astype(np.float64)
        b = np.load(tmp_path / "f32" / files[name]["file"]).astype(np.float64)
        assert a.shape == b.shape
        # bf16 keeps 8 significant bits: the logits within a few ulps of bf16 (2^-8), normwise.
        assert np.abs(a - b).max() / np.abs(b).max() < 2e-2, name
    assert not np.array_equal(np.load(tmp_path / "bf16" / files["logits"]["file"]),
                              np.load(tmp_path / "f32" / files["logits"]["file"]))


@pytest.mark.parametrize("policy,code,message", [
    ("fp8", 2, "unknown precision policy 'fp8' (use float32, mixed_bfloat16, mixed_float16 or int8)"),
    ("int8", 4, "--precision int8 is post-training quantization for --mode inference"),
])
def test_policies_that_are_unknown_or_not_built_are_one_line_errors(tpusim_bin, tmp_path, policy, code, message):
    result = tpusim(tpusim_bin, "run", str(TRACES / "mlp.onnx"), "--precision", policy, "--out", str(tmp_path))
    assert result.returncode == code
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_precision_does_not_apply_to_a_compiled_program(tpusim_bin, tmp_path):
    program = tmp_path / "mlp.tpuprog"
    assert tpusim(tpusim_bin, "compile", str(TRACES / "mlp.onnx"), "-o", str(program)).returncode == 0
    result = tpusim(tpusim_bin, "run", str(program), "--precision", "mixed_bfloat16", "--out", str(tmp_path))
    assert result.returncode == 2 and "--precision applies when compiling a model" in result.stderr


def test_a_compiled_program_keeps_its_policy(tpusim_bin, tmp_path):
    program = tmp_path / "mlp.tpuprog"
    compiled = tpusim(tpusim_bin, "compile", str(TRACES / "mlp.onnx"), "--precision", "mixed_bfloat16", "-o",
                      str(program))
    assert compiled.returncode == 0, compiled.stderr
    direct = run(tpusim_bin, tmp_path / "direct", "mlp.onnx", "--precision", "mixed_bfloat16")
    saved = run(tpusim_bin, tmp_path / "saved", str(program))
    assert saved["precision"] == "mixed_bfloat16"
    assert saved["total_cycles"] == direct["total_cycles"]


def outputs(report, out):
    return {e["name"]: np.load(out / e["file"]).astype(np.float64) for e in report["functional"]["outputs"]}


def test_mixed_float16_scales_the_loss_and_its_step_stays_near_float32(tpusim_bin, tmp_path):
    args = ("--batch", "8", "--functional", "--seed", "3")
    f32 = run(tpusim_bin, tmp_path / "f32", "mlp.onnx", *args)
    f16 = run(tpusim_bin, tmp_path / "f16", "mlp.onnx", *args, "--precision", "mixed_float16")
    assert f16["precision"] == "mixed_float16"
    scaling = f16["functional"]["loss_scaling"]
    assert scaling["attempts"] == [{"loss_scale": 32768.0, "gradients_finite": True}]  # Keras's initial 2^15
    assert scaling["skipped_steps"] == 0 and "loss_scaling" not in f32["functional"]
    a, b = outputs(f16, tmp_path / "f16"), outputs(f32, tmp_path / "f32")
    assert a["loss_scale.gradients_finite"] == 1
    for name in ("logits", "0.weight:updated", "4.bias:updated"):
        # f16 keeps 11 significant bits; the gradients were unscaled, so the update is float32's.
        assert np.abs(a[name] - b[name]).max() / np.abs(b[name]).max() < 5e-3, name


def overflowing_model(path):
    """x[32, 64] -> Gemm (weights 1e-3) -> Relu -> Gemm (weights +-300) -> logits[32, 10]: the
    forward pass is small, but the backward pass carries 300-fold products of the scaled loss
    gradient, past f16's largest finite value (65504) at Keras's initial scale 2^15."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(7)
    w1 = np.full((64, 64), 1e-3, dtype=np.float32)
    w2 = (rng.integers(0, 2, size=(64, 10)) * 600 - 300).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Gemm", ["r", "w2"], ["logits"])],
        "overflow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [32, 10])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_an_overflowing_gradient_skips_the_step_and_halves_the_scale(tpusim_bin, tmp_path):
    model = tmp_path / "overflow.onnx"
    overflowing_model(model)
    args = ("--functional", "--seed", "1", "--no-instructions")
    f16 = run(tpusim_bin, tmp_path / "f16", str(model), *args, "--precision", "mixed_float16")
    f32 = run(tpusim_bin, tmp_path / "f32", str(model), *args)
    scaling = f16["functional"]["loss_scaling"]
    attempts = scaling["attempts"]
    assert len(attempts) >= 2 and scaling["skipped_steps"] == len(attempts) - 1
    assert [a["loss_scale"] for a in attempts] == [32768.0 / 2 ** i for i in range(len(attempts))]
    assert [a["gradients_finite"] for a in attempts] == [False] * (len(attempts) - 1) + [True]
    assert 1 <= scaling["loss_scale"] <= 8192  # the forward pass is finite: some scale fits
    a, b = outputs(f16, tmp_path / "f16"), outputs(f32, tmp_path / "f32")
    assert a["loss_scale.gradients_finite"] == 1
    for name in ("w1:updated", "w2:updated"):
        assert np.isfinite(a[name]).all(), name
        assert np.abs(a[name] - b[name]).max() / np.abs(b[name]).max() < 5e-3, name


def test_mixed_float16_costs_a_gradient_check_beside_mixed_bfloat16(tpusim_bin, tmp_path):
    args = ("--batch", "16", "--no-instructions")
    # On a chip with f16 arithmetic (tpuv4's f16 conversions set to none): the same bytes per
    # activation; the check reads every gradient once more and the unscaling fuses into the
    # select, so the step is a little longer, never shorter.
    native = ("--set", "vpu.f16_unpack_ops=0", "--set", "vpu.f16_pack_ops=0", "--set", "mxu.f16_feed_interval_cycles=1")
    bf16 = run(tpusim_bin, tmp_path / "bf16", "resnet50.onnx", *args, *native, "--precision", "mixed_bfloat16")
    f16 = run(tpusim_bin, tmp_path / "f16", "resnet50.onnx", *args, *native, "--precision", "mixed_float16")
    # Persistent state gains the f32 loss scale, 4 bytes.
    assert f16["memory"]["bytes_by_role"]["weight"] == bf16["memory"]["bytes_by_role"]["weight"] + 4
    assert abs(f16["memory"]["peak_bytes"] - bf16["memory"]["peak_bytes"]) < 0.1 * bf16["memory"]["peak_bytes"]
    assert bf16["total_cycles"] < f16["total_cycles"] < 1.2 * bf16["total_cycles"]
    ops = {op["op"]: op for op in f16["per_op"]}
    assert "loss_scale.finite" in ops and "conv1.weight.grad_unscaled" in ops or any(
        name.endswith(".grad_unscaled") for name in ops)


def test_mixed_float16_on_tpuv4_pays_for_f16_conversions(tpusim_bin, tmp_path):
    # TPU v4's vector unit has no f16 ALU and its MXU no f16 path: every f16 tensor loaded or
    # stored is converted (vpu.f16_unpack_ops, vpu.f16_pack_ops) and every f16 vector fed to the MXU
    # converted on its way in (mxu.f16_feed_interval_cycles), so mixed_float16 is slower there than mixed_bfloat16, and slower
    # than itself on a chip with f16 arithmetic.
    args = ("--batch", "16", "--no-instructions", "--precision", "mixed_float16")
    v4 = run(tpusim_bin, tmp_path / "v4", "resnet50.onnx", *args)
    native = run(tpusim_bin, tmp_path / "native", "resnet50.onnx", *args, "--set", "vpu.f16_unpack_ops=0",
                 "--set", "vpu.f16_pack_ops=0", "--set", "mxu.f16_feed_interval_cycles=1")
    bf16 = run(tpusim_bin, tmp_path / "bf16", "resnet50.onnx", "--batch", "16", "--no-instructions", "--precision",
               "mixed_bfloat16")
    assert v4["total_cycles"] > native["total_cycles"]
    assert v4["total_cycles"] > bf16["total_cycles"]
    assert v4["units"]["chip0.core0.vpu"]["element_ops"] > native["units"]["chip0.core0.vpu"]["element_ops"]
