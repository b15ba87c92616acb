/* test_scene.c — the scene loader (loader/src/scene.c): the embedded default
 * scene, a fixture that uses every key of the format, the derived inertias,
 * khz_loadModel by extension, and every kind of bad input, each of which must
 * fail with one "FILE:LINE:COL: key 'PATH': PROBLEM" message and leave the scene
 * untouched. Fixtures: tests/loader/data/scene_*. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "khz/load.h"

#define DATA "tests/loader/data/"

static int starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int spec_body(khzSpec *spec, const char *name) {
  for (int i = 0; i < khz_spec_nbody(spec); i++) {
    if (strcmp(khz_spec_body(spec, i)->name, name) == 0) return i;
  }
  return -1;
}

static int spec_joint(khzSpec *spec, const char *name) {
  for (int i = 1; i < khz_spec_nbody(spec); i++) {
    if (strcmp(khz_spec_body(spec, i)->joint_name, name) == 0) return i;
  }
  return -1;
}

/* the first geom of a body, or NULL */
static khzGeomSpec *spec_geom(khzSpec *spec, int body) {
  for (int i = 0; i < khz_spec_ngeom(spec); i++) {
    if (khz_spec_geom(spec, i)->body == body) return khz_spec_geom(spec, i);
  }
  return NULL;
}

