/* impulse.c — impacts (Drumwright Fig. 2's impulse branch): every pair that
 * impacts in a tick, and every resting pair a third body's impact reaches, gets
 * an impulse with Newton restitution and Coulomb friction at the centroid of
 * its contact points, applied before the tick's penalty forces.
 *   - The response of articulated bodies uses their articulated inertias
 *     (Mirtich's articulated impulse response, khz_impulseResponse in
 *     dynamics.c).
 *   - Pairs coupled through a moving body or an articulated tree form a
 *     cluster, and a cluster's impulses are solved together: its Delassus
 *     matrix W (the relative velocity change at each pair, in its contact
 *     frame, per unit impulse at each pair) is built from one impulse response
 *     per pair and direction. The normal impulses that meet every pair's
 *     restitution target at once come from the normal block of W (Cholesky,
 *     pairs with a negative impulse left out); a chain of bodies of very
 *     different masses, on which sweeps converge as m_light / m_heavy per
 *     sweep, is solved there. Projected Gauss-Seidel on W with accumulated
 *     impulses (normal >= 0 towards the target, friction in the disc
 *     mu lambda_n) then adds friction and settles the rest; its sweeps cost
 *     O(k^2) flops and no forward pass.
 *   - A cluster of more than KHZ_CLUSTER_PAIRS pairs, or one the scratch
 *     stack cannot hold, takes sequential impulses pair by pair instead
 *     (Baraff), KHZ_IMPULSE_SWEEPS sweeps.
 * Nothing here allocates: scratch comes from d's stack. */
#include "impulse.h"

#include <math.h>
#include <string.h>

#include "cluster.h"
#include "dynamics.h"
#include "penalty.h"
#include "spatial.h"

#define KHZ_IMPULSE_SWEEPS 8   /* sequential sweeps for a cluster not solved together */
#define KHZ_PGS_BUDGET 2e5     /* multiply-adds the sweeps of one cluster may take (tick time) */
#define KHZ_PGS_MAX_SWEEPS 5000
#define KHZ_PGS_TOL 1e-7       /* m/s: the sweeps stop when no velocity moves more */

/* Where a pair's impulse acts. The paper: the centroid of its contact
 * points. That is the centre of the contact patch only when the points are
 * spread evenly over it. Two equal cylinders cap on cap report the rim
 * samples of both, each inside or not by round-off (they lie on the other's
 * rim), and some twice: the mean of 5 cm cylinders' points lay 3.6 mm off
 * their axis, and with one sample missing the patch's area centroid still
 * 0.45 mm off. 80 N s through such a pair (100 kg landing on 1 kg on 10 g)
 * turned the 1 kg cylinder at up to 30 rad/s and the 10 g one squeezed
 * below was thrown out (bench/untuned_random.py). With automatic gains the
 * impulse acts under the bodies' centres of mass instead: at the point of
 * the contact plane where it turns them least (below), moved onto the
 * patch (the convex hull of the projected points inside) when it lies
 * outside. A body landing flat with one
 * face then takes no torque from the landing, as a rigid one does, and a
 * body landing on an edge or a corner still takes its impulse there. The
 * hull is walked by gift wrapping (Jarvis, O(points x hull vertices), no
 * scratch); a walk that does not close within the point count (round-off on
 * near-collinear points) keeps the centroid. Scenes with their own gains
 * keep the centroid (the paper's). */
/* the mean of a pair's contact points */
static void points_mean(const khzContactPoint *pts, int n, double x[3]) {
  x[0] = x[1] = x[2] = 0;
  for (int p = 0; p < n; p++)
    for (int j = 0; j < 3; j++) x[j] += pts[p].pos[j] / n;
}

