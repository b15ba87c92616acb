/* spatial.c — 3D rotations, quaternions and Featherstone's spatial algebra
 * (RBDA ch. 2: cross products eqs. 2.31-2.32, Plucker transforms eq. 2.24,
 * rigid-body inertia eq. 2.63). See spatial.h for the conventions. */
#include "spatial.h"

#include <math.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <string.h>

#include "khz/khz.h"

void khzu_mulQuat(double res[4], const double a[4], const double b[4]) {
  double t[4] = {
      a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
      a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
      a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
      a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0],
  };
  memcpy(res, t, sizeof t);
}

void khzu_normalizeQuat(double q[4]) {
  double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  if (n > 0) {
    q[0] /= n, q[1] /= n, q[2] /= n, q[3] /= n;
  } else {
    q[0] = 1, q[1] = q[2] = q[3] = 0;
  }
}

void khzu_mat2quat(double res[4], const double R[9]) {
  /* Shepperd's method: pick the largest of the four squared components */
  double tr = R[0] + R[4] + R[8];
  if (tr > 0) {
    double s = 2 * sqrt(tr + 1);
    res[0] = 0.25 * s;
    res[1] = (R[7] - R[5]) / s;
    res[2] = (R[2] - R[6]) / s;
    res[3] = (R[3] - R[1]) / s;
  } else if (R[0] > R[4] && R[0] > R[8]) {
    double s = 2 * sqrt(1 + R[0] - R[4] - R[8]);
    res[0] = (R[7] - R[5]) / s;
    res[1] = 0.25 * s;
    res[2] = (R[1] + R[3]) / s;
    res[3] = (R[2] + R[6]) / s;
  } else if (R[4] > R[8]) {
    double s = 2 * sqrt(1 + R[4] - R[0] - R[8]);
    res[0] = (R[2] - R[6]) / s;
    res[1] = (R[1] + R[3]) / s;
    res[2] = 0.25 * s;
    res[3] = (R[5] + R[7]) / s;
  } else {
    double s = 2 * sqrt(1 + R[8] - R[0] - R[4]);
    res[0] = (R[3] - R[1]) / s;
    res[1] = (R[2] + R[6]) / s;
    res[2] = (R[5] + R[7]) / s;
    res[3] = 0.25 * s;
  }
  khzu_normalizeQuat(res);
}

/* X m = [E w; E (v - r x w)] */
void khzu_xformMotion(double res[6], const double X[12], const double m[6]) {
  const double *E = X, *r = X + 9;
  double rxw[3], t[3];
  khzu_cross(rxw, r, m);
  t[0] = m[3] - rxw[0], t[1] = m[4] - rxw[1], t[2] = m[5] - rxw[2];
  double w[3];
  khzu_mulMatVec3(w, E, m);
  khzu_mulMatVec3(res + 3, E, t);
  res[0] = w[0], res[1] = w[1], res[2] = w[2];
}

/* X^T f = [E^T n + r x E^T f; E^T f] */
void khzu_xformForceT(double res[6], const double X[12], const double f[6]) {
  const double *E = X, *r = X + 9;
  double n[3], g[3], rxg[3];
  khzu_mulMatTVec3(n, E, f);
  khzu_mulMatTVec3(g, E, f + 3);
  khzu_cross(rxg, r, g);
  res[0] = n[0] + rxg[0], res[1] = n[1] + rxg[1], res[2] = n[2] + rxg[2];
  res[3] = g[0], res[4] = g[1], res[5] = g[2];
}

/* X^T I X by 3x3 blocks. With X = [E 0; -E rx E] and I = [A B; B^T C]
 * (A, C symmetric), first rotate: A' = E^T A E, B' = E^T B E, C' = E^T C E;
 * then shift by r: with R = rx (skew),
 *   A'' = A' + R B'^T - B' R - R C' R,   B'' = B' + R C',   C'' = C'. */
