/* geometry.c — the collision data of a model, built once by khz_compile:
 * each geom's shape class and local bounds, the convex hulls of convex meshes,
 * the prepared triangle meshes (BVHs, pseudo-normals, signed distance grid;
 * sdf.c) of non-convex ones, and the data of the broad-phase filters.
 *
 * Mesh input is checked here, with messages naming the mesh, geom and body:
 * indices out of range and non-finite vertices are errors; zero-area
 * triangles are dropped and counted (mesh_ndegenerate); a mesh used as a
 * triangle mesh (convex = 0) must be closed, manifold and consistently
 * oriented, since the sign of its distance field depends on it (a mesh whose
 * triangles all face inward is turned outside out); a convex mesh is replaced
 * by the hull of its vertices, which must span a volume, reduced to at most
 * KHZ_HULL_MAXVERT vertices (see reduce_hull). Mesh geoms scale the mesh by
 * geom size (the URDF / scene scale).
 *
 * Memory: everything lives in one block (m->collision, m->ncollision) carved
 * in two passes like the model's own buffer, freed by khz_deleteModel.
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carve.h"
#include "collision.h"

/* relative to the mesh's extent L (diagonal of its bounds): a triangle of area
 * below this x L^2 is degenerate, a mesh of volume below this x L^3 encloses none */
#define KHZ_MESH_DEGENERATE 1e-12
#include "spatial.h"

