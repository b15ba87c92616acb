/* data.c — the mutable state (khzData): one buffer sized from the model, the
 * state field list (KHZ_STATE_FIELDS) turned into copy / hash / save, and the
 * mark/free scratch stack that per-step temporaries come from. Everything in
 * rt/ may call it; it calls only the kinematics (after a restore). Its sizes
 * come from the model (khz_compile); the reset, which also re-anchors joint
 * friction, is in step.c. */
#include <stdlib.h>
#include <string.h>

#include "carve.h"
#include "collision/collision.h"
#include "contact/penalty.h"
#include "dynamics.h"
#include "island.h"
#include "khz/khz.h"
#include "peg/peg.h"
#include "pool.h"


static void layout_data(const khzModel *m, khzData *d, carver *c) {
  size_t nb = (size_t)m->nbody, nv = (size_t)m->nv;
#define KHZ_X_CARVE(type, name, count) d->name = carve(c, (size_t)(count) * sizeof(type));
  KHZ_STATE_FIELDS(KHZ_X_CARVE)
#undef KHZ_X_CARVE
#define D(n) carve(c, (n) * sizeof(double))
  d->qdd = D(nv);
  d->tau_applied = D(nv);
  d->tau_passive = D(nv);
  d->xpos = D(3 * nb);
  d->xrot = D(9 * nb);
  d->xcom = D(3 * nb);
  d->cvel = D(6 * nb);
  d->vtree = D(6 * nb);
  d->cinert = D(KHZ_CINERT * nb);
  d->cbias = D(6 * nb);
  d->IA = D(36 * nb);
  d->pA = D(6 * nb);
  d->U = D(36 * nb);
  d->Dinv = D(36 * nb);
  d->u = D(6 * nb);
  d->acc = D(6 * nb);
  d->fext = D(6 * nb);
  d->S = D(36 * nb);
  d->kin_q = D((size_t)m->nq);
  d->kin_qd = D(nv);
  d->tree_resp = D(khz_penaltyTreeRespDoubles(m));
  d->IA_handed = D(36 * nb);
#undef D
  d->tree_resp_at = carve(c, 3 * nb * sizeof(int));
  d->contact = carve(c, (size_t)m->npair_max * sizeof(khzContact));
  d->cpoint = carve(c, (size_t)m->npair_max * (size_t)m->max_points * sizeof(khzContactPoint));
  d->peg_stats = carve(c, sizeof(khzPegStats));
  size_t npc = (size_t)khz_collisionPairCap(m);
  d->apart_pair = carve(c, 2 * npc * sizeof(uint64_t));
  d->apart_axis = carve(c, 6 * npc * sizeof(double));
  const khzColModel *cm = m->collision;
  d->sweep_order = carve(c, ((cm ? (size_t)cm->nbounded : 0) + 1) * sizeof(int));
  d->stack = carve(c, d->stack_size);
}

khzData *khz_makeData(const khzModel *m, size_t stack_bytes) {
  khzData *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  d->stack_size = stack_bytes ? stack_bytes : m->stack_bytes;
  carver c = {0};
  layout_data(m, d, &c);
  d->nbuffer = c.used + 64;
  d->buffer = calloc(1, d->nbuffer);
  if (!d->buffer) {
    free(d);
    return NULL;
  }
  c.base = (unsigned char *)(((uintptr_t)d->buffer + 63) & ~(uintptr_t)63);
  c.used = 0;
  layout_data(m, d, &c);
  d->peg_stats->status = -1; /* no PEG step yet: no solve */
  khz_dynamicsInitData(m, d);
  khz_resetData(m, d);
  return d;
}

void khz_deleteData(khzData **d_p) {
  if (!d_p || !*d_p) return;
  khz_poolFree(*d_p);
  free((*d_p)->buffer);
  free((*d_p)->reuse_pair);
  free((*d_p)->reuse_point);
  free(*d_p);
  *d_p = NULL;
}

/* the kinematics of a state just written in, sleeping bodies included: the
 * forward pass keeps a sleeping body's last pose, which is not the new
 * state's (they would be collided and published where the data's previous
 * state had them) */
static void kinematics_all(const khzModel *m, khzData *d) {
  size_t mark = khz_stackMark(d), n = (size_t)m->nbody * sizeof(int);
  int *sleep = khz_stackAlloc(d, n);
  if (sleep) {
    memcpy(sleep, d->body_sleep, n);
    memset(d->body_sleep, 0, n);
  }
  khz_kinematics(m, d);
  if (sleep) memcpy(d->body_sleep, sleep, n);
  khz_stackFree(d, mark);
}

