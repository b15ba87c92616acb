/* step.c — passive joint forces, torque clamping and the integrators.
 *
 * RK4 is the classical four-stage scheme on (q, qd); quaternions are
 * integrated in R^4 with q' = 1/2 q (x) (0, w) and renormalised after the step,
 * which keeps fourth order on rotations (the tangent-space combination used
 * by some engines is only second order there). Semi-implicit Euler:
 * qd += h qdd, then q <- q (+) h qd with the exponential map.
 * Scratch comes from the data's stack; nothing here allocates.
 */
#include <math.h>
#include <string.h>

#include "constraint.h"
#include "contact/contact.h"
#include "contact/sweep.h"
#include "dynamics.h"
#include "island.h"
#include "khz/khz.h"
#include "lcp/lcp.h"
#include "peg/peg.h"
#include "spatial.h"

/* the gentle release of a joint far past its limit (khz_passive): beyond
 * KHZ_LIMIT_DEEP (rad or m) the limit spring's push is capped, and it
 * returns at about KHZ_LIMIT_RELAX_SPEED (rad/s or m/s) or w KHZ_LIMIT_DEEP / 2 */
#define KHZ_LIMIT_DEEP 0.02
#define KHZ_LIMIT_RELAX_SPEED 0.3

void khz_integratePos(const khzModel *m, double *qout, const double *q, const double *v,
                      double h) {
  if (qout != q) memcpy(qout, q, (size_t)m->nq * sizeof(double));
  for (int i = 1; i < m->nbody; i++) {
    int qa = m->jnt_qadr[i], da = m->jnt_dofadr[i];
    double *qo = qout + qa;
    const double *w;
    switch (m->jnt_type[i]) {
      case KHZ_JOINT_FIXED:
        continue;
      case KHZ_JOINT_FLOATING:
        qo[0] += h * v[da], qo[1] += h * v[da + 1], qo[2] += h * v[da + 2];
        qo += 3;
        w = v + da + 3;
        break;
      case KHZ_JOINT_SPHERICAL:
        w = v + da;
        break;
      default:
        qo[0] += h * v[da];
        continue;
    }
    /* q <- q * exp(w h / 2): body-frame angular velocity multiplies on the right */
    double wn = sqrt(khzu_dot3(w, w));
    if (wn > 0 && h != 0) {
      double axis[3] = {w[0] / wn, w[1] / wn, w[2] / wn}, dq[4];
      khzu_axisAngle2Quat(dq, axis, wn * h);
      khzu_mulQuat(qo, qo, dq);
    }
    khzu_normalizeQuat(qo);
  }
}

/* stiffness of the joint-limit and friction-stick springs: natural frequency
 * limit_hz, capped so that h * omega stays well inside the stability region of
 * both integrators */
static double spring_omega(const khzModel *m, double h) {
  double w = 2 * M_PI * m->limit_hz, cap = 0.3 / h;
  return w < cap ? w : cap;
}

static int is_scalar(const khzModel *m, int body) {
  int t = m->jnt_type[body];
  return t == KHZ_JOINT_REVOLUTE || t == KHZ_JOINT_CONTINUOUS || t == KHZ_JOINT_PRISMATIC;
}

void khz_resetStick(const khzModel *m, khzData *d) {
  memset(d->stick, 0, (size_t)m->nv * sizeof(double));
  for (int i = 1; i < m->nbody; i++)
    if (is_scalar(m, i)) d->stick[m->jnt_dofadr[i]] = d->q[m->jnt_qadr[i]];
}

/* the terms of khz_passive that some joint of the model has: a loop over
 * every dof or joint for a term nobody has (a pile of free bodies has
 * none) reads 200 kB of the model at 960 bodies, five times a step, to do
 * nothing. The tests are the loops' own. */
enum { PASSIVE_SPRINGS = 1, PASSIVE_FRICTION = 2, PASSIVE_LIMITS = 4 };

