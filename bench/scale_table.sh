#!/usr/bin/env bash
# The speed table of docs/performance.md ("Speed at every scale"): each row's whole-process wall
# time, CPU time and peak memory, REPEATS times, and the medians. Give another build's directory
# as BUILD to measure it beside this one (a ratio is only fair between runs in the same session
# on the same machine).
#
#   bench/scale_table.sh [ROW...] [-- REPEATS]   # rows: bert_4096 resnet50 pe_by_pe ici_4096; default all, 3
#   BUILD=/path/to/other/build bench/scale_table.sh resnet50
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD:-$root/build}"
rows=()
repeats=3
while (($#)); do
  if [[ "$1" == "--" ]]; then repeats="$2"; break; fi
  rows+=("$1")
  shift
done
((${#rows[@]})) || rows=(bert_4096 resnet50 pe_by_pe ici_4096)
[[ -x /usr/bin/time ]] || { echo "scale_table.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# The two CLI rows: whole-process wall time under /usr/bin/time.
command_of() {
  case "$1" in
    bert_4096) echo "$build/tpusim run $root/traces/bert_base.onnx --batch 8 --topology 16x16x16 --no-instructions --no-progress --out $out/run" ;;
    resnet50) echo "$build/tpusim run $root/traces/resnet50.onnx --batch 128 --no-instructions --no-progress --out $out/run" ;;
  esac
}
# The two model rows: Google Benchmark's own median per iteration.
benchmark_of() {
  case "$1" in
    pe_by_pe) echo "$build/bench/mxu_bench BM_PeByPeGemmZeros/2048/8192/2048" ;;
    ici_4096) echo "$build/bench/ici_bench BM_TorusAllReduce64MiB/16" ;;
  esac
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for row in "${rows[@]}"; do
  case "$row" in
    bert_4096 | resnet50) ;;
    pe_by_pe | ici_4096)
      read -r binary filter <<<"$(benchmark_of "$row")"
      "$binary" --benchmark_filter="^$filter\$" --benchmark_repetitions="$repeats" \
        --benchmark_report_aggregates_only=true 2>/dev/null | grep -E "$([[ $repeats -gt 1 ]] && echo _median || echo ^BM)" |
        sed "s/^/$row: /"
      continue ;;
    *) echo "scale_table.sh: unknown row '$row' (bert_4096, resnet50, pe_by_pe, ici_4096)" >&2; exit 2 ;;
  esac
  cmd="$(command_of "$row")"
  : >"$out/times"
  for ((run = 1; run <= repeats; ++run)); do
    # shellcheck disable=SC2086  # the command is a word list
    /usr/bin/time -f "%e %U %S %M" -o "$out/time" $cmd >/dev/null 2>"$out/stderr" || { cat "$out/stderr" >&2; exit 1; }
    cat "$out/time" >>"$out/times"
  done
  echo "$row: median of $repeats: wall $(cut -d' ' -f1 "$out/times" | median) s," \
    "CPU $(awk '{print $2 + $3}' "$out/times" | median) s," \
    "peak RSS $(($(cut -d' ' -f4 "$out/times" | median | cut -d. -f1) / 1024)) MiB"
done
