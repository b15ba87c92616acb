/* bench_loop.c — the real-time server benchmark: the default scene at 1 kHz
 * in realtime mode, a controller answering every state (a PID on the arm's
 * joints, torques through the wire), for --seconds (60 by default). It prints
 * the loop's wake-up lateness p50 / p99 / p99.9 / max, compute time, overruns,
 * the share of commands applied at the tick right after their state, and the
 * command latency and response percentiles; next to them, on the same machine
 * and for the same duration:
 *   - cyclictest (rt-tests) at the same interval and priority: the lateness
 *     floor of the machine for a thread that does nothing;
 *   - a raw ZeroMQ ping-pong over the same transport and message sizes (PUB
 *     of a state-sized message, answered on DEALER -> ROUTER): the transport
 *     floor of the controller's round trip.
 * so that the server's own cost shows as a ratio. The three runs are
 * sequential so that they do not disturb each other.
 *
 * --rate HZ runs the server at HZ ticks per second (h = 1 / HZ; the issue's
 * haptic rate is 10000) and cyclictest at the same interval; --spin-us US
 * sets the server's spin_us (wake that much before each deadline and busy-wait
 * to it; cyclictest, which always sleeps, is then the floor of a loop that
 * does not spin). --no-cpu-clock sets the server's cpu_clock to false (no
 * CPU-clock reads in the tick; overruns counted but not attributed).
 *
 * --controller none leaves the server without commands, as khz-server runs
 * alone (bench/realtime_scenes.sh): the watchdog's zero torque, so the
 * default scene's arm falls onto the table and rests there; the client only
 * reads the states. --trace N records every tick's phases in the loop
 * (khzLoopConfig.trace: CLOCK_MONOTONIC after each phase, the CPU it ran on,
 * the contacts) and prints their percentiles, what the slowest 1 % of ticks
 * (by compute time) spent where against the middle ones, and the N slowest
 * ticks. --trace-csv FILE also writes every traced tick (one line each, the
 * fields of khzLoopTraceTick) for analysis elsewhere.
 *
 * --state-ring N sets the server's state_ring (0: its default, 100 ms of
 * states), --pub-hwm N its pub_hwm; the I/O thread's line says how full the ring got (the most states
 * taken at one wake-up) and its longest gap between wake-ups.
 *
 * --cpu N pins the loop thread to CPU N (cyclictest then runs with -a N); the
 * server keeps its I/O thread and libzmq's threads off that CPU, and so does
 * the controller here (this thread and its libzmq threads) unless
 * --controller-anywhere: a busy I/O side on the loop's CPU delays the
 * loop's own timer interrupt (docs/server.md, "Haptic rate: what the loop's
 * CPU runs").
 *
 *   bench_loop [--seconds S] [--rate HZ] [--spin-us US] [--transport tcp|ipc] [--cpu N]
 *              [--controller-anywhere] [--no-cyclictest] [--no-cpu-clock]
 *              [--controller pid|none] [--trace N] [--trace-csv FILE]
 *              [--state-ring N] [--pub-hwm N]
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "khz/client.h"
#include "khz/khz.h"
#include "khz/loop.h"
#include "khz_msgs/v1/control.pb-c.h"
#include "server.h"
#include "settings.h"

typedef struct pct {
  double p50, p99, p999, max; /* us */
  long n;
  int ok;
} pct;

static double now_s(void) { return (double)khz_client_now() / 1e9; }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static pct percentiles(double *v, long n) {
  pct p = {0};
  if (n <= 0) return p;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  p.p50 = v[(long)(0.5 * (double)(n - 1))];
  p.p99 = v[(long)(0.99 * (double)(n - 1))];
  p.p999 = v[(long)(0.999 * (double)(n - 1))];
  p.max = v[n - 1];
  p.n = n;
  p.ok = 1;
  return p;
}

static pct from_hist(const Khz__V1__Histogram *h) {
  pct p = {h->p50 / 1e3, h->p99 / 1e3, h->p999 / 1e3, h->max / 1e3, (long)h->count, h->count > 0};
  return p;
}

/* asks for SCHED_FIFO for the calling thread; 1 when granted */
static int fifo(int prio) {
  struct sched_param sp = {.sched_priority = prio};
  return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
}

