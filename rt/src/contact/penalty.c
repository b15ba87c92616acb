/* penalty.c — Drumwright's penalty forces on the resting pairs:
 *   - gains per pair: automatic when the scene sets none (a critically damped
 *     spring of frequency 0.3 / h on the load the pair carries), else geom
 *     overrides, the scene's, or proportional to the mass the contact
 *     carries (kp = 100 (m1+m2), kv = 50 (m1+m2), ki = 2 (m1+m2) in the
 *     paper; the coefficients and the mass rule are scene options);
 *   - at each bottom point f = max{kp d - kv v + ki I, 0} / r (eqs. 1-3), with
 *     the integral I(t) = sum gamma^(t-i-1) max_y d(y, i), reset on
 *     separation, and each point counted in r by its depth;
 *   - friction: a tangential spring-damper per bottom point stretched by the
 *     slip accumulated since the point began sticking (Yamane & Nakamura),
 *     saturated at mu |f|, its anchor held at the cone's edge while the
 *     spring exceeds it (Coulomb sliding); opt-in rolling and torsional
 *     friction (MuJoCo's condim 6);
 *   - each free body's contact damping (and with automatic gains, stiffness)
 *     held inside RK4's stability region; with automatic gains the rest, and
 *     sliding friction, integrated implicitly once per step (backward Euler
 *     on every bottom point, the points of coupled pairs solved together).
 * Forces are re-evaluated at every integrator stage from the points found at
 * the start of the step, moved with the bodies. Nothing here allocates.
 */
#include "penalty.h"

#include <math.h>
#include <string.h>

#include "cluster.h"
#include "collision/collision.h"
#include "dynamics.h"
#include "spatial.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

/* The penetration a pair already has when it is first found, or when an
 * impact's impulses have stopped its approach (up to a step's travel, an
 * initial overlap, a contact found late) is not a compressed spring: pushed
 * out at once by stiff gains it would return as kinetic energy, 1/2 kp d^2.
 * The springs measure depth past that offset, which relaxes to zero with
 * this time constant (s). */
#define KHZ_IMPACT_RELAX 0.02
/* ... but no faster than this (m/s, as PhysX's maximum depenetration
 * velocity): an overlap d released at d / KHZ_IMPACT_RELAX drives the bodies
 * apart at that speed, and an arm reset 19 cm into its table left at 9.4 m/s
 * with 2.2 kJ. Offsets up to 2 cm (a step's travel at 20 m/s) relax as
 * before. */
#define KHZ_RELAX_SPEED 1.0

/* the sticking spring-damper's gains relative to the normal ones: a contact
 * point below a body's centre of mass moves tangentially with a smaller
 * effective mass than along the normal (rotation), so equal gains would leave
 * the explicit integrator's stability region first in the tangent plane */
#define KHZ_TANGENT_SCALE 0.25
/* the same for the automatic gains: the implicit part and the stiffness
 * limit keep the explicit integrator stable, and a stiffer sticking spring
 * holds a body on a slope, or stops a sliding one, with a smaller stretch
 * (mu m g / kt: 0.03 mm for any mass at 1 kHz) */
#define KHZ_AUTO_TANGENT_SCALE 1.0

/* --------------------------------------------------------------- helpers -- */

/* world position of a point given in body b's frame; body_point_in for the
 * force pass, which takes it inline (built for AVX with pair_forces: the same
 * operations, so the same bits) */
static inline __attribute__((always_inline)) void body_point_in(const khzData *d, int b, const double local[3],
                                                                double x[3]) {
  khzu_mulMatVec3(x, d->xrot + 9 * b, local);
  x[0] += d->xpos[3 * b], x[1] += d->xpos[3 * b + 1], x[2] += d->xpos[3 * b + 2];
}

KHZ_AVX_CLONES static void body_point(const khzData *d, int b, const double local[3], double x[3]) {
  body_point_in(d, b, local, x);
}

/* The point of body s (0, 1) at which contact point pt acts at the current
 * stage. A vertex or an edge crossing is a material point and moves with the
 * body. A point on a curved surface (pt->round == s: a sphere, a capsule, a
 * cylinder's rim) stays where the surface faces the other body, the centre
 * of curvature plus the radius towards it: carried along as a material point
 * it would rise ahead of a rolling body's centre, and the normal force on it
 * would drive the rolling. */
static inline __attribute__((always_inline)) void surface_point_in(const khzModel *m, const khzData *d,
                                                                   const khzContact *c, const khzContactPoint *pt,
                                                                   int s, double p[3]) {
  int b = c->body[s];
  if (pt->round != s) {
    body_point_in(d, b, pt->local[s], p);
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
      body_point_in(d, b, pt->local[s], p);
      return;
    }
    for (int j = 0; j < 3; j++) u[j] /= un;
  }
  body_point_in(d, b, pt->center, p);
  for (int j = 0; j < 3; j++) p[j] += r * u[j];
}

static void surface_point(const khzModel *m, const khzData *d, const khzContact *c, const khzContactPoint *pt,
                          int s, double p[3]) {
  surface_point_in(m, d, c, pt, s, p);
}

/* surface_point and its velocity. On the world (body 0, never round:
 * round_point) body_point is R l + x with R the identity and x +0
 * (khz_forwardPass sets them so): that is l with a -0 made +0 (l finite:
 * a point found at the step's start), and the world does not move
 * (khz_pointVelocity's +0) */
static inline __attribute__((always_inline)) void side_point_in(const khzModel *m, const khzData *d,
                                                                const khzContact *c, const khzContactPoint *pt,
                                                                int s, double p[3], double v[3]) {
  int b = c->body[s];
  if (b == 0) {
    for (int q = 0; q < 3; q++) p[q] = pt->local[s][q] + 0.0, v[q] = 0;
    return;
  }
  surface_point_in(m, d, c, pt, s, p);
  khz_pointVelocityInline(m, d, b, p, v);
}

static void side_point(const khzModel *m, const khzData *d, const khzContact *c, const khzContactPoint *pt,
                       int s, double p[3], double v[3]) {
  side_point_in(m, d, c, pt, s, p, v);
}

/* adds the world force F acting at x on body b to d->fext (add_force_in:
 * inline in the force pass) */
static inline __attribute__((always_inline)) void add_force_in(const khzModel *m, khzData *d, int b,
                                                               const double x[3], const double F[3]) {
  if (b <= 0) return;
  const double *o = d->xpos + 3 * m->body_root[b];
  double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]}, n[3];
  khzu_cross(n, r, F);
  double *f = d->fext + 6 * b;
  f[0] += n[0], f[1] += n[1], f[2] += n[2];
  f[3] += F[0], f[4] += F[1], f[5] += F[2];
}

KHZ_AVX_CLONES static void add_force(const khzModel *m, khzData *d, int b, const double x[3], const double F[3]) {
  add_force_in(m, d, b, x, F);
}

/* The mass a contact on body b may have to carry: a floating tree's whole
 * mass (a foot carries the robot), else the body with its descendants; 0
 * for a static body. */
double khz_penaltyContactMass(const khzModel *m, int b) {
  if (b < 1 || khz_bodyStatic(m, b)) return 0;
  int root = m->body_root[b];
  return m->jnt_type[root] == KHZ_JOINT_FLOATING ? m->body_subtreemass[root] : m->body_subtreemass[b];
}

/* Automatic gains, for a scene that sets no stiffness (kp and kp_per_kg 0):
 * each pair is a critically damped spring of natural frequency
 * KHZ_AUTO_OMEGA / h on the mass it carries, the larger of the pair's own
 * (reduced) mass and the normal force it held at the last step over g.
 * Under its own weight a body then rests g (h / KHZ_AUTO_OMEGA)^2 deep
 * (0.11 mm at 1 kHz) whatever its mass, and a pair under a load rests about
 * as deep, its stiffness following the load. The stiffness falls back
 * slowly (KHZ_AUTO_RELEASE) when the load goes; when it rises, the spring's
 * offset takes up the difference so that the force does not jump (see
 * khz_penaltyLimits). Where a light body between stiff pairs would
 * leave the integrator's stability region the stiffness limit scales its
 * pairs down. */
#define KHZ_AUTO_OMEGA 0.3   /* h * omega of a pair's spring on the mass it carries */
/* the least omega (rad/s): with steps longer than 1 ms the spring keeps the
 * frequency it has at 1 kHz (a body rests 0.12 mm deep, not g (h / 0.3)^2:
 * 1.1 cm at the 10 ms of dm_control's cheetah), the part beyond the explicit
 * integrator's reach going to the implicit solve */
#define KHZ_AUTO_OMEGA_MIN 290.0
#define KHZ_AUTO_ZETA 1.0    /* damping ratio */
#define KHZ_AUTO_KI 0.1      /* ki / kp: the integral term's share */
#define KHZ_AUTO_RELEASE 0.1 /* s: time constant of the stiffness falling with its load */

static int auto_gains(const khzModel *m, const khzContact *c) {
  return !(m->contact.kp > 0) && !(m->contact.kp_per_kg > 0) && !(m->geom_gain[3 * c->geom[0]] > 0) &&
         !(m->geom_gain[3 * c->geom[1]] > 0);
}

int khz_penaltyAutoGains(const khzModel *m, const khzContact *c) { return auto_gains(m, c); }

/* the automatic springs' natural frequency on the mass a pair carries */
static double auto_omega(double h) { return fmax(KHZ_AUTO_OMEGA / h, KHZ_AUTO_OMEGA_MIN); }

double khz_penaltyAutoDepth(const khzData *d, double accel) {
  double w = auto_omega(d->timestep);
  return accel / (w * w);
}

/* the sticking spring-damper's gains relative to the normal ones */
static double tangent_scale(const khzModel *m, const khzContact *c) {
  return auto_gains(m, c) ? KHZ_AUTO_TANGENT_SCALE : KHZ_TANGENT_SCALE;
}

static void pair_gains_auto(const khzModel *m, khzContact *c, const khzPairState *ps, double h) {
  double ms[2], w = auto_omega(h);
  for (int s = 0; s < 2; s++) ms[s] = khz_penaltyContactMass(m, c->body[s]);
  double own = ms[0] > 0 && ms[1] > 0 ? ms[0] * ms[1] / (ms[0] + ms[1]) : ms[0] + ms[1];
  double g = sqrt(khzu_dot3(m->gravity, m->gravity));
  double carried = ps->fn > 0 ? ps->fn / (g > 0 ? g : 9.81) : 0;
  /* a pair releasing an overlap at the bounded speed (KHZ_RELAX_SPEED) does
   * not follow its load: that force is mostly the push that moves the bodies
   * out, and a spring sized on it pushes harder the next step (the carried
   * mass grows by about 2 w v / g, 60 times, a step) until the store
   * kp (d - offset)^2 / 2 left at hundreds of J */
  if (ps->offset > KHZ_RELAX_SPEED * KHZ_IMPACT_RELAX) carried = 0;
  double mass = fmax(own, carried);
  double kp = fmax(mass * w * w, ps->kp * exp(-h / KHZ_AUTO_RELEASE));
  c->kp = kp;
  c->kv = 2 * KHZ_AUTO_ZETA * kp / w;
  c->ki = KHZ_AUTO_KI * kp;
}

/* per-pair gains: automatic (above), or geom overrides, else scene values,
 * else from the masses of the moving bodies (the paper: kp = 100 (m1+m2),
 * kv = 50 (m1+m2), ki = 2 (m1+m2); the coefficients and the mass rule are
 * scene options); and the pair's friction coefficient */
static void pair_gains(const khzModel *m, khzContact *c, const khzPairState *ps, double h) {
  double f0 = m->geom_friction[c->geom[0]], f1 = m->geom_friction[c->geom[1]];
  double mu0 = f0 > 0 ? f0 : m->contact.mu, mu1 = f1 > 0 ? f1 : m->contact.mu;
  c->mu = sqrt(mu0 * mu1);
  if (auto_gains(m, c)) {
    pair_gains_auto(m, c, ps, h);
    return;
  }
  double mass = 0, ms[2], meff = ps->meff;
  int moving = 0;
  for (int s = 0; s < 2; s++) {
    ms[s] = khz_penaltyContactMass(m, c->body[s]);
    moving += ms[s] > 0;
  }
  if (m->contact.gain_mass == KHZ_GAIN_MASS_EFFECTIVE && meff > 0)
    mass = meff;
  else if (m->contact.gain_mass == KHZ_GAIN_MASS_REDUCED && moving == 2)
    mass = ms[0] * ms[1] / (ms[0] + ms[1]);
  else
    mass = ms[0] + ms[1];
  double g[3];
  khz_penaltySceneGains(m, c->geom[0], c->geom[1], mass, g);
  c->kp = g[0], c->kv = g[1], c->ki = g[2];
}

void khz_penaltySceneGains(const khzModel *m, int g0, int g1, double mass, double g[3]) {
  const double base[3] = {m->contact.kp_per_kg, m->contact.kv_per_kg, m->contact.ki_per_kg};
  const double scene[3] = {m->contact.kp, m->contact.kv, m->contact.ki};
  for (int k = 0; k < 3; k++) {
    double o0 = m->geom_gain[3 * g0 + k], o1 = m->geom_gain[3 * g1 + k];
    g[k] = o0 > 0 && o1 > 0 ? fmax(o0, o1) : o0 > 0 ? o0 : o1 > 0 ? o1 : scene[k] > 0 ? scene[k]
                                                                                      : base[k] * mass;
  }
}

/* ------------------------------------------------------------- the gains -- */

int khz_penaltyNeedsInertias(const khzModel *m, const khzData *d) {
  int need = 0, rolling = m->contact.rolling > 0 || m->contact.torsional > 0;
  for (int i = 0; i < d->ncontact; i++) {
    const khzPairState *ps = d->pair + d->contact[i].slot;
    need |= (m->contact.gain_mass == KHZ_GAIN_MASS_EFFECTIVE && !(ps->meff > 0)) ||
            (rolling && !(ps->rot_inertia > 0));
  }
  return need;
}

/* n^T K n from one test impulse along the normal at the deepest point: a
 * corner of a foot moves far more easily than its centre, and the smaller
 * mass keeps the gains stable */
static double effective_mass(const khzModel *m, khzData *d, const khzContact *c, double *dqd,
                             double *dvel) {
  const double *x = d->cpoint[c->deepest].pos;
  double a0[3], a1[3], b0v[3] = {0, 0, 0}, b1v[3] = {0, 0, 0};
  double nm[3] = {-c->normal[0], -c->normal[1], -c->normal[2]};
  (void)dqd; /* the joint velocities are not wanted: NULL spares two nv-long clears */
  khz_pointResponse(m, d, c->body[0], x, c->normal, c->body[1], x, a0, a1, NULL, dvel);
  if (c->body[1] > 0) khz_pointResponse(m, d, c->body[1], x, nm, c->body[0], x, b1v, b0v, NULL, dvel);
  double knn = 0;
  for (int j = 0; j < 3; j++) knn += c->normal[j] * ((a0[j] + b0v[j]) - (a1[j] + b1v[j]));
  return knn > 0 ? 1 / knn : 0;
}

/* the relative angular velocity change along a tangent per unit couple
 * about it, from one test couple on each body: the rolling damper's inertia */
static double rotational_inertia(const khzModel *m, khzData *d, const khzContact *c, double *dqd,
                                 double *dvel) {
  double t[3], a[3] = {1, 0, 0}, f[6] = {0, 0, 0, 0, 0, 0}, kww = 0;
  if (fabs(c->normal[0]) > 0.6) a[0] = 0, a[1] = 1;
  khzu_cross(t, c->normal, a);
  double tn = sqrt(khzu_dot3(t, t));
  (void)dqd; /* the response's joint velocities are not wanted */
  for (int s = 0; s < 2; s++) {
    int b = c->body[s];
    if (b <= 0) continue;
    for (int j = 0; j < 3; j++) f[j] = (s ? -t[j] : t[j]) / tn;
    khz_impulseResponse(m, d, b, f, NULL, dvel);
    for (int q = 0; q < 2; q++) { /* both bodies' rotation (same tree or not) */
      int bq = c->body[q];
      if (bq <= 0 || m->body_root[bq] != m->body_root[b]) continue;
      for (int j = 0; j < 3; j++) kww += (q ? -1 : 1) * dvel[6 * bq + j] * t[j] / tn;
    }
  }
  return kww > 0 ? 1 / kww : 0;
}

void khz_penaltyGains(const khzModel *m, khzData *d, int inertias, double *dqd, double *dvel) {
  int rolling = m->contact.rolling > 0 || m->contact.torsional > 0;
  for (int i = 0; i < d->ncontact; i++) {
    khzContact *c = d->contact + i;
    khzPairState *ps = d->pair + c->slot;
    /* measured once when the pair begins: the gains then stay put while
     * the pair is in contact */
    if (inertias && !(ps->meff > 0)) ps->meff = effective_mass(m, d, c, dqd, dvel);
    if (inertias && rolling && !(ps->rot_inertia > 0))
      ps->rot_inertia = rotational_inertia(m, d, c, dqd, dvel);
    pair_gains(m, c, ps, d->timestep);
  }
}

/* --------------------------------------------------- the implicit part -- */

/* a pair whose implicit stiffness exceeds this many times its explicit one
 * takes its rows' bounds at the step's start too (khz_penaltyImplicit) */
#define KHZ_HELD_IMPLICIT 10
/* the solves that may follow a held pair's bounds to the solution's velocity */
#define KHZ_HELD_PASSES 8
#define KHZ_HELD_REACH 50

/* one row of the implicit solve: a bottom point's normal spring-damper, or
 * one of two tangential dampers at the centroid of a pair's bottom points */
typedef struct {
  int contact;   /* index into d->contact */
  int point;     /* index into the pair's points; -1 for a tangential row */
  double x[3];   /* where its impulse acts (world) */
  double dir[3]; /* the direction of its impulse on body 0 (body 1: minus) */
  double depth;  /* normal rows: the point's depth past the pair's offset */
  double w;      /* normal rows: the point's share of the pair's gains (eq. 1's count) */
  double fn;     /* normal rows: the explicit normal force at the point at the step's start */
  int tie;       /* a deepest-point tie pair's one normal row (tie_pair_forces): its force spread by the shares */
} implicit_row;

static double pair_forces(const khzModel *m, khzData *d, khzContact *c, int apply,
                          double *slip_limit, double (*slip)[3][3], implicit_row *rows, int *nrows);

/* The integral term ki I of eq. 1 is constant over a step (I moves on at
 * its end). For a pair whose spring is mostly implicit (the held pairs of
 * khz_penaltyImplicit: a light body under a large load) it is added to the
 * implicit rows instead of pushing at every explicit stage. Released from a load 560 times its weight, a 10 g block's
 * explicit integral still pushed 4 times its weight and fell below it only
 * after 8 steps (gamma 0.85); the prediction vfree carried that push, and
 * the implicit damper, whose pull is bounded by the explicit force, took
 * back only part of it: the block left the ground at 4.3-5.9 cm/s, off it
 * for 6 unforced steps of V2. In the rows the integral is held back by the
 * damper under the same unilateral bound as the spring; the force at rest
 * is the same. For every pair with an implicit part (tried) an arm reset
 * 8.5 cm into its table gained 255 J on the way out (7 J with the integral
 * explicit, tests/loader/test_deep_overlap.c): in the rows the integral is
 * held back by the implicit damper only, which a robot's pairs may hardly
 * have, where the explicit bracket max{kp d - kv v + ki I, 0} clamps it.
 * The multi-point method only: under the deepest-point method the stack of
 * nine 100 kg boxes on a 1 kg box (stack_heavy_on_light.yaml), which falls
 * over either way, then blew up (1450 J, a box 2 km away after 60 s). */
static int integral_implicit(const khzData *d, const khzContact *c) {
  return d->contact_method != KHZ_CONTACT_DEEPEST && c->kp_implicit > KHZ_HELD_IMPLICIT * c->kp;
}

/* zeroes dvel (6 nbody) over the trees of c's moving bodies */
static void row_clear(const khzModel *m, const khzContact *c, double *dvel, const unsigned char *need) {
  for (int s = 0; s < 2; s++) {
    int b = c->body[s];
    if (b <= 0 || khz_bodyStatic(m, b)) continue;
    int root = m->body_root[b];
    for (int i = root; i < m->body_treeend[root]; i++)
      if (m->body_root[i] == root && need[i]) memset(dvel + 6 * i, 0, 6 * sizeof(double));
  }
}

/* marks in need (val 1) or clears (val 0) the moving bodies of the pairs of
 * rows mem[0..k) and their ancestors: the bodies whose velocity changes
 * row_velocity reads there, and the path to each (khz_impulseResponseNeed) */
static void rows_need(const khzModel *m, const khzData *d, const implicit_row *row, const int *mem, int k,
                      unsigned char *need, unsigned char val) {
  for (int a = 0; a < k; a++) {
    const khzContact *c = d->contact + row[mem[a]].contact;
    for (int s = 0; s < 2; s++)
      if (c->body[s] > 0 && !khz_bodyStatic(m, c->body[s]))
        for (int i = c->body[s]; i > 0 && need[i] != val; i = m->body_parent[i]) need[i] = val;
  }
}

/* the response of the trees of c's bodies to a unit impulse along dir at x
 * (+dir on body 0, -dir on body 1): dvel, the body velocity changes of the
 * bodies need marks (rows_need), the others left zero. dvel must be zero
 * there (the caller clears it once, and with row_clear after reading each
 * response: O(tree) per row, not O(nbody)); the values are those of a full
 * clear and the same sums. */
static void row_response(const khzModel *m, khzData *d, const khzContact *c, const implicit_row *r,
                         double *dqd, double *dvel, double *tmp, const unsigned char *need) {
  (void)dqd; /* khz_impulseResponseNeed writes tmp over b's marked bodies, reads no qd */
  row_clear(m, c, dvel, need);
  for (int s = 0; s < 2; s++) {
    int b = c->body[s];
    if (b <= 0 || khz_bodyStatic(m, b)) continue;
    double J[3] = {s ? -r->dir[0] : r->dir[0], s ? -r->dir[1] : r->dir[1], s ? -r->dir[2] : r->dir[2]};
    double f[6];
    khz_spatialImpulse(m, d, b, r->x, J, f);
    khz_impulseResponseNeed(m, d, b, f, NULL, tmp, need);
    int root = m->body_root[b];
    for (int i = root; i < m->body_treeend[root]; i++)
      if (m->body_root[i] == root && need[i])
        for (int k = 0; k < 6; k++) dvel[6 * i + k] += tmp[6 * i + k];
  }
}

/* the spatial impulses f (6 per row) on body b, side s of the pair, of n
 * unit row impulses along the rows' directions (negated on side 1) */
static void rows_impulses(const khzModel *m, const khzData *d, int b, int s, const implicit_row *row,
                          const int *mem, int n, double *f) {
  for (int j = 0; j < n; j++) {
    const implicit_row *r = row + mem[j];
    double J[3] = {s ? -r->dir[0] : r->dir[0], s ? -r->dir[1] : r->dir[1], s ? -r->dir[2] : r->dir[2]};
    khz_spatialImpulse(m, d, b, r->x, J, f + 6 * j);
  }
}

/* the responses of the trees of c's bodies to unit impulses along the
 * directions of rows mem[0..n) (n <= KHZ_RESPONSE_COLS, all c's), in one
 * walk per body (khz_impulseResponseCols): column j of dvc (6
 * KHZ_RESPONSE_COLS per body) receives what row_response leaves in dvel for
 * row mem[j], bit for bit, over the bodies need marks. dvc must be zero
 * there (rows_clear after reading them); uc and tmpc as dvc, scratch. */
static void rows_response(const khzModel *m, khzData *d, const khzContact *c, const implicit_row *row,
                          const int *mem, int n, double *uc, double *tmpc, double *dvc,
                          const unsigned char *need) {
  enum { W = 6 * KHZ_RESPONSE_COLS };
  for (int s = 0; s < 2; s++) {
    int b = c->body[s];
    if (b <= 0 || khz_bodyStatic(m, b)) continue;
    double f[W];
    rows_impulses(m, d, b, s, row, mem, n, f);
    khz_impulseResponseCols(m, d, b, n, f, need, uc, tmpc);
    int root = m->body_root[b];
    for (int i = root; i < m->body_treeend[root]; i++)
      if (m->body_root[i] == root && need[i])
        for (int k = 0; k < 6 * n; k++) dvc[W * i + k] += tmpc[W * i + k];
  }
}

/* zeroes dvc (rows_response) over the trees of c's moving bodies */
static void rows_clear(const khzModel *m, const khzContact *c, double *dvc, const unsigned char *need) {
  enum { W = 6 * KHZ_RESPONSE_COLS };
  for (int s = 0; s < 2; s++) {
    int b = c->body[s];
    if (b <= 0 || khz_bodyStatic(m, b)) continue;
    int root = m->body_root[b];
    for (int i = root; i < m->body_treeend[root]; i++)
      if (m->body_root[i] == root && need[i]) memset(dvc + W * i, 0, W * sizeof(double));
  }
}

/* row_velocity of row r from column j of rows_response's dvc: the same
 * operations as khz_pointVelocityChange on that column */
static double row_velocity_col(const khzModel *m, const khzData *d, const khzContact *c,
                               const implicit_row *r, const double *dvc, int j) {
  double out = 0;
  for (int s = 0; s < 2; s++) {
    int b = c->body[s];
    if (b <= 0) continue;
    const double *w = dvc + 6 * KHZ_RESPONSE_COLS * b + 6 * j, *o = d->xpos + 3 * m->body_root[b];
    double x[3] = {r->x[0] - o[0], r->x[1] - o[1], r->x[2] - o[2]}, v[3];
    khzu_cross(v, w, x);
    for (int a = 0; a < 3; a++) v[a] += w[3 + a];
    out += (s ? -1 : 1) * khzu_dot3(v, r->dir);
  }
  return out;
}

/* ------------------------------- the Delassus matrix from ABA's factors -- */

/* need's bit for a joint whose C (rows_factor) is made, while a cluster's
 * W is built from the factors (rows_need marks the paths 1; clearing them
 * with rows_need resets every bit) */
enum { NEED_FACTOR = 2 };

/* a body that is its tree's only body (a free object) */
static int body_alone_in_tree(const khzModel *m, int b) {
  return m->body_parent[b] == 0 && m->body_treeend[b] == b + 1;
}

/* the dofs of the joints on body b's path to the root */
static int path_dofs(const khzModel *m, int b) {
  int n = 0;
  for (int i = b; i > 0; i = m->body_parent[i]) n += m->jnt_nv[i];
  return n;
}

/* the dofs the paths of bodies x and y of one tree share: those of their
 * lowest common ancestor's path (a parent's index is below its child's) */
static int shared_dofs(const khzModel *m, int x, int y) {
  while (x != y) {
    if (x > y) x = m->body_parent[x];
    else y = m->body_parent[y];
  }
  return path_dofs(m, x);
}

/* the rows of one group of rows_factor: Y's values of a dof are stored
 * this many to a line, a vector's lanes (delassus_product) */
#define KHZ_FACTOR_LANES 4

/* Rows mem[0..n) of pair c (n <= KHZ_FACTOR_LANES) as rows of
 * Y = C^T L^-T J^T, one side at a time, with M = L^T D L ABA's block
 * factorisation and C C^T = D^-1 per joint (khz_impulseFactorCols,
 * khz_jointDinvFactor): side s's moving body goes to side_body[s] (-1:
 * none) and the ns = side_n[s] dofs of its path to the root, root first, to
 * wr (side 0's KHZ_FACTOR_LANES ns values, then side 1's), row j's value
 * at the path's t-th dof at wr[t KHZ_FACTOR_LANES + j], lanes j >= n +0.
 * Root first, two paths of one tree share a prefix: the dofs of their
 * common ancestors. Then W_ab = sum over the
 * sides of a and b on one tree of sum_t Y_at Y_bt over the shared prefix.
 * Cb (36 per body) keeps each joint's C once per cluster (need's
 * NEED_FACTOR); uc (6 KHZ_RESPONSE_COLS per body) is scratch. Returns the
 * values written, or -1 when a joint's D^-1 is not positive definite. */
static long rows_factor(const khzModel *m, khzData *d, const khzContact *c, const implicit_row *row,
                        const int *mem, int n, unsigned char *need, double *Cb, double *uc, int side_body[2],
                        int side_n[2], double *wr) {
  enum { W = 6 * KHZ_RESPONSE_COLS };
  long used = 0;
  for (int s = 0; s < 2; s++) {
    int b = c->body[s];
    side_body[s] = -1, side_n[s] = 0;
    if (b <= 0 || khz_bodyStatic(m, b)) continue;
    double f[W];
    rows_impulses(m, d, b, s, row, mem, n, f);
    khz_impulseFactorCols(m, d, b, n, f, uc);
    int ns = path_dofs(m, b), below = 0;
    double *w = wr + used;
    for (int i = b; i > 0; i = m->body_parent[i]) {
      int nv = m->jnt_nv[i];
      if (!nv) continue;
      below += nv;
      double *C = Cb + 36 * i;
      if (!(need[i] & NEED_FACTOR)) {
        if (khz_jointDinvFactor(m, d, i, C) != 0) return -1;
        need[i] |= NEED_FACTOR;
      }
      /* C^T u, joint i's entries at t = ns - below .. (the lanes past n
       * +0) */
      for (int j = 0; j < KHZ_FACTOR_LANES; j++) {
        const double *u = uc + W * i + 6 * j;
        double *wj = w + (size_t)(ns - below) * KHZ_FACTOR_LANES + j;
        if (j >= n) {
          for (int a = 0; a < nv; a++) wj[(size_t)a * KHZ_FACTOR_LANES] = 0;
        } else if (nv == 1) { /* the sum's one term, added to +0 as the loop adds it */
          wj[0] = 0.0 + C[0] * u[0];
        } else {
          for (int a = 0; a < nv; a++) {
            double sum = 0;
            for (int e = a; e < nv; e++) sum += C[e * nv + a] * u[e];
            wj[(size_t)a * KHZ_FACTOR_LANES] = sum;
          }
        }
      }
    }
    side_body[s] = b, side_n[s] = ns;
    used += (long)KHZ_FACTOR_LANES * ns;
  }
  return used;
}

/* 1 when a row of the cluster mem[0..k) moves a body of an articulated
 * tree: its Delassus matrix is then built from ABA's factors
 * (delassus_factored); clusters of free objects only keep the walk
 * (rows_response), which costs them as little */
static int cluster_articulated(const khzModel *m, const khzData *d, const implicit_row *row, const int *mem,
                               int k) {
  for (int a = 0; a < k; a++) {
    const khzContact *c = d->contact + row[mem[a]].contact;
    for (int s = 0; s < 2; s++) {
      int b = c->body[s];
      if (b > 0 && !khz_bodyStatic(m, b) && !body_alone_in_tree(m, b)) return 1;
    }
  }
  return 0;
}

