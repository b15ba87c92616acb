/* test_euler_contact.c — contact with the automatic gains under semi-implicit
 * Euler at 1 ms (the integrator the peers step the piles with, bench_peers'
 * khz-euler rows), against the rigid rest state:
 *   a. the one-dof map of semi-implicit Euler on x'' = -w^2 x - c x'
 *      (v' = v - h (w^2 x + c v), x' = x + h v') has spectral radius below
 *      1 at (wh, ch) = (1.2, 1.0), the limits penalty.c keeps a free body
 *      inside under Euler, and above 1 at (1.2, 1.8), RK4's damping limit:
 *      Jury's conditions ch < 2 and (wh)^2 + 2 ch < 4, computed from the
 *      eigenvalues of the 2 x 2 step matrix;
 *   b. a 1 kg box under a 100 kg box, released touching: after 3 s
 *      penetration at most 1 mm, both where they started within 2 mm,
 *      kinetic energy at most 1e-4 J;
 *   c. a 10-box stack (alternating 1 / 10 kg), released touching: after
 *      3 s no box has moved sideways more than 1 mm or sunk more than 2 mm,
 *      kinetic energy at most 1e-4 J; nine 100 kg boxes on a 1 kg one: the
 *      same. With each body's limit taken holding its neighbours still
 *      (before bl27) that stack kept about 1 J of vibration under Euler
 *      and walked sideways (0.3 to 3 mm after 3 s as the rates moved by
 *      1e-9, relative; 2.2 mm after 10 s): the coupled modes of two moving
 *      bodies were outside Euler's region. Counting a pair between two
 *      moving bodies twice in each body's limit bounds those modes too
 *      (penalty.c, KHZ_LIMITS_COUPLED; docs/benchmarks.md, bl27).
 *      No state rolled back. With RK4's damping limit (1.8 / h) under Euler
 *      b and both stacks fail (drift 2.5, 4.4 and 9.2 mm after 3 s; 60 s of
 *      the scenes: 43 mm, and the heavy stack fell over). */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ensure.h"
#include "khz/khz.h"

/* spectral radius of semi-implicit Euler's step matrix for the damped
 * oscillator: [[1 - (wh)^2, h (1 - ch)], [-w^2 h, 1 - ch]] in (x, v), whose
 * trace is 2 - ch - (wh)^2 and determinant 1 - ch */
static double euler_radius(double wh, double ch) {
  double tr = 2 - ch - wh * wh, det = 1 - ch;
  double complex disc = csqrt((double complex)(tr * tr - 4 * det));
  return fmax(cabs((tr + disc) / 2), cabs((tr - disc) / 2));
}

static void case_a(void) {
  double inside = euler_radius(1.2, 1.0), rk4_limit = euler_radius(1.2, 1.8);
  printf("a. Euler's spectral radius at wh 1.2: ch 1.0 %.4f, ch 1.8 %.4f\n", inside, rk4_limit);
  ENSURE(inside < 1);
  ENSURE(rk4_limit > 1);
  /* Jury's boundary (wh)^2 + 2 ch = 4: radius 1 there */
  ENSURE_NEAR(euler_radius(1.2, (4 - 1.44) / 2), 1.0, 1e-9);
}

static void add_box(khzSpec *s, const char *name, double half, double mass, double z) {
  khzBodySpec b;
  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "%s", name);
  snprintf(b.joint_name, sizeof b.joint_name, "%s", name);
  b.joint_type = KHZ_JOINT_FLOATING;
  b.mass = mass;
  b.inertia[0] = b.inertia[1] = b.inertia[2] = mass * (8 * half * half) / 12;
  double q0[7] = {0, 0, z, 1, 0, 0, 0};
  memcpy(b.q0, q0, sizeof q0);
  khzGeomSpec g;
  khz_spec_defaultGeom(&g);
  g.body = khz_spec_addBody(s, &b);
  g.type = KHZ_GEOM_BOX;
  g.size[0] = g.size[1] = g.size[2] = half;
  khz_spec_addGeom(s, &g);
}

/* boxes of 0.2 m stacked on the ground plane, released touching; Euler,
 * the default contact options (no gains: automatic) */
static khzModel *stack(const double *mass, int n) {
  khzSpec *s = khz_spec_new();
  khzGeomSpec plane;
  khz_spec_defaultGeom(&plane);
  plane.type = KHZ_GEOM_PLANE;
  khz_spec_addGeom(s, &plane);
  khzContactOptions c;
  khz_spec_defaultContact(&c);
  c.mu = 0.8, c.restitution = 0;
  khz_spec_setContact(s, &c);
  khz_spec_setIntegrator(s, KHZ_INT_EULER);
  for (int i = 0; i < n; i++) {
    char name[8];
    snprintf(name, sizeof name, "b%d", i);
    add_box(s, name, 0.1, mass[i], 0.1 + 0.2 * i);
  }
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m, "%s", err);
  khz_spec_destroy(&s);
  return m;
}

static double max_depth(const khzData *d) {
  double dmax = 0;
  for (int i = 0; i < d->ncontact; i++)
    if (d->contact[i].npoint) dmax = fmax(dmax, d->cpoint[d->contact[i].deepest].depth);
  return dmax;
}

/* at_rest: the kinetic energy bounded too */
static void run_stack(const char *what, const double *mass, int n, int at_rest) {
  khzModel *m = stack(mass, n);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);
  d->sleep_enabled = 0; /* the energy the dampers leave, not a frozen island's */
  double worst = 0;
  for (int k = 0; k < 3000; k++) {
    khz_step(m, d);
    worst = fmax(worst, max_depth(d));
  }
  double drift = 0, sink = 0, ke, pe;
  for (int i = 0; i < n; i++) {
    const double *q = d->q + 7 * i;
    drift = fmax(drift, hypot(q[0], q[1]));
    sink = fmax(sink, fabs(0.1 + 0.2 * i - q[2]));
  }
  khz_energy(m, d, &ke, &pe);
  printf("%s: drift %.3g mm, sink %.3g mm, worst penetration %.3g mm, KE %.3g J after 3 s\n", what,
         1e3 * drift, 1e3 * sink, 1e3 * worst, ke);
  ENSURE_MSG(drift <= 1e-3 && sink <= 2e-3, "%s", what);
  if (at_rest) ENSURE_MSG(ke <= 1e-4, "%s", what);
  ENSURE_MSG(worst <= 1e-3 || n > 2, "%s: penetration %.3g mm", what, 1e3 * worst);
  ENSURE(d->warning[KHZ_WARN_BADSTATE] == 0);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

int main(void) {
  case_a();
  const double light_heavy[2] = {1, 100};
  run_stack("b. 1 kg under 100 kg", light_heavy, 2, 1);
  double mixed[10], heavy[10];
  for (int i = 0; i < 10; i++) mixed[i] = i % 2 ? 10 : 1, heavy[i] = i ? 100 : 1;
  run_stack("c. alternating 1 / 10 kg", mixed, 10, 1);
  run_stack("c. nine 100 kg boxes on 1 kg", heavy, 10, 1);
  return ensure_report();
}
