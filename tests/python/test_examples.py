"""The scripts in examples/ run, small, and print the figures tpusim.run gives."""
import importlib.util
import os
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

import tpusim

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run_example(name, *args, cwd=None):
    out = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True,
                         env=os.environ | {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def rows(lines, first_word):
    return [line.split() for line in lines if line.startswith(first_word)]


def test_bert_strategies_prints_each_strategy():
    lines = run_example("bert_strategies.py", "--batch", "2", "--slices", "2x1x1", "2x2x1")
    assert lines[0] == "bert_base.onnx training on tpuv4, batch 2 per replica"
    one_chip = rows(lines, "one chip")[0]
    slices = rows(lines, "TPUStrategy")
    assert [row[1] for row in slices] == ["2x1x1", "2x2x1"]
    # chips, global batch = chips x batch, and the step time tpusim.run gives.
    assert one_chip[2:4] == ["1", "2"]
    assert [row[2:4] for row in slices] == [["2", "4"], ["4", "8"]]
    alone = tpusim.run(str(ROOT / "traces" / "bert_base.onnx"), batch=2, topology="2x2x1", instructions=False)
    assert float(slices[1][4]) == pytest.approx(alone["step_time_s"] * 1e3, abs=5e-4)
    assert float(one_chip[-1]) == 0.0 and float(slices[1][-1]) > 0  # one chip communicates nothing


def test_resnet_mxu_sweep_prints_and_plots(tmp_path):
    plot = tmp_path / "mxu.svg"
    lines = run_example("resnet_mxu_sweep.py", "--batch", "1", "--sizes", "64", "128", "--plot", str(plot))
    table = rows(lines, " ")
    assert [row[0] for row in table if "x" in row[0]] == ["64x64", "128x128"]
    small, big = (row for row in table if "x" in row[0])
    expected = tpusim.run(str(ROOT / "traces" / "resnet50.onnx"), batch=1, overrides={"mxu.rows": 64, "mxu.cols": 64},
                          instructions=False)
    assert float(small[1]) == pytest.approx(expected["step_time_s"] * 1e3, abs=5e-4)
    assert float(small[2]) > float(big[2])  # a smaller array is busier on the same convolutions
    svg = ElementTree.parse(plot).getroot()
    points = svg.find("{http://www.w3.org/2000/svg}polyline").get("points").split()
    assert len(points) == 2 and lines[-1] == f"plot         {plot}"


def test_precision_comparison_prints_both_policies():
    args = ["--batch", "8", "--length", "64", "--width", "128", "--blocks", "1"]
    lines = run_example("precision_comparison.py", *args)
    f32, mixed = rows(lines, "float32")[0], rows(lines, "mixed_bfloat16")[0]
    assert float(f32[-1].rstrip("x")) == 1.0
    assert float(mixed[-1].rstrip("x")) == pytest.approx(float(f32[1]) / float(mixed[1]), abs=0.01)
    # The mixed row is the model's run with precision="mixed_bfloat16".
    spec = importlib.util.spec_from_file_location("precision_comparison", EXAMPLES / "precision_comparison.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    model = example.transformer_classifier(64, 128, heads=4, blocks=1, vocabulary=8000, classes=4)
    model.compile(optimizer="adam", loss=tpusim.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    report = model.run(batch=8, precision="mixed_bfloat16", instructions=False)
    assert float(mixed[1]) == pytest.approx(report["step_time_s"] * 1e3, abs=5e-4)
    assert float(mixed[3]) < float(f32[3])  # bf16 activations: a smaller peak
