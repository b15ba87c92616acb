/* bottom.h — the points of a resting pair that carry its force: the bottom of
 * the intersection volume (Drumwright, "A fast and stable penalty method for
 * rigid body simulation", §III-A), or the deepest point alone (the baseline). */
#ifndef KHZ_CONTACT_BOTTOM_H
#define KHZ_CONTACT_BOTTOM_H

#include "khz/khz.h"

/* Bottom of the intersection volume, O(N lg N): marks in bottom[] the points
 * whose projection onto the contact plane lies outside the polygon built from
 * the deeper points. pos: n world points (3 each), depth: their distances
 * below the contact plane, normal: the plane normal. Scratch from d's stack.
 * Returns the number of bottom points, or -1 when the stack is full (then
 * every point is marked, a safe fallback). */
int khz_bottomOfVolume(khzData *d, const double *pos, const double *depth, int n,
                       const double normal[3], int *bottom);

/* For every resting pair: marks the points that carry force (pts[k].bottom)
 * and each one's share of eq. 1's count (pts[k].share), by the bottom of the
 * volume (KHZ_CONTACT_PENALTY) or the deepest point (KHZ_CONTACT_DEEPEST). */
void khz_selectPoints(const khzModel *m, khzData *d);

#endif