/* four doubles, one line of Y (delassus_product) */
typedef double v4d __attribute__((vector_size(32)));

/* W = Y^T Y into A (k x k) from rows_factor's groups (delassus_factored) */
static inline __attribute__((always_inline)) void delassus_product(const khzModel *m, int ng, const int *gstart,
                                                                    const size_t *woff, const int *gbody,
                                                                    const int *gn, const double *wr, int k,
                                                                    double *A) {
  enum { NC = KHZ_FACTOR_LANES };
  /* W = Y^T Y, group p's rows against group q's (q <= p), the sides on one
   * tree over their shared prefix */
  for (int p = 0; p < ng; p++) {
    int bp = gstart[p], np = gstart[p + 1] - bp;
    for (int q = 0; q <= p; q++) {
      int bq = gstart[q], nq = gstart[q + 1] - bq, len[2][2];
      for (int s = 0; s < 2; s++)
        for (int t = 0; t < 2; t++) {
          int x = gbody[2 * p + s], y = gbody[2 * q + t];
          len[s][t] = x > 0 && y > 0 && m->body_root[x] == m->body_root[y] ? shared_dofs(m, x, y) : 0;
        }
      /* the block Y_p Y_q^T, all NC x NC sums in one pass over the shared
       * dofs (a line of p and one of q read once for the 16 products; the
       * lanes past a group's rows are +0), each entry's sum over the sides
       * and the dofs in order; written to both halves, row by row (for p =
       * q the last write of a pair wins in both) */
      v4d acc[NC] = {{0}}; /* acc[i][j]: row i of p against row j of q */
      const double *yp = wr + woff[p];
      for (int s = 0; s < 2; s++) {
        const double *yq = wr + woff[q];
        for (int t = 0; t < 2; t++) {
          for (int e = 0; e < len[s][t]; e++) {
            const double *x = yp + (size_t)e * NC;
            v4d y;
            memcpy(&y, yq + (size_t)e * NC, sizeof y);
            for (int i = 0; i < NC; i++) acc[i] += x[i] * y;
          }
          yq += (size_t)NC * gn[2 * q + t];
        }
        yp += (size_t)NC * gn[2 * p + s];
      }
      for (int i = 0; i < np; i++)
        for (int j = 0; j < nq; j++) A[(bp + i) * k + bq + j] = A[(bq + j) * k + bp + i] = acc[i][j];
    }
  }
}

/* delassus_product compiled for AVX too, as khz_impulseResponseCols: a
 * line's four lanes in one register, each lane its own entry's operations
 * (no FMA, no reassociation), so both builds give the same bits */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void delassus_product_avx(const khzModel *m, int ng, const int *gstart,
                                                                const size_t *woff, const int *gbody, const int *gn,
                                                                const double *wr, int k, double *A) {
  delassus_product(m, ng, gstart, woff, gbody, gn, wr, k, A);
}
#endif

static void delassus_product_any(const khzModel *m, int ng, const int *gstart, const size_t *woff,
                                 const int *gbody, const int *gn, const double *wr, int k, double *A) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) {
    delassus_product_avx(m, ng, gstart, woff, gbody, gn, wr, k, A);
    return;
  }
#endif
  delassus_product(m, ng, gstart, woff, gbody, gn, wr, k, A);
}

/* The Delassus matrix W of the cluster's k rows mem[0..k) into A (k x k),
 * from ABA's factorisation M = L^T D L (rows_factor): W = Y^T Y with
 * Y = C^T L^-T J^T, each entry the dot products of its two rows' sides on
 * one tree over the dofs their paths share, computed once for both halves
 * (A comes out exactly symmetric). O(k depth) for Y and O(k^2 depth) for W,
 * against a walk of the tree per pair and a read of every row's two bodies
 * per column (rows_response). uc is the walk's scratch. 0, or -1 when the
 * scratch stack cannot hold Y or a joint's D^-1 is not positive definite:
 * the caller takes the walk. */
static int delassus_factored(const khzModel *m, khzData *d, const implicit_row *row, const int *mem, int k,
                             unsigned char *need, double *uc, double *A) {
  enum { NC = KHZ_FACTOR_LANES };
  size_t mk = khz_stackMark(d);
  int *gstart = khz_stackAlloc(d, ((size_t)k + 1) * sizeof(int));
  size_t *woff = khz_stackAlloc(d, ((size_t)k + 1) * sizeof(size_t));
  int *gbody = khz_stackAlloc(d, 2 * (size_t)k * sizeof(int)), *gn = khz_stackAlloc(d, 2 * (size_t)k * sizeof(int));
  double *Cb = khz_stackAlloc(d, 36 * (size_t)m->nbody * sizeof(double));
  if (!gstart || !woff || !gbody || !gn || !Cb) {
    khz_stackFree(d, mk);
    return -1;
  }
  /* groups: a pair's consecutive rows, up to KHZ_FACTOR_LANES at a time;
   * Y's values bounded by the pair's paths */
  int ng = 0;
  woff[0] = 0;
  for (int b = 0, e; b < k; b = e, ng++) {
    int pair = row[mem[b]].contact;
    for (e = b + 1; e < k && e - b < NC && row[mem[e]].contact == pair; e++) continue;
    const khzContact *c = d->contact + pair;
    size_t np = 0;
    for (int s = 0; s < 2; s++)
      if (c->body[s] > 0 && !khz_bodyStatic(m, c->body[s])) np += (size_t)path_dofs(m, c->body[s]);
    gstart[ng] = b;
    woff[ng + 1] = woff[ng] + np * KHZ_FACTOR_LANES;
  }
  gstart[ng] = k;
  double *wr = khz_stackAlloc(d, (woff[ng] + 1) * sizeof(double));
  if (!wr) {
    khz_stackFree(d, mk);
    return -1;
  }
  /* Y's rows, group by group */
  for (int g = 0; g < ng; g++) {
    int b = gstart[g];
    if (rows_factor(m, d, d->contact + row[mem[b]].contact, row, mem + b, gstart[g + 1] - b, need, Cb, uc,
                    gbody + 2 * g, gn + 2 * g, wr + woff[g]) < 0) {
      khz_stackFree(d, mk);
      return -1;
    }
  }
  delassus_product_any(m, ng, gstart, woff, gbody, gn, wr, k, A);
  khz_stackFree(d, mk);
  return 0;
}

/* The cluster's Delassus matrix W into A (k x k) by one articulated walk
 * per pair's rows (rows_response; the entries of rows on none of the
 * pair's trees +0). need marks the cluster's paths (rows_need; left 2). */
static void delassus_walk(const khzModel *m, khzData *d, const implicit_row *row, const int *mem, int k,
                          unsigned char *need, double *uc, double *tmpc, double *dvc, double *A) {
  /* dvc zero where rows_response adds and row_velocity_col reads: the
   * bodies need marks (their marks turned to 2 as they are cleared) and
   * the rows' static bodies */
  for (int a = 0; a < k; a++) {
    const khzContact *c = d->contact + row[mem[a]].contact;
    for (int s = 0; s < 2; s++) {
      int b = c->body[s];
      if (b > 0 && !need[b]) memset(dvc + 6 * KHZ_RESPONSE_COLS * b, 0, 6 * KHZ_RESPONSE_COLS * sizeof(double));
      for (int i = b; i > 0 && need[i] == 1; i = m->body_parent[i]) {
        memset(dvc + 6 * KHZ_RESPONSE_COLS * i, 0, 6 * KHZ_RESPONSE_COLS * sizeof(double));
        need[i] = 2;
      }
    }
  }
  /* a pair's consecutive rows (up to KHZ_RESPONSE_COLS) in one walk */
  for (int b = 0, e; b < k; b = e) {
    int pair = row[mem[b]].contact;
    for (e = b + 1; e < k && e - b < KHZ_RESPONSE_COLS && row[mem[e]].contact == pair; e++) continue;
    rows_response(m, d, d->contact + pair, row, mem + b, e - b, uc, tmpc, dvc, need);
    /* the response moves the trees of the pair's moving bodies only: a
     * row on none of them reads zeros there, and row_velocity_col's sums
     * of zero products give +0, written directly (in a pile most rows of
     * a cluster touch none of a pair's two bodies) */
    int root[2];
    for (int s = 0; s < 2; s++) {
      int bs = d->contact[pair].body[s];
      root[s] = bs > 0 && !khz_bodyStatic(m, bs) ? m->body_root[bs] : -1;
    }
    for (int a = 0, last = -1, moved = 0; a < k; a++) {
      const implicit_row *ra = row + mem[a];
      const khzContact *ca = d->contact + ra->contact;
      if (ra->contact != last) {
        last = ra->contact, moved = 0;
        for (int s = 0; s < 2; s++) {
          int bs = ca->body[s];
          moved |= bs > 0 && (m->body_root[bs] == root[0] || m->body_root[bs] == root[1]);
        }
      }
      for (int j = b; j < e; j++) A[a * k + j] = moved ? row_velocity_col(m, d, ca, ra, dvc, j - b) : 0;
    }
    rows_clear(m, d->contact + pair, dvc, need);
  }
}

/* The cluster's Delassus matrix W into A (k x k): from ABA's factors
 * (delassus_factored) where factored is set and the cluster holds an
 * articulated tree and the scratch stack has room, else by the walk. need
 * marks the cluster's paths (rows_need) on entry; on return its marks are
 * nonzero on them (clear them with rows_need). Returns 1 when A came from
 * the factors (exactly symmetric), 0 from the walk. */
static int delassus(const khzModel *m, khzData *d, const implicit_row *row, const int *mem, int k,
                    unsigned char *need, double *uc, double *tmpc, double *dvc, double *A, int factored) {
  if (factored && cluster_articulated(m, d, row, mem, k)) {
    if (delassus_factored(m, d, row, mem, k, need, uc, A) == 0) return 1;
    rows_need(m, d, row, mem, k, need, 0); /* its bits cleared; the walk's marks again */
    rows_need(m, d, row, mem, k, need, 1);
  }
  delassus_walk(m, d, row, mem, k, need, uc, tmpc, dvc, A);
  return 0;
}

/* ------------------------------- a cluster that moves one lone body -- */

/* the body that every row of the cluster mem[0..k) moves, when it is one
 * body alone in its tree (a free object resting on static bodies or the
 * world: the default scene's objects on the table, a pile's body on the
 * floor), else 0 */
static int cluster_lone_body(const khzModel *m, const khzData *d, const implicit_row *row, const int *mem,
                             int k) {
  int lone = 0;
  for (int a = 0; a < k; a++) {
    const khzContact *c = d->contact + row[mem[a]].contact;
    for (int s = 0; s < 2; s++) {
      int b = c->body[s];
      if (b <= 0 || khz_bodyStatic(m, b)) continue;
      if (lone && b != lone) return 0;
      lone = b;
    }
  }
  return lone > 0 && body_alone_in_tree(m, lone) && m->jnt_nv[lone] > 0 ? lone : 0;
}

/* A[a k + j] for the rows a of one pair side: tm_j = sgn (w_j x x + v_j) .
 * dir from the lone body's velocity changes w (component c of column j at
 * w[c k + j]), added to pre (the sides before it) and then post (+0: no
 * side after it; else the static side's term), as row_velocity_col's out:
 * each column its own operations, in lanes where the CPU has AVX */
static inline __attribute__((always_inline)) void lone_entries(const double *w, int k, const double x[3],
                                                                const double dir[3], double sgn, double pre,
                                                                int after, double post, double *Arow) {
  /* x and dir in registers: Arow's stores may not alias them */
  const double x0 = x[0], x1 = x[1], x2 = x[2], d0 = dir[0], d1 = dir[1], d2 = dir[2];
  for (int j = 0; j < k; j++) {
    double w0 = w[j], w1 = w[k + j], w2 = w[2 * k + j];
    double v0 = w1 * x2 - w2 * x1, v1 = w2 * x0 - w0 * x2, v2 = w0 * x1 - w1 * x0;
    v0 += w[3 * k + j], v1 += w[4 * k + j], v2 += w[5 * k + j];
    double out = pre + sgn * (v0 * d0 + v1 * d1 + v2 * d2);
    Arow[j] = after ? out + post : out;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void lone_entries_avx(const double *w, int k, const double x[3],
                                                            const double dir[3], double sgn, double pre,
                                                            int after, double post, double *Arow) {
  lone_entries(w, k, x, dir, sgn, pre, after, post, Arow);
}
#endif

/* dv += S D^-1 S^T f of a body alone in its tree, pA = -f, from dv = 0
 * (khz_impulseResponseCols' operations on a tree of one body with nv
 * dofs; the U dv term, zero here, kept for its bits) */
static inline __attribute__((always_inline)) void lone_response(const double *S, const double *U, const double *Dinv,
                                                                 int nv, const double pA[6], double dv[6]) {
  double u[6];
  for (int a = 0; a < nv; a++) u[a] = -khzu_dot6(S + 6 * a, pA);
  if (nv == 1) {
    double dq = Dinv[0] * (u[0] - khzu_dot6(U, dv));
    for (int e = 0; e < 6; e++) dv[e] += S[e] * dq;
    return;
  }
  double rr[6], dq[6];
  for (int a = 0; a < nv; a++) rr[a] = u[a] - khzu_dot6(U + 6 * a, dv);
  for (int a = 0; a < nv; a++) {
    dq[a] = 0;
    for (int c = 0; c < nv; c++) dq[a] += Dinv[nv * a + c] * rr[c];
  }
  for (int a = 0; a < nv; a++)
    for (int e = 0; e < 6; e++) dv[e] += S[6 * a + e] * dq[a];
}

/* The Delassus matrix W (k x k, into A) of a cluster whose rows all move
 * the one lone body b (cluster_lone_body), bit for bit what delassus_walk
 * gives it: each row's unit impulse f = (r x J, J) through b's joint alone
 * (khz_impulseResponseCols on a tree of one body: u = S^T f, dv = S D^-1
 * u), then each entry the row's velocity change at its point, the static
 * side's term (zero velocity change: one value per row) taken once per
 * row instead of once per entry, and no walk over the tree, marks or
 * clearing. w: 6 k doubles of scratch. */
static void delassus_lone(const khzModel *m, khzData *d, const implicit_row *row, const int *mem, int k, int b,
                          double *w, double *A) {
  int nv = m->jnt_nv[b];
  const double *S = d->S + 36 * b, *U = d->U + 36 * b, *Dinv = d->Dinv + 36 * b;
  for (int j = 0; j < k; j++) {
    const implicit_row *r = row + mem[j];
    int s = d->contact[r->contact].body[0] == b ? 0 : 1;
    double J[3] = {s ? -r->dir[0] : r->dir[0], s ? -r->dir[1] : r->dir[1], s ? -r->dir[2] : r->dir[2]};
    double f[6], pA[6], dv[6] = {0, 0, 0, 0, 0, 0};
    khz_spatialImpulse(m, d, b, r->x, J, f);
    for (int e = 0; e < 6; e++) pA[e] = -f[e];
    /* a free joint's six dofs (every object on a table) with the bounds
     * fixed: the same sums in the same order, unrolled */
    if (nv == 6) lone_response(S, U, Dinv, 6, pA, dv);
    else lone_response(S, U, Dinv, nv, pA, dv);
    /* rows_response adds the response to the cleared +0 */
    for (int e = 0; e < 6; e++) w[e * k + j] = 0.0 + dv[e];
  }
  const double zero[6] = {0, 0, 0, 0, 0, 0};
  const double *o = d->xpos + 3 * m->body_root[b];
#if defined(__x86_64__) && defined(__GNUC__)
  int avx = __builtin_cpu_supports("avx");
#endif
  for (int a = 0; a < k; a++) {
    const implicit_row *r = row + mem[a];
    const khzContact *c = d->contact + r->contact;
    int sb = c->body[0] == b ? 0 : 1, os = c->body[1 - sb];
    /* the other side (static, its velocity change +0), as row_velocity_col */
    double z = 0;
    if (os > 0) {
      const double *oo = d->xpos + 3 * m->body_root[os];
      double xo[3] = {r->x[0] - oo[0], r->x[1] - oo[1], r->x[2] - oo[2]}, v[3];
      khzu_cross(v, zero, xo);
      for (int e = 0; e < 3; e++) v[e] += zero[3 + e];
      z = (1 - sb ? -1 : 1) * khzu_dot3(v, r->dir);
    }
    double x[3] = {r->x[0] - o[0], r->x[1] - o[1], r->x[2] - o[2]}, sgn = sb ? -1 : 1;
    /* out = 0, then side 0's term, then side 1's */
    double pre = sb == 1 && os > 0 ? 0.0 + z : 0.0;
    int after = sb == 0 && os > 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (avx) {
      lone_entries_avx(w, k, x, r->dir, sgn, pre, after, z, A + (size_t)a * k);
      continue;
    }
#endif
    lone_entries(w, k, x, r->dir, sgn, pre, after, z, A + (size_t)a * k);
  }
}

/* row r's relative velocity along its direction, from the body velocities
 * vel (d->vtree, or velocity changes) */
static double row_velocity(const khzModel *m, const khzData *d, const khzContact *c,
                           const implicit_row *r, const double *vel) {
  double out = 0;
  for (int s = 0; s < 2; s++) {
    int b = c->body[s];
    if (b <= 0) continue;
    double v[3];
    khz_pointVelocityChange(m, d, b, r->x, vel, v);
    out += (s ? -1 : 1) * khzu_dot3(v, r->dir);
  }
  return out;
}

/* ---------------------------------------------------- the damping limit -- */

/* Explicit integration is stable only while h times the largest damping
 * rate of a body, the largest eigenvalue of M^-1 C with C the damping its
 * contact points put on its six velocities, stays inside the integrator's
 * region (RK4: 2.78 on the negative real axis). Per point the dampers are
 * kv w along the normal and KHZ_TANGENT_SCALE kv w across it, so the rate
 * grows with the number of pairs pressing a body and with how easily its
 * points turn it: a flat box's corners turn it three times more easily than
 * they lift it, and a light box between the ground and a heavy one gets
 * both pairs' dampers. Past the limit the damping pumps energy in (the body
 * chatters). A pair's damping is scaled down so that neither of its free
 * bodies exceeds KHZ_DAMPING_LIMIT / h; with the automatic gains the rest is
 * integrated implicitly (khz_penaltyImplicit). */
#define KHZ_DAMPING_LIMIT 1.8

/* Semi-implicit Euler's region is smaller. One step of x'' = -w^2 x - c x'
 * maps (x, v) by a matrix of trace 2 - ch - (wh)^2 and determinant 1 - ch,
 * stable (Jury's conditions) while ch < 2 and (wh)^2 + 2 ch < 4: with the
 * springs at KHZ_STIFFNESS_LIMIT (wh = 1.2) the damping must stay below
 * 1.28 / h, where RK4's 1.8 pumps energy in. A free body's explicit damping
 * under Euler stays below 1.0 / h (the rest implicit with automatic gains). */
#define KHZ_DAMPING_LIMIT_EULER 1.0

static double damping_limit(const khzModel *m) {
  return m->integrator == KHZ_INT_EULER ? KHZ_DAMPING_LIMIT_EULER : KHZ_DAMPING_LIMIT;
}


/* C (6 x 6, [w; v] about the body's centre of mass) += J^T D J for one
 * contact point at r from the centre, D = (kn - kt) n n^T + kt I its
 * normal and tangential gains and J = [-[r]x, I] (the point's velocity from
 * [w; v]). Column a of J is not structurally 0 in rows row[a][0..cnt[a])
 * only, with the values jv[a][.], so entry (a, b) is the sum over those
 * rows i of a and j of b of (J_ia D_ij) J_jb, from +0 in that order: the
 * sum over all three rows would add only exact zeros (the same bits).
 * Unrolled over the constant tables, the 36 entries are straight
 * multiply-adds (body_limits' own Ir in V3's settling, 22.1 -> 17.1 M over
 * 100 steps, against loops that tested the table's rows). */
static inline __attribute__((always_inline)) void point_gain_add(double *C, const double r[3], const double n[3],
                                                                 double kn, double kt) {
  double D[3][3];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) D[i][j] = (kn - kt) * n[i] * n[j] + (i == j ? kt : 0);
  static const int row[6][2] = {{1, 2}, {0, 2}, {0, 1}, {0, 0}, {1, 1}, {2, 2}};
  static const int cnt[6] = {2, 2, 2, 1, 1, 1};
  const double jv[6][2] = {{-r[2], r[1]}, {r[2], -r[0]}, {-r[1], r[0]}, {1, 1}, {1, 1}, {1, 1}};
#pragma GCC unroll 6
  for (int a = 0; a < 6; a++)
#pragma GCC unroll 6
    for (int b = 0; b < 6; b++) {
      double v = 0;
#pragma GCC unroll 2
      for (int ii = 0; ii < cnt[a]; ii++)
#pragma GCC unroll 2
        for (int jj = 0; jj < cnt[b]; jj++) v += jv[a][ii] * D[row[a][ii]][row[b][jj]] * jv[b][jj];
      C[6 * a + b] += v;
    }
}

/* adds the dampers (gain kv) or springs (gain kp) of contact c's bottom
 * points to C (6x6, [w; v] at the centre of mass) of side s's body. The
 * points are weighed equally, not by depth as pair_forces weighs them: the
 * limit must hold for the pair's shape, not for its depths at one instant
 * (docs/validation.md has what the depth weights did here). */
static inline __attribute__((always_inline)) void damping_add(const khzModel *m, const khzData *d,
                                                              const khzContact *c, int s, double gain, double *C) {
  const khzContactPoint *pts = d->cpoint + c->point_adr;
  const double *n = c->normal, *xc = d->xcom + 3 * c->body[s];
  double nb = 0;
  for (int k = 0; k < c->npoint; k++) nb += pts[k].bottom ? pts[k].share : 0;
  if (!(nb > 0)) return;
  for (int k = 0; k < c->npoint; k++) {
    if (!pts[k].bottom) continue;
    double w = pts[k].share / nb, kn = gain * w, kt = tangent_scale(m, c) * gain * w;
    double r[3] = {pts[k].pos[0] - xc[0], pts[k].pos[1] - xc[1], pts[k].pos[2] - xc[2]};
    point_gain_add(C, r, n, kn, kt);
  }
}

void khz_penaltyPointGainAdd(double *C, const double r[3], const double n[3], double kn, double kt) {
  point_gain_add(C, r, n, kn, kt);
}

/* free body b's world inertia R I R^T (Iinv_cache + 18 b + 9) and its
 * Cholesky factor (in Iinv_cache + 18 b), once per body per step (cached[b]
 * 1), or NULL if the inertia is singular (cached[b] -1). The inverse is
 * inverse_inertia's, for the bodies the LDL^T test leaves to the power
 * iteration only (a third of the 960 pile's) */
static const double *world_inertia(const khzModel *m, const khzData *d, int b, double *Iinv_cache, int *cached) {
  double *Iinv = Iinv_cache + 18 * b;
  if (!cached[b]) {
    double tmp[9];
    const double *R = d->xrot + 9 * b;
    khzu_mulMat3(tmp, R, m->body_inertia + 9 * b);
    khzu_mulMatMatT3(Iinv, tmp, R);
    memcpy(Iinv + 9, Iinv, 9 * sizeof(double));
    cached[b] = khzu_cholFactor(Iinv, 3) != 0 ? -1 : 1;
  }
  return cached[b] > 0 ? Iinv : NULL;
}

/* free body b's world inverse inertia (Iinv_cache + 18 b, cached[b] 2; the
 * world inertia 9 doubles on), or NULL if the inertia is singular: the
 * inverse of world_inertia's factor column by column (khzu_cholInverse:
 * khzu_cholSolve's operations on each column of the identity, side by side) */
static const double *inverse_inertia(const khzModel *m, const khzData *d, int b, double *Iinv_cache,
                                     int *cached) {
  double *Iinv = Iinv_cache + 18 * b;
  if (!world_inertia(m, d, b, Iinv_cache, cached)) return NULL;
  if (cached[b] == 1) {
    double L[9];
    memcpy(L, Iinv, sizeof L);
    khzu_cholInverse(L, 3, Iinv);
    cached[b] = 2;
  }
  return Iinv;
}

/* 1 if every pivot of mu M - C's LDL^T (M = diag(Iw, mass 1)) is positive */
static inline __attribute__((always_inline)) int pencil_within(const double *C, const double *Iw, double mass,
                                                              double mu) {
  const double mm = mu * mass;
  /* the lower triangle of mu M - C; L's multipliers overwrite it */
  double A[6][6], piv[6];
#pragma GCC unroll 6
  for (int i = 0; i < 6; i++)
#pragma GCC unroll 6
    for (int j = 0; j <= i; j++) A[i][j] = (i < 3 ? mu * Iw[3 * i + j] : i == j ? mm : 0) - C[6 * i + j];
#pragma GCC unroll 6
  for (int j = 0; j < 6; j++) {
    double w[6], dj = A[j][j];
#pragma GCC unroll 6
    for (int k = 0; k < j; k++) w[k] = A[j][k] * piv[k], dj -= w[k] * A[j][k];
    if (!(dj > 0)) return 0;
    piv[j] = dj;
    const double r = 1 / dj;
#pragma GCC unroll 6
    for (int i = j + 1; i < 6; i++) {
      double v = A[i][j];
#pragma GCC unroll 6
      for (int k = 0; k < j; k++) v -= A[i][k] * w[k];
      A[i][j] = v * r;
    }
  }
  return 1;
}

int khz_penaltyBodyWithin(const double C[36], const double Iw[9], double mass, double mu) {
  return pencil_within(C, Iw, mass, mu);
}

/* 1 if h times free body b's largest rate (lam of M^-1 C, or sqrt(lam)
 * for the springs) is within limit: lam <= mu (mu = limit / h, or its
 * square) exactly when mu M - C is positive semi-definite (lam the largest
 * eigenvalue of the pencil (C, M), M positive definite), tested by the
 * LDL^T factorisation of mu M - C: every pivot positive (Golub and Van
 * Loan, Matrix Computations, 4.1). A pivot at or below 0 (the rate past the
 * limit, or on it to rounding) leaves it to damping_rate. In the piles most
 * pressed bodies are within the limit, so this saves their 30 power
 * iterations (V3's steps 1500-1550: 2057 of 3197, where the |M^-1 C|_F
 * bound this replaced settled under 1 %). A body past the limit takes the
 * iteration as before; one within it keeps the factor 1, where the
 * iteration's |M^-1 C x| / |x| (M^-1 C is not symmetric: the estimate can
 * lie above the eigenvalue before it converges) sometimes scaled it (7 of
 * the 48 piles move; bench/bitcheck.sh's scenes do not). A singular
 * inertia: 1 (damping_rate returns 0). */
static inline __attribute__((always_inline)) int damping_rate_within(const khzModel *m, const khzData *d, int b,
                                                                    const double *C, int stiffness, double limit,
                                                                    double *Iinv_cache, int *cached) {
  const double *Iw = world_inertia(m, d, b, Iinv_cache, cached);
  if (!Iw) return 1;
  double mu = limit / d->timestep;
  return pencil_within(C, Iw + 9, m->body_mass[b], stiffness ? mu * mu : mu);
}


/* y = A x as axpys over A's columns, At = A^T (row-major: At + q n is
 * column q): y_a sums A_aq x_q over q in order from +0, as the dot product
 * with row a does, so y is that product's bit for bit; the inner loop
 * vectorises. The structural zeros (K of pairs with the floor is block
 * diagonal, L zero between different trees) are not skipped: their
 * products are exactly +-0 (x finite) and a sum that starts at +0 never is
 * -0, so adding them leaves every bit as it is. n a constant where inlined. */
static inline __attribute__((always_inline)) void matvec_columns(double *y, const double *At, const double *x,
                                                                 int n) {
  for (int a = 0; a < n; a++) y[a] = 0;
  for (int q = 0; q < n; q++) {
    const double xq = x[q], *col = At + q * n;
    for (int a = 0; a < n; a++) y[a] += col[a] * xq;
  }
}

/* two doubles at a time (SSE2 on x86-64): each lane does the scalar code's
 * operations in its order, so the results keep their bits */
typedef double v2d __attribute__((vector_size(16)));
static inline v2d dup2(double x) { return (v2d){x, x}; }

/* largest eigenvalue of M^-1 C for free body b (power iteration; M^-1 C is
 * similar to a symmetric positive semi-definite matrix). The start x is a
 * screw of pitch w.v / |w|^2 != 0, which moves every point, so J x != 0 at
 * each bottom point and x^T C x > 0 (each point's D is positive definite:
 * its tangential gain is a positive multiple of its normal gain): C x never
 * vanishes for a C with a pair in it, and no later iterate does (C M^-1 C x
 * is 0 only if M^-1/2 C x is). Only the last iterate's |M^-1 C x| / |x| is
 * returned, so |x| is summed there alone. C x as axpys over C's columns,
 * two rows per lane pair, and I^-1 y likewise: each y_i, z_i the same sum
 * in the same order as the row-by-row products (matvec_columns). */
static inline __attribute__((always_inline)) double body_rate(const double *C, const double *Iinv, double mass) {
  v2d col[6][3], x[3] = {{1, 0.7}, {0.5, 0.3}, {0.2, 0.1}};
  for (int q = 0; q < 6; q++) /* rows 2k, 2k + 1 of C's column q */
    for (int k = 0; k < 3; k++) col[q][k] = (v2d){C[6 * (2 * k) + q], C[6 * (2 * k + 1) + q]};
  const v2d i0 = {Iinv[0], Iinv[3]}, i1 = {Iinv[1], Iinv[4]}, i2 = {Iinv[2], Iinv[5]}, im = dup2(mass);
  double nz = 0;
  for (int it = 0; it < 30; it++) {
    v2d y[3] = {{0, 0}, {0, 0}, {0, 0}};
    for (int q = 0; q < 6; q++) {
      v2d xq = dup2(x[q / 2][q % 2]);
      for (int k = 0; k < 3; k++) y[k] += col[q][k] * xq;
    }
    double y0 = y[0][0], y1 = y[0][1], y2 = y[1][0];
    v2d z01 = i0 * dup2(y0) + i1 * dup2(y1) + i2 * dup2(y2);
    double z2 = Iinv[6] * y0 + Iinv[7] * y1 + Iinv[8] * y2;
    v2d z23 = {z2, y[1][1]}, z45 = y[2] / im;
    z23[1] /= im[1];
    v2d z01s = z01 * z01, z23s = z23 * z23, z45s = z45 * z45;
    nz = 0;
    nz += z01s[0], nz += z01s[1], nz += z23s[0], nz += z23s[1], nz += z45s[0], nz += z45s[1];
    if (!(nz > 0)) return 0;
    if (it == 29) break;
    v2d norm = dup2(sqrt(nz));
    x[0] = z01 / norm, x[1] = z23 / norm, x[2] = z45 / norm;
  }
  v2d x01s = x[0] * x[0], x23s = x[1] * x[1], x45s = x[2] * x[2];
  double nx = 0;
  nx += x01s[0], nx += x01s[1], nx += x23s[0], nx += x23s[1], nx += x45s[0], nx += x45s[1];
  return sqrt(nz / nx);
}

/* KHZ_BODY_RATE_EXACT 1: body_limits takes body_rate_exact in place of
 * the 30 power iterations (1258 against 2671 Ir a call; the iteration
 * lies up to 9 % below the rate in test_euler_contact's stack). bl26's
 * 0.60 -> 1.27 mm drift of that stack with it on was chaos, not the rate:
 * the stack did not come to rest either way, and 1e-9 on the rates moved
 * the drift from 0.3 to 3 mm (KHZ_LIMITS_COUPLED, below, is the fix;
 * docs/benchmarks.md, bl27). Off: with the given gains of the piles it
 * cuts more damping (bl26: 5 of the 48 piles at rest only after 9.98 s). */
#ifndef KHZ_BODY_RATE_EXACT
#define KHZ_BODY_RATE_EXACT 0
#endif

/* the largest eigenvalue of M^-1 C exactly, M = diag(I, m 1): M^-1 =
 * P P^T with P = diag(G, 1 / sqrt(m) 1), G the Cholesky factor of I^-1,
 * so M^-1 C is similar to the symmetric positive semi-definite S = P^T C P
 * (6 x 6). S, scaled by its largest Gershgorin bound g (so that the
 * polynomial below stays near 1), is reduced to tridiagonal form by four
 * Householder reflections (Golub and Van Loan, Matrix Computations, alg.
 * 8.3.1: p = beta A v, w = p - (beta v^T p / 2) v, A -= v w^T + w v^T), and
 * the largest root of its characteristic polynomial f is found by
 * Laguerre's method from g (the roots all lie below it), f, f' and f'' by
 * the three-term recurrence of the leading minors (Wilkinson, The
 * Algebraic Eigenvalue Problem, 5.36). For a polynomial with real roots
 * only, Laguerre's iterates from above the largest root fall monotonically
 * onto it (cubically at a simple root): each is an upper bound, and the
 * iteration stops when a step no longer shortens it by more than a few
 * rounding units. An inverse inertia whose factor fails (not positive
 * definite in rounding): |M^-1 C|_F, an upper bound. */
static inline __attribute__((always_inline)) double body_rate_exact(const double *C, const double *Iinv, double mass) {
  double g00 = Iinv[0] > 0 ? sqrt(Iinv[0]) : 0, g10 = 0, g20 = 0, g11 = 0, g21 = 0, g22 = 0;
  if (g00 > 0) {
    g10 = Iinv[3] / g00, g20 = Iinv[6] / g00;
    double d11 = Iinv[4] - g10 * g10;
    g11 = d11 > 0 ? sqrt(d11) : 0;
    if (g11 > 0) {
      g21 = (Iinv[7] - g20 * g10) / g11;
      double d22 = Iinv[8] - g20 * g20 - g21 * g21;
      g22 = d22 > 0 ? sqrt(d22) : 0;
    }
  }
  if (!(g22 > 0)) {
    double f = 0;
    for (int j = 0; j < 6; j++) {
      for (int i = 0; i < 3; i++) {
        double a = Iinv[3 * i] * C[j] + Iinv[3 * i + 1] * C[6 + j] + Iinv[3 * i + 2] * C[12 + j];
        f += a * a;
      }
      for (int i = 3; i < 6; i++) f += C[6 * i + j] * C[6 * i + j] / (mass * mass);
    }
    return sqrt(f);
  }
  /* P (6 x 6, lower triangular) and T = C P, S = P^T T */
  const double s = 1 / sqrt(mass);
  double P[6][6] = {{0}}, T[6][6], A[6][6];
  P[0][0] = g00, P[1][0] = g10, P[1][1] = g11, P[2][0] = g20, P[2][1] = g21, P[2][2] = g22;
  P[3][3] = P[4][4] = P[5][5] = s;
#pragma GCC unroll 6
  for (int i = 0; i < 6; i++)
#pragma GCC unroll 6
    for (int j = 0; j < 6; j++) {
      double v = 0;
#pragma GCC unroll 6
      for (int k = j; k < (j < 3 ? 3 : j + 1); k++) v += C[6 * i + k] * P[k][j];
      T[i][j] = v;
    }
#pragma GCC unroll 6
  for (int i = 0; i < 6; i++)
#pragma GCC unroll 6
    for (int j = 0; j <= i; j++) {
      double v = 0;
#pragma GCC unroll 6
      for (int k = i; k < (i < 3 ? 3 : i + 1); k++) v += P[k][i] * T[k][j];
      A[i][j] = A[j][i] = v;
    }
  /* Householder: column k below the sub-diagonal to 0, k = 0 .. 3 */
  double diag[6], off[5];
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++) {
    double v[6] = {0}, xx = 0;
#pragma GCC unroll 6
    for (int i = k + 1; i < 6; i++) v[i] = A[i][k], xx += v[i] * v[i];
    double alpha = v[k + 1] >= 0 ? -sqrt(xx) : sqrt(xx);
    v[k + 1] -= alpha;
    double vv = 0;
#pragma GCC unroll 6
    for (int i = k + 1; i < 6; i++) vv += v[i] * v[i];
    off[k] = alpha;
    if (!(vv > 0)) continue; /* the column is 0 already */
    double beta = 2 / vv, p[6] = {0}, vp = 0;
#pragma GCC unroll 6
    for (int i = k + 1; i < 6; i++) {
#pragma GCC unroll 6
      for (int j = k + 1; j < 6; j++) p[i] += A[i][j] * v[j];
      p[i] *= beta, vp += v[i] * p[i];
    }
    double half = 0.5 * beta * vp;
#pragma GCC unroll 6
    for (int i = k + 1; i < 6; i++) p[i] -= half * v[i];
#pragma GCC unroll 6
    for (int i = k + 1; i < 6; i++)
#pragma GCC unroll 6
      for (int j = k + 1; j < 6; j++) A[i][j] -= v[i] * p[j] + p[i] * v[j];
  }
  off[4] = A[5][4];
  /* Gershgorin's bound g on T's eigenvalues; T / g then has them in [0, 1] */
  double g = 0;
  for (int i = 0; i < 6; i++) {
    diag[i] = A[i][i];
    g = fmax(g, diag[i] + (i > 0 ? fabs(off[i - 1]) : 0) + (i < 5 ? fabs(off[i]) : 0));
  }
  if (!(g > 0)) return 0;
  const double rg = 1 / g;
  double off2[5];
  for (int i = 0; i < 6; i++) diag[i] *= rg;
  for (int i = 0; i < 5; i++) off2[i] = off[i] * rg * (off[i] * rg);
  /* Laguerre from above: lam_new = lam - n / (G + sqrt((n - 1)(n H - G^2))),
   * G = f' / f, H = G^2 - f'' / f, f(lam) = det(lam 1 - T / g) */
  double lam = 1 + 1e-12;
  for (int it = 0; it < 100; it++) {
    double f0 = 1, f1 = lam - diag[0], d0 = 0, d1 = 1, e0 = 0, e1 = 0;
#pragma GCC unroll 5
    for (int i = 1; i < 6; i++) {
      double u = lam - diag[i];
      double f2 = u * f1 - off2[i - 1] * f0, d2 = f1 + u * d1 - off2[i - 1] * d0,
             e2 = 2 * d1 + u * e1 - off2[i - 1] * e0;
      f0 = f1, f1 = f2, d0 = d1, d1 = d2, e0 = e1, e1 = e2;
    }
    if (!(f1 > 0)) break; /* on the root to rounding */
    double G = d1 / f1, H = G * G - e1 / f1, disc = 5 * (6 * H - G * G);
    double step = 6 / (G + sqrt(disc > 0 ? disc : 0));
    if (!(step > 4e-16 * lam)) break;
    lam -= step;
  }
  return lam * g;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static double body_rate_avx(const double *C, const double *Iinv, double mass) {
  return body_rate(C, Iinv, mass);
}
#endif

/* as body_limits runs it: the AVX build where the CPU has it */
double khz_penaltyBodyRate(const double C[36], const double Iinv[9], double mass) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) return body_rate_avx(C, Iinv, mass);
#endif
  return body_rate(C, Iinv, mass);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static double body_rate_exact_avx(const double *C, const double *Iinv, double mass) {
  return body_rate_exact(C, Iinv, mass);
}
#endif

