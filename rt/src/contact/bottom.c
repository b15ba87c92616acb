/* bottom.c — which points of a resting pair carry its penalty force.
 * The bottom of the intersection volume (Drumwright §III-A): the points are
 * visited deepest first and kept when their projection onto the contact plane
 * falls outside the convex polygon of the points kept so far, an incremental
 * hull located by binary search on signed angles about the deepest point,
 * O(N lg N) in all. Near-coincident bottom points share one count in eq. 1.
 * The deepest-point baseline keeps one point. Scratch from d's stack.
 */
#include "bottom.h"

#include <math.h>
#include <string.h>

#include "penalty.h"
#include "spatial.h"

/* points shallower than this fraction of a pair's deepest are not bottom
 * candidates (see khz_selectPoints) */
#define KHZ_DEPTH_FLOOR 1e-3

/* projections closer than this fraction of the contact patch count as one
 * point in the bottom selection: both bodies of a face-face contact contribute
 * coincident corners, and keeping one of a pair but not the other would put
 * torque where there is none */
#define KHZ_BOTTOM_MERGE 1e-6

/* fmin / fmax as glibc's x86-64 ones compute them (minsd / maxsd: the first
 * argument when strictly smaller / larger, else the second; a quiet NaN
 * argument gives the other), inline: GCC calls libm for fmin and fmax
 * without -ffinite-math-only, a call per coordinate in the loops below */
static inline double least_of(double x, double y) { return x < y || y != y ? x : y; }
static inline double most_of(double x, double y) { return x > y || y != y ? x : y; }

/* ------------------------------------------------- bottom of the volume -- */

/* heapsort of idx by key descending (no allocation, O(N lg N)) */
static void sift_down(int *idx, const double *key, int start, int end) {
  int root = start;
  while (2 * root + 1 <= end) {
    int child = 2 * root + 1, swap = root;
    if (key[idx[swap]] > key[idx[child]]) swap = child;
    if (child + 1 <= end && key[idx[swap]] > key[idx[child + 1]]) swap = child + 1;
    if (swap == root) return;
    int t = idx[root];
    idx[root] = idx[swap], idx[swap] = t;
    root = swap;
  }
}

static void sort_descending(int *idx, const double *key, int n) {
  /* a min-heap popped to the back leaves the array in descending order */
  for (int start = (n - 2) / 2; start >= 0; start--) sift_down(idx, key, start, n - 1);
  for (int end = n - 1; end > 0; end--) {
    int t = idx[0];
    idx[0] = idx[end], idx[end] = t;
    sift_down(idx, key, 0, end - 1);
  }
}

/* Angles about the comparator without trig per point, in atan2's order.
 * The diamond angle of (du, dv) from the v axis, clockwise: du / (|du| +
 * |dv|) in [-1, 1] for dv >= 0; 2 minus it for dv < 0 and du >= 0 (up to 2
 * at the half turn), -2 minus it for dv < 0 and du < 0 (from -2; a zero du's
 * sign taken as atan2 takes it). It grows with the angle, at a rate between
 * 1/2 and 1 per radian, and a half turn adds exactly 2 (the opposite point
 * negates du and dv). Computed, it is within 1e-15 of its exact value
 * (three roundings of numbers below 4), atan2 within an ulp of the angle:
 * where two diamond angles differ by more than KHZ_ANGLE_NEAR, the angles
 * differ by more than KHZ_ANGLE_NEAR less 2e-15, and atan2 orders them
 * alike; likewise a gap more than KHZ_ANGLE_NEAR from 0, 2 or 4 is on the
 * same side of 0, pi or 2 pi as atan2's. Only nearer than that (collinear
 * points, a face's corners) are the angles taken with atan2 itself, once
 * per point, lazily: the same comparisons as atan2's everywhere, the
 * same bits. (0, 0) is the comparator itself, never placed: 0. */
#define KHZ_HALF_TURN 2.0
#define KHZ_ANGLE_NEAR 1e-12

static inline double diamond_angle(double du, double dv) {
  double s = fabs(du) + fabs(dv);
  if (s == 0) return 0;
  double t = du / s;
  if (dv >= 0) return t;
  return signbit(du) ? -KHZ_HALF_TURN - t : KHZ_HALF_TURN - t;
}

