/* commands.c — the real-time inputs: Command and HapticInput messages. Each
 * is checked whole (model generation, the state it answers, array sizes,
 * finite values, gains >= 0) and goes into the loop's latest-wins buffer, or
 * is rejected with an Error to its sender and nothing applied. No reply on
 * success: the states say what was applied. Torques over an effort limit are
 * applied clamped by the tick; the sender gets a CLAMPED warning.
 *
 * A command may instead carry controls for the model's own actuators
 * (Command.ctrl: MJCF <actuator>s, URDF <ros2_control> interfaces; MuJoCo's
 * data.ctrl). Each becomes its actuator's feed-forward (khz_actuator_pd: MuJoCo's
 * affine force gain ctrl + b0 + b1 gear q + b2 gear qd times gear, as
 * tau_ff - kp q - kd qd), which the tick evaluates with the current state and
 * clamps to the actuator's forcerange times gear before summing the actuators
 * of a joint (khzLoopActuator): a position or velocity actuator is a servo at
 * the tick rate. Before the first command the loop applies each actuator's
 * initial control (ctrl0: zero, or the keyframe's), as MuJoCo starts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int khz_commands_init(khzServer *s) {
  s->nu = s->scene.nactuator;
  s->ctrl_slot = calloc((size_t)s->nu + 1, sizeof *s->ctrl_slot);
  s->loop_act = calloc((size_t)s->nu + 1, sizeof *s->loop_act);
  s->ctrl_ff = calloc((size_t)s->nu + 1, sizeof(double));
  s->ctrl_on = calloc((size_t)s->nu + 1, sizeof(double));
  s->ctrl_kp = calloc((size_t)s->na + 1, sizeof(double));
  s->ctrl_kd = calloc((size_t)s->na + 1, sizeof(double));
  if (!s->ctrl_slot || !s->loop_act || !s->ctrl_ff || !s->ctrl_on || !s->ctrl_kp || !s->ctrl_kd)
    return -1;
  /* each actuator's joint as a slot of Command arrays; its gains, range and initial control */
  for (int i = 0; i < s->nu; i++) {
    const khzMjcfActuator *a = &s->scene.actuator[i];
    int b = khz_name2joint(s->m, a->joint);
    s->ctrl_slot[i] = -1;
    for (int k = 0; b > 0 && k < s->na; k++)
      if (s->act_dof[k] == s->m->jnt_dofadr[b]) s->ctrl_slot[i] = k;
    khzLoopActuator *la = &s->loop_act[i];
    double range[2];
    la->slot = s->ctrl_slot[i];
    khz_actuator_pd(a, a->ctrl0, &la->ff0, &la->kp, &la->kd);
    khz_actuator_range(a, range);
    la->lo = range[0], la->hi = range[1];
  }
  return 0;
}

void khz_commands_free(khzServer *s) {
  free(s->ctrl_slot);
  free(s->loop_act);
  free(s->ctrl_ff);
  free(s->ctrl_on);
  free(s->ctrl_kp);
  free(s->ctrl_kd);
  s->ctrl_slot = NULL;
  s->loop_act = NULL;
  s->ctrl_ff = s->ctrl_on = s->ctrl_kp = s->ctrl_kd = NULL;
}

int khz_commands_startStable(const khzServer *s, double h, char *msg, size_t msgsz) {
  for (int a = 0; a < s->na; a++) {
    /* the servos' gains summed on the joint, against ctrl_terms' bound */
    double kp = 0, kd = 0;
    for (int i = 0; i < s->nu; i++)
      if (s->loop_act[i].slot == a) kp += s->loop_act[i].kp, kd += s->loop_act[i].kd;
    int dof = s->act_dof[a];
    double meff = s->m->dof_meff[dof], b = s->m->dof_damping[dof];
    if (s->m->integrator == KHZ_INT_RK4 && h * b < meff) b = 0;
    double kpmax = 4 * meff / (h * h) + 2 * b / h, kdmax = 2 * meff / h;
    if (kp <= kpmax && kd <= kdmax) continue;
    snprintf(msg, msgsz,
             "the actuators on joint '%s' give it kp = %g, kd = %g, unstable at %g s steps "
             "(kp <= %g, kd <= %g): they act only once commanded (ctrl), not from the start; "
             "raise rate_hz",
             s->m->jnt_name[s->m->dof_body[dof]], kp, kd, h, kpmax, kdmax);
    return 0;
  }
  return 1;
}

/* the model's actuator of this name, -1 when none */
static int ctrl_index(const khzServer *s, const char *name) {
  for (int i = 0; name && i < s->nu; i++)
    if (strcmp(s->scene.actuator[i].name, name) == 0) return i;
  return -1;
}

