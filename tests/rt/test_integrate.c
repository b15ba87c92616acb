/* test_integrate.c — integrators against physics that nobody here wrote:
 * energy conservation of a passive chain (RK4, h = 1e-3, 10 s, issue #2:
 * within 1e-6 relative), torque-free precession of an axisymmetric body
 * against the closed-form solution of Euler's equations, conservation of
 * angular and linear momentum of an asymmetric body (1e-9), the joint
 * limit / Coulomb friction models staying stable at 1 kHz, and viscous joint
 * damping with a constant torque against the closed-form exponential. */
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "random_model.h"

static khzModel *chain(int n, khzIntegrator integ, int limited, double friction) {
  khzSpec *s = khz_spec_new();
  static const double axes[7][3] = {{0, 1, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0},
                                    {0, 1, 1}, {1, 0, 0}, {0, 1, 0}};
  for (int i = 1; i <= n; i++) {
    khzBodySpec b;
    khz_spec_defaultBody(&b);
    snprintf(b.name, sizeof b.name, "link%d", i);
    snprintf(b.joint_name, sizeof b.joint_name, "joint%d", i);
    b.parent = i - 1;
    b.joint_type = limited ? KHZ_JOINT_REVOLUTE : KHZ_JOINT_CONTINUOUS;
    b.limited = limited;
    b.lower = -0.5, b.upper = 0.5;
    b.friction = friction;
    memcpy(b.axis, axes[(i - 1) % 7], sizeof b.axis);
    b.pos[2] = i == 1 ? 0 : -0.25;
    b.com[0] = 0.01, b.com[2] = -0.12;
    b.mass = 1.0 + 0.1 * i;
    double in[6] = {0.006, 0.0055, 0.001, 0.0002, -0.0001, 0.00015};
    memcpy(b.inertia, in, sizeof in);
    khz_spec_addBody(s, &b);
  }
  khz_spec_setIntegrator(s, integ);
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  if (!m) fprintf(stderr, "%s\n", err);
  khz_spec_destroy(&s);
  return m;
}

static void test_chain_energy(khzIntegrator integ, double tol) {
  khzModel *m = chain(7, integ, 0, 0);
  khzData *d = khz_makeData(m, 0);
  for (int k = 0; k < m->nq; k++) d->q[k] = 0.3;
  double ke, pe, e0, emax = 0, kemax = 0;
  khz_energy(m, d, &ke, &pe);
  e0 = ke + pe;
  for (int step = 0; step < 10000; step++) {
    khz_step(m, d);
    khz_energy(m, d, &ke, &pe);
    emax = fmax(emax, fabs(ke + pe - e0));
    kemax = fmax(kemax, ke);
  }
  double rel = emax / fmax(fabs(e0), kemax);
  printf("7-link chain, %s, 10 s: |E - E0| max %.3g J, relative %.3g (max KE %.3g J, E0 %.4g, E %.4g)\n",
         integ == KHZ_INT_RK4 ? "RK4" : "Euler", emax, rel, kemax, e0, ke + pe);
  ENSURE_MSG(rel < tol, "energy drift %g", rel);
  ENSURE(d->warning[KHZ_WARN_BADSTATE] == 0);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

static khzModel *free_body(const double inertia[6], const double com[3]) {
  khzSpec *s = khz_spec_new();
  khzBodySpec b;
  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "body");
  snprintf(b.joint_name, sizeof b.joint_name, "free");
  b.joint_type = KHZ_JOINT_FLOATING;
  b.mass = 3;
  memcpy(b.inertia, inertia, 6 * sizeof(double));
  memcpy(b.com, com, 3 * sizeof(double));
  khz_spec_addBody(s, &b);
  khz_spec_setGravity(s, (double[3]){0, 0, 0});
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  if (!m) fprintf(stderr, "%s\n", err);
  khz_spec_destroy(&s);
  return m;
}

/* axisymmetric body (I1 = I2): w3 constant, (w1, w2) rotates at
 * Omega = (I3 - I1) / I1 * w3 in the body frame (Euler's equations) */
