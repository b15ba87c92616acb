/* internal.h — what the server's own files share, not part of its API: the
 * khzServer object, the peer and pending-reply tables, and the functions each
 * file offers the others. server.c routes (lifecycle, sockets, the event
 * loop, dispatch, sending replies), requests.c holds the request table and
 * the loop replies, commands.c checks commands and haptic inputs, publish.c
 * the state stream and statistics, curve.c the CURVE keys and ZAP handler.
 */
#ifndef KHZ_SERVER_INTERNAL_H
#define KHZ_SERVER_INTERNAL_H

#include <ev.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <zmq.h>

#include "codec.h"
#include "khz/load.h"
#include "khz/loop.h"
#include "khz_msgs/v1/messages.pb-c.h"
#include "server.h"
#include "record.h"
#include "settings.h"

#define KHZ_MAX_PEERS 256
#define KHZ_MAX_PENDING 256        /* requests waiting for the loop, all clients */
#define KHZ_CLIENT_INFLIGHT 16     /* ... of one client: more are answered BUSY */
#define KHZ_ROUTER_SNDHWM 1000     /* replies queued towards one client before they are dropped */
#define KHZ_MSG_MIN_BYTES 65536    /* the smallest ROUTER message limit (ZMQ_MAXMSGSIZE) */
#define KHZ_PUB_MAXMSG 1024        /* what a subscriber may send the PUB socket (subscriptions) */
#define KHZ_REQ_NAME_MAX 256       /* body, setting, method names in requests (bytes) */
#define KHZ_PEER_ID_MAX 256
#define KHZ_MAX_CLIENT_KEYS 64
#define KHZ_KEEPALIVE_S 0.05
#define KHZ_NCODES 16
#define KHZ_ERROR_MAX 512

/* a connection on the ROUTER socket: its identity and whether it is a REQ
 * socket (an empty delimiter frame before the payload) */
typedef struct khzPeer {
  uint8_t id[KHZ_PEER_ID_MAX];
  size_t idlen;
  int delim;
} khzPeer;

typedef struct khzRequestRow khzRequestRow; /* requests.c */

/* a request on its way: checked, then applied (by the loop, replies awaited,
 * or on the I/O side at once), then answered by its row's reply builder */
typedef struct khzPending {
  int used;                       /* waits for loop replies */
  uint64_t loop_id;               /* its loop requests' id (0 until the first) */
  const khzRequestRow *row;
  khzPeer peer;
  uint64_t req_id;
  int remaining;                  /* loop replies still expected */
  int failed;                     /* the ErrorCode of the first refusal, 0 = none */
  char error[KHZ_ERROR_MAX];
  const khzSetting *setting;      /* the setting it is about (GetSetting: NULL = all) */
  int set;                        /* 1: value goes into the configuration on success */
  int deferred;                   /* answered later by its own event (StopRecording) */
  khzSettingValue value;
} khzPending;

struct khzServer {
  khzServerConfig cfg;            /* committed settings: what requests have applied */
  khzServerHooks hooks;

  /* model and loop (the loop owns the rate in use: khz_loop_rate) */
  khzScene scene;
  khzHil *hil;                    /* the scene's sensors and drives (NULL = none) */
  int have_scene;
  khzModel *m;
  double stable_h;        /* khz_loop_stableTimestep of m, and what limits it (SetRate's warning) */
  char stable_what[256];
  khzLoop *loop;
  uint32_t generation;
  int na;
  int *act_dof;
  /* the model's own actuators (scene.actuator, Command.ctrl): each one's slot in Command
   * arrays (-1: its joint takes no command), its terms as the loop evaluates them
   * (loop_act: gains, torque range, initial feed-forward), a ctrl command's feed-forward
   * and inclusion per actuator (ctrl_ff, ctrl_on: nu each) and its gains summed per slot
   * (ctrl_kp, ctrl_kd: na each) before they are checked whole (I/O thread) */
  int nu;
  int *ctrl_slot;
  khzLoopActuator *loop_act;
  double *ctrl_ff, *ctrl_on, *ctrl_kp, *ctrl_kd;
  int64_t max_msg;                /* the ROUTER's ZMQ_MAXMSGSIZE: the largest message this model's
                                     requests and commands need (khz_server_maxMessage) */
  int nhaptic;
  khzHapticProxy haptic[KHZ_LOOP_MAX_HAPTIC];
  int scene_method;

