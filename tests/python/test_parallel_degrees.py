"""tpusim.run's dp, tp and pp keywords are the CLI's --dp/--tp/--pp: the same report, and the
same one-line errors as tpusim.Error."""
import json
import pathlib
import subprocess

import pytest

import tpusim

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLP = str(ROOT / "traces" / "mlp.onnx")


def test_tp_keyword_splits_the_slice_as_the_cli_does(tpusim_bin, tmp_path):
    report = tpusim.run(MLP, topology="2x2x1", tp=2, instructions=False, progress=False)
    assert report["parallelism"] == {"dp": 2, "tp": 2, "pp": 1}
    cli = subprocess.run([tpusim_bin, "run", MLP, "--topology", "2x2x1", "--tp", "2", "--no-instructions",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr
    assert json.loads((tmp_path / "report.json").read_text())["total_cycles"] == report["total_cycles"]


def test_pp_keyword_pipelines_the_step():
    report = tpusim.run(MLP, topology="3x1x1", pp=3, micro_batches=4, pipeline_schedule="gpipe",
                        instructions=False, progress=False)
    assert report["parallelism"]["pp"] == 3
    assert report["pipeline"]["schedule"] == "gpipe" and report["pipeline"]["micro_batches"] == 4


def test_a_pp_that_does_not_divide_the_layers_raises_the_cli_error():
    with pytest.raises(tpusim.Error, match="layers"):
        tpusim.run(MLP, topology="2x1x1", pp=2, progress=False)
