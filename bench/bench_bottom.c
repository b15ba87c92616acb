/* bench_bottom.c — growth of the bottom-of-volume selection (Drumwright §III-A)
 * with the number of contact points N = 16 ... 16384: µs per call (median of
 * repetitions) and the fitted log-log slope. O(N lg N) shows as a slope a
 * little above 1 (lg N adds ~0.1 over this range); O(N^2) would be 2.
 * Points: a random intersection volume — a bowl-shaped bottom surface with
 * interior points above it, seen along a tilted normal.
 *
 *   bench_bottom [--quick] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "contact/bottom.h"
#include "spatial.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static unsigned long long rng = 88172645463325252ull;
static double uniform(double lo, double hi) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return lo + (hi - lo) * ((double)(rng >> 11) / 9007199254740992.0);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  int maxn = quick ? 1024 : 16384, reps = quick ? 5 : 15;

  /* a one-body model only to own a data with a large scratch stack */
  khzSpec *s = khz_spec_new();
  khzBodySpec b;
  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "body");
  b.joint_type = KHZ_JOINT_FLOATING;
  b.mass = 1, b.inertia[0] = b.inertia[1] = b.inertia[2] = 0.1;
  khz_spec_addBody(s, &b);
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  khz_spec_destroy(&s);
  khzData *d = khz_makeData(m, 64u << 20);

  double normal[3] = {0.2, -0.1, 0.97}, u[3], v[3], a[3] = {1, 0, 0};
  double nn = sqrt(khzu_dot3(normal, normal));
  for (int k = 0; k < 3; k++) normal[k] /= nn;
  khzu_cross(u, normal, a);
  double un = sqrt(khzu_dot3(u, u));
  for (int k = 0; k < 3; k++) u[k] /= un;
  khzu_cross(v, normal, u);

  double *pos = malloc(3 * (size_t)maxn * sizeof(double)), *depth = malloc((size_t)maxn * sizeof(double));
  int *bottom = malloc((size_t)maxn * sizeof(int));
  double lx[32], ly[32];
  int npts = 0;
  printf("| N | µs per call (median of %d) | bottom points |\n|---|---|---|\n", reps);
  for (int n = 16; n <= maxn; n *= 2) {
    /* half the points on the bowl surface, half inside the volume above it */
    for (int k = 0; k < n; k++) {
      double r = sqrt(uniform(0, 1)), th = uniform(0, 2 * M_PI), x = r * cos(th), y = r * sin(th);
      depth[k] = 1 - 0.5 * r * r - (k % 2 ? uniform(0.01, 0.5) : 0);
      for (int j = 0; j < 3; j++) pos[3 * k + j] = x * u[j] + y * v[j] - depth[k] * normal[j];
    }
    double t[64];
    int nb = 0;
    for (int r = 0; r < reps; r++) {
      int inner = n < 1024 ? 1024 / n * 4 : 1;
      double t0 = now_us();
      for (int i = 0; i < inner; i++) nb = khz_bottomOfVolume(d, pos, depth, n, normal, bottom);
      t[r] = (now_us() - t0) / inner;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp);
    printf("| %d | %.2f | %d |\n", n, t[reps / 2], nb);
    lx[npts] = log((double)n), ly[npts] = log(t[reps / 2]), npts++;
  }
  /* least-squares slope of log(time) against log(N) */
  double mx = 0, my = 0, sxy = 0, sxx = 0;
  for (int i = 0; i < npts; i++) mx += lx[i] / npts, my += ly[i] / npts;
  for (int i = 0; i < npts; i++) sxy += (lx[i] - mx) * (ly[i] - my), sxx += (lx[i] - mx) * (lx[i] - mx);
  printf("\nlog-log slope: %.3f (N lg N over this range: ~1.1; N^2: 2)\n", sxy / sxx);
  if (d->warning[KHZ_WARN_STACK]) printf("warning: scratch stack exhausted\n");
  free(pos), free(depth), free(bottom);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  return 0;
}