static void impulse_point(const khzModel *m, const khzData *d, const khzContact *c, double x[3]) {
  const khzContactPoint *pts = d->cpoint + c->point_adr;
  int n = c->npoint;
  points_mean(pts, n, x);
  if (!n || !khz_penaltyAutoGains(m, c)) return;
  double t0[3], t1[3], ext = 0, pu = 0, pv = 0, A[3] = {0, 0, 0}, b[2] = {0, 0};
  khzu_orthogonal(t0, c->normal);
  khzu_cross(t1, c->normal, t0);
  /* x minimises the rotational energy the impulse P n gives the bodies,
   * sum_i 1/2 |(x - com_i) x n P|^2 over the inverse world inertia G_i:
   * with u = x - c_i in the plane's coordinates (c_i the centre's
   * projection) that is u^T A_i u, A_i = [[t1.G t1, -t1.G t0], [-t0.G t1,
   * t0.G t0]] ((u0 t0 + u1 t1) x n = u1 t0 - u0 t1), so x = (sum A_i)^-1
   * sum A_i c_i: the body that turns more easily about the plane's axes (a
   * light cylinder, not a light but long box under a small heavy capsule)
   * decides. A robot's link counts with its own inertia. */
  for (int s = 0; s < 2; s++) {
    int bb = c->body[s];
    if (bb <= 0 || khz_bodyStatic(m, bb)) continue;
    double L[9], tmp[9], G[9], g0[3], g1[3];
    const double *R = d->xrot + 9 * bb, *cm = d->xcom + 3 * bb;
    khzu_mulMat3(tmp, R, m->body_inertia + 9 * bb);
    khzu_mulMatMatT3(L, tmp, R);
    if (khzu_cholFactor(L, 3) != 0) continue;
    khzu_cholInverse(L, 3, G);
    for (int j = 0; j < 3; j++) g0[j] = G[3 * j] * t0[0] + G[3 * j + 1] * t0[1] + G[3 * j + 2] * t0[2];
    for (int j = 0; j < 3; j++) g1[j] = G[3 * j] * t1[0] + G[3 * j + 1] * t1[1] + G[3 * j + 2] * t1[2];
    double a00 = khzu_dot3(t1, g1), a01 = -khzu_dot3(t1, g0), a11 = khzu_dot3(t0, g0);
    double r[3] = {cm[0] - x[0], cm[1] - x[1], cm[2] - x[2]}, cu = khzu_dot3(r, t0), cv = khzu_dot3(r, t1);
    A[0] += a00, A[1] += a01, A[2] += a11;
    b[0] += a00 * cu + a01 * cv, b[1] += a01 * cu + a11 * cv;
  }
  double det = A[0] * A[2] - A[1] * A[1];
  if (!(det > 1e-12 * A[0] * A[2]) || !(A[0] > 0)) return;
  pu = (A[2] * b[0] - A[1] * b[1]) / det, pv = (A[0] * b[1] - A[1] * b[0]) / det;
#define KHZ_PU(k) ((pts[k].pos[0] - x[0]) * t0[0] + (pts[k].pos[1] - x[1]) * t0[1] + (pts[k].pos[2] - x[2]) * t0[2])
#define KHZ_PV(k) ((pts[k].pos[0] - x[0]) * t1[0] + (pts[k].pos[1] - x[1]) * t1[1] + (pts[k].pos[2] - x[2]) * t1[2])
  /* the patch: the points inside, as the bottom of the volume takes them
   * (deeper than 1e-3 of the deepest; bottom.c). The volume's vertices on
   * the contact plane would widen a body's landing edge into a strip, and
   * the impulse, moved onto the strip's side nearest the centres of mass,
   * would leave the edge. */
  double dmin = 1e-3 * pts[c->deepest - c->point_adr].depth;
#define KHZ_IN(k) (pts[k].depth > dmin)
  int start = -1;
  for (int k = 0; k < n; k++) {
    if (!KHZ_IN(k)) continue;
    if (start < 0) start = k;
    double u = KHZ_PU(k), v = KHZ_PV(k), us = KHZ_PU(start), vs = KHZ_PV(start);
    ext = fmax(ext, fmax(fabs(u), fabs(v)));
    if (u < us || (u == us && v < vs)) start = k;
  }
  if (start < 0) return; /* nothing inside: the centroid */
  double tol = 1e-9 * ext, us = KHZ_PU(start), vs = KHZ_PV(start);
  /* the hull's edges, anticlockwise: p is inside when it lies left of
   * every one; else the nearest point of the hull's edges */
  int cur = start, closed = 0, inside = 1, nedge = 0;
  double best = INFINITY, bu = us, bv = vs;
  for (int it = 0; it <= n && !closed && ext > 0; it++) {
    double uc = KHZ_PU(cur), vc = KHZ_PV(cur), un = 0, vn = 0;
    int next = -1;
    for (int k = 0; k < n; k++) {
      if (!KHZ_IN(k)) continue;
      double uk = KHZ_PU(k) - uc, vk = KHZ_PV(k) - vc;
      if (fabs(uk) <= tol && fabs(vk) <= tol) continue; /* cur itself, or a duplicate */
      if (next < 0) {
        next = k, un = uk, vn = vk;
        continue;
      }
      double cr = un * vk - vn * uk; /* < 0: k lies right of cur -> next (the walk goes anticlockwise) */
      if (cr < -tol * ext || (fabs(cr) <= tol * ext && uk * uk + vk * vk > un * un + vn * vn)) next = k, un = uk, vn = vk;
    }
    if (next < 0) break; /* every point on one spot */
    nedge++;
    double cr = un * (pv - vc) - vn * (pu - uc), l2 = un * un + vn * vn;
    double t = fmin(fmax(((pu - uc) * un + (pv - vc) * vn) / l2, 0), 1);
    double qu = uc + t * un, qv = vc + t * vn, dist = (qu - pu) * (qu - pu) + (qv - pv) * (qv - pv);
    if (cr < -tol * ext) inside = 0;
    if (dist < best) best = dist, bu = qu, bv = qv;
    closed = fabs(uc + un - us) <= tol && fabs(vc + vn - vs) <= tol;
    cur = next;
  }
#undef KHZ_PU
#undef KHZ_PV
#undef KHZ_IN
  if (ext > 0 && !closed) return; /* the walk did not close: the centroid */
  /* a single spot: there; a segment (two edges there and back): its nearest
   * point; a polygon: p, or its nearest point when outside */
  if (!(ext > 0)) pu = us, pv = vs;
  else if (nedge <= 2 || !inside) pu = bu, pv = bv;
  for (int j = 0; j < 3; j++) x[j] += pu * t0[j] + pv * t1[j];
}

/* Newton's restitution target for the normal velocity vn (< 0: approaching)
 * of pair c's centroid: -e vn. The pair is found up to a step's travel
 * deep, and its penetration is released gradually, not pushed out
 * (KHZ_IMPACT_RELAX in penalty.c), so a body leaving at -e vn from depth d
 * climbs d through its own penetration: a ball loses (1 - e^2) d of every
 * bounce's height (e = 0.5, bounce 3 from 1 m: 8%). With automatic gains
 * and e > 0 the target is the speed that puts the body back on the path it
 * would have had, had it bounced at the time of impact: with a the free
 * relative normal acceleration (gravity on free rigid bodies; negative when
 * it drives the approach), the approach speed at first touch is
 * vc^2 = vn^2 + 2 a dc, dc the centroid's travel since then (the
 * penetration the springs do not see, the pair's offset, scaled by the
 * centroid's approach over the deepest point's), and the body leaves with
 * u^2 = e^2 vc^2 - 2 a dc: its apex is e^2 vc^2 / (2 |a|) above the surface,
 * as from a bounce at first touch. A bounce that would not rise above the
 * depth at which the automatic spring holds a body up (|a| (h / 0.3)^2)
 * is no bounce but a landing: it keeps -e vn (the correction would lift a
 * body set down at rest back to the surface at every step, and it would
 * hover there), with a linear blend over one more such depth. Where
 * gravity does not drive the approach (two free bodies falling together:
 * a = 0) there is nothing to correct, and the target is -e vn exactly.
 * Articulated trees keep -e vn. */
