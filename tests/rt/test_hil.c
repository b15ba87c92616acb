/* test_hil.c — hardware-in-the-loop realism (rt/src/hil, khz/hil.h,
 * docs/hil.md) against what was configured: the generator's statistics and
 * determinism; encoder quantisation and finite-difference velocity; white
 * noise variance and the bias random walk's growth; sample rates and
 * latencies tick by tick; accelerometer, force-torque and touch readings of
 * a box at rest and in free fall; joint force-torque on a hanging chain, a
 * swinging pendulum and a driven wheel against Newton-Euler; the drives' analytic step responses (lag,
 * saturation, voltage limit, viscous gearbox, the velocity mode's exponential,
 * the position mode's damped oscillator and its equilibrium); every fault
 * within one tick; bit-identical readings for a seed; zero heap calls while
 * driving and sampling (malloc & co. wrapped at link time). */
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "hil/rng.h"
#include "khz/hil.h"
#include "khz/khz.h"
#include "heap_count.h"

static const double H = 1e-3;

/* bodies: 1 a wheel on a revolute joint about z (inertia I_WHEEL, no
 * gravity torque), 2 a pendulum about y (1 kg at 0.5 m), 3 a 2 kg box, free,
 * resting on the plane (or falling, fall = 1: no plane) */
enum { WHEEL = 1, PEND, BOX };
static const double I_WHEEL = 0.02, BOX_MASS = 2.0, BOX_HALF = 0.1;

static khzModel *model(int fall) {
  khzSpec *s = khz_spec_new();
  if (!fall) {
    khzGeomSpec plane;
    khz_spec_defaultGeom(&plane);
    plane.type = KHZ_GEOM_PLANE;
    khz_spec_addGeom(s, &plane);
  }
  khzBodySpec b;
  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "wheel");
  snprintf(b.joint_name, sizeof b.joint_name, "spin");
  b.joint_type = KHZ_JOINT_CONTINUOUS;
  b.pos[0] = 2, b.pos[2] = 1;
  b.axis[0] = 0, b.axis[1] = 0, b.axis[2] = 1;
  b.mass = 1;
  b.inertia[0] = b.inertia[1] = 0.01, b.inertia[2] = I_WHEEL;
  khz_spec_addBody(s, &b);

  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "pendulum");
  snprintf(b.joint_name, sizeof b.joint_name, "swing");
  b.joint_type = KHZ_JOINT_REVOLUTE;
  b.pos[0] = -2, b.pos[2] = 1.5;
  b.axis[0] = 0, b.axis[1] = 1, b.axis[2] = 0;
  b.limited = 0;
  b.mass = 1;
  b.com[0] = 0.5;
  b.inertia[0] = b.inertia[1] = b.inertia[2] = 1e-3;
  khz_spec_addBody(s, &b);

  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "box");
  snprintf(b.joint_name, sizeof b.joint_name, "box");
  b.joint_type = KHZ_JOINT_FLOATING;
  b.mass = BOX_MASS;
  double I = BOX_MASS * (8 * BOX_HALF * BOX_HALF) / 12;
  b.inertia[0] = b.inertia[1] = b.inertia[2] = I;
  double q0[7] = {0, 0, BOX_HALF, 1, 0, 0, 0};
  memcpy(b.q0, q0, sizeof q0);
  khzGeomSpec g;
  khz_spec_defaultGeom(&g);
  g.body = khz_spec_addBody(s, &b);
  g.type = KHZ_GEOM_BOX;
  g.size[0] = g.size[1] = g.size[2] = BOX_HALF;
  khz_spec_addGeom(s, &g);
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m, "%s", err);
  khz_spec_destroy(&s);
  return m;
}

static khzSensorSpec sensor(const char *name, int type, int object) {
  khzSensorSpec s;
  memset(&s, 0, sizeof s);
  snprintf(s.name, sizeof s.name, "%s", name);
  s.type = type;
  s.object = object;
  s.divisor = 1;
  return s;
}

static khzDriveSpec drive(const char *joint, int mode) {
  khzDriveSpec d;
  memset(&d, 0, sizeof d);
  snprintf(d.joint, sizeof d.joint, "%s", joint);
  d.mode = mode;
  return d;
}

static khzHil *make(const khzModel *m, const khzData *d, const khzSensorSpec *s, int ns,
                    const khzDriveSpec *dr, int nd, uint64_t seed) {
  char err[256] = "";
  khzHil *hil = khz_hilCreate(m, s, ns, dr, nd, seed, H, err, sizeof err);
  ENSURE_MSG(hil, "%s", err);
  if (hil) khz_hilReset(hil, m, d);
  return hil;
}

/* ---------------------------------------------------------------- rng -- */

static void test_rng(void) {
  khzRng a, b, c;
  khz_rngSeed(&a, 42, 1);
  khz_rngSeed(&b, 42, 1);
  khz_rngSeed(&c, 42, 2);
  int same = 1, differ = 0;
  for (int i = 0; i < 1000; i++) {
    uint64_t x = khz_rngNext(&a), y = khz_rngNext(&b), z = khz_rngNext(&c);
    same &= x == y;
    differ += x != z;
  }
  ENSURE(same);
  ENSURE(differ > 990);
  const int n = 1000000;
  static const double edge[6] = {0.5, 1, 2, 3, 3.5, 4.5}; /* 3.5, 4.5: the ziggurat's tail */
  double s1 = 0, s2 = 0, s4 = 0, u1 = 0, beyond[6] = {0};
  for (int i = 0; i < n; i++) {
    double x = khz_rngNormal(&a), u = khz_rngUniform(&a);
    s1 += x, s2 += x * x, s4 += x * x * x * x, u1 += u;
    for (int k = 0; k < 6; k++) beyond[k] += fabs(x) > edge[k];
    ENSURE(u >= 0 && u < 1);
  }
  /* standard errors: mean 1e-3, variance 1.4e-3, fourth moment 9.8e-3,
   * uniform mean 2.9e-4 */
  ENSURE_NEAR(s1 / n, 0, 5e-3);
  ENSURE_NEAR(s2 / n - (s1 / n) * (s1 / n), 1, 7e-3);
  ENSURE_NEAR(s4 / n, 3, 0.05);
  ENSURE_NEAR(u1 / n, 0.5, 1.5e-3);
  /* P(|x| > t) = erfc(t / sqrt 2), each within 5 binomial standard errors */
  for (int k = 0; k < 6; k++) {
    double p = erfc(edge[k] / sqrt(2.0)), se = sqrt(p * (1 - p) / n);
    ENSURE_MSG(fabs(beyond[k] / n - p) < 5 * se, "P(|x| > %g) = %g, want %g", edge[k],
               beyond[k] / n, p);
  }
}

