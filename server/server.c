/* server.c — the I/O side of khz-server (server.h): one libev loop owns every
 * ZeroMQ socket.
 *
 *   PUB    state_endpoint    frames "state" + State, one per tick, ZMQ_SNDHWM per
 *                            subscriber and ZMQ_DONTWAIT: a slow subscriber loses
 *                            states, nobody waits for it.
 *   ROUTER command_endpoint  ClientMessage in (Command, HapticInput, Request),
 *                            ServerMessage out (Reply, Error) to that peer only.
 *   REP    ZAP handler       inproc://zeromq.zap.01, when CURVE is on.
 *
 * ZMQ_FD is edge-triggered: after every receive or send on a socket its
 * ZMQ_EVENTS are drained until no input is left. The loop thread wakes this
 * thread through an ev_async (the loop's wake callback calls ev_async_send);
 * this thread then publishes every state in the ring and answers the replies.
 * Requests that change the simulation become loop requests; their client
 * replies wait in a small pending table until the loop has applied them.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <ev.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "codec.h"
#include "khz/load.h"
#include "khz/loop.h"
#include "khz/v1/messages.pb-c.h"
#include "log.h"
#include "server.h"

#define KHZ_MAX_PEERS 256
#define KHZ_MAX_PENDING 64
#define KHZ_PEER_ID_MAX 256
#define KHZ_MAX_CLIENT_KEYS 64
#define KHZ_DRAIN_BATCH 256
#define KHZ_KEEPALIVE_S 0.05
#define KHZ_NCODES 16

/* a connection on the ROUTER socket: its identity and whether it is a REQ
 * socket (an empty delimiter frame before the payload) */
typedef struct khzPeer {
  uint8_t id[KHZ_PEER_ID_MAX];
  size_t idlen;
  int delim;
} khzPeer;

typedef enum { PEND_PLAIN = 0, PEND_STATS, PEND_SETTING } khzPendKind;

/* a client request waiting for the loop's reply */
typedef struct khzPending {
  int used;
  uint64_t loop_id;
  khzPendKind kind;
  khzPeer peer;
  uint64_t req_id;
  int remaining;                  /* loop replies still expected */
  int failed;                     /* the ErrorCode of the first refusal, 0 = none */
  char error[KHZ_LOOP_MSG_MAX];
  const khzSetting *setting;      /* committed into the config on success */
  char value[KHZ_SETTING_STR];
} khzPending;

struct khzServer {
  khzServerConfig cfg;
  khzServerHooks hooks;

  /* model and loop */
  khzScene scene;
  int have_scene;
  khzModel *m;
  khzLoop *loop;
  uint32_t generation;
  int na;
  int *act_dof;
  int nhaptic;
  khzHapticProxy haptic[KHZ_LOOP_MAX_HAPTIC];
  int scene_method;

  /* sockets and watchers */
  void *ctx, *pub, *router, *zap;
  struct ev_loop *ev;
  ev_io router_io, zap_io;
  ev_async wake_async, stop_async;
  ev_signal sigint_w, sigterm_w;
  ev_timer stats_timer, duration_timer, keepalive_timer;
  int started;

  /* state publication */
  khzStateCodec codec;
  uint8_t *last;
  size_t lastlen, lastcap;
  double last_pub;
  int have_state;
  uint64_t latest_seq, reset_seq;
  int mode;
  uint64_t published;
  FILE *rec;
  char rec_path[KHZ_SETTING_STR];

  /* what the log has said already */
  int watchdog_logged;
  uint64_t seen_timeouts, seen_overruns, seen_dropped, seen_watchdog;
  double last_warn_log;

  /* peers, pending replies, counters */
  khzPeer peers[KHZ_MAX_PEERS];
  int npeers, next_peer;
  uint64_t peers_seen;
  khzPending pending[KHZ_MAX_PENDING];
  uint64_t next_loop_id;
  uint64_t rejected, by_code[KHZ_NCODES];
  uint64_t commands_in;

  /* the I/O thread's scheduling: SCHED_FIFO io_priority when permitted */
  int io_fifo;
  char io_report[160];

  /* CURVE */
  int curve;
  char secret[41], public_key[41];
  uint8_t client_key[KHZ_MAX_CLIENT_KEYS][32];
  int nclient_keys;
};

/* --------------------------------------------------------------- helpers -- */

static int fail(char *err, size_t errsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errsz, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errsz, fmt, ap);
  va_end(ap);
  return -1;
}

int khz_endpoint_is_local(const char *ep) {
  if (!strncmp(ep, "ipc://", 6) || !strncmp(ep, "inproc://", 9)) return 1;
  if (strncmp(ep, "tcp://", 6)) return 0;
  const char *host = ep + 6;
  if (strchr(host, ';')) return 0; /* source;destination forms: not judged, so not local */
  if (!strncmp(host, "127.", 4) || !strncmp(host, "localhost:", 10) || !strncmp(host, "[::1]:", 6) ||
      !strncmp(host, "lo:", 3))
    return 1;
  return 0;
}

/* the rate a configuration asks for: its rate_hz, or the scene's when 0 (the
 * loop owns the rate in use: khz_loop_rate) */
static double requested_rate(const khzServer *s, const khzServerConfig *c) {
  return c->rate_hz > 0 ? c->rate_hz : s->scene.rate_hz;
}

static int code_index(int code) { return code >= 0 && code < KHZ_NCODES ? code : KHZ__V1__ERROR_CODE__INTERNAL; }

static void count_reject(khzServer *s, int code) {
  s->by_code[code_index(code)]++;
  if (code != KHZ__V1__ERROR_CODE__CLAMPED) s->rejected++;
}

/* the peer's client id (1-based index in the peer table) */
static uint32_t peer_client(khzServer *s, const khzPeer *p) {
  for (int i = 0; i < s->npeers; i++)
    if (s->peers[i].idlen == p->idlen && !memcmp(s->peers[i].id, p->id, p->idlen))
      return (uint32_t)i + 1;
  int i = s->npeers < KHZ_MAX_PEERS ? s->npeers++ : (s->next_peer++ % KHZ_MAX_PEERS);
  s->peers[i] = *p;
  s->peers_seen++;
  return (uint32_t)i + 1;
}

/* ----------------------------------------------------------------- sends -- */

static void router_drain(khzServer *s);

