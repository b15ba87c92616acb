/* test_contact.c — the penalty method's geometric core and the articulated
 * impulse response, independent of collision detection:
 *   - bottom of the intersection volume (Drumwright §III-A): a flat face with
 *     points above it keeps the face; Fig. 5's discard case; a bowl-shaped
 *     bottom surface under interior points keeps exactly the surface points;
 *   - the impulse response (Mirtich / Patil) against M^-1 J^T f computed from
 *     CRBA and point Jacobians: the collision matrix K = J M^-1 J^T. */
#include <stdlib.h>
#include <string.h>

#include "contact/bottom.h"
#include "dynamics.h"
#include "dynamics.h"
#include "ensure.h"
#include "random_model.h"

static void test_flat_face(khzData *d) {
  /* four corners at depth 0.02, four points straight above them at depth 0,
   * a point above the centre at 0.01: only the corners are on the bottom */
  double pos[9 * 3] = {0, 0, -0.02, 1, 0, -0.02, 1, 1, -0.02, 0, 1, -0.02, 0, 0, 0, 1, 0, 0,
                       1, 1, 0,     0, 1, 0,     0.5, 0.5, -0.01};
  double depth[9] = {0.02, 0.02, 0.02, 0.02, 0, 0, 0, 0, 0.01};
  int bottom[9], n[3] = {0, 0, 1};
  double normal[3] = {n[0], n[1], n[2]};
  int nb = khz_bottomOfVolume(d, pos, depth, 9, normal, bottom);
  ENSURE(nb == 4);
  for (int k = 0; k < 4; k++) ENSURE(bottom[k] == 1);
  for (int k = 4; k < 9; k++) ENSURE(bottom[k] == 0);
}

/* the paper's Fig. 5 (h): a point inside the polygon of deeper points is discarded,
 * points outside are kept, whatever their order of depth */
static void test_fig5(khzData *d) {
  double pos[5 * 3] = {0, 0, 0, 2, 0, 0, 2, 2, 0, 0, 2, 0, 1, 1, 0};
  double depth[5] = {0.5, 0.4, 0.3, 0.2, 0.1};
  double normal[3] = {0, 0, 1};
  int bottom[5];
  int nb = khz_bottomOfVolume(d, pos, depth, 5, normal, bottom);
  ENSURE(nb == 4 && bottom[4] == 0);
  /* the same point, now the second deepest: it is outside the (degenerate)
   * polygon of the single deeper point and is kept */
  double depth2[5] = {0.5, 0.2, 0.15, 0.1, 0.45};
  nb = khz_bottomOfVolume(d, pos, depth2, 5, normal, bottom);
  ENSURE(nb == 5);
}

/* bowl z = (x^2 + y^2) / 2 below the plane: every surface point is on the
 * bottom, every interior point above the surface is not */
static void test_bowl(khzData *d) {
  enum { NR = 12, NA = 24, NI = 300 };
  int n = 1 + NR * NA + NI;
  double *pos = calloc(3 * (size_t)n, sizeof(double)), *depth = calloc((size_t)n, sizeof(double));
  int *bottom = calloc((size_t)n, sizeof(int));
  double normal[3] = {0.3, -0.2, 0.93}, u[3], v[3], a[3] = {1, 0, 0};
  double nn = sqrt(khzu_dot3(normal, normal));
  for (int k = 0; k < 3; k++) normal[k] /= nn;
  khzu_cross(u, normal, a);
  double un = sqrt(khzu_dot3(u, u));
  for (int k = 0; k < 3; k++) u[k] /= un;
  khzu_cross(v, normal, u);
  int k = 0;
  /* surface points (deepest at the centre) */
  for (int r = 0; r <= NR; r++)
    for (int t = 0; t < (r ? NA : 1); t++, k++) {
      double rad = 0.1 * r, th = 2 * M_PI * t / NA + 0.01 * r;
      double x = rad * cos(th), y = rad * sin(th);
      depth[k] = 1.0 - 0.5 * rad * rad;
      for (int j = 0; j < 3; j++) pos[3 * k + j] = x * u[j] + y * v[j] - depth[k] * normal[j];
    }
  int nsurface = k;
  /* interior points: above the surface and less deep than the surface a
   * ring further out (so the sampled polygon of deeper points covers them) */
  for (int i = 0; i < NI; i++, k++) {
    double rad = rm_uniform(0, 1.0), th = rm_uniform(0, 2 * M_PI), out = rad + 0.15;
    double x = rad * cos(th), y = rad * sin(th);
    depth[k] = (1.0 - 0.5 * out * out) - rm_uniform(0, 0.05);
    for (int j = 0; j < 3; j++) pos[3 * k + j] = x * u[j] + y * v[j] - depth[k] * normal[j];
  }
  int nb = khz_bottomOfVolume(d, pos, depth, n, normal, bottom);
  int wrong = 0;
  for (int i = 0; i < n; i++) wrong += bottom[i] != (i < nsurface);
  printf("bowl: %d points, %d bottom (expected %d), %d misclassified\n", n, nb, nsurface, wrong);
  ENSURE(wrong == 0);
  free(pos), free(depth), free(bottom);
}

