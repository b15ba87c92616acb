/* test_server_lcp.c — the server's run-time switch to the LCP method (issue 21)
 * and to PEG (issue 22):
 * a client switches a running server (the default scene: the arm and five
 * loose objects resting on the table, realtime at 1 kHz) from the scene's
 * penalty method to `lcp` and back. States keep coming (consecutive seqs, no
 * bad state), every state after the switch names the method, so do Describe
 * and the setting, the objects stay where they rest and their contacts carry
 * their weight; most LCP steps are solved by Lemke (a step that falls back to
 * penalty is counted in the state's `lcp` warning). A switch the model cannot
 * take (LCP with equality constraints) is refused with the reason, at run
 * time by SetContactMethod and SetSetting and at start, and nothing of it is
 * applied: the method, the setting and the warnings stay as they were. The
 * same round trip to PEG on three boxes, and PEG refused on the default
 * scene (shapes it has no model of). */
#include "harness.h"

#define NOBJ 5
static const char *const objects[NOBJ] = {"box1", "box2", "ball", "can", "capsule"};
/* PEG takes boxes, convex meshes and planes only: its switch runs on three
 * boxes, two of them stacked (tests/server/data/peg_boxes.yaml) */
#define PEG_SCENE "tests/server/data/peg_boxes.yaml"
#define NBOX 3 /* at most NOBJ */
static const char *const boxes[NBOX] = {"box1", "box2", "box3"};

static const Khz__V1__Reply *set_method(khzClient *c, const char *name) {
  Khz__V1__Request rq;
  Khz__V1__SetContactMethod scm;
  khz__v1__request__init(&rq);
  khz__v1__set_contact_method__init(&scm);
  scm.method = (char *)name;
  rq.op_case = KHZ__V1__REQUEST__OP_SET_CONTACT_METHOD;
  rq.set_contact_method = &scm;
  return khz_client_request(c, &rq, 5000);
}

static const char *setting_value(khzClient *c, const char *name) {
  Khz__V1__Request rq;
  Khz__V1__GetSetting gs;
  khz__v1__request__init(&rq);
  khz__v1__get_setting__init(&gs);
  gs.name = (char *)name;
  rq.op_case = KHZ__V1__REQUEST__OP_GET_SETTING;
  rq.get_setting = &gs;
  const Khz__V1__Reply *r = khz_client_request(c, &rq, 5000);
  return r && r->settings && r->settings->n_settings == 1 ? r->settings->settings[0]->value : "?";
}

/* the method Describe names, asked anew (khz_client_describe keeps the
 * description it fetched while the model's generation stays) */
static const char *described_method(khzClient *c) {
  Khz__V1__Request rq;
  Khz__V1__Describe d;
  khz__v1__request__init(&rq);
  khz__v1__describe__init(&d);
  rq.op_case = KHZ__V1__REQUEST__OP_DESCRIBE;
  rq.describe = &d;
  const Khz__V1__Reply *r = khz_client_request(c, &rq, 5000);
  return r && r->model ? r->model->contact_method : "?";
}

static int body_index(const Khz__V1__ModelDescription *md, const char *name) {
  for (size_t b = 0; b < md->n_bodies; b++)
    if (!strcmp(md->bodies[b]->name, name)) return (int)md->bodies[b]->index;
  return -1;
}

static uint32_t lcp_warnings(const Khz__V1__State *st) {
  return st->n_warnings > KHZ_WARN_LCP ? st->warnings[KHZ_WARN_LCP] : 0;
}

/* what a run of states under one method showed */
typedef struct run {
  int states, gaps, bad, wrong_method, with_contacts;
  uint64_t first_seq, last_seq;
  uint32_t lcp_first, lcp_last;
  double z_err, load_err; /* worst |z - rest| (m); worst |mean contact force z / (m g) - 1| */
} run;

/* waits for the first state that names `method` (states ticked before the
 * switch may still be on their way), then reads n states */
