/* col_util.h — helpers of the collision tests: small models of free bodies
 * with one geom each, poses, random rotations, mesh builders and libccd
 * support functions (the oracle of the penetration-depth tests). */
#ifndef KHZ_TESTS_COL_UTIL_H
#define KHZ_TESTS_COL_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collision/collision.h"
#include "ensure.h"
#include "khz/khz.h"

/* ---------------------------------------------------------- random -- */

static uint64_t cu_rng __attribute__((unused)) = 0x9e3779b97f4a7c15ull;
static inline double cu_rand(void) { /* [0, 1) */
  cu_rng ^= cu_rng << 13, cu_rng ^= cu_rng >> 7, cu_rng ^= cu_rng << 17;
  return (double)(cu_rng >> 11) / 9007199254740992.0;
}
static inline double cu_uniform(double a, double b) { return a + (b - a) * cu_rand(); }
static inline void cu_randQuat(double q[4]) {
  /* uniform on SO(3) (Shoemake) */
  double u1 = cu_rand(), u2 = 2 * M_PI * cu_rand(), u3 = 2 * M_PI * cu_rand();
  q[0] = sqrt(1 - u1) * sin(u2), q[1] = sqrt(1 - u1) * cos(u2);
  q[2] = sqrt(u1) * sin(u3), q[3] = sqrt(u1) * cos(u3);
}
static inline void cu_randDir(double d[3]) {
  double z = cu_uniform(-1, 1), a = cu_uniform(0, 2 * M_PI), r = sqrt(1 - z * z);
  d[0] = r * cos(a), d[1] = r * sin(a), d[2] = z;
}
static inline void cu_axisQuat(double q[4], double ax, double ay, double az, double angle) {
  double n = sqrt(ax * ax + ay * ay + az * az);
  q[0] = cos(angle / 2);
  q[1] = sin(angle / 2) * ax / n, q[2] = sin(angle / 2) * ay / n, q[3] = sin(angle / 2) * az / n;
}
static inline double cu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* ------------------------------------------------------------ models -- */

/* a free body (floating joint) of mass 1 */
static inline int cu_body(khzSpec *s, const char *name) {
  khzBodySpec b;
  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "%s", name);
  snprintf(b.joint_name, sizeof b.joint_name, "%s_j", name);
  b.parent = 0;
  b.joint_type = KHZ_JOINT_FLOATING;
  b.mass = 1;
  b.inertia[0] = b.inertia[1] = b.inertia[2] = 0.01;
  return khz_spec_addBody(s, &b);
}

static inline int cu_geom(khzSpec *s, int body, khzGeomType type, double s0, double s1, double s2) {
  khzGeomSpec g;
  khz_spec_defaultGeom(&g);
  g.body = body;
  g.type = type;
  g.size[0] = s0, g.size[1] = s1, g.size[2] = s2;
  return khz_spec_addGeom(s, &g);
}

static inline int cu_meshGeom(khzSpec *s, int body, int mesh, int convex) {
  khzGeomSpec g;
  khz_spec_defaultGeom(&g);
  g.body = body;
  g.type = KHZ_GEOM_MESH;
  g.size[0] = g.size[1] = g.size[2] = 1;
  g.mesh = mesh;
  g.convex = convex;
  return khz_spec_addGeom(s, &g);
}

/* a box mesh of half extents h (12 triangles, counter-clockwise outside) */
static inline int cu_boxMesh(khzSpec *s, const char *name, double hx, double hy, double hz) {
  double v[24];
  for (int i = 0; i < 8; i++) {
    v[3 * i] = i & 1 ? hx : -hx;
    v[3 * i + 1] = i & 2 ? hy : -hy;
    v[3 * i + 2] = i & 4 ? hz : -hz;
  }
  static const int f[36] = {0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
                            2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5};
  return khz_spec_addMesh(s, name, v, 8, f, 12);
}

/* a UV sphere mesh of radius r (closed) */
static inline int cu_sphereMesh(khzSpec *s, const char *name, double r, int nlat, int nlon) {
  int nv = 2 + (nlat - 1) * nlon, nf = 2 * nlon * (nlat - 1);
  double *v = malloc((size_t)nv * 3 * sizeof(double));
  int *f = malloc((size_t)nf * 3 * sizeof(int)), k = 0, t = 0;
  v[k++] = 0, v[k++] = 0, v[k++] = r;
  for (int i = 1; i < nlat; i++)
    for (int j = 0; j < nlon; j++) {
      double th = M_PI * i / nlat, ph = 2 * M_PI * j / nlon;
      v[k++] = r * sin(th) * cos(ph), v[k++] = r * sin(th) * sin(ph), v[k++] = r * cos(th);
    }
  v[k++] = 0, v[k++] = 0, v[k++] = -r;
  int south = nv - 1;
  for (int j = 0; j < nlon; j++) f[t++] = 0, f[t++] = 1 + j, f[t++] = 1 + (j + 1) % nlon;
  for (int i = 1; i < nlat - 1; i++)
    for (int j = 0; j < nlon; j++) {
      int a = 1 + (i - 1) * nlon + j, b = 1 + (i - 1) * nlon + (j + 1) % nlon;
      int c = a + nlon, d = b + nlon;
      f[t++] = a, f[t++] = c, f[t++] = b;
      f[t++] = b, f[t++] = c, f[t++] = d;
    }
  for (int j = 0; j < nlon; j++) {
    int a = 1 + (nlat - 2) * nlon + j, b = 1 + (nlat - 2) * nlon + (j + 1) % nlon;
    f[t++] = a, f[t++] = south, f[t++] = b;
  }
  int id = khz_spec_addMesh(s, name, v, nv, f, t / 3);
  free(v);
  free(f);
  return id;
}

static inline khzModel *cu_compile(khzSpec *s) {
  char err[512];
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  return m;
}

/* pose of a free body (world frame) */
static inline void cu_pose(const khzModel *m, khzData *d, int body, const double pos[3],
                    const double quat[4]) {
  double *q = d->q + m->jnt_qadr[body];
  memcpy(q, pos, 3 * sizeof(double));
  double n = sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3]);
  for (int k = 0; k < 4; k++) q[3 + k] = quat[k] / n;
}

/* the narrow phase of geoms g0 < g1 at the current kinematics */
#define CU_CAP 512
typedef struct {
  khzColPoint pt[CU_CAP];
  double work[KHZ_COL_WORK(CU_CAP, KHZ_HULL_MAXVERT)];
  khzColOut out;
  double frame[12 * 64], aabb[6 * 64];
} cu_pair;

static inline int cu_collidePair(const khzModel *m, khzData *d, int g0, int g1, cu_pair *p) {
  khz_kinematics(m, d);
  khz_collisionFrames(m, d, p->frame, p->aabb);
  p->out = (khzColOut){p->pt, 0, CU_CAP, 0, p->work, KHZ_HULL_MAXVERT, {0, 0, 0}, {0, 0, 0}};
  return khz_narrowphase(m, g0, g1, p->frame, &p->out);
}

static inline double cu_maxDepth(const khzColOut *o) {
  double b = 0;
  for (int i = 0; i < o->npt; i++)
    if (o->pt[i].depth > b) b = o->pt[i].depth;
  return b;
}

static inline int cu_countDepth(const khzColOut *o, double depth, double tol) {
  int n = 0;
  for (int i = 0; i < o->npt; i++) n += fabs(o->pt[i].depth - depth) <= tol;
  return n;
}

#endif
