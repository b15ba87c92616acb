/* test_server_hil.c — the scene's hardware-in-the-loop sensors and drives
 * through the server (docs/hil.md): Describe lists them; every state carries
 * their readings, the tick each was sampled at and their fault codes; an
 * encoder without noise reads the state's own q rounded to its count; a
 * sensor with latency shows an older sample; a force-torque sensor under a
 * resting box reads its weight; the same seed gives the same readings in
 * lockstep; a scene with a bad sensor is refused with a message naming it;
 * faults on demand (SetFault) and from the scene's schedule show in the next
 * state, a stalled command channel hands over to the watchdog, and a
 * scheduled push moves its body; behind a network model states and
 * commands arrive as late as configured, the jittered states' and commands'
 * delays with the distribution the model gives, lost ones in order, and the
 * share of commands lost as configured. */
#include <math.h>
#include <string.h>

#include "ensure.h"
#include "harness.h"

static int sensor_index(const Khz__V1__ModelDescription *md, const char *name) {
  for (size_t i = 0; i < md->n_sensors; i++)
    if (!strcmp(md->sensors[i]->name, name)) return (int)i;
  return -1;
}

/* the readings of the state after n lockstep ticks answered with zero torque */
static int lockstep_run(double *out, size_t cap, size_t *n_out) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  snprintf(cfg.scene, sizeof cfg.scene, "scenes/hil_arm.yaml");
  cfg.mode = KHZ_MODE_LOCKSTEP;
  if (harness_start(&h, &cfg, NULL)) return -1;
  khzClient *c = harness_client(&h);
  int rc = -1;
  if (c) {
    const Khz__V1__ModelDescription *md = khz_client_describe(c, 5000);
    double zero[16] = {0};
    const Khz__V1__State *st = khz_client_latestState(c, 2000);
    for (int k = 0; st && k < 50; k++) {
      khz_client_sendTorques(c, st, zero, md->na);
      uint64_t want = st->seq + 1;
      while ((st = khz_client_nextState(c, 2000)) && st->seq < want) {
      }
    }
    if (st && st->n_sensor_values <= cap) {
      memcpy(out, st->sensor_values, st->n_sensor_values * sizeof(double));
      *n_out = st->n_sensor_values;
      rc = 0;
    }
    khz_client_destroy(&c);
  }
  harness_stop(&h);
  return rc;
}

static const Khz__V1__Reply *set_fault(khzClient *c, const char *target, int fault, double value,
                                       double duration) {
  Khz__V1__Request rq;
  Khz__V1__SetFault f;
  khz__v1__request__init(&rq);
  khz__v1__set_fault__init(&f);
  f.target = (char *)target;
  f.fault = (Khz__V1__FaultType)fault;
  f.value = value;
  f.duration = duration;
  rq.op_case = KHZ__V1__REQUEST__OP_SET_FAULT;
  rq.set_fault = &f;
  return khz_client_request(c, &rq, 5000);
}

