/* gjk.c — distance between two convex objects given by support maps
 * (Gilbert, Johnson and Keerthi 1988), with the closest point on the simplex
 * found by Voronoi-region tests (Ericson, Real-Time Collision Detection,
 * 5.1.5 and 9.5). Used for the distance between the core of a sphere or
 * capsule (a point or a segment) and a box, cylinder or hull: the contact
 * normal of a rounded shape is then exact (the direction between the closest
 * points), as the penalty method wants at smooth surfaces.
 * Fixed memory (a simplex of four vertices), at most 64 iterations.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "collision.h"

/* absolute (m^3, 6 x the tetrahedron's volume): below it the simplex is flat */
#define KHZ_GJK_FLAT 1e-300
/* relative to scale: distance below which the objects touch (returns 0) */
#define KHZ_GJK_TOUCH 1e-9
/* convergence: progress toward the origin below this fraction of |v|^2 ... */
#define KHZ_GJK_PROGRESS 1e-10
/* ... plus this absolute floor (m^2) */
#define KHZ_GJK_PROGRESS_ABS 1e-30

typedef struct {
  double w[3], a[3], b[3]; /* w = a - b */
} svert;

/* closest point to the origin on triangle s[0..2]; barycentrics into l */
static void tri_closest(const svert *s, double l[3]) {
  const double *a = s[0].w, *b = s[1].w, *c = s[2].w;
  double ab[3], ac[3], ap[3], bp[3], cp[3];
  khzu_sub3(ab, b, a);
  khzu_sub3(ac, c, a);
  khzu_scl3(ap, a, -1);
  double d1 = khzu_dot3(ab, ap), d2 = khzu_dot3(ac, ap);
  l[0] = l[1] = l[2] = 0;
  if (d1 <= 0 && d2 <= 0) {
    l[0] = 1;
    return;
  }
  khzu_scl3(bp, b, -1);
  double d3 = khzu_dot3(ab, bp), d4 = khzu_dot3(ac, bp);
  if (d3 >= 0 && d4 <= d3) {
    l[1] = 1;
    return;
  }
  double vc = d1 * d4 - d3 * d2;
  if (vc <= 0 && d1 >= 0 && d3 <= 0) {
    double v = d1 / (d1 - d3);
    l[0] = 1 - v, l[1] = v;
    return;
  }
  khzu_scl3(cp, c, -1);
  double d5 = khzu_dot3(ab, cp), d6 = khzu_dot3(ac, cp);
  if (d6 >= 0 && d5 <= d6) {
    l[2] = 1;
    return;
  }
  double vb = d5 * d2 - d1 * d6;
  if (vb <= 0 && d2 >= 0 && d6 <= 0) {
    double w = d2 / (d2 - d6);
    l[0] = 1 - w, l[2] = w;
    return;
  }
  double va = d3 * d6 - d5 * d4;
  if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
    double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    l[1] = 1 - w, l[2] = w;
    return;
  }
  double den = va + vb + vc;
  if (!(fabs(den) > 0)) {
    l[0] = 1;
    return;
  }
  l[1] = vb / den, l[2] = vc / den, l[0] = 1 - l[1] - l[2];
}

/* keeps the simplex vertices with non-zero weight; writes v = sum l w */
static void reduce(svert *s, int *n, const double *l, double v[3], double *lout) {
  int m = 0;
  v[0] = v[1] = v[2] = 0;
  for (int i = 0; i < *n; i++) {
    if (l[i] <= 0) continue;
    khzu_addScl3(v, v, s[i].w, l[i]);
    lout[m] = l[i];
    s[m++] = s[i];
  }
  *n = m;
}

/* origin on the far side of plane (a, b, c) from d? */
static int outside_face(const double *a, const double *b, const double *c, const double *d) {
  double ab[3], ac[3], n[3], ad[3];
  khzu_sub3(ab, b, a);
  khzu_sub3(ac, c, a);
  khzu_cross(n, ab, ac);
  khzu_sub3(ad, d, a);
  double sp = -khzu_dot3(a, n), sd = khzu_dot3(ad, n);
  if (fabs(sd) < KHZ_GJK_FLAT) return 1; /* flat tetrahedron: test the face */
  return sp * sd < 0;
}

