/* settings.h — the server's one table of settings (Redis static_configs
 * style): name, type, range, default, whether it may change at run time and
 * what applying it means. The same table serves the command line
 * (--name value), the config file (lines "name value") and the run-time
 * GetSetting / SetSetting requests; --help prints it.
 */
#ifndef KHZ_SERVER_SETTINGS_H
#define KHZ_SERVER_SETTINGS_H

#include <stddef.h>
#include <stdio.h>

#define KHZ_SETTING_STR 256

typedef struct khzServerConfig {
  char scene[KHZ_SETTING_STR];
  char state_endpoint[KHZ_SETTING_STR];
  char command_endpoint[KHZ_SETTING_STR];
  double rate_hz;
  int mode;
  int paused;
  double watchdog_ms;
  int safe_command;
  double safe_damping;
  double lockstep_timeout_ms;
  double haptic_timeout_ms;
  double kp, kd;
  char contact_method[KHZ_SETTING_STR];
  int publish_contacts;
  int publish_hash;
  int rt_priority;
  int io_priority;
  int cpu;
  int lock_memory;
  int cpu_dma_latency_us;
  int state_ring;
  int pub_hwm;
  int log_level;
  double stats_interval_s;
  double duration_s;
  char record[KHZ_SETTING_STR];
  char curve_secret_key[KHZ_SETTING_STR];
  char curve_clients[KHZ_SETTING_STR];
} khzServerConfig;

typedef enum khzSettingType {
  KHZ_SET_BOOL = 0,
  KHZ_SET_INT,
  KHZ_SET_DOUBLE,
  KHZ_SET_STRING,
  KHZ_SET_ENUM
} khzSettingType;

/* What changing a setting at run time does (the server's switch). */
typedef enum khzSettingApply {
  KHZ_APPLY_NONE = 0,   /* read at start only */
  KHZ_APPLY_RATE,       /* loop request: rate */
  KHZ_APPLY_MODE,       /* loop request: mode */
  KHZ_APPLY_PAUSED,     /* loop request: pause / resume */
  KHZ_APPLY_WATCHDOG,   /* loop request: watchdog, safe command, damping */
  KHZ_APPLY_LOCKSTEP,   /* loop request: lockstep timeout */
  KHZ_APPLY_GAINS,      /* loop request: default PD gains */
  KHZ_APPLY_CONTACT,    /* loop request: contact method */
  KHZ_APPLY_PUBLISH,    /* loop request: contacts / hash in states */
  KHZ_APPLY_LOG,        /* the log level */
  KHZ_APPLY_STATS       /* the live statistics timer */
} khzSettingApply;

typedef struct khzSetting {
  const char *name;
  khzSettingType type;
  size_t offset;              /* into khzServerConfig */
  size_t size;                /* strings: buffer size */
  double min, max;            /* numbers: inclusive range */
  const char *const *names;   /* enums: NULL-terminated value names */
  int runtime;                /* may change while running */
  khzSettingApply apply;
  const char *def;            /* default, as written on the command line */
  const char *help;
  const char *zero_means;     /* numbers: 0 is accepted too, outside [min, max], and means
                                 this ("the scene's"); NULL = no */
} khzSetting;

/* The table, NULL-name terminated, and its length. */
extern const khzSetting khz_settings[];
int khz_settings_count(void);

/* Looks a setting up by name ('-' and '_' are the same); NULL when unknown. */
const khzSetting *khz_setting_find(const char *name);

/* Fills cfg with every default. */
void khz_settings_defaults(khzServerConfig *cfg);

/* Parses value into cfg (only this setting changes, only on success). On error
 * returns -1 with "setting 'NAME': PROBLEM" in err. */
int khz_setting_parse(const khzSetting *s, const char *value, khzServerConfig *cfg, char *err,
                      size_t errsz);

/* Writes the current value as text. */
void khz_setting_format(const khzSetting *s, const khzServerConfig *cfg, char *out, size_t outsz);

/* The range as text ("0..60000", "0|100..10000" when 0 means a default,
 * "realtime|lockstep|fast", "true|false", "text"). */
void khz_setting_range(const khzSetting *s, char *out, size_t outsz);

/* Reads a config file of "name value" lines ('#' starts a comment; values may
 * be quoted). Errors name the file, line and setting. */
int khz_settings_file(khzServerConfig *cfg, const char *path, char *err, size_t errsz);

/* Prints the table (name, default, range, run-time, help). */
void khz_settings_help(FILE *out);

#endif
