/* client.c — the khz client library (khz/client.h): ZeroMQ sockets towards a
 * khz-server, protobuf-c decoding into preallocated arenas, model lookup,
 * commands, haptic inputs and control requests. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zmq.h>

#include "khz/client.h"

#define KHZ_CLIENT_ERRORS 32
#define KHZ_CLIENT_ERRMSG 256
#define KHZ_CLIENT_EP 256
#define KHZ_CLIENT_SENDBUF (64 * 1024)
#define KHZ_CLIENT_ARENA (64 * 1024)
#define KHZ_CLIENT_DEFAULT_TIMEOUT_MS 2000
/* commands are sent from a ring of constant buffers (zmq_msg_init_data with
   no free function: libzmq allocates nothing). libzmq holds at most SNDHWM
   messages in the pipe plus one in its encoder, so a slot is rewritten only
   after twice that many later sends: it is no longer referenced */
#define KHZ_CLIENT_SNDHWM 128
#define KHZ_CLIENT_SLOTS (2 * KHZ_CLIENT_SNDHWM)
#define KHZ_CLIENT_SLOT 2048

/* ---------------------------------------------------------------- arena -- */

/* a bump allocator handed to protobuf-c: reset before each decode, never
 * freed piecewise; a decode that does not fit fails, the arena grows and the
 * decode is retried */
typedef struct khzArena {
  ProtobufCAllocator alloc;
  uint8_t *buf;
  size_t cap, used;
  int full;
} khzArena;

static void *arena_alloc(void *data, size_t n) {
  khzArena *a = data;
  size_t at = (a->used + 15) & ~(size_t)15;
  if (n > a->cap || at > a->cap - n) {
    a->full = 1;
    return NULL;
  }
  a->used = at + n;
  return a->buf + at;
}

static void arena_free(void *data, void *p) { (void)data, (void)p; }

static int arena_init(khzArena *a, size_t cap) {
  memset(a, 0, sizeof *a);
  a->alloc.alloc = arena_alloc;
  a->alloc.free = arena_free;
  a->alloc.allocator_data = a;
  a->buf = malloc(cap);
  a->cap = a->buf ? cap : 0;
  return a->buf ? 0 : -1;
}

static void arena_release(khzArena *a) {
  free(a->buf);
  a->buf = NULL;
  a->cap = 0;
}

/* ---------------------------------------------------------------- client -- */

typedef struct khzErrorSlot {
  Khz__V1__Error e;
  char message[KHZ_CLIENT_ERRMSG];
} khzErrorSlot;

struct khzClient {
  void *ctx, *sub, *dealer;
  char state_ep[KHZ_CLIENT_EP], cmd_ep[KHZ_CLIENT_EP];
  khzClientOptions opt;

  /* decoding: two state arenas (the returned state stays valid while the next
     one is decoded), two for server messages (current reply, scratch), two
     for model descriptions (current, previous) */
  khzArena arenas[6];
  khzArena *st_cur, *st_next, *srv_cur, *srv_next, *md_cur, *md_prev;
  const Khz__V1__State *state;
  const Khz__V1__Reply *reply;
  const Khz__V1__ModelDescription *model;
  int model_changed, resyncing;
  uint32_t resync_tried; /* the generation a re-fetch was last tried for (once each) */
  uint64_t last_seq;
  int have_seq;
  uint64_t skipped_since; /* received but not decoded since the last state taken */
  zmq_msg_t rx;           /* the newest received state body */
  int rx_full;

  /* sending */
  uint8_t *sendbuf;
  size_t sendcap;
  uint8_t *ring; /* KHZ_CLIENT_SLOTS command buffers of KHZ_CLIENT_SLOT bytes */
  unsigned ring_next;
  uint64_t next_id, cmd_seq;
  int raw_pending; /* raw sends whose BAD_MESSAGE answers are expected */
  Khz__V1__Command cmd;
  Khz__V1__HapticInput hin;
  double zero4[4];

  /* server errors, copied out */
  khzErrorSlot errors[KHZ_CLIENT_ERRORS];
  int err_head, err_count;
  khzErrorSlot err_out;

  khzStateFn on_state;
  void *on_state_user;

  khzClientCounters counters;
  khzClientStatus status;
  char error[1024];
  char setting_value[KHZ_CLIENT_ERRMSG];
};

int64_t khz_client_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int fail(khzClient *c, khzClientStatus st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(khzClient *c, khzClientStatus st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->error, sizeof c->error, fmt, ap);
  va_end(ap);
  c->status = st;
  return -1;
}

static void ok(khzClient *c) {
  c->status = KHZ_CLIENT_OK;
  c->error[0] = 0;
}

const char *khz_client_error(const khzClient *c) { return c ? c->error : "no client"; }
khzClientStatus khz_client_status(const khzClient *c) { return c ? c->status : KHZ_CLIENT_SYSTEM; }
const char *khz_client_stateEndpoint(const khzClient *c) { return c->state_ep; }
const char *khz_client_commandEndpoint(const khzClient *c) { return c->cmd_ep; }
const khzClientCounters *khz_client_counters(const khzClient *c) { return &c->counters; }
const Khz__V1__State *khz_client_state(const khzClient *c) { return c->state; }
const Khz__V1__Reply *khz_client_lastReply(const khzClient *c) { return c->reply; }
const Khz__V1__ModelDescription *khz_client_model(const khzClient *c) { return c->model; }

static void curve(void *sock, const khzClientOptions *o) {
  if (!o->server_key) return;
  zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, o->server_key, 40);
  zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, o->public_key, 40);
  zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, o->secret_key, 40);
}

static const char *pick_endpoint(const char *given, const char *env, const char *def) {
  const char *e;
  if (given && given[0]) return given;
  if ((e = getenv(env)) && e[0]) return e;
  return def;
}

