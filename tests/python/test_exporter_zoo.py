"""Common models as torch.onnx.export writes them (scripts/export_models.py, EXPORTER_ZOO):
each imports, infers and trains on tpuv4 at batch 2, with torch's parameters as weights
within 1%: the eval-mode exporter folds each BatchNormalization that follows a convolution
into it (its scale and shift become the convolution's bias), so the file holds a few
parameters fewer or more than torch's module, and tpusim's weight bytes count the file's
integer shape tensors too. Models whose ops
are not supported yet stop with the one-line unsupported error naming the node. Needs
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


class Lstm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(16, 32, batch_first=True)
        self.head = torch.nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.lstm(x)[0][:, -1])


@pytest.mark.parametrize("name, build, shape, op", [
    ("swin_t", lambda: torchvision.models.swin_t(weights=None), (1, 3, 224, 224), "Mod"),
    ("lstm", Lstm, (1, 12, 16), "LSTM"),
])
def test_a_model_with_an_op_not_supported_yet_names_it(tpusim_bin, tmp_path, name, build, shape, op):
    torch.manual_seed(0)
    path = tmp_path / f"{name}.onnx"
    torch.onnx.export(build().eval(), torch.zeros(*shape), str(path), input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, opset_version=14)
    done = run(tpusim_bin, path, tmp_path / "out", "inference")
    assert done.returncode == 4
    assert done.stderr.count("\n") == 1 and f"({op}): op {op} is not supported yet" in done.stderr, done.stderr
