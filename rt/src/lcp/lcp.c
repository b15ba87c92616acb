/* lcp.c — Stewart & Trinkle, "An implicit time-stepping scheme for rigid
 * body dynamics with inelastic collisions and Coulomb friction" (1996):
 * the multi-contact scheme of sec. 3.4, eqs. (27)-(29), in generalised
 * coordinates.
 *
 *   M (v+ - v) = N c_n + D beta + h k(q, v)           (impulses over the step)
 *   q+ = q + h v+
 *   0 <= phi/h + N^T v+            _|_  c_n >= 0      (non-penetration)
 *   0 <= lambda E + D^T v+         _|_  beta >= 0     (k friction directions)
 *   0 <= mu c_n - E^T beta         _|_  lambda >= 0   (the cone; lambda ~ slip)
 *
 * M is CRBA's joint-space mass matrix, N and D the contact normals and the k
 * directions d_j = cos(2 pi j / k) t1 + sin(2 pi j / k) t2 mapped through the
 * contact points' Jacobians (relative velocity of body[0] against body[1]).
 * The points of one pair (a patch) share one cone: its k directions at the
 * patch's centre, and for 2 or more points the spin about the normal both
 * ways at a lever r (the points' mean distance from the centre), so that
 * E' beta + spin <= mu sum c_n (a pyramid over force and torsion, as
 * MuJoCo's pyramidal cone with torsional friction). One point is the
 * paper's cone exactly.
 * Rolling and torsional friction (the scene's rolling_friction mu_r and
 * torsional_friction mu_t, as MuJoCo's condim 6 with a pyramidal cone): a
 * pair of one point gets the spin about its normal both ways, a pair of one
 * or two points the rolling about its tangents (one point: the k directions;
 * two: the line's axis both ways), each set with its own cone row
 *   0 <= mu_t sum c_n - sum beta_t  _|_  lambda_t >= 0   (torque impulses)
 *   0 <= mu_r sum c_n - sum beta_r  _|_  lambda_r >= 0
 * and rows a'(w_0 - w_1) (a the axis, w the bodies' angular velocities);
 * a patch of 3 or more points resists spin and rolling through its points.
 * v+ = v_free + M^-1 (N c_n + D beta) with v_free = v + h M^-1 k (one ABA
 * pass) eliminates v+: the Schur complement of eq. (29),
 *
 *   [ N'AN  N'AD  0 ] [c_n ]   [ phi/h + N'(v_free - v_ref) ]
 *   [ D'AN  D'AD  E ] [beta] + [ D' v_free                  ]  = w >= 0 _|_ z >= 0
 *   [ mu    -E'   0 ] [lam ]   [ 0                          ]
 *
 * with A = M^-1, solved by Lemke's algorithm (lemke.c). M is block diagonal
 * over the kinematic trees; only the trees the contacts touch are factored.
 *
 * Active set (the paper's sec. 4): the contacts violated at the predicted
 * positions q + h v_free are found by the collision pass there; their gap
 * phi is the depth found there (with v_ref = v_free, phi/h + N'(v+ - v_free)
 * is the gap at q+ to first order). After the solve the collision pass runs
 * at q+; pairs found there and not yet active join (gap at q+, v_ref = that
 * solve's v+) and the LCP is solved again, up to KHZ_LCP_PASSES times.
 * Contacts active at the previous step and still pressed by gravity or the
 * controls are violated at q + h v_free, so the prediction holds them; a
 * contact that the free motion separates needs no impulse.
 *
 * Impacts are inelastic (the paper's model): the normal velocity after an
 * impact is zero; the scene's restitution is not used by this method.
 * Departures from the paper: contacts come to rest KHZ_LCP_SKIN deep, not
 * exactly touching; a contact deeper than that at the step's start is
 * pushed back at KHZ_LCP_DEEP_GAIN of its excess per step and at
 * KHZ_LCP_PUSHOUT at most, not within one step; friction per patch (above);
 * with contact.lcp_split_impacts, a step in which an impact's contact closes is cut at that time and run as
 * two substeps of the scheme, so that the impact is taken whole in one LCP
 * (closing_time, substep: Table I's velocities after an impact converge).
 *
 * Gap function of polytope pairs (contact.lcp_gap): the narrow phase's
 * points at their depths (the default), or Anitescu & Hart's LP penetration
 * depth with its nearly active corner-on-face units (lpgap.h, lp_pairs): a
 * signed gap, so such pairs join within KHZ_LCP_LP_REACH of touching, come
 * to rest at a gap of 0 (no skin), and the re-check at q+ also adds and
 * linearises again the units of pairs already in the LCP.
 */
#include "lcp.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "collision/collision.h"
#include "blocks.h"
#include "dynamics.h"
#include "lemke.h"
#include "lpgap.h"
#include "spatial.h"

/* a pair found at q+ joins the active set when deeper than this (m) */
#define KHZ_LCP_RECHECK_DEPTH (KHZ_LCP_SKIN + 1e-6)
/* speed (m/s) at which a penetration present at the step's start is
 * removed (the paper's gap term removes it in one step: a body started
 * 0.1 m deep would leave at 100 m/s) */
#define KHZ_LCP_PUSHOUT 0.2
/* a contact deeper than KHZ_LCP_SKIN at the step's start is pushed back at
 * this fraction of its excess per step (Baumgarte's gain): pushed back in
 * one step, as the gap term of the paper does, the push-out speed stayed
 * in the next steps and the boxes of a stack rocked in the skin (|qd| 0.5
 * in the 10 s stack's second half; 0.1: 1.9e-5) */
#ifndef KHZ_LCP_DEEP_GAIN
#define KHZ_LCP_DEEP_GAIN 0.1
#endif
/* capacity of contact points in one LCP: one contact island (the V3
 * pile's largest holds up to 55 points at rest) */
#define KHZ_LCP_POINTS_MAX 64

typedef struct lcpPoint {
  int body[2], geom[2];
  double local[2][3]; /* the point in body[0]'s and body[1]'s frames */
  double normal[3];   /* world, toward body[0] */
  double phi;         /* gap at the reference positions (-depth) */
  double skin;        /* the depth it comes to rest at: KHZ_LCP_SKIN, 0 for the LP-depth gap's */
  int lp;             /* 1: a unit of the LP-depth gap (lp_pairs) */
  double pos[3];      /* where it was found (world), its depth and normal there: the */
  double depth_found; /* LP-depth gap's report (a later pass may linearise phi and the */
  double normal_found[3]; /* normal again) */
  double mu;
  int ref;            /* reference velocity: 0 = v_free, p = the v+ of pass p */
  int cpoint;         /* the point in the saved contact list, -1 for re-check points */
  double rho[3];      /* offset from its patch's centre in the contact plane (world) */
} lcpPoint;

/* Warm start (beyond the paper): the complementary basis each pair's rows
 * ended in, kept in d->lcp_warm from one LCP step to the next. Bits of
 * `basic`: z basic for normal i (bit i, i < KHZ_LCP_PAIR_POINTS), friction
 * column j (bit 4 + j: the k directions, then the two torsion columns), the
 * cone's lambda (bit 15), the spin and rolling columns (bit 16 + j, up to
 * k + 2 of them), the spin cone's and the rolling cone's lambda (26, 27). */
typedef struct lcpWarmPair {
  int geom[2], np;
  uint32_t basic;
  float local[KHZ_LCP_PAIR_POINTS][3]; /* the points in body[0]'s frame: a pair's points
                                          come in depth order, which flips at rest */
} lcpWarmPair;
#define LCP_WARM_CONE (1u << 15)
#define LCP_WARM_EXTRA 16
#define LCP_WARM_TCONE (1u << 26)
#define LCP_WARM_RCONE (1u << 27)

typedef struct lcpWarm {
  double next_time; /* d->time at which the next step may use it (the record's step's end) */
  int npair;
  lcpWarmPair pair[];
} lcpWarm;
/* the record is a state field of KHZ_LCP_WARM_BYTES(m) bytes (khz.h): saved,
 * restored, copied and hashed with the state, so that a state restored into
 * another data steps as the original does. Entries past npair are zero, and
 * no record is all zero (the hash leaves an all-zero field out) */
_Static_assert(sizeof(lcpWarmPair) == 64 && sizeof(lcpWarm) <= 16,
               "lcpWarm's layout against KHZ_LCP_WARM_BYTES");

typedef struct lcpWork {
  int nv, k, npmax, nmax, nrowmax, np, na, ntree;
  int ptmax, nall; /* points of the whole step (every pair's), and how many */
  double *vfree, *vref, *vplus, *qplus, *tau, *qdd, *jac0, *jac1;
  int *act;       /* nv: active index of a global dof, -1 */
  int *loc;       /* nv: index inside its tree's block */
  int *dof;       /* nv: global dof of an active index */
  int *tree_root, *tree_off, *tree_n, *tree_moff; /* per active tree */
  double *Mb;     /* the trees' mass-matrix blocks, then their Cholesky factors */
  double *J, *Y;  /* nrowmax x nv: rows of N' and D' (active dofs), A times them */
  int *row_tree;  /* 2 per row: active tree index of body[0], body[1] (-1: none) */
  double *A, *b, *z, *w, *bp, *zp;
  int np_last; /* points of the last pass solved (their solution in zlast) */
  /* one island's patches (a pair's points): points pstart[g] .. pstart[g+1]-1,
   * friction columns pfoff[g] .. + pfk[g]-1 (k directions at the patch's
   * centre, then the two torsion columns of a patch of 2 or more points),
   * torsion lever pradius[g]; nr rows with a Jacobian, n in the LCP */
  int npatch, nr, n;
  int *pstart, *pfoff, *pfk;
  /* each patch's spin columns (2 or 0) and rolling columns (k, 2 or 0) after
   * its pfk, and its first cone row (from nr: the Coulomb cone's, then the
   * spin cone's and the rolling cone's where it has those columns) */
  int *ptk, *prk, *pcone;
  double mu_t, mu_r; /* the scene's torsional and rolling friction (m) */
  double *pradius;
  double *trow; /* nv: a Jacobian row (the torsion's) */
  lcpPoint *all;  /* ptmax: the step's points; pt (npmax) is one island's copy */
  double *zall, *zlast; /* ptmax x (k + 2): each point's c_n and, from [1], its
                         * share of the patch's friction force (world, 3) */
  double *vtry;   /* nv: v+ of the pass being solved */
  int *uf;        /* nbody: union-find over the trees (root body -> parent) */
  int *isl_of_root; /* nbody: island index of a union-find root, -1 */
  int *pisl;      /* ptmax: island index of each point */
  int *iorder, *istart, nisl; /* the points island by island, each island's first */
  int timed_out; /* a solve stopped at d->lcp_time_limit */
  /* restitution (contact.lcp_restitution): the coefficient (0: inelastic),
   * the approach speed above which a contact impacts, the velocity at the
   * step's start */
  double restitution, impact_speed;
  double h_step; /* the whole step's h (substeps: closing_time) */
  const double *v0;
  khzLemke lk;
  /* warm start: the last step's record (NULL: none that fits this step),
   * this step's record being written (npair_max pairs), a patch's entry in
   * the old one, the guessed and final bases of an island */
  const lcpWarm *warm_old;
  lcpWarmPair *warm_new;
  int warm_nnew;
  unsigned char *zbasic;
  lcpPoint *pt;
  /* the pair slots in use at the step's start (save_slot[i] holds save_pair[i]), put back
   * when the step falls back; a free slot is all zero with geom -1, -1 (pairs.c) */
  khzPairState *save_pair;
  int *save_slot, save_n;
  /* the same at a substep's start (put back when it splits), and q, qd at
   * the step's start (put back when a later substep fails) */
  khzPairState *sub_pair;
  int *sub_slot, sub_n;
  double *q_start, *qd_start;
  double *vn; /* 3 ptmax: each point's normal velocity at the substep's start, in the
               * free motion and in the pass's v+ (closing_time) */
  khzContact *save_c;
  khzContactPoint *save_p;
  int save_nc, save_np;
  /* the LP-depth gap (contact.lcp_gap = KHZ_LCP_GAP_LPDEPTH): its LP and
   * units, the geom frames and reach-widened bounds, the candidate pairs */
  int lp_on, lp_cap;
  khzLpGapWork lpg;
  double *lp_frame, *lp_aabb;
  uint64_t *lp_keys;
} lcpWork;

