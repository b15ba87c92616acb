/* khz/client.h — the khz client library for C controllers, haptic-device
 * bridges and tools (libkhz-client). It speaks the khz.v1 wire protocol
 * (the .proto files in proto/khz_msgs/v1, docs/server.md) to a running khz-server: a SUB socket
 * for the state stream, a DEALER socket for commands, haptic inputs and
 * control requests. It depends on libzmq and libprotobuf-c only.
 *
 *   cc ctl.c $(pkg-config --cflags --libs khz-client)
 *
 * Messages are the protobuf-c structures generated from proto/ (every field
 * of khz.v1.State, khz.v1.ModelDescription, ... is there, documented in the
 * .proto files), so nothing is lost between the server and the controller.
 *
 * Real-time use. After start-up (khz_client_new, the first describe and the
 * first states) receiving states and sending commands allocate nothing on the
 * calling thread (tests/clients/test_client_alloc.c counts zero malloc calls,
 * libzmq's included): states are decoded by protobuf-c into preallocated
 * arenas through a custom allocator; commands and haptic inputs are packed
 * into a ring of preallocated buffers that libzmq sends as constant data
 * (zmq_msg_init_data without a free function; the DEALER's SNDHWM of 128 keeps
 * a slot from being reused while libzmq holds it); server errors are copied
 * into a fixed ring. An arena grows only when a message larger than any before
 * arrives (e.g. publish_contacts switched on), counted in
 * khzClientCounters.arena_grows. libzmq frees, on the calling thread, the
 * buffer its I/O thread allocated for each received state. Requests
 * (describe, pause, ...) are not meant for the control loop and may allocate.
 * Cost per call: docs/clients.md (build/clients/c/khz-client-bench).
 *
 * Threads: a khzClient belongs to one thread at a time (like a ZeroMQ
 * socket). Use one client per thread, e.g. a controller thread and a
 * monitoring thread each with their own.
 *
 * Lifetimes: the State returned by the state functions stays valid until the
 * next call that returns a state; a Reply until the next request; the
 * ModelDescription until the model changes twice (see khz_client_modelChanged).
 *
 * Errors: functions return NULL or -1 and leave a message a person can act on
 * in khz_client_error(), and a reason in khz_client_status().
 */
#ifndef KHZ_CLIENT_H
#define KHZ_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "khz_msgs/v1/command.pb-c.h"
#include "khz_msgs/v1/control.pb-c.h"
#include "khz_msgs/v1/messages.pb-c.h"
#include "khz_msgs/v1/state.pb-c.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The protocol this library speaks (the proto package). */
#define KHZ_PROTOCOL "khz.v1"

/* khz-server's default endpoints; the environment variables
 * KHZ_STATE_ENDPOINT and KHZ_COMMAND_ENDPOINT override them when
 * khz_client_new is given NULL. */
#define KHZ_CLIENT_STATE_ENDPOINT "tcp://127.0.0.1:5600"
#define KHZ_CLIENT_COMMAND_ENDPOINT "tcp://127.0.0.1:5601"

typedef struct khzClient khzClient;

typedef struct khzClientOptions {
  const char *server_key; /* CURVE: the server's public key (Z85, 40 chars); NULL = no CURVE */
  const char *public_key; /* CURVE: this client's key pair (Z85) */
  const char *secret_key;
  int rcvhwm;         /* states queued before a slow client loses some; 0 = libzmq's 1000 */
  int timeout_ms;     /* for the model re-fetch after a server restart; 0 = 2000 */
  int no_resync;      /* 1: do not re-fetch the model when the server's model changes */
  size_t arena_bytes; /* initial size of each decoding arena; 0 = 64 KiB */
} khzClientOptions;

