"""The run options are declared once (api/run_options.cpp): tpusim's flags and --help, the
Python keyword arguments, the type stub and docs/run-options.md all come from that list, and
agree with it."""
import importlib.util
import pathlib
import re
import subprocess

import pytest

import tpusim
import tpusim._core

ROOT = pathlib.Path(__file__).resolve().parents[2]

OPTIONS = tpusim._core.run_options()


def help_text(tpusim_bin, command):
    return subprocess.run([tpusim_bin, command, "--help"], check=True, capture_output=True, text=True).stdout


def test_every_option_is_a_flag_of_the_commands_that_take_it(tpusim_bin):
    run_help, compile_help = help_text(tpusim_bin, "run"), help_text(tpusim_bin, "compile")
    for option in OPTIONS:
        flag = re.compile(re.escape(option["flag"]) + r"\s")
        assert flag.search(run_help), option["flag"]
        # compile takes the options of every model command, not tpusim run's own.
        assert bool(flag.search(compile_help)) == (option["scope"] == "model"), option["flag"]


def test_the_docs_tables_list_every_option_in_order():
    text = (ROOT / "docs" / "run-options.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| `(--[\w-]+)`", text, flags=re.MULTILINE)
    assert rows == [(option["name"], option["flag"]) for option in OPTIONS]


def test_the_type_stub_lists_every_option_as_a_keyword():
    spec = importlib.util.spec_from_file_location("run_options_stub", ROOT / "scripts" / "run_options_stub.py")
    stub = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stub)
    text = (ROOT / "bindings" / "python" / "tpusim" / "_core.pyi").read_text()
    assert stub.rewrite(text, OPTIONS) == text, "run scripts/update-golden.sh"
    assert text.count(stub.BEGIN) == 5  # run, compile, reference_report, autodistribute, reference
    assert "**training" not in text


def test_a_keyword_and_its_flag_make_the_same_program(tpusim_bin, mlp_path, tmp_path):
    keywords = {"optimizer": "adam", "lr": 0.5, "micro_batches": 2, "precision": "mixed_bfloat16",
                "tiling_objective": "bytes", "weight_decay": 0.01, "adamw": True}
    tpusim.compile(mlp_path, str(tmp_path / "python.tpuprog"), batch=8, **keywords)
    subprocess.run([tpusim_bin, "compile", mlp_path, "--batch", "8", "-o", str(tmp_path / "cli.tpuprog"),
                    "--optimizer", "adam", "--lr", "0.5", "--micro-batches", "2", "--precision", "mixed_bfloat16",
                    "--tiling-objective", "bytes", "--weight-decay", "0.01", "--adamw"], check=True,
                   capture_output=True)
    assert (tmp_path / "python.tpuprog").read_bytes() == (tmp_path / "cli.tpuprog").read_bytes()
    # And the options did reach the compiler: the default options make another Program.
    tpusim.compile(mlp_path, str(tmp_path / "default.tpuprog"), batch=8)
    assert (tmp_path / "default.tpuprog").read_bytes() != (tmp_path / "cli.tpuprog").read_bytes()


@pytest.mark.parametrize("keywords, message", [
    ({"micro_batch": 2}, "unknown keyword argument 'micro_batch' (run options, docs/run-options.md: loss, "),
    ({"micro_batches": 2.5}, "micro_batches takes an integer, not a float"),
    ({"workers": 0}, "workers must be > 0"),
    ({"steps": -1}, "steps must be >= 0"),
    ({"optimizer": 3}, "optimizer takes a string"),
])
def test_a_bad_keyword_is_a_one_line_error_naming_it(mlp_path, tmp_path, keywords, message):
    with pytest.raises(tpusim.Error, match=re.escape(message)):
        tpusim.compile(mlp_path, str(tmp_path / "p.tpuprog"), **keywords)


def test_a_bad_flag_value_is_a_one_line_error_naming_it(tpusim_bin, mlp_path, tmp_path):
    result = subprocess.run([tpusim_bin, "compile", mlp_path, "-o", str(tmp_path / "p.tpuprog"), "--lr", "fast"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr == "tpusim: error: --lr takes a number, not 'fast'\n"
