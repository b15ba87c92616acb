/* test_loop.c — the real-time loop (rt/src/loop/) without the server: the
 * hand-off primitives (SPSC ring, latest-wins buffer under a concurrent
 * writer), the histograms, and the loop's behaviour on the default scene:
 * lockstep determinism and next-tick application, the watchdog (engage within
 * the timeout plus one tick, the safe torques, recovery), skipped and counted
 * periods after an overrun, a reset during a lockstep wait, pause / step,
 * rate changes against the haptic passivity bound, the haptic coupling,
 * perturbation wrenches, the in-tick PD controller and fast mode's drops, and
 * who an overrun is attributed to (the loop thread's CPU time, not wall time).
 * Behaviour is asserted, not timing figures: the machine may be noisy. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ensure.h"
#include "khz/load.h"
#include "khz/loop.h"
#include "loop/handoff.h"
#include "loop/hist.h"

static void nap_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

static khzModel *default_model(void) {
  char err[1024];
  khzModel *m = khz_loadModel("default", NULL, err, sizeof err);
  if (!m) fprintf(stderr, "default scene: %s\n", err);
  return m;
}

static void test_config(khzLoopConfig *c, khzLoopMode mode) {
  khz_loop_defaultConfig(c);
  c->mode = mode;
  c->rt_priority = 0; /* tests run unprivileged and must not starve their neighbours */
  c->lock_memory = 0;
  c->prefault_stack = 64 * 1024;
}

/* the next state (copied out: seq, flags, tau and qd of the actuators) */
typedef struct {
  uint64_t seq, cmd_seq, cmd_state_seq, reset_seq, hash;
  uint32_t flags;
  int64_t tick_time;
  double time;
  double q[64], qd[64], tau[64], hw[6], xpos_box[3];
  khzTickStats stats;
  int ok;
} snap;

static snap next_state(khzLoop *L, const khzModel *m, int timeout_ms) {
  snap s;
  memset(&s, 0, sizeof s);
  for (int i = 0; i < timeout_ms * 20; i++) {
    const khzLoopState *st = khz_loop_peekState(L);
    if (!st) {
      nap_us(50);
      continue;
    }
    s.seq = st->seq, s.cmd_seq = st->cmd_seq, s.cmd_state_seq = st->cmd_state_seq;
    s.reset_seq = st->reset_seq, s.flags = st->flags, s.tick_time = st->tick_time_ns;
    s.time = st->sim_time, s.stats = st->stats, s.hash = st->hash;
    memcpy(s.q, st->q, (size_t)m->nq * sizeof(double));
    memcpy(s.qd, st->qd, (size_t)m->nv * sizeof(double));
    memcpy(s.tau, st->tau, (size_t)m->nv * sizeof(double));
    if (st->nhaptic) memcpy(s.hw, st->haptic_wrench, sizeof s.hw);
    int box = khz_name2body(m, "box1");
    if (box > 0) memcpy(s.xpos_box, st->xpos + 3 * box, sizeof s.xpos_box);
    s.ok = 1;
    khz_loop_releaseState(L);
    return s;
  }
  return s;
}

static void drain_states(khzLoop *L) {
  while (khz_loop_peekState(L)) khz_loop_releaseState(L);
}

static int wait_reply(khzLoop *L, uint64_t id, khzReply *r, int timeout_ms) {
  for (int i = 0; i < timeout_ms * 20; i++) {
    while (khz_loop_pollReply(L, r))
      if (r->id == id) return 1;
    nap_us(50);
  }
  return 0;
}

static uint64_t request(khzLoop *L, int type, int ival, double dval, const double *data, int n) {
  static uint64_t id = 100;
  khzRequest *rq = khz_loop_requestBegin(L);
  if (!rq) return 0;
  rq->id = ++id, rq->type = type, rq->ival = ival, rq->dval = dval;
  if (data) memcpy(rq->data, data, (size_t)n * sizeof(double));
  rq->ndata = n;
  khz_loop_requestCommit(L);
  return id;
}

/* a torque command: PD toward target on every actuator, computed from a state */
static void send_torque(khzLoop *L, const khzModel *m, const snap *s, const double *target,
                        uint64_t seq) {
  int dof[64], na = khz_loop_actuators(m, dof);
  khzCommand *c = khz_loop_commandBegin(L);
  c->seq = seq, c->state_seq = s->seq, c->kind = KHZ_CMD_TORQUE, c->client = 1;
  c->recv_ns = khz_loop_now();
  for (int i = 0; i < na; i++) {
    int b = m->dof_body[dof[i]];
    c->tau_ff[i] = 300 * (target[i] - s->q[m->jnt_qadr[b]]) - 30 * s->qd[dof[i]];
  }
  khz_loop_commandCommit(L);
}

/* ------------------------------------------------------------ primitives -- */

typedef struct {
  uint64_t a, b, c;
} triple;

static khzLatest lb;
static triple slots[3];
static atomic_int writer_done;

static void *writer(void *arg) {
  (void)arg;
  for (uint64_t i = 1; i <= 200000; i++) {
    triple *t = &slots[lb.back];
    t->a = i, t->b = i * 3, t->c = i * 7;
    khz_latest_commit(&lb);
  }
  atomic_store(&writer_done, 1);
  return NULL;
}

static void test_primitives(void) {
  /* ring: FIFO, full at capacity, nothing lost or duplicated */
  khzRing r;
  ENSURE(khz_ring_init(&r, 5, sizeof(int)) == 0);
  ENSURE(khz_ring_capacity(&r) == 8);
  int pushed = 0;
  for (int i = 0; i < 10; i++) {
    int *slot = khz_ring_claim(&r);
    if (!slot) break;
    *slot = i;
    khz_ring_commit(&r);
    pushed++;
  }
  ENSURE(pushed == 8);
  for (int i = 0; i < 8; i++) {
    int *slot = khz_ring_peek(&r);
    ENSURE(slot && *slot == i);
    khz_ring_release(&r);
  }
  ENSURE(khz_ring_peek(&r) == NULL);
  khz_ring_free(&r);

  /* latest wins: a concurrent writer never shows a torn or older value */
  khz_latest_init(&lb);
  pthread_t t;
  pthread_create(&t, NULL, writer, NULL);
  uint64_t last = 0, takes = 0, torn = 0, back = 0;
  while (!atomic_load(&writer_done) || (lb.middle & KHZ_LATEST_FRESH)) {
    if (!khz_latest_take(&lb)) continue;
    triple *v = &slots[lb.front];
    takes++;
    if (v->b != v->a * 3 || v->c != v->a * 7) torn++;
    if (v->a <= last) back++;
    last = v->a;
  }
  pthread_join(t, NULL);
  ENSURE(torn == 0);
  ENSURE(back == 0);
  ENSURE(last == 200000);
  ENSURE(takes + atomic_load(&lb.overwritten) == 200000);
}

static void test_hist(void) {
  static khzHist h;
  khz_hist_reset(&h);
  for (int64_t v = 1; v <= 100000; v++) khz_hist_add(&h, v * 10); /* 10 ns .. 1 ms */
  int64_t p50 = khz_hist_quantile(&h, 0.5), p99 = khz_hist_quantile(&h, 0.99);
  ENSURE_MSG(p50 >= 500000 && p50 <= 500000 * 1.016, "p50 %lld", (long long)p50);
  ENSURE_MSG(p99 >= 990000 && p99 <= 990000 * 1.016, "p99 %lld", (long long)p99);
  ENSURE(khz_hist_quantile(&h, 1.0) == 1000000);
  for (int b = 0; b < KHZ_HIST_BINS - 1; b++) ENSURE(khz_hist_upper(b) < khz_hist_upper(b + 1));
  for (int64_t v = 0; v < 5000000; v += 997) {
    int b = khz_hist_bin(v);
    ENSURE(v <= khz_hist_upper(b) && (b == 0 || v > khz_hist_upper(b - 1)));
  }
}

