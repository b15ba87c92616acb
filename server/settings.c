/* settings.c — the settings table (settings.h) and its parsers for the
 * command line, the config file and run-time requests. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khz/khz.h"
#include "settings.h"

/* a row's name, type and field: the name is the field's */
#define FIELD(f) .name = #f, .offset = offsetof(khzServerConfig, f)
#define BOOL(f) FIELD(f), .type = KHZ_SET_BOOL
#define INT(f, lo, hi) FIELD(f), .type = KHZ_SET_INT, .min = (lo), .max = (hi)
#define DOUBLE(f, lo, hi) FIELD(f), .type = KHZ_SET_DOUBLE, .min = (lo), .max = (hi)
#define STRING(f) FIELD(f), .type = KHZ_SET_STRING, .size = sizeof(((khzServerConfig *)0)->f)
#define ENUM(f, values) FIELD(f), .type = KHZ_SET_ENUM, .names = (values)

static const char *const mode_names[] = {"realtime", "lockstep", "fast", NULL};
static const char *const safe_names[] = {"zero", "damping", NULL};
static const char *const log_names[] = {"debug", "info", "warn", "error", NULL};

const khzSetting khz_settings[] = {
    /* what to simulate and where to talk */
    {STRING(scene), .def = "default",
     .help = "scene file (.yaml), robot (.urdf), or 'default' for the embedded scene"},
    {STRING(state_endpoint), .def = "tcp://127.0.0.1:5600", .help = "PUB socket: one State per tick"},
    {STRING(command_endpoint), .def = "tcp://127.0.0.1:5601",
     .help = "ROUTER socket: commands, haptic inputs, control requests and their replies"},
    {STRING(mass_scale), .def = "",
     .help = "scale the scene's masses and inertias before it is compiled: a factor for every "
             "body, or body=factor,... (empty = as loaded; campaigns)"},
    {STRING(friction), .def = "",
     .help = "every geom's Coulomb friction coefficient, >= 0 (empty = the scene's; campaigns)"},
    {STRING(hil_seed), .def = "",
     .help = "seed of the hil sensors' noise, the drives' and the network model's draws, an "
             "unsigned 64-bit integer (empty = the scene's hil.seed; campaigns)"},

    /* the loop */
    {DOUBLE(rate_hz, KHZ_RATE_MIN_HZ, KHZ_RATE_MAX_HZ), .zero_means = "the scene's",
     .apply = khz_apply_rate, .def = "0",
     .help = "loop rate in Hz, " KHZ_RATE_RANGE("..") " (0 = the scene's rate_hz)"},
    {ENUM(mode, mode_names), .apply = khz_apply_mode, .def = "realtime",
     .help = "realtime (wall-clock paced), lockstep (each tick waits for the controller), fast"},
    {BOOL(paused), .apply = khz_apply_paused, .def = "false",
     .help = "start (or set) paused: no ticks until resumed or stepped"},
    {DOUBLE(watchdog_ms, 0, 60000), .apply = khz_apply_watchdog, .def = "100",
     .help = "commands older than this are stale: the safe command is applied (0 = off)"},
    {ENUM(safe_command, safe_names), .apply = khz_apply_watchdog, .def = "zero",
     .help = "what the watchdog applies: zero torque or joint damping"},
    {DOUBLE(safe_damping, 0, 1e6), .apply = khz_apply_watchdog, .def = "2",
     .help = "joint damping of the safe command 'damping', N m s/rad"},
    {DOUBLE(lockstep_timeout_ms, 0, 3.6e6), .apply = khz_apply_lockstep, .def = "1000",
     .help = "lockstep: how long a tick waits for its command before applying the safe command (0 "
             "= forever)"},
    {DOUBLE(haptic_timeout_ms, 0, 60000), .def = "100",
     .help = "haptic device inputs older than this switch the coupling off (0 = never)"},
    {DOUBLE(kp, 0, 1e9), .apply = khz_apply_gains, .def = "0",
     .help = "default PD stiffness for every actuator (PD commands without gains), N m/rad"},
    {DOUBLE(kd, 0, 1e9), .apply = khz_apply_gains, .def = "0",
     .help = "default PD damping for every actuator, N m s/rad"},
    {STRING(contact_method), .apply = khz_apply_contact, .def = "",
     .help = "contact method (none, penalty, deepest, lcp, peg; empty = the scene's)"},
    {BOOL(publish_contacts), .apply = khz_apply_publish, .def = "false",
     .help = "include contact points in every state"},
    {BOOL(publish_hash), .def = "false",
     .help = "include the state hash in every state (determinism checks; costs about 0.3 ms of "
             "every tick for the default scene: at start only, so that no client can slow the "
             "ticks)"},

    /* the real-time thread */
    {INT(rt_priority, 0, 99), .def = "80",
     .help = "SCHED_FIFO priority of the loop thread (0 = do not ask)"},
    {INT(io_priority, 0, 99), .def = "60",
     .help = "SCHED_FIFO priority of the I/O thread and libzmq's threads, below rt_priority (0 = do "
             "not ask)"},
    {INT(cpu, -1, 1023), .def = "-1", .help = "pin the loop thread to this CPU (-1 = do not pin)"},
    {INT(threads, 0, 16), .def = "0",
     .help = "threads for the step (the same bits with any number): the loop thread and threads - 1 "
             "workers with its scheduling class, each on a CPU of its own when cpu is set and one "
             "is left (0 = the scene's `threads`, else 1)"},
    {BOOL(lock_memory), .def = "true", .help = "mlockall the process before the first tick"},
    {INT(cpu_dma_latency_us, -1, 10000), .def = "0",
     .help = "hold /dev/cpu_dma_latency at this many us while running, as cyclictest does (-1 = "
             "leave alone)"},
    {INT(spin_us, 0, 10000), .def = "0",
     .help = "realtime mode: wake this many us before each deadline and busy-wait to it (for "
             "haptic rates where the kernel's timer wake-ups are later than the period allows; "
             "burns the loop's core for that long per tick; 0 = sleep to the deadline)"},
    {BOOL(cpu_clock), .def = "true",
     .help = "read the loop thread's CPU clock three times per tick to tell khz's own overruns "
             "from the machine's (own / preempted / late overruns, the CPU-time histogram); false "
             "saves those three system calls per tick (haptic rates) and leaves overruns "
             "unattributed"},
    {BOOL(verify_overruns), .def = "false",
     .help = "re-run the step of every overrun counted as khz's own on a verifier thread (the "
             "state saved before each step: a copy and CPU clock reads per tick and per request; "
             "up to 7 own overruns queued) and say whether the same work needs the period "
             "(confirmed own) or not (host); needs cpu_clock"},
    {INT(state_ring, 0, 65536), .def = "0",
     .help = "states buffered between the loop and the I/O thread (dropped and counted when full); "
             "0: 100 ms of states at the starting rate, at least 256"},
    {INT(pub_hwm, 0, 1000000), .def = "0",
     .help = "messages queued per subscriber before a slow subscriber loses states; 0: four "
             "times the state ring, at least 1000"},

    /* logging, statistics, recording */
    {ENUM(log_level, log_names), .apply = khz_apply_logLevel, .def = "info",
     .help = "debug, info, warn or error"},
    {DOUBLE(stats_interval_s, 0, 3600), .apply = khz_apply_statsInterval, .def = "0",
     .help = "log a line of loop statistics this often (0 = off)"},
    {DOUBLE(duration_s, 0, 1e9), .def = "0",
     .help = "stop after this many seconds (0 = run until SIGINT / SIGTERM)"},
    {STRING(record), .def = "",
     .help = "record every state from the start into this file (length-prefixed State messages; "
             "created new, never overwritten)"},
    {STRING(record_dir), .def = "",
     .help = "the directory StartRecording requests write into (a client names a file in it, not a "
             "path); empty = clients may not record"},

    /* security */
    {STRING(curve_secret_key), .def = "",
     .help = "CURVE server secret key (40 Z85 characters, or a file holding it); required to bind "
             "a non-loopback address"},
    {STRING(curve_clients), .def = "",
     .help = "allowed client public keys: a file with one Z85 key per line, or keys separated by "
             "commas"},
    {.name = NULL}};

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

