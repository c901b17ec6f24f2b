#!/usr/bin/env bash
# The prepared check for a machine with an NVIDIA GPU (docs/reference.md, "GPU check"): builds
# tpusim with CUDA, or takes the bundle scripts/gpu-bundle.sh made (GPU_BUNDLE), runs the CUDA
# tests and the ONNX node-test suite (on the GPU too where one is), then `tpusim reference
# --backend cuda` (and, for mlp and resnet50, --backend cpu) and `tpusim compare` on traces/mlp.onnx (f32,
# mixed_bfloat16 and int8 inference), traces/resnet50.onnx (f32, int8 inference) and
# traces/dlrm.onnx at a small batch.
# Each step's output goes in <step>.log, the reports and tables in <model>/, and summary.txt has
# one line per step: its name, exit code, seconds and what the code means. A step that fails is
# recorded and the script goes on; exit codes 4 (unsupported: the CUDA executor is not built, or
# lacks an op) and 6 (no CUDA device) are expected outcomes, not failures. Exits 1 when the
# build, the libraries, a test or a step failed in any other way, else 0. Each step has a time
# limit so that the whole check ends in under 8 minutes on 16 cores.
#
# Environment:
#   OUT                 the results' folder (default gpu-check-out/)
#   GPU_BUNDLE          a folder made by scripts/gpu-bundle.sh: its binaries run, nothing is built,
#                       and the CUDA libraries are looked for on this machine (for a GPU machine
#                       without this project's Debian packages)
#   GPU_CHECK_PACK=1    leave in OUT only summary.txt, machine.txt, the test log, the comparison
#                       tables and gpu-check.tar.gz with everything but the tensors (*.npy), for a
#                       tool that brings back only a few files of at most 16 MiB
#   BUILD_DIR           without GPU_BUNDLE: the build (default build-gpu; an existing one is reused)
#   JOBS                build jobs (default nproc)
#   GPU_CHECK_BUDGET_S  the time budget (default 460 s)
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
out="${OUT:-$root/gpu-check-out}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
bundle="${GPU_BUNDLE:+$(cd "$GPU_BUNDLE" 2>/dev/null && pwd || echo "$GPU_BUNDLE")}"
build="${BUILD_DIR:-$root/build-gpu}"
jobs="${JOBS:-$(nproc 2>/dev/null || echo 4)}"
pack="${GPU_CHECK_PACK:-0}"
# With GPU_CHECK_PACK the results are written in a folder of OUT that goes into the archive.
results="$out"
[[ "$pack" == 1 ]] && results="$out/gpu-check" && rm -rf "$results" && mkdir -p "$results"
summary="$results/summary.txt"
: >"$summary"
failed=0

# The files left beside gpu-check.tar.gz with GPU_CHECK_PACK=1: at most 8 in all.
pack_keep=(summary.txt machine.txt cuda-tests.log onnx-node-suite.log mlp-compare-cuda.log
  mlp-bf16-compare-cuda.log resnet50-compare-cuda.log)
finish() {
  [[ "$pack" == 1 ]] || return 0
  local name
  for name in "${pack_keep[@]}"; do
    [[ -f "$results/$name" ]] && cp "$results/$name" "$out/$name"
  done
  # Not the step's tensors (reference/*.npy, functional/*.npy: resnet50's are 100 MB; compare.json
  # and numerics.csv hold their errors): the tool brings back no file over 16 MiB.
  tar -C "$out" --exclude='*.npy' -czf "$out/gpu-check.tar.gz" gpu-check && rm -rf "$results"
}
trap finish EXIT

meaning() {
  case "$1" in
    0) echo "ok" ;;
    2) echo "invalid configuration" ;;
    3) echo "invalid input" ;;
    4) echo "unsupported (recorded, not a failure: see the log)" ;;
    5) echo "resource" ;;
    6) echo "no CUDA device (expected on a machine without a GPU)" ;;
    124) echo "timed out" ;;
    *) echo "failed" ;;
  esac
}

