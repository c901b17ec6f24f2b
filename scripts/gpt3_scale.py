#!/usr/bin/python3
"""Simulates GPT-3 175B-style training on tpuv4 slices of 64, 512 and 4096 chips with data x
tensor x pipeline parallelism and prints the table of docs/strategies.md ("Scale").

    /usr/bin/python3 scripts/gpt3_scale.py [--build build] [--only 512]

The model is scripts/make_gpt_trace.py's GPT-3 (96 layers, d 12288, context 2048, an untied
LM head) with Adam; a row that does not fit prints the simulator's one-line error instead."""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
GLOBAL_BATCH = 1536  # sequences of 2048 tokens: GPT-3 175B's 3.2M-token batch (Brown et al. 2020, Table 2.1)
# Megatron-LM pads the GPT-2 vocabulary (50,257) to 51,200, a multiple of 128 x the tensor-parallel
# degree, so that it splits over the chips (its README: "All models use a vocabulary size of 51,200").
VOCAB = 51200

# (slice, layers, dp, tp, pp, precision): per-replica batch = GLOBAL_BATCH / dp sequences,
# pipelined in micro-batches of one sequence.
ROWS = [
    ("4x4x4", 96, 1, 8, 8, "float32"),
    ("4x4x4", 24, 1, 8, 8, "float32"),
    ("8x8x8", 96, 2, 8, 32, "float32"),
    ("8x8x8", 96, 2, 8, 32, "mixed_bfloat16"),
    ("16x16x16", 96, 16, 8, 32, "mixed_bfloat16"),
]


def chips(shape):
    n = 1
    for d in shape.split("x"):
        n *= int(d)
    return n


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.environ.get("TPUSIM_BUILD_DIR", str(ROOT / "build")))
    parser.add_argument("--only", type=int, help="only the rows on this many chips")
    parser.add_argument("--remat", default="all")
    args = parser.parse_args()
    tpusim = pathlib.Path(args.build) / "tpusim"
    work = pathlib.Path(tempfile.mkdtemp(prefix="gpt3_scale."))
    print("| chips | slice | layers | dp x tp x pp | micro-batches | precision | step (s) | tokens/s | MFU "
          "| bubble | stage 0 HBM peak | simulated in |")
    print("| ---: | --- | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for shape, layers, dp, tp, pp, precision in ROWS:
        if args.only and chips(shape) != args.only:
            continue
        model = work / f"gpt3_{layers}l.onnx"
        if not model.exists():
            subprocess.run([sys.executable, str(ROOT / "scripts" / "make_gpt_trace.py"), str(model), "--layers",
                            str(layers), "--untied-head", "--vocab", str(VOCAB)], check=True, capture_output=True)
        batch = GLOBAL_BATCH // dp
        out = work / f"{shape}_{layers}_{precision}"
        command = [str(tpusim), "run", str(model), "--topology", shape, "--dp", str(dp), "--tp", str(tp), "--pp",
                   str(pp), "--batch", str(batch), "--micro-batches", str(batch), "--optimizer", "adam", "--remat",
                   args.remat, "--precision", precision, "--no-instructions", "--no-progress", "--out", str(out)]
        start = time.monotonic()
        result = subprocess.run(command, capture_output=True, text=True)
        wall = time.monotonic() - start
        head = f"| {chips(shape)} | {shape} | {layers} | {dp} x {tp} x {pp} | {batch} | {precision} |"
        if result.returncode != 0:
            print(f"{head} {result.stderr.strip().splitlines()[-1]} |||||| {wall:.0f} s |")
            continue
        report = json.loads((out / "report.json").read_text())
        pipe, mfu = report["pipeline"], report["mfu"]
        step = pipe["step_time_s"]
        peak = pipe["per_stage"][0]["hbm_peak_bytes"] / 2**30
        print(f"{head} {step:.2f} | {GLOBAL_BATCH * 2048 / step:,.0f} | {100 * mfu['mfu']:.1f}% | "
              f"{100 * pipe['bubble']:.1f}% | {peak:.1f} GiB | {wall:.0f} s |", flush=True)


if __name__ == "__main__":
    main()
