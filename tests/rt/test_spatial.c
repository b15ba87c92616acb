/* test_spatial.c — spatial algebra against explicit 6x6 matrices (RBDA eq.
 * 2.24 for Plucker transforms, 2.31-2.32 for cross products) and quaternion
 * identities. */
#include <math.h>
#include <string.h>

#include "ensure.h"
#include "random_model.h"

/* explicit X = [E 0; -E rx E] */
static void plucker6(double X6[36], const double X[12]) {
  const double *E = X, *r = X + 9;
  double rx[9] = {0, -r[2], r[1], r[2], 0, -r[0], -r[1], r[0], 0}, Erx[9];
  khzu_mulMat3(Erx, E, rx);
  memset(X6, 0, 36 * sizeof(double));
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      X6[6 * i + j] = E[3 * i + j];
      X6[6 * (3 + i) + 3 + j] = E[3 * i + j];
      X6[6 * (3 + i) + j] = -Erx[3 * i + j];
    }
}

/* khzu_cholInverse against its contract: column b of the inverse is, bit for
 * bit, khzu_cholSolve of the identity's column b (n = 6 takes the lane-pair
 * path of a free joint's D^-1, n = 3 and others the scalar loops), and
 * A X = 1 to rounding. A = B B^T + s 1 with s from 1e-6 (ill-conditioned)
 * to 1 */
static void test_chol_inverse(void) {
  static const int sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 12};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int n = sizes[si];
    for (int t = 0; t < 200; t++) {
      double B[144], A[144], L[144], X[144], x[12];
      for (int k = 0; k < n * n; k++) B[k] = rm_uniform(-1, 1);
      double shift = t % 2 ? 1 : 1e-6;
      for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
          double s = i == j ? shift : 0;
          for (int k = 0; k < n; k++) s += B[n * i + k] * B[n * j + k];
          A[n * i + j] = s;
        }
      memcpy(L, A, (size_t)(n * n) * sizeof(double));
      ENSURE(khzu_cholFactor(L, n) == 0);
      khzu_cholInverse(L, n, X);
      int same = 1;
      for (int b = 0; b < n; b++) {
        for (int i = 0; i < n; i++) x[i] = i == b;
        khzu_cholSolve(L, n, x);
        for (int i = 0; i < n; i++) same &= memcmp(&x[i], &X[n * i + b], sizeof(double)) == 0;
      }
      ENSURE_MSG(same, "n %d trial %d: khzu_cholInverse differs from khzu_cholSolve's columns", n, t);
      if (shift == 1)
        for (int i = 0; i < n; i++)
          for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++) s += A[n * i + k] * X[n * k + j];
            ENSURE_NEAR(s, i == j, 1e-11);
          }
    }
  }
}

/* khzu_cholFactor above n = 12 (right-looking, spatial.c) against the
 * Cholesky-Banachiewicz recurrence written out, l_jj = sqrt(a_jj - sum_k
 * l_jk^2), l_ij = (a_ij - sum_k l_ik l_jk) / l_jj, each sum over k = 0 ..
 * j - 1 in that order: the same bits on the lower triangle for n = 13 to
 * 130 (two columns a pass: odd and even n), well and badly conditioned; and
 * on a matrix that is not positive definite at column f, -1 with the lower
 * triangle and diagonal as the recurrence leaves them when it stops there
 * (columns before f final, the rest as given): callers read the diagonal
 * after a failed factor (penalty.c's disc QP). */
static int chol_recurrence(double *A, int n) {
  for (int j = 0; j < n; j++) {
    double s = A[j * n + j];
    for (int k = 0; k < j; k++) s -= A[j * n + k] * A[j * n + k];
    if (!(s > 0)) return -1;
    double ljj = sqrt(s);
    A[j * n + j] = ljj;
    for (int i = j + 1; i < n; i++) {
      double t = A[i * n + j];
      for (int k = 0; k < j; k++) t -= A[i * n + k] * A[j * n + k];
      A[i * n + j] = t / ljj;
    }
  }
  return 0;
}

/* khzu_cholFactor and the recurrence on copies of A (n x n): their
 * returns in rg and rw; 1 if the factors' lower triangles are equal bit for
 * bit */
static int factor_as_recurrence(const double *A, double *got, double *want, int n, int *rg, int *rw) {
  memcpy(got, A, (size_t)n * n * sizeof(double));
  memcpy(want, A, (size_t)n * n * sizeof(double));
  *rg = khzu_cholFactor(got, n), *rw = chol_recurrence(want, n);
  int same = 1;
  for (int i = 0; i < n; i++)
    for (int j = 0; j <= i; j++) same &= memcmp(&got[i * n + j], &want[i * n + j], sizeof(double)) == 0;
  return same;
}


