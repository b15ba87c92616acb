/* curve.c — CURVE security: the rule that anything but loopback or ipc://
 * needs CURVE keys, the server's secret key (Z85 text or a file), the list
 * of allowed client public keys, and the ZAP handler (a REP socket on
 * inproc://zeromq.zap.01) that admits a CURVE client only when its public
 * key is listed. Checked before any socket is bound.
 */
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "internal.h"
#include "log.h"

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

/* a key: 40 Z85 characters, or a file holding one: the file --curve-keygen
 * writes (its "secret KEY" line), or one whose first word is the key */
static int read_key(const char *value, char out[41], char *err, size_t errsz, const char *what) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", value);
  if (strlen(buf) != 40) {
    FILE *f = fopen(value, "r");
    if (!f) return khz_server_fail(err, errsz, "%s: '%s' is neither a 40-character Z85 key nor a readable file", what, value);
    char line[512], w1[256], w2[256];
    int found = 0, first = 1;
    while (!found && fgets(line, sizeof line, f)) {
      int n = sscanf(line, "%255s %255s", w1, w2);
      if (n < 1 || w1[0] == '#') continue;
      if (n == 2 && !strcmp(w1, "secret")) snprintf(buf, sizeof buf, "%s", w2), found = 1;
      else if (first && strlen(w1) == 40) snprintf(buf, sizeof buf, "%s", w1), found = 1;
      first = 0;
    }
    fclose(f);
    if (!found || strlen(buf) != 40)
      return khz_server_fail(err, errsz,
                             "%s: %s holds no 40-character Z85 key (a 'secret KEY' line, as "
                             "--curve-keygen writes, or the key as its first word)",
                             what, value);
  }
  uint8_t bin[32];
  if (!zmq_z85_decode(bin, buf)) return khz_server_fail(err, errsz, "%s: '%.40s' is not valid Z85", what, buf);
  memcpy(out, buf, 41);
  return 0;
}

static int add_client_key(khzServer *s, const char *z85, char *err, size_t errsz) {
  if (s->nclient_keys == KHZ_MAX_CLIENT_KEYS)
    return khz_server_fail(err, errsz, "curve_clients: more than %d keys", KHZ_MAX_CLIENT_KEYS);
  if (strlen(z85) != 40 || !zmq_z85_decode(s->client_key[s->nclient_keys], z85))
    return khz_server_fail(err, errsz, "curve_clients: '%s' is not a 40-character Z85 public key", z85);
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
      char w2[256];
      int n = sscanf(line, "%255s %255s", word, w2);
      if (n < 1 || word[0] == '#' || !strcmp(word, "secret")) continue; /* never a secret */
      rc = add_client_key(s, n == 2 && !strcmp(word, "public") ? w2 : word, err, errsz);
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
  if (s->nclient_keys == 0) return khz_server_fail(err, errsz, "curve_clients: no client keys in '%s'", value);
  return 0;
}

/* the ZAP handler: a CURVE client is let in when its public key is listed */
static void zap_drain(khzServer *s) {
  while (khz_has_input(s->zap)) {
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

void khz_curve_zapCb(struct ev_loop *ev, ev_io *w, int revents) {
  (void)ev, (void)revents;
  zap_drain(w->data);
}

int khz_curve_setup(khzServer *s, char *err, size_t errsz) {
  const khzServerConfig *c = &s->cfg;
  int local = khz_endpoint_is_local(c->state_endpoint) && khz_endpoint_is_local(c->command_endpoint);
  if (c->curve_secret_key[0] || c->curve_clients[0]) {
    if (!c->curve_secret_key[0] || !c->curve_clients[0])
      return khz_server_fail(err, errsz, "CURVE needs both curve_secret_key and curve_clients");
    if (!zmq_has("curve")) return khz_server_fail(err, errsz, "this libzmq was built without CURVE support");
    if (read_key(c->curve_secret_key, s->secret, err, errsz, "curve_secret_key")) return -1;
    if (zmq_curve_public(s->public_key, s->secret) != 0)
      return khz_server_fail(err, errsz, "curve_secret_key: cannot derive the public key");
    if (load_client_keys(s, c->curve_clients, err, errsz)) return -1;
    s->curve = 1;
  } else if (!local) {
    return khz_server_fail(err, errsz,
                "refusing to bind %s without CURVE: binding anything but loopback or ipc:// "
                "needs curve_secret_key and curve_clients (khz-server --curve-keygen makes keys; "
                "see docs/server.md, Security)",
                khz_endpoint_is_local(c->state_endpoint) ? c->command_endpoint : c->state_endpoint);
  }
  return 0;
}
