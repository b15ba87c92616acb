/* server.c — khz-server's routing and lifecycle (server.h): loads the scene,
 * starts the loop thread, and runs the one libev loop that owns every ZeroMQ
 * socket.
 *
 *   PUB    state_endpoint    frames "state" + State, one per tick (publish.c).
 *   ROUTER command_endpoint  ClientMessage in, dispatched here to commands.c
 *                            (Command, HapticInput) or requests.c (Request);
 *                            ServerMessage out (Reply, Error) to that peer only.
 *   REP    ZAP handler       inproc://zeromq.zap.01, when CURVE is on (curve.c).
 *
 * ZMQ_FD is edge-triggered: after every receive or send on a socket its
 * ZMQ_EVENTS are drained until no input is left. The loop thread wakes this
 * thread through an ev_async; this thread then publishes every state in the
 * ring, answers the loop's replies and drains the ROUTER again.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "internal.h"
#include "log.h"

#define KHZ_DRAIN_BATCH 256
#define KHZ_DRAIN_EVERY_NS 1000000 /* wake_cb drains the ROUTER at least this often */

int khz_server_fail(char *err, size_t errsz, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errsz, fmt, ap);
  va_end(ap);
  return -1;
}

/* ----------------------------------------------------- peers and sends -- */

static int code_index(int code) { return code >= 0 && code < KHZ_NCODES ? code : KHZ__V1__ERROR_CODE__INTERNAL; }

static void count_reject(khzServer *s, int code) {
  s->by_code[code_index(code)]++;
  if (code != KHZ__V1__ERROR_CODE__CLAMPED) s->rejected++;
}

static int holds_claim(const khzServer *s, uint32_t client) {
  for (int a = 0; a < s->na + s->nhaptic; a++)
    if (s->owner[a] == client) return 1;
  return 0;
}

/* the peer's client id (1-based index in the peer table). When the table is
 * full, slots are reused round-robin, skipping slots whose peer holds a claim
 * (unless every slot does); whatever the evicted peer held (claims, activity)
 * is released, so that the newcomer inherits nothing of it. */
uint32_t khz_peer_client(khzServer *s, const khzPeer *p) {
  for (int i = 0; i < s->npeers; i++)
    if (s->peers[i].idlen == p->idlen && !memcmp(s->peers[i].id, p->id, p->idlen))
      return (uint32_t)i + 1;
  int i;
  if (s->npeers < KHZ_MAX_PEERS) {
    i = s->npeers++;
  } else {
    i = s->next_peer % KHZ_MAX_PEERS;
    for (int k = 0; k < KHZ_MAX_PEERS; k++) {
      int j = (s->next_peer + k) % KHZ_MAX_PEERS;
      if (!holds_claim(s, (uint32_t)j + 1)) {
        i = j;
        break;
      }
    }
    s->next_peer = (i + 1) % KHZ_MAX_PEERS;
    for (int a = 0; a < s->na + s->nhaptic; a++)
      if (s->owner[a] == (uint32_t)i + 1) s->owner[a] = 0;
  }
  s->peer_active[i] = 0;
  s->peers[i] = *p;
  s->peers_seen++;
  return (uint32_t)i + 1;
}

/* a reply or error that could not be delivered: counted (Stats.replies_dropped)
 * and logged at most once a second */
static void count_dropped(khzServer *s, const char *why) {
  s->replies_dropped++;
  double now = ev_now(s->ev);
  if (now - s->last_drop_log >= 1.0) {
    s->last_drop_log = now;
    khz_log(KHZ_LOG_WARN,
            "a reply could not be delivered (%s): %llu so far; a client that leaves more than %d "
            "replies unread loses the rest",
            why, (unsigned long long)s->replies_dropped, KHZ_ROUTER_SNDHWM);
  }
}

/* one ServerMessage to one peer; never blocked on: when the peer is gone or
 * its queue is full (ZMQ_ROUTER_MANDATORY says so) it is counted as dropped */
