/* penalty.h — the resting pairs' forces of Drumwright's penalty method:
 * gains, normal springs and dampers with the forgetting-factor integral term
 * (eqs. 1-3), sticking friction, rolling friction and the damping limit. */
#ifndef KHZ_CONTACT_PENALTY_H
#define KHZ_CONTACT_PENALTY_H

#include <stddef.h>

#include "khz/khz.h"

/* the deepest-point method's bottom point(s) of pair c: the collision
 * pass's deepest vertex (KHZ_DEEPEST_VERTEX: the scene's gains, or
 * contact.deepest_ties off), the smooth maximum of the depths (a lone pair
 * under automatic gains: KHZ_DEEPEST_SMOOTH), or the vertex to which the
 * caller adds the points tied with it (KHZ_DEEPEST_BAND: automatic gains at
 * a pair that shares a tree with another, or one with more points than the
 * smooth maximum takes; bottom.c, stack_ties) */
enum { KHZ_DEEPEST_VERTEX = 0, KHZ_DEEPEST_SMOOTH = 1, KHZ_DEEPEST_BAND = 2 };
int khz_penaltyDeepestPoints(const khzModel *m, khzData *d, khzContact *c);

/* the largest cluster of pairs whose implicit impulses are solved together */
#define KHZ_IMPLICIT_DIRECT 128

/* The Cholesky factors of the implicit rows' matrix A with some rows held
 * that a solve keeps while A does not change: the last KHZ_FACTORS_KEPT
 * made, each with the k flags of the rows it held (held[e]; valid[e] 0
 * until made; L[e] holds k x k; oldest: the next one replaced). The held
 * rows' passes of the implicit part and its block Gauss-Seidel sweeps hold
 * the same rows again and again (penalty.c, held_solve). */
#define KHZ_FACTORS_KEPT 4
typedef struct khzFactorsKept {
  double *L[KHZ_FACTORS_KEPT];
  int *held[KHZ_FACTORS_KEPT], valid[KHZ_FACTORS_KEPT], oldest;
} khzFactorsKept;

/* sol = the rows of A (k x k, k <= KHZ_IMPLICIT_DIRECT) that fixed does
 * not hold, solved on their block (sol packed: those rows' right-hand
 * side in, their solution out), with the factor kept in fc when one held
 * the same rows (fc may be NULL; L, k x k, is then the scratch). Returns 1
 * when it factored, 0 when it read a kept factor, -1 when the factor
 * failed (tests) */
int khz_penaltyHeldSolve(const double *A, int k, const int *fixed, double *sol, double *L, khzFactorsKept *fc);

/* the blocks of a cluster of k rows for block Gauss-Seidel: the rows
 * grouped by tree (tree[a] in [0, ntree)), whole pairs (pair[a]) kept in
 * order, whole trees packed into blocks of at most 64 rows, a larger tree
 * cut between its pairs; ord (k) the rows in block order, start (k + 1)
 * the blocks' first places, count (ntree + 1) scratch. Returns the number
 * of blocks, or -1 when one pair has more than KHZ_IMPLICIT_DIRECT rows
 * (penalty.c, solve_blocks; tests) */
int khz_penaltyTreeBlocks(const int *tree, const int *pair, int k, int ntree, int *ord, int *start, int *count);

/* The Delassus matrix W = J M^-1 J^T of the implicit rows of every resting
 * pair (their rows as khz_penaltyImplicit makes them, all in one list) into
 * A (k x k, row-major), at ABA's factors of M at d->q (computed here, no
 * damping), from ABA's L^T D L factorisation (factored 1, where the rows
 * move an articulated tree), the lone body's own path (factored 2, where
 * the rows all move one body alone in its tree: khz_penaltyImplicit's
 * delassus_lone), from the tree limits' response L at those factors
 * (factored 3: khz_penaltyImplicit's delassus_kept, where one kept cluster
 * holds every row's moving bodies; factored 4: the same at the factors of
 * M + h B, the joints' damping implicit over d->timestep as the step
 * takes it) or by the articulated walks; J (k x nv, or NULL) receives
 * the rows' joint-space Jacobians. Returns k when the factors or the lone
 * path gave W, -k-1 when the walks did, -1 when there are more than kmax
 * rows or the scratch stack is short (tests) */
