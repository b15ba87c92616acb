/* simplex.c — two-phase revised simplex on a dense basis inverse (simplex.h).
 *
 * Standard form min c^T x, A x = b, x >= 0 (Chvatal, "Linear Programming",
 * ch. 7: the revised simplex method; ch. 8: two-phase start). Rows are
 * scaled by the sign of b so that the artificial basis is feasible; the
 * basis inverse is updated by the pivot's row operations and refactorised
 * from the basis columns every KHZ_LP_REFACTOR pivots and before the answer.
 */
#include "lp/simplex.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* degenerate pivots in a row after which Bland's rule takes over */
#define KHZ_LP_DEGENERATE_RUN 8

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

size_t khz_lpBytes(int mmax, int nmax) {
  size_t m = (size_t)mmax, n = (size_t)nmax;
  return align8(sizeof(double) * (2 * m * m + 4 * m)) + align8(sizeof(int) * (m + n + m));
}

void khz_lpInit(khzLp *lp, int mmax, int nmax, void *mem) {
  size_t m = (size_t)mmax;
  double *p = mem;
  memset(lp, 0, sizeof *lp);
  lp->mmax = mmax, lp->nmax = nmax;
  lp->binv = p, p += m * m;
  lp->lu = p, p += m * m;
  lp->xb = p, p += m;
  lp->y = p, p += m;
  lp->col = p, p += m;
  lp->sgn = p, p += m;
  int *q = (int *)((char *)mem + align8(sizeof(double) * (2 * m * m + 4 * m)));
  lp->basis = q, q += m;
  lp->where = q;
}

const char *khz_lpStatusName(khzLpStatus s) {
  static const char *names[KHZ_LP_NSTATUS] = {"optimal", "infeasible", "unbounded",
                                              "pivot budget spent", "singular basis",
                                              "larger than the workspace",
                                              "centre not inside its polytope"};
  return (unsigned)s < KHZ_LP_NSTATUS ? names[s] : "unknown";
}

/* one solve's problem and tolerances */
typedef struct lpProblem {
  int m, n;
  const double *A, *b, *c;
  double tol_piv;  /* smallest pivot of the ratio test, relative to max |B^-1 a_q| */
  double tol_cost; /* a reduced cost below -tol_cost prices a column in */
  double tol_feas; /* primal feasibility, absolute (from max |b|) */
} lpProblem;

/* column j of the sign-scaled system [S A | I] into out (m) */
static void column(const khzLp *lp, const lpProblem *p, int j, double *out) {
  int m = p->m;
  if (j < p->n) {
    const double *a = p->A + (size_t)m * j;
    for (int i = 0; i < m; i++) out[i] = lp->sgn[i] * a[i];
  } else {
    for (int i = 0; i < m; i++) out[i] = 0;
    out[j - p->n] = 1;
  }
}

/* binv = B^-1 of the basis columns by Gauss-Jordan with partial pivoting,
 * then xb = B^-1 (S b); -1 on a zero pivot */
static int refactor(khzLp *lp, const lpProblem *p) {
  int m = p->m;
  double *B = lp->lu, *X = lp->binv;
  for (int r = 0; r < m; r++) {
    column(lp, p, lp->basis[r], lp->col);
    for (int i = 0; i < m; i++) B[i * m + r] = lp->col[i];
  }
  for (int i = 0; i < m * m; i++) X[i] = 0;
  for (int i = 0; i < m; i++) X[i * m + i] = 1;
  for (int k = 0; k < m; k++) {
    /* the largest pivot in column k at or below row k */
    int piv = k;
    for (int i = k + 1; i < m; i++)
      if (fabs(B[i * m + k]) > fabs(B[piv * m + k])) piv = i;
    if (!(fabs(B[piv * m + k]) > 1e-300)) return -1;
    if (piv != k)
      for (int j = 0; j < m; j++) {
        double t = B[k * m + j];
        B[k * m + j] = B[piv * m + j], B[piv * m + j] = t;
        t = X[k * m + j];
        X[k * m + j] = X[piv * m + j], X[piv * m + j] = t;
      }
    double inv = 1 / B[k * m + k];
    for (int j = 0; j < m; j++) B[k * m + j] *= inv, X[k * m + j] *= inv;
    for (int i = 0; i < m; i++) {
      double f = B[i * m + k];
      if (i == k || f == 0) continue;
      for (int j = 0; j < m; j++) B[i * m + j] -= f * B[k * m + j], X[i * m + j] -= f * X[k * m + j];
    }
  }
  for (int i = 0; i < m; i++) {
    double s = 0;
    for (int k = 0; k < m; k++) s += X[i * m + k] * lp->sgn[k] * p->b[k];
    lp->xb[i] = s;
  }
  return 0;
}

