/* test_mjcf.c — tests of the MJCF loader (loader/src/mjcf.c): MuJoCo's sample
 * humanoid (the bodies, the chains of multi-joint bodies, the motors, the
 * warnings), the fixtures tests/loader/data/mjcf_*.xml (exact values from the
 * files: inertias, ref, fromto, defaults, names), the load options, .xml in
 * khz_loadModel, and bad input: every error names FILE:LINE and the element,
 * and leaves the spec as it was. Agreement with MuJoCo itself is
 * tests/oracle/test_mjcf_oracle.c's job. Run from the source root. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ensure.h"
#include "khz/hil.h"
#include "khz/khz.h"
#include "khz/load.h"

#define DATA "tests/loader/data/"
#define HUMANOID "/usr/share/mujoco/model/humanoid/humanoid.xml"
#define PI 3.14159265358979323846

/* warnings collected through the callback */
typedef struct warnings {
  int count;
  char msg[32][512];
} warnings;

static void collect(void *user, const char *message) {
  warnings *w = user;
  if (w->count < 32) snprintf(w->msg[w->count], sizeof w->msg[0], "%s", message);
  w->count++;
}

static void options(khzMjcfOptions *opt, warnings *w) {
  khz_mjcf_defaultOptions(opt);
  opt->warn = collect;
  opt->warn_user = w;
}

/* whether some warning contains all of the given fragments */
static int has_warning(const warnings *w, const char *a, const char *b) {
  for (int i = 0; i < w->count && i < 32; i++)
    if (strstr(w->msg[i], a) && (!b || strstr(w->msg[i], b))) return 1;
  return 0;
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

static khzModel *compile(khzSpec *s) {
  char err[512] = "";
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m != NULL, "khz_compile: %s", err);
  return m;
}

/* ------------------------------------------------------------ humanoid -- */

static void test_humanoid(void) {
  if (access(HUMANOID, R_OK) != 0) {
    printf("SKIP humanoid: %s missing (Debian's libmujoco-samples)\n", HUMANOID);
    return;
  }
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzMjcfOptions opt;
  khzMjcfInfo info;
  options(&opt, &w);
  opt.info = &info;
  char err[1024] = "";
  int rc = khz_loadMJCF(s, HUMANOID, &opt, err, sizeof err);
  ENSURE_MSG(rc == 1, "%s", err);
  if (rc != 1) {
    khz_spec_destroy(&s);
    return;
  }

  /* 16 MJCF bodies, 9 of them with extra hinges: 25 khz bodies, 27 dofs */
  ENSURE(khz_spec_nbody(s) == 26);
  ENSURE(khz_spec_ngeom(s) == 20);
  khzBodySpec *torso = khz_spec_body(s, find_body(s, "torso"));
  ENSURE(torso->joint_type == KHZ_JOINT_FLOATING && strcmp(torso->joint_name, "root") == 0);
  ENSURE(torso->parent == 0 && torso->q0[2] == 1.5 && torso->q0[3] == 1);
  ENSURE(torso->damping == 0 && torso->armature == 0); /* <freejoint> takes no defaults */
  ENSURE_NEAR(torso->mass, 5.853834311188983, 1e-12);

  /* lower_waist has abdomen_z then abdomen_y, both at (0 0 .065) */
  int inter = find_body(s, "lower_waist:abdomen_z"), lw = find_body(s, "lower_waist");
  ENSURE(inter > 0 && lw == inter + 1);
  if (inter > 0 && lw > 0) {
    khzBodySpec *a = khz_spec_body(s, inter), *b = khz_spec_body(s, lw);
    ENSURE(a->mass == 0 && a->parent == find_body(s, "torso"));
    ENSURE(strcmp(a->joint_name, "abdomen_z") == 0 && strcmp(b->joint_name, "abdomen_y") == 0);
    ENSURE_NEAR(a->pos[0], -0.01, 1e-15);
    ENSURE_NEAR(a->pos[2], -0.26 + 0.065, 1e-15);
    ENSURE(b->pos[0] == 0 && b->pos[1] == 0 && b->pos[2] == 0 && b->parent == inter);
    ENSURE_NEAR(b->com[2], -0.065, 1e-15); /* the MJCF body origin seen from the anchor */
    ENSURE(a->joint_type == KHZ_JOINT_REVOLUTE && a->limited);
    ENSURE_NEAR(a->lower, -45 * PI / 180, 1e-15);
    ENSURE_NEAR(b->upper, 30 * PI / 180, 1e-15);
    ENSURE(a->damping == 5 && b->damping == 5 && a->armature == 0.01); /* big_(stiff_)joint */
    ENSURE(a->effort_limit == 40 && b->effort_limit == 40);            /* gear 40, ctrl +-1 */
  }

  /* three hips on the thigh, the knee's anchor above the shin's origin */
  ENSURE(find_body(s, "right_thigh:right_hip_x") > 0 &&
         find_body(s, "right_thigh:right_hip_z") > 0);
  khzBodySpec *thigh = khz_spec_body(s, find_body(s, "right_thigh"));
  ENSURE(strcmp(thigh->joint_name, "right_hip_y") == 0 && thigh->effort_limit == 120);
  khzBodySpec *shin = khz_spec_body(s, find_body(s, "right_shin"));
  ENSURE_NEAR(shin->pos[2], -0.403 + 0.02, 1e-15);
  ENSURE(shin->damping == 0.2 && shin->effort_limit == 80);
  khzBodySpec *head = khz_spec_body(s, find_body(s, "head"));
  ENSURE(head->joint_type == KHZ_JOINT_FIXED && head->effort_limit == 0);

  /* the foot's capsules come from fromto, shifted to the ankle_x anchor (0 0 .04) */
  int foot = find_body(s, "right_foot"), nfoot = 0;
  for (int g = 0; g < khz_spec_ngeom(s); g++) {
    khzGeomSpec *gs = khz_spec_geom(s, g);
    if (gs->body != foot) continue;
    nfoot++;
    ENSURE(gs->type == KHZ_GEOM_CAPSULE && gs->size[0] == 0.027);
    ENSURE_NEAR(gs->pos[2], -0.04, 1e-15);
    ENSURE_NEAR(gs->friction, 0.7, 0);
  }
  ENSURE(nfoot == 2);
  khzGeomSpec *floor = khz_spec_geom(s, 0);
  ENSURE(floor->body == 0 && floor->type == KHZ_GEOM_PLANE && floor->friction == 1);

  /* the motors, for ctrl -> torque */
  ENSURE(info.nactuator == 21 && info.timestep == 0.005 && info.integrator == KHZ_INT_EULER);
  ENSURE(strcmp(info.model, "Humanoid") == 0);
  if (info.nactuator == 21) {
    ENSURE(strcmp(info.actuator[0].name, "abdomen_y") == 0);
    ENSURE(strcmp(info.actuator[5].joint, "right_hip_y") == 0 && info.actuator[5].gear == 120);
    ENSURE(info.actuator[5].ctrllimited && info.actuator[5].ctrlrange[0] == -1);
  }
  khz_mjcf_freeInfo(&info);
  ENSURE(info.actuator == NULL && info.nactuator == 0);

  /* one warning per unsupported kind, in file order, with counts */
  ENSURE_MSG(w.count == 9, "%d warnings", w.count);
  ENSURE(has_warning(&w, "humanoid.xml:30: <texture>: visual only", "(3 occurrences)"));
  ENSURE(has_warning(&w, ":33: <material name=\"body\">: visual only", "(2 occurrences)"));
  ENSURE(has_warning(&w, ":41: <geom> in <default class=\"body\">: attribute condim",
                     "(2 occurrences)"));
  ENSURE(has_warning(&w, ":65: <camera name=\"back\">", "(3 occurrences)"));
  ENSURE(strstr(w.msg[0], ":30:") != NULL && strstr(w.msg[8], ":65:") != NULL);

  /* it compiles, and the option block reached the spec */
  khzModel *m = compile(s);
  if (m) {
    ENSURE(m->nq == 28 && m->nv == 27 && m->timestep == 0.005 && m->integrator == KHZ_INT_EULER);
    double total = 0;
    for (int i = 0; i < m->nbody; i++) total += m->body_mass[i];
    ENSURE_NEAR(total, 40.84402122162134, 1e-12);
  }
  khz_deleteModel(&m);
  khz_spec_destroy(&s);

  /* khz_loadModel takes .xml as MJCF */
  khzScene scene;
  m = khz_loadModel(HUMANOID, &scene, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  if (m) {
    ENSURE(m->nv == 27 && scene.rate_hz == 200 && scene.integrator == KHZ_INT_EULER);
    ENSURE(strcmp(scene.name, "humanoid") == 0);
    khz_deleteScene(&scene);
  }
  khz_deleteModel(&m);
}

/* ------------------------------------------------------------ fixtures -- */

static void test_features(void) {
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzMjcfOptions opt;
  khzMjcfInfo info;
  options(&opt, &w);
  opt.info = &info;
  char err[1024] = "";
  int rc = khz_loadMJCF(s, DATA "mjcf_features.xml", &opt, err, sizeof err);
  ENSURE_MSG(rc == 1, "%s", err);
  if (rc != 1) {
    khz_spec_destroy(&s);
    return;
  }

  /* the ellipsoid is the only warning: its mass counts, it collides as a convex hull */
  ENSURE_MSG(w.count == 1 && has_warning(&w, ":37: <geom name=\"base_ell\">: ellipsoid", NULL),
             "%d warnings: %s", w.count, w.msg[0]);
  ENSURE(khz_spec_ngeom(s) == 18);

  /* fullinertia is kept exactly; the body frame sits at rail_y's anchor (.1 0 0) */
  khzBodySpec *rail = khz_spec_body(s, find_body(s, "rail"));
  const double full[6] = {.02, .03, .025, .001, -.002, .0015};
  for (int k = 0; k < 6; k++) ENSURE(rail->inertia[k] == full[k]);
  ENSURE(rail->mass == 1.5 && rail->com[0] == -0.1 && rail->com[2] == 0.1);
  ENSURE(rail->joint_type == KHZ_JOINT_PRISMATIC && rail->armature == 0.5 && rail->damping == 1);
  ENSURE(strcmp(khz_spec_body(s, rail->parent)->name, "rail:rail_x") == 0);

  /* hinge ref turns the origin, q0 = ref (MuJoCo's qpos0) */
  khzBodySpec *shy = khz_spec_body(s, find_joint(s, "sh_y"));
  ENSURE_NEAR(shy->q0[0], 10 * PI / 180, 1e-15);
  ENSURE(shy->joint_type == KHZ_JOINT_REVOLUTE && shy->limited);
  khzBodySpec *shz = khz_spec_body(s, find_joint(s, "sh_z"));
  ENSURE(shz->damping == 2 && shz->friction == 0.1 && shz->armature == 0.02); /* class heavy */
  ENSURE_NEAR(shz->upper, PI / 4, 1e-15);
  ENSURE(shz->effort_limit == 0);
  ENSURE(khz_spec_body(s, find_joint(s, "sh_x"))->effort_limit == 90); /* 30*2 + 10*3 */
  khzBodySpec *el = khz_spec_body(s, find_joint(s, "el"));
  ENSURE(el->joint_type == KHZ_JOINT_CONTINUOUS && !el->limited && el->effort_limit == 10);
  ENSURE(khz_spec_body(s, find_joint(s, "j1"))->effort_limit == 0); /* ctrllimited="false" */
  khzBodySpec *slide = khz_spec_body(s, find_joint(s, "wr_slide"));
  ENSURE(slide->q0[0] == 0.05 && slide->limited && slide->lower == -0.1);
  ENSURE(khz_spec_body(s, find_joint(s, "wr"))->joint_type == KHZ_JOINT_SPHERICAL);

  /* an unnamed body and joint get MuJoCo's ids */
  int b6 = find_body(s, "body6");
  ENSURE(b6 > 0 && strcmp(khz_spec_body(s, b6)->joint_name, "joint7") == 0);
  if (b6 > 0) ENSURE(khz_spec_body(s, b6)->mass == 0.4);

  /* partial size over the class's, geom mass, group outside the inertia range, colours */
  int base = find_body(s, "base"), nbase = 0;
  for (int g = 0; g < khz_spec_ngeom(s); g++) {
    khzGeomSpec *gs = khz_spec_geom(s, g);
    if (gs->body != base) continue;
    nbase++;
    ENSURE(gs->rgba[0] == 0.2 && gs->rgba[2] == 0.6);
    if (gs->type == KHZ_GEOM_CYLINDER) ENSURE(gs->size[0] == 0.05 && gs->size[2] == 0.3);
  }
  ENSURE(nbase == 5); /* box, cylinder, light sphere, ghost sphere, ellipsoid */

  /* a plane on a welded body */
  int ped = find_body(s, "pedestal"), nplane = 0;
  for (int g = 0; g < khz_spec_ngeom(s); g++)
    nplane += khz_spec_geom(s, g)->type == KHZ_GEOM_PLANE && khz_spec_geom(s, g)->body == ped;
  ENSURE(nplane == 1);

  /* motors and options */
  ENSURE(info.nactuator == 5 && info.timestep == 0.001 && info.integrator == KHZ_INT_RK4);
  ENSURE(info.gravity[0] == 0.5 && info.gravity[2] == -9.7);
  if (info.nactuator == 5) ENSURE(info.actuator[1].gear == -10 && info.actuator[2].forcelimited);
  khz_mjcf_freeInfo(&info);
  khzModel *m = compile(s);
  if (m) ENSURE(m->nv == 19 && m->timestep == 0.001 && m->integrator == KHZ_INT_RK4);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);

  /* radians, fixed-axis euler, autolimits, settotalmass */
  s = khz_spec_new();
  w.count = 0;
  options(&opt, &w);
  rc = khz_loadMJCF(s, DATA "mjcf_radian.xml", &opt, err, sizeof err);
  ENSURE_MSG(rc == 1, "%s", err);
  ENSURE(w.count == 1 && has_warning(&w, "<joint name=\"hip\">: the cone limit", NULL));
  double total = 0;
  for (int i = 1; i < khz_spec_nbody(s); i++) total += khz_spec_body(s, i)->mass;
  ENSURE_NEAR(total, 12, 1e-12);
  khzBodySpec *knee = khz_spec_body(s, find_joint(s, "knee"));
  ENSURE(knee->limited && knee->lower == -2 && knee->q0[0] == -0.3 && knee->effort_limit == 100);
  ENSURE(khz_spec_body(s, find_joint(s, "hip_slide"))->effort_limit == 20); /* min(10*2, 10*5) */
  ENSURE(khz_spec_body(s, find_joint(s, "knee_twist"))->joint_type == KHZ_JOINT_CONTINUOUS);
  khz_spec_destroy(&s);
}

