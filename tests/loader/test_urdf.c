/* test_urdf.c — tests of the URDF loader (loader/src/urdf.c): the shipped
 * robots, joint and geometry semantics, inertia rotation, mesh resolution,
 * and every bad-input fixture in tests/loader/data/ (error names the file and
 * the element, spec unchanged). Run from the source root. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ensure.h"
#include "khz/khz.h"
#include "khz/load.h"

#define DATA "tests/loader/data/"
#define MODELS "scenes/models/"

/* warnings collected through the callback */
typedef struct warnings {
  int count;
  char last[1024];
} warnings;

static void collect(void *user, const char *message) {
  warnings *w = user;
  w->count++;
  snprintf(w->last, sizeof w->last, "%s", message);
}

static void options(khzUrdfOptions *opt, warnings *w) {
  khz_urdf_defaultOptions(opt);
  opt->warn = collect;
  opt->warn_user = w;
}

static int find_body(khzSpec *s, const char *name) {
  for (int i = 0; i < khz_spec_nbody(s); i++)
    if (strcmp(khz_spec_body(s, i)->name, name) == 0) return i;
  return -1;
}

static int find_joint(khzSpec *s, const char *name) {
  for (int i = 1; i < khz_spec_nbody(s); i++)
    if (strcmp(khz_spec_body(s, i)->joint_name, name) == 0) return i;
  return -1;
}

static int count_dofs(khzSpec *s, int from) {
  int n = 0;
  for (int i = from; i < khz_spec_nbody(s); i++) {
    khzJointType t = khz_spec_body(s, i)->joint_type;
    n += t == KHZ_JOINT_FLOATING ? 6 : t == KHZ_JOINT_SPHERICAL ? 3 : t != KHZ_JOINT_FIXED;
  }
  return n;
}

static double total_mass(khzSpec *s, int from) {
  double m = 0;
  for (int i = from; i < khz_spec_nbody(s); i++) m += khz_spec_body(s, i)->mass;
  return m;
}

/* compiles the spec with the core and reports why when it fails */
static khzModel *compile(khzSpec *s) {
  char err[512] = "";
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m != NULL, "khz_compile: %s", err);
  return m;
}

/* every body comes after its parent */
static void check_topological(khzSpec *s) {
  for (int i = 1; i < khz_spec_nbody(s); i++) ENSURE(khz_spec_body(s, i)->parent < i);
}

/* ---------------------------------------------------------------- arm7 -- */

static void test_arm7(void) {
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzUrdfOptions opt;
  options(&opt, &w);
  char err[512] = "";

  /* loads silently: transmission and safety_controller are ignored */
  int root = khz_loadURDF(s, MODELS "arm7.urdf", &opt, err, sizeof err);
  ENSURE_MSG(root == 1, "%s", err);
  ENSURE(w.count == 0);
  ENSURE(khz_spec_nbody(s) == 1 + 9);
  ENSURE(count_dofs(s, 1) == 7);
  ENSURE_NEAR(total_mass(s, 1), 20.9, 1e-9);
  check_topological(s);

  /* the root is welded at the base pose */
  khzBodySpec *b = khz_spec_body(s, root);
  ENSURE(strcmp(b->name, "base_link") == 0);
  ENSURE(b->parent == 0 && b->joint_type == KHZ_JOINT_FIXED);
  ENSURE_NEAR(b->quat[0], 1, 0);

  /* the chain: link k is body k + 1, its joint "jointk" revolute about z */
  for (int k = 1; k <= 7; k++) {
    char name[32];
    snprintf(name, sizeof name, "joint%d", k);
    int i = find_joint(s, name);
    ENSURE(i == k + 1);
    if (i < 0) continue;
    b = khz_spec_body(s, i);
    ENSURE(b->parent == i - 1);
    ENSURE(b->joint_type == KHZ_JOINT_REVOLUTE && b->limited == 1);
    ENSURE_NEAR(b->axis[2], 1, 0);
    ENSURE(b->effort_limit > 0 && b->velocity_limit > 0 && b->damping > 0 && b->friction > 0);
    ENSURE(b->mass >= 0.5 && b->mass <= 4);
  }

  /* joint 2: origin rpy (-pi/2, 0, 0), limits +-1.76, 90 N m, 2.2 rad/s */
  b = khz_spec_body(s, find_joint(s, "joint2"));
  ENSURE_NEAR(b->quat[0], sqrt(0.5), 1e-6);
  ENSURE_NEAR(b->quat[1], -sqrt(0.5), 1e-6);
  ENSURE_NEAR(b->lower, -1.76, 1e-12);
  ENSURE_NEAR(b->upper, 1.76, 1e-12);
  ENSURE_NEAR(b->effort_limit, 90, 0);
  ENSURE_NEAR(b->velocity_limit, 2.2, 1e-12);
  ENSURE_NEAR(b->damping, 0.5, 1e-12);
  ENSURE_NEAR(b->friction, 0.05, 1e-12);

  /* joint 5: offset origin, 20 N m */
  b = khz_spec_body(s, find_joint(s, "joint5"));
  ENSURE_NEAR(b->pos[0], -0.08, 1e-12);
  ENSURE_NEAR(b->pos[1], 0.38, 1e-12);
  ENSURE_NEAR(b->effort_limit, 20, 0);

  /* the tool is welded to link7 */
  b = khz_spec_body(s, find_body(s, "tool"));
  ENSURE(b->joint_type == KHZ_JOINT_FIXED && b->parent == find_body(s, "link7"));
  ENSURE(strcmp(b->joint_name, "tool_joint") == 0);

  /* full inertia tensors: off-diagonal terms present */
  b = khz_spec_body(s, find_body(s, "link4"));
  ENSURE(fabs(b->inertia[3]) > 1e-6);

  /* geometry: primitives only, visuals coloured from top-level materials */
  int ncol = 0, nvis = 0;
  for (int g = 0; g < khz_spec_ngeom(s); g++) {
    khzGeomSpec *gs = khz_spec_geom(s, g);
    ENSURE(gs->type == KHZ_GEOM_BOX || gs->type == KHZ_GEOM_SPHERE ||
           gs->type == KHZ_GEOM_CYLINDER);
    if (gs->visual) nvis++;
    else ncol++;
  }
  ENSURE(ncol == 16 && nvis == 16);
  khzGeomSpec *g0 = khz_spec_geom(s, 0); /* the base's visual cylinder, khz_grey */
  ENSURE(g0->body == 1 && g0->visual == 1 && g0->type == KHZ_GEOM_CYLINDER);
  ENSURE_NEAR(g0->size[0], 0.09, 1e-12);
  ENSURE_NEAR(g0->size[1], 0.10, 1e-12);
  ENSURE_NEAR(g0->rgba[0], 0.35, 1e-12);
  ENSURE_NEAR(g0->rgba[2], 0.38, 1e-12);

  /* the core accepts it */
  khzModel *m = compile(s);
  if (m) {
    ENSURE(m->nv == 7 && m->nq == 7);
    khz_deleteModel(&m);
  }
  khz_spec_destroy(&s);
}

