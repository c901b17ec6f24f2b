"""report.json's step_breakdown (report/step_breakdown.hpp) through the CLI: a partition of the
step, consistent with the interconnect and host sections."""
import json
import pathlib
import subprocess

MLP = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / "mlp.onnx")
PARTS = ("compute_cycles", "exposed_memory_cycles", "exposed_communication_cycles", "idle_cycles",
         "host_input_stall_cycles")


def run(tpusim_bin, out, *args):
    result = subprocess.run([tpusim_bin, "run", MLP, "--no-instructions", "--out", str(out), *args],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads((out / "report.json").read_text()), result.stdout


def test_one_chip_step_is_compute_and_memory(tpusim_bin, tmp_path):
    report, stdout = run(tpusim_bin, tmp_path)
    b = report["step_breakdown"]
    assert b["step_cycles"] == report["total_cycles"]
    assert sum(b[p] for p in PARTS) == b["step_cycles"]
    assert b["exposed_communication_cycles"] == b["overlapped_communication_cycles"] == 0
    assert b["host_input_stall_cycles"] == 0
    assert max(b["mxu_cycles"], b["vpu_cycles"]) <= b["compute_cycles"] <= b["mxu_cycles"] + b["vpu_cycles"]
    assert abs(sum(b["shares"].values()) - 1) < 1e-12
    assert b["bottleneck"] == "HBM traffic (DMA not hidden by compute)"  # the MLP at batch 32 waits on HBM
    assert "step split   compute" in stdout and b["bottleneck"] in stdout


def test_a_slice_exposes_the_collectives_the_interconnect_section_counts(tpusim_bin, tmp_path):
    report, _ = run(tpusim_bin, tmp_path, "--topology", "4x4x4")
    b = report["step_breakdown"]
    assert b["exposed_communication_cycles"] == report["interconnect"]["exposed_communication_cycles"] > 0
    assert b["overlapped_communication_cycles"] > 0
    assert sum(b[p] for p in PARTS) == b["step_cycles"] == report["total_cycles"]
    assert b["bottleneck"] == "interconnect (collectives not hidden)"


def test_host_stall_adds_to_the_step(tpusim_bin, tmp_path):
    report, _ = run(tpusim_bin, tmp_path, "--steps", "5")
    b = report["step_breakdown"]
    assert b["host_input_stall_cycles"] == report["host"]["input_stall_cycles"] // 5 > 0
    assert sum(b[p] for p in PARTS) == b["step_cycles"] + b["host_input_stall_cycles"]
    assert b["bottleneck"] == "host input pipeline"
