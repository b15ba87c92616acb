/* pairs.c — khz_collide: broad phase, narrow phase, the contact outputs and
 * the persistent pair slots that carry the penalty method's state from tick
 * to tick (the integral term of eq. 2 and the Fig. 2 phase of Drumwright, "A
 * fast and stable penalty method for rigid body simulation", IEEE TVCG 2008;
 * the friction anchors; docs/contact.md).
 *
 * Outputs are ordered by geom pair (g0 < g1), so the same state gives the same
 * contacts in the same order. Each pair keeps at most m->max_points points:
 * the extreme points of its deepest layer in 8 directions of the contact plane
 * (so that a flat contact keeps its footprint), then the deepest (ties: the
 * earlier generated); at most m->npair_max pairs are kept, in pair order. A
 * call that had to drop something counts KHZ_WARN_CONTACTFULL once.
 *
 * Slots: a pair found again keeps its slot (found by a merge of the sorted
 * occupied slots with the sorted contacts, O(n) after a radix sort); a new pair
 * takes the lowest free slot, zeroed (phase NONE, integral 0, no anchors);
 * the slot of a pair no longer in contact is freed and zeroed (geom -1).
 * Scratch comes from the data's stack; nothing here allocates.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collision.h"
#include "island.h"
#include "pool.h"
#include "spatial.h"

/* fraction of the deepest point's depth from which a point is in the deepest layer */
#define KHZ_DEEP_LAYER 0.9
/* sin between the normal and a cylinder's axis below which a rim point has no
 * centre of curvature (the normal is along the axis) */
#define KHZ_RIM_AXIS_SIN 1e-9

/* ------------------------------------------------------------- names -- */

static const char *const method_names[KHZ_CONTACT_NMETHODS] = {"none", "penalty", "deepest", "lcp", "peg"};

const char *khz_contactMethodName(khzContactMethod method) {
  return (method >= 0 && method < KHZ_CONTACT_NMETHODS) ? method_names[method] : "unknown";
}

int khz_contactMethodFromName(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < KHZ_CONTACT_NMETHODS; i++)
    if (strcmp(name, method_names[i]) == 0) return i;
  return -1;
}

/* --------------------------------------------------------- selection -- */

/* the k-th largest of v[0..n) (k >= 1), v reordered (quickselect) */
static double kth_largest(double *v, int n, int k) {
  int lo = 0, hi = n - 1, want = k - 1;
  while (lo < hi) {
    double a = v[lo], b = v[(lo + hi) / 2], c = v[hi];
    double pivot = a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
    int i = lo, j = hi;
    while (i <= j) {
      while (v[i] > pivot) i++;
      while (v[j] < pivot) j--;
      if (i <= j) {
        double t = v[i];
        v[i] = v[j], v[j] = t;
        i++, j--;
      }
    }
    if (want <= j)
      hi = j;
    else if (want >= i)
      lo = i;
    else
      return v[want];
  }
  return v[want];
}

/* keeps `keep` points, in their order: the deepest, the extreme points in 8
 * directions of the contact plane of the deepest layer (depth >= 0.9 of the
 * deepest), so that a flat contact keeps its footprint, then the deepest */
static void keep_deepest(khzColOut *o, int keep, double *scratch) {
  int n = o->npt, nsel = 1, deepest = 0;
  double u[3], v[3], dmax = 0;
  unsigned char *sel = (unsigned char *)(scratch + n);
  memset(sel, 0, (size_t)n);
  khzu_orthogonal(u, o->normal);
  khzu_cross(v, o->normal, u);
  for (int i = 0; i < n; i++)
    if (o->pt[i].depth > dmax) dmax = o->pt[i].depth, deepest = i;
  sel[deepest] = 1;
  for (int k = 0; k < 8 && nsel < keep; k++) {
    double c = cos(M_PI * k / 4), s = sin(M_PI * k / 4), best = -1e300;
    int bi = -1;
    for (int i = 0; i < n; i++) {
      if (o->pt[i].depth < KHZ_DEEP_LAYER * dmax) continue;
      double x = c * khzu_dot3(u, o->pt[i].pos) + s * khzu_dot3(v, o->pt[i].pos);
      if (x > best) best = x, bi = i;
    }
    if (bi >= 0 && !sel[bi]) sel[bi] = 1, nsel++;
  }

  /* the rest by depth (ties: the earlier point) */
  int m = 0;
  for (int i = 0; i < n; i++)
    if (!sel[i]) scratch[m++] = o->pt[i].depth;
  int want = keep - nsel;
  double thr = want > 0 && m > 0 ? kth_largest(scratch, m, want < m ? want : m) : 1e300;
  int above = 0;
  for (int i = 0; i < n; i++) above += !sel[i] && o->pt[i].depth > thr;
  int ties = want - above, w = 0;
  for (int i = 0; i < n; i++) {
    double dp = o->pt[i].depth;
    int take = sel[i] || (want > 0 && (dp > thr || (dp == thr && ties-- > 0)));
    if (take) o->pt[w++] = o->pt[i];
  }
  o->npt = w;
}

