/* pool.c — the data's fork-join pool (pool.h, khz_setThreads).
 *
 * The caller publishes a job (function, range, chunk) and bumps `epoch`;
 * the workers, spinning on epoch (with a pause) for up to KHZ_POOL_SPIN_NS
 * after their last job and parked on it as a futex after that, claim chunks
 * from the atomic `next` like the caller does, and count themselves out of
 * `pending`. The caller returns once pending is 0: every item is done and
 * its writes are visible (release / acquire on pending). Nothing here
 * allocates, locks or logs once the pool runs; khz_setThreads allocates
 * the threads' scratch and starts them, outside the step. */
#include "pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define KHZ_POOL_MAX 16
/* a worker spins this long after a job before it parks: longer than the
 * gaps between a step's parallel parts and between back-to-back steps, so
 * that only an idle data's worker sleeps */
#define KHZ_POOL_SPIN_NS 2000000L
/* ... and yields now and then after this long without one */
#define KHZ_POOL_HOT_NS 200000L

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

typedef struct khzPoolWorker {
  struct khzPool *pool;
  int index;
} khzPoolWorker;

typedef struct khzPool {
  int nthreads; /* the caller and nthreads - 1 workers */
  pthread_t thread[KHZ_POOL_MAX];
  khzPoolWorker worker[KHZ_POOL_MAX];
  khzPoolScratch scratch[KHZ_POOL_MAX];
  void *tasks;
  size_t task_bytes;
  int alone;              /* bodies alone in their trees (free objects) */
  uint32_t job;           /* the caller's: the last job's number */
  _Atomic uint32_t epoch; /* futex word: the last job's number, bumped again for the stop */
  atomic_int parked;      /* workers in (or about to enter) the futex wait */
  atomic_int stop;
  /* the job: its number << 32 | its next unclaimed item. A worker claims
   * only items of the job it saw, and reads the fields below after a claim
   * (the job cannot end, nor the next be published, before its chunk is
   * done), so a worker late for a job never touches the next one's */
  _Atomic uint64_t next;
  atomic_int done; /* items finished */
  _Atomic(khzPoolFn) fn;
  _Atomic(void *) ctx;
  atomic_int n, chunk;
  atomic_long items[KHZ_POOL_MAX]; /* items each thread has done (tests) */
} khzPool;

static long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* the job's chunks, claimed one at a time until none is left */
static void claim_chunks(khzPool *p, uint32_t job, int thread) {
  uint64_t v = atomic_load_explicit(&p->next, memory_order_acquire);
  for (;;) {
    if ((uint32_t)(v >> 32) != job) return;
    int b = (int)(uint32_t)v, n = atomic_load_explicit(&p->n, memory_order_relaxed),
        chunk = atomic_load_explicit(&p->chunk, memory_order_relaxed);
    if (b >= n) return;
    if (!atomic_compare_exchange_weak_explicit(&p->next, &v, v + (uint64_t)chunk, memory_order_acq_rel,
                                               memory_order_acquire))
      continue;
    /* claimed: the fields are this job's */
    n = atomic_load_explicit(&p->n, memory_order_relaxed);
    chunk = atomic_load_explicit(&p->chunk, memory_order_relaxed);
    int e = b + chunk < n ? b + chunk : n;
    atomic_load_explicit(&p->fn, memory_order_relaxed)(atomic_load_explicit(&p->ctx, memory_order_relaxed),
                                                      thread, b, e);
    atomic_fetch_add_explicit(&p->items[thread], e - b, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->done, e - b, memory_order_release);
    v = atomic_load_explicit(&p->next, memory_order_acquire);
  }
}

