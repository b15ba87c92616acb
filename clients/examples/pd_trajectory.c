/* pd_trajectory.c — a joint-space PD controller that moves the default arm
 * through a trajectory: from the start pose through three waypoints and back
 * (quintic segments of 1 s each), answering every state with torques
 *   tau = kp (q_d - q) + kd (qd_d - qd)
 * and printing the tracking error per segment. The Python twin is
 * pd_trajectory.py.
 *
 *   pd_trajectory [--state EP] [--command EP] [--segment S]
 *
 * Endpoints default to $KHZ_STATE_ENDPOINT / $KHZ_COMMAND_ENDPOINT or
 * khz-server's defaults. Exit status 0 when the arm followed the trajectory.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <khz/client.h>

#define NWAY 5
#define MAXA 64

/* offsets from the start pose, per actuator (rad): out, across, up, back */
static const double waypoint[NWAY][7] = {
    {0, 0, 0, 0, 0, 0, 0},
    {0.4, 0.25, -0.3, 0.35, 0.3, -0.3, 0.5},
    {-0.3, 0.35, 0.3, 0.5, -0.3, 0.25, -0.4},
    {0.2, -0.2, 0.2, -0.2, 0.4, 0.3, 0.3},
    {0, 0, 0, 0, 0, 0, 0},
};

/* quintic from a to b over T with zero end velocities and accelerations */
static void quintic(double a, double b, double t, double T, double *q, double *qd) {
  double s = t / T, s3 = s * s * s;
  *q = a + (b - a) * s3 * (10 - 15 * s + 6 * s * s);
  *qd = (b - a) * 30 * s * s * (1 - 2 * s + s * s) / T;
}

int main(int argc, char **argv) {
  const char *state_ep = NULL, *cmd_ep = NULL;
  double segment = 1.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--state")) state_ep = argv[i + 1];
    else if (!strcmp(argv[i], "--command")) cmd_ep = argv[i + 1];
    else if (!strcmp(argv[i], "--segment")) segment = atof(argv[i + 1]);
    else
      return fprintf(stderr, "usage: pd_trajectory [--state EP] [--command EP] [--segment S]\n"), 2;
  }

  /* connect, learn the actuators and their effort limits */
  char err[512];
  khzClient *c = khz_client_new(state_ep, cmd_ep, NULL, err, sizeof err);
  const Khz__V1__ModelDescription *md = c ? khz_client_describe(c, 3000) : NULL;
  if (!md) {
    fprintf(stderr, "pd_trajectory: %s\n", c ? khz_client_error(c) : err);
    khz_client_destroy(&c);
    return 1;
  }
  size_t na = md->na < MAXA ? md->na : MAXA;
  double kp[MAXA], kd[MAXA], q0[MAXA], tau[MAXA];
  int qi[MAXA], vi[MAXA];
  for (size_t a = 0; a < na; a++) {
    double effort = md->actuators[a]->effort_limit > 0 ? md->actuators[a]->effort_limit : 50;
    kp[a] = 8 * effort, kd[a] = 0.12 * effort; /* N m/rad, N m s/rad */
    qi[a] = (int)md->actuators[a]->q_index, vi[a] = (int)md->actuators[a]->qd_index;
  }
  printf(
      "pd_trajectory: scene '%s', %zu actuators, %d segments of %.2f s, kp = 8 effort, "
      "kd = 0.12 effort\n",
      md->scene, na, NWAY - 1, segment);

  /* the loop: one answer per state, targets from the trajectory at the state's time */
  const Khz__V1__State *st = khz_client_latestState(c, 2000);
  if (!st) {
    fprintf(stderr, "pd_trajectory: %s\n", khz_client_error(c));
    khz_client_destroy(&c);
    return 1;
  }
  for (size_t a = 0; a < na; a++) q0[a] = st->q[qi[a]];
  double t0 = st->sim_time, total = (NWAY - 1) * segment + 0.5;
  double seg_sq[NWAY] = {0}, seg_max[NWAY] = {0}, final_err = 0;
  long seg_n[NWAY] = {0}, answered = 0;
  uint64_t last = st->seq - 1;
  for (;;) {
    if (st->seq != last) { /* skip a lockstep keep-alive repeat */
      last = st->seq;
      double t = st->sim_time - t0;
      if (t > total) break;
      int k = (int)(t / segment);
      if (k > NWAY - 2) k = NWAY - 1; /* holding at the end */
      double worst = 0;
      for (size_t a = 0; a < na; a++) {
        double qd_d = 0, q_d = q0[a] + waypoint[NWAY - 1][a % 7];
        if (k < NWAY - 1)
          quintic(q0[a] + waypoint[k][a % 7], q0[a] + waypoint[k + 1][a % 7], t - k * segment,
                  segment, &q_d, &qd_d);
        double e = q_d - st->q[qi[a]];
        tau[a] = kp[a] * e + kd[a] * (qd_d - st->qd[vi[a]]);
        seg_sq[k] += e * e / (double)na;
        worst = fabs(e) > worst ? fabs(e) : worst;
      }
      seg_max[k] = worst > seg_max[k] ? worst : seg_max[k];
      seg_n[k]++;
      final_err = worst;
      if (khz_client_sendTorques(c, st, tau, na) == 0) answered++;
    }
    st = khz_client_latestState(c, 2000);
    if (!st) {
      fprintf(stderr, "pd_trajectory: %s\n", khz_client_error(c));
      khz_client_destroy(&c);
      return 1;
    }
  }

  /* the tracking error, per segment */
  double all_sq = 0, all_max = 0;
  long all_n = 0;
  for (int k = 0; k < NWAY; k++) {
    if (!seg_n[k]) continue;
    char name[32];
    if (k < NWAY - 1) snprintf(name, sizeof name, "segment %d", k + 1);
    else snprintf(name, sizeof name, "hold");
    printf("  %-10s rms %.4f rad, max %.4f rad (%ld states)\n", name, sqrt(seg_sq[k] / seg_n[k]),
           seg_max[k], seg_n[k]);
    all_sq += seg_sq[k], all_n += seg_n[k];
    all_max = seg_max[k] > all_max ? seg_max[k] : all_max;
  }
  const khzClientCounters *n = khz_client_counters(c);
  double rms = sqrt(all_sq / (double)(all_n ? all_n : 1));
  printf(
      "result: rms tracking error %.4f rad, max %.4f rad, final %.4f rad; %ld states answered, "
      "%llu not seen\n",
      rms, all_max, final_err, answered, (unsigned long long)n->gaps);
  khz_client_destroy(&c);
  return rms < 0.05 && final_err < 0.05 ? 0 : 1;
}
