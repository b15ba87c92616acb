/* scene_convert.c — khz model -> benchScene, and benchScene states -> khz
 * coordinates (see scene_convert.h). */
#include "scene_convert.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ rotations -- */

void bench_quat2mat(const double q[4], double R[9]) {
  double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  double w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
  R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y);
  R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
  R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x), R[8] = 1 - 2 * (x * x + y * y);
}

/* Shepperd's method: divide by the largest of the four candidates, so that
 * no rotation loses precision */
void bench_mat2quat(const double R[9], double q[4]) {
  double tr = R[0] + R[4] + R[8];
  if (tr > R[0] && tr > R[4] && tr > R[8]) {
    double s = 2 * sqrt(1 + tr);
    q[0] = 0.25 * s, q[1] = (R[7] - R[5]) / s, q[2] = (R[2] - R[6]) / s, q[3] = (R[3] - R[1]) / s;
  } else if (R[0] >= R[4] && R[0] >= R[8]) {
    double s = 2 * sqrt(1 + R[0] - R[4] - R[8]);
    q[0] = (R[7] - R[5]) / s, q[1] = 0.25 * s, q[2] = (R[1] + R[3]) / s, q[3] = (R[2] + R[6]) / s;
  } else if (R[4] >= R[8]) {
    double s = 2 * sqrt(1 + R[4] - R[0] - R[8]);
    q[0] = (R[2] - R[6]) / s, q[1] = (R[1] + R[3]) / s, q[2] = 0.25 * s, q[3] = (R[5] + R[7]) / s;
  } else {
    double s = 2 * sqrt(1 + R[8] - R[0] - R[4]);
    q[0] = (R[3] - R[1]) / s, q[1] = (R[2] + R[6]) / s, q[2] = (R[5] + R[7]) / s, q[3] = 0.25 * s;
  }
  double sign = q[0] < 0 ? -1 : 1, n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  for (int k = 0; k < 4; k++) q[k] *= sign / n;
}

void bench_rotate(const double R[9], const double v[3], double out[3]) {
  double o[3];
  for (int r = 0; r < 3; r++) o[r] = R[3 * r] * v[0] + R[3 * r + 1] * v[1] + R[3 * r + 2] * v[2];
  memcpy(out, o, sizeof o);
}

void bench_rotate_t(const double R[9], const double v[3], double out[3]) {
  double o[3];
  for (int c = 0; c < 3; c++) o[c] = R[c] * v[0] + R[3 + c] * v[1] + R[6 + c] * v[2];
  memcpy(out, o, sizeof o);
}

/* C = A B, or A^T B when ta */
static void mat_mul(const double A[9], int ta, const double B[9], double C[9]) {
  double o[9];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) {
      double s = 0;
      for (int k = 0; k < 3; k++) s += (ta ? A[3 * k + r] : A[3 * r + k]) * B[3 * k + c];
      o[3 * r + c] = s;
    }
  memcpy(C, o, sizeof o);
}

/* C = A B^T */
static void mat_mul_bt(const double A[9], const double B[9], double C[9]) {
  double o[9];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++)
      o[3 * r + c] = A[3 * r] * B[3 * c] + A[3 * r + 1] * B[3 * c + 1] + A[3 * r + 2] * B[3 * c + 2];
  memcpy(C, o, sizeof o);
}

static void cross(const double a[3], const double b[3], double out[3]) {
  double o[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
  memcpy(out, o, sizeof o);
}

/* ------------------------------------------------------ principal frames -- */

void bench_khz_principal(const khzModel *m, int b, double com[3], double rot[9],
                         double moments[3]) {
  memcpy(com, m->body_com + 3 * b, 3 * sizeof(double));
  khz_eig3(m->body_inertia + 9 * b, moments, rot);
  /* eigenvectors come with arbitrary signs: make the frame right-handed */
  double det = rot[0] * (rot[4] * rot[8] - rot[5] * rot[7]) - rot[1] * (rot[3] * rot[8] - rot[5] * rot[6]) +
               rot[2] * (rot[3] * rot[7] - rot[4] * rot[6]);
  if (det < 0) rot[2] = -rot[2], rot[5] = -rot[5], rot[8] = -rot[8];
}

/* ------------------------------------------------------- khz -> scene -- */

typedef struct {
  char *err;
  int errsz;
} convert_err;

static int fail(convert_err *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->err, (size_t)e->errsz, fmt, ap);
  va_end(ap);
  return -1;
}

