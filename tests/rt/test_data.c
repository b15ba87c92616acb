/* test_data.c — the state buffer: bit-exact copy / save / restore, the state
 * hash and run-to-run determinism, recovery from non-finite states, torque
 * clamping, and the scratch stack's bounded behaviour. */
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "random_model.h"

static void drive(const khzModel *m, khzData *d, int steps) {
  for (int s = 0; s < steps; s++) {
    for (int k = 0; k < m->nv; k++) d->tau[k] = sin(0.01 * s + k);
    khz_step(m, d);
  }
}

int main(void) {
  khzModel *m = rm_random_model(12, 1, 1, 1);
  ENSURE(m != NULL);
  if (!m) return ensure_report();

  /* determinism: two datas, same inputs, same hash */
  khzData *a = khz_makeData(m, 0), *b = khz_makeData(m, 0);
  rm_random_state(m, a->q, a->qd);
  khz_copyState(m, b, a);
  ENSURE(khz_hashState(m, a) == khz_hashState(m, b));
  drive(m, a, 500);
  drive(m, b, 500);
  ENSURE(khz_hashState(m, a) == khz_hashState(m, b));
  ENSURE(memcmp(a->q, b->q, (size_t)m->nq * sizeof(double)) == 0);

  /* save, run on, restore, run again: the same bits */
  size_t n = khz_stateSize(m);
  void *snap = malloc(n);
  khz_saveState(m, a, snap);
  uint64_t h0 = khz_hashState(m, a);
  drive(m, a, 300);
  uint64_t h1 = khz_hashState(m, a);
  ENSURE(h1 != h0);
  khz_restoreState(m, a, snap);
  ENSURE(khz_hashState(m, a) == h0);
  drive(m, a, 300);
  ENSURE(khz_hashState(m, a) == h1);
  free(snap);

  /* reset returns to q0 */
  khz_resetData(m, a);
  ENSURE(memcmp(a->q, m->q0, (size_t)m->nq * sizeof(double)) == 0);
  ENSURE(a->time == 0);

  /* a non-finite result is rolled back and the body reported */
  rm_random_state(m, a->q, a->qd);
  uint64_t before = khz_hashState(m, a);
  a->xfrc[6 * 5 + 2] = 1e308;
  a->xfrc[6 * 5 + 1] = -1e308;
  khz_step(m, a);
  ENSURE(a->warning[KHZ_WARN_BADSTATE] == 1);
  ENSURE(a->warning_body >= 1);
  for (int k = 0; k < m->nq; k++) ENSURE(isfinite(a->q[k]));
  a->xfrc[6 * 5 + 2] = a->xfrc[6 * 5 + 1] = 0;
  (void)before;

  /* NaN torques become zero, over-limit torques are clamped; both counted */
  khz_deleteModel(&m);
  {
    khzSpec *s = khz_spec_new();
    khzBodySpec bs;
    khz_spec_defaultBody(&bs);
    snprintf(bs.name, sizeof bs.name, "link");
    snprintf(bs.joint_name, sizeof bs.joint_name, "j");
    bs.joint_type = KHZ_JOINT_REVOLUTE;
    bs.axis[0] = 1, bs.axis[2] = 0;
    bs.mass = 1, bs.com[2] = 0.1;
    bs.inertia[0] = bs.inertia[1] = bs.inertia[2] = 0.01;
    bs.effort_limit = 2;
    khz_spec_addBody(s, &bs);
    char err[256];
    m = khz_compile(s, err, sizeof err);
    khz_spec_destroy(&s);
  }
  khzData *c = khz_makeData(m, 0);
  c->tau[0] = 10;
  khz_step(m, c);
  ENSURE(c->tau_applied[0] == 2 && c->warning[KHZ_WARN_EFFORT] == 1);
  c->tau[0] = NAN;
  khz_step(m, c);
  ENSURE(c->tau_applied[0] == 0 && c->warning[KHZ_WARN_BADCTRL] == 1);
  ENSURE(isfinite(c->q[0]));

  /* a stack too small for a step: the step is skipped and counted, no crash */
  khzData *tiny = khz_makeData(m, 64);
  double q_before = tiny->q[0];
  tiny->qd[0] = 1;
  khz_step(m, tiny);
  ENSURE(tiny->warning[KHZ_WARN_STACK] >= 1);
  ENSURE(tiny->q[0] == q_before);

  khz_deleteData(&a), khz_deleteData(&b), khz_deleteData(&c), khz_deleteData(&tiny);
  ENSURE(a == NULL);
  khz_deleteModel(&m);
  return ensure_report();
}