typedef struct {
  const double *uv, *C;
  const double *fast; /* diamond angles */
  double *exact;      /* atan2(du, dv), NAN until needed */
} khzAngles;

static double exact_angle(const khzAngles *a, int k) {
  if (a->exact[k] != a->exact[k]) a->exact[k] = atan2(a->uv[2 * k] - a->C[0], a->uv[2 * k + 1] - a->C[1]);
  return a->exact[k];
}

/* angle(q) <= angle(p), as atan2's */
static inline int angle_le(const khzAngles *a, int q, int p) {
  double diff = a->fast[q] - a->fast[p];
  if (diff < -KHZ_ANGLE_NEAR) return 1;
  if (diff > KHZ_ANGLE_NEAR) return 0;
  return exact_angle(a, q) <= exact_angle(a, p);
}

/* the clockwise gap from q to p is at least a half turn, as atan2's
 * (a - b, plus a full turn when negative, >= pi) */
static int gap_at_least_half(const khzAngles *a, int p, int q) {
  double g = a->fast[p] - a->fast[q];
  if (fabs(g) > KHZ_ANGLE_NEAR && fabs(g - KHZ_HALF_TURN) > KHZ_ANGLE_NEAR &&
      fabs(g + KHZ_HALF_TURN) > KHZ_ANGLE_NEAR) {
    if (g < 0) g += 2 * KHZ_HALF_TURN;
    return g >= KHZ_HALF_TURN;
  }
  g = exact_angle(a, p) - exact_angle(a, q);
  if (g < 0) g += 2 * M_PI;
  return g >= M_PI;
}

static inline double cross2(const double o[2], const double a[2], const double b[2]) {
  return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}

/* The hull is kept as its vertices other than the comparator C, sorted by
 * angle. C itself is a hull vertex while the hull is "open": then an angular
 * gap of at least pi follows vertex `gap` and the hull is the fan C, v0, ...
 * Hulls only grow, so once C is inside ("closed") it stays inside. */
typedef struct {
  int open;
  int gap;
} khzHullGap;

static int in_gap(const khzHullGap *h, int ia) { return h->open && ia == h->gap; }

/* is P inside (or on) the hull? lo_i: P's insertion index by angle */
static int hull_contains(const double *uv, const int *poly, int npoly, const khzHullGap *h,
                         const double C[2], const double P[2], int lo_i, double tol, double scale) {
  if (npoly == 0) return 0;
  int ia = lo_i - 1, ib = lo_i;
  if (ia < 0) ia = npoly - 1;
  if (ib >= npoly) ib = 0;
  const double *A = uv + 2 * poly[ia], *B = uv + 2 * poly[ib];
  if (npoly == 1 || in_gap(h, ia)) {
    /* P's angle falls where C is a hull vertex: inside only if on the edge
     * C-A or C-B */
    for (int s = 0; s < 2; s++) {
      const double *E = s ? B : A;
      double ax = E[0] - C[0], ay = E[1] - C[1], dx = P[0] - C[0], dy = P[1] - C[1];
      double len2 = ax * ax + ay * ay, along = (dx * ax + dy * ay) / len2;
      if (fabs(dx * ay - dy * ax) / sqrt(len2) <= tol && along >= -1e-12 && along <= 1 + 1e-12)
        return 1;
    }
    return 0;
  }
  /* inside (or on) the fan triangle C, A, B */
  double t = tol * scale, s1 = cross2(C, A, P), s2 = cross2(A, B, P), s3 = cross2(B, C, P);
  int neg = s1 < -t || s2 < -t || s3 < -t, pos = s1 > t || s2 > t || s3 > t;
  return !(neg && pos);
}

/* the gap after inserting a vertex at index i (angle a): splits the gap if
 * the vertex landed in it, else shifts its index */
