/* test_plane_pose.c — planes at any pose (rt/src/collision): a plane geom is
 * the half-space below the z = 0 plane of its own frame, which the geom's
 * pos / quat and its body's pose place anywhere. A sphere, a box lying flat
 * and a capsule on a plane tilted 20 degrees (narrow phase: the normal is the
 * plane's, the depths are exact), a plane on a welded body with a geom offset
 * (khz_collide end to end), and the broad phase tested where z = 0 and the
 * tilted plane disagree. */
#include "col_util.h"
#include "spatial.h"

static const double tilt = 20 * M_PI / 180;

/* a plane geom on body with a pose in the body frame */
static int plane_geom(khzSpec *s, int body, const double pos[3], const double quat[4]) {
  khzGeomSpec g;
  khz_spec_defaultGeom(&g);
  g.body = body;
  g.type = KHZ_GEOM_PLANE;
  memcpy(g.pos, pos, 3 * sizeof(double));
  memcpy(g.quat, quat, 4 * sizeof(double));
  return khz_spec_addGeom(s, &g);
}

/* the world z axis of quat, the plane's normal */
static void normal_of(const double quat[4], double n[3]) {
  double R[9];
  khzu_quat2mat(R, quat);
  n[0] = R[2], n[1] = R[5], n[2] = R[8];
}

/* one free shape (geom 0) and a plane through p0 tilted 20 degrees about x
 * (geom 1, on the world); the shape is placed by the caller */
