"""`tpusim run|reference --precision int8 --mode inference`: post-training int8 quantization
(frontend/train/int8_quantization.hpp) and the MXUs' int8 rate (mxu.int8_macs_per_pe)."""
import json
import pathlib
import subprocess

import numpy as np
import pytest

MLP = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / "mlp.onnx")
# traces/mlp.onnx: 784-512-512-10, Gemm weights [out, in] read transposed.
LAYERS = [(784, 512), (512, 512), (512, 10)]
ELEMENTS = sum(k * n for k, n in LAYERS)  # 668,672 matmul weight elements
CHANNELS = sum(n for _, n in LAYERS)      # 1,034 output channels (and bias elements)


def tpusim(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=300)


def run(tpusim_bin, out, *args):
    result = tpusim(tpusim_bin, "run", MLP, "--mode", "inference", "--no-instructions", "--out", str(out), *args)
    assert result.returncode == 0, result.stderr
    return json.loads((out / "report.json").read_text())


def mxu_sum(report, stat):
    return sum(unit[stat] for name, unit in report["units"].items() if stat in unit and "mxu" in name)


def test_int8_weights_are_one_byte_per_element_plus_f32_scales(tpusim_bin, tmp_path):
    f32 = run(tpusim_bin, tmp_path / "f32", "--batch", "32")
    int8 = run(tpusim_bin, tmp_path / "int8", "--batch", "32", "--precision", "int8")
    assert f32["precision"] == "float32" and int8["precision"] == "int8"
    # float32: every parameter 4 bytes (669,706 of them). int8: each matmul weight element 1
    # byte, a 4-byte scale per output channel, the f32 biases as they were, and the 4-byte
    # activation range floor (a constant).
    assert f32["memory"]["bytes_by_role"]["weight"] == 4 * (ELEMENTS + CHANNELS)
    assert int8["memory"]["bytes_by_role"]["weight"] == ELEMENTS * 1 + CHANNELS * 4 + CHANNELS * 4 + 4
    # The parameters' HBM loads shrink with them, to about a quarter.
    loads = lambda r: r["cmem"]["parameter_loads"]["bytes"]
    assert loads(int8) < 0.3 * loads(f32)


@pytest.mark.parametrize("hw,rate", [("tpuv4", 1), ("tpuv5e", 2), ("tpuv5p", 2)])
def test_int8_matmuls_take_the_presets_int8_rate(tpusim_bin, tmp_path, hw, rate):
    int8 = run(tpusim_bin, tmp_path / hw, "--batch", "32", "--precision", "int8", "--hw", hw)
    # Every int8 product of the step: batch x K x N per layer.
    assert mxu_sum(int8, "int8_macs") == 32 * ELEMENTS
    # Each PE slot does `rate` int8 MACs along K; every K tile here is even, so the slots
    # used are exactly the MACs over the rate.
    assert mxu_sum(int8, "macs") * rate == 32 * ELEMENTS


def test_int8_is_faster_than_bf16_on_v5e_where_the_rate_doubles(tpusim_bin, tmp_path):
    args = ("--batch", "1024", "--hw", "tpuv5e")
    bf16 = run(tpusim_bin, tmp_path / "bf16", *args, "--precision", "mixed_bfloat16")
    int8 = run(tpusim_bin, tmp_path / "int8", *args, "--precision", "int8")
    assert mxu_sum(int8, "busy_cycles") < 0.75 * mxu_sum(bf16, "busy_cycles")


def test_int8_training_is_a_one_line_error(tpusim_bin, tmp_path):
    result = tpusim(tpusim_bin, "run", MLP, "--precision", "int8", "--out", str(tmp_path))
    assert result.returncode == 4
    assert "--precision int8 is post-training quantization for --mode inference" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_reference_runs_int8_for_real_near_float32(tpusim_bin, tmp_path):
    logits = {}
    for policy in ("float32", "int8"):
        out = tmp_path / policy
        result = tpusim(tpusim_bin, "reference", MLP, "--mode", "inference", "--batch", "16", "--seed", "4",
                        "--precision", policy, "--out", str(out))
        assert result.returncode == 0, result.stderr
        report = json.loads((out / "report.json").read_text())
        entry = next(e for e in report["outputs"] if e["name"] == "logits")
        assert entry["dtype"] == "f32"
        logits[policy] = np.load(out / entry["file"]).astype(np.float64)
    error = np.abs(logits["int8"] - logits["float32"]).max() / np.abs(logits["float32"]).max()
    # Three int8 layers with per-tensor activation and per-channel weight steps of max/127,
    # f32 between them: within 3e-2 normwise, and not zero (the values were quantized).
    assert 1e-4 < error < 3e-2


def test_compare_reports_the_int8_runs_error_against_a_float32_reference(tpusim_bin, tmp_path):
    common = ("--mode", "inference", "--batch", "16", "--seed", "4")
    sim = tmp_path / "sim"
    result = tpusim(tpusim_bin, "run", MLP, *common, "--precision", "int8", "--functional", "--no-instructions",
                    "--out", str(sim))
    assert result.returncode == 0, result.stderr

    def compare(name, *reference_args):
        ref = tmp_path / name
        result = tpusim(tpusim_bin, "reference", MLP, *common, *reference_args, "--out", str(ref))
        assert result.returncode == 0, result.stderr
        result = tpusim(tpusim_bin, "compare", str(sim / "report.json"), str(ref / "report.json"),
                        "--out", str(tmp_path / f"cmp-{name}"))
        assert result.returncode == 0, result.stderr
        report = json.loads((tmp_path / f"cmp-{name}" / "compare.json").read_text())
        (logits,) = [o for o in report["numerics"]["outputs"] if o["output"] == "logits"]
        return logits["normwise_rel_error"]

    # Against float32: the quantization error, real and bounded.
    assert 1e-4 < compare("f32") < 3e-2
    # Against the int8 graph with the MXUs' numerics: the same bits (int32 sums are exact).
    assert compare("int8", "--precision", "int8", "--numerics", "mxu") == 0
