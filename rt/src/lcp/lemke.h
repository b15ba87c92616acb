/* lemke.h — Lemke's complementary pivoting algorithm for the linear
 * complementarity problem (rt-private; self-contained math, no model or data).
 *
 *   find z, w:  w = M z + q,  z >= 0,  w >= 0,  z^T w = 0
 *
 * with the covering vector e = (1, ..., 1) and lexicographic degeneracy
 * resolution (Cottle, Pang & Stone, "The Linear Complementarity Problem",
 * sec. 4.4 and 4.9): ties of the ratio test are broken by the rows of the
 * basis inverse, which is Lemke's method on q + (eps, eps^2, ..., eps^n) and
 * cannot cycle. For the copositive-plus matrices of Stewart & Trinkle's
 * contact LCP (and for P-matrices, PSD matrices) it ends in a solution when
 * one exists.
 *
 * Everything it needs lives in a workspace carved from caller memory sized
 * by khz_lemkeBytes(nmax): nothing allocates, so it may run inside the tick.
 */
#ifndef KHZ_LCP_LEMKE_H
#define KHZ_LCP_LEMKE_H

#include <stddef.h>

typedef enum khzLcpStatus {
  KHZ_LCP_SOLVED = 0, /* z, w satisfy the LCP */
  KHZ_LCP_BUDGET,     /* the pivot budget was spent before z0 left the basis */
  KHZ_LCP_RAY,        /* ray termination: no blocking row (the LCP may have no solution) */
  KHZ_LCP_TOOBIG,     /* n exceeds the workspace's capacity */
  KHZ_LCP_INACCURATE, /* z0 left the basis, but round-off in a degenerate basis left a
                         residual above lk->tol (default 1e-10; times 1e3 max |q| when
                         max |q| < 1e-3) */
  KHZ_LCP_TIMEOUT,    /* lk->deadline passed before z0 left the basis */
  KHZ_LCP_NSTATUS
} khzLcpStatus;

typedef struct khzLemke {
  int nmax;
  double *binv; /* nmax x nmax: the basis inverse, row-major */
  double *qbar; /* nmax: basic values B^-1 q */
  double *col;  /* nmax: the entering column B^-1 a */
  double *lu;   /* nmax x nmax: the final basis matrix, for the polish */
  double *rhs;  /* nmax */
  double *qs;   /* nmax: q / max |q| */
  int *basis;   /* nmax: variable basic in each row (w_i = i, z_j = n + j, z0 = 2n) */
  int *ties;    /* nmax: candidate rows of the lexicographic ratio test */
  int *perm;    /* 2 nmax: the LU row pivots, then the polish's basic z's */
  /* input: the natural residual max |min(z, w)| accepted as solved, on the
   * q Lemke works with (q / max |q| * 1e-3 when max |q| < 1e-3, else q);
   * 0, as khz_lemkeInit leaves it: 1e-10 */
  double tol;
  /* input: CLOCK_MONOTONIC time (s) after which the pivots stop with
   * KHZ_LCP_TIMEOUT (checked every 8 pivots); 0, as khz_lemkeInit leaves
   * it: no deadline */
  double deadline;
  /* input: an entering column's entry blocks (is a pivot candidate) only
   * above this fraction of the column's largest; 0, as khz_lemkeInit leaves
   * it: 1e-9. Contact LCPs have exactly dependent rows (the four coplanar
   * corners of a face), whose zeros in an entering column come out as
   * round-off amplified by the basis' condition: 1e-6 leaves them out (a
   * retry for the LCPs that fail at 1e-9; lcp.c) */
  double pivot_tol;
  /* input: minimum ratios of the ratio test within 1e-8 (tie_abs + |ratio|)
   * tie (and are broken lexicographically); 0, as khz_lemkeInit leaves it:
   * 1. The contact stepper (lcp.c) sets 1e-3: relative to the ratio, a row
   * 1e-8 m/s behind at a ratio of 1e-2 no longer ties, which left the
   * stacked boxes' bases that much infeasible (status inaccurate); the
   * floor keeps the zero ratios of degenerate rows (exactly opposite
   * friction directions) tied */
  double tie_abs;
  /* input: a pivot below this fraction of its column's largest entry has
   * B^-1 recomputed from the basis by LU (O(n^3)); 0, as khz_lemkeInit
   * leaves it: 1e-3 */
  double reinvert;
  /* input: 1 has B^-1 recomputed from the basis' k non-unit columns alone
   * (a k x k LU: the basic w's columns are unit vectors), the same inverse
   * at about (k/n)^3 of the cost; 0, as khz_lemkeInit leaves it: from the
   * whole n x n basis (the LCP path's, kept bit for bit). PEG sets 1 */
  int reduced;
  /* input: above 0, a small pivot (see reinvert) re-inverts only when the
   * updated B^-1 has drifted: max_i |(B^-1 B x - x)_i| above recheck on a
   * fixed x of entries 1 .. 1.75 (O(n^2), an entering column's cost,
   * instead of the O(k^3) re-inversion); the drift is also measured every
   * 32 pivots. 0, as khz_lemkeInit leaves it: every small pivot re-inverts
   * (the LCP path's, kept bit for bit). PEG sets it */
  double recheck;
  /* input: 1 lets z0 leave whenever its row is among the least ratios of
   * the ratio test (within the ties' tolerance), before the lexicographic
   * rule: the basis reached is then complementary and feasible for q, a
   * solution (Cottle, Pang & Stone, sec. 4.4: z0 is chosen when it is a
   * blocking variable). Without it a degenerate LCP can keep z0 basic at 0
   * (the lexicographic rule picks another tied row) and then end on a
   * secondary ray with z0 at round-off: 35 of the 42 frictional PEG LCPs
   * that failed in test_peg_alloc's drop (docs/peg.md). 0, as
   * khz_lemkeInit leaves it: the lexicographic rule alone (the LCP path's,
   * kept bit for bit). PEG sets 1 */
  int z0_ties;
  /* outputs of the last solve */
  int pivots;      /* pivots taken */
  int reinverts;   /* times B^-1 was recomputed from the basis after a small pivot */
  int polished;    /* 1 when the solution was recomputed from the final basis by LU */
  double residual; /* the final basis' residual (scaled q), before the tol test */
  int nbasis;      /* n when basis[] holds the last solve's final basis (khz_lemkeBasis), else 0 */
  /* the least d_i / max |d| over the entries of the entering columns that
   * were pivot candidates (above pivot_tol); INFINITY when no ratio test
   * was made. A solve again of the same (M, q) with a larger pivot_tol p
   * that stays below it sees the same candidates at every pivot, so takes
   * the same pivots and ends as this one did (a ray or the budget alike) */
  double least_candidate;
} khzLemke;

