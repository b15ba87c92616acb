/* loop.h — the fixed-rate real-time loop (rt/src/loop/): one dedicated thread
 * that ticks a model at an absolute schedule and the lock-free hand-off between
 * that thread and the I/O side (the server's libev thread).
 *
 * The loop is cyclictest's: an absolute deadline advanced by one period per tick,
 * clock_nanosleep(TIMER_ABSTIME), lateness = wake-up time - deadline into a
 * preallocated histogram, missed periods skipped and counted, never caught up in
 * a burst. The thread locks memory and pre-faults its stack, and asks for
 * SCHED_FIFO and a CPU when the configuration says so; khz_loop_report() holds
 * one line saying what was granted.
 *
 * Everything between the threads is wait-free and preallocated
 * (realtime_tools' RealtimeBuffer / RealtimePublisher):
 *   - commands in: a latest-wins triple buffer (C11 atomics). The I/O side fills
 *     khz_loop_commandBegin()'s slot and commits it; the tick takes the newest.
 *   - haptic device inputs in: one latest-wins buffer per proxy.
 *   - control requests in: a single-producer single-consumer (SPSC) ring, applied
 *     by the loop thread between ticks; each request produces one reply.
 *   - states and replies out: SPSC rings. A full state ring drops the state and
 *     counts it; the tick never waits for the I/O side. After publishing, the
 *     tick calls the wake callback (the server's ev_async_send).
 *
 * Per tick: take the latest command (a command computed from state k is meant
 * for tick k+1), evaluate the in-tick controller (torques, PD targets with
 * gains, or the model's own actuators: khzLoopActuator), the watchdog, the haptic virtual couplings and the perturbation
 * wrenches, call khz_step(), publish the state. The tick never allocates, never
 * logs and never blocks on the I/O side: its only system calls are the sleep,
 * the futex wait of lockstep / pause, the wake callback, and (unless
 * cpu_clock is 0) three reads of the thread's CPU clock per tick
 * (CLOCK_THREAD_CPUTIME_ID before the sleep, at the tick's start and at its
 * end, to tell the ticks that overran on their own work from those the
 * machine held off), and with verify_overruns two more around the step, two
 * around the I/O wake, one around each round of requests, and a futex wake
 * of the verifier after an own overrun.
 *
 * Modes (switchable at run time, KHZ_REQ_MODE):
 *   realtime  wall-clock paced at rate_hz;
 *   lockstep  tick k+1 waits for the command that answers state k (or a later
 *             one), at most lockstep_timeout_s (0 = forever); when the wait
 *             expires the tick applies the safe command and flags the state.
 *             The same controller gives bit-identical states;
 *   fast      as fast as possible (the thread drops SCHED_FIFO while in fast
 *             mode so that it cannot starve the I/O thread).
 *
 * Actuators are the model's 1-dof joints (revolute, continuous, prismatic) in
 * body order; commands carry one value per actuator (na values). Floating and
 * spherical joints are driven by wrenches (KHZ_REQ_WRENCH) and haptic couplings.
 */
#ifndef KHZ_LOOP_H
#define KHZ_LOOP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "khz/hil.h"
#include "khz/khz.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KHZ_LOOP_MAX_HAPTIC 8       /* haptic proxies */
#define KHZ_LOOP_MAX_DRIVE 64
#define KHZ_LOOP_MAX_WRENCH 16      /* simultaneous perturbation wrenches */
#define KHZ_LOOP_MAX_CONTACTS 128   /* contact points copied into one state */
#define KHZ_LOOP_MSG_MAX 320        /* reply messages (a refused rate names the joint, gain and bound) */
#define KHZ_LOOP_REQUEST_BUDGET_NS 100000 /* requests applied between two ticks: at least one,
                                             then more while the round has spent less than this
                                             (or an eighth of the period, whichever is less) */

typedef enum khzLoopMode {
  KHZ_MODE_REALTIME = 0,
  KHZ_MODE_LOCKSTEP,
  KHZ_MODE_FAST,
  KHZ_NMODES
} khzLoopMode;

/* What the watchdog (and an expired lockstep wait) applies to the actuators. */
typedef enum khzSafeCommand {
  KHZ_SAFE_ZERO = 0, /* zero torque */
  KHZ_SAFE_DAMPING,  /* tau = -safe_damping * qd on every actuator */
  KHZ_NSAFE
} khzSafeCommand;

/* Flags of a state (khzLoopState.flags). */
enum {
  KHZ_FLAG_WATCHDOG = 1u << 0,         /* the safe command was applied at this tick */
  KHZ_FLAG_LOCKSTEP_TIMEOUT = 1u << 1, /* this tick's lockstep wait expired */
  KHZ_FLAG_PAUSED = 1u << 2,           /* the loop is paused after this state */
  KHZ_FLAG_RESET = 1u << 3,            /* the state right after a reset (no step taken) */
  KHZ_FLAG_CLAMPED = 1u << 4,          /* a torque was clamped to its effort limit */
  KHZ_FLAG_BADSTATE = 1u << 5,         /* the step produced NaN/inf and was rolled back */
  KHZ_FLAG_HAPTIC_STALE = 1u << 6,     /* a haptic proxy's input is stale: coupling off */
  KHZ_FLAG_OVERRUN = 1u << 7,          /* the previous tick ended after this tick's start */
  KHZ_FLAG_NO_COMMAND = 1u << 8,       /* no command has been received since start/reset */
  KHZ_FLAG_CONTACTS_TRUNCATED = 1u << 9, /* more contact points than a state holds */
  KHZ_FLAG_FAULT = 1u << 11            /* a sensor, drive or command-channel fault, or a scheduled
                                          push, is in effect
                                          (bit 10 is the I/O side's FLAG_REPEATED) */
};

