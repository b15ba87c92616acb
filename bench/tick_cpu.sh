#!/usr/bin/env bash
# Which ticks of a long run are dear, and what they do. Steps a scene as
# khz-server's loop does (sleeping as the scene says, zero torque) and times
# every khz_stepWith by the thread's CPU clock: per WINDOW ticks the median,
# p99 and max ms, the awake pairs and points, the trees that may sleep awake
# and the impulse warnings at the window's start / over it; then the p50 /
# p99 / max over the first N ticks for each N given with -n (a realtime run
# of S seconds reaches only the ticks it had time for), and which ticks are
# that p99. CPU time still moves with the machine's load (caches, the
# host); for counts, -c TICK also saves the state before TICK (natively) and
# counts callgrind's Ir inside khz_stepWith for each of the next 3 ticks
# from that state (khz_restoreState: the same ticks bit for bit, state
# hashes printed), with each tick's five dearest functions.
# Needs a C compiler (and valgrind for -c).
# Usage: bench/tick_cpu.sh [-w WINDOW] [-n N]... [-c TICK] BUILDDIR SCENE TICKS
set -euo pipefail
window=250 ns=() at=-1
while [ $# -gt 0 ]; do
  case $1 in
    -w) window=$2; shift 2 ;;
    -n) ns+=("$2"); shift 2 ;;
    -c) at=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -eq 3 ] || { echo "usage: bench/tick_cpu.sh [-w WINDOW] [-n N]... [-c TICK] BUILDDIR SCENE TICKS" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd) scene=$2 ticks=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/ticks.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef CG
#include <valgrind/callgrind.h>
#endif
#include "khz/khz.h"
#include "khz/load.h"
static double cpu_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}
/* argv: scene, ticks, record file, tick to save before (-1: none), state file;
 * CG: scene, state file, ticks from it */
int main(int argc, char **argv) {
  char err[1024];
  khzScene scene;
  khzModel *m = khz_loadModel(argv[1], &scene, err, sizeof err);
  if (!m) { fprintf(stderr, "%s\n", err); return 1; }
  khzData *d = khz_makeData(m, 0);
  if (!d) return 1;
  size_t size = khz_stateSize(m);
  void *state = malloc(size);
  if (!state) return 1;
#ifdef CG
  (void)argc;
  FILE *in = fopen(argv[2], "rb");
  if (!in || fread(state, 1, size, in) != size) return 1;
  fclose(in);
  khz_restoreState(m, d, state);
  int n = atoi(argv[3]);
  CALLGRIND_START_INSTRUMENTATION;
  for (int s = 0; s < n; s++) {
    memset(d->tau, 0, (size_t)m->nv * sizeof(double));
    memset(d->xfrc, 0, 6 * (size_t)m->nbody * sizeof(double));
    khz_stepWith(m, d, m->timestep);
    CALLGRIND_DUMP_STATS;
    printf("%016llx\n", (unsigned long long)khz_hashState(m, d));
  }
  CALLGRIND_STOP_INSTRUMENTATION;
#else
  (void)argc;
  int steps = atoi(argv[2]), save = atoi(argv[4]);
  FILE *f = fopen(argv[3], "w");
  if (!f) return 1;
  for (int s = 0; s < steps; s++) {
    if (s == save) {
      khz_saveState(m, d, state);
      FILE *out = fopen(argv[5], "wb");
      if (!out || fwrite(state, 1, size, out) != size) return 1;
      fclose(out);
    }
    memset(d->tau, 0, (size_t)m->nv * sizeof(double));
    memset(d->xfrc, 0, 6 * (size_t)m->nbody * sizeof(double));
    int w0 = d->warning[KHZ_WARN_IMPULSE];
    double t0 = cpu_us();
    khz_stepWith(m, d, m->timestep);
    double t1 = cpu_us();
    int pairs = d->ncontact - d->ncontact_asleep, points = 0, awake = 0;
    for (int c = d->ncontact_asleep; c < d->ncontact; c++) points += d->contact[c].npoint;
    for (int b = 1; b < m->nbody; b++) awake += khz_bodyCanSleep(m, b) && !khz_bodySleeping(m, d, b);
    fprintf(f, "%.1f %d %d %d %d\n", t1 - t0, pairs, points, awake, d->warning[KHZ_WARN_IMPULSE] - w0);
  }
  fclose(f);
  printf("%016llx\n", (unsigned long long)khz_hashState(m, d));
#endif
  return 0;
}
C
inc=(-I"$src/rt/include" -I"$src/loader/include") lib=(-L"$build/lib" -lkhz -Wl,-rpath,"$build/lib")
cc -O2 -o "$tmp/ticks" "$tmp/ticks.c" "${inc[@]}" "${lib[@]}"
"$tmp/ticks" "$scene" "$ticks" "$tmp/rec.txt" "$at" "$tmp/state.bin" > "$tmp/hash" 2> /dev/null
/usr/bin/python3 - "$tmp/rec.txt" "$window" "$scene" "$(cat "$tmp/hash")" "${ns[@]}" <<'EOF'
import sys
rec, window, scene, digest = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ns = [int(a) for a in sys.argv[5:]]
rows = [l.split() for l in open(rec)]
ms = [float(r[0]) / 1e3 for r in rows]
def q(v, p): return v[min(len(v) - 1, int(p * len(v)))]
print(f"{scene}: thread CPU per tick (khz_stepWith), {len(ms)} ticks, sleeping as the scene says, zero torque; "
      f"state hash {digest}")
