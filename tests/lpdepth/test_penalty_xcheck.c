/* test_penalty_xcheck.c — the penalty path's depths (khz_narrowphase, the
 * deepest point of each pair) cross-checked against the ratio-metric LP depth
 * (rt/src/lp/lpdepth.c) on compiled models: box on a plane, box on box and a
 * convex mesh (random hull) on a box, at random orientations, 0.1-10 mm deep.
 *
 * To first order the two agree: when both name the same separating normal,
 * the LP depth scaled by the centres' distance along it, |rho| dn, equals the
 * Minkowski depth, which is the deepest point's depth for these polytopes
 * (docs/lpdepth.md). Where the normals agree the depths must agree to 1e-9
 * relative (plus 1e-12 m); the share of pairs where they do and the worst
 * disagreement are printed. */
#include "collision/col_util.h"
#include "lp/lpdepth.h"

static unsigned char wmem[1 << 16];
static khzLpDepthWork W;

/* LP depth of geoms 0 and 1 of the pair's frames */
static khzLpStatus lp_of_pair(const khzModel *m, const cu_pair *p, double plane_depth,
                              khzLpDepth *o) {
  static double f0[4 * 512], f1[4 * 512];
  khzColShape s0, s1;
  khzPolytope p0, p1;
  khz_shape_make(m, 0, p->frame, &s0);
  khz_shape_make(m, 1, p->frame + 12, &s1);
  if (khz_lpPolytopeOfShape(&s0, plane_depth, f0, 512, &p0) < 0 ||
      khz_lpPolytopeOfShape(&s1, plane_depth, f1, 512, &p1) < 0)
    return KHZ_LP_BADINPUT;
  return khz_lpDepth(&W, &p0, &p1, NULL, o);
}

enum { PAIR_PLANE, PAIR_BOX, PAIR_HULL, NPAIR };
static const char *pair_name[NPAIR] = {"plane-box", "box-box", "hull-box"};

static void xcheck(int kind) {
  khzSpec *s = khz_spec_new();
  int a = kind == PAIR_PLANE ? 0 : cu_body(s, "a"), b = cu_body(s, "b");
  if (kind == PAIR_PLANE) {
    cu_geom(s, 0, KHZ_GEOM_PLANE, 0, 0, 0);
  } else if (kind == PAIR_BOX) {
    cu_geom(s, a, KHZ_GEOM_BOX, 0.2, 0.12, 0.07);
  } else {
    double pts[3 * 24];
    for (int i = 0; i < 24; i++) {
      double d[3];
      cu_randDir(d);
      pts[3 * i] = 0.18 * d[0], pts[3 * i + 1] = 0.1 * d[1], pts[3 * i + 2] = 0.13 * d[2];
    }
    khzColHull h;
    ENSURE(khz_hull_build(&h, pts, 24) == 0);
    int mesh = khz_spec_addMesh(s, "hull", h.vert, h.nvert, h.tri, h.ntri);
    khz_hull_free(&h);
    cu_meshGeom(s, a, mesh, 1);
  }
  cu_geom(s, b, KHZ_GEOM_BOX, 0.15, 0.1, 0.05);
  khzModel *m = cu_compile(s);
  khzData *d = khz_makeData(m, 0);
  static cu_pair p;
  int n = 0, agree = 0, tries = 0;
  double worst = 0, worst_all = 0;
  while (n < 200 && tries++ < 5000) {
    double qa[4], qb[4], u[3], pa[3] = {0, 0, 0};
    cu_randQuat(qa), cu_randQuat(qb);
    if (kind == PAIR_PLANE)
      u[0] = 0, u[1] = 0, u[2] = 1;
    else
      cu_randDir(u);
    if (kind != PAIR_PLANE) cu_pose(m, d, a, pa, qa);
    /* touching distance along u by bisection on the narrow phase, then push in */
    double lo = 0, hi = 2, want = cu_uniform(1e-4, 0.01);
    for (int it = 0; it < 60; it++) {
      double mid = 0.5 * (lo + hi), x[3] = {mid * u[0], mid * u[1], mid * u[2]};
      cu_pose(m, d, b, x, qb);
      if (cu_collidePair(m, d, 0, 1, &p))
        lo = mid;
      else
        hi = mid;
    }
    double x[3] = {(hi - want) * u[0], (hi - want) * u[1], (hi - want) * u[2]};
    cu_pose(m, d, b, x, qb);
    if (!cu_collidePair(m, d, 0, 1, &p)) continue;
    khzLpDepth o;
    ENSURE(lp_of_pair(m, &p, 1.0, &o) == KHZ_LP_OPTIMAL);
    double deep = cu_maxDepth(&p.out), lp = -o.rho * o.dn;
    ENSURE(o.rho < 0);
    /* the narrow phase's normal points toward geom 0, the LP's away from it */
    double c = -khzu_dot3(p.out.normal, o.normal), rel = fabs(lp - deep) / deep;
    worst_all = fmax(worst_all, rel);
    if (c > 1 - 1e-9) {
      agree++;
      worst = fmax(worst, rel);
      ENSURE_MSG(fabs(lp - deep) <= 1e-9 * deep + 1e-12, "%s: deepest %.12g, LP %.12g",
                 pair_name[kind], deep, lp);
    }
    n++;
  }
  printf("%-9s %d pairs 0.1-10 mm deep: same normal in %d, there |rho| dn vs deepest point "
         "worst %.1e relative; over all pairs %.2f\n",
         pair_name[kind], n, agree, worst, worst_all);
  ENSURE(n == 200);
  ENSURE(agree >= (kind == PAIR_PLANE ? n : n / 2));
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_spec_destroy(&s);
}

int main(void) {
  khz_lpDepthInit(&W, 1024, wmem);
  ENSURE(khz_lpDepthBytes(1024) <= sizeof wmem);
  for (int k = 0; k < NPAIR; k++) xcheck(k);
  return ensure_report();
}