/* one ServerMessage to one peer; dropped (not blocked on) when the peer is gone or full */
static void send_to(khzServer *s, const khzPeer *p, const Khz__V1__ServerMessage *msg) {
  size_t n = khz__v1__server_message__get_packed_size(msg);
  uint8_t stackbuf[4096], *buf = n <= sizeof stackbuf ? stackbuf : malloc(n);
  if (!buf) return;
  khz__v1__server_message__pack(msg, buf);
  zmq_send(s->router, p->id, p->idlen, ZMQ_SNDMORE | ZMQ_DONTWAIT);
  if (p->delim) zmq_send(s->router, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
  zmq_send(s->router, buf, n, ZMQ_DONTWAIT);
  if (buf != stackbuf) free(buf);
}

static void send_error(khzServer *s, const khzPeer *p, int code, uint64_t seq, int applied,
                       const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void send_error(khzServer *s, const khzPeer *p, int code, uint64_t seq, int applied,
                       const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  Khz__V1__Error e;
  khz__v1__error__init(&e);
  e.code = (Khz__V1__ErrorCode)code;
  e.message = msg;
  e.command_seq = seq;
  e.applied = applied != 0;
  Khz__V1__ServerMessage out;
  khz__v1__server_message__init(&out);
  out.body_case = KHZ__V1__SERVER_MESSAGE__BODY_ERROR;
  out.error = &e;
  count_reject(s, code);
  khz_log(KHZ_LOG_DEBUG, "rejected (%d): %s", code, msg);
  send_to(s, p, &out);
}

/* a reply; code != OK counts as a rejection */
static void send_reply(khzServer *s, const khzPeer *p, Khz__V1__Reply *r) {
  Khz__V1__ServerMessage out;
  khz__v1__server_message__init(&out);
  out.body_case = KHZ__V1__SERVER_MESSAGE__BODY_REPLY;
  out.reply = r;
  if (r->code != KHZ__V1__ERROR_CODE__OK) {
    count_reject(s, r->code);
    khz_log(KHZ_LOG_DEBUG, "request %llu refused: %s", (unsigned long long)r->id, r->error);
  }
  send_to(s, p, &out);
}

static void reply_error(khzServer *s, const khzPeer *p, uint64_t id, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void reply_error(khzServer *s, const khzPeer *p, uint64_t id, int code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  Khz__V1__Reply r;
  khz__v1__reply__init(&r);
  r.id = id;
  r.code = (Khz__V1__ErrorCode)code;
  r.error = msg;
  r.state_seq = s->latest_seq;
  send_reply(s, p, &r);
}

static void reply_ok(khzServer *s, const khzPeer *p, uint64_t id, uint64_t seq) {
  Khz__V1__Reply r;
  khz__v1__reply__init(&r);
  r.id = id;
  r.state_seq = seq;
  send_reply(s, p, &r);
}

/* --------------------------------------------------------------- settings -- */

/* a reply carrying settings (one, or all when s == NULL) */
static void reply_settings(khzServer *srv, const khzPeer *p, uint64_t id, const khzSetting *one) {
  int n = one ? 1 : khz_settings_count();
  Khz__V1__Setting *st = calloc((size_t)n, sizeof *st);
  Khz__V1__Setting **sp = calloc((size_t)n, sizeof *sp);
  char (*val)[KHZ_SETTING_STR] = calloc((size_t)n, sizeof *val);
  char (*rng)[KHZ_SETTING_STR] = calloc((size_t)n, sizeof *rng);
  if (!st || !sp || !val || !rng) {
    reply_error(srv, p, id, KHZ__V1__ERROR_CODE__INTERNAL, "out of memory");
  } else {
    for (int i = 0; i < n; i++) {
      const khzSetting *s = one ? one : &khz_settings[i];
      khz__v1__setting__init(&st[i]);
      khz_setting_format(s, &srv->cfg, val[i], sizeof val[i]);
      khz_setting_range(s, rng[i], sizeof rng[i]);
      st[i].name = (char *)s->name;
      st[i].value = val[i];
      st[i].type = (char *)(const char *[]){"bool", "int", "double", "string", "enum"}[s->type];
      st[i].range = rng[i];
      st[i].runtime = s->runtime != 0;
      st[i].help = (char *)s->help;
      sp[i] = &st[i];
    }
    Khz__V1__SettingList list;
    khz__v1__setting_list__init(&list);
    list.n_settings = (size_t)n;
    list.settings = sp;
    Khz__V1__Reply r;
    khz__v1__reply__init(&r);
    r.id = id;
    r.state_seq = srv->latest_seq;
    r.result_case = KHZ__V1__REPLY__RESULT_SETTINGS;
    r.settings = &list;
    send_reply(srv, p, &r);
  }
  free(st);
  free(sp);
  free(val);
  free(rng);
}

/* ------------------------------------------------------- loop requests -- */

static khzPending *pending_new(khzServer *s, const khzPeer *p, uint64_t req_id, khzPendKind kind) {
  for (int i = 0; i < KHZ_MAX_PENDING; i++) {
    khzPending *q = &s->pending[i];
    if (q->used) continue;
    memset(q, 0, sizeof *q);
    q->used = 1;
    q->kind = kind;
    q->peer = *p;
    q->req_id = req_id;
    q->loop_id = ++s->next_loop_id;
    return q;
  }
  return NULL;
}

/* a loop request slot tagged with the pending entry's id, or NULL (busy) */
static khzRequest *loop_request(khzServer *s, khzPending *q, int type) {
  khzRequest *rq = khz_loop_requestBegin(s->loop);
  if (!rq) return NULL;
  rq->id = q->loop_id;
  rq->type = type;
  q->remaining++;
  return rq;
}

static void busy(khzServer *s, khzPending *q) {
  if (q) {
    /* requests already committed for this entry still answer it */
    if (q->remaining > 0) {
      q->failed = KHZ__V1__ERROR_CODE__BUSY;
      snprintf(q->error, sizeof q->error, "the loop's request queue is full: retry");
      return;
    }
    reply_error(s, &q->peer, q->req_id, KHZ__V1__ERROR_CODE__BUSY,
                "the loop's request queue is full: retry");
    q->used = 0;
  }
}

/* Queues the loop requests that apply one setting's kind from cfg. Returns 0,
 * or -1 when the request ring is full. */
static int queue_setting(khzServer *s, khzPending *q, khzSettingApply kind, const khzServerConfig *c) {
  khzRequest *rq;
  switch (kind) {
    case KHZ_APPLY_RATE:
      if (!(rq = loop_request(s, q, KHZ_REQ_RATE))) return -1;
      rq->dval = requested_rate(s, c);
      break;
    case KHZ_APPLY_MODE:
      if (!(rq = loop_request(s, q, KHZ_REQ_MODE))) return -1;
      rq->ival = c->mode;
      break;
    case KHZ_APPLY_PAUSED:
      if (!(rq = loop_request(s, q, c->paused ? KHZ_REQ_PAUSE : KHZ_REQ_RESUME))) return -1;
      break;
    case KHZ_APPLY_WATCHDOG:
      if (!(rq = loop_request(s, q, KHZ_REQ_WATCHDOG))) return -1;
      rq->dval = c->watchdog_ms / 1000;
      rq->ival = c->safe_command;
      rq->data[0] = c->safe_damping;
      rq->ndata = 1;
      break;
    case KHZ_APPLY_LOCKSTEP:
      if (!(rq = loop_request(s, q, KHZ_REQ_LOCKSTEP_TIMEOUT))) return -1;
      rq->dval = c->lockstep_timeout_ms / 1000;
      break;
    case KHZ_APPLY_GAINS:
      if (!(rq = loop_request(s, q, KHZ_REQ_GAINS))) return -1;
      for (int i = 0; i < s->na; i++) rq->data[i] = c->kp, rq->data[s->na + i] = c->kd;
      rq->ndata = 2 * s->na;
      break;
    case KHZ_APPLY_CONTACT:
      if (!(rq = loop_request(s, q, KHZ_REQ_CONTACT))) return -1;
      rq->ival = c->contact_method[0] ? khz_contactMethodFromName(c->contact_method) : s->scene_method;
      break;
    case KHZ_APPLY_PUBLISH:
      if (!(rq = loop_request(s, q, KHZ_REQ_PUBLISH))) return -1;
      rq->ival = (c->publish_contacts ? 1 : 0) | (c->publish_hash ? 2 : 0);
      break;
    default:
      return 0;
  }
  khz_loop_requestCommit(s->loop);
  return 0;
}

static void stats_timer_cb(struct ev_loop *ev, ev_timer *w, int revents);

/* a setting changed at run time: validate, then apply (immediately or through
 * the loop; the reply follows when applied) */
static void set_setting(khzServer *s, const khzPeer *p, uint64_t id, const char *name,
                        const char *value) {
  const khzSetting *st = khz_setting_find(name);
  char err[512];
  if (!st) {
    reply_error(s, p, id, KHZ__V1__ERROR_CODE__UNKNOWN_NAME,
                "unknown setting '%s' (GetSetting with an empty name lists them)", name);
    return;
  }
  if (!st->runtime) {
    reply_error(s, p, id, KHZ__V1__ERROR_CODE__REFUSED,
                "setting '%s' can only be set at start (flag or config file)", st->name);
    return;
  }
  khzServerConfig tmp = s->cfg;
  if (khz_setting_parse(st, value, &tmp, err, sizeof err)) {
    reply_error(s, p, id, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "%s", err);
    return;
  }
  if (st->apply == KHZ_APPLY_CONTACT && tmp.contact_method[0] &&
      khz_contactMethodFromName(tmp.contact_method) < 0) {
    reply_error(s, p, id, KHZ__V1__ERROR_CODE__UNKNOWN_NAME, "setting 'contact_method': unknown method '%s'",
                tmp.contact_method);
    return;
  }
  if (st->apply == KHZ_APPLY_LOG || st->apply == KHZ_APPLY_STATS) {
    s->cfg = tmp;
    if (st->apply == KHZ_APPLY_LOG) khz_log_level = s->cfg.log_level;
    if (st->apply == KHZ_APPLY_STATS) {
      ev_timer_stop(s->ev, &s->stats_timer);
      if (s->cfg.stats_interval_s > 0) {
        ev_timer_set(&s->stats_timer, s->cfg.stats_interval_s, s->cfg.stats_interval_s);
        ev_timer_start(s->ev, &s->stats_timer);
      }
    }
    reply_settings(s, p, id, st);
    return;
  }
  khzPending *q = pending_new(s, p, id, PEND_SETTING);
  if (!q) {
    reply_error(s, p, id, KHZ__V1__ERROR_CODE__BUSY, "too many requests in flight: retry");
    return;
  }
  q->setting = st;
  snprintf(q->value, sizeof q->value, "%s", value);
  if (queue_setting(s, q, st->apply, &tmp)) busy(s, q);
}

/* ------------------------------------------------------------- commands -- */

static int check_finite(const double *v, size_t n, size_t *bad) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(v[i])) return *bad = i, 0;
  return 1;
}

static void handle_command(khzServer *s, const khzPeer *p, const Khz__V1__Command *c) {
  size_t na = (size_t)s->na, bad = 0;
  uint64_t seq = c->seq;

  /* which model, which state */
  if (c->model_generation != s->generation) {
    send_error(s, p, KHZ__V1__ERROR_CODE__WRONG_GENERATION, seq, 0,
               "command %llu: model_generation %u is not this server's model (%u): describe it again",
               (unsigned long long)seq, c->model_generation, s->generation);
    return;
  }
  if (!s->have_state || c->state_seq > s->latest_seq) {
    send_error(s, p, KHZ__V1__ERROR_CODE__STALE, seq, 0,
               "command %llu: state_seq %llu has not been published (newest is %llu)",
               (unsigned long long)seq, (unsigned long long)c->state_seq,
               (unsigned long long)s->latest_seq);
    return;
  }
  if (c->state_seq < s->reset_seq) {
    send_error(s, p, KHZ__V1__ERROR_CODE__STALE, seq, 0,
               "command %llu: computed from state %llu, before the reset at state %llu",
               (unsigned long long)seq, (unsigned long long)c->state_seq,
               (unsigned long long)s->reset_seq);
    return;
  }

  /* sizes: every array na long, or empty where optional */
  int pd = c->n_q_target > 0;
  const char *field = NULL;
  size_t got = 0;
  if (pd) {
    if (c->n_q_target != na) field = "q_target", got = c->n_q_target;
    else if (c->n_tau && c->n_tau != na) field = "tau", got = c->n_tau;
    else if (c->n_qd_target && c->n_qd_target != na) field = "qd_target", got = c->n_qd_target;
    else if (c->n_kp != c->n_kd || (c->n_kp && c->n_kp != na))
      field = c->n_kp != na ? "kp" : "kd", got = c->n_kp != na ? c->n_kp : c->n_kd;
  } else {
    if (c->n_tau != na) field = "tau", got = c->n_tau;
    else if (c->n_qd_target || c->n_kp || c->n_kd)
      field = c->n_qd_target ? "qd_target" : c->n_kp ? "kp" : "kd",
      got = c->n_qd_target ? c->n_qd_target : c->n_kp ? c->n_kp : c->n_kd;
  }
  if (field) {
    send_error(s, p, KHZ__V1__ERROR_CODE__WRONG_SIZE, seq, 0,
               "command %llu: %s has %zu values, the model has %zu actuators%s", (unsigned long long)seq,
               field, got, na, !pd && strcmp(field, "tau") ? " (qd_target, kp, kd need q_target)" : "");
    return;
  }

  /* values: finite, gains >= 0 */
  const struct {
    const char *name;
    const double *v;
    size_t n;
  } arr[] = {{"tau", c->tau, c->n_tau},       {"q_target", c->q_target, c->n_q_target},
             {"qd_target", c->qd_target, c->n_qd_target},
             {"kp", c->kp, c->n_kp},          {"kd", c->kd, c->n_kd}};
  for (int k = 0; k < 5; k++) {
    if (!check_finite(arr[k].v, arr[k].n, &bad)) {
      send_error(s, p, KHZ__V1__ERROR_CODE__NOT_FINITE, seq, 0,
                 "command %llu: %s[%zu] is %g: nothing applied", (unsigned long long)seq,
                 arr[k].name, bad, arr[k].v[bad]);
      return;
    }
  }
  for (size_t i = 0; i < c->n_kp; i++) {
    if (c->kp[i] < 0 || c->kd[i] < 0) {
      send_error(s, p, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, seq, 0,
                 "command %llu: gains must be >= 0 (actuator %zu)", (unsigned long long)seq, i);
      return;
    }
  }

  /* into the loop's latest-wins buffer, whole */
  khzCommand *slot = khz_loop_commandBegin(s->loop);
  slot->seq = seq;
  slot->state_seq = c->state_seq;
  slot->client_time_ns = c->client_time_ns;
  slot->recv_ns = khz_loop_now();
  slot->client = peer_client(s, p);
  slot->kind = pd ? KHZ_CMD_PD : KHZ_CMD_TORQUE;
  slot->has_gains = c->n_kp > 0;
  for (size_t i = 0; i < na; i++) {
    slot->tau_ff[i] = c->n_tau ? c->tau[i] : 0;
    slot->q_target[i] = pd ? c->q_target[i] : 0;
    slot->qd_target[i] = c->n_qd_target ? c->qd_target[i] : 0;
    slot->kp[i] = c->n_kp ? c->kp[i] : 0;
    slot->kd[i] = c->n_kd ? c->kd[i] : 0;
  }
  khz_loop_commandCommit(s->loop);
  s->commands_in++;

  /* over an effort limit: applied clamped by the tick (state flag CLAMPED); the client is told */
  for (size_t i = 0; i < c->n_tau; i++) {
    double lim = s->m->dof_effort[s->act_dof[i]];
    if (lim > 0 && fabs(c->tau[i]) > lim) {
      send_error(s, p, KHZ__V1__ERROR_CODE__CLAMPED, seq, 1,
                 "command %llu: tau[%zu] = %g exceeds the effort limit %g of joint '%s': clamped",
                 (unsigned long long)seq, i, c->tau[i], lim,
                 s->m->jnt_name[s->m->dof_body[s->act_dof[i]]]);
      break;
    }
  }
}

static void handle_haptic(khzServer *s, const khzPeer *p, const Khz__V1__HapticInput *h) {
  uint64_t seq = h->seq;
  size_t bad = 0;
  if (h->model_generation != s->generation) {
    send_error(s, p, KHZ__V1__ERROR_CODE__WRONG_GENERATION, seq, 0,
               "haptic input %llu: model_generation %u is not this server's model (%u)",
               (unsigned long long)seq, h->model_generation, s->generation);
    return;
  }
  if (h->proxy >= (uint32_t)s->nhaptic) {
    send_error(s, p, KHZ__V1__ERROR_CODE__UNKNOWN_NAME, seq, 0,
               "haptic input %llu: no haptic proxy %u (the scene declares %d)", (unsigned long long)seq,
               h->proxy, s->nhaptic);
    return;
  }
  if (h->n_position != 3 || h->n_orientation != 4 || (h->n_velocity && h->n_velocity != 3) ||
      (h->n_angular_velocity && h->n_angular_velocity != 3)) {
    send_error(s, p, KHZ__V1__ERROR_CODE__WRONG_SIZE, seq, 0,
               "haptic input %llu: need position (3), orientation (4), velocity (0 or 3), "
               "angular_velocity (0 or 3); got %zu, %zu, %zu, %zu",
               (unsigned long long)seq, h->n_position, h->n_orientation, h->n_velocity,
               h->n_angular_velocity);
    return;
  }
  if (!check_finite(h->position, 3, &bad) || !check_finite(h->orientation, 4, &bad) ||
      !check_finite(h->velocity, h->n_velocity, &bad) ||
      !check_finite(h->angular_velocity, h->n_angular_velocity, &bad)) {
    send_error(s, p, KHZ__V1__ERROR_CODE__NOT_FINITE, seq, 0,
               "haptic input %llu: a value is NaN or inf: nothing applied", (unsigned long long)seq);
    return;
  }
  double *o = h->orientation, n = sqrt(o[0] * o[0] + o[1] * o[1] + o[2] * o[2] + o[3] * o[3]);
  if (!(n > 1e-9)) {
    send_error(s, p, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, seq, 0,
               "haptic input %llu: orientation quaternion of zero length", (unsigned long long)seq);
    return;
  }
  khzHapticInput in;
  memset(&in, 0, sizeof in);
  in.seq = seq;
  in.device_time_ns = h->device_time_ns;
  in.recv_ns = khz_loop_now();
  for (int k = 0; k < 3; k++) {
    in.pos[k] = h->position[k];
    in.vel[k] = h->n_velocity ? h->velocity[k] : 0;
    in.angvel[k] = h->n_angular_velocity ? h->angular_velocity[k] : 0;
  }
  for (int k = 0; k < 4; k++) in.quat[k] = o[k] / n;
  khz_loop_haptic(s->loop, (int)h->proxy, &in);
}

/* ------------------------------------------------------------- requests -- */

static int resolve_body(khzServer *s, const khzPeer *p, uint64_t id, const Khz__V1__BodyRef *ref) {
  if (!ref || ref->ref_case == KHZ__V1__BODY_REF__REF__NOT_SET) {
    reply_error(s, p, id, KHZ__V1__ERROR_CODE__UNKNOWN_NAME, "no body given (name or id)");
    return -1;
  }
  if (ref->ref_case == KHZ__V1__BODY_REF__REF_NAME) {
    int b = khz_name2body(s->m, ref->name);
    if (b < 1) {
      reply_error(s, p, id, KHZ__V1__ERROR_CODE__UNKNOWN_NAME,
                  "no body named '%s' in this model (Describe lists them)", ref->name);
      return -1;
    }
    return b;
  }
  const Khz__V1__BodyId *bid = ref->id;
  if (!bid || bid->generation != s->generation) {
    reply_error(s, p, id, KHZ__V1__ERROR_CODE__WRONG_GENERATION,
                "body id from model generation %u, this server's model is %u",
                bid ? bid->generation : 0, s->generation);
    return -1;
  }
  if (bid->index < 1 || bid->index >= (uint32_t)s->m->nbody) {
    reply_error(s, p, id, KHZ__V1__ERROR_CODE__UNKNOWN_NAME, "no body with index %u (1..%d)",
                bid->index, s->m->nbody - 1);
    return -1;
  }
  return (int)bid->index;
}

static void send_description(khzServer *s, const khzPeer *p, uint64_t id) {
  double timestep, rate_hz = khz_loop_rate(s->loop, &timestep);
  khzDescribeInfo info = {s->generation, s->scene.name, rate_hz, timestep, s->mode,
                          s->cfg.contact_method[0] ? khz_contactMethodFromName(s->cfg.contact_method)
                                                   : s->scene_method,
                          s->na, s->act_dof, s->nhaptic, s->haptic};
  Khz__V1__ModelDescription *d = khz_codec_describe(s->m, &info);
  if (!d) {
    reply_error(s, p, id, KHZ__V1__ERROR_CODE__INTERNAL, "out of memory");
    return;
  }
  Khz__V1__Reply r;
  khz__v1__reply__init(&r);
  r.id = id;
  r.state_seq = s->latest_seq;
  r.result_case = KHZ__V1__REPLY__RESULT_MODEL;
  r.model = d;
  send_reply(s, p, &r);
  khz_codec_freeDescription(&d);
}

static void handle_request(khzServer *s, const khzPeer *p, const Khz__V1__Request *rq) {
  uint64_t id = rq->id;
  size_t bad = 0;
  khzPending *q = NULL;
  khzRequest *lr = NULL;
  switch (rq->op_case) {
    case KHZ__V1__REQUEST__OP_DESCRIBE:
      send_description(s, p, id);
      return;

    case KHZ__V1__REQUEST__OP_RESET: {
      const Khz__V1__Reset *r = rq->reset;
      if (r->n_q && r->n_q != (size_t)s->m->nq) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__WRONG_SIZE, "reset: q has %zu values, nq is %d",
                    r->n_q, s->m->nq);
        return;
      }
      if (!check_finite(r->q, r->n_q, &bad)) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__NOT_FINITE, "reset: q[%zu] is not finite", bad);
        return;
      }
      if (!(q = pending_new(s, p, id, PEND_PLAIN)) || !(lr = loop_request(s, q, KHZ_REQ_RESET)))
        break;
      if (r->n_q) memcpy(lr->data, r->q, r->n_q * sizeof(double));
      lr->ndata = (int)r->n_q;
      khz_loop_requestCommit(s->loop);
      return;
    }

    case KHZ__V1__REQUEST__OP_PAUSE:
    case KHZ__V1__REQUEST__OP_RESUME: {
      int pause = rq->op_case == KHZ__V1__REQUEST__OP_PAUSE;
      if (!(q = pending_new(s, p, id, PEND_PLAIN))) break;
      q->setting = khz_setting_find("paused");
      snprintf(q->value, sizeof q->value, "%s", pause ? "true" : "false");
      if (!loop_request(s, q, pause ? KHZ_REQ_PAUSE : KHZ_REQ_RESUME)) break;
      khz_loop_requestCommit(s->loop);
      return;
    }

    case KHZ__V1__REQUEST__OP_STEP:
      if (rq->step->n < 1 || rq->step->n > 1000000000u) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "step: n must be 1..1e9, got %u",
                    rq->step->n);
        return;
      }
      if (!(q = pending_new(s, p, id, PEND_PLAIN))) break;
      q->setting = khz_setting_find("paused");
      snprintf(q->value, sizeof q->value, "true");
      if (!(lr = loop_request(s, q, KHZ_REQ_STEP))) break;
      lr->ival = (int)rq->step->n;
      khz_loop_requestCommit(s->loop);
      return;

    case KHZ__V1__REQUEST__OP_SET_MODE: {
      int mode = rq->set_mode->mode;
      if (mode < 0 || mode >= KHZ_NMODES) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "set_mode: unknown mode %d", mode);
        return;
      }
      set_setting(s, p, id, "mode", khz_loop_modeName(mode));
      return;
    }

    case KHZ__V1__REQUEST__OP_SET_RATE: {
      double hz = rq->set_rate->rate_hz;
      if (!(hz >= KHZ_RATE_MIN_HZ && hz <= KHZ_RATE_MAX_HZ)) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__OUT_OF_RANGE,
                    "set_rate: %g Hz is outside " KHZ_RATE_RANGE("..") " Hz", hz);
        return;
      }
      char v[64];
      snprintf(v, sizeof v, "%.17g", hz);
      set_setting(s, p, id, "rate_hz", v);
      return;
    }

    case KHZ__V1__REQUEST__OP_SET_CONTACT_METHOD: {
      const char *name = rq->set_contact_method->method;
      if (khz_contactMethodFromName(name) < 0) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__UNKNOWN_NAME,
                    "set_contact_method: unknown method '%s' (Describe lists them)", name);
        return;
      }
      set_setting(s, p, id, "contact_method", name);
      return;
    }

    case KHZ__V1__REQUEST__OP_SET_GAINS: {
      const Khz__V1__SetGains *g = rq->set_gains;
      if (g->n_kp != (size_t)s->na || g->n_kd != (size_t)s->na) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__WRONG_SIZE,
                    "set_gains: kp has %zu and kd %zu values, the model has %d actuators", g->n_kp,
                    g->n_kd, s->na);
        return;
      }
      if (!check_finite(g->kp, g->n_kp, &bad) || !check_finite(g->kd, g->n_kd, &bad)) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__NOT_FINITE, "set_gains: a gain is NaN or inf");
        return;
      }
      for (size_t i = 0; i < g->n_kp; i++) {
        if (g->kp[i] < 0 || g->kd[i] < 0) {
          reply_error(s, p, id, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "set_gains: gains must be >= 0");
          return;
        }
      }
      if (!(q = pending_new(s, p, id, PEND_PLAIN)) || !(lr = loop_request(s, q, KHZ_REQ_GAINS)))
        break;
      memcpy(lr->data, g->kp, (size_t)s->na * sizeof(double));
      memcpy(lr->data + s->na, g->kd, (size_t)s->na * sizeof(double));
      lr->ndata = 2 * s->na;
      khz_loop_requestCommit(s->loop);
      return;
    }

    case KHZ__V1__REQUEST__OP_SET_HAPTIC_GAINS: {
      const Khz__V1__SetHapticGains *g = rq->set_haptic_gains;
      if (g->proxy >= (uint32_t)s->nhaptic) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__UNKNOWN_NAME,
                    "set_haptic_gains: no haptic proxy %u (the scene declares %d)", g->proxy, s->nhaptic);
        return;
      }
      double v[4] = {g->stiffness, g->damping, g->rot_stiffness, g->rot_damping};
      if (!check_finite(v, 4, &bad)) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__NOT_FINITE, "set_haptic_gains: a gain is NaN or inf");
        return;
      }
      if (!(q = pending_new(s, p, id, PEND_PLAIN)) ||
          !(lr = loop_request(s, q, KHZ_REQ_HAPTIC_GAINS)))
        break;
      lr->ival = (int)g->proxy;
      memcpy(lr->data, v, sizeof v);
      lr->ndata = 4;
      khz_loop_requestCommit(s->loop);
      /* mirrored for Describe once applied: optimistic copy corrected on refusal is overkill;
         the loop refuses only on the passivity bound, checked here the same way */
      khzHapticProxy hp = s->haptic[g->proxy];
      hp.stiffness = v[0], hp.damping = v[1], hp.rot_stiffness = v[2], hp.rot_damping = v[3];
      double T;
      khz_loop_rate(s->loop, &T);
      if ((hp.stiffness == 0 ? hp.damping >= 0 : hp.damping > hp.stiffness * T / 2) &&
          (hp.rot_stiffness == 0 ? hp.rot_damping >= 0 : hp.rot_damping > hp.rot_stiffness * T / 2))
        s->haptic[g->proxy] = hp;
      return;
    }

    case KHZ__V1__REQUEST__OP_APPLY_WRENCH: {
      const Khz__V1__ApplyWrench *w = rq->apply_wrench;
      int b = resolve_body(s, p, id, w->body);
      if (b < 0) return;
      if ((w->n_force && w->n_force != 3) || (w->n_torque && w->n_torque != 3)) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__WRONG_SIZE,
                    "apply_wrench: force and torque need 3 values each (or none)");
        return;
      }
      if (!check_finite(w->force, w->n_force, &bad) || !check_finite(w->torque, w->n_torque, &bad) ||
          !isfinite(w->duration)) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__NOT_FINITE, "apply_wrench: a value is NaN or inf");
        return;
      }
      if (!(w->duration > 0)) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "apply_wrench: duration must be > 0 s");
        return;
      }
      if (!(q = pending_new(s, p, id, PEND_PLAIN)) || !(lr = loop_request(s, q, KHZ_REQ_WRENCH)))
        break;
      lr->ival = b;
      for (int k = 0; k < 3; k++) {
        lr->data[k] = w->n_force ? w->force[k] : 0;
        lr->data[3 + k] = w->n_torque ? w->torque[k] : 0;
      }
      lr->ndata = 6;
      lr->dval = w->duration;
      khz_loop_requestCommit(s->loop);
      return;
    }

    case KHZ__V1__REQUEST__OP_CLEAR_WRENCHES:
    case KHZ__V1__REQUEST__OP_RESET_STATS:
      if (!(q = pending_new(s, p, id, PEND_PLAIN)) ||
          !loop_request(s, q, rq->op_case == KHZ__V1__REQUEST__OP_CLEAR_WRENCHES
                                  ? KHZ_REQ_CLEAR_WRENCHES
                                  : KHZ_REQ_RESET_STATS))
        break;
      khz_loop_requestCommit(s->loop);
      return;

    case KHZ__V1__REQUEST__OP_GET_STATS:
      if (!(q = pending_new(s, p, id, PEND_STATS)) || !loop_request(s, q, KHZ_REQ_HASH)) break;
      khz_loop_requestCommit(s->loop);
      return;

    case KHZ__V1__REQUEST__OP_GET_SETTING: {
      const char *name = rq->get_setting->name;
      if (!name[0]) {
        reply_settings(s, p, id, NULL);
        return;
      }
      const khzSetting *st = khz_setting_find(name);
      if (!st) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__UNKNOWN_NAME, "unknown setting '%s'", name);
        return;
      }
      reply_settings(s, p, id, st);
      return;
    }

    case KHZ__V1__REQUEST__OP_SET_SETTING:
      set_setting(s, p, id, rq->set_setting->name, rq->set_setting->value);
      return;

    case KHZ__V1__REQUEST__OP_START_RECORDING: {
      if (s->rec) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__REFUSED, "already recording into %s", s->rec_path);
        return;
      }
      FILE *f = rq->start_recording->path[0] ? fopen(rq->start_recording->path, "wb") : NULL;
      if (!f) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__REFUSED, "start_recording: cannot open '%s': %s",
                    rq->start_recording->path, rq->start_recording->path[0] ? strerror(errno) : "no path");
        return;
      }
      s->rec = f;
      snprintf(s->rec_path, sizeof s->rec_path, "%s", rq->start_recording->path);
      khz_log(KHZ_LOG_INFO, "recording states into %s", s->rec_path);
      reply_ok(s, p, id, s->latest_seq);
      return;
    }

    case KHZ__V1__REQUEST__OP_STOP_RECORDING:
      if (!s->rec) {
        reply_error(s, p, id, KHZ__V1__ERROR_CODE__REFUSED, "not recording");
        return;
      }
      fclose(s->rec);
      s->rec = NULL;
      khz_log(KHZ_LOG_INFO, "recording into %s stopped", s->rec_path);
      reply_ok(s, p, id, s->latest_seq);
      return;

    default:
      reply_error(s, p, id, KHZ__V1__ERROR_CODE__UNKNOWN_TYPE,
                  "unknown request type (field %d): this server speaks khz.v1", (int)rq->op_case);
      return;
  }
  /* a pending entry or a ring slot was not available */
  if (!q)
    reply_error(s, p, id, KHZ__V1__ERROR_CODE__BUSY, "too many requests in flight: retry");
  else
    busy(s, q);
}

