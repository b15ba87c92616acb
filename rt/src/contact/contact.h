/* contact.h — the contact-method interface that the step calls (rt-private).
 * A method is three stages around the integrator: begin (at the step's
 * start: collision, impacts, the points that carry force), forces (at every
 * integrator stage), end (at the final state). Drumwright's multi-point
 * penalty method and the deepest-point baseline share the penalty stages;
 * a velocity-level method (LCP, PEG) arrives as a sibling behind the same
 * three calls. */
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

/* After the integration, at the final state: the velocity changes of the
 * contact forces integrated implicitly (the automatic gains' damping beyond
 * the explicit limit). Leaves the forward pass at (q, qd). */
void khz_contactImplicit(const khzModel *m, khzData *d);

/* End of a step at the final state (after khz_forwardPass). */
void khz_contactEnd(const khzModel *m, khzData *d);

/* scratch bytes the contact stages may take from d's stack at once */
size_t khz_contactStackBytes(const khzModel *m);

#endif
