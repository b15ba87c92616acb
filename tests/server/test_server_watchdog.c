/* test_server_watchdog.c — the watchdog through the wire: a real controller
 * process (khz-demo) is killed with SIGKILL mid-run; an observer client checks
 * that the safe command takes over within the timeout plus one tick (flag and
 * torques), that a new controller brings the loop back (flag clears), and
 * that the "damping" safe command applies tau = -b qd (clamped to the effort
 * limit). argv[1] is the khz-demo program. */
#include <signal.h>
#include <sys/wait.h>

#include "harness.h"

#define WATCHDOG_MS 40

static const char *demo_path;

static pid_t start_demo(harness *h) {
  pid_t pid = fork();
  if (pid == 0) {
    execl(demo_path, demo_path, "--state", h->state_ep, "--command", h->cmd_ep, "--seconds", "60",
          "--amplitude", "0.05", (char *)NULL);
    _exit(127);
  }
  return pid;
}

static void kill_demo(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/* the tick that took the newest command, over every state the observer
 * reads: its time, and how many states before it the observer missed (the
 * command may have been taken up to that many ticks earlier) */
static struct {
  uint64_t cmd, seq, unseen;
  int64_t took;
} last;

static const Khz__V1__State *observe(khzClient *obs) {
  const Khz__V1__State *st = khz_client_nextState(obs, 2000);
  if (!st) return NULL;
  uint64_t missed = last.seq && st->seq > last.seq + 1 ? st->seq - last.seq - 1 : 0;
  last.seq = st->seq;
  if (!(st->flags & KHZ__V1__STATE_FLAG__FLAG_WATCHDOG) && st->command_seq != last.cmd)
    last.cmd = st->command_seq, last.took = st->tick_time_ns, last.unseen = missed;
  return st;
}

/* waits until the demo's commands are applied for a while: n ticks that took
 * a new command, the last state free of the watchdog. Not n states in a row:
 * the demo is an unprivileged process, and on a loaded machine it may sleep
 * past the 40 ms between two of its commands; the watchdog then engages (and
 * lets go at the next command), rightly. Bounded by PATIENCE_MS only. */
static int wait_commands(khzClient *obs, int n) {
  int taken = 0, clear = 0;
  uint64_t cmd = 0;
  int64_t until = patience_ends();
  while ((taken < n || !clear) && khz_client_now() < until) {
    const Khz__V1__State *st = observe(obs);
    if (!st) continue;
    clear = st->command_seq && !(st->flags & KHZ__V1__STATE_FLAG__FLAG_WATCHDOG);
    if (clear && st->command_seq != cmd) taken++;
    cmd = st->command_seq;
  }
  return taken >= n && clear;
}

/* after the kill: the first flagged state, and the tick that took the last command */
static void check_engage(khzClient *obs, const Khz__V1__ModelDescription *md, int damping) {
  uint64_t prev_missed = 0;
  int64_t engaged_at = 0;
  double prev_qd[64] = {0};
  int checked = 0, ok_tau = 1;
  for (int i = 0; i < 5000; i++) {
    const Khz__V1__State *st = observe(obs);
    ENSURE(st != NULL);
    if (!st) return;
    if (!(st->flags & KHZ__V1__STATE_FLAG__FLAG_WATCHDOG)) {
      prev_missed = st->stats->missed;
      for (size_t a = 0; a < md->na; a++) prev_qd[a] = st->qd[md->actuators[a]->qd_index];
      continue;
    }
    if (!engaged_at) {
      engaged_at = st->tick_time_ns;
      int64_t period = (int64_t)(1e9 / st->rate_hz), gap = engaged_at - last.took;
      int64_t skipped = (int64_t)(st->stats->missed - prev_missed);
      printf("watchdog engaged %.3f ms after the last command was taken (timeout %d ms, %lld "
             "periods skipped, %llu states unseen before it)\n",
             gap / 1e6, WATCHDOG_MS, (long long)skipped, (unsigned long long)last.unseen);
      ENSURE(last.took != 0);
      ENSURE_MSG(gap <= WATCHDOG_MS * 1000000LL + period * (1 + skipped), "gap %lld ns",
                 (long long)gap);
      /* tick times are whole periods: a command received just after a tick is
       * taken at the next one, up to a period after the watchdog started
       * counting; states the observer missed widen that by as many periods */
      ENSURE_MSG(gap >= WATCHDOG_MS * 1000000LL - period * (1 + (int64_t)last.unseen),
                 "gap %lld ns", (long long)gap);
      ENSURE(st->stats->watchdog_engaged >= 1);
    }
    /* the safe torques, from the velocities of the state before */
    for (size_t a = 0; a < md->na; a++) {
      const Khz__V1__Actuator *ac = md->actuators[a];
      double want = damping ? -2.0 * prev_qd[a] : 0, lim = ac->effort_limit;
      if (lim > 0 && fabs(want) > lim) want = want > 0 ? lim : -lim;
      if (st->tau[ac->qd_index] != want) ok_tau = 0;
      prev_qd[a] = st->qd[ac->qd_index];
    }
    if (++checked == 20) break;
  }
  ENSURE(engaged_at != 0);
  ENSURE_MSG(ok_tau, "safe torques (%s) not applied", damping ? "damping" : "zero");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_server_watchdog KHZ-DEMO\n");
    return 2;
  }
  demo_path = argv[1];
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  cfg.watchdog_ms = WATCHDOG_MS;
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  khzClient *obs = harness_client(&h);
  ENSURE(obs != NULL);
  if (!obs) return ensure_report();
  const Khz__V1__ModelDescription *md = khz_client_describe(obs, 5000);

  /* a controller runs, is killed: zero torque within the timeout plus one tick */
  pid_t demo = start_demo(&h);
  ENSURE(wait_commands(obs, 300));
  kill_demo(demo);
  check_engage(obs, md, 0);

  /* a new controller: the flag clears, its commands are applied */
  demo = start_demo(&h);
  ENSURE(wait_commands(obs, 200));

  /* the damping safe command, set at run time; killed again */
  const Khz__V1__Reply *r = req_setting(obs, "safe_command", "damping");
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
  r = req_setting(obs, "safe_damping", "2");
  ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
  ENSURE(wait_commands(obs, 50));
  kill_demo(demo);
  check_engage(obs, md, 1);

  khz_client_destroy(&obs);
  harness_stop(&h);
  return ensure_report();
}
