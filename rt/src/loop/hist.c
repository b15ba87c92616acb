/* hist.c — quantiles of the loop's log-linear histograms (hist.h). */
#include "hist.h"

int64_t khz_hist_upper(int b) {
  if (b < 2 * KHZ_HIST_SUB) return b;
  int shift = b / KHZ_HIST_SUB - 1;
  int64_t sub = b % KHZ_HIST_SUB + KHZ_HIST_SUB;
  return ((sub + 1) << shift) - 1;
}

void khz_hist_reset(khzHist *h) {
  for (int b = 0; b < KHZ_HIST_BINS; b++) atomic_store_explicit(&h->bin[b], 0, memory_order_relaxed);
  atomic_store_explicit(&h->max, 0, memory_order_relaxed);
  atomic_store_explicit(&h->min, 0, memory_order_relaxed);
  atomic_store_explicit(&h->sum, 0.0, memory_order_relaxed);
  atomic_store_explicit(&h->count, 0, memory_order_relaxed);
}

int64_t khz_hist_quantile(const khzHist *h, double q) {
  /* total from the bins (count may run one value ahead of them) */
  uint64_t total = 0;
  for (int b = 0; b < KHZ_HIST_BINS; b++)
    total += atomic_load_explicit(&h->bin[b], memory_order_relaxed);
  if (total == 0) return 0;
  int64_t max = atomic_load_explicit(&h->max, memory_order_relaxed);
  /* rank of the quantile, 1-based: the smallest value with at least q of the values at or below */
  uint64_t rank = (uint64_t)(q * (double)total + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > total) rank = total;
  uint64_t seen = 0;
  for (int b = 0; b < KHZ_HIST_BINS; b++) {
    seen += atomic_load_explicit(&h->bin[b], memory_order_relaxed);
    if (seen >= rank) {
      int64_t v = khz_hist_upper(b);
      return v < max ? v : max;
    }
  }
  return max;
}
