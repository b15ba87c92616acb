/* heap_count.h — heap calls counted in a test: malloc, calloc, realloc and
 * free are wrapped at link time (heap_count_src and heap_count_args in
 * tests/meson.build) and counted while heap_counting is set. free(NULL) is
 * not counted: it touches no heap. One thread counts; the server's loop
 * thread has its own wrapper (tests/server/test_server_alloc.c). */
#ifndef KHZ_TESTS_HEAP_COUNT_H
#define KHZ_TESTS_HEAP_COUNT_H

extern int heap_counting; /* count while nonzero */
extern long heap_calls;   /* calls counted so far; a test may reset it */

#endif
