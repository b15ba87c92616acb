/* test_lpgap.c — the LCP path with the LP penetration depth as the gap
 * function of polytope pairs (contact.lcp_gap: lpdepth; rt/src/lcp/lpgap.c):
 *   - a box resting on a box resting on the ground keeps both gaps at 0 to
 *     rounding (the analytic gap of two aligned boxes), at h = 1e-3 and
 *     1e-2, and its contacts carry the weights above them; with the
 *     narrow phase's gap the same stack rests KHZ_LCP_SKIN deep per level;
 *   - a cube driven corner first into a fixed block's face (1 m/s down,
 *     spinning, sliding) is held: at every step of 0.4 s and every step
 *     size from 1e-3 to 1e-2 the lowest of its corners (the analytic gap)
 *     is above -|v|^2 h^2 (Anitescu & Hart's bound on the scheme's
 *     infeasibility) and above -2e-6 m (twice the re-check's threshold),
 *     with no fallback; the narrow phase's gap goes 4.5e-5 to 8.8e-4 m in;
 *   - the LP gap agrees with the narrow phase's to first order for small
 *     penetrations: boxes and a convex hull against a box, placed
 *     overlapping by delta = 1e-3, 1e-4, 1e-5 m along libccd's EPA
 *     direction (an oracle nobody here wrote), one LCP step each way: where
 *     the pair's normals agree the reported depths are delta to 1e-9
 *     relative, and so over all pairs with the LP gap (its own unit, the
 *     deepest, measures along its normal: rho dn, equal to the Minkowski
 *     depth when the normals agree; the reported depth is the one at the
 *     predicted positions).
 * An unknown lcp_gap is refused with its key and the accepted values. The
 * zero-allocation check of the option is in test_lcp_alloc.c. */
#include <ccd/ccd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collision/collision.h"
#include "ensure.h"
#include "khz/khz.h"
#include "khz/load.h"
#include "lcp/lcp.h"

