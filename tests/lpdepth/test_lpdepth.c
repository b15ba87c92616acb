/* test_lpdepth.c — the ratio-metric penetration depth (rt/src/lp/lpdepth.c)
 * against analytic cases, GLPK and libccd, and the claims of Anitescu & Hart's
 * "An LP approach for computing depth of penetration":
 *
 *   - closed forms: two cubes along an axis (r = d / (h1 + h2)), a box over a
 *     plane, a rotated pair (r invariant under a common rigid motion);
 *   - r and the witness of random box / hull pairs equal GLPK's exact simplex
 *     on the primal LP (eq. 2 written in (x, t)) to 1e-9 relative;
 *   - sign: r < 1 exactly when libccd's GJK finds the pair intersecting;
 *   - the metric-equivalence theorem s / D <= |rho| <= s / eps (eps = r (e1 + e2),
 *     docs/lpdepth.md) with s libccd's EPA depth for overlapping pairs and the
 *     GJK distance for separated ones, ratios printed;
 *   - first order: where the LP's separating normal is EPA's, |rho| dn = s,
 *     so the two agree to first order as s -> 0;
 *   - the gradient of rho against central differences of the LP;
 *   - zero heap calls in khz_lpDepth; bad input is refused with its code.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ensure.h"
#include "lpdepth/lp_util.h"
#include "heap_count.h"

static unsigned char wmem[1 << 16];
static khzLpDepthWork W;

static khzLpStatus depth(const lu_body *a, const lu_body *b, khzLpDepth *o) {
  return khz_lpDepth(&W, &a->p, &b->p, NULL, o);
}

static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};

static void closed_forms(void) {
  lu_body a, b;
  khzLpDepth o;
  double pa[3] = {0, 0, 0};
  /* cubes of half extents (0.3, 0.2, 0.25) and (0.1, 0.4, 0.2), centres d apart along x */
  for (int i = 0; i < 4; i++) {
    double d = (double[]){0.2, 0.39, 0.4, 0.9}[i];
    lu_box(&a, 1, 1), lu_box(&b, 1, 1);
    a.size[0] = 0.3, a.size[1] = 0.2, a.size[2] = 0.25;
    b.size[0] = 0.1, b.size[1] = 0.4, b.size[2] = 0.2;
    double pb[3] = {d, 0.05, -0.02};
    lu_place(&a, pa, I3), lu_place(&b, pb, I3);
    ENSURE(depth(&a, &b, &o) == KHZ_LP_OPTIMAL);
    /* along x the faces meet at t (0.3 + 0.1) = d; along y and z the boxes
     * overlap for every t > 0.05 / 0.6 and 0.02 / 0.45 */
    double r = fmax(d / 0.4, fmax(0.05 / 0.6, 0.02 / 0.45));
    ENSURE_NEAR(o.r, r, 1e-14);
    ENSURE_NEAR(o.rho, (r - 1) / r, 1e-13);
    ENSURE_NEAR(o.normal[0], 1, 1e-14);
    ENSURE_NEAR(o.dn, d, 1e-14);
    ENSURE_NEAR(o.point[0], 0.3 * r, 1e-14);
    /* a common rigid motion changes nothing */
    double R[9], t[3] = {0.3, -1.2, 2}, qa[3], qb[3];
    lu_randRot(R);
    khzu_mulMatVec3(qa, R, pa), khzu_add3(qa, qa, t);
    khzu_mulMatVec3(qb, R, pb), khzu_add3(qb, qb, t);
    lu_place(&a, qa, R), lu_place(&b, qb, R);
    khzLpDepth o2;
    ENSURE(depth(&a, &b, &o2) == KHZ_LP_OPTIMAL);
    ENSURE_NEAR(o2.r, r, 1e-13);
    double nx[3] = {R[0], R[3], R[6]};
    ENSURE_NEAR(khzu_dot3(o2.normal, nx), 1, 1e-13);
  }
  /* a box of half height h at height z over the plane z = 0, the plane's
   * centre H below it: the box's bottom z - t h meets the plane's top
   * -H + t H at t = (z + H) / (h + H) */
  {
    lu_box(&a, 0.2, 0.2);
    khzColShape pl = {0};
    pl.shape = KHZ_SHAPE_PLANE;
    memcpy(pl.rot, I3, sizeof pl.rot);
    double face[4], H = 1, z = 0.17, pz[3] = {0.4, -0.3, z};
    khzPolytope pp;
    ENSURE(khz_lpPolytopeOfShape(&pl, H, face, 1, &pp) == 1);
    lu_place(&a, pz, I3);
    ENSURE(khz_lpDepth(&W, &pp, &a.p, NULL, &o) == KHZ_LP_OPTIMAL);
    ENSURE_NEAR(o.r, (z + H) / (0.2 + H), 1e-14);
    ENSURE_NEAR(o.normal[2], 1, 1e-14);
    /* rho dn is the depth 0.03 to first order: here exactly, the normals agree */
    ENSURE_NEAR(-o.rho * o.dn, 0.2 - z, 1e-14);
  }
}

