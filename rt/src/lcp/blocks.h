/* blocks.h — the mass-matrix blocks of the kinematic trees a set of
 * contacts touches, and the mapping of point Jacobians onto their dofs
 * (rt-private): shared by the LCP (lcp.c) and PEG (peg/peg.c)
 * time-stepping. M is block diagonal over the trees; only the trees the
 * contacts touch are factored (CRBA, Cholesky). */
#ifndef KHZ_LCP_BLOCKS_H
#define KHZ_LCP_BLOCKS_H

#include "khz/khz.h"

/* The caller's arrays (sizes in brackets) and the counts filled in. */
typedef struct khzLcpBlocks {
  int na, ntree;   /* active dofs, active trees */
  int *act;        /* [nv] active index of a global dof, -1 */
  int *loc;        /* [nv] index inside its tree's block */
  int *dof;        /* [nv] global dof of an active index */
  int *tree_root, *tree_off, *tree_n, *tree_moff; /* [nbody] per active tree */
  double *Mb;      /* [nv * nv] the trees' blocks, then their Cholesky factors */
  double *jac0, *jac1; /* [3 nv] two point Jacobians */
} khzLcpBlocks;

/* No tree active yet. */
void khz_lcpBlocksBegin(const khzModel *m, khzLcpBlocks *B);

/* The tree of body b active (nothing for a static body). */
void khz_lcpBlocksTouch(const khzModel *m, khzLcpBlocks *B, int b);

/* The active trees' dofs and the Cholesky factors of their blocks at d->q;
 * 0 when a block is singular, else 1. */
int khz_lcpBlocksFactor(const khzModel *m, khzData *d, khzLcpBlocks *B);

/* The Jacobians of body[0]'s point p0 and body[1]'s point p1 (current
 * kinematics) into B->jac0, B->jac1. */
void khz_lcpBlocksJacobians(const khzModel *m, khzData *d, khzLcpBlocks *B, const int body[2],
                            const double p0[3], const double p1[3]);

/* The row dir' (J_0(p0) - J_1(p1)) over the active dofs (B->na), from the
 * Jacobians of the last khz_lcpBlocksJacobians. */
void khz_lcpBlocksRow(const khzModel *m, const khzLcpBlocks *B, const double dir[3], double *row);

/* x <- M^-1 x over the active dofs, block by block. */
void khz_lcpBlocksSolve(const khzLcpBlocks *B, double *x);

#endif
