/* phases.c — the Fig. 2 state machine of Drumwright's penalty method, per
 * body pair: new contacts that approach faster than eps are impacts, the rest
 * rest; a resting pair goes back to impulses when a third body's impact
 * reaches one of its bodies (and, beyond the paper, the resting pairs behind
 * them, and opt-in re-impacts). The impulses themselves are in impulse.c.
 */
#include "phases.h"

#include <math.h>
#include <string.h>

#include "collision/collision.h"
#include "dynamics.h"
#include "impulse.h"
#include "penalty.h"
#include "spatial.h"

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

/* the normal velocity of body[0] against body[1] at world point x (< 0:
 * approaching) */
static double normal_speed(const khzModel *m, const khzData *d, const khzContact *c, const double x[3]) {
  double v0[3], v1[3];
  khz_pointVelocity(m, d, c->body[0], x, v0);
  khz_pointVelocity(m, d, c->body[1], x, v1);
  return (v0[0] - v1[0]) * c->normal[0] + (v0[1] - v1[1]) * c->normal[1] + (v0[2] - v1[2]) * c->normal[2];
}

/* v turned by angle |w| t about w (Rodrigues) */
static void turn(const double v[3], const double w[3], double t, double out[3]) {
  double a = sqrt(khzu_dot3(w, w)) * t;
  if (!(fabs(a) > 0)) {
    khzu_copy3(out, v);
    return;
  }
  double k[3] = {w[0] * t / a, w[1] * t / a, w[2] * t / a}, kv[3], ca = cos(a), sa = sin(a), kd = khzu_dot3(k, v);
  khzu_cross(kv, k, v);
  for (int j = 0; j < 3; j++) out[j] = v[j] * ca + kv[j] * sa + k[j] * kd * (1 - ca);
}

/* Beyond the paper: a resting pair with automatic gains (multi-point
 * method) whose body lands on more of its points, a body turning about the
 * edge it rests on down onto its second edge, rim or end (Housner's rocking
 * block). A point lands when it approaches faster than the automatic spring
 * can stop within its rest depth (KHZ_LANDING_SPEED |g| / omega: a
 * critically damped spring of frequency omega stops a point arriving at v
 * within about v / omega and holds a body up |g| / omega^2 deep) and comes
 * within the step as deep as the points the pair rests on (those that do not
 * approach that fast). The narrow phase finds only the points already in
 * contact: the rim samples of a cap next to the edge it turns about enter
 * the contact steps before the far rim, and a landing solved on them alone
 * stops the body about a chord (tried: d401b3c). So the point of each
 * moving body that will be deepest after the step (its support point along
 * the normal, at the pose it turns to in the step) counts too, at its
 * depth now (a gap), when it lands within the step: the far rim, corner or
 * end (a speculative contact). L: the landing, with the part of the step
 * that passes before it (the earliest landing point's gap over its travel
 * in the step). Returns the depth of the points already past the resting
 * ones (>= 0), or -1 when nothing lands. */
#define KHZ_LANDING_SPEED 2.0
#define KHZ_LANDING_TILT 1e-3 /* rad */
/* An upper bound on the speed at which any point find_landing looks at
 * approaches along the pair's normal n: with khz_pointVelocity's v_s(x) =
 * v_s + w_s x (x - r_s) about side s's tree origin r_s, which is vo_s +
 * w_s x (x - o_s) about its body's origin o_s with vo_s = v_s(o_s), n .
 * v_s(x) = n . vo_s + (x - o_s) . (n x w_s), so |n . v_s(x)| <= |n . vo_s|
 * + |n x w_s| |x - o_s| for the pair's points and for the support points of
 * a moving body's geom, which lie in its bounding sphere (centre and radius
 * in the geom frame, the geom at geom_pos in its body's frame). Only the
 * normal parts count: a body rolling or sliding on the floor (a humanoid lying down)
 * moves its points along the floor, not into it (|v_s| + |w_s| |x - r_s|
 * before, about the tree's origin: a foot 1 m from the torso turning at
 * 0.05 rad/s was past the landing speed, and such pairs went to the
 * support points every step). The rounding of the computed speeds is far
 * below the margin find_landing keeps (the bound 1 % under vth).
 * INFINITY where a geom has no bound. */