/* the generator against published values: khz_rngSeed(0, 0) fills the
 * state from splitmix64(0) as Bitcoin Core's XoRoShiRo128PlusPlus(0) does,
 * whose test lists the reference implementation's first four outputs
 * (src/test/xoroshiro128plusplus_tests.cpp); and the batched draws
 * (hil/rng.h's own copy of the step, with the state in registers) against
 * khz_rngNext: a batch of 64 deviates takes 32 draws, each fast-path
 * deviate is its half-draw's strip and 23-bit uniform, a rejected one
 * leaves its 32 bits. A wrong shift or rotation in either copy fails it */
static void test_rng_reference(void) {
  static const uint64_t want[4] = {0x6f68e1e7e2646ee1ull, 0xbf971b7f454094adull,
                                   0x48f2de556f30de38ull, 0x6ea7c59f89bbfc75ull};
  khzRng r, ref;
  khz_rngSeed(&r, 0, 0);
  for (int k = 0; k < 4; k++) {
    uint64_t x = khz_rngNext(&r);
    ENSURE_MSG(x == want[k], "draw %d: %016llx, want %016llx", k, (unsigned long long)x,
               (unsigned long long)want[k]);
  }
  khz_rngSeed(&r, 9, 4);
  ref = r;
  int bad = -1;
  for (int rep = 0; rep < 100; rep++) {
    double z[64];
    uint64_t miss = khz_zigBatch(&r, z, 64);
    for (int k = 0; k < 64; k += 2) {
      uint64_t b = khz_rngNext(&ref);
      for (int half = 0; half < 2; half++) {
        uint32_t h = (uint32_t)(b >> (32 * half));
        int i = (int)(h & (KHZ_ZIG_N - 1));
        double fast = (double)((int32_t)h >> 9) * khz_zig_w22[i];
        double expect = (miss >> (k + half)) & 1 ? (double)h : fast;
        if (z[k + half] != expect && bad < 0) bad = 64 * rep + k + half;
      }
    }
  }
  ENSURE_MSG(bad < 0, "batched deviate %d differs from the generator's draw", bad);
  ENSURE(r.s[0] == ref.s[0] && r.s[1] == ref.s[1]);
}

/* the ziggurat's table (hil/rng.c) against its construction: the base
 * strip (the rectangle under f(R) and the tail beyond R) and every strip
 * have the area V, the top strip ends at f(0) = 1, and the batched fast
 * path's bounds and widths are its strips'. A table from wrong constants
 * (256-strip R and V in 512 strips) passes the sampling tests below with
 * 1e6 deviates (KS 1.25e-3, chi-square 209) but fails here */
static void test_zig_table(void) {
  khz_rngInit();
  const int n = KHZ_ZIG_N;
  const double *x = khz_zig_x, *f = khz_zig_f;
  double R = x[1], V = x[0] * f[1];
  double tail = sqrt(M_PI / 2) * erfc(R / sqrt(2.0));
  ENSURE_MSG(fabs(R * f[1] + tail - V) < 1e-12 * V, "base strip: R f(R) + tail %.17g, V %.17g",
             R * f[1] + tail, V);
  int bad = -1;
  for (int i = 1; i < n; i++) {
    double next = i + 1 < n ? f[i + 1] : 1; /* the top strip reaches f(0) */
    if (!(fabs(x[i] * (next - f[i]) - V) < 1e-9 * V)) bad = bad < 0 ? i : bad;
  }
  ENSURE_MSG(bad < 0, "strip %d's area %.17g, want V %.17g", bad,
             bad < 0 ? 0 : x[bad] * ((bad + 1 < n ? f[bad + 1] : 1) - f[bad]), V);
  ENSURE(x[n] == 0 && f[n] == 1);
  for (int i = 0; i < n; i++) {
    double k = 0x1.0p22 * x[i + 1] / x[i];
    if (!(khz_zig_bound[i].k <= k && k < khz_zig_bound[i].k + 1 &&
          khz_zig_bound[i].k2 == 2 * khz_zig_bound[i].k && khz_zig_w22[i] == x[i] * 0x1.0p-22))
      bad = bad < 0 ? i : bad;
  }
  ENSURE_MSG(bad < 0, "strip %d: the batched fast path's bound or width", bad);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* the sensors' batched deviates (two from each 64-bit draw, hil/rng.h)
 * against the normal distribution, 1e6 deviates drawn in batches of 3 and
 * 6 (an odd batch leaves half a draw unused):
 * - Pearson's chi-square over 160 bins of width 0.05 on [-4, 4] and the
 *   two tails; the 1e-4 quantile of chi-square with 161 degrees of freedom
 *   is 236.5 (Wilson-Hilferty);
 * - Kolmogorov-Smirnov: sup |F_n - Phi| against its 1e-4 quantile
 *   sqrt(ln(2 / 1e-4) / 2) / sqrt(n) = 2.22e-3;
 * - the tails: P(|x| > t) for t = 3, the ziggurat's R = 3.852 (beyond it
 *   only the tail method draws) and 4.5, each within 5 binomial standard
 *   errors of erfc(t / sqrt 2) */
static void test_rng_batch(void) {
  enum { NBIN = 162, N = 1000000 };
  static double count[NBIN], all[N];
  static const double edge[3] = {3, 3.852046150368391, 4.5};
  double beyond[3] = {0};
  khzRng r;
  khz_rngSeed(&r, 5, 3);
  double z[6], s2 = 0;
  for (int i = 0; i < N;) {
    int batch = (i / 6) % 2 ? 3 : 6;
    khz_rngNormals(&r, z, batch);
    for (int k = 0; k < batch && i < N; k++, i++) {
      double x = z[k];
      int bin = x < -4 ? 0 : x >= 4 ? NBIN - 1 : 1 + (int)floor((x + 4) / 0.05);
      if (bin > NBIN - 2 && x < 4) bin = NBIN - 2;
      count[bin]++;
      s2 += x * x;
      all[i] = x;
      for (int e = 0; e < 3; e++) beyond[e] += fabs(x) > edge[e];
    }
  }
  double chi2 = 0;
  for (int b = 0; b < NBIN; b++) {
    double lo = b == 0 ? -INFINITY : -4 + 0.05 * (b - 1), hi = b == NBIN - 1 ? INFINITY : -4 + 0.05 * b;
    double p = 0.5 * (erfc(-hi / sqrt(2.0)) - erfc(-lo / sqrt(2.0))), e = N * p;
    chi2 += (count[b] - e) * (count[b] - e) / e;
  }
  ENSURE_MSG(chi2 < 236.5, "batched deviates: chi-square %g over 161 degrees of freedom", chi2);
  printf("batched deviates: chi-square %.1f over 161 degrees of freedom (1e-4 quantile 236.5)\n", chi2);
  ENSURE_NEAR(s2 / N, 1, 7e-3);
  qsort(all, N, sizeof *all, cmp_double);
  double ks = 0;
  for (int i = 0; i < N; i++) {
    double F = 0.5 * erfc(-all[i] / sqrt(2.0));
    ks = fmax(ks, fmax(fabs((i + 1.0) / N - F), fabs((double)i / N - F)));
  }
  double ks_max = sqrt(log(2 / 1e-4) / 2) / sqrt((double)N);
  ENSURE_MSG(ks < ks_max, "batched deviates: Kolmogorov-Smirnov %g (1e-4 quantile %g)", ks, ks_max);
  printf("batched deviates: Kolmogorov-Smirnov %.2e (1e-4 quantile %.2e)\n", ks, ks_max);
  for (int e = 0; e < 3; e++) {
    double p = erfc(edge[e] / sqrt(2.0)), se = sqrt(p * (1 - p) / N);
    ENSURE_MSG(fabs(beyond[e] / N - p) < 5 * se, "batched deviates: P(|x| > %g) = %g, want %g",
               edge[e], beyond[e] / N, p);
    printf("batched deviates: P(|x| > %g) = %.3g (want %.3g +- %.2g)\n", edge[e], beyond[e] / N, p, 5 * se);
  }
}

