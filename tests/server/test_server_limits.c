/* test_server_limits.c — size limits on every input (issue 20, item 3).
 *
 * The ROUTER refuses a message over the model's limit before anything is
 * decoded (ZMQ_MAXMSGSIZE: libzmq drops the connection that sent it): a 48 MB
 * Command gets no decoded reply (the old server decoded it and answered
 * WRONG_SIZE), the state stream carries on without a gap or a dropped state,
 * and other clients are served. A message under the limit is decoded and
 * refused as usual. Strings in requests have bounds: a 5000-byte setting
 * value or body name is refused with OUT_OF_RANGE naming the limit. */
#include <zmq.h>

#include "harness.h"

static void *dealer(void *ctx, const char *ep) {
  void *s = zmq_socket(ctx, ZMQ_DEALER);
  int zero = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
  zmq_connect(s, ep);
  return s;
}

/* the next ServerMessage on a raw socket within ms, or NULL */
static Khz__V1__ServerMessage *recv_msg(void *sock, int ms) {
  zmq_pollitem_t it = {sock, 0, ZMQ_POLLIN, 0};
  if (zmq_poll(&it, 1, ms) <= 0) return NULL;
  zmq_msg_t m;
  zmq_msg_init(&m);
  if (zmq_msg_recv(&m, sock, 0) < 0) return zmq_msg_close(&m), NULL;
  Khz__V1__ServerMessage *sm = khz__v1__server_message__unpack(NULL, zmq_msg_size(&m), zmq_msg_data(&m));
  zmq_msg_close(&m);
  return sm;
}

/* the state socket's limit (KHZ_PUB_MAXMSG): an XSUB subscribes to every
 * state, then sends a subscription of `len` bytes; returns 1 when the server
 * dropped the connection (the XSUB's monitor reports it) within 1 s, and
 * counts in *states the states it received over that time */
static int subscription_dropped(void *ctx, const char *ep, size_t len, int id, int *states) {
  void *x = zmq_socket(ctx, ZMQ_XSUB);
  int zero = 0;
  zmq_setsockopt(x, ZMQ_LINGER, &zero, sizeof zero);
  char mon_ep[64];
  snprintf(mon_ep, sizeof mon_ep, "inproc://limits-monitor-%d", id);
  zmq_socket_monitor(x, mon_ep, ZMQ_EVENT_DISCONNECTED);
  void *mon = zmq_socket(ctx, ZMQ_PAIR);
  zmq_setsockopt(mon, ZMQ_LINGER, &zero, sizeof zero);
  zmq_connect(mon, mon_ep);
  zmq_connect(x, ep);
  uint8_t all = 1; /* subscribe to everything */
  zmq_send(x, &all, 1, 0);
  char *sub = malloc(len);
  sub[0] = 1;
  memset(sub + 1, 'a', len - 1);
  zmq_send(x, sub, len, 0);
  free(sub);
  int dropped = 0;
  *states = 0;
  int64_t end = khz_loop_now() + 1000000000LL;
  while (khz_loop_now() < end && !dropped) {
    zmq_pollitem_t it[2] = {{x, 0, ZMQ_POLLIN, 0}, {mon, 0, ZMQ_POLLIN, 0}};
    if (zmq_poll(it, 2, 50) <= 0) continue;
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (it[0].revents & ZMQ_POLLIN && zmq_msg_recv(&m, x, ZMQ_DONTWAIT) >= 0) (*states)++;
    if (it[1].revents & ZMQ_POLLIN && zmq_msg_recv(&m, mon, ZMQ_DONTWAIT) >= 0) {
      uint16_t ev = 0;
      if (zmq_msg_size(&m) >= 2) memcpy(&ev, zmq_msg_data(&m), 2);
      if (ev == ZMQ_EVENT_DISCONNECTED) dropped = 1;
      while (zmq_msg_more(&m) && zmq_msg_recv(&m, mon, 0) >= 0) {
      }
    }
    zmq_msg_close(&m);
  }
  zmq_socket_monitor(x, NULL, 0);
  zmq_close(mon);
  zmq_close(x);
  return dropped;
}

static size_t pack_command(uint8_t **out, size_t ntau, uint32_t gen, uint64_t state_seq) {
  Khz__V1__ClientMessage m;
  Khz__V1__Command c;
  khz__v1__client_message__init(&m);
  khz__v1__command__init(&c);
  double *tau = calloc(ntau, sizeof *tau);
  c.model_generation = gen;
  c.state_seq = state_seq;
  c.seq = 1;
  c.n_tau = ntau;
  c.tau = tau;
  m.body_case = KHZ__V1__CLIENT_MESSAGE__BODY_COMMAND;
  m.command = &c;
  size_t n = khz__v1__client_message__get_packed_size(&m);
  *out = malloc(n);
  khz__v1__client_message__pack(&m, *out);
  free(tau);
  return n;
}

