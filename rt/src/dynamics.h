/* dynamics.h — the pieces of the dynamics algorithms that the step and the
 * contact methods call separately (rt-private). */
#ifndef KHZ_DYNAMICS_H
#define KHZ_DYNAMICS_H

#include "khz/khz.h"

/* Kinematics at (q, qd) in each tree's world-aligned frame at its root:
 * xpos, xrot, xcom, S, vtree, cbias, cinert (qd may be NULL). Sleeping
 * bodies (d->body_sleep) are skipped: they keep the pass of their frozen q
 * at rest; khz_abaCore skips them too and gives them qdd = 0. */
void khz_forwardPass(const khzModel *m, khzData *d, const double *q, const double *qd);
/* khz_forwardPass for an integrator stage whose dynamics follow at h with
 * store 0 (khz_abaCoreKeep): with contact.free_closed_form the free bodies
 * that take the closed form get their pose, com and velocity only (not S,
 * the bias acceleration or the world inertia); every other body's fields
 * are khz_forwardPass's bits. The record of khz_kinematicsAt is dropped. */
void khz_forwardPassStage(const khzModel *m, khzData *d, const double *q, const double *qd, double h);

/* writes the constant entries of the free joints' S (khz_makeData; the
 * forward pass writes only their rotation) */
void khz_dynamicsInitData(const khzModel *m, khzData *d);

/* m->body_zeros from the bodies' mass, inertia and joint origin (khz_compile) */
void khz_dynamicsZeros(khzModel *m);

/* m->passive_terms: which of khz_passive's loops have work (khz_compile;
 * step.c) */
void khz_passiveTerms(khzModel *m);

/* the velocity part of khz_forwardPass alone (vtree, cbias at qd), for a
 * q whose position part (poses, S, cinert) is already in d: the same numbers
 * as khz_forwardPass(q, qd) */
void khz_velocityPass(const khzModel *m, khzData *d, const double *qd);

/* the velocity fields (vtree, cbias: 12 doubles per body) copied out and
 * back in: a velocity pass at other velocities in between (the implicit
 * contact part's) is undone bit for bit at the cost of two copies instead of
 * a second pass. Restore forgets the khz_kinematicsAt record. */
void khz_velocitySave(const khzModel *m, const khzData *d, double *saved);
void khz_velocityRestore(const khzModel *m, khzData *d, const double *saved);

/* 1 when the forward pass's fields already hold khz_forwardPass(q, qd) for
 * every body (the last pass was at these values, bit for bit, and skipped no
 * sleeping body): the pass can be left out. Only passes at d->q and d->qd
 * are recorded: for other arrays the answer is 0. */
int khz_kinematicsAt(const khzModel *m, const khzData *d, const double *q, const double *qd);

/* d->fext from d->xfrc at the current forward pass (overwrites fext). */
void khz_externalForces(const khzModel *m, khzData *d);

/* ABA's backward and forward passes after khz_forwardPass and with d->fext
 * set: writes qdd, leaves the articulated inertias IA, U, Dinv valid for the
 * impulse response (khz_impulseResponse). */
void khz_abaCore(const khzModel *m, khzData *d, const double *tau, double *qdd);

/* the articulated inertias alone (IA, U, Dinv) at the current forward pass,
 * bit for bit what khz_abaCore leaves there, for the impulse response; the
 * bias forces and accelerations are not computed (no tau, no f_ext). The
 * free objects' U and Dinv are held for the next ABA with store or keep
 * (not reuse) at the same q: where they are its factors too (a free body
 * with no damped dof, at any h) it takes them, with the same bits (the mark,
 * d->aba_held, cleared as khz_abaInertiasHeld's) */
void khz_abaInertias(const khzModel *m, khzData *d);

/* khz_abaInertias with the joints' damping implicit over h (IA, U, Dinv bit
 * for bit what khz_abaCoreDamped(h, stiff_only) leaves), held for the next
 * ABA at the same q, h and stiff_only: that call (khz_abaCoreKeep with store
 * or keep, not reuse) takes them instead of computing them again, with the
 * same bits. The mark (d->aba_held) is cleared by a forward pass, a wake
 * and every other ABA call. */
