"""`tpusim compare`: the simulated step of traces/mlp.onnx beside the CPU reference's, end to end."""
import csv
import json
import pathlib
import shutil
import subprocess

import pytest

MLP = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / "mlp.onnx")
SEED = "5"
BATCH = "8"
# docs/reference.md: the f32 reference kernels against the MXU's one bf16 pass differ by a
# normwise error max|a - b| / max|b| under 2e-2 on every output of traces/mlp.onnx.
REFERENCE_NUMERICS_BOUND = 2e-2


def cli(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=300)


def ok(tpusim_bin, *args):
    result = cli(tpusim_bin, *args)
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def runs(tpusim_bin, tmp_path_factory):
    """One functional simulation and a CPU reference in each numerics, all with the same seed."""
    root = tmp_path_factory.mktemp("compare")
    ok(tpusim_bin, "run", MLP, "--batch", BATCH, "--functional", "--seed", SEED, "--no-instructions",
       "--out", str(root / "sim"))
    for numerics in ("mxu", "reference"):
        ok(tpusim_bin, "reference", MLP, "--batch", BATCH, "--backend", "cpu", "--seed", SEED, "--numerics", numerics,
           "--repeats", "3", "--out", str(root / numerics))
    return root


def compare(tpusim_bin, runs, numerics, out):
    result = ok(tpusim_bin, "compare", str(runs / "sim" / "report.json"), str(runs / numerics / "report.json"),
                "--out", str(out))
    return result.stdout, json.loads((out / "compare.json").read_text())


