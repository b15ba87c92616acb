/* contact.c — Drumwright's fast and stable penalty method
 * (papers/drumwright-fast-stable-penalty-method.txt; SPEC §3):
 *   - the contact state machine of Fig. 2 per body pair: new contacts that
 *     approach faster than eps are impacts, the rest rest; a resting pair goes
 *     back to impulses only when a third body impacts one of its bodies (and,
 *     beyond the paper, the resting pairs behind them, and opt-in re-impacts);
 *   - impacts: impulses with Newton restitution and Coulomb friction at the
 *     centroid of the contact surface, the pairs coupled through moving bodies
 *     solved together (impulse.c);
 *   - resting contact: the bottom of the intersection volume (§III-A, the
 *     O(N lg N) incremental polygon with binary search on signed angles), then
 *     at each bottom point f = max{kp d - kv v + ki I, 0} / r (eqs. 1-3) with
 *     the integral I(t) = sum gamma^(t-i-1) max_y d(y, i), reset on separation;
 *   - each free body's contact damping held inside RK4's stability region
 *     (limit_damping);
 *   - friction: a tangential spring-damper per bottom point stretched by the
 *     slip accumulated since the point began sticking (Yamane & Nakamura),
 *     saturated at mu |f|, the stretch held at the cone's edge while the
 *     spring exceeds it (Coulomb sliding);
 *   - the deepest-point method (one spring at the deepest point) as baseline.
 * Forces are re-evaluated at every integrator stage from the points found at
 * the start of the step, moved with the bodies. Nothing here allocates.
 */
#include "contact.h"

#include <math.h>
#include <string.h>

#include "collision/collision.h"
#include "dynamics.h"
#include "spatial.h"

/* points shallower than this fraction of a pair's deepest are not bottom
 * candidates (see khz_contactBegin) */
#define KHZ_DEPTH_FLOOR 1e-3

/* The penetration a pair already has when it is first found, or when an
 * impact's impulses have stopped its approach (up to a step's travel, an
 * initial overlap, a contact found late) is not a compressed spring: pushed
 * out at once by stiff gains it would return as kinetic energy, 1/2 kp d^2
 * (a cylinder lying on the ground hopped for ever this way; a pair found
 * 1 m deep threw a body at 300 m/s). The springs measure depth past that
 * offset, which relaxes to zero with this time constant (s). */
#define KHZ_IMPACT_RELAX 0.02

/* projections closer than this fraction of the contact patch count as one
 * point in the bottom selection: both bodies of a face-face contact contribute
 * coincident corners, and keeping one of a pair but not the other would put
 * torque where there is none */
#define KHZ_BOTTOM_MERGE 1e-6

/* the sticking spring-damper's gains relative to the normal ones: a contact
 * point below a body's centre of mass moves tangentially with a smaller
 * effective mass than along the normal (rotation), so equal gains would leave
 * the explicit integrator's stability region first in the tangent plane */
#define KHZ_TANGENT_SCALE 0.25

/* ------------------------------------------------- bottom of the volume -- */

/* heapsort of idx by key descending (no allocation, O(N lg N)) */
static void sift_down(int *idx, const double *key, int start, int end) {
  int root = start;
  while (2 * root + 1 <= end) {
    int child = 2 * root + 1, swap = root;
    if (key[idx[swap]] > key[idx[child]]) swap = child;
    if (child + 1 <= end && key[idx[swap]] > key[idx[child + 1]]) swap = child + 1;
    if (swap == root) return;
    int t = idx[root];
    idx[root] = idx[swap], idx[swap] = t;
    root = swap;
  }
}

static void sort_descending(int *idx, const double *key, int n) {
  /* a min-heap popped to the back leaves the array in descending order */
  for (int start = (n - 2) / 2; start >= 0; start--) sift_down(idx, key, start, n - 1);
  for (int end = n - 1; end > 0; end--) {
    int t = idx[0];
    idx[0] = idx[end], idx[end] = t;
    sift_down(idx, key, 0, end - 1);
  }
}

static inline double cross2(const double o[2], const double a[2], const double b[2]) {
  return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}

/* The hull is kept as its vertices other than the comparator C, sorted by
 * angle. C itself is a hull vertex while the hull is "open": then an angular
 * gap of at least pi follows vertex `gap` and the hull is the fan C, v0, ...
 * Hulls only grow, so once C is inside ("closed") it stays inside. */
typedef struct {
  int open;
  int gap;
} khzHullGap;

static int in_gap(const khzHullGap *h, int ia) { return h->open && ia == h->gap; }

/* is P inside (or on) the hull? lo_i: P's insertion index by angle */
static int hull_contains(const double *uv, const int *poly, int npoly, const khzHullGap *h,
                         const double C[2], const double P[2], int lo_i, double tol, double scale) {
  if (npoly == 0) return 0;
  int ia = lo_i - 1, ib = lo_i;
  if (ia < 0) ia = npoly - 1;
  if (ib >= npoly) ib = 0;
  const double *A = uv + 2 * poly[ia], *B = uv + 2 * poly[ib];
  if (npoly == 1 || in_gap(h, ia)) {
    /* P's angle falls where C is a hull vertex: inside only if on the edge
     * C-A or C-B */
    for (int s = 0; s < 2; s++) {
      const double *E = s ? B : A;
      double ax = E[0] - C[0], ay = E[1] - C[1], dx = P[0] - C[0], dy = P[1] - C[1];
      double len2 = ax * ax + ay * ay, along = (dx * ax + dy * ay) / len2;
      if (fabs(dx * ay - dy * ax) / sqrt(len2) <= tol && along >= -1e-12 && along <= 1 + 1e-12)
        return 1;
    }
    return 0;
  }
  /* inside (or on) the fan triangle C, A, B */
  double t = tol * scale, s1 = cross2(C, A, P), s2 = cross2(A, B, P), s3 = cross2(B, C, P);
  int neg = s1 < -t || s2 < -t || s3 < -t, pos = s1 > t || s2 > t || s3 > t;
  return !(neg && pos);
}

/* the gap after inserting a vertex at index i (angle a): splits the gap if
 * the vertex landed in it, else shifts its index */
