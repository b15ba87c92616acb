/* random_model.h — random articulated models for the rt tests: trees mixing
 * every joint type, offset and rotated joint origins, oblique axes and full
 * inertia tensors (random rotations of random principal moments). */
#ifndef KHZ_TESTS_RANDOM_MODEL_H
#define KHZ_TESTS_RANDOM_MODEL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "khz/khz.h"
#include "spatial.h"

static uint64_t rm_state = 88172645463325252ull;
static inline double rm_uniform(double lo, double hi) {
  rm_state ^= rm_state << 13, rm_state ^= rm_state >> 7, rm_state ^= rm_state << 17;
  return lo + (hi - lo) * ((double)(rm_state >> 11) / 9007199254740992.0);
}

static inline void rm_random_quat(double q[4]) {
  for (int k = 0; k < 4; k++) q[k] = rm_uniform(-1, 1);
  khzu_normalizeQuat(q);
}

/* full inertia: R diag(moments) R^T with moments obeying the triangle inequality */
static inline void rm_random_inertia(double mass, double out[6]) {
  double a = rm_uniform(0.2, 1), b = rm_uniform(0.2, 1), c = rm_uniform(fabs(a - b) + 0.05, a + b);
  double d[3] = {a * mass * 0.01, b * mass * 0.01, c * mass * 0.01}, q[4], R[9], I[9];
  rm_random_quat(q);
  khzu_quat2mat(R, q);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      I[3 * i + j] = R[3 * i] * d[0] * R[3 * j] + R[3 * i + 1] * d[1] * R[3 * j + 1] +
                     R[3 * i + 2] * d[2] * R[3 * j + 2];
  out[0] = I[0], out[1] = I[4], out[2] = I[8], out[3] = I[1], out[4] = I[2], out[5] = I[5];
}

/* A random tree of nbody-1 bodies. floating: body 1 is a floating base.
 * types cycle through revolute, prismatic, spherical, fixed, continuous. */
static inline khzModel *rm_random_model(int nmoving, int floating, int tree, int with_armature) {
  khzSpec *s = khz_spec_new();
  static const khzJointType cyc[] = {KHZ_JOINT_REVOLUTE, KHZ_JOINT_PRISMATIC, KHZ_JOINT_REVOLUTE,
                                     KHZ_JOINT_SPHERICAL, KHZ_JOINT_FIXED, KHZ_JOINT_CONTINUOUS};
  for (int i = 1; i <= nmoving; i++) {
    khzBodySpec b;
    khz_spec_defaultBody(&b);
    snprintf(b.name, sizeof b.name, "b%d", i);
    snprintf(b.joint_name, sizeof b.joint_name, "j%d", i);
    b.parent = (i == 1) ? 0 : (tree ? (int)rm_uniform(1, i) : i - 1);
    if (b.parent >= i) b.parent = i - 1;
    b.joint_type = (i == 1 && floating) ? KHZ_JOINT_FLOATING : cyc[(i - 1) % 6];
    for (int k = 0; k < 3; k++) b.pos[k] = rm_uniform(-0.3, 0.3), b.axis[k] = rm_uniform(-1, 1);
    rm_random_quat(b.quat);
    b.mass = rm_uniform(0.5, 3);
    for (int k = 0; k < 3; k++) b.com[k] = rm_uniform(-0.1, 0.1);
    rm_random_inertia(b.mass, b.inertia);
    if (with_armature) b.armature = rm_uniform(0, 0.1);
    khz_spec_addBody(s, &b);
  }
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  if (!m) fprintf(stderr, "rm_random_model: %s\n", err);
  khz_spec_destroy(&s);
  return m;
}

/* random state: joint values, unit quaternions, velocities */
static inline void rm_random_state(const khzModel *m, double *q, double *qd) {
  for (int i = 1; i < m->nbody; i++) {
    double *qi = q + m->jnt_qadr[i];
    switch (m->jnt_type[i]) {
      case KHZ_JOINT_FLOATING:
        for (int k = 0; k < 3; k++) qi[k] = rm_uniform(-1, 1);
        rm_random_quat(qi + 3);
        break;
      case KHZ_JOINT_SPHERICAL: rm_random_quat(qi); break;
      case KHZ_JOINT_FIXED: break;
      default: qi[0] = rm_uniform(-2, 2); break;
    }
  }
  for (int k = 0; k < m->nv; k++) qd[k] = rm_uniform(-2, 2);
}

#endif
