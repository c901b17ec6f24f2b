"""tpusim.validate: the Python face of tpusim validate (docs/fidelity.md)."""
import json

import pytest

import tpusim


def cases_file(tmp_path):
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"source": "python test", "cases": [
        {"op": "add", "shape": [128, 256], "dtype": "float16", "measured_us": 1.5},
        {"op": "relu", "shape": [4096], "dtype": "float16", "measured_us": 0.95},
        {"op": "no_such_op", "shape": [4], "dtype": "float16", "measured_us": 1.0},
    ]}))
    return str(path)


def test_validate_returns_the_families_and_cases(tmp_path):
    result = tpusim.validate(cases_file(tmp_path), out=str(tmp_path / "out"))
    assert [f["family"] for f in result["families"]] == ["add", "relu", "no_such_op", "all"]
    assert result["families"][-1]["ran"] == 2
    assert result["cases"][2]["error"].startswith("unsupported")
    for case in result["cases"][:2]:
        assert case["simulated_us"] > 0
    assert json.loads((tmp_path / "out" / "validate.json").read_text()) == result


def test_validate_takes_overrides_and_parts(tmp_path):
    path = cases_file(tmp_path)
    base = tpusim.validate(path, part=(0, 3))
    assert [c["index"] for c in base["cases"]] == [0]
    slow = tpusim.validate(path, part=(0, 3), overrides={"chip.clock_mhz": 525})
    assert slow["cases"][0]["simulated_us"] > base["cases"][0]["simulated_us"]


def test_validate_errors_are_tpusim_errors(tmp_path):
    with pytest.raises(tpusim.Error, match="does not exist"):
        tpusim.validate(str(tmp_path / "missing.json"))
    with pytest.raises(tpusim.Error, match="--jobs must be"):
        tpusim.validate(cases_file(tmp_path), jobs=0)
