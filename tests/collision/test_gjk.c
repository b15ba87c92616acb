/* test_gjk.c — GJK distance (rt/src/collision/gjk.c): a point or a segment
 * (sphere and capsule cores) against boxes, cylinders and hulls, compared
 * with the exact point distance (khz_shape_sd outside a box or cylinder) and
 * with dense sampling of the segment; intersecting objects give 0. */
#include "col_util.h"

static void test_against_exact(void) {
  khzSpec *s = khz_spec_new();
  int b = cu_body(s, "b"), c = cu_body(s, "c"), h = cu_body(s, "h");
  cu_geom(s, b, KHZ_GEOM_BOX, 0.3, 0.2, 0.1);
  cu_geom(s, c, KHZ_GEOM_CYLINDER, 0.25, 0.15, 0);
  cu_meshGeom(s, h, cu_boxMesh(s, "hull", 0.3, 0.2, 0.1), 1);
  khzModel *m = cu_compile(s);
  khzData *d = khz_makeData(m, 0);
  double q[4], frame[36], aabb[18];
  for (int body = 1; body <= 3; body++) {
    cu_randQuat(q);
    cu_pose(m, d, body, (double[3]){0.1 * body, -0.2, 0.3}, q);
  }
  khz_kinematics(m, d);
  khz_collisionFrames(m, d, frame, aabb);
  khzColShape sh[3];
  for (int g = 0; g < 3; g++) khz_shape_make(m, g, frame + 12 * g, &sh[g]);

  double worst_pt = 0, worst_seg = 0;
  int zero = 0;
  for (int k = 0; k < 600; k++) {
    const khzColShape *t = &sh[k % 3];
    const khzColShape *exact = k % 3 == 2 ? &sh[0] : t; /* the hull is box 0's twin */
    double dir[3];
    khzColCore core;
    cu_randDir(dir);
    khzu_addScl3(core.a, t->pos, dir, cu_uniform(0.0, 1.0));
    cu_randDir(dir);
    khzu_addScl3(core.b, core.a, dir, k % 2 ? cu_uniform(0.1, 0.8) : 0);

    double pa[3], pb[3];
    double dist = khz_gjk(&core, khz_core_support, t, khz_shape_supportFn, 0.5, pa, pb);

    /* exact: the point; sampled: the segment */
    double best = 1e9;
    for (int i = 0; i <= 2000; i++) {
      double x[3], ab[3], local[3];
      khzu_sub3(ab, core.b, core.a);
      khzu_addScl3(x, core.a, ab, i / 2000.0);
      /* box 0 and the hull have the same shape at different poses: move x into box 0 */
      khz_shape_toLocal(t, x, local);
      khz_shape_toWorld(exact, local, x);
      double sd = khz_shape_sd(exact, x, NULL);
      best = fmin(best, sd < 0 ? -sd : 0);
      if (k % 2 == 0) break;
    }
    if (best == 0) {
      zero++;
      ENSURE(dist == 0);
      continue;
    }
    double err = dist - best;
    if (k % 2 == 0)
      worst_pt = fmax(worst_pt, fabs(err));
    else
      worst_seg = fmax(worst_seg, fabs(err));
    /* the closest points realise the distance */
    double dd[3];
    khzu_sub3(dd, pa, pb);
    ENSURE_NEAR(khzu_norm3(dd), dist, 1e-9);
  }
  printf("gjk: point distance within %.1e of exact, segment within %.1e of 2000 samples; %d "
         "intersecting\n", worst_pt, worst_seg, zero);
  ENSURE(worst_pt < 1e-7);
  ENSURE(worst_seg < 2e-3); /* the sampling spacing, at most 0.8 / 2000 along the segment */
  ENSURE(zero > 10);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

int main(void) {
  test_against_exact();
  return ensure_report();
}
