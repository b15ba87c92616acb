/* lemke.c — Lemke's algorithm with lexicographic degeneracy resolution
 * (Cottle, Pang & Stone, "The Linear Complementarity Problem", Algorithm
 * 4.4.5 with the lexicographic rule of sec. 4.9).
 *
 * The system is w - M z - e z0 = q over the 2n + 1 variables (w, z, z0).
 * The basis inverse B^-1 is kept explicitly (n x n, product-form updates):
 * an entering column costs one B^-1 a, a pivot one rank-one update. Start:
 * B = I (w basic); z0 enters and the row with the lexicographically least
 * (q_i, B^-1_i) leaves. Then the complement of the variable that left
 * enters, the minimum-ratio row leaves (ties broken lexicographically over
 * (qbar_i, B^-1_i) / d_i), until z0 leaves (a solution) or no row blocks
 * (ray termination). The solution is then recomputed from the final basis
 * by an LU solve of the basis matrix (reduced to the rows and columns of
 * the basic z's, polish()), so that round-off accumulated over the pivots
 * does not stay in z. Cost: O(n^2) per pivot (the entering column and the
 * rank-one update of B^-1), O(n^3) only for a re-inversion after a pivot
 * below KHZ_LEMKE_REINVERT of its column and for the final k x k LU (k the
 * basic z's).
 */
#include "lemke.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* an entering column's entry blocks only above this fraction of the
 * column's largest; ratios within this relative distance tie */
#ifndef KHZ_LEMKE_PIVOT_TOL
#define KHZ_LEMKE_PIVOT_TOL 1e-9
#endif
#ifndef KHZ_LEMKE_REINVERT
#define KHZ_LEMKE_REINVERT 1e-3 /* a pivot below this fraction of its column: B^-1 afresh */
#endif
#ifndef KHZ_LEMKE_SMALL_PIVOT
#define KHZ_LEMKE_SMALL_PIVOT 0
#endif
#ifndef KHZ_LEMKE_RECHECK_EVERY
#define KHZ_LEMKE_RECHECK_EVERY 32 /* lk->recheck: B^-1's drift measured every this many pivots */
#endif
#ifndef KHZ_LEMKE_RECHECK_FLOOR
#define KHZ_LEMKE_RECHECK_FLOOR 100 /* lk->recheck: drift tolerated relative to a fresh inverse's */
#endif
#ifndef KHZ_LEMKE_TIE_TOL
#define KHZ_LEMKE_TIE_TOL 1e-8
#endif
size_t khz_lemkeBytes(int nmax) {
  size_t n = nmax > 0 ? (size_t)nmax : 0;
  return (2 * n * n + 4 * n) * sizeof(double) + 4 * n * sizeof(int) + 16;
}

void khz_lemkeInit(khzLemke *lk, int nmax, void *mem) {
  size_t n = nmax > 0 ? (size_t)nmax : 0;
  double *p = mem;
  memset(lk, 0, sizeof *lk);
  lk->nmax = (int)n;
  lk->binv = p, p += n * n;
  lk->lu = p, p += n * n;
  lk->qbar = p, p += n;
  lk->col = p, p += n;
  lk->rhs = p, p += n;
  lk->qs = p, p += n;
  int *ip = (int *)p;
  lk->basis = ip, ip += n;
  lk->ties = ip, ip += n;
  lk->perm = ip;
}

double khz_lemkeNow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *khz_lcpStatusName(khzLcpStatus s) {
  static const char *const names[KHZ_LCP_NSTATUS] = {"solved", "budget", "ray", "toobig",
                                                          "inaccurate", "timeout"};
  return s >= 0 && s < KHZ_LCP_NSTATUS ? names[s] : "unknown";
}

double khz_lcpResidual(int n, const double *M, const double *q, const double *z) {
  double r = 0;
  for (int i = 0; i < n; i++) {
    double w = q[i];
    for (int j = 0; j < n; j++) w += M[(size_t)i * n + j] * z[j];
    double e = fabs(fmin(z[i], w));
    if (!(e <= r)) r = e; /* NaN propagates */
  }
  return r;
}

static int split_find(int *uf, int x) {
  while (uf[x] != x) x = uf[x] = uf[uf[x]];
  return x;
}

