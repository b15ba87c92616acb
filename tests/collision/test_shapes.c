/* test_shapes.c — shapes in the world (rt/src/collision/shapes.c): support
 * maps against brute force over surface samples, inside distances against
 * closed forms, segment clipping against sampled inside tests, the vertex and
 * edge features, and the closest-point routines against sampling. */
#include "col_util.h"

static khzModel *model(void) {
  khzSpec *s = khz_spec_new();
  int b[6];
  for (int i = 0; i < 6; i++) {
    char n[8];
    snprintf(n, sizeof n, "b%d", i);
    b[i] = cu_body(s, n);
  }
  cu_geom(s, b[0], KHZ_GEOM_SPHERE, 0.3, 0, 0);
  cu_geom(s, b[1], KHZ_GEOM_CAPSULE, 0.2, 0.4, 0);
  cu_geom(s, b[2], KHZ_GEOM_BOX, 0.3, 0.2, 0.1);
  cu_geom(s, b[3], KHZ_GEOM_CYLINDER, 0.25, 0.35, 0);
  cu_meshGeom(s, b[4], cu_boxMesh(s, "hull", 0.3, 0.2, 0.1), 1);
  cu_geom(s, b[5], KHZ_GEOM_SPHERE, 0.1, 0, 0);
  cu_geom(s, 0, KHZ_GEOM_PLANE, 0, 0, 0);
  khzModel *m = cu_compile(s);
  khz_spec_destroy(&s);
  return m;
}

/* a point of the surface (or the solid, inside = 1) of shape s, in the geom frame */
static void sample(const khzColShape *s, int inside, double p[3]) {
  const double *z = s->size;
  double d[3], r = inside ? cbrt(cu_rand()) : 1;
  cu_randDir(d);
  switch (s->shape) {
    case KHZ_SHAPE_SPHERE: khzu_scl3(p, d, z[0] * r); break;
    case KHZ_SHAPE_CAPSULE:
      khzu_scl3(p, d, z[0] * r);
      p[2] += cu_uniform(-z[1], z[1]);
      break;
    case KHZ_SHAPE_CYLINDER: {
      double a = cu_uniform(0, 2 * M_PI), rr = inside ? sqrt(cu_rand()) * z[0] : z[0];
      p[0] = rr * cos(a), p[1] = rr * sin(a), p[2] = cu_uniform(-z[1], z[1]);
      if (!inside && cu_rand() < 0.5) {
        rr = sqrt(cu_rand()) * z[0];
        p[0] = rr * cos(a), p[1] = rr * sin(a), p[2] = cu_rand() < 0.5 ? -z[1] : z[1];
      }
      break;
    }
    default: /* box (and the box hull) */
      for (int k = 0; k < 3; k++) p[k] = cu_uniform(-0.3, 0.3) * (k == 0 ? 1 : k == 1 ? 2 / 3.0 : 1 / 3.0);
      if (!inside) {
        int k = (int)(cu_rand() * 3);
        double e[3] = {0.3, 0.2, 0.1};
        p[k] = cu_rand() < 0.5 ? -e[k] : e[k];
      }
  }
}

static void test_support_sd(const khzModel *m, const double *frame) {
  for (int g = 0; g < 5; g++) {
    khzColShape s;
    khz_shape_make(m, g, frame + 12 * g, &s);
    /* support: no surface sample beyond it; it is on the surface (sd ~ 0) */
    double worst = 0;
    for (int k = 0; k < 50; k++) {
      double dir[3], sp[3];
      cu_randDir(dir);
      khz_shape_support(&s, dir, sp);
      ENSURE(fabs(khz_shape_sd(&s, sp, NULL)) < 1e-9);
      double h = khz_shape_h(&s, dir);
      for (int i = 0; i < 200; i++) {
        double l[3], w[3];
        sample(&s, 0, l);
        khz_shape_toWorld(&s, l, w);
        worst = fmax(worst, khzu_dot3(dir, w) - h);
      }
    }
    ENSURE_MSG(worst < 1e-12, "geom %d: a surface point %g beyond the support plane", g, worst);

    /* inside distance: positive inside, and exact: the nearest surface point
     * lies at sd along -nrm */
    for (int k = 0; k < 200; k++) {
      double l[3], w[3], nrm[3], q[3];
      sample(&s, 1, l);
      khz_shape_toWorld(&s, l, w);
      double sd = khz_shape_sd(&s, w, nrm);
      ENSURE(sd >= -1e-12);
      khzu_addScl3(q, w, nrm, sd);
      ENSURE_MSG(fabs(khz_shape_sd(&s, q, NULL)) < 1e-9, "geom %d: sd %g", g, sd);
      ENSURE_NEAR(khzu_norm3(nrm), 1, 1e-12);
    }
  }
}

static void test_clip(const khzModel *m, const double *frame) {
  int bad = 0;
  for (int g = 2; g <= 6; g++) {
    if (g == 5) continue;
    khzColShape s;
    khz_shape_make(m, g, frame + 12 * g, &s);
    for (int k = 0; k < 300; k++) {
      double p0[3], p1[3], d[3], t[2];
      cu_randDir(d);
      khzu_addScl3(p0, s.pos, d, cu_uniform(0, 0.6));
      cu_randDir(d);
      khzu_addScl3(p1, p0, d, cu_uniform(0.05, 1));
      int hit = khz_shape_clip(&s, p0, p1, t);
      for (int i = 0; i <= 400; i++) {
        double u = i / 400.0, x[3], seg[3];
        khzu_sub3(seg, p1, p0);
        khzu_addScl3(x, p0, seg, u);
        double sd = khz_shape_sd(&s, x, NULL);
        int in = hit && u >= t[0] - 1e-12 && u <= t[1] + 1e-12;
        if (fabs(sd) > 1e-9 && in != (sd > 0)) bad++;
      }
    }
  }
  ENSURE_MSG(bad == 0, "%d samples on the wrong side of a clipped interval", bad);
}

