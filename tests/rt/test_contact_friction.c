/* test_contact_friction.c — regressions of resting contact (rt/src/contact/penalty.c,
 * rt/src/collision/narrowphase.c): one free body on the ground plane with the
 * contact of scenes/validation/stack.yaml (effective-mass gains, restitution
 * 0), RK4 at 1 ms, each case with the ground as geom 0 and as geom 1 (which
 * swaps body[0] and body[1] of the pair: friction must not care):
 *   a. a box pushed inside the friction cone sticks (guards the friction
 *      spring's stretch: the slip accumulated since sticking began, not reset
 *      every step), outside it slides at (F - mu m g) / m;
 *   b. a cylinder spinning on its flat face stops (guards the torsional
 *      friction of its rim points);
 *   c. a cylinder lying on its side comes to rest when its lowest line falls
 *      between two of its 16 rim samples (guards the exact rim points: no
 *      sinking between samples, no hopping);
 *   d. a rolling sphere keeps rolling without rolling friction and stops at
 *      the rate the rolling couple sets with rolling_friction 0.01 m;
 *   e. a sphere dropped with restitution 0 does not bounce (guards the slow
 *      release of the penetration an impact leaves, which a spring alone
 *      would turn into 1/2 kp d^2 of kinetic energy);
 *   f. scenes/validation/stack.yaml's five boxes under the deepest-point
 *      method with its default contact.deepest_stage (stacked) stand 60 s at
 *      h - 1 ulp, h and h + 1 ulp: no box sinks 1 cm (guards the spring of
 *      the stage's deepest point and the integral at its steady state where
 *      other pairs hold a pair's bodies; with the step's point, KHZ_TEST_NO_STAGE
 *      set, the stack falls, its boxes 1.6 m down); and one box of that stack
 *      alone on the ground, a lone pair, keeps the paper's point of the step:
 *      its trajectory under the default is bit for bit that with the option
 *      off, and differs from the stage's point everywhere (its corners do
 *      change, so the comparison sees the choice).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "khz/khz.h"

#define G 9.81
#define MU 0.8

/* the ground plane and one free body with one geom; q0 = [pos, quat],
 * inertia = principal moments about the centre of mass; ground_last: the
 * plane is added after the body's geom */
static khzModel *one_body(khzGeomType type, const double size[3], double mass,
                          const double inertia[3], const double q0[7], double rolling,
                          int ground_last) {
  khzSpec *s = khz_spec_new();
  khzGeomSpec g, plane;
  khz_spec_defaultGeom(&plane);
  plane.type = KHZ_GEOM_PLANE; /* on body 0, the world */
  if (!ground_last) khz_spec_addGeom(s, &plane);
  khzBodySpec b;
  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "obj");
  snprintf(b.joint_name, sizeof b.joint_name, "obj");
  b.joint_type = KHZ_JOINT_FLOATING;
  b.mass = mass;
  memcpy(b.inertia, inertia, 3 * sizeof(double));
  memcpy(b.q0, q0, 7 * sizeof(double));
  khz_spec_defaultGeom(&g);
  g.body = khz_spec_addBody(s, &b);
  g.type = type;
  memcpy(g.size, size, sizeof g.size);
  khz_spec_addGeom(s, &g);
  if (ground_last) khz_spec_addGeom(s, &plane);

  khzContactOptions c; /* scenes/validation/stack.yaml */
  khz_spec_defaultContact(&c);
  c.kp_per_kg = 400000, c.kv_per_kg = 800, c.ki_per_kg = 10000;
  c.gain_mass = KHZ_GAIN_MASS_EFFECTIVE;
  c.gamma = 0.85, c.mu = MU, c.restitution = 0;
  c.rolling = rolling;
  khz_spec_setContact(s, &c);
  khz_spec_setTimestep(s, 1e-3);
  khz_spec_setIntegrator(s, KHZ_INT_RK4);
  char err[256] = "";
  khzModel *m = khz_compile(s, err, sizeof err);
  if (!m) fprintf(stderr, "compile: %s\n", err);
  khz_spec_destroy(&s);
  return m;
}

static void run(const khzModel *m, khzData *d, double seconds) {
  for (long n = lround(seconds / m->timestep); n > 0; n--) khz_step(m, d);
}

/* qd = [com velocity (world), angular velocity (body axes)] */
static double kinetic(const khzModel *m, const khzData *d) {
  const double *v = d->qd, *I = m->body_inertia + 9;
  return 0.5 * m->body_mass[1] * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) +
         0.5 * (I[0] * v[3] * v[3] + I[4] * v[4] * v[4] + I[8] * v[5] * v[5]);
}

