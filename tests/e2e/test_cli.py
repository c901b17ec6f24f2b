"""End-to-end tests of the tpusim CLI on the shipped trace, and its bad inputs."""
import hashlib
import json
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


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


def test_schema_1_program_runs_with_its_whole_instruction_names(tpusim_bin, tmp_path):
    # Written before schema 2, which names instructions by part (traces/program.proto).
    path = ROOT / "tests" / "data" / "programs" / "schema1_gemm_relu_training.tpuprog.txt"
    text = path.read_text()
    assert "schema_version: 1" in text
    stored = set(re.findall(r'^    name: "([^"]*)"$', text, re.MULTILINE))
    result = run(tpusim_bin, "run", str(path), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    names = {op["name"] for op in report["ops"]}
    assert names and names <= stored
    assert all(op["type"] for op in report["ops"])


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
    (["run", "{mlp}", "--steps", "1000000000"], 2, "--steps 1000000000 is above 10000000, the most a run simulates"),
    (["run", "{mlp}", "--set", "mxu.timing=pe_by_pe", "--set", "mxu.pe_by_pe_max_pe_cycles=1000000"], 5,
     "above mxu.pe_by_pe_max_pe_cycles = 1e+06"),
    (["run", "{mlp}", "--set", "chip.clock_mhz=0"], 2, "chip.clock_mhz must be > 0"),
    (["run", "{mlp}", "--set", "mxu.rows"], 2, "--set expects key=value"),
    (["run", "{mlp}", "--set", "mxu.rows=2048"], 2, "parameter mxu.rows must be <= 1024 (got 2048 PE)"),
    (["run", "{mlp}", "--set", "mxu.cols=0"], 2, "parameter mxu.cols must be >= 8 (got 0 PE)"),
    (["run", "{mlp}", "--set", "mxu.dataflow=row_stationary"], 2,
     "parameter mxu.dataflow must be one of weight_stationary, input_stationary, output_stationary"),
    (["run", "{mlp}", "--matmul-precision", "extreme"], 2, "unknown matmul precision 'extreme'"),
    (["run", "{mlp}", "--tiling-objective", "speed"], 2, "unknown tiling objective 'speed'"),
    (["run", "{mlp}", "--mode", "serving"], 2, "unknown mode 'serving'"),
    (["run", "{mlp}", "--batch", "-4"], 2, "--batch must be > 0"),
    (["run", "{mlp}", "--batch", "0"], 2, "--batch must be > 0"),
    (["run", "{mlp}", "--set", "hbm.capacity_gib=0.00001"], 5, "of HBM"),
    (["run", "{not_program}"], 3, "not a tpusim Program"),
    (["run"], 2, "missing MODEL"),
    (["run", "{mlp}", "--frobnicate"], 2, "unrecognised option"),
    (["frobnicate"], 2, "unknown command"),
    (["run", "{mlp}", "--optimizer", "rmsprop"], 2, "unknown optimizer 'rmsprop'"),
    (["run", "{mlp}", "--loss", "hinge"], 2, "unknown loss 'hinge'"),
    (["run", "{mlp}", "--remat", "some"], 2, "unknown rematerialization policy 'some'"),
    (["run", "{mlp}", "--warmup-steps", "-1"], 2, "warmup steps must be >= 0"),
    (["run", "{mlp}", "--lr", "0"], 2, "learning rate must be > 0"),
    (["run", "{mlp}", "--lr", "-0.5"], 2, "learning rate must be > 0"),
    (["run", "{mlp}", "--optimizer", "adam", "--beta1", "1"], 2, "beta1 (momentum) must be in [0, 1)"),
    (["run", "{mlp}", "--optimizer", "adam", "--beta2", "-0.1"], 2, "beta2 must be in [0, 1)"),
    (["run", "{mlp}", "--optimizer", "momentum", "--momentum", "1.5"], 2, "must be in [0, 1)"),
    (["run", "{mlp}", "--micro-batches", "5"], 2, "batch 32 does not divide into 5 micro-batches"),
    (["run", "{mlp}", "--micro-batches", "0"], 2, "micro-batches must be >= 1"),
    (["run", "{mlp}", "--optimizer", "sgd", "--nesterov"], 2, "--nesterov applies to the momentum optimizer"),
    # Bad ONNX models (write_bad_models): the one line names the file, the node or tensor, the problem.
    (["run", "{truncated}"], 3, "not an ONNX model"),
    (["run", "{zero_dim}"], 4, "tensor 'x' has shape [32,0] with a zero dimension"),
    (["run", "{huge_matmul}"], 3, "node 'y_node' (MatMul): tensor 'y_node:out' has shape [2097152,1048576] of 2199023255552"),
    (["run", "{opset99}"], 4, "opset 99 is newer than 21"),
    (["run", "{unknown_domain}"], 4, "node 'y_node' (Relu): domain 'com.example' is not supported"),
    (["run", "{raw_size}"], 3, "tensor 'w' has 30 bytes of raw data, expected 32"),
]


