/* dynamics.c — articulated-body dynamics in body coordinates, after Featherstone,
 * Rigid Body Dynamics Algorithms (RBDA, 2008):
 *   joint models          RBDA Table 4.1 (revolute, prismatic, spherical, free)
 *   forward kinematics    RBDA eq. 4.x / the first pass of Table 5.1
 *   ABA                   RBDA Table 7.1 (articulated-body algorithm, O(n))
 *   RNEA                  RBDA Table 5.1 (recursive Newton-Euler)
 *   CRBA                  RBDA Table 6.2 (composite-rigid-body algorithm)
 * Armature (reflected rotor inertia) is added to D_i in ABA and to M's diagonal
 * (RBDA §9.6). The floating joint uses MuJoCo's free-joint coordinates (see
 * khz.h), so its motion subspace in body coordinates depends on q:
 *   S = [0 I; R^T 0] for qd = [v_parent; w_body], with S' qd = [0; -w x R^T v].
 */
#include <math.h>
#include <string.h>

#include "khz/khz.h"
#include "spatial.h"

/* ----------------------------------------------------- joint kinematics -- */

/* Pose of body i in its parent (R_rel, p_rel), its motion subspace S (6 x nv,
 * column-major: column k at S + 6k) and, given qd, vJ = S qd and cJ = S' qd. */
static void joint_model(const khzModel *m, int i, const double *q, const double *qd,
                        double R_rel[9], double p_rel[3], double *S, double vJ[6], double cJ[6]) {
  const double *Ro = m->body_rot + 9 * i, *po = m->body_pos + 3 * i, *axis = m->jnt_axis + 3 * i;
  const double *qi = q + m->jnt_qadr[i];
  const double *vi = qd ? qd + m->jnt_dofadr[i] : NULL;
  double RJ[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, pJ[3] = {0, 0, 0};
  int nv = m->jnt_nv[i];
  memset(cJ, 0, 6 * sizeof(double));
  if (nv) memset(S, 0, 6 * (size_t)nv * sizeof(double));

  switch (m->jnt_type[i]) {
    case KHZ_JOINT_REVOLUTE:
    case KHZ_JOINT_CONTINUOUS: {
      double quat[4];
      khzu_axisAngle2Quat(quat, axis, qi[0]);
      khzu_quat2mat(RJ, quat);
      S[0] = axis[0], S[1] = axis[1], S[2] = axis[2];
      break;
    }
    case KHZ_JOINT_PRISMATIC:
      pJ[0] = axis[0] * qi[0], pJ[1] = axis[1] * qi[0], pJ[2] = axis[2] * qi[0];
      S[3] = axis[0], S[4] = axis[1], S[5] = axis[2];
      break;
    case KHZ_JOINT_SPHERICAL:
      khzu_quat2matScaled(RJ, qi);
      S[0] = 1, S[6 + 1] = 1, S[12 + 2] = 1;
      break;
    case KHZ_JOINT_FLOATING:
      khzu_quat2matScaled(RJ, qi + 3);
      pJ[0] = qi[0], pJ[1] = qi[1], pJ[2] = qi[2];
      /* linear dofs: world-aligned velocity seen in body axes, R^T e_k */
      for (int k = 0; k < 3; k++) {
        S[6 * k + 3] = RJ[3 * k + 0];
        S[6 * k + 4] = RJ[3 * k + 1];
        S[6 * k + 5] = RJ[3 * k + 2];
        S[6 * (3 + k) + k] = 1;
      }
      if (vi) {
        double vb[3], wxv[3];
        khzu_mulMatTVec3(vb, RJ, vi);
        khzu_cross(wxv, vi + 3, vb);
        cJ[3] = -wxv[0], cJ[4] = -wxv[1], cJ[5] = -wxv[2];
      }
      break;
    default:
      break;
  }

  /* compose with the joint origin: R_rel = Ro RJ, p_rel = po + Ro pJ */
  khzu_mulMat3(R_rel, Ro, RJ);
  khzu_mulMatVec3(p_rel, Ro, pJ);
  p_rel[0] += po[0], p_rel[1] += po[1], p_rel[2] += po[2];

  /* vJ = S qd */
  memset(vJ, 0, 6 * sizeof(double));
  if (vi)
    for (int k = 0; k < nv; k++)
      for (int r = 0; r < 6; r++) vJ[r] += S[6 * k + r] * vi[k];
}

/* First pass shared by every algorithm: transforms Xup, subspaces S, body
 * velocities cvel, bias accelerations cbias = cJ + v x vJ, world poses. */
static void forward_pass(const khzModel *m, khzData *d, const double *q, const double *qd) {
  d->xpos[0] = d->xpos[1] = d->xpos[2] = 0;
  static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  memcpy(d->xrot, I3, sizeof I3);
  memset(d->cvel, 0, 6 * sizeof(double));
  memset(d->xcom, 0, 3 * sizeof(double));
  for (int i = 1; i < m->nbody; i++) {
    int p = m->body_parent[i];
    double R[9], r[3], cJ[6];
    double *X = d->Xup + 12 * i, *S = d->S + 36 * i, *vJ = d->vJ + 6 * i;
    joint_model(m, i, q, qd, R, r, S, vJ, cJ);

    /* Xup = (E = R^T, r) */
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++) X[3 * a + b] = R[3 * b + a];
    X[9] = r[0], X[10] = r[1], X[11] = r[2];

    /* world pose */
    const double *Rp = d->xrot + 9 * p, *pp = d->xpos + 3 * p;
    double *Rw = d->xrot + 9 * i, *pw = d->xpos + 3 * i, t[3];
    khzu_mulMat3(Rw, Rp, R);
    khzu_mulMatVec3(t, Rp, r);
    pw[0] = pp[0] + t[0], pw[1] = pp[1] + t[1], pw[2] = pp[2] + t[2];
    khzu_mulMatVec3(t, Rw, m->body_com + 3 * i);
    d->xcom[3 * i] = pw[0] + t[0], d->xcom[3 * i + 1] = pw[1] + t[1],
    d->xcom[3 * i + 2] = pw[2] + t[2];

    /* velocity and bias acceleration (RBDA Table 7.1, first loop) */
    double *v = d->cvel + 6 * i, *c = d->cbias + 6 * i;
    if (qd) {
      khzu_xformMotion(v, X, d->cvel + 6 * p);
      for (int k = 0; k < 6; k++) v[k] += vJ[k];
      khzu_crossMotion(c, v, vJ);
      for (int k = 0; k < 6; k++) c[k] += cJ[k];
    } else {
      memset(v, 0, 6 * sizeof(double));
      memset(c, 0, 6 * sizeof(double));
    }
  }
}

