/* dynamics.c — articulated-body dynamics after Featherstone,
 * Rigid Body Dynamics Algorithms (RBDA, 2008):
 *   joint models          RBDA Table 4.1 (revolute, prismatic, spherical, free)
 *   forward kinematics    RBDA eq. 4.x / the first pass of Table 5.1
 *   ABA                   RBDA Table 7.1 (articulated-body algorithm, O(n))
 *   RNEA                  RBDA Table 5.1 (recursive Newton-Euler)
 *   CRBA                  RBDA Table 6.2 (composite-rigid-body algorithm)
 * Armature (reflected rotor inertia) is added to D_i in ABA and to M's diagonal
 * (RBDA §9.6). Every tree is computed in one frame: world-aligned axes at the
 * origin of its root body, so no spatial transform is applied inside the
 * recursions. The floating joint uses MuJoCo's free-joint coordinates (see
 * khz.h): translation columns along the world axes, rotation columns about the
 * body axes.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "khz/khz.h"
#include "dynamics.h"
#include "pool.h"
#include "spatial.h"

/* ---------------------------------------------- structural zeros and ones --
 * Products whose factors are structurally 0 or 1 are left out: a rotation that
 * is exactly the identity, the world as parent, a body without mass or
 * inertia, a free joint's subspace. The sums that remain keep their order, so
 * a result differs from the dense product's at most in the sign of a zero
 * (x + 0 * y = x, 1 * x = x for every finite x, x = -0 aside). */

/* R is exactly the identity */
static int is_identity3(const double R[9]) {
  return R[0] == 1 && R[4] == 1 && R[8] == 1 && R[1] == 0 && R[2] == 0 && R[3] == 0 &&
         R[5] == 0 && R[6] == 0 && R[7] == 0;
}

/* The tests above hold for the model's lifetime (nothing writes a compiled
 * model's bodies), so khz_compile takes them once into m->body_zeros and the
 * passes read one flag per body: */
enum {
  ZERO_MASSLESS = 1,  /* no mass and no rotational inertia: its spatial inertia is zero
                       * (the massless links of an MJCF body with several joints, URDF's
                       * dummy links) */
  ZERO_ORIGIN = 2,    /* the joint origin's rotation is exactly the identity */
  ZERO_PRINCIPAL = 4, /* the inertia about the com is diagonal in the body frame */
  ZERO_CLOSED = 8,    /* a free body alone in its tree, with mass and a positive definite
                       * inertia: free_alone_fast applies unless a dof has armature or
                       * (h > 0) damping, which the model's users may set after compile */
  ZERO_ALL_ALONE = 16 /* the world's entry only: every body is alone in its tree (a pile),
                       * so ABA has no pass along a tree */
};

void khz_dynamicsZeros(khzModel *m) {
  for (int i = 0; i < m->nbody; i++) {
    const double *Ic = m->body_inertia + 9 * i;
    int massless = m->body_mass[i] == 0, principal = 1;
    for (int k = 0; k < 9; k++) massless = massless && Ic[k] == 0;
    for (int k = 0; k < 9; k++) principal = principal && (k % 4 == 0 || Ic[k] == 0);
    int closed = 0;
    if (i > 0 && m->jnt_type[i] == KHZ_JOINT_FLOATING && m->body_parent[i] == 0 && m->body_treeend[i] == i + 1 &&
        !massless && m->body_mass[i] > 0) {
      double L[9];
      memcpy(L, Ic, sizeof L);
      closed = principal ? Ic[0] > 0 && Ic[4] > 0 && Ic[8] > 0 : khzu_cholFactor(L, 3) == 0;
    }
    m->body_zeros[i] = (massless ? ZERO_MASSLESS : 0) | (is_identity3(m->body_rot + 9 * i) ? ZERO_ORIGIN : 0) |
                       (principal ? ZERO_PRINCIPAL : 0) | (closed ? ZERO_CLOSED : 0);
  }
  int all_alone = 1;
  for (int i = 1; i < m->nbody; i++) all_alone = all_alone && m->body_parent[i] == 0 && m->body_treeend[i] == i + 1;
  if (all_alone) m->body_zeros[0] |= ZERO_ALL_ALONE;
}

/* d->aba_held: 1 + stiff_only after khz_abaInertiasHeld; ABA_HELD_PLAIN after
 * khz_abaInertias (h = 0, no IA_handed), whose free objects' U and Dinv the
 * next ABA with store may take (aba_start) */
enum { ABA_HELD_PLAIN = 3 };

/* free_alone_fast applies to body i at h: ZERO_CLOSED, no armature and no
 * damping made implicit (h > 0) */
static inline int free_closed_applies(const khzModel *m, int i, double h) {
  if (!(m->body_zeros[i] & ZERO_CLOSED)) return 0;
  const double *arm = m->dof_armature + m->jnt_dofadr[i], *damp = m->dof_damping + m->jnt_dofadr[i];
  /* every entry == 0 (+0 or -0; a NaN is not): the entries' bits ORed, the
   * sign bit shifted out, are 0. No branch per dof: this runs twice per
   * free body and stage (the stage pass, the closed form) */
  uint64_t bits = 0, u;
  for (int k = 0; k < 6; k++) memcpy(&u, arm + k, sizeof u), bits |= u;
  if (h > 0)
    for (int k = 0; k < 6; k++) memcpy(&u, damp + k, sizeof u), bits |= u;
  return (bits << 1) == 0;
}

/* the constant entries of a free joint's S (khz_forwardPass writes the
 * rest): [0; e_k] for the translation columns, 0 in the rotation columns'
 * lower halves */
void khz_dynamicsInitData(const khzModel *m, khzData *d) {
  for (int i = 1; i < m->nbody; i++) {
    if (m->jnt_type[i] != KHZ_JOINT_FLOATING) continue;
    double *S = d->S + 36 * i;
    memset(S, 0, 36 * sizeof(double));
    for (int k = 0; k < 3; k++) S[6 * k + 3 + k] = 1;
  }
}

static inline int body_massless(const khzModel *m, int i) { return m->body_zeros[i] & ZERO_MASSLESS; }

/* Body i's spatial inertia at its tree origin, world axes (36), from what
 * the forward pass keeps of it in d->cinert: the com relative to the origin
 * (3) and the rotational inertia about the com (9); the mass is the
 * model's. The same function on the same numbers as when the pass wrote the
 * 36 itself, so the same bits; at 960 bodies the 24 constant or repeated
 * entries were 2.6 of the 4.5 cache lines that every pass wrote and every
 * ABA call read back per body. */
static inline void body_inertia(const khzModel *m, const khzData *d, int i, double I[36]) {
  if (body_massless(m, i)) {
    memset(I, 0, 36 * sizeof(double));
    return;
  }
  const double *ci = d->cinert + KHZ_CINERT * i;
  khzu_spatialInertia(I, m->body_mass[i], ci, ci + 3);
}

/* ABA keeps its 6x6 inertias (the rigid I, the articulated IA and Ia, in
 * d->IA and locals) transposed, column by column: a product M v is then the
 * sum of M's columns scaled by v's entries, each entry's terms in the row
 * product's order (M_r0 v_0 + M_r1 v_1 + ... from the left), so the same
 * bits, while the six rows go four and two to a vector instead of one
 * horizontal sum each. The rank-1 updates and the sums into the parent are
 * entry by entry and do not mind the layout. */

/* body_inertia's 36, transposed (I^T: entry (r, k) of I at 6 k + r) */
static inline void body_inertia_T(const khzModel *m, const khzData *d, int i, double IT[36]) {
  if (body_massless(m, i)) {
    memset(IT, 0, 36 * sizeof(double));
    return;
  }
  const double *ci = d->cinert + KHZ_CINERT * i;
  khzu_spatialInertiaStrided(IT, m->body_mass[i], ci, ci + 3, 1, 6);
}

/* res = M v for M given transposed (MT = M^T, khzu_mulMatVec6's bits) */
static inline void mul_T_vec6(double res[6], const double MT[36], const double v[6]) {
  double acc[6];
  for (int r = 0; r < 6; r++) acc[r] = MT[r] * v[0];
  for (int k = 1; k < 6; k++)
    for (int r = 0; r < 6; r++) acc[r] += MT[6 * k + r] * v[k];
  memcpy(res, acc, sizeof acc);
}

/* six-entry steps on arrays that do not overlap: with restrict GCC does
 * them as vectors, not entry by entry in case they alias (the same
 * operations per entry) */
static inline void vec6_sub(double *restrict r, const double *restrict x) {
  for (int k = 0; k < 6; k++) r[k] -= x[k];
}
static inline void vec6_sum(double *restrict r, const double *restrict x, const double *restrict y) {
  for (int k = 0; k < 6; k++) r[k] = x[k] + y[k];
}
/* r += x + y (x + y first) */
static inline void vec6_addSum(double *restrict r, const double *restrict x, const double *restrict y) {
  for (int k = 0; k < 6; k++) r[k] += x[k] + y[k];
}
static inline void vec6_addScaled(double *restrict r, const double *restrict x, double s) {
  for (int k = 0; k < 6; k++) r[k] += x[k] * s;
}

/* body i is the only body of its tree (the world's child, no children): its
 * articulated inertia is its rigid one */
static inline int body_alone(const khzModel *m, int i) {
  return m->body_parent[i] == 0 && m->body_treeend[i] == i + 1;
}

/* A free joint's subspace (khz_forwardPass): the translation columns are
 * S_k = [0; e_k] (k < 3), the rotation columns S_3+k = [R e_k; 0] with R the
 * body's rotation. S_a . f: */
static inline double free_dotS(const double S[36], int a, const double f[6]) {
  if (a < 3) return f[3 + a];
  const double *s = S + 6 * a;
  return s[0] * f[0] + s[1] * f[1] + s[2] * f[2];
}

/* U = IA S for a free joint, column by column (IAT = IA^T, as ABA keeps it) */
static inline __attribute__((always_inline)) void free_mulIS(double U[36], const double IAT[36], const double S[36]) {
  for (int k = 0; k < 3; k++)
    for (int r = 0; r < 6; r++) U[6 * k + r] = IAT[6 * (3 + k) + r];
  for (int k = 3; k < 6; k++) {
    const double *s = S + 6 * k;
    for (int r = 0; r < 6; r++) U[6 * k + r] = IAT[r] * s[0] + IAT[6 + r] * s[1] + IAT[12 + r] * s[2];
  }
}

/* v += S x for a free joint (x: its 6 joint rates or accelerations) */
static inline void free_addSx(double v[6], const double S[36], const double x[6]) {
  for (int k = 0; k < 3; k++) {
    const double *s = S + 6 * (3 + k);
    v[0] += s[0] * x[3 + k], v[1] += s[1] * x[3 + k], v[2] += s[2] * x[3 + k];
  }
  v[3] += x[0], v[4] += x[1], v[5] += x[2];
}

/* ----------------------------------------------------- joint kinematics -- */

