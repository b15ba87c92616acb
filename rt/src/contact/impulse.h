/* impulse.h — impulses for the pairs that impact in a tick (the impulse
 * branch of Drumwright's Fig. 2), clusters of coupled pairs solved together. */
#ifndef KHZ_CONTACT_IMPULSE_H
#define KHZ_CONTACT_IMPULSE_H

#include <stddef.h>

#include "khz/khz.h"
#include "phases.h"

/* the largest cluster of impacting pairs whose impulses are solved together */
#define KHZ_CLUSTER_PAIRS 32

/* Impulses for the pairs in KHZ_PHASE_IMPACT, with the articulated inertias
 * of khz_abaCore at the current q (Newton's restitution on each pair's
 * centroid's approach speed before them; a landing, landing[i].on = 1
 * (ncontact, may be NULL), at its points, each on its own approach).
 * Updates d->qd and the forward pass. */
void khz_resolveImpacts(const khzModel *m, khzData *d, const khzLanding *landing);

/* scratch bytes the impulses may take from d's stack (khz_resolveImpacts
 * and one cluster) */
size_t khz_impulseStackBytes(const khzModel *m);

#endif