/* impulse response vs M^-1 J^T: the velocity change of a point of body b
 * for a unit impulse at that point is J M^-1 J^T e */
static void test_impulse_response(void) {
  khzModel *m = rm_random_model(12, 1, 1, 1);
  khzData *d = khz_makeData(m, 0);
  int nv = m->nv;
  double *M = calloc((size_t)(nv * nv), sizeof(double)), *jp = calloc(3 * (size_t)nv, sizeof(double));
  double *x = calloc((size_t)nv, sizeof(double)), *dqd = calloc((size_t)nv, sizeof(double));
  double *dvel = calloc(6 * (size_t)m->nbody, sizeof(double)), *tau = calloc((size_t)nv, sizeof(double));
  double *qdd = calloc((size_t)nv, sizeof(double));
  double worst = 0;
  for (int t = 0; t < 20; t++) {
    rm_random_state(m, d->q, d->qd);
    int b = 1 + t % (m->nbody - 1);
    khz_kinematics(m, d);
    double p[3] = {d->xcom[3 * b] + 0.05, d->xcom[3 * b + 1] - 0.02, d->xcom[3 * b + 2] + 0.03};
    double J[3] = {rm_uniform(-1, 1), rm_uniform(-1, 1), rm_uniform(-1, 1)};

    /* reference: dqd = M^-1 jacp^T J */
    khz_crba(m, d, d->q, M);
    khz_kinematics(m, d);
    khz_jacobian(m, d, b, p, jp, NULL);
    for (int k = 0; k < nv; k++) x[k] = jp[k] * J[0] + jp[nv + k] * J[1] + jp[2 * nv + k] * J[2];
    khzu_cholFactor(M, nv);
    khzu_cholSolve(M, nv, x);

    /* khz: articulated inertias from ABA, then the impulse response */
    khz_forwardPass(m, d, d->q, d->qd);
    khz_externalForces(m, d);
    khz_abaCore(m, d, tau, qdd);
    const double *o = d->xpos + 3 * m->body_root[b];
    double r[3] = {p[0] - o[0], p[1] - o[1], p[2] - o[2]}, f[6];
    khzu_cross(f, r, J);
    f[3] = J[0], f[4] = J[1], f[5] = J[2];
    memset(dqd, 0, (size_t)nv * sizeof(double));
    khz_impulseResponse(m, d, b, f, dqd, dvel);
    double num = 0, den = 0;
    for (int k = 0; k < nv; k++) num = fmax(num, fabs(dqd[k] - x[k])), den = fmax(den, fabs(x[k]));
    worst = fmax(worst, num / den);
  }
  printf("impulse response vs M^-1 J^T: worst relative error %.3g\n", worst);
  ENSURE(worst < 1e-10);
  free(M), free(jp), free(x), free(dqd), free(dvel), free(tau), free(qdd);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

int main(void) {
  khzModel *m = rm_random_model(1, 1, 0, 0);
  khzData *d = khz_makeData(m, 1 << 20);
  test_flat_face(d);
  test_fig5(d);
  test_bowl(d);
  ENSURE(d->warning[KHZ_WARN_STACK] == 0);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  test_impulse_response();
  return ensure_report();
}