/* -------------------------------------------------------------- slots -- */

/* a slot freed forgets its state, the rolling friction's anchor too */
static void free_slot(khzData *d, int s) {
  khzPairState *p = &d->pair[s];
  memset(p, 0, sizeof *p);
  p->geom[0] = p->geom[1] = -1;
  memset(d->pair_turn + 4 * s, 0, 4 * sizeof(double));
}

/* the first `frozen` contacts are sleeping pairs that keep their slots */
static int assign_slots(const khzModel *m, khzData *d, int frozen) {
  int P = m->npair_max, n = 0;
  size_t mark = khz_stackMark(d);
  uint64_t *key = khz_stackAlloc(d, (size_t)(2 * P + 2) * sizeof(uint64_t));
  int *slot = khz_stackAlloc(d, (size_t)(2 * P + 2) * sizeof(int));
  unsigned char *used = khz_stackAlloc(d, (size_t)P + 1);
  if (!key || !slot || !used) {
    khz_stackFree(d, mark);
    return -1;
  }
  memset(used, 0, (size_t)P);

  /* occupied slots, sorted by pair */
  for (int s = 0; s < P; s++) {
    khzPairState *p = &d->pair[s];
    if (p->geom[0] < 0) continue;
    if (p->geom[0] >= p->geom[1] || p->geom[1] >= m->ngeom) {
      free_slot(d, s);
      continue;
    }
    /* a sleeping pair keeps its slot as it was (island.c) */
    if (khz_anyAsleep(d) && khz_pairAsleep(m, d, m->geom_body[p->geom[0]], m->geom_body[p->geom[1]])) {
      used[s] = 1;
      continue;
    }
    key[n] = ((uint64_t)p->geom[0] << 32) | (uint64_t)p->geom[1];
    slot[n++] = s;
  }
  khz_radixSort64(key, slot, n, key + P + 1, slot + P + 1);

  /* merge with the contacts (sorted the same way) */
  int j = 0;
  for (int c = frozen; c < d->ncontact; c++) {
    khzContact *ct = &d->contact[c];
    uint64_t k = ((uint64_t)ct->geom[0] << 32) | (uint64_t)ct->geom[1];
    while (j < n && key[j] < k) j++;
    ct->slot = -1;
    if (j < n && key[j] == k) {
      ct->slot = slot[j];
      used[slot[j]] = 1;
      j++;
    }
  }

  /* free what is no longer in contact, then give the new pairs free slots */
  for (int s = 0; s < P; s++)
    if (d->pair[s].geom[0] >= 0 && !used[s]) free_slot(d, s);
  int next = 0;
  for (int c = frozen; c < d->ncontact; c++) {
    khzContact *ct = &d->contact[c];
    if (ct->slot >= 0) continue;
    while (next < P && d->pair[next].geom[0] >= 0) next++;
    if (next == P) break; /* cannot happen: ncontact <= npair_max */
    free_slot(d, next);
    d->pair[next].geom[0] = ct->geom[0];
    d->pair[next].geom[1] = ct->geom[1];
    d->pair[next].phase = KHZ_PHASE_NONE;
    ct->slot = next++;
  }
  khz_stackFree(d, mark);
  return 0;
}

/* ------------------------------------------------------------ collide -- */

/* point buffer and pair capacity of one call */
static int point_cap(const khzModel *m) { return 2 * m->max_points > 320 ? 2 * m->max_points : 320; }
static int pair_cap(const khzColModel *cm) { return (8 + cm->nplane) * cm->nbounded + 64; }

int khz_collisionPairCap(const khzModel *m) { return m->collision ? pair_cap(m->collision) : 0; }

size_t khz_collisionStackBytes(const khzModel *m) {
  const khzColModel *cm = m->collision;
  if (!cm) return 0;
  size_t ng = (size_t)m->ngeom, nb = (size_t)cm->nbounded, P = (size_t)m->npair_max;
  size_t ptcap = (size_t)point_cap(m), cap = (size_t)pair_cap(cm), a = 64;

  /* what khz_collide holds throughout, then the larger of the broad phase and the slots */
  size_t base = (12 * ng + 1) * sizeof(double) + (6 * ng + 1) * sizeof(double) +
                cap * sizeof(uint64_t) + ptcap * sizeof(khzColPoint) +
                (size_t)KHZ_COL_WORK(ptcap, cm->maxvert) * sizeof(double) + (cap + 1) +
                (3 * cap + 1) * sizeof(double) + (ng + 1) * sizeof(khzColShape) + (ng + 1) + 9 * a;
  /* the sweep's keys, boxes and strips (broadphase.c: 1 + 3 ints per box, 1026 per call) */
  size_t broad = 2 * (nb + 1) * sizeof(uint64_t) + (nb + 1) * 48 + (cap + 1) * sizeof(uint64_t) +
                 (4 * nb + 2 + 1026) * sizeof(int) + (ng + 2) * sizeof(int) + 8 * a;
  size_t slots = (2 * P + 2) * (sizeof(uint64_t) + sizeof(int)) + P + 1 + 3 * a;
  return base + (broad > slots ? broad : slots);
}


