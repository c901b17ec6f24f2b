"""The tpusim CLI on HLO text: a hand-written MLP training step end to end
(MXU flops against the closed form), and bad modules, each with its one-line
error and exit code (3 invalid input, 4 unsupported, 2 invalid config)."""
import json
import pathlib
import subprocess

import pytest

HLO = pathlib.Path(__file__).resolve().parents[1] / "hlo"


def run(tpusim_bin, *args):
    return subprocess.run([tpusim_bin, *args], capture_output=True, text=True, timeout=120)


def mxu_flops(report):
    return sum(op["flops"] for op in report["ops"] if op["unit_kind"] == "mxu")


def test_mlp_train_step_runs_end_to_end(tpusim_bin, tmp_path):
    result = run(tpusim_bin, "run", str(HLO / "mlp_train_step.hlo"), "--hw", "tpuv4", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "total cycles" in result.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["model"] == "mlp_train_step.hlo"
    assert report["mode"] == "as-written"
    assert report["total_cycles"] > 0
    # Five dots, 2*M*K*N each: forward x.w1 (8x16x32) and a1.w2 (8x32x4); backward
    # a1^T.dz2 (32x8x4), dz2.w2^T (8x4x32) and x^T.dz1 (16x8x32).
    expected = 2 * (8 * 16 * 32 + 8 * 32 * 4 + 32 * 8 * 4 + 8 * 4 * 32 + 16 * 8 * 32)
    assert expected == 22528
    assert mxu_flops(report) == expected


def test_batched_dot_and_conv_flops(tpusim_bin, tmp_path):
    result = run(tpusim_bin, "run", str(HLO / "batched_dot.hlo"), "--out", str(tmp_path / "dot"))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "dot" / "report.json").read_text())
    assert mxu_flops(report) == 2 * (3 * 4 * 5 * 6 + 3 * 2 * 5 * 7)  # 1140
    result = run(tpusim_bin, "run", str(HLO / "conv_layouts.hlo"), "--out", str(tmp_path / "conv"))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "conv" / "report.json").read_text())
    # Implicit GEMM MACs per conv, N*OH*OW x C/g*KH*KW x O: 2*5*5 x 27 x 4, 2*4*4 x 18 x 6,
    # 2*7*7 x 12 x 5, 2*5*5 x 36 x 3, 2*9*9 x 36 x 3 over the dilated input (zeros included),
    # 2*9*9 x 27 x 4, and the weight gradient's 3*3*3 x 2*81 x 4 (batch c, features n, window 9x9).
    assert mxu_flops(report) == 2 * (2 * 5 * 5 * 27 * 4 + 2 * 4 * 4 * 18 * 6 + 2 * 7 * 7 * 12 * 5 + 2 * 5 * 5 * 36 * 3 +
                                     2 * 9 * 9 * 36 * 3 + 2 * 9 * 9 * 27 * 4 + 3 * 3 * 3 * 2 * 81 * 4)


def test_reports_are_bit_identical_across_runs(tpusim_bin, tmp_path):
    for name in ("a", "b"):
        assert run(tpusim_bin, "run", str(HLO / "slice_select.hlo"), "--out", str(tmp_path / name)).returncode == 0
    assert (tmp_path / "a" / "report.json").read_bytes() == (tmp_path / "b" / "report.json").read_bytes()


GOOD_HEAD = "HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"

BAD_MODULES = {
    "truncated": ("HloModule m\nENTRY main {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p)\n", 3,
                  ["truncated.hlo:5:1", "computation 'main'", "not closed"]),
    "unknown_opcode": ("HloModule m\nENTRY main {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] frobnicate(p)\n}\n",
                       3, ["unknown_opcode.hlo:4:3", "instruction 'n'", "unknown opcode 'frobnicate'"]),
    "unsupported_opcode": ("HloModule m\nENTRY main {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] cbrt(p)\n}\n",
                           4, ["unsupported_opcode.hlo:4:3", "instruction 'n'", "opcode 'cbrt' is not supported"]),
    "undefined_operand": ("HloModule m\nENTRY main {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] add(p, q)\n}\n",
                          3, ["undefined_operand.hlo:4:26", "instruction 'n'", "operand 'q' is not defined"]),
    "shape_mismatch": ("HloModule m\nENTRY main {\n  a = f32[2,3] parameter(0)\n  b = f32[3,2] parameter(1)\n"
                       "  ROOT c = f32[2,3] add(a, b)\n}\n", 3,
                       ["shape_mismatch.hlo:5:3", "instruction 'c'", "f32[2,3] and f32[3,2]"]),
    "declared_shape": ("HloModule m\nENTRY main {\n  a = f32[2,3] parameter(0)\n  ROOT c = f32[3,2] negate(a)\n}\n",
                       3, ["declared_shape.hlo:4:3", "instruction 'c'", "declared shape f32[3,2]"]),
    "unknown_computation": (GOOD_HEAD + "ENTRY main {\n  a = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
                            "  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=mul\n}\n", 3,
                            ["unknown_computation.hlo:12:3", "instruction 'r'", "to_apply=mul names no computation"]),
    "cycle": ("HloModule m\nENTRY main {\n  p = f32[2] parameter(0)\n  a = f32[2] add(p, b)\n  b = f32[2] negate(a)\n"
              "  ROOT c = f32[2] negate(b)\n}\n", 3, ["cycle.hlo:", "cycle", "b -> a -> b"]),
    "bad_layout": ("HloModule m\nENTRY main {\n  ROOT p = f32[2,3]{0,0} parameter(0)\n}\n", 3,
                   ["bad_layout.hlo:3:20", "not a permutation"]),
    "bad_dimension": ("HloModule m\nENTRY main {\n  ROOT p = f32[2,x] parameter(0)\n}\n", 3,
                      ["bad_dimension.hlo:3:18", "expected a dimension size"]),
    "bad_element_type": ("HloModule m\nENTRY main {\n  ROOT p = flot32[2] parameter(0)\n}\n", 3,
                         ["bad_element_type.hlo:3:3", "unknown element type 'flot32'"]),
    "all_reduce_4": (GOOD_HEAD + "ENTRY main {\n  a = f32[4] parameter(0)\n"
                     "  ROOT r = f32[4] all-reduce(a), replica_groups={{0,1,2,3}}, to_apply=add\n}\n", 4,
                     ["unsupported: all-reduce across 4 replicas in an HLO module"]),
}


