/* poly.c — the polytopes PEG works on (boxes, convex meshes' hulls, planes
 * as half-spaces) placed in the world, and the exact volume of the
 * intersection of two of them (the paper's accuracy metric, sec. 6). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collision/collision.h"
#include "peg.h"
#include "spatial.h"

/* the faces of each edge: the two planes its two vertices lie nearest to
 * (a hull's faces are planar only to the mesh file's precision) */
static int edge_faces(khzPegPoly *P, double tol) {
  for (int e = 0; e < P->ne; e++) {
    const double *a = P->v[P->e[e][0]], *b = P->v[P->e[e][1]];
    double best[2] = {INFINITY, INFINITY};
    P->ef[e][0] = P->ef[e][1] = -1;
    for (int f = 0; f < P->nf; f++) {
      double err = fmax(fabs(khzu_dot3(P->n[f], a) - P->d[f]), fabs(khzu_dot3(P->n[f], b) - P->d[f]));
      if (err < best[0]) {
        best[1] = best[0], P->ef[e][1] = P->ef[e][0];
        best[0] = err, P->ef[e][0] = f;
      } else if (err < best[1]) {
        best[1] = err, P->ef[e][1] = f;
      }
    }
    if (!(best[1] < tol)) return -1;
  }
  return 0;
}

int khz_pegPoly(const khzModel *m, const khzData *d, int g, khzPegPoly *P) {
  const khzColModel *cm = m->collision;
  const khzColGeom *cg = &cm->geom[g];
  int b = m->geom_body[g];
  double R[9], lr[9], pos[3];
  khzu_quat2mat(lr, m->geom_quat + 4 * g);
  khzu_mulMatVec3(pos, d->xrot + 9 * b, m->geom_pos + 3 * g);
  khzu_add3(pos, pos, d->xpos + 3 * b);
  khzu_mulMat3(R, d->xrot + 9 * b, lr);
  P->geom = g, P->body = b, P->plane = 0;
  P->nv = P->nf = P->ne = 0;
  if (cg->shape == KHZ_SHAPE_PLANE) {
    P->plane = 1, P->nf = 1;
    P->n[0][0] = R[2], P->n[0][1] = R[5], P->n[0][2] = R[8];
    P->d[0] = khzu_dot3(P->n[0], pos);
    khzu_copy3(P->center, pos);
    P->radius = 0;
    return 1;
  }
  double lv[KHZ_PEG_MAXV][3], ln[KHZ_PEG_MAXF][3];
  if (cg->shape == KHZ_SHAPE_BOX) {
    const double *s = m->geom_size + 3 * g;
    for (int i = 0; i < 8; i++)
      for (int k = 0; k < 3; k++) lv[i][k] = (i >> k & 1) ? s[k] : -s[k];
    P->nv = 8, P->nf = 6;
    for (int f = 0; f < 6; f++) {
      memset(ln[f], 0, sizeof ln[f]);
      ln[f][f / 2] = f % 2 ? 1 : -1;
    }
    /* the 12 edges join corners that differ in one coordinate */
    for (int i = 0; i < 8; i++)
      for (int k = 0; k < 3; k++)
        if (!(i >> k & 1)) P->e[P->ne][0] = i, P->e[P->ne][1] = i | 1 << k, P->ne++;
  } else if (cg->shape == KHZ_SHAPE_CONVEX) {
    const khzColHull *h = &cm->hull[cg->hull];
    if (h->nvert > KHZ_PEG_MAXV || h->nplane > KHZ_PEG_MAXF || h->nedge > KHZ_PEG_MAXE) return -1;
    P->nv = h->nvert, P->nf = h->nplane, P->ne = h->nedge;
    memcpy(lv, h->vert, 3 * sizeof(double) * (size_t)h->nvert);
    for (int f = 0; f < h->nplane; f++) khzu_copy3(ln[f], h->plane + 4 * f);
    for (int e = 0; e < h->nedge; e++) P->e[e][0] = h->edge[2 * e], P->e[e][1] = h->edge[2 * e + 1];
  } else {
    return 0;
  }
  double c[3] = {0, 0, 0};
  for (int i = 0; i < P->nv; i++) {
    khzu_mulMatVec3(P->v[i], R, lv[i]);
    khzu_add3(P->v[i], P->v[i], pos);
    khzu_addScl3(c, c, P->v[i], 1.0 / P->nv);
  }
  double r = 0;
  for (int i = 0; i < P->nv; i++) {
    double t[3];
    khzu_sub3(t, P->v[i], c);
    r = fmax(r, khzu_norm3(t));
  }
  khzu_copy3(P->center, c);
  P->radius = r;
  /* each face's plane through its farthest vertex along the normal */
  for (int f = 0; f < P->nf; f++) {
    khzu_mulMatVec3(P->n[f], R, ln[f]);
    double dm = -INFINITY;
    for (int i = 0; i < P->nv; i++) dm = fmax(dm, khzu_dot3(P->n[f], P->v[i]));
    P->d[f] = dm;
  }
  return edge_faces(P, 1e-4 * (1 + r)) == 0 ? 1 : -1;
}

/* ------------------------------------------------------------- overlap -- */

#define OV_MAXP 160 /* points per polygon */

typedef struct ovPoly {
  int np;
  double n[3]; /* outward normal */
  double (*p)[3];
} ovPoly;