static void gap_insert(khzHullGap *h, const khzAngles *ang, const int *poly, int npoly, int i) {
  if (npoly == 1) {
    h->open = 1, h->gap = 0;
    return;
  }
  int was = h->gap;
  int ia = i - 1 < 0 ? npoly - 1 : i - 1;  /* neighbours of the new vertex */
  int ib = i + 1 >= npoly ? 0 : i + 1;
  int old = was + (i <= was ? 1 : 0);      /* the old gap vertex, re-indexed */
  if (!h->open) return;
  if (ia != old) {
    h->gap = old;
    return;
  }
  if (gap_at_least_half(ang, poly[i], poly[ia])) h->gap = ia;
  else if (gap_at_least_half(ang, poly[ib], poly[i])) h->gap = i;
  else h->open = 0;
}

/* after inserting poly[i], drop neighbours that are no longer strictly convex
 * (clockwise order: a convex vertex turns right, cross < 0). C never drops.
 * Returns the new size. */
static int hull_restore(const double *uv, int *poly, int npoly, khzHullGap *h, const double C[2],
                        int i, double t) {
  for (int dir = 1; dir >= -1; dir -= 2) {
    while (npoly >= 2) {
      /* neighbour j of i in direction dir (C when i borders the gap), then k */
      if (h->open && ((dir > 0 && i == h->gap) || (dir < 0 && i == (h->gap + 1) % npoly))) break;
      int j = (i + dir + npoly) % npoly;
      const double *I = uv + 2 * poly[i], *J = uv + 2 * poly[j], *K;
      if (h->open && ((dir > 0 && j == h->gap) || (dir < 0 && j == (h->gap + 1) % npoly))) {
        K = C;
      } else {
        int k = (j + dir + npoly) % npoly;
        if (k == i) break;
        K = uv + 2 * poly[k];
      }
      double cr = dir > 0 ? cross2(I, J, K) : cross2(K, J, I);
      if (cr < -t) break; /* j is convex */
      memmove(poly + j, poly + j + 1, (size_t)(npoly - j - 1) * sizeof(int));
      npoly--;
      if (h->open && j <= h->gap) h->gap = (h->gap - 1 + npoly) % npoly;
      if (j < i) i--;
    }
  }
  return npoly;
}

int khz_bottomOfVolume(khzData *d, const double *pos, const double *depth, int n,
                       const double normal[3], int *bottom) {
  if (n <= 0) return 0;
  if (n == 1) {
    bottom[0] = 1;
    return 1;
  }
  size_t mark = khz_stackMark(d);
  /* one block: uv (2n), the angles (n), their atan2 (n), then order and
   * poly (n ints each) */
  double *uv = khz_stackAlloc(d, (size_t)n * (4 * sizeof(double) + 2 * sizeof(int)));
  if (!uv) {
    khz_stackFree(d, mark);
    for (int k = 0; k < n; k++) bottom[k] = 1;
    return -1;
  }
  double *ang = uv + 2 * n, *exact = ang + n;
  int *order = (int *)(exact + n), *poly = order + n;

  /* contact-plane axes (u, v) and the projections; scale for tolerances */
  double u[3], v[3];
  khzu_orthogonal(u, normal);
  khzu_cross(v, normal, u);
  double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
  for (int k = 0; k < n; k++) {
    uv[2 * k] = khzu_dot3(pos + 3 * k, u);
    uv[2 * k + 1] = khzu_dot3(pos + 3 * k, v);
    for (int j = 0; j < 2; j++) lo[j] = least_of(lo[j], uv[2 * k + j]), hi[j] = most_of(hi[j], uv[2 * k + j]);
    order[k] = k;
    bottom[k] = 0;
  }
  double scale = most_of(hi[0] - lo[0], hi[1] - lo[1]), tol = KHZ_BOTTOM_MERGE * most_of(scale, 1e-9);
  double dtol = 1e-12 + 1e-9 * fabs(depth[0]);

  /* sort by distance to the contact plane, farthest first */
  sort_descending(order, depth, n);

  /* comparator: the farthest point; ties broken by bottom-most, then right-most */
  int c = order[0];
  for (int k = 1; k < n && depth[order[k]] >= depth[order[0]] - dtol; k++) {
    int p = order[k];
    if (uv[2 * p + 1] < uv[2 * c + 1] - tol ||
        (fabs(uv[2 * p + 1] - uv[2 * c + 1]) <= tol && uv[2 * p] > uv[2 * c]))
      c = p;
  }
  const double *C = uv + 2 * c;

  /* signed angles about the comparator, measured from the vertical (v) axis */
  for (int k = 0; k < n; k++) ang[k] = diamond_angle(uv[2 * k] - C[0], uv[2 * k + 1] - C[1]), exact[k] = NAN;
  khzAngles angles = {uv, C, ang, exact};

  /* incremental polygon (Graham-scan style): the convex hull of the kept
   * points' projections, its vertices other than the comparator sorted by
   * signed angle. A candidate (visited farthest first) is located by binary
   * search on its angle; if it lies outside the hull it is a bottom point and
   * is inserted, and hull vertices it makes reflex drop out of the hull (they
   * stay bottom points). Angles grow clockwise (atan2(du, dv), compared
   * through diamond_angle). */
  bottom[c] = 1;
  int npoly = 0, nbottom = 1;
  khzHullGap gap = {1, -1};
  for (int k = 0; k < n; k++) {
    int p = order[k];
    if (p == c) continue;
    const double *P = uv + 2 * p;
    double dx = P[0] - C[0], dy = P[1] - C[1];
    if (dx * dx + dy * dy <= tol * tol) continue; /* on the comparator */

    /* binary search: first hull vertex with a larger angle */
    int lo_i = 0, hi_i = npoly;
    while (lo_i < hi_i) {
      int mid = (lo_i + hi_i) / 2;
      if (angle_le(&angles, poly[mid], p)) lo_i = mid + 1;
      else hi_i = mid;
    }
    if (hull_contains(uv, poly, npoly, &gap, C, P, lo_i, tol, scale)) continue;
    for (int j = npoly; j > lo_i; j--) poly[j] = poly[j - 1]; /* a few ints: no memmove call */
    poly[lo_i] = p;
    npoly++;
    bottom[p] = 1;
    nbottom++;
    gap_insert(&gap, &angles, poly, npoly, lo_i);
    npoly = hull_restore(uv, poly, npoly, &gap, C, lo_i, tol * scale);
  }
  khz_stackFree(d, mark);
  return nbottom;
}

