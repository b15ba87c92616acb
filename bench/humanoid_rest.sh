#!/usr/bin/env bash
# Does MuJoCo's humanoid.xml come to rest on the floor, and where? Each
# configuration from the file's pose for 20 s (bench_peers' humanoid runs
# 3 s): the torso height and the kinetic energy at 3, 5, 10 and 20 s, the
# least kinetic energy after 2 s (and when), and the first time after 2.5 s
# the torso is below 0.26 m (the pose the fall ends in at 0.276-0.279 m is
# left: the humanoid tips over). khz built as bench_peers' humanoid_khz
# (floor contacts only; given gains, or automatic gains; RK4 or the file's
# Euler; sleeping off), MuJoCo from its own file with only the timestep (and
# the integrator) set. Untimed. Needs libmujoco-dev and a C compiler.
# Usage: bench/humanoid_rest.sh BUILDDIR [MODEL.xml]
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bench/humanoid_rest.sh BUILDDIR [MODEL.xml]" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
model=${2:-/usr/share/mujoco/model/humanoid/humanoid.xml}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/rest.c" <<'C'
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mujoco/mujoco.h>
#include "khz/khz.h"
#include "khz/load.h"
#define T_END 20.0
static const double at[4] = {3, 5, 10, 20};
typedef struct { double z[4], ke[4], ke_min, t_min, t_over; } figures;
static void add(figures *f, double t, double h, double z, double ke) {
  for (int k = 0; k < 4; k++)
    if (fabs(t - at[k]) < h / 2) f->z[k] = z, f->ke[k] = ke;
  if (t > 2.0 && ke < f->ke_min) f->ke_min = ke, f->t_min = t;
  if (t > 2.5 && z < 0.26 && isnan(f->t_over)) f->t_over = t;
}
static void quiet(void *user, const char *message) { (void)user, (void)message; }
int main(int argc, char **argv) {
  const char *path = argv[1], *engine = argv[2];
  int rk4 = atoi(argv[3]), auto_gains = atoi(argv[4]);
  double h = atof(argv[5]);
  long n = lround(T_END / h);
  figures f = {.ke_min = INFINITY, .t_over = NAN};
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
    if (!auto_gains) {
      co.kp_per_kg = 4e5, co.kv_per_kg = 800, co.ki_per_kg = 1e4;
      co.gain_mass = KHZ_GAIN_MASS_EFFECTIVE;
    }
    co.gamma = 0.85, co.mu = 1, co.restitution = 0;
    co.max_points = 10;
    khz_spec_setContact(spec, &co);
    khz_spec_setTimestep(spec, h);
    if (rk4) khz_spec_setIntegrator(spec, KHZ_INT_RK4);
    khzModel *m = khz_compile(spec, err, sizeof err);
    khzData *d = m ? khz_makeData(m, 0) : NULL;
    if (!d) { fprintf(stderr, "%s\n", err); return 1; }
    d->contact_method = KHZ_CONTACT_PENALTY;
    d->sleep_enabled = 0; /* as bench_peers */
    int torso = khz_name2body(m, "torso");
    for (long s = 1; s <= n; s++) {
      khz_step(m, d);
      double ke, pe;
      khz_energy(m, d, &ke, &pe);
      add(&f, s * h, h, d->xpos[3 * torso + 2], ke);
    }
    printf("| khz %s%s | %g |", rk4 ? "RK4" : "Euler", auto_gains ? ", automatic gains" : "", h);
  } else {
    mjModel *mm = mj_loadXML(path, NULL, err, sizeof err);
    mjData *md = mm ? mj_makeData(mm) : NULL;
    if (!md) { fprintf(stderr, "%s\n", err); return 1; }
    mm->opt.timestep = h;
    if (rk4) mm->opt.integrator = mjINT_RK4;
    mm->opt.enableflags |= mjENBL_ENERGY;
    int torso = mj_name2id(mm, mjOBJ_BODY, "torso");
    for (long s = 1; s <= n; s++) {
      mj_step(mm, md);
      mj_forward(mm, md); /* mj_step leaves the step's start in xpos and energy */
      add(&f, s * h, h, md->xpos[3 * torso + 2], md->energy[1]);
    }
    printf("| MuJoCo %s | %g |", mm->opt.integrator == mjINT_RK4 ? "RK4" : "Euler", h);
  }
  for (int k = 0; k < 4; k++) printf(" %.4f / %.2g |", f.z[k], f.ke[k]);
  printf(" %.2g at %.2f s |", f.ke_min, f.t_min);
  if (isnan(f.t_over)) printf(" not in %g s |\n", T_END);
  else printf(" %.2f s |\n", f.t_over);
  return 0;
}
C
cc -O2 -o "$tmp/rest" "$tmp/rest.c" -I"$src/rt/include" -I"$src/loader/include" \
  -L"$build/lib" -lkhz -Wl,-rpath,"$build/lib" -lmujoco -lm
echo "| configuration | h (s) | torso z (m) / kinetic energy (J) at 3 s | at 5 s | at 10 s | at 20 s | least kinetic energy after 2 s (J) | torso below 0.26 m after 2.5 s |"
echo "|---|---|---|---|---|---|---|---|"
for run in "khz 1 0 1e-3" "khz 0 0 1e-3" "khz 0 1 1e-3" "khz 0 0 5e-4" "khz 1 0 1e-4" "khz 1 1 1e-4" \
           "mujoco 0 0 1e-3" "mujoco 1 0 1e-3" "mujoco 1 0 1e-4"; do
  # shellcheck disable=SC2086
  "$tmp/rest" "$model" $run
done