static double restitution_target(const khzModel *m, const khzData *d, const khzContact *c, double vn) {
  double e = m->contact.restitution;
  if (!(vn < 0)) return 0;
  if (!(e > 0) || !c->npoint || !khz_penaltyAutoGains(m, c)) return -e * vn;
  double a = 0;
  for (int s = 0; s < 2; s++) {
    int b = c->body[s];
    if (b <= 0 || khz_bodyStatic(m, b)) continue;
    if (!khz_bodyFree(m, b)) return -e * vn;
    a += (s ? -1 : 1) * khzu_dot3(m->gravity, c->normal);
  }
  if (!(a < 0)) return -e * vn; /* gravity does not drive the approach: nothing to correct */
  const khzContactPoint *deep = d->cpoint + c->deepest;
  double depth = fmin(d->pair[c->slot].offset, deep->depth), v0[3], v1[3];
  khz_pointVelocity(m, d, c->body[0], deep->pos, v0);
  khz_pointVelocity(m, d, c->body[1], deep->pos, v1);
  double vd = (v0[0] - v1[0]) * c->normal[0] + (v0[1] - v1[1]) * c->normal[1] + (v0[2] - v1[2]) * c->normal[2];
  if (!(depth > 0) || !(vd < 0)) return -e * vn;
  double dc = depth * fmin(vn / vd, 1);
  double vc2 = fmax(vn * vn + 2 * a * dc, 0), u2 = e * e * vc2 - 2 * a * dc;
  double u = u2 > 0 ? sqrt(u2) : 0;
  double apex = e * e * vc2 / (-2 * a), rest = khz_penaltyAutoDepth(d, -a);
  double blend = fmin(fmax(apex / rest - 1, 0), 1);
  return blend > 0 ? -e * vn + blend * (u + e * vn) : -e * vn;
}

/* solves the 3x3 system K x = b (K symmetric positive definite) */
static int solve3(const double K[9], const double b[3], double x[3]) {
  double L[9];
  memcpy(L, K, sizeof L);
  if (khzu_cholFactor(L, 3) != 0) return -1;
  memcpy(x, b, 3 * sizeof(double));
  khzu_cholSolve(L, 3, x);
  return 0;
}

/* one impulse on an impacting pair at the centroid of its contact points:
 * Newton restitution on the normal velocity, sticking if the impulse stays in
 * the friction cone, otherwise sliding impulse mu lambda_n against the
 * tangential velocity. Returns 1 if an impulse was applied. */
static int impulse_pair(const khzModel *m, khzData *d, khzContact *c, double target_vn,
                        double *dqd, double *dsum, double *dvel) {
  int b0 = c->body[0], b1 = c->body[1];
  const double *n = c->normal;
  double x[3];
  impulse_point(m, d, c, x);

  double v0[3], v1[3], u[3];
  khz_pointVelocity(m, d, b0, x, v0);
  khz_pointVelocity(m, d, b1, x, v1);
  for (int j = 0; j < 3; j++) u[j] = v0[j] - v1[j];
  double un = khzu_dot3(u, n);
  if (un >= target_vn - 1e-9) return 0;

  /* collision matrix K: relative velocity change per unit impulse (columns) */
  double K[9];
  for (int col = 0; col < 3; col++) {
    double J[3] = {0, 0, 0}, a0[3], a1[3], b0v[3], b1v[3];
    J[col] = 1;
    khz_pointResponse(m, d, b0, x, J, b1, x, a0, a1, dqd, dvel);
    double Jm[3] = {-J[0], -J[1], -J[2]};
    if (b1 > 0) khz_pointResponse(m, d, b1, x, Jm, b0, x, b1v, b0v, dqd, dvel);
    else b1v[0] = b1v[1] = b1v[2] = b0v[0] = b0v[1] = b0v[2] = 0;
    for (int r = 0; r < 3; r++) K[3 * r + col] = (a0[r] + b0v[r]) - (a1[r] + b1v[r]);
  }
  /* symmetrise against round-off */
  for (int r = 0; r < 3; r++)
    for (int s = r + 1; s < 3; s++) K[3 * r + s] = K[3 * s + r] = 0.5 * (K[3 * r + s] + K[3 * s + r]);

  /* sticking impulse: bring the relative velocity to target_vn n */
  double du[3], lam[3];
  for (int j = 0; j < 3; j++) du[j] = target_vn * n[j] - u[j];
  if (solve3(K, du, lam) != 0) return 0;
  double ln = khzu_dot3(lam, n), lt[3];
  for (int j = 0; j < 3; j++) lt[j] = lam[j] - ln * n[j];
  double ltn = sqrt(khzu_dot3(lt, lt));
  if (ln < 0 || ltn > c->mu * ln) {
    /* sliding: lambda = ln (n - mu t), t along the tangential velocity */
    double ut[3], t[3] = {0, 0, 0};
    for (int j = 0; j < 3; j++) ut[j] = u[j] - un * n[j];
    double utn = sqrt(khzu_dot3(ut, ut));
    if (utn > 1e-12)
      for (int j = 0; j < 3; j++) t[j] = ut[j] / utn;
    double dir[3], Kd[3];
    for (int j = 0; j < 3; j++) dir[j] = n[j] - c->mu * t[j];
    khzu_mulMatVec3(Kd, K, dir);
    double nKd = khzu_dot3(n, Kd);
    if (!(nKd > 0)) return 0;
    ln = (target_vn - un) / nKd;
    for (int j = 0; j < 3; j++) lam[j] = ln * dir[j];
  }

  /* apply: +lambda on body 0, -lambda on body 1, both at x */
  double a0[3], a1[3];
  memset(dsum, 0, (size_t)m->nv * sizeof(double));
  khz_pointResponse(m, d, b0, x, lam, b1, x, a0, a1, dqd, dvel);
  for (int k = 0; k < m->nv; k++) dsum[k] += dqd[k];
  if (b1 > 0) {
    double lm[3] = {-lam[0], -lam[1], -lam[2]};
    khz_pointResponse(m, d, b1, x, lm, b0, x, a1, a0, dqd, dvel);
    for (int k = 0; k < m->nv; k++) dsum[k] += dqd[k];
  }
  for (int k = 0; k < m->nv; k++) d->qd[k] += dsum[k];
  return 1;
}


