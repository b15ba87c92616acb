/* test_narrowphase.c — the narrow phase (rt/src/collision/narrowphase.c):
 * hand-computed contacts (a box resting flat and tilted on a plane, sphere on
 * sphere, capsule on box, a cylinder lying and standing on a plane, box on box
 * face to face and with crossed edges), every pair of shapes stacked with a
 * known penetration, the penetration depth of convex pairs against
 * libccd's EPA over random poses, and the footprint of boxes resting face on
 * face against ODE's box-box manifold (dBoxBox). */
#include <ccd/ccd.h>
#include <ccd/quat.h>
#include <float.h>
#include <ode/ode.h>

#include "col_util.h"

static const double up[4] = {1, 0, 0, 0};

/* --------------------------------------------------------- hand cases -- */

/* a 1 m box resting flat on the ground, 1 cm deep */
static void test_box_on_plane(void) {
  for (int order = 0; order < 2; order++) {
    khzSpec *s = khz_spec_new();
    int b = cu_body(s, "box");
    if (order) cu_geom(s, 0, KHZ_GEOM_PLANE, 0, 0, 0);
    cu_geom(s, b, KHZ_GEOM_BOX, 0.5, 0.5, 0.5);
    if (!order) cu_geom(s, 0, KHZ_GEOM_PLANE, 0, 0, 0);
    khzModel *m = cu_compile(s);
    khzData *d = khz_makeData(m, 0);
    cu_pose(m, d, b, (double[3]){0.3, -0.2, 0.49}, up);
    cu_pair p;
    ENSURE(cu_collidePair(m, d, 0, 1, &p));
    khzColOut *o = &p.out;

    /* normal toward geom 0: the box (+z), or the plane (-z) */
    ENSURE_NEAR(o->normal[2], order ? -1 : 1, 1e-12);
    ENSURE_NEAR(cu_maxDepth(o), 0.01, 1e-12);
    ENSURE(cu_countDepth(o, 0.01, 1e-12) == 4);
    ENSURE(cu_countDepth(o, 0, 1e-12) == 4); /* vertical edges crossing the ground */
    ENSURE(o->npt == 8);
    for (int i = 0; i < o->npt; i++)
      if (o->pt[i].depth > 0.005) {
        ENSURE_NEAR(fabs(o->pt[i].pos[0] - 0.3), 0.5, 1e-12);
        ENSURE_NEAR(o->pt[i].pos[2], -0.01, 1e-12);
        ENSURE(KHZ_FEATURE_SIDE(o->pt[i].feature) == (order ? 1 : 0));
      }
    khz_deleteData(&d);
    khz_deleteModel(&m);
    khz_spec_destroy(&s);
  }
}

/* tilted 30 degrees about x: one edge down (2 deepest corners); about a
 * diagonal: one corner down */
