"""BERT-Base training on one TPU chip and with TPUStrategy on ICI slices.

Each run simulates one training step; with a TPUStrategy every chip holds a replica
with --batch examples and the gradients are all-reduced over the slice's ICI links.
Prints a table of step time, throughput and communication.

    PYTHONPATH=build/bindings /usr/bin/python3 examples/bert_strategies.py --batch 8 --slices 2x2x1 4x4x4
"""
import argparse
import pathlib

import tpusim
from tpusim import distribute

MODEL = pathlib.Path(__file__).resolve().parents[1] / "traces" / "bert_base.onnx"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(MODEL))
    parser.add_argument("--hw", default="tpuv4")
    parser.add_argument("--batch", type=int, default=8, help="examples per replica")
    parser.add_argument("--slices", nargs="+", default=["2x2x1", "4x4x4"], help="TPUStrategy slice shapes")
    args = parser.parse_args()

    strategies = [("one chip", distribute.get_strategy())]
    strategies += [(f"TPUStrategy {shape}", distribute.TPUStrategy(topology=shape)) for shape in args.slices]
    print(f"{args.model.split('/')[-1]} training on {args.hw}, batch {args.batch} per replica")
    print(f"{'strategy':<22} {'chips':>5} {'global batch':>12} {'step ms':>9} {'examples/s':>11} "
          f"{'speed-up':>8} {'exposed comm %':>14}")
    baseline = None
    for label, strategy in strategies:
        with strategy.scope():
            report = tpusim.run(args.model, hw=args.hw, batch=args.batch, instructions=False)
        ici = report.get("interconnect", {})
        chips = ici.get("chips", 1)
        global_batch = ici.get("global_batch", report["batch"])
        throughput = global_batch / report["step_time_s"]
        baseline = baseline or throughput
        exposed = 100.0 * ici.get("exposed_communication_cycles", 0) / report["total_cycles"]
        print(f"{label:<22} {chips:>5} {global_batch:>12} {report['step_time_s'] * 1e3:>9.3f} {throughput:>11,.0f} "
              f"{throughput / baseline:>7.2f}x {exposed:>14.1f}")
        assert chips == strategy.num_replicas_in_sync


if __name__ == "__main__":
    main()