/* one ROUTER message: identity, [empty delimiter], payload */
static void handle_message(khzServer *s, const khzPeer *p, const uint8_t *data, size_t len) {
  peer_client(s, p); /* every sender is counted as a client */
  Khz__V1__ClientMessage *msg = khz__v1__client_message__unpack(NULL, len, data);
  if (!msg) {
    send_error(s, p, KHZ__V1__ERROR_CODE__BAD_MESSAGE, 0, 0,
               "could not decode a khz.v1.ClientMessage from %zu bytes (truncated or not protobuf)",
               len);
    return;
  }
  switch (msg->body_case) {
    case KHZ__V1__CLIENT_MESSAGE__BODY_COMMAND:
      handle_command(s, p, msg->command);
      break;
    case KHZ__V1__CLIENT_MESSAGE__BODY_HAPTIC:
      handle_haptic(s, p, msg->haptic);
      break;
    case KHZ__V1__CLIENT_MESSAGE__BODY_REQUEST:
      handle_request(s, p, msg->request);
      break;
    default:
      send_error(s, p, KHZ__V1__ERROR_CODE__UNKNOWN_TYPE, 0, 0,
                 "unknown message type: a ClientMessage holds a command, a haptic input or a "
                 "request (khz.v1)");
      break;
  }
  khz__v1__client_message__free_unpacked(msg, NULL);
}