static void done(khzModel **m, khzData **d) {
  ENSURE((*d)->warning[KHZ_WARN_BADSTATE] == 0);
  khz_deleteData(d);
  khz_deleteModel(m);
}

/* a. a 10 kg box, 0.2 m half extents, pushed at its centre of mass */
static void test_box_push(int gl) {
  const double M = 10, a = 0.2, Ib = M * 2 * a * a / 3;
  const double size[3] = {a, a, a}, inertia[3] = {Ib, Ib, Ib}, q0[7] = {0, 0, a, 1, 0, 0, 0};
  khzModel *m = one_body(KHZ_GEOM_BOX, size, M, inertia, q0, 0, gl);
  khzData *d = khz_makeData(m, 0);

  /* F = mu m g / 2 stays inside the cone: the box gives only by the springs'
   * compliance, F / (kp / 4) = 0.16 mm of shear plus some tilt and a little
   * slip while the suddenly applied load overshoots (0.3 mm in all), all
   * within the first 0.5 s; after that it must not move at all */
  run(m, d, 0.5); /* settle */
  double x0 = d->q[0], y0 = d->q[1];
  d->xfrc[6 + 0] = 0.5 * MU * M * G;
  run(m, d, 0.5);
  double x1 = d->q[0], y1 = d->q[1];
  run(m, d, 1.5);
  double disp = hypot(d->q[0] - x0, d->q[1] - y0), creep = hypot(d->q[0] - x1, d->q[1] - y1);
  printf("  box, F = 0.5 mu m g for 2 s: moved %.3g m, %.3g m of it in the last 1.5 s\n", disp,
         creep);
  ENSURE(disp < 1e-3);
  ENSURE(creep < 1e-6);

  /* F = 1.5 mu m g: Coulomb sliding, a = (F - mu m g) / m = mu g / 2 */
  khz_resetData(m, d);
  khz_resetStick(m, d);
  run(m, d, 0.5);
  x0 = d->q[0];
  d->xfrc[6 + 0] = 1.5 * MU * M * G;
  run(m, d, 0.5);
  double v1 = d->qd[0];
  run(m, d, 1.0);
  double acc = d->qd[0] - v1, expect = 0.5 * MU * G;
  run(m, d, 0.5);
  printf("  box, F = 1.5 mu m g: slid %.3g m in 2 s, acceleration %.4g m/s^2 (Coulomb %.4g)\n",
         d->q[0] - x0, acc, expect);
  ENSURE(d->q[0] - x0 > 0.5 * expect * 4 / 2); /* half of a t^2 / 2 at least */
  ENSURE(fabs(acc - expect) < 0.2 * expect);
  done(&m, &d);
}

/* b. a cylinder (r 0.1 m, half-length 0.08 m, 20 kg) released on its flat
 * face spinning at 2 rad/s about the vertical. Coulomb friction at its rim
 * points decelerates it at 2 mu g / r = 160 rad/s^2: it stops in ~13 ms. */
static void test_cylinder_spin(int gl) {
  const double M = 20, r = 0.1, hl = 0.08, Ix = M * (3 * r * r + 4 * hl * hl) / 12;
  const double size[3] = {r, hl, 0}, q0[7] = {0, 0, hl, 1, 0, 0, 0};
  const double inertia[3] = {Ix, Ix, M * r * r / 2};
  khzModel *m = one_body(KHZ_GEOM_CYLINDER, size, M, inertia, q0, 0, gl);
  khzData *d = khz_makeData(m, 0);
  d->qd[5] = 2;
  run(m, d, 0.5);
  double w = sqrt(d->qd[3] * d->qd[3] + d->qd[4] * d->qd[4] + d->qd[5] * d->qd[5]);
  printf("  cylinder on its face spun at 2 rad/s: |w| %.3g rad/s after 0.5 s\n", w);
  ENSURE(w < 1e-3);
  done(&m, &d);
}

/* c. the same cylinder on its side (axis along x), turned about its axis by
 * half the rim samples' spacing, pi / 16, so that its lowest line lies
 * between two samples, released at rest 1 mm above the ground. It must come
 * to rest at height r (the static penetration is 5e-5 m) and stay there. */
