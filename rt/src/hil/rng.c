/* rng.c — the seeded generator of every HIL noise source (khz/hil.h):
 * xoroshiro128++ (Blackman and Vigna, "Scrambled linear pseudorandom number
 * generators", ACM TOMS 47(4), 2021), its 128-bit state filled by
 * splitmix64 from (seed, stream), so that each sensor draws its own
 * reproducible sequence (period 2^128 - 1; splitmix64 never gives two zero
 * words in a row, so the state is never the all-zero one); normal
 * deviates by the ziggurat method.
 */
#include <math.h>
#include <pthread.h>

#include "rng.h"

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void khz_rngSeed(khzRng *r, uint64_t seed, uint64_t stream) {
  khz_rngInit();
  uint64_t x = seed ^ (stream * 0xd1342543de82ef95ull);
  for (int k = 0; k < 2; k++) r->s[k] = splitmix64(&x);
}

uint64_t khz_rngNext(khzRng *r) { return khz_rngNextInline(r); }

double khz_rngUniform(khzRng *r) { return (double)(khz_rngNext(r) >> 11) * 0x1.0p-53; }

/* The ziggurat method (Marsaglia and Tsang, "The Ziggurat Method for
 * Generating Random Variables", J. Stat. Software 5(8), 2000), 512 strips of
 * equal area V under f(x) = exp(-x^2/2): x_1 = R, x_{i+1} =
 * sqrt(-2 ln(V / x_i + f(x_i))), x_512 = 0, and the base strip (the
 * rectangle under f(R) and the tail beyond R) as a rectangle of width
 * V / f(R); R solves the paper's condition for 512 strips (the recursion
 * ends at f(x_511) + V / x_511 = 1, V = R f(R) + the tail's area; the same
 * bisection gives the paper's 128- and 256-strip constants). One draw
 * picks the strip (9 low bits) and a signed uniform (the high bits,
 * disjoint from the strip's): inside the next strip's width (99.25 % of
 * draws) it is the
 * result; otherwise the wedge is tested against f, or the tail sampled by
 * Marsaglia's exponential method. About 5x faster than Box-Muller's log,
 * sqrt and cos, which dominated the sensors' cost. */
#define ZIG_N KHZ_ZIG_N
#define ZIG_R 3.852046150368391
#define ZIG_V 0.002456766351541357

double khz_zig_x[ZIG_N + 1], khz_zig_f[ZIG_N + 1], khz_zig_w[ZIG_N]; /* rng.h */
khzZigFast khz_zig_fast;
static pthread_once_t zig_once = PTHREAD_ONCE_INIT;

static void zig_init(void) {
  khz_zig_x[0] = ZIG_V / exp(-0.5 * ZIG_R * ZIG_R);
  khz_zig_x[1] = ZIG_R;
  for (int i = 1; i < ZIG_N - 1; i++)
    khz_zig_x[i + 1] = sqrt(-2 * log(ZIG_V / khz_zig_x[i] + exp(-0.5 * khz_zig_x[i] * khz_zig_x[i])));
  khz_zig_x[ZIG_N] = 0;
  for (int i = 0; i <= ZIG_N; i++) khz_zig_f[i] = exp(-0.5 * khz_zig_x[i] * khz_zig_x[i]);
  for (int i = 0; i < ZIG_N; i++) {
    khz_zig_w[i] = khz_zig_x[i] * 0x1.0p-54;
    /* |j| 2^-22 x_i < x_{i+1} for every j the fast path takes (floor) */
    int32_t k = (int32_t)floor(0x1.0p22 * khz_zig_x[i + 1] / khz_zig_x[i]);
    khz_zig_bound[i].k = k;
    khz_zig_bound[i].k2 = 2 * k;
    khz_zig_w22[i] = khz_zig_x[i] * 0x1.0p-22;
  }
}

void khz_rngInit(void) { pthread_once(&zig_once, zig_init); }

double khz_rngNormal(khzRng *r) { return khz_rngNormalInline(r); }

/* a draw outside the next strip's width: the tail beyond R (strip 0), or
 * the wedge between strips i and i + 1 tested against f; a rejected draw
 * starts over */
double khz_rngNormalSlow(khzRng *r, int i, double x) {
  for (;;) {
    if (i == 0) { /* the tail beyond R */
      double a, t;
      do {
        a = -log(1.0 - khz_rngUniform(r)) / ZIG_R;
        t = -log(1.0 - khz_rngUniform(r));
      } while (2 * t < a * a);
      return x < 0 ? -(ZIG_R + a) : ZIG_R + a;
    }
    /* y under f(x) = exp(-x^2/2) >= 1 - x^2/2: most of the top strips'
     * wedges (the most rejected) need no exp */
    double u = (double)(khz_rngNextInline(r) >> 11) * 0x1.0p-53; /* khz_rngUniform */
    double y = khz_zig_f[i] + u * (khz_zig_f[i + 1] - khz_zig_f[i]);
    if (y < 1 - 0.5 * x * x || y < exp(-0.5 * x * x)) return x;
    x = khz_zigCandidate(khz_rngNextInline(r), &i);
    if (fabs(x) < khz_zig_x[i + 1]) return x;
  }
}

/* a batch's rejected 32 bits h (rng.h): its strip and candidate (inside
 * the next strip after all when the integer bound, a floor, left it out),
 * then the wedge test or the tail as for any draw */
double khz_rngNormalRetry(khzRng *r, uint32_t h) {
  int i = (int)(h & (ZIG_N - 1));
  double x = (double)((int32_t)h >> 9) * khz_zig_w22[i];
  if (fabs(x) < khz_zig_x[i + 1]) return x;
  return khz_rngNormalSlow(r, i, x);
}
