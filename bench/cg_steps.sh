#!/usr/bin/env bash
# Callgrind instructions (Ir) inside khz_stepWith for EVERY step of a scene,
# as khz-server's loop steps it (sleeping as the scene says, zero torque: the
# watchdog's safe command with no controller): callgrind dumps its counters
# after each step (CALLGRIND_DUMP_STATS, --combine-dumps) and the totals are
# read back per step. Which ticks are dear, by count rather than by wall time
# on a loaded machine: prints per WINDOW steps the median, p90 and max Ir, the
# awake contact pairs, their points and the trees that may sleep awake at the window's
# start, then the TOP dearest steps with their five dearest functions
# (exclusive Ir). Needs valgrind (its callgrind.h) and a C compiler; about
# 20 kB of profile per step in a temporary directory.
# Usage: bench/cg_steps.sh [-w WINDOW] [-t TOP] BUILDDIR SCENE STEPS
#   SCENE: default, a .yaml, .urdf or .xml (as khz-server --scene)
set -euo pipefail
window=250 top=8
while [ $# -gt 0 ]; do
  case $1 in
    -w) window=$2; shift 2 ;;
    -t) top=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -eq 3 ] || { echo "usage: bench/cg_steps.sh [-w WINDOW] [-t TOP] BUILDDIR SCENE STEPS" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd) scene=$2 steps=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/steps.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
  int steps = atoi(argv[2]);
  FILE *f = fopen(argv[3], "w");
  if (!f) return 1;
  for (int s = 0; s < steps; s++) {
    memset(d->tau, 0, (size_t)m->nv * sizeof(double));
    memset(d->xfrc, 0, 6 * (size_t)m->nbody * sizeof(double));
    khz_stepWith(m, d, m->timestep);
    CALLGRIND_DUMP_STATS;
    int pairs = d->ncontact - d->ncontact_asleep, points = 0, awake = 0;
    for (int c = d->ncontact_asleep; c < d->ncontact; c++) points += d->contact[c].npoint;
    for (int b = 1; b < m->nbody; b++) awake += khz_bodyCanSleep(m, b) && !khz_bodySleeping(m, d, b);
    fprintf(f, "%d %d %d\n", pairs, points, awake);
  }
  fclose(f);
  printf("%016llx\n", (unsigned long long)khz_hashState(m, d));
  return 0;
}
C
cc -O2 -o "$tmp/steps" "$tmp/steps.c" -I"$src/rt/include" -I"$src/loader/include" \
  -L"$build/lib" -lkhz -Wl,-rpath,"$build/lib"
valgrind --tool=callgrind --toggle-collect=khz_stepWith --combine-dumps=yes --compress-strings=yes \
  --callgrind-out-file="$tmp/cg.out" "$tmp/steps" "$scene" "$steps" "$tmp/rec.txt" > "$tmp/hash" 2> "$tmp/err" ||
  { cat "$tmp/err" >&2; exit 1; }
/usr/bin/python3 - "$tmp/cg.out" "$tmp/rec.txt" "$window" "$top" "$scene" "$(cat "$tmp/hash")" <<'EOF'
import collections, re, sys
cg, rec, window, top, scene, digest = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
recs = [l.split() for l in open(rec)]
# one part per step: its total and its exclusive cost per function
names, fn, part, after_call = {}, None, 0, False
total, excl = {}, collections.defaultdict(collections.Counter)
for line in open(cg):
    if line.startswith("part:"): part = int(line.split()[1]); continue
    if line.startswith("totals:"): total[part] = int(line.split()[1]); continue
    m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?", line)
    if m:
        if m.group(3): names[m.group(2)] = m.group(3).strip()
        if m.group(1) == "fn": fn = m.group(2)
        continue
    if line.startswith("calls="): after_call = True; continue
    if after_call: after_call = False; continue  # a call's inclusive cost, not fn's own
    f = line.split()
    if len(f) >= 2 and (line[0].isdigit() or line[0] in "+-*"):
        try: excl[part][names.get(fn, fn)] += int(f[1])
        except ValueError: pass
ir = [total.get(s + 1, 0) for s in range(len(recs))]
def q(v, p): return v[min(len(v) - 1, int(p * (len(v) - 1)))]
print(f"{scene}: callgrind Ir per step inside khz_stepWith, {len(ir)} steps, sleeping as the scene says, "
      f"zero torque; state hash {digest}")
print("| steps | median k Ir | p90 | max | awake pairs | points | trees awake |\n|---|---|---|---|---|---|---|")
for a in range(0, len(ir), window):
    v = sorted(ir[a:a + window])
    r = recs[a]
    print(f"| {a}-{min(a + window, len(ir)) - 1} | {q(v, .5) / 1e3:.1f} | {q(v, .9) / 1e3:.1f} | {v[-1] / 1e3:.1f} | "
          f"{r[0]} | {r[1]} | {r[2]} |")
# a realtime run of N ticks whose later ticks are cheaper (all asleep) has
# its p99 at the (N / 100)th dearest tick: 200 for 20 s, 600 for 60 s at 1 kHz
desc = sorted(ir, reverse=True)
for rank in (200, 600):
    if rank <= len(desc):
        print(f"{rank}th dearest step: {desc[rank - 1] / 1e3:.1f} k Ir (p99 of a {rank // 10} s run at 1 kHz)")
print(f"\nthe {top} dearest steps (k Ir; awake pairs / points; their five dearest functions, exclusive k Ir)")
for s in sorted(sorted(range(len(ir)), key=lambda s: -ir[s])[:top]):
    fns = ", ".join(f"{k} {v / 1e3:.0f}" for k, v in excl[s + 1].most_common(5))
    print(f"  step {s}: {ir[s] / 1e3:.1f} ({recs[s][0]} / {recs[s][1]}): {fns}")
EOF
