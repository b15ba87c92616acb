/* simplex.h — a small dense linear-program solver (rt-private; self-contained
 * math, no model or data).
 *
 *   minimise c^T x  subject to  A x = b,  x >= 0      (A: m x n, dense)
 *
 * Revised simplex in two phases (Chvatal, "Linear Programming", ch. 7-8):
 * phase 1 minimises the sum of m artificial variables from the identity basis
 * (rows with b_i < 0 are negated first), phase 2 the objective from the
 * feasible basis found. The basis inverse is kept as a dense m x m matrix,
 * updated by one elementary row operation per pivot and refactorised from the
 * basis columns (Gauss-Jordan, partial pivoting) every KHZ_LP_REFACTOR pivots
 * and once at the end, from which x and the duals are recomputed. Pricing is
 * Dantzig's (most negative reduced cost) until a run of degenerate pivots,
 * then Bland's smallest-index rule for the rest of the solve, which cannot
 * cycle (Bland 1977).
 *
 * The problems it is for are small: the ratio-metric penetration depth's dual
 * has 4 rows and one column per face of the two polytopes (lpdepth.h).
 * Everything lives in a workspace carved from caller memory sized by
 * khz_lpBytes(mmax, nmax): nothing allocates, so it may run inside the tick.
 */
#ifndef KHZ_LP_SIMPLEX_H
#define KHZ_LP_SIMPLEX_H

#include <stddef.h>

typedef enum khzLpStatus {
  KHZ_LP_OPTIMAL = 0, /* x is an optimal basic solution, y the duals */
  KHZ_LP_INFEASIBLE,  /* phase 1 ended above zero: no x >= 0 with A x = b */
  KHZ_LP_UNBOUNDED,   /* a ray of decreasing cost: the objective has no minimum */
  KHZ_LP_BUDGET,      /* the pivot budget was spent */
  KHZ_LP_SINGULAR,    /* refactorising the basis met a zero pivot (round-off) */
  KHZ_LP_TOOBIG,      /* m or n exceeds the workspace's capacity */
  KHZ_LP_BADINPUT,    /* lpdepth.h: a centre not strictly inside its polytope, a zero or
                         non-finite face normal */
  KHZ_LP_NSTATUS
} khzLpStatus;

/* pivots between two refactorisations of the basis inverse */
#define KHZ_LP_REFACTOR 32

typedef struct khzLp {
  int mmax, nmax;
  int force_bland; /* input, 0 after khz_lpInit: 1 prices by Bland's rule from the start */
  double *binv;  /* mmax x mmax: the basis inverse, row-major */
  double *xb;    /* mmax: basic values B^-1 b */
  double *y;     /* mmax: simplex multipliers c_B^T B^-1 */
  double *col;   /* mmax: the entering column B^-1 a_q */
  double *lu;    /* mmax x mmax: scratch of the refactorisation */
  double *sgn;   /* mmax: +1 / -1, the sign that makes b_i >= 0 */
  int *basis;    /* mmax: variable basic in each row (j < n real, n + i artificial i) */
  int *where;    /* nmax + mmax: row of a basic variable, -1 when nonbasic */
  /* outputs of the last solve */
  int pivots;    /* pivots of both phases */
  int bland;     /* 1 when the solve switched to Bland's rule */
  double infeas; /* phase 1's optimum (sum of artificials) */
  int warm;      /* 1 when the warm basis was taken (phase 1 skipped) */
} khzLp;

/* Bytes a workspace for m <= mmax rows and n <= nmax columns needs. */
size_t khz_lpBytes(int mmax, int nmax);

/* Carves a workspace out of mem (khz_lpBytes(mmax, nmax) bytes, 8-byte
 * aligned). */
void khz_lpInit(khzLp *lp, int mmax, int nmax, void *mem);

/* Solves min c^T x, A x = b, x >= 0 with A column-major (A[i + m j]), with at
 * most max_pivots pivots in all (<= 0: 20 (m + n) + 100). On KHZ_LP_OPTIMAL x
 * (n) is an optimal vertex, y (m, may be NULL) the duals (c - A^T y >= 0,
 * zero on the basic columns) and *obj = c^T x. On any other status x, y and
 * *obj are left unspecified. Never allocates. */
khzLpStatus khz_lpSolve(khzLp *lp, int m, int n, const double *A, const double *b,
                        const double *c, int max_pivots, double *x, double *y, double *obj);

/* The same from a warm basis: warm (m column indices, e.g. lp->basis of an
 * earlier solve of a nearby problem) starts phase 2 directly when its columns
 * are distinct, regular and primal feasible for this b; otherwise (or when
 * warm is NULL) the solve starts cold. After any solve lp->basis holds the
 * final basis. */
khzLpStatus khz_lpSolveFrom(khzLp *lp, int m, int n, const double *A, const double *b,
                            const double *c, const int *warm, int max_pivots, double *x,
                            double *y, double *obj);

/* A short name of a status ("optimal", "infeasible", ...). */
const char *khz_lpStatusName(khzLpStatus s);

#endif
