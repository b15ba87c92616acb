/* phases.h — the contact state machine of Drumwright's Fig. 2: each body
 * pair in contact is either impacting (impulses this tick) or resting
 * (penalty forces). */
#ifndef KHZ_CONTACT_PHASES_H
#define KHZ_CONTACT_PHASES_H

#include "khz/khz.h"

/* A resting pair's landing on more of its points (phases.c, beyond the
 * paper), which impacts again with impulses at its points (impulse.c) */
typedef struct khzLanding {
  int on;            /* 1: this pair lands this tick */
  double resting;    /* the depth of the points it rests on (m) */
  int nspec;         /* points not yet in contact that land within the step (at most 5) */
  double spec_pos[5][3]; /* world */
  double spec_depth[5]; /* their depths along the pair's normal (< resting: a gap) */
  double frac;       /* the part of the step that passes before the landing (0: it has landed) */
} khzLanding;

/* Every pair found this tick: a new pair approaching faster than
 * contact.impact_velocity impacts, another new pair rests; a pair already in
 * contact impacts again only when it approaches faster than
 * contact.reimpact_velocity (opt-in), or, when the scene sets none, a pair
 * with automatic gains under the multi-point method whose body lands on
 * more of its points (phases.c, find_landing): landing[i].on (ncontact;
 * NULL: no such re-impacts) is then 1, and its impulses act at its points.
 * A new pair's initial overlap, and a landing's depth past the points the
 * pair rests on, go into its spring offset. Returns 1 if any pair impacts. */
int khz_phaseClassify(const khzModel *m, khzData *d, khzLanding *landing);

/* An upper bound on the speed at which any point of pair c approaches
 * along its normal: its contact points and the support points of its
 * moving bodies' geoms (phases.c, find_landing, which skips a pair that
 * nothing approaches as fast as a landing); INFINITY for a geom without
 * bounds (tests) */
double khz_phaseApproachBound(const khzModel *m, const khzData *d, const khzContact *c);

/* A third body's impact sends the resting pairs of the trees it hit to
 * impulses too, level by level while the impacting pairs fit one cluster.
 * Returns the number of impacting pairs. */
int khz_phaseSpread(const khzModel *m, khzData *d);

/* After the impulses every pair in contact rests. */
void khz_phaseSettle(khzData *d);

/* The contact method "none": every persistent pair is forgotten. */
void khz_phaseForget(const khzModel *m, khzData *d);

#endif