void khz_kinematics(const khzModel *m, khzData *d) { forward_pass(m, d, d->q, d->qd); }

/* external wrenches: world force/torque at the com -> body-coordinate spatial force */
static void external_forces(const khzModel *m, khzData *d) {
  for (int i = 1; i < m->nbody; i++) {
    const double *w = d->xfrc + 6 * i;
    double *f = d->fext + 6 * i;
    if (w[0] == 0 && w[1] == 0 && w[2] == 0 && w[3] == 0 && w[4] == 0 && w[5] == 0) {
      memset(f, 0, 6 * sizeof(double));
      continue;
    }
    const double *R = d->xrot + 9 * i, *xp = d->xpos + 3 * i, *xc = d->xcom + 3 * i;
    double arm[3] = {xc[0] - xp[0], xc[1] - xp[1], xc[2] - xp[2]}, n[3];
    khzu_cross(n, arm, w);
    n[0] += w[3], n[1] += w[4], n[2] += w[5];
    khzu_mulMatTVec3(f, R, n);
    khzu_mulMatTVec3(f + 3, R, w);
  }
}

/* ------------------------------------------------------------------ ABA -- */

void khz_aba(const khzModel *m, khzData *d, const double *q, const double *qd,
             const double *tau, double *qdd) {
  forward_pass(m, d, q, qd);
  external_forces(m, d);

  /* initialise articulated inertias and bias forces: pA = v x* I v - f_ext */
  for (int i = 1; i < m->nbody; i++) {
    double *IA = d->IA + 36 * i, *pA = d->pA + 6 * i, Iv[6];
    const double *v = d->cvel + 6 * i;
    memcpy(IA, m->body_spatial + 36 * i, 36 * sizeof(double));
    khzu_mulMatVec6(Iv, IA, v);
    khzu_crossForce(pA, v, Iv);
    for (int k = 0; k < 6; k++) pA[k] -= d->fext[6 * i + k];
  }

  /* backward pass: U = IA S, D = S^T U + armature, u = tau - S^T pA; push the
   * articulated inertia Ia = IA - U D^-1 U^T and bias pa to the parent */
  for (int i = m->nbody - 1; i >= 1; i--) {
    int nv = m->jnt_nv[i], dof = m->jnt_dofadr[i], p = m->body_parent[i];
    double *IA = d->IA + 36 * i, *pA = d->pA + 6 * i, *S = d->S + 36 * i;
    double *U = d->U + 36 * i, *Dinv = d->Dinv + 36 * i, *u = d->u + 6 * i;
    const double *c = d->cbias + 6 * i;
    double Ia[36], pa[6], t[6];

    memcpy(Ia, IA, sizeof Ia);
    if (nv == 1) {
      khzu_mulMatVec6(U, IA, S);
      double Dv = khzu_dot6(S, U) + m->dof_armature[dof];
      Dinv[0] = 1 / Dv;
      u[0] = tau[dof] - khzu_dot6(S, pA);
      for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++) Ia[6 * a + b] -= U[a] * U[b] * Dinv[0];
    } else if (nv > 1) {
      double Dm[36];
      for (int k = 0; k < nv; k++) khzu_mulMatVec6(U + 6 * k, IA, S + 6 * k);
      for (int a = 0; a < nv; a++) {
        for (int b = 0; b < nv; b++) Dm[nv * a + b] = khzu_dot6(S + 6 * a, U + 6 * b);
        Dm[nv * a + a] += m->dof_armature[dof + a];
        u[a] = tau[dof + a] - khzu_dot6(S + 6 * a, pA);
      }
      /* Dinv by Cholesky, column by column */
      khzu_cholFactor(Dm, nv);
      for (int b = 0; b < nv; b++) {
        double e[6] = {0};
        e[b] = 1;
        khzu_cholSolve(Dm, nv, e);
        for (int a = 0; a < nv; a++) Dinv[nv * a + b] = e[a];
      }
      /* Ia -= U Dinv U^T */
      double UD[36];
      for (int r = 0; r < 6; r++)
        for (int b = 0; b < nv; b++) {
          double s = 0;
          for (int a = 0; a < nv; a++) s += U[6 * a + r] * Dinv[nv * a + b];
          UD[6 * b + r] = s;
        }
      for (int r = 0; r < 6; r++)
        for (int cc = 0; cc < 6; cc++) {
          double s = 0;
          for (int b = 0; b < nv; b++) s += UD[6 * b + r] * U[6 * b + cc];
          Ia[6 * r + cc] -= s;
        }
    }
    if (p == 0) continue;

    /* pa = pA + Ia c + U Dinv u */
    khzu_mulMatVec6(t, Ia, c);
    for (int k = 0; k < 6; k++) pa[k] = pA[k] + t[k];
    if (nv) {
      double Du[6] = {0};
      for (int a = 0; a < nv; a++)
        for (int b = 0; b < nv; b++) Du[a] += Dinv[nv * a + b] * u[b];
      for (int a = 0; a < nv; a++)
        for (int k = 0; k < 6; k++) pa[k] += U[6 * a + k] * Du[a];
    }
    double IaP[36], paP[6];
    const double *X = d->Xup + 12 * i;
    khzu_xformInertiaT(IaP, X, Ia);
    khzu_xformForceT(paP, X, pa);
    double *IAp = d->IA + 36 * p, *pAp = d->pA + 6 * p;
    for (int k = 0; k < 36; k++) IAp[k] += IaP[k];
    for (int k = 0; k < 6; k++) pAp[k] += paP[k];
  }

  /* forward pass: a' = X a_parent + c, qdd = Dinv (u - U^T a'), a = a' + S qdd */
  double *a0 = d->acc;
  a0[0] = a0[1] = a0[2] = 0;
  a0[3] = -m->gravity[0], a0[4] = -m->gravity[1], a0[5] = -m->gravity[2];
  for (int i = 1; i < m->nbody; i++) {
    int nv = m->jnt_nv[i], dof = m->jnt_dofadr[i], p = m->body_parent[i];
    double *a = d->acc + 6 * i;
    khzu_xformMotion(a, d->Xup + 12 * i, d->acc + 6 * p);
    for (int k = 0; k < 6; k++) a[k] += d->cbias[6 * i + k];
    if (!nv) continue;
    const double *U = d->U + 36 * i, *Dinv = d->Dinv + 36 * i, *u = d->u + 6 * i,
                 *S = d->S + 36 * i;
    double r[6];
    for (int k = 0; k < nv; k++) r[k] = u[k] - khzu_dot6(U + 6 * k, a);
    for (int k = 0; k < nv; k++) {
      double s = 0;
      for (int b = 0; b < nv; b++) s += Dinv[nv * k + b] * r[b];
      qdd[dof + k] = s;
    }
    for (int k = 0; k < nv; k++)
      for (int r6 = 0; r6 < 6; r6++) a[r6] += S[6 * k + r6] * qdd[dof + k];
  }
}

