/* tick.c — the in-tick controller, the safe command, the haptic virtual
 * coupling and its passivity bound.
 *
 * Virtual coupling (Colgate, Stanley & Brown 1995; Adams & Hannaford 1999): the
 * device point x_d and the proxy body's com x_p are joined by a spring-damper,
 *     F = K (x_d - x_p) + B (v_d - v_p),
 *     T = K_r e(R_d R_p^T) + B_r (w_d - w_p)   (e = rotation vector of the error),
 * applied to the proxy (-F, -T rendered by the device). A sampled spring of
 * stiffness K held for a period T dissipates enough only when B > K T / 2.
 */
#include <math.h>
#include <string.h>

#include "spatial.h"
#include "tick.h"

void khz_tick_command(const khzModel *m, khzData *d, int na, const int *dof,
                      const khzCommand *c, const double *kp, const double *kd, int nu,
                      const khzLoopActuator *act) {
  memset(d->tau, 0, (size_t)m->nv * sizeof(double));
  if (c->kind == KHZ_CMD_TORQUE) {
    for (int i = 0; i < na; i++) d->tau[dof[i]] = c->tau_ff[i];
    return;
  }
  if (c->kind == KHZ_CMD_ACTUATORS) {
    /* the model's actuators: each force clamped to its range, then summed on its joint */
    for (int i = 0; i < na; i++) d->tau[dof[i]] = c->tau_ff[i];
    for (int j = 0; j < nu; j++) {
      const khzLoopActuator *a = &act[j];
      if (a->slot < 0 || c->act_on[j] == 0) continue;
      int k = dof[a->slot], b = m->dof_body[k];
      double f = c->act_ff[j] - a->kp * d->q[m->jnt_qadr[b]] - a->kd * d->qd[k];
      d->tau[k] += f < a->lo ? a->lo : f > a->hi ? a->hi : f;
    }
    return;
  }
  /* pd on each actuator: q of a 1-dof joint is at its qadr, qd at its dof */
  const double *gp = c->has_gains ? c->kp : kp, *gd = c->has_gains ? c->kd : kd;
  for (int i = 0; i < na; i++) {
    int k = dof[i], b = m->dof_body[k];
    double q = d->q[m->jnt_qadr[b]], qd = d->qd[k];
    d->tau[k] = gp[i] * (c->q_target[i] - q) + gd[i] * (c->qd_target[i] - qd) + c->tau_ff[i];
  }
}

void khz_tick_safe(const khzModel *m, khzData *d, int na, const int *dof, int safe,
                   double damping) {
  memset(d->tau, 0, (size_t)m->nv * sizeof(double));
  if (safe != KHZ_SAFE_DAMPING) return;
  for (int i = 0; i < na; i++) d->tau[dof[i]] = -damping * d->qd[dof[i]];
}

/* rotation vector (axis * angle, |angle| <= pi) of the unit quaternion q */
static void quat_log(double res[3], const double q[4]) {
  double w = q[0], x = q[1], y = q[2], z = q[3];
  if (w < 0) w = -w, x = -x, y = -y, z = -z;
  double s = sqrt(x * x + y * y + z * z);
  if (s < 1e-12) {
    res[0] = 2 * x, res[1] = 2 * y, res[2] = 2 * z;
    return;
  }
  double a = 2 * atan2(s, w) / s;
  res[0] = a * x, res[1] = a * y, res[2] = a * z;
}

void khz_tick_coupling(const khzModel *m, const khzData *d, const khzHapticProxy *p,
                       const khzHapticInput *in, double w[6]) {
  int b = p->body;
  const double *xc = d->xcom + 3 * b, *xo = d->xpos + 3 * b, *cv = d->cvel + 6 * b;
  (void)m;

  /* proxy com velocity: v_origin + w x (com - origin) */
  double r[3] = {xc[0] - xo[0], xc[1] - xo[1], xc[2] - xo[2]};
  double vp[3] = {cv[3] + cv[1] * r[2] - cv[2] * r[1], cv[4] + cv[2] * r[0] - cv[0] * r[2],
                  cv[5] + cv[0] * r[1] - cv[1] * r[0]};

  /* translational spring-damper */
  for (int k = 0; k < 3; k++)
    w[k] = p->stiffness * (in->pos[k] - xc[k]) + p->damping * (in->vel[k] - vp[k]);

  /* rotational: error q_d * conj(q_p) as a rotation vector in the world */
  double qp[4], e[3];
  khzu_mat2quat(qp, d->xrot + 9 * b);
  const double *qd = in->quat;
  double qe[4] = {
      qd[0] * qp[0] + qd[1] * qp[1] + qd[2] * qp[2] + qd[3] * qp[3],
      -qd[0] * qp[1] + qd[1] * qp[0] - qd[2] * qp[3] + qd[3] * qp[2],
      -qd[0] * qp[2] + qd[1] * qp[3] + qd[2] * qp[0] - qd[3] * qp[1],
      -qd[0] * qp[3] - qd[1] * qp[2] + qd[2] * qp[1] + qd[3] * qp[0],
  };
  quat_log(e, qe);
  for (int k = 0; k < 3; k++)
    w[3 + k] = p->rot_stiffness * e[k] + p->rot_damping * (in->angvel[k] - cv[k]);
}

int khz_tick_passive(const khzHapticProxy *p, double T) {
  int lin = p->stiffness == 0 ? p->damping >= 0 : p->damping > p->stiffness * T / 2;
  int rot = p->rot_stiffness == 0 ? p->rot_damping >= 0
                                  : p->rot_damping > p->rot_stiffness * T / 2;
  return lin && rot && p->stiffness >= 0 && p->rot_stiffness >= 0;
}