static void *worker_main(void *arg) {
  khzPoolWorker *w = arg;
  khzPool *p = w->pool;
  uint32_t seen = 0; /* the epoch at the pool's start: a stop before this thread ran is seen */
  for (;;) {
    /* spin for the next job, then park on the epoch */
    long since = now_ns();
    uint32_t e;
    for (int i = 1;; i++) {
      e = atomic_load_explicit(&p->epoch, memory_order_acquire);
      if (e != seen) break;
      cpu_relax();
      if ((i & 255) != 0) continue;
      long idle = now_ns() - since;
      /* a step's parts come within microseconds of each other: the worker
       * stays on its CPU for KHZ_POOL_HOT_NS, then lets others of this
       * CPU run first (on a loaded machine a worker that yields at once
       * is seldom on a CPU when the next part comes) */
      if (idle > KHZ_POOL_HOT_NS) sched_yield();
      if (idle > KHZ_POOL_SPIN_NS) {
        /* parked is seen by the caller's check after its bump, or the
         * bump is seen here (both sequentially consistent); the futex
         * returns at once if the epoch moved in between */
        atomic_fetch_add(&p->parked, 1);
        if (atomic_load(&p->epoch) == seen) syscall(SYS_futex, &p->epoch, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
        atomic_fetch_sub(&p->parked, 1);
        since = now_ns();
      }
    }
    seen = e;
    if (atomic_load(&p->stop)) return NULL;
    claim_chunks(p, e, w->index);
  }
}

static khzPool *pool_of(const khzData *d) { return (khzPool *)d->pool; }

int khz_poolThreads(const khzData *d) { return d->pool ? pool_of(d)->nthreads : 1; }

int khz_poolAlone(const khzData *d) { return d->pool ? pool_of(d)->alone : 0; }

static void wake_workers(khzPool *p, uint32_t epoch) {
  atomic_store(&p->epoch, epoch);
  if (atomic_load(&p->parked) > 0) syscall(SYS_futex, &p->epoch, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

void khz_poolRun(khzData *d, khzPoolFn fn, void *ctx, int n, int chunk) {
  khzPool *p = pool_of(d);
  if (chunk < 1) chunk = 1;
  if (!p || n <= chunk) {
    if (n > 0) fn(ctx, 0, 0, n);
    return;
  }
  uint32_t job = ++p->job;
  atomic_store_explicit(&p->fn, fn, memory_order_relaxed);
  atomic_store_explicit(&p->ctx, ctx, memory_order_relaxed);
  atomic_store_explicit(&p->n, n, memory_order_relaxed);
  atomic_store_explicit(&p->chunk, chunk, memory_order_relaxed);
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  atomic_store_explicit(&p->next, (uint64_t)job << 32, memory_order_release);
  wake_workers(p, job);
  claim_chunks(p, job, 0);
  /* the workers' last chunks; yielding now and then lets a worker that
   * shares this CPU finish them */
  for (int i = 1; atomic_load_explicit(&p->done, memory_order_acquire) < n; i++) {
    cpu_relax();
    if ((i & 1023) == 0) sched_yield();
  }
}

long khz_poolItems(const khzData *d, int thread) {
  const khzPool *p = pool_of(d);
  return p && thread >= 0 && thread < p->nthreads ? atomic_load(&p->items[thread]) : 0;
}

khzPoolScratch *khz_poolScratch(khzData *d, int thread) { return &pool_of(d)->scratch[thread]; }

void khz_poolLimitPoints(khzData *d, int npt) {
  khzPool *p = pool_of(d);
  for (int t = 0; p && t < p->nthreads; t++)
    if (npt >= 0 && npt < p->scratch[t].npt) p->scratch[t].npt = npt;
}

void *khz_poolTasks(khzData *d, size_t bytes, int npair) {
  khzPool *p = pool_of(d);
  return p && bytes * (size_t)npair <= p->task_bytes ? p->tasks : NULL;
}

static void pool_release(khzPool *p, int started) {
  atomic_store(&p->stop, 1);
  wake_workers(p, ++p->job);
  for (int t = 1; t < started; t++) pthread_join(p->thread[t], NULL);
  for (int t = 0; t < p->nthreads; t++) free(p->scratch[t].pt), free(p->scratch[t].work);
  free(p->tasks);
  free(p);
}

void khz_poolFree(khzData *d) {
  if (!d->pool) return;
  khzPool *p = pool_of(d);
  pool_release(p, p->nthreads);
  d->pool = NULL;
}

int khz_setThreads(const khzModel *m, khzData *d, int n) {
  if (n < 1 || n > KHZ_POOL_MAX) return -1;
  if (khz_poolThreads(d) == n) return 0;
  khz_poolFree(d);
  if (n == 1) return 0;
  khzPool *p = calloc(1, sizeof *p);
  if (!p) return -1;
  p->nthreads = n;
  for (int i = 1; i < m->nbody; i++) p->alone += m->body_parent[i] == 0 && m->body_treeend[i] == i + 1;
  size_t task_bytes = 0, work = 0;
  int npt = 0;
  khz_collisionPoolSizes(m, &task_bytes, &npt, &work);
  p->task_bytes = task_bytes;
  int ok = 1;
  if (task_bytes) ok = (p->tasks = malloc(task_bytes)) != NULL;
  for (int t = 0; t < n && ok && npt > 0; t++) {
    p->scratch[t].pt = malloc((size_t)npt * sizeof(khzColPoint));
    p->scratch[t].npt = npt;
    p->scratch[t].work = malloc(work * sizeof(double));
    ok = p->scratch[t].pt && p->scratch[t].work;
  }
  int started = 1;
  while (ok && started < n) {
    p->worker[started] = (khzPoolWorker){p, started};
    /* the caller's scheduling class and CPU set (pthread's default
     * inheritance): a real-time loop thread gets a real-time worker */
    if (pthread_create(&p->thread[started], NULL, worker_main, &p->worker[started]) != 0) ok = 0;
    else started++;
  }
  if (!ok) {
    pool_release(p, started);
    return -1;
  }
  d->pool = p;
  return 0;
}

int khz_threads(const khzData *d) { return khz_poolThreads(d); }

int khz_threadsPin(khzData *d, int thread, int cpu) {
  khzPool *p = pool_of(d);
  if (!p || thread < 1 || thread >= p->nthreads || cpu < 0 || cpu >= CPU_SETSIZE) return -1;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(p->thread[thread], sizeof set, &set) == 0 ? 0 : -1;
}
