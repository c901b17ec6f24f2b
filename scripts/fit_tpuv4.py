#!/usr/bin/env python3
"""Fits tpuv4's fitted parameters to one half of a measurement file and reports the other half.

The parameters marked "fitted" in configs/tpuv4.textproto are searched by coordinate descent
over a small grid each, minimising the mean over op families of the median |simulated /
measured - 1| of `tpusim validate` on the fitting half (`--part I/2`); the figures of the
other half, with the values found, are the cross-validated ones in docs/fidelity.md.

    scripts/fit_tpuv4.py [--cases measurements/tpu_v4_ops.json] [--fit-part 0] [--jobs 2]

Needs only the tpusim binary (TPUSIM_BUILD_DIR, default build/).
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
BINARY = pathlib.Path(os.environ.get("TPUSIM_BUILD_DIR", ROOT / "build")) / "tpusim"

# Each fitted parameter and the values tried (the preset's value among them).
GRID = {
    "core.kernel_launch_cycles": [400, 500, 588, 650, 750],
    "hbm.latency_ns": [100, 150, 200, 250],
    "vpu.f16_unpack_ops": [5, 6, 7, 8, 9, 10],
    "vpu.f16_pack_ops": [10, 12, 14, 16, 18, 20],
    "mxu.f16_feed_interval_cycles": [1, 2, 3, 4],
    "vpu.cross_lane_ops": [12, 14, 16, 18, 20],
    "vmem.stream_tile_kib": [256, 512, 768, 1024, 1536],
}


def validate(cases, part, values, jobs):
    with tempfile.TemporaryDirectory() as out:
        command = [str(BINARY), "validate", cases, "--part", part, "--jobs", str(jobs), "--out", out]
        for key, value in values.items():
            command += ["--set", f"{key}={value}"]
        subprocess.run(command, check=True, capture_output=True, text=True)
        return json.loads((pathlib.Path(out) / "validate.json").read_text())


def objective(summary):
    families = [f for f in summary["families"] if f["family"] != "all" and f["ran"]]
    return statistics.mean(f["median_error"] for f in families)


def fit(cases, part, jobs):
    values = {key: grid[len(grid) // 2] for key, grid in GRID.items()}
    best = objective(validate(cases, part, values, jobs))
    for _ in range(2):
        for key, grid in GRID.items():
            for candidate in grid:
                trial = dict(values, **{key: candidate})
                score = objective(validate(cases, part, trial, jobs))
                if score < best - 1e-12:
                    best, values = score, trial
    return values, best


def table(summary):
    rows = ["| family | cases | median | p90 | within 10% | within 25% |", "| --- | --- | --- | --- | --- | --- |"]
    for f in summary["families"]:
        rows.append(f"| {f['family']} | {f['cases']} | {100 * f['median_error']:.1f}% | {100 * f['p90_error']:.1f}% | "
                    f"{100 * f['within_10']:.1f}% | {100 * f['within_25']:.1f}% |")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=str(ROOT / "measurements" / "tpu_v4_ops.json"))
    parser.add_argument("--fit-part", choices=["0", "1", "all"], default="0",
                        help="the half fitted to (0: even cases, 1: odd), or all cases (the preset's values)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    if not BINARY.exists():
        sys.exit(f"fit_tpuv4: build tpusim first ({BINARY} is missing)")
    fitted_on = "0/1" if args.fit_part == "all" else f"{args.fit_part}/2"
    reported = "0/1" if args.fit_part == "all" else f"{1 - int(args.fit_part)}/2"
    values, score = fit(args.cases, fitted_on, args.jobs)
    print(f"fitted on part {fitted_on} (mean of family medians {100 * score:.1f}%):")
    for key, value in values.items():
        print(f"  {key} = {value}")
    print(f"\n{'held-out part ' + reported if reported != fitted_on else 'every case'} with these values:\n")
    print(table(validate(args.cases, reported, values, args.jobs)))


if __name__ == "__main__":
    main()
