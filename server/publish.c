/* publish.c — what goes out without being asked: every state the loop
 * publishes (packed by the codec into its reused buffer, sent on the PUB
 * socket, appended to the recording), the lockstep keep-alive that repeats
 * the awaited state for late subscribers, the log lines for what the states
 * say changed (watchdog, lockstep timeouts, overruns, drops), and the
 * statistics: the periodic log line and the final summary.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "internal.h"
#include "log.h"

/* ------------------------------------------------------ state stream -- */

/* ---------------------------------------------------------- recording -- */

static void record_wake(void *user) {
  khzServer *s = user;
  ev_async_send(s->ev, &s->rec_async);
}

int khz_record_start(khzServer *s, int dirfd, const char *path, char *err, size_t errsz) {
  s->rec = khz_recorder_open(dirfd, path, KHZ_RECORD_QUEUE, record_wake, s, err, errsz);
  if (!s->rec) return -1;
  s->rec_stopping = 0;
  snprintf(s->rec_path, sizeof s->rec_path, "%s", path);
  khz_log(KHZ_LOG_INFO, "recording states into %s", s->rec_path);
  return 0;
}

/* asks the writer to finish; khz_record_doneCb follows when the file is closed */
void khz_record_stop(khzServer *s) {
  if (!s->rec || s->rec_stopping) return;
  s->rec_stopping = 1;
  khz_recorder_stop(s->rec);
  ev_timer_set(&s->rec_timer, 5.0, 0);
  ev_timer_start(s->ev, &s->rec_timer);
}

uint64_t khz_record_written(khzServer *s) {
  return s->rec_written + (s->rec ? khz_recorder_written(s->rec) : 0);
}

uint64_t khz_record_dropped(khzServer *s) {
  return s->rec_dropped + (s->rec ? khz_recorder_dropped(s->rec) : 0);
}

/* the writer stopped (asked to, or a write failed): free it, say so, answer
 * the StopRecording that waits */
void khz_record_doneCb(struct ev_loop *ev, ev_async *w, int revents) {
  khzServer *s = w->data;
  (void)ev, (void)revents;
  if (!s->rec || !khz_recorder_finished(s->rec)) return;
  const char *e = khz_recorder_error(s->rec);
  uint64_t n = khz_recorder_written(s->rec), dropped = khz_recorder_dropped(s->rec);
  if (e)
    khz_log(KHZ_LOG_ERROR, "recording into %s failed (%s): stopped", s->rec_path, e);
  khz_log(dropped ? KHZ_LOG_WARN : KHZ_LOG_INFO,
          "recording into %s stopped: %llu states written, %llu dropped (the disk was slower than "
          "the state stream)",
          s->rec_path, (unsigned long long)n, (unsigned long long)dropped);
  s->rec_written += n;
  s->rec_dropped += dropped;
  khz_recorder_free(&s->rec);
  s->rec_stopping = 0;
  ev_timer_stop(s->ev, &s->rec_timer);
  khz_requests_recordStopped(s);
}

/* the writer has not finished within 5 s (a stalled disk): the StopRecording
 * is answered anyway; the file closes when the writer can */
void khz_record_timeoutCb(struct ev_loop *ev, ev_timer *w, int revents) {
  khzServer *s = w->data;
  (void)ev, (void)revents;
  khz_log(KHZ_LOG_WARN, "recording into %s: the writer is still flushing after 5 s", s->rec_path);
  khz_requests_recordStopped(s);
}

static void record_state(khzServer *s, const uint8_t *buf, size_t len) {
  if (s->rec_stopping) return;
  if (khz_recorder_write(s->rec, buf, len) && khz_recorder_error(s->rec)) khz_record_stop(s);
}

static void publish_bytes(khzServer *s, const uint8_t *buf, size_t len) {
  zmq_send(s->pub, "state", 5, ZMQ_SNDMORE | ZMQ_DONTWAIT);
  zmq_send(s->pub, buf, len, ZMQ_DONTWAIT);
}

