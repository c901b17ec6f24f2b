#!/usr/bin/env bash
# Makes the GPU bundle (docs/reference.md, "GPU check"): tpusim and the test binaries that hold
# the GPU tests (the CUDA executor's, and the ONNX node-test suite's, with Debian's copy of the
# suite) built here with nvcc, with the shared libraries they need that a GPU machine cannot be
# expected to have (SystemC, protobuf, the ONNX library, Boost, spdlog, fmt, zlib), so that
# `GPU_BUNDLE=gpu-bundle scripts/gpu-check.sh` runs on a GPU machine that has the CUDA libraries
# but none of this project's Debian packages and no network to fetch them.
#
# Not carried: glibc (the GPU machine's own, which must be at least as new as this one's) and the
# CUDA libraries (cudart, cuBLAS, cuDNN, NCCL: hundreds of megabytes, and matched to that
# machine's driver), which gpu-check.sh finds there. libstdc++ and libgcc_s go in lib/fallback/,
# used there only when the machine's own libstdc++ lacks a version these binaries need.
#
# bundle.txt records what was built (commit, compiler, CUDA) and what the GPU machine must
# provide: one `key: value` line each, read by gpu-check.sh.
#
# Environment: BUILD_DIR (default scripts/setup.sh's build/, brought up to date, or configured
# where missing), GPU_BUNDLE (the bundle's folder, default gpu-bundle), JOBS (build jobs, default
# nproc), BUNDLE_MAX_MB (default 40: the device tool carries at most 64 MiB, the tree included).
# Exits 1 when the build fails, has no CUDA backend, or the bundle is over BUNDLE_MAX_MB.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${BUILD_DIR:-${TPUSIM_BUILD_DIR:-$root/build}}"
bundle="${GPU_BUNDLE:-$root/gpu-bundle}"
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
max_mb="${BUNDLE_MAX_MB:-40}"
binaries=(tpusim tests/reference_cuda_test tests/validation_test)
suite=/usr/share/libonnx-testdata/data/node

fail() {
  echo "gpu-bundle: $*" >&2
  exit 1
}

if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j "$jobs" --target tpusim reference_cuda_test validation_test >/dev/null

# The CUDA backend is built only where CMake found nvcc, cuDNN and NCCL (reference/CMakeLists.txt).
# grep reads captured text, not a pipe: under pipefail, `ldd | grep -q` fails when grep exits at
# its first match and ldd, still writing, dies of SIGPIPE.
grep -q 'libcudart\.so' <<<"$(ldd "$build/tpusim")" ||
  fail "$build/tpusim has no CUDA backend (CMake found no nvcc, cuDNN or NCCL: see its configure output)"

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib/fallback"
for binary in "${binaries[@]}"; do
  cp "$build/$binary" "$bundle/bin/"
  strip --strip-unneeded "$bundle/bin/$(basename "$binary")"
done

# Sorts each library the binaries load (ldd lists them transitively) into carried, fallback,
# the GPU machine's CUDA libraries, or glibc.
declare -A cuda_libs=()
while read -r name path; do
  case "$name" in
    ld-linux* | linux-vdso* | libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | libresolv.so.*) ;;
    libcuda.so.* | libcudart.so.* | libcublas.so.* | libcublasLt.so.* | libcudnn*.so.* | libnccl.so.*)
      cuda_libs[$name]=1
      ;;
    libstdc++.so.* | libgcc_s.so.*) cp -L "$path" "$bundle/lib/fallback/$name" ;;
    *)
      [[ -n "$path" && -f "$path" ]] || fail "$name is not found here: the build is incomplete"
      cp -L "$path" "$bundle/lib/$name"
      ;;
  esac
done < <(for binary in "${binaries[@]}"; do ldd "$build/$binary"; done |
  awk '$2 == "=>" { print $1, ($3 == "not" ? "" : $3) }' | sort -u)

[[ -d "$suite" ]] || fail "$suite is missing: install libonnx-testdata (scripts/setup.sh does)"
tar -C "$(dirname "$suite")" -czf "$bundle/onnx-node-suite.tar.gz" "$(basename "$suite")"

# The newest symbol versions any carried file asks of libstdc++ and glibc.
newest() { objdump -T "$bundle"/bin/* "$bundle"/lib/*.so* | grep -o "$1_[0-9][0-9.]*" | sort -uV | tail -n 1; }

size_mb=$(du -sm "$bundle" | cut -f1)
{
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), $(uname -m)"
  echo "compiler: $(c++ --version | head -n 1)"
  echo "cuda: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo unknown), architectures $(grep -o 'CMAKE_CUDA_ARCHITECTURES:[A-Z]*=.*' "$build/CMakeCache.txt" | cut -d= -f2 || echo '80 90')"
  echo "onnx-node-suite: libonnx-testdata $(dpkg-query -W -f='${Version}' libonnx-testdata 2>/dev/null || echo unknown), $(find "$suite" -mindepth 1 -maxdepth 1 -type d | wc -l) cases"
  echo "needs-cuda-libs: ${!cuda_libs[*]}"
  echo "needs-glibc: $(newest GLIBC)"
  echo "needs-glibcxx: $(newest GLIBCXX)"
  echo "size-mb: $size_mb"
} >"$bundle/bundle.txt"

((size_mb <= max_mb)) || fail "the bundle is $size_mb MiB, over BUNDLE_MAX_MB=$max_mb"
echo "gpu-bundle: $bundle ($size_mb MiB):"
sed 's/^/  /' "$bundle/bundle.txt"