/* Pose of body i in its parent: R_rel = Ro RJ(q), p_rel = po + Ro pJ(q). */
static inline __attribute__((always_inline)) void joint_pose(const khzModel *m, int i, const double *q, double R_rel[9],
                                                             double p_rel[3]) {
  const double *Ro = m->body_rot + 9 * i, *po = m->body_pos + 3 * i, *axis = m->jnt_axis + 3 * i;
  const double *qi = q + m->jnt_qadr[i];
  double RJ[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, pJ[3] = {0, 0, 0};
  switch (m->jnt_type[i]) {
    case KHZ_JOINT_REVOLUTE:
    case KHZ_JOINT_CONTINUOUS: {
      double quat[4];
      khzu_axisAngle2Quat(quat, axis, qi[0]);
      khzu_quat2mat(RJ, quat);
      break;
    }
    case KHZ_JOINT_PRISMATIC:
      pJ[0] = axis[0] * qi[0], pJ[1] = axis[1] * qi[0], pJ[2] = axis[2] * qi[0];
      break;
    case KHZ_JOINT_SPHERICAL:
      khzu_quat2matScaled(RJ, qi);
      break;
    case KHZ_JOINT_FLOATING:
      khzu_quat2matScaled(RJ, qi + 3);
      pJ[0] = qi[0], pJ[1] = qi[1], pJ[2] = qi[2];
      break;
    default:
      break;
  }
  /* an unrotated joint origin (most bodies): Ro = I, whose products are exact */
  if (m->body_zeros[i] & ZERO_ORIGIN) {
    memcpy(R_rel, RJ, sizeof RJ);
    p_rel[0] = pJ[0] + po[0], p_rel[1] = pJ[1] + po[1], p_rel[2] = pJ[2] + po[2];
    return;
  }
  khzu_mulMat3(R_rel, Ro, RJ);
  khzu_mulMatVec3(p_rel, Ro, pJ);
  p_rel[0] += po[0], p_rel[1] += po[1], p_rel[2] += po[2];
}

/* a unit twist about (or along) world direction a through point r (relative to
 * the tree origin): revolute [a; r x a], prismatic [0; a] */
static inline void twist_revolute(double col[6], const double a[3], const double r[3]) {
  col[0] = a[0], col[1] = a[1], col[2] = a[2];
  khzu_cross(col + 3, r, a);
}

/* First pass shared by every algorithm. All spatial quantities of a tree are
 * expressed in world-aligned axes at the tree's origin (the root body's origin),
 * so the recursions below need no coordinate transforms (RBDA §7.3 notes the
 * choice of coordinates is free; MuJoCo makes a similar one). Computes world
 * poses, subspaces S, velocities v, bias accelerations c = v x vJ (the
 * floating joint's world-fixed translation columns add nothing) and the body
 * spatial inertias. qd may be NULL (positions only). */
/* the velocity part of the first pass for body i, from its subspace S (set by
 * the position part): vJ = S qd, v = v_parent + vJ, c = v x vJ */
static inline __attribute__((always_inline)) void body_velocity(const khzModel *m, khzData *d, const double *qd,
                                                                int i) {
  int p = m->body_parent[i], nv = m->jnt_nv[i];
  const double *S = d->S + 36 * i;
  double *v = d->vtree + 6 * i, *c = d->cbias + 6 * i, vJ[6] = {0, 0, 0, 0, 0, 0};
  if (qd) {
    const double *qdi = qd + m->jnt_dofadr[i];
    if (m->jnt_type[i] == KHZ_JOINT_FLOATING) free_addSx(vJ, S, qdi);
    else
      for (int k = 0; k < nv; k++)
        for (int a = 0; a < 6; a++) vJ[a] += S[6 * k + a] * qdi[k];
    const double *vp = p ? d->vtree + 6 * p : NULL;
    if (vp) vec6_sum(v, vp, vJ);
    else
      for (int a = 0; a < 6; a++) v[a] = 0 + vJ[a];
    if (m->jnt_type[i] == KHZ_JOINT_FLOATING) {
      double rot[6] = {vJ[0], vJ[1], vJ[2], 0, 0, 0};
      khzu_crossMotion(c, v, rot);
    } else {
      khzu_crossMotion(c, v, vJ);
    }
  } else {
    memset(v, 0, 6 * sizeof(double));
    memset(c, 0, 6 * sizeof(double));
  }
}

/* what the forward pass's fields now hold: (q, qd) for every body
 * (khz_kinematicsAt). A sleeping body skipped keeps the fields of its last
 * pass, at its frozen q and zero velocity, which are its q and qd: passes
 * skip only sleeping bodies, khz_islandFreeze puts their q and qd back, and
 * what changes them (a caller's q, qd, torque or wrench) wakes them through
 * khz_wake, which forgets the record. Only a pass at the state's
 * own arrays (d->q, d->qd) is recorded, which is what a step looks up at its
 * start; a pass at other arrays (an integrator stage's) forgets the record
 * rather than copy two state vectors (98 kB at 960 free bodies) that nobody
 * compares */
static void stamp(const khzModel *m, khzData *d, const double *q, const double *qd, int skipped) {
  (void)skipped; /* a skipped body is a sleeping one: its fields hold (above) */
  if (q) d->aba_held = 0; /* the held inertias (khz_abaInertiasHeld) were at the last q */
  if ((!q && d->kin_valid < 1) || (q && q != d->q) || (qd && qd != d->qd)) {
    d->kin_valid = 0;
    return;
  }
  if (q && q != d->kin_q) memcpy(d->kin_q, q, (size_t)m->nq * sizeof(double));
  if (qd) memcpy(d->kin_qd, qd, (size_t)m->nv * sizeof(double));
  d->kin_valid = qd ? 2 : 1;
}

int khz_kinematicsAt(const khzModel *m, const khzData *d, const double *q, const double *qd) {
  return d->kin_valid == 2 && !memcmp(d->kin_q, q, (size_t)m->nq * sizeof(double)) &&
         !memcmp(d->kin_qd, qd, (size_t)m->nv * sizeof(double));
}

static inline __attribute__((always_inline)) void velocity_pass(const khzModel *m, khzData *d, const double *qd) {
  int skipped = 0;
  memset(d->vtree, 0, 6 * sizeof(double));
  for (int i = 1; i < m->nbody; i++) {
    if (!d->body_sleep[i]) body_velocity(m, d, qd, i);
    else skipped = 1;
  }
  stamp(m, d, NULL, qd, skipped);
}

/* velocity_pass compiled for AVX too, as forward_pass: the same bits */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void velocity_pass_avx(const khzModel *m, khzData *d, const double *qd) {
  velocity_pass(m, d, qd);
}
#endif

void khz_velocityPass(const khzModel *m, khzData *d, const double *qd) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) {
    velocity_pass_avx(m, d, qd);
    return;
  }
#endif
  velocity_pass(m, d, qd);
}

void khz_velocitySave(const khzModel *m, const khzData *d, double *saved) {
  size_t n = 6 * (size_t)m->nbody;
  memcpy(saved, d->vtree, n * sizeof(double));
  memcpy(saved + n, d->cbias, n * sizeof(double));
}

void khz_velocityRestore(const khzModel *m, khzData *d, const double *saved) {
  size_t n = 6 * (size_t)m->nbody;
  memcpy(d->vtree, saved, n * sizeof(double));
  memcpy(d->cbias, saved + n, n * sizeof(double));
  d->kin_valid = 0; /* which qd they hold is the caller's to know */
}

/* four free bodies at a time, one per lane (GCC's vector extension: AVX
 * in the AVX builds, two SSE2 halves otherwise), each lane doing the scalar
 * path's operations in its order (no FMA): the same bits */
typedef double v4d __attribute__((vector_size(32)));
typedef long long v4l __attribute__((vector_size(32)));

/* GCC 12 takes the whole-vector stores into the arrays below for reads of
 * them (a false -Wmaybe-uninitialized in the threaded AVX job) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/* r[j] = {P[0][k j], ..., P[3][k j]} for j < n: n vectors, lane l from P[l] */
static inline __attribute__((always_inline)) void lanes4(v4d *r, const double *const P[4], int n, int k) {
  for (int j = 0; j < n; j++) {
    v4d x = {P[0][k * j], P[1][k * j], P[2][k * j], P[3][k * j]};
    r[j] = x;
  }
}

/* the stage pass's part for four free bodies alone in their trees with an
 * unrotated joint origin (forward_pass, stage): joint_pose's floating case
 * (khzu_quat2matScaled, the origin added), the world as parent (a copy), the
 * com x + R c, and v = 0 + S qd with S's rotation columns R's rows */
static inline __attribute__((always_inline)) void stage_pose4(const khzModel *m, khzData *d, const int body[4],
                                                               const double *q, const double *qd) {
  const double *qp[4], *pop[4], *cp[4], *vp[4];
  double *Rp[4], *xp[4], *xcp[4], *vtp[4];
  for (int l = 0; l < 4; l++) {
    int i = body[l];
    qp[l] = q + m->jnt_qadr[i], pop[l] = m->body_pos + 3 * i, cp[l] = m->body_com + 3 * i;
    vp[l] = qd + m->jnt_dofadr[i];
    Rp[l] = d->xrot + 9 * i, xp[l] = d->xpos + 3 * i, xcp[l] = d->xcom + 3 * i, vtp[l] = d->vtree + 6 * i;
  }
  v4d qq[7], po[3], c[3], x[6], R[9], pw[3], xc[3], v[6];
  lanes4(qq, qp, 7, 1), lanes4(po, pop, 3, 1), lanes4(c, cp, 3, 1), lanes4(x, vp, 6, 1);
  v4d w = qq[3], X = qq[4], y = qq[5], z = qq[6], zero = {0, 0, 0, 0};
  v4d n2 = w * w + X * X + y * y + z * z, s = 2 / n2;
  s = (v4d)((v4l)s & (n2 > zero)); /* s = n2 > 0 ? 2 / n2 : 0 */
  R[0] = 1 - s * (y * y + z * z);
  R[1] = s * (X * y - w * z);
  R[2] = s * (X * z + w * y);
  R[3] = s * (X * y + w * z);
  R[4] = 1 - s * (X * X + z * z);
  R[5] = s * (y * z - w * X);
  R[6] = s * (X * z - w * y);
  R[7] = s * (y * z + w * X);
  R[8] = 1 - s * (X * X + y * y);
  for (int k = 0; k < 3; k++) pw[k] = qq[k] + po[k];
  for (int k = 0; k < 3; k++) xc[k] = pw[k] + (R[3 * k] * c[0] + R[3 * k + 1] * c[1] + R[3 * k + 2] * c[2]);
  v4d vJ[6] = {zero, zero, zero, zero, zero, zero};
  for (int k = 0; k < 3; k++)
    vJ[0] += R[k] * x[3 + k], vJ[1] += R[3 + k] * x[3 + k], vJ[2] += R[6 + k] * x[3 + k];
  vJ[3] += x[0], vJ[4] += x[1], vJ[5] += x[2];
  for (int a = 0; a < 6; a++) v[a] = 0 + vJ[a];
  for (int l = 0; l < 4; l++) {
    for (int k = 0; k < 9; k++) Rp[l][k] = R[k][l];
    for (int k = 0; k < 3; k++) xp[l][k] = pw[k][l], xcp[l][k] = xc[k][l];
    for (int k = 0; k < 6; k++) vtp[l][k] = v[k][l];
  }
}
#pragma GCC diagnostic pop

/* stage_pose4 out of the pass's loop (inline, it cost the humanoid's stage
 * passes about 30 Ir a body in the loop's code), for AVX and without */
static __attribute__((noinline)) void stage_pose4_any(const khzModel *m, khzData *d, const int body[4],
                                                      const double *q, const double *qd) {
  stage_pose4(m, d, body, q, qd);
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"), noinline)) static void stage_pose4_avx(const khzModel *m, khzData *d,
                                                                     const int body[4], const double *q,
                                                                     const double *qd) {
  stage_pose4(m, d, body, q, qd);
}
#else
#define stage_pose4_avx stage_pose4_any
#endif

/* stage (RK4's stages 2-4, with qd): the bodies free_alone_fast will take at
 * h (free_closed_applies) get their pose, com and velocity only; their S,
 * bias acceleration c and world inertia are not written (the closed form
 * forms R Ic R^T and the com itself, and reads no S or c), and the fields
 * are then no pass's: the record is dropped */
