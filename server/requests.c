/* requests.c — the control requests (khz.v1 Request) and their one table,
 * in the manner of Redis's command table: a row per request with its checks,
 * what the loop (or the I/O side) does, and the reply builder. A request that
 * needs the loop waits in the pending table until every loop reply is in;
 * a setting it changes is committed into the configuration only then. Also
 * here: the run-time apply functions of the settings table (settings.c), and
 * the loop's replies, stale-command notices included.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "log.h"

struct khzRequestRow {
  Khz__V1__Request__OpCase op;
  const char *name;
  /* checks the request's values and notes what it is about in q; a refusal
   * is replied here and returns -1; NULL = nothing to check */
  int (*validate)(khzServer *s, khzPending *q, const Khz__V1__Request *rq);
  /* what the loop does (loop requests tagged with q) or, for requests the
   * I/O side answers, what it does now (a failure goes into q->failed);
   * -1 when the loop's request queue is full; NULL = nothing */
  int (*apply)(khzServer *s, khzPending *q, const Khz__V1__Request *rq);
  /* the reply once applied; r is the last loop reply, NULL when the loop had
   * no part */
  void (*reply)(khzServer *s, khzPending *q, const khzReply *r);
  /* 1: changes the simulation: refused to other clients while actuators are
   * claimed (control arbitration) */
  int control;
};

double khz_requests_rate(const khzServer *s, const khzServerConfig *c) {
  return c->rate_hz > 0 ? c->rate_hz : s->scene.rate_hz;
}

/* ------------------------------------------------------------ pending -- */

static int same_peer(const khzPeer *a, const khzPeer *b) {
  return a->idlen == b->idlen && !memcmp(a->id, b->id, a->idlen);
}

/* the entry for a new request: a free one (taken for good only when it
 * queues loop requests), or the overflow entry, which the loop refuses: when
 * every entry is in use, or when this client already has KHZ_CLIENT_INFLIGHT
 * requests waiting for the loop (one client cannot take the table) */
static khzPending *pending_open(khzServer *s, const khzPeer *p, uint64_t req_id,
                                const khzRequestRow *row) {
  khzPending *q = NULL;
  int mine = 0;
  for (int i = 0; i < KHZ_MAX_PENDING; i++) {
    if (!s->pending[i].used) {
      if (!q) q = &s->pending[i];
    } else if (same_peer(&s->pending[i].peer, p)) {
      mine++;
    }
  }
  if (!q || mine >= KHZ_CLIENT_INFLIGHT) q = &s->overflow;
  memset(q, 0, sizeof *q);
  q->row = row;
  q->peer = *p;
  q->req_id = req_id;
  return q;
}

static khzPending *pending_find(khzServer *s, uint64_t loop_id) {
  for (int i = 0; i < KHZ_MAX_PENDING; i++)
    if (s->pending[i].used && s->pending[i].loop_id == loop_id) return &s->pending[i];
  return NULL;
}

/* a loop request slot tagged with the entry's id, or NULL (no entry free, or
 * the ring is full); commit it with khz_loop_requestCommit */
static khzRequest *loop_request(khzServer *s, khzPending *q, int type) {
  if (q == &s->overflow) return NULL;
  khzRequest *rq = khz_loop_requestBegin(s->loop);
  if (!rq) return NULL;
  if (!q->loop_id) q->loop_id = ++s->next_loop_id;
  rq->id = q->loop_id;
  rq->type = type;
  q->remaining++;
  return rq;
}

/* a loop request with no arguments */
static int loop_plain(khzServer *s, khzPending *q, int type) {
  if (!loop_request(s, q, type)) return -1;
  khz_loop_requestCommit(s->loop);
  return 0;
}

/* the loop could not take a request: requests already queued for the entry
 * still answer it (with BUSY); else BUSY now */
static void busy(khzServer *s, khzPending *q) {
  if (q->remaining > 0) {
    q->failed = KHZ__V1__ERROR_CODE__BUSY;
    snprintf(q->error, sizeof q->error, "the loop's request queue is full: retry");
    q->used = 1;
    return;
  }
  if (q == &s->overflow)
    khz_reply_error(s, &q->peer, q->req_id, KHZ__V1__ERROR_CODE__BUSY,
                    "%s: too many requests in flight (at most %d per client, %d in all): wait for "
                    "their replies, then retry",
                    q->row->name, KHZ_CLIENT_INFLIGHT, KHZ_MAX_PENDING);
  else
    khz_reply_error(s, &q->peer, q->req_id, KHZ__V1__ERROR_CODE__BUSY,
                    "%s: the loop's request queue is full: retry", q->row->name);
}

/* everything applied (or refused): commit the setting, answer, free the entry */
static void finish(khzServer *s, khzPending *q, const khzReply *r) {
  if (q->failed) {
    khz_reply_error(s, &q->peer, q->req_id, q->failed, "%s", q->error);
  } else {
    if (q->set) khz_setting_put(q->setting, &q->value, &s->cfg);
    q->row->reply(s, q, r);
  }
  q->used = 0;
}

/* ------------------------------------------------------ reply builders -- */

static uint64_t reply_seq(const khzServer *s, const khzReply *r) {
  return r ? r->seq : s->latest_seq;
}

static void reply_done(khzServer *s, khzPending *q, const khzReply *r) {
  khz_reply_ok(s, &q->peer, q->req_id, reply_seq(s, r));
}

/* settings: q->setting, or all of them when NULL */
static void reply_settings(khzServer *srv, khzPending *q, const khzReply *r) {
  const khzSetting *one = q->setting;
  int n = one ? 1 : khz_settings_count();
  Khz__V1__Setting *st = calloc((size_t)n, sizeof *st);
  Khz__V1__Setting **sp = calloc((size_t)n, sizeof *sp);
  char (*val)[KHZ_SETTING_STR] = calloc((size_t)n, sizeof *val);
  char (*rng)[KHZ_SETTING_STR] = calloc((size_t)n, sizeof *rng);
  (void)r;
  if (!st || !sp || !val || !rng) {
    khz_reply_error(srv, &q->peer, q->req_id, KHZ__V1__ERROR_CODE__INTERNAL, "out of memory");
  } else {
    for (int i = 0; i < n; i++) {
      const khzSetting *s = one ? one : &khz_settings[i];
      khz__v1__setting__init(&st[i]);
      khz_setting_format(s, &srv->cfg, val[i], sizeof val[i]);
      khz_setting_range(s, rng[i], sizeof rng[i]);
      st[i].name = (char *)s->name;
      st[i].value = val[i];
      st[i].type = (char *)(const char *[]){"bool", "int", "double", "string", "enum"}[s->type];
      st[i].range = rng[i];
      st[i].runtime = s->apply != NULL;
      st[i].help = (char *)s->help;
      sp[i] = &st[i];
    }
    Khz__V1__SettingList list;
    khz__v1__setting_list__init(&list);
    list.n_settings = (size_t)n;
    list.settings = sp;
    Khz__V1__Reply rep;
    khz__v1__reply__init(&rep);
    rep.id = q->req_id;
    rep.state_seq = srv->latest_seq;
    rep.result_case = KHZ__V1__REPLY__RESULT_SETTINGS;
    rep.settings = &list;
    khz_send_reply(srv, &q->peer, &rep);
  }
  free(st);
  free(sp);
  free(val);
  free(rng);
}