/* Command.ctrl into each actuator's feed-forward and inclusion (s->ctrl_ff,
 * ctrl_on) and the gains summed per slot (ctrl_kp / kd), checked whole: 0, or
 * -1 after an Error to the sender. *clamped is the first actuator whose
 * control was clamped to its ctrlrange (-1: none). */
static int ctrl_terms(khzServer *s, const khzPeer *p, const Khz__V1__Command *c, int *clamped,
                      double *clamped_value) {
  uint64_t seq = c->seq;
  size_t na = (size_t)s->na, bad = 0;
  *clamped = -1;
  if (s->nu == 0) {
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__WRONG_SIZE, seq, 0,
                   "command %llu: ctrl given, but the model has no actuators of its own "
                   "(ModelDescription.model_actuators is empty): send tau or q_target per joint",
                   (unsigned long long)seq);
    return -1;
  }
  if (c->n_q_target || c->n_qd_target || c->n_kp || c->n_kd) {
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, seq, 0,
                   "command %llu: ctrl drives the model's actuators, each with its own gains: "
                   "leave q_target, qd_target, kp and kd empty (tau may add torques)",
                   (unsigned long long)seq);
    return -1;
  }
  const char *field = NULL;
  size_t got = 0, want = 0;
  if (c->n_ctrl_names == 0 && c->n_ctrl != (size_t)s->nu)
    field = "ctrl", got = c->n_ctrl, want = (size_t)s->nu;
  else if (c->n_ctrl_names && c->n_ctrl != c->n_ctrl_names)
    field = "ctrl", got = c->n_ctrl, want = c->n_ctrl_names;
  else if (c->n_tau && c->n_tau != na)
    field = "tau", got = c->n_tau, want = na;
  if (field) {
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__WRONG_SIZE, seq, 0,
                   "command %llu: %s has %zu values, %zu expected (%s)", (unsigned long long)seq,
                   field, got, want,
                   !strcmp(field, "tau")         ? "one per joint actuator, or none"
                   : c->n_ctrl_names ? "one per name in ctrl_names"
                                     : "one per model actuator, or name them in ctrl_names");
    return -1;
  }
  if (!check_finite(c->ctrl, c->n_ctrl, &bad) || !check_finite(c->tau, c->n_tau, &bad)) {
    int in_ctrl = !check_finite(c->ctrl, c->n_ctrl, &bad);
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__NOT_FINITE, seq, 0,
                   "command %llu: %s[%zu] is %g: nothing applied", (unsigned long long)seq,
                   in_ctrl ? "ctrl" : "tau", bad, in_ctrl ? c->ctrl[bad] : c->tau[bad]);
    return -1;
  }

  /* each control into its actuator's feed-forward; the gains of a joint's actuators add up */
  for (size_t a = 0; a < na; a++) s->ctrl_kp[a] = s->ctrl_kd[a] = 0;
  for (int i = 0; i < s->nu; i++) s->ctrl_ff[i] = s->ctrl_on[i] = 0;
  for (size_t k = 0; k < c->n_ctrl; k++) {
    int i = (int)k;
    if (c->n_ctrl_names) {
      i = ctrl_index(s, c->ctrl_names[k]);
      if (i < 0) {
        khz_send_error(s, p, KHZ__V1__ERROR_CODE__UNKNOWN_NAME, seq, 0,
                       "command %llu: ctrl_names[%zu] '%s' is not one of the model's actuators "
                       "(ModelDescription.model_actuators): nothing applied",
                       (unsigned long long)seq, k, c->ctrl_names[k]);
        return -1;
      }
      for (size_t j = 0; j < k; j++)
        if (!strcmp(c->ctrl_names[j], c->ctrl_names[k])) {
          khz_send_error(s, p, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, seq, 0,
                         "command %llu: actuator '%s' is named twice in ctrl_names: nothing "
                         "applied",
                         (unsigned long long)seq, c->ctrl_names[k]);
          return -1;
        }
    }
    int slot = s->ctrl_slot[i];
    if (slot < 0) {
      khz_send_error(s, p, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, seq, 0,
                     "command %llu: actuator '%s' drives joint '%s', which takes no command",
                     (unsigned long long)seq, s->scene.actuator[i].name,
                     s->scene.actuator[i].joint);
      return -1;
    }
    double ff, kp, kd;
    if (khz_actuator_pd(&s->scene.actuator[i], c->ctrl[k], &ff, &kp, &kd) == 1 && *clamped < 0)
      *clamped = i, *clamped_value = c->ctrl[k];
    s->ctrl_ff[i] = ff;
    s->ctrl_on[i] = 1;
    s->ctrl_kp[slot] += kp;
    s->ctrl_kd[slot] += kd;
  }

  /* the servos' stability at the loop's step: semi-implicit Euler with the
   * joint's damping implicit (an actuator's kv under an implicit integrator is
   * part of it) is stable for kp <= 4 m / h^2 + 2 b / h (the update's
   * eigenvalues inside the unit circle), explicit kd for kd <= 2 m / h; RK4
   * takes the damping implicitly only where h b >= m (khz_abaCoreDamped) */
  double h;
  khz_loop_rate(s->loop, &h);
  for (size_t a = 0; a < na; a++) {
    int dof = s->act_dof[a];
    double meff = s->m->dof_meff[dof], b = s->m->dof_damping[dof];
    if (s->m->integrator == KHZ_INT_RK4 && h * b < meff) b = 0;
    double kpmax = 4 * meff / (h * h) + 2 * b / h, kdmax = 2 * meff / h;
    if (s->ctrl_kp[a] <= kpmax && s->ctrl_kd[a] <= kdmax) continue;
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, seq, 0,
                   "command %llu: the actuators on joint '%s' give it kp = %g, kd = %g: unstable "
                   "at %g s steps (kp <= 4 m / h^2 + 2 b / h = %g and kd <= 2 m / h = %g with "
                   "effective inertia m = %g and implicit damping b = %g): raise rate_hz, or "
                   "command tau instead: nothing applied",
                   (unsigned long long)seq, s->m->jnt_name[s->m->dof_body[dof]], s->ctrl_kp[a],
                   s->ctrl_kd[a], h, kpmax, kdmax, meff, b);
    return -1;
  }
  return 0;
}