khzClient *khz_client_new(const char *state_endpoint, const char *command_endpoint,
                          const khzClientOptions *opt, char *err, size_t errsz) {
  char dummy[8];
  if (!err) err = dummy, errsz = sizeof dummy;
  khzClient *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, errsz, "out of memory");
    return NULL;
  }
  if (opt) c->opt = *opt;
  if (c->opt.timeout_ms <= 0) c->opt.timeout_ms = KHZ_CLIENT_DEFAULT_TIMEOUT_MS;
  size_t arena = c->opt.arena_bytes ? c->opt.arena_bytes : KHZ_CLIENT_ARENA;
  snprintf(c->state_ep, sizeof c->state_ep, "%s",
           pick_endpoint(state_endpoint, "KHZ_STATE_ENDPOINT", KHZ_CLIENT_STATE_ENDPOINT));
  snprintf(c->cmd_ep, sizeof c->cmd_ep, "%s",
           pick_endpoint(command_endpoint, "KHZ_COMMAND_ENDPOINT", KHZ_CLIENT_COMMAND_ENDPOINT));
  zmq_msg_init(&c->rx);

  /* buffers, all sized now */
  int bad = 0;
  for (int i = 0; i < 6; i++) bad |= arena_init(&c->arenas[i], arena);
  c->st_cur = &c->arenas[0], c->st_next = &c->arenas[1];
  c->srv_cur = &c->arenas[2], c->srv_next = &c->arenas[3];
  c->md_cur = &c->arenas[4], c->md_prev = &c->arenas[5];
  c->sendbuf = malloc(KHZ_CLIENT_SENDBUF);
  c->sendcap = c->sendbuf ? KHZ_CLIENT_SENDBUF : 0;
  c->ring = malloc((size_t)KHZ_CLIENT_SLOTS * KHZ_CLIENT_SLOT);
  khz__v1__command__init(&c->cmd);
  khz__v1__haptic_input__init(&c->hin);
  if (bad || !c->sendbuf || !c->ring) {
    snprintf(err, errsz, "out of memory");
    khz_client_destroy(&c);
    return NULL;
  }

  /* sockets: the state stream (SUB) and the command socket (DEALER; with
     ZMQ_IMMEDIATE nothing is queued while no server is connected, so that a
     command is never delivered late to a restarted server) */
  int zero = 0, one = 1, hwm = KHZ_CLIENT_SNDHWM;
  c->ctx = zmq_ctx_new();
  c->sub = c->ctx ? zmq_socket(c->ctx, ZMQ_SUB) : NULL;
  c->dealer = c->ctx ? zmq_socket(c->ctx, ZMQ_DEALER) : NULL;
  if (!c->sub || !c->dealer) {
    snprintf(err, errsz, "cannot make ZeroMQ sockets: %s", zmq_strerror(zmq_errno()));
    khz_client_destroy(&c);
    return NULL;
  }
  zmq_setsockopt(c->sub, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(c->dealer, ZMQ_LINGER, &zero, sizeof zero);
  /* what a server (or anything at the endpoint) may send us: states and
   * replies are kilobytes; 64 MiB is far beyond any model's */
  int64_t maxmsg = 64ll << 20;
  zmq_setsockopt(c->sub, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
  zmq_setsockopt(c->dealer, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
  zmq_setsockopt(c->dealer, ZMQ_IMMEDIATE, &one, sizeof one);
  zmq_setsockopt(c->dealer, ZMQ_SNDHWM, &hwm, sizeof hwm);
  if (c->opt.rcvhwm > 0) zmq_setsockopt(c->sub, ZMQ_RCVHWM, &c->opt.rcvhwm, sizeof c->opt.rcvhwm);
  zmq_setsockopt(c->sub, ZMQ_SUBSCRIBE, "state", 5);
  curve(c->sub, &c->opt);
  curve(c->dealer, &c->opt);
  if (zmq_connect(c->sub, c->state_ep)) {
    snprintf(err, errsz,
             "cannot connect to the state endpoint '%s': %s (endpoints look like "
             "tcp://HOST:PORT or ipc:///PATH)",
             c->state_ep, zmq_strerror(zmq_errno()));
    khz_client_destroy(&c);
    return NULL;
  }
  if (zmq_connect(c->dealer, c->cmd_ep)) {
    snprintf(err, errsz,
             "cannot connect to the command endpoint '%s': %s (endpoints look like "
             "tcp://HOST:PORT or ipc:///PATH)",
             c->cmd_ep, zmq_strerror(zmq_errno()));
    khz_client_destroy(&c);
    return NULL;
  }
  return c;
}

void khz_client_destroy(khzClient **c_p) {
  if (!c_p || !*c_p) return;
  khzClient *c = *c_p;
  zmq_msg_close(&c->rx);
  if (c->sub) zmq_close(c->sub);
  if (c->dealer) zmq_close(c->dealer);
  if (c->ctx) zmq_ctx_term(c->ctx);
  for (int i = 0; i < 6; i++) arena_release(&c->arenas[i]);
  free(c->sendbuf);
  free(c->ring);
  free(c);
  *c_p = NULL;
}

/* ------------------------------------------------------------- decoding -- */

/* decodes into arena a, growing it when the message does not fit */
typedef void *(*khzUnpackFn)(ProtobufCAllocator *, size_t, const uint8_t *);

static void *decode(khzClient *c, khzArena *a, khzUnpackFn fn, const void *data, size_t len) {
  for (;;) {
    a->used = 0;
    a->full = 0;
    void *m = fn(&a->alloc, len, data);
    if (m) return m;
    if (!a->full) return NULL;
    /* too small: grow (counted: an allocation after start-up) */
    size_t cap = a->cap * 2 > len * 8 ? a->cap * 2 : len * 8;
    uint8_t *nb = malloc(cap);
    if (!nb) return NULL;
    free(a->buf);
    a->buf = nb;
    a->cap = cap;
    c->counters.arena_grows++;
  }
}

static void *unpack_state(ProtobufCAllocator *a, size_t n, const uint8_t *d) {
  return khz__v1__state__unpack(a, n, d);
}
static void *unpack_server(ProtobufCAllocator *a, size_t n, const uint8_t *d) {
  return khz__v1__server_message__unpack(a, n, d);
}

/* the description must be self-consistent before anything indexes with it */
static int check_model(khzClient *c, const Khz__V1__ModelDescription *d) {
  if (d->model_generation == 0)
    return fail(c, KHZ_CLIENT_MALFORMED, "malformed model description from %s: model_generation 0",
                c->cmd_ep);
  if (d->n_actuators != d->na)
    return fail(c, KHZ_CLIENT_MALFORMED,
                "malformed model description from %s: na %u but %zu actuators", c->cmd_ep, d->na,
                d->n_actuators);
  for (size_t a = 0; a < d->n_actuators; a++) {
    const Khz__V1__Actuator *ac = d->actuators[a];
    if (ac->q_index >= d->nq || ac->qd_index >= d->nv)
      return fail(c, KHZ_CLIENT_MALFORMED,
                  "malformed model description from %s: actuator %zu '%s' has q_index %u / "
                  "qd_index %u, nq %u / nv %u",
                  c->cmd_ep, a, ac->name, ac->q_index, ac->qd_index, d->nq, d->nv);
  }
  for (size_t j = 0; j < d->n_joints; j++) {
    const Khz__V1__JointInfo *ji = d->joints[j];
    if (ji->q_index + ji->nq > d->nq || ji->qd_index + ji->nv > d->nv ||
        ji->actuator >= (int32_t)d->na)
      return fail(c, KHZ_CLIENT_MALFORMED,
                  "malformed model description from %s: joint '%s' indices out of range", c->cmd_ep,
                  ji->name);
  }
  for (size_t b = 0; b < d->n_bodies; b++)
    if (d->bodies[b]->index != b)
      return fail(c, KHZ_CLIENT_MALFORMED,
                  "malformed model description from %s: body %zu has index %u", c->cmd_ep, b,
                  d->bodies[b]->index);
  return 0;
}

/* ---------------------------------------------------------- the DEALER -- */

/* an Error from the server, copied into the ring (the oldest dropped when full) */
static void keep_error(khzClient *c, const Khz__V1__Error *e) {
  c->counters.errors++;
  if (e->command_seq == 0 && c->raw_pending > 0 &&
      (e->code == KHZ__V1__ERROR_CODE__BAD_MESSAGE || e->code == KHZ__V1__ERROR_CODE__UNKNOWN_TYPE))
    c->raw_pending--; /* the answer to bytes the caller sent raw */
  if (c->err_count == KHZ_CLIENT_ERRORS) {
    c->err_head = (c->err_head + 1) % KHZ_CLIENT_ERRORS;
    c->err_count--;
    c->counters.errors_dropped++;
  }
  khzErrorSlot *s = &c->errors[(c->err_head + c->err_count++) % KHZ_CLIENT_ERRORS];
  s->e = *e;
  snprintf(s->message, sizeof s->message, "%s", e->message ? e->message : "");
  s->e.message = s->message;
}

/* one ServerMessage, decoded into srv_next; 0 none within timeout, 1 got
 * one, -1 an undecodable message (MALFORMED set) */
static int recv_server(khzClient *c, int timeout_ms, Khz__V1__ServerMessage **out) {
  zmq_pollitem_t it = {c->dealer, 0, ZMQ_POLLIN, 0};
  if (zmq_poll(&it, 1, timeout_ms) <= 0) return 0;
  zmq_msg_t m;
  zmq_msg_init(&m);
  if (zmq_msg_recv(&m, c->dealer, ZMQ_DONTWAIT) < 0) {
    zmq_msg_close(&m);
    return 0;
  }
  int extra = 0;
  while (zmq_msg_more(&m)) { /* one frame is expected: drop the rest */
    zmq_msg_t x;
    zmq_msg_init(&x);
    zmq_msg_recv(&x, c->dealer, 0);
    int more = zmq_msg_more(&x);
    zmq_msg_close(&x);
    extra++;
    if (!more) break;
  }
  size_t len = zmq_msg_size(&m);
  Khz__V1__ServerMessage *sm =
      extra ? NULL : decode(c, c->srv_next, unpack_server, zmq_msg_data(&m), len);
  zmq_msg_close(&m);
  if (!sm || sm->body_case == KHZ__V1__SERVER_MESSAGE__BODY__NOT_SET ||
      (sm->body_case == KHZ__V1__SERVER_MESSAGE__BODY_REPLY && !sm->reply) ||
      (sm->body_case == KHZ__V1__SERVER_MESSAGE__BODY_ERROR && !sm->error)) {
    c->counters.malformed++;
    return fail(c, KHZ_CLIENT_MALFORMED,
                "malformed reply from %s: %zu bytes%s that are not a %s.ServerMessage (is this a "
                "khz-server of protocol %s?)",
                c->cmd_ep, len, extra ? " in several frames" : "", KHZ_PROTOCOL, KHZ_PROTOCOL);
  }
  *out = sm;
  return 1;
}

/* sends packed bytes on the DEALER; waits up to wait_ms for a connection */
static int send_bytes(khzClient *c, const void *buf, size_t n, int wait_ms) {
  if (wait_ms < 0) goto explain; /* the caller's send failed with EAGAIN */
  if (zmq_send(c->dealer, buf, n, ZMQ_DONTWAIT) == (int)n) return 0;
  if (zmq_errno() != EAGAIN)
    return fail(c, KHZ_CLIENT_SYSTEM, "cannot send to %s: %s", c->cmd_ep,
                zmq_strerror(zmq_errno()));
  if (wait_ms > 0) {
    zmq_pollitem_t it = {c->dealer, 0, ZMQ_POLLOUT, 0};
    if (zmq_poll(&it, 1, wait_ms) > 0 && zmq_send(c->dealer, buf, n, ZMQ_DONTWAIT) == (int)n)
      return 0;
  }
explain:;
  /* no connection: say why a person might see this */
  struct stat sb;
  const char *why = "";
  if (!strncmp(c->cmd_ep, "ipc://", 6) && stat(c->cmd_ep + 6, &sb) != 0)
    why = " (the socket file does not exist)";
  if (wait_ms > 0)
    return fail(
        c, KHZ_CLIENT_NOT_CONNECTED,
        "no khz-server at %s%s: nothing accepted the connection within %d ms. Is khz-server "
        "running (build/server/khz-server), on this endpoint (--command-endpoint, "
        "$KHZ_COMMAND_ENDPOINT)? With CURVE, are this client's keys allowed?",
        c->cmd_ep, why, wait_ms);
  return fail(c, KHZ_CLIENT_NOT_CONNECTED,
              "not connected to a khz-server at %s%s (or %d messages wait unsent): nothing sent "
              "(commands are dropped, never queued)",
              c->cmd_ep, why, KHZ_CLIENT_SNDHWM);
}

static int pack_send(khzClient *c, const Khz__V1__ClientMessage *m, int wait_ms) {
  size_t n = khz__v1__client_message__get_packed_size(m);
  if (n > c->sendcap) { /* only requests with very large arrays get here */
    uint8_t *nb = malloc(n * 2);
    if (!nb) return fail(c, KHZ_CLIENT_SYSTEM, "out of memory (%zu bytes to send)", n);
    free(c->sendbuf);
    c->sendbuf = nb;
    c->sendcap = n * 2;
  }
  khz__v1__client_message__pack(m, c->sendbuf);
  return send_bytes(c, c->sendbuf, n, wait_ms);
}

/* a khz.vN other than ours named in a server's message, for the mismatch report */
static const char *other_version(const char *msg) {
  const char *p = msg;
  while (p && (p = strstr(p, "khz.v"))) {
    size_t n = strspn(p + 5, "0123456789");
    if (n && !(n == strlen(KHZ_PROTOCOL) - 5 && !strncmp(p, KHZ_PROTOCOL, 5 + n))) return p;
    p += 5;
  }
  return NULL;
}

static int mismatch(khzClient *c, const char *what, int code, const char *msg) {
  const char *v = other_version(msg);
  int n = 0;
  while (v && v[5 + n] >= '0' && v[5 + n] <= '9') n++;
  if (v)
    return fail(c, KHZ_CLIENT_PROTOCOL,
                "protocol version mismatch: the server at %s speaks %.*s, this client speaks %s "
                "(%s answered code %d: %s)",
                c->cmd_ep, 5 + n, v, KHZ_PROTOCOL, what, code, msg);
  return fail(c, KHZ_CLIENT_PROTOCOL,
              "protocol version mismatch: the server at %s does not understand a %s %s request "
              "(code %d: %s); it is not a khz-server speaking %s",
              c->cmd_ep, KHZ_PROTOCOL, what, code, msg, KHZ_PROTOCOL);
}

/* sends the request and waits for the reply with its id; the reply is left in
 * srv_cur */
static const Khz__V1__Reply *request(khzClient *c, Khz__V1__Request *rq, const char *what,
                                     int strict, int timeout_ms) {
  Khz__V1__ClientMessage m;
  khz__v1__client_message__init(&m);
  rq->id = ++c->next_id;
  m.body_case = KHZ__V1__CLIENT_MESSAGE__BODY_REQUEST;
  m.request = rq;
  int64_t end = khz_client_now() + (int64_t)timeout_ms * 1000000;
  if (pack_send(c, &m, timeout_ms)) return NULL;
  for (;;) {
    int left = (int)((end - khz_client_now()) / 1000000);
    if (left < 0) {
      fail(c, KHZ_CLIENT_TIMEOUT,
           "no reply from %s to %s within %d ms (the server is connected but does not answer: "
           "stopped, overloaded, or not a khz-server)",
           c->cmd_ep, what, timeout_ms);
      return NULL;
    }
    Khz__V1__ServerMessage *sm = NULL;
    int got = recv_server(c, left, &sm);
    if (got < 0) return NULL;
    if (!got) continue;
    if (sm->body_case == KHZ__V1__SERVER_MESSAGE__BODY_ERROR) {
      /* a message-level refusal of our request: it was not understood (strict:
         the library's own requests, which every khz.v1 server knows) */
      const Khz__V1__Error *e = sm->error;
      int message_level = e->command_seq == 0 && (e->code == KHZ__V1__ERROR_CODE__BAD_MESSAGE ||
                                                  e->code == KHZ__V1__ERROR_CODE__UNKNOWN_TYPE);
      if (strict && message_level && c->raw_pending == 0) {
        mismatch(c, what, e->code, e->message);
        return NULL;
      }
      keep_error(c, e);
      continue;
    }
    if (sm->reply->id != rq->id) continue; /* the late answer to an earlier request */
    if (strict && (sm->reply->code == KHZ__V1__ERROR_CODE__UNKNOWN_TYPE ||
                   sm->reply->code == KHZ__V1__ERROR_CODE__BAD_MESSAGE)) {
      mismatch(c, what, sm->reply->code, sm->reply->error);
      return NULL;
    }
    /* keep it: swap the scratch arena in */
    khzArena *t = c->srv_cur;
    c->srv_cur = c->srv_next, c->srv_next = t;
    c->reply = sm->reply;
    ok(c);
    return c->reply;
  }
}

const Khz__V1__Reply *khz_client_request(khzClient *c, Khz__V1__Request *rq, int timeout_ms) {
  return request(c, rq, "the request", 0, timeout_ms);
}

/* -------------------------------------------------------------- model -- */

static const Khz__V1__ModelDescription *fetch_model(khzClient *c, int timeout_ms) {
  Khz__V1__Request rq;
  Khz__V1__Describe d;
  khz__v1__request__init(&rq);
  khz__v1__describe__init(&d);
  rq.op_case = KHZ__V1__REQUEST__OP_DESCRIBE;
  rq.describe = &d;
  const Khz__V1__Reply *r = request(c, &rq, "Describe", 1, timeout_ms);
  if (!r) return NULL;
  if (r->code != KHZ__V1__ERROR_CODE__OK || r->result_case != KHZ__V1__REPLY__RESULT_MODEL ||
      !r->model) {
    fail(c, r->code ? KHZ_CLIENT_REFUSED : KHZ_CLIENT_MALFORMED,
         "Describe: the server at %s answered code %d without a model description%s%s", c->cmd_ep,
         r->code, r->error && r->error[0] ? ": " : "", r->error ? r->error : "");
    return NULL;
  }
  if (r->model->protocol_version != 0 &&
      r->model->protocol_version != KHZ__V1__PROTOCOL_VERSION__PROTOCOL_VERSION) {
    fail(c, KHZ_CLIENT_PROTOCOL,
         "protocol version mismatch: the server at %s speaks %s revision %u, this client speaks "
         "revision %d",
         c->cmd_ep, KHZ_PROTOCOL, r->model->protocol_version,
         KHZ__V1__PROTOCOL_VERSION__PROTOCOL_VERSION);
    return NULL;
  }
  if (check_model(c, r->model)) return NULL;

  /* the reply's arena becomes the model's; the previous model stays readable */
  khzArena *t = c->md_prev;
  c->md_prev = c->md_cur;
  c->md_cur = c->srv_cur;
  c->srv_cur = t;
  int changed = c->model && c->model->model_generation != r->model->model_generation;
  c->model = r->model;
  c->reply = NULL;
  if (changed) c->model_changed = 1, c->counters.resyncs++;
  return c->model;
}

const Khz__V1__ModelDescription *khz_client_describe(khzClient *c, int timeout_ms) {
  if (c->model && (!c->state || c->state->model_generation == c->model->model_generation)) {
    ok(c);
    return c->model;
  }
  return fetch_model(c, timeout_ms);
}

int khz_client_modelChanged(khzClient *c) {
  int r = c->model_changed;
  c->model_changed = 0;
  return r;
}

/* exact name, or the only name whose part after the last '/' matches */
static int find_name(khzClient *c, const char *what, const char *plural, const char *name, size_t n,
                     const char *(*get)(const Khz__V1__ModelDescription *, size_t)) {
  const Khz__V1__ModelDescription *d = c->model;
  if (!d) return fail(c, KHZ_CLIENT_BAD_ARGUMENT, "no model yet: call khz_client_describe first");
  if (!name) return fail(c, KHZ_CLIENT_BAD_ARGUMENT, "no %s name given", what);
  int found = -1, matches = 0;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(get(d, i), name)) return (int)i;
  for (size_t i = 0; i < n; i++) {
    const char *s = strrchr(get(d, i), '/');
    if (s && !strcmp(s + 1, name)) found = (int)i, matches++;
  }
  if (matches == 1) return found;
  char list[512];
  size_t at = 0;
  list[0] = 0;
  for (size_t i = 0; i < n && at < sizeof list - 8; i++)
    at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", get(d, i));
  if (at >= sizeof list - 8) snprintf(list + sizeof list - 8, 8, ", ...");
  return fail(c, KHZ_CLIENT_UNKNOWN_NAME, "%s '%s' %s in the model '%s' (%s: %s)", what, name,
              matches ? "is ambiguous" : "is not", d->scene, plural, n ? list : "none");
}

static const char *actuator_name(const Khz__V1__ModelDescription *d, size_t i) {
  return d->actuators[i]->name;
}
static const char *joint_name(const Khz__V1__ModelDescription *d, size_t i) {
  return d->joints[i]->name;
}
static const char *body_name(const Khz__V1__ModelDescription *d, size_t i) {
  return d->bodies[i]->name;
}
static const char *proxy_name(const Khz__V1__ModelDescription *d, size_t i) {
  return d->haptic_proxies[i]->body_name;
}

int khz_client_actuatorIndex(khzClient *c, const char *name) {
  return find_name(c, "actuated joint", "actuated joints", name,
                   c->model ? c->model->n_actuators : 0, actuator_name);
}
int khz_client_bodyIndex(khzClient *c, const char *name) {
  return find_name(c, "body", "bodies", name, c->model ? c->model->n_bodies : 0, body_name);
}
int khz_client_proxyIndex(khzClient *c, const char *name) {
  return find_name(c, "haptic proxy", "haptic proxies", name,
                   c->model ? c->model->n_haptic_proxies : 0, proxy_name);
}
const Khz__V1__JointInfo *khz_client_joint(khzClient *c, const char *name) {
  int j = find_name(c, "joint", "joints", name, c->model ? c->model->n_joints : 0, joint_name);
  return j < 0 ? NULL : c->model->joints[j];
}

/* ------------------------------------------------------------- states -- */

/* receives one state message into c->rx (topic "state", then the body);
 * 1 got one, 0 none queued */
static int recv_state_msg(khzClient *c) {
  for (;;) {
    zmq_msg_t topic;
    zmq_msg_init(&topic);
    if (zmq_msg_recv(&topic, c->sub, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&topic);
      return 0;
    }
    int good = zmq_msg_more(&topic) && zmq_msg_size(&topic) == 5 &&
               !memcmp(zmq_msg_data(&topic), "state", 5);
    int more = zmq_msg_more(&topic);
    zmq_msg_close(&topic);
    if (!more) { /* a single frame: not ours */
      c->counters.malformed++;
      continue;
    }
    zmq_msg_t body;
    zmq_msg_init(&body);
    zmq_msg_recv(&body, c->sub, 0);
    while (zmq_msg_more(&body)) { /* extra frames: not ours */
      zmq_msg_t x;
      zmq_msg_init(&x);
      zmq_msg_recv(&x, c->sub, 0);
      good = 0;
      int m = zmq_msg_more(&x);
      zmq_msg_close(&x);
      if (!m) break;
    }
    if (!good) {
      zmq_msg_close(&body);
      c->counters.malformed++;
      continue;
    }
    if (c->rx_full) c->counters.states_skipped++, c->skipped_since++;
    zmq_msg_close(&c->rx);
    zmq_msg_init(&c->rx);
    zmq_msg_move(&c->rx, &body);
    zmq_msg_close(&body);
    c->rx_full = 1;
    return 1;
  }
}

/* decodes c->rx into the spare arena and makes it the current state; 0 ok,
 * -1 malformed (skipped) */
static int take_state(khzClient *c) {
  c->rx_full = 0;
  Khz__V1__State *st =
      decode(c, c->st_next, unpack_state, zmq_msg_data(&c->rx), zmq_msg_size(&c->rx));
  size_t len = zmq_msg_size(&c->rx);
  zmq_msg_close(&c->rx);
  zmq_msg_init(&c->rx);
  if (!st || st->model_generation == 0 || st->n_qd != st->n_tau) {
    c->counters.malformed++;
    return fail(c, KHZ_CLIENT_MALFORMED,
                "malformed state from %s (%zu bytes that are not a %s.State)", c->state_ep, len,
                KHZ_PROTOCOL);
  }
  if (st->protocol_version != 0 && st->protocol_version != KHZ__V1__PROTOCOL_VERSION__PROTOCOL_VERSION) {
    c->counters.malformed++;
    return fail(c, KHZ_CLIENT_PROTOCOL,
                "state from %s of protocol revision %u, this client speaks %s revision %d: skipped",
                c->state_ep, st->protocol_version, KHZ_PROTOCOL,
                KHZ__V1__PROTOCOL_VERSION__PROTOCOL_VERSION);
  }
  khzArena *t = c->st_cur;
  c->st_cur = c->st_next, c->st_next = t;
  c->state = st;
  c->counters.states++;
  if (c->have_seq && st->seq > c->last_seq + 1 + c->skipped_since &&
      !(st->flags & KHZ__V1__STATE_FLAG__FLAG_RESET))
    c->counters.gaps += st->seq - c->last_seq - 1 - c->skipped_since;
  c->skipped_since = 0;
  c->last_seq = st->seq;
  c->have_seq = 1;

  /* another model (a restart or reload): fetch its description */
  if (c->model && st->model_generation != c->model->model_generation && !c->opt.no_resync &&
      !c->resyncing && c->resync_tried != st->model_generation) {
    c->resyncing = 1;
    c->have_seq = 0;
    c->resync_tried = st->model_generation; /* a failure is not retried at every state */
    fetch_model(c, c->opt.timeout_ms);
    c->resyncing = 0;
  }
  if (c->model && st->model_generation == c->model->model_generation &&
      (st->n_q != c->model->nq || st->n_qd != c->model->nv)) {
    c->counters.malformed++;
    return fail(c, KHZ_CLIENT_MALFORMED,
                "malformed state from %s: %zu q / %zu qd, the model has "
                "nq %u / nv %u",
                c->state_ep, st->n_q, st->n_qd, c->model->nq, c->model->nv);
  }
  ok(c);
  return 0;
}

static int wait_state(khzClient *c, int timeout_ms) {
  zmq_pollitem_t it = {c->sub, 0, ZMQ_POLLIN, 0};
  return zmq_poll(&it, 1, timeout_ms) > 0;
}

static const Khz__V1__State *state_timeout(khzClient *c, int timeout_ms) {
  fail(c, KHZ_CLIENT_TIMEOUT,
       "no state from %s within %d ms (is khz-server running and publishing there? paused?)",
       c->state_ep, timeout_ms);
  return NULL;
}

const Khz__V1__State *khz_client_nextState(khzClient *c, int timeout_ms) {
  int64_t end = khz_client_now() + (int64_t)timeout_ms * 1000000;
  for (;;) {
    if (recv_state_msg(c)) {
      if (take_state(c) == 0) return c->state;
      continue;
    }
    int left = timeout_ms < 0 ? -1 : (int)((end - khz_client_now()) / 1000000);
    if (timeout_ms >= 0 && left < 0) return state_timeout(c, timeout_ms);
    if (!wait_state(c, left) && timeout_ms >= 0 && khz_client_now() >= end)
      return state_timeout(c, timeout_ms);
  }
}

const Khz__V1__State *khz_client_latestState(khzClient *c, int timeout_ms) {
  int64_t end = khz_client_now() + (int64_t)timeout_ms * 1000000;
  for (;;) {
    int got = 0;
    while (recv_state_msg(c)) got = 1;
    if (got && take_state(c) == 0) return c->state;
    if (got) continue;
    int left = timeout_ms < 0 ? -1 : (int)((end - khz_client_now()) / 1000000);
    if (timeout_ms >= 0 && left < 0) return state_timeout(c, timeout_ms);
    if (!wait_state(c, left) && timeout_ms >= 0 && khz_client_now() >= end)
      return state_timeout(c, timeout_ms);
  }
}

void khz_client_onState(khzClient *c, khzStateFn fn, void *user) {
  c->on_state = fn;
  c->on_state_user = user;
}

/* server errors waiting on the DEALER go into the ring */
static void read_errors(khzClient *c) {
  Khz__V1__ServerMessage *sm;
  int got;
  while ((got = recv_server(c, 0, &sm)) != 0) {
    if (got > 0 && sm->body_case == KHZ__V1__SERVER_MESSAGE__BODY_ERROR) keep_error(c, sm->error);
  }
}

int khz_client_dispatch(khzClient *c, int timeout_ms) {
  int n = 0;
  if (!c->on_state)
    return fail(c, KHZ_CLIENT_BAD_ARGUMENT, "dispatch: no callback (khz_client_onState)");
  read_errors(c);
  if (!recv_state_msg(c)) {
    if (!wait_state(c, timeout_ms)) {
      ok(c);
      return 0;
    }
    if (!recv_state_msg(c)) return 0;
  }
  do {
    if (take_state(c) == 0) {
      c->on_state(c, c->state, c->on_state_user);
      n++;
    }
  } while (recv_state_msg(c));
  ok(c);
  return n;
}

int khz_client_fd(khzClient *c) {
  int fd = -1;
  size_t sz = sizeof fd;
  if (zmq_getsockopt(c->sub, ZMQ_FD, &fd, &sz)) return fail(c, KHZ_CLIENT_SYSTEM, "no fd");
  return fd;
}

/* ----------------------------------------------------------- commands -- */

/* a command or haptic input: packed into the next ring slot and handed to
 * libzmq as constant data (no allocation, no copy); larger ones are copied */
static int send_message(khzClient *c, int body_case, void *body) {
  Khz__V1__ClientMessage m;
  khz__v1__client_message__init(&m);
  m.body_case = (Khz__V1__ClientMessage__BodyCase)body_case;
  if (body_case == KHZ__V1__CLIENT_MESSAGE__BODY_COMMAND) m.command = body;
  else m.haptic = body;
  c->counters.commands++;
  size_t n = khz__v1__client_message__get_packed_size(&m);
  int rc;
  if (n <= KHZ_CLIENT_SLOT) {
    uint8_t *slot = c->ring + (size_t)(c->ring_next++ % KHZ_CLIENT_SLOTS) * KHZ_CLIENT_SLOT;
    khz__v1__client_message__pack(&m, slot);
    zmq_msg_t zm;
    zmq_msg_init_data(&zm, slot, n, NULL, NULL);
    rc = zmq_msg_send(&zm, c->dealer, ZMQ_DONTWAIT) == (int)n ? 0 : -1;
    if (rc) {
      zmq_msg_close(&zm);
      if (zmq_errno() == EAGAIN) rc = send_bytes(c, NULL, 0, -1); /* the reason, nothing sent */
      else
        rc = fail(c, KHZ_CLIENT_SYSTEM, "cannot send to %s: %s", c->cmd_ep,
                  zmq_strerror(zmq_errno()));
    }
  } else {
    rc = pack_send(c, &m, 0);
  }
  if (rc) {
    c->counters.send_failures++;
    return -1;
  }
  ok(c);
  return 0;
}

int khz_client_command(khzClient *c, const Khz__V1__Command *cmd) {
  return send_message(c, KHZ__V1__CLIENT_MESSAGE__BODY_COMMAND, (void *)cmd);
}

int khz_client_haptic(khzClient *c, const Khz__V1__HapticInput *in) {
  return send_message(c, KHZ__V1__CLIENT_MESSAGE__BODY_HAPTIC, (void *)in);
}

int khz_client_sendRaw(khzClient *c, const void *data, size_t len) {
  if (send_bytes(c, data, len, 0)) return -1;
  c->raw_pending++;
  return 0;
}

/* the command header: which model and state it answers */
static int command_header(khzClient *c, const Khz__V1__State *st, size_t n) {
  if (!c->model)
    return fail(c, KHZ_CLIENT_BAD_ARGUMENT, "no model yet: call khz_client_describe first");
  if (!st) st = c->state;
  if (n != c->model->na)
    return fail(c, KHZ_CLIENT_BAD_ARGUMENT,
                "command arrays have %zu values, the model '%s' has %u actuators%s", n,
                c->model->scene, c->model->na,
                c->counters.resyncs ? " (the model changed: see khz_client_modelChanged)" : "");
  Khz__V1__Command *m = &c->cmd;
  khz__v1__command__init(m);
  m->model_generation = c->model->model_generation;
  m->seq = ++c->cmd_seq;
  m->state_seq = st ? st->seq : 0;
  m->client_time_ns = khz_client_now();
  return 0;
}

int khz_client_sendTorques(khzClient *c, const Khz__V1__State *st, const double *tau, size_t n) {
  if (!tau) return fail(c, KHZ_CLIENT_BAD_ARGUMENT, "sendTorques: tau is NULL");
  if (command_header(c, st, n)) return -1;
  c->cmd.n_tau = n;
  c->cmd.tau = (double *)tau;
  return khz_client_command(c, &c->cmd);
}

int khz_client_sendTargets(khzClient *c, const Khz__V1__State *st, const double *q_target,
                           const double *qd_target, const double *kp, const double *kd,
                           const double *tau_ff, size_t n) {
  if (!q_target) return fail(c, KHZ_CLIENT_BAD_ARGUMENT, "sendTargets: q_target is NULL");
  if (command_header(c, st, n)) return -1;
  Khz__V1__Command *m = &c->cmd;
  m->n_q_target = n, m->q_target = (double *)q_target;
  if (qd_target) m->n_qd_target = n, m->qd_target = (double *)qd_target;
  if (kp) m->n_kp = n, m->kp = (double *)kp;
  if (kd) m->n_kd = n, m->kd = (double *)kd;
  if (tau_ff) m->n_tau = n, m->tau = (double *)tau_ff;
  return khz_client_command(c, m);
}

int khz_client_sendCtrl(khzClient *c, const Khz__V1__State *st, const double *ctrl,
                        const char *const *names, size_t n) {
  if (!ctrl) return fail(c, KHZ_CLIENT_BAD_ARGUMENT, "sendCtrl: ctrl is NULL");
  if (!c->model)
    return fail(c, KHZ_CLIENT_BAD_ARGUMENT, "no model yet: call khz_client_describe first");
  if (!names && n != c->model->n_model_actuators)
    return fail(c, KHZ_CLIENT_BAD_ARGUMENT,
                "sendCtrl: %zu controls, the model '%s' has %zu actuators of its own (name them "
                "to send fewer)",
                n, c->model->scene, c->model->n_model_actuators);
  if (command_header(c, st, c->model->na)) return -1;
  c->cmd.n_ctrl = n;
  c->cmd.ctrl = (double *)ctrl;
  if (names) c->cmd.n_ctrl_names = n, c->cmd.ctrl_names = (char **)names;
  return khz_client_command(c, &c->cmd);
}

int khz_client_ctrlIndex(khzClient *c, const char *name) {
  if (!c->model || !name) return -1;
  for (size_t i = 0; i < c->model->n_model_actuators; i++)
    if (!strcmp(c->model->model_actuators[i]->name, name)) return (int)i;
  return -1;
}

int khz_client_sendHaptic(khzClient *c, int proxy, const double position[3],
                          const double orientation[4], const double velocity[3],
                          const double angular_velocity[3]) {
  static const double identity[4] = {1, 0, 0, 0};
  if (!c->model)
    return fail(c, KHZ_CLIENT_BAD_ARGUMENT, "no model yet: call khz_client_describe first");
  if (proxy < 0 || (size_t)proxy >= c->model->n_haptic_proxies)
    return fail(c, KHZ_CLIENT_UNKNOWN_NAME, "no haptic proxy %d: the model '%s' has %zu", proxy,
                c->model->scene, c->model->n_haptic_proxies);
  if (!position) return fail(c, KHZ_CLIENT_BAD_ARGUMENT, "sendHaptic: position is NULL");
  Khz__V1__HapticInput *h = &c->hin;
  khz__v1__haptic_input__init(h);
  h->model_generation = c->model->model_generation;
  h->proxy = (uint32_t)proxy;
  h->seq = ++c->cmd_seq;
  h->device_time_ns = khz_client_now();
  h->n_position = 3, h->position = (double *)position;
  h->n_orientation = 4, h->orientation = (double *)(orientation ? orientation : identity);
  if (velocity) h->n_velocity = 3, h->velocity = (double *)velocity;
  if (angular_velocity) h->n_angular_velocity = 3, h->angular_velocity = (double *)angular_velocity;
  return khz_client_haptic(c, h);
}

const Khz__V1__Error *khz_client_nextError(khzClient *c, int timeout_ms) {
  int64_t end = khz_client_now() + (int64_t)timeout_ms * 1000000;
  for (;;) {
    read_errors(c);
    if (c->err_count > 0) {
      c->err_out = c->errors[c->err_head];
      c->err_out.e.message = c->err_out.message;
      c->err_head = (c->err_head + 1) % KHZ_CLIENT_ERRORS;
      c->err_count--;
      return &c->err_out.e;
    }
    int left = (int)((end - khz_client_now()) / 1000000);
    if (left < 0) return NULL;
    zmq_pollitem_t it = {c->dealer, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, left) <= 0 && khz_client_now() >= end) return NULL;
  }
}