/* --------------------------------------------------------------- the loop -- */

/* lockstep: a PD controller for n ticks; returns the final state hash */
static uint64_t lockstep_run(const khzModel *m, int n, int *next_tick_ok, int threads, int cpu) {
  khzLoopConfig cfg;
  char err[256];
  test_config(&cfg, KHZ_MODE_LOCKSTEP);
  cfg.publish_hash = 1;
  cfg.threads = threads;
  cfg.cpu = cpu;
  khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
  ENSURE_MSG(L != NULL, "%s", err);
  if (!L) return 0;
  /* the step's workers, started by the loop thread (and pinned with it) */
  if (threads > 1) {
    char want[64];
    snprintf(want, sizeof want, "; %d step threads", threads);
    ENSURE_MSG(strstr(khz_loop_report(L), want) != NULL, "%s", khz_loop_report(L));
    if (cpu >= 0) ENSURE_MSG(strstr(khz_loop_report(L), "worker 1 ") != NULL, "%s", khz_loop_report(L));
  }
  double target[7] = {0.3, -0.5, 0.2, -2.0, 0.1, 1.2, 0.5};
  *next_tick_ok = 1;
  snap s = next_state(L, m, 2000);
  for (int k = 0; k < n && s.ok; k++) {
    send_torque(L, m, &s, target, (uint64_t)k + 1);
    snap s2 = next_state(L, m, 2000);
    if (!s2.ok || s2.seq != s.seq + 1 || s2.cmd_state_seq != s.seq || (s2.flags & KHZ_FLAG_WATCHDOG))
      *next_tick_ok = 0;
    s = s2;
  }
  uint64_t id = request(L, KHZ_REQ_HASH, 0, 0, NULL, 0);
  khzReply r;
  ENSURE(wait_reply(L, id, &r, 2000));
  ENSURE(r.seq == (uint64_t)n);
  /* the request's hash (of a saved copy, on the caller's thread) is the
   * published one (khz_hashState in the tick) */
  ENSURE_MSG(r.hash == s.hash, "request %016llx, state %016llx", (unsigned long long)r.hash,
             (unsigned long long)s.hash);
  khzLoopStats st;
  khz_loop_stats(L, &st);
  ENSURE(st.tick.on_time == (uint64_t)n && st.tick.late == 0);
  khz_loop_destroy(&L);
  ENSURE(L == NULL);
  return r.hash;
}

static void test_lockstep(const khzModel *m) {
  int ok1, ok2;
  uint64_t h1 = lockstep_run(m, 300, &ok1, 1, -1), h2 = lockstep_run(m, 300, &ok2, 1, -1);
  ENSURE(ok1 && ok2);
  ENSURE_MSG(h1 == h2 && h1 != 0, "hashes %016llx %016llx", (unsigned long long)h1,
             (unsigned long long)h2);
  /* with the step's threads (khz_setThreads): the same bits; pinned to CPU 0 */
  uint64_t h3 = lockstep_run(m, 300, &ok2, 2, -1), h4 = lockstep_run(m, 300, &ok1, 3, 0);
  ENSURE(ok1 && ok2);
  ENSURE_MSG(h3 == h1 && h4 == h1, "hashes %016llx, 2 threads %016llx, 3 threads pinned %016llx",
             (unsigned long long)h1, (unsigned long long)h3, (unsigned long long)h4);
}

static void test_watchdog(const khzModel *m) {
  khzLoopConfig cfg;
  char err[256];
  test_config(&cfg, KHZ_MODE_REALTIME);
  cfg.watchdog_s = 0.03;
  khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
  ENSURE_MSG(L != NULL, "%s", err);
  if (!L) return;
  const char *rep = khz_loop_report(L);
  ENSURE(strstr(rep, "SCHED_FIFO not requested") && strstr(rep, "stack pre-faulted"));
  double target[7] = {0, -0.785, 0, -2.356, 0, 1.571, 0.785};
  int dof[64], na = khz_loop_actuators(m, dof);

  /* before any command: the safe command, flagged */
  snap s = next_state(L, m, 2000);
  ENSURE(s.flags & KHZ_FLAG_NO_COMMAND);

  /* 100 ticks of commands, then silence */
  uint64_t last_cmd = 0;
  int64_t last_cmd_tick = 0;
  for (int k = 0; k < 100 && s.ok; k++) {
    s = next_state(L, m, 2000);
    send_torque(L, m, &s, target, (uint64_t)k + 1);
    last_cmd = (uint64_t)k + 1;
    if (k == 50) nap_us(45000);
  }
  /* On a loaded machine this thread can sleep past the timeout between two
   * commands, so the watchdog may engage (and release) before the last one:
   * only a state after the tick that took the last command counts. */
  snap first = {0};
  uint64_t engaged_before = 0;
  for (int k = 0; k < 1000; k++) {
    s = next_state(L, m, 2000);
    if (!s.ok) break;
    /* the tick that took the last command (it is applied again until stale) */
    if (s.cmd_seq == last_cmd && !last_cmd_tick) {
      last_cmd_tick = s.tick_time;
      engaged_before = s.stats.watchdog_engaged;
    }
    if (last_cmd_tick && (s.flags & KHZ_FLAG_WATCHDOG)) {
      first = s;
      break;
    }
  }
  ENSURE(first.ok && last_cmd_tick);
  /* engaged within the timeout plus one tick (plus periods skipped on a noisy machine) */
  int64_t period = 1000000, gap = first.tick_time - last_cmd_tick;
  ENSURE_MSG(gap <= 30000000 + period * (1 + (int64_t)first.stats.missed), "gap %lld ns",
             (long long)gap);
  ENSURE(gap > 30000000 - period);
  for (int i = 0; i < na; i++) ENSURE(first.tau[dof[i]] == 0);
  ENSURE(first.stats.watchdog_engaged == engaged_before + 1);

  /* damping as the safe command: tau = -b qd of the state before */
  double damp[1] = {5.0};
  uint64_t id = request(L, KHZ_REQ_WATCHDOG, KHZ_SAFE_DAMPING, 0.03, damp, 1);
  khzReply r;
  ENSURE(wait_reply(L, id, &r, 2000) && r.status == 0);
  drain_states(L);
  /* two successive ticks under the safe command */
  snap a = next_state(L, m, 2000), b = next_state(L, m, 2000);
  for (int k = 0; k < 1000 && b.ok && !((a.flags & b.flags & KHZ_FLAG_WATCHDOG) && b.seq == a.seq + 1);
       k++)
    a = b, b = next_state(L, m, 2000);
  ENSURE(b.seq == a.seq + 1 && (a.flags & b.flags & KHZ_FLAG_WATCHDOG));
  for (int i = 0; i < na; i++) {
    double want = -5.0 * a.qd[dof[i]], lim = m->dof_effort[dof[i]];
    if (lim > 0 && fabs(want) > lim) want = want > 0 ? lim : -lim; /* clamped, and flagged */
    ENSURE_MSG(b.tau[dof[i]] == want, "tau %g qd %g flags %x", b.tau[dof[i]], a.qd[dof[i]],
               b.flags);
  }

  /* commands return: the flag clears at the tick that takes the command. That
   * tick is found by its cmd_seq, not among the next N states: on a loaded
   * machine the ring may hold a backlog of older (flagged) states */
  s = next_state(L, m, 2000);
  send_torque(L, m, &s, target, 1000);
  int cleared = 0;
  for (int k = 0; k < 30000 && !cleared; k++) {
    snap t = next_state(L, m, 2000);
    if (!t.ok) break;
    if (t.cmd_seq == 1000) cleared = !(t.flags & KHZ_FLAG_WATCHDOG);
  }
  ENSURE(cleared);
  khz_loop_destroy(&L);
}

