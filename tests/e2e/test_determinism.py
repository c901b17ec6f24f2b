"""The same inputs give byte-identical outputs: every shipped trace run twice through the CLI
(every output file, the instruction timeline included), a functional run on one thread and on
two, and the Python module run three times in one process."""
import json
import pathlib
import subprocess

import pytest

import tpusim

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRACES = sorted(path.name for path in (ROOT / "traces").glob("*.onnx"))


def run(tpusim_bin, args, out):
    done = subprocess.run([tpusim_bin, "run", *args, "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return {str(path.relative_to(out)): path.read_bytes() for path in sorted(out.rglob("*")) if path.is_file()}


def test_every_shipped_trace_is_there():
    assert TRACES == ["bert_base.onnx", "dlrm.onnx", "gpt2_small.onnx", "mlp.onnx", "resnet50.onnx", "vit_b16.onnx"]


@pytest.mark.parametrize("trace", TRACES)
def test_a_shipped_trace_gives_identical_outputs_twice(tpusim_bin, tmp_path, trace):
    args = [str(ROOT / "traces" / trace), "--batch", "1", "--mode", "training" if trace == "mlp.onnx" else "inference"]
    first = run(tpusim_bin, args, tmp_path / "first")
    second = run(tpusim_bin, args, tmp_path / "second")
    assert set(first) == set(second) and "report.json" in first and "trace.json" in first
    for name in first:
        assert first[name] == second[name], name


def test_a_functional_run_is_identical_on_one_thread_and_two(tpusim_bin, tmp_path):
    args = [str(ROOT / "traces" / "mlp.onnx"), "--batch", "8", "--functional", "--no-instructions"]
    one = run(tpusim_bin, [*args, "--threads", "1"], tmp_path / "one")
    two = run(tpusim_bin, [*args, "--threads", "2"], tmp_path / "two")
    assert set(one) == set(two) and any(name.endswith(".npy") for name in one)
    for name in one:
        assert one[name] == two[name], name


def test_python_runs_in_one_process_are_identical():
    reports = [json.dumps(tpusim.run(str(ROOT / "traces" / "mlp.onnx"), batch=8, progress=False), sort_keys=True)
               for _ in range(3)]
    assert reports[0] == reports[1] == reports[2]


def test_python_reports_do_not_depend_on_what_ran_before():
    """Run order: a model's report is the same first in a process, after other models, with
    other presets and a slice in between, and after a failed run."""
    def report(trace, **options):
        return json.dumps(tpusim.run(str(ROOT / "traces" / trace), progress=False, **options), sort_keys=True)

    first = report("mlp.onnx", batch=8)
    bert = report("bert_base.onnx", batch=1, mode="inference", instructions=False)
    report("dlrm.onnx", batch=4, hw="tpuv5e", mode="inference")
    report("mlp.onnx", batch=8, topology="2x2x1")
    with pytest.raises(tpusim.Error, match="of HBM"):  # a batch beyond HBM
        tpusim.run(str(ROOT / "traces" / "resnet50.onnx"), batch=4096, progress=False)
    assert report("mlp.onnx", batch=8) == first
    assert report("bert_base.onnx", batch=1, mode="inference", instructions=False) == bert