/* ----------------------------------------------------------------- RNEA -- */

void khz_rnea(const khzModel *m, khzData *d, const double *q, const double *qd,
              const double *qdd, double *tau) {
  forward_pass(m, d, q, qd);
  external_forces(m, d);
  double *a0 = d->acc;
  a0[0] = a0[1] = a0[2] = 0;
  a0[3] = -m->gravity[0], a0[4] = -m->gravity[1], a0[5] = -m->gravity[2];

  /* forward: a = X a_parent + S qdd + c;  f = I a + v x* I v - f_ext (pA holds f) */
  for (int i = 1; i < m->nbody; i++) {
    int nv = m->jnt_nv[i], dof = m->jnt_dofadr[i], p = m->body_parent[i];
    double *a = d->acc + 6 * i, *f = d->pA + 6 * i, Iv[6], Ia[6], vxIv[6];
    const double *S = d->S + 36 * i, *v = d->cvel + 6 * i, *I = m->body_spatial + 36 * i;
    khzu_xformMotion(a, d->Xup + 12 * i, d->acc + 6 * p);
    for (int k = 0; k < 6; k++) a[k] += d->cbias[6 * i + k];
    for (int k = 0; k < nv; k++)
      for (int r = 0; r < 6; r++) a[r] += S[6 * k + r] * qdd[dof + k];
    khzu_mulMatVec6(Ia, I, a);
    khzu_mulMatVec6(Iv, I, v);
    khzu_crossForce(vxIv, v, Iv);
    for (int k = 0; k < 6; k++) f[k] = Ia[k] + vxIv[k] - d->fext[6 * i + k];
  }

  /* backward: tau = S^T f + armature qdd; f_parent += X^T f */
  for (int i = m->nbody - 1; i >= 1; i--) {
    int nv = m->jnt_nv[i], dof = m->jnt_dofadr[i], p = m->body_parent[i];
    const double *f = d->pA + 6 * i, *S = d->S + 36 * i;
    for (int k = 0; k < nv; k++)
      tau[dof + k] = khzu_dot6(S + 6 * k, f) + m->dof_armature[dof + k] * qdd[dof + k];
    if (p) {
      double fp[6];
      khzu_xformForceT(fp, d->Xup + 12 * i, f);
      for (int k = 0; k < 6; k++) d->pA[6 * p + k] += fp[k];
    }
  }
}

