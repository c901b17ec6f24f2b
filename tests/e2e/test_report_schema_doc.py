"""docs/report-schema.md describes every field report.json carries: the top-level fields and
the fields of each section (and of the entries of its lists), for runs that between them write
every optional section."""
import json
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = (ROOT / "docs" / "report-schema.md").read_text()
DOCUMENTED = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)`", SCHEMA))

RUNS = {
    "plain": ["mlp.onnx"],
    "functional": ["mlp.onnx", "--functional", "--precision", "mixed_float16"],
    "slice": ["mlp.onnx", "--topology", "2x2x1", "--no-instructions"],
    "host": ["mlp.onnx", "--steps", "3", "--no-instructions"],
    "cmem": ["mlp.onnx", "--set", "cmem.mode=cache", "--set", "hbm.model=dram_memoized", "--no-instructions"],
    "ps": ["dlrm.onnx", "--strategy", "ps", "--steps", "2", "--no-instructions"],
    "pipeline": ["mlp.onnx", "--topology", "3x1x1", "--pp", "3", "--micro-batches", "4", "--no-instructions"],
    "schedule": ["mlp.onnx", "--precision-schedule", "float32:2,mixed_bfloat16:3", "--no-instructions"],
    "workers": ["mlp.onnx", "--strategy", "multi_worker_mirrored", "--workers", "2", "--no-instructions"],
    "tensor_parallel": ["mlp.onnx", "--strategy", "tpu", "--topology", "2x2x1", "--tp", "2", "--no-instructions"],
    "rule": ["mlp.onnx", "--precision-rule", "mixed_float16->float32 when grad_norm>0", "--precision-rule-steps", "2",
             "--no-instructions"],
    "int8": ["mlp.onnx", "--mode", "inference", "--precision", "int8", "--no-instructions"],
}
# Maps keyed by data (unit, stat or tensor names), not fields: their keys are not schema.
KEYED_BY_NAME = {"units", "stats", "bytes_by_role", "single_policy_time_s", "counters"}


def fields(value, path, out):
    """Field names of `value` at depth <= 3 below the top, with the path that reached them."""
    if isinstance(value, list):
        for item in value[:3]:
            fields(item, path, out)
    elif isinstance(value, dict):
        for key, item in value.items():
            out.add((path, key))
            if key not in KEYED_BY_NAME and path.count(".") < 2:
                fields(item, f"{path}.{key}" if path else key, out)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_field_is_described(tpusim_bin, tmp_path, name):
    args = RUNS[name]
    result = subprocess.run([tpusim_bin, "run", str(ROOT / "traces" / args[0]), *args[1:], "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    found = set()
    fields(json.loads((tmp_path / "report.json").read_text()), "", found)
    missing = sorted(f"{path}.{key}" if path else key for path, key in found if key not in DOCUMENTED)
    assert not missing, f"fields of report.json not in docs/report-schema.md: {missing}"
