"""The fidelity regression guard: a fixed sample of the public TPU v4 measurements (every
tenth case, `--part 0/10`) simulated on tpuv4; no op family's median |simulated / measured - 1|
may grow past the figure docs/fidelity.md documents for it (its "Regression guard" table).
A change that makes tpusim more truthful lowers the figures: update the table with it."""
import json
import re
import subprocess

from conftest import ROOT

SAMPLE = ["--part", "0/10"]


def documented_medians():
    text = (ROOT / "docs" / "fidelity.md").read_text()
    section = text.split("## Regression guard", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\w+) \| (\d+) \| ([\d.]+)% \|$", section, re.M)
    assert rows, "docs/fidelity.md has no Regression guard table"
    return {family: (int(cases), float(median) / 100) for family, cases, median in rows}


def test_no_family_is_less_truthful_than_documented(tpusim_bin, tmp_path):
    result = subprocess.run([tpusim_bin, "validate", str(ROOT / "measurements" / "tpu_v4_ops.json"), *SAMPLE,
                             "--jobs", "2", "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    families = {f["family"]: f for f in json.loads((tmp_path / "validate.json").read_text())["families"]}
    documented = documented_medians()
    assert set(documented) == set(families)
    for family, (cases, median) in documented.items():
        measured = families[family]
        assert measured["cases"] == cases and measured["ran"] == cases, family
        # The table rounds to 0.1 points.
        assert measured["median_error"] <= median + 0.0005, (
            f"{family}: median error {100 * measured['median_error']:.2f}% is past the documented {100 * median:.1f}%")