int khz_setting_parseValue(const khzSetting *s, const char *text, khzSettingValue *out, char *err,
                           size_t errsz) {
  char range[256], *end = NULL;
  khz_setting_range(s, range, sizeof range);
  if (!text) text = "";
  switch (s->type) {
    case KHZ_SET_BOOL:
      if (!strcmp(text, "true") || !strcmp(text, "yes") || !strcmp(text, "1") ||
          !strcmp(text, "on")) {
        out->i = 1;
      } else if (!strcmp(text, "false") || !strcmp(text, "no") || !strcmp(text, "0") ||
                 !strcmp(text, "off")) {
        out->i = 0;
      } else {
        return bad(err, errsz, s, text, "true or false");
      }
      return 0;
    case KHZ_SET_INT: {
      errno = 0;
      long v = strtol(text, &end, 10);
      if (!*text || *end || errno) return bad(err, errsz, s, text, "an integer");
      if ((v < s->min || v > s->max) && !(s->zero_means && v == 0)) {
        snprintf(err, errsz, "setting '%s': %ld is out of range (%s)", s->name, v, range);
        return -1;
      }
      out->i = (int)v;
      return 0;
    }
    case KHZ_SET_DOUBLE: {
      errno = 0;
      double v = strtod(text, &end);
      if (!*text || *end || errno || !isfinite(v)) return bad(err, errsz, s, text, "a finite number");
      if ((v < s->min || v > s->max) && !(s->zero_means && v == 0)) {
        if (s->zero_means)
          snprintf(err, errsz, "setting '%s': %g is out of range (0 = %s, or %g..%g)", s->name, v,
                   s->zero_means, s->min, s->max);
        else
          snprintf(err, errsz, "setting '%s': %g is out of range (%s)", s->name, v, range);
        return -1;
      }
      out->d = v;
      return 0;
    }
    case KHZ_SET_STRING:
      if (strlen(text) >= s->size) {
        snprintf(err, errsz, "setting '%s': value longer than %zu characters", s->name, s->size - 1);
        return -1;
      }
      snprintf(out->s, sizeof out->s, "%s", text);
      return 0;
    case KHZ_SET_ENUM:
      for (int i = 0; s->names[i]; i++) {
        if (!strcmp(text, s->names[i])) {
          out->i = i;
          return 0;
        }
      }
      snprintf(err, errsz, "setting '%s': unknown value '%s' (expected %s)", s->name, text, range);
      return -1;
  }
  return -1;
}

