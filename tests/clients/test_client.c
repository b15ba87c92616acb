/* test_client.c — the C client library (clients/c) against real khz-server
 * processes and fake servers: lookups by name, states (in order, newest,
 * callback), commands, server errors, control requests, CURVE; and the error
 * paths a person meets: no server (the endpoint is named), a server restarted
 * mid-stream (the client reconnects and re-fetches the model), a server of
 * another protocol version, malformed replies and states.
 *
 *   test_client KHZ-SERVER      (KHZ_SOURCE_ROOT: the source tree, for scenes)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <zmq.h>

#include "clients/spawn.h"
#include "ensure.h"
#include "khz/client.h"

static const char *exe;

/* --------------------------------------------------------- no server -- */

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

static void test_absent(void) {
  char err[256], st_ep[64], cmd_ep[64];
  server s;
  ENSURE(server_dir(&s) == 0);

  /* ipc: the socket file is missing, and the message says so */
  khzClient *c = khz_client_new(s.state_ep, s.cmd_ep, NULL, err, sizeof err);
  ENSURE(c != NULL);
  ENSURE(khz_client_describe(c, 300) == NULL);
  ENSURE(khz_client_status(c) == KHZ_CLIENT_NOT_CONNECTED);
  ENSURE_MSG(strstr(khz_client_error(c), s.cmd_ep) && strstr(khz_client_error(c), "does not exist"),
             "%s", khz_client_error(c));
  printf("absent (ipc): %s\n", khz_client_error(c));
  double tau[7] = {0};
  ENSURE(khz_client_sendTorques(c, NULL, tau, 7) == -1 &&
         khz_client_status(c) == KHZ_CLIENT_BAD_ARGUMENT);
  ENSURE(khz_client_latestState(c, 100) == NULL && khz_client_status(c) == KHZ_CLIENT_TIMEOUT);
  ENSURE(strstr(khz_client_error(c), s.state_ep) != NULL);
  khz_client_destroy(&c);
  ENSURE(c == NULL);

  /* tcp: nothing listens on the port */
  int port = free_port();
  snprintf(st_ep, sizeof st_ep, "tcp://127.0.0.1:%d", port);
  snprintf(cmd_ep, sizeof cmd_ep, "tcp://127.0.0.1:%d", port + 1);
  c = khz_client_new(st_ep, cmd_ep, NULL, err, sizeof err);
  ENSURE(c && khz_client_describe(c, 300) == NULL);
  ENSURE(c && khz_client_status(c) == KHZ_CLIENT_NOT_CONNECTED);
  ENSURE_MSG(c && strstr(khz_client_error(c), cmd_ep) && strstr(khz_client_error(c), "khz-server"),
             "%s", c ? khz_client_error(c) : "");
  printf("absent (tcp): %s\n", c ? khz_client_error(c) : "");
  khz_client_destroy(&c);

  /* a malformed endpoint: refused at once */
  c = khz_client_new("tcp://", "nonsense", NULL, err, sizeof err);
  ENSURE(c == NULL && strstr(err, "tcp://"));
  printf("bad endpoint: %s\n", err);
  server_cleanup(&s);
}

/* ------------------------------------------------------- a live server -- */

typedef struct counter {
  int n;
  uint64_t last;
  int in_order;
} counter;

static void count_state(khzClient *c, const Khz__V1__State *st, void *user) {
  counter *k = user;
  (void)c;
  if (k->n && st->seq != k->last + 1) k->in_order = 0;
  k->last = st->seq;
  k->n++;
}

