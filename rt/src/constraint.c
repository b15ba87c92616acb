/* constraint.c — equality constraints on the articulated bodies, after
 * Kokkevis ("Practical physics for articulated characters", 2004) as used in
 * Patil, "Articulated body collision response" (2007): a constraint holds a
 * point of body1 on a point of body2 (connect: 3 rows) and, for a weld, also
 * body1's orientation in body2's frame (3 more rows).
 *
 * At each evaluation of the accelerations, after ABA has given the
 * unconstrained qdd and body accelerations, the constraint forces lambda solve
 *
 *     K lambda = -(a_rel + kd v_rel + kp r),      K = J M^-1 J^T,
 *
 * where a_rel, v_rel, r are the rows' relative acceleration, velocity and
 * position error (Baumgarte's stabilisation: the error decays as a damped
 * spring; the gains per integrator are below). K is built column by column from
 * test impulses: a unit force (or couple) on body1 and its opposite on body2,
 * propagated with Mirtich's articulated impulse response through the
 * articulated inertias ABA left (O(n) each), gives dqd = M^-1 J^T e_k; the
 * rows' velocity change under dqd is K's column. Then qdd += sum_k lambda_k
 * dqd_k, exact because the response is linear. K is regularised by 1e-10 of
 * its largest diagonal, so redundant rows (a planar loop's out-of-plane row)
 * stay solvable. With implicit damping (khz_abaCoreDamped) the responses are
 * those of M + h B, as the step's velocity update needs.
 */
#include "constraint.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dynamics.h"
#include "spatial.h"

static int fail(char *err, size_t errsz, const char *fmt, int i, const char *name, int b) {
  if (err && errsz) snprintf(err, errsz, fmt, i, name, b);
  return -1;
}

int khz_constraintCheck(const khzEqualitySpec *e, int i, int nbody, char *err, size_t errsz) {
  if (e->type != KHZ_EQ_CONNECT && e->type != KHZ_EQ_WELD && e->type != KHZ_EQ_JOINT)
    return fail(err, errsz, "equality constraint %d '%s': unknown type %d", i, e->name, e->type);
  if (e->body1 < 0 || e->body1 >= nbody)
    return fail(err, errsz, "equality constraint %d '%s': body1 index %d does not exist", i,
                e->name, e->body1);
  if (e->body2 < 0 || e->body2 >= nbody)
    return fail(err, errsz, "equality constraint %d '%s': body2 index %d does not exist", i,
                e->name, e->body2);
  if (e->type == KHZ_EQ_JOINT && e->body1 == 0)
    return fail(err, errsz, "equality constraint %d '%s': a joint constraint needs body1's "
                "joint (body %d is the world)", i, e->name, 0);
  if (e->body1 == e->body2)
    return fail(err, errsz, "equality constraint %d '%s': body1 and body2 are the same body %d",
                i, e->name, e->body1);
  double qn = 0;
  int finite = 1;
  for (int k = 0; k < 3; k++) finite &= isfinite(e->pos1[k]) && isfinite(e->pos2[k]);
  for (int k = 0; k < 4; k++) finite &= isfinite(e->quat[k]) != 0, qn += e->quat[k] * e->quat[k];
  for (int k = 0; k < 5; k++) finite &= isfinite(e->polycoef[k]) != 0;
  if (!finite || !(qn > 0)) {
    if (err && errsz)
      snprintf(err, errsz, "equality constraint %d '%s': anchors and quaternion must be finite "
               "(the quaternion non-zero)", i, e->name);
    return -1;
  }
  return 0;
}

static int rows_of(const khzModel *m, int i) {
  return m->eq_type[i] == KHZ_EQ_WELD ? 6 : m->eq_type[i] == KHZ_EQ_JOINT ? 1 : 3;
}

/* a 1-dof joint (hinge or slide) */
static int scalar_joint(const khzModel *m, int b) {
  int t = m->jnt_type[b];
  return b > 0 && (t == KHZ_JOINT_REVOLUTE || t == KHZ_JOINT_CONTINUOUS || t == KHZ_JOINT_PRISMATIC);
}

/* a joint constraint's polynomial p(x) = c0 + c1 x + ... + c4 x^4 and its two
 * derivatives at x = q2 - r2 (x = 0 without a second joint) */