static inline __attribute__((always_inline)) void forward_pass(const khzModel *m, khzData *d, const double *q,
                                                                const double *qd, int stage, double h, int avx) {
  static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  memset(d->xpos, 0, 3 * sizeof(double));
  memcpy(d->xrot, I3, sizeof I3);
  memset(d->xcom, 0, 3 * sizeof(double));
  memset(d->vtree, 0, 6 * sizeof(double));
  int skipped = 0, batch[4], nbatch = 0;
  for (int i = 1; i < m->nbody; i++) {
    if (d->body_sleep[i]) { /* frozen: its last pass holds (docs/sleeping.md) */
      skipped = 1;
      continue;
    }
    /* a free object alone with an unrotated origin: four at a time (it has
     * no child, so nothing later in the pass reads its fields) */
    if (stage && (m->body_zeros[i] & ZERO_ORIGIN) && free_closed_applies(m, i, h)) {
      batch[nbatch++] = i;
      if (nbatch == 4) {
        if (avx) stage_pose4_avx(m, d, batch, q, qd);
        else stage_pose4_any(m, d, batch, q, qd);
        nbatch = 0;
      }
      continue;
    }
    double R[9], r[3], t[3];
    joint_pose(m, i, q, R, r);

    /* world pose */
    int p = m->body_parent[i];
    const double *Rp = d->xrot + 9 * p, *pp = d->xpos + 3 * p;
    double *Rw = d->xrot + 9 * i, *pw = d->xpos + 3 * i, *xc = d->xcom + 3 * i;
    if (p == 0) { /* the world: identity, origin */
      memcpy(Rw, R, sizeof R);
      memcpy(pw, r, sizeof r);
    } else {
      khzu_mulMat3(Rw, Rp, R);
      khzu_mulMatVec3(t, Rp, r);
      pw[0] = pp[0] + t[0], pw[1] = pp[1] + t[1], pw[2] = pp[2] + t[2];
    }
    khzu_mulMatVec3(t, Rw, m->body_com + 3 * i);
    xc[0] = pw[0] + t[0], xc[1] = pw[1] + t[1], xc[2] = pw[2] + t[2];

    if (stage && free_closed_applies(m, i, h)) {
      /* body_velocity's v = 0 + S qd with S's rotation columns R's rows
       * read in place (free_addSx's operations); the world is the parent */
      const double *x = qd + m->jnt_dofadr[i];
      double *v = d->vtree + 6 * i, vJ[6] = {0, 0, 0, 0, 0, 0};
      for (int k = 0; k < 3; k++)
        vJ[0] += Rw[k] * x[3 + k], vJ[1] += Rw[3 + k] * x[3 + k], vJ[2] += Rw[6 + k] * x[3 + k];
      vJ[3] += x[0], vJ[4] += x[1], vJ[5] += x[2];
      for (int a = 0; a < 6; a++) v[a] = 0 + vJ[a];
      continue;
    }

    /* motion subspace at the tree origin o */
    const double *o = d->xpos + 3 * m->body_root[i];
    double rel[3] = {pw[0] - o[0], pw[1] - o[1], pw[2] - o[2]}, aw[3];
    double *S = d->S + 36 * i;
    switch (m->jnt_type[i]) {
      case KHZ_JOINT_REVOLUTE:
      case KHZ_JOINT_CONTINUOUS:
        khzu_mulMatVec3(aw, Rw, m->jnt_axis + 3 * i);
        twist_revolute(S, aw, rel);
        break;
      case KHZ_JOINT_PRISMATIC:
        khzu_mulMatVec3(aw, Rw, m->jnt_axis + 3 * i);
        S[0] = S[1] = S[2] = 0;
        S[3] = aw[0], S[4] = aw[1], S[5] = aw[2];
        break;
      case KHZ_JOINT_SPHERICAL:
        for (int k = 0; k < 3; k++) {
          double col[3] = {Rw[k], Rw[3 + k], Rw[6 + k]};
          twist_revolute(S + 6 * k, col, rel);
        }
        break;
      case KHZ_JOINT_FLOATING:
        /* qd = [v_world (3), w_body (3)]: translations along world axes,
         * rotations about the body axes through the body origin (= o).
         * Only R's 9 entries vary: the constant 0s and 1s are in S since
         * khz_makeData (khz_dynamicsInitData), and the pass writes 2 of
         * S's 5 cache lines */
        for (int k = 0; k < 3; k++)
          S[6 * (3 + k) + 0] = Rw[k], S[6 * (3 + k) + 1] = Rw[3 + k], S[6 * (3 + k) + 2] = Rw[6 + k];
        break;
      default:
        break;
    }

    /* spatial inertia at o: mass, com relative to o, R Ic R^T; kept as
     * its 12 varying numbers (body_inertia) */
    if (body_massless(m, i)) {
      memset(d->cinert + KHZ_CINERT * i, 0, KHZ_CINERT * sizeof(double));
    } else {
      double tmp[9], crel[3] = {xc[0] - o[0], xc[1] - o[1], xc[2] - o[2]};
      const double *Ic = m->body_inertia + 9 * i;
      if (m->body_zeros[i] & ZERO_PRINCIPAL) {
        /* principal axes: R Ic scales R's columns */
        for (int r3 = 0; r3 < 9; r3++) tmp[r3] = Rw[r3] * Ic[4 * (r3 % 3)];
      } else {
        khzu_mulMat3(tmp, Rw, Ic);
      }
      double *ci = d->cinert + KHZ_CINERT * i;
      khzu_mulMatMatT3(ci + 3, tmp, Rw);
      ci[0] = crel[0], ci[1] = crel[1], ci[2] = crel[2];
    }

    /* velocities: v = v_parent + S qd (the root's parent, the world, is still);
     * bias c = v x vJ for body-fixed columns */
    body_velocity(m, d, qd, i);
  }
  if (nbatch) { /* fewer than four left: the last one again in the lanes left over */
    for (int k = nbatch; k < 4; k++) batch[k] = batch[nbatch - 1];
    if (avx) stage_pose4_avx(m, d, batch, q, qd);
    else stage_pose4_any(m, d, batch, q, qd);
  }
  stamp(m, d, q, qd, skipped);
  if (stage) d->kin_valid = 0;
}

/* forward_pass compiled for AVX too, as aba_core_keep: the same bits */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void forward_pass_avx(const khzModel *m, khzData *d, const double *q,
                                                            const double *qd, int stage, double h) {
  forward_pass(m, d, q, qd, stage, h, 1);
}
#endif

void khz_forwardPass(const khzModel *m, khzData *d, const double *q, const double *qd) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) {
    forward_pass_avx(m, d, q, qd, 0, 0);
    return;
  }
#endif
  forward_pass(m, d, q, qd, 0, 0, 0);
}

void khz_forwardPassStage(const khzModel *m, khzData *d, const double *q, const double *qd, double h) {
  int stage = qd != NULL && m->contact.free_closed_form;
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) {
    forward_pass_avx(m, d, q, qd, stage, h);
    return;
  }
#endif
  forward_pass(m, d, q, qd, stage, h, 0);
}

void khz_kinematics(const khzModel *m, khzData *d) {
  khz_forwardPass(m, d, d->q, d->qd);
  /* public velocities: [w; velocity of the body origin], world axes */
  memset(d->cvel, 0, 6 * sizeof(double));
  for (int i = 1; i < m->nbody; i++) {
    const double *v = d->vtree + 6 * i, *o = d->xpos + 3 * m->body_root[i], *x = d->xpos + 3 * i;
    double rel[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]}, wxr[3];
    khzu_cross(wxr, v, rel);
    double *cv = d->cvel + 6 * i;
    cv[0] = v[0], cv[1] = v[1], cv[2] = v[2];
    cv[3] = v[3] + wxr[0], cv[4] = v[4] + wxr[1], cv[5] = v[5] + wxr[2];
  }
}

/* every bit of x[0..n) is zero (each entry +0) */
static inline int all_plus_zero(const double *x, int n) {
  uint64_t bits = 0;
  for (int k = 0; k < n; k++) {
    uint64_t u;
    memcpy(&u, x + k, sizeof u);
    bits |= u;
  }
  return bits == 0;
}

/* external wrenches: world force F, torque T at the com -> spatial force at o */
void khz_externalForces(const khzModel *m, khzData *d) {
  for (int i = 1; i < m->nbody; i++) {
    const double *w = d->xfrc + 6 * i;
    double *f = d->fext + 6 * i;
    /* no wrench (+0 throughout): arm x 0 is +-0 and +-0 + (+0) is +0, so the
     * product below gives +0 everywhere for a finite arm */
    if (all_plus_zero(w, 6)) {
      memset(f, 0, 6 * sizeof(double));
      continue;
    }
    const double *o = d->xpos + 3 * m->body_root[i], *xc = d->xcom + 3 * i;
    double arm[3] = {xc[0] - o[0], xc[1] - o[1], xc[2] - o[2]}, n[3];
    khzu_cross(n, arm, w);
    f[0] = n[0] + w[3], f[1] = n[1] + w[4], f[2] = n[2] + w[5];
    f[3] = w[0], f[4] = w[1], f[5] = w[2];
  }
}

/* ------------------------------------------------------------------ ABA -- */

void khz_aba(const khzModel *m, khzData *d, const double *q, const double *qd,
             const double *tau, double *qdd) {
  khz_forwardPass(m, d, q, qd);
  khz_externalForces(m, d);
  khz_abaCore(m, d, tau, qdd);
}

void khz_abaCore(const khzModel *m, khzData *d, const double *tau, double *qdd) {
  khz_abaCoreDamped(m, d, tau, qdd, 0, 0);
}

/* the damping a joint's D term takes for an implicit step of h (see dynamics.h):
 * b_k h, or 0 when stiff_only and the joint's explicit rate h b_k / D_k is below 1 */
static inline double implicit_damping(const khzModel *m, int dof, double Dk, double h,
                                      int stiff_only) {
  double bh = m->dof_damping[dof] * h;
  return bh > 0 && (!stiff_only || bh > Dk) ? bh : 0;
}

/* the parent's bias force receives U D^-1 u (RBDA Table 7.1) */
static inline void add_bias_to_parent(double *pAp, const double *U, const double *Dinv,
                                      const double *u, int nv) {
  if (!nv) return;
  if (nv == 1) { /* one column */
    double Du = Dinv[0] * u[0];
    vec6_addScaled(pAp, U, Du);
    return;
  }
  double Du[6] = {0};
  for (int a = 0; a < nv; a++)
    for (int b = 0; b < nv; b++) Du[a] += Dinv[nv * a + b] * u[b];
  for (int a = 0; a < nv; a++)
    for (int k = 0; k < 6; k++) pAp[k] += U[6 * a + k] * Du[a];
}

void khz_abaCoreDamped(const khzModel *m, khzData *d, const double *tau, double *qdd, double h,
                       int stiff_only) {
  khz_abaCoreKeep(m, d, tau, qdd, h, stiff_only, NULL, 0, 1);
}

/* The backward pass at body i (RBDA Table 7.1): U = IA S, D = S^T U +
 * armature (+ h b for implicit damping: (M + h B) qdd = tau - B qd - ...,
 * exact for diagonal B), Dinv = D^-1 and u = tau - S^T pA (tau: the joint's
 * own entries; pA NULL: u is not computed, the inertias alone) */
static inline __attribute__((always_inline)) void joint_factors(const khzModel *m, int i, const double *IAT, const double *S,
                                 const double *pA, const double *tau, double h, int stiff_only,
                                 double *U, double *Dinv, double *u) {
  int nv = m->jnt_nv[i], dof = m->jnt_dofadr[i];
  if (nv == 1) {
    mul_T_vec6(U, IAT, S);
    double D = khzu_dot6(S, U) + m->dof_armature[dof];
    if (h > 0) D += implicit_damping(m, dof, D, h, stiff_only);
    Dinv[0] = 1 / D;
    if (pA) u[0] = tau[0] - khzu_dot6(S, pA);
  } else if (nv > 1) {
    double Dm[36];
    if (m->jnt_type[i] == KHZ_JOINT_FLOATING) {
      /* nv is 6: the loops' bounds as constants unroll (the same operations
       * in the same order as with nv, so the same bits) */
      free_mulIS(U, IAT, S);
#pragma GCC unroll 6
      for (int a = 0; a < 6; a++) {
#pragma GCC unroll 6
        for (int b = a; b < 6; b++) Dm[6 * a + b] = Dm[6 * b + a] = free_dotS(S, a, U + 6 * b);
        Dm[6 * a + a] += m->dof_armature[dof + a];
        if (h > 0) Dm[6 * a + a] += implicit_damping(m, dof + a, Dm[6 * a + a], h, stiff_only);
        if (pA) u[a] = tau[a] - free_dotS(S, a, pA);
      }
    } else {
      for (int k = 0; k < nv; k++) mul_T_vec6(U + 6 * k, IAT, S + 6 * k);
      for (int a = 0; a < nv; a++) {
        for (int b = a; b < nv; b++)
          Dm[nv * a + b] = Dm[nv * b + a] = khzu_dot6(S + 6 * a, U + 6 * b);
        Dm[nv * a + a] += m->dof_armature[dof + a];
        if (h > 0) Dm[nv * a + a] += implicit_damping(m, dof + a, Dm[nv * a + a], h, stiff_only);
        if (pA) u[a] = tau[a] - khzu_dot6(S + 6 * a, pA);
      }
    }
    /* Dinv from a Cholesky factor */
    khzu_cholFactor(Dm, nv);
    khzu_cholInverse(Dm, nv, Dinv);
  }
}