void khzu_xformInertiaT(double res[36], const double X[12], const double I[36]) {
  const double *E = X, *r = X + 9;
  double A[9], B[9], C[9], T[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      A[3 * i + j] = I[6 * i + j];
      B[3 * i + j] = I[6 * i + 3 + j];
      C[3 * i + j] = I[6 * (3 + i) + 3 + j];
    }
  /* rotate the blocks into A coordinates */
  khzu_mulMat3(T, A, E);
  khzu_mulMatTMat3(A, E, T);
  khzu_mulMat3(T, B, E);
  khzu_mulMatTMat3(B, E, T);
  khzu_mulMat3(T, C, E);
  khzu_mulMatTMat3(C, E, T);

  /* shift: RC = R C', RB = R B'^T */
  double R[9] = {0, -r[2], r[1], r[2], 0, -r[0], -r[1], r[0], 0};
  double RC[9], RBt[9], BR[9], RCR[9];
  khzu_mulMat3(RC, R, C);
  khzu_mulMatMatT3(RBt, R, B);
  khzu_mulMat3(BR, B, R);
  khzu_mulMat3(RCR, RC, R);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      int k = 3 * i + j;
      double a = A[k] + RBt[k] - BR[k] - RCR[k];
      double b = B[k] + RC[k];
      res[6 * i + j] = a;
      res[6 * i + 3 + j] = b;
      res[6 * (3 + j) + i] = b;
      res[6 * (3 + i) + 3 + j] = C[k];
    }
}

/* Cholesky factor in place (lower triangle); n a constant where inlined
 * (unrolled there: the same operations in the same order) */
static inline __attribute__((always_inline)) int chol_factor(double *A, int n) {
#pragma GCC unroll 12
  for (int j = 0; j < n; j++) {
    double s = A[j * n + j];
#pragma GCC unroll 12
    for (int k = 0; k < j; k++) s -= A[j * n + k] * A[j * n + k];
    if (!(s > 0)) return -1;
    double ljj = sqrt(s);
    A[j * n + j] = ljj;
#pragma GCC unroll 12
    for (int i = j + 1; i < n; i++) {
      double t = A[i * n + j];
#pragma GCC unroll 12
      for (int k = 0; k < j; k++) t -= A[i * n + k] * A[j * n + k];
      A[i * n + j] = t / ljj;
    }
  }
  return 0;
}

/* chol_factor's operations on every entry in its order, right-looking: the
 * running sums of the entries below the diagonal are kept in the upper
 * triangle (row j of it holds column j of the lower one, contiguous) and
 * the diagonal's in d, so that once column j is final every later row's
 * sums take its term at once, a contiguous axpy that vectorises, each lane
 * its own entry. Entry (i, p) still starts at A_ip, subtracts L_iq L_pq
 * for q = 0 .. p - 1 in that order (the same products: x * y == y * x) and
 * is divided by l_pp; the diagonal likewise. The lower triangle is written
 * only where chol_factor writes it, one column when it is final, so a
 * factor that fails at column j leaves it and the diagonal as chol_factor
 * does; the upper triangle, which chol_factor never reads nor writes, ends
 * holding L^T (khzu_cholSolve's forward half reads it). n at most
 * CHOL_RIGHT_MAX (d on the stack). */