static void gap_insert(khzHullGap *h, const double *ang, const int *poly, int npoly, int i) {
  if (npoly == 1) {
    h->open = 1, h->gap = 0;
    return;
  }
  int was = h->gap;
  int ia = i - 1 < 0 ? npoly - 1 : i - 1;  /* neighbours of the new vertex */
  int ib = i + 1 >= npoly ? 0 : i + 1;
  int old = was + (i <= was ? 1 : 0);      /* the old gap vertex, re-indexed */
  if (!h->open) return;
  if (ia != old) {
    h->gap = old;
    return;
  }
  double a = ang[poly[i]], g1 = a - ang[poly[ia]], g2 = ang[poly[ib]] - a;
  if (g1 < 0) g1 += 2 * M_PI;
  if (g2 < 0) g2 += 2 * M_PI;
  if (g1 >= M_PI) h->gap = ia;
  else if (g2 >= M_PI) h->gap = i;
  else h->open = 0;
}

/* after inserting poly[i], drop neighbours that are no longer strictly convex
 * (clockwise order: a convex vertex turns right, cross < 0). C never drops.
 * Returns the new size. */
static int hull_restore(const double *uv, int *poly, int npoly, khzHullGap *h, const double C[2],
                        int i, double t) {
  for (int dir = 1; dir >= -1; dir -= 2) {
    while (npoly >= 2) {
      /* neighbour j of i in direction dir (C when i borders the gap), then k */
      if (h->open && ((dir > 0 && i == h->gap) || (dir < 0 && i == (h->gap + 1) % npoly))) break;
      int j = (i + dir + npoly) % npoly;
      const double *I = uv + 2 * poly[i], *J = uv + 2 * poly[j], *K;
      if (h->open && ((dir > 0 && j == h->gap) || (dir < 0 && j == (h->gap + 1) % npoly))) {
        K = C;
      } else {
        int k = (j + dir + npoly) % npoly;
        if (k == i) break;
        K = uv + 2 * poly[k];
      }
      double cr = dir > 0 ? cross2(I, J, K) : cross2(K, J, I);
      if (cr < -t) break; /* j is convex */
      memmove(poly + j, poly + j + 1, (size_t)(npoly - j - 1) * sizeof(int));
      npoly--;
      if (h->open && j <= h->gap) h->gap = (h->gap - 1 + npoly) % npoly;
      if (j < i) i--;
    }
  }
  return npoly;
}

int khz_bottomOfVolume(khzData *d, const double *pos, const double *depth, int n,
                       const double normal[3], int *bottom) {
  if (n <= 0) return 0;
  if (n == 1) {
    bottom[0] = 1;
    return 1;
  }
  size_t mark = khz_stackMark(d);
  int *order = khz_stackAlloc(d, (size_t)n * sizeof(int));
  int *poly = khz_stackAlloc(d, (size_t)n * sizeof(int));
  double *uv = khz_stackAlloc(d, 2 * (size_t)n * sizeof(double));
  double *ang = khz_stackAlloc(d, (size_t)n * sizeof(double));
  if (!order || !poly || !uv || !ang) {
    khz_stackFree(d, mark);
    for (int k = 0; k < n; k++) bottom[k] = 1;
    return -1;
  }

  /* contact-plane axes (u, v) and the projections; scale for tolerances */
  double u[3], v[3];
  khzu_orthogonal(u, normal);
  khzu_cross(v, normal, u);
  double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
  for (int k = 0; k < n; k++) {
    uv[2 * k] = khzu_dot3(pos + 3 * k, u);
    uv[2 * k + 1] = khzu_dot3(pos + 3 * k, v);
    for (int j = 0; j < 2; j++) lo[j] = fmin(lo[j], uv[2 * k + j]), hi[j] = fmax(hi[j], uv[2 * k + j]);
    order[k] = k;
    bottom[k] = 0;
  }
  double scale = fmax(hi[0] - lo[0], hi[1] - lo[1]), tol = KHZ_BOTTOM_MERGE * fmax(scale, 1e-9);
  double dtol = 1e-12 + 1e-9 * fabs(depth[0]);

  /* sort by distance to the contact plane, farthest first */
  sort_descending(order, depth, n);

  /* comparator: the farthest point; ties broken by bottom-most, then right-most */
  int c = order[0];
  for (int k = 1; k < n && depth[order[k]] >= depth[order[0]] - dtol; k++) {
    int p = order[k];
    if (uv[2 * p + 1] < uv[2 * c + 1] - tol ||
        (fabs(uv[2 * p + 1] - uv[2 * c + 1]) <= tol && uv[2 * p] > uv[2 * c]))
      c = p;
  }
  const double *C = uv + 2 * c;

  /* signed angles about the comparator, measured from the vertical (v) axis */
  for (int k = 0; k < n; k++) ang[k] = atan2(uv[2 * k] - C[0], uv[2 * k + 1] - C[1]);

  /* incremental polygon (Graham-scan style): the convex hull of the kept
   * points' projections, its vertices other than the comparator sorted by
   * signed angle. A candidate (visited farthest first) is located by binary
   * search on its angle; if it lies outside the hull it is a bottom point and
   * is inserted, and hull vertices it makes reflex drop out of the hull (they
   * stay bottom points). Angles grow clockwise (atan2(du, dv)). */
  bottom[c] = 1;
  int npoly = 0, nbottom = 1;
  khzHullGap gap = {1, -1};
  for (int k = 0; k < n; k++) {
    int p = order[k];
    if (p == c) continue;
    const double *P = uv + 2 * p;
    double dx = P[0] - C[0], dy = P[1] - C[1];
    if (dx * dx + dy * dy <= tol * tol) continue; /* on the comparator */

    /* binary search: first hull vertex with a larger angle */
    int lo_i = 0, hi_i = npoly;
    while (lo_i < hi_i) {
      int mid = (lo_i + hi_i) / 2;
      if (ang[poly[mid]] <= ang[p]) lo_i = mid + 1;
      else hi_i = mid;
    }
    if (hull_contains(uv, poly, npoly, &gap, C, P, lo_i, tol, scale)) continue;
    memmove(poly + lo_i + 1, poly + lo_i, (size_t)(npoly - lo_i) * sizeof(int));
    poly[lo_i] = p;
    npoly++;
    bottom[p] = 1;
    nbottom++;
    gap_insert(&gap, ang, poly, npoly, lo_i);
    npoly = hull_restore(uv, poly, npoly, &gap, C, lo_i, tol * scale);
  }
  khz_stackFree(d, mark);
  return nbottom;
}

/* --------------------------------------------------------------- helpers -- */