/* forward and back substitution with the lower triangle of L alone (L
 * L^T x = b in place), each sum over k in increasing order: the recurrence's
 * factor keeps A in its upper triangle, so a solve that read the upper
 * triangle of this factor would not match */
static void solve_lower(const double *L, int n, double *x) {
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

static void test_chol_large(void) {
  static const int sizes[] = {13, 14, 16, 17, 21, 31, 40, 64, 65, 100, 128, 130};
  enum { NMAX = 130 };
  static double B[NMAX * NMAX], A[NMAX * NMAX], got[NMAX * NMAX], want[NMAX * NMAX];
  int cases = 0, solves = 0;
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int n = sizes[si];
    for (int t = 0; t < 6; t++) {
      int fail_at = t >= 4 ? (t == 4 ? n / 2 : n - 1) : -1;
      for (int k = 0; k < n * n; k++) B[k] = rm_uniform(-1, 1);
      double shift = t % 2 ? 1 : 1e-6;
      for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) {
          double s = i == j ? shift : 0;
          for (int k = 0; k < n; k++) s += B[n * i + k] * B[n * j + k];
          A[n * i + j] = A[n * j + i] = s;
        }
      if (fail_at >= 0) /* column fail_at's pivot goes negative */
        A[fail_at * n + fail_at] = -1;
      int rg, rw, same = factor_as_recurrence(A, got, want, n, &rg, &rw);
      ENSURE_MSG(rg == rw, "n %d case %d: returned %d, the recurrence %d", n, t, rg, rw);
      ENSURE_MSG(same, "n %d case %d: the factor's lower triangle differs from the recurrence's", n, t);
      if (rg == 0) { /* khzu_cholSolve on the factor as left, against substitution on its lower triangle */
        double x[NMAX], y[NMAX];
        for (int i = 0; i < n; i++) x[i] = y[i] = rm_uniform(-1, 1);
        khzu_cholSolve(got, n, x);
        solve_lower(want, n, y);
        int same_x = 1;
        for (int i = 0; i < n; i++) same_x &= memcmp(&x[i], &y[i], sizeof(double)) == 0;
        ENSURE_MSG(same_x, "n %d case %d: khzu_cholSolve differs from the substitution", n, t);
        solves++;
      }
      cases++;
    }
  }
  printf("khzu_cholFactor, n 13-130: %d cases bit for bit as the recurrence, a third of them not positive definite; "
         "khzu_cholSolve: %d solves bit for bit as the substitution\n", cases, solves);
}

/* khzu_cholFactor on block-sparse matrices, the implicit rows of several
 * trees (penalty.c): rows of different trees couple only through the rows
 * that join two trees, so their entries are +0 and the factor's AVX path
 * updates only the runs of rows where a pair of columns is nonzero. Bit
 * for bit against the recurrence (chol_recurrence) on the lower triangle,
 * for 2-6 trees of 3-40 rows and 0-12 joining rows, the rows in tree order
 * and shuffled (runs of every length, more runs than the path visits
 * apart), and with some zeros written as -0 (the path then takes every
 * row): a run that missed a nonzero row, or a -0 skipped, changes bits. */