/* u = tau - S^T pA alone (the factors kept from an earlier call) */
static inline void joint_bias(const khzModel *m, int i, const double *S, const double *pA,
                              const double *tau, double *u) {
  if (m->jnt_type[i] == KHZ_JOINT_FLOATING) { /* nv 6, unrolled */
#pragma GCC unroll 6
    for (int a = 0; a < 6; a++) u[a] = tau[a] - free_dotS(S, a, pA);
    return;
  }
  int nv = m->jnt_nv[i];
  for (int a = 0; a < nv; a++) u[a] = tau[a] - khzu_dot6(S + 6 * a, pA);
}

/* The forward pass at body i (RBDA Table 7.1), a = a_parent + c on entry:
 * qdd = Dinv (u - U^T a) into the joint's entries of qdd; then a += S qdd
 * unless move_a is 0 (nothing reads a) */
static inline __attribute__((always_inline)) void joint_accel(const khzModel *m, int i, const double *U, const double *Dinv,
                               const double *u, const double *S, double *a, double *qddi,
                               int move_a) {
  int nv = m->jnt_nv[i];
  if (nv == 1) { /* one column: qdd = (u - U . a) / D, a += S qdd */
    double qk = Dinv[0] * (u[0] - khzu_dot6(U, a));
    qddi[0] = qk;
    if (move_a)
      vec6_addScaled(a, S, qk);
    return;
  }
  double r[6];
  if (m->jnt_type[i] == KHZ_JOINT_FLOATING) { /* nv 6, as joint_factors: the same bits, unrolled */
#pragma GCC unroll 6
    for (int k = 0; k < 6; k++) r[k] = u[k] - khzu_dot6(U + 6 * k, a);
#pragma GCC unroll 6
    for (int k = 0; k < 6; k++) {
      double sum = 0;
#pragma GCC unroll 6
      for (int b = 0; b < 6; b++) sum += Dinv[6 * k + b] * r[b];
      qddi[k] = sum;
    }
    if (move_a) free_addSx(a, S, qddi);
    return;
  }
  for (int k = 0; k < nv; k++) r[k] = u[k] - khzu_dot6(U + 6 * k, a);
  for (int k = 0; k < nv; k++) {
    double sum = 0;
    for (int b = 0; b < nv; b++) sum += Dinv[nv * k + b] * r[b];
    qddi[k] = sum;
  }
  if (!move_a) return;
  for (int k = 0; k < nv; k++)
    for (int r6 = 0; r6 < 6; r6++) a[r6] += S[6 * k + r6] * qddi[k];
}

/* The inertia body i hands its parent (RBDA Table 7.1): Ia = IA - U D^-1 U^T,
 * all three transposed (entry (a, b) at 6 b + a) */
static inline __attribute__((always_inline)) void articulated_transfer(const double *IA, const double *U,
                                                                        const double *Dinv, int nv,
                                                                        double Ia[36]) {
  if (nv == 1) {
    /* Ia = IA - U U^T / D (symmetric): every entry (fixed bounds: it
     * unrolls and vectorises), then the lower triangle mirrored from the
     * upper, which holds the same numbers as before */
    double ua[6];
    for (int a = 0; a < 6; a++) ua[a] = U[a] * Dinv[0];
    for (int b = 0; b < 6; b++)
      for (int a = 0; a < 6; a++) Ia[6 * b + a] = IA[6 * b + a] - ua[a] * U[b];
    for (int a = 1; a < 6; a++)
      for (int b = 0; b < a; b++) Ia[6 * b + a] = Ia[6 * a + b];
  } else {
    memcpy(Ia, IA, 36 * sizeof(double));
  }
  if (nv > 1) {
    double UD[36];
    for (int r = 0; r < 6; r++)
      for (int b = 0; b < nv; b++) {
        double sum = 0;
        for (int a = 0; a < nv; a++) sum += U[6 * a + r] * Dinv[nv * a + b];
        UD[6 * b + r] = sum;
      }
    for (int r = 0; r < 6; r++)
      for (int cc = r; cc < 6; cc++) {
        double sum = 0;
        for (int b = 0; b < nv; b++) sum += UD[6 * b + r] * U[6 * b + cc];
        Ia[6 * cc + r] -= sum;
        Ia[6 * r + cc] = Ia[6 * cc + r];
      }
  }
}

/* A body alone in its tree (a free object): its backward pass needs only
 * its own bias force pA and its forward pass only the world's acceleration,
 * so both run at once, with the body's lines still in the L1 cache. Unless
 * store is set, U, Dinv, u and the acceleration stay in locals: at 960
 * bodies these arrays (1.6 MB) no longer fit the cache, and writing them
 * and reading them back in a second and third sweep cost about 12 cache
 * lines per body and call. The same operations on the same numbers as the
 * three passes: the same bits. */
static inline __attribute__((always_inline)) void aba_alone(const khzModel *m, khzData *d, int i, const double *I, const double *pA,
                      const double *tau, double *qdd, double h, int stiff_only, int reuse,
                      int store, const double a0[6]) {
  int nv = m->jnt_nv[i], dof = m->jnt_dofadr[i];
  double U_own[36], Dinv_own[36], u_own[6], a_own[6];
  double *U = store ? d->U + 36 * i : U_own, *Dinv = store ? d->Dinv + 36 * i : Dinv_own;
  double *u = store ? d->u + 6 * i : u_own, *a = store ? d->acc + 6 * i : a_own;
  const double *S = d->S + 36 * i, *c = d->cbias + 6 * i;
  if (reuse) joint_bias(m, i, S, pA, tau + dof, u); /* U, Dinv stored by the first call */
  else joint_factors(m, i, I, S, pA, tau + dof, h, stiff_only, U, Dinv, u);
  vec6_sum(a, a0, c);
  if (nv) joint_accel(m, i, U, Dinv, u, S, a, qdd + dof, store);
}

/* A free body alone in its tree, without armature and without implicit
 * damping, in closed form: ABA's S^T (I a + pA) = tau (RBDA Table 7.1) for
 * one rigid body is Newton-Euler at its com (RBDA eq. 2.63's inertia at the
 * com). With c the com relative to the body origin, Ic = R Ib R^T the world
 * inertia about the com, w the angular velocity, F the force on the body
 * (tau's translation part and the wrench's linear part) and n the wrench's
 * moment about the origin:
 *   N     = R tau_r + n - c x F - w x Ic w              (moment about the com)
 *   qdd_r = Ib^-1 R^T N          (body axes: d/dt (R^T w) = R^T dw/dt)
 *   qdd_t = F / m + g + c x (R qdd_r) - w x (w x c)      (the origin's acceleration)
 * About 110 products for the general path's 6x6 D, its factor and inverse
 * and the 6x6 products (about 1.3 k Ir a call). Not ABA's bits: the same
 * result to rounding (test_dynamics, test_free_fast). Returns 0, with
 * nothing written, where it does not apply: another joint, a massless body,
 * armature (D is no longer the rigid inertia), implicit damping (h > 0 and
 * a damped dof), a body inertia that is not positive definite. */
static inline __attribute__((always_inline)) int free_alone_fast(const khzModel *m, const khzData *d, int i,
                                                                  const double *tau, double *qddi, double h) {
  if (!free_closed_applies(m, i, h)) return 0;
  double mass = m->body_mass[i];
  const double *Ib = m->body_inertia + 9 * i;
  int principal = m->body_zeros[i] & ZERO_PRINCIPAL;
  double L[9];
  if (!principal) {
    memcpy(L, Ib, sizeof L);
    khzu_cholFactor(L, 3); /* positive definite (ZERO_CLOSED) */
  }
  const double *R = d->xrot + 9 * i, *w = d->vtree + 6 * i, *f = d->fext + 6 * i;
  /* the com relative to the origin and Ic = R Ib R^T, the forward pass's
   * operations (its cinert: RK4's stage passes leave it out) */
  const double *x = d->xpos + 3 * i, *xc = d->xcom + 3 * i;
  double ci[3] = {xc[0] - x[0], xc[1] - x[1], xc[2] - x[2]}, tmp[9], Ic[9];
  if (principal) {
    for (int r3 = 0; r3 < 9; r3++) tmp[r3] = R[r3] * Ib[4 * (r3 % 3)];
  } else {
    khzu_mulMat3(tmp, R, Ib);
  }
  khzu_mulMatMatT3(Ic, tmp, R);
  double F[3], Iw[3], wIw[3], cF[3], W[3], Nb[3], alpha[3], wc[3], wwc[3], ca[3];
  for (int k = 0; k < 3; k++) F[k] = tau[k] + f[3 + k];
  for (int k = 0; k < 3; k++) Iw[k] = Ic[3 * k] * w[0] + Ic[3 * k + 1] * w[1] + Ic[3 * k + 2] * w[2];
  khzu_cross(wIw, w, Iw);
  khzu_cross(cF, ci, F);
  for (int k = 0; k < 3; k++) W[k] = f[k] - cF[k] - wIw[k];
  for (int k = 0; k < 3; k++) Nb[k] = tau[3 + k] + (R[k] * W[0] + R[3 + k] * W[1] + R[6 + k] * W[2]);
  if (principal) {
    for (int k = 0; k < 3; k++) Nb[k] /= Ib[4 * k];
  } else {
    khzu_cholSolve(L, 3, Nb);
  }
  for (int k = 0; k < 3; k++) alpha[k] = R[3 * k] * Nb[0] + R[3 * k + 1] * Nb[1] + R[3 * k + 2] * Nb[2];
  khzu_cross(wc, w, ci);
  khzu_cross(wwc, w, wc);
  khzu_cross(ca, ci, alpha);
  for (int k = 0; k < 3; k++) qddi[k] = F[k] / mass + m->gravity[k] + ca[k] - wwc[k];
  for (int k = 0; k < 3; k++) qddi[3 + k] = Nb[k];
  return 1;
}

/* free_alone_fast for four bodies at once, one per lane (lanes4): bodies
 * where it applies with a principal inertia (free_batch_applies); the
 * gathers and scatters cost less than three of the four bodies' scalar
 * arithmetic (about 390 Ir a body in the scalar path) */