/* the scripted schedule of hil_faults.yaml and faults on demand */
static void test_faults(void) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  snprintf(cfg.scene, sizeof cfg.scene, "tests/server/data/hil_faults.yaml");
  cfg.watchdog_ms = 30;
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  khzClient *c = harness_client(&h);
  ENSURE(c != NULL);
  if (!c) {
    harness_stop(&h);
    return;
  }
  const Khz__V1__ModelDescription *md = khz_client_describe(c, 5000);
  ENSURE(md && md->n_sensors == 2 && md->n_drives == 2);
  int box = -1;
  for (size_t b = 0; md && b < md->n_bodies; b++)
    if (!strcmp(md->bodies[b]->name, "box")) box = (int)b;
  ENSURE(box > 0);
  /* the schedule (simulated time since the start): enc2 drops out over
   * [0.2, 0.3), the box is pushed up from 0.3 for 0.05 s */
  const Khz__V1__State *st = khz_client_latestState(c, 2000);
  int seen_dropout = 0, dropout_ok = 1, after_ok = 1, pushed = 0, push_states = 0, push_flag = 1;
  while (st && st->sim_time < 0.45) {
    int in = st->sim_time > 0.2005 && st->sim_time < 0.2995;
    int flagged = (st->flags & KHZ__V1__STATE_FLAG__FLAG_FAULT) != 0;
    if (in) {
      seen_dropout++;
      dropout_ok &= isnan(st->sensor_values[2]) && st->sensor_faults[1] == 2 && flagged;
    } else if (st->sim_time > 0.3005) {
      after_ok &= !isnan(st->sensor_values[2]) && st->sensor_faults[1] == 0;
      /* the push (a tick from 0.3 on, for 0.05 s) is flagged while it acts, then nothing */
      if (st->sim_time > 0.3005 && st->sim_time < 0.3495) push_states++, push_flag &= flagged;
      if (st->sim_time > 0.3515) after_ok &= !flagged;
    }
    if (box > 0 && st->sim_time > 0.33 && st->body_twist[6 * box + 5] > 0.5) pushed = 1;
    st = khz_client_nextState(c, 2000);
  }
  ENSURE_MSG(seen_dropout > 10 && dropout_ok, "scheduled dropout: %d states, ok %d", seen_dropout,
             dropout_ok);
  ENSURE(after_ok);
  ENSURE_MSG(push_states > 10 && push_flag, "scheduled push: %d states, flagged %d", push_states,
             push_flag);
  ENSURE_MSG(pushed, "the scheduled push did not lift the box");

  /* on demand: freeze enc1, shown in the next state */
  const Khz__V1__Reply *r = set_fault(c, "enc1", KHZ__V1__FAULT_TYPE__FAULT_FREEZE, 0, 0);
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
  uint64_t applied = r ? r->state_seq : 0;
  st = khz_client_latestState(c, 2000);
  while (st && st->seq <= applied) st = khz_client_nextState(c, 2000);
  ENSURE(st && st->sensor_faults[0] == 1 && (st->flags & KHZ__V1__STATE_FLAG__FLAG_FAULT));
  r = set_fault(c, "enc1", KHZ__V1__FAULT_TYPE__FAULT_NONE, 0, 0);
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
  r = set_fault(c, "arm/joint2", KHZ__V1__FAULT_TYPE__FAULT_LIMP, 0, 0.05);
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
  applied = r ? r->state_seq : 0;
  while (st && st->seq <= applied) st = khz_client_nextState(c, 2000);
  ENSURE(st && st->drive_faults[1] == 4);
  /* refusals: a name nobody has, a fault the target cannot take */
  r = set_fault(c, "nope", KHZ__V1__FAULT_TYPE__FAULT_FREEZE, 0, 0);
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__UNKNOWN_NAME && strstr(r->error, "nope"));
  r = set_fault(c, "enc1", KHZ__V1__FAULT_TYPE__FAULT_LIMP, 0, 0);
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OUT_OF_RANGE);
  r = set_fault(c, "arm/joint1", KHZ__V1__FAULT_TYPE__FAULT_TORQUE_LOSS, 2, 0);
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OUT_OF_RANGE);

  /* the command channel stalls for 0.3 s while the controller keeps
   * sending: the watchdog (30 ms) takes over, and lets go after the stall */
  double zero[16] = {0};
  st = khz_client_latestState(c, 2000);
  for (int k = 0; st && k < 50; k++) {
    khz_client_sendTorques(c, st, zero, md->na);
    st = khz_client_nextState(c, 2000);
  }
  ENSURE(st && !(st->flags & KHZ__V1__STATE_FLAG__FLAG_WATCHDOG));
  r = set_fault(c, "commands", KHZ__V1__FAULT_TYPE__FAULT_STALL, 0, 0.3);
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
  /* Timed from the state the fault was applied at, in simulated time. A
   * client on a loaded machine may itself be late by more than the
   * watchdog's 30 ms now and then, and may skip states: so every state seen
   * well inside the stall must be flagged and under the watchdog, and after
   * the stall the watchdog must let go (a state with the controller's
   * command again), within a generous bound. */
  applied = r ? r->state_seq : 0;
  double ta = -1;
  int seen_in_stall = 0, watchdog_in_stall = 0, flagged = 0, released = 0;
  int64_t until = patience_ends();
  while (st && !released && (ta < 0 || st->sim_time < ta + 3.0)) {
    khz_client_sendTorques(c, st, zero, md->na);
    st = patient_state(c, until);
    if (!st) break;
    if (ta < 0 && st->seq >= applied) ta = st->sim_time;
    if (ta < 0) continue;
    int wd = (st->flags & KHZ__V1__STATE_FLAG__FLAG_WATCHDOG) != 0;
    if (st->sim_time > ta + 0.1 && st->sim_time < ta + 0.28) {
      seen_in_stall++;
      watchdog_in_stall += wd, flagged += (st->flags & KHZ__V1__STATE_FLAG__FLAG_FAULT) != 0;
    }
    if (st->sim_time > ta + 0.35 && !wd) released = 1;
  }
  ENSURE_MSG(seen_in_stall >= 10 && watchdog_in_stall == seen_in_stall && flagged == seen_in_stall,
             "stall: %d states seen, %d under the watchdog, %d flagged", seen_in_stall,
             watchdog_in_stall, flagged);
  ENSURE_MSG(released, "the watchdog still engaged 3 s after the stall began");
  khz_client_destroy(&c);
  harness_stop(&h);
}

