/* bench_tick.c — what a khz-server tick's step costs, step by step, and why
 * the slow ones are slow (issue 26). The scene runs as the server's loop runs
 * it: the loop's timestep, sleeping bodies as the scene says, zero torque (the
 * safe command the server applies with no controller attached) or, with
 * --controller pid, bench_loop's PID on every actuator computed in-process.
 * Every step is taken by R + 2 copies of the data in turn, all in the same
 * state (the step is deterministic; their hashes are checked equal at the
 * end), each timed alone (CLOCK_MONOTONIC):
 *   - warm: the minimum over R copies, each stepped right after the previous
 *     one (code and model in cache): the cost of the step's content;
 *   - evicted: one copy stepped after EVICT KiB of other memory were written;
 *   - slept: one copy stepped right after the thread slept to the next
 *     deadline of an absolute schedule at the scene's rate, as the server's
 *     loop does (--no-sleep leaves it out and runs as fast as it can);
 *     --ahead US: a spare copy is stepped US before that deadline (code and
 *     model warmed, as a loop could do while it waits).
 * Prints the percentiles of the three, then what distinguishes the slowest
 * 1 % of warm steps from the middle ones (awake contact pairs and points,
 * free bodies awake, islands that fell asleep or woke), and the slowest
 * steps themselves.
 *
 *   bench_tick [--seconds S] [--controller none|pid] [--repeat R] [--evict KIB]
 *              [--no-sleep] [--ahead US] [--fifo PRIO] [--top N] [--from S] [SCENE]
 *   SCENE: default (the default), a .yaml, .urdf or .xml; 20 s by default.
 *   --from S: statistics over the steps from S seconds on (default 1: the
 *   arm's fall and the objects settling are left out).
 *   --fifo PRIO: SCHED_FIFO at PRIO and memory locked, as the server's loop.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "khz/khz.h"
#include "khz/load.h"
#include "khz/loop.h"

typedef struct {
  double warm, cold, slept; /* us */
  int pairs, points; /* awake contact pairs and their points after the step */
  int awake;         /* free roots awake after the step */
  int woke, slept_n; /* free roots that woke / fell asleep in the step */
} step_rec;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e6 * (double)t.tv_sec + 1e-3 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* nearest-rank percentile of v[0..n) (sorted) */
static double pct(const double *v, int n, double p) { return n ? v[(int)(p * (n - 1))] : 0; }

/* bench_loop's controller: PID to q0 + 0.2 sin(2 pi 0.25 t + 0.7 a) */
static void pid(const khzModel *m, khzData *d, int na, const int *dof, const double *q0,
                double *integ, double rate) {
  memset(d->tau, 0, (size_t)m->nv * sizeof(double));
  for (int a = 0; a < na; a++) {
    int k = dof[a], b = m->dof_body[k];
    double effort = m->dof_effort[k] > 0 ? m->dof_effort[k] : 50;
    double e = q0[a] + 0.2 * sin(2 * M_PI * 0.25 * d->time + 0.7 * a) - d->q[m->jnt_qadr[b]];
    integ[a] = fmax(-0.03, fmin(0.03, integ[a] + e / rate));
    d->tau[k] = 4 * effort * e - 0.1 * effort * d->qd[k] + 8 * effort * integ[a];
  }
}

/* the three ways a step is timed */
enum { WARM, EVICTED, SLEPT, NKIND };
static const char *const kind_name[NKIND] = {"warm", "evicted", "slept"};

static double *kind_of(step_rec *r, int k) { return k == WARM ? &r->warm : k == EVICTED ? &r->cold : &r->slept; }