void khz_abaInertiasHeld(const khzModel *m, khzData *d, double h, int stiff_only);

/* khz_abaCore with joint damping integrated implicitly over a step h: each
 * dof's D term gets h b_k (as armature does), so qdd solves
 * (M + h B) qdd = tau - ... with tau holding the explicit -B qd: the velocity
 * update qd + h qdd of semi-implicit Euler is then backward Euler in the
 * damping, stable for any b (MuJoCo's Euler does the same with M + h B).
 * stiff_only: only dofs whose explicit rate h b_k / D_k exceeds 1 (D_k the
 * dof's articulated inertia) are treated so, the others stay explicit
 * (RK4: fourth order where it is stable). h = 0 is khz_abaCore. */
void khz_abaCoreDamped(const khzModel *m, khzData *d, const double *tau, double *qdd, double h,
                       int stiff_only);

/* khz_abaCoreDamped evaluated twice at the same (q, qd, h) with other f_ext
 * or tau (the step's stage after the implicit contact forces): the first call
 * (reuse 0) writes into keep (12 doubles per body) the terms that depend on
 * (q, qd) alone; the second (reuse 1) takes them and IA, U, Dinv as the first
 * left them and runs only the bias-force and acceleration passes. The result
 * is bit for bit a full evaluation's. keep NULL: khz_abaCoreDamped.
 * store 0 (only with keep NULL): nothing after the call reads the factors,
 * and those of bodies alone in their trees (free objects) are not written
 * to d (pA, U, Dinv, u, acc): the impulse response may not follow such a
 * call. With contact.free_closed_form a free object without armature or
 * implicit damping then takes its qdd in closed form (Newton-Euler at the
 * com: ABA's result to rounding, not its bits); every other body's qdd is
 * the same bits. */
void khz_abaCoreKeep(const khzModel *m, khzData *d, const double *tau, double *qdd, double h,
                     int stiff_only, double *keep, int reuse, int store);

/* CRBA in two parts: composite inertias at q (in d->IA), then the joint-space
 * mass matrix block of one tree (root = its root body; 0 = every tree) into
 * the n x n M, global dof k going to row local[k] (local NULL: identity).
 * Trees do not couple, so M is block diagonal over them. */
void khz_compositeInertia(const khzModel *m, khzData *d, const double *q);
void khz_crbaBlock(const khzModel *m, const khzData *d, int root, const int *local, int n,
                   double *M);

/* 1 if body b and all its ancestors are welded (b <= 0: the world). */
int khz_bodyStatic(const khzModel *m, int b);

/* 1 if body b is a free rigid body: a floating joint to the world, nothing
 * attached to it. */
int khz_bodyFree(const khzModel *m, int b);

/* World velocity of the material point x of body b at the current forward pass. */
void khz_pointVelocity(const khzModel *m, const khzData *d, int b, const double x[3], double vel[3]);

/* khz_pointVelocity inline, for the contact force pass's innermost loop (the
 * same operations: v + w x (x - o), with o the tree's origin) */
static inline void khz_pointVelocityInline(const khzModel *m, const khzData *d, int b, const double x[3],
                                           double vel[3]) {
  if (b <= 0) {
    vel[0] = vel[1] = vel[2] = 0;
    return;
  }
  const double *v = d->vtree + 6 * b, *o = d->xpos + 3 * m->body_root[b];
  double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]};
  double w0 = v[1] * r[2] - v[2] * r[1], w1 = v[2] * r[0] - v[0] * r[2], w2 = v[0] * r[1] - v[1] * r[0];
  vel[0] = v[3] + w0, vel[1] = v[4] + w1, vel[2] = v[5] + w2;
}

/* Change of qd caused by the spatial impulse f (world-aligned, at the body's
 * tree origin) on body b, with the articulated inertias left by khz_abaCore
 * at the current q (Mirtich's articulated impulse response: the impulse
 * propagates to the root, then the velocity change back out).
 * dqd is added to (NULL: not wanted); dvel (6 per body) receives the velocity
 * change of each body of b's tree, the other entries untouched. O(bodies of
 * b's tree), not O(nbody). */