void khz_commands_command(khzServer *s, const khzPeer *p, const Khz__V1__Command *c) {
  size_t na = (size_t)s->na, bad = 0;
  uint64_t seq = c->seq;

  /* which model, which state */
  if (c->model_generation != s->generation) {
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__WRONG_GENERATION, seq, 0,
                   "command %llu: model_generation %u is not this server's model (%u): describe it again",
                   (unsigned long long)seq, c->model_generation, s->generation);
    return;
  }
  if (!s->have_state || c->state_seq > s->latest_seq) {
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__STALE, seq, 0,
                   "command %llu: state_seq %llu has not been published (newest is %llu)",
                   (unsigned long long)seq, (unsigned long long)c->state_seq,
                   (unsigned long long)s->latest_seq);
    return;
  }
  if (c->state_seq < s->reset_seq) {
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__STALE, seq, 0,
                   "command %llu: computed from state %llu, before the reset at state %llu",
                   (unsigned long long)seq, (unsigned long long)c->state_seq,
                   (unsigned long long)s->reset_seq);
    return;
  }

  /* arbitration: actuators another client claimed are its alone */
  uint32_t client = khz_peer_client(s, p), holder = khz_claims_otherIn(s, client, 0, (int)na);
  if (holder) {
    char names[256];
    khz_claims_names(s, holder, names, sizeof names);
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__REFUSED, seq, 0,
                   "command %llu: the actuators %s are claimed by client %u: nothing applied (they "
                   "are free once it sends Release or stops commanding for watchdog_ms)",
                   (unsigned long long)seq, names, holder);
    return;
  }

  /* the model's own actuators by control (MuJoCo's ctrl), checked whole */
  int ctrl = c->n_ctrl > 0 || c->n_ctrl_names > 0, clamped = -1;
  double clamped_value = 0;
  if (ctrl && ctrl_terms(s, p, c, &clamped, &clamped_value)) return;

  /* sizes: every array na long, or empty where optional */
  int pd = c->n_q_target > 0;
  const char *field = NULL;
  size_t got = 0;
  if (pd) {
    if (c->n_q_target != na) field = "q_target", got = c->n_q_target;
    else if (c->n_tau && c->n_tau != na) field = "tau", got = c->n_tau;
    else if (c->n_qd_target && c->n_qd_target != na) field = "qd_target", got = c->n_qd_target;
    else if (c->n_kp != c->n_kd || (c->n_kp && c->n_kp != na))
      field = c->n_kp != na ? "kp" : "kd", got = c->n_kp != na ? c->n_kp : c->n_kd;
  } else {
    if (c->n_tau != na) field = "tau", got = c->n_tau;
    else if (c->n_qd_target || c->n_kp || c->n_kd)
      field = c->n_qd_target ? "qd_target" : c->n_kp ? "kp" : "kd",
      got = c->n_qd_target ? c->n_qd_target : c->n_kp ? c->n_kp : c->n_kd;
  }
  if (field && !ctrl) {
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__WRONG_SIZE, seq, 0,
                   "command %llu: %s has %zu values, the model has %zu actuators%s", (unsigned long long)seq,
                   field, got, na, !pd && strcmp(field, "tau") ? " (qd_target, kp, kd need q_target)" : "");
    return;
  }

  /* values: finite, gains >= 0 */
  const struct {
    const char *name;
    const double *v;
    size_t n;
  } arr[] = {{"tau", c->tau, c->n_tau},       {"q_target", c->q_target, c->n_q_target},
             {"qd_target", c->qd_target, c->n_qd_target},
             {"kp", c->kp, c->n_kp},          {"kd", c->kd, c->n_kd}};
  for (int k = 0; k < 5; k++) {
    if (!check_finite(arr[k].v, arr[k].n, &bad)) {
      khz_send_error(s, p, KHZ__V1__ERROR_CODE__NOT_FINITE, seq, 0,
                     "command %llu: %s[%zu] is %g: nothing applied", (unsigned long long)seq,
                     arr[k].name, bad, arr[k].v[bad]);
      return;
    }
  }
  /* gains: >= 0 and within the in-tick PD's stability bound at the loop's step */
  if (c->n_kp) {
    char msg[KHZ_LOOP_MSG_MAX * 2];
    double h;
    khz_loop_rate(s->loop, &h);
    if (khz_loop_checkGains(s->m, s->act_dof, s->na, c->kp, c->kd, h, msg, sizeof msg)) {
      khz_send_error(s, p, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, seq, 0, "command %llu: %s: nothing applied",
                     (unsigned long long)seq, msg);
      return;
    }
  }

  /* into the loop's latest-wins buffer, whole */
  khzCommand *slot = khz_loop_commandBegin(s->loop);
  slot->seq = seq;
  slot->state_seq = c->state_seq;
  slot->client_time_ns = c->client_time_ns;
  slot->recv_ns = khz_loop_now();
  slot->client = client;
  s->peer_active[client - 1] = ev_now(s->ev);
  slot->kind = ctrl ? KHZ_CMD_ACTUATORS : pd ? KHZ_CMD_PD : KHZ_CMD_TORQUE;
  slot->has_gains = c->n_kp > 0;
  for (size_t i = 0; ctrl && i < na; i++) {
    /* tau beside the actuators, whose terms the tick evaluates and clamps */
    slot->tau_ff[i] = c->n_tau ? c->tau[i] : 0;
    slot->q_target[i] = slot->qd_target[i] = slot->kp[i] = slot->kd[i] = 0;
  }
  for (int i = 0; ctrl && i < s->nu; i++) slot->act_ff[i] = s->ctrl_ff[i], slot->act_on[i] = s->ctrl_on[i];
  for (size_t i = 0; !ctrl && i < na; i++) {
    slot->tau_ff[i] = c->n_tau ? c->tau[i] : 0;
    slot->q_target[i] = pd ? c->q_target[i] : 0;
    slot->qd_target[i] = c->n_qd_target ? c->qd_target[i] : 0;
    slot->kp[i] = c->n_kp ? c->kp[i] : 0;
    slot->kd[i] = c->n_kd ? c->kd[i] : 0;
  }
  khz_loop_commandCommit(s->loop);
  s->commands_in++;

  /* a control outside its ctrlrange: applied clamped (MuJoCo clamps too); the client is told */
  if (clamped >= 0) {
    const khzMjcfActuator *a = &s->scene.actuator[clamped];
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__CLAMPED, seq, 1,
                   "command %llu: ctrl %g of actuator '%s' is outside its ctrlrange [%g, %g]: "
                   "clamped",
                   (unsigned long long)seq, clamped_value, a->name, a->ctrlrange[0],
                   a->ctrlrange[1]);
  }
  /* over an effort limit: applied clamped by the tick (state flag CLAMPED); the client is told */
  for (size_t i = 0; i < c->n_tau; i++) {
    double lim = s->m->dof_effort[s->act_dof[i]];
    if (lim > 0 && fabs(c->tau[i]) > lim) {
      khz_send_error(s, p, KHZ__V1__ERROR_CODE__CLAMPED, seq, 1,
                     "command %llu: tau[%zu] = %g exceeds the effort limit %g of joint '%s': clamped",
                     (unsigned long long)seq, i, c->tau[i], lim,
                     s->m->jnt_name[s->m->dof_body[s->act_dof[i]]]);
      break;
    }
  }
}

