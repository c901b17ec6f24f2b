"""tpusim.autodistribute: the ranked plans as a list of dicts, as tpusim autodistribute writes them."""
import json

import pytest

import tpusim


def test_autodistribute_ranks_the_plans_and_writes_the_files(mlp_path, tmp_path):
    seen = []
    plans = tpusim.autodistribute(mlp_path, "2x1x1", precisions=["float32", "mixed_bfloat16"], pp_degrees=[1],
                                  out=str(tmp_path),
                                  progress=lambda label, index, total: seen.append((label, index, total)))
    # tp 1 or 2 (dp 2 or 1), remat none or all, two precisions.
    assert len(plans) == 8 and len(seen) == 8
    assert seen[0] == ("dp2 tp1 pp1 remat=none float32", 0, 8)
    assert plans[0]["rank"] == 1 and plans[0]["status"] == "best" and plans[0]["reason"] == ""
    cycles = [p["step_cycles"] for p in plans]
    assert cycles == sorted(cycles)
    for plan in plans[1:]:
        assert plan["status"] == "slower" and plan["reason"].startswith("slower: ")
        assert plan["slowdown"] == pytest.approx(plan["step_cycles"] / plans[0]["step_cycles"])
    for plan in plans:
        assert plan["plan"]["dp"] * plan["plan"]["tp"] == 2 and plan["plan"]["pp"] == 1
        assert plan["batch_per_replica"] * plan["plan"]["dp"] == 64  # the global batch, 32 x 2 chips
    # A data-parallel plan is the run of its options.
    plan = next(p for p in plans if p["plan"]["tp"] == 1 and p["plan"]["remat"] == "all")
    report = tpusim.run(mlp_path, topology="2x1x1", batch=plan["batch_per_replica"], remat="all",
                        precision=plan["plan"]["precision"], instructions=False)
    assert plan["step_cycles"] == report["total_cycles"]
    assert plan["hbm_peak_bytes"] == report["memory"]["peak_bytes"]
    written = json.loads((tmp_path / "autodistribute.json").read_text())
    assert written["plans"] == plans and written["chips"] == 2
    assert (tmp_path / "autodistribute.csv").read_text().splitlines()[0].startswith("rank,label,dp,tp,pp,")
    # Two worker processes evaluate the same plans to the same files.
    assert tpusim.autodistribute(mlp_path, "2x1x1", precisions=["float32", "mixed_bfloat16"], pp_degrees=[1],
                                 out=str(tmp_path / "jobs"), jobs=2) == plans
    for name in ("autodistribute.json", "autodistribute.csv"):
        assert (tmp_path / "jobs" / name).read_bytes() == (tmp_path / name).read_bytes()


def test_a_memory_limit_rejects_plans_without_simulating_them(mlp_path):
    plans = tpusim.autodistribute(mlp_path, "2x1x1", precisions=["float32"], pp_degrees=[1],
                                  memory_limit_gib=4 / 1024)
    fits = [p for p in plans if p["status"] in ("best", "slower")]
    rejected = [p for p in plans if p["status"] == "does_not_fit"]
    assert fits and rejected
    for plan in rejected:
        assert plan["step_cycles"] is None and plan["rank"] == 0
        assert plan["hbm_peak_bytes"] > 4 * 2**20
        assert plan["reason"].startswith("does not fit: ") and plan["reason"].endswith(" > 4 MiB")
    for plan in fits:
        assert plan["hbm_peak_bytes"] <= 4 * 2**20


def test_autodistribute_bad_inputs_raise_tpusim_error(mlp_path):
    with pytest.raises(tpusim.Error, match="--memory-limit-gib must be > 0"):
        tpusim.autodistribute(mlp_path, "2x1x1", memory_limit_gib=0)
    with pytest.raises(tpusim.Error, match="unknown precision policy 'fp8'|'fp8'"):
        tpusim.autodistribute(mlp_path, "2x1x1", precisions=["fp8"])
    with pytest.raises(tpusim.Error, match="leave --dp, --tp"):
        tpusim.autodistribute(mlp_path, "2x1x1", remat="all")


