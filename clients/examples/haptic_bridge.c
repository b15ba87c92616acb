/* haptic_bridge.c — a haptic-device bridge with a simulated device, against
 * scenes/haptic_wall.yaml: a hand pushes the device (a 1-dof handle of mass
 * m_d) so that the proxy goes into the wall and back; every tick the bridge
 * sends the device's position and velocity (HapticInput), receives the force
 * to render (State.haptic_wrench: the virtual coupling's reaction, Colgate et
 * al. 1995) and applies it to the device:
 *
 *   m_d a = F_hand + F_render,   F_hand = k_h (x_hand - x) + b_h (v_hand - v)
 *
 * It reports the rendered force by phase and checks that it stays bounded and
 * settles (no sustained oscillation) at the server's 1 kHz. When the server
 * reports contacts (publish_contacts), it also checks that the wall is felt.
 *
 *   khz-server --scene scenes/haptic_wall.yaml &
 *   haptic_bridge [--state EP] [--command EP] [--proxy NAME] [--contact-x X] [--depth D]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <khz/client.h>

#define APPROACH 1.0 /* s: hand moves in */
#define HOLD 1.0     /* s: hand holds, pressed into the wall */
#define RETREAT 1.0  /* s: hand moves back */
#define REST 0.5     /* s: hand still at the start */

typedef struct phase {
  const char *name;
  double fmax, fsum, fmin_w, fmax_w; /* |F| peak, sum; F_x range in the end window */
  long n;
  int contacts;
} phase;

/* smooth 0 -> 1 over [0, T] (cosine) */
static double ease(double t, double T) {
  if (t <= 0) return 0;
  if (t >= T) return 1;
  return 0.5 - 0.5 * cos(M_PI * t / T);
}