/* a body counts as static when it and all its ancestors are welded */
int khz_bodyStatic(const khzModel *m, int b) {
  for (; b > 0; b = m->body_parent[b])
    if (m->jnt_type[b] != KHZ_JOINT_FIXED) return 0;
  return 1;
}

/* world velocity of the material point x of body b */
void khz_pointVelocity(const khzModel *m, const khzData *d, int b, const double x[3], double vel[3]) {
  if (b <= 0) {
    vel[0] = vel[1] = vel[2] = 0;
    return;
  }
  const double *v = d->vtree + 6 * b, *o = d->xpos + 3 * m->body_root[b];
  double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]}, wxr[3];
  khzu_cross(wxr, v, r);
  vel[0] = v[3] + wxr[0], vel[1] = v[4] + wxr[1], vel[2] = v[5] + wxr[2];
}

/* world position of a point given in body b's frame */
static void body_point(const khzData *d, int b, const double local[3], double x[3]) {
  khzu_mulMatVec3(x, d->xrot + 9 * b, local);
  x[0] += d->xpos[3 * b], x[1] += d->xpos[3 * b + 1], x[2] += d->xpos[3 * b + 2];
}

/* The point of body s (0, 1) at which contact point pt acts at the current
 * stage. A vertex or an edge crossing is a material point and moves with the
 * body. A point on a curved surface (pt->round == s: a sphere, a capsule, a
 * cylinder's rim) stays where the surface faces the other body, the centre
 * of curvature plus the radius towards it: carried along as a material point
 * it would rise ahead of a rolling body's centre, and the normal force on it
 * would drive the rolling (a ball on the ground sped up by 7% in 2 s). */
static void surface_point(const khzModel *m, const khzData *d, const khzContact *c,
                          const khzContactPoint *pt, int s, double p[3]) {
  int b = c->body[s];
  if (pt->round != s) {
    body_point(d, b, pt->local[s], p);
    return;
  }
  int g = c->geom[s];
  double r = m->geom_size[3 * g], out = s == 0 ? -1 : 1, u[3];
  const double *n = c->normal;
  for (int j = 0; j < 3; j++) u[j] = out * n[j];
  if (m->geom_type[g] == KHZ_GEOM_CYLINDER) { /* the rim's point facing the other body */
    double a[3];
    khzu_mulMatVec3(a, d->xrot + 9 * b, pt->axis);
    double ua = khzu_dot3(u, a);
    for (int j = 0; j < 3; j++) u[j] -= ua * a[j];
    double un = sqrt(khzu_dot3(u, u));
    if (!(un > 0.5 * KHZ_RIM_TILT)) { /* the rim has turned flat: hold the point */
      body_point(d, b, pt->local[s], p);
      return;
    }
    for (int j = 0; j < 3; j++) u[j] /= un;
  }
  body_point(d, b, pt->center, p);
  for (int j = 0; j < 3; j++) p[j] += r * u[j];
}

/* adds the world force F acting at x on body b to d->fext */
static void add_force(const khzModel *m, khzData *d, int b, const double x[3], const double F[3]) {
  if (b <= 0) return;
  const double *o = d->xpos + 3 * m->body_root[b];
  double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]}, n[3];
  khzu_cross(n, r, F);
  double *f = d->fext + 6 * b;
  f[0] += n[0], f[1] += n[1], f[2] += n[2];
  f[3] += F[0], f[4] += F[1], f[5] += F[2];
}

/* per-pair gains: geom overrides, else scene values, else from the masses of
 * the moving bodies (the paper: kp = 100 (m1+m2), kv = 50 (m1+m2), ki = 2 (m1+m2);
 * the coefficients and the mass rule are scene options). For a link of an
 * articulated body the mass is what the contact carries (contact_mass). */
static double contact_mass(const khzModel *m, int b) {
  /* the mass a contact on body b may have to carry: a floating tree's whole
   * mass (a foot carries the robot), else the body with its descendants */
  if (khz_bodyStatic(m, b)) return 0;
  int root = m->body_root[b];
  return m->jnt_type[root] == KHZ_JOINT_FLOATING ? m->body_subtreemass[root] : m->body_subtreemass[b];
}

static void pair_gains(const khzModel *m, khzContact *c, double meff) {
  double mass = 0, ms[2];
  int moving = 0;
  for (int s = 0; s < 2; s++) {
    ms[s] = contact_mass(m, c->body[s]);
    moving += ms[s] > 0;
  }
  if (m->contact.gain_mass == KHZ_GAIN_MASS_EFFECTIVE && meff > 0)
    mass = meff;
  else if (m->contact.gain_mass == KHZ_GAIN_MASS_REDUCED && moving == 2)
    mass = ms[0] * ms[1] / (ms[0] + ms[1]);
  else
    mass = ms[0] + ms[1];
  const double base[3] = {m->contact.kp_per_kg, m->contact.kv_per_kg, m->contact.ki_per_kg};
  const double scene[3] = {m->contact.kp, m->contact.kv, m->contact.ki};
  double g[3];
  for (int k = 0; k < 3; k++) {
    double o0 = m->geom_gain[3 * c->geom[0] + k], o1 = m->geom_gain[3 * c->geom[1] + k];
    g[k] = o0 > 0 && o1 > 0 ? fmax(o0, o1) : o0 > 0 ? o0 : o1 > 0 ? o1 : scene[k] > 0 ? scene[k]
                                                                                      : base[k] * mass;
  }
  c->kp = g[0], c->kv = g[1], c->ki = g[2];
  double f0 = m->geom_friction[c->geom[0]], f1 = m->geom_friction[c->geom[1]];
  double mu0 = f0 > 0 ? f0 : m->contact.mu, mu1 = f1 > 0 ? f1 : m->contact.mu;
  c->mu = sqrt(mu0 * mu1);
}

/* minimum relative normal velocity over a pair's points (negative = approaching) */
static double approach_speed(const khzModel *m, const khzData *d, const khzContact *c) {
  double smin = INFINITY;
  for (int k = 0; k < c->npoint; k++) {
    const khzContactPoint *p = d->cpoint + c->point_adr + k;
    double v0[3], v1[3];
    khz_pointVelocity(m, d, c->body[0], p->pos, v0);
    khz_pointVelocity(m, d, c->body[1], p->pos, v1);
    double sn = (v0[0] - v1[0]) * c->normal[0] + (v0[1] - v1[1]) * c->normal[1] +
                (v0[2] - v1[2]) * c->normal[2];
    smin = fmin(smin, sn);
  }
  return smin;
}