int khz_lcpSplit(int n, double *M, int *order, int *start, int *scratch, double *buf) {
  if (n <= 0) {
    start[0] = 0;
    return 0;
  }
  int *uf = scratch;
  for (int i = 0; i < n; i++) uf[i] = i;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (M[(size_t)i * n + j] != 0 || M[(size_t)j * n + i] != 0) {
        int a = split_find(uf, i), b = split_find(uf, j);
        if (a != b) uf[a < b ? b : a] = a < b ? a : b;
      }
  /* the blocks numbered by their first variable: the root of a set is its
   * smallest member; order[] first holds each variable's block */
  int nb = 0;
  for (int i = 0; i < n; i++) {
    int r = split_find(uf, i);
    order[i] = r == i ? nb++ : order[r];
  }
  for (int c = 0; c <= nb; c++) start[c] = 0;
  for (int i = 0; i < n; i++) start[order[i] + 1]++;
  for (int c = 0; c < nb; c++) start[c + 1] += start[c];
  int *fill = uf; /* the next slot of each block (the roots are no longer needed) */
  for (int c = 0; c < nb; c++) fill[c] = start[c];
  for (int i = 0; i < n; i++) buf[i] = order[i]; /* blocks, exact in a double */
  for (int i = 0; i < n; i++) order[fill[(int)buf[i]]++] = i;
  if (nb == 1) return 1; /* order is the identity: nothing to move */
  /* rows: row a <- row order[a], by cycles (scratch marks the rows done) */
  int *done = scratch;
  for (int a = 0; a < n; a++) done[a] = 0;
  size_t rowb = (size_t)n * sizeof(double);
  for (int a0 = 0; a0 < n; a0++) {
    if (done[a0] || order[a0] == a0) continue;
    memcpy(buf, M + (size_t)a0 * n, rowb);
    int a = a0;
    for (;;) {
      done[a] = 1;
      int src = order[a];
      if (src == a0) {
        memcpy(M + (size_t)a * n, buf, rowb);
        break;
      }
      memcpy(M + (size_t)a * n, M + (size_t)src * n, rowb);
      a = src;
    }
  }
  /* columns, row by row */
  for (int a = 0; a < n; a++) {
    double *row = M + (size_t)a * n;
    for (int b = 0; b < n; b++) buf[b] = row[order[b]];
    memcpy(row, buf, rowb);
  }
  /* pack: block c's row i moves from (s + i) n + s to P + i k (P the earlier
   * blocks' k^2 <= s n, so every row moves down and no row not yet moved
   * is overwritten) */
  size_t P = 0;
  for (int c = 0; c < nb; c++) {
    int s = start[c], k = start[c + 1] - s;
    for (int i = 0; i < k; i++) memmove(M + P + (size_t)i * k, M + (size_t)(s + i) * n + s, (size_t)k * sizeof(double));
    P += (size_t)k * k;
  }
  return nb;
}

/* the entering column d = B^-1 a of variable v (w_j: e_j; z_j: -M_.j; z0: -e).
 * M's column j is first copied to contiguous scratch (lk->rhs, free during
 * the pivots): B^-1's rows and the column are then read in order (the
 * strided reads of M took half of a 192 x 192 solve); same sums, same order.
 * Only the column's non-zeros are visited (their indices in lk->perm, free
 * during the pivots): a contact LCP's column couples the constraints of two
 * bodies alone, and a skipped term is an exact 0, so the sums are the same */
static void entering_column(khzLemke *lk, int n, const double *M, int v, double *d) {
  const double *B = lk->binv;
  double *a = lk->rhs;
  int *nz = lk->perm, nnz = 0;
  if (v >= n && v < 2 * n)
    for (int k = 0; k < n; k++) {
      a[k] = M[(size_t)k * n + (v - n)];
      if (a[k] != 0) nz[nnz++] = k;
    }
  int i0 = 0;
  if (v >= n && v < 2 * n)
    /* four rows at a time, as binv_error: four independent sums */
    for (; i0 + 4 <= n; i0 += 4) {
      const double *B0 = B + (size_t)i0 * n, *B1 = B0 + n, *B2 = B1 + n, *B3 = B2 + n;
      double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (int t = 0; t < nnz; t++) {
        int j = nz[t];
        double aj = a[j];
        s0 -= B0[j] * aj, s1 -= B1[j] * aj, s2 -= B2[j] * aj, s3 -= B3[j] * aj;
      }
      d[i0] = s0, d[i0 + 1] = s1, d[i0 + 2] = s2, d[i0 + 3] = s3;
    }
  for (int i = i0; i < n; i++) {
    const double *Bi = B + (size_t)i * n;
    double s = 0;
    if (v < n) {
      s = Bi[v];
    } else if (v < 2 * n) {
      for (int t = 0; t < nnz; t++) s -= Bi[nz[t]] * a[nz[t]];
    } else {
      for (int k = 0; k < n; k++) s -= Bi[k];
    }
    d[i] = s;
  }
}

/* the lexicographic minimum-ratio row among the ntie candidate rows:
 * least qbar_i / d_i, ties broken by B^-1_ik / d_i for k = 0, 1, ...
 * (the rows of B^-1 are independent, so one row remains) */
static int lexico_min(const khzLemke *lk, int n, const double *d, int *ties, int ntie) {
  /* the ratio itself */
  double best = INFINITY;
  for (int t = 0; t < ntie; t++) best = fmin(best, lk->qbar[ties[t]] / d[ties[t]]);
  double tol = KHZ_LEMKE_TIE_TOL * ((lk->tie_abs > 0 ? lk->tie_abs : 1) + fabs(best));
  int m = 0;
  double dbig = 0;
  for (int t = 0; t < ntie; t++)
    if (lk->qbar[ties[t]] / d[ties[t]] <= best + tol) ties[m++] = ties[t], dbig = fmax(dbig, d[ties[t]]);
  /* among the tied rows, pivots far smaller than the largest are round-off
   * of zeros (a degenerate basis): they would blow B^-1 up; any tied row
   * keeps the basis feasible */
  int keep = 0;
  for (int t = 0; t < m; t++)
    if (d[ties[t]] >= KHZ_LEMKE_SMALL_PIVOT * dbig) ties[keep++] = ties[t];
  m = keep;
  /* then the columns of B^-1, one after the other */
  for (int k = 0; k < n && m > 1; k++) {
    best = INFINITY;
    for (int t = 0; t < m; t++) best = fmin(best, lk->binv[(size_t)ties[t] * n + k] / d[ties[t]]);
    tol = KHZ_LEMKE_TIE_TOL * (1 + fabs(best));
    int keep = 0;
    for (int t = 0; t < m; t++)
      if (lk->binv[(size_t)ties[t] * n + k] / d[ties[t]] <= best + tol) ties[keep++] = ties[t];
    m = keep;
  }
  return ties[0];
}

