/* bench_hil.c — what the hardware-in-the-loop sensors and drives cost a tick
 * (issue 25, item 5; docs/hil.md): the default scene as it is, with every
 * kind of sensor on every place it fits (an encoder and a joint force-torque
 * sensor per joint, a gyro and an accelerometer on every arm link, a force-torque and a touch sensor under
 * every loose object, all with noise and latency), and with drives on every
 * joint as well. Each variant restarts from the same state for each round and
 * the rounds alternate, so that the machine's noise falls on all of them
 * alike; then the same after 2 s of settling, the loose objects asleep as
 * in a running khz-server, where a tick costs least and the sensors' share
 * is largest. Printed for each: median and p99 of a tick's work (command torques, drives,
 * step, sensor sampling), and the ratios to the plain scene. The server's
 * tick compute also includes publishing, which the sensors do not change
 * (they add their readings to the state): the ratios here are an upper bound
 * on the change of khz-server's tick compute.
 *
 * Last, the figure item 5 names: the server's own tick compute (wake-up to
 * state published, khzTickStats.compute_ns) of a khzLoop in realtime mode at
 * the scene's rate, the arm held by one PD command, each variant measured
 * for --loop-seconds from the reset and then after --settle seconds, the
 * variants alternating over --loop-rounds (--loop-fast: ticks back to back,
 * every state's compute still measured; less exposed to a loaded machine's
 * scheduling, but with caches warmer than at 1 kHz); beside it the same
 * ticks' CPU time (khzTickStats.cpu_ns, the loop thread's CPU clock over
 * the same window: time the thread was preempted is not in it, which on a
 * loaded machine moves the wall-clock p50 by more than the sensors do).
 * The machine's load is
 * printed at the start and the end, and the process's minor page faults
 * while each variant's loops ran (first touches of memory in the ticks).
 *
 * --instr K [--instr-reset]: only variant K's --ticks ticks (settled, or from
 * the reset) inside counted_ticks, for callgrind's instruction counts
 * (bench/hil_instr.sh prints them for the three variants).
 *
 * --hash: one FNV-1a hash over every published reading and its sample tick
 * after each of --ticks ticks from the reset, and then --ticks ticks after
 * 2 s, for the sensor variants: equal hashes mean a change to rt/src/hil
 * left every reading bit-identical (for the bench's seed and scene).
 *
 *   bench_hil [--rounds R] [--ticks T] [--loop-seconds S] [--settle S] [--loop-rounds N]
 *             [--loop-fast] [--instr K [--instr-reset]] [--hash]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "khz/hil.h"
#include "khz/khz.h"
#include "khz/load.h"
#include "khz/loop.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* the machine's load beside the figures (timings under load are noisy) */
static void print_load(const char *when) {
  char buf[128] = "?";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (!fgets(buf, sizeof buf, f)) snprintf(buf, sizeof buf, "?");
    fclose(f);
  }
  buf[strcspn(buf, "\n")] = 0;
  time_t now = time(NULL);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  printf("bench_hil: load at the %s (%s): %s\n", when, stamp, buf);
}

static const char *const objects[] = {"box1", "box2", "ball", "can", "capsule"};

/* the default scene's text with a hil section: sensors (and drives) */
static char *scene_text(const char *base, int drives) {
  size_t cap = strlen(base) + 16384, n = strlen(base);
  char *s = malloc(cap);
  if (!s) return NULL;
  memcpy(s, base, n + 1);
  n += (size_t)snprintf(s + n, cap - n, "\nhil:\n  seed: 1\n  sensors:\n");
  for (int j = 1; j <= 7; j++) {
    n += (size_t)snprintf(s + n, cap - n,
                          "    - {name: enc%d, type: encoder, joint: arm/joint%d, counts_per_rev: "
                          "16384, white: 1e-5, latency_ticks: 1}\n"
                          "    - {name: gyro%d, type: gyro, body: arm/link%d, white: 0.002, bias_walk: "
                          "0.0005, latency_ticks: 2}\n"
                          "    - {name: acc%d, type: accelerometer, body: arm/link%d, pos: [0, 0, "
                          "0.02], white: 0.02, bias_walk: 0.002, latency_ticks: 2}\n"
                          "    - {name: jft%d, type: joint_force_torque, joint: arm/joint%d, white: "
                          "0.05}\n",
                          j, j, j, j, j, j, j, j);
  }
  for (int o = 0; o < 5; o++)
    n += (size_t)snprintf(s + n, cap - n,
                          "    - {name: ft_%s, type: force_torque, body: %s, white: 0.05}\n"
                          "    - {name: touch_%s, type: touch, body: %s, white: 0.05}\n",
                          objects[o], objects[o], objects[o], objects[o]);
  if (drives) {
    n += (size_t)snprintf(s + n, cap - n, "  drives:\n");
    for (int j = 1; j <= 7; j++)
      n += (size_t)snprintf(s + n, cap - n,
                            "    - {joint: arm/joint%d, mode: torque, max_torque: 80, stall_torque: "
                            "120, no_load_speed: 300, gear: 100, lag: 0.002, coulomb: 0.5, "
                            "viscous: 0.1}\n",
                            j);
  }
  return s;
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) s[n] = 0;
  fclose(f);
  return s;
}

