/* pool.h — the data's fork-join pool (khz_setThreads): worker threads that
 * take a share of a step's independent work. Each job is a range of items
 * cut into chunks that the threads claim in turn; every item's result goes
 * to its own place, and whatever sums or orders them runs afterwards on the
 * calling thread, so the results do not depend on the thread count. */
#ifndef KHZ_POOL_H
#define KHZ_POOL_H

#include "collision/collision.h"
#include "khz/khz.h"

/* fn(ctx, thread, begin, end): items [begin, end) on thread `thread` (0 = the
 * caller), which owns khz_poolScratch(pool, thread) for the call */
typedef void (*khzPoolFn)(void *ctx, int thread, int begin, int end);

/* the narrow phase's per-thread scratch (pairs.c) */
typedef struct khzPoolScratch {
  khzColPoint *pt; /* npt points: each pair's answer, one after another */
  int npt;
  int used; /* points of this pass so far */
  double *work;    /* KHZ_COL_WORK(point_cap, maxvert) doubles */
} khzPoolScratch;

struct khzPool;

/* threads of d's pool (1 without one) */
int khz_poolThreads(const khzData *d);
/* the model's bodies alone in their trees (free objects; 0 without a
 * pool): ABA's start is split over the threads when they are many */
int khz_poolAlone(const khzData *d);
/* runs fn over [0, n) in chunks of `chunk` on the pool's threads and
 * returns when every item is done; without a pool, or for n <= chunk, all
 * of it on the caller */
void khz_poolRun(khzData *d, khzPoolFn fn, void *ctx, int n, int chunk);
khzPoolScratch *khz_poolScratch(khzData *d, int thread);
/* items thread `thread` has done in the pool's jobs, outside the caller's
 * runs of a whole job alone (tests: the workers took a share) */
long khz_poolItems(const khzData *d, int thread);
/* the pool's per-pair records of the narrow phase (pairs.c): npair of
 * `bytes` each, or NULL without a pool */
void *khz_poolTasks(khzData *d, size_t bytes, int npair);
/* tests: each thread's point buffer cut to npt points, so that the pass
 * makes the pairs left over itself */
void khz_poolLimitPoints(khzData *d, int npt);
/* joins the workers and frees the pool (khz_deleteData; khz_setThreads(1)) */
void khz_poolFree(khzData *d);

#endif