/* z0's row when it is among the ntie candidate rows at the least ratio
 * (lexico_min's first tolerance), else -1 (lk->z0_ties) */
static int z0_tied(const khzLemke *lk, int n, const double *d, const int *ties, int ntie) {
  double best = INFINITY;
  int rz = -1;
  for (int t = 0; t < ntie; t++) {
    best = fmin(best, lk->qbar[ties[t]] / d[ties[t]]);
    if (lk->basis[ties[t]] == 2 * n) rz = ties[t];
  }
  if (rz < 0) return -1;
  double tol = KHZ_LEMKE_TIE_TOL * ((lk->tie_abs > 0 ? lk->tie_abs : 1) + fabs(best));
  return lk->qbar[rz] / d[rz] <= best + tol ? rz : -1;
}

/* pivot on row r with entering column d: B^-1 and qbar updated in place.
 * The rank-one update visits the pivot row's non-zeros alone (B^-1's rows
 * of basic z's are zero outside the k rows no basic w covers; indices in
 * lk->perm): the same values, a skipped term being an exact 0 */
static void pivot(khzLemke *lk, int n, int r, const double *d, int entering) {
  double *Br = lk->binv + (size_t)r * n, inv = 1 / d[r];
  int *nz = lk->perm, nnz = 0;
  for (int k = 0; k < n; k++) {
    Br[k] *= inv;
    if (Br[k] != 0) nz[nnz++] = k;
  }
  lk->qbar[r] *= inv;
  for (int i = 0; i < n; i++) {
    double f = d[i];
    if (i == r || f == 0) continue;
    double *Bi = lk->binv + (size_t)i * n;
    for (int t = 0; t < nnz; t++) Bi[nz[t]] -= f * Br[nz[t]];
    lk->qbar[i] -= f * lk->qbar[r];
    /* the basic values stay >= 0 (feasible bases); round-off below 0 is 0 */
    if (lk->qbar[i] < 0) lk->qbar[i] = 0;
  }
  lk->basis[r] = entering;
}

/* LU with partial pivoting of the k x k matrix A, in place (row swaps in
 * piv); 0 when A is numerically singular: a pivot at most 1e-13 of scale
 * (0: A's largest entry) */
static int lu_factor(double *A, int k, int *piv, double scale) {
  if (!(scale > 0))
    for (int i = 0; i < k * k; i++) scale = fmax(scale, fabs(A[i]));
  if (scale == 0) return k == 0;
  for (int c = 0; c < k; c++) {
    int p = c;
    for (int i = c + 1; i < k; i++)
      if (fabs(A[i * k + c]) > fabs(A[p * k + c])) p = i;
    if (fabs(A[p * k + c]) <= 1e-13 * scale) return 0;
    piv[c] = p;
    if (p != c)
      for (int j = 0; j < k; j++) {
        double t = A[c * k + j];
        A[c * k + j] = A[p * k + j], A[p * k + j] = t;
      }
    for (int i = c + 1; i < k; i++) {
      double f = A[i * k + c] / A[c * k + c];
      A[i * k + c] = f;
      for (int j = c + 1; j < k; j++) A[i * k + j] -= f * A[c * k + j];
    }
  }
  return 1;
}

/* b <- A^-1 b with lu_factor's factors */
static void lu_solve(const double *A, int k, const int *piv, double *b) {
  for (int c = 0; c < k; c++)
    if (piv[c] != c) {
      double t = b[c];
      b[c] = b[piv[c]], b[piv[c]] = t;
    }
  for (int c = 0; c < k; c++)
    for (int i = c + 1; i < k; i++) b[i] -= A[i * k + c] * b[c];
  for (int i = k - 1; i >= 0; i--) {
    double s = b[i];
    for (int j = i + 1; j < k; j++) s -= A[i * k + j] * b[j];
    b[i] = s / A[i * k + i];
  }
}

/* b <- A^-1 e_a (b of k), lu_solve on the unit vector without the forward
 * steps before the 1's row (after the row swaps): there b holds only +0,
 * which those steps leave +0, so the result is lu_solve's to the bit (a
 * re-inversion's k solves: about a sixth less work) */
static void lu_solve_unit(const double *A, int k, const int *piv, int a, double *b) {
  memset(b, 0, (size_t)k * sizeof(double));
  b[a] = 1;
  int p = a; /* where the 1 is */
  for (int c = 0; c < k; c++)
    if (piv[c] != c) {
      double t = b[c];
      b[c] = b[piv[c]], b[piv[c]] = t;
      if (p == c) p = piv[c];
      else if (p == piv[c]) p = c;
    }
  for (int c = p; c < k; c++)
    for (int i = c + 1; i < k; i++) b[i] -= A[i * k + c] * b[c];
  for (int i = k - 1; i >= 0; i--) {
    double s = b[i];
    for (int j = i + 1; j < k; j++) s -= A[i * k + j] * b[j];
    b[i] = s / A[i * k + i];
  }
}