int main(void) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  khzClient *viewer = harness_client(&h), *good = harness_client(&h);
  ENSURE(viewer && good);
  if (!viewer || !good) return ensure_report();
  const Khz__V1__ModelDescription *md = khz_client_describe(good, 5000);
  const Khz__V1__State *st = khz_client_latestState(viewer, 2000);
  ENSURE(md && st);
  uint64_t dropped0 = st->stats->states_dropped, last = st->seq;
  void *ctx = zmq_ctx_new();

  /* 48 MB: over the limit, never decoded, costs no state. 300 states read
   * before (the control: a loaded machine may lose some anyway) and 300 after */
  int gaps_c = 0, gaps = 0, seen = 0;
  for (int k = 0; k < 300; k++) {
    const Khz__V1__State *s2 = khz_client_nextState(viewer, 5000);
    if (!s2) break;
    if (s2->seq != last + 1) gaps_c++;
    last = s2->seq, st = s2;
  }
  uint64_t dropped_c = st ? st->stats->states_dropped - dropped0 : 0;
  dropped0 = st ? st->stats->states_dropped : 0;
  void *big = dealer(ctx, h.cmd_ep);
  uint8_t *buf;
  size_t n = pack_command(&buf, 6u << 20, md->model_generation, st ? st->seq : 0);
  ENSURE(zmq_send(big, buf, n, 0) == (int)n);
  free(buf);
  for (int k = 0; k < 300; k++) {
    const Khz__V1__State *s2 = khz_client_nextState(viewer, 5000);
    if (!s2) break;
    if (s2->seq != last + 1) gaps++;
    last = s2->seq, seen++;
    st = s2;
  }
  Khz__V1__ServerMessage *sm = recv_msg(big, 500);
  uint64_t dropped = st ? st->stats->states_dropped - dropped0 : 0;
  printf("48 MB command: %s; %d states seen after it, %d gaps, %llu dropped (control: %d gaps, "
         "%llu dropped)\n",
         sm ? "answered (decoded)" : "not answered (refused before decoding)", seen, gaps,
         (unsigned long long)dropped, gaps_c, (unsigned long long)dropped_c);
  ENSURE(sm == NULL);
  if (sm) khz__v1__server_message__free_unpacked(sm, NULL);
  ENSURE(seen == 300);
  ENSURE((gaps == 0 && dropped == 0) || gaps_c > 0 || dropped_c > 0);
  ENSURE(khz_client_describe(good, 5000) != NULL);

  /* under the limit: decoded and refused as usual */
  void *mid = dealer(ctx, h.cmd_ep);
  st = khz_client_latestState(viewer, 2000);
  n = pack_command(&buf, 6000, md->model_generation, st->seq);
  ENSURE(n < 65536);
  zmq_send(mid, buf, n, 0);
  free(buf);
  sm = recv_msg(mid, 3000);
  ENSURE(sm && sm->body_case == KHZ__V1__SERVER_MESSAGE__BODY_ERROR &&
         sm->error->code == KHZ__V1__ERROR_CODE__WRONG_SIZE);
  if (sm) printf("%zu-byte command: %s\n", n, sm->error ? sm->error->message : "?");
  if (sm) khz__v1__server_message__free_unpacked(sm, NULL);

  /* the state socket: a subscription over KHZ_PUB_MAXMSG (1024 bytes) drops
   * its connection; one under it is kept and served */
  int n_small = 0, n_big = 0;
  int small_dropped = subscription_dropped(ctx, h.state_ep, 1000, 1, &n_small);
  int big_dropped = subscription_dropped(ctx, h.state_ep, 4096, 2, &n_big);
  printf("state socket: a 1000-byte subscription %s (%d states in 1 s), a 4096-byte one %s\n",
         small_dropped ? "DROPPED" : "kept", n_small, big_dropped ? "dropped" : "NOT dropped");
  ENSURE(!small_dropped && n_small > 0);
  ENSURE(big_dropped);
  ENSURE(khz_client_nextState(viewer, 2000) != NULL);

  /* strings in requests: bounded */
  char *longs = malloc(5001);
  memset(longs, 'a', 5000);
  longs[5000] = 0;
  const Khz__V1__Reply *r = req_setting(good, "log_level", longs);
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OUT_OF_RANGE && strstr(r->error, "at most 255"));
  if (r) printf("5000-byte setting value: %s\n", r->error);
  double f[3] = {0, 0, 1};
  Khz__V1__Request rq;
  Khz__V1__ApplyWrench w;
  Khz__V1__BodyRef ref;
  khz__v1__request__init(&rq);
  khz__v1__apply_wrench__init(&w);
  khz__v1__body_ref__init(&ref);
  ref.ref_case = KHZ__V1__BODY_REF__REF_NAME;
  ref.name = longs;
  w.body = &ref;
  w.n_force = 3;
  w.force = f;
  w.duration = 0.1;
  rq.op_case = KHZ__V1__REQUEST__OP_APPLY_WRENCH;
  rq.apply_wrench = &w;
  r = khz_client_request(good, &rq, 5000);
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OUT_OF_RANGE && strstr(r->error, "at most 256"));
  if (r) printf("5000-byte body name: %s\n", r->error);
  free(longs);

  zmq_close(big);
  zmq_close(mid);
  zmq_ctx_term(ctx);
  khz_client_destroy(&viewer);
  khz_client_destroy(&good);
  harness_stop(&h);
  return ensure_report();
}