/* Why the last call failed. */
typedef enum khzClientStatus {
  KHZ_CLIENT_OK = 0,
  KHZ_CLIENT_TIMEOUT,       /* nothing arrived within the timeout (server busy, paused or gone) */
  KHZ_CLIENT_NOT_CONNECTED, /* no server accepted the connection (not running, wrong endpoint, CURVE
                               keys) */
  KHZ_CLIENT_PROTOCOL,      /* the server speaks another protocol version */
  KHZ_CLIENT_MALFORMED,     /* a message that is not valid khz.v1 */
  KHZ_CLIENT_REFUSED,       /* the server answered with an error code (khz_client_lastReply) */
  KHZ_CLIENT_UNKNOWN_NAME,  /* a joint, body or proxy name the model does not have */
  KHZ_CLIENT_BAD_ARGUMENT,  /* an array of the wrong length, a NULL where a value is needed */
  KHZ_CLIENT_SYSTEM         /* out of memory, a ZeroMQ error */
} khzClientStatus;

/* What the client has seen since it was made. */
typedef struct khzClientCounters {
  uint64_t states; /* states decoded */
  uint64_t
      states_skipped; /* states received but not returned (khz_client_latestState drained them) */
  uint64_t gaps;      /* states never received (jumps in seq: the subscriber was too slow) */
  uint64_t malformed; /* messages that could not be decoded, or not as khz.v1 */
  uint64_t resyncs;   /* model re-fetched after the server's model changed (restart, reload) */
  uint64_t commands;  /* commands and haptic inputs sent */
  uint64_t send_failures;  /* ... not sent (no connection: never queued) */
  uint64_t errors;         /* Error messages received from the server */
  uint64_t errors_dropped; /* ... lost because the error ring was full */
  uint64_t arena_grows;    /* decoding arenas grown (allocations after start-up) */
} khzClientCounters;

/* ------------------------------------------------------------ lifecycle -- */

/* Makes a client and connects its two sockets (ZeroMQ connects in the
 * background and reconnects by itself after a server restart). NULL endpoints
 * mean $KHZ_STATE_ENDPOINT / $KHZ_COMMAND_ENDPOINT or the defaults above. opt
 * may be NULL. Returns NULL with a message in err (err may be NULL). Nothing
 * is exchanged yet: call khz_client_describe() to check that a server answers.
 * Cost: a ZeroMQ context with one I/O thread, 6 arenas (opt->arena_bytes
 * each), a 64 KiB request buffer, 256 x 2 KiB command buffers. */
khzClient *khz_client_new(const char *state_endpoint, const char *command_endpoint,
                          const khzClientOptions *opt, char *err, size_t errsz);

/* Closes the sockets and frees everything; nulls the caller's pointer. */
void khz_client_destroy(khzClient **c_p);

/* The message and the reason of the last failure ("" / KHZ_CLIENT_OK when the
 * last call succeeded). */
const char *khz_client_error(const khzClient *c);
khzClientStatus khz_client_status(const khzClient *c);

/* The endpoints in use. */
const char *khz_client_stateEndpoint(const khzClient *c);
const char *khz_client_commandEndpoint(const khzClient *c);

/* The counters above. */
const khzClientCounters *khz_client_counters(const khzClient *c);

/* Nanoseconds of CLOCK_MONOTONIC (the clock of State.*mono*_ns and
 * tick_time_ns on the same machine). */
int64_t khz_client_now(void);

/* ---------------------------------------------------------------- model -- */

/* Fetches the model description (Describe) when the client has none or the
 * server's model changed, waiting up to timeout_ms; returns the one it holds
 * otherwise. The description is checked (indices within nq / nv, one actuator
 * per Command slot); a reply that fails the check is MALFORMED, a server that
 * does not understand the request is reported as a PROTOCOL mismatch.
 * Cost: a round trip answered by the server's I/O thread, ~85 us on
 * loopback ipc. Requests applied by the loop (GetStats, Pause, ...) take
 * about one tick more. */
const Khz__V1__ModelDescription *khz_client_describe(khzClient *c, int timeout_ms);

/* The description the client holds (NULL before the first describe). */
const Khz__V1__ModelDescription *khz_client_model(const khzClient *c);