/* X <- A^-1 (k x k, row-major) from lu_factor's factors: the k solves of
 * lu_solve on the unit vectors done side by side, each step applied to a
 * whole row of X (a contiguous k-vector, which the compiler vectorises);
 * every entry sees the same operations in the same order as its column's
 * lu_solve, so X is those solutions to the bit */
static void lu_inverse(const double *A, int k, const int *piv, double *X) {
  memset(X, 0, (size_t)k * k * sizeof(double));
  for (int i = 0; i < k; i++) X[(size_t)i * k + i] = 1;
  for (int c = 0; c < k; c++)
    if (piv[c] != c) {
      double *x = X + (size_t)c * k, *y = X + (size_t)piv[c] * k;
      for (int a = 0; a < k; a++) {
        double t = x[a];
        x[a] = y[a], y[a] = t;
      }
    }
  for (int c = 0; c < k; c++) {
    const double *xc = X + (size_t)c * k;
    for (int i = c + 1; i < k; i++) {
      double f = A[i * k + c], *xi = X + (size_t)i * k;
      for (int a = 0; a < k; a++) xi[a] -= f * xc[a];
    }
  }
  for (int i = k - 1; i >= 0; i--) {
    double *xi = X + (size_t)i * k;
    for (int j = i + 1; j < k; j++) {
      double f = A[i * k + j];
      const double *xj = X + (size_t)j * k;
      for (int a = 0; a < k; a++) xi[a] -= f * xj[a];
    }
    for (int a = 0; a < k; a++) xi[a] /= A[i * k + i];
  }
}

/* column v of [I, -M, -e] at row r */
static double basic_entry(int n, const double *M, int v, int r) {
  return v < n ? (r == v) : v < 2 * n ? -M[(size_t)r * n + (v - n)] : -1;
}

/* the polish on the whole basis: B x_B = q by LU of the n x n basis matrix,
 * iterative refinement, z from the basic z's; kept when its residual is no
 * worse than z's */
static void polish_full(khzLemke *lk, int n, const double *M, const double *q, double *z, double *w) {
  for (int i = 0; i < n; i++)
    for (int r = 0; r < n; r++) lk->lu[(size_t)r * n + i] = basic_entry(n, M, lk->basis[i], r);
  double before = khz_lcpResidual(n, M, q, z);
  if (!lu_factor(lk->lu, n, lk->perm, 0)) return;
  double *x = lk->rhs, *res = lk->col;
  memcpy(x, q, (size_t)n * sizeof(double));
  lu_solve(lk->lu, n, lk->perm, x);
  /* refinement: x += B^-1 (q - B x), three times (ill-conditioned bases of
   * degenerate problems) */
  for (int it = 0; it < 3; it++) {
    for (int r = 0; r < n; r++) {
      double s = q[r];
      for (int i = 0; i < n; i++) s -= basic_entry(n, M, lk->basis[i], r) * x[i];
      res[r] = s;
    }
    lu_solve(lk->lu, n, lk->perm, res);
    for (int i = 0; i < n; i++) x[i] += res[i];
  }
  /* candidate in w (scratch), then its residual */
  memset(w, 0, (size_t)n * sizeof(double));
  for (int i = 0; i < n; i++)
    if (lk->basis[i] >= n) w[lk->basis[i] - n] = fmax(x[i], 0);
  if (khz_lcpResidual(n, M, q, w) > before) return;
  memcpy(z, w, (size_t)n * sizeof(double));
  lk->polished = 1;
}

/* the solution of the final basis again, directly: B x_B = q with B the
 * basic columns of [I, -M] (regular, being a basis, even where M's principal
 * block is singular); z from the basic z's, kept when its residual is no
 * worse than the pivots'. Only the basic z's are needed, and they solve a
 * smaller system: a basic w_r's unit column reaches row r alone, so on the
 * k rows that no basic w covers, B x_B = q reads K x_S = q_R with K =
 * -M[R, S] (S the basic z's). K is factored by LU (k^3/3 instead of the
 * whole basis' n^3/3), then three steps of iterative refinement
 * (ill-conditioned bases of degenerate problems). */
