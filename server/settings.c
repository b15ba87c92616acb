/* settings.c — the settings table (settings.h) and its parsers for the
 * command line, the config file and run-time requests. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"

#define OFF(f) offsetof(khzServerConfig, f)
#define SZ(f) sizeof(((khzServerConfig *)0)->f)

static const char *const mode_names[] = {"realtime", "lockstep", "fast", NULL};
static const char *const safe_names[] = {"zero", "damping", NULL};
static const char *const log_names[] = {"debug", "info", "warn", "error", NULL};

const khzSetting khz_settings[] = {
    /* what to simulate and where to talk */
    {"scene", KHZ_SET_STRING, OFF(scene), SZ(scene), 0, 0, NULL, 0, KHZ_APPLY_NONE, "default",
     "scene file (.yaml), robot (.urdf), or 'default' for the embedded scene"},
    {"state_endpoint", KHZ_SET_STRING, OFF(state_endpoint), SZ(state_endpoint), 0, 0, NULL, 0,
     KHZ_APPLY_NONE, "tcp://127.0.0.1:5600", "PUB socket: one State per tick"},
    {"command_endpoint", KHZ_SET_STRING, OFF(command_endpoint), SZ(command_endpoint), 0, 0, NULL, 0,
     KHZ_APPLY_NONE, "tcp://127.0.0.1:5601",
     "ROUTER socket: commands, haptic inputs, control requests and their replies"},

    /* the loop */
    {"rate_hz", KHZ_SET_DOUBLE, OFF(rate_hz), 0, 0, 10000, NULL, 1, KHZ_APPLY_RATE, "0",
     "loop rate in Hz, 100..10000 (0 = the scene's rate_hz)"},
    {"mode", KHZ_SET_ENUM, OFF(mode), 0, 0, 0, mode_names, 1, KHZ_APPLY_MODE, "realtime",
     "realtime (wall-clock paced), lockstep (each tick waits for the controller), fast"},
    {"paused", KHZ_SET_BOOL, OFF(paused), 0, 0, 0, NULL, 1, KHZ_APPLY_PAUSED, "false",
     "start (or set) paused: no ticks until resumed or stepped"},
    {"watchdog_ms", KHZ_SET_DOUBLE, OFF(watchdog_ms), 0, 0, 60000, NULL, 1, KHZ_APPLY_WATCHDOG,
     "100", "commands older than this are stale: the safe command is applied (0 = off)"},
    {"safe_command", KHZ_SET_ENUM, OFF(safe_command), 0, 0, 0, safe_names, 1, KHZ_APPLY_WATCHDOG,
     "zero", "what the watchdog applies: zero torque or joint damping"},
    {"safe_damping", KHZ_SET_DOUBLE, OFF(safe_damping), 0, 0, 1e6, NULL, 1, KHZ_APPLY_WATCHDOG, "2",
     "joint damping of the safe command 'damping', N m s/rad"},
    {"lockstep_timeout_ms", KHZ_SET_DOUBLE, OFF(lockstep_timeout_ms), 0, 0, 3.6e6, NULL, 1,
     KHZ_APPLY_LOCKSTEP, "1000",
     "lockstep: how long a tick waits for its command before applying the safe command (0 = forever)"},
    {"haptic_timeout_ms", KHZ_SET_DOUBLE, OFF(haptic_timeout_ms), 0, 0, 60000, NULL, 0,
     KHZ_APPLY_NONE, "100", "haptic device inputs older than this switch the coupling off (0 = never)"},
    {"kp", KHZ_SET_DOUBLE, OFF(kp), 0, 0, 1e9, NULL, 1, KHZ_APPLY_GAINS, "0",
     "default PD stiffness for every actuator (PD commands without gains), N m/rad"},
    {"kd", KHZ_SET_DOUBLE, OFF(kd), 0, 0, 1e9, NULL, 1, KHZ_APPLY_GAINS, "0",
     "default PD damping for every actuator, N m s/rad"},
    {"contact_method", KHZ_SET_STRING, OFF(contact_method), SZ(contact_method), 0, 0, NULL, 1,
     KHZ_APPLY_CONTACT, "", "contact method (none, penalty, deepest, ...; empty = the scene's)"},
    {"publish_contacts", KHZ_SET_BOOL, OFF(publish_contacts), 0, 0, 0, NULL, 1, KHZ_APPLY_PUBLISH,
     "false", "include contact points in every state"},
    {"publish_hash", KHZ_SET_BOOL, OFF(publish_hash), 0, 0, 0, NULL, 1, KHZ_APPLY_PUBLISH, "false",
     "include the state hash in every state (determinism checks; costs tick time)"},

    /* the real-time thread */
    {"rt_priority", KHZ_SET_INT, OFF(rt_priority), 0, 0, 99, NULL, 0, KHZ_APPLY_NONE, "80",
     "SCHED_FIFO priority of the loop thread (0 = do not ask)"},
    {"io_priority", KHZ_SET_INT, OFF(io_priority), 0, 0, 99, NULL, 0, KHZ_APPLY_NONE, "60",
     "SCHED_FIFO priority of the I/O thread and libzmq's threads, below rt_priority (0 = do not "
     "ask)"},
    {"cpu", KHZ_SET_INT, OFF(cpu), 0, -1, 1023, NULL, 0, KHZ_APPLY_NONE, "-1",
     "pin the loop thread to this CPU (-1 = do not pin)"},
    {"lock_memory", KHZ_SET_BOOL, OFF(lock_memory), 0, 0, 0, NULL, 0, KHZ_APPLY_NONE, "true",
     "mlockall the process before the first tick"},
    {"cpu_dma_latency_us", KHZ_SET_INT, OFF(cpu_dma_latency_us), 0, -1, 10000, NULL, 0,
     KHZ_APPLY_NONE, "0",
     "hold /dev/cpu_dma_latency at this many us while running, as cyclictest does (-1 = leave "
     "alone)"},
    {"state_ring", KHZ_SET_INT, OFF(state_ring), 0, 2, 65536, NULL, 0, KHZ_APPLY_NONE, "256",
     "states buffered between the loop and the I/O thread (dropped and counted when full)"},
    {"pub_hwm", KHZ_SET_INT, OFF(pub_hwm), 0, 1, 1000000, NULL, 0, KHZ_APPLY_NONE, "1000",
     "messages queued per subscriber before a slow subscriber loses states"},

    /* logging, statistics, recording */
    {"log_level", KHZ_SET_ENUM, OFF(log_level), 0, 0, 0, log_names, 1, KHZ_APPLY_LOG, "info",
     "debug, info, warn or error"},
    {"stats_interval_s", KHZ_SET_DOUBLE, OFF(stats_interval_s), 0, 0, 3600, NULL, 1,
     KHZ_APPLY_STATS, "0", "log a line of loop statistics this often (0 = off)"},
    {"duration_s", KHZ_SET_DOUBLE, OFF(duration_s), 0, 0, 1e9, NULL, 0, KHZ_APPLY_NONE, "0",
     "stop after this many seconds (0 = run until SIGINT / SIGTERM)"},
    {"record", KHZ_SET_STRING, OFF(record), SZ(record), 0, 0, NULL, 0, KHZ_APPLY_NONE, "",
     "record every state from the start into this file (length-prefixed State messages)"},

    /* security */
    {"curve_secret_key", KHZ_SET_STRING, OFF(curve_secret_key), SZ(curve_secret_key), 0, 0, NULL,
     0, KHZ_APPLY_NONE, "",
     "CURVE server secret key (40 Z85 characters, or a file holding it); required to bind a "
     "non-loopback address"},
    {"curve_clients", KHZ_SET_STRING, OFF(curve_clients), SZ(curve_clients), 0, 0, NULL, 0,
     KHZ_APPLY_NONE, "",
     "allowed client public keys: a file with one Z85 key per line, or keys separated by commas"},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, 0, NULL, NULL}};