static void send_to(khzServer *s, const khzPeer *p, const Khz__V1__ServerMessage *msg) {
  size_t n = khz__v1__server_message__get_packed_size(msg);
  uint8_t stackbuf[4096], *buf = n <= sizeof stackbuf ? stackbuf : malloc(n);
  if (!buf) {
    count_dropped(s, "out of memory");
    return;
  }
  khz__v1__server_message__pack(msg, buf);
  s->router_sent = 1;
  if (zmq_send(s->router, p->id, p->idlen, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
    count_dropped(s, zmq_errno() == EAGAIN ? "the client's queue is full" : "the client is gone");
  } else {
    if (p->delim) zmq_send(s->router, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    if (zmq_send(s->router, buf, n, ZMQ_DONTWAIT) < 0) count_dropped(s, zmq_strerror(zmq_errno()));
  }
  if (buf != stackbuf) free(buf);
}

void khz_send_error(khzServer *s, const khzPeer *p, int code, uint64_t seq, int applied,
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
void khz_send_reply(khzServer *s, const khzPeer *p, Khz__V1__Reply *r) {
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

void khz_reply_error(khzServer *s, const khzPeer *p, uint64_t id, int code, const char *fmt, ...) {
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
  khz_send_reply(s, p, &r);
}

void khz_reply_ok(khzServer *s, const khzPeer *p, uint64_t id, uint64_t seq) {
  Khz__V1__Reply r;
  khz__v1__reply__init(&r);
  r.id = id;
  r.state_seq = seq;
  khz_send_reply(s, p, &r);
}

/* ------------------------------------------------------------ routing -- */

/* the largest ClientMessage this model needs, with room to spare: a Command's
 * five arrays of na doubles, a Reset's nq, names and settings; at least
 * KHZ_MSG_MIN_BYTES */
int64_t khz_server_maxMessage(const khzModel *m, int na) {
  int64_t need = 4096 + 2 * (int64_t)(5 * na + m->nq) * 10;
  return need > KHZ_MSG_MIN_BYTES ? need : KHZ_MSG_MIN_BYTES;
}

/* one ROUTER message: identity, [empty delimiter], payload */
static void handle_message(khzServer *s, const khzPeer *p, const uint8_t *data, size_t len) {
  khz_peer_client(s, p); /* every sender is counted as a client */
  if ((int64_t)len > s->max_msg) { /* transports that do not enforce ZMQ_MAXMSGSIZE */
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__BAD_MESSAGE, 0, 0,
                   "a message of %zu bytes is over this server's limit of %lld bytes: not decoded",
                   len, (long long)s->max_msg);
    return;
  }
  Khz__V1__ClientMessage *msg = khz__v1__client_message__unpack(NULL, len, data);
  if (!msg) {
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__BAD_MESSAGE, 0, 0,
                   "could not decode a khz.v1.ClientMessage from %zu bytes (truncated or not protobuf)",
                   len);
    return;
  }
  switch (msg->body_case) {
    case KHZ__V1__CLIENT_MESSAGE__BODY_COMMAND:
      khz_commands_command(s, p, msg->command);
      break;
    case KHZ__V1__CLIENT_MESSAGE__BODY_HAPTIC:
      khz_commands_haptic(s, p, msg->haptic);
      break;
    case KHZ__V1__CLIENT_MESSAGE__BODY_REQUEST:
      khz_requests_handle(s, p, msg->request);
      break;
    default:
      khz_send_error(s, p, KHZ__V1__ERROR_CODE__UNKNOWN_TYPE, 0, 0,
                     "unknown message type: a ClientMessage holds a command, a haptic input or a "
                     "request (khz.v1)");
      break;
  }
  khz__v1__client_message__free_unpacked(msg, NULL);
}

void khz_server_handleBytes(khzServer *s, const uint8_t *id, size_t idlen, const uint8_t *data,
                            size_t len) {
  khzPeer peer;
  memset(&peer, 0, sizeof peer);
  peer.idlen = idlen < KHZ_PEER_ID_MAX ? idlen : KHZ_PEER_ID_MAX;
  memcpy(peer.id, id, peer.idlen);
  handle_message(s, &peer, data, len);
  khz_publish_states(s);
  khz_requests_loopReplies(s);
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
    khz_send_error(s, &peer, KHZ__V1__ERROR_CODE__BAD_MESSAGE, 0, 0,
                   "a message is one frame (REQ sockets: with the empty delimiter)");
  else if (payload)
    handle_message(s, &peer, payload, plen);
  free(payload);
  return 1;
}

/* ZMQ_FD is edge-triggered: read until ZMQ_EVENTS says no input is left, in
 * batches so that a flood cannot hold off the state stream */
static void router_drain(khzServer *s) {
  for (int n = 0; n < KHZ_DRAIN_BATCH; n++) {
    if (!khz_has_input(s->router) || !router_recv_one(s)) return;
  }
  if (khz_has_input(s->router)) ev_feed_event(s->ev, &s->router_io, EV_READ);
}

static void router_cb(struct ev_loop *ev, ev_io *w, int revents) {
  (void)ev, (void)revents;
  router_drain(w->data);
}

/* the loop's wake-up: publish every state, answer every reply. A send on the
 * ROUTER may take the edge of its ZMQ_FD (libzmq processes its commands), so
 * the ROUTER is drained after one (here, or at the next wake for the sends of
 * other callbacks), and at least every KHZ_DRAIN_EVERY_NS as before (every
 * wake up to 1 kHz); at haptic rates a drain at every wake cost ZMQ_EVENTS'
 * two system calls per state (getpid, poll) on the I/O side's CPU. */
static void wake_cb(struct ev_loop *ev, ev_async *w, int revents) {
  khzServer *s = w->data;
  (void)ev, (void)revents;
  int64_t now = khz_loop_now();
  if (s->io.wakes && now - s->io_last_wake > s->io.gap_max_ns) s->io.gap_max_ns = now - s->io_last_wake;
  s->io_last_wake = now;
  s->io.wakes++;
  khz_publish_states(s);
  khz_requests_loopReplies(s);
  if (s->router_sent || now - s->io_last_drain >= KHZ_DRAIN_EVERY_NS) {
    s->router_sent = 0;
    s->io_last_drain = now;
    router_drain(s);
  }
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
  int zero = 0, one = 1;
  int hwm = s->cfg.pub_hwm ? s->cfg.pub_hwm : khz_server_pubHwm(s->io.state_ring);
  if (!sock) {
    khz_server_fail(err, errsz, "cannot create a socket: %s", zmq_strerror(zmq_errno()));
    return NULL;
  }
  zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof zero);
  /* inbound size limits: libzmq drops a connection that sends more, before
   * anything is allocated for the message or decoded */
  int64_t maxmsg = type == ZMQ_ROUTER ? s->max_msg : KHZ_PUB_MAXMSG;
  zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
  if (type == ZMQ_PUB) zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
  if (type == ZMQ_ROUTER) {
    int sndhwm = KHZ_ROUTER_SNDHWM;
    zmq_setsockopt(sock, ZMQ_SNDHWM, &sndhwm, sizeof sndhwm);
    zmq_setsockopt(sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
  }
  if (s->curve) {
    zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one);
    zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, s->secret, 40);
    zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, "khz", 3);
  }
  if (zmq_bind(sock, ep) != 0) {
    khz_server_fail(err, errsz, "cannot bind %s: %s", ep, zmq_strerror(zmq_errno()));
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
    if (b < 1) return khz_server_fail(err, errsz, "haptic proxy %d: no body named '%s'", i, h->body);
    s->haptic[i].body = b;
    s->haptic[i].stiffness = h->stiffness;
    s->haptic[i].damping = h->damping;
    s->haptic[i].rot_stiffness = h->rot_stiffness;
    s->haptic[i].rot_damping = h->rot_damping;
  }
  return 0;
}

