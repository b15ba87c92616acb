/* rng.c — the seeded generator of every HIL noise source (khz/hil.h):
 * xoshiro256** (Blackman and Vigna, "Scrambled linear pseudorandom number
 * generators", 2021), its 256-bit state filled by splitmix64 from (seed,
 * stream), so that each sensor draws its own reproducible sequence.
 */
#include <math.h>

#include "khz/hil.h"

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void khz_rngSeed(khzRng *r, uint64_t seed, uint64_t stream) {
  uint64_t x = seed ^ (stream * 0xd1342543de82ef95ull);
  for (int k = 0; k < 4; k++) r->s[k] = splitmix64(&x);
}

uint64_t khz_rngNext(khzRng *r) {
  uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

double khz_rngUniform(khzRng *r) { return (double)(khz_rngNext(r) >> 11) * 0x1.0p-53; }

/* Box-Muller from two uniforms; u1 in (0, 1] so that log(u1) is finite */
double khz_rngNormal(khzRng *r) {
  double u1 = 1.0 - khz_rngUniform(r), u2 = khz_rngUniform(r);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