static void joint_poly(const khzModel *m, int i, double x, double *p, double *dp, double *ddp) {
  const double *c = m->eq_poly + 5 * i;
  *p = c[0] + x * (c[1] + x * (c[2] + x * (c[3] + x * c[4])));
  *dp = c[1] + x * (2 * c[2] + x * (3 * c[3] + x * 4 * c[4]));
  *ddp = 2 * c[2] + x * (6 * c[3] + x * 12 * c[4]);
}

static int total_rows(const khzModel *m) {
  int r = 0;
  for (int i = 0; i < m->neq; i++) r += rows_of(m, i);
  return r;
}

size_t khz_constraintStackBytes(const khzModel *m) {
  size_t R = 6 * (size_t)m->neq, nv = (size_t)m->nv, nb = (size_t)m->nbody;
  return (R * R + R * nv + 2 * R + 12 * nb + 3 * nv + R) * sizeof(double) + 512;
}

/* world pose of body b's frame (the world's for b = 0) */
static void body_pose(const khzData *d, int b, const double **R, const double **p) {
  static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, O3[3] = {0, 0, 0};
  *R = b > 0 ? d->xrot + 9 * b : I3;
  *p = b > 0 ? d->xpos + 3 * b : O3;
}

/* world position of the point `local` of body b */
static void world_point(const khzData *d, int b, const double local[3], double x[3]) {
  const double *R, *p;
  body_pose(d, b, &R, &p);
  khzu_mulMatVec3(x, R, local);
  khzu_add3(x, x, p);
}

/* world orientation of body b as a quaternion */
static void body_quat(const khzData *d, int b, double q[4]) {
  const double *R, *p;
  body_pose(d, b, &R, &p);
  khzu_mat2quat(q, R);
}

/* the weld's orientation error as a world rotation vector: E = R1 (R2 Q)^T */
static void weld_error(const khzModel *m, const khzData *d, int i, double e[3]) {
  double q1[4], q2[4], qt[4], qe[4];
  body_quat(d, m->eq_body[2 * i], q1);
  body_quat(d, m->eq_body[2 * i + 1], q2);
  khzu_mulQuat(qt, q2, m->eq_quat + 4 * i);
  double qtc[4] = {qt[0], -qt[1], -qt[2], -qt[3]};
  khzu_mulQuat(qe, q1, qtc);
  double s = qe[0] < 0 ? -1 : 1, vn = sqrt(qe[1] * qe[1] + qe[2] * qe[2] + qe[3] * qe[3]);
  double angle = 2 * atan2(vn, fabs(qe[0]));
  double f = vn > 1e-300 ? s * angle / vn : 2 * s;
  e[0] = f * qe[1], e[1] = f * qe[2], e[2] = f * qe[3];
}

int khz_constraintCompile(khzModel *m, const khzEqualitySpec *eq, char *err, size_t errsz) {
  if (m->neq == 0) return 0;
  int need_pose = 0;
  for (int i = 0; i < m->neq; i++) {
    const khzEqualitySpec *e = &eq[i];
    m->eq_type[i] = e->type;
    m->eq_body[2 * i] = e->body1, m->eq_body[2 * i + 1] = e->body2;
    memcpy(m->eq_pos + 6 * i, e->pos1, 3 * sizeof(double));
    memcpy(m->eq_pos + 6 * i + 3, e->pos2, 3 * sizeof(double));
    double q[4] = {e->quat[0], e->quat[1], e->quat[2], e->quat[3]};
    khzu_normalizeQuat(q);
    memcpy(m->eq_quat + 4 * i, q, sizeof q);
    memcpy(m->eq_poly + 5 * i, e->polycoef, 5 * sizeof(double));
    snprintf(m->eq_name[i], KHZ_NAME_MAX, "%s", e->name);
    if (e->type == KHZ_EQ_JOINT) {
      int ok = scalar_joint(m, e->body1) && (e->body2 == 0 || scalar_joint(m, e->body2));
      if (!ok) {
        if (err && errsz)
          snprintf(err, errsz, "equality constraint %d '%s': joint constraints couple hinges and "
                   "slides only (body '%s'%s%s)", i, e->name, m->body_name[e->body1],
                   e->body2 ? ", body '" : "", e->body2 ? m->body_name[e->body2] : "");
        return -1;
      }
      if (e->at_q0) {
        m->eq_pos[6 * i] = m->q0[m->jnt_qadr[e->body1]];
        m->eq_pos[6 * i + 3] = e->body2 ? m->q0[m->jnt_qadr[e->body2]] : 0;
      }
      continue;
    }
    need_pose |= e->at_q0;
  }
  if (!need_pose) return 0;

  /* body2's point and the relative orientation as they are at q0 */
  khzData *d = khz_makeData(m, 0);
  if (!d) {
    if (err && errsz) snprintf(err, errsz, "out of memory");
    return -1;
  }
  khz_kinematics(m, d);
  for (int i = 0; i < m->neq; i++) {
    if (!eq[i].at_q0 || m->eq_type[i] == KHZ_EQ_JOINT) continue;
    int b1 = m->eq_body[2 * i], b2 = m->eq_body[2 * i + 1];
    const double *R2, *p2;
    body_pose(d, b2, &R2, &p2);
    double x[3], rel[3];
    world_point(d, b1, m->eq_pos + 6 * i, x);
    khzu_sub3(rel, x, p2);
    khzu_mulMatTVec3(m->eq_pos + 6 * i + 3, R2, rel);
    /* Q = q2^-1 q1 */
    double q1[4], q2[4];
    body_quat(d, b1, q1);
    body_quat(d, b2, q2);
    double q2c[4] = {q2[0], -q2[1], -q2[2], -q2[3]};
    khzu_mulQuat(m->eq_quat + 4 * i, q2c, q1);
    khzu_normalizeQuat(m->eq_quat + 4 * i);
  }
  khz_deleteData(&d);
  return 0;
}