/* ------------------------------------------------------------ cyclictest -- */

/* cyclictest for `seconds` at `interval` us; percentiles from its histogram */
static pct run_cyclictest(int seconds, int interval, int prio, int cpu, char *note, size_t notesz) {
  pct p = {0};
  char cmd[256], aff[32] = "";
  if (cpu >= 0) snprintf(aff, sizeof aff, " -a %d", cpu);
  snprintf(cmd, sizeof cmd, "cyclictest -m -p %d -i %d -D %d -q -h 20000%s 2>&1", prio, interval,
           seconds, aff);
  FILE *f = popen(cmd, "r");
  if (!f) {
    snprintf(note, notesz, "cannot run cyclictest");
    return p;
  }
  static long hist[20001];
  long total = 0, over = 0, maxv = -1, bin, count;
  char line[256];
  memset(hist, 0, sizeof hist);
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "%ld %ld", &bin, &count) == 2 && line[0] != '#' && bin >= 0 && bin <= 20000) {
      hist[bin] += count;
      total += count;
    } else if (sscanf(line, "# Max Latencies: %ld", &bin) == 1) {
      maxv = bin;
    } else if (sscanf(line, "# Histogram Overflows: %ld", &bin) == 1) {
      over = bin;
    } else if (strstr(line, "rror") || strstr(line, "nable")) {
      snprintf(note, notesz, "%.*s", (int)strcspn(line, "\n"), line);
    }
  }
  int rc = pclose(f);
  if (rc != 0 || total == 0) {
    if (!note[0]) snprintf(note, notesz, "cyclictest failed (exit %d)", rc);
    return p;
  }
  total += over;
  double q[3] = {0.5, 0.99, 0.999}, *out[3] = {&p.p50, &p.p99, &p.p999};
  for (int k = 0; k < 3; k++) {
    long rank = (long)ceil(q[k] * (double)total), seen = 0;
    *out[k] = (double)maxv;
    for (long b = 0; b <= 20000; b++) {
      seen += hist[b];
      if (seen >= rank) {
        *out[k] = (double)b;
        break;
      }
    }
  }
  p.max = (double)maxv;
  p.n = total;
  p.ok = 1;
  return p;
}

/* ---------------------------------------------------- raw zmq ping-pong -- */

typedef struct pong_args {
  const char *pub_ep, *router_ep;
  size_t state_bytes;
  int count;
  double *rtt;
  int prio;
} pong_args;

/* the "server" side: every 1 ms a state-sized PUB message, then wait for the
 * command-sized answer on the ROUTER and time the round trip */
static void *ping_server(void *arg) {
  pong_args *a = arg;
  if (a->prio > 0) fifo(a->prio);
  void *ctx = zmq_ctx_new(), *pub = zmq_socket(ctx, ZMQ_PUB), *router = zmq_socket(ctx, ZMQ_ROUTER);
  int zero = 0;
  zmq_setsockopt(pub, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof zero);
  zmq_bind(pub, a->pub_ep);
  zmq_bind(router, a->router_ep);
  uint8_t *msg = calloc(1, a->state_bytes), id[256], buf[4096];
  zmq_pollitem_t it = {router, 0, ZMQ_POLLIN, 0};
  /* until the client is there: it answers a hello */
  for (int i = 0; i < 5000; i++) {
    zmq_send(pub, "state", 5, ZMQ_SNDMORE);
    zmq_send(pub, msg, a->state_bytes, 0);
    if (zmq_poll(&it, 1, 1) > 0) {
      zmq_recv(router, id, sizeof id, 0);
      zmq_recv(router, buf, sizeof buf, 0);
      break;
    }
  }
  double next = now_s();
  for (int k = 0; k < a->count; k++) {
    next += 1e-3;
    double wait = next - now_s();
    if (wait > 0) {
      struct timespec ts = {0, (long)(wait * 1e9)};
      nanosleep(&ts, NULL);
    }
    double t0 = now_s();
    zmq_send(pub, "state", 5, ZMQ_SNDMORE);
    zmq_send(pub, msg, a->state_bytes, 0);
    a->rtt[k] = -1;
    if (zmq_poll(&it, 1, 100) > 0) {
      zmq_recv(router, id, sizeof id, 0);
      zmq_recv(router, buf, sizeof buf, 0);
      a->rtt[k] = (now_s() - t0) * 1e6;
    }
  }
  zmq_send(pub, "state", 5, ZMQ_SNDMORE);
  zmq_send(pub, "", 0, 0); /* the end */
  free(msg);
  zmq_close(pub);
  zmq_close(router);
  zmq_ctx_term(ctx);
  return NULL;
}

