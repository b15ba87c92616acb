/* test_impact.c — impacts (rt/src/contact/impulse.c, phases.c), on free
 * boxes over the ground plane with the pile's contact settings
 * (scenes/validation/v3_pile.yaml), RK4 at 1 ms:
 *   a. two boxes meeting head-on without gravity: the velocities after the
 *      impact are Newton's, and momentum is kept;
 *   b. a 100 kg box lands at 2 m/s on a 1 kg box lying on the ground, with
 *      restitution 0: the cluster's impulses stop both at once (sequential
 *      impulses alone converge as 100/101 per sweep and leave most of the
 *      heavy box's speed) and the light box is not crushed into
 *      the ground beyond what its springs carry at rest;
 *   c. a box resting on the ground is struck down at 2 m/s while its pair is
 *      in contact: with contact.reimpact_velocity 1 m/s the pair impacts again
 *      and sinks far less than on its springs (0 = the paper's Fig. 2);
 *   e. the 100 kg box lands on a column of four 1 kg boxes: the impact
 *      reaches every pair of the column (the paper sends only the pairs of
 *      the bodies hit to impulses, which leaves the bottom box driven into
 *      the ground), and the cluster's normal impulses, solved at once, stop it
 *      (Gauss-Seidel sweeps alone converge as 100/101 per sweep);
 *   f. without gravity, a box turning about the edge it stands on lands on
 *      its face and re-impacts with restitution 0.8: no energy is gained
 *      (guards against taking restitution from the fastest point and
 *      imposing it at the centroid, which gains energy);
 *   g. a 94 kg cylinder standing on its cap across a 61 kg box (a pair cut
 *      out of the V3 pile, seed 13) comes to rest (guards eq. 1's
 *      count weighed by depth and the wedge weights of points inside a box;
 *      history in docs/validation.md, V3, causes (1) and (4));
 *   h. a row of boxes without gravity, each approaching the next: 3 pairs
 *      form one cluster whose impulses converge, and no warning is counted;
 *      33 pairs are more than one cluster solves together
 *      (KHZ_CLUSTER_PAIRS), the sequential impulses stop after their sweeps
 *      with pairs still approaching, and KHZ_WARN_IMPULSE says so. Momentum
 *      is kept either way;
 *   i. a 10 kg box dropped from 3 m onto a 1 kg box asleep on the ground:
 *      the collision of the step wakes the light box and the impact strikes
 *      it in the same step. khz_resolveImpacts then runs a velocity pass
 *      only, which holds when every awake body's poses, subspaces and
 *      inertias are already at d->q: after the contact stages of that step
 *      they equal a fresh forward pass at (d->q, d->qd) bit for bit, both on
 *      the running data and on a state restored into a fresh data (whose
 *      own poses were the initial ones). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contact/contact.h"
#include "dynamics.h"
#include "ensure.h"
#include "island.h"
#include "khz/khz.h"

#define G 9.81

typedef struct {
  khzGeomType type;
  double size[3], mass, q0[7], qd0[6];
} body_t;

/* solid box (half extents) or cylinder (radius, half height) inertia about
 * the centre, principal moments */
static void inertia_of(const body_t *b, double I[3]) {
  double m = b->mass, x = b->size[0], y = b->size[1], z = b->size[2];
  if (b->type == KHZ_GEOM_CYLINDER) {
    I[0] = I[1] = m * (3 * x * x + 4 * y * y) / 12, I[2] = m * x * x / 2;
    return;
  }
  I[0] = m * (y * y + z * z) / 3, I[1] = m * (x * x + z * z) / 3, I[2] = m * (x * x + y * y) / 3;
}

