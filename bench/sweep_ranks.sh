#!/usr/bin/env bash
# Wall time of `tpusim sweep` in 1 process, in --jobs worker processes and over MPI ranks
# (docs/performance.md, "Sweeps across processes and machines"), each run checked to write
# the same sweep.json and sweep.csv, byte for byte, as the one-process run. The ways take
# turns, REPEATS rounds, so that a change in the machine's load falls on all of them; prints
# each way's median wall time, its speed-up over one process, and the CPU time (user + sys of
# every process) of that median run.
#
#   bench/sweep_ranks.sh [SPEC] [REPEATS]     # default bench/sweep_ranks.textproto 3
#   RANKS="1 2 4" JOBS="2" bench/sweep_ranks.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
spec="${1:-$root/bench/sweep_ranks.textproto}"
repeats="${2:-3}"
tpusim="${TPUSIM:-$root/build/tpusim}"
command -v mpirun >/dev/null || { echo "sweep_ranks.sh: needs mpirun (apt-get install openmpi-bin)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "sweep_ranks.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
mpirun_args=(--oversubscribe)
[[ "$(id -u)" == 0 ]] && mpirun_args+=(--allow-run-as-root)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

names=("1 process")
commands=("$tpusim sweep $spec")
for jobs in ${JOBS:-2}; do
  names+=("--jobs $jobs")
  commands+=("$tpusim sweep $spec --jobs $jobs")
done
for ranks in ${RANKS:-1 2 4}; do
  names+=("mpirun -np $ranks")
  commands+=("mpirun ${mpirun_args[*]} -np $ranks $tpusim sweep $spec")
done

echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start; $repeats rounds"
for ((round = 1; round <= repeats; ++round)); do
  for i in "${!commands[@]}"; do
    rm -rf "$out/$i"
    # shellcheck disable=SC2086  # the command is words
    /usr/bin/time -f "%e %U %S" -o "$out/time" ${commands[$i]} --out "$out/$i" --no-progress >/dev/null \
      2>"$out/stderr" || { cat "$out/stderr" >&2; exit 1; }
    read -r wall user sys <"$out/time"
    echo "$wall $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')" >>"$out/$i.times"
    [[ "$i" == 0 ]] || { cmp "$out/0/sweep.json" "$out/$i/sweep.json" && cmp "$out/0/sweep.csv" "$out/$i/sweep.csv"; }
  done
done
median_row() { sort -g "$1" | awk '{w[NR] = $1; c[NR] = $2} END {m = int((NR + 1) / 2); print w[m], c[m]}'; }
read -r one _ < <(median_row "$out/0.times")
printf '%-20s %10s %9s %12s\n' "" "wall (s)" "speed-up" "CPU (s)"
for i in "${!commands[@]}"; do
  read -r wall cpu < <(median_row "$out/$i.times")
  printf '%-20s %10.2f %8.2fx %12.2f\n' "${names[$i]}" "$wall" "$(awk -v a="$one" -v b="$wall" 'BEGIN {print a / b}')" "$cpu"
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; every run wrote the same sweep.json and sweep.csv"