void khz_passiveTerms(khzModel *m) {
  m->passive_terms = 0;
  for (int da = 0; da < m->nv; da++) {
    if (m->dof_stiffness[da] > 0 && m->jnt_nv[m->dof_body[da]] == 1) m->passive_terms |= PASSIVE_SPRINGS;
    if (!(m->dof_friction[da] <= 0)) m->passive_terms |= PASSIVE_FRICTION;
  }
  for (int i = 1; i < m->nbody; i++)
    if (m->jnt_limited[i]) m->passive_terms |= PASSIVE_LIMITS;
}

/* tau = -b qd and tau += t over n dofs, built for AVX too (no FMA: the same
 * bits); called once or twice per stage over every dof */
KHZ_AVX_CLONES static void damping_torque(double *restrict tau, const double *restrict b,
                                          const double *restrict qd, int n) {
  for (int k = 0; k < n; k++) tau[k] = -b[k] * qd[k];
}
KHZ_AVX_CLONES static void add_torque(double *restrict tau, const double *restrict t, int n) {
  for (int k = 0; k < n; k++) tau[k] += t[k];
}

void khz_passive(const khzModel *m, const khzData *d, const double *q, const double *qd,
                 double *tau) {
  double h = d->timestep, w = spring_omega(m, h);
  damping_torque(tau, m->dof_damping, qd, m->nv);
  int terms = m->passive_terms;
  /* joint springs (1-dof joints only; dof_stiffness is 0 elsewhere). This
   * loop and the next visit the dofs, each touching its own tau only, so
   * their order is free: the dofs in a row, the few that act looked up */
  for (int da = 0; da < m->nv && (terms & PASSIVE_SPRINGS); da++) {
    int i = m->dof_body[da];
    if (m->dof_stiffness[da] > 0 && m->jnt_nv[i] == 1)
      tau[da] -= m->dof_stiffness[da] * (q[m->jnt_qadr[i]] - m->dof_springref[da]);
  }
  for (int dof = 0; dof < m->nv && (terms & PASSIVE_FRICTION); dof++) {
    double F = m->dof_friction[dof];
    if (F <= 0) continue;
    int i = m->dof_body[dof], qa = m->jnt_qadr[i];
    double meff = m->dof_meff[dof];
    if (is_scalar(m, i)) {
      /* stick: spring-damper to the anchor, saturated at the friction torque */
      double ks = meff * w * w, bs = 2 * meff * w;
      double f = -ks * (q[qa] - d->stick[dof]) - bs * qd[dof];
      tau[dof] += f > F ? F : (f < -F ? -F : f);
    } else {
      /* tanh-regularised Coulomb, slope F / vs <= meff / (2 h) */
      double vs = fmax(2 * F * h / meff, 1e-6);
      tau[dof] -= F * tanh(qd[dof] / vs);
    }
  }
  /* joint limits: one-sided spring-damper that pushes, never pulls. A joint
   * far past its limit (a model that starts there: Gymnasium's ant, 30 deg)
   * is released gently: while it is not moving deeper, the spring's push is
   * capped at max(k_r KHZ_LIMIT_DEEP, b KHZ_LIMIT_RELAX_SPEED), so it
   * returns at cap / b, a few rad/s, instead of with the spring's stored
   * energy; moving deeper it meets the full spring, so loads are held. k_r is
   * the spring's stiffness at the whole step's h (d->step_timestep): substeps
   * of a long step release as slowly as the step would (0.3 rad/s at 10 ms) */
  double wr = spring_omega(m, d->step_timestep > h ? d->step_timestep : h);
  for (int i = 1; i < m->nbody && (terms & PASSIVE_LIMITS); i++) {
    if (!m->jnt_limited[i]) continue;
    int qa = m->jnt_qadr[i], da = m->jnt_dofadr[i];
    double lo = m->jnt_range[2 * i], hi = m->jnt_range[2 * i + 1], x = q[qa], f = 0;
    if (x > hi || x < lo) { /* the spring's constants only past a limit */
      double meff = m->dof_meff[da], k = meff * w * w, b = 2 * m->limit_zeta * meff * w;
      double cap = fmax(meff * wr * wr * KHZ_LIMIT_DEEP, b * KHZ_LIMIT_RELAX_SPEED);
      if (x > hi) {
        double push = k * (x - hi);
        if (qd[da] <= 0 && push > cap) push = cap;
        f = -push - b * qd[da];
        if (f > 0) f = 0;
      } else {
        double push = k * (lo - x);
        if (qd[da] >= 0 && push > cap) push = cap;
        f = push - b * qd[da];
        if (f < 0) f = 0;
      }
    }
    tau[da] += f; /* + 0 within the range, as before (it turns a -0 into +0) */
  }
}

