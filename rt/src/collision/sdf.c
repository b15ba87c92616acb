/* sdf.c — triangle meshes for collision: bounding-volume hierarchies, the exact
 * closest point with its sign, and the signed distance field the vertices of
 * the other body are queried against (Drumwright Appendix I-A: "we represent
 * collision geometries using both triangle meshes and signed distance
 * functions (computed offline)").
 *
 * The paper uses an adaptively sampled distance field (Frisken et al.); khz
 * uses its two-level cousin, a sparse brick grid: a coarse grid of spacing
 * H = 4 h over the mesh bounds padded by one coarse cell, and, for every
 * coarse cell whose centre lies within sqrt(3)/2 H + h of the surface (the
 * narrow band), a brick of 5^3 samples at spacing h. Every sample is an exact
 * signed distance (closest triangle through the BVH; sign from the angle-
 * weighted pseudo-normal of the closest feature, Baerentzen and Aanaes 2005,
 * which is exact for a closed, consistently oriented mesh); queries are
 * trilinear, in a brick where there is one, else in the coarse grid.
 *
 * Resolution rule: h = min(L / 48, l / 6) with L the largest and l the
 * smallest extent of the mesh bounds, coarsened when needed so that the
 * narrow band needs about 4096 bricks at most (h >= sqrt(2 A / 4096) / 4 with
 * A the surface area), and never finer than L / 512.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collision.h"

#define KHZ_SDF_BRICK 4
#define KHZ_SDF_MAXBRICKS 4096.0
#define KHZ_BVH_LEAF 4
#define KHZ_BVH_STACK 128

/* ------------------------------------------------------------------ BVH -- */

typedef struct {
  const double *cen;
  int axis;
} bvh_sort_ctx;

static int bvh_cmp(const void *a, const void *b, void *arg) {
  const bvh_sort_ctx *c = arg;
  double x = c->cen[3 * *(const int *)a + c->axis], y = c->cen[3 * *(const int *)b + c->axis];
  if (x < y) return -1;
  if (x > y) return 1;
  return *(const int *)a - *(const int *)b;
}

/* builds the subtree of order[first .. first + count) into node[idx] */
static void bvh_build(khzColNode *node, int *nnode, int idx, int *order, const double *ilo,
                      const double *ihi, const double *cen, int first, int count) {
  khzColNode *nd = &node[idx];
  for (int k = 0; k < 3; k++) nd->lo[k] = DBL_MAX, nd->hi[k] = -DBL_MAX;
  double clo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, chi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX};
  for (int i = first; i < first + count; i++) {
    int it = order[i];
    for (int k = 0; k < 3; k++) {
      nd->lo[k] = fmin(nd->lo[k], ilo[3 * it + k]);
      nd->hi[k] = fmax(nd->hi[k], ihi[3 * it + k]);
      clo[k] = fmin(clo[k], cen[3 * it + k]);
      chi[k] = fmax(chi[k], cen[3 * it + k]);
    }
  }
  if (count <= KHZ_BVH_LEAF) {
    nd->first = first, nd->count = count, nd->child = -1;
    return;
  }

  /* median split on the longest axis of the centroids */
  int axis = 0;
  for (int k = 1; k < 3; k++)
    if (chi[k] - clo[k] > chi[axis] - clo[axis]) axis = k;
  bvh_sort_ctx c = {cen, axis};
  qsort_r(order + first, (size_t)count, sizeof(int), bvh_cmp, &c);
  int half = count / 2;
  int child = *nnode;
  *nnode += 2;
  nd->child = child, nd->first = first, nd->count = 0;
  bvh_build(node, nnode, child, order, ilo, ihi, cen, first, half);
  bvh_build(node, nnode, child + 1, order, ilo, ihi, cen, first + half, count - half);
}

/* squared distance from p to a node's box */
static double box_dist2(const khzColNode *nd, const double p[3]) {
  double s = 0;
  for (int k = 0; k < 3; k++) {
    double e = p[k] < nd->lo[k] ? nd->lo[k] - p[k] : p[k] > nd->hi[k] ? p[k] - nd->hi[k] : 0;
    s += e * e;
  }
  return s;
}

/* ------------------------------------------------------- closest point -- */

