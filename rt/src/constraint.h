/* constraint.h — equality constraints (connect, weld) on the articulated
 * bodies (rt-private; see constraint.c). */
#ifndef KHZ_CONSTRAINT_H
#define KHZ_CONSTRAINT_H

#include <stddef.h>

#include "khz/khz.h"

/* Checks constraint i of a spec with nbody bodies: known bodies, two
 * different ones, finite anchors, a non-zero quaternion. 0, or -1 with err. */
int khz_constraintCheck(const khzEqualitySpec *e, int i, int nbody, char *err, size_t errsz);

/* Copies the spec's constraints into m (m->neq of them, storage laid out) and
 * completes those with at_q0: body2's point and the weld's orientation taken
 * from the pose at m->q0. 0, or -1 with err (out of memory). */
int khz_constraintCompile(khzModel *m, const khzEqualitySpec *eq, char *err, size_t errsz);

/* Scratch a step's constraint solve takes from the data's stack. */
size_t khz_constraintStackBytes(const khzModel *m);

/* After khz_abaCore (or khz_abaCoreDamped) at the forward pass of (q, qd):
 * adds to qdd the accelerations of the constraint forces that make every
 * constraint's relative acceleration follow the Baumgarte target (see
 * constraint.c). Nothing when m->neq is 0. */
void khz_constraintAccel(const khzModel *m, khzData *d, const double *q, const double *qd,
                         double *qdd);

/* After a semi-implicit Euler step's position update: one Gauss-Newton
 * projection of d->q onto the constraints (mass metric, J and M at the new
 * q; see constraint.c). Overwrites the forward pass and the articulated
 * inertias with those at the new q. Nothing when m->neq is 0. */
void khz_constraintProject(const khzModel *m, khzData *d);

#endif
