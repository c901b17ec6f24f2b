"""Shared fixtures: where the build and the shipped traces are."""
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("TPUSIM_BUILD_DIR", ROOT / "build"))


@pytest.fixture
def mlp_path():
    return str(ROOT / "traces" / "mlp.onnx")


@pytest.fixture(scope="session")
def tpusim_bin():
    path = BUILD / "tpusim"
    assert path.exists(), f"build the project first: {path} is missing"
    return str(path)
