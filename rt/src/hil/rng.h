/* rng.h — the generator's hot path inline, for the sensors' per-tick draws
 * (hil.c); the public khz_rngNext and khz_rngNormal (khz/hil.h) are these.
 * Owner: rng.c (the algorithms and their references are described there). */
#ifndef KHZ_HIL_RNG_H
#define KHZ_HIL_RNG_H

#include <math.h>
#include <stdint.h>

#include "khz/hil.h"

#define KHZ_ZIG_N 128
/* strip i's right edge x_i, f(x_i), and x_i 2^-55 (a signed 56-bit
 * integer times it is the candidate) */
extern double khz_zig_x[KHZ_ZIG_N + 1], khz_zig_f[KHZ_ZIG_N + 1], khz_zig_w[KHZ_ZIG_N];
/* the batched draws' fast path reads one entry: x_i 2^-24 and x_{i+1} */
typedef struct khzZigStrip {
  double w32, next;
} khzZigStrip;
extern khzZigStrip khz_zig_strip[KHZ_ZIG_N];

/* the ziggurat's rare cases: the wedge test and the tail (rng.c) */
double khz_rngNormalSlow(khzRng *r, int strip, double x);

static inline uint64_t khz_rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256** on a state held in four variables */
#define KHZ_XOSHIRO_NEXT(out, s0, s1, s2, s3)      \
  do {                                             \
    uint64_t t_ = (s1) << 17;                      \
    (out) = khz_rotl64((s1) * 5, 7) * 9;           \
    (s2) ^= (s0), (s3) ^= (s1), (s1) ^= (s2), (s0) ^= (s3); \
    (s2) ^= t_, (s3) = khz_rotl64((s3), 45);       \
  } while (0)

static inline uint64_t khz_rngNextInline(khzRng *r) {
  uint64_t out, s0 = r->s[0], s1 = r->s[1], s2 = r->s[2], s3 = r->s[3];
  KHZ_XOSHIRO_NEXT(out, s0, s1, s2, s3);
  r->s[0] = s0, r->s[1] = s1, r->s[2] = s2, r->s[3] = s3;
  return out;
}

/* one 64-bit draw b: the strip from its 7 low bits, a signed uniform from
 * its 56 high bits (an arithmetic shift and one conversion); inside the
 * next strip's width (about 99 % of draws) the candidate is the result */
static inline double khz_zigCandidate(uint64_t b, int *strip) {
  int i = (int)(b & (KHZ_ZIG_N - 1));
  *strip = i;
  return (double)((int64_t)b >> 8) * khz_zig_w[i];
}

static inline double khz_rngNormalInline(khzRng *r) {
  int i;
  double x = khz_zigCandidate(khz_rngNextInline(r), &i);
  if (fabs(x) < khz_zig_x[i + 1]) return x;
  return khz_rngNormalSlow(r, i, x);
}

/* the same from 32 bits h: the strip from its 7 low bits, a signed
 * uniform from its 25 high bits (steps of 2^-24 of the strip's width) */
static inline double khz_zigCandidate32(uint32_t h, int *strip) {
  int i = (int)(h & (KHZ_ZIG_N - 1));
  *strip = i;
  return (double)((int32_t)h >> 7) * khz_zig_strip[i].w32;
}

/* n normal deviates into z, two from each 64-bit draw (its low half, then
 * its high half), the generator's state in registers between draws */
static inline void khz_rngNormals(khzRng *r, double *z, int n) {
  uint64_t s0 = r->s[0], s1 = r->s[1], s2 = r->s[2], s3 = r->s[3];
  /* one deviate from 32 bits; the rare case draws from the stored state */
#define KHZ_ZIG_ONE(h, out)                                        \
  do {                                                             \
    int i_;                                                        \
    double x_ = khz_zigCandidate32((h), &i_);                      \
    if (fabs(x_) < khz_zig_strip[i_].next) {                       \
      (out) = x_;                                                  \
    } else {                                                       \
      r->s[0] = s0, r->s[1] = s1, r->s[2] = s2, r->s[3] = s3;      \
      (out) = khz_rngNormalSlow(r, i_, x_);                        \
      s0 = r->s[0], s1 = r->s[1], s2 = r->s[2], s3 = r->s[3];      \
    }                                                              \
  } while (0)
  for (int k = 0; k < n; k += 2) {
    uint64_t b;
    KHZ_XOSHIRO_NEXT(b, s0, s1, s2, s3);
    KHZ_ZIG_ONE((uint32_t)b, z[k]);
    if (k + 1 < n) KHZ_ZIG_ONE((uint32_t)(b >> 32), z[k + 1]);
  }
#undef KHZ_ZIG_ONE
  r->s[0] = s0, r->s[1] = s1, r->s[2] = s2, r->s[3] = s3;
}

#endif
