/* sweep.h — continuous collision for small fast free bodies: their motion
 * over a step is clamped at the first geom their path enters. */
#ifndef KHZ_CONTACT_SWEEP_H
#define KHZ_CONTACT_SWEEP_H

#include "khz/khz.h"

/* After a step, with the kinematics at the step's end and q0 the positions
 * at its start: puts every small fast free body whose path entered a plane,
 * box, cylinder or hull back at the time of impact (slightly inside).
 * Returns 1 when it moved a body (the kinematics must then be recomputed). */
int khz_contactSweep(const khzModel *m, khzData *d, const double *q0);

/* Bytes of scratch khz_contactSweep takes from the data's stack at most. */
size_t khz_sweepStackBytes(const khzModel *m);

#endif