/* a joint constraint's error q1 - r1 - p(q2 - r2), rate and the part of its
 * second derivative that does not come from qdd: -p'' qd2^2 */
static double joint_error(const khzModel *m, const double *q, const double *qd, int i,
                          double *rate, double *bias, double *dp) {
  int b1 = m->eq_body[2 * i], b2 = m->eq_body[2 * i + 1];
  double x = b2 ? q[m->jnt_qadr[b2]] - m->eq_pos[6 * i + 3] : 0, p, ddp;
  joint_poly(m, i, x, &p, dp, &ddp);
  if (!b2) *dp = 0, ddp = 0;
  double v2 = b2 ? qd[m->jnt_dofadr[b2]] : 0;
  if (rate) *rate = qd[m->jnt_dofadr[b1]] - *dp * v2;
  if (bias) *bias = -ddp * v2 * v2;
  return q[m->jnt_qadr[b1]] - m->eq_pos[6 * i] - p;
}

double khz_equalityResidual(const khzModel *m, const khzData *d, int i, double *rot) {
  if (rot) *rot = 0;
  if (m->eq_type[i] == KHZ_EQ_JOINT) {
    double dp;
    return fabs(joint_error(m, d->q, d->qd, i, NULL, NULL, &dp));
  }
  double x1[3], x2[3], r[3];
  world_point(d, m->eq_body[2 * i], m->eq_pos + 6 * i, x1);
  world_point(d, m->eq_body[2 * i + 1], m->eq_pos + 6 * i + 3, x2);
  khzu_sub3(r, x1, x2);
  if (rot) {
    if (m->eq_type[i] == KHZ_EQ_WELD) {
      double e[3];
      weld_error(m, d, i, e);
      *rot = khzu_norm3(e);
    }
  }
  return khzu_norm3(r);
}

/* velocity (v) and acceleration (a, gravity's fictitious base acceleration
 * removed) of the material point x of body b, and b's angular velocity and
 * acceleration; all zero for the world. From the spatial velocity and
 * acceleration at the tree origin o: v = v_o + w x r, a = a_o + alpha x r + w x v */
static void point_motion(const khzModel *m, const khzData *d, int b, const double x[3],
                         double v[3], double a[3], double w[3], double alpha[3]) {
  memset(v, 0, 3 * sizeof(double)), memset(a, 0, 3 * sizeof(double));
  memset(w, 0, 3 * sizeof(double)), memset(alpha, 0, 3 * sizeof(double));
  if (b <= 0) return;
  const double *vt = d->vtree + 6 * b, *at = d->acc + 6 * b, *o = d->xpos + 3 * m->body_root[b];
  double r[3], t[3];
  khzu_sub3(r, x, o);
  khzu_cross(t, vt, r);
  khzu_add3(v, vt + 3, t);
  khzu_cross(t, at, r);
  khzu_add3(a, at + 3, t);
  khzu_cross(t, vt, v);
  khzu_add3(a, a, t);
  khzu_add3(a, a, m->gravity);
  khzu_copy3(w, vt);
  khzu_copy3(alpha, at);
}

/* body velocity changes dv (6 per body, at the tree origins) of the joint
 * velocity change dqd: dv = dv_parent + S dqd */