/* lockstep behind a network model: the seqs of the states the controller
 * received (answering each), their shown_seq and applied cmd_state_seq */
static int net_run(const char *scene, int n, uint64_t *seq, uint64_t *shown, uint64_t *answered) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  snprintf(cfg.scene, sizeof cfg.scene, "%s", scene);
  cfg.mode = KHZ_MODE_LOCKSTEP;
  cfg.lockstep_timeout_ms = 2000;
  if (harness_start(&h, &cfg, NULL)) return 0;
  khzClient *c = harness_client(&h);
  int got = 0;
  if (c) {
    const Khz__V1__ModelDescription *md = khz_client_describe(c, 5000);
    double zero[16] = {0};
    const Khz__V1__State *st = khz_client_latestState(c, 2000);
    uint64_t last = st ? st->seq : 0;
    while (st && got < n) {
      if (st->seq > last || got == 0) {
        seq[got] = st->seq, shown[got] = st->shown_seq, answered[got] = st->command_state_seq;
        got++;
        last = st->seq;
        khz_client_sendTorques(c, st, zero, md->na);
      }
      st = khz_client_nextState(c, 3000);
    }
    khz_client_destroy(&c);
  }
  harness_stop(&h);
  return got;
}

static void test_network(void) {
  enum { N = 200 };
  static uint64_t seq[N], shown[N], ans[N], seq2[N], shown2[N], ans2[N];
  /* states 3 ticks late, commands 2 ticks late: state j is shown at tick j + 3,
   * answered, taken at tick j + 4 and in effect from tick j + 6 */
  int n = net_run("tests/server/data/hil_net.yaml", N, seq, shown, ans);
  ENSURE(n == N);
  int delay_ok = 1, cmd_ok = 1, steps_ok = 1;
  for (int i = 20; i < n; i++) {
    delay_ok &= shown[i] == seq[i] + 3;
    cmd_ok &= ans[i] == seq[i] - 6;
    steps_ok &= seq[i] == seq[i - 1] + 1;
  }
  ENSURE_MSG(delay_ok && cmd_ok && steps_ok, "network delays: state %llu shown at %llu, answering %llu",
             (unsigned long long)seq[N - 1], (unsigned long long)shown[N - 1],
             (unsigned long long)ans[N - 1]);
  /* loss and jitter: no deadlock, about 80 % of the states seen, in order,
   * the same ones in a second run (seeded) */
  n = net_run("tests/server/data/hil_loss.yaml", N, seq, shown, ans);
  int n2 = net_run("tests/server/data/hil_loss.yaml", N, seq2, shown2, ans2);
  ENSURE(n == N && n2 == N);
  int order = 1, late = 1;
  for (int i = 1; i < n; i++) order &= seq[i] > seq[i - 1] && shown[i] >= shown[i - 1];
  for (int i = 1; i < n; i++) late &= shown[i] >= seq[i] + 1 && shown[i] <= seq[i] + 3 + 10;
  double seen = (double)(n - 1) / (double)(seq[n - 1] - seq[0]);
  ENSURE_MSG(fabs(seen - 0.8) < 0.1, "states seen: %.3f of those computed (loss 0.2)", seen);
  ENSURE(order && late);
  ENSURE(memcmp(seq, seq2, sizeof seq) == 0 && memcmp(ans, ans2, sizeof ans) == 0);

  /* the delay distribution: state i is due at i + D + U_i (U uniform on
   * 0..J), shown in order, so its delay is X_i = max(D + U_i, X_{i-1} - 1):
   * P(X <= D + k) = F_k = (k + 1) / (J + 1) F_{k+1}, F_J = 1 (0.094, 0.281,
   * 0.375, 0.25 for J = 3; the plain uniform 0.25 each fails at D and D + 2) */
  enum { D = 2, J = 3, NJ = 1000 };
  static uint64_t jseq[NJ], jshown[NJ], jans[NJ];
  n = net_run("tests/server/data/hil_jitter.yaml", NJ, jseq, jshown, jans);
  ENSURE(n == NJ);
  double count[J + 1] = {0}, F[J + 2], samples = 0;
  int range_ok = 1;
  for (int i = 20; i < n; i++) {
    long long delay = (long long)jshown[i] - (long long)jseq[i];
    range_ok &= delay >= D && delay <= D + J;
    if (delay >= D && delay <= D + J) count[delay - D]++, samples++;
  }
  F[J] = 1;
  for (int k = J - 1; k >= 0; k--) F[k] = (double)(k + 1) / (J + 1) * F[k + 1];
  double worst = 0;
  for (int k = 0; k <= J; k++)
    worst = fmax(worst, fabs(count[k] / samples - (F[k] - (k ? F[k - 1] : 0))));
  ENSURE_MSG(range_ok && worst < 0.06,
             "state delays %g %g %g %g of %g at %d..%d ticks: %.3f off the model", count[0],
             count[1], count[2], count[3], samples, D, D + J, worst);
}