int main(int argc, char **argv) {
  const char *path = "default", *ctl = "none";
  double seconds = 20, from = 1;
  int R = 3, top = 12, do_sleep = 1, fifo = 0;
  long ahead_us = 0;
  size_t evict_kib = 8192;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--controller") && i + 1 < argc) ctl = argv[++i];
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) R = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--evict") && i + 1 < argc) evict_kib = (size_t)atol(argv[++i]);
    else if (!strcmp(argv[i], "--top") && i + 1 < argc) top = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--from") && i + 1 < argc) from = atof(argv[++i]);
    else if (!strcmp(argv[i], "--fifo") && i + 1 < argc) fifo = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-sleep")) do_sleep = 0;
    else if (!strcmp(argv[i], "--ahead") && i + 1 < argc) ahead_us = atol(argv[++i]);
    else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: bench_tick [--seconds S] [--controller none|pid] [--repeat R] "
                      "[--evict KIB] [--no-sleep] [--ahead US] [--fifo PRIO] [--top N] [--from S] [SCENE]\n");
      return 2;
    } else path = argv[i];
  }
  int use_pid = !strcmp(ctl, "pid");
  if (!use_pid && strcmp(ctl, "none")) {
    fprintf(stderr, "bench_tick: --controller: expected none or pid, got '%s'\n", ctl);
    return 2;
  }
  if (R < 1 || R > 16 || !(seconds > 0)) {
    fprintf(stderr, "bench_tick: expected --repeat 1..16 and --seconds > 0\n");
    return 2;
  }
  char err[1024];
  khzScene scene;
  khzModel *m = khz_loadModel(path, &scene, err, sizeof err);
  if (!m) {
    fprintf(stderr, "bench_tick: %s\n", err);
    return 1;
  }
  double h = m->timestep, rate = 1 / h;
  int steps = (int)(seconds / h + 0.5), first = (int)(from / h + 0.5);
  if (steps < 1) steps = 1;
  if (first >= steps) first = 0;
  int n = R + 2 + (ahead_us > 0); /* R warm copies, the evicted one, the slept one, the spare */
  khzData *d[19];
  for (int k = 0; k < n; k++) d[k] = khz_makeData(m, 0);
  int na = khz_loop_actuators(m, NULL);
  int *dof = calloc((size_t)na + 1, sizeof(int));
  double *q0 = calloc((size_t)na + 1, sizeof(double));
  double *integ = calloc(19 * ((size_t)na + 1), sizeof(double));
  step_rec *rec = calloc((size_t)steps, sizeof *rec);
  size_t evict_n = evict_kib * 1024;
  unsigned char *evict = malloc(evict_n + 1);
  int *was = calloc((size_t)m->nbody, sizeof(int));
  for (int k = 0; k < n; k++)
    if (!d[k]) return 1;
  if (!dof || !q0 || !integ || !rec || !evict || !was) return 1;
  khz_loop_actuators(m, dof);
  for (int a = 0; a < na; a++) q0[a] = d[0]->q[m->jnt_qadr[m->dof_body[dof[a]]]];
  memset(evict, 1, evict_n);
  const char *fifo_said = "SCHED_OTHER";
  if (fifo > 0) {
    struct sched_param sp = {.sched_priority = fifo};
    fifo_said = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0 &&
                        mlockall(MCL_CURRENT | MCL_FUTURE) == 0
                    ? "SCHED_FIFO, memory locked"
                    : "SCHED_FIFO or mlockall NOT granted";
  }

  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (int s = 0; s < steps; s++) {
    step_rec *r = &rec[s];
    r->warm = 1e30;
    for (int k = 0; k < n; k++) {
      khzData *dk = d[k];
      if (use_pid) pid(m, dk, na, dof, q0, integ + (size_t)k * (na + 1), rate);
      else memset(dk->tau, 0, (size_t)m->nv * sizeof(double));
      memset(dk->xfrc, 0, 6 * (size_t)m->nbody * sizeof(double));
      if (k == R) /* evicted: other memory through the caches first */
        for (size_t i = 0; i < evict_n; i += 64) evict[i]++;
      if (k == R + 2) continue; /* the spare, stepped before the slept one */
      if (k == R + 1 && do_sleep) { /* slept: to the next deadline, as the loop */
        next.tv_nsec += (long)llround(h * 1e9);
        while (next.tv_nsec >= 1000000000L) next.tv_nsec -= 1000000000L, next.tv_sec++;
        if (ahead_us > 0) { /* the spare copy's step ahead_us before it warms code and model */
          struct timespec early = next;
          early.tv_nsec -= ahead_us * 1000L;
          while (early.tv_nsec < 0) early.tv_nsec += 1000000000L, early.tv_sec--;
          clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &early, NULL);
          khzData *sp = d[R + 2];
          if (use_pid) pid(m, sp, na, dof, q0, integ + (size_t)(R + 2) * (na + 1), rate);
          else memset(sp->tau, 0, (size_t)m->nv * sizeof(double));
          memset(sp->xfrc, 0, 6 * (size_t)m->nbody * sizeof(double));
          khz_stepWith(m, sp, h);
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
      }
      double t0 = now_us();
      khz_stepWith(m, dk, h);
      double t = now_us() - t0;
      if (k < R) r->warm = fmin(r->warm, t);
      else if (k == R) r->cold = t;
      else r->slept = t;
    }
    const khzData *d0 = d[0];
    r->pairs = d0->ncontact - d0->ncontact_asleep;
    for (int c = d0->ncontact_asleep; c < d0->ncontact; c++) r->points += d0->contact[c].npoint;
    for (int b = 1; b < m->nbody; b++) {
      if (!khz_bodyCanSleep(m, b)) continue;
      int sl = khz_bodySleeping(m, d0, b);
      r->awake += !sl;
      r->woke += was[b] && !sl;
      r->slept_n += !was[b] && sl;
      was[b] = sl;
    }
  }
  uint64_t h0 = khz_hashState(m, d[0]);
  int same = 1;
  for (int k = 1; k < n; k++) same &= khz_hashState(m, d[k]) == h0;

  /* percentiles over the steps from `first` on */
  int ns = steps - first;
  double *v = malloc((size_t)ns * sizeof(double));
  int *idx = malloc((size_t)ns * sizeof(int));
  if (!v || !idx) return 1;
  printf("bench_tick: %s, %d steps of %g s, controller %s, sleeping bodies %s, %s; statistics over "
         "steps %d..%d; warm = min of %d copies, evicted = after writing %zu KiB, slept = after "
         "sleeping to the next deadline; copies bit-identical: %s\n",
         path, steps, h, ctl, m->sleep.enabled ? "on" : "off", fifo_said, first, steps - 1, R,
         evict_kib, same ? "yes" : "NO");
  printf("| us per step | p50 | p90 | p99 | p99.9 | max |\n|---|---|---|---|---|---|\n");
  double p99w = 0, lo = 0, hi = 0;
  for (int k = 0; k < NKIND; k++) {
    if (k == SLEPT && !do_sleep) continue;
    for (int s = 0; s < ns; s++) v[s] = *kind_of(&rec[first + s], k);
    qsort(v, (size_t)ns, sizeof *v, cmp_double);
    printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", kind_name[k], pct(v, ns, .5), pct(v, ns, .9),
           pct(v, ns, .99), pct(v, ns, .999), v[ns - 1]);
    if (k == WARM) p99w = pct(v, ns, .99), lo = pct(v, ns, .4), hi = pct(v, ns, .6);
  }

  /* the slowest 1 % of warm steps against the middle ones (p40..p60) */
  double sum[2][7] = {{0}};
  int cnt[2] = {0};
  for (int s = first; s < steps; s++) {
    const step_rec *r = &rec[s];
    int g = r->warm >= p99w ? 1 : (r->warm >= lo && r->warm <= hi) ? 0 : -1;
    if (g < 0) continue;
    double x[7] = {r->warm, r->cold, r->slept, r->pairs, r->points, r->awake, r->woke + r->slept_n};
    for (int i = 0; i < 7; i++) sum[g][i] += x[i];
    cnt[g]++;
  }
  printf("\n| steps (means) | count | warm us | evicted us | slept us | awake pairs | their points | "
         "free bodies awake | sleep/wake events |\n|---|---|---|---|---|---|---|---|---|\n");
  const char *gname[2] = {"middle (p40-p60 warm)", "slowest 1 % warm"};
  for (int g = 0; g < 2; g++) {
    int k = cnt[g] ? cnt[g] : 1;
    printf("| %s | %d | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | %.3f |\n", gname[g], cnt[g],
           sum[g][0] / k, sum[g][1] / k, sum[g][2] / k, sum[g][3] / k, sum[g][4] / k, sum[g][5] / k,
           sum[g][6] / k);
  }

  /* the slowest steps, warm */
  for (int s = 0; s < ns; s++) idx[s] = first + s;
  for (int i = 0; i < top && i < ns; i++) /* partial selection sort: the top N */
    for (int j = i + 1; j < ns; j++)
      if (rec[idx[j]].warm > rec[idx[i]].warm) {
        int t = idx[i];
        idx[i] = idx[j], idx[j] = t;
      }
  printf("\n| step | t (s) | warm us | evicted us | slept us | awake pairs | points | awake | woke | slept |\n"
         "|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < top && i < ns; i++) {
    const step_rec *r = &rec[idx[i]];
    printf("| %d | %.3f | %.1f | %.1f | %.1f | %d | %d | %d | %d | %d |\n", idx[i], (idx[i] + 1) * h,
           r->warm, r->cold, r->slept, r->pairs, r->points, r->awake, r->woke, r->slept_n);
  }
  for (int k = 0; k < n; k++) khz_deleteData(&d[k]);
  free(dof), free(q0), free(integ), free(rec), free(evict), free(was), free(v), free(idx);
  khz_deleteModel(&m);
  khz_deleteScene(&scene);
  return same ? 0 : 1;
}