static khzLcpObserver observer;
static void *observer_user;

void khz_lcpSetObserver(khzLcpObserver fn, void *user) {
  observer = fn;
  observer_user = user;
}

/* warm start on (default) or off, and the counters benchmarks read; the
 * counters move only while an observer is set (a bench's, not the loop's) */
static int warm_enabled = 1;
static khzLcpCounters counters;

void khz_lcpSetWarmStart(int on) { warm_enabled = on != 0; }

khzLcpCounters khz_lcpGetCounters(void) { return counters; }

void khz_lcpResetCounters(void) { memset(&counters, 0, sizeof counters); }

int khz_lcpDirections(const khzModel *m) {
  return m->contact.friction_directions == 8 ? 8 : 4;
}

int khz_lcpMaxPoints(const khzModel *m) {
  int cap = KHZ_LCP_PAIR_POINTS * m->npair_max;
  return cap < KHZ_LCP_POINTS_MAX ? cap : KHZ_LCP_POINTS_MAX;
}

/* the sizes of every scratch array, in the order lcp_carve takes them */
#define LCP_ARRAYS(X, W, m)                                                        \
  X(W->vfree, double, (m)->nv)                                                      \
  X(W->vref, double, (size_t)KHZ_LCP_PASSES *(m)->nv)                               \
  X(W->vplus, double, (m)->nv)                                                      \
  X(W->qplus, double, (m)->nq)                                                      \
  X(W->tau, double, (m)->nv)                                                        \
  X(W->qdd, double, (m)->nv)                                                        \
  X(W->jac0, double, 3 * (size_t)(m)->nv)                                           \
  X(W->jac1, double, 3 * (size_t)(m)->nv)                                           \
  X(W->act, int, (m)->nv)                                                           \
  X(W->loc, int, (m)->nv)                                                           \
  X(W->dof, int, (m)->nv)                                                           \
  X(W->tree_root, int, (m)->nbody)                                                  \
  X(W->tree_off, int, (m)->nbody)                                                   \
  X(W->tree_n, int, (m)->nbody)                                                     \
  X(W->tree_moff, int, (m)->nbody)                                                  \
  X(W->Mb, double, (size_t)(m)->nv *(m)->nv)                                        \
  X(W->J, double, (size_t)W->nrowmax *(m)->nv)                                      \
  X(W->Y, double, (size_t)W->nrowmax *(m)->nv)                                      \
  X(W->row_tree, int, 2 * (size_t)W->nrowmax)                                       \
  X(W->A, double, (size_t)W->nmax *W->nmax)                                         \
  X(W->b, double, W->nmax)                                                          \
  X(W->z, double, W->nmax)                                                          \
  X(W->w, double, W->nmax)                                                          \
  X(W->bp, double, W->nmax)                                                         \
  X(W->zp, double, W->nmax)                                                         \
  X(W->pt, lcpPoint, W->npmax)                                                      \
  X(W->pstart, int, (size_t)W->npmax + 1)                                           \
  X(W->pfoff, int, W->npmax)                                                        \
  X(W->pfk, int, W->npmax)                                                          \
  X(W->ptk, int, W->npmax)                                                          \
  X(W->prk, int, W->npmax)                                                          \
  X(W->pcone, int, W->npmax)                                                        \
  X(W->pradius, double, W->npmax)                                                   \
  X(W->trow, double, (m)->nv)                                                       \
  X(W->all, lcpPoint, W->ptmax)                                                     \
  X(W->zall, double, (size_t)W->ptmax *(W->k + 2))                                  \
  X(W->zlast, double, (size_t)W->ptmax *(W->k + 2))                                 \
  X(W->vtry, double, (m)->nv)                                                       \
  X(W->uf, int, (m)->nbody)                                                         \
  X(W->isl_of_root, int, (m)->nbody)                                                \
  X(W->pisl, int, W->ptmax)                                                         \
  X(W->iorder, int, W->ptmax)                                                       \
  X(W->istart, int, (size_t)W->ptmax + 1)                                           \
  X(W->warm_new, lcpWarmPair, (m)->npair_max)                                      \
  X(W->zbasic, unsigned char, W->nmax)                                              \
  X(W->save_pair, khzPairState, (m)->npair_max)                                     \
  X(W->save_slot, int, (m)->npair_max)                                              \
  X(W->sub_pair, khzPairState, (m)->npair_max)                                      \
  X(W->sub_slot, int, (m)->npair_max)                                               \
  X(W->q_start, double, (m)->nq)                                                    \
  X(W->qd_start, double, (m)->nv)                                                   \
  X(W->vn, double, 3 * (size_t)W->ptmax)                                            \
  X(W->save_c, khzContact, (m)->npair_max)                                          \
  X(W->save_p, khzContactPoint, (size_t)(m)->npair_max *(m)->max_points)

static void lcp_sizes(const khzModel *m, lcpWork *W) {
  W->nv = m->nv;
  W->k = khz_lcpDirections(m);
  W->ptmax = KHZ_LCP_PAIR_POINTS * m->npair_max;
  W->mu_t = m->contact.torsional > 0 ? m->contact.torsional : 0;
  W->mu_r = m->contact.rolling > 0 ? m->contact.rolling : 0;
  W->lp_on = m->contact.lcp_gap == KHZ_LCP_GAP_LPDEPTH && m->collision != NULL;
  W->lp_cap = W->lp_on ? khz_collisionPairCap(m) : 0;
  /* an island's LCP: as large as khz_lcpMaxPoints one-point pairs make it
   * (k + 2 rows each, 3 more for spin, k + 1 more for rolling); pairs of
   * several points share a cone (p + k + 3 per pair), so more of their
   * points fit: any number up to one row each */
  int spin = W->mu_t > 0, roll = W->mu_r > 0;
  W->nrowmax = khz_lcpMaxPoints(m) * (W->k + 1 + 2 * spin + W->k * roll);
  W->nmax = khz_lcpMaxPoints(m) * (W->k + 2 + 3 * spin + (W->k + 1) * roll);
  W->npmax = W->ptmax < W->nmax ? W->ptmax : W->nmax;
}

size_t khz_lcpStackBytes(const khzModel *m) {
  lcpWork w, *W = &w;
  lcp_sizes(m, W);
  size_t bytes = khz_lemkeBytes(W->nmax) + 64;
#define LCP_SIZE(ptr, type, count) bytes += (size_t)(count) * sizeof(type) + 64;
  LCP_ARRAYS(LCP_SIZE, W, m)
#undef LCP_SIZE
  if (W->lp_on)
    bytes += khz_lpGapBytes(m) + 18 * (size_t)m->ngeom * sizeof(double) +
             (size_t)W->lp_cap * sizeof(uint64_t) + 4 * 64;
  return bytes;
}

size_t khz_lcpWarmBytes(const khzModel *m) { return KHZ_LCP_WARM_BYTES(m); }

/* the workspace from d's stack; 0 when it is full (counted there) */
static int lcp_carve(const khzModel *m, khzData *d, lcpWork *W) {
  memset(W, 0, sizeof *W);
  lcp_sizes(m, W);
  int ok = 1;
#define LCP_TAKE(ptr, type, count)                                    \
  ptr = khz_stackAlloc(d, (size_t)(count) * sizeof(type) + 1);        \
  ok &= ptr != NULL;
  LCP_ARRAYS(LCP_TAKE, W, m)
#undef LCP_TAKE
  void *lkmem = khz_stackAlloc(d, khz_lemkeBytes(W->nmax));
  if (!ok || !lkmem) return 0;
  khz_lemkeInit(&W->lk, W->nmax, lkmem);
  if (W->lp_on) {
    void *lpmem = khz_stackAlloc(d, khz_lpGapBytes(m));
    W->lp_frame = khz_stackAlloc(d, 12 * (size_t)m->ngeom * sizeof(double) + 1);
    W->lp_aabb = khz_stackAlloc(d, 6 * (size_t)m->ngeom * sizeof(double) + 1);
    W->lp_keys = khz_stackAlloc(d, (size_t)W->lp_cap * sizeof(uint64_t) + 1);
    if (!lpmem || !W->lp_frame || !W->lp_aabb || !W->lp_keys) return 0;
    khz_lpGapInit(&W->lpg, m, lpmem);
  }
  return 1;
}

/* ---------------------------------------------------------- contact set -- */

/* unit tangents t1, t2 of the normal n, the same for the same n */
static void tangents(const double n[3], double t1[3], double t2[3]) {
  double a[3] = {0, 0, 0};
  int i = fabs(n[0]) <= fabs(n[1]) ? (fabs(n[0]) <= fabs(n[2]) ? 0 : 2) : (fabs(n[1]) <= fabs(n[2]) ? 1 : 2);
  a[i] = 1;
  khzu_cross(t1, n, a);
  khzu_normalize3(t1);
  khzu_cross(t2, n, t1);
}