void khz_impulseResponse(const khzModel *m, khzData *d, int b, const double f[6], double *dqd,
                         double *dvel);
/* khz_impulseResponse with dqd NULL, bit for bit, for the bodies need
 * (nbody) marks only: need must mark every ancestor of a marked body; the
 * other bodies' dvel are left untouched (the way back out skips them) */
void khz_impulseResponseNeed(const khzModel *m, khzData *d, int b, const double f[6], double *dqd,
                             double *dvel, const unsigned char *need);
/* khz_impulseResponseNeed (dqd NULL) for the six unit impulses f = e_j
 * (j = 0..5) on b in one walk: dv6[36 i + 6 k + j] receives component k of
 * body i's velocity change under e_j, bit for bit what the six calls leave
 * in dvel[6 i + k] (each column's operations in the same order). need
 * (NULL: every body of b's tree) as there; u6 (36 nbody) is scratch. */
void khz_impulseResponseUnits(const khzModel *m, khzData *d, int b, const unsigned char *need, double *u6,
                              double *dv6);

/* the most impulses khz_impulseResponseCols takes in one walk */
#define KHZ_RESPONSE_COLS 8
/* khz_impulseResponseNeed (dqd NULL) for ncol (<= KHZ_RESPONSE_COLS)
 * impulses f (6 per column) on b in one walk: dvc[6 KHZ_RESPONSE_COLS i +
 * 6 j + k] receives component k of body i's velocity change under f_j, bit
 * for bit what the call with f_j leaves in dvel[6 i + k] (each column's
 * operations in the same order). need (NULL: every body of b's tree) as
 * there; uc (6 KHZ_RESPONSE_COLS nbody) is scratch. */
void khz_impulseResponseCols(const khzModel *m, khzData *d, int b, int ncol, const double *f,
                             const unsigned char *need, double *uc, double *dvc);

/* The way to the root of khz_impulseResponseCols alone, which is the
 * L^-T of ABA's block factorisation M = L^T D L: uc[6 KHZ_RESPONSE_COLS i +
 * 6 j + a] receives u_i = (L^-T J_j^T) at joint i's dof a, for the bodies i
 * on b's path (others untouched), J_j^T the joint-space impulse of f_j
 * (6 per column, ncol <= KHZ_RESPONSE_COLS). Needs ABA's factors (U, Dinv)
 * at the current q, as khz_impulseResponse. Then J_j M^-1 J_l^T is the sum
 * over the joints on both paths of u_i(j)^T D_i^-1 u_i(l). */
void khz_impulseFactorCols(const khzModel *m, const khzData *d, int b, int ncol, const double *f, double *uc);

/* C (jnt_nv[i]^2, row-major, lower triangle) with C C^T = D_i^-1, joint i's
 * ABA Dinv: u^T D_i^-1 u' = (C^T u) . (C^T u'). 0, or -1 when Dinv is not
 * positive definite. */
int khz_jointDinvFactor(const khzModel *m, const khzData *d, int i, double *C);

/* The spatial impulse f (about the tree's origin) of the world impulse J at x on b. */
void khz_spatialImpulse(const khzModel *m, const khzData *d, int b, const double x[3],
                        const double J[3], double f[6]);

/* The velocity change dv at x of body b from the body velocity changes dvel. */
void khz_pointVelocityChange(const khzModel *m, const khzData *d, int b, const double x[3],
                             const double *dvel, double dv[3]);

/* Velocity change at x (world) of body b, dv_b, and at xq of body bq, dv_q
 * (zero unless bq is in b's tree), for the world impulse J at x on b.
 * dqd (nv) and dvel (6 nbody) are scratch. */
void khz_pointResponse(const khzModel *m, khzData *d, int b, const double x[3], const double J[3],
                       int bq, const double xq[3], double dv_b[3], double dv_q[3], double *dqd,
                       double *dvel);

#endif
