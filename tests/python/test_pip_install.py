"""`pip install .` offline, into a virtual environment that sees Debian's packages,
and the package's type stub in step with the extension."""
import ast
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import tpusim

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("TPUSIM_BUILD_DIR", ROOT / "build")).resolve()


def test_pip_installs_the_package_offline(tmp_path):
    try:
        import ensurepip  # noqa: F401  (python3-venv)
    except ImportError:
        pytest.skip("python3-venv is not installed")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TPUSIM_BUILD_DIR"] = str(BUILD)  # reuse the build instead of configuring a new one
    python = str(venv / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "--no-index", str(ROOT)], env=env,
                             capture_output=True, text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    probe = ("import json, tpusim; r = tpusim.run(%r, batch=8); "
             "print(json.dumps([tpusim.__file__, tpusim.presets(), r['total_cycles']]))"
             % str(ROOT / "traces" / "mlp.onnx"))
    out = subprocess.run([python, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    location, presets, cycles = json.loads(out.stdout)
    assert pathlib.Path(location).is_relative_to(venv)
    assert "tpuv4" in presets and cycles > 0
    site = pathlib.Path(location).parent
    assert (site / "_core.pyi").exists() and (site / "py.typed").exists()
    shutil.rmtree(venv)


def test_the_stub_names_every_function_of_the_extension():
    stub = ROOT / "bindings" / "python" / "tpusim" / "_core.pyi"
    tree = ast.parse(stub.read_text())
    declared = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert declared == {name for name in dir(tpusim._core) if not name.startswith("_")}


def test_errors_raise_tpusim_error_with_the_cli_message(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(tpusim.Error) as error:
        tpusim.run(str(bad))
    assert "\n" not in str(error.value) and str(error.value)
