/* bench_threads.c — the step's wall time with 1 and with N threads
 * (khz_setThreads) on the same scene, in one run: two datas stepped to FROM
 * untimed, then rounds of BLOCK steps each, alternating 1 thread and N
 * threads (the same states, since the bits do not depend on the thread
 * count: checked at the end), every step timed alone. Prints the median and
 * the 90th percentile per step of each, their ratio, the CPU time the
 * process took (the spinning worker's share shows there) and the calling
 * thread's own (what the workers took off it). Sleeping off, as
 * khz-sim run. A MuJoCo MJCF file (.xml) is stepped with its own integrator.
 * Usage: bench_threads SCENE [--threads N] [--from F] [--block B] [--rounds R] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "khz/khz.h"
#include "khz/load.h"

static double now_s(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[(int)(p * (n - 1))];
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_threads SCENE [--threads N] [--from F] [--block B] [--rounds R]\n");
    return 2;
  }
  int threads = 2, from = 300, block = 100, rounds = 7;
  for (int i = 2; i + 1 < argc; i += 2) {
    int v = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--threads")) threads = v;
    else if (!strcmp(argv[i], "--from")) from = v;
    else if (!strcmp(argv[i], "--block")) block = v;
    else if (!strcmp(argv[i], "--rounds")) rounds = v;
    else {
      fprintf(stderr, "bench_threads: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  char err[1024];
  khzScene scene;
  khzModel *m = khz_loadModel(argv[1], &scene, err, sizeof err);
  if (!m) {
    fprintf(stderr, "bench_threads: %s\n", err);
    return 1;
  }
  khzData *d[2] = {khz_makeData(m, 0), khz_makeData(m, 0)};
  if (!d[0] || !d[1] || khz_setThreads(m, d[1], threads)) {
    fprintf(stderr, "bench_threads: no data or no threads\n");
    return 1;
  }
  for (int k = 0; k < 2; k++) {
    d[k]->sleep_enabled = 0;
    for (int s = 0; s < from; s++) khz_step(m, d[k]);
  }
  int n = rounds * block;
  double *t[2] = {malloc((size_t)n * sizeof(double)), malloc((size_t)n * sizeof(double))}, cpu[2] = {0, 0},
         own[2] = {0, 0};
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < 2; k++) {
      double c0 = now_s(CLOCK_PROCESS_CPUTIME_ID), o0 = now_s(CLOCK_THREAD_CPUTIME_ID);
      for (int s = 0; s < block; s++) {
        double t0 = now_s(CLOCK_MONOTONIC);
        khz_step(m, d[k]);
        t[k][r * block + s] = now_s(CLOCK_MONOTONIC) - t0;
      }
      cpu[k] += now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
      own[k] += now_s(CLOCK_THREAD_CPUTIME_ID) - o0;
    }
  int same = khz_hashState(m, d[0]) == khz_hashState(m, d[1]);
  double med[2], p90[2];
  for (int k = 0; k < 2; k++) {
    double *c = malloc((size_t)n * sizeof(double));
    memcpy(c, t[k], (size_t)n * sizeof(double));
    med[k] = pct(c, n, 0.5), p90[k] = pct(c, n, 0.9);
    free(c);
  }
  printf("%s steps %d-%d (%d rounds of %d, alternating): 1 thread median %.1f us p90 %.1f us, cpu %.1f us/step "
         "(calling thread %.1f); %d threads median %.1f us p90 %.1f us, cpu %.1f us/step (calling thread %.1f); "
         "ratio %.3f; same bits %s\n",
         argv[1], from, from + n, rounds, block, 1e6 * med[0], 1e6 * p90[0], 1e6 * cpu[0] / n, 1e6 * own[0] / n,
         threads, 1e6 * med[1], 1e6 * p90[1], 1e6 * cpu[1] / n, 1e6 * own[1] / n, med[1] / med[0],
         same ? "yes" : "NO");
  free(t[0]), free(t[1]);
  khz_deleteData(&d[0]), khz_deleteData(&d[1]);
  khz_deleteModel(&m);
  khz_deleteScene(&scene);
  return same ? 0 : 1;
}
