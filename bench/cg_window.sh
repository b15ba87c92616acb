#!/usr/bin/env bash
# Callgrind instructions (Ir) per step inside khz_stepWith over steps
# [FROM, TO) of a scene, counted in one run: a small program (below,
# compiled against BUILDDIR's libkhz.so) steps untimed to FROM and turns
# callgrind's instrumentation on there (--instr-atstart=no), so that a late
# window of a large pile costs only its own steps under callgrind. Sleeping
# off, as khz-sim run. Prints Ir per step, the state hash after TO steps and
# keeps the profile as cg.out.* in the current directory when -k is given.
# -c adds callgrind's cache simulation (32 kB 8-way L1s, a 1 MB 8-way last
# level: one core's L2 of the AMD EPYC this runs on) and prints the misses
# per step; read them per function with callgrind_annotate on the kept file.
# Needs valgrind (its callgrind.h) and a C compiler.
# -s keeps sleeping as the scene says (as khz-server and bench/cg_steps.sh).
# Usage: bench/cg_window.sh [-k] [-c] [-s] BUILDDIR SCENE.yaml FROM TO
set -euo pipefail
keep=0 cache=() sleep=0
while [ "${1:-}" = -k ] || [ "${1:-}" = -c ] || [ "${1:-}" = -s ]; do
  [ "$1" = -k ] && keep=1
  [ "$1" = -s ] && sleep=1
  [ "$1" = -c ] && cache=(--cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=1048576,8,64)
  shift
done
[ $# -eq 4 ] || { echo "usage: bench/cg_window.sh [-k] [-c] [-s] BUILDDIR SCENE.yaml FROM TO" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd) scene=$2 from=$3 to=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/window.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>
#include "khz/khz.h"
#include "khz/load.h"
int main(int argc, char **argv) {
  char err[1024];
  khzScene scene;
  khzModel *m = khz_loadModel(argv[1], &scene, err, sizeof err);
  if (!m) { fprintf(stderr, "%s\n", err); return 1; }
  khzData *d = khz_makeData(m, 0);
  if (!d) return 1;
  if (!atoi(argv[4])) d->sleep_enabled = 0;
  int from = atoi(argv[2]), to = atoi(argv[3]);
  for (int s = 0; s < from; s++) khz_step(m, d);
  CALLGRIND_START_INSTRUMENTATION;
  for (int s = from; s < to; s++) khz_step(m, d);
  CALLGRIND_STOP_INSTRUMENTATION;
  printf("%016llx\n", (unsigned long long)khz_hashState(m, d));
  return 0;
}
C
cc -O2 -o "$tmp/window" "$tmp/window.c" -I"$src/rt/include" -I"$src/loader/include" \
  -L"$build/lib" -lkhz -Wl,-rpath,"$build/lib"
valgrind --tool=callgrind --instr-atstart=no --toggle-collect=khz_stepWith ${cache[@]+"${cache[@]}"} \
  --callgrind-out-file="$tmp/cg.out" "$tmp/window" "$scene" "$from" "$to" "$sleep" > "$tmp/hash" 2> "$tmp/err"
ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/err")
printf "%s steps %d-%d: %.1f k Ir per step, state hash %s\n" "$scene" "$from" "$to" \
  "$(echo "$ir / ($to - $from) / 1000" | bc -l)" "$(cat "$tmp/hash")"
if [ ${#cache[@]} -gt 0 ]; then
  callgrind_annotate "$tmp/cg.out" 2> /dev/null | awk -v n="$((to - from))" '
    / PROGRAM TOTALS/ { gsub(",", ""); printf "per step: D1 misses %.1f k, LL (1 MB) misses %.1f k\n", ($9 + $11) / n / 1000, ($15 + $17) / n / 1000 }'
fi
[ "$keep" = 1 ] && cp "$tmp/cg.out" "cg.out.$(basename "$scene" .yaml).$from-$to"
exit 0
