/* contact.h — the contact methods (rt-private): Drumwright's multi-point
 * penalty method with impulses for impacts, and the deepest-point baseline. */
#ifndef KHZ_CONTACT_H
#define KHZ_CONTACT_H

#include "khz/khz.h"

/* Bottom of the intersection volume (Drumwright §III-A), O(N lg N): marks in
 * bottom[] the points whose projection onto the contact plane lies outside
 * the polygon built from the deeper points. pos: n world points (3 each),
 * depth: their distances below the contact plane, normal: the plane normal.
 * Scratch from d's stack. Returns the number of bottom points, or -1 when the
 * stack is full (then every point is marked, a safe fallback). */
int khz_bottomOfVolume(khzData *d, const double *pos, const double *depth, int n,
                       const double normal[3], int *bottom);

/* Start of a step at the current kinematics: collision detection, the Fig. 2
 * phase of every pair, impulses for impacting pairs (velocity update of d->qd),
 * bottom points of resting pairs. */
void khz_contactBegin(const khzModel *m, khzData *d);

/* Penalty forces of the resting pairs at one integrator stage (after
 * khz_forwardPass at the stage state): added to d->fext. */
void khz_contactForces(const khzModel *m, khzData *d);

/* End of a step at the final state (after khz_forwardPass): integral terms
 * and friction anchors move on. */
void khz_contactEnd(const khzModel *m, khzData *d);

/* 1 if body b and all its ancestors are welded (b <= 0: the world). */
int khz_bodyStatic(const khzModel *m, int b);

/* World velocity of the material point x of body b at the current forward pass. */
void khz_pointVelocity(const khzModel *m, const khzData *d, int b, const double x[3], double vel[3]);

/* impulse.c: impulses for the pairs in KHZ_PHASE_IMPACT (Fig. 2), with the
 * articulated inertias of khz_abaCore at the current q (Newton's restitution
 * on each pair's centroid's approach speed before them). Updates
 * d->qd and the forward pass. */
void khz_resolveImpacts(const khzModel *m, khzData *d);

/* the largest cluster of impacting pairs whose impulses are solved together */
#define KHZ_CLUSTER_PAIRS 32

/* scratch bytes the impulses may take from d's stack (the phase marks of
 * khz_contactBegin, khz_resolveImpacts, one cluster) */
size_t khz_impulseStackBytes(const khzModel *m);

/* Change of qd caused by the spatial impulse f (world-aligned, at the body's
 * tree origin) on body b, with the articulated inertias left by khz_abaCore
 * at the current q (Mirtich's / Patil's articulated impulse response: the
 * impulse propagates to the root, then the velocity change back out).
 * dqd is added to; dvel (6 per body) receives each body's velocity change. */
void khz_impulseResponse(const khzModel *m, khzData *d, int b, const double f[6], double *dqd,
                         double *dvel);

/* Velocity change at x (world) of body b, dv_b, and at xq of body bq, dv_q
 * (zero unless bq is in b's tree), for the world impulse J at x on b. */
void khz_pointResponse(const khzModel *m, khzData *d, int b, const double x[3], const double J[3],
                       int bq, const double xq[3], double dv_b[3], double dv_q[3], double *dqd,
                       double *dvel);

#endif
