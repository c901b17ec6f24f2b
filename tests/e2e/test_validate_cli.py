"""tpusim validate: measured cases simulated as one-op models, per-family errors,
validate.csv / validate.json / validate.html, and errors for bad files."""
import csv
import json
import subprocess

import pytest


def write_cases(path, cases, **extra):
    path.write_text(json.dumps({"source": "test figures", "cases": cases, **extra}))
    return str(path)


CASES = [
    {"op": "matmul", "dims": {"M": 256, "K": 256, "N": 256}, "dtype": "float16", "measured_us": 3.0},
    {"op": "add", "shape": [256, 256], "dtype": "float16", "measured_us": 2.0},
    {"op": "relu", "shape": [1024], "dtype": "float16", "measured_us": 0.9},
    {"op": "layer_norm", "shape": [2, 64, 256], "axis": [2], "out_dtype": "float32", "dtype": "float16",
     "measured_us": 5.0},
    {"op": "max_pool", "shape": [1, 8, 64, 64], "dtype": "float16", "measured_us": 4.0},
    {"op": "softsign", "shape": [128], "dtype": "float16", "measured_us": 1.0},
]


def run(tpusim_bin, *args, check=True):
    result = subprocess.run([tpusim_bin, "validate", *args], capture_output=True, text=True)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def test_validate_prints_a_table_per_family_and_writes_its_files(tpusim_bin, tmp_path):
    cases = write_cases(tmp_path / "cases.json", CASES)
    out = tmp_path / "out"
    result = run(tpusim_bin, cases, "--out", str(out))
    lines = result.stdout.splitlines()
    families = [line.split()[0] for line in lines if line and line.split()[0] in
                {"matmul", "add", "relu", "layer_norm", "max_pool", "softsign", "all"}]
    assert families == ["matmul", "add", "relu", "layer_norm", "max_pool", "softsign", "all"]
    # The op the simulator does not know is listed with its error, and the rest ran.
    assert "1 case could not run" in result.stdout
    assert "case 5 softsign [128]: unsupported" in result.stdout
    rows = list(csv.DictReader((out / "validate.csv").open()))
    assert [int(r["index"]) for r in rows] == list(range(6))
    for row in rows[:5]:
        simulated, measured = float(row["simulated_us"]), float(row["measured_us"])
        assert simulated > 0
        assert float(row["ratio"]) == pytest.approx(simulated / measured, rel=1e-5)
        assert float(row["abs_error"]) == pytest.approx(abs(simulated / measured - 1), abs=1e-5)
    assert rows[5]["simulated_us"] == "" and "unknown op" in rows[5]["error"]
    summary = json.loads((out / "validate.json").read_text())
    assert summary["source"] == "test figures"
    everything = summary["families"][-1]
    assert everything["family"] == "all" and everything["cases"] == 6 and everything["ran"] == 5
    page = (out / "validate.html").read_text()
    assert page.count("<svg") == 5  # a plot per family that ran
    assert "softsign" in page


def test_jobs_give_the_same_files_as_one_process(tpusim_bin, tmp_path):
    cases = write_cases(tmp_path / "cases.json", CASES)
    run(tpusim_bin, cases, "--out", str(tmp_path / "one"))
    run(tpusim_bin, cases, "--jobs", "3", "--out", str(tmp_path / "three"))
    for name in ("validate.csv", "validate.json", "validate.html"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "three" / name).read_bytes()


def test_part_and_family_select_cases(tpusim_bin, tmp_path):
    cases = write_cases(tmp_path / "cases.json", CASES)
    run(tpusim_bin, cases, "--part", "1/2", "--out", str(tmp_path / "odd"))
    rows = list(csv.DictReader((tmp_path / "odd" / "validate.csv").open()))
    assert [int(r["index"]) for r in rows] == [1, 3, 5]
    run(tpusim_bin, cases, "--family", "relu", "--out", str(tmp_path / "relu"))
    rows = list(csv.DictReader((tmp_path / "relu" / "validate.csv").open()))
    assert [r["family"] for r in rows] == ["relu"]


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    (json.dumps({"cases": []}), "has no cases"),
    (json.dumps({"rows": []}), "not a measurement file"),
    (json.dumps({"cases": [{"op": "add", "shape": [4], "measured_us": -1}]}), "case 0: 'measured_us' must be a positive"),
    (json.dumps({"cases": [{"op": "add", "shape": [4, 0], "measured_us": 1}]}), "case 0: 'shape' must hold positive"),
    (json.dumps({"cases": [{"op": "matmul", "dims": {"M": 4}, "measured_us": 1}]}), "case 0: 'dims' lacks K"),
])
def test_a_malformed_file_is_a_one_line_error(tpusim_bin, tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = run(tpusim_bin, str(path), "--out", str(tmp_path / "out"), check=False)
    assert result.returncode != 0
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "validate.csv").exists()


@pytest.mark.parametrize("args, message", [
    (["--jobs", "0"], "--jobs must be 1 to 256"),
    (["--part", "2/2"], "--part I/N needs"),
    (["--part", "x"], "is not I/N"),
    (["--family", "conv"], "--family conv: the file has no such op"),
])
def test_bad_options_are_one_line_errors(tpusim_bin, tmp_path, args, message):
    cases = write_cases(tmp_path / "cases.json", CASES[:2])
    result = run(tpusim_bin, cases, *args, check=False)
    assert result.returncode != 0
    assert message in result.stderr
