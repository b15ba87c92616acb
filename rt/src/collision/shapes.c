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

/* sin between a direction and a cylinder's axis below which it has no radial part
 * (the support is the cap's centre) */
#define KHZ_AXIAL_SIN 1e-12
/* absolute, in the quantity's units: below it a segment is parallel to a slab or
 * a plane, or to a cylinder's axis (no division) */
#define KHZ_DIV_ZERO 1e-300

/* ------------------------------------------------------------ frames -- */

void khz_shape_toLocal(const khzColShape *s, const double p[3], double out[3]) {
  double d[3];
  khzu_sub3(d, p, s->pos);
  const double *R = s->rot;
  double r0 = R[0] * d[0] + R[3] * d[1] + R[6] * d[2];
  double r1 = R[1] * d[0] + R[4] * d[1] + R[7] * d[2];
  double r2 = R[2] * d[0] + R[5] * d[1] + R[8] * d[2];
  out[0] = r0, out[1] = r1, out[2] = r2;
}

/* rotation only */
static void to_local_dir(const khzColShape *s, const double v[3], double out[3]) {
  const double *R = s->rot;
  double r0 = R[0] * v[0] + R[3] * v[1] + R[6] * v[2];
  double r1 = R[1] * v[0] + R[4] * v[1] + R[7] * v[2];
  double r2 = R[2] * v[0] + R[5] * v[1] + R[8] * v[2];
  out[0] = r0, out[1] = r1, out[2] = r2;
}

static void to_world_dir(const khzColShape *s, const double v[3], double out[3]) {
  const double *R = s->rot;
  double r0 = R[0] * v[0] + R[1] * v[1] + R[2] * v[2];
  double r1 = R[3] * v[0] + R[4] * v[1] + R[5] * v[2];
  double r2 = R[6] * v[0] + R[7] * v[1] + R[8] * v[2];
  out[0] = r0, out[1] = r1, out[2] = r2;
}

void khz_shape_toWorld(const khzColShape *s, const double p[3], double out[3]) {
  double r[3];
  to_world_dir(s, p, r);
  khzu_add3(out, r, s->pos);
}

/* ----------------------------------------------------------- support -- */

void khz_shape_support(const khzColShape *s, const double dir[3], double out[3]) {
  double d[3], l[3] = {0, 0, 0};
  const double *sz = s->size;
  to_local_dir(s, dir, d);
  switch (s->shape) {
    case KHZ_SHAPE_SPHERE:
    case KHZ_SHAPE_CAPSULE: {
      double n = khzu_norm3(d);
      if (n > 0) khzu_scl3(l, d, sz[0] / n);
      if (s->shape == KHZ_SHAPE_CAPSULE) l[2] += d[2] >= 0 ? sz[1] : -sz[1];
      break;
    }
    case KHZ_SHAPE_BOX:
      for (int k = 0; k < 3; k++) l[k] = d[k] >= 0 ? sz[k] : -sz[k];
      break;
    case KHZ_SHAPE_CYLINDER: {
      double rho = sqrt(d[0] * d[0] + d[1] * d[1]);
      if (rho > KHZ_AXIAL_SIN * khzu_norm3(d)) l[0] = sz[0] * d[0] / rho, l[1] = sz[0] * d[1] / rho;
      l[2] = d[2] >= 0 ? sz[1] : -sz[1];
      break;
    }
    case KHZ_SHAPE_CONVEX: {
      const khzColHull *h = s->hull;
      int best = 0;
      double bv = -DBL_MAX;
      for (int i = 0; i < h->nvert; i++) {
        double v = khzu_dot3(d, h->vert + 3 * i);
        if (v > bv) bv = v, best = i;
      }
      khzu_copy3(l, h->vert + 3 * best);
      break;
    }
    case KHZ_SHAPE_TRIMESH: {
      const khzColTrimesh *t = s->mesh;
      int best = 0;
      double bv = -DBL_MAX;
      for (int i = 0; i < t->nvert; i++) {
        double v = khzu_dot3(d, t->vert + 3 * i);
        if (v > bv) bv = v, best = i;
      }
      khzu_copy3(l, t->vert + 3 * best);
      break;
    }
    default: /* plane: its origin (unbounded; never asked for) */
      break;
  }
  khz_shape_toWorld(s, l, out);
}

