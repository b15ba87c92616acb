/* test_geometry.c — the collision data built at compile time
 * (rt/src/collision/geometry.c): shape classes and bounds, mesh validation
 * with messages naming the mesh, geom and body (zero-area triangles dropped and
 * counted, open and inconsistently oriented meshes refused, inside-out meshes
 * turned, bad indices, NaN, flat hulls), scaling by geom size, the sharing of
 * built meshes, and the welded-body tables. */
#include "col_util.h"

static const double box_v[24] = {-1, -1, -1, 1, -1, -1, -1, 1, -1, 1, 1, -1,
                                 -1, -1, 1,  1, -1, 1,  -1, 1, 1,  1, 1, 1};
static const int box_f[36] = {0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
                              2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5};

/* compiles one body with a mesh geom; returns the model or NULL with err */
static khzModel *one_mesh(const double *v, int nv, const int *f, int nf, int convex, char *err) {
  khzSpec *s = khz_spec_new();
  int b = cu_body(s, "link1");
  int msh = khz_spec_addMesh(s, "part.stl", v, nv, f, nf);
  cu_meshGeom(s, b, msh, convex);
  khzModel *m = khz_compile(s, err, 512);
  khz_spec_destroy(&s);
  return m;
}

static void test_validation(void) {
  char err[512];
  int f[48];
  double v[30];
  memcpy(v, box_v, sizeof box_v);

  /* two zero-area triangles (a repeated index, three collinear points): dropped, counted */
  memcpy(f, box_f, sizeof box_f);
  v[24] = 0, v[25] = -1, v[26] = -1; /* vertex 8: on edge 0-1 */
  int extra[6] = {0, 0, 3, 0, 8, 1};
  memcpy(f + 36, extra, sizeof extra);
  khzModel *m = one_mesh(v, 9, f, 14, 0, err);
  ENSURE_MSG(m != NULL, "%s", err);
  if (m) {
    ENSURE(m->mesh_ndegenerate[0] == 2);
    const khzColModel *cm = m->collision;
    ENSURE(cm->trimesh[0].ntri == 12 && cm->trimesh[0].nvert == 8);
    khz_deleteModel(&m);
  }

  /* open: one triangle missing */
  m = one_mesh(box_v, 8, box_f, 11, 0, err);
  ENSURE(m == NULL);
  ENSURE_MSG(strstr(err, "mesh 'part.stl' (geom 0 of body 'link1')") &&
                 strstr(err, "not closed: 3 edges belong to one triangle only"),
             "%s", err);
  /* ... which is fine as a convex mesh (its hull) */
  m = one_mesh(box_v, 8, box_f, 11, 1, err);
  ENSURE_MSG(m != NULL, "%s", err);
  khz_deleteModel(&m);

  /* one triangle turned over */
  memcpy(f, box_f, sizeof box_f);
  int t = f[1];
  f[1] = f[2], f[2] = t;
  m = one_mesh(box_v, 8, f, 12, 0, err);
  ENSURE(m == NULL);
  ENSURE_MSG(strstr(err, "3 edges join triangles of opposite orientation"), "%s", err);

  /* all turned over: inside out, turned back */
  memcpy(f, box_f, sizeof box_f);
  for (int i = 0; i < 12; i++) {
    int x = f[3 * i + 1];
    f[3 * i + 1] = f[3 * i + 2], f[3 * i + 2] = x;
  }
  m = one_mesh(box_v, 8, f, 12, 0, err);
  ENSURE_MSG(m != NULL, "%s", err);
  if (m) {
    const khzColModel *cm = m->collision;
    double c[3] = {0, 0, 0.2};
    ENSURE(khz_trimesh_closest(&cm->trimesh[0], c, NULL, NULL, NULL) < 0);
    ENSURE(khz_trimesh_sdf(&cm->trimesh[0], c) < 0);
    khz_deleteModel(&m);
  }

  /* bad index, NaN, flat hull */
  memcpy(f, box_f, sizeof box_f);
  f[7] = 8;
  ENSURE(one_mesh(box_v, 8, f, 12, 1, err) == NULL);
  ENSURE_MSG(strstr(err, "triangle 2 uses vertex 8, but the mesh has 8 vertices"), "%s", err);
  memcpy(v, box_v, sizeof box_v);
  v[4] = NAN;
  ENSURE(one_mesh(v, 8, box_f, 12, 0, err) == NULL);
  ENSURE_MSG(strstr(err, "vertex 1 is NaN or infinite"), "%s", err);
  memcpy(v, box_v, sizeof box_v);
  for (int i = 0; i < 8; i++) v[3 * i + 2] = 0;
  ENSURE(one_mesh(v, 8, box_f, 12, 1, err) == NULL);
  ENSURE_MSG(strstr(err, "span no volume"), "%s", err);

  /* a collision mesh geom without a mesh; a visual one is fine */
  khzSpec *s = khz_spec_new();
  int b = cu_body(s, "link1");
  int g = cu_meshGeom(s, b, -1, 1);
  snprintf(khz_spec_geom(s, g)->meshfile, KHZ_PATH_MAX, "meshes/arm.dae");
  ENSURE(khz_compile(s, err, sizeof err) == NULL);
  ENSURE_MSG(strstr(err, "geom 0 of body 'link1': a mesh geom without a mesh") &&
                 strstr(err, "meshes/arm.dae"),
             "%s", err);
  khz_spec_geom(s, g)->visual = 1;
  m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

static void test_shapes_and_sharing(void) {
  khzSpec *s = khz_spec_new();
  int b = cu_body(s, "b");
  int msh = khz_spec_addMesh(s, "cube", box_v, 8, box_f, 12);
  int g0 = cu_meshGeom(s, b, msh, 1);
  int g1 = cu_meshGeom(s, b, msh, 1);
  int g2 = cu_meshGeom(s, b, msh, 1);
  khz_spec_geom(s, g2)->size[0] = 2; /* stretched along x */
  int g3 = cu_meshGeom(s, b, msh, 0);
  int g4 = cu_geom(s, b, KHZ_GEOM_CAPSULE, 0.1, 0.5, 0);
  int g5 = cu_geom(s, b, KHZ_GEOM_SPHERE, 0.1, 0, 0);
  khz_spec_geom(s, g5)->contype = khz_spec_geom(s, g5)->conaffinity = 0;
  int g6 = cu_geom(s, 0, KHZ_GEOM_PLANE, 0, 0, 0);
  int g7 = cu_geom(s, b, KHZ_GEOM_BOX, 0.1, 0.2, 0.3);
  khz_spec_geom(s, g7)->visual = 1;
  khzModel *m = cu_compile(s);
  khz_spec_destroy(&s);
  if (!m) return;
  const khzColModel *cm = m->collision;
  ENSURE(cm->geom[g0].shape == KHZ_SHAPE_CONVEX && cm->geom[g3].shape == KHZ_SHAPE_TRIMESH);
  ENSURE(cm->geom[g0].hull == cm->geom[g1].hull && cm->geom[g2].hull != cm->geom[g0].hull);
  ENSURE(cm->nhull == 2 && cm->ntrimesh == 1);
  ENSURE_NEAR(cm->geom[g2].half[0], 2, 1e-15);
  ENSURE_NEAR(cm->geom[g2].half[1], 1, 1e-15);
  ENSURE(cm->hull[cm->geom[g2].hull].nplane == 6);
  ENSURE(cm->geom[g4].shape == KHZ_SHAPE_CAPSULE);
  ENSURE_NEAR(cm->geom[g4].half[2], 0.6, 1e-15);
  ENSURE(cm->geom[g5].shape == -1 && cm->geom[g7].shape == -1);
  ENSURE(cm->geom[g6].shape == KHZ_SHAPE_PLANE);
  ENSURE(cm->nplane == 1 && cm->planes[0] == g6 && cm->nbounded == 5);
  ENSURE(m->ncollision == cm->size && m->ncollision > 0);
  printf("collision block: %zu bytes (2 hulls, a triangle mesh with its grid)\n", m->ncollision);
  khz_deleteModel(&m);
}

/* a round mesh of 1490 vertices as a convex mesh: its hull reduced to at most
 * KHZ_HULL_MAXVERT vertices, inside the full hull and within 2 % of it */
static void test_hull_reduction(void) {
  khzSpec *s = khz_spec_new();
  cu_meshGeom(s, cu_body(s, "b"), cu_sphereMesh(s, "ball", 0.5, 32, 48), 1);
  khzModel *m = cu_compile(s);
  khz_spec_destroy(&s);
  if (!m) return;
  const khzColModel *cm = m->collision;
  const khzColHull *h = &cm->hull[0];
  ENSURE(h->nvert <= KHZ_HULL_MAXVERT && h->nvert > 100);
  double worst = 0;
  for (int k = 0; k < 2000; k++) {
    double d[3], best = -1, full = -1;
    cu_randDir(d);
    for (int v = 0; v < h->nvert; v++) best = fmax(best, khzu_dot3(d, h->vert + 3 * v));
    for (int v = 0; v < m->mesh_vertnum[0]; v++) full = fmax(full, khzu_dot3(d, m->mesh_vert + 3 * v));
    ENSURE(best <= full + 1e-12);
    worst = fmax(worst, (full - best) / 0.5);
  }
  printf("hull of %d vertices reduced to %d: support within %.2f %% of the radius\n",
         m->mesh_vertnum[0], h->nvert, 100 * worst);
  ENSURE(worst < 0.02);
  khz_deleteModel(&m);
}

int main(void) {
  test_hull_reduction();
  test_validation();
  test_shapes_and_sharing();
  return ensure_report();
}