static void test_box_tilted(void) {
  khzSpec *s = khz_spec_new();
  int b = cu_body(s, "box");
  cu_geom(s, b, KHZ_GEOM_BOX, 0.5, 0.5, 0.5);
  cu_geom(s, 0, KHZ_GEOM_PLANE, 0, 0, 0);
  khzModel *m = cu_compile(s);
  khzData *d = khz_makeData(m, 0);
  double q[4], a = M_PI / 6;
  cu_axisQuat(q, 1, 0, 0, a);
  double low = 0.5 * (cos(a) + sin(a)); /* centre to lowest edge */
  cu_pose(m, d, b, (double[3]){0, 0, low - 0.02}, q);
  cu_pair p;
  ENSURE(cu_collidePair(m, d, 0, 1, &p));
  ENSURE_NEAR(p.out.normal[2], 1, 1e-12);
  ENSURE_NEAR(cu_maxDepth(&p.out), 0.02, 1e-12);
  ENSURE(cu_countDepth(&p.out, 0.02, 1e-12) == 2);

  /* a corner down: rotate so that (1,1,1) points down */
  double axis[3] = {-1, 1, 0};
  double ang = acos(-1 / sqrt(3.0)); /* (1,1,1)/sqrt3 -> -z */
  cu_axisQuat(q, axis[0], axis[1], axis[2], ang);
  cu_pose(m, d, b, (double[3]){0, 0, 0.5 * sqrt(3.0) - 0.03}, q);
  ENSURE(cu_collidePair(m, d, 0, 1, &p));
  ENSURE_NEAR(cu_maxDepth(&p.out), 0.03, 1e-12);
  ENSURE(cu_countDepth(&p.out, 0.03, 1e-12) == 1);
  ENSURE(p.out.npt == 4); /* the corner and its three edges crossing the ground */
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

static void test_sphere_sphere(void) {
  khzSpec *s = khz_spec_new();
  int a = cu_body(s, "a"), b = cu_body(s, "b");
  cu_geom(s, a, KHZ_GEOM_SPHERE, 0.5, 0, 0);
  cu_geom(s, b, KHZ_GEOM_SPHERE, 0.3, 0, 0);
  khzModel *m = cu_compile(s);
  khzData *d = khz_makeData(m, 0);
  cu_pose(m, d, a, (double[3]){0, 0, 0}, up);
  cu_pose(m, d, b, (double[3]){0.7, 0, 0}, up);
  cu_pair p;
  ENSURE(cu_collidePair(m, d, 0, 1, &p));
  ENSURE(p.out.npt == 1);
  ENSURE_NEAR(p.out.normal[0], -1, 1e-12); /* toward geom 0 */
  ENSURE_NEAR(p.out.pt[0].depth, 0.1, 1e-12);
  ENSURE_NEAR(p.out.pt[0].pos[0], 0.5, 1e-12); /* the deepest point of sphere a */
  cu_pose(m, d, b, (double[3]){0.8 + 1e-9, 0, 0}, up);
  ENSURE(!cu_collidePair(m, d, 0, 1, &p));
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

/* a capsule lying on a box: both end spheres at the same depth */
static void test_capsule_box(void) {
  khzSpec *s = khz_spec_new();
  int c = cu_body(s, "cap"), b = cu_body(s, "box");
  cu_geom(s, c, KHZ_GEOM_CAPSULE, 0.1, 0.5, 0);
  cu_geom(s, b, KHZ_GEOM_BOX, 1, 1, 0.5);
  khzModel *m = cu_compile(s);
  khzData *d = khz_makeData(m, 0);
  double q[4];
  cu_axisQuat(q, 0, 1, 0, M_PI / 2); /* along x */
  cu_pose(m, d, c, (double[3]){0.1, 0.2, 0.5 + 0.1 - 0.02}, q);
  cu_pose(m, d, b, (double[3]){0, 0, 0}, up);
  cu_pair p;
  ENSURE(cu_collidePair(m, d, 0, 1, &p));
  ENSURE_NEAR(p.out.normal[2], 1, 1e-9);
  ENSURE_NEAR(cu_maxDepth(&p.out), 0.02, 1e-9);
  ENSURE(cu_countDepth(&p.out, 0.02, 1e-9) >= 2);
  int ends = 0;
  for (int i = 0; i < p.out.npt; i++)
    if (fabs(p.out.pt[i].depth - 0.02) < 1e-9 && fabs(fabs(p.out.pt[i].pos[0] - 0.1) - 0.5) < 1e-9)
      ends++;
  ENSURE(ends == 2);

  /* tilted: only the lower end */
  cu_axisQuat(q, 0, 1, 0, M_PI / 2 + 0.2);
  double zlow = 0.5 * sin(0.2) + 0.1; /* centre above the lower end's bottom */
  cu_pose(m, d, c, (double[3]){0, 0, 0.5 + zlow - 0.01}, q);
  ENSURE(cu_collidePair(m, d, 0, 1, &p));
  ENSURE_NEAR(cu_maxDepth(&p.out), 0.01, 1e-9);
  ENSURE(cu_countDepth(&p.out, 0.01, 1e-9) == 1);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

/* lying (a wheel): the exact deepest rim points, whatever the roll angle;
 * standing: the 16 samples of the bottom rim */
static void test_cylinder_plane(void) {
  khzSpec *s = khz_spec_new();
  int c = cu_body(s, "cyl");
  cu_geom(s, c, KHZ_GEOM_CYLINDER, 0.2, 0.5, 0);
  cu_geom(s, 0, KHZ_GEOM_PLANE, 0, 0, 0);
  khzModel *m = cu_compile(s);
  khzData *d = khz_makeData(m, 0);
  cu_pair p;
  for (int k = 0; k < 5; k++) {
    double roll = 0.1 + 0.37 * k, q1[4], q2[4], q[4];
    cu_axisQuat(q1, 0, 1, 0, M_PI / 2); /* axis along x */
    cu_axisQuat(q2, 1, 0, 0, roll);     /* rolled about it */
    q[0] = q2[0] * q1[0] - q2[1] * q1[1] - q2[2] * q1[2] - q2[3] * q1[3];
    q[1] = q2[0] * q1[1] + q2[1] * q1[0] + q2[2] * q1[3] - q2[3] * q1[2];
    q[2] = q2[0] * q1[2] - q2[1] * q1[3] + q2[2] * q1[0] + q2[3] * q1[1];
    q[3] = q2[0] * q1[3] + q2[1] * q1[2] - q2[2] * q1[1] + q2[3] * q1[0];
    cu_pose(m, d, c, (double[3]){0, 0, 0.2 - 0.005}, q);
    ENSURE(cu_collidePair(m, d, 0, 1, &p));
    ENSURE_NEAR(p.out.normal[2], 1, 1e-12);
    ENSURE_NEAR(cu_maxDepth(&p.out), 0.005, 1e-12);
    ENSURE(cu_countDepth(&p.out, 0.005, 1e-12) == 2);
  }
  cu_pose(m, d, c, (double[3]){0, 0, 0.5 - 0.004}, up);
  ENSURE(cu_collidePair(m, d, 0, 1, &p));
  ENSURE(cu_countDepth(&p.out, 0.004, 1e-12) == KHZ_CYL_RIM);
  ENSURE_NEAR(cu_maxDepth(&p.out), 0.004, 1e-12);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

/* face to face (small on large), and two crossed edges */
static void test_box_box(void) {
  khzSpec *s = khz_spec_new();
  int a = cu_body(s, "a"), b = cu_body(s, "b");
  cu_geom(s, a, KHZ_GEOM_BOX, 0.5, 0.5, 0.5);
  cu_geom(s, b, KHZ_GEOM_BOX, 1, 1, 0.5);
  khzModel *m = cu_compile(s);
  khzData *d = khz_makeData(m, 0);
  cu_pair p;
  cu_pose(m, d, a, (double[3]){0.2, 0.1, 1 - 0.01}, up);
  cu_pose(m, d, b, (double[3]){0, 0, 0}, up);
  ENSURE(cu_collidePair(m, d, 0, 1, &p));
  ENSURE_NEAR(p.out.normal[2], 1, 1e-12);
  ENSURE_NEAR(cu_maxDepth(&p.out), 0.01, 1e-12);
  ENSURE(cu_countDepth(&p.out, 0.01, 1e-12) == 4);

  /* the large box on top: its face is deeper than the small box's top corners */
  cu_pose(m, d, a, (double[3]){0, 0, 0}, up);
  cu_pose(m, d, b, (double[3]){0.1, -0.2, 1 - 0.01}, up);
  ENSURE(cu_collidePair(m, d, 0, 1, &p));
  ENSURE_NEAR(p.out.normal[2], -1, 1e-12);
  ENSURE_NEAR(cu_maxDepth(&p.out), 0.01, 1e-12);
  ENSURE(cu_countDepth(&p.out, 0.01, 1e-12) == 4); /* a's top corners, inside b */

  /* crossed edges: a's lowest edge along x over b's highest edge along y */
  double qa[4], qb[4], r = 0.5 * sqrt(2.0);
  cu_axisQuat(qa, 1, 0, 0, M_PI / 4);
  cu_axisQuat(qb, 0, 1, 0, M_PI / 4);
  cu_pose(m, d, a, (double[3]){0, 0, r + (r - 0.01)}, qa);
  khzSpec *s2 = khz_spec_new();
  int a2 = cu_body(s2, "a"), b2 = cu_body(s2, "b");
  cu_geom(s2, a2, KHZ_GEOM_BOX, 0.5, 0.5, 0.5);
  cu_geom(s2, b2, KHZ_GEOM_BOX, 0.5, 0.5, 0.5);
  khzModel *m2 = cu_compile(s2);
  khzData *d2 = khz_makeData(m2, 0);
  cu_pose(m2, d2, a2, (double[3]){0, 0, 2 * r - 0.01}, qa);
  cu_pose(m2, d2, b2, (double[3]){0, 0, 0}, qb);
  ENSURE(cu_collidePair(m2, d2, 0, 1, &p));
  ENSURE_NEAR(p.out.normal[2], 1, 1e-9);
  ENSURE_NEAR(cu_maxDepth(&p.out), 0.01, 1e-9);
  ENSURE_MSG(cu_countDepth(&p.out, 0.01, 1e-9) == 4, "%d points at full depth of %d",
             cu_countDepth(&p.out, 0.01, 1e-9), p.out.npt);
  int edge = 0;
  for (int i = 0; i < p.out.npt; i++) edge += (p.out.pt[i].feature >> 24 & 0xf) == KHZ_FEAT_EDGE;
  ENSURE(edge == p.out.npt); /* no vertex is inside the other box */
  khz_deleteData(&d2);
  khz_deleteModel(&m2);
  khz_spec_destroy(&s2);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

/* ------------------------------------------- face on face, against ODE -- */

/* area of the convex hull of points projected on the plane normal to n
 * (Andrew's monotone chain; at most CU_CAP points) */
static double footprint_area(const double (*p)[3], int n, const double nrm[3]) {
  double u[3], v[3], q[CU_CAP][2], h[2 * CU_CAP][2];
  khzu_orthogonal(u, nrm);
  khzu_cross(v, nrm, u);
  for (int i = 0; i < n; i++) q[i][0] = khzu_dot3(u, p[i]), q[i][1] = khzu_dot3(v, p[i]);
  for (int i = 1; i < n; i++) /* insertion sort by (x, y) */
    for (int j = i; j > 0 && (q[j][0] < q[j - 1][0] || (q[j][0] == q[j - 1][0] && q[j][1] < q[j - 1][1])); j--) {
      double t0 = q[j][0], t1 = q[j][1];
      q[j][0] = q[j - 1][0], q[j][1] = q[j - 1][1], q[j - 1][0] = t0, q[j - 1][1] = t1;
    }
  int k = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int ii = 0, lo = k; ii < n; ii++) {
      int i = pass ? n - 1 - ii : ii;
      while (k >= lo + 2 && (h[k - 1][0] - h[k - 2][0]) * (q[i][1] - h[k - 2][1]) -
                                    (h[k - 1][1] - h[k - 2][1]) * (q[i][0] - h[k - 2][0]) <= 0)
        k--;
      h[k][0] = q[i][0], h[k][1] = q[i][1], k++;
      if (ii == n - 1) k--; /* the last point starts the other chain */
    }
  double a = 0;
  for (int i = 0; i < k; i++) a += h[i][0] * h[(i + 1) % k][1] - h[(i + 1) % k][0] * h[i][1];
  return 0.5 * fabs(a);
}

/* One pose of two boxes against ODE's dBoxBox (Smith's clipping of the
 * incident face by the reference face): same deepest depth, and the points
 * that carry the penalty springs (deeper than 1e-3 of the deepest, as
 * contact/bottom.c takes them) span ODE's footprint. Returns 1 when it holds;
 * *dropped when khz found no contact where ODE did. */
static int face_pose(const khzModel *m, khzData *d, const double *half0, const double *half1, double tol,
                     int *dropped, char *why, size_t whysz) {
  static cu_pair p;
  int hit = cu_collidePair(m, d, 0, 1, &p);
  dGeomID g[2];
  const double *half[2] = {half0, half1};
  for (int b = 0; b < 2; b++) {
    const double *q = d->q + m->jnt_qadr[b + 1];
    g[b] = dCreateBox(0, 2 * half[b][0], 2 * half[b][1], 2 * half[b][2]);
    dGeomSetPosition(g[b], q[0], q[1], q[2]);
    dQuaternion o = {q[3], q[4], q[5], q[6]};
    dGeomSetQuaternion(g[b], o);
  }
  dContactGeom cg[16];
  int nc = dCollide(g[0], g[1], 16, cg, sizeof(dContactGeom));
  dGeomDestroy(g[0]), dGeomDestroy(g[1]);
  double ode_pts[16][3], ode_depth = 0, khz_pts[CU_CAP][3];
  for (int i = 0; i < nc; i++) {
    memcpy(ode_pts[i], cg[i].pos, sizeof ode_pts[i]);
    ode_depth = fmax(ode_depth, cg[i].depth);
  }
  *dropped = nc > 0 && !hit;
  if (!hit) {
    snprintf(why, whysz, "no contact (ODE: %d points, %g deep)", nc, ode_depth);
    return nc == 0;
  }
  double deep = cu_maxDepth(&p.out);
  int nk = 0;
  for (int i = 0; i < p.out.npt; i++)
    if (p.out.pt[i].depth > 1e-3 * deep) memcpy(khz_pts[nk++], p.out.pt[i].pos, sizeof khz_pts[0]);
  double ak = footprint_area((const double(*)[3])khz_pts, nk, p.out.normal);
  double ao = footprint_area((const double(*)[3])ode_pts, nc, p.out.normal);
  snprintf(why, whysz, "depth %.9g (ODE %.9g), footprint %.9g m^2 from %d points (ODE %.9g from %d)", deep,
           ode_depth, ak, nk, ao, nc);
  return fabs(deep - ode_depth) <= 1e-9 && fabs(ak - ao) <= tol * ao;
}

/* A box resting face down on another reports the whole footprint of the
 * contact: the corners of the upper face, or the vertices of the overlap
 * when the faces overlap in part (ODE's manifold). Two equal boxes stacked
 * put every corner on the other's side planes, where round-off decided the
 * inside tests: 2 of the 4 corners were found, and some poses lost the pair
 * while 0.2 mm deep (docs/lcp.md, the 5-box stack). */
static void test_box_face_manifold(void) {
  dInitODE2(0);
  uint64_t rng = cu_rng; /* the poses of the tests after this one stay as they were */
  char why[256];
  int dropped;
  /* a 0.2 m box 0.2 mm deep on a 1 m box: its corners inside, on and outside
   * the lower face's edges; level and tilted 1e-4 rad; either box geom 0 */
  double small[3] = {0.1, 0.1, 0.1}, large[3] = {0.5, 0.5, 0.5};
  const double offs[][2] = {{0, 0}, {0.4, 0.1}, {0.4, 0.4}, {0.45, 0.2}, {0.45, 0.45}, {0.55, -0.3}};
  for (int order = 0; order < 2; order++) {
    khzSpec *s = khz_spec_new();
    int b0 = cu_body(s, "b0"), b1 = cu_body(s, "b1");
    const double *h0 = order ? large : small, *h1 = order ? small : large;
    cu_geom(s, b0, KHZ_GEOM_BOX, h0[0], h0[1], h0[2]);
    cu_geom(s, b1, KHZ_GEOM_BOX, h1[0], h1[1], h1[2]);
    khzModel *m = cu_compile(s);
    khzData *d = khz_makeData(m, 0);
    int top = order ? b1 : b0, bottom = order ? b0 : b1;
    for (int tilt = 0; tilt < 2; tilt++)
      for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++) {
        double q[4];
        cu_axisQuat(q, 1, 0.3, 0, tilt ? 1e-4 : 0);
        cu_pose(m, d, top, (double[3]){offs[k][0], offs[k][1], 0.6 - 2e-4}, q);
        cu_pose(m, d, bottom, (double[3]){0, 0, 0}, up);
        int ok = face_pose(m, d, h0, h1, 1e-6, &dropped, why, sizeof why);
        ENSURE_MSG(ok, "small on large (geom %d on top), offset (%g, %g), tilt %d: %s", order, offs[k][0],
                   offs[k][1], tilt, why);
      }
    khz_deleteData(&d);
    khz_deleteModel(&m);
    khz_spec_destroy(&s);
  }

  /* two equal 0.4 m boxes aligned face on face, 0.2 mm deep, with offsets
   * and rotations from round-off (1e-16) to 1e-4: the whole 0.16 m^2
   * footprint (to 1e-4 of it: ODE's polygon also has the nearly straight
   * vertices where two edges a small rotation apart cross) */
  for (int hull = 0; hull < 2; hull++) { /* box on box, box on a convex mesh of the box */
  khzSpec *s = khz_spec_new();
  int b0 = cu_body(s, "b0"), b1 = cu_body(s, "b1");
  double eq[3] = {0.2, 0.2, 0.2};
  cu_geom(s, b0, KHZ_GEOM_BOX, 0.2, 0.2, 0.2);
  if (hull)
    cu_meshGeom(s, b1, cu_boxMesh(s, "cube", 0.2, 0.2, 0.2), 1);
  else
    cu_geom(s, b1, KHZ_GEOM_BOX, 0.2, 0.2, 0.2);
  khzModel *m = cu_compile(s);
  khzData *d = khz_makeData(m, 0);
  for (double j = hull ? 1e-15 : 1e-16; j < 1e-3; j *= hull ? 100 : 10) {
    int bad = 0, lost = 0;
    for (int k = 0; k < 300; k++) {
      double q0[4], q1[4];
      cu_axisQuat(q0, cu_uniform(-1, 1), cu_uniform(-1, 1), cu_uniform(-1, 1), cu_uniform(0, j));
      cu_axisQuat(q1, cu_uniform(-1, 1), cu_uniform(-1, 1), cu_uniform(-1, 1), cu_uniform(0, j));
      double z = cu_uniform(0.2, 1.8); /* where in a stack */
      cu_pose(m, d, b0 + (k & 1), (double[3]){cu_uniform(-j, j), cu_uniform(-j, j), z + 0.4 - 2e-4}, q0);
      cu_pose(m, d, b1 - (k & 1), (double[3]){cu_uniform(-j, j), cu_uniform(-j, j), z}, q1);
      int ok = face_pose(m, d, eq, eq, 1e-4, &dropped, why, sizeof why);
      if (!ok && bad++ < 2) fprintf(stderr, "equal boxes (hull %d), jitter %g, pose %d: %s\n", hull, j, k, why);
      lost += dropped;
    }
    ENSURE_MSG(bad == 0 && lost == 0,
               "equal boxes (hull %d), jitter %g: %d of 300 poses without the whole footprint, %d lost", hull, j,
               bad, lost);
  }
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
  }
  dCloseODE();
  cu_rng = rng;
}

/* ------------------------------------------------------ every pair -- */

enum { S_PLANE, S_SPHERE, S_CAPSULE, S_BOX, S_CYLINDER, S_CONVEX, S_TRIMESH, S_N };
static const char *sname[S_N] = {"plane", "sphere", "capsule", "box", "cylinder", "convex", "trimesh"};

/* adds shape t to body b; returns its half height when placed with quat q */
static double add_shape(khzSpec *s, int body, int t, int upper, double q[4]) {
  q[0] = 1, q[1] = q[2] = q[3] = 0;
  switch (t) {
    case S_PLANE: cu_geom(s, body, KHZ_GEOM_PLANE, 0, 0, 0); return 0;
    case S_SPHERE: cu_geom(s, body, KHZ_GEOM_SPHERE, 0.3, 0, 0); return 0.3;
    case S_CAPSULE:
      cu_geom(s, body, KHZ_GEOM_CAPSULE, 0.15, 0.3, 0);
      cu_axisQuat(q, 0, 1, 0, M_PI / 2);
      if (upper) cu_axisQuat(q, 1, 0, 0, M_PI / 2); /* crossed over a lower capsule */
      return 0.15;
    case S_BOX: cu_geom(s, body, KHZ_GEOM_BOX, 0.4, 0.3, 0.2); return 0.2;
    case S_CYLINDER: cu_geom(s, body, KHZ_GEOM_CYLINDER, 0.25, 0.2, 0); return 0.2;
    case S_CONVEX: {
      int msh = cu_boxMesh(s, "cmesh", 0.35, 0.25, 0.15);
      cu_meshGeom(s, body, msh, 1);
      return 0.15;
    }
    default: {
      if (upper) {
        int msh = cu_sphereMesh(s, "ball", 0.3, 12, 16);
        cu_meshGeom(s, body, msh, 0);
        return 0.3;
      }
      int msh = cu_boxMesh(s, "slab", 0.6, 0.6, 0.2);
      cu_meshGeom(s, body, msh, 0);
      return 0.2;
    }
  }
}

static void test_every_pair(void) {
  double delta = 0.01;
  for (int tu = S_SPHERE; tu < S_N; tu++)
    for (int tl = S_PLANE; tl < S_N; tl++) {
      khzSpec *s = khz_spec_new();
      int bu = cu_body(s, "upper"), bl = tl == S_PLANE ? 0 : cu_body(s, "lower");
      double qu[4], ql[4];
      double hu = add_shape(s, bu, tu, 1, qu);
      double hl = add_shape(s, bl, tl, 0, ql);
      khzModel *m = cu_compile(s);
      if (!m) {
        khz_spec_destroy(&s);
        continue;
      }
      khzData *d = khz_makeData(m, 0);
      /* off centre, except over a curved top */
      double off = (tl == S_SPHERE || tl == S_CAPSULE) ? 0 : 1;
      if (bl) cu_pose(m, d, bl, (double[3]){0.01 * off, -0.02 * off, 0}, ql);
      cu_pose(m, d, bu, (double[3]){0.03 * off, 0.02 * off, hl + hu - delta}, qu);
      cu_pair p;
      int hit = cu_collidePair(m, d, 0, 1, &p);

      /* triangle-mesh depths come from the distance grid: float samples, and
       * a sphere mesh's bottom vertex is exact; everything else is exact */
      double tol = (tu == S_TRIMESH || tl == S_TRIMESH) ? 1e-5 : 1e-9;
      ENSURE_MSG(hit, "%s on %s: no contact", sname[tu], sname[tl]);
      if (hit) {
        ENSURE_MSG(fabs(cu_maxDepth(&p.out) - delta) <= tol, "%s on %s: depth %.12g", sname[tu],
                   sname[tl], cu_maxDepth(&p.out));
        ENSURE_MSG(p.out.normal[2] > 1 - 1e-6, "%s on %s: normal %g %g %g", sname[tu], sname[tl],
                   p.out.normal[0], p.out.normal[1], p.out.normal[2]);
      }

      /* lifted clear: no contact */
      cu_pose(m, d, bu, (double[3]){0.03 * off, 0.02 * off, hl + hu + delta}, qu);
      ENSURE_MSG(!cu_collidePair(m, d, 0, 1, &p), "%s on %s: contact when apart", sname[tu],
                 sname[tl]);
      khz_deleteData(&d);
      khz_deleteModel(&m);
      khz_spec_destroy(&s);
    }
}

/* --------------------------------------------------- libccd oracle -- */

typedef struct {
  const khzColShape *s;
} ccd_obj;

static void ccd_support(const void *obj, const ccd_vec3_t *dir, ccd_vec3_t *out) {
  const khzColShape *s = ((const ccd_obj *)obj)->s;
  double d[3] = {dir->v[0], dir->v[1], dir->v[2]}, p[3];
  khz_shape_support(s, d, p);
  out->v[0] = p[0], out->v[1] = p[1], out->v[2] = p[2];
}

static void ccd_center(const void *obj, ccd_vec3_t *out) {
  const khzColShape *s = ((const ccd_obj *)obj)->s;
  out->v[0] = s->bcenter[0], out->v[1] = s->bcenter[1], out->v[2] = s->bcenter[2];
}

/* libccd's GJK / EPA on two of our shapes, tight tolerances: the oracle */
static ccd_t ccd_oracle(void) {
  ccd_t ccd;
  CCD_INIT(&ccd);
  ccd.support1 = ccd.support2 = ccd_support;
  ccd.center1 = ccd.center2 = ccd_center;
  ccd.max_iterations = 1000;
  ccd.epa_tolerance = 1e-10;
  ccd.dist_tolerance = 1e-12;
  return ccd;
}

/* how agreement() poses the pair */
typedef enum {
  POSE_RANDOM,  /* random orientations, approach from a random direction, 2-50 mm deep */
  POSE_CROSSED, /* two cylinders lying across each other side to side, 0.05-2 mm deep:
                   no rim sample or generator edge of either lies inside the other */
} pose_mode;

/* q = a roll about the cylinder's own axis z, then the rotation about y by
 * 90 degrees (which takes z to x), then a rotation about z by phi */
static void crossed_quat(double phi, double roll, double q[4]) {
  double c = cos(0.5 * phi), s = sin(0.5 * phi), h = sqrt(0.5);
  double a[4] = {c * h, -s * h, c * h, s * h}, b[4] = {cos(0.5 * roll), 0, 0, sin(0.5 * roll)};
  q[0] = a[0] * b[0] - a[3] * b[3];
  q[1] = a[1] * b[0] + a[2] * b[3];
  q[2] = a[2] * b[0] - a[1] * b[3];
  q[3] = a[3] * b[0] + a[0] * b[3];
}

/* poses of two shapes with a small penetration: EPA depth against ours */
static void agreement(const char *name, khzGeomType ta, const double *sa, khzGeomType tb,
                      const double *sb, int meshb, pose_mode mode, int ncase, double tol_rel,
                      double below_tol) {
  khzSpec *s = khz_spec_new();
  int a = cu_body(s, "a"), b = cu_body(s, "b");
  cu_geom(s, a, ta, sa[0], sa[1], sa[2]);
  if (meshb)
    cu_meshGeom(s, b, cu_boxMesh(s, "hull", sb[0], sb[1], sb[2]), 1);
  else
    cu_geom(s, b, tb, sb[0], sb[1], sb[2]);
  khzModel *m = cu_compile(s);
  khzData *d = khz_makeData(m, 0);
  ccd_t ccd = ccd_oracle();

  double worst = 0, sum = 0, worstn = 0, below = 0;
  int n = 0, missed = 0, phantom = 0;
  for (int k = 0; n < ncase && k < 20 * ncase; k++) {
    double qa[4], qb[4], u[3], pos[3] = {0, 0, 0}, want;
    if (mode == POSE_CROSSED) { /* a along x, b across it at 17-90 degrees, above it */
      crossed_quat(0, cu_uniform(0, 2 * M_PI), qa);
      crossed_quat(cu_uniform(0.3, 0.5 * M_PI), cu_uniform(0, 2 * M_PI), qb);
      u[0] = cu_uniform(-0.3, 0.3), u[1] = cu_uniform(-0.3, 0.3), u[2] = 1;
      double un = sqrt(u[0] * u[0] + u[1] * u[1] + 1);
      for (int j = 0; j < 3; j++) u[j] /= un;
      want = cu_uniform(5e-5, 2e-3);
    } else {
      cu_randQuat(qa), cu_randQuat(qb), cu_randDir(u);
      want = cu_uniform(0.002, 0.05);
    }
    cu_pose(m, d, a, pos, qa);

    /* touching distance along u by bisection (libccd's GJK), then push in */
    double lo = 0, hi = 10;
    khzColShape sh0, sh1;
    ccd_obj o0 = {&sh0}, o1 = {&sh1};
    cu_pair p;
    for (int it = 0; it < 60; it++) {
      double mid = 0.5 * (lo + hi), x[3] = {mid * u[0], mid * u[1], mid * u[2]};
      cu_pose(m, d, b, x, qb);
      khz_kinematics(m, d);
      khz_collisionFrames(m, d, p.frame, p.aabb);
      khz_shape_make(m, 0, p.frame, &sh0);
      khz_shape_make(m, 1, p.frame + 12, &sh1);
      if (ccdGJKIntersect(&o0, &o1, &ccd))
        lo = mid;
      else
        hi = mid;
    }
    /* first a little apart (1 um to 0.1 x the depth below): no contact, the
     * points search and rims_convex's candidate axes agreeing */
    double gap = 1e-6 + 0.1 * want, y[3] = {(hi + gap) * u[0], (hi + gap) * u[1], (hi + gap) * u[2]};
    cu_pose(m, d, b, y, qb);
    phantom += cu_collidePair(m, d, 0, 1, &p) != 0;
    double x[3] = {(hi - want) * u[0], (hi - want) * u[1], (hi - want) * u[2]};
    cu_pose(m, d, b, x, qb);
    int hit = cu_collidePair(m, d, 0, 1, &p);
    if (!hit && mode == POSE_CROSSED) { /* they overlap by construction: a contact missed */
      missed++;
      continue;
    }
    if (!hit) continue;
    khz_shape_make(m, 0, p.frame, &sh0);
    khz_shape_make(m, 1, p.frame + 12, &sh1);
    ccd_real_t depth;
    ccd_vec3_t dir, cpos;
    if (ccdGJKPenetration(&o0, &o1, &ccd, &depth, &dir, &cpos) != 0) continue;
    double ours = cu_maxDepth(&p.out), err = fabs(ours - depth);
    /* EPA's direction moves geom 1 out of geom 0; ours points toward geom 0 */
    double dn = dir.v[0] * p.out.normal[0] + dir.v[1] * p.out.normal[1] + dir.v[2] * p.out.normal[2];
    if (mode == POSE_CROSSED) {
      /* exact: the radii less the distance between the axes (the closest
       * points of the axes lie inside both lengths); EPA's polytope of the
       * round sides is a few micrometres short of it here */
      double za[3] = {sh0.rot[2], sh0.rot[5], sh0.rot[8]}, zb[3] = {sh1.rot[2], sh1.rot[5], sh1.rot[8]};
      double c[3] = {za[1] * zb[2] - za[2] * zb[1], za[2] * zb[0] - za[0] * zb[2],
                     za[0] * zb[1] - za[1] * zb[0]};
      double cn = sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]), dist = 0;
      for (int j = 0; j < 3; j++) dist += (sh1.pos[j] - sh0.pos[j]) * c[j] / cn;
      double exact = sh0.size[0] + sh1.size[0] - fabs(dist);
      err = fabs(ours - exact); /* the figures below are against the exact depth */
      depth = exact;
    }
    worst = fmax(worst, err / depth);
    sum += err / depth;
    worstn = fmax(worstn, 1 + dn);
    below = fmax(below, (depth - ours) / depth);
    n++;
  }
  const char *ref = mode == POSE_CROSSED ? "exact" : "EPA";
  printf("%-16s %4d poses: |ours - %s| / %s mean %.1e max %.1e; %s above ours by at most "
         "%.1e; normals (EPA): max 1 - cos %.1e; missed %d\n",
         name, n, ref, ref, sum / n, worst, ref, below, worstn, missed);
  ENSURE_MSG(missed == 0, "%s: %d overlapping poses reported apart", name, missed);
  ENSURE_MSG(phantom == 0, "%s: %d poses apart reported in contact", name, phantom);
  ENSURE(n >= ncase * 9 / 10);
  ENSURE_MSG(worst <= tol_rel, "%s: worst relative difference %g", name, worst);
  ENSURE_MSG(worstn <= 10 * tol_rel, "%s: normals differ by 1 - cos = %g", name, worstn);
  /* EPA refines a polytope inside the Minkowski difference: on smooth shapes
   * it can only underestimate the exact depth (below_tol: how far our search
   * for a cylinder's normal and deepest points may stop short of it) */
  ENSURE_MSG(below <= below_tol, "%s: EPA deeper than ours by %g (relative)", name, below);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

static void test_libccd(void) {
  double box[3] = {0.5, 0.3, 0.2}, box2[3] = {0.4, 0.4, 0.1}, sph[3] = {0.3, 0, 0},
         cap[3] = {0.1, 0.3, 0}, cap2[3] = {0.15, 0.2, 0};
  /* polytopes: EPA is exact up to its tolerance (1e-10 here), and so is eq. 4
   * with the edge-edge axes in shallow contact; smooth shapes: ours is the
   * exact closest-point formula, EPA approximates the round surface by the
   * polytope it refines, about 1e-3 relative after 1000 iterations */
  agreement("box-box", KHZ_GEOM_BOX, box, KHZ_GEOM_BOX, box2, 0, POSE_RANDOM, 300, 1e-9, 1e-9);
  agreement("box-sphere", KHZ_GEOM_BOX, box, KHZ_GEOM_SPHERE, sph, 0, POSE_RANDOM, 300, 1e-2, 1e-9);
  agreement("capsule-capsule", KHZ_GEOM_CAPSULE, cap, KHZ_GEOM_CAPSULE, cap2, 0, POSE_RANDOM, 300, 1e-2, 1e-9);
  agreement("box-convex mesh", KHZ_GEOM_BOX, box, KHZ_GEOM_MESH, box2, 1, POSE_RANDOM, 300, 1e-9, 1e-9);
  /* cylinders: the rim and the side are curved edges and faces; the normal
   * comes from the exact least overlap for a box and for two cylinders
   * (narrowphase.c, exact_normal) */
  double cyl[3] = {0.08, 0.1, 0}, cyl2[3] = {0.1, 0.06, 0};
  agreement("box-cylinder", KHZ_GEOM_BOX, box, KHZ_GEOM_CYLINDER, cyl, 0, POSE_RANDOM, 300, 1e-2, 1e-5);
  agreement("cylinder-cylinder", KHZ_GEOM_CYLINDER, cyl2, KHZ_GEOM_CYLINDER, cyl, 0, POSE_RANDOM, 300,
            1e-2, 1e-5);
  /* two long cylinders lying across each other, shallow: the sides meet
   * between the rim samples and the generator edges (a pile's cylinder lost
   * such a 0.4 mm contact for steps at a time); against the exact depth */
  double rod[3] = {0.05, 0.2, 0}, rod2[3] = {0.04, 0.15, 0};
  agreement("crossed cylinders", KHZ_GEOM_CYLINDER, rod, KHZ_GEOM_CYLINDER, rod2, 0, POSE_CROSSED,
            300, 1e-6, 1e-6);
}

/* A at the origin with orientation qa, B at pos with qb; the pair's frames
 * and both shapes in p, sh0, sh1 (geoms 0 and 1) */
static void pose_shapes(const khzModel *m, khzData *d, int ba, const double qa[4], int bb, const double pos[3],
                        const double qb[4], cu_pair *p, khzColShape *sh0, khzColShape *sh1) {
  cu_pose(m, d, ba, (double[3]){0, 0, 0}, qa);
  cu_pose(m, d, bb, pos, qb);
  khz_kinematics(m, d);
  khz_collisionFrames(m, d, p->frame, p->aabb);
  khz_shape_make(m, 0, p->frame, sh0);
  khz_shape_make(m, 1, p->frame + 12, sh1);
}

/* The exact least overlap (narrowphase.c, exact_normal: a box against a
 * cylinder, two cylinders) against the pattern search it replaced, both from
 * the same candidate axes, over random poses and the poses where the search
 * crawled (a cylinder standing tilted on the top face or cap of A near its
 * edge or rim, its normal near the axis): never above the search's overlap,
 * and never below libccd's EPA (which refines a polytope inside the
 * Minkowski difference, so it can only fall short of the exact depth). */
static void exact_vs_search(const char *name, int ga, const double sa[3], int gb, const double sb[3],
                            double far) {
  khzSpec *s = khz_spec_new();
  int ba = cu_body(s, "a"), bb = cu_body(s, "b");
  cu_geom(s, ba, ga, sa[0], sa[1], sa[2]);
  cu_geom(s, bb, gb, sb[0], sb[1], sb[2]);
  khzModel *m = cu_compile(s);
  khzData *d = khz_makeData(m, 0);
  ccd_t ccd = ccd_oracle();
  /* A's top (a box's face, a cylinder's cap) and its half-extents across */
  double top = ga == KHZ_GEOM_BOX ? sa[2] : sa[1], wx = sa[0], wy = ga == KHZ_GEOM_BOX ? sa[1] : sa[0];
  /* B standing tilted: its centre's height above its lowest point */
  double bh = gb == KHZ_GEOM_BOX ? sb[2] : sb[1], br = gb == KHZ_GEOM_BOX ? sb[0] : sb[0];
  int n = 0, better = 0, apart_agree = 0, napart = 0;
  double worse = 0, gain = 0, epa_over = 0, epa_short = 0, epa_dir = -1, ts = 0, te = 0;
  double overlapping_diff = 0;
  for (int k = 0; k < 3000; k++) {
    double qa[4] = {1, 0, 0, 0}, qb[4], pos[3];
    int mode = k % 3;
    if (mode == 0) { /* random */
      cu_randQuat(qa), cu_randQuat(qb), cu_randDir(pos);
      double r = cu_uniform(0.1, far);
      for (int j = 0; j < 3; j++) pos[j] *= r;
    } else { /* on A's top, the axis tilted from its normal, near an edge, corner or rim */
      double tilt = mode == 1 ? cu_uniform(0, 0.05) : cu_uniform(0.3, 1.4), az = cu_uniform(0, 2 * M_PI);
      cu_axisQuat(qb, cos(az), sin(az), 0, tilt);
      double sunk = cu_uniform(1e-4, 5e-3);
      pos[0] = cu_uniform(-wx - 0.05, wx + 0.05);
      pos[1] = cu_uniform(-wy - 0.05, wy + 0.05);
      pos[2] = top + bh * cos(tilt) + br * sin(tilt) - sunk;
    }
    cu_pair p;
    khzColShape sh0, sh1;
    pose_shapes(m, d, ba, qa, bb, pos, qb, &p, &sh0, &sh1);
    for (int side = 0; side < 2; side++) { /* both orders: geom 0 as A, then as B */
      const khzColShape *A = side ? &sh1 : &sh0, *B = side ? &sh0 : &sh1;
      double ns_[3], ne[3], t0 = cu_now();
      double fs = khz_col_leastOverlap(A, B, 0, ns_);
      double t1 = cu_now();
      double fe = khz_col_leastOverlap(A, B, 1, ne);
      ts += t1 - t0, te += cu_now() - t1;
      ccd_obj o0 = {A}, o1 = {B};
      int hit = ccdGJKIntersect(&o0, &o1, &ccd);
      if (!hit) {
        napart++;
        apart_agree += !(fe > 1e-9);
        continue;
      }
      if (!(fs > 0)) continue;
      n++;
      /* as eq. 4 calls it for shapes that hold each other's points: the
       * same least overlap, found with fewer candidates */
      double no[3];
      overlapping_diff = fmax(overlapping_diff, fabs(khz_col_leastOverlap(A, B, 2, no) - fe));
      worse = fmax(worse, fe - fs);
      if (fe < fs - 1e-9) better++, gain = fmax(gain, fs - fe);
      ccd_real_t depth;
      ccd_vec3_t dir, cpos;
      if (ccdGJKPenetration(&o0, &o1, &ccd, &depth, &dir, &cpos) != 0) continue;
      epa_over = fmax(epa_over, depth - fe);
      epa_short = fmax(epa_short, fe - depth);
      /* the overlap along EPA's direction (which moves B out of A, against
       * ours): an upper bound on the depth like every direction's */
      double ue[3] = {-dir.v[0], -dir.v[1], -dir.v[2]};
      double m_[3] = {-ue[0], -ue[1], -ue[2]};
      double g_epa = khz_shape_h(B, ue) + khz_shape_h(A, m_);
      epa_dir = fmax(epa_dir, fe - g_epa);
    }
  }
  printf("%s exact: %d overlapping poses, exact above the search by at most %.1e m, below it "
         "by > 1 nm in %d (up to %.2e m); EPA's depth above exact by at most %.1e m, below by "
         "%.1e m; the overlap along EPA's direction below exact by at most %.1e m; %d of %d "
         "apart poses apart; time search %.1f ms, exact %.1f ms; as for overlapping shapes: "
         "differs by at most %.1e m\n",
         name, n, worse, better, gain, epa_over, epa_short, epa_dir, apart_agree, napart, 1e3 * ts,
         1e3 * te, overlapping_diff);
  ENSURE(n >= 1000);
  ENSURE_MSG(apart_agree == napart, "%s: %d of %d poses apart found overlapping", name,
             napart - apart_agree, napart);
  ENSURE_MSG(worse <= 1e-12, "%s: the exact form is above the search by %g m", name, worse);
  ENSURE_MSG(epa_over <= 1e-9, "%s: EPA deeper than the exact form by %g m", name, epa_over);
  ENSURE_MSG(epa_dir <= 1e-12, "%s: the overlap along EPA's direction is below the exact form's by %g m",
             name, epa_dir);
  ENSURE_MSG(epa_short <= 1e-4, "%s: EPA short of the exact form by %g m", name, epa_short);
  ENSURE_MSG(overlapping_diff <= 1e-15, "%s: the overlapping shapes' exact form differs by %g m", name,
             overlapping_diff);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

static void test_exact_least_overlap(void) {
  double box[3] = {0.5, 0.3, 0.2}, cyl[3] = {0.08, 0.1, 0}, wheel[3] = {0.11, 0.06, 0};
  exact_vs_search("box-cylinder", KHZ_GEOM_BOX, box, KHZ_GEOM_CYLINDER, cyl, 0.75);
  /* two of the pile's sizes: a wheel (r > h) and a can (r < h) */
  exact_vs_search("cylinder-cylinder", KHZ_GEOM_CYLINDER, wheel, KHZ_GEOM_CYLINDER, cyl, 0.3);
}

/* The exact least overlap skips a crease circle, or (for shapes known to
 * overlap) a pair of rims, when a lower bound on every candidate it could
 * give lies above the least overlap found so far (circle_above: -|d across
 * w| + the shapes' inradii along the circle; the rims: each rim's height
 * over the other's plane). Such a skip must never change the answer: the
 * least overlap and its direction, bit for bit, against the same call
 * scoring every circle and every pair of rims (KHZ_COL_SCORE_ALL), both ways
 * (until apart, and as eq. 4 calls it), both orders, over the poses of a
 * pile, touching or up to 2 mm apart: random, stacked nearly coaxially
 * (where three of the four pairs of rims lie a height apart), lying across
 * the other's top, tilted on it near its rim, and side by side.
 * Fails with a bound that overstates (tried: the slack's sign turned, or
 * the rims' bound without its r |a x b| term).
 * With flag KHZ_COL_EXACT_SLOPES the same poses check the arc ends' slope
 * signs taken without slope_at (slope_sign, from the creases' cos and sin)
 * against slope_at at every end, bit for bit (test_exact_slope_signs). */
static void exact_pruned(const char *name, int ga, const double sa[3], int gb, const double sb[3], int *nover,
                         int flag) {
  khzSpec *s = khz_spec_new();
  int ba = cu_body(s, "a"), bb = cu_body(s, "b");
  cu_geom(s, ba, ga, sa[0], sa[1], sa[2]);
  cu_geom(s, bb, gb, sb[0], sb[1], sb[2]);
  khzModel *m = cu_compile(s);
  khzData *d = khz_makeData(m, 0);
  double top = ga == KHZ_GEOM_BOX ? sa[2] : sa[1], wx = sa[0], wy = ga == KHZ_GEOM_BOX ? sa[1] : sa[0];
  double bh = gb == KHZ_GEOM_BOX ? sb[2] : sb[1], br = sb[0];
  int bad = 0, ncall = 0;
  for (int k = 0; k < 2000; k++) {
    double qa[4] = {1, 0, 0, 0}, qb[4], pos[3];
    int mode = k % 5;
    double sunk = cu_uniform(-2e-3, 3e-3), az = cu_uniform(0, 2 * M_PI);
    if (mode == 0) { /* random */
      cu_randQuat(qa), cu_randQuat(qb), cu_randDir(pos);
      double r = cu_uniform(0.05, 0.4);
      for (int j = 0; j < 3; j++) pos[j] *= r;
    } else if (mode == 1) { /* stacked, nearly coaxial */
      double tilt = cu_uniform(0, 0.03);
      cu_axisQuat(qb, cos(az), sin(az), 0, tilt);
      pos[0] = cu_uniform(-0.5 * wx, 0.5 * wx), pos[1] = cu_uniform(-0.5 * wy, 0.5 * wy);
      pos[2] = top + bh * cos(tilt) + br * sin(tilt) - sunk;
    } else if (mode == 2) { /* lying across A's top */
      double tilt = 0.5 * M_PI + cu_uniform(-0.03, 0.03);
      cu_axisQuat(qb, cos(az), sin(az), 0, tilt);
      pos[0] = cu_uniform(-wx, wx), pos[1] = cu_uniform(-wy, wy);
      pos[2] = top + bh * fabs(cos(tilt)) + br * sin(tilt) - sunk;
    } else if (mode == 4) { /* tilted on A's top near its edge or rim (rim against rim) */
      double tilt = cu_uniform(0.3, 1.4);
      cu_axisQuat(qb, cos(az), sin(az), 0, tilt);
      pos[0] = cu_uniform(-wx - 0.05, wx + 0.05), pos[1] = cu_uniform(-wy - 0.05, wy + 0.05);
      pos[2] = top + bh * cos(tilt) + br * sin(tilt) - sunk;
    } else { /* side by side, the axes nearly parallel */
      cu_axisQuat(qb, cos(az), sin(az), 0, cu_uniform(0, 0.03));
      pos[0] = (wx + br - sunk) * cos(az), pos[1] = (wx + br - sunk) * sin(az);
      pos[2] = cu_uniform(-top, top);
    }
    cu_pair p;
    khzColShape sh0, sh1;
    pose_shapes(m, d, ba, qa, bb, pos, qb, &p, &sh0, &sh1);
    for (int side = 0; side < 2; side++)
      for (int exact = 1; exact <= 2; exact++) {
        const khzColShape *A = side ? &sh1 : &sh0, *B = side ? &sh0 : &sh1;
        double np_[3], na[3];
        double fp = khz_col_leastOverlap(A, B, exact, np_);
        double fa = khz_col_leastOverlap(A, B, exact | flag, na);
        ncall++;
        *nover += fa > 0;
        if (memcmp(&fp, &fa, sizeof fp) || memcmp(np_, na, sizeof na)) {
          if (bad++ < 3)
            printf("%s pose %d (mode %d, order %d, exact %d): as run %.17g (%g %g %g), flag %d %.17g (%g %g %g)\n",
                   name, k, mode, side, exact, fp, np_[0], np_[1], np_[2], flag, fa, na[0], na[1], na[2]);
        }
      }
  }
  printf("%s: %d of %d least overlaps differ from those with flag %d (%s)\n", name, bad, ncall, flag,
         flag == KHZ_COL_SCORE_ALL ? "every candidate scored" : "slope_at at every arc end");
  ENSURE_MSG(bad == 0, "%s: %d of %d least overlaps differ with flag %d", name, bad, ncall, flag);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

static void exact_pruned_all(int flag) {
  const double box[3] = {0.12, 0.08, 0.05}, wheel[3] = {0.11, 0.06, 0}, can[3] = {0.08, 0.1, 0};
  int nover = 0;
  exact_pruned("box-cylinder", KHZ_GEOM_BOX, box, KHZ_GEOM_CYLINDER, can, &nover, flag);
  exact_pruned("cylinder-box", KHZ_GEOM_CYLINDER, wheel, KHZ_GEOM_BOX, box, &nover, flag);
  exact_pruned("cylinder-cylinder", KHZ_GEOM_CYLINDER, wheel, KHZ_GEOM_CYLINDER, can, &nover, flag);
  exact_pruned("can-can", KHZ_GEOM_CYLINDER, can, KHZ_GEOM_CYLINDER, can, &nover, flag);
  ENSURE_MSG(nover > 8000, "only %d overlapping calls", nover);
}

static void test_exact_pruned(void) { exact_pruned_all(KHZ_COL_SCORE_ALL); }

/* exact_circle decides which arcs hold a minimum by the signs of g's slope
 * at their ends, taken where certain from the creases' cos and sin without
 * slope_at (slope_sign), and an arc's far end only when its start's slope
 * is negative (arc_end); the least overlap must be the one with slope_at at
 * both ends of every arc, bit for bit, over exact_pruned's poses. Fails
 * with a wrong cos or sin of an arc end (tried: the pole splits' turn by sc
 * taken the other way; the error bound taken as 0 with the kink ends' cos
 * and sin those of the crease itself) or a wrong far end (tried: the far
 * end's sign taken at the arc's own start break: 2188-3452 of 8000 differ). */
static void test_exact_slope_signs(void) { exact_pruned_all(KHZ_COL_EXACT_SLOPES); }

/* A cylinder's rim that the narrow phase skips (rims_outside: its circle
 * farther from the other shape's bounds than its radius and a margin) must
 * have every vertex outside those bounds (as in_bounds widens them) and
 * every edge missing them (segment_in_bounds' slab test), so that skipping
 * it changes nothing. Checked here by its own geometry: the 16 samples
 * turned into the other's frame, each chord clipped against the widened
 * box, over random poses of a can and a wheel near a box and near another
 * cylinder (standing on it, lying across it, tilted, anywhere within 0.4
 * m). Fails with the rim's radius left out of the test (the circle's
 * centre alone against the bounds). */
static int segment_meets_box(const double a[3], const double b[3], const double lo[3], const double hi[3]) {
  double t0 = 0, t1 = 1;
  for (int k = 0; k < 3; k++) {
    double d = b[k] - a[k];
    if (fabs(d) < 1e-300) {
      if (a[k] < lo[k] || a[k] > hi[k]) return 0;
      continue;
    }
    double u = (lo[k] - a[k]) / d, v = (hi[k] - a[k]) / d;
    if (u > v) {
      double w = u;
      u = v, v = w;
    }
    t0 = fmax(t0, u), t1 = fmin(t1, v);
    if (t0 > t1) return 0;
  }
  return 1;
}

static void rims_outside_case(const char *name, int ga, const double sa[3], const double sb[3], int *nskip,
                              int *nkept, int *bad) {
  khzSpec *s = khz_spec_new();
  int ba = cu_body(s, "a"), bb = cu_body(s, "b");
  cu_geom(s, ba, ga, sa[0], sa[1], sa[2]);
  cu_geom(s, bb, KHZ_GEOM_CYLINDER, sb[0], sb[1], sb[2]);
  khzModel *m = cu_compile(s);
  khzData *d = khz_makeData(m, 0);
  double top = ga == KHZ_GEOM_BOX ? sa[2] : sa[1], scratch[6 * 2 * KHZ_CYL_RIM];
  for (int k = 0; k < 3000; k++) {
    double qa[4] = {1, 0, 0, 0}, qb[4], pos[3], az = cu_uniform(0, 2 * M_PI);
    int mode = k % 3;
    if (mode == 0) { /* anywhere near */
      cu_randQuat(qa), cu_randQuat(qb), cu_randDir(pos);
      double r = cu_uniform(0.02, 0.4);
      for (int j = 0; j < 3; j++) pos[j] *= r;
    } else { /* standing on A's top, or tilted up to lying across it */
      double tilt = mode == 1 ? cu_uniform(0, 0.05) : cu_uniform(0.05, 0.5 * M_PI);
      cu_axisQuat(qb, cos(az), sin(az), 0, tilt);
      pos[0] = cu_uniform(-0.1, 0.1), pos[1] = cu_uniform(-0.1, 0.1);
      pos[2] = top + sb[1] * cos(tilt) + sb[0] * sin(tilt) + cu_uniform(-3e-3, 3e-3);
    }
    cu_pair p;
    khzColShape sh0, sh1;
    pose_shapes(m, d, ba, qa, bb, pos, qb, &p, &sh0, &sh1);
    int out = khz_col_rimsOutside(&sh1, &sh0, scratch, 2 * KHZ_CYL_RIM);
    double tol = 1e-9 * sh0.scale, lo[3], hi[3];
    for (int j = 0; j < 3; j++) lo[j] = sh0.lo[j] - tol, hi[j] = sh0.hi[j] + tol;
    for (int rim = 0; rim < 2; rim++) {
      if (!(out >> rim & 1)) {
        ++*nkept;
        continue;
      }
      ++*nskip;
      double l[KHZ_CYL_RIM][3];
      for (int i = 0; i < KHZ_CYL_RIM; i++) {
        double v[3] = {sb[0] * khz_rim_cs[i][0], sb[0] * khz_rim_cs[i][1], rim ? sb[1] : -sb[1]}, w[3];
        khz_shape_toWorld(&sh1, v, w);
        khz_shape_toLocal(&sh0, w, l[i]);
      }
      for (int i = 0; i < KHZ_CYL_RIM; i++) {
        int inside = 1;
        for (int j = 0; j < 3; j++) inside &= l[i][j] >= lo[j] && l[i][j] <= hi[j];
        if (inside || segment_meets_box(l[i], l[(i + 1) % KHZ_CYL_RIM], lo, hi)) {
          if ((*bad)++ < 3) printf("%s pose %d (mode %d): rim %d skipped, its sample %d or edge meets the bounds\n",
                                   name, k, mode, rim, i);
          break;
        }
      }
    }
  }
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

/* The vertex cache (vcache_init) forms each product of a box's or a
 * cylinder's vertex coordinates once (vertex_frame); its vertices in the
 * world and in the other's frame must be khz_shape_vertLocal's turned by
 * khz_shape_toWorld and by the relative pose, R_o^T (R_s x + p_s - p_o)
 * with R_o^T R_s and R_o^T (p_s - p_o) summed as before, bit for bit, for
 * boxes and cylinders in random poses. Fails when a sum is associated
 * otherwise (tried: a rim vertex's (xy + t) + z). */
static void vertex_cache_case(const char *name, int ga, const double sa[3], int gb, const double sb[3], int *nvert,
                              int *bad) {
  khzSpec *s = khz_spec_new();
  int ba = cu_body(s, "a"), bb = cu_body(s, "b");
  cu_geom(s, ba, ga, sa[0], sa[1], sa[2]);
  cu_geom(s, bb, gb, sb[0], sb[1], sb[2]);
  khzModel *m = cu_compile(s);
  khzData *d = khz_makeData(m, 0);
  enum { MAXV = 64 };
  double scratch[6 * MAXV];
  for (int k = 0; k < 3000; k++) {
    double qa[4], qb[4], pos[3];
    cu_randQuat(qa), cu_randQuat(qb), cu_randDir(pos);
    khzu_scl3(pos, pos, cu_uniform(0, 0.4));
    cu_pair p;
    khzColShape sh[2];
    pose_shapes(m, d, ba, qa, bb, pos, qb, &p, &sh[0], &sh[1]);
    for (int side = 0; side < 2; side++) {
      const khzColShape *S = &sh[side], *O = &sh[1 - side];
      int n = khz_col_vertexCache(S, O, scratch, MAXV);
      ENSURE_MSG(n == khz_shape_nvert(S), "%s: %d vertices cached of %d", name, n, khz_shape_nvert(S));
      double R[9], t[3], dp[3];
      const double *Rs = S->rot, *Ro = O->rot;
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) R[3 * i + j] = Ro[i] * Rs[j] + Ro[3 + i] * Rs[3 + j] + Ro[6 + i] * Rs[6 + j];
      khzu_sub3(dp, S->pos, O->pos);
      for (int i = 0; i < 3; i++) t[i] = Ro[i] * dp[0] + Ro[3 + i] * dp[1] + Ro[6 + i] * dp[2];
      for (int i = 0; i < n; i++) {
        double x[3], w[3], l[3];
        khz_shape_vertLocal(S, i, x);
        khz_shape_toWorld(S, x, w);
        for (int r = 0; r < 3; r++) l[r] = R[3 * r] * x[0] + R[3 * r + 1] * x[1] + R[3 * r + 2] * x[2] + t[r];
        (*nvert)++;
        if (memcmp(w, scratch + 3 * i, sizeof w) || memcmp(l, scratch + 3 * MAXV + 3 * i, sizeof l)) {
          if ((*bad)++ < 3) printf("%s pose %d side %d vertex %d differs\n", name, k, side, i);
        }
      }
    }
  }
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

static void test_vertex_cache(void) {
  const double box[3] = {0.12, 0.08, 0.05}, wheel[3] = {0.11, 0.06, 0}, can[3] = {0.08, 0.1, 0};
  int nvert = 0, bad = 0;
  vertex_cache_case("box-can", KHZ_GEOM_BOX, box, KHZ_GEOM_CYLINDER, can, &nvert, &bad);
  vertex_cache_case("wheel-box", KHZ_GEOM_CYLINDER, wheel, KHZ_GEOM_BOX, box, &nvert, &bad);
  vertex_cache_case("can-wheel", KHZ_GEOM_CYLINDER, can, KHZ_GEOM_CYLINDER, wheel, &nvert, &bad);
  vertex_cache_case("box-box", KHZ_GEOM_BOX, box, KHZ_GEOM_BOX, box, &nvert, &bad);
  printf("vertex cache: %d of %d vertices differ from vertLocal + toWorld and the relative pose\n", bad, nvert);
  ENSURE_MSG(bad == 0, "%d of %d cached vertices differ", bad, nvert);
}

static void test_rims_outside(void) {
  const double box[3] = {0.12, 0.08, 0.05}, wheel[3] = {0.11, 0.06, 0}, can[3] = {0.08, 0.1, 0};
  int nskip = 0, nkept = 0, bad = 0;
  rims_outside_case("box-can", KHZ_GEOM_BOX, box, can, &nskip, &nkept, &bad);
  rims_outside_case("box-wheel", KHZ_GEOM_BOX, box, wheel, &nskip, &nkept, &bad);
  rims_outside_case("can-wheel", KHZ_GEOM_CYLINDER, can, wheel, &nskip, &nkept, &bad);
  rims_outside_case("wheel-can", KHZ_GEOM_CYLINDER, wheel, can, &nskip, &nkept, &bad);
  printf("rims outside: %d rims skipped, %d kept, %d skipped rims meet the bounds\n", nskip, nkept, bad);
  ENSURE_MSG(bad == 0, "%d skipped rims meet the other's bounds", bad);
  ENSURE_MSG(nskip > 2000 && nkept > 2000, "rims skipped %d, kept %d: the poses do not cover both", nskip, nkept);
}

/* circle_inradius, the exact least overlap's bound on a box's or a
 * cylinder's support function h(n) over a great circle (the unit n normal to
 * w): a lower bound (never above h's least on the circle) and the least
 * itself (the least of h on a circle lies at a crease for a box, at the
 * circle's point nearest or farthest from the axis for a cylinder), against
 * khz_shape_h minimised over the circle by 4096 samples and a golden-section
 * refinement of the best: random directions, directions within 1e-9 to 1e-2
 * rad of an axis, and the axes themselves. Tight to 1 nm, and to the
 * largest half size x 1e-6 within 1e-6 rad of a box's axis (there the bound
 * is the other two half sizes' least, leaving out the axis's own term).
 * Fails with the former bounds (the least half size; min(h, r)), which are
 * far below h's least. */
static double circle_least_h(const khzColShape *s, const double w[3]) {
  double p[3], q[3], best = DBL_MAX, at = 0;
  khzu_orthogonal(p, w);
  khzu_cross(q, w, p);
  for (int pass = 0; pass < 2; pass++) {
    double lo = pass ? at - 2 * M_PI / 4096 : 0, hi = pass ? at + 2 * M_PI / 4096 : 2 * M_PI;
    int n = pass ? 200 : 4096;
    for (int i = 0; i < n; i++) { /* samples, then golden section between the best's neighbours */
      double phi;
      if (!pass) phi = lo + (hi - lo) * i / n;
      else {
        double a = hi - 0.6180339887498949 * (hi - lo), b = lo + 0.6180339887498949 * (hi - lo), na[3], nb[3];
        for (int j = 0; j < 3; j++) na[j] = cos(a) * p[j] + sin(a) * q[j], nb[j] = cos(b) * p[j] + sin(b) * q[j];
        if (khz_shape_h(s, na) < khz_shape_h(s, nb)) hi = b;
        else lo = a;
        phi = 0.5 * (lo + hi);
      }
      double n3[3];
      for (int j = 0; j < 3; j++) n3[j] = cos(phi) * p[j] + sin(phi) * q[j];
      double h = khz_shape_h(s, n3);
      if (h < best) best = h, at = pass ? at : phi;
    }
  }
  return best;
}

static void test_circle_inradius(void) {
  int nbad = 0, nloose = 0, n = 0;
  double worst_over = 0, worst_under = 0;
  for (int k = 0; k < 3000; k++) {
    double size[3] = {cu_uniform(0.01, 0.3), cu_uniform(0.01, 0.3), cu_uniform(0.01, 0.3)}, q[4], w[3];
    khzColShape s;
    memset(&s, 0, sizeof s);
    s.shape = k % 2 ? KHZ_SHAPE_CYLINDER : KHZ_SHAPE_BOX;
    s.size = size;
    cu_randQuat(q);
    khzu_quat2mat(s.rot, q);
    int mode = (k / 2) % 3, axis = k % 3;
    double ax[3] = {s.rot[axis], s.rot[3 + axis], s.rot[6 + axis]};
    if (s.shape == KHZ_SHAPE_CYLINDER) ax[0] = s.rot[2], ax[1] = s.rot[5], ax[2] = s.rot[8];
    if (mode == 0) {
      cu_randDir(w);
    } else { /* an axis, or within 1e-9 to 1e-2 rad of one */
      double tilt = mode == 1 ? 0 : pow(10, cu_uniform(-9, -2)), t[3];
      cu_randDir(t);
      khzu_addScl3(t, t, ax, -khzu_dot3(t, ax));
      khzu_normalize3(t);
      for (int j = 0; j < 3; j++) w[j] = cos(tilt) * ax[j] + sin(tilt) * t[j];
    }
    double bound = khz_col_circleInradius(&s, w), least = circle_least_h(&s, w);
    n++;
    worst_over = fmax(worst_over, bound - least);
    worst_under = fmax(worst_under, least - bound);
    if (bound > least + 1e-12) nbad++;
    double loose = 1e-9 + (s.shape == KHZ_SHAPE_BOX ? 1e-6 * fmax(size[0], fmax(size[1], size[2])) : 0);
    if (bound < least - loose) nloose++;
  }
  printf("circle inradius: %d shapes and circles, above h's least on the circle in %d (by at most %.1e m), "
         "below it by more than its tolerance in %d (at most %.1e m)\n", n, nbad, worst_over, nloose, worst_under);
  ENSURE_MSG(nbad == 0, "the circle's bound lies above h's least in %d of %d", nbad, n);
  ENSURE_MSG(nloose == 0, "the circle's bound lies below h's least by more than its tolerance in %d of %d", nloose, n);
}

/* plane_poly (the table's plane-box, plane-cylinder and plane-hull) against
 * the general poly_poly it stands in for: the same return, points (position,
 * sd, depth, weight, side, feature, in order) and normal, bit for bit, over
 * random poses of the plane and of the shape: straddling it, lying on a face
 * or an edge at exactly the height of its half size (vertices and edges on
 * the plane, where the inside tests and the clips are decided by their
 * operations to the last bit) and a little below or above. */
static void test_plane_fast_path(void) {
  khzSpec *s = khz_spec_new();
  cu_geom(s, 0, KHZ_GEOM_PLANE, 0, 0, 0);
  cu_geom(s, 0, KHZ_GEOM_BOX, 0.5, 0.3, 0.2);
  cu_geom(s, 0, KHZ_GEOM_CYLINDER, 0.11, 0.06, 0);
  cu_meshGeom(s, 0, cu_sphereMesh(s, "ball", 0.3, 5, 7), 1);
  khzModel *m = cu_compile(s);
  static cu_pair pa, pb;
  int ncase = 0, ncontact = 0, npoint = 0, bad = 0;
  for (int g = 1; g <= 3; g++)
    for (int k = 0; k < 3000; k++) {
      double fr[2][12], qp[4], qs[4], R[9];
      /* the plane: at the origin or anywhere, level or turned */
      cu_randQuat(qp);
      if (k % 3 == 0) qp[0] = 1, qp[1] = qp[2] = qp[3] = 0;
      khzu_quat2mat(fr[0] + 3, qp);
      for (int j = 0; j < 3; j++) fr[0][j] = k % 2 ? cu_uniform(-1, 1) : 0;
      /* the shape: any orientation, or a quarter turn about a plane axis
       * (lying on a face or, for a cylinder, its side) */
      cu_randQuat(qs);
      if (k % 4 == 1) cu_axisQuat(qs, 1, 0, 0, M_PI / 2 * (k / 4 % 4));
      if (k % 4 == 2) cu_axisQuat(qs, 0, 1, 0, M_PI / 2 * (k / 4 % 4));
      khzu_quat2mat(R, qs);
      khzu_mulMat3(fr[1] + 3, fr[0] + 3, R);
      /* its lowest point at -0.05 .. 0.01 along the plane's normal, or exactly on it */
      double z[3] = {fr[0][5], fr[0][8], fr[0][11]}, off[3] = {cu_uniform(-1, 1), cu_uniform(-1, 1), 0};
      khzColShape probe;
      khz_shape_make(m, g, fr[1], &probe);
      double lowest[3], mz[3] = {-z[0], -z[1], -z[2]};
      khz_shape_support(&probe, mz, lowest);
      double half = khzu_dot3(z, fr[1]) - khzu_dot3(z, lowest); /* centre above the lowest point */
      double h = k % 5 == 0 ? 0 : cu_uniform(-0.05, 0.01);
      for (int j = 0; j < 3; j++)
        fr[1][j] = fr[0][j] + (fr[0][3 + 3 * j] * off[0] + fr[0][4 + 3 * j] * off[1]) + z[j] * (half + h);
      khzColShape a, b;
      khz_shape_make(m, 0, fr[0], &a);
      khz_shape_make(m, g, fr[1], &b);
      pa.out = (khzColOut){pa.pt, 0, CU_CAP, 0, pa.work, KHZ_HULL_MAXVERT, {0, 0, 0}, {0, 0, 0}};
      pb.out = (khzColOut){pb.pt, 0, CU_CAP, 0, pb.work, KHZ_HULL_MAXVERT, {0, 0, 0}, {0, 0, 0}};
      int ra = khz_collideTable[KHZ_SHAPE_PLANE][b.shape](&a, &b, &pa.out);
      int rb = khz_col_polyPoly(&a, &b, &pb.out);
      int same = ra == rb && pa.out.npt == pb.out.npt && pa.out.overflow == pb.out.overflow &&
                 (!ra || !memcmp(pa.out.normal, pb.out.normal, sizeof pa.out.normal));
      for (int i = 0; same && i < pa.out.npt; i++) {
        const khzColPoint *x = pa.out.pt + i, *y = pb.out.pt + i;
        same = !memcmp(x->pos, y->pos, sizeof x->pos) && !memcmp(&x->sd, &y->sd, sizeof x->sd) &&
               !memcmp(&x->depth, &y->depth, sizeof x->depth) && !memcmp(&x->weight, &y->weight, sizeof x->weight) &&
               x->side == y->side && x->feature == y->feature;
      }
      if (!same && bad++ < 5)
        fprintf(stderr, "plane_poly != poly_poly: geom %d case %d (rc %d/%d, %d/%d points)\n", g, k, ra, rb,
                pa.out.npt, pb.out.npt);
      ncase++, ncontact += ra, npoint += pa.out.npt;
    }
  printf("plane_poly against poly_poly: %d poses, %d in contact, %d points, %d differ\n", ncase, ncontact, npoint,
         bad);
  ENSURE_MSG(bad == 0, "%d of %d plane cases differ from the general path", bad, ncase);
  /* the poses exercise contact: most cases touch, with points */
  ENSURE_MSG(ncontact > ncase / 2 && npoint > 4 * ncase / 2, "%d contacts, %d points in %d cases", ncontact,
             npoint, ncase);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

/* ------------------------------------------ temporal coherence, apart -- */

static int same_out(const khzColOut *a, const khzColOut *b, int ra, int rb) {
  int same = ra == rb && a->npt == b->npt && a->overflow == b->overflow &&
             (!ra || !memcmp(a->normal, b->normal, sizeof a->normal));
  for (int i = 0; same && i < a->npt; i++) {
    const khzColPoint *x = a->pt + i, *y = b->pt + i;
    same = !memcmp(x->pos, y->pos, sizeof x->pos) && !memcmp(&x->sd, &y->sd, sizeof x->sd) &&
           !memcmp(&x->depth, &y->depth, sizeof x->depth) && !memcmp(&x->weight, &y->weight, sizeof x->weight) &&
           x->side == y->side && x->feature == y->feature;
  }
  return same;
}

/* a small rotation by angle about a random axis, applied to frame rotation R */
static void turn_by(double R[9], double angle) {
  double ax[3], q[4], T[9], out[9];
  cu_randDir(ax);
  cu_axisQuat(q, ax[0], ax[1], ax[2], angle);
  khzu_quat2mat(T, q);
  khzu_mulMat3(out, T, R);
  memcpy(R, out, sizeof out);
}

/* khz_narrowphaseCoherent (a pair found apart tries the direction it was
 * apart along before the narrow phase) against khz_narrowphase on pose
 * sequences: shape B drifts towards A and back, turning, by 0.1-5 mm and up
 * to 0.03 rad a step, in and out of contact, and now and then jumps to
 * another pose (a restored state: the kept direction is stale). Every
 * call's return, points and normal must be the cold narrow phase's, bit for
 * bit, in both geom orders; the kept direction must also be used (skips).
 * Without the test of the kept direction (a pair once apart stays apart)
 * the sequences that come back into contact differ. */
static void coherent_pair(const char *name, khzSpec *s, int *nskip_all) {
  khzModel *m = cu_compile(s);
  static cu_pair pc, pw;
  double fr[24], Ra[9], Rb[9], q[4];
  khzColShape sa, sb;
  int nstep = 0, ncontact = 0, nskip = 0, bad = 0;
  for (int seq = 0; seq < 60; seq++) {
    int g0 = seq % 2, g1 = 1 - g0; /* both orders */
    cu_randQuat(q), khzu_quat2mat(Ra, q);
    cu_randQuat(q), khzu_quat2mat(Rb, q);
    for (int j = 0; j < 3; j++) fr[j] = cu_uniform(-1, 1);
    memcpy(fr + 3, Ra, sizeof Ra), memcpy(fr + 15, Rb, sizeof Rb);
    khz_shape_make(m, 0, fr, &sa);
    khz_shape_make(m, 1, fr + 12, &sb);
    double reach = sa.bradius + sb.bradius, dir[3], v[3], speed = cu_uniform(1e-4, 5e-3);
    cu_randDir(dir);
    for (int j = 0; j < 3; j++) fr[12 + j] = fr[j] + dir[j] * reach * cu_uniform(0.8, 1.3);
    double axis[3] = {0, 0, 0};
    int apart = 0;
    for (int t = 0; t < 300; t++) {
      /* towards A's centre with a sideways drift, back out when close */
      double to[3], w = cu_uniform(0, 0.03);
      for (int j = 0; j < 3; j++) to[j] = fr[j] - fr[12 + j];
      double dist = khzu_norm3(to);
      cu_randDir(v);
      for (int j = 0; j < 3; j++) v[j] = 0.3 * v[j] + to[j] / dist * ((t / 40) % 2 ? -1 : 1);
      for (int j = 0; j < 3; j++) fr[12 + j] += speed * v[j];
      turn_by(fr + 15, w);
      turn_by(fr + 3, 0.2 * w);
      if (t % 97 == 96) { /* a jump */
        cu_randQuat(q), khzu_quat2mat(fr + 15, q);
        cu_randDir(dir);
        for (int j = 0; j < 3; j++) fr[12 + j] = fr[j] + dir[j] * reach * cu_uniform(0.3, 1.2);
      }
      pc.out = (khzColOut){pc.pt, 0, CU_CAP, 0, pc.work, KHZ_HULL_MAXVERT, {0, 0, 0}, {0, 0, 0}};
      pw.out = (khzColOut){pw.pt, 0, CU_CAP, 0, pw.work, KHZ_HULL_MAXVERT, {0, 0, 0}, {0, 0, 0}};
      int rc = khz_narrowphase(m, g0, g1, fr, &pc.out);
      double before[3];
      memcpy(before, axis, sizeof before);
      int had = apart;
      int rw = khz_narrowphaseCoherent(m, g0, g1, fr, &pw.out, axis, &apart);
      nskip += had && apart && !memcmp(before, axis, sizeof before);
      if (!same_out(&pc.out, &pw.out, rc, rw) && bad++ < 5)
        fprintf(stderr, "%s: coherent != cold, sequence %d step %d (rc %d/%d, %d/%d points)\n", name, seq, t, rc,
                rw, pc.out.npt, pw.out.npt);
      nstep++, ncontact += rc;
    }
  }
  /* grazing: B moved straight towards A by a tenth of the coherence gap
   * (1e-6 of the pair's scale) a step through the pose where the cold
   * narrow phase first finds contact (bisected), from five gaps out to five
   * in: a kept direction whose test were looser than the gap skips the
   * first contacts */
  int ngraze = 0, graze_contact = 0;
  for (int seq = 0; seq < 40; seq++) {
    cu_randQuat(q), khzu_quat2mat(fr + 3, q);
    cu_randQuat(q), khzu_quat2mat(fr + 15, q);
    fr[0] = fr[1] = fr[2] = 0;
    khz_shape_make(m, 0, fr, &sa);
    khz_shape_make(m, 1, fr + 12, &sb);
    double dir[3], lo = 0, hi = 1.5 * (sa.bradius + sb.bradius), gap = 1e-6 * (sa.scale + sb.scale);
    cu_randDir(dir);
    for (int it = 0; it < 60; it++) { /* lo in contact, hi apart */
      double mid = 0.5 * (lo + hi);
      for (int j = 0; j < 3; j++) fr[12 + j] = dir[j] * mid;
      pc.out = (khzColOut){pc.pt, 0, CU_CAP, 0, pc.work, KHZ_HULL_MAXVERT, {0, 0, 0}, {0, 0, 0}};
      if (khz_narrowphase(m, 0, 1, fr, &pc.out))
        lo = mid;
      else
        hi = mid;
    }
    double axis[3] = {0, 0, 0};
    int apart = 0;
    for (int t = 0; t <= 100; t++) {
      double at = hi + 5 * gap - t * gap / 10;
      for (int j = 0; j < 3; j++) fr[12 + j] = dir[j] * at;
      pc.out = (khzColOut){pc.pt, 0, CU_CAP, 0, pc.work, KHZ_HULL_MAXVERT, {0, 0, 0}, {0, 0, 0}};
      pw.out = (khzColOut){pw.pt, 0, CU_CAP, 0, pw.work, KHZ_HULL_MAXVERT, {0, 0, 0}, {0, 0, 0}};
      int rc = khz_narrowphase(m, 0, 1, fr, &pc.out);
      int rw = khz_narrowphaseCoherent(m, 0, 1, fr, &pw.out, axis, &apart);
      if (!same_out(&pc.out, &pw.out, rc, rw) && bad++ < 5)
        fprintf(stderr, "%s: coherent != cold grazing, sequence %d step %d (rc %d/%d, %d/%d points)\n", name, seq,
                t, rc, rw, pc.out.npt, pw.out.npt);
      ngraze++, graze_contact += rc;
    }
  }
  printf("coherent %s: %d poses, %d in contact, %d skipped by the kept direction; grazing %d poses, %d in "
         "contact; %d differ\n",
         name, nstep, ncontact, nskip, ngraze, graze_contact, bad);
  ENSURE_MSG(graze_contact > ngraze / 4, "%s: %d of %d grazing poses in contact", name, graze_contact, ngraze);
  ENSURE_MSG(bad == 0, "%s: %d of %d coherent calls differ from the narrow phase", name, bad, nstep);
  ENSURE_MSG(ncontact > nstep / 10 && ncontact < nstep * 9 / 10, "%s: %d of %d poses in contact", name, ncontact,
             nstep);
  *nskip_all += nskip;
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

static void test_coherent_apart(void) {
  const double box[3] = {0.12, 0.08, 0.05}, wheel[3] = {0.11, 0.06, 0}, can[3] = {0.08, 0.1, 0},
               ball[3] = {0.07, 0, 0}, pill[3] = {0.04, 0.08, 0};
  struct {
    const char *name;
    khzGeomType ta;
    const double *sa;
    khzGeomType tb;
    const double *sb;
  } cases[] = {
      {"box-cylinder", KHZ_GEOM_BOX, box, KHZ_GEOM_CYLINDER, can},
      {"cylinder-cylinder", KHZ_GEOM_CYLINDER, wheel, KHZ_GEOM_CYLINDER, can},
      {"box-box", KHZ_GEOM_BOX, box, KHZ_GEOM_BOX, box},
      {"sphere-box", KHZ_GEOM_SPHERE, ball, KHZ_GEOM_BOX, box},
      {"sphere-cylinder", KHZ_GEOM_SPHERE, ball, KHZ_GEOM_CYLINDER, wheel},
      {"capsule-box", KHZ_GEOM_CAPSULE, pill, KHZ_GEOM_BOX, box},
      {"capsule-cylinder", KHZ_GEOM_CAPSULE, pill, KHZ_GEOM_CYLINDER, can},
      {"sphere-sphere", KHZ_GEOM_SPHERE, ball, KHZ_GEOM_SPHERE, ball},
  };
  int nskip = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    khzSpec *s = khz_spec_new();
    int ba = cu_body(s, "a"), bb = cu_body(s, "b");
    cu_geom(s, ba, cases[c].ta, cases[c].sa[0], cases[c].sa[1], cases[c].sa[2]);
    cu_geom(s, bb, cases[c].tb, cases[c].sb[0], cases[c].sb[1], cases[c].sb[2]);
    coherent_pair(cases[c].name, s, &nskip);
  }
  /* a hull against a cylinder and a box */
  for (int c = 0; c < 2; c++) {
    khzSpec *s = khz_spec_new();
    int ba = cu_body(s, "a"), bb = cu_body(s, "b");
    cu_meshGeom(s, ba, cu_sphereMesh(s, "ball", 0.09, 5, 7), 1);
    cu_geom(s, bb, c ? KHZ_GEOM_BOX : KHZ_GEOM_CYLINDER, c ? box[0] : can[0], c ? box[1] : can[1], c ? box[2] : 0);
    coherent_pair(c ? "hull-box" : "hull-cylinder", s, &nskip);
  }
  ENSURE_MSG(nskip > 1000, "the kept directions skipped only %d narrow phases", nskip);
}

int main(void) {
  test_box_on_plane();
  test_box_tilted();
  test_sphere_sphere();
  test_capsule_box();
  test_cylinder_plane();
  test_box_box();
  test_box_face_manifold();
  test_every_pair();
  test_libccd();
  test_exact_least_overlap();
  test_exact_pruned();
  test_exact_slope_signs();
  test_rims_outside();
  test_circle_inradius();
  test_plane_fast_path();
  test_coherent_apart();
  test_vertex_cache(); /* last: the others' random poses as before */
  return ensure_report();
}
