/* harness.h — the server tests' helpers: an in-process khz-server on private
 * ipc:// endpoints (run by a thread), clients from <khz/client.h>, and a PID
 * controller that answers states with torques. */
#ifndef KHZ_TESTS_SERVER_HARNESS_H
#define KHZ_TESTS_SERVER_HARNESS_H

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "khz/client.h"
#include "ensure.h"
#include "khz/loop.h"
#include "server.h"
#include "settings.h"

typedef struct harness {
  khzServer *srv;
  pthread_t thread;
  char state_ep[KHZ_SETTING_STR], cmd_ep[KHZ_SETTING_STR];
} harness;

static inline void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

/* defaults for tests: private endpoints, no real-time privileges, quiet log */
static inline void harness_config(khzServerConfig *cfg) {
  static int n;
  khz_settings_defaults(cfg);
  snprintf(cfg->state_endpoint, sizeof cfg->state_endpoint, "ipc:///tmp/khz-test-%d-%d-state",
           (int)getpid(), n);
  snprintf(cfg->command_endpoint, sizeof cfg->command_endpoint, "ipc:///tmp/khz-test-%d-%d-cmd",
           (int)getpid(), n++);
  cfg->rt_priority = 0;
  cfg->io_priority = 0;
  cfg->lock_memory = 0;
  cfg->cpu_dma_latency_us = -1;
  cfg->log_level = 2; /* warn */
}

static inline void *harness_run(void *arg) {
  khz_server_run(((harness *)arg)->srv);
  return NULL;
}

static inline int harness_start(harness *h, const khzServerConfig *cfg, const khzServerHooks *hooks) {
  char err[1024];
  memset(h, 0, sizeof *h);
  h->srv = khz_server_new(cfg, hooks, err, sizeof err);
  if (!h->srv) {
    fprintf(stderr, "server: %s\n", err);
    return -1;
  }
  snprintf(h->state_ep, sizeof h->state_ep, "%s", cfg->state_endpoint);
  snprintf(h->cmd_ep, sizeof h->cmd_ep, "%s", cfg->command_endpoint);
  pthread_create(&h->thread, NULL, harness_run, h);
  return 0;
}

static inline void harness_stop(harness *h) {
  if (!h->srv) return;
  khz_server_stop(h->srv);
  pthread_join(h->thread, NULL);
  khz_server_destroy(&h->srv);
}

/* a connected client that has seen a state (PUB/SUB joins take a moment) */
static inline khzClient *harness_client(harness *h) {
  char err[256];
  khzClient *c = khz_client_new(h->state_ep, h->cmd_ep, NULL, err, sizeof err);
  if (!c) {
    fprintf(stderr, "client: %s\n", err);
    return NULL;
  }
  if (!khz_client_describe(c, 5000) || !khz_client_nextState(c, 5000)) {
    fprintf(stderr, "client: the server does not answer\n");
    khz_client_destroy(&c);
  }
  return c;
}

/* How long a test waits for something that must happen (a state, a reply, a
 * flag). It only bounds a hang: on a loaded machine (CI, ASan) states and
 * replies come late, never not at all, so the tests wait for the event by its
 * content (seq, flags, counters) rather than for a number of states or ms. */
#define PATIENCE_MS 30000

/* the next state within the test's patience (NULL only when none came at all) */
static inline const Khz__V1__State *patient_state(khzClient *c, int64_t until_ns) {
  const Khz__V1__State *st = NULL;
  while (!st && khz_client_now() < until_ns) st = khz_client_nextState(c, 1000);
  return st;
}

static inline int64_t patience_ends(void) { return khz_client_now() + (int64_t)PATIENCE_MS * 1000000; }

/* requests */
static inline const Khz__V1__Reply *req_setting(khzClient *c, const char *name, const char *value) {
  Khz__V1__Request rq;
  Khz__V1__SetSetting ss;
  khz__v1__request__init(&rq);
  khz__v1__set_setting__init(&ss);
  ss.name = (char *)name;
  ss.value = (char *)value;
  rq.op_case = KHZ__V1__REQUEST__OP_SET_SETTING;
  rq.set_setting = &ss;
  return khz_client_request(c, &rq, 5000);
}

