"""`tpusim autodistribute MODEL --topology SHAPE`: the ranked table, autodistribute.json and .csv,
progress on stderr, determinism, and the bad inputs as one-line errors (docs/strategies.md)."""
import json
import pathlib
import subprocess

HLO = pathlib.Path(__file__).resolve().parents[1] / "hlo"


def autodistribute(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, "autodistribute", *args], capture_output=True, text=True, timeout=300)


def search(tpusim_bin, mlp_path, out, *args):
    result = autodistribute(tpusim_bin, mlp_path, "--topology", "2x2x1", "--precisions", "float32,mixed_bfloat16",
                            "--out", str(out), *args)
    assert result.returncode == 0, result.stderr
    return result, json.loads((out / "autodistribute.json").read_text())


def test_the_table_ranks_every_plan_and_names_why_each_lost(tpusim_bin, mlp_path, tmp_path):
    result, table = search(tpusim_bin, mlp_path, tmp_path / "a")
    # tp 1, 2, 4 (dp 4, 2, 1) x remat none, all x 2 precisions.
    assert table["chips"] == 4 and table["global_batch"] == 128 and len(table["plans"]) == 12
    assert table["dimensions"] == ["dp", "tp", "remat", "precision"]
    assert table["memory_limit_bytes"] == table["hbm_capacity_bytes"] == 32 * 2**30
    assert [p["rank"] for p in table["plans"]] == list(range(1, 13))
    assert table["best"] == table["plans"][0]["label"]
    best = table["plans"][0]
    for plan in table["plans"][1:]:
        assert plan["step_cycles"] >= best["step_cycles"]
        assert plan["reason"].startswith("slower: ")
        assert 0 < plan["mxu_utilization"] < 1
    lines = result.stdout.splitlines()
    assert lines[0] == "mlp.onnx on 2x2x1 (4 chips, tpuv4), global batch 128, limit 32 GiB of HBM per chip"
    assert lines[1].split()[:3] == ["rank", "plan", "step"]
    assert lines[2].startswith("1 ") and lines[2].endswith("best") and best["label"] in lines[2]
    assert lines[-1].startswith("written ")
    progress = result.stderr.splitlines()
    assert len(progress) == 12 and progress[0].startswith("[1/12] dp4 tp1 remat=none float32: ")
    csv = (tmp_path / "a" / "autodistribute.csv").read_text().splitlines()
    assert len(csv) == 13 and csv[1].startswith("1," + best["label"] + ",")


def test_two_searches_write_identical_json(tpusim_bin, mlp_path, tmp_path):
    search(tpusim_bin, mlp_path, tmp_path / "a")
    search(tpusim_bin, mlp_path, tmp_path / "b")
    for name in ("autodistribute.json", "autodistribute.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_a_memory_limit_rejects_plans_before_simulating(tpusim_bin, mlp_path, tmp_path):
    # The MLP's peak per chip is a few MiB, less at higher tp: 3 MiB lets only some plans in.
    _, table = search(tpusim_bin, mlp_path, tmp_path / "m", "--memory-limit-gib", str(3 / 1024))
    statuses = {p["status"] for p in table["plans"]}
    assert "does_not_fit" in statuses and "best" in statuses
    for plan in table["plans"]:
        if plan["status"] == "does_not_fit":
            assert plan["step_cycles"] is None and plan["hbm_peak_bytes"] > 3 * 2**20
            assert plan["reason"].endswith(" > 3 MiB")
        else:
            assert plan["hbm_peak_bytes"] <= 3 * 2**20


def test_nothing_fitting_prints_the_table_then_one_error(tpusim_bin, mlp_path, tmp_path):
    result = autodistribute(tpusim_bin, mlp_path, "--topology", "2x1x1", "--precisions", "float32",
                            "--memory-limit-gib", "0.0001", "--out", str(tmp_path))
    assert result.returncode == 5
    assert result.stderr.splitlines()[-1].startswith("tpusim: error: no plan of mlp.onnx runs on 2x1x1 within the "
                                                     "memory limit")
    table = json.loads((tmp_path / "autodistribute.json").read_text())
    assert table["best"] is None and {p["status"] for p in table["plans"]} == {"does_not_fit"}


def one_line_error(tpusim_bin, *args, code=2):
    result = autodistribute(tpusim_bin, *args)
    assert result.returncode == code, result.stderr
    # The error is the last line; any before it are the plans' progress lines.
    lines = result.stderr.splitlines()
    assert lines[-1].startswith("tpusim: error: "), result.stderr
    assert all(line.startswith("[") for line in lines[:-1]), result.stderr
    return lines[-1][len("tpusim: error: "):]


def test_bad_inputs_are_one_line_errors(tpusim_bin, mlp_path):
    assert one_line_error(tpusim_bin, mlp_path, "--topology", "2x1x1", "--memory-limit-gib", "0") == \
        "--memory-limit-gib must be > 0"
    assert one_line_error(tpusim_bin, mlp_path, "--topology", "2x1x1", "--memory-limit-gib", "-2") == \
        "--memory-limit-gib must be > 0"
    assert "fp8" in one_line_error(tpusim_bin, mlp_path, "--topology", "2x1x1", "--precisions", "float32,fp8")
    assert one_line_error(tpusim_bin, mlp_path) == "autodistribute needs --topology, the slice to distribute over"
    assert one_line_error(tpusim_bin, mlp_path, "--topology", "2x1x1", "--batch", "0") == "--batch must be > 0"
    assert one_line_error(tpusim_bin, str(HLO / "mlp_train_step.hlo"), "--topology", "2x1x1", code=4).startswith(
        "autodistribute compiles an ONNX model")


def test_a_topology_the_model_cannot_use_is_one_error(tpusim_bin, mlp_path):
    # 3 chips: dp 3 cannot split a global batch of 2, and no matmul of the MLP splits 3 ways.
    message = one_line_error(tpusim_bin, mlp_path, "--topology", "3x1x1", "--batch", "2", "--precisions", "float32")
    assert message.startswith("no plan of mlp.onnx compiles on 3x1x1 (dp3 tp1 remat=none float32: compile: the "
                              "global batch 2 does not split over dp 3; dp1 tp3 remat=none float32: compile: ")
    assert "does not divide by 3" in message