static run observe(khzClient *c, const char *method, int n, int nobj, const int *body,
                   const double *mass, const double *rest_z) {
  run R = {0};
  int64_t until = patience_ends();
  const Khz__V1__State *st;
  while ((st = patient_state(c, until)) && strcmp(st->contact_method, method)) {
  }
  ENSURE_MSG(st != NULL, "no state names '%s'", method);
  if (!st) return R;
  double fz[NOBJ] = {0};
  uint64_t prev = 0;
  for (; st && R.states < n; st = patient_state(c, until)) {
    if (R.states == 0) R.first_seq = st->seq, R.lcp_first = lcp_warnings(st);
    else if (st->seq != prev + 1) R.gaps++;
    prev = R.last_seq = st->seq;
    R.lcp_last = lcp_warnings(st);
    R.states++;
    R.bad += (st->flags & KHZ__V1__STATE_FLAG__FLAG_BADSTATE) != 0;
    R.wrong_method += strcmp(st->contact_method, method) != 0;
    R.with_contacts += st->n_contacts > 0;
    for (int o = 0; o < nobj; o++) {
      double e = fabs(st->body_pose[7 * body[o] + 2] - rest_z[o]);
      if (e > R.z_err) R.z_err = e;
    }
    for (size_t k = 0; k < st->n_contacts; k++) {
      const Khz__V1__Contact *ct = st->contacts[k];
      for (int o = 0; o < nobj; o++) {
        if ((int)ct->body1 == body[o]) fz[o] += ct->force[2];
        if ((int)ct->body2 == body[o]) fz[o] -= ct->force[2];
      }
    }
  }
  for (int o = 0; o < nobj && R.states; o++) {
    double e = fabs(fz[o] / R.states / (mass[o] * 9.81) - 1);
    if (e > R.load_err) R.load_err = e;
  }
  printf("%-8s %d states (seq %llu..%llu, %d gaps), %d bad, %d naming another method, %d with "
         "contacts; worst |z - rest| %.3g m, worst |mean Fz / mg - 1| %.3g; steps falling back "
         "to penalty %u\n",
         method, R.states, (unsigned long long)R.first_seq, (unsigned long long)R.last_seq, R.gaps,
         R.bad, R.wrong_method, R.with_contacts, R.z_err, R.load_err, R.lcp_last - R.lcp_first);
  return R;
}

static void check_run(const run *R, int n, const char *what) {
  /* states keep coming: a loaded machine may drop a state on its way (a gap),
   * never stop the stream */
  ENSURE_MSG(R->states == n, "%s: %d of %d states", what, R->states, n);
  ENSURE_MSG(R->gaps <= n / 10, "%s: %d gaps in the seqs", what, R->gaps);
  ENSURE_MSG(R->bad == 0 && R->wrong_method == 0, "%s: %d bad states, %d naming another method",
             what, R->bad, R->wrong_method);
  ENSURE_MSG(R->with_contacts == R->states, "%s: %d of %d states with contacts", what,
             R->with_contacts, R->states);
  /* contacts hold: every object stays within 1 mm of where it rested, and
   * its contacts carry its weight (mean over the states) */
  ENSURE_MSG(R->z_err < 1e-3, "%s: an object moved %g m", what, R->z_err);
  ENSURE_MSG(R->load_err < 0.05, "%s: contact force off the weight by %g", what, R->load_err);
}

/* nothing of a refused switch applied: 200 states keep the method `before`
 * and no LCP or PEG step was tried (no lcp warning) */
static void method_kept(khzClient *c, const char *before) {
  ENSURE(!strcmp(described_method(c), before));
  int n = 0, other = 0;
  uint32_t warned = 0;
  int64_t until = patience_ends();
  const Khz__V1__State *st;
  khz_client_latestState(c, 2000);
  while (n < 200 && (st = patient_state(c, until))) {
    n++;
    other += strcmp(st->contact_method, before) != 0;
    warned += lcp_warnings(st);
  }
  ENSURE_MSG(n == 200 && other == 0 && warned == 0, "%d states, %d with another method, lcp warnings %u",
             n, other, warned);
}

/* a running server (scene: NULL for the default) switched from the scene's
 * penalty method to `method` by SetContactMethod and back by the setting,
 * its objects `names` resting throughout. `lift`: the first 50 states of
 * `method` may move the objects by this much before they rest again (PEG's
 * gap is the signed distance: its first step lifts boxes out of the penalty
 * method's rest), 0 when they must stay where they rested */
