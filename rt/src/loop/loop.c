/* loop.c — the fixed-rate real-time loop (khz/loop.h): the thread, its
 * absolute schedule, the three modes, requests applied between ticks, the
 * watchdog and the publication of every state.
 *
 * The schedule is cyclictest's: `next` advances by one period per tick and the
 * thread sleeps with clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next);
 * lateness = wake-up - next. When a tick ends after the following deadline,
 * the deadlines already past are skipped and counted (missed), never run in a
 * burst. Lockstep and pause wait on a futex "doorbell" that the I/O side rings
 * when it commits a command or a request. The loop owns the step size: the
 * caller's model is only read, and every tick steps by the loop's timestep
 * (1 / rate, set_rate()) through khz_stepWith's step context.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "handoff.h"
#include "hist.h"
#include "khz/loop.h"
#include "spatial.h"
#include "tick.h"

#if defined(__SANITIZE_ADDRESS__)
#define KHZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KHZ_ASAN 1
#endif
#endif

#define KHZ_STAMPS 4096              /* completion times of recent states (command latency) */
#define KHZ_IDLE_WAIT_NS 100000000LL /* paused / lockstep: re-check at least every 100 ms */
#define KHZ_NSNAP 2                  /* state snapshots for hashes computed off the loop thread */
#define KHZ_SNAP_TICKS 10            /* realtime: a snapshot this many ticks old still serves */
#define KHZ_VERIFY_RUNS 3            /* re-runs of an overrunning tick's step (least CPU time kept) */

/* one overrunning tick handed to the verifier (verify_overruns): the state
 * before its step, the state after it, and what the verdict needs */
typedef struct verifyJob {
  unsigned char *pre;          /* compact_save's image of the state before the step */
  unsigned char *post;         /* compact_save's image after it */
  double h;
  int contact_method, sleep_enabled;
  khzOverrunCheck check;       /* filled by the loop; completed by the verifier */
} verifyJob;

/* counters shared with khz_loop_stats (written by the loop thread only) */
enum {
  S_TICKS, S_OVERRUNS, S_MISSED, S_COMMANDS, S_ON_TIME, S_LATE, S_DROPPED, S_WATCHDOG,
  S_LSTIMEOUT, S_REQUESTS, S_SEQ, S_MODE, S_PAUSED, S_LATENESS, S_COMPUTE, S_CPU, S_OWN,
  S_PREEMPTED, S_LATE_WAKE, S_BETWEEN, S_UNVERIFIED, S_NSHARED
};

struct khzLoop {
  const khzModel *m;     /* the caller's model, never written: its timestep stays the scene's */
  khzData *d;
  khzLoopConfig cfg;     /* the loop thread's copy, changed by requests (rate_hz: the
                            initial rate only; the step size below is the one in use) */
  int na;
  int *dof;              /* na actuator dofs */
  int drive_act[KHZ_LOOP_MAX_DRIVE]; /* the actuator of each drive of cfg.hil (-1: none) */
  int next_event;        /* the first event of cfg.fault_event not yet applied */

  /* the network model (cfg.net): states held back in a history of ring-slot
   * copies until they are due; commands in a queue until they take effect */
  int net_state, net_cmd;
  khzRng net_rng;
  size_t slot_bytes;     /* one state slot (the ring's, rounded up to 64 bytes) */
  unsigned char *hist;   /* hist_cap slots */
  int hist_cap, hist_head, hist_len;
  int64_t hist_due[KHZ_NET_MAX_DELAY + 2];
  unsigned char hist_lost[KHZ_NET_MAX_DELAY + 2];
  int64_t state_last_due;
  uint64_t shown_seq;    /* the newest state shown to the controllers */
  khzCommand applied;    /* the command in effect */
  int have_applied;
  khzCommand cq[KHZ_NET_MAX_DELAY + 2];
  int64_t cq_due[KHZ_NET_MAX_DELAY + 2];
  int cq_cap, cq_head, cq_len;
  int64_t cmd_last_due;
  double *net_cmd_data;
  double stall_until;    /* command channel stalled until this simulated time (0 = not; <0 =
                            until cleared) */
  double *kp, *kd;       /* na default gains */
  int nu;                /* the model's own actuators (cfg.actuator, copied into act) */
  khzLoopActuator *act;
  khzCommand initial;    /* what they get before the first command: act_ff = each ff0 */
  size_t cmd_stride;     /* doubles per command: 5 na + 2 nu */

  /* the step size: this loop is its one owner. set_rate() alone writes these
   * (loop thread; before the thread starts, khz_loop_new) */
  double rate_hz;        /* ticks per second */
  double timestep;       /* 1 / rate_hz: the h of every khz_step */
  int64_t period_ns;     /* the realtime schedule's period */
  _Atomic uint64_t rate_bits; /* rate_hz for the other threads (khz_loop_rate) */

  /* commands in (latest wins) and the loop thread's view of them */
  khzLatest cmd;
  khzCommand cmd_slot[3];
  double *cmd_data;
  int have_cmd;          /* the front slot holds a valid command */
  int fresh;             /* it was taken since the last tick */
  int flowing;           /* a command arrived since start / reset */
  int engaged;           /* the safe command is being applied */
  int64_t last_cmd_time;
  _Atomic uint64_t superseded_base; /* cmd.overwritten at the last statistics reset */

  /* haptic inputs in (latest wins per proxy) */
  khzLatest hin[KHZ_LOOP_MAX_HAPTIC];
  khzHapticInput hin_slot[KHZ_LOOP_MAX_HAPTIC][3];
  int hin_valid[KHZ_LOOP_MAX_HAPTIC];
  double hwrench[6 * KHZ_LOOP_MAX_HAPTIC];

  /* perturbation wrenches */
  khzWrench wrench[KHZ_LOOP_MAX_WRENCH];
  int nwrench;

  /* rings */
  khzRing states, requests, replies;
  size_t req_data;       /* doubles per request slot */

  /* threads */
  _Atomic uint32_t doorbell;
  _Atomic int waiting;
  _Atomic int stop;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int ready;
  int fifo;              /* SCHED_FIFO was granted */
  int dma_fd;            /* /dev/cpu_dma_latency held open, or -1 */
  char report[768];

  /* loop-thread state */
  uint64_t seq, reset_seq;
  int paused;
  int64_t steps_left;
  uint64_t step_id;
  int armed;             /* realtime schedule valid */
  int64_t next;
  int lockstep_waiting;
  int64_t lockstep_start;
  uint32_t pending_flags;
  int64_t stamps[KHZ_STAMPS];
  khzTickStats st;
  int64_t t_done;        /* CLOCK_MONOTONIC when the latest tick's state was complete */
  int64_t cpu_done;      /* the thread's CPU clock then (or when the schedule was armed) */
  int64_t cpu_sleep;     /* ... when it went to sleep before this tick (realtime) */
  int64_t cpu_wake;      /* ... when this tick started */
  _Atomic int tid;       /* the loop thread's kernel id (0 until it runs) */
  khzLoopTraceTick *tr;  /* cfg.trace: this tick's entry while it runs, else NULL */

  /* state snapshots for KHZ_REQ_HASH: the loop copies the state (khz_saveState)
   * into a snapshot no reply refers to any more, at most once per state; the
   * I/O side hashes it in khz_loop_pollReply (cached per state) and drops its
   * reference. The loop thread never hashes on a request. */
  size_t snap_size;
  unsigned char *snap[KHZ_NSNAP];
  uint64_t snap_seq[KHZ_NSNAP];       /* loop thread: the state each holds (seq + 1, 0 = none) */
  _Atomic uint32_t snap_refs[KHZ_NSNAP]; /* replies not yet polled that refer to it */
  uint64_t hash_seq;                  /* I/O side: the cached hash's state (seq + 1) */
  uint64_t hash_val;
  _Atomic uint64_t replies_lost;      /* replies the reply ring could not take */

  /* the overrun verifier (cfg.verify_overruns): a single-producer
   * single-consumer queue of KHZ_VERIFY_QUEUE jobs. The loop saves the state
   * into vjob[vq_head % KHZ_VERIFY_QUEUE].pre before every realtime step (a
   * job the verifier does not hold: vq_head - vq_tail < KHZ_VERIFY_QUEUE); on
   * an own overrun it queues that job by advancing vq_head (release) when a
   * free job remains for the next tick's save, else counts it unverified; the
   * verifier advances vq_tail when it is done with the oldest. */
  khzData *vd;                        /* the verifier's own data */
  unsigned char *vfull;               /* the verifier's khz_saveState image of a job's state */
  size_t vhead;                       /* compact_save: bytes before its list of pair slots */
  size_t vcompact;                    /* compact_save: an image's largest size */
  verifyJob vjob[KHZ_VERIFY_QUEUE];
  _Atomic uint64_t vq_head, vq_tail;  /* jobs queued (loop) and done (verifier) since start */
  int vsaved;                         /* the loop's current job holds this tick's pre-step state */
  int64_t step_cpu;                   /* the loop thread's CPU time in this tick's step */
  int64_t step_c0, step_c1;           /* the CPU clock at the step's start and end */
  int64_t ph[KHZ_NPHASES];            /* this tick's CPU time by phase (KHZ_PHASE_*) */
  int64_t copy_next, wake_next;       /* the copy and wake phases of the state just published */
  int64_t copy_prev, wake_prev;       /* ... of the one before: this tick's between-tick phases */
  int64_t req_cpu;                    /* CPU time of the requests applied since the last state */
  int req_kind_n[KHZ_NREQUEST + 1];   /* ... by kind (the last: unknown): how many, */
  int64_t req_kind_ns[KHZ_NREQUEST + 1]; /* ... and their CPU time */
  int64_t wake_rounds;                /* CPU time of the rounds' statistics and wake since then */
  int wake_rounds_n, wake_next_n, wake_prev_n; /* wake calls: the rounds', the publications' */
  khzHist *phist;                     /* KHZ_NPHASES histograms of the phases (the fixed ones'
                                         p99 bounds them: verifier_main) */
  khzHist *rhist;                     /* KHZ_NREQUEST + 1 histograms of one request's CPU time,
                                         by kind (the kind's p99 bounds it: judge) */
  int64_t step_t0, step_t1;           /* CLOCK_MONOTONIC around it (with the clock reads) */
  int64_t t_wake;                     /* this tick's wake-up */
  int req_count;                      /* requests applied since the last tick's state, */
  int64_t req_ns;                     /* ... and the wall time of those rounds */
  int64_t other_prev;                 /* the previous realtime tick's other work (its CPU time
                                         outside the step, and between_ns): for the record */
  _Atomic uint32_t vbell;             /* futex word the verifier sleeps on */
  pthread_t vthread;
  int vthread_started;
  _Atomic uint64_t vcount[KHZ_NVERDICTS]; /* verdicts by KHZ_VERIFY_* - 1 (since start) */
  _Atomic uint64_t vbase[KHZ_NVERDICTS];  /* vcount at the last statistics reset (loop thread) */
  khzOverrunCheck vlog[KHZ_LOOP_MAX_CHECKS];
  _Atomic int vlog_n;

  /* statistics shared with other threads */
  _Atomic uint64_t shared[S_NSHARED];
  khzHist lat, comp, cmdlat, resp, cpu;
};

/* ------------------------------------------------------------- helpers -- */

int64_t khz_loop_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* the calling thread's CPU time in ns (a system call on most kernels: the vDSO
 * serves only the global clocks); 0 when the loop is told not to read it */