/* One haptic proxy: a body coupled to a device pose by a spring-damper.
 * Passivity (Colgate): damping > stiffness * T / 2 with T the period, for the
 * translational and the rotational pair. */
typedef struct khzHapticProxy {
  int body;              /* model body id (a floating body) */
  double stiffness;      /* N/m */
  double damping;        /* N s/m */
  double rot_stiffness;  /* N m/rad */
  double rot_damping;    /* N m s/rad */
} khzHapticProxy;

/* 1 when a proxy's coupling gains satisfy the passivity bound at period T
 * (damping > stiffness T / 2 for both pairs, or zero stiffness with damping
 * >= 0): the check the loop applies to a gain change */
int khz_loop_hapticPassive(const khzHapticProxy *p, double T);

typedef struct khzLoopConfig {
  double rate_hz;            /* KHZ_RATE_MIN_HZ..MAX_HZ (khz.h): the initial rate; every
                                tick steps 1 / rate_hz, whatever the model's timestep */
  khzLoopMode mode;
  int start_paused;          /* 1: do not tick until KHZ_REQ_RESUME / KHZ_REQ_STEP */

  /* real-time privileges (each is asked for, and reported, separately) */
  int rt_priority;           /* SCHED_FIFO priority 1..99; 0 = do not ask */
  int cpu;                   /* pin the thread to this CPU; -1 = do not pin */
  int threads;               /* threads for the step (khz_setThreads), started by the loop
                                thread before the first tick: the workers take its scheduling
                                class and, with cpu >= 0, each a CPU of its own (the next ones
                                the process may use) when there is one; 1 (default) = none */
  int lock_memory;           /* mlockall(MCL_CURRENT | MCL_FUTURE) */
  size_t prefault_stack;     /* bytes of stack touched before the first tick */
  int dma_latency_us;        /* hold /dev/cpu_dma_latency at this many us while running
                                (shallow C-states, as cyclictest does); -1 = leave alone */
  int spin_us;               /* realtime mode: sleep until this many us before each deadline,
                                then busy-wait to it (haptic rates on a kernel whose timer
                                wake-ups come later than the period allows; costs the core
                                that long per tick); 0 = sleep to the deadline */
  int cpu_clock;             /* 1 (default): read the loop thread's CPU clock three times per
                                tick to tell khz's own overruns from the machine's
                                (own / preempted / late_overruns, the CPU-time histogram);
                                0: skip those reads (three system calls per tick, 0.3-2.4 us
                                each on a virtual machine: worth it at haptic rates); the
                                overruns are then counted but not attributed */
  int verify_overruns;       /* 1: prove which own overruns are khz's by re-running their step
                                (realtime mode; needs cpu_clock). Before each step the loop saves
                                the state (compactly: the pair slots in use) into a free one of
                                KHZ_VERIFY_QUEUE preallocated jobs and reads the CPU clock around
                                the step, the I/O wake and each request applied (the phases,
                                khzTickStats); after an overrun counted as own it queues the job,
                                with the post-step state, to a verifier thread (normal priority,
                                its own khzData, all made by khz_loop_new), never waiting; with
                                every job queued it counts the overrun unverified.
                                The verifier restores the state, steps it 3 times (CPU time of
                                each, the least kept), checks the result's hash against the
                                loop's, and says whether the step's re-run work, the requests
                                (each kind bounded by its p99) and the fixed phases around the
                                step (each bounded by its p99)
                                exceed the period: TickStats.verified_own / verified_around /
                                verified_requests / verified_host / unverified (queue full) /
                                verify_mismatch, each overrun in khz_loop_overrunChecks(). The
                                verifier also calls wake (3 times per own overrun, to time it):
                                wake must then be safe to call from any thread */

  /* watchdog and lockstep */
  double watchdog_s;         /* commands older than this are stale; 0 = off */
  khzSafeCommand safe;
  double safe_damping;       /* N m s/rad (N s/m) for KHZ_SAFE_DAMPING */
  double lockstep_timeout_s; /* 0 = wait forever */

  /* state contents */
  int publish_contacts;      /* copy contact points into each state */
  int publish_hash;          /* compute khz_hashState into each state (costs time) */

  /* hand-off capacities (rounded up to powers of two) */
  int state_ring;            /* states buffered towards the I/O side */
  int request_ring;          /* control requests buffered towards the loop */

  /* default PD gains per actuator (copied; NULL = zero) */
  const double *kp, *kd;

  /* the model's own actuators (MJCF <actuator>s, URDF <ros2_control>
   * interfaces; copied, NULL = none): what KHZ_CMD_ACTUATORS commands drive,
   * and what the loop applies before the first command since the start or a
   * reset (each actuator's ff0: MuJoCo's data.ctrl starts at zero, or at a
   * keyframe's ctrl, so a position servo holds its target from the first
   * step). The watchdog's safe command still replaces them once commands
   * that flowed go stale. */
  int nactuator;
  const struct khzLoopActuator *actuator;
  int actuator_start;        /* 1: apply the actuators' ff0 before the first command (0: the
                                safe command, as for a model without actuators) */

  /* sensors and drives (khz/hil.h; not owned, NULL = none): the loop resets
   * it with the data, drives the driven joints before each step, samples
   * after it, and publishes the readings in every state. A drive in position
   * (velocity) mode takes a PD command's q_target (qd_target) of its joint;
   * torque commands and the safe command pass as torques. */
  khzHil *hil;               /* at most KHZ_LOOP_MAX_DRIVE drives */
  /* the network between the loop and its controllers (khz/hil.h; zero = none) */
  khzNetworkModel net;
  /* a scripted fault schedule (sorted by 'at'; not owned): each event is
   * applied when the simulated time since the reset reaches it */
  int nfault_event;
  const khzFaultEvent *fault_event;

  /* haptic proxies */
  int nhaptic;
  khzHapticProxy haptic[KHZ_LOOP_MAX_HAPTIC];
  double haptic_timeout_s;   /* device inputs older than this switch the coupling off */

  /* called by the loop thread after it published states or replies (ev_async_send) */
  void (*wake)(void *user);
  void *wake_user;
  /* called once in the loop thread before the first tick (tests mark the thread) */
  void (*thread_init)(void *user);
  void *thread_init_user;
  /* test hook (NULL = none): called right after each khz_stepWith, inside the
   * step's timed window, by the loop thread (rerun 0) and by the overrun
   * verifier after each re-run (rerun 1); d is the data just stepped */
  void (*step_hook)(void *user, khzData *d, int rerun);
  void *step_hook_user;
  /* test hook (NULL = none): called by the loop thread right after it applied
   * a request of kind type (khzRequestType), inside the request's timed window */
  void (*request_hook)(void *user, int type);
  void *request_hook_user;
  /* a record of every realtime tick's phases for benchmarks (not owned; NULL =
   * none, and nothing is read or written for it) */
  struct khzLoopTrace *trace;
} khzLoopConfig;

