/* test_lemke.c — khz's lexicographic Lemke (rt/src/lcp/lemke.c) against
 * Siconos Numerics' lcp_lexicolemke (Debian libsiconos-numerics-dev) on
 * random LCPs of five families, 2,000 each:
 *   pd        nonsymmetric positive definite M = A A^T + (B - B^T) + delta I
 *             (a P-matrix: the solution is unique and both must find it);
 *   psd       symmetric positive semi-definite of rank n/2, q = w* - M z*
 *             from a complementary pair (a solution exists; M z is unique);
 *   degenerate  psd with repeated rows and columns and z*_i = w*_i = 0 on a
 *             third of the indices (degenerate bases: ties in the ratio test);
 *   zeroq     pd with q having many exact zeros and a few negatives;
 *   contact   Stewart & Trinkle's contact LCP (normal, k friction
 *             directions, sliding speed) built from a random mass matrix and
 *             random contact Jacobians, mu in [0.1, 1.2] — copositive-plus
 *             with a zero diagonal block, solutions not unique; q of
 *             the time stepper's form J v_free + (phi / h, 0, 0), point
 *             Jacobians of independent rows (the paper's sec. 3.4
 *             assumption: independent normals, span(N) and span(D) meeting
 *             only at 0, under which Lemke must end in a solution).
 * khz must solve every one with a natural residual max|min(z, w)| <= 1e-10;
 * where the solution is unique (pd, zeroq) z must match Siconos', and on the
 * PSD families M z must match (unique for monotone LCPs). The LCPs the time
 * stepper itself builds on the scenes are checked in test_lcp_scenes.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "lcp/lemke.h"

#include <LCP_Solvers.h>
#include <LinearComplementarityProblem.h>
#include <NumericsMatrix.h>
#include <SolverOptions.h>
#include <lcp_cst.h>

#define NMAX 60
#define NV 40

static unsigned long long rng_s = 88172645463325252ull;
static double urand(void) {
  rng_s ^= rng_s << 13, rng_s ^= rng_s >> 7, rng_s ^= rng_s << 17;
  return (double)(rng_s >> 11) / 9007199254740992.0;
}
static double srand1(void) { return 2 * urand() - 1; }
static int irand(int lo, int hi) { return lo + (int)(urand() * (hi - lo + 1)); }

/* Siconos' lexicographic Lemke on (M, q): info (0 = solved) */
static int siconos_lemke(int n, const double *M, const double *q, double *z, double *w) {
  double *cm = malloc((size_t)n * n * sizeof(double)), *qq = malloc((size_t)n * sizeof(double));
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) cm[j * n + i] = M[i * n + j]; /* column-major */
  memcpy(qq, q, (size_t)n * sizeof(double));
  NumericsMatrix *NM = NM_create_from_data(NM_DENSE, n, n, cm);
  LinearComplementarityProblem prob = {n, NM, qq};
  /* one options object for every call (created once, never freed: the
   * process ends): creating and deleting it per call was half of Siconos'
   * time under ASan (5.3 -> 3.4 s of CPU, sys 4.3 -> 1.3 s) */
  static SolverOptions *opt;
  if (!opt) opt = solver_options_create(SICONOS_LCP_LEMKE);
  opt->iparam[SICONOS_IPARAM_MAX_ITER] = 100 * n + 100;
  int info = -1;
  memset(z, 0, (size_t)n * sizeof(double));
  lcp_lexicolemke(&prob, z, w, &info, opt);
  NM->matrix0 = NULL; /* ours to free */
  NM_free(NM);
  free(cm), free(qq);
  return info;
}

static void mat_aat(int n, int r, double *M, double *A) {
  for (int i = 0; i < n * r; i++) A[i] = srand1();
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double s = 0;
      for (int k = 0; k < r; k++) s += A[i * r + k] * A[j * r + k];
      M[i * n + j] = s;
    }
}

/* q = w* - M z* with z*, w* >= 0 complementary; `both_zero` indices get
 * z*_i = w*_i = 0 */
