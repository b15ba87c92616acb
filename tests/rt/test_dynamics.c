/* test_dynamics.c — ABA, RNEA, CRBA and point Jacobians agree with each other
 * on random trees with every joint type, offset/rotated origins, oblique axes,
 * full inertias, armature and external wrenches (issue: mutually consistent to
 * 1e-10). The comparison against an independent engine is in tests/oracle. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dynamics.h"
#include "ensure.h"
#include "random_model.h"

static double rel_err(const double *a, const double *b, int n) {
  double num = 0, den = 0;
  for (int k = 0; k < n; k++) {
    num = fmax(num, fabs(a[k] - b[k]));
    den = fmax(den, fabs(b[k]));
  }
  return num / fmax(den, 1e-12);
}

static void solve_spd(double *M, int n, double *x) {
  int rc = khzu_cholFactor(M, n);
  ENSURE(rc == 0);
  khzu_cholSolve(M, n, x);
}

static void check_consistency(khzModel *m, int trials) {
  khzData *d = khz_makeData(m, 0);
  int nv = m->nv;
  double *q = calloc((size_t)m->nq, sizeof(double)), *qd = calloc((size_t)nv, sizeof(double));
  double *tau = calloc((size_t)nv, sizeof(double)), *qdd = calloc((size_t)nv, sizeof(double));
  double *tau2 = calloc((size_t)nv, sizeof(double)), *bias = calloc((size_t)nv, sizeof(double));
  double *zero = calloc((size_t)nv, sizeof(double)), *M = calloc((size_t)(nv * nv), sizeof(double));
  double *Mc = calloc((size_t)(nv * nv), sizeof(double));
  double worst_rnea = 0, worst_crba = 0, worst_ke = 0;
  for (int t = 0; t < trials; t++) {
    rm_random_state(m, q, qd);
    for (int k = 0; k < nv; k++) tau[k] = rm_uniform(-5, 5);
    for (int k = 6; k < 6 * m->nbody; k++) d->xfrc[k] = rm_uniform(-3, 3);

    /* ABA then RNEA must give back the torques */
    khz_aba(m, d, q, qd, tau, qdd);
    khz_rnea(m, d, q, qd, qdd, tau2);
    worst_rnea = fmax(worst_rnea, rel_err(tau2, tau, nv));

    /* CRBA + solve: M qdd = tau - RNEA(q, qd, 0) */
    khz_rnea(m, d, q, qd, zero, bias);
    khz_crba(m, d, q, M);
    int symmetric = 1;
    for (int a = 0; a < nv; a++)
      for (int b = 0; b < nv; b++) symmetric &= M[a * nv + b] == M[b * nv + a];
    ENSURE(symmetric);
    for (int k = 0; k < nv; k++) tau2[k] = tau[k] - bias[k];
    memcpy(Mc, M, (size_t)(nv * nv) * sizeof(double));
    solve_spd(Mc, nv, tau2);
    worst_crba = fmax(worst_crba, rel_err(tau2, qdd, nv));

    /* kinetic energy = 1/2 qd^T M qd */
    memcpy(d->q, q, (size_t)m->nq * sizeof(double));
    memcpy(d->qd, qd, (size_t)nv * sizeof(double));
    double ke, ke2 = 0;
    khz_energy(m, d, &ke, NULL);
    for (int a = 0; a < nv; a++)
      for (int b = 0; b < nv; b++) ke2 += 0.5 * qd[a] * M[a * nv + b] * qd[b];
    worst_ke = fmax(worst_ke, fabs(ke - ke2) / fmax(ke2, 1e-12));
  }
  printf("nbody %d nv %d: rnea %.3g crba %.3g energy %.3g\n", m->nbody, nv, worst_rnea,
         worst_crba, worst_ke);
  ENSURE_MSG(worst_rnea < 1e-10, "ABA/RNEA mismatch %g", worst_rnea);
  ENSURE_MSG(worst_crba < 1e-10, "ABA/CRBA mismatch %g", worst_crba);
  ENSURE_MSG(worst_ke < 1e-10, "energy/CRBA mismatch %g", worst_ke);
  free(q), free(qd), free(tau), free(qdd), free(tau2), free(bias), free(zero), free(M), free(Mc);
  khz_deleteData(&d);
}