double khz_penaltyBodyRateExact(const double C[36], const double Iinv[9], double mass) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) return body_rate_exact_avx(C, Iinv, mass);
#endif
  return body_rate_exact(C, Iinv, mass);
}

static inline __attribute__((always_inline)) double damping_rate(const khzModel *m, const khzData *d, int b,
                                                                 const double *C, double *Iinv_cache, int *cached) {
  const double *Iinv = inverse_inertia(m, d, b, Iinv_cache, cached);
  if (!Iinv) return 0;
  return KHZ_BODY_RATE_EXACT ? body_rate_exact(C, Iinv, m->body_mass[b]) : body_rate(C, Iinv, m->body_mass[b]);
}

/* The stiffness limit of the automatic gains: h sqrt(largest eigenvalue of
 * M^-1 K) of a free body, K its contact springs, stays below this (a light
 * body between heavy ones carries both pairs' load-following springs) */
#define KHZ_STIFFNESS_LIMIT 1.2

/* KHZ_LIMITS_COUPLED 1: a pair with automatic gains between two moving
 * bodies counts twice in each body's C. The per-body rate holds the other
 * body still; the whole system's M^-1 C, whose pair term is J^T D J with
 * J = [J_a, -J_b], is bounded by the block-diagonal sum with each such pair
 * doubled ((x - y)^T D (x - y) <= 2 x^T D x + 2 y^T D y), so the largest of
 * the per-body rates bounds the coupled rate. Off: the nine 100 kg boxes on
 * 1 kg keep about 1 J of vibration under Euler (docs/benchmarks.md, bl27).
 * Automatic gains only: there the part past the limit goes implicit; given
 * gains lose it (V3: the damping cut further, 8.7 mm penetration against
 * 6.5 and 3294 against 2758 k Ir per step over steps 1500-1550). Euler
 * only: its region has less room than the coupling's factor ((wh)^2 +
 * 2 ch = 3.44 at the limits, Jury's bound 4); under RK4 (1.8 against
 * 2.78) it made test_contact_defaults' case t (joint friction on) gain
 * 0.569 J (bound 0.318, 0.154 without), not yet understood. */
#ifndef KHZ_LIMITS_COUPLED
#define KHZ_LIMITS_COUPLED 1
#endif

/* 1 if body b moves (not the world, not static) */
static inline int body_moves(const khzModel *m, int b) {
  return b > 0 && !khz_bodyStatic(m, b);
}

/* scale's mark, while body_limits sums C, of a free body some pair presses
 * (its C cleared); every other body's C is neither cleared nor read */
#define KHZ_LIMITS_PRESSED (-1.0)

/* per free body: the factor on its pairs' gain (kp or kv) that keeps h
 * times the largest rate of M^-1 (gain matrix), raised to power, below
 * limit. Only the pressed bodies' 6 x 6 blocks of C are cleared and
 * scanned: O(pairs), not O(nbody) (the 22 humanoids' 552 bodies have no
 * free one, and clearing 36 doubles per body twice a step was 2.7 % of it) */
static inline __attribute__((always_inline)) void body_limits_in(const khzModel *m, khzData *d, int stiffness,
                                                                  double limit, double *C, double *scale,
                                                                  double *Iinv, int *cached) {
  const int coupled = KHZ_LIMITS_COUPLED && m->integrator == KHZ_INT_EULER;
  for (int b = 0; b < m->nbody; b++) scale[b] = 1;
  for (int i = 0; i < d->ncontact; i++) {
    const khzContact *c = d->contact + i;
    if (!c->nbottom || (stiffness && !auto_gains(m, c))) continue;
    for (int s = 0; s < 2; s++) {
      int b = c->body[s];
      if (!khz_bodyFree(m, b)) continue;
      if (scale[b] != KHZ_LIMITS_PRESSED) {
        scale[b] = KHZ_LIMITS_PRESSED;
        memset(C + 36 * b, 0, 36 * sizeof(double));
      }
      double gain = stiffness ? c->kp : c->kv;
      if (coupled && auto_gains(m, c) && body_moves(m, c->body[!s])) gain *= 2;
      damping_add(m, d, c, s, gain, C + 36 * b);
    }
  }
  for (int b = 1; b < m->nbody; b++) {
    if (scale[b] != KHZ_LIMITS_PRESSED) continue;
    scale[b] = 1;
    int any = 0; /* no pair pressed it: nothing to limit */
    for (int k = 0; k < 36 && !any; k++) any = C[36 * b + k] != 0;
    if (!any) continue;
    /* a rate that cannot pass the limit leaves the factor at 1 whatever
     * the iteration would return: the bound alone decides it */
    if (damping_rate_within(m, d, b, C + 36 * b, stiffness, limit, Iinv, cached)) continue;
    double lam = damping_rate(m, d, b, C + 36 * b, Iinv, cached);
    double rate = (stiffness ? sqrt(lam) : lam) * d->timestep;
    if (rate > limit) scale[b] = stiffness ? (limit / rate) * (limit / rate) : limit / rate;
  }
}

/* body_limits compiled for AVX too, as aba_core_keep: no FMA, no
 * reassociation, so both give the same bits; the 6 x 6 sums and the power
 * iteration's lane pairs take fewer instructions in the VEX forms */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void body_limits_avx(const khzModel *m, khzData *d, int stiffness,
                                                           double limit, double *C, double *scale, double *Iinv,
                                                           int *cached) {
  body_limits_in(m, d, stiffness, limit, C, scale, Iinv, cached);
}
#endif

static void body_limits(const khzModel *m, khzData *d, int stiffness, double limit, double *C, double *scale,
                        double *Iinv, int *cached) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) {
    body_limits_avx(m, d, stiffness, limit, C, scale, Iinv, cached);
    return;
  }
#endif
  body_limits_in(m, d, stiffness, limit, C, scale, Iinv, cached);
}

static double pair_scale(const khzContact *c, const double *scale) {
  return fmin(scale[c->body[0] > 0 ? c->body[0] : 0], scale[c->body[1] > 0 ? c->body[1] : 0]);
}

/* 1 if body b moves as part of an articulated tree (a robot's link), not as
 * a free rigid body */
static int body_articulated(const khzModel *m, int b) {
  return b > 0 && !khz_bodyStatic(m, b) && !khz_bodyFree(m, b);
}

/* 1 if pair c's automatic gains press a robot's link: the tree limits apply */
static int pair_on_tree(const khzModel *m, const khzContact *c) {
  return c->nbottom && auto_gains(m, c) && (body_articulated(m, c->body[0]) || body_articulated(m, c->body[1]));
}

int khz_penaltyTreeLimits(const khzModel *m, const khzData *d) {
  for (int i = 0; i < d->ncontact; i++)
    if (pair_on_tree(m, d->contact + i)) return 1;
  return 0;
}

/* the most moving bodies whose articulated response the tree limits take
 * together; a larger cluster is bounded pair by pair */
#define KHZ_TREE_BODIES 16

/* the most bodies tree_limits takes together in model m */
static int tree_bodies(const khzModel *m) { return m->nbody < KHZ_TREE_BODIES ? m->nbody : KHZ_TREE_BODIES; }

/* the kept responses' room (khzData.tree_resp): a cluster of nb bodies
 * keeps its (6 nb)^2 L, at most 36 KHZ_TREE_BODIES per body; every cluster
 * holds an articulated body, so room for the articulated bodies and one
 * more cluster's (a cluster that does not fit keeps none) */
size_t khz_penaltyTreeRespDoubles(const khzModel *m) {
  size_t nart = 0;
  for (int b = 1; b < m->nbody; b++) nart += body_articulated(m, b);
  return nart ? 36 * KHZ_TREE_BODIES * (nart + KHZ_TREE_BODIES) : 0;
}

/* what khz_penaltyLimits and tree_limits hold at once: per body the
 * doubles C (36), scale (1), Iinv (18), u6 (36) and dv6 (36) and the ints
 * cached, parent, slot and head; per pair sk and sv, cl, mem and next; the
 * cluster's matrices and the rate's scratch; the byte marks need and kept;
 * 18 blocks' alignment */
size_t khz_penaltyLimitsStackBytes(const khzModel *m) {
  size_t n = 6 * (size_t)tree_bodies(m), nc = (size_t)m->npair_max;
  return (127 * (size_t)m->nbody + 2 * nc + 3 * n * n + KHZ_PENALTY_RATE_SCRATCH((size_t)tree_bodies(m))) *
             sizeof(double) +
         (4 * (size_t)m->nbody + 3 * nc + (size_t)tree_bodies(m)) * sizeof(int) + 2 * (size_t)m->nbody + 18 * 64;
}

/* adds pair c's contact springs (gain = kp) or dampers (kv) to K (n x n, n
 * = 6 times the bodies of slot): each bottom point, weighed equally as in
 * damping_add, puts D = g (n n^T + scale (I - n n^T)) on the relative
 * velocity of its two bodies' points, J_s V_s with J_s = [-[r_s]x, I], r_s
 * from body s's tree origin (the frame of the impulse response). Each
 * entry is added with its mirror, so K stays exactly symmetric (the
 * Lanczos of lanczos_rate takes u^T K v as an inner product). */
static void tree_springs(const khzModel *m, const khzData *d, const khzContact *c, double gain, const int *slot,
                         int n, double *K) {
  const khzContactPoint *pts = d->cpoint + c->point_adr;
  const double *nn = c->normal;
  double nb = 0, ts = tangent_scale(m, c);
  for (int k = 0; k < c->npoint; k++) nb += pts[k].bottom ? pts[k].share : 0;
  for (int k = 0; k < c->npoint && nb > 0; k++) {
    if (!pts[k].bottom) continue;
    double kn = gain * pts[k].share / nb, kt = ts * kn, D[3][3], J[2][3][6];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) D[i][j] = (kn - kt) * nn[i] * nn[j] + (i == j ? kt : 0);
    for (int s = 0; s < 2; s++) {
      int b = c->body[s];
      if (b <= 0 || slot[b] < 0) continue;
      const double *o = d->xpos + 3 * m->body_root[b], *x = pts[k].pos;
      double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]};
      memset(J[s], 0, sizeof J[s]);
      J[s][0][1] = r[2], J[s][0][2] = -r[1], J[s][1][0] = -r[2], J[s][1][2] = r[0], J[s][2][0] = r[1],
      J[s][2][1] = -r[0];
      for (int i = 0; i < 3; i++) J[s][i][3 + i] = 1;
    }
    for (int s = 0; s < 2; s++) /* block (s, t) with t >= s, and its mirror: K exactly symmetric */
      for (int t = s; t < 2; t++) {
        int bs = c->body[s], bt = c->body[t];
        if (bs <= 0 || bt <= 0 || slot[bs] < 0 || slot[bt] < 0) continue;
        double sign = s == t ? 1 : -1, DJ[3][6];
        for (int i = 0; i < 3; i++)
          for (int q = 0; q < 6; q++) DJ[i][q] = D[i][0] * J[t][0][q] + D[i][1] * J[t][1][q] + D[i][2] * J[t][2][q];
        double *Kst = K + 6 * slot[bs] * n + 6 * slot[bt], *Kts = K + 6 * slot[bt] * n + 6 * slot[bs];
        for (int p = 0; p < 6; p++)
          for (int q = s == t ? p : 0; q < 6; q++) {
            double v = sign * (J[s][0][p] * DJ[0][q] + J[s][1][p] * DJ[1][q] + J[s][2][p] * DJ[2][q]);
            Kst[p * n + q] += v;
            if (s != t || p != q) Kts[q * n + p] += v;
          }
      }
  }
}

/* which 6 x 6 blocks of A (n = 6 nb, nb <= 32) hold a nonzero: bit Q of
 * mask[R] for block (R, Q), read from At = A^T (column block Q of A) */
static void block_mask(const double *At, int n, unsigned *mask) {
  for (int R = 0; R < n / 6; R++) mask[R] = 0;
  for (int Q = 0; Q < n / 6; Q++) {
    for (int R = 0; R < n / 6; R++) {
      int any = 0;
      for (int q = 6 * Q; q < 6 * Q + 6 && !any; q++)
        for (int a = 6 * R; a < 6 * R + 6; a++) any |= At[q * n + a] != 0;
      if (any) mask[R] |= 1u << Q;
    }
  }
}

/* matvec_columns without the blocks mask marks zero: their products are
 * exactly +-0 (x finite), and leaving them out leaves every sum's bits as
 * they are (matvec_columns: a sum that starts at +0 never is -0, and adding
 * +-0 to it changes nothing). The clusters of more than two bodies: L is
 * zero between different trees and K between bodies no pair joins, so most
 * blocks are zero (22 humanoids piled up: clusters of up to 16 bodies) */
#if defined(__x86_64__) && defined(__GNUC__)
/* matvec_blocks with a row block's first four sums in one AVX register and
 * the last two in an SSE one: AVX without FMA, so each lane still rounds
 * its product and then its sum, as the two-lane code does: the same bits.
 * Two row blocks R, R + 1 whose nonzero column blocks mostly coincide (L
 * within one tree: all of them) go together: their 12 rows are three AVX
 * registers, so a column costs one broadcast, three products and three sums
 * where the blocks apart cost two of each per block. Their sums then also
 * take the column blocks only the other row block needs: those blocks are
 * exactly zero, and adding their +-0 products leaves the sums' bits as they
 * are (above), so every y_a is still the same sum in the same order. */
__attribute__((target("avx"))) static void matvec_blocks_avx(double *y, const double *At, const double *x, int n,
                                                             const unsigned *mask) {
  int nb = n / 6, R = 0;
  for (; R < nb; R++) {
    unsigned both = R + 1 < nb ? mask[R] | mask[R + 1] : 0;
    /* per column: 10 operations for the pair over the union, 8 per block
     * for each block apart */
    if (both && 10 * __builtin_popcount(both) <= 8 * (__builtin_popcount(mask[R]) + __builtin_popcount(mask[R + 1]))) {
      __m256d y0 = _mm256_setzero_pd(), y1 = _mm256_setzero_pd(), y2 = _mm256_setzero_pd();
      for (unsigned bits = both; bits; bits &= bits - 1) {
        int Q = __builtin_ctz(bits);
        const double *xQ = x + 6 * Q, *c = At + 6 * Q * n + 6 * R;
#pragma GCC unroll 6
        for (int q = 0; q < 6; q++, c += n) {
          __m256d xq = _mm256_broadcast_sd(xQ + q);
          y0 = _mm256_add_pd(y0, _mm256_mul_pd(_mm256_loadu_pd(c), xq));
          y1 = _mm256_add_pd(y1, _mm256_mul_pd(_mm256_loadu_pd(c + 4), xq));
          y2 = _mm256_add_pd(y2, _mm256_mul_pd(_mm256_loadu_pd(c + 8), xq));
        }
      }
      _mm256_storeu_pd(y + 6 * R, y0), _mm256_storeu_pd(y + 6 * R + 4, y1), _mm256_storeu_pd(y + 6 * R + 8, y2);
      R++;
      continue;
    }
    __m256d y0 = _mm256_setzero_pd();
    __m128d y1 = _mm_setzero_pd();
    for (unsigned bits = mask[R]; bits; bits &= bits - 1) {
      int Q = __builtin_ctz(bits);
      const double *xQ = x + 6 * Q, *c = At + 6 * Q * n + 6 * R;
#pragma GCC unroll 6
      for (int q = 0; q < 6; q++, c += n) {
        y0 = _mm256_add_pd(y0, _mm256_mul_pd(_mm256_loadu_pd(c), _mm256_broadcast_sd(xQ + q)));
        y1 = _mm_add_pd(y1, _mm_mul_pd(_mm_loadu_pd(c + 4), _mm_loaddup_pd(xQ + q)));
      }
    }
    _mm256_storeu_pd(y + 6 * R, y0), _mm_storeu_pd(y + 6 * R + 4, y1);
  }
}
#endif

static void matvec_blocks(double *y, const double *At, const double *x, int n, const unsigned *mask) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) {
    matvec_blocks_avx(y, At, x, n, mask);
    return;
  }
#endif
  /* row block R outer, its nonzero column blocks Q in increasing order
   * inside and each block's 6 columns in order: each y_a still sums over q
   * in increasing order from +0, so the bits are the column loop's; the
   * row block's 6 sums stay in registers over the whole row */
  for (int R = 0; R < n / 6; R++) {
    v2d y0 = {0, 0}, y1 = {0, 0}, y2 = {0, 0};
    for (unsigned bits = mask[R]; bits; bits &= bits - 1) {
      int Q = __builtin_ctz(bits);
      const double *xQ = x + 6 * Q, *c = At + 6 * Q * n + 6 * R;
      for (int q = 0; q < 6; q++, c += n) {
        v2d xq = dup2(xQ[q]);
        y0 += (v2d){c[0], c[1]} * xq, y1 += (v2d){c[2], c[3]} * xq, y2 += (v2d){c[4], c[5]} * xq;
      }
    }
    double *ya = y + 6 * R;
    ya[0] = y0[0], ya[1] = y0[1], ya[2] = y1[0], ya[3] = y1[1], ya[4] = y2[0], ya[5] = y2[1];
  }
}

/* the largest eigenvalue theta of the symmetric tridiagonal T (alpha on
 * the diagonal, beta[i] joining rows i and i + 1, k rows) by Laguerre's
 * method on p(mu) = det(T - mu I) from an upper bound mu: p's roots are
 * real, and from above the largest one Laguerre's iterates descend
 * monotonically onto it, cubically (Wilkinson, The Algebraic Eigenvalue
 * Problem, 7.47), also past a close pair of roots, where Newton's halve
 * their distance per step. p = prod d_i with the pivots d_i = alpha_i - mu
 * - beta_{i-1}^2 / d_{i-1} of T - mu I's LDL^T (all negative above the
 * root), so G = sum 1 / (mu - lambda) = (ln p)' = sum d_i' / d_i and
 * H = sum 1 / (mu - lambda)^2 = -(ln p)'' from d_i' and d_i''. Returns theta
 * and, in s2, the squared last component of its unit eigenvector,
 * -1 / d_k'(theta) (= chi_{k-1}(theta) / chi_k'(theta); Parlett, The
 * Symmetric Eigenvalue Problem, 7.9). */
static double tridiag_largest(const double *alpha, const double *beta, int k, double guess, double mu,
                              double *s2) {
  double dk1 = -1, top = mu;
  if (guess < mu) mu = guess;
  for (int it = 0; it < 60; it++) {
    double d = 0, dp = 0, dpp = 0, g = 0, hh = 0;
    int above = 1;
    for (int i = 0; i < k; i++) {
      double dn = alpha[i] - mu, dpn = -1, dppn = 0;
      if (i) {
        double b2 = beta[i - 1] * beta[i - 1], r = 1 / d;
        dn -= b2 * r, dpn += b2 * dp * r * r, dppn = b2 * (dpp * d - 2 * dp * dp) * r * r * r;
      }
      d = dn, dp = dpn, dpp = dppn, above &= d < 0;
      double r = 1 / d;
      g += dp * r, hh += (dp * dp - dpp * d) * r * r;
    }
    dk1 = dp;
    if (!above && it == 0 && mu < top) { /* the guess is below a root: from the bound */
      mu = top, it = -1;
      continue;
    }
    if (!above || !(g > 0)) break; /* at (or by rounding below) the root */
    double disc = (k - 1) * (k * hh - g * g);
    double next = mu - k / (g + sqrt(disc > 0 ? disc : 0));
    if (!(next < mu)) break;
    int done = mu - next <= 1e-9 * mu; /* then theta - root <= k (mu - next), below */
    mu = next;
    if (done) break;
  }
  *s2 = dk1 < -1 ? -1 / dk1 : 1;
  return mu;
}

/* sum a_i b_i (n even) in two lanes */
static inline double dot_pairs(const double *a, const double *b, int n) {
  v2d s0 = {0, 0}, s1 = {0, 0};
  int i = 0;
  for (; i + 4 <= n; i += 4) s0 += (v2d){a[i], a[i + 1]} * (v2d){b[i], b[i + 1]}, s1 += (v2d){a[i + 2], a[i + 3]} * (v2d){b[i + 2], b[i + 3]};
  for (; i < n; i += 2) s0 += (v2d){a[i], a[i + 1]} * (v2d){b[i], b[i + 1]};
  s0 += s1;
  return s0[0] + s0[1];
}

/* the Ritz vector x = V s of theta (T's largest eigenvalue as
 * tridiag_largest returns it, k rows; V holds k vectors of n), |x| = 1:
 * s by two steps of inverse iteration on T - mu I, mu = theta (1 + 1e-7)
 * just above theta, through its LDL^T (all pivots negative above T's
 * spectrum: stable without pivoting). Only a start for the next call: its
 * accuracy moves the next call's step count, never its bracket. A pivot
 * not negative (mu not above the spectrum) leaves x = 0, a cold start. */
static void ritz_vector(const double *alpha, const double *beta, int k, double theta, const double *V, int n,
                        double *x) {
  double s[KHZ_RATE_STEPS], dpiv[KHZ_RATE_STEPS], mu = theta * (1 + 1e-7);
  for (int i = 0; i < k; i++) {
    dpiv[i] = alpha[i] - mu - (i ? beta[i - 1] * beta[i - 1] / dpiv[i - 1] : 0);
    if (!(dpiv[i] < 0)) return;
    s[i] = 1;
  }
  for (int it = 0; it < 2; it++) {
    for (int i = 1; i < k; i++) s[i] -= beta[i - 1] / dpiv[i - 1] * s[i - 1]; /* L z = s */
    s[k - 1] /= dpiv[k - 1];                                                   /* D L^T s = z */
    for (int i = k - 2; i >= 0; i--) s[i] = s[i] / dpiv[i] - beta[i] / dpiv[i] * s[i + 1];
    double big = 0;
    for (int i = 0; i < k; i++) big = fmax(big, fabs(s[i]));
    if (!(big > 0)) return;
    for (int i = 0; i < k; i++) s[i] /= big;
  }
  for (int i = 0; i < k; i++)
    for (int a = 0; a < n; a++) x[a] += s[i] * V[(size_t)i * n + a];
  double xx = 0;
  for (int a = 0; a < n; a++) xx += x[a] * x[a];
  if (!(xx > 0)) return;
  double r = 1 / sqrt(xx);
  for (int a = 0; a < n; a++) x[a] *= r;
}