static void q_from_pair(int n, const double *M, double *q, int both_zero_every) {
  double zs[NMAX];
  for (int i = 0; i < n; i++) zs[i] = urand() < 0.5 ? urand() * 2 : 0;
  for (int i = 0; i < n; i++) {
    double s = 0;
    for (int j = 0; j < n; j++) s += M[i * n + j] * zs[j];
    double ws = zs[i] > 0 ? 0 : urand() * 2;
    if (both_zero_every && i % both_zero_every == 0) ws = 0;
    q[i] = ws - s;
  }
}

/* the contact LCP of Stewart & Trinkle (eq. 29 with the Schur complement) */
static int contact_lcp(double *M, double *q) {
  int k = urand() < 0.5 ? 4 : 8, nc = irand(1, NMAX / (k + 2)), nv = 3 * nc + irand(0, 6);
  int nr = nc * (k + 1), n = nc * (k + 2);
  static double A[NV * NV], Minv[NV * NV], J[NMAX * NV], Y[NMAX * NV], mu[NMAX];
  /* a random SPD inverse mass matrix */
  mat_aat(nv, nv, Minv, A);
  for (int i = 0; i < nv; i++) Minv[i * nv + i] += 0.1;
  /* each contact a random point Jacobian: its rows the normal n and the
   * tangents t1, t2; friction rows d_j = cos(2 pi j / k) t1 + sin(...) t2 */
  for (int r = 0; r < nr * nv; r++) J[r] = srand1();
  for (int c = 0; c < nc; c++) {
    double t1[NV], t2[NV];
    for (int a = 0; a < nv; a++) t1[a] = srand1(), t2[a] = srand1();
    for (int j = 0; j < k; j++) {
      double th = 2 * M_PI * j / k;
      for (int a = 0; a < nv; a++) J[(nc + c * k + j) * nv + a] = cos(th) * t1[a] + sin(th) * t2[a];
    }
    mu[c] = 0.1 + 1.1 * urand();
  }
  for (int r = 0; r < nr; r++)
    for (int a = 0; a < nv; a++) {
      double s = 0;
      for (int b = 0; b < nv; b++) s += Minv[a * nv + b] * J[r * nv + b];
      Y[r * nv + a] = s;
    }
  memset(M, 0, (size_t)n * n * sizeof(double));
  for (int r = 0; r < nr; r++)
    for (int s = 0; s < nr; s++) {
      double v = 0;
      for (int a = 0; a < nv; a++) v += J[r * nv + a] * Y[s * nv + a];
      M[r * n + s] = v;
    }
  for (int c = 0; c < nc; c++) {
    for (int j = 0; j < k; j++) {
      M[(nc + c * k + j) * n + nr + c] = 1;
      M[(nr + c) * n + nc + c * k + j] = -1;
    }
    M[(nr + c) * n + c] = mu[c];
  }
  /* q: gaps / h (some negative: approaching or penetrating), tangential
   * velocities of a random free velocity, zero for the sliding rows */
  double vf[NV];
  for (int a = 0; a < nv; a++) vf[a] = srand1();
  for (int r = 0; r < nr; r++) {
    double s = 0;
    for (int a = 0; a < nv; a++) s += J[r * nv + a] * vf[a];
    q[r] = s;
  }
  /* the normal rows: N v_free + phi / h as the time stepper builds them,
   * gaps phi >= 0 (a third of them exactly touching); with independent
   * normals (nc <= nv) also penetrations phi < 0 */
  int deep = 0 * urand() < 0.5;
  for (int c = 0; c < nc; c++) q[c] += urand() < 0.3 ? 0 : (deep ? srand1() : urand()) * 0.5;
  for (int c = 0; c < nc; c++) q[nr + c] = 0;
  return n;
}

/* A pile's frictional contact LCP (Stewart & Trinkle, as contact_lcp) at the
 * sizes of the pour's blocks: nc contacts, each between two of nb free
 * bodies (6 DoF, a random SPD inverse mass each), normal and 4 friction
 * directions, so that M is sparse as the pour's (a column couples the
 * contacts of two bodies). Returns n = 6 nc */