/* reads one multipart message from the ROUTER; returns 0 when none is left */
static int router_recv_one(khzServer *s) {
  khzPeer peer;
  zmq_msg_t part;
  int nparts = 0, more = 1, ok = 1;
  uint8_t *payload = NULL;
  size_t plen = 0;
  memset(&peer, 0, sizeof peer);
  while (more) {
    zmq_msg_init(&part);
    if (zmq_msg_recv(&part, s->router, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&part);
      free(payload);
      return nparts > 0; /* mid-message failure cannot happen: parts arrive together */
    }
    size_t n = zmq_msg_size(&part);
    const uint8_t *d = zmq_msg_data(&part);
    if (nparts == 0) {
      peer.idlen = n < KHZ_PEER_ID_MAX ? n : KHZ_PEER_ID_MAX;
      memcpy(peer.id, d, peer.idlen);
    } else if (nparts == 1 && n == 0 && zmq_msg_more(&part)) {
      peer.delim = 1;
    } else if (!payload && ok) {
      payload = malloc(n ? n : 1);
      if (payload) memcpy(payload, d, n);
      plen = n;
    } else {
      ok = 0; /* extra frames */
    }
    more = zmq_msg_more(&part);
    zmq_msg_close(&part);
    nparts++;
  }
  if (!ok)
    send_error(s, &peer, KHZ__V1__ERROR_CODE__BAD_MESSAGE, 0, 0,
               "a message is one frame (REQ sockets: with the empty delimiter)");
  else if (payload)
    handle_message(s, &peer, payload, plen);
  free(payload);
  return 1;
}