/* What one realtime tick spent where (bench_loop --trace, issue 26): times in
 * ns from the wake-up, each read with CLOCK_MONOTONIC (vDSO) right after the
 * phase it ends. compute_ns of TickStats is done_ns. */
typedef struct khzLoopTraceTick {
  uint64_t seq;
  int64_t sched_ns;     /* the tick's deadline (CLOCK_MONOTONIC) */
  int32_t late_ns;      /* wake-up - deadline */
  int32_t clock_ns;     /* the CPU clock read at the wake-up done (cpu_clock) */
  int32_t command_ns;   /* faults, the command, watchdog, torques, drives, wrenches done */
  int32_t step_ns;      /* khz_stepWith (and the hil sensors' sampling) done */
  int32_t done_ns;      /* the state complete: compute_ns */
  int32_t copy_ns;      /* the state copied into the ring (or a history slot) */
  int32_t stats_ns;     /* histograms and the shared counters updated */
  int32_t wake_ns;      /* the I/O side woken (khzLoopConfig.wake): the tick's end */
  int32_t cpu_ns;       /* the tick's CPU time (TickStats.cpu_ns; 0 without cpu_clock) */
  int32_t between_ns;   /* TickStats.between_ns */
  int16_t cpu_wake, cpu_done; /* the CPU the thread ran on at the wake-up / at the end */
  int32_t pairs;        /* awake contact pairs after the step (d->ncontact - ncontact_asleep) */
  int32_t points;       /* contact points after the step (awake and asleep) */
} khzLoopTraceTick;

/* The caller's preallocated record: the loop thread fills tick[0..cap) in
 * order and then stores n (release); it stops when full. */
typedef struct khzLoopTrace {
  khzLoopTraceTick *tick;
  size_t cap;
  _Atomic size_t n;
} khzLoopTrace;

/* Fills the defaults: 1000 Hz realtime, SCHED_FIFO 80 when permitted, no CPU
 * pinning, memory locked, 256 KiB stack pre-faulted, cpu_dma_latency left
 * alone, watchdog 100 ms with zero
 * torque (damping 1 N m s/rad when chosen), lockstep timeout 1 s, 256-state ring,
 * 64-request ring, haptic timeout 100 ms. */
void khz_loop_defaultConfig(khzLoopConfig *cfg);

/* The actuators of a model: writes the dof index of each 1-dof joint (in body
 * order) into dof (when not NULL) and returns how many there are. */
int khz_loop_actuators(const khzModel *m, int *dof);

/* ---------------------------------------------------------------- commands -- */