# The whole check's budget: no step runs past it, so the script ends within 8 minutes.
deadline=$((SECONDS + ${GPU_CHECK_BUDGET_S:-460}))

# step NAME LIMIT_S COMMAND...: runs COMMAND with a time limit (cut to what is left of the
# budget), its output in $results/NAME.log.
step() {
  local name="$1" limit="$2"
  shift 2
  local start=$SECONDS left=$((deadline - SECONDS))
  if ((left < 5)); then
    printf '%-28s rc %-3s %4ss  %s\n' "$name" 124 0 "not run: out of time" | tee -a "$summary"
    failed=1
    return 124
  fi
  ((limit > left)) && limit=$left
  timeout "$limit" "$@" >"$results/$name.log" 2>&1
  local rc=$?
  printf '%-28s rc %-3s %4ss  %s\n' "$name" "$rc" "$((SECONDS - start))" "$(meaning "$rc")" | tee -a "$summary"
  case "$rc" in
    0 | 4 | 6) ;;
    *) failed=1 ;;
  esac
  return "$rc"
}

note() { echo "$*" | tee -a "$summary"; }

# One summary line of what ran a CUDA reference's ops (report.json's per_op[].kernel), counted, most
# first: whether cuDNN took the poolings, which convolution algorithms were chosen, whether cuBLAS
# took the int8 GEMMs.
ran_as() {
  local counts
  counts=$(grep -o '"kernel": *"[^"]*"' "$2" | sed 's/^"kernel": *"//; s/"$//' | sort | uniq -c | sort -k1,1nr -k2 |
    awk '{ n = $1; sub(/^ *[0-9]+ /, ""); printf "%s%d x %s", (NR > 1 ? "; " : ""), n, $0 }')
  note "$1: ran as: ${counts:-no per_op kernel field}"
}

{
  echo "tpusim gpu-check, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')"
  echo "os: $( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null || echo unknown), $(ldd --version 2>/dev/null | head -n 1)"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  else
    echo "gpu: nvidia-smi not found"
  fi
} | tee "$results/machine.txt"

# What the dynamic loader makes of BINARY's libraries: "name path" lines, path empty if not found.
# (LD_TRACE_LOADED_OBJECTS is what ldd sets, so this needs no ldd.)
loaded_libraries() {
  LD_TRACE_LOADED_OBJECTS=1 "$1" 2>/dev/null | awk '$2 == "=>" { print $1, ($3 == "not" ? "" : $3) }'
}

# Where this machine keeps library NAME: the CUDA toolkit's folders, then the system's, then
# anywhere under /usr/local, /opt and /usr/lib (pip's nvidia-* wheels keep cuDNN and NCCL in
# site-packages/nvidia/*/lib), but not the toolkit's link-time stubs or its forward-compatibility
# driver (compat/libcuda.so.1 is for a driver older than the toolkit, not this one's).
find_library() {
  local name="$1" dir
  for dir in ${CUDA_HOME:+"$CUDA_HOME/lib64"} /usr/local/cuda/lib64 /usr/local/cuda/lib \
    /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu \
    /usr/lib64; do
    [[ -e "$dir/$name" ]] && echo "$dir/$name" && return 0
  done
  timeout 60 find /usr/local /opt /usr/lib -maxdepth 12 -name "$name" -not -path '*/stubs/*' -not -path '*/compat/*' \
    2>/dev/null | head -n 1 | grep .
}