/* a random pair: box-box, box-hull or hull-hull */
static int random_pair(int kind, lu_body *a, lu_body *b) {
  double R[9], pa[3] = {lu_uniform(-1, 1), lu_uniform(-1, 1), lu_uniform(-1, 1)};
  if (kind == 2 ? lu_hull(a, (int)lu_uniform(6, 40), 0.05, 0.3) : (lu_box(a, 0.05, 0.3), 0))
    return -1;
  if (kind >= 1 ? lu_hull(b, (int)lu_uniform(6, 40), 0.05, 0.3) : (lu_box(b, 0.05, 0.3), 0)) {
    lu_free(a);
    return -1;
  }
  lu_randRot(R);
  lu_place(a, pa, R);
  lu_randRot(R);
  lu_place(b, pa, R);
  return 0;
}
static const char *kind_name[3] = {"box-box", "box-hull", "hull-hull"};

static void against_glpk_and_ccd(void) {
  ccd_t ccd;
  lu_ccdInit(&ccd);
  for (int kind = 0; kind < 3; kind++) {
    int n = 0, sign_ok = 0, maxpiv = 0;
    double worst = 0, worst_p = 0, worst_x = 0, worst_cert = 0;
    while (n < 150) {
      lu_body a, b;
      if (random_pair(kind, &a, &b)) continue;
      double u[3];
      lu_randDir(u);
      lu_touch(&a, &b, u, lu_uniform(-0.1, 0.1), &ccd);
      khzLpDepth o;
      ENSURE(depth(&a, &b, &o) == KHZ_LP_OPTIMAL);
      if (o.pivots > maxpiv) maxpiv = o.pivots;
      /* GLPK on the same dual LP, and on the primal in (x, t) */
      int nf = a.p.nface + b.p.nface;
      double x[3], r = lu_glpkRatio(&a.p, &b.p, x), rd = -lu_glpkDual(&W, nf);
      ENSURE(r > 0 && rd > 0);
      double rel = fabs(o.r - rd) / rd, relp = fabs(o.r - r) / r;
      worst = fmax(worst, rel), worst_p = fmax(worst_p, relp);
      ENSURE_MSG(rel <= 1e-9, "%s: r %.17g, GLPK %.17g", kind_name[kind], o.r, rd);
      ENSURE_MSG(relp <= 1e-8, "%s: r %.17g, GLPK's primal %.17g", kind_name[kind], o.r, r);
      /* the optimality certificate on its own: multipliers y >= 0 with
       * sum y a = 0 and sum y c = 1 (dual feasible), and -sum y cost = r
       * (no duality gap; the witness below is primal feasible at r) */
      long double sa[4] = {0, 0, 0, 0}, gap = o.r;
      for (int k = 0; k < nf; k++) {
        ENSURE(W.y[k] >= 0);
        for (int i = 0; i < 4; i++) sa[i] += (long double)W.y[k] * W.A[4 * k + i];
        gap += (long double)W.y[k] * W.cost[k];
      }
      sa[3] -= 1;
      for (int i = 0; i < 4; i++) worst_cert = fmax(worst_cert, (double)fabsl(sa[i]));
      worst_cert = fmax(worst_cert, (double)fabsl(gap));
      /* the witness lies in both scaled bodies (GLPK's may differ when the
       * optimum is not unique, so it is checked on its own) */
      for (int s = 0; s < 2; s++) {
        const khzPolytope *p = s ? &b.p : &a.p;
        for (int f = 0; f < p->nface; f++) {
          const double *fa = p->face + 4 * f;
          double len = khzu_norm3(fa), dv[3];
          khzu_sub3(dv, o.point, p->center);
          double c = fa[3] / len - khzu_dot3(fa, p->center) / len;
          worst_x = fmax(worst_x, khzu_dot3(fa, dv) / len - o.r * c);
        }
      }
      /* sign against libccd's intersection test (pairs within 1e-9 of
       * touching are not asked) */
      int hit = ccdGJKIntersect(&a, &b, &ccd);
      if (fabs(o.r - 1) > 1e-9) {
        ENSURE_MSG(hit == (o.r < 1), "%s: r %.17g, libccd intersect %d", kind_name[kind], o.r, hit);
        sign_ok += hit == (o.r < 1);
      } else {
        sign_ok++;
      }
      lu_free(&a), lu_free(&b);
      n++;
    }
    ENSURE(worst_x <= 1e-13);
    ENSURE(worst_cert <= 1e-13);
    printf("%-9s %d pairs: r vs GLPK (glp_exact) on the dual worst relative %.1e, on the "
           "primal %.1e; own certificate: witness outside by at most %.1e, dual residual and "
           "gap %.1e; sign agrees with libccd %d/%d; most pivots %d\n",
           kind_name[kind], n, worst, worst_p, worst_x, worst_cert, sign_ok, n, maxpiv);
  }
}

