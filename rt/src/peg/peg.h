/* peg.h — the polytopal exact geometry (PEG) contact model of Williams, Lu &
 * Trinkle, "A geometrically exact contact model for polytopes in multirigid-
 * body simulation" (J. Comput. Nonlinear Dyn. 12(2), 2016), in Stewart &
 * Trinkle's time-stepping (rt-private): the contact method KHZ_CONTACT_PEG
 * (docs/peg.md). */
#ifndef KHZ_PEG_H
#define KHZ_PEG_H

#include <stddef.h>

#include "khz/khz.h"

/* polytope capacities of one geom (hulls with more are refused) */
#define KHZ_PEG_MAXV 64
#define KHZ_PEG_MAXF 64
#define KHZ_PEG_MAXE 160

/* A box, a convex mesh's hull or a plane (a half-space: one face, no
 * vertices) placed in the world at the current kinematics. Faces are
 * half-spaces n.x <= d with n the outward unit normal. */
typedef struct khzPegPoly {
  int geom, body, plane;
  int nv, nf, ne;
  double v[KHZ_PEG_MAXV][3];
  double n[KHZ_PEG_MAXF][3], d[KHZ_PEG_MAXF];
  int e[KHZ_PEG_MAXE][2];  /* the edge's vertices */
  int ef[KHZ_PEG_MAXE][2]; /* the two faces that meet at the edge */
  double center[3], radius; /* bounding sphere (plane: radius 0) */
} khzPegPoly;

/* The polytope of geom g at d's current kinematics: 1, or 0 when g is not a
 * box, convex mesh or plane, or -1 when its hull exceeds the capacities. */
int khz_pegPoly(const khzModel *m, const khzData *d, int g, khzPegPoly *P);

/* Volume of the intersection of two polytopes (m^3; a plane counts as its
 * half-space): A's faces clipped by B's half-spaces one by one, the cut
 * closed by the polygon of the new vertices, the volume from the divergence
 * theorem. Exact up to round-off. Allocates (measurement, not for the tick). */
double khz_pegOverlap(const khzPegPoly *A, const khzPegPoly *B);

/* PEG's settings are the model's contact options (khz.h): peg_model (PEG,
 * the standard model or the LP depth), peg_recovery, peg_splits,
 * peg_lp_point and peg_lemke_ties, from the scene's contact: keys
 * (docs/scene-format.md, docs/peg.md). */

/* Observer of every Lemke solve of a block (tests and benchmarks only;
 * NULL by default): the block's scaled LCP (M k x k row-major, with the
 * try's compliance on its diagonal, and q), Lemke's z, whether the step's
 * LCP had friction, the try (0 ..) and its status. */
typedef void (*khzPegBlockObserver)(void *user, int k, const double *M, const double *q, const double *z,
                                    int friction, int attempt, int status);
void khz_pegSetBlockObserver(khzPegBlockObserver fn, void *user);

/* Counts of d's last PEG step (tests and benchmarks); each data has its own
 * (khzData.peg_stats). */
typedef struct khzPegStats {
  int contacts;  /* feature pairs gathered */
  int groups, members; /* constraints and their contacts (as far as the
                          gathering got when it ran out of room) */
  int nu, ni, nx; /* U, I and X constraints */
  int n;          /* size of the LCP */
  int status;     /* khzLcpStatus of the last solve, -1 when none */
  int failed;     /* 1 when the step fell back */
  int frictionless; /* 1 when the frictional LCP failed and the step was
                       solved without friction */
  int cones;        /* friction cones the step's gathering gave (one per U
                       and I constraint with mu > 0): every step starts
                       with them, whatever the step before fell back to */
  int full;         /* the gathering ran out of room: 1 feature pairs,
                       2 constraints or their members, 3 friction cones;
                       4 the LP depth failed (the step fell back); 5 the
                       exact check at q+ could not add what it found (the
                       step stands as solved); 6 every pass's kinetic
                       energy exceeded the bound (the step failed) */
  int narrowed;     /* gatherings that ran out of room and were done again
                       with a smaller allowance */
  double turn;      /* the allowance's share of the travel used */
  int added;        /* constraints added by the exact check at q+ */
  double speed, spin; /* the fastest centre, the fastest |omega| r at q */
  int passes;       /* solves of the step (re-linearisations, additions) */
  int stop;         /* why the passes ended: 0 nothing left deeper than
                       1e-10 m, 1 the last of PEG_PASSES, 2 the violation
                       doubled, 3 the kinetic-energy bound, 4 the lists
                       full, 5 a later pass's LCP not solved */
  int split_stop;   /* a step done as halves: the whole step's stop, -1 */
  double worst;     /* the deepest violation left at q+ (m; 0: none) */
  int splits;       /* the step was done as two half steps (each perhaps
                       split again): the halves taken, counted over them */
  int blocks;       /* independent blocks of the last solve's LCP */
  int nblock;       /* the largest block of any solve (unknowns) */
  int dropped;      /* friction cones dropped from the blocks whose
                       frictional LCP failed (their cones only) */
  int stale;        /* LCPs assembled from rows made for another count of
                       groups or cones (0: a cone given back without the
                       rows made again was the bug of cf5fd16) */
  long pivots, reinverts; /* Lemke's pivots and re-inversions of B^-1
                       over the step's solves (of the halves taken) */
  int recovering;   /* pairs overlapping at q given an LP-depth U constraint
                       (contact.peg_recovery) */
  int polished;     /* proximal-point re-solves taken: a block solved with
                       a compliance, solved again from its final basis with
                       its impulse rows raised by eps z (solve) */
  int unpolished;   /* blocks whose first proximal-point re-solve found the
                       basis infeasible and no smaller compliance did better
                       on the exact LCP: left short by eps z */
  int recompliant;  /* blocks whose first re-solve found the basis
                       infeasible, solved again with a smaller compliance
                       (eps / 10 or eps / 100) that did better (solve) */
} khzPegStats;
const khzPegStats *khz_pegLastStats(const khzData *d);

/* One step of h seconds of PEG time-stepping at d's state (d->tau_applied
 * clamped): the free velocity, the potential contacts gathered at q, the
 * pure LCP of eqs. (48)-(49) with Stewart-Trinkle friction solved by Lemke;
 * writes d->q, d->qd, d->qdd and the contact list. A step whose
 * re-linearisation passes leave a violation, or that cannot be solved, is
 * done as two steps of h/2 (twice at most: quarters). Returns 0, or -1 when
 * the LCP could not be solved or a capacity was exceeded: then
 * KHZ_WARN_LCP is counted, d->q and d->qd are untouched and the caller
 * steps with the penalty method. Never allocates. */
int khz_pegStep(const khzModel *m, khzData *d, double h);

/* Scratch bytes khz_pegStep takes from d's stack (0 for a model PEG
 * refuses). */
size_t khz_pegStackBytes(const khzModel *m);

/* NULL when every collidable geom is a box, a convex mesh or a plane (and
 * the model has no equality constraints), else why PEG cannot run it. */
const char *khz_pegRefusal(const khzModel *m);

#endif