/* ---------------------------------------------------- clusters together -- */

/* the normal relative velocity at the point x where the pair's impulse acts */
static double impulse_approach(const khzModel *m, const khzData *d, const khzContact *c,
                              double x[3]) {
  double v0[3], v1[3];
  impulse_point(m, d, c, x);
  khz_pointVelocity(m, d, c->body[0], x, v0);
  khz_pointVelocity(m, d, c->body[1], x, v1);
  return (v0[0] - v1[0]) * c->normal[0] + (v0[1] - v1[1]) * c->normal[1] +
         (v0[2] - v1[2]) * c->normal[2];
}

/* an orthonormal frame (n, t1, t2) */
static void contact_frame(const double n[3], double fr[9]) {
  for (int j = 0; j < 3; j++) fr[j] = n[j];
  khzu_orthogonal(fr + 3, n);
  khzu_cross(fr + 6, fr, fr + 3);
}

/* the dofs of tree root (its bodies lie in [root, treeend), other trees'
 * may lie between them): dqd = 0 there */
static void tree_clear(const khzModel *m, int root, double *dqd) {
  for (int b = root; b < m->body_treeend[root]; b++)
    if (m->body_root[b] == root)
      for (int a = 0; a < m->jnt_nv[b]; a++) dqd[m->jnt_dofadr[b] + a] = 0;
}

/* qd += dqd over the dofs of tree root; after_zero: qd += 0.0 first (see
 * khz_resolveImpacts: the signed zeros of the whole-vector sums) */
static void tree_add(const khzModel *m, int root, double *qd, const double *dqd, int after_zero) {
  for (int b = root; b < m->body_treeend[root]; b++)
    if (m->body_root[b] == root)
      for (int a = 0, q = m->jnt_dofadr[b]; a < m->jnt_nv[b]; a++, q++)
        qd[q] = (after_zero ? qd[q] + 0.0 : qd[q]) + dqd[q];
}

/* A landing (phases.c) takes its impulses at up to this many of its points
 * rather than at their centroid, and at the point not yet in contact that
 * lands within the step */
#define KHZ_REIMPACT_SITES 8

/* The points of a landing pair where its impulses act: the fastest
 * approaching point, then the farthest point in each of 8 directions of
 * the contact plane about the centroid (the corners of the region, which
 * every distribution of impulse over it can be moved to), then -1 for the
 * landing's speculative points (-1 - their index). A body tipping onto its second
 * edge must turn about the edge it rests on and be stopped at the one that
 * lands; one impulse at the centroid of both (the paper's impact, tried as
 * a re-impact) does neither. Returns the count. */
static int reimpact_points(const khzModel *m, const khzData *d, const khzContact *c, const khzLanding *L,
                           int *pick) {
  const khzContactPoint *pts = d->cpoint + c->point_adr;
  double x[3], fr[9], best = INFINITY;
  points_mean(pts, c->npoint, x); /* the directions' centre */
  contact_frame(c->normal, fr);
  int n = 0, fastest = -1;
  for (int k = 0; k < c->npoint; k++) {
    double v0[3], v1[3];
    khz_pointVelocity(m, d, c->body[0], pts[k].pos, v0);
    khz_pointVelocity(m, d, c->body[1], pts[k].pos, v1);
    double sn = (v0[0] - v1[0]) * c->normal[0] + (v0[1] - v1[1]) * c->normal[1] + (v0[2] - v1[2]) * c->normal[2];
    if (sn < best) best = sn, fastest = k;
  }
  if (fastest < 0) return 0;
  pick[n++] = fastest;
  for (int dir = 0; dir < 8 && n < KHZ_REIMPACT_SITES; dir++) {
    double a = dir * M_PI / 4, u[3], far = -INFINITY;
    int at = -1;
    for (int j = 0; j < 3; j++) u[j] = cos(a) * fr[3 + j] + sin(a) * fr[6 + j];
    for (int k = 0; k < c->npoint; k++) {
      double r = (pts[k].pos[0] - x[0]) * u[0] + (pts[k].pos[1] - x[1]) * u[1] + (pts[k].pos[2] - x[2]) * u[2];
      if (r > far) far = r, at = k;
    }
    int seen = 0;
    for (int q = 0; q < n; q++) seen |= pick[q] == at;
    if (at >= 0 && !seen) pick[n++] = at;
  }
  for (int q = 0; q < L->nspec; q++) pick[n++] = -1 - q;
  return n;
}

/* Projected Gauss-Seidel with accumulated impulses on a cluster's W (n3 =
 * 3 k, symmetric), u + W lam = v kept current: per pair the normal impulse
 * towards v_n = target (kept >= 0), then the tangential one towards v_t = 0
 * (the 2 x 2 block), held inside the disc mu lambda_n. At most max_sweeps
 * sweeps; stops when no velocity moved more than KHZ_PGS_TOL. Returns the
 * sweeps taken, the last sweep's largest move in *moved_last. */
