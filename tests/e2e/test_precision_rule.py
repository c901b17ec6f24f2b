"""`tpusim run --precision-rule`: adaptive precision by a rule on each real step's gradient
statistics (api/precision_rule.hpp)."""
import json
import math
import pathlib
import subprocess

import pytest

MLP = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / "mlp.onnx")


def tpusim(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=600)


def run(tpusim_bin, out, *args):
    result = tpusim(tpusim_bin, "run", MLP, "--no-instructions", "--batch", "8", "--out", str(out), *args)
    assert result.returncode == 0, result.stderr
    return json.loads((out / "report.json").read_text())


def test_a_rule_that_holds_switches_and_each_phase_takes_its_policys_step_time(tpusim_bin, tmp_path):
    # A gradient's norm is never negative, and it is positive on a step that learns: the
    # condition holds from step 0, so with patience 2 the run switches after step 1.
    report = run(tpusim_bin, tmp_path / "r", "--precision-rule", "mixed_bfloat16->float32 when grad_norm>0 for 2",
                 "--precision-rule-steps", "5")
    alone = {p: run(tpusim_bin, tmp_path / p, "--precision", p) for p in ("float32", "mixed_bfloat16")}
    r = report["precision_rule"]
    assert r["fired"] and r["switch_after_step"] == 1 and r["steps"] == 5
    assert [s["policy"] for s in r["per_step"]] == ["mixed_bfloat16"] * 2 + ["float32"] * 3
    assert all(s["grad_norm"] > 0 for s in r["per_step"])
    assert [(p["policy"], p["first_step"], p["steps"]) for p in r["phases"]] == [
        ("mixed_bfloat16", 0, 2), ("float32", 2, 3)]
    for phase in r["phases"]:
        assert phase["step_cycles"] == alone[phase["policy"]]["total_cycles"]
        assert phase["phase_time_s"] == pytest.approx(phase["steps"] * phase["step_time_s"], rel=1e-12)
    total = 2 * alone["mixed_bfloat16"]["step_time_s"] + 3 * alone["float32"]["step_time_s"]
    assert r["total_time_s"] == pytest.approx(total, rel=1e-12)
    assert "grad_norm" in r["reason"] and "step 1" in r["reason"]
    assert report["precision"] == "float32"  # the report's body is the last phase's step
    # The ratios are the norms' own quotients: real, step-to-step values.
    norms = [s["grad_norm"] for s in r["per_step"]]
    assert r["per_step"][0]["grad_norm_ratio"] is None
    for i in range(1, 5):
        assert r["per_step"][i]["grad_norm_ratio"] == pytest.approx(norms[i] / norms[i - 1], rel=1e-12)
    assert len(set(norms)) == 5  # each step trains on new inputs with the updated weights


def test_the_switch_step_is_the_first_step_where_the_ratio_crosses(tpusim_bin, tmp_path):
    # A learning rate far too high makes SGD diverge: the gradient norm grows step over step.
    args = ("--precision-rule-steps", "6", "--lr", "5")
    probe = run(tpusim_bin, tmp_path / "probe", "--precision-rule", "float32->mixed_bfloat16 when grad_norm<0",
                *args)["precision_rule"]
    ratios = [s["grad_norm_ratio"] for s in probe["per_step"][1:]]
    assert max(ratios) > 1.5, ratios  # the setup does cross the threshold below
    rule = run(tpusim_bin, tmp_path / "rule", "--precision-rule", "float32->mixed_bfloat16 when grad_norm_ratio>1.5",
               *args)["precision_rule"]
    first = 1 + next(i for i, ratio in enumerate(ratios) if ratio > 1.5)
    assert rule["fired"] and rule["switch_after_step"] == first
    # Up to the switch both runs are the same float32 steps.
    for a, b in zip(probe["per_step"][:first + 1], rule["per_step"][:first + 1]):
        assert a["grad_norm"] == b["grad_norm"]


def test_a_rule_that_cannot_hold_never_switches(tpusim_bin, tmp_path):
    report = run(tpusim_bin, tmp_path / "r", "--precision-rule", "float32->mixed_bfloat16 when grad_norm<0",
                 "--precision-rule-steps", "3")
    r = report["precision_rule"]
    assert not r["fired"] and r["switch_after_step"] is None
    assert [p["policy"] for p in r["phases"]] == ["float32"] and r["phases"][0]["steps"] == 3
    assert not any(s["condition_holds"] for s in r["per_step"])
    assert report["precision"] == "float32"
    assert all(math.isfinite(s["loss"]) for s in r["per_step"])


@pytest.mark.parametrize("rule,code,message", [
    ("float32 mixed_bfloat16 when grad_norm>1", 2, "no '->' between the two policies"),
    ("float32->mixed_bfloat16 if grad_norm>1", 2, "no ' when ' before the condition"),
    ("float32->fp8 when grad_norm>1", 2, "unknown precision policy 'fp8'"),
    ("float32->float32 when grad_norm>1", 2, "FROM and TO are the same policy"),
    ("float32->int8 when grad_norm>1", 4, "int8 is inference only"),
    ("float32->mixed_bfloat16 when grad_variance>1", 2, "unknown statistic 'grad_variance'"),
    ("float32->mixed_bfloat16 when grad_norm=1", 2, "the condition has no comparison"),
    ("float32->mixed_bfloat16 when grad_norm>two", 2, "the threshold 'two' is not a finite number"),
    ("float32->mixed_bfloat16 when grad_norm>1 for 0", 2, "the patience after 'for' must be a positive integer"),
    ("float32->mixed_bfloat16 when loss_scale_overflows>0", 2, "loss_scale_overflows needs FROM mixed_float16"),
])
def test_bad_rules_are_one_line_errors(tpusim_bin, tmp_path, rule, code, message):
    result = tpusim(tpusim_bin, "run", MLP, "--precision-rule", rule, "--out", str(tmp_path))
    assert result.returncode == code, result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args,code,message", [
    (("--precision", "mixed_bfloat16"), 2, "give one of --precision, --precision-schedule and --precision-rule"),
    (("--steps", "3"), 4, "does not combine with --steps"),
    (("--mode", "inference"), 2, "it needs --mode training"),
    (("--precision-rule-steps", "0"), 2, "--precision-rule-steps must be at least 1"),
])
def test_a_rule_refuses_options_it_does_not_combine_with(tpusim_bin, tmp_path, args, code, message):
    result = tpusim(tpusim_bin, "run", MLP, "--precision-rule", "float32->mixed_bfloat16 when grad_norm>1", *args,
                    "--out", str(tmp_path))
    assert result.returncode == code, result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