static void test_chol_block_sparse(void) {
  enum { NMAX = 128 };
  static double B[NMAX * NMAX], A[NMAX * NMAX], got[NMAX * NMAX], want[NMAX * NMAX];
  int tree[NMAX], perm[NMAX], cases = 0, zeros = 0;
  for (int t = 0; t < 240; t++) {
    int ntree = 2 + t % 5, n = 0;
    for (int r = 0; r < ntree; r++) {
      int rows = 3 + (int)rm_uniform(0, 38);
      for (int q = 0; q < rows && n < NMAX - 12; q++) tree[n++] = r;
    }
    int join = (t / 5) % 13; /* joining rows: tree index ntree + a pair's code */
    for (int q = 0; q < join; q++) tree[n++] = -1 - (q % ntree) - ntree * ((q + 1) % ntree);
    for (int i = 0; i < n; i++) perm[i] = i;
    if (t % 2) /* shuffled: the trees interleave */
      for (int i = n - 1; i > 0; i--) {
        int j = (int)rm_uniform(0, i + 1), x = perm[i];
        if (j > i) j = i;
        perm[i] = perm[j], perm[j] = x;
      }
    /* B's row i nonzero on the columns of its trees only: A = B B^T + s I */
    for (int i = 0; i < n; i++) {
      int ti = tree[perm[i]], a0 = ti >= 0 ? ti : (-1 - ti) % ntree, a1 = ti >= 0 ? ti : (-1 - ti) / ntree;
      for (int c = 0; c < ntree; c++)
        for (int e = 0; e < 6; e++) B[i * 6 * ntree + 6 * c + e] = c == a0 || c == a1 ? rm_uniform(-1, 1) : 0;
    }
    for (int i = 0; i < n; i++)
      for (int j = 0; j <= i; j++) {
        double s = i == j ? (t % 3 ? 1 : 1e-6) : 0;
        for (int c = 0; c < 6 * ntree; c++)
          if (B[i * 6 * ntree + c] != 0 && B[j * 6 * ntree + c] != 0) s += B[i * 6 * ntree + c] * B[j * 6 * ntree + c];
        A[n * i + j] = A[n * j + i] = s;
        zeros += i != j && s == 0;
      }
    if (t % 7 == 3) /* some zeros written as -0 */
      for (int i = 1; i < n; i += 3)
        for (int j = 0; j < i; j++)
          if (A[n * i + j] == 0) A[n * i + j] = A[n * j + i] = -0.0;
    int rg, rw, same = factor_as_recurrence(A, got, want, n, &rg, &rw);
    ENSURE_MSG(rg == rw, "case %d (n %d): returned %d, the recurrence %d", t, n, rg, rw);
    ENSURE_MSG(same, "case %d (n %d, %d trees, %d joining rows): the factor's lower triangle differs from the "
               "recurrence's", t, n, ntree, join);
    cases++;
  }
  printf("khzu_cholFactor, block-sparse: %d cases (%d zero entries) bit for bit as the recurrence\n", cases, zeros);
}

/* khzu_max0 and khzu_fmin, the contact force pass's stand-ins for libm's
 * fmax(x, 0) and fmin(a, b), against libm's own (called through volatile
 * pointers, so that the compiler neither folds nor expands them) bit for bit,
 * on the values where the two could part (NaN, signed zeros, infinities,
 * subnormals, ties) and on random pairs */
static void test_libm_minmax(void) {
  double (*volatile lib_fmax)(double, double) = fmax, (*volatile lib_fmin)(double, double) = fmin;
  const double special[] = {NAN, -NAN, 0.0, -0.0, 1.0, -1.0, 4.9e-324, -4.9e-324, 2.2e-308, -2.2e-308,
                            1.7976931348623157e308, -1.7976931348623157e308, INFINITY, -INFINITY, 3.5, 1e-300};
  const int ns = (int)(sizeof special / sizeof special[0]);
  double vals[64];
  int nv = 0;
  for (int i = 0; i < ns; i++) vals[nv++] = special[i];
  while (nv < 64) vals[nv++] = rm_uniform(-1, 1) * pow(10, rm_uniform(-20, 20));
  for (int i = 0; i < nv; i++) {
    double want = lib_fmax(vals[i], 0.0), got = khzu_max0(vals[i]);
    ENSURE_MSG(memcmp(&want, &got, sizeof want) == 0, "khzu_max0(%g) = %g, fmax gives %g", vals[i], got, want);
    for (int j = 0; j < nv; j++) {
      want = lib_fmin(vals[i], vals[j]), got = khzu_fmin(vals[i], vals[j]);
      int same = isnan(want) ? isnan(got) : memcmp(&want, &got, sizeof want) == 0;
      ENSURE_MSG(same, "khzu_fmin(%g, %g) = %g, fmin gives %g", vals[i], vals[j], got, want);
    }
  }
}

/* khzu_turnSince (the rolling couple's turn, rt/src/contact/penalty.c
 * rolling_turn) against the turn built in: with R1, P_a random and E the
 * rotation exp(phi1) of a random axis and an angle log-uniform in
 * [1e-12, 3] rad (the series below sin^2 = 1e-4, atan2 above and past
 * pi / 2), R0 = R1 E P_a must give phi = R1 phi1; and against the matrix
 * form it replaced (E = (R1^T R0) P_a^T, its skew part and trace, atan2,
 * the vector turned back by R1). The bound: rounding of a few ulp of the
 * unit matrices (2e-15 rad), times a / sin(a), by which the skew part's
 * rounding grows in the turn; below 0.01 rad 1e-15 rad. Without the s^4 term the series is off by
 * 7.5e-12 rad at 0.01 rad, a wrong sign or frame by the turn itself.
 * R1 = NULL (the world) gives the identity's turn to the bit. */