/* ----------------------------------------------------------- humanoid27 -- */

static void test_humanoid27(void) {
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzUrdfOptions opt;
  options(&opt, &w);
  opt.floating_base = 1;
  opt.base_pos[2] = 1.05;
  opt.name_prefix = "h_";
  char err[512] = "";

  int root = khz_loadURDF(s, MODELS "humanoid27.urdf", &opt, err, sizeof err);
  ENSURE_MSG(root == 1, "%s", err);
  ENSURE(w.count == 0);
  ENSURE(khz_spec_nbody(s) == 1 + 22);
  ENSURE(count_dofs(s, 1) == 27);
  double mass = total_mass(s, 1);
  ENSURE(mass >= 40 && mass <= 70);
  ENSURE_NEAR(mass, 62.4, 1e-9);
  check_topological(s);

  /* the floating root starts at the base pose */
  khzBodySpec *b = khz_spec_body(s, root);
  ENSURE(strcmp(b->name, "h_pelvis") == 0);
  ENSURE(b->joint_type == KHZ_JOINT_FLOATING);
  ENSURE(strcmp(b->joint_name, "h_pelvis_floating") == 0);
  ENSURE_NEAR(b->q0[2], 1.05, 0);
  ENSURE_NEAR(b->q0[3], 1, 0);

  /* depth-first, children in document order: torso and both arms, then legs */
  ENSURE(find_body(s, "h_torso") == 2);
  ENSURE(find_body(s, "h_l_shoulder_pitch_link") == 3);
  ENSURE(find_body(s, "h_r_forearm") == 10);
  ENSURE(find_body(s, "h_l_hip_yaw_link") == 11);
  ENSURE(khz_spec_body(s, 11)->parent == 1);
  ENSURE(find_body(s, "h_r_foot") == 22);

  /* a few joints: axes, limits */
  b = khz_spec_body(s, find_joint(s, "h_l_knee"));
  ENSURE_NEAR(b->axis[1], 1, 0);
  ENSURE_NEAR(b->lower, -0.05, 1e-12);
  ENSURE_NEAR(b->upper, 2.4, 1e-12);
  ENSURE_NEAR(b->pos[2], -0.42, 1e-12);
  b = khz_spec_body(s, find_joint(s, "h_r_hip_roll"));
  ENSURE_NEAR(b->axis[0], 1, 0);
  ENSURE_NEAR(b->lower, -0.8, 1e-12);
  ENSURE_NEAR(b->effort_limit, 180, 0);

  /* every moving link has a real inertia */
  for (int i = 1; i < khz_spec_nbody(s); i++) {
    b = khz_spec_body(s, i);
    ENSURE(b->mass > 0 && b->inertia[0] > 0 && b->inertia[1] > 0 && b->inertia[2] > 0);
  }

  /* a second copy under another prefix; the same prefix again is refused */
  opt.name_prefix = "g_";
  ENSURE(khz_loadURDF(s, MODELS "humanoid27.urdf", &opt, err, sizeof err) == 23);
  ENSURE(find_joint(s, "g_l_knee") > 23);
  int nb = khz_spec_nbody(s), ng = khz_spec_ngeom(s);
  ENSURE(khz_loadURDF(s, MODELS "humanoid27.urdf", &opt, err, sizeof err) == -1);
  ENSURE(strstr(err, "g_pelvis") != NULL);
  ENSURE(khz_spec_nbody(s) == nb && khz_spec_ngeom(s) == ng);

  /* the core accepts it: two floating humanoids */
  khzModel *m = compile(s);
  if (m) {
    ENSURE(m->nv == 54 && m->nq == 56);
    khz_deleteModel(&m);
  }
  khz_spec_destroy(&s);
}

