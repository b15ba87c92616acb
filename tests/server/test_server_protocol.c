/* test_server_protocol.c — the schema, the docs and the server agree
 * (issue 20, item 5): a protocol revision in Describe's reply and in every
 * state, checked by the C client (a server of another revision is refused:
 * KHZ_CLIENT_PROTOCOL); an unknown request field is named by its number (it
 * used to say "(field 0)"); ResetStats zeroes the rejections by code (it left
 * them); a key file written by --curve-keygen ("public ..." / "secret ..."
 * lines) is taken as curve_secret_key and, by its public line, in
 * curve_clients (it was refused); Step's range and an unknown SetMode value
 * are refused as control.proto says (OUT_OF_RANGE). */
#include <stdatomic.h>
#include <zmq.h>

#include "harness.h"

/* a fake server that answers every Describe with a description of revision 2 */
typedef struct fake {
  void *ctx, *router;
  pthread_t t;
  _Atomic int stop;
} fake;

static void *fake_main(void *arg) {
  fake *f = arg;
  while (!f->stop) {
    zmq_pollitem_t it = {f->router, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, 50) <= 0) continue;
    zmq_msg_t id, body;
    zmq_msg_init(&id), zmq_msg_init(&body);
    zmq_msg_recv(&id, f->router, 0);
    zmq_msg_recv(&body, f->router, 0);
    Khz__V1__ClientMessage *m = khz__v1__client_message__unpack(NULL, zmq_msg_size(&body), zmq_msg_data(&body));
    if (m && m->body_case == KHZ__V1__CLIENT_MESSAGE__BODY_REQUEST) {
      Khz__V1__ModelDescription d;
      Khz__V1__Reply r;
      Khz__V1__ServerMessage out;
      khz__v1__model_description__init(&d);
      khz__v1__reply__init(&r);
      khz__v1__server_message__init(&out);
      d.model_generation = 77, d.scene = "fake", d.rate_hz = 1000, d.nq = d.nv = 1;
      d.protocol_version = 2;
      r.id = m->request->id;
      r.result_case = KHZ__V1__REPLY__RESULT_MODEL;
      r.model = &d;
      out.body_case = KHZ__V1__SERVER_MESSAGE__BODY_REPLY;
      out.reply = &r;
      uint8_t buf[512];
      size_t n = khz__v1__server_message__pack(&out, buf);
      zmq_send(f->router, zmq_msg_data(&id), zmq_msg_size(&id), ZMQ_SNDMORE);
      zmq_send(f->router, buf, n, 0);
    }
    if (m) khz__v1__client_message__free_unpacked(m, NULL);
    zmq_msg_close(&id), zmq_msg_close(&body);
  }
  return NULL;
}

static void test_client_checks(void) {
  fake f = {0};
  char ep[128], sep[128], err[512];
  snprintf(ep, sizeof ep, "ipc:///tmp/khz-fake-%d-cmd", (int)getpid());
  snprintf(sep, sizeof sep, "ipc:///tmp/khz-fake-%d-state", (int)getpid());
  f.ctx = zmq_ctx_new();
  f.router = zmq_socket(f.ctx, ZMQ_ROUTER);
  ENSURE(zmq_bind(f.router, ep) == 0);
  pthread_create(&f.t, NULL, fake_main, &f);
  khzClient *c = khz_client_new(sep, ep, NULL, err, sizeof err);
  ENSURE(c != NULL);
  if (c) {
    ENSURE(khz_client_describe(c, 3000) == NULL);
    ENSURE(khz_client_status(c) == KHZ_CLIENT_PROTOCOL && strstr(khz_client_error(c), "revision 2"));
    printf("revision 2 server: %s\n", khz_client_error(c));
    khz_client_destroy(&c);
  }
  f.stop = 1;
  pthread_join(f.t, NULL);
  zmq_close(f.router);
  zmq_ctx_term(f.ctx);
}

/* a raw request with an unknown field 42 (varint 7) and nothing else */
static void test_unknown_field(harness *h) {
  void *ctx = zmq_ctx_new(), *d = zmq_socket(ctx, ZMQ_DEALER);
  int zero = 0;
  zmq_setsockopt(d, ZMQ_LINGER, &zero, sizeof zero);
  zmq_connect(d, h->cmd_ep);
  /* ClientMessage{request (3): Request{id (1) = 5, field 42 = 7}} */
  uint8_t req[] = {0x08, 0x05, 0xd0, 0x02, 0x07};
  uint8_t msg[16] = {0x1a, sizeof req};
  memcpy(msg + 2, req, sizeof req);
  zmq_send(d, msg, 2 + sizeof req, 0);
  zmq_pollitem_t it = {d, 0, ZMQ_POLLIN, 0};
  ENSURE(zmq_poll(&it, 1, 3000) == 1);
  zmq_msg_t m;
  zmq_msg_init(&m);
  zmq_msg_recv(&m, d, 0);
  Khz__V1__ServerMessage *sm = khz__v1__server_message__unpack(NULL, zmq_msg_size(&m), zmq_msg_data(&m));
  ENSURE(sm && sm->body_case == KHZ__V1__SERVER_MESSAGE__BODY_REPLY && sm->reply->id == 5 &&
         sm->reply->code == KHZ__V1__ERROR_CODE__UNKNOWN_TYPE && strstr(sm->reply->error, "(field 42)") &&
         strstr(sm->reply->error, "khz.v1"));
  if (sm) printf("unknown field 42: %s\n", sm->reply->error);
  if (sm) khz__v1__server_message__free_unpacked(sm, NULL);
  zmq_msg_close(&m);
  zmq_close(d);
  zmq_ctx_term(ctx);
}