static inline __attribute__((always_inline)) int pgs_sweeps_body(const khzData *d, const int *site,
                                                                 int k, const double *W, const double *tgt,
                                                                 double *lam, double *v, int max_sweeps,
                                                                 double *moved_last) {
  int n3 = 3 * k, sweep;
  double moved = 0;
  for (sweep = 0; sweep < max_sweeps; sweep++) {
    moved = 0;
    for (int i = 0; i < k; i++) {
      const khzContact *ci = d->contact + site[i];
      double *li = lam + 3 * i, *vi = v + 3 * i, dl[3];
      const double *Wi = W + (size_t)(3 * i) * n3 + 3 * i; /* the pair's 3 x 3 block, rows n3 apart */
      double wnn = Wi[0];
      if (!(wnn > 0)) continue;
      double ln = fmax(0, li[0] - (vi[0] - tgt[i]) / wnn);
      dl[0] = ln - li[0];
      /* the tangential velocity once the normal change is in */
      double vt1 = vi[1] + Wi[n3] * dl[0], vt2 = vi[2] + Wi[2 * n3] * dl[0];
      double a = Wi[n3 + 1], b = Wi[n3 + 2], cc = Wi[2 * n3 + 2], det = a * cc - b * b;
      double lt1, lt2;
      if (det > 1e-12 * a * cc) {
        lt1 = li[1] - (cc * vt1 - b * vt2) / det;
        lt2 = li[2] - (a * vt2 - b * vt1) / det;
      } else {
        lt1 = a > 0 ? li[1] - vt1 / a : li[1];
        lt2 = cc > 0 ? li[2] - vt2 / cc : li[2];
      }
      double ltn = sqrt(lt1 * lt1 + lt2 * lt2), cap = ci->mu * ln;
      if (ltn > cap && d->contact_method == KHZ_CONTACT_DEEPEST && det > 1e-12 * a * cc) {
        /* sliding, under the deepest-point method: the point of the disc
         * that minimises the pair's quadratic 1/2 P^T A P - P^T (A l - v_t)
         * (Coulomb's maximal dissipation, the slip opposed), not the
         * unbounded solution scaled onto the disc. At a corner A couples
         * the tangents (the body turns), and the scaled impulse pointed
         * off the slip: a box sliding on one corner with mu 0.6 landed
         * with 0.93-0.96 of mu lambda_n along it and stopped up to 1.8 %
         * late (docs/contact.md, friction) */
        double A2[3] = {a, b, cc}, b2[2] = {a * li[1] + b * li[2] - vt1, b * li[1] + cc * li[2] - vt2}, P2[2];
        khz_discDissipation(A2, b2, cap, P2);
        lt1 = P2[0], lt2 = P2[1];
      } else if (ltn > cap) {
        lt1 *= cap / ltn, lt2 *= cap / ltn;
      }
      dl[1] = lt1 - li[1], dl[2] = lt2 - li[2];
      li[0] = ln, li[1] = lt1, li[2] = lt2;
      /* v += W's three columns of the pair times dl (row = column: W is
       * symmetric), in one pass when all three move: the same sums in the
       * same order, ((v + c0 dl0) + c1 dl1) + c2 dl2. A column whose dl is 0
       * is skipped, not added as 0 (that would turn a -0 into +0) */
      const double *c0 = W + (size_t)(3 * i) * n3, *c1 = c0 + n3, *c2 = c1 + n3;
      if (dl[0] != 0 && dl[1] != 0 && dl[2] != 0) {
        for (int r = 0; r < n3; r++) v[r] = v[r] + c0[r] * dl[0] + c1[r] * dl[1] + c2[r] * dl[2];
      } else {
        for (int e = 0; e < 3; e++) {
          if (dl[e] == 0) continue;
          const double *col = c0 + (size_t)e * n3;
          for (int r = 0; r < n3; r++) v[r] += col[r] * dl[e];
        }
      }
      moved = fmax(moved, fabs(dl[0]) * wnn + fabs(dl[1]) * a + fabs(dl[2]) * cc);
    }
    if (moved < KHZ_PGS_TOL) break;
  }
  *moved_last = moved;
  return sweep;
}

/* the sweeps compiled for AVX too (as forward_pass): the same bits, no FMA */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static int pgs_sweeps_avx(const khzData *d, const int *site, int k,
                                                         const double *W, const double *tgt, double *lam, double *v,
                                                         int max_sweeps, double *moved_last) {
  return pgs_sweeps_body(d, site, k, W, tgt, lam, v, max_sweeps, moved_last);
}
#endif

static int pgs_sweeps(const khzData *d, const int *site, int k, const double *W,
                      const double *tgt, double *lam, double *v, int max_sweeps, double *moved_last) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) return pgs_sweeps_avx(d, site, k, W, tgt, lam, v, max_sweeps, moved_last);
#endif
  return pgs_sweeps_body(d, site, k, W, tgt, lam, v, max_sweeps, moved_last);
}

/* khz_pointVelocityChange for body b's velocity change at w (6) */
static void point_change(const khzModel *m, const khzData *d, int b, const double x[3], const double *w,
                         double dv[3]) {
  const double *o = d->xpos + 3 * m->body_root[b];
  double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]};
  khzu_cross(dv, w, r);
  for (int j = 0; j < 3; j++) dv[j] += w[3 + j];
}

/* One cluster of k impacting pairs (contact indices idx) solved together.
 * Unknowns: each site's impulse in its pair's frame, lam = (normal, t1, t2),
 * +lam on body 0 and -lam on body 1 at the site: the pair's centroid, or
 * for a landing pair (landing, may be NULL) each of its points from
 * reimpact_points, each with Newton's target on its own approach (0 when it
 * does not approach). A landing that comes a part f of the way through the
 * step (a point not yet in contact, phases.c) takes (1 - f) of its
 * impulses: the step's velocity is then f v_before + (1 - f) v_after, the
 * velocity that moves the body as the impact at f h would over the step,
 * and the landing point arrives where the pair rests; the rest, f of the
 * impulses, comes at the next step, when it has landed (the same solve on
 * the same points). v = u + W lam is the relative
 * velocity after the impulses (u before). The velocity change is
 * gathered in dqd over the dofs of the trees the impulses move only (each
 * tree marked in tree_mark with `order` + 1 when met): O(the cluster), not
 * O(nv). order: the clusters applied before this one in the step. Returns the
 * sweeps taken, or -1 when the scratch stack is short (nothing is applied). */
