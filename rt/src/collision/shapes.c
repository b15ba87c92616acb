/* shapes.c — the shapes in the world as the narrow phase sees them: support
 * maps h(n) = max_x n.x (the supporting plane across a normal, against which
 * Drumwright's eq. 4 measures the distance of a contact point), inside
 * distances with the normal of the nearest facet (the deepest point's facet of
 * the Appendix I fast path), segment clipping (where the edges of one shape
 * cross the surface of the other: the vertices of the intersection volume of
 * Fig. 4 that are not vertices of either shape), and the vertex and edge
 * features of each shape. Also the small closest-point routines (Ericson,
 * Real-Time Collision Detection, 5.1). Nothing here allocates.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "collision.h"

/* absolute, in the quantity's units: below it a segment is parallel to a slab or
 * a plane, or to a cylinder's axis (no division) */
#define KHZ_DIV_ZERO 1e-300

/* the frames and support maps are inline in collision.h (the narrow phase's
 * searches evaluate them in their innermost loops) */

void khz_shape_supportVertex(const double *vert, int n, const double d[3], double l[3]) {
  int best = 0;
  double bv = -DBL_MAX;
  for (int i = 0; i < n; i++) {
    double v = khzu_dot3(d, vert + 3 * i);
    if (v > bv) bv = v, best = i;
  }
  khzu_copy3(l, vert + 3 * best);
}

void khz_shape_supportFn(const void *shape, const double dir[3], double out[3]) {
  khz_shape_support(shape, dir, out);
}

void khz_core_support(const void *core, const double dir[3], double out[3]) {
  const khzColCore *c = core;
  khzu_copy3(out, khzu_dot3(dir, c->b) > khzu_dot3(dir, c->a) ? c->b : c->a);
}

/* --------------------------------------------------- inside distance -- */

double khz_shape_sd(const khzColShape *s, const double p[3], double nrm[3]) {
  double q[3], ln[3];
  khz_shape_toLocal(s, p, q);
  double sd = khz_shape_sdLocal(s, q, nrm ? ln : NULL);
  if (nrm) khz_shape_toWorldDir(s, ln, nrm);
  return sd;
}

double khz_shape_sdLocal(const khzColShape *s, const double q[3], double nrm[3]) {
  double ln[3] = {0, 0, 1}, sd;
  const double *sz = s->size;
  switch (s->shape) {
    case KHZ_SHAPE_PLANE:
      sd = -q[2];
      break;
    case KHZ_SHAPE_SPHERE:
    case KHZ_SHAPE_CAPSULE: {
      double c[3] = {0, 0, 0};
      if (s->shape == KHZ_SHAPE_CAPSULE) c[2] = khzu_clamp(q[2], -sz[1], sz[1]);
      khzu_sub3(ln, q, c);
      double l = khzu_normalize3(ln);
      if (l == 0) ln[0] = 1, ln[1] = ln[2] = 0;
      sd = sz[0] - l;
      break;
    }
    case KHZ_SHAPE_BOX: {
      int inside = fabs(q[0]) <= sz[0] && fabs(q[1]) <= sz[1] && fabs(q[2]) <= sz[2];
      if (inside) {
        /* the nearest face */
        int k = 0;
        double best = sz[0] - fabs(q[0]);
        for (int i = 1; i < 3; i++)
          if (sz[i] - fabs(q[i]) < best) best = sz[i] - fabs(q[i]), k = i;
        ln[0] = ln[1] = ln[2] = 0;
        ln[k] = q[k] >= 0 ? 1 : -1;
        sd = best;
      } else {
        double c[3];
        for (int i = 0; i < 3; i++) c[i] = khzu_clamp(q[i], -sz[i], sz[i]);
        khzu_sub3(ln, q, c);
        sd = -khzu_normalize3(ln);
      }
      break;
    }
    case KHZ_SHAPE_CYLINDER: {
      double rho = sqrt(q[0] * q[0] + q[1] * q[1]);
      double side = sz[0] - rho, cap = sz[1] - fabs(q[2]);
      double radial[3] = {1, 0, 0};
      if (rho > 0) radial[0] = q[0] / rho, radial[1] = q[1] / rho;
      if (side >= 0 && cap >= 0) {
        if (side < cap) {
          khzu_copy3(ln, radial);
          sd = side;
        } else {
          ln[0] = ln[1] = 0, ln[2] = q[2] >= 0 ? 1 : -1;
          sd = cap;
        }
      } else {
        double c[3];
        double r = rho > sz[0] ? sz[0] : rho;
        c[0] = radial[0] * r, c[1] = radial[1] * r, c[2] = khzu_clamp(q[2], -sz[1], sz[1]);
        khzu_sub3(ln, q, c);
        sd = -khzu_normalize3(ln);
      }
      break;
    }
    case KHZ_SHAPE_CONVEX: {
      const khzColHull *h = s->hull;
      double best = -DBL_MAX;
      int bi = 0;
      for (int i = 0; i < h->nplane; i++) {
        double v = khzu_dot3(h->plane + 4 * i, q) - h->plane[4 * i + 3];
        if (v > best) best = v, bi = i;
      }
      khzu_copy3(ln, h->plane + 4 * bi);
      sd = -best;
      break;
    }
    case KHZ_SHAPE_TRIMESH: {
      const khzColTrimesh *t = s->mesh;
      sd = -khz_trimesh_sdf(t, q);
      if (nrm) {
        /* gradient by central differences at half the grid spacing */
        double e = 0.5 * t->h;
        for (int k = 0; k < 3; k++) {
          double a[3], b[3];
          khzu_copy3(a, q), khzu_copy3(b, q);
          a[k] += e, b[k] -= e;
          ln[k] = khz_trimesh_sdf(t, a) - khz_trimesh_sdf(t, b);
        }
        if (khzu_normalize3(ln) == 0) ln[0] = ln[1] = 0, ln[2] = 1;
      }
      break;
    }
    default:
      sd = -DBL_MAX;
  }
  if (nrm) khzu_copy3(nrm, ln);
  return sd;
}

