/* cluster.h — pairs coupled through moving bodies: the impulses of
 * impacting pairs and the implicit part of resting ones are solved per
 * cluster, found by union-find over the articulated trees the pairs move. */
#ifndef KHZ_CONTACT_CLUSTER_H
#define KHZ_CONTACT_CLUSTER_H

#include "dynamics.h"
#include "khz/khz.h"

/* the representative of a's set (path halving) */
static inline int khz_clusterFind(int *parent, int a) {
  while (parent[a] != a) a = parent[a] = parent[parent[a]];
  return a;
}

/* the tree an impulse on body s of pair c moves, or -1 (static) */
static inline int khz_movingTree(const khzModel *m, const khzContact *c, int s) {
  int b = c->body[s];
  return b > 0 && !khz_bodyStatic(m, b) ? m->body_root[b] : -1;
}

#endif
