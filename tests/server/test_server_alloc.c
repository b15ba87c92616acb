/* test_server_alloc.c — zero heap allocations in the real-time thread over
 * 10,000 ticks of a running server with clients connected: a controller
 * answering every state (lockstep, so every tick takes a command), a viewer,
 * and control requests (statistics with the state hash, wrenches, settings)
 * that the loop applies between ticks; then 3,000 ticks of a scene with
 * hardware-in-the-loop sensors of every type, drives, a fault schedule and a
 * lossy, jittery network model both ways. malloc & co. are wrapped at link time
 * (-Wl,--wrap) and counted only on the loop thread, which the server's
 * rt_thread_init hook marks. */
#include <stdatomic.h>

#include "harness.h"

static _Thread_local int on_rt_thread;
static atomic_int counting;
static atomic_long rt_calls, rt_seen;

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

static void count(void) {
  if (!on_rt_thread) return;
  atomic_fetch_add(&rt_seen, 1);
  if (atomic_load(&counting)) atomic_fetch_add(&rt_calls, 1);
}
void *__wrap_malloc(size_t n) {
  count();
  return __real_malloc(n);
}
void *__wrap_calloc(size_t k, size_t n) {
  count();
  return __real_calloc(k, n);
}
void *__wrap_realloc(void *p, size_t n) {
  count();
  return __real_realloc(p, n);
}
void __wrap_free(void *p) {
  count();
  __real_free(p);
}

/* in the loop thread, before its first tick: mark it, prove the wrapper sees it */
static void mark_rt(void *user) {
  (void)user;
  on_rt_thread = 1;
  void *volatile probe = malloc(16); /* volatile: not optimised away */
  free(probe);
}

#define WARMUP 300

/* one server on scene (NULL: the default scene) in lockstep, a controller
 * answering every state it gets and a viewer sending requests, counting the
 * loop thread's heap calls over ticks ticks after a warm-up */
static void run(const char *scene, int ticks) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  if (scene) snprintf(cfg.scene, sizeof cfg.scene, "%s", scene);
  cfg.mode = KHZ_MODE_LOCKSTEP;
  cfg.lockstep_timeout_ms = 5000;
  cfg.publish_contacts = 1;
  cfg.verify_overruns = 1; /* its verifier thread beside the loop: still no heap call on the loop */
  khzServerHooks hooks = {.rt_thread_init = mark_rt};
  atomic_store(&rt_seen, 0);
  atomic_store(&rt_calls, 0);
  ENSURE(harness_start(&h, &cfg, &hooks) == 0);
  ENSURE_MSG(atomic_load(&rt_seen) >= 2, "the wrapper saw %ld calls on the loop thread",
             atomic_load(&rt_seen));
  khzClient *ctl = harness_client(&h), *viewer = harness_client(&h);
  ENSURE(ctl && viewer);
  if (!ctl || !viewer) return;
  const Khz__V1__ModelDescription *md = khz_client_describe(ctl, 5000);
  const Khz__V1__State *st = khz_client_latestState(ctl, 2000);
  double target[64];
  arm_target(md, st, target);
  pid p;
  pid_init(&p, md, target);

  /* the controller answers every state; counting starts after a warm-up
   * (behind a lossy network model some states never arrive: >=) */
  uint64_t answered = 0, start = 0;
  int have = 0, requests = 0;
  while (st) {
    if (!have || st->seq > answered) {
      if (!have) start = st->seq;
      if (st->seq >= start + WARMUP) atomic_store(&counting, 1);
      if (st->seq >= start + WARMUP + (uint64_t)ticks) break;
      pid_answer(&p, ctl, md, st);
      answered = st->seq;
      have = 1;
      /* control requests the loop applies between ticks */
      uint64_t k = st->seq - start;
      if (k % 1000 == 500) {
        const Khz__V1__Reply *r = req_simple(viewer, KHZ__V1__REQUEST__OP_GET_STATS);
        ENSURE(r && r->stats && r->stats->state_hash != 0);
        requests++;
      }
      if (k % 2000 == 1000) {
        const Khz__V1__Reply *r = req_setting(viewer, "safe_damping", k % 4000 ? "3" : "2");
        ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
        requests++;
      }
      while (khz_client_nextState(viewer, 0)) {
      }
    }
    st = khz_client_nextState(ctl, 5000);
  }
  atomic_store(&counting, 0);
  ENSURE(st && st->seq >= start + WARMUP + (uint64_t)ticks);
  printf("%s: %ld heap calls on the loop thread in %d ticks with 2 clients and %d requests\n",
         scene ? scene : "default scene", atomic_load(&rt_calls), ticks, requests);
  ENSURE(atomic_load(&rt_calls) == 0);
  khz_client_destroy(&ctl);
  khz_client_destroy(&viewer);
  harness_stop(&h);
}

int main(void) {
  run(NULL, 10000);
  /* sensors of every type, drives, scheduled faults and the network model's
   * delay, jitter and loss queues (rt/src/hil, the loop's network paths) */
  run("tests/server/data/hil_alloc.yaml", 3000);
  return ensure_report();
}
