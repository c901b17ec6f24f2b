"""End-to-end tests of the tpusim CLI on the shipped trace, and its bad inputs."""
import json
import pathlib
import subprocess

import pytest


def run(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=120)


def test_run_mlp_training_writes_report(tpusim_bin, mlp_path, tmp_path):
    result = run(tpusim_bin, "run", mlp_path, "--hw", "tpuv4", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "total cycles" in result.stdout
    assert "chip0.core0.mxu0" in result.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["schema_version"] == 1
    assert report["model"] == "mlp.onnx"
    assert report["mode"] == "training"
    assert report["batch"] == 32
    for key in ("total_cycles", "clock_hz", "step_time_s", "units", "ops"):
        assert key in report
    assert report["units"]["chip0.core0.mxu0"]["busy_cycles"] > 0
    op = report["ops"][0]
    assert set(op) >= {"name", "type", "unit", "start_cycle", "end_cycle", "flops", "bytes"}


def test_reports_are_bit_identical_across_runs(tpusim_bin, mlp_path, tmp_path):
    for name in ("a", "b"):
        assert run(tpusim_bin, "run", mlp_path, "--batch", "64", "--out", str(tmp_path / name)).returncode == 0
    assert (tmp_path / "a" / "report.json").read_bytes() == (tmp_path / "b" / "report.json").read_bytes()


def test_compiled_program_runs_like_the_model(tpusim_bin, mlp_path, tmp_path):
    direct = tmp_path / "direct"
    assert run(tpusim_bin, "run", mlp_path, "--hw", "tpuv5p", "--out", str(direct)).returncode == 0
    expected = (direct / "report.json").read_bytes()
    for program in ("mlp.tpuprog", "mlp.tpuprog.txt"):
        path = tmp_path / program
        compiled = run(tpusim_bin, "compile", mlp_path, "--hw", "tpuv5p", "-o", str(path))
        assert compiled.returncode == 0, compiled.stderr
        out = tmp_path / (program + ".out")
        result = run(tpusim_bin, "run", str(path), "--hw", "tpuv5p", "--out", str(out))
        assert result.returncode == 0, result.stderr
        assert (out / "report.json").read_bytes() == expected


def test_program_batch_and_mode_cannot_be_changed(tpusim_bin, mlp_path, tmp_path):
    path = tmp_path / "mlp.tpuprog"
    assert run(tpusim_bin, "compile", mlp_path, "-o", str(path)).returncode == 0
    rebatched = run(tpusim_bin, "run", str(path), "--batch", "64", "--out", str(tmp_path / "o"))
    assert rebatched.returncode == 2
    assert "compiled for batch 32" in rebatched.stderr
    remoded = run(tpusim_bin, "run", str(path), "--mode", "inference", "--out", str(tmp_path / "o"))
    assert remoded.returncode == 2
    assert "compiled for training" in remoded.stderr


def test_hw_list_and_show(tpusim_bin):
    listed = run(tpusim_bin, "hw", "list")
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["tpuv4", "tpuv5e", "tpuv5p"]
    shown = run(tpusim_bin, "hw", "show", "tpuv4")
    assert shown.returncode == 0
    line = next(l for l in shown.stdout.splitlines() if l.startswith("hbm.bandwidth_gbps"))
    assert line.split()[1:3] == ["1200", "GB/s"]
    assert "peak HBM bandwidth" in line
    overridden = run(tpusim_bin, "hw", "show", "tpuv4", "--set", "mxu.rows=256")
    assert next(l for l in overridden.stdout.splitlines() if l.startswith("mxu.rows")).split()[1] == "256"


def test_hw_params_lists_every_parameter_with_defaults(tpusim_bin):
    result = run(tpusim_bin, "hw", "params")
    assert result.returncode == 0
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[1:]}
    assert "mxu.rows" in rows and "hbm.bandwidth_gbps" in rows and "ici.link_bandwidth_gbps" in rows
    assert rows["mxu.rows"].split()[1:3] == ["128", "PE"]