/* ------------------------------------------------------- shares in eq. 1 -- */

/* Eq. 1 divides by the number r of pushing points, so two bottom points at
 * nearly one place (the coincident corners of two equal stacked boxes, a few
 * tenths of a millimetre apart) pull that place's share of the force to
 * twice the others', and as one of them comes and goes from step to step the
 * force's moment jumps. Points closer than KHZ_CLUSTER of the patch count
 * as one point together: each carries 1 / (their number) in r. */
#define KHZ_CLUSTER 0.01
#define KHZ_CLUSTER_LIST 64 /* bottom points listed on the C stack; more: filtered in place */
static void cluster_shares(const khzContact *c, khzContactPoint *pts) {
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  int list[KHZ_CLUSTER_LIST], nlist = 0;
  for (int k = 0; k < c->npoint; k++)
    if (pts[k].bottom) {
      for (int j = 0; j < 3; j++) lo[j] = least_of(lo[j], pts[k].pos[j]), hi[j] = most_of(hi[j], pts[k].pos[j]);
      pts[k].share = 0;
      if (nlist < KHZ_CLUSTER_LIST) list[nlist] = k;
      nlist++;
    }
  double ext = 0;
  for (int j = 0; j < 3; j++) ext = most_of(ext, hi[j] - lo[j]);
  double tol2 = KHZ_CLUSTER * ext * KHZ_CLUSTER * ext;
  /* each pair once (i >= k), counted for both: the squared distance is the
   * same bits either way round (the differences only change sign); the
   * counts gather in share, exact small integers, then turn into 1 / count.
   * The bottom points in index order: from the list, or (more than it
   * holds) by filtering all points */
  int listed = nlist <= KHZ_CLUSTER_LIST, n = listed ? nlist : c->npoint;
  for (int a = 0; a < n; a++) {
    int k = listed ? list[a] : a;
    if (!pts[k].bottom) continue;
    for (int b = a; b < n; b++) {
      int i = listed ? list[b] : b;
      if (!pts[i].bottom) continue;
      double dx = pts[i].pos[0] - pts[k].pos[0], dy = pts[i].pos[1] - pts[k].pos[1],
             dz = pts[i].pos[2] - pts[k].pos[2];
      if (!(dx * dx + dy * dy + dz * dz <= tol2)) continue;
      pts[k].share += 1;
      if (i != k) pts[i].share += 1;
    }
  }
  for (int a = 0; a < n; a++) {
    int k = listed ? list[a] : a;
    if (pts[k].bottom) pts[k].share = 1.0 / pts[k].share;
  }
}

