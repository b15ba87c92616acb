#!/usr/bin/env bash
# Prints every figure a behaviour-preserving change must leave bit-identical:
# each validation experiment (penalty and deepest, timing fields stripped),
# the state hash of each validation scene without its experiment (3000 steps,
# penalty and deepest), of the default scene after 2000 steps, and MuJoCo's
# humanoid's figures in bench_peers.
# Usage: bench/bitcheck.sh BUILDDIR > out.txt; diff two outputs.
set -euo pipefail
cd "$(dirname "$0")/.."
sim=${1:-build}/tools/khz-sim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
strip_timing() { grep -v -e us_per_step -e wall_time_s; }
for f in scenes/validation/*.yaml; do
  for method in penalty deepest; do
    echo "== $f $method experiment"
    "$sim" run "$f" --method "$method" | strip_timing
    # the scene alone: no experiment block, relative paths made absolute
    sed -e '/^experiment/,$d' -e "s#: \.\./#: $PWD/scenes/#" "$f" > "$tmp/scene.yaml"
    echo "== $f $method 3000 steps"
    "$sim" run "$tmp/scene.yaml" --steps 3000 --method "$method" | grep -e state_hash -e contacts_at_end
  done
done
echo "== default 2000 steps"
"$sim" run default --steps 2000 | grep -e state_hash -e contacts_at_end
echo "== MuJoCo's humanoid (bench_peers), timing stripped"
"${1:-build}"/bench/peers/bench_peers --only humanoid --engines khz --json "$tmp/h.json" > /dev/null 2>&1
grep '"humanoid"' "$tmp/h.json" | sed -E 's/"(median_us|p99_us|steps_per_s|create_s)": [^,}]*,? ?//g'
