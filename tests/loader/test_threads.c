/* test_threads.c — the step on more than one thread (khz_setThreads) gives
 * the one-thread step's bits: V3, a 240-body pile, the default scene and the
 * humanoid stepped with 1, 2 and 3 threads side by side, q, qd, the contact
 * list and its points compared with memcmp after every step, sleeping on
 * with a wake of every island late in the run; in the piles the worker must
 * have taken a share of the pairs (or the comparison proves nothing); V3
 * again with the threads' point buffers cut to 330 points (point_cap 320:
 * the pairs left over are made by the pass), and with contact reuse on. Zero heap calls inside
 * the steps with 2 threads (malloc & co. wrapped at link time). The pool's
 * start, stop and re-set, 1 -> 2 -> 1 -> 3 -> 2 threads, a data deleted with
 * its workers running (the sanitizer build's LSan sees a leak). Under
 * ThreadSanitizer (scripts/tsan.sh), whose runtime owns malloc, the heap
 * calls are not counted (KHZ_HEAP_UNCOUNTED).
 * Usage: test_threads PILE_240.yaml | --life (the pool's life alone) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "khz/khz.h"
#include "khz/load.h"
#include "pool.h"
#include "heap_count.h"

/* the state and the contact list, bit for bit */
static int same_bits(const khzModel *m, const khzData *a, const khzData *b) {
  if (memcmp(a->q, b->q, (size_t)m->nq * sizeof(double)) || memcmp(a->qd, b->qd, (size_t)m->nv * sizeof(double)))
    return 0;
  if (a->ncontact != b->ncontact || a->ncpoint != b->ncpoint || a->ncontact_asleep != b->ncontact_asleep) return 0;
  if (memcmp(a->contact, b->contact, (size_t)a->ncontact * sizeof(khzContact)) ||
      memcmp(a->cpoint, b->cpoint, (size_t)a->ncpoint * sizeof(khzContactPoint)))
    return 0;
  return khz_hashState(m, a) == khz_hashState(m, b) && !memcmp(a->warning, b->warning, sizeof a->warning);
}

/* contact reuse's bound for the datas of compare (0: off) */
static double reuse_bound;

/* steps with 1, 2 and 3 threads side by side; wake_at: every island woken
 * before that step (0: none) */
static void compare_limited(const char *what, khzModel *m, int steps, int sleep, int wake_at, int piles,
                            int points) {
  enum { N = 3 };
  khzData *d[N];
  for (int t = 0; t < N; t++) {
    d[t] = khz_makeData(m, 0);
    ENSURE(d[t] != NULL);
    if (!d[t]) return;
    d[t]->sleep_enabled = sleep;
    ENSURE(khz_setThreads(m, d[t], t + 1) == 0);
    ENSURE(khz_threads(d[t]) == t + 1);
    khz_poolLimitPoints(d[t], points);
    if (reuse_bound > 0) ENSURE(khz_contactReuse(m, d[t], reuse_bound) == 0);
  }
  int first_diff = -1, asleep = 0, max_contacts = 0;
  long heap = 0;
  for (int s = 0; s < steps; s++) {
    for (int t = 0; t < N; t++) {
      if (s == wake_at && wake_at > 0) khz_wake(m, d[t], -1);
      heap_counting = t == 1;
      khz_step(m, d[t]);
      heap_counting = 0;
    }
    heap += heap_calls, heap_calls = 0;
    asleep += d[0]->body_sleep[0] > 0;
    if (d[0]->ncontact > max_contacts) max_contacts = d[0]->ncontact;
    for (int t = 1; t < N && first_diff < 0; t++)
      if (!same_bits(m, d[0], d[t])) first_diff = s;
  }
  long worker = khz_poolItems(d[1], 1), caller = khz_poolItems(d[1], 0);
  printf("%-22s %d steps, sleep %d: first difference %d, up to %d contacts, steps with a sleeping tree %d, "
         "2 threads: items (pairs, bodies) on the worker %ld, on the caller %ld, heap calls %ld\n",
         what, steps, sleep, first_diff, max_contacts, asleep, worker, caller, heap);
  ENSURE_MSG(first_diff < 0, "%s: 1 and more threads differ from step %d", what, first_diff);
  if (piles) ENSURE_MSG(worker > 0, "%s: the worker took no pair or body", what);
  ENSURE_MSG(heap == 0, "%s: %ld heap calls in the steps with 2 threads", what, heap);
  for (int t = 0; t < N; t++) khz_deleteData(&d[t]);
}

static void compare(const char *what, khzModel *m, int steps, int sleep, int wake_at, int piles) {
  compare_limited(what, m, steps, sleep, wake_at, piles, -1);
}

static khzModel *load(const char *path) {
  char err[1024];
  khzScene scene;
  khzModel *m = khz_loadModel(path, &scene, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s: %s", path, err);
  if (m) khz_deleteScene(&scene);
  return m;
}

int main(int argc, char **argv) {
  /* --life: the pool's life alone (for valgrind's leak check) */
  int life = argc > 1 && !strcmp(argv[1], "--life");
  const char *pile = argc > 1 ? argv[1] : "pile_240.yaml";
  khzModel *m = load("scenes/validation/v3_pile.yaml");
  if (m) {
    if (!life) {
      compare("v3_pile", m, 600, 0, 0, 1);
      compare("v3_pile sleeping", m, 1500, 1, 1200, 1);
      /* the threads' point buffers nearly full: most pairs in contact are
       * left to the pass, which makes them as one thread does */
      compare_limited("v3_pile, few points", m, 600, 0, 0, 1, 330);
      /* contact reuse on (its references tried on the threads) */
      reuse_bound = 1e-7;
      compare("v3_pile, contact reuse", m, 600, 0, 0, 1);
      reuse_bound = 0;
    }
    /* the pool's life: start, stop, re-set, and a data freed with workers */
    khzData *d = khz_makeData(m, 0);
    ENSURE(khz_setThreads(m, d, 0) == -1 && khz_setThreads(m, d, 17) == -1 && khz_threads(d) == 1);
    int seq[] = {2, 1, 3, 2, 2, 1, 2};
    for (int i = 0; i < 7; i++) {
      ENSURE(khz_setThreads(m, d, seq[i]) == 0);
      ENSURE(khz_threads(d) == seq[i]);
      for (int s = 0; s < 20; s++) khz_step(m, d);
    }
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
  if (life) return ensure_report();
  if ((m = load(pile))) {
    compare("pile_240", m, 400, 0, 0, 1);
    compare("pile_240 sleeping", m, 1200, 1, 900, 1);
    khz_deleteModel(&m);
  }
  if ((m = load("default"))) {
    compare("default", m, 1000, 1, 700, 0);
    khz_deleteModel(&m);
  }
  if ((m = load("scenes/validation/v4_humanoid.yaml"))) {
    compare("v4_humanoid", m, 500, 0, 0, 0);
    khz_deleteModel(&m);
  }
  /* MuJoCo's humanoid (bench_peers' humanoid row), where Debian's libmujoco has it */
  FILE *f = fopen("/usr/share/mujoco/model/humanoid/humanoid.xml", "r");
  if (f && (fclose(f), m = load("/usr/share/mujoco/model/humanoid/humanoid.xml"))) {
    compare("humanoid.xml", m, 500, 0, 0, 0);
    khz_deleteModel(&m);
  }
  return ensure_report();
}
