/* spawn.h — the client tests' helper: a real khz-server process (the built
 * binary) on private ipc:// endpoints in a temporary directory, started and
 * stopped like a person would (SIGTERM). */
#ifndef KHZ_TESTS_CLIENTS_SPAWN_H
#define KHZ_TESTS_CLIENTS_SPAWN_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct server {
  pid_t pid;
  char dir[128], state_ep[256], cmd_ep[256];
} server;

static inline void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

/* a directory for the endpoints (kept across restarts of the same server) */
static inline int server_dir(server *s) {
  memset(s, 0, sizeof *s);
  snprintf(s->dir, sizeof s->dir, "/tmp/khz-client-test-XXXXXX");
  if (!mkdtemp(s->dir)) return -1;
  snprintf(s->state_ep, sizeof s->state_ep, "ipc://%s/state", s->dir);
  snprintf(s->cmd_ep, sizeof s->cmd_ep, "ipc://%s/cmd", s->dir);
  return 0;
}

/* starts exe on s's endpoints with extra arguments (NULL-terminated list);
 * returns once both sockets exist */
static inline int server_start(server *s, const char *exe, const char *const *extra) {
  const char *argv[64] = {exe,       "--state-endpoint", s->state_ep, "--command-endpoint",
                          s->cmd_ep, "--rt-priority",    "0",         "--io-priority",
                          "0",       "--lock-memory",    "false",     "--cpu-dma-latency-us",
                          "-1",      "--log-level",      "warn"};
  int n = 15;
  for (int i = 0; extra && extra[i] && n < 62; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  s->pid = fork();
  if (s->pid < 0) return -1;
  if (s->pid == 0) {
    /* the final statistics on stdout are not the test's output */
    FILE *null = freopen("/dev/null", "w", stdout);
    (void)null;
    execv(exe, (char *const *)argv);
    perror(exe);
    _exit(127);
  }
  char state_path[300], cmd_path[300];
  snprintf(state_path, sizeof state_path, "%s/state", s->dir);
  snprintf(cmd_path, sizeof cmd_path, "%s/cmd", s->dir);
  for (int i = 0; i < 200; i++) {
    struct stat sb;
    if (stat(state_path, &sb) == 0 && stat(cmd_path, &sb) == 0) return 0;
    int status;
    if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
      s->pid = 0;
      return -1;
    }
    nap_ms(25);
  }
  return -1;
}

/* SIGTERM and wait; the exit status (0 = clean) */
static inline int server_stop(server *s) {
  int status = -1;
  if (s->pid <= 0) return -1;
  kill(s->pid, SIGTERM);
  waitpid(s->pid, &status, 0);
  s->pid = 0;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static inline void server_cleanup(server *s) {
  char path[300];
  if (s->pid > 0) server_stop(s);
  snprintf(path, sizeof path, "%s/state", s->dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/cmd", s->dir);
  unlink(path);
  rmdir(s->dir);
}

#endif