def test_log_level_option(tpusim_bin, mlp_path, tmp_path):
    quiet = run(tpusim_bin, "run", mlp_path, "--out", str(tmp_path), "--log-level", "info")
    assert quiet.returncode == 0
    assert "batch size 32" in quiet.stderr
    bad = run(tpusim_bin, "run", mlp_path, "--out", str(tmp_path), "--log-level", "loud")
    assert bad.returncode == 2
    assert "unknown log level 'loud'" in bad.stderr


BAD_INPUTS = [
    # (arguments, expected exit code, text the one-line error must contain)
    (["run", "/no/such/model.onnx"], 3, "does not exist"),
    (["run", "{not_onnx}"], 3, "not an ONNX model"),
    (["run", "{mlp}", "--hw", "tpuv9"], 2, "unknown hardware preset 'tpuv9'"),
    (["run", "{mlp}", "--set", "mxu.rowz=256"], 2, "did you mean 'mxu.rows'"),
    (["run", "{mlp}", "--set", "hbm.bandwidth_gbps=0"], 2, "hbm.bandwidth_gbps must be > 0"),
    (["run", "{mlp}", "--set", "chip.clock_mhz=0"], 2, "chip.clock_mhz must be > 0"),
    (["run", "{mlp}", "--set", "mxu.rows"], 2, "--set expects key=value"),
    (["run", "{mlp}", "--mode", "serving"], 2, "unknown mode 'serving'"),
    (["run", "{mlp}", "--batch", "-4"], 2, "--batch must be > 0"),
    (["run", "{mlp}", "--batch", "0"], 2, "--batch must be > 0"),
    (["run", "{mlp}", "--set", "hbm.capacity_gib=0.00001"], 5, "of HBM"),
    (["run", "{not_program}"], 3, "not a tpusim Program"),
    (["run"], 2, "missing MODEL"),
    (["run", "{mlp}", "--frobnicate"], 2, "unrecognised option"),
    (["frobnicate"], 2, "unknown command"),
]


@pytest.mark.parametrize("args,code,message", BAD_INPUTS)
def test_bad_inputs_give_one_line_errors(tpusim_bin, mlp_path, tmp_path, args, code, message):
    not_onnx = tmp_path / "notes.onnx"
    not_onnx.write_text("this is a text file, not a model\n")
    not_program = tmp_path / "garbage.tpuprog"
    not_program.write_bytes(b"\x08\x96\x01garbage")
    args = [a.format(mlp=mlp_path, not_onnx=not_onnx, not_program=not_program) for a in args]
    result = run(tpusim_bin, *args, "--out", str(tmp_path / "out")) if args and args[0] == "run" and len(args) > 1 else run(tpusim_bin, *args)
    assert result.returncode == code, (result.returncode, result.stderr)
    assert message in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if "error" in line or "tpusim" in line]
    assert len(errors) >= 1
    assert "Traceback" not in result.stderr and "terminate" not in result.stderr


GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden"