static inline int free_batch_applies(const khzModel *m, int i, double h) {
  return (m->body_zeros[i] & ZERO_PRINCIPAL) && free_closed_applies(m, i, h);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
static inline void cross4(v4d r[3], const v4d a[3], const v4d b[3]) {
  v4d r0 = a[1] * b[2] - a[2] * b[1];
  v4d r1 = a[2] * b[0] - a[0] * b[2];
  v4d r2 = a[0] * b[1] - a[1] * b[0];
  r[0] = r0, r[1] = r1, r[2] = r2;
}

static inline __attribute__((always_inline)) void free_alone_fast4(const khzModel *m, const khzData *d,
                                                                    const int body[4], const double *tau,
                                                                    double *qdd) {
  const double *Rp[4], *wp[4], *fp[4], *xp[4], *xcp[4], *tp[4], *Ibp[4], *mp[4];
  double *qp[4];
  for (int l = 0; l < 4; l++) {
    int i = body[l], dof = m->jnt_dofadr[i];
    Rp[l] = d->xrot + 9 * i, wp[l] = d->vtree + 6 * i, fp[l] = d->fext + 6 * i;
    xp[l] = d->xpos + 3 * i, xcp[l] = d->xcom + 3 * i, tp[l] = tau + dof, qp[l] = qdd + dof;
    Ibp[l] = m->body_inertia + 9 * i, mp[l] = m->body_mass + i;
  }
  v4d R[9], Ib[3], w[3], f[6], tq[6], ci[3], tmp[9], Ic[9];
  v4d x[3], xc[3], mass;
  lanes4(R, Rp, 9, 1), lanes4(Ib, Ibp, 3, 4), lanes4(w, wp, 3, 1), lanes4(f, fp, 6, 1), lanes4(tq, tp, 6, 1);
  lanes4(x, xp, 3, 1), lanes4(xc, xcp, 3, 1), lanes4(&mass, mp, 1, 1);
  for (int k = 0; k < 3; k++) ci[k] = xc[k] - x[k];
  /* Ic = R Ib R^T (khzu_mulMatMatT3 on R diag(Ib)) */
  for (int r3 = 0; r3 < 9; r3++) tmp[r3] = R[r3] * Ib[r3 % 3];
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      Ic[3 * a + b] = tmp[3 * a] * R[3 * b] + tmp[3 * a + 1] * R[3 * b + 1] + tmp[3 * a + 2] * R[3 * b + 2];
  v4d F[3], Iw[3], wIw[3], cF[3], W[3], Nb[3], alpha[3], wc[3], wwc[3], ca[3];
  for (int k = 0; k < 3; k++) F[k] = tq[k] + f[3 + k];
  for (int k = 0; k < 3; k++) Iw[k] = Ic[3 * k] * w[0] + Ic[3 * k + 1] * w[1] + Ic[3 * k + 2] * w[2];
  cross4(wIw, w, Iw);
  cross4(cF, ci, F);
  for (int k = 0; k < 3; k++) W[k] = f[k] - cF[k] - wIw[k];
  for (int k = 0; k < 3; k++) Nb[k] = tq[3 + k] + (R[k] * W[0] + R[3 + k] * W[1] + R[6 + k] * W[2]);
  for (int k = 0; k < 3; k++) Nb[k] /= Ib[k];
  for (int k = 0; k < 3; k++) alpha[k] = R[3 * k] * Nb[0] + R[3 * k + 1] * Nb[1] + R[3 * k + 2] * Nb[2];
  cross4(wc, w, ci);
  cross4(wwc, w, wc);
  cross4(ca, ci, alpha);
  v4d out[6];
  for (int k = 0; k < 3; k++) out[k] = F[k] / mass + m->gravity[k] + ca[k] - wwc[k];
  for (int k = 0; k < 3; k++) out[3 + k] = Nb[k];
  for (int l = 0; l < 4; l++)
    for (int k = 0; k < 6; k++) qp[l][k] = out[k][l];
}
#pragma GCC diagnostic pop

/* body i's rigid inertia I (transposed) and its velocity-product force
 * pA = v x* I v (0 for a massless body: I = 0), kept in keep's first six
 * entries of the body when keep is given: ABA's start (RBDA Table 7.1) */
static inline __attribute__((always_inline)) void rigid_bias(const khzModel *m, const khzData *d, int i,
                                                              double I[36], double pA[6], double *keep) {
  const double *v = d->vtree + 6 * i;
  double Iv[6];
  body_inertia_T(m, d, i, I);
  if (body_massless(m, i)) {
    memset(pA, 0, 6 * sizeof(double));
  } else {
    mul_T_vec6(Iv, I, v);
    khzu_crossForce(pA, v, Iv);
  }
  if (keep) memcpy(keep + 12 * i, pA, 6 * sizeof(double));
}

/* keep (12 per body, or NULL): with reuse 0 the velocity terms that depend on
 * (q, qd) alone are written there, v x* I v and Ia c; with reuse 1 they are
 * read back together with IA, U and Dinv, and only what f_ext and tau change
 * is computed (the backward pass's bias forces and the forward pass): the
 * same operations on the same numbers, so bit for bit khz_abaCoreDamped's
 * result. store 0: the factors of bodies alone in their trees (pA, U, Dinv,
 * u, acc) are not written to d (a call with keep stores them all), and a
 * free one takes free_alone_fast where it applies if the scene asks for it
 * (contact.free_closed_form). */
/* khz_abaInertias' U and Dinv of body i (h = 0) are those of an ABA at h
 * and stiff_only: a free body alone in its tree with mass and a positive
 * definite inertia (ZERO_CLOSED: D's diagonal is positive, so D + 0 is D)
 * whose dofs have no damping (implicit_damping adds +0 at any h) */
static inline int plain_factors_hold(const khzModel *m, int i, double h) {
  if (!(m->body_zeros[i] & ZERO_CLOSED)) return 0;
  if (!(h > 0)) return 1;
  const double *damp = m->dof_damping + m->jnt_dofadr[i];
  for (int k = 0; k < 6; k++)
    if (!(damp[k] <= 0)) return 0;
  return 1;
}

/* ABA's start for bodies [lo, hi) (aba_core_keep's first loop): each body
 * writes only its own entries, so the pool's threads may take parts of it.
 * plain: khz_abaInertias' U and Dinv are in d at this q (d->aba_held ==
 * ABA_HELD_PLAIN, store 1); a body alone in its tree for which they are this
 * call's (plain_factors_hold) takes them and computes only u and qdd (the
 * same operations on the same numbers: the same bits) */
static inline __attribute__((always_inline)) void aba_start(const khzModel *m, khzData *d, const double *tau,
                                                             double *qdd, double h, int stiff_only, double *keep,
                                                             int reuse, int store, const double a0[6], int lo,
                                                             int hi, int plain) {
  /* articulated inertias and bias forces start as the rigid ones:
   * IA = I, pA = v x* I v - f_ext. A body alone in its tree (a free object)
   * keeps IA = I in a local, and its IA is not written (1.7 kB fewer per
   * body and call to stream through the cache in a large pile; nothing
   * reads d->IA after ABA); its passes run here (aba_alone) */
  int batch[4], nbatch = 0;
  for (int i = lo; i < hi; i++) {
    if (d->body_sleep[i]) continue; /* sleeping trees: skipped, qdd = 0 below */
    int alone = body_alone(m, i);
    /* only qdd is wanted of a free object (store 0): in closed form, four
     * principal ones at a time */
    if (alone && !store && m->contact.free_closed_form) {
      if (free_batch_applies(m, i, h)) {
        batch[nbatch++] = i;
        if (nbatch == 4) free_alone_fast4(m, d, batch, tau, qdd), nbatch = 0;
        continue;
      }
      if (free_alone_fast(m, d, i, tau + m->jnt_dofadr[i], qdd + m->jnt_dofadr[i], h)) continue;
    }
    double pA_own[6], *pA = alone && !store ? pA_own : d->pA + 6 * i, I_own[36];
    if (reuse) memcpy(pA, keep + 12 * i, 6 * sizeof(double));
    else rigid_bias(m, d, i, alone ? I_own : d->IA + 36 * i, pA, keep);
    vec6_sub(pA, d->fext + 6 * i);
    if (alone) aba_alone(m, d, i, I_own, pA, tau, qdd, h, stiff_only, reuse || (plain && plain_factors_hold(m, i, h)),
                         store, a0);
  }
  for (int k = 0; k < nbatch; k++) /* fewer than four left: one at a time */
    free_alone_fast(m, d, batch[k], tau + m->jnt_dofadr[batch[k]], qdd + m->jnt_dofadr[batch[k]], h);
}

/* started: aba_start has run on the pool's threads (khz_abaCoreKeep) */
static inline __attribute__((always_inline)) void aba_core_keep(const khzModel *m, khzData *d, const double *tau,
                                                                 double *qdd, double h, int stiff_only, double *keep,
                                                                 int reuse, int store, int started, int plain) {
  if (keep) store = 1;
  /* the world's acceleration is -g (gravity as a fictitious base acceleration) */
  double a0[6] = {0, 0, 0, -m->gravity[0], -m->gravity[1], -m->gravity[2]};
  if (!started) aba_start(m, d, tau, qdd, h, stiff_only, keep, reuse, store, a0, 1, m->nbody, plain);
  if (m->body_zeros[0] & ZERO_ALL_ALONE) { /* aba_start did every body; the sleeping ones' qdd is 0 */
    for (int i = 1; i < m->nbody; i++)
      if (d->body_sleep[i])
        for (int k = 0; k < m->jnt_nv[i]; k++) qdd[m->jnt_dofadr[i] + k] = 0;
    return;
  }

  /* backward pass (RBDA Table 7.1, joint_factors); the parent receives
   * Ia = IA - U D^-1 U^T and pa = pA + Ia c + U D^-1 u (no transform: one
   * frame per tree) */
  for (int i = m->nbody - 1; i >= 1; i--) {
    if (d->body_sleep[i] || body_alone(m, i)) continue;
    int nv = m->jnt_nv[i], dof = m->jnt_dofadr[i], p = m->body_parent[i];
    const double *IA = d->IA + 36 * i;
    double *pA = d->pA + 6 * i;
    double *S = d->S + 36 * i, *U = d->U + 36 * i, *Dinv = d->Dinv + 36 * i, *u = d->u + 6 * i;
    const double *c = d->cbias + 6 * i;

    if (reuse) {
      joint_bias(m, i, S, pA, tau + dof, u);
      if (p == 0) continue;
      double *pAp = d->pA + 6 * p;
      const double *t = keep + 12 * i + 6;
      vec6_addSum(pAp, pA, t);
      add_bias_to_parent(pAp, U, Dinv, u, nv);
      continue;
    }
    joint_factors(m, i, IA, S, pA, tau + dof, h, stiff_only, U, Dinv, u);
    if (p == 0) continue;

    double *IAp = d->IA + 36 * p, *pAp = d->pA + 6 * p, Ia[36], t[6];
    articulated_transfer(IA, U, Dinv, nv, Ia);
    mul_T_vec6(t, Ia, c);
    if (keep) memcpy(keep + 12 * i + 6, t, 6 * sizeof(double));
    vec6_addSum(pAp, pA, t);
    add_bias_to_parent(pAp, U, Dinv, u, nv);
    for (int k = 0; k < 36; k++) IAp[k] += Ia[k];
  }

  /* forward pass: a = a_parent + c, then joint_accel */
  for (int i = 1; i < m->nbody; i++) {
    int nv = m->jnt_nv[i], dof = m->jnt_dofadr[i], p = m->body_parent[i];
    if (d->body_sleep[i]) {
      for (int k = 0; k < nv; k++) qdd[dof + k] = 0;
      continue;
    }
    if (body_alone(m, i)) continue; /* done by aba_alone */
    double *a = d->acc + 6 * i;
    const double *ap = p ? d->acc + 6 * p : a0;
    vec6_sum(a, ap, d->cbias + 6 * i);
    if (!nv) continue;
    joint_accel(m, i, d->U + 36 * i, d->Dinv + 36 * i, d->u + 6 * i, d->S + 36 * i, a, qdd + dof, 1);
  }
}

/* The same with the inertias held from khz_abaInertiasHeld at this q, h and
 * stiff_only (the contact stage's; reuse 0, store 1): IA, U, Dinv are taken
 * as they are and the transfer IA - U D^-1 U^T from IA_handed; only the
 * bias forces (the rigid inertia into a local for v x* I v) and the
 * accelerations are computed. The same operations on the same numbers as
 * aba_core_keep's: the same bits. */
static inline __attribute__((always_inline)) void aba_core_held(const khzModel *m, khzData *d, const double *tau,
                                                                 double *qdd, double h, int stiff_only, double *keep) {
  double a0[6] = {0, 0, 0, -m->gravity[0], -m->gravity[1], -m->gravity[2]};
  for (int i = 1; i < m->nbody; i++) {
    if (d->body_sleep[i]) continue;
    double *pA = d->pA + 6 * i, I[36];
    rigid_bias(m, d, i, I, pA, keep);
    vec6_sub(pA, d->fext + 6 * i);
    if (body_alone(m, i)) aba_alone(m, d, i, I, pA, tau, qdd, h, stiff_only, 1, 1, a0);
  }
  for (int i = m->nbody - 1; i >= 1; i--) {
    if (d->body_sleep[i] || body_alone(m, i)) continue;
    int nv = m->jnt_nv[i], dof = m->jnt_dofadr[i], p = m->body_parent[i];
    const double *pA = d->pA + 6 * i, *U = d->U + 36 * i, *Dinv = d->Dinv + 36 * i;
    double *u = d->u + 6 * i;
    joint_bias(m, i, d->S + 36 * i, pA, tau + dof, u);
    if (p == 0) continue;
    double *pAp = d->pA + 6 * p, t[6];
    mul_T_vec6(t, d->IA_handed + 36 * i, d->cbias + 6 * i);
    if (keep) memcpy(keep + 12 * i + 6, t, 6 * sizeof(double));
    vec6_addSum(pAp, pA, t);
    add_bias_to_parent(pAp, U, Dinv, u, nv);
  }
  for (int i = 1; i < m->nbody; i++) {
    int nv = m->jnt_nv[i], dof = m->jnt_dofadr[i], p = m->body_parent[i];
    if (d->body_sleep[i]) {
      for (int k = 0; k < nv; k++) qdd[dof + k] = 0;
      continue;
    }
    if (body_alone(m, i)) continue;
    double *a = d->acc + 6 * i;
    const double *ap = p ? d->acc + 6 * p : a0;
    vec6_sum(a, ap, d->cbias + 6 * i);
    if (!nv) continue;
    joint_accel(m, i, d->U + 36 * i, d->Dinv + 36 * i, d->u + 6 * i, d->S + 36 * i, a, qdd + dof, 1);
  }
}

/* aba_core_keep compiled for AVX too, as response_units: no FMA, no
 * reassociation, so both builds give the same bits */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void aba_core_keep_avx(const khzModel *m, khzData *d, const double *tau,
                                                             double *qdd, double h, int stiff_only, double *keep,
                                                             int reuse, int store, int plain) {
  aba_core_keep(m, d, tau, qdd, h, stiff_only, keep, reuse, store, 0, plain);
}
/* after aba_start on the threads: the passes along the trees */
__attribute__((target("avx"))) static void aba_core_rest_avx(const khzModel *m, khzData *d, const double *tau,
                                                             double *qdd, double h, int stiff_only, double *keep,
                                                             int reuse, int store) {
  aba_core_keep(m, d, tau, qdd, h, stiff_only, keep, reuse, store, 1, 0);
}
/* the held inertias' call, its own function: the one above keeps its code */
__attribute__((target("avx"))) static void aba_core_held_avx(const khzModel *m, khzData *d, const double *tau,
                                                             double *qdd, double h, int stiff_only, double *keep) {
  aba_core_held(m, d, tau, qdd, h, stiff_only, keep);
}
#endif

/* aba_start's bodies on the pool's threads: one job, ranges of bodies */
typedef struct {
  const khzModel *m;
  khzData *d;
  const double *tau;
  double *qdd, h, *keep, a0[6];
  int stiff_only, reuse, store, plain;
} aba_job;

static void aba_start_job(void *ctx, int thread, int lo, int hi) {
  const aba_job *j = ctx;
  (void)thread;
  aba_start(j->m, j->d, j->tau, j->qdd, j->h, j->stiff_only, j->keep, j->reuse, j->store, j->a0, lo + 1, hi + 1,
            j->plain);
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void aba_start_job_avx(void *ctx, int thread, int lo, int hi) {
  const aba_job *j = ctx;
  (void)thread;
  aba_start(j->m, j->d, j->tau, j->qdd, j->h, j->stiff_only, j->keep, j->reuse, j->store, j->a0, lo + 1, hi + 1,
            j->plain);
}
#endif

/* bodies per chunk of aba_start on the pool's threads */
#define KHZ_ABA_CHUNK 8

void khz_abaCoreKeep(const khzModel *m, khzData *d, const double *tau, double *qdd, double h,
                     int stiff_only, double *keep, int reuse, int store) {
  /* the inertias held from khz_abaInertiasHeld at this q, h and stiff_only
   * (the contact stage's, computed again here otherwise): IA, U, Dinv are
   * taken as they are, the transfer IA - U D^-1 U^T from IA_handed, and
   * only the bias forces and accelerations are computed (the same
   * operations on the same numbers: the same bits). Every call uses up the
   * mark: this one leaves the same inertias but other bias forces */
  int held = !reuse && (store || keep) && d->aba_held == 1 + !!stiff_only && d->aba_held_h == h;
  /* khz_abaInertias' factors at this q (the contact stage's, for the
   * impulses): the free objects whose factors they are take them */
  int plain = !reuse && (store || keep) && d->aba_held == ABA_HELD_PLAIN;
  d->aba_held = 0;
  /* with threads (khz_setThreads) and many free objects (their whole ABA
   * is in aba_start; an articulated tree's start alone is too little to
   * split): aba_start's bodies split over them, then the passes along the
   * trees here, as in one call */
  int threaded = !held && d->pool && khz_poolAlone(d) > 2 * KHZ_ABA_CHUNK;
  if (threaded) {
    aba_job j = {m, d, tau, qdd, h, keep, {0, 0, 0, -m->gravity[0], -m->gravity[1], -m->gravity[2]},
                 stiff_only, reuse, keep ? 1 : store, plain};
    khzPoolFn fn = aba_start_job;
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx")) fn = aba_start_job_avx;
#endif
    khz_poolRun(d, fn, &j, m->nbody - 1, KHZ_ABA_CHUNK);
  }
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) {
    if (held) aba_core_held_avx(m, d, tau, qdd, h, stiff_only, keep);
    else if (threaded) aba_core_rest_avx(m, d, tau, qdd, h, stiff_only, keep, reuse, store);
    else aba_core_keep_avx(m, d, tau, qdd, h, stiff_only, keep, reuse, store, plain);
    return;
  }
#endif
  if (held) aba_core_held(m, d, tau, qdd, h, stiff_only, keep);
  else aba_core_keep(m, d, tau, qdd, h, stiff_only, keep, reuse, store, threaded, plain);
}

/* ABA's backward pass for the inertias alone (RBDA Table 7.1 without the
 * bias forces): IA, U and Dinv as khz_abaCoreDamped(h, stiff_only) leaves
 * them (h = 0: khz_abaCore), the same operations on the same numbers (the
 * same bits); pA, u, acc and qdd are not computed. A body alone in its tree
 * keeps IA = I in a local, as there. handed (36 per body, or NULL): the
 * inertia each body hands its parent, IA - U D^-1 U^T (aba_core_held). */
static inline __attribute__((always_inline)) void aba_inertias(const khzModel *m, khzData *d, double h,
                                                                int stiff_only, double *handed) {
  for (int i = 1; i < m->nbody; i++) {
    if (d->body_sleep[i]) continue;
    if (!body_alone(m, i)) {
      body_inertia_T(m, d, i, d->IA + 36 * i);
      continue;
    }
    double I_own[36];
    body_inertia_T(m, d, i, I_own);
    joint_factors(m, i, I_own, d->S + 36 * i, NULL, NULL, h, stiff_only, d->U + 36 * i, d->Dinv + 36 * i, NULL);
  }
  for (int i = m->nbody - 1; i >= 1; i--) {
    if (d->body_sleep[i] || body_alone(m, i)) continue;
    int nv = m->jnt_nv[i], p = m->body_parent[i];
    const double *IA = d->IA + 36 * i;
    double *U = d->U + 36 * i, *Dinv = d->Dinv + 36 * i, Ia_own[36];
    joint_factors(m, i, IA, d->S + 36 * i, NULL, NULL, h, stiff_only, U, Dinv, NULL);
    if (p == 0) continue;
    articulated_transfer(IA, U, Dinv, nv, Ia_own);
    if (handed) memcpy(handed + 36 * i, Ia_own, sizeof Ia_own);
    double *IAp = d->IA + 36 * p;
    for (int k = 0; k < 36; k++) IAp[k] += Ia_own[k];
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void aba_inertias_avx(const khzModel *m, khzData *d, double h,
                                                            int stiff_only, double *handed) {
  aba_inertias(m, d, h, stiff_only, handed);
}
#endif

static void aba_inertias_any(const khzModel *m, khzData *d, double h, int stiff_only, double *handed) {
  d->aba_held = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) {
    aba_inertias_avx(m, d, h, stiff_only, handed);
    return;
  }
#endif
  aba_inertias(m, d, h, stiff_only, handed);
}

void khz_abaInertias(const khzModel *m, khzData *d) {
  aba_inertias_any(m, d, 0, 0, NULL);
  d->aba_held = ABA_HELD_PLAIN; /* the free objects' U, Dinv for the next ABA (plain_factors_hold) */
}

void khz_abaInertiasHeld(const khzModel *m, khzData *d, double h, int stiff_only) {
  aba_inertias_any(m, d, h, stiff_only, d->IA_handed);
  d->aba_held = 1 + !!stiff_only;
  d->aba_held_h = h;
}

/* ----------------------------------------------------------------- RNEA -- */

void khz_rnea(const khzModel *m, khzData *d, const double *q, const double *qd,
              const double *qdd, double *tau) {
  khz_forwardPass(m, d, q, qd);
  khz_externalForces(m, d);
  double a0[6] = {0, 0, 0, -m->gravity[0], -m->gravity[1], -m->gravity[2]};

  /* forward: a = a_parent + S qdd + c;  f = I a + v x* I v - f_ext (pA holds f) */
  for (int i = 1; i < m->nbody; i++) {
    int nv = m->jnt_nv[i], dof = m->jnt_dofadr[i], p = m->body_parent[i];
    double *a = d->acc + 6 * i, *f = d->pA + 6 * i, Iv[6], Ia[6], vxIv[6];
    const double *S = d->S + 36 * i, *v = d->vtree + 6 * i;
    double I[36];
    body_inertia(m, d, i, I);
    const double *ap = p ? d->acc + 6 * p : a0;
    vec6_sum(a, ap, d->cbias + 6 * i);
    for (int k = 0; k < nv; k++)
      for (int r = 0; r < 6; r++) a[r] += S[6 * k + r] * qdd[dof + k];
    khzu_mulMatVec6(Ia, I, a);
    khzu_mulMatVec6(Iv, I, v);
    khzu_crossForce(vxIv, v, Iv);
    for (int k = 0; k < 6; k++) f[k] = Ia[k] + vxIv[k] - d->fext[6 * i + k];
  }

  /* backward: tau = S^T f + armature qdd; f_parent += f */
  for (int i = m->nbody - 1; i >= 1; i--) {
    int nv = m->jnt_nv[i], dof = m->jnt_dofadr[i], p = m->body_parent[i];
    const double *f = d->pA + 6 * i, *S = d->S + 36 * i;
    for (int k = 0; k < nv; k++)
      tau[dof + k] = khzu_dot6(S + 6 * k, f) + m->dof_armature[dof + k] * qdd[dof + k];
    if (p)
      for (int k = 0; k < 6; k++) d->pA[6 * p + k] += f[k];
  }
}

/* ----------------------------------------------------------------- CRBA -- */

void khz_compositeInertia(const khzModel *m, khzData *d, const double *q) {
  khz_forwardPass(m, d, q, NULL);
  /* composite inertias, leaves to root (IA holds Ic) */
  for (int i = 1; i < m->nbody; i++)
    body_inertia(m, d, i, d->IA + 36 * i);
  for (int i = m->nbody - 1; i >= 1; i--) {
    int p = m->body_parent[i];
    if (p)
      for (int k = 0; k < 36; k++) d->IA[36 * p + k] += d->IA[36 * i + k];
  }
}

void khz_crbaBlock(const khzModel *m, const khzData *d, int root, const int *local, int n,
                   double *M) {
  memset(M, 0, (size_t)n * (size_t)n * sizeof(double));
#define DOF(k) (local ? local[k] : (k))
  /* M_ij = S_j^T Ic_i S_i for every ancestor j of i (RBDA Table 6.2) */
  for (int i = 1; i < m->nbody; i++) {
    int ni = m->jnt_nv[i], di = m->jnt_dofadr[i];
    if (!ni || (root && m->body_root[i] != root)) continue;
    double F[36];
    const double *S = d->S + 36 * i;
    for (int k = 0; k < ni; k++) khzu_mulMatVec6(F + 6 * k, d->IA + 36 * i, S + 6 * k);
    for (int a = 0; a < ni; a++) {
      int ra = DOF(di + a);
      for (int b = a; b < ni; b++) {
        int rb = DOF(di + b);
        M[ra * n + rb] = M[rb * n + ra] = khzu_dot6(S + 6 * a, F + 6 * b);
      }
      M[ra * n + ra] += m->dof_armature[di + a];
    }
    for (int j = m->body_parent[i]; j != 0; j = m->body_parent[j]) {
      int nj = m->jnt_nv[j], dj = m->jnt_dofadr[j];
      const double *Sj = d->S + 36 * j;
      for (int a = 0; a < ni; a++)
        for (int b = 0; b < nj; b++) {
          double v = khzu_dot6(F + 6 * a, Sj + 6 * b);
          int ra = DOF(di + a), rb = DOF(dj + b);
          M[ra * n + rb] = M[rb * n + ra] = v;
        }
    }
  }
#undef DOF
}

void khz_crba(const khzModel *m, khzData *d, const double *q, double *M) {
  khz_compositeInertia(m, d, q);
  khz_crbaBlock(m, d, 0, NULL, m->nv, M);
}

/* ------------------------------------------------------------- Jacobian -- */

void khz_jacobian(const khzModel *m, const khzData *d, int body, const double p[3],
                  double *jacp, double *jacr) {
  int nv = m->nv;
  if (jacp) memset(jacp, 0, 3 * (size_t)nv * sizeof(double));
  if (jacr) memset(jacr, 0, 3 * (size_t)nv * sizeof(double));
  if (body <= 0) return;
  /* each ancestor's subspace column [w; v_o] moved from the tree origin to p */
  const double *o = d->xpos + 3 * m->body_root[body];
  double arm[3] = {p[0] - o[0], p[1] - o[1], p[2] - o[2]};
  for (int j = body; j > 0; j = m->body_parent[j]) {
    const double *S = d->S + 36 * j;
    for (int k = 0; k < m->jnt_nv[j]; k++) {
      int col = m->jnt_dofadr[j] + k;
      double wxr[3];
      khzu_cross(wxr, S + 6 * k, arm);
      for (int r = 0; r < 3; r++) {
        if (jacp) jacp[r * nv + col] = S[6 * k + 3 + r] + wxr[r];
        if (jacr) jacr[r * nv + col] = S[6 * k + r];
      }
    }
  }
}

/* --------------------------------------------------------------- energy -- */

void khz_energy(const khzModel *m, khzData *d, double *kinetic, double *potential) {
  khz_kinematics(m, d);
  double ke = 0, pe = 0;
  for (int i = 1; i < m->nbody; i++) {
    double Iv[6];
    const double *v = d->vtree + 6 * i;
    double I[36];
    body_inertia(m, d, i, I);
    khzu_mulMatVec6(Iv, I, v);
    ke += 0.5 * khzu_dot6(v, Iv);
    pe -= m->body_mass[i] * khzu_dot3(m->gravity, d->xcom + 3 * i);
  }
  for (int k = 0; k < m->nv; k++) ke += 0.5 * m->dof_armature[k] * d->qd[k] * d->qd[k];
  if (kinetic) *kinetic = ke;
  if (potential) *potential = pe;
}

/* ------------------------------------------------ points and impulses -- */

/* a free rigid body: floating joint to the world, nothing attached */
int khz_bodyFree(const khzModel *m, int b) {
  return b > 0 && m->body_parent[b] == 0 && m->jnt_type[b] == KHZ_JOINT_FLOATING &&
         m->body_subtreemass[b] <= m->body_mass[b];
}

/* a body counts as static when it and all its ancestors are welded */
int khz_bodyStatic(const khzModel *m, int b) {
  for (; b > 0; b = m->body_parent[b])
    if (m->jnt_type[b] != KHZ_JOINT_FIXED) return 0;
  return 1;
}

/* world velocity of the material point x of body b */
void khz_pointVelocity(const khzModel *m, const khzData *d, int b, const double x[3], double vel[3]) {
  khz_pointVelocityInline(m, d, b, x, vel);
}

/* ---------------------------------------- articulated impulse response -- */

/* the depth of a path that khz_impulseResponse follows in a local array
 * (deeper paths: each body is tested by walking up from b) */
#define KHZ_PATH_MARK 64

/* b's path to the root, root first (a parent's index is below its
 * child's), in the end of path[]; NULL when deeper than KHZ_PATH_MARK */
static inline const int *impulse_path(const khzModel *m, int b, int path[KHZ_PATH_MARK], int *depth) {
  int n = 0;
  for (int i = b; i > 0; i = m->body_parent[i], n++)
    if (n < KHZ_PATH_MARK) path[KHZ_PATH_MARK - 1 - n] = i;
  *depth = n;
  return n <= KHZ_PATH_MARK ? path + KHZ_PATH_MARK - n : NULL;
}

/* Whether body i (met in the back-out's tree order) is on b's path to the
 * root, where the impulse's u is non-zero: read from the path in on[]
 * (root first, *next the next one to meet) or, for deeper paths, by
 * walking up from b; bodies not in need (when given) are not tested. */
static inline int impulse_on_path(const khzModel *m, int b, int i, const int *on, int depth, int *next,
                                  const unsigned char *need) {
  if (on) {
    if (*next < depth && on[*next] == i) return ++*next, 1;
    return 0;
  }
  if (need && !need[i]) return 0;
  for (int j = b; j > 0; j = m->body_parent[j])
    if (j == i) return 1;
  return 0;
}

void khz_impulseResponse(const khzModel *m, khzData *d, int b, const double f[6], double *dqd,
                         double *dvel) {
  khz_impulseResponseNeed(m, d, b, f, dqd, dvel, NULL);
}

void khz_impulseResponseNeed(const khzModel *m, khzData *d, int b, const double f[6], double *dqd,
                             double *dvel, const unsigned char *need) {
  if (b <= 0) return;
  if (dqd) need = NULL; /* every joint's change wanted */
  int root = m->body_root[b];
  double *pA = d->pA, *u = d->u;

  /* b's path to the root; the bias forces of the path only are read below */
  int path[KHZ_PATH_MARK], depth;
  const int *on = impulse_path(m, b, path, &depth);

  /* clear the path's bias forces, then put the impulse on b: pA = -f */
  for (int i = b; i > 0; i = m->body_parent[i]) memset(pA + 6 * i, 0, 6 * sizeof(double));
  for (int k = 0; k < 6; k++) pA[6 * b + k] = -f[k];

  /* to the root: u = -S^T pA, pa = pA + U Dinv u (no bias terms for impulses) */
  for (int i = b; i > 0; i = m->body_parent[i]) {
    int nv = m->jnt_nv[i], p = m->body_parent[i];
    const double *S = d->S + 36 * i, *U = d->U + 36 * i, *Dinv = d->Dinv + 36 * i;
    double *pAi = pA + 6 * i, pa[6];
    for (int a = 0; a < nv; a++) u[6 * i + a] = -khzu_dot6(S + 6 * a, pAi);
    if (p <= 0) continue; /* the root's carried impulse is not read */
    memcpy(pa, pAi, sizeof pa);
    if (nv == 1) { /* one column */
      double Du = Dinv[0] * u[6 * i];
      for (int k = 0; k < 6; k++) pa[k] += U[k] * Du;
    } else {
      for (int a = 0; a < nv; a++) {
        double Du = 0;
        for (int c = 0; c < nv; c++) Du += Dinv[nv * a + c] * u[6 * i + c];
        for (int k = 0; k < 6; k++) pa[k] += U[6 * a + k] * Du;
      }
    }
    for (int k = 0; k < 6; k++) pA[6 * p + k] += pa[k];
  }

  /* back out over the whole tree: dv = dv_parent, dqd = Dinv (u - U^T dv), dv += S dqd */
  int next = 0; /* the next path body to meet, in on[] */
  for (int i = root; i < m->body_treeend[root]; i++) {
    if (m->body_root[i] != root) continue;
    int nv = m->jnt_nv[i], dof = m->jnt_dofadr[i], p = m->body_parent[i];
    double *dv = dvel + 6 * i;
    /* off the impulse's path pA is zero, so u is zero there */
    int on_path = impulse_on_path(m, b, i, on, depth, &next, need);
    if (need && !need[i]) continue;
    if (p > 0) memcpy(dv, dvel + 6 * p, 6 * sizeof(double));
    else memset(dv, 0, 6 * sizeof(double));
    if (!nv) continue;
    const double *S = d->S + 36 * i, *U = d->U + 36 * i, *Dinv = d->Dinv + 36 * i;
    if (nv == 1) { /* one column */
      double dq = Dinv[0] * ((on_path ? u[6 * i] : 0) - khzu_dot6(U, dv));
      if (dqd) dqd[dof] += dq;
      for (int k = 0; k < 6; k++) dv[k] += S[k] * dq;
      continue;
    }
    double r[6], dq[6];
    for (int a = 0; a < nv; a++) r[a] = (on_path ? u[6 * i + a] : 0) - khzu_dot6(U + 6 * a, dv);
    for (int a = 0; a < nv; a++) {
      dq[a] = 0;
      for (int c = 0; c < nv; c++) dq[a] += Dinv[nv * a + c] * r[c];
      if (dqd) dqd[dof + a] += dq[a];
    }
    for (int a = 0; a < nv; a++)
      for (int k = 0; k < 6; k++) dv[k] += S[6 * a + k] * dq[a];
  }
}

static inline __attribute__((always_inline)) void response_units(const khzModel *m, khzData *d, int b,
                                                                  const unsigned char *need, double *u6,
                                                                  double *dv6) {
  if (b <= 0) return;
  int root = m->body_root[b];
  int path[KHZ_PATH_MARK], depth;
  const int *on = impulse_path(m, b, path, &depth);

  /* pA[k][j]: body i's bias force under e_j; on b it is -e_j (-1 and -0) */
  double pA[6][6];
  for (int k = 0; k < 6; k++)
    for (int j = 0; j < 6; j++) pA[k][j] = -(k == j ? 1.0 : 0.0);
  /* to the root: u = -S^T pA, pa = pA + U Dinv u; the parent's pA is the
   * cleared +0 plus pa, as khz_impulseResponseNeed adds it */
  for (int i = b; i > 0; i = m->body_parent[i]) {
    int nv = m->jnt_nv[i], p = m->body_parent[i];
    const double *S = d->S + 36 * i, *U = d->U + 36 * i, *Dinv = d->Dinv + 36 * i;
    double *u = u6 + 36 * i, pa[6][6];
    for (int a = 0; a < nv; a++)
      for (int j = 0; j < 6; j++)
        u[6 * a + j] = -(S[6 * a] * pA[0][j] + S[6 * a + 1] * pA[1][j] + S[6 * a + 2] * pA[2][j] +
                         S[6 * a + 3] * pA[3][j] + S[6 * a + 4] * pA[4][j] + S[6 * a + 5] * pA[5][j]);
    if (p <= 0) continue; /* the root's carried impulse is not read (a free root: its D^-1 u and U D^-1 u) */
    memcpy(pa, pA, sizeof pa);
    if (nv == 1) {
      for (int j = 0; j < 6; j++) {
        double Du = Dinv[0] * u[j];
        for (int k = 0; k < 6; k++) pa[k][j] += U[k] * Du;
      }
    } else {
      for (int a = 0; a < nv; a++)
        for (int j = 0; j < 6; j++) {
          double Du = 0;
          for (int c = 0; c < nv; c++) Du += Dinv[nv * a + c] * u[6 * c + j];
          for (int k = 0; k < 6; k++) pa[k][j] += U[6 * a + k] * Du;
        }
    }
    for (int k = 0; k < 6; k++)
      for (int j = 0; j < 6; j++) pA[k][j] = 0.0 + pa[k][j];
  }

  /* back out over the tree: dv = dv_parent, dqd = Dinv (u - U^T dv), dv += S dqd */
  int next = 0;
  for (int i = root; i < m->body_treeend[root]; i++) {
    if (m->body_root[i] != root) continue;
    int nv = m->jnt_nv[i], p = m->body_parent[i];
    double *dv = dv6 + 36 * i;
    int on_path = impulse_on_path(m, b, i, on, depth, &next, need);
    if (need && !need[i]) continue;
    const double *S = d->S + 36 * i, *U = d->U + 36 * i, *Dinv = d->Dinv + 36 * i, *u = u6 + 36 * i;
    if (p > 0 && nv == 1) {
      /* one column, from the parent's dv directly: the six dq first (each
       * column its own), then dv = dv_parent + S dq, the sums of the copy
       * and += below without the copy */
      const double *dp = dv6 + 36 * p;
      double dq[6];
      for (int j = 0; j < 6; j++)
        dq[j] = Dinv[0] * ((on_path ? u[j] : 0) - (U[0] * dp[j] + U[1] * dp[6 + j] + U[2] * dp[12 + j] +
                                                 U[3] * dp[18 + j] + U[4] * dp[24 + j] + U[5] * dp[30 + j]));
      for (int k = 0; k < 6; k++)
        for (int j = 0; j < 6; j++) dv[6 * k + j] = dp[6 * k + j] + S[k] * dq[j];
      continue;
    }
    if (p > 0) memcpy(dv, dv6 + 36 * p, 36 * sizeof(double));
    else memset(dv, 0, 36 * sizeof(double));
    if (!nv) continue;
    if (nv == 1) {
      for (int j = 0; j < 6; j++) {
        double dq = Dinv[0] * ((on_path ? u[j] : 0) - (U[0] * dv[j] + U[1] * dv[6 + j] + U[2] * dv[12 + j] +
                                                     U[3] * dv[18 + j] + U[4] * dv[24 + j] + U[5] * dv[30 + j]));
        for (int k = 0; k < 6; k++) dv[6 * k + j] += S[k] * dq;
      }
      continue;
    }
    for (int j = 0; j < 6; j++) {
      double r[6], dq[6];
      for (int a = 0; a < nv; a++) {
        const double *Ua = U + 6 * a;
        r[a] = (on_path ? u[6 * a + j] : 0) - (Ua[0] * dv[j] + Ua[1] * dv[6 + j] + Ua[2] * dv[12 + j] +
                                               Ua[3] * dv[18 + j] + Ua[4] * dv[24 + j] + Ua[5] * dv[30 + j]);
      }
      for (int a = 0; a < nv; a++) {
        dq[a] = 0;
        for (int c = 0; c < nv; c++) dq[a] += Dinv[nv * a + c] * r[c];
      }
      for (int a = 0; a < nv; a++)
        for (int k = 0; k < 6; k++) dv[6 * k + j] += S[6 * a + k] * dq[a];
    }
  }
}

/* response_units compiled for AVX too, used where the CPU has it: its loops
 * over the six columns vectorise four lanes wide, each lane the column's
 * own operations (no FMA, no reassociation), so both give the same bits */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void response_units_avx(const khzModel *m, khzData *d, int b,
                                                              const unsigned char *need, double *u6,
                                                              double *dv6) {
  response_units(m, d, b, need, u6, dv6);
}
#endif

void khz_impulseResponseUnits(const khzModel *m, khzData *d, int b, const unsigned char *need, double *u6,
                              double *dv6) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) {
    response_units_avx(m, d, b, need, u6, dv6);
    return;
  }
#endif
  response_units(m, d, b, need, u6, dv6);
}

