"""`tpusim reference`: one step run for real on a reference backend, timed per op."""
import json
import pathlib
import subprocess

import numpy as np
import pytest

TRACES = pathlib.Path(__file__).resolve().parents[2] / "traces"
MLP = str(TRACES / "mlp.onnx")


def cli(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=120)


def reference(tpusim_bin, out, *args):
    result = cli(tpusim_bin, "reference", MLP, "--batch", "8", "--out", str(out), "--repeats", "3", *args)
    assert result.returncode == 0, result.stderr
    return json.loads((out / "report.json").read_text())


def outputs(out, section):
    return {e["name"]: np.load(out / e["file"]) for e in section}


def test_cpu_reference_report_has_a_timed_row_per_op(tpusim_bin, tmp_path):
    report = reference(tpusim_bin, tmp_path)
    assert report["kind"] == "reference" and report["backend"] == "cpu" and report["model"] == "mlp.onnx"
    assert report["timing"]["warmup"] == 1 and report["timing"]["repeats"] == 3
    ops = report["per_op"]
    assert ops[0]["op"] == "/0/Gemm" and all(op["time_s"] > 0 for op in ops)
    assert all("kernel" not in op for op in ops)  # CUDA only: the CPU runs the executor's own loops
    assert report["step_time_s"] == sum(op["time_s"] for op in ops)
    assert report["peak_memory_bytes"] > 784 * 8 * 4  # at least the f32 image batch
    assert report["peak_memory_method"].startswith("tensors at their dtype's size, per replica, each held")
    # The simulator's per-op rows use the same op names.
    sim = tmp_path / "sim"
    run = cli(tpusim_bin, "run", MLP, "--batch", "8", "--out", str(sim), "--no-instructions")
    assert run.returncode == 0, run.stderr
    sim_ops = {op["op"] for op in json.loads((sim / "report.json").read_text())["per_op"]}
    assert "/0/Gemm" in sim_ops and len(sim_ops & {op["op"] for op in ops}) >= len(sim_ops) // 2


def test_mxu_numerics_equal_the_functional_run_bit_for_bit(tpusim_bin, tmp_path):
    """Same inputs (seed), same rounding and summation order: the same bits."""
    sim = tmp_path / "sim"
    run = cli(tpusim_bin, "run", MLP, "--batch", "8", "--out", str(sim), "--functional", "--seed", "3")
    assert run.returncode == 0, run.stderr
    functional = outputs(sim, json.loads((sim / "report.json").read_text())["functional"]["outputs"])
    ref = outputs(tmp_path / "ref", reference(tpusim_bin, tmp_path / "ref", "--numerics", "mxu", "--seed", "3")["outputs"])
    assert functional.keys() == ref.keys()
    for name, value in functional.items():
        assert np.array_equal(value, ref[name]), name


def test_plain_f32_reference_is_within_one_bf16_pass(tpusim_bin, tmp_path):
    """The f32 kernels against the MXU's one bf16 pass: normwise error under 2e-2 (bf16's 2^-8 unit
    roundoff times the few hundred terms' growth seen in test_functional), and not exact."""
    mxu = outputs(tmp_path / "m", reference(tpusim_bin, tmp_path / "m", "--numerics", "mxu")["outputs"])
    f32 = outputs(tmp_path / "f", reference(tpusim_bin, tmp_path / "f")["outputs"])
    for name in ("logits", "0.weight:updated"):
        error = float(np.abs(mxu[name].astype(np.float64) - f32[name]).max() / np.abs(f32[name]).max())
        assert 1e-6 < error < 2e-2, (name, error)


def test_bad_reference_requests_fail_with_one_line(tpusim_bin, tmp_path):
    cases = [(["--backend", "tpu"], 2, "unknown backend 'tpu'"), (["--numerics", "fast"], 2, "unknown numerics"),
             (["--repeats", "0"], 2, "--repeats must be >= 1"), (["--warmup", "-1"], 2, "--warmup must be >= 0")]
    for args, code, text in cases:
        result = cli(tpusim_bin, "reference", MLP, "--out", str(tmp_path), *args)
        assert result.returncode == code and text in result.stderr, (args, result.stderr)
        assert result.stderr.count("\n") == 1
    missing = cli(tpusim_bin, "reference", str(tmp_path / "none.onnx"), "--out", str(tmp_path))
    assert missing.returncode == 3 and "does not exist" in missing.stderr


