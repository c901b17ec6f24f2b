"""report.json's `mfu`: the model FLOPs of a GPT decoder match PaLM's closed form (Chowdhery
et al. 2022, Appendix B: 6 N + 12 L d T per token in training), and they count the model once
whatever the plan: not the recomputation of --remat, and the replicas of data parallelism but
not the split of tensor or pipeline parallelism."""
import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAYERS, HIDDEN, HEADS, SEQ, VOCAB = 2, 256, 4, 128, 1000


@pytest.fixture(scope="module")
def gpt(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt") / "gpt_small.onnx"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_gpt_trace.py"), str(path), "--layers", str(LAYERS),
                    "--hidden", str(HIDDEN), "--heads", str(HEADS), "--seq", str(SEQ), "--vocab", str(VOCAB)],
                   check=True, capture_output=True)
    return path


def run(tpusim_bin, model, tmp_path, *args):
    out = tmp_path / "run"
    result = subprocess.run([tpusim_bin, "run", str(model), "--no-instructions", "--no-progress", "--out", str(out),
                             *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads((out / "report.json").read_text()), result.stdout


def gpt_flops(batch, training=True):
    """Matmul parameters N (12 d^2 per layer and the tied LM head's d V); attention's two
    T x T products add 4 L d T per token forward."""
    n = 12 * LAYERS * HIDDEN**2 + HIDDEN * VOCAB
    tokens = batch * SEQ
    factor = 3 if training else 1  # the backward's two products per forward one
    return factor * (2 * n * tokens + 4 * LAYERS * HIDDEN * SEQ * tokens)


def test_a_gpt_decoder_has_palms_model_flops(tpusim_bin, gpt, tmp_path):
    report, stdout = run(tpusim_bin, gpt, tmp_path, "--batch", "2")
    mfu = report["mfu"]
    assert mfu["model_flops"] == gpt_flops(2)
    assert mfu["chips"] == 1
    assert mfu["peak_flops_per_s_per_chip"] == report["peaks"]["mxu_flops_per_s"]
    assert mfu["step_time_s"] == report["step_time_s"]
    assert mfu["mfu"] == pytest.approx(mfu["model_flops"] / (report["step_time_s"] * report["peaks"]["mxu_flops_per_s"]))
    assert 0 < mfu["mfu"] < 1
    assert f"MFU          {100 * mfu['mfu']:.1f}%" in stdout


def test_inference_counts_the_forward_only(tpusim_bin, gpt, tmp_path):
    report, _ = run(tpusim_bin, gpt, tmp_path, "--batch", "2", "--mode", "inference")
    assert report["mfu"]["model_flops"] == gpt_flops(2, training=False)


def test_recomputation_gets_no_credit(tpusim_bin, gpt, tmp_path):
    plain, _ = run(tpusim_bin, gpt, tmp_path, "--batch", "2")
    remat, _ = run(tpusim_bin, gpt, tmp_path, "--batch", "2", "--remat", "all")
    assert remat["mfu"]["model_flops"] == plain["mfu"]["model_flops"]
    # The step recomputes the forward, so the same model FLOPs take longer.
    assert remat["mfu"]["mfu"] < plain["mfu"]["mfu"]


def test_data_parallel_replicas_add_their_flops_and_tensor_parallel_splits_do_not(tpusim_bin, gpt, tmp_path):
    one, _ = run(tpusim_bin, gpt, tmp_path, "--batch", "2")
    dp, _ = run(tpusim_bin, gpt, tmp_path, "--batch", "2", "--topology", "2x2x1")
    assert dp["mfu"]["model_flops"] == 4 * one["mfu"]["model_flops"]
    assert dp["mfu"]["chips"] == 4
    tp, _ = run(tpusim_bin, gpt, tmp_path, "--batch", "2", "--topology", "2x2x1", "--tp", "4")
    assert tp["mfu"]["model_flops"] == one["mfu"]["model_flops"]
    assert tp["mfu"]["chips"] == 4


def test_a_pipeline_counts_every_stage_and_micro_batch_over_its_step(tpusim_bin, tmp_path):
    mlp = ROOT / "traces" / "mlp.onnx"
    one, _ = run(tpusim_bin, mlp, tmp_path, "--batch", "32")
    pp, _ = run(tpusim_bin, mlp, tmp_path, "--batch", "32", "--topology", "3x1x1", "--pp", "3", "--micro-batches", "4")
    assert pp["mfu"]["model_flops"] == one["mfu"]["model_flops"]  # 4 micro-batches of 8 are the batch of 32
    assert pp["mfu"]["chips"] == 3
    assert pp["mfu"]["step_time_s"] == pp["pipeline"]["step_time_s"]


def test_int8_is_measured_against_the_int8_peak(tpusim_bin, tmp_path):
    report, _ = run(tpusim_bin, ROOT / "traces" / "mlp.onnx", tmp_path, "--hw", "tpuv5e", "--mode", "inference",
                    "--precision", "int8")
    assert report["mfu"]["peak_flops_per_s_per_chip"] == 2 * report["peaks"]["mxu_flops_per_s"]
