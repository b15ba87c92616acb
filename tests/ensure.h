/* ensure.h — the tests' assertion macros (MuJoCo / Box2D style, no framework).
 *
 * ENSURE(cond) and ENSURE_NEAR(a, b, tol) print the file, line and values on
 * failure and count it; a test's main() ends with `return ensure_report();`,
 * which prints a summary and returns non-zero if anything failed. */
#ifndef KHZ_TESTS_ENSURE_H
#define KHZ_TESTS_ENSURE_H

#include <math.h>
#include <stdio.h>

static int ensure_failures_;
static int ensure_checks_;

#define ENSURE(cond)                                                         \
  do {                                                                       \
    ensure_checks_++;                                                        \
    if (!(cond)) {                                                           \
      ensure_failures_++;                                                    \
      fprintf(stderr, "%s:%d: ENSURE(%s) failed\n", __FILE__, __LINE__, #cond); \
    }                                                                        \
  } while (0)

#define ENSURE_MSG(cond, ...)                                                \
  do {                                                                       \
    ensure_checks_++;                                                        \
    if (!(cond)) {                                                           \
      ensure_failures_++;                                                    \
      fprintf(stderr, "%s:%d: ENSURE(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                          \
      fprintf(stderr, "\n");                                                 \
    }                                                                        \
  } while (0)

#define ENSURE_NEAR(a, b, tol)                                               \
  do {                                                                       \
    double ensure_a_ = (a), ensure_b_ = (b);                                 \
    ensure_checks_++;                                                        \
    if (!(fabs(ensure_a_ - ensure_b_) <= (tol))) {                           \
      ensure_failures_++;                                                    \
      fprintf(stderr, "%s:%d: ENSURE_NEAR(%s, %s) failed: %.17g vs %.17g (tol %g)\n", \
              __FILE__, __LINE__, #a, #b, ensure_a_, ensure_b_, (double)(tol)); \
    }                                                                        \
  } while (0)

static inline int ensure_report(void) {
  fprintf(stderr, "%d checks, %d failed\n", ensure_checks_, ensure_failures_);
  return ensure_failures_ ? 1 : 0;
}

#endif
