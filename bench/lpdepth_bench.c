/* lpdepth_bench.c — the cost of the ratio-metric LP depth (rt/src/lp) against
 * libccd's EPA (ccdGJKPenetration) and MPR (ccdMPRPenetration) on the same
 * random overlapping pairs: box-box, box-hull and hull-hull (hulls of 6-40
 * points on random ellipsoids), 0.1-20 mm deep. Each pair is timed over a
 * number of repetitions; printed: the median over pairs of the time per call
 * (microseconds), the LP's pivots and faces, and the ratios. The LP time
 * includes building both face lists from the shapes' poses.
 *
 * The LP is timed cold and warm (from the previous call's basis) over a
 * sequence of poses in which the second body moves --step further in and
 * turns by --spin about a random axis per call, as over the steps of a
 * simulation. (A pure translation keeps every basis feasible: the dual's
 * constraints hold the face normals only; a rotation changes them.)
 *
 * Usage: lpdepth_bench [--pairs N] [--reps K] [--step M] [--spin RAD]
 *        (default 300 pairs, 50 calls per pair, 1e-4 m and 5e-3 rad per call) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lpdepth/lp_util.h"

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e6 * t.tv_sec + 1e-3 * t.tv_nsec;
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
  int npair = 300, reps = 50;
  double step = 1e-4, spin = 5e-3;
  for (int i = 1; i + 1 < argc; i++) {
    if (!strcmp(argv[i], "--pairs")) npair = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--step")) step = atof(argv[++i]);
    else if (!strcmp(argv[i], "--spin")) spin = atof(argv[++i]);
  }
  if (npair < 1 || reps < 1 || !(step >= 0)) {
    fprintf(stderr, "lpdepth_bench: --pairs and --reps take positive counts, --step a length >= 0\n");
    return 2;
  }
  static unsigned char wmem[1 << 16];
  khzLpDepthWork W;
  khz_lpDepthInit(&W, 2 * LU_MAXFACE, wmem);
  ccd_t ccd;
  lu_ccdInit(&ccd);
  /* EPA and MPR at libccd's default tolerances, as a simulator would run them */
  ccd_t ccd_run;
  CCD_INIT(&ccd_run);
  ccd_run.support1 = ccd_run.support2 = lu_ccdSupport;
  ccd_run.center1 = ccd_run.center2 = lu_ccdCenter;

  double *t_lp = malloc(sizeof(double) * npair), *t_epa = malloc(sizeof(double) * npair);
  double *t_mpr = malloc(sizeof(double) * npair), *ratio = malloc(sizeof(double) * npair);
  double *piv = malloc(sizeof(double) * npair), *nf = malloc(sizeof(double) * npair);
  double *t_warm = malloc(sizeof(double) * npair), *pwarm = malloc(sizeof(double) * npair);
  double *fwarm = malloc(sizeof(double) * npair), *ratio_w = malloc(sizeof(double) * npair);
  lu_body *bs = malloc(sizeof(lu_body) * reps);
  static const char *kind_name[3] = {"box-box", "box-hull", "hull-hull"};
  printf("%-9s %5s %6s %8s %6s %6s %8s %8s %8s %7s %7s %7s\n", "pair", "faces", "pivots",
         "LP us", "warm", "pivots", "warm us", "EPA us", "MPR us", "EPA/LP", "MPR/LP", "EPA/wrm");
  volatile double sink = 0;
  for (int kind = 0; kind < 3; kind++) {
    int n = 0;
    while (n < npair) {
      lu_body a, b;
      double R[9], pa[3] = {0, 0, 0}, u[3];
      if (kind == 2 ? lu_hull(&a, (int)lu_uniform(6, 40), 0.05, 0.3) : (lu_box(&a, 0.05, 0.3), 0))
        continue;
      if (kind >= 1 ? lu_hull(&b, (int)lu_uniform(6, 40), 0.05, 0.3) : (lu_box(&b, 0.05, 0.3), 0)) {
        lu_free(&a);
        continue;
      }
      lu_randRot(R), lu_place(&a, pa, R);
      lu_randRot(R), lu_place(&b, pa, R);
      lu_randDir(u);
      lu_touch(&a, &b, u, lu_uniform(1e-4, 0.02), &ccd);
      ccd_real_t dep;
      ccd_vec3_t dir, pos;
      khzLpDepth o;
      /* the reps poses: b moves step further in and turns by spin about a
       * random axis per call, as over the steps of a simulation (0.1 mm and
       * 5 mrad: 10 cm/s and 5 rad/s at 1 kHz) */
      double axis[3], q[4], Rk[9], Rs[9], Rn[9];
      lu_randDir(axis);
      khzu_axisAngle2Quat(q, axis, spin);
      khzu_quat2mat(Rs, q);
      memcpy(Rk, b.s.rot, sizeof Rk);
      for (int k = 0; k < reps; k++) {
        double x[3];
        bs[k] = b;
        khzu_addScl3(x, b.s.pos, u, -step * k);
        lu_place(&bs[k], x, Rk);
        khzu_mulMat3(Rn, Rs, Rk);
        memcpy(Rk, Rn, sizeof Rk);
      }

      /* the LP cold: faces from the poses, then the solve */
      double t0 = now_us();
      for (int k = 0; k < reps; k++) {
        khzPolytope p1, p2;
        khz_lpPolytopeOfShape(&a.s, 0, a.face, LU_MAXFACE, &p1);
        khz_lpPolytopeOfShape(&bs[k].s, 0, bs[k].face, LU_MAXFACE, &p2);
        khz_lpDepth(&W, &p1, &p2, NULL, &o);
        sink += o.rho;
      }
      piv[n] = o.pivots;
      /* the LP warm from the previous call's basis */
      double t1 = now_us();
      int basis[4], have = 0, taken = 0;
      double pw = 0;
      for (int k = 0; k < reps; k++) {
        khzPolytope p1, p2;
        khz_lpPolytopeOfShape(&a.s, 0, a.face, LU_MAXFACE, &p1);
        khz_lpPolytopeOfShape(&bs[k].s, 0, bs[k].face, LU_MAXFACE, &p2);
        khz_lpDepth(&W, &p1, &p2, have ? basis : NULL, &o);
        memcpy(basis, o.basis, sizeof basis), have = 1;
        taken += o.warm, pw += o.pivots;
        sink += o.rho;
      }
      double t2 = now_us();
      for (int k = 0; k < reps; k++) {
        ccdGJKPenetration(&a, &bs[k], &ccd_run, &dep, &dir, &pos);
        sink += dep;
      }
      double t3 = now_us();
      for (int k = 0; k < reps; k++) {
        ccdMPRPenetration(&a, &bs[k], &ccd_run, &dep, &dir, &pos);
        sink += dep;
      }
      double t4 = now_us();
      t_lp[n] = (t1 - t0) / reps, t_warm[n] = (t2 - t1) / reps;
      t_epa[n] = (t3 - t2) / reps, t_mpr[n] = (t4 - t3) / reps;
      ratio[n] = t_epa[n] / t_lp[n];
      pwarm[n] = pw / reps, fwarm[n] = reps > 1 ? (double)(taken) / (reps - 1) : 0;
      nf[n] = a.p.nface + b.p.nface;
      lu_free(&a), lu_free(&b);
      n++;
    }
    for (int i = 0; i < n; i++) ratio_w[i] = t_epa[i] / t_warm[i];
    double mr = median(ratio, n), mw = median(ratio_w, n);
    for (int i = 0; i < n; i++) ratio[i] = t_mpr[i] / t_lp[i];
    double mm = median(ratio, n), ftaken = 0;
    for (int i = 0; i < n; i++) ftaken += fwarm[i] / n;
    printf("%-9s %5.0f %6.0f %8.2f %5.0f%% %6.1f %8.2f %8.2f %8.2f %7.2f %7.2f %7.2f\n",
           kind_name[kind], median(nf, n), median(piv, n), median(t_lp, n), 100 * ftaken,
           median(pwarm, n), median(t_warm, n), median(t_epa, n), median(t_mpr, n), mr, mm, mw);
  }
  printf("(medians over %d pairs each; per pair %d calls as b moves %g mm further in and turns "
         "%g mrad per call, "
         "timed together; warm: the LP started from the previous call's basis, %% of calls where "
         "that basis was still feasible; ratios are medians of the per-pair ratios)\n",
         npair, reps, 1e3 * step, 1e3 * spin);
  free(t_lp), free(t_epa), free(t_mpr), free(ratio), free(piv), free(nf);
  free(t_warm), free(pwarm), free(fwarm), free(ratio_w), free(bs);
  return sink == 12345.678 ? 1 : 0;
}
