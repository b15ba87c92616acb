/* broadphase.c — which pairs of geoms the narrow phase looks at.
 *
 * World frames and axis-aligned boxes of the geoms, then sweep-and-prune on
 * the axis along which the box centres spread most: the lower bounds are
 * sorted (listed in the last call's order, khzData.sweep_order, and sorted
 * by insertion, O(n) while the boxes keep nearly their order; the first
 * time, or after a shuffle, an LSD radix sort of 32-bit keys into scratch
 * from the data's stack, O(n); up to 48 keys a stable insertion sort, which
 * gives the same order without the radix sort's fixed cost of 8 x 512
 * counter updates) and swept, each box meeting the
 * boxes whose lower bound lies below its upper bound; the other two axes and
 * the filters decide. From KHZ_STRIP_MIN_BOXES boxes on, the sweep runs strip
 * by strip across the axis of second largest spread, so that a box meets the
 * boxes of its strips only, not a band across the whole scene. Planes
 * (unbounded) are tested against every box with their half-space. O(n + k)
 * after the sort for n geoms and k overlaps at a bounded density of boxes
 * per strip area (one axis alone: O(n^1.5) for boxes spread over a floor).
 *
 * Filters: visual geoms and geoms with contype = conaffinity = 0 never collide;
 * two geoms do not collide when their bodies are the same or rigidly welded
 * (fixed joints), which includes two bodies both welded to the world; when
 * one body is the parent of the other (through fixed joints too), unless the
 * parent is the world (MuJoCo's rule: a floating base still meets the
 * ground); when the model excludes their pair of bodies (m->exclude_body,
 * kept per body: O(the body's exclusions) per pair, not O(all of them));
 * or when neither's contype meets the other's conaffinity.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "collision.h"
#include "spatial.h"

#define KHZ_SORT_SMALL 48 /* keys up to which insertion sort beats the radix passes */
/* the strips of the sweep (below): used from this many boxes on, at most
 * KHZ_STRIP_MAX of them, KHZ_STRIP_WIDTH mean box extents wide, at most
 * KHZ_STRIP_ENTRIES strip entries per box (khz_collisionStackBytes counts them) */
#define KHZ_STRIP_MIN_BOXES 64
#define KHZ_STRIP_MAX 1024
#define KHZ_STRIP_WIDTH 4.0
#define KHZ_STRIP_ENTRIES 3

/* ------------------------------------------------------------ filters -- */

int khz_collisionFilter(const khzModel *m, int g1, int g2) {
  const khzColModel *cm = m->collision;
  if (g1 == g2 || cm->geom[g1].shape < 0 || cm->geom[g2].shape < 0) return 0;
  int w1 = cm->weld[m->geom_body[g1]], w2 = cm->weld[m->geom_body[g2]];
  if (w1 == w2) return 0;
  if (cm->weld_parent[w1] == w2 || cm->weld_parent[w2] == w1) return 0;
  /* body pairs excluded by the model (MJCF <exclude>): b1's own run */
  int b1 = m->geom_body[g1], b2 = m->geom_body[g2];
  for (int i = cm->exclude_adr[b1]; i < cm->exclude_adr[b1 + 1]; i++)
    if (cm->exclude_with[i] == b2) return 0;
  return (m->geom_contype[g1] & m->geom_conaffinity[g2]) ||
         (m->geom_contype[g2] & m->geom_conaffinity[g1]);
}

/* ------------------------------------------------------------- frames -- */

void khz_collisionFrames(const khzModel *m, const khzData *d, double *frame, double *aabb) {
  const khzColModel *cm = m->collision;
  for (int g = 0; g < m->ngeom; g++) {
    const khzColGeom *cg = &cm->geom[g];
    if (cg->shape < 0) continue;
    int b = m->geom_body[g];
    const double *xp = d->xpos + 3 * b, *xr = d->xrot + 9 * b;
    double *pos = frame + 12 * g, *rot = pos + 3, lr[9], c[3];

    /* geom frame = body frame * geom offset */
    khzu_quat2mat(lr, m->geom_quat + 4 * g);
    khzu_mulMatVec3(pos, xr, m->geom_pos + 3 * g);
    khzu_add3(pos, pos, xp);
    khzu_mulMat3(rot, xr, lr);

    /* box: rotated centre, |R| half extents */
    double *lo = aabb + 6 * g, *hi = lo + 3;
    if (cg->shape == KHZ_SHAPE_PLANE) {
      for (int k = 0; k < 3; k++) lo[k] = -DBL_MAX, hi[k] = DBL_MAX;
      continue;
    }
    khzu_mulMatVec3(c, rot, cg->center);
    for (int k = 0; k < 3; k++) {
      double e = fabs(rot[3 * k]) * cg->half[0] + fabs(rot[3 * k + 1]) * cg->half[1] +
                 fabs(rot[3 * k + 2]) * cg->half[2];
      lo[k] = pos[k] + c[k] - e;
      hi[k] = pos[k] + c[k] + e;
    }
  }
}