static int64_t thread_cpu_now(const khzLoop *L) {
  if (!L->cfg.cpu_clock) return 0;
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* cfg.trace: the entry of the realtime tick that starts (NULL when not
 * tracing or the record is full) */
static khzLoopTraceTick *trace_begin(khzLoop *L, int64_t t_sched, int64_t t_wake) {
  khzLoopTrace *t = L->cfg.trace;
  if (!t) return NULL;
  size_t n = atomic_load_explicit(&t->n, memory_order_relaxed);
  if (n >= t->cap) return NULL;
  khzLoopTraceTick *e = &t->tick[n];
  e->seq = L->seq + 1;
  e->sched_ns = t_sched;
  e->late_ns = (int32_t)(t_wake - t_sched);
  e->cpu_wake = (int16_t)sched_getcpu();
  return e;
}

/* ns since the traced tick's wake-up */
static int32_t trace_since(const khzLoopTraceTick *e) {
  return (int32_t)(khz_loop_now() - e->sched_ns - e->late_ns);
}

static const char *const mode_names[KHZ_NMODES] = {"realtime", "lockstep", "fast"};

const char *khz_loop_modeName(int mode) {
  return mode >= 0 && mode < KHZ_NMODES ? mode_names[mode] : "unknown";
}

int khz_loop_modeFromName(const char *name) {
  for (int i = 0; name && i < KHZ_NMODES; i++)
    if (strcmp(name, mode_names[i]) == 0) return i;
  return -1;
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t seen, int64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}

/* the I/O side: wakes the loop thread if it waits in lockstep or pause */
static void ring_doorbell(khzLoop *L) {
  atomic_fetch_add(&L->doorbell, 1);
  if (atomic_load(&L->waiting))
    syscall(SYS_futex, (uint32_t *)&L->doorbell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* the loop thread: waits for the doorbell at most ns unless a request or a stop
 * is already pending */
static void doorbell_wait(khzLoop *L, int64_t ns) {
  atomic_store(&L->waiting, 1);
  uint32_t seen = atomic_load(&L->doorbell);
  if (!atomic_load(&L->stop) && !khz_ring_peek(&L->requests)) futex_wait(&L->doorbell, seen, ns);
  atomic_store(&L->waiting, 0);
}

static void wake_io(khzLoop *L) {
  if (L->cfg.wake) L->cfg.wake(L->cfg.wake_user);
}

static void set_shared(khzLoop *L, int i, uint64_t v) {
  atomic_store_explicit(&L->shared[i], v, memory_order_relaxed);
}

static uint64_t get_shared(khzLoop *L, int i) {
  return atomic_load_explicit(&L->shared[i], memory_order_relaxed);
}

static void share_stats(khzLoop *L) {
  set_shared(L, S_TICKS, L->st.ticks);
  set_shared(L, S_OVERRUNS, L->st.overruns);
  set_shared(L, S_MISSED, L->st.missed);
  set_shared(L, S_COMMANDS, L->st.commands);
  set_shared(L, S_ON_TIME, L->st.on_time);
  set_shared(L, S_LATE, L->st.late);
  set_shared(L, S_DROPPED, L->st.states_dropped);
  set_shared(L, S_WATCHDOG, L->st.watchdog_engaged);
  set_shared(L, S_LSTIMEOUT, L->st.lockstep_timeouts);
  set_shared(L, S_SEQ, L->seq);
  set_shared(L, S_MODE, (uint64_t)L->cfg.mode);
  set_shared(L, S_PAUSED, (uint64_t)(L->paused && L->steps_left == 0));
  set_shared(L, S_LATENESS, (uint64_t)L->st.lateness_ns);
  set_shared(L, S_COMPUTE, (uint64_t)L->st.compute_ns);
  set_shared(L, S_CPU, (uint64_t)L->st.cpu_ns);
  set_shared(L, S_BETWEEN, (uint64_t)L->st.between_ns);
  set_shared(L, S_OWN, L->st.own_overruns);
  set_shared(L, S_PREEMPTED, L->st.preempted_overruns);
  set_shared(L, S_LATE_WAKE, L->st.late_overruns);
  set_shared(L, S_UNVERIFIED, L->st.unverified);
}

int khz_loop_actuators(const khzModel *m, int *dof) {
  int na = 0;
  for (int b = 1; b < m->nbody; b++) {
    int t = m->jnt_type[b];
    if (t != KHZ_JOINT_REVOLUTE && t != KHZ_JOINT_CONTINUOUS && t != KHZ_JOINT_PRISMATIC) continue;
    if (dof) dof[na] = m->jnt_dofadr[b];
    na++;
  }
  return na;
}

void khz_loop_defaultConfig(khzLoopConfig *c) {
  memset(c, 0, sizeof *c);
  c->rate_hz = 1000;
  c->mode = KHZ_MODE_REALTIME;
  c->rt_priority = 80;
  c->cpu = -1;
  c->threads = 1;
  c->lock_memory = 1;
  c->prefault_stack = 256 * 1024;
  c->dma_latency_us = -1;
  c->watchdog_s = 0.1;
  c->safe = KHZ_SAFE_ZERO;
  c->safe_damping = 1.0;
  c->lockstep_timeout_s = 1.0;
  c->cpu_clock = 1;
  c->state_ring = 256;
  c->request_ring = 64;
  c->haptic_timeout_s = 0.1;
}

/* ------------------------------------------------------------- timestep -- */

/* the loop's rate and with it the step size and the period: the only writer */
static void set_rate(khzLoop *L, double hz) {
  uint64_t bits;
  L->rate_hz = hz;
  L->timestep = 1.0 / hz;
  L->period_ns = llround(1e9 / hz);
  if (L->cfg.hil) khz_hilSetStep(L->cfg.hil, L->timestep);
  memcpy(&bits, &hz, sizeof bits);
  atomic_store_explicit(&L->rate_bits, bits, memory_order_release);
}

int khz_loop_hapticPassive(const khzHapticProxy *p, double T) { return khz_tick_passive(p, T); }

/* ----------------------------------------------------------- publishing -- */

/* the ring slot of a state: the header, then its arrays */
static size_t state_doubles(const khzModel *m, int nhaptic, const khzHil *hil) {
  size_t h = hil ? (size_t)khz_hilNValue(hil) + 2 * (size_t)khz_hilNSensor(hil) +
                       (size_t)khz_hilNDrive(hil)
                 : 0;
  return (size_t)m->nq + 2 * (size_t)m->nv + 14 * (size_t)m->nbody + 6 * (size_t)nhaptic + h;
}

static void state_layout(khzLoop *L, khzLoopState *s) {
  const khzModel *m = L->m;
  double *p = (double *)((unsigned char *)s + ((sizeof *s + 63) & ~(size_t)63));
  s->q = p, p += m->nq;
  s->qd = p, p += m->nv;
  s->tau = p, p += m->nv;
  s->xpos = p, p += 3 * m->nbody;
  s->xquat = p, p += 4 * m->nbody;
  s->cvel = p, p += 6 * m->nbody;
  s->haptic_wrench = p, p += 6 * L->cfg.nhaptic;
  const khzHil *hil = L->cfg.hil;
  s->nsensor = hil ? khz_hilNSensor(hil) : 0;
  s->nsensor_value = hil ? khz_hilNValue(hil) : 0;
  s->ndrive = hil ? khz_hilNDrive(hil) : 0;
  s->sensor = p, p += s->nsensor_value;
  s->sensor_tick = p, p += s->nsensor;
  s->sensor_fault = (int *)p, p += s->nsensor; /* ints in a double's room each */
  s->drive_fault = (int *)p, p += s->ndrive;
  s->sleeping = (int *)p, p += m->nbody; /* ints in a double's room each */
  s->contact = (khzLoopContact *)p;
  s->nhaptic = L->cfg.nhaptic;
  s->nq = m->nq, s->nv = m->nv, s->nbody = m->nbody;
}

static void copy_contacts(khzLoop *L, khzLoopState *s) {
  const khzData *d = L->d;
  int n = 0;
  s->ncontact = 0;
  if (!L->cfg.publish_contacts) return;
  for (int c = 0; c < d->ncontact; c++) {
    const khzContact *ct = &d->contact[c];
    for (int k = 0; k < ct->npoint; k++) {
      if (n == KHZ_LOOP_MAX_CONTACTS) {
        s->flags |= KHZ_FLAG_CONTACTS_TRUNCATED;
        s->ncontact = n;
        return;
      }
      const khzContactPoint *p = &d->cpoint[ct->point_adr + k];
      khzLoopContact *o = &s->contact[n++];
      o->body[0] = ct->body[0], o->body[1] = ct->body[1];
      o->geom[0] = ct->geom[0], o->geom[1] = ct->geom[1];
      memcpy(o->pos, p->pos, sizeof o->pos);
      memcpy(o->normal, ct->normal, sizeof o->normal);
      o->depth = p->depth;
      memcpy(o->force, p->force, sizeof o->force);
    }
  }
  s->ncontact = n;
}

/* ------------------------------------------------------------- network -- */

static khzLoopState *hist_slot(khzLoop *L, int i) {
  return (khzLoopState *)(L->hist + (size_t)i * L->slot_bytes);
}

/* the next history slot; when every slot waits, the oldest is dropped */
static khzLoopState *hist_push(khzLoop *L) {
  if (L->hist_len == L->hist_cap) {
    L->hist_head = (L->hist_head + 1) % L->hist_cap;
    L->hist_len--;
    L->st.states_dropped++;
  }
  return hist_slot(L, (L->hist_head + L->hist_len) % L->hist_cap);
}

/* the state just filled in the next history slot: when it is shown (in
 * order), or lost */
static void hist_schedule(khzLoop *L) {
  const khzNetworkModel *n = &L->cfg.net;
  int i = (L->hist_head + L->hist_len) % L->hist_cap;
  int64_t due = (int64_t)L->seq + n->state_delay +
                (n->state_jitter ? (int64_t)(khz_rngNext(&L->net_rng) % (uint64_t)(n->state_jitter + 1)) : 0);
  if (due < L->state_last_due) due = L->state_last_due;
  L->state_last_due = due;
  L->hist_due[i] = due;
  L->hist_lost[i] = n->state_loss > 0 && khz_rngUniform(&L->net_rng) < n->state_loss;
  L->hist_len++;
}

/* states whose time has come go to the I/O side */
static void emit_due(khzLoop *L) {
  while (L->hist_len > 0 && L->hist_due[L->hist_head] <= (int64_t)L->seq) {
    const khzLoopState *h = hist_slot(L, L->hist_head);
    if (!L->hist_lost[L->hist_head]) {
      khzLoopState *s = khz_ring_claim(&L->states);
      if (!s) {
        L->st.states_dropped++;
      } else {
        memcpy(s, h, L->slot_bytes);
        state_layout(L, s);
        s->shown_seq = L->seq;
        khz_ring_commit(&L->states);
        L->shown_seq = h->seq;
        L->stamps[h->seq % KHZ_STAMPS] = khz_loop_now();
      }
    }
    L->hist_head = (L->hist_head + 1) % L->hist_cap;
    L->hist_len--;
  }
}

static void copy_command(khzCommand *dst, const khzCommand *src, int na, int nu) {
  double *tau = dst->tau_ff, *q = dst->q_target, *qd = dst->qd_target, *kp = dst->kp, *kd = dst->kd;
  double *act = dst->act_ff, *on = dst->act_on;
  *dst = *src;
  dst->tau_ff = tau, dst->q_target = q, dst->qd_target = qd, dst->kp = kp, dst->kd = kd;
  dst->act_ff = act, dst->act_on = on;
  size_t n = (size_t)na * sizeof(double);
  memcpy(tau, src->tau_ff, n);
  memcpy(q, src->q_target, n);
  memcpy(qd, src->qd_target, n);
  memcpy(kp, src->kp, n);
  memcpy(kd, src->kd, n);
  if (nu) memcpy(act, src->act_ff, (size_t)nu * sizeof(double));
  if (nu) memcpy(on, src->act_on, (size_t)nu * sizeof(double));
}

/* the five per-actuator arrays and the model actuators' act_ff, act_on of a
 * command at p (nu follows them) */
static void command_layout(khzCommand *c, double *p, size_t na, size_t nu) {
  c->tau_ff = p, c->q_target = p + na, c->qd_target = p + 2 * na;
  c->kp = p + 3 * na, c->kd = p + 4 * na;
  c->act_ff = p + 5 * na, c->act_on = p + 5 * na + nu;
}

/* a command the tick took goes on the wire (lost, or due later, in order);
 * the newest command whose time has come takes effect. L->fresh then says
 * whether one did this tick. */
static const khzCommand *net_commands(khzLoop *L, uint64_t seq) {
  const khzNetworkModel *n = &L->cfg.net;
  if (L->fresh) {
    L->fresh = 0;
    int lost = n->command_loss > 0 && khz_rngUniform(&L->net_rng) < n->command_loss;
    if (!lost) {
      int64_t due = (int64_t)seq + n->command_delay +
                    (n->command_jitter ? (int64_t)(khz_rngNext(&L->net_rng) %
                                                   (uint64_t)(n->command_jitter + 1))
                                       : 0);
      if (due < L->cmd_last_due) due = L->cmd_last_due;
      L->cmd_last_due = due;
      if (L->cq_len == L->cq_cap) L->cq_head = (L->cq_head + 1) % L->cq_cap, L->cq_len--;
      int i = (L->cq_head + L->cq_len) % L->cq_cap;
      copy_command(&L->cq[i], &L->cmd_slot[L->cmd.front], L->na, L->nu);
      L->cq_due[i] = due;
      L->cq_len++;
    }
  }
  while (L->cq_len > 0 && L->cq_due[L->cq_head] <= (int64_t)seq) {
    copy_command(&L->applied, &L->cq[L->cq_head], L->na, L->nu);
    L->have_applied = 1;
    L->fresh = 1;
    L->cq_head = (L->cq_head + 1) % L->cq_cap;
    L->cq_len--;
  }
  return &L->applied;
}

static void net_reset(khzLoop *L) {
  khz_rngSeed(&L->net_rng, L->cfg.net.seed, 0x6e6574ull /* "net" */);
  L->hist_head = L->hist_len = 0;
  L->cq_head = L->cq_len = 0;
  L->state_last_due = L->cmd_last_due = 0;
  L->have_applied = 0;
}

/* hands the current state (seq L->seq) to the I/O side; the tick started at
 * t_wake (scheduled t_sched) */
static void publish(khzLoop *L, uint32_t flags, int64_t t_sched, int64_t t_wake) {
  const khzModel *m = L->m;
  khzData *d = L->d;
  int is_tick = L->seq > 0 && !(flags & KHZ_FLAG_RESET);
  int64_t t_done = khz_loop_now();
  L->st.compute_ns = t_done - t_wake;
  L->st.cpu_ns = L->st.between_ns = 0;
  if (is_tick) {
    /* the tick's CPU time over the same window, and the loop's CPU time between
     * the previous tick's state and the sleep (the wake call, the requests) */
    int64_t cpu_done = thread_cpu_now(L);
    L->st.cpu_ns = cpu_done - L->cpu_wake;
    if (L->cfg.mode == KHZ_MODE_REALTIME && L->cpu_sleep > L->cpu_done)
      L->st.between_ns = L->cpu_sleep - L->cpu_done;
    L->t_done = t_done;
    L->cpu_done = cpu_done;
  }
  L->st.superseded = atomic_load_explicit(&L->cmd.overwritten, memory_order_relaxed) -
                     atomic_load_explicit(&L->superseded_base, memory_order_relaxed);
  if (L->vd) {
    L->st.verified_own = atomic_load_explicit(&L->vcount[0], memory_order_relaxed) - L->vbase[0];
    L->st.verified_host = atomic_load_explicit(&L->vcount[1], memory_order_relaxed) - L->vbase[1];
    L->st.verify_mismatch = atomic_load_explicit(&L->vcount[2], memory_order_relaxed) - L->vbase[2];
    L->st.verified_around = atomic_load_explicit(&L->vcount[3], memory_order_relaxed) - L->vbase[3];
    L->st.verified_requests = atomic_load_explicit(&L->vcount[4], memory_order_relaxed) - L->vbase[4];
  }
  L->stamps[L->seq % KHZ_STAMPS] = t_done;
  if (L->paused && L->steps_left <= 1) flags |= KHZ_FLAG_PAUSED;

  /* fill a ring slot (a history slot when the network holds it back), or count the drop */
  int hold = L->net_state && !(flags & KHZ_FLAG_RESET) && L->seq > 0;
  if (L->net_state && !hold) L->hist_len = 0; /* a reset: what was in flight is never shown */
  khzLoopState *s = hold ? hist_push(L) : khz_ring_claim(&L->states);
  if (!s) {
    L->st.states_dropped++;
  } else {
    s->seq = L->seq;
    s->shown_seq = L->seq;
    s->reset_seq = L->reset_seq;
    s->sim_time = d->time;
    s->tick_time_ns = t_sched;
    s->mono_ns = t_done;
    s->wall_ns = wall_now();
    s->rate_hz = L->rate_hz;
    s->mode = L->cfg.mode;
    s->contact_method = d->contact_method;
    s->flags = flags;
    const khzCommand *c = L->net_cmd ? &L->applied : &L->cmd_slot[L->cmd.front];
    int have = L->net_cmd ? L->have_applied : L->have_cmd;
    s->cmd_seq = have ? c->seq : 0;
    s->cmd_state_seq = have ? c->state_seq : 0;
    s->cmd_client = have ? c->client : 0;
    s->cmd_client_time_ns = have ? c->client_time_ns : 0;
    s->hash = L->cfg.publish_hash ? khz_hashState(m, d) : 0;
    s->stats = L->st;
    memcpy(s->warning, d->warning, sizeof s->warning);
    memcpy(s->q, d->q, (size_t)m->nq * sizeof(double));
    memcpy(s->qd, d->qd, (size_t)m->nv * sizeof(double));
    memcpy(s->tau, d->tau_applied, (size_t)m->nv * sizeof(double));
    memcpy(s->xpos, d->xpos, 3 * (size_t)m->nbody * sizeof(double));
    memcpy(s->cvel, d->cvel, 6 * (size_t)m->nbody * sizeof(double));
    for (int b = 0; b < m->nbody; b++) khzu_mat2quat(s->xquat + 4 * b, d->xrot + 9 * b);
    for (int b = 0; b < m->nbody; b++) s->sleeping[b] = khz_bodySleeping(m, d, b);
    memcpy(s->haptic_wrench, L->hwrench, 6 * (size_t)L->cfg.nhaptic * sizeof(double));
    if (L->cfg.hil) {
      const khzHil *hil = L->cfg.hil;
      memcpy(s->sensor, khz_hilValues(hil), (size_t)s->nsensor_value * sizeof(double));
      for (int i = 0; i < s->nsensor; i++) {
        s->sensor_tick[i] = (double)khz_hilSampledAt(hil, i);
        s->sensor_fault[i] = khz_hilSensorFaultType(hil, i);
      }
      for (int i = 0; i < s->ndrive; i++) s->drive_fault[i] = khz_hilDriveFaultType(hil, i);
    }
    copy_contacts(L, s);
    if (hold) {
      hist_schedule(L);
    } else {
      khz_ring_commit(&L->states);
      L->shown_seq = L->seq;
    }
  }
  if (L->net_state) emit_due(L);
  if (L->tr) L->tr->copy_ns = trace_since(L->tr);

  /* histograms, shared counters, then wake the I/O side */
  khz_hist_add(&L->comp, L->st.compute_ns);
  if (is_tick && L->cfg.cpu_clock) khz_hist_add(&L->cpu, L->st.cpu_ns);
  if (L->cfg.mode == KHZ_MODE_REALTIME && !(flags & KHZ_FLAG_RESET))
    khz_hist_add(&L->lat, L->st.lateness_ns);
  share_stats(L);
  if (L->tr) L->tr->stats_ns = trace_since(L->tr);
  if (L->vsaved && is_tick) { /* verify_overruns: the copy and the wake, for the next tick */
    int64_t c_copy = thread_cpu_now(L);
    wake_io(L);
    L->wake_next = thread_cpu_now(L) - c_copy;
    L->wake_next_n = 1;
    L->copy_next = c_copy - L->cpu_done;
  } else {
    wake_io(L);
  }
  if (L->tr) { /* the traced tick's end: its entry is complete */
    khzLoopTraceTick *e = L->tr;
    e->wake_ns = trace_since(e);
    e->done_ns = (int32_t)L->st.compute_ns;
    e->cpu_ns = (int32_t)L->st.cpu_ns;
    e->between_ns = (int32_t)L->st.between_ns;
    e->cpu_done = (int16_t)sched_getcpu();
    e->pairs = d->ncontact - d->ncontact_asleep;
    e->points = d->ncpoint;
    atomic_store_explicit(&L->cfg.trace->n, (size_t)(e - L->cfg.trace->tick) + 1, memory_order_release);
    L->tr = NULL;
  }
}

/* ------------------------------------------------------------- requests -- */

static void post_reply(khzLoop *L, const khzReply *r) {
  khzReply *out = khz_ring_claim(&L->replies);
  if (!out) { /* sized for every request in flight: counted, should it happen */
    if (r->snap > 0 && r->snap <= KHZ_NSNAP) /* nobody will poll it: drop its snapshot */
      atomic_fetch_sub_explicit(&L->snap_refs[r->snap - 1], 1, memory_order_acq_rel);
    atomic_fetch_add_explicit(&L->replies_lost, 1, memory_order_relaxed);
    return;
  }
  *out = *r;
  khz_ring_commit(&L->replies);
}

static int refuse_as(khzReply *r, int status, const char *msg) {
  r->status = status;
  snprintf(r->message, sizeof r->message, "%s", msg);
  return -1;
}

static int refuse(khzReply *r, const char *msg) { return refuse_as(r, KHZ_REPLY_INVALID, msg); }

static int all_finite(const double *v, int n) {
  for (int i = 0; i < n; i++)
    if (!isfinite(v[i])) return 0;
  return 1;
}

/* SCHED_FIFO off while in fast mode, back on when leaving it */
static void fast_policy(khzLoop *L, int fast) {
  if (!L->fifo) return;
  struct sched_param sp = {.sched_priority = fast ? 0 : L->cfg.rt_priority};
  pthread_setschedparam(pthread_self(), fast ? SCHED_OTHER : SCHED_FIFO, &sp);
}


/* a fault event now (khz/hil.h): on a sensor or a drive, a stall of the
 * command channel, or a push; -1 when the target cannot take it */
static int apply_fault(khzLoop *L, const khzFaultEvent *e) {
  const khzModel *m = L->m;
  khzData *d = L->d;
  if (!(e->duration >= 0)) return -1;
  double until = e->duration > 0 ? d->time + e->duration : 0;
  switch (e->target) {
    case KHZ_FAULT_ON_SENSOR:
      return L->cfg.hil ? khz_hilSensorFault(L->cfg.hil, e->index, e->type, e->value, until) : -1;
    case KHZ_FAULT_ON_DRIVE:
      return L->cfg.hil ? khz_hilDriveFault(L->cfg.hil, e->index, e->type, e->value, until) : -1;
    case KHZ_FAULT_ON_COMMANDS:
      if (e->type != KHZ_FAULT_STALL && e->type != KHZ_FAULT_NONE) return -1;
      L->stall_until = e->type == KHZ_FAULT_NONE ? 0 : e->duration > 0 ? until : -1;
      return 0;
    case KHZ_FAULT_ON_BODY:
      if (e->index < 1 || e->index >= m->nbody || !(e->duration > 0) ||
          L->nwrench == KHZ_LOOP_MAX_WRENCH || !all_finite(e->wrench, 6))
        return -1;
      L->wrench[L->nwrench].body = e->index;
      memcpy(L->wrench[L->nwrench].wrench, e->wrench, 6 * sizeof(double));
      L->wrench[L->nwrench].until = until;
      L->wrench[L->nwrench].fault = 1;
      L->nwrench++;
      return 0;
  }
  return -1;
}

/* the scripted faults that are due, then the faults whose time is up */
static void run_faults(khzLoop *L) {
  double t = L->d->time;
  while (L->next_event < L->cfg.nfault_event && L->cfg.fault_event[L->next_event].at <= t)
    apply_fault(L, &L->cfg.fault_event[L->next_event++]);
  if (L->cfg.hil) khz_hilExpire(L->cfg.hil, t);
  if (L->stall_until > 0 && t >= L->stall_until) L->stall_until = 0;
}

static int stalled(const khzLoop *L) { return L->stall_until != 0; }

/* reset to q0 (or q), keep the run-time contact method; publishes the new state */
static void do_reset(khzLoop *L, const khzRequest *rq) {
  const khzModel *m = L->m;
  khzData *d = L->d;
  int method = d->contact_method;
  khz_resetData(m, d);
  d->contact_method = method;
  if (rq->ndata == m->nq) {
    memcpy(d->q, rq->data, (size_t)m->nq * sizeof(double));
    for (int b = 1; b < m->nbody; b++) {
      if (m->jnt_type[b] == KHZ_JOINT_FLOATING) khzu_normalizeQuat(d->q + m->jnt_qadr[b] + 3);
      if (m->jnt_type[b] == KHZ_JOINT_SPHERICAL) khzu_normalizeQuat(d->q + m->jnt_qadr[b]);
    }
    khz_resetStick(m, d);
    khz_kinematics(m, d);
  }
  if (L->cfg.hil) {
    khz_kinematics(m, d);
    khz_hilReset(L->cfg.hil, m, d);
  }
  L->next_event = 0;
  L->stall_until = 0;
  if (L->net_state || L->net_cmd) net_reset(L);
  L->have_cmd = L->fresh = L->flowing = L->engaged = 0;
  L->nwrench = 0;
  L->lockstep_waiting = 0;
  memset(L->hwrench, 0, sizeof L->hwrench);
  L->seq++;
  L->reset_seq = L->seq;
  int64_t t = khz_loop_now();
  publish(L, KHZ_FLAG_RESET | KHZ_FLAG_NO_COMMAND, t, t);
}

static int apply_request(khzLoop *L, const khzRequest *rq, khzReply *r) {
  const khzModel *m = L->m;
  khzData *d = L->d;
  khzLoopConfig *c = &L->cfg;
  switch (rq->type) {
    case KHZ_REQ_RESET:
      if (rq->ndata != 0 && rq->ndata != m->nq) return refuse(r, "reset: q must have nq values");
      if (!all_finite(rq->data, rq->ndata)) return refuse(r, "reset: q is not finite");
      if (rq->ndata && khz_loop_checkReset(m, rq->data, r->message, sizeof r->message)) {
        r->status = KHZ_REPLY_INVALID;
        return -1;
      }
      do_reset(L, rq);
      return 0;
    case KHZ_REQ_PAUSE:
      L->paused = 1;
      L->steps_left = 0;
      return 0;
    case KHZ_REQ_RESUME:
      /* the schedule starts afresh only when the loop was held: a Resume,
       * SetMode or SetRate that changes nothing leaves every client's ticks
       * where they were (a flood of them used to shift the schedule) */
      if (L->paused || L->steps_left) L->armed = 0;
      L->paused = 0;
      L->steps_left = 0;
      return 0;
    case KHZ_REQ_STEP:
      if (rq->ival < 1) return refuse(r, "step: the number of ticks must be at least 1");
      if (L->step_id) {
        khzReply old = {.id = L->step_id, .type = KHZ_REQ_STEP, .status = KHZ_REPLY_REFUSED,
                        .seq = L->seq};
        snprintf(old.message, sizeof old.message, "step: interrupted by a newer step request");
        post_reply(L, &old);
      }
      L->paused = 1;
      L->steps_left = rq->ival;
      L->step_id = rq->id;
      L->armed = 0;
      return 1; /* replied when the ticks are done */
    case KHZ_REQ_MODE:
      if (rq->ival < 0 || rq->ival >= KHZ_NMODES) return refuse(r, "mode: unknown mode");
      if (rq->ival != (int)c->mode) {
        fast_policy(L, rq->ival == KHZ_MODE_FAST);
        L->armed = 0;
      }
      c->mode = rq->ival;
      L->lockstep_waiting = 0;
      return 0;
    case KHZ_REQ_RATE: {
      double hz = rq->dval;
      if (!(hz >= KHZ_RATE_MIN_HZ && hz <= KHZ_RATE_MAX_HZ))
        return refuse(r, "rate: must be within " KHZ_RATE_RANGE(" to ") " Hz");
      for (int p = 0; p < c->nhaptic; p++) {
        if (!khz_tick_passive(&c->haptic[p], 1.0 / hz)) {
          snprintf(r->message, sizeof r->message,
                   "rate: haptic proxy %d would violate the passivity bound (damping > "
                   "stiffness * T / 2) at %g Hz",
                   p, hz);
          r->status = KHZ_REPLY_REFUSED;
          return -1;
        }
      }
      /* the in-tick PD's bound (kp <= 4 m / h^2, kd <= 2 m / h) tightens as
       * the rate falls: the gains in force must hold at the new step too */
      char why[sizeof r->message];
      if (khz_loop_checkGains(m, L->dof, L->na, L->kp, L->kd, 1.0 / hz, why, sizeof why)) {
        if (snprintf(r->message, sizeof r->message, "rate %g Hz: %s", hz, why) < 0) r->message[0] = 0;
        r->status = KHZ_REPLY_INVALID;
        return -1;
      }
      if (hz != L->rate_hz) {
        set_rate(L, hz);
        L->armed = 0;
      }
      return 0;
    }
    case KHZ_REQ_CONTACT:
      if (rq->ival < 0 || rq->ival >= KHZ_CONTACT_NMETHODS)
        return refuse(r, "contact: unknown contact method");
      if (khz_contactMethodRefusal(m, (int)rq->ival))
        return refuse_as(r, KHZ_REPLY_REFUSED, khz_contactMethodRefusal(m, (int)rq->ival));
      d->contact_method = rq->ival;
      return 0;
    case KHZ_REQ_GAINS:
      if (rq->ndata != 2 * L->na) return refuse(r, "gains: need kp and kd for every actuator");
      if (khz_loop_checkGains(m, L->dof, L->na, rq->data, rq->data + L->na, L->timestep, r->message,
                              sizeof r->message)) {
        r->status = KHZ_REPLY_INVALID;
        return -1;
      }
      memcpy(L->kp, rq->data, (size_t)L->na * sizeof(double));
      memcpy(L->kd, rq->data + L->na, (size_t)L->na * sizeof(double));
      return 0;
    case KHZ_REQ_HAPTIC_GAINS: {
      if (rq->ival < 0 || rq->ival >= c->nhaptic) return refuse(r, "haptic gains: no such proxy");
      if (rq->ndata != 4 || !all_finite(rq->data, 4))
        return refuse(r, "haptic gains: need 4 finite values");
      khzHapticProxy p = c->haptic[rq->ival];
      p.stiffness = rq->data[0], p.damping = rq->data[1];
      p.rot_stiffness = rq->data[2], p.rot_damping = rq->data[3];
      if (!khz_tick_passive(&p, L->timestep))
        return refuse_as(r, KHZ_REPLY_REFUSED,
                         "haptic gains: violate the passivity bound damping > stiffness * T / 2");
      c->haptic[rq->ival] = p;
      return 0;
    }
    case KHZ_REQ_WRENCH:
      if (rq->ival < 1 || rq->ival >= m->nbody) return refuse(r, "wrench: no such body");
      if (rq->ndata != 6 || !all_finite(rq->data, 6)) return refuse(r, "wrench: need 6 finite values");
      if (khz_loop_checkWrench(m, rq->ival, rq->data, r->message, sizeof r->message)) {
        r->status = KHZ_REPLY_INVALID;
        return -1;
      }
      if (!(rq->dval > 0) || !isfinite(rq->dval)) return refuse(r, "wrench: duration must be > 0");
      if (L->nwrench == KHZ_LOOP_MAX_WRENCH)
        return refuse_as(r, KHZ_REPLY_REFUSED, "wrench: too many wrenches active at once");
      L->wrench[L->nwrench].body = rq->ival;
      memcpy(L->wrench[L->nwrench].wrench, rq->data, 6 * sizeof(double));
      L->wrench[L->nwrench].until = d->time + rq->dval;
      L->wrench[L->nwrench].fault = 0;
      L->nwrench++;
      return 0;
    case KHZ_REQ_CLEAR_WRENCHES:
      L->nwrench = 0;
      return 0;
    case KHZ_REQ_FAULT: {
      if (rq->ndata != 4 || !all_finite(rq->data, 4) || !isfinite(rq->dval))
        return refuse(r, "fault: need target, index, type, duration (finite)");
      khzFaultEvent e = {.at = d->time, .target = (int)rq->data[0], .index = (int)rq->data[1],
                         .type = (int)rq->data[2], .value = rq->dval, .duration = rq->data[3]};
      if (apply_fault(L, &e)) return refuse(r, "fault: the target cannot take this fault or value");
      return 0;
    }
    case KHZ_REQ_WATCHDOG:
      if (!(rq->dval >= 0) || !isfinite(rq->dval)) return refuse(r, "watchdog: timeout must be >= 0");
      if (rq->ival < 0 || rq->ival >= KHZ_NSAFE) return refuse(r, "watchdog: unknown safe command");
      if (rq->ndata < 1 || !(rq->data[0] >= 0) || !isfinite(rq->data[0]))
        return refuse(r, "watchdog: damping must be >= 0");
      c->watchdog_s = rq->dval;
      c->safe = rq->ival;
      c->safe_damping = rq->data[0];
      return 0;
    case KHZ_REQ_LOCKSTEP_TIMEOUT:
      if (!(rq->dval >= 0) || !isfinite(rq->dval)) return refuse(r, "lockstep timeout must be >= 0");
      c->lockstep_timeout_s = rq->dval;
      return 0;
    case KHZ_REQ_PUBLISH:
      c->publish_contacts = rq->ival & 1;
      c->publish_hash = (rq->ival >> 1) & 1;
      return 0;
    case KHZ_REQ_HASH: {
      /* a snapshot of this state, shared by every hash request at it; the
       * I/O side hashes it (khz_loop_pollReply) */
      int k = -1;
      for (int i = 0; i < KHZ_NSNAP && k < 0; i++)
        if (L->snap_seq[i] == L->seq + 1) k = i;
      /* running in realtime, a snapshot less than KHZ_SNAP_TICKS old serves
       * (the reply names its state): a flood of GetStats costs the I/O side
       * at most one hash per KHZ_SNAP_TICKS ticks. Paused, stepping or in
       * lockstep every request gets the current state. */
      if (k < 0 && c->mode == KHZ_MODE_REALTIME && !L->paused) {
        for (int i = 0; i < KHZ_NSNAP; i++)
          if (L->snap_seq[i] && L->seq + 1 - L->snap_seq[i] < KHZ_SNAP_TICKS &&
              (k < 0 || L->snap_seq[i] > L->snap_seq[k]))
            k = i;
      }
      for (int i = 0; i < KHZ_NSNAP && k < 0; i++) {
        if (atomic_load_explicit(&L->snap_refs[i], memory_order_acquire) == 0) {
          khz_saveState(m, d, L->snap[i]);
          L->snap_seq[i] = L->seq + 1;
          k = i;
        }
      }
      /* every snapshot still referenced (the I/O side is behind): the newest
       * one serves, and the reply names its state */
      for (int i = 0; i < KHZ_NSNAP && k < 0; i++)
        if (L->snap_seq[i] && (k < 0 || L->snap_seq[i] > L->snap_seq[k])) k = i;
      if (k < 0) return refuse_as(r, KHZ_REPLY_BUSY, "stats: no state snapshot: retry");
      atomic_fetch_add_explicit(&L->snap_refs[k], 1, memory_order_acq_rel);
      r->snap = k + 1;
      r->seq = L->snap_seq[k] - 1;
      return 0;
    }
    case KHZ_REQ_RESET_STATS: {
      uint64_t ticks = L->st.ticks;
      memset(&L->st, 0, sizeof L->st);
      L->st.ticks = ticks;
      atomic_store(&L->superseded_base, atomic_load(&L->cmd.overwritten));
      for (int v = 0; v < KHZ_NVERDICTS; v++) L->vbase[v] = atomic_load(&L->vcount[v]);
      khz_hist_reset(&L->lat);
      khz_hist_reset(&L->comp);
      khz_hist_reset(&L->cmdlat);
      khz_hist_reset(&L->resp);
      khz_hist_reset(&L->cpu);
      share_stats(L);
      return 0;
    }
    default:
      return refuse(r, "unknown request type");
  }
}

/* applies pending requests and posts the replies. In realtime mode: at least
 * one, then more while the round has spent less than its budget (an eighth of
 * the period, at most KHZ_LOOP_REQUEST_BUDGET_NS); the rest wait for the next
 * round, so that no number of requests delays a tick. In lockstep and fast
 * mode every pending request is applied before the next tick, so that what a
 * client sent before its command is in effect at that command's tick whatever
 * the machine's load (determinism). */
static void process_requests(khzLoop *L) {
  khzRequest *rq;
  int any = 0, bounded = L->cfg.mode == KHZ_MODE_REALTIME;
  int64_t t0 = khz_loop_now(), budget = L->period_ns / 8;
  /* verify_overruns: the CPU clock after each request (its cost, by kind)
   * and after the round's statistics and wake */
  int64_t c = L->phist && bounded && khz_ring_peek(&L->requests) ? thread_cpu_now(L) : 0;
  if (budget > KHZ_LOOP_REQUEST_BUDGET_NS) budget = KHZ_LOOP_REQUEST_BUDGET_NS;
  while ((rq = khz_ring_peek(&L->requests))) {
    if (bounded && any && khz_loop_now() - t0 >= budget) break;
    khzReply r;
    memset(&r, 0, sizeof r);
    r.id = rq->id;
    r.type = rq->type;
    int rc = apply_request(L, rq, &r);
    if (L->cfg.request_hook) L->cfg.request_hook(L->cfg.request_hook_user, r.type);
    khz_ring_release(&L->requests);
    set_shared(L, S_REQUESTS, get_shared(L, S_REQUESTS) + 1);
    if (rc != 1) {
      if (!r.snap) r.seq = L->seq; /* a hash reply names its snapshot's state */
      post_reply(L, &r);
    }
    any++;
    if (c) {
      int kind = r.type >= 0 && r.type < KHZ_NREQUEST ? r.type : KHZ_NREQUEST;
      int64_t c1 = thread_cpu_now(L);
      khz_hist_add(&L->rhist[kind], c1 - c);
      L->req_kind_n[kind]++;
      L->req_kind_ns[kind] += c1 - c;
      L->req_cpu += c1 - c;
      c = c1;
    }
  }
  if (any) {
    share_stats(L);
    wake_io(L);
    /* for the overrun record (verify_overruns): what the round applied, and its wall time */
    L->req_count += any;
    L->req_ns += khz_loop_now() - t0;
    if (c) {
      L->wake_rounds += thread_cpu_now(L) - c;
      L->wake_rounds_n++;
    }
  }
}

/* ----------------------------------------------------------------- tick -- */

/* takes the newest command, if any; one computed before the latest reset is
 * dropped and reported */
static void take_command(khzLoop *L) {
  if (stalled(L)) return; /* a stalled channel: commands wait (and are superseded) */
  if (!khz_latest_take(&L->cmd)) return;
  const khzCommand *c = &L->cmd_slot[L->cmd.front];
  if (c->state_seq < L->reset_seq) {
    khzReply r;
    memset(&r, 0, sizeof r);
    r.type = KHZ_REPLY_STALE_COMMAND;
    r.status = KHZ_REPLY_REFUSED;
    r.seq = L->seq;
    r.client = c->client;
    r.cmd_seq = c->seq;
    snprintf(r.message, sizeof r.message,
             "command %llu answers state %llu, from before the reset at state %llu: dropped",
             (unsigned long long)c->seq, (unsigned long long)c->state_seq,
             (unsigned long long)L->reset_seq);
    post_reply(L, &r);
    L->have_cmd = L->fresh = 0;
    return;
  }
  L->have_cmd = 1;
  L->fresh = 1;
}

/* haptic couplings and perturbation wrenches into d->xfrc */
static uint32_t external_wrenches(khzLoop *L, int64_t now) {
  const khzModel *m = L->m;
  khzData *d = L->d;
  uint32_t flags = 0;
  memset(d->xfrc, 0, 6 * (size_t)m->nbody * sizeof(double));

  /* perturbations until their end time (simulated), then removed */
  for (int i = 0; i < L->nwrench;) {
    khzWrench *w = &L->wrench[i];
    if (d->time >= w->until) {
      L->wrench[i] = L->wrench[--L->nwrench];
      continue;
    }
    for (int k = 0; k < 6; k++) d->xfrc[6 * w->body + k] += w->wrench[k];
    if (w->fault) flags |= KHZ_FLAG_FAULT; /* a scheduled push is a fault, flagged while it acts */
    i++;
  }

  /* virtual couplings: off while the device input is missing or stale */
  int64_t stale = llround(L->cfg.haptic_timeout_s * 1e9);
  for (int p = 0; p < L->cfg.nhaptic; p++) {
    double *hw = L->hwrench + 6 * p, w[6];
    if (khz_latest_take(&L->hin[p])) L->hin_valid[p] = 1;
    const khzHapticInput *in = &L->hin_slot[p][L->hin[p].front];
    if (!L->hin_valid[p] || (stale > 0 && now - in->recv_ns > stale)) {
      memset(hw, 0, 6 * sizeof(double));
      flags |= KHZ_FLAG_HAPTIC_STALE;
      continue;
    }
    const khzHapticProxy *px = &L->cfg.haptic[p];
    khz_tick_coupling(m, d, px, in, w);
    for (int k = 0; k < 6; k++) {
      d->xfrc[6 * px->body + k] += w[k];
      hw[k] = -w[k];
    }
  }
  return flags;
}

/* the drives (khz/hil.h): a position (velocity) drive takes the PD
 * command's target of its joint; the safe command and torque commands pass
 * as torques; then every drive turns d->tau into what its motor delivers */
static void drive_targets(khzLoop *L, const khzCommand *c, int safe) {
  khzHil *hil = L->cfg.hil;
  khzData *d = L->d;
  for (int i = 0; i < khz_hilNDrive(hil); i++) {
    const khzDriveSpec *sp = khz_hilDriveSpec(hil, i);
    int a = L->drive_act[i];
    if (sp->mode == KHZ_DRIVE_TORQUE) continue;
    if (safe || c->kind != KHZ_CMD_PD || a < 0) {
      khz_hilDriveTorqueOnce(hil, i);
      continue;
    }
    d->tau[L->dof[a]] = sp->mode == KHZ_DRIVE_POSITION ? c->q_target[a] : c->qd_target[a];
  }
  khz_hilDrive(hil, L->m, d);
}

/* verify_overruns: the state before every realtime step, saved cheaply.
 * khz_saveState copies every pair slot (the default scene: 321 kB, 3 us warm
 * but about 30 us from memory at 1 kHz on a shared machine); a slot is
 * either in use by a contact of the last step's list (d->contact[i].slot) or
 * free, and a free slot is all zero with geom -1, -1 (free_slot, khz_resetData).
 * So the image here is time and every state field but pair, in
 * KHZ_STATE_FIELDS order (vhead bytes), then the number of slots in use and
 * each as (index, khzPairState); compact_expand rebuilds khz_saveState's
 * image from it, byte for byte. A slot missed here would change the re-run
 * and show as a hash mismatch, not as a verdict. */
static void compact_save(const khzModel *m, const khzData *d, unsigned char *out, size_t head) {
  unsigned char *p = out;
  memcpy(p, &d->time, sizeof d->time);
  p += sizeof d->time;
#define KHZ_X_COMPACT(type, name, count)                                         \
  if (strcmp(#name, "pair") != 0) {                                              \
    memcpy(p, d->name, (size_t)(count) * sizeof(type));                          \
    p += (size_t)(count) * sizeof(type);                                         \
  }
  KHZ_STATE_FIELDS(KHZ_X_COMPACT)
#undef KHZ_X_COMPACT
  p = out + head;
  unsigned char *count = p;
  int n = 0;
  p += sizeof n;
  for (int i = 0; i < d->ncontact; i++) {
    int slot = d->contact[i].slot;
    if (slot < 0 || slot >= m->npair_max || d->pair[slot].geom[0] < 0) continue;
    memcpy(p, &slot, sizeof slot);
    memcpy(p + sizeof slot, &d->pair[slot], sizeof(khzPairState));
    p += sizeof slot + sizeof(khzPairState);
    n++;
  }
  memcpy(count, &n, sizeof n);
}

static void compact_expand(const khzModel *m, const unsigned char *in, unsigned char *full,
                           size_t head) {
  const unsigned char *p = in;
  unsigned char *o = full;
  memcpy(o, p, sizeof(double));
  p += sizeof(double);
  o += sizeof(double);
#define KHZ_X_EXPAND(type, name, count)                                          \
  if (strcmp(#name, "pair") != 0) {                                              \
    memcpy(o, p, (size_t)(count) * sizeof(type));                                \
    p += (size_t)(count) * sizeof(type);                                         \
  } else {                                                                       \
    unsigned char *pairs = o;                                                    \
    khzPairState freed;                                                          \
    memset(&freed, 0, sizeof freed);                                             \
    freed.geom[0] = freed.geom[1] = -1;                                          \
    for (int s = 0; s < m->npair_max; s++)                                       \
      memcpy(pairs + (size_t)s * sizeof freed, &freed, sizeof freed);            \
    const unsigned char *q = in + head;                                          \
    int n;                                                                       \
    memcpy(&n, q, sizeof n);                                                     \
    q += sizeof n;                                                               \
    for (int k = 0; k < n; k++) {                                                \
      int slot;                                                                  \
      memcpy(&slot, q, sizeof slot);                                             \
      memcpy(pairs + (size_t)slot * sizeof freed, q + sizeof slot, sizeof freed); \
      q += sizeof slot + sizeof freed;                                           \
    }                                                                            \
  }                                                                              \
  o += (size_t)(count) * sizeof(type);
  KHZ_STATE_FIELDS(KHZ_X_EXPAND)
#undef KHZ_X_EXPAND
}

/* one tick: command, watchdog, controller, wrenches, step, publish */
static void tick(khzLoop *L, int64_t t_sched, int64_t t_wake, int timed_out) {
  const khzModel *m = L->m;
  khzData *d = L->d;
  uint64_t seq = L->seq + 1;
  uint32_t flags = L->pending_flags;
  L->pending_flags = 0;
  L->st.lateness_ns = L->cfg.mode == KHZ_MODE_REALTIME ? t_wake - t_sched : 0;
  L->t_wake = t_wake;

  /* scripted and timed faults, then the newest command, its age and latency */
  if (L->cfg.hil || L->cfg.nfault_event || L->stall_until != 0) run_faults(L);
  take_command(L);
  const khzCommand *c = &L->cmd_slot[L->cmd.front];
  if (L->net_cmd) c = net_commands(L, seq);
  int have_cmd = L->net_cmd ? L->have_applied : L->have_cmd;
  if (L->fresh) {
    L->fresh = 0;
    L->st.commands++;
    if (seq - c->state_seq == 1)
      L->st.on_time++;
    else
      L->st.late++;
    if (c->state_seq <= L->seq && L->seq - c->state_seq < KHZ_STAMPS) {
      int64_t t_state = L->stamps[c->state_seq % KHZ_STAMPS];
      khz_hist_add(&L->cmdlat, t_wake - t_state);
      khz_hist_add(&L->resp, c->recv_ns - t_state);
    }
    L->last_cmd_time = t_sched;
    L->flowing = 1;
  }

  /* watchdog: no command, a stale one (not in lockstep), or an expired lockstep wait */
  int safe = !have_cmd || timed_out;
  if (!safe && L->cfg.mode != KHZ_MODE_LOCKSTEP && L->cfg.watchdog_s > 0 &&
      t_sched - L->last_cmd_time > llround(L->cfg.watchdog_s * 1e9))
    safe = 1;
  if (safe && !L->engaged && L->flowing) L->st.watchdog_engaged++;
  L->engaged = safe;
  if (timed_out) {
    L->st.lockstep_timeouts++;
    flags |= KHZ_FLAG_LOCKSTEP_TIMEOUT;
  }
  if (!have_cmd) flags |= KHZ_FLAG_NO_COMMAND;

  /* actuator torques, then what the drives make of them */
  if (safe && !have_cmd && !timed_out && L->nu > 0 && L->cfg.actuator_start) {
    /* no command since the start or reset: the model's actuators at their initial controls */
    c = &L->initial;
    safe = 0;
    khz_tick_command(m, d, L->na, L->dof, c, L->kp, L->kd, L->nu, L->act);
  } else if (safe) {
    flags |= KHZ_FLAG_WATCHDOG;
    khz_tick_safe(m, d, L->na, L->dof, L->cfg.safe, L->cfg.safe_damping);
  } else {
    khz_tick_command(m, d, L->na, L->dof, c, L->kp, L->kd, L->nu, L->act);
  }
  if (L->cfg.hil) drive_targets(L, c, safe);
  flags |= external_wrenches(L, t_wake);
  if (L->tr) L->tr->command_ns = trace_since(L->tr);

  /* step; warnings raised by it become flags */
  int effort = d->warning[KHZ_WARN_EFFORT] + d->warning[KHZ_WARN_BADCTRL];
  int bad = d->warning[KHZ_WARN_BADSTATE];
  /* the LCP method's solves are bounded to half the period in realtime mode */
  d->lcp_time_limit = L->cfg.mode == KHZ_MODE_REALTIME ? 0.5e-9 * (double)L->period_ns : 0;
  /* verify_overruns: the state the step starts from, and the step's CPU time */
  L->vsaved = L->vd && L->cfg.mode == KHZ_MODE_REALTIME;
  int64_t step_cpu0 = 0;
  if (L->vsaved) {
    uint64_t job = atomic_load_explicit(&L->vq_head, memory_order_relaxed) % KHZ_VERIFY_QUEUE;
    compact_save(m, d, L->vjob[job].pre, L->vhead);
    L->step_t0 = khz_loop_now(); /* vDSO: the wall phases, for the record */
    step_cpu0 = L->step_c0 = thread_cpu_now(L);
  }
  khz_stepWith(m, d, L->timestep);
  if (L->cfg.step_hook) L->cfg.step_hook(L->cfg.step_hook_user, d, 0);
  if (L->vsaved) {
    L->step_c1 = thread_cpu_now(L);
    L->step_cpu = L->step_c1 - step_cpu0;
    L->step_t1 = khz_loop_now();
  }
  if (L->cfg.hil) khz_hilSample(L->cfg.hil, m, d, seq - L->reset_seq);
  if (L->tr) L->tr->step_ns = trace_since(L->tr);
  if (stalled(L) || (L->cfg.hil && khz_hilAnyFault(L->cfg.hil))) flags |= KHZ_FLAG_FAULT;
  if (d->warning[KHZ_WARN_EFFORT] + d->warning[KHZ_WARN_BADCTRL] != effort) flags |= KHZ_FLAG_CLAMPED;
  if (d->warning[KHZ_WARN_BADSTATE] != bad) flags |= KHZ_FLAG_BADSTATE;
  L->st.ticks++;
  L->seq = seq;
  publish(L, flags, t_sched, t_wake);
}

/* verify_overruns: queues this tick's saved pre-step state, its post-step
 * state (still in L->d: publishing does not change it) and its times to the
 * verifier thread, or counts the overrun unverified when no job would be
 * left for the next tick's save (KHZ_VERIFY_QUEUE - 1 queued). Never waits:
 * one atomic load, two compact copies, one atomic store and a futex wake (a
 * system call that does not block). */
static void verify_handoff(khzLoop *L) {
  if (!L->vd || !L->vsaved) return;
  uint64_t head = atomic_load_explicit(&L->vq_head, memory_order_relaxed);
  if (head + 1 - atomic_load_explicit(&L->vq_tail, memory_order_acquire) >= KHZ_VERIFY_QUEUE) {
    L->st.unverified++;
    return;
  }
  verifyJob *j = &L->vjob[head % KHZ_VERIFY_QUEUE];
  compact_save(L->m, L->d, j->post, L->vhead);
  j->h = L->timestep;
  j->contact_method = L->d->contact_method;
  j->sleep_enabled = L->d->sleep_enabled;
  khzOverrunCheck *c = &j->check;
  memset(c, 0, sizeof *c);
  c->seq = L->seq;
  c->period_ns = L->period_ns;
  c->lateness_ns = L->st.lateness_ns;
  c->compute_ns = L->st.compute_ns;
  c->tick_cpu_ns = L->st.cpu_ns;
  c->between_ns = L->st.between_ns;
  c->step_cpu_ns = L->step_cpu;
  c->other_ns = L->st.between_ns + L->st.cpu_ns - L->step_cpu;
  c->other_prev_ns = L->other_prev;
  c->before_step_ns = L->step_t0 - L->t_wake;
  c->step_wall_ns = L->step_t1 - L->step_t0;
  c->after_step_ns = L->t_done - L->step_t1;
  c->requests = L->req_count;
  c->requests_ns = L->req_ns;
  memcpy(c->phase_ns, L->ph, sizeof c->phase_ns);
  c->wake_calls = L->wake_prev_n + L->wake_rounds_n;
  memcpy(c->req_n, L->req_kind_n, sizeof c->req_n);
  memcpy(c->req_ns, L->req_kind_ns, sizeof c->req_ns);
  atomic_store_explicit(&L->vq_head, head + 1, memory_order_release);
  atomic_fetch_add_explicit(&L->vbell, 1, memory_order_release);
  syscall(SYS_futex, (uint32_t *)&L->vbell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  L->vsaved = 0;
}

/* the verifier thread: restores each job's pre-step state into its own data,
 * steps it KHZ_VERIFY_RUNS times with the loop's step size, contact method
 * and sleeping switch (no LCP time bound), each timed by this thread's CPU clock, and judges the
 * least: khz's own when it does not fit the period less the tick's other
 * work. The first re-run's state hash must equal the loop's post-step hash
 * (same work), else the overrun is a mismatch. */
static int64_t cpu_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* a phase's p99 over the run, at least 1 us (so that a phase whose p99
 * rounds to nothing is not judged on the clock's resolution) */
static int64_t p99_floor(const khzHist *h) {
  int64_t b = khz_hist_quantile(h, 0.99);
  return b < 1000 ? 1000 : b;
}

/* the verdict on a re-run overrun (khzTickStats gives the rule): the step at
 * its least re-run, the wake at its least re-call per call (or as measured
 * if less: its kernel work depends on whether the I/O thread sleeps), each
 * kind of request and each other fixed phase as measured unless charged more
 * than KHZ_VERIFY_HOST_FACTOR times its p99 over the run (the same code on
 * the same sizes of data: what exceeds that was the host's), then at its p99
 * (n times the kind's p99 for n requests of a kind) */
static void judge(khzLoop *L, khzOverrunCheck *c) {
  int64_t fixed = 0;
  c->work_ns = 0;
  for (int p = 0; p < KHZ_NPHASES; p++) {
    int64_t a = c->phase_ns[p];
    c->phase_p99_ns[p] = 0;
    if (p == KHZ_PHASE_STEP) {
      a = c->rerun_min_ns;
    } else if (p == KHZ_PHASE_WAKE && c->wake_rerun_ns >= 0) {
      int64_t again = c->wake_rerun_ns * (c->wake_calls > 1 ? c->wake_calls : 1);
      if (again < a) a = again;
      fixed += a;
    } else if (p == KHZ_PHASE_REQUESTS) {
      a = 0;
      for (int k = 0; k <= KHZ_NREQUEST; k++) {
        int64_t r = c->req_ns[k], b = c->req_n[k] ? c->req_n[k] * p99_floor(&L->rhist[k]) : 0;
        c->req_p99_ns[k] = c->req_n[k] ? b / c->req_n[k] : 0;
        if (r > KHZ_VERIFY_HOST_FACTOR * b) r = b;
        c->req_accepted_ns[k] = r;
        c->phase_p99_ns[p] += b;
        a += r;
      }
    } else {
      int64_t b = p99_floor(&L->phist[p]);
      c->phase_p99_ns[p] = b;
      if (a > KHZ_VERIFY_HOST_FACTOR * b) a = b;
      fixed += a;
    }
    c->accepted_ns[p] = a;
    c->work_ns += a;
  }
  int64_t step = c->accepted_ns[KHZ_PHASE_STEP], req = c->accepted_ns[KHZ_PHASE_REQUESTS];
  if (c->rerun_hash != c->hash)
    c->verdict = KHZ_VERIFY_MISMATCH;
  else if (c->work_ns <= c->period_ns)
    c->verdict = KHZ_VERIFY_HOST;
  else if (step >= fixed && step >= req)
    c->verdict = KHZ_VERIFY_OWN;
  else if (fixed >= req)
    c->verdict = KHZ_VERIFY_AROUND;
  else
    c->verdict = KHZ_VERIFY_REQUESTS;
}

static void *verifier_main(void *arg) {
  khzLoop *L = arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  pthread_setname_np(pthread_self(), "khz-verify");
  const khzModel *m = L->m;
  khzData *vd = L->vd;
  while (!atomic_load(&L->stop)) {
    uint32_t seen = atomic_load_explicit(&L->vbell, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&L->vq_tail, memory_order_relaxed);
    if (tail == atomic_load_explicit(&L->vq_head, memory_order_acquire)) {
      futex_wait(&L->vbell, seen, KHZ_IDLE_WAIT_NS);
      continue;
    }
    verifyJob *j = &L->vjob[tail % KHZ_VERIFY_QUEUE];
    khzOverrunCheck *c = &j->check;
    c->rerun_min_ns = INT64_MAX;
    compact_expand(m, j->pre, L->vfull, L->vhead);
    for (int r = 0; r < KHZ_VERIFY_RUNS; r++) {
      khz_restoreState(m, vd, L->vfull);
      vd->contact_method = j->contact_method;
      vd->sleep_enabled = j->sleep_enabled;
      vd->lcp_time_limit = 0; /* unbounded: a bound hit in the loop's step shows as a mismatch */
      int64_t c0 = cpu_clock_ns();
      khz_stepWith(m, vd, j->h);
      if (L->cfg.step_hook) L->cfg.step_hook(L->cfg.step_hook_user, vd, 1);
      c->rerun_ns[r] = cpu_clock_ns() - c0;
      if (c->rerun_ns[r] < c->rerun_min_ns) c->rerun_min_ns = c->rerun_ns[r];
      if (r == 0) c->rerun_hash = khz_hashState(m, vd);
    }
    compact_expand(m, j->post, L->vfull, L->vhead);
    c->hash = khz_hashSavedState(m, L->vfull);
    /* the wake: the same call (ev_async_send in the server), each after 1 ms
     * asleep so that the I/O thread has gone back to waiting, as at a tick */
    c->wake_rerun_ns = L->cfg.wake ? INT64_MAX : -1;
    for (int r = 0; L->cfg.wake && r < KHZ_VERIFY_RUNS; r++) {
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
      int64_t c0 = cpu_clock_ns();
      L->cfg.wake(L->cfg.wake_user);
      int64_t t = cpu_clock_ns() - c0;
      if (t < c->wake_rerun_ns) c->wake_rerun_ns = t;
    }
    judge(L, c);
    int n = atomic_load_explicit(&L->vlog_n, memory_order_relaxed);
    if (n < KHZ_LOOP_MAX_CHECKS) {
      L->vlog[n] = *c;
      atomic_store_explicit(&L->vlog_n, n + 1, memory_order_release);
    }
    atomic_fetch_add(&L->vcount[c->verdict - 1], 1);
    atomic_store_explicit(&L->vq_tail, tail + 1, memory_order_release);
  }
  return NULL;
}

int khz_loop_overrunChecks(khzLoop *L, khzOverrunCheck *out, int max) {
  int n = atomic_load_explicit(&L->vlog_n, memory_order_acquire);
  if (n > max) n = max;
  for (int i = 0; i < n; i++) out[i] = L->vlog[i];
  return n < 0 ? 0 : n;
}

/* verify_overruns: this tick's CPU time by phase (KHZ_PHASE_*); the fixed
 * phases go into their histograms (whose p99 bounds them, judge()). The copy
 * and the wake are those of the previous tick's state (between_ns starts at
 * it); the rest of between_ns is the schedule, the hand-off and the clock
 * reads. */
static void record_phases(khzLoop *L) {
  int64_t *ph = L->ph;
  ph[KHZ_PHASE_PRE] = L->step_c0 - L->cpu_wake;
  ph[KHZ_PHASE_STEP] = L->step_cpu;
  ph[KHZ_PHASE_POST] = L->cpu_done - L->step_c1;
  ph[KHZ_PHASE_REQUESTS] = L->req_cpu;
  int64_t between = L->st.between_ns, copy = L->copy_prev, wake = L->wake_prev + L->wake_rounds;
  /* a phase the between window does not hold (the first tick after a pause
   * or a reset): none */
  if (copy + wake + L->req_cpu > between) copy = wake = 0, L->wake_prev_n = L->wake_rounds_n = 0;
  ph[KHZ_PHASE_COPY] = copy;
  ph[KHZ_PHASE_WAKE] = wake;
  int64_t rest = between - copy - wake - L->req_cpu;
  ph[KHZ_PHASE_REST] = rest > 0 ? rest : 0;
  static const int fixed[] = {KHZ_PHASE_PRE, KHZ_PHASE_POST, KHZ_PHASE_COPY, KHZ_PHASE_WAKE,
                              KHZ_PHASE_REST};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    khz_hist_add(&L->phist[fixed[i]], ph[fixed[i]]);
}

/* after a tick is judged: what the next tick's between window starts with */
static void next_phases(khzLoop *L) {
  if (L->vsaved) L->other_prev = L->st.between_ns + L->st.cpu_ns - L->step_cpu;
  L->req_count = 0, L->req_ns = 0, L->req_cpu = 0;
  L->copy_prev = L->copy_next, L->wake_prev = L->wake_next;
  L->copy_next = L->wake_next = 0;
  if (L->phist) { /* verify_overruns only */
    memset(L->req_kind_n, 0, sizeof L->req_kind_n);
    memset(L->req_kind_ns, 0, sizeof L->req_kind_ns);
    L->wake_rounds = 0, L->wake_rounds_n = 0;
    L->wake_prev_n = L->wake_next_n, L->wake_next_n = 0;
  }
}

/* realtime: the next deadline after a tick whose state was complete at t_end;
 * deadlines already past are skipped and counted. An overrun is khz's own when
 * the loop's CPU time since the previous state, less what was charged to it
 * while it slept (the wake call and the requests before the sleep, and the
 * tick), exceeds the period: it would have overrun on an idle machine.
 * Otherwise the thread lost the time off the CPU, mid-tick (wall compute
 * beyond its CPU time) or before waking (lateness), and the larger of the two
 * names it. */
static void schedule_next(khzLoop *L, int64_t t_end) {
  int64_t P = L->period_ns, n1 = L->next + P;
  if (L->vsaved) record_phases(L);
  if (t_end <= n1) {
    L->next = n1;
    next_phases(L);
    return;
  }
  int64_t j = (t_end - L->next) / P + 1;
  L->st.overruns++;
  if (!L->cfg.cpu_clock) {
    /* no CPU times (cpu_clock 0): counted, not attributed */
  } else if (L->st.between_ns + L->st.cpu_ns > P) {
    L->st.own_overruns++;
    verify_handoff(L);
  } else if (L->st.compute_ns - L->st.cpu_ns > L->st.lateness_ns)
    L->st.preempted_overruns++;
  else
    L->st.late_overruns++;
  next_phases(L);
  L->st.missed += (uint64_t)(j - 1);
  L->next += j * P;
  L->pending_flags |= KHZ_FLAG_OVERRUN;
}

static void sleep_until(int64_t t) {
  struct timespec ts = {(time_t)(t / 1000000000LL), (long)(t % 1000000000LL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

/* realtime: to the deadline t. With spin_us, the timer wakes the thread that
 * much early and it polls the clock up to t, so that the wake-up's own
 * latency (tens of us on a virtual machine's kernel) falls before the
 * deadline instead of after it */
static void wait_deadline(const khzLoop *L, int64_t t) {
  int64_t spin = (int64_t)L->cfg.spin_us * 1000;
  if (spin <= 0) {
    sleep_until(t);
    return;
  }
  if (khz_loop_now() < t - spin) sleep_until(t - spin);
  while (khz_loop_now() < t) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

/* lockstep: the command that answers the latest state is there */
static int lockstep_ready(khzLoop *L) {
  take_command(L);
  /* with a network model: a command that answers the newest state shown */
  uint64_t need = L->net_state ? L->shown_seq : L->seq;
  return L->have_cmd && L->cmd_slot[L->cmd.front].state_seq >= need;
}

static void run(khzLoop *L) {
  int64_t t0 = khz_loop_now();
  publish(L, KHZ_FLAG_NO_COMMAND, t0, t0);
  while (!atomic_load_explicit(&L->stop, memory_order_relaxed)) {
    process_requests(L);
    if (atomic_load_explicit(&L->stop, memory_order_relaxed)) break;

    /* paused: wait for requests */
    if (L->paused && L->steps_left == 0) {
      L->armed = 0;
      doorbell_wait(L, KHZ_IDLE_WAIT_NS);
      continue;
    }

    /* when the tick starts, by mode */
    int64_t t_sched, t_wake;
    int timed_out = 0;
    if (L->cfg.mode == KHZ_MODE_REALTIME) {
      if (!L->armed) {
        L->next = khz_loop_now() + L->period_ns;
        L->armed = 1;
        L->cpu_done = thread_cpu_now(L); /* no work before the first tick is counted to it */
      }
      L->cpu_sleep = thread_cpu_now(L); /* a spin (spin_us) counts to neither window */
      wait_deadline(L, L->next);
      t_wake = khz_loop_now();
      t_sched = L->next;
    } else if (L->cfg.mode == KHZ_MODE_LOCKSTEP) {
      atomic_store(&L->waiting, 1);
      uint32_t seen = atomic_load(&L->doorbell);
      if (!lockstep_ready(L)) {
        int64_t now = khz_loop_now(), limit = KHZ_IDLE_WAIT_NS;
        if (!L->lockstep_waiting) {
          L->lockstep_waiting = 1;
          L->lockstep_start = now;
        }
        int64_t timeout = llround(L->cfg.lockstep_timeout_s * 1e9);
        if (timeout > 0 && now - L->lockstep_start >= timeout) {
          timed_out = 1;
        } else {
          if (timeout > 0 && L->lockstep_start + timeout - now < limit)
            limit = L->lockstep_start + timeout - now;
          if (!atomic_load(&L->stop) && !khz_ring_peek(&L->requests))
            futex_wait(&L->doorbell, seen, limit);
          atomic_store(&L->waiting, 0);
          continue;
        }
      }
      atomic_store(&L->waiting, 0);
      /* requests the I/O side queued before this command are applied first */
      if (khz_ring_peek(&L->requests)) continue;
      L->lockstep_waiting = 0;
      t_sched = t_wake = khz_loop_now();
    } else {
      t_sched = t_wake = khz_loop_now();
    }

    /* the tick, the next deadline, a finished step request */
    int realtime = L->cfg.mode == KHZ_MODE_REALTIME;
    L->cpu_wake = thread_cpu_now(L); /* after t_wake: the lateness stays cyclictest's */
    if (realtime && L->cfg.trace && (L->tr = trace_begin(L, t_sched, t_wake)))
      L->tr->clock_ns = trace_since(L->tr);
    tick(L, t_sched, t_wake, timed_out);
    /* overruns are judged at the point where the state was complete, where
     * its CPU time was read: the wake callback's time counts to the next tick */
    if (realtime) schedule_next(L, L->t_done);
    if (L->steps_left > 0 && --L->steps_left == 0 && L->step_id) {
      khzReply r;
      memset(&r, 0, sizeof r);
      r.id = L->step_id;
      r.type = KHZ_REQ_STEP;
      r.seq = L->seq;
      L->step_id = 0;
      post_reply(L, &r);
      share_stats(L);
      wake_io(L);
    }
  }
}

/* ----------------------------------------------------- thread and setup -- */

/* touches n bytes of stack so that the pages are mapped before the first tick */
static __attribute__((noinline)) void prefault_stack(size_t n) {
  volatile unsigned char *p = __builtin_alloca(n);
  for (size_t i = 0; i < n; i += 4096) p[i] = 0;
}

/* asks for each privilege and writes one line saying what was granted */
static void setup_privileges(khzLoop *L) {
  char fifo[128], cpu[96], mem[160], dma[96];
  const khzLoopConfig *c = &L->cfg;

  /* scheduling */
  if (c->rt_priority > 0) {
    struct sched_param sp = {.sched_priority = c->rt_priority};
    int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    if (rc == 0) {
      L->fifo = 1;
      snprintf(fifo, sizeof fifo, "SCHED_FIFO %d granted", c->rt_priority);
      if (c->mode == KHZ_MODE_FAST) fast_policy(L, 1);
    } else {
      snprintf(fifo, sizeof fifo, "SCHED_FIFO %d NOT granted (%s: needs root, CAP_SYS_NICE or an rtprio limit)",
               c->rt_priority, strerror(rc));
    }
  } else {
    snprintf(fifo, sizeof fifo, "SCHED_FIFO not requested");
  }

  /* cpu affinity (the CPUs allowed before, for the step's workers) */
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) CPU_ZERO(&allowed);
  if (c->cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(c->cpu, &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (rc == 0)
      snprintf(cpu, sizeof cpu, "pinned to CPU %d", c->cpu);
    else
      snprintf(cpu, sizeof cpu, "CPU %d NOT pinned (%s)", c->cpu, strerror(rc));
  } else {
    snprintf(cpu, sizeof cpu, "CPU not pinned");
  }

  /* memory: lock what is mapped (and what will be, when the limit allows) */
  if (c->lock_memory) {
#ifdef KHZ_ASAN
    snprintf(mem, sizeof mem, "memory NOT locked (AddressSanitizer build)");
#else
    struct rlimit rl;
    int future = geteuid() == 0 || (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur == RLIM_INFINITY);
    if (mlockall(MCL_CURRENT | (future ? MCL_FUTURE : 0)) == 0)
      snprintf(mem, sizeof mem, "memory locked (%s)", future ? "current and future" : "current");
    else
      snprintf(mem, sizeof mem, "memory NOT locked (%s: raise RLIMIT_MEMLOCK or run as root)",
               strerror(errno));
#endif
  } else {
    snprintf(mem, sizeof mem, "memory lock not requested");
  }
  /* timers: no slack (SCHED_OTHER threads get 50 us by default) */
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);

  /* power management: shallow C-states while the loop runs */
  dma[0] = 0;
  if (c->dma_latency_us >= 0) {
    int32_t us = c->dma_latency_us;
    int fd = open("/dev/cpu_dma_latency", O_RDWR | O_CLOEXEC);
    if (fd >= 0 && write(fd, &us, sizeof us) == (ssize_t)sizeof us) {
      L->dma_fd = fd;
      snprintf(dma, sizeof dma, "; cpu_dma_latency %d us held", (int)us);
    } else {
      snprintf(dma, sizeof dma, "; cpu_dma_latency NOT set (%s)", strerror(errno));
      if (fd >= 0) close(fd);
    }
  }
  prefault_stack(c->prefault_stack);

  /* the step's workers: started here, they take this thread's class and
   * CPU; pinned, each moves to the next allowed CPU not the loop's */
  char thr[160] = "";
  if (c->threads > 1) {
    if (khz_setThreads(L->m, L->d, c->threads) != 0) {
      snprintf(thr, sizeof thr, "; %d step threads NOT started (one thread steps)", c->threads);
    } else {
      int n = snprintf(thr, sizeof thr, "; %d step threads", c->threads);
      for (int t = 1, cpu_next = 0; t < c->threads && c->cpu >= 0 && n < (int)sizeof thr; t++) {
        while (cpu_next < CPU_SETSIZE && (cpu_next == c->cpu || !CPU_ISSET(cpu_next, &allowed))) cpu_next++;
        if (cpu_next < CPU_SETSIZE && khz_threadsPin(L->d, t, cpu_next) == 0)
          n += snprintf(thr + n, sizeof thr - n, ", worker %d on CPU %d", t, cpu_next++);
        else
          n += snprintf(thr + n, sizeof thr - n, ", worker %d shares CPU %d", t, c->cpu);
      }
    }
  }
  char spin[48] = "";
  if (c->spin_us > 0) snprintf(spin, sizeof spin, "; spins the last %d us to each deadline", c->spin_us);
  snprintf(L->report, sizeof L->report, "rt thread: %s; %s; %s; %zu KiB stack pre-faulted%s%s%s%s",
           fifo, cpu, mem, c->prefault_stack / 1024, dma, spin,
           c->cpu_clock ? "" : "; CPU clock not read (overruns not attributed)", thr);
}

static void *loop_main(void *arg) {
  khzLoop *L = arg;
  /* signals go to the other threads; this one only ticks */
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  pthread_setname_np(pthread_self(), "khz-rt");
  atomic_store(&L->tid, (int)syscall(SYS_gettid));
  setup_privileges(L);
  if (L->cfg.thread_init) L->cfg.thread_init(L->cfg.thread_init_user);
  pthread_mutex_lock(&L->mu);
  L->ready = 1;
  pthread_cond_signal(&L->cv);
  pthread_mutex_unlock(&L->mu);
  run(L);
  return NULL;
}

static int fail(char *err, size_t errsz, const char *msg) {
  if (err && errsz) snprintf(err, errsz, "%s", msg);
  return -1;
}

static int check_config(const khzModel *m, const khzLoopConfig *c, char *err, size_t errsz) {
  char msg[256];
  if (!(c->rate_hz >= KHZ_RATE_MIN_HZ && c->rate_hz <= KHZ_RATE_MAX_HZ))
    return fail(err, errsz, "loop: rate_hz must be within " KHZ_RATE_RANGE(" to ") " Hz");
  if ((int)c->mode < 0 || c->mode >= KHZ_NMODES) return fail(err, errsz, "loop: unknown mode");
  if ((int)c->safe < 0 || c->safe >= KHZ_NSAFE) return fail(err, errsz, "loop: unknown safe command");
  if (!(c->watchdog_s >= 0) || !(c->lockstep_timeout_s >= 0) || !(c->safe_damping >= 0) ||
      !(c->haptic_timeout_s >= 0))
    return fail(err, errsz, "loop: watchdog, lockstep and haptic timeouts and damping must be >= 0");
  if (c->rt_priority < 0 || c->rt_priority > 99)
    return fail(err, errsz, "loop: rt_priority must be within 0 to 99");
  if (c->verify_overruns && !c->cpu_clock)
    return fail(err, errsz, "loop: verify_overruns needs cpu_clock (it re-runs the overruns that the "
                            "CPU clock counts as khz's own)");
  if (c->state_ring < 2 || c->request_ring < 2)
    return fail(err, errsz, "loop: rings need at least 2 slots");
  if (c->nhaptic < 0 || c->nhaptic > KHZ_LOOP_MAX_HAPTIC)
    return fail(err, errsz, "loop: too many haptic proxies");
  if (c->hil && khz_hilNDrive(c->hil) > KHZ_LOOP_MAX_DRIVE)
    return fail(err, errsz, "loop: too many drives");
  if (khz_networkCheck(&c->net, msg, sizeof msg) < 0) return fail(err, errsz, msg);
  for (int p = 0; p < c->nhaptic; p++) {
    int b = c->haptic[p].body;
    if (b < 1 || b >= m->nbody || m->jnt_type[b] != KHZ_JOINT_FLOATING) {
      snprintf(msg, sizeof msg, "loop: haptic proxy %d: body %d is not a floating body", p, b);
      return fail(err, errsz, msg);
    }
    if (!khz_tick_passive(&c->haptic[p], 1.0 / c->rate_hz)) {
      snprintf(msg, sizeof msg,
               "loop: haptic proxy %d (body '%s'): gains violate the passivity bound damping > "
               "stiffness * T / 2 at %g Hz",
               p, m->body_name[b], c->rate_hz);
      return fail(err, errsz, msg);
    }
  }
  return 0;
}

khzLoop *khz_loop_new(const khzModel *m, const khzLoopConfig *cfg, char *err, size_t errsz) {
  if (!m || !cfg) {
    fail(err, errsz, "loop: no model or configuration");
    return NULL;
  }
  if (check_config(m, cfg, err, errsz)) return NULL;

  /* the loop object, aligned for its atomics; zeroed and so touched */
  size_t sz = (sizeof(khzLoop) + 63) & ~(size_t)63;
  khzLoop *L = aligned_alloc(64, sz);
  if (!L) {
    fail(err, errsz, "loop: out of memory");
    return NULL;
  }
  memset(L, 0, sz);
  L->m = m;
  L->cfg = *cfg;
  set_rate(L, cfg->rate_hz);
  L->paused = cfg->start_paused;
  L->dma_fd = -1;
  khz_latest_init(&L->cmd);
  for (int p = 0; p < KHZ_LOOP_MAX_HAPTIC; p++) khz_latest_init(&L->hin[p]);
  pthread_mutex_init(&L->mu, NULL);
  pthread_cond_init(&L->cv, NULL);

  /* state, actuators, gains and the command slots */
  L->d = khz_makeData(m, 0);
  L->na = khz_loop_actuators(m, NULL);
  size_t na = (size_t)L->na + 1;
  L->dof = calloc(na, sizeof(int));
  L->kp = calloc(na, sizeof(double));
  L->kd = calloc(na, sizeof(double));
  L->nu = cfg->actuator ? cfg->nactuator : 0;
  L->cmd_stride = 5 * na + 2 * (size_t)L->nu;
  L->act = calloc((size_t)L->nu + 1, sizeof *L->act);
  L->initial.tau_ff = calloc(L->cmd_stride, sizeof(double));
  L->cmd_data = calloc(3 * L->cmd_stride, sizeof(double));
  L->req_data = (size_t)(m->nq > 2 * L->na ? m->nq : 2 * L->na) + 8;
  L->snap_size = khz_stateSize(m);
  for (int i = 0; i < KHZ_NSNAP; i++) L->snap[i] = calloc(1, L->snap_size);
  size_t slot = ((sizeof(khzLoopState) + 63) & ~(size_t)63) +
                state_doubles(m, cfg->nhaptic, cfg->hil) * sizeof(double) +
                KHZ_LOOP_MAX_CONTACTS * sizeof(khzLoopContact);
  L->slot_bytes = (slot + 63) & ~(size_t)63;
  /* the network model's state history and command queue */
  const khzNetworkModel *net = &cfg->net;
  L->net_state = net->state_delay || net->state_jitter || net->state_loss > 0;
  L->net_cmd = net->command_delay || net->command_jitter || net->command_loss > 0;
  int net_ok = 1;
  if (L->net_state) {
    L->hist_cap = net->state_delay + net->state_jitter + 2;
    L->hist = aligned_alloc(64, (size_t)L->hist_cap * L->slot_bytes);
    if (L->hist) {
      memset(L->hist, 0, (size_t)L->hist_cap * L->slot_bytes);
      for (int i = 0; i < L->hist_cap; i++) state_layout(L, hist_slot(L, i));
    }
    net_ok &= L->hist != NULL;
  }
  if (L->net_cmd) {
    L->cq_cap = net->command_delay + net->command_jitter + 2;
    L->net_cmd_data = calloc(L->cmd_stride * (size_t)(L->cq_cap + 1), sizeof(double));
    net_ok &= L->net_cmd_data != NULL;
    for (int i = 0; L->net_cmd_data && i <= L->cq_cap; i++) {
      double *p = L->net_cmd_data + (size_t)i * L->cmd_stride;
      command_layout(i < L->cq_cap ? &L->cq[i] : &L->applied, p, na, (size_t)L->nu);
    }
  }
  if (L->net_state || L->net_cmd) net_reset(L);
  int verify_ok = 1;
  if (cfg->verify_overruns) {
    L->vd = khz_makeData(m, 0);
    L->vhead = L->snap_size - (size_t)m->npair_max * sizeof(khzPairState);
    L->vcompact = L->vhead + sizeof(int) + (size_t)m->npair_max * (sizeof(int) + sizeof(khzPairState));
    for (int i = 0; i < KHZ_VERIFY_QUEUE; i++) {
      L->vjob[i].pre = calloc(1, L->vcompact);
      L->vjob[i].post = calloc(1, L->vcompact);
      verify_ok &= L->vjob[i].pre && L->vjob[i].post;
    }
    L->vfull = calloc(1, L->snap_size);
    L->phist = calloc(KHZ_NPHASES, sizeof(khzHist));
    L->rhist = calloc(KHZ_NREQUEST + 1, sizeof(khzHist));
    verify_ok &= L->vd != NULL && L->vfull != NULL && L->phist != NULL && L->rhist != NULL;
  }
  int ok = verify_ok && L->d && L->dof && L->kp && L->kd && L->cmd_data && L->act && L->initial.tau_ff &&
           L->snap[0] && L->snap[1] && net_ok &&
           khz_ring_init(&L->states, (size_t)cfg->state_ring, slot) == 0 &&
           khz_ring_init(&L->requests, (size_t)cfg->request_ring,
                         sizeof(khzRequest) + L->req_data * sizeof(double)) == 0 &&
           khz_ring_init(&L->replies, 2 * (size_t)cfg->request_ring + 8, sizeof(khzReply)) == 0;
  if (!ok) {
    fail(err, errsz, "loop: out of memory");
    khz_loop_destroy(&L);
    return NULL;
  }
  khz_loop_actuators(m, L->dof);
  if (cfg->hil) {
    for (int i = 0; i < khz_hilNDrive(cfg->hil); i++) {
      int dof = m->jnt_dofadr[khz_hilDriveSpec(cfg->hil, i)->body];
      L->drive_act[i] = -1;
      for (int a = 0; a < L->na; a++)
        if (L->dof[a] == dof) L->drive_act[i] = a;
    }
    khz_kinematics(m, L->d);
    khz_hilReset(cfg->hil, m, L->d);
  }
  if (cfg->kp) memcpy(L->kp, cfg->kp, (size_t)L->na * sizeof(double));
  if (cfg->kd) memcpy(L->kd, cfg->kd, (size_t)L->na * sizeof(double));
  for (int s = 0; s < 3; s++)
    command_layout(&L->cmd_slot[s], L->cmd_data + (size_t)s * L->cmd_stride, na, (size_t)L->nu);
  /* the model's actuators and their initial command (ff0 each, no torque beside) */
  command_layout(&L->initial, L->initial.tau_ff, na, (size_t)L->nu);
  L->initial.kind = KHZ_CMD_ACTUATORS;
  for (int j = 0; j < L->nu; j++) {
    L->act[j] = cfg->actuator[j];
    if (L->act[j].slot >= L->na) L->act[j].slot = -1;
    L->initial.act_ff[j] = L->act[j].ff0;
    L->initial.act_on[j] = 1;
  }
  L->cfg.actuator = NULL; /* not kept: L->act is the copy */
  for (size_t i = 0; i < khz_ring_capacity(&L->states); i++)
    state_layout(L, khz_ring_slot(&L->states, i));
  for (size_t i = 0; i < khz_ring_capacity(&L->requests); i++) {
    khzRequest *rq = khz_ring_slot(&L->requests, i);
    rq->data = (double *)(rq + 1);
    rq->ndata_max = (int)L->req_data;
  }
  set_shared(L, S_MODE, (uint64_t)cfg->mode);

  /* pre-fault: touch every page of the state buffer (calloc leaves them unmapped)
   * and take one step on a scratch copy so that code and data are warm */
  volatile unsigned char *page = L->d->buffer;
  for (size_t off = 0; off < L->d->nbuffer; off += 4096) page[off] = page[off];
  for (int i = 0; i < KHZ_NSNAP; i++) memset(L->snap[i], 0, L->snap_size);
  khzData *warm = khz_makeData(m, 0);
  if (warm) {
    khz_stepWith(m, warm, L->timestep);
    khz_deleteData(&warm);
  }

  /* the verifier (normal priority: created before the loop thread asks for SCHED_FIFO) */
  if (L->vd) {
    for (int i = 0; i < KHZ_VERIFY_QUEUE; i++) { /* touch the jobs' pages */
      memset(L->vjob[i].pre, 0, L->vcompact);
      memset(L->vjob[i].post, 0, L->vcompact);
    }
    memset(L->phist, 0, KHZ_NPHASES * sizeof(khzHist));
    memset(L->rhist, 0, (KHZ_NREQUEST + 1) * sizeof(khzHist));
    if (pthread_create(&L->vthread, NULL, verifier_main, L) != 0) {
      fail(err, errsz, "loop: cannot create the overrun verifier thread");
      khz_loop_destroy(&L);
      return NULL;
    }
    L->vthread_started = 1;
  }

  /* the thread; returns when it is ready */
  if (pthread_create(&L->thread, NULL, loop_main, L) != 0) {
    fail(err, errsz, "loop: cannot create the loop thread");
    khz_loop_destroy(&L);
    return NULL;
  }
  pthread_mutex_lock(&L->mu);
  while (!L->ready) pthread_cond_wait(&L->cv, &L->mu);
  pthread_mutex_unlock(&L->mu);
  return L;
}

void khz_loop_destroy(khzLoop **loop_p) {
  if (!loop_p || !*loop_p) return;
  khzLoop *L = *loop_p;
  if (L->ready) {
    atomic_store(&L->stop, 1);
    ring_doorbell(L);
    pthread_join(L->thread, NULL);
  }
  if (L->vthread_started) {
    atomic_store(&L->stop, 1);
    atomic_fetch_add(&L->vbell, 1);
    syscall(SYS_futex, (uint32_t *)&L->vbell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    pthread_join(L->vthread, NULL);
  }
  for (int i = 0; i < KHZ_VERIFY_QUEUE; i++) {
    free(L->vjob[i].pre);
    free(L->vjob[i].post);
  }
  khz_deleteData(&L->vd);
  free(L->vfull);
  free(L->phist);
  free(L->rhist);
  if (L->dma_fd >= 0) close(L->dma_fd);
  khz_ring_free(&L->states);
  free(L->hist);
  free(L->net_cmd_data);
  khz_ring_free(&L->requests);
  khz_ring_free(&L->replies);
  for (int i = 0; i < KHZ_NSNAP; i++) free(L->snap[i]);
  khz_deleteData(&L->d);
  free(L->dof);
  free(L->kp);
  free(L->kd);
  free(L->cmd_data);
  free(L->act);
  free(L->initial.tau_ff);
  pthread_mutex_destroy(&L->mu);
  pthread_cond_destroy(&L->cv);
  free(L);
  *loop_p = NULL;
}

/* ------------------------------------------------------------ I/O side -- */

const char *khz_loop_report(const khzLoop *L) { return L->report; }

double khz_loop_rate(const khzLoop *L, double *timestep) {
  uint64_t bits = atomic_load_explicit(&L->rate_bits, memory_order_acquire);
  double hz;
  memcpy(&hz, &bits, sizeof hz);
  if (timestep) *timestep = 1.0 / hz;
  return hz;
}

int khz_loop_na(const khzLoop *L) { return L->na; }

khzCommand *khz_loop_commandBegin(khzLoop *L) { return &L->cmd_slot[L->cmd.back]; }

void khz_loop_commandCommit(khzLoop *L) {
  khz_latest_commit(&L->cmd);
  ring_doorbell(L);
}

int khz_loop_haptic(khzLoop *L, int proxy, const khzHapticInput *in) {
  if (proxy < 0 || proxy >= L->cfg.nhaptic) return -1;
  L->hin_slot[proxy][L->hin[proxy].back] = *in;
  khz_latest_commit(&L->hin[proxy]);
  return 0;
}

khzRequest *khz_loop_requestBegin(khzLoop *L) {
  khzRequest *rq = khz_ring_claim(&L->requests);
  if (!rq) return NULL;
  rq->id = 0;
  rq->type = 0;
  rq->ival = 0;
  rq->dval = 0;
  rq->ndata = 0;
  return rq;
}

void khz_loop_requestCommit(khzLoop *L) {
  khz_ring_commit(&L->requests);
  ring_doorbell(L);
}

int khz_loop_pollReply(khzLoop *L, khzReply *out) {
  khzReply *r = khz_ring_peek(&L->replies);
  if (!r) return 0;
  *out = *r;
  khz_ring_release(&L->replies);
  if (out->snap > 0 && out->snap <= KHZ_NSNAP) {
    /* khz_hashState over the bytes khz_saveState wrote, once per state */
    int k = out->snap - 1;
    if (L->hash_seq != out->seq + 1) {
      L->hash_val = khz_hashSavedState(L->m, L->snap[k]);
      L->hash_seq = out->seq + 1;
    }
    out->hash = L->hash_val;
    out->snap = 0;
    atomic_fetch_sub_explicit(&L->snap_refs[k], 1, memory_order_acq_rel);
  }
  return 1;
}

uint64_t khz_loop_repliesLost(const khzLoop *L) {
  return atomic_load_explicit(&L->replies_lost, memory_order_relaxed);
}

const khzLoopState *khz_loop_peekState(khzLoop *L) { return khz_ring_peek(&L->states); }

void khz_loop_releaseState(khzLoop *L) { khz_ring_release(&L->states); }

/* the context switches of thread tid from /proc (the I/O side's cost, never
 * the loop thread's; no stdio, no allocation); -1 when unreadable */
static void thread_switches(int tid, int64_t *vol, int64_t *invol) {
  *vol = *invol = -1;
  if (tid <= 0) return;
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return;
  buf[n] = 0;
  const char *v = strstr(buf, "\nvoluntary_ctxt_switches:");
  const char *nv = strstr(buf, "\nnonvoluntary_ctxt_switches:");
  if (v) *vol = strtoll(v + strlen("\nvoluntary_ctxt_switches:"), NULL, 10);
  if (nv) *invol = strtoll(nv + strlen("\nnonvoluntary_ctxt_switches:"), NULL, 10);
}

static void hist_stats(const khzHist *h, khzLoopHist *o) {
  o->count = atomic_load_explicit(&h->count, memory_order_relaxed);
  o->p50 = khz_hist_quantile(h, 0.5);
  o->p90 = khz_hist_quantile(h, 0.9);
  o->p99 = khz_hist_quantile(h, 0.99);
  o->p999 = khz_hist_quantile(h, 0.999);
  o->max = o->count ? atomic_load_explicit(&h->max, memory_order_relaxed) : 0;
  o->min = o->count ? atomic_load_explicit(&h->min, memory_order_relaxed) : 0;
  o->mean = o->count ? atomic_load_explicit(&h->sum, memory_order_relaxed) / (double)o->count : 0;
}

void khz_loop_stats(khzLoop *L, khzLoopStats *o) {
  memset(o, 0, sizeof *o);
  o->tick.ticks = get_shared(L, S_TICKS);
  o->tick.overruns = get_shared(L, S_OVERRUNS);
  o->tick.missed = get_shared(L, S_MISSED);
  o->tick.commands = get_shared(L, S_COMMANDS);
  o->tick.on_time = get_shared(L, S_ON_TIME);
  o->tick.late = get_shared(L, S_LATE);
  o->tick.superseded = atomic_load_explicit(&L->cmd.overwritten, memory_order_relaxed) -
                      atomic_load_explicit(&L->superseded_base, memory_order_relaxed);
  o->tick.states_dropped = get_shared(L, S_DROPPED);
  o->tick.watchdog_engaged = get_shared(L, S_WATCHDOG);
  o->tick.lockstep_timeouts = get_shared(L, S_LSTIMEOUT);
  o->tick.lateness_ns = (int64_t)get_shared(L, S_LATENESS);
  o->tick.compute_ns = (int64_t)get_shared(L, S_COMPUTE);
  o->requests = get_shared(L, S_REQUESTS);
  o->seq = get_shared(L, S_SEQ);
  o->mode = (int)get_shared(L, S_MODE);
  o->paused = (int)get_shared(L, S_PAUSED);
  o->rate_hz = khz_loop_rate(L, NULL);
  hist_stats(&L->lat, &o->lateness);
  hist_stats(&L->comp, &o->compute);
  hist_stats(&L->cmdlat, &o->latency);
  hist_stats(&L->resp, &o->response);
  hist_stats(&L->cpu, &o->cpu);
  o->tick.cpu_ns = (int64_t)get_shared(L, S_CPU);
  o->tick.between_ns = (int64_t)get_shared(L, S_BETWEEN);
  o->tick.own_overruns = get_shared(L, S_OWN);
  o->tick.preempted_overruns = get_shared(L, S_PREEMPTED);
  o->tick.late_overruns = get_shared(L, S_LATE_WAKE);
  o->tick.unverified = get_shared(L, S_UNVERIFIED);
  if (L->vd) { /* the verdicts since start less those at the last reset (read by the loop) */
    uint64_t all[KHZ_NVERDICTS];
    for (int v = 0; v < KHZ_NVERDICTS; v++) all[v] = atomic_load(&L->vcount[v]);
    o->tick.verified_own = all[0] - L->vbase[0];
    o->tick.verified_host = all[1] - L->vbase[1];
    o->tick.verify_mismatch = all[2] - L->vbase[2];
    o->tick.verified_around = all[3] - L->vbase[3];
    o->tick.verified_requests = all[4] - L->vbase[4];
  }
  thread_switches(atomic_load(&L->tid), &o->voluntary_switches, &o->involuntary_switches);
}
