/* log.h — the server's log: one line per event on stderr, with the time since
 * start and the level. khz_log() checks the level before formatting anything
 * (Redis serverLog), so a disabled debug line costs one comparison. Never used
 * by the real-time thread, which only counts. */
#ifndef KHZ_SERVER_LOG_H
#define KHZ_SERVER_LOG_H

enum { KHZ_LOG_DEBUG = 0, KHZ_LOG_INFO, KHZ_LOG_WARN, KHZ_LOG_ERROR, KHZ_LOG_NONE };

extern int khz_log_level;

#define khz_log(level, ...)                                      \
  do {                                                           \
    if ((level) >= khz_log_level) khz_log_write((level), __VA_ARGS__); \
  } while (0)

void khz_log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