static int polish_reduced(khzLemke *lk, int n, const double *M, const double *q, double *z, double *w) {
  int *rows = lk->ties, *slots = lk->perm + n, k = 0;
  /* rows covered by a basic w: marked in rows[] first, then replaced by the list of the others */
  for (int r = 0; r < n; r++) rows[r] = 0;
  for (int i = 0; i < n; i++)
    if (lk->basis[i] < n) rows[lk->basis[i]] = 1;
    else if (lk->basis[i] < 2 * n) slots[k++] = lk->basis[i] - n;
    else return 0; /* z0 still basic: not a solution basis */
  int nr = 0;
  for (int r = 0; r < n; r++)
    if (!rows[r]) rows[nr++] = r;
  if (nr != k) return 0;
  /* the singularity test of lu_factor relative to the whole basis' largest entry */
  double scale = k < n ? 1 : 0;
  for (int a = 0; a < n; a++)
    for (int b = 0; b < k; b++) scale = fmax(scale, fabs(M[(size_t)a * n + slots[b]]));
  double *K = lk->lu;
  for (int a = 0; a < k; a++)
    for (int b = 0; b < k; b++) K[(size_t)a * k + b] = -M[(size_t)rows[a] * n + slots[b]];
  double before = khz_lcpResidual(n, M, q, z);
  if (!lu_factor(K, k, lk->perm, scale)) return 0;
  double *x = lk->rhs, *res = lk->col;
  for (int a = 0; a < k; a++) x[a] = q[rows[a]];
  lu_solve(K, k, lk->perm, x);
  for (int it = 0; it < 3; it++) {
    for (int a = 0; a < k; a++) {
      double s = q[rows[a]];
      const double *Ma = M + (size_t)rows[a] * n;
      for (int b = 0; b < k; b++) s += Ma[slots[b]] * x[b];
      res[a] = s;
    }
    lu_solve(K, k, lk->perm, res);
    for (int a = 0; a < k; a++) x[a] += res[a];
  }
  /* candidate in w (scratch), then its residual */
  memset(w, 0, (size_t)n * sizeof(double));
  for (int b = 0; b < k; b++) w[slots[b]] = fmax(x[b], 0);
  double after = khz_lcpResidual(n, M, q, w), tol = lk->tol > 0 ? lk->tol : 1e-10;
  if (!(after <= before)) return before <= tol; /* z from the pivots kept */
  memcpy(z, w, (size_t)n * sizeof(double));
  lk->polished = 1;
  return after <= tol;
}

/* the reduced system first; the whole basis where its LU finds K singular
 * or neither its solution nor the pivots' meets the tolerance (degenerate
 * bases: 1 of test_lemke's 2,000 degenerate LCPs needs it) */
static void polish(khzLemke *lk, int n, const double *M, const double *q, double *z, double *w) {
  if (!polish_reduced(lk, n, M, q, z, w)) polish_full(lk, n, M, q, z, w);
}

/* B^-1 and qbar afresh from the basis (LU of B, then B^-1 column by column):
 * after a small pivot the product-form updates carry its round-off into
 * every later ratio test; 0 when B is numerically singular */
static int reinvert_full(khzLemke *lk, int n, const double *M, const double *q) {
  for (int i = 0; i < n; i++)
    for (int r = 0; r < n; r++) lk->lu[(size_t)r * n + i] = basic_entry(n, M, lk->basis[i], r);
  if (!lu_factor(lk->lu, n, lk->perm, 0)) return 0;
  for (int j = 0; j < n; j++) {
    double *e = lk->rhs;
    memset(e, 0, (size_t)n * sizeof(double));
    e[j] = 1;
    lu_solve(lk->lu, n, lk->perm, e);
    for (int i = 0; i < n; i++) lk->binv[(size_t)i * n + j] = e[i];
  }
  memcpy(lk->qbar, q, (size_t)n * sizeof(double));
  lu_solve(lk->lu, n, lk->perm, lk->qbar);
  for (int i = 0; i < n; i++) lk->qbar[i] = fmax(lk->qbar[i], 0);
  return 1;
}

/* the same from the k non-unit columns alone (lk->reduced): a basic w_r's
 * column is e_r, so with R the k rows no basic w covers and S the k other
 * basic columns, B x = y reads K x_S = y_R (K = B[R, S]) and x_i = y_rho(i) -
 * B[rho(i), S] x_S for the basic w_rho(i). So B^-1's rows S are K^-1 on the
 * columns R (zero elsewhere) and a basic w's row is e_rho - B[rho, S] times
 * them: an LU of k^3/3 and k solves of k^2 instead of n^3/3 and n solves of
 * n^2 (the contact LCPs' final bases hold a third to a half of z's), and
 * the products skip the zeros of M. Singular as reinvert_full judges: a K
 * pivot at most 1e-13 of the whole basis' largest entry */