/* the commands' side of the network (states shown at once, so in lockstep
 * the command answering state i is taken at tick i + 1): each takes effect
 * D + U_i ticks later (U uniform on 0..J), in order, so its delay is, as the
 * states', X_i = max(D + U_i, X_{i-1} - 1), with P(X <= D + k) = F_k =
 * (k + 1) / (J + 1) F_{k+1}, F_J = 1 (docs/hil.md). A state carries the
 * command in effect at its tick (cmd_state_seq); a command whose successor
 * takes effect at the same tick is never in effect, so without loss command i
 * takes effect at E_i = the first tick whose command answers i or a newer state. */
static void test_network_commands(void) {
  enum { D = 2, J = 3, NJ = 1000, SKIP = 20 };
  static uint64_t seq[NJ], shown[NJ], ans[NJ];
  int n = net_run("tests/server/data/hil_cmd_jitter.yaml", NJ, seq, shown, ans);
  ENSURE(n == NJ);
  if (n != NJ) return;
  int steps_ok = 1, order_ok = 1, range_ok = 1;
  for (int k = 1; k < n; k++) {
    steps_ok &= seq[k] == seq[k - 1] + 1 && shown[k] == seq[k];
    order_ok &= ans[k] >= ans[k - 1];
  }
  double count[J + 1] = {0}, samples = 0, sum = 0;
  int k = SKIP;
  /* commands answering states seq[SKIP] ..: each one's effect is inside the run */
  for (uint64_t i = seq[SKIP]; i + 1 + D + J <= seq[n - 1]; i++) {
    while (k < n && ans[k] < i) k++;
    long long delay = k < n ? (long long)seq[k] - (long long)(i + 1) : -1;
    range_ok &= delay >= D && delay <= D + J;
    if (delay >= D && delay <= D + J) count[delay - D]++, samples++, sum += (double)delay;
  }
  double F[J + 1], mean_model = D, worst = 0;
  F[J] = 1;
  for (int j = J - 1; j >= 0; j--) F[j] = (double)(j + 1) / (J + 1) * F[j + 1];
  for (int j = 0; j <= J; j++) {
    double p = F[j] - (j ? F[j - 1] : 0);
    mean_model += j * p;
    worst = fmax(worst, fabs(count[j] / samples - p));
  }
  double mean = samples > 0 ? sum / samples : 0;
  ENSURE_MSG(steps_ok && order_ok, "command network: states consecutive %d, commands in order %d",
             steps_ok, order_ok);
  ENSURE_MSG(range_ok && worst < 0.06 && fabs(mean - mean_model) < 0.1,
             "command delays %g %g %g %g of %g at %d..%d ticks: %.3f off the model, mean %.3f "
             "(model %.3f)",
             count[0], count[1], count[2], count[3], samples, D, D + J, worst, mean, mean_model);

  /* loss without jitter: a command answering state i is in effect from tick
   * i + 1 + D exactly, or never (lost, probability 0.2: the previous one
   * stays); the fraction lost within 4 standard deviations of the binomial's */
  static uint64_t lseq[NJ], lshown[NJ], lans[NJ];
  const double loss = 0.2;
  n = net_run("tests/server/data/hil_cmd_loss.yaml", NJ, lseq, lshown, lans);
  ENSURE(n == NJ);
  if (n != NJ) return;
  int exact = 1;
  double lost = 0, sent = 0;
  for (int s = SKIP + 1 + D; s < n; s++) {
    uint64_t i = lseq[s] - 1 - D; /* the command that would take effect at this tick */
    int arrived = lans[s] == i;
    exact &= arrived || lans[s] == lans[s - 1];
    lost += !arrived, sent++;
  }
  double frac = lost / sent, bound = 4 * sqrt(loss * (1 - loss) / sent);
  ENSURE_MSG(exact && fabs(frac - loss) < bound,
             "commands lost: %.0f of %.0f (%.3f, configured %.2f, bound %.3f); delays exact %d", lost,
             sent, frac, loss, bound, exact);
}

