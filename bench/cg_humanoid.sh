#!/usr/bin/env bash
# Callgrind instructions (Ir) per step inside khz_stepWith over steps
# [FROM, TO) of MuJoCo's humanoid.xml built as bench_peers' humanoid_khz
# builds it (floor contacts only, v4_humanoid.yaml's given gains, mu 1, at
# most 10 points per pair, h = 1e-3; RK4 or the file's Euler; euler-auto:
# the file's Euler with automatic gains, bench_peers' khz-euler-auto row),
# as bench/cg_window.sh does for a scene file. Prints Ir per step and the state
# hash after TO steps; -k keeps the profile as cg.out.humanoid-INTEGRATOR.FROM-TO.
# Usage: bench/cg_humanoid.sh [-k] BUILDDIR rk4|euler|euler-auto FROM TO [MODEL.xml]
set -euo pipefail
keep=0
[ "${1:-}" = -k ] && keep=1 && shift
[ $# -ge 4 ] || { echo "usage: bench/cg_humanoid.sh [-k] BUILDDIR rk4|euler|euler-auto FROM TO [MODEL.xml]" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd) integ=$2 from=$3 to=$4
model=${5:-/usr/share/mujoco/model/humanoid/humanoid.xml}
auto=0
case $integ in rk4) rk4=1 ;; euler) rk4=0 ;; euler-auto) rk4=0 auto=1 ;;
  *) echo "cg_humanoid.sh: rk4, euler or euler-auto, not '$integ'" >&2; exit 2 ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/window.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>
#include "khz/khz.h"
#include "khz/load.h"
int main(int argc, char **argv) {
  int rk4 = atoi(argv[2]), from = atoi(argv[3]), to = atoi(argv[4]), auto_gains = atoi(argv[5]);
  char err[1024];
  khzSpec *spec = khz_spec_new();
  khzMjcfOptions opt;
  khz_mjcf_defaultOptions(&opt);
  if (!spec || khz_loadMJCF(spec, argv[1], &opt, err, sizeof err) < 0) { fprintf(stderr, "%s\n", err); return 1; }
  for (int g = 0; g < khz_spec_ngeom(spec); g++) { /* bench_peers' ground_contacts_only */
    khzGeomSpec *gs = khz_spec_geom(spec, g);
    gs->contype = gs->body == 0 ? 1 : 2;
    gs->conaffinity = gs->body == 0 ? 2 : 1;
  }
  khzContactOptions co;
  khz_spec_defaultContact(&co);
  co.method = KHZ_CONTACT_PENALTY;
  if (!auto_gains) {
    co.kp_per_kg = 4e5, co.kv_per_kg = 800, co.ki_per_kg = 1e4;
    co.gain_mass = KHZ_GAIN_MASS_EFFECTIVE;
  }
  co.gamma = 0.85, co.mu = 1, co.restitution = 0;
  co.max_points = 10;
  khz_spec_setContact(spec, &co);
  khz_spec_setTimestep(spec, 1e-3);
  if (rk4) khz_spec_setIntegrator(spec, KHZ_INT_RK4);
  khzModel *m = khz_compile(spec, err, sizeof err);
  if (!m) { fprintf(stderr, "%s\n", err); return 1; }
  khzData *d = khz_makeData(m, 0);
  if (!d) return 1;
  d->contact_method = KHZ_CONTACT_PENALTY;
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
valgrind --tool=callgrind --instr-atstart=no --toggle-collect=khz_stepWith \
  --callgrind-out-file="$tmp/cg.out" "$tmp/window" "$model" "$rk4" "$from" "$to" "$auto" > "$tmp/hash" 2> "$tmp/err"
ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/err")
printf "%s %s steps %d-%d: %.1f k Ir per step, state hash %s\n" "$(basename "$model")" "$integ" "$from" "$to" \
  "$(echo "$ir / ($to - $from) / 1000" | bc -l)" "$(cat "$tmp/hash")"
[ "$keep" = 1 ] && cp "$tmp/cg.out" "cg.out.humanoid-$integ.$from-$to"
exit 0