static void test_live(void) {
  server s;
  char err[256];
  ENSURE(server_dir(&s) == 0);
  ENSURE(server_start(&s, exe, NULL) == 0);
  setenv("KHZ_STATE_ENDPOINT", s.state_ep, 1); /* NULL endpoints: from the environment */
  setenv("KHZ_COMMAND_ENDPOINT", s.cmd_ep, 1);
  khzClient *c = khz_client_new(NULL, NULL, NULL, err, sizeof err);
  unsetenv("KHZ_STATE_ENDPOINT");
  unsetenv("KHZ_COMMAND_ENDPOINT");
  ENSURE(c && !strcmp(khz_client_commandEndpoint(c), s.cmd_ep));
  const Khz__V1__ModelDescription *md = c ? khz_client_describe(c, 3000) : NULL;
  ENSURE_MSG(md != NULL, "%s", c ? khz_client_error(c) : err);
  if (!md) {
    khz_client_destroy(&c);
    server_cleanup(&s);
    return;
  }
  ENSURE(md->na == 7 && md->nq == 42 && md->nv == 37 && khz_client_model(c) == md);
  ENSURE(khz_client_describe(c, 3000) == md); /* held, not fetched again */

  /* lookups: exact and short names; unknown ones list what there is */
  ENSURE(khz_client_actuatorIndex(c, "arm/joint3") == 2);
  ENSURE(khz_client_actuatorIndex(c, "joint3") == 2);
  ENSURE(khz_client_actuatorIndex(c, "joint9") == -1);
  ENSURE(khz_client_status(c) == KHZ_CLIENT_UNKNOWN_NAME);
  ENSURE_MSG(strstr(khz_client_error(c), "joint9") && strstr(khz_client_error(c), "arm/joint7"),
             "%s", khz_client_error(c));
  printf("unknown name: %s\n", khz_client_error(c));
  int box1 = khz_client_bodyIndex(c, "box1");
  ENSURE(box1 > 0 && !strcmp(md->bodies[box1]->name, "box1"));
  ENSURE(khz_client_bodyIndex(c, "link3") > 0); /* arm/link3 */
  const Khz__V1__JointInfo *j2 = khz_client_joint(c, "joint2");
  ENSURE(j2 && j2->q_index == 1 && j2->actuator == 1);
  ENSURE(khz_client_proxyIndex(c, "proxy") == -1);

  /* states: in order, newest, by callback */
  const Khz__V1__State *st = khz_client_nextState(c, 2000);
  ENSURE(st && st->n_q == 42 && khz_client_state(c) == st);
  uint64_t last = st ? st->seq : 0;
  int in_order = 1;
  for (int i = 0; i < 50 && st; i++) {
    st = khz_client_nextState(c, 2000);
    if (st && st->seq != last + 1) in_order = 0;
    if (st) last = st->seq;
  }
  ENSURE(st && in_order);
  nap_ms(50);
  st = khz_client_latestState(c, 0);
  ENSURE(st && st->seq > last + 1);
  ENSURE(khz_client_counters(c)->states_skipped > 0);
  counter k = {0, 0, 1};
  khz_client_onState(c, count_state, &k);
  ENSURE(khz_client_fd(c) >= 0);
  for (int i = 0; i < 20; i++) khz_client_dispatch(c, 100);
  ENSURE(k.n >= 20 && k.in_order);

  /* commands: the wrong length is caught here; right ones are applied */
  double tau[7] = {0}, q_target[7];
  ENSURE(khz_client_sendTorques(c, NULL, tau, 6) == -1 &&
         khz_client_status(c) == KHZ_CLIENT_BAD_ARGUMENT);
  st = khz_client_latestState(c, 1000);
  for (int a = 0; a < 7 && st; a++) q_target[a] = st->q[md->actuators[a]->q_index];
  ENSURE(st && khz_client_sendTargets(c, st, q_target, NULL, NULL, NULL, NULL, 7) == 0);
  ENSURE(st && khz_client_sendTorques(c, st, tau, 7) == 0);
  uint64_t mine = khz_client_counters(c)->commands;
  int applied = 0;
  for (int i = 0; i < 200 && !applied; i++) {
    st = khz_client_nextState(c, 1000);
    applied = st && st->command_seq == mine;
  }
  ENSURE_MSG(applied, "command %llu never applied", (unsigned long long)mine);

  /* a command the server rejects: the Error comes back to this client */
  Khz__V1__Command bad = KHZ__V1__COMMAND__INIT;
  bad.model_generation = md->model_generation;
  bad.seq = 4242;
  bad.state_seq = st ? st->seq : 0;
  bad.n_tau = 3;
  bad.tau = tau;
  ENSURE(khz_client_command(c, &bad) == 0);
  const Khz__V1__Error *e = khz_client_nextError(c, 2000);
  ENSURE(e && e->code == KHZ__V1__ERROR_CODE__WRONG_SIZE && e->command_seq == 4242);
  if (e) printf("server error: %s\n", e->message);

  /* control requests */
  ENSURE(khz_client_pause(c, 2000) == 0);
  nap_ms(30);
  khz_client_latestState(c, 0); /* drain */
  ENSURE(khz_client_nextState(c, 150) == NULL);
  ENSURE(khz_client_step(c, 5, 3000) == 0);
  int stepped = 0;
  while (khz_client_nextState(c, 200)) stepped++;
  ENSURE_MSG(stepped == 5, "stepped %d", stepped);
  ENSURE(khz_client_resume(c, 2000) == 0);
  ENSURE(khz_client_nextState(c, 1000) != NULL);
  ENSURE(khz_client_setSetting(c, "watchdog_ms", "250", 2000) == 0);
  const char *v = khz_client_getSetting(c, "watchdog_ms", 2000);
  ENSURE(v && atof(v) == 250);
  ENSURE(khz_client_setSetting(c, "colour", "blue", 2000) == -1 &&
         khz_client_status(c) == KHZ_CLIENT_UNKNOWN_NAME);
  ENSURE(strstr(khz_client_error(c), "colour") != NULL);
  const Khz__V1__Stats *stats = khz_client_getStats(c, 2000);
  ENSURE(stats && stats->tick->ticks >= 5 && stats->lateness->count > 0); /* 5: the step above */
  double f[3] = {0, 0, 20};
  ENSURE(khz_client_applyWrench(c, "box1", f, NULL, 0.1, 2000) == 0);
  ENSURE(khz_client_applyWrench(c, "no_such_body", f, NULL, 0.1, 2000) == -1 &&
         khz_client_status(c) == KHZ_CLIENT_UNKNOWN_NAME);
  ENSURE(khz_client_clearWrenches(c, 2000) == 0);
  ENSURE(khz_client_setContactMethod(c, "bogus", 2000) == -1);
  ENSURE(strstr(khz_client_error(c), "bogus") != NULL);
  ENSURE(khz_client_setMode(c, KHZ__V1__MODE__MODE_LOCKSTEP, 2000) == 0);
  ENSURE(khz_client_setMode(c, KHZ__V1__MODE__MODE_REALTIME, 2000) == 0);
  ENSURE(khz_client_setRate(c, 5, 2000) == -1 && khz_client_status(c) == KHZ_CLIENT_REFUSED);
  ENSURE(khz_client_reset(c, NULL, 0, 2000) == 0);
  ENSURE(khz_client_lastReply(c) && khz_client_lastReply(c)->state_seq > 0);
  ENSURE(khz_client_counters(c)->malformed == 0 && khz_client_counters(c)->arena_grows == 0);

  khz_client_destroy(&c);
  ENSURE(server_stop(&s) == 0);
  server_cleanup(&s);
}