static inline __attribute__((always_inline)) void response_cols(const khzModel *m, khzData *d, int b,
                                                                 int ncol, const double *f,
                                                                 const unsigned char *need, double *uc,
                                                                 double *dvc) {
  enum { W = 6 * KHZ_RESPONSE_COLS };
  int root = m->body_root[b];
  int path[KHZ_PATH_MARK], depth;
  const int *on = impulse_path(m, b, path, &depth);

  /* pA[j]: column j's bias force on the body the walk is at; on b it is -f_j */
  double pA[KHZ_RESPONSE_COLS][6];
  for (int j = 0; j < ncol; j++)
    for (int k = 0; k < 6; k++) pA[j][k] = -f[6 * j + k];
  /* to the root: u = -S^T pA, pa = pA + U Dinv u; the parent's pA is the
   * cleared +0 plus pa, as khz_impulseResponseNeed adds it */
  for (int i = b; i > 0; i = m->body_parent[i]) {
    int nv = m->jnt_nv[i], p = m->body_parent[i];
    const double *S = d->S + 36 * i, *U = d->U + 36 * i, *Dinv = d->Dinv + 36 * i;
    for (int j = 0; j < ncol; j++) {
      double *u = uc + W * i + 6 * j, pa[6];
      for (int a = 0; a < nv; a++) u[a] = -khzu_dot6(S + 6 * a, pA[j]);
      if (p <= 0) continue; /* the root's carried impulse is not read */
      memcpy(pa, pA[j], sizeof pa);
      if (nv == 1) {
        double Du = Dinv[0] * u[0];
        for (int k = 0; k < 6; k++) pa[k] += U[k] * Du;
      } else {
        for (int a = 0; a < nv; a++) {
          double Du = 0;
          for (int c = 0; c < nv; c++) Du += Dinv[nv * a + c] * u[c];
          for (int k = 0; k < 6; k++) pa[k] += U[6 * a + k] * Du;
        }
      }
      for (int k = 0; k < 6; k++) pA[j][k] = 0.0 + pa[k];
    }
  }

  /* back out over the tree: dv = dv_parent, dqd = Dinv (u - U^T dv), dv += S dqd */
  int next = 0;
  for (int i = root; i < m->body_treeend[root]; i++) {
    if (m->body_root[i] != root) continue;
    int nv = m->jnt_nv[i], p = m->body_parent[i];
    int on_path = impulse_on_path(m, b, i, on, depth, &next, need);
    if (need && !need[i]) continue;
    const double *S = d->S + 36 * i, *U = d->U + 36 * i, *Dinv = d->Dinv + 36 * i;
    for (int j = 0; j < ncol; j++) {
      double *dv = dvc + W * i + 6 * j;
      const double *u = uc + W * i + 6 * j;
      if (p > 0) memcpy(dv, dvc + W * p + 6 * j, 6 * sizeof(double));
      else memset(dv, 0, 6 * sizeof(double));
      if (!nv) continue;
      if (nv == 1) {
        double dq = Dinv[0] * ((on_path ? u[0] : 0) - khzu_dot6(U, dv));
        for (int k = 0; k < 6; k++) dv[k] += S[k] * dq;
        continue;
      }
      double r[6], dq[6];
      for (int a = 0; a < nv; a++) r[a] = (on_path ? u[a] : 0) - khzu_dot6(U + 6 * a, dv);
      for (int a = 0; a < nv; a++) {
        dq[a] = 0;
        for (int c = 0; c < nv; c++) dq[a] += Dinv[nv * a + c] * r[c];
      }
      for (int a = 0; a < nv; a++)
        for (int k = 0; k < 6; k++) dv[k] += S[6 * a + k] * dq[a];
    }
  }
}

