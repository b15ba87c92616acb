/* test_simplex.c — rt/src/lp/simplex.c against GLPK (glp_simplex followed by
 * glp_exact, its rational-arithmetic simplex) on random standard-form LPs:
 * bounded feasible ones (dense and with degenerate vertices, small-integer
 * data with many ties), infeasible ones and unbounded ones. The status must
 * agree; at an optimum the objective must agree to 1e-9 relative, and x and
 * y are checked on their own: A x = b, x >= 0, c - A^T y >= 0 and zero on
 * the support of x. A pivot budget of 1 reports KHZ_LP_BUDGET, too large a
 * problem KHZ_LP_TOOBIG. */
#include <glpk.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "lp/simplex.h"

#define MMAX 16
#define NMAX 48

static uint64_t rng = 0x853c49e6748fea9bull;
static double urand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}
static int irand(int lo, int hi) { return lo + (int)(urand() * (hi - lo + 1)); }

/* GLPK's status (GLP_OPT, GLP_NOFEAS, GLP_UNBND) and objective */
static int glpk_solve(int m, int n, const double *A, const double *b, const double *c,
                      double *obj) {
  glp_prob *lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_rows(lp, m);
  glp_add_cols(lp, n);
  int ia[1 + MMAX * NMAX], ja[1 + MMAX * NMAX], nz = 0;
  double ar[1 + MMAX * NMAX];
  for (int i = 0; i < m; i++) glp_set_row_bnds(lp, i + 1, GLP_FX, b[i], b[i]);
  for (int j = 0; j < n; j++) {
    glp_set_col_bnds(lp, j + 1, GLP_LO, 0, 0);
    glp_set_obj_coef(lp, j + 1, c[j]);
    for (int i = 0; i < m; i++)
      if (A[i + m * j] != 0) nz++, ia[nz] = i + 1, ja[nz] = j + 1, ar[nz] = A[i + m * j];
  }
  glp_load_matrix(lp, nz, ia, ja, ar);
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  int st = -1;
  if (glp_simplex(lp, &parm) == 0 && glp_exact(lp, &parm) == 0) {
    st = glp_get_status(lp);
    *obj = glp_get_obj_val(lp);
  }
  glp_delete_prob(lp);
  return st;
}

/* the checks of an optimum: primal and dual feasibility, complementarity */
static void check_kkt(int m, int n, const double *A, const double *b, const double *c,
                      const double *x, const double *y, double *worst) {
  double scale = 1;
  for (int j = 0; j < n; j++) scale = fmax(scale, fabs(x[j]));
  for (int i = 0; i < m; i++) {
    double r = -b[i];
    for (int j = 0; j < n; j++) r += A[i + m * j] * x[j];
    worst[0] = fmax(worst[0], fabs(r) / scale);
  }
  for (int j = 0; j < n; j++) {
    double d = c[j];
    for (int i = 0; i < m; i++) d -= A[i + m * j] * y[i];
    worst[1] = fmax(worst[1], -d);
    if (x[j] > 1e-9 * scale) worst[2] = fmax(worst[2], fabs(d));
    worst[0] = fmax(worst[0], -x[j]);
  }
}

enum { KIND_DENSE, KIND_DEGENERATE, KIND_INTEGER, KIND_INFEASIBLE, KIND_UNBOUNDED, NKIND };
static const char *kind_name[NKIND] = {"dense", "degenerate", "small-integer", "infeasible",
                                       "unbounded"};

/* a random problem of a kind; a bounding row sum x = S makes the feasible set
 * a polytope except for the unbounded kind */
static void make(int kind, int *pm, int *pn, double *A, double *b, double *c) {
  int m = irand(kind == KIND_INFEASIBLE ? 2 : 1, MMAX - 1), n = irand(m + 1, NMAX);
  /* dyadic data (k / 64, j / 1024) so that b = A x0 is exact in doubles and
   * GLPK's rational arithmetic sees the problem that was meant: a degenerate
   * vertex stays feasible */
  double x0[NMAX];
  for (int j = 0; j < n; j++) {
    x0[j] = irand(1, 1024) / 1024.0;
    if (kind == KIND_DEGENERATE || kind == KIND_INTEGER) x0[j] = urand() < 0.6 ? 0 : irand(1, 3);
  }
  for (int j = 0; j < n; j++) {
    for (int i = 0; i < m; i++)
      A[i + (m + 1) * j] = kind == KIND_INTEGER ? irand(-2, 2) : irand(-64, 64) / 64.0;
    c[j] = kind == KIND_INTEGER ? irand(-3, 3) : 2 * urand() - 1;
  }
  for (int i = 0; i < m; i++) {
    b[i] = 0;
    for (int j = 0; j < n; j++) b[i] += A[i + (m + 1) * j] * x0[j];
  }
  if (kind == KIND_INFEASIBLE) /* row 0 twice with different right-hand sides */
    for (int j = 0; j < n; j++) A[1 + (m + 1) * j] = A[(m + 1) * j], b[1] = b[0] + 0.5;
  if (kind == KIND_UNBOUNDED) { /* no bounding row; a ray along e_n-2 + e_n-1 */
    for (int j = 0; j < n; j++) memmove(A + m * j, A + (m + 1) * j, sizeof(double) * m);
    for (int i = 0; i < m; i++) A[i + m * (n - 1)] = -A[i + m * (n - 2)];
    c[n - 1] = -c[n - 2] - 1;
    for (int i = 0; i < m; i++) { /* b = A x0 again with the changed last column */
      b[i] = 0;
      for (int j = 0; j < n; j++) b[i] += A[i + m * j] * x0[j];
    }
    *pm = m, *pn = n;
    return;
  }
  double S = 0;
  for (int j = 0; j < n; j++) A[m + (m + 1) * j] = 1, S += x0[j];
  b[m] = S;
  *pm = m + 1, *pn = n;
}

