#!/usr/bin/env bash
# Wall time, CPU time and peak memory of `tpusim run MODEL --functional`: the step's values
# computed by the CPU executor beside its timing (docs/performance.md). Runs it REPEATS times
# and prints each run and the medians.
#
#   bench/functional_step.sh [MODEL] [BATCH] [REPEATS]    # default traces/resnet50.onnx 2 5
#   TPUSIM=path/to/tpusim bench/functional_step.sh        # another build's binary
#   THREADS=2 bench/functional_step.sh                    # tpusim run --threads 2 (unset: the default, 1)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model="${1:-$root/traces/resnet50.onnx}"
batch="${2:-2}"
repeats="${3:-5}"
tpusim="${TPUSIM:-$root/build/tpusim}"
threads=()
[[ -n "${THREADS:-}" ]] && threads=(--threads "$THREADS")  # unset: also runs binaries older than --threads
[[ -x /usr/bin/time ]] || { echo "functional_step.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for ((run = 1; run <= repeats; ++run)); do
  /usr/bin/time -f "%e %U %S %M" -o "$out/time" "$tpusim" run "$model" --batch "$batch" --functional \
    "${threads[@]}" --no-instructions --out "$out/run" >/dev/null 2>"$out/stderr" || { cat "$out/stderr" >&2; exit 1; }
  cat "$out/time" >>"$out/times"
  read -r wall user sys rss <"$out/time"
  echo "run $run: wall $wall s, user $user s, sys $sys s, peak RSS $((rss / 1024)) MiB"
done
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "median of $repeats: wall $(cut -d' ' -f1 "$out/times" | median) s," \
  "user $(cut -d' ' -f2 "$out/times" | median) s, sys $(cut -d' ' -f3 "$out/times" | median) s," \
  "peak RSS $(($(cut -d' ' -f4 "$out/times" | median | cut -d. -f1) / 1024)) MiB"
