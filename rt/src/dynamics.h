/* dynamics.h — the pieces of the dynamics algorithms that the step and the
 * contact methods call separately (rt-private). */
#ifndef KHZ_DYNAMICS_H
#define KHZ_DYNAMICS_H

#include "khz/khz.h"

/* Kinematics at (q, qd) in each tree's world-aligned frame at its root:
 * xpos, xrot, xcom, S, vtree, cbias, cinert (qd may be NULL). */
void khz_forwardPass(const khzModel *m, khzData *d, const double *q, const double *qd);

/* d->fext from d->xfrc at the current forward pass (overwrites fext). */
void khz_externalForces(const khzModel *m, khzData *d);

/* ABA's backward and forward passes after khz_forwardPass and with d->fext
 * set: writes qdd, leaves the articulated inertias IA, U, Dinv valid for the
 * impulse response (khz_impulseResponse in impulse.c). */
void khz_abaCore(const khzModel *m, khzData *d, const double *tau, double *qdd);

/* CRBA in two parts: composite inertias at q (in d->IA), then the joint-space
 * mass matrix block of one tree (root = its root body; 0 = every tree) into
 * the n x n M, global dof k going to row local[k] (local NULL: identity).
 * Trees do not couple, so M is block diagonal over them. */
void khz_compositeInertia(const khzModel *m, khzData *d, const double *q);
void khz_crbaBlock(const khzModel *m, const khzData *d, int root, const int *local, int n,
                   double *M);

#endif