/* A point on a sphere's, a capsule's or a cylinder rim's curved surface is
 * not a material point: as the body rolls, the contact stays where the
 * surface faces the other body. The contact method keeps such a point there
 * (contact/penalty.c, surface_point) from the centre of curvature and, for a rim,
 * the cylinder's axis, both in the body's frame. */
static void round_point(const khzModel *m, const khzContact *c, const double *xrot,
                        const double *xpos, khzContactPoint *p) {
  int kind = (p->feature >> 24) & 0xf, side = KHZ_FEATURE_SIDE(p->feature);
  int index = p->feature & 0xffffff;
  p->round = -1;
  if (side > 1 || c->body[side] <= 0) return;
  int g = c->geom[side], type = m->geom_type[g];
  double r = m->geom_size[3 * g], out = side == 0 ? -1 : 1, u[3], ctr[3], rel[3];
  const double *n = c->normal, *R = xrot + 9 * c->body[side], *x = xpos + 3 * c->body[side];
  if (kind == KHZ_FEAT_ROUND && index <= 2 && (type == KHZ_GEOM_SPHERE || type == KHZ_GEOM_CAPSULE)) {
    khzu_scl3(u, n, out);
  } else if (kind == KHZ_FEAT_RIM && type == KHZ_GEOM_CYLINDER) {
    double Rg[9], ab[3], aw[3];
    khzu_quat2mat(Rg, m->geom_quat + 4 * g);
    ab[0] = Rg[2], ab[1] = Rg[5], ab[2] = Rg[8]; /* the geom's z in the body frame */
    khzu_mulMatVec3(aw, R, ab);
    khzu_scl3(u, n, out);
    khzu_addScl3(u, u, aw, -khzu_dot3(u, aw));
    if (khzu_normalize3(u) < KHZ_RIM_AXIS_SIN) return;
    khzu_copy3(p->axis, ab);
  } else {
    return;
  }
  khzu_addScl3(ctr, p->pos, u, -r);
  khzu_sub3(rel, ctr, x);
  khzu_mulMatTVec3(p->center, R, rel);
  p->round = side;
}

/* A quiet pass: some body sleeps and every body with a collidable geom is
 * asleep or welded to the world. No pair of it is collided (none is mixed,
 * none awake: khz_pairAsleep), so nothing wakes; the sleeping pairs' contacts
 * stay listed as they are. */
static int quiet_pass(const khzModel *m, const khzData *d) {
  const khzColModel *cm = m->collision;
  if (!khz_anyAsleep(d)) return 0;
  if (khz_allAsleep(m, d)) return 1; /* every moving tree asleep: no walk */
  for (int i = 0; i < cm->nbounded; i++) {
    int b = m->geom_body[cm->bounded[i]];
    if (!d->body_sleep[b] && cm->weld[b] != 0) return 0;
  }
  for (int i = 0; i < cm->nplane; i++) {
    int b = m->geom_body[cm->planes[i]];
    if (!d->body_sleep[b] && cm->weld[b] != 0) return 0;
  }
  return 1;
}

/* The pass's view of each geom (khz_shape_make of its frame), made at its
 * first pair and kept for the pass: a pile's body is in about six pairs,
 * and the view is a pure function of the geom and its frame, so each pair
 * sees the same bits as when it made its own. Without the scratch (a
 * stack too small for it) each pair makes its own, as
 * khz_narrowphaseCoherent does. */
typedef struct {
  khzColShape *shape; /* ngeom, or NULL */
  unsigned char *made;
} pass_shapes;

static const khzColShape *pass_shape(const khzModel *m, const double *frame, pass_shapes *ps, int g) {
  if (!ps->made[g]) khz_shape_make(m, g, frame + 12 * g, &ps->shape[g]), ps->made[g] = 1;
  return &ps->shape[g];
}

/* khz_narrowphaseCoherent through the pass's views */
static int coherent_pair(const khzModel *m, const double *frame, pass_shapes *ps, int g0, int g1,
                         khzColOut *out, double axis[3], int *apart) {
  const khzColModel *cm = m->collision;
  if (!ps->shape) return khz_narrowphaseCoherent(m, g0, g1, frame, out, axis, apart);
  out->npt = 0;
  out->overflow = 0;
  if (cm->geom[g0].shape < 0 || cm->geom[g1].shape < 0) return *apart = 0;
  return khz_col_coherent(pass_shape(m, frame, ps, g0), pass_shape(m, frame, ps, g1), out, axis, apart);
}

/* ------------------------------------------------------ contact reuse -- */