/* ----------------------------------------------------------- the phases -- */

/* Eq. 1 divides by the number r of pushing points, so two bottom points at
 * nearly one place (the coincident corners of two equal stacked boxes, a few
 * tenths of a millimetre apart) pull that place's share of the force to
 * twice the others', and as one of them comes and goes from step to step the
 * force's moment jumps. Points closer than KHZ_CLUSTER of the patch count
 * as one point together: each carries 1 / (their number) in r. */
#define KHZ_CLUSTER 0.01
static void cluster_shares(const khzContact *c, khzContactPoint *pts) {
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int k = 0; k < c->npoint; k++)
    if (pts[k].bottom)
      for (int j = 0; j < 3; j++) lo[j] = fmin(lo[j], pts[k].pos[j]), hi[j] = fmax(hi[j], pts[k].pos[j]);
  double ext = 0;
  for (int j = 0; j < 3; j++) ext = fmax(ext, hi[j] - lo[j]);
  double tol2 = KHZ_CLUSTER * ext * KHZ_CLUSTER * ext;
  for (int k = 0; k < c->npoint; k++) {
    if (!pts[k].bottom) continue;
    int near = 0;
    for (int i = 0; i < c->npoint; i++) {
      if (!pts[i].bottom) continue;
      double dx = pts[i].pos[0] - pts[k].pos[0], dy = pts[i].pos[1] - pts[k].pos[1],
             dz = pts[i].pos[2] - pts[k].pos[2];
      near += dx * dx + dy * dy + dz * dz <= tol2;
    }
    pts[k].share = 1.0 / near;
  }
}

/* Explicit integration is stable only while h times the largest damping
 * rate of a body, the largest eigenvalue of M^-1 C with C the damping its
 * contact points put on its six velocities, stays inside the integrator's
 * region (RK4: 2.78 on the negative real axis). Per point the dampers are
 * kv w along the normal and KHZ_TANGENT_SCALE kv w across it, so the rate
 * grows with the number of pairs pressing a body and with how easily its
 * points turn it: a flat box's corners turn it three times more easily than
 * they lift it, and a light box between the ground and a heavy one gets
 * both pairs' dampers. Past the limit the damping pumps energy in: such a
 * box chattered at 50-100 Hz in the pile. A pair's damping is scaled down
 * so that neither of its free bodies exceeds KHZ_DAMPING_LIMIT / h. */
#define KHZ_DAMPING_LIMIT 1.8

/* a free rigid body: floating joint to the world, nothing attached */
static int free_rigid(const khzModel *m, int b) {
  return b > 0 && m->body_parent[b] == 0 && m->jnt_type[b] == KHZ_JOINT_FLOATING &&
         m->body_subtreemass[b] <= m->body_mass[b];
}

/* adds the dampers of contact c's bottom points to C (6x6, [w; v] at the
 * centre of mass) of side s's body. The points are weighed equally, not by
 * depth as pair_forces weighs them: with the depth weights here a pile body
 * went 1.5 cm deep and test_impact g failed (tried; docs/validation.md). */
static void damping_add(const khzData *d, const khzContact *c, int s, double *C) {
  const khzContactPoint *pts = d->cpoint + c->point_adr;
  const double *n = c->normal, *xc = d->xcom + 3 * c->body[s];
  double nb = 0;
  for (int k = 0; k < c->npoint; k++) nb += pts[k].bottom ? pts[k].share : 0;
  if (!(nb > 0)) return;
  for (int k = 0; k < c->npoint; k++) {
    if (!pts[k].bottom) continue;
    double w = pts[k].share / nb, kn = c->kv * w, kt = KHZ_TANGENT_SCALE * c->kv * w;
    double r[3] = {pts[k].pos[0] - xc[0], pts[k].pos[1] - xc[1], pts[k].pos[2] - xc[2]};
    /* J = [-[r]x, I]: the point's velocity from [w; v]; C += J^T D J */
    double J[3][6];
    for (int i = 0; i < 3; i++) {
      for (int j = 0; j < 6; j++) J[i][j] = 0;
      J[i][3 + i] = 1;
    }
    J[0][1] = r[2], J[0][2] = -r[1], J[1][0] = -r[2], J[1][2] = r[0], J[2][0] = r[1], J[2][1] = -r[0];
    double D[3][3];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) D[i][j] = (kn - kt) * n[i] * n[j] + (i == j ? kt : 0);
    for (int a = 0; a < 6; a++)
      for (int b = 0; b < 6; b++) {
        double v = 0;
        for (int i = 0; i < 3; i++)
          for (int j = 0; j < 3; j++) v += J[i][a] * D[i][j] * J[j][b];
        C[6 * a + b] += v;
      }
  }
}

/* largest eigenvalue of M^-1 C for free body b (power iteration; M^-1 C is
 * similar to a symmetric positive semi-definite matrix) */
static double damping_rate(const khzModel *m, const khzData *d, int b, const double *C) {
  double Iw[9], Iinv[9], tmp[9];
  const double *R = d->xrot + 9 * b;
  khzu_mulMat3(tmp, R, m->body_inertia + 9 * b);
  khzu_mulMatMatT3(Iw, tmp, R);
  double L[9];
  memcpy(L, Iw, sizeof L);
  if (khzu_cholFactor(L, 3) != 0) return 0;
  for (int j = 0; j < 3; j++) {
    double e[3] = {j == 0, j == 1, j == 2};
    khzu_cholSolve(L, 3, e);
    for (int i = 0; i < 3; i++) Iinv[3 * i + j] = e[i];
  }
  double x[6] = {1, 0.7, 0.5, 0.3, 0.2, 0.1}, lam = 0;
  for (int it = 0; it < 30; it++) {
    double y[6], z[6];
    for (int i = 0; i < 6; i++) {
      y[i] = 0;
      for (int j = 0; j < 6; j++) y[i] += C[6 * i + j] * x[j];
    }
    khzu_mulMatVec3(z, Iinv, y);
    for (int i = 3; i < 6; i++) z[i] = y[i] / m->body_mass[b];
    double nz = 0, nx = 0;
    for (int i = 0; i < 6; i++) nz += z[i] * z[i], nx += x[i] * x[i];
    if (!(nz > 0)) return 0;
    lam = sqrt(nz / nx);
    for (int i = 0; i < 6; i++) x[i] = z[i] / sqrt(nz);
  }
  return lam;
}

