"""compile, reference_report, compare and the numpy views of a report, from Python:
the same files and figures as the CLI's commands."""
import json
import subprocess

import numpy
import pytest

import tpusim


def test_compile_writes_the_program_the_cli_writes(mlp_path, tmp_path, tpusim_bin):
    result = tpusim.compile(mlp_path, str(tmp_path / "mlp.tpuprog"), hw="tpuv5e", batch=32)
    assert result["path"] == str(tmp_path / "mlp.tpuprog") and result["chips"] == 1
    assert result["instructions"] > 0 and "import" in " ".join(result["stage_seconds"])
    subprocess.run([tpusim_bin, "compile", mlp_path, "--hw", "tpuv5e", "--batch", "32", "-o",
                    str(tmp_path / "cli.tpuprog")], check=True, capture_output=True)
    assert (tmp_path / "mlp.tpuprog").read_bytes() == (tmp_path / "cli.tpuprog").read_bytes()
    saved, fresh = tpusim.run(result["path"], hw="tpuv5e"), tpusim.run(mlp_path, hw="tpuv5e", batch=32)
    assert saved["total_cycles"] == fresh["total_cycles"] and saved["per_op"] == fresh["per_op"]
    with pytest.raises(tpusim.Error, match="output must end in .tpuprog"):
        tpusim.compile(mlp_path, str(tmp_path / "mlp.bin"))


def test_reference_report_and_compare_match_the_cli(mlp_path, tmp_path, tpusim_bin):
    sim = tpusim.run(mlp_path, batch=8, out=str(tmp_path / "sim"), functional=True, seed=3)
    assert json.loads((tmp_path / "sim" / "report.json").read_text())["total_cycles"] == sim["total_cycles"]
    assert (tmp_path / "sim" / "per_op.csv").exists() and list((tmp_path / "sim" / "functional").glob("*.npy"))
    ref = tpusim.reference_report(mlp_path, out=str(tmp_path / "ref"), batch=8, seed=3, repeats=1, warmup=0)
    assert ref["kind"] == "reference" and ref["step_time_s"] > 0
    comparison = tpusim.compare(str(tmp_path / "sim" / "report.json"), str(tmp_path / "ref" / "report.json"))
    subprocess.run([tpusim_bin, "compare", str(tmp_path / "sim" / "report.json"), str(tmp_path / "ref" / "report.json"),
                    "--out", str(tmp_path / "cli")], check=True, capture_output=True)
    cli = json.loads((tmp_path / "cli" / "compare.json").read_text())
    assert comparison.keys() == cli.keys()
    assert comparison["numerics"] == cli["numerics"]  # timings differ between runs, values do not
    other = tpusim.reference_report(mlp_path, out=str(tmp_path / "other"), batch=16, repeats=1, warmup=0)
    assert other["batch"] == 16
    with pytest.raises(tpusim.Error, match="batch") as error:
        tpusim.compare(str(tmp_path / "sim" / "report.json"), str(tmp_path / "other" / "report.json"))
    assert "\n" not in str(error.value)
    with pytest.raises(tpusim.Error, match="unknown backend|backend"):
        tpusim.reference_report(mlp_path, backend="tpu")


def test_the_per_op_table_as_numpy_columns(mlp_path):
    report = tpusim.run(mlp_path, batch=16)
    table = tpusim.per_op_table(report)
    assert set(table) >= {"op", "type", "start_cycle", "end_cycle", "flops", "mxu_mac_utilization"}
    assert len(table["op"]) == len(report["per_op"])
    assert table["op"].dtype.kind == "U" and table["flops"].dtype == numpy.int64
    assert table["flops"].sum() == sum(row["flops"] for row in report["per_op"])
    assert table["end_cycle"].max() <= report["total_cycles"]


def test_utilization_over_time_per_unit(mlp_path):
    report = tpusim.run(mlp_path, batch=16)
    timeline = tpusim.utilization_timeline(report)
    windows = len(timeline["start_cycle"])
    # At most 100 windows of ceil(total / 100) cycles (report/utilization_windows.hpp).
    assert timeline["window_cycles"] == -(-report["total_cycles"] // 100)
    assert windows == -(-report["total_cycles"] // timeline["window_cycles"])
    # The execution units, in report.json's order (the HBM is a unit of the report, not of the timeline).
    assert list(timeline["units"]) == [unit for unit in report["units"] if unit in timeline["units"]]
    assert "chip0.core0.mxu0" in timeline["units"] and "chip0.core0.vpu" in timeline["units"]
    mxu = timeline["units"]["chip0.core0.mxu0"]
    assert mxu.shape == (windows,) and ((0 <= mxu) & (mxu <= 1)).all()
    # The windows' busy cycles add up to the unit's busy cycles.
    lengths = numpy.minimum(timeline["start_cycle"] + timeline["window_cycles"], report["total_cycles"]) - \
        timeline["start_cycle"]
    assert (mxu * lengths).sum() == pytest.approx(report["units"]["chip0.core0.mxu0"]["busy_cycles"])
    with pytest.raises(tpusim.Error, match="no instruction timeline"):
        tpusim.utilization_timeline(tpusim.run(mlp_path, batch=16, instructions=False))