/* ------------------------------------------------------------- inertia -- */

static void test_inertia_rotation(void) {
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzUrdfOptions opt;
  options(&opt, &w);
  char err[512] = "";
  ENSURE_MSG(khz_loadURDF(s, DATA "inertia_rotated.urdf", &opt, err, sizeof err) == 1, "%s",
             err);
  ENSURE(w.count == 0);
  ENSURE(khz_spec_nbody(s) == 4);

  /* base: no <inertial>, massless */
  ENSURE_NEAR(khz_spec_body(s, 1)->mass, 0, 0);

  /* diag(2, 3, 4) turned 45 degrees about z: xx = yy = 2.5, xy = (2 - 3) / 2 */
  khzBodySpec *b = khz_spec_body(s, 2);
  ENSURE_NEAR(b->mass, 1.5, 0);
  ENSURE_NEAR(b->com[0], 0.1, 0);
  ENSURE_NEAR(b->com[1], 0.2, 0);
  ENSURE_NEAR(b->com[2], 0.3, 0);
  ENSURE_NEAR(b->inertia[0], 2.5, 1e-12);
  ENSURE_NEAR(b->inertia[1], 2.5, 1e-12);
  ENSURE_NEAR(b->inertia[2], 4, 1e-12);
  ENSURE_NEAR(b->inertia[3], -0.5, 1e-12);
  ENSURE_NEAR(b->inertia[4], 0, 1e-12);
  ENSURE_NEAR(b->inertia[5], 0, 1e-12);

  /* the axis "0 0 2" is normalised */
  ENSURE_NEAR(b->axis[2], 1, 1e-15);

  /* diag(2, 3, 4) turned 90 degrees about x: diag(2, 4, 3) */
  b = khz_spec_body(s, 3);
  ENSURE_NEAR(b->inertia[0], 2, 1e-12);
  ENSURE_NEAR(b->inertia[1], 4, 1e-12);
  ENSURE_NEAR(b->inertia[2], 3, 1e-12);
  ENSURE_NEAR(b->inertia[3], 0, 1e-12);
  ENSURE_NEAR(b->inertia[4], 0, 1e-12);
  ENSURE_NEAR(b->inertia[5], 0, 1e-12);
  ENSURE_NEAR(b->com[2], -0.1, 0);

  /* joint origin rpy (pi/2, 0, 0) -> quaternion (cos pi/4, sin pi/4, 0, 0) */
  ENSURE_NEAR(b->quat[0], sqrt(0.5), 1e-15);
  ENSURE_NEAR(b->quat[1], sqrt(0.5), 1e-15);
  ENSURE_NEAR(b->pos[2], 0.5, 0);

  /* the visual box: half-extents and its inline colour */
  ENSURE(khz_spec_ngeom(s) == 1);
  khzGeomSpec *g = khz_spec_geom(s, 0);
  ENSURE(g->body == 3 && g->visual == 1 && g->type == KHZ_GEOM_BOX);
  ENSURE_NEAR(g->size[0], 0.05, 1e-15);
  ENSURE_NEAR(g->size[1], 0.1, 1e-15);
  ENSURE_NEAR(g->size[2], 0.15, 1e-15);
  ENSURE_NEAR(g->rgba[0], 1, 0);
  ENSURE_NEAR(g->rgba[1], 0, 0);

  khzModel *m = compile(s);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);

  /* as a floating base its massless root, with nothing fixed to it, would be
   * singular (the first step was not finite): refused, saying what to do */
  s = khz_spec_new();
  opt.floating_base = 1;
  ENSURE(khz_loadURDF(s, DATA "inertia_rotated.urdf", &opt, err, sizeof err) == -1);
  ENSURE_MSG(strstr(err, "inertia_rotated.urdf:4: <link name=\"base\">: the root link and the "
                         "links fixed to it have no mass: as a floating base it needs a mass") != NULL,
             "%s", err);
  ENSURE(khz_spec_nbody(s) == 1);
  khz_spec_destroy(&s);
}