static khzModel *load_string(const char *yaml) {
  khzScene sc;
  char err[512];
  if (khz_loadSceneString(&sc, yaml, "test", ".", err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return NULL;
  }
  khzModel *m = khz_compile(sc.spec, err, sizeof err);
  if (!m) fprintf(stderr, "%s\n", err);
  khz_deleteScene(&sc);
  return m;
}

/* the rotation of a free body's quaternion q (w, x, y, z) applied to v */
static void rotate(const double *q, const double v[3], double out[3]) {
  double R[9];
  khzu_quat2mat(R, q);
  khzu_mulMatVec3(out, R, v);
}

/* -------------------------------------------------------- box on a box -- */

/* gaps of the stack (ground-a, a-b) and the largest tilt of either box */
static void stack_gaps(const khzData *d, double *gap_a, double *gap_b, double *tilt) {
  const double *qa = d->q, *qb = d->q + 7;
  *gap_a = qa[2] - 0.1;
  *gap_b = qb[2] - 0.05 - (qa[2] + 0.1);
  *tilt = fmax(fmax(fabs(qa[4]), fabs(qa[5])), fmax(fabs(qb[4]), fabs(qb[5])));
}

static void stack_run(const char *gap, int rate, double *worst, double *end_b, double *fb, double *fa,
                      long *fallbacks) {
  char yaml[1024];
  snprintf(yaml, sizeof yaml,
           "khz_scene: 1\nrate_hz: %d\ngravity: [0, 0, -9.81]\nground: {height: 0}\nsleep: false\n"
           "contact: {method: lcp, mu: 0.5, lcp_gap: %s}\n"
           "objects:\n"
           "  - {name: a, shape: box, size: [0.2, 0.2, 0.1], mass: 2, pos: [0, 0, 0.1]}\n"
           "  - {name: b, shape: box, size: [0.1, 0.07, 0.05], mass: 1, pos: [0.03, -0.02, 0.25], rpy: [0, 0, 0.3]}\n",
           rate, gap);
  khzModel *m = load_string(yaml);
  ENSURE(m != NULL);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);
  *worst = 0;
  for (int s = 0; s < rate; s++) {
    khz_step(m, d);
    double ga, gb, tilt;
    stack_gaps(d, &ga, &gb, &tilt);
    *worst = fmax(*worst, fmax(fabs(ga), fabs(gb)));
    *worst = fmax(*worst, tilt);
    *end_b = gb;
  }
  /* the normal forces the contacts carry: b on a, a on the ground */
  *fa = *fb = 0;
  for (int c = 0; c < d->ncontact; c++) {
    const khzContact *ct = d->contact + c;
    double fz = 0;
    for (int p = ct->point_adr; p < ct->point_adr + ct->npoint; p++) fz += d->cpoint[p].force[2];
    int ground = ct->body[0] == 0 || ct->body[1] == 0;
    /* the force on body[0]: upward on the upper body */
    double up = ct->body[0] == (ground ? 1 : 2) ? fz : -fz;
    if (ground) *fa += up;
    else *fb += up;
  }
  *fallbacks = (long)d->warning[KHZ_WARN_LCP];
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

static void test_box_on_box(void) {
  const int rates[2] = {1000, 100};
  for (int i = 0; i < 2; i++) {
    double worst, end_b, fb, fa;
    long fallbacks;
    stack_run("lpdepth", rates[i], &worst, &end_b, &fb, &fa, &fallbacks);
    printf("box on box, LP gap, h = %g: largest |gap| or tilt over 1 s %.3g, b on a carries %.12g N (m g %.12g), "
           "a on the ground %.12g N, fallbacks %ld\n",
           1.0 / rates[i], worst, fb, 9.81, fa, fallbacks);
    ENSURE_MSG(worst <= 1e-10, "h = %g: the LP gap's stack moved %.3g from rest", 1.0 / rates[i], worst);
    ENSURE_MSG(fabs(fb - 9.81) <= 1e-9 * 9.81, "h = %g: b on a %.12g N", 1.0 / rates[i], fb);
    ENSURE_MSG(fabs(fa - 3 * 9.81) <= 1e-9 * 9.81, "h = %g: a on the ground %.12g N", 1.0 / rates[i], fa);
    ENSURE(fallbacks == 0);
    stack_run("narrowphase", rates[i], &worst, &end_b, &fb, &fa, &fallbacks);
    printf("box on box, narrow phase's gap, h = %g: gap a-b at the end %.3g (the skin %g)\n", 1.0 / rates[i],
           end_b, KHZ_LCP_SKIN);
    /* the contrast: the default gap rests in the skin, so the check above
     * is one the default fails */
    ENSURE_MSG(end_b < -0.5 * KHZ_LCP_SKIN, "narrow phase: gap %.3g", end_b);
  }
}

/* ------------------------------------------------- corner into a face -- */

/* the lowest corner of the cube (half 0.05) at q, its height above z = 0 */
static double cube_gap(const double *q) {
  double low = INFINITY;
  for (int c = 0; c < 8; c++) {
    double v[3] = {c & 1 ? 0.05 : -0.05, c & 2 ? 0.05 : -0.05, c & 4 ? 0.05 : -0.05}, w[3];
    rotate(q + 3, v, w);
    low = fmin(low, q[2] + w[2]);
  }
  return low;
}

static double corner_run(const char *gap, double h, long *fallbacks, int *touched) {
  char yaml[1024];
  /* the block's top face is z = 0; the cube's lowest corner starts 2 cm above */
  snprintf(yaml, sizeof yaml,
           "khz_scene: 1\nrate_hz: %.17g\ngravity: [0, 0, -9.81]\nsleep: false\n"
           "contact: {method: lcp, mu: 0.4, lcp_gap: %s}\n"
           "objects:\n"
           "  - {name: block, shape: box, size: [1, 1, 0.2], mass: 10, pos: [0, 0, -0.2], fixed: true}\n"
           "  - {name: cube, shape: box, size: [0.05, 0.05, 0.05], mass: 1, pos: [0, 0, 0.1], rpy: [0.7, 0.5, 0.2],"
           " vel: [0.3, 0.1, -1], angvel: [2, -1, 3]}\n",
           1 / h, gap);
  khzModel *m = load_string(yaml);
  ENSURE(m != NULL);
  if (!m) return NAN;
  khzData *d = khz_makeData(m, 0);
  /* lift the cube so that its lowest corner is 2 cm above the face */
  d->q[2] += 0.02 - cube_gap(d->q);
  double worst = INFINITY;
  *touched = 0;
  int steps = (int)(0.4 / h + 0.5);
  for (int s = 0; s < steps; s++) {
    khz_step(m, d);
    double g = cube_gap(d->q);
    worst = fmin(worst, g);
    *touched += g < 1e-3;
  }
  *fallbacks = (long)d->warning[KHZ_WARN_LCP];
  khz_deleteData(&d);
  khz_deleteModel(&m);
  return worst;
}

/* Anitescu & Hart's theorem ("Proof that algorithm works"): the scheme's
 * infeasibility is at most C |v|^2 h^2. The cube's fastest point starts at
 * |v| + |omega| r = 1.37 m/s; the check takes C = 1 */
static void test_corner_held(void) {
  const double hs[] = {1e-3, 2e-3, 5e-3, 1e-2};
  const double v = sqrt(0.3 * 0.3 + 0.1 * 0.1 + 1) + sqrt(4 + 1 + 9) * 0.05 * sqrt(3);
  for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++) {
    long fb, fb_np;
    int touched, touched_np;
    double lp = corner_run("lpdepth", hs[i], &fb, &touched);
    double np = corner_run("narrowphase", hs[i], &fb_np, &touched_np);
    double bound = v * v * hs[i] * hs[i];
    printf("corner into a face, h = %g: lowest gap %.3g m with the LP gap (fallbacks %ld, steps touching %d), "
           "%.3g m with the narrow phase's (fallbacks %ld); |v|^2 h^2 = %.3g m\n",
           hs[i], lp, fb, touched, np, fb_np, bound);
    ENSURE_MSG(lp >= -bound, "h = %g: the corner went %.3g m into the face (bound %.3g)", hs[i], lp, bound);
    ENSURE_MSG(lp >= -2 * KHZ_LCP_LP_RECHECK, "h = %g: the corner went %.3g m into the face", hs[i], lp);
    ENSURE_MSG(fb == 0, "h = %g: %ld fallbacks", hs[i], fb);
    ENSURE_MSG(touched > 5, "h = %g: the cube touched the face in %d steps only", hs[i], touched);
  }
}

