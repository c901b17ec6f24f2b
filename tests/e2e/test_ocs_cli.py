"""Optical circuit switches on tpuv4 (ici.ocs_*): the cubes a slice takes, failed cubes,
insertion latency, and the one-line errors."""
import json
import pathlib
import subprocess

TRACES = pathlib.Path(__file__).resolve().parents[2] / "traces"


def run(tpusim_bin, out, *args):
    return subprocess.run([tpusim_bin, "run", str(TRACES / "mlp.onnx"), "--hw", "tpuv4", "--no-instructions",
                           "--topology", "8x8x8", "--out", str(out), *args],
                          capture_output=True, text=True, timeout=300)


def ocs_section(tpusim_bin, out, *args):
    result = run(tpusim_bin, out, *args)
    assert result.returncode == 0, result.stderr
    report = json.loads((out / "report.json").read_text())
    return report["total_cycles"], report["interconnect"]["ocs"]


def test_failed_cubes_are_replaced_and_insertion_latency_slows_the_step(tpusim_bin, tmp_path):
    cycles, ocs = ocs_section(tpusim_bin, tmp_path / "a")
    assert ocs["cubes"] == list(range(8)) and ocs["ocs_links"] == 768 and ocs["failed_cubes"] == []
    same, moved = ocs_section(tpusim_bin, tmp_path / "b", "--set", "ici.ocs_failed_cubes=0,2")
    assert moved["cubes"] == [1, 3, 4, 5, 6, 7, 8, 9] and moved["failed_cubes"] == [0, 2]
    assert same == cycles  # other cubes, the same torus
    slower, _ = ocs_section(tpusim_bin, tmp_path / "c", "--set", "ici.ocs_latency_ns=500")
    assert slower > cycles


def test_a_pod_without_enough_healthy_cubes_is_a_one_line_error(tpusim_bin, tmp_path):
    failed = ",".join(str(c) for c in range(60))
    result = run(tpusim_bin, tmp_path, "--set", f"ici.ocs_failed_cubes={failed}")
    assert result.returncode == 2
    assert result.stderr.strip() == ("tpusim: error: slice 8x8x8 needs 8 healthy cubes; the pod has 4 of 64 "
                                     "(ici.ocs_failed_cubes)")
    bad = run(tpusim_bin, tmp_path, "--set", "ici.ocs_failed_cubes=70")
    assert bad.returncode == 2 and "'70' is not a cube id in [0, 64)" in bad.stderr


def run_twisted(tpusim_bin, out, shape):
    return subprocess.run([tpusim_bin, "run", str(TRACES / "mlp.onnx"), "--hw", "tpuv4", "--no-instructions",
                           "--topology", shape, "--set", "ici.topology=twisted_3d_torus", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)


def test_a_twisted_slice_is_wired_through_the_switches(tpusim_bin, tmp_path):
    result = run_twisted(tpusim_bin, tmp_path, "4x4x8")
    assert result.returncode == 0, result.stderr
    ocs = json.loads((tmp_path / "report.json").read_text())["interconnect"]["ocs"]
    assert ocs["cubes"] == [0, 1] and ocs["ocs_links"] == 192
    small = run_twisted(tpusim_bin, tmp_path / "small", "2x2x4")
    assert small.returncode == 2
    assert small.stderr.strip() == ("tpusim: error: twisted slice 2x2x4: k must be a multiple of the 4-chip cube "
                                    "edge to wire the twist through the OCS")