# Whether the dynamic loader finds library NAME: in LD_LIBRARY_PATH or in its cache.
loader_finds() {
  local dir
  for dir in ${LD_LIBRARY_PATH//:/ }; do
    [[ -e "$dir/$1" ]] && return 0
  done
  grep -q "^[[:space:]]*$1 " <<<"$(ldconfig -p 2>/dev/null)"
}

# GPU_BUNDLE: sets LD_LIBRARY_PATH so that the bundle's binaries find every library: the
# bundle's own, libstdc++ from lib/fallback where this machine's lacks the version they need,
# and the CUDA libraries from wherever this machine has them. Writes libraries.log.
use_bundle() {
  local log="$results/libraries.log" need system name path missing=()
  if [[ ! -f "$bundle/bundle.txt" || ! -x "$bundle/bin/tpusim" ]]; then
    note "gpu-check: GPU_BUNDLE=$bundle is not a bundle made by scripts/gpu-bundle.sh"
    exit 1
  fi
  sed 's/^/bundle /' "$bundle/bundle.txt" | tee -a "$results/machine.txt"
  local carried="$bundle/lib"
  need=$(sed -n 's/^needs-glibcxx: //p' "$bundle/bundle.txt")
  system=$(ldconfig -p 2>/dev/null | awk '$1 == "libstdc++.so.6" && /x86-64/ { print $NF; exit }')
  if [[ -z "$system" ]] || ! grep -qa "$need" "$system"; then
    echo "libstdc++: this machine's (${system:-none}) lacks $need: the bundle's lib/fallback is used" | tee -a "$log"
    carried="$carried:$bundle/lib/fallback"
  fi
  export LD_LIBRARY_PATH="$carried${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # A library the loader does not find hides its own needs: look again until nothing new is found.
  local pass added
  for pass in 1 2 3 4; do
    added=0
    while read -r name path; do
      [[ -n "$path" || " ${missing[*]} " == *" $name "* ]] && continue
      if path=$(find_library "$name"); then
        echo "found $name: $path" >>"$log"
        [[ ":$LD_LIBRARY_PATH:" == *":$(dirname "$path"):"* ]] || LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$path")"
        added=1
      else
        missing+=("$name")
      fi
    done < <(for binary in "$bundle"/bin/*; do loaded_libraries "$binary"; done | sort -u)
    ((added)) || break
  done
  {
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    for binary in "$bundle"/bin/*; do
      echo "$(basename "$binary"):"
      LD_TRACE_LOADED_OBJECTS=1 "$binary" 2>&1 | sed 's/^\s*/  /'
    done
  } >>"$log"
  if ((${#missing[@]} > 0)); then
    note "gpu-check: this machine lacks ${missing[*]} (needed by the bundle; see libraries.log)"
    exit 1
  fi
  # The driver's libcuda.so.1, which the CUDA runtime opens at run time (so the loader lists it
  # nowhere): where the loader would not find it, its folder is added. Without it the CUDA runs
  # say there is no device.
  if ! loader_finds libcuda.so.1; then
    if path=$(find_library libcuda.so.1); then
      echo "found libcuda.so.1 (the driver's): $path" | tee -a "$log"
      LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$path")"
    else
      echo "libcuda.so.1 (the driver's) not found: the CUDA runs will say there is no device" | tee -a "$log"
    fi
  fi
  # The CUDA libraries as loaded, for the record (the report's device_libraries has their versions).
  loaded_libraries "$bundle/bin/tpusim" | awk '$1 ~ /^lib(cudart|cublas|cublasLt|cudnn|nccl)\.so/ { print "cuda-lib: " $1 " => " $2 }' |
    tee -a "$results/machine.txt"
}

if [[ -n "$bundle" ]]; then
  use_bundle
  export TPUSIM_SOURCE_DIR="$root"  # the tests' traces: this tree, not the one the bundle was built in
  tpusim="$bundle/bin/tpusim"
  step cuda-tests 120 "$bundle/bin/reference_cuda_test" --gtest_filter='Cuda*'
  skipped=$(grep -cE '^\[  SKIPPED \] [A-Za-z0-9_]+\.[A-Za-z0-9_]+ \(' "$results/cuda-tests.log")
  # The suite the bundle carries (Debian's), unpacked outside the results.
  suite_dir=$(mktemp -d)
  tar -C "$suite_dir" -xzf "$bundle/onnx-node-suite.tar.gz"
  export TPUSIM_ONNX_NODE_SUITE="$suite_dir/node"
  step onnx-node-suite 120 "$bundle/bin/validation_test" --gtest_filter='OnnxNodeSuite.*'
  unset TPUSIM_ONNX_NODE_SUITE
  rm -rf "$suite_dir"
else
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  if ! step configure 120 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"; then
    note "gpu-check: configure failed (see configure.log; on a machine without the Debian packages, use GPU_BUNDLE)"
    exit 1
  fi
  if grep -q "nvcc not found" "$results/configure.log"; then
    note "cuda: nvcc not found: the CUDA backend is not built (set CUDACXX or put nvcc on PATH)"
  fi
  # Only what the check runs: the CLI and the test binary that holds the CUDA tests.
  targets=(tpusim)
  if grep -q "reference_cuda_test" <<<"$(cmake --build "$build" --target help 2>/dev/null)"; then
    targets+=(reference_cuda_test validation_test)
  fi
  if ! step build 330 cmake --build "$build" -j "$jobs" --target "${targets[@]}"; then
    note "gpu-check: build failed (see build.log)"
    exit 1
  fi
  tpusim="$build/tpusim"
  # The CUDA tests skip, with their reason, where no GPU is visible.
  step cuda-tests 120 ctest --test-dir "$build" -R '^Cuda' --output-on-failure --no-tests=error
  skipped=$(grep -cs "(Skipped)" "$results/cuda-tests.log")
  step onnx-node-suite 120 ctest --test-dir "$build" -R '^OnnxNodeSuite' --output-on-failure --verbose --no-tests=error
fi
((${skipped:-0} > 0)) && note "cuda-tests: $skipped skipped (see cuda-tests.log for the reason)"

# name, model, mode, batch, precision policy, whether the simulation is functional (its outputs
# compared with the references'), and whether the CPU reference runs too. resnet50's weights are
# made up (it stores shapes only; docs/reference.md); its steps also run functionally and on the
# CPU (about a minute on 2 cores, docs/reference.md), so that its numerics tables set cuDNN's
# convolutions and the int8 kernel beside the MXU's and the CPU's. The int8 runs are inference
# (--precision int8 quantizes the matmuls' and convolutions' weights, made-up ones too).
seed=1
for spec in "mlp mlp training 8 float32 functional cpu" "mlp-bf16 mlp training 8 mixed_bfloat16 functional cpu" \
  "mlp-int8 mlp inference 8 int8 functional cpu" "resnet50 resnet50 training 2 float32 functional cpu" \
  "resnet50-int8 resnet50 inference 2 int8 functional cpu" "dlrm dlrm training 2 float32 timed cuda-only"; do
  read -r name model mode batch precision sim_kind cpu <<<"$spec"
  trace="traces/$model.onnx"
  if [[ ! -f "$trace" ]]; then
    note "$name: $trace not found, skipped"
    failed=1
    continue
  fi
  dir="$results/$name"
  mkdir -p "$dir"
  functional=()
  [[ "$sim_kind" == functional ]] && functional=(--functional --seed "$seed")
  step "$name-sim" 120 "$tpusim" run "$trace" --mode "$mode" --batch "$batch" --precision "$precision" --no-instructions \
    "${functional[@]}" --out "$dir/sim"
  backends=(cuda)
  [[ "$cpu" == cpu ]] && backends+=(cpu)
  for backend in "${backends[@]}"; do
    threads=()
    [[ "$backend" == cpu ]] && threads=(--threads "$jobs")
    if step "$name-reference-$backend" 120 "$tpusim" reference "$trace" --mode "$mode" --batch "$batch" \
      --precision "$precision" --backend "$backend" "${threads[@]}" --seed "$seed" --out "$dir/$backend"; then
      [[ "$backend" == cuda ]] && ran_as "$name" "$dir/cuda/report.json"
      step "$name-compare-$backend" 60 "$tpusim" compare "$dir/sim/report.json" "$dir/$backend/report.json" \
        --out "$dir/compare-$backend"
    fi
  done
done

note "total $SECONDS s; results in $out$([[ "$pack" == 1 ]] && echo /gpu-check.tar.gz)"
exit "$failed"