/* friction direction j of k */
static void direction(const lcpPoint *p, int j, int k, double dir[3]) {
  double t1[3], t2[3], th = 2 * M_PI * j / k, c = cos(th), s = sin(th);
  tangents(p->normal, t1, t2);
  for (int a = 0; a < 3; a++) dir[a] = c * t1[a] + s * t2[a];
}

/* a pair the LP-depth gap takes (both geoms polytopes, not two planes) */
static int lp_pair(const khzModel *m, const lcpWork *W, int g0, int g1) {
  if (!W->lp_on || !khz_lpGapShape(m, g0) || !khz_lpGapShape(m, g1)) return 0;
  const khzColGeom *cg = ((const khzColModel *)m->collision)->geom;
  return !(cg[g0].shape == KHZ_SHAPE_PLANE && cg[g1].shape == KHZ_SHAPE_PLANE);
}

static int pair_active(const lcpWork *W, int g0, int g1) {
  for (int i = 0; i < W->nall; i++)
    if (W->all[i].geom[0] == g0 && W->all[i].geom[1] == g1) return 1;
  return 0;
}

/* r projected into the plane of the unit normal n */
static void in_plane(double r[3], const double n[3]) {
  khzu_addScl3(r, r, n, -khzu_dot3(r, n));
}

/* up to KHZ_LCP_PAIR_POINTS points of a pair that span its patch: the
 * deepest, the farthest from it, the farthest from that line on either side
 * (distances in the contact plane) */
static int spread_points(const khzData *d, const khzContact *c, int *sel) {
  const khzContactPoint *P = d->cpoint + c->point_adr;
  int n = 0, deep = c->deepest - c->point_adr;
  if (P[deep].depth <= 0) return 0;
  sel[n++] = deep;
  double best = KHZ_LCP_POINT_SEP * KHZ_LCP_POINT_SEP;
  int far = -1;
  for (int i = 0; i < c->npoint; i++) {
    double r[3];
    khzu_sub3(r, P[i].pos, P[deep].pos);
    in_plane(r, c->normal);
    double l = khzu_dot3(r, r);
    if (P[i].depth > 0 && l > best) best = l, far = i;
  }
  if (far < 0) return n;
  sel[n++] = far;
  /* either side of the line deepest-far, in the contact plane: s = |axis|
   * times the distance from the line */
  double axis[3], side[3];
  khzu_sub3(axis, P[far].pos, P[deep].pos);
  in_plane(axis, c->normal);
  khzu_cross(side, c->normal, axis);
  int lo = -1, hi = -1;
  double off = fmax(KHZ_LCP_POINT_OFFLINE * best, KHZ_LCP_POINT_SEP * sqrt(best));
  double dlo = -off, dhi = off;
  for (int i = 0; i < c->npoint; i++) {
    if (P[i].depth <= 0) continue;
    double r[3];
    khzu_sub3(r, P[i].pos, P[deep].pos);
    double s = khzu_dot3(r, side);
    if (s > dhi) dhi = s, hi = i;
    if (s < dlo) dlo = s, lo = i;
  }
  if (hi >= 0 && n < KHZ_LCP_PAIR_POINTS) sel[n++] = hi;
  if (lo >= 0 && n < KHZ_LCP_PAIR_POINTS) sel[n++] = lo;
  return n;
}

/* the pairs of the current collision output as contact points (only_new:
 * those not active yet and deeper than KHZ_LCP_RECHECK_DEPTH); the number
 * added, or -1 when the capacity is exceeded */
static int add_pairs_of(const khzModel *m, const khzData *d, lcpWork *W, int ref, int only_new, int g0,
                        int g1) {
  int added = 0;
  for (int c = 0; c < d->ncontact; c++) {
    const khzContact *ct = d->contact + c;
    if (khz_bodyStatic(m, ct->body[0]) && khz_bodyStatic(m, ct->body[1])) continue;
    /* all pairs but lp_pairs' (g0 < 0), or the pair (g0, g1) alone */
    if (g0 < 0 ? lp_pair(m, W, ct->geom[0], ct->geom[1]) : ct->geom[0] != g0 || ct->geom[1] != g1) continue;
    if (only_new && (pair_active(W, ct->geom[0], ct->geom[1]) ||
                     !(d->cpoint[ct->deepest].depth > KHZ_LCP_RECHECK_DEPTH)))
      continue;
    int sel[KHZ_LCP_PAIR_POINTS], ns = spread_points(d, ct, sel);
    double f0 = m->geom_friction[ct->geom[0]], f1 = m->geom_friction[ct->geom[1]];
    double mu0 = f0 > 0 ? f0 : m->contact.mu, mu1 = f1 > 0 ? f1 : m->contact.mu;
    for (int s = 0; s < ns; s++) {
      if (W->nall >= W->ptmax) return -1;
      const khzContactPoint *p = d->cpoint + ct->point_adr + sel[s];
      lcpPoint *q = W->all + W->nall++;
      memcpy(q->body, ct->body, sizeof q->body);
      memcpy(q->geom, ct->geom, sizeof q->geom);
      memcpy(q->local, p->local, sizeof q->local);
      khzu_copy3(q->normal, ct->normal);
      q->phi = -p->depth;
      q->skin = KHZ_LCP_SKIN;
      q->lp = 0;
      khzu_copy3(q->pos, p->pos);
      q->depth_found = p->depth;
      khzu_copy3(q->normal_found, ct->normal);
      q->mu = sqrt(mu0 * mu1);
      q->ref = ref;
      q->cpoint = only_new ? -1 : ct->point_adr + sel[s];
      added++;
    }
  }
  return added;
}

static int add_pairs(const khzModel *m, const khzData *d, lcpWork *W, int ref, int only_new) {
  return add_pairs_of(m, d, W, ref, only_new, -1, -1);
}

/* The LP-depth gap (contact.lcp_gap = KHZ_LCP_GAP_LPDEPTH; lpgap.h): every
 * pair of polytopes whose bounds, widened by KHZ_LCP_LP_REACH, overlap at the
 * current kinematics and whose LP depth rho dn is at most KHZ_LCP_LP_REACH
 * gives the points of its nearly active units, each with its own gap (no
 * skin: the gap is signed, so a pair resting at 0 is found at the next
 * prediction). only_new (the re-check at q+): the pairs not active yet,
 * joined when their gap is below -KHZ_LCP_LP_RECHECK, and the units of active
 * pairs that are below it: new ones join (a corner that the step's impulses
 * turned into the face), those in the LCP are linearised again at q+ (their
 * gap there, about the pass's v+: the rotation's second-order error of the
 * linearisation at the prediction). The number of points added or
 * linearised again; -1 when the capacity is exceeded (points or candidate
 * pairs). A pair whose LP fails takes the narrow phase's points (counted in
 * khzLcpCounters.lp_failures while an observer is set) */
/* the point of pair (g0, g1) with either end within 1e-9 m of local's in
 * the same body's frame (the same vertex), -1 when none */
static int lp_known(const lcpWork *W, int g0, int g1, const double local[2][3]) {
  for (int i = 0; i < W->nall; i++) {
    const lcpPoint *p = W->all + i;
    if (p->geom[0] != g0 || p->geom[1] != g1) continue;
    for (int e = 0; e < 2; e++) {
      double r[3];
      khzu_sub3(r, p->local[e], local[e]);
      if (khzu_dot3(r, r) < 1e-18) return i;
    }
  }
  return -1;
}

static int lp_pairs(const khzModel *m, khzData *d, lcpWork *W, int ref, int only_new) {
  const khzColModel *cm = m->collision;
  khz_collisionFrames(m, d, W->lp_frame, W->lp_aabb);
  for (int g = 0; g < m->ngeom; g++) {
    if (cm->geom[g].shape < 0) continue;
    double *b = W->lp_aabb + 6 * g;
    for (int k = 0; k < 3; k++) b[k] -= KHZ_LCP_LP_REACH, b[3 + k] += KHZ_LCP_LP_REACH;
  }
  int overflow = 0;
  int npair = khz_broadphase(m, d, W->lp_frame, W->lp_aabb, W->lp_keys, W->lp_cap, &overflow);
  if (npair < 0 || overflow > 0) return -1;
  int added = 0;
  for (int k = 0; k < npair; k++) {
    int g0 = (int)(W->lp_keys[k] >> 32), g1 = (int)(W->lp_keys[k] & 0xffffffffu);
    int b0 = m->geom_body[g0], b1 = m->geom_body[g1];
    if (!lp_pair(m, W, g0, g1) || (khz_bodyStatic(m, b0) && khz_bodyStatic(m, b1))) continue;
    int active = only_new && pair_active(W, g0, g1);
    khzLpGapUnit unit[KHZ_LCP_PAIR_POINTS];
    double psi = 0;
    int nu = khz_lpGapPair(&W->lpg, m, W->lp_frame, g0, g1, KHZ_LCP_LP_REACH, unit,
                           KHZ_LCP_PAIR_POINTS, &psi);
    if (nu < 0) {
      /* an LP that fails (a singular basis of a degenerate face-on-face
       * pair): the narrow phase's points of this pair, this pass */
      if (observer) counters.lp_failures++;
      int got = add_pairs_of(m, d, W, ref, only_new, g0, g1);
      if (got < 0) return -1;
      added += got;
      continue;
    }
    if (nu == 0 || (only_new && !(psi < -KHZ_LCP_LP_RECHECK))) continue;
    double f0 = m->geom_friction[g0], f1 = m->geom_friction[g1];
    double mu0 = f0 > 0 ? f0 : m->contact.mu, mu1 = f1 > 0 ? f1 : m->contact.mu;
    for (int s = 0; s < nu; s++) {
      const khzLpGapUnit *u = unit + s;
      /* each end in its body's frame: local = R^T (p - x) */
      double local[2][3];
      const double *ends[2] = {u->p0, u->p1};
      const int body[2] = {b0, b1};
      for (int e = 0; e < 2; e++) {
        double rel[3];
        khzu_sub3(rel, ends[e], d->xpos + 3 * body[e]);
        khzu_mulMatTVec3(local[e], d->xrot + 9 * body[e], rel);
      }
      /* an active pair's unit counts when violated; it joins when new (no
       * point of the pair has the same vertex: the same end in its body's
       * frame), else that point takes its gap at q+ */
      lcpPoint *q;
      if (active) {
        if (!(u->gap < -KHZ_LCP_LP_RECHECK)) continue;
        int known = lp_known(W, g0, g1, local);
        if (known >= 0) {
          q = W->all + known;
          memcpy(q->local, local, sizeof q->local);
          khzu_copy3(q->normal, u->normal);
          q->phi = u->gap;
          q->ref = ref;
          added++;
          continue;
        }
      }
      if (W->nall >= W->ptmax) return -1;
      q = W->all + W->nall++;
      q->body[0] = b0, q->body[1] = b1;
      q->geom[0] = g0, q->geom[1] = g1;
      memcpy(q->local, local, sizeof q->local);
      khzu_copy3(q->normal, u->normal);
      khzu_add3(q->pos, u->p0, u->p1);
      khzu_scl3(q->pos, q->pos, 0.5);
      q->phi = u->gap;
      q->depth_found = -u->gap;
      khzu_copy3(q->normal_found, u->normal);
      q->skin = 0;
      q->lp = 1;
      q->mu = sqrt(mu0 * mu1);
      q->ref = ref;
      q->cpoint = -1;
      added++;
    }
  }
  return added;
}