/* ---------------------------------------------------------- joint types -- */

static void test_joint_types(void) {
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzUrdfOptions opt;
  options(&opt, &w);
  opt.base_pos[0] = 3;
  char err[512] = "";
  ENSURE_MSG(khz_loadURDF(s, DATA "joint_types.urdf", &opt, err, sizeof err) == 1, "%s", err);
  ENSURE(w.count == 0); /* <gazebo> and <calibration> are ignored silently */

  /* topological order although joints come before links and children first;
   * the link "world" adds no body */
  ENSURE(khz_spec_nbody(s) == 5);
  ENSURE(find_body(s, "root") == 1);
  ENSURE(find_body(s, "spin_link") == 2);
  ENSURE(find_body(s, "slide_link") == 3);
  ENSURE(find_body(s, "weld_link") == 4);
  ENSURE(find_body(s, "world") == 0);
  check_topological(s);

  /* floating from "world": the origin after the base pose is the initial pose */
  khzBodySpec *b = khz_spec_body(s, 1);
  ENSURE(b->joint_type == KHZ_JOINT_FLOATING && b->parent == 0);
  ENSURE(strcmp(b->joint_name, "free") == 0);
  ENSURE_NEAR(b->q0[0], 3.5, 1e-15);
  ENSURE_NEAR(b->q0[1], 0, 0);
  ENSURE_NEAR(b->q0[2], 1, 1e-15);
  ENSURE_NEAR(b->q0[3], sqrt(0.5), 1e-15);
  ENSURE_NEAR(b->q0[5], sqrt(0.5), 1e-15);
  ENSURE_NEAR(b->pos[0], 0, 0);
  ENSURE_NEAR(b->quat[0], 1, 0);

  /* continuous: default axis x, no position limits, effort and friction read */
  b = khz_spec_body(s, 2);
  ENSURE(b->joint_type == KHZ_JOINT_CONTINUOUS && b->limited == 0 && b->parent == 1);
  ENSURE_NEAR(b->axis[0], 1, 0);
  ENSURE_NEAR(b->effort_limit, 5, 0);
  ENSURE_NEAR(b->velocity_limit, 7, 0);
  ENSURE_NEAR(b->friction, 0.25, 0);
  ENSURE_NEAR(b->pos[1], 2, 0);
  ENSURE_NEAR(fabs(b->quat[3]), 1, 1e-15);

  /* prismatic */
  b = khz_spec_body(s, 3);
  ENSURE(b->joint_type == KHZ_JOINT_PRISMATIC && b->limited == 1 && b->parent == 2);
  ENSURE_NEAR(b->lower, -0.1, 0);
  ENSURE_NEAR(b->upper, 0.3, 0);
  ENSURE_NEAR(b->damping, 3, 0);

  /* fixed, massless */
  b = khz_spec_body(s, 4);
  ENSURE(b->joint_type == KHZ_JOINT_FIXED && b->mass == 0 && b->parent == 1);

  /* the world's box is a world geom at the base pose */
  ENSURE(khz_spec_ngeom(s) == 3);
  khzGeomSpec *g = khz_spec_geom(s, 0);
  ENSURE(g->type == KHZ_GEOM_BOX && g->body == 0);
  ENSURE_NEAR(g->pos[0], 3, 0);
  ENSURE_NEAR(g->pos[2], -0.05, 0);
  ENSURE_NEAR(g->size[0], 2, 0);

  /* cylinder: radius and half-length */
  g = khz_spec_geom(s, 1);
  ENSURE(g->type == KHZ_GEOM_CYLINDER && g->body == 2 && g->visual == 0);
  ENSURE_NEAR(g->size[0], 0.05, 0);
  ENSURE_NEAR(g->size[1], 0.2, 0);

  khzModel *m = compile(s);
  if (m) {
    ENSURE(m->nv == 6 + 1 + 1);
    khz_deleteModel(&m);
  }
  khz_spec_destroy(&s);
}

/* --------------------------------------------------------------- meshes -- */

