/* test_server_flood.c — no request delays a tick, and every request gets
 * exactly one reply (issue 20, item 1).
 *
 * A realtime server at 1 kHz, its loop thread SCHED_FIFO where the machine
 * grants it; a viewer thread records the lateness of every
 * state (State.stats.lateness_ns) and the ticks the loop made, window by
 * window. NWIN windows alternate: control (nothing but the state stream)
 * and flood (two clients send every request kind in rounds of 48 without
 * waiting, GetStats, whose state hash used to cost the loop 0.3 ms and more
 * each, among them, while a third, well-behaved client asks for statistics
 * once per round). Interleaving puts the machine's own bursts of load into
 * both kinds of window alike. Checks:
 *   - the flood's lateness stays within the control run's: per window the
 *     lateness p99 of its ticks (a period the loop skipped after an overrun,
 *     State.stats.missed, counts as a tick late from its period to the tick
 *     that came) and the number of khz's own overruns (the loop's CPU time
 *     above the period, own_overruns), the flood's windows against the
 *     control's by rank (worse_pairs: a false alarm once in a thousand runs
 *     when the flood changes nothing; a kind that delays ticks makes every
 *     flood window worse). The ticks made per period are not compared:
 *     Resume, SetMode and SetRate in the flood start the schedule afresh. Both are
 *     skipped, and said so, when the control windows themselves made under a
 *     quarter of their periods; lateness also when SCHED_FIFO is not
 *     granted (the loop thread then waits for the CPU behind the flooders). KHZ_FLOOD_NULL=1 runs every window as a
 *     control (no flood): the same checks then measure how often the bound
 *     fails by chance;
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

/* the lateness comparison is the release server's claim: under ASan the
 * I/O side handles each request several times slower, and on two CPUs the
 * loop's CPU runs it more often, which delays the loop's timer (docs/server.md,
 * "Haptic rate: what the loop's CPU runs"): a fresh-clone run at c22418e
 * found the flood worse in 60 of 64 window pairs, and reruns gave 48-64,
 * against 31-47 in release. khz's own overruns are compared in both */
#if defined(__SANITIZE_ADDRESS__)
static const int sanitized = 1;
#else
static const int sanitized = 0;
#endif

#define NWIN 16      /* windows: even control, odd flood */
#define WINDOW_MS 200 /* each: 200 periods at 1 kHz */
#define ROUND 48
#define FLOOD_RT_PRIORITY 10

/* ---------------------------------------------------------------- viewer -- */

/* every scheduled state the viewer received: its seq, the tick's scheduled
 * start (monotonic, the clock the windows are timed on) and its lateness */
#define MAXSTATES 65536
typedef struct viewer {
  khzClient *c;
  atomic_int stop;
  int n;
  uint64_t seq[MAXSTATES];
  int64_t tick[MAXSTATES], lat[MAXSTATES];
  uint64_t ovr[MAXSTATES][4]; /* so far (ResetStats zeroes them): overruns khz's own, preempted,
                                 late; periods missed */
} viewer;

static void *viewer_main(void *arg) {
  viewer *v = arg;
  while (!atomic_load(&v->stop)) {
    const Khz__V1__State *st = khz_client_nextState(v->c, 200);
    if (!st || !st->stats) continue;
    if (v->n < MAXSTATES) {
      /* a reset's state takes a seq but is not a scheduled tick: lateness -1 */
      int reset = (st->flags & KHZ__V1__STATE_FLAG__FLAG_RESET) != 0;
      v->seq[v->n] = st->seq, v->tick[v->n] = st->tick_time_ns;
      v->lat[v->n] = reset ? -1 : st->stats->lateness_ns;
      v->ovr[v->n][0] = st->stats->own_overruns;
      v->ovr[v->n][1] = st->stats->preempted_overruns;
      v->ovr[v->n][2] = st->stats->late_overruns;
      v->ovr[v->n][3] = st->stats->missed;
      v->n++;
    }
  }
  return NULL;
}

/* The comparison of flood with control windows (Mann-Whitney): the number
 * of (flood, control) pairs of windows in which the flood window is worse
 * (sign 1: larger is worse, -1: smaller), ties counting half; returned
 * doubled. With no effect of the flood the 16 windows are exchangeable and
 * each of the C(16, 8) = 12870 ways to pick the flood's 8 is as likely:
 * 60 or more of the 64 pairs come with 12 of them (p = 0.00093), so a flood
 * that is worse in more than WORSE_MAX pairs is beyond the control's own
 * window-to-window spread. A request kind that delays ticks makes every
 * flood window worse: 64 of 64. */