/* ------------------------------------------------------------- options -- */

static const char *two_arms =
    "<mujoco>\n"
    "  <worldbody>\n"
    "    <geom type='plane' size='1 1 1'/>\n"
    "    <body name='b' pos='1 0 0'>\n"
    "      <freejoint name='f'/>\n"
    "      <geom type='sphere' size='.1'/>\n"
    "    </body>\n"
    "    <body name='c' pos='0 1 0' euler='0 0 90'>\n"
    "      <joint name='h' axis='0 1 0'/>\n"
    "      <geom type='box' size='.1 .2 .3'/>\n"
    "    </body>\n"
    "  </worldbody>\n"
    "</mujoco>\n";

static void test_options(void) {
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzMjcfOptions opt;
  options(&opt, &w);
  char err[1024] = "";

  /* twice without a prefix: refused, spec unchanged; then with one */
  ENSURE(khz_loadMJCFString(s, two_arms, "a.xml", &opt, err, sizeof err) == 1);
  ENSURE(khz_loadMJCFString(s, two_arms, "a.xml", &opt, err, sizeof err) == -1);
  ENSURE_MSG(strstr(err,
                    "a.xml:5: <freejoint name=\"f\">: a joint called \"f\" is already in "
                    "the model (use a name prefix)"),
             "%s", err);
  ENSURE(khz_spec_nbody(s) == 3 && khz_spec_ngeom(s) == 3);
  opt.name_prefix = "r2_";
  opt.world_geoms = 0;
  opt.base_pos[0] = 10;
  opt.base_quat[0] = cos(PI / 4), opt.base_quat[3] = sin(PI / 4); /* 90 degrees about z */
  ENSURE(khz_loadMJCFString(s, two_arms, "a.xml", &opt, err, sizeof err) == 3);
  ENSURE(khz_spec_nbody(s) == 5 && khz_spec_ngeom(s) == 5); /* no second floor */
  khzBodySpec *b = khz_spec_body(s, find_body(s, "r2_b"));
  ENSURE(strcmp(b->joint_name, "r2_f") == 0);
  ENSURE_NEAR(b->q0[0], 10, 1e-15);
  ENSURE_NEAR(b->q0[1], 1, 1e-15); /* (1 0 0) turned about z */
  khzBodySpec *c = khz_spec_body(s, find_body(s, "r2_c"));
  ENSURE_NEAR(c->pos[0], 9, 1e-15);
  ENSURE_NEAR(c->quat[0], 0, 1e-15); /* 90 + 90 degrees about z */
  ENSURE(w.count == 0);
  khz_spec_destroy(&s);

  /* apply_options = 0 leaves the spec's settings alone */
  s = khz_spec_new();
  khz_spec_setTimestep(s, 0.01);
  khz_mjcf_defaultOptions(&opt);
  opt.apply_options = 0;
  ENSURE(khz_loadMJCFString(s,
                              "<mujoco><option timestep='0.004'/><worldbody><body><geom "
                              "size='.1'/><joint/></body></worldbody></mujoco>",
                              "o.xml", &opt, err, sizeof err) == 1);
  khzModel *m = compile(s);
  if (m) ENSURE(m->timestep == 0.01);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);

  /* generated names avoid the names the file gives, even later ones */
  s = khz_spec_new();
  ENSURE(khz_loadMJCFString(s,
                              "<mujoco><worldbody><body><joint/><joint/><geom size='.1'/>"
                              "</body><body name='body1'><joint name='joint0'/><geom "
                              "size='.1'/></body></worldbody></mujoco>",
                              "g.xml", NULL, err, sizeof err) == 1);
  ENSURE(find_body(s, "body1_1") == 2 && find_body(s, "body1") == 3);
  ENSURE(find_body(s, "body1:joint0_1") == 1);
  ENSURE(find_joint(s, "joint0_1") == 1 && find_joint(s, "joint1") == 2);
  ENSURE(find_joint(s, "joint0") == 3);
  khz_spec_destroy(&s);

  /* NULL options: the defaults (no warnings here) */
  s = khz_spec_new();
  ENSURE(khz_loadMJCFString(s, two_arms, "a.xml", NULL, err, sizeof err) == 1);
  khz_spec_destroy(&s);
}