def write_bad_models(tmp_path, mlp_path):
    """Writes the bad models of BAD_INPUTS under tmp_path; returns their paths by name."""
    import onnx
    import onnx.helper as oh

    def model(nodes, inputs, initializers=(), opset=17, domain_opsets=()):
        graph = oh.make_graph(nodes, "bad", inputs, [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                              initializer=list(initializers))
        opsets = [oh.make_opsetid("", opset), *[oh.make_opsetid(d, 1) for d in domain_opsets]]
        return oh.make_model(graph, opset_imports=opsets)

    def x(*dims):
        return oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(dims))

    def shape_only(name, dims):  # a float initializer with a shape and no values
        tensor = onnx.TensorProto(name=name, data_type=onnx.TensorProto.FLOAT)
        tensor.dims.extend(dims)
        return tensor

    relu = oh.make_node("Relu", ["x"], ["y"], name="y_node")
    matmul = oh.make_node("MatMul", ["x", "w"], ["y"], name="y_node")
    raw_w = shape_only("w", [4, 2])
    raw_w.raw_data = bytes(30)  # 4 x 2 floats are 32 bytes
    models = {
        "zero_dim": model([relu], [x("batch", 0)]),
        "huge_matmul": model([matmul], [x(1 << 21, 1024)], [shape_only("w", [1024, 1 << 20])]),
        "opset99": model([relu], [x("batch", 4)], opset=99),
        "unknown_domain": model([oh.make_node("Relu", ["x"], ["y"], name="y_node", domain="com.example")],
                                [x("batch", 4)], domain_opsets=["com.example"]),
        "raw_size": model([matmul], [x("batch", 4)], [raw_w]),
    }
    paths = {}
    for name, m in models.items():
        paths[name] = tmp_path / (name + ".onnx")
        paths[name].write_bytes(m.SerializeToString())
    paths["truncated"] = tmp_path / "truncated.onnx"
    paths["truncated"].write_bytes(pathlib.Path(mlp_path).read_bytes()[: pathlib.Path(mlp_path).stat().st_size // 2])
    return paths


@pytest.mark.parametrize("args,code,message", BAD_INPUTS)
def test_bad_inputs_give_one_line_errors(tpusim_bin, mlp_path, tmp_path, args, code, message):
    not_onnx = tmp_path / "notes.onnx"
    not_onnx.write_text("this is a text file, not a model\n")
    not_program = tmp_path / "garbage.tpuprog"
    not_program.write_bytes(b"\x08\x96\x01garbage")
    bad_models = write_bad_models(tmp_path, mlp_path)
    args = [a.format(mlp=mlp_path, not_onnx=not_onnx, not_program=not_program, **bad_models) for a in args]
    result = run(tpusim_bin, *args, "--out", str(tmp_path / "out")) if args and args[0] == "run" and len(args) > 1 else run(tpusim_bin, *args)
    assert result.returncode == code, (result.returncode, result.stderr)
    assert message in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if "error" in line or "tpusim" in line]
    assert len(errors) >= 1
    assert "Traceback" not in result.stderr and "terminate" not in result.stderr
    if len(args) > 1 and args[1].startswith(str(tmp_path)) and args[1].endswith(".onnx"):
        assert args[1] in result.stderr, result.stderr  # the error names the file
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


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


def test_resnet50_step_matches_its_golden_summary_and_report_digests(tpusim_bin, tmp_path):
    """The one-chip speed case (docs/performance.md): its summary and the bytes of report.json
    and the CSVs, so that a change meant only for speed is seen to move no figure."""
    result = run(tpusim_bin, "run", str(ROOT / "traces" / "resnet50.onnx"), "--batch", "128", "--no-instructions",
                 "--no-progress", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    summary = "".join(line + "\n" for line in result.stdout.splitlines() if not line.startswith("report "))
    assert summary == (GOLDEN / "resnet50_tpuv4_training_b128.txt").read_text()
    for line in (GOLDEN / "resnet50_tpuv4_training_b128.sha256").read_text().splitlines():
        digest, name = line.split()
        assert hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() == digest, name


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
    result = run(tpusim_bin, "run", trace, "--hw", "tpuv4", "--batch", "128", "--no-instructions", "--out",
                 str(tmp_path))
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
    assert report["ops"] == []  # --no-instructions
    assert memory["unplanned_bytes"] > memory["capacity_bytes"]
    # By role: 128 images of 3 x 224 x 224 f32 and 128 int64 labels; the 25,557,032 parameters
    # in f32 plus batch normalization's running statistics (weights in the IR, not trained).
    roles = memory["bytes_by_role"]
    assert roles["input"] == 128 * 3 * 224 * 224 * 4 + 128 * 8
    assert 25557032 * 4 <= roles["weight"] < 25557032 * 4 * 1.01
    assert roles["optimizer_state"] == 0  # plain SGD
    assert 0 < memory["vmem_peak_bytes"] <= memory["vmem_capacity_bytes"] == vmem
    assert "HBM tensors  weights 0.095" in result.stdout and "VMEM peak" in result.stdout
    assert "top layers" in result.stdout


def test_resnet50_at_a_batch_beyond_hbm_is_a_clear_error(tpusim_bin, tmp_path):
    trace = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / "resnet50.onnx")
    result = run(tpusim_bin, "run", trace, "--hw", "tpuv4", "--batch", "512", "--out", str(tmp_path))
    assert result.returncode == 5
    assert "of HBM" in result.stderr and "largest live" in result.stderr and "--remat all" in result.stderr
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


@pytest.mark.parametrize("model", ZOO)
def test_zoo_model_trains_at_its_default_batch(tpusim_bin, tmp_path, model):
    """At the default batch the activations outgrow VMEM, so every fused group streams in tiles."""
    trace = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / f"{model}.onnx")
    result = run(tpusim_bin, "run", trace, "--hw", "tpuv4", "--no-instructions", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["mode"] == "training" and report["total_cycles"] > 0


def vpu_element_ops(report):
    return sum(unit["element_ops"] for name, unit in report["units"].items() if name.endswith(".vpu"))


def hbm_bytes(report):
    hbm = report["units"]["chip0.hbm"]
    return hbm["bytes_read"], hbm["bytes_written"]


def run_report(tpusim_bin, mlp_path, out, *args):
    result = run(tpusim_bin, "run", mlp_path, "--hw", "tpuv4", "--out", str(out), *args)
    assert result.returncode == 0, result.stderr
    return json.loads((out / "report.json").read_text())


# traces/mlp.onnx: 784x512 + 512 + 512x512 + 512 + 512x10 + 10 weights.
MLP_WEIGHTS = 784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10  # 669706


def test_adam_adds_its_closed_form_update_cost(tpusim_bin, mlp_path, tmp_path):
    sgd = run_report(tpusim_bin, mlp_path, tmp_path / "sgd")
    adam = run_report(tpusim_bin, mlp_path, tmp_path / "adam", "--optimizer", "adam", "--lr", "1e-3")
    # Per weight element SGD costs 2 VPU ops; Adam's m 3 + v 4 + weight 9 = 16; plus 1 for the
    # step counter: 14 x 669706 + 1 = 9375885 more element ops (vector_costs.hpp).
    assert vpu_element_ops(adam) - vpu_element_ops(sgd) == 14 * MLP_WEIGHTS + 1
    # HBM: the m and v updates read g and their state (8 bytes per element each; no weight
    # decay, so not w), the weight update also reads m' and v' (8); each of the 18 updates
    # (6 weights x 3) reads the 8-byte step on both cores, and the increment reads it once:
    # 24 x 669706 + 288 + 8. Writes: m' and v' (8 per element) and the step (8).
    (sgd_read, sgd_written), (adam_read, adam_written) = hbm_bytes(sgd), hbm_bytes(adam)
    assert adam_read - sgd_read == 24 * MLP_WEIGHTS + 18 * 2 * 8 + 8
    assert adam_written - sgd_written == 8 * MLP_WEIGHTS + 8
    assert adam["total_cycles"] > sgd["total_cycles"]


def test_micro_batches_repeat_the_mxu_work_at_the_smaller_batch(tpusim_bin, mlp_path, tmp_path):
    full = run_report(tpusim_bin, mlp_path, tmp_path / "k1")
    micro = run_report(tpusim_bin, mlp_path, tmp_path / "k4", "--micro-batches", "4")
    assert micro["batch"] == 32
    # Matmul FLOPs are linear in the batch: 4 micro-batches of 8 do the work of one of 32.
    assert mxu_flops_by_type(micro) == mxu_flops_by_type(full)
    mxu = lambda r: sum(1 for op in r["ops"] if op["unit_kind"] == "mxu")  # noqa: E731
    assert mxu(micro) == 4 * mxu(full)
    updates = [op for op in micro["ops"] if op["type"] == "SgdUpdate" and op["unit_kind"] == "vpu"]
    assert len(updates) == len([op for op in full["ops"] if op["type"] == "SgdUpdate" and op["unit_kind"] == "vpu"])


@pytest.mark.parametrize(
    "args",
    [
        ["--optimizer", "momentum", "--nesterov", "--warmup-steps", "100"],
        ["--optimizer", "adam", "--adamw", "--weight-decay", "0.01"],
        ["--optimizer", "adagrad"],
        ["--optimizer", "lars", "--weight-decay", "1e-4"],
        ["--loss", "mse", "--optimizer", "adam", "--lr", "1e-3", "--warmup-steps", "100", "--micro-batches", "4",
         "--remat", "all"],
    ],
)
def test_training_options_simulate(tpusim_bin, mlp_path, tmp_path, args):
    report = run_report(tpusim_bin, mlp_path, tmp_path, *args)
    assert report["total_cycles"] > 0


@pytest.mark.parametrize("dataflow", ["weight_stationary", "input_stationary", "output_stationary"])
@pytest.mark.parametrize("buffering", ["double", "single"])
def test_pe_by_pe_mode_gives_the_closed_form_cycles(tpusim_bin, tmp_path, dataflow, buffering):
    """The same step on a small array, timed by the closed form and by stepping every PE."""
    import onnx
    import onnx.helper as oh
    graph = oh.make_graph([oh.make_node("MatMul", ["x", "w"], ["y"])], "mm",
                          [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [40, 24]),
                           oh.make_tensor_value_info("w", onnx.TensorProto.FLOAT, [24, 36])],
                          [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [40, 36])])
    path = tmp_path / "mm.onnx"
    path.write_bytes(oh.make_model(graph).SerializeToString())
    reports = {}
    for timing in ("closed_form", "pe_by_pe"):
        out = tmp_path / timing
        result = run(tpusim_bin, "run", str(path), "--mode", "inference", "--out", str(out),
                     "--set", "mxu.rows=8", "--set", "mxu.cols=16", "--set", f"mxu.dataflow={dataflow}",
                     "--set", f"mxu.register_buffering={buffering}", "--set", f"mxu.timing={timing}")
        assert result.returncode == 0, result.stderr
        reports[timing] = json.loads((out / "report.json").read_text())
    closed, pe = reports["closed_form"], reports["pe_by_pe"]
    assert closed["total_cycles"] == pe["total_cycles"]
    assert [op["end_cycle"] for op in closed["ops"]] == [op["end_cycle"] for op in pe["ops"]]
    for name, unit in closed["units"].items():
        if ".mxu" in name:
            for stat in ("busy_cycles", "stream_cycles", "weight_load_stall_cycles", "fill_drain_cycles", "folds"):
                assert unit[stat] == pe["units"][name][stat], (name, stat)