double khz_phaseApproachBound(const khzModel *m, const khzData *d, const khzContact *c) {
  const khzContactPoint *pts = d->cpoint + c->point_adr;
  const khzColModel *cm = m->collision;
  double bound = 0;
  for (int s = 0; s < 2; s++) {
    int b = c->body[s];
    if (b <= 0) continue; /* the world: khz_pointVelocity gives zero */
    /* about b's own origin o (a foot's points lie near it, far from the
     * tree's origin): v_s(x) = vo + w_s x (x - o), vo the velocity at o */
    const double *v = d->vtree + 6 * b, *o = d->xpos + 3 * b;
    double vo[3], far = 0;
    khz_pointVelocity(m, d, b, o, vo);
    for (int k = 0; k < c->npoint; k++) {
      double r[3] = {pts[k].pos[0] - o[0], pts[k].pos[1] - o[1], pts[k].pos[2] - o[2]};
      far = fmax(far, khzu_norm3(r));
    }
    for (int t = 0; t < 2; t++) {
      int bt = c->body[t], g = c->geom[t];
      if (bt <= 0 || khz_bodyStatic(m, bt)) continue; /* find_landing takes no support point there */
      if (!cm || g < 0 || cm->geom[g].shape < 0 || cm->geom[g].shape == KHZ_SHAPE_PLANE) return INFINITY;
      const double *xb = d->xpos + 3 * bt;
      double r[3] = {xb[0] - o[0], xb[1] - o[1], xb[2] - o[2]};
      far = fmax(far, khzu_norm3(r) + khzu_norm3(m->geom_pos + 3 * g) + khzu_norm3(cm->geom[g].center) +
                          cm->geom[g].radius);
    }
    double nw[3];
    khzu_cross(nw, c->normal, v);
    bound += fabs(khzu_dot3(vo, c->normal)) + khzu_norm3(nw) * far;
  }
  return bound;
}

static double find_landing(const khzModel *m, const khzData *d, const khzContact *c, double vth, khzLanding *L) {
  const khzContactPoint *pts = d->cpoint + c->point_adr;
  double resting = -INFINITY, landed = -INFINITY, h = d->timestep;
  int lands = 0;
  /* nothing approaches as fast as vth (a pair at rest, most of the time):
   * the points all rest and no support point lands, the answer of the
   * loops below, which cost a settling body more than its narrow phase.
   * The factor keeps the bound above the rounding of the speeds' sums. */
  if (c->npoint && khz_phaseApproachBound(m, d, c) * 1.01 < vth) {
    L->frac = 1, L->nspec = 0;
    return -1;
  }
  for (int k = 0; k < c->npoint; k++)
    if (normal_speed(m, d, c, pts[k].pos) >= -vth) resting = fmax(resting, pts[k].depth);
  if (resting == -INFINITY) return -1; /* nothing rests: an impact of the whole pair, not a landing */
  L->frac = 1;
  for (int k = 0; k < c->npoint; k++) {
    /* a point on a curved surface (sphere, capsule, cylinder rim) is a
     * sample of it: a rolling cylinder's next rim sample comes down at
     * about its speed times the samples' angle, and is no landing. Its
     * landings are found from the exact surface, by the support points
     * below. */
    if (pts[k].round >= 0) continue;
    double sn = normal_speed(m, d, c, pts[k].pos);
    if (!(sn < -vth)) continue;
    /* found already as deep as the resting ones: it has landed. One not
     * yet that deep is not counted on its own approach: a rolling
     * cylinder's next contact points come down fast and arrive no deeper
     * (tried: 20 % off its rolling speed in test_contact_defaults o); the
     * body's support points below find what lands within the step. */
    if (pts[k].depth >= resting) landed = fmax(landed, pts[k].depth), L->frac = 0;
  }
  L->nspec = 0;
  const khzContactPoint *deep = d->cpoint + c->deepest;
  for (int s = 0; s < 2; s++) {
    int b = c->body[s], o = c->body[1 - s];
    if (b <= 0 || khz_bodyStatic(m, b)) continue;
    /* deeper for body[1] along +n, for body[0] along -n; the direction in
     * the body after it turns by its angular velocity against the other
     * for a step; tilted by KHZ_LANDING_TILT both ways along two tangents,
     * for the corners of an edge or face that lands level */
    double dir[3], w[3], rd[3], t[6];
    for (int j = 0; j < 3; j++) {
      dir[j] = (s ? 1 : -1) * c->normal[j];
      w[j] = d->cvel[6 * b + j] - (o > 0 ? d->cvel[6 * o + j] : 0);
    }
    turn(dir, w, -h, rd);
    /* the body's size: its origin to its farthest point along the normal */
    double far[3], spread;
    khzColShape shape; /* made once for the six support points */
    khz_geomShape(m, d, c->geom[s], &shape);
    khz_shape_support(&shape, rd, far);
    spread = sqrt((far[0] - d->xpos[3 * b]) * (far[0] - d->xpos[3 * b]) + (far[1] - d->xpos[3 * b + 1]) * (far[1] - d->xpos[3 * b + 1]) +
                  (far[2] - d->xpos[3 * b + 2]) * (far[2] - d->xpos[3 * b + 2]));
    khzu_orthogonal(t, rd);
    khzu_cross(t + 3, rd, t);
    for (int q = 0; q < 5 && L->nspec < 5; q++) {
      double e[3], p[3];
      for (int j = 0; j < 3; j++)
        e[j] = rd[j] + (q ? (q & 1 ? 1 : -1) * KHZ_LANDING_TILT * t[3 * ((q - 1) / 2) + j] : 0);
      khz_shape_support(&shape, e, p);
      double depth = deep->depth + (p[0] - deep->pos[0]) * dir[0] + (p[1] - deep->pos[1]) * dir[1] +
                     (p[2] - deep->pos[2]) * dir[2];
      double sn = normal_speed(m, d, c, p);
      if (!(sn < -vth && depth < resting)) continue;
      /* where the point is after the step, the body moved rigidly (turned
       * about its origin, not along the point's velocity: a rolling body's
       * point a step's turn behind its bottom comes down fast but arrives
       * at the bottom, no deeper), the other body's motion taken linearly;
       * it lands when that is past the resting depth by more than the
       * landing speed's step */
      double r[3], rr[3], vo[3] = {0, 0, 0}, pred = depth, wb[3];
      for (int j = 0; j < 3; j++) r[j] = p[j] - d->xpos[3 * b + j], wb[j] = d->cvel[6 * b + j];
      turn(r, wb, h, rr);
      if (o > 0 && !khz_bodyStatic(m, o)) khz_pointVelocity(m, d, o, p, vo);
      for (int j = 0; j < 3; j++) pred += (d->xpos[3 * b + j] + d->cvel[6 * b + 3 + j] * h + rr[j] - p[j] - vo[j] * h) * dir[j];
      if (!(pred >= resting + vth * h)) continue;
      /* one point per corner: a tilted direction on a round surface (a
       * sphere, capsule end or rim) moves the point by about the tilt times
       * its radius, a near-duplicate whose impulse would only be split
       * unevenly with the first (and set a capsule rolling) */
      int seen = 0;
      for (int r = 0; r < L->nspec; r++) {
        double dx = p[0] - L->spec_pos[r][0], dy = p[1] - L->spec_pos[r][1], dz = p[2] - L->spec_pos[r][2];
        seen |= sqrt(dx * dx + dy * dy + dz * dz) <= 10 * KHZ_LANDING_TILT * spread;
      }
      if (seen) continue;
      khzu_copy3(L->spec_pos[L->nspec], p);
      L->spec_depth[L->nspec++] = depth;
      lands = 1, L->frac = fmin(L->frac, (resting - depth) / (-sn * h));
    }
  }
  if (!lands && landed == -INFINITY) return -1;
  L->resting = resting;
  return landed > resting ? landed - resting : 0;
}