  /* sockets and watchers */
  void *ctx, *pub, *router, *zap;
  struct ev_loop *ev;
  ev_io router_io, zap_io;
  ev_async wake_async, stop_async;
  ev_signal sigint_w, sigterm_w;
  ev_timer stats_timer, duration_timer, keepalive_timer;
  int started;

  /* state publication */
  khzStateCodec codec;
  uint8_t *last;
  size_t lastlen, lastcap;
  double last_pub;
  int have_state;
  uint64_t latest_seq, reset_seq;
  uint64_t pause_seq;             /* the loop paused after this state: announce it (0 = none) */
  uint64_t published;
  khzServerIoStats io;            /* the hand-off as the I/O thread saw it (server.h) */
  int64_t io_last_wake;           /* khz_loop_now() at the last wake served */
  int router_sent;                /* sent on the ROUTER since its last drain (wake_cb) */
  int64_t io_last_drain;          /* khz_loop_now() at wake_cb's last drain */
  khzRecorder *rec;               /* the recording, NULL = none (record.h) */
  int rec_stopping;               /* stop asked, the writer is finishing */
  int rec_dirfd;                  /* record_dir, -1 = clients may not record */
  char rec_path[KHZ_SETTING_STR];
  khzPending rec_stop;            /* the StopRecording answered when the file is closed */
  int rec_stop_waiting;
  uint64_t rec_written, rec_dropped; /* finished recordings' records */
  ev_async rec_async;
  ev_timer rec_timer;

  /* what the log has said already */
  int watchdog_logged;
  uint64_t seen_timeouts, seen_overruns, seen_dropped, seen_watchdog;
  double last_warn_log;

  /* peers, pending replies, counters */
  khzPeer peers[KHZ_MAX_PEERS];
  int npeers, next_peer;
  uint64_t peers_seen;
  double peer_active[KHZ_MAX_PEERS]; /* ev_now of the peer's last command or claim */
  uint32_t *owner;                /* na + nhaptic: the client holding each actuator, then each
                                   * haptic proxy; 0 = free */
  khzPending pending[KHZ_MAX_PENDING];
  khzPending overflow;            /* a request met with every pending entry in use */
  uint64_t next_loop_id;
  uint64_t rejected, by_code[KHZ_NCODES];
  uint64_t commands_in;
  uint64_t replies_dropped;       /* replies / errors a peer's queue could not take (or peer gone) */
  double last_drop_log;

  /* the I/O thread's scheduling: SCHED_FIFO io_priority when permitted, and
   * kept off the loop's CPU when the loop is pinned (io_cpus: the process's
   * CPUs less the loop's; io_pinned 0 when it is not done) */
  int io_fifo;
  int io_pinned;
  cpu_set_t io_cpus;
  char io_report[256];

  /* CURVE */
  int curve;
  char secret[41], public_key[41];
  uint8_t client_key[KHZ_MAX_CLIENT_KEYS][32];
  int nclient_keys;
};

/* server.c: replies and errors to one peer (a code other than OK or CLAMPED
 * counts as a rejection), and the peer table */
void khz_send_error(khzServer *s, const khzPeer *p, int code, uint64_t seq, int applied,
                    const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void khz_send_reply(khzServer *s, const khzPeer *p, Khz__V1__Reply *r);
void khz_reply_error(khzServer *s, const khzPeer *p, uint64_t id, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void khz_reply_ok(khzServer *s, const khzPeer *p, uint64_t id, uint64_t seq);
uint32_t khz_peer_client(khzServer *s, const khzPeer *p);

/* 1 when a ZeroMQ socket has a message to read (ZMQ_EVENTS) */
static inline int khz_has_input(void *sock) {
  uint32_t ev = 0;
  size_t sz = sizeof ev;
  if (zmq_getsockopt(sock, ZMQ_EVENTS, &ev, &sz)) return 0;
  return (ev & ZMQ_POLLIN) != 0;
}

/* 1 when every value is finite, else 0 with the first bad index in *bad */
static inline int check_finite(const double *v, size_t n, size_t *bad) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(v[i])) return *bad = i, 0;
  return 1;
}