/* the embedded default scene: an arm on a table, five loose objects on the top */
static void test_default(void) {
  char err[1024] = "";
  khzScene s;
  int rc = khz_loadDefaultScene(&s, err, sizeof err);
  ENSURE_MSG(rc == 0, "%s", err);
  if (rc) return;
  ENSURE(strcmp(s.name, "default") == 0);
  ENSURE_NEAR(s.rate_hz, 1000, 0);
  ENSURE(s.integrator == KHZ_INT_RK4);
  ENSURE(s.contact.method == KHZ_CONTACT_PENALTY);
  ENSURE(s.has_ground && s.ground_height == 0);

  khzModel *m = khz_compile(s.spec, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  if (!m) {
    khz_deleteScene(&s);
    return;
  }
  ENSURE_NEAR(m->timestep, 1e-3, 1e-15);
  ENSURE_NEAR(m->gravity[2], -9.81, 0);
  ENSURE(m->integrator == KHZ_INT_RK4);

  /* the arm: 7 revolute joints, welded base on the table top */
  const char *arm[] = {"arm/link1", "arm/link2", "arm/link3", "arm/link4",
                       "arm/link5", "arm/link6", "arm/link7"};
  for (int i = 0; i < 7; i++) {
    int b = khz_name2body(m, arm[i]);
    ENSURE_MSG(b > 0, "no body %s", arm[i]);
    if (b > 0) ENSURE(m->jnt_type[b] == KHZ_JOINT_REVOLUTE);
  }
  int base = khz_name2body(m, "arm/base_link");
  ENSURE(base > 0 && m->jnt_type[base] == KHZ_JOINT_FIXED && m->body_parent[base] == 0);
  if (base > 0) ENSURE_NEAR(m->body_pos[3 * base + 2], 0.75, 1e-12);

  /* the table (welded) and the loose objects (floating) */
  int table = khz_name2body(m, "table");
  ENSURE(table > 0 && m->jnt_type[table] == KHZ_JOINT_FIXED);
  const char *loose[] = {"box1", "box2", "ball", "can", "capsule"};
  for (int i = 0; i < 5; i++) {
    int b = khz_name2body(m, loose[i]);
    ENSURE_MSG(b > 0 && m->jnt_type[b] == KHZ_JOINT_FLOATING, "%s is not floating", loose[i]);
  }
  ENSURE(m->nbody == 1 + 9 + 1 + 5);
  ENSURE(m->nq == 7 + 5 * 7 && m->nv == 7 + 5 * 6);

  /* a ground plane on the world, one collision geom per object */
  int planes = 0;
  for (int g = 0; g < m->ngeom; g++)
    planes += m->geom_type[g] == KHZ_GEOM_PLANE && m->geom_body[g] == 0;
  ENSURE(planes == 1);

  /* every loose object rests on the table top: lowest point at z = 0.75 */
  khzData *d = khz_makeData(m, 0);
  khz_kinematics(m, d);
  double top = 0.75;
  for (int g = 0; g < m->ngeom; g++) {
    int b = m->geom_body[g];
    if (b <= 0 || m->jnt_type[b] != KHZ_JOINT_FLOATING) continue;
    const double *R = d->xrot + 9 * b, *sz = m->geom_size + 3 * g;
    double low = 0;
    if (m->geom_type[g] == KHZ_GEOM_BOX) {
      low = fabs(R[6]) * sz[0] + fabs(R[7]) * sz[1] + fabs(R[8]) * sz[2];
    } else if (m->geom_type[g] == KHZ_GEOM_SPHERE) {
      low = sz[0];
    } else if (m->geom_type[g] == KHZ_GEOM_CYLINDER) {
      low = fabs(R[8]) * sz[1] + sqrt(fmax(0, 1 - R[8] * R[8])) * sz[0];
    } else if (m->geom_type[g] == KHZ_GEOM_CAPSULE) {
      low = fabs(R[8]) * sz[1] + sz[0];
    }
    ENSURE_MSG(fabs(d->xpos[3 * b + 2] - low - top) < 1e-6, "%s: bottom at %g, table top %g",
               m->body_name[b], d->xpos[3 * b + 2] - low, top);
  }

  /* the arm's q0 is inside its limits and the tool is above the table */
  for (int b = 1; b < m->nbody; b++) {
    if (!m->jnt_limited[b]) continue;
    double q = m->q0[m->jnt_qadr[b]];
    ENSURE_MSG(q >= m->jnt_range[2 * b] && q <= m->jnt_range[2 * b + 1], "%s", m->jnt_name[b]);
  }
  int tool = khz_name2body(m, "arm/tool");
  ENSURE(tool > 0 && d->xpos[3 * tool + 2] > top + 0.3);
  khz_deleteData(&d);

  /* the file on disk is the embedded one */
  khzScene s2;
  khzModel *m2 = khz_loadModel("scenes/default.yaml", &s2, err, sizeof err);
  ENSURE_MSG(m2 != NULL, "%s", err);
  if (m2) {
    ENSURE(m2->nq == m->nq && m2->nv == m->nv && m2->nbody == m->nbody);
    ENSURE(memcmp(m2->q0, m->q0, (size_t)m->nq * sizeof(double)) == 0);
    ENSURE(s2.spec != NULL);
    khz_deleteModel(&m2);
    khz_deleteScene(&s2);
  }
  khz_deleteModel(&m);
  khz_deleteScene(&s);
  ENSURE(s.spec == NULL);
  khz_deleteScene(&s); /* twice is harmless */
}

/* the fixture: every key, checked value by value */
static void test_fixture(void) {
  char err[1024] = "";
  khzScene s;
  int rc = khz_loadScene(&s, DATA "scene_fixture.yaml", err, sizeof err);
  ENSURE_MSG(rc == 0, "%s", err);
  if (rc) return;
  khzSpec *spec = s.spec;

  /* globals */
  ENSURE(strcmp(s.name, "fixture") == 0);
  ENSURE_NEAR(s.rate_hz, 500, 0);
  ENSURE(s.integrator == KHZ_INT_EULER);
  ENSURE(s.has_ground && s.ground_height == -0.1);
  ENSURE(s.contact.method == KHZ_CONTACT_DEEPEST);
  ENSURE(s.contact.kp == 6000 && s.contact.kv == 3000 && s.contact.ki == 200);
  ENSURE(s.contact.gamma == 0.8 && s.contact.mu == 0.4 && s.contact.restitution == 0);
  khzGeomSpec *ground = spec_geom(spec, 0);
  ENSURE(ground && ground->type == KHZ_GEOM_PLANE);
  if (ground) {
    ENSURE(ground->pos[2] == -0.1 && ground->friction == 0.5 && ground->rgba[2] == 0.3);
  }

  /* robot "bot": welded at (1, 2, 3), yawed 90 degrees, q0 set by name */
  int root = spec_body(spec, "bot/base");
  ENSURE(root > 0);
  if (root > 0) {
    khzBodySpec *b = khz_spec_body(spec, root);
    ENSURE(b->joint_type == KHZ_JOINT_FIXED && b->parent == 0);
    ENSURE(b->pos[0] == 1 && b->pos[1] == 2 && b->pos[2] == 3);
    ENSURE_NEAR(b->quat[0], sqrt(0.5), 1e-12);
    ENSURE_NEAR(b->quat[3], sqrt(0.5), 1e-12);
  }
  int j = spec_joint(spec, "bot/shoulder");
  ENSURE(j > 0 && khz_spec_body(spec, j)->q0[0] == 0.5);
  ENSURE(j > 0 && khz_spec_body(spec, j)->qd0[0] == -1.5);
  j = spec_joint(spec, "bot/slide");
  ENSURE(j > 0 && khz_spec_body(spec, j)->qd0[0] == 0);
  j = spec_joint(spec, "bot/wrist");
  ENSURE(j > 0 && khz_spec_body(spec, j)->qd0[0] == 30); /* continuous: no velocity limit */
  j = spec_joint(spec, "bot/slide");
  ENSURE(j > 0 && khz_spec_body(spec, j)->q0[0] == 0.1);
  j = spec_joint(spec, "bot/wrist");
  ENSURE(j > 0 && khz_spec_body(spec, j)->q0[0] == 7);

  /* robot "flyer": floating base, q0 = base pose with the quaternion normalised */
  j = spec_body(spec, "flyer/base");
  ENSURE(j > 0);
  if (j > 0) {
    khzBodySpec *b = khz_spec_body(spec, j);
    ENSURE(b->joint_type == KHZ_JOINT_FLOATING);
    ENSURE(b->q0[2] == 1 && b->q0[3] == 0 && b->q0[6] == 1);
    /* base.vel stays in the world; base.angvel (world x) into the body frame,
     * turned 180 degrees about z: -x */
    ENSURE(b->qd0[0] == 0.1 && b->qd0[1] == 0.2 && b->qd0[2] == 0.3);
    ENSURE_NEAR(b->qd0[3], -1, 1e-15);
    ENSURE_NEAR(b->qd0[4], 0, 1e-15);
    ENSURE_NEAR(b->qd0[5], 0, 1e-15);
  }
  ENSURE(spec_joint(spec, "flyer/shoulder") > 0);

  /* objects: welded crate, floating ball, derived inertias */
  int crate = spec_body(spec, "crate");
  ENSURE(crate > 0);
  if (crate > 0) {
    khzBodySpec *b = khz_spec_body(spec, crate);
    ENSURE(b->joint_type == KHZ_JOINT_FIXED && b->pos[0] == 0.5 && b->pos[2] == 0.3);
    ENSURE_NEAR(b->inertia[0], 2 * (0.04 + 0.09) / 3, 1e-15);
    ENSURE_NEAR(b->inertia[1], 2 * (0.01 + 0.09) / 3, 1e-15);
    ENSURE_NEAR(b->inertia[2], 2 * (0.01 + 0.04) / 3, 1e-15);
    khzGeomSpec *g = spec_geom(spec, crate);
    ENSURE(g && g->type == KHZ_GEOM_BOX && g->size[0] == 0.1 && g->size[2] == 0.3);
  }
  int ball = spec_body(spec, "ball");
  ENSURE(ball > 0);
  if (ball > 0) {
    khzBodySpec *b = khz_spec_body(spec, ball);
    ENSURE(b->joint_type == KHZ_JOINT_FLOATING && strcmp(b->joint_name, "ball") == 0);
    ENSURE(b->q0[2] == 2 && b->q0[3] == 1 && b->mass == 1);
    ENSURE(b->qd0[0] == 1 && b->qd0[1] == -2 && b->qd0[2] == 0.5);
    ENSURE(b->qd0[3] == 0 && b->qd0[4] == 3 && b->qd0[5] == 0);
    ENSURE_NEAR(b->inertia[0], 0.004, 1e-15);
    khzGeomSpec *g = spec_geom(spec, ball);
    ENSURE(g && g->type == KHZ_GEOM_SPHERE && g->friction == 0.3 && g->rgba[3] == 0.5);
  }
  int can = spec_body(spec, "can");
  if (can > 0) {
    khzBodySpec *b = khz_spec_body(spec, can);
    ENSURE_NEAR(b->inertia[0], 0.5 * (3 * 0.0025 + 4 * 0.01) / 12, 1e-15);
    ENSURE_NEAR(b->inertia[2], 0.5 * 0.0025 / 2, 1e-15);
  }
  ENSURE(can > 0);

  /* the capsule against a numerical integration over its volume */
  int pill = spec_body(spec, "pill");
  ENSURE(pill > 0);
  if (pill > 0) {
    const double r = 0.05, h = 0.1, m = 0.3;
    const int n = 160;
    double ixx = 0, izz = 0, count = 0;
    for (int a = 0; a < n; a++)
      for (int b = 0; b < n; b++)
        for (int c = 0; c < 2 * n; c++) {
          double x = -r + (a + 0.5) * 2 * r / n, y = -r + (b + 0.5) * 2 * r / n;
          double z = -(h + r) + (c + 0.5) * 2 * (h + r) / (2 * n);
          double zc = fmax(fabs(z) - h, 0);
          if (x * x + y * y + zc * zc > r * r) continue;
          ixx += y * y + z * z;
          izz += x * x + y * y;
          count++;
        }
    khzBodySpec *b = khz_spec_body(spec, pill);
    ENSURE_NEAR(b->inertia[0] / (m * ixx / count), 1, 5e-3);
    ENSURE_NEAR(b->inertia[2] / (m * izz / count), 1, 5e-3);
    ENSURE(b->inertia[1] == b->inertia[0]);
  }

  /* a mesh with its scale, resolved file and given inertia; a given full inertia */
  int rock = spec_body(spec, "rock");
  ENSURE(rock > 0);
  if (rock > 0) {
    khzGeomSpec *g = spec_geom(spec, rock);
    ENSURE(g && g->type == KHZ_GEOM_MESH && g->size[0] == 2);
    if (g) ENSURE(strstr(g->meshfile, "scene_mesh.obj") != NULL);
    ENSURE(khz_spec_body(spec, rock)->inertia[0] == 0.1);
  }
  int plate = spec_body(spec, "plate");
  ENSURE(plate > 0 && khz_spec_body(spec, plate)->inertia[3] == 0.001);

  /* a plane object: a welded massless body at pos, its local z along the
   * (normalised) normal, with one plane geom */
  ENSURE(s.ground_normal[2] == 1 && s.ground_pos[2] == -0.1);
  int wall = spec_body(spec, "wall");
  ENSURE(wall > 0);
  if (wall > 0) {
    khzBodySpec *b = khz_spec_body(spec, wall);
    ENSURE(b->joint_type == KHZ_JOINT_FIXED && b->parent == 0 && b->mass == 0);
    ENSURE(b->pos[0] == 2 && b->pos[1] == 0 && b->pos[2] == 0);
    /* R e_z = -x: a half turn about y from z, q = [cos 45, 0, -sin 45, 0] */
    ENSURE_NEAR(b->quat[0], sqrt(0.5), 1e-15);
    ENSURE_NEAR(b->quat[2], -sqrt(0.5), 1e-15);
    ENSURE(b->quat[1] == 0 && b->quat[3] == 0);
    khzGeomSpec *g = spec_geom(spec, wall);
    ENSURE(g && g->type == KHZ_GEOM_PLANE && g->friction == 0.2 && g->rgba[2] == 1);
  }

  /* the whole scene compiles with the scene's options */
  khzModel *m = khz_compile(spec, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  if (m) {
    ENSURE_NEAR(m->timestep, 0.002, 1e-15);
    ENSURE(m->integrator == KHZ_INT_EULER);
    ENSURE(m->gravity[2] == -1.62);
    khz_deleteModel(&m);
  }
  khz_deleteScene(&s);
}

/* every bad input: -1, one message "FILE:LINE:COL: key 'KEY': ...", scene untouched */
static const struct {
  const char *file;
  int line; /* 0 = not checked */
  const char *key;
  const char *phrase;
} bad[] = {
    {"scene_unknown_key.yaml", 4, "gravty", "unknown key"},
    {"scene_unknown_nested.yaml", 8, "objects[0].colour", "unknown key"},
    {"scene_unknown_base_key.yaml", 6, "robots[0].base.position", "unknown key"},
    {"scene_unknown_contact_key.yaml", 3, "contact.stiffness", "unknown key"},
    {"scene_rate_type.yaml", 3, "rate_hz", "expected a number"},
    {"scene_quoted_number.yaml", 7, "objects[0].mass", "expected a number"},
    {"scene_gravity_len.yaml", 3, "gravity", "list of 3 numbers"},
    {"scene_gravity_entry.yaml", 3, "gravity[2]", "expected a number"},
    {"scene_bool_type.yaml", 8, "objects[0].fixed", "true or false"},
    {"scene_objects_type.yaml", 3, "objects", "expected a list"},
    {"scene_ground_type.yaml", 3, "ground", "expected a mapping"},
    {"scene_missing_version.yaml", 3, "khz_scene", "required key missing"},
    {"scene_bad_version.yaml", 2, "khz_scene", "not supported"},
    {"scene_missing_mass.yaml", 4, "objects[0].mass", "required key missing: add it to this entry"},
    {"scene_missing_urdf.yaml", 4, "robots[0].urdf", "required key missing"},
    {"scene_missing_size.yaml", 4, "objects[0].size", "required key missing"},
    {"scene_negative_mass.yaml", 7, "objects[0].mass", "out of range (> 0 kg): give a value in that range"},
    {"scene_zero_box.yaml", 6, "objects[0].size", "must be > 0"},
    {"scene_sphere_size.yaml", 6, "objects[0].size", "list of 1 number"},
    {"scene_rate_low.yaml", 3, "rate_hz", "100 to 10000"},
    {"scene_rate_high.yaml", 3, "rate_hz", "100 to 10000"},
    {"scene_bad_integrator.yaml", 3, "integrator", "rk4, euler"},
    {"scene_bad_method.yaml", 4, "contact.method", "none, penalty, deepest"},
    {"scene_bad_experiment_kind.yaml", 4, "experiment.kind", "unknown kind"},
    {"scene_bad_experiment_key.yaml", 5, "experiment.cycles", "unknown key"},
    {"scene_bad_gain_mass.yaml", 4, "contact.gain_mass", "sum, reduced, effective"},
    {"scene_bad_gamma.yaml", 3, "contact.gamma", "out of range"},
    {"scene_bad_shape.yaml", 5, "objects[0].shape", "box, sphere, cylinder, capsule, mesh"},
    {"scene_q0_unknown.yaml", 8, "robots[0].q0.elbow", "no joint 'elbow'"},
    {"scene_q0_prefixed.yaml", 6, "robots[0].q0.r/shoulder", "no joint"},
    {"scene_q0_limit.yaml", 6, "robots[0].q0.shoulder", "outside the joint limits [-1, 1]: give a position within them"},
    {"scene_urdf_missing.yaml", 5, "robots[0].urdf", "not found"},
    {"scene_urdf_broken.yaml", 5, "robots[0].urdf", "URDF failed to load"},
    {"scene_embedded_missing.yaml", 5, "robots[0].urdf", "no embedded file"},
    {"scene_duplicate_key.yaml", 4, "rate_hz", "given twice (first at line 3): keep one"},
    {"scene_duplicate_name.yaml", 5, "objects[1].name", "already used by another robot or object: give each a name of its own"},
    {"scene_name_slash.yaml", 4, "objects[0].name", "may not contain '/', ',', '\"' or spaces: use letters"},
    {"scene_rpy_and_quat.yaml", 9, "objects[0].quat", "not both"},
    {"scene_zero_quat.yaml", 8, "objects[0].quat", "zero length: give a rotation, e.g. [1, 0, 0, 0] for none"},
    {"scene_bad_inertia.yaml", 8, "objects[0].inertia", "not positive definite"},
    {"scene_mesh_no_inertia.yaml", 4, "objects[0].inertia", "a mesh needs inertia"},
    {"scene_mesh_missing.yaml", 6, "objects[0].file", "not found"},
    {"scene_file_on_box.yaml", 8, "objects[0].scale", "only for shape mesh"},
    {"scene_rgba_range.yaml", 3, "ground.rgba", "outside [0, 1]"},
    {"scene_vel_fixed.yaml", 9, "objects[0].vel", "only for a free object"},
    {"scene_vel_len.yaml", 8, "objects[0].angvel", "list of 3 numbers, got 2"},
    {"scene_vel_entry.yaml", 8, "objects[0].vel[1]", "expected a number, got 'fast'"},
    {"scene_qd0_unknown.yaml", 8, "robots[0].qd0.elbow", "no joint 'elbow'"},
    {"scene_qd0_limit.yaml", 6, "robots[0].qd0.shoulder", "beyond the joint's velocity limit 2: give a smaller speed"},
    {"scene_qd0_type.yaml", 6, "robots[0].qd0", "expected a mapping joint: value"},
    {"scene_base_vel_welded.yaml", 7, "robots[0].base.angvel", "only for a floating base"},
    {"scene_ground_normal_zero.yaml", 5, "ground.normal", "zero length"},
    {"scene_ground_normal_rpy.yaml", 5, "ground.normal", "not both"},
    {"scene_ground_height_pos.yaml", 5, "ground.pos", "not both"},
    {"scene_plane_mass.yaml", 7, "objects[0].mass", "not used by shape plane"},
    {"scene_plane_not_fixed.yaml", 6, "objects[0].fixed", "always fixed"},
    {"scene_normal_on_box.yaml", 8, "objects[0].normal", "only for shape plane"},
    {"scene_top_list.yaml", 2, "", "expected a mapping"},
    {"scene_syntax.yaml", 0, "", "YAML syntax"},
    {"scene_empty.yaml", 0, "", "empty scene"},
    {"scene_two_documents.yaml", 4, "", "second YAML document"},
};

static void test_bad_inputs(void) {
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char path[256], err[1024], prefix[300];
    khzScene s, before;
    memset(&s, 0x5a, sizeof s);
    snprintf(s.name, sizeof s.name, "untouched");
    before = s;
    snprintf(path, sizeof path, DATA "%s", bad[i].file);
    strcpy(err, "(none)");

    int rc = khz_loadScene(&s, path, err, sizeof err);
    ENSURE_MSG(rc == -1, "%s loaded", bad[i].file);
    ENSURE_MSG(memcmp(&s, &before, sizeof s) == 0, "%s: scene changed", bad[i].file);
    printf("%s\n", err);

    /* FILE:LINE:COL: */
    snprintf(prefix, sizeof prefix, "%s:", path);
    ENSURE_MSG(strncmp(err, prefix, strlen(prefix)) == 0, "%s: no file in '%s'", bad[i].file, err);
    int line = 0, col = 0;
    ENSURE_MSG(sscanf(err + strlen(prefix), "%d:%d:", &line, &col) == 2 && col > 0,
               "%s: no line:col in '%s'", bad[i].file, err);
    if (bad[i].line) {
      ENSURE_MSG(line == bad[i].line, "%s: line %d, expected %d", bad[i].file, line, bad[i].line);
    }

    /* the key and the problem */
    if (bad[i].key[0]) {
      char key[300];
      snprintf(key, sizeof key, "key '%s': ", bad[i].key);
      ENSURE_MSG(strstr(err, key) != NULL, "%s: '%s' not in '%s'", bad[i].file, key, err);
    }
    ENSURE_MSG(strstr(err, bad[i].phrase) != NULL, "%s: '%s' not in '%s'", bad[i].file,
               bad[i].phrase, err);
    ENSURE_MSG(strchr(err, '\n') == NULL, "%s: more than one line", bad[i].file);
  }

  /* a file that does not exist */
  char err[512] = "";
  khzScene s;
  memset(&s, 0x5a, sizeof s);
  khzScene before = s;
  ENSURE(khz_loadScene(&s, DATA "scene_no_such_file.yaml", err, sizeof err) == -1);
  ENSURE(strstr(err, "scene_no_such_file.yaml") != NULL);
  ENSURE(memcmp(&s, &before, sizeof s) == 0);

  /* a tiny error buffer is filled, terminated, and not overrun */
  char small[16];
  memset(small, 'x', sizeof small);
  ENSURE(khz_loadScene(&s, DATA "scene_rate_low.yaml", small, 8) == -1);
  ENSURE(strlen(small) == 7 && small[8] == 'x');
}

/* khz_loadSceneString: the given name in messages, basedir for relative URDFs */
static void test_strings(void) {
  char err[1024] = "";
  khzScene s;
  const char *good = "khz_scene: 1\nrobots:\n  - {name: r, urdf: scene_robot.urdf}\n";
  int rc = khz_loadSceneString(&s, good, "inline.yaml", DATA, err, sizeof err);
  ENSURE_MSG(rc == 0, "%s", err);
  if (rc == 0) {
    ENSURE(strcmp(s.name, "inline") == 0);
    ENSURE(spec_joint(s.spec, "r/slide") > 0);
    ENSURE(s.contact.method == KHZ_CONTACT_PENALTY && s.rate_hz == 1000);
    ENSURE(s.threads == 1); /* the step's threads: 1 unless the key says */
    khz_deleteScene(&s);
  }
  rc = khz_loadSceneString(&s, "khz_scene: 1\nthreads: 2\n", "inline.yaml", NULL, err, sizeof err);
  ENSURE_MSG(rc == 0 && s.threads == 2, "%s", err);
  if (rc == 0) khz_deleteScene(&s);
  rc = khz_loadSceneString(&s, "khz_scene: 1\nthreads: 1.5\n", "inline.yaml", NULL, err, sizeof err);
  ENSURE_MSG(rc == -1 && strstr(err, "key 'threads': expected an integer from 1 to 16"), "%s", err);
  rc =
      khz_loadSceneString(&s, "khz_scene: 1\nrate_hz: 1\n", "inline.yaml", NULL, err, sizeof err);
  ENSURE(rc == -1 && starts_with(err, "inline.yaml:2:10: key 'rate_hz': "));
  rc = khz_loadSceneString(&s, "khz_scene: 1\nfoo: 1\n", NULL, NULL, err, sizeof err);
  ENSURE(rc == -1 && starts_with(err, "<string>:2:1: key 'foo': unknown key"));

  /* contact.deepest_stage: stacked by default, all / off (true / false) */
  const struct {
    const char *value;
    int mode;
  } stages[] = {{NULL, KHZ_DEEPEST_STAGE_STACKED}, {"stacked", KHZ_DEEPEST_STAGE_STACKED},
                {"all", KHZ_DEEPEST_STAGE_ALL},     {"true", KHZ_DEEPEST_STAGE_ALL},
                {"off", KHZ_DEEPEST_STAGE_OFF},     {"false", KHZ_DEEPEST_STAGE_OFF}};
  for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++) {
    char yaml[128];
    if (stages[i].value)
      snprintf(yaml, sizeof yaml, "khz_scene: 1\ncontact: {method: deepest, deepest_stage: %s}\n", stages[i].value);
    else
      snprintf(yaml, sizeof yaml, "khz_scene: 1\ncontact: {method: deepest}\n");
    rc = khz_loadSceneString(&s, yaml, "stage.yaml", NULL, err, sizeof err);
    ENSURE_MSG(rc == 0, "%s", err);
    if (rc == 0) {
      ENSURE(s.contact.deepest_stage == stages[i].mode);
      khz_deleteScene(&s);
    }
  }
  rc = khz_loadSceneString(&s, "khz_scene: 1\ncontact: {deepest_stage: some}\n", "stage.yaml", NULL, err,
                           sizeof err);
  ENSURE(rc == -1 && starts_with(err, "stage.yaml:2:26: key 'contact.deepest_stage': unknown choice 'some'"));

  /* contact.deepest_ties: on by default, false turns it off */
  const struct {
    const char *value;
    int mode;
  } ties[] = {{NULL, KHZ_DEEPEST_TIES_ON}, {"true", KHZ_DEEPEST_TIES_ON}, {"false", KHZ_DEEPEST_TIES_OFF}};
  for (size_t i = 0; i < sizeof ties / sizeof ties[0]; i++) {
    char yaml[128];
    snprintf(yaml, sizeof yaml, "khz_scene: 1\ncontact: {method: deepest%s%s}\n", ties[i].value ? ", deepest_ties: " : "",
             ties[i].value ? ties[i].value : "");
    rc = khz_loadSceneString(&s, yaml, "ties.yaml", NULL, err, sizeof err);
    ENSURE_MSG(rc == 0, "%s", err);
    if (rc == 0) {
      ENSURE(s.contact.deepest_ties == ties[i].mode);
      khz_deleteScene(&s);
    }
  }
  rc = khz_loadSceneString(&s, "khz_scene: 1\ncontact: {deepest_ties: some}\n", "ties.yaml", NULL, err, sizeof err);
  ENSURE(rc == -1 && starts_with(err, "ties.yaml:2:25: key 'contact.deepest_ties'"));

  /* anchors and aliases are plain YAML and work */
  const char *alias =
      "khz_scene: 1\n"
      "objects:\n"
      "  - &ball {name: b1, shape: sphere, size: [0.1], mass: 1}\n"
      "  - {name: b2, shape: sphere, size: [0.1], mass: 1, pos: [1, 0, 0]}\n";
  rc = khz_loadSceneString(&s, alias, "alias.yaml", NULL, err, sizeof err);
  ENSURE_MSG(rc == 0, "%s", err);
  if (rc == 0) khz_deleteScene(&s);
}