static void reply_model(khzServer *s, khzPending *q, const khzReply *r) {
  double timestep, rate_hz = khz_loop_rate(s->loop, &timestep);
  khzDescribeInfo info = {s->generation, s->scene.name, rate_hz, timestep, s->cfg.mode,
                          s->cfg.contact_method[0] ? khz_contactMethodFromName(s->cfg.contact_method)
                                                   : s->scene_method,
                          s->na, s->act_dof, s->nhaptic, s->haptic, s->hil, &s->scene.hil.network,
                          s->scene.hil.seed, s->nu, s->scene.actuator, s->ctrl_slot};
  (void)r;
  Khz__V1__ModelDescription *d = khz_codec_describe(s->m, &info);
  if (!d) {
    khz_reply_error(s, &q->peer, q->req_id, KHZ__V1__ERROR_CODE__INTERNAL, "out of memory");
    return;
  }
  Khz__V1__Reply rep;
  khz__v1__reply__init(&rep);
  rep.id = q->req_id;
  rep.state_seq = s->latest_seq;
  rep.result_case = KHZ__V1__REPLY__RESULT_MODEL;
  rep.model = d;
  khz_send_reply(s, &q->peer, &rep);
  khz_codec_freeDescription(&d);
}

static void fill_hist(Khz__V1__Histogram *h, const khzLoopHist *l) {
  khz__v1__histogram__init(h);
  h->count = l->count;
  h->p50 = l->p50, h->p90 = l->p90, h->p99 = l->p99, h->p999 = l->p999;
  h->max = l->max, h->min = l->min, h->mean = l->mean;
}

/* statistics: the loop's histograms and counters, the server's, and the state
 * hash of the loop reply */
static void reply_stats(khzServer *s, khzPending *q, const khzReply *r) {
  khzLoopStats ls;
  khz_loop_stats(s->loop, &ls);
  Khz__V1__Stats st;
  Khz__V1__TickStats t;
  Khz__V1__Histogram hl, hc, hcl, hr, hcpu;
  Khz__V1__RejectCount rc[KHZ_NCODES], *rcp[KHZ_NCODES];
  khz__v1__stats__init(&st);
  khz__v1__tick_stats__init(&t);
  t.lateness_ns = ls.tick.lateness_ns;
  t.compute_ns = ls.tick.compute_ns;
  t.ticks = ls.tick.ticks;
  t.overruns = ls.tick.overruns;
  t.missed = ls.tick.missed;
  t.commands = ls.tick.commands;
  t.on_time = ls.tick.on_time;
  t.late = ls.tick.late;
  t.superseded = ls.tick.superseded;
  t.states_dropped = ls.tick.states_dropped;
  t.watchdog_engaged = ls.tick.watchdog_engaged;
  t.lockstep_timeouts = ls.tick.lockstep_timeouts;
  t.cpu_ns = ls.tick.cpu_ns;
  t.between_ns = ls.tick.between_ns;
  t.own_overruns = ls.tick.own_overruns;
  t.preempted_overruns = ls.tick.preempted_overruns;
  t.late_overruns = ls.tick.late_overruns;
  t.rejected = s->rejected;
  st.tick = &t;
  fill_hist(&hl, &ls.lateness);
  fill_hist(&hc, &ls.compute);
  fill_hist(&hcl, &ls.latency);
  st.lateness = &hl;
  st.compute = &hc;
  st.command_latency = &hcl;
  fill_hist(&hr, &ls.response);
  st.command_response = &hr;
  fill_hist(&hcpu, &ls.cpu);
  st.cpu = &hcpu;
  st.voluntary_switches = ls.voluntary_switches;
  st.involuntary_switches = ls.involuntary_switches;
  st.seq = r->seq;
  st.state_hash = r->hash;
  st.mode = (Khz__V1__Mode)ls.mode;
  st.paused = ls.paused != 0;
  st.rate_hz = ls.rate_hz;
  st.requests = ls.requests;
  st.states_published = s->published;
  st.rejected = s->rejected;
  size_t n = 0;
  for (int c = 0; c < KHZ_NCODES; c++) {
    if (!s->by_code[c]) continue;
    khz__v1__reject_count__init(&rc[n]);
    rc[n].code = (Khz__V1__ErrorCode)c;
    rc[n].count = s->by_code[c];
    rcp[n] = &rc[n];
    n++;
  }
  st.n_rejected_by_code = n;
  st.rejected_by_code = rcp;
  st.clients = (uint32_t)s->peers_seen;
  st.replies_dropped = s->replies_dropped + khz_loop_repliesLost(s->loop);
  st.recorded = khz_record_written(s);
  st.record_dropped = khz_record_dropped(s);
  st.rt_report = (char *)khz_loop_report(s->loop);
  Khz__V1__Reply rep;
  khz__v1__reply__init(&rep);
  rep.id = q->req_id;
  rep.state_seq = r->seq;
  rep.result_case = KHZ__V1__REPLY__RESULT_STATS;
  rep.stats = &st;
  khz_send_reply(s, &q->peer, &rep);
}

/* ------------------------------------------------------------ settings -- */

/* a run-time change of one setting to a typed value: checks what the table's
 * range cannot, and notes it in q for the commit */
static int start_only(khzServer *s, khzPending *q, const khzSetting *st) {
  khz_reply_error(s, &q->peer, q->req_id, KHZ__V1__ERROR_CODE__REFUSED,
                  "setting '%s' can only be set at start (flag or config file)", st->name);
  return -1;
}

/* why a run-time setting change is refused, as one message naming the
 * request, the setting, the value and the reason, the way the refusal at
 * start does ("set_contact_method: setting 'contact_method' 'lcp': the LCP
 * method does not solve ...") */
