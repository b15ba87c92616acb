/* demo.c — khz-demo: a controller that closes a joint-space PID loop on every
 * actuator of the served model (the default scene's 7-DoF arm), tracking slow
 * sinusoids around the initial pose, answering every state with torques; once
 * a second it prints live statistics from the server and its own tracking.
 *
 *   khz-demo [--state EP] [--command EP] [--seconds S] [--amplitude RAD]
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khz/client.h"

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig, stop = 1; }

int main(int argc, char **argv) {
  const char *state_ep = "tcp://127.0.0.1:5600", *cmd_ep = "tcp://127.0.0.1:5601";
  double seconds = 10, amplitude = 0.3;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help")) {
      printf("usage: khz-demo [--state EP] [--command EP] [--seconds S] [--amplitude RAD]\n");
      return 0;
    }
    if (!v) {
      fprintf(stderr, "khz-demo: '%s' needs a value\n", a);
      return 2;
    }
    if (!strcmp(a, "--state")) state_ep = v;
    else if (!strcmp(a, "--command")) cmd_ep = v;
    else if (!strcmp(a, "--seconds")) seconds = atof(v);
    else if (!strcmp(a, "--amplitude")) amplitude = atof(v);
    else {
      fprintf(stderr, "khz-demo: unknown option '%s'\n", a);
      return 2;
    }
    i++;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);

  /* connect and learn the model: actuators, where their q / qd sit, effort limits */
  char err[256];
  khzClient *c = khz_client_new(state_ep, cmd_ep, NULL, err, sizeof err);
  if (!c) {
    fprintf(stderr, "khz-demo: %s\n", err);
    return 1;
  }
  const Khz__V1__ModelDescription *md = khz_client_describe(c, 5000);
  if (!md || md->na == 0) {
    fprintf(stderr, "khz-demo: no answer from %s (or no actuators)\n", cmd_ep);
    khz_client_destroy(&c);
    return 1;
  }
  int na = (int)md->na;
  double *q0 = calloc((size_t)na, sizeof(double)), *integ = calloc((size_t)na, sizeof(double));
  double *tau = calloc((size_t)na, sizeof(double)), *kp = calloc((size_t)na, sizeof(double));
  double *kd = calloc((size_t)na, sizeof(double)), *ki = calloc((size_t)na, sizeof(double));
  for (int a = 0; a < na; a++) {
    double effort = md->actuators[a]->effort_limit > 0 ? md->actuators[a]->effort_limit : 50;
    kp[a] = 4 * effort, kd[a] = 0.1 * effort, ki[a] = 8 * effort;
  }
  printf("khz-demo: %s, %d actuators, model generation %u: PID tracking of %.2f rad sinusoids "
         "for %g s\n",
         md->scene, na, md->model_generation, amplitude, seconds);

  /* the loop: answer every state with the torques for the next tick */
  Khz__V1__Command cmd;
  khz__v1__command__init(&cmd);
  cmd.model_generation = md->model_generation;
  cmd.n_tau = (size_t)na;
  cmd.tau = tau;
  int have_q0 = 0;
  uint64_t answered = 0, last_seq = 0, gaps = 0;
  double err2 = 0, t_start = -1, dt = 1.0 / md->rate_hz;
  int64_t t0 = khz_client_now(), next_print = t0 + 1000000000LL;
  while (!stop && khz_client_now() - t0 < (int64_t)(seconds * 1e9)) {
    const Khz__V1__State *st = khz_client_latestState(c, 1000);
    if (!st) {
      fprintf(stderr, "khz-demo: no state for 1 s\n");
      continue;
    }
    if (have_q0 && st->seq <= last_seq) continue; /* a lockstep keep-alive of one already answered */
    if (!have_q0) {
      for (int a = 0; a < na; a++) q0[a] = st->q[md->actuators[a]->q_index];
      t_start = st->sim_time;
      have_q0 = 1;
    }
    if (last_seq && st->seq > last_seq + 1) gaps += st->seq - last_seq - 1;
    last_seq = st->seq;
    dt = 1.0 / st->rate_hz;

    /* targets: slow sinusoids, phase-shifted per joint */
    double t = st->sim_time - t_start;
    for (int a = 0; a < na; a++) {
      const Khz__V1__Actuator *ac = md->actuators[a];
      double w = 2 * M_PI * 0.25, ph = 0.7 * a;
      double qt = q0[a] + amplitude * sin(w * t + ph), qdt = amplitude * w * cos(w * t + ph);
      double e = qt - st->q[ac->q_index];
      integ[a] += e * dt;
      double lim = 0.2 * (ac->effort_limit > 0 ? ac->effort_limit : 50) / ki[a];
      integ[a] = integ[a] > lim ? lim : integ[a] < -lim ? -lim : integ[a];
      tau[a] = kp[a] * e + kd[a] * (qdt - st->qd[ac->qd_index]) + ki[a] * integ[a];
      err2 += e * e / na;
    }
    cmd.seq = st->seq;
    cmd.state_seq = st->seq;
    cmd.client_time_ns = khz_client_now();
    khz_client_command(c, &cmd);
    answered++;

    /* once a second: the server's statistics and our tracking */
    if (khz_client_now() >= next_print) {
      next_print += 1000000000LL;
      Khz__V1__Request rq;
      Khz__V1__GetStats gs;
      khz__v1__request__init(&rq);
      khz__v1__get_stats__init(&gs);
      rq.op_case = KHZ__V1__REQUEST__OP_GET_STATS;
      rq.get_stats = &gs;
      const Khz__V1__Reply *r = khz_client_request(c, &rq, 1000);
      if (r && r->stats) {
        const Khz__V1__Stats *s = r->stats;
        uint64_t all = s->tick->commands + s->tick->superseded;
        double on = all ? 100.0 * (double)s->tick->on_time / (double)all : 0;
        printf("t=%5.1fs seq %7llu | lateness p50 %5.1f p99 %6.1f max %7.1f us | compute p50 %5.1f us"
               " | overruns %llu | next-tick %6.2f%% | response p50 %5.1f p99 %6.1f us"
               " | rms err %.4f rad%s\n",
               (double)(khz_client_now() - t0) / 1e9, (unsigned long long)s->seq,
               s->lateness->p50 / 1e3, s->lateness->p99 / 1e3, s->lateness->max / 1e3,
               s->compute->p50 / 1e3, (unsigned long long)s->tick->overruns, on,
               s->command_response->p50 / 1e3, s->command_response->p99 / 1e3,
               sqrt(err2 / (answered ? (double)answered : 1.0)),
               (st->flags & KHZ__V1__STATE_FLAG__FLAG_WATCHDOG) ? " | WATCHDOG" : "");
        fflush(stdout);
      }
      err2 = 0;
      answered = 0;
    }
  }
  printf("khz-demo: done (%llu states not seen by this client)\n", (unsigned long long)gaps);
  free(q0), free(integ), free(tau), free(kp), free(kd), free(ki);
  khz_client_destroy(&c);
  return 0;
}
