"""`tpusim run MODEL --topology SHAPE --pp P --micro-batches M --pipeline-schedule gpipe|1f1b`:
pipeline parallelism on a model (docs/strategies.md, "Pipeline parallelism")."""
import json
import subprocess

import pytest


def run(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=600)


def report_of(tpusim_bin, tmp_path, name, *args):
    result = run(tpusim_bin, "run", *args, "--no-instructions", "--out", str(tmp_path / name))
    assert result.returncode == 0, result.stderr
    return json.loads((tmp_path / name / "report.json").read_text()), result.stdout


def test_pp_1_is_todays_run(tpusim_bin, mlp_path, tmp_path):
    plain, _ = report_of(tpusim_bin, tmp_path, "plain", mlp_path, "--topology", "2x2x1")
    pp1, _ = report_of(tpusim_bin, tmp_path, "pp1", mlp_path, "--topology", "2x2x1", "--pp", "1")
    for report in (plain, pp1):
        report.pop("wall_time_s", None)
    assert json.dumps(plain) == json.dumps(pp1)
    assert "pipeline" not in pp1 and pp1["parallelism"] == {"dp": 4, "tp": 1, "pp": 1}


def test_mlp_in_three_stages_under_both_schedules(tpusim_bin, mlp_path, tmp_path):
    args = (mlp_path, "--topology", "3x1x1", "--pp", "3", "--micro-batches", "4")
    gpipe, summary = report_of(tpusim_bin, tmp_path, "gpipe", *args, "--pipeline-schedule", "gpipe")
    ofob, _ = report_of(tpusim_bin, tmp_path, "1f1b", *args, "--pipeline-schedule", "1f1b")
    assert gpipe["parallelism"] == {"dp": 1, "tp": 1, "pp": 3}
    p = gpipe["pipeline"]
    assert (p["schedule"], p["stages"], p["micro_batches"], p["micro_batch_size"]) == ("gpipe", 3, 4, 8)
    assert [s["layers"] for s in p["per_stage"]] == [["/0"], ["/2"], ["/4"]]
    assert gpipe["batch"] == 8  # the rest of the report: stage 0, one micro-batch
    assert "pipeline     gpipe, 3 stages of 1 layers" in summary
    # fc1's output [8, 512] f32 goes up, its gradient down: 16 KiB each way.
    assert p["boundaries"][0]["activation_bytes"] == p["boundaries"][0]["gradient_bytes"] == 8 * 512 * 4
    assert p["step_cycles"] > p["schedule_cycles"] > max(s["forward_cycles"] + s["backward_cycles"]
                                                         for s in p["per_stage"])
    for s in p["per_stage"]:
        assert s["busy_cycles"] == pytest.approx(4 * (s["forward_cycles"] + s["backward_cycles"]), abs=4)
        assert s["peak_micro_batches_in_flight"] == 4
    q = ofob["pipeline"]
    assert [s["peak_micro_batches_in_flight"] for s in q["per_stage"]] == [3, 2, 1]
    assert q["per_stage"][0]["hbm_peak_bytes"] < p["per_stage"][0]["hbm_peak_bytes"]


def test_stage_blocks_run_data_parallel_and_a_cross_cube_boundary_costs_more(tpusim_bin, mlp_path, tmp_path):
    # 4x4x3: each stage a 4x4x1 plane of one cube; 4x4x12: each stage a whole 4x4x4 cube, so
    # every boundary crosses the optical circuit switches.
    inside, _ = report_of(tpusim_bin, tmp_path, "in", mlp_path, "--topology", "4x4x3", "--pp", "3",
                          "--micro-batches", "2")
    across, _ = report_of(tpusim_bin, tmp_path, "across", mlp_path, "--topology", "4x4x12", "--pp", "3",
                          "--micro-batches", "2")
    assert inside["parallelism"] == {"dp": 16, "tp": 1, "pp": 3}
    assert inside["pipeline"]["stage_block"] == "4x4x1" and across["pipeline"]["stage_block"] == "4x4x4"
    assert inside["interconnect"]["replicas"] == 16  # stage 0's gradients all-reduced over its block
    near = inside["pipeline"]["boundaries"][0]["forward_transfer_cycles"]
    far = across["pipeline"]["boundaries"][0]["forward_transfer_cycles"]
    assert far > near > 0


BAD = [
    (["--topology", "4x4x4", "--pp", "4"], 2, "--pp 4 does not divide the 3 layers of mlp.onnx"),
    (["--topology", "4x4x4", "--dp", "2", "--pp", "3"], 2, "--pp 3 does not divide the 64 chips of --topology 4x4x4"),
    (["--topology", "4x4x3", "--dp", "2", "--pp", "3"], 2,
     "--dp 2 x --tp 1 x --pp 3 is 6 chips, but --topology 4x4x3 has 48"),
    (["--topology", "3x1x1", "--pp", "3", "--batch", "30", "--micro-batches", "4"], 2,
     "batch 30 does not divide into 4 micro-batches (--micro-batches)"),
    (["--topology", "3x1x1", "--pp", "3", "--pipeline-schedule", "interleaved"], 2,
     "unknown pipeline schedule 'interleaved' (choose gpipe or 1f1b)"),
    (["--topology", "3x1x1", "--pp", "3", "--micro-batches", "8", "--batch", "256", "--pipeline-schedule",
      "gpipe", "--set", "hbm.capacity_gib=0.0037"], 5,
     "pipeline stage 0 needs 4608000 bytes of HBM (3446784 for one micro-batch + 7 more in flight x 165888 activation "
     "bytes) but tpuv4 has 3972844"),
    (["--topology", "3x1x1", "--pp", "3", "--mode", "inference"], 2, "--pp 3 pipelines a training step"),
    (["--topology", "3x1x1", "--pp", "3", "--precision", "mixed_bfloat16"], 4,
     "--pp 3 with --precision mixed_bfloat16: not supported yet"),
]


@pytest.mark.parametrize("args,code,message", BAD)
def test_bad_pipeline_inputs_give_one_line_errors(tpusim_bin, mlp_path, tmp_path, args, code, message):
    result = run(tpusim_bin, "run", mlp_path, *args, "--out", str(tmp_path))
    assert result.returncode == code, result.stderr
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_compile_does_not_write_a_pipeline(tpusim_bin, mlp_path, tmp_path):
    result = run(tpusim_bin, "compile", mlp_path, "--topology", "3x1x1", "--pp", "3", "-o", str(tmp_path / "p.tpuprog"))
    assert result.returncode == 4, result.stderr
    assert "--pp 3: a pipeline is one Program per stage; tpusim run simulates it, tpusim compile does not write it" \
        in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
