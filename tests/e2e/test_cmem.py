"""CMEM end to end on the shipped MLP (docs/memory.md, "CMEM"): parameter loads
are faster with CMEM on, in cache and software modes; the placement is visible
in the Program; bad CMEM parameters are one-line errors."""
import json
import subprocess

import pytest


def run(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=120)


def report_for(tpusim_bin, mlp_path, tmp_path, mode):
    out = tmp_path / mode
    result = run(tpusim_bin, "run", mlp_path, "--hw", "tpuv4", "--set", f"cmem.mode={mode}", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return json.loads((out / "report.json").read_text()), result.stdout


def test_cmem_makes_parameter_loads_faster(tpusim_bin, mlp_path, tmp_path):
    off, off_summary = report_for(tpusim_bin, mlp_path, tmp_path, "off")
    assert off["cmem"]["mode"] == "off" and off["cmem"]["hit_rate"] == 0.0
    assert "CMEM " not in off_summary and "chip0.cmem" not in off["units"]
    loads = off["cmem"]["parameter_loads"]
    assert loads["transfers"] > 0 and loads["bytes"] > 0
    for mode in ("cache", "software"):
        on, summary = report_for(tpusim_bin, mlp_path, tmp_path, mode)
        cmem = on["cmem"]
        assert cmem["mode"] == mode and cmem["capacity_bytes"] == 128 << 20
        assert cmem["hit_rate"] > 0 and cmem["hits"] > 0 and cmem["bytes_from_cmem"] > 0
        # The same loads, in fewer DMA cycles, and a shorter step.
        assert cmem["parameter_loads"]["bytes"] == loads["bytes"]
        assert cmem["parameter_loads"]["dma_cycles"] < loads["dma_cycles"]
        assert on["total_cycles"] < off["total_cycles"]
        assert on["units"]["chip0.hbm"]["bytes_read"] < off["units"]["chip0.hbm"]["bytes_read"]
        assert f"CMEM         {mode}, 128 MiB: hit rate" in summary
    # Software mode pins every weight of the MLP (2.55 MiB fit 128 MiB): CMEM serves all their loads.
    software, _ = report_for(tpusim_bin, mlp_path, tmp_path, "software")
    assert software["cmem"]["resident_bytes"] == software["memory"]["bytes_by_role"]["weight"]
    assert software["cmem"]["bytes_from_cmem"] == loads["bytes"]


def test_cache_mode_reports_are_bit_identical(tpusim_bin, mlp_path, tmp_path):
    first = run(tpusim_bin, "run", mlp_path, "--set", "cmem.mode=cache", "--out", str(tmp_path / "a"))
    second = run(tpusim_bin, "run", mlp_path, "--set", "cmem.mode=cache", "--out", str(tmp_path / "b"))
    assert first.returncode == 0 and second.returncode == 0
    assert (tmp_path / "a" / "report.json").read_bytes() == (tmp_path / "b" / "report.json").read_bytes()


def test_software_placement_is_in_the_program(tpusim_bin, mlp_path, tmp_path):
    program = tmp_path / "mlp.tpuprog.txt"
    result = run(tpusim_bin, "compile", mlp_path, "--set", "cmem.mode=software", "-o", str(program),
                 "--print-ir-after", "cmem_placement")
    assert result.returncode == 0, result.stderr
    assert "// IR after cmem_placement\ncmem resident: 6 buffers, 2.555 MiB\n" in result.stderr
    assert program.read_text().count("cmem_resident: true") == 6
    # The saved Program keeps its placement; a CMEM too small for it does not fit.
    small = run(tpusim_bin, "run", str(program), "--set", "cmem.mode=software", "--set", "cmem.capacity_mib=1",
                "--out", str(tmp_path / "small"))
    assert small.returncode == 5
    assert "of buffers resident in CMEM, which holds 1.00 MiB" in small.stderr
    assert len(small.stderr.strip().splitlines()) == 1


BAD = [
    (["--set", "cmem.bandwidth_gbps=0"], "cmem.bandwidth_gbps must be > 0"),
    (["--set", "cmem.mode=victim"], "parameter cmem.mode must be one of off, cache, software"),
    (["--hw", "tpuv5e", "--set", "cmem.mode=cache"], "cmem.mode=cache needs cmem.capacity_mib > 0"),
    (["--set", "cmem.mode=cache", "--set", "cmem.associativity=3"], "cmem.associativity 3 does not divide"),
    (["--set", "cmem.mode=cache", "--set", "cmem.line_bytes=3000"], "is not a whole number of cmem.line_bytes"),
    (["--set", "cmem.line_bytes=0"], "cmem.line_bytes must be > 0"),
]


@pytest.mark.parametrize("args,message", BAD)
def test_bad_cmem_parameters_are_one_line_errors(tpusim_bin, mlp_path, tmp_path, args, message):
    result = run(tpusim_bin, "run", mlp_path, *args, "--out", str(tmp_path))
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
