/* lpgap.h — the Anitescu-Hart LP penetration depth as the LCP path's gap
 * function for pairs of convex polyhedra (rt-private; contact.lcp_gap =
 * KHZ_LCP_GAP_LPDEPTH, docs/lcp.md "The LP-depth gap").
 *
 * Anitescu & Hart, "An LP approach for computing depth of penetration in
 * piecewise smooth multibody dynamics": the ratio metric r of two convex
 * polyhedra by one LP (rt/src/lp/lpdepth.h) and its depth rho = (r - 1)/r
 * (eq. 3) are a signed gap function Phi(q) of the pair, positive apart, zero
 * touching, negative overlapping. Their time-stepping scheme ("Noninter-
 * penetration constraints", "Active BCUs", eq. 11) keeps a pair in the LCP
 * when Phi <= eps_t and writes one row per nearly active basic contact unit
 * m of it, gamma Phi/h + grad Phi(m)' v+ >= 0, so that a face resting on a
 * face is held by its corners (the generalised gradient), not by one point.
 *
 * Here, in metres: a pair is active when rho dn (the distance between its
 * two bodies' supporting planes normal to the LP's normal, dn = the centres'
 * distance along it) is at most `reach`. Its units are the corner-on-face
 * units of the LP's optimal basis: for each face of the basis with a
 * positive multiplier, the vertices of the other body that lie over it (the
 * face within `reach` of their largest face gap) and within `reach` of its
 * plane. A unit's gap is the vertex's signed distance to the face's plane
 * (its component function in metres: the ratio metric of the face's
 * half-space and the vertex's cone) and its row the normal velocity of the
 * vertex against the face's body at the vertex's projection on the plane:
 * the exact gradient of that distance. When no unit is found (an
 * edge-on-edge unit), the LP's own answer is the one unit: gap rho dn,
 * normal the LP's, and the two bodies' support points x_i + (x - x_i)/r (x
 * the LP's witness), at which the row is grad rho scaled by dn (lpdepth.h)
 * up to terms of order rho.
 */
#ifndef KHZ_LCP_LPGAP_H
#define KHZ_LCP_LPGAP_H

#include <stddef.h>

#include "khz/khz.h"
#include "lp/lpdepth.h"

/* one unit of a pair (geoms g0 < g1; body[0] is g0's) */
typedef struct khzLpGapUnit {
  double p0[3], p1[3]; /* the gap's ends in the world: on g0's body and on g1's */
  double normal[3];    /* unit, toward g0's body */
  double gap;          /* signed distance (m): > 0 apart, < 0 overlapping */
} khzLpGapUnit;

/* workspace of khz_lpGapPair, sized from the model (khz_lpGapBytes) */
typedef struct khzLpGapWork {
  int maxface, maxvert, maxunit;
  khzLpDepthWork lp;
  double *face;       /* 4 maxface: both polytopes' faces */
  double *vert;       /* 3 maxvert: the vertex owner's vertices in the world */
  double *vmax;       /* maxvert: each vertex's largest gap over the face owner's faces */
  khzLpGapUnit *unit; /* maxunit: the candidate units */
  khzLpDepth depth;   /* the last pair's LP answer */
} khzLpGapWork;

/* 1 when geom g is a polytope the LP takes: a box, a convex mesh or a plane. */
int khz_lpGapShape(const khzModel *m, int g);

/* Bytes of a workspace for every polytope pair of m (0 when m has no
 * collision data). */
size_t khz_lpGapBytes(const khzModel *m);

/* Carves a workspace out of mem (khz_lpGapBytes(m) bytes, 8-byte aligned). */
void khz_lpGapInit(khzLpGapWork *w, const khzModel *m, void *mem);

/* The units of the pair of polytope geoms g0 < g1 at the geom frames frame
 * (12 doubles per geom: pos, row-major rot; khz_collisionFrames) into
 * out[0 .. maxout-1], at most maxout of them spread over the contact region
 * (the deepest, the farthest from it, the farthest either side of their
 * line). *psi gets the pair's gap rho dn. Returns the number of units, 0
 * when the pair is beyond reach (*psi > reach), -1 when the LP fails
 * (a face or centre rejected, its pivot budget, a singular basis; w->depth
 * is then unspecified). Never allocates. */
int khz_lpGapPair(khzLpGapWork *w, const khzModel *m, const double *frame, int g0, int g1,
                  double reach, khzLpGapUnit *out, int maxout, double *psi);

#endif