int khz_settings_count(void) {
  int n = 0;
  while (khz_settings[n].name) n++;
  return n;
}

/* names compare with '-' == '_' */
static int same_name(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    char x = *a == '-' ? '_' : *a, y = *b == '-' ? '_' : *b;
    if (x != y) return 0;
  }
  return *a == *b;
}

const khzSetting *khz_setting_find(const char *name) {
  for (int i = 0; name && khz_settings[i].name; i++)
    if (same_name(khz_settings[i].name, name)) return &khz_settings[i];
  return NULL;
}

void khz_settings_defaults(khzServerConfig *cfg) {
  memset(cfg, 0, sizeof *cfg);
  for (int i = 0; khz_settings[i].name; i++) {
    char err[256];
    if (khz_setting_parse(&khz_settings[i], khz_settings[i].def, cfg, err, sizeof err) != 0) {
      fprintf(stderr, "khz-server: bad default: %s\n", err); /* a programming error */
      abort();
    }
  }
}

static int bad(char *err, size_t errsz, const khzSetting *s, const char *value, const char *what) {
  snprintf(err, errsz, "setting '%s': '%s' is not %s", s->name, value, what);
  return -1;
}

int khz_setting_parse(const khzSetting *s, const char *value, khzServerConfig *cfg, char *err,
                      size_t errsz) {
  void *field = (char *)cfg + s->offset;
  char range[256], *end = NULL;
  khz_setting_range(s, range, sizeof range);
  if (!value) value = "";
  switch (s->type) {
    case KHZ_SET_BOOL:
      if (!strcmp(value, "true") || !strcmp(value, "yes") || !strcmp(value, "1") ||
          !strcmp(value, "on")) {
        *(int *)field = 1;
      } else if (!strcmp(value, "false") || !strcmp(value, "no") || !strcmp(value, "0") ||
                 !strcmp(value, "off")) {
        *(int *)field = 0;
      } else {
        return bad(err, errsz, s, value, "true or false");
      }
      return 0;
    case KHZ_SET_INT: {
      errno = 0;
      long v = strtol(value, &end, 10);
      if (!*value || *end || errno) return bad(err, errsz, s, value, "an integer");
      if (v < s->min || v > s->max) {
        snprintf(err, errsz, "setting '%s': %ld is out of range (%s)", s->name, v, range);
        return -1;
      }
      *(int *)field = (int)v;
      return 0;
    }
    case KHZ_SET_DOUBLE: {
      errno = 0;
      double v = strtod(value, &end);
      if (!*value || *end || errno || !isfinite(v)) return bad(err, errsz, s, value, "a finite number");
      if (v < s->min || v > s->max) {
        snprintf(err, errsz, "setting '%s': %g is out of range (%s)", s->name, v, range);
        return -1;
      }
      /* the rate: 0 (the scene's) or 100..10000 */
      if (s->apply == KHZ_APPLY_RATE && v != 0 && v < 100) {
        snprintf(err, errsz, "setting '%s': %g is out of range (0 = the scene's, or 100..10000)",
                 s->name, v);
        return -1;
      }
      *(double *)field = v;
      return 0;
    }
    case KHZ_SET_STRING:
      if (strlen(value) >= s->size) {
        snprintf(err, errsz, "setting '%s': value longer than %zu characters", s->name, s->size - 1);
        return -1;
      }
      snprintf((char *)field, s->size, "%s", value);
      return 0;
    case KHZ_SET_ENUM:
      for (int i = 0; s->names[i]; i++) {
        if (!strcmp(value, s->names[i])) {
          *(int *)field = i;
          return 0;
        }
      }
      snprintf(err, errsz, "setting '%s': unknown value '%s' (expected %s)", s->name, value, range);
      return -1;
  }
  return -1;
}