static int fail(char *err, size_t errsz, const char *fmt, ...) {
  if (err && errsz) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsz, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* ------------------------------------------------------------ meshes -- */

/* vertex order by position (qsort_r: two models may compile at once) */
static int cmp_vert(const void *a, const void *b, void *arg) {
  const double *v = arg;
  const double *x = v + 3 * *(const int *)a, *y = v + 3 * *(const int *)b;
  for (int k = 0; k < 3; k++)
    if (x[k] != y[k]) return x[k] < y[k] ? -1 : 1;
  return *(const int *)a - *(const int *)b;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  const khzModel *m;
  int g, mesh;
  char *err;
  size_t errsz;
} mesh_job;

/* "mesh 'NAME' (geom G of body 'B')" */
static void who(const mesh_job *j, char *out, size_t n) {
  snprintf(out, n, "mesh '%s' (geom %d of body '%s')", j->m->mesh_name[j->mesh], j->g,
           j->m->body_name[j->m->geom_body[j->g]]);
}

/* checks a mesh's arrays; writes its scaled vertices (malloc'ed) */
static int mesh_input(const mesh_job *j, const double scale[3], double **vout, int *nvout) {
  const khzModel *m = j->m;
  int nv = m->mesh_vertnum[j->mesh], nf = m->mesh_facenum[j->mesh];
  const double *v = m->mesh_vert + 3 * m->mesh_vertadr[j->mesh];
  const int *f = m->mesh_face + 3 * m->mesh_faceadr[j->mesh];
  char w[256];
  who(j, w, sizeof w);
  for (int i = 0; i < 3 * nv; i++)
    if (!isfinite(v[i])) return fail(j->err, j->errsz, "%s: vertex %d is NaN or infinite", w, i / 3);
  for (int i = 0; i < 3 * nf; i++)
    if (f[i] < 0 || f[i] >= nv)
      return fail(j->err, j->errsz, "%s: triangle %d uses vertex %d, but the mesh has %d vertices",
                  w, i / 3, f[i], nv);
  double *s = malloc((size_t)(3 * nv) * sizeof(double) + 1);
  if (!s) return fail(j->err, j->errsz, "out of memory");
  for (int i = 0; i < nv; i++)
    for (int k = 0; k < 3; k++) s[3 * i + k] = v[3 * i + k] * scale[k];
  *vout = s;
  *nvout = nv;
  return 0;
}

/* a hull of more than KHZ_HULL_MAXVERT vertices is rebuilt from its extreme
 * vertices along KHZ_HULL_MAXVERT directions spread evenly over the sphere
 * (a Fibonacci lattice), so that every pair test stays bounded: the reduced
 * hull lies inside the full one, its support within 1.5 % of the radius of a
 * round shape (tests/collision/test_geometry.c), exact at sharp corners */
static int reduce_hull(khzColHull *h) {
  int n = KHZ_HULL_MAXVERT, m = 0;
  double *p = malloc((size_t)(3 * n) * sizeof(double));
  int *used = calloc((size_t)h->nvert, sizeof(int));
  if (!p || !used) {
    free(p), free(used);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    double z = 1 - (2 * i + 1.0) / n, r = sqrt(1 - z * z), a = i * M_PI * (3 - sqrt(5.0));
    double d[3] = {r * cos(a), r * sin(a), z}, best = -DBL_MAX;
    int k = 0;
    for (int v = 0; v < h->nvert; v++) {
      double x = khzu_dot3(d, h->vert + 3 * v);
      if (x > best) best = x, k = v;
    }
    if (!used[k]) used[k] = 1, memcpy(p + 3 * m++, h->vert + 3 * k, 3 * sizeof(double));
  }
  khzColHull r;
  int rc = khz_hull_build(&r, p, m);
  free(p), free(used);
  if (rc < 0) return -1; /* extreme points of a solid hull span a volume: memory */
  khz_hull_free(h);
  *h = r;
  return 0;
}

static int build_hull(const mesh_job *j, const double scale[3], khzColHull *h) {
  double *v;
  int nv;
  char w[256];
  if (mesh_input(j, scale, &v, &nv) < 0) return -1;
  int rc = khz_hull_build(h, v, nv);
  free(v);
  who(j, w, sizeof w);
  if (rc < 0)
    return fail(j->err, j->errsz,
                "%s: its %d vertices span no volume (a convex mesh needs 4 points not in one "
                "plane)",
                w, nv);
  if (h->nvert > KHZ_HULL_MAXVERT && reduce_hull(h) < 0)
    return fail(j->err, j->errsz, "out of memory");
  return 0;
}

/* welds, drops degenerate triangles, checks closedness and orientation, builds */
static int build_trimesh(const mesh_job *j, const double scale[3], khzColTrimesh *t,
                         int *ndegenerate) {
  const khzModel *m = j->m;
  double *v = NULL;
  int nv, nf = m->mesh_facenum[j->mesh], rc = -1;
  const int *f0 = m->mesh_face + 3 * m->mesh_faceadr[j->mesh];
  char w[256];
  who(j, w, sizeof w);
  if (mesh_input(j, scale, &v, &nv) < 0) return -1;
  int *order = malloc((size_t)nv * sizeof(int) + 1), *weld = malloc((size_t)nv * sizeof(int) + 1);
  int *tri = malloc((size_t)(3 * nf) * sizeof(int) + 1), *used = calloc((size_t)nv + 1, sizeof(int));
  uint64_t *ekey = malloc((size_t)(3 * nf) * sizeof(uint64_t) + 1);
  double *cv = malloc((size_t)(3 * nv) * sizeof(double) + 1);
  if (!order || !weld || !tri || !used || !ekey || !cv) {
    fail(j->err, j->errsz, "out of memory");
    goto done;
  }

  /* weld vertices at identical positions */
  for (int i = 0; i < nv; i++) order[i] = i;
  qsort_r(order, (size_t)nv, sizeof(int), cmp_vert, v);
  for (int i = 0; i < nv; i++)
    weld[order[i]] = (i > 0 && memcmp(v + 3 * order[i], v + 3 * order[i - 1], 3 * sizeof(double)) == 0)
                         ? weld[order[i - 1]]
                         : order[i];

  /* drop zero-area triangles (relative to the mesh size) */
  double lo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, hi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX}, ext[3];
  for (int i = 0; i < nv; i++)
    for (int k = 0; k < 3; k++) lo[k] = fmin(lo[k], v[3 * i + k]), hi[k] = fmax(hi[k], v[3 * i + k]);
  khzu_sub3(ext, hi, lo);
  double L = nv ? khzu_norm3(ext) : 0;
  int nt = 0, ndeg = 0;
  for (int i = 0; i < nf; i++) {
    int a = weld[f0[3 * i]], b = weld[f0[3 * i + 1]], c = weld[f0[3 * i + 2]];
    double ab[3], ac[3], x[3];
    khzu_sub3(ab, v + 3 * b, v + 3 * a);
    khzu_sub3(ac, v + 3 * c, v + 3 * a);
    khzu_cross(x, ab, ac);
    if (a == b || b == c || a == c || !(0.5 * khzu_norm3(x) > KHZ_MESH_DEGENERATE * L * L)) {
      ndeg++;
      continue;
    }
    tri[3 * nt] = a, tri[3 * nt + 1] = b, tri[3 * nt + 2] = c;
    nt++;
  }
  *ndegenerate = ndeg;
  if (nt < 4) {
    fail(j->err, j->errsz, "%s: %d triangles with non-zero area (%d zero-area dropped); a closed "
         "triangle mesh needs at least 4", w, nt, ndeg);
    goto done;
  }

  /* closed and consistently oriented: every undirected edge twice, once each way */
  if ((uint64_t)nv * (uint64_t)nv >= ((uint64_t)1 << 62)) {
    fail(j->err, j->errsz, "%s: too many vertices", w);
    goto done;
  }
  for (int i = 0; i < nt; i++)
    for (int k = 0; k < 3; k++) {
      uint64_t a = (uint64_t)tri[3 * i + k], b = (uint64_t)tri[3 * i + (k + 1) % 3];
      uint64_t lo2 = a < b ? a : b, hi2 = a < b ? b : a;
      ekey[3 * i + k] = ((lo2 * (uint64_t)nv + hi2) << 1) | (a < b ? 1u : 0u);
    }
  qsort(ekey, (size_t)(3 * nt), sizeof(uint64_t), cmp_u64);
  int nopen = 0, nmany = 0, nflip = 0;
  for (int e = 0; e < 3 * nt;) {
    int g = e;
    while (g < 3 * nt && (ekey[g] >> 1) == (ekey[e] >> 1)) g++;
    int cnt = g - e;
    if (cnt == 1)
      nopen++;
    else if (cnt > 2)
      nmany++;
    else if ((ekey[e] & 1) == (ekey[e + 1] & 1))
      nflip++;
    e = g;
  }
  if (nopen || nmany) {
    fail(j->err, j->errsz,
         "%s: not closed: %d edges belong to one triangle only and %d to more than two; a "
         "triangle mesh used for collision (convex = 0) must be closed and manifold (or use its "
         "convex hull, convex = 1)",
         w, nopen, nmany);
    goto done;
  }
  if (nflip) {
    fail(j->err, j->errsz,
         "%s: %d edges join triangles of opposite orientation; the triangles must all be "
         "counter-clockwise seen from outside",
         w, nflip);
    goto done;
  }

  /* orientation: a positive enclosed volume, else turn the mesh outside out */
  double vol = 0;
  for (int i = 0; i < nt; i++) {
    double x[3];
    khzu_cross(x, v + 3 * tri[3 * i + 1], v + 3 * tri[3 * i + 2]);
    vol += khzu_dot3(v + 3 * tri[3 * i], x) / 6;
  }
  if (!(fabs(vol) > KHZ_MESH_DEGENERATE * L * L * L)) {
    fail(j->err, j->errsz, "%s: encloses no volume", w);
    goto done;
  }
  if (vol < 0)
    for (int i = 0; i < nt; i++) {
      int x = tri[3 * i + 1];
      tri[3 * i + 1] = tri[3 * i + 2], tri[3 * i + 2] = x;
    }

  /* keep only the vertices the triangles use */
  int ncv = 0;
  for (int i = 0; i < 3 * nt; i++) used[tri[i]] = 1;
  for (int i = 0; i < nv; i++)
    if (used[i]) {
      memcpy(cv + 3 * ncv, v + 3 * i, 3 * sizeof(double));
      used[i] = ncv++;
    } else {
      used[i] = -1;
    }
  for (int i = 0; i < 3 * nt; i++) tri[i] = used[tri[i]];
  if (khz_trimesh_build(t, cv, ncv, tri, nt) < 0) {
    fail(j->err, j->errsz, "out of memory");
    goto done;
  }
  rc = 0;

done:
  free(v);
  free(order);
  free(weld);
  free(tri);
  free(used);
  free(ekey);
  free(cv);
  return rc;
}

