/* own_clock.c — a controller with its own clock, as hardware-in-the-loop
 * rigs run: a 500 Hz loop (absolute deadlines, clock_nanosleep) against the
 * 1 kHz server. Each period it takes the states that arrived (never waits for
 * one), sends PD targets for slow sinusoids (the server's in-tick PD closes
 * the inner loop at 1 kHz) and measures the command latency it sees:
 *
 *   sent -> applied   the start of the first tick that applied the command
 *                     (State.tick_time_ns + lateness_ns) minus its send time
 *                     (Command.client_time_ns, echoed): same-host clocks
 *   state age         send time minus the completion of the state it answers
 *
 *   own_clock [--state EP] [--command EP] [--rate-hz 500] [--seconds 3]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <khz/client.h>

#define MAXA 64

typedef struct clk {
  int64_t *sent_ns;    /* by command seq: when it was sent */
  uint64_t ncmd;       /* commands sent */
  uint64_t applied_up; /* highest command seq seen applied */
  int64_t *lat, *age;  /* samples, ns */
  size_t nlat, nage, cap;
  uint64_t applied, watchdog;
  const Khz__V1__State *newest;
  uint64_t newest_seq;
} clk;

/* every state, in order: the first one naming a command is where it was applied */
static void on_state(khzClient *c, const Khz__V1__State *st, void *user) {
  clk *k = user;
  (void)c;
  if (st->command_seq > k->applied_up && st->command_seq <= k->ncmd) {
    k->applied_up = st->command_seq;
    k->applied++;
    int64_t start = st->tick_time_ns + (st->stats ? st->stats->lateness_ns : 0);
    if (k->nlat < k->cap) k->lat[k->nlat++] = start - k->sent_ns[st->command_seq];
  }
  if (st->command_seq && (st->flags & KHZ__V1__STATE_FLAG__FLAG_WATCHDOG)) k->watchdog++;
  k->newest = st;
  k->newest_seq = st->seq;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void report(const char *what, int64_t *v, size_t n) {
  if (!n) {
    printf("  %-16s no samples\n", what);
    return;
  }
  qsort(v, n, sizeof *v, cmp64);
  printf("  %-16s p50 %7.1f  p90 %7.1f  p99 %7.1f  max %7.1f us  min %6.1f us  (%zu)\n", what,
         v[n / 2] / 1e3, v[n * 9 / 10] / 1e3, v[n * 99 / 100] / 1e3, v[n - 1] / 1e3, v[0] / 1e3, n);
}

int main(int argc, char **argv) {
  const char *state_ep = NULL, *cmd_ep = NULL;
  double rate = 500, seconds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--state")) state_ep = argv[i + 1];
    else if (!strcmp(argv[i], "--command")) cmd_ep = argv[i + 1];
    else if (!strcmp(argv[i], "--rate-hz")) rate = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else
      return fprintf(stderr,
                     "usage: own_clock [--state EP] [--command EP] [--rate-hz R] [--seconds S]\n"),
             2;
  }
  if (!(rate >= 10 && rate <= 10000 && seconds > 0 && seconds < 3600))
    return fprintf(stderr, "own_clock: --rate-hz 10..10000, --seconds 0..3600\n"), 2;

  /* connect; everything the loop needs is allocated here */
  char err[512];
  khzClient *c = khz_client_new(state_ep, cmd_ep, NULL, err, sizeof err);
  const Khz__V1__ModelDescription *md = c ? khz_client_describe(c, 3000) : NULL;
  const Khz__V1__State *st = md ? khz_client_latestState(c, 2000) : NULL;
  if (!st) {
    fprintf(stderr, "own_clock: %s\n", c ? khz_client_error(c) : err);
    khz_client_destroy(&c);
    return 1;
  }
  size_t na = md->na < MAXA ? md->na : MAXA, periods = (size_t)(seconds * rate);
  double q0[MAXA], qt[MAXA], qdt[MAXA], kp[MAXA], kd[MAXA];
  for (size_t a = 0; a < na; a++) {
    double effort = md->actuators[a]->effort_limit > 0 ? md->actuators[a]->effort_limit : 50;
    q0[a] = st->q[md->actuators[a]->q_index];
    kp[a] = 8 * effort, kd[a] = 0.12 * effort;
  }
  clk k = {0};
  k.cap = periods + 16;
  k.sent_ns = calloc(k.cap + 1, sizeof(int64_t));
  k.lat = calloc(k.cap, sizeof(int64_t));
  k.age = calloc(k.cap, sizeof(int64_t));
  k.newest = st, k.newest_seq = st->seq;
  khz_client_onState(c, on_state, &k);
  printf(
      "own_clock: a %g Hz controller against the %g Hz server ('%s'), %g s: PD targets for "
      "the in-tick PD\n",
      rate, md->rate_hz, md->scene, seconds);

  /* the loop: absolute deadlines, one command per period */
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  int64_t period_ns = (int64_t)(1e9 / rate), late_max = 0;
  uint64_t overruns = 0, stale = 0, last_answered = 0;
  double t0 = st->sim_time, err2 = 0;
  for (size_t p = 0; p < periods; p++) {
    next.tv_nsec += period_ns;
    while (next.tv_nsec >= 1000000000L) next.tv_nsec -= 1000000000L, next.tv_sec++;
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    int64_t deadline = (int64_t)next.tv_sec * 1000000000LL + next.tv_nsec;
    int64_t late = khz_client_now() - deadline;
    late_max = late > late_max ? late : late_max;
    if (late > period_ns) { /* overran: skip the periods already past, no catch-up burst */
      int64_t skip = late / period_ns;
      overruns++;
      deadline += skip * period_ns;
      next.tv_sec = (time_t)(deadline / 1000000000LL);
      next.tv_nsec = (long)(deadline % 1000000000LL);
    }

    /* what arrived since the last period (never waits) */
    khz_client_dispatch(c, 0);
    st = k.newest;
    if (k.newest_seq == last_answered)
      stale++; /* no new state this period: answer the old one again */
    last_answered = k.newest_seq;

    /* targets: slow sinusoids around the start pose */
    double t = st->sim_time - t0;
    for (size_t a = 0; a < na; a++) {
      double w = 2 * M_PI * 0.5, ph = 0.8 * (double)a;
      qt[a] = q0[a] + 0.2 * sin(w * t + ph);
      qdt[a] = 0.2 * w * cos(w * t + ph);
      double e = qt[a] - st->q[md->actuators[a]->q_index];
      err2 += e * e / (double)na;
    }
    if (khz_client_sendTargets(c, st, qt, qdt, kp, kd, NULL, na) == 0) {
      k.ncmd = khz_client_counters(c)->commands;                 /* the library's command seq */
      if (k.ncmd <= k.cap) k.sent_ns[k.ncmd] = khz_client_now(); /* ~ client_time_ns */
      if (k.nage < k.cap) k.age[k.nage++] = khz_client_now() - st->mono_time_ns;
    }
  }
  khz_client_dispatch(c, 50); /* the last commands' states */

  /* what it saw; the server's view of the same */
  printf(
      "  periods          %zu at %g Hz: %llu overran (max wake-up lateness %.1f us), %llu "
      "without a new state\n",
      periods, rate, (unsigned long long)overruns, late_max / 1e3, (unsigned long long)stale);
  printf(
      "  commands         %llu sent, %llu seen applied (%.1f %%), %llu superseded before a "
      "tick took them; watchdog in %llu states\n",
      (unsigned long long)k.ncmd, (unsigned long long)k.applied,
      k.ncmd ? 100.0 * (double)k.applied / (double)k.ncmd : 0,
      (unsigned long long)(k.ncmd - k.applied), (unsigned long long)k.watchdog);
  report("sent -> applied", k.lat, k.nlat);
  report("state age", k.age, k.nage);
  const Khz__V1__Stats *s = khz_client_getStats(c, 2000);
  if (s)
    printf(
        "  server's view    command latency (state complete -> applied) p50 %.1f us, "
        "response p50 %.1f us\n",
        s->command_latency->p50 / 1e3, s->command_response->p50 / 1e3);
  printf("result: %.1f %% of commands applied, rms tracking error %.4f rad, watchdog %s\n",
         k.ncmd ? 100.0 * (double)k.applied / (double)k.ncmd : 0, sqrt(err2 / (double)periods),
         k.watchdog ? "ENGAGED" : "never engaged");
  int good = k.ncmd > 0 && k.applied >= k.ncmd * 9 / 10 && k.watchdog == 0;
  free(k.sent_ns), free(k.lat), free(k.age);
  khz_client_destroy(&c);
  return good ? 0 : 1;
}