static int has_input(void *sock) {
  uint32_t ev = 0;
  size_t sz = sizeof ev;
  if (zmq_getsockopt(sock, ZMQ_EVENTS, &ev, &sz)) return 0;
  return (ev & ZMQ_POLLIN) != 0;
}

/* ZMQ_FD is edge-triggered: read until ZMQ_EVENTS says no input is left, in
 * batches so that a flood cannot hold off the state stream */
static void router_drain(khzServer *s) {
  for (int n = 0; n < KHZ_DRAIN_BATCH; n++) {
    if (!has_input(s->router) || !router_recv_one(s)) return;
  }
  if (has_input(s->router)) ev_feed_event(s->ev, &s->router_io, EV_READ);
}

static void router_cb(struct ev_loop *ev, ev_io *w, int revents) {
  (void)ev, (void)revents;
  router_drain(w->data);
}

/* ------------------------------------------------------- loop replies -- */

static khzPending *pending_find(khzServer *s, uint64_t loop_id) {
  for (int i = 0; i < KHZ_MAX_PENDING; i++)
    if (s->pending[i].used && s->pending[i].loop_id == loop_id) return &s->pending[i];
  return NULL;
}

static void send_stats(khzServer *s, khzPending *q, const khzReply *r);

static void handle_loop_reply(khzServer *s, const khzReply *r) {
  /* a command dropped by the loop after a reset */
  if (r->type == KHZ_REPLY_STALE_COMMAND) {
    if (r->client >= 1 && r->client <= (uint32_t)s->npeers)
      send_error(s, &s->peers[r->client - 1], KHZ__V1__ERROR_CODE__STALE, r->cmd_seq, 0, "%s",
                 r->message);
    return;
  }
  khzPending *q = pending_find(s, r->id);
  if (!q) return;
  if (r->status != KHZ_REPLY_DONE && !q->failed) {
    q->failed = r->status == KHZ_REPLY_REFUSED ? KHZ__V1__ERROR_CODE__REFUSED
                                               : KHZ__V1__ERROR_CODE__OUT_OF_RANGE;
    snprintf(q->error, sizeof q->error, "%s", r->message);
  }
  if (--q->remaining > 0) return;

  /* all replies in: answer the client, commit the setting */
  if (q->failed) {
    reply_error(s, &q->peer, q->req_id, q->failed, "%s", q->error);
  } else {
    if (q->setting) {
      char err[256];
      khz_setting_parse(q->setting, q->value, &s->cfg, err, sizeof err);
      if (q->setting->apply == KHZ_APPLY_MODE) s->mode = s->cfg.mode;
    }
    if (q->kind == PEND_STATS)
      send_stats(s, q, r);
    else if (q->kind == PEND_SETTING)
      reply_settings(s, &q->peer, q->req_id, q->setting);
    else
      reply_ok(s, &q->peer, q->req_id, r->seq);
  }
  q->used = 0;
}

static void fill_hist(Khz__V1__Histogram *h, const khzLoopHist *l) {
  khz__v1__histogram__init(h);
  h->count = l->count;
  h->p50 = l->p50, h->p90 = l->p90, h->p99 = l->p99, h->p999 = l->p999;
  h->max = l->max, h->min = l->min, h->mean = l->mean;
}

static void send_stats(khzServer *s, khzPending *q, const khzReply *r) {
  khzLoopStats ls;
  khz_loop_stats(s->loop, &ls);
  Khz__V1__Stats st;
  Khz__V1__TickStats t;
  Khz__V1__Histogram hl, hc, hcl, hr;
  Khz__V1__RejectCount rc[KHZ_NCODES], *rcp[KHZ_NCODES];
  khz__v1__stats__init(&st);
  khz__v1__tick_stats__init(&t);
  t.lateness_ns = ls.tick.lateness_ns;
  t.compute_ns = ls.tick.compute_ns;
  t.ticks = ls.tick.ticks;
  t.overruns = ls.tick.overruns;
  t.missed = ls.tick.missed;
  t.commands = ls.tick.commands;
  t.on_time = ls.tick.on_time;
  t.late = ls.tick.late;
  t.superseded = ls.tick.superseded;
  t.states_dropped = ls.tick.states_dropped;
  t.watchdog_engaged = ls.tick.watchdog_engaged;
  t.lockstep_timeouts = ls.tick.lockstep_timeouts;
  t.rejected = s->rejected;
  st.tick = &t;
  fill_hist(&hl, &ls.lateness);
  fill_hist(&hc, &ls.compute);
  fill_hist(&hcl, &ls.latency);
  st.lateness = &hl;
  st.compute = &hc;
  st.command_latency = &hcl;
  fill_hist(&hr, &ls.response);
  st.command_response = &hr;
  st.seq = r->seq;
  st.state_hash = r->hash;
  st.mode = (Khz__V1__Mode)ls.mode;
  st.paused = ls.paused != 0;
  st.rate_hz = ls.rate_hz;
  st.requests = ls.requests;
  st.states_published = s->published;
  st.rejected = s->rejected;
  size_t n = 0;
  for (int c = 0; c < KHZ_NCODES; c++) {
    if (!s->by_code[c]) continue;
    khz__v1__reject_count__init(&rc[n]);
    rc[n].code = (Khz__V1__ErrorCode)c;
    rc[n].count = s->by_code[c];
    rcp[n] = &rc[n];
    n++;
  }
  st.n_rejected_by_code = n;
  st.rejected_by_code = rcp;
  st.clients = (uint32_t)s->peers_seen;
  st.rt_report = (char *)khz_loop_report(s->loop);
  Khz__V1__Reply rep;
  khz__v1__reply__init(&rep);
  rep.id = q->req_id;
  rep.state_seq = r->seq;
  rep.result_case = KHZ__V1__REPLY__RESULT_STATS;
  rep.stats = &st;
  send_reply(s, &q->peer, &rep);
}

