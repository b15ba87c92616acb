/* phases.h — the contact state machine of Drumwright's Fig. 2: each body
 * pair in contact is either impacting (impulses this tick) or resting
 * (penalty forces). */
#ifndef KHZ_CONTACT_PHASES_H
#define KHZ_CONTACT_PHASES_H

#include "khz/khz.h"

/* Every pair found this tick: a new pair approaching faster than
 * contact.impact_velocity impacts, another new pair rests; a pair already in
 * contact impacts again only when it approaches faster than
 * contact.reimpact_velocity (opt-in). A new pair's initial overlap becomes
 * its spring offset. Returns 1 if any pair impacts. */
int khz_phaseClassify(const khzModel *m, khzData *d);

/* A third body's impact sends the resting pairs of the trees it hit to
 * impulses too, level by level while the impacting pairs fit one cluster.
 * Returns the number of impacting pairs. */
int khz_phaseSpread(const khzModel *m, khzData *d);

/* After the impulses every pair in contact rests. */
void khz_phaseSettle(khzData *d);

/* The contact method "none": every persistent pair is forgotten. */
void khz_phaseForget(const khzModel *m, khzData *d);

#endif
