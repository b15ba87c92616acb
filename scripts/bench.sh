#!/usr/bin/env bash
# Builds khz in release mode and runs every benchmark in one go: khz next to
# MuJoCo, ODE and Bullet on the same scenes (bench_peers), the dynamics
# without contact (bench_dynamics) and the real-time loop (bench_loop); then
# merges their figures into one table (docs/benchmarks.md explains them).
#
# Usage: scripts/bench.sh [--quick] [BUILDDIR]
#   full run (a few minutes): bench/results/results.md, results.csv, machine.md
#   --quick (under a minute): the same files in BUILDDIR/bench-quick/
# BUILDDIR (default build) must be a release build without sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."

usage="usage: scripts/bench.sh [--quick] [BUILDDIR]"
quick=0
dir=""
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    -*) echo "bench.sh: unknown option '$arg' ($usage)" >&2; exit 2 ;;
    *)
      if [ -n "$dir" ]; then echo "bench.sh: one build directory only, got '$dir' and '$arg' ($usage)" >&2; exit 2; fi
      dir=$arg ;;
  esac
done
dir=${dir:-build}
start=$(date +%s)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

scripts/bootstrap.sh
scripts/build.sh "$dir"

# timings from a debug or sanitised build would say nothing about khz
opts=$(meson introspect --buildoptions "$dir")
buildtype=$(python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="buildtype"))' <<<"$opts")
sanitize=$(python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="b_sanitize"))' <<<"$opts")
if [ "$buildtype" != "release" ] || [ "$sanitize" != "none" ]; then
  echo "bench.sh: $dir is a '$buildtype' build with sanitizer '$sanitize'; benchmarks need a release build without sanitizers (give another BUILDDIR)" >&2
  exit 2
fi

if [ "$quick" = 1 ]; then
  mode=quick; out="$dir/bench-quick"; flag=--quick; loop_seconds=3
else
  mode=full; out=bench/results; flag=; loop_seconds=10
fi
raw="$dir/bench-raw-$mode"
rm -rf "$raw" && mkdir -p "$raw" "$out"
if [ -f "$out/results.csv" ]; then cp "$out/results.csv" "$raw/previous.csv"; fi

# the scaling piles, written for this run into the build directory
python3 bench/peers/gen_piles.py --out "$dir/bench/piles" 15 60 120 240 960

echo "bench.sh: bench_peers ($mode)" >&2
"$dir/bench/peers/bench_peers" $flag --piles "$dir/bench/piles" --json "$raw/peers.jsonl" >"$raw/peers.md"
if [ -x "$dir/bench/bench_dynamics" ]; then
  echo "bench.sh: bench_dynamics" >&2
  "$dir/bench/bench_dynamics" $flag >"$raw/dynamics.txt"
else
  echo "bench.sh: bench_dynamics not built (no MuJoCo): skipped" | tee "$raw/dynamics.txt" >&2
fi
echo "bench.sh: bench_loop (${loop_seconds} s each for khz, cyclictest and raw ZeroMQ)" >&2
"$dir/bench/loop/bench_loop" --seconds "$loop_seconds" >"$raw/loop.txt" 2>"$raw/loop.err" ||
  echo "bench.sh: bench_loop failed: $(tail -1 "$raw/loop.err")" >&2
# the haptic rate (issue 26): 10 kHz, the loop sleeping to each deadline, then
# waking KHZ_BENCH_SPIN_US (60) early and spinning to it, then the same without
# the tick's CPU-clock reads (cpu_clock false); cyclictest at 100 us. The loop
# on the last CPU, the server's I/O side and the controller off it, cyclictest
# on the same CPU (-a); KHZ_BENCH_HAPTIC_CPU=-1 pins nothing (docs/server.md,
# "Haptic rate: what the loop's CPU runs")
spin_us=${KHZ_BENCH_SPIN_US:-60}
haptic_cpu=${KHZ_BENCH_HAPTIC_CPU:-$(( $(nproc) - 1 ))}
pin=()
if [ "$haptic_cpu" -ge 0 ] && [ "$(nproc)" -ge 2 ]; then pin=(--cpu "$haptic_cpu"); fi
echo "bench.sh: bench_loop --rate 10000 ${pin[*]} (sleeping; then --spin-us $spin_us; then also --no-cpu-clock)" >&2
"$dir/bench/loop/bench_loop" --seconds "$loop_seconds" --rate 10000 "${pin[@]}" >"$raw/loop_haptic.txt" \
  2>"$raw/loop_haptic.err" || echo "bench.sh: bench_loop --rate 10000 failed: $(tail -1 "$raw/loop_haptic.err")" >&2
"$dir/bench/loop/bench_loop" --seconds "$loop_seconds" --rate 10000 "${pin[@]}" --spin-us "$spin_us" \
  >"$raw/loop_haptic_spin.txt" 2>"$raw/loop_haptic_spin.err" ||
  echo "bench.sh: bench_loop --rate 10000 --spin-us failed: $(tail -1 "$raw/loop_haptic_spin.err")" >&2
"$dir/bench/loop/bench_loop" --seconds "$loop_seconds" --rate 10000 "${pin[@]}" --spin-us "$spin_us" --no-cpu-clock \
  >"$raw/loop_haptic_spin_nocpu.txt" 2>"$raw/loop_haptic_spin_nocpu.err" ||
  echo "bench.sh: bench_loop --rate 10000 --no-cpu-clock failed: $(tail -1 "$raw/loop_haptic_spin_nocpu.err")" >&2

previous=()
if [ -f "$raw/previous.csv" ]; then previous=(--previous "$raw/previous.csv"); fi
python3 bench/merge_results.py --raw "$raw" --out "$out" --mode "$mode" --load-before "$load_before" \
  --command "scripts/bench.sh${flag:+ $flag}" "${previous[@]}"
# the programs' own outputs next to the merged table
mkdir -p "$out/raw" && cp "$raw/peers.md" "$raw/peers.jsonl" "$raw/dynamics.txt" "$raw/loop.txt" "$out/raw/"
for f in loop_haptic.txt loop_haptic_spin.txt loop_haptic_spin_nocpu.txt; do [ -f "$raw/$f" ] && cp "$raw/$f" "$out/raw/"; done
cat "$out/results.md"
echo "bench.sh: $mode run took $(( $(date +%s) - start )) s; results in $out/results.md and results.csv" >&2