/* the ground plane (if ground) and n free bodies, the pile's contact settings */
static khzModel *scene(const body_t *bodies, int n, int ground, double gravity, double restitution,
                       double reimpact) {
  khzSpec *s = khz_spec_new();
  khzGeomSpec g;
  if (ground) {
    khz_spec_defaultGeom(&g);
    g.type = KHZ_GEOM_PLANE;
    khz_spec_addGeom(s, &g);
  }
  for (int i = 0; i < n; i++) {
    khzBodySpec b;
    khz_spec_defaultBody(&b);
    snprintf(b.name, sizeof b.name, "b%d", i);
    snprintf(b.joint_name, sizeof b.joint_name, "j%d", i);
    b.joint_type = KHZ_JOINT_FLOATING;
    b.mass = bodies[i].mass;
    inertia_of(bodies + i, b.inertia);
    memcpy(b.q0, bodies[i].q0, 7 * sizeof(double));
    khz_spec_defaultGeom(&g);
    g.body = khz_spec_addBody(s, &b);
    g.type = bodies[i].type;
    memcpy(g.size, bodies[i].size, sizeof g.size);
    khz_spec_addGeom(s, &g);
  }
  khzContactOptions c; /* scenes/validation/v3_pile.yaml */
  khz_spec_defaultContact(&c);
  c.kp_per_kg = 400000, c.kv_per_kg = 800, c.ki_per_kg = 2000;
  c.gain_mass = KHZ_GAIN_MASS_REDUCED;
  c.rolling = c.torsional = 0.002;
  c.gamma = 0.85, c.mu = 0.6, c.restitution = restitution;
  c.reimpact_velocity = reimpact;
  khz_spec_setContact(s, &c);
  khz_spec_setTimestep(s, 1e-3);
  khz_spec_setIntegrator(s, KHZ_INT_RK4);
  double gv[3] = {0, 0, -gravity};
  khz_spec_setGravity(s, gv);
  char err[256] = "";
  khzModel *m = khz_compile(s, err, sizeof err);
  if (!m) fprintf(stderr, "compile: %s\n", err);
  khz_spec_destroy(&s);
  return m;
}

static void set_velocities(const khzModel *m, khzData *d, const body_t *bodies, int n) {
  for (int i = 0; i < n; i++) memcpy(d->qd + 6 * i, bodies[i].qd0, 6 * sizeof(double));
  (void)m;
}

static double deepest(const khzData *d) {
  double p = 0;
  for (int k = 0; k < d->ncontact; k++) p = fmax(p, d->cpoint[d->contact[k].deepest].depth);
  return p;
}

/* a. head-on, no gravity: v1' = (m1 v1 + m2 v2 - m2 e (v1 - v2)) / (m1 + m2) */
static void test_newton(void) {
  const double e = 0.5, m1 = 3, m2 = 1, v1 = 1, v2 = -2;
  body_t b[2] = {{KHZ_GEOM_BOX, {0.1, 0.1, 0.1}, m1, {-0.0999, 0, 0, 1, 0, 0, 0}, {v1, 0, 0, 0, 0, 0}},
                 {KHZ_GEOM_BOX, {0.1, 0.1, 0.1}, m2, {0.0999, 0, 0, 1, 0, 0, 0}, {v2, 0, 0, 0, 0, 0}}};
  khzModel *m = scene(b, 2, 0, 0, e, 0);
  ENSURE(m != NULL);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);
  set_velocities(m, d, b, 2);
  khz_step(m, d);
  double w1 = (m1 * v1 + m2 * v2 - m2 * e * (v1 - v2)) / (m1 + m2);
  double w2 = (m1 * v1 + m2 * v2 + m1 * e * (v1 - v2)) / (m1 + m2);
  double p0 = m1 * v1 + m2 * v2, p1 = m1 * d->qd[0] + m2 * d->qd[6];
  printf("a. head-on, e = %.1f: v1 %.6f (Newton %.6f), v2 %.6f (%.6f), momentum %.3g -> %.3g\n", e,
         d->qd[0], w1, d->qd[6], w2, p0, p1);
  /* the springs of the pair act for the rest of the step after the impulse:
   * allow their push of one step */
  ENSURE(fabs(d->qd[0] - w1) < 0.02 && fabs(d->qd[6] - w2) < 0.06);
  ENSURE(fabs(p1 - p0) < 1e-9);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* a 100 kg box landing at 2 m/s on a column of n 1 kg boxes on the ground
 * (listed bottom first), restitution 0: the fastest vertical speed of any
 * box after the impact's step, and the deepest penetration over 0.2 s */
static int land_on_column(int n, double *vfast, double *pen) {
  body_t b[8];
  for (int i = 0; i <= n; i++) {
    body_t bi = {KHZ_GEOM_BOX, {0.1, 0.1, 0.05}, i < n ? 1 : 100,
                 {0, 0, 0.0499 + 0.0998 * i, 1, 0, 0, 0}, {0}};
    if (i == n) bi.qd0[2] = -2;
    b[i] = bi;
  }
  khzModel *m = scene(b, n + 1, 1, G, 0, 0);
  if (!m) return -1;
  khzData *d = khz_makeData(m, 0);
  set_velocities(m, d, b, n + 1);
  khz_step(m, d);
  *vfast = *pen = 0;
  for (int i = 0; i <= n; i++) *vfast = fmax(*vfast, fabs(d->qd[6 * i + 2]));
  for (int k = 0; k < 200; k++) {
    khz_step(m, d);
    *pen = fmax(*pen, deepest(d));
  }
  khz_deleteData(&d);
  khz_deleteModel(&m);
  return 0;
}