/* after a step: an anchor whose spring would exceed the friction torque slides
 * along, so that the spring holds exactly the friction torque */
static void update_stick(const khzModel *m, khzData *d) {
  double w = spring_omega(m, d->timestep);
  for (int i = 1; i < m->nbody; i++) {
    if (!is_scalar(m, i)) continue;
    int dof = m->jnt_dofadr[i];
    double F = m->dof_friction[dof], q = d->q[m->jnt_qadr[i]];
    if (F <= 0) {
      d->stick[dof] = q;
      continue;
    }
    double ks = m->dof_meff[dof] * w * w, f = -ks * (q - d->stick[dof]);
    if (f > F) d->stick[dof] = q + F / ks;
    if (f < -F) d->stick[dof] = q - F / ks;
  }
}

/* out = q (x) (0, w/2): khzu_mulQuat's operations on (0, w/2), inline (the
 * call was 45 Ir per free body and stage) */
static inline void quat_rate(double out[4], const double q[4], const double w[3]) {
  double b[4] = {0, 0.5 * w[0], 0.5 * w[1], 0.5 * w[2]};
  out[0] = q[0] * b[0] - q[1] * b[1] - q[2] * b[2] - q[3] * b[3];
  out[1] = q[0] * b[1] + q[1] * b[0] + q[2] * b[3] - q[3] * b[2];
  out[2] = q[0] * b[2] - q[1] * b[3] + q[2] * b[0] + q[3] * b[1];
  out[3] = q[0] * b[3] + q[1] * b[2] - q[2] * b[1] + q[3] * b[0];
}

/* time derivative of q in the embedding: qdot = v for scalar joints and positions,
 * 1/2 q (x) (0, w) for quaternions with body-frame w */
static void position_derivative(const khzModel *m, const double *q, const double *v,
                                double *qdot) {
  for (int i = 1; i < m->nbody; i++) {
    int qa = m->jnt_qadr[i], da = m->jnt_dofadr[i];
    const double *qq, *w;
    double *out;
    switch (m->jnt_type[i]) {
      case KHZ_JOINT_FIXED:
        continue;
      case KHZ_JOINT_FLOATING:
        qdot[qa] = v[da], qdot[qa + 1] = v[da + 1], qdot[qa + 2] = v[da + 2];
        qq = q + qa + 3, w = v + da + 3, out = qdot + qa + 3;
        break;
      case KHZ_JOINT_SPHERICAL:
        qq = q + qa, w = v + da, out = qdot + qa;
        break;
      default:
        qdot[qa] = v[da];
        continue;
    }
    quat_rate(out, qq, w);
  }
}

static void normalize_quats(const khzModel *m, double *q) {
  for (int i = 1; i < m->nbody; i++) {
    if (m->jnt_type[i] == KHZ_JOINT_FLOATING) khzu_normalizeQuat(q + m->jnt_qadr[i] + 3);
    if (m->jnt_type[i] == KHZ_JOINT_SPHERICAL) khzu_normalizeQuat(q + m->jnt_qadr[i]);
  }
}

