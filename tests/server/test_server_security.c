/* test_server_security.c — the binding rule and CURVE: loopback and ipc://
 * endpoints need no keys; any other address is refused without CURVE keys
 * (with a message saying what to do); with keys, a client whose public key
 * is listed gets states and replies, another key gets nothing. */
#include <zmq.h>

#include "harness.h"

static void test_local_rule(void) {
  ENSURE(khz_endpoint_is_local("ipc:///tmp/x"));
  ENSURE(khz_endpoint_is_local("inproc://x"));
  ENSURE(khz_endpoint_is_local("tcp://127.0.0.1:5600"));
  ENSURE(khz_endpoint_is_local("tcp://localhost:5600"));
  ENSURE(khz_endpoint_is_local("tcp://[::1]:5600"));
  ENSURE(khz_endpoint_is_local("tcp://lo:5600"));
  ENSURE(!khz_endpoint_is_local("tcp://*:5600"));
  ENSURE(!khz_endpoint_is_local("tcp://0.0.0.0:5600"));
  ENSURE(!khz_endpoint_is_local("tcp://192.168.1.10:5600"));
  ENSURE(!khz_endpoint_is_local("tcp://eth0:5600"));
  ENSURE(!khz_endpoint_is_local("tcp://127.0.0.1;10.0.0.1:5600"));
  ENSURE(!khz_endpoint_is_local("udp://127.0.0.1:5600"));
}

int main(void) {
  khzServerConfig cfg;
  char err[1024];
  test_local_rule();

  /* a public address without keys: refused, nothing bound */
  int port = 20000 + (int)(getpid() % 20000);
  harness_config(&cfg);
  snprintf(cfg.state_endpoint, sizeof cfg.state_endpoint, "tcp://0.0.0.0:%d", port);
  khzServer *s = khz_server_new(&cfg, NULL, err, sizeof err);
  ENSURE(s == NULL);
  ENSURE(strstr(err, "refusing to bind tcp://0.0.0.0") && strstr(err, "CURVE"));
  printf("without keys: %s\n", err);
  if (!zmq_has("curve")) {
    printf("libzmq without CURVE: skipping the key checks\n");
    return ensure_report();
  }

  /* keys for the server and two clients, one of them allowed */
  char spub[41], ssec[41], apub[41], asec[41], bpub[41], bsec[41];
  ENSURE(zmq_curve_keypair(spub, ssec) == 0 && zmq_curve_keypair(apub, asec) == 0 &&
         zmq_curve_keypair(bpub, bsec) == 0);
  snprintf(cfg.curve_secret_key, sizeof cfg.curve_secret_key, "%s", ssec);
  snprintf(cfg.curve_clients, sizeof cfg.curve_clients, "%s", "not-a-key");
  s = khz_server_new(&cfg, NULL, err, sizeof err);
  ENSURE(s == NULL && strstr(err, "curve_clients"));
  snprintf(cfg.curve_clients, sizeof cfg.curve_clients, "%s", apub);
  snprintf(cfg.command_endpoint, sizeof cfg.command_endpoint, "tcp://0.0.0.0:%d", port + 1);
  harness h;
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  if (!h.srv) return ensure_report();
  char sep[64], cep[64];
  snprintf(sep, sizeof sep, "tcp://127.0.0.1:%d", port);
  snprintf(cep, sizeof cep, "tcp://127.0.0.1:%d", port + 1);

  /* the allowed client */
  khzClientOptions a = {.server_key = spub, .public_key = apub, .secret_key = asec};
  khzClient *ca = khz_client_new(sep, cep, &a, err, sizeof err);
  ENSURE(ca != NULL);
  const Khz__V1__ModelDescription *md = ca ? khz_client_describe(ca, 5000) : NULL;
  ENSURE(md != NULL && md->na == 7);
  ENSURE(ca && khz_client_nextState(ca, 5000) != NULL);

  /* a client with another key: no replies, no states */
  khzClientOptions b = {.server_key = spub, .public_key = bpub, .secret_key = bsec};
  khzClient *cb = khz_client_new(sep, cep, &b, err, sizeof err);
  ENSURE(cb != NULL);
  ENSURE(cb && khz_client_describe(cb, 500) == NULL);
  ENSURE(cb && khz_client_nextState(cb, 300) == NULL);

  /* and one without CURVE at all */
  khzClient *cc = khz_client_new(sep, cep, NULL, err, sizeof err);
  ENSURE(cc && khz_client_describe(cc, 300) == NULL);

  khz_client_destroy(&ca);
  khz_client_destroy(&cb);
  khz_client_destroy(&cc);
  harness_stop(&h);
  return ensure_report();
}