/* largest eigenvalue of L K (n = 6 nb; L and K symmetric positive
 * semi-definite, K exactly symmetric) by Lanczos in K's semi-inner product
 * <u, v>_K = u^T K v, in which L K is self-adjoint (K L K is symmetric).
 * With K = G G^T this is the symmetric Lanczos process on S = G^T L G with
 * u = G^T v (Golub & Van Loan 10.1), whose nonzero eigenvalues are L K's;
 * a step costs one product with K and one with L, as a power iteration's
 * step, and K v is kept with v, so the inner products cost no further
 * product. The largest Ritz value theta of T_j is at most the largest
 * eigenvalue lambda1 (Cauchy interlacing), and S has an eigenvalue within
 * rho = beta_j |s_j| of theta (s_j the last component of theta's unit
 * eigenvector in T_j; Parlett 13.2). Without reorthogonalisation this holds
 * in floating point too, up to rounding (Paige, 1980: a Ritz value with a
 * small residual bound is near an eigenvalue; the loss of orthogonality
 * that begins as theta converges repeats eigenvalues, it does not move
 * them). The iteration stops once rho <= KHZ_RATE_TOL theta and returns
 * theta + rho: at least the eigenvalue rho brackets and at most 2 rho
 * above it. That eigenvalue is lambda1 unless the start is (nearly)
 * orthogonal to lambda1's eigenvector, which the golden-ratio start,
 * frac(0.618 (a + 1)) + 0.1, is not for the structured null spaces of the
 * contacts (a body's equal [w; v]: rate26). The left-right pair of nearly
 * equal eigenvalues that slowed the power iteration (lim26: lambda2 /
 * lambda1 0.99 in half the humanoid's calls) is captured as a pair, and
 * the convergence goes with the gap to lambda3. A start with v^T K v = 0
 * restarts from e_j, j the largest diagonal of K; K = 0 or L K = 0 gives
 * 0. mk, ml: the nonzero blocks of K and L (matvec_blocks), or NULL to
 * find them; w holds (KHZ_RATE_STEPS + 5) n doubles.
 *
 * warm (n doubles, or NULL): a kept start, the Ritz vector of the last call
 * on these bodies (tree_limits keeps it per body, d->rate_warm). A nonzero
 * warm x starts from L K (x / |x| + KHZ_RATE_WARM_MIX g / |g|), g the
 * golden-ratio start: the same Lanczos process with the same stopping rule
 * and the same bracket theta + rho, only from a start nearer lambda1's
 * eigenvector. The cold start's share keeps lambda1's component at least
 * KHZ_RATE_WARM_MIX of the cold start's (relative) where the kept vector
 * has none (a contact set that changed, two eigenvalues that crossed), so
 * such a call takes more steps; a trap on lambda2 would need its residual
 * within the tolerance with that share unresolved, about KHZ_RATE_TOL /
 * KHZ_RATE_WARM_MIX of lambda1 below it (none in test_largest_rate_warm).
 * The product L K removes the start's part in K's null space (range(L K)
 * meets null(K) only in 0, L positive definite): that part is invisible to
 * the inner products and grows by alpha / beta a step, and from a start
 * near an eigenvector (beta small) it swamped K v_j's rounding (rates 4e-6
 * above and 3e-7 below lambda1 in the test without it). On return warm holds the
 * Ritz vector of theta, x = V_j s (V_j the Lanczos vectors, s theta's
 * eigenvector of T_j by inverse iteration), at unit length, or zeros where
 * there is no rate. steps (or NULL) receives the Lanczos steps. */
KHZ_AVX_CLONES static double lanczos_rate(const double *L, const double *K, int n, const unsigned *mk_given,
                           const unsigned *ml_given, double *w, double *warm, int *steps) {
  unsigned mk_found[KHZ_TREE_BODIES], ml_found[KHZ_TREE_BODIES];
  const unsigned *mk = mk_given, *ml = ml_given;
  if (!mk) block_mask(K, n, mk_found), mk = mk_found;
  if (!ml) block_mask(L, n, ml_found), ml = ml_found;
  double *v = w + n, *y = v + n, *vold = y + n, *yn = vold + n; /* v_j, K v_j, v_{j-1}, K w */
  double *V = yn + n; /* v_0 ... v_{j}: the Ritz vector's basis */
  double gg = 0, xx = 0;
  for (int a = 0; a < n; a++) {
    double g = 0.6180339887498949 * (a + 1);
    v[a] = g - floor(g) + 0.1, vold[a] = 0;
    gg += v[a] * v[a], xx += warm ? warm[a] * warm[a] : 0;
  }
  if (xx > 0) { /* the kept start, with the cold start's share, then L K of it */
    double sx = 1 / sqrt(xx), sg = KHZ_RATE_WARM_MIX / sqrt(gg);
    for (int a = 0; a < n; a++) v[a] = warm[a] * sx + v[a] * sg;
    matvec_blocks(y, K, v, n, mk);
    matvec_blocks(v, L, y, n, ml);
  }
  if (steps) *steps = 0;
  if (warm) memset(warm, 0, (size_t)n * sizeof(double));
  matvec_blocks(y, K, v, n, mk);
  double b2 = dot_pairs(v, y, n);
  if (!(b2 > 0)) { /* the start in K's null space: e_j with K_jj > 0 */
    int best = -1;
    for (int j = 0; j < n; j++)
      if (K[j * n + j] > (best < 0 ? 0 : K[best * n + best])) best = j;
    if (best < 0) return 0; /* K = 0 (positive semi-definite, zero diagonal) */
    for (int a = 0; a < n; a++) v[a] = a == best;
    matvec_blocks(y, K, v, n, mk);
    b2 = K[best * n + best];
  }
  double b = sqrt(b2);
  for (int a = 0; a < n; a++) v[a] /= b, y[a] /= b;
  double alpha[KHZ_RATE_STEPS], beta[KHZ_RATE_STEPS], theta = 0, rho = 0;
  int j = 0;
  for (; j < KHZ_RATE_STEPS; j++) {
    if (warm) memcpy(V + (size_t)j * n, v, (size_t)n * sizeof(double));
    matvec_blocks(w, L, y, n, ml); /* w = L K v_j */
    double al = dot_pairs(y, w, n), bl = j ? beta[j - 1] : 0;
    alpha[j] = al;
    for (int a = 0; a < n; a++) w[a] -= al * v[a] + bl * vold[a];
    matvec_blocks(yn, K, w, n, mk);
    b2 = dot_pairs(w, yn, n);
    b = b2 > 0 ? sqrt(b2) : 0;
    /* an upper bound on T_{j+1}'s largest eigenvalue for Laguerre's start:
     * Weyl's, max(theta_j, alpha_j) + beta_{j-1} (T_{j+1} is T_j beside
     * alpha_j plus the coupling of norm beta_{j-1}); the first guess
     * theta_j + rho_j, taken when it is above every eigenvalue */
    double top = (j ? fmax(theta, al) + bl : al) * (1 + 1e-12), s2;
    theta = tridiag_largest(alpha, beta, j + 1, theta + rho, top, &s2);
    rho = b * sqrt(s2);
    if (!(theta > 0)) { /* L K = 0 on the Krylov space */
      if (steps) *steps = j + 1;
      return 0;
    }
    if (rho <= KHZ_RATE_TOL * theta) break;
    beta[j] = b;
    for (int a = 0; a < n; a++) vold[a] = v[a], v[a] = w[a] / b, y[a] = yn[a] / b;
  }
  /* not within the tolerance after KHZ_RATE_STEPS steps: theta, a lower
   * bound, as the power iteration's estimate was (a rare call of a large
   * cluster; theta + rho there was up to 16 % above, and a rate that
   * much higher moved the 22 humanoids' impacts, see docs/benchmarks.md
   * lanc26) */
  int k = j < KHZ_RATE_STEPS ? j + 1 : KHZ_RATE_STEPS;
  if (steps) *steps = k;
  if (warm) ritz_vector(alpha, beta, k, theta, V, n, warm);
  return rho <= KHZ_RATE_TOL * theta ? theta + rho : theta;
}

/* largest eigenvalue of L K (n = 6 nb; L and K exactly symmetric positive
 * semi-definite) by lanczos_rate; scratch holds KHZ_PENALTY_RATE_SCRATCH(nb)
 * doubles. */
static double largest_rate(const double *L, const double *K, int nb, double *scratch, const unsigned *mk,
                           const unsigned *ml, double *warm, int *steps) {
  return lanczos_rate(L, K, 6 * nb, mk, ml, scratch, warm, steps);
}

double khz_penaltyLargestRateWarm(const double *L, double *K, int nb, double *scratch, double *warm, int *steps) {
  int n = 6 * nb;
  for (int a = 0; a < n; a++) /* a K summed in another order may not be exactly symmetric */
    for (int b = 0; b < a; b++) K[a * n + b] = K[b * n + a] = 0.5 * (K[a * n + b] + K[b * n + a]);
  return largest_rate(L, K, nb, scratch, NULL, NULL, warm, steps);
}

double khz_penaltyLargestRate(const double *L, double *K, int nb, double *scratch) {
  return khz_penaltyLargestRateWarm(L, K, nb, scratch, NULL, NULL);
}

/* clears the 6 x 6 blocks of A (n = 6 nb) that matvec_blocks can read,
 * less those in written[R] (NULL: none), which the caller fills. A is
 * stored transposed (At: block (Q, R) at Q's rows, R's columns), and
 * matvec_blocks_avx takes row blocks R and R + 1 together over the union
 * of their masks: for every Q in mask[R] it reads stored blocks (Q, R - 1),
 * (Q, R) and (Q, R + 1). Stored row Q's blocks to clear are therefore
 * those columns, gathered from every R whose mask holds Q (not mask[Q - 1]
 * and mask[Q + 1]: that left blocks the pairing reads unwritten, and a
 * cluster's rates depended on what the stack held before) */
static void clear_blocks(double *A, int nb, const unsigned *mask, const unsigned *written) {
  int n = 6 * nb;
  unsigned read[32] = {0}; /* nb <= 32: one bit per block in an unsigned mask */
  for (int R = 0; R < nb; R++) {
    unsigned cols = 1u << R | (R > 0 ? 1u << (R - 1) : 0) | (R + 1 < nb ? 1u << (R + 1) : 0);
    for (unsigned bits = mask[R]; bits; bits &= bits - 1) read[__builtin_ctz(bits)] |= cols;
  }
  for (int R = 0; R < nb; R++) {
    unsigned bits = mask[R] | read[R];
    if (written) bits &= ~written[R];
    for (; bits; bits &= bits - 1)
      for (int i = 0; i < 6; i++) memset(A + (6 * R + i) * n + 6 * __builtin_ctz(bits), 0, 6 * sizeof(double));
  }
}

void khz_penaltyClearBlocks(double *At, int nb, const unsigned *mask, const unsigned *written) {
  clear_blocks(At, nb, mask, written);
}

void khz_penaltyMatvecBlocks(double *y, const double *At, const double *x, int nb, const unsigned *mask) {
  matvec_blocks(y, At, x, 6 * nb, mask);
}

/* h times the largest stiffness (sqrt of M^-1 K) and damping (M^-1 C) rates
 * of the pairs listed in pair (np of them) through the articulated
 * inertias: the response L of every moving body of the pairs to unit
 * impulses on each of them (6 articulated impulse responses per body), the
 * pairs' springs and dampers K, C on those bodies' velocities. The
 * automatic gains put every pair's damper at the same multiple of its
 * spring (kv = 2 zeta kp / omega, pair_gains_auto) and tree_springs is
 * linear in the gain, so then C = (kv / kp) K, L C = (kv / kp) L K, and the
 * damping rate is that multiple of the stiffness eigenvalue: the power
 * iteration on L C runs the same normalised iterates as the one on L K
 * (up to rounding), so C and its iteration are built only for a cluster
 * whose pairs' ratios differ. body (nb <= KHZ_TREE_BODIES) lists the
 * bodies, slot (nbody) maps a body to its place or -1; mat holds 3 n^2 +
 * KHZ_PENALTY_RATE_SCRATCH(nb)
 * doubles, n = 6 nb. need (nbody, all 0) is scratch: the responses go out
 * only to the listed bodies and their paths to the root
 * (khz_impulseResponseNeed: the same values there, O(path) per body instead
 * of O(tree)), and it is all 0 again on return. A body's six unit impulses
 * go out in one walk (khz_impulseResponseUnits: the six responses' bits);
 * u6 and dv6 (36 nbody each) are its scratch. */
static void tree_rates(const khzModel *m, khzData *d, const int *pair, int np, const int *body, int nb,
                       const int *slot, double *mat, double *u6, double *dv6, unsigned char *need, int keep,
                       double rate[2]) {
  int n = 6 * nb;
  double *L = mat, *K = L + n * n, *C = K + n * n, *x = C + n * n;
  double *warm = keep ? x + (size_t)(KHZ_RATE_STEPS + 5) * n : NULL;
  /* the blocks that can be nonzero: L's between bodies of one tree, K's
   * (and C's) between the bodies of a pair and on each; only those are
   * written (L) or summed (K, C), and the other blocks matvec_blocks reads
   * are cleared (clear_blocks), not the whole matrices */
  unsigned mk[KHZ_TREE_BODIES] = {0}, ml[KHZ_TREE_BODIES] = {0};
  for (int a = 0; a < nb; a++) {
    mk[a] = ml[a] = 0;
    for (int c = 0; c < nb; c++) ml[a] |= (unsigned)(m->body_root[body[c]] == m->body_root[body[a]]) << c;
  }
  for (int i = 0; i < np; i++) {
    const khzContact *c = d->contact + pair[i];
    for (int s = 0; s < 2; s++)
      for (int t = 0; t < 2; t++) {
        int bs = c->body[s], bt = c->body[t];
        if (bs > 0 && bt > 0 && slot[bs] >= 0 && slot[bt] >= 0) mk[slot[bs]] |= 1u << slot[bt];
      }
  }
  clear_blocks(K, nb, mk, NULL);
  clear_blocks(L, nb, ml, ml);
  /* body a's walk gives column block a; L is symmetric (a response matrix),
   * so block (c, a) for c >= a is mirrored to (a, c), and the diagonal
   * block's upper triangle to its lower: L exactly symmetric. Walk a reads
   * bodies c >= a only, so it goes out over their paths only: the walks run
   * from the last body to the first, each adding its body's path to need
   * (a body's response is its parent's plus its own joint's term, the same
   * bits whichever other paths are marked) */
  for (int a = nb - 1; a >= 0; a--) {
    for (int i = body[a]; i > 0 && !need[i]; i = m->body_parent[i]) need[i] = 1;
    khz_impulseResponseUnits(m, d, body[a], need, u6, dv6);
    for (int c = a; c < nb; c++) {
      if (m->body_root[body[c]] != m->body_root[body[a]]) continue;
      const double *blk = dv6 + 36 * body[c];
      if (c == a) {
        for (int i = 0; i < 6; i++)
          for (int j = i; j < 6; j++) L[(6 * c + i) * n + 6 * a + j] = L[(6 * a + j) * n + 6 * c + i] = blk[6 * i + j];
        continue;
      }
      /* block (c, a) row by row, its mirror (a, c) column by column */
      for (int i = 0; i < 6; i++) memcpy(L + (size_t)(6 * c + i) * n + 6 * a, blk + 6 * i, 6 * sizeof(double));
      for (int j = 0; j < 6; j++)
        for (int i = 0; i < 6; i++) L[(6 * a + j) * n + 6 * c + i] = blk[6 * i + j];
    }
  }
  for (int a = 0; a < nb; a++)
    for (int i = body[a]; i > 0 && need[i]; i = m->body_parent[i]) need[i] = 0;
  const khzContact *c0 = d->contact + pair[0];
  double ratio = c0->kp > 0 ? c0->kv / c0->kp : -1;
  int same = ratio >= 0;
  for (int i = 0; i < np; i++) {
    const khzContact *c = d->contact + pair[i];
    tree_springs(m, d, c, c->kp, slot, n, K);
    same &= fabs(c->kv - ratio * c->kp) <= 1e-12 * c->kv;
  }
  /* the stiffness rate from the Ritz vector its last call kept on these
   * bodies (d->rate_warm, 6 per body; zero where none), which gets this
   * call's (lanczos_rate) */
  /* a body without a kept vector (new to the clusters) makes the whole
   * start cold: its component on the other bodies may miss lambda1's mode */
  int whole = warm != NULL;
  for (int a = 0; a < nb && whole; a++) {
    const double *x = d->rate_warm + 6 * body[a];
    whole = x[0] != 0 || x[1] != 0 || x[2] != 0 || x[3] != 0 || x[4] != 0 || x[5] != 0;
  }
  for (int a = 0; warm && a < nb; a++) {
    if (whole) memcpy(warm + 6 * a, d->rate_warm + 6 * body[a], 6 * sizeof(double));
    else memset(warm + 6 * a, 0, 6 * sizeof(double));
  }
  double h = d->timestep, lam = largest_rate(L, K, nb, x, mk, ml, warm, NULL);
  if (warm)
    for (int a = 0; a < nb; a++) memcpy(d->rate_warm + 6 * body[a], warm + 6 * a, 6 * sizeof(double));
  rate[0] = h * sqrt(lam);
  if (same) {
    rate[1] = h * ratio * lam;
    return;
  }
  clear_blocks(C, nb, mk, NULL);
  for (int i = 0; i < np; i++) tree_springs(m, d, d->contact + pair[i], d->contact[pair[i]].kv, slot, n, C);
  rate[1] = h * largest_rate(L, C, nb, x, mk, ml, NULL, NULL);
}

/* each cluster's members in index order, from one pass over cl (n of them:
 * a member's cluster id, a body index, or -1): a list from head[id] through
 * next[], -1 at its end, so the first member i0 of a cluster has head[cl[i0]]
 * == i0. O(n + clusters), where a scan of every later member per cluster was
 * O(clusters x n) (as impulse.c's impacts, impulse26). */
static __attribute__((noinline)) void cluster_lists(const int *cl, int n, int *head, int *next) {
  for (int i = 0; i < n; i++)
    if (cl[i] >= 0) head[cl[i]] = -1;
  for (int i = n - 1; i >= 0; i--)
    if (cl[i] >= 0) next[i] = head[cl[i]], head[cl[i]] = i;
}

/* The stiffness and damping limits for pairs with automatic gains that
 * press a robot's links. A link's motion along a contact normal is not its
 * own mass's: a foot moves with the inertia of the leg and the robot behind
 * it through the joints, far more easily at a corner than at the centre of
 * mass, and a spring on the robot's whole mass there is far outside RK4's
 * region (the walker's foot went from 3e4 to 1.2e6 N/m in six steps as the
 * load it held grew, and the walker left the floor with 1.3e4 J). So the
 * rates are measured through the articulated inertias, as body_limits
 * measures a free body's through its rigid ones: the pairs coupled through
 * moving trees form a cluster, and h times the largest eigenvalue of
 * L K (L the cluster's bodies' articulated response, K its springs, tree_rates)
 * is held below the limit by one factor on the cluster's pairs. A cluster
 * of more than KHZ_TREE_BODIES bodies takes the sum of its pairs' rates,
 * each pair's taken alone (an upper bound: the largest eigenvalue of a sum
 * of positive semi-definite terms is at most the sum of theirs). sk and sv
 * (ncontact) receive the factors on kp and kv; the articulated inertias
 * must be valid at the current q. */
static void tree_limits(const khzModel *m, khzData *d, double *sk, double *sv) {
  int nc = d->ncontact, cap = tree_bodies(m), nmax = 6 * cap;
  size_t mark = khz_stackMark(d);
  int *parent = khz_stackAlloc(d, (size_t)m->nbody * sizeof(int));
  int *slot = khz_stackAlloc(d, (size_t)m->nbody * sizeof(int));
  int *cl = khz_stackAlloc(d, (size_t)nc * sizeof(int));
  int *mem = khz_stackAlloc(d, (size_t)nc * sizeof(int));
  int *next = khz_stackAlloc(d, (size_t)nc * sizeof(int));
  int *head = khz_stackAlloc(d, (size_t)m->nbody * sizeof(int));
  int *body = khz_stackAlloc(d, (size_t)cap * sizeof(int));
  double *mat = khz_stackAlloc(d, (3 * (size_t)nmax * nmax + KHZ_PENALTY_RATE_SCRATCH((size_t)cap)) * sizeof(double));
  unsigned char *need = khz_stackAlloc(d, (size_t)m->nbody); /* tree_rates */
  unsigned char *kept = khz_stackAlloc(d, (size_t)m->nbody); /* a Ritz vector kept this call */
  double *u6 = khz_stackAlloc(d, 36 * (size_t)m->nbody * sizeof(double));
  double *dv6 = khz_stackAlloc(d, 36 * (size_t)m->nbody * sizeof(double));
  if (!parent || !slot || !cl || !mem || !next || !head || !body || !mat || !need || !kept || !u6 || !dv6) {
    khz_stackFree(d, mark);
    return;
  }
  for (int b = 0; b < m->nbody; b++) parent[b] = b, slot[b] = -1, need[b] = 0, kept[b] = 0;
  size_t used = 0, room = khz_penaltyTreeRespDoubles(m);
  for (int b = 0; b < m->nbody; b++) d->tree_resp_at[3 * b] = -1;
  d->tree_resp_valid = 1;
  for (int i = 0; i < nc; i++) {
    const khzContact *c = d->contact + i;
    int r0 = khz_movingTree(m, c, 0), r1 = khz_movingTree(m, c, 1);
    if (pair_on_tree(m, c) && r0 >= 0 && r1 >= 0) parent[khz_clusterFind(parent, r0)] = khz_clusterFind(parent, r1);
  }
  for (int i = 0; i < nc; i++) {
    const khzContact *c = d->contact + i;
    int r = khz_movingTree(m, c, 0) >= 0 ? khz_movingTree(m, c, 0) : khz_movingTree(m, c, 1);
    cl[i] = pair_on_tree(m, c) && r >= 0 ? khz_clusterFind(parent, r) : -1;
  }
  cluster_lists(cl, nc, head, next);
  for (int i0 = 0; i0 < nc; i0++) { /* each cluster, in the order of its first pair */
    if (cl[i0] < 0 || head[cl[i0]] != i0) continue;
    int np = 0, nb = 0, over = 0;
    for (int i = i0; i >= 0; i = next[i]) { /* the cluster's pairs and moving bodies */
      mem[np++] = i;
      for (int s = 0; s < 2; s++) {
        int b = d->contact[i].body[s];
        if (b <= 0 || khz_bodyStatic(m, b) || slot[b] >= 0) continue;
        if (nb < cap) slot[b] = nb, body[nb] = b;
        over |= nb == cap, nb += nb < cap;
      }
    }
    double rate[2] = {0, 0};
    if (!over) {
      tree_rates(m, d, mem, np, body, nb, slot, mat, u6, dv6, need, KHZ_RATE_WARM, rate);
      for (int a = 0; a < nb; a++) kept[body[a]] = 1;
      /* L kept for the implicit rows' W (delassus_kept): its blocks within
       * one tree hold, the others are left as they were */
      size_t n2 = 36 * (size_t)nb * nb;
      if (used + n2 <= room) {
        memcpy(d->tree_resp + used, mat, n2 * sizeof(double));
        for (int a = 0; a < nb; a++) {
          int *at = d->tree_resp_at + 3 * body[a];
          at[0] = (int)used, at[1] = a, at[2] = nb;
        }
        used += n2;
      }
    } else { /* too many bodies: pair by pair, summed */
      for (int a = 0; a < nb; a++) slot[body[a]] = -1;
      for (int p = 0; p < np; p++) {
        const khzContact *c = d->contact + mem[p];
        int n2 = 0;
        for (int s = 0; s < 2; s++)
          if (c->body[s] > 0 && !khz_bodyStatic(m, c->body[s]) && slot[c->body[s]] < 0)
            slot[c->body[s]] = n2, body[n2++] = c->body[s];
        double r[2];
        tree_rates(m, d, mem + p, 1, body, n2, slot, mat, u6, dv6, need, 0, r);
        for (int a = 0; a < n2; a++) slot[body[a]] = -1;
        /* stiffness rates add as squares (h^2 eig), damping rates as they are */
        rate[0] = sqrt(rate[0] * rate[0] + r[0] * r[0]), rate[1] += r[1];
      }
      nb = 0;
    }
    for (int a = 0; a < nb; a++) slot[body[a]] = -1;
    double fk = rate[0] > KHZ_STIFFNESS_LIMIT ? pow(KHZ_STIFFNESS_LIMIT / rate[0], 2) : 1;
    double fv = rate[1] > KHZ_DAMPING_LIMIT ? KHZ_DAMPING_LIMIT / rate[1] : 1;
    for (int p = 0; p < np; p++) sk[mem[p]] = fk, sv[mem[p]] = fv;
  }
  /* a body in no cluster of this call keeps no Ritz vector: a cluster
   * that forms again later starts cold on it */
  for (int b = 0; b < m->nbody; b++)
    if (!kept[b]) memset(d->rate_warm + 6 * b, 0, 6 * sizeof(double));
  khz_stackFree(d, mark);
}

void khz_penaltyLimits(const khzModel *m, khzData *d, double *dqd) {
  d->tree_resp_valid = 0; /* tree_limits keeps this step's */
  for (int i = 0; i < d->ncontact; i++) {
    khzContact *c = d->contact + i;
    c->kp_implicit = c->kv_implicit = 0;
    memset(c->force_implicit, 0, sizeof c->force_implicit);
  }
  /* the awake pairs' points only: a sleeping pair's (listed in front of
   * d->contact, khz_collide) keep the forces they had when it fell asleep */
  for (int i = 0; i < d->ncontact; i++) {
    khzContactPoint *pts = d->cpoint + d->contact[i].point_adr;
    for (int k = 0; k < d->contact[i].npoint; k++) pts[k].force_implicit = 0;
  }
  size_t mark = khz_stackMark(d);
  double *C = khz_stackAlloc(d, 36 * (size_t)m->nbody * sizeof(double));
  double *scale = khz_stackAlloc(d, (size_t)m->nbody * sizeof(double));
  double *Iinv = khz_stackAlloc(d, 18 * (size_t)m->nbody * sizeof(double));
  int *cached = khz_stackAlloc(d, (size_t)m->nbody * sizeof(int));
  double *sk = khz_stackAlloc(d, (size_t)d->ncontact * sizeof(double));
  double *sv = khz_stackAlloc(d, (size_t)d->ncontact * sizeof(double));
  if (!C || !scale || !Iinv || !cached || !sk || !sv) {
    khz_stackFree(d, mark);
    return;
  }
  /* pairs on robots' links: the factors through the articulated inertias */
  for (int i = 0; i < d->ncontact; i++) sk[i] = sv[i] = 1;
  if (dqd && khz_penaltyTreeLimits(m, d)) tree_limits(m, d, sk, sv);
  /* automatic gains: the stiffness beyond the limit goes to the implicit
   * part; the spring's offset takes up a rise in the pair's whole stiffness
   * so that the force of the deepest point does not jump */
  int any_auto = 0;
  for (int i = 0; i < d->ncontact && !any_auto; i++) any_auto = auto_gains(m, d->contact + i);
  memset(cached, 0, (size_t)m->nbody * sizeof(int));
  if (any_auto) body_limits(m, d, 1, KHZ_STIFFNESS_LIMIT, C, scale, Iinv, cached);
  for (int i = 0; i < d->ncontact && any_auto; i++) {
    khzContact *c = d->contact + i;
    if (!auto_gains(m, c)) continue;
    double sc = fmin(pair_scale(c, scale), sk[i]);
    khzPairState *ps = d->pair + c->slot;
    c->kp_implicit = (1 - sc) * c->kp;
    double dmax = c->npoint ? d->cpoint[c->deepest].depth : 0;
    if (ps->kp > 0 && c->kp > ps->kp && dmax > ps->offset)
      ps->offset = dmax - ps->kp / c->kp * (dmax - ps->offset);
    ps->kp = c->kp;
    c->kp *= sc, c->ki *= sc;
  }
  body_limits(m, d, 0, damping_limit(m), C, scale, Iinv, cached);
  for (int i = 0; i < d->ncontact; i++) {
    khzContact *c = d->contact + i;
    double kv = c->kv * fmin(pair_scale(c, scale), sv[i]);
    c->kv_implicit = auto_gains(m, c) ? c->kv - kv : 0;
    c->kv = kv;
  }
  khz_stackFree(d, mark);
}

/* the rows of one resting pair with an implicit part: a normal row per
 * bottom point (x, depth and weight from pair_forces), and two tangential
 * rows at their centroid. Returns the rows added. */
static int pair_rows(const khzModel *m, khzData *d, int i, implicit_row *row) {
  khzContact *c = d->contact + i;
  int n = 0;
  pair_forces(m, d, c, 0, NULL, NULL, row, &n);
  double x[3] = {0, 0, 0};
  for (int j = 0; j < n; j++) {
    row[j].contact = i;
    memcpy(row[j].dir, c->normal, sizeof row[j].dir);
    khzu_addScl3(x, x, row[j].x, 1.0 / n);
  }
  if (!n) return 0;
  memcpy(c->implicit_at, x, sizeof x);
  double t[2][3];
  khzu_orthogonal(t[0], c->normal);
  khzu_cross(t[1], c->normal, t[0]);
  for (int k = 0; k < 2; k++) {
    implicit_row *r = row + n++;
    r->contact = i, r->point = -1, r->depth = 0, r->w = 0, r->fn = 0, r->tie = 0;
    memcpy(r->x, x, sizeof x);
    memcpy(r->dir, t[k], sizeof r->dir);
  }
  return n;
}

/* The friction impulse of a sliding pair's two tangential rows (A2: their
 * symmetric 2 x 2 block [a00, a01, a11], b2 their right-hand side with the
 * other rows' impulses held): the P in the disc |P| <= lim that minimises
 * 1/2 P^T A P - P^T b, the rows' kinetic energy plus their dampers' work.
 * On the disc's edge that is (A + lambda I) P = b with lambda >= 0: the
 * rows' residual b - A P, their end velocity with its sign turned (W P - rhs
 * less the dampers' share), is lambda P, the slip opposite to the impulse:
 * maximal dissipation, Coulomb's sliding friction against the slip. Scaling
 * the unbounded solution A^-1 b back onto the disc instead braked a box
 * sliding on one corner (the deepest-point method) up to 25 degrees off its
 * slip: the corner's block couples the two tangents through the box's
 * rotation. Under the deepest-point method only: under the multi-point
 * method (tried) a box sliding at 2.5 m/s with mu 0.6, turned 0.3 rad,
 * stopped at 1.009 of v0^2 / (2 mu g) instead of 1.036, but Menagerie's Go1
 * falling onto the floor then left an impact cluster unconverged
 * (tests/validation/test_robots_floor.c) and Gymnasium's humanoid went
 * 4.4 mm deep instead of 2.1 mm. lambda by Newton's method on the secular equation
 * 1 / |P(lambda)| = 1 / lim (More & Sorensen, "Computing a trust region
 * step", 1983), in the eigenbasis of A; from lambda = 0 it rises
 * monotonically to the root. */