/* welded to the world, directly or through other welded bodies */
static int welded_to_world(const khzModel *m, int b) {
  for (; b > 0; b = m->body_parent[b])
    if (m->jnt_type[b] != KHZ_JOINT_FIXED) return 0;
  return 1;
}

/* the role each khz body takes: >= 0 its bench body index, -1 static, or an
 * error for what peer.h cannot express */
static int classify_bodies(const khzModel *m, int *bench_of, int *nbody, convert_err *e) {
  *nbody = 0;
  bench_of[0] = -1;
  for (int b = 1; b < m->nbody; b++) {
    int t = m->jnt_type[b], p = m->body_parent[b];
    const char *name = m->body_name[b];
    if (welded_to_world(m, b)) {
      bench_of[b] = -1;
      continue;
    }
    if (t == KHZ_JOINT_FIXED) return fail(e, "body '%s': welded to a moving body (not expressible in peer.h)", name);
    if (t == KHZ_JOINT_FLOATING && p != 0)
      return fail(e, "body '%s': a floating joint below another body", name);
    if ((t == KHZ_JOINT_REVOLUTE || t == KHZ_JOINT_CONTINUOUS) && bench_of[p] < 0)
      return fail(e, "body '%s': a hinge to the world or a static body (peer.h hinges hang from moving bodies only)", name);
    if (t != KHZ_JOINT_FLOATING && t != KHZ_JOINT_REVOLUTE && t != KHZ_JOINT_CONTINUOUS)
      return fail(e, "body '%s': %s joint (peer.h has free bodies and hinges only)", name,
                  khz_jointTypeName((khzJointType)t));
    if (!(m->body_mass[b] > 0)) return fail(e, "body '%s': massless", name);
    bench_of[b] = (*nbody)++;
  }
  return 0;
}

static int shape_type(const khzModel *m, int g, benchShapeType *t, convert_err *e) {
  switch (m->geom_type[g]) {
    case KHZ_GEOM_PLANE: *t = BENCH_PLANE; return 0;
    case KHZ_GEOM_SPHERE: *t = BENCH_SPHERE; return 0;
    case KHZ_GEOM_BOX: *t = BENCH_BOX; return 0;
    case KHZ_GEOM_CAPSULE: *t = BENCH_CAPSULE; return 0;
    case KHZ_GEOM_CYLINDER: *t = BENCH_CYLINDER; return 0;
    default: return fail(e, "body '%s': mesh geoms are not in peer.h", m->body_name[m->geom_body[g]]);
  }
}

/* a static shape: the geom's world pose at the current kinematics */
static int static_shape(const khzModel *m, const khzData *d, int g, benchShape *s, convert_err *e) {
  int b = m->geom_body[g];
  double Rg[9], R[9];
  if (shape_type(m, g, &s->type, e)) return -1;
  memcpy(s->size, m->geom_size + 3 * g, sizeof s->size);
  bench_rotate(d->xrot + 9 * b, m->geom_pos + 3 * g, s->pos);
  for (int k = 0; k < 3; k++) s->pos[k] += d->xpos[3 * b + k];
  bench_quat2mat(m->geom_quat + 4 * g, Rg);
  mat_mul(d->xrot + 9 * b, 0, Rg, R);
  bench_mat2quat(R, s->quat);
  return 0;
}

/* a body's shape: the geom's pose in the body's principal frame */
static int body_shape(const khzModel *m, int g, const double com[3], const double rot[9],
                      benchShape *s, convert_err *e) {
  double Rg[9], R[9], rel[3];
  if (shape_type(m, g, &s->type, e)) return -1;
  if (s->type == BENCH_PLANE) return fail(e, "body '%s': a plane on a moving body", m->body_name[m->geom_body[g]]);
  memcpy(s->size, m->geom_size + 3 * g, sizeof s->size);
  for (int k = 0; k < 3; k++) rel[k] = m->geom_pos[3 * g + k] - com[k];
  bench_rotate_t(rot, rel, s->pos);
  bench_quat2mat(m->geom_quat + 4 * g, Rg);
  mat_mul(rot, 1, Rg, R);
  bench_mat2quat(R, s->quat);
  return 0;
}