/* ----------------------------------------------------------- requests -- */

/* sends rq and turns a non-OK reply into -1 with the server's message */
static int simple(khzClient *c, Khz__V1__Request *rq, const char *what, int timeout_ms) {
  const Khz__V1__Reply *r = request(c, rq, what, 1, timeout_ms);
  if (!r) return -1;
  if (r->code != KHZ__V1__ERROR_CODE__OK) {
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&khz__v1__error_code__descriptor, r->code);
    return fail(
        c,
        r->code == KHZ__V1__ERROR_CODE__UNKNOWN_NAME ? KHZ_CLIENT_UNKNOWN_NAME : KHZ_CLIENT_REFUSED,
        "%s refused by the server (%s): %s", what, v ? v->name : "?", r->error);
  }
  return 0;
}

#define REQUEST(field, op, Type, init)    \
  Khz__V1__Request rq;                    \
  Type body;                              \
  khz__v1__request__init(&rq);            \
  init(&body);                            \
  rq.op_case = KHZ__V1__REQUEST__OP_##op; \
  rq.field = &body

int khz_client_pause(khzClient *c, int timeout_ms) {
  REQUEST(pause, PAUSE, Khz__V1__Pause, khz__v1__pause__init);
  return simple(c, &rq, "Pause", timeout_ms);
}

