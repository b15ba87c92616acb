#!/usr/bin/env bash
# MuJoCo's humanoid.xml on the floor for 3 s from the file's pose: the torso
# height at 1 s and 3 s and the floor penetration (the deepest contact with
# the floor at each step's detection: khz's point depth, MuJoCo's -dist of
# its contacts with the floor geom), for khz built as bench_peers'
# humanoid_khz (given gains; RK4, or the file's Euler) and for MuJoCo (its
# own file, only the timestep set; Euler, or RK4), at h = 1e-3 and the
# references. Untimed. Needs libmujoco-dev and a C compiler.
# Usage: bench/humanoid_accuracy.sh BUILDDIR [MODEL.xml]
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bench/humanoid_accuracy.sh BUILDDIR [MODEL.xml]" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
model=${2:-/usr/share/mujoco/model/humanoid/humanoid.xml}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/acc.c" <<'C'
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mujoco/mujoco.h>
#include "khz/khz.h"
#include "khz/load.h"
typedef struct { double z1, z3, pmax, pfall, plying, plying_max; } figures;
static void add(figures *f, int s, int n, double h, double z, double pen) {
  double t = (s + 1) * h;
  if (fabs(t - 1.0) < h / 2) f->z1 = z;
  if (s == n - 1) f->z3 = z;
  if (pen > f->pmax) f->pmax = pen;
  if (t <= 1.0 && pen > f->pfall) f->pfall = pen;
  if (t > 2.0) {
    f->plying += pen;
    if (pen > f->plying_max) f->plying_max = pen;
  }
}
static void quiet(void *user, const char *message) { (void)user, (void)message; }
int main(int argc, char **argv) {
  const char *path = argv[1], *engine = argv[2];
  int rk4 = atoi(argv[3]);
  double h = atof(argv[4]);
  int n = (int)lround(3.0 / h), nlying = (int)lround(1.0 / h);
  figures f = {0};
  char err[1024];
  if (!strcmp(engine, "khz")) {
    khzSpec *spec = khz_spec_new();
    khzMjcfOptions opt;
    khz_mjcf_defaultOptions(&opt);
    opt.warn = quiet;
    if (!spec || khz_loadMJCF(spec, path, &opt, err, sizeof err) < 0) { fprintf(stderr, "%s\n", err); return 1; }
    for (int g = 0; g < khz_spec_ngeom(spec); g++) { /* bench_peers' ground_contacts_only */
      khzGeomSpec *gs = khz_spec_geom(spec, g);
      gs->contype = gs->body == 0 ? 1 : 2;
      gs->conaffinity = gs->body == 0 ? 2 : 1;
    }
    khzContactOptions co;
    khz_spec_defaultContact(&co);
    co.method = KHZ_CONTACT_PENALTY;
    co.kp_per_kg = 4e5, co.kv_per_kg = 800, co.ki_per_kg = 1e4;
    co.gain_mass = KHZ_GAIN_MASS_EFFECTIVE;
    co.gamma = 0.85, co.mu = 1, co.restitution = 0;
    co.max_points = 10;
    khz_spec_setContact(spec, &co);
    khz_spec_setTimestep(spec, h);
    if (rk4) khz_spec_setIntegrator(spec, KHZ_INT_RK4);
    khzModel *m = khz_compile(spec, err, sizeof err);
    khzData *d = m ? khz_makeData(m, 0) : NULL;
    if (!d) { fprintf(stderr, "%s\n", err); return 1; }
    d->contact_method = KHZ_CONTACT_PENALTY;
    int torso = khz_name2body(m, "torso");
    for (int s = 0; s < n; s++) {
      khz_step(m, d);
      double pen = 0;
      for (int i = 0; i < d->ncontact; i++)
        for (int k = 0; k < d->contact[i].npoint; k++)
          pen = fmax(pen, d->cpoint[d->contact[i].point_adr + k].depth);
      add(&f, s, n, h, d->xpos[3 * torso + 2], pen);
    }
    printf("| khz %s | %g |", rk4 ? "RK4" : "Euler", h);
  } else {
    mjModel *mm = mj_loadXML(path, NULL, err, sizeof err);
    mjData *md = mm ? mj_makeData(mm) : NULL;
    if (!md) { fprintf(stderr, "%s\n", err); return 1; }
    mm->opt.timestep = h;
    if (rk4) mm->opt.integrator = mjINT_RK4;
    int torso = mj_name2id(mm, mjOBJ_BODY, "torso"), floor = mj_name2id(mm, mjOBJ_GEOM, "floor");
    for (int s = 0; s < n; s++) {
      mj_step(mm, md);
      double pen = 0;
      for (int i = 0; i < md->ncon; i++)
        if (md->contact[i].geom1 == floor || md->contact[i].geom2 == floor) pen = fmax(pen, -md->contact[i].dist);
      mj_kinematics(mm, md); /* mj_step leaves the step's start in xpos */
      add(&f, s, n, h, md->xpos[3 * torso + 2], pen);
    }
    printf("| MuJoCo %s | %g |", mm->opt.integrator == mjINT_RK4 ? "RK4" : "Euler", h);
  }
  printf(" %.4f | %.4f | %.2f | %.2f | %.2f / %.2f |\n", f.z1, f.z3, 1e3 * f.pfall, 1e3 * f.pmax,
         1e3 * f.plying / nlying, 1e3 * f.plying_max);
  return 0;
}
C
cc -O2 -o "$tmp/acc" "$tmp/acc.c" -I"$src/rt/include" -I"$src/loader/include" \
  -L"$build/lib" -lkhz -Wl,-rpath,"$build/lib" -lmujoco -lm
echo "| configuration | h (s) | torso z at 1 s (m) | at 3 s | deepest floor contact 0-1 s (mm) | 0-3 s | lying 2-3 s: mean / max (mm) |"
echo "|---|---|---|---|---|---|---|"
for run in "khz 1 1e-3" "khz 0 1e-3" "khz 0 5e-4" "khz 1 1e-4" "mujoco 0 1e-3" "mujoco 1 1e-3" "mujoco 1 1e-4"; do
  # shellcheck disable=SC2086
  "$tmp/acc" "$model" $run
done
