"""--loss auto: softmax cross-entropy for a single [batch, classes] output, mean squared error for
any other, said in the summary and in report.json's `loss`; an explicit softmax_cross_entropy
on another output is a one-line error that names the flag."""
import json
import subprocess

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as onh
import pytest


@pytest.fixture(scope="module")
def image_to_image(tmp_path_factory):
    """A 3x3 convolution whose output is an image, [batch, 2, 6, 6]: no classes to score."""
    w = np.random.default_rng(1).standard_normal((2, 3, 3, 3)).astype(np.float32)
    graph = oh.make_graph([oh.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "image_to_image",
                          [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 3, 6, 6])],
                          [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["batch", 2, 6, 6])],
                          initializer=[onh.from_array(w, "w")])
    path = tmp_path_factory.mktemp("model") / "image_to_image.onnx"
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)]), str(path))
    return str(path)


def run(tpusim_bin, out, *args):
    return subprocess.run([tpusim_bin, "run", *args, "--batch", "2", "--no-instructions", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)


def test_auto_trains_an_image_output_with_mean_squared_error_and_says_so(tpusim_bin, image_to_image, tmp_path):
    done = run(tpusim_bin, tmp_path / "auto", image_to_image)
    assert done.returncode == 0, done.stderr
    said = "mean squared error (--loss auto: 'y' is [2,2,6,6], not [batch, classes])"
    assert "loss         " + said + "\n" in done.stdout
    assert json.loads((tmp_path / "auto" / "report.json").read_text())["loss"] == said
    explicit = run(tpusim_bin, tmp_path / "mse", image_to_image, "--loss", "mse")
    assert explicit.returncode == 0, explicit.stderr
    report = json.loads((tmp_path / "mse" / "report.json").read_text())
    assert report["loss"] == "mean squared error"
    assert report["total_cycles"] == json.loads((tmp_path / "auto" / "report.json").read_text())["total_cycles"]


def test_softmax_cross_entropy_on_an_image_output_names_the_flag(tpusim_bin, image_to_image, tmp_path):
    done = run(tpusim_bin, tmp_path / "ce", image_to_image, "--loss", "softmax_cross_entropy")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.endswith(
        "--loss softmax_cross_entropy needs a [batch, classes] float output; 'y' is [2,2,6,6] "
        "(--loss mse, or auto, trains it against targets of its shape)\n"), done.stderr


def test_auto_scores_classes_and_inference_has_no_loss(tpusim_bin, mlp_path, tmp_path):
    done = run(tpusim_bin, tmp_path / "train", mlp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "train" / "report.json").read_text())
    assert report["loss"] == "softmax cross-entropy (--loss auto: 'logits' is [2,10], [batch, classes])"
    inference = run(tpusim_bin, tmp_path / "infer", mlp_path, "--mode", "inference")
    assert inference.returncode == 0, inference.stderr
    assert "loss" not in json.loads((tmp_path / "infer" / "report.json").read_text())
    assert "\nloss " not in inference.stdout