void khz_setting_format(const khzSetting *s, const khzServerConfig *cfg, char *out, size_t outsz) {
  const void *field = (const char *)cfg + s->offset;
  switch (s->type) {
    case KHZ_SET_BOOL:
      snprintf(out, outsz, "%s", *(const int *)field ? "true" : "false");
      break;
    case KHZ_SET_INT:
      snprintf(out, outsz, "%d", *(const int *)field);
      break;
    case KHZ_SET_DOUBLE:
      snprintf(out, outsz, "%.17g", *(const double *)field);
      break;
    case KHZ_SET_STRING:
      snprintf(out, outsz, "%s", (const char *)field);
      break;
    case KHZ_SET_ENUM:
      snprintf(out, outsz, "%s", s->names[*(const int *)field]);
      break;
  }
}

void khz_setting_range(const khzSetting *s, char *out, size_t outsz) {
  size_t n = 0;
  out[0] = 0;
  switch (s->type) {
    case KHZ_SET_BOOL:
      snprintf(out, outsz, "true|false");
      break;
    case KHZ_SET_INT:
    case KHZ_SET_DOUBLE:
      snprintf(out, outsz, "%g..%g", s->min, s->max);
      break;
    case KHZ_SET_STRING:
      snprintf(out, outsz, "text");
      break;
    case KHZ_SET_ENUM:
      for (int i = 0; s->names[i] && n < outsz; i++)
        n += (size_t)snprintf(out + n, outsz - n, "%s%s", i ? "|" : "", s->names[i]);
      break;
  }
}