static int solve_cluster(const khzModel *m, khzData *d, const int *idx, int npair, const khzLanding *landing,
                         double *dvel, double *dqd, int *tree_mark, int order) {
  size_t mark = khz_stackMark(d);
  /* the sites: one per pair, or the points of a landing pair while the
   * cluster stays within KHZ_CLUSTER_PAIRS sites (the stack reserved) */
  int k = 0, pick[KHZ_REIMPACT_SITES + 5], split = 0;
  for (int i = 0; i < npair; i++)
    k += landing && landing[idx[i]].on ? reimpact_points(m, d, d->contact + idx[i], landing + idx[i], pick) : 1;
  if (k > npair && k <= KHZ_CLUSTER_PAIRS) split = 1;
  else k = npair;
  int n3 = 3 * k;
  int *site = khz_stackAlloc(d, 2 * (size_t)k * sizeof(int)), *own = site + k;
  double *x = khz_stackAlloc(d, 3 * (size_t)k * sizeof(double));
  double *fr = khz_stackAlloc(d, 9 * (size_t)k * sizeof(double));
  double *W = khz_stackAlloc(d, (size_t)n3 * (size_t)n3 * sizeof(double));
  double *v = khz_stackAlloc(d, (size_t)n3 * sizeof(double));
  double *lam = khz_stackAlloc(d, (size_t)n3 * sizeof(double));
  double *tgt = khz_stackAlloc(d, (size_t)k * sizeof(double));
  double *N = khz_stackAlloc(d, (size_t)k * (size_t)k * sizeof(double));
  double *ln = khz_stackAlloc(d, (size_t)k * sizeof(double));
  int *act = khz_stackAlloc(d, 2 * (size_t)k * sizeof(int));
  int *trees = khz_stackAlloc(d, 2 * (size_t)k * sizeof(int)); /* the trees moved, at most 2 per pair */
  size_t wcols = 6 * KHZ_RESPONSE_COLS * (size_t)m->nbody * sizeof(double); /* W's walks */
  double *uc = khz_stackAlloc(d, wcols), *dvc = khz_stackAlloc(d, wcols);
  if (!(site && x && fr && W && v && lam && tgt && N && ln && act && trees && uc && dvc)) {
    khz_stackFree(d, mark);
    return -1;
  }
  double frac = 1;
  for (int i = 0, s = 0; i < npair; i++) {
    const khzContact *c = d->contact + idx[i];
    const khzLanding *L = split && landing[idx[i]].on ? landing + idx[i] : NULL;
    int np = L ? reimpact_points(m, d, c, L, pick) : 0;
    for (int q = 0; q < (np ? np : 1); q++, s++) {
      double *xi = x + 3 * s, v0[3], v1[3], u[3];
      site[s] = idx[i], own[s] = np > 0;
      if (np && pick[q] >= 0) {
        memcpy(xi, d->cpoint[c->point_adr + pick[q]].pos, 3 * sizeof(double));
      } else if (np) {
        memcpy(xi, L->spec_pos[-1 - pick[q]], 3 * sizeof(double));
      } else impulse_point(m, d, c, xi);
      contact_frame(c->normal, fr + 9 * s);
      khz_pointVelocity(m, d, c->body[0], xi, v0);
      khz_pointVelocity(m, d, c->body[1], xi, v1);
      for (int j = 0; j < 3; j++) u[j] = v0[j] - v1[j];
      for (int r = 0; r < 3; r++) v[3 * s + r] = khzu_dot3(u, fr + 9 * s + 3 * r);
      /* Newton's restitution on the centroid's own approach: the fastest
       * point of a body landing on one edge moves twice as fast as the
       * centroid, and a target from it would add energy. A landing's points
       * each take their own (the impulses then turn the body about the
       * points it rests on), as above. */
      tgt[s] = !np ? restitution_target(m, d, c, v[3 * s]) : (v[3 * s] < 0 ? -m->contact.restitution * v[3 * s] : 0);
    }
    /* the part of the step before the cluster's first impact */
    frac = fmin(frac, L ? L->frac : 0);
  }

  /* W, column by column: a unit impulse along direction e of pair j (the
   * bodies' velocity changes are all it reads). A side's three directions
   * in one walk (khz_impulseResponseCols: each column bit for bit the walk
   * of khz_impulseResponse alone); every entry still takes side 0's term,
   * then side 1's. */
  memset(W, 0, (size_t)n3 * (size_t)n3 * sizeof(double));
  for (int j = 0; j < k; j++) {
    const khzContact *cj = d->contact + site[j];
    for (int s = 0; s < 2; s++) {
      int b = cj->body[s];
      if (b <= 0 || khz_bodyStatic(m, b)) continue;
      double f[18];
      for (int e = 0; e < 3; e++) {
        double J[3];
        for (int q = 0; q < 3; q++) J[q] = (s ? -1 : 1) * fr[9 * j + 3 * e + q];
        khz_spatialImpulse(m, d, b, x + 3 * j, J, f + 6 * e);
      }
      khz_impulseResponseCols(m, d, b, 3, f, NULL, uc, dvc);
      for (int e = 0; e < 3; e++)
        for (int i = 0; i < k; i++) {
          const khzContact *ci = d->contact + site[i];
          for (int s2 = 0; s2 < 2; s2++) {
            int bi = ci->body[s2];
            if (bi <= 0 || m->body_root[bi] != m->body_root[b]) continue;
            double dv[3];
            point_change(m, d, bi, x + 3 * i, dvc + 6 * KHZ_RESPONSE_COLS * (size_t)bi + 6 * e, dv);
            for (int r = 0; r < 3; r++)
              W[(3 * i + r) * n3 + 3 * j + e] += (s2 ? -1 : 1) * khzu_dot3(dv, fr + 9 * i + 3 * r);
          }
        }
    }
  }
  for (int r = 0; r < n3; r++) /* symmetrise against round-off */
    for (int s = r + 1; s < n3; s++) W[r * n3 + s] = W[s * n3 + r] = 0.5 * (W[r * n3 + s] + W[s * n3 + r]);

  /* warm start: the normal impulses that bring every pair's normal velocity
   * to its target at once (the normal block of W by Cholesky), the pairs
   * whose impulse comes out negative left out and the rest solved again.
   * A chain of bodies of very different masses, on which the sweeps below
   * converge as m_light / m_heavy per sweep, is solved here. */
  memset(lam, 0, (size_t)n3 * sizeof(double));
  int *map = act + k;
  /* a re-impact's points start from zero: their normal block is singular
   * (more points than the body has ways to move) */
  for (int i = 0; i < k; i++) act[i] = !own[i];
  for (int pass = 0; pass < k; pass++) {
    int na = 0;
    for (int i = 0; i < k; i++)
      if (act[i]) map[na++] = i;
    if (!na) break;
    for (int a = 0; a < na; a++) {
      for (int b = 0; b < na; b++) N[a * na + b] = W[(size_t)(3 * map[a]) * n3 + 3 * map[b]];
      N[a * na + a] *= 1 + 1e-12;
      ln[a] = tgt[map[a]] - v[3 * map[a]];
    }
    if (khzu_cholFactor(N, na) != 0) break; /* degenerate: the sweeps alone */
    khzu_cholSolve(N, na, ln);
    int negative = 0;
    for (int a = 0; a < na; a++)
      if (ln[a] < 0) act[map[a]] = 0, negative = 1;
    if (negative) continue;
    for (int a = 0; a < na; a++) {
      int i = map[a];
      lam[3 * i] = ln[a];
      const double *col = W + (size_t)(3 * i) * n3;
      for (int r = 0; r < n3; r++) v[r] += col[r] * ln[a];
    }
    break;
  }

  /* projected Gauss-Seidel with accumulated impulses (pgs_sweeps) */
  double per_sweep = 9.0 * k * k + 1, moved = 0;
  int max_sweeps = (int)fmin(KHZ_PGS_MAX_SWEEPS, fmax(20, KHZ_PGS_BUDGET / per_sweep));
  int sweep = pgs_sweeps(d, site, k, W, tgt, lam, v, max_sweeps, &moved);
  /* out of sweeps while the last one still moved a velocity by more than
   * Fig. 2's eps: the impulses are short of converged */
  if (sweep == max_sweeps && moved > m->contact.impact_velocity) d->warning[KHZ_WARN_IMPULSE]++;

  /* apply: one impulse response per pair and body, summed in dqd over the
   * dofs of the trees moved (cleared when first met), then added to qd */
  int ntree = 0;
  for (int i = 0; i < k; i++) {
    const khzContact *ci = d->contact + site[i];
    const double *li = lam + 3 * i, *f3 = fr + 9 * i;
    if (li[0] == 0 && li[1] == 0 && li[2] == 0) continue;
    for (int s = 0; s < 2; s++) {
      int b = ci->body[s];
      if (b <= 0 || khz_bodyStatic(m, b)) continue;
      double J[3], f[6];
      for (int q = 0; q < 3; q++) J[q] = (s ? -1 : 1) * (li[0] * f3[q] + li[1] * f3[3 + q] + li[2] * f3[6 + q]);
      if (frac > 0)
        for (int q = 0; q < 3; q++) J[q] *= 1 - frac;
      int root = m->body_root[b];
      if (tree_mark[root] != order + 1) {
        tree_mark[root] = order + 1, trees[ntree++] = root;
        tree_clear(m, root, dqd);
      }
      khz_spatialImpulse(m, d, b, x + 3 * i, J, f);
      khz_impulseResponse(m, d, b, f, dqd, dvel);
    }
  }
  for (int t = 0; t < ntree; t++) tree_add(m, trees[t], d->qd, dqd, order > 0);
  khz_stackFree(d, mark);
  return sweep;
}

