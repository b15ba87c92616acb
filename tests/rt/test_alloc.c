/* test_alloc.c — zero heap allocations inside khz_step: malloc, calloc and
 * realloc are wrapped at link time (-Wl,--wrap) and counted while 10,000 steps
 * of a 27-dof floating tree run, with torques, wrenches, joint limits and
 * friction active, under both integrators. */
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "random_model.h"

static int counting;
static long allocations;

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

void *__wrap_malloc(size_t n) {
  if (counting) allocations++;
  return __real_malloc(n);
}
void *__wrap_calloc(size_t k, size_t n) {
  if (counting) allocations++;
  return __real_calloc(k, n);
}
void *__wrap_realloc(void *p, size_t n) {
  if (counting) allocations++;
  return __real_realloc(p, n);
}
void __wrap_free(void *p) {
  if (counting) allocations++;
  __real_free(p);
}

int main(void) {
  for (int integ = 0; integ < 2; integ++) {
    khzModel *m = rm_random_model(27, 1, 1, 1);
    ENSURE(m != NULL);
    if (!m) break;
    m->integrator = integ ? KHZ_INT_EULER : KHZ_INT_RK4;

    /* the wrapper must see rt's own allocations, or the test proves nothing */
    counting = 1;
    khzData *d = khz_makeData(m, 0);
    counting = 0;
    ENSURE_MSG(allocations >= 2, "wrapper saw %ld calls in khz_makeData", allocations);
    allocations = 0;
    rm_random_state(m, d->q, d->qd);
    counting = 1;
    for (int s = 0; s < 10000; s++) {
      for (int k = 0; k < m->nv; k++) d->tau[k] = 0.5 * sin(0.001 * s + k);
      d->xfrc[6 * 3 + 2] = 2 * cos(0.002 * s);
      khz_step(m, d);
    }
    khz_forward(m, d);
    counting = 0;
    printf("%s: %ld heap calls in 10000 steps\n", integ ? "euler" : "rk4", allocations);
    ENSURE(allocations == 0);
    ENSURE(d->warning[KHZ_WARN_STACK] == 0);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
  return ensure_report();
}