static void test_meshes(void) {
  static const char *const paths[] = {DATA "pkg", DATA "pkg/khz_test_pkg", NULL};
  for (int k = 0; k < 3; k++) {
    khzSpec *s = khz_spec_new();
    warnings w = {0};
    khzUrdfOptions opt;
    options(&opt, &w);
    char err[512] = "";

    /* an explicit search path (a directory of packages, the package itself),
     * or KHZ_PACKAGE_PATH */
    opt.package_path = paths[k];
    if (!paths[k]) setenv("KHZ_PACKAGE_PATH", "/nonexistent:" DATA "pkg", 1);
    ENSURE_MSG(khz_loadURDF(s, DATA "mesh_package.urdf", &opt, err, sizeof err) == 1, "%s", err);
    if (!paths[k]) unsetenv("KHZ_PACKAGE_PATH");

    /* the missing mesh: one warning naming the file, link and path tried */
    ENSURE(w.count == 1);
    ENSURE(strstr(w.last, "mesh_package.urdf:") != NULL);
    ENSURE(strstr(w.last, "<link name=\"base\">") != NULL);
    ENSURE(strstr(w.last, "package://khz_test_pkg/meshes/missing.stl") != NULL);
    ENSURE(strstr(w.last, "khz_test_pkg/meshes/missing.stl,") != NULL ||
           strstr(w.last, "pkg/meshes/missing.stl)") != NULL);

    /* the link keeps its other geoms: visual mesh, collision mesh, box */
    ENSURE(khz_spec_ngeom(s) == 3);
    khzGeomSpec *g = khz_spec_geom(s, 0);
    ENSURE(g->type == KHZ_GEOM_MESH && g->visual == 1);
    ENSURE(strstr(g->meshfile, "khz_test_pkg/meshes/part.stl") != NULL);
    ENSURE_NEAR(g->size[0], 1, 0);
    ENSURE_NEAR(g->rgba[2], 1, 0); /* top-level material "blue" */
    ENSURE_NEAR(g->rgba[0], 0, 0);
    g = khz_spec_geom(s, 1);
    ENSURE(g->type == KHZ_GEOM_MESH && g->visual == 0);
    ENSURE(strstr(g->meshfile, "khz_test_pkg/meshes/part.stl") != NULL);
    ENSURE_NEAR(g->size[0], 0.001, 0);
    ENSURE_NEAR(g->size[2], 0.003, 0);
    FILE *f = fopen(g->meshfile, "rb");
    ENSURE(f != NULL);
    if (f) fclose(f);
    g = khz_spec_geom(s, 2);
    ENSURE(g->type == KHZ_GEOM_BOX);
    ENSURE_NEAR(g->size[2], 0.3, 1e-15);
    khz_spec_destroy(&s);
  }

  /* a search path without the package leaves both package:// meshes unresolved */
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzUrdfOptions opt;
  options(&opt, &w);
  opt.package_path = "/nonexistent";
  char err[512] = "";
  ENSURE(khz_loadURDF(s, DATA "mesh_package.urdf", &opt, err, sizeof err) == 1);
  ENSURE(w.count == 2);
  ENSURE(khz_spec_ngeom(s) == 2);
  khz_spec_destroy(&s);
}

/* ------------------------------------------------------------ from text -- */

static void test_string(void) {
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzUrdfOptions opt;
  options(&opt, &w);
  char err[512] = "";
  const char *xml =
      "<robot name='r'>\n"
      "  <link name='a'><inertial><mass value='1'/>"
      "<inertia ixx='1' ixy='0' ixz='0' iyy='1' iyz='0' izz='1'/></inertial></link>\n"
      "  <unknown_thing/>\n"
      "</robot>\n";
  ENSURE(khz_loadURDFString(s, xml, "inline.urdf", NULL, &opt, err, sizeof err) == 1);
  ENSURE(w.count == 1 && strstr(w.last, "inline.urdf:3: <unknown_thing>") != NULL);

  /* errors name the given name and the line */
  int nb = khz_spec_nbody(s);
  ENSURE(khz_loadURDFString(s, "<robot><link name='a'></robot>", "broken.urdf", NULL, &opt,
                              err, sizeof err) == -1);
  ENSURE_MSG(strstr(err, "broken.urdf:1: malformed XML") != NULL, "%s", err);
  ENSURE(khz_loadURDFString(s, "", "empty.urdf", NULL, &opt, err, sizeof err) == -1);
  ENSURE(strstr(err, "empty.urdf") != NULL);
  ENSURE(khz_loadURDF(s, DATA "does_not_exist.urdf", &opt, err, sizeof err) == -1);
  ENSURE(strstr(err, "does_not_exist.urdf") != NULL);
  ENSURE(khz_spec_nbody(s) == nb);

  /* a tiny errsz truncates but terminates */
  char tiny[8];
  ENSURE(khz_loadURDF(s, DATA "bad_loop.urdf", &opt, tiny, sizeof tiny) == -1);
  ENSURE(strlen(tiny) == 7);
  khz_spec_destroy(&s);
}

/* ------------------------------------------------------------ bad input -- */

typedef struct bad_case {
  const char *file;
  const char *where;   /* "FILE:LINE: <element ...>" must contain this */
  const char *problem; /* and this */
} bad_case;