int khz_client_resume(khzClient *c, int timeout_ms) {
  REQUEST(resume, RESUME, Khz__V1__Resume, khz__v1__resume__init);
  return simple(c, &rq, "Resume", timeout_ms);
}

int khz_client_step(khzClient *c, uint32_t n, int timeout_ms) {
  REQUEST(step, STEP, Khz__V1__Step, khz__v1__step__init);
  body.n = n;
  return simple(c, &rq, "Step", timeout_ms);
}

int khz_client_reset(khzClient *c, const double *q, size_t nq, int timeout_ms) {
  REQUEST(reset, RESET, Khz__V1__Reset, khz__v1__reset__init);
  if (q) body.n_q = nq, body.q = (double *)q;
  return simple(c, &rq, "Reset", timeout_ms);
}

int khz_client_setMode(khzClient *c, Khz__V1__Mode mode, int timeout_ms) {
  REQUEST(set_mode, SET_MODE, Khz__V1__SetMode, khz__v1__set_mode__init);
  body.mode = mode;
  return simple(c, &rq, "SetMode", timeout_ms);
}

int khz_client_setRate(khzClient *c, double rate_hz, int timeout_ms) {
  REQUEST(set_rate, SET_RATE, Khz__V1__SetRate, khz__v1__set_rate__init);
  body.rate_hz = rate_hz;
  return simple(c, &rq, "SetRate", timeout_ms);
}