/* ------------------------------------------------------- one block -- */

/* carves n items and copies src into them in the filling pass */
static void *put(carver *c, const void *src, size_t bytes) {
  void *p = carve(c, bytes);
  if (p && src && bytes) memcpy(p, src, bytes);
  return p;
}

typedef struct {
  khzColGeom *geom;
  int *weld, *weld_parent, *bounded, *planes, *ndeg, *exclude_adr, *exclude_with;
  int nbounded, nplane;
  khzColHull *hull;
  int nhull;
  khzColTrimesh *tm;
  int ntm;
} temps;

static khzColModel *layout(const khzModel *m, const temps *t, carver *c) {
  khzColModel *cm = put(c, NULL, sizeof(khzColModel));
  size_t ng = (size_t)m->ngeom, nb = (size_t)m->nbody;
  khzColGeom *geom = put(c, t->geom, ng * sizeof(khzColGeom));
  int *weld = put(c, t->weld, nb * sizeof(int));
  int *weld_parent = put(c, t->weld_parent, nb * sizeof(int));
  int *exclude_adr = put(c, t->exclude_adr, (nb + 1) * sizeof(int));
  int *exclude_with = put(c, t->exclude_with, 2 * (size_t)m->nexclude * sizeof(int));
  int *bounded = put(c, t->bounded, (size_t)t->nbounded * sizeof(int));
  int *planes = put(c, t->planes, (size_t)t->nplane * sizeof(int));
  int *ndeg = put(c, t->ndeg, (size_t)m->nmesh * sizeof(int));
  khzColHull *hull = put(c, NULL, (size_t)t->nhull * sizeof(khzColHull));
  khzColTrimesh *tm = put(c, NULL, (size_t)t->ntm * sizeof(khzColTrimesh));
  for (int i = 0; i < t->nhull; i++) {
    const khzColHull *s = &t->hull[i];
    khzColHull d = *s;
    d.vert = put(c, s->vert, (size_t)(3 * s->nvert) * sizeof(double));
    d.plane = put(c, s->plane, (size_t)(4 * s->nplane) * sizeof(double));
    d.edge = put(c, s->edge, (size_t)(2 * s->nedge) * sizeof(int));
    d.tri = put(c, s->tri, (size_t)(3 * s->ntri) * sizeof(int));
    if (c->base) hull[i] = d;
  }
  for (int i = 0; i < t->ntm; i++) {
    const khzColTrimesh *s = &t->tm[i];
    khzColTrimesh d = *s;
    size_t nv = (size_t)s->nvert, nt = (size_t)s->ntri;
    size_t ncn = (size_t)(s->nc[0] + 1) * (s->nc[1] + 1) * (s->nc[2] + 1);
    size_t ncell = (size_t)s->nc[0] * s->nc[1] * s->nc[2];
    size_t bs = (size_t)(s->brick + 1) * (s->brick + 1) * (s->brick + 1);
    d.vert = put(c, s->vert, 3 * nv * sizeof(double));
    d.tri = put(c, s->tri, 3 * nt * sizeof(int));
    d.tnormal = put(c, s->tnormal, 3 * nt * sizeof(double));
    d.vnormal = put(c, s->vnormal, 3 * nv * sizeof(double));
    d.enormal = put(c, s->enormal, 9 * nt * sizeof(double));
    d.tnode = put(c, s->tnode, (size_t)s->ntnode * sizeof(khzColNode));
    d.torder = put(c, s->torder, nt * sizeof(int));
    d.vnode = put(c, s->vnode, (size_t)s->nvnode * sizeof(khzColNode));
    d.vorder = put(c, s->vorder, nv * sizeof(int));
    d.coarse = put(c, s->coarse, ncn * sizeof(float));
    d.brickof = put(c, s->brickof, ncell * sizeof(int));
    d.bricks = put(c, s->bricks, (size_t)s->nbrick * bs * sizeof(float));
    if (c->base) tm[i] = d;
  }
  if (!c->base) return NULL;
  cm->ngeom = m->ngeom, cm->nbody = m->nbody;
  cm->nhull = t->nhull, cm->ntrimesh = t->ntm;
  cm->geom = geom, cm->weld = weld, cm->weld_parent = weld_parent;
  cm->exclude_adr = exclude_adr, cm->exclude_with = exclude_with;
  cm->nbounded = t->nbounded, cm->nplane = t->nplane;
  cm->maxvert = 8;
  for (int g = 0; g < m->ngeom; g++) {
    int nv = t->geom[g].shape == KHZ_SHAPE_CYLINDER ? 2 * KHZ_CYL_RIM
             : t->geom[g].shape == KHZ_SHAPE_CONVEX ? t->hull[t->geom[g].hull].nvert
                                                    : 0;
    cm->maxvert = nv > cm->maxvert ? nv : cm->maxvert;
  }
  cm->bounded = bounded, cm->planes = planes;
  cm->mesh_ndegenerate = ndeg;
  cm->hull = hull, cm->trimesh = tm;
  return cm;
}