/* ------------------------------------------------------- first order -- */

/* libccd on two collision shapes in the world (khz_shape_support) */
static void ccd_support(const void *obj, const ccd_vec3_t *dir, ccd_vec3_t *out) {
  double d[3] = {dir->v[0], dir->v[1], dir->v[2]}, p[3];
  khz_shape_support((const khzColShape *)obj, d, p);
  ccdVec3Set(out, p[0], p[1], p[2]);
}
static void ccd_center(const void *obj, ccd_vec3_t *out) {
  const khzColShape *s = obj;
  ccdVec3Set(out, s->bcenter[0], s->bcenter[1], s->bcenter[2]);
}

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* the shape of geom g at d's kinematics */
static void shape_at(const khzModel *m, const khzData *d, int g, double *frame, double *aabb, khzColShape *s) {
  khz_collisionFrames(m, d, frame, aabb);
  khz_shape_make(m, g, frame + 12 * g, s);
}

/* the deepest reported depth of the pair in d's contact list, and its normal */
static double deepest(const khzData *d, double n[3]) {
  double best = -INFINITY;
  for (int c = 0; c < d->ncontact; c++) {
    const khzContact *ct = d->contact + c;
    for (int p = ct->point_adr; p < ct->point_adr + ct->npoint; p++)
      if (d->cpoint[p].depth > best) best = d->cpoint[p].depth, khzu_copy3(n, ct->normal);
  }
  return best;
}