/* ------------------------------------------------------------- warnings -- */

static void test_warnings(void) {
  const char *xml =
      "<mujoco model='w'>\n"
      "  <size njmax='10'/>\n"
      "  <option integrator='implicit' wind='1 0 0'><flag contact='disable'/></option>\n"
      "  <worldbody>\n"
      "    <body name='a'>\n"
      "      <joint name='j' stiffness='3' axis='1 0 0'/>\n"
      "      <geom size='.1' condim='1' friction='.5 .1 .01'><plugin/></geom>\n"
      "      <geom type='sdf'/>\n"
      "      <site name='s'/>\n"
      "      <site name='t'/>\n"
      "    </body>\n"
      "  </worldbody>\n"
      "  <actuator><position joint='j'/><motor tendon='x'/></actuator>\n"
      "  <sensor><jointpos joint='j'/><touch site='s'/></sensor>\n"
      "</mujoco>\n";
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzMjcfOptions opt;
  options(&opt, &w);
  char err[1024] = "";
  ENSURE_MSG(khz_loadMJCFString(s, xml, "w.xml", &opt, err, sizeof err) == 1, "%s", err);
  static const char *const expect[] = {
      "w.xml:2: <size>: element not supported by khz (ignored)",
      "w.xml:3: <option>: attribute wind: khz has no fluid forces; the model moves as in vacuum",
      "w.xml:3: <option>: integrator=\"implicit\" is not supported by khz: semi-implicit Euler is "
      "used, with joint damping and the actuators' velocity gains (kv, biasprm[2]) implicit as "
      "in MuJoCo's implicitfast (they join the joint's damping); MuJoCo's implicit also takes "
      "the Coriolis derivatives implicitly, khz keeps them explicit",
      "w.xml:7: <plugin>: element not supported by khz (ignored)",
      "w.xml:7: <geom>: attribute condim is not supported by khz (ignored)",
      "w.xml:7: <geom>: torsional and rolling friction are not supported by khz (ignored)",
      "w.xml:8: <geom>: sdf geoms are not supported by khz: left out, with their mass and inertia",
      "w.xml:13: <motor>: attribute tendon is not supported by khz (ignored)",
      "w.xml:13: <motor>: an actuator that does not drive a joint (tendon, site, body) is not "
      "supported by khz: the model has no such command",
      "w.xml:14: <touch>: touch reads the normal forces of all contacts of body \"a\" (MuJoCo: "
      "those inside site \"s\"'s volume)",
  };
  int n = (int)(sizeof expect / sizeof expect[0]);
  ENSURE_MSG(w.count == n, "%d warnings", w.count);
  for (int i = 0; i < n && i < w.count; i++)
    ENSURE_MSG(strcmp(w.msg[i], expect[i]) == 0, "warning %d: '%s', expected '%s'", i, w.msg[i],
               expect[i]);
  khz_spec_destroy(&s);
}

/* ------------------------------------------------------------- sensors -- */

/* site sensors (tests/loader/data/mjcf_sensors.xml): gyro, accelerometer,
 * touch and jointpos / jointvel become HIL sensors on the site's body at the
 * site, named as in the file with the prefix, noise as white noise; frame
 * sensors of sites read the site's pose; force and torque on a jointed
 * body's site become a joint force-torque sensor (with a warning: 6 values);
 * force on a free body and a world site's gyro warn and are left out; a
 * velocimeter is read from the state */
static void test_sensors(void) {
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzMjcfOptions opt;
  khzMjcfInfo info;
  options(&opt, &w);
  opt.name_prefix = "r/";
  opt.info = &info;
  char err[1024] = "";
  ENSURE_MSG(khz_loadMJCF(s, DATA "mjcf_sensors.xml", &opt, err, sizeof err) >= 0, "%s", err);
  int box = find_body(s, "r/box"), j2 = find_joint(s, "r/j2"), j1 = find_joint(s, "r/j1");
  static const struct {
    const char *name;
    int type;
    double pos[3], white;
  } want[] = {{"r/acc", KHZ_SENSOR_ACCEL, {0.02, 0, 0.03}, 0.01},
              {"r/sensor1", KHZ_SENSOR_GYRO, {0.02, 0, 0.03}, 0},
              {"r/g2", KHZ_SENSOR_GYRO, {0, 0.01, 0}, 0},
              {"r/t", KHZ_SENSOR_TOUCH, {0, 0, -0.1}, 0},
              {"r/ftip", KHZ_SENSOR_JOINT_FT, {0.08, 0, 0}, 0},
              {"r/jp", KHZ_SENSOR_ENCODER, {0, 0, 0}, 0.001},
              {"r/jv", KHZ_SENSOR_ENCODER, {0, 0, 0}, 0}};
  int n = (int)(sizeof want / sizeof want[0]);
  ENSURE_MSG(info.nhil == n, "%d HIL sensors", info.nhil);
  for (int i = 0; i < n && i < info.nhil; i++) {
    const khzSensorSpec *h = &info.hil[i];
    int object = want[i].type == KHZ_SENSOR_JOINT_FT ? j2
                 : want[i].type != KHZ_SENSOR_ENCODER ? box
                 : i == 5                             ? j2
                                                      : j1;
    ENSURE_MSG(!strcmp(h->name, want[i].name) && h->type == want[i].type && h->object == object &&
                   h->divisor == 1 && h->noise.white == want[i].white,
               "HIL sensor %d: %s type %d object %d white %g", i, h->name, h->type, h->object,
               h->noise.white);
    for (int k = 0; k < 3; k++) ENSURE_NEAR(h->pos[k], want[i].pos[k], 1e-15);
  }
  ENSURE(has_warning(&w, "<force name=\"f\">", "reads what no joint transmits"));
  ENSURE(has_warning(&w, "<torque name=\"ftip\">", "gives 6 values, force then torque"));
  ENSURE(!has_warning(&w, "<velocimeter>", NULL)); /* read from the state (vs MuJoCo: test_mjcf_oracle) */
  int nvel = 0;
  for (int i = 0; i < info.nsensor; i++)
    nvel += info.sensor[i].type == KHZ_MJCF_VELOCIMETER && !strcmp(info.sensor[i].object, "r/box") &&
            info.sensor[i].dim == 3;
  ENSURE(nvel == 1);
  ENSURE(has_warning(&w, "<gyro name=\"wg\">", "reads nothing that moves"));
  ENSURE(has_warning(&w, "<gyro name=\"g2\">", "site \"tilted\" is turned from body \"r/box\""));
  ENSURE(has_warning(&w, "<touch name=\"t\">", "all contacts of body \"r/box\""));
  ENSURE(!has_warning(&w, "<site", NULL)); /* sites are read */

  /* the site frame sensors: the tip through the arm's two joints (khz's frame
   * at the last joint's anchor), the tilted site's orientation */
  khzModel *m = compile(s);
  int tp = -1, tq = -1;
  for (int i = 0; i < info.nsensor; i++) {
    if (!strcmp(info.sensor[i].name, "tp")) tp = i;
    if (!strcmp(info.sensor[i].name, "tq")) tq = i;
  }
  ENSURE(tp >= 0 && tq >= 0);
  if (m && tp >= 0 && tq >= 0) {
    khzData *d = khz_makeData(m, 0);
    double out[4];
    khz_kinematics(m, d);
    ENSURE(khz_mjcf_sensorRead(m, d, &info.sensor[tp], out) == 3);
    ENSURE_NEAR(out[0], 0.2, 1e-15);
    ENSURE_NEAR(out[1], 0, 1e-15);
    ENSURE_NEAR(out[2], 0.5, 1e-15);
    ENSURE(khz_mjcf_sensorRead(m, d, &info.sensor[tq], out) == 4);
    ENSURE_NEAR(out[0], sqrt(0.5), 1e-15);
    ENSURE_NEAR(out[3], sqrt(0.5), 1e-15);
    ENSURE_NEAR(out[1], 0, 1e-15);
    ENSURE_NEAR(out[2], 0, 1e-15);
    /* j1 at +90 degrees about y, through its anchor (0.1, 0, 0.51): the tip
     * (0.1, 0, -0.01) from it turns to (-0.01, 0, -0.1) */
    d->q[m->jnt_qadr[j1]] = PI / 2;
    khz_kinematics(m, d);
    khz_mjcf_sensorRead(m, d, &info.sensor[tp], out);
    ENSURE_NEAR(out[0], 0.09, 1e-15);
    ENSURE_NEAR(out[1], 0, 1e-15);
    ENSURE_NEAR(out[2], 0.41, 1e-15);

    /* the HIL sensors run: spinning at 2 rad/s about the body's z in free
     * fall, the gyros read (0, 0, 2) in the body's axes, the accelerometer
     * the centripetal -w^2 r = -0.08 m/s^2 along x (its noise: 0.01) */
    d->q[m->jnt_qadr[j1]] = 0;
    d->qd[m->jnt_dofadr[box] + 5] = 2;
    char herr[256] = "";
    khzHil *hil = khz_hilCreate(m, info.hil, info.nhil, NULL, 0, 7, m->timestep, herr, sizeof herr);
    ENSURE_MSG(hil != NULL, "%s", herr);
    if (hil) {
      khz_kinematics(m, d);
      khz_hilReset(hil, m, d);
      for (int t = 1; t <= 20; t++) {
        khz_step(m, d);
        khz_hilSample(hil, m, d, (uint64_t)t);
      }
      const double *v = khz_hilValues(hil);
      for (int i = 1; i <= 2; i++) {
        const double *g = v + khz_hilValueAdr(hil, i);
        ENSURE_NEAR(g[0], 0, 0.01);
        ENSURE_NEAR(g[1], 0, 0.01);
        ENSURE_NEAR(g[2], 2, 0.01);
      }
      const double *a = v + khz_hilValueAdr(hil, 0);
      ENSURE_NEAR(a[0], -0.08, 0.05);
      ENSURE_NEAR(a[1], 0, 0.05);
      ENSURE_NEAR(a[2], 0, 0.05);
      ENSURE(khz_hilValueDim(hil, 4) == 6); /* a joint force-torque sensor */
      for (int k = 0; k < 6; k++) ENSURE(isfinite(v[khz_hilValueAdr(hil, 4) + k]));
      ENSURE(khz_hilValueDim(hil, 5) == 2); /* an encoder: position, velocity */
      khz_hilFree(&hil);
    }
    khz_deleteData(&d);
  }
  khz_deleteModel(&m);
  khz_mjcf_freeInfo(&info);
  khz_spec_destroy(&s);
}

