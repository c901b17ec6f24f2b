"""`tpusim run --functional`: the step's values with the MXU's numerics, beside its timing."""
import json
import pathlib
import subprocess

import numpy as np
import pytest

import tpusim

TRACES = pathlib.Path(__file__).resolve().parents[2] / "traces"


def run(tpusim_bin, out, *args):
    result = subprocess.run([tpusim_bin, "run", str(TRACES / "mlp.onnx"), "--batch", "8", "--out", str(out),
                             "--functional", *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads((out / "report.json").read_text())


def load(out, report, name):
    entry = next(e for e in report["functional"]["inputs"] + report["functional"]["outputs"] if e["name"] == name)
    return np.load(out / entry["file"])


def normwise(a, b):
    return float(np.abs(a.astype(np.float64) - b).max() / np.abs(b).max())


def test_functional_step_writes_its_inputs_and_outputs(tpusim_bin, tmp_path):
    report = run(tpusim_bin, tmp_path)
    f = report["functional"]
    assert f["dataflow"] == "weight_stationary" and f["rows"] == 128 and f["matmul_precision"] == "default"
    assert [e["name"] for e in f["inputs"]] == ["image", "labels"]
    names = [e["name"] for e in f["outputs"]]
    assert names[:2] == ["logits", "loss:loss"] and "0.weight:updated" in names
    labels = load(tmp_path, report, "labels")
    assert labels.dtype == np.int64 and labels.min() >= 0 and labels.max() < 10
    assert load(tmp_path, report, "logits").shape == (8, 10)


def test_functional_values_are_the_reference_with_one_bf16_pass(tpusim_bin, tmp_path):
    """The f32 CPU reference on the same inputs: within bf16 rounding of one pass, and
    within f32 rounding at --matmul-precision highest (6 passes)."""
    errors = {}
    for precision in ("default", "highest"):
        out = tmp_path / precision
        report = run(tpusim_bin, out, "--matmul-precision", precision)
        feeds = {"image": load(out, report, "image"), "labels": load(out, report, "labels")}
        reference = tpusim.reference(str(TRACES / "mlp.onnx"), feeds, batch=8)
        errors[precision] = {name: normwise(load(out, report, name), reference[name])
                             for name in ("logits", "0.weight:updated", "4.bias:updated")}
    for name, error in errors["default"].items():
        assert 1e-6 < error < 2e-2, (name, error)
    for name, error in errors["highest"].items():
        assert error < 1e-5, (name, error)


def test_functional_runs_are_deterministic_and_follow_the_seed(tpusim_bin, tmp_path):
    a, b, c = (run(tpusim_bin, tmp_path / d, *args) for d, args in (("a", []), ("b", []), ("c", ["--seed", "7"])))
    same = (tmp_path / "a" / "functional" / "logits.npy").read_bytes()
    assert same == (tmp_path / "b" / "functional" / "logits.npy").read_bytes()
    assert same != (tmp_path / "c" / "functional" / "logits.npy").read_bytes()
    assert (tmp_path / "a" / "report.json").read_bytes() == (tmp_path / "b" / "report.json").read_bytes()


def test_functional_threads_do_not_change_a_bit(tpusim_bin, tmp_path):
    """--threads splits each GEMM's rows and each op's output: every tensor and the report
    stay those of one thread, from the CLI and from run(threads=...)."""
    run(tpusim_bin, tmp_path / "one", "--threads", "1")
    run(tpusim_bin, tmp_path / "two", "--threads", "2")
    tpusim.run(str(TRACES / "mlp.onnx"), batch=8, out=str(tmp_path / "py"), functional=True, threads=3,
               progress=False)
    files = sorted(p.name for p in (tmp_path / "one" / "functional").glob("*.npy"))
    assert "logits.npy" in files and "0.weight_updated.npy" in files
    for other in ("two", "py"):
        assert sorted(p.name for p in (tmp_path / other / "functional").glob("*.npy")) == files
        for name in files:
            assert (tmp_path / other / "functional" / name).read_bytes() == \
                (tmp_path / "one" / "functional" / name).read_bytes(), (other, name)
    assert (tmp_path / "one" / "report.json").read_bytes() == (tmp_path / "two" / "report.json").read_bytes()


@pytest.mark.parametrize("threads,functional", [("0", ["--functional"]), ("1025", ["--functional"]), ("0", [])])
def test_thread_counts_outside_1_to_1024_are_refused(tpusim_bin, tmp_path, threads, functional):
    result = subprocess.run([tpusim_bin, "run", str(TRACES / "mlp.onnx"), "--batch", "8", "--out", str(tmp_path),
                             *functional, "--threads", threads], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"threads must be 1 to 1024, got {threads}" in lines[0], result.stderr


def test_functional_values_are_the_python_reference_with_mxu_numerics_bit_for_bit(tpusim_bin, tmp_path):
    report = run(tpusim_bin, tmp_path, "--matmul-precision", "high")
    feeds = {"image": load(tmp_path, report, "image"), "labels": load(tmp_path, report, "labels")}
    values = tpusim.reference(str(TRACES / "mlp.onnx"), feeds, batch=8, numerics="mxu", matmul_precision="high")
    for entry in report["functional"]["outputs"]:
        expected = values[entry["name"]].astype(np.float32)
        assert np.array_equal(np.load(tmp_path / entry["file"]).view(np.uint32), expected.view(np.uint32)), entry
    with pytest.raises(tpusim.Error, match="unknown numerics 'gpu'"):
        tpusim.reference(str(TRACES / "mlp.onnx"), feeds, batch=8, numerics="gpu")


def test_a_slice_computes_every_data_parallel_replica_and_says_so(tpusim_bin, tmp_path):
    """--topology 2x1x1: replica 0's forward pass is the one-chip run's (same inputs and weights),
    but its update applies both replicas' summed gradients. --tp 2 computes the unsharded model,
    the one-chip run's values, and says so."""
    one = run(tpusim_bin, tmp_path / "one")
    dp = run(tpusim_bin, tmp_path / "dp", "--topology", "2x1x1")
    tp = run(tpusim_bin, tmp_path / "tp", "--topology", "2x1x1", "--tp", "2")
    assert one["functional"]["replicas"] == 1 and "replicas_method" not in one["functional"]
    assert dp["functional"]["replicas"] == 2 and "summed across them" in dp["functional"]["replicas_method"]
    assert tp["functional"]["replicas"] == 1 and "unsharded model" in tp["functional"]["tensor_parallel"]
    for name in ("logits", "loss:loss", "0.weight:updated"):
        assert np.array_equal(load(tmp_path / "tp", tp, name), load(tmp_path / "one", one, name)), name
    assert np.array_equal(load(tmp_path / "dp", dp, "logits"), load(tmp_path / "one", one, "logits"))
    assert not np.array_equal(load(tmp_path / "dp", dp, "0.weight:updated"),
                              load(tmp_path / "one", one, "0.weight:updated"))
    scaled = run(tpusim_bin, tmp_path / "fp16", "--topology", "2x1x1", "--precision", "mixed_float16")
    assert scaled["functional"]["replicas"] == 2 and scaled["functional"]["loss_scaling"]["gradients_finite"]