typedef enum khzCommandKind {
  KHZ_CMD_TORQUE = 0, /* tau = tau_ff */
  KHZ_CMD_PD,         /* tau = kp (q_target - q) + kd (qd_target - qd) + tau_ff */
  KHZ_CMD_ACTUATORS   /* tau = tau_ff + the sum over the model's actuators on the joint
                         (khzLoopConfig.actuator) that act_on includes of
                         clamp(act_ff - kp q - kd qd, lo, hi) */
} khzCommandKind;

/* One of the model's own actuators as the tick evaluates it, MuJoCo's rule
 * (each actuator's force clamped to its forcerange before the forces on one
 * joint are summed): on actuator slot `slot` the torque
 *   clamp(ff - kp q - kd qd, lo, hi)
 * where ff is the command's act_ff (gear (gain ctrl + bias0)), kp and kd the
 * actuator's position and velocity feedback (-gear^2 bias1, -gear^2 bias2)
 * and [lo, hi] its forcerange times gear (-inf, inf when unlimited). */
typedef struct khzLoopActuator {
  int slot;      /* index into the command arrays (the joint), -1: drives nothing */
  double kp, kd; /* N m/rad, N m s/rad (N/m, N s/m on slides) */
  double lo, hi; /* torque bounds */
  double ff0;    /* ff before the first command (the initial control's) */
} khzLoopActuator;

/* A command slot. Arrays hold na values each and belong to the loop. */
typedef struct khzCommand {
  uint64_t seq;             /* the client's command sequence number */
  uint64_t state_seq;       /* the state it was computed from */
  int64_t client_time_ns;   /* the client's own time stamp (echoed, not interpreted) */
  int64_t recv_ns;          /* CLOCK_MONOTONIC when the I/O side received it */
  uint32_t client;          /* the I/O side's id of the sender */
  int kind;                 /* khzCommandKind */
  int has_gains;            /* PD: kp / kd below are set; else the loop's gains */
  double *tau_ff;           /* torque (TORQUE) or feed-forward (PD) */
  double *q_target, *qd_target, *kp, *kd;
  double *act_ff;           /* KHZ_CMD_ACTUATORS: one per khzLoopConfig.actuator ... */
  double *act_on;           /* ... and 1 where it drives, 0 where this command leaves it out */
} khzCommand;

/* One haptic device input (latest wins, per proxy). */
typedef struct khzHapticInput {
  uint64_t seq;
  int64_t device_time_ns;
  int64_t recv_ns;          /* CLOCK_MONOTONIC at reception */
  double pos[3];            /* device point in the world, m */
  double quat[4];           /* device orientation in the world (w, x, y, z), unit */
  double vel[3];            /* m/s, world */
  double angvel[3];         /* rad/s, world */
} khzHapticInput;

/* ---------------------------------------------------------------- requests -- */

typedef enum khzRequestType {
  KHZ_REQ_RESET = 0,        /* reset to q0 (or to data[0..nq) when ndata == nq) */
  KHZ_REQ_PAUSE,
  KHZ_REQ_RESUME,
  KHZ_REQ_STEP,             /* ival ticks, then pause; replied when done */
  KHZ_REQ_MODE,             /* ival = khzLoopMode */
  KHZ_REQ_RATE,             /* dval = Hz: the rate and so the step size (khz_loop_rate) */
  KHZ_REQ_CONTACT,          /* ival = khzContactMethod */
  KHZ_REQ_GAINS,            /* data = kp[na], kd[na] */
  KHZ_REQ_HAPTIC_GAINS,     /* ival = proxy, data = stiffness, damping, rot_stiffness, rot_damping */
  KHZ_REQ_WRENCH,           /* ival = body, data = force[3], torque[3] (world, at the com), dval = s */
  KHZ_REQ_CLEAR_WRENCHES,
  KHZ_REQ_WATCHDOG,         /* dval = watchdog_s, ival = khzSafeCommand, data[0] = safe_damping */
  KHZ_REQ_LOCKSTEP_TIMEOUT, /* dval = s */
  KHZ_REQ_PUBLISH,          /* ival bit 0 = contacts, bit 1 = hash */
  KHZ_REQ_HASH,             /* reply carries the current state hash and seq (the loop copies the
                               state, at most once per state; khz_loop_pollReply hashes it) */
  KHZ_REQ_RESET_STATS,
  KHZ_REQ_FAULT,            /* data = khzFaultTarget, index, khzFaultType, duration (s, 0 =
                               until cleared); dval = value (khz/hil.h) */
  KHZ_NREQUEST
} khzRequestType;

/* A request slot; data has room for ndata_max doubles. */
typedef struct khzRequest {
  uint64_t id;              /* echoed in the reply */
  int type;                 /* khzRequestType */
  int ival;
  double dval;
  int ndata;
  int ndata_max;
  double *data;
} khzRequest;

/* khzReply.status */
#define KHZ_REPLY_DONE 0
#define KHZ_REPLY_INVALID (-1) /* a value out of range or of the wrong size */
#define KHZ_REPLY_REFUSED (-2) /* valid, but not possible now (passivity bound, capacity, ...) */
#define KHZ_REPLY_BUSY (-3)    /* not now: retry (every state snapshot still in use) */