/* --------------------------------------------------------- a restart -- */

static void test_restart(void) {
  server s;
  char err[256];
  ENSURE(server_dir(&s) == 0);
  ENSURE(server_start(&s, exe, NULL) == 0);
  khzClient *c = khz_client_new(s.state_ep, s.cmd_ep, NULL, err, sizeof err);
  const Khz__V1__ModelDescription *md = c ? khz_client_describe(c, 3000) : NULL;
  ENSURE(md && khz_client_nextState(c, 2000));
  uint32_t gen1 = md ? md->model_generation : 0;
  ENSURE(khz_client_modelChanged(c) == 0);

  /* the server goes away mid-stream: no states, commands are dropped (never queued) */
  ENSURE(server_stop(&s) == 0);
  double tau[7] = {0};
  while (khz_client_nextState(c, 0)) { /* the states queued before it stopped */
  }
  ENSURE(khz_client_nextState(c, 200) == NULL);
  ENSURE(khz_client_sendTorques(c, NULL, tau, 7) == -1 &&
         khz_client_status(c) == KHZ_CLIENT_NOT_CONNECTED);
  printf("server gone: %s\n", khz_client_error(c));

  /* another server on the same endpoints, another scene: the client resyncs by itself */
  char scene[512];
  const char *root = getenv("KHZ_SOURCE_ROOT");
  snprintf(scene, sizeof scene, "%s/scenes/haptic_wall.yaml", root ? root : ".");
  const char *extra[] = {"--scene", scene, NULL};
  ENSURE(server_start(&s, exe, extra) == 0);
  const Khz__V1__State *st = NULL;
  for (int i = 0; i < 100; i++) {
    st = khz_client_nextState(c, 100);
    if (st && st->model_generation != gen1) break;
  }
  ENSURE(st && st->model_generation != gen1);
  ENSURE(khz_client_modelChanged(c) == 1 && khz_client_modelChanged(c) == 0);
  md = khz_client_model(c);
  ENSURE(md && st && md->model_generation == st->model_generation && md->nq == 7 && md->na == 0);
  ENSURE(md && !strcmp(md->scene, "haptic_wall"));
  ENSURE(khz_client_counters(c)->resyncs == 1);

  /* commands now carry the new generation and are taken */
  ENSURE(khz_client_sendTorques(c, NULL, tau, 7) == -1); /* the old model's size: caught here */
  double pos[3] = {0.01, 0, 0.3};
  int sent = 0;
  for (int i = 0; i < 50 && !sent; i++) { /* the DEALER reconnects shortly after the SUB */
    sent = khz_client_sendHaptic(c, 0, pos, NULL, NULL, NULL) == 0;
    if (!sent) nap_ms(20);
  }
  ENSURE(sent);
  ENSURE(khz_client_nextError(c, 200) == NULL); /* not WRONG_GENERATION */
  int stale = 1;
  for (int i = 0; i < 300 && stale; i++) {
    st = khz_client_nextState(c, 1000);
    stale = st && (st->flags & KHZ__V1__STATE_FLAG__FLAG_HAPTIC_STALE);
  }
  ENSURE_MSG(!stale, "the haptic input was not taken by the new server");
  khz_client_destroy(&c);
  ENSURE(server_stop(&s) == 0);
  server_cleanup(&s);
}

