/* hull.c — 3D convex hull of a mesh's vertices, at compile time.
 *
 * A mesh geom with convex = 1 collides as the convex hull of its vertices (as
 * in MuJoCo), so a mesh that is only nearly convex, or open, still gets a
 * closed convex shape. The hull is Quickhull (Barber, Dobkin and Huhdanpaa
 * 1996): start from a tetrahedron of extreme points; every other point waits in
 * the conflict list of one face it lies above (points inside are dropped);
 * each face with a list in turn adds its farthest point, replacing the faces
 * that point sees with a fan to the horizon, and hands the points of the
 * removed faces to the new ones. Expected O(n log n). The
 * result is a half-space form for the narrow phase: coplanar triangles merged
 * into one face plane each, and the feature edges between non-coplanar faces
 * (the edges of the Drumwright Appendix I intersection volume).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collision.h"

/* relative to the points' extent (diagonal of their bounds): eps, the distance
 * above a face from which a point sees it */
#define KHZ_HULL_EPS 1e-10
/* relative to the extent: the initial tetrahedron's edge, height or depth
 * below which the points are degenerate (collinear, coplanar) */
#define KHZ_HULL_FLAT 1e-7
/* 1 - cos between the normals of neighbouring faces within which they merge ... */
#define KHZ_HULL_COPLANAR_COS 1e-9
/* ... when their plane offsets differ by less than this many eps */
#define KHZ_HULL_COPLANAR_D 1e3

typedef struct {
  int v[3];   /* counter-clockwise seen from outside */
  int nb[3];  /* face across edge v[k] -> v[k+1] */
  double n[3], d;
  int alive, mark;
  int head;   /* first point of the conflict list, -1 when empty */
} hface;

typedef struct {
  const double *p;
  hface *f;
  int nf, capf;
} hctx;

static void face_plane(hctx *c, hface *f) {
  const double *a = c->p + 3 * f->v[0], *b = c->p + 3 * f->v[1], *q = c->p + 3 * f->v[2];
  double ab[3], aq[3];
  khzu_sub3(ab, b, a);
  khzu_sub3(aq, q, a);
  khzu_cross(f->n, ab, aq);
  khzu_normalize3(f->n);
  f->d = khzu_dot3(f->n, a);
}

static int new_face(hctx *c, int a, int b, int q) {
  if (c->nf == c->capf) {
    int cap = c->capf ? 2 * c->capf : 64;
    hface *nf = realloc(c->f, (size_t)cap * sizeof *nf);
    if (!nf) return -1;
    c->f = nf;
    c->capf = cap;
  }
  hface *f = &c->f[c->nf];
  memset(f, 0, sizeof *f);
  f->v[0] = a, f->v[1] = b, f->v[2] = q;
  f->nb[0] = f->nb[1] = f->nb[2] = -1;
  f->alive = 1;
  f->head = -1;
  face_plane(c, f);
  return c->nf++;
}

static double dist_line(const double *p, const double *a, const double *b) {
  double ab[3], ap[3], x[3];
  khzu_sub3(ab, b, a);
  khzu_sub3(ap, p, a);
  khzu_cross(x, ab, ap);
  double l = khzu_norm3(ab);
  return l > 0 ? khzu_norm3(x) / l : khzu_norm3(ap);
}

/* the edge index k of face f with v[k] == a and v[k+1] == b, or -1 */
static int edge_of(const hface *f, int a, int b) {
  for (int k = 0; k < 3; k++)
    if (f->v[k] == a && f->v[(k + 1) % 3] == b) return k;
  return -1;
}

void khz_hull_free(khzColHull *h) {
  free(h->vert);
  free(h->plane);
  free(h->edge);
  free(h->tri);
  memset(h, 0, sizeof *h);
}

