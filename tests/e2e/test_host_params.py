"""The host.* parameters through the CLI and the Python module: listed with
their preset values, and refused with one-line errors when out of bounds."""
import subprocess

import pytest

HOST_PARAMS = [
    "host.storage_read_gbps", "host.example_bytes", "host.map_us", "host.num_parallel_calls",
    "host.prefetch_batches", "host.cache", "host.epoch_examples", "host.infeed_bytes_per_example",
    "host.pcie_gbps", "host.pcie_latency_us", "host.checkpoint_every_steps", "host.storage_write_gbps",
    "host.chips_per_host",
]


def run(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=120)


def test_hw_show_lists_every_host_parameter(tpusim_bin):
    shown = run(tpusim_bin, "hw", "show", "tpuv4")
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[0]: line.split() for line in shown.stdout.splitlines() if line.startswith("host.")}
    assert sorted(rows) == sorted(HOST_PARAMS)
    assert rows["host.pcie_gbps"][1:3] == ["15.75", "GB/s"]
    assert rows["host.num_parallel_calls"][1:3] == ["8", "threads"]
    overridden = run(tpusim_bin, "hw", "show", "tpuv5p", "--set", "host.cache=memory")
    assert next(l for l in overridden.stdout.splitlines() if l.startswith("host.cache")).split()[1] == "memory"


@pytest.mark.parametrize("setting,message", [
    ("host.num_parallel_calls=0", "parameter host.num_parallel_calls must be > 0 (got 0 threads)"),
    ("host.pcie_gbps=0", "parameter host.pcie_gbps must be > 0 (got 0 GB/s)"),
    ("host.example_bytes=0", "parameter host.example_bytes must be > 0 (got 0 bytes)"),
    ("host.prefetch_batches=-1", "parameter host.prefetch_batches must be >= 0"),
    ("host.cache=disk", "must be one of off, memory (got 'disk')"),
])
def test_bad_host_values_are_one_line_errors(tpusim_bin, setting, message):
    result = run(tpusim_bin, "hw", "show", "tpuv4", "--set", setting)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_python_params_carry_the_host():
    import tpusim

    params = tpusim.params("tpuv4")
    assert params["host.pcie_gbps"]["value"] == "15.75"
    assert params["host.map_us"]["unit"] == "us"