@pytest.mark.parametrize("name", sorted(BAD_MODULES))
def test_bad_modules_give_one_line_errors(tpusim_bin, tmp_path, name):
    text, code, fragments = BAD_MODULES[name]
    path = tmp_path / (name + ".hlo")
    path.write_text(text)
    result = run(tpusim_bin, "run", str(path), "--out", str(tmp_path / "out"))
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize("name", ["jit_f.hlo", "jit_f.mlir", "jit_f.txt"])
def test_stablehlo_text_asks_for_the_hlo_dialect(tpusim_bin, tmp_path, name):
    path = tmp_path / name
    path.write_text("module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n"
                    "  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
                    "    %0 = stablehlo.negate %arg0 : tensor<2xf32>\n    return %0 : tensor<2xf32>\n  }\n}\n")
    result = run(tpusim_bin, "run", str(path))
    assert result.returncode == 4
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and 'dialect="hlo"' in lines[0]


def test_hlo_modules_run_as_written(tpusim_bin, tmp_path):
    mlp = str(HLO / "mlp_train_step.hlo")
    training = run(tpusim_bin, "run", mlp, "--mode", "training", "--out", str(tmp_path / "t"))
    assert training.returncode == 2
    assert "runs as written" in training.stderr
    batch = run(tpusim_bin, "run", mlp, "--batch", "16", "--out", str(tmp_path / "b"))
    assert batch.returncode == 2
    assert "shapes are fixed" in batch.stderr
    explicit = run(tpusim_bin, "run", mlp, "--mode", "as-written", "--out", str(tmp_path / "a"))
    assert explicit.returncode == 0, explicit.stderr


def test_hlo_txt_extension_and_header_detection(tpusim_bin, tmp_path):
    text = (HLO / "batched_dot.hlo").read_text()
    for name in ("dump.hlo.txt", "module_0001.jit_f.before_optimizations.txt"):
        path = tmp_path / name
        path.write_text(text)
        result = run(tpusim_bin, "run", str(path), "--out", str(tmp_path / (name + ".out")))
        assert result.returncode == 0, result.stderr


def test_mixed_precision_dot_is_unsupported(tpusim_bin, tmp_path):
    path = tmp_path / "bf16_dot.hlo"
    path.write_text("HloModule m\nENTRY e {\n  a = bf16[2,3] parameter(0)\n  b = bf16[3,4] parameter(1)\n"
                    "  ROOT d = f32[2,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n")
    result = run(tpusim_bin, "run", str(path))
    assert result.returncode == 4
    assert "instruction 'd'" in result.stderr and "mixed precision" in result.stderr


def test_compiled_hlo_program_runs_like_the_module(tpusim_bin, tmp_path):
    mlp = str(HLO / "mlp_train_step.hlo")
    assert run(tpusim_bin, "run", mlp, "--out", str(tmp_path / "direct")).returncode == 0
    program = tmp_path / "mlp.tpuprog"
    compiled = run(tpusim_bin, "compile", mlp, "-o", str(program))
    assert compiled.returncode == 0, compiled.stderr
    assert run(tpusim_bin, "run", str(program), "--out", str(tmp_path / "saved")).returncode == 0
    direct = json.loads((tmp_path / "direct" / "report.json").read_text())
    saved = json.loads((tmp_path / "saved" / "report.json").read_text())
    assert saved["mode"] == "as-written"
    assert saved["total_cycles"] == direct["total_cycles"]