/* The passes after the impulses are velocity passes: the impulses change qd
 * only, and the position part of the forward pass (poses, S, inertias) is
 * already at d->q for every awake body (a sleeping one is skipped by either
 * pass), so a whole forward pass at (d->q, d->qd) would write the same
 * position bits again. Why it is at d->q here:
 *   - a body awake when step_once ran its first pass: that pass was at d->q,
 *     or khz_kinematicsAt found the last one at the same bits of q (a
 *     pass that skipped sleeping bodies keeps its stamp: their fields are
 *     at their frozen q; khz_wake forgets it);
 *   - a body woken since, by a contact in khz_collideStep (khz_wake): its
 *     last pass is the one khz_islandUpdate ran at its q before it fell
 *     asleep (or kinematics_all on a restored or copied state); passes skip
 *     sleeping bodies, khz_islandFreeze puts their q back every step, and a
 *     caller writing q of a sleeping body wakes it (docs/sleeping.md), after
 *     which the next step's first pass runs (khz_wake forgot the stamp);
 *   - since then, only qd has changed: the contact stages write no q, and
 *     only dynamics.c's passes write the position part.
 * test_impact's case "woken_poses" holds it: after the contact stages of a
 * step where a sleeping box is woken and struck, every body's pass fields
 * are a fresh forward pass's at (d->q, d->qd), bit for bit. */