typedef struct variant {
  const char *name;
  khzModel *m;
  khzData *d;
  khzHil *hil;
  double *t;   /* rounds * ticks tick times, ns */
  double *c;   /* the loop's ticks' CPU time (khzTickStats.cpu_ns), ns */
  long n;
  long faults; /* the process's minor page faults while its loops ran */
  uint64_t tick;
} variant;

/* n ticks of a controller's PD holding the start pose, the drives, the step
 * and the sensors; timed (into x->t) or not */
static void run(variant *x, int n, int timed) {
  for (int i = 0; i < n; i++) {
    double t0 = now_ns();
    for (int j = 0; j < 7; j++) x->d->tau[j] = -20 * (x->d->q[j] - x->m->q0[j]) - 2 * x->d->qd[j];
    if (x->hil) khz_hilDrive(x->hil, x->m, x->d);
    khz_step(x->m, x->d);
    if (x->hil) khz_hilSample(x->hil, x->m, x->d, ++x->tick);
    if (timed) x->t[x->n++] = now_ns() - t0;
  }
}

/* FNV-1a over n bytes, continuing from h */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
  return h;
}

/* --hash: every reading and sample tick of variant x after each of n ticks */
static uint64_t readings_hash(variant *x, int n, uint64_t h) {
  for (int i = 0; i < n; i++) {
    run(x, 1, 0);
    h = fnv(h, khz_hilValues(x->hil), (size_t)khz_hilNValue(x->hil) * sizeof(double));
    for (int k = 0; k < khz_hilNSensor(x->hil); k++) {
      uint64_t t = khz_hilSampledAt(x->hil, k);
      h = fnv(h, &t, sizeof t);
    }
  }
  return h;
}

/* the ticks callgrind counts (--instr): valgrind --toggle-collect=counted_ticks */
__attribute__((noipa)) void counted_ticks(variant *x, int n);
__attribute__((noipa)) void counted_ticks(variant *x, int n) { run(x, n, 0); }

/* the loop's tick compute of variant x: a khzLoop in realtime mode holding
 * the arm with one PD command (no watchdog), settle seconds of simulated
 * time skipped, then each state's compute_ns for seconds; appended to t */
static long minor_faults(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_minflt;
}

static int loop_compute(variant *x, double rate, int mode, double settle, double seconds,
                        double *t, double *cpu, long *n, long cap) {
  khzLoopConfig cfg;
  char err[256];
  khz_loop_defaultConfig(&cfg);
  cfg.rate_hz = rate;
  cfg.mode = mode;
  cfg.watchdog_s = 0;
  cfg.hil = x->hil;
  cfg.rt_priority = 0; /* like the tests: unprivileged, and no memory locking under ASan */
  cfg.lock_memory = 0;
  khzLoop *L = khz_loop_new(x->m, &cfg, err, sizeof err);
  if (!L) {
    fprintf(stderr, "bench_hil: %s\n", err);
    return -1;
  }
  int dof[64], na = khz_loop_actuators(x->m, dof);
  khzCommand *c = khz_loop_commandBegin(L);
  c->seq = 1, c->state_seq = 0, c->kind = KHZ_CMD_PD, c->has_gains = 1, c->client = 1;
  c->recv_ns = khz_loop_now();
  for (int i = 0; i < na && i < 64; i++) {
    int b = x->m->dof_body[dof[i]];
    c->q_target[i] = x->m->q0[x->m->jnt_qadr[b]];
    c->qd_target[i] = c->tau_ff[i] = 0;
    c->kp[i] = 20, c->kd[i] = 2;
  }
  khz_loop_commandCommit(L);
  long faults0 = minor_faults(); /* the loop's own setup is behind this */
  for (;;) {
    const khzLoopState *st = khz_loop_peekState(L);
    if (!st) {
      struct timespec ts = {0, 200000};
      nanosleep(&ts, NULL);
      continue;
    }
    double time = st->sim_time;
    if (time >= settle && *n < cap && st->seq > 0) {
      cpu[*n] = (double)st->stats.cpu_ns;
      t[(*n)++] = (double)st->stats.compute_ns;
    }
    khz_loop_releaseState(L);
    if (time >= settle + seconds) break;
  }
  x->faults += minor_faults() - faults0;
  khz_loop_destroy(&L);
  return 0;
}