static void disc_dissipation(const double A2[3], const double b2[2], double lim, double P[2]) {
  P[0] = P[1] = 0;
  if (!(lim > 0)) return;
  /* eigenvalues e and unit eigenvectors (columns of [u0 -u1; u1 u0]) */
  double half = 0.5 * (A2[0] + A2[2]), dif = 0.5 * (A2[0] - A2[2]), rad = hypot(dif, A2[1]);
  double e[2] = {half + rad, half - rad}, u0 = 1, u1 = 0;
  if (rad > 0) { /* the eigenvector of e[0], (A - e0 I) u = 0: (dif + rad, a01) or (a01, rad - dif) */
    double x = dif + rad, y = A2[1];
    if (dif < 0) x = A2[1], y = rad - dif;
    double nu = hypot(x, y);
    u0 = x / nu, u1 = y / nu;
  }
  double g[2] = {u0 * b2[0] + u1 * b2[1], -u1 * b2[0] + u0 * b2[1]}, lam = 0;
  if (!(e[1] > 0)) return;
  for (int it = 0; it < 50; it++) {
    double s2 = 0, s3 = 0;
    for (int j = 0; j < 2; j++) {
      double r = g[j] / (e[j] + lam);
      s2 += r * r, s3 += r * r / (e[j] + lam);
    }
    double norm = sqrt(s2);
    if (!(norm > lim) || !(s3 > 0)) break; /* inside the disc (it == 0: the unbounded solution) */
    double step = (norm / lim - 1) * s2 / s3;
    lam += step;
    if (!(step > 1e-14 * lam)) break;
  }
  double p0 = g[0] / (e[0] + lam), p1 = g[1] / (e[1] + lam);
  P[0] = u0 * p0 - u1 * p1, P[1] = u1 * p0 + u0 * p1;
  double norm = hypot(P[0], P[1]); /* round-off past the edge */
  if (norm > lim) P[0] *= lim / norm, P[1] *= lim / norm;
}

void khz_discDissipation(const double A2[3], const double b2[2], double lim, double P[2]) {
  disc_dissipation(A2, b2, lim, P);
}

/* the largest cluster (rows) and the most tangential pairs in it that
 * solve_joint takes; larger clusters keep the pair-by-pair scaling */
#define KHZ_JOINT_ROWS 32
#define KHZ_JOINT_PAIRS 10
/* the joint solve's passes: the discs' radii follow the normal impulses */
#define KHZ_JOINT_PASSES 40

/* 1 if contacts c and o share a free rigid body (a moving body that is
 * not a robot's link) */
static int share_free_body(const khzModel *m, const khzContact *c, const khzContact *o) {
  for (int s = 0; s < 2; s++) {
    int b = c->body[s];
    if (b > 0 && khz_bodyFree(m, b) && (o->body[0] == b || o->body[1] == b)) return 1;
  }
  return 0;
}

/* P(lambda) = (A_FF + Lambda)^-1 b for discs_solve (F: the factor of
 * A_FF + Lambda, out) and the dual function there,
 * q = -1/2 b^T P - 1/2 sum_i lambda_i lim_i^2. Returns 0, or -1 when the
 * factorisation fails. */
static int discs_eval(const double *A, int k, const int *fl, int nf, const double *b, const int *dt,
                      const double *lim, int g, const double *lam, double *P, double *F, double *q) {
  for (int r = 0; r < nf; r++)
    for (int c = 0; c < nf; c++) F[r * nf + c] = A[fl[r] * k + fl[c]];
  for (int i = 0; i < g; i++) F[dt[i] * nf + dt[i]] += lam[i], F[(dt[i] + 1) * nf + dt[i] + 1] += lam[i];
  if (khzu_cholFactor(F, nf) != 0) return -1;
  memcpy(P, b, (size_t)nf * sizeof(double));
  khzu_cholSolve(F, nf, P);
  double v = 0;
  for (int r = 0; r < nf; r++) v -= 0.5 * b[r] * P[r];
  for (int i = 0; i < g; i++) v -= 0.5 * lam[i] * lim[i] * lim[i];
  *q = v;
  return 0;
}

/* The rows fl[0..nf) of a cluster solved with g friction discs at once:
 * the P_F that minimises 1/2 P^T A P - P^T rhs with the other rows held
 * (b: rhs less the held rows' part, packed) and each disc's two rows
 * (positions dt[i], dt[i] + 1 in fl) within |P_i| <= lim_i (lim_i > 0).
 * Its conditions are (A_FF + Lambda) P_F = b, Lambda = lambda_i on disc
 * i's two rows, lambda_i >= 0 and zero unless P_i lies on the disc's
 * edge: Coulomb's maximal dissipation over all the discs together. The
 * problem is convex with a strictly feasible point (P_i = 0), so lambda
 * maximises the concave dual q(lambda) = min_P L(P, lambda) =
 * -1/2 b^T P(lambda) - 1/2 sum lambda_i lim_i^2 over lambda >= 0 (Boyd &
 * Vandenberghe, Convex Optimization, 2004, 5.2), whose gradient is
 * (|P_i|^2 - lim_i^2) / 2 and whose Hessian is -H, H_ij = P_i^T M_ij P_j,
 * M = (A_FF + Lambda)^-1: Bertsekas' projected Newton method (1982) with
 * an Armijo search along the projection arc, which rises at every step
 * and converges to the maximiser. Session 13's version took Newton steps
 * on the secular equations 1 / |P_i| = 1 / lim_i with no search, and could
 * stop with a disc's residual 2.6 times the rows' right-hand side (seed 1,
 * 55). F (nf x nf) and y (nf) scratch; P (packed, nf) and lam (g) out. */
static int discs_solve(const double *A, int k, const int *fl, int nf, const double *b, const int *dt,
                       const double *lim, int g, double *P, double *lam, double *F, double *y) {
  double H[KHZ_JOINT_PAIRS * KHZ_JOINT_PAIRS], dl[KHZ_JOINT_PAIRS], grad[KHZ_JOINT_PAIRS];
  double ln[KHZ_JOINT_PAIRS], Pn[KHZ_JOINT_ROWS], q;
  int act[KHZ_JOINT_PAIRS];
  for (int i = 0; i < g; i++) lam[i] = 0;
  if (discs_eval(A, k, fl, nf, b, dt, lim, g, lam, P, F, &q) != 0) return -1;
  for (int it = 0; it < 60; it++) {
    int na = 0, done = 1;
    for (int i = 0; i < g; i++) {
      double n2 = P[dt[i]] * P[dt[i]] + P[dt[i] + 1] * P[dt[i] + 1], l2 = lim[i] * lim[i];
      grad[i] = 0.5 * (n2 - l2);
      if (lam[i] > 0 || n2 > l2) act[na++] = i; /* the others stay at 0 (inside their disc) */
      if (lam[i] > 0 ? fabs(n2 - l2) > 2e-10 * l2 : n2 > l2 * (1 + 2e-10)) done = 0;
    }
    if (done) return 0;
    for (int a = 0; a < na; a++) { /* H's column a: M E_j P_j */
      int j = act[a];
      memset(y, 0, (size_t)nf * sizeof(double));
      y[dt[j]] = P[dt[j]], y[dt[j] + 1] = P[dt[j] + 1];
      khzu_cholSolve(F, nf, y);
      for (int p = 0; p < na; p++) {
        int i = dt[act[p]];
        H[p * na + a] = P[i] * y[i] + P[i + 1] * y[i + 1];
      }
    }
    for (int p = 0; p < na; p++) {
      dl[p] = grad[act[p]];
      for (int a = 0; a < p; a++) H[p * na + a] = H[a * na + p] = 0.5 * (H[p * na + a] + H[a * na + p]);
    }
    if (khzu_cholFactor(H, na) == 0) {
      khzu_cholSolve(H, na, dl); /* the Newton step: H dlambda = grad q */
    } else { /* a gradient step, scaled by the diagonal */
      for (int p = 0; p < na; p++) dl[p] = grad[act[p]] / fmax(H[p * na + p], 1e-300);
    }
    int ok = 0;
    double qn = q;
    for (double t = 1; t > 1e-12 && !ok; t *= 0.5) {
      double rise = 0;
      memcpy(ln, lam, (size_t)g * sizeof(double));
      for (int p = 0; p < na; p++) {
        int i = act[p];
        ln[i] = fmax(lam[i] + t * dl[p], 0);
        rise += grad[i] * (ln[i] - lam[i]);
      }
      if (!(rise > 0)) break;
      if (discs_eval(A, k, fl, nf, b, dt, lim, g, ln, Pn, F, &qn) != 0) return -1;
      ok = qn >= q + 1e-4 * rise;
    }
    if (!ok) { /* no rise left at round-off: the last evaluated factor is restored */
      if (discs_eval(A, k, fl, nf, b, dt, lim, g, lam, P, F, &q) != 0) return -1;
      return 0;
    }
    memcpy(lam, ln, (size_t)g * sizeof(double));
    memcpy(P, Pn, (size_t)nf * sizeof(double));
    q = qn;
  }
  return 0;
}

/* the normal impulse of the pair of the disc whose first tangential row
 * is a (pair_rows: a pair's normal rows lie just before its two
 * tangential rows, all consecutive in a cluster) */
static double joint_normal(const implicit_row *row, const int *mem, int a, const double *P) {
  double pn = 0;
  for (int q = a - 1; q >= 0 && row[mem[q]].contact == row[mem[a]].contact; q--)
    if (row[mem[q]].point >= 0) pn += P[q];
  return pn;
}

/* The cluster's quadratic with the discs' radii held: the P that
 * minimises 1/2 P^T A P - P^T rhs over P_n >= lo (normal rows) and
 * |P_i| <= lim_i (disc i's two tangential rows), a strictly convex problem
 * (A positive definite, the constraints convex), by a primal active set
 * over the normal rows (Nocedal & Wright, Numerical Optimization, 2006,
 * alg. 16.3) whose subproblem holds the discs exactly: the rows not held
 * at their bound solved with every disc at once (discs_solve); a step
 * toward that minimiser stops at the first normal row it would take past
 * its bound, which is held (the step is feasible for the discs too, both
 * ends lying in them); at the minimiser, a held row whose residual
 * (A P - rhs)_a is negative (the objective falls as it rises: its
 * multiplier is negative, the row would pull apart less than its bound
 * allows) is released. The objective falls at every step, so no set of
 * held rows comes back and it ends at the minimum, where the conditions
 * hold: each normal row at its bound with a residual >= 0 or free with
 * residual 0 (complementarity), each disc's friction inside with residual
 * 0 or on its edge against its residual (maximal dissipation). P (k) in: a
 * point inside every bound; out: the minimiser. hold (k) in/out: the
 * normal rows held; a disc of radius 0 holds its rows at 0. lam (g) out:
 * the discs' multipliers. Returns 0, or -1 (a factorisation failed, or
 * KHZ_JOINT_STEPS steps ran out). */
#define KHZ_JOINT_STEPS 100
static int joint_qp(const implicit_row *row, const int *mem, int k, const double *A, const double *rhs,
                    const double *lo, const int *tp, const double *lim, int g, double *P, int *hold,
                    double *lam, double *F, double *y) {
  int fl[KHZ_JOINT_ROWS], dt[KHZ_JOINT_PAIRS], fixt[KHZ_JOINT_ROWS] = {0};
  double b[KHZ_JOINT_ROWS], PF[KHZ_JOINT_ROWS], scale = 0;
  int released = -1;
  for (int i = 0; i < g; i++)
    if (!(lim[i] > 0)) fixt[tp[i]] = fixt[tp[i] + 1] = 1, P[tp[i]] = P[tp[i] + 1] = 0;
  for (int a = 0; a < k; a++) scale = fmax(scale, fabs(rhs[a]));
  double tol = 1e-9 * scale;
  for (int step = 0; step < KHZ_JOINT_STEPS; step++) {
    int nf = 0, gf = 0;
    for (int a = 0; a < k; a++)
      if (!hold[a] && !fixt[a]) fl[nf++] = a;
    double limf[KHZ_JOINT_PAIRS];
    for (int i = 0, f = 0; i < g; i++) { /* the discs of radius > 0: their rows in fl */
      if (fixt[tp[i]]) continue;
      while (fl[f] != tp[i]) f++;
      dt[gf] = f, limf[gf++] = lim[i];
    }
    for (int f = 0; f < nf; f++) {
      double v = rhs[fl[f]];
      for (int a = 0; a < k; a++)
        if (hold[a] || fixt[a]) v -= A[fl[f] * k + a] * P[a];
      b[f] = v;
    }
    double lf[KHZ_JOINT_PAIRS];
    if (nf && discs_solve(A, k, fl, nf, b, dt, limf, gf, PF, lf, F, y) != 0) return -1;
    for (int i = 0, q = 0; i < g; i++) lam[i] = fixt[tp[i]] ? 0 : lf[q++];
    /* the step toward the minimiser: its length stops at the first normal
     * row that would pass its bound */
    double alpha = 1;
    int block = -1;
    for (int f = 0; f < nf; f++) {
      int a = fl[f];
      if (row[mem[a]].point < 0 || !(PF[f] < lo[a])) continue;
      double t = P[a] > lo[a] ? (P[a] - lo[a]) / (P[a] - PF[f]) : 0;
      if (t < alpha) alpha = t, block = a;
    }
    for (int f = 0; f < nf; f++) P[fl[f]] += alpha * (PF[f] - P[fl[f]]);
    if (block >= 0 && block == released && alpha == 0) {
      /* the row just released would be taken past its bound at once: the
       * discs turned active or inactive with it (a row released from a
       * face whose constraints are linear leaves its bound; Nocedal &
       * Wright, thm. 16.5). It alone moves to the minimum along itself,
       * -r_a / A_aa above its bound, which lowers the objective and stays
       * inside every bound, and the search goes on from there */
      double r = -rhs[block];
      for (int c = 0; c < k; c++) r += A[block * k + c] * P[c];
      P[block] = lo[block] - r / A[block * k + block], released = -1;
      continue;
    }
    if (block >= 0) {
      P[block] = lo[block], hold[block] = 1, released = -1;
      continue;
    }
    /* at the minimiser: release the held row of the most negative residual */
    int rel = -1;
    double worst = -tol;
    for (int a = 0; a < k; a++) {
      if (!hold[a]) continue;
      double r = -rhs[a];
      for (int c = 0; c < k; c++) r += A[a * k + c] * P[c];
      if (r < worst) worst = r, rel = a;
    }
    if (rel < 0) return 0;
    hold[rel] = 0, released = rel;
  }
  return -1;
}

/* A cluster whose sliding pairs share a free body, solved with all its
 * friction discs at once (the multi-point method). A light body between
 * two sliding pairs took the difference of their impulses, each scaled
 * onto its own disc: a 19 g capsule pinched between the ground and 46 kg
 * (bench/untuned_random.py seed 2, 4) was left 1.5 kN by its pairs'
 * friction and went non-finite. Here the whole cluster is one problem:
 * with the discs' radii held, the convex quadratic of joint_qp (normal
 * rows that reach their bound are held and released again by their
 * multipliers' signs, every disc at once); the radii then follow the
 * normal impulses, lim_i = mu_i max(P_n,i, 0), a fixed point taken to
 * 1e-9 of the largest radius (relaxed by half after KHZ_JOINT_PASSES / 2
 * passes, which leaves its fixed points where they were). A solve whose
 * radii have not settled after KHZ_JOINT_PASSES passes keeps its last
 * pass: the minimiser of that pass's convex quadratic (P = 0 is feasible,
 * so the impulses take energy out), each disc's friction within the radius
 * that pass held (Coulomb's cone off by the radii's last move, not scaled
 * onto the disc of the final normal impulse: a light body between two
 * pairs would keep the difference of the two scalings). It was not used
 * before (-1, pair by pair): test_contact_defaults case w's 11.9 g prism
 * took the pairs' separately scaled friction, 227 N, at a step whose radii
 * had moved by 2.4e-8 of the largest at the 40th pass (tolerance 1e-9),
 * and gained 3.5 J in one step; which side of the tolerance a run landed
 * on was the rounding's (free26c's closed form, or ABA's qdd_z one ulp up,
 * gained 7.98 J and 2.81 J). Session 13's version held a normal row
 * that reached its bound for good and solved the rest without it: seed 1,
 * 55 ended with a held row approaching at 23 m/s and gained 67 J. All
 * values packed (k of them, k <= KHZ_JOINT_ROWS); L (k x k), sol (k)
 * scratch; fixed (k) out: the normal rows held at their bound, the
 * tangential rows on their disc's edge. Returns 0, or -1. */
static int solve_joint(const khzData *d, const implicit_row *row, const int *mem, int k, const double *A,
                       const double *rhs, const double *lo, double *P, int *fixed, double *L, double *sol) {
  int tp[KHZ_JOINT_PAIRS], hold[KHZ_JOINT_ROWS], g = 0;
  double lim[KHZ_JOINT_PAIRS], lam[KHZ_JOINT_PAIRS], used[KHZ_JOINT_PAIRS];
  for (int a = 0; a < k; a++) { /* the discs' first rows */
    const implicit_row *r = row + mem[a], *before = a > 0 ? row + mem[a - 1] : NULL;
    if (r->point < 0 && a + 1 < k && (!before || before->point >= 0 || before->contact != r->contact)) {
      if (g == KHZ_JOINT_PAIRS) return -1;
      tp[g++] = a;
    }
  }
  /* the start: the normal rows inside their bounds, the radii theirs, the
   * friction inside its discs */
  for (int a = 0; a < k; a++) {
    hold[a] = row[mem[a]].point >= 0 && !(P[a] > lo[a]);
    if (hold[a]) P[a] = lo[a];
  }
  for (int i = 0; i < g; i++) lim[i] = d->contact[row[mem[tp[i]]].contact].mu * fmax(joint_normal(row, mem, tp[i], P), 0);
  int settled = 0, pass = 0;
  for (; pass < KHZ_JOINT_PASSES && !settled; pass++) {
    for (int i = 0; i < g; i++) { /* the friction inside the discs of this pass */
      double pt = hypot(P[tp[i]], P[tp[i] + 1]);
      if (pt > lim[i]) {
        double sc = pt > 0 ? lim[i] / pt : 0;
        P[tp[i]] *= sc, P[tp[i] + 1] *= sc;
      }
    }
    memcpy(used, lim, (size_t)g * sizeof(double)); /* the radii this pass holds */
    if (joint_qp(row, mem, k, A, rhs, lo, tp, lim, g, P, hold, lam, L, sol) != 0) return -1;
    double moved = 0, lmax = 0, relax = pass < KHZ_JOINT_PASSES / 2 ? 1 : 0.5;
    for (int i = 0; i < g; i++) { /* the radii at the new normal impulses */
      double l = d->contact[row[mem[tp[i]]].contact].mu * fmax(joint_normal(row, mem, tp[i], P), 0);
      moved = fmax(moved, fabs(l - lim[i])), lmax = fmax(lmax, fmax(l, lim[i]));
      lim[i] += relax * (l - lim[i]);
    }
    settled = !(moved > 1e-9 * lmax);
  }
  for (int a = 0; a < k; a++) fixed[a] = hold[a];
  for (int i = 0; i < g; i++) { /* each pair's friction inside the disc of its final normal impulse
                                  * (not settled: the radius its last pass held) */
    double l = settled ? d->contact[row[mem[tp[i]]].contact].mu * fmax(joint_normal(row, mem, tp[i], P), 0) : used[i];
    double pt = hypot(P[tp[i]], P[tp[i] + 1]);
    if (!(pt <= l)) {
      double sc = pt > 0 ? l / pt : 0;
      P[tp[i]] *= sc, P[tp[i] + 1] *= sc;
    }
    fixed[tp[i]] = fixed[tp[i] + 1] = lam[i] > 0 || !(pt < l * (1 - 1e-9));
  }
  return 0;
}

/* Solves A P = rhs for one cluster of k rows (A k x k: the rows' Delassus
 * matrix plus the rows' diagonal, symmetric positive definite) with the
 * unilateral and friction bounds: a normal row's P no lower than lo; a pair's
 * two tangential rows within the disc of radius mu times the pair's normal
 * impulse. Rows past a bound are held there and the others solved again (an
 * active set, at most k passes, and the passes below). L (k x k) and sol,
 * fixed (k) are scratch. rhs, lo and P are read through mem (the rows'
 * indices), or with local = 1 as k consecutive values. Lfull (may be NULL):
 * A's Cholesky factor, for the first pass. Returns 0, or -1 when a
 * factorisation fails.
 *
 * Under the deepest-point method a sliding pair's disc impulse and its normal
 * impulse are passed back and forth until they agree (at most KHZ_DISC_PASSES
 * more passes, to KHZ_DISC_TOL of the disc's radius). The first pass solves
 * the rows with the tangential ones sticking and puts the friction on the
 * disc of that pass's normal impulse; the second solved the normal rows again
 * with that friction held, moved the friction onto the disc of the new normal
 * impulse, and stopped there, so the normal impulse was solved against a
 * friction impulse that the pair did not get. At a box's corner the friction
 * turns the box about the tangent through the corner and pushes (front) or
 * lifts (back) the corner along the normal (the rows' A_nt), so the
 * difference moves the corner: a box sliding at 2 m/s with mu 0.6 took up to
 * 7 times its weight's impulse at a corner already leaving the ground at 0.17
 * m/s, the implicit normal force did +0.056 J on its rocking and height over
 * the slide, and the box hopped (140 of 335 steps without contact force),
 * turned about the normal at up to 1.4 rad/s, and its corner's friction,
 * against the corner's slip, braked it at 0.993 of mu N along the slide: it
 * stopped at 1.006 of v0^2 / (2 mu g) (docs/contact.md, friction). The passes
 * are a fixed point with rate about mu |A_nt| / A_nn (0.2 at a box's corner
 * with mu 0.6); where they do not settle, or stop contracting, the last
 * pass's disc impulse, inside the disc of the last normal impulse, is kept. */
#define KHZ_DISC_PASSES 40
#define KHZ_DISC_TOL 1e-9
typedef khzFactorsKept factor_cache;

/* sol (nf) = the free rows' block of A (k x k) solved for sol, the free
 * rows fl (nf of them) those that fixed (k flags) does not hold. The
 * factor of that block is the same numbers whenever the same rows are held
 * (A does not change while fc is kept), so it is read from fc when one of
 * its kept factors held the same rows, and made otherwise (into fc's
 * oldest, which it replaces; into L when fc is NULL). Returns 1 when it
 * factored, 0 when it read a kept factor, -1 when the factor failed. */
static inline __attribute__((always_inline)) int held_solve(const double *A, int k, const int *fixed,
                                                             const int *fl, int nf, double *sol, double *L,
                                                             factor_cache *fc) {
  for (int e = 0; fc && e < KHZ_FACTORS_KEPT; e++)
    if (fc->valid[e] && !memcmp(fc->held[e], fixed, (size_t)k * sizeof(int))) {
      if (nf) khzu_cholSolve(fc->L[e], nf, sol);
      return 0;
    }
  double *Lp = L;
  int e = -1;
  if (fc) e = fc->oldest, fc->oldest = (e + 1) % KHZ_FACTORS_KEPT, fc->valid[e] = 0, Lp = fc->L[e];
  for (int i = 0; i < nf; i++)
    for (int t = 0; t < nf; t++) Lp[i * nf + t] = A[fl[i] * k + fl[t]];
  if (nf && khzu_cholFactor(Lp, nf) != 0) return -1;
  if (fc) memcpy(fc->held[e], fixed, (size_t)k * sizeof(int)), fc->valid[e] = 1;
  if (nf) khzu_cholSolve(Lp, nf, sol);
  return 1;
}

int khz_penaltyHeldSolve(const double *A, int k, const int *fixed, double *sol, double *L, khzFactorsKept *fc) {
  int fl[KHZ_IMPLICIT_DIRECT], nf = 0;
  if (k > KHZ_IMPLICIT_DIRECT) return -1;
  for (int a = 0; a < k; a++)
    if (!fixed[a]) fl[nf++] = a;
  return held_solve(A, k, fixed, fl, nf, sol, L, fc);
}

static inline __attribute__((always_inline)) int solve_rows_with(const khzModel *m, const khzData *d,
                                                                  const implicit_row *row,
                                                                  const int *mem, int k, const double *A,
                                                                  const double *rhs, const double *lo, double *P,
                                                                  double *L, double *sol, int *fixed, int local,
                                                                  const double *Lfull, factor_cache *fc,
                                                                  double *sol0, int *sol0_kept) {
#define IX(a) (local ? (a) : mem[a])
  /* the free and the held rows of a pass, each in increasing order: the
   * loops below visit them as the scans of all k rows with a test did
   * (the same sums in the same order), in O(free x held) */
  int fl[KHZ_IMPLICIT_DIRECT], xl[KHZ_IMPLICIT_DIRECT];
  double Px[KHZ_IMPLICIT_DIRECT]; /* the held rows' impulses, packed as xl */
  if (k > KHZ_IMPLICIT_DIRECT) return -1; /* the callers' bound (solve_blocks' kd) */
  for (int a = 0; a < k; a++) fixed[a] = 0;
  int passes = k + (d->contact_method == KHZ_CONTACT_DEEPEST ? KHZ_DISC_PASSES : 0);
  double moved_before = INFINITY; /* the largest move of a disc impulse at the pass before */
  for (int pass = 0; pass <= passes; pass++) {
    int nf = 0, nx = 0, again = 0;
    double moved = 0;
    for (int a = 0; a < k; a++) {
      if (fixed[a]) Px[nx] = P[IX(a)], xl[nx++] = a;
      else fl[nf++] = a;
    }
    for (int i = 0; i < nf; i++) { /* the free rows' right-hand sides, packed */
      int a = fl[i];
      double r = rhs[IX(a)];
      for (int t = 0; t < nx; t++) r -= A[a * k + xl[t]] * Px[t];
      sol[i] = r;
    }
    if (pass == 0 && Lfull) { /* no row held yet: A's factor, given */
      /* rhs alone: the same solution at every call with the same rhs,
       * kept in sol0 after the first (sol0 NULL: none kept) */
      if (sol0 && *sol0_kept) memcpy(sol, sol0, (size_t)k * sizeof(double));
      else khzu_cholSolve(Lfull, k, sol);
      if (sol0 && !*sol0_kept) memcpy(sol0, sol, (size_t)k * sizeof(double)), *sol0_kept = 1;
    } else if (held_solve(A, k, fixed, fl, nf, sol, L, fc) < 0) {
      return -1;
    }
    for (int i = 0; i < nf; i++) P[IX(fl[i])] = sol[i];
    int changed = 0;
    for (int a = 0; a < k; a++) { /* normal rows: no pull past lo */
      const implicit_row *r = row + mem[a];
      if (r->point >= 0 && !fixed[a] && P[IX(a)] < lo[IX(a)])
        P[IX(a)] = lo[IX(a)], fixed[a] = 1, changed = 1;
    }
    /* tangential pairs of rows: the friction disc of the pair's normal
     * impulse as solved now (rows held at the disc follow it) */
    for (int a = 0; a + 1 < k; a++) {
      const implicit_row *r = row + mem[a];
      if (r->point >= 0) continue;
      const khzContact *c = d->contact + r->contact;
      /* the pair's normal impulse: its rows are consecutive (pair_rows adds
       * them together; clusters and blocks hold whole pairs), so the sum over
       * its run in order is the sum over all k rows' */
      int s0 = a;
      while (s0 > 0 && row[mem[s0 - 1]].contact == r->contact) s0--;
      double pn = 0;
      for (int b = s0; b < k && row[mem[b]].contact == r->contact; b++)
        if (row[mem[b]].point >= 0) pn += P[IX(b)];
      double lim = c->mu * fmax(pn, 0), pt = hypot(P[IX(a)], P[IX(a + 1)]);
      if ((fixed[a] || pt > lim * (1 + 1e-9)) && d->contact_method != KHZ_CONTACT_DEEPEST && k <= KHZ_JOINT_ROWS &&
          m->contact.joint_friction) {
        /* a sliding pair that shares a free body with another pair: the
         * whole cluster with its discs together (solve_joint) */
        int shared = 0;
        for (int t = 0; t < k && !shared; t++) {
          const implicit_row *o = row + mem[t];
          shared = o->point < 0 && o->contact != r->contact && share_free_body(m, c, d->contact + o->contact);
        }
        if (shared) {
          double Pk[KHZ_JOINT_ROWS], rk[KHZ_JOINT_ROWS], lk[KHZ_JOINT_ROWS];
          int fk[KHZ_JOINT_ROWS];
          for (int q = 0; q < k; q++) Pk[q] = P[IX(q)], rk[q] = rhs[IX(q)], lk[q] = lo[IX(q)], fk[q] = fixed[q];
          if (solve_joint(d, row, mem, k, A, rk, lk, Pk, fk, L, sol) == 0) {
            for (int q = 0; q < k; q++) P[IX(q)] = Pk[q], fixed[q] = fk[q];
            return 0;
          }
        }
      }
      if ((fixed[a] || pt > lim * (1 + 1e-9)) && d->contact_method != KHZ_CONTACT_DEEPEST) {
        /* the multi-point method: scaled back onto the disc (maximal
         * dissipation, below, not yet: see disc_dissipation) */
        double sc = pt > lim && pt > 0 ? lim / pt : 1;
        P[IX(a)] *= sc, P[IX(a + 1)] *= sc;
        if (!fixed[a]) changed = 1;
        fixed[a] = fixed[a + 1] = 1;
      } else if (fixed[a] || pt > lim * (1 + 1e-9)) {
        /* the pair's own two rows, the others held: A_tt P_t = b */
        double b2[2];
        for (int t = 0; t < 2; t++) {
          b2[t] = rhs[IX(a + t)];
          for (int q = 0; q < k; q++)
            if (q != a && q != a + 1) b2[t] -= A[(a + t) * k + q] * P[IX(q)];
        }
        const double A2[3] = {A[a * k + a], A[a * k + a + 1], A[(a + 1) * k + a + 1]};
        double Pt[2];
        disc_dissipation(A2, b2, lim, Pt);
        /* the pair's normal rows were solved with the friction impulse of
         * the pass before: solved again until the two agree */
        if (fixed[a]) {
          double mv = hypot(Pt[0] - P[IX(a)], Pt[1] - P[IX(a + 1)]);
          moved = fmax(moved, mv);
          again |= mv > KHZ_DISC_TOL * lim;
        }
        P[IX(a)] = Pt[0], P[IX(a + 1)] = Pt[1];
        if (!fixed[a]) changed = 1;
        fixed[a] = fixed[a + 1] = 1;
      }
      a++;
    }
    /* the passes go on only while they contract: where friction pushed
     * the contact into the other body harder than its normal impulse
     * lifts it (mu |A_nt| > A_nn, Painleve's case) each pass would grow */
    if (moved > 0) {
      if (!(moved < moved_before)) again = 0;
      moved_before = moved;
    }
    if (!changed && !again) return 0;
  }
  return 0;
#undef IX
}

/* solve_rows_with for a whole cluster (values indexed through mem, no
 * factor given) and for one block of solve_blocks: two copies, each with
 * its constants folded */