/* ------------------------------------------------------------- compile -- */

typedef struct {
  int mesh, convex, index;
  double scale[3];
} cache_entry;

int khz_collisionCompile(khzModel *m, char *err, size_t errsz) {
  int ng = m->ngeom, nb = m->nbody, rc = -1;
  temps t = {0};
  cache_entry *cache = NULL;
  int ncache = 0;
  m->collision = NULL;
  m->ncollision = 0;
  m->mesh_ndegenerate = NULL;
  t.geom = calloc((size_t)ng + 1, sizeof(khzColGeom));
  t.weld = calloc((size_t)nb + 1, sizeof(int));
  t.weld_parent = calloc((size_t)nb + 1, sizeof(int));
  t.bounded = calloc((size_t)ng + 1, sizeof(int));
  t.planes = calloc((size_t)ng + 1, sizeof(int));
  t.ndeg = calloc((size_t)m->nmesh + 1, sizeof(int));
  t.hull = calloc((size_t)ng + 1, sizeof(khzColHull));
  t.tm = calloc((size_t)ng + 1, sizeof(khzColTrimesh));
  cache = calloc((size_t)ng + 1, sizeof(cache_entry));
  t.exclude_adr = calloc((size_t)nb + 1, sizeof(int));
  t.exclude_with = calloc(2 * (size_t)m->nexclude + 1, sizeof(int));
  if (!t.geom || !t.weld || !t.weld_parent || !t.bounded || !t.planes || !t.ndeg || !t.hull ||
      !t.tm || !cache || !t.exclude_adr || !t.exclude_with) {
    fail(err, errsz, "out of memory");
    goto done;
  }

  /* welded groups: bodies joined by fixed joints move as one */
  for (int b = 0; b < nb; b++) {
    t.weld[b] = (b == 0 || m->jnt_type[b] != KHZ_JOINT_FIXED) ? b : t.weld[m->body_parent[b]];
    t.weld_parent[b] = -1;
  }
  /* the parent filter skips the world: a body's joint to the world (a floating
   * base, say) does not stop it from touching the ground (as in MuJoCo) */
  for (int b = 0; b < nb; b++) {
    int w = t.weld[b];
    t.weld_parent[b] = w > 0 && t.weld[m->body_parent[w]] > 0 ? t.weld[m->body_parent[w]] : -1;
  }

  /* excluded body pairs as a run per body (counting sort by body): the
   * filter scans one body's run, not the model's whole list */
  for (int i = 0; i < 2 * m->nexclude; i++) t.exclude_adr[m->exclude_body[i] + 1]++;
  for (int b = 0; b < nb; b++) t.exclude_adr[b + 1] += t.exclude_adr[b];
  for (int i = 0; i < m->nexclude; i++) {
    int e1 = m->exclude_body[2 * i], e2 = m->exclude_body[2 * i + 1];
    t.exclude_with[t.exclude_adr[e1]++] = e2;
    t.exclude_with[t.exclude_adr[e2]++] = e1;
  }
  for (int b = nb; b > 0; b--) t.exclude_adr[b] = t.exclude_adr[b - 1]; /* back to the starts */
  t.exclude_adr[0] = 0;

  /* geoms: shape class, bounds, hulls and triangle meshes */
  for (int g = 0; g < ng; g++) {
    khzColGeom *cg = &t.geom[g];
    const double *sz = m->geom_size + 3 * g;
    cg->shape = -1, cg->hull = cg->trimesh = -1;
    if (m->geom_visual[g] || (m->geom_contype[g] == 0 && m->geom_conaffinity[g] == 0)) continue;
    switch (m->geom_type[g]) {
      case KHZ_GEOM_PLANE: cg->shape = KHZ_SHAPE_PLANE; break;
      case KHZ_GEOM_SPHERE: cg->shape = KHZ_SHAPE_SPHERE; break;
      case KHZ_GEOM_CAPSULE: cg->shape = KHZ_SHAPE_CAPSULE; break;
      case KHZ_GEOM_BOX: cg->shape = KHZ_SHAPE_BOX; break;
      case KHZ_GEOM_CYLINDER: cg->shape = KHZ_SHAPE_CYLINDER; break;
      case KHZ_GEOM_MESH: cg->shape = m->geom_convex[g] ? KHZ_SHAPE_CONVEX : KHZ_SHAPE_TRIMESH; break;
      default: continue;
    }
    switch (cg->shape) {
      case KHZ_SHAPE_PLANE:
        cg->scale = 1;
        break;
      case KHZ_SHAPE_SPHERE:
        cg->half[0] = cg->half[1] = cg->half[2] = cg->scale = sz[0];
        break;
      case KHZ_SHAPE_CAPSULE:
        cg->half[0] = cg->half[1] = sz[0], cg->half[2] = sz[0] + sz[1];
        cg->scale = cg->half[2];
        break;
      case KHZ_SHAPE_BOX:
        khzu_copy3(cg->half, sz);
        cg->scale = fmax(sz[0], fmax(sz[1], sz[2]));
        break;
      case KHZ_SHAPE_CYLINDER:
        cg->half[0] = cg->half[1] = sz[0], cg->half[2] = sz[1];
        cg->scale = fmax(sz[0], sz[1]);
        break;
      default: {
        /* a mesh: validate and build, once per (mesh, scale, convex) */
        int mesh = m->geom_meshid[g];
        if (mesh < 0 || mesh >= m->nmesh) {
          fail(err, errsz,
               "geom %d of body '%s': a mesh geom without a mesh (mesh index %d, the model has "
               "%d meshes; was the file '%s' loaded?)",
               g, m->body_name[m->geom_body[g]], mesh, m->nmesh, m->geom_mesh[g]);
          goto done;
        }
        int convex = cg->shape == KHZ_SHAPE_CONVEX, idx = -1;
        for (int k = 0; k < ncache && idx < 0; k++)
          if (cache[k].mesh == mesh && cache[k].convex == convex &&
              memcmp(cache[k].scale, sz, sizeof cache[k].scale) == 0)
            idx = cache[k].index;
        if (idx < 0) {
          mesh_job j = {m, g, mesh, err, errsz};
          if (convex) {
            idx = t.nhull;
            if (build_hull(&j, sz, &t.hull[idx]) < 0) goto done;
            t.nhull++;
          } else {
            idx = t.ntm;
            if (build_trimesh(&j, sz, &t.tm[idx], &t.ndeg[mesh]) < 0) goto done;
            t.ntm++;
          }
          cache[ncache].mesh = mesh, cache[ncache].convex = convex, cache[ncache].index = idx;
          memcpy(cache[ncache].scale, sz, sizeof cache[ncache].scale);
          ncache++;
        }
        const double *v;
        int nv;
        if (convex) {
          cg->hull = idx;
          v = t.hull[idx].vert, nv = t.hull[idx].nvert;
        } else {
          cg->trimesh = idx;
          v = t.tm[idx].vert, nv = t.tm[idx].nvert;
        }
        double lo[3] = {DBL_MAX, DBL_MAX, DBL_MAX}, hi[3] = {-DBL_MAX, -DBL_MAX, -DBL_MAX};
        for (int i = 0; i < nv; i++)
          for (int k = 0; k < 3; k++)
            lo[k] = fmin(lo[k], v[3 * i + k]), hi[k] = fmax(hi[k], v[3 * i + k]);
        for (int k = 0; k < 3; k++)
          cg->center[k] = 0.5 * (lo[k] + hi[k]), cg->half[k] = 0.5 * (hi[k] - lo[k]);
        cg->scale = fmax(cg->half[0], fmax(cg->half[1], cg->half[2]));
        for (int i = 0; i < nv; i++) {
          double dd[3];
          khzu_sub3(dd, v + 3 * i, cg->center);
          cg->radius = fmax(cg->radius, khzu_norm3(dd));
        }
        break;
      }
    }
    if (cg->shape == KHZ_SHAPE_SPHERE)
      cg->radius = sz[0];
    else if (cg->shape == KHZ_SHAPE_CAPSULE)
      cg->radius = sz[0] + sz[1];
    else if (cg->shape != KHZ_SHAPE_CONVEX && cg->shape != KHZ_SHAPE_TRIMESH)
      cg->radius = khzu_norm3(cg->half);
    if (cg->shape == KHZ_SHAPE_PLANE)
      t.planes[t.nplane++] = g;
    else
      t.bounded[t.nbounded++] = g;
  }

  /* one block */
  carver c = {0};
  layout(m, &t, &c);
  size_t size = (c.used + 63) & ~(size_t)63;
  void *block = aligned_alloc(64, size);
  if (!block) {
    fail(err, errsz, "out of memory");
    goto done;
  }
  memset(block, 0, size);
  c.base = block;
  c.used = 0;
  khzColModel *cm = layout(m, &t, &c);
  cm->size = size;
  m->collision = cm;
  /* can two bounded geoms collide at all? No contype meets a conaffinity
   * (MuJoCo's humanoid with only its floor contacts): no; else the first
   * pair the filter passes answers (a pile: the first two boxes) */
  unsigned types = 0, affinities = 0;
  for (int i = 0; i < cm->nbounded; i++)
    types |= m->geom_contype[cm->bounded[i]], affinities |= m->geom_conaffinity[cm->bounded[i]];
  cm->bounded_pairs = 0;
  for (int i = 0; i < cm->nbounded && (types & affinities) && !cm->bounded_pairs; i++)
    for (int j = i + 1; j < cm->nbounded && !cm->bounded_pairs; j++)
      cm->bounded_pairs = khz_collisionFilter(m, cm->bounded[i], cm->bounded[j]) != 0;
  m->ncollision = size;
  m->mesh_ndegenerate = cm->mesh_ndegenerate;
  rc = 0;

done:
  for (int i = 0; i < t.nhull; i++) khz_hull_free(&t.hull[i]);
  for (int i = 0; i < t.ntm; i++) khz_trimesh_free(&t.tm[i]);
  free(t.geom), free(t.weld), free(t.weld_parent), free(t.bounded), free(t.planes), free(t.ndeg);
  free(t.exclude_adr), free(t.exclude_with);
  free(t.hull), free(t.tm), free(cache);
  return rc;
}