/* ----------------------------------------------------------------- CRBA -- */

void khz_crba(const khzModel *m, khzData *d, const double *q, double *M) {
  forward_pass(m, d, q, NULL);
  int nv = m->nv;
  memset(M, 0, (size_t)nv * (size_t)nv * sizeof(double));

  /* composite inertias, leaves to root (IA holds Ic) */
  for (int i = 1; i < m->nbody; i++)
    memcpy(d->IA + 36 * i, m->body_spatial + 36 * i, 36 * sizeof(double));
  for (int i = m->nbody - 1; i >= 1; i--) {
    int p = m->body_parent[i];
    if (!p) continue;
    double T[36];
    khzu_xformInertiaT(T, d->Xup + 12 * i, d->IA + 36 * i);
    for (int k = 0; k < 36; k++) d->IA[36 * p + k] += T[k];
  }

  /* M_ij = S_j^T X... F with F = Ic_i S_i carried up the tree */
  for (int i = 1; i < m->nbody; i++) {
    int ni = m->jnt_nv[i], di = m->jnt_dofadr[i];
    if (!ni) continue;
    double F[36];
    const double *S = d->S + 36 * i;
    for (int k = 0; k < ni; k++) khzu_mulMatVec6(F + 6 * k, d->IA + 36 * i, S + 6 * k);
    for (int a = 0; a < ni; a++) {
      for (int b = a; b < ni; b++)
        M[(di + a) * nv + di + b] = M[(di + b) * nv + di + a] = khzu_dot6(S + 6 * a, F + 6 * b);
      M[(di + a) * nv + di + a] += m->dof_armature[di + a];
    }
    int j = i;
    while (m->body_parent[j] != 0) {
      for (int k = 0; k < ni; k++) {
        double t[6];
        khzu_xformForceT(t, d->Xup + 12 * j, F + 6 * k);
        memcpy(F + 6 * k, t, sizeof t);
      }
      j = m->body_parent[j];
      int nj = m->jnt_nv[j], dj = m->jnt_dofadr[j];
      const double *Sj = d->S + 36 * j;
      for (int a = 0; a < ni; a++)
        for (int b = 0; b < nj; b++) {
          double v = khzu_dot6(F + 6 * a, Sj + 6 * b);
          M[(di + a) * nv + dj + b] = v;
          M[(dj + b) * nv + di + a] = v;
        }
    }
  }
}