static void body_changes(const khzModel *m, const khzData *d, const double *dqd, double *dv) {
  memset(dv, 0, 6 * sizeof(double));
  for (int i = 1; i < m->nbody; i++) {
    int p = m->body_parent[i], nv = m->jnt_nv[i], dof = m->jnt_dofadr[i];
    double *v = dv + 6 * i;
    if (p > 0) memcpy(v, dv + 6 * p, 6 * sizeof(double));
    else memset(v, 0, 6 * sizeof(double));
    const double *S = d->S + 36 * i;
    for (int k = 0; k < nv; k++)
      for (int a = 0; a < 6; a++) v[a] += S[6 * k + a] * dqd[dof + k];
  }
}

/* the rows of constraint i under the body velocity changes dv: the change of
 * x1's velocity minus x2's (and of w1 minus w2 for a weld) */
static void rows_change(const khzModel *m, const khzData *d, int i, const double *dv,
                        const double *dq, const double *jd, const double x1[3],
                        const double x2[3], double *out) {
  int b[2] = {m->eq_body[2 * i], m->eq_body[2 * i + 1]};
  if (m->eq_type[i] == KHZ_EQ_JOINT) {
    /* d(q1 - p(q2)) = dq1 - p' dq2 */
    out[0] = dq[m->jnt_dofadr[b[0]]] - (b[1] ? jd[i] * dq[m->jnt_dofadr[b[1]]] : 0);
    return;
  }
  const double *x[2] = {x1, x2};
  memset(out, 0, (size_t)rows_of(m, i) * sizeof(double));
  for (int s = 0; s < 2; s++) {
    if (b[s] <= 0) continue;
    double pv[3], sign = s ? -1 : 1;
    khz_pointVelocityChange(m, d, b[s], x[s], dv, pv);
    for (int k = 0; k < 3; k++) out[k] += sign * pv[k];
    if (m->eq_type[i] == KHZ_EQ_WELD)
      for (int k = 0; k < 3; k++) out[3 + k] += sign * dv[6 * b[s] + k];
  }
}

/* the anchors in the world (pts, 6 per constraint) and each joint
 * constraint's p' (jd) at the forward pass of q */
static void anchors(const khzModel *m, const khzData *d, const double *q, const double *qd,
                    double *pts, double *jd) {
  for (int i = 0; i < m->neq; i++) {
    if (m->eq_type[i] == KHZ_EQ_JOINT) {
      joint_error(m, q, qd, i, NULL, NULL, jd + i);
      continue;
    }
    world_point(d, m->eq_body[2 * i], m->eq_pos + 6 * i, pts + 6 * i);
    world_point(d, m->eq_body[2 * i + 1], m->eq_pos + 6 * i + 3, pts + 6 * i + 3);
  }
}

/* K = J M^-1 J^T column by column: a unit test impulse on each row through
 * the articulated impulse response (the articulated inertias of the last
 * ABA), read back on every row; resp holds each column's dqd */
static void response_matrix(const khzModel *m, khzData *d, const double *pts, const double *jd,
                            int R, double *K, double *resp, double *dvel, double *dv) {
  int nv = m->nv;
  for (int i = 0, c = 0; i < m->neq; i++) {
    int b1 = m->eq_body[2 * i], b2 = m->eq_body[2 * i + 1];
    for (int k = 0; k < rows_of(m, i); k++, c++) {
      double *dq = resp + (size_t)c * (size_t)nv;
      memset(dq, 0, (size_t)nv * sizeof(double));
      if (m->eq_type[i] == KHZ_EQ_JOINT) {
        /* unit joint impulses: +1 on joint 1, -p' on joint 2; a joint's
         * impulse is a couple along a hinge's axis (a force along a slide's)
         * on its body and the opposite on its parent */
        for (int s = 0; s < 2; s++) {
          int b = s ? b2 : b1;
          if (b <= 0) continue;
          double w = s ? -jd[i] : 1, f[6] = {0};
          const double *S = d->S + 36 * b;
          int slide = m->jnt_type[b] == KHZ_JOINT_PRISMATIC;
          for (int a = 0; a < 3; a++) f[slide ? 3 + a : a] = w * S[slide ? 3 + a : a];
          khz_impulseResponse(m, d, b, f, dq, dvel);
          if (m->body_parent[b] > 0) {
            for (int a = 0; a < 6; a++) f[a] = -f[a];
            khz_impulseResponse(m, d, m->body_parent[b], f, dq, dvel);
          }
        }
      }
      for (int s = 0; s < 2 && m->eq_type[i] != KHZ_EQ_JOINT; s++) {
        int b = s ? b2 : b1;
        if (b <= 0) continue;
        double f[6] = {0}, sign = s ? -1 : 1;
        if (k < 3) {
          double J[3] = {0, 0, 0};
          J[k] = sign;
          khz_spatialImpulse(m, d, b, pts + 6 * i + 3 * s, J, f);
        } else {
          f[k - 3] = sign; /* a couple: the same about any point */
        }
        khz_impulseResponse(m, d, b, f, dq, dvel);
      }
      body_changes(m, d, dq, dv);
      for (int j = 0, r0 = 0; j < m->neq; r0 += rows_of(m, j), j++) {
        double out[6];
        rows_change(m, d, j, dv, dq, jd, pts + 6 * j, pts + 6 * j + 3, out);
        for (int r = 0; r < rows_of(m, j); r++) K[(r0 + r) * R + c] = out[r];
      }
    }
  }
}