/* collision detection at the positions q (kinematics there first) */
static void collide_at(const khzModel *m, khzData *d, const double *q) {
  khz_forwardPass(m, d, q, NULL);
  d->ncontact = d->ncpoint = 0;
  khz_collide(m, d);
}

/* ------------------------------------------------------------ dynamics -- */

/* v_free = v + h FD(q, v, tau_applied + passive): the velocity without contact */
void khz_lcpFreeVelocity(const khzModel *m, khzData *d, double *tau, double *qdd, double *vfree,
                         double h) {
  khz_passive(m, d, d->q, d->qd, tau);
  for (int k = 0; k < m->nv; k++) tau[k] += d->tau_applied[k];
  khz_forwardPass(m, d, d->q, d->qd);
  khz_externalForces(m, d);
  khz_abaCore(m, d, tau, qdd);
  for (int k = 0; k < m->nv; k++) vfree[k] = d->qd[k] + h * qdd[k];
}

/* the shared blocks (blocks.h) over this work's arrays */
static khzLcpBlocks blocks_view(const lcpWork *W) {
  khzLcpBlocks B = {W->na, W->ntree, W->act, W->loc, W->dof, W->tree_root, W->tree_off,
                    W->tree_n, W->tree_moff, W->Mb, W->jac0, W->jac1};
  return B;
}

/* the trees the active points touch, their dofs, and the Cholesky factors
 * of their mass-matrix blocks at d->q (CRBA); 0 when a block is singular */
static int mass_blocks(const khzModel *m, khzData *d, lcpWork *W) {
  khzLcpBlocks B = blocks_view(W);
  khz_lcpBlocksBegin(m, &B);
  for (int i = 0; i < W->np; i++)
    for (int s = 0; s < 2; s++) khz_lcpBlocksTouch(m, &B, W->pt[i].body[s]);
  int ok = khz_lcpBlocksFactor(m, d, &B);
  W->na = B.na, W->ntree = B.ntree;
  return ok;
}

static int tree_of(const khzModel *m, const lcpWork *W, int b) {
  if (khz_bodyStatic(m, b)) return -1;
  for (int t = 0; t < W->ntree; t++)
    if (W->tree_root[t] == m->body_root[b]) return t;
  return -1;
}

/* the world point of body b at the local point x (current kinematics) */
static void world_point(const khzData *d, int b, const double x[3], double p[3]) {
  khzu_mulMatVec3(p, d->xrot + 9 * b, x);
  khzu_add3(p, p, d->xpos + 3 * b);
}

/* the island's patches: the points of one pair (consecutive in W->pt)
 * share one friction cone at their centre; a patch of 2 or more points
 * adds two torsion columns (spin about the normal either way). With the
 * scene's torsional friction a one-point patch adds two spin columns, with
 * its rolling friction a patch of one or two points adds rolling columns,
 * each set with a cone row of its own. Sets the LCP's layout: W->nr rows
 * with a Jacobian (the points' normal rows, then the patches' friction
 * rows), then the patches' cone rows, W->n in all */
static void patches(lcpWork *W) {
  int nc = W->np, g = 0, col = nc, cone = 0;
  for (int i = 0; i < nc; i++) {
    const lcpPoint *p = W->pt + i, *q = i > 0 ? W->pt + i - 1 : NULL;
    if (q && q->geom[0] == p->geom[0] && q->geom[1] == p->geom[1]) continue;
    W->pstart[g++] = i;
  }
  W->pstart[g] = nc;
  W->npatch = g;
  for (int j = 0; j < g; j++) {
    int np = W->pstart[j + 1] - W->pstart[j];
    W->pfoff[j] = col;
    W->pfk[j] = W->k + (np > 1 ? 2 : 0);
    W->ptk[j] = W->mu_t > 0 && np == 1 ? 2 : 0;
    W->prk[j] = W->mu_r > 0 && np <= 2 ? (np == 1 ? W->k : 2) : 0;
    col += W->pfk[j] + W->ptk[j] + W->prk[j];
    W->pcone[j] = cone;
    cone += 1 + (W->ptk[j] > 0) + (W->prk[j] > 0);
  }
  W->nr = col;
  W->n = col + cone;
}

/* Y_r = A J_r for the row r just written, block by block, and its trees */
static void finish_row(lcpWork *W, int r, int t0, int t1) {
  int na = W->na;
  W->row_tree[2 * r] = t0, W->row_tree[2 * r + 1] = t1 == t0 ? -1 : t1;
  double *Jr = W->J + (size_t)r * na, *Yr = W->Y + (size_t)r * na;
  memset(Yr, 0, (size_t)na * sizeof(double));
  for (int s = 0; s < 2; s++) {
    int t = W->row_tree[2 * r + s];
    if (t < 0) continue;
    int off = W->tree_off[t], nt = W->tree_n[t];
    memcpy(Yr + off, Jr + off, (size_t)nt * sizeof(double));
    khzu_cholSolve(W->Mb + W->tree_moff[t], nt, Yr + off);
  }
}

/* rows of N' (one per point) and D' (per patch: k directions at its
 * centre, and r n'(w_0 - w_1) both ways for the torsion, r the mean
 * distance of its points from the centre) at the current kinematics
 * (active dofs), A times each. Four coplanar corners with k directions
 * each gave 4 k friction rows of rank 3 per face; per patch they are k
 * rows of rank 2 and the torsion's rank 1 (docs/lcp.md, "Patches") */
static void contact_rows(const khzModel *m, khzData *d, lcpWork *W) {
  int na = W->na, k = W->k;
  khzLcpBlocks B = blocks_view(W);
  for (int g = 0; g < W->npatch; g++) {
    int i0 = W->pstart[g], i1 = W->pstart[g + 1];
    const lcpPoint *p = W->pt + i0;
    int t0 = tree_of(m, W, p->body[0]), t1 = tree_of(m, W, p->body[1]);
    /* the normal rows; the patch's centre on either body */
    double c0[3] = {0, 0, 0}, c1[3] = {0, 0, 0};
    for (int i = i0; i < i1; i++) {
      double p0[3], p1[3];
      world_point(d, W->pt[i].body[0], W->pt[i].local[0], p0);
      world_point(d, W->pt[i].body[1], W->pt[i].local[1], p1);
      khz_lcpBlocksJacobians(m, d, &B, W->pt[i].body, p0, p1);
      khz_lcpBlocksRow(m, &B, W->pt[i].normal, W->J + (size_t)i * na);
      finish_row(W, i, t0, t1);
      if (i1 - i0 == 1) khzu_copy3(c0, p0), khzu_copy3(c1, p1);
      else khzu_add3(c0, c0, p0), khzu_add3(c1, c1, p1);
      khzu_copy3(W->pt[i].rho, p0);
    }
    if (i1 - i0 > 1) khzu_scl3(c0, c0, 1.0 / (i1 - i0)), khzu_scl3(c1, c1, 1.0 / (i1 - i0));
    double radius = 0;
    for (int i = i0; i < i1; i++) {
      khzu_sub3(W->pt[i].rho, W->pt[i].rho, c0);
      in_plane(W->pt[i].rho, p->normal);
      radius += khzu_norm3(W->pt[i].rho) / (i1 - i0);
    }
    W->pradius[g] = radius;
    /* the k directions at the centre */
    khz_lcpBlocksJacobians(m, d, &B, p->body, c0, c1);
    for (int j = 0; j < k; j++) {
      double dir[3];
      direction(p, j, k, dir);
      int r = W->pfoff[g] + j;
      khz_lcpBlocksRow(m, &B, dir, W->J + (size_t)r * na);
      finish_row(W, r, t0, t1);
    }
    if (W->pfk[g] > k) {
      /* the torsion: n'(w_0 - w_1) = t2'((v_0 - v_1)(c + t1) - (v_0 - v_1)(c)),
       * t1, t2 the tangents (t1 x t2 = n); times the lever */
      double ta[3], tb[3], s0[3], s1[3];
      tangents(p->normal, ta, tb);
      khz_lcpBlocksRow(m, &B, tb, W->trow);
      khzu_add3(s0, c0, ta), khzu_add3(s1, c1, ta);
      khz_lcpBlocksJacobians(m, d, &B, p->body, s0, s1);
      int r = W->pfoff[g] + k;
      double *Jp = W->J + (size_t)r * na, *Jm = Jp + na;
      khz_lcpBlocksRow(m, &B, tb, Jp);
      for (int a = 0; a < na; a++) Jp[a] = radius * (Jp[a] - W->trow[a]), Jm[a] = -Jp[a];
      finish_row(W, r, t0, t1);
      finish_row(W, r + 1, t0, t1);
    }
    if (W->ptk[g] == 0 && W->prk[g] == 0) continue;
    /* spin and rolling: a'(w_0 - w_1) from the bodies' rotation Jacobians,
     * a the normal (both ways), then the rolling axes: the k directions of
     * a one-point patch, the line of a two-point patch (both ways) */
    khz_jacobian(m, d, p->body[0], c0, NULL, W->jac0);
    khz_jacobian(m, d, p->body[1], c1, NULL, W->jac1);
    int r = W->pfoff[g] + W->pfk[g];
    for (int j = 0; j < W->ptk[g] + W->prk[g]; j++, r++) {
      double axis[3];
      if (j < W->ptk[g]) khzu_scl3(axis, p->normal, j == 0 ? 1 : -1);
      else if (W->prk[g] == 2) khzu_scl3(axis, W->pt[i0].rho, (j == W->ptk[g] ? 1 : -1) / khzu_norm3(W->pt[i0].rho));
      else direction(p, j - W->ptk[g], k, axis);
      khz_lcpBlocksRow(m, &B, axis, W->J + (size_t)r * na);
      finish_row(W, r, t0, t1);
    }
  }
}