def test_autodistribute_searches_pipelines_and_their_micro_batches(mlp_path):
    # 3 chips: the MLP's 3 layers as 3 stages, 96 examples in 2, 4 or 8 micro-batches (the
    # default counts) under 1F1B; dp 3 beside them; tp 3 refused (no matmul splits 3 ways).
    plans = tpusim.autodistribute(mlp_path, "3x1x1", precisions="float32")
    keys = {"rank", "label", "plan", "batch_per_replica", "status", "reason", "step_cycles", "step_time_s",
            "slowdown", "mxu_utilization", "pipeline_bubble", "hbm_peak_bytes"}
    assert all(set(p) == keys for p in plans)
    assert all(list(p["plan"]) == ["dp", "tp", "pp", "micro_batches", "pipeline_schedule", "remat", "precision"]
               for p in plans)
    pipelines = [p for p in plans if p["plan"]["pp"] == 3]
    assert sorted({p["plan"]["micro_batches"] for p in pipelines}) == [2, 4, 8]
    assert {p["plan"]["pipeline_schedule"] for p in pipelines} == {"1f1b"}
    for plan in pipelines:
        assert plan["status"] in ("best", "slower") and plan["pipeline_bubble"] > 0
        assert plan["label"].startswith("dp1 tp1 pp3 mb%d 1f1b " % plan["plan"]["micro_batches"])
    # With more micro-batches, the same 3 stages idle less of the step.
    bubbles = {p["plan"]["micro_batches"]: p["pipeline_bubble"] for p in pipelines if p["plan"]["remat"] == "none"}
    assert bubbles[8] < bubbles[4] < bubbles[2]
    refused = [p for p in plans if p["status"] == "unsupported"]
    assert [p["plan"]["tp"] for p in refused] == [3, 3] and all(p["rank"] == 0 for p in refused)
    # A pipeline plan is the run of its options: the pipeline's step and its largest stage peak.
    plan = next(p for p in pipelines if p["plan"]["micro_batches"] == 4 and p["plan"]["remat"] == "none")
    report = tpusim.run(mlp_path, topology="3x1x1", batch=plan["batch_per_replica"], pp=3, micro_batches=4,
                        instructions=False)
    assert plan["step_cycles"] == report["pipeline"]["step_cycles"]
    assert plan["pipeline_bubble"] == report["pipeline"]["bubble"]
    assert plan["hbm_peak_bytes"] == max(s["hbm_peak_bytes"] for s in report["pipeline"]["per_stage"])


def test_autodistribute_pipeline_kwargs_are_checked(mlp_path):
    with pytest.raises(tpusim.Error, match=r"^--pp-degrees must be >= 1, not 0$"):
        tpusim.autodistribute(mlp_path, "2x1x1", pp_degrees=[0])
    with pytest.raises(tpusim.Error, match=r"^--pp-degrees 4 does not divide the 2 chips of 2x1x1$"):
        tpusim.autodistribute(mlp_path, "2x1x1", pp_degrees=4)
    with pytest.raises(tpusim.Error, match=r"^--micro-batches must be >= 1, not -1$"):
        tpusim.autodistribute(mlp_path, "2x1x1", micro_batches=[2, -1])
    with pytest.raises(tpusim.Error, match=r"unknown pipeline schedule 'zero_bubble'"):
        tpusim.autodistribute(mlp_path, "2x1x1", pipeline_schedules="zero_bubble")
    # 2x1x1: tp1 pp1, tp1 pp2 x 2 micro-batch counts, tp2 pp1; x 2 remat x 3 precisions = 24.
    with pytest.raises(tpusim.Error, match=r"^the search has 24 plans, more than --max-plans 23: "):
        tpusim.autodistribute(mlp_path, "2x1x1", micro_batches=[2, 4], max_plans=23)