static void test_features(const khzModel *m, const double *frame) {
  khzColShape box, cyl, hull;
  khz_shape_make(m, 2, frame + 24, &box);
  khz_shape_make(m, 3, frame + 36, &cyl);
  khz_shape_make(m, 4, frame + 48, &hull);
  ENSURE(khz_shape_nvert(&box) == 8 && khz_shape_nedge(&box) == 12);
  ENSURE(khz_shape_nvert(&cyl) == 2 * KHZ_CYL_RIM && khz_shape_nedge(&cyl) == 3 * KHZ_CYL_RIM);
  ENSURE(khz_shape_nvert(&hull) == 8 && khz_shape_nedge(&hull) == 12);
  double len[3] = {0.6, 0.4, 0.2};
  for (int e = 0; e < 12; e++) {
    int v[2];
    double a[3], b[3], d[3];
    khz_shape_edge(&box, e, v);
    khz_shape_vert(&box, v[0], a);
    khz_shape_vert(&box, v[1], b);
    khzu_sub3(d, b, a);
    ENSURE_NEAR(khzu_norm3(d), len[e / 4], 1e-12);
  }
  for (int e = 0; e < 3 * KHZ_CYL_RIM; e++) {
    int v[2];
    double a[3], b[3], d[3];
    khz_shape_edge(&cyl, e, v);
    khz_shape_vert(&cyl, v[0], a);
    khz_shape_vert(&cyl, v[1], b);
    khzu_sub3(d, b, a);
    ENSURE_NEAR(khzu_norm3(d), e < 2 * KHZ_CYL_RIM ? 2 * 0.25 * sin(M_PI / KHZ_CYL_RIM) : 0.7, 1e-12);
    ENSURE(fabs(khz_shape_sd(&cyl, a, NULL)) < 1e-12);
  }
}

static void test_closest(void) {
  double worst_ss = 0, worst_tri = 0;
  for (int k = 0; k < 300; k++) {
    double p1[3], q1[3], p2[3], q2[3], c1[3], c2[3], s, t;
    for (int i = 0; i < 3; i++)
      p1[i] = cu_uniform(-1, 1), q1[i] = cu_uniform(-1, 1), p2[i] = cu_uniform(-1, 1),
      q2[i] = cu_uniform(-1, 1);
    if (k % 10 == 0) memcpy(q2, p2, sizeof p2);                    /* a point */
    if (k % 10 == 1) khzu_addScl3(q2, p2, (double[3]){q1[0] - p1[0], q1[1] - p1[1], q1[2] - p1[2]}, 0.5); /* parallel */
    double d2 = khzu_closestSegSeg(p1, q1, p2, q2, &s, &t, c1, c2), best = 1e9;
    for (int i = 0; i <= 300; i++)
      for (int j = 0; j <= 300; j++) {
        double a[3], b[3], d[3];
        for (int x = 0; x < 3; x++)
          a[x] = p1[x] + (q1[x] - p1[x]) * i / 300.0, b[x] = p2[x] + (q2[x] - p2[x]) * j / 300.0;
        khzu_sub3(d, a, b);
        best = fmin(best, khzu_norm3(d));
      }
    worst_ss = fmax(worst_ss, sqrt(d2) - best);

    double a[3], b[3], c[3], p[3], q[3];
    int region;
    for (int i = 0; i < 3; i++)
      a[i] = cu_uniform(-1, 1), b[i] = cu_uniform(-1, 1), c[i] = cu_uniform(-1, 1), p[i] = cu_uniform(-2, 2);
    khzu_closestOnTriangle(p, a, b, c, q, &region);
    best = 1e9;
    for (int i = 0; i <= 400; i++)
      for (int j = 0; i + j <= 400; j++) {
        double x[3], d[3];
        for (int l = 0; l < 3; l++) x[l] = a[l] + (b[l] - a[l]) * i / 400.0 + (c[l] - a[l]) * j / 400.0;
        khzu_sub3(d, p, x);
        best = fmin(best, khzu_norm3(d));
      }
    double dd[3];
    khzu_sub3(dd, p, q);
    worst_tri = fmax(worst_tri, khzu_norm3(dd) - best);
    ENSURE(region >= 0 && region <= 6);
  }
  ENSURE_MSG(worst_ss <= 1e-12, "segment-segment above sampling by %g", worst_ss);
  ENSURE_MSG(worst_tri <= 1e-12, "point-triangle above sampling by %g", worst_tri);
}

int main(void) {
  khzModel *m = model();
  khzData *d = khz_makeData(m, 0);
  for (int b = 1; b <= 6; b++) {
    double q[4];
    cu_randQuat(q);
    cu_pose(m, d, b, (double[3]){cu_uniform(-1, 1), cu_uniform(-1, 1), cu_uniform(-1, 1)}, q);
  }
  khz_kinematics(m, d);
  double frame[12 * 7], aabb[6 * 7];
  khz_collisionFrames(m, d, frame, aabb);
  test_support_sd(m, frame);
  test_clip(m, frame);
  test_features(m, frame);
  test_closest();
  khz_deleteData(&d);
  khz_deleteModel(&m);
  return ensure_report();
}