/* solves (K + eps I) lambda = rhs, K symmetrised, and adds resp^T lambda to
 * out (nv); nothing when no row can move */
static void solve_apply(int R, int nv, double *K, double *rhs, const double *resp, double *out) {
  double dmax = 0;
  for (int a = 0; a < R; a++) {
    for (int b = a + 1; b < R; b++) K[a * R + b] = K[b * R + a] = 0.5 * (K[a * R + b] + K[b * R + a]);
    dmax = fmax(dmax, K[a * R + a]);
  }
  for (int a = 0; a < R; a++) K[a * R + a] += 1e-10 * dmax + 1e-300;
  /* dmax = 0: no row can move (both sides static or welded): nothing to
   * solve, and lambda = rhs / 1e-300 times a zero response would be NaN */
  if (dmax > 0 && khzu_cholFactor(K, R) == 0) {
    khzu_cholSolve(K, R, rhs);
    for (int c = 0; c < R; c++) {
      const double *dq = resp + (size_t)c * (size_t)nv;
      for (int k = 0; k < nv; k++) out[k] += rhs[c] * dq[k];
    }
  }
}

void khz_constraintAccel(const khzModel *m, khzData *d, const double *q, const double *qd,
                         double *qdd) {
  if (m->neq == 0) return;
  int R = total_rows(m), nv = m->nv;
  size_t mark = khz_stackMark(d);
  double *K = khz_stackAlloc(d, (size_t)R * (size_t)R * sizeof(double));
  double *resp = khz_stackAlloc(d, (size_t)R * (size_t)nv * sizeof(double));
  double *rhs = khz_stackAlloc(d, (size_t)R * sizeof(double));
  double *pts = khz_stackAlloc(d, 6 * (size_t)m->neq * sizeof(double));
  double *dvel = khz_stackAlloc(d, 6 * (size_t)m->nbody * sizeof(double));
  double *dv = khz_stackAlloc(d, 6 * (size_t)m->nbody * sizeof(double));
  double *jd = khz_stackAlloc(d, (size_t)m->neq * sizeof(double)); /* joint: p' */
  if (!K || !resp || !rhs || !pts || !dvel || !dv || !jd) {
    khz_stackFree(d, mark);
    return; /* counted as KHZ_WARN_STACK */
  }
  /* Baumgarte's gains: kd = 2 zeta w, kp = w^2. RK4: w = 0.25 / h, zeta = 1.
   * Semi-implicit Euler: kd = 1 / h, kp = 0.2 / h^2, with which the step's own
   * update v+ = v + h a*, r+ = r + h v+ takes r+ = 0.8 r and v+ = -0.2 r / h:
   * the error of a step is gone geometrically instead of drifting */
  double h = d->timestep > 0 ? d->timestep : m->timestep;
  double kd = 0.5 / h, kp = 0.0625 / (h * h);
  if (m->integrator == KHZ_INT_EULER) kd = 1 / h, kp = 0.2 / (h * h);

  /* the anchors in the world and each row's Baumgarte target */
  anchors(m, d, q, qd, pts, jd);
  for (int i = 0, r0 = 0; i < m->neq; r0 += rows_of(m, i), i++) {
    int b1 = m->eq_body[2 * i], b2 = m->eq_body[2 * i + 1];
    const double *x1 = pts + 6 * i, *x2 = pts + 6 * i + 3;
    if (m->eq_type[i] == KHZ_EQ_JOINT) {
      /* r'' = qdd1 - p' qdd2 - p'' qd2^2 */
      double rate, bias, dp, e = joint_error(m, q, qd, i, &rate, &bias, &dp);
      double acc = qdd[m->jnt_dofadr[b1]] - (b2 ? dp * qdd[m->jnt_dofadr[b2]] : 0) + bias;
      rhs[r0] = -(acc + kd * rate + kp * e);
      continue;
    }
    double v1[3], a1[3], w1[3], al1[3], v2[3], a2[3], w2[3], al2[3];
    point_motion(m, d, b1, x1, v1, a1, w1, al1);
    point_motion(m, d, b2, x2, v2, a2, w2, al2);
    for (int k = 0; k < 3; k++)
      rhs[r0 + k] = -((a1[k] - a2[k]) + kd * (v1[k] - v2[k]) + kp * (x1[k] - x2[k]));
    if (m->eq_type[i] == KHZ_EQ_WELD) {
      double e[3];
      weld_error(m, d, i, e);
      for (int k = 0; k < 3; k++)
        rhs[r0 + 3 + k] = -((al1[k] - al2[k]) + kd * (w1[k] - w2[k]) + kp * e[k]);
    }
  }
  response_matrix(m, d, pts, jd, R, K, resp, dvel, dv);
  solve_apply(R, nv, K, rhs, resp, qdd);
  khz_stackFree(d, mark);
}