static int reinvert_reduced(khzLemke *lk, int n, const double *M, const double *q) {
  int *R = lk->ties, *S = lk->perm + n, *piv = lk->perm, k = 0;
  for (int r = 0; r < n; r++) R[r] = 0;
  for (int i = 0; i < n; i++)
    if (lk->basis[i] < n) R[lk->basis[i]] = 1;
    else S[k++] = i;
  int nr = 0;
  for (int r = 0; r < n; r++)
    if (!R[r]) R[nr++] = r;
  if (nr != k) return 0;
  double scale = k < n ? 1 : 0;
  for (int b = 0; b < k; b++) {
    int v = lk->basis[S[b]];
    if (v == 2 * n) scale = fmax(scale, 1);
    else
      for (int a = 0; a < n; a++) scale = fmax(scale, fabs(M[(size_t)a * n + (v - n)]));
  }
  double *K = lk->lu, *e = lk->rhs, *Binv = lk->binv;
  for (int a = 0; a < k; a++)
    for (int b = 0; b < k; b++) K[(size_t)a * k + b] = basic_entry(n, M, lk->basis[S[b]], R[a]);
  if (k > 0 && !lu_factor(K, k, piv, scale)) return 0;
  memset(Binv, 0, (size_t)n * n * sizeof(double));
  /* K^-1 also packed (row b: B^-1's row S_b on the columns R) after K's
   * factors in lk->lu when both fit (k <= n / sqrt 2): the basic w's rows
   * below then read and write contiguous k-vectors instead of scattering
   * over n-long rows (the same products in the same order: the same bits) */
  double *Kinv = 2 * (size_t)k * k <= (size_t)n * n ? K + (size_t)k * k : NULL;
  /* rows S: column R[a] of K^-1 */
  if (Kinv) {
    lu_inverse(K, k, piv, Kinv);
    for (int b = 0; b < k; b++)
      for (int a = 0; a < k; a++) Binv[(size_t)S[b] * n + R[a]] = Kinv[(size_t)b * k + a];
  } else {
    for (int a = 0; a < k; a++) {
      lu_solve_unit(K, k, piv, a, e);
      for (int b = 0; b < k; b++) Binv[(size_t)S[b] * n + R[a]] = e[b];
    }
  }
  /* rows of the basic w's: e_rho - sum_b B[rho, S_b] (row S_b) */
  double *t = Kinv ? e : NULL; /* the row on the columns R, packed (e is free until qbar) */
  for (int i = 0; i < n; i++) {
    int rho = lk->basis[i];
    if (rho >= n) continue;
    double *Bi = Binv + (size_t)i * n;
    Bi[rho] = 1;
    if (t) {
      for (int a = 0; a < k; a++) t[a] = 0;
      for (int b = 0; b < k; b++) {
        double c = basic_entry(n, M, lk->basis[S[b]], rho);
        if (c == 0) continue;
        const double *Kb = Kinv + (size_t)b * k;
        for (int a = 0; a < k; a++) t[a] -= c * Kb[a];
      }
      for (int a = 0; a < k; a++) Bi[R[a]] = t[a];
      continue;
    }
    for (int b = 0; b < k; b++) {
      double c = basic_entry(n, M, lk->basis[S[b]], rho);
      if (c == 0) continue;
      const double *Bs = Binv + (size_t)S[b] * n;
      for (int a = 0; a < k; a++) Bi[R[a]] -= c * Bs[R[a]];
    }
  }
  /* qbar = B^-1 q the same way */
  for (int a = 0; a < k; a++) e[a] = q[R[a]];
  if (k > 0) lu_solve(K, k, piv, e);
  for (int b = 0; b < k; b++) lk->qbar[S[b]] = e[b];
  for (int i = 0; i < n; i++) {
    int rho = lk->basis[i];
    if (rho >= n) continue;
    double s = q[rho];
    for (int b = 0; b < k; b++) s -= basic_entry(n, M, lk->basis[S[b]], rho) * e[b];
    lk->qbar[i] = s;
  }
  for (int i = 0; i < n; i++) lk->qbar[i] = fmax(lk->qbar[i], 0);
  return 1;
}

static int reinvert(khzLemke *lk, int n, const double *M, const double *q) {
  return lk->reduced ? reinvert_reduced(lk, n, M, q) : reinvert_full(lk, n, M, q);
}

/* how far the updated B^-1 is from the basis' inverse, measured on one
 * vector: max_i |(B^-1 (B x))_i - x_i| for x_i = 1 + (i mod 4) / 4 (B x
 * from the basic columns, O(n k); B^-1 times it, O(n^2) like an entering
 * column). Round-off that a small pivot amplifies shows here first: the
 * test is whether a re-inversion (O(k^3)) is needed */
static double binv_error(khzLemke *lk, int n, const double *M) {
  if (n < 2) return INFINITY; /* lk->lu has room for 2 n from n = 2 */
  double *x = lk->lu, *y = lk->lu + n;
  memset(y, 0, (size_t)n * sizeof(double));
  for (int i = 0; i < n; i++) {
    int v = lk->basis[i];
    x[i] = 1 + 0.25 * (i & 3);
    if (v < n) y[v] += x[i];
    else if (v < 2 * n)
      for (int r = 0; r < n; r++) y[r] -= M[(size_t)r * n + (v - n)] * x[i];
    else
      for (int r = 0; r < n; r++) y[r] -= x[i];
  }
  int *nz = lk->perm, nnz = 0;
  for (int r = 0; r < n; r++)
    if (y[r] != 0) nz[nnz++] = r;
  double err = 0;
  int i = 0;
  /* four rows at a time: four independent sums (the adds' latency, not
   * their count, bounds one row's), each in its own row's order */
  for (; i + 4 <= n; i += 4) {
    const double *B0 = lk->binv + (size_t)i * n, *B1 = B0 + n, *B2 = B1 + n, *B3 = B2 + n;
    double s[4] = {0, 0, 0, 0};
    for (int t = 0; t < nnz; t++) {
      int j = nz[t];
      double yj = y[j];
      s[0] += B0[j] * yj, s[1] += B1[j] * yj, s[2] += B2[j] * yj, s[3] += B3[j] * yj;
    }
    for (int u = 0; u < 4; u++) {
      double e = fabs(s[u] - x[i + u]);
      if (!(e <= err)) err = e;
    }
  }
  for (; i < n; i++) {
    const double *Bi = lk->binv + (size_t)i * n;
    double s = 0;
    for (int t = 0; t < nnz; t++) s += Bi[nz[t]] * y[nz[t]];
    double e = fabs(s - x[i]);
    if (!(e <= err)) err = e; /* NaN propagates */
  }
  return err;
}

