"""`tpusim run MODEL --topology SHAPE --dp D --tp T`: tensor parallelism beside data parallelism
(docs/strategies.md, "Tensor parallelism"), and the degrees' bad inputs."""
import json
import subprocess

import pytest


def run(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=300)


def report_of(tpusim_bin, tmp_path, name, *args):
    result = run(tpusim_bin, "run", *args, "--out", str(tmp_path / name))
    assert result.returncode == 0, result.stderr
    return json.loads((tmp_path / name / "report.json").read_text())


def test_dp_alone_is_the_data_parallel_run(tpusim_bin, mlp_path, tmp_path):
    plain = report_of(tpusim_bin, tmp_path, "plain", mlp_path, "--topology", "4x4x4")
    dp = report_of(tpusim_bin, tmp_path, "dp", mlp_path, "--topology", "4x4x4", "--dp", "64")
    assert plain["total_cycles"] == dp["total_cycles"] == 90279
    assert dp["parallelism"] == {"dp": 64, "tp": 1, "pp": 1}


def test_tensor_parallel_splits_weights_and_groups_collectives(tpusim_bin, mlp_path, tmp_path):
    one = report_of(tpusim_bin, tmp_path, "one", mlp_path)
    peaks = []
    for tp in (2, 4):
        report = report_of(tpusim_bin, tmp_path, f"tp{tp}", mlp_path, "--topology", "4x4x4", "--tp", str(tp))
        assert report["parallelism"] == {"dp": 64 // tp, "tp": tp, "pp": 1}
        ici = report["interconnect"]
        assert ici["global_batch"] == 32 * 64 // tp  # a tensor-parallel group shares its examples
        groups = {(c["replicas"], c["group_stride"]) for c in ici["collectives"]}
        # fc2's partial sums over tp consecutive chips; gradients over the dp chips tp apart.
        assert groups == {(tp, 1), (64 // tp, tp)}
        peaks.append(report["memory"]["peak_bytes"])
    assert one["memory"]["peak_bytes"] > peaks[0] > peaks[1]


def test_tensor_parallel_reports_are_bit_identical_across_runs(tpusim_bin, mlp_path, tmp_path):
    args = (mlp_path, "--topology", "2x2x1", "--tp", "2")
    first = report_of(tpusim_bin, tmp_path, "a", *args)
    second = report_of(tpusim_bin, tmp_path, "b", *args)
    first.pop("wall_time_s", None), second.pop("wall_time_s", None)
    assert first["total_cycles"] == second["total_cycles"]
    assert json.dumps(first["interconnect"]) == json.dumps(second["interconnect"])


def test_tensor_parallel_under_mixed_precision_splits_the_f32_weights(tpusim_bin, mlp_path, tmp_path):
    # The weights a policy casts to its compute dtype split with their casts; under
    # mixed_float16 each chip's share of the finite check (a sum of its gradient shards) is
    # all-reduced over the group, so every chip skips or applies the same step.
    for policy in ("mixed_bfloat16", "mixed_float16"):
        whole = report_of(tpusim_bin, tmp_path, f"one-{policy}", mlp_path, "--precision", policy)
        split = report_of(tpusim_bin, tmp_path, f"tp-{policy}", mlp_path, "--topology", "2x1x1", "--tp", "2",
                          "--precision", policy)
        assert split["precision"] == policy and split["parallelism"]["tp"] == 2
        weights = split["memory"]["bytes_by_role"]["weight"]
        assert weights < 0.75 * whole["memory"]["bytes_by_role"]["weight"]
        names = [c["name"] for c in split["interconnect"]["collectives"]]
        checks = [n for n in names if ".grad_scaled.sum" in n]
        if policy == "mixed_float16":
            assert checks and all(c["bytes"] == 4 for c in split["interconnect"]["collectives"]
                                  if ".grad_scaled.sum" in c["name"])
        else:
            assert not checks


BAD_DEGREES = [
    (["--topology", "4x4x4", "--tp", "3"], 2, "--tp 3 does not divide the 64 chips of --topology 4x4x4"),
    (["--topology", "4x4x4", "--dp", "2", "--tp", "4"], 2,
     "--dp 2 x --tp 4 x --pp 1 is 8 chips, but --topology 4x4x4 has 64"),
    (["--topology", "4x4x4", "--dp", "5"], 2, "--dp 5 does not divide the 64 chips of --topology 4x4x4"),
    (["--tp", "2"], 2, "--tp 2 needs an ICI slice of its chips (--topology)"),
    (["--topology", "4x4x4", "--tp", "0"], 2, "--tp must be >= 1"),
    (["--topology", "4x4x4", "--dp", "-1"], 2, "--dp must be >= 1"),
    (["--topology", "3x1x1", "--tp", "3"], 4, "tensor parallel over 3 chips: no matmul pair splits evenly"),
    (["--topology", "2x1x1", "--pp", "2"], 2,
     "--pp 2 does not divide the 3 layers of mlp.onnx (a layer is a module with weights; docs/strategies.md)"),
]


@pytest.mark.parametrize("args,code,message", BAD_DEGREES)
def test_bad_degrees_give_one_line_errors(tpusim_bin, mlp_path, tmp_path, args, code, message):
    result = run(tpusim_bin, "run", mlp_path, *args, "--out", str(tmp_path))
    assert result.returncode == code, result.stderr
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_saved_program_keeps_its_tensor_parallel_degree(tpusim_bin, mlp_path, tmp_path):
    saved = tmp_path / "mlp_tp2.tpuprog"
    result = run(tpusim_bin, "compile", mlp_path, "--topology", "2x2x1", "--tp", "2", "-o", str(saved))
    assert result.returncode == 0, result.stderr
    report = report_of(tpusim_bin, tmp_path, "saved", str(saved))
    assert report["parallelism"] == {"dp": 2, "tp": 2, "pp": 1}
    again = run(tpusim_bin, "run", str(saved), "--tp", "4", "--out", str(tmp_path / "bad"))
    assert again.returncode == 2
    assert f"--tp 4 does not match {saved}, compiled for --tp 2; recompile the model" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1


def test_the_summary_names_the_chips_and_their_dp_x_tp_split(tpusim_bin, mlp_path, tmp_path):
    result = run(tpusim_bin, "run", str(mlp_path), "--topology", "2x2x1", "--tp", "2", "--no-progress", "--out",
                 str(tmp_path / "tp2"))
    assert result.returncode == 0, result.stderr
    assert "ICI          3d_torus 2x2x1, 4 chips (dp 2 x tp 2, global batch 64):" in result.stdout