/* requests.c: control arbitration over the claim slots [first, first + n)
 * of owner (actuators 0..na-1, haptic proxy p at na + p). The holder of a
 * slot claimed by another client than client, or 0 when client may control
 * them; lapsed claims (of every slot) are released first. khz_claims_other:
 * over every slot. */
uint32_t khz_claims_otherIn(khzServer *s, uint32_t client, int first, int n);
uint32_t khz_claims_other(khzServer *s, uint32_t client);
/* the names of the actuators and haptic proxies held by owner, for messages */
void khz_claims_names(khzServer *s, uint32_t owner, char *out, size_t n);

/* requests.c: one Request through the table; the loop's replies */
void khz_requests_handle(khzServer *s, const khzPeer *p, const Khz__V1__Request *rq);
void khz_requests_loopReplies(khzServer *s);
double khz_requests_rate(const khzServer *s, const khzServerConfig *c);

/* commands.c: a Command or a HapticInput, checked, into the loop */
/* the model's actuators' slots and scratch (after act_dof); 0, or -1 out of memory */
int khz_commands_init(khzServer *s);
/* 1 when the model's actuators at their initial controls are stable at step h (the
 * loop may apply them before the first command), else 0 with why in msg */
int khz_commands_startStable(const khzServer *s, double h, char *msg, size_t msgsz);
void khz_commands_free(khzServer *s);
void khz_commands_command(khzServer *s, const khzPeer *p, const Khz__V1__Command *c);
void khz_commands_haptic(khzServer *s, const khzPeer *p, const Khz__V1__HapticInput *h);

/* publish.c: the recording (start, stop, its writer's end) */
int khz_record_start(khzServer *s, int dirfd, const char *path, char *err, size_t errsz);
void khz_record_stop(khzServer *s);
void khz_record_doneCb(struct ev_loop *ev, ev_async *w, int revents);
void khz_record_timeoutCb(struct ev_loop *ev, ev_timer *w, int revents);
uint64_t khz_record_written(khzServer *s);
uint64_t khz_record_dropped(khzServer *s);
/* requests.c: answers the deferred StopRecording (when it waits) */
void khz_requests_recordStopped(khzServer *s);

/* publish.c: every state the loop published, the lockstep keep-alive, the
 * statistics log line */
void khz_publish_states(khzServer *s);
void khz_publish_keepaliveCb(struct ev_loop *ev, ev_timer *w, int revents);
/* the loop paused after state 'seq': that state is published once more with
 * FLAG_PAUSED | FLAG_REPEATED (now, or as soon as the I/O side has it) */
void khz_publish_paused(khzServer *s, uint64_t seq);
void khz_publish_statsCb(struct ev_loop *ev, ev_timer *w, int revents);

/* curve.c: the security rule and the keys (before any socket), the ZAP handler */
int khz_curve_setup(khzServer *s, char *err, size_t errsz);
void khz_curve_zapCb(struct ev_loop *ev, ev_io *w, int revents);

/* server.c: one ROUTER payload from the peer id handled as the I/O thread
 * does, then the states and loop replies that are ready (fuzz/fuzz_server.c:
 * the caller plays the I/O thread; khz_server_run must not be running) */
void khz_server_handleBytes(khzServer *s, const uint8_t *id, size_t idlen, const uint8_t *data,
                            size_t len);

/* server.c: the ROUTER's message size limit for a model with na actuators */
int64_t khz_server_maxMessage(const khzModel *m, int na);

/* server.c: writes the formatted message into err (errsz bytes); returns -1 */
int khz_server_fail(char *err, size_t errsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