/* an MJCF model served alone: its site and joint sensors are HIL sensors
 * (docs/mjcf.md, "Sensors as hardware"): Describe names them and every state
 * carries their 20 readings (a joint force-torque sensor among them) */
static void test_mjcf_sensors(void) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  snprintf(cfg.scene, sizeof cfg.scene, "tests/loader/data/mjcf_sensors.xml");
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  khzClient *c = harness_client(&h);
  ENSURE(c != NULL);
  if (c) {
    const Khz__V1__ModelDescription *md = khz_client_describe(c, 5000);
    ENSURE(md && md->n_sensors == 7);
    int acc = md ? sensor_index(md, "acc") : -1, jp = md ? sensor_index(md, "jp") : -1;
    int ft = md ? sensor_index(md, "ftip") : -1;
    ENSURE(acc >= 0 && jp >= 0 && ft >= 0);
    if (ft >= 0)
      ENSURE(!strcmp(md->sensors[ft]->type, "joint_force_torque") && md->sensors[ft]->dim == 6 &&
             !strcmp(md->sensors[ft]->object, "j2"));
    if (acc >= 0 && jp >= 0) {
      ENSURE(!strcmp(md->sensors[acc]->type, "accelerometer") && !strcmp(md->sensors[acc]->object, "box"));
      ENSURE(!strcmp(md->sensors[jp]->type, "encoder") && md->sensors[jp]->dim == 2);
    }
    const Khz__V1__State *st = khz_client_latestState(c, 2000);
    ENSURE(st && st->n_sensor_values == 20);
    khz_client_destroy(&c);
  }
  harness_stop(&h);
}

