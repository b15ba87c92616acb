/* test_mesh.c — meshes from files (loader/src/mesh.c, through assimp) into
 * collision: an OBJ of quads and an ASCII STL read, joined and triangulated;
 * unreadable and missing files refused with the file named; a scene whose
 * mesh objects (hull, triangle mesh, STL) rest on the ground and touch it at
 * their corners; a URDF whose collision meshes load once per file, an
 * unreadable one dropped with a warning. Fixtures in tests/collision/data. */
#include "col_util.h"
#include "khz/load.h"
#include "mesh.h"

#define DATA "tests/collision/data/"

static void test_read(void) {
  khzMeshData md;
  char err[512];
  ENSURE_MSG(khz_mesh_read(DATA "cube.obj", &md, err, sizeof err) == 0, "%s", err);
  ENSURE(md.nvert == 8 && md.nface == 12);
  khz_mesh_free(&md);
  ENSURE_MSG(khz_mesh_read(DATA "wedge.stl", &md, err, sizeof err) == 0, "%s", err);
  ENSURE(md.nvert == 6 && md.nface == 8);
  khz_mesh_free(&md);
  ENSURE(khz_mesh_read(DATA "bad.stl", &md, err, sizeof err) == -1);
  ENSURE_MSG(strstr(err, "bad.stl: cannot read the mesh") != NULL, "%s", err);
  ENSURE(md.vert == NULL && md.face == NULL);
  ENSURE(khz_mesh_read(DATA "missing.obj", &md, err, sizeof err) == -1);
  ENSURE(strstr(err, "missing.obj") != NULL);

  /* into a spec, then compiled as a closed triangle mesh */
  khzSpec *s = khz_spec_new();
  int id = khz_mesh_add(s, DATA "wedge.stl", "wedge", err, sizeof err);
  ENSURE_MSG(id == 0, "%s", err);
  cu_meshGeom(s, cu_body(s, "w"), id, 0);
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

static void test_scene(void) {
  khzScene sc;
  char err[1024];
  ENSURE_MSG(khz_loadScene(&sc, DATA "mesh_scene.yaml", err, sizeof err) == 0, "%s", err);
  khzModel *m = khz_compile(sc.spec, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  if (!m) {
    khz_deleteScene(&sc);
    return;
  }
  ENSURE(m->nmesh == 3 && m->geom_convex[1] == 1 && m->geom_convex[2] == 0);
  const khzColModel *cm = m->collision;
  ENSURE(cm->geom[1].shape == KHZ_SHAPE_CONVEX && cm->geom[2].shape == KHZ_SHAPE_TRIMESH);
  ENSURE_NEAR(cm->geom[1].half[0], 0.1, 1e-12); /* scale 0.2 of a unit cube */
  khzData *d = khz_makeData(m, 0);
  khz_kinematics(m, d);
  ENSURE(khz_collide(m, d) == 3);
  int corners[3] = {4, 4, 3};
  for (int c = 0; c < d->ncontact; c++) {
    const khzContact *ct = &d->contact[c];
    ENSURE(ct->geom[0] == 0 && ct->geom[1] == c + 1); /* the ground first */
    ENSURE_NEAR(ct->normal[2], -1, 1e-12);           /* toward the ground */
    int deep = 0;
    for (int i = ct->point_adr; i < ct->point_adr + ct->npoint; i++)
      deep += fabs(d->cpoint[i].depth - 0.001) < 1e-9;
    ENSURE_MSG(deep == corners[c], "object %d: %d corners 1 mm deep", c, deep);
  }
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_deleteScene(&sc);
}

typedef struct {
  int count;
  char last[1024];
} warnings;
static void on_warn(void *user, const char *msg) {
  warnings *w = user;
  w->count++;
  snprintf(w->last, sizeof w->last, "%s", msg);
}

static void test_urdf(void) {
  khzSpec *s = khz_spec_new();
  khzUrdfOptions opt;
  khz_urdf_defaultOptions(&opt);
  warnings w = {0};
  opt.warn = on_warn, opt.warn_user = &w;
  char err[1024];
  ENSURE_MSG(khz_loadURDF(s, DATA "mesh_robot.urdf", &opt, err, sizeof err) == 1, "%s", err);
  ENSURE(w.count == 1);
  ENSURE_MSG(strstr(w.last, "bad.stl") && strstr(w.last, "collision geom dropped"), "%s", w.last);
  ENSURE(khz_spec_nmesh(s) == 1);    /* cube.obj read once */
  ENSURE(khz_spec_ngeom(s) == 3);    /* visual, two collision cubes */
  ENSURE(khz_spec_geom(s, 0)->visual && khz_spec_geom(s, 0)->mesh == -1);
  ENSURE(khz_spec_geom(s, 1)->mesh == 0 && khz_spec_geom(s, 1)->convex == 1);
  ENSURE(khz_spec_geom(s, 2)->mesh == 0);
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  if (m) {
    const khzColModel *cm = m->collision;
    ENSURE(cm->nhull == 2); /* two scales of one mesh */
    ENSURE_NEAR(cm->geom[1].half[2], 0.15, 1e-12);
  }
  khz_deleteModel(&m);

  /* a second robot in the same spec appends its own mesh */
  opt.name_prefix = "r2_";
  ENSURE(khz_loadURDF(s, DATA "mesh_robot.urdf", &opt, err, sizeof err) > 1);
  ENSURE(khz_spec_nmesh(s) == 2 && khz_spec_geom(s, 4)->mesh == 1);
  khz_spec_destroy(&s);
}

int main(void) {
  test_read();
  test_scene();
  test_urdf();
  return ensure_report();
}
