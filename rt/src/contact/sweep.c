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
 * The geoms a path may enter are found through the boxes of the broad phase
 * (khz_collisionFrames): the paths' boxes sorted along one axis, each geom's
 * box looks up the paths whose box may meet it (a binary search, then a
 * scan), O((n + F) log F + candidates) for n geoms and F fast ones instead
 * of O(n F); planes (unbounded) meet every path.
 */
#include "sweep.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "collision/collision.h"
#include "dynamics.h"
#include "spatial.h"

#define KHZ_SWEEP_FRACTION 0.5 /* of a geom's thickness moved in one step */
#define KHZ_SWEEP_OVERLAP 0.02 /* of the thickness left inside at the time of impact */
#define KHZ_SWEEP_SLACK 1e-9   /* a path's box grown by this, relative to its coordinates (round-off) */

/* geom gb's thickness (its smallest half extent) and the path of its centre:
 * its end c1 (frame: the geoms' frames at the step's end), its start
 * c0 = c1 less the body's translation step since q0. Returns |step|. */
static double geom_path(const khzModel *m, const khzData *d, const double *q0, const double *frame,
                        int gb, double step[3], double c0[3], double c1[3]) {
  const khzColGeom *cg = &((const khzColModel *)m->collision)->geom[gb];
  int qa = m->jnt_qadr[m->geom_body[gb]];
  khzu_sub3(step, d->q + qa, q0 + qa);
  double off[3];
  khzu_mulMatVec3(off, frame + 12 * gb + 3, cg->center);
  khzu_add3(c1, frame + 12 * gb, off);
  khzu_sub3(c0, c1, step);
  return khzu_norm3(step);
}

static double thickness(const khzModel *m, int g) {
  const double *hf = ((const khzColModel *)m->collision)->geom[g].half;
  return fmin(hf[0], fmin(hf[1], hf[2]));
}

static int is_target(const khzModel *m, int g) {
  int sh = ((const khzColModel *)m->collision)->geom[g].shape;
  return sh == KHZ_SHAPE_PLANE || sh == KHZ_SHAPE_BOX || sh == KHZ_SHAPE_CYLINDER || sh == KHZ_SHAPE_CONVEX;
}

/* the path c0 -> c1 of fast geom gb against geom g: *tmin lowered to the
 * time its centre enters g, when that is in (0, 1] (a centre that starts
 * inside is the collision pass's: only entries) */
static void path_entry(const khzModel *m, int gb, int g, const double *frame, const double c0[3],
                       const double c1[3], double *tmin) {
  if (m->geom_body[g] == m->geom_body[gb] || !is_target(m, g) || !khz_collisionFilter(m, gb, g)) return;
  khzColShape s;
  khz_shape_make(m, g, frame + 12 * g, &s);
  double t[2];
  if (!khz_shape_clip(&s, c0, c1, t) || !(t[0] > 0) || t[0] > 1) return;
  *tmin = fmin(*tmin, t[0]);
}

/* an order-preserving map of a double to an unsigned key */
static uint64_t sort_key(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u >> 63 ? ~u : u | (uint64_t)1 << 63;
}