/* ----------------------------------------------------------- bad input -- */

static void test_bad_input(void) {
  static const struct {
    const char *xml, *expect;
  } cases[] = {
      {"<mujoco><worldbody></mujoco>", "bad.xml:1: malformed XML"},
      {"<mujoco><worldbody><body name='a'><joint name='j'/></body></worldbody>\n"
       "<sensor><jointvel joint='k'/></sensor></mujoco>",
       "bad.xml:2: <jointvel>: unknown joint \"k\""},
      {"<mujoco><worldbody><body name='a'><joint name='j'/></body></worldbody>\n"
       "<equality><connect body1='a' body2='b' anchor='0 0 0'/></equality></mujoco>",
       "bad.xml:2: <connect>: unknown body \"b\": no <body name=\"b\"> in the model"},
      {"<mujoco><worldbody><body name='a'><joint name='j'/></body></worldbody>\n"
       "<equality><connect body1='a'/></equality></mujoco>",
       "bad.xml:2: <connect>: <connect> needs anchor (a point in body1's frame)"},
      {"<robot name='r'/>", "bad.xml:1: <robot name=\"r\">: the root element must be <mujoco>"},
      {"<mujoco>\n<worldbody><body><geom size='abc'/></body></worldbody></mujoco>",
       "bad.xml:2: <geom>: attribute size=\"abc\" is not 1 to 3 finite numbers"},
      {"<mujoco><worldbody><body pos='1 2'><geom size='.1'/></body></worldbody></mujoco>",
       "bad.xml:1: <body>: attribute pos=\"1 2\" is not 3 finite numbers"},
      {"<mujoco><worldbody><body pos='nan 0 0'/></worldbody></mujoco>",
       "<body>: attribute pos=\"nan 0 0\" is not 3 finite numbers"},
      {"<mujoco><worldbody><body><geom type='blob'/></body></worldbody></mujoco>",
       "<geom>: attribute type=\"blob\" is not one of plane, hfield, sphere"},
      {"<mujoco><worldbody><body><geom class='nope' size='.1'/></body></worldbody></mujoco>",
       "<geom>: unknown default class \"nope\": define it with <default class=\"nope\">"},
      {"<mujoco><worldbody><body name='x' childclass='nope'/></worldbody></mujoco>",
       "<body name=\"x\">: unknown childclass \"nope\": define it with <default class=\"nope\">"},
      {"<mujoco><default><default class='a'/><default class='a'/></default></mujoco>",
       "<default class=\"a\">: repeated default class name \"a\" (first at line 1)"},
      {"<mujoco><default><default/></default></mujoco>",
       "<default>: a nested <default> needs a class: add class="},
      {"<mujoco>\n<default>\n<joint range='-1 1'/>\n</default>\n<worldbody><body><joint "
       "name='j'/><geom size='.1'/></body></worldbody></mujoco>",
       "bad.xml:5: <joint name=\"j\">: range without limited"},
      {"<mujoco><worldbody><body><joint name='j' limited='true'/><geom "
       "size='.1'/></body></worldbody></mujoco>",
       "<joint name=\"j\">: range[0] = 0 must be below range[1] = 0"},
      {"<mujoco><worldbody><body><joint type='ball' limited='true' range='10 20'/><geom "
       "size='.1'/></body></worldbody></mujoco>",
       "range[0] = 10 of a limited ball joint must be 0"},
      {"<mujoco><worldbody><body><body><freejoint/><geom "
       "size='.1'/></body></body></worldbody></mujoco>",
       "<freejoint>: a free joint is only allowed in a body directly in <worldbody>"},
      {"<mujoco><worldbody><body><freejoint/><joint/><geom size='.1'/></body></worldbody></mujoco>",
       "<freejoint>: a free joint must be the body's only joint"},
      {"<mujoco><worldbody><body><joint type='ball'/><joint/><geom "
       "size='.1'/></body></worldbody></mujoco>",
       "<joint>: a rotation after a ball joint in the same body"},
      {"<mujoco><worldbody><body name='b'><joint/><joint/><joint/><joint/><joint "
       "type='slide'/><joint type='slide'/><joint type='slide'/><geom "
       "size='.1'/></body></worldbody></mujoco>",
       "<body name=\"b\">: more than 6 degrees of freedom in one body: put the extra joints in a nested child body"},
      {"<mujoco><worldbody><body><joint name='j'/><geom "
       "size='.1'/></body></worldbody><actuator><motor "
       "joint='k'/></actuator></mujoco>",
       "<motor>: unknown joint \"k\""},
      {"<mujoco><worldbody><body><joint name='j'/><geom "
       "size='.1'/></body></worldbody><actuator><motor "
       "name='m' joint='j' ctrlrange='-1 1'/></actuator></mujoco>",
       "<motor name=\"m\">: ctrlrange without ctrllimited"},
      {"<mujoco><worldbody><body><geom type='sphere' size='.1' fromto='0 0 0 0 0 "
       "1'/></body></worldbody></mujoco>",
       "<geom>: fromto requires a capsule, cylinder, box or ellipsoid: give this shape pos and size instead"},
      {"<mujoco><worldbody><body><geom type='capsule' size='.1' fromto='0 0 1 0 0 "
       "1'/></body></worldbody></mujoco>",
       "<geom>: fromto points coincide"},
      {"<mujoco><worldbody><body><geom type='box' size='.1 .2'/></body></worldbody></mujoco>",
       "<geom>: size[2] = 0 must be positive"},
      {"<mujoco><worldbody><body><joint/><geom type='plane' size='1 1 "
       "1'/></body></worldbody></mujoco>",
       "<geom>: a plane is only allowed in a body that does not move: put it in <worldbody>"},
      {"<mujoco><worldbody><body name='a'/><body name='a'/></worldbody></mujoco>",
       "<body name=\"a\">: repeated body name \"a\""},
      {"<mujoco><worldbody><body><joint name='j'/><geom size='.1'/></body><body><joint "
       "name='j'/><geom size='.1'/></body></worldbody></mujoco>",
       "<joint name=\"j\">: repeated joint name \"j\""},
      {"<mujoco><worldbody><body quat='1 0 0 0' euler='0 0 0'/></worldbody></mujoco>",
       "<body>: more than one orientation"},
      {"<mujoco><worldbody><body quat='0 0 0 0'/></worldbody></mujoco>", "<body>: quat is zero"},
      {"<mujoco><worldbody><body><joint axis='0 0 0'/><geom "
       "size='.1'/></body></worldbody></mujoco>",
       "<joint>: axis is zero"},
      {"<mujoco><worldbody><body><geom size='.1' density='-1'/></body></worldbody></mujoco>",
       "<geom>: density=-1 is negative: give a density in kg/m^3 >= 0"},
      {"<mujoco><worldbody><body><joint damping='-1'/><geom "
       "size='.1'/></body></worldbody></mujoco>",
       "<joint>: damping=-1 is negative: it must be >= 0 (0: none)"},
      /* issue 19 item 6: number-format and range refusals say what to write */
      {"<mujoco><worldbody><body pos='1,2,3'/></worldbody></mujoco>",
       "<body>: attribute pos=\"1,2,3\" is not 3 finite numbers: write 3 numbers (MJCF separates "
       "numbers with spaces, not commas)"},
      {"<mujoco><worldbody><body><joint armature='-0.5'/><geom "
       "size='.1'/></body></worldbody></mujoco>",
       "<joint>: armature=-0.5 is negative: it must be >= 0"},
      {"<mujoco><worldbody><body><joint range='1 -1' limited='true'/><geom "
       "size='.1'/></body></worldbody></mujoco>",
       "range[0] = 1 must be below range[1] = -1: give range=\"lower upper\" (swap them; <compiler "
       "angle=\"degree\">, MuJoCo's default, reads degrees)"},
      {"<mujoco><worldbody><body><geom type='box' size='.1 0 .1'/></body></worldbody></mujoco>",
       "<geom>: size[1] = 0 must be positive: give the geom's 3 size numbers"},
      {"<mujoco><worldbody><body><geom size='.1' friction='-1'/></body></worldbody></mujoco>",
       "<geom>: friction[0] = -1 is negative: the sliding friction coefficient must be >= 0"},
      {"<mujoco><worldbody><body><joint name='j'/><geom size='.1'/></body></worldbody><actuator>"
       "<position joint='j' kp='-3'/></actuator></mujoco>",
       "<position>: kp=-3 is negative: a servo gain must be >= 0"},
      {"<mujoco><worldbody><body><joint/><geom size='1'/></body></worldbody><keyframe><key "
       "ctrl='1'/></keyframe></mujoco>",
       "<key>: ctrl has 1 numbers; the model needs 0: give one per actuator of the model (or leave "
       "ctrl out for its default)"},
      {"<mujoco><worldbody><body><inertial pos='0 0 0' diaginertia='1 1 "
       "1'/></body></worldbody></mujoco>",
       "<inertial>: <inertial> needs pos and mass"},
      {"<mujoco><worldbody><body><inertial pos='0 0 0' mass='1' euler='0 0 1' fullinertia='1 1 1 0 "
       "0 "
       "0'/></body></worldbody></mujoco>",
       "<inertial>: fullinertia takes no orientation"},
      {"<mujoco><worldbody><body><inertial pos='0 0 0' mass='1' diaginertia='1 1 1'/><inertial "
       "pos='0 0 0' mass='1' diaginertia='1 1 1'/></body></worldbody></mujoco>",
       "<inertial>: a body has at most one <inertial>"},
      {"<mujoco><compiler coordinate='global'/></mujoco>",
       "<compiler>: coordinate=\"global\" is not supported (only local): convert the model to local coordinates"},
      {"<mujoco>\n<include file='x.xml'/></mujoco>",
       "bad.xml:2: <include>: included file \"x.xml\" not found (looked for x.xml"},
      {"<mujoco><worldbody><body><composite type='grid' count='2 2 "
       "1'/></body></worldbody></mujoco>",
       "<composite>: <composite> is not supported by khz (it would change the body tree)"},
      {"<mujoco><worldbody><joint/></worldbody></mujoco>",
       "<joint>: the world body cannot have joints: put the joint and what it moves in a <body>"},
      {"<mujoco><compiler eulerseq='xyw'/></mujoco>",
       "<compiler>: eulerseq=\"xyw\" must be three of x, y, z, X, Y, Z"},
      {"<mujoco><compiler angle='grad'/></mujoco>",
       "<compiler>: attribute angle=\"grad\" is not one of radian, degree: use one of these"},
      {"<mujoco><option timestep='-1'/></mujoco>", "<option>: timestep must be positive"},
      {"<mujoco><option timestep='0.5'/></mujoco>", "<option>: timestep 0.5 s is outside 0.0001..0.01 s"},
      {"<mujoco><option><flag gravity='off'/></option></mujoco>",
       "bad.xml:1: <flag>: attribute gravity=\"off\" is not one of disable, enable"},
      {"<mujoco><worldbody><body><geom type='mesh' mesh='nope'/></body></worldbody></mujoco>",
       "bad.xml:1: <geom>: unknown mesh \"nope\": declare it in <asset> as <mesh name=\"nope\""},
      {"<mujoco><asset><mesh file='missing.stl'/></asset><worldbody><body><geom type='mesh' "
       "mesh='missing'/></body></worldbody></mujoco>",
       "bad.xml:1: <mesh>: mesh file \"missing.stl\" not found (looked for missing.stl)"},
      {"<mujoco><asset><mesh file='a.stl'/><mesh file='b/a.obj'/></asset></mujoco>",
       "bad.xml:1: <mesh>: repeated mesh name \"a\""},
      {"<mujoco><worldbody><body name='a'/></worldbody><contact><exclude body1='a' "
       "body2='b'/></contact></mujoco>",
       "bad.xml:1: <exclude>: unknown body \"b\""},
      {"<mujoco><worldbody><body><joint/><geom size='1'/></body></worldbody><keyframe><key "
       "qpos='1 2'/></keyframe></mujoco>",
       "bad.xml:1: <key>: qpos has 2 numbers; the model needs 1"},
      {"<mujoco><worldbody><body><freejoint/><geom size='1'/></body></worldbody><keyframe><key "
       "qpos='0 0 nan 1 0 0 0'/></keyframe></mujoco>",
       "bad.xml:1: <key>: qpos=\"0 0 nan 1 0 0 0\" is not a list of finite numbers"},
      {"<mujoco><worldbody><body><freejoint/><geom size='1'/></body></worldbody><keyframe><key "
       "qpos='0 0 0 0 0 0 0'/></keyframe></mujoco>",
       "bad.xml:1: <key>: qpos holds a zero quaternion"},
      {"<mujoco><include/></mujoco>", "bad.xml:1: <include>: <include> needs a file"},
      {"<mujoco><worldbody><body><joint stiffness='-1'/><geom size='1'/></body></worldbody>"
       "</mujoco>",
       "bad.xml:1: <joint>: stiffness=-1 is negative: a joint spring's stiffness must be >= 0"},
      {"<mujoco><worldbody><body "
       "name='a_name_that_is_much_too_long_to_fit_in_sixty_three_characters_xx'/>"
       "</worldbody></mujoco>",
       "is longer than 63 characters"},
      {"<mujoco><worldbody><body><geom size='.1' contype='-1'/></body></worldbody></mujoco>",
       "<geom>: attribute contype=\"-1\" is not a non-negative integer"},
      {"<mujoco><default><geom "
       "size='x'/></default><worldbody><body><geom/></body></worldbody></mujoco>",
       "bad.xml:1: <geom> in <default class=\"main\">: attribute size=\"x\" is not 1 to 3 finite "
       "numbers"},
  };

  /* a spec that already holds a robot: nothing may change */
  khzSpec *s = khz_spec_new();
  char err[1024] = "";
  ENSURE(khz_loadMJCFString(s, two_arms, "a.xml", NULL, err, sizeof err) == 1);
  int nb = khz_spec_nbody(s), ng = khz_spec_ngeom(s);
  khzMjcfOptions opt;
  warnings w = {0};
  options(&opt, &w);
  opt.name_prefix = "p_";
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    err[0] = 0;
    int rc = khz_loadMJCFString(s, cases[i].xml, "bad.xml", &opt, err, sizeof err);
    ENSURE_MSG(rc == -1, "case %zu loaded", i);
    ENSURE_MSG(strstr(err, cases[i].expect) != NULL, "case %zu: '%s', expected '%s'", i, err,
               cases[i].expect);
    ENSURE_MSG(strncmp(err, "bad.xml:", 8) == 0, "case %zu: '%s'", i, err);
    ENSURE(khz_spec_nbody(s) == nb && khz_spec_ngeom(s) == ng);
  }
  ENSURE_MSG(w.count == 0, "warnings of failed loads were delivered: %s", w.msg[0]);

  /* files, and a small error buffer */
  ENSURE(khz_loadMJCF(s, DATA "no_such_model.xml", &opt, err, sizeof err) == -1);
  ENSURE(strstr(err, "no_such_model.xml: cannot open") != NULL);
  char tiny[16];
  ENSURE(khz_loadMJCFString(s, "<robot/>", "bad.xml", &opt, tiny, sizeof tiny) == -1);
  ENSURE(strlen(tiny) == sizeof tiny - 1);
  ENSURE(khz_loadMJCFString(NULL, "<mujoco/>", "x.xml", &opt, err, sizeof err) == -1);
  ENSURE(khz_loadMJCFString(s, NULL, "x.xml", &opt, err, sizeof err) == -1);
  ENSURE(khz_spec_nbody(s) == nb && khz_spec_ngeom(s) == ng);
  khzModel *m = compile(s);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);

  /* khz_loadModel: an MJCF error names the file and leaves scene_out alone */
  khzScene scene, before;
  memset(&scene, 0x5a, sizeof scene);
  before = scene;
  m = khz_loadModel(DATA "no_such_model.xml", &scene, err, sizeof err);
  ENSURE(m == NULL && strstr(err, "no_such_model.xml") != NULL);
  ENSURE(memcmp(&scene, &before, sizeof scene) == 0);
}