/* The settings mass_scale, friction and hil_seed: edits of the loaded
 * scene's spec (the loader's, as khz.sim makes them for a campaign run in
 * process), then the model compiled again. An error stops the start. */
static int scene_edits(khzServer *s, char *err, size_t errsz) {
  const khzServerConfig *c = &s->cfg;
  char msg[512], *end;
  if (c->hil_seed[0]) {
    errno = 0;
    unsigned long long seed = strtoull(c->hil_seed, &end, 10);
    if (*end || errno || c->hil_seed[0] == '-' || c->hil_seed[0] == '+')
      return khz_server_fail(err, errsz, "setting 'hil_seed': '%s' is not an unsigned 64-bit "
                             "integer", c->hil_seed);
    khz_scene_setSeed(&s->scene, (uint64_t)seed);
  }
  if (!c->mass_scale[0] && !c->friction[0]) return 0;
  if (c->friction[0]) {
    double mu = strtod(c->friction, &end);
    if (*end || end == c->friction)
      return khz_server_fail(err, errsz, "setting 'friction': '%s' is not a number", c->friction);
    if (khz_scene_setFriction(&s->scene, mu, msg, sizeof msg) < 0)
      return khz_server_fail(err, errsz, "setting 'friction': %s", msg);
  }
  if (c->mass_scale[0]) {
    /* "F" (every body) or "BODY=F,BODY=F,..." */
    double all = strtod(c->mass_scale, &end);
    if (!*end && end != c->mass_scale) {
      if (khz_scene_scaleMass(&s->scene, NULL, all, msg, sizeof msg) < 0)
        return khz_server_fail(err, errsz, "setting 'mass_scale': %s", msg);
    } else {
      char list[KHZ_SETTING_STR], *save = NULL;
      snprintf(list, sizeof list, "%s", c->mass_scale);
      for (char *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strrchr(item, '=');
        double f = eq ? strtod(eq + 1, &end) : 0;
        if (!eq || eq == item || *end || end == eq + 1)
          return khz_server_fail(err, errsz, "setting 'mass_scale': '%s' is not a factor or "
                                 "body=factor,... (item '%s')", c->mass_scale, item);
        *eq = '\0';
        if (khz_scene_scaleMass(&s->scene, item, f, msg, sizeof msg) < 0)
          return khz_server_fail(err, errsz, "setting 'mass_scale': %s", msg);
      }
    }
  }
  khzModel *m = khz_compile(s->scene.spec, msg, sizeof msg);
  if (!m)
    return khz_server_fail(err, errsz, "scene '%s' with mass_scale '%s', friction '%s': %s",
                           s->scene.name, c->mass_scale, c->friction, msg);
  khz_deleteModel(&s->m);
  s->m = m;
  khz_log(KHZ_LOG_INFO, "scene '%s': mass_scale '%s', friction '%s'", s->scene.name,
          c->mass_scale, c->friction);
  return 0;
}