/* cost of variable j in a phase: phase 1 prices the artificials at 1 */
static double cost(const lpProblem *p, int phase, int j) {
  if (phase == 1) return j >= p->n ? 1 : 0;
  return j < p->n ? p->c[j] : 0;
}

/* y = c_B^T B^-1 */
static void multipliers(khzLp *lp, const lpProblem *p, int phase) {
  int m = p->m;
  for (int k = 0; k < m; k++) lp->y[k] = 0;
  for (int r = 0; r < m; r++) {
    double cb = cost(p, phase, lp->basis[r]);
    if (cb == 0) continue;
    for (int k = 0; k < m; k++) lp->y[k] += cb * lp->binv[r * m + k];
  }
}

/* the entering column: Dantzig's most negative reduced cost
 * c_j - y^T (S a_j), or under Bland's rule the first negative one; -1 when
 * none (optimal) */
static int price(khzLp *lp, const lpProblem *p, int phase) {
  int best = -1, m = p->m;
  double dbest = -p->tol_cost, *ys = lp->col; /* S y; col is free until the ratio test */
  multipliers(lp, p, phase);
  for (int i = 0; i < m; i++) ys[i] = lp->y[i] * lp->sgn[i];
  for (int j = 0; j < p->n; j++) {
    if (lp->where[j] >= 0) continue;
    const double *a = p->A + (size_t)m * j;
    double d = cost(p, phase, j);
    if (m == 4)
      d -= ys[0] * a[0] + ys[1] * a[1] + ys[2] * a[2] + ys[3] * a[3];
    else
      for (int i = 0; i < m; i++) d -= ys[i] * a[i];
    if (d < dbest) {
      best = j, dbest = d;
      if (lp->bland) break;
    }
  }
  return best;
}

/* exchanges basis row r for column q, col = B^-1 a_q */
static void pivot(khzLp *lp, const lpProblem *p, int r, int q) {
  int m = p->m;
  double *col = lp->col, *row = lp->binv + (size_t)r * m;
  double theta = lp->xb[r] / col[r], inv = 1 / col[r];
  for (int k = 0; k < m; k++) row[k] *= inv;
  for (int i = 0; i < m; i++) {
    if (i == r) continue;
    double f = col[i];
    lp->xb[i] -= theta * f;
    if (f == 0) continue;
    double *ri = lp->binv + (size_t)i * m;
    for (int k = 0; k < m; k++) ri[k] -= f * row[k];
  }
  lp->xb[r] = theta;
  lp->where[lp->basis[r]] = -1;
  lp->basis[r] = q;
  lp->where[q] = r;
  lp->pivots++;
}