int khz_hull_build(khzColHull *h, const double *pts, int n) {
  memset(h, 0, sizeof *h);
  if (n < 4) return -1;

  /* tolerance relative to the extent of the points */
  double lo[3] = {pts[0], pts[1], pts[2]}, hi[3] = {pts[0], pts[1], pts[2]};
  for (int i = 1; i < n; i++)
    for (int k = 0; k < 3; k++) {
      lo[k] = fmin(lo[k], pts[3 * i + k]);
      hi[k] = fmax(hi[k], pts[3 * i + k]);
    }
  double ext[3];
  khzu_sub3(ext, hi, lo);
  double size = khzu_norm3(ext);
  if (!(size > 0)) return -1;
  double eps = KHZ_HULL_EPS * size;

  /* initial tetrahedron: extreme x, farthest from it, from their line, from their plane */
  int i0 = 0, i1 = -1, i2 = -1, i3 = -1;
  for (int i = 1; i < n; i++)
    if (pts[3 * i] < pts[3 * i0]) i0 = i;
  double best = 0;
  for (int i = 0; i < n; i++) {
    double dd[3];
    khzu_sub3(dd, pts + 3 * i, pts + 3 * i0);
    if (khzu_norm3(dd) > best) best = khzu_norm3(dd), i1 = i;
  }
  if (i1 < 0 || best < KHZ_HULL_FLAT * size) return -1;
  best = 0;
  for (int i = 0; i < n; i++) {
    double dl = dist_line(pts + 3 * i, pts + 3 * i0, pts + 3 * i1);
    if (dl > best) best = dl, i2 = i;
  }
  if (i2 < 0 || best < KHZ_HULL_FLAT * size) return -1;
  double e1[3], e2[3], pn[3];
  khzu_sub3(e1, pts + 3 * i1, pts + 3 * i0);
  khzu_sub3(e2, pts + 3 * i2, pts + 3 * i0);
  khzu_cross(pn, e1, e2);
  khzu_normalize3(pn);
  best = 0;
  double sgn = 1;
  for (int i = 0; i < n; i++) {
    double dd[3];
    khzu_sub3(dd, pts + 3 * i, pts + 3 * i0);
    double s = khzu_dot3(pn, dd);
    if (fabs(s) > best) best = fabs(s), i3 = i, sgn = s;
  }
  if (i3 < 0 || best < KHZ_HULL_FLAT * size) return -1;

  hctx c = {.p = pts};
  int *start = malloc((size_t)n * sizeof(int)), *next = malloc((size_t)n * sizeof(int));
  int *stack = NULL, *vis = NULL, *hor = NULL;
  int capstack = 0;
  if (!start || !next) {
    free(start);
    free(next);
    return -1;
  }
  for (int i = 0; i < n; i++) start[i] = -1;

  /* faces of the tetrahedron, outward: i3 lies above (i0, i1, i2) when sgn > 0 */
  int t[4][3];
  if (sgn > 0) {
    int tt[4][3] = {{i0, i2, i1}, {i0, i1, i3}, {i1, i2, i3}, {i2, i0, i3}};
    memcpy(t, tt, sizeof t);
  } else {
    int tt[4][3] = {{i0, i1, i2}, {i1, i0, i3}, {i2, i1, i3}, {i0, i2, i3}};
    memcpy(t, tt, sizeof t);
  }
  for (int k = 0; k < 4; k++)
    if (new_face(&c, t[k][0], t[k][1], t[k][2]) < 0) goto oom;
  for (int a = 0; a < 4; a++)
    for (int k = 0; k < 3; k++) {
      int va = c.f[a].v[k], vb = c.f[a].v[(k + 1) % 3];
      for (int b = 0; b < 4; b++)
        if (b != a && edge_of(&c.f[b], vb, va) >= 0) c.f[a].nb[k] = b;
    }

  /* every other point into the conflict list of a face it lies above */
  for (int i = 0; i < n; i++) {
    next[i] = -1;
    if (i == i0 || i == i1 || i == i2 || i == i3) continue;
    for (int f = 0; f < 4; f++)
      if (khzu_dot3(c.f[f].n, pts + 3 * i) - c.f[f].d > eps) {
        next[i] = c.f[f].head;
        c.f[f].head = i;
        break;
      }
  }

  /* faces in creation order: each live one with a list adds its farthest point */
  for (int cur = 0; cur < c.nf; cur++) {
    if (!c.f[cur].alive || c.f[cur].head < 0) continue;
    int eye = -1;
    double far = -1;
    for (int q = c.f[cur].head; q >= 0; q = next[q]) {
      double dd = khzu_dot3(c.f[cur].n, pts + 3 * q) - c.f[cur].d;
      if (dd > far) far = dd, eye = q;
    }
    const double *p = pts + 3 * eye;

    /* flood the faces the point sees */
    if (capstack < c.nf + 8) {
      capstack = 2 * (c.nf + 8);
      int *ns = realloc(stack, (size_t)capstack * sizeof(int));
      if (!ns) goto oom;
      stack = ns;
      int *nv = realloc(vis, (size_t)capstack * sizeof(int));
      if (!nv) goto oom;
      vis = nv;
      int *nh = realloc(hor, (size_t)capstack * 3 * sizeof(int));
      if (!nh) goto oom;
      hor = nh;
    }
    int nstack = 0, nvis = 0, nhor = 0;
    stack[nstack++] = cur;
    c.f[cur].mark = 1;
    while (nstack) {
      int f = stack[--nstack];
      vis[nvis++] = f;
      for (int k = 0; k < 3; k++) {
        int g = c.f[f].nb[k];
        if (g < 0 || c.f[g].mark) continue;
        if (khzu_dot3(c.f[g].n, p) - c.f[g].d > eps) {
          c.f[g].mark = 1;
          stack[nstack++] = g;
        }
      }
    }

    /* horizon: edges of visible faces whose neighbour is not visible */
    for (int a = 0; a < nvis; a++) {
      hface *f = &c.f[vis[a]];
      for (int k = 0; k < 3; k++)
        if (f->nb[k] < 0 || !c.f[f->nb[k]].mark) {
          hor[3 * nhor] = f->v[k];
          hor[3 * nhor + 1] = f->v[(k + 1) % 3];
          hor[3 * nhor + 2] = f->nb[k];
          nhor++;
        }
    }

    /* the orphaned points of the visible faces, the eye excluded */
    int orphans = -1;
    for (int a = 0; a < nvis; a++) {
      hface *f = &c.f[vis[a]];
      for (int q = f->head, nq; q >= 0; q = nq) {
        nq = next[q];
        if (q == eye) continue;
        next[q] = orphans;
        orphans = q;
      }
      f->head = -1;
      f->alive = 0;
      f->mark = 0;
    }

    /* a fan of new faces from the horizon to the point */
    int first = c.nf;
    for (int e = 0; e < nhor; e++) {
      int va = hor[3 * e], vb = hor[3 * e + 1], out = hor[3 * e + 2];
      int nf = new_face(&c, va, vb, eye);
      if (nf < 0) goto oom;
      c.f[nf].nb[0] = out;
      int k = out >= 0 ? edge_of(&c.f[out], vb, va) : -1;
      if (k >= 0) c.f[out].nb[k] = nf;
      start[va] = nf;
    }
    for (int f = first; f < c.nf; f++) {
      /* edge (b, p) borders the new face starting at b; edge (p, a) the one ending at a */
      int vb = c.f[f].v[1];
      c.f[f].nb[1] = start[vb];
      if (start[vb] >= 0) c.f[start[vb]].nb[2] = f;
    }
    for (int f = first; f < c.nf; f++) start[c.f[f].v[0]] = -1;

    /* the orphans go to a new face they lie above, or are inside now */
    for (int q = orphans, nq; q >= 0; q = nq) {
      nq = next[q];
      next[q] = -1;
      for (int f = first; f < c.nf; f++)
        if (khzu_dot3(c.f[f].n, pts + 3 * q) - c.f[f].d > eps) {
          next[q] = c.f[f].head;
          c.f[f].head = q;
          break;
        }
    }
  }

  /* compact: used vertices, live triangles */
  int *remap = start;
  for (int k = 0; k < n; k++) remap[k] = -1;
  int nt = 0, nv = 0;
  for (int f = 0; f < c.nf; f++)
    if (c.f[f].alive) {
      nt++;
      for (int k = 0; k < 3; k++)
        if (remap[c.f[f].v[k]] < 0) remap[c.f[f].v[k]] = nv++;
    }
  h->nvert = nv;
  h->ntri = nt;
  h->vert = malloc((size_t)(3 * nv) * sizeof(double));
  h->tri = malloc((size_t)(3 * nt) * sizeof(int));
  h->plane = malloc((size_t)(4 * nt) * sizeof(double));
  int *tplane = malloc((size_t)nt * sizeof(int));
  int *tface = malloc((size_t)c.nf * sizeof(int));
  h->edge = malloc((size_t)(3 * nt) * sizeof(int) + 1);
  if (!h->vert || !h->tri || !h->plane || !tplane || !tface || !h->edge) {
    free(tplane);
    free(tface);
    goto oom;
  }
  for (int k = 0; k < n; k++)
    if (remap[k] >= 0) memcpy(h->vert + 3 * remap[k], pts + 3 * k, 3 * sizeof(double));
  nt = 0;
  for (int f = 0; f < c.nf; f++) {
    tface[f] = -1;
    if (!c.f[f].alive) continue;
    tface[f] = nt;
    for (int k = 0; k < 3; k++) h->tri[3 * nt + k] = remap[c.f[f].v[k]];
    nt++;
  }

  /* merge coplanar neighbours into face planes (union-find over the adjacency;
   * the triangles of a planar facet of a convex polytope are connected) */
  int *root = tface; /* reused below: per face, its triangle index */
  int *uf = malloc((size_t)c.nf * sizeof(int));
  if (!uf) {
    free(tplane);
    free(tface);
    goto oom;
  }
  for (int f = 0; f < c.nf; f++) uf[f] = f;
  for (int f = 0; f < c.nf; f++) {
    if (!c.f[f].alive) continue;
    for (int k = 0; k < 3; k++) {
      int g = c.f[f].nb[k];
      if (g < 0 || !c.f[g].alive || khzu_dot3(c.f[f].n, c.f[g].n) <= 1 - KHZ_HULL_COPLANAR_COS ||
          fabs(c.f[f].d - c.f[g].d) >= KHZ_HULL_COPLANAR_D * eps)
        continue;
      int a = f, b = g;
      while (uf[a] != a) a = uf[a] = uf[uf[a]];
      while (uf[b] != b) b = uf[b] = uf[uf[b]];
      if (a != b) uf[a > b ? a : b] = a < b ? a : b;
    }
  }
  h->nplane = 0;
  int *pid = malloc((size_t)c.nf * sizeof(int));
  if (!pid) {
    free(uf);
    free(tplane);
    free(tface);
    goto oom;
  }
  for (int f = 0; f < c.nf; f++) {
    pid[f] = -1;
    if (!c.f[f].alive) continue;
    int a = f;
    while (uf[a] != a) a = uf[a];
    if (pid[a] < 0) {
      pid[a] = h->nplane++;
      memcpy(h->plane + 4 * pid[a], c.f[a].n, 3 * sizeof(double));
      h->plane[4 * pid[a] + 3] = c.f[a].d;
    }
    tplane[root[f]] = pid[a];
  }
  free(uf);
  free(pid);

  /* feature edges: each undirected edge once, between different face planes */
  h->nedge = 0;
  for (int f = 0; f < c.nf; f++) {
    if (!c.f[f].alive) continue;
    for (int k = 0; k < 3; k++) {
      int a = c.f[f].v[k], b = c.f[f].v[(k + 1) % 3], g = c.f[f].nb[k];
      if (a > b || g < 0 || !c.f[g].alive) continue;
      if (tplane[tface[f]] == tplane[tface[g]]) continue;
      h->edge[2 * h->nedge] = remap[a];
      h->edge[2 * h->nedge + 1] = remap[b];
      h->nedge++;
    }
  }
  free(tplane);
  free(tface);
  free(c.f);
  free(start);
  free(next);
  free(stack);
  free(vis);
  free(hor);
  return 0;

oom:
  free(c.f);
  free(start);
  free(next);
  free(stack);
  free(vis);
  free(hor);
  khz_hull_free(h);
  return -1;
}