/* the LCP of eq. (29) with the patches' cones: W->A (n x n), W->b */
static int assemble(const lcpWork *W, double h) {
  int nc = W->np, nr = W->nr, n = W->n, na = W->na;
  memset(W->A, 0, (size_t)n * n * sizeof(double));
  /* the Delassus block J A J': rows meet only on the trees they share */
  for (int r = 0; r < nr; r++) {
    const double *Jr = W->J + (size_t)r * na;
    for (int s = 0; s < nr; s++) {
      const double *Ys = W->Y + (size_t)s * na;
      double v = 0;
      for (int a = 0; a < 2; a++) {
        int t = W->row_tree[2 * r + a];
        if (t < 0 || (t != W->row_tree[2 * s] && t != W->row_tree[2 * s + 1])) continue;
        for (int c = W->tree_off[t]; c < W->tree_off[t] + W->tree_n[t]; c++) v += Jr[c] * Ys[c];
      }
      W->A[(size_t)r * n + s] = v;
    }
  }
  /* E (directions against the slip speed) and the cone row
   * mu sum(c_n) - E' beta of each patch; the spin's and the rolling's cone
   * rows mu_t sum(c_n) - E' beta_t, mu_r sum(c_n) - E' beta_r */
  for (int g = 0; g < W->npatch; g++) {
    int cols[3] = {W->pfk[g], W->ptk[g], W->prk[g]}, j0 = W->pfoff[g], l = nr + W->pcone[g];
    for (int set = 0; set < 3; set++) {
      if (cols[set] == 0) continue;
      for (int j = j0; j < j0 + cols[set]; j++) {
        W->A[(size_t)j * n + l] = 1;
        W->A[(size_t)l * n + j] = -1;
      }
      for (int i = W->pstart[g]; i < W->pstart[g + 1]; i++)
        W->A[(size_t)l * n + i] = set == 0 ? W->pt[i].mu : set == 1 ? W->mu_t : W->mu_r;
      j0 += cols[set], l++;
    }
  }
  /* q: gaps at the reference positions, tangential free velocities, 0 */
  for (int r = 0; r < nr; r++) {
    const double *Jr = W->J + (size_t)r * na;
    int i = r < nc ? r : -1;
    const double *vr = i >= 0 && W->pt[i].ref > 0 ? W->vref + (size_t)(W->pt[i].ref - 1) * W->nv : W->vfree;
    double s = 0, sfree = 0;
    for (int a = 0; a < na; a++) {
      int g = W->dof[a];
      s += Jr[a] * (i >= 0 ? W->vfree[g] - vr[g] : W->vfree[g]);
      sfree += Jr[a] * W->vfree[g];
    }
    /* the gap at the step's start over h (to first order); a contact
     * that is to close must close within the step (the paper's phi/h), one
     * deeper than the skin opens at KHZ_LCP_DEEP_GAIN of it */
    double g0 = i >= 0 ? (W->pt[i].phi + W->pt[i].skin) / h + s - sfree : 0;
    /* the push-out a rate over the whole step, not over a substep: over a
     * substep of 1e-6 s a contact 1e-6 m too deep left at 0.1 m/s, and
     * the V3 pile never came to rest */
    W->b[r] = (g0 < 0 ? KHZ_LCP_DEEP_GAIN * g0 * (h / W->h_step) : g0) + sfree;
    /* a penetration already there at q (phi/h - N' v_ref < 0) is pushed
     * out at KHZ_LCP_PUSHOUT at most, not in one step */
    if (i >= 0 && W->b[r] - sfree < -KHZ_LCP_PUSHOUT) W->b[r] = sfree - KHZ_LCP_PUSHOUT;
    /* Newton's restitution (beyond the paper, contact.lcp_restitution): a
     * point approaching at v0n < -impact_speed at the step's start must
     * leave at n'v+ >= -e v0n, the stricter of that and the gap's bound */
    if (i >= 0 && W->restitution > 0) {
      double v0n = 0;
      for (int a = 0; a < na; a++) v0n += Jr[a] * W->v0[W->dof[a]];
      if (v0n < -W->impact_speed) W->b[r] = fmin(W->b[r], sfree + W->restitution * v0n);
    }
  }
  for (int r = nr; r < n; r++) W->b[r] = 0;
  return n;
}

/* v+ = v_free + A J' z on the island's dofs (W->vtry; its trees are no
 * other island's), and each of its points' z into W->zall */
static void island_update(lcpWork *W, const int *points) {
  int k = W->k, nr = W->nr, na = W->na;
  for (int a = 0; a < na; a++) W->vtry[W->dof[a]] = W->vfree[W->dof[a]];
  for (int r = 0; r < nr; r++) {
    double zr = W->z[r];
    if (zr == 0) continue;
    const double *Yr = W->Y + (size_t)r * na;
    for (int a = 0; a < na; a++) W->vtry[W->dof[a]] += zr * Yr[a];
  }
  /* each point's c_n, and its share of its patch's friction impulse: the
   * force at the centre by c_n, the torsion as the least-norm tangential
   * impulses about the centre (tau n x rho_i / sum |rho|^2) */
  for (int g = 0; g < W->npatch; g++) {
    int i0 = W->pstart[g], i1 = W->pstart[g + 1];
    const lcpPoint *p = W->pt + i0;
    double f[3] = {0, 0, 0}, cn = 0, rr = 0, tau = 0;
    for (int j = 0; j < k; j++) {
      double dir[3];
      direction(p, j, k, dir);
      khzu_addScl3(f, f, dir, W->z[W->pfoff[g] + j]);
    }
    if (W->pfk[g] > k) tau = W->pradius[g] * (W->z[W->pfoff[g] + k] - W->z[W->pfoff[g] + k + 1]);
    for (int i = i0; i < i1; i++) cn += W->z[i], rr += khzu_dot3(W->pt[i].rho, W->pt[i].rho);
    for (int i = i0; i < i1; i++) {
      double *zi = W->zall + (size_t)points[i] * (k + 2), t[3];
      memset(zi, 0, (size_t)(k + 2) * sizeof(double));
      zi[0] = W->z[i];
      khzu_scl3(zi + 1, f, cn > 0 ? W->z[i] / cn : 1.0 / (i1 - i0));
      if (tau != 0 && rr > 0) {
        khzu_cross(t, p->normal, W->pt[i].rho);
        khzu_addScl3(zi + 1, zi + 1, t, tau / rr);
      }
    }
  }
}

/* ------------------------------------------------------------- islands -- */

/* union-find over the trees: uf[root body] leads to its island's root */
static int uf_find(int *uf, int x) {
  while (uf[x] != x) x = uf[x] = uf[uf[x]];
  return x;
}

/* the island of point i: the root of its dynamic body's tree (a point
 * between two trees joins them; static bodies join nothing) */
static int point_tree(const khzModel *m, const lcpPoint *p) {
  return khz_bodyStatic(m, p->body[0]) ? m->body_root[p->body[1]] : m->body_root[p->body[0]];
}

/* the contact islands (Stewart & Trinkle's LCP is block diagonal over the
 * trees no contact joins, so each block is an independent LCP with the same
 * solutions): W->iorder lists the points island by island from
 * W->istart[i], W->nisl islands */
static void islands(const khzModel *m, lcpWork *W) {
  for (int b = 0; b < m->nbody; b++) W->uf[b] = b;
  for (int i = 0; i < W->nall; i++) {
    const lcpPoint *p = W->all + i;
    if (khz_bodyStatic(m, p->body[0]) || khz_bodyStatic(m, p->body[1])) continue;
    int a = uf_find(W->uf, m->body_root[p->body[0]]), b = uf_find(W->uf, m->body_root[p->body[1]]);
    if (a != b) W->uf[a < b ? b : a] = a < b ? a : b;
  }
  /* islands numbered in the order of their first point; W->istart counts,
   * then offsets, then the points placed in their order */
  for (int b = 0; b < m->nbody; b++) W->isl_of_root[b] = -1;
  W->nisl = 0;
  for (int i = 0; i < W->nall; i++) {
    int r = uf_find(W->uf, point_tree(m, W->all + i));
    if (W->isl_of_root[r] < 0) W->isl_of_root[r] = W->nisl++;
    W->pisl[i] = W->isl_of_root[r];
  }
  for (int j = 0; j <= W->nisl; j++) W->istart[j] = 0;
  for (int i = 0; i < W->nall; i++) W->istart[W->pisl[i] + 1]++;
  for (int j = 0; j < W->nisl; j++) W->istart[j + 1] += W->istart[j];
  int *fill = W->isl_of_root; /* reused: the next free slot of each island */
  for (int j = 0; j < W->nisl; j++) fill[j] = W->istart[j];
  for (int i = 0; i < W->nall; i++) W->iorder[fill[W->pisl[i]]++] = i;
}

/* The LP-depth gap's pairs in the contact list: the narrow phase's entries
 * of polytope pairs (none of their points was in the LCP) give way to one
 * entry per LP pair with its points (a pair whose LP failed keeps its own
 * entry: its points were the narrow phase's): position midway between the gap's
 * ends, depth -gap where it was measured (the prediction, or q+ for a pair
 * the re-check added), force impulse / h as the others' */
static void report_lp(const khzModel *m, khzData *d, lcpWork *W, double h) {
  int nc = 0, np = 0, k = W->k;
  for (int c = 0; c < d->ncontact; c++) {
    khzContact ct = d->contact[c];
    int narrow = !lp_pair(m, W, ct.geom[0], ct.geom[1]);
    for (int i = 0; i < W->nall && !narrow; i++)
      narrow = !W->all[i].lp && W->all[i].geom[0] == ct.geom[0] && W->all[i].geom[1] == ct.geom[1];
    if (!narrow) continue;
    memmove(d->cpoint + np, d->cpoint + ct.point_adr, (size_t)ct.npoint * sizeof(khzContactPoint));
    ct.deepest += np - ct.point_adr;
    ct.point_adr = np;
    d->contact[nc++] = ct;
    np += ct.npoint;
  }
  int maxpt = m->npair_max * m->max_points;
  for (int i = 0; i < W->nall; i++) {
    const lcpPoint *p = W->all + i;
    /* a pair's points (a re-check may have added more after others') */
    int first = p->lp, count = 0;
    for (int e = 0; e < W->nall && first; e++) {
      int same = W->all[e].geom[0] == p->geom[0] && W->all[e].geom[1] == p->geom[1];
      if (same && e < i) first = 0;
      count += same;
    }
    if (!first || nc >= m->npair_max || np + count > maxpt) continue;
    khzContact *ct = d->contact + nc++;
    memset(ct, 0, sizeof *ct);
    memcpy(ct->geom, p->geom, sizeof ct->geom);
    memcpy(ct->body, p->body, sizeof ct->body);
    khzu_copy3(ct->normal, p->normal_found);
    ct->point_adr = ct->deepest = np;
    ct->npoint = count;
    ct->slot = -1;
    ct->mu = p->mu;
    for (int e = i; e < W->nall; e++) {
      const lcpPoint *q = W->all + e;
      if (q->geom[0] != p->geom[0] || q->geom[1] != p->geom[1]) continue;
      const double *ze = W->zall + (size_t)e * (k + 2);
      khzContactPoint *cp = d->cpoint + np;
      memset(cp, 0, sizeof *cp);
      khzu_copy3(cp->pos, q->pos);
      cp->depth = q->depth_found;
      cp->weight = 1;
      memcpy(cp->local, q->local, sizeof cp->local);
      cp->feature = -1;
      cp->round = -1;
      khzu_scl3(cp->force, q->normal, ze[0] / h);
      khzu_addScl3(cp->force, cp->force, ze + 1, 1 / h);
      if (cp->depth > d->cpoint[ct->deepest].depth) ct->deepest = np;
      np++;
    }
  }
  d->ncontact = nc, d->ncpoint = np;
  /* a list khz_collide keeps for sleeping pairs is at most this one */
  if (d->ncontact_kept > nc) d->ncontact_kept = nc;
}

