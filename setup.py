"""`python3 -m pip install .`: builds the extension with CMake, installs the package tpusim.

Offline, with Debian's setuptools and wheel: there is no pyproject.toml, so pip builds
with the installed setuptools instead of fetching one into an isolated environment.
TPUSIM_BUILD_DIR names an existing CMake build to reuse (scripts/setup.sh makes build/);
otherwise the project is configured and built under build/setuptools/cmake.
"""
import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        given = os.environ.get("TPUSIM_BUILD_DIR")
        build = pathlib.Path(given).resolve() if given else ROOT / "build" / "setuptools" / "cmake"
        if not (build / "CMakeCache.txt").exists():
            subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                                   f"-DPython3_EXECUTABLE={sys.executable}"])
        jobs = str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", str(build), "--target", "tpusim_python", "-j", jobs])
        built = sorted((build / "bindings" / "tpusim").glob("_core*.so"))
        if not built:
            raise RuntimeError(f"the CMake build in {build} made no bindings/tpusim/_core*.so")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], target)


setup(
    name="tpusim",
    version="0.1.0",
    description="A cycle-level TPU simulator",
    packages=["tpusim", "tpusim.keras"],
    package_dir={"tpusim": "bindings/python/tpusim", "tpusim.keras": "bindings/python/tpusim/keras"},
    package_data={"tpusim": ["_core.pyi", "py.typed"]},
    ext_modules=[Extension("tpusim._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build/setuptools"}, "egg_info": {"egg_base": "build/setuptools"}},
    python_requires=">=3.9",
)