/* contact.deepest_ties at a pair that shares a tree with another resting
 * pair (a stack, a robot on two feet), where khz_penaltyDeepestPoints keeps
 * the one vertex: points within KHZ_STACK_TIE of the deepest depth share the
 * pair's spring with it (eq. 1's depth-weighted count, near-duplicates as
 * cluster_shares counts them). The deepest point's force is the gradient of
 * 1/2 kp (max_k d_k)^2; where points are (nearly) equally deep that gradient
 * is any convex combination of theirs (Filippov). One vertex taken at each
 * step's start left boxes stacked on their faces standing on one corner at a
 * time: the bottom pair's normal force went 503, 1, 0, 2306, 0, 4967 N under
 * a 540 N stack, and stack_mixed / stack_heavy_on_light fell within a second
 * (rod18c, docs/contact.md). The lone pair's smooth maximum (penalty.c,
 * tie_window) does not hold them: its one force at the centroid, tried with
 * windows 0.1 to 2 times the kept one, let both stacks fall. */
#define KHZ_STACK_TIE 0.02
static void stack_ties(khzContact *c, double dmax, khzContactPoint *pts) {
  for (int k = 0; k < c->npoint; k++)
    if (!pts[k].bottom && pts[k].depth > 0 && pts[k].depth >= (1 - KHZ_STACK_TIE) * dmax)
      pts[k].bottom = 1, c->nbottom++;
  if (c->nbottom > 1) cluster_shares(c, pts);
}

/* ------------------------------------------------------ point selection -- */

void khz_selectPoints(const khzModel *m, khzData *d) {
  for (int i = 0; i < d->ncontact; i++) {
    khzContact *c = d->contact + i;
    khzContactPoint *pts = d->cpoint + c->point_adr;
    c->nbottom = 0;
    for (int k = 0; k < c->npoint; k++) pts[k].bottom = 0;
    if (d->pair[c->slot].phase != KHZ_PHASE_RESTING || c->npoint == 0) continue;
    if (d->contact_method == KHZ_CONTACT_DEEPEST) {
      if (khz_penaltyDeepestPoints(m, d, c) == KHZ_DEEPEST_BAND) stack_ties(c, d->cpoint[c->deepest].depth, pts);
      continue;
    }
    size_t mk = khz_stackMark(d);
    /* one block: positions (3 npoint), depths (npoint), flags (npoint ints) */
    double *pos = khz_stackAlloc(d, (size_t)c->npoint * (4 * sizeof(double) + sizeof(int)));
    if (pos) {
      double *dep = pos + 3 * c->npoint;
      int *flag = (int *)(dep + c->npoint);
      /* the candidates: points of penetration. Points of the intersection
       * volume on the contact plane itself carry no spring and would only
       * dilute eq. 1's normalisation; those whose depth is round-off (below
       * KHZ_DEPTH_FLOOR of the deepest) would come and go from step to step,
       * each time moving r and the integral term's share between points */
      double floor_depth = KHZ_DEPTH_FLOOR * d->cpoint[c->deepest].depth;
      int np = 0;
      for (int k = 0; k < c->npoint; k++) {
        if (!(pts[k].depth > floor_depth)) continue;
        memcpy(pos + 3 * np, pts[k].pos, 3 * sizeof(double));
        dep[np++] = pts[k].depth;
      }
      khz_bottomOfVolume(d, pos, dep, np, c->normal, flag);
      for (int k = 0, j = 0; k < c->npoint; k++) {
        if (!(pts[k].depth > floor_depth)) continue;
        pts[k].bottom = flag[j++];
        c->nbottom += pts[k].bottom;
      }
      cluster_shares(c, pts);
    } else {
      for (int k = 0; k < c->npoint; k++) pts[k].bottom = 1, pts[k].share = 1;
      c->nbottom = c->npoint;
    }
    khz_stackFree(d, mk);
  }
}
