/* khz-client-bench.c — the cost per call of the C client library, against a
 * running khz-server (a program that prints figures, not a test):
 *
 *   receive + decode a state   states re-published from this program's own PUB
 *                              socket (a real state of the server's model),
 *                              queued, then read with khz_client_nextState(c, 0)
 *   send a command             khz_client_sendTorques / sendTargets, one call timed
 *                              at a time (spaced so that the queue never fills)
 *   name lookup                khz_client_actuatorIndex, exact and short name
 *   requests                   Describe and GetStats round trips
 *
 *   khz-client-bench [--state EP] [--command EP] [--n N]
 *
 * Medians and p99 in microseconds. docs/clients.md quotes the figures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include <khz/client.h>

/* between two timed sends: the server's I/O thread drains the queue meanwhile */
#define SPACING 300

static int cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void line(const char *what, int64_t *ns, int n, int per) {
  qsort(ns, (size_t)n, sizeof *ns, cmp);
  printf("  %-34s p50 %8.3f  p99 %8.3f us  (%d calls%s)\n", what, ns[n / 2] / 1e3 / per,
         ns[n * 99 / 100] / 1e3 / per, n * per, per > 1 ? ", timed in batches" : "");
}

static void spin_us(int us) {
  int64_t end = khz_client_now() + us * 1000LL;
  while (khz_client_now() < end) {
  }
}

int main(int argc, char **argv) {
  const char *state_ep = NULL, *cmd_ep = NULL;
  int n = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--state")) state_ep = argv[i + 1];
    else if (!strcmp(argv[i], "--command")) cmd_ep = argv[i + 1];
    else if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
    else return fprintf(stderr, "usage: khz-client-bench [--state EP] [--command EP] [--n N]\n"), 2;
  }
  if (n < 100 || n > 100000) n = 1000;
  char err[512];
  khzClient *c = khz_client_new(state_ep, cmd_ep, NULL, err, sizeof err);
  const Khz__V1__ModelDescription *md = c ? khz_client_describe(c, 3000) : NULL;
  const Khz__V1__State *st = md ? khz_client_latestState(c, 2000) : NULL;
  if (!st) {
    fprintf(stderr, "khz-client-bench: %s\n", c ? khz_client_error(c) : err);
    return 1;
  }
  int64_t *ns = calloc((size_t)n, sizeof *ns);
  size_t bytes = khz__v1__state__get_packed_size(st);
  uint8_t *packed = malloc(bytes);
  khz__v1__state__pack(st, packed);
  printf("khz-client-bench: scene '%s', na %u, nq %u, %zu bodies; a state is %zu bytes\n",
         md->scene, md->na, md->nq, md->n_bodies, bytes);

  /* receive + decode: this program publishes the state n times to a second client */
  char ep[128];
  snprintf(ep, sizeof ep, "ipc:///tmp/khz-client-bench-%d", (int)getpid());
  void *ctx = zmq_ctx_new(), *pub = zmq_socket(ctx, ZMQ_PUB);
  int hwm = 0, rounds = 0;
  zmq_setsockopt(pub, ZMQ_SNDHWM, &hwm, sizeof hwm);
  zmq_bind(pub, ep);
  khzClientOptions o = {.rcvhwm = n + 16};
  khzClient *r = khz_client_new(ep, khz_client_commandEndpoint(c), &o, err, sizeof err);
  khz_client_describe(r, 3000);
  while (!khz_client_nextState(r, 0) && rounds++ < 200) { /* the subscription takes a moment */
    zmq_send(pub, "state", 5, ZMQ_SNDMORE);
    zmq_send(pub, packed, bytes, 0);
    usleep(5000);
  }
  while (khz_client_nextState(r, 50)) {
  }
  for (int i = 0; i < n; i++) {
    zmq_send(pub, "state", 5, ZMQ_SNDMORE);
    zmq_send(pub, packed, bytes, 0);
  }
  usleep(200000);
  int got = 0;
  for (int i = 0; i < n; i++) {
    int64_t t = khz_client_now();
    got += khz_client_nextState(r, 0) != NULL;
    ns[i] = khz_client_now() - t;
  }
  if (got == n) line("nextState (receive + decode)", ns, n, 1);
  else printf("  nextState: only %d of %d states arrived\n", got, n);
  khz_client_destroy(&r);
  zmq_close(pub);
  zmq_ctx_term(ctx);

  /* sending: one call at a time */
  double tau[64] = {0}, q[64] = {0};
  for (uint32_t a = 0; a < md->na && a < 64; a++) q[a] = st->q[md->actuators[a]->q_index];
  for (int i = 0; i < n; i++) {
    spin_us(SPACING);
    int64_t t = khz_client_now();
    khz_client_sendTorques(c, st, tau, md->na);
    ns[i] = khz_client_now() - t;
  }
  line("sendTorques (pack + send)", ns, n, 1);
  for (int i = 0; i < n; i++) {
    spin_us(SPACING);
    int64_t t = khz_client_now();
    khz_client_sendTargets(c, st, q, NULL, NULL, NULL, NULL, md->na);
    ns[i] = khz_client_now() - t;
  }
  line("sendTargets (pack + send)", ns, n, 1);

  /* lookups: batches of 100 */
  int batches = n / 10 > 10 ? n / 10 : 10;
  const char *exact = md->n_actuators ? md->actuators[md->n_actuators - 1]->name : "none";
  const char *shortname = strrchr(exact, '/') ? strrchr(exact, '/') + 1 : exact;
  for (int i = 0; i < batches; i++) {
    int64_t t = khz_client_now();
    for (int k = 0; k < 100; k++) khz_client_actuatorIndex(c, exact);
    ns[i] = khz_client_now() - t;
  }
  line("actuatorIndex (exact, last one)", ns, batches, 100);
  for (int i = 0; i < batches; i++) {
    int64_t t = khz_client_now();
    for (int k = 0; k < 100; k++) khz_client_actuatorIndex(c, shortname);
    ns[i] = khz_client_now() - t;
  }
  line("actuatorIndex (short name)", ns, batches, 100);

  /* requests: round trips through the server's I/O thread (and the loop) */
  int m = n / 10 > 20 ? n / 10 : 20;
  Khz__V1__Request rq = KHZ__V1__REQUEST__INIT;
  Khz__V1__Describe d = KHZ__V1__DESCRIBE__INIT;
  rq.op_case = KHZ__V1__REQUEST__OP_DESCRIBE;
  rq.describe = &d;
  for (int i = 0; i < m; i++) {
    int64_t t = khz_client_now();
    khz_client_request(c, &rq, 2000);
    ns[i] = khz_client_now() - t;
  }
  line("Describe round trip", ns, m, 1);
  for (int i = 0; i < m; i++) {
    int64_t t = khz_client_now();
    khz_client_getStats(c, 2000);
    ns[i] = khz_client_now() - t;
  }
  line("GetStats round trip (via the loop)", ns, m, 1);
  const khzClientCounters *k = khz_client_counters(c);
  printf("  send failures %llu, arena grows %llu\n", (unsigned long long)k->send_failures,
         (unsigned long long)k->arena_grows);
  free(ns);
  free(packed);
  khz_client_destroy(&c);
  return 0;
}