#define CHOL_RIGHT_MAX 256
static inline __attribute__((always_inline)) int chol_factor_right(double *A, int n) {
  double d[CHOL_RIGHT_MAX];
  for (int j = 0; j < n; j++) {
    d[j] = A[j * n + j];
    for (int i = j + 1; i < n; i++) A[j * n + i] = A[i * n + j];
  }
  for (int j = 0; j < n; j++) {
    double s = d[j];
    if (!(s > 0)) return -1;
    double ljj = sqrt(s), *uj = A + j * n;
    A[j * n + j] = ljj;
    for (int i = j + 1; i < n; i++) uj[i] = uj[i] / ljj, A[i * n + j] = uj[i];
    for (int p = j + 1; p < n; p++) {
      double lpj = uj[p], *up = A + p * n;
      d[p] -= lpj * lpj;
      for (int i = p + 1; i < n; i++) up[i] -= lpj * uj[i];
    }
  }
  return 0;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* up[i] -= l * u[i] for i in [i0, n): four lanes, then two, then one (AVX
 * without FMA: each lane rounds its product and then its difference, as
 * the scalar code) */
__attribute__((target("avx"))) static inline void chol_axpy_avx(double *up, const double *u, double l, int i0,
                                                                int n) {
  __m256d l4 = _mm256_set1_pd(l);
  int i = i0;
  for (; i + 4 <= n; i += 4)
    _mm256_storeu_pd(up + i, _mm256_sub_pd(_mm256_loadu_pd(up + i), _mm256_mul_pd(l4, _mm256_loadu_pd(u + i))));
  if (i + 2 <= n) {
    __m128d l2 = _mm_set1_pd(l);
    _mm_storeu_pd(up + i, _mm_sub_pd(_mm_loadu_pd(up + i), _mm_mul_pd(l2, _mm_loadu_pd(u + i))));
    i += 2;
  }
  if (i < n) up[i] -= l * u[i];
}

/* the most runs of nonzero rows of a panel of columns chol_factor_right_avx
 * visits apart; a panel with more takes every row */
#define CHOL_RUNS 8

/* chol_factor_right with its axpys four lanes wide and four columns at a
 * time: columns j .. j + 3 are made final in turn (each row takes the
 * earlier ones' terms first), then each later row takes the four terms in
 * one pass, j's first, as chol_factor subtracts them: the same bits.
 * Block-sparse matrices (the implicit rows of several trees: rows of
 * different trees couple only through the rows that join them) keep
 * their zeros below the first nonzero of a row (the envelope), so a panel
 * of columns updates only the rows and entries where one of them is
 * nonzero, in up to CHOL_RUNS runs of consecutive rows: a term skipped is
 * l * (+0) or (+0) * u subtracted from a running sum, which leaves a
 * nonzero sum as it was, and a zero sum is +0 (a difference of equal
 * numbers rounds to +0) unless the matrix holds a -0, so the skip is taken
 * only when none of the lower triangle's entries is -0: the same bits. */
__attribute__((target("avx"))) static int chol_factor_right_avx(double *A, int n) {
  double d[CHOL_RIGHT_MAX];
  int negzero = 0;
  for (int j = 0; j < n; j++) d[j] = A[j * n + j];
  /* the lower triangle copied to the upper: the 4 x 4 blocks wholly below
   * the diagonal transposed in registers, the rest entry by entry */
  const __m256d zero = _mm256_setzero_pd();
  for (int i0 = 0; i0 < n; i0 += 4) {
    int full = i0 + 4 <= n;
    for (int j0 = 0; full && j0 + 4 <= i0; j0 += 4) {
      __m256d r0 = _mm256_loadu_pd(A + i0 * n + j0), r1 = _mm256_loadu_pd(A + (i0 + 1) * n + j0);
      __m256d r2 = _mm256_loadu_pd(A + (i0 + 2) * n + j0), r3 = _mm256_loadu_pd(A + (i0 + 3) * n + j0);
      /* a -0: a lane equal to 0 with its sign bit set */
      int z = _mm256_movemask_pd(_mm256_cmp_pd(r0, zero, _CMP_EQ_OQ)) & _mm256_movemask_pd(r0);
      z |= _mm256_movemask_pd(_mm256_cmp_pd(r1, zero, _CMP_EQ_OQ)) & _mm256_movemask_pd(r1);
      z |= _mm256_movemask_pd(_mm256_cmp_pd(r2, zero, _CMP_EQ_OQ)) & _mm256_movemask_pd(r2);
      z |= _mm256_movemask_pd(_mm256_cmp_pd(r3, zero, _CMP_EQ_OQ)) & _mm256_movemask_pd(r3);
      negzero |= z != 0;
      __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
      __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
      _mm256_storeu_pd(A + j0 * n + i0, _mm256_permute2f128_pd(t0, t2, 0x20));
      _mm256_storeu_pd(A + (j0 + 1) * n + i0, _mm256_permute2f128_pd(t1, t3, 0x20));
      _mm256_storeu_pd(A + (j0 + 2) * n + i0, _mm256_permute2f128_pd(t0, t2, 0x31));
      _mm256_storeu_pd(A + (j0 + 3) * n + i0, _mm256_permute2f128_pd(t1, t3, 0x31));
    }
    for (int i = i0; i < i0 + 4 && i < n; i++)
      for (int j = full ? i0 : 0; j < i; j++)
        A[j * n + i] = A[i * n + j], negzero |= A[i * n + j] == 0 && signbit(A[i * n + j]);
  }
  for (int j = 0; j < n; j += 4) {
    int nc = n - j < 4 ? n - j : 4;
    double *u[4];
    /* the panel's columns final in turn: column c's row takes the terms of
     * columns j .. c - 1 (the earlier panels' it has), then is divided */
    for (int c = j; c < j + nc; c++) {
      double *uc = A + c * n;
      for (int t = j; t < c; t++) {
        double l = u[t - j][c];
        d[c] -= l * l;
        chol_axpy_avx(uc, u[t - j], l, c + 1, n);
      }
      double s = d[c];
      if (!(s > 0)) return -1;
      double lcc = sqrt(s);
      A[c * n + c] = lcc;
      for (int i = c + 1; i < n; i++) uc[i] = uc[i] / lcc, A[i * n + c] = uc[i];
      u[c - j] = uc;
    }
    if (nc < 4) break; /* the last columns */
    const double *u0 = u[0], *u1 = u[1], *u2 = u[2], *u3 = u[3];
    /* the runs [rs, re) of rows below where one of the four columns is
     * nonzero (all rows when the matrix holds a -0 or the runs are too many) */
    int rs[CHOL_RUNS], re[CHOL_RUNS], nr = 0;
    for (int i = j + 4; i < n && nr <= CHOL_RUNS;) {
      if (!negzero && u0[i] == 0 && u1[i] == 0 && u2[i] == 0 && u3[i] == 0) {
        i++;
        continue;
      }
      int s0 = i;
      while (i < n && (negzero || u0[i] != 0 || u1[i] != 0 || u2[i] != 0 || u3[i] != 0)) i++;
      if (nr < CHOL_RUNS) rs[nr] = s0, re[nr] = i;
      nr++;
    }
    if (nr > CHOL_RUNS) nr = 1, rs[0] = j + 4, re[0] = n;
    for (int r = 0; r < nr; r++)
      for (int p = rs[r]; p < re[r]; p++) {
        double a = u0[p], b = u1[p], c = u2[p], e = u3[p], *up = A + p * n;
        d[p] -= a * a;
        d[p] -= b * b;
        d[p] -= c * c;
        d[p] -= e * e;
        __m256d a4 = _mm256_set1_pd(a), b4 = _mm256_set1_pd(b), c4 = _mm256_set1_pd(c), e4 = _mm256_set1_pd(e);
        for (int r2 = r; r2 < nr; r2++) {
          int i = r2 == r ? p + 1 : rs[r2], ie = re[r2];
          for (; i + 4 <= ie; i += 4) {
            __m256d t = _mm256_sub_pd(_mm256_loadu_pd(up + i), _mm256_mul_pd(a4, _mm256_loadu_pd(u0 + i)));
            t = _mm256_sub_pd(t, _mm256_mul_pd(b4, _mm256_loadu_pd(u1 + i)));
            t = _mm256_sub_pd(t, _mm256_mul_pd(c4, _mm256_loadu_pd(u2 + i)));
            _mm256_storeu_pd(up + i, _mm256_sub_pd(t, _mm256_mul_pd(e4, _mm256_loadu_pd(u3 + i))));
          }
          if (i + 2 <= ie) {
            __m128d t = _mm_sub_pd(_mm_loadu_pd(up + i), _mm_mul_pd(_mm256_castpd256_pd128(a4), _mm_loadu_pd(u0 + i)));
            t = _mm_sub_pd(t, _mm_mul_pd(_mm256_castpd256_pd128(b4), _mm_loadu_pd(u1 + i)));
            t = _mm_sub_pd(t, _mm_mul_pd(_mm256_castpd256_pd128(c4), _mm_loadu_pd(u2 + i)));
            _mm_storeu_pd(up + i, _mm_sub_pd(t, _mm_mul_pd(_mm256_castpd256_pd128(e4), _mm_loadu_pd(u3 + i))));
            i += 2;
          }
          if (i < ie) {
            double t = up[i] - a * u0[i];
            t = t - b * u1[i];
            t = t - c * u2[i];
            up[i] = t - e * u3[i];
          }
        }
      }
  }
  return 0;
}
#endif

KHZ_AVX_CLONES int khzu_cholFactor(double *A, int n) {
  if (n == 6) return chol_factor(A, 6); /* a free joint's D (khz_abaCoreDamped): unrolled */
  if (n == 3) return chol_factor(A, 3); /* a free body's world inertia (penalty.c's limits): unrolled */
  if (n == 12) return chol_factor(A, 12); /* the tree limits' two-body clusters (penalty.c): unrolled */
  if (n <= 12 || n > CHOL_RIGHT_MAX) return chol_factor(A, n);
  /* the implicit rows' clusters (up to 128 rows) and blocks, the trees' mass matrices */
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) return chol_factor_right_avx(A, n);
#endif
  return chol_factor_right(A, n);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* khzu_cholSolve's forward half by columns, for a factor that holds L^T in
 * its upper triangle (chol_factor_right's): once x_k is final, every later
 * x_i takes its term L_ik x_k (row k of the upper triangle, contiguous,
 * four lanes), so each x_i still subtracts its terms in k's order from its
 * start and is then divided: the same bits */
__attribute__((target("avx"))) static void chol_forward_right_avx(const double *L, int n, double *x) {
  for (int k = 0; k < n; k++) {
    double xk = x[k] / L[k * n + k];
    x[k] = xk;
    const double *lk = L + k * n;
    __m256d x4 = _mm256_set1_pd(xk);
    int i = k + 1;
    for (; i + 4 <= n; i += 4)
      _mm256_storeu_pd(x + i, _mm256_sub_pd(_mm256_loadu_pd(x + i), _mm256_mul_pd(_mm256_loadu_pd(lk + i), x4)));
    for (; i < n; i++) x[i] -= lk[i] * xk;
  }
}
#endif

void khzu_cholSolve(const double *L, int n, double *x) {
#if defined(__x86_64__) && defined(__GNUC__)
  /* the factors of khzu_cholFactor's right-looking path */
  if (n > 12 && n <= CHOL_RIGHT_MAX && __builtin_cpu_supports("avx"))
    chol_forward_right_avx(L, n, x);
  else
#endif
    for (int i = 0; i < n; i++) {
      double t = x[i];
      for (int k = 0; k < i; k++) t -= L[i * n + k] * x[k];
      x[i] = t / L[i * n + i];
    }
  for (int i = n - 1; i >= 0; i--) {
    double t = x[i];
    for (int k = i + 1; k < n; k++) t -= L[k * n + i] * x[k];
    x[i] = t / L[i * n + i];
  }
}

/* two doubles at a time (SSE2 on x86-64): each lane does the scalar
 * code's operations in its order, so the results keep their bits */
typedef double v2d __attribute__((vector_size(16)));

/* the n solves of khzu_cholSolve for the columns of the identity, each
 * column's operations in khzu_cholSolve's order (so bit for bit the same),
 * run side by side: the columns' divisions and products overlap instead of
 * waiting on each other */
static inline __attribute__((always_inline)) void chol_inverse(const double *L, int n,
                                                               double *X) {
  for (int i = 0; i < n; i++)
    for (int b = 0; b < n; b++) X[i * n + b] = i == b;
  /* forward solve L Y = 1, Y lower triangular: in khzu_cholSolve's order,
   * column b's terms with k < b come first and subtract l * (+0) = +-0 from
   * the entry's start (+0, or 1 on the diagonal), which leaves it as it was,
   * and its entries above the diagonal end as +0 / l = +0. Those terms and
   * divisions are skipped, but for the one next to the diagonal when that
   * pairs the columns for SSE2 (b < k + 1 rounded up to even: the term
   * kept is one of those no-ops): the same bits for a factor with l_ii > 0
   * (a failed factor, l_ii <= 0 or NaN, gives a meaningless inverse either way) */
#pragma GCC unroll 12
  for (int i = 0; i < n; i++) {
    double *xi = X + i * n, ld = L[i * n + i];
#pragma GCC unroll 12
    for (int k = 0; k < i; k++) {
      double lik = L[i * n + k];
      const double *xk = X + k * n;
#pragma GCC unroll 12
      for (int b = 0; b < ((k + 2) & ~1); b++) xi[b] -= lik * xk[b];
    }
    int pair_end = (i + 2) & ~1; /* the row's last column pair, inside the row */
    if (pair_end > n) pair_end = n;
#pragma GCC unroll 12
    for (int b = 0; b < pair_end; b++) xi[b] /= ld;
  }
  for (int i = n - 1; i >= 0; i--) {
    double *xi = X + i * n, ld = L[i * n + i];
    for (int k = i + 1; k < n; k++) {
      double lki = L[k * n + i];
      const double *xk = X + k * n;
      for (int b = 0; b < n; b++) xi[b] -= lki * xk[b];
    }
    for (int b = 0; b < n; b++) xi[b] /= ld;
  }
}

/* chol_inverse for n = 6 (a free joint's D^-1: every ABA call on every
 * free body). Each column of X is a solve of its own, so the columns are
 * taken two at a time (an SSE2 lane pair, its six rows in registers):
 * every entry takes chol_inverse's operations in its order (forward: the
 * terms of the rows k < i whose column pair is at most k's, then the
 * division in the pairs up to the diagonal's; backward: every term and
 * division), so the same bits, in about 0.43 of the scalar loops' instructions */
KHZ_AVX_CLONES static void chol_inverse6(const double *L, double *X) {
  v2d x[3][6];
#pragma GCC unroll 6
  for (int p = 0; p < 3; p++) {
    v2d *c = x[p];
#pragma GCC unroll 6
    for (int i = 0; i < 6; i++) c[i] = (v2d){2 * p == i, 2 * p + 1 == i};
#pragma GCC unroll 6
    for (int i = 2 * p; i < 6; i++) { /* rows i < 2 p stay +0 here */
#pragma GCC unroll 6
      for (int k = 2 * p; k < i; k++) c[i] -= (v2d){L[6 * i + k], L[6 * i + k]} * c[k];
      c[i] /= (v2d){L[6 * i + i], L[6 * i + i]};
    }
#pragma GCC unroll 6
    for (int i = 5; i >= 0; i--) {
#pragma GCC unroll 6
      for (int k = i + 1; k < 6; k++) c[i] -= (v2d){L[6 * k + i], L[6 * k + i]} * c[k];
      c[i] /= (v2d){L[6 * i + i], L[6 * i + i]};
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < 6; i++)
#pragma GCC unroll 6
    for (int p = 0; p < 3; p++) memcpy(X + 6 * i + 2 * p, &x[p][i], sizeof(v2d));
}

void khzu_cholInverse(const double *L, int n, double *X) {
  if (n == 6) chol_inverse6(L, X); /* a free joint: lane pairs */
  else if (n == 3) chol_inverse(L, 3, X); /* a free body's world inertia (penalty.c): unrolled */
  else chol_inverse(L, n, X);
}

void khz_eig3(const double A_in[9], double ev[3], double V[9]) {
  double A[9], W[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  memcpy(A, A_in, sizeof A);
  for (int sweep = 0; sweep < 100; sweep++) {
    if (A[1] == 0 && A[2] == 0 && A[5] == 0) break;
    for (int p = 0; p < 2; p++)
      for (int q = p + 1; q < 3; q++) {
        double apq = A[3 * p + q];
        if (apq == 0) continue;
        /* the rotation in the (p, q) plane that zeroes A[p][q]; A <- J^T A J, W <- W J */
        double theta = (A[3 * q + q] - A[3 * p + p]) / (2 * apq);
        double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
        double c = 1 / sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < 3; k++) {
          double akp = A[3 * k + p], akq = A[3 * k + q];
          A[3 * k + p] = c * akp - s * akq, A[3 * k + q] = s * akp + c * akq;
        }
        for (int k = 0; k < 3; k++) {
          double apk = A[3 * p + k], aqk = A[3 * q + k];
          A[3 * p + k] = c * apk - s * aqk, A[3 * q + k] = s * apk + c * aqk;
        }
        for (int k = 0; k < 3; k++) {
          double wkp = W[3 * k + p], wkq = W[3 * k + q];
          W[3 * k + p] = c * wkp - s * wkq, W[3 * k + q] = s * wkp + c * wkq;
        }
      }
  }
  ev[0] = A[0], ev[1] = A[4], ev[2] = A[8];
  if (V) memcpy(V, W, sizeof W);
}

/* ---- geometry (closest points, Ericson ch. 5) ---- */

double khzu_closestSegSeg(const double p1[3], const double q1[3], const double p2[3],
                          const double q2[3], double *s_out, double *t_out, double c1[3],
                          double c2[3]) {
  double d1[3], d2[3], r[3], s, t;
  khzu_sub3(d1, q1, p1);
  khzu_sub3(d2, q2, p2);
  khzu_sub3(r, p1, p2);
  double a = khzu_dot3(d1, d1), e = khzu_dot3(d2, d2), f = khzu_dot3(d2, r);
  const double eps = 1e-300;
  if (a <= eps && e <= eps) {
    s = t = 0;
  } else if (a <= eps) {
    s = 0;
    t = khzu_clamp(f / e, 0, 1);
  } else {
    double c = khzu_dot3(d1, r);
    if (e <= eps) {
      t = 0;
      s = khzu_clamp(-c / a, 0, 1);
    } else {
      double b = khzu_dot3(d1, d2), denom = a * e - b * b;
      s = denom > 1e-14 * a * e ? khzu_clamp((b * f - c * e) / denom, 0, 1) : 0;
      t = (b * s + f) / e;
      if (t < 0) {
        t = 0;
        s = khzu_clamp(-c / a, 0, 1);
      } else if (t > 1) {
        t = 1;
        s = khzu_clamp((b - c) / a, 0, 1);
      }
    }
  }
  khzu_addScl3(c1, p1, d1, s);
  khzu_addScl3(c2, p2, d2, t);
  double dd[3];
  khzu_sub3(dd, c1, c2);
  if (s_out) *s_out = s;
  if (t_out) *t_out = t;
  return khzu_dot3(dd, dd);
}

void khzu_closestOnTriangle(const double p[3], const double a[3], const double b[3],
                            const double c[3], double q[3], int *region) {
  double ab[3], ac[3], ap[3], bp[3], cp[3];
  khzu_sub3(ab, b, a);
  khzu_sub3(ac, c, a);
  khzu_sub3(ap, p, a);
  double d1 = khzu_dot3(ab, ap), d2 = khzu_dot3(ac, ap);
  if (d1 <= 0 && d2 <= 0) {
    khzu_copy3(q, a), *region = 1;
    return;
  }
  khzu_sub3(bp, p, b);
  double d3 = khzu_dot3(ab, bp), d4 = khzu_dot3(ac, bp);
  if (d3 >= 0 && d4 <= d3) {
    khzu_copy3(q, b), *region = 2;
    return;
  }
  double vc = d1 * d4 - d3 * d2;
  if (vc <= 0 && d1 >= 0 && d3 <= 0) {
    khzu_addScl3(q, a, ab, d1 / (d1 - d3)), *region = 4;
    return;
  }
  khzu_sub3(cp, p, c);
  double d5 = khzu_dot3(ab, cp), d6 = khzu_dot3(ac, cp);
  if (d6 >= 0 && d5 <= d6) {
    khzu_copy3(q, c), *region = 3;
    return;
  }
  double vb = d5 * d2 - d1 * d6;
  if (vb <= 0 && d2 >= 0 && d6 <= 0) {
    khzu_addScl3(q, a, ac, d2 / (d2 - d6)), *region = 6;
    return;
  }
  double va = d3 * d6 - d5 * d4;
  if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
    double bc[3];
    khzu_sub3(bc, c, b);
    khzu_addScl3(q, b, bc, (d4 - d3) / ((d4 - d3) + (d5 - d6))), *region = 5;
    return;
  }
  double den = 1 / (va + vb + vc), v = vb * den, w = vc * den;
  for (int k = 0; k < 3; k++) q[k] = a[k] + ab[k] * v + ac[k] * w;
  *region = 0;
}

