/* commands.c — the real-time inputs: Command and HapticInput messages. Each
 * is checked whole (model generation, the state it answers, array sizes,
 * finite values, gains >= 0) and goes into the loop's latest-wins buffer, or
 * is rejected with an Error to its sender and nothing applied. No reply on
 * success: the states say what was applied. Torques over an effort limit are
 * applied clamped by the tick; the sender gets a CLAMPED warning.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

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
  if (field) {
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
  slot->kind = pd ? KHZ_CMD_PD : KHZ_CMD_TORQUE;
  slot->has_gains = c->n_kp > 0;
  for (size_t i = 0; i < na; i++) {
    slot->tau_ff[i] = c->n_tau ? c->tau[i] : 0;
    slot->q_target[i] = pd ? c->q_target[i] : 0;
    slot->qd_target[i] = c->n_qd_target ? c->qd_target[i] : 0;
    slot->kp[i] = c->n_kp ? c->kp[i] : 0;
    slot->kd[i] = c->n_kd ? c->kd[i] : 0;
  }
  khz_loop_commandCommit(s->loop);
  s->commands_in++;

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
