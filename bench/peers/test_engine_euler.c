/* test_engine_euler.c — bench_peers' khz-euler and khz-euler-auto adapters
 * (engine_khz.c) step what they say, on the V3 pile: 300 steps of each
 * adapter give, bit for bit, the state of the scene's spec compiled by hand
 * with semi-implicit Euler (and, for khz-euler-auto, with every gain and
 * per-kg gain 0: khz's automatic gains), started from the same benchScene
 * state; and neither is the khz (RK4) adapter's state. The scene's spec is
 * left as it was (the khz adapter created after them steps RK4 with the
 * file's gains, as one created before them). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../tests/ensure.h"
#include "khz/khz.h"
#include "khz/load.h"
#include "peer.h"
#include "scene_convert.h"

#define STEPS 300

/* body 0's pose and velocity after STEPS steps of an adapter */
static int run_engine(const benchEngine *e, const benchScene *bs, double out[13]) {
  char err[256] = "";
  void *w = e->create(bs, err, sizeof err);
  ENSURE_MSG(w, "%s: %s", e->name, err);
  if (!w) return -1;
  for (int s = 0; s < STEPS; s++) e->step(w);
  e->get_state(w, 0, out, out + 3, out + 7, out + 10);
  e->destroy(w);
  return 0;
}

/* the same by hand: the spec compiled with Euler (auto: no gains), the
 * benchScene's state set as the adapters set it */
static int run_reference(khzScene *ks, const benchScene *bs, int auto_gains, double out[13]) {
  const khzModel *m0 = bs->khz_model;
  khzContactOptions co = m0->contact;
  if (auto_gains) co.kp = co.kv = co.ki = co.kp_per_kg = co.kv_per_kg = co.ki_per_kg = 0;
  khz_spec_setIntegrator(ks->spec, KHZ_INT_EULER);
  khz_spec_setContact(ks->spec, &co);
  char err[256];
  khzModel *m = khz_compile(ks->spec, err, sizeof err);
  khz_spec_setIntegrator(ks->spec, m0->integrator);
  khz_spec_setContact(ks->spec, &m0->contact);
  ENSURE_MSG(m, "%s", err);
  if (!m) return -1;
  ENSURE(m->integrator == KHZ_INT_EULER);
  khzData *d = khz_makeData(m, 0);
  benchKhzMap map;
  bench_khz_map_init(&map, bs);
  double pos[64][3], quat[64][4], vel[64][3], angvel[64][3];
  for (int i = 0; i < bs->nbody && i < 64; i++) {
    memcpy(pos[i], bs->body[i].pos, sizeof pos[i]), memcpy(quat[i], bs->body[i].quat, sizeof quat[i]);
    memcpy(vel[i], bs->body[i].vel, sizeof vel[i]), memcpy(angvel[i], bs->body[i].angvel, sizeof angvel[i]);
  }
  bench_khz_set_state(&map, d, (const double(*)[3])pos, (const double(*)[4])quat, (const double(*)[3])vel,
                      (const double(*)[3])angvel);
  khz_kinematics(m, d);
  khz_resetStick(m, d);
  d->contact_method = KHZ_CONTACT_PENALTY;
  d->sleep_enabled = 0;
  for (int s = 0; s < STEPS; s++) khz_step(m, d);
  bench_khz_get_state(&map, d, 0, out, out + 3, out + 7, out + 10);
  bench_khz_map_free(&map);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  return 0;
}

int main(void) {
  char err[1024];
  khzScene ks;
  khzModel *m = khz_loadModel("scenes/validation/v3_pile.yaml", &ks, err, sizeof err);
  ENSURE_MSG(m, "%s", err);
  if (!m) return ensure_report();
  ENSURE(m->integrator == KHZ_INT_RK4 && m->contact.kp_per_kg > 0); /* the file's RK4 and gains */
  khzData *d = khz_makeData(m, 0);
  benchScene bs;
  int rc = bench_scene_from_khz(m, d, "v3_pile", &bs, err, sizeof err);
  ENSURE_MSG(rc == 0, "%s", err);
  khz_deleteData(&d);
  if (rc) return ensure_report();
  ENSURE(bs.nbody <= 64);
  bs.khz_spec = ks.spec;
  double euler[13], euler_ref[13], autog[13], auto_ref[13], rk4[13];
  if (!run_engine(&bench_engine_khz_euler, &bs, euler) && !run_reference(&ks, &bs, 0, euler_ref))
    ENSURE_MSG(!memcmp(euler, euler_ref, sizeof euler), "khz-euler: z %.17g vs %.17g", euler[2], euler_ref[2]);
  if (!run_engine(&bench_engine_khz_euler_auto, &bs, autog) && !run_reference(&ks, &bs, 1, auto_ref))
    ENSURE_MSG(!memcmp(autog, auto_ref, sizeof autog), "khz-euler-auto: z %.17g vs %.17g", autog[2], auto_ref[2]);
  if (!run_engine(&bench_engine_khz, &bs, rk4)) {
    ENSURE(memcmp(rk4, euler, sizeof rk4) != 0);
    ENSURE(memcmp(rk4, autog, sizeof rk4) != 0);
    ENSURE(memcmp(euler, autog, sizeof rk4) != 0);
  }
  printf("body 0 z after %d steps: khz (RK4) %.9f, khz-euler %.9f, khz-euler-auto %.9f\n", STEPS, rk4[2],
         euler[2], autog[2]);
  /* the spec as loaded: compiled again it is the file's model */
  khzModel *again = khz_compile(ks.spec, err, sizeof err);
  ENSURE(again && again->integrator == KHZ_INT_RK4 && again->contact.kp_per_kg == m->contact.kp_per_kg);
  khz_deleteModel(&again);
  bench_scene_free(&bs);
  khz_deleteModel(&m);
  khz_deleteScene(&ks);
  return ensure_report();
}
