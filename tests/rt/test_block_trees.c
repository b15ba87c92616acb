/* test_block_trees.c — the blocks of block Gauss-Seidel (penalty.c,
 * solve_blocks, khz_penaltyTreeBlocks) and a cluster solved in them.
 *   a. the blocks of 400 rows of 20 trees (one of 120 rows) in pairs of 1
 *      to 6 rows, the trees' pairs interleaved as a pile's are: the rows in
 *      block order are a permutation, each tree's rows together in their
 *      order, trees in increasing order; no pair split; no block over 64
 *      rows; a tree split only when it has more than 64 rows; a block
 *      closed only when the next tree (or pair, inside a large tree) would
 *      not fit; a pair of 129 rows refused;
 *   b. a cluster of more than 128 implicit rows (KHZ_IMPLICIT_DIRECT) on
 *      articulated trees against the analytic rest state:
 *   eight chains of four hinged 1 kg boxes (20 x 8 x 6 cm, hinges across
 *   the chain) lie in two crossed layers, released touching, the automatic
 *   gains (implicit rows) at 1 ms: four chains on the ground along x, four
 *   on them along y, every upper box on one lower box. All 32 boxes' rows
 *   (16 ground pairs, 16 box pairs, 4 points and 2 tangential rows each)
 *   make one cluster of 192 rows. At rest every box stays where it started:
 *   within 0.5 mm in height and sideways, kinetic energy at most 1e-6 J,
 *   and every block Gauss-Seidel solve converges within its sweeps (no
 *   impulse warning). With the rows cut into blocks in cluster order (the
 *   solve before session 16) a chain's rows were split over blocks and the
 *   sweeps ran out. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "contact/penalty.h"
#include "ensure.h"
#include "khz/khz.h"

#define HX 0.1
#define HY 0.04
#define HZ 0.03
#define LINKS 4
#define CHAINS 4

/* link l of a chain along its body x axis: the floating root (l = 0) at
 * (x, y, z) turned by yaw about z, each next box hinged about y at the end
 * of the one before (parent, its spec index); returns its spec index */
static int add_link(khzSpec *s, int id, int l, int parent, double x, double y, double z, double yaw) {
  khzBodySpec b;
  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "c%d_%d", id, l);
  snprintf(b.joint_name, sizeof b.joint_name, "c%d_%d", id, l);
  b.mass = 1;
  b.inertia[0] = (4 * HY * HY + 4 * HZ * HZ) / 12;
  b.inertia[1] = (4 * HX * HX + 4 * HZ * HZ) / 12;
  b.inertia[2] = (4 * HX * HX + 4 * HY * HY) / 12;
  if (l == 0) {
    b.joint_type = KHZ_JOINT_FLOATING;
    double q0[7] = {x, y, z, cos(yaw / 2), 0, 0, sin(yaw / 2)};
    memcpy(b.q0, q0, sizeof q0);
  } else {
    b.joint_type = KHZ_JOINT_CONTINUOUS;
    b.parent = parent;
    b.pos[0] = 2 * HX;
    b.axis[1] = 1;
    b.damping = 0.1;
  }
  khzGeomSpec g;
  khz_spec_defaultGeom(&g);
  g.body = khz_spec_addBody(s, &b);
  g.type = KHZ_GEOM_BOX;
  g.size[0] = HX, g.size[1] = HY, g.size[2] = HZ;
  khz_spec_addGeom(s, &g);
  return g.body;
}


#define NROW 400
#define NTREE 20