/* ------------------------------------------------------------ sensors -- */

/* encoder: readings are q rounded to the count; the velocity is the
 * difference of readings over the period (telescoping: its mean is exact) */
static void test_encoder(void) {
  khzModel *m = model(0);
  khzData *d = khz_makeData(m, 0);
  khzSensorSpec s = sensor("enc", KHZ_SENSOR_ENCODER, WHEEL);
  s.noise.resolution = 2 * M_PI / 4096;
  int qa = m->jnt_qadr[WHEEL], n = 2000;
  d->q[qa] = 0.1;
  khzHil *hil = make(m, d, &s, 1, NULL, 0, 1);
  double res = s.noise.resolution, w = 0.7, vsum = 0, worst = 0;
  for (int k = 1; k <= n; k++) {
    d->q[qa] = 0.1 + w * k * H;
    khz_hilSample(hil, m, d, (uint64_t)k);
    const double *v = khz_hilValues(hil);
    double err = v[0] - d->q[qa];
    worst = fmax(worst, fabs(err));
    ENSURE(fabs(remainder(v[0], res)) < 1e-9);
    vsum += v[1];
  }
  ENSURE_MSG(worst <= res / 2 + 1e-12, "worst quantisation error %g, count %g", worst, res);
  ENSURE_MSG(worst > 0.4 * res, "worst quantisation error %g: no quantisation seen", worst);
  /* mean of n differences = (last - first reading) / (n h) */
  ENSURE_NEAR(vsum / n, w, res / (n * H) + 1e-12);
  khz_hilFree(&hil);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* gyro on a resting body: mean = bias, standard deviation = white */
static void test_white_noise(void) {
  khzModel *m = model(0);
  khzData *d = khz_makeData(m, 0);
  khz_forward(m, d);
  khzSensorSpec s = sensor("gyro", KHZ_SENSOR_GYRO, WHEEL);
  s.noise.white = 0.01;
  s.noise.bias = 0.003;
  khzHil *hil = make(m, d, &s, 1, NULL, 0, 7);
  const int n = 20000;
  double s1 = 0, s2 = 0;
  for (int k = 1; k <= n; k++) {
    khz_hilSample(hil, m, d, (uint64_t)k);
    for (int a = 0; a < 3; a++) {
      double x = khz_hilValues(hil)[a];
      s1 += x, s2 += x * x;
    }
  }
  double mean = s1 / (3 * n), sd = sqrt(s2 / (3 * n) - mean * mean);
  ENSURE_NEAR(mean, 0.003, 5 * 0.01 / sqrt(3.0 * n));
  ENSURE_MSG(fabs(sd / 0.01 - 1) < 0.03, "white noise sd %g, configured 0.01", sd);
  khz_hilFree(&hil);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* bias random walk: across 300 sensors (900 axes), the variance of the bias
 * after T seconds is bias_walk^2 T */
static void test_bias_walk(void) {
  khzModel *m = model(0);
  khzData *d = khz_makeData(m, 0);
  khz_forward(m, d);
  enum { NS = 300 };
  static khzSensorSpec s[NS];
  for (int i = 0; i < NS; i++) {
    s[i] = sensor("g", KHZ_SENSOR_GYRO, WHEEL);
    snprintf(s[i].name, sizeof s[i].name, "g%d", i);
    s[i].noise.bias_walk = 0.02;
    s[i].divisor = 10; /* 100 Hz: the walk per sample is 0.02 sqrt(0.01) */
  }
  khzHil *hil = make(m, d, s, NS, NULL, 0, 3);
  int n = 4000; /* 4 s */
  for (int k = 1; k <= n; k++) khz_hilSample(hil, m, d, (uint64_t)k);
  double s1 = 0, s2 = 0;
  const double *v = khz_hilValues(hil);
  for (int i = 0; i < 3 * NS; i++) s1 += v[i], s2 += v[i] * v[i];
  double var = s2 / (3 * NS) - (s1 / (3 * NS)) * (s1 / (3 * NS));
  /* 400 steps of the walk were taken by the last sample (ticks 10..4000),
   * the reading carries the bias before that sample's step: 399 steps */
  double want = 0.02 * 0.02 * 399 * 0.01;
  ENSURE_MSG(fabs(var / want - 1) < 0.15, "bias variance %g after 4 s, configured %g", var, want);
  khz_hilFree(&hil);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* rate and latency, tick by tick: divisor 4 and latency 3 show at tick k the
 * sample of tick 4 floor((k - 3) / 4), latency 3 alone that of tick k - 3;
 * after skipped ticks, the newest sample that is due */
static void test_rate_latency(void) {
  khzModel *m = model(0);
  khzData *d = khz_makeData(m, 0);
  khzSensorSpec s = sensor("enc", KHZ_SENSOR_ENCODER, WHEEL);
  s.divisor = 4;
  s.latency = 3;
  khzSensorSpec fast = sensor("enc0", KHZ_SENSOR_ENCODER, WHEEL);
  khzSensorSpec late = sensor("enc1", KHZ_SENSOR_ENCODER, WHEEL);
  late.latency = 3;
  khzSensorSpec all[3] = {s, fast, late};
  int qa = m->jnt_qadr[WHEEL];
  d->q[qa] = 0;
  khzHil *hil = make(m, d, all, 3, NULL, 0, 1);
  int ok = 1, ok0 = 1, ok1 = 1;
  for (int k = 1; k <= 100; k++) {
    d->q[qa] = k; /* the reading names the tick it was taken at */
    khz_hilSample(hil, m, d, (uint64_t)k);
    int want = k < 7 ? 0 : 4 * ((k - 3) / 4), want1 = k < 4 ? 0 : k - 3;
    ok &= khz_hilValues(hil)[0] == want && khz_hilSampledAt(hil, 0) == (uint64_t)want;
    ok0 &= khz_hilValues(hil)[2] == k;
    ok1 &= khz_hilValues(hil)[4] == want1 && khz_hilSampledAt(hil, 2) == (uint64_t)want1;
  }
  ENSURE_MSG(ok, "divisor 4 / latency 3 readings are not those of tick 4 floor((k - 3) / 4)");
  ENSURE(ok0);
  ENSURE_MSG(ok1, "latency 3 readings are not those of tick k - 3");
  /* ticks 101..109 skipped: at 110 every sample in flight is due and the
   * newest of them shows (100 for both); 110's own shows at 113 */
  d->q[qa] = 110;
  khz_hilSample(hil, m, d, 110);
  ENSURE(khz_hilValues(hil)[0] == 100 && khz_hilSampledAt(hil, 0) == 100);
  ENSURE(khz_hilValues(hil)[4] == 100 && khz_hilSampledAt(hil, 2) == 100);
  d->q[qa] = 113;
  khz_hilSample(hil, m, d, 113);
  ENSURE(khz_hilValues(hil)[4] == 110 && khz_hilSampledAt(hil, 2) == 110);
  khz_hilFree(&hil);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* a box at rest on the plane: accelerometer +g up, touch m g, force-torque
 * m g along the body's z; in free fall the accelerometer reads 0 */
static void test_body_sensors(void) {
  for (int fall = 0; fall <= 1; fall++) {
    khzModel *m = model(fall);
    khzData *d = khz_makeData(m, 0);
    khzSensorSpec s[3] = {sensor("imu", KHZ_SENSOR_ACCEL, BOX), sensor("touch", KHZ_SENSOR_TOUCH, BOX),
                          sensor("ft", KHZ_SENSOR_FORCE, BOX)};
    s[0].pos[0] = 0.05;
    s[2].pos[2] = -BOX_HALF;
    khz_forward(m, d);
    khzHil *hil = make(m, d, s, 3, NULL, 0, 1);
    for (int k = 1; k <= 1500; k++) {
      khz_step(m, d);
      khz_hilSample(hil, m, d, (uint64_t)k);
    }
    const double *v = khz_hilValues(hil);
    double g = 9.81, W = BOX_MASS * g;
    if (!fall) {
      ENSURE_NEAR(v[0], 0, 0.05);
      ENSURE_NEAR(v[1], 0, 0.05);
      ENSURE_MSG(fabs(v[2] - g) < 0.01 * g, "accelerometer at rest reads %g, want %g", v[2], g);
      ENSURE_MSG(fabs(v[3] - W) < 0.01 * W, "touch reads %g N, want %g", v[3], W);
      ENSURE_MSG(fabs(v[6] - W) < 0.01 * W, "force-torque fz %g N, want %g", v[6], W);
      ENSURE(fabs(v[4]) < 0.01 * W && fabs(v[5]) < 0.01 * W);
      /* torque about the bottom centre: the contact forces balance (< 1 % of W times half) */
      for (int a = 0; a < 3; a++) ENSURE(fabs(v[7 + a]) < 0.01 * W * BOX_HALF);
    } else {
      for (int a = 0; a < 3; a++) ENSURE_NEAR(v[a], 0, 1e-6);
      ENSURE(v[3] == 0);
    }
    khz_hilFree(&hil);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
}

/* the sleeping pairs' contact sum, kept while the same pairs sleep: a box
 * falls asleep on the plane, is pushed awake, and sleeps again; at every
 * tick its touch sensor reads exactly the sum over its pairs in list order
 * (a kept sum that outlived its pairs would read the old forces) */
static void test_sleeping_contacts(void) {
  khzModel *m = model(0);
  khzData *d = khz_makeData(m, 0);
  khzSensorSpec s = sensor("touch", KHZ_SENSOR_TOUCH, BOX);
  khz_forward(m, d);
  khzHil *hil = make(m, d, &s, 1, NULL, 0, 1);
  int slept = 0, woke = 0, slept_again = 0, exact = 1, ticks_asleep = 0;
  for (int k = 1; k <= 5000; k++) {
    memset(d->xfrc + 6 * BOX, 0, 6 * sizeof(double));
    if (k > 2000 && k <= 2030) d->xfrc[6 * BOX + 0] = 12, d->xfrc[6 * BOX + 2] = 30;
    khz_step(m, d);
    khz_hilSample(hil, m, d, (uint64_t)k);
    int asleep = khz_bodySleeping(m, d, BOX);
    ticks_asleep += asleep;
    if (k <= 2000) slept |= asleep;
    if (k > 2000 && slept && !asleep) woke = 1;
    if (woke && asleep) slept_again = 1;
    double want = 0;
    for (int c = 0; c < d->ncontact; c++) {
      const khzContact *ct = &d->contact[c];
      if (ct->body[0] != BOX && ct->body[1] != BOX) continue;
      double F[3] = {0, 0, 0};
      for (int i = 0; i < ct->npoint; i++)
        for (int a = 0; a < 3; a++) F[a] += d->cpoint[ct->point_adr + i].force[a];
      want += F[0] * ct->normal[0] + F[1] * ct->normal[1] + F[2] * ct->normal[2];
    }
    exact &= khz_hilValues(hil)[0] == want;
  }
  ENSURE_MSG(slept && woke && slept_again, "box slept %d, woke %d, slept again %d", slept, woke,
             slept_again);
  ENSURE_MSG(exact, "touch sensor differs from its pairs' sum (%d ticks asleep)", ticks_asleep);
  khz_hilFree(&hil);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* a 50 g box under a 20 kg box on the ground, automatic gains: most of the
 * ground pair's force comes from the implicit part (counted once: a point's
 * force already holds it). The heavy box's force-torque sensor reads its
 * weight; the light box's, the ground's push less the heavy box's, its own
 * weight; its touch sensor, both pairs' normal forces (ground up, heavy
 * box down, counted with their signs along each pair's normal) */
static void test_light_under_heavy(void) {
  khzSpec *sp = khz_spec_new();
  khzGeomSpec plane;
  khz_spec_defaultGeom(&plane);
  plane.type = KHZ_GEOM_PLANE;
  khz_spec_addGeom(sp, &plane);
  const double mass[2] = {0.05, 20}, z[2] = {0.0501, 0.1503};
  for (int i = 0; i < 2; i++) {
    khzBodySpec b;
    khz_spec_defaultBody(&b);
    snprintf(b.name, sizeof b.name, i ? "heavy" : "light");
    snprintf(b.joint_name, sizeof b.joint_name, "%s", b.name);
    b.joint_type = KHZ_JOINT_FLOATING;
    b.mass = mass[i];
    b.inertia[0] = b.inertia[1] = b.inertia[2] = mass[i] * 8 * 0.05 * 0.05 / 12;
    double q0[7] = {0, 0, z[i], 1, 0, 0, 0};
    memcpy(b.q0, q0, sizeof q0);
    khzGeomSpec g;
    khz_spec_defaultGeom(&g);
    g.body = khz_spec_addBody(sp, &b);
    g.type = KHZ_GEOM_BOX;
    g.size[0] = g.size[1] = g.size[2] = 0.05;
    khz_spec_addGeom(sp, &g);
  }
  char err[256];
  khzModel *m = khz_compile(sp, err, sizeof err);
  khz_spec_destroy(&sp);
  ENSURE_MSG(m, "%s", err);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);
  khzSensorSpec s[2] = {sensor("ft_light", KHZ_SENSOR_FORCE, 1), sensor("ft_heavy", KHZ_SENSOR_FORCE, 2)};
  khz_forward(m, d);
  khzHil *hil = make(m, d, s, 2, NULL, 0, 1);
  for (int k = 1; k <= 1000; k++) {
    khz_step(m, d);
    khz_hilSample(hil, m, d, (uint64_t)k);
  }
  const double *v = khz_hilValues(hil), g = 9.81;
  double implicit = 0;
  for (int c = 0; c < d->ncontact; c++)
    for (int k = 0; k < d->contact[c].npoint; k++) implicit += d->cpoint[d->contact[c].point_adr + k].force_implicit;
  printf("light under heavy: light reads %.4f N (weight %.4f), heavy %.3f N (weight %.3f); %.1f N implicit\n",
         v[2], 0.05 * g, v[8], 20 * g, implicit);
  ENSURE_MSG(implicit > 100, "the implicit part carries %g N: the case does not test it", implicit);
  ENSURE_MSG(fabs(v[8] - 20 * g) < 0.01 * 20 * g, "heavy box reads %g N, weight %g", v[8], 20 * g);
  ENSURE_MSG(fabs(v[2] - 0.05 * g) < 0.05 * 20 * g * 0.01, "light box reads %g N net, weight %g", v[2], 0.05 * g);
  khz_hilFree(&hil);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* ------------------------------------------------- joint force-torque -- */

/* a two-link chain hanging straight down from a hinge about y at the
 * origin (link 1: 2 kg, com 0.3 m below; link 2 at 0.6 m below it: 1.5 kg,
 * com 0.2 m below): at rest, joint 1 carries both links' weight and joint 2
 * the second's, with no torque about either */
static khzModel *chain(void) {
  khzSpec *s = khz_spec_new();
  khzBodySpec b;
  const double mass[2] = {2, 1.5}, com[2] = {-0.3, -0.2}, at[2] = {0, -0.6};
  for (int i = 0; i < 2; i++) {
    khz_spec_defaultBody(&b);
    snprintf(b.name, sizeof b.name, "link%d", i + 1);
    snprintf(b.joint_name, sizeof b.joint_name, "hinge%d", i + 1);
    b.parent = i;
    b.joint_type = KHZ_JOINT_REVOLUTE;
    b.limited = 0;
    b.pos[2] = at[i];
    b.axis[0] = 0, b.axis[1] = 1, b.axis[2] = 0;
    b.mass = mass[i];
    b.com[2] = com[i];
    b.inertia[0] = b.inertia[1] = b.inertia[2] = 0.01;
    khz_spec_addBody(s, &b);
  }
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m, "%s", err);
  khz_spec_destroy(&s);
  return m;
}

static void test_joint_force_torque(void) {
  const double g = 9.81;
  /* the chain at rest: the weight of each subtree, upwards, and no torque */
  {
    khzModel *m = chain();
    khzData *d = khz_makeData(m, 0);
    khzSensorSpec s[2] = {sensor("ft1", KHZ_SENSOR_JOINT_FT, 1), sensor("ft2", KHZ_SENSOR_JOINT_FT, 2)};
    khz_forward(m, d);
    khzHil *hil = make(m, d, s, 2, NULL, 0, 1);
    for (int k = 1; k <= 200; k++) {
      khz_step(m, d);
      khz_hilSample(hil, m, d, (uint64_t)k);
    }
    const double *v = khz_hilValues(hil);
    ENSURE_MSG(fabs(v[2] - 3.5 * g) < 1e-9 * g, "joint 1 carries %g N, want %g", v[2], 3.5 * g);
    ENSURE_MSG(fabs(v[8] - 1.5 * g) < 1e-9 * g, "joint 2 carries %g N, want %g", v[8], 1.5 * g);
    for (int k = 0; k < 12; k++)
      if (k != 2 && k != 8) ENSURE_MSG(fabs(v[k]) < 1e-9, "value %d is %g, want 0", k, v[k]);
    khz_hilFree(&hil);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
  /* the pendulum released from horizontal (1 kg, com 0.5 m out, hinge about
   * y): the hinge's force is m (a_com - g) with the exact
   * qdd = m g r cos q / I_pivot, and a hinge without friction passes no
   * torque (the planar motion needs none about x or z either); the wheel
   * (hinge about z) spun up by 0.5 N m reads that torque about its axis */
  {
    khzModel *m = model(1);
    khzData *d = khz_makeData(m, 0);
    khzSensorSpec s[2] = {sensor("ft_swing", KHZ_SENSOR_JOINT_FT, PEND),
                          sensor("ft_spin", KHZ_SENSOR_JOINT_FT, WHEEL)};
    khz_forward(m, d);
    khzHil *hil = make(m, d, s, 2, NULL, 0, 1);
    const double r = 0.5, Ip = 1e-3 + 1 * r * r, tau = 0.5;
    double worst_f = 0, worst_t = 0, worst_w = 0;
    for (int k = 1; k <= 600; k++) {
      memset(d->tau, 0, (size_t)m->nv * sizeof(double));
      d->tau[m->jnt_dofadr[WHEEL]] = tau;
      khz_step(m, d);
      khz_hilSample(hil, m, d, (uint64_t)k);
      if (k < 2) continue;
      /* the reading is the mean over the last step: the exact force at the
       * state half a step back, in the body's axes at the step's end */
      double q = d->q[m->jnt_qadr[PEND]], w = d->qd[m->jnt_dofadr[PEND]], qe = q;
      double qdd = 1 * g * r * cos(q) / Ip;
      q -= 0.5 * H * w, w -= 0.5 * H * qdd, qdd = 1 * g * r * cos(q) / Ip;
      /* com at r (cos q, 0, -sin q) about the hinge; its acceleration */
      double ax = r * (-sin(q) * qdd - cos(q) * w * w), az = r * (-cos(q) * qdd + sin(q) * w * w);
      double F[3] = {ax, 0, az + g}; /* m = 1 */
      /* into the body's axes (rotation by q about y) */
      double Fb[3] = {cos(qe) * F[0] - sin(qe) * F[2], F[1], sin(qe) * F[0] + cos(qe) * F[2]};
      const double *v = khz_hilValues(hil);
      for (int a = 0; a < 3; a++) worst_f = fmax(worst_f, fabs(v[a] - Fb[a]));
      for (int a = 3; a < 6; a++) worst_t = fmax(worst_t, fabs(v[a]));
      worst_w = fmax(worst_w, fabs(v[11] - tau) + fabs(v[8] - g) + fabs(v[9]) + fabs(v[10]));
    }
    ENSURE_MSG(worst_f < 1e-4 * g, "pendulum hinge force off by %g N (of %g)", worst_f, g);
    ENSURE_MSG(worst_t < 1e-5 * g * r, "pendulum hinge torque %g N m, want 0", worst_t);
    ENSURE_MSG(worst_w < 1e-6, "wheel hinge reading off by %g", worst_w);
    fprintf(stderr, "joint force-torque: pendulum force %.3g N, torque %.3g N m, wheel %.3g\n", worst_f, worst_t, worst_w);
    khz_hilFree(&hil);
    /* a free joint holds nothing: refused */
    char err[256];
    khzSensorSpec bad = sensor("ft_box", KHZ_SENSOR_JOINT_FT, BOX);
    ENSURE(!khz_hilCreate(m, &bad, 1, NULL, 0, 1, H, err, sizeof err));
    ENSURE_MSG(strstr(err, "'ft_box'") && strstr(err, "free joint"), "%s", err);
    ENSURE(khz_sensorTypeFind("joint_force_torque") == KHZ_SENSOR_JOINT_FT);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
}

/* ------------------------------------------------------------- drives -- */

static double spin_after(const khzModel *m, khzData *d, khzHil *hil, double cmd, double t) {
  int dof = m->jnt_dofadr[WHEEL], n = (int)lround(t / H);
  for (int k = 0; k < n; k++) {
    memset(d->tau, 0, (size_t)m->nv * sizeof(double));
    d->tau[dof] = cmd;
    khz_hilDrive(hil, m, d);
    khz_step(m, d);
  }
  return d->qd[dof];
}

static void test_drives(void) {
  khzModel *m = model(0);
  int dof = m->jnt_dofadr[WHEEL];

  /* lag: on a held joint the torque after n ticks is 1 - (1 - alpha)^n */
  {
    khzData *d = khz_makeData(m, 0);
    khzDriveSpec dr = drive("spin", KHZ_DRIVE_TORQUE);
    dr.lag = 0.02;
    khzHil *hil = make(m, d, NULL, 0, &dr, 1, 1);
    double worst = 0;
    for (int k = 1; k <= 100; k++) {
      d->tau[dof] = 1;
      khz_hilDrive(hil, m, d);
      worst = fmax(worst, fabs(d->tau[dof] - (1 - exp(-k * H / dr.lag))));
    }
    ENSURE_MSG(worst < 1e-12, "lag: worst error against 1 - exp(-t / lag): %g", worst);
    khz_hilFree(&hil);
    khz_deleteData(&d);
  }
  /* lag on a free wheel: w(t) = (tau/I) (t - lag (1 - exp(-t/lag))) */
  {
    khzData *d = khz_makeData(m, 0);
    khzDriveSpec dr = drive("spin", KHZ_DRIVE_TORQUE);
    dr.lag = 0.05;
    khzHil *hil = make(m, d, NULL, 0, &dr, 1, 1);
    double t = 0.5, w = spin_after(m, d, hil, 0.1, t);
    double want = 0.1 / I_WHEEL * (t - dr.lag * (1 - exp(-t / dr.lag)));
    ENSURE_MSG(fabs(w / want - 1) < 0.01, "lagged spin-up %g rad/s, analytic %g", w, want);
    khz_hilFree(&hil);
    khz_deleteData(&d);
  }
  /* viscous gearbox: w(t) = tau / b (1 - exp(-b t / I)) */
  {
    khzData *d = khz_makeData(m, 0);
    khzDriveSpec dr = drive("spin", KHZ_DRIVE_TORQUE);
    dr.viscous = 0.01;
    khzHil *hil = make(m, d, NULL, 0, &dr, 1, 1);
    double t = 2, w = spin_after(m, d, hil, 0.05, t);
    double want = 0.05 / dr.viscous * (1 - exp(-dr.viscous * t / I_WHEEL));
    ENSURE_MSG(fabs(w / want - 1) < 0.005, "viscous spin-up %g rad/s, analytic %g", w, want);
    khz_hilFree(&hil);
    khz_deleteData(&d);
  }
  /* voltage limit: the wheel runs up to no_load_speed / gear (1 - tau_load / stall) = w0 / gear */
  {
    khzData *d = khz_makeData(m, 0);
    khzDriveSpec dr = drive("spin", KHZ_DRIVE_TORQUE);
    dr.stall_torque = 0.5;
    dr.no_load_speed = 300;
    dr.gear = 30;
    khzHil *hil = make(m, d, NULL, 0, &dr, 1, 1);
    double w = spin_after(m, d, hil, 100, 3);
    ENSURE_MSG(fabs(w - 10) < 0.01, "voltage-limited speed %g rad/s, want no_load / gear = 10", w);
    /* at half the no-load speed, at most half the stall torque */
    d->qd[dof] = 5;
    d->tau[dof] = 100;
    khz_hilDrive(hil, m, d);
    ENSURE_NEAR(d->tau[dof], 0.25, 1e-12);
    /* braking against the motion: up to stall (1 + w / w0) */
    d->tau[dof] = -100;
    for (int k = 0; k < 3; k++) {
      d->qd[dof] = 5;
      d->tau[dof] = -100;
      khz_hilDrive(hil, m, d);
    }
    ENSURE_NEAR(d->tau[dof], -0.75, 1e-12);
    khz_hilFree(&hil);
    khz_deleteData(&d);
  }
  /* saturation and Coulomb friction */
  {
    khzData *d = khz_makeData(m, 0);
    khzDriveSpec dr = drive("spin", KHZ_DRIVE_TORQUE);
    dr.max_torque = 2;
    dr.coulomb = 0.1;
    khzHil *hil = make(m, d, NULL, 0, &dr, 1, 1);
    d->qd[dof] = 1;
    d->tau[dof] = 10;
    khz_hilDrive(hil, m, d);
    ENSURE_NEAR(d->tau[dof], 2 - 0.1, 1e-9);
    d->qd[dof] = 0;
    d->tau[dof] = 0;
    khz_hilDrive(hil, m, d);
    ENSURE_NEAR(d->tau[dof], 0, 1e-15);
    khz_hilFree(&hil);
    khz_deleteData(&d);
  }
  /* velocity mode, the drive's own D at the tick rate on the free wheel:
   * I w' = kd (w* - w), w(t) = w* (1 - exp(-kd t / I)) */
  {
    khzData *d = khz_makeData(m, 0);
    khzDriveSpec dr = drive("spin", KHZ_DRIVE_VELOCITY);
    dr.kd = 0.1;
    khzHil *hil = make(m, d, NULL, 0, &dr, 1, 1);
    double worst = 0, tau = I_WHEEL / dr.kd;
    for (int k = 1; k <= 4; k++) {
      double t = k * 0.5 * tau, w = spin_after(m, d, hil, 5, 0.5 * tau);
      worst = fmax(worst, fabs(w / (5 * (1 - exp(-t / tau))) - 1));
    }
    ENSURE_MSG(worst < 0.005, "velocity mode: step response off its exponential by %g", worst);
    khz_hilFree(&hil);
    khz_deleteData(&d);
  }
  /* position mode, the drive's PD on the free wheel: a damped oscillator,
   * w_n = sqrt(kp / I), zeta = kd / (2 sqrt(kp I)); from rest at 0 to q* = 1,
   * q(t) = 1 - exp(-zeta w_n t) (cos w_d t + zeta / sqrt(1 - zeta^2) sin w_d t) */
  {
    khzData *d = khz_makeData(m, 0);
    khzDriveSpec dr = drive("spin", KHZ_DRIVE_POSITION);
    dr.kp = 2, dr.kd = 0.1;
    khzHil *hil = make(m, d, NULL, 0, &dr, 1, 1);
    double wn = sqrt(dr.kp / I_WHEEL), zeta = dr.kd / (2 * sqrt(dr.kp * I_WHEEL));
    double wd = wn * sqrt(1 - zeta * zeta), worst = 0, peak = 0;
    int qa = m->jnt_qadr[WHEEL];
    double q0 = d->q[qa];
    for (int k = 1; k <= 1000; k++) {
      double t = k * H;
      spin_after(m, d, hil, q0 + 1, H);
      double want = 1 - exp(-zeta * wn * t) * (cos(wd * t) + zeta / sqrt(1 - zeta * zeta) * sin(wd * t));
      worst = fmax(worst, fabs(d->q[qa] - q0 - want));
      peak = fmax(peak, d->q[qa] - q0);
    }
    /* the overshoot exp(-pi zeta / sqrt(1 - zeta^2)) = 44.4 % */
    ENSURE_MSG(worst < 0.01 && fabs(peak - 1 - exp(-M_PI * zeta / sqrt(1 - zeta * zeta))) < 0.01,
               "position mode: step response off the damped oscillator by %g (peak %g)", worst,
               peak);
    khz_hilFree(&hil);
    khz_deleteData(&d);
  }
  /* position mode: the drive's PD settles the pendulum where kp (q* - q) holds gravity */
  {
    khzData *d = khz_makeData(m, 0);
    khzDriveSpec dr = drive("swing", KHZ_DRIVE_POSITION);
    dr.kp = 200;
    dr.kd = 5;
    khzHil *hil = make(m, d, NULL, 0, &dr, 1, 1);
    int pd = m->jnt_dofadr[PEND], pq = m->jnt_qadr[PEND];
    for (int k = 0; k < 5000; k++) {
      memset(d->tau, 0, (size_t)m->nv * sizeof(double));
      d->tau[pd] = 0.3;
      khz_hilDrive(hil, m, d);
      khz_step(m, d);
    }
    /* equilibrium: kp (0.3 - q) + m g l cos(q) = 0 (gravity turns a com at
     * +x about +y towards positive q) */
    double q = d->q[pq], res = dr.kp * (0.3 - q) + 1 * 9.81 * 0.5 * cos(q);
    ENSURE_MSG(fabs(res) < 1e-3 * dr.kp, "position mode: residual torque %g at q %g", res, q);
    khz_hilFree(&hil);
    khz_deleteData(&d);
  }
  khz_deleteModel(&m);
}

/* ------------------------------------------------------------- faults -- */

static void test_faults(void) {
  khzModel *m = model(0);
  khzData *d = khz_makeData(m, 0);
  khzSensorSpec s = sensor("enc", KHZ_SENSOR_ENCODER, WHEEL);
  khzDriveSpec dr[2] = {drive("spin", KHZ_DRIVE_TORQUE), drive("swing", KHZ_DRIVE_TORQUE)};
  khzHil *hil = make(m, d, &s, 1, dr, 2, 1);
  int qa = m->jnt_qadr[WHEEL], dof = m->jnt_dofadr[WHEEL];
  uint64_t k = 1;
  d->q[qa] = 1;
  khz_hilSample(hil, m, d, k++);
  ENSURE(khz_hilValues(hil)[0] == 1);
  /* freeze: the next reading keeps the old value */
  ENSURE(khz_hilSensorFault(hil, 0, KHZ_FAULT_FREEZE, 0, 0) == 0);
  d->q[qa] = 2;
  khz_hilSample(hil, m, d, k++);
  ENSURE(khz_hilValues(hil)[0] == 1 && khz_hilSensorFaultType(hil, 0) == KHZ_FAULT_FREEZE);
  /* dropout: NaN at once */
  ENSURE(khz_hilSensorFault(hil, 0, KHZ_FAULT_DROPOUT, 0, 0) == 0);
  ENSURE(isnan(khz_hilValues(hil)[0]));
  khz_hilSample(hil, m, d, k++);
  ENSURE(isnan(khz_hilValues(hil)[0]) && isnan(khz_hilValues(hil)[1]));
  /* bias: added at once; cleared: gone at once */
  ENSURE(khz_hilSensorFault(hil, 0, KHZ_FAULT_BIAS, 0.5, 0) == 0);
  khz_hilSample(hil, m, d, k++);
  ENSURE(khz_hilValues(hil)[0] == 2.5);
  ENSURE(khz_hilSensorFault(hil, 0, KHZ_FAULT_NONE, 0, 0) == 0);
  ENSURE(khz_hilValues(hil)[0] == 2);
  /* a timed fault ends at its time */
  ENSURE(khz_hilSensorFault(hil, 0, KHZ_FAULT_DROPOUT, 0, 0.5) == 0 && khz_hilAnyFault(hil));
  khz_hilExpire(hil, 0.499);
  ENSURE(isnan(khz_hilValues(hil)[0]));
  khz_hilExpire(hil, 0.5);
  ENSURE(khz_hilValues(hil)[0] == 2 && !khz_hilAnyFault(hil));
  ENSURE(khz_hilSensorFault(hil, 0, KHZ_FAULT_LIMP, 0, 0) == -1); /* a drive's fault */
  ENSURE(khz_hilSensorFault(hil, 5, KHZ_FAULT_FREEZE, 0, 0) == -1);

  /* limp and torque loss */
  ENSURE(khz_hilDriveFault(hil, 0, KHZ_FAULT_LIMP, 0, 0) == 0);
  d->tau[dof] = 1;
  khz_hilDrive(hil, m, d);
  ENSURE(d->tau[dof] == 0);
  ENSURE(khz_hilDriveFault(hil, 0, KHZ_FAULT_TORQUE_LOSS, 0.25, 0) == 0);
  d->tau[dof] = 1;
  khz_hilDrive(hil, m, d);
  ENSURE(d->tau[dof] == 0.25);
  ENSURE(khz_hilDriveFault(hil, 0, KHZ_FAULT_TORQUE_LOSS, 2, 0) == -1);
  ENSURE(khz_hilDriveFault(hil, 0, KHZ_FAULT_NONE, 0, 0) == 0);

  /* lock: the pendulum, released horizontal, stays where it locked */
  khz_resetData(m, d);
  khz_hilReset(hil, m, d);
  int pq = m->jnt_qadr[PEND], pd = m->jnt_dofadr[PEND];
  double q0 = d->q[pq];
  ENSURE(khz_hilDriveFault(hil, 1, KHZ_FAULT_LOCK, 0, 0) == 0);
  for (int i = 0; i < 1000; i++) {
    memset(d->tau, 0, (size_t)m->nv * sizeof(double));
    d->tau[pd] = 3; /* the controller's torque is ignored by a locked joint */
    khz_hilDrive(hil, m, d);
    khz_step(m, d);
  }
  ENSURE_MSG(fabs(d->q[pq] - q0) < 2e-3 && isfinite(d->q[pq]), "locked joint moved %g rad",
             d->q[pq] - q0);
  khz_hilFree(&hil);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* ---------------------------------------------- determinism, heap, errors -- */

static uint64_t run_hash(uint64_t seed) {
  khzModel *m = model(0);
  khzData *d = khz_makeData(m, 0);
  khzSensorSpec s[3] = {sensor("enc", KHZ_SENSOR_ENCODER, PEND), sensor("gyro", KHZ_SENSOR_GYRO, BOX),
                        sensor("acc", KHZ_SENSOR_ACCEL, BOX)};
  for (int i = 0; i < 3; i++) s[i].noise.white = 0.01, s[i].noise.bias_walk = 0.01;
  s[2].divisor = 2, s[2].latency = 5;
  khzDriveSpec dr = drive("swing", KHZ_DRIVE_POSITION);
  dr.kp = 50, dr.kd = 2, dr.lag = 0.01, dr.max_torque = 20, dr.coulomb = 0.05;
  khz_forward(m, d);
  khzHil *hil = make(m, d, s, 3, &dr, 1, seed);
  uint64_t h = 1469598103934665603ull;
  heap_counting = 1;
  heap_calls = 0;
  for (int k = 1; k <= 300; k++) {
    memset(d->tau, 0, (size_t)m->nv * sizeof(double));
    /* the controller sees only the encoder */
    d->tau[m->jnt_dofadr[PEND]] = 0.5 - 0.1 * khz_hilValues(hil)[0];
    khz_hilDrive(hil, m, d);
    khz_step(m, d);
    khz_hilSample(hil, m, d, (uint64_t)k);
    const unsigned char *p = (const unsigned char *)khz_hilValues(hil);
    for (size_t i = 0; i < (size_t)khz_hilNValue(hil) * sizeof(double); i++)
      h = (h ^ p[i]) * 1099511628211ull;
  }
  heap_counting = 0;
  ENSURE_MSG(heap_calls == 0, "%ld heap calls while driving and sampling", heap_calls);
  khz_hilFree(&hil);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  return h;
}

static void test_determinism(void) {
  uint64_t a = run_hash(11), b = run_hash(11), c = run_hash(12);
  ENSURE(a == b);
  ENSURE(a != c);
}

static void test_errors(void) {
  khzModel *m = model(0);
  char err[256];
  khzSensorSpec s = sensor("enc", KHZ_SENSOR_ENCODER, BOX);
  ENSURE(!khz_hilCreate(m, &s, 1, NULL, 0, 1, H, err, sizeof err));
  ENSURE_MSG(strstr(err, "'enc'") && strstr(err, "revolute"), "%s", err);
  s = sensor("gyro", KHZ_SENSOR_GYRO, BOX);
  s.divisor = 0;
  ENSURE(!khz_hilCreate(m, &s, 1, NULL, 0, 1, H, err, sizeof err));
  ENSURE_MSG(strstr(err, "divisor"), "%s", err);
  s.divisor = 1;
  s.noise.white = -1;
  ENSURE(!khz_hilCreate(m, &s, 1, NULL, 0, 1, H, err, sizeof err));
  ENSURE_MSG(strstr(err, "white"), "%s", err);
  khzDriveSpec dr = drive("nope", KHZ_DRIVE_TORQUE);
  ENSURE(!khz_hilCreate(m, NULL, 0, &dr, 1, 1, H, err, sizeof err));
  ENSURE_MSG(strstr(err, "'nope'"), "%s", err);
  dr = drive("box", KHZ_DRIVE_TORQUE);
  ENSURE(!khz_hilCreate(m, NULL, 0, &dr, 1, 1, H, err, sizeof err));
  dr = drive("spin", KHZ_DRIVE_TORQUE);
  dr.stall_torque = 1;
  ENSURE(!khz_hilCreate(m, NULL, 0, &dr, 1, 1, H, err, sizeof err));
  ENSURE_MSG(strstr(err, "no_load_speed"), "%s", err);
  ENSURE(khz_sensorTypeFind("accelerometer") == KHZ_SENSOR_ACCEL);
  ENSURE(khz_faultTypeFind("lock") == KHZ_FAULT_LOCK);
  ENSURE(khz_driveModeFind("velocity") == KHZ_DRIVE_VELOCITY);
  khz_deleteModel(&m);
}

int main(void) {
  test_rng();
  test_rng_reference();
  test_zig_table();
  test_rng_batch();
  test_encoder();
  test_white_noise();
  test_bias_walk();
  test_rate_latency();
  test_body_sensors();
  test_sleeping_contacts();
  test_light_under_heavy();
  test_joint_force_torque();
  test_drives();
  test_faults();
  test_determinism();
  test_errors();
  return ensure_report();
}