/* response_cols compiled for AVX too, as response_units: a column's six
 * sums vectorise, each lane its own element's operations (no FMA, no
 * reassociation), so both builds give the same bits */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void response_cols_avx(const khzModel *m, khzData *d, int b, int ncol,
                                                             const double *f, const unsigned char *need,
                                                             double *uc, double *dvc) {
  response_cols(m, d, b, ncol, f, need, uc, dvc);
}
#endif

void khz_impulseResponseCols(const khzModel *m, khzData *d, int b, int ncol, const double *f,
                             const unsigned char *need, double *uc, double *dvc) {
  if (b <= 0 || ncol <= 0) return;
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) {
    response_cols_avx(m, d, b, ncol, f, need, uc, dvc);
    return;
  }
#endif
  response_cols(m, d, b, ncol, f, need, uc, dvc);
}

/* The first half of khz_impulseResponseCols alone: the way to the root.
 * ABA's backward pass is a block factorisation M = L^T D L of the joint-space
 * inertia (D the joints' D_i, armature and implicit damping included; RBDA
 * section 6.5's L^T D L with the tree's parent array, here in articulated
 * form), and the way up applies L^-T: u_i = S_i^T F_i, F_i the impulse
 * carried to joint i through the articulated inertias below it, is joint
 * i's entry of L^-T J^T for the impulse's Jacobian J. So the Delassus
 * entries of two impulses are sum_i u_i^T D_i^-1 u'_i over the joints on
 * both paths, with no walk back out over the tree. */
