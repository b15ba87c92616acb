/* lemke_block: khz_lemke on a block dumped by peg_probe (PEG's settings),
 * printing status, pivots, residual and z (diagnosis, session 14).
 * POLISH_EXACT=FILE (FILE the same block's try at eps = 0): the compliant
 * solve's proximal-point re-solve from its basis, which basic z's and
 * nonbasic w's go negative, the cold re-solve, the exact LCP from that
 * basis and cold, and smaller compliances (session 17, docs/peg.md) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lcp/lemke.h"

static double *read_block(const char *path, int *k_out, double **q_out) {
  FILE *f = fopen(path, "r");
  int k, fr, at, st0;
  if (!f || fscanf(f, "%d %d %d %d", &k, &fr, &at, &st0) != 4) return NULL;
  double *M = malloc(sizeof(double) * k * k), *q = malloc(sizeof(double) * k);
  for (int i = 0; i < k * k; i++)
    if (fscanf(f, "%lf", M + i) != 1) return NULL;
  for (int i = 0; i < k; i++)
    if (fscanf(f, "%lf", q + i) != 1) return NULL;
  fclose(f);
  *k_out = k, *q_out = q;
  return M;
}

/* the basis of zb solved directly, unclamped: z_S from M[S,S] z_S = -q_S
 * (Gaussian elimination, partial pivoting), w = M z + q; prints the basic
 * z's and nonbasic w's below zero */
static void basis_signs(int k, const double *M, const double *q, const unsigned char *zb) {
  int *S = malloc(sizeof(int) * k), m = 0;
  for (int i = 0; i < k; i++)
    if (zb[i]) S[m++] = i;
  double *A = malloc(sizeof(double) * m * (m + 1)), *z = calloc(k, sizeof(double));
  for (int a = 0; a < m; a++) {
    for (int b = 0; b < m; b++) A[a * (m + 1) + b] = M[(size_t)S[a] * k + S[b]];
    A[a * (m + 1) + m] = -q[S[a]];
  }
  for (int c = 0; c < m; c++) {
    int p = c;
    for (int i = c + 1; i < m; i++)
      if (fabs(A[i * (m + 1) + c]) > fabs(A[p * (m + 1) + c])) p = i;
    for (int j = 0; j <= m; j++) {
      double t = A[c * (m + 1) + j];
      A[c * (m + 1) + j] = A[p * (m + 1) + j], A[p * (m + 1) + j] = t;
    }
    for (int i = c + 1; i < m; i++) {
      double f = A[i * (m + 1) + c] / A[c * (m + 1) + c];
      for (int j = c; j <= m; j++) A[i * (m + 1) + j] -= f * A[c * (m + 1) + j];
    }
  }
  for (int i = m - 1; i >= 0; i--) {
    double s = A[i * (m + 1) + m];
    for (int j = i + 1; j < m; j++) s -= A[i * (m + 1) + j] * z[S[j]];
    z[S[i]] = s / A[i * (m + 1) + i];
  }
  int nz = 0, nw = 0;
  double zmin = 0, wmin = 0, zmax = 0;
  for (int i = 0; i < k; i++) {
    double w = q[i];
    for (int j = 0; j < k; j++) w += M[(size_t)i * k + j] * z[j];
    if (zb[i]) zmax = fmax(zmax, z[i]);
    if (zb[i] && z[i] < 0) {
      nz++, zmin = fmin(zmin, z[i]);
      printf("    basic z_%d = %.3g (M_ii %.3g, q_i %.3g)\n", i, z[i], M[(size_t)i * k + i], q[i]);
    }
    if (!zb[i] && w < 0) {
      nw++, wmin = fmin(wmin, w);
      printf("    nonbasic w_%d = %.3g (M_ii %.3g, q_i %.3g)\n", i, w, M[(size_t)i * k + i], q[i]);
    }
  }
  printf("  basis of %d z's: %d basic z < 0 (least %.3g), %d nonbasic w < 0 (least %.3g), largest z %.3g\n", m, nz,
         zmin, nw, wmin, zmax);
  free(S), free(A), free(z);
}