/* the simplex iterations of one phase */
static khzLpStatus iterate(khzLp *lp, const lpProblem *p, int phase, int max_pivots) {
  int m = p->m, since = 0, degenerate = 0;
  for (;;) {
    int q = price(lp, p, phase);
    if (q < 0) {
      /* optimal on the updated inverse: confirm on a fresh one */
      if (since == 0) return KHZ_LP_OPTIMAL;
      if (refactor(lp, p)) return KHZ_LP_SINGULAR;
      since = 0;
      continue;
    }
    if (lp->pivots >= max_pivots) return KHZ_LP_BUDGET;

    /* col = B^-1 (S a_q) */
    column(lp, p, q, lp->y); /* y is free until the next pricing */
    double cmax = 0;
    for (int i = 0; i < m; i++) {
      double s = 0;
      for (int k = 0; k < m; k++) s += lp->binv[i * m + k] * lp->y[k];
      lp->col[i] = s;
      if (fabs(s) > cmax) cmax = fabs(s);
    }

    /* ratio test; ties within round-off go to the largest pivot (Dantzig
     * phase) or the smallest basic index (Bland's rule) */
    int r = -1;
    double tmin = INFINITY, tiny = p->tol_piv * cmax;
    for (int i = 0; i < m; i++) {
      if (!(lp->col[i] > tiny)) continue;
      double t = fmax(lp->xb[i], 0) / lp->col[i];
      if (t < tmin) tmin = t;
    }
    if (tmin == INFINITY) return phase == 1 ? KHZ_LP_SINGULAR : KHZ_LP_UNBOUNDED;
    double tie = tmin + 1e-12 * (1 + tmin);
    for (int i = 0; i < m; i++) {
      if (!(lp->col[i] > tiny)) continue;
      double t = fmax(lp->xb[i], 0) / lp->col[i];
      if (t > tie) continue;
      if (r < 0 || (lp->bland ? lp->basis[i] < lp->basis[r] : lp->col[i] > lp->col[r])) r = i;
    }
    if (lp->xb[r] < 0) lp->xb[r] = 0;

    /* a run of degenerate pivots hands the rest of the solve to Bland */
    if (tmin * cmax <= p->tol_feas) {
      if (++degenerate >= KHZ_LP_DEGENERATE_RUN) lp->bland = 1;
    } else {
      degenerate = 0;
    }
    pivot(lp, p, r, q);
    if (++since >= KHZ_LP_REFACTOR) {
      if (refactor(lp, p)) return KHZ_LP_SINGULAR;
      since = 0;
    }
  }
}

/* after phase 1: artificials still basic (at zero) leave for any real column
 * with a usable entry in their row; a row with none is redundant and keeps
 * its artificial, which no column can move */
static int driveOut(khzLp *lp, const lpProblem *p) {
  int m = p->m;
  for (int r = 0; r < m; r++) {
    if (lp->basis[r] < p->n) continue;
    int best = -1;
    double vbest = 1e-9;
    for (int j = 0; j < p->n; j++) {
      if (lp->where[j] >= 0) continue;
      column(lp, p, j, lp->y);
      double v = 0, amax = 0;
      for (int k = 0; k < m; k++) {
        v += lp->binv[r * m + k] * lp->y[k];
        if (fabs(lp->y[k]) > amax) amax = fabs(lp->y[k]);
      }
      if (fabs(v) > vbest * fmax(amax, 1e-300)) best = j, vbest = fabs(v) / amax;
    }
    if (best < 0) continue;
    column(lp, p, best, lp->y);
    for (int i = 0; i < m; i++) {
      double s = 0;
      for (int k = 0; k < m; k++) s += lp->binv[i * m + k] * lp->y[k];
      lp->col[i] = s;
    }
    lp->xb[r] = 0;
    pivot(lp, p, r, best);
  }
  return refactor(lp, p);
}

/* entry (i, j) of the sign-scaled [S A | I] */
static double entry(const khzLp *lp, const lpProblem *p, int i, int j) {
  return j < p->n ? lp->sgn[i] * p->A[i + (size_t)p->m * j] : (double)(i == j - p->n);
}

/* one step of iterative refinement of xb = B^-1 S b and of y = c_B^T B^-1
 * on the final basis, the residuals accumulated in long double: the answer
 * is then accurate to round-off in x and y rather than to the basis's
 * condition number times round-off (Higham, "Accuracy and Stability of
 * Numerical Algorithms", ch. 12) */
static void refine(khzLp *lp, const lpProblem *p) {
  int m = p->m;
  double *res = lp->col, *tmp = lp->lu;
  for (int i = 0; i < m; i++) {
    long double r = (long double)lp->sgn[i] * p->b[i];
    for (int k = 0; k < m; k++) r -= (long double)entry(lp, p, i, lp->basis[k]) * lp->xb[k];
    res[i] = (double)r;
  }
  for (int i = 0; i < m; i++) {
    double dx = 0;
    for (int k = 0; k < m; k++) dx += lp->binv[i * m + k] * res[k];
    tmp[i] = dx;
  }
  for (int i = 0; i < m; i++) lp->xb[i] += tmp[i];
  for (int k = 0; k < m; k++) {
    int j = lp->basis[k];
    long double r = cost(p, 2, j);
    for (int i = 0; i < m; i++) r -= (long double)lp->y[i] * entry(lp, p, i, j);
    res[k] = (double)r;
  }
  for (int i = 0; i < m; i++) {
    double dy = 0;
    for (int k = 0; k < m; k++) dy += res[k] * lp->binv[k * m + i];
    lp->y[i] += dy;
  }
}

