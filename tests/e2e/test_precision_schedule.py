"""`tpusim run --precision-schedule`: adaptive precision over a multi-step run (api/precision_schedule.hpp)."""
import json
import pathlib
import subprocess

import pytest

MLP = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / "mlp.onnx")


def tpusim(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=300)


def run(tpusim_bin, out, *args):
    result = tpusim(tpusim_bin, "run", MLP, "--no-instructions", "--out", str(out), *args)
    assert result.returncode == 0, result.stderr
    return json.loads((out / "report.json").read_text())


def test_each_phase_takes_its_policys_step_time(tpusim_bin, tmp_path):
    schedule = run(tpusim_bin, tmp_path / "s", "--precision-schedule", "float32:100,mixed_bfloat16:900,float32:50")
    alone = {p: run(tpusim_bin, tmp_path / p, "--precision", p) for p in ("float32", "mixed_bfloat16")}
    s = schedule["precision_schedule"]
    assert [(p["policy"], p["first_step"], p["steps"]) for p in s["phases"]] == [
        ("float32", 0, 100), ("mixed_bfloat16", 100, 900), ("float32", 1000, 50)]
    assert s["steps"] == 1050 and s["switches"] == 2
    for phase in s["phases"]:
        step = alone[phase["policy"]]
        assert phase["step_cycles"] == step["total_cycles"]
        assert phase["step_time_s"] == step["step_time_s"]
        assert phase["phase_time_s"] == pytest.approx(phase["steps"] * step["step_time_s"], rel=1e-12)
        assert phase["hbm_peak_bytes"] == step["memory"]["peak_bytes"]
    # The closed form: the sum over phases of steps x step time.
    total = 150 * alone["float32"]["step_time_s"] + 900 * alone["mixed_bfloat16"]["step_time_s"]
    assert s["total_time_s"] == pytest.approx(total, rel=1e-12)
    assert s["mean_step_time_s"] == pytest.approx(total / 1050, rel=1e-12)
    assert s["single_policy_time_s"]["float32"] == pytest.approx(1050 * alone["float32"]["step_time_s"], rel=1e-12)
    # The report's body is the last phase's step.
    assert schedule["precision"] == "float32" and schedule["total_cycles"] == alone["float32"]["total_cycles"]


@pytest.mark.parametrize("args,code,message", [
    (["--precision-schedule", "float32"], 2, "precision schedule entry 'float32' is not POLICY:STEPS"),
    (["--precision-schedule", "float32:0"], 2, "the step count must be a positive integer"),
    (["--precision-schedule", "float32:ten"], 2, "the step count must be a positive integer"),
    (["--precision-schedule", "float32:10,"], 2, "precision schedule entry '' is not POLICY:STEPS"),
    (["--precision-schedule", "fp8:10"], 2, "unknown precision policy 'fp8'"),
    (["--precision-schedule", "int8:10"], 4, "--precision int8 is post-training quantization for --mode inference"),
    (["--precision-schedule", "float32:10", "--precision", "mixed_bfloat16"], 2,
     "give --precision or --precision-schedule, not both"),
    (["--precision-schedule", "float32:10", "--steps", "3"], 4, "does not combine with --steps"),
])
def test_bad_schedules_are_one_line_errors(tpusim_bin, tmp_path, args, code, message):
    result = tpusim(tpusim_bin, "run", MLP, "--out", str(tmp_path), *args)
    assert result.returncode == code, result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
