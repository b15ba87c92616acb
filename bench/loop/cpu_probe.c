/* cpu_probe.c — a control for the soak's attribution of overruns (docs/soak.md):
 * a thread like the loop's (SCHED_FIFO at the same priority when permitted,
 * clock_nanosleep to an absolute 1 ms schedule) does a FIXED amount of work
 * each period and reads its CPU clock (CLOCK_THREAD_CPUTIME_ID) around it, as
 * the loop does around its ticks. Its work never needs more than a small part
 * of the period, so every period in which its CPU time exceeds the period is
 * time the kernel charged to it that was not its own: interrupts (without
 * IRQ_TIME_ACCOUNTING they are charged to the running thread) or a virtual
 * CPU descheduled by the host (charged as run time when the host reports no
 * steal time). Run beside the server, its count bounds how much of the
 * server's "own" overruns the machine can account for.
 *
 *     build/bench/loop/cpu_probe [--seconds 60] [--priority 80] [--iters 20000]
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define PERIOD_NS 1000000LL

static int64_t clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static double pct(const float *v, long n, double q) { return n ? v[(long)(q * (double)(n - 1))] : 0; }

int main(int argc, char **argv) {
  double seconds = 60;
  int prio = 80;
  long iters = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--priority")) prio = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--iters")) iters = atol(argv[i + 1]);
    else {
      fprintf(stderr, "cpu_probe: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  long n = (long)(seconds * 1e9 / PERIOD_NS);
  if (n < 1 || n > 100000000 || iters < 1) {
    fprintf(stderr, "cpu_probe: --seconds must give 1..1e8 periods, --iters >= 1\n");
    return 2;
  }
  float *cpu = malloc((size_t)n * sizeof *cpu), *wall = malloc((size_t)n * sizeof *wall);
  if (!cpu || !wall) return 1;

  char sched[96] = "SCHED_OTHER";
  struct sched_param sp = {.sched_priority = prio};
  if (prio > 0) {
    int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    snprintf(sched, sizeof sched, rc == 0 ? "SCHED_FIFO %d" : "SCHED_OTHER (SCHED_FIFO %d refused)",
             prio);
  }

  volatile double x = 1.0;
  long cpu_over = 0, wall_over = 0;
  int64_t next = clock_ns(CLOCK_MONOTONIC) + PERIOD_NS;
  for (long k = 0; k < n; k++) {
    struct timespec ts = {(time_t)(next / 1000000000LL), (long)(next % 1000000000LL)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
    int64_t t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < iters; i++) x = x * 1.0000001 + 1e-9; /* the fixed work */
    int64_t c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID), t1 = clock_ns(CLOCK_MONOTONIC);
    cpu[k] = (float)(c1 - c0), wall[k] = (float)(t1 - t0);
    cpu_over += c1 - c0 > PERIOD_NS;
    wall_over += t1 - t0 > PERIOD_NS;
    next += PERIOD_NS;
    int64_t now = clock_ns(CLOCK_MONOTONIC);
    if (now > next) next += ((now - next) / PERIOD_NS + 1) * PERIOD_NS; /* skip, never burst */
  }
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  qsort(cpu, (size_t)n, sizeof *cpu, cmp);
  qsort(wall, (size_t)n, sizeof *wall, cmp);
  printf("cpu_probe: %ld periods of 1 ms at %s, a fixed work of %ld iterations each\n", n, sched,
         iters);
  printf("  work CPU time   min %.1f  p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us\n", cpu[0] / 1e3,
         pct(cpu, n, 0.5) / 1e3, pct(cpu, n, 0.99) / 1e3, pct(cpu, n, 0.999) / 1e3, cpu[n - 1] / 1e3);
  printf("  work wall time  min %.1f  p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us\n", wall[0] / 1e3,
         pct(wall, n, 0.5) / 1e3, pct(wall, n, 0.99) / 1e3, pct(wall, n, 0.999) / 1e3,
         wall[n - 1] / 1e3);
  printf("  periods whose work CPU time / wall time exceeded the period: %ld / %ld\n", cpu_over,
         wall_over);
  printf("  context switches: %ld involuntary, %ld voluntary\n", ru.ru_nivcsw, ru.ru_nvcsw);
  free(cpu);
  free(wall);
  return 0;
}