/* -------------------------------------------------------------- sorting -- */

void khz_radixSort64(uint64_t *key, int *payload, int n, uint64_t *tmp, int *ptmp) {
  if (n <= KHZ_SORT_SMALL) { /* stable insertion sort: the same order, without 8 x 512 counter passes */
    for (int i = 1; i < n; i++) {
      uint64_t k = key[i];
      int p = payload ? payload[i] : 0, j = i;
      for (; j > 0 && key[j - 1] > k; j--) {
        key[j] = key[j - 1];
        if (payload) payload[j] = payload[j - 1];
      }
      key[j] = k;
      if (payload) payload[j] = p;
    }
    return;
  }
  uint64_t *src = key, *dst = tmp;
  int *psrc = payload, *pdst = ptmp;
  for (int shift = 0; shift < 64; shift += 8) {
    int count[256] = {0};
    for (int i = 0; i < n; i++) count[(src[i] >> shift) & 0xff]++;
    /* every key shares this byte: nothing to do */
    if (n == 0 || count[(src[0] >> shift) & 0xff] == n) continue;
    int sum = 0;
    for (int b = 0; b < 256; b++) {
      int c = count[b];
      count[b] = sum;
      sum += c;
    }
    for (int i = 0; i < n; i++) {
      int at = count[(src[i] >> shift) & 0xff]++;
      dst[at] = src[i];
      if (psrc) pdst[at] = psrc[i];
    }
    uint64_t *t = src;
    src = dst, dst = t;
    int *pt = psrc;
    psrc = pdst, pdst = pt;
  }
  if (src != key) {
    memcpy(key, src, (size_t)n * sizeof(uint64_t));
    if (payload) memcpy(payload, psrc, (size_t)n * sizeof(int));
  }
}

/* distinct keys ascending, when they come nearly in order (the last pass's
 * sweep order: the boxes' lower bounds move little between steps): insertion
 * sort, O(n + the inversions), handed to khz_radixSort64 once it has moved
 * more than KHZ_SORT_WARM_MOVES keys per key (a shuffled start). Distinct
 * keys have one ascending order, so either sort gives the same array. */
#define KHZ_SORT_WARM_MOVES 4
void khz_sortNearlySorted(uint64_t *key, int n, uint64_t *tmp) {
  long moves = 0, budget = (long)KHZ_SORT_WARM_MOVES * n;
  for (int i = 1; i < n; i++) {
    uint64_t k = key[i];
    if (key[i - 1] < k) continue;
    int j = i;
    for (; j > 0 && key[j - 1] > k; j--) key[j] = key[j - 1];
    key[j] = k;
    moves += i - j;
    if (moves > budget) {
      khz_radixSort64(key, NULL, n, tmp, NULL);
      return;
    }
  }
}

/* the next float towards +inf (up) or -inf: one step of the bits away from
 * zero (up from a positive, down from a negative) or towards it; from a
 * zero of either sign the least subnormal of the direction's sign. The same
 * as nextafterf for every float but a NaN (test_broadphase), without
 * libm's call (half of the bounds below take it). */
float khz_floatNext(float f, int up) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) == 0) u = up ? 1u : 0x80000001u;
  else if (!(u >> 31) == !!up) u += (u & 0x7fffffffu) != 0x7f800000u; /* an infinity outward stays */
  else u--;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* monotone 32-bit key of a float that is <= x (up = 0) or >= x (up = 1) */