/* a wake callback that stalls the loop thread once: an overrun */
static atomic_int stall_us;
static void stalling_wake(void *user) {
  (void)user;
  int us = atomic_exchange(&stall_us, 0);
  if (us) nap_us(us);
}

static void test_overrun(const khzModel *m) {
  khzLoopConfig cfg;
  char err[256];
  test_config(&cfg, KHZ_MODE_REALTIME);
  cfg.wake = stalling_wake;
  khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
  ENSURE_MSG(L != NULL, "%s", err);
  if (!L) return;
  snap s = next_state(L, m, 2000);
  for (int k = 0; k < 20; k++) s = next_state(L, m, 2000);
  /* The stalled tick is found by its skip count, not by being among the next
   * few states: on a loaded machine the ring may still hold a backlog of
   * states from before the stall, a natural overrun may come first, or the
   * ring may drop the state just before the stalled one (then try again). */
  snap prev = s, t = {0};
  int found = 0;
  for (int attempt = 0; attempt < 5 && !found; attempt++) {
    drain_states(L);
    prev = next_state(L, m, 2000);
    /* the stall follows state k: tick k+1 wakes ~3.5 ms late and its state is
     * complete after the next deadline but one, so that 3 periods are skipped */
    atomic_store(&stall_us, 4500);
    for (int k = 0; k < 1000 && prev.ok; k++) {
      t = next_state(L, m, 2000);
      if (!t.ok) break;
      if ((t.flags & KHZ_FLAG_OVERRUN) && t.stats.missed - prev.stats.missed >= 3 &&
          atomic_load(&stall_us) == 0) {
        found = t.seq == prev.seq + 1;
        break;
      }
      prev = t;
    }
  }
  ENSURE(found);
  ENSURE(t.flags & KHZ_FLAG_OVERRUN);
  /* the stalled periods were skipped, counted and not run in a burst */
  ENSURE(t.stats.overruns > prev.stats.overruns);
  ENSURE(t.seq == prev.seq + 1);
  ENSURE(t.tick_time - prev.tick_time == (int64_t)(t.stats.missed - prev.stats.missed + 1) * 1000000);
  ENSURE(t.time - prev.time < 1.5e-3); /* one step of simulated time */
  khz_loop_destroy(&L);
}

/* a wake callback that, once, either burns CPU (busy) or sleeps for 12 ms
 * (2.4 periods at 200 Hz): the loop's work between two ticks, counted to the
 * next tick */
static atomic_int attrib_mode; /* 0 none, 1 busy, 2 sleep */
static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static void attrib_wake(void *user) {
  (void)user;
  int mode = atomic_exchange(&attrib_mode, 0);
  if (mode == 1) { /* 12 ms of this thread's own CPU time, however loaded the machine */
    int64_t c0 = thread_cpu_ns();
    while (thread_cpu_ns() - c0 < 12000000) {
    }
  } else if (mode == 2) {
    nap_us(12000);
  }
}

/* arms attrib_mode and returns the state 10 states after the stall (ok = 0
 * when the states stopped); *before is the state before it was armed */
static snap after_stall(khzLoop *L, const khzModel *m, int mode, snap *before) {
  snap t = {0};
  drain_states(L);
  *before = next_state(L, m, 2000);
  atomic_store(&attrib_mode, mode);
  int after = 0;
  for (int k = 0; k < 1000 && before->ok && after < 10; k++) {
    t = next_state(L, m, 2000);
    if (!t.ok) return t;
    if (atomic_load(&attrib_mode) == 0) after++;
  }
  if (after < 10) t.ok = 0;
  return t;
}

/* the loop thread's kernel id (thread_init hook) and its CPU */
static atomic_int loop_tid, loop_cpu;
static void note_thread(void *user) {
  (void)user;
  atomic_store(&loop_tid, (int)syscall(SYS_gettid));
  atomic_store(&loop_cpu, sched_getcpu());
}

/* a CPU hog pinned to the loop thread's CPU until hog_stop */
static atomic_int hog_stop;
static void *hog(void *arg) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(*(int *)arg, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  volatile double x = 1;
  while (!atomic_load_explicit(&hog_stop, memory_order_relaxed)) x = x * 1.0000001 + 1e-9;
  return NULL;
}

/* an overrun from the loop's own work (CPU burnt in the loop thread between
 * two ticks) is khz's; one from the thread held off the CPU by other threads
 * is not, however long the wall time, nor is one from a block (the loop never
 * blocks: a block shows as the thread off the CPU) */
