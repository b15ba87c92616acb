/* blocks.c — the active trees' mass-matrix blocks and the Jacobian rows
 * over their dofs, shared by the LCP and PEG time-stepping (blocks.h). */
#include "blocks.h"

#include "dynamics.h"
#include "spatial.h"

void khz_lcpBlocksBegin(const khzModel *m, khzLcpBlocks *B) {
  B->ntree = B->na = 0;
  for (int k = 0; k < m->nv; k++) B->act[k] = -1;
}

void khz_lcpBlocksTouch(const khzModel *m, khzLcpBlocks *B, int b) {
  if (khz_bodyStatic(m, b)) return;
  int root = m->body_root[b], t = 0;
  while (t < B->ntree && B->tree_root[t] != root) t++;
  if (t == B->ntree) B->tree_root[B->ntree++] = root;
}

int khz_lcpBlocksFactor(const khzModel *m, khzData *d, khzLcpBlocks *B) {
  khz_compositeInertia(m, d, d->q);
  int moff = 0;
  B->na = 0;
  for (int t = 0; t < B->ntree; t++) {
    int nt = 0;
    B->tree_off[t] = B->na;
    for (int k = 0; k < m->nv; k++)
      if (m->body_root[m->dof_body[k]] == B->tree_root[t]) {
        B->act[k] = B->na + nt, B->loc[k] = nt, B->dof[B->na + nt] = k;
        nt++;
      }
    B->tree_n[t] = nt, B->tree_moff[t] = moff;
    double *Mt = B->Mb + moff;
    khz_crbaBlock(m, d, B->tree_root[t], B->loc, nt, Mt);
    if (khzu_cholFactor(Mt, nt)) return 0;
    B->na += nt, moff += nt * nt;
  }
  return 1;
}

void khz_lcpBlocksJacobians(const khzModel *m, khzData *d, khzLcpBlocks *B, const int body[2],
                            const double p0[3], const double p1[3]) {
  khz_jacobian(m, d, body[0], p0, B->jac0, NULL);
  khz_jacobian(m, d, body[1], p1, B->jac1, NULL);
}

void khz_lcpBlocksRow(const khzModel *m, const khzLcpBlocks *B, const double dir[3], double *row) {
  int nv = m->nv;
  const double *j0 = B->jac0, *j1 = B->jac1;
  for (int a = 0; a < B->na; a++) {
    int g = B->dof[a];
    row[a] = dir[0] * (j0[g] - j1[g]) + dir[1] * (j0[nv + g] - j1[nv + g]) + dir[2] * (j0[2 * nv + g] - j1[2 * nv + g]);
  }
}

void khz_lcpBlocksSolve(const khzLcpBlocks *B, double *x) {
  for (int t = 0; t < B->ntree; t++) khzu_cholSolve(B->Mb + B->tree_moff[t], B->tree_n[t], x + B->tree_off[t]);
}