double khz_trimesh_closest(const khzColTrimesh *t, const double p[3], double q[3], int *tri,
                           double nrm[3]) {
  double best = DBL_MAX;
  int btri = -1, bregion = 0;
  double bq[3] = {0, 0, 0};
  int stack[KHZ_BVH_STACK], ns = 0;
  stack[ns++] = 0;
  while (ns) {
    const khzColNode *nd = &t->tnode[stack[--ns]];
    if (box_dist2(nd, p) >= best) continue;
    if (nd->count) {
      /* leaf: exact point-triangle distances */
      for (int i = nd->first; i < nd->first + nd->count; i++) {
        int f = t->torder[i], region;
        const int *v = t->tri + 3 * f;
        double c[3], dd[3];
        khzu_closestOnTriangle(p, t->vert + 3 * v[0], t->vert + 3 * v[1], t->vert + 3 * v[2], c,
                               &region);
        khzu_sub3(dd, p, c);
        double d2 = khzu_dot3(dd, dd);
        if (d2 < best) best = d2, btri = f, bregion = region, khzu_copy3(bq, c);
      }
      continue;
    }
    /* visit the nearer child first */
    int a = nd->child, b = nd->child + 1;
    if (box_dist2(&t->tnode[a], p) < box_dist2(&t->tnode[b], p)) a = b, b = nd->child;
    if (ns + 2 <= KHZ_BVH_STACK) stack[ns++] = a, stack[ns++] = b;
  }

  /* the pseudo-normal of the closest feature gives the sign */
  const double *pn;
  const int *v = t->tri + 3 * btri;
  if (bregion == 0)
    pn = t->tnormal + 3 * btri;
  else if (bregion <= 3)
    pn = t->vnormal + 3 * v[bregion - 1];
  else
    pn = t->enormal + 9 * btri + 3 * (bregion - 4);
  double dd[3];
  khzu_sub3(dd, p, bq);
  double dist = sqrt(best);
  if (q) khzu_copy3(q, bq);
  if (tri) *tri = btri;
  if (nrm) khzu_copy3(nrm, pn);
  return khzu_dot3(dd, pn) < 0 ? -dist : dist;
}

/* ------------------------------------------------------ vertex queries -- */

void khz_trimesh_vertsInBox(const khzColTrimesh *t, const double lo[3], const double hi[3],
                            int (*fn)(void *user, int v), void *user) {
  int stack[KHZ_BVH_STACK], ns = 0;
  stack[ns++] = 0;
  while (ns) {
    const khzColNode *nd = &t->vnode[stack[--ns]];
    if (nd->lo[0] > hi[0] || nd->hi[0] < lo[0] || nd->lo[1] > hi[1] || nd->hi[1] < lo[1] ||
        nd->lo[2] > hi[2] || nd->hi[2] < lo[2])
      continue;
    if (nd->count) {
      for (int i = nd->first; i < nd->first + nd->count; i++) {
        int v = t->vorder[i];
        const double *x = t->vert + 3 * v;
        if (x[0] >= lo[0] && x[0] <= hi[0] && x[1] >= lo[1] && x[1] <= hi[1] && x[2] >= lo[2] &&
            x[2] <= hi[2] && fn(user, v))
          return;
      }
      continue;
    }
    if (ns + 2 <= KHZ_BVH_STACK) stack[ns++] = nd->child + 1, stack[ns++] = nd->child;
  }
}

void khz_trimesh_vertsBelow(const khzColTrimesh *t, const double n[3], double d,
                            int (*fn)(void *user, int v), void *user) {
  int stack[KHZ_BVH_STACK], ns = 0;
  stack[ns++] = 0;
  while (ns) {
    const khzColNode *nd = &t->vnode[stack[--ns]];
    double lowest = -d;
    for (int k = 0; k < 3; k++) lowest += n[k] * (n[k] > 0 ? nd->lo[k] : nd->hi[k]);
    if (lowest > 0) continue;
    if (nd->count) {
      for (int i = nd->first; i < nd->first + nd->count; i++) {
        int v = t->vorder[i];
        if (khzu_dot3(n, t->vert + 3 * v) <= d && fn(user, v)) return;
      }
      continue;
    }
    if (ns + 2 <= KHZ_BVH_STACK) stack[ns++] = nd->child + 1, stack[ns++] = nd->child;
  }
}