/* scales the damping of pairs whose free bodies would exceed the limit */
static void limit_damping(const khzModel *m, khzData *d) {
  size_t mark = khz_stackMark(d);
  double *C = khz_stackAlloc(d, 36 * (size_t)m->nbody * sizeof(double));
  double *scale = khz_stackAlloc(d, (size_t)m->nbody * sizeof(double));
  if (!C || !scale) {
    khz_stackFree(d, mark);
    return;
  }
  memset(C, 0, 36 * (size_t)m->nbody * sizeof(double));
  for (int b = 0; b < m->nbody; b++) scale[b] = 1;
  for (int i = 0; i < d->ncontact; i++)
    for (int s = 0; s < 2; s++)
      if (free_rigid(m, d->contact[i].body[s]) && d->contact[i].nbottom)
        damping_add(d, d->contact + i, s, C + 36 * d->contact[i].body[s]);
  for (int b = 1; b < m->nbody; b++) {
    if (!free_rigid(m, b)) continue;
    double rate = damping_rate(m, d, b, C + 36 * b) * m->timestep;
    if (rate > KHZ_DAMPING_LIMIT) scale[b] = KHZ_DAMPING_LIMIT / rate;
  }
  for (int i = 0; i < d->ncontact; i++) {
    khzContact *c = d->contact + i;
    c->kv *= fmin(scale[c->body[0] > 0 ? c->body[0] : 0], scale[c->body[1] > 0 ? c->body[1] : 0]);
  }
  khz_stackFree(d, mark);
}
void khz_contactBegin(const khzModel *m, khzData *d) {
  d->ncontact = d->ncpoint = 0;
  if (d->contact_method == KHZ_CONTACT_NONE) {
    /* no contact: every persistent pair is forgotten */
    for (int k = 0; k < m->npair_max; k++) {
      if (d->pair[k].geom[0] < 0) continue;
      memset(&d->pair[k], 0, sizeof d->pair[k]);
      d->pair[k].geom[0] = d->pair[k].geom[1] = -1;
    }
    return;
  }
  khz_collide(m, d);
  if (!d->ncontact) return;

  /* Fig. 2: new pairs approaching faster than eps are impacts, the others
   * rest; an impact is resolved by impulses in this tick, after which the pair
   * is in continuous contact and rests (below). Beyond the paper (opt-in,
   * contact.reimpact_velocity): a pair in contact whose points approach
   * faster than that impacts again. A tumbling body's second edge landing on
   * the same body is such a case: left to the springs, a 76 kg cylinder that
   * swung flat onto a 4 kg box at 3 m/s sank 1.5 cm into it. Its overlap is
   * not released gradually like a new pair's: it carries load. */
  double eps = m->contact.impact_velocity;
  double reimpact = m->contact.reimpact_velocity > 0 ? m->contact.reimpact_velocity : INFINITY;
  size_t mark = khz_stackMark(d);
  double *dqd = khz_stackAlloc(d, (size_t)m->nv * sizeof(double) + 8);
  double *dvel = khz_stackAlloc(d, 6 * (size_t)m->nbody * sizeof(double));
  double *tau = khz_stackAlloc(d, (size_t)m->nv * sizeof(double) + 8);
  double *qdd = khz_stackAlloc(d, (size_t)m->nv * sizeof(double) + 8);
  int scratch = dqd && dvel && tau && qdd, inertias = 0;

  /* articulated inertias at the current q (the impulse response and the
   * effective masses need them; velocity terms do not matter) */
  int need_meff = 0, rolling = m->contact.rolling > 0 || m->contact.torsional > 0;
  for (int i = 0; i < d->ncontact; i++) {
    const khzPairState *ps = d->pair + d->contact[i].slot;
    need_meff |= (m->contact.gain_mass == KHZ_GAIN_MASS_EFFECTIVE && !(ps->meff > 0)) ||
                 (rolling && !(ps->rot_inertia > 0));
  }
  if (scratch && need_meff) {
    memset(tau, 0, (size_t)m->nv * sizeof(double));
    khz_externalForces(m, d);
    khz_abaCore(m, d, tau, qdd);
    inertias = 1;
  }
  int any_impact = 0;
  for (int i = 0; i < d->ncontact; i++) {
    khzContact *c = d->contact + i;
    khzPairState *ps = d->pair + c->slot;
    if (inertias && !(ps->meff > 0)) {
      /* n^T K n from one test impulse along the normal at the deepest point
       * (a corner of a foot moves far more easily than its centre: the
       * smaller mass keeps the gains stable), once when the pair begins: the
       * gains then stay put while the pair is in contact */
      const double *x = d->cpoint[c->deepest].pos;
      double a0[3], a1[3], b0v[3] = {0, 0, 0}, b1v[3] = {0, 0, 0};
      double nm[3] = {-c->normal[0], -c->normal[1], -c->normal[2]};
      khz_pointResponse(m, d, c->body[0], x, c->normal, c->body[1], x, a0, a1, dqd, dvel);
      if (c->body[1] > 0) khz_pointResponse(m, d, c->body[1], x, nm, c->body[0], x, b1v, b0v, dqd, dvel);
      double knn = 0;
      for (int j = 0; j < 3; j++) knn += c->normal[j] * ((a0[j] + b0v[j]) - (a1[j] + b1v[j]));
      ps->meff = knn > 0 ? 1 / knn : 0;
    }
    if (inertias && rolling && !(ps->rot_inertia > 0)) {
      /* the relative angular velocity change along a tangent per unit
       * couple about it, from one test couple on each body */
      double t[3], a[3] = {1, 0, 0}, f[6] = {0, 0, 0, 0, 0, 0}, kww = 0;
      if (fabs(c->normal[0]) > 0.6) a[0] = 0, a[1] = 1;
      khzu_cross(t, c->normal, a);
      double tn = sqrt(khzu_dot3(t, t));
      for (int s = 0; s < 2; s++) {
        int b = c->body[s];
        if (b <= 0) continue;
        for (int j = 0; j < 3; j++) f[j] = (s ? -t[j] : t[j]) / tn;
        memset(dqd, 0, (size_t)m->nv * sizeof(double));
        khz_impulseResponse(m, d, b, f, dqd, dvel);
        for (int q = 0; q < 2; q++) { /* both bodies' rotation (same tree or not) */
          int bq = c->body[q];
          if (bq <= 0 || m->body_root[bq] != m->body_root[b]) continue;
          for (int j = 0; j < 3; j++) kww += (q ? -1 : 1) * dvel[6 * bq + j] * t[j] / tn;
        }
      }
      ps->rot_inertia = kww > 0 ? 1 / kww : 0;
    }
    double meff = ps->meff;
    pair_gains(m, c, meff);
    double sn = approach_speed(m, d, c);
    int fresh = ps->phase == KHZ_PHASE_NONE;
    /* a new pair: the overlap it starts with is released gradually too (a
     * step's travel, an initial overlap, or a contact found late) */
    if (fresh && c->npoint) ps->offset = fmax(ps->offset, d->cpoint[c->deepest].depth);
    if (fresh) ps->phase = sn < -eps ? KHZ_PHASE_IMPACT : KHZ_PHASE_RESTING;
    else if (sn < -reimpact) ps->phase = KHZ_PHASE_IMPACT;
    any_impact |= ps->phase == KHZ_PHASE_IMPACT;
  }
  /* a third body's impact sends the resting pairs of the bodies it hit (of
   * their articulated trees: an impulse moves the whole tree) to impulses,
   * as the paper draws it. Beyond the paper, level by level, so do the
   * resting pairs behind those, as long as the impacting pairs stay within
   * KHZ_CLUSTER_PAIRS: a heavy body landing on a column of light ones moves
   * them all, and with the column's lower pairs left to their springs the
   * bottom one was driven into the ground at 1.96 m/s. Order-independent:
   * each level is found before it is marked. */
  int *hit = any_impact ? khz_stackAlloc(d, 2 * (size_t)m->nbody * sizeof(int)) : NULL;
  if (hit) {
    int *next = hit + m->nbody, nimpacting = 0;
    memset(hit, 0, 2 * (size_t)m->nbody * sizeof(int));
    for (int i = 0; i < d->ncontact; i++) {
      const khzContact *ci = d->contact + i;
      if (d->pair[ci->slot].phase != KHZ_PHASE_IMPACT) continue;
      nimpacting++;
      for (int s = 0; s < 2; s++)
        if (!khz_bodyStatic(m, ci->body[s])) hit[m->body_root[ci->body[s]]] = 1;
    }
    for (int level = 0; level < m->nbody; level++) {
      int found = 0;
      for (int j = 0; j < d->ncontact; j++) {
        const khzContact *cj = d->contact + j;
        if (d->pair[cj->slot].phase != KHZ_PHASE_RESTING) continue;
        for (int t = 0; t < 2; t++)
          if (!khz_bodyStatic(m, cj->body[t]) && hit[m->body_root[cj->body[t]]]) found++, t = 2;
      }
      if (!found || (level > 0 && nimpacting + found > KHZ_CLUSTER_PAIRS)) break;
      memset(next, 0, (size_t)m->nbody * sizeof(int));
      for (int j = 0; j < d->ncontact; j++) {
        const khzContact *cj = d->contact + j;
        if (d->pair[cj->slot].phase != KHZ_PHASE_RESTING) continue;
        int touches = 0;
        for (int t = 0; t < 2; t++)
          touches |= !khz_bodyStatic(m, cj->body[t]) && hit[m->body_root[cj->body[t]]];
        if (!touches) continue;
        d->pair[cj->slot].phase = KHZ_PHASE_IMPACT;
        for (int t = 0; t < 2; t++)
          if (!khz_bodyStatic(m, cj->body[t])) next[m->body_root[cj->body[t]]] = 1;
      }
      nimpacting += found;
      for (int b = 0; b < m->nbody; b++) hit[b] |= next[b];
    }
  }

  /* impulses for the impacting pairs (impulse.c) */
  int nimpact = 0;
  for (int i = 0; i < d->ncontact; i++) nimpact += d->pair[d->contact[i].slot].phase == KHZ_PHASE_IMPACT;
  if (nimpact && scratch) {
    if (!inertias) {
      memset(tau, 0, (size_t)m->nv * sizeof(double));
      khz_externalForces(m, d);
      khz_abaCore(m, d, tau, qdd);
    }
    khz_resolveImpacts(m, d);
  }
  khz_stackFree(d, mark);

  /* impacts are resolved: every pair in contact now rests (penalty forces) */
  for (int i = 0; i < d->ncontact; i++) d->pair[d->contact[i].slot].phase = KHZ_PHASE_RESTING;

  /* resting pairs: bottom of the intersection volume (penalty) or the deepest point */
  for (int i = 0; i < d->ncontact; i++) {
    khzContact *c = d->contact + i;
    khzContactPoint *pts = d->cpoint + c->point_adr;
    c->nbottom = 0;
    for (int k = 0; k < c->npoint; k++) pts[k].bottom = 0;
    if (d->pair[c->slot].phase != KHZ_PHASE_RESTING || c->npoint == 0) continue;
    if (d->contact_method == KHZ_CONTACT_DEEPEST) {
      pts[c->deepest - c->point_adr].bottom = 1;
      pts[c->deepest - c->point_adr].share = 1;
      c->nbottom = 1;
      continue;
    }
    size_t mk = khz_stackMark(d);
    double *pos = khz_stackAlloc(d, 3 * (size_t)c->npoint * sizeof(double));
    double *dep = khz_stackAlloc(d, (size_t)c->npoint * sizeof(double));
    int *flag = khz_stackAlloc(d, (size_t)c->npoint * sizeof(int));
    if (pos && dep && flag) {
      /* the candidates: points of penetration. Points of the intersection
       * volume on the contact plane itself carry no spring and would only
       * dilute eq. 1's normalisation; those whose depth is round-off (below
       * KHZ_DEPTH_FLOOR of the deepest) would come and go from step to step,
       * each time moving r and the integral term's share between points */
      double floor_depth = KHZ_DEPTH_FLOOR * d->cpoint[c->deepest].depth;
      int np = 0;
      for (int k = 0; k < c->npoint; k++) {
        if (!(pts[k].depth > floor_depth)) continue;
        memcpy(pos + 3 * np, pts[k].pos, 3 * sizeof(double));
        dep[np++] = pts[k].depth;
      }
      khz_bottomOfVolume(d, pos, dep, np, c->normal, flag);
      for (int k = 0, j = 0; k < c->npoint; k++) {
        if (!(pts[k].depth > floor_depth)) continue;
        pts[k].bottom = flag[j++];
        c->nbottom += pts[k].bottom;
      }
      cluster_shares(c, pts);
    } else {
      for (int k = 0; k < c->npoint; k++) pts[k].bottom = 1, pts[k].share = 1;
      c->nbottom = c->npoint;
    }
    khz_stackFree(d, mk);
  }
  limit_damping(m, d);
}

