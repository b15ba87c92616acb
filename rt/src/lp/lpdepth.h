/* lpdepth.h — the ratio-metric penetration depth of two convex polyhedra by
 * one linear program (rt-private).
 *
 * Anitescu & Hart, "An LP approach for computing depth of penetration in
 * piecewise smooth multibody dynamics" (docs/lpdepth.md). A convex polyhedron
 * P = { x : A x <= b } with an interior point x_i (its centre) expands or
 * contracts about it as P(x_i, t) = { x : A x <= t b + (1 - t) A x_i }. The
 * ratio metric of two of them is
 *
 *   r = min { t : P1(x1, t) and P2(x2, t) intersect }             (eq. 2)
 *
 * an LP in the 4 unknowns (x, t) with one row per face, O(m1 + m2), and the
 * ratio-metric penetration depth is rho = (r - 1) / r (eq. 3): positive when
 * the bodies are apart, zero when they touch, negative when they overlap. It
 * is equivalent to the Minkowski depth / distance s (the metric-equivalence
 * theorem): s / D <= |rho| <= s / eps, where D = |x2 - x1| and, as proved in
 * docs/lpdepth.md, eps = r (e1 + e2) with e_i the radius of the largest ball
 * about x_i inside P_i.
 *
 * The LP solved is the dual, with 4 rows and one column per face k of body i
 * (outward unit normal a_k, c_k = b_k - a_k . x_i > 0):
 *
 *   min sum_k y_k a_k . x_i   s.t.  sum_k y_k a_k = 0,  sum_k y_k c_k = 1,  y >= 0
 *
 * whose optimum is -r; its multipliers are the witness point x (a common point
 * of the two scaled bodies) and -r. n1 = sum over body 1's faces of y_k a_k is
 * the normal of the plane that separates P1(x1, r) from P2(x2, r) at x, from
 * body 1 toward body 2, and n1 . (x2 - x1) = r. By LP sensitivity (the
 * multipliers are the derivatives of the optimum with respect to the data),
 * where the optimal basis is unique (a nondegenerate basic contact unit of the
 * paper: corner on face, edge on edge) rho is differentiable and
 *
 *   d rho = (1 / r^2) [ n1 . (v2 - v1) + ((x - x2) x n1) . w2 - ((x - x1) x n1) . w1 ]
 *
 * for translations v_i of the centres and small rotations w_i about them
 * (world frame): the Jacobian of one contact at x with normal n1, so the depth
 * serves as a gap function Phi = rho >= 0 with its gradient.
 */
#ifndef KHZ_LP_LPDEPTH_H
#define KHZ_LP_LPDEPTH_H

#include <stddef.h>

#include "lp/simplex.h"

struct khzColShape;

/* a convex polyhedron in the world: nface faces a . x <= b, 4 doubles each
 * (a: outward normal of any length, b), and a point strictly inside */
typedef struct khzPolytope {
  int nface;
  const double *face;
  double center[3];
} khzPolytope;

/* the answer of khz_lpDepth */
typedef struct khzLpDepth {
  double r;         /* ratio metric (eq. 2) */
  double rho;       /* (r - 1) / r (eq. 3): > 0 apart, < 0 overlapping */
  double point[3];  /* witness: a point of both P1(x1, r) and P2(x2, r) */
  double normal[3]; /* unit normal of their separating plane, from body 1 toward body 2 */
  double dn;        /* normal . (x2 - x1): the centres' distance along the normal */
  double grad[12];  /* d rho / d (v1, w1, v2, w2) as above */
  int nactive[2];   /* faces of each body with a positive multiplier */
  int pivots;       /* simplex pivots */
  int basis[4];     /* the optimal basis: faces k (body 1's first, then body 2's) */
  int warm;         /* 1 when the warm basis given was taken */
} khzLpDepth;

/* workspace of khz_lpDepth for pairs of at most maxface faces in all */
typedef struct khzLpDepthWork {
  int maxface;
  khzLp lp;
  double *A;    /* 4 x maxface, column-major: (a_k, c_k) */
  double *cost; /* maxface: a_k . (x_i - x1) */
  double *y;    /* maxface: the multipliers */
} khzLpDepthWork;

/* Bytes a workspace for at most maxface faces (both bodies) needs. */
size_t khz_lpDepthBytes(int maxface);

/* Carves a workspace out of mem (khz_lpDepthBytes(maxface) bytes, 8-byte
 * aligned). */
void khz_lpDepthInit(khzLpDepthWork *w, int maxface, void *mem);

/* The ratio-metric depth of p1 and p2 into out, from the basis warm (4 face
 * indices, e.g. out->basis of the same pair's previous step; NULL: cold) when
 * it is still primal feasible. Returns KHZ_LP_OPTIMAL, or
 * KHZ_LP_BADINPUT when a face normal is zero or not finite or a centre is not
 * strictly inside its polytope (c_k <= 0), KHZ_LP_TOOBIG when the faces exceed
 * the workspace, or the solver's failure (budget, singular basis; the LP
 * itself is always feasible and bounded when both centres are interior and at
 * least one polytope is bounded). A half-space (one face) is accepted as one
 * body when the other is bounded. Never allocates. */
khzLpStatus khz_lpDepth(khzLpDepthWork *w, const khzPolytope *p1, const khzPolytope *p2,
                        const int *warm, khzLpDepth *out);

/* The faces of a box, convex hull or plane shape in the world into face (4 per
 * face, room for maxface) and the polytope p that points at them, centred on
 * the box's centre, the mean of the hull's vertices, or for a plane (the
 * half-space below it) the point plane_depth below its origin. Returns the
 * number of faces, or -1 for other shapes or when maxface is too small. */
int khz_lpPolytopeOfShape(const struct khzColShape *s, double plane_depth, double *face,
                          int maxface, khzPolytope *p);

#endif