/* A pair in contact keeps its last narrow phase (its reference): geom g1's
 * frame in g0's then, the normal in g0's frame and the points (the list
 * the pass kept, after keep_deepest), each both in g0's frame (p0) and g1's
 * (q1). At a later pass, if every point carried by g1 has moved less than
 * the bound relative to g0 since the reference, |Rrel q1 + trel - p0| <
 * bound, the pair keeps the reference's points, normal and features: each
 * point moves with the geom it belongs to (its side), and its depth is
 * carried to first order, depth + n0 . (Rrel q1 + trel - p0) (g1 moving
 * along the normal, toward g0, deepens it), but for an edge's crossing of
 * the other's supporting plane (depth 0), which slides along the edge and
 * stays on it. A pair with a crossing below that plane is not reused (the
 * crossing's depth moves with the other surface's slope there). Otherwise the narrow phase runs
 * and its answer is the new reference. A new pair, a woken pair (not
 * collided while asleep: not kept), a restore, a reset or a copy start
 * from the narrow phase. bench/reuse_bound measures the error: below 1e-7 m
 * the depths agree with a fresh narrow phase within 4.2e-7 m in every pile
 * window measured (docs/benchmarks.md, col27). */
/* depth (m) below which an edge's crossing lies on the other's supporting
 * plane (rounding): there it keeps its depth as it slides */
#define KHZ_REUSE_FLAT 1e-12

typedef struct khzReusePair {
  uint64_t key;
  double rel[12]; /* g1's frame in g0's: rotation (row-major), then origin */
  double n0[3];
  int npt;
} khzReusePair;

typedef struct khzReusePoint {
  double p0[3], q1[3], sd, depth, weight;
  int side, feature;
} khzReusePoint;

int khz_contactReuse(const khzModel *m, khzData *d, double bound) {
  d->reuse_n = 0;
  d->reuse_count = 0;
  if (!(bound > 0)) {
    d->reuse_bound = 0;
    return 0;
  }
  if (!d->reuse_pair) {
    size_t P = (size_t)(m->npair_max > 0 ? m->npair_max : 1), K = (size_t)(m->max_points > 0 ? m->max_points : 1);
    d->reuse_pair = malloc(2 * P * sizeof(khzReusePair));
    d->reuse_point = malloc(2 * P * K * sizeof(khzReusePoint));
    if (!d->reuse_pair || !d->reuse_point) {
      free(d->reuse_pair), free(d->reuse_point);
      d->reuse_pair = NULL, d->reuse_point = NULL;
      d->reuse_bound = 0;
      return -1;
    }
  }
  d->reuse_bound = bound;
  return 0;
}

/* g1's frame in g0's: R0^T R1, R0^T (x1 - x0) (frames: origin, then rotation) */
static void relative_frame(const double *f0, const double *f1, double rel[12]) {
  const double *R0 = f0 + 3, *R1 = f1 + 3;
  double dx[3];
  khzu_sub3(dx, f1, f0);
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) rel[3 * i + j] = R0[i] * R1[j] + R0[3 + i] * R1[3 + j] + R0[6 + i] * R1[6 + j];
    rel[9 + i] = R0[i] * dx[0] + R0[3 + i] * dx[1] + R0[6 + i] * dx[2];
  }
}

/* the reference's points and normal at the present frames, if every point
 * moved less than the bound; 0 (nothing written) otherwise */
static int reuse_contact(const khzReusePair *rp, const khzReusePoint *pts, const double *f0, const double *f1,
                         double bound, khzColOut *out) {
  double rel[12], b2 = bound * bound;
  if (rp->npt < 0 || rp->npt > out->cap) return 0;
  relative_frame(f0, f1, rel);
  for (int i = 0; i < rp->npt; i++) {
    double now[3], d2 = 0;
    khzu_mulMatVec3(now, rel, pts[i].q1);
    for (int k = 0; k < 3; k++) {
      double dk = now[k] + rel[9 + k] - pts[i].p0[k];
      d2 += dk * dk;
    }
    if (!(d2 < b2)) return 0;
  }
  const double *R0 = f0 + 3, *R1 = f1 + 3;
  khzu_mulMatVec3(out->normal, R0, rp->n0);
  for (int i = 0; i < rp->npt; i++) {
    const khzReusePoint *q = &pts[i];
    khzColPoint *o = &out->pt[i];
    double now[3], moved = 0;
    khzu_mulMatVec3(now, rel, q->q1);
    for (int k = 0; k < 3; k++) moved += rp->n0[k] * (now[k] + rel[9 + k] - q->p0[k]);
    if (q->side == 1) {
      khzu_mulMatVec3(o->pos, R1, q->q1);
      khzu_add3(o->pos, o->pos, f1);
    } else {
      khzu_mulMatVec3(o->pos, R0, q->p0);
      khzu_add3(o->pos, o->pos, f0);
    }
    if (((q->feature >> 24) & 0xf) == KHZ_FEAT_EDGE) moved = 0; /* on the supporting plane: it slides */
    o->depth = q->depth + moved;
    if (!(o->depth > 0)) o->depth = 0;
    o->sd = q->sd + moved;
    o->weight = q->weight;
    o->side = q->side;
    o->feature = q->feature;
  }
  out->npt = rp->npt;
  out->overflow = 0;
  return 1;
}

