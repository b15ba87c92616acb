/* log.c — formatting and writing of log lines (log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "log.h"

int khz_log_level = KHZ_LOG_INFO;

void khz_log_write(int level, const char *fmt, ...) {
  static const char *const names[] = {"debug", "info", "warn", "error"};
  static double t0 = -1;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  double t = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  if (t0 < 0) t0 = t;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "khz-server [%9.3f] %s: %s\n", t - t0, names[level < 0 ? 0 : level > 3 ? 3 : level],
          line);
}
