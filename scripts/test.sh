#!/usr/bin/env bash
# Runs every test: the GoogleTest suites through ctest, then the Python
# module and CLI tests with Debian's Python (which has numpy and pytest).
# Expects a build from scripts/setup.sh (TPUSIM_BUILD_DIR, default build/).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${TPUSIM_BUILD_DIR:-$root/build}"

ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc 2>/dev/null || echo 2)"
cd "$root"
TPUSIM_BUILD_DIR="$build_dir" PYTHONPATH="$build_dir/bindings" /usr/bin/python3 -m pytest -q tests/python tests/e2e
