/* contact.h — the contact-method interface that the step calls (rt-private).
 * A method is four stages around the integrator: begin (at the step's
 * start: collision, impacts, the points that carry force), implicit (after
 * the first integrator stage: the forces solved implicitly, held over the
 * step), forces (at every integrator stage), end (at the final state).
 * Drumwright's multi-point penalty method and the deepest-point baseline
 * share the penalty stages; a velocity-level method (LCP, PEG) arrives as a
 * sibling behind the same calls. The sweep for small fast bodies
 * (sweep.h) runs after the step whatever the method. */
#ifndef KHZ_CONTACT_H
#define KHZ_CONTACT_H

#include <stddef.h>

#include "khz/khz.h"

/* Start of a step at the current kinematics: collision detection, the Fig. 2
 * phase of every pair, impulses for impacting pairs (velocity update of
 * d->qd), the points that carry each resting pair's force. */
void khz_contactBegin(const khzModel *m, khzData *d);

/* Contact forces at one integrator stage (after khz_forwardPass at the stage
 * state): added to d->fext. */
void khz_contactForces(const khzModel *m, khzData *d);

/* Right after the first integrator stage at the step's start state (q, qd),
 * with that stage's accelerations qdd: the contact forces integrated
 * implicitly (the automatic gains' stiffness and damping beyond the explicit
 * limit, and sliding friction), held constant over the step and added by
 * khz_contactForces from then on. Needs the articulated inertias that
 * stage's khz_abaCore left. Returns 1 when it set such forces (the first
 * stage must then be evaluated again), else 0. */
int khz_contactImplicit(const khzModel *m, khzData *d, const double *qd, const double *qdd);

/* End of a step at the final state (after khz_forwardPass). */
void khz_contactEnd(const khzModel *m, khzData *d);

/* scratch bytes the contact stages may take from d's stack at once */
size_t khz_contactStackBytes(const khzModel *m);

#endif
