/* spatial.h — 3D and spatial (6D) algebra used by the dynamics algorithms.
 *
 * Featherstone, Rigid Body Dynamics Algorithms (RBDA), ch. 2: motion vectors
 * [w; v], force vectors [n; f]. A Plucker transform from frame A to frame B is
 * stored as (E, r): E rotates A coordinates into B coordinates (E = R^T where R
 * is B's orientation in A) and r is B's origin in A coordinates:
 *     X = [E 0; -E rx E],  X* = [E -E rx; 0 E].
 * All functions are self-contained math (prefix khzu_), output first.
 * 3x3 matrices are row-major; 6x6 matrices are row-major.
 */
#ifndef KHZ_SPATIAL_H
#define KHZ_SPATIAL_H

#include <math.h>
#include <string.h>

/* Hot functions of the contact path compiled for AVX too, picked once at
 * load time (GCC's target_clones, an ifunc): the VEX forms take fewer
 * instructions. No FMA and no reassociation (the AVX target has neither),
 * so both clones give the same bits, as aba_core_keep_avx does. Not under
 * ThreadSanitizer: the instrumented ifunc resolver runs before its runtime
 * and crashes the program at load. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define KHZ_AVX_CLONES __attribute__((target_clones("avx", "default")))
#else
#define KHZ_AVX_CLONES
#endif

/* ---- 3-vectors and 3x3 matrices (inline: the dynamics and the narrow phase
 * call them in their innermost loops) ---- */

/* fmax(x, 0) and fmin(a, b) without libm's calls (GCC keeps the call unless
 * math is finite-only), bit for bit glibc's on x86-64 (maxsd / minsd return
 * their second operand on a tie of zeros; a NaN operand gives the other):
 * fmax(x, 0) is +0 for x NaN, -0 or below zero; fmin(+0, -0) is -0 */
static inline double khzu_max0(double x) { return x > 0 ? x : 0; }
static inline double khzu_fmin(double a, double b) { return a < b || b != b ? a : b; }

static inline void khzu_cross(double res[3], const double a[3], const double b[3]) {
  double r0 = a[1] * b[2] - a[2] * b[1];
  double r1 = a[2] * b[0] - a[0] * b[2];
  double r2 = a[0] * b[1] - a[1] * b[0];
  res[0] = r0, res[1] = r1, res[2] = r2;
}