print("| ticks | median ms | p99 | max | awake pairs | points | trees awake | impulse warnings |\n|---|---|---|---|---|---|---|---|")
for a in range(0, len(ms), window):
    v, r = sorted(ms[a:a + window]), rows[a]
    warn = sum(int(x[4]) for x in rows[a:a + window])
    print(f"| {a}-{min(a + window, len(ms)) - 1} | {q(v, .5):.2f} | {q(v, .99):.2f} | {v[-1]:.2f} | {r[1]} | {r[2]} | {r[3]} | {warn} |")
for n in ns + [len(ms)]:
    n = min(n, len(ms))
    v = sorted(ms[:n])
    top = sorted(sorted(range(n), key=lambda s: -ms[s])[:max(1, n // 100)])
    print(f"first {n} ticks: p50 {q(v, .5):.2f} ms, p99 {q(v, .99):.2f}, max {v[-1]:.2f}; "
          f"the dearest 1 % (the p99's ticks): {top[0]}-{top[-1]}")
EOF
if [ "$at" -ge 0 ]; then
  cc -O2 -DCG -o "$tmp/cg" "$tmp/ticks.c" "${inc[@]}" "${lib[@]}"
  valgrind --tool=callgrind --instr-atstart=no --toggle-collect=khz_stepWith \
    --callgrind-out-file="$tmp/cg.out" "$tmp/cg" "$scene" "$tmp/state.bin" 3 > "$tmp/hashes" 2> "$tmp/err" ||
    { cat "$tmp/err" >&2; exit 1; }
  for i in 1 2 3; do
    h=$(sed -n "${i}p" "$tmp/hashes")
    callgrind_annotate "$tmp/cg.out.$i" 2> /dev/null | awk -v t=$((at + i - 1)) -v h="$h" '
      / PROGRAM TOTALS/ { gsub(",", "", $1); printf "tick %d: %.1f M Ir, state hash after it %s;", t, $1 / 1e6, h; next }
      /^-+$/ { dash++; next }
      dash >= 4 && n < 5 && $1 ~ /^[0-9,]+$/ { v = $1; gsub(",", "", v); split($NF, a, ":"); fn = $0; sub(/.*:/, "", fn); sub(/ .*/, "", fn)
        printf " %s %.1f M", fn, v / 1e6; n++ }
      END { printf "\n" }'
  done
fi