static void round_trip(const char *scene, const char *const *names, int nobj, const char *method,
                       double lift) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  if (scene) snprintf(cfg.scene, sizeof cfg.scene, "%s", scene);
  cfg.publish_contacts = 1;
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  khzClient *c = harness_client(&h);
  ENSURE(c != NULL);
  if (!c) {
    harness_stop(&h);
    return;
  }
  const Khz__V1__ModelDescription *md = khz_client_describe(c, 5000);
  ENSURE(md && !strcmp(md->contact_method, "penalty"));
  int body[NOBJ];
  double mass[NOBJ], rest_z[NOBJ], method_z[NOBJ];
  for (int o = 0; o < nobj; o++) {
    body[o] = md ? body_index(md, names[o]) : -1;
    ENSURE_MSG(body[o] > 0, "no body '%s'", names[o]);
    if (body[o] <= 0) return;
    mass[o] = md->bodies[body[o]]->mass;
  }
  /* the objects settle under the scene's method */
  const Khz__V1__State *st = NULL;
  int64_t until = patience_ends();
  while ((st = patient_state(c, until)) && st->sim_time < 0.5) {
  }
  ENSURE(st != NULL);
  if (!st) return;
  for (int o = 0; o < nobj; o++) rest_z[o] = method_z[o] = st->body_pose[7 * body[o] + 2];
  run R = observe(c, "penalty", 200, nobj, body, mass, rest_z);
  check_run(&R, 200, "penalty");

  const Khz__V1__Reply *r = set_method(c, method);
  ENSURE_MSG(r && r->code == KHZ__V1__ERROR_CODE__OK, "switch to %s: %s", method, r ? r->error : "no reply");
  if (lift > 0) {
    R = observe(c, method, 50, nobj, body, mass, rest_z);
    ENSURE_MSG(R.states == 50 && R.bad == 0 && R.z_err < lift, "%s's first states: %d, %d bad, moved %g m",
               method, R.states, R.bad, R.z_err);
    st = khz_client_latestState(c, 2000);
    ENSURE(st != NULL);
    if (!st) return;
    for (int o = 0; o < nobj; o++) method_z[o] = st->body_pose[7 * body[o] + 2];
  }
  R = observe(c, method, 500, nobj, body, mass, method_z);
  check_run(&R, 500, method);
  /* Lemke solves the steps: a step that falls back to penalty (pivot budget,
   * ray, or half the period spent, realtime) is counted in the `lcp`
   * warning; on a loaded machine many may (52 of 500 at load 14, release,
   * LCP), not nearly all */
  ENSURE_MSG(R.lcp_last - R.lcp_first < (uint32_t)(R.last_seq - R.first_seq) * 9 / 10,
             "%u of %llu %s steps fell back", R.lcp_last - R.lcp_first,
             (unsigned long long)(R.last_seq - R.first_seq), method);
  ENSURE(!strcmp(described_method(c), method));
  ENSURE(!strcmp(setting_value(c, "contact_method"), method));

  /* and back: through the setting this time */
  r = req_setting(c, "contact_method", "penalty");
  ENSURE_MSG(r && r->code == KHZ__V1__ERROR_CODE__OK, "back to penalty: %s", r ? r->error : "no reply");
  uint32_t warned_before = R.lcp_last;
  R = observe(c, "penalty", 300, nobj, body, mass, rest_z);
  check_run(&R, 300, "penalty again");
  ENSURE(R.lcp_first >= warned_before && R.lcp_last == R.lcp_first); /* no LCP step any more */
  ENSURE(!strcmp(described_method(c), "penalty"));
  khz_client_destroy(&c);
  harness_stop(&h);
}

static void test_switch(void) {
  round_trip(NULL, objects, NOBJ, "lcp", 0);
  round_trip(PEG_SCENE, boxes, NBOX, "peg", 5e-3);
}

/* the default scene, running: a name that is no method is UNKNOWN_NAME; PEG
 * (the scene has a ball, a can and a capsule) is REFUSED with the reason;
 * nothing of either is applied */
