/* example.c — the README's C controller: a PD loop on every actuated joint of
 * the served arm, answering each state with torques for the next tick, 0.2 rad
 * away from the start pose, for 3 s. Endpoints: $KHZ_STATE_ENDPOINT /
 * $KHZ_COMMAND_ENDPOINT or khz-server's defaults.
 *
 *   cc example.c $(pkg-config --cflags --libs khz-client)
 */
#include <stdio.h>

#include <khz/client.h>

int main(void) {
  char err[512];
  khzClient *c = khz_client_new(NULL, NULL, NULL, err, sizeof err); /* default endpoints */
  const Khz__V1__ModelDescription *md = c ? khz_client_describe(c, 2000) : NULL;
  if (!md) return fprintf(stderr, "%s\n", c ? khz_client_error(c) : err), 1;

  double tau[64], target[64];
  const Khz__V1__State *st = NULL;
  for (int k = 0; k < 3000 && (st = khz_client_latestState(c, 1000)); k++) { /* 3 s at 1 kHz */
    for (size_t a = 0; a < md->na; a++) {
      const Khz__V1__Actuator *j = md->actuators[a];
      if (k == 0) target[a] = st->q[j->q_index] + 0.2; /* 0.2 rad from the start pose */
      tau[a] = 200 * (target[a] - st->q[j->q_index]) - 20 * st->qd[j->qd_index];
    }
    khz_client_sendTorques(c, st, tau, md->na); /* answers st: applied at the next tick */
  }
  const Khz__V1__Actuator *j1 = md->actuators[0];
  if (st) printf("%s at %.3f rad, target %.3f\n", j1->name, st->q[j1->q_index], target[0]);
  else fprintf(stderr, "%s\n", khz_client_error(c));
  khz_client_destroy(&c);
  return st ? 0 : 1;
}