/* Lemke on (M, q), max |q| >= 1e-3 */
static khzLcpStatus lemke_core(khzLemke *lk, int n, const double *M, const double *q, double *z,
                               double *w, int max_pivots) {

  /* B = I, w basic */
  memset(lk->binv, 0, (size_t)n * n * sizeof(double));
  for (int i = 0; i < n; i++) {
    lk->binv[(size_t)i * n + i] = 1;
    lk->qbar[i] = q[i];
    lk->basis[i] = i;
  }

  /* z0 enters; the row with the lexicographically least (q_i, B^-1_i) leaves
   * (ratios with the divisor 1: d = -e makes every row a candidate) */
  double *d = lk->col;
  for (int i = 0; i < n; i++) d[i] = 1, lk->ties[i] = i;
  int r = lexico_min(lk, n, d, lk->ties, n);
  /* the least q_i ties with a row whose q_r >= 0 (a friction row's -1e-16
   * beside a cone row's 0): z0 would enter at -q_r <= 0, so under the
   * perturbation the tie stands for q >= 0, and z = 0 solves it. Entering
   * anyway started the path at z0 = 0 with the negative q_i clamped, where
   * a cone's lambda column with no positive entry ended it on a ray after
   * one pivot (the V3 pile with free26: a lone sphere's 14-row LCP, then
   * every retry, fell back to the penalty method). Taken when z = 0 meets
   * the tolerance (its residual is -q_i) */
  if (q[r] >= 0) {
    memset(z, 0, (size_t)n * sizeof(double));
    lk->residual = khz_lcpResidual(n, M, q, z);
    if (lk->residual <= (lk->tol > 0 ? lk->tol : 1e-10)) {
      memcpy(w, q, (size_t)n * sizeof(double));
      lk->pivots = 0;
      return KHZ_LCP_SOLVED;
    }
  }
  for (int i = 0; i < n; i++) d[i] = -1;
  int entering = 2 * n, leaving = lk->basis[r];
  pivot(lk, n, r, d, entering);
  lk->pivots = 1;
  double floor = 0; /* binv_error after the last re-inversion (lk->recheck) */
  double least = INFINITY; /* lk->least_candidate */

  /* complementary pivots until z0 leaves */
  while (leaving != 2 * n) {
    if (lk->pivots >= max_pivots) return KHZ_LCP_BUDGET;
    if (lk->deadline > 0 && (lk->pivots & 7) == 0 && khz_lemkeNow() > lk->deadline)
      return KHZ_LCP_TIMEOUT;
    entering = leaving < n ? leaving + n : leaving - n;
    entering_column(lk, n, M, entering, d);
    double dmax = 0;
    for (int i = 0; i < n; i++) dmax = fmax(dmax, fabs(d[i]));
    double tol = (lk->pivot_tol > 0 ? lk->pivot_tol : KHZ_LEMKE_PIVOT_TOL) * dmax;
    int ntie = 0;
    for (int i = 0; i < n; i++)
      if (d[i] > tol) {
        lk->ties[ntie++] = i;
        if (d[i] < least * dmax) least = d[i] / dmax;
      }
    lk->least_candidate = least;
    if (!ntie || !(dmax > 0)) {
      memset(z, 0, (size_t)n * sizeof(double));
      return KHZ_LCP_RAY;
    }
    r = lk->z0_ties ? z0_tied(lk, n, d, lk->ties, ntie) : -1;
    if (r < 0) r = lexico_min(lk, n, d, lk->ties, ntie);
    leaving = lk->basis[r];
    pivot(lk, n, r, d, entering);
    lk->pivots++;
    int small = d[r] < (lk->reinvert > 0 ? lk->reinvert : KHZ_LEMKE_REINVERT) * dmax;
    /* lk->recheck: a small pivot (and every KHZ_LEMKE_RECHECK_EVERY-th
     * pivot) re-inverts only when B^-1 has drifted from the basis' inverse */
    if (lk->recheck > 0 ? (small || lk->pivots % KHZ_LEMKE_RECHECK_EVERY == 0) &&
                              !(binv_error(lk, n, M) <= fmax(lk->recheck, KHZ_LEMKE_RECHECK_FLOOR * floor))
                        : small) {
      reinvert(lk, n, M, q), lk->reinverts++;
      /* the drift a re-inversion leaves (the basis' conditioning): no
       * re-inversion does better, so the test is relative to it */
      if (lk->recheck > 0) floor = binv_error(lk, n, M);
    }
  }

  /* read the basic z's, then the same basis solved directly */
  for (int i = 0; i < n; i++) {
    int v = lk->basis[i];
    if (v >= n && v < 2 * n) z[v - n] = fmax(lk->qbar[i], 0);
  }
  polish(lk, n, M, q, z, w);
  for (int i = 0; i < n; i++) {
    double s = q[i];
    for (int j = 0; j < n; j++) s += M[(size_t)i * n + j] * z[j];
    w[i] = s;
  }
  lk->residual = khz_lcpResidual(n, M, q, z);
  if (!(lk->residual <= (lk->tol > 0 ? lk->tol : 1e-10))) return KHZ_LCP_INACCURATE;
  return KHZ_LCP_SOLVED;
}

/* What every solve does first: clears the counters, z and w; returns 1 with
 * *st set when there is nothing to pivot (n <= 0: solved; n > nmax: too big) */