#define WORSE_MAX 59
static int worse_pairs(const double *flood, const double *control, int sign) {
  int u2 = 0;
  for (int i = 0; i < NWIN / 2; i++)
    for (int j = 0; j < NWIN / 2; j++) {
      double d = sign * (flood[i] - control[j]);
      u2 += d > 0 ? 2 : d == 0 ? 1 : 0;
    }
  return u2;
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

/* 1 when this thread may take SCHED_FIFO (tried, then given back) */
static int fifo_allowed(void) {
  struct sched_param fifo = {.sched_priority = FLOOD_RT_PRIORITY}, other = {.sched_priority = 0};
  if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) != 0) return 0;
  pthread_setschedparam(pthread_self(), SCHED_OTHER, &other);
  return 1;
}

static uint64_t stats_dropped(khzClient *c) {
  const Khz__V1__Stats *st = khz_client_getStats(c, 5000);
  return st ? st->replies_dropped : (uint64_t)-1;
}

int main(void) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  /* the loop thread at a low SCHED_FIFO priority where the machine grants
   * it (root, CAP_SYS_NICE or RLIMIT_RTPRIO): then only the loop's own work
   * can make a tick late, not the flooders' threads competing with it for
   * the CPU, and lateness compares like with like. Unprivileged the loop
   * runs SCHED_OTHER, lateness is the scheduler's, and only the ticks made
   * are compared (said so). */
  int fifo = fifo_allowed();
  cfg.rt_priority = fifo ? FLOOD_RT_PRIORITY : 0;
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  viewer *v = calloc(1, sizeof *v);
  v->c = harness_client(&h);
  khzClient *good = harness_client(&h);
  ENSURE(v->c && good);
  if (!v->c || !good) return ensure_report();
  pthread_t vt;
  pthread_create(&vt, NULL, viewer_main, v);

  /* the windows: control and flood in turn */
  const char *null_env = getenv("KHZ_FLOOD_NULL");
  int null_run = null_env && atoi(null_env) == 1;
  void *ctx = zmq_ctx_new();
  flooder f[2];
  flooder_open(&f[0], ctx, h.cmd_ep);
  flooder_open(&f[1], ctx, h.cmd_ep);
  nap_ms(100);
  int rounds = 0, good_busy = 0, good_fail = 0;
  int64_t wstart[NWIN + 1]; /* the windows' bounds, monotonic */
  for (int w = 0; w < NWIN; w++) {
    int64_t t0 = wstart[w] = khz_client_now();
    if (w % 2 == 0 || null_run) {
      nap_ms(WINDOW_MS);
      continue;
    }
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
  }
  wstart[NWIN] = khz_client_now();
  nap_ms(50); /* the last window's states */
  atomic_store(&v->stop, 1);
  pthread_join(vt, NULL);

  /* per window (a state belongs to the window its tick was scheduled in):
   * lateness p99, and the share of its periods the loop made a tick in (a
   * tick delayed past the next period skips it); pooled over each kind */
  static int64_t pool[2][MAXSTATES], one[MAXSTATES];
  int npool[2] = {0, 0};
  double p99w[2][NWIN / 2], ownw[2][NWIN / 2] = {{0}};
  uint64_t ovr[2][4] = {{0}};
  for (int w = 0; w < NWIN; w++) {
    int k = w % 2, n = 0;
    int last = -1; /* the last state seen */
    for (int i = 0; i < v->n; i++) {
      if (v->tick[i] < wstart[w] || v->tick[i] >= wstart[w + 1]) continue;
      /* overruns by cause and periods missed since the last state (a count
       * below the last one: ResetStats set it back) */
      uint64_t d[4] = {0, 0, 0, 0};
      for (int c = 0; c < 4 && last >= 0; c++)
        d[c] = v->ovr[i][c] >= v->ovr[last][c] ? v->ovr[i][c] - v->ovr[last][c] : v->ovr[i][c];
      for (int c = 0; c < 4; c++) ovr[k][c] += d[c];
      ownw[k][w / 2] += (double)d[0];
      last = i;
      if (v->lat[i] < 0) continue; /* a reset: no tick */
      /* each period the loop skipped before this tick is a tick late by the
       * time from its period to the start of this one */
      for (uint64_t j = 1; j <= d[3] && n < MAXSTATES; j++) {
        int64_t late = v->lat[i] + (int64_t)j * 1000000;
        one[n++] = late;
        if (npool[k] < MAXSTATES) pool[k][npool[k]++] = late;
      }
      if (n < MAXSTATES) one[n++] = v->lat[i];
      if (npool[k] < MAXSTATES) pool[k][npool[k]++] = v->lat[i];
    }
    int64_t p99 = quantile(one, n, 0.99);
    p99w[k][w / 2] = n ? (double)p99 : 1e18; /* a window with no state: the worst */
    printf("window %2d (%s): %5.0f ms, %4d ticks and periods missed, lateness p99 %8.1f us, max "
           "%8.1f us, khz's own overruns %.0f\n", w, k ? (null_run ? "control (null run)" : "flood") : "control",
           (wstart[w + 1] - wstart[w]) / 1e6, n, p99 / 1e3, quantile(one, n, 1.0) / 1e3, ownw[k][w / 2]);
  }
  int64_t c99 = quantile(pool[0], npool[0], 0.99), f99 = quantile(pool[1], npool[1], 0.99);
  long sent = f[0].sent + f[1].sent, replies = f[0].replies + f[1].replies;
  int u_lat = worse_pairs(p99w[1], p99w[0], 1);
  int u_own = worse_pairs(ownw[1], ownw[0], 1);
  printf("overruns (khz's own / preempted mid-tick / woke late) and periods missed: control %llu / "
         "%llu / %llu, %llu; flood %llu / %llu / %llu, %llu\n", (unsigned long long)ovr[0][0],
         (unsigned long long)ovr[0][1], (unsigned long long)ovr[0][2], (unsigned long long)ovr[0][3],
         (unsigned long long)ovr[1][0], (unsigned long long)ovr[1][1], (unsigned long long)ovr[1][2],
         (unsigned long long)ovr[1][3]);
  printf("control: %d ticks and periods missed, lateness p99 %.1f us\n", npool[0], c99 / 1e3);
  printf("flood:   %d ticks and periods missed, lateness p99 %.1f us; %d rounds, "
         "%ld requests, %ld replies (%ld BUSY, %ld naming the per-client bound), %ld duplicate, "
         "%ld missing, %ld stray; well-behaved client: %d BUSY, %d failed\n",
         npool[1], f99 / 1e3, rounds, sent, replies,
         f[0].busy + f[1].busy, f[0].busy_bound + f[1].busy_bound, f[0].dup + f[1].dup,
         f[0].missing + f[1].missing, f[0].other + f[1].other, good_busy, good_fail);
  printf("(flood, control) window pairs in which the flood window is worse, of %d (at most %d "
         "allowed): lateness p99 %.1f, khz's own overruns %.1f\n", NWIN * NWIN / 4, WORSE_MAX,
         u_lat / 2.0, u_own / 2.0);
  if (npool[0] - (int)ovr[0][3] < NWIN / 2 * WINDOW_MS / 4) {
    printf("note: the machine is too loaded for the timing comparison (the control windows made "
           "%d ticks in %d periods): skipped\n", npool[0] - (int)ovr[0][3], NWIN / 2 * WINDOW_MS);
  } else {
    if (fifo && !sanitized)
      ENSURE_MSG(u_lat <= 2 * WORSE_MAX, "flood windows' lateness p99 beyond the control's: worse "
                 "in %.1f of %d window pairs (pooled p99 %.1f us, control %.1f us)", u_lat / 2.0,
                 NWIN * NWIN / 4, f99 / 1e3, c99 / 1e3);
    else if (fifo)
      printf("note: a sanitized build: its I/O side takes several times the CPU per request, "
             "so the flood's lateness is not the release server's; not compared\n");
    else
      printf("note: SCHED_FIFO not granted: the loop competes with the flooders for the CPU, "
             "lateness not compared\n");
    ENSURE_MSG(u_own <= 2 * WORSE_MAX, "flood windows had more of khz's own overruns than the "
               "control's: worse in %.1f of %d window pairs (%llu against %llu)", u_own / 2.0,
               NWIN * NWIN / 4, (unsigned long long)ovr[1][0], (unsigned long long)ovr[0][0]);
  }
  if (null_run) {
    khz_client_destroy(&v->c);
    khz_client_destroy(&good);
    zmq_close(f[0].sock);
    zmq_close(f[1].sock);
    zmq_ctx_term(ctx);
    free(v);
    harness_stop(&h);
    return ensure_report();
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
