/* test_server_flood.c — no request delays a tick, and every request gets
 * exactly one reply (issue 20, item 1).
 *
 * A realtime server at 1 kHz; a viewer thread records the lateness of every
 * state (State.stats.lateness_ns) and the missed periods. First a control
 * window with no requests, then a window of the same length in which two
 * clients flood every request kind (rounds of 48 requests sent without
 * waiting, GetStats, whose state hash used to cost the loop 0.3 ms and more
 * each, among them) while a third, well-behaved client asks for statistics
 * once per round. Checks:
 *   - the loop makes at least a third as many ticks in the flood window as in
 *     the control window (a delayed tick shows as fewer ticks: missed periods
 *     are skipped; the old loop made a twelfth) and lateness p99 stays within
 *     10x + 20 ms of the control run's (a sanity bound: unprivileged, the
 *     loop thread competes for the CPU with the flooders; both
 *     skipped, and said so, when the control itself made under a quarter of
 *     its ticks);
 *   - every request of the flood is answered exactly once (ids counted),
 *     some with BUSY naming the per-client bound, none with silence;
 *   - the well-behaved client is never answered BUSY (one client cannot take
 *     the pending table from another);
 *   - a client that sends 20000 requests and reads nothing until the end gets
 *     every reply the server could queue, and the rest are counted
 *     (Stats.replies_dropped), so received + dropped = sent. */
#include <stdatomic.h>
#include <zmq.h>

#include "harness.h"

#define WINDOW_MS 1500
#define ROUND 48

/* ---------------------------------------------------------------- viewer -- */

typedef struct viewer {
  khzClient *c;
  atomic_int phase; /* 0 idle, 1 control, 2 flood, 3 stop */
  int64_t lat[2][8192];
  int n[2];
  uint64_t missed[2], last_missed[2]; /* periods skipped, summed over the window (ResetStats
                                          in the flood sets the counter back: deltas only) */
  int have[2];
  uint64_t seq0[2], seq1[2]; /* first and last seq seen: the ticks the loop made, whatever the
                                viewer itself missed */
} viewer;

static void *viewer_main(void *arg) {
  viewer *v = arg;
  for (;;) {
    int ph = atomic_load(&v->phase);
    if (ph == 3) break;
    const Khz__V1__State *st = khz_client_nextState(v->c, 200);
    if (!st || ph == 0 || !st->stats) continue;
    int w = ph - 1;
    if (st->flags & KHZ__V1__STATE_FLAG__FLAG_RESET) continue; /* not a scheduled tick */
    if (!v->have[w]) v->seq0[w] = st->seq;
    v->seq1[w] = st->seq;
    uint64_t m = st->stats->missed;
    if (v->have[w]) v->missed[w] += m >= v->last_missed[w] ? m - v->last_missed[w] : m;
    v->last_missed[w] = m, v->have[w] = 1;
    if (v->n[w] < 8192) v->lat[w][v->n[w]++] = st->stats->lateness_ns;
  }
  return NULL;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int64_t quantile(int64_t *v, int n, double q) {
  if (n == 0) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp64);
  int i = (int)(q * (n - 1));
  return v[i];
}

/* -------------------------------------------------------------- requests -- */