/* the pass's answer for the pair as the next pass's reference */
static void reuse_keep(const khzColOut *out, const double *f0, const double *f1, uint64_t key,
                       khzReusePair *rp, khzReusePoint *pts) {
  const double *R0 = f0 + 3, *R1 = f1 + 3;
  rp->key = key;
  relative_frame(f0, f1, rp->rel);
  khzu_mulMatTVec3(rp->n0, R0, out->normal);
  rp->npt = out->npt;
  for (int i = 0; i < out->npt; i++) {
    const khzColPoint *o = &out->pt[i];
    khzReusePoint *q = &pts[i];
    double r[3];
    khzu_sub3(r, o->pos, f0);
    khzu_mulMatTVec3(q->p0, R0, r);
    khzu_sub3(r, o->pos, f1);
    khzu_mulMatTVec3(q->q1, R1, r);
    q->sd = o->sd, q->depth = o->depth, q->weight = o->weight;
    q->side = o->side, q->feature = o->feature;
    /* a crossing below the other's supporting plane moves along the normal
     * as the edge slides, by what the surface's slope there makes of the
     * motion: not carried, the pair runs its narrow phase */
    if (((o->feature >> 24) & 0xf) == KHZ_FEAT_EDGE && o->depth > KHZ_REUSE_FLAT) rp->npt = -1;
  }
}

/* ------------------------------------------- the narrow phase on threads -- */

/* one pair's narrow phase on the pool's threads (khz_setThreads): what the
 * pass decided before (the pair, its last direction apart, its reference),
 * and the answer, which the pass takes in pair order as if it had just made
 * it. result -1: no room in the thread's points, made again in the pass. */
typedef struct {
  int g0, g1;
  int reuse_at;  /* the reference to try (index in the last pass's), or -1 */
  int was_apart; /* in: axis holds the last pass's direction; out: apart along axis */
  int result;    /* 1 contact, 0 none, -1 not made */
  int reused;    /* the reference's index when the pair keeps it, else -1 */
  int npt, overflow, trimmed;
  double axis[3], normal[3];
  const khzColPoint *pt;
} collide_task;

typedef struct {
  const khzModel *m;
  khzData *d;
  collide_task *task;
  const double *frame;
  const khzColShape *shape; /* the pass's views, all made */
  const khzReusePair *rlast_pair;
  const khzReusePoint *rlast_point;
  int ptcap;
} collide_job;

void khz_collisionPoolSizes(const khzModel *m, size_t *task_bytes, int *points, size_t *work_doubles) {
  const khzColModel *cm = m->collision;
  *task_bytes = 0, *points = 0, *work_doubles = 0;
  if (!cm) return;
  int ptcap = point_cap(m);
  *task_bytes = (size_t)pair_cap(cm) * sizeof(collide_task);
  *points = ptcap + 8 * (m->npair_max > 0 ? m->npair_max : 1);
  *work_doubles = (size_t)KHZ_COL_WORK(ptcap, cm->maxvert);
}

/* the pairs [begin, end) on thread `thread`: each as the pass's loop makes
 * it (its reference if it still holds, else the narrow phase, then the
 * deepest kept), its points after the thread's earlier pairs' */
static void collide_tasks(void *ctx, int thread, int begin, int end) {
  const collide_job *job = ctx;
  const khzModel *m = job->m;
  const khzColModel *cm = m->collision;
  khzPoolScratch *sc = khz_poolScratch(job->d, thread);
  int K = m->max_points;
  for (int i = begin; i < end; i++) {
    collide_task *t = &job->task[i];
    if (sc->npt - sc->used < job->ptcap) {
      t->result = -1;
      continue;
    }
    khzColOut out = {sc->pt + sc->used, 0, job->ptcap, 0, sc->work, cm->maxvert, {0, 0, 0}, {0, 0, 0}};
    const double *f0 = job->frame + 12 * t->g0, *f1 = job->frame + 12 * t->g1;
    t->reused = -1;
    if (t->reuse_at >= 0 && reuse_contact(&job->rlast_pair[t->reuse_at], job->rlast_point + (size_t)t->reuse_at * K,
                                          f0, f1, job->d->reuse_bound, &out))
      t->reused = t->reuse_at;
    if (t->reused >= 0)
      t->result = 1;
    else if (cm->geom[t->g0].shape < 0 || cm->geom[t->g1].shape < 0)
      t->result = t->was_apart = 0;
    else
      t->result = khz_col_coherent(&job->shape[t->g0], &job->shape[t->g1], &out, t->axis, &t->was_apart) != 0;
    if (!t->result) continue;
    t->overflow = out.overflow;
    t->trimmed = out.npt > K;
    if (t->trimmed) keep_deepest(&out, K, sc->work);
    t->npt = out.npt;
    t->pt = out.pt;
    khzu_copy3(t->normal, out.normal);
    sc->used += out.npt;
  }
}