/* orders the points of a convex planar polygon with normal n by angle */
static void order_polygon(ovPoly *g) {
  if (g->np < 3) return;
  double c[3] = {0, 0, 0}, u[3], w[3], ang[OV_MAXP];
  for (int i = 0; i < g->np; i++) khzu_addScl3(c, c, g->p[i], 1.0 / g->np);
  khzu_orthogonal(u, g->n);
  khzu_cross(w, g->n, u);
  for (int i = 0; i < g->np; i++) {
    double r[3];
    khzu_sub3(r, g->p[i], c);
    ang[i] = atan2(khzu_dot3(r, w), khzu_dot3(r, u));
  }
  for (int i = 1; i < g->np; i++) /* insertion sort */
    for (int j = i; j > 0 && ang[j] < ang[j - 1]; j--) {
      double t = ang[j], tp[3];
      ang[j] = ang[j - 1], ang[j - 1] = t;
      khzu_copy3(tp, g->p[j]);
      khzu_copy3(g->p[j], g->p[j - 1]);
      khzu_copy3(g->p[j - 1], tp);
    }
}

/* clips the polygon by n.x <= d in place; appends the cut's points to cut */
static void clip_polygon(ovPoly *g, const double n[3], double d, double (*tmp)[3], ovPoly *cut) {
  int k = 0;
  for (int i = 0; i < g->np; i++) {
    const double *a = g->p[i], *b = g->p[(i + 1) % g->np];
    double sa = khzu_dot3(n, a) - d, sb = khzu_dot3(n, b) - d;
    if (sa <= 0 && k < OV_MAXP) khzu_copy3(tmp[k++], a);
    if ((sa < 0 && sb > 0) || (sa > 0 && sb < 0)) {
      double t = sa / (sa - sb), x[3];
      for (int j = 0; j < 3; j++) x[j] = a[j] + t * (b[j] - a[j]);
      if (k < OV_MAXP) khzu_copy3(tmp[k++], x);
      if (cut->np < OV_MAXP) khzu_copy3(cut->p[cut->np++], x);
    } else if (sa == 0 && cut->np < OV_MAXP) {
      khzu_copy3(cut->p[cut->np++], a);
    }
  }
  memcpy(g->p, tmp, (size_t)k * sizeof *tmp);
  g->np = k;
}

double khz_pegOverlap(const khzPegPoly *A, const khzPegPoly *B) {
  if (A->plane && B->plane) return 0;
  if (A->plane) {
    const khzPegPoly *t = A;
    A = B, B = t;
  }
  if (!B->plane) {
    double r[3];
    khzu_sub3(r, A->center, B->center);
    if (khzu_norm3(r) > A->radius + B->radius) return 0;
  }
  int maxg = A->nf + B->nf;
  ovPoly *g = calloc((size_t)maxg, sizeof *g);
  double(*pts)[3] = malloc(sizeof(double[3]) * OV_MAXP * (size_t)(maxg + 1));
  if (!g || !pts) {
    free(g), free(pts);
    return NAN;
  }
  double(*tmp)[3] = pts + (size_t)OV_MAXP * maxg;
  int ng = 0;
  /* A's faces as polygons: the vertices on each plane, ordered */
  for (int f = 0; f < A->nf; f++) {
    ovPoly *q = g + ng++;
    q->p = pts + (size_t)OV_MAXP * (ng - 1);
    khzu_copy3(q->n, A->n[f]);
    for (int i = 0; i < A->nv && q->np < OV_MAXP; i++)
      if (fabs(khzu_dot3(A->n[f], A->v[i]) - A->d[f]) < 1e-7 * (1 + A->radius)) khzu_copy3(q->p[q->np++], A->v[i]);
    order_polygon(q);
  }
  /* clipped by B's half-spaces; each cut adds the polygon of its new points */
  for (int f = 0; f < B->nf; f++) {
    ovPoly *cut = g + ng;
    cut->p = pts + (size_t)OV_MAXP * ng;
    cut->np = 0;
    khzu_copy3(cut->n, B->n[f]);
    int any = 0;
    for (int i = 0; i < ng; i++) {
      for (int j = 0; j < g[i].np; j++) any |= khzu_dot3(B->n[f], g[i].p[j]) > B->d[f];
    }
    if (!any) continue;
    for (int i = 0; i < ng; i++) clip_polygon(g + i, B->n[f], B->d[f], tmp, cut);
    order_polygon(cut);
    ng++;
  }
  /* V = 1/3 sum over faces of (n . x_f) area_f */
  double vol = 0, ref[3] = {0, 0, 0};
  int nref = 0;
  for (int i = 0; i < ng; i++)
    for (int j = 0; j < g[i].np; j++) khzu_add3(ref, ref, g[i].p[j]), nref++;
  if (nref) khzu_scl3(ref, ref, 1.0 / nref);
  for (int i = 0; i < ng; i++) {
    if (g[i].np < 3) continue;
    double area[3] = {0, 0, 0};
    for (int j = 1; j + 1 < g[i].np; j++) {
      double e1[3], e2[3], x[3];
      khzu_sub3(e1, g[i].p[j], g[i].p[0]);
      khzu_sub3(e2, g[i].p[j + 1], g[i].p[0]);
      khzu_cross(x, e1, e2);
      khzu_add3(area, area, x);
    }
    double a = 0.5 * khzu_norm3(area), r[3];
    khzu_sub3(r, g[i].p[0], ref);
    vol += khzu_dot3(g[i].n, r) * a / 3;
  }
  free(g), free(pts);
  return vol > 0 ? vol : 0;
}