static const bad_case bad_cases[] = {
    {"bad_xml.urdf", ":6:", "malformed XML: Opening and ending tag mismatch: inertial"},
    {"bad_no_robot.urdf", ":3: <model name=\"bad\">", "must be <robot>: is this a URDF file? (xacro files must be expanded first"},
    {"bad_no_links.urdf", ":3: <robot name=\"bad\">", "no <link>"},
    {"bad_dup_link.urdf", ":6: <link name=\"a\">", "duplicate link"},
    {"bad_dup_joint.urdf", ":13: <joint name=\"j\">", "duplicate joint"},
    {"bad_unknown_parent.urdf", ":7: <joint name=\"j\">", "unknown parent link \"nowhere\": no <link name=\"nowhere\"> in the robot"},
    {"bad_unknown_child.urdf", ":14: <joint name=\"k\">", "unknown child link \"ghost\""},
    {"bad_two_parents.urdf", ":21: <joint name=\"j3\">", "already the child of joint \"j2\""},
    {"bad_loop.urdf", "<joint name=\"j", "kinematic loop"},
    {"bad_two_roots.urdf", ":6: <link name=\"c\">", "more than one root"},
    {"bad_negative_mass.urdf", ":5: <link name=\"b\">", "negative mass"},
    {"bad_inertia_pd.urdf", ":5: <link name=\"b\">", "not positive definite"},
    {"bad_inertia_triangle.urdf", ":5: <link name=\"b\">", "triangle inequality"},
    {"bad_zero_axis.urdf", ":9: <joint name=\"j\">", "axis is zero"},
    {"bad_lower_upper.urdf", ":10: <joint name=\"j\">", "lower 1 is greater than upper -1: swap them"},
    {"bad_xyz_count.urdf", ":9: <joint name=\"j\">", "xyz=\"1 2\" is not 3 finite numbers"},
    {"bad_number.urdf", ":5: <link name=\"b\">", "value=\"abc\""},
    {"bad_nan.urdf", ":9: <joint name=\"j\">", "xyz=\"0 nan 1\""},
    {"bad_inf.urdf", ":10: <joint name=\"j\">", "effort=\"inf\""},
    {"bad_joint_type.urdf", ":6: <joint name=\"j\">", "unknown joint type \"ball\": use revolute, continuous, prismatic, fixed or floating"},
    {"bad_planar.urdf", ":6: <joint name=\"j\">", "planar joints are not supported: model the plane as two prismatic joints"},
    {"bad_no_limit.urdf", ":6: <joint name=\"j\">", "needs <limit"},
    {"bad_floating_inner.urdf", ":6: <joint name=\"j\">", "floating joint must have the world"},
    {"bad_box_size.urdf", ":4: <link name=\"a\">", "must be positive"},
};

/* issue 19: what published robots contain loads, with a warning where khz
 * differs: mimic joints, zero-size shapes, a massless root link with inertia */
static void test_tolerated(void) {
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzUrdfOptions opt;
  options(&opt, &w);
  char err[512] = "";
  ENSURE_MSG(khz_loadURDF(s, DATA "bad_mimic.urdf", &opt, err, sizeof err) > 0, "%s", err);
  /* the mimic joint is a joint equality constraint: j2 = 2 j1 */
  ENSURE_MSG(w.count == 0, "%d warnings: %s", w.count, w.last);
  ENSURE(khz_spec_nequality(s) == 1);
  khzModel *mm = khz_compile(s, err, sizeof err);
  ENSURE_MSG(mm && mm->neq == 1 && mm->eq_type[0] == KHZ_EQ_JOINT && mm->eq_poly[1] == 2,
             "%s", err);
  if (mm) {
    khzData *d = khz_makeData(mm, 0);
    int j1 = khz_name2joint(mm, "j1"), j2 = khz_name2joint(mm, "j2");
    ENSURE(j1 > 0 && j2 > 0);
    if (j1 > 0 && j2 > 0) {
      d->q[mm->jnt_qadr[j1]] = 0.2, d->q[mm->jnt_qadr[j2]] = 0.4;
      d->qd[mm->jnt_dofadr[j1]] = 1, d->qd[mm->jnt_dofadr[j2]] = 2;
      for (int k = 0; k < 500; k++) khz_step(mm, d);
      ENSURE_NEAR(d->q[mm->jnt_qadr[j2]], 2 * d->q[mm->jnt_qadr[j1]], 1e-8);
      ENSURE(fabs(d->q[mm->jnt_qadr[j1]] - 0.2) > 1e-3); /* it moved */
    }
    khz_deleteData(&d);
  }
  khz_deleteModel(&mm);
  khz_spec_destroy(&s);

  s = khz_spec_new();
  w.count = 0;
  ENSURE_MSG(khz_loadURDF(s, DATA "zero_size.urdf", &opt, err, sizeof err) > 0, "%s", err);
  ENSURE(khz_spec_ngeom(s) == 1); /* the box stays, the zero sphere is left out */
  ENSURE_MSG(w.count == 1 && strstr(w.last, "zero_size.urdf:6: <link name=\"toe\">: <sphere>: "
                                              "size 0: this collision geom is left out") != NULL,
             "%d warnings: %s", w.count, w.last);
  /* its root link has inertia and no mass: welded, it is fused with the world */
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
  s = khz_spec_new();
  opt.floating_base = 1;
  ENSURE(khz_loadURDF(s, DATA "zero_size.urdf", &opt, err, sizeof err) == -1);
  ENSURE_MSG(strstr(err, "zero_size.urdf:3: <link name=\"base\">: the root link has inertia but "
                         "zero mass: as a floating base it needs a mass") != NULL, "%s", err);
  khz_spec_destroy(&s);

  /* several shapes in one <geometry>: the first is used, the others reported
   * with their line; an unknown shape and an empty <geometry> drop their geom */
  const char *xml =
      "<robot name='r'>\n"
      "  <link name='a'><inertial><mass value='1'/>"
      "<inertia ixx='1' ixy='0' ixz='0' iyy='1' iyz='0' izz='1'/></inertial>\n"
      "    <collision><geometry><box size='1 1 1'/>\n"
      "      <sphere radius='1'/></geometry></collision>\n"
      "    <collision><geometry><torus radius='1'/></geometry></collision>\n"
      "    <visual><geometry/></visual>\n"
      "  </link>\n"
      "</robot>\n";
  s = khz_spec_new();
  w.count = 0;
  opt.floating_base = 0;
  ENSURE_MSG(khz_loadURDFString(s, xml, "shapes.urdf", NULL, &opt, err, sizeof err) > 0, "%s", err);
  ENSURE(khz_spec_ngeom(s) == 1 && khz_spec_geom(s, 0)->type == KHZ_GEOM_BOX);
  ENSURE_MSG(w.count == 3 && strstr(w.last, "shapes.urdf:6: <link name=\"a\">: <geometry> holds no "
                                              "shape: this visual geom is left out") != NULL,
             "%d warnings: %s", w.count, w.last);
  khz_spec_destroy(&s);
}

