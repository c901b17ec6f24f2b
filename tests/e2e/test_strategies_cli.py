"""`tpusim run MODEL --strategy NAME`: mirrored, multi_worker_mirrored and tpu on traces/mlp.onnx,
their report sections against each other and the hierarchical all-reduce's closed form
(docs/interconnect.md, "DCN"), and the options' one-line errors."""
import json
import math
import subprocess

import pytest


def run(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=300)


def report_of(tpusim_bin, tmp_path, name, *args):
    result = run(tpusim_bin, "run", *args, "--out", str(tmp_path / name), "--no-instructions")
    assert result.returncode == 0, result.stderr
    return json.loads((tmp_path / name / "report.json").read_text())


# tpuv4: ICI alpha = 1 us per hop, beta = 50 GB/s; DCN B = 25 GB/s per NIC direction, L = 10 us;
# 4 chips per host as 2x2x1, packets of 4096 B.
ALPHA, BETA, DCN_B, LATENCY, PACKET = 1e-6, 50e9, 25e9, 10e-6, 4096


def ici_phases_s(n):
    """Reduce-scatter x (n) and y (n/2) on a 2x2x1 host, then all-gather: on a ring of 2 the two
    directions take the two links to the neighbour, so each phase is alpha + n_d / (4 beta)."""
    n_y = math.ceil(n / 2)
    return 2 * (ALPHA + n / 4 / BETA + ALPHA + n_y / 4 / BETA)


def dcn_phase_s(n, chips_per_host, hosts):
    """The ring over hosts, one lane per chip: b = n_s / W per step, n_s = n / c."""
    share = math.ceil(math.ceil(n / 2) / 2)
    b = share / hosts / DCN_B
    step = LATENCY + min(share / hosts, PACKET) / DCN_B + b
    return (chips_per_host - 1) * b + step + (2 * (hosts - 1) - 1) * max(step, chips_per_host * b)


def test_mirrored_is_tpu_strategy_on_one_hosts_slice(tpusim_bin, mlp_path, tmp_path):
    mirrored = report_of(tpusim_bin, tmp_path, "mirrored", mlp_path, "--strategy", "mirrored")
    tpu = report_of(tpusim_bin, tmp_path, "tpu", mlp_path, "--strategy", "tpu", "--topology", "2x2x1")
    assert mirrored["total_cycles"] == tpu["total_cycles"]
    assert mirrored["interconnect"]["shape"] == "2x2x1" and "dcn" not in mirrored["interconnect"]
    assert mirrored["strategy"] == {"name": "mirrored", "class": "MirroredStrategy", "num_replicas_in_sync": 4,
                                    "per_replica_batch": 32, "global_batch": 128, "workers": 1,
                                    "chips_per_host": 4}
    assert tpu["strategy"]["class"] == "TPUStrategy" and tpu["strategy"]["num_replicas_in_sync"] == 4
    assert tpu["strategy"]["global_batch"] == tpu["interconnect"]["global_batch"] == 128


def test_a_tensor_parallel_group_is_one_replica_in_sync(tpusim_bin, mlp_path, tmp_path):
    # As in TF: the chips of a model-parallel group hold one replica and share its examples.
    tpu = report_of(tpusim_bin, tmp_path, "tpu_tp", mlp_path, "--strategy", "tpu", "--topology", "2x2x1",
                    "--tp", "2")
    assert tpu["strategy"]["num_replicas_in_sync"] == 2
    assert tpu["strategy"]["global_batch"] == tpu["interconnect"]["global_batch"] == 64
    assert tpu["parallelism"] == {"dp": 2, "tp": 2, "pp": 1}


