/* test_server_affinity.c — with the loop pinned (setting cpu), the server's
 * I/O thread and libzmq's threads keep off the loop's CPU (issue 26, the
 * haptic rate: a CPU that runs the I/O side takes the loop's timer
 * interrupt tens of us later, docs/server.md "Haptic rate: what the loop's
 * CPU runs"); unpinned, nobody is pinned.
 *
 * Each thread of this process is read from /proc/self/task and its affinity
 * asked with sched_getaffinity: the loop thread (khz-rt) must run on the
 * chosen CPU only, every other thread the server made (the harness's thread
 * that runs khz_server_run, libzmq's ZMQbg threads) on CPUs without it. The
 * test's main thread is left as it was. Skipped (77) on a one-CPU process. */
#include <dirent.h>
#include <sched.h>
#include <sys/types.h>

#include "harness.h"

/* the comm of thread tid of this process ("" when it is gone) */
static void thread_name(long tid, char *out, size_t n) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%ld/comm", tid);
  out[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return;
  if (fgets(out, (int)n, f)) out[strcspn(out, "\n")] = 0;
  fclose(f);
}

typedef struct census {
  int loop_threads, loop_only_cpu; /* khz-rt threads, of which pinned to exactly the CPU */
  int others, others_off;          /* other threads but main, of which without the CPU */
  int others_full;                 /* ... of which allowed every CPU the process has */
} census;

static void take_census(int cpu, const cpu_set_t *all, census *c) {
  memset(c, 0, sizeof *c);
  DIR *d = opendir("/proc/self/task");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    long tid = atol(e->d_name);
    if (tid <= 0 || tid == (long)getpid()) continue;
    char name[32];
    thread_name(tid, name, sizeof name);
    cpu_set_t set;
    if (!name[0] || sched_getaffinity((pid_t)tid, sizeof set, &set) != 0) continue;
    if (!strcmp(name, "khz-rt")) {
      c->loop_threads++;
      c->loop_only_cpu += cpu >= 0 && CPU_COUNT(&set) == 1 && CPU_ISSET(cpu, &set);
    } else {
      c->others++;
      c->others_off += cpu >= 0 && !CPU_ISSET(cpu, &set);
      c->others_full += CPU_EQUAL(&set, all);
    }
  }
  closedir(d);
}

/* a server with the given cpu setting; its threads' census once the I/O
 * thread has run (a state has come back through it) */
static int run_server(int cpu, const cpu_set_t *all, census *c) {
  khzServerConfig cfg;
  harness_config(&cfg);
  cfg.cpu = cpu;
  harness h;
  if (harness_start(&h, &cfg, NULL)) return -1;
  /* the I/O thread sets its affinity as it starts: wait (at most 5 s) until
   * the census shows it done. No client is made: its own libzmq threads
   * would count as others. */
  int64_t end = khz_loop_now() + 5000000000LL;
  int ok = 0;
  while (khz_loop_now() < end) {
    take_census(cpu, all, c);
    /* the harness's I/O thread and libzmq's I/O thread and reaper: 3 */
    if (c->loop_threads == 1 && c->others >= 3 && (cpu < 0 || c->others_off == c->others)) {
      ok = 1;
      break;
    }
    nap_ms(20);
  }
  take_census(cpu, all, c);
  harness_stop(&h);
  return ok ? 0 : 1;
}

int main(void) {
  cpu_set_t all;
  if (sched_getaffinity(0, sizeof all, &all) != 0 || CPU_COUNT(&all) < 2) {
    printf("test_server_affinity: fewer than 2 CPUs available: skipped\n");
    return 77;
  }
  int last = -1;
  for (int k = 0; k < CPU_SETSIZE; k++)
    if (CPU_ISSET(k, &all)) last = k;

  /* pinned: the loop alone on `last`, the I/O side elsewhere */
  census c;
  int rc = run_server(last, &all, &c);
  ENSURE_MSG(rc >= 0, "server starts with cpu = %d", last);
  ENSURE_MSG(c.loop_threads == 1 && c.loop_only_cpu == 1, "the loop thread runs on CPU %d only", last);
  ENSURE_MSG(c.others >= 3, "the I/O thread and libzmq's threads are there (%d threads)", c.others);
  ENSURE_MSG(c.others_off == c.others, "%d of %d I/O-side threads keep off the loop's CPU %d", c.others_off,
         c.others, last);

  /* not pinned (the default): every thread may run anywhere */
  rc = run_server(-1, &all, &c);
  ENSURE_MSG(rc == 0, "server starts with cpu = -1");
  ENSURE_MSG(c.loop_threads == 1, "the loop thread is there");
  ENSURE_MSG(c.others >= 3 && c.others_full == c.others, "%d of %d I/O-side threads may use every CPU",
         c.others_full, c.others);
  return ensure_report();
}
