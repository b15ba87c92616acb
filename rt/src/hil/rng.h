/* rng.h — the generator's hot path inline, for the sensors' per-tick draws
 * (hil.c); the public khz_rngNext and khz_rngNormal (khz/hil.h) are these.
 * Owner: rng.c (the algorithms and their references are described there). */
#ifndef KHZ_HIL_RNG_H
#define KHZ_HIL_RNG_H

#include <math.h>
#include <stdint.h>

#include "khz/hil.h"

#define KHZ_ZIG_N 128
extern double khz_zig_x[KHZ_ZIG_N + 1], khz_zig_f[KHZ_ZIG_N + 1];

/* the ziggurat's rare cases: the wedge test and the tail (rng.c) */
double khz_rngNormalSlow(khzRng *r, int strip, double u, double x);

static inline uint64_t khz_rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256** */
static inline uint64_t khz_rngNextInline(khzRng *r) {
  uint64_t *s = r->s, out = khz_rotl64(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = khz_rotl64(s[3], 45);
  return out;
}

/* one 64-bit draw: the strip (7 low bits) and a signed uniform (53 high
 * bits); inside the next strip's width (about 99 % of draws) it is the result */
static inline double khz_rngNormalInline(khzRng *r) {
  uint64_t b = khz_rngNextInline(r);
  int i = (int)(b & (KHZ_ZIG_N - 1));
  /* (b >> 11) < 2^53: the signed conversion is exact and one instruction */
  double u = 2 * ((double)(int64_t)(b >> 11) * 0x1.0p-53) - 1, x = u * khz_zig_x[i];
  if (fabs(x) < khz_zig_x[i + 1]) return x;
  return khz_rngNormalSlow(r, i, u, x);
}

#endif
