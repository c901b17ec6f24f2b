"""The files `tpusim run` writes beside report.json (CSVs, trace.json, report.html) and
`tpusim report RUN_DIR`, which remakes them, with its bad inputs."""
import csv
import json
import subprocess

import pytest

VIEWS = ("per_op.csv", "layers.csv", "units.csv", "timeline.csv", "trace.json", "report.html")


def run(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def run_dir(tpusim_bin, mlp_path, tmp_path):
    out = tmp_path / "run"
    result = run(tpusim_bin, "run", mlp_path, "--hw", "tpuv4", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def test_run_writes_every_view(run_dir):
    for name in VIEWS:
        assert (run_dir / name).stat().st_size > 0, name
    report = json.loads((run_dir / "report.json").read_text())
    per_op = list(csv.DictReader((run_dir / "per_op.csv").open()))
    assert [row["op"] for row in per_op] == [entry["op"] for entry in report["per_op"]]
    assert [int(row["flops"]) for row in per_op] == [entry["flops"] for entry in report["per_op"]]
    units = list(csv.DictReader((run_dir / "units.csv").open()))
    assert [row["unit"] for row in units] == list(report["units"])
    timeline = list(csv.DictReader((run_dir / "timeline.csv").open()))
    # 100 windows of ceil(total / 100) cycles, covering the step exactly.
    total = report["total_cycles"]
    size = -(-total // 100)
    assert len(timeline) == -(-total // size)
    assert int(timeline[-1]["end_cycle"]) == total
    for unit, stats in report["units"].items():
        if "instructions" not in stats:
            continue
        busy = sum(float(row[unit]) * (int(row["end_cycle"]) - int(row["start_cycle"])) for row in timeline)
        assert busy == pytest.approx(stats["busy_cycles"], abs=1e-6), unit


def test_trace_is_valid_trace_event_json(run_dir):
    report = json.loads((run_dir / "report.json").read_text())
    trace = json.loads((run_dir / "trace.json").read_text())
    events = trace["traceEvents"]
    names = {}
    processes = {}
    slices = []
    counters = []
    for event in events:
        assert {"name", "ph", "pid", "tid"} <= set(event), event
        if event["ph"] == "M":
            assert event["name"] in ("process_name", "process_sort_index", "thread_name", "thread_sort_index")
            if event["name"] == "thread_name":
                names[(event["pid"], event["tid"])] = event["args"]["name"]
            if event["name"] == "process_name":
                processes[event["pid"]] = event["args"]["name"]
            continue
        if event["ph"] == "C":
            counters.append(event)
            continue
        assert event["ph"] == "X"
        assert isinstance(event["ts"], (int, float)) and isinstance(event["dur"], (int, float))
        assert event["dur"] >= 0
        assert {"instruction", "op", "type", "flops", "bytes", "start_cycle", "end_cycle"} <= set(event["args"])
        slices.append(event)
    assert processes == {0: "chip0"}
    memory = report["memory_timeline"]
    assert [event["args"]["bytes"] for event in counters] == memory["window_peak_bytes"]
    assert [event["ts"] for event in counters] == pytest.approx(
        [w * memory["window_cycles"] / report["clock_hz"] * 1e6 for w in range(len(counters))])
    assert len(slices) == len(report["ops"])
    execution_units = [name for name, unit in report["units"].items() if "instructions" in unit]
    assert set(execution_units) <= set(names.values())
    # A DMA engine's overlapping transfers take extra tracks: as many as it had in flight at most.
    for unit, stats in report["units"].items():
        if "peak_in_flight" in stats:
            tracks = [name for name in names.values() if name.split(" #")[0] == unit]
            assert len(tracks) == stats["peak_in_flight"], unit
    by_instruction = {op["name"]: op for op in report["ops"]}
    for event in slices:
        track = names[(event["pid"], event["tid"])]
        op = by_instruction[event["args"]["instruction"]]
        assert track.split(" #")[0] == op["unit"]
        assert event["ts"] == pytest.approx(op["start_cycle"] / report["clock_hz"] * 1e6)
        assert event["dur"] == pytest.approx((op["end_cycle"] - op["start_cycle"]) / report["clock_hz"] * 1e6)


def test_views_are_bit_identical_across_runs(tpusim_bin, mlp_path, tmp_path):
    for name in ("a", "b"):
        assert run(tpusim_bin, "run", mlp_path, "--hw", "tpuv5e", "--out", str(tmp_path / name)).returncode == 0
    for name in VIEWS:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_report_command_remakes_the_same_files(tpusim_bin, run_dir):
    before = {name: (run_dir / name).read_bytes() for name in VIEWS}
    for name in VIEWS:
        (run_dir / name).unlink()
    result = run(tpusim_bin, "report", str(run_dir))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("wrote per_op.csv layers.csv units.csv timeline.csv trace.json report.html")
    for name in VIEWS:
        assert (run_dir / name).read_bytes() == before[name], name


def test_no_instructions_writes_no_trace_and_says_so(tpusim_bin, mlp_path, run_dir):
    result = run(tpusim_bin, "run", mlp_path, "--hw", "tpuv4", "--no-instructions", "--out", str(run_dir))
    assert result.returncode == 0, result.stderr
    assert "no timeline.csv, trace.json: --no-instructions" in result.stdout
    # The earlier run's trace and timeline would not match this report: they are gone.
    assert not (run_dir / "trace.json").exists()
    assert not (run_dir / "timeline.csv").exists()
    assert "No instruction timeline in this run" in (run_dir / "report.html").read_text()
    again = run(tpusim_bin, "report", str(run_dir))
    assert again.returncode == 0, again.stderr
    assert "no timeline.csv or trace.json" in again.stdout


def test_report_command_bad_inputs(tpusim_bin, run_dir, tmp_path):
    def fails(expected_code, expected, *args):
        result = run(tpusim_bin, "report", *args)
        assert result.returncode == expected_code, result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        assert expected in result.stderr, result.stderr

    fails(2, "missing RUN_DIR argument")
    fails(3, "does not exist", str(tmp_path / "nowhere"))
    empty = tmp_path / "empty"
    empty.mkdir()
    fails(3, "has no report.json", str(empty))
    (empty / "report.json").mkdir()
    fails(3, "has no report.json", str(empty))
    (empty / "report.json").rmdir()
    (empty / "report.json").write_text('{"schema_version": 1, "units": ')
    fails(3, "is not valid JSON", str(empty))
    (empty / "report.json").write_text('{"schema_version": 7}')
    fails(3, "has schema_version 7; this tpusim reads version 1", str(empty))
    report = json.loads((run_dir / "report.json").read_text())
    (empty / "report.json").write_text(json.dumps(dict(report, kind="reference")))
    fails(3, 'is a "reference" report; tpusim report reads a simulation', str(empty))
    del report["peaks"]
    (empty / "report.json").write_text(json.dumps(report))
    fails(3, "report.json is malformed", str(empty))
    report = json.loads((run_dir / "report.json").read_text())
    report["ops"][0]["unit"] = "chip0.core7.mxu0"
    (empty / "report.json").write_text(json.dumps(report))
    fails(3, "which \"units\" does not list", str(empty))
