"""scripts/gpu-bundle.sh and scripts/gpu-check.sh with GPU_BUNDLE, as on a GPU machine that has
the CUDA libraries somewhere but none of this project's Debian packages: in a private mount
namespace the system's copies of the carried libraries are hidden (an empty file over each), the
CUDA toolkit's folder is moved under /opt, where pip's nvidia-* wheels keep cuDNN and NCCL, and the
check runs in a copy of the tree (what the device tool sends) with the tree the bundle was built
from hidden. Without a GPU every step must still run: the CUDA runs exit 6, the rest pass."""
import os
import pathlib
import re
import shutil
import subprocess
import tarfile

import pytest

from conftest import BUILD, ROOT

CUDA_LIB = pathlib.Path(os.path.realpath("/usr/local/cuda/lib"))


def _ldd(binary):
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    return {line.split()[0]: line.split()[2] for line in out.splitlines() if " => /" in line}


def _can_unshare():
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


def _built_with_cuda():
    binary = BUILD / "tpusim"
    return binary.exists() and "libcudart.so.13" in _ldd(binary)


pytestmark = [
    pytest.mark.skipif(not _built_with_cuda(), reason="the build has no CUDA backend (no nvcc, cuDNN or NCCL)"),
    pytest.mark.skipif(not _can_unshare(), reason="needs root and unshare -m to hide the system's libraries"),
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """The files the device tool sends: tracked, and untracked but not ignored."""
    path = tmp_path_factory.mktemp("gpu") / "tree"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, path / name)
    return path


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpu") / "bundle"
    env = dict(os.environ, BUILD_DIR=str(BUILD), GPU_BUNDLE=str(path))
    done = subprocess.run(["bash", "scripts/gpu-bundle.sh"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return path


def _run_bare(tree, bundle, out, hide_cuda_libs=False, extra_env=""):
    """tree's gpu-check.sh with GPU_BUNDLE in a mount namespace where the carried libraries' system
    copies are empty files, the source tree is empty and /usr/local/cuda is empty, its libraries
    under /opt unless hide_cuda_libs."""
    carried = sorted(p.name for p in (bundle / "lib").iterdir() if p.is_file())
    system = {}
    for binary in ["tpusim", "tests/reference_cuda_test", "tests/validation_test"]:
        system.update(_ldd(BUILD / binary))
    hide = [os.path.realpath(system[name]) for name in carried if name in system]
    assert len(hide) == len(carried), (carried, system)
    lines = ["set -e", "mount -t tmpfs none /opt"]
    lines += [f"mount --bind /dev/null {path}" for path in hide]
    if not hide_cuda_libs:
        # The toolkit's libraries, where a pip-installed PyTorch keeps them.
        lines += ["mkdir -p /opt/venv/site-packages/nvidia/lib",
                  f"mount --bind {CUDA_LIB} /opt/venv/site-packages/nvidia/lib"]
    lines += ["mount -t tmpfs none /usr/local/cuda", f"mount -t tmpfs none {ROOT}", f"cd {tree}", "set +e",
              f"{extra_env} GPU_BUNDLE={bundle} OUT={out} GPU_CHECK_PACK=1 bash scripts/gpu-check.sh"]
    return subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", "\n".join(lines)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_bundle_carries_what_a_gpu_machine_lacks_and_names_what_it_must_have(bundle):
    manifest = dict(line.split(": ", 1) for line in (bundle / "bundle.txt").read_text().splitlines())
    assert set(manifest["needs-cuda-libs"].split()) >= {"libcudart.so.13", "libcublas.so.13", "libcudnn.so.9",
                                                        "libnccl.so.2"}
    assert manifest["needs-glibcxx"].startswith("GLIBCXX_3.4.")
    carried = {p.name for p in (bundle / "lib").iterdir()}
    assert {"libsystemc-2.3.4.so", "libprotobuf.so.32", "libonnx_proto.so.1"} <= carried
    assert not any(name.startswith(("libcud", "libnccl", "libc.so")) for name in carried)
    assert {p.name for p in (bundle / "lib" / "fallback").iterdir()} == {"libstdc++.so.6", "libgcc_s.so.1"}
    assert int(manifest["size-mb"]) <= 40
    assert {p.name for p in (bundle / "bin").iterdir()} == {"tpusim", "reference_cuda_test", "validation_test"}
    assert (bundle / "onnx-node-suite.tar.gz").exists() and "libonnx-testdata" in manifest["onnx-node-suite"]


def test_check_runs_from_the_bundle_on_a_machine_without_the_debian_packages(tree, bundle, tmp_path):
    done = _run_bare(tree, bundle, tmp_path)
    summary = (tmp_path / "summary.txt").read_text()
    assert done.returncode == 0, done.stdout + done.stderr
    # No GPU here: the CUDA runs say so (6); the host-device tests, the simulations, the CPU
    # references and their comparisons run from the bundle with its own libraries.
    for step, rc in [("cuda-tests", 0), ("mlp-reference-cuda", 6), ("mlp-compare-cpu", 0), ("mlp-bf16-compare-cpu", 0),
                     ("resnet50-sim", 0), ("resnet50-reference-cuda", 6), ("resnet50-compare-cpu", 0),
                     ("resnet50-int8-reference-cuda", 6), ("resnet50-int8-compare-cpu", 0),
                     ("dlrm-sim", 0), ("dlrm-reference-cuda", 6)]:
        assert f"{step:<28} rc {rc:<3}" in summary, summary
    assert "cuda-tests: 4 skipped" in summary
    # The ONNX node-test suite from the bundle's copy: on the host device, and no GPU to run it on.
    assert "onnx-node-suite              rc 0" in summary, summary
    suite_log = (tmp_path / "onnx-node-suite.log").read_text()
    # As many as the suite's own floor (validation_test holds it); the count grows with the ops.
    ran = re.search(r"CUDA executor on the host device: (\d+) test data sets ran", suite_log)
    assert ran and int(ran.group(1)) >= 382, suite_log
    assert "CUDA executor on the GPU: not run (no CUDA device visible)" in suite_log
    # What the device tool brings back: at most 8 files, everything else in the archive.
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert len(kept) <= 8 and "gpu-check.tar.gz" in kept and "gpu-check" not in kept, kept
    with tarfile.open(tmp_path / "gpu-check.tar.gz") as archive:
        names = set(archive.getnames())
        log = archive.extractfile("gpu-check/libraries.log").read().decode()
    assert {"gpu-check/mlp/compare-cpu/compare.csv", "gpu-check/mlp/compare-cpu/numerics.csv",
            "gpu-check/mlp-bf16/cpu/report.json", "gpu-check/resnet50/sim/report.json",
            "gpu-check/resnet50/compare-cpu/numerics.csv"} <= names
    assert not any(name.endswith(".npy") for name in names)  # the tensors stay behind
    assert (tmp_path / "gpu-check.tar.gz").stat().st_size < 16 << 20
    assert "found libcudnn.so.9: /opt/venv/site-packages/nvidia/lib/libcudnn.so.9" in log
    assert "libstdc++" not in log.split("LD_LIBRARY_PATH=")[0]  # this machine's libstdc++ is new enough
    assert "libcuda.so.1 (the driver's) not found: the CUDA runs will say there is no device" in log
    assert f"LD_LIBRARY_PATH={bundle}/lib:/opt/venv/site-packages/nvidia/lib\n" in log


def test_check_uses_the_fallback_libstdcxx_where_the_machines_is_older(tree, bundle, tmp_path):
    old = tmp_path / "bundle"
    shutil.copytree(bundle, old, symlinks=True)
    manifest = (old / "bundle.txt").read_text().splitlines()
    manifest = [("needs-glibcxx: GLIBCXX_9.9.9" if line.startswith("needs-glibcxx") else line) for line in manifest]
    (old / "bundle.txt").write_text("\n".join(manifest) + "\n")
    out = tmp_path / "out"
    done = _run_bare(tree, old, out, extra_env="GPU_CHECK_BUDGET_S=30")
    with tarfile.open(out / "gpu-check.tar.gz") as archive:
        log = archive.extractfile("gpu-check/libraries.log").read().decode()
    assert "lacks GLIBCXX_9.9.9: the bundle's lib/fallback is used" in log, done.stdout
    assert f"LD_LIBRARY_PATH={old}/lib:{old}/lib/fallback:" in log
    assert "cuda-tests                   rc 0" in (out / "summary.txt").read_text()


def test_check_names_the_cuda_library_the_machine_lacks(tree, bundle, tmp_path):
    done = _run_bare(tree, bundle, tmp_path, hide_cuda_libs=True)
    assert done.returncode == 1
    summary = (tmp_path / "summary.txt").read_text()
    assert "gpu-check: this machine lacks" in summary and "libcudnn.so.9" in summary, summary
    assert (tmp_path / "gpu-check.tar.gz").exists()