/* jacp qd and jacr qd against central differences of a body-fixed point */
static void check_jacobian(khzModel *m) {
  khzData *d = khz_makeData(m, 0);
  int nv = m->nv;
  double *jp = calloc((size_t)(3 * nv), sizeof(double)), *jr = calloc((size_t)(3 * nv), sizeof(double));
  double *qp = calloc((size_t)m->nq, sizeof(double)), *qm = calloc((size_t)m->nq, sizeof(double));
  double worst = 0;
  for (int t = 0; t < 10; t++) {
    rm_random_state(m, d->q, d->qd);
    khz_kinematics(m, d);
    int b = 1 + (int)rm_uniform(0, m->nbody - 1);
    if (b >= m->nbody) b = m->nbody - 1;
    double local[3] = {rm_uniform(-.2, .2), rm_uniform(-.2, .2), rm_uniform(-.2, .2)}, p[3];
    khzu_mulMatVec3(p, d->xrot + 9 * b, local);
    for (int k = 0; k < 3; k++) p[k] += d->xpos[3 * b + k];
    khz_jacobian(m, d, b, p, jp, jr);
    double v[3] = {0}, w[3] = {0};
    for (int r = 0; r < 3; r++)
      for (int k = 0; k < nv; k++) v[r] += jp[r * nv + k] * d->qd[k], w[r] += jr[r * nv + k] * d->qd[k];

    /* world angular velocity from the body velocity */
    const double *wb = d->cvel + 6 * b;
    for (int r = 0; r < 3; r++) worst = fmax(worst, fabs(w[r] - wb[r]));

    /* finite differences of the point's position */
    double eps = 1e-6, pp[3], pm[3];
    double *q0 = calloc((size_t)m->nq, sizeof(double));
    memcpy(q0, d->q, (size_t)m->nq * sizeof(double));
    khz_integratePos(m, qp, q0, d->qd, eps);
    khz_integratePos(m, qm, q0, d->qd, -eps);
    memcpy(d->q, qp, (size_t)m->nq * sizeof(double));
    khz_kinematics(m, d);
    khzu_mulMatVec3(pp, d->xrot + 9 * b, local);
    for (int k = 0; k < 3; k++) pp[k] += d->xpos[3 * b + k];
    memcpy(d->q, qm, (size_t)m->nq * sizeof(double));
    khz_kinematics(m, d);
    khzu_mulMatVec3(pm, d->xrot + 9 * b, local);
    for (int k = 0; k < 3; k++) pm[k] += d->xpos[3 * b + k];
    for (int r = 0; r < 3; r++) worst = fmax(worst, fabs((pp[r] - pm[r]) / (2 * eps) - v[r]));
    free(q0);
  }
  printf("jacobian: worst %.3g\n", worst);
  ENSURE_MSG(worst < 1e-6, "jacobian mismatch %g", worst);
  free(jp), free(jr), free(qp), free(qm);
  khz_deleteData(&d);
}

/* gravity torques equal -sum_i J_com,i^T m_i g (virtual work) */
static void check_gravity(khzModel *m) {
  khzData *d = khz_makeData(m, 0);
  int nv = m->nv;
  double *zero = calloc((size_t)nv, sizeof(double)), *g = calloc((size_t)nv, sizeof(double));
  double *g2 = calloc((size_t)nv, sizeof(double)), *jp = calloc((size_t)(3 * nv), sizeof(double));
  rm_random_state(m, d->q, d->qd);
  khz_rnea(m, d, d->q, zero, zero, g);
  khz_kinematics(m, d);
  for (int i = 1; i < m->nbody; i++) {
    khz_jacobian(m, d, i, d->xcom + 3 * i, jp, NULL);
    for (int k = 0; k < nv; k++)
      for (int r = 0; r < 3; r++) g2[k] -= jp[r * nv + k] * m->body_mass[i] * m->gravity[r];
  }
  double e = rel_err(g, g2, nv);
  printf("gravity: %.3g\n", e);
  ENSURE(e < 1e-10);
  free(zero), free(g), free(g2), free(jp);
  khz_deleteData(&d);
}

/* body i of a test model of free bodies: PREFIX i on a floating joint at
 * the world, a random origin, com and orientation, a mass in [mlo, mhi] and
 * a random inertia (the random stream read in this order) */
static void random_free_body(khzBodySpec *b, const char *prefix, int i, double mlo, double mhi) {
  khz_spec_defaultBody(b);
  snprintf(b->name, sizeof b->name, "%s%d", prefix, i);
  snprintf(b->joint_name, sizeof b->joint_name, "j%s%d", prefix, i);
  b->parent = 0;
  b->joint_type = KHZ_JOINT_FLOATING;
  for (int k = 0; k < 3; k++) b->pos[k] = rm_uniform(-0.3, 0.3), b->com[k] = rm_uniform(-0.1, 0.1);
  rm_random_quat(b->quat);
  b->mass = rm_uniform(mlo, mhi);
  rm_random_inertia(b->mass, b->inertia);
}

/* A free object's closed form (khz_abaCoreKeep with store 0: Newton-Euler
 * at the com) against the general ABA (store 1: the 6x6 D, its factor and
 * inverse) on random states, torques and wrenches: bodies with full and
 * principal inertias, offset coms and rotated joint origins agree to 1e-12
 * relative and differ in some bits (the closed form ran); a body with
 * armature and one with implicit damping keep the general path's bits, and
 * so does every body with contact.free_closed_form off. */