/* commanded torques: NaN/inf -> 0, |tau| clamped to the effort limit */
static void clamp_controls(const khzModel *m, khzData *d) {
  for (int k = 0; k < m->nv; k++) {
    double t = d->tau[k], lim = m->dof_effort[k];
    if (!isfinite(t)) {
      t = 0;
      d->warning[KHZ_WARN_BADCTRL]++;
    }
    if (lim > 0 && fabs(t) > lim) {
      t = t > 0 ? lim : -lim;
      d->warning[KHZ_WARN_EFFORT]++;
    }
    d->tau_applied[k] = t;
  }
}

/* what accel may take from the data instead of computing it again */
enum {
  ACCEL_FULL,      /* nothing */
  ACCEL_POSITIONS, /* the forward pass's position part is at q (poses, S, inertias) */
  ACCEL_AGAIN      /* the same (q, qd) as the last call, whose tau_tmp and keep hold:
                    * only the contact forces changed (the implicit part) */
};

/* qdd = FD(q, qd) with the applied torques, passive forces, body wrenches and
 * the contact forces of the resting pairs at (q, qd); joint damping implicit
 * over h where the integrator asks for it (khz_abaCoreDamped: Euler every
 * dof, RK4 the dofs where explicit damping would diverge). keep (12 doubles
 * per body, or NULL) carries ABA's velocity terms to an ACCEL_AGAIN call;
 * every mode gives the bits a full evaluation gives. store: ABA's factors
 * are read after the call (the implicit contact part after the first
 * stage); 0 leaves a free object's out of d (khz_abaCoreKeep). vel_saved
 * (ACCEL_AGAIN only, or NULL): the velocity fields at (q, qd) saved before
 * the implicit part (khz_velocitySave), put back instead of a velocity pass. */
static void accel(const khzModel *m, khzData *d, const double *q, const double *qd,
                  double *tau_tmp, double *qdd, int mode, double *keep, int store,
                  const double *vel_saved) {
  double h = d->timestep;
  int stiff_only = m->integrator != KHZ_INT_EULER;
  if (mode != ACCEL_AGAIN || !keep) {
    khz_passive(m, d, q, qd, tau_tmp);
    add_torque(tau_tmp, d->tau_applied, m->nv);
  }
  if (mode == ACCEL_FULL && !store && !m->neq) khz_forwardPassStage(m, d, q, qd, h); /* RK4's stages 2-4 */
  else if (mode == ACCEL_FULL || (mode == ACCEL_AGAIN && !keep)) khz_forwardPass(m, d, q, qd);
  else if (mode == ACCEL_AGAIN && vel_saved) khz_velocityRestore(m, d, vel_saved);
  else if (mode == ACCEL_AGAIN || !khz_kinematicsAt(m, d, q, qd))
    khz_velocityPass(m, d, qd); /* the implicit part's passes left other velocities */
  /* else the last step's closing pass is at (q, qd): no impulse moved qd */
  khz_externalForces(m, d);
  if (d->ncontact) khz_contactForces(m, d);
  khz_abaCoreKeep(m, d, tau_tmp, qdd, h, stiff_only, keep, mode == ACCEL_AGAIN && keep,
                  store || m->neq); /* khz_constraintAccel takes the impulse response */
  if (m->neq) khz_constraintAccel(m, d, q, qd, qdd);
}

void khz_forward(const khzModel *m, khzData *d) {
  clamp_controls(m, d);
  khz_passive(m, d, d->q, d->qd, d->tau_passive);
  size_t mark = khz_stackMark(d);
  double *tau = khz_stackAlloc(d, (size_t)m->nv * sizeof(double));
  if (tau) {
    for (int k = 0; k < m->nv; k++) tau[k] = d->tau_passive[k] + d->tau_applied[k];
    khz_forwardPass(m, d, d->q, d->qd);
    khz_externalForces(m, d);
    if (d->ncontact) khz_contactForces(m, d);
    khz_abaCore(m, d, tau, d->qdd);
    if (m->neq) khz_constraintAccel(m, d, d->q, d->qd, d->qdd);
  }
  khz_stackFree(d, mark);
  khz_kinematics(m, d);
}