int main(void) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  snprintf(cfg.scene, sizeof cfg.scene, "scenes/hil_arm.yaml");
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  khzClient *c = harness_client(&h);
  ENSURE(c != NULL);
  if (c) {
    const Khz__V1__ModelDescription *md = khz_client_describe(c, 5000);
    ENSURE(md && md->n_sensors == 12 && md->n_drives == 7 && md->hil_seed == 7);
    int enc = sensor_index(md, "enc2"), gyro = sensor_index(md, "wrist_gyro"),
        ft = sensor_index(md, "box1_ft"), touch = sensor_index(md, "box1_touch"),
        wrist = sensor_index(md, "wrist_ft");
    ENSURE(enc >= 0 && gyro >= 0 && ft >= 0 && touch >= 0 && wrist >= 0);
    if (wrist >= 0)
      ENSURE(!strcmp(md->sensors[wrist]->type, "joint_force_torque") &&
             !strcmp(md->sensors[wrist]->object, "arm/joint7") && md->sensors[wrist]->dim == 6);
    ENSURE(md->n_drives == 7 && !strcmp(md->drives[0]->joint, "arm/joint1") &&
           md->drives[0]->actuator == 0 && md->drives[0]->lag == 0.002);
    if (enc >= 0 && gyro >= 0 && ft >= 0 && touch >= 0) {
      ENSURE(!strcmp(md->sensors[enc]->type, "encoder") && md->sensors[enc]->dim == 2);
      ENSURE(!strcmp(md->sensors[ft]->object, "box1") && md->sensors[ft]->dim == 6);
      /* half a second on: box1 rests on the table */
      const Khz__V1__State *st = khz_client_latestState(c, 2000);
      double t_end = st ? st->sim_time + 0.5 : 0;
      while (st && st->sim_time < t_end) st = khz_client_nextState(c, 2000);
      ENSURE(st != NULL);
      if (st) {
        ENSURE(st->n_sensor_values == 33 && st->n_sensor_sampled_tick == 12 &&
               st->n_sensor_faults == 12 && st->n_drive_faults == 7);
        /* enc2: no noise, every tick, no latency: q rounded to 2 pi / 16384 */
        uint32_t vi = md->sensors[enc]->value_index;
        double res = 2 * M_PI / 16384, q = st->q[1];
        ENSURE_MSG(fabs(st->sensor_values[vi] - res * floor(q / res + 0.5)) < 1e-12,
                   "enc2 reads %.12g, q %.12g", st->sensor_values[vi], q);
        uint64_t tick = st->seq - st->reset_seq;
        ENSURE(st->sensor_sampled_tick[enc] == tick);
        ENSURE(st->sensor_sampled_tick[gyro] == tick - 1);            /* latency 1 */
        ENSURE(st->sensor_sampled_tick[ft] == 4 * (tick / 4));        /* every 4th tick */
        double w = 0.2 * 9.81; /* box1: 0.2 kg */
        double fz = st->sensor_values[md->sensors[ft]->value_index + 2];
        double fn = st->sensor_values[md->sensors[touch]->value_index];
        ENSURE_MSG(fabs(fz - w) < 0.3 && fabs(fn - w) < 0.3, "box1 force z %g, touch %g, weight %g",
                   fz, fn, w);
        for (int i = 0; i < 12; i++) ENSURE(st->sensor_faults[i] == 0);
      }
    }
    khz_client_destroy(&c);
  }
  harness_stop(&h);

  /* lockstep with the same seed: the same readings */
  double a[64], b[64];
  size_t na = 0, nb = 0;
  ENSURE(lockstep_run(a, 64, &na) == 0 && lockstep_run(b, 64, &nb) == 0);
  ENSURE(na == 33 && nb == na && memcmp(a, b, na * sizeof(double)) == 0);

  /* a bad sensor: refused, named */
  harness_config(&cfg);
  snprintf(cfg.scene, sizeof cfg.scene, "tests/server/data/hil_bad.yaml");
  char err[1024] = "";
  khzServer *bad = khz_server_new(&cfg, NULL, err, sizeof err);
  ENSURE(bad == NULL);
  ENSURE_MSG(strstr(err, "hil.sensors[0].joint") && strstr(err, "nope"), "%s", err);
  if (bad) khz_server_destroy(&bad);
  test_faults();
  test_mjcf_sensors();
  test_network();
  test_network_commands();
  return ensure_report();
}