/* ------------------------------------------------------------- issue 19 -- */

/* <include>: dm_control's cartpole and its common/ files; errors in included
 * files name that file and line */
static void test_include(void) {
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzMjcfOptions opt;
  khzMjcfInfo info;
  options(&opt, &w);
  opt.info = &info;
  char err[1024] = "";
  int rc = khz_loadMJCF(s, DATA "dm_control/cartpole.xml", &opt, err, sizeof err);
  ENSURE_MSG(rc == 1, "%s", err);
  if (rc == 1) {
    ENSURE(strcmp(info.model, "cart-pole") == 0 && info.timestep == 0.01);
    ENSURE(find_joint(s, "slider") > 0 && find_joint(s, "hinge_1") > 0);
    /* the included visual and skybox files' elements warn with their own file name */
    ENSURE_MSG(has_warning(&w, "dm_control/./common/skybox.xml:", "texture"), "%s", w.msg[0]);
    khz_mjcf_freeInfo(&info);
    khzModel *m = compile(s);
    khz_deleteModel(&m);
  }
  khz_spec_destroy(&s);

  /* Menagerie's iiwa: scene.xml includes the robot; its <exclude> keeps the base's and
   * link1's overlapping spheres apart; its visual meshes (not in the repo) are not read */
  s = khz_spec_new();
  rc = khz_loadMJCF(s, DATA "menagerie/kuka_iiwa_14/scene.xml", &opt, err, sizeof err);
  ENSURE_MSG(rc == 1, "%s", err);
  if (rc == 1) {
    ENSURE(info.nkey == 1 && strcmp(info.key[0].name, "home") == 0 && info.nactuator == 7);
    if (info.nactuator == 7) ENSURE(info.actuator[1].type == KHZ_MJCF_GENERAL &&
                                    info.actuator[1].gain == 2000 &&
                                    info.actuator[1].bias[1] == -2000 &&
                                    info.actuator[1].bias[2] == -200);
    khz_mjcf_freeInfo(&info);
    khzModel *m = compile(s);
    if (m) {
      ENSURE(m->nexclude == 1 && strcmp(m->body_name[m->exclude_body[0]], "base") == 0 &&
             strcmp(m->body_name[m->exclude_body[1]], "link1") == 0);
      for (int g = 0; g < m->ngeom; g++) ENSURE(m->geom_meshid[g] < 0); /* no mesh read */
    }
    khz_deleteModel(&m);
  }
  khz_spec_destroy(&s);

  /* the working directory does not matter: paths are relative to the model file */
  static const struct {
    const char *file, *expect;
  } bad[] = {
      {"mjcf_include/bad_main.xml",
       "mjcf_include/bad_part.xml:4: <geom>: unknown default class \"nope\""},
      {"mjcf_include/loop.xml", "mjcf_include/loop.xml:2: <include>: included file "
                                "\"loop.xml\" includes itself"},
      /* a file including itself twice: refused at once, not expanded 2^16 times */
      {"mjcf_include/twice.xml", "mjcf_include/twice_part.xml:2: <include>: included file "
                                 "\"twice_part.xml\" includes itself"},
      /* 16 includes of a file with 16 includes: over the cap of 256 in all */
      {"mjcf_include/fan.xml", "mjcf_include/fan_a.xml:2: <include>: more than 256 "
                               "<include>s in all"},
      {"mjcf_include/not_mujoco.xml",
       "not_mujoco.xml:2: <include>: included file \"robot.urdf.xml\": the root "
       "element must be <mujoco>"},
      {"mjcf_include/malformed.xml", "mjcf_include/broken.xml:4: malformed XML: "},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    s = khz_spec_new();
    char path[256];
    snprintf(path, sizeof path, DATA "%s", bad[i].file);
    err[0] = 0;
    ENSURE_MSG(khz_loadMJCF(s, path, &opt, err, sizeof err) == -1, "%s loaded", path);
    ENSURE_MSG(strstr(err, bad[i].expect) != NULL, "'%s', expected '%s'", err, bad[i].expect);
    ENSURE(khz_spec_nbody(s) == 1 && khz_spec_ngeom(s) == 0 && khz_spec_nmesh(s) == 0);
    khz_spec_destroy(&s);
  }
  s = khz_spec_new();
  ENSURE(khz_loadMJCF(s, DATA "mjcf_include/malformed.xml", &opt, err, sizeof err) == -1);
  ENSURE_MSG(strstr(err, "(included from " DATA "mjcf_include/malformed.xml:2)") != NULL, "%s",
             err);
  khz_spec_destroy(&s);

  /* 20 included files (past the first growth of the table of them): the
   * first's and the last's warnings name their own file and line */
  s = khz_spec_new();
  w.count = 0;
  err[0] = 0;
  rc = khz_loadMJCF(s, DATA "mjcf_include/many.xml", &opt, err, sizeof err);
  ENSURE_MSG(rc == 1, "%s", err);
  if (rc == 1) {
    ENSURE(khz_spec_nbody(s) == 21 && find_body(s, "b01") > 0 && find_body(s, "b20") > 0);
    ENSURE_MSG(has_warning(&w, "mjcf_include/many_01.xml:4: <geom", "zzfirst"), "%s",
               w.msg[0]);
    ENSURE_MSG(has_warning(&w, "mjcf_include/many_20.xml:4: <geom", "zzlast"), "%s", w.msg[0]);
    khz_mjcf_freeInfo(&info);
  }
  khz_spec_destroy(&s);
}