static int finite_state(const khzModel *m, const khzData *d, int *bad_body) {
  for (int i = 1; i < m->nbody; i++) {
    for (int k = 0; k < m->jnt_nq[i]; k++)
      if (!isfinite(d->q[m->jnt_qadr[i] + k])) return *bad_body = i, 0;
    for (int k = 0; k < m->jnt_nv[i]; k++)
      if (!isfinite(d->qd[m->jnt_dofadr[i] + k])) return *bad_body = i, 0;
  }
  return 1;
}

void khz_step(const khzModel *m, khzData *d) { khz_stepWith(m, d, m->timestep); }

static void step_once(const khzModel *m, khzData *d, double h);

void khz_stepWith(const khzModel *m, khzData *d, double h) {
  /* a step longer than max_substep: n equal substeps, each a full step */
  int n = 1;
  if (m->max_substep > 0 && h > m->max_substep * (1 + 1e-9)) n = (int)ceil(h / m->max_substep - 1e-9);
  d->step_timestep = h;
  for (int i = 0; i < n; i++) step_once(m, d, h / n);
}

/* RK4's vector steps, built for AVX too (no FMA: the same bits): x = x0 +
 * a k ((c_s h) k as the loops wrote c[s] * h * k, left to right), and the
 * weighted sum sum = (first ? 0 : sum) + w k */
KHZ_AVX_CLONES static void rk4_axpy(double *restrict x, const double *restrict x0, double a,
                                    const double *restrict k, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = x0[i] + a * k[i];
}
KHZ_AVX_CLONES static void rk4_sum(double *restrict sum, double w, const double *restrict k, size_t n, int first) {
  if (first)
    for (size_t i = 0; i < n; i++) sum[i] = 0 + w * k[i];
  else
    for (size_t i = 0; i < n; i++) sum[i] = sum[i] + w * k[i];
}

