/* sweep.c — continuous collision for small fast bodies (motion clamping).
 * A free body that moved more than KHZ_SWEEP_FRACTION of one of its geoms'
 * thickness in a step could have passed through a thin geom between two
 * collision passes. The path of that geom's centre over the step is clipped
 * against every plane, box, cylinder and convex hull it may collide with;
 * when the path enters one,
 * the body is put back where its surface met that geom (the time of impact
 * along the path, KHZ_SWEEP_OVERLAP inside so that the next collision pass
 * finds the pair), keeping its velocity and orientation. The next step then
 * resolves the impact as any other (impulses, restitution). Spheres and
 * capsules as targets, triangle meshes and articulated bodies are not swept.
 */
#include "sweep.h"

#include <math.h>
#include <string.h>

#include "collision/collision.h"
#include "dynamics.h"
#include "spatial.h"

#define KHZ_SWEEP_FRACTION 0.5 /* of a geom's thickness moved in one step */
#define KHZ_SWEEP_OVERLAP 0.02 /* of the thickness left inside at the time of impact */

int khz_contactSweep(const khzModel *m, khzData *d, const double *q0) {
  const khzColModel *cm = m->collision;
  size_t mark = khz_stackMark(d);
  double *frame = NULL, *aabb = NULL;
  int clamped = 0, last = -1;
  /* one pass over the geoms: each geom of a free body is swept when the body
   * moved more than KHZ_SWEEP_FRACTION of that geom's thickness (its
   * smallest half extent) */
  for (int gb = 0; gb < m->ngeom; gb++) {
    int b = m->geom_body[gb];
    /* a body put back already: the frames of its other geoms are stale */
    if (cm->geom[gb].shape < 0 || b == last || !khz_bodyFree(m, b)) continue;
    const double *hf = cm->geom[gb].half;
    double th = fmin(hf[0], fmin(hf[1], hf[2]));
    int qa = m->jnt_qadr[b];
    double step[3];
    khzu_sub3(step, d->q + qa, q0 + qa);
    double len = khzu_norm3(step);
    if (!(len > KHZ_SWEEP_FRACTION * th)) continue;
    if (!frame) { /* the geoms' frames at the step's end, once */
      frame = khz_stackAlloc(d, 12 * (size_t)m->ngeom * sizeof(double));
      aabb = khz_stackAlloc(d, 6 * (size_t)m->ngeom * sizeof(double));
      if (!frame || !aabb) break; /* counted by khz_stackAlloc */
      khz_collisionFrames(m, d, frame, aabb);
    }
    /* the path of the geom's centre: its end, less the body's translation */
    double c1[3], c0[3], off[3];
    khzu_mulMatVec3(off, frame + 12 * gb + 3, cm->geom[gb].center);
    khzu_add3(c1, frame + 12 * gb, off);
    khzu_sub3(c0, c1, step);
    double tmin = INFINITY;
    for (int g = 0; g < m->ngeom; g++) {
      int sh = cm->geom[g].shape;
      if (m->geom_body[g] == b || !(sh == KHZ_SHAPE_PLANE || sh == KHZ_SHAPE_BOX ||
                                    sh == KHZ_SHAPE_CYLINDER || sh == KHZ_SHAPE_CONVEX))
        continue;
      if (!khz_collisionFilter(m, gb, g)) continue;
      khzColShape s;
      khz_shape_make(m, g, frame + 12 * g, &s);
      double t[2];
      /* a centre that starts inside is the collision pass's: only entries */
      if (!khz_shape_clip(&s, c0, c1, t) || !(t[0] > 0) || t[0] > 1) continue;
      tmin = fmin(tmin, t[0]);
    }
    if (!(tmin <= 1)) continue;
    /* the surface met the geom a thickness before the centre did */
    double t = fmax(tmin - (1 - KHZ_SWEEP_OVERLAP) * th / len, 0);
    for (int k = 0; k < 3; k++) d->q[qa + k] = q0[qa + k] + t * step[k];
    clamped = 1, last = b;
  }
  khz_stackFree(d, mark);
  return clamped;
}