/* ------------------------------------------------------ state stream -- */

static void record_state(khzServer *s, const uint8_t *buf, size_t len) {
  uint8_t hdr[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16), (uint8_t)(len >> 24)};
  if (fwrite(hdr, 1, 4, s->rec) != 4 || fwrite(buf, 1, len, s->rec) != len) {
    khz_log(KHZ_LOG_ERROR, "recording into %s failed (%s): stopped", s->rec_path, strerror(errno));
    fclose(s->rec);
    s->rec = NULL;
  }
}

static void publish_bytes(khzServer *s, const uint8_t *buf, size_t len) {
  zmq_send(s->pub, "state", 5, ZMQ_SNDMORE | ZMQ_DONTWAIT);
  zmq_send(s->pub, buf, len, ZMQ_DONTWAIT);
}

/* log lines for what the states say changed (once per event, warnings at most 1/s) */
static void log_transitions(khzServer *s, const khzLoopState *st) {
  double now = ev_now(s->ev);
  int wd = (st->flags & KHZ_FLAG_WATCHDOG) && !(st->flags & KHZ_FLAG_NO_COMMAND);
  if (st->stats.watchdog_engaged > s->seen_watchdog && !s->watchdog_logged) {
    khz_log(KHZ_LOG_WARN,
            "watchdog: no command for more than %g ms at state %llu: applying the safe command (%s)",
            s->cfg.watchdog_ms, (unsigned long long)st->seq,
            s->cfg.safe_command == KHZ_SAFE_DAMPING ? "joint damping" : "zero torque");
    s->watchdog_logged = 1;
  } else if (s->watchdog_logged && !wd && !(st->flags & KHZ_FLAG_WATCHDOG)) {
    khz_log(KHZ_LOG_INFO, "watchdog: commands are back at state %llu", (unsigned long long)st->seq);
    s->watchdog_logged = 0;
  }
  s->seen_watchdog = st->stats.watchdog_engaged;
  if (st->flags & KHZ_FLAG_RESET) s->watchdog_logged = 0;
  if (now - s->last_warn_log < 1.0) return;
  if (st->stats.lockstep_timeouts > s->seen_timeouts) {
    khz_log(KHZ_LOG_WARN,
            "lockstep: no command answered state %llu within %g ms: the safe command was applied "
            "(%llu timeouts so far)",
            (unsigned long long)(st->seq - 1), s->cfg.lockstep_timeout_ms,
            (unsigned long long)st->stats.lockstep_timeouts);
    s->seen_timeouts = st->stats.lockstep_timeouts;
    s->last_warn_log = now;
  } else if (st->stats.missed > s->seen_overruns) {
    khz_log(KHZ_LOG_WARN, "overruns: %llu ticks ended late, %llu periods skipped so far",
            (unsigned long long)st->stats.overruns, (unsigned long long)st->stats.missed);
    s->seen_overruns = st->stats.missed;
    s->last_warn_log = now;
  } else if (st->stats.states_dropped > s->seen_dropped && st->mode != KHZ_MODE_FAST) {
    khz_log(KHZ_LOG_WARN, "%llu states dropped: the I/O thread could not keep up",
            (unsigned long long)st->stats.states_dropped);
    s->seen_dropped = st->stats.states_dropped;
    s->last_warn_log = now;
  } else if (st->flags & KHZ_FLAG_BADSTATE) {
    khz_log(KHZ_LOG_WARN, "state %llu: the step produced NaN/inf and was rolled back",
            (unsigned long long)st->seq);
    s->last_warn_log = now;
  }
}

/* the loop's wake-up: publish every state, answer every reply */
static void wake_cb(struct ev_loop *ev, ev_async *w, int revents) {
  khzServer *s = w->data;
  (void)ev, (void)revents;
  const khzLoopState *st;
  while ((st = khz_loop_peekState(s->loop))) {
    uint8_t *buf;
    size_t len;
    if (khz_codec_packState(&s->codec, st, s->generation, s->rejected, &buf, &len) == 0) {
      publish_bytes(s, buf, len);
      s->published++;
      if (s->rec) record_state(s, buf, len);
      /* kept for the lockstep keep-alive (a mode switch may come at any time) */
      if (len > s->lastcap) {
        uint8_t *nb = realloc(s->last, len * 2);
        if (nb) s->last = nb, s->lastcap = len * 2;
      }
      if (len <= s->lastcap) memcpy(s->last, buf, len), s->lastlen = len;
      s->last_pub = ev_now(s->ev);
    }
    s->have_state = 1;
    s->latest_seq = st->seq;
    s->reset_seq = st->reset_seq;
    s->mode = st->mode;
    log_transitions(s, st);
    khz_loop_releaseState(s->loop);
  }
  khzReply r;
  while (khz_loop_pollReply(s->loop, &r)) handle_loop_reply(s, &r);
  router_drain(s);
}

/* lockstep keep-alive: a controller that joined late (PUB/SUB drops the first
 * messages of a new subscriber) still sees the state the loop waits on */
static void keepalive_cb(struct ev_loop *ev, ev_timer *w, int revents) {
  khzServer *s = w->data;
  (void)revents;
  if (s->mode != KHZ_MODE_LOCKSTEP || !s->lastlen || ev_now(ev) - s->last_pub < KHZ_KEEPALIVE_S)
    return;
  Khz__V1__State *st = khz__v1__state__unpack(NULL, s->lastlen, s->last);
  if (!st) return;
  if (st->seq == s->latest_seq) {
    st->flags |= KHZ__V1__STATE_FLAG__FLAG_REPEATED;
    size_t n = khz__v1__state__get_packed_size(st);
    uint8_t *buf = malloc(n);
    if (buf) {
      khz__v1__state__pack(st, buf);
      publish_bytes(s, buf, n);
      free(buf);
    }
  }
  khz__v1__state__free_unpacked(st, NULL);
  s->last_pub = ev_now(ev);
}

/* ---------------------------------------------------------- statistics -- */

/* the share of commands applied at the tick right after their state, % */
static double next_tick_share(const khzLoopStats *ls) {
  uint64_t all = ls->tick.commands + ls->tick.superseded;
  return all ? 100.0 * (double)ls->tick.on_time / (double)all : 0;
}

static void stats_line(khzServer *s) {
  khzLoopStats ls;
  khz_loop_stats(s->loop, &ls);
  double on = next_tick_share(&ls);
  khz_log(KHZ_LOG_INFO,
          "seq %llu %s%s: lateness p50 %.1f p99 %.1f max %.1f us, compute p50 %.1f us, overruns %llu "
          "(missed %llu), commands %llu (%.2f%% next tick), latency p99 %.1f us, rejected %llu",
          (unsigned long long)ls.seq, khz_loop_modeName(ls.mode), ls.paused ? " paused" : "",
          ls.lateness.p50 / 1e3, ls.lateness.p99 / 1e3, ls.lateness.max / 1e3, ls.compute.p50 / 1e3,
          (unsigned long long)ls.tick.overruns, (unsigned long long)ls.tick.missed,
          (unsigned long long)ls.tick.commands, on, ls.latency.p99 / 1e3,
          (unsigned long long)s->rejected);
}

static void stats_timer_cb(struct ev_loop *ev, ev_timer *w, int revents) {
  (void)ev, (void)revents;
  stats_line(w->data);
}

void khz_server_printStats(khzServer *s, FILE *out) {
  khzLoopStats ls;
  khz_loop_stats(s->loop, &ls);
  double on = next_tick_share(&ls);
  fprintf(out,
          "khz-server: final statistics\n"
          "  ticks              %llu (last state %llu, %s, %.0f Hz)\n"
          "  lateness           p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us (%llu realtime ticks)\n"
          "  compute            p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us\n"
          "  overruns           %llu (missed periods %llu)\n"
          "  commands           %llu taken, %.3f%% applied at the next tick, %llu late, %llu superseded\n"
          "  command latency    p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us (state -> applying tick)\n"
          "  command response   p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us (state -> command in)\n"
          "  watchdog           engaged %llu times; lockstep timeouts %llu\n"
          "  states             %llu published, %llu dropped\n"
          "  rejected messages  %llu\n",
          (unsigned long long)ls.tick.ticks, (unsigned long long)ls.seq, khz_loop_modeName(ls.mode),
          ls.rate_hz, ls.lateness.p50 / 1e3, ls.lateness.p99 / 1e3, ls.lateness.p999 / 1e3,
          ls.lateness.max / 1e3, (unsigned long long)ls.lateness.count, ls.compute.p50 / 1e3,
          ls.compute.p99 / 1e3, ls.compute.p999 / 1e3, ls.compute.max / 1e3,
          (unsigned long long)ls.tick.overruns, (unsigned long long)ls.tick.missed,
          (unsigned long long)ls.tick.commands, on, (unsigned long long)ls.tick.late,
          (unsigned long long)ls.tick.superseded, ls.latency.p50 / 1e3, ls.latency.p99 / 1e3,
          ls.latency.p999 / 1e3, ls.latency.max / 1e3, ls.response.p50 / 1e3, ls.response.p99 / 1e3,
          ls.response.p999 / 1e3, ls.response.max / 1e3, (unsigned long long)ls.tick.watchdog_engaged,
          (unsigned long long)ls.tick.lockstep_timeouts, (unsigned long long)s->published,
          (unsigned long long)ls.tick.states_dropped, (unsigned long long)s->rejected);
}