static inline __attribute__((always_inline)) void factor_cols(const khzModel *m, const khzData *d, int b, int ncol,
                                                               const double *f, double *uc) {
  enum { W = 6 * KHZ_RESPONSE_COLS };
  double pA[KHZ_RESPONSE_COLS][6];
  for (int j = 0; j < ncol; j++)
    for (int k = 0; k < 6; k++) pA[j][k] = -f[6 * j + k];
  for (int i = b; i > 0; i = m->body_parent[i]) {
    int nv = m->jnt_nv[i], p = m->body_parent[i];
    const double *S = d->S + 36 * i, *U = d->U + 36 * i, *Dinv = d->Dinv + 36 * i;
    for (int j = 0; j < ncol; j++) {
      double *u = uc + W * i + 6 * j;
      for (int a = 0; a < nv; a++) u[a] = -khzu_dot6(S + 6 * a, pA[j]);
      if (p <= 0) continue; /* the root's carried impulse is not read */
      if (nv == 1) {
        double Du = Dinv[0] * u[0];
        for (int k = 0; k < 6; k++) pA[j][k] += U[k] * Du;
      } else {
        for (int a = 0; a < nv; a++) {
          double Du = 0;
          for (int c = 0; c < nv; c++) Du += Dinv[nv * a + c] * u[c];
          for (int k = 0; k < 6; k++) pA[j][k] += U[6 * a + k] * Du;
        }
      }
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void factor_cols_avx(const khzModel *m, const khzData *d, int b, int ncol,
                                                           const double *f, double *uc) {
  factor_cols(m, d, b, ncol, f, uc);
}
#endif

void khz_impulseFactorCols(const khzModel *m, const khzData *d, int b, int ncol, const double *f, double *uc) {
  if (b <= 0 || ncol <= 0) return;
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx")) {
    factor_cols_avx(m, d, b, ncol, f, uc);
    return;
  }
#endif
  factor_cols(m, d, b, ncol, f, uc);
}

int khz_jointDinvFactor(const khzModel *m, const khzData *d, int i, double *C) {
  int nv = m->jnt_nv[i];
  const double *Dinv = d->Dinv + 36 * i;
  if (nv == 1) {
    if (!(Dinv[0] > 0)) return -1;
    C[0] = sqrt(Dinv[0]);
    return 0;
  }
  memcpy(C, Dinv, (size_t)nv * nv * sizeof(double));
  return nv ? khzu_cholFactor(C, nv) : 0;
}

/* the spatial impulse (about the tree's origin) of the world impulse J at x on b */
void khz_spatialImpulse(const khzModel *m, const khzData *d, int b, const double x[3],
                            const double J[3], double f[6]) {
  const double *o = d->xpos + 3 * m->body_root[b];
  double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]};
  khzu_cross(f, r, J);
  f[3] = J[0], f[4] = J[1], f[5] = J[2];
}

/* velocity change at x of body b from the body velocity changes dvel */
void khz_pointVelocityChange(const khzModel *m, const khzData *d, int b, const double x[3],
                         const double *dvel, double dv[3]) {
  const double *w = dvel + 6 * b, *o = d->xpos + 3 * m->body_root[b];
  double r[3] = {x[0] - o[0], x[1] - o[1], x[2] - o[2]};
  khzu_cross(dv, w, r);
  for (int j = 0; j < 3; j++) dv[j] += w[3 + j];
}

void khz_pointResponse(const khzModel *m, khzData *d, int b, const double x[3], const double J[3],
                       int bq, const double xq[3], double dv_b[3], double dv_q[3], double *dqd,
                       double *dvel) {
  double f[6];
  khz_spatialImpulse(m, d, b, x, J, f);
  if (dqd) memset(dqd, 0, (size_t)m->nv * sizeof(double));
  khz_impulseResponse(m, d, b, f, dqd, dvel);
  /* read the velocity change of both bodies' points (same tree or not) */
  for (int s = 0; s < 2; s++) {
    int body = s ? bq : b;
    double *out = s ? dv_q : dv_b;
    out[0] = out[1] = out[2] = 0;
    if (body > 0 && m->body_root[body] == m->body_root[b]) khz_pointVelocityChange(m, d, body, s ? xq : x, dvel, out);
  }
}