static pct run_pingpong(const char *transport, size_t state_bytes, size_t cmd_bytes, int count,
                        int prio) {
  char pub_ep[128], router_ep[128];
  if (!strcmp(transport, "ipc")) {
    snprintf(pub_ep, sizeof pub_ep, "ipc:///tmp/khz-bench-%d-pub", (int)getpid());
    snprintf(router_ep, sizeof router_ep, "ipc:///tmp/khz-bench-%d-router", (int)getpid());
  } else {
    snprintf(pub_ep, sizeof pub_ep, "tcp://127.0.0.1:5620");
    snprintf(router_ep, sizeof router_ep, "tcp://127.0.0.1:5621");
  }
  pong_args a = {pub_ep, router_ep, state_bytes, count, calloc((size_t)count, sizeof(double)), prio};
  pthread_t t;
  pthread_create(&t, NULL, ping_server, &a);
  void *ctx = zmq_ctx_new(), *sub = zmq_socket(ctx, ZMQ_SUB), *dealer = zmq_socket(ctx, ZMQ_DEALER);
  int zero = 0;
  zmq_setsockopt(sub, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(dealer, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "state", 5);
  zmq_connect(sub, pub_ep);
  zmq_connect(dealer, router_ep);
  uint8_t *cmd = calloc(1, cmd_bytes), *buf = malloc(state_bytes + 16), topic[16];
  for (;;) {
    zmq_recv(sub, topic, sizeof topic, 0);
    int n = zmq_recv(sub, buf, state_bytes + 16, 0);
    zmq_send(dealer, cmd, cmd_bytes, 0);
    if (n == 0) break;
  }
  pthread_join(t, NULL);
  long n = 0;
  for (int k = 0; k < count; k++)
    if (a.rtt[k] >= 0) a.rtt[n++] = a.rtt[k];
  pct p = percentiles(a.rtt, n);
  free(a.rtt);
  free(cmd);
  free(buf);
  zmq_close(sub);
  zmq_close(dealer);
  zmq_ctx_term(ctx);
  return p;
}

/* ------------------------------------------------------------ the server -- */

typedef struct srv_run {
  khzServer *srv;
} srv_run;

static void *serve(void *arg) {
  khz_server_run(((srv_run *)arg)->srv);
  return NULL;
}

static void row(const char *name, pct p, const char *what) {
  if (!p.ok) {
    printf("  %-24s %8s %8s %8s %8s   %s\n", name, "-", "-", "-", "-", what);
    return;
  }
  printf("  %-24s %8.1f %8.1f %8.1f %8.1f   %s\n", name, p.p50, p.p99, p.p999, p.max, what);
}

/* ---------------------------------------------------------- the trace -- */

/* the phases of a traced tick, in order: each one's own length (us) */
enum { PH_CLOCK, PH_COMMAND, PH_STEP, PH_DONE, PH_COPY, PH_STATS, PH_WAKE, NPHASE };
static const char *const phase_name[NPHASE] = {"CPU clock read", "command, wrenches", "step",
                                               "to state complete", "copy into the ring",
                                               "statistics", "wake the I/O thread"};

static void phases(const khzLoopTraceTick *e, double out[NPHASE]) {
  int32_t mark[NPHASE] = {e->clock_ns, e->command_ns, e->step_ns, e->done_ns,
                          e->copy_ns,  e->stats_ns,   e->wake_ns};
  int32_t prev = 0;
  for (int k = 0; k < NPHASE; k++) {
    out[k] = (mark[k] - prev) / 1e3;
    prev = mark[k];
  }
}

static const khzLoopTraceTick *sort_ticks;
static int by_compute_desc(const void *a, const void *b) {
  int32_t x = sort_ticks[*(const size_t *)a].done_ns, y = sort_ticks[*(const size_t *)b].done_ns;
  return x > y ? -1 : x < y;
}

/* percentiles of each phase, then the slowest 1 % of ticks by compute time
 * against the middle ones (p40..p60), then the `top` slowest ticks; the ticks
 * from state from_seq on */
static void print_trace(const khzLoopTrace *t, uint64_t from_seq, int top, double rate) {
  size_t n = atomic_load(&t->n), first = 0;
  const khzLoopTraceTick *e = t->tick;
  while (first < n && e[first].seq < from_seq) first++;
  size_t m = n - first;
  if (m < 100) {
    printf("\n  trace: %zu ticks recorded, too few\n", m);
    return;
  }
  double *v = malloc(m * sizeof(double));
  size_t *order = malloc(m * sizeof(size_t));
  if (!v || !order) return;
  printf("\n  trace of %zu ticks (from state %llu), each phase's own time (us)\n", m,
         (unsigned long long)from_seq);
  printf("  %-24s %8s %8s %8s %8s\n", "", "p50", "p99", "p99.9", "max");
  for (int k = 0; k < NPHASE + 2; k++) {
    for (size_t i = 0; i < m; i++) {
      double ph[NPHASE];
      phases(&e[first + i], ph);
      v[i] = k < NPHASE ? ph[k] : k == NPHASE ? e[first + i].done_ns / 1e3 : e[first + i].cpu_ns / 1e3;
    }
    row(k < NPHASE ? phase_name[k] : k == NPHASE ? "compute (wake->complete)" : "its CPU time",
        percentiles(v, (long)m), "");
  }

  /* the slowest 1 % by compute time against the middle (p40..p60) */
  for (size_t i = 0; i < m; i++) order[i] = first + i;
  sort_ticks = e;
  qsort(order, m, sizeof *order, by_compute_desc);
  size_t n99 = m / 100 ? m / 100 : 1, mid0 = (size_t)(0.4 * (double)m), mid1 = (size_t)(0.6 * (double)m);
  enum { NCOL = NPHASE + 7 };
  static const char *const extra[7] = {"compute", "its CPU time", "lateness", "idle before it",
                                       "woke on another CPU", "moved CPU mid-tick", "awake contact pairs"};
  double sum[2][NCOL] = {{0}};
  long cnt[2] = {0};
  for (size_t r = 0; r < m; r++) {
    int g = r < n99 ? 1 : (r >= mid0 && r < mid1) ? 0 : -1;
    if (g < 0) continue;
    size_t i = order[r];
    const khzLoopTraceTick *x = &e[i], *prev = i > 0 ? &e[i - 1] : NULL;
    if (prev && prev->seq + 1 != x->seq) prev = NULL; /* ticks missed between them */
    double ph[NPHASE];
    phases(x, ph);
    for (int k = 0; k < NPHASE; k++) sum[g][k] += ph[k];
    sum[g][NPHASE] += x->done_ns / 1e3;
    sum[g][NPHASE + 1] += x->cpu_ns / 1e3;
    sum[g][NPHASE + 2] += x->late_ns / 1e3;
    if (prev) /* from the previous tick's end to this wake-up */
      sum[g][NPHASE + 3] +=
          (double)(x->sched_ns + x->late_ns - (prev->sched_ns + prev->late_ns + prev->wake_ns)) / 1e3;
    sum[g][NPHASE + 4] += prev && prev->cpu_done != x->cpu_wake;
    sum[g][NPHASE + 5] += x->cpu_wake != x->cpu_done;
    sum[g][NPHASE + 6] += x->pairs;
    cnt[g]++;
  }
  printf("\n  %-28s %14s %14s\n", "ticks, means (us; shares)", "middle p40-60", "slowest 1 %");
  for (int k = 0; k < NCOL; k++)
    printf("  %-28s %14.2f %14.2f\n", k < NPHASE ? phase_name[k] : extra[k - NPHASE],
           cnt[0] ? sum[0][k] / (double)cnt[0] : 0, cnt[1] ? sum[1][k] / (double)cnt[1] : 0);
  printf("  %-28s %14ld %14ld\n", "ticks", cnt[0], cnt[1]);

  /* khz's own overruns (the state after the next deadline, the loop's CPU time
   * since the previous state over the period: schedule_next's rule), each
   * counted in the phase that took the most of it; "the wake call before" is
   * the previous tick's wake of the I/O thread (in between_ns) */
  double period = 1e9 / rate;
  long own = 0, where[NPHASE + 1] = {0};
  for (size_t i = first; i < n; i++) {
    const khzLoopTraceTick *x = &e[i];
    if (x->late_ns + x->done_ns <= period || x->cpu_ns + x->between_ns <= period) continue;
    double ph[NPHASE], best = -1;
    int at = 0;
    phases(x, ph);
    for (int k = 0; k <= PH_DONE; k++)
      if (ph[k] > best) best = ph[k], at = k;
    if (i > 0 && e[i - 1].seq + 1 == x->seq && (e[i - 1].wake_ns - e[i - 1].stats_ns) / 1e3 > best)
      at = NPHASE;
    where[at]++;
    own++;
  }
  printf("\n  khz's own overruns in the trace: %ld; where most of each one's time went:", own);
  for (int k = 0; k <= NPHASE; k++)
    if (where[k]) printf(" %s %ld,", k < NPHASE ? phase_name[k] : "the wake call before", where[k]);
  printf("\n");

  if (top > 0) {
    printf("\n  slowest ticks: seq, compute, CPU time | each phase (us) | CPU at wake/end, awake pairs\n");
    for (int r = 0; r < top && (size_t)r < m; r++) {
      const khzLoopTraceTick *x = &e[order[r]];
      double ph[NPHASE];
      phases(x, ph);
      printf("  %8llu %8.1f %8.1f |", (unsigned long long)x->seq, x->done_ns / 1e3, x->cpu_ns / 1e3);
      for (int k = 0; k < NPHASE; k++) printf(" %7.1f", ph[k]);
      printf(" | %d/%d %d\n", x->cpu_wake, x->cpu_done, x->pairs);
    }
  }
  free(v);
  free(order);
}


/* every traced tick, one CSV line each */
static void write_trace(const khzLoopTrace *t, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "bench_loop: --trace-csv: cannot write %s\n", path);
    return;
  }
  fprintf(f, "seq,sched_ns,late_ns,clock_ns,command_ns,step_ns,done_ns,copy_ns,stats_ns,wake_ns,cpu_ns,"
             "between_ns,cpu_wake,cpu_done,pairs,points\n");
  size_t n = atomic_load(&t->n);
  for (size_t i = 0; i < n; i++) {
    const khzLoopTraceTick *e = &t->tick[i];
    fprintf(f, "%llu,%lld,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d\n", (unsigned long long)e->seq,
            (long long)e->sched_ns, e->late_ns, e->clock_ns, e->command_ns, e->step_ns, e->done_ns,
            e->copy_ns, e->stats_ns, e->wake_ns, e->cpu_ns, e->between_ns, e->cpu_wake, e->cpu_done,
            e->pairs, e->points);
  }
  fclose(f);
}

