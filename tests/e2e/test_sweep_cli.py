"""`tpusim sweep SPEC` (docs/sweep.md): the cases in spec order, sweep.csv and sweep.json, the
case reports, a malformed spec as one line, and the same bytes from one process, from
--jobs 2 worker processes and from `mpirun -np 2` ranks; the same for `tpusim autodistribute`.
tpusim.sweep(spec) in Python takes the same spec and returns the same rows."""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

import tpusim

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLP = ROOT / "traces" / "mlp.onnx"

# 2 presets x 2 variations x 2 strategies; tpuv5e's 2D torus cannot form a 2x1x1 slice, so
# two cases fail and are rows with their error.
SPEC = f"""
# a comment
model: "{MLP}"
preset: "tpuv4"
preset: "tpuv5e"
variation {{ }}
variation {{ set: "mxu.rows=64" set: "mxu.cols=64" }}
strategy {{ }}
strategy {{ topology: "2x1x1" }}
batch: 8
"""

MPIRUN = shutil.which("mpirun")


def mpi_env():
    """This environment without any MPI launcher's variables, and allowed to run as root."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # Containers often forbid the cross-process memory reads of OpenMPI's shared-memory single
    # copy (CMA needs ptrace rights); copying through the shared segment works everywhere.
    env.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    return env


def tpusim_cmd(tpusim_bin, *args, ranks=None):
    prefix = [] if ranks is None else [MPIRUN, "--oversubscribe", "-np", str(ranks)]
    return subprocess.run([*prefix, tpusim_bin, *args], capture_output=True, text=True, timeout=600, env=mpi_env())


def files(out):
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    path = tmp_path_factory.mktemp("spec") / "sweep.textproto"
    path.write_text(SPEC)
    return path


@pytest.fixture(scope="module")
def one_process(tpusim_bin, spec, tmp_path_factory):
    out = tmp_path_factory.mktemp("one")
    result = tpusim_cmd(tpusim_bin, "sweep", str(spec), "--out", str(out), "--reports")
    assert result.returncode == 0, result.stderr
    return result, out


def test_the_rows_are_the_cases_in_spec_order(one_process):
    result, out = one_process
    table = json.loads((out / "sweep.json").read_text())
    assert table["kind"] == "tpusim.sweep" and table["cases"] == 8 and table["failed"] == 2
    rows = table["rows"]
    assert [r["index"] for r in rows] == list(range(8))
    assert [(r["preset"], r["sets"], r["strategy"]) for r in rows[:4]] == [
        ("tpuv4", [], "one chip"), ("tpuv4", [], "topology=2x1x1"),
        ("tpuv4", ["mxu.rows=64", "mxu.cols=64"], "one chip"),
        ("tpuv4", ["mxu.rows=64", "mxu.cols=64"], "topology=2x1x1")]
    assert [r["status"] for r in rows] == ["ok"] * 5 + ["error", "ok", "error"]
    assert rows[5]["error"].startswith("invalid configuration: ") and rows[5]["step_cycles"] is None
    for row in rows:
        assert row["model"] == str(MLP)
        if row["status"] == "ok":
            assert row["step_cycles"] > 0 and 0 < row["mxu_utilization"] < 1 and row["hbm_peak_bytes"] > 0
    csv = (out / "sweep.csv").read_text().splitlines()
    assert len(csv) == 9 and csv[0].startswith("index,model,preset,sets,strategy,status,step_cycles,")
    assert csv[3].startswith(f'2,"{MLP}","tpuv4","mxu.rows=64,mxu.cols=64","one chip",ok,')
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["case", "run", "step"] and len(lines) == 10
    assert lines[-1].startswith("written ")
    assert len(result.stderr.splitlines()) == 8  # a progress line per case


def test_each_case_report_is_the_run_of_its_options(tpusim_bin, one_process, tmp_path):
    _, out = one_process
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert sorted(p.name for p in (out / "cases").iterdir()) == ["0000", "0001", "0002", "0003", "0004", "0006"]
    run = subprocess.run([tpusim_bin, "run", str(MLP), "--hw", "tpuv4", "--batch", "8", "--set", "mxu.rows=64",
                          "--set", "mxu.cols=64", "--no-instructions", "--out", str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert (out / "cases" / "0002" / "report.json").read_bytes() == (tmp_path / "run" / "report.json").read_bytes()
    assert rows[2]["step_cycles"] == json.loads((tmp_path / "run" / "report.json").read_text())["total_cycles"]


def test_worker_processes_write_the_same_bytes(tpusim_bin, spec, one_process, tmp_path):
    _, out = one_process
    result = tpusim_cmd(tpusim_bin, "sweep", str(spec), "--out", str(tmp_path), "--reports", "--jobs", "2")
    assert result.returncode == 0, result.stderr
    assert files(tmp_path) == files(out)


@pytest.mark.skipif(MPIRUN is None, reason="mpirun (openmpi-bin) is not installed")
def test_two_mpi_ranks_write_the_same_bytes(tpusim_bin, spec, one_process, tmp_path):
    _, out = one_process
    result = tpusim_cmd(tpusim_bin, "sweep", str(spec), "--out", str(tmp_path), "--reports", ranks=2)
    assert result.returncode == 0, result.stderr
    assert files(tmp_path) == files(out)
    # Rank 0 alone prints the table; each rank printed the progress of its own cases.
    assert result.stdout.count("written ") == 1
    assert len([line for line in result.stderr.splitlines() if line.startswith("case ")]) == 8


@pytest.mark.skipif(MPIRUN is None, reason="mpirun (openmpi-bin) is not installed")
def test_ranks_with_worker_processes_and_more_ranks_than_cores(tpusim_bin, spec, one_process, tmp_path):
    _, out = one_process
    for ranks, jobs in ((2, 2), (3, 1)):
        dest = tmp_path / f"{ranks}x{jobs}"
        result = tpusim_cmd(tpusim_bin, "sweep", str(spec), "--out", str(dest), "--reports", "--jobs", str(jobs),
                            ranks=ranks)
        assert result.returncode == 0, result.stderr
        assert files(dest) == files(out), (ranks, jobs)


def test_a_malformed_spec_is_one_line_and_a_non_zero_exit(tpusim_bin, tmp_path):
    cases = {
        'model: "x"\nmodle: "y"\n': ":2:6: Message type \"tpusim.config.SweepSpec\" has no field named \"modle\"",
        f'model: "{MLP}"\nvariation {{ set: "mxu.rowz=64" }}\n': "did you mean 'mxu.rows'?",
        f'model: "{MLP}"\nstrategy {{ tp: 2 }}\n': "dp, tp and pp need a topology",
        'preset: "tpuv4"\n': "sweep spec: no model",
    }
    for text, message in cases.items():
        spec = tmp_path / "bad.textproto"
        spec.write_text(text)
        result = tpusim_cmd(tpusim_bin, "sweep", str(spec), "--out", str(tmp_path / "out"))
        assert result.returncode == 2, (text, result.stderr)
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("tpusim: error: "), result.stderr
        assert message in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()
    missing = tpusim_cmd(tpusim_bin, "sweep", str(tmp_path / "nothere.textproto"))
    assert missing.returncode != 0 and "cannot open sweep spec" in missing.stderr
    jobs = tpusim_cmd(tpusim_bin, "sweep", str(spec), "--jobs", "0")
    assert jobs.returncode == 2 and "--jobs must be 1 to 256 (got 0)" in jobs.stderr


def test_python_takes_the_same_spec_and_returns_the_same_rows(spec, one_process, tmp_path):
    _, out = one_process
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert tpusim.sweep(str(spec), jobs=2, progress=False) == rows
    as_dict = {"model": str(MLP), "preset": ["tpuv4", "tpuv5e"],
               "variation": [[], {"mxu.rows": 64, "mxu.cols": 64}],
               "strategy": [{}, {"topology": "2x1x1"}], "batch": 8}
    seen = []
    assert tpusim.sweep(as_dict, out=tmp_path, progress=lambda row, total: seen.append((row["index"], total))) == rows
    assert sorted(seen) == [(i, 8) for i in range(8)]
    assert (tmp_path / "sweep.csv").read_bytes() == (out / "sweep.csv").read_bytes()
    with pytest.raises(tpusim.Error, match="modle"):
        tpusim.sweep({"modle": [str(MLP)]})
    with pytest.raises(ValueError, match="is a model"):
        tpusim.sweep(str(MLP))


# autodistribute: the MLP's 8 plans on a 2x1x1 slice (tp 1, 2 x remat none, all x 2
# precisions), from one process, two worker processes and two MPI ranks.
AUTODISTRIBUTE = ["autodistribute", str(MLP), "--topology", "2x1x1", "--precisions", "float32,mixed_bfloat16",
                  "--batch", "16", "--pp-degrees", "1"]


@pytest.fixture(scope="module")
def one_search(tpusim_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("search")
    result = tpusim_cmd(tpusim_bin, *AUTODISTRIBUTE, "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert len(json.loads((out / "autodistribute.json").read_text())["plans"]) == 8
    return result, out


def test_autodistribute_worker_processes_write_the_same_bytes(tpusim_bin, one_search, tmp_path):
    result, out = one_search
    jobs = tpusim_cmd(tpusim_bin, *AUTODISTRIBUTE, "--out", str(tmp_path), "--jobs", "2")
    assert jobs.returncode == 0, jobs.stderr
    assert files(tmp_path) == files(out)
    assert jobs.stdout == result.stdout.replace(str(out), str(tmp_path))
    assert sorted(jobs.stderr.splitlines()) == sorted(result.stderr.splitlines())


@pytest.mark.skipif(MPIRUN is None, reason="mpirun (openmpi-bin) is not installed")
def test_autodistribute_over_two_mpi_ranks_writes_the_same_bytes(tpusim_bin, one_search, tmp_path):
    result, out = one_search
    ranks = tpusim_cmd(tpusim_bin, *AUTODISTRIBUTE, "--out", str(tmp_path), ranks=2)
    assert ranks.returncode == 0, ranks.stderr
    assert files(tmp_path) == files(out)
    assert ranks.stdout == result.stdout.replace(str(out), str(tmp_path))