int main(int argc, char **argv) {
  const char *state_ep = NULL, *cmd_ep = NULL, *proxy_name = "proxy";
  double contact_x = 0.08,
         depth = 0.03; /* where the proxy touches the wall; how far the hand goes beyond */
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--state")) state_ep = argv[i + 1];
    else if (!strcmp(argv[i], "--command")) cmd_ep = argv[i + 1];
    else if (!strcmp(argv[i], "--proxy")) proxy_name = argv[i + 1];
    else if (!strcmp(argv[i], "--contact-x")) contact_x = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--depth")) depth = atof(argv[i + 1]);
    else
      return fprintf(stderr,
                     "usage: haptic_bridge [--state EP] [--command EP] [--proxy NAME] "
                     "[--contact-x X] [--depth D]\n"),
             2;
  }

  /* connect; find the proxy; contacts in the states (to tell whether the wall is felt) */
  char err[512];
  khzClient *c = khz_client_new(state_ep, cmd_ep, NULL, err, sizeof err);
  const Khz__V1__ModelDescription *md = c ? khz_client_describe(c, 3000) : NULL;
  int proxy = md ? khz_client_proxyIndex(c, proxy_name) : -1;
  if (!md || proxy < 0 || khz_client_setSetting(c, "publish_contacts", "true", 2000) ||
      khz_client_reset(c, NULL, 0, 2000)) {
    fprintf(stderr, "haptic_bridge: %s\n", c ? khz_client_error(c) : err);
    khz_client_destroy(&c);
    return 1;
  }
  const Khz__V1__HapticProxyInfo *hp = md->haptic_proxies[proxy];
  int body = (int)hp->body;
  double rate = md->rate_hz, m_d = 0.3, k_h = 200, b_h = 8;
  printf(
      "haptic_bridge: scene '%s', proxy %d ('%s'): coupling %g N/m, %g N s/m at %g Hz "
      "(passive: %g > %g); device %g kg, hand %g N/m, %g N s/m\n",
      md->scene, proxy, hp->body_name, hp->stiffness, hp->damping, rate, hp->damping,
      hp->stiffness / rate / 2, m_d, k_h, b_h);

  /* the device starts where the proxy is; the hand pushes along x */
  const Khz__V1__State *st = khz_client_nextState(c, 2000);
  while (st && !(st->flags & KHZ__V1__STATE_FLAG__FLAG_RESET) &&
         st->seq < khz_client_lastReply(c)->state_seq)
    st = khz_client_nextState(c, 2000);
  if (!st) {
    fprintf(stderr, "haptic_bridge: %s\n", khz_client_error(c));
    khz_client_destroy(&c);
    return 1;
  }
  double p0[3] = {st->body_pose[7 * body], st->body_pose[7 * body + 1],
                  st->body_pose[7 * body + 2]};
  double x = p0[0], v = 0, x_push = contact_x + depth, t0 = st->sim_time, f_prev[3] = {0, 0, 0};
  double end = APPROACH + HOLD + RETREAT + REST, next_print = 0;
  uint64_t last = st->seq;
  phase ph[4] = {{"approach", 0, 0, 1e9, -1e9, 0, 0},
                 {"hold", 0, 0, 1e9, -1e9, 0, 0},
                 {"retreat", 0, 0, 1e9, -1e9, 0, 0},
                 {"rest", 0, 0, 1e9, -1e9, 0, 0}};
  double proxy_hold = 0, dev_hold = 0;
  printf("  %6s %8s %8s %8s %8s %8s\n", "t s", "hand m", "device m", "proxy m", "F_x N",
         "contacts");

  for (;;) {
    /* device: integrate over the ticks since the last state with the force it rendered */
    double t = st->sim_time - t0, dt = (double)(st->seq - last) / rate;
    last = st->seq;
    double s = t < APPROACH          ? ease(t, APPROACH)
               : t < APPROACH + HOLD ? 1
                                     : 1 - ease(t - APPROACH - HOLD, RETREAT);
    double x_hand = p0[0] + (x_push - p0[0]) * s;
    double v_hand = 0; /* the hand's stiffness does the work; its velocity is not needed */
    double f_hand = k_h * (x_hand - x) + b_h * (v_hand - v);
    v += (f_hand + f_prev[0]) / m_d * dt;
    x += v * dt;
    const double *w = st->haptic_wrench + 6 * proxy;
    memcpy(f_prev, w, sizeof f_prev);

    /* what the device renders, by phase; the last 0.4 s of each phase is its end window */
    int k = t < APPROACH ? 0 : t < APPROACH + HOLD ? 1 : t < APPROACH + HOLD + RETREAT ? 2 : 3;
    double phase_end = k == 0 ? APPROACH : k == 1 ? APPROACH + HOLD : k == 2 ? end - REST : end;
    double fn = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
    ph[k].fmax = fn > ph[k].fmax ? fn : ph[k].fmax;
    ph[k].fsum += w[0];
    ph[k].n++;
    ph[k].contacts += st->n_contacts > 0;
    if (t > phase_end - 0.4) {
      ph[k].fmin_w = w[0] < ph[k].fmin_w ? w[0] : ph[k].fmin_w;
      ph[k].fmax_w = w[0] > ph[k].fmax_w ? w[0] : ph[k].fmax_w;
      if (k == 1) proxy_hold = st->body_pose[7 * body], dev_hold = x;
    }
    if (t >= next_print) {
      printf("  %6.2f %8.4f %8.4f %8.4f %8.3f %8zu\n", t, x_hand, x, st->body_pose[7 * body], w[0],
             st->n_contacts);
      next_print += 0.25;
    }
    if (t >= end) break;

    /* the device's pose for the next tick */
    double pos[3] = {x, p0[1], p0[2]}, vel[3] = {v, 0, 0};
    khz_client_sendHaptic(c, proxy, pos, NULL, vel, NULL);
    st = khz_client_nextState(c, 2000);
    if (!st) {
      fprintf(stderr, "haptic_bridge: %s\n", khz_client_error(c));
      khz_client_destroy(&c);
      return 1;
    }
  }

  /* bounded: nothing beyond twice the hand spring's force at the push depth;
     settled: the end windows of the resting phases are flat */
  double push = k_h * depth, bound = 2 * push, peak = 0;
  int settled = 1, felt = ph[1].contacts > 0;
  for (int k = 0; k < 4; k++) {
    double ptp = ph[k].fmax_w - ph[k].fmin_w;
    peak = ph[k].fmax > peak ? ph[k].fmax : peak;
    int flat =
        k == 0 || k == 2 || ptp <= 0.05 * push + 0.05; /* moving phases are not windows of rest */
    settled &= flat;
    printf(
        "  %-8s peak |F| %6.3f N, mean F_x %7.3f N, end-window F_x range %.4f N%s, "
        "states with contact %d/%ld\n",
        ph[k].name, ph[k].fmax, ph[k].fsum / (double)ph[k].n, ptp,
        k == 1 || k == 3 ? (flat ? " (settled)" : " (OSCILLATING)") : "", ph[k].contacts, ph[k].n);
  }
  double hold_force = -ph[1].fsum / (double)ph[1].n;
  int wall_ok = !felt || (hold_force > 0.3 * k_h * depth && proxy_hold < contact_x + 0.5 * depth);
  printf("wall: %s\n", felt ? "felt"
                            : "NOT felt: the server reported no contact (contact forces "
                              "are not in this build's core yet): the proxy passed through "
                              "the wall and only the coupling was rendered");
  if (felt)
    printf(
        "wall: the hand pushes %.3f m beyond the surface; the proxy stopped at x = %.4f m "
        "(surface %.3f), the device at %.4f m, rendering %.2f N into the hand\n",
        depth, proxy_hold, contact_x, dev_hold, hold_force);
  printf(
      "result: force bounded %s (peak %.3f N, bound %.3f N = 2 k_h depth), sustained "
      "oscillation %s, wall %s at %g Hz\n",
      peak <= bound ? "yes" : "NO", peak, bound, settled ? "no" : "YES",
      felt ? (wall_ok ? "felt" : "NOT HELD") : "not felt", rate);
  khz_client_setSetting(c, "publish_contacts", "false", 2000);
  khz_client_destroy(&c);
  return peak <= bound && settled && wall_ok ? 0 : 1;
}
