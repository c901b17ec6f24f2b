"""Common models as torch.onnx.export writes them (scripts/export_models.py, EXPORTER_ZOO):
each imports, infers and trains on tpuv4 at batch 2, with torch's parameters as weights
within 1%: the eval-mode exporter folds each BatchNormalization that follows a convolution
into it (its scale and shift become the convolution's bias), so the file holds a few
parameters fewer or more than torch's module, and tpusim's weight bytes count the file's
integer shape tensors too. A model whose NonZero reads data known only at run time (so
its output shape depends on the data) stops with the one-line unsupported error naming the node. Needs
Debian's python3-torch and python3-torchvision (TPUSIM_WITH_TORCH=1 scripts/setup.sh;
skipped without them)."""
import json
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
pytestmark = pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning", "ignore::UserWarning")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
import export_models  # noqa: E402


def run(tpusim_bin, model, out, mode):
    return subprocess.run([tpusim_bin, "run", str(model), "--mode", mode, "--batch", "2", "--no-instructions",
                           "--out", str(out)], capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("name", sorted(export_models.EXPORTER_ZOO))
def test_the_export_infers_and_trains_with_torchs_parameters(tpusim_bin, tmp_path, name):
    path = tmp_path / f"{name}.onnx"
    parameters = export_models.export_as_exporters_do(name, path)
    for mode in ("inference", "training"):
        done = run(tpusim_bin, path, tmp_path / mode, mode)
        assert done.returncode == 0, done.stderr
        report = json.loads((tmp_path / mode / "report.json").read_text())
        weights = report["memory"]["bytes_by_role"]["weight"] / 4  # f32 (and a few int64 shapes)
        # Within the exporter's folding of BatchNormalization into convolutions (under 1%).
        assert abs(weights - parameters) <= 0.01 * parameters, (mode, weights, parameters)


class NonZeroPositions(torch.nn.Module):
    """Counts the positive features through NonZero, whose output shape depends on the data."""

    def forward(self, x):
        return torch.nonzero(x > 0).float().sum(0, keepdim=True).expand(x.shape[0], 2)


def test_a_model_with_an_op_not_supported_yet_names_it(tpusim_bin, tmp_path):
    path = tmp_path / "nonzero.onnx"
    torch.onnx.export(NonZeroPositions().eval(), torch.zeros(1, 16), str(path), input_names=["input"],
                      output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                      opset_version=14)
    done = run(tpusim_bin, path, tmp_path / "out", "inference")
    assert done.returncode == 4
    assert done.stderr.count("\n") == 1 and "(NonZero): tpusim evaluates NonZero only while compiling" in done.stderr, done.stderr