/* log lines for what the states say changed (once per event, warnings at most 1/s) */
static void log_transitions(khzServer *s, const khzLoopState *st) {
  double now = ev_now(s->ev);
  int wd = (st->flags & KHZ_FLAG_WATCHDOG) && !(st->flags & KHZ_FLAG_NO_COMMAND);
  if (st->stats.watchdog_engaged > s->seen_watchdog && !s->watchdog_logged) {
    khz_log(KHZ_LOG_WARN,
            "watchdog: no command for more than %g ms at state %llu: applying the safe command (%s)",
            s->cfg.watchdog_ms, (unsigned long long)st->seq,
            s->cfg.safe_command == KHZ_SAFE_DAMPING ? "joint damping" : "zero torque");
    s->watchdog_logged = 1;
  } else if (s->watchdog_logged && !wd && !(st->flags & KHZ_FLAG_WATCHDOG)) {
    khz_log(KHZ_LOG_INFO, "watchdog: commands are back at state %llu", (unsigned long long)st->seq);
    s->watchdog_logged = 0;
  }
  s->seen_watchdog = st->stats.watchdog_engaged;
  if (st->flags & KHZ_FLAG_RESET) s->watchdog_logged = 0;
  if (now - s->last_warn_log < 1.0) return;
  if (st->stats.lockstep_timeouts > s->seen_timeouts) {
    khz_log(KHZ_LOG_WARN,
            "lockstep: no command answered state %llu within %g ms: the safe command was applied "
            "(%llu timeouts so far)",
            (unsigned long long)(st->seq - 1), s->cfg.lockstep_timeout_ms,
            (unsigned long long)st->stats.lockstep_timeouts);
    s->seen_timeouts = st->stats.lockstep_timeouts;
    s->last_warn_log = now;
  } else if (st->stats.missed > s->seen_overruns) {
    khz_log(KHZ_LOG_WARN, "overruns: %llu ticks ended late, %llu periods skipped so far",
            (unsigned long long)st->stats.overruns, (unsigned long long)st->stats.missed);
    s->seen_overruns = st->stats.missed;
    s->last_warn_log = now;
  } else if (st->stats.states_dropped > s->seen_dropped && st->mode != KHZ_MODE_FAST) {
    khz_log(KHZ_LOG_WARN, "%llu states dropped: the I/O thread could not keep up",
            (unsigned long long)st->stats.states_dropped);
    s->seen_dropped = st->stats.states_dropped;
    s->last_warn_log = now;
  } else if (st->flags & KHZ_FLAG_BADSTATE) {
    khz_log(KHZ_LOG_WARN, "state %llu: the step produced NaN/inf and was rolled back",
            (unsigned long long)st->seq);
    s->last_warn_log = now;
  }
}

/* every state in the loop's ring: published, recorded, kept for the keep-alive */
void khz_publish_states(khzServer *s) {
  const khzLoopState *st;
  uint64_t taken = 0;
  while ((st = khz_loop_peekState(s->loop))) {
    taken++;
    uint8_t *buf;
    size_t len;
    if (khz_codec_packState(&s->codec, st, s->generation, s->rejected, &buf, &len) == 0) {
      publish_bytes(s, buf, len);
      s->published++;
      if (s->rec) record_state(s, buf, len);
      /* kept for the lockstep keep-alive (a mode switch may come at any time) */
      if (len > s->lastcap) {
        uint8_t *nb = realloc(s->last, len * 2);
        if (nb) s->last = nb, s->lastcap = len * 2;
      }
      if (len <= s->lastcap) memcpy(s->last, buf, len), s->lastlen = len;
      s->last_pub = ev_now(s->ev);
    }
    s->have_state = 1;
    s->latest_seq = st->seq;
    s->reset_seq = st->reset_seq;
    log_transitions(s, st);
    khz_loop_releaseState(s->loop);
    if (s->pause_seq && s->latest_seq >= s->pause_seq) khz_publish_paused(s, s->pause_seq);
  }
  if (taken > s->io.states_max) s->io.states_max = taken;
}