static inline double khzu_dot3(const double a[3], const double b[3]) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static inline void khzu_sub3(double r[3], const double a[3], const double b[3]) {
  r[0] = a[0] - b[0], r[1] = a[1] - b[1], r[2] = a[2] - b[2];
}
static inline void khzu_add3(double r[3], const double a[3], const double b[3]) {
  r[0] = a[0] + b[0], r[1] = a[1] + b[1], r[2] = a[2] + b[2];
}
static inline void khzu_scl3(double r[3], const double a[3], double s) {
  r[0] = a[0] * s, r[1] = a[1] * s, r[2] = a[2] * s;
}
/* r = a + s b */
static inline void khzu_addScl3(double r[3], const double a[3], const double b[3], double s) {
  r[0] = a[0] + s * b[0], r[1] = a[1] + s * b[1], r[2] = a[2] + s * b[2];
}
static inline double khzu_norm3(const double a[3]) { return sqrt(khzu_dot3(a, a)); }
/* normalises in place; returns the old length (a untouched when 0) */
static inline double khzu_normalize3(double a[3]) {
  double n = khzu_norm3(a);
  if (n > 0) a[0] /= n, a[1] /= n, a[2] /= n;
  return n;
}
static inline void khzu_copy3(double r[3], const double a[3]) {
  r[0] = a[0], r[1] = a[1], r[2] = a[2];
}
static inline double khzu_clamp(double x, double lo, double hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

/* res = M a */
static inline void khzu_mulMatVec3(double res[3], const double M[9], const double a[3]) {
  double r0 = M[0] * a[0] + M[1] * a[1] + M[2] * a[2];
  double r1 = M[3] * a[0] + M[4] * a[1] + M[5] * a[2];
  double r2 = M[6] * a[0] + M[7] * a[1] + M[8] * a[2];
  res[0] = r0, res[1] = r1, res[2] = r2;
}

/* res = M^T a */
static inline void khzu_mulMatTVec3(double res[3], const double M[9], const double a[3]) {
  double r0 = M[0] * a[0] + M[3] * a[1] + M[6] * a[2];
  double r1 = M[1] * a[0] + M[4] * a[1] + M[7] * a[2];
  double r2 = M[2] * a[0] + M[5] * a[1] + M[8] * a[2];
  res[0] = r0, res[1] = r1, res[2] = r2;
}

/* A B */
static inline void khzu_mulMat3(double res[9], const double A[9], const double B[9]) {
  double t[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      t[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
  memcpy(res, t, sizeof t);
}
/* A^T B */
static inline void khzu_mulMatTMat3(double res[9], const double A[9], const double B[9]) {
  double t[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      t[3 * i + j] = A[i] * B[j] + A[3 + i] * B[3 + j] + A[6 + i] * B[6 + j];
  memcpy(res, t, sizeof t);
}
/* A B^T */
static inline void khzu_mulMatMatT3(double res[9], const double A[9], const double B[9]) {
  double t[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      t[3 * i + j] =
          A[3 * i] * B[3 * j] + A[3 * i + 1] * B[3 * j + 1] + A[3 * i + 2] * B[3 * j + 2];
  memcpy(res, t, sizeof t);
}

/* ---- quaternions (w, x, y, z) ---- */

static inline void khzu_quat2mat(double res[9], const double q[4]) {
  double w = q[0], x = q[1], y = q[2], z = q[3];
  res[0] = 1 - 2 * (y * y + z * z);
  res[1] = 2 * (x * y - w * z);
  res[2] = 2 * (x * z + w * y);
  res[3] = 2 * (x * y + w * z);
  res[4] = 1 - 2 * (x * x + z * z);
  res[5] = 2 * (y * z - w * x);
  res[6] = 2 * (x * z - w * y);
  res[7] = 2 * (y * z + w * x);
  res[8] = 1 - 2 * (x * x + y * y);
}
/* rotation of q / |q| for a quaternion that need not be unit (RK4 stages) */
static inline void khzu_quat2matScaled(double res[9], const double q[4]) {
  double w = q[0], x = q[1], y = q[2], z = q[3];
  double n2 = w * w + x * x + y * y + z * z, s = n2 > 0 ? 2 / n2 : 0;
  res[0] = 1 - s * (y * y + z * z);
  res[1] = s * (x * y - w * z);
  res[2] = s * (x * z + w * y);
  res[3] = s * (x * y + w * z);
  res[4] = 1 - s * (x * x + z * z);
  res[5] = s * (y * z - w * x);
  res[6] = s * (x * z - w * y);
  res[7] = s * (y * z + w * x);
  res[8] = 1 - s * (x * x + y * y);
}
void khzu_mulQuat(double res[4], const double a[4], const double b[4]);
void khzu_normalizeQuat(double q[4]);
/* rotation of angle |w| h about w/|w| as a quaternion (exponential map) */
static inline void khzu_axisAngle2Quat(double res[4], const double axis[3], double angle) {
  double s = sin(0.5 * angle);
  res[0] = cos(0.5 * angle);
  res[1] = axis[0] * s, res[2] = axis[1] * s, res[3] = axis[2] * s;
}
void khzu_mat2quat(double res[4], const double R[9]);

/* The turn of R0 against R1 since the anchor qa (the orientation P_a of R0
 * in R1's frame at which the turn is zero), in the world's frame: the
 * rotation vector of M = R1 E R1^T = R0 B^T with E = R1^T R0 P_a^T and
 * B = R1 P_a (the rotation vector of R1 E R1^T is R1 times E's). With b_i,
 * r_i the columns of B and R0, M's skew part is v = 1/2 sum b_i x r_i, its
 * length sin(a), and its trace sum b_i . r_i = 1 + 2 cos(a); the turn is
 * v a / sin(a). For cos(a) > 0 and sin(a)^2 < 1e-4, a / sin(a) =
 * asin(s) / s = 1 + s^2/6 + 3 s^4/40 + 5 s^6/112 + O(s^8): the first term
 * left out, 35 s^8 / 1152 < 3.1e-18, is far below the double's rounding
 * (1.1e-16); a sticking anchor holds turns of 1e-6 rad or less. Larger
 * turns take atan2. One 3x3 product instead of two and a product's
 * transform back to the world, no atan2 and no division. R1 = NULL is the
 * world's identity: B = P_a, as the product with the exact identity gives
 * it, bit for bit, without the product. */
static inline void khzu_turnSince(double phi[3], const double R0[9], const double R1[9],
                                  const double qa[4]) {
  typedef double v4 __attribute__((vector_size(32)));
  double Pa[9], v[3] = {0, 0, 0}, tr = 0;
  khzu_quat2mat(Pa, qa);
  /* the three columns i of B = R1 P_a and of R0 side by side in lanes 0-2:
   * row j of B and of R0 (lane i holds b_i[j], r_i[j]). Each lane's sums are
   * the column-by-column loop's (b_i[j] = R1[3j] Pa[i] + R1[3j+1] Pa[3+i] +
   * R1[3j+2] Pa[6+i], the cross product b_i x r_i and b_i . r_i, in the
   * same order), and v and tr add the lanes 0, 1, 2 in turn: the same bits */
  const v4 P0 = {Pa[0], Pa[1], Pa[2], 0}, P1 = {Pa[3], Pa[4], Pa[5], 0}, P2 = {Pa[6], Pa[7], Pa[8], 0};
  const v4 r0 = {R0[0], R0[1], R0[2], 0}, r1 = {R0[3], R0[4], R0[5], 0}, r2 = {R0[6], R0[7], R0[8], 0};
  v4 b0 = P0, b1 = P1, b2 = P2;
  if (R1) {
    b0 = R1[0] * P0 + R1[1] * P1 + R1[2] * P2;
    b1 = R1[3] * P0 + R1[4] * P1 + R1[5] * P2;
    b2 = R1[6] * P0 + R1[7] * P1 + R1[8] * P2;
  }
  const v4 x0 = b1 * r2 - b2 * r1, x1 = b2 * r0 - b0 * r2, x2 = b0 * r1 - b1 * r0;
  const v4 t = b0 * r0 + b1 * r1 + b2 * r2;
  for (int i = 0; i < 3; i++) v[0] += x0[i], v[1] += x1[i], v[2] += x2[i], tr += t[i];
  v[0] *= 0.5, v[1] *= 0.5, v[2] *= 0.5;
  double s2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2], c = 0.5 * (tr - 1), g;
  if (c > 0 && s2 < 1e-4) g = 1 + s2 * (1.0 / 6 + s2 * (3.0 / 40 + s2 * (5.0 / 112)));
  else {
    double sa = sqrt(s2);
    g = sa > 0 ? atan2(sa, c) / sa : 1;
  }
  phi[0] = g * v[0], phi[1] = g * v[1], phi[2] = g * v[2];
}

/* ---- spatial vectors ---- */

/* res = v x m (motion cross motion) = [w x mw; w x mv + v x mw]  (RBDA eq. 2.31) */
static inline void khzu_crossMotion(double res[6], const double v[6], const double m[6]) {
  double a[3], b[3], c[3];
  khzu_cross(a, v, m);
  khzu_cross(b, v, m + 3);
  khzu_cross(c, v + 3, m);
  res[0] = a[0], res[1] = a[1], res[2] = a[2];
  res[3] = b[0] + c[0], res[4] = b[1] + c[1], res[5] = b[2] + c[2];
}
/* res = v x* f (motion cross force) = [w x n + v x f; w x f]  (RBDA eq. 2.32) */
static inline void khzu_crossForce(double res[6], const double v[6], const double f[6]) {
  double a[3], b[3], c[3];
  khzu_cross(a, v, f);
  khzu_cross(b, v + 3, f + 3);
  khzu_cross(c, v, f + 3);
  res[0] = a[0] + b[0], res[1] = a[1] + b[1], res[2] = a[2] + b[2];
  res[3] = c[0], res[4] = c[1], res[5] = c[2];
}

/* Plucker transform X = (E[9], r[3]) packed as 12 doubles. */
/* res = X m for a motion vector */
void khzu_xformMotion(double res[6], const double X[12], const double m[6]);
/* res = X^T f: force in B coordinates back to A coordinates (X is A->B) */
void khzu_xformForceT(double res[6], const double X[12], const double f[6]);
/* res = X^T I X for a symmetric spatial inertia I (6x6) in B coordinates */
void khzu_xformInertiaT(double res[36], const double X[12], const double I[36]);

/* Spatial inertia about the body origin from mass, com c and inertia Ic about the com:
 * I = [Ic + m cx cx^T, m cx; m cx^T, m 1]  (RBDA eq. 2.63) */
/* entry (i, j) of I goes to res[rs i + cs j]: (6, 1) row-major, (1, 6) the
 * transpose (column-major); the same arithmetic either way */
static inline void khzu_spatialInertiaStrided(double res[36], double mass, const double c[3],
                                              const double Ic[9], int rs, int cs) {
  double cx[9] = {0, -c[2], c[1], c[2], 0, -c[0], -c[1], c[0], 0};
  /* cx cx^T without the products of cx's zero diagonal (the same sums in the
   * same order otherwise) */
  double cxcxT[9];
  cxcxT[0] = cx[1] * cx[1] + cx[2] * cx[2];
  cxcxT[1] = cx[2] * cx[5];
  cxcxT[2] = cx[1] * cx[7];
  cxcxT[3] = cx[5] * cx[2];
  cxcxT[4] = cx[3] * cx[3] + cx[5] * cx[5];
  cxcxT[5] = cx[3] * cx[6];
  cxcxT[6] = cx[7] * cx[1];
  cxcxT[7] = cx[6] * cx[3];
  cxcxT[8] = cx[6] * cx[6] + cx[7] * cx[7];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      res[rs * i + cs * j] = Ic[3 * i + j] + mass * cxcxT[3 * i + j];
      res[rs * i + cs * (3 + j)] = mass * cx[3 * i + j];
      res[rs * (3 + i) + cs * j] = mass * cx[3 * j + i];
      res[rs * (3 + i) + cs * (3 + j)] = (i == j) ? mass : 0;
    }
}
static inline void khzu_spatialInertia(double res[36], double mass, const double c[3],
                                       const double Ic[9]) {
  khzu_spatialInertiaStrided(res, mass, c, Ic, 6, 1);
}

/* res = I v for a 6x6 matrix I */
static inline void khzu_mulMatVec6(double res[6], const double I[36], const double v[6]) {
  for (int i = 0; i < 6; i++) {
    const double *row = I + 6 * i;
    res[i] = row[0] * v[0] + row[1] * v[1] + row[2] * v[2] + row[3] * v[3] + row[4] * v[4] +
             row[5] * v[5];
  }
}

static inline double khzu_dot6(const double a[6], const double b[6]) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
}

/* Cholesky factorisation in place of an n x n SPD matrix (lower triangle);
 * returns 0 or -1 when not positive definite. Above n = 12 the strict upper
 * triangle is scratch and ends holding L^T (or partial sums on failure);
 * there the AVX path skips the rows where a panel of four columns is +0
 * (block-sparse matrices, the implicit rows of several trees), the same
 * bits. */
int khzu_cholFactor(double *A, int n);
/* solve A x = b in place with the factor from khzu_cholFactor, as it left
 * it: for 12 < n <= 256 its upper triangle (L^T there) is read too */
void khzu_cholSolve(const double *L, int n, double *x);
/* X = A^-1 (n x n, row-major) from the factor: the same numbers as
 * khzu_cholSolve on each column of the identity */
void khzu_cholInverse(const double *L, int n, double *X);

/* ---- geometry ---- */

/* closest point to p on segment [a, b]; returns its parameter t in [0, 1] */
static inline double khzu_closestOnSegment(const double p[3], const double a[3],
                                           const double b[3], double q[3]) {
  double ab[3], ap[3];
  khzu_sub3(ab, b, a);
  khzu_sub3(ap, p, a);
  double l2 = khzu_dot3(ab, ab), t = l2 > 0 ? khzu_clamp(khzu_dot3(ap, ab) / l2, 0, 1) : 0;
  khzu_addScl3(q, a, ab, t);
  return t;
}

/* closest points of segments [p1, q1] and [p2, q2] (Ericson 5.1.9); writes
 * parameters s, t and points c1, c2; returns the squared distance */
double khzu_closestSegSeg(const double p1[3], const double q1[3], const double p2[3],
                          const double q2[3], double *s, double *t, double c1[3], double c2[3]);

/* closest point on triangle abc to p (Ericson 5.1.5); region: 0 face, 1..3
 * vertex a, b, c, 4..6 edge ab, bc, ca */
void khzu_closestOnTriangle(const double p[3], const double a[3], const double b[3],
                            const double c[3], double q[3], int *region);

/* a unit vector orthogonal to unit n */
static inline void khzu_orthogonal(double r[3], const double n[3]) {
  double t[3] = {1, 0, 0};
  if (fabs(n[0]) > 0.6) t[0] = 0, t[1] = 1;
  khzu_cross(r, n, t);
  khzu_normalize3(r);
}

#endif