static uint32_t float_key(double x, int up) {
  float f = (float)x;
  if (up ? (double)f < x : (double)f > x) f = khz_floatNext(f, up);
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* The pair list ascending by (g0 << 32 | g1): a counting sort by g0 (one
 * pass to count, one to place, stable), then each g0's run by g1, by
 * insertion up to KHZ_SORT_SMALL pairs (a geom meets a handful of others),
 * else khz_sortNearlySorted (a plane's run is in order already). The keys
 * are distinct (each pair is emitted once),
 * so the order is the one any sort gives: khz_radixSort64's of the whole
 * list, which ran 8 counting passes over it (2 x np to 8 x np byte counts
 * for a 64-bit key) where this takes two. first: ng + 2 ints; tmp: np. */
static void sort_pairs(uint64_t *pairs, int np, int ng, uint64_t *tmp, int *first) {
  if (np <= KHZ_SORT_SMALL) {
    khz_radixSort64(pairs, NULL, np, tmp, NULL);
    return;
  }
  memset(first, 0, (size_t)(ng + 2) * sizeof(int));
  for (int i = 0; i < np; i++) first[(pairs[i] >> 32) + 2]++;
  for (int g = 0; g < ng; g++) first[g + 2] += first[g + 1];
  for (int i = 0; i < np; i++) tmp[first[(pairs[i] >> 32) + 1]++] = pairs[i];
  /* g0's run is now tmp[first[g0] .. first[g0 + 1]); a plane's pairs come
   * in the bounded geoms' order, ascending already: a long run by insertion
   * from where it stands (khz_sortNearlySorted, the keys distinct) */
  for (int g = 0; g < ng; g++) {
    int lo = first[g], hi = first[g + 1];
    if (hi - lo > KHZ_SORT_SMALL)
      khz_sortNearlySorted(tmp + lo, hi - lo, pairs + lo);
    else if (hi - lo > 1)
      khz_radixSort64(tmp + lo, NULL, hi - lo, pairs + lo, NULL);
  }
  memcpy(pairs, tmp, (size_t)np * sizeof(uint64_t));
}

/* ---------------------------------------------------------- the sweep -- */

static void emit(uint64_t *pairs, int cap, int *np, int *overflow, int g1, int g2) {
  int a = g1 < g2 ? g1 : g2, b = g1 < g2 ? g2 : g1;
  if (*np < cap)
    pairs[(*np)++] = ((uint64_t)a << 32) | (uint64_t)b;
  else
    (*overflow)++;
}

/* a box in sweep order: float bounds rounded outward on the two other axes,
 * stored as (lo1, -hi1, lo2, -hi2) so that two boxes are apart when any lane
 * of one exceeds (hi1, -lo1, hi2, -lo2) of the other: one 4-wide compare */
typedef float khz_v4f __attribute__((vector_size(16)));
typedef int khz_v4i __attribute__((vector_size(16)));
typedef struct {
  khz_v4f b;       /* lo1, -hi1, lo2, -hi2 */
  khz_v4f c;       /* hi1, -lo1, hi2, -lo2 */
  uint32_t lo, hi; /* float keys on the sweep axis */
  int geom, pad;
} sweep_box;
_Static_assert(sizeof(sweep_box) == 48, "khz_collisionStackBytes counts 48 bytes per box");

static float round_down(double x) {
  float f = (float)x;
  return (double)f > x ? khz_floatNext(f, 0) : f;
}
static float round_up(double x) {
  float f = (float)x;
  return (double)f < x ? khz_floatNext(f, 1) : f;
}

/* two boxes that the sweep brought together: the float bounds are
 * conservative, the doubles and the filters decide */
static inline void sweep_pair(const khzModel *m, const double *aabb, const sweep_box *bi,
                              const sweep_box *bj, khz_v4f c, uint64_t *pairs, int cap, int *np,
                              int *overflow) {
  khz_v4i apart = bj->b > c;
  if (apart[0] | apart[1] | apart[2] | apart[3]) return;
  const double *x = aabb + 6 * bi->geom, *y = aabb + 6 * bj->geom;
  if (y[0] > x[3] || y[3] < x[0] || y[1] > x[4] || y[4] < x[1] || y[2] > x[5] || y[5] < x[2]) return;
  if (khz_collisionFilter(m, bi->geom, bj->geom)) emit(pairs, cap, np, overflow, bi->geom, bj->geom);
}

/* the strip of coordinate x: floor((x - origin) / width), clamped to the
 * strips (NaN to the first); monotone in x, so that two boxes that overlap
 * along the strip axis share a strip */
static int strip_at(double x, double origin, double inv_width, int nstrip) {
  double t = (x - origin) * inv_width;
  if (!(t >= 1)) return 0;
  if (!(t < nstrip - 1)) return nstrip - 1;
  return (int)t;
}

/* How many strips across axis sa: KHZ_STRIP_WIDTH mean box extents wide
 * (between the lowest bound and the highest), at most KHZ_STRIP_MAX, and
 * fewer while the boxes' strip entries exceed KHZ_STRIP_ENTRIES per box
 * (large boxes span many). 1 when strips do not pay (a narrow scene). */
static int plan_strips(const double *aabb, const int *bounded, int n, int sa, double *origin,
                       double *inv_width) {
  double lo = INFINITY, hi = -INFINITY, extent = 0;
  for (int i = 0; i < n; i++) {
    const double *b = aabb + 6 * bounded[i];
    lo = fmin(lo, b[sa]), hi = fmax(hi, b[3 + sa]);
    extent += b[3 + sa] - b[sa];
  }
  double width = KHZ_STRIP_WIDTH * extent / n;
  if (!(isfinite(lo) && isfinite(hi) && width > 0 && isfinite(width))) return 1;
  double span = (hi - lo) / width;
  int nstrip = span < KHZ_STRIP_MAX ? (int)span : KHZ_STRIP_MAX;
  for (; nstrip >= 3; nstrip /= 2) {
    double inv = nstrip / (hi - lo);
    long entries = 0;
    for (int i = 0; i < n && entries <= (long)KHZ_STRIP_ENTRIES * n; i++) {
      const double *b = aabb + 6 * bounded[i];
      entries += strip_at(b[3 + sa], lo, inv, nstrip) - strip_at(b[sa], lo, inv, nstrip) + 1;
    }
    if (entries <= (long)KHZ_STRIP_ENTRIES * n) {
      *origin = lo, *inv_width = inv;
      return nstrip;
    }
  }
  return 1;
}

int khz_broadphase(const khzModel *m, khzData *d, const double *frame, const double *aabb,
                   uint64_t *pairs, int cap, int *overflow) {
  const khzColModel *cm = m->collision;
  /* the boxes swept against each other: none when no two can pass the
   * filter (the sweep would emit nothing); the planes meet them all */
  int nbounded = cm->nbounded, n = cm->bounded_pairs ? nbounded : 0, np = 0;
  *overflow = 0;
  size_t mark = khz_stackMark(d);
  uint64_t *key = khz_stackAlloc(d, (size_t)(n + 1) * sizeof(uint64_t));
  uint64_t *tmp = khz_stackAlloc(d, (size_t)(n + 1) * sizeof(uint64_t));
  sweep_box *sb = khz_stackAlloc(d, (size_t)(n + 1) * sizeof(sweep_box));
  if (!key || !tmp || !sb) {
    khz_stackFree(d, mark);
    return -1;
  }

  /* sweep axis: largest variance of the box centres */
  double mean[3] = {0, 0, 0}, var[3] = {0, 0, 0};
  for (int i = 0; i < n; i++) {
    const double *b = aabb + 6 * cm->bounded[i];
    for (int k = 0; k < 3; k++) mean[k] += 0.5 * (b[k] + b[3 + k]);
  }
  for (int k = 0; k < 3; k++) mean[k] /= n > 0 ? n : 1;
  for (int i = 0; i < n; i++) {
    const double *b = aabb + 6 * cm->bounded[i];
    for (int k = 0; k < 3; k++) {
      double c = 0.5 * (b[k] + b[3 + k]) - mean[k];
      var[k] += c * c;
    }
  }
  int ax = var[1] > var[0] ? 1 : 0;
  if (var[2] > var[ax]) ax = 2;
  int a1 = (ax + 1) % 3, a2 = (ax + 2) % 3;

  /* sort the lower bounds (rounded down to float, the index in the low bits:
   * distinct keys), listed in the last call's order when there is one (on
   * the same axis it is nearly sorted) */
  int warm = n > 0 && d->sweep_n == n;
  for (int i = 0; i < n; i++) {
    int at = warm ? d->sweep_order[i] : i;
    key[i] = ((uint64_t)float_key(aabb[6 * cm->bounded[at] + ax], 0) << 32) | (uint64_t)at;
  }
  if (warm)
    khz_sortNearlySorted(key, n, tmp);
  else
    khz_radixSort64(key, NULL, n, tmp, NULL);
  for (int i = 0; i < n; i++) d->sweep_order[i] = (int)(key[i] & 0xffffffffu);
  d->sweep_n = n;

  /* the boxes in sweep order, packed for the inner loop */
  for (int i = 0; i < n; i++) {
    int g = cm->bounded[key[i] & 0xffffffffu];
    const double *b = aabb + 6 * g;
    sb[i].lo = (uint32_t)(key[i] >> 32);
    sb[i].hi = float_key(b[3 + ax], 1);
    float l1 = round_down(b[a1]), h1 = round_up(b[3 + a1]);
    float l2 = round_down(b[a2]), h2 = round_up(b[3 + a2]);
    sb[i].b = (khz_v4f){l1, -h1, l2, -h2};
    sb[i].c = (khz_v4f){h1, -l1, h2, -l2};
    sb[i].geom = g;
  }

  /* strips across the second axis: one sweep along ax meets every box whose
   * ax-interval overlaps, a band across the whole scene when the boxes
   * spread over a floor (about sqrt(n) of them each: O(n^1.5)); swept strip by
   * strip, each meets those of its strips only (O(n + k) at constant density) */
  int nstrip = 1, *strip_first = NULL, *strip_of = NULL, *order = NULL;
  double origin = 0, inv_width = 0;
  if (n >= KHZ_STRIP_MIN_BOXES) {
    strip_of = khz_stackAlloc(d, (size_t)(n + 1) * sizeof(int));
    order = khz_stackAlloc(d, (size_t)(KHZ_STRIP_ENTRIES * n + 1) * sizeof(int));
    strip_first = khz_stackAlloc(d, (size_t)(KHZ_STRIP_MAX + 2) * sizeof(int));
    if (strip_of && order && strip_first)
      nstrip = plan_strips(aabb, cm->bounded, n, var[a1] >= var[a2] ? a1 : a2, &origin, &inv_width);
  }
  if (nstrip > 1) {
    int sa = var[a1] >= var[a2] ? a1 : a2;
    /* each box in the strips its interval along sa spans, in sweep order
     * within a strip (a stable counting sort of the sorted boxes) */
    memset(strip_first, 0, (size_t)(nstrip + 2) * sizeof(int));
    for (int i = 0; i < n; i++) {
      const double *b = aabb + 6 * sb[i].geom;
      int s0 = strip_at(b[sa], origin, inv_width, nstrip), s1 = strip_at(b[3 + sa], origin, inv_width, nstrip);
      strip_of[i] = s0;
      for (int s = s0; s <= s1; s++) strip_first[s + 2]++;
    }
    for (int s = 0; s < nstrip; s++) strip_first[s + 2] += strip_first[s + 1];
    for (int i = 0; i < n; i++) {
      const double *b = aabb + 6 * sb[i].geom;
      int s1 = strip_at(b[3 + sa], origin, inv_width, nstrip);
      for (int s = strip_of[i]; s <= s1; s++) order[strip_first[s + 1]++] = i;
    }
    /* strip s holds order[strip_first[s] .. strip_first[s + 1]) */
    for (int s = 0; s < nstrip; s++) {
      int end = strip_first[s + 1];
      for (int p = strip_first[s]; p < end; p++) {
        int i = order[p];
        const sweep_box *bi = &sb[i];
        const khz_v4f c = bi->c;
        for (int q = p + 1; q < end && sb[order[q]].lo <= bi->hi; q++) {
          int j = order[q];
          /* a pair sharing several strips is met in the first of them only */
          if ((strip_of[i] > strip_of[j] ? strip_of[i] : strip_of[j]) != s) continue;
          sweep_pair(m, aabb, bi, &sb[j], c, pairs, cap, &np, overflow);
        }
      }
    }
  } else {
    /* sweep: each box against the boxes that start before it ends */
    for (int i = 0; i < n; i++) {
      const sweep_box *bi = &sb[i];
      const khz_v4f c = bi->c;
      for (int j = i + 1; j < n && sb[j].lo <= bi->hi; j++) sweep_pair(m, aabb, bi, &sb[j], c, pairs, cap, &np, overflow);
    }
  }

  /* planes: boxes reaching below the surface */
  for (int p = 0; p < cm->nplane; p++) {
    int gp = cm->planes[p];
    const double *fp = frame + 12 * gp;
    double z[3] = {fp[3 + 2], fp[3 + 5], fp[3 + 8]}, off = khzu_dot3(z, fp);
    for (int i = 0; i < nbounded; i++) {
      int g = cm->bounded[i];
      const double *b = aabb + 6 * g;
      double lowest = -off;
      for (int k = 0; k < 3; k++) lowest += z[k] * (z[k] > 0 ? b[k] : b[3 + k]);
      if (lowest <= 0 && khz_collisionFilter(m, gp, g)) emit(pairs, cap, &np, overflow, gp, g);
    }
  }

  /* ascending (g0, g1) */
  uint64_t *ptmp = khz_stackAlloc(d, (size_t)(np + 1) * sizeof(uint64_t));
  int *first = khz_stackAlloc(d, (size_t)(m->ngeom + 2) * sizeof(int));
  if (!ptmp || !first) {
    khz_stackFree(d, mark);
    return -1;
  }
  sort_pairs(pairs, np, m->ngeom, ptmp, first);
  khz_stackFree(d, mark);
  return np;
}
