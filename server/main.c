/* main.c — khz-server: settings from the defaults, then the config file, then
 * the flags (one table, settings.c); runs until SIGINT / SIGTERM (or
 * duration_s), then prints the final statistics and exits 0. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "server.h"
#include "settings.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: khz-server [--config FILE] [--SETTING VALUE | --SETTING=VALUE]...\n"
          "       khz-server --help | --curve-keygen\n"
          "\n"
          "The khz real-time simulation server: ticks a scene at a fixed rate, publishes the\n"
          "state after every tick (PUB) and applies the commands, haptic inputs and control\n"
          "requests its clients send (ROUTER). Protocol: proto/khz_msgs/v1/*.proto; guide:\n"
          "docs/server.md.\n"
          "\n"
          "  --config FILE            read settings from FILE (lines \"name value\", # comments);\n"
          "                           flags given on the command line win\n"
          "  --curve-keygen           print a new CURVE key pair and exit\n"
          "  --help                   this text\n"
          "\n"
          "Settings (also valid in the config file and, where marked, at run time through the\n"
          "SetSetting request); a boolean flag alone means true:\n");
  khz_settings_help(out);
}

/* "--name=value" or "--name value"; returns the number of arguments used, -1 on error */
static int parse_flag(khzServerConfig *cfg, int argc, char **argv, int i, char *err, size_t errsz) {
  const char *arg = argv[i] + 2;
  char name[128];
  const char *value = NULL;
  const char *eq = strchr(arg, '=');
  int used = 1;
  snprintf(name, sizeof name, "%.*s", (int)(eq ? (size_t)(eq - arg) : strlen(arg)), arg);
  const khzSetting *s = khz_setting_find(name);
  if (!s) {
    snprintf(err, errsz, "unknown option '--%s' (khz-server --help lists the settings)", name);
    return -1;
  }
  if (eq) {
    value = eq + 1;
  } else if (s->type == KHZ_SET_BOOL &&
             (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2) ||
              (strcmp(argv[i + 1], "true") && strcmp(argv[i + 1], "false")))) {
    value = "true";
  } else if (i + 1 < argc) {
    value = argv[i + 1];
    used = 2;
  } else {
    snprintf(err, errsz, "option '--%s' needs a value", name);
    return -1;
  }
  if (khz_setting_parse(s, value, cfg, err, errsz)) return -1;
  return used;
}

int main(int argc, char **argv) {
  khzServerConfig cfg;
  char err[1024];
  khz_settings_defaults(&cfg);
  signal(SIGPIPE, SIG_IGN);
  /* SIGINT / SIGTERM stay pending until the event loop's watchers take them
   * (libev unblocks them then): a signal that arrives while the model loads or
   * the sockets bind still stops the server cleanly instead of killing it or,
   * for a background job whose SIGINT is ignored, being lost. Threads started
   * later inherit the mask, so the signals reach the I/O thread only. */
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);

  /* --help, --curve-keygen, --config first */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--curve-keygen")) {
      char pub[41], sec[41];
      if (zmq_curve_keypair(pub, sec) != 0) {
        fprintf(stderr, "khz-server: this libzmq cannot make CURVE keys (built without libsodium?)\n");
        return 2;
      }
      printf("public %s\nsecret %s\n", pub, sec);
      return 0;
    }
    if (!strncmp(argv[i], "--config", 8) && (argv[i][8] == 0 || argv[i][8] == '=')) {
      const char *path = argv[i][8] == '=' ? argv[i] + 9 : (i + 1 < argc ? argv[i + 1] : NULL);
      if (!path) {
        fprintf(stderr, "khz-server: option '--config' needs a file\n");
        return 2;
      }
      if (khz_settings_file(&cfg, path, err, sizeof err)) {
        fprintf(stderr, "khz-server: %s\n", err);
        return 2;
      }
    }
  }

  /* then every other flag, in order */
  for (int i = 1; i < argc;) {
    if (!strncmp(argv[i], "--config", 8) && (argv[i][8] == 0 || argv[i][8] == '=')) {
      i += argv[i][8] == '=' ? 1 : 2;
      continue;
    }
    if (strncmp(argv[i], "--", 2)) {
      fprintf(stderr, "khz-server: unexpected argument '%s' (settings are --name value)\n", argv[i]);
      return 2;
    }
    int used = parse_flag(&cfg, argc, argv, i, err, sizeof err);
    if (used < 0) {
      fprintf(stderr, "khz-server: %s\n", err);
      return 2;
    }
    i += used;
  }

  /* run until a signal or the duration, then the final statistics */
  khzServerHooks hooks = {.install_signals = 1};
  khzServer *srv = khz_server_new(&cfg, &hooks, err, sizeof err);
  if (!srv) {
    fprintf(stderr, "khz-server: %s\n", err);
    return 1;
  }
  khz_server_run(srv);
  khz_server_printStats(srv, stdout);
  fflush(stdout);
  khz_server_destroy(&srv);
  return 0;
}
