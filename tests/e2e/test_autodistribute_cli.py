"""`tpusim autodistribute MODEL --topology SHAPE`: the ranked table, autodistribute.json and .csv,
progress on stderr, determinism, pipeline plans, and the bad inputs as one-line errors
(docs/strategies.md)."""
import json
import pathlib
import subprocess

HLO = pathlib.Path(__file__).resolve().parents[1] / "hlo"


def autodistribute(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, "autodistribute", *args], capture_output=True, text=True, timeout=300)


def search(tpusim_bin, mlp_path, out, *args):
    # Without pipelines: the MLP's 3 layers do not split over 2 or 4 stages.
    result = autodistribute(tpusim_bin, mlp_path, "--topology", "2x2x1", "--precisions", "float32,mixed_bfloat16",
                            "--pp-degrees", "1", "--out", str(out), *args)
    assert result.returncode == 0, result.stderr
    return result, json.loads((out / "autodistribute.json").read_text())


def test_the_table_ranks_every_plan_and_names_why_each_lost(tpusim_bin, mlp_path, tmp_path):
    result, table = search(tpusim_bin, mlp_path, tmp_path / "a")
    # tp 1, 2, 4 (dp 4, 2, 1) x remat none, all x 2 precisions.
    assert table["chips"] == 4 and table["global_batch"] == 128 and len(table["plans"]) == 12
    assert table["dimensions"] == ["dp", "tp", "pp", "micro_batches", "pipeline_schedule", "remat", "precision"]
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
    assert len(progress) == 12 and progress[0].startswith("[1/12] dp4 tp1 pp1 remat=none float32: ")
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
                            "--pp-degrees", "1", "--memory-limit-gib", "0.0001", "--out", str(tmp_path))
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
    # 3 chips without pipelines: dp 3 cannot split a global batch of 2, and no matmul of the MLP splits 3 ways.
    message = one_line_error(tpusim_bin, mlp_path, "--topology", "3x1x1", "--batch", "2", "--precisions", "float32",
                             "--pp-degrees", "1")
    assert message.startswith("no plan of mlp.onnx compiles on 3x1x1 (dp3 tp1 pp1 remat=none float32: unsupported: "
                              "the global batch 2 does not split over dp 3; dp1 tp3 pp1 remat=none float32: "
                              "unsupported: ")
    assert "does not divide by 3" in message


