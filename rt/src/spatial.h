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

/* ---- 3-vectors and 3x3 matrices ---- */

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

void khzu_mulMat3(double res[9], const double A[9], const double B[9]);
void khzu_mulMatTMat3(double res[9], const double A[9], const double B[9]); /* A^T B */
void khzu_mulMatMatT3(double res[9], const double A[9], const double B[9]); /* A B^T */

/* ---- quaternions (w, x, y, z) ---- */

void khzu_quat2mat(double res[9], const double q[4]);
/* rotation of q / |q| for a quaternion that need not be unit (RK4 stages) */
void khzu_quat2matScaled(double res[9], const double q[4]);
void khzu_mulQuat(double res[4], const double a[4], const double b[4]);
void khzu_normalizeQuat(double q[4]);
/* rotation of angle |w| h about w/|w| as a quaternion (exponential map) */
void khzu_axisAngle2Quat(double res[4], const double axis[3], double angle);
void khzu_mat2quat(double res[4], const double R[9]);

/* ---- spatial vectors ---- */

/* res = v x m (motion cross motion) */
void khzu_crossMotion(double res[6], const double v[6], const double m[6]);
/* res = v x* f (motion cross force) */
void khzu_crossForce(double res[6], const double v[6], const double f[6]);

/* Plucker transform X = (E[9], r[3]) packed as 12 doubles. */
/* res = X m for a motion vector */
void khzu_xformMotion(double res[6], const double X[12], const double m[6]);
/* res = X^T f: force in B coordinates back to A coordinates (X is A->B) */
void khzu_xformForceT(double res[6], const double X[12], const double f[6]);
/* res = X^T I X for a symmetric spatial inertia I (6x6) in B coordinates */
void khzu_xformInertiaT(double res[36], const double X[12], const double I[36]);

/* Spatial inertia about the body origin from mass, com c and inertia Ic about the com. */
void khzu_spatialInertia(double res[36], double mass, const double c[3], const double Ic[9]);

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
 * returns 0 or -1 when not positive definite. */
int khzu_cholFactor(double *A, int n);
/* solve A x = b in place with the factor from khzu_cholFactor */
void khzu_cholSolve(const double *L, int n, double *x);

/* ---- geometry ---- */

/* closest point to p on segment [a, b]; returns its parameter t in [0, 1] */
double khzu_closestOnSegment(const double p[3], const double a[3], const double b[3],
                             double q[3]);

/* closest points of segments [p1, q1] and [p2, q2] (Ericson 5.1.9); writes
 * parameters s, t and points c1, c2; returns the squared distance */
double khzu_closestSegSeg(const double p1[3], const double q1[3], const double p2[3],
                          const double q2[3], double *s, double *t, double c1[3], double c2[3]);

/* closest point on triangle abc to p (Ericson 5.1.5); region: 0 face, 1..3
 * vertex a, b, c, 4..6 edge ab, bc, ca */
void khzu_closestOnTriangle(const double p[3], const double a[3], const double b[3],
                            const double c[3], double q[3], int *region);

/* a unit vector orthogonal to unit n */
void khzu_orthogonal(double r[3], const double n[3]);

#endif