static int solve_rows(const khzModel *m, const khzData *d, const implicit_row *row, const int *mem, int k,
                      const double *A, const double *rhs, const double *lo, double *P, double *L, double *sol,
                      int *fixed, const double *Lfull, factor_cache *fc, double *sol0, int *sol0_kept) {
  return solve_rows_with(m, d, row, mem, k, A, rhs, lo, P, L, sol, fixed, 0, Lfull, fc, sol0, sol0_kept);
}

static int solve_rows_block(const khzModel *m, const khzData *d, const implicit_row *row, const int *mem, int k,
                            const double *A, const double *rhs, const double *lo, double *P, double *L, double *sol,
                            int *fixed, const double *Lfull, factor_cache *fc) {
  return solve_rows_with(m, d, row, mem, k, A, rhs, lo, P, L, sol, fixed, 1, Lfull, fc, NULL, NULL);
}

/* the forces for the stages from the impulses P of the k rows in mem */
static void implicit_forces(khzData *d, const implicit_row *row, const int *mem, int k, const double *P) {
  double h = d->timestep;
  for (int a = 0; a < k; a++) {
    const implicit_row *r = row + mem[a];
    khzContact *c = d->contact + r->contact;
    double Pa = P[mem[a]];
    if (!isfinite(Pa) || Pa == 0) continue;
    if (r->point >= 0 && r->tie) {
      /* a deepest-point tie pair's one row: spread by the pass's shares */
      khzContactPoint *pts = d->cpoint + c->point_adr;
      for (int q = 0; q < c->npoint; q++)
        if (pts[q].bottom) pts[q].force_implicit = pts[q].share * Pa / h;
    } else if (r->point >= 0) d->cpoint[c->point_adr + r->point].force_implicit = Pa / h;
    else khzu_addScl3(c->force_implicit, c->force_implicit, r->dir, Pa / h);
  }
}

/* the most rows of one cluster the implicit part solves (in blocks of at
 * most KHZ_IMPLICIT_DIRECT rows when it has more than that); a larger
 * cluster is counted as an impulse warning and keeps its explicit part */
#define KHZ_IMPLICIT_ROWS 1536
/* block Gauss-Seidel: at most this many sweeps, stopping when no impulse
 * moved by more than KHZ_BLOCK_TOL of the largest */
#define KHZ_BLOCK_SWEEPS 60
#define KHZ_BLOCK_TOL 1e-6
/* the most rows of one block of solve_blocks (khz_penaltyTreeBlocks) */
#define KHZ_BLOCK_ROWS 64

/* adds the body velocity changes of the impulses dP (k values) of the k
 * rows listed in mem to vel (6 nbody): the spatial impulses of
 * the rows summed per body (fb, 6 nbody, scratch, left zero), one
 * articulated impulse response per body that takes one */
static void add_row_impulses(const khzModel *m, khzData *d, const implicit_row *row, const int *mem, int k,
                             const double *dP, double *vel, double *fb, double *dqd, double *tmp) {
  (void)dqd; /* the responses' joint velocities are not wanted */
  for (int a = 0; a < k; a++) {
    const implicit_row *r = row + mem[a];
    const khzContact *c = d->contact + r->contact;
    double p = dP[a];
    if (p == 0) continue;
    for (int s = 0; s < 2; s++) {
      int b = c->body[s];
      if (b <= 0 || khz_bodyStatic(m, b)) continue;
      double J[3], f[6];
      khzu_scl3(J, r->dir, s ? -p : p);
      khz_spatialImpulse(m, d, b, r->x, J, f);
      for (int q = 0; q < 6; q++) fb[6 * b + q] += f[q];
    }
  }
  for (int b = 1; b < m->nbody; b++) {
    double *f = fb + 6 * b;
    if (!(f[0] != 0 || f[1] != 0 || f[2] != 0 || f[3] != 0 || f[4] != 0 || f[5] != 0)) continue;
    khz_impulseResponse(m, d, b, f, NULL, tmp);
    int root = m->body_root[b];
    for (int i = root; i < m->body_treeend[root]; i++)
      if (m->body_root[i] == root)
        for (int q = 0; q < 6; q++) vel[6 * i + q] += tmp[6 * i + q];
    memset(f, 0, 6 * sizeof(double));
  }
}

/* The blocks of solve_blocks: the k rows grouped by tree (tree[a] in [0,
 * ntree), a pair's rows under its first moving tree), whole pairs (pair[a],
 * a pair's rows consecutive) in their order within a tree: a stable
 * counting sort into ord (k, ord[i] the row at place i; count: ntree + 1
 * ints of scratch). The rows of one articulated tree are coupled through
 * its joints as strongly as through one body, and Gauss-Seidel between
 * blocks that split a tree converges slowly; between trees the rows couple
 * only through the pairs that join them. Whole trees are packed into
 * blocks of up to KHZ_BLOCK_ROWS rows; a tree of more rows is cut into
 * blocks of whole pairs of up to KHZ_BLOCK_ROWS. start (k + 1): block b is
 * places start[b] .. start[b + 1] - 1. Returns the number of blocks, or -1
 * when one pair has more than KHZ_IMPLICIT_DIRECT rows. */
int khz_penaltyTreeBlocks(const int *tree, const int *pair, int k, int ntree, int *ord, int *start, int *count) {
  for (int t = 0; t <= ntree; t++) count[t] = 0;
  for (int a = 0; a < k; a++) count[tree[a] + 1]++;
  for (int t = 0; t < ntree; t++) count[t + 1] += count[t];
  for (int a = 0; a < k; a++) ord[count[tree[a]]++] = a;
  int nblk = 0;
  start[0] = 0;
  for (int a = 0; a < k;) {
    int te = a + 1;
    while (te < k && tree[ord[te]] == tree[ord[a]]) te++;
    if (te - start[nblk] > KHZ_BLOCK_ROWS && a > start[nblk]) start[++nblk] = a; /* the tree in a new block */
    for (int p = a; p < te;) { /* a tree of more rows: cut between its pairs */
      int e = p + 1;
      while (e < te && pair[ord[e]] == pair[ord[p]]) e++;
      if (e - start[nblk] > KHZ_BLOCK_ROWS && p > start[nblk]) start[++nblk] = p;
      if (e - start[nblk] > KHZ_IMPLICIT_DIRECT) return -1;
      p = e;
    }
    a = te;
  }
  start[++nblk] = k;
  return nblk;
}

/* A cluster of k > KHZ_IMPLICIT_DIRECT rows (mem), by block Gauss-Seidel:
 * the rows cut into blocks of whole trees of at most KHZ_BLOCK_ROWS rows
 * (khz_penaltyTreeBlocks; smaller blocks refactor faster when bounds turn
 * active: the 15-box pyramid stepped in 10 ms with blocks of 128 rows,
 * 2.5-4 ms with 48-64), each block's own matrix (its Delassus block plus
 * its diagonal) built once; a sweep solves each block directly with solve_rows' bounds,
 * the other blocks' impulses held, their effect on the block's rows read
 * from vel, the body velocity changes of every impulse so far (updated by
 * one impulse response per body after each block). The held rows' bounds
 * follow the solution's velocity as in the direct solve. Returns 0, or -1
 * when the scratch stack cannot hold the blocks or a factorisation fails. */
static int solve_blocks(const khzModel *m, khzData *d, const implicit_row *row, const int *mem, int k,
                        const double *rhs, double *lo, const double *diag, const int *held,
                        const double *los, const double *lof, const double *v0s, const double *vfs,
                        double *P, double *dqd, double *dvel, double *tmp, const unsigned char *need) {
  size_t mk = khz_stackMark(d);
  int kd = KHZ_IMPLICIT_DIRECT; /* the largest block: one pair of more than KHZ_BLOCK_ROWS rows */
  int *start = khz_stackAlloc(d, ((size_t)k + 1) * sizeof(int));
  size_t *aoff = khz_stackAlloc(d, (size_t)k * sizeof(size_t));
  double *vel = khz_stackAlloc(d, 12 * (size_t)m->nbody * sizeof(double)), *fb = vel ? vel + 6 * m->nbody : NULL;
  double *rb = khz_stackAlloc(d, (size_t)k * sizeof(double)), *dP = khz_stackAlloc(d, (size_t)k * sizeof(double));
  double *rhs2 = khz_stackAlloc(d, (size_t)k * sizeof(double)), *P2 = khz_stackAlloc(d, (size_t)k * sizeof(double));
  double *lo2 = khz_stackAlloc(d, (size_t)k * sizeof(double));
  double *L = khz_stackAlloc(d, (size_t)kd * kd * sizeof(double)), *sol = khz_stackAlloc(d, (size_t)kd * sizeof(double));
  int *fixed = khz_stackAlloc(d, (size_t)kd * sizeof(int));
  int *ord = khz_stackAlloc(d, (size_t)k * sizeof(int)), *tcount = khz_stackAlloc(d, ((size_t)m->nbody + 1) * sizeof(int));
  int *rtree = khz_stackAlloc(d, 2 * (size_t)k * sizeof(int)), *rpair = rtree ? rtree + k : NULL;
  if (!start || !aoff || !vel || !rb || !dP || !rhs2 || !P2 || !lo2 || !L || !sol || !fixed || !ord || !tcount ||
      !rtree) {
    khz_stackFree(d, mk);
    return -1;
  }
  for (int a = 0; a < k; a++) {
    const khzContact *c = d->contact + row[mem[a]].contact;
    int t = khz_movingTree(m, c, 0);
    rtree[a] = t >= 0 ? t : khz_movingTree(m, c, 1), rpair[a] = row[mem[a]].contact;
  }
  int nblk = khz_penaltyTreeBlocks(rtree, rpair, k, m->nbody, ord, start, tcount);
  if (nblk < 0) { /* one pair alone larger than a direct solve */
    khz_stackFree(d, mk);
    return -1;
  }
  for (int a = 0; a < k; a++) rtree[a] = mem[ord[a]]; /* the rows in block order */
  mem = rtree;
  size_t asize = 0;
  for (int b = 0; b < nblk; b++) {
    int kb = start[b + 1] - start[b];
    aoff[b] = asize, asize += (size_t)kb * kb;
  }
  double *A = khz_stackAlloc(d, 2 * asize * sizeof(double)); /* the blocks' matrices, then their factors */
  /* each block's factor with rows held, kept across the sweeps (factor_cache) */
  double *Lheld = khz_stackAlloc(d, KHZ_FACTORS_KEPT * asize * sizeof(double));
  int *heldset = khz_stackAlloc(d, KHZ_FACTORS_KEPT * (size_t)k * sizeof(int));
  factor_cache *fcs = khz_stackAlloc(d, (size_t)nblk * sizeof(factor_cache));
  if (!A || !Lheld || !heldset || !fcs) {
    khz_stackFree(d, mk);
    return -1;
  }
  /* the rows' values in cluster order: block b's are start[b] .. start[b + 1] - 1 */
  for (int a = 0; a < k; a++) rhs2[a] = 0, P2[a] = 0, lo2[a] = lo[mem[a]];
  for (int b = 0; b < nblk; b++) { /* each block's matrix, one test impulse per row */
    int s0 = start[b], kb = start[b + 1] - s0;
    double *Ab = A + aoff[b];
    for (int q = 0; q < kb; q++) {
      const implicit_row *rq = row + mem[s0 + q];
      row_response(m, d, d->contact + rq->contact, rq, dqd, dvel, tmp, need);
      for (int p = 0; p < kb; p++) {
        const implicit_row *rp = row + mem[s0 + p];
        Ab[p * kb + q] = row_velocity(m, d, d->contact + rp->contact, rp, dvel);
      }
      row_clear(m, d->contact + rq->contact, dvel, need);
    }
    for (int p = 0; p < kb; p++) {
      for (int q = 0; q < p; q++) Ab[p * kb + q] = Ab[q * kb + p] = 0.5 * (Ab[p * kb + q] + Ab[q * kb + p]);
      Ab[p * kb + p] += diag[mem[s0 + p]];
    }
    memcpy(A + asize + aoff[b], Ab, (size_t)kb * kb * sizeof(double));
    if (khzu_cholFactor(A + asize + aoff[b], kb) != 0) {
      khz_stackFree(d, mk);
      return -1;
    }
  }
  for (int b = 0; b < nblk; b++) {
    fcs[b].oldest = 0;
    for (int e = 0; e < KHZ_FACTORS_KEPT; e++)
      fcs[b].L[e] = Lheld + e * asize + aoff[b], fcs[b].held[e] = heldset + (size_t)e * k + start[b], fcs[b].valid[e] = 0;
  }
  memset(vel, 0, 12 * (size_t)m->nbody * sizeof(double));
  int ok = 0;
  for (int pass = 0; pass <= KHZ_HELD_PASSES && ok == 0; pass++) {
    int sweep;
    for (sweep = 0; sweep < KHZ_BLOCK_SWEEPS && ok == 0; sweep++) {
      double dmax = 0, pmax = 0;
      for (int b = 0; b < nblk && ok == 0; b++) {
        int s0 = start[b], kb = start[b + 1] - s0;
        const double *Ab = A + aoff[b];
        /* the other blocks' velocity at each row: all impulses' less the block's own */
        for (int p = 0; p < kb; p++) {
          int a = s0 + p;
          const implicit_row *r = row + mem[a];
          double v = row_velocity(m, d, d->contact + r->contact, r, vel);
          for (int q = 0; q < kb; q++) v -= (Ab[p * kb + q] - (p == q ? diag[mem[s0 + q]] : 0)) * P2[s0 + q];
          rhs2[a] = rhs[mem[a]] - v;
        }
        for (int p = 0; p < kb; p++) rb[p] = P2[s0 + p];
        ok = solve_rows_block(m, d, row, mem + s0, kb, Ab, rhs2 + s0, lo2 + s0, P2 + s0, L, sol, fixed,
                              A + asize + aoff[b], fcs + b);
        for (int p = 0; p < kb; p++) {
          dP[s0 + p] = P2[s0 + p] - rb[p];
          dmax = fmax(dmax, fabs(dP[s0 + p])), pmax = fmax(pmax, fabs(P2[s0 + p]));
        }
        add_row_impulses(m, d, row, mem + s0, kb, dP + s0, vel, fb, dqd, tmp);
      }
      if (dmax <= KHZ_BLOCK_TOL * pmax) break;
    }
    if (sweep == KHZ_BLOCK_SWEEPS) d->warning[KHZ_WARN_IMPULSE]++;
    /* the held rows' bounds at the solution's velocity */
    int again = 0;
    for (int a = 0; a < k && ok == 0; a++) {
      int j = mem[a];
      if (!held[j] || row[j].point < 0 || v0s[j] == vfs[j]) continue;
      double dv = row_velocity(m, d, d->contact + row[j].contact, row + j, vel);
      double t = fmin(fmax(dv / (v0s[j] - vfs[j]), 0), KHZ_HELD_REACH), nlo = lof[j] + (los[j] - lof[j]) * t;
      if (nlo == lo2[a]) continue;
      again |= P2[a] <= lo2[a] || P2[a] < nlo;
      lo2[a] = nlo;
    }
    if (!again) break;
  }
  for (int a = 0; a < k; a++) P[mem[a]] = P2[a], lo[mem[a]] = lo2[a];
  khz_stackFree(d, mk);
  return ok;
}

/* The cluster's Delassus matrix W into A (k x k) from the tree limits' L
 * of this step (tree_limits keeps it in d->tree_resp): L is the response
 * of the cluster's bodies' velocities [w; v] at their tree origins to unit
 * impulses [torque; force] there, through the step's damped inertias
 * (khz_contactBegin: the factors delassus_factored reads), so with row a's
 * side s as g_as = +-[r x dir; dir] (r from the tree origin; +dir on body
 * 0, -dir on body 1: row_velocity_col's velocity along dir),
 *   W_ab = sum_s,t g_as^T L_(s,t) g_bt,
 * J (M + h B)^-1 J^T as delassus_factored's up to rounding. The blocks of L
 * between two trees are zero and are not read. O(k n 6) for u_b = L g_b
 * and O(k^2 12) for W, where delassus_factored walks each group's paths and
 * factors their joints again. Each entry is computed once for both halves
 * (A exactly symmetric). 0, or -1 when no L of this step is kept for some
 * row's moving body, the rows' bodies are in two kept clusters, or the
 * stack cannot hold the scratch: the caller takes delassus. */
static inline __attribute__((always_inline)) int delassus_kept_in(const khzModel *m, khzData *d,
                                                                   const implicit_row *row, const int *mem,
                                                                   int k, double *A) {
  if (!d->tree_resp_valid) return -1;
  int off = -1, nb = 0;
  for (int a = 0; a < k; a++) {
    const khzContact *c = d->contact + row[mem[a]].contact;
    for (int s = 0; s < 2; s++) {
      int b = c->body[s];
      if (b <= 0 || khz_bodyStatic(m, b)) continue;
      const int *at = d->tree_resp_at + 3 * b;
      if (at[0] < 0 || (off >= 0 && at[0] != off)) return -1;
      off = at[0], nb = at[2];
    }
  }
  if (off < 0) return -1;
  int n = 6 * nb;
  const double *L = d->tree_resp + off;
  size_t mk = khz_stackMark(d);
  double *g = khz_stackAlloc(d, 12 * (size_t)k * sizeof(double));
  double *u = khz_stackAlloc(d, (size_t)k * n * sizeof(double));
  int *gs = khz_stackAlloc(d, 2 * (size_t)k * sizeof(int));
  int *root = khz_stackAlloc(d, (size_t)nb * sizeof(int));
  if (!g || !u || !gs || !root) {
    khz_stackFree(d, mk);
    return -1;
  }
  /* g_as, and the tree of each place a row reads (-1: none reads it) */
  for (int p = 0; p < nb; p++) root[p] = -1;
  for (int a = 0; a < k; a++) {
    const implicit_row *r = row + mem[a];
    const khzContact *c = d->contact + r->contact;
    for (int s = 0; s < 2; s++) {
      int b = c->body[s], p = b > 0 && !khz_bodyStatic(m, b) ? d->tree_resp_at[3 * b + 1] : -1;
      gs[2 * a + s] = p;
      if (p < 0) continue;
      root[p] = m->body_root[b];
      const double *o = d->xpos + 3 * m->body_root[b];
      double x[3] = {r->x[0] - o[0], r->x[1] - o[1], r->x[2] - o[2]}, sg = s ? -1 : 1, *ga = g + 12 * a + 6 * s;
      khzu_cross(ga, x, r->dir);
      for (int i = 0; i < 3; i++) ga[i] *= sg, ga[3 + i] = sg * r->dir[i];
    }
  }
  /* u_b = L g_b at the places the rows a <= b read (W_ab below, a <= b,
   * reads no other; +0 off b's trees), by L's rows (L symmetric: column
   * 6 q + j of block (p, q) is row 6 q + j of block (q, p)), each place's
   * six entries in three pairs. Once a row up to b reads place p, root[p]
   * holds -2 - its tree (so -1 still marks a place no row reads). */
  for (int b = 0; b < k; b++) {
    double *ub = u + (size_t)b * n;
    for (int t = 0; t < 2; t++)
      if (gs[2 * b + t] >= 0 && root[gs[2 * b + t]] >= 0) root[gs[2 * b + t]] = -2 - root[gs[2 * b + t]];
    for (int p = 0; p < nb; p++) {
      if (root[p] > -2) continue;
      v2d u0 = {0, 0}, u1 = {0, 0}, u2 = {0, 0};
      for (int t = 0; t < 2; t++) {
        int q = gs[2 * b + t];
        if (q < 0 || root[q] != root[p]) continue; /* both read by now: both marked */
        const double *gb = g + 12 * b + 6 * t, *Lr = L + (size_t)6 * q * n + 6 * p;
        for (int j = 0; j < 6; j++, Lr += n) {
          v2d gj = dup2(gb[j]);
          u0 += gj * (v2d){Lr[0], Lr[1]}, u1 += gj * (v2d){Lr[2], Lr[3]}, u2 += gj * (v2d){Lr[4], Lr[5]};
        }
      }
      double *up = ub + 6 * p;
      up[0] = u0[0], up[1] = u0[1], up[2] = u1[0], up[3] = u1[1], up[4] = u2[0], up[5] = u2[1];
    }
  }
  /* W_ab = g_a^T u_b, a <= b, mirrored */
  for (int a = 0; a < k; a++) {
    int p0 = gs[2 * a], p1 = gs[2 * a + 1];
    const double *ga = g + 12 * a;
    v2d g0 = {ga[0], ga[1]}, g1 = {ga[2], ga[3]}, g2 = {ga[4], ga[5]};
    v2d h0 = {ga[6], ga[7]}, h1 = {ga[8], ga[9]}, h2 = {ga[10], ga[11]};
    for (int b = a; b < k; b++) {
      const double *ub = u + (size_t)b * n;
      v2d w = {0, 0};
      if (p0 >= 0) {
        const double *up = ub + 6 * p0;
        w = g0 * (v2d){up[0], up[1]} + g1 * (v2d){up[2], up[3]} + g2 * (v2d){up[4], up[5]};
      }
      if (p1 >= 0) {
        const double *up = ub + 6 * p1;
        w += h0 * (v2d){up[0], up[1]} + h1 * (v2d){up[2], up[3]} + h2 * (v2d){up[4], up[5]};
      }
      A[a * k + b] = A[b * k + a] = w[0] + w[1];
    }
  }
  khz_stackFree(d, mk);
  return 0;
}

/* delassus_kept compiled for AVX too (no FMA: each lane rounds its
 * product and its sum as the two-lane code does, the same bits) */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static int delassus_kept_avx(const khzModel *m, khzData *d, const implicit_row *row,
                                                             const int *mem, int k, double *A) {
  return delassus_kept_in(m, d, row, mem, k, A);
}
#endif

static int delassus_kept(const khzModel *m, khzData *d, const implicit_row *row, const int *mem, int k,
                         double *A) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) return delassus_kept_avx(m, d, row, mem, k, A);
#endif
  return delassus_kept_in(m, d, row, mem, k, A);
}

void khz_penaltyImplicit(const khzModel *m, khzData *d, const double *vfree, double *dqd, double *dvel,
                         double *tmp) {
  /* Each bottom point's implicit spring k and damper c (the pair's
   * kp_implicit and kv_implicit times its share w of eq. 1's count) on its
   * relative normal coordinate, integrated by backward Euler over the step,
   * and a tangential damper ct (tangent_scale times the pair's whole
   * kv) at the centroid of the pair's bottom points, against sliding: the
   * impulses P of the rows satisfy
   *   P_i = h (k_i x_i - kc_i v_i'),  kc_i = k_i h + c_i,  v' = v + W P,
   * x_i the point's depth (0 on tangential rows), v the rows' velocities
   * at the predicted end of the step, W the Delassus matrix of the rows.
   * That is the symmetric positive definite system
   *   (W + diag(1 / (h kc_i))) P = k_i x_i / kc_i - v_i,
   * solved directly for every cluster of rows coupled through moving trees
   * (Gauss-Seidel would converge as m_light / m_heavy per sweep on a heavy
   * body resting on a light one), with the bounds of solve_rows: a normal
   * impulse never pulls harder than the explicit spring pushes, a pair's
   * tangential impulse stays in the friction cone of its normal impulse.
   * Per point rather than per pair, so that the implicit springs hold a
   * body's tilt as well as its height. P / h acts as a constant force over
   * the whole step (pair_forces adds it at every stage), so that a body at
   * rest keeps exactly zero velocity. */
  double h = d->timestep;
  int nc = d->ncontact, n = 0, cap = d->ncpoint + 2 * nc;
  size_t mark = khz_stackMark(d);
  implicit_row *row = khz_stackAlloc(d, (size_t)cap * sizeof(implicit_row));
  int *cl = khz_stackAlloc(d, (size_t)cap * sizeof(int));
  int *mem = khz_stackAlloc(d, (size_t)cap * sizeof(int));
  int *next = khz_stackAlloc(d, (size_t)cap * sizeof(int));
  int *parent = khz_stackAlloc(d, (size_t)m->nbody * sizeof(int));
  int *head = khz_stackAlloc(d, (size_t)m->nbody * sizeof(int));
  double *rhs = khz_stackAlloc(d, (size_t)cap * sizeof(double));
  double *lo = khz_stackAlloc(d, (size_t)cap * sizeof(double));
  double *diag = khz_stackAlloc(d, (size_t)cap * sizeof(double));
  double *P = khz_stackAlloc(d, (size_t)cap * sizeof(double));
  implicit_row *tmpr = khz_stackAlloc(d, (size_t)m->max_points * sizeof(implicit_row));
  int *held = khz_stackAlloc(d, (size_t)cap * sizeof(int));
  double *los = khz_stackAlloc(d, (size_t)cap * sizeof(double));
  double *lof = khz_stackAlloc(d, (size_t)cap * sizeof(double));
  double *v0s = khz_stackAlloc(d, (size_t)cap * sizeof(double));
  double *vfs = khz_stackAlloc(d, (size_t)cap * sizeof(double));
  unsigned char *need = khz_stackAlloc(d, (size_t)m->nbody); /* rows_need */
  size_t wbody = 6 * KHZ_RESPONSE_COLS * (size_t)m->nbody * sizeof(double); /* rows_response */
  double *uc = khz_stackAlloc(d, wbody), *tmpc = khz_stackAlloc(d, wbody), *dvc = khz_stackAlloc(d, wbody);
  if (!(row && cl && mem && next && parent && head && rhs && lo && diag && P && tmpr && held && los && lof && v0s && vfs && need &&
        uc && tmpc && dvc)) {
    khz_forwardPass(m, d, d->q, vfree);
    khz_stackFree(d, mark);
    return;
  }
  for (int b = 0; b < m->nbody; b++) parent[b] = b, need[b] = 0;
  /* A normal row's bound is the explicit force at its point (lo = -h fn),
   * taken at the velocity the step would end with (the forward pass at
   * (q, vfree), pass 1). A pair whose stiffness is mostly implicit
   * (kp_implicit > KHZ_HELD_IMPLICIT kp: a light body under a large load,
   * or the load-following spring still held after the load has gone) is
   * pushed apart at the start by its explicit spring and integral, and the
   * explicit prediction vfree separates it fast: the explicit force at
   * vfree, its damper taking most of it, left the implicit damper no room
   * to hold the body back, and a 10 g block released from 100 N left the
   * ground at 2.8 cm/s. Such a pair's rows (pass 0, the forward pass at the
   * step's start) take the looser of the explicit force at the start and
   * at vfree: the total force may not pull at either. */
  for (int pass = 0; pass < 2; pass++) {
    /* the velocities at vfree; the position part is the first stage's, at
     * d->q (step.c calls this after it), so the velocity pass alone gives
     * khz_forwardPass(d->q, vfree)'s numbers without the poses again */
    if (pass == 1) khz_velocityPass(m, d, vfree);
    for (int i = 0; i < nc; i++) {
      khzContact *c = d->contact + i;
      if ((c->kp_implicit > KHZ_HELD_IMPLICIT * c->kp) != (pass == 0)) continue;
      memset(c->force_implicit, 0, sizeof c->force_implicit);
      double kc = c->kp_implicit * h + c->kv_implicit, ct = tangent_scale(m, c) * (c->kv + c->kv_implicit);
      if (!(kc > 0) || !c->nbottom || d->pair[c->slot].phase != KHZ_PHASE_RESTING) continue;
      int first = n, added = pair_rows(m, d, i, row + n);
      for (int j = first; j < first + added; j++) {
        implicit_row *r = row + j;
        double kj = r->point >= 0 ? c->kp_implicit * r->w : 0, kcj = r->point >= 0 ? kc * r->w : ct;
        if (!(kcj > 0)) continue; /* a point without weight carries nothing */
        double v = row_velocity(m, d, c, r, d->vtree), depth = fmax(r->depth, 0);
        /* the point's share of the integral term (integral_implicit), constant over the step */
        double fint = r->point >= 0 && r->depth > 0 && integral_implicit(d, c) ? c->ki * d->pair[c->slot].integral * r->w : 0;
        row[n] = *r;
        rhs[n] = (kj * depth + fint) / kcj - (pass ? v : 0); /* pass 0: less the velocity, below */
        v0s[n] = vfs[n] = v;
        diag[n] = 1 / (h * kcj);
        lo[n] = -h * r->fn;
        held[n] = pass == 0;
        n++;
      }
      int r0 = khz_movingTree(m, c, 0), r1 = khz_movingTree(m, c, 1);
      if (r0 >= 0 && r1 >= 0) parent[khz_clusterFind(parent, r0)] = khz_clusterFind(parent, r1);
    }
  }
  /* pass 0's rows: their velocities and bounds at vfree (the pair's rows
   * again, at vfree, into tmpr); the bounds at the start kept in los */
  for (int j = 0, last = -1, nt = 0; j < n; j++) {
    if (!held[j]) continue;
    vfs[j] = row_velocity(m, d, d->contact + row[j].contact, row + j, d->vtree);
    rhs[j] -= vfs[j];
    if (row[j].point < 0) continue;
    if (row[j].contact != last) {
      last = row[j].contact, nt = 0;
      pair_forces(m, d, d->contact + last, 0, NULL, NULL, tmpr, &nt);
    }
    los[j] = lof[j] = lo[j];
    for (int t = 0; t < nt; t++)
      if (tmpr[t].point == row[j].point) lo[j] = lof[j] = -h * tmpr[t].fn;
  }
  for (int j = 0; j < n; j++) {
    const khzContact *c = d->contact + row[j].contact;
    int r = khz_movingTree(m, c, 0) >= 0 ? khz_movingTree(m, c, 0) : khz_movingTree(m, c, 1);
    cl[j] = r >= 0 ? khz_clusterFind(parent, r) : -1;
  }
  cluster_lists(cl, n, head, next);
  /* each cluster, in the order of its first row: W column by column, one
   * test impulse per row (dvel zero between them: row_response) */
  memset(dvel, 0, 6 * (size_t)m->nbody * sizeof(double));
  for (int j0 = 0; j0 < n; j0++) {
    if (cl[j0] < 0 || head[cl[j0]] != j0) continue;
    int k = 0;
    for (int j = j0; j >= 0; j = next[j]) mem[k++] = j;
    rows_need(m, d, row, mem, k, need, 1); /* cleared again at each way out below */
    if (k > KHZ_IMPLICIT_DIRECT) { /* in blocks, or too large: counted, not applied */
      for (int a = 0; a < k; a++) P[mem[a]] = 0;
      if (k > KHZ_IMPLICIT_ROWS ||
          solve_blocks(m, d, row, mem, k, rhs, lo, diag, held, los, lof, v0s, vfs, P, dqd, dvel, tmp, need) != 0) {
        d->warning[KHZ_WARN_IMPULSE]++;
        rows_need(m, d, row, mem, k, need, 0);
        continue;
      }
      implicit_forces(d, row, mem, k, P);
      rows_need(m, d, row, mem, k, need, 0);
      continue;
    }
    size_t mk = khz_stackMark(d);
    double *A = khz_stackAlloc(d, (size_t)k * k * sizeof(double));
    double *L = A ? khz_stackAlloc(d, (size_t)k * k * sizeof(double)) : NULL;
    double *Lf = L ? khz_stackAlloc(d, (size_t)k * k * sizeof(double)) : NULL;
    double *sol = khz_stackAlloc(d, (size_t)k * sizeof(double));
    int *fixed = khz_stackAlloc(d, (size_t)k * sizeof(int));
    /* the factors with rows held, kept across the held rows' solves below */
    double *Lkept = khz_stackAlloc(d, KHZ_FACTORS_KEPT * (size_t)k * k * sizeof(double));
    int *heldkept = khz_stackAlloc(d, KHZ_FACTORS_KEPT * (size_t)k * sizeof(int));
    /* the first pass's solution, no row held: A^-1 rhs at every call below */
    double *sol0 = khz_stackAlloc(d, (size_t)k * sizeof(double));
    int sol0_kept = 0;
    if (!A || !L || !Lf || !sol || !fixed || !Lkept || !heldkept || !sol0) { /* no scratch: counted, not applied */
      d->warning[KHZ_WARN_IMPULSE]++;
      khz_stackFree(d, mk);
      rows_need(m, d, row, mem, k, need, 0);
      continue;
    }
    /* one lone body (a free object on the table or the floor): its W
     * directly, the same bits as the walk's (and, as the walk's, made
     * symmetric below) */
    int lone = cluster_lone_body(m, d, row, mem, k), symmetric = 0;
    double *wl = lone ? khz_stackAlloc(d, 6 * (size_t)k * sizeof(double)) : NULL;
    if (wl) delassus_lone(m, d, row, mem, k, lone, wl, A);
    else if (delassus_kept(m, d, row, mem, k, A) == 0) symmetric = 1;
    else symmetric = delassus(m, d, row, mem, k, need, uc, tmpc, dvc, A, 1);
    rows_need(m, d, row, mem, k, need, 0); /* A holds what the rows need */
    /* the walk's halves made equal; the factors' are equal already (the
     * mean of x and x is x) */
    for (int a = 0; a < k; a++) {
      for (int b = 0; b < a && !symmetric; b++) A[a * k + b] = A[b * k + a] = 0.5 * (A[a * k + b] + A[b * k + a]);
      A[a * k + a] += diag[mem[a]];
    }
    /* A's factor, once: every solve_rows call below starts with no row held,
     * so its first pass factors the same A (the same bits); a failed factor
     * fails that pass, as it did there */
    memcpy(Lf, A, (size_t)k * k * sizeof(double));
    factor_cache fc = {.oldest = 0};
    for (int e = 0; e < KHZ_FACTORS_KEPT; e++)
      fc.L[e] = Lkept + (size_t)e * k * k, fc.held[e] = heldkept + (size_t)e * k, fc.valid[e] = 0;
    int ok = khzu_cholFactor(Lf, k) == 0 && solve_rows(m, d, row, mem, k, A, rhs, lo, P, L, sol, fixed, Lf, &fc, sol0, &sol0_kept) == 0;
    /* pass 0's rows: the bound at the velocity the solution ends with, v'
     * = vfree + W P, interpolated between the bounds at vfree and at the
     * start (the explicit bracket is linear in the velocity), v' clamped
     * between the two; solved again while a row held at its bound moves */
    for (int it = 0; ok && it < KHZ_HELD_PASSES; it++) {
      int again = 0;
      for (int a = 0; a < k; a++) {
        int j = mem[a];
        if (!held[j] || row[j].point < 0 || v0s[j] == vfs[j]) continue;
        double dv = 0;
        for (int b = 0; b < k; b++) dv += (A[a * k + b] - (a == b ? diag[j] : 0)) * P[mem[b]];
        double t = fmin(fmax(dv / (v0s[j] - vfs[j]), 0), KHZ_HELD_REACH), nlo = lof[j] + (los[j] - lof[j]) * t;
        if (nlo == lo[j]) continue;
        again |= fixed[a] || P[j] < nlo;
        lo[j] = nlo;
      }
      if (!again) break;
      ok = solve_rows(m, d, row, mem, k, A, rhs, lo, P, L, sol, fixed, Lf, &fc, sol0, &sol0_kept) == 0;
    }
    khz_stackFree(d, mk);
    if (!ok) {
      d->warning[KHZ_WARN_IMPULSE]++;
      continue;
    }
    implicit_forces(d, row, mem, k, P);
  }
  khz_stackFree(d, mark);
}