static void setting_refusal(const khzPending *q, const khzSetting *st, const khzSettingValue *v,
                            const char *why, char *out, size_t outsz) {
  char val[KHZ_SETTING_STR + 2];
  switch (st->type) {
    case KHZ_SET_BOOL:
      snprintf(val, sizeof val, "%s", v->i ? "true" : "false");
      break;
    case KHZ_SET_INT:
      snprintf(val, sizeof val, "%d", v->i);
      break;
    case KHZ_SET_DOUBLE:
      snprintf(val, sizeof val, "%g", v->d);
      break;
    case KHZ_SET_STRING:
      snprintf(val, sizeof val, "'%.*s'", KHZ_SETTING_STR - 1, v->s);
      break;
    case KHZ_SET_ENUM:
      snprintf(val, sizeof val, "'%s'", st->names[v->i]);
      break;
  }
  if (snprintf(out, outsz, "%s: setting '%s' %s: %s", q->row->name, st->name, val, why) < 0)
    out[0] = 0;
}

static int setting_refuse(khzServer *s, khzPending *q, int code, const khzSetting *st,
                          const khzSettingValue *v, const char *why) {
  char msg[KHZ_ERROR_MAX];
  setting_refusal(q, st, v, why, msg, sizeof msg);
  khz_reply_error(s, &q->peer, q->req_id, code, "%s", msg);
  return -1;
}

static int setting_change(khzServer *s, khzPending *q, const khzSetting *st,
                          const khzSettingValue *v) {
  if (!st->apply) return start_only(s, q, st);
  if (st->offset == offsetof(khzServerConfig, contact_method) && v->s[0]) {
    int method = khz_contactMethodFromName(v->s);
    if (method < 0) {
      khz_reply_error(s, &q->peer, q->req_id, KHZ__V1__ERROR_CODE__UNKNOWN_NAME,
                      "setting 'contact_method': unknown method '%s'", v->s);
      return -1;
    }
    /* a method this model cannot run (LCP or PEG with equality constraints,
     * PEG with shapes it has no model of): REFUSED here, as at start; the
     * loop checks again before it switches */
    const char *why = khz_contactMethodRefusal(s->m, method);
    if (why) return setting_refuse(s, q, KHZ__V1__ERROR_CODE__REFUSED, st, v, why);
  }
  if (st->offset == offsetof(khzServerConfig, kp) || st->offset == offsetof(khzServerConfig, kd)) {
    /* the default gains go to every actuator: within the sampled PD's bound
     * at the loop's step, as at start (settings 'kp', 'kd') and SetGains */
    khzServerConfig next = s->cfg;
    char why[KHZ_ERROR_MAX];
    double h, *gains = calloc(2 * (size_t)s->na + 1, sizeof(double));
    if (!gains) {
      khz_reply_error(s, &q->peer, q->req_id, KHZ__V1__ERROR_CODE__INTERNAL, "out of memory");
      return -1;
    }
    khz_setting_put(st, v, &next);
    khz_loop_rate(s->loop, &h);
    for (int a = 0; a < s->na; a++) gains[a] = next.kp, gains[s->na + a] = next.kd;
    int bad = khz_loop_checkGains(s->m, s->act_dof, s->na, gains, gains + s->na, h, why, sizeof why);
    free(gains);
    if (bad) return setting_refuse(s, q, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, st, v, why);
  }
  q->setting = st;
  q->value = *v;
  q->set = 1;
  return 0;
}

/* the noted change through the setting's apply function */
static int apply_setting(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  khzServerConfig next = s->cfg;
  (void)rq;
  khz_setting_put(q->setting, &q->value, &next);
  return q->setting->apply(s, q, &next);
}

int khz_apply_rate(khzServer *s, khzPending *q, const khzServerConfig *next) {
  khzRequest *rq = loop_request(s, q, KHZ_REQ_RATE);
  if (!rq) return -1;
  rq->dval = khz_requests_rate(s, next);
  char msg[KHZ_ERROR_MAX];
  if (khz_loop_stabilityWarningFor(s->m, s->stable_h, s->stable_what, 1.0 / rq->dval, msg, sizeof msg))
    khz_log(KHZ_LOG_WARN, "rate %g Hz: %s", rq->dval, msg);
  /* the ring was sized at the starting rate (server.h, khz_server_stateRing) */
  if (s->io.state_ring < khz_server_stateRing(rq->dval))
    khz_log(KHZ_LOG_WARN,
            "rate %g Hz: the state ring's %d states last %.1f ms at this rate (%g ms wanted): a "
            "stalled I/O side loses states sooner; start at this rate or set state_ring",
            rq->dval, s->io.state_ring, 1e3 * s->io.state_ring / rq->dval, 1e3 * KHZ_STATE_RING_S);
  khz_loop_requestCommit(s->loop);
  return 0;
}

int khz_apply_mode(khzServer *s, khzPending *q, const khzServerConfig *next) {
  khzRequest *rq = loop_request(s, q, KHZ_REQ_MODE);
  if (!rq) return -1;
  rq->ival = next->mode;
  khz_loop_requestCommit(s->loop);
  return 0;
}

int khz_apply_paused(khzServer *s, khzPending *q, const khzServerConfig *next) {
  return loop_plain(s, q, next->paused ? KHZ_REQ_PAUSE : KHZ_REQ_RESUME);
}

int khz_apply_watchdog(khzServer *s, khzPending *q, const khzServerConfig *next) {
  khzRequest *rq = loop_request(s, q, KHZ_REQ_WATCHDOG);
  if (!rq) return -1;
  rq->dval = next->watchdog_ms / 1000;
  rq->ival = next->safe_command;
  rq->data[0] = next->safe_damping;
  rq->ndata = 1;
  khz_loop_requestCommit(s->loop);
  return 0;
}

int khz_apply_lockstep(khzServer *s, khzPending *q, const khzServerConfig *next) {
  khzRequest *rq = loop_request(s, q, KHZ_REQ_LOCKSTEP_TIMEOUT);
  if (!rq) return -1;
  rq->dval = next->lockstep_timeout_ms / 1000;
  khz_loop_requestCommit(s->loop);
  return 0;
}

int khz_apply_gains(khzServer *s, khzPending *q, const khzServerConfig *next) {
  khzRequest *rq = loop_request(s, q, KHZ_REQ_GAINS);
  if (!rq) return -1;
  for (int i = 0; i < s->na; i++) rq->data[i] = next->kp, rq->data[s->na + i] = next->kd;
  rq->ndata = 2 * s->na;
  khz_loop_requestCommit(s->loop);
  return 0;
}

int khz_apply_contact(khzServer *s, khzPending *q, const khzServerConfig *next) {
  khzRequest *rq = loop_request(s, q, KHZ_REQ_CONTACT);
  if (!rq) return -1;
  rq->ival = next->contact_method[0] ? khz_contactMethodFromName(next->contact_method)
                                     : s->scene_method;
  khz_loop_requestCommit(s->loop);
  return 0;
}

