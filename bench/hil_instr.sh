#!/usr/bin/env bash
# Instructions per tick that the hardware-in-the-loop sensors and drives add
# to the default scene (issue 25 item 5; docs/hil.md "Cost"): callgrind's Ir
# inside bench_hil's counted_ticks (controller torques, drives, step,
# sensors), one run per variant, settled (2 s, the loose objects asleep)
# and from the reset. Instruction counts do not depend on the machine's load.
# Usage: bench/hil_instr.sh [BUILDDIR] [TICKS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build} ticks=${2:-1000}
names=("default scene" "+ 38 sensors" "+ 38 sensors, 7 drives")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for mode in settled reset; do
  flag=; [ "$mode" = reset ] && flag=--instr-reset
  printf "hil_instr: %s, %d ticks, callgrind Ir per tick\n" \
    "$([ "$mode" = reset ] && echo "from the reset (the objects awake)" || echo "settled 2 s (the loose objects asleep)")" "$ticks"
  printf "%-26s %14s %8s\n" variant "kIr/tick" ratio
  base=
  for k in 0 1 2; do
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" --toggle-collect=counted_ticks \
      "$build/bench/bench_hil" --instr "$k" --ticks "$ticks" $flag > /dev/null 2> "$tmp/err"
    ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/err")
    [ -z "$base" ] && base=$ir
    awk -v n="${names[$k]}" -v ir="$ir" -v t="$ticks" -v b="$base" \
      'BEGIN { printf "%-26s %14.1f %8.3f\n", n, ir / t / 1e3, ir / b }'
  done
done
