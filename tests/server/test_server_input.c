/* test_server_input.c — bad input from clients, each case on its own: random
 * bytes, a truncated protobuf, an unknown message type (and an unknown
 * request), a command with the wrong number of joints, NaN and inf torques,
 * torques over the effort limit (applied clamped, flagged), a wrong model
 * generation, a command for a state not yet published, a control request
 * naming an unknown body, and a reset during a lockstep wait (the late answer
 * to the old state is dropped). Each is answered with an error that reaches
 * the client that sent it (and no other), is counted by code, and the server
 * keeps ticking with nothing of the bad message applied. */
#include "harness.h"

typedef struct ctx {
  khzClient *bad, *good;
  const Khz__V1__ModelDescription *md;
  Khz__V1__Command cmd;
  double tau[64];
  uint64_t seq;
} ctx;

/* the good command (small torques) that keeps being applied */
static void send_good(ctx *x) {
  const Khz__V1__State *st = khz_client_latestState(x->good, 2000);
  ENSURE(st != NULL);
  if (!st) return;
  for (size_t a = 0; a < x->md->na; a++) x->tau[a] = 0.5;
  x->cmd.n_tau = x->md->na;
  x->cmd.tau = x->tau;
  x->cmd.seq = ++x->seq;
  x->cmd.state_seq = st->seq;
  x->cmd.model_generation = x->md->model_generation;
  khz_client_command(x->good, &x->cmd);
}

/* states keep coming; the command applied is still the good one (cmd_seq),
 * unless expect_seq says which one */
static void check_ticking(ctx *x, uint64_t expect_cmd) {
  const Khz__V1__State *st = khz_client_latestState(x->good, 2000);
  ENSURE(st != NULL);
  if (!st) return;
  uint64_t seq0 = st->seq, missed0 = st->stats->missed;
  int n = 0, gaps = 0;
  uint64_t last = seq0;
  int64_t until = patience_ends();
  while (n < 30) {
    st = patient_state(x->good, until);
    ENSURE(st != NULL);
    if (!st) return;
    if (st->seq != last + 1) gaps++;
    last = st->seq;
    n++;
  }
  ENSURE(gaps == 0);
  ENSURE_MSG(st->command_seq == expect_cmd, "command_seq %llu, expected %llu",
             (unsigned long long)st->command_seq, (unsigned long long)expect_cmd);
  if (st->stats->missed != missed0)
    printf("note: %llu periods missed meanwhile (machine noise)\n",
           (unsigned long long)(st->stats->missed - missed0));
}

/* the error reaches the sender only, with the expected code, and is counted */
static void expect_error(ctx *x, int code, int code2, const char *what) {
  const Khz__V1__Error *e = khz_client_nextError(x->bad, 2000);
  ENSURE_MSG(e != NULL, "%s: no error reached the client", what);
  if (e) {
    ENSURE_MSG((int)e->code == code || (int)e->code == code2, "%s: code %d", what, e->code);
    ENSURE(e->message && e->message[0]);
    printf("%-28s -> %d: %s\n", what, e->code, e->message);
  }
  ENSURE_MSG(khz_client_nextError(x->good, 50) == NULL, "%s: error went to another client", what);
}

static uint64_t count(ctx *x, int code) { return rejected_count(x->good, code); }

static void bad_command(ctx *x, void (*edit)(Khz__V1__Command *, double *), int code,
                        const char *what) {
  const Khz__V1__State *st = khz_client_latestState(x->bad, 2000);
  Khz__V1__Command c;
  double tau[64];
  khz__v1__command__init(&c);
  for (size_t a = 0; a < x->md->na; a++) tau[a] = 1.0;
  c.model_generation = x->md->model_generation;
  c.seq = 900000 + x->seq;
  c.state_seq = st ? st->seq : 0;
  c.n_tau = x->md->na;
  c.tau = tau;
  edit(&c, tau);
  uint64_t before = count(x, code);
  khz_client_command(x->bad, &c);
  expect_error(x, code, code, what);
  ENSURE(count(x, code) == before + 1);
  check_ticking(x, x->seq);
}

static void short_tau(Khz__V1__Command *c, double *t) { (void)t, c->n_tau--; }
static void nan_tau(Khz__V1__Command *c, double *t) { (void)c, t[2] = NAN; }
static void inf_tau(Khz__V1__Command *c, double *t) { (void)c, t[0] = -INFINITY; }
static void wrong_gen(Khz__V1__Command *c, double *t) { (void)t, c->model_generation ^= 0x5a5a; }
static void future_state(Khz__V1__Command *c, double *t) { (void)t, c->state_seq += 1000000; }
static void pd_short(Khz__V1__Command *c, double *t) { c->n_q_target = 3, c->q_target = t; }

