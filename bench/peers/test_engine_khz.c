/* test_engine_khz.c — bench_peers' khz-euler engine steps the scene with
 * semi-implicit Euler and the khz engine with the scene's RK4: V1's block
 * lifted 2 m into the air falls one step, from rest, under gravity alone.
 * Semi-implicit Euler: v1 = -g h, z1 = z0 + h v1 = z0 - g h^2; RK4 is exact
 * for constant acceleration: z1 = z0 - g h^2 / 2. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../tests/ensure.h"
#include "khz/khz.h"
#include "khz/load.h"
#include "peer.h"
#include "scene_convert.h"

static void one_step(const benchEngine *e, const benchScene *s, double pos[3], double vel[3]) {
  char err[256] = "";
  void *w = e->create(s, err, sizeof err);
  ENSURE_MSG(w != NULL, "%s: %s", e->name, err);
  if (!w) return;
  double quat[4], angvel[3];
  e->step(w);
  e->get_state(w, 0, pos, quat, vel, angvel);
  e->destroy(w);
}

int main(void) {
  char err[1024] = "";
  khzScene ks;
  khzModel *m = khz_loadModel(BENCH_SOURCE_ROOT "/scenes/validation/v1_block_penetration.yaml", &ks, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  if (!m) return ensure_report();
  ENSURE(m->integrator == KHZ_INT_RK4);
  khzData *d = khz_makeData(m, 0);
  int block = khz_name2body(m, "block");
  double z0 = 2.0, h = m->timestep, g = -m->gravity[2];
  d->q[m->jnt_qadr[block] + 2] = z0; /* free joint: x y z, then the quaternion */
  benchScene bs;
  ENSURE(bench_scene_from_khz(m, d, "v1 in the air", &bs, err, sizeof err) == 0);
  bs.khz_spec = ks.spec; /* khz-euler compiles it with Euler */

  double pos[3], vel[3];
  one_step(&bench_engine_khz_euler, &bs, pos, vel);
  ENSURE_NEAR(vel[2], -g * h, 1e-15);
  ENSURE_NEAR(pos[2], z0 - g * h * h, 1e-14);
  one_step(&bench_engine_khz, &bs, pos, vel);
  ENSURE_NEAR(vel[2], -g * h, 1e-15);
  ENSURE_NEAR(pos[2], z0 - 0.5 * g * h * h, 1e-14);

  bench_scene_free(&bs);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_deleteScene(&ks);
  return ensure_report();
}