static void test_precession(void) {
  double I1 = 0.04, I3 = 0.06;
  khzModel *m = free_body((double[6]){I1, I1, I3, 0, 0, 0}, (double[3]){0, 0, 0});
  khzData *d = khz_makeData(m, 0);
  double w0[3] = {0.7, -0.3, 2.0};
  memcpy(d->qd + 3, w0, sizeof w0);
  double Omega = (I3 - I1) / I1 * w0[2], worst = 0;
  for (int k = 1; k <= 10000; k++) {
    khz_step(m, d);
    double t = d->time, c = cos(Omega * t), s = sin(Omega * t);
    double w1 = w0[0] * c - w0[1] * s, w2 = w0[0] * s + w0[1] * c;
    worst = fmax(worst, fmax(fabs(d->qd[3] - w1), fmax(fabs(d->qd[4] - w2), fabs(d->qd[5] - w0[2]))));
  }
  printf("axisymmetric precession vs closed form, 10 s: max |w - w_exact| %.3g rad/s\n", worst);
  ENSURE_MSG(worst < 1e-9, "precession error %g", worst);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* angular momentum about the com (world) and linear momentum */
static void momentum(const khzModel *m, khzData *d, double L[3], double p[3]) {
  khz_kinematics(m, d);
  const double *R = d->xrot + 9, *Ic = m->body_inertia + 9, *c = m->body_com + 3;
  double w[3] = {d->qd[3], d->qd[4], d->qd[5]}, Iw[3], vc[3], wxc[3];
  khzu_mulMatVec3(Iw, Ic, w);
  khzu_mulMatVec3(L, R, Iw);
  /* com velocity: v_origin + R (w x c) */
  khzu_cross(wxc, w, c);
  khzu_mulMatVec3(vc, R, wxc);
  for (int k = 0; k < 3; k++) p[k] = m->body_mass[1] * (d->qd[k] + vc[k]);
}

static void test_momentum(void) {
  khzModel *m = free_body((double[6]){0.03, 0.05, 0.07, 0.004, -0.002, 0.003},
                          (double[3]){0.05, -0.02, 0.03});
  khzData *d = khz_makeData(m, 0);
  double qd0[6] = {0.2, 0.1, -0.3, 1.2, -0.4, 2.5};
  memcpy(d->qd, qd0, sizeof qd0);
  double L0[3], p0[3], L[3], p[3], worstL = 0, worstp = 0;
  momentum(m, d, L0, p0);
  double nL = sqrt(khzu_dot3(L0, L0)), np = sqrt(khzu_dot3(p0, p0));
  for (int k = 0; k < 10000; k++) {
    khz_step(m, d);
    momentum(m, d, L, p);
    for (int r = 0; r < 3; r++) {
      worstL = fmax(worstL, fabs(L[r] - L0[r]) / nL);
      worstp = fmax(worstp, fabs(p[r] - p0[r]) / np);
    }
  }
  printf("asymmetric body, 10 s: angular momentum rel drift %.3g, linear %.3g\n", worstL, worstp);
  ENSURE_MSG(worstL < 1e-9, "angular momentum drift %g", worstL);
  ENSURE_MSG(worstp < 1e-9, "linear momentum drift %g", worstp);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* a chain thrown into its joint limits: bounded penetration, no blow-up */
static void test_limits(khzIntegrator integ) {
  khzModel *m = chain(7, integ, 1, 0);
  khzData *d = khz_makeData(m, 0);
  for (int k = 0; k < m->nv; k++) d->qd[k] = 6.0 * (k % 2 ? 1 : -1);
  double worst = 0, ke, pe, e0, emax = -1e300;
  khz_energy(m, d, &ke, &pe);
  e0 = ke + pe;
  for (int step = 0; step < 5000; step++) {
    khz_step(m, d);
    for (int k = 0; k < m->nq; k++) worst = fmax(worst, fabs(d->q[k]) - 0.5);
    khz_energy(m, d, &ke, &pe);
    emax = fmax(emax, ke + pe);
  }
  printf("limits (%s): worst overshoot %.3g rad, E0 %.4g J, max E %.4g J, final %.4g J\n",
         integ == KHZ_INT_RK4 ? "RK4" : "Euler", worst, e0, emax, ke + pe);
  ENSURE(d->warning[KHZ_WARN_BADSTATE] == 0);
  ENSURE_MSG(worst < 0.3, "limit overshoot %g", worst);
  /* the limits are dissipative: no energy is gained (beyond the spring's store) */
  ENSURE_MSG(emax < e0 + 0.01 * fabs(e0), "energy grew from %g to %g", e0, emax);
  ENSURE_MSG(ke + pe < e0, "energy did not decrease: %g -> %g", e0, ke + pe);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* Coulomb friction above the gravity torque holds a pendulum (creep only) */
static void test_friction(void) {
  khzModel *m = chain(1, KHZ_INT_RK4, 0, 5.0);
  khzData *d = khz_makeData(m, 0);
  d->q[0] = 0.5; /* gravity torque ~ 1.1 * 9.81 * 0.12 * sin(0.5) = 0.62 N m < 5 */
  for (int step = 0; step < 2000; step++) khz_step(m, d);
  printf("friction hold: drift %.3g rad in 2 s\n", fabs(d->q[0] - 0.5));
  ENSURE(fabs(d->q[0] - 0.5) < 1e-2);
  /* and below the gravity torque it slides */
  khzModel *m2 = chain(1, KHZ_INT_RK4, 0, 0.1);
  khzData *d2 = khz_makeData(m2, 0);
  d2->q[0] = 0.5;
  for (int step = 0; step < 500; step++) khz_step(m2, d2);
  ENSURE(fabs(d2->q[0] - 0.5) > 0.1);
  khz_deleteData(&d), khz_deleteData(&d2);
  khz_deleteModel(&m), khz_deleteModel(&m2);
}

/* one hinge about z through the body's centre (gravity exerts no torque),
 * joint damping b and a constant torque u: I qdd = u - b qd, so
 * qd(t) = w + (qd0 - w) e^(-t/T), q(t) = w t + (qd0 - w) T (1 - e^(-t/T)),
 * w = u / b, T = I / b. Euler's step takes the damping implicitly, (I + h b)
 * qd' = I qd + h u: a first-order error, about h / T of the decay. */
static void test_damping_decay(khzIntegrator integ, double tol) {
  const double I = 0.02, b = 0.015, u = 0.03, qd0 = -1.3, t_end = 2.0;
  khzSpec *s = khz_spec_new();
  khzBodySpec body;
  khz_spec_defaultBody(&body);
  snprintf(body.name, sizeof body.name, "wheel");
  snprintf(body.joint_name, sizeof body.joint_name, "axle");
  body.parent = 0;
  body.joint_type = KHZ_JOINT_CONTINUOUS;
  body.axis[2] = 1;
  body.damping = b;
  body.mass = 1.0;
  double in[6] = {0.01, 0.01, I, 0, 0, 0};
  memcpy(body.inertia, in, sizeof in);
  khz_spec_addBody(s, &body);
  khz_spec_setIntegrator(s, integ);
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  khz_spec_destroy(&s);
  ENSURE_MSG(m != NULL, "%s", err);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);
  d->qd[0] = qd0;
  int steps = (int)lround(t_end / d->timestep);
  for (int k = 0; k < steps; k++) {
    d->tau[0] = u;
    khz_step(m, d);
  }
  double t = steps * d->timestep, w = u / b, T = I / b, e = exp(-t / T);
  double qd_exact = w + (qd0 - w) * e, q_exact = w * t + (qd0 - w) * T * (1 - e);
  double eqd = fabs(d->qd[0] - qd_exact) / fabs(qd0 - w), eq = fabs(d->q[0] - q_exact) / fabs((qd0 - w) * T);
  printf("damped hinge, %s, %g s: qd %.9g (exact %.9g), q %.9g (exact %.9g), relative errors %.3g, %.3g\n",
         integ == KHZ_INT_RK4 ? "RK4" : "Euler", t, d->qd[0], qd_exact, d->q[0], q_exact, eqd, eq);
  ENSURE_MSG(eqd < tol && eq < tol, "damped hinge: errors %g (qd), %g (q) over %g", eqd, eq, tol);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

int main(void) {
  test_damping_decay(KHZ_INT_RK4, 1e-8);
  test_damping_decay(KHZ_INT_EULER, 1e-3);
  test_chain_energy(KHZ_INT_RK4, 1e-6);
  test_chain_energy(KHZ_INT_EULER, 5e-2);
  test_precession();
  test_momentum();
  test_limits(KHZ_INT_RK4);
  test_limits(KHZ_INT_EULER);
  test_friction();
  return ensure_report();
}