/* the contact list of the prediction again, each point's force (impulse / h) */
static void report(const khzModel *m, khzData *d, lcpWork *W, double h) {
  memcpy(d->contact, W->save_c, (size_t)W->save_nc * sizeof(khzContact));
  memcpy(d->cpoint, W->save_p, (size_t)W->save_np * sizeof(khzContactPoint));
  d->ncontact = W->save_nc, d->ncpoint = W->save_np;
  for (int c = 0; c < d->ncontact; c++) {
    khzContact *ct = d->contact + c;
    ct->nbottom = 0;
    ct->kp = ct->kv = ct->ki = ct->kp_implicit = ct->kv_implicit = 0;
    memset(ct->force_implicit, 0, sizeof ct->force_implicit);
    ct->mu = 0;
  }
  for (int p = 0; p < d->ncpoint; p++) memset(d->cpoint[p].force, 0, sizeof d->cpoint[p].force);
  int nc = W->nall, k = W->k;
  for (int i = 0; i < nc; i++) {
    const lcpPoint *p = W->all + i;
    const double *zi = W->zall + (size_t)i * (k + 2);
    if (p->cpoint < 0) continue;
    double f[3];
    khzu_scl3(f, p->normal, zi[0] / h);
    khzu_addScl3(f, f, zi + 1, 1 / h);
    khzu_copy3(d->cpoint[p->cpoint].force, f);
  }
  for (int c = 0; c < d->ncontact; c++)
    for (int i = 0; i < nc; i++)
      if (W->all[i].geom[0] == d->contact[c].geom[0] && W->all[i].geom[1] == d->contact[c].geom[1])
        d->contact[c].mu = W->all[i].mu;
  if (W->lp_on) report_lp(m, d, W, h);
}

/* Lemke on the assembled LCP (and with a compliance of 1e-8); when it
 * fails, the proximal-point iteration
 * on a regularised LCP: z_{i+1} solves LCP(q - eps z_i, M + eps I) (eps on
 * the Delassus block J A J', normal and friction rows, 1e-2 of its largest
 * diagonal entry, a residual of 1e-7 accepted), z_0 = 0; a fixed point
 * solves the original LCP, and each pass shrinks the compliance eps z that
 * a single regularised solve leaves (a box resting on the stack sank by
 * h eps |z| per step and bounced back).
 *
 * Why: boxes on boxes make contact rows that are exactly dependent (four
 * coplanar points of one face) and, across the stack, nearly so; Lemke's
 * bases take pivots of 1e-6..1e-9 of their column and end on a ray or with
 * residuals up to 1e-1 (the 5-box stack: 74 of the 282 LCPs of its first
 * 300 steps, the exactly stacked start included). Compliances of 1e-8..1e-4
 * did not cure it (pivots of eps's size: 54 of the 282 still failed at
 * 1e-4); 1e-2 solves all 282 (3 with residuals 4.5e-10..5e-8) */
#define KHZ_LCP_EPS 1e-2
#define KHZ_LCP_EPS_SMALL 1e-8
/* Lemke's pivot tolerance of the second attempt (khzLemke.pivot_tol): of
 * the 5-box stack's first 1,000 first-attempt LCPs, 916 solve at 1e-6
 * against 706 at the default 1e-9 (rays 18 against 168); 1e-7 / 1e-5 solve
 * 878 / 919; 758 when their residual is held to 1e-8 max |q| (as the
 * attempt is). Not the default: one of test_lemke's random degenerate LCPs
 * ends inaccurate at 1e-6 */
#define KHZ_LCP_PIVOT_TOL 1e-6
#define KHZ_LCP_PROX 4
/* Lemke's ratio ties relative to the ratio (khzLemke.tie_abs): of the 5-box
 * stack's first 1,000 first-attempt LCPs (skin, patches), 22 ended
 * inaccurate with the default 1, 4 with 1e-3 (0 after the second attempt) */
#define KHZ_LCP_TIE_ABS 1e-3
#ifndef KHZ_LCP_REINVERT
#define KHZ_LCP_REINVERT 1e-6
#endif
/* a first or compliant attempt is accepted at a residual
 * max |min(z, A z + b)| up to this fraction of max |b|: at h = 1e-4 a
 * rolling ball's LCPs end at 2.45e-8 with |b| 0.2 (a tangential speed of
 * 1.7e-8 m/s left in a resting contact's rows, beyond the polish) and fell
 * back to the penalty method on 1,435 of 15,000 steps of the four balls */
#ifndef KHZ_LCP_ACCEPT
#define KHZ_LCP_ACCEPT 1e-6
#endif
/* pivot budget of one Lemke call: the stack's LCPs (n <= 120) take 23
 * pivots on average; 50 n + 100 let a failing one run for seconds */
#define KHZ_LCP_PIVOTS(n) (5 * (n) + 50)
/* the step's time bound (d->lcp_time_limit) has passed */
static int lcp_late(const lcpWork *W) {
  return W->lk.deadline > 0 && khz_lemkeNow() > W->lk.deadline;
}

/* the guess for this island's LCP from the last step's record: every patch
 * (pair) found there with as many points; 0 (solve cold) when one is not */
static int warm_guess(lcpWork *W) {
  const lcpWarm *old = W->warm_old;
  if (!old || !warm_enabled) return 0;
  memset(W->zbasic, 0, (size_t)W->n);
  for (int g = 0; g < W->npatch; g++) {
    const lcpPoint *p = W->pt + W->pstart[g];
    int np = W->pstart[g + 1] - W->pstart[g], e = old->npair - 1;
    while (e >= 0 && (old->pair[e].geom[0] != p->geom[0] || old->pair[e].geom[1] != p->geom[1])) e--;
    if (e < 0 || old->pair[e].np != np) return 0;
    uint32_t bits = old->pair[e].basic;
    /* each point takes the bit of the old point nearest to it on body[0] */
    for (int i = 0; i < np; i++) {
      const double *x = W->pt[W->pstart[g] + i].local[0];
      int best = 0;
      double dbest = INFINITY;
      for (int j = 0; j < np; j++) {
        const float *y = old->pair[e].local[j];
        double dd = (x[0] - y[0]) * (x[0] - y[0]) + (x[1] - y[1]) * (x[1] - y[1]) + (x[2] - y[2]) * (x[2] - y[2]);
        if (dd < dbest) dbest = dd, best = j;
      }
      W->zbasic[W->pstart[g] + i] = (bits >> best) & 1;
    }
    int fk = W->pfk[g], xk = W->ptk[g] + W->prk[g], l = W->nr + W->pcone[g];
    for (int j = 0; j < fk; j++) W->zbasic[W->pfoff[g] + j] = (bits >> (4 + j)) & 1;
    for (int j = 0; j < xk; j++) W->zbasic[W->pfoff[g] + fk + j] = (bits >> (LCP_WARM_EXTRA + j)) & 1;
    W->zbasic[l++] = (bits & LCP_WARM_CONE) != 0;
    if (W->ptk[g]) W->zbasic[l++] = (bits & LCP_WARM_TCONE) != 0;
    if (W->prk[g]) W->zbasic[l++] = (bits & LCP_WARM_RCONE) != 0;
  }
  return 1;
}

/* this island's final basis into the step's record, one entry per patch
 * (a later entry of the same pair, from a re-check pass, supersedes it);
 * np = -1 when the basis is not the LCP's own (a regularised solve) */
static void warm_record(lcpWork *W, const khzModel *m, int basis_ok) {
  for (int g = 0; g < W->npatch && W->warm_nnew < m->npair_max; g++) {
    const lcpPoint *p = W->pt + W->pstart[g];
    lcpWarmPair *e = W->warm_new + W->warm_nnew++;
    int np = W->pstart[g + 1] - W->pstart[g];
    e->geom[0] = p->geom[0], e->geom[1] = p->geom[1];
    e->np = basis_ok ? np : -1;
    e->basic = 0;
    for (int i = 0; i < np && basis_ok; i++) {
      e->basic |= (uint32_t)W->zbasic[W->pstart[g] + i] << i;
      for (int c = 0; c < 3; c++) e->local[i][c] = (float)W->pt[W->pstart[g] + i].local[0][c];
    }
    if (!basis_ok) continue;
    int fk = W->pfk[g], xk = W->ptk[g] + W->prk[g], l = W->nr + W->pcone[g];
    for (int j = 0; j < fk; j++) e->basic |= (uint32_t)W->zbasic[W->pfoff[g] + j] << (4 + j);
    for (int j = 0; j < xk; j++) e->basic |= (uint32_t)W->zbasic[W->pfoff[g] + fk + j] << (LCP_WARM_EXTRA + j);
    if (W->zbasic[l++]) e->basic |= LCP_WARM_CONE;
    if (W->ptk[g] && W->zbasic[l++]) e->basic |= LCP_WARM_TCONE;
    if (W->prk[g] && W->zbasic[l++]) e->basic |= LCP_WARM_RCONE;
  }
}

/* solve() sets it: 1 when W->zbasic holds the final basis of the LCP as
 * assembled (not a regularised one), for the next step's warm start */