int khz_phaseClassify(const khzModel *m, khzData *d, khzLanding *landing) {
  /* Beyond the paper (opt-in, contact.reimpact_velocity): a pair in contact
   * whose points approach faster than that impacts again, e.g. a tumbling
   * body's second edge landing on the body it already touches. Its overlap
   * is not released gradually like a new pair's: it carries load. */
  double eps = m->contact.impact_velocity;
  double reimpact = m->contact.reimpact_velocity > 0 ? m->contact.reimpact_velocity : INFINITY;
  /* Also beyond the paper, when the scene sets no re-impact speed: a
   * landing on more points of a resting pair with automatic gains
   * (find_landing) impacts again with e = the restitution at each of its
   * points (impulse.c). The springs used to stop such a landing
   * and push the body back up (a capsule whose second end landed at 0.8 m/s
   * hopped 18 mm; a rigid body keeps turning about the new edge instead,
   * or stops). Points the narrow phase found already up to a step's travel
   * past the resting ones: the pair's offset takes up that depth, released
   * gradually as a new pair's overlap is, so that the springs do not push
   * out what the impact came late by. */
  double landing_speed = INFINITY, g = sqrt(khzu_dot3(m->gravity, m->gravity));
  if (landing && !(m->contact.reimpact_velocity > 0) && d->contact_method == KHZ_CONTACT_PENALTY)
    landing_speed = fmax(KHZ_LANDING_SPEED * sqrt(g * khz_penaltyAutoDepth(d, g)), eps);
  int any_impact = 0;
  for (int i = 0; i < d->ncontact; i++) {
    khzContact *c = d->contact + i;
    khzPairState *ps = d->pair + c->slot;
    int fresh = ps->phase == KHZ_PHASE_NONE;
    /* the approach speed decides a new pair's phase and a re-impact; with
     * no re-impact speed set an old pair's test (sn < -INFINITY) is false */
    double sn = fresh || reimpact < INFINITY ? approach_speed(m, d, c) : 0;
    if (landing) landing[i].on = 0;
    /* a new pair: the overlap it starts with is released gradually (a
     * step's travel, an initial overlap, or a contact found late) */
    if (fresh && c->npoint) ps->offset = fmax(ps->offset, d->cpoint[c->deepest].depth);
    if (fresh) ps->phase = sn < -eps ? KHZ_PHASE_IMPACT : KHZ_PHASE_RESTING;
    else if (sn < -reimpact) ps->phase = KHZ_PHASE_IMPACT;
    else if (landing_speed < INFINITY && c->npoint && khz_penaltyAutoGains(m, c)) {
      double excess = find_landing(m, d, c, landing_speed, landing + i);
      if (excess >= 0) ps->phase = KHZ_PHASE_IMPACT, ps->offset = fmax(ps->offset, excess), landing[i].on = 1;
    }
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
  memset(d->pair_turn, 0, 4 * (size_t)m->npair_max * sizeof(double));
}
