/* test_rolling_static.c — rolling and torsional friction's static part
 * (rt/src/contact/penalty.c rolling_torque, rolling_anchor): a couple that
 * holds a steady load below its cap, as Coulomb's static friction does, and
 * gives the analytic net couple above it. One sphere (r 0.1 m, 5 kg, one
 * contact point: no patch of points adds a couple of its own) on the ground
 * plane with the contact of scenes/validation/stack.yaml, mu 0.8 (sticking),
 * rolling and torsional friction 0.002 m, RK4 and semi-implicit Euler at 1 ms,
 * the ground as geom 0 and as geom 1 (body[0] and body[1] swapped):
 *   a. on an incline of angle theta (gravity tilted by theta about y): the
 *      rolling couple needed to hold the ball is m g sin(theta) r against a
 *      cap of mr m g cos(theta), so it stays when tan(theta) < mr / r and
 *      rolls down when tan(theta) > mr / r with acceleration
 *      g (sin(theta) - (mr / r) cos(theta)) / (1 + I / (m r^2)) (rolling
 *      without slip, the couple at its cap). At tan(theta) = 0.8 mr / r it
 *      must not creep (a damper alone, rate I / (2 h), lets it roll down at
 *      the speed where the damper carries the load: 0.3 mm/s here); at
 *      1.5 mr / r it accelerates at the analytic rate;
 *   b. a couple T about the normal: below ms m g (T = 0.5 ms m g) the ball
 *      holds its heading (a damper alone turns it at T / (I / (2 h)),
 *      0.0049 rad/s); above (T = 2 ms m g) it spins up at
 *      (T - ms m g) / I;
 *   c. the anchor is state: saved and restored with it (a restored run goes
 *      on bit for bit), counted in the state hash (a state with its anchor
 *      cleared hashes apart and goes on apart), and forgotten when the ball
 *      leaves the ground (the slot freed).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "khz/khz.h"

#define G 9.81
#define MU 0.8
#define MR 0.002 /* rolling and torsional friction (m) */
#define M 5.0
#define R 0.1
#define IB (0.4 * M * R * R)

/* the ground plane and the sphere; gravity g (world) */
static khzModel *ball(const double g[3], int ground_last, khzIntegrator integrator) {
  khzSpec *s = khz_spec_new();
  khzGeomSpec gs, plane;
  khz_spec_defaultGeom(&plane);
  plane.type = KHZ_GEOM_PLANE;
  if (!ground_last) khz_spec_addGeom(s, &plane);
  khzBodySpec b;
  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "ball");
  snprintf(b.joint_name, sizeof b.joint_name, "ball");
  b.joint_type = KHZ_JOINT_FLOATING;
  b.mass = M;
  b.inertia[0] = b.inertia[1] = b.inertia[2] = IB;
  const double q0[7] = {0, 0, R, 1, 0, 0, 0};
  memcpy(b.q0, q0, sizeof q0);
  khz_spec_defaultGeom(&gs);
  gs.body = khz_spec_addBody(s, &b);
  gs.type = KHZ_GEOM_SPHERE;
  gs.size[0] = R;
  khz_spec_addGeom(s, &gs);
  if (ground_last) khz_spec_addGeom(s, &plane);
  khzContactOptions c; /* scenes/validation/stack.yaml */
  khz_spec_defaultContact(&c);
  c.kp_per_kg = 400000, c.kv_per_kg = 800, c.ki_per_kg = 10000;
  c.gain_mass = KHZ_GAIN_MASS_EFFECTIVE;
  c.gamma = 0.85, c.mu = MU, c.restitution = 0;
  c.rolling = c.torsional = MR;
  khz_spec_setContact(s, &c);
  khz_spec_setGravity(s, g);
  khzSleepOptions sl; /* awake throughout: a sleeping ball would hold by itself */
  khz_spec_defaultSleep(&sl);
  sl.enabled = 0;
  khz_spec_setSleep(s, &sl);
  khz_spec_setTimestep(s, 1e-3);
  khz_spec_setIntegrator(s, integrator);
  char err[256] = "";
  khzModel *m = khz_compile(s, err, sizeof err);
  if (!m) fprintf(stderr, "compile: %s\n", err);
  khz_spec_destroy(&s);
  return m;
}

static void run(const khzModel *m, khzData *d, double seconds) {
  for (long n = lround(seconds / m->timestep); n > 0; n--) khz_step(m, d);
}

static const char *int_name(khzIntegrator it) { return it == KHZ_INT_RK4 ? "rk4" : "euler"; }