static khzLcpStatus solve(lcpWork *W, int n, int guess, int *basis_ok) {
  int budget = KHZ_LCP_PIVOTS(n), nr = W->nr;
  *basis_ok = 0;
  double dmax = 0, qmax = 0;
  for (int r = 0; r < nr; r++) dmax = fmax(dmax, W->A[(size_t)r * n + r]);
  for (int r = 0; r < n; r++) qmax = fmax(qmax, fabs(W->b[r]));
  /* Lemke's residual tolerance relative to the LCP's q (khz_lemke solves a q
   * below 1e-3 scaled up to 1e-3, so the tolerance is on that) */
  W->lk.tol = KHZ_LCP_ACCEPT * fmax(qmax, 1e-3);
  /* q >= 0 up to round-off (the friction rows' D' v_free of a body at rest
   * come out as +-1e-22): z = 0 solves it. Lemke takes -3e-22 as negative,
   * and the humanoid's first LCP ended on a ray in all four attempts */
  double qlow = 0;
  for (int r = 0; r < n; r++) qlow = fmin(qlow, W->b[r]);
  if (lcp_late(W)) return KHZ_LCP_TIMEOUT;
  if (qlow >= -1e-14 * qmax) {
    memset(W->z, 0, (size_t)n * sizeof(double));
    memset(W->zbasic, 0, (size_t)n);
    *basis_ok = 1;
    if (observer) observer(observer_user, n, W->A, W->b, W->z, KHZ_LCP_SOLVED);
    return KHZ_LCP_SOLVED;
  }
  /* warm start: the last step's basis of these pairs, one factorisation and
   * a feasibility check (khz_lemkeWarm, natural residual <= 1e-10 on the
   * scaled q); else cold */
  if (guess) {
    /* held to Lemke's own 1e-10 (the tolerance unset), not to the stepper's
     * acceptance: accepted there, the 60 s stack rocked (docs/lcp.md) */
    double tol_cold = W->lk.tol;
    W->lk.tol = 0;
    khzLcpStatus ws = khz_lemkeWarm(&W->lk, n, W->A, W->b, W->zbasic, W->z, W->w);
    W->lk.tol = tol_cold;
    if (observer) {
      counters.warm_tries++;
      counters.warm_hits += ws == KHZ_LCP_SOLVED;
      counters.solves++;
      counters.rows += n;
      if (ws == KHZ_LCP_SOLVED) observer(observer_user, n, W->A, W->b, W->z, ws);
    }
    if (ws == KHZ_LCP_SOLVED) {
      *basis_ok = 1;
      return ws;
    }
  }
  /* as assembled; again with Lemke's pivot tolerance at KHZ_LCP_PIVOT_TOL
   * (round-off zeros of dependent rows not taken as pivots); then with a
   * compliance of 1e-8 dmax (moves the solution by that much; it cures most
   * failures of spheres and rods) */
  khzLcpStatus st = KHZ_LCP_RAY;
  for (int t = 0; t < 3 && st != KHZ_LCP_SOLVED; t++) {
    if (st == KHZ_LCP_TIMEOUT || lcp_late(W)) return KHZ_LCP_TIMEOUT;
    W->lk.pivot_tol = t == 1 ? KHZ_LCP_PIVOT_TOL : 0;
    /* the candidates it leaves out may end slightly negative: its solution
     * is held to 1e-2 of the others' residual */
    W->lk.tol = (t == 1 ? 1e-2 : 1) * KHZ_LCP_ACCEPT * fmax(qmax, 1e-3);
    if (t == 2)
      for (int r = 0; r < nr; r++) W->A[(size_t)r * n + r] += KHZ_LCP_EPS_SMALL * dmax;
    st = khz_lemke(&W->lk, n, W->A, W->b, W->z, W->w, budget);
    if (observer) {
      counters.pivots += W->lk.pivots;
      counters.lemke_calls++;
      if (t == 0 && !guess) counters.solves++, counters.rows += n;
      observer(observer_user, n, W->A, W->b, W->z, st);
    }
    if (st == KHZ_LCP_SOLVED && t < 2) khz_lemkeBasis(&W->lk, n, W->zbasic), *basis_ok = 1;
  }
  W->lk.pivot_tol = 0;
  if (st == KHZ_LCP_SOLVED) return st;
  double eps = KHZ_LCP_EPS * dmax;
  for (int r = 0; r < nr; r++) W->A[(size_t)r * n + r] += eps - KHZ_LCP_EPS_SMALL * dmax;
  memset(W->zp, 0, (size_t)n * sizeof(double));
  W->lk.tol = 1e-7;
  for (int it = 0; it < KHZ_LCP_PROX; it++) {
    if (lcp_late(W)) {
      if (st != KHZ_LCP_SOLVED) st = KHZ_LCP_TIMEOUT;
      break;
    }
    for (int r = 0; r < n; r++) W->bp[r] = W->b[r] - (r < nr ? eps * W->zp[r] : 0);
    khzLcpStatus s = khz_lemke(&W->lk, n, W->A, W->bp, W->z, W->w, budget);
    if (observer) {
      counters.pivots += W->lk.pivots;
      counters.lemke_calls++;
      observer(observer_user, n, W->A, W->bp, W->z, s);
    }
    if (s != KHZ_LCP_SOLVED) {
      if (s == KHZ_LCP_TIMEOUT && st != KHZ_LCP_SOLVED) st = s;
      break;
    }
    st = s;
    double change = 0, size = 0;
    for (int r = 0; r < n; r++) change = fmax(change, fabs(W->z[r] - W->zp[r])), size = fmax(size, W->z[r]);
    memcpy(W->zp, W->z, (size_t)n * sizeof(double));
    if (change <= 1e-3 * size) break;
  }
  W->lk.tol = 0;
  memcpy(W->z, W->zp, (size_t)n * sizeof(double));
  return st;
}

/* the pair slots in use into pairs / slots (*n of them), and back: every
 * slot in use now freed as pairs.c frees it, those saved copied in */
static void save_pairs(const khzModel *m, const khzData *d, khzPairState *pairs, int *slots, int *n) {
  *n = 0;
  for (int s = 0; s < m->npair_max; s++) {
    if (d->pair[s].geom[0] < 0) continue;
    memcpy(pairs + *n, d->pair + s, sizeof(khzPairState));
    slots[(*n)++] = s;
  }
}

static void restore_pairs(const khzModel *m, khzData *d, const khzPairState *pairs, const int *slots,
                          int n) {
  for (int s = 0; s < m->npair_max; s++) {
    if (d->pair[s].geom[0] < 0) continue;
    memset(d->pair + s, 0, sizeof(khzPairState));
    d->pair[s].geom[0] = d->pair[s].geom[1] = -1;
  }
  for (int i = 0; i < n; i++) memcpy(d->pair + slots[i], pairs + i, sizeof(khzPairState));
}

void khz_lcpLemkeSettings(khzLemke *lk) {
  lk->tie_abs = KHZ_LCP_TIE_ABS;
  lk->reinvert = KHZ_LCP_REINVERT;
}

/* ------------------------------------------------- impacts within a step -- */

/* Beyond the paper: the step split at the time an impact's contact closes.
 * A contact found at the prediction whose gap phi + skin is still open at
 * the step's start closes inside the step, and the paper's gap term
 * phi/h + n'v+ >= 0 lets it approach at phi/h after the step's impulse:
 * the impact is taken in two steps, in a ratio set by where in the step the
 * contact closes (its phase), whatever h is, and a frictional impact (the
 * four balls' line) taken in two parts is not the impulse of one (Table I's
 * velocities after the line's impact did not converge below h = 5e-4).
 * So the step is cut there: a substep of the paper's scheme up to the
 * closing time t_c (the contact just touching at its end), then the rest of
 * the step, whose LCP has the contact at phi + skin = 0 and takes the impact
 * whole. Each substep is the paper's eq. (29) with its own h. */
/* substeps of one step at most (the last one takes what is left with the
 * paper's gap term) */
#ifndef KHZ_LCP_SUBSTEPS
#define KHZ_LCP_SUBSTEPS 8
#endif
/* a closing within this fraction of the step's start or end is not split
 * off: the gap term then defers at most this share of the impact */
#define KHZ_LCP_PHASE_MIN 1e-3

/* the earliest time in (0, h) at which a contact closes at an impact's
 * speed, 0 when none does; the points of W->all with ref == ref: those of
 * the prediction (0), or those the re-check pass ref found at q+.
 *
 * The prediction's: the gap over the substep t under the free motion
 * (q + t v_free(t), v_free(t) = v + t a) is
 *   G(t) = G0 + t v_n + t^2 a_n,   G(h) = phi + skin at the prediction,
 * v_n, a_n the normal velocity at the start and its rate (v_free(h) - v)/h
 * at the contact's two points. The re-check's: under the pass's v+ (the
 * impulses of the contacts closed at the start), G(t) = G0 + t v+_n, G(h)
 * at q+. A contact counts when G0 > 0 > G(h) and it approaches at t_c
 * faster than contact.impact_velocity and than twice the change of v_n the
 * free motion makes over the step (a resting contact, which gravity
 * presses by g h per step, is never split) */
static double closing_time(const khzModel *m, khzData *d, lcpWork *W, double h, int ref) {
  int any = 0;
  for (int i = 0; i < W->nall && !any; i++) any = W->all[i].ref == ref && W->all[i].phi + W->all[i].skin < 0;
  if (!any) return 0;
  double tmin = INFINITY, *vn[3] = {W->vn, W->vn + W->ptmax, W->vn + 2 * (size_t)W->ptmax};
  /* the normal velocities at the points at the current positions (the
   * prediction's or q+; to first order those at q): at the start, in the
   * free motion, in the pass's v+ */
  const double *vel[3] = {d->qd, W->vfree, W->vplus};
  for (int pass = 0; pass < (ref ? 3 : 2); pass++) {
    khz_velocityPass(m, d, vel[pass]);
    for (int i = 0; i < W->nall; i++) {
      const lcpPoint *p = W->all + i;
      if (p->ref != ref || !(p->phi + p->skin < 0)) continue;
      double x0[3], x1[3], v0[3], v1[3];
      world_point(d, p->body[0], p->local[0], x0);
      world_point(d, p->body[1], p->local[1], x1);
      khz_pointVelocity(m, d, p->body[0], x0, v0);
      khz_pointVelocity(m, d, p->body[1], x1, v1);
      vn[pass][i] = khzu_dot3(p->normal, v0) - khzu_dot3(p->normal, v1);
    }
  }
  for (int i = 0; i < W->nall; i++) {
    const lcpPoint *p = W->all + i;
    if (p->ref != ref || !(p->phi + p->skin < 0)) continue;
    double G = p->phi + p->skin, free_change = fabs(vn[1][i] - vn[0][i]), t, vc;
    if (ref == 0) {
      double vn0 = vn[0][i], an = (vn[1][i] - vn0) / h, G0 = G - h * vn[1][i];
      if (!(G0 > 0)) continue;
      /* the root of G nearest 0 (the stable form of the quadratic formula) */
      double den = -vn0 + sqrt(fmax(vn0 * vn0 - 4 * an * G0, 0));
      if (!(den > 0)) continue;
      t = 2 * G0 / den, vc = -(vn0 + t * an);
    } else {
      double G0 = G - h * vn[2][i];
      vc = -vn[2][i];
      if (!(G0 > 0) || !(vc > 0)) continue;
      t = G0 / vc;
    }
    if (t < KHZ_LCP_PHASE_MIN * h || t > (1 - KHZ_LCP_PHASE_MIN) * h) continue;
    if (vc > m->contact.impact_velocity && vc > 2 * free_change) tmin = fmin(tmin, t);
  }
  return tmin < h ? tmin : 0;
}