int khz_penaltyDelassus(const khzModel *m, khzData *d, int factored, double *A, double *J, int kmax) {
  size_t mark = khz_stackMark(d);
  int cap = d->ncpoint + 2 * d->ncontact, k = 0, ret = -1;
  implicit_row *row = khz_stackAlloc(d, (size_t)cap * sizeof(implicit_row));
  int *mem = khz_stackAlloc(d, (size_t)cap * sizeof(int));
  unsigned char *need = khz_stackAlloc(d, (size_t)m->nbody);
  double *tau = khz_stackAlloc(d, (size_t)m->nv * sizeof(double));
  double *qdd = khz_stackAlloc(d, (size_t)m->nv * sizeof(double));
  double *jp = khz_stackAlloc(d, 3 * (size_t)m->nv * sizeof(double));
  size_t wbody = 6 * KHZ_RESPONSE_COLS * (size_t)m->nbody * sizeof(double);
  double *uc = khz_stackAlloc(d, wbody), *tmpc = khz_stackAlloc(d, wbody), *dvc = khz_stackAlloc(d, wbody);
  if (!row || !mem || !need || !tau || !qdd || !jp || !uc || !tmpc || !dvc) goto out;
  /* ABA's factors of M at the state (no damping: h = 0; factored 4: of
   * M + h B, the joints' damping implicit over the step as the step takes
   * it) */
  khz_forwardPass(m, d, d->q, d->qd);
  khz_externalForces(m, d);
  memset(tau, 0, (size_t)m->nv * sizeof(double));
  khz_abaCoreDamped(m, d, tau, qdd, factored == 4 ? d->timestep : 0, m->integrator != KHZ_INT_EULER);
  for (int i = 0; i < d->ncontact; i++) {
    const khzContact *c = d->contact + i;
    if (c->nbottom && d->pair[c->slot].phase == KHZ_PHASE_RESTING) k += pair_rows(m, d, i, row + k);
  }
  if (k > kmax) goto out;
  for (int a = 0; a < k; a++) mem[a] = a;
  memset(need, 0, (size_t)m->nbody);
  rows_need(m, d, row, mem, k, need, 1);
  /* 3: the tree limits' L at these factors (tree_limits, its kept Ritz
   * vectors put back), then W from it (delassus_kept) */
  int kept = 0;
  if (factored >= 3) {
    double *sk = khz_stackAlloc(d, ((size_t)d->ncontact + 1) * sizeof(double));
    double *sv = khz_stackAlloc(d, ((size_t)d->ncontact + 1) * sizeof(double));
    double *warm = khz_stackAlloc(d, 6 * (size_t)m->nbody * sizeof(double));
    if (!sk || !sv || !warm) goto out;
    memcpy(warm, d->rate_warm, 6 * (size_t)m->nbody * sizeof(double));
    tree_limits(m, d, sk, sv);
    memcpy(d->rate_warm, warm, 6 * (size_t)m->nbody * sizeof(double));
    kept = delassus_kept(m, d, row, mem, k, A) == 0;
    d->tree_resp_valid = 0;
  }
  /* 2: the lone body's path (delassus_lone) where the rows move one */
  int lone = factored == 2 ? cluster_lone_body(m, d, row, mem, k) : 0;
  double *wl = lone ? khz_stackAlloc(d, 6 * (size_t)k * sizeof(double)) : NULL;
  if (wl) delassus_lone(m, d, row, mem, k, lone, wl, A);
  int took = kept || wl || (factored == 1 && cluster_articulated(m, d, row, mem, k) &&
                    delassus_factored(m, d, row, mem, k, need, uc, A) == 0);
  if (!took) {
    rows_need(m, d, row, mem, k, need, 0);
    rows_need(m, d, row, mem, k, need, 1);
    delassus_walk(m, d, row, mem, k, need, uc, tmpc, dvc, A);
  }
  /* the rows' Jacobians: +dir on body 0, -dir on body 1 */
  for (int a = 0; J && a < k; a++) {
    const khzContact *c = d->contact + row[a].contact;
    memset(J + (size_t)a * m->nv, 0, (size_t)m->nv * sizeof(double));
    for (int s = 0; s < 2; s++) {
      if (c->body[s] <= 0) continue;
      khz_jacobian(m, d, c->body[s], row[a].x, jp, NULL);
      for (int q = 0; q < m->nv; q++)
        J[(size_t)a * m->nv + q] += (s ? -1 : 1) * (row[a].dir[0] * jp[q] + row[a].dir[1] * jp[m->nv + q] +
                                                     row[a].dir[2] * jp[2 * m->nv + q]);
    }
  }
  ret = took ? k : -k - 1;
out:
  khz_stackFree(d, mark);
  return ret;
}

size_t khz_penaltyImplicitStackBytes(const khzModel *m) {
  size_t np = (size_t)m->npair_max * ((size_t)m->max_points + 2);
  size_t k = np < KHZ_IMPLICIT_DIRECT ? np : KHZ_IMPLICIT_DIRECT;
  size_t scratch = (3 * k * k + k) * sizeof(double) + k * sizeof(int);
  /* and the kept factors (factor_cache), the kept first solution */
  size_t direct = scratch + KHZ_FACTORS_KEPT * k * (k * sizeof(double) + sizeof(int)) + k * sizeof(double) + 3 * 64;
  /* solve_blocks: per row 5 values, its place in tree order, its tree and
   * pair (then its row), and a row of its block's matrix, its factor and
   * the kept factors; per block a start, an offset and a factor_cache; per
   * body 12 values and a count; one block's scratch factor */
  size_t kb = np < KHZ_IMPLICIT_ROWS ? np : KHZ_IMPLICIT_ROWS;
  size_t blocks = np > KHZ_IMPLICIT_DIRECT
                      ? kb * (5 * sizeof(double) + (5 + KHZ_FACTORS_KEPT) * sizeof(int) + sizeof(size_t) +
                              sizeof(factor_cache) + (2 + KHZ_FACTORS_KEPT) * KHZ_IMPLICIT_DIRECT * sizeof(double)) +
                            12 * (size_t)m->nbody * sizeof(double) + ((size_t)m->nbody + 1) * sizeof(int) + scratch +
                            20 * 64
                      : 0;
  /* delassus_factored: C per body, per group (at most one per row) its
   * start, offset, bodies and path lengths and KHZ_FACTOR_LANES values
   * per dof of two paths */
  size_t path = 0;
  for (int b = 1; b < m->nbody; b++) {
    size_t nb = 0;
    for (int i = b; i > 0; i = m->body_parent[i]) nb += (size_t)m->jnt_nv[i];
    path = nb > path ? nb : path;
  }
  direct += 36 * (size_t)m->nbody * sizeof(double) + (k + 1) * (sizeof(int) + sizeof(size_t)) +
            4 * k * sizeof(int) + (KHZ_FACTOR_LANES * 2 * path * k + 1) * sizeof(double) + 7 * 64;
  /* delassus_kept, freed before delassus runs: per row 12 values of g, n
   * of u and two places; per kept body a tree */
  size_t kept = (12 + 6 * (size_t)KHZ_TREE_BODIES) * k * sizeof(double) + (2 * k + KHZ_TREE_BODIES) * sizeof(int) + 4 * 64;
  direct += kept;
  return (size_t)m->nbody * (2 * sizeof(int) + 1 + 3 * 6 * KHZ_RESPONSE_COLS * sizeof(double)) +
         np * (sizeof(implicit_row) + 4 * sizeof(int) + 8 * sizeof(double)) +
         (size_t)m->max_points * sizeof(implicit_row) + (direct > blocks ? direct : blocks) + 27 * 64;
}

/* ------------------------------------------------- forces and friction -- */

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
static inline __attribute__((always_inline)) void friction_stretch(const khzData *d, const khzContact *c, const khzPairState *ps,
                             const khzContactPoint *pt, const double p0[3], const double p1[3],
                             double delta[3]) {
  const double *n = c->normal;
  int a = find_anchor(d, c, ps, pt->feature, pt->pos);
  double s[3] = {0, 0, 0};
  if (a >= 0) {
    /* an idle corner's spring (the deepest-point method, khz_penaltyEnd) is
     * stretched further by the corner's slip since it was last the deepest
     * point: from where it was then to where it is at this step's start */
    double sl[3] = {ps->anchor[a][0], ps->anchor[a][1], ps->anchor[a][2]};
    if (ps->anchor_idle[a] == 1 && ps->anchor_feature[a] == pt->feature)
      for (int j = 0; j < 3; j++) sl[j] += pt->local[1][j] - ps->anchor_pos[a][j];
    khzu_mulMatVec3(s, d->xrot + 9 * c->body[1], sl);
  }
  for (int j = 0; j < 3; j++) delta[j] = s[j] + p0[j] - p1[j];
  double dn = khzu_dot3(delta, n);
  for (int j = 0; j < 3; j++) delta[j] -= dn * n[j];
}

/* the rolling couple's spring: natural frequency KHZ_TURN_OMEGA / h on the
 * pair's rotational inertia I, so k = I (KHZ_TURN_OMEGA / h)^2. With the
 * damper's rate c = I / (2 h) the pair is critically damped, c = 2 zeta w I
 * with zeta = 1 at w = 1 / (4 h), as the automatic gains' spring-damper
 * (KHZ_AUTO_ZETA); the mode's eigenvalue is -h w = -1/4 per step, well
 * inside the explicit integrators' stability regions. */
#define KHZ_TURN_OMEGA 0.25

/* the turn of body[0] against body[1] since the couple's anchor (pair_turn,
 * the orientation P_a = R1^T R0 at which the spring is unstretched): the
 * rotation vector of E = P P_a^T, P = R1^T R0 now (body[1]'s frame),
 * in the world's frame (khzu_turnSince); returns 0 (phi = 0) without an
 * anchor */
static inline __attribute__((always_inline)) int rolling_turn_in(const khzData *d, const khzContact *c,
                                                                  double phi[3]) {
  const double *qa = d->pair_turn + 4 * c->slot;
  if (qa[0] == 0 && qa[1] == 0 && qa[2] == 0 && qa[3] == 0) {
    memset(phi, 0, 3 * sizeof(double));
    return 0;
  }
  /* against the world (body 0, whose xrot is the identity) without R1's product */
  khzu_turnSince(phi, d->xrot + 9 * c->body[0], c->body[1] > 0 ? d->xrot + 9 * c->body[1] : NULL, qa);
  return 1;
}

/* 1 when a bottom point of the pair lies on a round surface (a sphere's, a
 * capsule's, a lying cylinder's rim: round_point): the points that roll.
 * Only those pairs get the rolling couple's spring; a face's points hold a
 * tilt with their own normal springs, and the rolling spring beside them
 * kept scenes/validation/stack.yaml's five boxes shaking (max kinetic
 * energy in the second half 2.3e-19 -> 1.3e-3 J) */
static int rolling_round(const khzData *d, const khzContact *c) {
  const khzContactPoint *pts = d->cpoint + c->point_adr;
  for (int k = 0; k < c->npoint; k++)
    if (pts[k].bottom && pts[k].round >= 0) return 1;
  return 0;
}

/* a couple's part, spring -k phi less damper -c w, cut to its cap */
static void capped_couple(const double phi[3], const double w[3], double k, double c, double cap,
                          double T[3]) {
  for (int j = 0; j < 3; j++) T[j] = -k * phi[j] - c * w[j];
  double tn = khzu_norm3(T);
  if (tn > cap) khzu_scl3(T, T, tn > 0 ? cap / tn : 0);
}

/* Rolling and torsional friction of a pair (MuJoCo's condim 6, opt-in): a
 * couple against the relative rotation, its tangential part (rolling)
 * saturated at rolling * fn, its normal part (spin) at torsional * fn.
 * Below saturation it is a spring on the turn since the pair's anchor
 * (rolling_turn; static friction, as the tangential anchors' stretch) plus a
 * damper whose rate c = I / (2 h), with I the pair's rotational effective
 * inertia, halves the relative rotation each step; the spring's k is
 * KHZ_TURN_OMEGA's. A damper alone cannot hold a steady couple: a ball on a
 * slope below the rolling threshold crept down at the couple's rate. Where
 * the couple saturates, khz_penaltyEnd slides the anchor (rolling_anchor). */
static inline __attribute__((always_inline)) void rolling_torque_in(const khzModel *m, khzData *d,
                                                                    const khzContact *c, double fn, int rolls) {
  const khzPairState *ps = d->pair + c->slot;
  double mr = m->contact.rolling, ms = m->contact.torsional;
  if (!(mr > 0 || ms > 0) || !(fn > 0) || !(ps->rot_inertia > 0)) return;
  const double *n = c->normal;
  int b0 = c->body[0], b1 = c->body[1];
  double w[3] = {0, 0, 0}, phi[3];
  for (int j = 0; j < 3; j++)
    w[j] = (b0 > 0 ? d->vtree[6 * b0 + j] : 0) - (b1 > 0 ? d->vtree[6 * b1 + j] : 0);
  double h = d->timestep, rate = ps->rot_inertia / (2 * h), wn = khzu_dot3(w, n), T[3];
  if (!rolling_turn_in(d, c, phi)) { /* no anchor: the damper alone */
    double wt[3];
    for (int j = 0; j < 3; j++) wt[j] = w[j] - wn * n[j];
    double wtn = sqrt(khzu_dot3(wt, wt));
    double tt = khzu_fmin(rate * wtn, mr * fn), tn = khzu_fmin(rate * fabs(wn), ms * fn);
    for (int j = 0; j < 3; j++)
      T[j] = -(wtn > 0 ? tt * wt[j] / wtn : 0) - (wn > 0 ? tn : wn < 0 ? -tn : 0) * n[j];
  } else {
    double wo = KHZ_TURN_OMEGA / h, k = ps->rot_inertia * wo * wo, pn = khzu_dot3(phi, n);
    double wt[3], pt[3], wnv[3], pnv[3], Tt[3], Tn[3];
    for (int j = 0; j < 3; j++) {
      wnv[j] = wn * n[j], pnv[j] = pn * n[j];
      wt[j] = w[j] - wnv[j], pt[j] = phi[j] - pnv[j];
    }
    capped_couple(pt, wt, (rolls < 0 ? rolling_round(d, c) : rolls) ? k : 0, rate, mr * fn, Tt);
    capped_couple(pnv, wnv, k, rate, ms * fn, Tn);
    khzu_add3(T, Tt, Tn);
  }
  if (b0 > 0)
    for (int j = 0; j < 3; j++) d->fext[6 * b0 + j] += T[j];
  if (b1 > 0)
    for (int j = 0; j < 3; j++) d->fext[6 * b1 + j] -= T[j];
}

/* rolls: rolling_round's answer when the caller has it (pair_forces_in, from
 * its pass over the bottom points), -1 to scan the points here */
KHZ_AVX_CLONES static void rolling_torque(const khzModel *m, khzData *d, const khzContact *c, double fn) {
  rolling_torque_in(m, d, c, fn, -1);
}

/* the rolling couple's anchor at the end of a step of a resting pair with
 * normal force fn: kept while the spring's parts stay within their caps
 * (rolling * fn about the tangents, torsional * fn about the normal); a
 * part beyond its cap is cut to it and the anchor slides so that the
 * spring sits at the cap (Coulomb's law for the couple, as the tangential
 * anchors slide to the cone's edge). A new pair anchors where it is.
 * Inline in penalty_end_in, so built for AVX with it (the same bits). */
static inline __attribute__((always_inline)) void rolling_anchor(const khzModel *m, khzData *d,
                                                                 const khzContact *c, double fn) {
  const khzPairState *ps = d->pair + c->slot;
  double *qa = d->pair_turn + 4 * c->slot;
  double mr = m->contact.rolling, ms = m->contact.torsional;
  if (!(mr > 0 || ms > 0)) return;
  /* the deepest-point method keeps the damper alone: its one point goes
   * round a box's corners as the box rocks, and with the spring the
   * five-box stack of test_contact_friction fell at h + 1 ulp (0.705 m) */
  if (!(ps->rot_inertia > 0) || d->contact_method == KHZ_CONTACT_DEEPEST) {
    memset(qa, 0, 4 * sizeof(double));
    return;
  }
  const double *n = c->normal, *R1 = d->xrot + 9 * c->body[1];
  double wo = KHZ_TURN_OMEGA / d->timestep, k = ps->rot_inertia * wo * wo, f = khzu_max0(fn);
  double phi[3], pt[3], pnv[3];
  rolling_turn_in(d, c, phi);
  int fresh = qa[0] == 0 && qa[1] == 0 && qa[2] == 0 && qa[3] == 0, cut = 0;
  double pn = khzu_dot3(phi, n);
  for (int j = 0; j < 3; j++) pnv[j] = pn * n[j], pt[j] = phi[j] - pnv[j];
  double lt = rolling_round(d, c) ? mr * f / k : 0, ln = ms * f / k, at = khzu_norm3(pt), an = fabs(pn);
  if (at > lt) khzu_scl3(pt, pt, at > 0 ? lt / at : 0), cut = 1;
  if (an > ln) khzu_scl3(pnv, pnv, an > 0 ? ln / an : 0), cut = 1;
  if (!fresh && !cut) return;
  /* P_a = exp(phi1)^T P with phi1 the kept turn in body[1]'s frame */
  double kept[3], kept1[3], P[9], Ek[9], Pa[9], q[4] = {1, 0, 0, 0}, ang;
  khzu_add3(kept, pt, pnv);
  khzu_mulMatTVec3(kept1, R1, kept);
  ang = khzu_norm3(kept1);
  if (ang > 0) khzu_axisAngle2Quat(q, (double[3]){kept1[0] / ang, kept1[1] / ang, kept1[2] / ang}, ang);
  khzu_quat2mat(Ek, q);
  khzu_mulMatTMat3(P, R1, d->xrot + 9 * c->body[0]);
  khzu_mulMatTMat3(Pa, Ek, P);
  khzu_mat2quat(qa, Pa);
}

/* a pair no longer resting forgets the couple's anchor */
static void rolling_forget(const khzModel *m, khzData *d, const khzContact *c) {
  if (m->contact.rolling > 0 || m->contact.torsional > 0) memset(d->pair_turn + 4 * c->slot, 0, 4 * sizeof(double));
}

/* the bottom points per pair whose surface points and velocities
 * pair_forces keeps from its first pass (1.5 kB of stack); the rest are
 * computed again */
#define KHZ_FORCE_KEEP 16

/* The implicit normal force fi of a point at an integrator stage, where the
 * explicit bracket of eq. 1 gives fn there. P / h is constant over the step
 * and may pull (the row's bound is the explicit push at one velocity);
 * where the explicit force has fallen below that pull at a later stage the
 * point would pull on the other body while its friction cone, max{mu (fn +
 * fi), 0}, stays closed, so that over a step the friction impulse exceeded
 * mu times the normal impulse. Under the deepest-point method a hull
 * sliding on one rocking corner stopped at 0.990 of v0^2 / (2 mu g) this way
 * (1.0001 with the tangential force bounded by the same normal force, below).
 * There no point pulls at a stage: the implicit pull is cut to the explicit
 * push. The multi-point method keeps the constant force (see docs/contact.md,
 * friction). */
static double stage_implicit(const khzData *d, double fi, double fn) {
  return d->contact_method == KHZ_CONTACT_DEEPEST && fi < -fn ? -fn : fi;
}

/* The rocking part of a point's slip velocity (body 0 less body 1): each
 * body's turning about axes in the contact plane, w_t x (x_s - com_s), at
 * its own centre of mass, from the current velocity pass. A body put on one
 * corner (the deepest-point method) rocks about its centre from corner to
 * corner, which swings the corner sideways by the half height times the
 * tilt; a box resting on a face does not. The friction damper against that
 * swing turned the wobble into spin: the deepest corner goes round with the
 * rocking axis, so the damper's moment about the normal kept its sign (as
 * on Euler's disk). Over 3.7 s after a stop it did +1.8e-4 J of work on the
 * spin, against -1.5e-4 J from the corners' springs (docs/contact.md,
 * friction). */
static void rocking_slip(const khzData *d, const khzContact *c, const double x0[3], const double x1[3],
                         double out[3]) {
  const double *n = c->normal;
  out[0] = out[1] = out[2] = 0;
  for (int s = 0; s < 2; s++) {
    int b = c->body[s];
    if (b <= 0) continue;
    const double *w = d->vtree + 6 * b, *x = s ? x1 : x0, *o = d->xcom + 3 * b;
    double wn = khzu_dot3(w, n), wt[3], r[3], v[3];
    for (int j = 0; j < 3; j++) wt[j] = w[j] - wn * n[j], r[j] = x[j] - o[j];
    khzu_cross(v, wt, r);
    double vn = khzu_dot3(v, n);
    for (int j = 0; j < 3; j++) out[j] += (s ? -1 : 1) * (v[j] - vn * n[j]);
  }
}

/* 1 if another resting pair touches a tree that pair c moves (a stack, a
 * robot on two feet). with_bottom: count only pairs whose bottom points are
 * chosen already (this pass's forces); else every pair with points, which
 * reads the pairs' phases only, fixed before the points are chosen, so that
 * the choice and the forces agree whatever the order of the pairs. */
static int shares_tree(const khzModel *m, const khzData *d, const khzContact *c, int with_bottom) {
  for (int s = 0; s < 2; s++) {
    int b = c->body[s];
    if (b <= 0 || khz_bodyStatic(m, b)) continue;
    int root = m->body_root[b];
    for (int i = 0; i < d->ncontact; i++) {
      const khzContact *o = d->contact + i;
      if (o == c || !(with_bottom ? o->nbottom : o->npoint) || d->pair[o->slot].phase != KHZ_PHASE_RESTING) continue;
      for (int t = 0; t < 2; t++)
        if (o->body[t] > 0 && m->body_root[o->body[t]] == root) return 1;
    }
  }
  return 0;
}

/* 1 if no other resting pair touches the trees that pair c moves: a lone
 * body (or robot) held by this one pair, the case rocking_slip was measured
 * on. Elsewhere (a stack, a robot on two feet) the damper at a contact also
 * damps the sway of what stands on it, and keeps the whole slip. */
static int lone_pair(const khzModel *m, const khzData *d, const khzContact *c) {
  return !shares_tree(m, d, c, 1);
}

/* contact.deepest_stage: under the deepest-point method a pair with the
 * scene's gains takes its one point again at every integrator stage. The
 * collision pass's deepest point holds the spring for the whole step; while
 * a box rocks from corner to corner that corner rises through the step, its
 * spring doing positive work as it extends, and the corner going down is
 * charged only from the next step, with its depth: 1/2 kp d^2 appeared at
 * every change of corner (two stacked boxes: +3.7 to +4.8 J/s from the
 * normal spring; docs/contact.md). The force of the deepest of the pair's
 * points at the stage's depths is the gradient of 1/2 kp (max_k d_k)^2,
 * which does no net work. By default (KHZ_DEEPEST_STAGE_STACKED) only where
 * other resting pairs hold the pair's bodies too (not lone_pair): there the
 * energy is passed on from pair to pair and grows (a lone box keeps a limit
 * cycle of 1.8e-4 J, two stacked boxes 0.008-0.03 J, five fell at 8 of 13
 * step sizes); a lone body keeps the paper's point of the step, whose
 * rocking is what the paper measures on V1 and V2 (its Fig. 1; on V2's gain
 * sweep the stage's point alone brought the deepest-point method within 4.3x
 * of the multi-point method, 30.5x with the step's). Automatic gains keep
 * the pass's point: their implicit rows are taken there, and friction at a
 * point that changes within a step stopped sliding boxes short (0.83-0.99). */
static int deepest_stage(const khzModel *m, const khzData *d, const khzContact *c) {
  int mode = m->contact.deepest_stage;
  if (d->contact_method != KHZ_CONTACT_DEEPEST || mode == KHZ_DEEPEST_STAGE_OFF || auto_gains(m, c)) return 0;
  return mode == KHZ_DEEPEST_STAGE_ALL || !lone_pair(m, d, c);
}

/* marks the pair's point deepest at the current stage as its one bottom
 * point (ties: the collision pass's) */
static void stage_deepest(const khzModel *m, const khzData *d, const khzContact *c, khzContactPoint *pts) {
  const double *n = c->normal;
  int best = (int)(c->deepest - c->point_adr);
  double dbest = -INFINITY;
  for (int k = 0; k < c->npoint; k++) {
    double p0[3], p1[3];
    surface_point(m, d, c, pts + k, 0, p0);
    surface_point(m, d, c, pts + k, 1, p1);
    double depth = pts[k].depth + (p1[0] - p0[0]) * n[0] + (p1[1] - p0[1]) * n[1] + (p1[2] - p0[2]) * n[2];
    if (depth > dbest || (depth == dbest && pts + k == d->cpoint + c->deepest)) dbest = depth, best = k;
  }
  for (int k = 0; k < c->npoint; k++) pts[k].bottom = k == best;
  pts[best].share = 1;
}

/* The deepest-point method's ties (contact.deepest_ties, automatic gains;
 * docs/contact.md, friction, "A face lying flat"). The paper's point is the
 * vertex of least signed distance; a face lying flat has several, equally
 * deep, and the choice among them is round-off's: a single force at a corner
 * has a moment about the centre of mass, the box turns until another corner
 * is the deepest, and it rocked from corner to corner and walked down a 20
 * degree slope (152-242 mm in 10 s with mu 0.5). Here the maximum is taken
 * smoothly over a window eps of depth: D = max over the simplex of p . d -
 * eps/2 |p|^2 + eps/2, whose maximiser p (the depths' sparsemax: p_k = (d_k -
 * t)_+ / eps, sum p = 1) is the gradient dD/dd. The pair's one force, the PID
 * bracket on D, acts at the p-weighted centroid of its points, which is the
 * gradient of 1/2 kp D^2: conservative, continuous, and exactly the deepest
 * point (D = d_max) wherever one point is deeper than the others by eps. A
 * face lying flat gets its centre; tilted by a few eps it leans to the
 * deeper side, so that the force can act where the weight's line meets the
 * face. eps is KHZ_DEEPEST_TIE times the automatic gains' depth g / omega^2
 * (54 um at 1 kHz): a cube's turning stiffness is then about 6 m g / eps
 * per unit of I / m, h times its frequency about 1 at h = 1 ms. The box on
 * the slope holds at twice that window too (0.047 mm in 10 s) but walks at
 * 4 and 8 times it (43 and 134 mm: it rocks, its upper corners leave the
 * ground, and a corner above it is not among the pair's points), and at
 * h = 5 ms (36 mm). Pairs with the
 * scene's gains keep the paper's vertex (V1, V2 and its gain sweep, the
 * stack). */