void khz_resolveImpacts(const khzModel *m, khzData *d, const khzLanding *landing) {
  size_t mark = khz_stackMark(d);
  int *parent = khz_stackAlloc(d, (size_t)m->nbody * sizeof(int));
  int *cluster = khz_stackAlloc(d, (size_t)d->ncontact * sizeof(int));
  int *idx = khz_stackAlloc(d, (size_t)d->ncontact * sizeof(int));
  int *next = khz_stackAlloc(d, (size_t)d->ncontact * sizeof(int));
  int *head = khz_stackAlloc(d, (size_t)m->nbody * sizeof(int));
  int *tree_mark = khz_stackAlloc(d, (size_t)m->nbody * sizeof(int));
  double *dqd = khz_stackAlloc(d, (size_t)m->nv * sizeof(double));
  double *dsum = khz_stackAlloc(d, (size_t)m->nv * sizeof(double));
  double *dvel = khz_stackAlloc(d, 6 * (size_t)m->nbody * sizeof(double));
  double *target = khz_stackAlloc(d, (size_t)d->ncontact * sizeof(double));
  if (!(parent && cluster && idx && next && head && tree_mark && dqd && dsum && dvel && target)) {
    khz_stackFree(d, mark);
    return;
  }

  /* clusters: the trees joined by impacting pairs (union-find) */
  for (int b = 0; b < m->nbody; b++) parent[b] = b;
  for (int i = 0; i < d->ncontact; i++) {
    const khzContact *c = d->contact + i;
    cluster[i] = -1;
    if (d->pair[c->slot].phase != KHZ_PHASE_IMPACT) continue;
    int a = khz_movingTree(m, c, 0), b = khz_movingTree(m, c, 1);
    if (a >= 0 && b >= 0) parent[khz_clusterFind(parent, a)] = khz_clusterFind(parent, b);
  }
  for (int i = 0; i < d->ncontact; i++) {
    const khzContact *c = d->contact + i;
    if (d->pair[c->slot].phase != KHZ_PHASE_IMPACT || !c->npoint) continue;
    int a = khz_movingTree(m, c, 0), b = khz_movingTree(m, c, 1);
    if (a >= 0 || b >= 0) cluster[i] = khz_clusterFind(parent, a >= 0 ? a : b);
  }

  /* each cluster's pairs in contact order, from one pass: a list from
   * head[cluster] through next[] */
  for (int i = 0; i < d->ncontact; i++)
    if (cluster[i] >= 0) head[cluster[i]] = -1;
  for (int i = d->ncontact - 1; i >= 0; i--)
    if (cluster[i] >= 0) next[i] = head[cluster[i]], head[cluster[i]] = i;
  memset(tree_mark, 0, (size_t)m->nbody * sizeof(int));

  /* each cluster together, in the order of its first pair; -2 marks a pair
   * done. solved: the clusters applied. */
  int solved = 0;
  for (int i = 0; i < d->ncontact; i++) {
    if (cluster[i] < 0) continue;
    int k = 0;
    for (int j = i; j >= 0; j = next[j]) idx[k++] = j; /* i is its cluster's first pair */
    if (k > KHZ_CLUSTER_PAIRS) { /* sequential below */
      d->warning[KHZ_WARN_IMPULSE]++;
      for (int j = 0; j < k; j++) cluster[idx[j]] = -3;
      continue;
    }
    if (solve_cluster(m, d, idx, k, landing, dvel, dqd, tree_mark, solved) < 0) {
      for (int j = 0; j < k; j++) cluster[idx[j]] = -3;
      continue;
    }
    for (int j = 0; j < k; j++) cluster[idx[j]] = -2;
    solved++;
  }
  /* Each cluster used to add a whole nv-vector to qd, +0.0 outside its
   * trees, which turned a velocity of -0.0 into +0.0. The same zeros, so that
   * the step is bit for bit what it was: +0.0 once to every dof but those of
   * the last cluster applied (the earlier clusters' trees took theirs before
   * their sum, tree_add's after_zero). O(nv) once per step, not per cluster. */
  if (solved) {
    for (int b = 1; b < m->nbody; b++)
      if (tree_mark[m->body_root[b]] != solved)
        for (int a = 0, q = m->jnt_dofadr[b]; a < m->jnt_nv[b]; a++, q++) d->qd[q] += 0.0;
    khz_velocityPass(m, d, d->qd); /* the positions are current (above) */
  }

  /* the others: sequential impulses, Newton's restitution on the centroid's
   * approach before them */
  for (int i = 0; i < d->ncontact; i++) {
    double x[3], un = cluster[i] == -3 ? impulse_approach(m, d, d->contact + i, x) : 0;
    target[i] = restitution_target(m, d, d->contact + i, un);
  }
  int applied = 0;
  for (int sweep = 0; sweep < KHZ_IMPULSE_SWEEPS; sweep++) {
    applied = 0;
    for (int i = 0; i < d->ncontact; i++) {
      if (cluster[i] != -3) continue;
      khzContact *c = d->contact + i;
      if (impulse_pair(m, d, c, target[i], dqd, dsum, dvel)) {
        applied = 1;
        khz_velocityPass(m, d, d->qd);
      }
    }
    if (!applied) break;
  }
  /* the last sweep still applied impulses: some pair may still approach */
  if (applied) d->warning[KHZ_WARN_IMPULSE]++;
  khz_stackFree(d, mark);
}

size_t khz_impulseStackBytes(const khzModel *m) {
  size_t k = KHZ_CLUSTER_PAIRS, n3 = 3 * k, nb = (size_t)m->nbody, nv = (size_t)m->nv;
  /* the phase marks of khz_contactBegin, then khz_resolveImpacts, then one cluster */
  size_t outer = 5 * nb * sizeof(int) + 3 * (size_t)m->npair_max * sizeof(int) +
                 (2 * nv + 2 + 6 * nb + (size_t)m->npair_max) * sizeof(double);
  size_t cluster = (n3 * n3 + k * k + 2 * n3 + 14 * k + 12 * KHZ_RESPONSE_COLS * nb) * sizeof(double) +
                   6 * k * sizeof(int);
  return outer + cluster + 27 * 64; /* 64-byte alignment of each of the 24 blocks */
}