static void test_cylinder_side(int gl) {
  const double M = 20, r = 0.1, hl = 0.08, Ix = M * (3 * r * r + 4 * hl * hl) / 12;
  const double s = sqrt(0.5), c = cos(M_PI / 32), sn = sin(M_PI / 32); /* q_y(pi/2) q_z(pi/16) */
  const double size[3] = {r, hl, 0}, q0[7] = {0, 0, r + 1e-3, s * c, s * sn, s * c, s * sn};
  const double inertia[3] = {Ix, Ix, M * r * r / 2};
  khzModel *m = one_body(KHZ_GEOM_CYLINDER, size, M, inertia, q0, 0, gl);
  khzData *d = khz_makeData(m, 0);
  run(m, d, 1.0);
  double kemax = 0, dzmax = 0; /* over the second second: a hop shows in both */
  for (int n = 0; n < 1000; n++) {
    khz_step(m, d);
    kemax = fmax(kemax, kinetic(m, d));
    dzmax = fmax(dzmax, fabs(d->q[2] - r));
  }
  printf("  cylinder on its side: kinetic energy %.3g J at 2 s (max %.3g J over 1-2 s), "
         "|z - r| up to %.3g m\n", kinetic(m, d), kemax, dzmax);
  ENSURE(kinetic(m, d) < 1e-6);
  ENSURE(kemax < 1e-6);
  ENSURE(dzmax < 1e-3);
  done(&m, &d);
}

/* d. a sphere (r 0.1 m, 5 kg) set rolling at 0.5 m/s once it rests. Its
 * contact point does not slip, so only rolling friction can stop it: the
 * couple 0.01 m * m g decelerates it at 0.01 g / (1.4 r) = 0.70 m/s^2 (stops
 * in 0.7 s), then the damper holds it. Returns the speed after 2 s. */
static double rolled_speed(int gl, double rolling, double *decel) {
  const double M = 5, r = 0.1, I = 0.4 * M * r * r;
  const double size[3] = {r, 0, 0}, inertia[3] = {I, I, I}, q0[7] = {0, 0, r, 1, 0, 0, 0};
  khzModel *m = one_body(KHZ_GEOM_SPHERE, size, M, inertia, q0, rolling, gl);
  khzData *d = khz_makeData(m, 0);
  run(m, d, 0.2);
  d->qd[0] = 0.5, d->qd[4] = 0.5 / r; /* rolling along +x spins about +y */
  run(m, d, 0.1);
  double v1 = d->qd[0];
  run(m, d, 0.3);
  *decel = (v1 - d->qd[0]) / 0.3;
  run(m, d, 1.6);
  double v = hypot(d->qd[0], d->qd[1]);
  done(&m, &d);
  return v;
}

static void test_rolling(int gl) {
  double a0, a1, v0 = rolled_speed(gl, 0, &a0), v1 = rolled_speed(gl, 0.01, &a1);
  double expect = 0.01 * G / 1.4 / 0.1;
  printf("  sphere rolled at 0.5 m/s: after 2 s %.4g m/s without rolling friction, %.3g m/s "
         "with 0.01 m (deceleration %.3g m/s^2, expected %.3g)\n", v0, v1, a1, expect);
  /* a rigid ball rolls on at its speed: no loss, and no gain (guards the
   * round contact point: carried along as a material point it would rise
   * ahead of the centre and its normal force would drive the rolling) */
  ENSURE(fabs(v0 - 0.5) < 5e-3);
  ENSURE(v1 < 1e-3);
  ENSURE(fabs(a1 - expect) < 0.2 * expect);
}

/* e. the sphere dropped from 0.3 m (2.4 m/s: up to 2.4 mm of penetration
 * when the contact is first seen) with restitution 0: after the impact it
 * may only sink to its resting height, never rise above it */
static void test_drop(int gl) {
  const double M = 5, r = 0.1, I = 0.4 * M * r * r;
  const double size[3] = {r, 0, 0}, inertia[3] = {I, I, I}, q0[7] = {0, 0, r + 0.3, 1, 0, 0, 0};
  khzModel *m = one_body(KHZ_GEOM_SPHERE, size, M, inertia, q0, 0, gl);
  khzData *d = khz_makeData(m, 0);
  while (!d->ncontact && d->time < 1) khz_step(m, d);
  double rise = -1;
  for (int n = 0; n < 500; n++) {
    khz_step(m, d);
    rise = fmax(rise, d->q[2] - r);
  }
  printf("  sphere dropped 0.3 m: highest %.3g m above its resting height after the impact\n", rise);
  ENSURE(d->ncontact);
  ENSURE(rise < 1e-3);
  done(&m, &d);
}

/* f. nbox boxes of scenes/validation/stack.yaml one on another, deepest-point
 * method, contact.deepest_stage = mode, h = 1 ms + ulp ulps */
