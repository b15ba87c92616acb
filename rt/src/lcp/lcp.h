/* lcp.h — Stewart & Trinkle's velocity-level time-stepping with contact and
 * Coulomb friction as a linear complementarity problem (rt-private): the
 * contact method KHZ_CONTACT_LCP, a sibling of the penalty method behind the
 * step (docs/lcp.md). */
#ifndef KHZ_LCP_H
#define KHZ_LCP_H

#include <stddef.h>

#include "khz/khz.h"

/* contact points one pair contributes to the LCP (the spread-out corners of
 * its contact patch) */
#define KHZ_LCP_PAIR_POINTS 4
/* passes of the active-set re-check (the solve, then new violations at
 * q+ added and the LCP solved again) */
#define KHZ_LCP_PASSES 6
/* the depth (m) contacts come to rest at rather than exactly touching, so
 * that a resting pair (a box on a box: both fall alike in the free motion)
 * is still found at the next step's prediction q + h v_free */
#define KHZ_LCP_SKIN 1e-5
/* the LP-depth gap (contact.lcp_gap = KHZ_LCP_GAP_LPDEPTH, lpgap.h): a pair
 * of polytopes joins the LCP when its gap at the predicted positions is at
 * most KHZ_LCP_LP_REACH (as the narrow phase's pairs join when their depth
 * reaches 0 with KHZ_LCP_SKIN: contacts within 1e-5 m), and at the re-check
 * when it is below -KHZ_LCP_LP_RECHECK (the skin's 1e-6 beyond rest) */
#define KHZ_LCP_LP_REACH 1e-5
#define KHZ_LCP_LP_RECHECK 1e-6

/* two points of a patch closer than this in its plane (m) are one point,
 * and a third point must be this far (relative to the patch's length) off
 * the line of the first two: coincident or collinear points give the LCP
 * dependent normal rows, and Lemke's floating-point pivots on them end on
 * a ray (a corner of each box of an edge-on-edge pair, 1e-8 m apart in the
 * plane and 3.7e-5 m along the normal, were two points: 66 of the 82 failed
 * first Lemke calls of the 5-box stack's first 300 steps had such a pair) */
#define KHZ_LCP_POINT_SEP 1e-6
#define KHZ_LCP_POINT_OFFLINE 1e-3

/* One step of h seconds of the LCP method at d's state with d->tau_applied
 * already clamped: the free velocity, collision at the predicted positions,
 * the LCP of the paper's eq. (29) over the active contacts solved by Lemke,
 * the active set re-checked at q+, the step cut into substeps at the time
 * an impact's contact closes (up to 8); writes d->q, d->qd, d->qdd and the
 * contact list (d->contact, d->cpoint with each point's force: the last
 * substep's). Returns 0,
 * or -1 when the LCP could not be solved (pivot budget, ray termination,
 * more contact points than the capacity, scratch exhausted, the first
 * pass past d->lcp_time_limit, counted in d->lcp_timeouts): then
 * KHZ_WARN_LCP is counted, d->q and d->qd are as the step found them and the caller steps
 * with the penalty method instead. Never allocates. */
int khz_lcpStep(const khzModel *m, khzData *d, double h);

/* Contact points of one-point pairs one LCP (one contact island) holds
 * at most (pairs of several points share a cone, and more of their points
 * fit in the same LCP size); khz_lcpDirections: the friction directions k. */
int khz_lcpMaxPoints(const khzModel *m);

/* the velocity without contact after a step h (eq. 29's M^-1 (h k) term):
 * passive and applied torques through ABA at (q, qd); tau and qdd are
 * scratch (nv), vfree (nv) the result; leaves the kinematics at (q, qd).
 * Shared by the LCP and PEG time-stepping. */
void khz_lcpFreeVelocity(const khzModel *m, khzData *d, double *tau, double *qdd, double *vfree,
                         double h);
int khz_lcpDirections(const khzModel *m);

/* The settings of the stepper's first Lemke attempt on lk (made by
 * khz_lemkeInit): its tie and re-inversion tolerances (benchmarks). */
struct khzLemke;
void khz_lcpLemkeSettings(struct khzLemke *lk);

/* Scratch bytes khz_lcpStep takes from d's stack. */
size_t khz_lcpStackBytes(const khzModel *m);

/* Observer of every LCP solved (tests and benchmarks only; NULL by
 * default): the problem, the solution and Lemke's status. */
typedef void (*khzLcpObserver)(void *user, int n, const double *M, const double *q,
                               const double *z, int status);
void khz_lcpSetObserver(khzLcpObserver fn, void *user);

/* Warm start (on by default): each island's LCP is first tried with the
 * complementary basis its pairs ended in at the last step (one
 * factorisation and a feasibility check, khz_lemkeWarm), then cold. Off:
 * every LCP is solved by Lemke from scratch (benchmarks, tests). Process-wide. */
void khz_lcpSetWarmStart(int on);

/* Bytes of the warm-start record khzData keeps (d->lcp_warm). */
size_t khz_lcpWarmBytes(const khzModel *m);

/* What the LCPs took, counted while an observer is set (benchmarks):
 * LCPs that needed a solve (q >= 0 excluded) and their rows, warm tries and
 * those that solved, Lemke calls (retries included) and their pivots, steps
 * cut at an impact's closing time (substeps split off), LPs of the LP-depth
 * gap that failed (the pair took the narrow phase's points). */
typedef struct khzLcpCounters {
  long solves, rows, warm_tries, warm_hits, lemke_calls, pivots, splits, lp_failures;
} khzLcpCounters;
khzLcpCounters khz_lcpGetCounters(void);
void khz_lcpResetCounters(void);

#endif