/* one step of h: collision, contact, integration, the checks after it */
static void step_once(const khzModel *m, khzData *d, double h) {
  size_t nq = (size_t)m->nq, nv = (size_t)m->nv, mark = khz_stackMark(d);
  d->timestep = h;
  double *q0 = khz_stackAlloc(d, nq * sizeof(double));
  double *v0 = khz_stackAlloc(d, nv * sizeof(double));
  double *tau = khz_stackAlloc(d, nv * sizeof(double));
  double *qs = khz_stackAlloc(d, nq * sizeof(double));
  double *vs = khz_stackAlloc(d, nv * sizeof(double));
  double *ka = khz_stackAlloc(d, 2 * nv * sizeof(double)); /* a stage's qdd, the weighted sum */
  double *kq = khz_stackAlloc(d, 2 * nq * sizeof(double)); /* its q', the weighted sum */
  /* ABA's velocity terms of the first stage, for its second evaluation after
   * the implicit contact part (optional: NULL evaluates it in full) */
  double *keep = khz_stackAlloc(d, 12 * (size_t)m->nbody * sizeof(double));
  /* the first stage's velocity fields, put back after the implicit part's
   * passes (optional: NULL takes a velocity pass) */
  double *vel = khz_stackAlloc(d, 12 * (size_t)m->nbody * sizeof(double));
  if (!q0 || !v0 || !tau || !qs || !vs || !ka || !kq) {
    khz_stackFree(d, mark);
    return; /* counted as KHZ_WARN_STACK by khz_stackAlloc */
  }
  clamp_controls(m, d);
  khz_islandWakeOnInputs(m, d); /* sleeping islands that a torque, wrench or velocity reaches */
  memcpy(q0, d->q, nq * sizeof(double));
  memcpy(v0, d->qd, nv * sizeof(double));

  /* the LCP method steps by itself (velocity-level, first order); when it
   * cannot solve a step it counts a warning and the penalty stages run */
  int lcp = (d->contact_method == KHZ_CONTACT_LCP && khz_lcpStep(m, d, h) == 0) ||
            (d->contact_method == KHZ_CONTACT_PEG && khz_pegStep(m, d, h) == 0);

  /* the first stage takes the position part of the forward pass below (the
   * contact stages move qd only) unless the collision pass woke a body: it
   * was not in that pass. The bodies still asleep are in no pass (their
   * fields hold at their frozen q), so sleeping alone does not ask for a
   * second full pass: the arm on the table beside the sleeping objects
   * saved one forward pass a step */
  int first = ACCEL_FULL;
  if (!lcp) {
    /* contact: collision detection at the current state, the Fig. 2 phases
     * and impulses for impacts (which change qd before the integration) */
    if (d->contact_method != KHZ_CONTACT_NONE) {
      /* usually the last step's closing khz_kinematics is at this state */
      if (!khz_kinematicsAt(m, d, d->q, d->qd)) khz_forwardPass(m, d, d->q, d->qd);
      first = ACCEL_POSITIONS;
    }
    int asleep = d->body_sleep[0]; /* trees asleep; the collision pass may wake some */
    khz_contactBegin(m, d);
    if (d->body_sleep[0] != asleep) first = ACCEL_FULL;
    memcpy(q0, d->q, nq * sizeof(double));
    memcpy(v0, d->qd, nv * sizeof(double));
  }

  if (lcp) {
    /* the state is already at the step's end */
  } else if (khz_allAsleep(m, d)) {
    /* every tree that may move sleeps (after the inputs' and the collision
     * pass's wakes): the stages would evaluate the dynamics of frozen
     * bodies (the forward pass and ABA skip them, the welded ones give
     * what they gave) for khz_islandFreeze to put q and qd back and zero
     * qdd; the freeze alone gives the same state */
  } else if (m->integrator == KHZ_INT_EULER) {
    /* semi-implicit Euler */
    accel(m, d, q0, v0, tau, d->qdd, first, keep, 1, NULL);
    if (d->ncontact && vel) khz_velocitySave(m, d, vel);
    if (d->ncontact && khz_contactImplicit(m, d, v0, d->qdd))
      accel(m, d, q0, v0, tau, d->qdd, ACCEL_AGAIN, keep, 1, vel);
    for (size_t k = 0; k < nv; k++) d->qd[k] = v0[k] + h * d->qdd[k];
    khz_integratePos(m, d->q, q0, d->qd, h);
    if (m->neq) khz_constraintProject(m, d); /* closed loops stay closed (constraint.c) */
  } else {
    /* classical RK4 on (q, qd), quaternions integrated in R^4 (q' = 1/2 q (x) w)
     * and renormalised at the end: fourth order on the rotation group too.
     * stage s evaluates at (q0 + c_s h kq_{s-1}, v0 + c_s h ka_{s-1}) */
    static const double c[4] = {0, 0.5, 0.5, 1}, wgt[4] = {1, 2, 2, 1};
    /* one stage's derivatives at a time (the first stage's qdd is d->qdd's):
     * the next stage needs only the last one's, and the weighted sums
     * sum_s wgt_s k_s are taken as the stages go, in stage order from 0: the
     * sums of all four at the end gave the same bits from twice the memory */
    double *kqs = kq, *sq = kq + nq, *sv = ka + nv;
    for (int s = 0; s < 4; s++) {
      double *kas = s == 0 ? d->qdd : ka;
      if (s == 0) {
        memcpy(qs, q0, nq * sizeof(double));
        memcpy(vs, v0, nv * sizeof(double));
      } else {
        const double *kqp = kqs, *kap = s == 1 ? d->qdd : ka;
        rk4_axpy(qs, q0, c[s] * h, kqp, nq);
        rk4_axpy(vs, v0, c[s] * h, kap, nv);
      }
      position_derivative(m, qs, vs, kqs);
      /* stages 2-4: nothing reads ABA's factors before the next step's
       * contact stage computes them again */
      accel(m, d, qs, vs, tau, kas, s == 0 ? first : ACCEL_FULL, s == 0 ? keep : NULL, s == 0, NULL);
      /* the implicit part of contact, solved from the first stage and held
       * constant over the step: the stage is evaluated again with it */
      if (s == 0 && d->ncontact && vel) khz_velocitySave(m, d, vel);
      if (s == 0 && d->ncontact && khz_contactImplicit(m, d, v0, kas))
        accel(m, d, qs, vs, tau, kas, ACCEL_AGAIN, keep, 1, vel);
      rk4_sum(sv, wgt[s], kas, nv, s == 0);
      rk4_sum(sq, wgt[s], kqs, nq, s == 0);
    }
    /* combine: x = x0 + h/6 (k1 + 2 k2 + 2 k3 + k4) */
    rk4_axpy(d->qd, v0, h / 6, sv, nv);
    rk4_axpy(d->q, q0, h / 6, sq, nq);
    normalize_quats(m, d->q);
  }
  khz_islandFreeze(m, d, q0, v0); /* sleeping bodies stay exactly where they were */

  /* a non-finite state is rolled back and reported, never propagated */
  int bad = -1;
  if (!finite_state(m, d, &bad)) {
    memcpy(d->q, q0, nq * sizeof(double));
    memcpy(d->qd, v0, nv * sizeof(double));
    d->warning[KHZ_WARN_BADSTATE]++;
    d->warning_body = bad;
  } else {
    update_stick(m, d);
  }
  khz_passive(m, d, d->q, d->qd, d->tau_passive);
  d->time += h;
  khz_kinematics(m, d);
  /* small fast bodies must not pass through thin geoms between two steps */
  if (d->contact_method != KHZ_CONTACT_NONE && khz_contactSweep(m, d, q0)) khz_kinematics(m, d);
  if (d->ncontact && !lcp) khz_contactEnd(m, d);
  /* islands of free bodies at rest go to sleep (island.c) */
  khz_islandUpdate(m, d);
  khz_stackFree(d, mark);
}