/* ------------------------------------------------------ fake servers -- */

typedef enum fake_mode {
  FAKE_GARBAGE,   /* bytes that are not a ServerMessage */
  FAKE_V2_REPLY,  /* Reply UNKNOWN_TYPE naming khz.v2 */
  FAKE_V2_ERROR,  /* Error BAD_MESSAGE: the request could not be decoded */
  FAKE_BAD_MODEL, /* a description whose indices are out of range */
  FAKE_BAD_STATES /* answers Describe properly, publishes undecodable states */
} fake_mode;

typedef struct fake {
  fake_mode mode;
  void *ctx, *router, *pub;
  atomic_int stop;
  pthread_t thread;
} fake;

static void fake_send(fake *f, zmq_msg_t *id, const void *data, size_t len) {
  zmq_msg_send(id, f->router, ZMQ_SNDMORE);
  zmq_send(f->router, data, len, 0);
}

static size_t fake_model(uint8_t *buf, uint64_t id, int bad) {
  Khz__V1__ServerMessage sm = KHZ__V1__SERVER_MESSAGE__INIT;
  Khz__V1__Reply r = KHZ__V1__REPLY__INIT;
  Khz__V1__ModelDescription d = KHZ__V1__MODEL_DESCRIPTION__INIT;
  Khz__V1__Actuator a = KHZ__V1__ACTUATOR__INIT, *ap = &a;
  d.model_generation = 77;
  d.scene = "fake";
  d.rate_hz = 1000;
  d.nq = d.nv = 2;
  d.na = 1;
  d.n_actuators = 1;
  d.actuators = &ap;
  a.name = "j";
  a.q_index = bad ? 5 : 0;
  r.id = id;
  r.result_case = KHZ__V1__REPLY__RESULT_MODEL;
  r.model = &d;
  sm.body_case = KHZ__V1__SERVER_MESSAGE__BODY_REPLY;
  sm.reply = &r;
  return khz__v1__server_message__pack(&sm, buf);
}