static void check_tilted(khzGeomType type, double s0, double s1, double s2) {
  const double p0[3] = {0.3, -0.2, 0.5};
  double qp[4], n[3], u[3], v[3];
  cu_axisQuat(qp, 1, 0, 0, tilt);
  normal_of(qp, n);
  double R[9];
  khzu_quat2mat(R, qp);
  u[0] = R[0], u[1] = R[3], u[2] = R[6]; /* the plane's own x and y: tangents */
  v[0] = R[1], v[1] = R[4], v[2] = R[7];
  ENSURE_NEAR(n[1], -sin(tilt), 1e-15);
  ENSURE_NEAR(n[2], cos(tilt), 1e-15);

  khzSpec *s = khz_spec_new();
  int b = cu_body(s, "shape");
  cu_geom(s, b, type, s0, s1, s2);
  plane_geom(s, 0, p0, qp);
  khzModel *m = cu_compile(s);
  khzData *d = khz_makeData(m, 0);

  /* the shape 1 cm into the plane, lying flat on it (its frame = the
   * plane's, turned so that a capsule lies along the plane's x) somewhere
   * along the slope */
  double qs[4], half = type == KHZ_GEOM_BOX ? s2 : s0, c[3];
  memcpy(qs, qp, sizeof qs);
  if (type == KHZ_GEOM_CAPSULE) {
    double turn[4];
    cu_axisQuat(turn, 0, 1, 0, M_PI / 2); /* capsule axis (z) onto the plane's x */
    khzu_mulQuat(qs, qp, turn);
  }
  for (int k = 0; k < 3; k++) c[k] = p0[k] + 1.7 * u[k] - 0.8 * v[k] + (half - 0.01) * n[k];
  cu_pose(m, d, b, c, qs);
  cu_pair p;
  ENSURE(cu_collidePair(m, d, 0, 1, &p));
  khzColOut *o = &p.out;

  /* normal toward geom 0 (the shape): the plane's normal */
  for (int k = 0; k < 3; k++) ENSURE_NEAR(o->normal[k], n[k], 1e-12);
  ENSURE_NEAR(cu_maxDepth(o), 0.01, 1e-12);
  int want = type == KHZ_GEOM_SPHERE ? 1 : type == KHZ_GEOM_CAPSULE ? 2 : 4;
  ENSURE_MSG(cu_countDepth(o, 0.01, 1e-12) == want, "type %d: %d points at 1 cm, expected %d",
             type, cu_countDepth(o, 0.01, 1e-12), want);
  /* each deep point lies 1 cm below the plane: n . (x - p0) = -0.01 */
  for (int i = 0; i < o->npt; i++) {
    if (o->pt[i].depth < 0.005) continue;
    double r[3];
    khzu_sub3(r, o->pt[i].pos, p0);
    ENSURE_NEAR(khzu_dot3(n, r), -0.01, 1e-12);
  }

  /* lifted 1 cm above the plane along its normal: apart */
  for (int k = 0; k < 3; k++) c[k] += 0.02 * n[k];
  cu_pose(m, d, b, c, qs);
  ENSURE(!cu_collidePair(m, d, 0, 1, &p));
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

static void test_tilted_plane(void) {
  check_tilted(KHZ_GEOM_SPHERE, 0.1, 0, 0);
  check_tilted(KHZ_GEOM_BOX, 0.2, 0.3, 0.1);
  check_tilted(KHZ_GEOM_CAPSULE, 0.05, 0.25, 0);
}

/* a plane on a welded body (yawed 0.7 rad, raised) with the geom tilted 20
 * degrees in the body frame: khz_collide finds one pair, its normal points
 * toward body[0] (the slope: minus the plane normal), the depth is exact */
static void test_plane_on_body(void) {
  khzSpec *s = khz_spec_new();
  khzBodySpec bs;
  khz_spec_defaultBody(&bs);
  snprintf(bs.name, sizeof bs.name, "slope");
  bs.parent = 0;
  bs.joint_type = KHZ_JOINT_FIXED;
  bs.pos[0] = -1, bs.pos[1] = 2, bs.pos[2] = 0.4;
  cu_axisQuat(bs.quat, 0, 0, 1, 0.7);
  int slope = khz_spec_addBody(s, &bs);
  double qg[4], pg[3] = {0.5, 0, 0.1};
  cu_axisQuat(qg, 1, 0, 0, tilt);
  plane_geom(s, slope, pg, qg);
  int ball = cu_body(s, "ball");
  cu_geom(s, ball, KHZ_GEOM_SPHERE, 0.1, 0, 0);
  khzModel *m = cu_compile(s);
  khz_spec_destroy(&s);
  khzData *d = khz_makeData(m, 0);

  /* the plane in the world: body pose * geom pose */
  double qw[4], n[3], p0[3], Rb[9];
  khzu_mulQuat(qw, bs.quat, qg);
  normal_of(qw, n);
  khzu_quat2mat(Rb, bs.quat);
  khzu_mulMatVec3(p0, Rb, pg);
  khzu_add3(p0, p0, bs.pos);
  ENSURE_NEAR(n[2], cos(tilt), 1e-15);

  const double up[4] = {1, 0, 0, 0};
  double c[3];
  for (int k = 0; k < 3; k++) c[k] = p0[k] + (0.1 - 0.02) * n[k];
  c[0] += 0.3 * n[2], c[2] -= 0.3 * n[0]; /* along the slope (orthogonal to n) */
  cu_pose(m, d, ball, c, up);
  khz_kinematics(m, d);
  ENSURE(khz_collide(m, d) == 1);
  const khzContact *ct = &d->contact[0];
  ENSURE(ct->geom[0] == 0 && ct->geom[1] == 1 && ct->body[0] == slope && ct->body[1] == ball);
  for (int k = 0; k < 3; k++) ENSURE_NEAR(ct->normal[k], -n[k], 1e-12);
  ENSURE_NEAR(d->cpoint[ct->deepest].depth, 0.02, 1e-12);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* the broad phase uses the plane's own normal: a ball below z = 0 but above
 * the tilted plane is apart, one above z = 0 but below it is in contact */
static void test_broadphase_tilted(void) {
  khzSpec *s = khz_spec_new();
  double q[4], n[3], o[3] = {0, 0, 0};
  cu_axisQuat(q, 1, 0, 0, tilt);
  normal_of(q, n);
  int a = cu_body(s, "a"), b = cu_body(s, "b");
  cu_geom(s, a, KHZ_GEOM_SPHERE, 0.1, 0, 0);
  cu_geom(s, b, KHZ_GEOM_BOX, 0.1, 0.1, 0.1);
  plane_geom(s, 0, o, q);
  khzModel *m = cu_compile(s);
  khz_spec_destroy(&s);
  khzData *d = khz_makeData(m, 0);
  const double up[4] = {1, 0, 0, 0};
  double pa[3] = {0, -3, -0.5}, pb[3] = {0, 3, 0.5};
  ENSURE(khzu_dot3(n, pa) > 0.5 && khzu_dot3(n, pb) < -0.5);
  cu_pose(m, d, a, pa, up);
  cu_pose(m, d, b, pb, up);
  khz_kinematics(m, d);
  ENSURE(khz_collide(m, d) == 1);
  ENSURE(d->contact[0].body[0] == b && d->contact[0].body[1] == 0);
  for (int k = 0; k < 3; k++) ENSURE_NEAR(d->contact[0].normal[k], n[k], 1e-12); /* toward the box */
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

int main(void) {
  test_tilted_plane();
  test_plane_on_body();
  test_broadphase_tilted();
  return ensure_report();
}
