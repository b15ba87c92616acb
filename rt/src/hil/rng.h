/* rng.h — the generator's hot path inline, for the sensors' per-tick draws
 * (hil.c); the public khz_rngNext and khz_rngNormal (khz/hil.h) are these.
 * Owner: rng.c (the algorithms and their references are described there). */
#ifndef KHZ_HIL_RNG_H
#define KHZ_HIL_RNG_H

#include <math.h>
#include <stdint.h>

#include "khz/hil.h"

#define KHZ_ZIG_N 512
/* the tables are the library's own (hidden): the library is built as
 * position-independent code, where a default-visibility table is reached
 * through the GOT, an extra load in every draw */
#define KHZ_ZIG_TABLE __attribute__((visibility("hidden")))
/* strip i's right edge x_i, f(x_i), and x_i 2^-54 (a signed 55-bit
 * integer times it is the candidate) */
extern KHZ_ZIG_TABLE double khz_zig_x[KHZ_ZIG_N + 1], khz_zig_f[KHZ_ZIG_N + 1],
    khz_zig_w[KHZ_ZIG_N];
/* the batched draws' fast path reads two 8-byte entries (indexed without
 * a shift): a signed 23-bit j is inside the next strip when -k <= j < k
 * (one unsigned compare against k2 = 2k, k = floor(2^22 x_{i+1} / x_i)),
 * and then j khz_zig_w22[i] = j x_i 2^-22 is the deviate */
typedef struct khzZigBound {
  int32_t k, k2;
} khzZigBound;
/* both fast-path tables in one object: one base address serves both (as
 * two arrays, GCC kept reloading each one's address in the batch loop, a
 * lea per deviate) */
typedef struct khzZigFast {
  khzZigBound bound[KHZ_ZIG_N];
  double w22[KHZ_ZIG_N];
} khzZigFast;
extern KHZ_ZIG_TABLE khzZigFast khz_zig_fast;
#define khz_zig_bound (khz_zig_fast.bound)
#define khz_zig_w22 (khz_zig_fast.w22)

/* the ziggurat's rare cases: the wedge test and the tail (rng.c); the
 * batch's from the 32 bits h it rejected */
double khz_rngNormalSlow(khzRng *r, int strip, double x);
double khz_rngNormalRetry(khzRng *r, uint32_t h);

static inline uint64_t khz_rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoroshiro128++ (Blackman and Vigna 2021, the "++" scrambler: rotl(s0 +
 * s1, 17) + s0; then s1 ^= s0, s0 = rotl(s0, 49) ^ s1 ^ (s1 << 21), s1 =
 * rotl(s1, 28)) on a state held in two variables: two words to load and
 * store per sensor and a shorter chain than xoshiro256**'s */
#define KHZ_XOROSHIRO_NEXT(out, s0, s1)                               \
  do {                                                                \
    (out) = khz_rotl64((s0) + (s1), 17) + (s0);                       \
    (s1) ^= (s0);                                                     \
    (s0) = khz_rotl64((s0), 49) ^ (s1) ^ ((s1) << 21);                \
    (s1) = khz_rotl64((s1), 28);                                      \
  } while (0)

static inline uint64_t khz_rngNextInline(khzRng *r) {
  uint64_t out, s0 = r->s[0], s1 = r->s[1];
  KHZ_XOROSHIRO_NEXT(out, s0, s1);
  r->s[0] = s0, r->s[1] = s1;
  return out;
}

/* one 64-bit draw b: the strip from its 9 low bits, a signed uniform from
 * its 55 high bits (an arithmetic shift and one conversion); inside the
 * next strip's width (99.25 % of draws) the candidate is the result */
static inline double khz_zigCandidate(uint64_t b, int *strip) {
  int i = (int)(b & (KHZ_ZIG_N - 1));
  *strip = i;
  return (double)((int64_t)b >> 9) * khz_zig_w[i];
}

static inline double khz_rngNormalInline(khzRng *r) {
  int i;
  double x = khz_zigCandidate(khz_rngNextInline(r), &i);
  if (fabs(x) < khz_zig_x[i + 1]) return x;
  return khz_rngNormalSlow(r, i, x);
}

/* n (<= 64) deviates into z, two from each 64-bit draw (its low half, then
 * its high half; 32 bits h each: the strip from its 9 low bits, a signed
 * 23-bit uniform j from the rest, steps of 2^-22 of the strip's width),
 * the generator's state in registers and no call in the loop: a draw
 * outside its strip's inner part leaves h in z and its bit in the mask
 * returned, for khz_rngNormalRetry after the batch (the fast path marked
 * likely: GCC otherwise lays it out of line, two jumps a deviate) */
static inline uint64_t khz_zigBatch(khzRng *r, double *z, int n) {
  uint64_t s0 = r->s[0], s1 = r->s[1], miss = 0;
#define KHZ_ZIG_ONE(h, k)                                              \
  do {                                                                 \
    uint32_t h_ = (h), i_ = h_ & (KHZ_ZIG_N - 1);                      \
    int32_t j_ = (int32_t)h_ >> 9;                                     \
    if (__builtin_expect((uint32_t)(j_ + khz_zig_bound[i_].k) <         \
                         (uint32_t)khz_zig_bound[i_].k2, 1))           \
      z[k] = (double)j_ * khz_zig_w22[i_];                             \
    else                                                               \
      z[k] = (double)h_, miss |= (uint64_t)1 << (k);                   \
  } while (0)
  int k = 0;
  for (; k + 1 < n; k += 2) {
    uint64_t b;
    KHZ_XOROSHIRO_NEXT(b, s0, s1);
    KHZ_ZIG_ONE((uint32_t)b, k);
    KHZ_ZIG_ONE((uint32_t)(b >> 32), k + 1);
  }
  if (k < n) {
    uint64_t b;
    KHZ_XOROSHIRO_NEXT(b, s0, s1);
    KHZ_ZIG_ONE((uint32_t)b, k);
  }
#undef KHZ_ZIG_ONE
  r->s[0] = s0, r->s[1] = s1;
  return miss;
}

/* n normal deviates into z: batches of up to 64, then the rejected draws
 * of each again from the stream that follows (rng.c) */
static inline void khz_rngNormals(khzRng *r, double *z, int n) {
  for (int c = 0; c < n; c += 64) {
    int m = n - c < 64 ? n - c : 64;
    uint64_t miss = khz_zigBatch(r, z + c, m);
    while (miss) {
      int k = __builtin_ctzll(miss);
      miss &= miss - 1;
      z[c + k] = khz_rngNormalRetry(r, (uint32_t)z[c + k]);
    }
  }
}

#endif
