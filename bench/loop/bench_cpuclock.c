/* bench_cpuclock.c — what the loop's reads of its CPU clock cost (three per
 * tick, rt/src/loop/loop.c: CLOCK_THREAD_CPUTIME_ID, a system call on
 * most kernels since the vDSO serves only the global clocks), next to the
 * CLOCK_MONOTONIC read the loop already makes there (vDSO). The two are timed
 * in alternating rounds so that the machine's load falls on both alike; the
 * figure per call is the median round's, and the fastest round's beside it, in
 * wall time and in the process's CPU time (getrusage: user + system), which a
 * loaded machine does not inflate by preemption.
 *
 *     build/bench/loop/bench_cpuclock [--rounds 21] [--calls 100000]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t cpu_ns(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return ((int64_t)r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000000LL +
         ((int64_t)r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1000LL;
}

/* ns per call of clock_gettime(clock) over n calls: wall, and CPU in *cpu */
static double per_call(clockid_t clock, long n, double *cpu) {
  struct timespec ts;
  volatile long sink = 0;
  int64_t t0 = mono_ns(), c0 = cpu_ns();
  for (long i = 0; i < n; i++) {
    clock_gettime(clock, &ts);
    sink += ts.tv_nsec;
  }
  *cpu = (double)(cpu_ns() - c0) / (double)n;
  return (double)(mono_ns() - t0) / (double)n;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int rounds = 21;
  long calls = 100000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--calls")) calls = atol(argv[i + 1]);
  }
  if (rounds < 1 || rounds > 1000 || calls < 1) {
    fprintf(stderr, "bench_cpuclock: --rounds 1..1000, --calls >= 1\n");
    return 2;
  }
  double *w = malloc(4 * (size_t)rounds * sizeof *w);
  if (!w) return 1;
  double *mono = w, *cpu = w + rounds, *mono_c = w + 2 * rounds, *cpu_c = w + 3 * rounds;
  for (int r = 0; r < rounds; r++) {
    mono[r] = per_call(CLOCK_MONOTONIC, calls, &mono_c[r]);
    cpu[r] = per_call(CLOCK_THREAD_CPUTIME_ID, calls, &cpu_c[r]);
  }
  for (int k = 0; k < 4; k++) qsort(w + k * rounds, (size_t)rounds, sizeof *w, cmp);
  printf("clock_gettime per call, %d alternating rounds of %ld calls, median / fastest round:\n",
         rounds, calls);
  printf("                           wall ns            CPU ns (user + system)\n");
  printf("  CLOCK_MONOTONIC          %7.1f / %7.1f  %7.1f / %7.1f\n", mono[rounds / 2], mono[0],
         mono_c[rounds / 2], mono_c[0]);
  printf("  CLOCK_THREAD_CPUTIME_ID  %7.1f / %7.1f  %7.1f / %7.1f  (read three times per "
         "tick)\n", cpu[rounds / 2], cpu[0], cpu_c[rounds / 2], cpu_c[0]);
  free(w);
  return 0;
}
