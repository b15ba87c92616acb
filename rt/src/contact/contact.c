/* contact.c — the contact stages of a step, in order (Drumwright, "A fast
 * and stable penalty method for rigid body simulation"):
 *   collision -> gains -> phases (Fig. 2) -> impulses -> point selection
 *   (bottom of the volume, §III-A) -> stability limits, then the implicit
 * part after the first integrator stage (automatic gains), penalty forces at
 * every integrator stage and the integral / friction anchors at the end.
 * Each stage lives in its own file of this folder; this one only runs them.
 */
#include "contact.h"

#include <string.h>

#include "bottom.h"
#include "collision/collision.h"
#include "dynamics.h"
#include "impulse.h"
#include "lcp/lcp.h"
#include "peg/peg.h"
#include "penalty.h"
#include "phases.h"
#include "sweep.h"

/* the articulated inertias at the current q: the impulse response and the
 * effective masses need them. ABA's inertias alone (khz_abaInertias, the
 * bits khz_abaCore leaves): its bias forces, f_ext and qdd, which a full
 * ABA with tau = 0 computed here, are read by nothing before the first
 * integrator stage computes them again */
static void articulated_inertias(const khzModel *m, khzData *d) { khz_abaInertias(m, d); }

/* the tree limits' articulated inertias: those of the step's dynamics, with
 * the joints' damping implicit over h (accel: khz_abaCoreDamped, Euler every
 * dof, RK4 the stiff ones). The inertias alone (the limits read nothing
 * else), held for the first integrator stage at the same q
 * (khz_abaInertiasHeld): it takes them instead of computing them again */
static void damped_inertias(const khzModel *m, khzData *d) {
  khz_abaInertiasHeld(m, d, d->timestep, m->integrator != KHZ_INT_EULER);
}

void khz_contactBegin(const khzModel *m, khzData *d) {
  d->ncontact = d->ncpoint = 0;
  if (d->contact_method == KHZ_CONTACT_NONE) {
    khz_phaseForget(m, d);
    return;
  }
  khz_collideStep(m, d);
  if (!d->ncontact) return;

  size_t mark = khz_stackMark(d);
  double *dqd = khz_stackAlloc(d, (size_t)m->nv * sizeof(double));
  double *dvel = khz_stackAlloc(d, 6 * (size_t)m->nbody * sizeof(double));
  khzLanding *landing = khz_stackAlloc(d, (size_t)d->ncontact * sizeof(khzLanding)); /* re-impacts at points */
  int scratch = dqd && dvel, inertias = 0;
  if (scratch && khz_penaltyNeedsInertias(m, d)) {
    articulated_inertias(m, d);
    inertias = 1;
  }
  khz_penaltyGains(m, d, inertias, dqd, dvel);
  if (khz_phaseClassify(m, d, landing) && khz_phaseSpread(m, d) && scratch) {
    if (!inertias) articulated_inertias(m, d);
    inertias = 1;
    khz_resolveImpacts(m, d, landing);
  }
  khz_phaseSettle(d);
  khz_selectPoints(m, d);
  /* the limits of robots' pairs take the articulated inertias of the
   * step's dynamics, with the joints' implicit damping (q has not moved:
   * the impulses changed only qd); the gains and impulses above took them
   * without (an impulse acts in an instant) */
  int trees = scratch && khz_penaltyTreeLimits(m, d);
  if (trees) damped_inertias(m, d);
  khz_penaltyLimits(m, d, trees ? dqd : NULL);
  khz_stackFree(d, mark);
}

void khz_contactForces(const khzModel *m, khzData *d) { khz_penaltyForces(m, d); }

int khz_contactImplicit(const khzModel *m, khzData *d, const double *qd, const double *qdd) {
  int any = 0;
  for (int i = 0; i < d->ncontact; i++) any |= d->contact[i].kv_implicit > 0 || d->contact[i].kp_implicit > 0;
  if (!any) return 0;
  size_t mark = khz_stackMark(d);
  double *vfree = khz_stackAlloc(d, (size_t)m->nv * sizeof(double));
  double *dqd = khz_stackAlloc(d, (size_t)m->nv * sizeof(double));
  double *dvel = khz_stackAlloc(d, 6 * (size_t)m->nbody * sizeof(double));
  double *tmp = khz_stackAlloc(d, 6 * (size_t)m->nbody * sizeof(double));
  int done = vfree && dqd && dvel && tmp;
  if (done) {
    /* the velocity the step would end with without the implicit part */
    double h = d->timestep;
    for (int k = 0; k < m->nv; k++) vfree[k] = qd[k] + h * qdd[k];
    khz_penaltyImplicit(m, d, vfree, dqd, dvel, tmp);
  }
  khz_stackFree(d, mark);
  return done;
}

void khz_contactEnd(const khzModel *m, khzData *d) { khz_penaltyEnd(m, d); }

size_t khz_contactStackBytes(const khzModel *m) {
  /* per-pair approach speeds, one pair's bottom selection (positions,
   * depths, projections, angles, flags, order), alignment slack,
   * khz_contactBegin's scratch (held through the limits) and the limits'
   * matrices; then the impulses and the implicit part */
  size_t contact = (size_t)m->npair_max * sizeof(double) + 6 * (size_t)m->max_points * sizeof(double) +
                   2 * (size_t)m->max_points * sizeof(int) + 64 * 8 +
                   ((size_t)m->nv + 6 * (size_t)m->nbody) * sizeof(double) +
                   (size_t)m->npair_max * sizeof(khzLanding) + 5 * 64 +
                   khz_penaltyLimitsStackBytes(m);
  size_t implicit = (2 * (size_t)m->nv + 12 * (size_t)m->nbody) * sizeof(double) + 4 * 64 +
                    khz_penaltyImplicitStackBytes(m);
  /* the LCP method runs instead of these stages (its step falls back to
   * them only after freeing its own scratch) */
  size_t peg = khz_pegStackBytes(m);
  size_t lcp = khz_lcpStackBytes(m) > peg ? khz_lcpStackBytes(m) : peg, penalty = contact + khz_impulseStackBytes(m) + implicit;
  /* the sweep runs after the stages have freed theirs */
  size_t most = lcp > penalty ? lcp : penalty, sweep = khz_sweepStackBytes(m);
  return most > sweep ? most : sweep;
}
