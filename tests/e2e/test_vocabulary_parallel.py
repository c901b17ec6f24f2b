"""Tensor parallelism splits a language model's vocabulary (Megatron-LM's parallel embedding
and cross-entropy): the token embedding by rows, the LM head by columns into a split loss,
each all-reduced; the position embedding and a classifier head stay whole."""
import json
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HIDDEN, SEQ = 64, 16


def gpt(tmp_path, vocab, *flags):
    path = tmp_path / f"gpt_{vocab}{''.join(flags)}.onnx"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_gpt_trace.py"), str(path), "--layers", "2", "--hidden",
                    str(HIDDEN), "--heads", "4", "--seq", str(SEQ), "--vocab", str(vocab), *flags], check=True,
                   capture_output=True)
    return path


def ir_after_split(tpusim_bin, model, tmp_path, tp=4, *flags):
    result = subprocess.run([tpusim_bin, "compile", str(model), "--batch", "2", "--topology", f"{tp}x1x1", "--tp",
                             str(tp), "-o", str(tmp_path / "m.tpuprog"), "--print-ir-after", "tensor_parallel", *flags],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stderr


def shape_of(ir, name):
    return re.search(rf" {re.escape(name)}: f32\[([0-9,]+)\]", ir).group(1)


def all_reduced(ir):
    return set(re.findall(r"# (\S+)\.tp_all_reduce", ir))


def test_the_token_embedding_and_an_untied_head_split_by_vocabulary(tpusim_bin, tmp_path):
    ir = ir_after_split(tpusim_bin, gpt(tmp_path, 512, "--untied-head"), tmp_path)
    assert shape_of(ir, "wte.weight") == f"128,{HIDDEN}"
    assert shape_of(ir, "lm_head.weight") == f"{HIDDEN},128"
    assert shape_of(ir, "wpe.weight") == f"{SEQ},{HIDDEN}"  # looked up by computed positions: whole
    reduced = all_reduced(ir)
    assert "h0/wte:out" in reduced  # each chip's lookups of its rows, summed
    assert "loss:loss" in reduced  # each chip's classes' share of the loss
    assert "h1/lm_head.grad_a:out" in reduced  # the head's input gradient, a partial sum
    assert not any(name.startswith("h0/wpe") for name in reduced)


@pytest.mark.parametrize("optimizer,states", [("momentum", ["velocity"]), ("adam", ["m", "v"]), ("adagrad", ["h"])])
@pytest.mark.parametrize("precision", ["float32", "mixed_bfloat16", "mixed_float16"])
def test_the_embeddings_optimizer_states_split_with_it(tpusim_bin, tmp_path, optimizer, states, precision):
    # The table's gradient (a GatherGrad) is first read by the states' updates (and under
    # mixed_float16 by the finite check's sum), which are decided with the table's own update.
    ir = ir_after_split(tpusim_bin, gpt(tmp_path, 512, "--untied-head"), tmp_path, 4, "--optimizer", optimizer,
                        "--precision", precision)
    assert shape_of(ir, "wte.weight") == f"128,{HIDDEN}"
    for state in states:
        assert shape_of(ir, f"wte.weight.{state}") == f"128,{HIDDEN}"
    assert "h0/wte:out" in all_reduced(ir)
    if precision == "mixed_float16":  # the loss-scale check's sum of each chip's rows
        assert "wte.weight.grad_scaled.sum:out" in all_reduced(ir)


def test_a_tied_head_splits_with_the_embedding_it_reads(tpusim_bin, tmp_path):
    ir = ir_after_split(tpusim_bin, gpt(tmp_path, 512), tmp_path)
    assert shape_of(ir, "wte.weight") == f"128,{HIDDEN}"
    assert "loss:loss" in all_reduced(ir)


def test_a_vocabulary_that_does_not_divide_stays_whole(tpusim_bin, tmp_path):
    ir = ir_after_split(tpusim_bin, gpt(tmp_path, 513, "--untied-head"), tmp_path)
    assert shape_of(ir, "wte.weight") == f"513,{HIDDEN}"
    assert shape_of(ir, "lm_head.weight") == f"{HIDDEN},513"
    assert "loss:loss" not in all_reduced(ir)


def test_a_classifier_head_stays_whole(tpusim_bin, tmp_path):
    ir = ir_after_split(tpusim_bin, ROOT / "traces" / "mlp.onnx", tmp_path, tp=2)
    assert shape_of(ir, "4.weight") == "10,512"  # 10 classes from 512 features
    assert "loss:loss" not in all_reduced(ir)


def test_the_split_step_holds_a_quarter_of_the_vocabulary_tables_per_chip(tpusim_bin, tmp_path):
    model = gpt(tmp_path, 4096, "--untied-head")

    def weight_bytes(*args):
        out = tmp_path / f"run{len(args)}"
        result = subprocess.run([tpusim_bin, "run", str(model), "--batch", "2", *args, "--no-instructions",
                                 "--no-progress", "--out", str(out)], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        return json.loads((out / "report.json").read_text())["memory"]["bytes_by_role"]["weight"]

    whole, split = weight_bytes(), weight_bytes("--topology", "4x1x1", "--tp", "4")
    vocabulary = 2 * 4096 * HIDDEN * 4  # wte and lm_head, f32
    assert whole - split >= vocabulary * 3 // 4
