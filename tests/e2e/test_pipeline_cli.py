"""`tpusim run MODEL --topology SHAPE --pp P --micro-batches M --pipeline-schedule gpipe|1f1b`:
pipeline parallelism on a model (docs/strategies.md, "Pipeline parallelism")."""
import json
import pathlib
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


def test_mixed_bfloat16_keeps_the_cut_and_halves_the_boundary_bytes(tpusim_bin, mlp_path, tmp_path):
    args = (mlp_path, "--topology", "3x1x1", "--pp", "3", "--micro-batches", "4")
    f32, _ = report_of(tpusim_bin, tmp_path, "f32", *args)
    bf16, summary = report_of(tpusim_bin, tmp_path, "bf16", *args, "--precision", "mixed_bfloat16")
    assert (f32["precision"], bf16["precision"]) == ("float32", "mixed_bfloat16")
    p, q = f32["pipeline"], bf16["pipeline"]
    assert [s["layers"] for s in q["per_stage"]] == [s["layers"] for s in p["per_stage"]] == [["/0"], ["/2"], ["/4"]]
    assert "pipeline     1f1b, 3 stages of 1 layers" in summary
    # fc1's output [8, 512] and its gradient in bf16: 8 KiB each way, half of float32's, and
    # cheaper to send.
    for a, b in zip(p["boundaries"], q["boundaries"]):
        assert b["activation_bytes"] == b["gradient_bytes"] == 8 * 512 * 2
        assert 2 * b["activation_bytes"] == a["activation_bytes"] and 2 * b["gradient_bytes"] == a["gradient_bytes"]
        assert b["forward_transfer_cycles"] < a["forward_transfer_cycles"]
    # What a micro-batch keeps for its backward is bf16 (stage 2's logits, which the loss reads
    # cast back to f32, stay f32); stage 0 holds the 784x512 layer's f32 weights and their bf16
    # copy, and no other layer's: its HBM peak moves by less than that copy (the copy adds to it,
    # the bf16 activations take from it).
    for a, b in zip(p["per_stage"], q["per_stage"]):
        assert b["activation_bytes"] < a["activation_bytes"]
    grown = q["per_stage"][0]["hbm_peak_bytes"] - p["per_stage"][0]["hbm_peak_bytes"]
    assert grown != 0 and abs(grown) < (784 * 512 + 512) * 2


def test_mixed_float16_all_reduces_the_stages_gradient_sums(tpusim_bin, mlp_path, tmp_path):
    args = (mlp_path, "--topology", "3x1x1", "--pp", "3", "--micro-batches", "4")
    bf16, _ = report_of(tpusim_bin, tmp_path, "bf16", *args, "--precision", "mixed_bfloat16")
    f16, _ = report_of(tpusim_bin, tmp_path, "f16", *args, "--precision", "mixed_float16")
    p, q = bf16["pipeline"], f16["pipeline"]
    assert f16["precision"] == "mixed_float16"
    assert [s["layers"] for s in q["per_stage"]] == [s["layers"] for s in p["per_stage"]]
    assert [(b["activation_bytes"], b["gradient_bytes"]) for b in q["boundaries"]] == \
        [(b["activation_bytes"], b["gradient_bytes"]) for b in p["boundaries"]]
    # Ring all-reduce of one f32 over the 3 stages: 4 steps of alpha = 1 us (and bytes at 50 GB/s).
    assert q["loss_scale_all_reduce_cycles"] == pytest.approx(4 * 1e6 / 952, abs=2)
    assert p["loss_scale_all_reduce_cycles"] == 0
    for s, t in zip(p["per_stage"], q["per_stage"]):
        assert s["loss_scale_check_cycles"] == 0 and 0 < t["loss_scale_check_cycles"] < t["update_cycles"]
    assert q["step_cycles"] > p["step_cycles"]  # the check and the gating are extra work


@pytest.mark.parametrize("tp", [1, 2])
def test_bert_in_two_stages_under_mixed_bfloat16(tpusim_bin, tmp_path, tp):
    bert = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / "bert_base.onnx")
    args = (bert, "--batch", "8", "--topology", "4x4x4", "--tp", str(tp), "--pp", "2", "--micro-batches", "4")
    f32, _ = report_of(tpusim_bin, tmp_path, "f32", *args)
    bf16, _ = report_of(tpusim_bin, tmp_path, "bf16", *args, "--precision", "mixed_bfloat16")
    p, q = f32["pipeline"], bf16["pipeline"]
    assert bf16["precision"] == "mixed_bfloat16"
    assert [s["layers"] for s in q["per_stage"]] == [s["layers"] for s in p["per_stage"]]
    assert [len(s["layers"]) for s in q["per_stage"]] == [51, 51]
    # The hidden state [2, 128, 768] and the attention mask [2, 1, 1, 128] cross, in bf16: half the bytes.
    b, a = q["boundaries"][0], p["boundaries"][0]
    assert 2 * b["activation_bytes"] == a["activation_bytes"] == 2 * 128 * 768 * 4 + 2 * 128 * 4
    assert 2 * b["gradient_bytes"] == a["gradient_bytes"] == 2 * 128 * 768 * 4
    for s, t in zip(p["per_stage"], q["per_stage"]):
        assert 2 * t["activation_bytes"] == pytest.approx(s["activation_bytes"], rel=0.02)
    if tp == 2:  # the tensor-parallel all-reduces of activations are bf16 too
        assert q["step_cycles"] < 0.75 * p["step_cycles"]


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
     "pipeline stage 0 needs 4612096 bytes of HBM (3450880 for one micro-batch + 7 more in flight x 165888 activation "
     "bytes) but tpuv4 has 3972844"),
    (["--topology", "3x1x1", "--pp", "3", "--mode", "inference"], 2, "--pp 3 pipelines a training step"),
    (["--topology", "3x1x1", "--pp", "3", "--precision", "int8"], 4,
     "--precision int8 is post-training quantization for --mode inference"),
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