static size_t pack_request(uint8_t *buf, size_t cap, uint64_t id, int kind) {
  Khz__V1__Request rq;
  Khz__V1__ClientMessage m;
  Khz__V1__Describe describe;
  Khz__V1__Reset reset;
  Khz__V1__Resume resume;
  Khz__V1__SetMode sm;
  Khz__V1__SetRate sr;
  Khz__V1__SetContactMethod scm;
  Khz__V1__SetGains sg;
  Khz__V1__SetHapticGains shg;
  Khz__V1__ApplyWrench aw;
  Khz__V1__BodyRef ref;
  Khz__V1__ClearWrenches cw;
  Khz__V1__GetStats gs;
  Khz__V1__ResetStats rs;
  Khz__V1__GetSetting gset;
  Khz__V1__SetSetting sset;
  Khz__V1__StartRecording srec;
  Khz__V1__StopRecording stop;
  static double zeros[7], force[3] = {0, 0, 1}, torque[3];
  khz__v1__request__init(&rq);
  khz__v1__client_message__init(&m);
  rq.id = id;
  switch (kind) {
    case 0: khz__v1__describe__init(&describe); rq.op_case = KHZ__V1__REQUEST__OP_DESCRIBE; rq.describe = &describe; break;
    case 1: khz__v1__reset__init(&reset); rq.op_case = KHZ__V1__REQUEST__OP_RESET; rq.reset = &reset; break;
    case 2: khz__v1__resume__init(&resume); rq.op_case = KHZ__V1__REQUEST__OP_RESUME; rq.resume = &resume; break;
    case 3: khz__v1__set_mode__init(&sm); sm.mode = KHZ__V1__MODE__MODE_REALTIME; rq.op_case = KHZ__V1__REQUEST__OP_SET_MODE; rq.set_mode = &sm; break;
    case 4: khz__v1__set_rate__init(&sr); sr.rate_hz = 1000; rq.op_case = KHZ__V1__REQUEST__OP_SET_RATE; rq.set_rate = &sr; break;
    case 5: khz__v1__set_contact_method__init(&scm); scm.method = "penalty"; rq.op_case = KHZ__V1__REQUEST__OP_SET_CONTACT_METHOD; rq.set_contact_method = &scm; break;
    case 6: khz__v1__set_gains__init(&sg); sg.n_kp = sg.n_kd = 7; sg.kp = sg.kd = zeros; rq.op_case = KHZ__V1__REQUEST__OP_SET_GAINS; rq.set_gains = &sg; break;
    case 7: khz__v1__set_haptic_gains__init(&shg); rq.op_case = KHZ__V1__REQUEST__OP_SET_HAPTIC_GAINS; rq.set_haptic_gains = &shg; break;
    case 8:
      khz__v1__apply_wrench__init(&aw);
      khz__v1__body_ref__init(&ref);
      ref.ref_case = KHZ__V1__BODY_REF__REF_NAME;
      ref.name = "box1";
      aw.body = &ref;
      aw.n_force = aw.n_torque = 3;
      aw.force = force, aw.torque = torque;
      aw.duration = 0.001;
      rq.op_case = KHZ__V1__REQUEST__OP_APPLY_WRENCH;
      rq.apply_wrench = &aw;
      break;
    case 9: khz__v1__clear_wrenches__init(&cw); rq.op_case = KHZ__V1__REQUEST__OP_CLEAR_WRENCHES; rq.clear_wrenches = &cw; break;
    case 10: khz__v1__reset_stats__init(&rs); rq.op_case = KHZ__V1__REQUEST__OP_RESET_STATS; rq.reset_stats = &rs; break;
    case 11: khz__v1__get_setting__init(&gset); gset.name = "mode"; rq.op_case = KHZ__V1__REQUEST__OP_GET_SETTING; rq.get_setting = &gset; break;
    case 12: khz__v1__set_setting__init(&sset); sset.name = "safe_damping"; sset.value = "2"; rq.op_case = KHZ__V1__REQUEST__OP_SET_SETTING; rq.set_setting = &sset; break;
    case 13: khz__v1__start_recording__init(&srec); srec.path = "flood.khzrec"; rq.op_case = KHZ__V1__REQUEST__OP_START_RECORDING; rq.start_recording = &srec; break;
    case 14: khz__v1__stop_recording__init(&stop); rq.op_case = KHZ__V1__REQUEST__OP_STOP_RECORDING; rq.stop_recording = &stop; break;
    case 15: break; /* no op: an unknown request */
    default: khz__v1__get_stats__init(&gs); rq.op_case = KHZ__V1__REQUEST__OP_GET_STATS; rq.get_stats = &gs; break;
  }
  m.body_case = KHZ__V1__CLIENT_MESSAGE__BODY_REQUEST;
  m.request = &rq;
  size_t n = khz__v1__client_message__get_packed_size(&m);
  if (n > cap) return 0;
  return khz__v1__client_message__pack(&m, buf);
}

/* a raw DEALER: sends a round of requests without waiting, then reads until
 * every id of the round is answered (or PATIENCE_MS pass); counts per id */
typedef struct flooder {
  void *sock;
  uint64_t next_id;
  int answers[ROUND];
  long sent, replies, busy, busy_bound, dup, missing, other;
} flooder;

static void flooder_open(flooder *f, void *ctx, const char *ep) {
  memset(f, 0, sizeof *f);
  f->sock = zmq_socket(ctx, ZMQ_DEALER);
  int zero = 0;
  zmq_setsockopt(f->sock, ZMQ_LINGER, &zero, sizeof zero);
  zmq_connect(f->sock, ep);
  f->next_id = 1;
}