/* pose, velocity, inertia and joint of bench body `bb` from khz body b */
static void fill_body(const khzModel *m, const khzData *d, int b, const int *bench_of, benchBody *bb) {
  double com[3], rot[9], R[9], w[3], r[3], wr[3];
  snprintf(bb->name, sizeof bb->name, "%s", m->body_name[b]);
  bb->mass = m->body_mass[b];
  bench_khz_principal(m, b, com, rot, bb->inertia);
  memcpy(bb->pos, d->xcom + 3 * b, sizeof bb->pos);
  mat_mul(d->xrot + 9 * b, 0, rot, R);
  bench_mat2quat(R, bb->quat);
  /* cvel holds the velocity of the body origin: move it to the com */
  memcpy(w, d->cvel + 6 * b, sizeof w);
  for (int k = 0; k < 3; k++) r[k] = d->xcom[3 * b + k] - d->xpos[3 * b + k];
  cross(w, r, wr);
  for (int k = 0; k < 3; k++) bb->vel[k] = d->cvel[6 * b + 3 + k] + wr[k], bb->angvel[k] = w[k];
  bb->parent = m->jnt_type[b] == KHZ_JOINT_FLOATING ? -1 : bench_of[m->body_parent[b]];
  if (bb->parent >= 0) {
    memcpy(bb->joint_anchor, d->xpos + 3 * b, sizeof bb->joint_anchor);
    bench_rotate(d->xrot + 9 * b, m->jnt_axis + 3 * b, bb->joint_axis);
  }
  bb->khz_body = b;
}

static int count_geoms(const khzModel *m, const int *bench_of, int *nshape, int *nstatic) {
  *nshape = *nstatic = 0;
  for (int g = 0; g < m->ngeom; g++) {
    if (m->geom_visual[g]) continue;
    if (bench_of[m->geom_body[g]] >= 0) (*nshape)++;
    else (*nstatic)++;
  }
  return 0;
}

static int fill_shapes(const khzModel *m, const khzData *d, const int *bench_of, benchScene *s,
                       convert_err *e) {
  int ns = 0, nst = 0;
  for (int i = 0; i < s->nbody; i++) {
    benchBody *bb = s->body + i;
    double com[3], rot[9], mom[3];
    bench_khz_principal(m, bb->khz_body, com, rot, mom);
    bb->shape0 = ns;
    for (int g = 0; g < m->ngeom; g++)
      if (!m->geom_visual[g] && m->geom_body[g] == bb->khz_body)
        if (body_shape(m, g, com, rot, s->shape + ns++, e)) return -1;
    bb->nshape = ns - bb->shape0;
  }
  for (int g = 0; g < m->ngeom; g++)
    if (!m->geom_visual[g] && bench_of[m->geom_body[g]] < 0)
      if (static_shape(m, d, g, s->static_shape + nst++, e)) return -1;
  return 0;
}

int bench_scene_from_khz(const khzModel *m, khzData *d, const char *name, benchScene *out,
                         char *err, int errsz) {
  convert_err e = {err, errsz};
  benchScene s;
  memset(&s, 0, sizeof s);
  memset(out, 0, sizeof *out);
  int *bench_of = calloc((size_t)m->nbody, sizeof(int));
  if (!bench_of) return fail(&e, "out of memory");
  int rc = classify_bodies(m, bench_of, &s.nbody, &e);
  if (rc == 0) {
    count_geoms(m, bench_of, &s.nshape, &s.nstatic);
    s.body = calloc((size_t)s.nbody + 1, sizeof *s.body);
    s.shape = calloc((size_t)s.nshape + 1, sizeof *s.shape);
    s.static_shape = calloc((size_t)s.nstatic + 1, sizeof *s.static_shape);
    if (!s.body || !s.shape || !s.static_shape) rc = fail(&e, "out of memory");
  }
  if (rc == 0) {
    khz_kinematics(m, d);
    for (int b = 1; b < m->nbody; b++)
      if (bench_of[b] >= 0) fill_body(m, d, b, bench_of, s.body + bench_of[b]);
    rc = fill_shapes(m, d, bench_of, &s, &e);
  }
  free(bench_of);
  if (rc) {
    bench_scene_free(&s);
    return -1;
  }
  snprintf(s.name, sizeof s.name, "%s", name);
  s.timestep = m->timestep;
  memcpy(s.gravity, m->gravity, sizeof s.gravity);
  s.mu = m->contact.mu;
  s.restitution = m->contact.restitution;
  s.khz_model = m;
  *out = s;
  return 0;
}

void bench_scene_free(benchScene *scene) {
  free(scene->body), free(scene->shape), free(scene->static_shape);
  memset(scene, 0, sizeof *scene);
}

/* ------------------------------------------------------- scene -> khz -- */