int main(int argc, char **argv) {
  int seconds = 60, cpu = -1, cyclic = 1;
  double rate = 1000;
  int spin_us = 0, cpu_clock = 1, ctl_anywhere = 0;
  const char *transport = "tcp", *controller = "pid";
  int trace_top = -1; /* -1: no trace */
  int state_ring = -1, pub_hwm = -1; /* -1: the server's defaults */
  const char *trace_csv = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--transport") && i + 1 < argc) transport = argv[++i];
    else if (!strcmp(argv[i], "--cpu") && i + 1 < argc) cpu = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rate") && i + 1 < argc) rate = atof(argv[++i]);
    else if (!strcmp(argv[i], "--spin-us") && i + 1 < argc) spin_us = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-cyclictest")) cyclic = 0;
    else if (!strcmp(argv[i], "--no-cpu-clock")) cpu_clock = 0;
    else if (!strcmp(argv[i], "--controller-anywhere")) ctl_anywhere = 1;
    else if (!strcmp(argv[i], "--controller") && i + 1 < argc) controller = argv[++i];
    else if (!strcmp(argv[i], "--trace") && i + 1 < argc) trace_top = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--trace-csv") && i + 1 < argc) trace_csv = argv[++i];
    else if (!strcmp(argv[i], "--state-ring") && i + 1 < argc) state_ring = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--pub-hwm") && i + 1 < argc) pub_hwm = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_loop [--seconds S] [--rate HZ] [--spin-us US] [--transport tcp|ipc] "
                      "[--cpu N] [--controller-anywhere] [--no-cyclictest] [--no-cpu-clock] "
                      "[--controller pid|none] [--trace N] [--trace-csv FILE] [--state-ring N] [--pub-hwm N]\n");
      return 2;
    }
  }
  int commanding = !strcmp(controller, "pid");
  if (!commanding && strcmp(controller, "none")) {
    fprintf(stderr, "bench_loop: --controller: expected pid or none, got '%s'\n", controller);
    return 2;
  }
  if (seconds < 2) seconds = 2;
  if (!(rate >= KHZ_RATE_MIN_HZ && rate <= KHZ_RATE_MAX_HZ)) {
    fprintf(stderr, "bench_loop: --rate %g: expected %d to %d ticks per second\n", rate, KHZ_RATE_MIN_HZ,
            KHZ_RATE_MAX_HZ);
    return 2;
  }

  /* the server, in this process, with its real-time settings */
  khzServerConfig cfg;
  char err[1024];
  khz_settings_defaults(&cfg);
  cfg.cpu = cpu;
  cfg.rate_hz = rate;
  cfg.spin_us = spin_us;
  cfg.cpu_clock = cpu_clock;
  cfg.log_level = 2;
  cfg.watchdog_ms = 100;
  if (state_ring >= 0) cfg.state_ring = state_ring;
  if (pub_hwm > 0) cfg.pub_hwm = pub_hwm;
  if (!strcmp(transport, "ipc")) {
    snprintf(cfg.state_endpoint, sizeof cfg.state_endpoint, "ipc:///tmp/khz-bench-%d-state", (int)getpid());
    snprintf(cfg.command_endpoint, sizeof cfg.command_endpoint, "ipc:///tmp/khz-bench-%d-cmd", (int)getpid());
  } else {
    snprintf(cfg.state_endpoint, sizeof cfg.state_endpoint, "tcp://127.0.0.1:5610");
    snprintf(cfg.command_endpoint, sizeof cfg.command_endpoint, "tcp://127.0.0.1:5611");
  }
  srv_run sr;
  khzServerHooks hooks = {0};
  khzLoopTrace trace = {0};
  if (trace_csv && trace_top < 0) trace_top = 0;
  if (trace_top >= 0) { /* every tick of the run, and a second to spare */
    trace.cap = (size_t)((seconds + 3) * rate);
    trace.tick = calloc(trace.cap, sizeof *trace.tick);
    if (!trace.tick) return 1;
    hooks.trace = &trace;
  }
  sr.srv = khz_server_new(&cfg, &hooks, err, sizeof err);
  if (!sr.srv) {
    fprintf(stderr, "bench_loop: %s\n", err);
    return 1;
  }
  /* --cpu: the controller (this thread and its client's libzmq threads, made
   * below) keeps off the loop's CPU, as the server's I/O side does */
  int ctl_off = 0;
  if (cpu >= 0 && !ctl_anywhere) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && cpu < CPU_SETSIZE) {
      CPU_CLR(cpu, &set);
      ctl_off = CPU_COUNT(&set) > 0 && sched_setaffinity(0, sizeof set, &set) == 0;
    }
  }
  char pin[96] = "";
  if (cpu >= 0)
    snprintf(pin, sizeof pin, ", loop on CPU %d (I/O side%s off it)", cpu, ctl_off ? " and controller" : "");
  printf("khz loop benchmark: default scene, realtime, %g Hz, %d s, transport %s, controller %s%s\n", rate,
         seconds, transport, commanding ? "PID (torques through the wire)" : "none (zero torque)", pin);
  printf("%s\n", khz_server_report(sr.srv));
  int prio = strstr(khz_server_report(sr.srv), "SCHED_FIFO 80 granted") ? 80 : 0;
  int ctl_fifo = prio ? fifo(70) : 0;
  printf("controller thread: %s%s\n", ctl_fifo ? "SCHED_FIFO 70" : "SCHED_OTHER",
         ctl_off ? ", kept off the loop's CPU" : cpu >= 0 ? ", may share the loop's CPU" : "");
  fflush(stdout);
  pthread_t st;
  pthread_create(&st, NULL, serve, &sr);

  /* the controller: a PID on every actuator, answering every state in order
   * (--controller none: the states are read, nothing is sent) */
  khzClient *c = khz_client_new(cfg.state_endpoint, cfg.command_endpoint, NULL, err, sizeof err);
  const Khz__V1__ModelDescription *md = c ? khz_client_describe(c, 5000) : NULL;
  const Khz__V1__State *s = md ? khz_client_nextState(c, 5000) : NULL;
  if (!s) {
    fprintf(stderr, "bench_loop: the server does not answer\n");
    return 1;
  }
  int na = (int)md->na;
  double q0[64], integ[64] = {0}, tau[64];
  for (int a = 0; a < na; a++) q0[a] = s->q[md->actuators[a]->q_index];
  Khz__V1__Command cmd;
  khz__v1__command__init(&cmd);
  cmd.model_generation = md->model_generation;
  cmd.n_tau = (size_t)na;
  cmd.tau = tau;
  size_t state_bytes = 0, cmd_bytes = 0;
  int reset_done = 0;
  double t_end = now_s() + seconds + 1, t_reset = now_s() + 1;
  uint64_t gaps = 0, last = s->seq, from_seq = 0;
  while (now_s() < t_end) {
    s = khz_client_nextState(c, 1000);
    if (!s) continue;
    if (s->seq > last + 1) gaps += s->seq - last - 1;
    last = s->seq;
    if (!state_bytes) state_bytes = khz__v1__state__get_packed_size(s);
    for (int a = 0; commanding && a < na; a++) {
      const Khz__V1__Actuator *ac = md->actuators[a];
      double qt = q0[a] + 0.2 * sin(2 * M_PI * 0.25 * s->sim_time + 0.7 * a);
      double e = qt - s->q[ac->q_index], effort = ac->effort_limit > 0 ? ac->effort_limit : 50;
      integ[a] = fmax(-0.03, fmin(0.03, integ[a] + e / rate));
      tau[a] = 4 * effort * e - 0.1 * effort * s->qd[ac->qd_index] + 8 * effort * integ[a];
    }
    cmd.seq = s->seq;
    cmd.state_seq = s->seq;
    cmd.client_time_ns = khz_client_now();
    if (commanding) khz_client_command(c, &cmd);
    if (!cmd_bytes) {
      Khz__V1__ClientMessage m;
      khz__v1__client_message__init(&m);
      m.body_case = KHZ__V1__CLIENT_MESSAGE__BODY_COMMAND;
      m.command = &cmd;
      cmd_bytes = khz__v1__client_message__get_packed_size(&m);
    }
    /* statistics from 1 s on (start-up excluded) */
    if (!reset_done && now_s() >= t_reset) {
      Khz__V1__Request rq;
      Khz__V1__ResetStats rs;
      khz__v1__request__init(&rq);
      khz__v1__reset_stats__init(&rs);
      rq.op_case = KHZ__V1__REQUEST__OP_RESET_STATS;
      rq.reset_stats = &rs;
      khz_client_request(c, &rq, 1000);
      reset_done = 1;
      gaps = 0;
      from_seq = s->seq + 2; /* the first tick surely after the reset */
    }
  }
  Khz__V1__Request rq;
  Khz__V1__GetStats gs;
  khz__v1__request__init(&rq);
  khz__v1__get_stats__init(&gs);
  rq.op_case = KHZ__V1__REQUEST__OP_GET_STATS;
  rq.get_stats = &gs;
  const Khz__V1__Reply *r = khz_client_request(c, &rq, 2000);
  if (!r || !r->stats) {
    fprintf(stderr, "bench_loop: no statistics\n");
    return 1;
  }
  const Khz__V1__Stats *S = r->stats;
  pct lat = from_hist(S->lateness), comp = from_hist(S->compute), cl = from_hist(S->command_latency),
      resp = from_hist(S->command_response);
  uint64_t ticks = S->tick->ticks, overruns = S->tick->overruns, missed = S->tick->missed;
  uint64_t own = S->tick->own_overruns, preempted = S->tick->preempted_overruns,
           woke_late = S->tick->late_overruns;
  uint64_t commands = S->tick->commands, on_time = S->tick->on_time, late = S->tick->late;
  uint64_t superseded = S->tick->superseded, dropped = S->tick->states_dropped;
  khz_client_destroy(&c);
  khz_server_stop(sr.srv);
  pthread_join(st, NULL);
  khzServerIoStats io;
  khz_server_ioStats(sr.srv, &io);
  khz_server_destroy(&sr.srv);

  /* the references, one after the other, for the same duration */
  char note[256] = "";
  pct cyc = {0};
  if (cyclic) cyc = run_cyclictest(seconds, (int)lround(1e6 / rate), prio, cpu, note, sizeof note);
  pct raw = {0};
  if (commanding) raw = run_pingpong(transport, state_bytes, cmd_bytes, seconds * 1000, prio);

  printf("\n  %-24s %8s %8s %8s %8s   (us)\n", "", "p50", "p99", "p99.9", "max");
  row("lateness, khz loop", lat, "wake-up - scheduled tick start");
  row("lateness, cyclictest", cyc, cyclic ? (note[0] ? note : "same interval and priority") : "not run");
  row("tick compute", comp, "wake-up -> state complete: command, wrenches, step");
  row("command response", resp, "state complete -> its command received (khz)");
  row("zmq ping-pong, raw", raw, "state-sized PUB -> command-sized DEALER reply");
  row("command latency", cl, "state complete -> start of the tick applying it");
  printf("\n  ticks %ld measured (%llu in all), overruns %llu (missed periods %llu), states dropped "
         "%llu\n",
         lat.n, (unsigned long long)ticks, (unsigned long long)overruns, (unsigned long long)missed,
         (unsigned long long)dropped);
  printf("  I/O thread: %llu wake-ups, at most %llu states taken at one (state ring %d = %.1f ms), "
         "longest gap between wake-ups %.1f ms\n",
         (unsigned long long)io.wakes, (unsigned long long)io.states_max, io.state_ring,
         1e3 * io.state_ring / rate, io.gap_max_ns / 1e6);
  if (cpu_clock)
    printf("  overruns by cause: khz's own %llu (loop work > period), preempted mid-tick %llu, woke "
           "late %llu\n",
           (unsigned long long)own, (unsigned long long)preempted, (unsigned long long)woke_late);
  else
    printf("  overruns by cause: not attributed (--no-cpu-clock: the tick reads no CPU clock)\n");
  uint64_t sent = commands + superseded;
  printf("  commands %llu: %.3f%% applied at the tick right after their state (target >= 99.9%%); "
         "%llu applied later, %llu superseded (never applied); %llu states unseen by the "
         "controller\n",
         (unsigned long long)sent, sent ? 100.0 * (double)on_time / (double)sent : 0,
         (unsigned long long)late, (unsigned long long)superseded, (unsigned long long)gaps);
  printf("  message sizes: state %zu bytes, command %zu bytes\n", state_bytes, cmd_bytes);
  if (cyc.ok && cyc.p99 > 0)
    printf("  ratio lateness khz / cyclictest: p50 %.2f, p99 %.2f, max %.2f\n", lat.p50 / cyc.p50,
           lat.p99 / cyc.p99, lat.max / cyc.max);
  if (raw.ok && raw.p50 > 0)
    printf("  ratio command response khz / raw zmq: p50 %.2f, p99 %.2f\n", resp.p50 / raw.p50,
           resp.p99 / raw.p99);
  if (trace.tick) print_trace(&trace, from_seq, trace_top, rate);
  if (trace.tick && trace_csv) write_trace(&trace, trace_csv);
  free(trace.tick);
  return 0;
}