/* a warm basis of m distinct real columns that is regular and primal
 * feasible becomes the start of phase 2; 0 when it does */
static int warmStart(khzLp *lp, const lpProblem *p, const int *warm) {
  int m = p->m, n = p->n;
  for (int j = 0; j < n + m; j++) lp->where[j] = -1;
  for (int i = 0; i < m; i++) {
    int j = warm[i];
    if (j < 0 || j >= n || lp->where[j] >= 0) return -1;
    lp->basis[i] = j, lp->where[j] = i;
  }
  if (refactor(lp, p)) return -1;
  for (int i = 0; i < m; i++)
    if (lp->xb[i] < -p->tol_feas) return -1;
  return 0;
}

khzLpStatus khz_lpSolveFrom(khzLp *lp, int m, int n, const double *A, const double *b,
                            const double *c, const int *warm, int max_pivots, double *x,
                            double *y, double *obj) {
  lp->pivots = 0, lp->bland = lp->force_bland, lp->infeas = 0, lp->warm = 0;
  if (m < 1 || n < 1 || m > lp->mmax || n > lp->nmax) return KHZ_LP_TOOBIG;
  if (max_pivots <= 0) max_pivots = 20 * (m + n) + 100;

  /* tolerances from the data's magnitudes */
  double bmax = 0, cmax = 0;
  for (int i = 0; i < m; i++) bmax = fmax(bmax, fabs(b[i]));
  for (int j = 0; j < n; j++) cmax = fmax(cmax, fabs(c[j]));
  lpProblem p = {m, n, A, b, c, 1e-9, 1e-11, 1e-11 * (1 + bmax)};
  for (int i = 0; i < m; i++) lp->sgn[i] = b[i] < 0 ? -1 : 1;

  khzLpStatus st;
  if (warm && warmStart(lp, &p, warm) == 0) {
    lp->warm = 1;
  } else {
    /* phase 1 from the artificial basis on the sign-scaled rows */
    for (int i = 0; i < m; i++) lp->basis[i] = n + i;
    for (int j = 0; j < n + m; j++) lp->where[j] = j >= n ? j - n : -1;
    if (refactor(lp, &p)) return KHZ_LP_SINGULAR;
    st = iterate(lp, &p, 1, max_pivots);
    if (st != KHZ_LP_OPTIMAL) return st;
    for (int i = 0; i < m; i++)
      if (lp->basis[i] >= n) lp->infeas += fmax(lp->xb[i], 0);
    if (lp->infeas > 1e-9 * (1 + bmax)) return KHZ_LP_INFEASIBLE;
    if (driveOut(lp, &p)) return KHZ_LP_SINGULAR;
  }

  /* phase 2 on the objective, the artificials never re-entering */
  p.tol_cost = 1e-11 * (1 + cmax);
  lp->bland = lp->force_bland;
  st = iterate(lp, &p, 2, max_pivots);
  if (st != KHZ_LP_OPTIMAL) return st;
  if (refactor(lp, &p)) return KHZ_LP_SINGULAR;

  /* the answer from the fresh inverse, refined */
  multipliers(lp, &p, 2);
  refine(lp, &p);
  for (int j = 0; j < n; j++) x[j] = 0;
  for (int i = 0; i < m; i++) {
    if (lp->xb[i] < -1e-7 * (1 + bmax)) return KHZ_LP_SINGULAR;
    if (lp->basis[i] < n) x[lp->basis[i]] = fmax(lp->xb[i], 0);
  }
  long double f = 0;
  for (int j = 0; j < n; j++) f += (long double)c[j] * x[j];
  *obj = (double)f;
  if (y)
    for (int i = 0; i < m; i++) y[i] = lp->sgn[i] * lp->y[i];
  return KHZ_LP_OPTIMAL;
}

khzLpStatus khz_lpSolve(khzLp *lp, int m, int n, const double *A, const double *b,
                        const double *c, int max_pivots, double *x, double *y, double *obj) {
  return khz_lpSolveFrom(lp, m, n, A, b, c, NULL, max_pivots, x, y, obj);
}