static void test_turn_since(void) {
  double worst_exact = 0, worst_matrix = 0, worst_series = 0;
  int world_bits = 0;
  for (int t = 0; t < 20000; t++) {
    double q1[4], qa[4], qe[4], R1[9], Pa[9], Ee[9], EP[9], R0[9], axis[3], phi1[3], want[3], phi[3];
    rm_random_quat(q1), rm_random_quat(qa);
    khzu_quat2mat(R1, q1), khzu_quat2mat(Pa, qa);
    for (int k = 0; k < 3; k++) axis[k] = rm_uniform(-1, 1);
    double an = sqrt(khzu_dot3(axis, axis)), ang = exp(rm_uniform(log(1e-12), log(3.0)));
    for (int k = 0; k < 3; k++) axis[k] /= an, phi1[k] = ang * axis[k];
    khzu_axisAngle2Quat(qe, axis, ang);
    khzu_quat2mat(Ee, qe);
    khzu_mulMat3(EP, Ee, Pa);
    khzu_mulMat3(R0, R1, EP);
    khzu_mulMatVec3(want, R1, phi1);
    khzu_turnSince(phi, R0, R1, qa);
    /* the matrix form */
    double P[9], E[9], ref1[3], ref[3];
    khzu_mulMatTMat3(P, R1, R0);
    khzu_mulMatMatT3(E, P, Pa);
    double v[3] = {0.5 * (E[7] - E[5]), 0.5 * (E[2] - E[6]), 0.5 * (E[3] - E[1])};
    double sa = sqrt(khzu_dot3(v, v)), a = atan2(sa, 0.5 * (E[0] + E[4] + E[8] - 1));
    for (int k = 0; k < 3; k++) ref1[k] = v[k] * (sa > 0 ? a / sa : 1);
    khzu_mulMatVec3(ref, R1, ref1);
    /* against the world: R1 = NULL as the identity, to the bit */
    double R0w[9], phiw[3], phiI[3], I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    khzu_mulMat3(R0w, Ee, Pa);
    khzu_turnSince(phiw, R0w, NULL, qa);
    khzu_turnSince(phiI, R0w, I3, qa);
    for (int k = 0; k < 3; k++) world_bits += phiw[k] != phiI[k];
    /* the skew part's rounding grows by a / sin(a) in the turn */
    double gain = ang / sin(ang);
    for (int k = 0; k < 3; k++) {
      double de = fabs(phi[k] - want[k]) / gain, dm = fabs(phi[k] - ref[k]) / gain;
      worst_exact = de > worst_exact ? de : worst_exact;
      worst_matrix = dm > worst_matrix ? dm : worst_matrix;
      if (ang < 0.01 && dm > worst_series) worst_series = dm;
    }
  }
  printf("  khzu_turnSince: off the built-in turn by %.3g rad, off the matrix log map by %.3g rad (both over a / sin(a); "
         "%.3g below 0.01 rad)\n",
         worst_exact, worst_matrix, worst_series);
  ENSURE(worst_exact < 2e-15);
  ENSURE(worst_matrix < 2e-15);
  ENSURE(worst_series < 1e-15);
  ENSURE(world_bits == 0);
}