/* the last published state once more, with extra flags and the same seq */
static void republish_last(khzServer *s, uint32_t flags) {
  Khz__V1__State *st = khz__v1__state__unpack(NULL, s->lastlen, s->last);
  if (!st) return;
  if (st->seq == s->latest_seq) {
    st->flags |= flags;
    size_t n = khz__v1__state__get_packed_size(st);
    uint8_t *buf = malloc(n);
    if (buf) {
      khz__v1__state__pack(st, buf);
      publish_bytes(s, buf, n);
      free(buf);
    }
  }
  khz__v1__state__free_unpacked(st, NULL);
  s->last_pub = ev_now(s->ev);
}

/* lockstep keep-alive: a controller that joined late (PUB/SUB drops the first
 * messages of a new subscriber) still sees the state the loop waits on */
void khz_publish_keepaliveCb(struct ev_loop *ev, ev_timer *w, int revents) {
  khzServer *s = w->data;
  (void)revents;
  if (s->cfg.mode != KHZ_MODE_LOCKSTEP || !s->lastlen || ev_now(ev) - s->last_pub < KHZ_KEEPALIVE_S)
    return;
  republish_last(s, KHZ__V1__STATE_FLAG__FLAG_REPEATED);
}

/* a subscriber learns from the stream itself that no state follows: the state
 * the loop paused after is repeated with FLAG_PAUSED (the ticks of a Step
 * request that end paused carry the flag already) */
void khz_publish_paused(khzServer *s, uint64_t seq) {
  if (!s->have_state || s->latest_seq < seq) {
    s->pause_seq = seq; /* khz_publish_states announces it when that state is out */
    return;
  }
  s->pause_seq = 0;
  if (s->lastlen)
    republish_last(s, KHZ__V1__STATE_FLAG__FLAG_PAUSED | KHZ__V1__STATE_FLAG__FLAG_REPEATED);
}

/* ---------------------------------------------------------- statistics -- */

/* the share of commands applied at the tick right after their state, % */
static double next_tick_share(const khzLoopStats *ls) {
  uint64_t all = ls->tick.commands + ls->tick.superseded;
  return all ? 100.0 * (double)ls->tick.on_time / (double)all : 0;
}

static void stats_line(khzServer *s) {
  khzLoopStats ls;
  khz_loop_stats(s->loop, &ls);
  double on = next_tick_share(&ls);
  khz_log(KHZ_LOG_INFO,
          "seq %llu %s%s: lateness p50 %.1f p99 %.1f max %.1f us, compute p50 %.1f us, overruns %llu "
          "(missed %llu; khz's own %llu%s), commands %llu (%.2f%% next tick), latency p99 %.1f us, rejected %llu",
          (unsigned long long)ls.seq, khz_loop_modeName(ls.mode), ls.paused ? " paused" : "",
          ls.lateness.p50 / 1e3, ls.lateness.p99 / 1e3, ls.lateness.max / 1e3, ls.compute.p50 / 1e3,
          (unsigned long long)ls.tick.overruns, (unsigned long long)ls.tick.missed,
          (unsigned long long)ls.tick.own_overruns, s->cfg.cpu_clock ? "" : ", not attributed",
          (unsigned long long)ls.tick.commands, on, ls.latency.p99 / 1e3,
          (unsigned long long)s->rejected);
}

void khz_publish_statsCb(struct ev_loop *ev, ev_timer *w, int revents) {
  (void)ev, (void)revents;
  stats_line(w->data);
}