static void test_bad_input(void) {
  /* a spec that already holds a robot, so that "unchanged" means something */
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzUrdfOptions opt;
  options(&opt, &w);
  opt.name_prefix = "arm_";
  char err[512] = "";
  ENSURE(khz_loadURDF(s, MODELS "arm7.urdf", &opt, err, sizeof err) == 1);
  opt.name_prefix = "";
  int nb = khz_spec_nbody(s), ng = khz_spec_ngeom(s);
  double m = total_mass(s, 0);

  for (size_t k = 0; k < sizeof bad_cases / sizeof bad_cases[0]; k++) {
    const bad_case *c = &bad_cases[k];
    char path[256];
    snprintf(path, sizeof path, DATA "%s", c->file);
    err[0] = 0;
    int r = khz_loadURDF(s, path, &opt, err, sizeof err);
    ENSURE_MSG(r == -1, "%s loaded", c->file);
    ENSURE_MSG(strncmp(err, path, strlen(path)) == 0, "%s: %s", c->file, err);
    ENSURE_MSG(strstr(err, c->where) != NULL, "%s: want '%s' in: %s", c->file, c->where, err);
    ENSURE_MSG(strstr(err, c->problem) != NULL, "%s: want '%s' in: %s", c->file, c->problem, err);
    ENSURE(khz_spec_nbody(s) == nb && khz_spec_ngeom(s) == ng);
    ENSURE(total_mass(s, 0) == m);
  }
  ENSURE(w.count == 0); /* a failed load delivers no warnings */
  khz_spec_destroy(&s);
}

/* ------------------------------------------------------------ ros2_control -- */

static const khzMjcfActuator *find_act(const khzUrdfInfo *in, const char *name) {
  for (int i = 0; i < in->nactuator; i++)
    if (strcmp(in->actuator[i].name, name) == 0) return &in->actuator[i];
  return NULL;
}

/* issue 19 item 2: <ros2_control>'s joints and interfaces become the actuator
 * list; a position servo built from it brings the joint to its command */