/* ---------------------------------------------------------- clipping -- */

/* intersects [t0, t1] with the slab lo <= a + t d <= hi */
static int clip_slab(double a, double d, double lo, double hi, double *t0, double *t1) {
  if (fabs(d) < KHZ_DIV_ZERO) return a >= lo && a <= hi;
  double u = (lo - a) / d, v = (hi - a) / d;
  if (u > v) {
    double w = u;
    u = v, v = w;
  }
  if (u > *t0) *t0 = u;
  if (v < *t1) *t1 = v;
  return *t0 <= *t1;
}

/* intersects [t0, t1] with the half-space n.(a + t d) <= off */
static int clip_half(double na, double nd, double off, double *t0, double *t1) {
  double num = off - na;
  if (fabs(nd) < KHZ_DIV_ZERO) return num >= 0;
  double t = num / nd;
  if (nd < 0) {
    if (t > *t0) *t0 = t;
  } else if (t < *t1) {
    *t1 = t;
  }
  return *t0 <= *t1;
}

int khz_shape_clip(const khzColShape *s, const double p0[3], const double p1[3], double t[2]) {
  double a[3], b[3];
  khz_shape_toLocal(s, p0, a);
  khz_shape_toLocal(s, p1, b);
  return khz_shape_clipLocal(s, a, b, t);
}

int khz_shape_clipLocal(const khzColShape *s, const double a[3], const double b[3], double t[2]) {
  double d[3];
  const double *sz = s->size;
  khzu_sub3(d, b, a);
  double t0 = 0, t1 = 1;
  int ok = 1;
  switch (s->shape) {
    case KHZ_SHAPE_PLANE:
      ok = clip_half(a[2], d[2], 0, &t0, &t1);
      break;
    case KHZ_SHAPE_BOX:
      for (int k = 0; k < 3 && ok; k++) ok = clip_slab(a[k], d[k], -sz[k], sz[k], &t0, &t1);
      break;
    case KHZ_SHAPE_CYLINDER: {
      ok = clip_slab(a[2], d[2], -sz[1], sz[1], &t0, &t1);
      if (!ok) break;
      /* |a_xy + t d_xy|^2 <= r^2 */
      double A = d[0] * d[0] + d[1] * d[1], B = 2 * (a[0] * d[0] + a[1] * d[1]),
             C = a[0] * a[0] + a[1] * a[1] - sz[0] * sz[0];
      if (A < KHZ_DIV_ZERO) {
        ok = C <= 0;
        break;
      }
      double disc = B * B - 4 * A * C;
      if (disc < 0) {
        ok = 0;
        break;
      }
      double sq = sqrt(disc);
      double u = (-B - sq) / (2 * A), v = (-B + sq) / (2 * A);
      if (u > t0) t0 = u;
      if (v < t1) t1 = v;
      ok = t0 <= t1;
      break;
    }
    case KHZ_SHAPE_CONVEX: {
      const khzColHull *h = s->hull;
      for (int i = 0; i < h->nplane && ok; i++) {
        const double *pl = h->plane + 4 * i;
        ok = clip_half(khzu_dot3(pl, a), khzu_dot3(pl, d), pl[3], &t0, &t1);
      }
      break;
    }
    default:
      ok = 0;
  }
  t[0] = t0, t[1] = t1;
  return ok;
}

/* ---------------------------------------------------------- features -- */

int khz_shape_nvert(const khzColShape *s) {
  switch (s->shape) {
    case KHZ_SHAPE_BOX: return 8;
    case KHZ_SHAPE_CYLINDER: return 2 * KHZ_CYL_RIM;
    case KHZ_SHAPE_CONVEX: return s->hull->nvert;
    case KHZ_SHAPE_TRIMESH: return s->mesh->nvert;
    default: return 0;
  }
}

void khz_shape_vert(const khzColShape *s, int i, double out[3]) {
  double l[3];
  khz_shape_vertLocal(s, i, l);
  khz_shape_toWorld(s, l, out);
}

int khz_shape_nedge(const khzColShape *s) {
  switch (s->shape) {
    case KHZ_SHAPE_BOX: return 12;
    case KHZ_SHAPE_CYLINDER: return 3 * KHZ_CYL_RIM;
    case KHZ_SHAPE_CONVEX: return s->hull->nedge;
    default: return 0;
  }
}