static void test_default_refusals(void) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  khzClient *c = harness_client(&h);
  ENSURE(c != NULL);
  if (!c) {
    harness_stop(&h);
    return;
  }
  char before[64];
  snprintf(before, sizeof before, "%s", setting_value(c, "contact_method"));
  const Khz__V1__Reply *r = set_method(c, "lcp2");
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__UNKNOWN_NAME && strstr(r->error, "'lcp2'"));
  if (r) printf("set_contact_method lcp2 -> %d %s\n", r->code, r->error);
  r = set_method(c, "peg");
  ENSURE_MSG(r && r->code == KHZ__V1__ERROR_CODE__REFUSED &&
                 strstr(r->error, "setting 'contact_method' 'peg': the PEG method takes boxes, "
                                  "convex meshes and planes only"),
             "set_contact_method peg: %d %s", r ? (int)r->code : -1, r ? r->error : "no reply");
  if (r) printf("set_contact_method peg -> %d %s\n", r->code, r->error);
  ENSURE(!strcmp(setting_value(c, "contact_method"), before));
  method_kept(c, "penalty");
  khz_client_destroy(&c);
  harness_stop(&h);
}

/* a model with equality constraints (a four-bar closed by <equality>): the
 * LCP has no rows for them, so the switch is refused, whichever way it comes */
static void test_refused(void) {
  static const char *const scene = "tests/loader/data/mjcf_fourbar.xml";
  khzServerConfig cfg;
  harness h;
  char err[1024];

  /* at start */
  harness_config(&cfg);
  snprintf(cfg.scene, sizeof cfg.scene, "%s", scene);
  snprintf(cfg.contact_method, sizeof cfg.contact_method, "lcp");
  khzServer *s = khz_server_new(&cfg, NULL, err, sizeof err);
  ENSURE_MSG(s == NULL && strstr(err, "contact_method") && strstr(err, "equality constraints"),
             "start with lcp: %s", s ? "accepted" : err);
  if (s) khz_server_destroy(&s);
  else printf("start with contact_method lcp -> %s\n", err);

  /* at run time */
  harness_config(&cfg);
  snprintf(cfg.scene, sizeof cfg.scene, "%s", scene);
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  khzClient *c = harness_client(&h);
  ENSURE(c != NULL);
  if (!c) {
    harness_stop(&h);
    return;
  }
  const Khz__V1__ModelDescription *md = khz_client_describe(c, 5000);
  const char *scene_method = md ? md->contact_method : "?";
  char before[64];
  snprintf(before, sizeof before, "%s", scene_method);
  ENSURE(strcmp(before, "lcp") != 0);
  /* REFUSED (a valid method this model cannot run), one message naming the
   * request, the setting, the value and why, as the refusal at start does */
  const Khz__V1__Reply *r = set_method(c, "lcp");
  ENSURE_MSG(r && r->code == KHZ__V1__ERROR_CODE__REFUSED &&
                 strstr(r->error, "set_contact_method: setting 'contact_method' 'lcp': the LCP "
                                  "method does not solve the model's equality constraints"),
             "set_contact_method lcp: %d %s", r ? (int)r->code : -1, r ? r->error : "no reply");
  if (r) printf("set_contact_method lcp -> %d %s\n", r->code, r->error);
  r = req_setting(c, "contact_method", "lcp");
  ENSURE_MSG(r && r->code == KHZ__V1__ERROR_CODE__REFUSED &&
                 strstr(r->error, "set_setting: setting 'contact_method' 'lcp': the LCP method "
                                  "does not solve the model's equality constraints"),
             "set_setting contact_method lcp: %d %s", r ? (int)r->code : -1, r ? r->error : "no reply");
  if (r) printf("set_setting contact_method lcp -> %d %s\n", r->code, r->error);
  ENSURE(strcmp(setting_value(c, "contact_method"), "lcp") != 0);
  method_kept(c, before);
  khz_client_destroy(&c);
  harness_stop(&h);
}

int main(void) {
  test_switch();
  test_default_refusals();
  test_refused();
  return ensure_report();
}
