/* test_server_physical.c — every physical input is checked against the model
 * (issue 20, item 4): wrenches (force against the mass the body carries,
 * torque against its inertia), reset states (finite, within joint limits and
 * bounds, usable quaternions), PD gains (SetGains, the kp/kd settings, a
 * command's own, the start flags: within the sampled PD's stability bound),
 * haptic device inputs (position and speed bounds). Each bad value is refused
 * with OUT_OF_RANGE and a message naming it and its limit, nothing of it is
 * applied, and the state never goes bad (the old server accepted 1e300 N and
 * q = 1e300, and every tick after rolled back: FLAG_BADSTATE). Reasonable
 * values still pass. */
#include "harness.h"

static const Khz__V1__Reply *wrench(khzClient *c, const char *body, double f, double t) {
  Khz__V1__Request rq;
  Khz__V1__ApplyWrench w;
  Khz__V1__BodyRef ref;
  double force[3] = {0, 0, f}, torque[3] = {0, 0, t};
  khz__v1__request__init(&rq);
  khz__v1__apply_wrench__init(&w);
  khz__v1__body_ref__init(&ref);
  ref.ref_case = KHZ__V1__BODY_REF__REF_NAME;
  ref.name = (char *)body;
  w.body = &ref;
  w.n_force = w.n_torque = 3;
  w.force = force, w.torque = torque;
  w.duration = 0.05;
  rq.op_case = KHZ__V1__REQUEST__OP_APPLY_WRENCH;
  rq.apply_wrench = &w;
  return khz_client_request(c, &rq, 5000);
}

static const Khz__V1__Reply *reset_q(khzClient *c, double *q, size_t nq) {
  Khz__V1__Request rq;
  Khz__V1__Reset r;
  khz__v1__request__init(&rq);
  khz__v1__reset__init(&r);
  r.n_q = nq;
  r.q = q;
  rq.op_case = KHZ__V1__REQUEST__OP_RESET;
  rq.reset = &r;
  return khz_client_request(c, &rq, 5000);
}

static const Khz__V1__Reply *set_gains(khzClient *c, double *kp, double *kd, size_t n) {
  Khz__V1__Request rq;
  Khz__V1__SetGains g;
  khz__v1__request__init(&rq);
  khz__v1__set_gains__init(&g);
  g.n_kp = g.n_kd = n;
  g.kp = kp, g.kd = kd;
  rq.op_case = KHZ__V1__REQUEST__OP_SET_GAINS;
  rq.set_gains = &g;
  return khz_client_request(c, &rq, 5000);
}

static void expect(const Khz__V1__Reply *r, int code, const char *needle, const char *what) {
  ENSURE_MSG(r && (int)r->code == code, "%s: code %d", what, r ? (int)r->code : -1);
  if (r && needle) ENSURE_MSG(strstr(r->error, needle), "%s: '%s' lacks '%s'", what, r->error, needle);
  if (r) printf("%-26s -> %d %s\n", what, r->code, r->error);
}

/* 200 states without FLAG_BADSTATE */
#define state_good(c) state_good_(c, __LINE__)
static void state_good_(khzClient *c, int line) {
  int bad = 0, n = 0;
  khz_client_latestState(c, 2000);
  for (int k = 0; k < 200; k++) {
    const Khz__V1__State *st = khz_client_nextState(c, 2000);
    if (!st) break;
    n++;
    if (st->flags & KHZ__V1__STATE_FLAG__FLAG_BADSTATE) bad++;
  }
  ENSURE_MSG(n == 200 && bad == 0, "line %d: %d states, %d bad", line, n, bad);
}