/* the anchor of a bottom point: the one of its feature, else the nearest
 * anchor within KHZ_ANCHOR_REUSE of the point (a face-face contact offers two
 * coincident corners, one of each body, and the selection may take either:
 * the sticking spring must not be lost when it switches), or -1 */
#define KHZ_ANCHOR_REUSE 5e-3
static int find_anchor(const khzData *d, const khzContact *c, const khzPairState *ps, int feature,
                       const double p[3]) {
  for (int k = 0; k < ps->nanchor; k++)
    if (ps->anchor_feature[k] == feature) return k;
  int best = -1;
  double bestd = KHZ_ANCHOR_REUSE * KHZ_ANCHOR_REUSE;
  for (int k = 0; k < ps->nanchor; k++) {
    double a[3];
    body_point(d, c->body[1], ps->anchor_pos[k], a);
    double dx = a[0] - p[0], dy = a[1] - p[1], dz = a[2] - p[2], d2 = dx * dx + dy * dy + dz * dz;
    if (d2 < bestd) bestd = d2, best = k;
  }
  return best;
}

/* the tangential spring's stretch of bottom point k at the current stage:
 * the anchor's stretch from the steps before, plus the slip within this step,
 * the tangential separation of the material points of body 0 and body 1 that
 * coincided at the point when the step began. Slip is what stretches the
 * spring, so a rolling contact (points that do not slip) stays unstretched
 * although its contact point travels over both surfaces. */