static void check_free_fast(void) {
  enum { NB = 6 };
  khzSpec *s = khz_spec_new();
  for (int i = 1; i <= NB; i++) {
    khzBodySpec b;
    random_free_body(&b, "f", i, 0.5, 3);
    if (i == 2 || i == 3) b.inertia[3] = b.inertia[4] = b.inertia[5] = 0; /* principal */
    if (i == 3) b.com[0] = b.com[1] = b.com[2] = 0;
    if (i == 5) b.armature = 0.05;
    if (i == 6) b.damping = 2;
    khz_spec_addBody(s, &b);
  }
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  khz_spec_destroy(&s);
  ENSURE_MSG(m != NULL, "free bodies: %s", err);
  if (!m) return;
  /* on by default (khz_spec_defaultContact): the closed form must run below
   * (differ) without being asked for; off: ABA's bits, checked below */
  ENSURE_MSG(m->contact.free_closed_form == 1, "contact.free_closed_form is not on by default");
  khzData *d = khz_makeData(m, 0);
  int nv = m->nv;
  double *tau = calloc((size_t)nv, sizeof(double)), *fast = calloc((size_t)nv, sizeof(double));
  double *ref = calloc((size_t)nv, sizeof(double)), *staged = calloc((size_t)nv, sizeof(double));
  size_t nb = (size_t)m->nbody;
  double *vt_full = calloc(6 * nb, sizeof(double)), *cb_full = calloc(6 * nb, sizeof(double));
  double *ci_full = calloc(KHZ_CINERT * nb, sizeof(double));
  double worst = 0;
  int differ = 0, kept = 1, stage_same = 1, stage_left = 0;
  for (int t = 0; t < 200; t++) {
    rm_random_state(m, d->q, d->qd);
    for (int k = 0; k < nv; k++) tau[k] = rm_uniform(-5, 5);
    for (int k = 6; k < 6 * m->nbody; k++) d->xfrc[k] = t % 4 ? rm_uniform(-3, 3) : 0;
    double h = t % 2 ? 0.001 : 0;
    khz_forwardPass(m, d, d->q, d->qd);
    khz_externalForces(m, d);
    khz_abaCoreKeep(m, d, tau, fast, h, 0, NULL, 0, 0);
    khz_abaCoreKeep(m, d, tau, ref, h, 0, NULL, 0, 1);
    /* RK4's stage pass (khz_forwardPassStage) with the world inertias, bias
     * accelerations and velocities NaN first: the closed form's bodies give
     * the same bits from their pose, com and velocity alone, and the others
     * (armature; damping at h > 0) find the full pass's fields */
    memcpy(vt_full, d->vtree, 6 * nb * sizeof(double));
    memcpy(cb_full, d->cbias, 6 * nb * sizeof(double));
    memcpy(ci_full, d->cinert, KHZ_CINERT * nb * sizeof(double));
    for (size_t k = 6; k < 6 * nb; k++) d->vtree[k] = d->cbias[k] = NAN;
    for (size_t k = KHZ_CINERT; k < KHZ_CINERT * nb; k++) d->cinert[k] = NAN;
    khz_forwardPassStage(m, d, d->q, d->qd, h);
    khz_externalForces(m, d);
    khz_abaCoreKeep(m, d, tau, staged, h, 0, NULL, 0, 0);
    stage_same &= !memcmp(staged, fast, (size_t)nv * sizeof(double));
    stage_same &= !memcmp(d->vtree, vt_full, 6 * nb * sizeof(double));
    stage_same &= !khz_kinematicsAt(m, d, d->q, d->qd);
    for (int i = 1; i < m->nbody; i++) {
      if (i == 5 || (i == 6 && h > 0)) {
        stage_same &= !memcmp(d->cbias + 6 * i, cb_full + 6 * i, 6 * sizeof(double));
        stage_same &= !memcmp(d->cinert + KHZ_CINERT * i, ci_full + KHZ_CINERT * i, KHZ_CINERT * sizeof(double));
      } else {
        stage_left += isnan(d->cinert[KHZ_CINERT * i]) && isnan(d->cbias[6 * i]);
      }
    }
    for (int i = 1; i < m->nbody; i++) {
      int dof = m->jnt_dofadr[i];
      if (i == 5 || (i == 6 && h > 0)) {
        kept &= !memcmp(fast + dof, ref + dof, 6 * sizeof(double));
        continue;
      }
      worst = fmax(worst, rel_err(fast + dof, ref + dof, 6));
      differ |= memcmp(fast + dof, ref + dof, 6 * sizeof(double)) != 0;
    }
  }
  /* off: every body takes ABA in both calls */
  m->contact.free_closed_form = 0;
  int off_same = 1;
  for (int t = 0; t < 20; t++) {
    rm_random_state(m, d->q, d->qd);
    for (int k = 0; k < nv; k++) tau[k] = rm_uniform(-5, 5);
    khz_forwardPass(m, d, d->q, d->qd);
    khz_externalForces(m, d);
    khz_abaCoreKeep(m, d, tau, fast, 0, 0, NULL, 0, 0);
    khz_abaCoreKeep(m, d, tau, ref, 0, 0, NULL, 0, 1);
    off_same &= !memcmp(fast, ref, (size_t)nv * sizeof(double));
  }
  ENSURE_MSG(off_same, "contact.free_closed_form 0 left ABA");
  printf("free bodies' closed form: worst %.3g, differs from ABA's bits %d, general path kept %d\n", worst,
         differ, kept);
  ENSURE_MSG(worst < 1e-12, "closed form against ABA %g", worst);
  ENSURE_MSG(differ, "the closed form never ran");
  ENSURE_MSG(kept, "armature / implicit damping left the general path");
  printf("stage pass: closed form's bits and the others' fields %d, closed-form bodies left out %d of %d\n",
         stage_same, stage_left, 200 * 4 + 100);
  ENSURE_MSG(stage_same, "khz_forwardPassStage changed the closed form's result or another body's fields");
  ENSURE_MSG(stage_left == 200 * 4 + 100, "khz_forwardPassStage left out %d closed-form bodies, not 900", stage_left);
  free(tau), free(fast), free(ref), free(staged), free(vt_full), free(cb_full), free(ci_full);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* khz_abaInertias against khz_abaCore at random states: IA (bodies with a
 * parent or a child), U and Dinv bit for bit, each array first filled with
 * NaN; the velocity fields saved, overwritten by a pass at other velocities
 * and restored are a pass at the first, bit for bit */
static void check_inertias_alone(khzModel *m, int trials) {
  khzData *d = khz_makeData(m, 0), *e = khz_makeData(m, 0);
  int nv = m->nv, nb = m->nbody;
  double *tau = calloc((size_t)nv, sizeof(double)), *qdd = calloc((size_t)nv, sizeof(double));
  double *qd2 = calloc((size_t)nv, sizeof(double)), *saved = calloc(12 * (size_t)nb, sizeof(double));
  double *ref = calloc(12 * (size_t)nb, sizeof(double));
  int differ = 0, restored = 1, nan = 0;
  for (int t = 0; t < trials; t++) {
    rm_random_state(m, d->q, d->qd);
    for (int k = 0; k < 6 * nb; k++) d->xfrc[k] = k < 6 ? 0 : rm_uniform(-3, 3);
    khz_forwardPass(m, d, d->q, d->qd);
    khz_externalForces(m, d);
    khz_abaCore(m, d, tau, qdd);
    memcpy(e->q, d->q, (size_t)m->nq * sizeof(double));
    memcpy(e->qd, d->qd, (size_t)nv * sizeof(double));
    khz_forwardPass(m, e, e->q, e->qd);
    for (size_t k = 0; k < 36 * (size_t)nb; k++) e->IA[k] = e->U[k] = e->Dinv[k] = NAN;
    khz_abaInertias(m, e);
    for (int i = 1; i < nb; i++) {
      int alone = m->body_parent[i] == 0 && m->body_treeend[i] == i + 1, nvi = m->jnt_nv[i];
      size_t o = 36 * (size_t)i;
      if (!alone) differ |= memcmp(e->IA + o, d->IA + o, 36 * sizeof(double)) != 0;
      differ |= memcmp(e->U + o, d->U + o, 6 * (size_t)nvi * sizeof(double)) != 0;
      differ |= memcmp(e->Dinv + o, d->Dinv + o, (size_t)(nvi * nvi) * sizeof(double)) != 0;
      for (int k = 0; k < 6 * nvi; k++) nan |= isnan(e->U[o + k]);
    }
    /* the velocity fields over a pass at other velocities */
    memcpy(ref, d->vtree, 6 * (size_t)nb * sizeof(double));
    memcpy(ref + 6 * nb, d->cbias, 6 * (size_t)nb * sizeof(double));
    khz_velocitySave(m, d, saved);
    for (int k = 0; k < nv; k++) qd2[k] = rm_uniform(-2, 2);
    khz_velocityPass(m, d, qd2);
    khz_velocityRestore(m, d, saved);
    restored &= !memcmp(ref, d->vtree, 6 * (size_t)nb * sizeof(double)) &&
                !memcmp(ref + 6 * nb, d->cbias, 6 * (size_t)nb * sizeof(double));
    restored &= !khz_kinematicsAt(m, d, d->q, d->qd);
  }
  ENSURE_MSG(!differ && !nan, "khz_abaInertias differs from khz_abaCore's IA, U, Dinv (NaN left %d)", nan);
  ENSURE_MSG(restored, "khz_velocityRestore is not the saved pass (or kept the record)");
  free(tau), free(qdd), free(qd2), free(saved), free(ref);
  khz_deleteData(&d);
  khz_deleteData(&e);
}

/* khz_abaInertiasHeld, then khz_abaCoreKeep at the same q, h and stiff_only
 * (the contact stage's damped inertias taken by the first integrator stage):
 * qdd, the kept velocity terms, pA, U and Dinv bit for bit those of a full
 * khz_abaCoreKeep, with IA left as the held pass made it (filled with NaN
 * after that pass: the held inertias were taken, not computed again). Then
 * the mark's end: a forward pass at another q, another h, the other
 * stiff_only, a second call or a wake each make the next call compute its
 * inertias again (IA overwritten), with a full evaluation's bits. The joints
 * get damping up to h b = 2 so that stiff_only takes some dofs and not others. */
static void check_inertias_held(khzModel *m, int trials) {
  khzData *d = khz_makeData(m, 0), *e = khz_makeData(m, 0);
  int nv = m->nv, nb = m->nbody;
  size_t nq = (size_t)m->nq;
  double *tau = calloc((size_t)nv, sizeof(double)), *qdd = calloc((size_t)nv, sizeof(double));
  double *qdd_ref = calloc((size_t)nv, sizeof(double)), *damping = calloc((size_t)nv, sizeof(double));
  double *keep = calloc(12 * (size_t)nb, sizeof(double)), *keep_ref = calloc(12 * (size_t)nb, sizeof(double));
  double *q2 = calloc(nq, sizeof(double)), *qd2 = calloc((size_t)nv, sizeof(double));
  memcpy(damping, m->dof_damping, (size_t)nv * sizeof(double));
  int differ = 0, not_taken = 0, stale = 0, wrong_after = 0;
  const double h = 0.01;
  for (int t = 0; t < trials; t++) {
    for (int k = 0; k < nv; k++) m->dof_damping[k] = k % 3 == 0 ? 0 : rm_uniform(0, 200);
    int stiff_only = t % 2;
    rm_random_state(m, d->q, d->qd);
    for (int k = 0; k < nv; k++) tau[k] = rm_uniform(-2, 2);
    for (int k = 0; k < 6 * nb; k++) d->xfrc[k] = e->xfrc[k] = k < 6 ? 0 : rm_uniform(-3, 3);
    /* the reference: a full evaluation */
    khz_forwardPass(m, d, d->q, d->qd);
    khz_externalForces(m, d);
    khz_abaCoreKeep(m, d, tau, qdd_ref, h, stiff_only, keep_ref, 0, 1);
    /* the held inertias, taken */
    memcpy(e->q, d->q, nq * sizeof(double));
    memcpy(e->qd, d->qd, (size_t)nv * sizeof(double));
    khz_forwardPass(m, e, e->q, e->qd);
    khz_abaInertiasHeld(m, e, h, stiff_only);
    for (size_t k = 0; k < 36 * (size_t)nb; k++) e->IA[k] = NAN;
    for (size_t k = 0; k < 6 * (size_t)nb; k++) e->pA[k] = e->u[k] = e->acc[k] = NAN;
    khz_externalForces(m, e);
    khz_abaCoreKeep(m, e, tau, qdd, h, stiff_only, keep, 0, 1);
    differ |= memcmp(qdd, qdd_ref, (size_t)nv * sizeof(double)) != 0;
    differ |= memcmp(keep, keep_ref, 12 * (size_t)nb * sizeof(double)) != 0;
    differ |= memcmp(e->pA + 6, d->pA + 6, 6 * (size_t)(nb - 1) * sizeof(double)) != 0; /* body 0: none */
    for (int i = 1; i < nb; i++) { /* U: 6 nv written, Dinv: nv^2 */
      size_t o = 36 * (size_t)i, nvi = (size_t)m->jnt_nv[i];
      differ |= memcmp(e->U + o, d->U + o, 6 * nvi * sizeof(double)) != 0;
      differ |= memcmp(e->Dinv + o, d->Dinv + o, nvi * nvi * sizeof(double)) != 0;
    }
    for (int i = 1; i < nb; i++) not_taken |= !isnan(e->IA[36 * i]);
    /* each way the mark ends: the next call computes the inertias */
    for (int way = 0; way < 5; way++) {
      double h_next = way == 1 ? h / 2 : h;
      int stiff_next = way == 2 ? !stiff_only : stiff_only;
      khz_forwardPass(m, e, e->q, e->qd);
      khz_abaInertiasHeld(m, e, h, stiff_only);
      const double *q_next = e->q;
      if (way == 0) { /* another q */
        rm_random_state(m, q2, qd2);
        khz_forwardPass(m, e, q2, e->qd);
        q_next = q2;
      }
      if (way == 3) khz_abaCoreKeep(m, e, tau, qdd, h, stiff_only, NULL, 0, 1); /* used up */
      if (way == 4) { /* a wake (of a tree put to sleep for it, at rest) */
        e->body_sleep[0] = e->body_sleep[1] = 1;
        khz_wake(m, e, 1);
      }
      for (size_t k = 0; k < 36 * (size_t)nb; k++) e->IA[k] = NAN;
      khz_externalForces(m, e);
      khz_abaCoreKeep(m, e, tau, qdd, h_next, stiff_next, NULL, 0, 1);
      int computed = 0;
      for (int i = 1; i < nb; i++) computed |= m->body_parent[i] == 0 && !(m->body_treeend[i] == i + 1) && !isnan(e->IA[36 * i]);
      int any_tree = 0;
      for (int i = 1; i < nb; i++) any_tree |= m->body_parent[i] == 0 && !(m->body_treeend[i] == i + 1);
      stale |= any_tree && !computed;
      /* and its bits are a full evaluation's at that q, h, stiff_only */
      khz_forwardPass(m, d, q_next, e->qd);
      khz_externalForces(m, d);
      khz_abaCoreKeep(m, d, tau, qdd_ref, h_next, stiff_next, NULL, 0, 1);
      wrong_after |= memcmp(qdd, qdd_ref, (size_t)nv * sizeof(double)) != 0;
    }
  }
  ENSURE_MSG(!differ, "ABA on the held inertias differs from a full evaluation");
  ENSURE_MSG(!not_taken, "the held inertias were computed again");
  ENSURE_MSG(!stale, "the held inertias were taken after a change that ends the mark");
  ENSURE_MSG(!wrong_after, "ABA after the mark's end differs from a full evaluation");
  memcpy(m->dof_damping, damping, (size_t)nv * sizeof(double));
  free(tau), free(qdd), free(qdd_ref), free(damping), free(keep), free(keep_ref), free(q2), free(qd2);
  khz_deleteData(&d);
  khz_deleteData(&e);
}

/* khz_abaInertias (the contact stage's, h = 0), then khz_abaCoreKeep with
 * keep or store at the same q (the first integrator stage at h,
 * stiff_only): the free objects without damped dofs take the held U and
 * Dinv (aba_start's plain path). Six free bodies (full and principal
 * inertias, offset coms, one with armature, one damped) and a two-body
 * tree, 100 random states, h 0 and 1 ms, both stiff_only: qdd, keep, U,
 * Dinv and u bit for bit a full evaluation's. Taken: with Dinv made NaN
 * after the inertia pass, the free bodies but the damped one at h > 0 give
 * NaN and every other body the full evaluation's qdd. The mark's end (a
 * forward pass at another q, an ABA call, a wake, khz_abaInertiasHeld):
 * the next call computes every factor again (no NaN). */
static void check_inertias_plain(void) {
  enum { NB = 6 };
  khzSpec *s = khz_spec_new();
  for (int i = 1; i <= NB + 2; i++) {
    khzBodySpec b;
    random_free_body(&b, "p", i, 0.5, 3);
    if (i == NB + 2) b.parent = NB + 1, b.joint_type = KHZ_JOINT_REVOLUTE; /* a hinge on the last free body */
    b.axis[0] = 0, b.axis[1] = 0, b.axis[2] = 1;
    if (i == 2 || i == 3) b.inertia[3] = b.inertia[4] = b.inertia[5] = 0; /* principal */
    if (i == 5) b.armature = 0.05;
    if (i == 6) b.damping = 2;
    khz_spec_addBody(s, &b);
  }
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  khz_spec_destroy(&s);
  ENSURE_MSG(m != NULL, "free bodies and a tree: %s", err);
  if (!m) return;
  khzData *d = khz_makeData(m, 0), *e = khz_makeData(m, 0);
  int nv = m->nv, nb = m->nbody;
  size_t nq = (size_t)m->nq;
  double *tau = calloc((size_t)nv, sizeof(double)), *qdd = calloc((size_t)nv, sizeof(double));
  double *qdd_ref = calloc((size_t)nv, sizeof(double)), *q2 = calloc(nq, sizeof(double));
  double *keep = calloc(12 * (size_t)nb, sizeof(double)), *keep_ref = calloc(12 * (size_t)nb, sizeof(double));
  int differ = 0, not_taken = 0, wrong_taken = 0, stale = 0, taken_bodies = 0;
  for (int t = 0; t < 100; t++) {
    double h = t % 2 ? 0.001 : 0;
    int stiff_only = (t / 2) % 2;
    rm_random_state(m, d->q, d->qd);
    for (int k = 0; k < nv; k++) tau[k] = rm_uniform(-2, 2);
    for (int k = 0; k < 6 * nb; k++) d->xfrc[k] = e->xfrc[k] = k < 6 ? 0 : rm_uniform(-3, 3);
    khz_forwardPass(m, d, d->q, d->qd);
    khz_externalForces(m, d);
    khz_abaCoreKeep(m, d, tau, qdd_ref, h, stiff_only, keep_ref, 0, 1);
    memcpy(e->q, d->q, nq * sizeof(double));
    memcpy(e->qd, d->qd, (size_t)nv * sizeof(double));
    for (int pass = 0; pass < 2; pass++) {
      khz_forwardPass(m, e, e->q, e->qd);
      khz_abaInertias(m, e);
      if (pass == 1)
        for (size_t k = 0; k < 36 * (size_t)nb; k++) e->Dinv[k] = NAN;
      for (size_t k = 0; k < 6 * (size_t)nb; k++) e->u[k] = NAN;
      khz_externalForces(m, e);
      khz_abaCoreKeep(m, e, tau, qdd, h, stiff_only, keep, 0, 1);
      if (pass == 0) {
        differ |= memcmp(qdd, qdd_ref, (size_t)nv * sizeof(double)) != 0;
        differ |= memcmp(keep, keep_ref, 12 * (size_t)nb * sizeof(double)) != 0;
        for (int i = 1; i < nb; i++) {
          size_t o = 36 * (size_t)i, nvi = (size_t)m->jnt_nv[i];
          differ |= memcmp(e->U + o, d->U + o, 6 * nvi * sizeof(double)) != 0;
          differ |= memcmp(e->Dinv + o, d->Dinv + o, nvi * nvi * sizeof(double)) != 0;
          differ |= memcmp(e->u + 6 * i, d->u + 6 * i, nvi * sizeof(double)) != 0;
        }
        continue;
      }
      for (int i = 1; i < nb; i++) {
        int dof = m->jnt_dofadr[i], nvi = m->jnt_nv[i];
        int plain = i <= NB && !(i == 6 && h > 0), nan = 0;
        for (int k = 0; k < nvi; k++) nan |= isnan(qdd[dof + k]);
        if (plain) not_taken |= !nan, taken_bodies++;
        else wrong_taken |= memcmp(qdd + dof, qdd_ref + dof, (size_t)nvi * sizeof(double)) != 0;
      }
    }
    /* each way the mark ends: nothing is taken from the inertia pass */
    for (int way = 0; way < 4; way++) {
      khz_forwardPass(m, e, e->q, e->qd);
      khz_abaInertias(m, e);
      if (way == 0) { /* another q */
        rm_random_state(m, q2, e->qd);
        memcpy(e->qd, d->qd, (size_t)nv * sizeof(double));
        khz_forwardPass(m, e, q2, e->qd);
      }
      if (way == 1) khz_abaCoreKeep(m, e, tau, qdd, h, stiff_only, NULL, 0, 1); /* used up */
      if (way == 2) { /* a wake (of a body put to sleep for it, at rest) */
        e->body_sleep[0] = e->body_sleep[1] = 1;
        khz_wake(m, e, 1);
      }
      if (way == 3) khz_abaInertiasHeld(m, e, h + 0.5, stiff_only); /* held for another h */
      for (size_t k = 0; k < 36 * (size_t)nb; k++) e->Dinv[k] = NAN;
      khz_externalForces(m, e);
      khz_abaCoreKeep(m, e, tau, qdd, h, stiff_only, keep, 0, 1);
      for (int k = 0; k < nv; k++) stale |= isnan(qdd[k]);
    }
  }
  printf("plain factors: taken by %d free body-states, differ %d, not taken %d, wrongly taken %d, stale %d\n",
         taken_bodies, differ, not_taken, wrong_taken, stale);
  ENSURE_MSG(!differ, "ABA on khz_abaInertias' factors differs from a full evaluation");
  ENSURE_MSG(!not_taken, "a free body computed its factors again after khz_abaInertias");
  ENSURE_MSG(!wrong_taken, "a damped free body or a tree's body took khz_abaInertias' factors");
  ENSURE_MSG(!stale, "khz_abaInertias' factors were taken after a change that ends the mark");
  free(tau), free(qdd), free(qdd_ref), free(q2), free(keep), free(keep_ref);
  khz_deleteData(&d);
  khz_deleteData(&e);
  khz_deleteModel(&m);
}

/* Four free bodies at a time: eleven free bodies with principal inertias
 * (two batches of four and three left over) among full-inertia, armature
 * and damped ones, ten with an unrotated joint origin, 100 random states,
 * torques and wrenches, h 0 and 1 ms. The closed form (free_alone_fast4,
 * aba_start): qdd with every body awake is bit for bit each body's qdd with
 * all the others asleep (so it is taken alone, by the scalar
 * free_alone_fast). The stage pass (stage_pose4, forward_pass): the poses,
 * coms and velocities bit for bit the full pass's. */
static void check_free_batch(void) {
  enum { NB = 15 };
  khzSpec *s = khz_spec_new();
  for (int i = 1; i <= NB; i++) {
    khzBodySpec b;
    random_free_body(&b, "b", i, 0.2, 5);
    if (i % 3 != 0) b.quat[0] = 1, b.quat[1] = b.quat[2] = b.quat[3] = 0; /* unrotated origin */
    if (i % 4 != 1) b.inertia[3] = b.inertia[4] = b.inertia[5] = 0; /* principal: 11 of 15 */
    if (i == 5) b.armature = 0.05;
    if (i == 9) b.damping = 2;
    khz_spec_addBody(s, &b);
  }
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  khz_spec_destroy(&s);
  ENSURE_MSG(m != NULL, "free bodies: %s", err);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);
  int nv = m->nv;
  double *tau = calloc((size_t)nv, sizeof(double)), *all = calloc((size_t)nv, sizeof(double));
  double *one = calloc((size_t)nv, sizeof(double));
  size_t nb = (size_t)m->nbody;
  double *full = calloc(21 * nb, sizeof(double));
  int differ = 0, pose_differ = 0;
  for (int t = 0; t < 100; t++) {
    double h = t % 2 ? 0.001 : 0;
    rm_random_state(m, d->q, d->qd);
    for (int k = 0; k < nv; k++) tau[k] = rm_uniform(-5, 5);
    for (int k = 6; k < 6 * m->nbody; k++) d->xfrc[k] = t % 4 ? rm_uniform(-3, 3) : 0;
    khz_forwardPass(m, d, d->q, d->qd);
    memcpy(full, d->xrot, 9 * nb * sizeof(double));
    memcpy(full + 9 * nb, d->xpos, 3 * nb * sizeof(double));
    memcpy(full + 12 * nb, d->xcom, 3 * nb * sizeof(double));
    memcpy(full + 15 * nb, d->vtree, 6 * nb * sizeof(double));
    for (size_t k = 9; k < 9 * nb; k++) d->xrot[k] = NAN;
    for (size_t k = 3; k < 3 * nb; k++) d->xpos[k] = d->xcom[k] = NAN;
    for (size_t k = 6; k < 6 * nb; k++) d->vtree[k] = NAN;
    khz_forwardPassStage(m, d, d->q, d->qd, h);
    pose_differ |= memcmp(full, d->xrot, 9 * nb * sizeof(double)) != 0;
    pose_differ |= memcmp(full + 9 * nb, d->xpos, 3 * nb * sizeof(double)) != 0;
    pose_differ |= memcmp(full + 12 * nb, d->xcom, 3 * nb * sizeof(double)) != 0;
    pose_differ |= memcmp(full + 15 * nb, d->vtree, 6 * nb * sizeof(double)) != 0;
    khz_externalForces(m, d);
    khz_abaCoreKeep(m, d, tau, all, h, 0, NULL, 0, 0);
    for (int j = 1; j < m->nbody; j++) {
      for (int i = 1; i < m->nbody; i++) d->body_sleep[i] = i != j;
      khz_abaCoreKeep(m, d, tau, one, h, 0, NULL, 0, 0);
      int dof = m->jnt_dofadr[j];
      differ += memcmp(all + dof, one + dof, 6 * sizeof(double)) != 0;
    }
    for (int i = 1; i < m->nbody; i++) d->body_sleep[i] = 0;
  }
  printf("closed form in fours: %d of %d body-states differ from one at a time\n", differ, 100 * NB);
  ENSURE_MSG(!differ, "the closed form four at a time differs from one at a time (%d)", differ);
  printf("stage pass in fours: poses, coms, velocities the full pass's %d\n", !pose_differ);
  ENSURE_MSG(!pose_differ, "the stage pass four at a time differs from the full pass");
  free(tau), free(all), free(one), free(full);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

int main(void) {
  struct { int n, floating, tree, arm; } cases[] = {
      {7, 0, 0, 0}, {7, 0, 0, 1}, {12, 0, 1, 1}, {12, 1, 1, 0}, {27, 1, 1, 1}, {1, 1, 0, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    khzModel *m = rm_random_model(cases[c].n, cases[c].floating, cases[c].tree, cases[c].arm);
    ENSURE(m != NULL);
    if (!m) continue;
    check_consistency(m, 50);
    check_jacobian(m);
    check_gravity(m);
    check_inertias_alone(m, 20);
    check_inertias_held(m, 20);
    khz_deleteModel(&m);
  }
  check_free_fast();
  check_inertias_plain();
  check_free_batch();
  return ensure_report();
}
