/* lp_util.h — helpers of the LP-depth tests and benchmark: random boxes and
 * random convex hulls placed in the world as collision shapes, their face
 * lists for khz_lpDepth, the libccd oracle (EPA depth, GJK intersection) and
 * GLPK's answer to the primal depth LP (eq. 2 written directly in (x, t)). */
#ifndef KHZ_TESTS_LP_UTIL_H
#define KHZ_TESTS_LP_UTIL_H

#include <ccd/ccd.h>
#include <glpk.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collision/collision.h"
#include "lp/lpdepth.h"

/* faces of the largest random hull (2 V - 4 for V = 48 points) */
#define LU_MAXFACE 96

static uint64_t lu_rng __attribute__((unused)) = 0x2545f4914f6cdd1dull;
static inline double lu_rand(void) { /* [0, 1) */
  lu_rng ^= lu_rng << 13, lu_rng ^= lu_rng >> 7, lu_rng ^= lu_rng << 17;
  return (double)(lu_rng >> 11) / 9007199254740992.0;
}
static inline double lu_uniform(double a, double b) { return a + (b - a) * lu_rand(); }
static inline void lu_randDir(double d[3]) {
  double z = lu_uniform(-1, 1), a = lu_uniform(0, 2 * M_PI), r = sqrt(1 - z * z);
  d[0] = r * cos(a), d[1] = r * sin(a), d[2] = z;
}
/* uniform rotation (Shoemake) as a row-major matrix */
static inline void lu_randRot(double R[9]) {
  double u1 = lu_rand(), u2 = 2 * M_PI * lu_rand(), u3 = 2 * M_PI * lu_rand();
  double q[4] = {sqrt(1 - u1) * sin(u2), sqrt(1 - u1) * cos(u2), sqrt(u1) * sin(u3),
                 sqrt(u1) * cos(u3)};
  khzu_quat2mat(R, q);
}

/* a box or a convex hull, its shape in the world and its faces */
typedef struct lu_body {
  khzColShape s;
  khzColHull hull;
  double size[3];
  int is_hull;
  double face[4 * LU_MAXFACE];
  khzPolytope p;
  double inradius; /* of the largest ball about p.center inside the body */
} lu_body;

/* a box of half extents in [lo, hi] */
static inline void lu_box(lu_body *b, double lo, double hi) {
  memset(b, 0, sizeof *b);
  for (int k = 0; k < 3; k++) b->size[k] = lu_uniform(lo, hi);
  b->s.shape = KHZ_SHAPE_BOX;
  b->s.size = b->size;
  b->s.scale = hi;
}

/* the hull of npt points on an ellipsoid of semi-axes in [lo, hi] (allocates:
 * lu_free) */
static inline int lu_hull(lu_body *b, int npt, double lo, double hi) {
  memset(b, 0, sizeof *b);
  double ax[3] = {lu_uniform(lo, hi), lu_uniform(lo, hi), lu_uniform(lo, hi)}, pts[3 * 64];
  for (int i = 0; i < npt && i < 64; i++) {
    double d[3];
    lu_randDir(d);
    for (int k = 0; k < 3; k++) pts[3 * i + k] = ax[k] * d[k];
  }
  if (khz_hull_build(&b->hull, pts, npt) != 0) return -1;
  b->is_hull = 1;
  b->s.shape = KHZ_SHAPE_CONVEX;
  b->s.hull = &b->hull;
  b->s.scale = hi;
  return 0;
}
static inline void lu_free(lu_body *b) {
  if (b->is_hull) khz_hull_free(&b->hull);
}

/* places the body at (pos, R) and rebuilds its faces and centre */
static inline void lu_place(lu_body *b, const double pos[3], const double R[9]) {
  memcpy(b->s.pos, pos, sizeof b->s.pos);
  memcpy(b->s.rot, R, sizeof b->s.rot);
  int nf = khz_lpPolytopeOfShape(&b->s, 0, b->face, LU_MAXFACE, &b->p);
  if (nf < 0) {
    fprintf(stderr, "lu_place: %d faces do not fit\n", b->is_hull ? b->hull.nplane : 6);
    abort();
  }
  memcpy(b->s.bcenter, b->p.center, sizeof b->s.bcenter);
  b->inradius = INFINITY;
  for (int f = 0; f < nf; f++) {
    const double *a = b->face + 4 * f;
    double dist = (a[3] - khzu_dot3(a, b->p.center)) / khzu_norm3(a);
    if (dist < b->inradius) b->inradius = dist;
  }
}

/* ------------------------------------------------------ libccd oracle -- */

static inline void lu_ccdSupport(const void *obj, const ccd_vec3_t *dir, ccd_vec3_t *out) {
  const lu_body *b = obj;
  double d[3] = {dir->v[0], dir->v[1], dir->v[2]}, p[3];
  khz_shape_support(&b->s, d, p);
  out->v[0] = p[0], out->v[1] = p[1], out->v[2] = p[2];
}
static inline void lu_ccdCenter(const void *obj, ccd_vec3_t *out) {
  const lu_body *b = obj;
  out->v[0] = b->p.center[0], out->v[1] = b->p.center[1], out->v[2] = b->p.center[2];
}
static inline void lu_ccdInit(ccd_t *ccd) {
  CCD_INIT(ccd);
  ccd->support1 = ccd->support2 = lu_ccdSupport;
  ccd->center1 = ccd->center2 = lu_ccdCenter;
  ccd->max_iterations = 1000;
  ccd->epa_tolerance = 1e-12;
  ccd->dist_tolerance = 1e-14;
}