void khz_commands_haptic(khzServer *s, const khzPeer *p, const Khz__V1__HapticInput *h) {
  uint64_t seq = h->seq;
  size_t bad = 0;
  if (h->model_generation != s->generation) {
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__WRONG_GENERATION, seq, 0,
                   "haptic input %llu: model_generation %u is not this server's model (%u)",
                   (unsigned long long)seq, h->model_generation, s->generation);
    return;
  }
  if (h->proxy >= (uint32_t)s->nhaptic) {
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__UNKNOWN_NAME, seq, 0,
                   "haptic input %llu: no haptic proxy %u (the scene declares %d)", (unsigned long long)seq,
                   h->proxy, s->nhaptic);
    return;
  }
  if (h->n_position != 3 || h->n_orientation != 4 || (h->n_velocity && h->n_velocity != 3) ||
      (h->n_angular_velocity && h->n_angular_velocity != 3)) {
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__WRONG_SIZE, seq, 0,
                   "haptic input %llu: need position (3), orientation (4), velocity (0 or 3), "
                   "angular_velocity (0 or 3); got %zu, %zu, %zu, %zu",
                   (unsigned long long)seq, h->n_position, h->n_orientation, h->n_velocity,
                   h->n_angular_velocity);
    return;
  }
  if (!check_finite(h->position, 3, &bad) || !check_finite(h->orientation, 4, &bad) ||
      !check_finite(h->velocity, h->n_velocity, &bad) ||
      !check_finite(h->angular_velocity, h->n_angular_velocity, &bad)) {
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__NOT_FINITE, seq, 0,
                   "haptic input %llu: a value is NaN or inf: nothing applied", (unsigned long long)seq);
    return;
  }
  /* the coupling spring pulls the proxy towards the device: a device far
   * beyond the reach of any scene, or faster than any hand, is refused */
  for (int k = 0; k < 3; k++) {
    const char *what = NULL;
    double v = 0, lim = 0;
    if (fabs(h->position[k]) > KHZ_RESET_MAX_POS) what = "position", v = h->position[k], lim = KHZ_RESET_MAX_POS;
    else if (h->n_velocity && fabs(h->velocity[k]) > KHZ_HAPTIC_MAX_SPEED)
      what = "velocity", v = h->velocity[k], lim = KHZ_HAPTIC_MAX_SPEED;
    else if (h->n_angular_velocity && fabs(h->angular_velocity[k]) > KHZ_HAPTIC_MAX_SPEED)
      what = "angular_velocity", v = h->angular_velocity[k], lim = KHZ_HAPTIC_MAX_SPEED;
    if (what) {
      khz_send_error(s, p, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, seq, 0,
                     "haptic input %llu: %s[%d] = %g is beyond %g: nothing applied",
                     (unsigned long long)seq, what, k, v, lim);
      return;
    }
  }
  double *o = h->orientation, n = sqrt(o[0] * o[0] + o[1] * o[1] + o[2] * o[2] + o[3] * o[3]);
  if (!(n > 1e-9)) {
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__OUT_OF_RANGE, seq, 0,
                   "haptic input %llu: orientation quaternion of zero length", (unsigned long long)seq);
    return;
  }
  /* arbitration: a proxy another client claimed is its alone */
  uint32_t client = khz_peer_client(s, p);
  uint32_t holder = khz_claims_otherIn(s, client, s->na + (int)h->proxy, 1);
  if (holder) {
    khz_send_error(s, p, KHZ__V1__ERROR_CODE__REFUSED, seq, 0,
                   "haptic input %llu: haptic proxy %u ('%s') is claimed by client %u: nothing "
                   "applied (it is free once that client sends Release or stops sending for "
                   "watchdog_ms)",
                   (unsigned long long)seq, h->proxy,
                   s->m->body_name[s->haptic[h->proxy].body], holder);
    return;
  }
  s->peer_active[client - 1] = ev_now(s->ev);
  khzHapticInput in;
  memset(&in, 0, sizeof in);
  in.seq = seq;
  in.device_time_ns = h->device_time_ns;
  in.recv_ns = khz_loop_now();
  for (int k = 0; k < 3; k++) {
    in.pos[k] = h->position[k];
    in.vel[k] = h->n_velocity ? h->velocity[k] : 0;
    in.angvel[k] = h->n_angular_velocity ? h->angular_velocity[k] : 0;
  }
  for (int k = 0; k < 4; k++) in.quat[k] = o[k] / n;
  khz_loop_haptic(s->loop, (int)h->proxy, &in);
}