/* b. heavy on light on the ground */
static void test_chain(void) {
  double vfast, pen;
  ENSURE(land_on_column(1, &vfast, &pen) == 0);
  printf("b. 100 kg on 1 kg at 2 m/s: fastest box after the impact %.4f m/s; deepest over 0.2 s "
         "%.3g m\n", vfast, pen);
  ENSURE(vfast < 0.05);
  /* the light box's springs (kp = 4e5 N/m for its 1 kg) carry 1010 N: 2.5 mm
   * at rest; an impact left to them goes centimetres deep */
  ENSURE(pen < 1e-2);
}

/* c. a resting box struck down while in contact: deepest penetration after */
static double struck(double reimpact) {
  body_t b = {KHZ_GEOM_BOX, {0.1, 0.1, 0.1}, 10, {0, 0, 0.1, 1, 0, 0, 0}, {0}};
  khzModel *m = scene(&b, 1, 1, G, 0.1, reimpact);
  if (!m) return INFINITY;
  khzData *d = khz_makeData(m, 0);
  for (int k = 0; k < 500; k++) khz_step(m, d);
  double rest = deepest(d), pen = 0;
  d->qd[2] = -2;
  for (int k = 0; k < 100; k++) {
    khz_step(m, d);
    pen = fmax(pen, deepest(d));
  }
  khz_deleteData(&d);
  khz_deleteModel(&m);
  return pen - rest;
}

static void test_reimpact(void) {
  double springs = struck(0), impulse = struck(1);
  printf("c. resting box struck down at 2 m/s: sinks %.3g m on its springs, %.3g m with "
         "reimpact_velocity 1 m/s\n", springs, impulse);
  ENSURE(springs > 1e-3);
  ENSURE(impulse < 0.25 * springs);
}

/* e. the same heavy box on a column of four light ones */
static void test_column(void) {
  double vfast, pen;
  ENSURE(land_on_column(4, &vfast, &pen) == 0);
  printf("e. 100 kg on four 1 kg boxes at 2 m/s: fastest box after the impact %.4f m/s; deepest "
         "over 0.2 s %.3g m\n", vfast, pen);
  ENSURE(vfast < 0.05); /* near 2 m/s if only the top box's pairs took impulses */
  /* the column's springs (2e5 N/m between two 1 kg boxes) sag 2 cm under
   * 100 kg in series; a bottom box driven at the landing speed goes deeper */
  ENSURE(pen < 3e-2);
}

/* f. no gravity: a box turning about the edge it stands on lands on its face;
 * the landing re-impacts (reimpact_velocity 0.1 m/s), restitution 0.8 */
static void test_edge_landing(void) {
  const double a = 0.1, th = 0.3, w = 3;
  body_t b = {KHZ_GEOM_BOX, {a, a, a}, 1,
              {0, 0, a * (cos(th) + sin(th)) - 1e-4, cos(th / 2), sin(th / 2), 0, 0},
              {0, 0, 0, -w, 0, 0}};
  khzModel *m = scene(&b, 1, 1, 0, 0.8, 0.1);
  ENSURE(m != NULL);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);
  set_velocities(m, d, &b, 1);
  double ke0, ke, kmax = 0;
  khz_energy(m, d, &ke0, NULL);
  for (int k = 0; k < 300; k++) {
    khz_step(m, d);
    khz_energy(m, d, &ke, NULL);
    kmax = fmax(kmax, ke);
  }
  printf("f. box landing from its edge, e = 0.8: kinetic energy %.6g J before, at most %.6g J "
         "after, %.6g J at 0.3 s\n", ke0, kmax, ke);
  ENSURE(kmax <= ke0 * (1 + 1e-3));
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* g. the cylinder standing across the box (poses from the pile at rest) */
static void test_rocking(void) {
  body_t b[2] = {{KHZ_GEOM_BOX, {0.076, 0.076, 0.074}, 60.747,
                  {-0.1594993, 0.2162327, 0.0759410, 0.6965926, -0.1210224, -0.6967151, -0.1212452},
                  {0}},
                 {KHZ_GEOM_CYLINDER, {0.094, 0.097}, 93.567,
                  {-0.1886584, 0.1780977, 0.2488902, 0.0002997, 0.1268934, 0.9919162, 0.0004217},
                  {0}}};
  for (int i = 0; i < 2; i++) { /* the quaternions above are rounded */
    double *q = b[i].q0 + 3, n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int k = 0; k < 4; k++) q[k] /= n;
  }
  khzModel *m = scene(b, 2, 1, G, 0.1, 0);
  ENSURE(m != NULL);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);
  double ke = 0, kin, pot;
  for (int s = 1; s <= 10000; s++) {
    khz_step(m, d);
    khz_energy(m, d, &kin, &pot);
    if (s > 9000) ke += kin / 1000; /* mean over the tenth second */
  }
  printf("g. 94 kg cylinder standing across a 61 kg box: kinetic energy over the tenth second %.3g J\n",
         ke);
  ENSURE(ke < 2e-4);
  ENSURE(d->warning[KHZ_WARN_BADSTATE] == 0);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* h. n boxes in a row along x, each overlapping the next by 0.1 mm, box i
 * moving at -0.1 i m/s: every pair approaches at 0.1 m/s. One step; the
 * impulse warnings counted and the change of momentum. */