def test_cuda_backend_runs_or_says_why_not(tpusim_bin, tmp_path):
    """With a GPU: a timed row per op. Without one: exit 6; in a build without nvcc: exit 4."""
    result = cli(tpusim_bin, "reference", MLP, "--batch", "8", "--backend", "cuda", "--out", str(tmp_path))
    if result.returncode == 0:
        report = json.loads((tmp_path / "report.json").read_text())
        assert report["backend"] == "cuda" and "CUDA events" in report["timing"]["method"]
        assert report["per_op"] and all(op["time_s"] > 0 for op in report["per_op"])
        assert all(op["kernel"] for op in report["per_op"])  # what ran each op: cuBLAS, cuDNN or tpusim's
        return
    assert result.returncode in (4, 6), result.stderr
    expected = "no CUDA device found" if result.returncode == 6 else "built without CUDA"
    assert expected in result.stderr and result.stderr.count("\n") == 1


def test_cuda_backend_names_an_op_it_cannot_run_on_any_machine(tpusim_bin, tmp_path):
    """The model's ops are checked before a GPU is sought (and in a build without CUDA too): a
    MatMul broadcasting an operand over part of the batch is refused (exit 4) on any machine."""
    import onnx
    import onnx.helper as oh

    weight = oh.make_tensor("w", onnx.TensorProto.FLOAT, [3, 8, 2], [0.5] * 48)
    graph = oh.make_graph([oh.make_node("MatMul", ["x", "w"], ["y"], name="partial_batch")], "partial",
                          [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 4, 8])],
                          [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3, 4, 2])], initializer=[weight])
    model = tmp_path / "partial.onnx"
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)]), model)
    result = cli(tpusim_bin, "reference", str(model), "--mode", "inference", "--backend", "cuda",
                 "--out", str(tmp_path / "out"))
    assert result.returncode == 4, result.stderr
    assert "the CUDA executor cannot run op 'partial_batch' (MatMul)" in result.stderr, result.stderr
    assert "use --backend cpu" in result.stderr and result.stderr.count("\n") == 1
    assert cli(tpusim_bin, "reference", str(model), "--mode", "inference", "--backend", "cpu",
               "--out", str(tmp_path / "cpu")).returncode == 0


def test_cuda_backend_takes_int8_inference(tpusim_bin, tmp_path):
    """--precision int8's int8 x int8 MatMuls into int32 pass the CUDA executor's checks: with a GPU
    it runs, without one it stops for want of a device (exit 6), never for the op."""
    result = cli(tpusim_bin, "reference", MLP, "--batch", "8", "--mode", "inference", "--precision", "int8",
                 "--backend", "cuda", "--out", str(tmp_path))
    assert result.returncode in (0, 4, 6), result.stderr
    assert "cannot run op" not in result.stderr, result.stderr
    if result.returncode == 0:
        report = json.loads((tmp_path / "report.json").read_text())
        matmuls = [op["kernel"] for op in report["per_op"] if op["type"] == "MatMul"]
        assert matmuls and all("int8" in kernel for kernel in matmuls), matmuls


def test_cuda_backend_refuses_mxu_numerics(tpusim_bin, tmp_path):
    result = cli(tpusim_bin, "reference", MLP, "--backend", "cuda", "--numerics", "mxu", "--out", str(tmp_path))
    assert result.returncode == 4 and "--numerics mxu runs on the CPU backend only" in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("args,code,message", [
    (["--replicas", "0"], 2, "--replicas must be at least 1"),
    (["--topology", "2x1x1"], 4, "tpusim reference runs on this machine's devices: --topology, --dp, --tp and --pp "
                                 "describe the simulated slice; use --replicas N"),
    (["--tp", "2"], 4, "use --replicas N for data parallel over N replicas"),
])
def test_replicas_and_slices_are_one_line_errors(tpusim_bin, tmp_path, args, code, message):
    result = cli(tpusim_bin, "reference", MLP, "--batch", "8", *args, "--out", str(tmp_path))
    assert result.returncode == code and message in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1


def test_cuda_replicas_need_that_many_gpus(tpusim_bin, tmp_path):
    result = cli(tpusim_bin, "reference", MLP, "--batch", "8", "--backend", "cuda", "--replicas", "2",
                 "--repeats", "1", "--out", str(tmp_path))
    if result.returncode == 0:  # a machine with two GPUs: NCCL summed the gradients
        report = json.loads((tmp_path / "report.json").read_text())
        assert report["replicas"] == 2 and len(report["replica_step_time_s"]) == 2
        assert any(op["type"] == "AllReduce" for op in report["per_op"])
        return
    assert result.returncode in (4, 6), result.stderr
    expected = ("no CUDA device found", "CUDA devices, and", "built without CUDA")
    assert any(e in result.stderr for e in expected) and result.stderr.count("\n") == 1