int khz_client_setContactMethod(khzClient *c, const char *method, int timeout_ms) {
  REQUEST(set_contact_method, SET_CONTACT_METHOD, Khz__V1__SetContactMethod,
          khz__v1__set_contact_method__init);
  body.method = (char *)(method ? method : "");
  return simple(c, &rq, "SetContactMethod", timeout_ms);
}

int khz_client_setGains(khzClient *c, const double *kp, const double *kd, size_t n,
                        int timeout_ms) {
  REQUEST(set_gains, SET_GAINS, Khz__V1__SetGains, khz__v1__set_gains__init);
  body.n_kp = body.n_kd = n;
  body.kp = (double *)kp, body.kd = (double *)kd;
  return simple(c, &rq, "SetGains", timeout_ms);
}

int khz_client_applyWrench(khzClient *c, const char *bodyname, const double force[3],
                           const double torque[3], double duration, int timeout_ms) {
  REQUEST(apply_wrench, APPLY_WRENCH, Khz__V1__ApplyWrench, khz__v1__apply_wrench__init);
  Khz__V1__BodyRef ref;
  khz__v1__body_ref__init(&ref);
  /* a short name is resolved here so that "box1" and "link3" both work */
  if (c->model && bodyname) {
    int b = khz_client_bodyIndex(c, bodyname);
    if (b < 0) return -1;
    bodyname = c->model->bodies[b]->name;
  }
  ref.ref_case = KHZ__V1__BODY_REF__REF_NAME;
  ref.name = (char *)(bodyname ? bodyname : "");
  body.body = &ref;
  if (force) body.n_force = 3, body.force = (double *)force;
  if (torque) body.n_torque = 3, body.torque = (double *)torque;
  body.duration = duration;
  return simple(c, &rq, "ApplyWrench", timeout_ms);
}