/* the metric-equivalence theorem and the first-order agreement */
static void equivalence(void) {
  ccd_t ccd;
  lu_ccdInit(&ccd);
  for (int kind = 0; kind < 3; kind++)
    for (int apart = 0; apart < 2; apart++) {
      double lo_d = INFINITY, hi_e = 0, worst_fo = 0;
      int n = 0, same_normal = 0;
      while (n < 200) {
        lu_body a, b;
        if (random_pair(kind, &a, &b)) continue;
        double u[3], push = lu_uniform(1e-4, 0.02);
        lu_randDir(u);
        lu_touch(&a, &b, u, apart ? -push : push, &ccd);
        khzLpDepth o;
        ENSURE(depth(&a, &b, &o) == KHZ_LP_OPTIMAL);
        double s, n_ccd[3] = {0, 0, 0};
        if (apart) {
          s = lu_distance(&a, &b);
        } else {
          ccd_real_t dep;
          ccd_vec3_t dir, pos;
          if (ccdGJKPenetration(&a, &b, &ccd, &dep, &dir, &pos) != 0) {
            lu_free(&a), lu_free(&b);
            continue;
          }
          s = dep;
          n_ccd[0] = dir.v[0], n_ccd[1] = dir.v[1], n_ccd[2] = dir.v[2];
        }
        double D = 0, d12[3];
        khzu_sub3(d12, b.p.center, a.p.center);
        D = khzu_norm3(d12);
        double eps = o.r * (a.inradius + b.inradius), rho = fabs(o.rho);
        ENSURE(apart ? o.rho > 0 : o.rho < 0);
        /* s / D <= |rho| <= s / eps, with slack for EPA's and GJK's tolerances */
        double tol = 1e-9 + 1e-7 * s;
        ENSURE_MSG(s / D <= rho + tol / D && rho <= s / eps + tol / eps,
                   "%s %s: s %.9g D %.9g eps %.9g rho %.9g", kind_name[kind],
                   apart ? "apart" : "overlapping", s, D, eps, rho);
        lo_d = fmin(lo_d, rho * D / s);
        hi_e = fmax(hi_e, rho * eps / s);
        /* first order: with EPA's normal equal to the LP's, |rho| dn = s */
        if (!apart && khzu_dot3(n_ccd, o.normal) > 1 - 1e-9) {
          same_normal++;
          worst_fo = fmax(worst_fo, fabs(rho * o.dn - s) / s);
        }
        lu_free(&a), lu_free(&b);
        n++;
      }
      printf("%-9s %-11s %d pairs, 0.1-20 mm: min |rho| D / s = %.4f (theorem >= 1), "
             "max |rho| eps / s = %.4f (theorem <= 1)",
             kind_name[kind], apart ? "apart" : "overlapping", n, lo_d, hi_e);
      if (!apart)
        printf("; EPA's normal = the LP's in %d, there | |rho| dn / s - 1 | <= %.1e", same_normal,
               worst_fo);
      printf("\n");
      if (!apart) {
        ENSURE(same_normal >= n / 2);
        ENSURE(worst_fo <= 1e-6);
      }
    }
}

