"""The HBM models through the CLI: the shipped MLP on the command-level DRAM model,
exact and memoized, with its report's HBM and DMA sections, and the model's bad inputs."""
import json
import subprocess

import pytest


def run(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("model", ["dram", "dram_memoized"])
def test_mlp_runs_on_the_dram_model_and_reports_its_row_hit_rate(tpusim_bin, mlp_path, tmp_path, model):
    result = run(tpusim_bin, "run", mlp_path, "--hw", "tpuv4", "--set", f"hbm.model={model}", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    hbm = report["hbm"]
    assert hbm["model"] == model
    assert (hbm["dram_preset"], hbm["stacks"], hbm["pin_gbps"]) == ("hbm2", 4, 2.34375)
    assert 0.5 < hbm["row_hit_rate"] < 1.0
    bursts = hbm["row_hits"] + hbm["row_misses"] + hbm["row_conflicts"]
    assert bursts == hbm["reads"] + hbm["writes"]
    assert hbm["row_hit_rate"] == pytest.approx(hbm["row_hits"] / bursts)
    # Every miss or conflict took an ACT; a refresh that closes an opened row before its burst takes another.
    assert hbm["activates"] >= hbm["row_misses"] + hbm["row_conflicts"]
    # Every byte moved is in whole 32 B bursts.
    assert 32 * bursts >= hbm["bytes_read"] + hbm["bytes_written"]
    assert 0 < hbm["bandwidth_utilization"] < 1
    assert f"{model} model (hbm2 x 4): row hits" in result.stdout


def test_bandwidth_model_report_has_hbm_and_dma_sections(tpusim_bin, mlp_path, tmp_path):
    result = run(tpusim_bin, "run", mlp_path, "--hw", "tpuv4", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    hbm = report["hbm"]
    assert hbm["model"] == "bandwidth" and "row_hit_rate" not in hbm
    moved = hbm["bytes_read"] + hbm["bytes_written"]
    assert hbm["achieved_gbps"] == pytest.approx(moved / report["step_time_s"] / 1e9)
    # The bandwidth model's busy cycles are its bytes at the peak rate, rounded up per transfer.
    peak_per_cycle = 1200e9 / report["clock_hz"]
    assert hbm["bandwidth_utilization"] == pytest.approx(moved / peak_per_cycle / report["total_cycles"])
    engines = {e["engine"]: e for e in report["dma"]}
    assert set(engines) == {f"chip0.core{c}.dma{d}" for c in range(2) for d in range(2)}
    assert sum(e["bytes"] for e in engines.values()) == moved
    for engine in engines.values():
        assert engine["busy_cycles"] == report["units"][engine["engine"]]["busy_cycles"]
        assert engine["busy_time_s"] == pytest.approx(engine["busy_cycles"] / report["clock_hz"])
        assert 1 <= engine["peak_in_flight"] <= 4


@pytest.mark.parametrize(
    "setting, message",
    [
        ("hbm.model=ddr", "parameter hbm.model must be one of bandwidth, dram, dram_memoized (got 'ddr')"),
        ("hbm.stacks=3", "hbm.bandwidth_gbps = 1200 but 3 stack(s) of hbm2 at 2.34375 Gb/s per pin peak at 900 GB/s"),
        ("dma.max_outstanding=0", "parameter dma.max_outstanding must be > 0"),
    ],
)
def test_bad_hbm_settings_are_one_line_errors(tpusim_bin, mlp_path, tmp_path, setting, message):
    result = run(tpusim_bin, "run", mlp_path, "--hw", "tpuv4", "--set", "hbm.model=dram", "--set", setting,
                 "--out", str(tmp_path))
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_dram_reports_are_bit_identical_across_runs(tpusim_bin, mlp_path, tmp_path):
    for name in ("a", "b"):
        result = run(tpusim_bin, "run", mlp_path, "--hw", "tpuv5e", "--set", "hbm.model=dram",
                     "--out", str(tmp_path / name))
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "a" / "report.json").read_bytes() == (tmp_path / "b" / "report.json").read_bytes()