/* one substep of h from d's state, from time t0 to t1 (d->time-based: the
 * warm record's clock): the free velocity, collision at the predicted
 * positions, the LCP island by island, the re-check at q+. Returns 0 with
 * d->q, d->qd, the contact list and the warm record at its end; -1 when its
 * first pass cannot be solved (d->q, d->qd untouched); 1 when may_split and
 * a contact closes inside it at an impact's speed: *split is the time, and
 * nothing but the kinematics is changed */
static int substep(const khzModel *m, khzData *d, lcpWork *W, double h, double t0, double t1,
                   int may_split, double *split) {
  lcpWarm *warm = (lcpWarm *)d->lcp_warm;
  /* entries in use (a restored image is not trusted beyond the capacity) */
  int warm_n = warm->npair < 0 || warm->npair > m->npair_max ? m->npair_max : warm->npair;
  /* the record is the last (sub)step's only when this one starts where it ended */
  W->warm_old = warm_n > 0 && warm_n == warm->npair && warm->next_time == t0 ? warm : NULL;
  W->nall = W->np_last = W->warm_nnew = 0;
  /* the pair state as the substep found it: the collision passes below
   * rewrite it, and a split substep starts again from it. Only the slots
   * in use: all of them (the humanoid's 372 x 1.8 kB) were half the
   * instructions of its LCP step. Without the split (contact.lcp_split_impacts
   * off) there is one substep, and the step's own copy (khz_lcpStep) serves */
  const int split_on = m->contact.lcp_split_impacts;
  if (split_on) save_pairs(m, d, W->sub_pair, W->sub_slot, &W->sub_n);
  /* the velocity without contact, the contacts violated at q + h v_free */
  khz_lcpFreeVelocity(m, d, W->tau, W->qdd, W->vfree, h);
  khz_integratePos(m, W->qplus, d->q, W->vfree, h);
  collide_at(m, d, W->qplus);
  W->save_nc = d->ncontact, W->save_np = d->ncpoint;
  memcpy(W->save_c, d->contact, (size_t)d->ncontact * sizeof(khzContact));
  memcpy(W->save_p, d->cpoint, (size_t)d->ncpoint * sizeof(khzContactPoint));
  int ok = add_pairs(m, d, W, 0, 0) >= 0 && (!W->lp_on || lp_pairs(m, d, W, 0, 0) >= 0);
  if (ok && may_split) {
    double tc = closing_time(m, d, W, h, 0);
    if (tc > 0) {
      if (observer) counters.splits++;
      restore_pairs(m, d, W->sub_pair, W->sub_slot, W->sub_n);
      *split = tc;
      return 1;
    }
  }
  memcpy(W->vplus, W->vfree, (size_t)m->nv * sizeof(double));
  /* solve island by island, re-check at q+, solve again the islands that
   * the new violations join */
  for (int pass = 0; ok && W->nall > 0 && pass < KHZ_LCP_PASSES; pass++) {
    islands(m, W);
    memcpy(W->vtry, W->vplus, (size_t)m->nv * sizeof(double));
    int pass_ok = 1;
    for (int isl = 0; isl < W->nisl && pass_ok; isl++) {
      const int *points = W->iorder + W->istart[isl];
      int np = W->istart[isl + 1] - W->istart[isl], fresh = pass == 0;
      for (int i = 0; i < np && !fresh; i++) fresh = W->all[points[i]].ref == pass;
      /* an island no new point joined is the last pass's: its z and its
       * dofs' v+ stand */
      if (!fresh) continue;
      if (np > W->npmax) {
        pass_ok = 0;
        break;
      }
      W->np = np;
      for (int i = 0; i < np; i++) W->pt[i] = W->all[points[i]];
      patches(W);
      if (W->n > W->nmax || W->nr > W->nrowmax) {
        pass_ok = 0;
        break;
      }
      pass_ok = mass_blocks(m, d, W);
      if (!pass_ok) break;
      contact_rows(m, d, W);
      int n = assemble(W, h), basis_ok;
      khzLcpStatus st = solve(W, n, warm_guess(W), &basis_ok);
      W->timed_out |= st == KHZ_LCP_TIMEOUT;
      pass_ok = st == KHZ_LCP_SOLVED;
      if (pass_ok) island_update(W, points), warm_record(W, m, basis_ok);
    }
    if (!pass_ok) {
      /* a re-check pass that cannot be solved: the last pass solved stands
       * (the pairs it found at q+ wait for the next step's prediction,
       * which will hold them); the first pass failing fails the step */
      if (pass > 0) {
        W->nall = W->np_last;
        memcpy(W->zall, W->zlast, (size_t)W->nall * (W->k + 2) * sizeof(double));
      } else {
        ok = 0;
      }
      break;
    }
    memcpy(W->vplus, W->vtry, (size_t)m->nv * sizeof(double));
    khz_integratePos(m, W->qplus, d->q, W->vplus, h);
    W->np_last = W->nall;
    memcpy(W->zlast, W->zall, (size_t)W->nall * (W->k + 2) * sizeof(double));
    if (pass == KHZ_LCP_PASSES - 1 || lcp_late(W)) break;
    memcpy(W->vref + (size_t)pass * m->nv, W->vplus, (size_t)m->nv * sizeof(double));
    collide_at(m, d, W->qplus);
    int added = add_pairs(m, d, W, pass + 1, 1);
    if (added >= 0 && W->lp_on) {
      int lp_added = lp_pairs(m, d, W, pass + 1, 1);
      added = lp_added < 0 ? -1 : added + lp_added;
    }
    if (added < 0) W->nall = W->np_last; /* beyond the capacity: as above */
    if (added <= 0) break;
    /* a contact that the impulses of this pass close inside the substep (a
     * ball struck into the next): cut the substep there too */
    double tc = may_split ? closing_time(m, d, W, h, pass + 1) : 0;
    if (tc > 0) {
      if (observer) counters.splits++;
      restore_pairs(m, d, W->sub_pair, W->sub_slot, W->sub_n);
      *split = tc;
      return 1;
    }
  }
  if (!ok) {
    if (split_on) restore_pairs(m, d, W->sub_pair, W->sub_slot, W->sub_n);
    return -1;
  }
  memcpy(d->qd, W->vplus, (size_t)m->nv * sizeof(double));
  memcpy(d->q, W->qplus, (size_t)m->nq * sizeof(double));
  report(m, d, W, h);
  memcpy(warm->pair, W->warm_new, (size_t)W->warm_nnew * sizeof(lcpWarmPair));
  if (warm_n > W->warm_nnew)
    memset(warm->pair + W->warm_nnew, 0, (size_t)(warm_n - W->warm_nnew) * sizeof(lcpWarmPair));
  warm->npair = W->warm_nnew;
  /* where the next (sub)step starts; no pairs, no record (all zero) */
  warm->next_time = W->warm_nnew > 0 ? t1 : 0;
  return 0;
}

int khz_lcpStep(const khzModel *m, khzData *d, double h) {
  size_t mark = khz_stackMark(d);
  lcpWork work, *W = &work;
  int ok = lcp_carve(m, d, W), saved = ok;
  khz_lcpLemkeSettings(&W->lk);
  W->restitution = m->contact.lcp_restitution ? m->contact.restitution : 0;
  W->impact_speed = m->contact.impact_velocity;
  W->v0 = d->qd;
  W->h_step = h;
  if (ok && d->lcp_time_limit > 0) W->lk.deadline = khz_lemkeNow() + d->lcp_time_limit;
  if (ok) {
    /* the state as the step found it, put back when a substep fails */
    save_pairs(m, d, W->save_pair, W->save_slot, &W->save_n);
    memcpy(W->q_start, d->q, (size_t)m->nq * sizeof(double));
    memcpy(W->qd_start, d->qd, (size_t)m->nv * sizeof(double));
  }
  /* substeps: up to the closing of an impact's contact (closing_time),
   * then the rest, which may split again; the last takes what is left */
  double t = 0;
  const int maxsub = m->contact.lcp_split_impacts ? KHZ_LCP_SUBSTEPS : 1;
  for (int sub = 0; ok; sub++) {
    double tc = 0;
    int r = substep(m, d, W, h - t, d->time + t, d->time + h, sub < maxsub - 1, &tc);
    if (r == 1) {
      double tn = t + tc;
      r = substep(m, d, W, tc, d->time + t, d->time + tn, 0, NULL);
      if (r == 0) {
        t = tn;
        continue;
      }
      /* a short substep's LCP (gaps over a small h: q of metres per second
       * beside micrometres per second) that Lemke cannot solve: the rest of
       * the step unsplit, with the paper's gap term, before the penalty
       * method (the four balls at h = 1e-4: a substep of 1.3e-6 s ended on
       * a ray in every attempt) */
      if (!W->timed_out) r = substep(m, d, W, h - t, d->time + t, d->time + h, 0, NULL);
    }
    ok = r == 0;
    break;
  }
  d->lcp_timeouts += W->timed_out;
  if (ok) {
    for (int k = 0; k < m->nv; k++) d->qdd[k] = (d->qd[k] - W->qd_start[k]) / h;
  } else {
    lcpWarm *warm = (lcpWarm *)d->lcp_warm;
    int warm_n = warm->npair < 0 || warm->npair > m->npair_max ? m->npair_max : warm->npair;
    /* no record (all zero): the next step starts cold */
    memset(warm->pair, 0, (size_t)warm_n * sizeof(lcpWarmPair));
    warm->npair = 0, warm->next_time = 0;
    d->warning[KHZ_WARN_LCP]++;
    d->ncontact = d->ncpoint = 0;
    if (saved) {
      restore_pairs(m, d, W->save_pair, W->save_slot, W->save_n);
      memcpy(d->q, W->q_start, (size_t)m->nq * sizeof(double));
      memcpy(d->qd, W->qd_start, (size_t)m->nv * sizeof(double));
    }
  }
  khz_stackFree(d, mark);
  return ok ? 0 : -1;
}