static int solve_begin(khzLemke *lk, int n, double *z, double *w, khzLcpStatus *st) {
  lk->pivots = 0;
  lk->least_candidate = INFINITY;
  lk->reinverts = 0;
  lk->polished = 0;
  lk->residual = 0;
  lk->nbasis = 0;
  *st = n <= 0 ? KHZ_LCP_SOLVED : KHZ_LCP_TOOBIG;
  if (n <= 0) return 1;
  memset(z, 0, (size_t)n * sizeof(double));
  memset(w, 0, (size_t)n * sizeof(double));
  return n > lk->nmax;
}

khzLcpStatus khz_lemke(khzLemke *lk, int n, const double *M, const double *q, double *z, double *w,
                       int max_pivots) {
  khzLcpStatus st;
  if (solve_begin(lk, n, z, w, &st)) return st;
  if (max_pivots <= 0) max_pivots = 50 * n + 100;
  for (int i = 0; i < n; i++) {
    if (!isfinite(q[i])) return KHZ_LCP_RAY;
    for (int j = 0; j < n; j++)
      if (!isfinite(M[(size_t)i * n + j])) return KHZ_LCP_RAY;
  }

  /* q >= 0: z = 0 solves it */
  int any_negative = 0;
  double qmax = 0;
  for (int i = 0; i < n; i++) any_negative |= q[i] < 0, qmax = fmax(qmax, fabs(q[i]));
  if (!any_negative) {
    memcpy(w, q, (size_t)n * sizeof(double));
    return KHZ_LCP_SOLVED;
  }

  /* the LCP is homogeneous in (z, w, q): a tiny q (a contact LCP's q
   * scales with the step) is solved as 1e-3 q / max |q|, so that the
   * tolerances, absolute at |q| ~ 1, do not swallow it; z is scaled back */
  qmax = qmax < 1e-3 ? qmax / 1e-3 : 1;
  for (int i = 0; i < n; i++) lk->qs[i] = q[i] / qmax;
  st = lemke_core(lk, n, M, lk->qs, z, w, max_pivots);
  lk->nbasis = st == KHZ_LCP_SOLVED ? n : 0;
  if (st != KHZ_LCP_SOLVED) {
    memset(z, 0, (size_t)n * sizeof(double));
    memset(w, 0, (size_t)n * sizeof(double));
    return st;
  }
  for (int i = 0; i < n; i++) z[i] *= qmax;
  for (int i = 0; i < n; i++) {
    double s = q[i];
    for (int j = 0; j < n; j++) s += M[(size_t)i * n + j] * z[j];
    w[i] = s;
  }
  return KHZ_LCP_SOLVED;
}

void khz_lemkeBasis(const khzLemke *lk, int n, unsigned char *zbasic) {
  memset(zbasic, 0, (size_t)n);
  if (lk->nbasis != n) return;
  for (int i = 0; i < n; i++)
    if (lk->basis[i] >= n && lk->basis[i] < 2 * n) zbasic[lk->basis[i] - n] = 1;
}

/* the guessed complementary basis (z_i basic where zbasic[i], w_i
 * elsewhere), solved by the polish's reduced system; accepted when its
 * natural residual, which also measures infeasibility (a negative basic z
 * is clamped to 0 and leaves its row's w off zero; a negative nonbasic w is
 * the residual itself), is within lk->tol on the scaled q, as khz_lemke
 * accepts its own (1e-10 when tol is 0) */
khzLcpStatus khz_lemkeWarm(khzLemke *lk, int n, const double *M, const double *q,
                           const unsigned char *zbasic, double *z, double *w) {
  khzLcpStatus st;
  if (solve_begin(lk, n, z, w, &st)) return st;
  double qmax = 0;
  int any_negative = 0;
  for (int i = 0; i < n; i++) {
    if (!isfinite(q[i])) return KHZ_LCP_INACCURATE;
    any_negative |= q[i] < 0, qmax = fmax(qmax, fabs(q[i]));
  }
  if (!any_negative) return KHZ_LCP_INACCURATE; /* khz_lemke's own shortcut: no basis to guess */
  qmax = qmax < 1e-3 ? qmax / 1e-3 : 1;
  for (int i = 0; i < n; i++) lk->qs[i] = q[i] / qmax;
  for (int i = 0; i < n; i++) lk->basis[i] = zbasic[i] ? n + i : i;
  /* polish_reduced keeps its candidate when it is no worse than z = 0;
   * its tolerance test is done here */
  double tol = lk->tol;
  lk->tol = INFINITY;
  int ok = polish_reduced(lk, n, M, lk->qs, z, w) && lk->polished;
  lk->tol = tol;
  lk->residual = ok ? khz_lcpResidual(n, M, lk->qs, z) : INFINITY;
  if (!ok || !(lk->residual <= (tol > 0 ? tol : 1e-10))) {
    memset(z, 0, (size_t)n * sizeof(double));
    memset(w, 0, (size_t)n * sizeof(double));
    return KHZ_LCP_INACCURATE;
  }
  lk->nbasis = n;
  for (int i = 0; i < n; i++) z[i] *= qmax;
  for (int i = 0; i < n; i++) {
    double s = q[i];
    for (int j = 0; j < n; j++) s += M[(size_t)i * n + j] * z[j];
    w[i] = s;
  }
  return KHZ_LCP_SOLVED;
}
