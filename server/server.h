/* server.h — the khz server object: loads a scene, runs the real-time loop
 * (rt/include/khz/loop.h) and owns the I/O thread's libev loop with every
 * ZeroMQ socket: PUB for the state stream, ROUTER for commands, haptic inputs
 * and control requests (and the ZAP handler when CURVE is on).
 *
 * khz-server's main() is a thin shell around it; tests embed it in-process.
 */
#ifndef KHZ_SERVER_SERVER_H
#define KHZ_SERVER_SERVER_H

#include <stdint.h>
#include <stdio.h>

#include "settings.h"

typedef struct khzServer khzServer;

typedef struct khzServerHooks {
  int install_signals;              /* SIGINT / SIGTERM stop the server (khz-server) */
  void (*rt_thread_init)(void *);   /* called in the loop thread before its first tick */
  void *rt_thread_init_user;
  struct khzLoopTrace *trace;       /* the loop's per-tick record (benchmarks; NULL = none) */
} khzServerHooks;

/* Loads the scene, checks the security rule (non-loopback binds need CURVE
 * keys), binds the sockets and starts the loop thread. Returns NULL with a
 * message a person can act on in err. hooks may be NULL. */
khzServer *khz_server_new(const khzServerConfig *cfg, const khzServerHooks *hooks, char *err,
                          size_t errsz);

/* Runs the I/O loop in the calling thread until khz_server_stop(), a signal
 * or duration_s. Returns 0. */
int khz_server_run(khzServer *s);

/* Asks a running server to stop (any thread, async-signal-safe enough:
 * ev_async_send). */
void khz_server_stop(khzServer *s);

/* Stops the loop thread, closes the sockets and frees everything; nulls the
 * caller's pointer. */
void khz_server_destroy(khzServer **s_p);

/* Prints the loop and server statistics (the final summary). */
void khz_server_printStats(khzServer *s, FILE *out);

/* What the real-time thread was granted (one line). */
const char *khz_server_report(const khzServer *s);

/* The model generation this server stamps on states and ids. */
uint32_t khz_server_generation(const khzServer *s);

/* 1 when the endpoint is loopback, IPC or in-process (no CURVE needed). */
int khz_endpoint_is_local(const char *endpoint);

#endif
