/* lemke_block: khz_lemke on a block dumped by peg_probe (PEG's settings),
 * printing status, pivots, residual and z (diagnosis, session 14). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lcp/lemke.h"

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
  if (argc > 5) {
    FILE *o = fopen(argv[5], "w");
    for (int i = 0; i < k; i++) fprintf(o, "%.17g\n", z[i]);
    fclose(o);
  }
  return 0;
}