def test_every_op_is_matched_or_listed_with_positive_ratios(tpusim_bin, runs, tmp_path):
    text, c = compare(tpusim_bin, runs, "mxu", tmp_path)
    sim = json.loads((runs / "sim" / "report.json").read_text())
    ref = json.loads((runs / "mxu" / "report.json").read_text())
    assert c["kind"] == "compare" and c["model"] == "mlp.onnx" and c["batch"] == 8
    sim_ops = {op["op"]: op for op in sim["per_op"]}
    ref_ops = {op["op"]: op for op in ref["per_op"]}
    rows = {row["op"]: row for row in c["per_op"]}
    assert rows.keys() == sim_ops.keys() | ref_ops.keys() and len(rows) == len(c["per_op"])
    for name, row in rows.items():
        expected = "matched" if name in sim_ops and name in ref_ops else (
            "simulator only" if name in sim_ops else "reference only")
        assert row["status"] == expected, name
        if name in sim_ops:  # the simulator's cycles, FLOPs and bytes, as its report has them
            assert row["sim_cycles"] == sim_ops[name]["bound_cycles"]
            assert row["sim_time_s"] == pytest.approx(row["sim_cycles"] / sim["clock_hz"])
            assert (row["flops"], row["hbm_bytes"]) == (sim_ops[name]["flops"], sim_ops[name]["hbm_bytes"])
        if expected == "matched":
            assert row["ref_time_s"] == ref_ops[name]["time_s"]
            assert row["ratio"] > 0 and row["ratio"] == pytest.approx(row["ref_time_s"] / row["sim_time_s"])
        assert name in text
    summary = c["per_op_summary"]
    assert summary["matched"] + summary["simulator_only"] == len(sim_ops) and summary["matched"] >= len(sim_ops) // 2
    assert c["step_time_ratio"] == pytest.approx(ref["step_time_s"] / sim["step_time_s"])
    # The CSV holds the same rows.
    with open(tmp_path / "compare.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert [r["op"] for r in table] == [row["op"] for row in c["per_op"]]
    assert all(float(r["ratio"]) > 0 for r in table if r["status"] == "matched")


def test_mxu_numerics_match_the_functional_outputs_exactly(tpusim_bin, runs, tmp_path):
    text, c = compare(tpusim_bin, runs, "mxu", tmp_path)
    outputs = c["numerics"]["outputs"]
    functional = json.loads((runs / "sim" / "report.json").read_text())["functional"]["outputs"]
    assert [row["output"] for row in outputs] == [entry["name"] for entry in functional]
    for row in outputs:
        assert row["status"] == "matched" and row["precision"] == "f32" and row["elements"] > 0
        assert row["max_abs_error"] == 0 and row["max_rel_error"] == 0 and row["nonfinite_mismatches"] == 0, row
    assert "matmul precision default" in c["numerics"]["simulator"] and c["numerics"]["seed"] == 5
    assert c["numerics"]["by_precision"] == [{"precision": "f32", "outputs": len(outputs), "max_abs_error": 0.0,
                                              "max_rel_error": 0.0, "normwise_rel_error": 0.0,
                                              "nonfinite_mismatches": 0}]
    assert "numerics     simulator: mxu (weight_stationary dataflow" in text
    with open(tmp_path / "numerics.csv", newline="") as f:
        assert [float(r["max_abs_error"]) for r in csv.DictReader(f)] == [0.0] * len(outputs)


def test_reference_numerics_are_within_the_documented_bound(tpusim_bin, runs, tmp_path):
    _, c = compare(tpusim_bin, runs, "reference", tmp_path)
    outputs = c["numerics"]["outputs"]
    assert c["numerics"]["reference"] == "reference (each op's kernels in its dtype)"
    for row in outputs:
        assert row["status"] == "matched" and row["nonfinite_mismatches"] == 0
        assert row["normwise_rel_error"] < REFERENCE_NUMERICS_BOUND, row
    assert max(row["max_abs_error"] for row in outputs) > 0  # one bf16 pass is not the f32 kernels
    [f32] = c["numerics"]["by_precision"]
    assert f32["normwise_rel_error"] == max(row["normwise_rel_error"] for row in outputs) < REFERENCE_NUMERICS_BOUND


def test_the_same_reports_give_the_same_files(tpusim_bin, runs, tmp_path):
    compare(tpusim_bin, runs, "mxu", tmp_path / "a")
    compare(tpusim_bin, runs, "mxu", tmp_path / "b")
    for name in ("compare.json", "compare.csv", "numerics.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_without_functional_outputs_there_is_no_numerics_table(tpusim_bin, runs, tmp_path):
    ok(tpusim_bin, "run", MLP, "--batch", BATCH, "--no-instructions", "--out", str(tmp_path / "sim"))
    result = ok(tpusim_bin, "compare", str(tmp_path / "sim" / "report.json"), str(runs / "mxu" / "report.json"),
                "--out", str(tmp_path / "c"))
    assert "numerics     none" in result.stdout
    assert json.loads((tmp_path / "c" / "compare.json").read_text())["numerics"] is None


def edited(runs, tmp_path, name, edit):
    """A copy of the mxu reference's folder with its report edited."""
    folder = tmp_path / name
    shutil.copytree(runs / "mxu", folder)
    report = json.loads((folder / "report.json").read_text())
    edit(report)
    (folder / "report.json").write_text(json.dumps(report))
    return folder


def test_bad_comparisons_fail_with_one_line(tpusim_bin, runs, tmp_path):
    sim = str(runs / "sim" / "report.json")
    ref = str(runs / "mxu" / "report.json")
    ok(tpusim_bin, "run", MLP, "--batch", "4", "--no-instructions", "--out", str(tmp_path / "b4"))
    (tmp_path / "broken.json").write_text('{"kind": "reference", ')
    other_model = str(edited(runs, tmp_path, "model", lambda r: r.update(model="x.onnx")) / "report.json")
    other_seed = str(edited(runs, tmp_path, "seed", lambda r: r.update(seed=6)) / "report.json")
    no_per_op = str(edited(runs, tmp_path, "per_op", lambda r: r.pop("per_op")) / "report.json")
    bad_op = str(edited(runs, tmp_path, "time", lambda r: r["per_op"][0].update(time_s="fast")) / "report.json")
    two_replicas = str(edited(runs, tmp_path, "replicas", lambda r: r.update(replicas=2)) / "report.json")
    gone = edited(runs, tmp_path, "gone", lambda r: None)
    (gone / "reference" / "logits.npy").unlink()
    cases = [
        ([ref, ref], 3, "the first report has kind 'reference', expected 'simulation'"),
        ([sim, sim], 3, "the second report has kind 'simulation', expected 'reference'"),
        ([str(tmp_path / "b4" / "report.json"), ref], 3, "different steps: batch 4 (simulation) against 8"),
        ([sim, other_model], 3, "different steps: model \"mlp.onnx\" (simulation) against \"x.onnx\""),
        ([sim, other_seed], 3, "inputs differ: seed 5 (simulation) against 6 (reference)"),
        ([sim, two_replicas], 3, "the reports' steps differ: 1 data-parallel replica(s) (simulation) against 2 "
                                 "(reference); run tpusim reference --replicas 1"),
        ([sim, str(tmp_path / "none.json")], 3, "none.json' does not exist"),
        ([sim, str(tmp_path / "broken.json")], 3, "broken.json' is not valid JSON"),
        ([sim, no_per_op], 3, "the reference report has no 'per_op'"),
        ([sim, bad_op], 3, "lack a field compare needs"),
        ([sim, str(gone / "report.json")], 3, "reference output 'logits': '"),
        ([sim], 2, "compare needs two reports"),
    ]
    for args, code, text in cases:
        result = cli(tpusim_bin, "compare", *args, "--out", str(tmp_path / "out"))
        assert result.returncode == code and text in result.stderr, (args, result.stderr)
        assert result.stderr.count("\n") == 1, result.stderr


def test_a_data_parallel_step_matches_the_cpu_replicas_exactly(tpusim_bin, runs, tmp_path):
    """--topology 2x1x1 --functional computes both replicas' steps, their gradients summed; the CPU
    reference with --replicas 2 and the MXU's numerics gives the same bits, and the step is not
    the one-replica step."""
    ok(tpusim_bin, "run", MLP, "--batch", BATCH, "--topology", "2x1x1", "--functional", "--seed", SEED,
       "--no-instructions", "--out", str(tmp_path / "sim"))
    ok(tpusim_bin, "reference", MLP, "--batch", BATCH, "--backend", "cpu", "--replicas", "2", "--seed", SEED,
       "--numerics", "mxu", "--repeats", "1", "--out", str(tmp_path / "ref"))
    functional = json.loads((tmp_path / "sim" / "report.json").read_text())["functional"]
    assert functional["replicas"] == 2 and "seed + r" in functional["replicas_method"]
    reference = json.loads((tmp_path / "ref" / "report.json").read_text())
    assert reference["replicas"] == 2 and "on this CPU" in reference["replicas_method"]
    assert len(reference["replica_step_time_s"]) == 2
    reduced = [op for op in reference["per_op"] if op["type"] == "AllReduce"]
    assert len(reduced) == 6, [op["op"] for op in reduced]  # mlp's three weights and three biases
    result = ok(tpusim_bin, "compare", str(tmp_path / "sim" / "report.json"), str(tmp_path / "ref" / "report.json"),
                "--out", str(tmp_path / "c"))
    c = json.loads((tmp_path / "c" / "compare.json").read_text())
    outputs = c["numerics"]["outputs"]
    assert outputs and all(row["status"] == "matched" and row["max_abs_error"] == 0 for row in outputs), result.stdout
    # The all-reduce rows keep the simulator's op names, so they stand beside the simulated collectives.
    matched = {row["op"] for row in c["per_op"] if row["status"] == "matched"}
    assert {op["op"] for op in reduced} <= matched
    # Replica 0 alone (the module's one-replica run, same seed) ends with other weights.
    updated = [entry for entry in functional["outputs"] if entry["name"].endswith(":updated")]
    assert updated
    differs = [entry["name"] for entry in updated
               if (tmp_path / "sim" / entry["file"]).read_bytes() != (runs / "sim" / entry["file"]).read_bytes()]
    assert differs == [entry["name"] for entry in updated]