int khz_setting_parse(const khzSetting *s, const char *value, khzServerConfig *cfg, char *err,
                      size_t errsz) {
  khzSettingValue v;
  if (khz_setting_parseValue(s, value, &v, err, errsz)) return -1;
  khz_setting_put(s, &v, cfg);
  return 0;
}

void khz_setting_get(const khzSetting *s, const khzServerConfig *cfg, khzSettingValue *out) {
  const void *field = (const char *)cfg + s->offset;
  if (s->type == KHZ_SET_DOUBLE)
    out->d = *(const double *)field;
  else if (s->type == KHZ_SET_STRING)
    snprintf(out->s, sizeof out->s, "%s", (const char *)field);
  else
    out->i = *(const int *)field;
}

void khz_setting_put(const khzSetting *s, const khzSettingValue *v, khzServerConfig *cfg) {
  void *field = (char *)cfg + s->offset;
  if (s->type == KHZ_SET_DOUBLE)
    *(double *)field = v->d;
  else if (s->type == KHZ_SET_STRING)
    snprintf((char *)field, s->size, "%s", v->s);
  else
    *(int *)field = v->i;
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
      snprintf(out, outsz, "%s%g..%g", s->zero_means ? "0|" : "", s->min, s->max);
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
            s->apply ? "changeable at run time" : "start only");
  }
}