int khz_apply_publish(khzServer *s, khzPending *q, const khzServerConfig *next) {
  khzRequest *rq = loop_request(s, q, KHZ_REQ_PUBLISH);
  if (!rq) return -1;
  rq->ival = (next->publish_contacts ? 1 : 0) | (next->publish_hash ? 2 : 0);
  khz_loop_requestCommit(s->loop);
  return 0;
}

int khz_apply_logLevel(khzServer *s, khzPending *q, const khzServerConfig *next) {
  (void)s, (void)q;
  khz_log_level = next->log_level;
  return 0;
}

int khz_apply_statsInterval(khzServer *s, khzPending *q, const khzServerConfig *next) {
  (void)q;
  ev_timer_stop(s->ev, &s->stats_timer);
  if (next->stats_interval_s > 0) {
    ev_timer_set(&s->stats_timer, next->stats_interval_s, next->stats_interval_s);
    ev_timer_start(s->ev, &s->stats_timer);
  }
  return 0;
}

/* ------------------------------------------------------------- checks -- */

static int refuse(khzServer *s, khzPending *q, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int refuse(khzServer *s, khzPending *q, int code, const char *fmt, ...) {
  char msg[KHZ_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  khz_reply_error(s, &q->peer, q->req_id, code, "%s", msg);
  return -1;
}

static int check_reset(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const Khz__V1__Reset *r = rq->reset;
  size_t bad = 0;
  if (r->n_q && r->n_q != (size_t)s->m->nq)
    return refuse(s, q, KHZ__V1__ERROR_CODE__WRONG_SIZE, "reset: q has %zu values, nq is %d",
                  r->n_q, s->m->nq);
  if (!check_finite(r->q, r->n_q, &bad))
    return refuse(s, q, KHZ__V1__ERROR_CODE__NOT_FINITE, "reset: q[%zu] is not finite", bad);
  char msg[KHZ_ERROR_MAX];
  if (r->n_q && khz_loop_checkReset(s->m, r->q, msg, sizeof msg))
    return refuse(s, q, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "%s", msg);
  return 0;
}

/* Pause, Resume and Step leave the 'paused' setting as they say */
static void note_paused(khzPending *q, int paused) {
  q->setting = khz_setting_find("paused");
  q->value.i = paused;
  q->set = 1;
}

static int check_pause(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  (void)s, (void)rq;
  note_paused(q, 1);
  return 0;
}

static int check_resume(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  (void)s, (void)rq;
  note_paused(q, 0);
  return 0;
}

static int check_step(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  if (rq->step->n < 1 || rq->step->n > 1000000000u)
    return refuse(s, q, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "step: n must be 1..1e9, got %u",
                  rq->step->n);
  note_paused(q, 1);
  return 0;
}

static int check_set_mode(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  int mode = rq->set_mode->mode;
  if (mode < 0 || mode >= KHZ_NMODES)
    return refuse(s, q, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "set_mode: unknown mode %d", mode);
  khzSettingValue v = {.i = mode};
  return setting_change(s, q, khz_setting_find("mode"), &v);
}

static int check_set_rate(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  double hz = rq->set_rate->rate_hz;
  if (!(hz >= KHZ_RATE_MIN_HZ && hz <= KHZ_RATE_MAX_HZ))
    return refuse(s, q, KHZ__V1__ERROR_CODE__OUT_OF_RANGE,
                  "set_rate: %g Hz is outside " KHZ_RATE_RANGE("..") " Hz", hz);
  khzSettingValue v = {.d = hz};
  return setting_change(s, q, khz_setting_find("rate_hz"), &v);
}

static int check_set_contact_method(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const char *name = rq->set_contact_method->method;
  if (khz_contactMethodFromName(name) < 0)
    return refuse(s, q, KHZ__V1__ERROR_CODE__UNKNOWN_NAME,
                  "set_contact_method: unknown method '%s' (Describe lists them)", name);
  khzSettingValue v;
  snprintf(v.s, sizeof v.s, "%s", name);
  return setting_change(s, q, khz_setting_find("contact_method"), &v);
}

static int check_set_gains(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const Khz__V1__SetGains *g = rq->set_gains;
  size_t bad = 0;
  if (g->n_kp != (size_t)s->na || g->n_kd != (size_t)s->na)
    return refuse(s, q, KHZ__V1__ERROR_CODE__WRONG_SIZE,
                  "set_gains: kp has %zu and kd %zu values, the model has %d actuators", g->n_kp,
                  g->n_kd, s->na);
  if (!check_finite(g->kp, g->n_kp, &bad) || !check_finite(g->kd, g->n_kd, &bad))
    return refuse(s, q, KHZ__V1__ERROR_CODE__NOT_FINITE, "set_gains: a gain is NaN or inf");
  char msg[KHZ_ERROR_MAX];
  double h;
  khz_loop_rate(s->loop, &h);
  if (khz_loop_checkGains(s->m, s->act_dof, s->na, g->kp, g->kd, h, msg, sizeof msg))
    return refuse(s, q, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "set_gains: %s", msg);
  return 0;
}

static int check_set_haptic_gains(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const Khz__V1__SetHapticGains *g = rq->set_haptic_gains;
  double v[4] = {g->stiffness, g->damping, g->rot_stiffness, g->rot_damping};
  size_t bad = 0;
  if (g->proxy >= (uint32_t)s->nhaptic)
    return refuse(s, q, KHZ__V1__ERROR_CODE__UNKNOWN_NAME,
                  "set_haptic_gains: no haptic proxy %u (the scene declares %d)", g->proxy,
                  s->nhaptic);
  if (!check_finite(v, 4, &bad))
    return refuse(s, q, KHZ__V1__ERROR_CODE__NOT_FINITE, "set_haptic_gains: a gain is NaN or inf");
  /* the coupling's passivity bound at the loop's step T (damping > stiffness
   * T / 2, translational and rotational): REFUSED here with the figures; the
   * loop checks again before it applies */
  khzHapticProxy hp = s->haptic[g->proxy];
  hp.stiffness = v[0], hp.damping = v[1], hp.rot_stiffness = v[2], hp.rot_damping = v[3];
  double T;
  khz_loop_rate(s->loop, &T);
  if (!khz_loop_hapticPassive(&hp, T))
    return refuse(s, q, KHZ__V1__ERROR_CODE__REFUSED,
                  "set_haptic_gains: proxy %u: stiffness %g, damping %g (rotational %g, %g) violate "
                  "the passivity bound at %g s steps: stiffness >= 0 and damping > stiffness * T / "
                  "2 = %g (rotational > %g)",
                  g->proxy, v[0], v[1], v[2], v[3], T, v[0] * T / 2, v[2] * T / 2);
  return 0;
}

/* the body of a BodyRef (name, or index with its model generation), or -1 */
static int resolve_body(khzServer *s, khzPending *q, const Khz__V1__BodyRef *ref) {
  if (!ref || ref->ref_case == KHZ__V1__BODY_REF__REF__NOT_SET)
    return refuse(s, q, KHZ__V1__ERROR_CODE__UNKNOWN_NAME, "no body given (name or id)");
  if (ref->ref_case == KHZ__V1__BODY_REF__REF_NAME) {
    int b = khz_name2body(s->m, ref->name);
    if (b < 1)
      return refuse(s, q, KHZ__V1__ERROR_CODE__UNKNOWN_NAME,
                    "no body named '%s' in this model (Describe lists them)", ref->name);
    return b;
  }
  const Khz__V1__BodyId *bid = ref->id;
  if (!bid || bid->generation != s->generation)
    return refuse(s, q, KHZ__V1__ERROR_CODE__WRONG_GENERATION,
                  "body id from model generation %u, this server's model is %u",
                  bid ? bid->generation : 0, s->generation);
  if (bid->index < 1 || bid->index >= (uint32_t)s->m->nbody)
    return refuse(s, q, KHZ__V1__ERROR_CODE__UNKNOWN_NAME, "no body with index %u (1..%d)",
                  bid->index, s->m->nbody - 1);
  return (int)bid->index;
}

static int check_apply_wrench(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const Khz__V1__ApplyWrench *w = rq->apply_wrench;
  size_t bad = 0;
  if (resolve_body(s, q, w->body) < 0) return -1;
  if ((w->n_force && w->n_force != 3) || (w->n_torque && w->n_torque != 3))
    return refuse(s, q, KHZ__V1__ERROR_CODE__WRONG_SIZE,
                  "apply_wrench: force and torque need 3 values each (or none)");
  if (!check_finite(w->force, w->n_force, &bad) ||
      !check_finite(w->torque, w->n_torque, &bad) || !isfinite(w->duration))
    return refuse(s, q, KHZ__V1__ERROR_CODE__NOT_FINITE, "apply_wrench: a value is NaN or inf");
  if (!(w->duration > 0))
    return refuse(s, q, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "apply_wrench: duration must be > 0 s");
  double wr[6] = {0, 0, 0, 0, 0, 0};
  char msg[KHZ_ERROR_MAX];
  for (int k = 0; k < 3; k++) {
    if (w->n_force) wr[k] = w->force[k];
    if (w->n_torque) wr[3 + k] = w->torque[k];
  }
  if (khz_loop_checkWrench(s->m, resolve_body(s, q, w->body), wr, msg, sizeof msg))
    return refuse(s, q, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "apply_%s", msg);
  return 0;
}

static int check_get_setting(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const char *name = rq->get_setting->name;
  if (!name[0]) return 0; /* all of them */
  q->setting = khz_setting_find(name);
  if (!q->setting)
    return refuse(s, q, KHZ__V1__ERROR_CODE__UNKNOWN_NAME, "unknown setting '%s'", name);
  return 0;
}

static int check_set_setting(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const Khz__V1__SetSetting *ss = rq->set_setting;
  const khzSetting *st = khz_setting_find(ss->name);
  char err[KHZ_ERROR_MAX];
  khzSettingValue v;
  if (!st)
    return refuse(s, q, KHZ__V1__ERROR_CODE__UNKNOWN_NAME,
                  "unknown setting '%s' (GetSetting with an empty name lists them)", ss->name);
  if (!st->apply) return start_only(s, q, st);
  if (khz_setting_parseValue(st, ss->value, &v, err, sizeof err))
    return refuse(s, q, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "%s", err);
  return setting_change(s, q, st, &v);
}

static int check_start_recording(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const char *name = rq->start_recording->path, *why = NULL;
  if (s->rec_dirfd < 0)
    return refuse(s, q, KHZ__V1__ERROR_CODE__REFUSED,
                  "start_recording: recording is off on this server (the operator allows it by "
                  "starting khz-server with --record-dir DIR)");
  if (!khz_record_nameOk(name, &why))
    return refuse(s, q, KHZ__V1__ERROR_CODE__OUT_OF_RANGE,
                  "start_recording: '%.*s' is not a file name: %s", KHZ_RECORD_NAME_MAX, name, why);
  if (s->rec && s->rec_stopping)
    return refuse(s, q, KHZ__V1__ERROR_CODE__BUSY,
                  "start_recording: the previous recording (%s) is still being written: retry",
                  s->rec_path);
  if (s->rec)
    return refuse(s, q, KHZ__V1__ERROR_CODE__REFUSED, "start_recording: already recording into %s",
                  s->rec_path);
  return 0;
}

static int check_stop_recording(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  (void)rq;
  if (!s->rec || s->rec_stopping || s->rec_stop_waiting)
    return refuse(s, q, KHZ__V1__ERROR_CODE__REFUSED, "stop_recording: not recording");
  return 0;
}

/* ------------------------------------------------------------ actions -- */

static int do_reset(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const Khz__V1__Reset *r = rq->reset;
  khzRequest *lr = loop_request(s, q, KHZ_REQ_RESET);
  if (!lr) return -1;
  if (r->n_q) memcpy(lr->data, r->q, r->n_q * sizeof(double));
  lr->ndata = (int)r->n_q;
  khz_loop_requestCommit(s->loop);
  return 0;
}

static int do_pause(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  (void)rq;
  return loop_plain(s, q, KHZ_REQ_PAUSE);
}

static int do_resume(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  (void)rq;
  return loop_plain(s, q, KHZ_REQ_RESUME);
}

static int do_step(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  khzRequest *lr = loop_request(s, q, KHZ_REQ_STEP);
  if (!lr) return -1;
  lr->ival = (int)rq->step->n;
  khz_loop_requestCommit(s->loop);
  return 0;
}

static int do_set_gains(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const Khz__V1__SetGains *g = rq->set_gains;
  khzRequest *lr = loop_request(s, q, KHZ_REQ_GAINS);
  if (!lr) return -1;
  memcpy(lr->data, g->kp, (size_t)s->na * sizeof(double));
  memcpy(lr->data + s->na, g->kd, (size_t)s->na * sizeof(double));
  lr->ndata = 2 * s->na;
  khz_loop_requestCommit(s->loop);
  return 0;
}

static int do_set_haptic_gains(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const Khz__V1__SetHapticGains *g = rq->set_haptic_gains;
  double v[4] = {g->stiffness, g->damping, g->rot_stiffness, g->rot_damping};
  khzRequest *lr = loop_request(s, q, KHZ_REQ_HAPTIC_GAINS);
  if (!lr) return -1;
  lr->ival = (int)g->proxy;
  memcpy(lr->data, v, sizeof v);
  lr->ndata = 4;
  khz_loop_requestCommit(s->loop);
  /* mirrored for Describe now: the loop refuses only on the passivity bound,
   * checked here the same way at the loop's step size */
  khzHapticProxy hp = s->haptic[g->proxy];
  hp.stiffness = v[0], hp.damping = v[1], hp.rot_stiffness = v[2], hp.rot_damping = v[3];
  double T;
  khz_loop_rate(s->loop, &T);
  if (khz_loop_hapticPassive(&hp, T)) s->haptic[g->proxy] = hp;
  return 0;
}

static int do_apply_wrench(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const Khz__V1__ApplyWrench *w = rq->apply_wrench;
  int b = resolve_body(s, q, w->body); /* checked: resolves */
  khzRequest *lr = loop_request(s, q, KHZ_REQ_WRENCH);
  if (!lr) return -1;
  lr->ival = b;
  for (int k = 0; k < 3; k++) {
    lr->data[k] = w->n_force ? w->force[k] : 0;
    lr->data[3 + k] = w->n_torque ? w->torque[k] : 0;
  }
  lr->ndata = 6;
  lr->dval = w->duration;
  khz_loop_requestCommit(s->loop);
  return 0;
}

/* SetFault: the target by name (a sensor, a drive's joint, "commands"); the
 * loop applies it between ticks. target[0..2] = khzFaultTarget, index, type */
static int fault_target(khzServer *s, const Khz__V1__SetFault *f, int out[3]) {
  out[2] = (int)f->fault;
  if (!strcmp(f->target, "commands")) {
    out[0] = KHZ_FAULT_ON_COMMANDS, out[1] = 0;
    return f->fault == KHZ__V1__FAULT_TYPE__FAULT_STALL || f->fault == KHZ__V1__FAULT_TYPE__FAULT_NONE
               ? 0
               : -2;
  }
  for (int i = 0; s->hil && i < khz_hilNSensor(s->hil); i++)
    if (!strcmp(khz_hilSensor(s->hil, i)->name, f->target)) {
      out[0] = KHZ_FAULT_ON_SENSOR, out[1] = i;
      return f->fault <= KHZ__V1__FAULT_TYPE__FAULT_BIAS ? 0 : -2;
    }
  for (int i = 0; s->hil && i < khz_hilNDrive(s->hil); i++)
    if (!strcmp(khz_hilDriveSpec(s->hil, i)->joint, f->target)) {
      out[0] = KHZ_FAULT_ON_DRIVE, out[1] = i;
      return f->fault == KHZ__V1__FAULT_TYPE__FAULT_NONE ||
                     (f->fault >= KHZ__V1__FAULT_TYPE__FAULT_LIMP &&
                      f->fault <= KHZ__V1__FAULT_TYPE__FAULT_LOCK)
                 ? 0
                 : -2;
    }
  return -1;
}

static int check_set_fault(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const Khz__V1__SetFault *f = rq->set_fault;
  int t[3];
  if (!isfinite(f->value) || !isfinite(f->duration))
    return refuse(s, q, KHZ__V1__ERROR_CODE__NOT_FINITE, "set_fault: a value is NaN or inf");
  if (f->duration < 0)
    return refuse(s, q, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "set_fault: duration %g s is below 0",
                  f->duration);
  if ((int)f->fault < 0 || (int)f->fault >= KHZ_NFAULTTYPE)
    return refuse(s, q, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, "set_fault: unknown fault type %d",
                  (int)f->fault);
  int rc = fault_target(s, f, t);
  if (rc == -1)
    return refuse(s, q, KHZ__V1__ERROR_CODE__UNKNOWN_NAME,
                  "set_fault: no sensor or drive named '%s' (ModelDescription.sensors, drives; "
                  "or \"commands\")",
                  f->target);
  if (rc == -2)
    return refuse(s, q, KHZ__V1__ERROR_CODE__OUT_OF_RANGE,
                  "set_fault: '%s' cannot take fault %s (sensors: freeze, dropout, bias; drives: "
                  "limp, torque_loss, lock; commands: stall)",
                  f->target, khz_faultTypeName((int)f->fault));
  if (f->fault == KHZ__V1__FAULT_TYPE__FAULT_TORQUE_LOSS && !(f->value >= 0 && f->value <= 1))
    return refuse(s, q, KHZ__V1__ERROR_CODE__OUT_OF_RANGE,
                  "set_fault: torque_loss keeps a share of the torque: value %g is not in 0..1",
                  f->value);
  return 0;
}

static int do_set_fault(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const Khz__V1__SetFault *f = rq->set_fault;
  int t[3];
  fault_target(s, f, t); /* checked */
  khzRequest *lr = loop_request(s, q, KHZ_REQ_FAULT);
  if (!lr) return -1;
  lr->data[0] = t[0], lr->data[1] = t[1], lr->data[2] = t[2], lr->data[3] = f->duration;
  lr->ndata = 4;
  lr->dval = f->value;
  khz_loop_requestCommit(s->loop);
  return 0;
}

static int do_clear_wrenches(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  (void)rq;
  return loop_plain(s, q, KHZ_REQ_CLEAR_WRENCHES);
}

/* the loop's histograms and counters, and the server's: rejections (all and
 * by code), undelivered replies and the I/O thread's hand-off counters */
static int do_reset_stats(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  (void)rq;
  if (loop_plain(s, q, KHZ_REQ_RESET_STATS)) return -1;
  s->rejected = 0;
  memset(s->by_code, 0, sizeof s->by_code);
  s->replies_dropped = 0;
  s->io.wakes = s->io.states_max = 0;
  s->io.gap_max_ns = 0;
  return 0;
}

/* the state hash comes from the loop, the rest is read when it replies */
static int do_get_stats(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  (void)rq;
  return loop_plain(s, q, KHZ_REQ_HASH);
}

/* a file created new in the record directory, written by its own thread */
static int do_start_recording(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  char err[KHZ_ERROR_MAX - 32];
  if (khz_record_start(s, s->rec_dirfd, rq->start_recording->path, err, sizeof err)) {
    q->failed = KHZ__V1__ERROR_CODE__REFUSED;
    snprintf(q->error, sizeof q->error, "start_recording: %s", err);
  }
  return 0;
}

/* answered when the writer has written what was queued and closed the file */
static int do_stop_recording(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  (void)rq;
  s->rec_stop = *q;
  s->rec_stop_waiting = 1;
  q->deferred = 1;
  khz_record_stop(s);
  return 0;
}

void khz_requests_recordStopped(khzServer *s) {
  if (!s->rec_stop_waiting) return;
  s->rec_stop_waiting = 0;
  finish(s, &s->rec_stop, NULL);
}

/* ------------------------------------------------------- arbitration -- */

uint32_t khz_claims_otherIn(khzServer *s, uint32_t client, int first, int n) {
  double now = ev_now(s->ev), wd = s->cfg.watchdog_ms / 1000;
  int slots = s->na + s->nhaptic;
  for (int a = 0; a < slots; a++) {
    uint32_t o = s->owner[a];
    if (o && o != client && wd > 0 && o <= KHZ_MAX_PEERS && now - s->peer_active[o - 1] > wd) {
      /* the holder stopped commanding: its claims lapse */
      khz_log(KHZ_LOG_INFO, "client %u sent no command for %g ms: its claims are released", o,
              s->cfg.watchdog_ms);
      for (int b = 0; b < slots; b++)
        if (s->owner[b] == o) s->owner[b] = 0;
    }
  }
  uint32_t holder = 0;
  for (int a = first; a < first + n && a < slots; a++)
    if (s->owner[a] && s->owner[a] != client) holder = s->owner[a];
  return holder;
}

uint32_t khz_claims_other(khzServer *s, uint32_t client) {
  return khz_claims_otherIn(s, client, 0, s->na + s->nhaptic);
}

/* the name a Claim uses for slot a: the actuator's joint, or the haptic
 * proxy's body (Describe lists both) */
static const char *claim_slot_name(const khzServer *s, int a) {
  return a < s->na ? s->m->jnt_name[s->m->dof_body[s->act_dof[a]]]
                   : s->m->body_name[s->haptic[a - s->na].body];
}

void khz_claims_names(khzServer *s, uint32_t owner, char *out, size_t n) {
  size_t len = 0;
  out[0] = 0;
  for (int a = 0; a < s->na + s->nhaptic && len + 1 < n; a++) {
    if (s->owner[a] != owner) continue;
    int w = snprintf(out + len, n - len, "%s%s'%s'", len ? ", " : "",
                     a < s->na ? "" : "haptic proxy ", claim_slot_name(s, a));
    if (w < 0) break;
    len += (size_t)w;
  }
}

/* every name an actuator or a haptic proxy's body (empty = all of both),
 * none held by another client */
static int check_claim(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const Khz__V1__Claim *c = rq->claim;
  uint32_t client = khz_peer_client(s, &q->peer);
  for (size_t i = 0; i < c->n_actuators; i++) {
    int found = 0;
    for (int a = 0; a < s->na + s->nhaptic && !found; a++)
      found = !strcmp(c->actuators[i], claim_slot_name(s, a));
    if (!found)
      return refuse(s, q, KHZ__V1__ERROR_CODE__UNKNOWN_NAME,
                    "claim: no actuator or haptic proxy named '%.*s' (Describe lists them)",
                    KHZ_REQ_NAME_MAX, c->actuators[i]);
  }
  uint32_t holder = khz_claims_other(s, client);
  if (holder) {
    char names[256];
    khz_claims_names(s, holder, names, sizeof names);
    return refuse(s, q, KHZ__V1__ERROR_CODE__REFUSED,
                  "claim: %s already claimed by client %u (free once it sends Release or stops "
                  "commanding for watchdog_ms)",
                  names, holder);
  }
  return 0;
}

static int do_claim(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  const Khz__V1__Claim *c = rq->claim;
  uint32_t client = khz_peer_client(s, &q->peer);
  for (int a = 0; a < s->na + s->nhaptic; a++) {
    int want = c->n_actuators == 0;
    for (size_t i = 0; i < c->n_actuators && !want; i++)
      want = !strcmp(c->actuators[i], claim_slot_name(s, a));
    if (want) s->owner[a] = client;
  }
  s->peer_active[client - 1] = ev_now(s->ev);
  khz_log(KHZ_LOG_INFO, "client %u claimed %zu actuators and haptic proxies", client,
          c->n_actuators ? c->n_actuators : (size_t)(s->na + s->nhaptic));
  return 0;
}

static int do_release(khzServer *s, khzPending *q, const Khz__V1__Request *rq) {
  uint32_t client = khz_peer_client(s, &q->peer);
  (void)rq;
  for (int a = 0; a < s->na + s->nhaptic; a++)
    if (s->owner[a] == client) s->owner[a] = 0;
  return 0;
}

/* -------------------------------------------------------------- table -- */

#define OP(x) KHZ__V1__REQUEST__OP_##x

static const khzRequestRow request_table[] = {
    /* op, name: validate, apply (loop or I/O side), reply */
    {OP(DESCRIBE), "describe", NULL, NULL, reply_model, 0},
    {OP(RESET), "reset", check_reset, do_reset, reply_done, 1},
    {OP(PAUSE), "pause", check_pause, do_pause, reply_done, 1},
    {OP(RESUME), "resume", check_resume, do_resume, reply_done, 1},
    {OP(STEP), "step", check_step, do_step, reply_done, 1},
    {OP(SET_MODE), "set_mode", check_set_mode, apply_setting, reply_settings, 1},
    {OP(SET_RATE), "set_rate", check_set_rate, apply_setting, reply_settings, 1},
    {OP(SET_CONTACT_METHOD), "set_contact_method", check_set_contact_method, apply_setting,
     reply_settings, 1},
    {OP(SET_GAINS), "set_gains", check_set_gains, do_set_gains, reply_done, 1},
    {OP(SET_HAPTIC_GAINS), "set_haptic_gains", check_set_haptic_gains, do_set_haptic_gains,
     reply_done, 1},
    {OP(APPLY_WRENCH), "apply_wrench", check_apply_wrench, do_apply_wrench, reply_done, 1},
    {OP(CLEAR_WRENCHES), "clear_wrenches", NULL, do_clear_wrenches, reply_done, 1},
    {OP(SET_FAULT), "set_fault", check_set_fault, do_set_fault, reply_done, 1},
    {OP(GET_STATS), "get_stats", NULL, do_get_stats, reply_stats, 0},
    {OP(RESET_STATS), "reset_stats", NULL, do_reset_stats, reply_done, 1},
    {OP(GET_SETTING), "get_setting", check_get_setting, NULL, reply_settings, 0},
    {OP(SET_SETTING), "set_setting", check_set_setting, apply_setting, reply_settings, 1},
    {OP(START_RECORDING), "start_recording", check_start_recording, do_start_recording, reply_done, 0},
    {OP(STOP_RECORDING), "stop_recording", check_stop_recording, do_stop_recording, reply_done, 0},
    {OP(CLAIM), "claim", check_claim, do_claim, reply_done, 0},
    {OP(RELEASE), "release", NULL, do_release, reply_done, 0},
};

#undef OP

static const khzRequestRow *request_row(Khz__V1__Request__OpCase op) {
  for (size_t i = 0; i < sizeof request_table / sizeof request_table[0]; i++)
    if (request_table[i].op == op) return &request_table[i];
  return NULL;
}

/* the request's strings, each within its bound (names, setting values, file
 * names): the first too long, or NULL */
static const char *long_string(const Khz__V1__Request *rq, size_t *len, size_t *max) {
  const char *str[2] = {NULL, NULL}, *what[2] = {NULL, NULL};
  size_t lim[2] = {KHZ_REQ_NAME_MAX, KHZ_REQ_NAME_MAX};
  switch (rq->op_case) {
    case KHZ__V1__REQUEST__OP_SET_CONTACT_METHOD:
      str[0] = rq->set_contact_method->method, what[0] = "set_contact_method: method";
      break;
    case KHZ__V1__REQUEST__OP_APPLY_WRENCH:
      if (rq->apply_wrench->body && rq->apply_wrench->body->ref_case == KHZ__V1__BODY_REF__REF_NAME)
        str[0] = rq->apply_wrench->body->name, what[0] = "apply_wrench: body name";
      break;
    case KHZ__V1__REQUEST__OP_SET_FAULT:
      str[0] = rq->set_fault->target, what[0] = "set_fault: target";
      break;
    case KHZ__V1__REQUEST__OP_GET_SETTING:
      str[0] = rq->get_setting->name, what[0] = "get_setting: name";
      break;
    case KHZ__V1__REQUEST__OP_SET_SETTING:
      str[0] = rq->set_setting->name, what[0] = "set_setting: name";
      str[1] = rq->set_setting->value, what[1] = "set_setting: value", lim[1] = KHZ_SETTING_STR - 1;
      break;
    case KHZ__V1__REQUEST__OP_START_RECORDING:
      str[0] = rq->start_recording->path, what[0] = "start_recording: path", lim[0] = KHZ_RECORD_NAME_MAX;
      break;
    default:
      break;
  }
  for (int i = 0; i < 2; i++) {
    if (str[i] && strlen(str[i]) > lim[i]) {
      *len = strlen(str[i]), *max = lim[i];
      return what[i];
    }
  }
  return NULL;
}

void khz_requests_handle(khzServer *s, const khzPeer *p, const Khz__V1__Request *rq) {
  const khzRequestRow *row = request_row(rq->op_case);
  size_t len = 0, max = 0;
  const char *what = row ? long_string(rq, &len, &max) : NULL;
  if (what) {
    khz_reply_error(s, p, rq->id, KHZ__V1__ERROR_CODE__OUT_OF_RANGE,
                    "%s has %zu bytes, at most %zu are allowed", what, len, max);
    return;
  }
  if (!row) {
    /* protobuf-c keeps a field it does not know as an unknown field: name it */
    if (rq->base.n_unknown_fields > 0)
      khz_reply_error(s, p, rq->id, KHZ__V1__ERROR_CODE__UNKNOWN_TYPE,
                      "unknown request type (field %u): this server speaks khz.v1 revision %d",
                      rq->base.unknown_fields[0].tag, KHZ__V1__PROTOCOL_VERSION__PROTOCOL_VERSION);
    else
      khz_reply_error(s, p, rq->id, KHZ__V1__ERROR_CODE__UNKNOWN_TYPE,
                      "a request without an operation (none of Request's op fields is set): this "
                      "server speaks khz.v1 revision %d",
                      KHZ__V1__PROTOCOL_VERSION__PROTOCOL_VERSION);
    return;
  }
  khz_log(KHZ_LOG_DEBUG, "request %llu: %s", (unsigned long long)rq->id, row->name);
  if (row->control) {
    uint32_t holder = khz_claims_other(s, khz_peer_client(s, p));
    if (holder) {
      khz_reply_error(s, p, rq->id, KHZ__V1__ERROR_CODE__REFUSED,
                      "%s: actuators or haptic proxies are claimed by client %u: requests that change the "
                      "simulation are its alone until it sends Release or stops commanding for "
                      "watchdog_ms",
                      row->name, holder);
      return;
    }
  }
  khzPending *q = pending_open(s, p, rq->id, row);
  if (row->validate && row->validate(s, q, rq)) return;
  if (row->apply && row->apply(s, q, rq)) {
    busy(s, q);
    return;
  }
  if (q->remaining > 0)
    q->used = 1; /* answered when the loop has applied it */
  else if (!q->deferred)
    finish(s, q, NULL);
}

/* -------------------------------------------------------- loop replies -- */

static void loop_reply(khzServer *s, const khzReply *r) {
  /* a command dropped by the loop after a reset */
  if (r->type == KHZ_REPLY_STALE_COMMAND) {
    if (r->client >= 1 && r->client <= (uint32_t)s->npeers)
      khz_send_error(s, &s->peers[r->client - 1], KHZ__V1__ERROR_CODE__STALE, r->cmd_seq, 0, "%s",
                     r->message);
    return;
  }
  khzPending *q = pending_find(s, r->id);
  if (!q) return;
  if (r->status != KHZ_REPLY_DONE && !q->failed) {
    q->failed = r->status == KHZ_REPLY_REFUSED ? KHZ__V1__ERROR_CODE__REFUSED
                : r->status == KHZ_REPLY_BUSY  ? KHZ__V1__ERROR_CODE__BUSY
                                               : KHZ__V1__ERROR_CODE__OUT_OF_RANGE;
    /* a setting change the loop refused (a rate the gains in force or a
     * haptic proxy's passivity cannot take): named as the checks above do */
    if (q->set && q->row->apply == apply_setting)
      setting_refusal(q, q->setting, &q->value, r->message, q->error, sizeof q->error);
    else
      snprintf(q->error, sizeof q->error, "%s", r->message);
  }
  if (r->type == KHZ_REQ_PAUSE && r->status == KHZ_REPLY_DONE) khz_publish_paused(s, r->seq);
  if (--q->remaining > 0) return;
  finish(s, q, r);
}

void khz_requests_loopReplies(khzServer *s) {
  khzReply r;
  while (khz_loop_pollReply(s->loop, &r)) loop_reply(s, &r);
}