void khz_server_printStats(khzServer *s, FILE *out) {
  khzLoopStats ls;
  khz_loop_stats(s->loop, &ls);
  double on = next_tick_share(&ls);
  fprintf(out,
          "khz-server: final statistics\n"
          "  ticks              %llu (last state %llu, %s, %.0f Hz)\n"
          "  lateness           p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us (%llu realtime ticks)\n"
          "  compute            p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us\n"
          "  overruns           %llu (missed periods %llu): khz's own %llu (loop work > period), "
          "preempted mid-tick %llu, woke late %llu%s\n"
          "  tick CPU time      p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us; loop thread context "
          "switches %lld involuntary, %lld voluntary\n"
          "  commands           %llu taken, %.3f%% applied at the next tick, %llu late, %llu superseded\n"
          "  command latency    p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us (state -> applying tick)\n"
          "  command response   p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us (state -> command in)\n"
          "  watchdog           engaged %llu times; lockstep timeouts %llu\n"
          "  states             %llu published, %llu dropped; I/O thread: %llu wake-ups, at most "
          "%llu states taken at one (ring %d), longest gap %.1f ms\n"
          "  rejected messages  %llu\n",
          (unsigned long long)ls.tick.ticks, (unsigned long long)ls.seq, khz_loop_modeName(ls.mode),
          ls.rate_hz, ls.lateness.p50 / 1e3, ls.lateness.p99 / 1e3, ls.lateness.p999 / 1e3,
          ls.lateness.max / 1e3, (unsigned long long)ls.lateness.count, ls.compute.p50 / 1e3,
          ls.compute.p99 / 1e3, ls.compute.p999 / 1e3, ls.compute.max / 1e3,
          (unsigned long long)ls.tick.overruns, (unsigned long long)ls.tick.missed,
          (unsigned long long)ls.tick.own_overruns, (unsigned long long)ls.tick.preempted_overruns,
          (unsigned long long)ls.tick.late_overruns,
          s->cfg.cpu_clock ? "" : " (not attributed: cpu_clock false)", ls.cpu.p50 / 1e3, ls.cpu.p99 / 1e3,
          ls.cpu.p999 / 1e3, ls.cpu.max / 1e3, (long long)ls.involuntary_switches,
          (long long)ls.voluntary_switches,
          (unsigned long long)ls.tick.commands, on, (unsigned long long)ls.tick.late,
          (unsigned long long)ls.tick.superseded, ls.latency.p50 / 1e3, ls.latency.p99 / 1e3,
          ls.latency.p999 / 1e3, ls.latency.max / 1e3, ls.response.p50 / 1e3, ls.response.p99 / 1e3,
          ls.response.p999 / 1e3, ls.response.max / 1e3, (unsigned long long)ls.tick.watchdog_engaged,
          (unsigned long long)ls.tick.lockstep_timeouts, (unsigned long long)s->published,
          (unsigned long long)ls.tick.states_dropped, (unsigned long long)s->io.wakes,
          (unsigned long long)s->io.states_max, s->io.state_ring, s->io.gap_max_ns / 1e6,
          (unsigned long long)s->rejected);
  if (!s->cfg.verify_overruns) return;
  /* the verifier's verdicts on the own overruns, and each one it kept */
  fprintf(out,
          "  overrun re-runs    confirmed own %llu, host %llu, unverified %llu, mismatch %llu "
          "(of %llu own); own by class: step %llu, around the step %llu, requests %llu\n",
          (unsigned long long)(ls.tick.verified_own + ls.tick.verified_around +
                               ls.tick.verified_requests),
          (unsigned long long)ls.tick.verified_host, (unsigned long long)ls.tick.unverified,
          (unsigned long long)ls.tick.verify_mismatch, (unsigned long long)ls.tick.own_overruns,
          (unsigned long long)ls.tick.verified_own, (unsigned long long)ls.tick.verified_around,
          (unsigned long long)ls.tick.verified_requests);
  khzOverrunCheck chk[KHZ_LOOP_MAX_CHECKS];
  int n = khz_loop_overrunChecks(s->loop, chk, KHZ_LOOP_MAX_CHECKS);
  static const char *const verdict[] = {"?", "own (step)", "host", "mismatch", "own (around the step)",
                                        "own (requests)"};
  /* KHZ_PHASE_* order */
  static const char *const phase[KHZ_NPHASES] = {"pre", "step", "post", "copy", "wake", "requests",
                                                 "rest"};
  /* the loop's request kinds (khzRequestType order; the last: unknown) */
  static const char *const kind[KHZ_NREQUEST + 1] = {
      "reset", "pause", "resume", "step", "mode", "rate", "contact", "gains", "haptic_gains",
      "wrench", "clear_wrenches", "watchdog", "lockstep_timeout", "publish", "hash", "reset_stats",
      "fault", "unknown"};
  _Static_assert(KHZ_NREQUEST == 17, "a loop request kind without a name here");
  for (int i = 0; i < n; i++) {
    const khzOverrunCheck *c = &chk[i];
    char ph[512], rq[512] = "";
    size_t len = 0, rlen = 0;
    for (int k = 0; k <= KHZ_NREQUEST && rlen < sizeof rq; k++) {
      if (!c->req_n[k]) continue;
      int w = snprintf(rq + rlen, sizeof rq - rlen, "%s%s x%d %.1f (p99 %.1f each) -> %.1f",
                       rlen ? ", " : "; requests by kind (CPU measured -> counted) ", kind[k],
                       c->req_n[k], c->req_ns[k] / 1e3, c->req_p99_ns[k] / 1e3,
                       c->req_accepted_ns[k] / 1e3);
      if (w < 0) break;
      rlen += (size_t)w;
    }
    for (int p = 0; p < KHZ_NPHASES && len < sizeof ph; p++) {
      int w = c->phase_p99_ns[p] > 0
                  ? snprintf(ph + len, sizeof ph - len, "%s%s %.1f (%s %.1f) -> %.1f", p ? ", " : "",
                             phase[p], c->phase_ns[p] / 1e3,
                             p == KHZ_PHASE_REQUESTS ? "n p99" : "p99", c->phase_p99_ns[p] / 1e3,
                             c->accepted_ns[p] / 1e3)
                  : snprintf(ph + len, sizeof ph - len, "%s%s %.1f -> %.1f", p ? ", " : "", phase[p],
                             c->phase_ns[p] / 1e3, c->accepted_ns[p] / 1e3);
      if (w < 0) break;
      len += (size_t)w;
    }
    fprintf(out,
            "  re-run             seq %llu %s: tick CPU %.1f us (step %.1f, other %.1f incl. "
            "between %.1f with %d requests in %.1f wall; other at the tick before %.1f), wall %.1f, "
            "late %.1f; step re-run %.1f / %.1f / %.1f us (least %.1f); hash %s; wall before / in / "
            "after the step %.1f / %.1f / %.1f us; wake re-called %.1f us (%d calls); phases CPU "
            "(measured -> counted) %s%s; work counted %.1f us of %.1f\n",
            (unsigned long long)c->seq, verdict[c->verdict <= KHZ_NVERDICTS ? c->verdict : 0],
            c->tick_cpu_ns / 1e3, c->step_cpu_ns / 1e3, c->other_ns / 1e3, c->between_ns / 1e3,
            c->requests, c->requests_ns / 1e3, c->other_prev_ns / 1e3, c->compute_ns / 1e3,
            c->lateness_ns / 1e3, c->rerun_ns[0] / 1e3, c->rerun_ns[1] / 1e3, c->rerun_ns[2] / 1e3,
            c->rerun_min_ns / 1e3, c->hash == c->rerun_hash ? "equal" : "DIFFERS",
            c->before_step_ns / 1e3, c->step_wall_ns / 1e3, c->after_step_ns / 1e3,
            c->wake_rerun_ns / 1e3, c->wake_calls, ph, rq, c->work_ns / 1e3, c->period_ns / 1e3);
  }
}