static void *fake_run(void *arg) {
  fake *f = arg;
  uint8_t buf[1024];
  while (!atomic_load(&f->stop)) {
    if (f->mode == FAKE_BAD_STATES) {
      zmq_send(f->pub, "state", 5, ZMQ_SNDMORE);
      zmq_send(f->pub, "\xff\xff\xff garbage", 12, 0);
    }
    zmq_pollitem_t it = {f->router, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, 5) <= 0) continue;
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    zmq_msg_recv(&id, f->router, 0);
    zmq_msg_recv(&body, f->router, 0);
    Khz__V1__ClientMessage *m =
        khz__v1__client_message__unpack(NULL, zmq_msg_size(&body), zmq_msg_data(&body));
    uint64_t rid = m && m->request ? m->request->id : 0;
    if (m) khz__v1__client_message__free_unpacked(m, NULL);
    Khz__V1__ServerMessage sm = KHZ__V1__SERVER_MESSAGE__INIT;
    Khz__V1__Reply r = KHZ__V1__REPLY__INIT;
    Khz__V1__Error e = KHZ__V1__ERROR__INIT;
    size_t n = 0;
    switch (f->mode) {
      case FAKE_GARBAGE:
        fake_send(f, &id, "\xff\xfe not protobuf", 16);
        break;
      case FAKE_V2_REPLY:
        r.id = rid;
        r.code = KHZ__V1__ERROR_CODE__UNKNOWN_TYPE;
        r.error = "unknown request type (field 2): this server speaks khz.v2";
        sm.body_case = KHZ__V1__SERVER_MESSAGE__BODY_REPLY;
        sm.reply = &r;
        n = khz__v1__server_message__pack(&sm, buf);
        fake_send(f, &id, buf, n);
        break;
      case FAKE_V2_ERROR:
        e.code = KHZ__V1__ERROR_CODE__BAD_MESSAGE;
        e.message = "could not decode a khz.v2.ClientMessage from 4 bytes";
        sm.body_case = KHZ__V1__SERVER_MESSAGE__BODY_ERROR;
        sm.error = &e;
        n = khz__v1__server_message__pack(&sm, buf);
        fake_send(f, &id, buf, n);
        break;
      case FAKE_BAD_MODEL:
      case FAKE_BAD_STATES:
        n = fake_model(buf, rid, f->mode == FAKE_BAD_MODEL);
        fake_send(f, &id, buf, n);
        break;
    }
    zmq_msg_close(&id);
    zmq_msg_close(&body);
  }
  return NULL;
}

