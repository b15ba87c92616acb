/* lpdepth.c — the ratio-metric penetration depth by one LP (lpdepth.h).
 *
 * Anitescu & Hart, "An LP approach for computing depth of penetration in
 * piecewise smooth multibody dynamics": the ratio metric (eq. 2), its depth
 * (eq. 3) and the separating normal from the dual (their "Step 1: solve the
 * dual problem"). Coordinates are taken relative to x1, so that the costs
 * are differences of nearby points rather than of world positions.
 */
#include "lp/lpdepth.h"

#include <math.h>
#include <string.h>

#include "collision/collision.h"

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

size_t khz_lpDepthBytes(int maxface) {
  size_t n = (size_t)maxface;
  return align8(khz_lpBytes(4, maxface)) + sizeof(double) * (4 * n + n + n);
}

void khz_lpDepthInit(khzLpDepthWork *w, int maxface, void *mem) {
  w->maxface = maxface;
  khz_lpInit(&w->lp, 4, maxface, mem);
  double *p = (double *)((char *)mem + align8(khz_lpBytes(4, maxface)));
  w->A = p, p += 4 * (size_t)maxface;
  w->cost = p, p += maxface;
  w->y = p;
}

/* the columns of one body: unit a_k, c_k = b_k / |a| - a_k . x_i > 0, cost
 * a_k . (x_i - x1); -1 on a bad face */
static int columns(khzLpDepthWork *w, const khzPolytope *p, const double x1[3], int k0) {
  double rel[3];
  khzu_sub3(rel, p->center, x1);
  for (int f = 0; f < p->nface; f++) {
    const double *fa = p->face + 4 * f;
    double len = khzu_norm3(fa);
    if (!(len > 0) || !isfinite(len) || !isfinite(fa[3])) return -1;
    double *col = w->A + 4 * (size_t)(k0 + f);
    khzu_scl3(col, fa, 1 / len);
    col[3] = fa[3] / len - khzu_dot3(col, p->center);
    if (!(col[3] > 0)) return -1;
    w->cost[k0 + f] = khzu_dot3(col, rel);
  }
  return 0;
}

khzLpStatus khz_lpDepth(khzLpDepthWork *w, const khzPolytope *p1, const khzPolytope *p2,
                        const int *warm, khzLpDepth *out) {
  int m1 = p1->nface, n = p1->nface + p2->nface;
  if (p1->nface < 1 || p2->nface < 1) return KHZ_LP_BADINPUT;
  if (n > w->maxface) return KHZ_LP_TOOBIG;
  if (columns(w, p1, p1->center, 0) || columns(w, p2, p1->center, m1)) return KHZ_LP_BADINPUT;

  /* the dual: sum y_k a_k = 0, sum y_k c_k = 1, y >= 0, min cost^T y = -r */
  static const double rhs[4] = {0, 0, 0, 1};
  double mult[4], obj;
  khzLpStatus st = khz_lpSolveFrom(&w->lp, 4, n, w->A, rhs, w->cost, warm, 0, w->y, mult, &obj);
  out->pivots = w->lp.pivots;
  out->warm = w->lp.warm;
  if (st != KHZ_LP_OPTIMAL) return st;
  for (int i = 0; i < 4; i++) out->basis[i] = w->lp.basis[i];

  /* r and the witness from the multipliers (x relative to x1, -r) */
  double r = -obj;
  out->r = r;
  out->rho = (r - 1) / r;
  khzu_add3(out->point, mult, p1->center);

  /* the separating normal: body 1's faces weighted by their multipliers */
  double n1[3] = {0, 0, 0};
  out->nactive[0] = out->nactive[1] = 0;
  for (int k = 0; k < n; k++) {
    if (w->y[k] <= 0) continue;
    out->nactive[k >= m1]++;
    if (k < m1) khzu_addScl3(n1, n1, w->A + 4 * k, w->y[k]);
  }
  double len = khzu_norm3(n1), d12[3];
  khzu_sub3(d12, p2->center, p1->center);
  if (len > 0)
    khzu_scl3(out->normal, n1, 1 / len);
  else /* r = 0: the centres coincide and every direction separates nothing */
    out->normal[0] = out->normal[1] = 0, out->normal[2] = 1;
  out->dn = khzu_dot3(out->normal, d12);

  /* gradient of rho by LP sensitivity (lpdepth.h) */
  double s = 1 / (r * r), a[3], b[3], t[3];
  khzu_sub3(a, out->point, p1->center);
  khzu_sub3(b, out->point, p2->center);
  khzu_scl3(out->grad, n1, -s);
  khzu_cross(t, a, n1);
  khzu_scl3(out->grad + 3, t, -s);
  khzu_scl3(out->grad + 6, n1, s);
  khzu_cross(t, b, n1);
  khzu_scl3(out->grad + 9, t, s);
  return KHZ_LP_OPTIMAL;
}

int khz_lpPolytopeOfShape(const khzColShape *s, double plane_depth, double *face, int maxface,
                          khzPolytope *p) {
  const double *R = s->rot;
  int nf;
  switch (s->shape) {
    case KHZ_SHAPE_BOX:
      /* +-axis k of the geom frame (column k of rot), half extent size[k] */
      nf = 6;
      if (maxface < nf) return -1;
      for (int k = 0; k < 3; k++) {
        double ax[3] = {R[k], R[3 + k], R[6 + k]}, h = khzu_dot3(ax, s->pos);
        double *f0 = face + 8 * k, *f1 = f0 + 4;
        khzu_copy3(f0, ax), f0[3] = h + s->size[k];
        khzu_scl3(f1, ax, -1), f1[3] = -h + s->size[k];
      }
      khzu_copy3(p->center, s->pos);
      break;
    case KHZ_SHAPE_CONVEX: {
      /* the hull's planes n . y <= d in the geom frame, y = R^T (x - pos) */
      const khzColHull *h = s->hull;
      nf = h->nplane;
      if (maxface < nf) return -1;
      for (int f = 0; f < nf; f++) {
        const double *pl = h->plane + 4 * f;
        double *fw = face + 4 * f;
        khz_shape_toWorldDir(s, pl, fw);
        fw[3] = pl[3] + khzu_dot3(fw, s->pos);
      }
      double c[3] = {0, 0, 0};
      for (int v = 0; v < h->nvert; v++) khzu_add3(c, c, h->vert + 3 * v);
      khzu_scl3(c, c, 1.0 / h->nvert);
      khz_shape_toWorld(s, c, p->center);
      break;
    }
    case KHZ_SHAPE_PLANE: {
      /* the solid side z <= 0 of the geom frame */
      nf = 1;
      if (maxface < nf) return -1;
      double z[3] = {R[2], R[5], R[8]};
      khzu_copy3(face, z), face[3] = khzu_dot3(z, s->pos);
      khzu_addScl3(p->center, s->pos, z, -plane_depth);
      break;
    }
    default:
      return -1;
  }
  p->nface = nf;
  p->face = face;
  return nf;
}