/* strips blanks at both ends in place */
static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = 0;
  return s;
}

int khz_settings_file(khzServerConfig *cfg, const char *path, char *err, size_t errsz) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errsz, "%s: cannot open config file: %s", path, strerror(errno));
    return -1;
  }
  khzServerConfig tmp = *cfg;
  char line[1024], msg[512];
  int lineno = 0, rc = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    /* name, then the value up to a '#' outside quotes */
    char *p = trim(line);
    if (!*p || *p == '#') continue;
    char *name = p;
    while (*p && !isspace((unsigned char)*p)) p++;
    if (*p) *p++ = 0;
    char *value = trim(p);
    int quoted = *value == '"';
    if (quoted) {
      char *q = strchr(value + 1, '"');
      if (!q) {
        snprintf(err, errsz, "%s:%d: setting '%s': missing closing quote", path, lineno, name);
        rc = -1;
        break;
      }
      *q = 0;
      value++;
    } else {
      char *hash = strchr(value, '#');
      if (hash) *hash = 0;
      value = trim(value);
    }
    const khzSetting *s = khz_setting_find(name);
    if (!s) {
      snprintf(err, errsz, "%s:%d: unknown setting '%s' (khz-server --help lists them)", path,
               lineno, name);
      rc = -1;
      break;
    }
    if (khz_setting_parse(s, value, &tmp, msg, sizeof msg)) {
      snprintf(err, errsz, "%s:%d: %s", path, lineno, msg);
      rc = -1;
      break;
    }
  }
  fclose(f);
  if (rc == 0) *cfg = tmp;
  return rc;
}

void khz_settings_help(FILE *out) {
  for (int i = 0; khz_settings[i].name; i++) {
    const khzSetting *s = &khz_settings[i];
    char flag[64], range[256];
    snprintf(flag, sizeof flag, "--%s", s->name);
    for (char *c = flag + 2; *c; c++)
      if (*c == '_') *c = '-';
    khz_setting_range(s, range, sizeof range);
    fprintf(out, "  %-24s %s\n  %-24s   default: %s%s%s; %s; %s\n", flag, s->help, "",
            s->def[0] ? "" : "(", s->def[0] ? s->def : "empty", s->def[0] ? "" : ")", range,
            s->runtime ? "changeable at run time" : "start only");
  }
}