#define PILE_NMAX 240
#define PILE_HASH 0x0d83510fde91ec0full /* fd00f05's lemke.c, gcc 12 -O3 (x86-64, SSE2) */
static int pile_lcp(int nc, int nb, double *M, double *q) {
  static double Minv[64][36], J[PILE_NMAX][12];
  static int body[PILE_NMAX][2];
  int nr = 5 * nc, n = 6 * nc;
  for (int b = 0; b < nb; b++) {
    double A[36];
    for (int i = 0; i < 36; i++) A[i] = srand1();
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 6; j++) {
        double t = i == j ? 0.1 : 0;
        for (int k = 0; k < 6; k++) t += A[i * 6 + k] * A[j * 6 + k];
        Minv[b][i * 6 + j] = t;
      }
  }
  /* contact c's rows: c (normal), nc + 4 c + j (friction); each row's
   * Jacobian on its two bodies, 6 entries each */
  for (int c = 0; c < nc; c++) {
    int a = irand(0, nb - 1), b = irand(0, nb - 2);
    b += b >= a;
    double nrm[12], t1[12], t2[12];
    for (int i = 0; i < 12; i++) nrm[i] = srand1(), t1[i] = srand1(), t2[i] = srand1();
    int rows[5] = {c, nc + 4 * c, nc + 4 * c + 1, nc + 4 * c + 2, nc + 4 * c + 3};
    for (int r = 0; r < 5; r++) {
      body[rows[r]][0] = a, body[rows[r]][1] = b;
      double th = 2 * M_PI * (r - 1) / 4;
      for (int i = 0; i < 12; i++) J[rows[r]][i] = r == 0 ? nrm[i] : cos(th) * t1[i] + sin(th) * t2[i];
    }
  }
  memset(M, 0, (size_t)n * n * sizeof(double));
  for (int r = 0; r < nr; r++)
    for (int s = 0; s < nr; s++)
      for (int u = 0; u < 2; u++)
        for (int v = 0; v < 2; v++) {
          if (body[r][u] != body[s][v]) continue;
          const double *Mi = Minv[body[r][u]];
          double t = 0;
          for (int i = 0; i < 6; i++)
            for (int j = 0; j < 6; j++) t += J[r][6 * u + i] * Mi[i * 6 + j] * J[s][6 * v + j];
          M[r * n + s] += t;
        }
  for (int c = 0; c < nc; c++) {
    double mu = 0.1 + 1.1 * urand();
    for (int j = 0; j < 4; j++) {
      M[(nc + 4 * c + j) * n + nr + c] = 1;
      M[(nr + c) * n + nc + 4 * c + j] = -1;
    }
    M[(nr + c) * n + c] = mu;
  }
  for (int r = 0; r < nr; r++) q[r] = srand1();
  for (int c = 0; c < nc; c++) q[c] = urand() < 0.3 ? 0 : srand1() * 0.5;
  for (int c = 0; c < nc; c++) q[nr + c] = 0;
  return n;
}

