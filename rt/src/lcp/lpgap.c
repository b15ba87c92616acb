/* lpgap.c — the LP penetration depth as the LCP path's gap function
 * (lpgap.h): the pair's ratio-metric depth by one LP (Anitescu & Hart,
 * eqs. 2-3), its nearly active corner-on-face units ("Algorithm for nearly
 * active BCUs", steps 2-4b), each with its own gap and gradient, as the
 * rows of eq. 11 of their time-stepping scheme.
 */
#include "lcp/lpgap.h"

#include <math.h>
#include <string.h>

#include "collision/collision.h"
#include "lcp/lcp.h"

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

/* faces of geom g as the LP sees it (0: not a polytope) */
static int geom_faces(const khzModel *m, int g) {
  const khzColModel *cm = m->collision;
  const khzColGeom *cg = &cm->geom[g];
  switch (cg->shape) {
    case KHZ_SHAPE_BOX: return 6;
    case KHZ_SHAPE_PLANE: return 1;
    case KHZ_SHAPE_CONVEX: return cm->hull[cg->hull].nplane;
    default: return 0;
  }
}

int khz_lpGapShape(const khzModel *m, int g) { return m->collision && geom_faces(m, g) > 0; }

/* the capacities: both polytopes' faces, the vertices of the largest, the
 * candidate units of four basis faces */
static void sizes(const khzModel *m, int *maxface, int *maxvert, int *maxunit) {
  int f = 1;
  for (int g = 0; g < m->ngeom; g++) {
    int n = geom_faces(m, g);
    f = n > f ? n : f;
  }
  *maxface = 2 * f;
  *maxvert = ((const khzColModel *)m->collision)->maxvert;
  *maxunit = 4 * *maxvert;
}

size_t khz_lpGapBytes(const khzModel *m) {
  if (!m->collision) return 0;
  int nf, nv, nu;
  sizes(m, &nf, &nv, &nu);
  return align8(khz_lpDepthBytes(nf)) + sizeof(double) * (4 * (size_t)nf + 4 * (size_t)nv) +
         sizeof(khzLpGapUnit) * (size_t)nu + 64;
}

void khz_lpGapInit(khzLpGapWork *w, const khzModel *m, void *mem) {
  sizes(m, &w->maxface, &w->maxvert, &w->maxunit);
  khz_lpDepthInit(&w->lp, w->maxface, mem);
  double *p = (double *)((char *)mem + align8(khz_lpDepthBytes(w->maxface)));
  w->face = p, p += 4 * (size_t)w->maxface;
  w->vert = p, p += 3 * (size_t)w->maxvert;
  w->vmax = p, p += w->maxvert;
  w->unit = (khzLpGapUnit *)p;
}

/* the unit normal and offset of face f (4 doubles: a, b with a . x <= b) */
static double face_gap(const double *face, const double x[3]) {
  return (khzu_dot3(face, x) - face[3]) / khzu_norm3(face);
}

/* the corner-on-face units of the basis faces of polytope X (its faces at
 * fx, basis indices kx0 .. kx0 + nfx - 1 of the LP) against the vertices of
 * geom gy; gy_is_0: gy is the pair's g0 (body[0]). Appends to w->unit */
static int face_units(khzLpGapWork *w, const khzModel *m, const double *frame, const double *fx, int nfx,
                      int kx0, int gy, int gy_is_0, double reach, int nunit) {
  const khzLpDepth *o = &w->depth;
  int any = 0;
  for (int k = 0; k < 4; k++) {
    int b = o->basis[k];
    any |= b >= kx0 && b < kx0 + nfx && w->lp.y[b] > 0;
  }
  if (!any) return nunit;
  khzColShape s;
  khz_shape_make(m, gy, frame + 12 * gy, &s);
  int nv = khz_shape_nvert(&s);
  if (nv > w->maxvert) nv = w->maxvert;
  /* each vertex's largest gap over X's faces: the face it lies over */
  for (int v = 0; v < nv; v++) {
    double *x = w->vert + 3 * v, best = -INFINITY;
    khz_shape_vert(&s, v, x);
    for (int f = 0; f < nfx; f++) best = fmax(best, face_gap(fx + 4 * f, x));
    w->vmax[v] = best;
  }
  for (int k = 0; k < 4; k++) {
    int b = o->basis[k], dup = 0;
    for (int l = 0; l < k; l++) dup |= o->basis[l] == b;
    if (dup || b < kx0 || b >= kx0 + nfx || !(w->lp.y[b] > 0)) continue;
    const double *face = fx + 4 * (b - kx0);
    double a[3], len = khzu_norm3(face);
    khzu_scl3(a, face, 1 / len);
    for (int v = 0; v < nv && nunit < w->maxunit; v++) {
      const double *x = w->vert + 3 * v;
      double gap = face_gap(face, x);
      /* near the face's plane, and over this face rather than beside it */
      if (gap > reach || gap < w->vmax[v] - reach) continue;
      khzLpGapUnit *u = w->unit + nunit++;
      double onface[3];
      khzu_addScl3(onface, x, a, -gap);
      u->gap = gap;
      /* the normal points from the face's body toward the vertex's */
      khzu_scl3(u->normal, a, gy_is_0 ? 1 : -1);
      khzu_copy3(gy_is_0 ? u->p0 : u->p1, x);
      khzu_copy3(gy_is_0 ? u->p1 : u->p0, onface);
    }
  }
  return nunit;
}