int bench_khz_map_init(benchKhzMap *map, const benchScene *scene) {
  int n = scene->nbody + 1;
  map->scene = scene;
  map->com = calloc((size_t)n, sizeof *map->com);
  map->rot = calloc((size_t)n, sizeof *map->rot);
  if (!map->com || !map->rot) {
    bench_khz_map_free(map);
    return -1;
  }
  for (int i = 0; i < scene->nbody; i++) {
    double moments[3];
    bench_khz_principal(scene->khz_model, scene->body[i].khz_body, map->com[i], map->rot[i], moments);
  }
  return 0;
}

void bench_khz_map_free(benchKhzMap *map) {
  free(map->com), free(map->rot);
  map->com = NULL, map->rot = NULL;
}

/* khz body rotation (body frame -> world) from the principal frame's */
static void khz_rotation(const benchKhzMap *map, int i, const double quat[4], double Rb[9]) {
  double Rp[9];
  bench_quat2mat(quat, Rp);
  mat_mul_bt(Rp, map->rot[i], Rb);
}

static void set_free(const benchKhzMap *map, khzData *d, int i, const double pos[3],
                     const double quat[4], const double vel[3], const double w[3]) {
  const khzModel *m = map->scene->khz_model;
  int b = map->scene->body[i].khz_body;
  double Rb[9], off[3], r[3], wr[3];
  khz_rotation(map, i, quat, Rb);
  double *q = d->q + m->jnt_qadr[b], *qd = d->qd + m->jnt_dofadr[b];
  bench_rotate(Rb, map->com[i], off);
  for (int k = 0; k < 3; k++) q[k] = pos[k] - off[k], r[k] = -off[k];
  bench_mat2quat(Rb, q + 3);
  /* the floating joint's velocity is that of the body origin (world) and
   * the angular velocity in body axes */
  cross(w, r, wr);
  for (int k = 0; k < 3; k++) qd[k] = vel[k] + wr[k];
  bench_rotate_t(Rb, w, qd + 3);
}

/* hinge angle of bench body i from the world rotations of it and its parent
 * j: Ro^T Rp^T Rb is the rotation about the joint axis by q */
static void set_hinge(const benchKhzMap *map, khzData *d, int i, int j, const double quat[4],
                      const double parent_quat[4], const double w[3], const double parent_w[3]) {
  const khzModel *m = map->scene->khz_model;
  int b = map->scene->body[i].khz_body;
  double Rb[9], Rp[9], M[9], A[9];
  khz_rotation(map, i, quat, Rb);
  khz_rotation(map, j, parent_quat, Rp);
  mat_mul(Rp, 1, Rb, A);
  mat_mul(m->body_rot + 9 * b, 1, A, M);
  const double *a = m->jnt_axis + 3 * b;
  double vee[3] = {M[7] - M[5], M[2] - M[6], M[3] - M[1]};
  double s = 0.5 * (a[0] * vee[0] + a[1] * vee[1] + a[2] * vee[2]), c = 0.5 * (M[0] + M[4] + M[8] - 1);
  d->q[m->jnt_qadr[b]] = atan2(s, c);
  double aw[3];
  bench_rotate(Rb, a, aw);
  d->qd[m->jnt_dofadr[b]] = aw[0] * (w[0] - parent_w[0]) + aw[1] * (w[1] - parent_w[1]) + aw[2] * (w[2] - parent_w[2]);
}

void bench_khz_set_state(const benchKhzMap *map, khzData *d, const double (*pos)[3],
                         const double (*quat)[4], const double (*vel)[3],
                         const double (*angvel)[3]) {
  const benchScene *scene = map->scene;
  for (int i = 0; i < scene->nbody; i++) {
    int j = scene->body[i].parent;
    if (j < 0)
      set_free(map, d, i, pos[i], quat[i], vel[i], angvel[i]);
    else
      set_hinge(map, d, i, j, quat[i], quat[j], angvel[i], angvel[j]);
  }
  khz_kinematics(scene->khz_model, d);
}

void bench_khz_get_state(const benchKhzMap *map, const khzData *d, int body, double pos[3],
                         double quat[4], double vel[3], double angvel[3]) {
  int b = map->scene->body[body].khz_body;
  double R[9], r[3], wr[3];
  memcpy(pos, d->xcom + 3 * b, 3 * sizeof(double));
  mat_mul(d->xrot + 9 * b, 0, map->rot[body], R);
  bench_mat2quat(R, quat);
  for (int k = 0; k < 3; k++) r[k] = d->xcom[3 * b + k] - d->xpos[3 * b + k];
  cross(d->cvel + 6 * b, r, wr);
  for (int k = 0; k < 3; k++) vel[k] = d->cvel[6 * b + 3 + k] + wr[k], angvel[k] = d->cvel[6 * b + k];
}