static int row_impact(int n, double *dp) {
  body_t b[40];
  memset(b, 0, sizeof b);
  for (int i = 0; i < n; i++) {
    b[i] = (body_t){KHZ_GEOM_BOX, {0.05, 0.05, 0.05}, 1 + i % 3, {0.0999 * i, 0, 0, 1, 0, 0, 0},
                    {-0.1 * i, 0, 0, 0, 0, 0}};
  }
  khzModel *m = scene(b, n, 0, 0, 0.1, 0);
  ENSURE(m != NULL);
  if (!m) return -1;
  khzData *d = khz_makeData(m, 0);
  set_velocities(m, d, b, n);
  double p0 = 0, p1 = 0;
  for (int i = 0; i < n; i++) p0 += b[i].mass * d->qd[6 * i];
  khz_step(m, d);
  for (int i = 0; i < n; i++) p1 += b[i].mass * d->qd[6 * i];
  *dp = fabs(p1 - p0);
  int warn = d->warning[KHZ_WARN_IMPULSE];
  ENSURE(d->ncontact == n - 1);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  return warn;
}

static void test_row(void) {
  double dp4, dp34;
  int w4 = row_impact(4, &dp4), w34 = row_impact(34, &dp34);
  printf("h. a row of boxes closing up: 3 pairs, %d impulse warnings (momentum %.2g); "
         "33 pairs, %d (momentum %.2g)\n", w4, dp4, w34, dp34);
  ENSURE(w4 == 0 && w34 >= 1);
  ENSURE(dp4 < 1e-9 && dp34 < 1e-9);
}

/* the forward pass's fields of body b, in one buffer */
enum { PASS_DOUBLES = 3 + 9 + 3 + 36 + KHZ_CINERT + 6 + 6 };
static void pass_fields(const khzData *d, int b, double *out) {
  memcpy(out, d->xpos + 3 * b, 3 * sizeof(double));
  memcpy(out + 3, d->xrot + 9 * b, 9 * sizeof(double));
  memcpy(out + 12, d->xcom + 3 * b, 3 * sizeof(double));
  memcpy(out + 15, d->S + 36 * b, 36 * sizeof(double));
  memcpy(out + 51, d->cinert + KHZ_CINERT * b, KHZ_CINERT * sizeof(double));
  memcpy(out + 51 + KHZ_CINERT, d->vtree + 6 * b, 6 * sizeof(double));
  memcpy(out + 57 + KHZ_CINERT, d->cbias + 6 * b, 6 * sizeof(double));
}

/* the contact stages of one step as step_once runs them (the inputs' wake-up,
 * the first pass unless the last one holds, khz_contactBegin); then 1 if
 * body `light` slept before, is awake and was struck (its qd moved), and
 * every body's pass fields are a fresh whole forward pass's, bit for bit */
static int woken_struck_current(const khzModel *m, khzData *d, int light, int *struck) {
  int was_asleep = d->body_sleep[light] != 0;
  khz_islandWakeOnInputs(m, d);
  if (!khz_kinematicsAt(m, d, d->q, d->qd)) khz_forwardPass(m, d, d->q, d->qd);
  khz_contactBegin(m, d);
  double v = 0;
  for (int a = 0; a < 6; a++) v += fabs(d->qd[6 * (light - 1) + a]);
  *struck = was_asleep && !d->body_sleep[light] && v > 0.1;
  double before[8][PASS_DOUBLES], after[PASS_DOUBLES];
  int same = 1;
  for (int b = 1; b < m->nbody && b < 8; b++) pass_fields(d, b, before[b]);
  khz_forwardPass(m, d, d->q, d->qd);
  for (int b = 1; b < m->nbody && b < 8; b++) {
    pass_fields(d, b, after);
    if (!d->body_sleep[b] && memcmp(before[b], after, sizeof after) != 0) {
      printf("   body %d: its pass fields are not those at (q, qd)\n", b);
      same = 0;
    }
  }
  return same;
}