/* r projected into the plane of the unit normal n */
static void in_plane(double r[3], const double n[3]) { khzu_addScl3(r, r, n, -khzu_dot3(r, n)); }

/* up to maxout of the n units spread over the contact region, as the
 * narrow phase's points are (lcp.c, spread_points): the deepest, the
 * farthest from it in the plane of n, the farthest either side of their
 * line; points closer than KHZ_LCP_POINT_SEP are one, a third point must be
 * KHZ_LCP_POINT_OFFLINE (relative) off the line */
static int spread_units(const khzLpGapUnit *u, int n, const double nrm[3], khzLpGapUnit *out, int maxout) {
  if (n <= 0 || maxout <= 0) return 0;
  int deep = 0;
  for (int i = 1; i < n; i++)
    if (u[i].gap < u[deep].gap) deep = i;
  int sel[4], ns = 0;
  sel[ns++] = deep;
  double best = KHZ_LCP_POINT_SEP * KHZ_LCP_POINT_SEP;
  int far = -1;
  for (int i = 0; i < n; i++) {
    double r[3];
    khzu_sub3(r, u[i].p0, u[deep].p0);
    in_plane(r, nrm);
    double l = khzu_dot3(r, r);
    if (l > best) best = l, far = i;
  }
  if (far >= 0) {
    sel[ns++] = far;
    double axis[3], side[3];
    khzu_sub3(axis, u[far].p0, u[deep].p0);
    in_plane(axis, nrm);
    khzu_cross(side, nrm, axis);
    double off = fmax(KHZ_LCP_POINT_OFFLINE * best, KHZ_LCP_POINT_SEP * sqrt(best));
    double dlo = -off, dhi = off;
    int lo = -1, hi = -1;
    for (int i = 0; i < n; i++) {
      double r[3];
      khzu_sub3(r, u[i].p0, u[deep].p0);
      double s = khzu_dot3(r, side);
      if (s > dhi) dhi = s, hi = i;
      if (s < dlo) dlo = s, lo = i;
    }
    if (hi >= 0) sel[ns++] = hi;
    if (lo >= 0) sel[ns++] = lo;
  }
  if (ns > maxout) ns = maxout;
  for (int i = 0; i < ns; i++) out[i] = u[sel[i]];
  return ns;
}

int khz_lpGapPair(khzLpGapWork *w, const khzModel *m, const double *frame, int g0, int g1,
                  double reach, khzLpGapUnit *out, int maxout, double *psi) {
  const khzColModel *cm = m->collision;
  khzColShape s0, s1;
  khz_shape_make(m, g0, frame + 12 * g0, &s0);
  khz_shape_make(m, g1, frame + 12 * g1, &s1);
  /* body 1 of the LP is g1, body 2 is g0: its normal points from g1 toward
   * g0, the contact normal's direction. A plane is the half-space about a
   * point below it by the other body's size */
  double depth = fmax(0.01, fmax(cm->geom[g0].radius, cm->geom[g1].radius));
  khzPolytope p1, p2;
  int m1 = khz_lpPolytopeOfShape(&s1, depth, w->face, w->maxface, &p1);
  if (m1 < 0) return -1;
  int m2 = khz_lpPolytopeOfShape(&s0, depth, w->face + 4 * m1, w->maxface - m1, &p2);
  if (m2 < 0) return -1;
  khzLpDepth *o = &w->depth;
  if (khz_lpDepth(&w->lp, &p1, &p2, NULL, o) != KHZ_LP_OPTIMAL || !(o->r > 0)) return -1;
  *psi = o->rho * o->dn;
  if (!(*psi <= reach)) return 0;

  /* the nearly active corner-on-face units: g1's basis faces against g0's
   * vertices, g0's against g1's */
  int n = face_units(w, m, frame, p1.face, m1, 0, g0, 1, reach, 0);
  n = face_units(w, m, frame, p2.face, m2, m1, g1, 0, reach, n);
  double lowest = INFINITY;
  for (int i = 0; i < n; i++) lowest = fmin(lowest, w->unit[i].gap);
  if (n > 0 && lowest <= *psi + reach) return spread_units(w->unit, n, o->normal, out, maxout);

  /* none as deep as the pair (an edge on an edge): the LP's own unit at the
   * bodies' support points x_i + (x - x_i) / r, gap rho dn, beside the
   * corners found (it is the deepest, so it is kept) */
  if (maxout <= 0 || n >= w->maxunit) return 0;
  khzLpGapUnit *u = w->unit + n++;
  double rel[3];
  khzu_sub3(rel, o->point, p2.center);
  khzu_addScl3(u->p0, p2.center, rel, 1 / o->r);
  khzu_sub3(rel, o->point, p1.center);
  khzu_addScl3(u->p1, p1.center, rel, 1 / o->r);
  khzu_copy3(u->normal, o->normal);
  u->gap = *psi;
  return spread_units(w->unit, n, o->normal, out, maxout);
}