int main(void) {
  static double M[NMAX * NMAX], q[NMAX], z[NMAX], w[NMAX], zs[NMAX], ws[NMAX], A[NMAX * NMAX];
  static const char *const fam[] = {"pd", "psd", "degenerate", "zeroq", "contact"};
  void *mem = malloc(khz_lemkeBytes(NMAX));
  khzLemke lk;
  khz_lemkeInit(&lk, NMAX, mem);
  int total = 0;
  for (int f = 0; f < 5; f++) {
    int solved = 0, sic_solved = 0, compared = 0, agree = 0, pivmax = 0, polished = 0, solved2 = 0;
    int warm_own = 0, warm_tried = 0, warm_trivial = 0, warm_flip_solved = 0;
    int reduced_solved = 0, recheck_solved = 0, recheck_tried = 0;
    long reduced_inv = 0, recheck_inv = 0, recheck_piv = 0;
    double worst = 0, worst_diff = 0, worst2 = 0, worstw = 0;
    for (int t = 0; t < 2000; t++) {
      int n = irand(1, NMAX);
      if (f == 0 || f == 3) {
        mat_aat(n, n, M, A);
        for (int i = 0; i < n; i++)
          for (int j = 0; j < i; j++) {
            double b = srand1();
            M[i * n + j] += b, M[j * n + i] -= b;
          }
        for (int i = 0; i < n; i++) M[i * n + i] += 0.05;
        for (int i = 0; i < n; i++) q[i] = srand1() * 5;
        if (f == 3)
          for (int i = 0; i < n; i++) q[i] = urand() < 0.6 ? 0 : (urand() < 0.5 ? -urand() : urand());
      } else if (f == 1) {
        mat_aat(n, n / 2 + 1, M, A);
        q_from_pair(n, M, q, 0);
      } else if (f == 2) {
        int r = n / 2 + 1;
        mat_aat(n, r, M, A);
        /* repeat a few rows and columns exactly (a symmetric rank deficiency) */
        for (int rep = 0; rep < n / 4; rep++) {
          int a = irand(0, n - 1), b = irand(0, n - 1);
          if (a == b) continue;
          for (int j = 0; j < n; j++) M[b * n + j] = M[a * n + j];
          for (int i = 0; i < n; i++) M[i * n + b] = M[i * n + a];
        }
        q_from_pair(n, M, q, 3);
      } else {
        n = contact_lcp(M, q);
      }
      khzLcpStatus st = khz_lemke(&lk, n, M, q, z, w, 0);
      double res = khz_lcpResidual(n, M, q, z);
      solved += st == KHZ_LCP_SOLVED;
      polished += lk.polished;
      pivmax = lk.pivots > pivmax ? lk.pivots : pivmax;
      if (st == KHZ_LCP_SOLVED) worst = fmax(worst, res);
      ENSURE_MSG(st == KHZ_LCP_SOLVED && res <= 1e-10, "%s #%d n=%d: status %s, residual %.3g", fam[f],
                 t, n, khz_lcpStatusName(st), res);
      /* warm start from the basis it ended in: solved with no pivot, the
       * same z where it is unique; from that basis with one variable
       * swapped: refused, or a solution (residual <= 1e-10) */
      if (st == KHZ_LCP_SOLVED) {
        static unsigned char zb[NMAX];
        khz_lemkeBasis(&lk, n, zb);
        khzLcpStatus sw = khz_lemkeWarm(&lk, n, M, q, zb, zs, ws);
        double resw = khz_lcpResidual(n, M, q, zs), dw = 0, sw_ = 1;
        int own = sw == KHZ_LCP_SOLVED && resw <= 1e-10 && lk.pivots == 0;
        warm_own += own, warm_tried++;
        if (own) worstw = fmax(worstw, resw);
        for (int i = 0; own && (f == 0 || f == 3) && i < n; i++)
          dw = fmax(dw, fabs(z[i] - zs[i])), sw_ = fmax(sw_, fabs(z[i]));
        ENSURE_MSG(dw <= 1e-7 * sw_, "%s #%d n=%d: warm z differs by %.3g", fam[f], t, n, dw);
        /* q >= 0 has no basis to start from: khz_lemke's z = 0 */
        int trivial = 1;
        for (int i = 0; i < n; i++) trivial &= q[i] >= 0;
        /* the degenerate family's final bases may be solved only by the
         * whole basis' LU or kept from the pivots (polish): cold then */
        ENSURE_MSG(own || trivial || f == 2, "%s #%d n=%d: its own basis, warm: %s, residual %.3g", fam[f], t, n,
                   khz_lcpStatusName(sw), resw);
        warm_trivial += trivial;
        int flip = irand(0, n - 1);
        zb[flip] = !zb[flip];
        sw = khz_lemkeWarm(&lk, n, M, q, zb, zs, ws);
        resw = khz_lcpResidual(n, M, q, zs);
        warm_flip_solved += sw == KHZ_LCP_SOLVED;
        ENSURE_MSG(sw != KHZ_LCP_SOLVED || resw <= 1e-10, "%s #%d n=%d: a wrong basis accepted, residual %.3g",
                   fam[f], t, n, resw);
      }
      /* again with B^-1 recomputed after every pivot from the basis' non-unit
       * columns alone (lk.reduced, PEG's setting): solved, the same z where
       * it is unique (every fourth LCP: the test's time) */
      if (t % 4 == 0) {
        lk.reduced = 1, lk.reinvert = 2;
        khzLcpStatus str = khz_lemke(&lk, n, M, q, zs, ws, 0);
        double resr = khz_lcpResidual(n, M, q, zs), dr = 0, sr = 1;
        reduced_inv += lk.reinverts;
        lk.reduced = 0, lk.reinvert = 0;
        reduced_solved += str == KHZ_LCP_SOLVED;
        ENSURE_MSG(str == KHZ_LCP_SOLVED && resr <= 1e-10,
                   "%s #%d n=%d, reduced re-inversion at every pivot: status %s, residual %.3g", fam[f], t, n,
                   khz_lcpStatusName(str), resr);
        for (int i = 0; st == KHZ_LCP_SOLVED && (f == 0 || f == 3) && i < n; i++)
          dr = fmax(dr, fabs(z[i] - zs[i])), sr = fmax(sr, fabs(z[i]));
        ENSURE_MSG(dr <= 1e-7 * sr, "%s #%d n=%d: reduced re-inversion's z differs by %.3g", fam[f], t, n, dr);
      }
      /* again with every pivot counted as small (lk.reinvert 2) but a
       * re-inversion only where B^-1 has drifted from the basis' inverse
       * (lk.recheck, PEG's setting): solved, the same z where it is unique,
       * and far fewer re-inversions than pivots (every third LCP) */
      if (t % 3 == 0) {
        lk.reduced = 1, lk.reinvert = 2, lk.recheck = 1e-13;
        khzLcpStatus stc = khz_lemke(&lk, n, M, q, zs, ws, 0);
        double resc = khz_lcpResidual(n, M, q, zs), dc = 0, sc = 1;
        recheck_inv += lk.reinverts, recheck_piv += lk.pivots;
        lk.reduced = 0, lk.reinvert = 0, lk.recheck = 0;
        recheck_solved += stc == KHZ_LCP_SOLVED, recheck_tried++;
        ENSURE_MSG(stc == KHZ_LCP_SOLVED && resc <= 1e-10,
                   "%s #%d n=%d, re-inversion on drift: status %s, residual %.3g", fam[f], t, n,
                   khz_lcpStatusName(stc), resc);
        for (int i = 0; st == KHZ_LCP_SOLVED && (f == 0 || f == 3) && i < n; i++)
          dc = fmax(dc, fabs(z[i] - zs[i])), sc = fmax(sc, fabs(z[i]));
        ENSURE_MSG(dc <= 1e-7 * sc, "%s #%d n=%d: re-inversion on drift: z differs by %.3g", fam[f], t, n, dc);
      }
      /* again with the contact stepper's tie test and re-inversion
       * threshold (lcp.c): solved, and the same z where it is unique */
      lk.tie_abs = 1e-3, lk.reinvert = 1e-6;
      khzLcpStatus st2 = khz_lemke(&lk, n, M, q, zs, ws, 0);
      double res2 = khz_lcpResidual(n, M, q, zs), d2 = 0, s2 = 1;
      lk.tie_abs = 0, lk.reinvert = 0;
      solved2 += st2 == KHZ_LCP_SOLVED;
      if (st2 == KHZ_LCP_SOLVED) worst2 = fmax(worst2, res2);
      ENSURE_MSG(st2 == KHZ_LCP_SOLVED && res2 <= 1e-10, "%s #%d n=%d, stepper's settings: status %s, residual %.3g",
                 fam[f], t, n, khz_lcpStatusName(st2), res2);
      for (int i = 0; (f == 0 || f == 3) && i < n; i++) d2 = fmax(d2, fabs(z[i] - zs[i])), s2 = fmax(s2, fabs(z[i]));
      ENSURE_MSG(d2 <= 1e-7 * s2, "%s #%d n=%d: the stepper's settings differ by %.3g", fam[f], t, n, d2);
      int info = siconos_lemke(n, M, q, zs, ws);
      if (info == 0 && khz_lcpResidual(n, M, q, zs) <= 1e-8) {
        sic_solved++;
        /* unique solutions: z; monotone (psd) families: M z; contact: nothing unique */
        double diff = 0, scale = 1;
        if (f == 0 || f == 3) {
          for (int i = 0; i < n; i++) diff = fmax(diff, fabs(z[i] - zs[i])), scale = fmax(scale, fabs(zs[i]));
        } else if (f == 1 || f == 2) {
          for (int i = 0; i < n; i++) {
            double a = 0, b = 0;
            for (int j = 0; j < n; j++) a += M[i * n + j] * z[j], b += M[i * n + j] * zs[j];
            diff = fmax(diff, fabs(a - b)), scale = fmax(scale, fabs(b));
          }
        }
        if (f != 4) {
          compared++;
          worst_diff = fmax(worst_diff, diff / scale);
          agree += diff <= 1e-7 * scale;
          ENSURE_MSG(diff <= 1e-7 * scale, "%s #%d n=%d: khz and Siconos differ by %.3g", fam[f], t, n, diff);
        }
      }
      total++;
    }
    printf("%-10s khz solved %4d/2000 (worst residual %.2e, %d polished, max pivots %d); Siconos "
           "solved %4d; compared %4d, agree %4d (worst relative difference %.2e); with the stepper's "
           "settings solved %4d (worst residual %.2e)\n",
           fam[f], solved, worst, polished, pivmax, sic_solved, compared, agree, worst_diff, solved2, worst2);
    printf("%-10s re-inverted after every pivot from the non-unit columns (reduced): solved %4d/500 (%ld "
           "re-inversions)\n", fam[f], reduced_solved, reduced_inv);
    printf("%-10s every pivot small, re-inverted only on drift (recheck 1e-13): solved %4d/%d, %ld "
           "re-inversions in %ld pivots\n", fam[f], recheck_solved, recheck_tried, recheck_inv, recheck_piv);
    /* B^-1 updated in place stays within 1e-13 of the inverse over most
     * pivots of these LCPs (n <= 60): a re-inversion at every pivot would
     * be recheck_piv of them */
    ENSURE_MSG(recheck_inv * 10 < recheck_piv, "%s: re-inversion on drift: %ld re-inversions in %ld pivots", fam[f],
               recheck_inv, recheck_piv);
    printf("%-10s warm start from its own basis: solved %4d of %4d (%d with q >= 0: no basis), worst "
           "residual %.2e; from that basis with one variable swapped: %4d solved, the rest refused\n",
           fam[f], warm_own, warm_tried, warm_trivial, worstw, warm_flip_solved);
  }
  printf("%d LCPs\n", total);

  /* khz_lcpSplit: LCPs of 1-5 positive definite blocks (dense, so each is
   * one block), their unknowns shuffled; the split must find the blocks,
   * pack each block's matrix, and the blocks solved alone must solve the
   * whole (its solution is unique: the same z as one solve of the whole) */
  {
    static double Mp[NMAX * NMAX], Mfull[NMAX * NMAX], S[NMAX * NMAX], qb[NMAX], zb[NMAX], wb[NMAX], buf[NMAX];
    static int blk[NMAX], perm[NMAX], order[NMAX], start[NMAX + 1], scratch[NMAX];
    int split_ok = 0, worst_blocks = 0;
    double split_diff = 0;
    for (int t = 0; t < 300; t++) {
      int nblk = irand(1, 5), n = 0;
      memset(M, 0, sizeof M);
      for (int b = 0; b < nblk; b++) {
        int k = irand(1, NMAX / 5);
        mat_aat(k, k, A, S); /* k x k into A: positive definite plus skew, as the pd family */
        for (int i = 0; i < k; i++)
          for (int j = 0; j < k; j++) M[(n + i) * NMAX + n + j] = A[i * k + j] + (i == j ? 0.05 : 0);
        for (int i = 0; i < k; i++)
          for (int j = 0; j < i; j++) {
            double b = srand1();
            M[(n + i) * NMAX + n + j] += b, M[(n + j) * NMAX + n + i] -= b;
          }
        for (int i = 0; i < k; i++) blk[n + i] = b;
        n += k;
      }
      /* shuffle: unknown i of the problem is unknown perm[i] of the blocks */
      for (int i = 0; i < n; i++) perm[i] = i;
      for (int i = n - 1; i > 0; i--) {
        int j = irand(0, i), x = perm[i];
        perm[i] = perm[j], perm[j] = x;
      }
      for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) Mfull[i * n + j] = M[perm[i] * NMAX + perm[j]];
        q[i] = srand1() * 5;
      }
      ENSURE(khz_lemke(&lk, n, Mfull, q, z, w, 0) == KHZ_LCP_SOLVED);
      memcpy(Mp, Mfull, sizeof(double) * (size_t)n * n);
      int nb = khz_lcpSplit(n, Mp, order, start, scratch, buf);
      ENSURE_MSG(nb == nblk, "split #%d: %d blocks found, %d built\n", t, nb, nblk);
      int ok = nb == nblk;
      double *Mb = Mp, diff = 0;
      for (int c = 0; c < nb && ok; c++) {
        int k = start[c + 1] - start[c];
        const int *var = order + start[c];
        for (int a = 0; a < k; a++) {
          ok &= blk[perm[var[a]]] == blk[perm[var[0]]] && (a == 0 || var[a] > var[a - 1]);
          for (int b = 0; b < k; b++) ok &= Mb[a * k + b] == Mfull[var[a] * n + var[b]];
          qb[a] = q[var[a]];
        }
        ok &= khz_lemke(&lk, k, Mb, qb, zb, wb, 0) == KHZ_LCP_SOLVED;
        for (int a = 0; a < k; a++) zs[var[a]] = zb[a];
        Mb += k * k;
      }
      if (ok) {
        double scale = 1e-300;
        for (int i = 0; i < n; i++) diff = fmax(diff, fabs(zs[i] - z[i])), scale = fmax(scale, fabs(z[i]));
        ok = khz_lcpResidual(n, Mfull, q, zs) <= 1e-10 && diff <= 1e-9 * fmax(scale, 1);
        split_diff = fmax(split_diff, diff);
      }
      ENSURE_MSG(ok, "split #%d (n = %d, %d blocks): blocks or their solution wrong (z differs by %.3g)\n", t, n,
                 nblk, diff);
      split_ok += ok;
      worst_blocks = nblk > worst_blocks ? nblk : worst_blocks;
    }
    printf("split: %d of 300 shuffled block-diagonal LCPs split into their blocks and solved block by block "
           "(largest z difference to the whole solve %.2e)\n", split_ok, split_diff);
  }
  /* A separating contact whose least q is round-off (lcpv3): one point's
   * normal row q_n = 7.55e-3 > 0 (the V3 pile's lone sphere with free26,
   * step 190), its four friction rows D' v_free = +-1.1e-16 and 0 (a body
   * at rest along them), the cone row 0. The normal row forces c_n = 0
   * (w_n = a c_n + q_n > 0), the cone then beta = 0 (w = mu c_n - sum beta
   * >= 0), and lambda >= 1.1e-16 makes the friction rows' w >= 0: z = 0 up
   * to that lambda, residual 1.1e-16. The least q ties with the cone row's
   * 0, which the lexicographic rule picked for z0: the path began at
   * z0 = 0 and lambda's column ended it on a ray after one pivot (in all
   * four of the stepper's attempts: the step fell back to penalty). */
  {
    double Mc[36] = {0}, qc[6] = {7.55e-3, 1.1013e-16, 6.7e-33, -1.1013e-16, -2.0e-32, 0}, zc[6], wc[6];
    const double a = 1.1469e-2, dd = 4.0141e-2, mu = 0.6;
    Mc[0] = a;
    for (int i = 0; i < 4; i++) {
      Mc[(1 + i) * 6 + 1 + i] = dd;
      Mc[(1 + i) * 6 + 1 + (i + 2) % 4] = -dd; /* the opposite direction */
      Mc[(1 + i) * 6 + 5] = 1;
      Mc[5 * 6 + 1 + i] = -1;
    }
    Mc[5 * 6] = mu;
    for (int set = 0; set < 2; set++) {
      khz_lemkeInit(&lk, NMAX, mem);
      if (set) lk.tie_abs = 1e-3; /* the contact stepper's tie (khz_lcpLemkeSettings) */
      khzLcpStatus st = khz_lemke(&lk, 6, Mc, qc, zc, wc, 0);
      double res = khz_lcpResidual(6, Mc, qc, zc);
      ENSURE_MSG(st == KHZ_LCP_SOLVED && res <= 1e-15, "separating contact, round-off q (tie %s): %s, residual %.3g\n",
                 set ? "1e-3" : "1", khz_lcpStatusName(st), res);
      for (int i = 0; i < 5; i++)
        ENSURE_MSG(zc[i] == 0, "separating contact: impulse %d = %.3g, 0 expected\n", i, zc[i]);
      printf("separating contact with round-off q (tie %s): %s, %d pivots, residual %.2e\n", set ? "1e-3" : "1",
             khz_lcpStatusName(st), lk.pivots, res);
    }
  }

  /* PEG's Lemke (reduced re-inversions, z0 ties) on pile LCPs of n = 60 ..
   * 180 and positive definite ones of 40 .. 100, every pivot counted small
   * (lk.reinvert 2) and re-inverted (lk.recheck 0): statuses, pivots,
   * re-inversions, the bits of z and of the final B^-1 and B^-1 q hashed
   * and compared with what fd00f05's lemke.c gives (recorded above).
   * Session 16's cuts of the re-inversion (K^-1 packed for the basic w's
   * rows, unit solves without their leading zero steps) keep them to the
   * bit; summing a basic w's row in another order changes the hash.
   * Solved ones also checked by their residual. */
  {
    static double Mp[PILE_NMAX * PILE_NMAX], A[PILE_NMAX * PILE_NMAX], qp[PILE_NMAX], zp[PILE_NMAX], wp[PILE_NMAX];
    void *pmem = malloc(khz_lemkeBytes(PILE_NMAX));
    khzLemke pk;
    unsigned long long hash = 1469598103934665603ull;
    long pivots = 0, reinverts = 0;
    int solved = 0, runs = 0;
    for (int t = 0; t < 20; t++) {
      int nc = 10 + 20 * (t % 16) / 15, n = 6 * nc;
      if (t < 16) {
        pile_lcp(nc, 3 + nc / 4, Mp, qp);
      } else {
        /* positive definite, q < 0: every z basic at the end (k = n), the
         * re-inversion's unpacked branch */
        n = 40 + 20 * (t - 16);
        mat_aat(n, n, Mp, A);
        for (int i = 0; i < n; i++) Mp[i * n + i] += 1, qp[i] = -0.1 - urand();
      }
      khz_lemkeInit(&pk, PILE_NMAX, pmem);
      /* recheck 0: every (small) pivot re-inverts */
      pk.reduced = 1, pk.recheck = 0, pk.z0_ties = 1, pk.tie_abs = 1e-3, pk.reinvert = 2;
      khzLcpStatus st = khz_lemke(&pk, n, Mp, qp, zp, wp, 5 * n + 50);
      if (st == KHZ_LCP_SOLVED) {
        solved++;
        double res = khz_lcpResidual(n, Mp, qp, zp);
        ENSURE_MSG(res <= 1e-9, "pile LCP #%d (n = %d): residual %.3g", t, n, res);
      }
      runs++;
      pivots += pk.pivots, reinverts += pk.reinverts;
      unsigned long long word = (unsigned long long)st << 32 | (unsigned)pk.pivots;
      hash = (hash ^ word) * 1099511628211ull;
      hash = (hash ^ (unsigned)pk.reinverts) * 1099511628211ull;
      /* z (recomputed from the final basis by the polish) and the final
       * B^-1 and B^-1 q as the pivots and re-inversions left them */
      for (int i = 0; i < n * n + 2 * n; i++) {
        unsigned long long b;
        memcpy(&b, i < n ? zp + i : i < 2 * n ? pk.qbar + (i - n) : pk.binv + (i - 2 * n), 8);
        hash = (hash ^ b) * 1099511628211ull;
      }
    }
    printf("pile LCPs (n 60-180) and 4 positive definite ones (PEG's settings, a re-inversion at every pivot): %d of %d solved, %ld pivots, %ld "
           "re-inversions, hash %016llx\n", solved, runs, pivots, reinverts, hash);
    ENSURE_MSG(hash == PILE_HASH, "pile LCPs: hash %016llx, fd00f05's %016llx", hash, (unsigned long long)PILE_HASH);
    ENSURE(reinverts > 100);
    free(pmem);
  }
  free(mem);
  return ensure_report();
}