static khzModel *stack_model(int nbox, int mode, int ulp) {
  khzSpec *s = khz_spec_new();
  khzGeomSpec g;
  khz_spec_defaultGeom(&g);
  g.type = KHZ_GEOM_PLANE;
  khz_spec_addGeom(s, &g);
  for (int i = 0; i < nbox; i++) {
    khzBodySpec b;
    khz_spec_defaultBody(&b);
    snprintf(b.name, sizeof b.name, "box%d", i + 1);
    snprintf(b.joint_name, sizeof b.joint_name, "box%d", i + 1);
    b.joint_type = KHZ_JOINT_FLOATING;
    b.mass = 5;
    b.inertia[0] = b.inertia[1] = b.inertia[2] = 5 * 2 * 0.2 * 0.2 / 3;
    double q0[7] = {0, 0, 0.2 + 0.4 * i, 1, 0, 0, 0};
    memcpy(b.q0, q0, sizeof q0);
    khz_spec_defaultGeom(&g);
    g.body = khz_spec_addBody(s, &b);
    g.type = KHZ_GEOM_BOX;
    g.size[0] = g.size[1] = g.size[2] = 0.2;
    khz_spec_addGeom(s, &g);
  }
  khzContactOptions c;
  khz_spec_defaultContact(&c);
  c.kp_per_kg = 400000, c.kv_per_kg = 800, c.ki_per_kg = 10000;
  c.gain_mass = KHZ_GAIN_MASS_EFFECTIVE;
  c.gamma = 0.85, c.mu = MU, c.restitution = 0;
  c.rolling = c.torsional = 0.002;
  c.method = KHZ_CONTACT_DEEPEST;
  if (mode >= 0) c.deepest_stage = mode; /* else the default */
  khz_spec_setContact(s, &c);
  double h = 1e-3;
  for (int k = 0; k < (ulp < 0 ? -ulp : ulp); k++) h = nextafter(h, ulp > 0 ? 1 : 0);
  khz_spec_setTimestep(s, h);
  khz_spec_setIntegrator(s, KHZ_INT_RK4);
  char err[256] = "";
  khzModel *m = khz_compile(s, err, sizeof err);
  khz_spec_destroy(&s);
  if (!m) fprintf(stderr, "compile: %s\n", err);
  return m;
}

static double stack_sink(int mode, int ulp) {
  khzModel *m = stack_model(5, mode, ulp);
  ENSURE(m);
  if (!m) return INFINITY;
  khzData *d = khz_makeData(m, 0);
  ENSURE(d->contact_method == KHZ_CONTACT_DEEPEST);
  double sink = 0;
  for (long n = lround(60 / m->timestep); n > 0; n--) {
    khz_step(m, d);
    for (int i = 1; i < m->nbody; i++) sink = fmax(sink, m->q0[m->jnt_qadr[i] + 2] - d->q[m->jnt_qadr[i] + 2]);
  }
  done(&m, &d);
  return sink;
}

/* one box of the stack alone on the ground for 3 s: its final q */
static void lone_box(int mode, double q[7]) {
  khzModel *m = stack_model(1, mode, 0);
  ENSURE(m);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);
  run(m, d, 3);
  memcpy(q, d->q, 7 * sizeof(double));
  done(&m, &d);
}

static void test_deepest_stack(void) {
  for (int ulp = -1; ulp <= 1; ulp++) {
    double sink = stack_sink(getenv("KHZ_TEST_NO_STAGE") ? KHZ_DEEPEST_STAGE_OFF : -1, ulp);
    printf("deepest-point stack, default deepest_stage, h %+d ulp: sinks at most %.3g m in 60 s\n", ulp, sink);
    ENSURE(sink < 0.01);
  }
  double q_default[7] = {0}, q_off[7] = {0}, q_all[7] = {0};
  lone_box(-1, q_default);
  lone_box(KHZ_DEEPEST_STAGE_OFF, q_off);
  lone_box(KHZ_DEEPEST_STAGE_ALL, q_all);
  printf("deepest-point lone box after 3 s: z %.9g (default) %.9g (off) %.9g (all) m\n", q_default[2], q_off[2],
         q_all[2]);
  ENSURE(memcmp(q_default, q_off, sizeof q_off) == 0);
  ENSURE(memcmp(q_all, q_off, sizeof q_off) != 0);
}

int main(void) {
  test_deepest_stack();
  for (int gl = 0; gl < 2; gl++) {
    printf("ground geom %d:\n", gl);
    test_box_push(gl);
    test_cylinder_spin(gl);
    test_cylinder_side(gl);
    test_rolling(gl);
    test_drop(gl);
  }
  return ensure_report();
}