static void friction_stretch(const khzData *d, const khzContact *c, const khzPairState *ps,
                             const khzContactPoint *pt, const double p0[3], const double p1[3],
                             double delta[3]) {
  const double *n = c->normal;
  int a = find_anchor(d, c, ps, pt->feature, pt->pos);
  double s[3] = {0, 0, 0};
  if (a >= 0) khzu_mulMatVec3(s, d->xrot + 9 * c->body[1], ps->anchor[a]);
  for (int j = 0; j < 3; j++) delta[j] = s[j] + p0[j] - p1[j];
  double dn = khzu_dot3(delta, n);
  for (int j = 0; j < 3; j++) delta[j] -= dn * n[j];
}

/* Rolling and torsional friction of a pair (MuJoCo's condim 6, opt-in): a
 * couple against the relative angular velocity, its tangential part (rolling)
 * saturated at rolling * fn, its normal part (spin) at torsional * fn. Below
 * saturation it is a damper whose rate c = I / (2 h), with I the pair's
 * rotational effective inertia, halves the relative rotation each step: fast
 * enough to stop a rolling ball, slow enough for the explicit integrator. */
static void rolling_torque(const khzModel *m, khzData *d, const khzContact *c, double fn) {
  const khzPairState *ps = d->pair + c->slot;
  double mr = m->contact.rolling, ms = m->contact.torsional;
  if (!(mr > 0 || ms > 0) || !(fn > 0) || !(ps->rot_inertia > 0)) return;
  const double *n = c->normal;
  int b0 = c->body[0], b1 = c->body[1];
  double w[3] = {0, 0, 0};
  for (int j = 0; j < 3; j++)
    w[j] = (b0 > 0 ? d->vtree[6 * b0 + j] : 0) - (b1 > 0 ? d->vtree[6 * b1 + j] : 0);
  double wn = khzu_dot3(w, n), wt[3], rate = ps->rot_inertia / (2 * m->timestep), T[3];
  for (int j = 0; j < 3; j++) wt[j] = w[j] - wn * n[j];
  double wtn = sqrt(khzu_dot3(wt, wt));
  double tt = fmin(rate * wtn, mr * fn), tn = fmin(rate * fabs(wn), ms * fn);
  for (int j = 0; j < 3; j++)
    T[j] = -(wtn > 0 ? tt * wt[j] / wtn : 0) - (wn > 0 ? tn : wn < 0 ? -tn : 0) * n[j];
  if (b0 > 0)
    for (int j = 0; j < 3; j++) d->fext[6 * b0 + j] += T[j];
  if (b1 > 0)
    for (int j = 0; j < 3; j++) d->fext[6 * b1 + j] -= T[j];
}

/* penalty and friction forces of one resting pair at the current forward
 * pass; apply = 1 adds them to d->fext. slip_limit (npoint, may be NULL):
 * the largest stretch the friction spring of each bottom point may keep. */
