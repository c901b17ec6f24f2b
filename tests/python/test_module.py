"""The Python module: same library, same report, errors as tpusim.Error."""
import pytest

import tpusim


def test_run_returns_the_report_as_a_dict(mlp_path):
    report = tpusim.run(mlp_path, hw="tpuv4")
    assert report["schema_version"] == 1
    assert report["hw"] == "tpuv4"
    assert report["mode"] == "training"
    assert report["total_cycles"] > 0
    assert report["step_time_s"] == pytest.approx(report["total_cycles"] / 1.05e9)
    assert "chip0.core0.mxu0" in report["units"]


def test_overrides_change_the_machine(mlp_path):
    base = tpusim.run(mlp_path, hw="tpuv4", batch=256)
    slower_hbm = tpusim.run(mlp_path, hw="tpuv4", batch=256, overrides={"hbm.bandwidth_gbps": 100})
    assert slower_hbm["overrides"] == {"hbm.bandwidth_gbps": "100"}
    assert slower_hbm["total_cycles"] > base["total_cycles"]


def test_inference_is_cheaper_than_training(mlp_path):
    training = tpusim.run(mlp_path, hw="tpuv5e", batch=64)
    inference = tpusim.run(mlp_path, hw="tpuv5e", mode="inference", batch=64)
    assert inference["mode"] == "inference"
    assert inference["total_cycles"] < training["total_cycles"]


def test_errors_are_tpusim_errors_with_one_line(mlp_path):
    with pytest.raises(tpusim.Error, match="did you mean 'mxu.rows'"):
        tpusim.run(mlp_path, overrides={"mxu.rowz": 1})
    with pytest.raises(tpusim.Error, match="unknown hardware preset"):
        tpusim.run(mlp_path, hw="tpuv9")
    with pytest.raises(tpusim.Error, match="does not exist"):
        tpusim.run("/nonexistent.onnx")


def test_presets_and_params():
    assert tpusim.presets() == ["tpuv4", "tpuv5e", "tpuv5p"]
    params = tpusim.params("tpuv4")
    assert params["mxu.rows"] == {"value": "128", "unit": "PE", "doc": params["mxu.rows"]["doc"], "type": "int"}
    assert params["hbm.bandwidth_gbps"]["value"] == "1200"


def test_topology_runs_data_parallel_on_a_slice(mlp_path):
    report = tpusim.run(mlp_path, hw="tpuv4", topology="2x2x2")
    assert report["interconnect"]["chips"] == 8
    assert report["interconnect"]["global_batch"] == 8 * report["batch"]
    assert report["total_cycles"] > tpusim.run(mlp_path, hw="tpuv4")["total_cycles"]
    with pytest.raises(tpusim.Error, match="ICI shape '2x'"):
        tpusim.run(mlp_path, topology="2x")