/* rho of a after a twist (v, w) of one body about its centre, by rebuilding its faces */
static double moved_rho(lu_body *a, lu_body *b, int which, const double tw[6]) {
  lu_body *m = which ? b : a;
  double pos0[3], R0[9], pos[3], R[9], q[4], Rw[9], ang = khzu_norm3(tw + 3);
  memcpy(pos0, m->s.pos, sizeof pos0), memcpy(R0, m->s.rot, sizeof R0);
  /* the centre moves by v; the body turns about its centre by w */
  double c0[3], off[3];
  memcpy(c0, m->p.center, sizeof c0);
  if (ang > 0)
    khzu_axisAngle2Quat(q, (double[3]){tw[3] / ang, tw[4] / ang, tw[5] / ang}, ang);
  else
    q[0] = 1, q[1] = q[2] = q[3] = 0;
  khzu_quat2mat(Rw, q);
  khzu_mulMat3(R, Rw, R0);
  khzu_sub3(off, pos0, c0);
  khzu_mulMatVec3(pos, Rw, off);
  khzu_add3(pos, pos, c0);
  khzu_add3(pos, pos, tw);
  lu_place(m, pos, R);
  khzLpDepth o;
  khzLpStatus st = depth(a, b, &o);
  lu_place(m, pos0, R0);
  return st == KHZ_LP_OPTIMAL ? o.rho : NAN;
}

static void gradient(void) {
  ccd_t ccd;
  lu_ccdInit(&ccd);
  int n = 0;
  double worst = 0;
  while (n < 100) {
    lu_body a, b;
    if (random_pair(n % 3, &a, &b)) continue;
    double u[3];
    lu_randDir(u);
    lu_touch(&a, &b, u, lu_uniform(-0.05, 0.05), &ccd);
    khzLpDepth o;
    ENSURE(depth(&a, &b, &o) == KHZ_LP_OPTIMAL);
    /* only where the basic contact unit is nondegenerate: 4 active faces */
    if (o.nactive[0] + o.nactive[1] != 4) {
      lu_free(&a), lu_free(&b);
      continue;
    }
    double h = 1e-7, gmax = 0, err = 0;
    for (int k = 0; k < 12; k++) gmax = fmax(gmax, fabs(o.grad[k]));
    for (int k = 0; k < 12; k++) {
      double tw[6] = {0, 0, 0, 0, 0, 0};
      tw[k % 6] = h;
      double fp = moved_rho(&a, &b, k / 6, tw);
      tw[k % 6] = -h;
      double fm = moved_rho(&a, &b, k / 6, tw);
      err = fmax(err, fabs((fp - fm) / (2 * h) - o.grad[k]));
    }
    worst = fmax(worst, err / gmax);
    ENSURE_MSG(err <= 1e-5 * gmax, "%s: gradient off by %.3g of %.3g", kind_name[n % 3], err, gmax);
    lu_free(&a), lu_free(&b);
    n++;
  }
  printf("gradient of rho vs central differences (h = 1e-7) over %d nondegenerate pairs: worst "
         "%.1e of its largest entry\n",
         n, worst);
}