static void test_first_order(void) {
  static const char *const movers[] = {
      "{name: b, shape: box, size: [0.06, 0.04, 0.03], mass: 1, pos: [0, 0, 0.5]}",
      "{name: b, shape: mesh, file: scenes/peg/meshes/paper0.obj, mass: 0.26, "
      "inertia: [0.0003629, 0.0002797, 0.0002351, 0, 0, 0], pos: [0, 0, 0.5]}",
  };
  const double deltas[3] = {1e-3, 1e-4, 1e-5};
  double all_rel[3] = {0, 0, 0}, all_np[3] = {0, 0, 0};
  for (int kind = 0; kind < 2; kind++) {
    khzModel *mods[2];
    for (int mode = 0; mode < 2; mode++) {
      char yaml[1024];
      snprintf(yaml, sizeof yaml,
               "khz_scene: 1\nrate_hz: 1000\ngravity: [0, 0, 0]\nsleep: false\n"
               "contact: {method: lcp, mu: 0.4, lcp_gap: %s}\n"
               "objects:\n"
               "  - {name: a, shape: box, size: [0.1, 0.08, 0.05], mass: 10, pos: [0, 0, 0], fixed: true}\n"
               "  - %s\n",
               mode ? "lpdepth" : "narrowphase", movers[kind]);
      mods[mode] = load_string(yaml);
      ENSURE(mods[mode] != NULL);
    }
    if (!mods[0] || !mods[1]) continue;
    khzModel *m = mods[1];
    khzData *d = khz_makeData(m, 0), *dn = khz_makeData(mods[0], 0);
    double *frame = malloc(12 * sizeof(double) * (size_t)m->ngeom), *aabb = malloc(6 * sizeof(double) * (size_t)m->ngeom);
    int same = 0, pairs = 0;
    double worst_same[3] = {0, 0, 0};
    ccd_t ccd;
    CCD_INIT(&ccd);
    ccd.support1 = ccd.support2 = ccd_support;
    ccd.center1 = ccd.center2 = ccd_center;
    ccd.max_iterations = 1000;
    ccd.epa_tolerance = 1e-13;
    ccd.dist_tolerance = 1e-15;
    for (int trial = 0; trial < 40; trial++) {
      /* a random orientation, the centre a little off the block's top face */
      double q[7] = {0.3 * (urand() - 0.5), 0.2 * (urand() - 0.5), 0.06, 0, 0, 0, 0};
      double u1 = urand(), u2 = 2 * M_PI * urand(), u3 = 2 * M_PI * urand();
      q[3] = sqrt(u1) * cos(u3), q[4] = sqrt(1 - u1) * sin(u2), q[5] = sqrt(1 - u1) * cos(u2);
      q[6] = sqrt(u1) * sin(u3);
      memcpy(d->q, q, sizeof q);
      khz_forward(m, d);
      khzColShape sa, sb;
      shape_at(m, d, 0, frame, aabb, &sa);
      shape_at(m, d, 1, frame, aabb, &sb);
      ccd_real_t depth;
      ccd_vec3_t dir, pos;
      /* libccd: b translated by depth along dir just touches a */
      if (ccdGJKPenetration(&sa, &sb, &ccd, &depth, &dir, &pos) != 0) continue;
      double n[3] = {dir.v[0], dir.v[1], dir.v[2]};
      pairs++;
      int agree = 1;
      for (int j = 0; j < 3; j++) {
        /* b left delta deep along EPA's direction: the Minkowski depth is delta */
        for (int k = 0; k < 3; k++) d->q[k] = q[k] + n[k] * (depth - deltas[j]);
        memcpy(d->q + 3, q + 3, 4 * sizeof(double));
        memset(d->qd, 0, (size_t)m->nv * sizeof(double));
        khzData *dd[2] = {dn, d};
        double got[2], nrm[2][3];
        memcpy(dn->q, d->q, (size_t)m->nq * sizeof(double));
        memset(dn->qd, 0, (size_t)m->nv * sizeof(double));
        dn->time = d->time = 0;
        for (int mode = 0; mode < 2; mode++) {
          khz_step(mods[mode], dd[mode]);
          got[mode] = deepest(dd[mode], nrm[mode]);
        }
        double rel = fabs(got[1] / deltas[j] - 1);
        all_rel[j] = fmax(all_rel[j], rel);
        all_np[j] = fmax(all_np[j], fabs(got[0] / deltas[j] - 1));
        /* the pair's normals agree: the LP's deepest unit and the narrow phase's deepest point
         * measure along the same line */
        if (fabs(khzu_dot3(nrm[0], nrm[1])) > 1 - 1e-9) {
          worst_same[j] = fmax(worst_same[j], fmax(rel, fabs(got[0] / deltas[j] - 1)));
        } else {
          agree = 0;
        }
      }
      same += agree;
    }
    printf("first order (%s on a box): %d pairs, %d with the normals agreeing at every delta; "
           "there |depth / delta - 1| <= %.3g / %.3g / %.3g at delta = 1e-3 / 1e-4 / 1e-5\n",
           kind ? "a convex hull" : "a box", pairs, same, worst_same[0], worst_same[1], worst_same[2]);
    ENSURE_MSG(pairs >= 30 && same >= 0.8 * pairs, "%d pairs, %d agreeing", pairs, same);
    for (int j = 0; j < 3; j++) ENSURE_MSG(worst_same[j] <= 1e-9, "delta %g: %.3g", deltas[j], worst_same[j]);
    free(frame), free(aabb);
    khz_deleteData(&d);
    khz_deleteData(&dn);
    khz_deleteModel(&mods[0]);
    khz_deleteModel(&mods[1]);
  }
  printf("first order, all pairs: max |depth / delta - 1| = %.3g / %.3g / %.3g (LP gap), %.3g / %.3g / %.3g (narrow phase) "
         "at delta = 1e-3 / 1e-4 / 1e-5\n",
         all_rel[0], all_rel[1], all_rel[2], all_np[0], all_np[1], all_np[2]);
  for (int j = 0; j < 3; j++) ENSURE_MSG(all_rel[j] <= 1e-9, "delta %g, all pairs: %.3g", deltas[j], all_rel[j]);
}

/* a gap the scene does not know is refused, named with its place */
static void test_bad_key(void) {
  khzScene sc;
  char err[512] = "";
  int rc = khz_loadSceneString(&sc, "khz_scene: 1\ncontact: {method: lcp, lcp_gap: ratio}\n", "test", ".", err,
                               sizeof err);
  ENSURE(rc != 0);
  if (rc == 0) khz_deleteScene(&sc);
  ENSURE_MSG(strstr(err, "contact.lcp_gap") && strstr(err, "ratio") && strstr(err, "lpdepth"), "%s", err);
}

int main(void) {
  test_bad_key();
  test_box_on_box();
  test_corner_held();
  test_first_order();
  return ensure_report();
}
