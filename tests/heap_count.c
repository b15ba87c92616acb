/* heap_count.c — the wrappers behind heap_count.h. A build that cannot wrap
 * (ThreadSanitizer's, which owns malloc) defines KHZ_HEAP_UNCOUNTED: the
 * counters stay and nothing is counted. */
#include <stddef.h>

#include "heap_count.h"

int heap_counting;
long heap_calls;

#ifndef KHZ_HEAP_UNCOUNTED
void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

void *__wrap_malloc(size_t n) {
  heap_calls += heap_counting != 0;
  return __real_malloc(n);
}
void *__wrap_calloc(size_t k, size_t n) {
  heap_calls += heap_counting != 0;
  return __real_calloc(k, n);
}
void *__wrap_realloc(void *p, size_t n) {
  heap_calls += heap_counting != 0;
  return __real_realloc(p, n);
}
void __wrap_free(void *p) {
  heap_calls += heap_counting != 0 && p;
  __real_free(p);
}
#endif