int main(void) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  khzClient *c = harness_client(&h);
  ENSURE(c != NULL);
  if (!c) return ensure_report();
  const Khz__V1__ModelDescription *md = khz_client_describe(c, 5000);
  size_t nq = md->nq, na = md->na;

  /* wrenches: box1 is 0.2 kg, 1.2e-4 kg m^2 */
  expect(wrench(c, "box1", 1e300, 0), KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "limit 200 N", "force 1e300 N");
  expect(wrench(c, "box1", 500, 0), KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "limit 200 N", "force 500 N");
  expect(wrench(c, "box1", 0, 100), KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "N m", "torque 100 N m");
  expect(wrench(c, "box1", 10, 0.01), KHZ__V1__ERROR_CODE__OK, NULL, "10 N, 0.01 N m");
  state_good(c);

  /* resets */
  const Khz__V1__State *st = khz_client_latestState(c, 2000);
  double *q = calloc(nq, sizeof *q), *q0 = calloc(nq, sizeof *q0);
  memcpy(q0, st->q, nq * sizeof *q);
  for (size_t i = 0; i < nq; i++) q[i] = 1e300;
  expect(reset_q(c, q, nq), KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "q[", "q = 1e300");
  const Khz__V1__JointInfo *j2 = NULL, *box = NULL;
  for (size_t j = 0; j < md->n_joints; j++) {
    if (!strcmp(md->joints[j]->name, "arm/joint2")) j2 = md->joints[j];
    if (!strcmp(md->joints[j]->name, "box1")) box = md->joints[j];
  }
  ENSURE(j2 && j2->limited && box);
  if (j2 && box) {
    memcpy(q, q0, nq * sizeof *q);
    q[j2->q_index] = j2->upper + 0.5;
    expect(reset_q(c, q, nq), KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "outside its limits", "joint2 beyond its limit");
    memcpy(q, q0, nq * sizeof *q);
    for (int k = 0; k < 4; k++) q[box->q_index + 3 + k] = 0;
    expect(reset_q(c, q, nq), KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "quaternion", "box1 zero quaternion");
    memcpy(q, q0, nq * sizeof *q);
    q[box->q_index] = 5e4;
    expect(reset_q(c, q, nq), KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "beyond 10000 m", "box1 at 50 km");
    /* a state read from the stream resets (joints may sit a little past
     * their limits, held by the limit springs) */
    expect(reset_q(c, q0, nq), KHZ__V1__ERROR_CODE__OK, NULL, "the state as streamed");
  }
  state_good(c);

  /* gains: the arm's last joint has about 3.1e-3 kg m^2: kd <= 6.3, kp <= 1.25e4 at 1 kHz */
  double kp[64], kd[64];
  for (size_t a = 0; a < na; a++) kp[a] = 50, kd[a] = 1;
  kd[6] = 1e6;
  expect(set_gains(c, kp, kd, na), KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "kd[6] = 1e+06", "set_gains kd 1e6");
  kd[6] = 1, kp[6] = 1e9;
  expect(set_gains(c, kp, kd, na), KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "kp[6] = 1e+09", "set_gains kp 1e9");
  kp[6] = 50;
  expect(set_gains(c, kp, kd, na), KHZ__V1__ERROR_CODE__OK, NULL, "set_gains 50 / 1");
  /* a rate change keeps the gains in force stable: kp[6] = 1e4 holds at 1 kHz
   * (limit 1.25e4) but not at 500 Hz (limit 3.1e3) */
  kp[6] = 1e4;
  expect(set_gains(c, kp, kd, na), KHZ__V1__ERROR_CODE__OK, NULL, "set_gains kp[6] 1e4");
  {
    Khz__V1__Request rq;
    Khz__V1__SetRate sr;
    khz__v1__request__init(&rq);
    khz__v1__set_rate__init(&sr);
    sr.rate_hz = 500;
    rq.op_case = KHZ__V1__REQUEST__OP_SET_RATE;
    rq.set_rate = &sr;
    expect(khz_client_request(c, &rq, 5000), KHZ__V1__ERROR_CODE__OUT_OF_RANGE,
           "set_rate: setting 'rate_hz' 500: rate 500 Hz: gains: kp[6] = 10000",
           "set_rate 500 with kp[6] 1e4");
  }
  expect(req_setting(c, "rate_hz", "500"), KHZ__V1__ERROR_CODE__OUT_OF_RANGE,
         "set_setting: setting 'rate_hz' 500: rate 500 Hz: gains: kp[6] = 10000",
         "setting rate_hz 500");
  double hz_now = 0;
  const Khz__V1__State *rs = khz_client_latestState(c, 2000);
  if (rs) hz_now = rs->rate_hz;
  ENSURE(hz_now == 1000);
  state_good(c);
  kp[6] = 50;
  expect(set_gains(c, kp, kd, na), KHZ__V1__ERROR_CODE__OK, NULL, "set_gains 50 / 1 again");
  expect(req_setting(c, "rate_hz", "500"), KHZ__V1__ERROR_CODE__OK, NULL, "setting rate_hz 500");
  expect(req_setting(c, "rate_hz", "1000"), KHZ__V1__ERROR_CODE__OK, NULL, "setting rate_hz 1000");
  expect(req_setting(c, "kd", "1000"), KHZ__V1__ERROR_CODE__OUT_OF_RANGE,
         "set_setting: setting 'kd' 1000: gains: kd[0] = 1000", "setting kd 1000");
  expect(req_setting(c, "kp", "1e9"), KHZ__V1__ERROR_CODE__OUT_OF_RANGE,
         "set_setting: setting 'kp' 1e+09: gains: kp[0] = 1e+09", "setting kp 1e9");
  expect(req_setting(c, "kd", "0.5"), KHZ__V1__ERROR_CODE__OK, NULL, "setting kd 0.5");
  st = khz_client_latestState(c, 2000);
  double qt[64];
  for (size_t a = 0; a < na; a++) qt[a] = st->q[md->actuators[a]->q_index], kp[a] = 1e9;
  while (khz_client_nextError(c, 0)) {
  }
  khz_client_sendTargets(c, st, qt, NULL, kp, kd, NULL, na);
  const Khz__V1__Error *e = khz_client_nextError(c, 2000);
  ENSURE(e && e->code == KHZ__V1__ERROR_CODE__OUT_OF_RANGE && strstr(e->message, "unstable"));
  if (e) printf("%-26s -> %d %s\n", "command kp 1e9", e->code, e->message);
  state_good(c);
  free(q), free(q0);
  khz_client_destroy(&c);
  harness_stop(&h);

  /* the start flags */
  harness_config(&cfg);
  cfg.kd = 1e6;
  char err[512];
  khzServer *s = khz_server_new(&cfg, NULL, err, sizeof err);
  ENSURE(s == NULL && strstr(err, "'kd'") && strstr(err, "unstable"));
  if (!s) printf("--kd 1e6 at start: %s\n", err);
  khz_server_destroy(&s);

  /* a haptic device far away or too fast */
  harness_config(&cfg);
  snprintf(cfg.scene, sizeof cfg.scene, "scenes/haptic_wall.yaml");
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  c = harness_client(&h);
  ENSURE(c != NULL);
  if (c) {
    double pos[3] = {1e300, 0, 0}, quat[4] = {1, 0, 0, 0}, vel[3] = {0, 0, 1e5};
    khz_client_sendHaptic(c, 0, pos, quat, NULL, NULL);
    e = khz_client_nextError(c, 2000);
    ENSURE(e && e->code == KHZ__V1__ERROR_CODE__OUT_OF_RANGE && strstr(e->message, "position[0]"));
    if (e) printf("%-26s -> %d %s\n", "haptic at 1e300 m", e->code, e->message);
    pos[0] = 0.05;
    khz_client_sendHaptic(c, 0, pos, quat, vel, NULL);
    e = khz_client_nextError(c, 2000);
    ENSURE(e && e->code == KHZ__V1__ERROR_CODE__OUT_OF_RANGE && strstr(e->message, "velocity[2]"));
    if (e) printf("%-26s -> %d %s\n", "haptic at 1e5 m/s", e->code, e->message);
    state_good(c);
    khz_client_destroy(&c);
  }
  harness_stop(&h);
  return ensure_report();
}