/* Semi-implicit Euler's straight-line position update leaves a curved
 * constraint by O(h^2) each step, and Baumgarte's terms only pull it back
 * over later steps (a four-bar at 1 ms drifted 3.7e-5 m). After the step,
 * one Gauss-Newton projection onto the constraint manifold in the mass
 * metric: with J and M^-1 at the new q (a forward pass and ABA's articulated
 * inertias there), (J M^-1 J^T) lambda = -r, q <- q (+) M^-1 J^T lambda
 * (quaternions integrated). The velocities are left as they are. */
void khz_constraintProject(const khzModel *m, khzData *d) {
  if (m->neq == 0) return;
  int R = total_rows(m), nv = m->nv;
  size_t mark = khz_stackMark(d);
  double *K = khz_stackAlloc(d, (size_t)R * (size_t)R * sizeof(double));
  double *resp = khz_stackAlloc(d, (size_t)R * (size_t)nv * sizeof(double));
  double *rhs = khz_stackAlloc(d, (size_t)R * sizeof(double));
  double *pts = khz_stackAlloc(d, 6 * (size_t)m->neq * sizeof(double));
  double *dvel = khz_stackAlloc(d, 6 * (size_t)m->nbody * sizeof(double));
  double *dv = khz_stackAlloc(d, 6 * (size_t)m->nbody * sizeof(double));
  double *jd = khz_stackAlloc(d, (size_t)m->neq * sizeof(double));
  double *tmp = khz_stackAlloc(d, 2 * (size_t)nv * sizeof(double));
  double *dq = khz_stackAlloc(d, (size_t)nv * sizeof(double));
  if (!K || !resp || !rhs || !pts || !dvel || !dv || !jd || !tmp || !dq) {
    khz_stackFree(d, mark);
    return; /* counted as KHZ_WARN_STACK */
  }
  /* J and the articulated inertias at the new q (ABA's accelerations unused) */
  khz_forwardPass(m, d, d->q, d->qd);
  memset(tmp, 0, (size_t)nv * sizeof(double));
  khz_abaCoreDamped(m, d, tmp, tmp + nv, d->timestep, 0);
  anchors(m, d, d->q, d->qd, pts, jd);
  for (int i = 0, r0 = 0; i < m->neq; r0 += rows_of(m, i), i++) {
    if (m->eq_type[i] == KHZ_EQ_JOINT) {
      double dp;
      rhs[r0] = -joint_error(m, d->q, d->qd, i, NULL, NULL, &dp);
      continue;
    }
    for (int k = 0; k < 3; k++) rhs[r0 + k] = -(pts[6 * i + k] - pts[6 * i + 3 + k]);
    if (m->eq_type[i] == KHZ_EQ_WELD) {
      double e[3];
      weld_error(m, d, i, e);
      for (int k = 0; k < 3; k++) rhs[r0 + 3 + k] = -e[k];
    }
  }
  response_matrix(m, d, pts, jd, R, K, resp, dvel, dv);
  memset(dq, 0, (size_t)nv * sizeof(double));
  solve_apply(R, nv, K, rhs, resp, dq);
  khz_integratePos(m, d->q, d->q, dq, 1.0);
  khz_stackFree(d, mark);
}