static void flooder_send(flooder *f, int round) {
  uint8_t buf[2048];
  memset(f->answers, 0, sizeof f->answers);
  for (int k = 0; k < ROUND; k++) {
    /* a third of each round is GetStats, the rest every other kind in turn */
    int kind = k % 3 == 0 ? 99 : (k + round) % 16;
    size_t n = pack_request(buf, sizeof buf, f->next_id + (uint64_t)k, kind);
    zmq_send(f->sock, buf, n, 0);
    f->sent++;
  }
}

/* reads what has arrived (wait_ms for the first); returns 1 when the round is complete */
static int flooder_read(flooder *f, int wait_ms) {
  zmq_pollitem_t it = {f->sock, 0, ZMQ_POLLIN, 0};
  while (zmq_poll(&it, 1, wait_ms) > 0) {
    wait_ms = 0;
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, f->sock, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&msg);
      break;
    }
    Khz__V1__ServerMessage *sm = khz__v1__server_message__unpack(NULL, zmq_msg_size(&msg), zmq_msg_data(&msg));
    zmq_msg_close(&msg);
    if (!sm) continue;
    if (sm->body_case == KHZ__V1__SERVER_MESSAGE__BODY_REPLY) {
      const Khz__V1__Reply *r = sm->reply;
      if (r->id >= f->next_id && r->id < f->next_id + ROUND) {
        if (f->answers[r->id - f->next_id]++) f->dup++;
        f->replies++;
        if (r->code == KHZ__V1__ERROR_CODE__BUSY) {
          f->busy++;
          if (strstr(r->error, "per client")) f->busy_bound++;
        }
      } else {
        f->other++;
      }
    }
    khz__v1__server_message__free_unpacked(sm, NULL);
  }
  for (int k = 0; k < ROUND; k++)
    if (!f->answers[k]) return 0;
  return 1;
}

static void flooder_finish_round(flooder *f) {
  for (int k = 0; k < ROUND; k++)
    if (!f->answers[k]) f->missing++;
  f->next_id += ROUND;
}

static uint64_t stats_dropped(khzClient *c) {
  const Khz__V1__Stats *st = khz_client_getStats(c, 5000);
  return st ? st->replies_dropped : (uint64_t)-1;
}