int khz_contactSweep(const khzModel *m, khzData *d, const double *q0) {
  const khzColModel *cm = m->collision;
  size_t mark = khz_stackMark(d);
  int ng = m->ngeom, nfast = 0;
  double *frame = NULL, *aabb = NULL, *path = NULL, *box = NULL, *tmin = NULL, *len = NULL;
  int *fast = NULL;
  /* one pass over the geoms: each geom of a free body is swept when the body
   * moved more than KHZ_SWEEP_FRACTION of that geom's thickness */
  for (int gb = 0; gb < ng; gb++) {
    int b = m->geom_body[gb];
    if (cm->geom[gb].shape < 0 || !khz_bodyFree(m, b)) continue;
    int qa = m->jnt_qadr[b];
    double step[3];
    khzu_sub3(step, d->q + qa, q0 + qa);
    if (!(khzu_norm3(step) > KHZ_SWEEP_FRACTION * thickness(m, gb))) continue;
    if (!frame) { /* the geoms' frames at the step's end, once; room for every geom's path */
      frame = khz_stackAlloc(d, 12 * (size_t)ng * sizeof(double));
      aabb = khz_stackAlloc(d, 6 * (size_t)ng * sizeof(double));
      path = khz_stackAlloc(d, 6 * (size_t)ng * sizeof(double));
      box = khz_stackAlloc(d, 6 * (size_t)ng * sizeof(double));
      tmin = khz_stackAlloc(d, 2 * (size_t)ng * sizeof(double));
      fast = khz_stackAlloc(d, (size_t)ng * sizeof(int));
      if (!frame || !aabb || !path || !box || !tmin || !fast) { /* counted by khz_stackAlloc */
        khz_stackFree(d, mark);
        return 0;
      }
      len = tmin + ng;
      khz_collisionFrames(m, d, frame, aabb);
    }
    double *c0 = path + 6 * nfast, *c1 = c0 + 3, *lo = box + 6 * nfast, *hi = lo + 3;
    len[nfast] = geom_path(m, d, q0, frame, gb, step, c0, c1);
    for (int k = 0; k < 3; k++) { /* the path's box, grown against round-off */
      double s = KHZ_SWEEP_SLACK * (1 + fmax(fabs(c0[k]), fabs(c1[k])));
      lo[k] = fmin(c0[k], c1[k]) - s, hi[k] = fmax(c0[k], c1[k]) + s;
    }
    tmin[nfast] = INFINITY, fast[nfast++] = gb;
  }
  if (!nfast) {
    khz_stackFree(d, mark);
    return 0;
  }

  /* the paths' boxes sorted by their lower bound along the axis on which
   * the paths spread most */
  int ax = 0;
  {
    double mean[3] = {0, 0, 0}, var[3] = {0, 0, 0};
    for (int f = 0; f < nfast; f++)
      for (int k = 0; k < 3; k++) mean[k] += 0.5 * (box[6 * f + k] + box[6 * f + 3 + k]) / nfast;
    for (int f = 0; f < nfast; f++)
      for (int k = 0; k < 3; k++) {
        double c = 0.5 * (box[6 * f + k] + box[6 * f + 3 + k]) - mean[k];
        var[k] += c * c;
      }
    for (int k = 1; k < 3; k++)
      if (var[k] > var[ax]) ax = k;
  }
  uint64_t *key = khz_stackAlloc(d, 2 * (size_t)nfast * sizeof(uint64_t));
  int *order = khz_stackAlloc(d, 2 * (size_t)nfast * sizeof(int));
  double *slo = khz_stackAlloc(d, (size_t)nfast * sizeof(double));
  unsigned char *moved = khz_stackAlloc(d, (size_t)m->nbody);
  if (!key || !order || !slo || !moved) {
    khz_stackFree(d, mark);
    return 0;
  }
  double reach = 0; /* the longest path box along ax */
  for (int f = 0; f < nfast; f++) {
    key[f] = sort_key(box[6 * f + ax]), order[f] = f;
    reach = fmax(reach, box[6 * f + 3 + ax] - box[6 * f + ax]);
  }
  khz_radixSort64(key, order, nfast, key + nfast, order + nfast);
  for (int p = 0; p < nfast; p++) slo[p] = box[6 * order[p] + ax];

  /* each geom's box against the paths' boxes it may meet: those whose lower
   * bound lies in [lo - reach, hi] along ax, then the other two axes. The
   * earliest entry per path is a minimum: the order does not change it. */
  for (int g = 0; g < ng; g++) {
    if (cm->geom[g].shape < 0 || !is_target(m, g)) continue;
    if (cm->geom[g].shape == KHZ_SHAPE_PLANE) {
      for (int f = 0; f < nfast; f++) path_entry(m, fast[f], g, frame, path + 6 * f, path + 6 * f + 3, tmin + f);
      continue;
    }
    const double *glo = aabb + 6 * g, *ghi = glo + 3;
    int a = 0, z = nfast; /* the first path box whose lower bound is >= glo - reach */
    while (a < z) {
      int mid = (a + z) / 2;
      if (slo[mid] < glo[ax] - reach) a = mid + 1;
      else z = mid;
    }
    for (int p = a; p < nfast && slo[p] <= ghi[ax]; p++) {
      int f = order[p];
      const double *lo = box + 6 * f, *hi = lo + 3;
      if (lo[0] > ghi[0] || hi[0] < glo[0] || lo[1] > ghi[1] || hi[1] < glo[1] || lo[2] > ghi[2] ||
          hi[2] < glo[2])
        continue;
      path_entry(m, fast[f], g, frame, path + 6 * f, path + 6 * f + 3, tmin + f);
    }
  }

  /* put the bodies back, in geom order */
  memset(moved, 0, (size_t)m->nbody);
  int clamped = 0, last = -1;
  for (int f = 0; f < nfast; f++) {
    int gb = fast[f], b = m->geom_body[gb];
    /* a body put back already: the frames of its other geoms are stale */
    if (b == last) continue;
    double th = thickness(m, gb), step[3], l = len[f], t_enter = tmin[f];
    int qa = m->jnt_qadr[b];
    if (moved[b]) {
      /* put back at one of its earlier geoms, another body's in between: the
       * path from its new position, against every geom */
      double c0[3], c1[3];
      l = geom_path(m, d, q0, frame, gb, step, c0, c1);
      if (!(l > KHZ_SWEEP_FRACTION * th)) continue;
      t_enter = INFINITY;
      for (int g = 0; g < ng; g++) path_entry(m, gb, g, frame, c0, c1, &t_enter);
    } else {
      khzu_sub3(step, d->q + qa, q0 + qa);
    }
    if (!(t_enter <= 1)) continue;
    /* the surface met the geom a thickness before the centre did */
    double t = fmax(t_enter - (1 - KHZ_SWEEP_OVERLAP) * th / l, 0);
    for (int k = 0; k < 3; k++) d->q[qa + k] = q0[qa + k] + t * step[k];
    clamped = 1, last = b, moved[b] = 1;
  }
  khz_stackFree(d, mark);
  return clamped;
}

size_t khz_sweepStackBytes(const khzModel *m) {
  size_t ng = (size_t)m->ngeom;
  /* frames, boxes, paths, path boxes, entries and lengths, geoms; keys, order, bounds, marks */
  return (12 + 6 + 6 + 6 + 2) * ng * sizeof(double) + ng * sizeof(int) +
         ng * (2 * sizeof(uint64_t) + 2 * sizeof(int) + sizeof(double)) + (size_t)m->nbody + 10 * 64;
}