double khz_shape_h(const khzColShape *s, const double dir[3]) {
  double p[3];
  khz_shape_support(s, dir, p);
  return khzu_dot3(dir, p);
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
  if (nrm) to_world_dir(s, ln, nrm);
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

/* unit rim directions of a cylinder, k = 0..15: (cos, sin)(2 pi k / 16) */
_Static_assert(KHZ_CYL_RIM == 16, "the rim table holds 16 samples");
static const double rim_cs[KHZ_CYL_RIM][2] = {
    {1, 0},
    {0.92387953251128674, 0.38268343236508978},
    {0.70710678118654757, 0.70710678118654746},
    {0.38268343236508984, 0.92387953251128674},
    {6.123233995736766e-17, 1},
    {-0.38268343236508973, 0.92387953251128674},
    {-0.70710678118654746, 0.70710678118654757},
    {-0.92387953251128674, 0.38268343236508989},
    {-1, 1.2246467991473532e-16},
    {-0.92387953251128685, -0.38268343236508967},
    {-0.70710678118654768, -0.70710678118654746},
    {-0.38268343236509034, -0.92387953251128652},
    {-1.8369701987210297e-16, -1},
    {0.38268343236509, -0.92387953251128663},
    {0.70710678118654735, -0.70710678118654768},
    {0.92387953251128652, -0.38268343236509039},
};


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

void khz_shape_vertLocal(const khzColShape *s, int i, double l[3]) {
  const double *sz = s->size;
  switch (s->shape) {
    case KHZ_SHAPE_BOX:
      l[0] = i & 1 ? sz[0] : -sz[0];
      l[1] = i & 2 ? sz[1] : -sz[1];
      l[2] = i & 4 ? sz[2] : -sz[2];
      break;
    case KHZ_SHAPE_CYLINDER: {
      int k = i % KHZ_CYL_RIM;
      l[0] = sz[0] * rim_cs[k][0], l[1] = sz[0] * rim_cs[k][1];
      l[2] = i >= KHZ_CYL_RIM ? sz[1] : -sz[1];
      break;
    }
    case KHZ_SHAPE_CONVEX:
      khzu_copy3(l, s->hull->vert + 3 * i);
      break;
    case KHZ_SHAPE_TRIMESH:
      khzu_copy3(l, s->mesh->vert + 3 * i);
      break;
    default:
      l[0] = l[1] = l[2] = 0;
  }
}

int khz_shape_nedge(const khzColShape *s) {
  switch (s->shape) {
    case KHZ_SHAPE_BOX: return 12;
    case KHZ_SHAPE_CYLINDER: return 3 * KHZ_CYL_RIM;
    case KHZ_SHAPE_CONVEX: return s->hull->nedge;
    default: return 0;
  }
}

void khz_shape_edge(const khzColShape *s, int i, int v[2]) {
  switch (s->shape) {
    case KHZ_SHAPE_BOX: {
      /* 4 edges along each axis: from the corners with that bit clear */
      static const int from[3][4] = {{0, 2, 4, 6}, {0, 1, 4, 5}, {0, 1, 2, 3}};
      int axis = i / 4;
      v[0] = from[axis][i % 4];
      v[1] = v[0] | (1 << axis);
      break;
    }
    case KHZ_SHAPE_CYLINDER: {
      int N = KHZ_CYL_RIM;
      if (i < 2 * N) {
        int rim = i / N, k = i % N;
        v[0] = rim * N + k, v[1] = rim * N + (k + 1) % N;
      } else {
        v[0] = i - 2 * N, v[1] = i - N;
      }
      break;
    }
    case KHZ_SHAPE_CONVEX:
      v[0] = s->hull->edge[2 * i], v[1] = s->hull->edge[2 * i + 1];
      break;
    default:
      v[0] = v[1] = 0;
  }
}