static void pair_forces(const khzModel *m, khzData *d, khzContact *c, int apply,
                        double *slip_limit) {
  khzPairState *ps = d->pair + c->slot;
  khzContactPoint *pts = d->cpoint + c->point_adr;
  const double *n = c->normal;
  int b0 = c->body[0], b1 = c->body[1];

  /* raw normal forces g_k = max{kp d_k - kv v_k + ki I, 0}, then eq. 1's
   * division by the count r, with each point counted in proportion to its
   * depth: f_k = g_k d_k / sum_j d_j. With equal depths (a face resting flat)
   * this is eq. 1; but eq. 1's r jumps by a whole point when a point's force
   * starts or stops, and a body rocking on a few points (a corner and a far
   * rim) gained energy from those jumps for ever; a point's weight here goes
   * to zero with its depth. Near-duplicates share one weight. Inside a box
   * or hull the depth in the count is the wedge's thickness at the point
   * (pts[k].weight, set_depths in narrowphase.c), so the force leans towards
   * the thick end of a tilted contact and levels it. */
  double raw[KHZ_PAIR_ANCHORS * 16], wt[KHZ_PAIR_ANCHORS * 16], fn_sum = 0, r = 0, r_plain = 0;
  int cap = (int)(sizeof raw / sizeof raw[0]), nb = 0;
  for (int k = 0; k < c->npoint && nb < cap; k++) {
    if (!pts[k].bottom) continue;
    double p0[3], p1[3], v0[3], v1[3];
    surface_point(m, d, c, pts + k, 0, p0);
    surface_point(m, d, c, pts + k, 1, p1);
    khz_pointVelocity(m, d, b0, p0, v0);
    khz_pointVelocity(m, d, b1, p1, v1);
    double depth = pts[k].depth - ps->offset + (p1[0] - p0[0]) * n[0] + (p1[1] - p0[1]) * n[1] +
                   (p1[2] - p0[2]) * n[2];
    double vn = (v0[0] - v1[0]) * n[0] + (v0[1] - v1[1]) * n[1] + (v0[2] - v1[2]) * n[2];
    /* a point that has left the other body at this stage carries nothing: the
     * pair's integral term must not keep pushing a lifted corner upwards */
    raw[nb] = depth > 0 ? fmax(c->kp * depth - c->kv * vn + c->ki * ps->integral, 0) : 0;
    wt[nb] = depth > 0 ? pts[k].share * depth : 0;
    r += wt[nb] * pts[k].weight;
    r_plain += wt[nb];
    nb++;
  }
  /* every point with a spring lies on the face above it (weight 0): count
   * them by depth alone rather than drop the pair's force */
  int wedge = r > 0;
  if (!wedge) r = r_plain;
  nb = 0;
  for (int k = 0; k < c->npoint && nb < cap; k++) {
    if (!pts[k].bottom) continue;
    double w = r > 0 ? wt[nb] * (wedge ? pts[k].weight : 1) / r : 0, fn = raw[nb] * w;
    fn_sum += fn;
    /* |kt delta| <= mu fn with kt = scale kp w: the weight cancels */
    if (slip_limit) slip_limit[k] = c->mu * raw[nb] / (KHZ_TANGENT_SCALE * c->kp);
    nb++;
    double p0[3], p1[3], v0[3], v1[3], vt[3], F[3], m0[3], m1[3];
    surface_point(m, d, c, pts + k, 0, p0);
    surface_point(m, d, c, pts + k, 1, p1);
    body_point(d, b0, pts[k].local[0], m0); /* the material points, for the slip */
    body_point(d, b1, pts[k].local[1], m1);
    khz_pointVelocity(m, d, b0, p0, v0);
    khz_pointVelocity(m, d, b1, p1, v1);
    double vn = 0;
    for (int j = 0; j < 3; j++) vt[j] = v0[j] - v1[j], vn += vt[j] * n[j];
    for (int j = 0; j < 3; j++) vt[j] -= vn * n[j];

    /* friction: spring-damper to the sticking anchor, saturated at mu fn */
    double kt = KHZ_TANGENT_SCALE * c->kp * w, bt = KHZ_TANGENT_SCALE * c->kv * w;
    double Ft[3], delta[3];
    friction_stretch(d, c, ps, pts + k, m0, m1, delta);
    for (int j = 0; j < 3; j++) Ft[j] = -kt * delta[j] - bt * vt[j];
    double ftn = sqrt(khzu_dot3(Ft, Ft)), fmaxt = c->mu * fn;
    if (ftn > fmaxt) {
      double s = ftn > 0 ? fmaxt / ftn : 0;
      for (int j = 0; j < 3; j++) Ft[j] *= s;
    }
    for (int j = 0; j < 3; j++) F[j] = fn * n[j] + Ft[j];
    memcpy(pts[k].force, F, sizeof F);
    if (apply) {
      double Fm[3] = {-F[0], -F[1], -F[2]};
      add_force(m, d, b0, p0, F);
      add_force(m, d, b1, p1, Fm);
    }
  }
  if (apply) rolling_torque(m, d, c, fn_sum);
}

void khz_contactForces(const khzModel *m, khzData *d) {
  for (int i = 0; i < d->ncontact; i++) {
    khzContact *c = d->contact + i;
    if (d->pair[c->slot].phase == KHZ_PHASE_RESTING && c->nbottom) pair_forces(m, d, c, 1, NULL);
  }
}

void khz_contactEnd(const khzModel *m, khzData *d) {
  for (int i = 0; i < d->ncontact; i++) {
    khzContact *c = d->contact + i;
    khzPairState *ps = d->pair + c->slot;
    khzContactPoint *pts = d->cpoint + c->point_adr;

    /* integral term: I <- gamma I + max_y d(y, t) */
    double dmax = c->npoint ? d->cpoint[c->deepest].depth : 0;
    ps->integral = m->contact.gamma * ps->integral + fmax(dmax - ps->offset, 0);
    ps->offset *= exp(-m->timestep / KHZ_IMPACT_RELAX);
    if (ps->phase != KHZ_PHASE_RESTING || !c->nbottom) {
      ps->nanchor = 0;
      continue;
    }

    /* friction anchors at the final state: keep or create one per bottom
     * point; an anchor whose spring exceeds the cone slips to its edge */
    size_t mark = khz_stackMark(d);
    double *slip_limit = khz_stackAlloc(d, (size_t)c->npoint * sizeof(double));
    if (!slip_limit) { /* no scratch (counted by khz_stackAlloc): anchors are forgotten */
      ps->nanchor = 0;
      continue;
    }
    pair_forces(m, d, c, 0, slip_limit);
    khzPairState next = *ps;
    next.nanchor = 0;
    for (int k = 0; k < c->npoint && next.nanchor < KHZ_PAIR_ANCHORS; k++) {
      if (!pts[k].bottom) continue;
      double p0[3], p1[3], delta[3], rel[3];
      body_point(d, c->body[0], pts[k].local[0], p0);
      body_point(d, c->body[1], pts[k].local[1], p1);
      friction_stretch(d, c, ps, pts + k, p0, p1, delta);
      double lim = slip_limit[k];
      double dl = sqrt(khzu_dot3(delta, delta));
      if (dl > lim) { /* the spring exceeds the cone: the anchor slides to its edge */
        double sc = dl > 0 ? lim / dl : 0;
        for (int j = 0; j < 3; j++) delta[j] *= sc;
      }
      const double *R1 = d->xrot + 9 * c->body[1], *x1 = d->xpos + 3 * c->body[1];
      khzu_mulMatTVec3(next.anchor[next.nanchor], R1, delta);
      for (int j = 0; j < 3; j++) rel[j] = p1[j] - x1[j];
      khzu_mulMatTVec3(next.anchor_pos[next.nanchor], R1, rel);
      next.anchor_feature[next.nanchor] = pts[k].feature;
      next.nanchor++;
    }
    *ps = next;
    khz_stackFree(d, mark);
  }
}