/* ---------------------------------------------------------------- grid -- */

static double trilinear(const float *s, int sx, int sy, int i, int j, int k, const double f[3]) {
  const float *c = s + (size_t)k * sx * sy + (size_t)j * sx + i;
  double c00 = c[0] + f[0] * (c[1] - c[0]);
  double c10 = c[sx] + f[0] * (c[sx + 1] - c[sx]);
  double c01 = c[sx * sy] + f[0] * (c[sx * sy + 1] - c[sx * sy]);
  double c11 = c[sx * sy + sx] + f[0] * (c[sx * sy + sx + 1] - c[sx * sy + sx]);
  double c0 = c00 + f[1] * (c10 - c00), c1 = c01 + f[1] * (c11 - c01);
  return c0 + f[2] * (c1 - c0);
}

double khz_trimesh_sdf(const khzColTrimesh *t, const double p[3]) {
  double H = t->brick * t->h, x[3], outside = 0;

  /* clamp into the grid; the distance to it is added back */
  for (int k = 0; k < 3; k++) {
    double hi = t->origin[k] + t->nc[k] * H;
    x[k] = khzu_clamp(p[k], t->origin[k], hi);
    outside += (p[k] - x[k]) * (p[k] - x[k]);
  }
  int ci[3];
  double f[3];
  for (int k = 0; k < 3; k++) {
    double r = (x[k] - t->origin[k]) / H;
    int c = (int)floor(r);
    if (c < 0) c = 0;
    if (c > t->nc[k] - 1) c = t->nc[k] - 1;
    ci[k] = c;
    f[k] = r - c;
  }
  double v;
  int b = t->brickof[((size_t)ci[2] * t->nc[1] + ci[1]) * t->nc[0] + ci[0]];
  if (b >= 0) {
    /* inside a brick: fine trilinear */
    int B = t->brick, fi[3];
    double ff[3];
    for (int k = 0; k < 3; k++) {
      double r = f[k] * B;
      int c = (int)floor(r);
      if (c < 0) c = 0;
      if (c > B - 1) c = B - 1;
      fi[k] = c;
      ff[k] = r - c;
    }
    v = trilinear(t->bricks + (size_t)b * (B + 1) * (B + 1) * (B + 1), B + 1, B + 1, fi[0], fi[1],
                  fi[2], ff);
  } else {
    v = trilinear(t->coarse, t->nc[0] + 1, t->nc[1] + 1, ci[0], ci[1], ci[2], f);
  }
  return outside > 0 ? v + sqrt(outside) : v;
}

/* ---------------------------------------------------------------- build -- */