/* ------------------------------------------------------------- Jacobian -- */

void khz_jacobian(const khzModel *m, const khzData *d, int body, const double p[3],
                  double *jacp, double *jacr) {
  int nv = m->nv;
  if (jacp) memset(jacp, 0, 3 * (size_t)nv * sizeof(double));
  if (jacr) memset(jacr, 0, 3 * (size_t)nv * sizeof(double));
  /* each ancestor joint's subspace column, mapped to world axes at the point */
  for (int j = body; j > 0; j = m->body_parent[j]) {
    const double *R = d->xrot + 9 * j, *xp = d->xpos + 3 * j, *S = d->S + 36 * j;
    double arm[3] = {p[0] - xp[0], p[1] - xp[1], p[2] - xp[2]};
    for (int k = 0; k < m->jnt_nv[j]; k++) {
      int col = m->jnt_dofadr[j] + k;
      double w[3], v[3], wxr[3];
      khzu_mulMatVec3(w, R, S + 6 * k);
      khzu_mulMatVec3(v, R, S + 6 * k + 3);
      khzu_cross(wxr, w, arm);
      for (int r = 0; r < 3; r++) {
        if (jacp) jacp[r * nv + col] = v[r] + wxr[r];
        if (jacr) jacr[r * nv + col] = w[r];
      }
    }
  }
}

/* --------------------------------------------------------------- energy -- */

void khz_energy(const khzModel *m, khzData *d, double *kinetic, double *potential) {
  khz_kinematics(m, d);
  double ke = 0, pe = 0;
  for (int i = 1; i < m->nbody; i++) {
    double Iv[6];
    const double *v = d->cvel + 6 * i;
    khzu_mulMatVec6(Iv, m->body_spatial + 36 * i, v);
    ke += 0.5 * khzu_dot6(v, Iv);
    pe -= m->body_mass[i] * khzu_dot3(m->gravity, d->xcom + 3 * i);
  }
  for (int k = 0; k < m->nv; k++) ke += 0.5 * m->dof_armature[k] * d->qd[k] * d->qd[k];
  if (kinetic) *kinetic = ke;
  if (potential) *potential = pe;
}