/* ----------------------------------------------------------------- CURVE -- */

/* a key: 40 Z85 characters, or a file whose first word is one */
static int read_key(const char *value, char out[41], char *err, size_t errsz, const char *what) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", value);
  if (strlen(buf) != 40) {
    FILE *f = fopen(value, "r");
    if (!f) return fail(err, errsz, "%s: '%s' is neither a 40-character Z85 key nor a readable file", what, value);
    int ok = fscanf(f, "%255s", buf) == 1;
    fclose(f);
    if (!ok || strlen(buf) != 40)
      return fail(err, errsz, "%s: %s does not start with a 40-character Z85 key", what, value);
  }
  uint8_t bin[32];
  if (!zmq_z85_decode(bin, buf)) return fail(err, errsz, "%s: '%.40s' is not valid Z85", what, buf);
  memcpy(out, buf, 41);
  return 0;
}

static int add_client_key(khzServer *s, const char *z85, char *err, size_t errsz) {
  if (s->nclient_keys == KHZ_MAX_CLIENT_KEYS)
    return fail(err, errsz, "curve_clients: more than %d keys", KHZ_MAX_CLIENT_KEYS);
  if (strlen(z85) != 40 || !zmq_z85_decode(s->client_key[s->nclient_keys], z85))
    return fail(err, errsz, "curve_clients: '%s' is not a 40-character Z85 public key", z85);
  s->nclient_keys++;
  return 0;
}

/* allowed client keys: a file (one per line, # comments) or a comma-separated list */
static int load_client_keys(khzServer *s, const char *value, char *err, size_t errsz) {
  FILE *f = fopen(value, "r");
  char word[256];
  if (f) {
    char line[512];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
      if (sscanf(line, "%255s", word) != 1 || word[0] == '#') continue;
      rc = add_client_key(s, word, err, errsz);
    }
    fclose(f);
    if (rc) return -1;
  } else {
    const char *p = value;
    while (*p) {
      size_t n = strcspn(p, ", ");
      if (n > 0) {
        snprintf(word, sizeof word, "%.*s", (int)n, p);
        if (add_client_key(s, word, err, errsz)) return -1;
      }
      p += n;
      while (*p == ',' || *p == ' ') p++;
    }
  }
  if (s->nclient_keys == 0) return fail(err, errsz, "curve_clients: no client keys in '%s'", value);
  return 0;
}

/* the ZAP handler: a CURVE client is let in when its public key is listed */
static void zap_drain(khzServer *s) {
  while (has_input(s->zap)) {
    char frames[8][256];
    size_t lens[8];
    int n = 0, more = 1;
    while (more) {
      zmq_msg_t m;
      zmq_msg_init(&m);
      if (zmq_msg_recv(&m, s->zap, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&m);
        return;
      }
      if (n < 8) {
        lens[n] = zmq_msg_size(&m) < 256 ? zmq_msg_size(&m) : 256;
        memcpy(frames[n], zmq_msg_data(&m), lens[n]);
        n++;
      }
      more = zmq_msg_more(&m);
      zmq_msg_close(&m);
    }
    /* version, request id, domain, address, identity, mechanism, client key */
    int ok = 0;
    if (n >= 7 && lens[5] == 5 && !memcmp(frames[5], "CURVE", 5) && lens[6] == 32) {
      for (int k = 0; k < s->nclient_keys && !ok; k++) ok = !memcmp(s->client_key[k], frames[6], 32);
    }
    if (!ok) khz_log(KHZ_LOG_WARN, "CURVE: refused a client whose key is not in curve_clients");
    zmq_send(s->zap, "1.0", 3, ZMQ_SNDMORE);
    zmq_send(s->zap, frames[1], n > 1 ? lens[1] : 0, ZMQ_SNDMORE);
    zmq_send(s->zap, ok ? "200" : "400", 3, ZMQ_SNDMORE);
    zmq_send(s->zap, ok ? "OK" : "client key not allowed", ok ? 2 : 22, ZMQ_SNDMORE);
    zmq_send(s->zap, "", 0, ZMQ_SNDMORE);
    zmq_send(s->zap, "", 0, 0);
  }
}

static void zap_cb(struct ev_loop *ev, ev_io *w, int revents) {
  (void)ev, (void)revents;
  zap_drain(w->data);
}

/* ------------------------------------------------------------ lifecycle -- */

static void loop_wake(void *user) {
  khzServer *s = user;
  ev_async_send(s->ev, &s->wake_async);
}

static void stop_cb(struct ev_loop *ev, ev_async *w, int revents) {
  (void)w, (void)revents;
  ev_break(ev, EVBREAK_ALL);
}

static void signal_cb(struct ev_loop *ev, ev_signal *w, int revents) {
  (void)revents;
  khz_log(KHZ_LOG_INFO, "%s: stopping", w->signum == SIGINT ? "SIGINT" : "SIGTERM");
  ev_break(ev, EVBREAK_ALL);
}

static void duration_cb(struct ev_loop *ev, ev_timer *w, int revents) {
  khzServer *s = w->data;
  (void)revents;
  khz_log(KHZ_LOG_INFO, "duration of %g s reached: stopping", s->cfg.duration_s);
  ev_break(ev, EVBREAK_ALL);
}

static void *make_socket(khzServer *s, int type, const char *ep, char *err, size_t errsz) {
  void *sock = zmq_socket(s->ctx, type);
  int zero = 0, hwm = s->cfg.pub_hwm, one = 1;
  if (!sock) {
    fail(err, errsz, "cannot create a socket: %s", zmq_strerror(zmq_errno()));
    return NULL;
  }
  zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof zero);
  if (type == ZMQ_PUB) zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
  if (s->curve) {
    zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one);
    zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, s->secret, 40);
    zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, "khz", 3);
  }
  if (zmq_bind(sock, ep) != 0) {
    fail(err, errsz, "cannot bind %s: %s", ep, zmq_strerror(zmq_errno()));
    zmq_close(sock);
    return NULL;
  }
  return sock;
}

static int fd_of(void *sock) {
  int fd = -1;
  size_t sz = sizeof fd;
  zmq_getsockopt(sock, ZMQ_FD, &fd, &sz);
  return fd;
}

/* the scene's haptic proxies (by body name) into loop proxies */
static int scene_haptics(khzServer *s, char *err, size_t errsz) {
  s->nhaptic = s->scene.nhaptic;
  for (int i = 0; i < s->nhaptic; i++) {
    const khzHapticSettings *h = &s->scene.haptic[i];
    int b = khz_name2body(s->m, h->body);
    if (b < 1) return fail(err, errsz, "haptic proxy %d: no body named '%s'", i, h->body);
    s->haptic[i].body = b;
    s->haptic[i].stiffness = h->stiffness;
    s->haptic[i].damping = h->damping;
    s->haptic[i].rot_stiffness = h->rot_stiffness;
    s->haptic[i].rot_damping = h->rot_damping;
  }
  return 0;
}