#define KHZ_DEEPEST_TIE 0.5
static double tie_window(const khzModel *m, const khzData *d, const khzContact *c) {
  if (d->contact_method != KHZ_CONTACT_DEEPEST || m->contact.deepest_ties != KHZ_DEEPEST_TIES_ON ||
      !auto_gains(m, c) || shares_tree(m, d, c, 0))
    return 0;
  double g = sqrt(khzu_dot3(m->gravity, m->gravity));
  return KHZ_DEEPEST_TIE * khz_penaltyAutoDepth(d, g > 0 ? g : 9.81);
}

/* the sparsemax of the depths x (n) with window eps: p_k = (x_k - t)_+ /
 * eps with t such that sum p = 1 (Martins & Astudillo 2016: the projection
 * of x / eps onto the simplex); t by the fixed point over the points above
 * it, which only shrinks, from the deepest alone */
static void tie_shares(const double *x, int n, double eps, double *p) {
  double xmax = -INFINITY;
  for (int k = 0; k < n; k++) xmax = fmax(xmax, x[k]);
  double t = xmax - eps;
  for (int it = 0; it <= n; it++) {
    double s = 0;
    int cnt = 0;
    for (int k = 0; k < n; k++)
      if (x[k] > t) s += x[k], cnt++;
    double tn = (s - eps) / cnt;
    if (tn == t) break;
    t = tn;
  }
  for (int k = 0; k < n; k++) p[k] = fmax((x[k] - t) / eps, 0);
}

/* the most points of a tie pair (the narrow phase's boxes and hulls give
 * far fewer); a pair with more keeps the paper's one point */
#define KHZ_TIE_POINTS 64

int khz_penaltyDeepestPoints(const khzModel *m, khzData *d, khzContact *c) {
  khzContactPoint *pts = d->cpoint + c->point_adr;
  int kd = (int)(c->deepest - c->point_adr);
  for (int k = 0; k < c->npoint; k++) pts[k].bottom = 0;
  pts[kd].bottom = 1, pts[kd].share = 1, c->nbottom = 1;
  if (m->contact.deepest_ties != KHZ_DEEPEST_TIES_ON || !auto_gains(m, c)) return KHZ_DEEPEST_VERTEX;
  double eps = tie_window(m, d, c);
  if (!(eps > 0) || c->npoint > KHZ_TIE_POINTS) return KHZ_DEEPEST_BAND;
  double x[KHZ_TIE_POINTS] = {0}, p[KHZ_TIE_POINTS];
  for (int k = 0; k < c->npoint; k++) x[k] = pts[k].depth;
  tie_shares(x, c->npoint, eps, p);
  c->nbottom = c->npoint;
  for (int k = 0; k < c->npoint; k++) pts[k].bottom = 1, pts[k].share = p[k];
  return KHZ_DEEPEST_SMOOTH;
}

/* pair_forces of a tie pair (tie_window): the shares p again at every
 * stage from the stage's depths (held at the pass's shares over the step,
 * the lever lagged the tilt by half a step and pumped it: the box walked
 * 115-251 mm), one PID force on D and one tangential spring-damper, the
 * shares' means of the points' stretches and slips, at the shares'
 * centroid (spread over the points by p: no couple about the normal, as one
 * point has none). The implicit part is one normal row at the pass's
 * centroid (rows), its force spread by the pass's shares (implicit_forces)
 * and acting at the points as they were at the step's start. */
static double tie_pair_forces(const khzModel *m, khzData *d, khzContact *c, int apply, double *slip_limit,
                              double (*slip)[3][3], implicit_row *rows, int *nrows, double eps) {
  khzPairState *ps = d->pair + c->slot;
  khzContactPoint *pts = d->cpoint + c->point_adr;
  const double *n = c->normal;
  int b0 = c->body[0], b1 = c->body[1], np = c->npoint < KHZ_TIE_POINTS ? c->npoint : KHZ_TIE_POINTS;
  double x[KHZ_TIE_POINTS][4][3] = {{{0}}}, dep[KHZ_TIE_POINTS] = {0}, vn[KHZ_TIE_POINTS], p[KHZ_TIE_POINTS];
  if (np < 1) return 0;
  for (int k = 0; k < np; k++) {
    side_point(m, d, c, pts + k, 0, x[k][0], x[k][2]);
    side_point(m, d, c, pts + k, 1, x[k][1], x[k][3]);
    dep[k] = pts[k].depth - ps->offset + (x[k][1][0] - x[k][0][0]) * n[0] + (x[k][1][1] - x[k][0][1]) * n[1] +
             (x[k][1][2] - x[k][0][2]) * n[2];
    vn[k] = (x[k][2][0] - x[k][3][0]) * n[0] + (x[k][2][1] - x[k][3][1]) * n[1] + (x[k][2][2] - x[k][3][2]) * n[2];
  }
  tie_shares(dep, np, eps, p);
  /* D and its rate dD/dt = sum p_k dd_k/dt (the shares are its gradient) */
  double D = 0.5 * eps, v = 0;
  for (int k = 0; k < np; k++) D += p[k] * dep[k] - 0.5 * eps * p[k] * p[k], v += p[k] * vn[k];
  double rc = D > 0 ? khzu_max0(c->kp * D - c->kv * v + c->ki * ps->integral) : 0;
  if (rows) {
    implicit_row *row = rows + (*nrows)++;
    row->point = (int)(c->deepest - c->point_adr);
    row->tie = 1;
    memset(row->x, 0, sizeof row->x);
    for (int k = 0; k < np; k++) {
      double p0[3], p1[3];
      surface_point(m, d, c, pts + k, 0, p0);
      surface_point(m, d, c, pts + k, 1, p1);
      for (int q = 0; q < 3; q++) row->x[q] += p[k] * 0.5 * (p0[q] + p1[q]);
    }
    row->depth = D, row->w = 1, row->fn = rc;
    return 0;
  }
  double Fimp = 0;
  for (int k = 0; k < np; k++) Fimp += pts[k].force_implicit;
  double Fi = stage_implicit(d, Fimp, rc);
  double delta_m[3] = {0, 0, 0}, vt_m[3] = {0, 0, 0};
  int lone = lone_pair(m, d, c);
  for (int k = 0; k < np; k++) {
    double m0[3], m1[3], vt[3], delta[3], vnk = 0;
    if (pts[k].round == 0) body_point(d, b0, pts[k].local[0], m0);
    else memcpy(m0, x[k][0], sizeof m0);
    if (pts[k].round == 1) body_point(d, b1, pts[k].local[1], m1);
    else memcpy(m1, x[k][1], sizeof m1);
    for (int q = 0; q < 3; q++) vt[q] = x[k][2][q] - x[k][3][q], vnk += vt[q] * n[q];
    for (int q = 0; q < 3; q++) vt[q] -= vnk * n[q];
    if (pts[k].round < 0 && lone) {
      double rock[3];
      rocking_slip(d, c, x[k][0], x[k][1], rock);
      for (int q = 0; q < 3; q++) vt[q] -= rock[q];
    }
    friction_stretch(d, c, ps, pts + k, m0, m1, delta);
    if (slip && k < KHZ_PAIR_ANCHORS) {
      memcpy(slip[k][0], m0, sizeof m0), memcpy(slip[k][1], m1, sizeof m1);
      memcpy(slip[k][2], delta, sizeof delta);
    }
    for (int q = 0; q < 3; q++) delta_m[q] += p[k] * delta[q], vt_m[q] += p[k] * vt[q];
  }
  double tscale = tangent_scale(m, c), kt = tscale * c->kp, bt = tscale * c->kv, Ft[3];
  if (slip_limit)
    for (int k = 0; k < np; k++) slip_limit[k] = c->mu * (rc + Fi) / kt;
  for (int q = 0; q < 3; q++) Ft[q] = -kt * delta_m[q] - bt * vt_m[q];
  const double *ti = c->force_implicit;
  double ftn = sqrt(khzu_dot3(Ft, Ft)), fmaxt = khzu_max0(c->mu * (rc + Fi) - khzu_norm3(ti));
  if (ftn > fmaxt) {
    double s = ftn > 0 ? fmaxt / ftn : 0;
    for (int q = 0; q < 3; q++) Ft[q] *= s;
  }
  for (int k = 0; k < np; k++) {
    /* the implicit part where the solve put it: the pass's shares at the
     * points' positions at the step's start */
    double pi = Fimp != 0 ? pts[k].force_implicit / Fimp : 0, Fe[3], Fm[3], Fk[3];
    for (int q = 0; q < 3; q++) Fe[q] = p[k] * (rc * n[q] + Ft[q]), Fk[q] = pi * (Fi * n[q] + ti[q]);
    for (int q = 0; q < 3; q++) pts[k].force[q] = Fe[q] + Fk[q];
    if (!apply) continue;
    if (p[k] > 0) {
      for (int q = 0; q < 3; q++) Fm[q] = -Fe[q];
      add_force(m, d, b0, x[k][0], Fe);
      add_force(m, d, b1, x[k][1], Fm);
    }
    if (pi != 0) {
      for (int q = 0; q < 3; q++) Fm[q] = -Fk[q];
      add_force(m, d, b0, pts[k].pos, Fk);
      add_force(m, d, b1, pts[k].pos, Fm);
    }
  }
  if (apply) rolling_torque(m, d, c, rc + Fi);
  return rc + Fi;
}

/* penalty and friction forces of one resting pair at the current forward
 * pass; apply = 1 adds them to d->fext. slip_limit (npoint, may be NULL):
 * the largest stretch the friction spring of each bottom point may keep;
 * slip (KHZ_PAIR_ANCHORS, may be NULL): the first bottom points' material
 * points m0, m1 (body_point of local[0], local[1]) and their friction
 * stretch, which khz_penaltyEnd's anchors take from here. */
static inline __attribute__((always_inline)) double pair_forces_in(const khzModel *m, khzData *d, khzContact *c,
                                                                     int apply, double *slip_limit,
                                                                     double (*slip)[3][3], implicit_row *rows,
                                                                     int *nrows) {
  double eps = c->nbottom > 1 ? tie_window(m, d, c) : 0; /* the deepest-point method's ties */
  if (eps > 0) return tie_pair_forces(m, d, c, apply, slip_limit, slip, rows, nrows, eps);
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
  double tscale = tangent_scale(m, c), ki = integral_implicit(d, c) ? 0 : c->ki; /* the explicit integral */
  /* deepest_stage: the stage's deepest point, and the integral term at its
   * steady state, a stiffness ki / (1 - gamma) on the stage depth. Eq. 2's
   * leaky sum of the deepest depth per step lags the rocking: on a depth
   * A cos(w n) its force does positive work over a cycle whenever the
   * period exceeds 3.8 steps (gamma = 0.85); with the stage's point alone
   * the 5-box stack still fell at 10 of 13 step sizes within 6 ulps of h,
   * and it did +2.4 to +2.6 J per 5 s there. Its steady state (a constant
   * load's) is the same. */
  int stage = deepest_stage(m, d, c);
  double kp_stage = c->kp + (stage ? c->ki / (1 - m->contact.gamma) : 0);
  if (stage) {
    ki = 0;
    if (!rows) stage_deepest(m, d, c, pts);
  }
  /* the first KHZ_FORCE_KEEP bottom points' surface points and velocities
   * (p0, p1, v0, v1), kept from the first pass for the forces' pass, and
   * every bottom point's index (the later passes visit only those) */
  double keep[KHZ_FORCE_KEEP][4][3];
  int cap = (int)(sizeof raw / sizeof raw[0]), nb = 0, bottom[KHZ_PAIR_ANCHORS * 16], rolls = 0;
  for (int k = 0; k < c->npoint && nb < cap; k++) {
    if (!pts[k].bottom) continue;
    rolls |= pts[k].round >= 0;
    double spare[4][3], (*x)[3] = nb < KHZ_FORCE_KEEP ? keep[nb] : spare; /* p0, p1, v0, v1 */
    side_point_in(m, d, c, pts + k, 0, x[0], x[2]);
    side_point_in(m, d, c, pts + k, 1, x[1], x[3]);
    const double *p0 = x[0], *p1 = x[1], *v0 = x[2], *v1 = x[3];
    double depth = pts[k].depth - ps->offset + (p1[0] - p0[0]) * n[0] + (p1[1] - p0[1]) * n[1] +
                   (p1[2] - p0[2]) * n[2];
    double vn = (v0[0] - v1[0]) * n[0] + (v0[1] - v1[1]) * n[1] + (v0[2] - v1[2]) * n[2];
    /* a point that has left the other body at this stage carries nothing: the
     * pair's integral term must not keep pushing a lifted corner upwards */
    raw[nb] = depth > 0 ? khzu_max0(kp_stage * depth - c->kv * vn + ki * ps->integral) : 0;
    wt[nb] = depth > 0 ? pts[k].share * depth : 0;
    r += wt[nb] * pts[k].weight;
    r_plain += wt[nb];
    bottom[nb++] = k;
  }
  /* every point with a spring lies on the face above it (weight 0): count
   * them by depth alone rather than drop the pair's force */
  int wedge = r > 0;
  if (!wedge) r = r_plain;
  if (rows) { /* the bottom points' springs, for the implicit part */
    for (int j = 0; j < nb; j++) {
      int k = bottom[j];
      implicit_row *row = rows + (*nrows)++;
      row->point = k;
      row->tie = 0;
      double p0[3], p1[3];
      surface_point(m, d, c, pts + k, 0, p0);
      surface_point(m, d, c, pts + k, 1, p1);
      for (int q = 0; q < 3; q++) row->x[q] = 0.5 * (p0[q] + p1[q]);
      row->depth = pts[k].depth - ps->offset + (p1[0] - p0[0]) * n[0] + (p1[1] - p0[1]) * n[1] +
                   (p1[2] - p0[2]) * n[2];
      row->w = r > 0 ? wt[j] * (wedge ? pts[k].weight : 1) / r : 0;
      row->fn = raw[j] * row->w;
    }
    return 0;
  }
  /* each point's share w of the pair's force (into wt) and the pair's
   * implicit tangential force, spread over the points in proportion to
   * their normal forces, so that it fits every point's cone when it fits
   * the pair's */
  double nsum = 0;
  for (int j = 0; j < nb; j++) {
    int k = bottom[j];
    wt[j] = r > 0 ? wt[j] * (wedge ? pts[k].weight : 1) / r : 0;
    double fn = raw[j] * wt[j];
    nsum += fn + stage_implicit(d, pts[k].force_implicit, fn);
  }
  for (int j = 0; j < nb; j++) {
    int k = bottom[j];
    double w = wt[j], fn = raw[j] * w;
    fn_sum += fn;
    /* |kt delta| <= mu fn with kt = scale kp w: the weight cancels; the
     * implicit part's normal force counts in the cone, per unit of the
     * point's weight as raw does */
    double fi = stage_implicit(d, pts[k].force_implicit, fn), fiw = w > 0 ? fi / w : 0, ti[3];
    khzu_scl3(ti, c->force_implicit, nsum > 0 ? (fn + fi) / nsum : c->nbottom ? 1.0 / c->nbottom : 0);
    fn_sum += fi;
    if (slip_limit) slip_limit[k] = c->mu * (raw[j] + fiw) / (tscale * c->kp);
    double again[4][3], vt[3], F[3], m0[3], m1[3];
    const double(*x)[3] = again;
    if (j < KHZ_FORCE_KEEP) {
      x = keep[j];
    } else {
      side_point(m, d, c, pts + k, 0, again[0], again[2]);
      side_point(m, d, c, pts + k, 1, again[1], again[3]);
    }
    const double *p0 = x[0], *p1 = x[1], *v0 = x[2], *v1 = x[3];
    /* the material points, for the slip: a side's surface point is its
     * material point (the same body_point) unless that side is round */
    if (pts[k].round == 0)
      body_point(d, b0, pts[k].local[0], m0);
    else
      memcpy(m0, p0, sizeof m0);
    if (pts[k].round == 1)
      body_point(d, b1, pts[k].local[1], m1);
    else
      memcpy(m1, p1, sizeof m1);
    double vn = 0;
    for (int q = 0; q < 3; q++) vt[q] = v0[q] - v1[q], vn += vt[q] * n[q];
    for (int q = 0; q < 3; q++) vt[q] -= vn * n[q];
    if (d->contact_method == KHZ_CONTACT_DEEPEST && pts[k].round < 0 && lone_pair(m, d, c)) {
      /* the deepest-point method's corner of a lone body: its damper
       * takes the slip without the bodies' rocking (rocking_slip); the
       * spring's stretch still follows the material points */
      double rock[3];
      rocking_slip(d, c, p0, p1, rock);
      for (int q = 0; q < 3; q++) vt[q] -= rock[q];
    }

    /* friction: spring-damper to the sticking anchor, saturated at mu fn */
    double kt = tscale * c->kp * w, bt = tscale * c->kv * w;
    double Ft[3], delta[3];
    friction_stretch(d, c, ps, pts + k, m0, m1, delta);
    if (slip && j < KHZ_PAIR_ANCHORS) {
      memcpy(slip[j][0], m0, sizeof m0), memcpy(slip[j][1], m1, sizeof m1);
      memcpy(slip[j][2], delta, sizeof delta);
    }
    for (int q = 0; q < 3; q++) Ft[q] = -kt * delta[q] - bt * vt[q];
    /* the cone holds the implicit tangential force too */
    double ftn = sqrt(khzu_dot3(Ft, Ft)), fmaxt = khzu_max0(c->mu * (fn + fi) - khzu_norm3(ti));
    if (ftn > fmaxt) {
      double s = ftn > 0 ? fmaxt / ftn : 0;
      for (int q = 0; q < 3; q++) Ft[q] *= s;
    }
    for (int q = 0; q < 3; q++) F[q] = (fn + fi) * n[q] + Ft[q] + ti[q];
    memcpy(pts[k].force, F, sizeof F);
    /* With automatic gains a point on a curved surface takes its force on
     * both bodies where that surface faces the other one (its line of
     * action through the centre of curvature, as between rigid bodies),
     * not at the flat side's material point, which turns with its body
     * over the stages: a compressive force F there is a follower load, a
     * torque F a per radian of tilt (a the point's height over the flat
     * body's centre) that grows the tilt, explicit and unseen by the
     * implicit solve. A 23.5 g box pressed by 940 N between two spheres
     * (I = 2.3e-5 kg m^2: h sqrt(2 a F / I) = 1.9) tilted 5.8 times faster
     * each step and went non-finite within 20 ms. Scenes with their own
     * gains keep the paper's points. */
    int auto_pair = pts[k].round >= 0 && auto_gains(m, c);
    const double *q0 = auto_pair ? (pts[k].round ? p1 : p0) : p0, *q1 = auto_pair ? q0 : p1;
    /* A cylinder's rim point slides along the rim as the cylinder tilts
     * its axis (its u is the normal across the axis): a lying cylinder
     * rocking by psi moves its contact points r psi along the axis (the
     * ground's one way, the load's the other), and the loads F1, F2 of a
     * squeezed one turn into a torque r (F1 + F2) per radian that grows
     * the rocking, explicit and unseen by the solve (a 12.6 g cylinder
     * under a 65 kg box, 1.6 kN on each line: h sqrt(r (F1 + F2) / I) =
     * 4.6, non-finite within 20 ms). Its implicit force, as a vertex's,
     * acts where the row's Delassus column was taken. */
    int rim = auto_pair && m->geom_type[c->geom[pts[k].round]] == KHZ_GEOM_CYLINDER;
    /* The implicit tangential force acts where the solve took its rows
     * (c->implicit_at, their centroid at the step's start), not spread over
     * the points: there its moment about a light body's centre differed
     * from the solve's by the share-weighted mean of the points less their
     * centroid, and a 12.6 g cylinder under 65 kg (bench/untuned_random.py
     * seed 2, 13), whose implicit normal and tangential moments were 74 and
     * -88 N m, took the 14 N m left over unseen (I = 1.9e-6 kg m^2: 7e3 rad/s
     * in a step). Under the multi-point method; the share still counts in
     * each point's cone and its reported force. */
    double tk[3] = {ti[0], ti[1], ti[2]};
    int apart = apply && m->contact.joint_friction && d->contact_method != KHZ_CONTACT_DEEPEST &&
                (ti[0] != 0 || ti[1] != 0 || ti[2] != 0);
    if (apart) {
      double tm[3] = {-ti[0], -ti[1], -ti[2]};
      add_force(m, d, b0, c->implicit_at, ti);
      add_force(m, d, b1, c->implicit_at, tm);
      tk[0] = tk[1] = tk[2] = 0;
    }
    if (apply && fi != 0 && (pts[k].round < 0 || rim)) {
      /* The implicit force of a vertex or an edge crossing (its normal
       * force and its share of the pair's tangential one) acts where the
       * solve put it (the row's Delassus column was taken there):
       * at the point as it was at the step's start, not at the material
       * points, which turn with the bodies over the stages. At those a
       * constant compressive force F on a body of half height a turned
       * with it, a torque 2 a F per radian of tilt that grows the tilt (a
       * follower load), explicit and unseen by the solve: a 10 g cylinder
       * under 100 kg (F ~ 4 kN, I = 1.5e-5 kg m^2: h sqrt(2 a F / I) ~ 5)
       * tilted 10-40 times faster every step until it was thrown out. A
       * point on a sphere or a capsule does not turn with its body (it
       * stays facing the other body, surface_point) and keeps it. The normal
       * force alone moved (tried) left the tangential share at the material
       * point, and V2's 10 g block under off-centre loads then left the
       * ground for 219 unforced steps (bench/untuned.py; 0 before). */
      double Fe[3], Fm[3], Fi[3];
      for (int q = 0; q < 3; q++) Fe[q] = fn * n[q] + Ft[q], Fi[q] = fi * n[q] + tk[q];
      for (int q = 0; q < 3; q++) Fm[q] = -Fe[q];
      add_force(m, d, b0, q0, Fe);
      add_force(m, d, b1, q1, Fm);
      for (int q = 0; q < 3; q++) Fm[q] = -Fi[q];
      add_force(m, d, b0, pts[k].pos, Fi);
      add_force(m, d, b1, pts[k].pos, Fm);
    } else if (apply) {
      /* the force less the tangential share applied apart */
      double Fa[3] = {(fn + fi) * n[0] + Ft[0], (fn + fi) * n[1] + Ft[1], (fn + fi) * n[2] + Ft[2]};
      const double *Fp = apart ? Fa : F;
      double Fm[3] = {-Fp[0], -Fp[1], -Fp[2]};
      add_force_in(m, d, b0, q0, Fp);
      add_force_in(m, d, b1, q1, Fm);
    }
  }
  /* rolling_round from the pass above when it saw every point */
  if (apply) rolling_torque_in(m, d, c, fn_sum, nb < cap ? rolls : -1);
  return fn_sum;
}

/* pair_forces compiled for AVX too, as body_limits: the same bits */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static double pair_forces_avx(const khzModel *m, khzData *d, khzContact *c,
                                                             int apply, double *slip_limit, double (*slip)[3][3],
                                                             implicit_row *rows, int *nrows) {
  return pair_forces_in(m, d, c, apply, slip_limit, slip, rows, nrows);
}
#endif

static double pair_forces(const khzModel *m, khzData *d, khzContact *c, int apply, double *slip_limit,
                          double (*slip)[3][3], implicit_row *rows, int *nrows) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) return pair_forces_avx(m, d, c, apply, slip_limit, slip, rows, nrows);
#endif
  return pair_forces_in(m, d, c, apply, slip_limit, slip, rows, nrows);
}

/* the stage's forces of every resting pair. On AVX the loop is built for
 * AVX with pair_forces_in inline, its arguments constant (apply, no slip,
 * no rows): one dispatch per stage, not one call and dispatch per pair; the
 * same operations, so the same bits */
static inline __attribute__((always_inline)) void penalty_forces_in(const khzModel *m, khzData *d) {
  for (int i = 0; i < d->ncontact; i++) {
    khzContact *c = d->contact + i;
    /* nbottom first: the LCP method's contact lists have none, and the LP-depth
     * gap's pairs no pair slot (slot -1) */
    if (c->nbottom && d->pair[c->slot].phase == KHZ_PHASE_RESTING)
      pair_forces_in(m, d, c, 1, NULL, NULL, NULL, NULL);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void penalty_forces_avx(const khzModel *m, khzData *d) {
  penalty_forces_in(m, d);
}
#endif

void khz_penaltyForces(const khzModel *m, khzData *d) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) {
    penalty_forces_avx(m, d);
    return;
  }
#endif
  penalty_forces_in(m, d);
}

/* a pair's friction anchors as khz_penaltyEnd builds them (the fields of
 * khzPairState it rewrites) */
typedef struct {
  int nanchor;
  int anchor_feature[KHZ_PAIR_ANCHORS];
  double anchor_pos[KHZ_PAIR_ANCHORS][3];
  double anchor[KHZ_PAIR_ANCHORS][3];
  int anchor_idle[KHZ_PAIR_ANCHORS];
} pair_anchors;

/* khz_penaltyEnd's body: on AVX built for AVX with pair_forces_in inline
 * (apply 0, no rows), as penalty_forces_in */
static inline __attribute__((always_inline)) void penalty_end_in(const khzModel *m, khzData *d) {
  for (int i = 0; i < d->ncontact; i++) {
    khzContact *c = d->contact + i;
    khzPairState *ps = d->pair + c->slot;
    khzContactPoint *pts = d->cpoint + c->point_adr;

    /* integral term: I <- gamma I + max_y d(y, t) */
    double dmax = c->npoint ? d->cpoint[c->deepest].depth : 0;
    ps->integral = m->contact.gamma * ps->integral + fmax(dmax - ps->offset, 0);
    ps->offset = fmax(ps->offset * exp(-d->timestep / KHZ_IMPACT_RELAX),
                      ps->offset - KHZ_RELAX_SPEED * d->timestep);
    if (ps->phase != KHZ_PHASE_RESTING || !c->nbottom) {
      ps->nanchor = 0;
      rolling_forget(m, d, c);
      continue;
    }

    /* friction anchors at the final state: keep or create one per bottom
     * point; an anchor whose spring exceeds the cone slips to its edge */
    size_t mark = khz_stackMark(d);
    double *slip_limit = khz_stackAlloc(d, (size_t)c->npoint * sizeof(double));
    if (!slip_limit) { /* no scratch (counted by khz_stackAlloc): anchors are forgotten */
      ps->nanchor = 0;
      rolling_forget(m, d, c);
      continue;
    }
    /* the bottom points' material points and friction stretch at the final
     * state, as pair_forces has just formed them (its m0, m1: the same
     * body_point whether or not a side is round) */
    double slip[KHZ_PAIR_ANCHORS][3][3];
    ps->fn = pair_forces_in(m, d, c, 0, slip_limit, slip, NULL, NULL);
    rolling_anchor(m, d, c, ps->fn);
    int deepest = d->contact_method == KHZ_CONTACT_DEEPEST;

    /* the new anchors are built apart (ps is read while they are) and
     * written back over the first next.nanchor entries only: the rest of
     * the 1.9 kB state keeps its bytes, as a copy of the whole would, but
     * only the lines in use are read and written */
    pair_anchors next;
    next.nanchor = 0;
    for (int k = 0, jb = 0; k < c->npoint && next.nanchor < KHZ_PAIR_ANCHORS; k++) {
      if (!pts[k].bottom) continue;
      const double *p0 = slip[jb][0], *p1 = slip[jb][1];
      double *delta = slip[jb][2], rel[3];
      jb++;
      double lim = slip_limit[k];
      double dl = sqrt(khzu_dot3(delta, delta));
      if (dl > lim) { /* the spring exceeds the cone: the anchor slides to its edge */
        double sc = dl > 0 ? lim / dl : 0;
        for (int j = 0; j < 3; j++) delta[j] *= sc;
      }
      const double *R1 = d->xrot + 9 * c->body[1], *x1 = d->xpos + 3 * c->body[1];
      khzu_mulMatTVec3(next.anchor[next.nanchor], R1, delta);
      /* the deepest-point method's corners: where the corner is now (below) */
      const double *at = deepest && pts[k].round < 0 ? p0 : p1;
      for (int j = 0; j < 3; j++) rel[j] = at[j] - x1[j];
      khzu_mulMatTVec3(next.anchor_pos[next.nanchor], R1, rel);
      next.anchor_feature[next.nanchor] = pts[k].feature;
      next.anchor_idle[next.nanchor] = dl > lim ? -1 : 0;
      next.nanchor++;
    }
    /* The deepest-point method puts a box on one corner at a time, and the
     * deepest corner goes round the four every few steps while the box
     * rocks. A corner that is no longer the deepest keeps its spring while
     * it stays inside the other body (a vertex, a material point: a point
     * on a curved surface travels as the body rolls), so that when it is
     * the deepest again its spring pulls it back to where it stuck; started
     * afresh at every change of corner, nothing remembered where the box
     * stopped, and it walked. A corner that was sliding when it was last the
     * deepest starts afresh: its stretch at the cone's edge, kept, pulled
     * the box back after it stopped. */
    for (int a = 0; deepest && a < ps->nanchor && next.nanchor < KHZ_PAIR_ANCHORS; a++) {
      int f = ps->anchor_feature[a], keep = 0;
      if (ps->anchor_idle[a] < 0) continue; /* it was sliding: nothing to remember */
      for (int k = 0; k < c->npoint && !keep; k++) keep = pts[k].feature == f && pts[k].round < 0;
      for (int q = 0; q < next.nanchor && keep; q++) keep = next.anchor_feature[q] != f;
      if (!keep) continue;
      memcpy(next.anchor[next.nanchor], ps->anchor[a], sizeof next.anchor[0]);
      memcpy(next.anchor_pos[next.nanchor], ps->anchor_pos[a], sizeof next.anchor_pos[0]);
      next.anchor_feature[next.nanchor] = f;
      next.anchor_idle[next.nanchor] = 1;
      next.nanchor++;
    }
    int na = next.nanchor;
    ps->nanchor = na;
    memcpy(ps->anchor_feature, next.anchor_feature, (size_t)na * sizeof next.anchor_feature[0]);
    memcpy(ps->anchor_pos, next.anchor_pos, (size_t)na * sizeof next.anchor_pos[0]);
    memcpy(ps->anchor, next.anchor, (size_t)na * sizeof next.anchor[0]);
    memcpy(ps->anchor_idle, next.anchor_idle, (size_t)na * sizeof next.anchor_idle[0]);
    khz_stackFree(d, mark);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void penalty_end_avx(const khzModel *m, khzData *d) { penalty_end_in(m, d); }
#endif

void khz_penaltyEnd(const khzModel *m, khzData *d) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) {
    penalty_end_avx(m, d);
    return;
  }
#endif
  penalty_end_in(m, d);
}
