/* test_alloc.c — zero heap allocations inside khz_step: malloc, calloc and
 * realloc are wrapped at link time (-Wl,--wrap) and counted while 10,000 steps
 * of a 27-dof floating tree run, with torques, wrenches, joint limits and
 * friction active, under both integrators. */
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "random_model.h"
#include "heap_count.h"

int main(void) {
  for (int integ = 0; integ < 2; integ++) {
    khzModel *m = rm_random_model(27, 1, 1, 1);
    ENSURE(m != NULL);
    if (!m) break;
    m->integrator = integ ? KHZ_INT_EULER : KHZ_INT_RK4;

    /* the wrapper must see rt's own heap_calls, or the test proves nothing */
    heap_counting = 1;
    khzData *d = khz_makeData(m, 0);
    heap_counting = 0;
    ENSURE_MSG(heap_calls >= 2, "wrapper saw %ld calls in khz_makeData", heap_calls);
    heap_calls = 0;
    rm_random_state(m, d->q, d->qd);
    heap_counting = 1;
    for (int s = 0; s < 10000; s++) {
      for (int k = 0; k < m->nv; k++) d->tau[k] = 0.5 * sin(0.001 * s + k);
      d->xfrc[6 * 3 + 2] = 2 * cos(0.002 * s);
      khz_step(m, d);
    }
    khz_forward(m, d);
    heap_counting = 0;
    printf("%s: %ld heap calls in 10000 steps\n", integ ? "euler" : "rk4", heap_calls);
    ENSURE(heap_calls == 0);
    ENSURE(d->warning[KHZ_WARN_STACK] == 0);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
  return ensure_report();
}