int main(void) {
  khzServerConfig cfg;
  harness h;
  ctx x;
  memset(&x, 0, sizeof x);
  harness_config(&cfg);
  cfg.watchdog_ms = 0; /* the good command holds for the whole test */
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  x.good = harness_client(&h);
  x.bad = harness_client(&h);
  ENSURE(x.good && x.bad);
  if (!x.good || !x.bad) return ensure_report();
  x.md = khz_client_describe(x.good, 5000);
  khz__v1__command__init(&x.cmd);
  send_good(&x);
  check_ticking(&x, x.seq);

  /* random bytes */
  uint8_t noise[200];
  srand(7);
  for (size_t i = 0; i < sizeof noise; i++) noise[i] = (uint8_t)rand();
  noise[0] = 0xff; /* field 31, wire type 7: not protobuf */
  uint64_t b0 = count(&x, KHZ__V1__ERROR_CODE__BAD_MESSAGE);
  khz_client_sendRaw(x.bad, noise, sizeof noise);
  expect_error(&x, KHZ__V1__ERROR_CODE__BAD_MESSAGE, KHZ__V1__ERROR_CODE__BAD_MESSAGE, "random bytes");
  ENSURE(count(&x, KHZ__V1__ERROR_CODE__BAD_MESSAGE) == b0 + 1);
  check_ticking(&x, x.seq);

  /* a truncated protobuf: a valid command cut in half */
  Khz__V1__ClientMessage cm;
  khz__v1__client_message__init(&cm);
  cm.body_case = KHZ__V1__CLIENT_MESSAGE__BODY_COMMAND;
  cm.command = &x.cmd;
  uint8_t buf[1024];
  size_t n = khz__v1__client_message__pack(&cm, buf);
  khz_client_sendRaw(x.bad, buf, n / 2);
  expect_error(&x, KHZ__V1__ERROR_CODE__BAD_MESSAGE, KHZ__V1__ERROR_CODE__BAD_MESSAGE, "truncated protobuf");
  ENSURE(count(&x, KHZ__V1__ERROR_CODE__BAD_MESSAGE) == b0 + 2);
  check_ticking(&x, x.seq);

  /* an unknown message type: a ClientMessage with only field 15 (a newer version's) */
  uint8_t unknown[] = {0x7a, 0x02, 0x08, 0x01};
  uint64_t u0 = count(&x, KHZ__V1__ERROR_CODE__UNKNOWN_TYPE);
  khz_client_sendRaw(x.bad, unknown, sizeof unknown);
  expect_error(&x, KHZ__V1__ERROR_CODE__UNKNOWN_TYPE, KHZ__V1__ERROR_CODE__UNKNOWN_TYPE, "unknown message type");
  ENSURE(count(&x, KHZ__V1__ERROR_CODE__UNKNOWN_TYPE) == u0 + 1);
  /* and a request of an unknown type: the reply says so */
  Khz__V1__Request rq;
  khz__v1__request__init(&rq);
  const Khz__V1__Reply *r = khz_client_request(x.bad, &rq, 2000);
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__UNKNOWN_TYPE && r->error[0]);
  ENSURE(count(&x, KHZ__V1__ERROR_CODE__UNKNOWN_TYPE) == u0 + 2);
  check_ticking(&x, x.seq);

  /* commands: wrong number of joints, NaN, inf, wrong generation, a future state */
  bad_command(&x, short_tau, KHZ__V1__ERROR_CODE__WRONG_SIZE, "wrong number of joints");
  bad_command(&x, pd_short, KHZ__V1__ERROR_CODE__WRONG_SIZE, "PD targets, wrong size");
  bad_command(&x, nan_tau, KHZ__V1__ERROR_CODE__NOT_FINITE, "NaN torque");
  bad_command(&x, inf_tau, KHZ__V1__ERROR_CODE__NOT_FINITE, "inf torque");
  bad_command(&x, wrong_gen, KHZ__V1__ERROR_CODE__WRONG_GENERATION, "wrong model generation");
  bad_command(&x, future_state, KHZ__V1__ERROR_CODE__STALE, "unpublished state");

  /* torque over the effort limit: applied clamped, flagged, the sender told */
  {
    const Khz__V1__State *st = khz_client_latestState(x.bad, 2000);
    double tau[64];
    for (size_t a = 0; a < x.md->na; a++) tau[a] = 0.5;
    tau[0] = 1000;
    Khz__V1__Command c;
    khz__v1__command__init(&c);
    c.model_generation = x.md->model_generation;
    c.seq = 777;
    c.state_seq = st->seq;
    c.n_tau = x.md->na;
    c.tau = tau;
    uint64_t c0 = count(&x, KHZ__V1__ERROR_CODE__CLAMPED);
    khz_client_command(x.bad, &c);
    const Khz__V1__Error *e = khz_client_nextError(x.bad, 2000);
    ENSURE(e && e->code == KHZ__V1__ERROR_CODE__CLAMPED && e->applied && e->command_seq == 777);
    if (e) printf("%-28s -> %d: %s\n", "over the effort limit", e->code, e->message);
    ENSURE(count(&x, KHZ__V1__ERROR_CODE__CLAMPED) == c0 + 1);
    /* the states that applied it, found by command_seq (not among the next N:
     * the round trips above leave a backlog of older states on a loaded
     * machine); the command holds until the next, so it is applied again */
    int flagged = 0, applied = 0;
    int64_t until = patience_ends();
    const Khz__V1__State *s2;
    while (!flagged && (s2 = patient_state(x.good, until))) {
      if (s2->command_seq == 777) {
        applied++;
        flagged = (s2->flags & KHZ__V1__STATE_FLAG__FLAG_CLAMPED) != 0;
        ENSURE(s2->tau[x.md->actuators[0]->qd_index] == x.md->actuators[0]->effort_limit);
      }
    }
    ENSURE(flagged && applied == 1); /* flagged from the first tick that applied it */
    send_good(&x);
    check_ticking(&x, x.seq);
  }

  /* a control request naming an unknown body (by name, by id of another model) */
  {
    Khz__V1__Request wr;
    Khz__V1__ApplyWrench w;
    Khz__V1__BodyRef ref;
    Khz__V1__BodyId bid;
    double f[3] = {0, 0, 1};
    khz__v1__request__init(&wr);
    khz__v1__apply_wrench__init(&w);
    khz__v1__body_ref__init(&ref);
    ref.ref_case = KHZ__V1__BODY_REF__REF_NAME;
    ref.name = "no_such_body";
    w.body = &ref;
    w.n_force = 3;
    w.force = f;
    w.duration = 0.1;
    wr.op_case = KHZ__V1__REQUEST__OP_APPLY_WRENCH;
    wr.apply_wrench = &w;
    uint64_t n0 = count(&x, KHZ__V1__ERROR_CODE__UNKNOWN_NAME);
    r = khz_client_request(x.bad, &wr, 2000);
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__UNKNOWN_NAME && strstr(r->error, "no_such_body"));
    if (r) printf("%-28s -> %d: %s\n", "unknown body", r->code, r->error);
    ENSURE(count(&x, KHZ__V1__ERROR_CODE__UNKNOWN_NAME) == n0 + 1);
    khz__v1__body_id__init(&bid);
    bid.index = 3;
    bid.generation = x.md->model_generation + 1;
    ref.ref_case = KHZ__V1__BODY_REF__REF_ID;
    ref.id = &bid;
    r = khz_client_request(x.bad, &wr, 2000);
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__WRONG_GENERATION);
    check_ticking(&x, x.seq);
  }

  /* a reset during a lockstep wait */
  {
    r = req_setting(x.good, "lockstep_timeout_ms", "0");
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
    r = req_setting(x.good, "mode", "lockstep");
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
    /* the loop now waits for an answer to the newest state; nobody answers.
     * The state it waits on is the one the I/O thread re-publishes
     * (FLAG_REPEATED): found by that flag, not by a pause of N ms (older
     * states may still be queued or on their way on a loaded machine) */
    const Khz__V1__State *st;
    int64_t until = patience_ends();
    while ((st = patient_state(x.bad, until)) && !(st->flags & KHZ__V1__STATE_FLAG__FLAG_REPEATED)) {
    }
    ENSURE(st != NULL);
    if (!st) return ensure_report();
    uint64_t waiting_on = st->seq;
    nap_ms(50);
    st = khz_client_latestState(x.bad, 2000);
    ENSURE(st && st->seq == waiting_on); /* only keep-alive repeats */
    r = req_reset(x.good);
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK && r->state_seq == waiting_on + 1);
    uint64_t reset_seq = r ? r->state_seq : 0;
    /* the old state's late answer: dropped, and the sender told */
    double tau[64] = {0};
    Khz__V1__Command c;
    khz__v1__command__init(&c);
    c.model_generation = x.md->model_generation;
    c.seq = 4242;
    c.state_seq = waiting_on;
    c.n_tau = x.md->na;
    c.tau = tau;
    uint64_t s0 = count(&x, KHZ__V1__ERROR_CODE__STALE);
    khz_client_command(x.bad, &c);
    expect_error(&x, KHZ__V1__ERROR_CODE__STALE, KHZ__V1__ERROR_CODE__STALE, "reset during lockstep wait");
    ENSURE(count(&x, KHZ__V1__ERROR_CODE__STALE) == s0 + 1);
    /* the answer to the reset state ticks the loop */
    c.seq = 4243;
    c.state_seq = reset_seq;
    khz_client_command(x.bad, &c);
    int ticked = 0;
    until = patience_ends();
    while (!ticked && (st = patient_state(x.bad, until))) {
      ticked = st && st->seq == reset_seq + 1 && st->command_seq == 4243 &&
               !(st->flags & KHZ__V1__STATE_FLAG__FLAG_RESET);
    }
    ENSURE(ticked);
    r = req_setting(x.good, "mode", "realtime");
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
    send_good(&x);
    check_ticking(&x, x.seq);
  }

  /* the totals */
  r = req_simple(x.good, KHZ__V1__REQUEST__OP_GET_STATS);
  ENSURE(r && r->stats && r->stats->rejected >= 13);
  if (r && r->stats)
    printf("rejected %llu messages; the loop ticked %llu times\n",
           (unsigned long long)r->stats->rejected, (unsigned long long)r->stats->tick->ticks);
  khz_client_destroy(&x.good);
  khz_client_destroy(&x.bad);
  harness_stop(&h);
  return ensure_report();
}
