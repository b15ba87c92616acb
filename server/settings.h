/* settings.h — the server's one table of settings (Redis static_configs
 * style): name, type, range, default, and for those that may change at run
 * time the function that applies a new value (requests.c). The same table
 * serves the command line (--name value), the config file (lines "name
 * value") and the run-time GetSetting / SetSetting requests; --help prints it.
 * Values travel typed (khzSettingValue); text is parsed once, at the edge.
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
  char mass_scale[KHZ_SETTING_STR];
  char friction[KHZ_SETTING_STR];
  char hil_seed[KHZ_SETTING_STR];
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
  int threads;
  int lock_memory;
  int cpu_dma_latency_us;
  int spin_us;
  int cpu_clock;
  int verify_overruns;
  int state_ring;
  int pub_hwm;
  int log_level;
  double stats_interval_s;
  double duration_s;
  char record[KHZ_SETTING_STR];
  char record_dir[KHZ_SETTING_STR];
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

/* One setting's value, typed as its field in khzServerConfig: i (bool, int,
 * enum index), d (double) or s (string). */
typedef union khzSettingValue {
  int i;
  double d;
  char s[KHZ_SETTING_STR];
} khzSettingValue;

struct khzServer;
struct khzPending;

/* Applies a run-time change: next is the configuration with the new value in
 * place. Queues the loop requests that carry it, tagged with q (the reply
 * then waits for the loop), or acts on the I/O side at once. Returns 0, or -1
 * when the loop's request queue is full. Defined in requests.c. */
typedef int (*khzSettingApplyFn)(struct khzServer *s, struct khzPending *q,
                                 const khzServerConfig *next);

typedef struct khzSetting {
  const char *name;
  khzSettingType type;
  size_t offset;              /* into khzServerConfig */
  size_t size;                /* strings: buffer size */
  double min, max;            /* numbers: inclusive range */
  const char *const *names;   /* enums: NULL-terminated value names */
  khzSettingApplyFn apply;    /* run-time change; NULL = read at start only */
  const char *def;            /* default, as written on the command line */
  const char *help;
  const char *zero_means;     /* numbers: 0 is accepted too, outside [min, max], and means
                                 this ("the scene's"); NULL = no */
} khzSetting;

/* The apply functions of the table's run-time rows (requests.c). */
int khz_apply_rate(struct khzServer *s, struct khzPending *q, const khzServerConfig *next);
int khz_apply_mode(struct khzServer *s, struct khzPending *q, const khzServerConfig *next);
int khz_apply_paused(struct khzServer *s, struct khzPending *q, const khzServerConfig *next);
int khz_apply_watchdog(struct khzServer *s, struct khzPending *q, const khzServerConfig *next);
int khz_apply_lockstep(struct khzServer *s, struct khzPending *q, const khzServerConfig *next);
int khz_apply_gains(struct khzServer *s, struct khzPending *q, const khzServerConfig *next);
int khz_apply_contact(struct khzServer *s, struct khzPending *q, const khzServerConfig *next);
int khz_apply_publish(struct khzServer *s, struct khzPending *q, const khzServerConfig *next);
int khz_apply_logLevel(struct khzServer *s, struct khzPending *q, const khzServerConfig *next);
int khz_apply_statsInterval(struct khzServer *s, struct khzPending *q,
                            const khzServerConfig *next);

/* The table, NULL-name terminated, and its length. */
extern const khzSetting khz_settings[];
int khz_settings_count(void);

/* Looks a setting up by name ('-' and '_' are the same); NULL when unknown. */
const khzSetting *khz_setting_find(const char *name);

/* Fills cfg with every default. */
void khz_settings_defaults(khzServerConfig *cfg);

/* Parses text into a typed value, checked against the setting's type and
 * range. On error returns -1 with "setting 'NAME': PROBLEM" in err. */
int khz_setting_parseValue(const khzSetting *s, const char *text, khzSettingValue *out, char *err,
                           size_t errsz);

/* Parses value into cfg (only this setting changes, only on success); errors as
 * khz_setting_parseValue. */
int khz_setting_parse(const khzSetting *s, const char *value, khzServerConfig *cfg, char *err,
                      size_t errsz);

/* Reads / writes the setting's field of cfg as a typed value (no checks: put
 * values that parseValue made or that the caller checked). */
void khz_setting_get(const khzSetting *s, const khzServerConfig *cfg, khzSettingValue *out);
void khz_setting_put(const khzSetting *s, const khzSettingValue *v, khzServerConfig *cfg);

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