/* khzReply.type of a notice that the loop dropped a command computed from a
 * state before the latest reset (id = 0, client / cmd_seq name the command). */
#define KHZ_REPLY_STALE_COMMAND (-1)

typedef struct khzReply {
  uint64_t id;
  int type;                 /* the request's khzRequestType, or KHZ_REPLY_STALE_COMMAND */
  int status;               /* KHZ_REPLY_DONE, or why not (message says more) */
  uint64_t seq;             /* the latest state's sequence number when it was applied */
  uint64_t hash;            /* KHZ_REQ_HASH: computed by khz_loop_pollReply on the caller's
                               thread from a snapshot the loop copied (never on the loop thread) */
  int snap;                 /* internal: the snapshot the hash comes from (1-based, 0 = none) */
  uint32_t client;          /* KHZ_REPLY_STALE_COMMAND: the sender and its command */
  uint64_t cmd_seq;
  char message[KHZ_LOOP_MSG_MAX];
} khzReply;

/* ------------------------------------------------------------------ states -- */

/* One contact point as published. */
typedef struct khzLoopContact {
  int body[2], geom[2]; /* the pair's bodies and geoms */
  double pos[3], normal[3], depth, force[3];
} khzLoopContact;

/* Per-tick statistics carried in each state. Times in ns. */
typedef struct khzTickStats {
  int64_t lateness_ns;      /* wake-up time - scheduled tick time */
  int64_t compute_ns;       /* tick start to state published */
  uint64_t ticks;           /* steps taken since start */
  uint64_t overruns;        /* ticks that ended after the next tick's start */
  uint64_t missed;          /* periods skipped after overruns */
  uint64_t commands;        /* commands taken by the loop */
  uint64_t on_time;         /* ... applied at the tick right after their state */
  uint64_t late;            /* ... applied later than that */
  uint64_t superseded;      /* overwritten by a newer command before a tick took them (never
                               applied: the next-tick share is on_time / (commands + superseded)) */
  uint64_t states_dropped;  /* states the I/O side was too slow to take */
  uint64_t watchdog_engaged;/* transitions to the safe command after commands had flowed */
  uint64_t lockstep_timeouts;
  /* who caused an overrun. cpu_ns is this tick's CPU time, read from the
   * thread's CPU clock (CLOCK_THREAD_CPUTIME_ID) at the tick's start and where
   * compute_ns ends; between_ns the CPU time from the previous tick's state to
   * the sleep before this tick (the wake callback and the requests applied;
   * realtime only). What is charged to the thread while it sleeps and wakes is
   * in neither. Of the
   * overruns (realtime ticks whose state was complete after the next tick's
   * start) each is counted in exactly one of:
   *   own_overruns        between_ns + cpu_ns > the period: khz's own work
   *                       did not fit, it would overrun on an idle machine;
   *   preempted_overruns  else, held off mid-tick longer than it woke late:
   *                       compute_ns - cpu_ns > lateness_ns (the machine's);
   *   late_overruns       else: the thread woke late (the machine's). */
  int64_t cpu_ns;
  int64_t between_ns;
  uint64_t own_overruns;
  uint64_t preempted_overruns;
  uint64_t late_overruns;
  /* verify_overruns: the own overruns checked by the verifier (each in one
   * of the six; counted when the verdict is in, a tick or more later). The
   * loop's CPU time from the previous state to this one is split into phases
   * (khzOverrunCheck.phase_ns): the step, re-run by the verifier (least CPU
   * time of 3); the I/O wake, called again by the verifier (3 times: the
   * least per call, or the loop's time if less); the requests applied (khz's
   * work on a client's behalf), each kind bounded by its own p99 over the run
   * as the fixed phases are (a kind's n requests charged more than
   * KHZ_VERIFY_HOST_FACTOR times n p99 are taken at n p99); and the other fixed work
   * around the step (command phase, save, sampling, the state's copy and
   * statistics, the rest), each bounded by its own p99 over the run: a phase
   * charged more than
   * KHZ_VERIFY_HOST_FACTOR times its p99 is taken at its p99 (the rest was the
   * host's). When the step's re-run, the requests and the fixed phases so
   * taken together exceed the period, the overrun is khz's, named after the
   * largest of the three:
   *   verified_own      the step's work;
   *   verified_around   the fixed work around the step (between ticks or in the tick);
   *   verified_requests the requests applied before the tick;
   *   verified_host     else: the same work fits the period; the time was the host's;
   *   unverified        every one of the verifier's KHZ_VERIFY_QUEUE - 1 queued jobs was
   *                     still waiting (a burst of own overruns faster than it re-runs);
   *   verify_mismatch   the re-run's state hash differs from the loop's: not the
   *                     same work (a finding, not a verdict). */
  uint64_t verified_own;
  uint64_t verified_host;
  uint64_t unverified;
  uint64_t verify_mismatch;
  uint64_t verified_around;
  uint64_t verified_requests;
} khzTickStats;

