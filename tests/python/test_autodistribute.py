"""tpusim.autodistribute: the ranked plans as a list of dicts, as tpusim autodistribute writes them."""
import json

import pytest

import tpusim


def test_autodistribute_ranks_the_plans_and_writes_the_files(mlp_path, tmp_path):
    seen = []
    plans = tpusim.autodistribute(mlp_path, "2x1x1", precisions=["float32", "mixed_bfloat16"], out=str(tmp_path),
                                  progress=lambda label, index, total: seen.append((label, index, total)))
    # tp 1 or 2 (dp 2 or 1), remat none or all, two precisions.
    assert len(plans) == 8 and len(seen) == 8
    assert seen[0] == ("dp2 tp1 remat=none float32", 0, 8)
    assert plans[0]["rank"] == 1 and plans[0]["status"] == "best" and plans[0]["reason"] == ""
    cycles = [p["step_cycles"] for p in plans]
    assert cycles == sorted(cycles)
    for plan in plans[1:]:
        assert plan["status"] == "slower" and plan["reason"].startswith("slower: ")
        assert plan["slowdown"] == pytest.approx(plan["step_cycles"] / plans[0]["step_cycles"])
    for plan in plans:
        assert plan["plan"]["dp"] * plan["plan"]["tp"] == 2
        assert plan["batch_per_replica"] * plan["plan"]["dp"] == 64  # the global batch, 32 x 2 chips
    # A data-parallel plan is the run of its options.
    plan = next(p for p in plans if p["plan"]["tp"] == 1 and p["plan"]["remat"] == "all")
    report = tpusim.run(mlp_path, topology="2x1x1", batch=plan["batch_per_replica"], remat="all",
                        precision=plan["plan"]["precision"], instructions=False)
    assert plan["step_cycles"] == report["total_cycles"]
    assert plan["hbm_peak_bytes"] == report["memory"]["peak_bytes"]
    written = json.loads((tmp_path / "autodistribute.json").read_text())
    assert written["plans"] == plans and written["chips"] == 2
    assert (tmp_path / "autodistribute.csv").read_text().splitlines()[0].startswith("rank,label,dp,tp,remat,")


def test_a_memory_limit_rejects_plans_without_simulating_them(mlp_path):
    plans = tpusim.autodistribute(mlp_path, "2x1x1", precisions=["float32"], memory_limit_gib=4 / 1024)
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