/* a. the ball on an incline with tan(theta) = ratio * mr / r */
static void test_incline(int gl, khzIntegrator it) {
  double th = atan(1.5 * MR / R), g[3] = {G * sin(th), 0, -G * cos(th)};
  /* below the threshold: after 1 s to settle, 10 s without creep */
  double tl = atan(0.8 * MR / R), gl_[3] = {G * sin(tl), 0, -G * cos(tl)};
  khzModel *m = ball(gl_, gl, it);
  ENSURE(m);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);
  run(m, d, 1);
  double x1 = d->q[0];
  run(m, d, 10);
  double creep = d->q[0] - x1;
  printf("  %s, ground geom %d, tan(theta) = 0.8 mr/r: moved %.3g m from 1 s to 11 s (%.3g m/s at the end)\n",
         int_name(it), gl, creep, d->qd[0]);
  ENSURE(d->ncontact == 1);
  ENSURE(fabs(creep) < 2e-5);
  ENSURE(fabs(d->qd[0]) < 1e-5);
  ENSURE(d->warning[KHZ_WARN_BADSTATE] == 0);
  khz_deleteData(&d);
  khz_deleteModel(&m);

  /* above: rolls down at the analytic acceleration */
  m = ball(g, gl, it);
  ENSURE(m);
  if (!m) return;
  d = khz_makeData(m, 0);
  run(m, d, 1);
  double v1 = d->qd[0];
  run(m, d, 1);
  double acc = d->qd[0] - v1;
  double expect = G * (sin(th) - MR / R * cos(th)) / (1 + IB / (M * R * R));
  printf("  %s, ground geom %d, tan(theta) = 1.5 mr/r: acceleration %.5g m/s^2 (analytic %.5g)\n", int_name(it), gl,
         acc, expect);
  ENSURE(d->ncontact == 1);
  ENSURE(fabs(acc - expect) < 0.03 * expect);
  ENSURE(d->warning[KHZ_WARN_BADSTATE] == 0);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* the ball's heading: its quaternion turns about z only */
static double heading(const khzData *d) { return 2 * atan2(d->q[6], d->q[3]); }

/* b. a couple about the normal, ratio times the cap ms m g */
static void test_twist(int gl, khzIntegrator it) {
  const double g[3] = {0, 0, -G}, cap = MR * M * G;
  for (int above = 0; above < 2; above++) {
    khzModel *m = ball(g, gl, it);
    ENSURE(m);
    if (!m) return;
    khzData *d = khz_makeData(m, 0);
    run(m, d, 0.5);
    double T = above ? 2 * cap : 0.5 * cap;
    d->xfrc[6 + 5] = T;
    run(m, d, 1);
    double a1 = heading(d), w1 = d->qd[5];
    run(m, d, above ? 1 : 10);
    if (!above) {
      double turn = heading(d) - a1;
      printf("  %s, ground geom %d, couple 0.5 ms m g about the normal: turned %.3g rad from 1.5 s to 11.5 s\n",
             int_name(it), gl, turn);
      ENSURE(fabs(turn) < 1e-4);
      ENSURE(fabs(d->qd[5]) < 1e-5);
    } else {
      double alpha = d->qd[5] - w1, expect = (T - cap) / IB;
      printf("  %s, ground geom %d, couple 2 ms m g about the normal: %.5g rad/s^2 (analytic %.5g)\n", int_name(it),
             gl, alpha, expect);
      ENSURE(fabs(alpha - expect) < 0.03 * expect);
    }
    ENSURE(d->ncontact == 1);
    ENSURE(d->warning[KHZ_WARN_BADSTATE] == 0);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
}

/* c. the anchor as state */
static void test_anchor_state(void) {
  double tl = atan(0.8 * MR / R), g[3] = {G * sin(tl), 0, -G * cos(tl)};
  khzModel *m = ball(g, 0, KHZ_INT_RK4);
  ENSURE(m);
  if (!m) return;
  khzData *d = khz_makeData(m, 0), *e = khz_makeData(m, 0);
  run(m, d, 1);
  int anchored = 0;
  for (int k = 0; k < 4 * m->npair_max; k++) anchored |= d->pair_turn[k] != 0;
  ENSURE(anchored);
  size_t n = khz_stateSize(m);
  unsigned char *saved = malloc(n);
  khz_saveState(m, d, saved);
  run(m, d, 1);
  double q_on[7];
  memcpy(q_on, d->q, sizeof q_on);
  uint64_t h_on = khz_hashState(m, d);
  khz_restoreState(m, e, saved);
  run(m, e, 1);
  printf("  restored run after 1 s: q %s, hash %s\n", memcmp(e->q, q_on, sizeof q_on) ? "differs" : "identical",
         khz_hashState(m, e) == h_on ? "identical" : "differs");
  ENSURE(memcmp(e->q, q_on, sizeof q_on) == 0);
  ENSURE(khz_hashState(m, e) == h_on);
  /* the same state without its anchor: another hash, another run */
  khz_restoreState(m, e, saved);
  uint64_t h_saved = khz_hashState(m, e);
  memset(e->pair_turn, 0, 4 * (size_t)m->npair_max * sizeof(double));
  ENSURE(khz_hashState(m, e) != h_saved);
  run(m, e, 1);
  ENSURE(memcmp(e->q, q_on, sizeof q_on) != 0);
  /* thrown up: the pair separates and its anchor goes */
  d->qd[2] = 2;
  run(m, d, 0.05);
  int left = 0;
  for (int k = 0; k < 4 * m->npair_max; k++) left |= d->pair_turn[k] != 0;
  printf("  thrown off the ground: %d contacts, anchor %s\n", d->ncontact, left ? "kept" : "forgotten");
  ENSURE(d->ncontact == 0);
  ENSURE(!left);
  free(saved);
  khz_deleteData(&d);
  khz_deleteData(&e);
  khz_deleteModel(&m);
}

int main(void) {
  test_anchor_state();
  khzIntegrator its[2] = {KHZ_INT_RK4, KHZ_INT_EULER};
  for (int k = 0; k < 2; k++)
    for (int gl = 0; gl < 2; gl++) {
      test_incline(gl, its[k]);
      test_twist(gl, its[k]);
    }
  return ensure_report();
}