static void test_ros2_control(void) {
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzUrdfOptions opt;
  options(&opt, &w);
  khzUrdfInfo info;
  memset(&info, 0, sizeof info);
  opt.info = &info;
  opt.name_prefix = "r/";
  char err[512] = "";
  ENSURE_MSG(khz_loadURDF(s, DATA "ros2_control.urdf", &opt, err, sizeof err) > 0, "%s", err);
  /* four command interfaces, one of them unknown; the <sensor> block */
  ENSURE_MSG(info.nactuator == 3 && info.nstate == 4, "%d actuators, %d states", info.nactuator,
             info.nstate);
  ENSURE(strcmp(info.hardware, "R2cSystem") == 0);
  ENSURE_MSG(w.count == 3, "%d warnings: %s", w.count, w.last);
  const khzMjcfActuator *pos = find_act(&info, "r/shoulder/position");
  const khzMjcfActuator *eff = find_act(&info, "r/shoulder/effort");
  const khzMjcfActuator *vel = find_act(&info, "r/rail/velocity");
  ENSURE(pos && eff && vel);
  if (pos && eff && vel) {
    ENSURE(pos->type == KHZ_MJCF_POSITION && pos->gain == 40 && pos->bias[1] == -40 &&
           pos->bias[2] == -4 && strcmp(pos->joint, "r/shoulder") == 0);
    /* ranges: the joint's limits, the interface's min / max, the velocity limit */
    ENSURE(pos->ctrllimited && pos->ctrlrange[0] == -1.5 && pos->ctrlrange[1] == 1.5);
    ENSURE(pos->forcelimited && pos->forcerange[1] == 20);
    ENSURE(eff->type == KHZ_MJCF_MOTOR && eff->ctrlrange[0] == -5 && eff->ctrlrange[1] == 5);
    ENSURE(khz_mjcf_actuatorTorque(eff, 9, 0, 0) == 5);
    ENSURE(vel->type == KHZ_MJCF_VELOCITY && vel->ctrlrange[1] == 1 && vel->gain == 50 &&
           vel->bias[2] == -50); /* no kd: kv = effort limit, with a warning */
  }
  ENSURE(strcmp(info.state[0].joint, "r/shoulder") == 0 && strcmp(info.state[0].name, "position") == 0);
  /* initial_value is the joint's initial position */
  int sh = find_joint(s, "r/shoulder");
  ENSURE(sh > 0 && khz_spec_body(s, sh)->q0[0] == 0.3);
  /* before any command the position servo holds the joint where it starts
   * (its state's initial_value, given after the command interface); the
   * others start at 0 */
  ENSURE(pos && pos->ctrl0 == 0.3 && eff && eff->ctrl0 == 0 && vel && vel->ctrl0 == 0);

  /* the position servo on the model (gravity on): from 0.3 to the command 1.0 */
  khzModel *m = compile(s);
  if (m && pos) {
    khzData *d = khz_makeData(m, 0);
    int j = khz_name2joint(m, "r/shoulder"), r = khz_name2joint(m, "r/rail");
    ENSURE(d->q[m->jnt_qadr[j]] == 0.3);
    for (int k = 0; k < 3000; k++) {
      memset(d->tau, 0, (size_t)m->nv * sizeof(double));
      d->tau[m->jnt_dofadr[j]] = khz_mjcf_actuatorTorque(pos, 1.0, d->q[m->jnt_qadr[j]],
                                                         d->qd[m->jnt_dofadr[j]]);
      d->tau[m->jnt_dofadr[r]] = khz_mjcf_actuatorTorque(vel, 0, d->q[m->jnt_qadr[r]],
                                                         d->qd[m->jnt_dofadr[r]]);
      khz_step(m, d);
    }
    /* kp 40 against the arm's gravity torque sin(q) m g l: the servo's offset */
    double q = d->q[m->jnt_qadr[j]];
    printf("ros2_control position servo: q = %.4f for the command 1.0\n", q);
    ENSURE(fabs(q - 1.0) < 0.15 && fabs(d->qd[m->jnt_dofadr[j]]) < 1e-3);
    khz_deleteData(&d);
  }
  khz_deleteModel(&m);
  khz_urdf_freeInfo(&info);
  ENSURE(info.nactuator == 0 && info.actuator == NULL);

  /* an interface of a joint the robot does not have: refused, naming it */
  const char *xml =
      "<robot name='r'>\n"
      "  <link name='a'/><link name='b'><inertial><mass value='1'/>"
      "<inertia ixx='1' ixy='0' ixz='0' iyy='1' iyz='0' izz='1'/></inertial></link>\n"
      "  <joint name='j' type='continuous'><parent link='a'/><child link='b'/></joint>\n"
      "  <ros2_control name='x' type='system'>\n"
      "    <joint name='elbow'><command_interface name='effort'/></joint>\n"
      "  </ros2_control>\n"
      "</robot>\n";
  int nb = khz_spec_nbody(s);
  opt.name_prefix = "";
  ENSURE(khz_loadURDFString(s, xml, "r2c.urdf", NULL, &opt, err, sizeof err) == -1);
  printf("unknown ros2_control joint: %s\n", err);
  ENSURE_MSG(strstr(err, "r2c.urdf:5: <ros2_control name=\"x\">: the robot has no joint \"elbow\"")
             != NULL, "%s", err);
  ENSURE(khz_spec_nbody(s) == nb && info.nactuator == 0);
  khz_spec_destroy(&s);
}

int main(void) {
  const char *root = getenv("KHZ_SOURCE_ROOT");
  if (root && chdir(root) != 0) {
    perror(root);
    return 1;
  }
  test_arm7();
  test_humanoid27();
  test_inertia_rotation();
  test_joint_types();
  test_meshes();
  test_string();
  test_bad_input();
  test_tolerated();
  test_ros2_control();
  return ensure_report();
}