def test_pipeline_plans_are_ranked_by_their_step_and_say_their_bubble(tpusim_bin, mlp_path, tmp_path):
    # 3 chips: the MLP's 3 layers as 3 stages (dp 1, 96 examples in 2 or 4 micro-batches, both
    # schedules), beside dp 3 and the refused tp 3; remat none and all.
    result = autodistribute(tpusim_bin, mlp_path, "--topology", "3x1x1", "--precisions", "float32",
                            "--micro-batches", "2,4", "--pipeline-schedules", "1f1b,gpipe", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    table = json.loads((tmp_path / "autodistribute.json").read_text())
    plans = table["plans"]
    assert len(plans) == (1 + 2 * 2 + 1) * 2
    pipelines = [p for p in plans if p["plan"]["pp"] == 3]
    assert len(pipelines) == 8
    assert {(p["plan"]["micro_batches"], p["plan"]["pipeline_schedule"]) for p in pipelines} == \
        {(2, "1f1b"), (4, "1f1b"), (2, "gpipe"), (4, "gpipe")}
    for plan in pipelines:
        assert plan["rank"] > 0 and plan["batch_per_replica"] == 96 and plan["plan"]["dp"] == 1
        assert 0 < plan["pipeline_bubble"] < 1
        if plan["status"] == "slower":  # "slower: ... (47.8 us, bubble 62%)", and where it ties: ", after it ..."
            assert ", bubble %d%%)" % round(100 * plan["pipeline_bubble"]) in plan["reason"]
    data_parallel = [p for p in plans if p["plan"]["pp"] == 1 and p["plan"]["tp"] == 1]
    assert len(data_parallel) == 2
    for plan in data_parallel:
        assert plan["rank"] > 0 and plan["pipeline_bubble"] is None and "bubble" not in plan["reason"]
        assert plan["plan"]["micro_batches"] is None and plan["plan"]["pipeline_schedule"] is None
    for plan in plans[-2:]:
        assert plan["plan"]["tp"] == 3 and plan["status"] == "unsupported" and plan["rank"] == 0
        assert plan["reason"].startswith("unsupported: pass tensor_parallel: ") and plan["hbm_peak_bytes"] is None
    assert [p["rank"] for p in plans] == list(range(1, 11)) + [0, 0]
    line = next(line for line in result.stdout.splitlines() if " dp1 tp1 pp3 mb4 gpipe remat=none float32 " in line)
    assert "bubble" in line
    csv = (tmp_path / "autodistribute.csv").read_text().splitlines()
    assert csv[0] == ("rank,label,dp,tp,pp,micro_batches,pipeline_schedule,remat,precision,batch_per_replica,status,"
                      "step_cycles,step_time_s,mxu_utilization,pipeline_bubble,hbm_peak_bytes,reason")
    dp3 = next(row for row in csv if ",dp3 tp1 pp1 remat=none float32," in row)
    assert ",3,1,1,,,none,float32,32," in dp3
    assert any(progress.endswith("%") and "bubble" in progress for progress in result.stderr.splitlines())


def test_a_pipeline_degree_that_does_not_divide_the_layers_is_unsupported(tpusim_bin, mlp_path, tmp_path):
    result = autodistribute(tpusim_bin, mlp_path, "--topology", "2x1x1", "--precisions", "float32",
                            "--pp-degrees", "1,2", "--micro-batches", "2", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    plans = json.loads((tmp_path / "autodistribute.json").read_text())["plans"]
    refused = [p for p in plans if p["plan"]["pp"] == 2]
    assert len(refused) == 2 and all(p["status"] == "unsupported" and p["rank"] == 0 for p in refused)
    assert refused[0]["reason"] == ("unsupported: --pp 2 does not divide the 3 layers of mlp.onnx (a layer is a "
                                    "module with weights; docs/strategies.md)")


def test_a_space_larger_than_max_plans_is_one_error_before_any_plan_runs(tpusim_bin, mlp_path):
    result = autodistribute(tpusim_bin, mlp_path, "--topology", "2x2x1", "--max-plans", "71")
    assert result.returncode == 2
    # 2x2x1: tp x pp in (1,1) (1,2) (1,4) (2,1) (2,2) (4,1), 3 micro-batch counts each with a
    # pipeline: (3 + 3 x 3) x 2 remat x 3 precisions = 72 plans, and no progress line.
    assert result.stderr.splitlines() == [
        "tpusim: error: the search has 72 plans, more than --max-plans 71: narrow it with --pp-degrees, "
        "--micro-batches, --pipeline-schedules or --precisions, or raise --max-plans"]


def test_bad_pipeline_values_are_one_line_errors(tpusim_bin, mlp_path):
    def error(*args):
        return one_line_error(tpusim_bin, mlp_path, "--topology", "2x2x1", *args)
    assert error("--pp-degrees", "0") == "--pp-degrees must be >= 1, not 0"
    assert error("--pp-degrees", "1,-2") == "--pp-degrees must be >= 1, not -2"
    assert error("--pp-degrees", "two") == "--pp-degrees 'two': 'two' is not a whole number"
    assert error("--pp-degrees", "3") == "--pp-degrees 3 does not divide the 4 chips of 2x2x1"
    assert error("--pp-degrees", "2,2") == "--pp-degrees lists 2 twice"
    assert error("--micro-batches", "0") == "--micro-batches must be >= 1, not 0"
    assert error("--micro-batches", "4.5") == "--micro-batches '4.5': '4.5' is not a whole number"
    assert error("--micro-batches", "2,,4") == "--micro-batches '2,,4' has an empty value"
    assert error("--pipeline-schedules", "zero_bubble") == \
        "unknown pipeline schedule 'zero_bubble' (choose gpipe or 1f1b)"
    assert error("--max-plans", "0") == "--max-plans must be >= 1"
