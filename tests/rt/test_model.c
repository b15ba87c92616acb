/* test_model.c — khz_compile rejects bad specs with a message naming the body or
 * joint and the problem, and builds good ones. */
#include <string.h>

#include "ensure.h"
#include "random_model.h"

static void base_body(khzBodySpec *b, const char *name, int parent) {
  khz_spec_defaultBody(b);
  snprintf(b->name, sizeof b->name, "%s", name);
  snprintf(b->joint_name, sizeof b->joint_name, "%s_joint", name);
  b->parent = parent;
  b->joint_type = KHZ_JOINT_REVOLUTE;
  b->mass = 1;
  b->inertia[0] = b->inertia[1] = b->inertia[2] = 0.01;
  b->com[0] = 0.1;
}

/* compiles a two-body spec after `edit` changed body 2; expects failure whose
 * message contains `expect` */
static void expect_error(void (*edit)(khzBodySpec *), const char *expect) {
  khzSpec *s = khz_spec_new();
  khzBodySpec b1, b2;
  base_body(&b1, "upper", 0);
  base_body(&b2, "lower", 1);
  edit(&b2);
  khz_spec_addBody(s, &b1);
  khz_spec_addBody(s, &b2);
  char err[512] = "";
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m == NULL, "expected an error containing '%s'", expect);
  ENSURE_MSG(strstr(err, expect) != NULL, "message '%s' lacks '%s'", err, expect);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

static void neg_mass(khzBodySpec *b) { b->mass = -1; }
static void not_pd(khzBodySpec *b) { b->inertia[1] = -0.01; }
static void triangle(khzBodySpec *b) { b->inertia[0] = 0.001, b->inertia[1] = 0.001, b->inertia[2] = 0.01; }
static void zero_axis(khzBodySpec *b) { b->axis[0] = b->axis[1] = b->axis[2] = 0; }
static void loop(khzBodySpec *b) { b->parent = 2; }
static void dup_name(khzBodySpec *b) { snprintf(b->name, sizeof b->name, "upper"); }
static void dup_joint(khzBodySpec *b) { snprintf(b->joint_name, sizeof b->joint_name, "upper_joint"); }
static void bad_limits(khzBodySpec *b) { b->limited = 1, b->lower = 1, b->upper = -1; }
static void nan_pos(khzBodySpec *b) { b->pos[1] = NAN; }
static void floating_child(khzBodySpec *b) { b->joint_type = KHZ_JOINT_FLOATING; }
static void massless_moving(khzBodySpec *b) {
  b->mass = 0;
  memset(b->inertia, 0, sizeof b->inertia);
  b->axis[0] = 1, b->axis[2] = 0;
  b->pos[0] = 0;
}
static void massless_inertia(khzBodySpec *b) { b->mass = 0; }

int main(void) {
  expect_error(neg_mass, "body 'lower': negative mass");
  expect_error(not_pd, "not positive definite");
  expect_error(triangle, "triangle inequality");
  expect_error(zero_axis, "joint 'lower_joint': axis is zero");
  expect_error(loop, "kinematic loop");
  expect_error(dup_name, "duplicate name");
  expect_error(dup_joint, "joint 'upper_joint': duplicate name");
  expect_error(bad_limits, "lower limit");
  expect_error(nan_pos, "NaN");
  expect_error(floating_child, "floating joint must connect a body to the world");
  expect_error(massless_inertia, "zero mass with a non-zero inertia");

  /* a massless leaf on a moving joint makes M singular: named in the message */
  {
    khzSpec *s = khz_spec_new();
    khzBodySpec b1, b2;
    base_body(&b1, "upper", 0);
    base_body(&b2, "lower", 1);
    massless_moving(&b2);
    khz_spec_addBody(s, &b1);
    khz_spec_addBody(s, &b2);
    char err[512] = "";
    khzModel *m = khz_compile(s, err, sizeof err);
    ENSURE(m == NULL);
    ENSURE_MSG(strstr(err, "lower_joint") && strstr(err, "singular"), "%s", err);
    khz_spec_destroy(&s);
  }

  /* a good model: addresses, names, q0 of a floating base folded into the world pose */
  {
    khzSpec *s = khz_spec_new();
    khzBodySpec b;
    base_body(&b, "base", 0);
    b.joint_type = KHZ_JOINT_FLOATING;
    b.pos[2] = 1.5;
    khz_spec_addBody(s, &b);
    base_body(&b, "arm", 1);
    khz_spec_addBody(s, &b);
    base_body(&b, "wrist", 2);
    b.joint_type = KHZ_JOINT_SPHERICAL;
    khz_spec_addBody(s, &b);
    char err[256];
    khzModel *m = khz_compile(s, err, sizeof err);
    ENSURE_MSG(m != NULL, "%s", err);
    if (m) {
      ENSURE(m->nq == 7 + 1 + 4 && m->nv == 6 + 1 + 3);
      ENSURE(m->jnt_qadr[2] == 7 && m->jnt_dofadr[3] == 7);
      ENSURE(khz_name2body(m, "wrist") == 3 && khz_name2joint(m, "arm_joint") == 2);
      ENSURE(khz_name2body(m, "nope") == -1);
      ENSURE_NEAR(m->q0[2], 1.5, 0);
      ENSURE_NEAR(m->q0[3], 1, 0);
      ENSURE_NEAR(m->q0[8], 1, 0); /* spherical q0 defaults to identity */
      ENSURE(strcmp(khz_jointTypeName(KHZ_JOINT_SPHERICAL), "spherical") == 0);
      for (int k = 0; k < m->nv; k++) ENSURE(m->dof_meff[k] > 0);
    }
    khz_deleteModel(&m);
    ENSURE(m == NULL);
    khz_spec_destroy(&s);
    ENSURE(s == NULL);
  }

  /* truncate undoes a partial load */
  {
    khzSpec *s = khz_spec_new();
    khzBodySpec b;
    base_body(&b, "a", 0);
    khz_spec_addBody(s, &b);
    base_body(&b, "b", 1);
    khz_spec_addBody(s, &b);
    khz_spec_truncate(s, 2, 0);
    ENSURE(khz_spec_nbody(s) == 2);
    khz_spec_destroy(&s);
  }
  return ensure_report();
}
