/* handoff.h — the wait-free hand-off between the loop thread and the I/O side:
 * a single-producer single-consumer ring of fixed-size slots (states, requests,
 * replies) and a latest-wins triple buffer (commands, haptic inputs).
 *
 * Both are preallocated when the loop is made; neither ever blocks or
 * allocates. The ring's producer finds it full and drops (the caller counts);
 * the triple buffer's writer replaces an unread value (counted in
 * `overwritten`). Patterns: realtime_tools' RealtimePublisher (the ring) and
 * RealtimeBuffer (latest wins), with C11 atomics instead of try-locks.
 */
#ifndef KHZ_LOOP_HANDOFF_H
#define KHZ_LOOP_HANDOFF_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ SPSC ring -- */

typedef struct khzRing {
  _Alignas(64) _Atomic size_t head; /* written by the producer only */
  _Alignas(64) _Atomic size_t tail; /* written by the consumer only */
  _Alignas(64) size_t mask;         /* capacity - 1 (capacity a power of two) */
  size_t slot_size;
  unsigned char *slots;
} khzRing;

/* Allocates capacity (rounded up to a power of two) slots of slot_size bytes,
 * zeroed and touched. Returns 0 / -1 (out of memory). */
int khz_ring_init(khzRing *r, size_t capacity, size_t slot_size);
void khz_ring_free(khzRing *r);

/* Producer: the slot to fill next, or NULL when the ring is full. */
static inline void *khz_ring_claim(khzRing *r) {
  size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
  size_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
  if (h - t > r->mask) return NULL;
  return r->slots + (h & r->mask) * r->slot_size;
}

/* Producer: hands the claimed slot to the consumer. */
static inline void khz_ring_commit(khzRing *r) {
  size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
  atomic_store_explicit(&r->head, h + 1, memory_order_release);
}

/* Consumer: the oldest committed slot, or NULL when empty. */
static inline void *khz_ring_peek(khzRing *r) {
  size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
  size_t h = atomic_load_explicit(&r->head, memory_order_acquire);
  if (t == h) return NULL;
  return r->slots + (t & r->mask) * r->slot_size;
}

/* Consumer: gives the peeked slot back to the producer. */
static inline void khz_ring_release(khzRing *r) {
  size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
  atomic_store_explicit(&r->tail, t + 1, memory_order_release);
}

/* Slot i of the ring's storage (for setting up per-slot pointers). */
static inline void *khz_ring_slot(khzRing *r, size_t i) {
  return r->slots + i * r->slot_size;
}

static inline size_t khz_ring_capacity(const khzRing *r) { return r->mask + 1; }

/* ------------------------------------------------ latest-wins triple buffer -- */

/* Three slots: the writer owns `back`, the reader owns `front`, and `middle`
 * (with a fresh bit) is exchanged atomically by both. The caller provides the
 * slot storage. */
typedef struct khzLatest {
  _Alignas(64) _Atomic unsigned middle; /* slot index | KHZ_LATEST_FRESH */
  _Alignas(64) unsigned back;           /* writer's */
  _Atomic uint64_t overwritten;         /* commits that replaced an unread value (writer) */
  _Alignas(64) unsigned front;          /* reader's */
} khzLatest;

#define KHZ_LATEST_FRESH 4u

static inline void khz_latest_init(khzLatest *b) {
  atomic_store(&b->middle, 1u);
  b->back = 0;
  b->front = 2;
  atomic_store(&b->overwritten, 0);
}

/* Writer: publishes the back slot; the old middle slot becomes the new back. */
static inline void khz_latest_commit(khzLatest *b) {
  unsigned old = atomic_exchange_explicit(&b->middle, b->back | KHZ_LATEST_FRESH,
                                          memory_order_acq_rel);
  if (old & KHZ_LATEST_FRESH) {
    uint64_t n = atomic_load_explicit(&b->overwritten, memory_order_relaxed);
    atomic_store_explicit(&b->overwritten, n + 1, memory_order_relaxed);
  }
  b->back = old & 3u;
}

/* Reader: when a fresh value was committed, makes it the front slot and returns
 * 1; else returns 0 (the front slot keeps the previous value). */
static inline int khz_latest_take(khzLatest *b) {
  if (!(atomic_load_explicit(&b->middle, memory_order_relaxed) & KHZ_LATEST_FRESH)) return 0;
  unsigned old = atomic_exchange_explicit(&b->middle, b->front, memory_order_acq_rel);
  b->front = old & 3u;
  return 1;
}

#endif /* KHZ_LOOP_HANDOFF_H */