/* A state as handed to the I/O side; arrays belong to the ring slot and stay
 * valid until khz_loop_releaseState(). */
typedef struct khzLoopState {
  int nq, nv, nbody;        /* array sizes below */
  uint64_t seq;             /* 0 = the initial state; tick n publishes state n */
  uint64_t reset_seq;       /* the seq of the state after the latest reset */
  double sim_time;          /* s */
  int64_t tick_time_ns;     /* CLOCK_MONOTONIC, scheduled start of the tick */
  int64_t mono_ns;          /* CLOCK_MONOTONIC when the state was complete */
  int64_t wall_ns;          /* CLOCK_REALTIME at the same moment */
  double rate_hz;
  int mode;                 /* khzLoopMode */
  int contact_method;
  uint32_t flags;           /* KHZ_FLAG_* */
  uint64_t cmd_seq;         /* the last command applied (0 = none) */
  uint64_t cmd_state_seq;   /* the state it answered */
  uint32_t cmd_client;
  int64_t cmd_client_time_ns;
  uint64_t hash;            /* khz_hashState when publish_hash, else 0 */
  khzTickStats stats;
  int warning[KHZ_NWARNING];
  double *q;                /* nq */
  double *qd;               /* nv */
  double *tau;              /* nv: commanded generalised forces after clamping */
  double *xpos;             /* 3 per body: world position of the body origin */
  double *xquat;            /* 4 per body: world orientation (w, x, y, z) */
  double *cvel;             /* 6 per body: [angular velocity; velocity of the origin], world */
  int nhaptic;
  double *haptic_wrench;    /* 6 per proxy: [force, torque] on the device (world, N / N m) */
  int *sleeping;            /* per body: 1 while it sleeps (khz_bodySleeping) */
  uint64_t shown_seq;       /* the tick at which the state was shown to the controllers (= seq
                               without a network model, khzLoopConfig.net) */
  int nsensor, nsensor_value, ndrive;
  double *sensor;           /* nsensor_value: the sensors' published readings (khz/hil.h) */
  double *sensor_tick;      /* nsensor: the tick (since the reset) each reading was sampled at */
  int *sensor_fault;        /* nsensor: khzFaultType */
  int *drive_fault;         /* ndrive: khzFaultType */
  int ncontact;
  khzLoopContact *contact;  /* when publish_contacts */
} khzLoopState;

/* Statistics over the whole run (or since KHZ_REQ_RESET_STATS), read by the I/O
 * side from the loop's histograms. Percentiles are upper bin edges (< 1.6 %
 * above the true value). */
typedef struct khzLoopHist {
  uint64_t count;
  int64_t p50, p90, p99, p999, max, min; /* ns */
  double mean;
} khzLoopHist;

typedef struct khzLoopStats {
  khzTickStats tick;        /* counters as of the latest state */
  khzLoopHist lateness;     /* wake-up lateness */
  khzLoopHist compute;      /* tick compute time */
  khzLoopHist latency;      /* command latency: state k complete -> the tick that applied it */
  khzLoopHist response;     /* controller response: state k complete -> its command received */
  khzLoopHist cpu;          /* the ticks' CPU time (khzTickStats.cpu_ns) */
  /* context switches of the loop thread since it started (not reset by
   * KHZ_REQ_RESET_STATS; read from /proc by khz_loop_stats, -1 when unreadable):
   * involuntary ones are preemptions by other threads of equal or higher priority */
  int64_t voluntary_switches, involuntary_switches;
  uint64_t requests;        /* requests applied */
  uint64_t seq;             /* latest state seq */
  int mode;
  int paused;
  double rate_hz;
} khzLoopStats;

/* --------------------------------------------------------------- limits -- */

/* Physical inputs are checked against the model (limits.c) by the I/O side,
 * which refuses them with the message, and again by the loop before it
 * applies them. Each check returns 0, or -1 with a message naming the value,
 * where it is and its limit. */
#define KHZ_WRENCH_MAX_ACCEL 1000   /* m/s^2: |force| <= this times the body's subtree mass */
#define KHZ_WRENCH_MAX_ALPHA 100000 /* rad/s^2: |torque| <= this times its largest principal
                                       inertia about the com */
#define KHZ_RESET_MAX_POS 10000     /* m: a reset's positions (prismatic, floating) */
#define KHZ_RESET_MAX_ANGLE 1000000 /* rad: a reset's angles of unlimited joints */
#define KHZ_HAPTIC_MAX_SPEED 1000   /* m/s, rad/s: a haptic device's velocities (its position
                                       is bounded by KHZ_RESET_MAX_POS) */

/* the largest force (N) and torque (N m) a perturbation may put on body */
void khz_loop_wrenchLimits(const khzModel *m, int body, double *force, double *torque);
/* w = force[3], torque[3] (world, at the com) on body */
int khz_loop_checkWrench(const khzModel *m, int body, const double w[6], char *msg, size_t msz);
/* q (nq values): finite, limited joints within their limits, positions and
 * angles within KHZ_RESET_MAX_*, quaternions of a usable norm */