/* closest point of simplex s (1..4 vertices) to the origin; reduces s.
 * Returns 0 when the origin is inside the tetrahedron. */
static int simplex_closest(svert *s, int *n, double v[3], double *lout) {
  double l[4] = {0, 0, 0, 0};
  if (*n == 1) {
    l[0] = 1;
  } else if (*n == 2) {
    double ab[3];
    khzu_sub3(ab, s[1].w, s[0].w);
    double l2 = khzu_dot3(ab, ab);
    double t = l2 > 0 ? khzu_clamp(-khzu_dot3(s[0].w, ab) / l2, 0, 1) : 0;
    l[0] = 1 - t, l[1] = t;
  } else if (*n == 3) {
    tri_closest(s, l);
  } else {
    /* tetrahedron: the best face the origin lies outside of */
    static const int face[4][4] = {{0, 1, 2, 3}, {0, 1, 3, 2}, {0, 2, 3, 1}, {1, 2, 3, 0}};
    double best = DBL_MAX;
    int any = 0;
    for (int f = 0; f < 4; f++) {
      const int *ix = face[f];
      if (!outside_face(s[ix[0]].w, s[ix[1]].w, s[ix[2]].w, s[ix[3]].w)) continue;
      any = 1;
      svert t[3] = {s[ix[0]], s[ix[1]], s[ix[2]]};
      double lt[3], p[3] = {0, 0, 0};
      tri_closest(t, lt);
      for (int k = 0; k < 3; k++) khzu_addScl3(p, p, t[k].w, lt[k]);
      double d2 = khzu_dot3(p, p);
      if (d2 < best) {
        best = d2;
        l[0] = l[1] = l[2] = l[3] = 0;
        for (int k = 0; k < 3; k++) l[ix[k]] = lt[k];
      }
    }
    if (!any) return 0;
  }
  reduce(s, n, l, v, lout);
  return 1;
}

double khz_gjk(const void *a, khzSupportFn sa, const void *b, khzSupportFn sb, double scale,
               double pa[3], double pb[3]) {
  svert s[4];
  double lam[4] = {1, 0, 0, 0}, v[3], dir[3] = {1, 0, 0}, ndir[3];
  int n = 1;
  double tiny = KHZ_GJK_TOUCH * scale;

  /* start from any point of A - B */
  sa(a, dir, s[0].a);
  khzu_scl3(ndir, dir, -1);
  sb(b, ndir, s[0].b);
  khzu_sub3(s[0].w, s[0].a, s[0].b);
  khzu_copy3(v, s[0].w);

  for (int it = 0; it < 64; it++) {
    double vv = khzu_dot3(v, v);
    if (vv <= tiny * tiny) return 0;

    /* new support point in direction -v */
    svert w;
    khzu_scl3(dir, v, -1);
    sa(a, dir, w.a);
    sb(b, v, w.b);
    khzu_sub3(w.w, w.a, w.b);

    /* converged: no progress toward the origin */
    if (vv - khzu_dot3(v, w.w) <= KHZ_GJK_PROGRESS * vv + KHZ_GJK_PROGRESS_ABS) break;
    int dup = 0;
    for (int i = 0; i < n; i++)
      if (memcmp(s[i].w, w.w, sizeof w.w) == 0) dup = 1;
    if (dup) break;

    s[n++] = w;
    if (!simplex_closest(s, &n, v, lam)) return 0;
  }

  /* closest points from the barycentric weights */
  pa[0] = pa[1] = pa[2] = pb[0] = pb[1] = pb[2] = 0;
  for (int i = 0; i < n; i++) {
    khzu_addScl3(pa, pa, s[i].a, lam[i]);
    khzu_addScl3(pb, pb, s[i].b, lam[i]);
  }
  double d = khzu_norm3(v);
  return d <= tiny ? 0 : d;
}