/* 1 once after the client re-fetched the model because the server's model
 * changed (a restart or a reload: states with another model_generation),
 * then 0. Re-read names and indices then; the previous description stays
 * valid until the following change. */
int khz_client_modelChanged(khzClient *c);

/* Lookup by name, in the description the client holds. A name matches
 * exactly ("arm/joint2") or, when unambiguous, without its robot prefix
 * ("joint2"). Return the index or -1 (UNKNOWN_NAME, with the names there are
 * in the message). Cost: a linear scan with strcmp (~40 ns for the arm's 7
 * actuators, ~90 ns by short name): look names up once, before the loop. */
int khz_client_actuatorIndex(khzClient *c, const char *joint_name); /* Command array slot */
int khz_client_bodyIndex(khzClient *c, const char *body_name);      /* State.body_pose / 7 */
int khz_client_proxyIndex(khzClient *c, const char *body_name);     /* HapticInput.proxy */
const Khz__V1__JointInfo *khz_client_joint(khzClient *c, const char *joint_name);

/* --------------------------------------------------------------- states -- */

/* The next state in order, waiting up to timeout_ms (-1 = forever, 0 = do
 * not wait); NULL on timeout (status TIMEOUT). The first state of another
 * model generation makes the client re-fetch the model first (unless
 * no_resync; one round trip, tried once per generation: after a failure,
 * khz_client_describe() tries again).
 * Cost: receive + decode ~1.5 us for the default scene's 2.7 kB state
 * (docs/clients.md), no allocation. */
const Khz__V1__State *khz_client_nextState(khzClient *c, int timeout_ms);

/* Drains the queue and returns the newest state, waiting up to timeout_ms for
 * one when none is queued; only the newest one is decoded. With timeout 0 it
 * is the poll to use inside the caller's own loop: NULL when nothing new. */
const Khz__V1__State *khz_client_latestState(khzClient *c, int timeout_ms);

/* The last state returned (NULL before the first). */
const Khz__V1__State *khz_client_state(const khzClient *c);

/* Callback style: fn is called for each state khz_client_dispatch()
 * delivers. */
typedef void (*khzStateFn)(khzClient *c, const Khz__V1__State *st, void *user);
void khz_client_onState(khzClient *c, khzStateFn fn, void *user);

/* Waits up to timeout_ms for a state, then delivers every queued state in
 * order to the callback (also reads server errors into the error ring).
 * Returns the number of states delivered (0 on timeout), -1 on failure. */
int khz_client_dispatch(khzClient *c, int timeout_ms);

/* The state socket's file descriptor, for the caller's poll/epoll/libev
 * loop. ZeroMQ signals it edge-triggered: when it becomes readable, call
 * khz_client_dispatch(c, 0) (or khz_client_latestState(c, 0) until NULL). */
int khz_client_fd(khzClient *c);

/* ------------------------------------------------------------- commands -- */

/* Torques for the actuators (n = ModelDescription.na values, Command order),
 * answering state st (NULL = the last state returned): applied at the tick
 * after st. Sets model_generation, seq (the client's counter), state_seq and
 * client_time_ns (khz_client_now). Never blocks: -1 (NOT_CONNECTED) when no
 * server is connected; the command is then dropped, not queued.
 * Cost: ~4 us (pack ~0.5 us; libzmq waking its I/O thread), no allocation. */
int khz_client_sendTorques(khzClient *c, const Khz__V1__State *st, const double *tau, size_t n);

/* PD targets for the server's in-tick PD (tau = kp (q_target - q) +
 * kd (qd_target - qd) + tau_ff, re-evaluated every tick with the current
 * state). n values each; qd_target, kp, kd, tau_ff may be NULL (zero, the
 * server's gains, the server's gains, zero). */
int khz_client_sendTargets(khzClient *c, const Khz__V1__State *st, const double *q_target,
                           const double *qd_target, const double *kp, const double *kd,
                           const double *tau_ff, size_t n);