void khz_copyState(const khzModel *m, khzData *dst, const khzData *src) {
  dst->time = src->time;
#define KHZ_X_COPY(type, name, count) \
  memcpy(dst->name, src->name, (size_t)(count) * sizeof(type));
  KHZ_STATE_FIELDS(KHZ_X_COPY)
#undef KHZ_X_COPY
  dst->ncontact_kept = 0; /* dst's contact list is not src's: sleeping pairs are listed again
                             when they wake */
  dst->quiet_ready = 0;   /* other poses: the next pass runs the broad phase */
  dst->reuse_n = 0;       /* and every narrow phase */
  dst->aba_held = 0;      /* dst's held inertias (dynamics.c) were at its own q */
  if (khz_anyAsleep(dst)) kinematics_all(m, dst); /* the next pass skips sleeping bodies */
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* the sleep fields, the LCP's warm-start record, the tree limits' kept
 * Ritz vectors and the rolling friction's anchors count only when some
 * entry is non-zero, so that a run without sleeping (or without the LCP
 * method, the tree limits, or rolling friction) hashes as it did before
 * the fields existed */
static int hashed(const char *name, const void *p, size_t n) {
  if (strcmp(name, "body_sleep") != 0 && strcmp(name, "body_idle") != 0 && strcmp(name, "lcp_warm") != 0 &&
      strcmp(name, "rate_warm") != 0 && strcmp(name, "pair_turn") != 0)
    return 1;
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i]) return 1;
  return 0;
}

uint64_t khz_hashState(const khzModel *m, const khzData *d) {
  uint64_t h = 14695981039346656037ull;
  h = fnv1a(h, &d->time, sizeof d->time);
#define KHZ_X_HASH(type, name, count)                                          \
  if (hashed(#name, d->name, (size_t)(count) * sizeof(type)))                  \
    h = fnv1a(h, d->name, (size_t)(count) * sizeof(type));
  KHZ_STATE_FIELDS(KHZ_X_HASH)
#undef KHZ_X_HASH
  return h;
}

uint64_t khz_hashSavedState(const khzModel *m, const void *saved) {
  const unsigned char *p = saved;
  uint64_t h = fnv1a(14695981039346656037ull, p, sizeof(double));
  p += sizeof(double);
#define KHZ_X_HASH_SAVED(type, name, count)                        \
  if (hashed(#name, p, (size_t)(count) * sizeof(type)))              \
    h = fnv1a(h, p, (size_t)(count) * sizeof(type));                \
  p += (size_t)(count) * sizeof(type);
  KHZ_STATE_FIELDS(KHZ_X_HASH_SAVED)
#undef KHZ_X_HASH_SAVED
  return h;
}

size_t khz_stateSize(const khzModel *m) {
  size_t n = sizeof(double);
#define KHZ_X_SIZE(type, name, count) n += (size_t)(count) * sizeof(type);
  KHZ_STATE_FIELDS(KHZ_X_SIZE)
#undef KHZ_X_SIZE
  return n;
}

void khz_saveState(const khzModel *m, const khzData *d, void *out) {
  unsigned char *p = out;
  memcpy(p, &d->time, sizeof d->time);
  p += sizeof d->time;
#define KHZ_X_SAVE(type, name, count)                     \
  memcpy(p, d->name, (size_t)(count) * sizeof(type));     \
  p += (size_t)(count) * sizeof(type);
  KHZ_STATE_FIELDS(KHZ_X_SAVE)
#undef KHZ_X_SAVE
}

void khz_restoreState(const khzModel *m, khzData *d, const void *in) {
  const unsigned char *p = in;
  memcpy(&d->time, p, sizeof d->time);
  p += sizeof d->time;
#define KHZ_X_RESTORE(type, name, count)                  \
  memcpy(d->name, p, (size_t)(count) * sizeof(type));     \
  p += (size_t)(count) * sizeof(type);
  KHZ_STATE_FIELDS(KHZ_X_RESTORE)
#undef KHZ_X_RESTORE
  d->ncontact_kept = 0; /* the contact list is not the restored state's */
  d->quiet_ready = 0;
  d->reuse_n = 0;
  kinematics_all(m, d);
}

void *khz_stackAlloc(khzData *d, size_t bytes) {
  size_t off = (d->stack_top + 63) & ~(size_t)63;
  if (off + bytes > d->stack_size) {
    d->warning[KHZ_WARN_STACK]++;
    return NULL;
  }
  d->stack_top = off + bytes;
  return d->stack + off;
}

size_t khz_stackMark(const khzData *d) { return d->stack_top; }

void khz_stackFree(khzData *d, size_t mark) { d->stack_top = mark; }

const char *khz_warningName(int warning) {
  static const char *const names[KHZ_NWARNING] = {"stack", "badstate", "effort", "badctrl",
                                                  "contactfull", "impulse", "lcp"};
  return warning >= 0 && warning < KHZ_NWARNING ? names[warning] : NULL;
}