/* -------------------------------------------------------- reset the data -- */

void khz_resetData(const khzModel *m, khzData *d) {
  d->time = 0;
#define KHZ_X_ZERO(type, name, count) memset(d->name, 0, (size_t)(count) * sizeof(type));
  KHZ_STATE_FIELDS(KHZ_X_ZERO)
#undef KHZ_X_ZERO
  memcpy(d->q, m->q0, (size_t)m->nq * sizeof(double));
  d->timestep = m->timestep;
  d->step_timestep = m->timestep;
  memcpy(d->qd, m->qd0, (size_t)m->nv * sizeof(double));
  khz_resetStick(m, d);
  for (int k = 0; k < m->npair_max; k++) d->pair[k].geom[0] = d->pair[k].geom[1] = -1;
  d->contact_method = m->contact.method;
  d->sleep_enabled = m->sleep.enabled;
  d->ncontact = d->ncpoint = 0;
  d->ncontact_asleep = d->contact_shift = d->ncontact_kept = 0;
  d->quiet_ready = 0;
  d->reuse_n = 0;
  memset(d->warning, 0, sizeof d->warning);
  d->warning_body = -1;
  d->stack_top = 0;
  memset(d->qdd, 0, (size_t)m->nv * sizeof(double));
  memset(d->tau_applied, 0, (size_t)m->nv * sizeof(double));
  memset(d->tau_passive, 0, (size_t)m->nv * sizeof(double));
  khz_kinematics(m, d);
}
