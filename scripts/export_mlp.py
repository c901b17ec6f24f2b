#!/usr/bin/python3
"""Regenerates traces/mlp.onnx: a 784-512-512-10 MLP (MNIST-sized) exported
from PyTorch with a symbolic batch dimension, as a user would export it.

Run with Debian's Python (python3-torch, python3-onnx):
    /usr/bin/python3 scripts/export_mlp.py [--out traces/mlp.onnx]
The weights come from a fixed seed, so the file is reproducible.
"""
import argparse

import onnx
import torch


def build_mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(784, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 10),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="traces/mlp.onnx")
    args = parser.parse_args()
    model = build_mlp().eval()
    example = torch.zeros(1, 784)
    torch.onnx.export(
        model,
        example,
        args.out,
        input_names=["image"],
        output_names=["logits"],
        dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=17,
    )
    onnx.checker.check_model(onnx.load(args.out))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