/* the ranges control.proto writes down: Step's n is 1..1e9 and a SetMode
 * value this server does not know is OUT_OF_RANGE, each refused with a text
 * naming it, and nothing applied (the loop keeps ticking, not paused) */
static void test_documented_ranges(khzClient *c) {
  Khz__V1__Request rq;
  Khz__V1__Step step;
  Khz__V1__SetMode sm;
  const uint32_t bad_n[2] = {0, 1000000001u};
  for (int i = 0; i < 2; i++) {
    khz__v1__request__init(&rq);
    khz__v1__step__init(&step);
    step.n = bad_n[i];
    rq.op_case = KHZ__V1__REQUEST__OP_STEP;
    rq.step = &step;
    const Khz__V1__Reply *r = khz_client_request(c, &rq, 5000);
    ENSURE_MSG(r && r->code == KHZ__V1__ERROR_CODE__OUT_OF_RANGE && strstr(r->error, "1..1e9"),
               "Step n = %u: code %d, %s", bad_n[i], r ? (int)r->code : -1, r ? r->error : "no reply");
  }
  khz__v1__request__init(&rq);
  khz__v1__set_mode__init(&sm);
  sm.mode = (Khz__V1__Mode)99;
  rq.op_case = KHZ__V1__REQUEST__OP_SET_MODE;
  rq.set_mode = &sm;
  const Khz__V1__Reply *r = khz_client_request(c, &rq, 5000);
  ENSURE_MSG(r && r->code == KHZ__V1__ERROR_CODE__OUT_OF_RANGE && strstr(r->error, "unknown mode 99"),
             "SetMode 99: code %d, %s", r ? (int)r->code : -1, r ? r->error : "no reply");
  const Khz__V1__State *a = khz_client_nextState(c, 2000), *b = NULL;
  uint64_t seq_a = a ? a->seq : 0;
  for (int k = 0; k < 5; k++) b = khz_client_nextState(c, 2000);
  ENSURE(a && b && b->seq > seq_a && !(b->flags & KHZ__V1__STATE_FLAG__FLAG_PAUSED));
}

static void test_curve_keyfile(void) {
  char pub[41], sec[41], cpub[41], csec[41];
  char sfile[128], cfile[128], err[512];
  ENSURE(zmq_curve_keypair(pub, sec) == 0 && zmq_curve_keypair(cpub, csec) == 0);
  snprintf(sfile, sizeof sfile, "/tmp/khz-test-%d-server.keys", (int)getpid());
  snprintf(cfile, sizeof cfile, "/tmp/khz-test-%d-client.keys", (int)getpid());
  FILE *f = fopen(sfile, "w");
  fprintf(f, "public %s\nsecret %s\n", pub, sec); /* what khz-server --curve-keygen prints */
  fclose(f);
  f = fopen(cfile, "w");
  fprintf(f, "# the client's key pair file as --curve-keygen wrote it\npublic %s\nsecret %s\n", cpub, csec);
  fclose(f);
  khzServerConfig cfg;
  harness_config(&cfg);
  snprintf(cfg.curve_secret_key, sizeof cfg.curve_secret_key, "%s", sfile);
  snprintf(cfg.curve_clients, sizeof cfg.curve_clients, "%s", cfile);
  khzServer *s = khz_server_new(&cfg, NULL, err, sizeof err);
  ENSURE_MSG(s != NULL, "%s", err);
  khz_server_destroy(&s);
  unlink(sfile);
  unlink(cfile);
}

int main(void) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  khzClient *c = harness_client(&h);
  ENSURE(c != NULL);
  if (!c) return ensure_report();

  /* the revision in Describe and in every state */
  const Khz__V1__ModelDescription *md = khz_client_describe(c, 5000);
  ENSURE(md && md->protocol_version == KHZ__V1__PROTOCOL_VERSION__PROTOCOL_VERSION);
  int n = 0, good = 0;
  for (; n < 50; n++) {
    const Khz__V1__State *st = khz_client_nextState(c, 2000);
    if (!st) break;
    good += st->protocol_version == KHZ__V1__PROTOCOL_VERSION__PROTOCOL_VERSION;
  }
  ENSURE(n == 50 && good == 50);

  test_unknown_field(&h);
  test_documented_ranges(c);

  /* ResetStats zeroes the rejections by code */
  ENSURE(rejected_count(c, KHZ__V1__ERROR_CODE__UNKNOWN_TYPE) >= 1);
  const Khz__V1__Reply *r = req_simple(c, KHZ__V1__REQUEST__OP_RESET_STATS);
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
  ENSURE(rejected_count(c, KHZ__V1__ERROR_CODE__UNKNOWN_TYPE) == 0);
  const Khz__V1__Stats *st = khz_client_getStats(c, 5000);
  ENSURE(st && st->rejected == 0 && st->n_rejected_by_code == 0);

  khz_client_destroy(&c);
  harness_stop(&h);
  test_client_checks();
  test_curve_keyfile();
  return ensure_report();
}