/* io_cpus: the CPUs this thread may run on less the loop's (cpu >= 0), when
 * any are left; the I/O thread and libzmq's threads run there. Appends what
 * was done to io_report. */
static void io_keep_off(khzServer *s, int cpu) {
  size_t n = strlen(s->io_report);
  s->io_pinned = 0;
  if (cpu < 0) return;
  if (sched_getaffinity(0, sizeof s->io_cpus, &s->io_cpus) != 0) {
    snprintf(s->io_report + n, sizeof s->io_report - n, "; not kept off CPU %d (%s)", cpu, strerror(errno));
    return;
  }
  if (cpu < CPU_SETSIZE) CPU_CLR(cpu, &s->io_cpus);
  if (CPU_COUNT(&s->io_cpus) == 0) {
    snprintf(s->io_report + n, sizeof s->io_report - n, "; share CPU %d with the loop (no other CPU)", cpu);
    return;
  }
  s->io_pinned = 1;
  int len = snprintf(s->io_report + n, sizeof s->io_report - n, "; kept off the loop's CPU %d (on", cpu);
  for (int k = 0; k < CPU_SETSIZE && len > 0 && (size_t)len < sizeof s->io_report - n; k++)
    if (CPU_ISSET(k, &s->io_cpus))
      len += snprintf(s->io_report + n + len, sizeof s->io_report - n - (size_t)len, " %d", k);
  if (len > 0 && (size_t)len < sizeof s->io_report - n)
    snprintf(s->io_report + n + len, sizeof s->io_report - n - (size_t)len, ")");
}