int main(void) {
  test_chol_inverse();
  test_turn_since();
  test_chol_large();
  test_chol_block_sparse();
  test_libm_minmax();
  for (int t = 0; t < 100; t++) {
    double q[4], X[12], X6[36], m6[6], f6[6], res[6], ref[6];
    rm_random_quat(q);
    khzu_quat2mat(X, q);
    for (int k = 0; k < 3; k++) X[9 + k] = rm_uniform(-1, 1);
    for (int k = 0; k < 6; k++) m6[k] = rm_uniform(-1, 1), f6[k] = rm_uniform(-1, 1);
    plucker6(X6, X);

    /* X m */
    khzu_xformMotion(res, X, m6);
    khzu_mulMatVec6(ref, X6, m6);
    for (int k = 0; k < 6; k++) ENSURE_NEAR(res[k], ref[k], 1e-14);

    /* X^T f */
    khzu_xformForceT(res, X, f6);
    for (int i = 0; i < 6; i++) {
      ref[i] = 0;
      for (int j = 0; j < 6; j++) ref[i] += X6[6 * j + i] * f6[j];
    }
    for (int k = 0; k < 6; k++) ENSURE_NEAR(res[k], ref[k], 1e-14);

    /* X^T I X */
    double Ic[6], I9[9], I[36], out[36], c[3] = {rm_uniform(-1, 1), rm_uniform(-1, 1), rm_uniform(-1, 1)};
    rm_random_inertia(2.0, Ic);
    double I9v[9] = {Ic[0], Ic[3], Ic[4], Ic[3], Ic[1], Ic[5], Ic[4], Ic[5], Ic[2]};
    memcpy(I9, I9v, sizeof I9);
    khzu_spatialInertia(I, 2.0, c, I9);
    /* RBDA eq. 2.63 by hand: I = [Ic + m cx cx^T, m cx; m cx^T, m 1] */
    double cx[9] = {0, -c[2], c[1], c[2], 0, -c[0], -c[1], c[0], 0};
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        double cc = 0;
        for (int k = 0; k < 3; k++) cc += cx[3 * i + k] * cx[3 * j + k];
        ENSURE_NEAR(I[6 * i + j], I9[3 * i + j] + 2.0 * cc, 1e-14);
        ENSURE_NEAR(I[6 * i + 3 + j], 2.0 * cx[3 * i + j], 1e-15);
        ENSURE_NEAR(I[6 * (3 + i) + j], 2.0 * cx[3 * j + i], 1e-15);
        ENSURE(I[6 * (3 + i) + 3 + j] == (i == j ? 2.0 : 0.0));
      }
    /* the transposed layout ABA keeps (dynamics.c): entry (i, j) at 6 j + i,
     * bit for bit the row-major matrix's; Ic made slightly unsymmetric (as
     * a rotated R Ic R^T can be in its last bits), so that a mix-up shows */
    double IT[36], Iu[36], I9u[9];
    memcpy(I9u, I9, sizeof I9u);
    I9u[1] += 1e-9, I9u[5] -= 1e-9;
    khzu_spatialInertia(Iu, 2.0, c, I9u);
    khzu_spatialInertiaStrided(IT, 2.0, c, I9u, 1, 6);
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 6; j++) ENSURE(memcmp(IT + 6 * j + i, Iu + 6 * i + j, sizeof(double)) == 0);
    ENSURE(Iu[1] != Iu[6]);
    khzu_xformInertiaT(out, X, I);
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 6; j++) {
        double s = 0;
        for (int a = 0; a < 6; a++)
          for (int b = 0; b < 6; b++) s += X6[6 * a + i] * I[6 * a + b] * X6[6 * b + j];
        ENSURE_NEAR(out[6 * i + j], s, 1e-13);
      }

    /* power is invariant: (X m) . f_B == m . (X^T f_B) */
    double Xm[6], XTf[6];
    khzu_xformMotion(Xm, X, m6);
    khzu_xformForceT(XTf, X, f6);
    ENSURE_NEAR(khzu_dot6(Xm, f6), khzu_dot6(m6, XTf), 1e-13);

    /* v x* f == -(v x)^T f */
    double cf[6], cm[6];
    khzu_crossForce(cf, m6, f6);
    for (int j = 0; j < 6; j++) {
      double e[6] = {0};
      e[j] = 1;
      khzu_crossMotion(cm, m6, e);
      ENSURE_NEAR(cf[j], -khzu_dot6(cm, f6), 1e-14);
    }

    /* quaternion <-> matrix round trip and product = matrix product */
    double q2[4], R1[9], R2[9], R12[9], q12[4], Rq[9], qb[4];
    rm_random_quat(q2);
    khzu_quat2mat(R1, q);
    khzu_quat2mat(R2, q2);
    khzu_mulMat3(R12, R1, R2);
    khzu_mulQuat(q12, q, q2);
    khzu_quat2mat(Rq, q12);
    for (int k = 0; k < 9; k++) ENSURE_NEAR(Rq[k], R12[k], 1e-14);
    khzu_mat2quat(qb, R1);
    double sgn = (qb[0] * q[0] + qb[1] * q[1] + qb[2] * q[2] + qb[3] * q[3]) < 0 ? -1 : 1;
    for (int k = 0; k < 4; k++) ENSURE_NEAR(sgn * qb[k], q[k], 1e-13);
    double qs[4] = {2 * q[0], 2 * q[1], 2 * q[2], 2 * q[3]};
    khzu_quat2matScaled(Rq, qs);
    for (int k = 0; k < 9; k++) ENSURE_NEAR(Rq[k], R1[k], 1e-14);
  }
  return ensure_report();
}