int main(void) {
  static unsigned char mem[1 << 16];
  khzLp lp;
  ENSURE(khz_lpBytes(MMAX, NMAX) <= sizeof mem);
  khz_lpInit(&lp, MMAX, NMAX, mem);

  for (int pass = 0; pass < 2; pass++)
  for (int kind = 0; kind < NKIND; kind++) {
    /* pass 1: Bland's rule from the first pivot (it otherwise takes over
     * only after a run of degenerate pivots) */
    lp.force_bland = pass;
    if (pass && kind != KIND_DEGENERATE && kind != KIND_INTEGER) continue;
    int ncase = 150, agree = 0, nopt = 0, maxpiv = 0, nbland = 0;
    double worst_rel = 0, kkt[3] = {0, 0, 0};
    for (int t = 0; t < ncase; t++) {
      double A[MMAX * NMAX], b[MMAX], c[NMAX], x[NMAX], y[MMAX], obj = 0, gobj = 0;
      int m, n;
      make(kind, &m, &n, A, b, c);
      khzLpStatus st = khz_lpSolve(&lp, m, n, A, b, c, 0, x, y, &obj);
      int gst = glpk_solve(m, n, A, b, c, &gobj);
      int want = gst == GLP_OPT ? KHZ_LP_OPTIMAL
                 : gst == GLP_NOFEAS ? KHZ_LP_INFEASIBLE
                 : gst == GLP_UNBND ? KHZ_LP_UNBOUNDED
                                    : -1;
      ENSURE_MSG((int)st == want, "%s case %d (m %d, n %d): %s, GLPK status %d", kind_name[kind],
                 t, m, n, khz_lpStatusName(st), gst);
      agree += (int)st == want;
      if (lp.pivots > maxpiv) maxpiv = lp.pivots;
      nbland += lp.bland;
      if (st != KHZ_LP_OPTIMAL || want != KHZ_LP_OPTIMAL) continue;
      nopt++;
      double rel = fabs(obj - gobj) / fmax(1, fabs(gobj));
      if (rel > worst_rel) worst_rel = rel;
      ENSURE_MSG(rel <= 1e-9, "%s case %d: objective %.17g, GLPK %.17g", kind_name[kind], t, obj,
                 gobj);
      check_kkt(m, n, A, b, c, x, y, kkt);
    }
    printf("%s%-13s %d LPs: status agrees %d, optima %d, worst relative objective error %.2e, "
           "residual %.1e, dual infeasibility %.1e, complementarity %.1e, most pivots %d, "
           "Bland %d\n",
           pass ? "Bland " : "", kind_name[kind], ncase, agree, nopt, worst_rel, kkt[0], kkt[1],
           kkt[2], maxpiv, nbland);
    ENSURE(kkt[0] <= 1e-9 && kkt[1] <= 1e-9 && kkt[2] <= 1e-9);
    if (kind < KIND_INFEASIBLE) ENSURE(nopt == ncase);
  }

  /* Beale's cycling example (1955): degenerate at the start, cycles under
   * Dantzig's rule with the textbook tie-breaking; optimum -1/20 */
  for (int pass = 0; pass < 2; pass++) {
    /* min -3/4 x4 + 150 x5 - 1/50 x6 + 6 x7, slacks x1..x3 */
    double A[3 * 7] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0.25, 0.5, 0, -60, -90, 0, -0.04, -0.02, 1,
                       9, 3, 0};
    double b[3] = {0, 0, 1}, c[7] = {0, 0, 0, -0.75, 150, -0.02, 6}, x[7], y[3], obj, gobj = 0;
    lp.force_bland = pass;
    khzLpStatus st = khz_lpSolve(&lp, 3, 7, A, b, c, 0, x, y, &obj);
    lp.force_bland = 0;
    ENSURE(st == KHZ_LP_OPTIMAL);
    ENSURE(glpk_solve(3, 7, A, b, c, &gobj) == GLP_OPT);
    ENSURE_NEAR(obj, -0.05, 1e-12);
    ENSURE_NEAR(gobj, -0.05, 1e-12);
    printf("Beale's cycling LP (%s): %s, objective %.15g (exact -0.05, GLPK %.15g), %d pivots\n",
           pass ? "Bland's rule" : "Dantzig's", khz_lpStatusName(st), obj, gobj, lp.pivots);
  }

  /* failure codes: budget, size */
  {
    double A[MMAX * NMAX], b[MMAX], c[NMAX], x[NMAX], y[MMAX], obj;
    int m, n;
    make(KIND_DENSE, &m, &n, A, b, c);
    ENSURE(khz_lpSolve(&lp, m, n, A, b, c, 1, x, y, &obj) == KHZ_LP_BUDGET);
    ENSURE(khz_lpSolve(&lp, MMAX + 1, n, A, b, c, 0, x, y, &obj) == KHZ_LP_TOOBIG);
    ENSURE(khz_lpSolve(&lp, m, NMAX + 1, A, b, c, 0, x, y, &obj) == KHZ_LP_TOOBIG);
  }
  return ensure_report();
}