KHZ_AVX_CLONES int khz_collideStep(const khzModel *m, khzData *d) {
  const khzColModel *cm = m->collision;
  /* a shift left pending (a step cut short) is undone before the list is read */
  d->contact -= d->contact_shift, d->ncontact += d->contact_shift, d->contact_shift = 0;
  int nkept = d->ncontact_kept; /* the last step's list, where the sleeping pairs are */
  d->ncontact_kept = d->ncontact_asleep = d->contact_shift = 0;
  d->ncontact = d->ncpoint = 0;
  if (!cm) return 0;
  int ng = m->ngeom, P = m->npair_max, K = m->max_points, full = 0;
  int ptcap = point_cap(m);
  int cap = pair_cap(cm);

  /* scratch */
  size_t mark = khz_stackMark(d);
  double *frame = khz_stackAlloc(d, (size_t)(12 * ng + 1) * sizeof(double));
  double *aabb = khz_stackAlloc(d, (size_t)(6 * ng + 1) * sizeof(double));
  uint64_t *pairs = khz_stackAlloc(d, (size_t)cap * sizeof(uint64_t));
  khzColPoint *pt = khz_stackAlloc(d, (size_t)ptcap * sizeof(khzColPoint));
  double *work = khz_stackAlloc(d, (size_t)KHZ_COL_WORK(ptcap, cm->maxvert) * sizeof(double));
  if (!frame || !aabb || !pairs || !pt || !work) {
    khz_stackFree(d, mark);
    return 0;
  }

  /* broad phase; skipped in a quiet pass after a quiet pass: every pair it
   * lists would be a pair of sleeping or welded bodies, not collided, and
   * the poses are those of the last pass, whose broad phase did not overflow
   * (the one thing of it that a quiet pass reports) */
  int quiet = quiet_pass(m, d), np = 0, fast = quiet && d->quiet_ready;
  if (!fast) {
    d->quiet_ready = 0;
    khz_collisionFrames(m, d, frame, aabb);
    int overflow = 0;
    np = khz_broadphase(m, d, frame, aabb, pairs, cap, &overflow);
    if (np < 0) {
      khz_stackFree(d, mark);
      return 0;
    }
    full |= overflow > 0;
    d->quiet_ready = quiet && overflow == 0;
  }

  /* the pass's views of the geoms (pass_shape), when the stack holds them
   * besides what the pass takes after them (the sleeping pairs' marks and
   * directions, assign_slots' keys): checked first, so that a stack too
   * small for them only costs the remaking, never another allocation */
  pass_shapes views = {NULL, NULL};
  size_t view_bytes = (size_t)ng * sizeof(khzColShape) + (size_t)ng,
         after = (size_t)np + 1 + (3 * (size_t)np + 1) * sizeof(double) +
                 (2 * (size_t)P + 2) * (sizeof(uint64_t) + sizeof(int)) + (size_t)P + 1;
  if (np > 0 && d->stack_size - khz_stackMark(d) >= view_bytes + after + 8 * 64) {
    views.shape = khz_stackAlloc(d, (size_t)ng * sizeof(khzColShape));
    views.made = khz_stackAlloc(d, (size_t)ng);
    if (views.shape && views.made) memset(views.made, 0, (size_t)ng);
    else views.shape = NULL;
  }

  /* sleeping islands (island.c): a sleeping body that an awake moving body
   * touches wakes its island before the narrow phase below, so that all of
   * the island's pairs are collided this step (again while a woken island
   * reaches another); pairs of sleeping or welded bodies are not collided
   * and keep their slots, which leaves `room` slots for the others */
  /* the pairs the last pass found apart along a direction (temporal
   * coherence, khz_narrowphaseCoherent), ascending; this pass's are
   * listed for the next in the other half */
  int h = d->apart_half, nlast = d->napart, nnext = 0;
  const uint64_t *last_pair = d->apart_pair + (size_t)h * cap;
  const double *last_axis = d->apart_axis + (size_t)h * 3 * cap;
  uint64_t *next_pair = d->apart_pair + (size_t)(1 - h) * cap;
  double *next_axis = d->apart_axis + (size_t)(1 - h) * 3 * cap;
  unsigned char *apart = NULL;
  double *apart_axis = NULL; /* 3 per pair: the direction of a pair the loop below found apart (apart 2) */
  int room = P;
  if (khz_anyAsleep(d)) {
    apart = khz_stackAlloc(d, (size_t)np + 1);
    apart_axis = khz_stackAlloc(d, (size_t)(3 * np + 1) * sizeof(double));
    if (!apart_axis) apart = NULL;
  }
  if (apart) {
    memset(apart, 0, (size_t)np + 1);
    for (int woke = 1; woke && khz_anyAsleep(d);) {
      woke = 0;
      for (int k = 0, last = 0; k < np; k++) {
        int g0 = (int)(pairs[k] >> 32), g1 = (int)(pairs[k] & 0xffffffffu);
        int b0 = m->geom_body[g0], b1 = m->geom_body[g1];
        if (apart[k] || !khz_pairMixed(m, d, b0, b1)) continue;
        khzColOut out = {pt, 0, ptcap, 0, work, cm->maxvert, {0, 0, 0}, {0, 0, 0}};
        while (last < nlast && last_pair[last] < pairs[k]) last++;
        int was_apart = last < nlast && last_pair[last] == pairs[k];
        if (was_apart) khzu_copy3(apart_axis + 3 * k, last_axis + 3 * last);
        if (coherent_pair(m, frame, &views, g0, g1, &out, apart_axis + 3 * k, &was_apart)) {
          khz_wake(m, d, d->body_sleep[b0] ? b0 : b1);
          woke = 1;
        } else {
          apart[k] = 1 + was_apart; /* no contact this step: nothing to do below either */
        }
      }
    }
    for (int s = 0; s < P && !fast; s++) { /* room: for the narrow phase's contacts */
      const khzPairState *ps = &d->pair[s];
      if (ps->geom[0] >= 0 && ps->geom[0] < ps->geom[1] && ps->geom[1] < m->ngeom &&
          khz_pairAsleep(m, d, m->geom_body[ps->geom[0]], m->geom_body[ps->geom[1]]))
        room--;
    }
    /* the sleeping pairs of the last step's list stay listed, frozen, at the
     * front (in place: the point ranges grow with the contacts' order) */
    for (int i = 0; i < nkept && khz_anyAsleep(d); i++) {
      khzContact *c = &d->contact[i];
      if (!khz_pairAsleep(m, d, c->body[0], c->body[1]) || c->slot < 0) continue;
      if (c->point_adr != d->ncpoint) {
        memmove(&d->cpoint[d->ncpoint], &d->cpoint[c->point_adr], (size_t)c->npoint * sizeof *d->cpoint);
        c->deepest += d->ncpoint - c->point_adr;
        c->point_adr = d->ncpoint;
      }
      if (i != d->ncontact) d->contact[d->ncontact] = *c;
      d->ncontact++;
      d->ncpoint += c->npoint;
    }
    room += d->ncontact; /* their slots were counted above */
  }
  int frozen = d->ncontact;

  /* contact reuse: the last pass's references (ascending), this pass's
   * written to the other half */
  int reuse = d->reuse_bound > 0 && d->reuse_pair, rh = d->reuse_half, rlast = reuse ? d->reuse_n : 0, rnext = 0;
  size_t PK = (size_t)P * (size_t)K;
  const khzReusePair *rlast_pair = reuse ? d->reuse_pair + (size_t)rh * P : NULL;
  const khzReusePoint *rlast_point = reuse ? d->reuse_point + (size_t)rh * PK : NULL;
  khzReusePair *rnext_pair = reuse ? d->reuse_pair + (size_t)(1 - rh) * P : NULL;
  khzReusePoint *rnext_point = reuse ? d->reuse_point + (size_t)(1 - rh) * PK : NULL;
  d->reuse_count = 0;

  /* with threads (khz_setThreads): the pairs to collide listed first, with
   * what the loop below would give each (its last direction apart, its
   * reference), their views made, then their narrow phases made on the
   * threads; the loop takes the answers in pair order */
  collide_task *task = NULL;
  if (views.shape && khz_poolThreads(d) > 1) task = khz_poolTasks(d, sizeof *task, np);
  if (task) {
    int nt = 0;
    for (int k = 0, last = 0, rl = 0; k < np; k++) {
      int g0 = (int)(pairs[k] >> 32), g1 = (int)(pairs[k] & 0xffffffffu);
      if (apart && (apart[k] || khz_pairAsleep(m, d, m->geom_body[g0], m->geom_body[g1]))) continue;
      collide_task *t = &task[nt++];
      t->g0 = g0, t->g1 = g1;
      while (last < nlast && last_pair[last] < pairs[k]) last++;
      t->was_apart = last < nlast && last_pair[last] == pairs[k];
      if (t->was_apart) khzu_copy3(t->axis, last_axis + 3 * last);
      t->reuse_at = -1;
      if (reuse) {
        while (rl < rlast && rlast_pair[rl].key < pairs[k]) rl++;
        if (rl < rlast && rlast_pair[rl].key == pairs[k]) t->reuse_at = rl;
      }
      if (cm->geom[g0].shape >= 0 && cm->geom[g1].shape >= 0)
        pass_shape(m, frame, &views, g0), pass_shape(m, frame, &views, g1);
    }
    for (int i = 0; i < khz_poolThreads(d); i++) khz_poolScratch(d, i)->used = 0;
    collide_job job = {m, d, task, frame, views.shape, rlast_pair, rlast_point, ptcap};
    khz_poolRun(d, collide_tasks, &job, nt, 8);
  }

  /* narrow phase, pair by pair in (g0, g1) order; the pairs found apart
   * along a direction at the last pass try it first (a separating axis
   * still separating) */
  for (int k = 0, last = 0, rl = 0, nt = 0; k < np; k++) {
    int g0 = (int)(pairs[k] >> 32), g1 = (int)(pairs[k] & 0xffffffffu);
    if (apart && apart[k] == 2) { /* apart above, along a direction */
      khzu_copy3(next_axis + 3 * nnext, apart_axis + 3 * k);
      next_pair[nnext++] = pairs[k];
    }
    if (apart && (apart[k] || khz_pairAsleep(m, d, m->geom_body[g0], m->geom_body[g1]))) continue;
    khzColOut out = {pt, 0, ptcap, 0, work, cm->maxvert, {0, 0, 0}, {0, 0, 0}};
    double *axis = next_axis + 3 * nnext;
    int reused = -1; /* the reference's index when the pair keeps it */
    const collide_task *t = task ? &task[nt++] : NULL;
    if (t && t->result >= 0) { /* made on a thread */
      if (t->was_apart) khzu_copy3(axis, t->axis);
      if (!t->result) {
        if (t->was_apart) next_pair[nnext++] = pairs[k];
        continue;
      }
      reused = t->reused;
      out.pt = (khzColPoint *)t->pt, out.npt = t->npt, out.overflow = t->overflow;
      khzu_copy3(out.normal, t->normal);
      full |= t->trimmed;
    } else {
      while (last < nlast && last_pair[last] < pairs[k]) last++;
      int was_apart = last < nlast && last_pair[last] == pairs[k];
      if (was_apart) khzu_copy3(axis, last_axis + 3 * last);
      if (reuse) {
        while (rl < rlast && rlast_pair[rl].key < pairs[k]) rl++;
        if (rl < rlast && rlast_pair[rl].key == pairs[k] &&
            reuse_contact(&rlast_pair[rl], rlast_point + (size_t)rl * K, frame + 12 * g0, frame + 12 * g1,
                          d->reuse_bound, &out))
          reused = rl;
      }
      if (reused < 0 && !coherent_pair(m, frame, &views, g0, g1, &out, axis, &was_apart)) {
        if (was_apart) next_pair[nnext++] = pairs[k];
        continue;
      }
    }
    full |= out.overflow > 0;
    if (d->ncontact >= room) {
      full = 1;
      continue;
    }
    if (out.npt > K) {
      keep_deepest(&out, K, work);
      full = 1;
    }
    if (reuse && rnext < P) { /* the reference for the next pass: kept, or this answer */
      if (reused >= 0) {
        rnext_pair[rnext] = rlast_pair[reused];
        memcpy(rnext_point + (size_t)rnext * K, rlast_point + (size_t)reused * K,
               (size_t)rlast_pair[reused].npt * sizeof(khzReusePoint));
        d->reuse_count++;
      } else {
        reuse_keep(&out, frame + 12 * g0, frame + 12 * g1, pairs[k], &rnext_pair[rnext],
                   rnext_point + (size_t)rnext * K);
      }
      rnext++;
    }

    /* the contact and its points */
    khzContact *c = &d->contact[d->ncontact];
    c->geom[0] = g0, c->geom[1] = g1;
    c->body[0] = m->geom_body[g0], c->body[1] = m->geom_body[g1];
    khzu_copy3(c->normal, out.normal);
    c->point_adr = d->ncpoint;
    c->npoint = out.npt;
    c->deepest = d->ncpoint;
    c->slot = -1;
    const double *x0 = d->xpos + 3 * c->body[0], *r0 = d->xrot + 9 * c->body[0];
    const double *x1 = d->xpos + 3 * c->body[1], *r1 = d->xrot + 9 * c->body[1];
    for (int i = 0; i < out.npt; i++) {
      khzContactPoint *p = &d->cpoint[d->ncpoint + i];
      double rel[3];
      memset(p, 0, sizeof *p);
      khzu_copy3(p->pos, out.pt[i].pos);
      p->depth = out.pt[i].depth;
      p->weight = out.pt[i].weight;
      khzu_sub3(rel, p->pos, x0);
      khzu_mulMatTVec3(p->local[0], r0, rel);
      khzu_sub3(rel, p->pos, x1);
      khzu_mulMatTVec3(p->local[1], r1, rel);
      p->feature = out.pt[i].feature;
      round_point(m, c, d->xrot, d->xpos, p);
      if (p->depth > d->cpoint[c->deepest].depth) c->deepest = d->ncpoint + i;
    }
    d->ncpoint += out.npt;
    d->ncontact++;
  }
  d->napart = nnext, d->apart_half = 1 - h;
  if (reuse) d->reuse_n = rnext, d->reuse_half = 1 - rh;

  /* persistent slots (slot -1 only when the stack is exhausted, counted as
   * KHZ_WARN_STACK); after a quiet pass every slot is a sleeping pair's,
   * kept as it is, and a quiet pass adds none: nothing to assign */
  if (!fast) assign_slots(m, d, frozen);
  if (full) d->warning[KHZ_WARN_CONTACTFULL]++;
  khz_stackFree(d, mark);
  /* the contact stages of this step see the awake pairs only; the step puts
   * the sleeping ones back in front at its end (khz_islandUpdate) */
  d->ncontact_asleep = d->contact_shift = frozen;
  d->contact += frozen;
  d->ncontact -= frozen;
  return d->ncontact;
}

/* Between steps the list is left whole, the sleeping pairs in front: the
 * shift above is for the contact stages of a step only (khz_islandUpdate
 * undoes it there). Left shifted, the next step forgot it and wrote up to
 * `frozen` pairs past the end of the contact array. */
int khz_collide(const khzModel *m, khzData *d) {
  khz_collideStep(m, d);
  d->contact -= d->contact_shift, d->ncontact += d->contact_shift, d->contact_shift = 0;
  d->ncontact_kept = khz_anyAsleep(d) ? d->ncontact : 0; /* the next call lists them again */
  return d->ncontact;
}