/* Controls for the model's own actuators (ModelDescription.model_actuators:
 * MJCF <actuator>s, URDF <ros2_control> command interfaces), MuJoCo's
 * data.ctrl: names NULL: n = nu values in model_actuators order; else n
 * values for the n actuators named (the others contribute nothing). The
 * server clamps each to its ctrlrange (a CLAMPED error comes back) and runs
 * position / velocity actuators as servos at the tick rate. */
int khz_client_sendCtrl(khzClient *c, const Khz__V1__State *st, const double *ctrl,
                        const char *const *names, size_t n);
int khz_client_ctrlIndex(khzClient *c, const char *name); /* Command.ctrl slot, -1: none */

/* A haptic device's pose for a proxy (position 3, orientation w x y z, world
 * frame); velocity and angular_velocity may be NULL (zero). The force to
 * render comes back in State.haptic_wrench[6 * proxy ...]. */
int khz_client_sendHaptic(khzClient *c, int proxy, const double position[3],
                          const double orientation[4], const double velocity[3],
                          const double angular_velocity[3]);

/* Raw messages, as built by the caller (seq, generation, ... as given). */
int khz_client_command(khzClient *c, const Khz__V1__Command *cmd);
int khz_client_haptic(khzClient *c, const Khz__V1__HapticInput *in);
int khz_client_sendRaw(khzClient *c, const void *data, size_t len); /* any bytes (tests) */

/* The next Error the server sent this client (a rejected or clamped command,
 * an undecodable message), waiting up to timeout_ms; NULL when none. Errors
 * that arrive while the client waits for a reply or reads states are kept
 * (32 at most, the oldest dropped and counted). Valid until the next call. */
const Khz__V1__Error *khz_client_nextError(khzClient *c, int timeout_ms);

/* ------------------------------------------------------------- requests -- */

/* Sends a request (its id is set here) and waits up to timeout_ms for its
 * reply; NULL on failure (TIMEOUT, NOT_CONNECTED, PROTOCOL, MALFORMED). The
 * reply is returned whatever its code. Valid until the next request.
 * Requests block for a round trip (the loop applies them between two ticks):
 * call them outside a real-time loop, or from a second client. */
const Khz__V1__Reply *khz_client_request(khzClient *c, Khz__V1__Request *rq, int timeout_ms);

/* The last reply received (NULL before the first). */
const Khz__V1__Reply *khz_client_lastReply(const khzClient *c);

/* Common requests: 0 when the server answered OK, -1 otherwise (REFUSED with
 * the server's message, or a transport failure). timeout_ms as above. */
int khz_client_pause(khzClient *c, int timeout_ms);
int khz_client_resume(khzClient *c, int timeout_ms);
int khz_client_step(khzClient *c, uint32_t n, int timeout_ms); /* n ticks, then paused */
int khz_client_reset(khzClient *c, const double *q, size_t nq, int timeout_ms); /* q may be NULL */
int khz_client_setMode(khzClient *c, Khz__V1__Mode mode, int timeout_ms);
int khz_client_setRate(khzClient *c, double rate_hz, int timeout_ms);
int khz_client_setContactMethod(khzClient *c, const char *method, int timeout_ms);
int khz_client_setGains(khzClient *c, const double *kp, const double *kd, size_t n, int timeout_ms);
/* force and torque (3 each, world frame, torque may be NULL) at the body's
 * centre of mass for duration s of simulated time */
int khz_client_applyWrench(khzClient *c, const char *body, const double force[3],
                           const double torque[3], double duration, int timeout_ms);
int khz_client_clearWrenches(khzClient *c, int timeout_ms);
int khz_client_setSetting(khzClient *c, const char *name, const char *value, int timeout_ms);
/* the value as text (valid until the next request), NULL on failure */
const char *khz_client_getSetting(khzClient *c, const char *name, int timeout_ms);
/* the loop's statistics (histograms of lateness, compute, command latency and
 * response; counters); NULL on failure; valid until the next request */
const Khz__V1__Stats *khz_client_getStats(khzClient *c, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