int khz_loop_checkReset(const khzModel *m, const double *q, char *msg, size_t msz);
/* PD gains per actuator (dof[a]; kp or kd may be NULL): finite, >= 0, and
 * within the sampled PD's stability bound at step h on the actuator's
 * effective inertia at q0 (m->dof_meff): kp <= 4 m / h^2, kd <= 2 m / h */
int khz_loop_checkGains(const khzModel *m, const int *dof, int na, const double *kp,
                        const double *kd, double h, char *msg, size_t msz);

/* The largest step the model's integrator keeps stable against its stiffest
 * element, each taken as a damped oscillator and held to the integrator's
 * stability region: a joint's spring with its damping on its effective
 * inertia at q0 (armature included; damping alone sets no limit, being
 * implicit where it could diverge), the contact spring-damper of every pair
 * of geoms that can touch with gains given in the scene, on the pair's
 * reduced mass, and, for automatic contact gains, the step's fall against the
 * thinnest floating body (g h^2 <= r / 4, measured); INFINITY when nothing
 * limits it. what (when not NULL) names the element. */
double khz_loop_stableTimestep(const khzModel *m, char *what, size_t wsz);
/* 1 with a warning in msg when h (in the model's substeps when longer than
 * its max_substep) is beyond that limit, else 0 */
int khz_loop_stabilityWarning(const khzModel *m, double h, char *msg, size_t msz);
/* the same with the limit and its element from an earlier khz_loop_stableTimestep
 * (which scans every pair of geoms: a server keeps its model's) */
int khz_loop_stabilityWarningFor(const khzModel *m, double hmax, const char *what, double h,
                                  char *msg, size_t msz);

/* ------------------------------------------------------------------- loop -- */

typedef struct khzLoop khzLoop;

/* Creates the loop for model m (the loop keeps the pointer: m must outlive
 * it and is only read; the loop owns its own khzData, reset to q0), starts its
 * thread and returns once the thread is ready; khz_loop_report()
 * then says which privileges were granted. The initial state (seq 0) is
 * published before the first tick. Returns NULL with a message in err when the
 * configuration is invalid or memory / the thread cannot be had. */
khzLoop *khz_loop_new(const khzModel *m, const khzLoopConfig *cfg, char *err, size_t errsz);

/* Stops the thread (it finishes the current tick), frees everything and nulls
 * the caller's pointer. */
void khz_loop_destroy(khzLoop **loop_p);

/* One line: SCHED_FIFO / CPU / memory lock / stack pre-fault, granted or why not. */
const char *khz_loop_report(const khzLoop *loop);

/* The rate the loop ticks at, as of the latest KHZ_REQ_RATE it applied (any
 * thread). The loop owns the step size: every tick steps the caller's model
 * by 1 / rate, written into *timestep when not NULL; the model's own timestep
 * (the scene's default) is never changed. */
double khz_loop_rate(const khzLoop *loop, double *timestep);

/* Number of actuators (commands carry this many values). */
int khz_loop_na(const khzLoop *loop);

/* The command slot to fill (the I/O side's back buffer; never NULL). Fill
 * every field and array the kind uses, then commit; the newest committed command
 * replaces any the loop has not taken yet (counted as superseded). */
khzCommand *khz_loop_commandBegin(khzLoop *loop);
void khz_loop_commandCommit(khzLoop *loop);

/* Hands the newest input of a haptic proxy to the loop. Returns -1 when proxy is
 * out of range. */
int khz_loop_haptic(khzLoop *loop, int proxy, const khzHapticInput *in);

/* A request slot to fill, or NULL when the request ring is full (reply "busy").
 * Commit hands it to the loop thread, which applies it before its next tick
 * (also while waiting in lockstep or paused) and answers with one reply. */
khzRequest *khz_loop_requestBegin(khzLoop *loop);
void khz_loop_requestCommit(khzLoop *loop);

/* Takes the next reply; returns 1 when one was copied into out, 0 when none.
 * A KHZ_REQ_HASH reply's hash is computed here (once per state). */
int khz_loop_pollReply(khzLoop *loop, khzReply *out);

/* Replies the loop could not post (its reply ring full; sized so that this
 * does not happen): counted, never silent. */
uint64_t khz_loop_repliesLost(const khzLoop *loop);

/* The oldest state not yet released, or NULL; release it when done. */
const khzLoopState *khz_loop_peekState(khzLoop *loop);
void khz_loop_releaseState(khzLoop *loop);

/* Statistics from the histograms and counters (safe from any one thread). */
void khz_loop_stats(khzLoop *loop, khzLoopStats *out);

/* One own overrun as the verifier judged it (verify_overruns). Times in ns.
 * Verdicts: the step's work (OWN), the host's time (HOST), not the same work
 * (MISMATCH), the fixed work around the step (AROUND), the requests applied
 * (REQUESTS); khzTickStats gives the rule. */