/* warm starts over a sequence of nearby poses give the cold answer */
static void warm_start(void) {
  ccd_t ccd;
  lu_ccdInit(&ccd);
  int ncall = 0, taken = 0, pc = 0, pw = 0;
  double worst = 0;
  for (int t = 0; t < 60; t++) {
    lu_body a, b;
    if (random_pair(t % 3, &a, &b)) continue;
    double u[3];
    lu_randDir(u);
    lu_touch(&a, &b, u, 0.002, &ccd);
    int basis[4], have = 0;
    double axis[3], q[4], Rs[9];
    lu_randDir(axis);
    khzu_axisAngle2Quat(q, axis, 0.01);
    khzu_quat2mat(Rs, q);
    for (int k = 0; k < 40; k++) {
      /* 0.2 mm further in and 10 mrad about an axis through the centre per call */
      double x[3], R[9], off[3];
      khzu_mulMat3(R, Rs, b.s.rot);
      khzu_sub3(off, b.s.pos, b.p.center);
      khzu_mulMatVec3(x, Rs, off);
      khzu_add3(x, x, b.p.center);
      khzu_addScl3(x, x, u, -2e-4);
      lu_place(&b, x, R);
      khzLpDepth oc, ow;
      ENSURE(depth(&a, &b, &oc) == KHZ_LP_OPTIMAL);
      ENSURE(khz_lpDepth(&W, &a.p, &b.p, have ? basis : NULL, &ow) == KHZ_LP_OPTIMAL);
      worst = fmax(worst, fabs(ow.r - oc.r) / oc.r);
      memcpy(basis, ow.basis, sizeof basis), have = 1;
      ncall++, taken += ow.warm, pc += oc.pivots, pw += ow.pivots;
    }
    lu_free(&a), lu_free(&b);
  }
  ENSURE(worst <= 1e-13);
  ENSURE(taken > ncall / 2);
  printf("warm starts over %d calls moving 0.2 mm and turning 10 mrad per call: basis taken %d times, pivots %.1f "
         "(cold %.1f) per call, r as cold to %.1e\n",
         ncall, taken, (double)pw / ncall, (double)pc / ncall, worst);
}

static void heap_and_errors(void) {
  ccd_t ccd;
  lu_ccdInit(&ccd);
  lu_body a, b;
  while (random_pair(2, &a, &b)) {
  }
  double u[3] = {0, 0, 1};
  lu_touch(&a, &b, u, 0.01, &ccd);
  khzLpDepth o;
  heap_counting = 1, heap_calls = 0;
  for (int i = 0; i < 1000; i++) depth(&a, &b, &o);
  heap_counting = 0;
  ENSURE(heap_calls == 0);
  printf("1000 hull-hull depths (%d + %d faces): %ld heap calls\n", a.p.nface, b.p.nface, heap_calls);

  /* a centre outside its polytope, a zero normal, too many faces */
  khzPolytope bad = a.p;
  bad.center[0] += 10;
  ENSURE(khz_lpDepth(&W, &bad, &b.p, NULL, &o) == KHZ_LP_BADINPUT);
  double f0[4 * 6];
  memcpy(f0, a.face, sizeof f0);
  f0[0] = f0[1] = f0[2] = 0;
  bad = a.p, bad.face = f0, bad.nface = 6;
  ENSURE(khz_lpDepth(&W, &bad, &b.p, NULL, &o) == KHZ_LP_BADINPUT);
  khzLpDepthWork small;
  static unsigned char smem[1 << 12];
  ENSURE(khz_lpDepthBytes(8) <= sizeof smem);
  khz_lpDepthInit(&small, 8, smem);
  ENSURE(khz_lpDepth(&small, &a.p, &b.p, NULL, &o) == KHZ_LP_TOOBIG);
  /* shapes without faces */
  khzColShape sph = {0};
  sph.shape = KHZ_SHAPE_SPHERE;
  khzPolytope pp;
  double face[4];
  ENSURE(khz_lpPolytopeOfShape(&sph, 0, face, 1, &pp) == -1);
  lu_free(&a), lu_free(&b);
}

int main(void) {
  ENSURE(khz_lpDepthBytes(2 * LU_MAXFACE) <= sizeof wmem);
  khz_lpDepthInit(&W, 2 * LU_MAXFACE, wmem);
  closed_forms();
  against_glpk_and_ccd();
  equivalence();
  gradient();
  warm_start();
  heap_and_errors();
  return ensure_report();
}
