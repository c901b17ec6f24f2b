"""ParameterServerStrategy end to end (docs/strategies.md): the two commands of
issue 7 on traces/dlrm.onnx, their report.json "ps" sections compared, and bad
strategy options refused with one-line errors."""
import json
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DLRM = str(ROOT / "traces" / "dlrm.onnx")


def run(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=300)


def ps_section(tpusim_bin, tmp_path, sharding, *extra):
    out = tmp_path / sharding
    result = run(tpusim_bin, "run", DLRM, "--strategy", "ps", "--sharding", sharding, "--no-instructions",
                 "--out", str(out), *extra)
    assert result.returncode == 0, result.stderr
    assert "ps           " in result.stdout
    return json.loads((out / "report.json").read_text())["ps"], result.stdout


def test_dynamic_beats_round_robin_on_dlrm(tpusim_bin, tmp_path):
    dynamic, summary = ps_section(tpusim_bin, tmp_path, "dynamic")
    round_robin, _ = ps_section(tpusim_bin, tmp_path, "round-robin")
    assert dynamic["policy"] == "dynamic" and round_robin["policy"] == "round_robin"
    assert "dynamic, sync: 32 workers, 16 tasks, 10 steps" in summary
    for ps in (dynamic, round_robin):
        assert ps["tables"] == 26 and ps["table_rows"] == 840543
        assert ps["aggregation"] == "sync" and ps["steps"] == 10 and len(ps["step_s"]) == 10
        assert len(ps["shards"]) == 16
        assert sum(s["rows_held"] for s in ps["shards"]) == 840543
        assert ps["mean_step_s"] > ps["step_compute_s"]
    # The same ids reach both; dynamic spreads the hot rows.
    assert dynamic["lookups"] == round_robin["lookups"] == 32 * 32 * 26 * 10
    assert dynamic["unique_rows"] == round_robin["unique_rows"]
    assert dynamic["reshards"] == 4 and dynamic["resharded_rows"] > 0 and round_robin["reshards"] == 0
    assert dynamic["imbalance"]["busy"] < round_robin["imbalance"]["busy"] - 0.03
    assert dynamic["mean_step_s"] < round_robin["mean_step_s"]


def test_the_same_run_gives_the_same_ps_section(tpusim_bin, tmp_path):
    first, _ = ps_section(tpusim_bin, tmp_path / "a", "dynamic", "--set", "ps.aggregation=async")
    second, _ = ps_section(tpusim_bin, tmp_path / "b", "dynamic", "--set", "ps.aggregation=async")
    assert first == second
    assert first["aggregation"] == "async" and first["staleness_steps"] == 2


def test_options_reach_the_model(tpusim_bin, tmp_path):
    ps, _ = ps_section(tpusim_bin, tmp_path, "size_balanced", "--ps-tasks", "4", "--workers", "2", "--steps", "3")
    assert (ps["tasks"], ps["workers"], ps["steps"]) == (4, 2, 3)
    assert ps["lookups"] == 2 * 32 * 26 * 3


@pytest.mark.parametrize("args,code,message", [
    (["--strategy", "central_storage"], 2, "unknown strategy 'central_storage' (mirrored, multi_worker_mirrored"),
    (["--strategy", "ps", "--sharding", "hash"], 2,
     "unknown sharding policy 'hash' (known: round_robin, size_balanced, dynamic)"),
    (["--strategy", "ps", "--ps-tasks", "0"], 2, "--ps-tasks must be > 0"),
    (["--strategy", "ps", "--workers", "0"], 2, "--workers must be > 0"),
    (["--sharding", "dynamic"], 2, "--sharding and --ps-tasks need --strategy ps"),
    (["--strategy", "ps", "--set", "ps.zipf_exponent=-1"], 2, "parameter ps.zipf_exponent must be >= 0"),
    (["--strategy", "ps", "--set", "dcn.host_bandwidth_gbps=0"], 2, "parameter dcn.host_bandwidth_gbps must be > 0"),
    (["--strategy", "ps", "--set", "ps.tasks=0"], 2, "parameter ps.tasks must be > 0"),
    (["--strategy", "ps", "--set", "ps.sharding=hash"], 2, "must be one of round_robin, size_balanced, dynamic"),
])
def test_bad_strategy_options_are_one_line_errors(tpusim_bin, tmp_path, args, code, message):
    result = run(tpusim_bin, "run", DLRM, "--out", str(tmp_path), *args)
    assert result.returncode == code, result.stderr
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_model_without_embedding_tables_is_refused(tpusim_bin, mlp_path, tmp_path):
    result = run(tpusim_bin, "run", mlp_path, "--strategy", "ps", "--out", str(tmp_path))
    assert result.returncode == 3
    assert "no embedding tables" in result.stderr