static void fake_start(fake *f, fake_mode mode, const server *s) {
  int zero = 0;
  memset(f, 0, sizeof *f);
  f->mode = mode;
  f->ctx = zmq_ctx_new();
  f->router = zmq_socket(f->ctx, ZMQ_ROUTER);
  f->pub = zmq_socket(f->ctx, ZMQ_PUB);
  zmq_setsockopt(f->router, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(f->pub, ZMQ_LINGER, &zero, sizeof zero);
  ENSURE(zmq_bind(f->router, s->cmd_ep) == 0 && zmq_bind(f->pub, s->state_ep) == 0);
  pthread_create(&f->thread, NULL, fake_run, f);
}

static void fake_stop(fake *f) {
  atomic_store(&f->stop, 1);
  pthread_join(f->thread, NULL);
  zmq_close(f->router);
  zmq_close(f->pub);
  zmq_ctx_term(f->ctx);
}

static void test_fakes(void) {
  static const struct {
    fake_mode mode;
    khzClientStatus status;
    const char *words;
  } cases[] = {
      {FAKE_GARBAGE, KHZ_CLIENT_MALFORMED, "malformed reply"},
      {FAKE_V2_REPLY, KHZ_CLIENT_PROTOCOL, "speaks khz.v2, this client speaks khz.v1"},
      {FAKE_V2_ERROR, KHZ_CLIENT_PROTOCOL, "speaks khz.v2"},
      {FAKE_BAD_MODEL, KHZ_CLIENT_MALFORMED, "q_index 5"},
  };
  char err[256];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    server s;
    fake f;
    ENSURE(server_dir(&s) == 0);
    fake_start(&f, cases[i].mode, &s);
    khzClient *c = khz_client_new(s.state_ep, s.cmd_ep, NULL, err, sizeof err);
    ENSURE(c && khz_client_describe(c, 2000) == NULL);
    ENSURE_MSG(c && khz_client_status(c) == cases[i].status, "case %zu: status %d", i,
               c ? (int)khz_client_status(c) : -1);
    ENSURE_MSG(
        c && strstr(khz_client_error(c), cases[i].words) && strstr(khz_client_error(c), s.cmd_ep),
        "case %zu: %s", i, c ? khz_client_error(c) : "");
    printf("fake server %zu: %s\n", i, c ? khz_client_error(c) : "");
    khz_client_destroy(&c);
    fake_stop(&f);
    server_cleanup(&s);
  }

  /* undecodable states: skipped and counted, never returned */
  server s;
  fake f;
  ENSURE(server_dir(&s) == 0);
  fake_start(&f, FAKE_BAD_STATES, &s);
  khzClient *c = khz_client_new(s.state_ep, s.cmd_ep, NULL, err, sizeof err);
  ENSURE(c && khz_client_describe(c, 2000) != NULL);
  ENSURE(c && khz_client_latestState(c, 300) == NULL);
  ENSURE(c && khz_client_counters(c)->malformed > 0);
  khz_client_destroy(&c);
  fake_stop(&f);
  server_cleanup(&s);
}

/* --------------------------------------------------------------- CURVE -- */

static int keygen(char pub[41], char sec[41]) {
  char cmd[600], line[256];
  snprintf(cmd, sizeof cmd, "'%s' --curve-keygen", exe);
  FILE *p = popen(cmd, "r");
  int got = 0;
  while (p && fgets(line, sizeof line, p)) {
    if (sscanf(line, "public %40s", pub) == 1) got |= 1;
    if (sscanf(line, "secret %40s", sec) == 1) got |= 2;
  }
  if (p) pclose(p);
  return got == 3 ? 0 : -1;
}

static void test_curve(void) {
  char spub[41], ssec[41], cpub[41], csec[41], err[256];
  ENSURE(keygen(spub, ssec) == 0 && keygen(cpub, csec) == 0);
  server s;
  ENSURE(server_dir(&s) == 0);
  const char *extra[] = {"--curve-secret-key", ssec, "--curve-clients", cpub, NULL};
  ENSURE(server_start(&s, exe, extra) == 0);
  khzClientOptions o = {.server_key = spub, .public_key = cpub, .secret_key = csec};
  khzClient *c = khz_client_new(s.state_ep, s.cmd_ep, &o, err, sizeof err);
  ENSURE(c && khz_client_describe(c, 3000) && khz_client_nextState(c, 2000));
  khz_client_destroy(&c);
  c = khz_client_new(s.state_ep, s.cmd_ep, NULL, err, sizeof err); /* no keys: refused */
  ENSURE(c && !khz_client_describe(c, 300) && khz_client_status(c) == KHZ_CLIENT_NOT_CONNECTED);
  ENSURE(c && strstr(khz_client_error(c), "CURVE"));
  khz_client_destroy(&c);
  ENSURE(server_stop(&s) == 0);
  server_cleanup(&s);
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: test_client KHZ-SERVER\n"), 2;
  exe = argv[1];
  signal(SIGPIPE, SIG_IGN);
  test_absent();
  test_live();
  test_restart();
  test_fakes();
  test_curve();
  return ensure_report();
}
