#!/usr/bin/env bash
# The prepared check for a machine with an NVIDIA GPU (docs/reference.md, "GPU check"):
# configures and builds tpusim with CUDA, runs the CUDA tests, then `tpusim reference
# --backend cuda` (and, for mlp, --backend cpu) and `tpusim compare` on traces/mlp.onnx and
# traces/resnet50.onnx at a small batch. Every result goes under $OUT (default
# gpu-check-out/): each step's output in <step>.log, and summary.txt with one line per
# step: its name, exit code and what the code means. A step that fails is recorded and
# the script goes on; exit code 4 (unsupported: the CUDA executor is not built, or lacks
# an op) and 6 (no CUDA device) are expected outcomes, not failures. Exits 1 when the
# build, a test or a step failed in any other way, else 0. Each step has a time limit so
# that the whole check ends in under 8 minutes on 16 cores.
#
# Environment: OUT (results), BUILD_DIR (default build-gpu; an existing build is reused),
# JOBS (build jobs, default nproc), GPU_CHECK_BUDGET_S (the time budget, default 460 s).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
out="${OUT:-$root/gpu-check-out}"
build="${BUILD_DIR:-$root/build-gpu}"
jobs="${JOBS:-$(nproc 2>/dev/null || echo 4)}"
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
failed=0

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
# budget), its output in $out/NAME.log.
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
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  printf '%-28s rc %-3s %4ss  %s\n' "$name" "$rc" "$((SECONDS - start))" "$(meaning "$rc")" | tee -a "$summary"
  case "$rc" in
    0 | 4 | 6) ;;
    *) failed=1 ;;
  esac
  return "$rc"
}

{
  echo "tpusim gpu-check, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  else
    echo "gpu: nvidia-smi not found"
  fi
} | tee "$out/machine.txt"

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
if ! step configure 120 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"; then
  echo "gpu-check: configure failed (see $out/configure.log)" | tee -a "$summary"
  exit 1
fi
if grep -q "nvcc not found" "$out/configure.log"; then
  echo "cuda: nvcc not found: the CUDA backend is not built (set CUDACXX or put nvcc on PATH)" | tee -a "$summary"
fi
# Only what the check runs: the CLI and the test binaries that hold the CUDA tests.
targets=(tpusim)
if cmake --build "$build" --target help 2>/dev/null | grep -q "reference_cuda_test"; then
  targets+=(reference_cuda_test)
fi
if ! step build 330 cmake --build "$build" -j "$jobs" --target "${targets[@]}"; then
  echo "gpu-check: build failed (see $out/build.log)" | tee -a "$summary"
  exit 1
fi
tpusim="$build/tpusim"

# The CUDA tests skip, with their reason, where no GPU is visible.
step cuda-tests 120 ctest --test-dir "$build" -R '^Cuda' --output-on-failure --no-tests=error
skipped=$(grep -cs "(Skipped)" "$out/cuda-tests.log")
((${skipped:-0} > 0)) && echo "cuda-tests: $skipped skipped (see cuda-tests.log for the reason)" | tee -a "$summary"

# model, batch, whether the simulation is functional (its outputs compared with the references'),
# and whether the CPU reference runs too. resnet50's weights are made up (it stores shapes only;
# docs/reference.md); its functional simulation and CPU reference are left out because the CPU
# executor's direct convolution loops take minutes for its step (161 s at batch 2 on 2 cores).
seed=1
for spec in "mlp 8 functional cpu" "resnet50 2 timed cuda-only"; do
  read -r model batch sim_kind cpu <<<"$spec"
  trace="traces/$model.onnx"
  if [[ ! -f "$trace" ]]; then
    echo "$model: $trace not found, skipped" | tee -a "$summary"
    failed=1
    continue
  fi
  dir="$out/$model"
  mkdir -p "$dir"
  functional=()
  [[ "$sim_kind" == functional ]] && functional=(--functional --seed "$seed")
  step "$model-sim" 120 "$tpusim" run "$trace" --batch "$batch" --no-instructions "${functional[@]}" --out "$dir/sim"
  backends=(cuda)
  [[ "$cpu" == cpu ]] && backends+=(cpu)
  for backend in "${backends[@]}"; do
    if step "$model-reference-$backend" 120 "$tpusim" reference "$trace" --batch "$batch" --backend "$backend" \
      --seed "$seed" --out "$dir/$backend"; then
      step "$model-compare-$backend" 60 "$tpusim" compare "$dir/sim/report.json" "$dir/$backend/report.json" \
        --out "$dir/compare-$backend"
    fi
  done
done

echo "total $SECONDS s; results in $out" | tee -a "$summary"
exit "$failed"
