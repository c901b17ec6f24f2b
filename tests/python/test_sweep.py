"""tpusim.sweep and its progress output."""
import io

import pytest

import tpusim
from tpusim.progress import Progress


def test_sweep_runs_every_point_in_order(mlp_path):
    out = io.StringIO()
    results = tpusim.sweep(mlp_path, {"mxu.rows": [64, 128], "batch": [8, 16]}, hw="tpuv5e",
                           progress=Progress(4, stream=out, bar=False))
    assert [r["point"] for r in results] == [
        {"mxu.rows": 64, "batch": 8}, {"mxu.rows": 64, "batch": 16},
        {"mxu.rows": 128, "batch": 8}, {"mxu.rows": 128, "batch": 16}]
    for r in results:
        assert r["report"]["batch"] == r["point"]["batch"]
        assert r["report"]["overrides"] == {"mxu.rows": str(r["point"]["mxu.rows"])}
        assert r["report"]["hw"] == "tpuv5e"
    # Each point is the run it names.
    alone = tpusim.run(mlp_path, hw="tpuv5e", batch=16, overrides={"mxu.rows": 64})
    assert results[1]["report"]["total_cycles"] == alone["total_cycles"]
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and lines[-1].startswith("[4/4] mxu.rows=128 batch=16: ")
    assert "simulated cycles" in lines[0] and "ETA" in lines[0]


def test_the_bar_redraws_one_line():
    out = io.StringIO()
    ticks = iter([0.0, 1.0, 3.0])
    progress = Progress(2, stream=out, bar=True, clock=lambda: next(ticks))
    progress.step("a", 10)
    progress.step("b", 1234)
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n")
    assert "[############............] [1/2] a: 10 simulated cycles, 1.0 s elapsed, ETA 1.0 s" in text
    assert "[2/2] b: 1,234 simulated cycles, 3.0 s elapsed, ETA 0.0 s" in text


def test_bad_grids_and_parameters_are_errors(mlp_path):
    with pytest.raises(ValueError, match="at least one grid entry"):
        tpusim.sweep(mlp_path, {})
    with pytest.raises(ValueError, match="'batch' needs a non-empty list"):
        tpusim.sweep(mlp_path, {"batch": []})
    with pytest.raises(tpusim.Error, match="mxu.rowz"):
        tpusim.sweep(mlp_path, {"mxu.rowz": [1]}, progress=False)