int main(void) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  viewer *v = calloc(1, sizeof *v);
  v->c = harness_client(&h);
  khzClient *good = harness_client(&h);
  ENSURE(v->c && good);
  if (!v->c || !good) return ensure_report();
  pthread_t vt;
  pthread_create(&vt, NULL, viewer_main, v);

  /* control window: nothing but the state stream */
  atomic_store(&v->phase, 1);
  nap_ms(WINDOW_MS);

  /* flood window */
  void *ctx = zmq_ctx_new();
  flooder f[2];
  flooder_open(&f[0], ctx, h.cmd_ep);
  flooder_open(&f[1], ctx, h.cmd_ep);
  nap_ms(100);
  atomic_store(&v->phase, 2);
  int64_t t0 = khz_client_now();
  int rounds = 0, good_busy = 0, good_fail = 0;
  while (khz_client_now() - t0 < (int64_t)WINDOW_MS * 1000000) {
    flooder_send(&f[0], rounds);
    flooder_send(&f[1], rounds + 7);
    const Khz__V1__Stats *gst = khz_client_getStats(good, PATIENCE_MS);
    if (!gst) {
      const Khz__V1__Reply *lr = khz_client_lastReply(good);
      if (lr && lr->code == KHZ__V1__ERROR_CODE__BUSY) good_busy++;
      else good_fail++;
    }
    int64_t until = patience_ends();
    int done0 = 0, done1 = 0;
    while ((!done0 || !done1) && khz_client_now() < until) {
      done0 = done0 || flooder_read(&f[0], 5);
      done1 = done1 || flooder_read(&f[1], 5);
    }
    flooder_finish_round(&f[0]);
    flooder_finish_round(&f[1]);
    rounds++;
    nap_ms(2);
  }
  atomic_store(&v->phase, 3);
  pthread_join(vt, NULL);

  int64_t c99 = quantile(v->lat[0], v->n[0], 0.99), cmax = quantile(v->lat[0], v->n[0], 1.0);
  int64_t f99 = quantile(v->lat[1], v->n[1], 0.99), fmax = quantile(v->lat[1], v->n[1], 1.0);
  uint64_t cmiss = v->missed[0], fmiss = v->missed[1];
  long sent = f[0].sent + f[1].sent, replies = f[0].replies + f[1].replies;
  printf("control: %d states, lateness p99 %.1f us, max %.1f us, %llu periods missed\n", v->n[0],
         c99 / 1e3, cmax / 1e3, (unsigned long long)cmiss);
  printf("flood:   %d states, lateness p99 %.1f us, max %.1f us, %llu periods missed; %d rounds, "
         "%ld requests, %ld replies (%ld BUSY, %ld naming the per-client bound), %ld duplicate, "
         "%ld missing, %ld stray; well-behaved client: %d BUSY, %d failed\n",
         v->n[1], f99 / 1e3, fmax / 1e3, (unsigned long long)fmiss, rounds, sent, replies,
         f[0].busy + f[1].busy, f[0].busy_bound + f[1].busy_bound, f[0].dup + f[1].dup,
         f[0].missing + f[1].missing, f[0].other + f[1].other, good_busy, good_fail);
  /* ticks made in the same wall time (seq advanced): a delayed tick shows as
   * fewer ticks, the schedule skipping the periods it missed. The old loop
   * made 74 ticks in the flood window to the control's 868. When the machine
   * is so loaded that the control window itself ran under a quarter of its
   * periods, the comparison says nothing and is skipped (said so). */
  uint64_t cticks = v->seq1[0] - v->seq0[0], fticks = v->seq1[1] - v->seq0[1];
  printf("ticks: control %llu, flood %llu (of %d periods each)\n", (unsigned long long)cticks,
         (unsigned long long)fticks, WINDOW_MS);
  if (cticks < WINDOW_MS / 4) {
    printf("note: the machine is too loaded for the timing comparison (control made %llu of %d "
           "ticks): skipped\n", (unsigned long long)cticks, WINDOW_MS);
  } else {
    ENSURE_MSG(fticks >= cticks / 3, "%llu ticks during the flood, %llu in the control window",
               (unsigned long long)fticks, (unsigned long long)cticks);
    /* wake-up lateness is the machine's as much as ours when the loop thread
     * is not SCHED_FIFO (tests): a sanity bound only */
    ENSURE_MSG(f99 <= 10 * c99 + 20000000, "flood p99 %.1f us vs control %.1f us", f99 / 1e3,
               c99 / 1e3);
  }
  ENSURE(rounds >= 3);
  ENSURE(replies == sent && f[0].dup + f[1].dup == 0 && f[0].missing + f[1].missing == 0);
  ENSURE(f[0].busy_bound + f[1].busy_bound > 0);
  ENSURE(good_busy == 0 && good_fail == 0);

  /* a client that reads nothing until it has sent 20000 requests: what the
   * server could not queue is counted, never silent */
  uint64_t d0 = stats_dropped(good);
  flooder u;
  flooder_open(&u, ctx, h.cmd_ep);
  nap_ms(100);
  uint8_t buf[256];
  const long N = 20000;
  for (long k = 0; k < N; k++) {
    size_t n = pack_request(buf, sizeof buf, 1000000 + (uint64_t)k, 11); /* GetSetting */
    zmq_send(u.sock, buf, n, 0);
  }
  /* read until every request is accounted for, received or counted as
   * dropped (a fixed wait was too short for the server to work through 20000
   * requests on a loaded machine: it counted the rest later), then a moment
   * more for any reply beyond that */
  long got = 0;
  uint64_t d1 = d0;
  zmq_pollitem_t it = {u.sock, 0, ZMQ_POLLIN, 0};
  int64_t until = patience_ends();
  for (int settled = 0; settled < 2 && khz_client_now() < until;) {
    while (zmq_poll(&it, 1, 200) > 0) {
      zmq_msg_t msg;
      zmq_msg_init(&msg);
      if (zmq_msg_recv(&msg, u.sock, ZMQ_DONTWAIT) >= 0) got++;
      zmq_msg_close(&msg);
    }
    d1 = stats_dropped(good);
    if (got + (long)(d1 - d0) >= N) settled++;
  }
  printf("unread: %ld requests, %ld replies received, %llu counted as dropped\n", N, got,
         (unsigned long long)(d1 - d0));
  ENSURE_MSG(got + (long)(d1 - d0) == N, "received %ld + dropped %llu != sent %ld", got,
             (unsigned long long)(d1 - d0), N);

  zmq_close(f[0].sock);
  zmq_close(f[1].sock);
  zmq_close(u.sock);
  zmq_ctx_term(ctx);
  khz_client_destroy(&v->c);
  khz_client_destroy(&good);
  free(v);
  harness_stop(&h);
  return ensure_report();
}