/* meshes, an ellipsoid, stiffness, an exclusion, a position actuator and a key
 * (tests/loader/data/mjcf_meshes.xml; its masses are checked against MuJoCo by
 * tests/oracle/test_mjcf_oracle.c) */
static void test_meshes(void) {
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzMjcfOptions opt;
  khzMjcfInfo info;
  options(&opt, &w);
  opt.info = &info;
  char err[1024] = "";
  int rc = khz_loadMJCF(s, DATA "mjcf_meshes.xml", &opt, err, sizeof err);
  ENSURE_MSG(rc == 1, "%s", err);
  if (rc != 1) {
    khz_spec_destroy(&s);
    return;
  }
  /* the ellipsoid is the only warning (exactmeshinertia is set) */
  ENSURE_MSG(w.count == 1 && has_warning(&w, "mjcf_meshes.xml:25: <geom>: ellipsoids have no khz "
                                             "shape: each collides as the convex hull of 114",
                                         NULL),
             "%d warnings: %s", w.count, w.msg[0]);

  /* geoms: floor, two collision meshes, the ellipsoid's hull, a visual mesh not read */
  ENSURE(khz_spec_ngeom(s) == 5 && khz_spec_nmesh(s) == 3);
  int nvisual = 0, ncollide = 0;
  for (int g = 0; g < khz_spec_ngeom(s); g++) {
    khzGeomSpec *gs = khz_spec_geom(s, g);
    if (gs->type != KHZ_GEOM_MESH) continue;
    if (gs->visual) {
      nvisual++;
      ENSURE(gs->mesh == -1 && strstr(gs->meshfile, "meshes/link_3.0.stl") != NULL);
      ENSURE(gs->size[0] == 1.5); /* the mesh default's scale */
    } else {
      ncollide++;
      ENSURE(gs->mesh >= 0 && gs->convex == 1);
    }
  }
  ENSURE(nvisual == 1 && ncollide == 3);

  /* the spring, the position actuator's torque, the key */
  khzBodySpec *b = khz_spec_body(s, find_joint(s, "hb"));
  ENSURE(b->stiffness == 0.02 && b->springref == 0.3 && b->effort_limit == 3);
  ENSURE(info.nactuator == 1 && info.nkey == 1 && info.nq == 8 && info.nv == 7);
  if (info.nactuator == 1) {
    const khzMjcfActuator *a = &info.actuator[0];
    ENSURE(a->type == KHZ_MJCF_POSITION && a->gain == 20 && a->bias[1] == -20);
    ENSURE_NEAR(khz_mjcf_actuatorTorque(a, 0.2, 0.1, 0), 2, 1e-15); /* 20 (0.2 - 0.1) */
    ENSURE_NEAR(khz_mjcf_actuatorTorque(a, 0.5, 0.1, 0), 3, 1e-15); /* forcerange */
    ENSURE_NEAR(khz_mjcf_actuatorTorque(a, 5, 0, 0), 3, 1e-15);     /* ctrlrange, then force */
    ENSURE(khz_mjcf_actuatorTorque(a, NAN, 0, 0) == 0);
  }
  if (info.nkey == 1) {
    ENSURE(strcmp(info.key[0].name, "bent") == 0);
    ENSURE(info.key[0].qpos[2] == 0.5 && info.key[0].qpos[7] == 0.4 && info.key[0].qvel[0] == 0);
    ENSURE(info.key[0].ctrl[0] == 0);
  }
  khz_mjcf_freeInfo(&info);
  ENSURE(info.nkey == 0 && info.key == NULL);

  /* compiled: the exclusion, the spring in the passive forces */
  khzModel *m = compile(s);
  if (m) {
    ENSURE(m->nexclude == 1);
    if (m->nexclude == 1)
      ENSURE(strcmp(m->body_name[m->exclude_body[0]], "a") == 0 &&
             strcmp(m->body_name[m->exclude_body[1]], "b") == 0);
    khzData *d = khz_makeData(m, 0);
    int j = khz_name2joint(m, "hb"), dof = m->jnt_dofadr[j];
    double *tau = calloc((size_t)m->nv, sizeof *tau);
    d->q[m->jnt_qadr[j]] = 0.1;
    khz_passive(m, d, d->q, d->qd, tau);
    ENSURE_NEAR(tau[dof], -0.02 * (0.1 - 0.3), 1e-14);
    free(tau);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
  khz_spec_destroy(&s);

  /* a named key as the initial state; an unknown one is an error */
  s = khz_spec_new();
  opt.info = NULL;
  opt.keyframe = "bent";
  ENSURE_MSG(khz_loadMJCF(s, DATA "mjcf_meshes.xml", &opt, err, sizeof err) == 1, "%s", err);
  if (khz_spec_nbody(s) == 3) {
    ENSURE(khz_spec_body(s, find_joint(s, "hb"))->q0[0] == 0.4);
    ENSURE(khz_spec_body(s, find_body(s, "a"))->q0[2] == 0.5);
  }
  khz_spec_destroy(&s);
  s = khz_spec_new();
  opt.keyframe = "home";
  ENSURE(khz_loadMJCF(s, DATA "mjcf_meshes.xml", &opt, err, sizeof err) == -1);
  ENSURE_MSG(strstr(err, "no <key name=\"home\"> in the model (1 keys)") != NULL, "%s", err);
  ENSURE(khz_spec_nbody(s) == 1 && khz_spec_nmesh(s) == 0 && khz_spec_nexclude(s) == 0);
  khz_spec_destroy(&s);
}

/* <option> flags, timestep, fluid; a multi-joint body and its moving parent */
static void test_flags(void) {
  const char *xml =
      "<mujoco>\n"
      "  <option timestep='0.005' density='1.2'>\n"
      "    <flag gravity='disable' contact='disable' limit='disable' frictionloss='disable'"
      " energy='enable' equality='disable'/>\n"
      "  </option>\n"
      "  <worldbody>\n"
      "    <geom type='plane' size='1 1 1'/>\n"
      "    <body name='a'><freejoint/><geom size='.1'/>\n"
      "      <body name='b'>\n"
      "        <joint name='j1' axis='1 0 0' range='-1 1' limited='true' frictionloss='1'/>\n"
      "        <joint name='j2' axis='0 1 0'/><geom size='.1'/>\n"
      "      </body>\n"
      "    </body>\n"
      "  </worldbody>\n"
      "  <equality><connect body1='b' anchor='0 0 0'/></equality>\n"
      "</mujoco>\n";
  khzSpec *s = khz_spec_new();
  warnings w = {0};
  khzMjcfOptions opt;
  khzMjcfInfo info;
  options(&opt, &w);
  opt.info = &info;
  char err[1024] = "";
  ENSURE_MSG(khz_loadMJCFString(s, xml, "f.xml", &opt, err, sizeof err) == 1, "%s", err);
  ENSURE(khz_spec_nequality(s) == 0); /* equality='disable': the connect is left out */
  ENSURE(info.gravity[0] == 0 && info.gravity[1] == 0 && info.gravity[2] == 0);
  ENSURE(info.timestep == 0.005);
  khz_mjcf_freeInfo(&info);
  static const char *const expect[] = {
      "f.xml:2: <option>: attribute density: khz has no fluid forces; the model moves as in "
      "vacuum",
  };
  ENSURE_MSG(w.count == 1, "%d warnings", w.count);
  for (int i = 0; i < 1 && i < w.count; i++)
    ENSURE_MSG(strcmp(w.msg[i], expect[i]) == 0, "'%s', expected '%s'", w.msg[i], expect[i]);
  for (int g = 0; g < khz_spec_ngeom(s); g++)
    ENSURE(khz_spec_geom(s, g)->contype == 0 && khz_spec_geom(s, g)->conaffinity == 0);
  khzBodySpec *j1 = khz_spec_body(s, find_joint(s, "j1"));
  ENSURE(!j1->limited && j1->friction == 0);
  /* b's last link and a: excluded (the massless link b:j1 sits between them) */
  ENSURE(khz_spec_nexclude(s) == 1);
  khzModel *m = compile(s);
  if (m && m->nexclude == 1)
    ENSURE(strcmp(m->body_name[m->exclude_body[0]], "a") == 0 &&
           strcmp(m->body_name[m->exclude_body[1]], "b") == 0);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

/* issue 19: a joint that starts outside its range (Gymnasium's ant: ankles
 * 30 degrees out) draws a warning naming the joint, the value and the range;
 * khz's limit brings it back gently (rt/src/step.c: the push of a limit more
 * than 0.02 rad deep is capped, so the joint returns at about 0.3 rad/s, or
 * 3.1 rad/s at 1 ms, instead of with the limit spring's stored energy), at
 * the ant's 10 ms RK4 step and at 1 ms semi-implicit Euler */
static void test_outside_range(void) {
  for (int euler = 0; euler < 2; euler++) {
    char xml[1024];
    snprintf(xml, sizeof xml,
             "<mujoco>\n"
             "  <option timestep='%s' integrator='%s' gravity='0 0 0'/>\n"
             "  <worldbody>\n"
             "    <body name='leg'>\n"
             "      <joint name='ankle' axis='0 1 0' range='30 70' limited='true' armature='1' damping='1'/>\n"
             "      <geom type='capsule' fromto='0 0 0 .4 0 0' size='.08' density='5'/>\n"
             "    </body>\n"
             "  </worldbody>\n"
             "</mujoco>\n", euler ? "0.001" : "0.01", euler ? "Euler" : "RK4");
    khzSpec *s = khz_spec_new();
    warnings w = {0};
    khzMjcfOptions opt;
    options(&opt, &w);
    char err[1024] = "";
    ENSURE_MSG(khz_loadMJCFString(s, xml, "out.xml", &opt, err, sizeof err) == 1, "%s", err);
    ENSURE_MSG(has_warning(&w, "out.xml:5: <joint name=\"ankle\">: joint 'ankle' starts at 0 rad "
                               "(0 deg) (qpos0), outside its range 0.523599..1.22173 rad (30..70 deg)",
                           "0.5236 rad past the limit"), "%d warnings: %s", w.count, w.msg[0]);
    khzModel *m = compile(s);
    if (m) {
      khzData *d = khz_makeData(m, 0);
      double vmax = 0, t_in = -1, kmax = 0;
      for (int k = 0; k < (int)(3 / m->timestep); k++) {
        khz_step(m, d);
        vmax = fmax(vmax, fabs(d->qd[0]));
        double ke, pe;
        khz_energy(m, d, &ke, &pe);
        kmax = fmax(kmax, ke);
        if (t_in < 0 && d->q[0] >= m->jnt_range[2 * 1] - 0.02) t_in = d->time;
      }
      printf("joint 0.52 rad outside its range, %s: back within 0.02 rad at %.2f s, peak "
             "speed %.3f rad/s, peak kinetic energy %.3g J; q at 3 s %.4f (range from %.4f)\n",
             euler ? "Euler 1 ms" : "RK4 10 ms", t_in, vmax, kmax, d->q[0], m->jnt_range[2]);
      /* the plain limit spring (k = meff w^2) released its 1/2 k e^2, at
       * about w e; capped, the push returns it at about 0.3 rad/s, or
       * w 0.02 / 2 = 3.1 rad/s at 1 ms, where the cap keeps the spring's force
       * at 0.02 rad so that loads are held as before */
      ENSURE(t_in > 0 && t_in < 3);
      ENSURE(euler ? vmax < 3.5 : vmax < 0.35);
      ENSURE(d->q[0] > m->jnt_range[2] - 0.02 && d->q[0] < m->jnt_range[3]);
      khz_deleteData(&d);
    }
    khz_deleteModel(&m);
    khz_spec_destroy(&s);
  }
}

/* issue 19: closed loops under semi-implicit Euler stay closed (the position
 * projection after each step, rt/src/constraint.c; without it the fixture
 * drifted to 3.7e-5 m at 1 ms and 1.5e-4 m at 2 ms) */
static void test_loop_drift_euler(void) {
  static const double steps[2] = {0.001, 0.002};
  for (int i = 0; i < 2; i++) {
    khzSpec *s = khz_spec_new();
    warnings w = {0};
    khzMjcfOptions opt;
    options(&opt, &w);
    char err[1024] = "";
    ENSURE_MSG(khz_loadMJCF(s, DATA "mjcf_fourbar.xml", &opt, err, sizeof err) >= 0, "%s", err);
    khz_spec_setIntegrator(s, KHZ_INT_EULER);
    khz_spec_setTimestep(s, steps[i]);
    khzModel *m = compile(s);
    if (m) {
      khzData *d = khz_makeData(m, 0);
      double worst = 0, worst_rot = 0, q_first = d->q[0];
      int n = (int)(10 / steps[i]);
      for (int k = 0; k < n; k++) {
        khz_step(m, d);
        for (int e = 0; e < m->neq; e++) {
          double rot, r = khz_equalityResidual(m, d, e, &rot);
          worst = fmax(worst, r), worst_rot = fmax(worst_rot, rot);
        }
      }
      printf("four-bar fixture, Euler %g s, 10 s: largest residual %.3g m (weld %.3g rad), "
             "q[0] %g -> %g, %d rollbacks\n", steps[i], worst, worst_rot, q_first, d->q[0],
             d->warning[KHZ_WARN_BADSTATE]);
      ENSURE(worst < 1e-6 && worst_rot < 1e-6);
      ENSURE(d->warning[KHZ_WARN_BADSTATE] == 0 && isfinite(d->q[0]));
      khz_deleteData(&d);
    }
    khz_deleteModel(&m);
    khz_spec_destroy(&s);
  }
}

/* actuators as PD terms (khz_actuator_pd), their kv in the joint damping under
 * MuJoCo's implicit integrators, and the scene's actuator list */
static void test_actuator_pd(void) {
  static const char *const fmt =
      "<mujoco><compiler autolimits='true'/><option integrator='%s'/><worldbody><body name='b'>"
      "<joint name='j' axis='0 0 1' damping='0.5'/><geom size='.1' mass='1'/>"
      "<body name='c' pos='0 0 .3'><joint name='k' type='slide' axis='1 0 0'/>"
      "<geom size='.1' mass='1'/></body></body></worldbody><actuator>"
      "<position name='p' joint='j' kp='40' kv='3' gear='2' ctrlrange='-1 1'/>"
      "<velocity name='v' joint='k' kv='5'/>"
      "<position name='pf' joint='k' kp='7' kv='2' forcerange='-9 9'/>"
      "</actuator></mujoco>";
  const char *integ[] = {"Euler", "implicitfast"};
  for (int mode = 0; mode < 2; mode++) {
    char xml[1024], err[1024] = "";
    snprintf(xml, sizeof xml, fmt, integ[mode]);
    khzSpec *s = khz_spec_new();
    khzMjcfInfo info;
    khzMjcfOptions opt;
    warnings w = {0};
    options(&opt, &w);
    opt.info = &info;
    if (khz_loadMJCFString(s, xml, "a.xml", &opt, err, sizeof err) != 1) {
      ENSURE_MSG(0, "%s", err);
      khz_spec_destroy(&s);
      continue;
    }
    ENSURE(info.nactuator == 3);
    /* under implicitfast the position servo's kv (gear^2 kv = 12) and the
     * velocity actuator's (5) join the damping; the one with a forcerange stays explicit */
    ENSURE_NEAR(khz_spec_body(s, 1)->damping, mode ? 0.5 + 12 : 0.5, 1e-15);
    ENSURE_NEAR(khz_spec_body(s, 2)->damping, mode ? 5 : 0, 1e-15);
    ENSURE(info.actuator[0].kv_implicit == mode && info.actuator[1].kv_implicit == mode &&
           !info.actuator[2].kv_implicit);
    double ff, kp, kd;
    /* gear 2, kp 40: tau = 2 (40 ctrl - 40 (2 q) - 3 (2 qd)) = 80 ctrl - 160 q - 12 qd */
    ENSURE(khz_actuator_pd(&info.actuator[0], 0.25, &ff, &kp, &kd) == 0);
    ENSURE(ff == 20 && kp == 160 && kd == (mode ? 0 : 12));
    ENSURE(khz_actuator_pd(&info.actuator[0], 3, &ff, &kp, &kd) == 1 && ff == 80); /* clamped to 1 */
    ENSURE(khz_actuator_pd(&info.actuator[0], NAN, &ff, &kp, &kd) == -1 && ff == 0);
    ENSURE(khz_actuator_pd(&info.actuator[2], 0.5, &ff, &kp, &kd) == 0);
    ENSURE(ff == 3.5 && kp == 7 && kd == 2);
    /* the terms, with the damping, are MuJoCo's torque (khz_mjcf_actuatorTorque) */
    for (int a = 0; a < 2; a++) {
      double q = 0.3, qd = -0.7, ctrl = 0.4;
      khz_actuator_pd(&info.actuator[a], ctrl, &ff, &kp, &kd);
      double g = info.actuator[a].gear, folded = mode ? g * g * info.actuator[a].bias[2] * qd : 0;
      ENSURE_NEAR(ff - kp * q - kd * qd + folded,
                  khz_mjcf_actuatorTorque(&info.actuator[a], ctrl, q, qd), 1e-13);
    }
    khz_mjcf_freeInfo(&info);
    khz_spec_destroy(&s);
  }

  /* a scene keeps the actuators of an MJCF file served alone (khz_loadModel) */
  khzScene sc;
  char err[1024] = "";
  khzModel *m = khz_loadModel("tests/loader/data/menagerie/kuka_iiwa_14/iiwa14.xml", &sc, err,
                              sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  if (m) {
    ENSURE(sc.nactuator == 7 && !strcmp(sc.actuator[6].name, "actuator7") &&
           !strcmp(sc.actuator[6].joint, "joint7") && sc.actuator[6].kv_implicit);
    khz_deleteModel(&m);
    khz_deleteScene(&sc);
  }
}

int main(void) {
  const char *root = getenv("KHZ_SOURCE_ROOT");
  if (root && chdir(root) != 0) {
    perror(root);
    return 1;
  }
  test_humanoid();
  test_features();
  test_options();
  test_warnings();
  test_sensors();
  test_bad_input();
  test_include();
  test_meshes();
  test_flags();
  test_outside_range();
  test_loop_drift_euler();
  test_actuator_pd();
  return ensure_report();
}
