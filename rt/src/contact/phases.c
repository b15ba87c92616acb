/* phases.c — the Fig. 2 state machine of Drumwright's penalty method, per
 * body pair: new contacts that approach faster than eps are impacts, the rest
 * rest; a resting pair goes back to impulses when a third body's impact
 * reaches one of its bodies (and, beyond the paper, the resting pairs behind
 * them, and opt-in re-impacts). The impulses themselves are in impulse.c.
 */
#include "phases.h"

#include <math.h>
#include <string.h>

#include "dynamics.h"
#include "impulse.h"

/* minimum relative normal velocity over a pair's points (negative = approaching) */
static double approach_speed(const khzModel *m, const khzData *d, const khzContact *c) {
  double smin = INFINITY;
  for (int k = 0; k < c->npoint; k++) {
    const khzContactPoint *p = d->cpoint + c->point_adr + k;
    double v0[3], v1[3];
    khz_pointVelocity(m, d, c->body[0], p->pos, v0);
    khz_pointVelocity(m, d, c->body[1], p->pos, v1);
    double sn = (v0[0] - v1[0]) * c->normal[0] + (v0[1] - v1[1]) * c->normal[1] +
                (v0[2] - v1[2]) * c->normal[2];
    smin = fmin(smin, sn);
  }
  return smin;
}

int khz_phaseClassify(const khzModel *m, khzData *d) {
  /* Beyond the paper (opt-in, contact.reimpact_velocity): a pair in contact
   * whose points approach faster than that impacts again, e.g. a tumbling
   * body's second edge landing on the body it already touches. Its overlap
   * is not released gradually like a new pair's: it carries load. */
  double eps = m->contact.impact_velocity;
  double reimpact = m->contact.reimpact_velocity > 0 ? m->contact.reimpact_velocity : INFINITY;
  int any_impact = 0;
  for (int i = 0; i < d->ncontact; i++) {
    khzContact *c = d->contact + i;
    khzPairState *ps = d->pair + c->slot;
    double sn = approach_speed(m, d, c);
    int fresh = ps->phase == KHZ_PHASE_NONE;
    /* a new pair: the overlap it starts with is released gradually (a
     * step's travel, an initial overlap, or a contact found late) */
    if (fresh && c->npoint) ps->offset = fmax(ps->offset, d->cpoint[c->deepest].depth);
    if (fresh) ps->phase = sn < -eps ? KHZ_PHASE_IMPACT : KHZ_PHASE_RESTING;
    else if (sn < -reimpact) ps->phase = KHZ_PHASE_IMPACT;
    any_impact |= ps->phase == KHZ_PHASE_IMPACT;
  }
  return any_impact;
}

int khz_phaseSpread(const khzModel *m, khzData *d) {
  /* The paper sends the resting pairs of the bodies a third body hit (of
   * their articulated trees: an impulse moves the whole tree) to impulses.
   * Beyond the paper, level by level, so do the resting pairs behind those,
   * as long as the impacting pairs stay within KHZ_CLUSTER_PAIRS: a heavy
   * body landing on a column of light ones moves them all, and springs alone
   * below it would let the column's lowest body be driven into the ground.
   * Order-independent: each level is found before it is marked. */
  size_t mark = khz_stackMark(d);
  int *hit = khz_stackAlloc(d, 2 * (size_t)m->nbody * sizeof(int));
  if (hit) {
    int *next = hit + m->nbody, nimpacting = 0;
    memset(hit, 0, 2 * (size_t)m->nbody * sizeof(int));
    for (int i = 0; i < d->ncontact; i++) {
      const khzContact *ci = d->contact + i;
      if (d->pair[ci->slot].phase != KHZ_PHASE_IMPACT) continue;
      nimpacting++;
      for (int s = 0; s < 2; s++)
        if (!khz_bodyStatic(m, ci->body[s])) hit[m->body_root[ci->body[s]]] = 1;
    }
    for (int level = 0; level < m->nbody; level++) {
      int found = 0;
      for (int j = 0; j < d->ncontact; j++) {
        const khzContact *cj = d->contact + j;
        if (d->pair[cj->slot].phase != KHZ_PHASE_RESTING) continue;
        for (int t = 0; t < 2; t++)
          if (!khz_bodyStatic(m, cj->body[t]) && hit[m->body_root[cj->body[t]]]) found++, t = 2;
      }
      if (!found || (level > 0 && nimpacting + found > KHZ_CLUSTER_PAIRS)) break;
      memset(next, 0, (size_t)m->nbody * sizeof(int));
      for (int j = 0; j < d->ncontact; j++) {
        const khzContact *cj = d->contact + j;
        if (d->pair[cj->slot].phase != KHZ_PHASE_RESTING) continue;
        int touches = 0;
        for (int t = 0; t < 2; t++)
          touches |= !khz_bodyStatic(m, cj->body[t]) && hit[m->body_root[cj->body[t]]];
        if (!touches) continue;
        d->pair[cj->slot].phase = KHZ_PHASE_IMPACT;
        for (int t = 0; t < 2; t++)
          if (!khz_bodyStatic(m, cj->body[t])) next[m->body_root[cj->body[t]]] = 1;
      }
      nimpacting += found;
      for (int b = 0; b < m->nbody; b++) hit[b] |= next[b];
    }
  }
  khz_stackFree(d, mark);
  int nimpact = 0;
  for (int i = 0; i < d->ncontact; i++) nimpact += d->pair[d->contact[i].slot].phase == KHZ_PHASE_IMPACT;
  return nimpact;
}

void khz_phaseSettle(khzData *d) {
  for (int i = 0; i < d->ncontact; i++) d->pair[d->contact[i].slot].phase = KHZ_PHASE_RESTING;
}

void khz_phaseForget(const khzModel *m, khzData *d) {
  for (int k = 0; k < m->npair_max; k++) {
    if (d->pair[k].geom[0] < 0) continue;
    memset(&d->pair[k], 0, sizeof d->pair[k]);
    d->pair[k].geom[0] = d->pair[k].geom[1] = -1;
  }
}
