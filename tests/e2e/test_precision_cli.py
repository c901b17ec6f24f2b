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


def test_mixed_bfloat16_functional_step_stays_near_float32(tpusim_bin, tmp_path):
    args = ("--batch", "8", "--functional", "--seed", "3")
    f32 = run(tpusim_bin, tmp_path / "f32", "mlp.onnx", *args)
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
    ("fp8", 2, "unknown precision policy 'fp8' (use float32 or mixed_bfloat16)"),
    ("mixed_float16", 4, "mixed_float16 needs dynamic loss scaling, which is not built yet"),
    ("int8", 4, "int8 (quantized inference) is not built yet"),
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
