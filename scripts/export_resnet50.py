#!/usr/bin/python3
"""Regenerates traces/resnet50.onnx: torchvision's ResNet-50 (random weights, no
download), exported from PyTorch with a symbolic batch dimension and with its
BatchNormalization layers kept (training-mode export, as a training run needs
them), then made shape-only: the initializers keep their names, types and
shapes but drop their values, which the simulator does not need (about 100 MB).

    /usr/bin/python3 scripts/export_resnet50.py [--out traces/resnet50.onnx]

Needs Debian's python3-torch, python3-torchvision and python3-onnx.
"""
import argparse
import io

import onnx
import torch
import torchvision


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="traces/resnet50.onnx")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None)
    buffer = io.BytesIO()
    torch.onnx.export(
        model,
        torch.zeros(1, 3, 224, 224),
        buffer,
        input_names=["image"],
        output_names=["logits"],
        dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=17,
        training=torch.onnx.TrainingMode.TRAINING,
        do_constant_folding=False,
    )
    exported = onnx.load_from_string(buffer.getvalue())
    for tensor in exported.graph.initializer:
        tensor.ClearField("raw_data")
        tensor.ClearField("float_data")
        tensor.ClearField("int64_data")
    onnx.save(exported, args.out)
    print(f"wrote {args.out} ({len(exported.graph.node)} nodes, shape-only)")


if __name__ == "__main__":
    main()