/* Bytes a workspace for problems of size up to nmax needs. */
size_t khz_lemkeBytes(int nmax);

/* Carves a workspace for size nmax out of mem (khz_lemkeBytes(nmax) bytes,
 * 8-byte aligned). */
void khz_lemkeInit(khzLemke *lk, int nmax, void *mem);

/* Solves the LCP (M row-major n x n, q of n) into z and w (n each) with at
 * most max_pivots pivots (<= 0: 50 n + 100). On KHZ_LCP_SOLVED z and w are
 * the solution, recomputed from the final basis by an LU solve of its
 * basis matrix when that is regular (lk->polished), so that the
 * complementarity residual is at round-off; a larger residual is reported
 * as KHZ_LCP_INACCURATE. On any other status z and w are
 * set to zero. Never allocates. */
/* CLOCK_MONOTONIC now, in seconds (no allocation, no blocking) */
double khz_lemkeNow(void);

khzLcpStatus khz_lemke(khzLemke *lk, int n, const double *M, const double *q, double *z, double *w,
                       int max_pivots);

/* Warm start: the complementary basis that has z_i basic where zbasic[i] is
 * non-zero (w_i basic elsewhere), solved directly as Lemke's polish solves
 * its final basis (the k x k system of the basic z's, LU, three steps of
 * iterative refinement; q scaled as khz_lemke scales it). KHZ_LCP_SOLVED
 * when that basis is feasible: z >= 0, w = M z + q >= 0 to within the
 * tolerance khz_lemke accepts (natural residual at most lk->tol on the
 * scaled q, 1e-10 when tol is 0); then z and w are the solution and
 * lk->pivots is 0. Otherwise
 * KHZ_LCP_INACCURATE (the basis is singular or infeasible: solve cold) with
 * z and w set to zero. One factorisation of k^3/3, no pivots. Never
 * allocates. */
khzLcpStatus khz_lemkeWarm(khzLemke *lk, int n, const double *M, const double *q,
                           const unsigned char *zbasic, double *z, double *w);

/* After a khz_lemke or khz_lemkeWarm that solved: zbasic[j] = 1 where z_j
 * is basic in the final basis, else 0 (all 0 when q >= 0 was solved by
 * z = 0 without a basis). */
void khz_lemkeBasis(const khzLemke *lk, int n, unsigned char *zbasic);

/* The LCP's independent blocks: variables i and j share a block when M_ij
 * or M_ji is non-zero (union-find over the pattern). Under the symmetric
 * permutation that lists the blocks one after the other M is block
 * diagonal, and (M, q) is that many independent LCPs with the same
 * solutions. Writes order[] (the variables block by block, ascending within
 * a block), start[] (block c is order[start[c] .. start[c + 1]), nblocks + 1
 * entries) and returns the number of blocks. Then permutes M in place
 * (M'[a][b] = M[order[a]][order[b]]) and packs each block's k x k matrix
 * row-major one after the other from M[0]: block c's starts at the sum of
 * the earlier blocks' k^2. scratch: n ints, buf: n doubles. O(n^2), no
 * allocation. */
int khz_lcpSplit(int n, double *M, int *order, int *start, int *scratch, double *buf);

/* The natural residual of a candidate solution: max_i |min(z_i, w_i)| with
 * w = M z + q recomputed (0 exactly at a solution). */
double khz_lcpResidual(int n, const double *M, const double *q, const double *z);

/* Short name of a status ("solved", "budget", "ray", "toobig", "inaccurate",
 * "timeout"). */
const char *khz_lcpStatusName(khzLcpStatus s);

#endif