static inline const Khz__V1__Reply *req_simple(khzClient *c, Khz__V1__Request__OpCase op) {
  /* the empty request messages share one layout */
  static Khz__V1__Pause empty;
  Khz__V1__Request rq;
  khz__v1__request__init(&rq);
  khz__v1__pause__init(&empty);
  rq.op_case = op;
  switch (op) {
    case KHZ__V1__REQUEST__OP_PAUSE: rq.pause = &empty; break;
    case KHZ__V1__REQUEST__OP_RESUME: rq.resume = (Khz__V1__Resume *)&empty; break;
    case KHZ__V1__REQUEST__OP_GET_STATS: rq.get_stats = (Khz__V1__GetStats *)&empty; break;
    case KHZ__V1__REQUEST__OP_RESET_STATS: rq.reset_stats = (Khz__V1__ResetStats *)&empty; break;
    case KHZ__V1__REQUEST__OP_CLEAR_WRENCHES: rq.clear_wrenches = (Khz__V1__ClearWrenches *)&empty; break;
    case KHZ__V1__REQUEST__OP_STOP_RECORDING: rq.stop_recording = (Khz__V1__StopRecording *)&empty; break;
    default: break;
  }
  return khz_client_request(c, &rq, 5000);
}

static inline const Khz__V1__Reply *req_reset(khzClient *c) {
  Khz__V1__Request rq;
  Khz__V1__Reset r;
  khz__v1__request__init(&rq);
  khz__v1__reset__init(&r);
  rq.op_case = KHZ__V1__REQUEST__OP_RESET;
  rq.reset = &r;
  return khz_client_request(c, &rq, 5000);
}

static inline uint64_t rejected_count(khzClient *c, int code) {
  const Khz__V1__Reply *r = req_simple(c, KHZ__V1__REQUEST__OP_GET_STATS);
  if (!r || !r->stats) return (uint64_t)-1;
  for (size_t i = 0; i < r->stats->n_rejected_by_code; i++)
    if ((int)r->stats->rejected_by_code[i]->code == code) return r->stats->rejected_by_code[i]->count;
  return 0;
}

/* a PID controller on every actuator, toward target (na values) */
typedef struct pid {
  int na;
  double target[64], integ[64], tau[64];
  Khz__V1__Command cmd;
  uint64_t seq;
} pid;

static inline void pid_init(pid *p, const Khz__V1__ModelDescription *md, const double *target) {
  memset(p, 0, sizeof *p);
  p->na = (int)md->na;
  memcpy(p->target, target, (size_t)p->na * sizeof(double));
  khz__v1__command__init(&p->cmd);
  p->cmd.model_generation = md->model_generation;
  p->cmd.n_tau = (size_t)p->na;
  p->cmd.tau = p->tau;
}

/* computes and sends the answer to st */
static inline void pid_answer(pid *p, khzClient *c, const Khz__V1__ModelDescription *md,
                              const Khz__V1__State *st) {
  double dt = 1.0 / st->rate_hz;
  for (int a = 0; a < p->na; a++) {
    const Khz__V1__Actuator *ac = md->actuators[a];
    double effort = ac->effort_limit > 0 ? ac->effort_limit : 50;
    double e = p->target[a] - st->q[ac->q_index];
    p->integ[a] += e * dt;
    double lim = 0.3 * effort / (8 * effort);
    p->integ[a] = p->integ[a] > lim ? lim : p->integ[a] < -lim ? -lim : p->integ[a];
    p->tau[a] = 4 * effort * e - 0.1 * effort * st->qd[ac->qd_index] + 8 * effort * p->integ[a];
  }
  p->cmd.seq = ++p->seq;
  p->cmd.state_seq = st->seq;
  p->cmd.client_time_ns = khz_client_now();
  khz_client_command(c, &p->cmd);
}

static inline double pid_error(const pid *p, const Khz__V1__ModelDescription *md,
                               const Khz__V1__State *st) {
  double worst = 0;
  for (int a = 0; a < p->na; a++) {
    double e = fabs(p->target[a] - st->q[md->actuators[a]->q_index]);
    worst = e > worst ? e : worst;
  }
  return worst;
}

/* the default arm's ready pose plus an offset per joint */
static inline void arm_target(const Khz__V1__ModelDescription *md, const Khz__V1__State *st,
                              double *target) {
  static const double off[7] = {0.25, 0.15, -0.2, 0.25, 0.2, -0.2, 0.3};
  for (size_t a = 0; a < md->na; a++) target[a] = st->q[md->actuators[a]->q_index] + off[a % 7];
}

#endif