static void polish_probe(khzLemke *lk, int k, const double *Me, const double *q, const double *z, const char *exact) {
  int k0;
  double *q0, *M0 = read_block(exact, &k0, &q0);
  if (!M0 || k0 != k) {
    printf("%s: not the same block\n", exact);
    return;
  }
  unsigned char *zb = malloc(k), *zb2 = malloc(k);
  double *de = malloc(sizeof(double) * k), *pq = malloc(sizeof(double) * k), *z2 = malloc(sizeof(double) * k),
         *w2 = malloc(sizeof(double) * k), *Mx = malloc(sizeof(double) * k * k);
  khz_lemkeBasis(lk, k, zb);
  double eps = 0;
  int ne = 0;
  for (int i = 0; i < k; i++) de[i] = Me[(size_t)i * k + i] - M0[(size_t)i * k + i], eps = fmax(eps, de[i]), ne += de[i] > 0;
  for (int i = 0; i < k; i++) pq[i] = q[i] - de[i] * z[i];
  printf("compliance %.3g on %d of %d rows; the re-solve's q - eps z from the final basis:\n", eps, ne, k);
  basis_signs(k, Me, pq, zb);
  khzLcpStatus s = khz_lemkeWarm(lk, k, Me, pq, zb, z2, w2);
  printf("  khz_lemkeWarm: %s residual %.3g (tol %.3g)\n", khz_lcpStatusName(s), lk->residual, lk->tol);
  double dz = 0;
  s = khz_lemke(lk, k, Me, pq, z2, w2, 5 * k + 50);
  for (int i = 0; i < k; i++) dz = fmax(dz, de[i] * fabs(z[i] - z2[i]));
  printf("  khz_lemke cold (compliant, q - eps z): %s pivots %d residual %.3g; max eps |z - z'| %.3g\n",
         khz_lcpStatusName(s), lk->pivots, lk->residual, dz);
  if (s == KHZ_LCP_SOLVED) {
    /* then the polish's warm re-solves from that basis */
    for (int it = 0; it < 3; it++) {
      khz_lemkeBasis(lk, k, zb2);
      double *z3 = malloc(sizeof(double) * k);
      for (int i = 0; i < k; i++) pq[i] = q[i] - de[i] * z2[i];
      s = khz_lemkeWarm(lk, k, Me, pq, zb2, z3, w2);
      dz = 0;
      for (int i = 0; i < k; i++) dz = fmax(dz, de[i] * fabs(z2[i] - z3[i]));
      printf("    warm re-solve %d from it: %s residual %.3g; max eps |z - z'| %.3g\n", it + 1, khz_lcpStatusName(s),
             lk->residual, dz);
      if (s == KHZ_LCP_SOLVED) memcpy(z2, z3, sizeof(double) * k);
      free(z3);
      if (s != KHZ_LCP_SOLVED) break;
    }
  }
  printf("the exact LCP (eps = 0) from the compliant basis:\n");
  basis_signs(k, M0, q, zb);
  s = khz_lemkeWarm(lk, k, M0, q, zb, z2, w2);
  printf("  khz_lemkeWarm: %s residual %.3g\n", khz_lcpStatusName(s), lk->residual);
  s = khz_lemke(lk, k, M0, q, z2, w2, 5 * k + 50);
  printf("  khz_lemke cold: %s pivots %d residual %.3g\n", khz_lcpStatusName(s), lk->pivots, lk->residual);
  static const double smaller[] = {1e-7, 1e-8, 1e-9};
  for (int t = 0; t < 3; t++) {
    memcpy(Mx, M0, sizeof(double) * k * k);
    for (int i = 0; i < k; i++)
      if (de[i] > 0) Mx[(size_t)i * k + i] += smaller[t];
    s = khz_lemke(lk, k, Mx, q, z2, w2, 5 * k + 50);
    printf("eps %.0e: khz_lemke cold %s pivots %d residual %.3g\n", smaller[t], khz_lcpStatusName(s), lk->pivots,
           lk->residual);
  }
  free(zb), free(zb2), free(de), free(pq), free(z2), free(w2), free(Mx), free(M0), free(q0);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  FILE *f = fopen(argv[1], "r");
  int k, fr, at, st0;
  if (!f || fscanf(f, "%d %d %d %d", &k, &fr, &at, &st0) != 4) return 1;
  double *M = malloc(sizeof(double) * k * k), *q = malloc(sizeof(double) * k), *z = malloc(sizeof(double) * k),
         *w = malloc(sizeof(double) * k);
  for (int i = 0; i < k * k; i++)
    if (fscanf(f, "%lf", M + i) != 1) return 1;
  for (int i = 0; i < k; i++)
    if (fscanf(f, "%lf", q + i) != 1) return 1;
  fclose(f);
  double pivot_tol = argc > 2 ? atof(argv[2]) : 0;
  int z0t = argc > 3 ? atoi(argv[3]) : 1;
  double recheck = argc > 4 ? atof(argv[4]) : 1e-13;
  double tie_abs = getenv("TIE_ABS") ? atof(getenv("TIE_ABS")) : 0;
  void *mem = malloc(khz_lemkeBytes(k));
  khzLemke lk;
  khz_lemkeInit(&lk, k, mem);
  lk.reduced = 1, lk.recheck = recheck, lk.z0_ties = z0t, lk.tie_abs = tie_abs;
  double qmax = 0;
  for (int i = 0; i < k; i++) qmax = fmax(qmax, fabs(q[i]));
  lk.pivot_tol = pivot_tol;
  lk.tol = (pivot_tol > 0 ? 1e-8 : 1e-7) * fmax(qmax, 1e-3);
  khzLcpStatus st = khz_lemke(&lk, k, M, q, z, w, 5 * k + 50);
  printf("%s: n %d status %s pivots %d reinverts %d polished %d residual %.3g tol %.3g qmax %.3g least_cand %.3g\n",
         argv[1], k, khz_lcpStatusName(st), lk.pivots, lk.reinverts, lk.polished, lk.residual, lk.tol, qmax,
         lk.least_candidate);
  /* POLISH_EXACT=FILE: FILE the same block's try at eps = 0 (its M without
   * the compliance): the proximal-point re-solve of PEG's solve from the
   * final basis, q - eps z (session 17, docs/peg.md) */
  const char *exact = getenv("POLISH_EXACT");
  if (exact && st == KHZ_LCP_SOLVED) polish_probe(&lk, k, M, q, z, exact);
  if (argc > 5) {
    FILE *o = fopen(argv[5], "w");
    for (int i = 0; i < k; i++) fprintf(o, "%.17g\n", z[i]);
    fclose(o);
  }
  return 0;
}