def test_multi_worker_mirrored_adds_the_dcn_share_of_the_all_reduce(tpusim_bin, mlp_path, tmp_path):
    # One bucket of every gradient, launched at the end of the backward pass: nothing overlaps it.
    bucket = ("--all-reduce-bucket-mib", "100")
    mirrored = report_of(tpusim_bin, tmp_path, "mirrored", mlp_path, "--strategy", "mirrored", *bucket)
    workers = report_of(tpusim_bin, tmp_path, "mwm", mlp_path, "--strategy", "multi_worker_mirrored",
                        "--workers", "2", *bucket)
    strategy = workers["strategy"]
    assert (strategy["num_replicas_in_sync"], strategy["workers"], strategy["chips_per_host"]) == (8, 2, 4)
    assert strategy["global_batch"] == 32 * 8
    ici = workers["interconnect"]
    assert (ici["hosts"], ici["chips"], ici["replicas"]) == (2, 8, 8)
    [collective] = ici["collectives"]
    [alone] = mirrored["interconnect"]["collectives"]
    assert collective["algorithm"] == "hierarchical" and alone["algorithm"] == "torus"
    n = collective["bytes"]
    assert n == alone["bytes"]
    assert math.isclose(alone["time_s"], ici_phases_s(n), rel_tol=0.01)
    assert math.isclose(collective["time_s"], ici_phases_s(n) + dcn_phase_s(n, 4, 2), rel_tol=0.01)
    # Each host's NIC carries 2 (W-1) n / W each way: n with two hosts.
    dcn = ici["dcn"]
    assert (dcn["hosts"], dcn["chips_per_host"], dcn["host_bandwidth_gbps"], dcn["latency_us"]) == (2, 4, 25, 10)
    share = math.ceil(math.ceil(n / 2) / 2)
    assert [link["bytes"] for link in dcn["links"]] == [4 * share] * 4
    # The step is slower by at least the DCN share (plus the DCN ring's extra adds on the VPU).
    dcn_cycles = dcn_phase_s(n, 4, 2) * 1.05e9
    slower = workers["total_cycles"] - mirrored["total_cycles"]
    assert 0.99 * dcn_cycles <= slower <= 1.1 * dcn_cycles, (slower, dcn_cycles)


def test_the_same_multi_worker_run_gives_the_same_report(tpusim_bin, mlp_path, tmp_path):
    args = (mlp_path, "--strategy", "multi_worker_mirrored", "--workers", "3")
    first = report_of(tpusim_bin, tmp_path, "a", *args)
    second = report_of(tpusim_bin, tmp_path, "b", *args)
    assert first["interconnect"] == second["interconnect"] and first["total_cycles"] == second["total_cycles"]
    assert first["strategy"]["num_replicas_in_sync"] == 12


@pytest.mark.parametrize("args,message", [
    (["--strategy", "central_storage"],
     "unknown strategy 'central_storage' (mirrored, multi_worker_mirrored, tpu, ps; docs/strategies.md)"),
    (["--strategy", "mirrored", "--workers", "2"], "--workers applies to --strategy multi_worker_mirrored or ps"),
    (["--workers", "2"], "--workers applies to --strategy multi_worker_mirrored or ps"),
    (["--strategy", "multi_worker_mirrored", "--workers", "0"], "--workers must be > 0"),
    (["--strategy", "multi_worker_mirrored"], "--strategy multi_worker_mirrored needs --workers N (hosts)"),
    (["--strategy", "tpu"], "--strategy tpu needs --topology SHAPE (the pod slice)"),
    (["--strategy", "mirrored", "--topology", "4x4x4"], "--topology gives TPUStrategy's slice (--strategy tpu)"),
    (["--strategy", "multi_worker_mirrored", "--workers", "2", "--set", "dcn.host_bandwidth_gbps=0"],
     "parameter dcn.host_bandwidth_gbps must be > 0"),
    (["--strategy", "mirrored", "--set", "host.chips_per_host=0"], "parameter host.chips_per_host must be > 0"),
])
def test_bad_strategy_options_are_one_line_errors(tpusim_bin, mlp_path, tmp_path, args, message):
    result = run(tpusim_bin, "run", mlp_path, "--out", str(tmp_path), *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