void khz_trimesh_free(khzColTrimesh *t) {
  free(t->vert);
  free(t->tri);
  free(t->tnormal);
  free(t->vnormal);
  free(t->enormal);
  free(t->tnode);
  free(t->torder);
  free(t->vnode);
  free(t->vorder);
  free(t->coarse);
  free(t->brickof);
  free(t->bricks);
  memset(t, 0, sizeof *t);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double angle_at(const double *a, const double *b, const double *c) {
  double u[3], v[3];
  khzu_sub3(u, b, a);
  khzu_sub3(v, c, a);
  double nu = khzu_norm3(u), nv = khzu_norm3(v);
  if (nu == 0 || nv == 0) return 0;
  return acos(khzu_clamp(khzu_dot3(u, v) / (nu * nv), -1, 1));
}

int khz_trimesh_build(khzColTrimesh *t, const double *vert, int nvert, const int *tri, int ntri) {
  memset(t, 0, sizeof *t);
  t->nvert = nvert, t->ntri = ntri;
  t->vert = malloc((size_t)(3 * nvert) * sizeof(double));
  t->tri = malloc((size_t)(3 * ntri) * sizeof(int));
  t->tnormal = malloc((size_t)(3 * ntri) * sizeof(double));
  t->vnormal = calloc((size_t)(3 * nvert), sizeof(double));
  t->enormal = malloc((size_t)(9 * ntri) * sizeof(double));
  t->tnode = malloc((size_t)(2 * ntri) * sizeof(khzColNode));
  t->torder = malloc((size_t)ntri * sizeof(int));
  t->vnode = malloc((size_t)(2 * nvert) * sizeof(khzColNode));
  t->vorder = malloc((size_t)nvert * sizeof(int));
  uint64_t *ekey = malloc((size_t)(3 * ntri) * sizeof(uint64_t));
  double *ilo = malloc((size_t)(3 * (ntri > nvert ? ntri : nvert)) * sizeof(double));
  double *ihi = malloc((size_t)(3 * (ntri > nvert ? ntri : nvert)) * sizeof(double));
  double *cen = malloc((size_t)(3 * (ntri > nvert ? ntri : nvert)) * sizeof(double));
  int ok = t->vert && t->tri && t->tnormal && t->vnormal && t->enormal && t->tnode &&
           t->torder && t->vnode && t->vorder && ekey && ilo && ihi && cen;
  if (!ok) goto fail;
  memcpy(t->vert, vert, (size_t)(3 * nvert) * sizeof(double));
  memcpy(t->tri, tri, (size_t)(3 * ntri) * sizeof(int));

  /* face normals and angle-weighted vertex pseudo-normals */
  double area = 0;
  for (int f = 0; f < ntri; f++) {
    const int *v = tri + 3 * f;
    const double *a = vert + 3 * v[0], *b = vert + 3 * v[1], *c = vert + 3 * v[2];
    double ab[3], ac[3], *n = t->tnormal + 3 * f;
    khzu_sub3(ab, b, a);
    khzu_sub3(ac, c, a);
    khzu_cross(n, ab, ac);
    area += 0.5 * khzu_normalize3(n);
    double w[3] = {angle_at(a, b, c), angle_at(b, c, a), angle_at(c, a, b)};
    for (int k = 0; k < 3; k++) khzu_addScl3(t->vnormal + 3 * v[k], t->vnormal + 3 * v[k], n, w[k]);
  }
  for (int i = 0; i < nvert; i++)
    if (khzu_normalize3(t->vnormal + 3 * i) == 0) t->vnormal[3 * i + 2] = 1;

  /* edge pseudo-normals: the two faces of each edge (sorted undirected keys) */
  for (int f = 0; f < ntri; f++)
    for (int k = 0; k < 3; k++) {
      uint64_t a = (uint64_t)tri[3 * f + k], b = (uint64_t)tri[3 * f + (k + 1) % 3];
      uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
      ekey[3 * f + k] = ((lo * (uint64_t)nvert + hi) << 22) | (uint64_t)(3 * f + k);
    }
  int keys_ok = (uint64_t)nvert * (uint64_t)nvert < ((uint64_t)1 << 41) && 3 * ntri < (1 << 22);
  for (int e = 0; e < 3 * ntri; e++) khzu_copy3(t->enormal + 3 * e, t->tnormal + 3 * (e / 3));
  if (keys_ok) {
    qsort(ekey, (size_t)(3 * ntri), sizeof(uint64_t), cmp_u64);
    for (int e = 0; e + 1 < 3 * ntri; e++) {
      if ((ekey[e] >> 22) != (ekey[e + 1] >> 22)) continue;
      int x = (int)(ekey[e] & 0x3fffff), y = (int)(ekey[e + 1] & 0x3fffff);
      double s[3];
      khzu_add3(s, t->tnormal + 3 * (x / 3), t->tnormal + 3 * (y / 3));
      if (khzu_normalize3(s) > 0) khzu_copy3(t->enormal + 3 * x, s), khzu_copy3(t->enormal + 3 * y, s);
      e++;
    }
  }

  /* BVH over triangles */
  for (int f = 0; f < ntri; f++) {
    t->torder[f] = f;
    for (int k = 0; k < 3; k++) {
      double a = vert[3 * tri[3 * f] + k], b = vert[3 * tri[3 * f + 1] + k],
             c = vert[3 * tri[3 * f + 2] + k];
      ilo[3 * f + k] = fmin(a, fmin(b, c));
      ihi[3 * f + k] = fmax(a, fmax(b, c));
      cen[3 * f + k] = (a + b + c) / 3;
    }
  }
  t->ntnode = 1;
  bvh_build(t->tnode, &t->ntnode, 0, t->torder, ilo, ihi, cen, 0, ntri);

  /* BVH over vertices */
  for (int v = 0; v < nvert; v++) t->vorder[v] = v;
  t->nvnode = 1;
  bvh_build(t->vnode, &t->nvnode, 0, t->vorder, vert, vert, vert, 0, nvert);
  for (int k = 0; k < 3; k++) t->lo[k] = t->vnode[0].lo[k], t->hi[k] = t->vnode[0].hi[k];
  free(ekey), free(ilo), free(ihi), free(cen);
  ekey = NULL, ilo = ihi = cen = NULL;

  /* grid resolution (see the rule at the top) */
  double ext[3], L = 0, l = DBL_MAX;
  khzu_sub3(ext, t->hi, t->lo);
  for (int k = 0; k < 3; k++) L = fmax(L, ext[k]), l = fmin(l, ext[k]);
  int B = KHZ_SDF_BRICK;
  double h = fmin(L / 48, l / 6);
  h = fmax(h, sqrt(2 * area / KHZ_SDF_MAXBRICKS) / B);
  h = fmax(h, L / 512);
  double H = B * h;
  t->h = h, t->brick = B;
  for (int k = 0; k < 3; k++) {
    t->origin[k] = t->lo[k] - H;
    t->nc[k] = (int)ceil(ext[k] / H) + 2;
  }

  /* coarse samples */
  size_t ncn = (size_t)(t->nc[0] + 1) * (t->nc[1] + 1) * (t->nc[2] + 1);
  size_t ncell = (size_t)t->nc[0] * t->nc[1] * t->nc[2];
  t->coarse = malloc(ncn * sizeof(float));
  t->brickof = malloc(ncell * sizeof(int));
  if (!t->coarse || !t->brickof) goto fail;
  for (int k = 0; k <= t->nc[2]; k++)
    for (int j = 0; j <= t->nc[1]; j++)
      for (int i = 0; i <= t->nc[0]; i++) {
        double p[3] = {t->origin[0] + i * H, t->origin[1] + j * H, t->origin[2] + k * H};
        t->coarse[((size_t)k * (t->nc[1] + 1) + j) * (t->nc[0] + 1) + i] =
            (float)khz_trimesh_closest(t, p, NULL, NULL, NULL);
      }

  /* bricks in the narrow band */
  double band = 0.5 * sqrt(3.0) * H + h;
  int nb = 0;
  for (size_t c = 0; c < ncell; c++) {
    int i = (int)(c % t->nc[0]), j = (int)((c / t->nc[0]) % t->nc[1]),
        k = (int)(c / ((size_t)t->nc[0] * t->nc[1]));
    double p[3] = {t->origin[0] + (i + 0.5) * H, t->origin[1] + (j + 0.5) * H,
                   t->origin[2] + (k + 0.5) * H};
    t->brickof[c] = fabs(khz_trimesh_closest(t, p, NULL, NULL, NULL)) <= band ? nb++ : -1;
  }
  size_t bs = (size_t)(B + 1) * (B + 1) * (B + 1);
  t->nbrick = nb;
  t->bricks = malloc((size_t)nb * bs * sizeof(float) + 1);
  if (!t->bricks) goto fail;
  for (size_t c = 0; c < ncell; c++) {
    int b = t->brickof[c];
    if (b < 0) continue;
    int i = (int)(c % t->nc[0]), j = (int)((c / t->nc[0]) % t->nc[1]),
        k = (int)(c / ((size_t)t->nc[0] * t->nc[1]));
    float *s = t->bricks + (size_t)b * bs;
    for (int z = 0; z <= B; z++)
      for (int y = 0; y <= B; y++)
        for (int x = 0; x <= B; x++) {
          double p[3] = {t->origin[0] + i * H + x * h, t->origin[1] + j * H + y * h,
                         t->origin[2] + k * H + z * h};
          s[((size_t)z * (B + 1) + y) * (B + 1) + x] =
              (float)khz_trimesh_closest(t, p, NULL, NULL, NULL);
        }
  }
  return 0;

fail:
  free(ekey), free(ilo), free(ihi), free(cen);
  khz_trimesh_free(t);
  return -1;
}