def test_zoo_shows_mxu_utilization_and_mapping_per_op(tpusim_bin, tmp_path):
    trace = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / "bert_base.onnx")
    result = run(tpusim_bin, "run", trace, "--batch", "1", "--no-instructions", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "MXU          MAC utilization" in result.stdout
    assert "top MXU ops (busy cycles over all MXUs, mapping efficiency, MAC utilization while busy)" in result.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    mxu_ops = [op for op in report["per_op"] if "mxu_folds" in op]
    assert len(mxu_ops) > 50
    for op in mxu_ops:
        assert 0 < op["mxu_mapping_efficiency"] <= 1
        assert 0 < op["mxu_mac_utilization"] <= 1
        assert op["mxu_stream_cycles"] + op["mxu_weight_load_stall_cycles"] + op["mxu_fill_drain_cycles"] == \
            op["mxu_busy_cycles"]
        assert "mxu_split=" in op["tiling"]


def test_steps_fed_by_a_serial_host_starve_the_chip_and_a_parallel_one_recovers(tpusim_bin, tmp_path):
    """The input-bound case (docs/host.md) on the simulated ResNet-50 step at batch 128."""
    trace = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / "resnet50.onnx")
    hosts = {}
    for name, threads, prefetch in (("serial", 1, 0), ("parallel", 32, 2)):
        out = tmp_path / name
        result = run(tpusim_bin, "run", trace, "--batch", "128", "--no-instructions", "--steps", "20",
                     "--set", f"host.num_parallel_calls={threads}", "--set", f"host.prefetch_batches={prefetch}",
                     "--out", str(out))
        assert result.returncode == 0, result.stderr
        assert "host         20 steps" in result.stdout
        hosts[name] = json.loads((out / "report.json").read_text())["host"]
    serial, parallel = hosts["serial"], hosts["parallel"]
    compute = serial["step_compute_s"]
    # Serial, nothing prefetched: each step maps its 128 examples one after another at 2 ms
    # (the first example's read, 110,000 B at 2 GB/s, comes first), sends the batch over
    # PCIe (128 x 602,112 B at 15.75 GB/s + 2 us) and only then computes.
    batch_bytes = 128 * 3 * 224 * 224 * 4
    expected = 128 * 2e-3 + 110000 / 2e9 + batch_bytes / 15.75e9 + 2e-6 + compute
    assert serial["mean_step_s"] == pytest.approx(expected, rel=1e-3)
    assert serial["bottleneck"] == "host map" and serial["device_utilization"] < 0.5
    # In parallel, only the first step waits for its batch (128 examples over 32 threads at 2 ms).
    assert parallel["bottleneck"] == "device" and parallel["device_utilization"] > 0.9
    assert parallel["mxu_mac_utilization"] > 2 * serial["mxu_mac_utilization"]
    assert serial["input_stall_cycles"] == round(serial["input_stall_s"] * 1050e6)  # tpuv4's clock
    assert serial["input_stall_cycles"] > 0
