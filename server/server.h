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

/* The state ring's length when the setting state_ring is 0 (auto): the
 * states of KHZ_STATE_RING_S at rate_hz, rounded up to a power of two, at
 * least KHZ_STATE_RING_MIN. The kernel lets real-time threads have 95 % of a
 * CPU (sched_rt_runtime_us 950000 of sched_rt_period_us 1000000): when the
 * I/O side needs more of its CPU and other work waits there, that work gets
 * up to 50 ms at once (docs/server.md, "States dropped when pinned"); the
 * ring holds twice that. */
#define KHZ_STATE_RING_S 0.1
#define KHZ_STATE_RING_MIN 256
int khz_server_stateRing(double rate_hz);

/* The PUB socket's SNDHWM when the setting pub_hwm is 0 (auto): four times
 * the state ring, at least KHZ_PUB_HWM_MIN. After a stall the I/O thread
 * sends the ring's backlog at once, and libzmq's writer learns of the
 * reader's progress only every hwm / 2 messages: with 1000 (the ring's 1024
 * at 10 kHz) pinned runs lost 4-32 states past the ring in 5 of 15 runs, with
 * 4000 none in 6 (docs/server.md, "States dropped when pinned"). */
#define KHZ_PUB_HWM_MIN 1000
int khz_server_pubHwm(int state_ring);

/* What the I/O thread saw of the loop's hand-off (its own counters, read
 * without synchronisation: exact once khz_server_run has returned). */
typedef struct khzServerIoStats {
  uint64_t wakes;         /* the loop's wake-ups served */
  uint64_t states_max;    /* the most states taken from the ring at one wake */
  int64_t gap_max_ns;     /* the longest time between two wake-ups served */
  int state_ring;         /* the ring's length */
} khzServerIoStats;
void khz_server_ioStats(const khzServer *s, khzServerIoStats *out);

/* The model generation this server stamps on states and ids. */
uint32_t khz_server_generation(const khzServer *s);

/* 1 when the endpoint is loopback, IPC or in-process (no CURVE needed). */
int khz_endpoint_is_local(const char *endpoint);

#endif