int khz_client_clearWrenches(khzClient *c, int timeout_ms) {
  REQUEST(clear_wrenches, CLEAR_WRENCHES, Khz__V1__ClearWrenches, khz__v1__clear_wrenches__init);
  return simple(c, &rq, "ClearWrenches", timeout_ms);
}

int khz_client_setSetting(khzClient *c, const char *name, const char *value, int timeout_ms) {
  REQUEST(set_setting, SET_SETTING, Khz__V1__SetSetting, khz__v1__set_setting__init);
  body.name = (char *)(name ? name : "");
  body.value = (char *)(value ? value : "");
  return simple(c, &rq, "SetSetting", timeout_ms);
}

const char *khz_client_getSetting(khzClient *c, const char *name, int timeout_ms) {
  REQUEST(get_setting, GET_SETTING, Khz__V1__GetSetting, khz__v1__get_setting__init);
  body.name = (char *)(name ? name : "");
  if (simple(c, &rq, "GetSetting", timeout_ms)) return NULL;
  const Khz__V1__Reply *r = c->reply;
  if (r->result_case != KHZ__V1__REPLY__RESULT_SETTINGS || !r->settings ||
      r->settings->n_settings < 1) {
    fail(c, KHZ_CLIENT_MALFORMED, "GetSetting '%s': the reply from %s holds no setting", body.name,
         c->cmd_ep);
    return NULL;
  }
  snprintf(c->setting_value, sizeof c->setting_value, "%s", r->settings->settings[0]->value);
  return c->setting_value;
}

const Khz__V1__Stats *khz_client_getStats(khzClient *c, int timeout_ms) {
  REQUEST(get_stats, GET_STATS, Khz__V1__GetStats, khz__v1__get_stats__init);
  if (simple(c, &rq, "GetStats", timeout_ms)) return NULL;
  if (c->reply->result_case != KHZ__V1__REPLY__RESULT_STATS || !c->reply->stats) {
    fail(c, KHZ_CLIENT_MALFORMED, "GetStats: the reply from %s holds no statistics", c->cmd_ep);
    return NULL;
  }
  return c->reply->stats;
}
