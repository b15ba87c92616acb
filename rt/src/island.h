/* island.h — islands and sleeping bodies (rt-private; docs/sleeping.md).
 * The step calls these around the integrator, the collision pass asks which
 * pairs sleep and wakes islands that an awake body touches. */
#ifndef KHZ_ISLAND_H
#define KHZ_ISLAND_H

#include <stddef.h>

#include "khz/khz.h"

/* 1 when some body sleeps (O(1): d->body_sleep[0], the world's entry, holds
 * the number of sleeping trees) */
static inline int khz_anyAsleep(const khzData *d) { return d->body_sleep[0] > 0; }

/* 1 when every tree that may sleep sleeps (O(1): the sleeping roots counted
 * in d->body_sleep[0] against the model's m->ntree_moving): nothing moves,
 * nothing collides, and only inputs (khz_islandWakeOnInputs) or khz_wake
 * can change that */
static inline int khz_allAsleep(const khzModel *m, const khzData *d) {
  return d->body_sleep[0] > 0 && d->body_sleep[0] == m->ntree_moving;
}

/* a pair of bodies that both sleep or are welded to the world, one at least
 * asleep: not collided, its pair slot kept as it was */
int khz_pairAsleep(const khzModel *m, const khzData *d, int b0, int b1);

/* a pair of one sleeping body and one awake moving body: if it touches, the
 * sleeping island wakes (collision/pairs.c) */
int khz_pairMixed(const khzModel *m, const khzData *d, int b0, int b1);

/* Start of a step, after the torques are clamped: wakes the islands of the
 * sleeping bodies that a torque, a wrench or a non-zero velocity addresses,
 * and every island when sleeping is off or contact is off. */
void khz_islandWakeOnInputs(const khzModel *m, khzData *d);

/* After the integrator: the sleeping trees get back their q and qd (zero)
 * exactly, and no acceleration. */
void khz_islandFreeze(const khzModel *m, khzData *d, const double *q0, const double *v0);

/* End of a step (after the contact method's end): islands of the awake free
 * bodies by union-find over this step's contacts, each tree's idle time,
 * and islands idle for m->sleep.time go to sleep (qd set to zero, the
 * kinematics updated). Returns 1 when some island fell asleep. */
int khz_islandUpdate(const khzModel *m, khzData *d);

/* m->body_reach (khz_compile, after the collision data) */
void khz_islandReach(khzModel *m);

/* scratch bytes khz_islandUpdate takes from d's stack */
size_t khz_islandStackBytes(const khzModel *m);

#endif