int main(int argc, char **argv) {
  int rounds = 30, ticks = 1000, loop_rounds = 3, loop_mode = KHZ_MODE_REALTIME;
  int instr = -1, instr_reset = 0, hash = 0;
  double loop_seconds = 3, settle = 2;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ticks") && i + 1 < argc) ticks = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--loop-seconds") && i + 1 < argc) loop_seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--settle") && i + 1 < argc) settle = atof(argv[++i]);
    else if (!strcmp(argv[i], "--loop-rounds") && i + 1 < argc) loop_rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--loop-fast")) loop_mode = KHZ_MODE_FAST;
    else if (!strcmp(argv[i], "--instr") && i + 1 < argc) instr = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--instr-reset")) instr_reset = 1;
    else if (!strcmp(argv[i], "--hash")) hash = 1;
    else {
      fprintf(stderr, "usage: bench_hil [--rounds R] [--ticks T] [--loop-seconds S] [--settle S] "
                      "[--loop-rounds N] [--loop-fast] [--instr K [--instr-reset]] [--hash]\n");
      return 2;
    }
  }
  if (rounds < 1 || ticks < 1 || loop_rounds < 1 || !(loop_seconds >= 0) || !(settle >= 0))
    return 2;
  double rate = 1000;
  char *base = read_file(KHZ_SOURCE_ROOT "/scenes/default.yaml");
  if (!base) {
    fprintf(stderr, "bench_hil: cannot read scenes/default.yaml\n");
    return 1;
  }
  variant v[3] = {{.name = "default scene"}, {.name = "+ 38 sensors"}, {.name = "+ 38 sensors, 7 drives"}};
  for (int k = 0; k < 3; k++) {
    char err[512];
    khzScene sc;
    char *text = k ? scene_text(base, k == 2) : strdup(base);
    if (!text || khz_loadSceneString(&sc, text, "bench", KHZ_SOURCE_ROOT "/scenes", err, sizeof err)) {
      fprintf(stderr, "bench_hil: %s\n", err);
      return 1;
    }
    free(text);
    v[k].m = khz_compile(sc.spec, err, sizeof err);
    if (!v[k].m) {
      fprintf(stderr, "bench_hil: %s\n", err);
      return 1;
    }
    v[k].d = khz_makeData(v[k].m, 0);
    rate = sc.rate_hz;
    if (sc.hil.nsensor) {
      v[k].hil = khz_hilCreate(v[k].m, sc.hil.sensor, sc.hil.nsensor, sc.hil.drive, sc.hil.ndrive,
                               sc.hil.seed, 1.0 / sc.rate_hz, err, sizeof err);
      if (!v[k].hil) {
        fprintf(stderr, "bench_hil: %s\n", err);
        return 1;
      }
    }
    khz_deleteScene(&sc);
    v[k].t = malloc(sizeof(double) * (size_t)rounds * (size_t)ticks);
  }
  free(base);

  /* one variant's ticks for callgrind: settled (or from the reset), then
   * --ticks ticks inside counted_ticks */
  if (instr >= 0 && instr < 3) {
    variant *x = &v[instr];
    khz_resetData(x->m, x->d);
    khz_kinematics(x->m, x->d);
    if (x->hil) khz_hilReset(x->hil, x->m, x->d);
    if (!instr_reset) run(x, 2000, 0);
    counted_ticks(x, ticks);
    printf("bench_hil: %s, %d ticks %s\n", x->name, ticks, instr_reset ? "from the reset" : "settled");
    return 0;
  }

  if (hash) {
    for (int k = 1; k < 3; k++) {
      variant *x = &v[k];
      khz_resetData(x->m, x->d);
      khz_kinematics(x->m, x->d);
      khz_hilReset(x->hil, x->m, x->d);
      x->tick = 0;
      uint64_t h0 = readings_hash(x, ticks, 0xcbf29ce484222325ull);
      run(x, 2000 - ticks > 0 ? 2000 - ticks : 0, 0);
      uint64_t h1 = readings_hash(x, ticks, h0);
      printf("bench_hil: %s: readings hash %016llx after %d ticks from the reset, %016llx after "
             "%d more from 2 s\n",
             x->name, (unsigned long long)h0, ticks, (unsigned long long)h1, ticks);
    }
    return 0;
  }

  print_load("start");
  /* from the reset (the objects awake and settling), then after 2 s of
   * settling: the loose objects asleep, as in a running khz-server */
  for (int settled = 0; settled <= 1; settled++) {
    for (int k = 0; k < 3; k++) {
      v[k].n = 0;
      khz_resetData(v[k].m, v[k].d);
      khz_kinematics(v[k].m, v[k].d);
      if (v[k].hil) khz_hilReset(v[k].hil, v[k].m, v[k].d);
      v[k].tick = 0;
      if (settled) run(&v[k], 2000, 0);
    }
    for (int r = 0; r < rounds; r++)
      for (int kk = 0; kk < 3; kk++) {
        variant *x = &v[(r + kk) % 3]; /* alternate the order */
        if (!settled) {
          khz_resetData(x->m, x->d);
          khz_kinematics(x->m, x->d);
          if (x->hil) khz_hilReset(x->hil, x->m, x->d);
          x->tick = 0;
        }
        run(x, ticks, 1);
      }
    printf("bench_hil: %d rounds of %d ticks, %s; tick = torques, drives, step, sensors\n", rounds,
           ticks,
           settled ? "continuing after 2 s (the loose objects asleep, as in khz-server)"
                   : "each variant from the reset state (the objects awake)");
    printf("%-26s %10s %10s %10s %10s\n", "variant", "p50 us", "p99 us", "p50 ratio", "p99 ratio");
    double p50_0 = 0, p99_0 = 0;
    for (int k = 0; k < 3; k++) {
      qsort(v[k].t, (size_t)v[k].n, sizeof(double), cmp);
      double p50 = v[k].t[v[k].n / 2] / 1e3, p99 = v[k].t[(long)(0.99 * (double)(v[k].n - 1))] / 1e3;
      if (k == 0) p50_0 = p50, p99_0 = p99;
      printf("%-26s %10.2f %10.2f %10.3f %10.3f\n", v[k].name, p50, p99, p50 / p50_0, p99 / p99_0);
    }
  }
  /* the server's tick compute, the variants alternating: from the reset
   * (the first --loop-seconds, the objects awake), then settled */
  for (int phase = 0; loop_seconds > 0 && phase < 2; phase++) {
    double skip = phase ? settle : 0;
    if (phase && !(settle > 0)) break;
    long cap = (long)((loop_seconds + 1) * rate * loop_rounds) + 16;
    for (int k = 0; k < 3; k++) {
      free(v[k].t);
      free(v[k].c);
      v[k].t = malloc(sizeof(double) * (size_t)cap);
      v[k].c = malloc(sizeof(double) * (size_t)cap);
      v[k].n = 0;
      v[k].faults = 0;
      if (!v[k].t || !v[k].c) return 1;
    }
    for (int r = 0; r < loop_rounds; r++)
      for (int kk = 0; kk < 3; kk++) {
        variant *x = &v[(r + kk) % 3];
        if (loop_compute(x, rate, loop_mode, skip, loop_seconds, x->t, x->c, &x->n, cap)) return 1;
      }
    printf("bench_hil: khzLoop %s at %g Hz, %d rounds of %g s after %g s (%s); "
           "tick compute = wake-up to state published, as khz-server reports it\n",
           khz_loop_modeName(loop_mode), rate, loop_rounds, loop_seconds, skip,
           phase ? "settled, the loose objects asleep" : "from the reset, the objects awake");
    printf("%-26s %10s %10s %10s %10s %14s %10s %10s\n", "variant", "p50 us", "p99 us",
           "p50 ratio", "p99 ratio", "faults/round", "cpu p50", "cpu ratio");
    double p50_0 = 0, p99_0 = 0, c50_0 = 0;
    for (int k = 0; k < 3; k++) {
      if (v[k].n == 0) continue;
      qsort(v[k].t, (size_t)v[k].n, sizeof(double), cmp);
      qsort(v[k].c, (size_t)v[k].n, sizeof(double), cmp);
      double p50 = v[k].t[v[k].n / 2] / 1e3, p99 = v[k].t[(long)(0.99 * (double)(v[k].n - 1))] / 1e3;
      double c50 = v[k].c[v[k].n / 2] / 1e3;
      if (k == 0) p50_0 = p50, p99_0 = p99, c50_0 = c50;
      printf("%-26s %10.2f %10.2f %10.3f %10.3f %14.1f %10.2f %10.3f\n", v[k].name, p50, p99,
             p50 / p50_0, p99 / p99_0, (double)v[k].faults / loop_rounds, c50, c50 / c50_0);
    }
  }
  print_load("end");
  printf("bench_hil: instructions per tick (independent of the load): bench/hil_instr.sh\n");
  for (int k = 0; k < 3; k++) {
    khz_hilFree(&v[k].hil);
    khz_deleteData(&v[k].d);
    khz_deleteModel(&v[k].m);
    free(v[k].t);
    free(v[k].c);
  }
  return 0;
}