static void case_a(void) {
  int tree[NROW], pair[NROW], ord[NROW], start[NROW + 1], count[NTREE + 1], rows_of[NTREE] = {0};
  unsigned x = 12345;
  int k = 0, np = 0;
  while (k < NROW) { /* pairs of 1-6 rows, each under a tree drawn in turn; tree 7 takes 120 rows */
    x = x * 1103515245u + 12345u;
    int t = (int)((x >> 16) % NTREE), n = 1 + (int)((x >> 8) % 6);
    if (rows_of[7] < 120 && np % 3 == 0) t = 7;
    if (k + n > NROW) n = NROW - k;
    for (int a = 0; a < n; a++) tree[k + a] = t, pair[k + a] = np;
    rows_of[t] += n, k += n, np++;
  }
  ENSURE(rows_of[7] > 64);
  int nblk = khz_penaltyTreeBlocks(tree, pair, k, NTREE, ord, start, count);
  ENSURE(nblk > 0 && start[0] == 0 && start[nblk] == k);
  int seen[NROW] = {0}, perm = 1, grouped = 1, whole_pairs = 1, small = 1, split = 1, packed = 1;
  for (int i = 0; i < k; i++) perm &= ord[i] >= 0 && ord[i] < k && !seen[ord[i]]++;
  for (int i = 1; i < k; i++) /* trees in increasing order, each tree's rows in their order */
    grouped &= tree[ord[i]] > tree[ord[i - 1]] || (tree[ord[i]] == tree[ord[i - 1]] && ord[i] > ord[i - 1]);
  for (int b = 0; b < nblk; b++) {
    int s0 = start[b], e = start[b + 1];
    small &= e > s0 && e - s0 <= 64;
    if (b + 1 == nblk) continue;
    int before = ord[e - 1], after = ord[e];
    whole_pairs &= pair[before] != pair[after];
    if (tree[before] == tree[after]) {
      split &= rows_of[tree[after]] > 64;
      int pe = e; /* the next pair would not fit */
      while (pe < k && pair[ord[pe]] == pair[after]) pe++;
      packed &= pe - s0 > 64;
    } else {
      packed &= e - s0 + rows_of[tree[after]] > 64 || rows_of[tree[after]] > 64;
    }
  }
  printf("a. %d rows, %d pairs, %d trees: %d blocks\n", k, np, NTREE, nblk);
  ENSURE(perm && grouped && whole_pairs && small && split && packed);
  for (int a = 0; a < 129; a++) tree[a] = 3, pair[a] = 0;
  ENSURE(khz_penaltyTreeBlocks(tree, pair, 129, NTREE, ord, start, count) == -1);
  ENSURE(khz_penaltyTreeBlocks(tree, pair, 128, NTREE, ord, start, count) == 1);
}

int main(void) {
  case_a();
  khzSpec *s = khz_spec_new();
  khzGeomSpec plane;
  khz_spec_defaultGeom(&plane);
  plane.type = KHZ_GEOM_PLANE;
  khz_spec_addGeom(s, &plane);
  khzContactOptions c; /* the defaults: automatic gains */
  khz_spec_defaultContact(&c);
  khz_spec_setContact(s, &c);
  double x0[2 * CHAINS * LINKS][3];
  /* lower layer along x, upper along y; the links of all chains in turn
   * (the bodies' order interleaves the trees, as the pairs of a pile do) */
  int last[2 * CHAINS] = {0};
  for (int l = 0; l < LINKS; l++)
    for (int j = 0; j < 2 * CHAINS; j++) {
      int up = j >= CHAINS, i = j % CHAINS;
      last[j] = add_link(s, j, l, last[j], up ? HX + 2 * HX * i : HX, up ? 0 : 2 * HX * i, up ? 3 * HZ : HZ,
                         up ? M_PI / 2 : 0);
    }
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m, "%s", err);
  khz_spec_destroy(&s);
  if (!m) return ensure_report();
  khzData *d = khz_makeData(m, 0);
  khz_kinematics(m, d);
  for (int b = 1; b < m->nbody; b++) memcpy(x0[b - 1], d->xpos + 3 * b, sizeof x0[0]);
  int rows = 0, warned = 0;
  double drift = 0, sink = 0;
  for (int k = 0; k < 1000; k++) {
    khz_step(m, d);
    int n = 0;
    for (int i = 0; i < d->ncontact; i++) n += d->contact[i].npoint ? d->contact[i].npoint + 2 : 0;
    if (n > rows) rows = n;
  }
  warned = d->warning[KHZ_WARN_IMPULSE];
  for (int b = 1; b < m->nbody; b++) {
    const double *x = d->xpos + 3 * b;
    drift = fmax(drift, hypot(x[0] - x0[b - 1][0], x[1] - x0[b - 1][1]));
    sink = fmax(sink, fabs(x[2] - x0[b - 1][2]));
  }
  double ke, pe;
  khz_energy(m, d, &ke, &pe);
  printf("b. two crossed layers of %d chains of %d boxes: %d contact rows at most, after 1 s: sideways %.3g mm,"
         " height %.3g mm, KE %.3g J, %d impulse warnings\n",
         CHAINS, LINKS, rows, 1e3 * drift, 1e3 * sink, ke, warned);
  ENSURE_MSG(rows > 128, "%d rows: no block solve", rows);
  ENSURE_MSG(warned == 0, "%d impulse warnings", warned);
  ENSURE_MSG(drift <= 5e-4 && sink <= 5e-4, "moved %.3g mm sideways, %.3g mm in height", 1e3 * drift, 1e3 * sink);
  ENSURE_MSG(ke <= 1e-6, "kinetic energy %.3g J", ke);
  ENSURE(d->warning[KHZ_WARN_BADSTATE] == 0);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  return ensure_report();
}