@pytest.mark.parametrize(
    "golden,args",
    [
        ("mlp_tpuv4_training.txt", ["--hw", "tpuv4"]),
        ("mlp_tpuv5e_inference_b128.txt", ["--hw", "tpuv5e", "--mode", "inference", "--batch", "128"]),
    ],
)
def test_summary_matches_golden(tpusim_bin, mlp_path, tmp_path, golden, args):
    """A change to any timing model shows here; regenerate with scripts/update-golden.sh
    after checking that the new figures are the intended ones."""
    result = run(tpusim_bin, "run", mlp_path, *args, "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    summary = "".join(line + "\n" for line in result.stdout.splitlines() if not line.startswith("report "))
    assert summary == (GOLDEN / golden).read_text()


def mxu_flops_by_type(report):
    flops = {}
    for op in report["ops"]:
        if op["unit_kind"] == "mxu":
            flops[op["type"]] = flops.get(op["type"], 0) + op["flops"]
    return flops


def test_resnet50_trace_trains_at_batch_1(tpusim_bin, tmp_path):
    trace = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / "resnet50.onnx")
    result = run(tpusim_bin, "run", trace, "--hw", "tpuv4", "--batch", "1", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    flops = mxu_flops_by_type(json.loads((tmp_path / "report.json").read_text()))
    # torchvision's model card gives ResNet-50 4.09 GFLOPS per 224x224 image, counted as
    # multiply-adds: 2 x 4.09e9 flops of convolutions forward, and as many for the weight gradient.
    assert flops["Conv"] == pytest.approx(2 * 4.09e9, rel=5e-3)
    assert flops["ConvGradWeight"] == flops["Conv"]
    # The input gradient skips the first convolution (the image needs none):
    # 64 x 3 x 7 x 7 weights over 112 x 112 outputs = 118,013,952 multiply-adds.
    assert flops["ConvGradInput"] == flops["Conv"] - 2 * 118013952


def test_resnet50_trains_at_batch_128_with_per_op_and_per_layer_time(tpusim_bin, tmp_path):
    trace = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / "resnet50.onnx")
    result = run(tpusim_bin, "run", trace, "--hw", "tpuv4", "--batch", "128", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    # Forward, backward and optimizer ops all ran, tiled to fit VMEM.
    types = {op["type"] for op in report["per_op"]}
    assert {"Conv", "ConvGradInput", "ConvGradWeight", "SgdUpdate", "SoftmaxCrossEntropy"} <= types
    vmem = 16 * 1024 * 1024
    assert all(op["vmem_bytes"] <= vmem for op in report["per_op"])
    assert max(op["tiles"] for op in report["per_op"]) > 100
    # 128 images x the forward MACs, twice for flops: the tiles add up to the whole.
    flops = sum(op["flops"] for op in report["per_op"] if op["type"] == "Conv")
    assert flops == pytest.approx(128 * 2 * 4.09e9, rel=5e-3)
    # Per-layer figures sum the per-op ones.
    layers = {layer["layer"]: layer for layer in report["layers"]}
    conv1 = [op for op in report["per_op"] if op["layer"] == "/conv1"]
    assert layers["/conv1"]["mxu_busy_cycles"] == sum(op["mxu_busy_cycles"] for op in conv1)
    assert any(op["type"] == "SgdUpdate" for op in conv1)  # the optimizer step joins its weight's layer
    # Buffers are reused: the step fits tpuv4's 32 GiB, which keeping every tensor would not.
    memory = report["memory"]
    assert memory["live_peak_bytes"] <= memory["peak_bytes"] <= memory["capacity_bytes"]
    assert memory["unplanned_bytes"] > memory["capacity_bytes"]
    assert "top layers" in result.stdout


def test_resnet50_at_a_batch_beyond_hbm_is_a_clear_error(tpusim_bin, tmp_path):
    trace = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / "resnet50.onnx")
    result = run(tpusim_bin, "run", trace, "--hw", "tpuv4", "--batch", "512", "--out", str(tmp_path))
    assert result.returncode == 5
    assert "of HBM" in result.stderr and "largest live" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


ZOO = ["resnet50", "vit_b16", "bert_base", "gpt2_small", "dlrm", "mlp"]


@pytest.mark.parametrize("mode", ["inference", "training"])
@pytest.mark.parametrize("model", ZOO)
def test_zoo_model_runs_at_batch_1(tpusim_bin, tmp_path, model, mode):
    """Every zoo model (scripts/export_models.py) compiles and simulates one step at batch 1."""
    trace = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / f"{model}.onnx")
    result = run(tpusim_bin, "run", trace, "--hw", "tpuv4", "--mode", mode, "--batch", "1", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["mode"] == mode and report["batch"] == 1
    assert report["total_cycles"] > 0
    if mode == "training":
        assert any(op["type"] == "SgdUpdate" for op in report["ops"])
