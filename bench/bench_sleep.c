/* bench_sleep.c — what sleeping bodies buy (docs/sleeping.md): a scene run
 * with sleeping off and on, side by side in blocks of 100 steps so that both
 * see the same machine load, each step timed alone (CLOCK_MONOTONIC). Prints,
 * per half second of simulated time, the median and p99 µs per step of each
 * and the bodies asleep; then the medians over the last second.
 *
 *   bench_sleep [--seconds S] [--on] [SCENE]      (default: the V3 pile, 6 s)
 *   --on: only the run with sleeping on (for a profiler attached late)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "khz/khz.h"
#include "khz/load.h"

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e6 * (double)t.tv_sec + 1e-3 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* median and p99 (nearest rank) of v[0..n), sorted in place */
static void stats(double *v, int n, double *med, double *p99) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  *med = n ? v[n / 2] : 0;
  *p99 = n ? v[(int)(0.99 * (n - 1))] : 0;
}

int main(int argc, char **argv) {
  const char *path = KHZ_SOURCE_ROOT "/scenes/validation/v3_pile.yaml";
  double seconds = 6;
  int only_on = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--on")) only_on = 1;
    else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: bench_sleep [--seconds S] [--on] [SCENE]\n");
      return 2;
    } else path = argv[i];
  }
  char err[1024];
  khzScene scene;
  khzModel *m = khz_loadModel(path, &scene, err, sizeof err);
  if (!m) {
    fprintf(stderr, "bench_sleep: %s\n", err);
    return 1;
  }
  khzData *d[2] = {khz_makeData(m, 0), khz_makeData(m, 0)};
  d[0]->sleep_enabled = 0, d[1]->sleep_enabled = 1;
  int steps = (int)(seconds / m->timestep + 0.5), half = (int)(0.5 / m->timestep + 0.5), block = 100;
  double *t[2] = {malloc((size_t)steps * sizeof(double)), malloc((size_t)steps * sizeof(double))};
  int *asleep = calloc((size_t)steps, sizeof(int));
  if (!d[0] || !d[1] || !t[0] || !t[1] || !asleep) return 1;
  for (int b = 0; b < steps; b += block)
    for (int k = only_on; k < 2; k++)
      for (int s = b; s < b + block && s < steps; s++) {
        double t0 = now_us();
        khz_step(m, d[k]);
        t[k][s] = now_us() - t0;
        if (k == 1)
          for (int i = 1; i < m->nbody; i++) asleep[s] += m->body_parent[i] == 0 && khz_bodySleeping(m, d[1], i);
      }
  printf("bench_sleep: %s, %d steps of %g s, sleeping off / on side by side (us per step)\n", path, steps,
         m->timestep);
  printf("| t (s) | off median | off p99 | on median | on p99 | asleep at end |\n|---|---|---|---|---|---|\n");
  for (int a = 0; a < steps; a += half) {
    int n = a + half <= steps ? half : steps - a;
    double m0, p0, m1, p1;
    stats(t[0] + a, n, &m0, &p0);
    stats(t[1] + a, n, &m1, &p1);
    printf("| %.1f-%.1f | %.1f | %.1f | %.1f | %.1f | %d |\n", a * m->timestep, (a + n) * m->timestep, m0, p0,
           m1, p1, asleep[a + n - 1]);
  }
  khz_deleteData(&d[0]), khz_deleteData(&d[1]);
  free(t[0]), free(t[1]), free(asleep);
  khz_deleteModel(&m);
  khz_deleteScene(&scene);
  return 0;
}
