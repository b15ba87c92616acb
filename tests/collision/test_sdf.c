/* test_sdf.c — triangle meshes (rt/src/collision/sdf.c): the exact closest
 * point (BVH) equals brute force over all triangles and has the right sign,
 * the sparse distance grid agrees with it (exactly on flat faces, within a
 * fraction of a cell elsewhere), and the vertex queries equal brute force. */
#include "col_util.h"

static const khzColTrimesh *mesh_of(const khzModel *m, int g) {
  const khzColModel *cm = m->collision;
  return &cm->trimesh[cm->geom[g].trimesh];
}

static double brute_closest(const khzColTrimesh *t, const double p[3]) {
  double best = 1e300;
  for (int f = 0; f < t->ntri; f++) {
    double q[3], d[3];
    int region;
    const int *v = t->tri + 3 * f;
    khzu_closestOnTriangle(p, t->vert + 3 * v[0], t->vert + 3 * v[1], t->vert + 3 * v[2], q, &region);
    khzu_sub3(d, p, q);
    best = fmin(best, khzu_norm3(d));
  }
  return best;
}

static void test_box_mesh(void) {
  khzSpec *s = khz_spec_new();
  cu_meshGeom(s, cu_body(s, "b"), cu_boxMesh(s, "box", 0.5, 0.3, 0.2), 0);
  khzModel *m = cu_compile(s);
  khz_spec_destroy(&s);
  const khzColTrimesh *t = mesh_of(m, 0);
  double e[3] = {0.5, 0.3, 0.2}, worst_bvh = 0, worst_face = 0, worst_band = 0, worst_any = 0;
  int wrong_sign = 0;
  for (int k = 0; k < 3000; k++) {
    double p[3], q[3], nrm[3];
    int tri;
    for (int i = 0; i < 3; i++) p[i] = cu_uniform(-1.5, 1.5) * e[i];
    double d = khz_trimesh_closest(t, p, q, &tri, nrm);
    int inside = fabs(p[0]) < e[0] && fabs(p[1]) < e[1] && fabs(p[2]) < e[2];
    wrong_sign += (d < 0) != inside;
    worst_bvh = fmax(worst_bvh, fabs(fabs(d) - brute_closest(t, p)));

    /* the exact box distance, against the grid */
    double out = 0, in = 1e9;
    for (int i = 0; i < 3; i++) {
      double a = fabs(p[i]) - e[i];
      out += a > 0 ? a * a : 0;
      in = fmin(in, -a);
    }
    double exact = inside ? -in : sqrt(out), g = khz_trimesh_sdf(t, p);
    if (fabs(exact) < 2 * t->h) worst_band = fmax(worst_band, fabs(g - exact));
    worst_any = fmax(worst_any, fabs(g - exact));
    /* near the middle of a face, the field is linear: trilinear is exact */
    int near_face = inside && in < 0.05 && fabs(p[0]) < 0.3 && fabs(p[1]) < 0.15;
    if (near_face) worst_face = fmax(worst_face, fabs(g - exact));
  }
  printf("box mesh: closest point within %.1e of brute force, %d wrong signs; grid h = %.4f m "
         "(%d bricks): within %.1e of exact near face centres, %.1e (%.2f h) within 2 h of the "
         "surface, %.1e (%.2f H) anywhere\n",
         worst_bvh, wrong_sign, t->h, t->nbrick, worst_face, worst_band, worst_band / t->h,
         worst_any, worst_any / (t->brick * t->h));
  ENSURE(worst_bvh < 1e-12);
  ENSURE(wrong_sign == 0);
  ENSURE(worst_face < 1e-6);              /* float samples */
  ENSURE(worst_band < 0.5 * t->h);        /* edges and corners: the distance bends in a cell */
  ENSURE(worst_any < t->brick * t->h);    /* far away: the coarse grid */
  khz_deleteModel(&m);
}

static void test_sphere_mesh(void) {
  khzSpec *s = khz_spec_new();
  cu_meshGeom(s, cu_body(s, "b"), cu_sphereMesh(s, "ball", 0.5, 24, 32), 0);
  khzModel *m = cu_compile(s);
  khz_spec_destroy(&s);
  const khzColTrimesh *t = mesh_of(m, 0);
  double worst_bvh = 0, worst_grid = 0;
  int wrong_sign = 0;
  for (int k = 0; k < 2000; k++) {
    double dir[3], p[3];
    cu_randDir(dir);
    double r = cu_uniform(0.0, 0.9);
    khzu_scl3(p, dir, r);
    double d = khz_trimesh_closest(t, p, NULL, NULL, NULL), b = brute_closest(t, p);
    worst_bvh = fmax(worst_bvh, fabs(fabs(d) - b));
    if (fabs(r - 0.5) > 0.01) wrong_sign += (d < 0) != (r < 0.5);
    if (fabs(d) < 2 * t->h) worst_grid = fmax(worst_grid, fabs(khz_trimesh_sdf(t, p) - d));
  }
  printf("sphere mesh (%d triangles): closest within %.1e, %d wrong signs; grid h = %.4f m (%d "
         "bricks of %d^3), within %.1e (%.2f h) of exact near the surface\n",
         t->ntri, worst_bvh, wrong_sign, t->h, t->nbrick, t->brick + 1, worst_grid, worst_grid / t->h);
  ENSURE(worst_bvh < 1e-12);
  ENSURE(wrong_sign == 0);
  ENSURE(worst_grid < 0.1 * t->h);
  khz_deleteModel(&m);
}

typedef struct {
  int n;
  int seen[4096];
} collect;
static int collect_cb(void *user, int v) {
  collect *c = user;
  c->seen[c->n++] = v;
  return 0;
}

static void test_vertex_queries(void) {
  khzSpec *s = khz_spec_new();
  cu_meshGeom(s, cu_body(s, "b"), cu_sphereMesh(s, "ball", 0.5, 16, 24), 0);
  khzModel *m = cu_compile(s);
  khz_spec_destroy(&s);
  const khzColTrimesh *t = mesh_of(m, 0);
  int ok = 1;
  for (int k = 0; k < 200; k++) {
    double lo[3], hi[3], n[3], dd = cu_uniform(-0.5, 0.5);
    for (int i = 0; i < 3; i++) {
      double a = cu_uniform(-0.6, 0.6), b = cu_uniform(-0.6, 0.6);
      lo[i] = fmin(a, b), hi[i] = fmax(a, b);
    }
    cu_randDir(n);
    static collect c;
    c.n = 0;
    khz_trimesh_vertsInBox(t, lo, hi, collect_cb, &c);
    int expect = 0;
    for (int v = 0; v < t->nvert; v++) {
      const double *x = t->vert + 3 * v;
      expect += x[0] >= lo[0] && x[0] <= hi[0] && x[1] >= lo[1] && x[1] <= hi[1] &&
                x[2] >= lo[2] && x[2] <= hi[2];
    }
    ok &= c.n == expect;
    c.n = 0;
    khz_trimesh_vertsBelow(t, n, dd, collect_cb, &c);
    expect = 0;
    for (int v = 0; v < t->nvert; v++) expect += khzu_dot3(n, t->vert + 3 * v) <= dd;
    ok &= c.n == expect;
  }
  ENSURE(ok);
  khz_deleteModel(&m);
}

int main(void) {
  test_box_mesh();
  test_sphere_mesh();
  test_vertex_queries();
  return ensure_report();
}