/* a scene string compiled into a model and a state; NULL on failure */
static khzModel *model_of(const char *yaml, khzData **d) {
  char err[1024] = "";
  khzScene s;
  *d = NULL;
  int rc = khz_loadSceneString(&s, yaml, "velocity.yaml", NULL, err, sizeof err);
  ENSURE_MSG(rc == 0, "%s", err);
  if (rc) return NULL;
  khzModel *m = khz_compile(s.spec, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  khz_deleteScene(&s);
  if (m) *d = khz_makeData(m, 0);
  return m;
}

/* initial velocities take effect and survive a reset: a free body in zero
 * gravity moves v t and an isotropic one turns about the world axis of its
 * angvel; a ball thrown horizontally follows the parabola until it lands */
static void test_initial_velocity(void) {
  khzData *d;
  khzModel *m = model_of("khz_scene: 1\n"
                         "gravity: [0, 0, 0]\n"
                         "contact: {method: none}\n"
                         "objects:\n"
                         "  - {name: b, shape: sphere, size: [0.1], mass: 2, pos: [1, 2, 3],\n"
                         "     rpy: [0.3, -0.7, 1.1], vel: [0.5, -1, 2], angvel: [0, 0.6, -0.8]}\n",
                         &d);
  if (!m || !d) goto flight;
  {
    const double v[3] = {0.5, -1, 2}, w[3] = {0, 0.6, -0.8};
    double R0[9];
    memcpy(R0, d->xrot + 9, sizeof R0);
    /* the model holds qd in the joint's layout; the world angular velocity is R w_body */
    for (int k = 0; k < 3; k++) ENSURE(m->qd0[k] == v[k] && d->qd[k] == v[k]);
    for (int k = 0; k < 3; k++) {
      double wk = R0[3 * k] * d->qd[3] + R0[3 * k + 1] * d->qd[4] + R0[3 * k + 2] * d->qd[5];
      ENSURE_NEAR(wk, w[k], 1e-15);
    }
    for (int s = 0; s < 1500; s++) khz_step(m, d);
    double t = d->time;
    ENSURE_NEAR(t, 1.5, 1e-12);
    const double p0[3] = {1, 2, 3};
    for (int k = 0; k < 3; k++) ENSURE_NEAR(d->q[k], p0[k] + v[k] * t, 1e-12);
    /* orientation: rotation by |w| t about w (world) after R0 */
    double th = t, ax[3] = {0, 0.6, -0.8}, c = cos(th), sn = sin(th), Rw[9], R[9];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        Rw[3 * i + j] = (i == j ? c : 0) + (1 - c) * ax[i] * ax[j] +
                        sn * (i == 0 ? (j == 1 ? -ax[2] : j == 2 ? ax[1] : 0)
                              : i == 1 ? (j == 0 ? ax[2] : j == 2 ? -ax[0] : 0)
                                       : (j == 0 ? -ax[1] : j == 1 ? ax[0] : 0));
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        R[3 * i + j] = Rw[3 * i] * R0[j] + Rw[3 * i + 1] * R0[3 + j] + Rw[3 * i + 2] * R0[6 + j];
    for (int k = 0; k < 9; k++) ENSURE_NEAR(d->xrot[9 + k], R[k], 1e-9);

    /* a reset restores q0 and qd0 */
    khz_resetData(m, d);
    for (int k = 0; k < 6; k++) ENSURE(d->qd[k] == m->qd0[k]);
    ENSURE(d->q[0] == 1 && d->time == 0);
  }
flight:
  khz_deleteData(&d);
  khz_deleteModel(&m);

  /* thrown horizontally from 1 m above the ground: the parabola to 1e-9 (RK4
   * integrates it exactly up to rounding) until the ball touches down */
  m = model_of("khz_scene: 1\n"
               "ground: {}\n"
               "objects:\n"
               "  - {name: ball, shape: sphere, size: [0.1], mass: 1, pos: [0, 0, 1.1],\n"
               "     vel: [2, 0.5, 0]}\n",
               &d);
  if (!m || !d) goto done;
  {
    const double g = 9.81, tland = sqrt(2 * 1.0 / g);
    int steps = 0;
    double worst = 0;
    while (d->time + m->timestep < tland - 1e-3) {
      khz_step(m, d);
      steps++;
      double t = d->time;
      double ex[3] = {2 * t, 0.5 * t, 1.1 - 0.5 * g * t * t};
      for (int k = 0; k < 3; k++) worst = fmax(worst, fabs(d->q[k] - ex[k]));
      ENSURE(d->ncontact == 0);
    }
    ENSURE(steps > 400);
    ENSURE_MSG(worst < 1e-9, "parabola off by %g", worst);
    /* it does land: in contact soon after */
    for (int s = 0; s < 20 && d->ncontact == 0; s++) khz_step(m, d);
    ENSURE(d->ncontact == 1);
  }
done:
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* a ground tilted 20 degrees (by normal, and by rpy) is the flat ground with
 * gravity turned the other way: a box resting on it slides and sinks the same
 * in the plane's frame (the contact pipeline does not assume z up) */
static void test_tilted_ground(void) {
  const double a = 20 * M_PI / 180, c = cos(a), sn = sin(a);
  char tilted[2][640], flat[512];
  /* the box in the plane's frame at (0, 0, 0.1); R = Rx(a), n = R z */
  snprintf(tilted[0], sizeof tilted[0],
           "khz_scene: 1\nground: {normal: [0, %.17g, %.17g]}\ncontact: {mu: 0.2}\n"
           "objects:\n  - {name: box, shape: box, size: [0.1, 0.1, 0.1], mass: 1,\n"
           "     pos: [0, %.17g, %.17g], rpy: [%.17g, 0, 0]}\n",
           -sn, c, -0.1 * sn, 0.1 * c, a);
  snprintf(tilted[1], sizeof tilted[1],
           "khz_scene: 1\nground: {rpy: [%.17g, 0, 0]}\ncontact: {mu: 0.2}\n"
           "objects:\n  - {name: box, shape: box, size: [0.1, 0.1, 0.1], mass: 1,\n"
           "     pos: [0, %.17g, %.17g], rpy: [%.17g, 0, 0]}\n",
           a, -0.1 * sn, 0.1 * c, a);
  snprintf(flat, sizeof flat,
           "khz_scene: 1\ngravity: [0, %.17g, %.17g]\nground: {}\ncontact: {mu: 0.2}\n"
           "objects:\n  - {name: box, shape: box, size: [0.1, 0.1, 0.1], mass: 1,\n"
           "     pos: [0, 0, 0.1]}\n",
           -9.81 * sn, -9.81 * c);
  khzData *df;
  khzModel *mf = model_of(flat, &df);
  if (!mf || !df) return;
  for (int s = 0; s < 1000; s++) khz_step(mf, df);
  ENSURE(df->ncontact == 1);
  for (int v = 0; v < 2; v++) {
    khzData *d;
    khzModel *m = model_of(tilted[v], &d);
    if (!m || !d) continue;
    for (int s = 0; s < 1000; s++) khz_step(m, d);
    /* the box's position in the plane's frame: R^T x */
    const double *x = d->q;
    double y = c * x[1] + sn * x[2], z = -sn * x[1] + c * x[2];
    ENSURE_MSG(fabs(x[0] - df->q[0]) < 1e-9 && fabs(y - df->q[1]) < 1e-9 &&
                   fabs(z - df->q[2]) < 1e-9,
               "ground %s: (%g, %g, %g) in the plane's frame, flat ground (%g, %g, %g)",
               v ? "rpy" : "normal", x[0], y, z, df->q[0], df->q[1], df->q[2]);
    ENSURE(df->q[1] < -0.1); /* it did slide down: mu 0.2 < tan 20 deg */
    ENSURE(d->ncontact == 1);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
  khz_deleteData(&df);
  khz_deleteModel(&mf);
}

/* khz_loadModel: by extension, compiled, scene_out only on success */
static void test_load_model(void) {
  char err[1024] = "";
  khzScene s;
  khzModel *m = khz_loadModel(DATA "scene_robot.urdf", &s, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  if (m) {
    ENSURE(m->nbody == 5 && m->nq == 3);
    ENSURE(m->jnt_type[1] == KHZ_JOINT_FIXED && m->body_parent[1] == 0);
    ENSURE(m->timestep == 1e-3 && m->gravity[2] == -9.81 && m->integrator == KHZ_INT_RK4);
    ENSURE(s.contact.method == KHZ_CONTACT_NONE && !s.has_ground);
    ENSURE(strcmp(s.name, "scene_robot") == 0 && s.spec != NULL);
    khz_deleteModel(&m);
    khz_deleteScene(&s);
  }

  m = khz_loadModel("default", NULL, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  khz_deleteModel(&m);
  m = khz_loadModel(DATA "scene_fixture.yaml", NULL, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  khz_deleteModel(&m);

  /* failures leave scene_out alone */
  khzScene before;
  memset(&s, 0x5a, sizeof s);
  before = s;
  m = khz_loadModel(DATA "scene_robot.obj", &s, err, sizeof err);
  ENSURE(m == NULL && strstr(err, "unknown model type") != NULL);
  m = khz_loadModel(DATA "no_such_robot.urdf", &s, err, sizeof err);
  ENSURE(m == NULL && strstr(err, "no_such_robot.urdf") != NULL);
  m = khz_loadModel(DATA "scene_negative_mass.yaml", &s, err, sizeof err);
  ENSURE(m == NULL && strstr(err, "objects[0].mass") != NULL);
  ENSURE(memcmp(&s, &before, sizeof s) == 0);
}


/* issue 19: an MJCF robot in a scene (robots[].mjcf) */
static void test_mjcf_robot(void) {
  khzScene s;
  char err[1024] = "";
  int rc = khz_loadScene(&s, DATA "scene_mjcf.yaml", err, sizeof err);
  ENSURE_MSG(rc == 0, "%s", err);
  if (rc == 0) {
    /* prefixed names, the key's q0 with the scene's override, the model's floor left out */
    int j2 = spec_joint(s.spec, "arm/joint2"), j7 = spec_joint(s.spec, "arm/joint7");
    ENSURE(j2 > 0 && j7 > 0);
    if (j2 > 0) ENSURE(khz_spec_body(s.spec, j2)->q0[0] == 0.785398);
    if (j7 > 0) ENSURE(khz_spec_body(s.spec, j7)->q0[0] == 0.5);
    int base = spec_body(s.spec, "arm/base");
    ENSURE(base > 0 && khz_spec_body(s.spec, base)->pos[0] == 0.5);
    int nplane = 0;
    for (int g = 0; g < khz_spec_ngeom(s.spec); g++)
      nplane += khz_spec_geom(s.spec, g)->type == KHZ_GEOM_PLANE;
    ENSURE(nplane == 1); /* the scene's ground only */
    ENSURE(khz_spec_nexclude(s.spec) == 1);
    khzModel *m = khz_compile(s.spec, err, sizeof err);
    ENSURE_MSG(m != NULL, "%s", err);
    if (m) ENSURE(m->timestep == 0.001 && m->integrator == KHZ_INT_RK4); /* the scene's */
    khz_deleteModel(&m);
    khz_deleteScene(&s);
  }
  static const struct {
    const char *yaml, *expect;
  } bad[] = {
      {"khz_scene: 1\nrobots:\n  - {name: a, mjcf: menagerie/kuka_iiwa_14/iiwa14.xml, urdf: x}\n",
       "inline.yaml:3:21: key 'robots[0].mjcf': give urdf or mjcf, not both"},
      {"khz_scene: 1\nrobots:\n  - {name: a, mjcf: menagerie/kuka_iiwa_14/iiwa14.xml, "
       "floating_base: true}\n",
       "key 'robots[0].floating_base': only for a URDF robot"},
      {"khz_scene: 1\nrobots:\n  - {name: a, mjcf: menagerie/kuka_iiwa_14/iiwa14.xml, "
       "keyframe: nope}\n",
       "key 'robots[0].mjcf': MJCF failed to load: tests/loader/data/menagerie/kuka_iiwa_14/"
       "iiwa14.xml: no <key name=\"nope\"> in the model (1 keys)"},
      {"khz_scene: 1\nrobots:\n  - {name: a, mjcf: nothere.xml}\n",
       "key 'robots[0].mjcf': MJCF file 'nothere.xml' not found"},
      {"khz_scene: 1\nrobots:\n  - {name: a, urdf: x.urdf, keyframe: home}\n",
       "key 'robots[0].keyframe': only for an MJCF model (mjcf:): remove it"},
      /* item 6 of issue 19: every refusal says what to do (hil, haptics,
       * experiment, contact, objects, helpers) */
      {"khz_scene: 1\nobjects:\n  - {name: b, shape: box, size: [1, 1, 1], mass: 1}\n"
       "hil:\n  sensors:\n    - {name: s, type: gyroscope, body: b}\n",
       "inline.yaml:6:23: key 'hil.sensors[0].type': unknown sensor type 'gyroscope': it must be "
       "one of encoder, gyro, accelerometer, force_torque, touch, joint_force_torque"},
      {"khz_scene: 1\nrobots:\n  - {name: r, urdf: scene_robot.urdf}\n"
       "hil:\n  drives:\n    - {joint: r/shoulder, mode: position, max_torque: 5}\n",
       "key 'hil.drives[0].kp': a position drive needs its gains: set kp and/or kd > 0, or use "
       "mode: torque"},
      {"khz_scene: 1\nrobots:\n  - {name: r, urdf: scene_robot.urdf}\n"
       "hil:\n  drives:\n    - {joint: r/shoulder, mode: torque, gear: 0.5}\n",
       "key 'hil.drives[0].gear': 0.5 is below 1 (motor turns per joint turn): give a ratio >= 1, "
       "or leave it out for a direct drive"},
      {"khz_scene: 1\nobjects:\n  - {name: b, shape: box, size: [1, 1, 1], mass: 1}\n"
       "hil:\n  sensors:\n    - {name: g, type: gyro, body: b}\n"
       "  faults:\n    - {at: 0.1, target: g, fault: limp}\n",
       "key 'hil.faults[0].fault': 'g' cannot take the fault limp: a sensor takes none, freeze, "
       "dropout or bias"},
      {"khz_scene: 1\nobjects:\n  - {name: b, shape: box, size: [1, 1, 1], mass: 1}\n"
       "hil:\n  faults:\n    - {at: 0.1, push: b, force: [0, 0, 1]}\n",
       "key 'hil.faults[0].duration': a push needs a duration > 0 s: add it"},
      {"khz_scene: 1\nhil:\n  seed: 1.5\n",
       "key 'hil.seed': 1.5 is not a whole number: give an integer"},
      {"khz_scene: 1\nrate_hz: 100\nobjects:\n  - {name: p, shape: sphere, size: [0.05], mass: 1}\n"
       "haptics:\n  - {body: p, stiffness: 500, damping: 2}\n",
       "key 'haptics[0].damping': 2 violates the passivity bound: raise damping above stiffness * "
       "T / 2 = 2.5 at rate_hz 100, or lower stiffness"},
      {"khz_scene: 1\nobjects:\n  - {name: p, shape: sphere, size: [0.05], mass: 1, fixed: true}\n"
       "haptics:\n  - {body: p, stiffness: 5, damping: 2}\n",
       "key 'haptics[0].body': body 'p' is not a free (floating) object: a haptic proxy must be an "
       "object without 'fixed: true'"},
      {"khz_scene: 1\nexperiment: {kind: piles}\n",
       "key 'experiment.kind': unknown kind 'piles': it must be one of block_penetration, "
       "block_forces, pile, robot, stack, arm_push, st_rod, st_balls"},
      {"khz_scene: 1\nexperiment: {kind: block_forces}\n",
       "key 'experiment.body': required key missing: add it to this entry (the body to act on, one "
       "declared under objects:)"},
      {"khz_scene: 1\ncontact: {method: lcp, friction_directions: 6}\n",
       "key 'contact.friction_directions': 6 is neither 4 nor 8: give 4 or 8"},
      {"khz_scene: 1\ncontact: {method: lemke}\n",
       "key 'contact.method': unknown method 'lemke': it must be one of none, penalty, deepest, "
       "lcp, peg"},
      {"khz_scene: 1\ncontact: {max_pairs: 2.5}\n",
       "key 'contact.max_pairs': must be a whole number: drop the fraction"},
      {"khz_scene: 1\ncontact: {stiffness: 1}\n",
       "key 'contact.stiffness': unknown key: use one of method, kp, kv, ki,"},
      {"khz_scene: 1\ngravity: [0, -9.81]\n",
       "key 'gravity': expected a list of 3 numbers, got 2: write it as [x1, x2, x3]"},
      {"khz_scene: 1\nrate_hz: \"1000\"\n",
       "key 'rate_hz': expected a number, got the quoted string '1000': write the number without "
       "quotes"},
      {"khz_scene: 1\nobjects:\n  - {name: b, shape: box, size: [1, 1, 1], mass: 1, fixed: yes}\n",
       "key 'objects[0].fixed': expected true or false, got 'yes': write true or false"},
      {"khz_scene: 1\nobjects:\n  - {name: b, shape: cone, size: [1], mass: 1}\n",
       "key 'objects[0].shape': unknown shape 'cone': it must be one of box, sphere, cylinder, "
       "capsule, mesh, plane"},
      {"khz_scene: 1\nintegrator: rk2\n",
       "key 'integrator': unknown integrator 'rk2': it must be one of rk4, euler"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    khzScene t;
    memset(&t, 0x5a, sizeof t);
    err[0] = 0;
    ENSURE(khz_loadSceneString(&t, bad[i].yaml, "inline.yaml", DATA, err, sizeof err) == -1);
    ENSURE_MSG(strstr(err, bad[i].expect) != NULL, "'%s', expected '%s'", err, bad[i].expect);
  }
}

/* an MJCF model's <sensor>: the kinds khz's HIL layer has become the scene's
 * HIL sensors (the robot's prefix on their names), before the scene's own;
 * a model file alone gives them too; a name used twice is refused */
static void test_mjcf_sensors(void) {
  khzScene s;
  char err[1024] = "";
  const char *yaml = "khz_scene: 1\nrobots:\n  - {name: r, mjcf: mjcf_sensors.xml}\n"
                     "hil:\n  sensors:\n    - {name: mine, type: gyro, body: r/arm}\n";
  int rc = khz_loadSceneString(&s, yaml, "inline.yaml", DATA, err, sizeof err);
  ENSURE_MSG(rc == 0, "%s", err);
  if (rc == 0) {
    static const char *const names[] = {"r/acc", "r/sensor1", "r/g2", "r/t", "r/ftip", "r/jp", "r/jv", "mine"};
    ENSURE_MSG(s.hil.nsensor == 8, "%d sensors", s.hil.nsensor);
    for (int i = 0; i < 8 && i < s.hil.nsensor; i++)
      ENSURE_MSG(!strcmp(s.hil.sensor[i].name, names[i]), "sensor %d: %s", i, s.hil.sensor[i].name);
    khz_deleteScene(&s);
  }
  khzModel *m = khz_loadModel(DATA "mjcf_sensors.xml", &s, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  if (m) {
    ENSURE(s.hil.nsensor == 7 && !strcmp(s.hil.sensor[0].name, "acc"));
    khz_deleteModel(&m);
    khz_deleteScene(&s);
  }
  const char *twice = "khz_scene: 1\nrobots:\n  - {name: r, mjcf: mjcf_sensors.xml}\n"
                      "  - {name: q, mjcf: mjcf_sensors.xml}\n"
                      "hil:\n  sensors:\n    - {name: r/acc, type: gyro, body: r/arm}\n";
  khzScene t;
  ENSURE(khz_loadSceneString(&t, twice, "inline.yaml", DATA, err, sizeof err) == -1);
  ENSURE_MSG(strstr(err, "sensor name 'r/acc' is used twice") != NULL, "'%s'", err);
}

/* the robots' own actuators (Command.ctrl): a URDF's <ros2_control> interfaces
 * and an MJCF model's <actuator>s, named with the robot's prefix */
static void test_actuators(void) {
  static const char *const yaml =
      "khz_scene: 1\n"
      "robots:\n"
      "  - {name: r, urdf: ros2_control.urdf}\n"
      "  - {name: arm, mjcf: menagerie/kuka_iiwa_14/iiwa14.xml}\n";
  khzScene s;
  char err[1024] = "";
  int rc = khz_loadSceneString(&s, yaml, "inline.yaml", DATA, err, sizeof err);
  ENSURE_MSG(rc == 0, "%s", err);
  if (rc) return;
  /* shoulder/position, shoulder/effort, rail/velocity (acceleration warns), 7 servos */
  ENSURE_MSG(s.nactuator == 10, "%d actuators", s.nactuator);
  ENSURE(!strcmp(s.actuator[0].name, "r/shoulder/position") &&
         !strcmp(s.actuator[0].joint, "r/shoulder") && s.actuator[0].type == KHZ_MJCF_POSITION);
  ENSURE(!strcmp(s.actuator[2].name, "r/rail/velocity") && s.actuator[2].type == KHZ_MJCF_VELOCITY);
  ENSURE(!strcmp(s.actuator[3].name, "arm/actuator1") && !strcmp(s.actuator[3].joint, "arm/joint1"));
  /* a scene's MJCF robot keeps the file's integrator choice for its servos' kv */
  ENSURE(s.actuator[3].kv_implicit);
  khz_deleteScene(&s);
}

int main(void) {
  test_actuators();
  test_default();
  test_fixture();
  test_bad_inputs();
  test_strings();
  test_initial_velocity();
  test_tilted_ground();
  test_load_model();
  test_mjcf_robot();
  test_mjcf_sensors();
  return ensure_report();
}
