#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, docs/reliability.md "Fuzzing") into build-fuzz/ with
# clang, ASan and UBSan, and runs one target or all of them for SECONDS each.
#
#   scripts/fuzz.sh [TARGET|all] [SECONDS]     TARGET: onnx hlo program hardware report precision topology
#
# Each run copies the committed seeds (fuzz/corpus/TARGET) into a working corpus outside the
# tree (FUZZ_WORK/TARGET/corpus, FUZZ_WORK default build-fuzz/work), which keeps what runs add,
# and uses fuzz/TARGET.dict where there is one. A crash, leak, timeout or out-of-memory stops
# the run with its input saved as FUZZ_WORK/crash-* (or leak-, timeout-, oom-) and this
# script exits non-zero. More libFuzzer flags: FUZZ_FLAGS="-runs=1000000".
# FUZZ_JOBS (default 2) bounds the build's parallelism; everything runs under nice.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${TPUSIM_FUZZ_BUILD_DIR:-$root/build-fuzz}"
targets_all=(onnx hlo program hardware report precision topology)
target="${1:-all}"
seconds="${2:-60}"

if [[ "$target" == all ]]; then
  targets=("${targets_all[@]}")
elif [[ " ${targets_all[*]} " == *" $target "* ]]; then
  targets=("$target")
else
  echo "fuzz.sh: unknown target '$target' (one of: ${targets_all[*]}, all)" >&2
  exit 2
fi

if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir" -DTPUSIM_FUZZ=ON -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_CXX_FLAGS="-O1 -g" -DTPUSIM_BUILD_TESTS=OFF -DTPUSIM_BUILD_PYTHON=OFF -DTPUSIM_BUILD_BENCH=OFF
fi
nice -n 10 cmake --build "$build_dir" -j "${FUZZ_JOBS:-2}" --target "${targets[@]/%/_fuzz}"

status=0
for name in "${targets[@]}"; do
  work="${FUZZ_WORK:-$build_dir/work}/$name"
  mkdir -p "$work/corpus"
  cp -r "$root/fuzz/corpus/$name/." "$work/corpus/"
  flags=(-max_total_time="$seconds" -max_len=262144 -timeout=25 -rss_limit_mb=2560 -print_final_stats=1
         -artifact_prefix="$work/")
  [[ -f "$root/fuzz/$name.dict" ]] && flags+=(-dict="$root/fuzz/$name.dict")
  echo "== $name: ${seconds}s, corpus $work/corpus"
  # ASan's leak check at exit and after each input that grew the heap (libFuzzer's -detect_leaks).
  if ! (cd "$work" && ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
        nice -n 10 "$build_dir/fuzz/${name}_fuzz" "${flags[@]}" ${FUZZ_FLAGS:-} "$work/corpus"); then
    echo "fuzz.sh: $name found a problem; its input is in $work/" >&2
    status=1
  fi
done
exit $status
