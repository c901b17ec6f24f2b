#!/usr/bin/env bash
# Sets up tpusim on a fresh Debian 12 machine: installs the Debian packages
# the project needs (skipped when they are all present), configures and
# builds into build/, then simulates one training step of traces/mlp.onnx on
# tpuv4 and writes tpusim-out/report.json. Safe to run again.
#
#   scripts/setup.sh                 # everything
#   TPUSIM_SKIP_RUN=1 scripts/setup.sh   # install and build only (CI)
#   TPUSIM_WITH_TORCH=1 scripts/setup.sh # also python3-torch(vision), to regenerate traces/*.onnx
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${TPUSIM_BUILD_DIR:-$root/build}"

packages=(
  build-essential cmake pkg-config
  libsystemc-dev
  libboost-program-options-dev
  libboost-mpi-dev openmpi-bin  # tpusim sweep / autodistribute over MPI ranks (docs/sweep.md)
  libprotobuf-dev protobuf-compiler
  libspdlog-dev
  libjemalloc-dev  # the tpusim binary's malloc (docs/performance.md, "Allocator")
  nlohmann-json3-dev
  libonnx-dev
  libgtest-dev libgmock-dev
  libbenchmark-dev
  pybind11-dev python3-dev
  python3-onnx python3-numpy python3-pytest
  python3-venv python3-pip python3-setuptools python3-wheel
  libonnx-testdata
  chromium  # headless, for the report.html browser test (tests/e2e/test_report_browser.py)
)
if [[ "${TPUSIM_WITH_TORCH:-0}" == 1 ]]; then
  packages+=(python3-torch python3-torchvision)
fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ "$(id -u)" == 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

jobs="$(nproc 2>/dev/null || echo 2)"
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j "$jobs"

if [[ "${TPUSIM_SKIP_RUN:-0}" != 1 ]]; then
  cd "$root"
  "$build_dir/tpusim" run traces/mlp.onnx --hw tpuv4 --out tpusim-out
fi