int khz_penaltyDelassus(const khzModel *m, khzData *d, int factored, double *A, double *J, int kmax);

/* the mass a contact moves on body b: 0 for the world or a static body
 * (infinite); a robot's link carries its floating robot */
double khz_penaltyContactMass(const khzModel *m, int b);

/* the gains kp, kv, ki (g) of the pair of geoms g0, g1 when the scene gives
 * stiffness: a geom's override (the larger of two), else the scene's value,
 * else per kg of mass (the mass the scene's gain_mass rule names) */
void khz_penaltySceneGains(const khzModel *m, int g0, int g1, double mass, double g[3]);

/* 1 if pair c has automatic gains (the scene sets no stiffness) */
int khz_penaltyAutoGains(const khzModel *m, const khzContact *c);

/* the depth at which a pair with automatic gains holds a body up against
 * an acceleration accel (m/s^2): accel (h / KHZ_AUTO_OMEGA)^2 */
double khz_penaltyAutoDepth(const khzData *d, double accel);

/* 1 if a pair found this tick still needs its effective mass or rotational
 * inertia, which take the articulated inertias at the current q */
int khz_penaltyNeedsInertias(const khzModel *m, const khzData *d);

/* Every pair's gains and friction coefficient; with inertias = 1 (the
 * articulated inertias of khz_abaCore are valid at the current q) a new
 * pair's effective mass and rotational inertia are measured first, with
 * dqd (nv) and dvel (6 nbody) as scratch. */
void khz_penaltyGains(const khzModel *m, khzData *d, int inertias, double *dqd, double *dvel);

/* 1 if a pair with automatic gains presses a robot's link: khz_penaltyLimits
 * then needs the articulated inertias at the current q */
int khz_penaltyTreeLimits(const khzModel *m, const khzData *d);

/* After the points are selected: scales each pair's damping (and, with
 * automatic gains, stiffness) so that no free body it presses, and no robot
 * pressed by a pair with automatic gains, leaves RK4's stability region;
 * with automatic gains what is cut becomes the pair's implicit part
 * (c->kp_implicit, c->kv_implicit). With dqd non-NULL the articulated
 * inertias of khz_abaCore must be valid at the current q (robots' pairs are
 * limited too); dqd NULL leaves robots' pairs alone. */
void khz_penaltyLimits(const khzModel *m, khzData *d, double *dqd);

/* The tree limits' Lanczos steps at most, and their stopping tolerance:
 * the rate returned is the largest Ritz value theta plus its residual
 * bound rho, once rho <= KHZ_RATE_TOL theta (penalty.c lanczos_rate) */
#define KHZ_RATE_STEPS 32
#define KHZ_RATE_TOL 1e-6
/* the cold start's share (relative length) in a kept start (lanczos_rate) */
#define KHZ_RATE_WARM_MIX 1e-4
/* 1: the tree limits start each rate from the Ritz vector kept from the
 * last call (d->rate_warm). On since deep26: test_deep_overlap's pose 5
 * (the arm 20 cm into the table) gained 210 J with it (76 J cold) while the
 * release push fed the load-following stiffness; now 20.2 J either way
 * (docs/benchmarks.md, hum26x and deep26). 0: the cold start of every call */
#define KHZ_RATE_WARM 1
/* doubles of scratch the rate of nb bodies takes: vectors of 6 nb, five
 * for the iteration, KHZ_RATE_STEPS for the Lanczos basis (the Ritz vector
 * kept for the next call) and one for the kept vector's gather */
#define KHZ_PENALTY_RATE_SCRATCH(nb) (6 * (KHZ_RATE_STEPS + 6) * (nb))

/* The largest eigenvalue of L K (n = 6 nb, both n x n row-major, symmetric
 * positive semi-definite) as the tree limits take it (Lanczos, above the
 * eigenvalue by at most 2 KHZ_RATE_TOL of it); K is made exactly symmetric
 * in place, scratch holds KHZ_PENALTY_RATE_SCRATCH(nb) doubles. For tests. */