enum { KHZ_VERIFY_OWN = 1, KHZ_VERIFY_HOST, KHZ_VERIFY_MISMATCH, KHZ_VERIFY_AROUND, KHZ_VERIFY_REQUESTS };
#define KHZ_NVERDICTS 5
/* the phases of the loop's CPU time from one state to the next, with
 * verify_overruns (khzOverrunCheck.phase_ns). In the tick: before the step
 * (faults, command, watchdog, torques, wrenches, the state's save), the step,
 * after it (sensors, flags, the state's timing). Between the previous tick's
 * state and this tick: that state's copy into the ring and the statistics,
 * the I/O wake (khzLoopConfig.wake), the requests applied, and the rest (the
 * schedule, the verifier's hand-off, the clock reads up to the sleep). */
enum { KHZ_PHASE_PRE = 0, KHZ_PHASE_STEP, KHZ_PHASE_POST, KHZ_PHASE_COPY, KHZ_PHASE_WAKE,
       KHZ_PHASE_REQUESTS, KHZ_PHASE_REST };
#define KHZ_NPHASES 7
#define KHZ_VERIFY_HOST_FACTOR 100 /* a fixed phase charged more than this times its p99 */
#define KHZ_VERIFY_QUEUE 8 /* jobs: one saving the tick being stepped, up to 7 queued to the verifier */
typedef struct khzOverrunCheck {
  uint64_t seq;           /* the state the overrunning tick published */
  int verdict;            /* KHZ_VERIFY_* */
  int64_t period_ns;
  int64_t lateness_ns;    /* the tick's wake-up lateness */
  int64_t compute_ns;     /* its wall compute time */
  int64_t tick_cpu_ns;    /* TickStats.cpu_ns */
  int64_t between_ns;     /* TickStats.between_ns */
  int64_t step_cpu_ns;    /* the loop thread's CPU time in khz_stepWith at that tick */
  int64_t other_ns;       /* between_ns + tick_cpu_ns - step_cpu_ns: the tick's other work */
  int64_t other_prev_ns;  /* the same of the tick before (for the record: other work that
                             jumped charged its time outside the step, where no re-run checks) */
  int64_t before_step_ns, step_wall_ns, after_step_ns; /* the tick's wall time (CLOCK_MONOTONIC)
                             from the wake-up to the step (the command phase and the save), in
                             the step (and its two CPU clock reads), and from it to the state */
  int requests;           /* requests the loop applied between the tick before and this one */
  int64_t requests_ns;    /* their wall time (CLOCK_MONOTONIC): between_ns less this was spent
                             publishing the tick before, waking the I/O side and sleeping */
  int64_t rerun_ns[3];    /* the verifier's CPU time of each re-run of the step */
  int64_t rerun_min_ns;
  int64_t phase_ns[KHZ_NPHASES];     /* the loop's CPU time in each phase (KHZ_PHASE_*) */
  int64_t phase_p99_ns[KHZ_NPHASES]; /* each fixed phase's p99 over the run when judged; for
                                        the requests the sum of n p99 over their kinds (req_*);
                                        0 for the step and the wake (re-run, re-called) */
  int64_t accepted_ns[KHZ_NPHASES];  /* what the verdict counts: the step's least re-run, the
                                        wake's measured time or wake_calls least re-calls if less,
                                        the requests' req_accepted_ns summed, another fixed phase
                                        as measured or, when charged over KHZ_VERIFY_HOST_FACTOR
                                        times its p99, its p99 */
  int64_t wake_rerun_ns;  /* the verifier's least CPU time of 3 calls of the wake callback
                             (khzLoopConfig.wake, each after a 1 ms sleep so that the I/O side
                             is idle as the loop finds it); -1 without a wake callback */
  int wake_calls;         /* wake calls in phase_ns[KHZ_PHASE_WAKE]: the previous state's, and
                             one after each round of requests (statistics and the wake) */
  /* the requests applied before the tick, by kind (khzRequestType; the last
   * entry: a kind the loop does not know): how many, their CPU time (the
   * loop's clock read after each), the kind's p99 per request over the run
   * when judged, and what the verdict counts (n p99 when charged more than
   * KHZ_VERIFY_HOST_FACTOR times that, else as measured) */
  int req_n[KHZ_NREQUEST + 1];
  int64_t req_ns[KHZ_NREQUEST + 1];
  int64_t req_p99_ns[KHZ_NREQUEST + 1];
  int64_t req_accepted_ns[KHZ_NREQUEST + 1];
  int64_t work_ns;        /* the sum of accepted_ns: over period_ns = khz's own */
  uint64_t hash, rerun_hash; /* the loop's post-step state hash, the re-run's */
} khzOverrunCheck;

/* Copies the first checks (at most max; the loop keeps the first
 * KHZ_LOOP_MAX_CHECKS since it started) into out and returns how many. */
#define KHZ_LOOP_MAX_CHECKS 64
int khz_loop_overrunChecks(khzLoop *loop, khzOverrunCheck *out, int max);

/* CLOCK_MONOTONIC in ns (the clock of every *_ns field above except wall_ns). */
int64_t khz_loop_now(void);

/* Mode names: "realtime", "lockstep", "fast"; and back (-1 when unknown). */
const char *khz_loop_modeName(int mode);
int khz_loop_modeFromName(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* KHZ_LOOP_H */
