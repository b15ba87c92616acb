/* hist.h — preallocated log-linear histograms of durations (ns), written by the
 * loop thread only and read by any thread (relaxed atomics: a reader may see a
 * count one tick older than another, never a torn value).
 *
 * Bins are HdrHistogram-like: values below 64 ns have one bin each; above, each
 * power of two is split into 64 bins, so a bin is at most 1/64 (1.6 %) wide
 * relative to its value. 36 powers of two cover up to ~1.2 hours.
 */
#ifndef KHZ_LOOP_HIST_H
#define KHZ_LOOP_HIST_H

#include <stdatomic.h>
#include <stdint.h>

#define KHZ_HIST_SUB 64
#define KHZ_HIST_POW 36
#define KHZ_HIST_BINS (KHZ_HIST_SUB * (KHZ_HIST_POW + 1))

typedef struct khzHist {
  _Atomic uint64_t bin[KHZ_HIST_BINS];
  _Atomic uint64_t count;
  _Atomic int64_t max, min;
  _Atomic double sum; /* single writer: plain load + store */
} khzHist;

/* bin index of v >= 0 */
static inline int khz_hist_bin(int64_t v) {
  if (v < 0) v = 0;
  uint64_t u = (uint64_t)v;
  if (u < 2 * KHZ_HIST_SUB) return (int)u;
  int e = 63 - __builtin_clzll(u); /* 2^e <= u < 2^(e+1), e >= 7 */
  int shift = e - 6;
  int b = (shift + 1) * KHZ_HIST_SUB + (int)((u >> shift) - KHZ_HIST_SUB);
  return b < KHZ_HIST_BINS ? b : KHZ_HIST_BINS - 1;
}

/* the largest value that falls into bin b */
int64_t khz_hist_upper(int b);

/* records one value (loop thread only; no locked instructions) */
static inline void khz_hist_add(khzHist *h, int64_t v) {
  _Atomic uint64_t *c = &h->bin[khz_hist_bin(v)];
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  uint64_t n = atomic_load_explicit(&h->count, memory_order_relaxed);
  if (n == 0 || v > atomic_load_explicit(&h->max, memory_order_relaxed))
    atomic_store_explicit(&h->max, v, memory_order_relaxed);
  if (n == 0 || v < atomic_load_explicit(&h->min, memory_order_relaxed))
    atomic_store_explicit(&h->min, v, memory_order_relaxed);
  atomic_store_explicit(&h->sum, atomic_load_explicit(&h->sum, memory_order_relaxed) + (double)v,
                        memory_order_relaxed);
  atomic_store_explicit(&h->count, n + 1, memory_order_relaxed);
}

/* zeroes every bin (loop thread) */
void khz_hist_reset(khzHist *h);

/* value at quantile q in [0, 1] (upper bin edge, capped by the maximum) */
int64_t khz_hist_quantile(const khzHist *h, double q);

#endif /* KHZ_LOOP_HIST_H */