static void test_woken_poses(void) {
  /* the light box turned 0.3 rad about z, so that its rotation has no zeros */
  body_t b[2] = {{KHZ_GEOM_BOX, {0.1, 0.1, 0.05}, 1, {0, 0, 0.0501, cos(0.15), 0, 0, sin(0.15)}, {0}},
                 {KHZ_GEOM_BOX, {0.05, 0.05, 0.05}, 10, {0.03, 0.02, 3.0, 1, 0, 0, 0}, {0}}};
  khzModel *m = scene(b, 2, 1, G, 0.2, 0);
  ENSURE(m != NULL);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);
  d->sleep_enabled = 1;
  /* the step that wakes the light box (body 1), and the state before it */
  size_t size = khz_stateSize(m);
  unsigned char *saved = malloc(size);
  ENSURE(saved != NULL);
  int wake_step = -1, slept = 0;
  for (int k = 0; k < 1200 && saved && wake_step < 0; k++) {
    int asleep = d->body_sleep[1] != 0;
    slept |= asleep;
    khz_saveState(m, d, saved);
    khz_step(m, d);
    if (asleep && !d->body_sleep[1]) wake_step = k;
  }
  printf("i. the light box asleep: %s; woken at step %d\n", slept ? "yes" : "no", wake_step);
  ENSURE(slept && wake_step > 0);
  if (wake_step > 0) {
    /* the running data, stepped again to the same state */
    khzData *e = khz_makeData(m, 0);
    e->sleep_enabled = 1;
    for (int k = 0; k < wake_step; k++) khz_step(m, e);
    int struck = 0, current = woken_struck_current(m, e, 1, &struck);
    printf("   running data: woken and struck in one step %d, pass fields current %d\n", struck, current);
    ENSURE(struck && current);
    /* the state restored into a fresh data */
    khzData *f = khz_makeData(m, 0);
    khz_restoreState(m, f, saved);
    current = woken_struck_current(m, f, 1, &struck);
    printf("   restored state: woken and struck in one step %d, pass fields current %d\n", struck, current);
    ENSURE(struck && current);
    khz_deleteData(&e);
    khz_deleteData(&f);
  }
  free(saved);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* ii. a pass that skips sleeping bodies keeps its stamp (dynamics.c): their
 * fields are at their frozen q and zero velocity. A velocity written into a
 * sleeping box and khz_forward called before the next step (a pass that
 * skips the box and records the new qd): the step's wake-up must forget
 * that record, so that the step's first pass gives the woken box its
 * velocity; its pass fields are then a fresh pass's, bit for bit */
static void test_written_velocity(void) {
  body_t b[1] = {{KHZ_GEOM_BOX, {0.1, 0.1, 0.05}, 1, {0, 0, 0.0501, cos(0.15), 0, 0, sin(0.15)}, {0}}};
  khzModel *m = scene(b, 1, 1, G, 0.2, 0);
  ENSURE(m != NULL);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);
  d->sleep_enabled = 1;
  for (int k = 0; k < 2000 && !d->body_sleep[1]; k++) khz_step(m, d);
  ENSURE(d->body_sleep[1] != 0);
  d->qd[0] = 0.3, d->qd[5] = 0.5; /* sliding along x, turning about z */
  khz_forward(m, d);
  khz_islandWakeOnInputs(m, d);
  ENSURE(!d->body_sleep[1]);
  if (!khz_kinematicsAt(m, d, d->q, d->qd)) khz_forwardPass(m, d, d->q, d->qd);
  double before[PASS_DOUBLES], after[PASS_DOUBLES];
  pass_fields(d, 1, before);
  khz_forwardPass(m, d, d->q, d->qd);
  pass_fields(d, 1, after);
  int same = !memcmp(before, after, sizeof after);
  printf("ii. a velocity written into a sleeping box, khz_forward, then the step's start: pass fields current %d\n",
         same);
  ENSURE(same);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

int main(void) {
  test_woken_poses();
  test_written_velocity();
  test_newton();
  test_row();
  test_chain();
  test_reimpact();
  test_column();
  test_edge_landing();
  test_rocking();
  return ensure_report();
}