static int server_init(khzServer *s, char *err, size_t errsz) {
  char msg[1024];
  const khzServerConfig *c = &s->cfg;
  khz_log_level = c->log_level;

  /* security first: a non-loopback bind needs CURVE keys and a client list */
  int local = khz_endpoint_is_local(c->state_endpoint) && khz_endpoint_is_local(c->command_endpoint);
  if (c->curve_secret_key[0] || c->curve_clients[0]) {
    if (!c->curve_secret_key[0] || !c->curve_clients[0])
      return fail(err, errsz, "CURVE needs both curve_secret_key and curve_clients");
    if (!zmq_has("curve")) return fail(err, errsz, "this libzmq was built without CURVE support");
    if (read_key(c->curve_secret_key, s->secret, err, errsz, "curve_secret_key")) return -1;
    if (zmq_curve_public(s->public_key, s->secret) != 0)
      return fail(err, errsz, "curve_secret_key: cannot derive the public key");
    if (load_client_keys(s, c->curve_clients, err, errsz)) return -1;
    s->curve = 1;
  } else if (!local) {
    return fail(err, errsz,
                "refusing to bind %s without CURVE: binding anything but loopback or ipc:// "
                "needs curve_secret_key and curve_clients (khz-server --curve-keygen makes keys; "
                "see docs/server.md, Security)",
                khz_endpoint_is_local(c->state_endpoint) ? c->command_endpoint : c->state_endpoint);
  }

  /* the model and the scene's extras */
  s->m = khz_loadModel(c->scene, &s->scene, msg, sizeof msg);
  if (!s->m) return fail(err, errsz, "%s", msg);
  s->have_scene = 1;
  s->scene_method = s->m->contact.method;
  if (c->contact_method[0] && khz_contactMethodFromName(c->contact_method) < 0)
    return fail(err, errsz, "setting 'contact_method': unknown method '%s'", c->contact_method);
  if (scene_haptics(s, err, errsz)) return -1;
  s->mode = c->mode;
  s->na = khz_loop_actuators(s->m, NULL);
  s->act_dof = calloc((size_t)s->na + 1, sizeof(int));
  if (!s->act_dof || khz_codec_init(&s->codec, s->m->nbody)) return fail(err, errsz, "out of memory");
  khz_loop_actuators(s->m, s->act_dof);

  /* a generation that differs from run to run */
  s->generation = (uint32_t)((uint64_t)khz_loop_now() ^ ((uint64_t)getpid() << 16)) | 1u;

  /* sockets: the ZAP handler before anything that authenticates */
  s->ctx = zmq_ctx_new();
  if (!s->ctx) return fail(err, errsz, "cannot create a ZeroMQ context");

  /* the I/O side at SCHED_FIFO io_priority when permitted: probed on this thread
   * first, because libzmq aborts when it cannot set its own threads' policy */
  if (c->io_priority > 0) {
    int policy;
    struct sched_param old, sp = {.sched_priority = c->io_priority};
    pthread_getschedparam(pthread_self(), &policy, &old);
    int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    if (rc == 0) {
      pthread_setschedparam(pthread_self(), policy, &old);
      zmq_ctx_set(s->ctx, ZMQ_THREAD_SCHED_POLICY, SCHED_FIFO);
      zmq_ctx_set(s->ctx, ZMQ_THREAD_PRIORITY, c->io_priority);
      s->io_fifo = 1;
      snprintf(s->io_report, sizeof s->io_report, "SCHED_FIFO %d granted", c->io_priority);
    } else {
      snprintf(s->io_report, sizeof s->io_report, "SCHED_FIFO %d NOT granted (%s)", c->io_priority,
               strerror(rc));
    }
  } else {
    snprintf(s->io_report, sizeof s->io_report, "SCHED_FIFO not requested");
  }
  if (s->curve) {
    s->zap = zmq_socket(s->ctx, ZMQ_REP);
    if (!s->zap || zmq_bind(s->zap, "inproc://zeromq.zap.01"))
      return fail(err, errsz, "cannot start the CURVE authentication handler");
  }
  if (!(s->pub = make_socket(s, ZMQ_PUB, c->state_endpoint, err, errsz))) return -1;
  if (!(s->router = make_socket(s, ZMQ_ROUTER, c->command_endpoint, err, errsz))) return -1;

  /* the event loop and its watchers */
  s->ev = s->hooks.install_signals ? ev_default_loop(EVFLAG_AUTO) : ev_loop_new(EVFLAG_AUTO);
  if (!s->ev) return fail(err, errsz, "cannot create the event loop");
  ev_io_init(&s->router_io, router_cb, fd_of(s->router), EV_READ);
  s->router_io.data = s;
  ev_io_start(s->ev, &s->router_io);
  if (s->zap) {
    ev_io_init(&s->zap_io, zap_cb, fd_of(s->zap), EV_READ);
    s->zap_io.data = s;
    ev_io_start(s->ev, &s->zap_io);
  }
  ev_async_init(&s->wake_async, wake_cb);
  s->wake_async.data = s;
  ev_async_start(s->ev, &s->wake_async);
  ev_async_init(&s->stop_async, stop_cb);
  ev_async_start(s->ev, &s->stop_async);
  if (s->hooks.install_signals) {
    ev_signal_init(&s->sigint_w, signal_cb, SIGINT);
    ev_signal_init(&s->sigterm_w, signal_cb, SIGTERM);
    ev_signal_start(s->ev, &s->sigint_w);
    ev_signal_start(s->ev, &s->sigterm_w);
  }
  ev_timer_init(&s->keepalive_timer, keepalive_cb, KHZ_KEEPALIVE_S, KHZ_KEEPALIVE_S);
  s->keepalive_timer.data = s;
  ev_timer_start(s->ev, &s->keepalive_timer);
  ev_timer_init(&s->stats_timer, stats_timer_cb, c->stats_interval_s, c->stats_interval_s);
  s->stats_timer.data = s;
  if (c->stats_interval_s > 0) ev_timer_start(s->ev, &s->stats_timer);
  ev_timer_init(&s->duration_timer, duration_cb, c->duration_s, 0);
  s->duration_timer.data = s;

  /* recording from the start */
  if (c->record[0]) {
    s->rec = fopen(c->record, "wb");
    if (!s->rec) return fail(err, errsz, "record: cannot open '%s': %s", c->record, strerror(errno));
    snprintf(s->rec_path, sizeof s->rec_path, "%s", c->record);
  }

  /* the loop thread */
  khzLoopConfig lc;
  khz_loop_defaultConfig(&lc);
  lc.rate_hz = requested_rate(s, c);
  lc.mode = c->mode;
  lc.start_paused = c->paused;
  lc.rt_priority = c->rt_priority;
  lc.cpu = c->cpu;
  lc.lock_memory = c->lock_memory;
  lc.dma_latency_us = c->cpu_dma_latency_us;
  lc.watchdog_s = c->watchdog_ms / 1000;
  lc.safe = c->safe_command;
  lc.safe_damping = c->safe_damping;
  lc.lockstep_timeout_s = c->lockstep_timeout_ms / 1000;
  lc.haptic_timeout_s = c->haptic_timeout_ms / 1000;
  lc.publish_contacts = c->publish_contacts;
  lc.publish_hash = c->publish_hash;
  lc.state_ring = c->state_ring;
  lc.nhaptic = s->nhaptic;
  memcpy(lc.haptic, s->haptic, sizeof lc.haptic);
  double *gains = calloc(2 * (size_t)s->na + 1, sizeof(double));
  if (!gains) return fail(err, errsz, "out of memory");
  for (int i = 0; i < s->na; i++) gains[i] = c->kp, gains[s->na + i] = c->kd;
  lc.kp = gains;
  lc.kd = gains + s->na;
  lc.wake = loop_wake;
  lc.wake_user = s;
  lc.thread_init = s->hooks.rt_thread_init;
  lc.thread_init_user = s->hooks.rt_thread_init_user;
  s->loop = khz_loop_new(s->m, &lc, msg, sizeof msg);
  free(gains);
  if (!s->loop) return fail(err, errsz, "%s", msg);

  /* the run-time contact method, when it differs from the scene's */
  if (c->contact_method[0]) {
    khzRequest *rq = khz_loop_requestBegin(s->loop);
    if (rq) {
      rq->type = KHZ_REQ_CONTACT;
      rq->ival = khz_contactMethodFromName(c->contact_method);
      khz_loop_requestCommit(s->loop);
    }
  }
  return 0;
}

khzServer *khz_server_new(const khzServerConfig *cfg, const khzServerHooks *hooks, char *err,
                          size_t errsz) {
  khzServer *s = calloc(1, sizeof *s);
  if (!s) {
    fail(err, errsz, "out of memory");
    return NULL;
  }
  s->cfg = *cfg;
  if (hooks) s->hooks = *hooks;
  if (server_init(s, err, errsz)) {
    khz_server_destroy(&s);
    return NULL;
  }
  return s;
}

int khz_server_run(khzServer *s) {
  if (s->io_fifo) {
    struct sched_param sp = {.sched_priority = s->cfg.io_priority};
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
  }
  khz_log(KHZ_LOG_INFO, "%s", khz_loop_report(s->loop));
  khz_log(KHZ_LOG_INFO, "I/O thread and libzmq threads: %s", s->io_report);
  khz_log(KHZ_LOG_INFO,
          "scene '%s': %d bodies, nq %d, nv %d, %d actuators, %d haptic proxies; %s at %g Hz; "
          "model generation %u",
          s->scene.name, s->m->nbody, s->m->nq, s->m->nv, s->na, s->nhaptic,
          khz_loop_modeName(s->cfg.mode), khz_loop_rate(s->loop, NULL), s->generation);
  khz_log(KHZ_LOG_INFO, "states on %s, commands and requests on %s%s%s", s->cfg.state_endpoint,
          s->cfg.command_endpoint, s->curve ? "; CURVE on, server public key " : "",
          s->curve ? s->public_key : "");
  if (s->cfg.duration_s > 0) ev_timer_start(s->ev, &s->duration_timer);
  s->started = 1;
  ev_run(s->ev, 0);
  return 0;
}

void khz_server_stop(khzServer *s) { ev_async_send(s->ev, &s->stop_async); }

void khz_server_destroy(khzServer **s_p) {
  if (!s_p || !*s_p) return;
  khzServer *s = *s_p;
  khz_loop_destroy(&s->loop);
  if (s->rec) fclose(s->rec);
  if (s->pub) zmq_close(s->pub);
  if (s->router) zmq_close(s->router);
  if (s->zap) zmq_close(s->zap);
  if (s->ctx) zmq_ctx_term(s->ctx);
  if (s->ev) {
    if (s->hooks.install_signals)
      ev_loop_destroy(s->ev);
    else
      ev_loop_destroy(s->ev);
  }
  khz_codec_free(&s->codec);
  free(s->last);
  free(s->act_dof);
  khz_deleteModel(&s->m);
  if (s->have_scene) khz_deleteScene(&s->scene);
  free(s);
  *s_p = NULL;
}

const char *khz_server_report(const khzServer *s) { return khz_loop_report(s->loop); }

uint32_t khz_server_generation(const khzServer *s) { return s->generation; }