static int server_init(khzServer *s, char *err, size_t errsz) {
  char msg[1024];
  const khzServerConfig *c = &s->cfg;
  khz_log_level = c->log_level;

  /* security first: a non-loopback bind needs CURVE keys and a client list */
  if (khz_curve_setup(s, err, errsz)) return -1;

  /* the model and the scene's extras */
  s->m = khz_loadModel(c->scene, &s->scene, msg, sizeof msg);
  if (!s->m) return khz_server_fail(err, errsz, "%s", msg);
  s->have_scene = 1;
  if (scene_edits(s, err, errsz)) return -1;
  s->scene_method = s->m->contact.method;
  if (c->contact_method[0] && khz_contactMethodFromName(c->contact_method) < 0)
    return khz_server_fail(err, errsz, "setting 'contact_method': unknown method '%s'", c->contact_method);
  if (c->contact_method[0] && khz_contactMethodRefusal(s->m, khz_contactMethodFromName(c->contact_method)))
    return khz_server_fail(err, errsz, "setting 'contact_method' '%s': %s", c->contact_method,
                           khz_contactMethodRefusal(s->m, khz_contactMethodFromName(c->contact_method)));
  if (scene_haptics(s, err, errsz)) return -1;
  s->na = khz_loop_actuators(s->m, NULL);
  s->max_msg = khz_server_maxMessage(s->m, s->na);
  s->owner = calloc((size_t)(s->na + s->nhaptic) + 1, sizeof *s->owner);
  if (!s->owner) return khz_server_fail(err, errsz, "out of memory");
  s->act_dof = calloc((size_t)s->na + 1, sizeof(int));
  if (!s->act_dof || khz_codec_init(&s->codec, s->m->nbody)) return khz_server_fail(err, errsz, "out of memory");
  khz_loop_actuators(s->m, s->act_dof);
  if (khz_commands_init(s)) return khz_server_fail(err, errsz, "out of memory");

  /* the loop's state ring, sized once here for both the loop and the PUB
   * socket's high-water mark (khz_server_pubHwm) */
  s->io.state_ring = c->state_ring ? c->state_ring : khz_server_stateRing(khz_requests_rate(s, c));

  /* a generation that differs from run to run */
  s->generation = (uint32_t)((uint64_t)khz_loop_now() ^ ((uint64_t)getpid() << 16)) | 1u;

  /* sockets: the ZAP handler before anything that authenticates */
  s->ctx = zmq_ctx_new();
  if (!s->ctx) return khz_server_fail(err, errsz, "cannot create a ZeroMQ context");

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
  /* ... and off the loop's CPU when the loop is pinned (cpu): the timer that
   * wakes the loop comes tens of us later to a CPU that runs this side
   * (measured at 10 kHz: docs/server.md, "Haptic rate: what the loop's CPU
   * runs"); libzmq's threads take the set when the first socket starts them */
  io_keep_off(s, c->cpu);
  for (int k = 0; s->io_pinned && k < CPU_SETSIZE; k++)
    if (CPU_ISSET(k, &s->io_cpus)) zmq_ctx_set(s->ctx, ZMQ_THREAD_AFFINITY_CPU_ADD, k);
  if (s->curve) {
    s->zap = zmq_socket(s->ctx, ZMQ_REP);
    if (!s->zap || zmq_bind(s->zap, "inproc://zeromq.zap.01"))
      return khz_server_fail(err, errsz, "cannot start the CURVE authentication handler");
  }
  if (!(s->pub = make_socket(s, ZMQ_PUB, c->state_endpoint, err, errsz))) return -1;
  if (!(s->router = make_socket(s, ZMQ_ROUTER, c->command_endpoint, err, errsz))) return -1;

  /* the event loop and its watchers */
  s->ev = s->hooks.install_signals ? ev_default_loop(EVFLAG_AUTO) : ev_loop_new(EVFLAG_AUTO);
  if (!s->ev) return khz_server_fail(err, errsz, "cannot create the event loop");
  ev_io_init(&s->router_io, router_cb, fd_of(s->router), EV_READ);
  s->router_io.data = s;
  ev_io_start(s->ev, &s->router_io);
  if (s->zap) {
    ev_io_init(&s->zap_io, khz_curve_zapCb, fd_of(s->zap), EV_READ);
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
    /* main() blocked both until now; a signal that came early is taken here */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &stop_signals, NULL);
  }
  ev_timer_init(&s->keepalive_timer, khz_publish_keepaliveCb, KHZ_KEEPALIVE_S, KHZ_KEEPALIVE_S);
  s->keepalive_timer.data = s;
  ev_timer_start(s->ev, &s->keepalive_timer);
  ev_timer_init(&s->stats_timer, khz_publish_statsCb, c->stats_interval_s, c->stats_interval_s);
  s->stats_timer.data = s;
  if (c->stats_interval_s > 0) ev_timer_start(s->ev, &s->stats_timer);
  ev_timer_init(&s->duration_timer, duration_cb, c->duration_s, 0);
  s->duration_timer.data = s;

  /* recordings: the directory clients may record into, and the operator's
   * recording from the start */
  ev_async_init(&s->rec_async, khz_record_doneCb);
  s->rec_async.data = s;
  ev_async_start(s->ev, &s->rec_async);
  ev_timer_init(&s->rec_timer, khz_record_timeoutCb, 5.0, 0);
  s->rec_timer.data = s;
  if (c->record_dir[0]) {
    s->rec_dirfd = open(c->record_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->rec_dirfd < 0)
      return khz_server_fail(err, errsz, "setting 'record_dir': cannot open the directory '%s': %s",
                             c->record_dir, strerror(errno));
  }
  if (c->record[0] && khz_record_start(s, AT_FDCWD, c->record, msg, sizeof msg))
    return khz_server_fail(err, errsz, "setting 'record': %s", msg);

  /* the loop thread */
  khzLoopConfig lc;
  khz_loop_defaultConfig(&lc);
  lc.rate_hz = khz_requests_rate(s, c);
  lc.mode = c->mode;
  lc.start_paused = c->paused;
  lc.rt_priority = c->rt_priority;
  lc.cpu = c->cpu;
  lc.threads = c->threads > 0 ? c->threads : s->scene.threads > 0 ? s->scene.threads : 1;
  lc.spin_us = c->spin_us;
  lc.cpu_clock = c->cpu_clock;
  lc.verify_overruns = c->verify_overruns;
  lc.lock_memory = c->lock_memory;
  lc.dma_latency_us = c->cpu_dma_latency_us;
  lc.watchdog_s = c->watchdog_ms / 1000;
  lc.safe = c->safe_command;
  lc.safe_damping = c->safe_damping;
  lc.lockstep_timeout_s = c->lockstep_timeout_ms / 1000;
  lc.haptic_timeout_s = c->haptic_timeout_ms / 1000;
  lc.publish_contacts = c->publish_contacts;
  lc.publish_hash = c->publish_hash;
  lc.state_ring = s->io.state_ring;
  lc.request_ring = KHZ_MAX_PENDING; /* every request in flight fits */
  lc.nhaptic = s->nhaptic;
  memcpy(lc.haptic, s->haptic, sizeof lc.haptic);
  lc.net = s->scene.hil.network;
  lc.nfault_event = s->scene.hil.nfault;
  lc.fault_event = s->scene.hil.fault;
  if (s->scene.hil.nsensor || s->scene.hil.ndrive) {
    const khzSceneHil *h = &s->scene.hil;
    s->hil = khz_hilCreate(s->m, h->sensor, h->nsensor, h->drive, h->ndrive, h->seed,
                           1.0 / lc.rate_hz, msg, sizeof msg);
    if (!s->hil) return khz_server_fail(err, errsz, "scene '%s': hil: %s", s->scene.name, msg);
  }
  lc.hil = s->hil;
  double *gains = calloc(2 * (size_t)s->na + 1, sizeof(double));
  if (!gains) return khz_server_fail(err, errsz, "out of memory");
  for (int i = 0; i < s->na; i++) gains[i] = c->kp, gains[s->na + i] = c->kd;
  if (khz_loop_checkGains(s->m, s->act_dof, s->na, gains, gains + s->na, 1.0 / lc.rate_hz, msg,
                          sizeof msg)) {
    free(gains);
    return khz_server_fail(err, errsz, "settings 'kp', 'kd': %s", msg);
  }
  s->stable_h = khz_loop_stableTimestep(s->m, s->stable_what, sizeof s->stable_what);
  if (khz_loop_stabilityWarningFor(s->m, s->stable_h, s->stable_what, 1.0 / lc.rate_hz, msg, sizeof msg))
    khz_log(KHZ_LOG_WARN, "scene '%s': %s", s->scene.name, msg);
  lc.kp = gains;
  lc.kd = gains + s->na;
  lc.nactuator = s->nu;
  lc.actuator = s->loop_act;
  lc.actuator_start = s->nu > 0 && khz_commands_startStable(s, 1.0 / lc.rate_hz, msg, sizeof msg);
  if (s->nu > 0 && !lc.actuator_start) khz_log(KHZ_LOG_WARN, "scene '%s': %s", s->scene.name, msg);
  lc.wake = loop_wake;
  lc.wake_user = s;
  lc.thread_init = s->hooks.rt_thread_init;
  lc.thread_init_user = s->hooks.rt_thread_init_user;
  lc.trace = s->hooks.trace;
  s->loop = khz_loop_new(s->m, &lc, msg, sizeof msg);
  free(gains);
  if (!s->loop) return khz_server_fail(err, errsz, "%s", msg);

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
    khz_server_fail(err, errsz, "out of memory");
    return NULL;
  }
  s->rec_dirfd = -1;
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
  if (s->io_pinned) pthread_setaffinity_np(pthread_self(), sizeof s->io_cpus, &s->io_cpus);
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
  khz_hilFree(&s->hil);
  if (s->rec) {
    khz_recorder_free(&s->rec); /* writes what is queued, closes */
  }
  if (s->rec_dirfd >= 0) close(s->rec_dirfd);
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
  khz_commands_free(s);
  free(s->act_dof);
  free(s->owner);
  khz_deleteModel(&s->m);
  if (s->have_scene) khz_deleteScene(&s->scene);
  free(s);
  *s_p = NULL;
}

const char *khz_server_report(const khzServer *s) { return khz_loop_report(s->loop); }

int khz_server_stateRing(double rate_hz) {
  int n = KHZ_STATE_RING_MIN;
  while (n < rate_hz * KHZ_STATE_RING_S) n *= 2;
  return n;
}

int khz_server_pubHwm(int state_ring) {
  return 4 * state_ring > KHZ_PUB_HWM_MIN ? 4 * state_ring : KHZ_PUB_HWM_MIN;
}

void khz_server_ioStats(const khzServer *s, khzServerIoStats *out) { *out = s->io; }

uint32_t khz_server_generation(const khzServer *s) { return s->generation; }