double khz_penaltyLargestRate(const double *L, double *K, int nb, double *scratch);
/* The same from a kept start: warm (n doubles; all zero: none) mixed with
 * the cold start, and on return the Ritz vector of the rate (unit length;
 * zero if there is none), as the tree limits keep it per body from one
 * step to the next (d->rate_warm). steps (may be NULL) receives the
 * Lanczos steps taken. For tests. */
double khz_penaltyLargestRateWarm(const double *L, double *K, int nb, double *scratch, double *warm, int *steps);

/* The tree limits' block-sparse products, for tests: khz_penaltyClearBlocks
 * zeroes the 6 x 6 blocks of At (A stored transposed, n = 6 nb, nb <= 32)
 * that khz_penaltyMatvecBlocks can read besides mask's (bit Q of mask[R]:
 * block (R, Q) of A may be nonzero), less those in written (NULL: none);
 * khz_penaltyMatvecBlocks sets y = A x from mask's blocks */
void khz_penaltyClearBlocks(double *At, int nb, const unsigned *mask, const unsigned *written);
void khz_penaltyMatvecBlocks(double *y, const double *At, const double *x, int nb, const unsigned *mask);

/* A free body's explicit limits, for tests: C (6 x 6, [w; v] about the
 * centre of mass) += J^T D J for a contact point at r from the centre with
 * normal n and gains kn (along n) and kt (across), as the limits sum a
 * pair's points; and the largest eigenvalue of M^-1 C by their power
 * iteration (Iinv the world inverse inertia, 3 x 3) */
void khz_penaltyPointGainAdd(double *C, const double r[3], const double n[3], double kn, double kt);
double khz_penaltyBodyRate(const double C[36], const double Iinv[9], double mass);
/* the exact largest eigenvalue of M^-1 C (Householder, then Laguerre from above) */
double khz_penaltyBodyRateExact(const double C[36], const double Iinv[9], double mass);
/* 1 if mu M - C is positive definite by its LDL^T (M = diag(Iw, mass 1), Iw the
 * world inertia): the limit's exact test that the largest eigenvalue of M^-1 C is
 * within mu */
int khz_penaltyBodyWithin(const double C[36], const double Iw[9], double mass, double mu);

/* scratch bytes khz_penaltyLimits may take from d's stack */
size_t khz_penaltyLimitsStackBytes(const khzModel *m);
/* doubles of khzData.tree_resp for model m: the tree limits' response
 * matrices L of a step's clusters, kept for the implicit rows' W */
size_t khz_penaltyTreeRespDoubles(const khzModel *m);

/* The stiffness and damping beyond the explicit limit (c->kp_implicit,
 * c->kv_implicit), by backward Euler on each bottom point's normal
 * coordinate: with the articulated inertias of khz_abaCore valid at the
 * step's q and vfree (nv) the velocity the step would end with without the
 * implicit part, sets each point's force_implicit and each pair's
 * tangential force_implicit (constant over the step); leaves the forward
 * pass at (q, vfree). Scratch
 * dqd (nv), dvel and tmp (6 nbody). */
void khz_penaltyImplicit(const khzModel *m, khzData *d, const double *vfree, double *dqd, double *dvel,
                         double *tmp);

/* scratch bytes khz_penaltyImplicit may take from d's stack */
size_t khz_penaltyImplicitStackBytes(const khzModel *m);

/* Penalty and friction forces of the resting pairs at one integrator stage
 * (after khz_forwardPass at the stage state): added to d->fext. */
void khz_penaltyForces(const khzModel *m, khzData *d);

/* The point P of the disc |P| <= lim that minimises 1/2 P^T A P - P^T b,
 * A = [A2[0] A2[1]; A2[1] A2[2]] positive definite: a pair's tangential
 * impulse under Coulomb's maximal dissipation (Moré and Sorensen's secular
 * equation; penalty.c, disc_dissipation) */
void khz_discDissipation(const double A2[3], const double b2[2], double lim, double P[2]);

/* End of a step at the final state: the integral terms and the friction
 * anchors move on. */
void khz_penaltyEnd(const khzModel *m, khzData *d);

#endif
