#!/usr/bin/env bash
# Instructions and µs per step of khz's hot-path workloads for one or more
# build directories. Instructions: callgrind's Ir inside khz_stepWith (this
# machine's VM exposes no PMU, so `perf stat -e instructions` is not
# supported; Ir is the same count, deterministic, one run each). Time: the
# workloads run interleaved across the builds, RUNS times; medians.
# Usage: bench/perfcount.sh [-n RUNS] [--no-instr] BUILDDIR [BUILDDIR...]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5 instr=1
while [ $# -gt 0 ]; do
  case $1 in
    -n) runs=$2; shift 2 ;;
    --no-instr) instr=0; shift ;;
    *) break ;;
  esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the validation scenes without their experiment blocks (khz-sim then takes --steps)
for f in v3_pile v4_humanoid stack; do
  sed -e '/^experiment/,$d' -e "s#: \.\./#: $PWD/scenes/#" scenes/validation/$f.yaml > "$tmp/$f.yaml"
done
workloads=(
  "pile|tools/khz-sim run $tmp/v3_pile.yaml --steps 3000"
  "humanoid_urdf|tools/khz-sim run $tmp/v4_humanoid.yaml --steps 3000"
  "stack|tools/khz-sim run $tmp/stack.yaml --steps 3000"
  "default|tools/khz-sim run default --steps 3000"
  "humanoid_mjcf|bench/peers/bench_peers --only humanoid --engines khz --json $tmp/h.json"
)
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
steps_of() { case $1 in humanoid_mjcf) echo 3000 ;; *) echo "$2" | sed 's/.*--steps \([0-9]*\).*/\1/' ;; esac; }
for r in $(seq "$runs"); do
  for w in "${workloads[@]}"; do
    name=${w%%|*} cmd=${w#*|}
    for b in "$@"; do
      key=$(echo "$b" | tr / _)
      out=$($b/$cmd 2>/dev/null)
      if [ "$name" = humanoid_mjcf ]; then
        grep '"humanoid"' "$tmp/h.json" | sed 's/.*"median_us": \([0-9.]*\).*/\1/' >> "$tmp/$name.$key.us"
      else
        echo "$out" | sed -n 's/.*"us_per_step": \([0-9.]*\).*/\1/p' >> "$tmp/$name.$key.us"
      fi
      if [ "$instr" = 1 ] && [ "$r" = 1 ]; then
        valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" --toggle-collect=khz_stepWith \
          $b/$cmd > /dev/null 2> "$tmp/cgerr"
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cgerr" > "$tmp/$name.$key.ins"
      fi
    done
  done
done
printf "%-14s" workload
for b in "$@"; do printf " %18s %10s" "$b:kinstr/step" "us/step"; done
[ $# -eq 2 ] && printf " %10s %10s" "instr b/a" "us b/a"
echo
for w in "${workloads[@]}"; do
  name=${w%%|*} cmd=${w#*|}
  steps=$(steps_of "$name" "$cmd")
  printf "%-14s" "$name"
  prev_i= prev_u=
  for b in "$@"; do
    key=$(echo "$b" | tr / _)
    i=$(cat "$tmp/$name.$key.ins" 2>/dev/null || echo 0) u=$(median < "$tmp/$name.$key.us")
    printf " %18.1f %10.2f" "$(echo "$i / $steps / 1000" | bc -l)" "$u"
    if [ -n "$prev_u" ]; then
      ri=$( [ "$prev_i" != 0 ] && echo "$i / $prev_i" | bc -l || echo 0)
      printf " %10.3f %10.3f" "$ri" "$(echo "$u / $prev_u" | bc -l)"
    fi
    prev_i=$i prev_u=$u
  done
  echo
done