static void test_overrun_attribution(const khzModel *m) {
  khzLoopConfig cfg;
  char err[256];
  test_config(&cfg, KHZ_MODE_REALTIME);
  /* 200 Hz: a tick fits its period with room to spare even in a sanitizer
   * build on a loaded machine, so that only the stalls below overrun on the
   * loop's own account */
  cfg.rate_hz = 200;
  cfg.wake = attrib_wake;
  cfg.thread_init = note_thread;
  khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
  ENSURE_MSG(L != NULL, "%s", err);
  if (!L) return;
  for (int k = 0; k < 20; k++) next_state(L, m, 2000);

  /* busy: the 3 ms are the loop's own */
  snap before, t = after_stall(L, m, 1, &before);
  ENSURE(t.ok);
  ENSURE_MSG(t.stats.own_overruns > before.stats.own_overruns,
             "a CPU-bound stall in the loop thread: own overruns %llu -> %llu (overruns %llu -> %llu)",
             (unsigned long long)before.stats.own_overruns, (unsigned long long)t.stats.own_overruns,
             (unsigned long long)before.stats.overruns, (unsigned long long)t.stats.overruns);
  ENSURE(t.stats.between_ns >= 0 && t.stats.cpu_ns > 0);

  /* blocked: as long in wall time, off the CPU */
  t = after_stall(L, m, 2, &before);
  ENSURE(t.ok);
  ENSURE(t.stats.overruns > before.stats.overruns);
  ENSURE_MSG(t.stats.own_overruns == before.stats.own_overruns,
             "a sleeping stall counted as khz's own: %llu -> %llu",
             (unsigned long long)before.stats.own_overruns, (unsigned long long)t.stats.own_overruns);

  /* starved: the loop thread at nice 19 pinned with two hogs on its CPU */
  int tid = atomic_load(&loop_tid), cpu = atomic_load(&loop_cpu);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ENSURE(sched_setaffinity(tid, sizeof set, &set) == 0);
  ENSURE(setpriority(PRIO_PROCESS, (id_t)tid, 19) == 0);
  drain_states(L);
  before = next_state(L, m, 2000), t = before;
  pthread_t hogs[2];
  atomic_store(&hog_stop, 0);
  for (int i = 0; i < 2; i++) pthread_create(&hogs[i], NULL, hog, &cpu);
  int64_t t0 = khz_loop_now();
  while (khz_loop_now() - t0 < 600000000LL) {
    snap n = next_state(L, m, 2000);
    if (n.ok) t = n;
  }
  atomic_store(&hog_stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(hogs[i], NULL);
  for (int k = 0; k < 5; k++) {
    snap n = next_state(L, m, 2000);
    if (n.ok) t = n;
  }
  ENSURE_MSG(t.stats.overruns > before.stats.overruns, "the starved loop did not overrun");
  ENSURE_MSG(t.stats.own_overruns == before.stats.own_overruns,
             "a starved loop thread's overruns counted as khz's own: %llu -> %llu of %llu -> %llu",
             (unsigned long long)before.stats.own_overruns, (unsigned long long)t.stats.own_overruns,
             (unsigned long long)before.stats.overruns, (unsigned long long)t.stats.overruns);
  ENSURE(t.stats.late_overruns + t.stats.preempted_overruns >
         before.stats.late_overruns + before.stats.preempted_overruns);

  /* every overrun is in exactly one of the three; the CPU histogram and the
   * context switches are there */
  khzLoopStats st;
  khz_loop_stats(L, &st);
  ENSURE(st.tick.overruns ==
         st.tick.own_overruns + st.tick.preempted_overruns + st.tick.late_overruns);
  ENSURE(st.cpu.count > 20);
  ENSURE(st.cpu.p50 > 0 && st.cpu.p50 < 5000000);
  ENSURE(st.voluntary_switches > 20); /* the thread sleeps every period */
  ENSURE(st.involuntary_switches > 0); /* the hogs preempted it */
  khz_loop_destroy(&L);
}

static void test_reset_pause(const khzModel *m) {
  khzLoopConfig cfg;
  char err[256];
  test_config(&cfg, KHZ_MODE_LOCKSTEP);
  cfg.lockstep_timeout_s = 0; /* wait forever */
  khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
  ENSURE_MSG(L != NULL, "%s", err);
  if (!L) return;
  double target[7] = {0};
  snap s = next_state(L, m, 2000);
  for (int k = 0; k < 10; k++) {
    send_torque(L, m, &s, target, (uint64_t)k + 1);
    s = next_state(L, m, 2000);
  }
  ENSURE(s.seq == 10);

  /* the loop waits for an answer to state 10; a reset ends the wait */
  nap_us(20000);
  ENSURE(khz_loop_peekState(L) == NULL);
  uint64_t id = request(L, KHZ_REQ_RESET, 0, 0, NULL, 0);
  khzReply r;
  ENSURE(wait_reply(L, id, &r, 2000) && r.status == 0 && r.seq == 11);
  snap rs = next_state(L, m, 2000);
  ENSURE(rs.seq == 11 && (rs.flags & KHZ_FLAG_RESET) && rs.reset_seq == 11 && rs.time == 0);
  for (int i = 0; i < m->nq; i++) ENSURE(rs.q[i] == m->q0[i]);

  /* the late answer to state 10 is dropped and reported; the answer to 11 ticks */
  send_torque(L, m, &s, target, 50);
  int stale = 0;
  for (int i = 0; i < 2000 && !stale; i++) {
    khzReply n;
    while (khz_loop_pollReply(L, &n))
      if (n.type == KHZ_REPLY_STALE_COMMAND && n.cmd_seq == 50 && n.client == 1) stale = 1;
    nap_us(500);
  }
  ENSURE(stale);
  ENSURE(khz_loop_peekState(L) == NULL);
  send_torque(L, m, &rs, target, 51);
  snap t = next_state(L, m, 2000);
  ENSURE(t.seq == 12 && t.cmd_seq == 51);

  /* pause, then step 3: exactly three ticks, replied when done */
  id = request(L, KHZ_REQ_PAUSE, 0, 0, NULL, 0);
  ENSURE(wait_reply(L, id, &r, 2000) && r.status == 0);
  id = request(L, KHZ_REQ_MODE, KHZ_MODE_FAST, 0, NULL, 0);
  ENSURE(wait_reply(L, id, &r, 2000) && r.status == 0);
  nap_us(20000);
  ENSURE(khz_loop_peekState(L) == NULL);
  id = request(L, KHZ_REQ_STEP, 3, 0, NULL, 0);
  ENSURE(wait_reply(L, id, &r, 2000) && r.status == 0 && r.seq == 15);
  int n = 0;
  snap last = {0};
  while (khz_loop_peekState(L)) last = next_state(L, m, 10), n++;
  ENSURE(n == 3 && last.seq == 15 && (last.flags & KHZ_FLAG_PAUSED));

  /* bad requests are refused whole */
  id = request(L, KHZ_REQ_RATE, 0, 50, NULL, 0);
  ENSURE(wait_reply(L, id, &r, 2000) && r.status == KHZ_REPLY_INVALID && strstr(r.message, "100 to 10000"));
  id = request(L, KHZ_REQ_WRENCH, 999, 1, (double[6]){0}, 6);
  ENSURE(wait_reply(L, id, &r, 2000) && r.status == KHZ_REPLY_INVALID && strstr(r.message, "no such body"));
  id = request(L, KHZ_REQ_STEP, 0, 0, NULL, 0);
  ENSURE(wait_reply(L, id, &r, 2000) && r.status == KHZ_REPLY_INVALID);
  khz_loop_destroy(&L);
}

/* lockstep: requests queued before a command are all in effect at that
 * command's tick, however many there are and however long they take (the
 * per-round request budget is a realtime-mode rule; in lockstep it would make
 * the tick depend on the machine's speed). Many resets, then the command that
 * answers the last reset's state: every reset state comes first, then the tick. */
static void test_lockstep_requests_first(const khzModel *m) {
  khzLoopConfig cfg;
  char err[256];
  test_config(&cfg, KHZ_MODE_LOCKSTEP);
  cfg.lockstep_timeout_s = 0; /* wait forever */
  int n = cfg.request_ring < cfg.state_ring ? cfg.request_ring : cfg.state_ring;
  n -= 4;
  khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
  ENSURE_MSG(L != NULL, "%s", err);
  if (!L) return;
  double target[7] = {0};
  snap s = next_state(L, m, 2000);
  int queued = 0;
  for (int k = 0; k < n; k++) queued += request(L, KHZ_REQ_RESET, 0, 0, NULL, 0) != 0;
  ENSURE(queued == n);
  snap answered = s;
  answered.seq = s.seq + (uint64_t)queued; /* the state of the last reset */
  send_torque(L, m, &answered, target, 1);
  int resets = 0, in_order = 1;
  snap t = {0};
  for (int k = 0; k <= queued; k++) {
    t = next_state(L, m, 2000);
    if (!t.ok) break;
    if (k < queued && !(t.flags & KHZ_FLAG_RESET)) in_order = 0;
    if (t.flags & KHZ_FLAG_RESET) resets++;
  }
  ENSURE_MSG(in_order && resets == queued, "%d resets of %d before the tick", resets, queued);
  ENSURE_MSG(t.ok && t.seq == answered.seq + 1 && t.cmd_seq == 1 && !(t.flags & KHZ_FLAG_RESET),
             "tick seq %llu cmd %llu flags %x", (unsigned long long)t.seq,
             (unsigned long long)t.cmd_seq, t.flags);
  khz_loop_destroy(&L);
}

static void test_haptic_wrench_pd(const khzModel *m) {
  khzLoopConfig cfg;
  char err[256];
  int box = khz_name2body(m, "box1");
  ENSURE(box > 0);
  if (box <= 0) return;

  /* a proxy that violates the passivity bound is refused at creation */
  test_config(&cfg, KHZ_MODE_LOCKSTEP);
  cfg.lockstep_timeout_s = 0;
  cfg.nhaptic = 1;
  cfg.haptic[0] = (khzHapticProxy){box, 1000, 0.4, 0, 0};
  ENSURE(khz_loop_new(m, &cfg, err, sizeof err) == NULL && strstr(err, "passivity"));
  cfg.haptic[0].damping = 2;
  cfg.haptic_timeout_s = 0; /* device inputs never go stale: deterministic here */
  khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
  ENSURE_MSG(L != NULL, "%s", err);
  if (!L) return;

  /* a rate at which the coupling would not be passive is refused */
  uint64_t id = request(L, KHZ_REQ_RATE, 0, 200, NULL, 0);
  khzReply r;
  ENSURE(wait_reply(L, id, &r, 2000) && r.status == KHZ_REPLY_REFUSED && strstr(r.message, "passivity"));
  id = request(L, KHZ_REQ_HAPTIC_GAINS, 0, 0, (double[4]){4000, 1, 0, 0}, 4);
  ENSURE(wait_reply(L, id, &r, 2000) && r.status == KHZ_REPLY_REFUSED && strstr(r.message, "passivity"));

  /* before a device input: coupling off, flagged */
  snap s = next_state(L, m, 2000);
  double hold[7] = {0, -0.785, 0, -2.356, 0, 1.571, 0.785};
  send_torque(L, m, &s, hold, 1);
  s = next_state(L, m, 2000);
  ENSURE(s.flags & KHZ_FLAG_HAPTIC_STALE);

  /* a perturbation wrench for 50 ms of simulated time: pushes the box along +x */
  double x0 = s.xpos_box[0];
  id = request(L, KHZ_REQ_WRENCH, box, 0.05, (double[6]){20, 0, 0, 0, 0, 0}, 6);
  ENSURE(wait_reply(L, id, &r, 2000) && r.status == 0);
  for (int k = 0; k < 100; k++) {
    send_torque(L, m, &s, hold, (uint64_t)k + 2000);
    s = next_state(L, m, 2000);
  }
  ENSURE_MSG(s.xpos_box[0] > x0 + 0.01, "box x %g -> %g", x0, s.xpos_box[0]);

  /* from rest again (a reset ends nothing else in lockstep) */
  id = request(L, KHZ_REQ_RESET, 0, 0, NULL, 0);
  ENSURE(wait_reply(L, id, &r, 2000) && r.status == 0);
  s = next_state(L, m, 2000);
  ENSURE(s.flags & KHZ_FLAG_RESET);

  /* the device 10 cm above the box: pulled up, the device feels the box pull down */
  khzHapticInput in = {.seq = 1, .recv_ns = khz_loop_now(), .quat = {1, 0, 0, 0}};
  memcpy(in.pos, s.xpos_box, sizeof in.pos);
  in.pos[2] += 0.1;
  ENSURE(khz_loop_haptic(L, 0, &in) == 0);
  ENSURE(khz_loop_haptic(L, 3, &in) == -1);
  double z0 = s.xpos_box[2];
  for (int k = 0; k < 200; k++) {
    send_torque(L, m, &s, hold, (uint64_t)k + 2);
    s = next_state(L, m, 2000);
    if (k == 0) {
      ENSURE(!(s.flags & KHZ_FLAG_HAPTIC_STALE));
      ENSURE_NEAR(s.hw[2], -100, 1e-6); /* K * 0.1 m, the box at rest */
      ENSURE_NEAR(s.hw[0], 0, 1e-9);
    }
  }
  ENSURE_MSG(s.xpos_box[2] > z0 + 0.05, "box z %g -> %g", z0, s.xpos_box[2]);

  /* the in-tick PD controller moves joint 1 toward its target */
  int dof[64], na = khz_loop_actuators(m, dof);
  double q1 = s.q[m->jnt_qadr[m->dof_body[dof[0]]]];
  for (int k = 0; k < 400; k++) {
    khzCommand *c = khz_loop_commandBegin(L);
    c->seq = 1000 + (uint64_t)k, c->state_seq = s.seq, c->kind = KHZ_CMD_PD, c->has_gains = 1;
    for (int i = 0; i < na; i++) {
      c->q_target[i] = s.q[m->jnt_qadr[m->dof_body[dof[i]]]] + (i == 0 ? 0 : 0);
      c->qd_target[i] = 0, c->tau_ff[i] = 0, c->kp[i] = 400, c->kd[i] = 40;
    }
    c->q_target[0] = q1 + 0.2;
    khz_loop_commandCommit(L);
    s = next_state(L, m, 2000);
  }
  ENSURE_NEAR(s.q[m->jnt_qadr[m->dof_body[dof[0]]]], q1 + 0.2, 0.03);
  khz_loop_destroy(&L);
}

static void test_fast_drops(const khzModel *m) {
  khzLoopConfig cfg;
  char err[256];
  test_config(&cfg, KHZ_MODE_FAST);
  cfg.state_ring = 16;
  cfg.watchdog_s = 0;
  khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
  ENSURE_MSG(L != NULL, "%s", err);
  if (!L) return;
  /* fast mode runs unpaced: wait until it has overrun the unread ring (at most
   * 30 s, a bound on a hang only: a sanitizer build on a loaded machine) */
  khzLoopStats st;
  for (int waited = 0; waited < 600; waited++) {
    nap_us(50000);
    khz_loop_stats(L, &st);
    if (st.tick.ticks > 100) break;
  }
  ENSURE(st.tick.ticks > 100);
  ENSURE(st.tick.states_dropped > 0);
  ENSURE(st.tick.ticks + 1 - st.tick.states_dropped <= 16 + 1);
  /* consumed again, the ring flows; drops stay counted */
  drain_states(L);
  snap a = next_state(L, m, 1000);
  ENSURE(a.ok && a.stats.states_dropped >= st.tick.states_dropped);
  khz_loop_destroy(&L);
}

/* cpu_clock 0: the tick reads no CPU clock; the same CPU-bound stall is still
 * an overrun, counted but in none of the three attributions, and the CPU
 * histogram stays empty */
static void test_no_cpu_clock(const khzModel *m) {
  khzLoopConfig cfg;
  char err[256];
  test_config(&cfg, KHZ_MODE_REALTIME);
  cfg.rate_hz = 200;
  cfg.wake = attrib_wake;
  cfg.cpu_clock = 0;
  khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
  ENSURE_MSG(L != NULL, "%s", err);
  if (!L) return;
  ENSURE_MSG(strstr(khz_loop_report(L), "CPU clock not read") != NULL, "%s", khz_loop_report(L));
  for (int k = 0; k < 20; k++) next_state(L, m, 2000);
  snap before, t = after_stall(L, m, 1, &before);
  ENSURE(t.ok);
  ENSURE_MSG(t.stats.overruns > before.stats.overruns, "the stall did not overrun: %llu -> %llu",
             (unsigned long long)before.stats.overruns, (unsigned long long)t.stats.overruns);
  ENSURE(t.stats.cpu_ns == 0 && t.stats.between_ns == 0);
  khzLoopStats st;
  khz_loop_stats(L, &st);
  ENSURE_MSG(st.tick.own_overruns + st.tick.preempted_overruns + st.tick.late_overruns == 0,
             "unattributed overruns were attributed: own %llu preempted %llu late %llu",
             (unsigned long long)st.tick.own_overruns, (unsigned long long)st.tick.preempted_overruns,
             (unsigned long long)st.tick.late_overruns);
  ENSURE(st.cpu.count == 0);
  khz_loop_destroy(&L);
}

/* spin_us: the thread wakes early and polls the clock to the deadline; a
 * tick still never starts before its deadline, and the rate is the rate */
static void test_spin(const khzModel *m) {
  khzLoopConfig cfg;
  char err[256];
  test_config(&cfg, KHZ_MODE_REALTIME);
  cfg.watchdog_s = 0;
  cfg.spin_us = 300;
  khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
  ENSURE_MSG(L != NULL, "%s", err);
  if (!L) return;
  ENSURE_MSG(strstr(khz_loop_report(L), "spins the last 300 us to each deadline") != NULL, "%s",
             khz_loop_report(L));
  drain_states(L);
  snap first = next_state(L, m, 30000), last = first;
  int early = 0, n = 0;
  for (; n < 100; n++) {
    snap s = next_state(L, m, 30000);
    if (!s.ok) break;
    if (s.stats.lateness_ns < 0) early++;
    last = s;
  }
  ENSURE(first.ok && n == 100);
  ENSURE_MSG(early == 0, "%d of 100 ticks started before their deadline", early);
  /* tick times are the schedule's: whole periods apart, never closer */
  int64_t span = last.tick_time - first.tick_time;
  ENSURE_MSG(span >= (int64_t)(last.seq - first.seq) * 1000000, "%lld ns for %llu ticks",
             (long long)span, (unsigned long long)(last.seq - first.seq));
  khz_loop_destroy(&L);
}

/* cfg.trace: every realtime tick's phases, in order, in the caller's record
 * until it is full; the marks follow the tick's order and its compute time is
 * the state's compute_ns */
static void test_trace(const khzModel *m) {
  khzLoopConfig cfg;
  char err[256];
  enum { CAP = 40 };
  static khzLoopTraceTick ticks[CAP + 1];
  khzLoopTrace trace = {ticks, CAP, 0};
  memset(ticks, 0xA5, sizeof ticks); /* the entry past the end must stay untouched */
  test_config(&cfg, KHZ_MODE_REALTIME);
  cfg.trace = &trace;
  khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
  ENSURE_MSG(L != NULL, "%s", err);
  if (!L) return;
  int64_t compute[CAP + 2] = {0};
  for (int k = 0; k < CAP + 20; k++) {
    snap s = next_state(L, m, 2000);
    ENSURE(s.ok);
    if (s.ok && s.seq >= 1 && s.seq <= CAP + 1) compute[s.seq] = s.stats.compute_ns;
  }
  khz_loop_destroy(&L);
  ENSURE_MSG(atomic_load(&trace.n) == CAP, "%zu ticks traced, capacity %d", atomic_load(&trace.n), CAP);
  unsigned char past[sizeof ticks[CAP]];
  memset(past, 0xA5, sizeof past);
  ENSURE_MSG(memcmp(&ticks[CAP], past, sizeof past) == 0, "the trace wrote past its capacity");
  int order = 1, seqs = 1, same = 1;
  for (int i = 0; i < CAP; i++) {
    const khzLoopTraceTick *e = &ticks[i];
    int32_t mark[7] = {e->clock_ns, e->command_ns, e->step_ns, e->done_ns, e->copy_ns, e->stats_ns, e->wake_ns};
    for (int k = 0; k < 7; k++) order &= mark[k] >= (k ? mark[k - 1] : 0);
    seqs &= e->seq == (uint64_t)i + 1 && (i == 0 || e->sched_ns > ticks[i - 1].sched_ns);
    same &= e->seq <= CAP + 1 && e->done_ns == compute[e->seq] && e->cpu_wake >= 0 && e->cpu_done >= 0;
  }
  ENSURE_MSG(order, "a traced tick's marks are out of order");
  ENSURE_MSG(seqs, "the traced ticks are not states 1..%d in schedule order", CAP);
  ENSURE_MSG(same, "a traced tick's compute time is not its state's compute_ns");
}

/* verify_overruns: a step hook that, once armed, burns 7 ms of CPU (1.4
 * periods at 200 Hz) after the loop's step and after each of the verifier's
 * re-runs (1: work that is the step's, khz's own), after the loop's step only
 * (2: time charged to the step that the same work re-run does not need, as a
 * host that holds the virtual CPU would charge it), or after the loop's step
 * only and nudging the state (3: not the same work) */
static atomic_int vhook_mode;
static _Atomic double vhook_time; /* the burnt step's end time: its re-runs end there too (the
                                     verifier may re-run other overruns' steps first) */
static void burn_cpu_ns(int64_t ns) {
  int64_t c0 = thread_cpu_ns();
  while (thread_cpu_ns() - c0 < ns) {
  }
}
static void verify_hook(void *user, khzData *d, int rerun) {
  (void)user;
  if (rerun) {
    if (d->time == atomic_load(&vhook_time)) burn_cpu_ns(7000000);
    return;
  }
  int mode = atomic_exchange(&vhook_mode, 0);
  if (!mode) return;
  atomic_store(&vhook_time, mode == 1 ? d->time : -1.0);
  if (mode == 3) d->qd[0] += 1e-9;
  burn_cpu_ns(7000000);
}

/* arms the hook and waits (at most 10 s) until the verifier has a verdict on
 * one more overrun; returns the check whose loop step took the burn, or
 * verdict 0 */
static khzOverrunCheck verify_once(khzLoop *L, const khzModel *m, int mode) {
  khzOverrunCheck none = {0}, chk[KHZ_LOOP_MAX_CHECKS];
  khzLoopStats st;
  khz_loop_stats(L, &st);
  uint64_t before = st.tick.verified_own + st.tick.verified_host + st.tick.verify_mismatch;
  int n0 = khz_loop_overrunChecks(L, chk, KHZ_LOOP_MAX_CHECKS);
  atomic_store(&vhook_mode, mode);
  for (int k = 0; k < 1000; k++) {
    drain_states(L);
    nap_us(10000);
    khz_loop_stats(L, &st);
    if (atomic_load(&vhook_mode) == 0 &&
        st.tick.verified_own + st.tick.verified_host + st.tick.verify_mismatch > before) {
      int n = khz_loop_overrunChecks(L, chk, KHZ_LOOP_MAX_CHECKS);
      for (int i = n0; i < n; i++)
        if (chk[i].step_cpu_ns >= 7000000) return chk[i];
      if (n == KHZ_LOOP_MAX_CHECKS) break;
    }
  }
  (void)m;
  return none;
}

/* the verifier tells a step that needs more than the period (own) from a
 * step charged with time its work does not need (host), and a re-run that
 * is not the same work (mismatch) */
static void test_verify_overruns(const khzModel *m) {
  khzLoopConfig cfg;
  char err[256];
  test_config(&cfg, KHZ_MODE_REALTIME);
  cfg.rate_hz = 200;
  cfg.verify_overruns = 1;
  cfg.cpu_clock = 0;
  ENSURE(khz_loop_new(m, &cfg, err, sizeof err) == NULL && strstr(err, "cpu_clock"));
  cfg.cpu_clock = 1;
  cfg.step_hook = verify_hook;
  khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
  ENSURE_MSG(L != NULL, "%s", err);
  if (!L) return;
  for (int k = 0; k < 20; k++) next_state(L, m, 2000);

  khzOverrunCheck c = verify_once(L, m, 1);
  ENSURE_MSG(c.verdict == KHZ_VERIFY_OWN,
             "a step whose work needs 7 ms at 200 Hz: verdict %d, re-run %.1f us, other %.1f us",
             c.verdict, c.rerun_min_ns / 1e3, c.other_ns / 1e3);
  ENSURE(c.hash == c.rerun_hash && c.hash != 0);
  ENSURE(c.rerun_min_ns >= 7000000 && c.period_ns == 5000000);
  ENSURE(c.tick_cpu_ns >= c.step_cpu_ns && c.other_ns >= 0);

  c = verify_once(L, m, 2);
  ENSURE_MSG(c.verdict == KHZ_VERIFY_HOST,
             "7 ms charged to a step whose work re-runs fast: verdict %d, re-run %.1f us",
             c.verdict, c.rerun_min_ns / 1e3);
  ENSURE(c.hash == c.rerun_hash);
  ENSURE(c.rerun_min_ns < c.period_ns - c.other_ns);

  c = verify_once(L, m, 3);
  ENSURE_MSG(c.verdict == KHZ_VERIFY_MISMATCH, "a nudged state: verdict %d", c.verdict);
  ENSURE(c.hash != c.rerun_hash);

  /* the counters carried in the states and khz_loop_stats agree; every own
   * overrun has one verdict or is unverified once the verifier is idle */
  nap_us(200000);
  drain_states(L); /* states published after the verdicts */
  snap t = next_state(L, m, 2000);
  khzLoopStats st;
  khz_loop_stats(L, &st);
  ENSURE(t.ok && t.stats.verified_own >= 1 && t.stats.verified_host >= 1 &&
         t.stats.verify_mismatch >= 1);
  ENSURE(st.tick.verified_own >= 1 && st.tick.verified_host >= 1 && st.tick.verify_mismatch >= 1);
  ENSURE_MSG(st.tick.own_overruns == st.tick.verified_own + st.tick.verified_host +
                                         st.tick.verify_mismatch + st.tick.unverified +
                                         st.tick.verified_around + st.tick.verified_requests,
             "own %llu != %llu + %llu + %llu + %llu + %llu + %llu",
             (unsigned long long)st.tick.own_overruns, (unsigned long long)st.tick.verified_own,
             (unsigned long long)st.tick.verified_host, (unsigned long long)st.tick.verify_mismatch,
             (unsigned long long)st.tick.unverified, (unsigned long long)st.tick.verified_around,
             (unsigned long long)st.tick.verified_requests);
  khz_loop_destroy(&L);
}

/* verify_overruns, the work around the step: a wake callback (the I/O wake,
 * a between-tick phase, which the verifier calls again) that burns 7 ms of
 * CPU at every call (1: khz's work between ticks; it overruns every period at
 * 200 Hz) or 12 ms at the loop's one call only (2: time charged to the wake
 * that the same call does not need, as a host that holds the virtual CPU
 * would charge it; more than two periods, so that the next tick cannot end
 * inside its own period) */
static atomic_int vwake_mode;
static void verify_wake(void *user) {
  (void)user;
  int mode = atomic_load(&vwake_mode);
  if (mode == 2) atomic_store(&vwake_mode, 0);
  if (mode) burn_cpu_ns(mode == 2 ? 12000000 : 7000000);
}

/* waits (at most 10 s) for a verdict `want` on an overrun whose wake phase
 * took the burn and returns it; else the last such overrun's (verdict 0 when
 * none came) */
static khzOverrunCheck verify_wake_once(khzLoop *L, int want) {
  khzOverrunCheck other = {0}, chk[KHZ_LOOP_MAX_CHECKS];
  for (int k = 0; k < 1000; k++) {
    drain_states(L);
    nap_us(10000);
    int n = khz_loop_overrunChecks(L, chk, KHZ_LOOP_MAX_CHECKS);
    for (int i = 0; i < n; i++)
      if (chk[i].phase_ns[KHZ_PHASE_WAKE] >= 7000000) {
        if (chk[i].verdict == want) return chk[i];
        other = chk[i];
      }
    if (n == KHZ_LOOP_MAX_CHECKS) break;
  }
  return other;
}

static void test_verify_around(const khzModel *m) {
  khzLoopConfig cfg;
  char err[256];
  test_config(&cfg, KHZ_MODE_REALTIME);
  cfg.rate_hz = 200;
  cfg.verify_overruns = 1;
  cfg.wake = verify_wake;
  for (int mode = 2; mode >= 1; mode--) {
    atomic_store(&vwake_mode, 0);
    khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
    ENSURE_MSG(L != NULL, "%s", err);
    if (!L) return;
    /* the phases' p99 over more than 100 ticks: one stall is not their p99 */
    for (int k = 0; k < 150; k++) next_state(L, m, 2000);
    atomic_store(&vwake_mode, mode);
    int want = mode == 1 ? KHZ_VERIFY_AROUND : KHZ_VERIFY_HOST;
    khzOverrunCheck c = verify_wake_once(L, want);
    atomic_store(&vwake_mode, 0);
    const int64_t *ph = c.phase_ns, *acc = c.accepted_ns;
    ENSURE_MSG(c.verdict == want,
               "a wake phase of 7 ms %s: verdict %d (wanted %d); wake %.1f us (p99 %.1f, counted "
               "%.1f), step re-run %.1f us, work %.1f us",
               mode == 1 ? "at every tick" : "(12 ms) at one tick", c.verdict, want, ph[KHZ_PHASE_WAKE] / 1e3,
               c.phase_p99_ns[KHZ_PHASE_WAKE] / 1e3, acc[KHZ_PHASE_WAKE] / 1e3, c.rerun_min_ns / 1e3,
               c.work_ns / 1e3);
    /* the phases split the loop's CPU time from the previous state to this one */
    int64_t sum = 0, counted = 0;
    for (int p = 0; p < KHZ_NPHASES; p++) sum += ph[p], counted += acc[p];
    ENSURE_MSG(llabs(sum - (c.between_ns + c.tick_cpu_ns)) <= 1000,
               "phases %.1f us != between %.1f + tick %.1f us", sum / 1e3, c.between_ns / 1e3,
               c.tick_cpu_ns / 1e3);
    ENSURE(counted == c.work_ns && acc[KHZ_PHASE_STEP] == c.rerun_min_ns);
    /* the verifier called the wake again: 7 ms each time (1), fast (2) */
    if (mode == 1)
      ENSURE(c.wake_rerun_ns >= 7000000 && acc[KHZ_PHASE_WAKE] >= 7000000 && c.work_ns > c.period_ns);
    if (mode == 2)
      ENSURE(c.wake_rerun_ns >= 0 && c.wake_rerun_ns < 1000000 &&
             acc[KHZ_PHASE_WAKE] == c.wake_rerun_ns && c.work_ns <= c.period_ns);
    khzLoopStats st;
    nap_us(100000);
    khz_loop_stats(L, &st);
    ENSURE(mode == 1 ? st.tick.verified_around >= 1 : st.tick.verified_host >= 1);
    khz_loop_destroy(&L);
  }
}

/* verify_overruns, the queue: a burst of own overruns, each of whose steps
 * and re-runs burns 3 ms (1.5 periods at 500 Hz), so that the verifier
 * takes over 12 ms per overrun (3 re-runs, 3 wake calls after 1 ms asleep)
 * while the loop overruns every 4 ms. With one job at a time
 * (KHZ_VERIFY_QUEUE 2, as before soak20c) all but the first few are
 * unverified; with the queue every one is judged. */
static atomic_int vburst_left;
static _Atomic double vburst_time[8]; /* the burnt steps' end times: their re-runs burn too */
static void burst_hook(void *user, khzData *d, int rerun) {
  (void)user;
  if (rerun) {
    for (int i = 0; i < 8; i++)
      if (d->time == atomic_load(&vburst_time[i])) burn_cpu_ns(3000000);
    return;
  }
  int left = atomic_load(&vburst_left);
  if (left > 0) {
    atomic_store(&vburst_time[left % 8], d->time);
    atomic_store(&vburst_left, left - 1);
    burn_cpu_ns(3000000);
  }
}

static void test_verify_queue(const khzModel *m) {
  khzLoopConfig cfg;
  char err[256];
  test_config(&cfg, KHZ_MODE_REALTIME);
  cfg.rate_hz = 500;
  cfg.verify_overruns = 1;
  cfg.step_hook = burst_hook;
  khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
  ENSURE_MSG(L != NULL, "%s", err);
  if (!L) return;
  for (int k = 0; k < 20; k++) next_state(L, m, 2000);
  khzLoopStats st;
  khz_loop_stats(L, &st);
  uint64_t own0 = st.tick.verified_own, unv0 = st.tick.unverified, all0 = st.tick.own_overruns;
  const int burst = 6; /* fewer than KHZ_VERIFY_QUEUE - 1: none need wait for a free job */
  for (int i = 0; i < 8; i++) atomic_store(&vburst_time[i], -1.0);
  atomic_store(&vburst_left, burst);
  for (int k = 0; k < 1000; k++) { /* the burst, then every verdict (at most 10 s) */
    drain_states(L);
    nap_us(10000);
    khz_loop_stats(L, &st);
    if (atomic_load(&vburst_left) == 0 && st.tick.verified_own - own0 + st.tick.unverified - unv0 >= (uint64_t)burst)
      break;
  }
  ENSURE_MSG(st.tick.unverified == unv0 && st.tick.verified_own - own0 >= (uint64_t)burst,
             "a burst of %d own overruns (3 ms steps and re-runs at 500 Hz): %llu verified own, "
             "%llu unverified, of %llu own overruns in all, %llu host", burst,
             (unsigned long long)(st.tick.verified_own - own0),
             (unsigned long long)(st.tick.unverified - unv0),
             (unsigned long long)(st.tick.own_overruns - all0), (unsigned long long)st.tick.verified_host);
  khz_loop_destroy(&L);
}

/* verify_overruns, the requests: a request hook that burns 12 ms of CPU at
 * every request of one kind (1: khz's work on a client's behalf) or 20 ms at
 * one request of a kind that has run fast a hundred times (2: time charged to
 * a request that the same kind does not need). Both burn more than two 5 ms
 * periods, so that the tick after the request overruns wherever in the period
 * the loop applied it: requests are applied after a tick, before the sleep to
 * the next deadline, and a request of 7 ms (as here before) applied early in
 * a period made the next tick 2 ms late but complete before the deadline
 * after it, no overrun; only a late wake-up (a loaded machine) made one:
 * with prompt wake-ups (the loop at SCHED_FIFO, or the sanitizer build in
 * CI) 50 such requests made no overrun at all. */
#define VREQ_OWN_NS 12000000
static atomic_int vreq_mode;
static void verify_request_hook(void *user, int type) {
  (void)user;
  if (type != KHZ_REQ_CLEAR_WRENCHES) return;
  int mode = atomic_load(&vreq_mode);
  if (mode == 2) atomic_store(&vreq_mode, 0);
  if (mode) burn_cpu_ns(mode == 2 ? 20000000 : VREQ_OWN_NS);
}

static void test_verify_requests(const khzModel *m) {
  khzLoopConfig cfg;
  char err[256];
  test_config(&cfg, KHZ_MODE_REALTIME);
  cfg.rate_hz = 200;
  cfg.verify_overruns = 1;
  cfg.request_hook = verify_request_hook;
  const int kind = KHZ_REQ_CLEAR_WRENCHES;
  for (int mode = 2; mode >= 1; mode--) {
    atomic_store(&vreq_mode, 0);
    khzLoop *L = khz_loop_new(m, &cfg, err, sizeof err);
    ENSURE_MSG(L != NULL, "%s", err);
    if (!L) return;
    for (int k = 0; k < 20; k++) next_state(L, m, 2000);
    if (mode == 2) /* the kind's p99 over more than 100 requests: one stall is not its p99 */
      for (int b = 0; b < 15; b++) {
        uint64_t id = 0;
        for (int i = 0; i < 8; i++) id = request(L, kind, 0, 0, NULL, 0);
        khzReply r;
        ENSURE(id && wait_reply(L, id, &r, 2000));
        drain_states(L);
      }
    /* two ticks more, so that the burning request is not applied in the
     * same window as the last batch: the bound is per kind and window (n
     * requests of the kind count up to 100 n times its p99), and a 20 ms
     * request beside 8 fast ones stays under 100 x 9 x p99 on a fast machine
     * (a CI run: verdict REQUESTS with 9 of the kind in the window) */
    for (int k = 0; k < 2; k++) {
      drain_states(L);
      next_state(L, m, 2000);
    }
    atomic_store(&vreq_mode, mode);
    int want = mode == 1 ? KHZ_VERIFY_REQUESTS : KHZ_VERIFY_HOST;
    khzOverrunCheck c = {0}, chk[KHZ_LOOP_MAX_CHECKS];
    for (int k = 0; k < 500 && c.verdict != want; k++) { /* at most 5 s */
      if (k % 10 == 0 && (mode == 1 || atomic_load(&vreq_mode))) request(L, kind, 0, 0, NULL, 0);
      khzReply r;
      while (khz_loop_pollReply(L, &r)) {
      }
      drain_states(L);
      nap_us(10000);
      int n = khz_loop_overrunChecks(L, chk, KHZ_LOOP_MAX_CHECKS);
      for (int i = 0; i < n; i++)
        if (chk[i].phase_ns[KHZ_PHASE_REQUESTS] >= (mode == 1 ? VREQ_OWN_NS : 20000000) &&
            c.verdict != want)
          c = chk[i];
    }
    atomic_store(&vreq_mode, 0);
    const int64_t *ph = c.phase_ns, *acc = c.accepted_ns;
    ENSURE_MSG(c.verdict == want,
               "a request burning %s: verdict %d (wanted %d); requests %.1f us of CPU (%d of the "
               "kind, p99 %.1f us each, counted %.1f), step re-run %.1f us, work %.1f us",
               mode == 1 ? "12 ms every time" : "20 ms once", c.verdict, want,
               ph[KHZ_PHASE_REQUESTS] / 1e3, c.req_n[kind], c.req_p99_ns[kind] / 1e3,
               c.req_accepted_ns[kind] / 1e3, c.rerun_min_ns / 1e3, c.work_ns / 1e3);
    int64_t sum = 0, counted = 0, reqs = 0;
    for (int p = 0; p < KHZ_NPHASES; p++) sum += ph[p], counted += acc[p];
    for (int k = 0; k <= KHZ_NREQUEST; k++) reqs += c.req_accepted_ns[k];
    ENSURE_MSG(llabs(sum - (c.between_ns + c.tick_cpu_ns)) <= 1000,
               "phases %.1f us != between %.1f + tick %.1f us", sum / 1e3, c.between_ns / 1e3,
               c.tick_cpu_ns / 1e3);
    ENSURE(counted == c.work_ns && reqs == acc[KHZ_PHASE_REQUESTS] && c.req_n[kind] >= 1 &&
           c.requests >= c.req_n[kind] && c.wake_calls >= 1);
    if (mode == 1)
      ENSURE(c.req_accepted_ns[kind] == c.req_ns[kind] && c.req_p99_ns[kind] >= VREQ_OWN_NS &&
             c.work_ns > c.period_ns);
    if (mode == 2)
      ENSURE(c.req_ns[kind] >= 20000000 && c.req_accepted_ns[kind] == c.req_n[kind] * c.req_p99_ns[kind] &&
             c.req_p99_ns[kind] < 1000000 && c.work_ns <= c.period_ns);
    khzLoopStats st;
    nap_us(100000);
    khz_loop_stats(L, &st);
    ENSURE(mode == 1 ? st.tick.verified_requests >= 1 : st.tick.verified_host >= 1);
    khz_loop_destroy(&L);
  }
}

int main(void) {
  test_primitives();
  test_hist();
  khzModel *m = default_model();
  ENSURE(m != NULL);
  if (m) {
    test_lockstep(m);
    test_watchdog(m);
    test_overrun(m);
    test_overrun_attribution(m);
    test_no_cpu_clock(m);
    test_verify_overruns(m);
    test_verify_around(m);
    test_verify_queue(m);
    test_verify_requests(m);
    test_reset_pause(m);
    test_lockstep_requests_first(m);
    test_haptic_wrench_pd(m);
    test_fast_drops(m);
    test_spin(m);
    test_trace(m);
    khz_deleteModel(&m);
  }
  return ensure_report();
}