/* GJK distance of two separated bodies (khz's GJK); 0 when they meet */
static inline double lu_distance(const lu_body *a, const lu_body *b) {
  double pa[3], pb[3];
  return khz_gjk(&a->s, khz_shape_supportFn, &b->s, khz_shape_supportFn,
                 fmax(a->s.scale, b->s.scale), pa, pb);
}

/* places b at a random orientation so that it touches a (libccd's GJK,
 * bisection along u from the far side), then moves it by -push along u
 * (push > 0: overlapping, < 0: apart) */
static inline void lu_touch(const lu_body *a, lu_body *b, const double u[3], double push,
                            const ccd_t *ccd) {
  double lo = 0, hi = 4 * (a->s.scale + b->s.scale) + 1, R[9];
  memcpy(R, b->s.rot, sizeof R);
  for (int it = 0; it < 80; it++) {
    double mid = 0.5 * (lo + hi), x[3];
    khzu_addScl3(x, a->p.center, u, mid);
    lu_place(b, x, R);
    if (ccdGJKIntersect(a, b, ccd))
      lo = mid;
    else
      hi = mid;
  }
  double x[3];
  khzu_addScl3(x, a->p.center, u, 0.5 * (lo + hi) - push);
  lu_place(b, x, R);
}

/* ------------------------------------------------------- GLPK oracle -- */

/* r of eq. 2 by GLPK's exact (rational) simplex on the primal LP in (x, t):
 * a_k . x - c_k t <= a_k . x_i for every face k of both bodies, min t;
 * returns -1 when GLPK does not report an optimum */
static inline double lu_glpkRatio(const khzPolytope *p1, const khzPolytope *p2, double x[3]) {
  int n = p1->nface + p2->nface, k = 0, nz = 0;
  glp_prob *lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_cols(lp, 4);
  for (int j = 1; j <= 3; j++) glp_set_col_bnds(lp, j, GLP_FR, 0, 0);
  glp_set_col_bnds(lp, 4, GLP_LO, 0, 0);
  glp_set_obj_coef(lp, 4, 1);
  glp_add_rows(lp, n);
  int *ia = malloc(sizeof(int) * (4 * n + 1)), *ja = malloc(sizeof(int) * (4 * n + 1));
  double *ar = malloc(sizeof(double) * (4 * n + 1));
  for (int b = 0; b < 2; b++) {
    const khzPolytope *p = b ? p2 : p1;
    for (int f = 0; f < p->nface; f++) {
      const double *a = p->face + 4 * f;
      double len = khzu_norm3(a), u[3] = {a[0] / len, a[1] / len, a[2] / len};
      double c = a[3] / len - khzu_dot3(u, p->center);
      k++;
      for (int j = 0; j < 3; j++) nz++, ia[nz] = k, ja[nz] = j + 1, ar[nz] = u[j];
      nz++, ia[nz] = k, ja[nz] = 4, ar[nz] = -c;
      glp_set_row_bnds(lp, k, GLP_UP, 0, khzu_dot3(u, p->center));
    }
  }
  glp_load_matrix(lp, nz, ia, ja, ar);
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  double r = -1;
  if (glp_simplex(lp, &parm) == 0 && glp_exact(lp, &parm) == 0 && glp_get_status(lp) == GLP_OPT) {
    r = glp_get_obj_val(lp);
    for (int j = 0; j < 3; j++) x[j] = glp_get_col_prim(lp, j + 1);
  }
  glp_delete_prob(lp);
  free(ia), free(ja), free(ar);
  return r;
}

/* -r of the dual depth LP (lpdepth.h) by GLPK's exact simplex, given the
 * workspace's columns (a_k, c_k) and costs after a khz_lpDepth call: min
 * cost^T y, sum y_k a_k = 0, sum y_k c_k = 1, y >= 0; NAN when GLPK does not
 * report an optimum */
static inline double lu_glpkDual(const khzLpDepthWork *w, int n) {
  glp_prob *lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_rows(lp, 4);
  for (int i = 0; i < 4; i++) glp_set_row_bnds(lp, i + 1, GLP_FX, i == 3, i == 3);
  glp_add_cols(lp, n);
  int *ia = malloc(sizeof(int) * (4 * n + 1)), *ja = malloc(sizeof(int) * (4 * n + 1)), nz = 0;
  double *ar = malloc(sizeof(double) * (4 * n + 1));
  for (int k = 0; k < n; k++) {
    glp_set_col_bnds(lp, k + 1, GLP_LO, 0, 0);
    glp_set_obj_coef(lp, k + 1, w->cost[k]);
    for (int i = 0; i < 4; i++)
      if (w->A[4 * k + i] != 0) nz++, ia[nz] = i + 1, ja[nz] = k + 1, ar[nz] = w->A[4 * k + i];
  }
  glp_load_matrix(lp, nz, ia, ja, ar);
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  double f = NAN;
  if (glp_simplex(lp, &parm) == 0 && glp_exact(lp, &parm) == 0 && glp_get_status(lp) == GLP_OPT)
    f = glp_get_obj_val(lp);
  glp_delete_prob(lp);
  free(ia), free(ja), free(ar);
  return f;
}

#endif
