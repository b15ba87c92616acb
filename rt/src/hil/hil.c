/* hil.c — sensors, drives and faults between the exact state and a
 * controller (khz/hil.h; docs/hil.md). One khzHil holds every sensor's
 * generator, bias, history and delay queue and every drive's lagged torque,
 * all sized at creation: khz_hilDrive and khz_hilSample never allocate.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khz/hil.h"
#include "rng.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* one sensor: what every sample reads first, in the order of the cache
 * lines a tick touches (at 1 kHz the loop meets them cold): the flags,
 * queue indices and sample tick; the noise's scales, the generator and the
 * queue; the bias and the point; then what only some types read (the last
 * sample, the kept force-torque reading) and what only a fault does */
typedef struct hilSensor {
  int type, object, dim, adr; /* spec type and object; values and their first index in out */
  int divisor, latency;
  int fault;              /* khzFaultType */
  int have_prev;          /* prev holds the last sample (differencing sensors) */
  int has_white, has_walk, has_resolution; /* white > 0, walk > 0, resolution > 0 */
  /* delay queue (latency > 0): samples waiting for their latency, oldest first */
  int qcap, qhead, qtail; /* qtail: the slot after the newest; empty when qhead == qtail */
  uint64_t sampled_at;    /* the tick the published reading was sampled at */
  double white, resolution;
  double walk;            /* bias_walk * sqrt(sample period): the bias's step per sample */
  double rate;            /* 1 / the sample period (h * divisor) */
  khzRng rng;
  uint64_t *qtick;        /* qcap: the tick each sample was taken at */
  double *qval;           /* qcap * dim */
  double bias[KHZ_SENSOR_MAXDIM];
  double pos[3];
  /* the last sample of a differencing sensor: the encoder's quantised
   * position (prev[0]); the accelerometer point's world velocity (3); the
   * joint force-torque sensor's subtree momentum p, angular momentum l
   * about the world origin, the wrench on it from outside (force, torque
   * about the origin) and the sensor point, world (3 + 3 + 6 + 3) */
  double prev[15];
  /* a force-torque sensor on a sleeping body: its exact reading, and the
   * body's position and contact wrench it came from, at tick kept_tick */
  uint64_t kept_tick;     /* 0: none */
  double kept_in[9], kept[6];
  /* while a fault is in effect: the newest released reading, which the
   * published values show through the fault (a frozen sensor's stays) */
  double held[KHZ_SENSOR_MAXDIM];
  double fault_value, fault_until;
} hilSensor;

typedef struct hilDrive {
  khzDriveSpec spec;
  int dof, qadr;
  double alpha;           /* 1 - exp(-h / lag), 1 without lag */
  double tau_m;           /* the lagged, limited motor torque at the joint */
  double tau_out;         /* what the joint got at the last khz_hilDrive */
  int fault;
  double fault_value, fault_until;
  double lock_q;          /* KHZ_FAULT_LOCK: the position the brake holds */
  int torque_once;        /* the next khz_hilDrive takes d->tau as a torque */
  int lock_pending;       /* a lock began: the next khz_hilDrive holds the joint where it is */
} hilDrive;

/* a sensor's group: its type and whether it has white noise and a bias walk */
#define GROUP_KEY(type, white_on, walk_on) (4 * (type) + 2 * (white_on) + (walk_on))
#define HIL_NGROUP (4 * KHZ_NSENSORTYPE)

struct khzHil {
  int nsensor, ndrive, nvalue;
  hilSensor *sensor;
  khzSensorSpec *spec;    /* nsensor: as given (khz_hilSensor) */
  hilDrive *drive;
  double *out;            /* nvalue: the published readings */
  uint64_t *qtick_pool;   /* the sensors' delay queues */
  double *qval_pool;
  uint64_t seed;
  double h;
  /* the sensors by group (type, white noise on, bias walk on), each group a
   * range of order[] (group_sensors); khz_hilSample runs a loop per group */
  int *order;
  int ngroup;
  struct {
    int key, begin, end;
  } group[HIL_NGROUP];
  /* faults: how many sensors and drives have one, and the earliest end of a timed one */
  int nfault;
  double next_until;
  /* per tick, shared by the sensors that read them (khz_hilSample): */
  int contact_readers, subtree_readers; /* sensors that read the contact wrenches (force,
                                           touch, joint force-torque) / the subtree sums */
  int contact_each_tick, subtree_each_tick; /* one of them samples every tick */
  int nbody;
  unsigned char *in_subtree; /* per body: 1 if in some joint force-torque sensor's subtree */
  int nsub;                  /* those bodies, in order (parents first), and each one's */
  int *sub_body, *sub_parent; /* parent when that is in a subtree too, else -1 */
  unsigned char *reads_contact; /* per body: 1 if a sensor reads its contact wrench */
  double *body_contact;      /* nbody * 7: the contacts' force and torque about the world
                                origin on each body, and the sum of their normal forces */
  /* the sleeping pairs' share of body_contact (the first d->ncontact_asleep
   * pairs, frozen with their forces while their islands sleep), summed once
   * while the same pairs sleep: asleep_geom names them (2 per pair) */
  int cache_asleep;          /* the model's islands cannot wake and sleep again within a tick */
  int asleep_valid, nasleep;
  int *asleep_geom;          /* m->npair_max * 2 */
  double *asleep_contact;    /* nbody * 7 */
  const double *contact_sum; /* this tick's contact wrenches: body_contact, or asleep_contact
                                when every pair sleeps (the same values) */
  double *subtree;           /* nbody * 12, for bodies in_subtree: the subtree's momentum p,
                                angular momentum l about the origin, and the wrench from
                                outside (gravity, body wrenches, contacts; f, t about the
                                origin) */
};

static const char *const sensor_names[KHZ_NSENSORTYPE] = {
    "encoder", "gyro", "accelerometer", "force_torque", "touch", "joint_force_torque"};
static const int sensor_dims[KHZ_NSENSORTYPE] = {2, 3, 3, 6, 1, 6};
static const char *const mode_names[] = {"torque", "position", "velocity"};
static const char *const fault_names[KHZ_NFAULTTYPE] = {"none", "freeze", "dropout", "bias",
                                                        "limp", "torque_loss", "lock", "stall"};

int khz_sensorDim(int type) { return type >= 0 && type < KHZ_NSENSORTYPE ? sensor_dims[type] : 0; }
const char *khz_sensorTypeName(int type) {
  return type >= 0 && type < KHZ_NSENSORTYPE ? sensor_names[type] : "?";
}
int khz_sensorTypeFind(const char *name) {
  for (int k = 0; k < KHZ_NSENSORTYPE; k++)
    if (!strcmp(name, sensor_names[k])) return k;
  return -1;
}
const char *khz_driveModeName(int mode) { return mode >= 0 && mode < 3 ? mode_names[mode] : "?"; }
int khz_driveModeFind(const char *name) {
  for (int k = 0; k < 3; k++)
    if (!strcmp(name, mode_names[k])) return k;
  return -1;
}
const char *khz_faultTypeName(int type) {
  return type >= 0 && type < KHZ_NFAULTTYPE ? fault_names[type] : "?";
}
int khz_faultTypeFind(const char *name) {
  for (int k = 0; k < KHZ_NFAULTTYPE; k++)
    if (!strcmp(name, fault_names[k])) return k;
  return -1;
}

/* ------------------------------------------------------------- create -- */

static int fail(char *err, size_t errsz, const char *fmt, const char *name, const char *what,
                double value) {
  if (err && errsz) snprintf(err, errsz, fmt, name, what, value);
  return -1;
}

static int one_dof(const khzModel *m, int b) {
  int t = m->jnt_type[b];
  return t == KHZ_JOINT_REVOLUTE || t == KHZ_JOINT_CONTINUOUS || t == KHZ_JOINT_PRISMATIC;
}

static int check_noise(const khzNoiseSpec *n, const char *name, char *err, size_t errsz) {
  const double v[4] = {n->white, n->bias, n->bias_walk, n->resolution};
  const char *f[4] = {"white", "bias", "bias_walk", "resolution"};
  for (int k = 0; k < 4; k++) {
    if (!isfinite(v[k]))
      return fail(err, errsz, "sensor '%s': noise %s is %g (not finite)", name, f[k], v[k]);
    if (k != 1 && v[k] < 0)
      return fail(err, errsz, "sensor '%s': noise %s is %g (must be >= 0)", name, f[k], v[k]);
  }
  return 0;
}

static int check_sensor(const khzModel *m, const khzSensorSpec *s, char *err, size_t errsz) {
  const char *n = s->name[0] ? s->name : "(unnamed)";
  if (s->type < 0 || s->type >= KHZ_NSENSORTYPE)
    return fail(err, errsz, "sensor '%s': %s %g is not a sensor type", n, "type", s->type);
  if (s->object < 1 || s->object >= m->nbody)
    return fail(err, errsz, "sensor '%s': %s %g is not a body of the model", n, "object",
                s->object);
  if (s->type == KHZ_SENSOR_ENCODER && !one_dof(m, s->object))
    return fail(err, errsz,
                "sensor '%s': an encoder needs a revolute or prismatic joint; the %s of body %g "
                "is not one",
                n, "joint", s->object);
  if (s->type == KHZ_SENSOR_JOINT_FT && m->jnt_type[s->object] == KHZ_JOINT_FLOATING)
    return fail(err, errsz,
                "sensor '%s': a %s force-torque sensor needs a joint that holds its body; body "
                "%g has a free joint",
                n, "joint", s->object);
  if (s->divisor < 1 || s->divisor > 1000000)
    return fail(err, errsz, "sensor '%s': %s %g is outside 1..1000000 ticks", n, "divisor",
                s->divisor);
  if (s->latency < 0 || s->latency > KHZ_HIL_MAX_LATENCY)
    return fail(err, errsz, "sensor '%s': %s %g is outside 0..1000 ticks", n, "latency",
                s->latency);
  for (int k = 0; k < 3; k++)
    if (!isfinite(s->pos[k])) return fail(err, errsz, "sensor '%s': %s[%g] is not finite", n, "pos", k);
  return check_noise(&s->noise, n, err, errsz);
}

static int check_drive(const khzDriveSpec *dr, char *err, size_t errsz) {
  const char *n = dr->joint;
  if (dr->mode < 0 || dr->mode > KHZ_DRIVE_VELOCITY)
    return fail(err, errsz, "drive on '%s': %s %g is not a drive mode", n, "mode", dr->mode);
  const double v[9] = {dr->kp, dr->kd, dr->max_torque, dr->stall_torque, dr->no_load_speed,
                       dr->gear, dr->lag, dr->coulomb, dr->viscous};
  const char *f[9] = {"kp", "kd", "max_torque", "stall_torque", "no_load_speed",
                      "gear", "lag", "coulomb", "viscous"};
  for (int k = 0; k < 9; k++)
    if (!isfinite(v[k]) || v[k] < 0)
      return fail(err, errsz, "drive on '%s': %s is %g (must be finite and >= 0)", n, f[k], v[k]);
  if (dr->stall_torque > 0 && !(dr->no_load_speed > 0))
    return fail(err, errsz, "drive on '%s': stall_torque needs %s > 0 (it is %g)", n,
                "no_load_speed", dr->no_load_speed);
  if (dr->gear != 0 && dr->gear < 1)
    return fail(err, errsz, "drive on '%s': %s %g must be >= 1 (motor turns per joint turn)", n,
                "gear", dr->gear);
  return 0;
}

static int find_joint(const khzModel *m, const char *name) {
  for (int b = 1; b < m->nbody; b++)
    if (!strcmp(m->jnt_name[b], name)) return b;
  return -1;
}

/* the sensors in order of their group's key (a counting pass per key) */
static void group_sensors(khzHil *hil) {
  int n = 0;
  hil->ngroup = 0;
  for (int key = 0; key < HIL_NGROUP; key++) {
    int begin = n;
    for (int i = 0; i < hil->nsensor; i++) {
      const hilSensor *s = &hil->sensor[i];
      if (GROUP_KEY(s->type, s->has_white, s->has_walk) == key) hil->order[n++] = i;
    }
    if (n > begin) {
      hil->group[hil->ngroup].key = key;
      hil->group[hil->ngroup].begin = begin;
      hil->group[hil->ngroup++].end = n;
    }
  }
}

/* each sensor's sample rate and bias step per sample, from the step and its
 * divisor; then the groups (has_walk may change) */
static void set_period(khzHil *hil) {
  for (int i = 0; i < hil->nsensor; i++) {
    hilSensor *s = &hil->sensor[i];
    double period = hil->h * s->divisor;
    s->rate = 1 / period;
    s->walk = hil->spec[i].noise.bias_walk * sqrt(period);
    s->has_walk = s->walk > 0;
  }
  group_sensors(hil);
}

static int reads_contacts(int type) {
  return type == KHZ_SENSOR_FORCE || type == KHZ_SENSOR_TOUCH || type == KHZ_SENSOR_JOINT_FT;
}

khzHil *khz_hilCreate(const khzModel *m, const khzSensorSpec *sensor, int nsensor,
                      const khzDriveSpec *drive, int ndrive, uint64_t seed, double h, char *err,
                      size_t errsz) {
  if (!(h > 0) || !isfinite(h)) {
    fail(err, errsz, "hil: %s%s %g must be > 0", "", "step", h);
    return NULL;
  }
  if (nsensor < 0 || ndrive < 0) {
    fail(err, errsz, "hil: %s%s %g", "", "negative count", nsensor < 0 ? nsensor : ndrive);
    return NULL;
  }
  for (int i = 0; i < nsensor; i++)
    if (check_sensor(m, &sensor[i], err, errsz)) return NULL;
  for (int i = 0; i < ndrive; i++) {
    if (check_drive(&drive[i], err, errsz)) return NULL;
    int b = find_joint(m, drive[i].joint);
    if (b < 0 || !one_dof(m, b)) {
      if (err && errsz)
        snprintf(err, errsz, "drive on '%s': %s", drive[i].joint,
                 b < 0 ? "no joint of that name in the model"
                       : "a drive needs a revolute or prismatic joint");
      return NULL;
    }
    for (int j = 0; j < i; j++)
      if (!strcmp(drive[j].joint, drive[i].joint)) {
        if (err && errsz) snprintf(err, errsz, "drive on '%s': the joint has two drives", drive[i].joint);
        return NULL;
      }
  }

  khz_rngInit(); /* the ziggurat's tables, before any tick */
  khzHil *hil = calloc(1, sizeof *hil);
  if (!hil) goto oom;
  hil->seed = seed;
  hil->h = h;
  hil->nsensor = nsensor;
  hil->ndrive = ndrive;
  hil->next_until = INFINITY;
  hil->sensor = calloc((size_t)nsensor + 1, sizeof *hil->sensor);
  hil->spec = calloc((size_t)nsensor + 1, sizeof *hil->spec);
  hil->order = calloc((size_t)nsensor + 1, sizeof *hil->order);
  hil->drive = calloc((size_t)ndrive + 1, sizeof *hil->drive);
  if (!hil->sensor || !hil->spec || !hil->order || !hil->drive) goto oom;
  /* the delay queues in one block: samples in flight, one every divisor
   * ticks over latency ticks, plus the newest */
  size_t nq = 0, nqval = 0;
  for (int i = 0; i < nsensor; i++) {
    hilSensor *s = &hil->sensor[i];
    const khzSensorSpec *sp = &sensor[i];
    hil->spec[i] = *sp;
    s->type = sp->type;
    s->object = sp->object;
    s->dim = sensor_dims[sp->type];
    s->adr = hil->nvalue;
    hil->nvalue += s->dim;
    s->divisor = sp->divisor;
    s->latency = sp->latency;
    s->white = sp->noise.white;
    s->resolution = sp->noise.resolution;
    s->has_white = s->white > 0;
    s->has_resolution = s->resolution > 0;
    memcpy(s->pos, sp->pos, sizeof s->pos);
    s->qcap = sp->latency > 0 ? sp->latency / sp->divisor + 2 : 0;
    nq += (size_t)s->qcap;
    nqval += (size_t)s->qcap * (size_t)s->dim;
    if (reads_contacts(sp->type)) {
      hil->contact_readers++;
      hil->contact_each_tick |= sp->divisor == 1;
    }
    if (sp->type == KHZ_SENSOR_JOINT_FT) {
      hil->subtree_readers++;
      hil->subtree_each_tick |= sp->divisor == 1;
    }
  }
  hil->qtick_pool = calloc(nq + 1, sizeof *hil->qtick_pool);
  hil->qval_pool = calloc(nqval + 1, sizeof *hil->qval_pool);
  if (!hil->qtick_pool || !hil->qval_pool) goto oom;
  nq = nqval = 0;
  for (int i = 0; i < nsensor; i++) {
    hilSensor *s = &hil->sensor[i];
    s->qtick = hil->qtick_pool + nq;
    s->qval = hil->qval_pool + nqval;
    nq += (size_t)s->qcap;
    nqval += (size_t)s->qcap * (size_t)s->dim;
  }
  hil->out = calloc((size_t)hil->nvalue + 1, sizeof *hil->out);
  hil->nbody = m->nbody;
  hil->in_subtree = calloc((size_t)m->nbody, 1);
  hil->sub_body = calloc((size_t)m->nbody, sizeof *hil->sub_body);
  hil->sub_parent = calloc((size_t)m->nbody, sizeof *hil->sub_parent);
  hil->body_contact = calloc((size_t)m->nbody * 7, sizeof *hil->body_contact);
  hil->subtree = calloc((size_t)m->nbody * 12, sizeof *hil->subtree);
  hil->reads_contact = calloc((size_t)m->nbody, 1);
  hil->asleep_geom = calloc((size_t)m->npair_max * 2 + 1, sizeof *hil->asleep_geom);
  hil->asleep_contact = calloc((size_t)m->nbody * 7, sizeof *hil->asleep_contact);
  hil->contact_sum = hil->body_contact;
  if (!hil->out || !hil->in_subtree || !hil->sub_body || !hil->sub_parent || !hil->body_contact || !hil->subtree || !hil->reads_contact ||
      !hil->asleep_geom || !hil->asleep_contact)
    goto oom;
  /* an island wakes for at least one tick before it sleeps again unless its
   * idle time can be reached within one tick (island.c) */
  hil->cache_asleep = m->sleep.time > h;
  /* bodies come after their parents: one pass marks the subtrees */
  for (int i = 0; i < nsensor; i++)
    if (sensor[i].type == KHZ_SENSOR_JOINT_FT) hil->in_subtree[sensor[i].object] = 1;
  for (int b = 1; b < m->nbody; b++)
    if (hil->in_subtree[m->body_parent[b]]) hil->in_subtree[b] = 1;
  for (int b = 1; b < m->nbody; b++)
    if (hil->in_subtree[b]) {
      int pa = m->body_parent[b];
      hil->sub_body[hil->nsub] = b;
      hil->sub_parent[hil->nsub++] = pa > 0 && hil->in_subtree[pa] ? pa : -1;
    }
  for (int b = 0; b < m->nbody; b++) hil->reads_contact[b] = hil->in_subtree[b];
  for (int i = 0; i < nsensor; i++)
    if (sensor[i].type == KHZ_SENSOR_FORCE || sensor[i].type == KHZ_SENSOR_TOUCH)
      hil->reads_contact[sensor[i].object] = 1;
  set_period(hil);
  for (int i = 0; i < ndrive; i++) {
    hilDrive *dv = &hil->drive[i];
    dv->spec = drive[i];
    dv->spec.body = find_joint(m, drive[i].joint);
    if (dv->spec.gear == 0) dv->spec.gear = 1;
    dv->dof = m->jnt_dofadr[dv->spec.body];
    dv->qadr = m->jnt_qadr[dv->spec.body];
    dv->alpha = dv->spec.lag > 0 ? 1 - exp(-h / dv->spec.lag) : 1;
  }
  return hil;
oom:
  if (err && errsz) snprintf(err, errsz, "hil: out of memory");
  khz_hilFree(&hil);
  return NULL;
}

void khz_hilFree(khzHil **hil_p) {
  khzHil *hil = *hil_p;
  if (!hil) return;
  free(hil->qtick_pool);
  free(hil->qval_pool);
  free(hil->in_subtree);
  free(hil->sub_body);
  free(hil->sub_parent);
  free(hil->reads_contact);
  free(hil->asleep_geom);
  free(hil->asleep_contact);
  free(hil->body_contact);
  free(hil->subtree);
  free(hil->sensor);
  free(hil->spec);
  free(hil->order);
  free(hil->drive);
  free(hil->out);
  free(hil);
  *hil_p = NULL;
}

/* ------------------------------------------------------------ sensing -- */

/* Two doubles at a time (SSE2 on x86-64): each lane does the scalar
 * code's operations in its order, so every reading keeps its bits; the
 * sensors' 3- and 6-vectors take half the arithmetic instructions. */
typedef double v2d __attribute__((vector_size(16)));
static inline v2d ld2(const double *p) {
  v2d v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline void st2(double *p, v2d v) { memcpy(p, &v, sizeof v); }
static inline v2d dup2(double x) { return (v2d){x, x}; }

/* y = M x, M 3x3 row-major: ((M[3k] x0 + M[3k+1] x1) + M[3k+2] x2) for
 * rows 0 and 1 as one pair, (M0, M3), (M1, M4), (M2, M5) the columns */
static inline void mul3(const double *M, const double *x, double *y) {
  v2d a = ld2(M), b = ld2(M + 3), c = ld2(M + 1), e = ld2(M + 4);
  v2d y01 = __builtin_shufflevector(a, b, 0, 2) * dup2(x[0]) +
            __builtin_shufflevector(a, b, 1, 3) * dup2(x[1]) +
            __builtin_shufflevector(c, e, 1, 3) * dup2(x[2]);
  double y2 = M[6] * x[0] + M[7] * x[1] + M[8] * x[2];
  st2(y, y01);
  y[2] = y2;
}

/* y = o + M x in the order (((o + M[3k] x0) + M[3k+1] x1) + M[3k+2] x2) */
static inline void add_mul3(const double *o, const double *M, const double *x, double *y) {
  v2d a = ld2(M), b = ld2(M + 3), c = ld2(M + 1), e = ld2(M + 4);
  v2d y01 = ld2(o) + __builtin_shufflevector(a, b, 0, 2) * dup2(x[0]) +
            __builtin_shufflevector(a, b, 1, 3) * dup2(x[1]) +
            __builtin_shufflevector(c, e, 1, 3) * dup2(x[2]);
  double y2 = o[2] + M[6] * x[0] + M[7] * x[1] + M[8] * x[2];
  st2(y, y01);
  y[2] = y2;
}

/* y = M^T x: ((M[k] x0 + M[3+k] x1) + M[6+k] x2), rows 0..1 of M a pair */
static inline void mul3t(const double *M, const double *x, double *y) {
  v2d y01 = ld2(M) * dup2(x[0]) + ld2(M + 3) * dup2(x[1]) + ld2(M + 6) * dup2(x[2]);
  double y2 = M[2] * x[0] + M[5] * x[1] + M[8] * x[2];
  st2(y, y01);
  y[2] = y2;
}

/* world velocity of body b's point p (body frame) */
static void point_velocity(const khzData *d, int b, const double *p, double *v) {
  const double *R = d->xrot + 9 * b, *w = d->cvel + 6 * b, *v0 = d->cvel + 6 * b + 3;
  double r[3];
  mul3(R, p, r);
  v[0] = v0[0] + w[1] * r[2] - w[2] * r[1];
  v[1] = v0[1] + w[2] * r[0] - w[0] * r[2];
  v[2] = v0[2] + w[0] * r[1] - w[1] * r[0];
}

/* world vector into body b's axes */
static inline void to_body(const khzData *d, int b, const double *x, double *y) {
  mul3t(d->xrot + 9 * b, x, y);
}

static void cross3(double *y, const double *a, const double *b) {
  y[0] = a[1] * b[2] - a[2] * b[1];
  y[1] = a[2] * b[0] - a[0] * b[2];
  y[2] = a[0] * b[1] - a[1] * b[0];
}

/* pairs [c0, c1) of d->contact added into w (nbody * 7) */
static void add_contacts(const khzHil *hil, const khzData *d, int c0, int c1, double *w) {
  for (int c = c0; c < c1; c++) {
    const khzContact *ct = &d->contact[c];
    int r0 = hil->reads_contact[ct->body[0]], r1 = hil->reads_contact[ct->body[1]];
    if (!r0 && !r1) continue;
    double *w0 = w + 7 * ct->body[0], *w1 = w + 7 * ct->body[1];
    double F[3] = {0, 0, 0}, T[3] = {0, 0, 0};
    const khzContactPoint *p = &d->cpoint[ct->point_adr], *end = p + ct->npoint;
    for (; p < end; p++) {
      const double *f = p->force, *x = p->pos;
      F[0] += f[0], F[1] += f[1], F[2] += f[2];
      T[0] += x[1] * f[2] - x[2] * f[1];
      T[1] += x[2] * f[0] - x[0] * f[2];
      T[2] += x[0] * f[1] - x[1] * f[0];
    }
    /* the pair's normal is one for all its points: the sum of f.n is F.n */
    double fn = F[0] * ct->normal[0] + F[1] * ct->normal[1] + F[2] * ct->normal[2];
    if (r0)
      for (int a = 0; a < 3; a++) w0[a] += F[a], w0[3 + a] += T[a];
    if (r1)
      for (int a = 0; a < 3; a++) w1[a] -= F[a], w1[3 + a] -= T[a];
    w0[6] += fn, w1[6] += fn;
  }
}

/* every tick: the sleeping pairs' sum stays valid while the same pairs
 * sleep. A pair leaves the sleeping ones when its island wakes and comes
 * back, with new forces, no sooner than a tick later (cache_asleep), so a
 * check at every tick sees every change */
static void check_asleep(khzHil *hil, const khzData *d) {
  int n = d->ncontact_asleep;
  if (!hil->asleep_valid) return;
  if (n != hil->nasleep || !hil->cache_asleep) {
    hil->asleep_valid = 0;
    return;
  }
  for (int c = 0; c < n; c++)
    if (d->contact[c].geom[0] != hil->asleep_geom[2 * c] || d->contact[c].geom[1] != hil->asleep_geom[2 * c + 1]) {
      hil->asleep_valid = 0;
      return;
    }
}

/* every body's contact wrench, once per tick for all the sensors that read
 * it: force, torque about the world origin, and the sum of the normal
 * forces (each point's f.n counts for both its bodies). A point's force
 * holds the whole force of the last evaluation, the implicit part's normal
 * and tangential shares included (docs/contact.md, "Reported forces"):
 * nothing is added to it. The sleeping pairs come first in the list and
 * their sum is kept (check_asleep), so the result is the same sum in the
 * same order as a pass over every pair */
static void body_contacts(khzHil *hil, const khzData *d) {
  size_t bytes = (size_t)hil->nbody * 7 * sizeof(double);
  int n = d->ncontact_asleep > 0 && d->ncontact_asleep <= d->ncontact ? d->ncontact_asleep : 0;
  if (!hil->cache_asleep) n = 0;
  if (n && !hil->asleep_valid) {
    memset(hil->asleep_contact, 0, bytes);
    add_contacts(hil, d, 0, n, hil->asleep_contact);
    for (int c = 0; c < n; c++)
      hil->asleep_geom[2 * c] = d->contact[c].geom[0], hil->asleep_geom[2 * c + 1] = d->contact[c].geom[1];
    hil->nasleep = n;
    hil->asleep_valid = 1;
  }
  hil->contact_sum = hil->body_contact;
  if (n && n == d->ncontact) /* no pair awake: the sleeping ones' sum is the sum */
    hil->contact_sum = hil->asleep_contact;
  else if (n)
    memcpy(hil->body_contact, hil->asleep_contact, bytes);
  else
    memset(hil->body_contact, 0, bytes);
  if (n < d->ncontact) add_contacts(hil, d, n, d->ncontact, hil->body_contact);
}

/* for the bodies in a joint force-torque sensor's subtree: the subtree's
 * momentum p and angular momentum l about the world origin, and the wrench
 * from outside it (gravity, body wrenches, contacts; f, t about the
 * origin), as each body's own summed into its parent's from the leaves up
 * (bodies come after their parents). A contact between two bodies of a
 * subtree cancels in the sum. Needs body_contacts. */
static void subtree_sums(khzHil *hil, const khzModel *m, const khzData *d) {
  for (int j = 0; j < hil->nsub; j++) {
    int b = hil->sub_body[j];
    const double *R = d->xrot + 9 * b, *I = m->body_inertia + 9 * b, *c = d->xcom + 3 * b;
    const double *w = d->cvel + 6 * b, *o = d->xpos + 3 * b, *xf = d->xfrc + 6 * b;
    const double *cw = hil->contact_sum + 7 * b;
    double *p = hil->subtree + 12 * b, *l = p + 3, *f = p + 6, *t = p + 9;
    double mass = m->body_mass[b], r[3], vc[3], wb[3], Iw[3], hw[3], x[3], fb[3];
    /* the com's velocity, and R I R^T w (the spin about the com) */
    /* (pairs of lanes: the same operations as the scalar loops over k) */
    v2d m2 = dup2(mass);
    st2(r, ld2(c) - ld2(o)), r[2] = c[2] - o[2];
    cross3(vc, w, r);
    st2(vc, ld2(vc) + ld2(w + 3)), vc[2] += w[5];
    mul3t(R, w, wb);
    mul3(I, wb, Iw);
    mul3(R, Iw, hw);
    cross3(x, c, vc);
    st2(p, m2 * ld2(vc)), p[2] = mass * vc[2];
    st2(l, ld2(hw) + m2 * ld2(x)), l[2] = hw[2] + mass * x[2];
    /* gravity and the body wrench (force, torque) at the com, and the contacts */
    st2(fb, m2 * ld2(m->gravity) + ld2(xf)), fb[2] = mass * m->gravity[2] + xf[2];
    cross3(x, c, fb);
    st2(f, ld2(fb) + ld2(cw)), f[2] = fb[2] + cw[2];
    st2(t, ld2(x) + ld2(xf + 3) + ld2(cw + 3)), t[2] = x[2] + xf[5] + cw[5];
  }
  for (int j = hil->nsub - 1; j >= 0; j--) {
    int b = hil->sub_body[j], pa = hil->sub_parent[j];
    if (pa < 0) continue;
    double *sb = hil->subtree + 12 * b, *sp = hil->subtree + 12 * pa;
    for (int k = 0; k < 12; k += 2) st2(sp + k, ld2(sp + k) + ld2(sb + k));
  }
}

/* dim (1, 2, 3 or 6) values from x to y, each size a fixed copy */
static inline void copy_values(double *y, const double *x, int dim) {
  switch (dim) {
    case 6: y[3] = x[3], y[4] = x[4], y[5] = x[5]; /* fall through */
    case 3: y[2] = x[2]; /* fall through */
    case 2: y[1] = x[1]; /* fall through */
    default: y[0] = x[0];
  }
}

/* The exact readings (before noise) of the differencing and force
 * sensors, into x; a differencing sensor differences with s->prev (with
 * the state itself at its first sample) and keeps there the state the
 * next sample needs. */

/* accelerometer: specific force, the point's acceleration over the sample
 * period minus gravity */
static inline void exact_accel(hilSensor *s, const khzModel *m, const khzData *d, double *x) {
  double v[3], a[3];
  int b = s->object;
  point_velocity(d, b, s->pos, v);
  const double *pv = s->have_prev ? s->prev : v;
  for (int k = 0; k < 3; k++) a[k] = (v[k] - pv[k]) * s->rate - m->gravity[k];
  memcpy(s->prev, v, sizeof v);
  to_body(d, b, a, x);
}

/* force-torque: the body's contact wrench, its torque moved from the
 * origin to the point */
static inline void exact_force(const khzHil *hil, const hilSensor *s, const khzData *d, double *x) {
  int b = s->object;
  const double *R = d->xrot + 9 * b, *o = d->xpos + 3 * b, *p = s->pos;
  const double *cw = hil->contact_sum + 7 * b;
  double pw[3], t[3];
  add_mul3(o, R, p, pw);
  cross3(t, pw, cw);
  st2(t, ld2(cw + 3) - ld2(t)), t[2] = cw[5] - t[2];
  to_body(d, b, cw, x);
  to_body(d, b, t, x + 3);
}

/* joint force-torque: Newton-Euler on the child's subtree. What the joint
 * transmits is the rate of change of the subtree's momentum minus what
 * acts on it from outside (gravity, body wrenches, contacts). Over the
 * sample period: the momentum's difference quotient less the outside
 * wrench's trapezoidal mean, so the reading is the mean over the period
 * (second order, no lag of half a period between the two terms). Torques
 * about the world origin, then about the sensor point. */
static inline void exact_joint_ft(const khzHil *hil, hilSensor *s, const khzData *d, double *x) {
  int b = s->object;
  const double *R = d->xrot + 9 * b, *o = d->xpos + 3 * b, *ps = s->pos;
  /* p, l, ext[6] (the subtree's sums) and pw: kept for the next sample */
  const double *p = hil->subtree + 12 * b, *l = p + 3, *ext = p + 6;
  double pw[3], F[3], T[3], pm[3], pxF[3];
  add_mul3(o, R, ps, pw);
  /* the first sample: as if the momentum held still */
  const double *pp = p, *pl = l, *pe = ext, *ppw = pw;
  if (s->have_prev) pp = s->prev, pl = s->prev + 3, pe = s->prev + 6, ppw = s->prev + 12;
  double rate = s->rate;
  v2d rate2 = dup2(rate), half = dup2(0.5);
  st2(F, (ld2(p) - ld2(pp)) * rate2 - half * (ld2(ext) + ld2(pe)));
  F[2] = (p[2] - pp[2]) * rate - 0.5 * (ext[2] + pe[2]);
  st2(T, (ld2(l) - ld2(pl)) * rate2 - half * (ld2(ext + 3) + ld2(pe + 3)));
  T[2] = (l[2] - pl[2]) * rate - 0.5 * (ext[5] + pe[5]);
  st2(pm, half * (ld2(pw) + ld2(ppw))), pm[2] = 0.5 * (pw[2] + ppw[2]);
  cross3(pxF, pm, F);
  st2(T, ld2(T) - ld2(pxF)), T[2] -= pxF[2]; /* about the point: T_o - p x F */
  memcpy(s->prev, p, 12 * sizeof(double));
  memcpy(s->prev + 12, pw, sizeof pw);
  to_body(d, b, F, x);
  to_body(d, b, T, x + 3);
}

/* floor(v), inline: below 2^52 in size the truncation is exact and one
 * less when it rounded a negative up; larger values, infinities and NaN
 * are their own floor. Equal to floor(v) except for v = -0 (+0 here),
 * which x / res + 0.5 never is (a sum is -0 only when both terms are) */
static inline double floor_exact(double v) {
  if (!(fabs(v) < 0x1p52)) return v;
  double t = (double)(int64_t)v;
  return t > v ? t - 1 : t;
}

/* the noise on the n noisy values of a sample: out = quantise(x + bias +
 * white N(0,1)), then the bias's random-walk step walk N(0,1) (none at the
 * first sample, the reset's); the deviates of a sample are drawn together,
 * the white ones first. Inlined with n a constant per sensor type, and in
 * the ticks' sampling white_on (s->has_white) and walk_on (s->has_walk)
 * constants per group of sensors (khz_hilSample) */
static inline __attribute__((always_inline)) void add_noise(hilSensor *s, double *x, int n,
                                                            int first, int white_on,
                                                            int walk_on) {
  double z[2 * KHZ_SENSOR_MAXDIM];
  int nwhite = white_on ? n : 0, nwalk = walk_on && !first ? n : 0;
  if (nwhite + nwalk) khz_rngNormals(&s->rng, z, nwhite + nwalk);
  const double *bias = s->bias;
  int k2 = n & ~1; /* lanes in pairs, then the odd one */
  if (nwhite) {
    double white = s->white;
    v2d w2 = dup2(white);
    for (int k = 0; k < k2; k += 2) st2(x + k, ld2(x + k) + ld2(bias + k) + w2 * ld2(z + k));
    if (n & 1) x[n - 1] = x[n - 1] + bias[n - 1] + white * z[n - 1];
  } else {
    for (int k = 0; k < k2; k += 2) st2(x + k, ld2(x + k) + ld2(bias + k));
    if (n & 1) x[n - 1] += bias[n - 1];
  }
  if (s->has_resolution) {
    double res = s->resolution;
    for (int k = 0; k < n; k++) x[k] = res * floor_exact(x[k] / res + 0.5);
  }
  if (nwalk) {
    double walk = s->walk, *zw = z + nwhite;
    v2d walk2 = dup2(walk);
    for (int k = 0; k < k2; k += 2) st2(s->bias + k, ld2(s->bias + k) + walk2 * ld2(zw + k));
    if (n & 1) s->bias[n - 1] += walk * zw[n - 1];
  }
}

/* x[0..n) and y[0..n) the same bits (n = 3 or 6: pairs of 64-bit words,
 * two lanes at a time, the differences or-ed together). Stricter than ==
 * (-0 and +0 differ, a NaN equals itself): equal inputs give the same
 * reading, bit for bit, so a reading kept under it is the one computing
 * again would give */
typedef long long v2i __attribute__((vector_size(16)));
static inline int same_bits(const double *x, const double *y, int n) {
  v2i acc = {0, 0};
  int k = 0;
  for (; k + 1 < n; k += 2) {
    v2i a, b;
    memcpy(&a, x + k, sizeof a);
    memcpy(&b, y + k, sizeof b);
    acc |= a ^ b;
  }
  uint64_t diff = (uint64_t)(acc[0] | acc[1]);
  if (k < n) {
    uint64_t a, b;
    memcpy(&a, x + k, sizeof a);
    memcpy(&b, y + k, sizeof b);
    diff |= a ^ b;
  }
  return diff == 0;
}

/* force-torque on a body that slept at the last tick and sleeps now: frozen
 * with its contacts, so its exact reading is the last one when its
 * position and contact wrench are those it came from (islands cannot wake
 * and sleep again within a tick: cache_asleep). The same bits as
 * computing it again; otherwise computed, and kept while the body sleeps */
static inline void exact_force_kept(const khzHil *hil, hilSensor *s, const khzData *d,
                                    uint64_t tick, double *x) {
  int b = s->object;
  const double *o = d->xpos + 3 * b, *cw = hil->contact_sum + 7 * b, *in = s->kept_in;
  if (!d->body_sleep[b] || !hil->cache_asleep) {
    s->kept_tick = 0;
    exact_force(hil, s, d, x);
    return;
  }
  if (s->kept_tick && s->kept_tick + 1 == tick && same_bits(o, in, 3) && same_bits(cw, in + 3, 6)) {
    copy_values(x, s->kept, 6);
  } else {
    exact_force(hil, s, d, x);
    memcpy(s->kept_in, o, 3 * sizeof(double));
    memcpy(s->kept_in + 3, cw, 6 * sizeof(double));
    copy_values(s->kept, x, 6);
  }
  s->kept_tick = tick;
}

/* one sample of sensor s into x[dim]: the exact reading, then its noise
 * (inlined: in khz_hilSample's loop a sensor costs no call) */
static inline __attribute__((always_inline)) void take_sample(const khzHil *hil, hilSensor *s,
                                                              const khzModel *m, const khzData *d,
                                                              int type, int first, uint64_t tick,
                                                              int white_on, int walk_on,
                                                              double *x) {
  int b = s->object;
  if (first) s->have_prev = 0;
  switch (type) {
    case KHZ_SENSOR_ENCODER:
      x[0] = d->q[m->jnt_qadr[b]];
      add_noise(s, x, 1, first, white_on, walk_on);
      /* the drive's velocity: two readings over the sample period */
      x[1] = first ? 0 : (x[0] - s->prev[0]) * s->rate;
      s->prev[0] = x[0];
      break;
    case KHZ_SENSOR_GYRO:
      to_body(d, b, d->cvel + 6 * b, x);
      add_noise(s, x, 3, first, white_on, walk_on);
      break;
    case KHZ_SENSOR_ACCEL:
      exact_accel(s, m, d, x);
      add_noise(s, x, 3, first, white_on, walk_on);
      break;
    case KHZ_SENSOR_FORCE:
      if (first) s->kept_tick = 0;
      exact_force_kept(hil, s, d, tick, x);
      add_noise(s, x, 6, first, white_on, walk_on);
      break;
    case KHZ_SENSOR_TOUCH:
      x[0] = hil->contact_sum[7 * b + 6];
      add_noise(s, x, 1, first, white_on, walk_on);
      break;
    case KHZ_SENSOR_JOINT_FT:
      exact_joint_ft(hil, s, d, x);
      add_noise(s, x, 6, first, white_on, walk_on);
      break;
  }
  s->have_prev = 1;
}

/* the published reading: the held one, as the sensor's fault shows it */
static void show(khzHil *hil, const hilSensor *s) {
  double *out = hil->out + s->adr;
  for (int k = 0; k < s->dim; k++)
    out[k] = s->fault == KHZ_FAULT_DROPOUT ? NAN
             : s->fault == KHZ_FAULT_BIAS  ? s->held[k] + s->fault_value
                                           : s->held[k];
}

/* a reading taken at tick goes out: without a fault straight into the
 * published values (written once), under one into the held reading, which
 * a frozen sensor keeps */
static void release(khzHil *hil, hilSensor *s, const double *x, uint64_t tick) {
  if (s->fault == KHZ_FAULT_NONE) {
    copy_values(hil->out + s->adr, x, s->dim);
    s->sampled_at = tick;
    return;
  }
  if (s->fault != KHZ_FAULT_FREEZE) {
    for (int k = 0; k < s->dim; k++) s->held[k] = x[k];
    s->sampled_at = tick;
  }
  show(hil, s);
}

/* The delay queue: a ring of qcap slots from qhead (the oldest sample)
 * to qtail (the slot after the newest), empty when they meet. It is never
 * full: the samples in flight after one is queued at tick t were taken in
 * (t - latency, t], at most latency / divisor + 1 of them, one fewer than
 * qcap. */

/* a new slot at the queue's end for a sample of dim values taken at tick,
 * which the sample is written into */
static inline __attribute__((always_inline)) double *enqueue(hilSensor *s, uint64_t tick,
                                                             int dim) {
  int slot = s->qtail;
  s->qtail = slot + 1 == s->qcap ? 0 : slot + 1;
  s->qtick[slot] = tick;
  return s->qval + (size_t)slot * (size_t)dim;
}

/* the queued samples whose latency has passed leave the queue; the newest
 * of them is released (without a fault: copied into the published
 * values here, no call). Releasing the older ones first would leave the
 * same published and held readings: each release replaces the last (a
 * frozen sensor keeps its held reading through all of them) */
static inline __attribute__((always_inline)) void release_due(khzHil *hil, hilSensor *s,
                                                              uint64_t tick, int dim) {
  int head = s->qhead, tail = s->qtail, newest = head;
  uint64_t latency = (uint64_t)s->latency;
  if (head == tail) return;
  uint64_t due_at = s->qtick[head] + latency;
  if (due_at > tick) return;
  head = head + 1 == s->qcap ? 0 : head + 1;
  /* the queue's ticks increase: when the oldest is due just now (ticks
   * called one after another), the next is not yet; after skipped ticks
   * more may be, and the newest of them goes out */
  if (due_at < tick)
    while (head != tail && s->qtick[head] + latency <= tick) {
      newest = head;
      head = head + 1 == s->qcap ? 0 : head + 1;
    }
  s->qhead = head;
  const double *x = s->qval + (size_t)newest * (size_t)dim;
  uint64_t taken = s->qtick[newest];
  if (s->fault == KHZ_FAULT_NONE) {
    copy_values(hil->out + s->adr, x, dim);
    s->sampled_at = taken;
  } else {
    release(hil, s, x, taken);
  }
}

static int due(const hilSensor *s, uint64_t tick) {
  return s->divisor == 1 || tick % (uint64_t)s->divisor == 0;
}

/* what the sensors sampled at this tick share: the bodies' contact wrenches
 * and the subtrees' sums, each computed once (all: at the reset, every sensor) */
static void shared_sums(khzHil *hil, const khzModel *m, const khzData *d, uint64_t tick, int all) {
  int contacts = hil->contact_readers && (all || hil->contact_each_tick);
  int subtrees = hil->subtree_readers && (all || hil->subtree_each_tick);
  if ((hil->contact_readers && !contacts) || (hil->subtree_readers && !subtrees))
    for (int i = 0; i < hil->nsensor; i++) {
      const hilSensor *s = &hil->sensor[i];
      if (!due(s, tick)) continue;
      contacts |= reads_contacts(s->type);
      subtrees |= s->type == KHZ_SENSOR_JOINT_FT;
    }
  if (contacts) body_contacts(hil, d);
  if (subtrees) subtree_sums(hil, m, d);
}

/* one sensor of a type and size known at compile time: due, it samples
 * straight where its reading waits (its delay queue's new slot, or, no
 * latency and no fault, the published values); then its queue releases
 * what is due */
static inline __attribute__((always_inline)) void sense(khzHil *hil, hilSensor *s,
                                                        const khzModel *m, const khzData *d,
                                                        uint64_t tick, int type, int dim,
                                                        int white_on, int walk_on) {
  if (due(s, tick)) {
    double held[KHZ_SENSOR_MAXDIM];
    double *x = s->latency ? enqueue(s, tick, dim) : s->fault ? held : hil->out + s->adr;
    take_sample(hil, s, m, d, type, 0, tick, white_on, walk_on, x);
    if (!s->latency) {
      if (s->fault)
        release(hil, s, x, tick);
      else
        s->sampled_at = tick;
      return;
    }
  }
  if (s->latency) release_due(hil, s, tick, dim);
}

/* the sensors of one group (group_sensors): a loop with the type, the
 * size and the noise's flags constants, so that take_sample's switch, the
 * batch's size and the noise's branches fold */
static inline __attribute__((always_inline)) void sense_group(khzHil *hil, const khzModel *m,
                                                              const khzData *d, uint64_t tick,
                                                              const int *idx, int n, int type,
                                                              int dim, int white_on,
                                                              int walk_on) {
  for (int j = 0; j < n; j++)
    sense(hil, &hil->sensor[idx[j]], m, d, tick, type, dim, white_on, walk_on);
}

void khz_hilSample(khzHil *hil, const khzModel *m, const khzData *d, uint64_t tick) {
  if (hil->contact_readers) check_asleep(hil, d);
  shared_sums(hil, m, d, tick, 0);
  /* group by group: a sensor's reading depends on its own generator and
   * history only, so the order the sensors are sampled in changes nothing */
  for (int g = 0; g < hil->ngroup; g++) {
    const int *idx = hil->order + hil->group[g].begin;
    int n = hil->group[g].end - hil->group[g].begin;
#define HIL_GROUP_CASES(type, dim)                                          \
  case GROUP_KEY(type, 0, 0): sense_group(hil, m, d, tick, idx, n, type, dim, 0, 0); break; \
  case GROUP_KEY(type, 0, 1): sense_group(hil, m, d, tick, idx, n, type, dim, 0, 1); break; \
  case GROUP_KEY(type, 1, 0): sense_group(hil, m, d, tick, idx, n, type, dim, 1, 0); break; \
  case GROUP_KEY(type, 1, 1): sense_group(hil, m, d, tick, idx, n, type, dim, 1, 1); break;
    switch (hil->group[g].key) {
      HIL_GROUP_CASES(KHZ_SENSOR_ENCODER, 2)
      HIL_GROUP_CASES(KHZ_SENSOR_GYRO, 3)
      HIL_GROUP_CASES(KHZ_SENSOR_ACCEL, 3)
      HIL_GROUP_CASES(KHZ_SENSOR_FORCE, 6)
      HIL_GROUP_CASES(KHZ_SENSOR_TOUCH, 1)
      HIL_GROUP_CASES(KHZ_SENSOR_JOINT_FT, 6)
    }
#undef HIL_GROUP_CASES
  }
}

/* how many sensors and drives have a fault, and when the first timed one ends */
static void count_faults(khzHil *hil) {
  int n = 0;
  double next = INFINITY;
  for (int i = 0; i < hil->nsensor; i++) {
    const hilSensor *s = &hil->sensor[i];
    if (s->fault) n++;
    if (s->fault && s->fault_until > 0) next = fmin(next, s->fault_until);
  }
  for (int i = 0; i < hil->ndrive; i++) {
    const hilDrive *dv = &hil->drive[i];
    if (dv->fault) n++;
    if (dv->fault && dv->fault_until > 0) next = fmin(next, dv->fault_until);
  }
  hil->nfault = n;
  hil->next_until = next;
}

void khz_hilReset(khzHil *hil, const khzModel *m, const khzData *d) {
  hil->asleep_valid = 0; /* a new state: its sleeping pairs are summed again */
  shared_sums(hil, m, d, 0, 1);
  for (int i = 0; i < hil->nsensor; i++) {
    hilSensor *s = &hil->sensor[i];
    double x[KHZ_SENSOR_MAXDIM];
    khz_rngSeed(&s->rng, hil->seed, (uint64_t)i + 1);
    s->fault = KHZ_FAULT_NONE;
    s->fault_until = 0;
    for (int k = 0; k < KHZ_SENSOR_MAXDIM; k++) s->bias[k] = hil->spec[i].noise.bias;
    s->qhead = s->qtail = 0;
    /* the reading at the reset is out at once: a controller starts from a value */
    take_sample(hil, s, m, d, s->type, 1, 0, s->has_white, s->has_walk, x);
    release(hil, s, x, 0);
  }
  for (int i = 0; i < hil->ndrive; i++) {
    hilDrive *dv = &hil->drive[i];
    dv->tau_m = dv->tau_out = 0;
    dv->torque_once = 0;
    dv->fault = KHZ_FAULT_NONE;
    dv->fault_until = 0;
    dv->lock_q = d->q[dv->qadr];
  }
  count_faults(hil);
}

/* ------------------------------------------------------------- drives -- */

static double clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

void khz_hilDrive(khzHil *hil, const khzModel *m, khzData *d) {
  double h = hil->h;
  for (int i = 0; i < hil->ndrive; i++) {
    hilDrive *dv = &hil->drive[i];
    const khzDriveSpec *sp = &dv->spec;
    double cmd = d->tau[dv->dof], q = d->q[dv->qadr], qd = d->qd[dv->dof];
    double meff = m->dof_meff[dv->dof] > 0 ? m->dof_meff[dv->dof] : 1;
    if (dv->fault == KHZ_FAULT_LOCK) {
      dv->torque_once = 0;
      if (dv->lock_pending) dv->lock_q = q, dv->lock_pending = 0;
      /* a brake: a stiff spring-damper to where the joint locked, at a
       * frequency the integrators hold (w h = 0.25) */
      double w = 0.25 / h;
      d->tau[dv->dof] = dv->tau_out = -meff * w * w * (q - dv->lock_q) - 2 * meff * w * qd;
      continue;
    }
    int mode = dv->torque_once ? KHZ_DRIVE_TORQUE : sp->mode;
    dv->torque_once = 0;
    double tau_cmd = mode == KHZ_DRIVE_POSITION   ? sp->kp * (cmd - q) - sp->kd * qd
                     : mode == KHZ_DRIVE_VELOCITY ? sp->kd * (cmd - qd)
                                                  : cmd;
    if (!isfinite(tau_cmd)) tau_cmd = 0;
    /* the current loop's lag, then what the amplifier and the supply allow */
    double t = dv->tau_m + (tau_cmd - dv->tau_m) * dv->alpha;
    if (sp->max_torque > 0) t = clamp(t, -sp->max_torque, sp->max_torque);
    if (sp->stall_torque > 0) {
      /* DC motor at its voltage limit: tau in stall [-1 - w/w0, 1 - w/w0] */
      double r = sp->gear * qd / sp->no_load_speed;
      t = clamp(t, sp->stall_torque * (-1 - r), sp->stall_torque * (1 - r));
    }
    dv->tau_m = t;
    if (dv->fault == KHZ_FAULT_LIMP) t = 0;
    else if (dv->fault == KHZ_FAULT_TORQUE_LOSS) t *= dv->fault_value;
    /* gearbox friction; the Coulomb term regularised with the slope the
     * explicit integrators hold (as the joints' own friction, step.c) */
    if (sp->coulomb > 0) {
      double vs = fmax(2 * sp->coulomb * h / meff, KHZ_DRIVE_STICK_SPEED);
      t -= sp->coulomb * tanh(qd / vs);
    }
    t -= sp->viscous * qd;
    d->tau[dv->dof] = dv->tau_out = t;
  }
}

void khz_hilSetStep(khzHil *hil, double h) {
  if (!(h > 0) || !isfinite(h)) return;
  hil->h = h;
  for (int i = 0; i < hil->ndrive; i++) {
    hilDrive *dv = &hil->drive[i];
    dv->alpha = dv->spec.lag > 0 ? 1 - exp(-h / dv->spec.lag) : 1;
  }
  set_period(hil);
}

void khz_hilDriveTorqueOnce(khzHil *hil, int i) {
  if (i >= 0 && i < hil->ndrive) hil->drive[i].torque_once = 1;
}

int khz_networkCheck(const khzNetworkModel *n, char *err, size_t errsz) {
  const char *bad = NULL;
  if (n->state_delay < 0 || n->state_jitter < 0 ||
      n->state_delay + n->state_jitter > KHZ_NET_MAX_DELAY)
    bad = "state_delay_ticks + state_jitter_ticks must be within 0..100";
  else if (n->command_delay < 0 || n->command_jitter < 0 ||
           n->command_delay + n->command_jitter > KHZ_NET_MAX_DELAY)
    bad = "command_delay_ticks + command_jitter_ticks must be within 0..100";
  else if (!(n->state_loss >= 0 && n->state_loss < 1) || !(n->command_loss >= 0 && n->command_loss < 1))
    bad = "state_loss and command_loss must be within [0, 1)";
  if (bad) {
    if (err && errsz) snprintf(err, errsz, "network: %s", bad);
    return -1;
  }
  return n->state_delay || n->state_jitter || n->state_loss > 0 || n->command_delay ||
         n->command_jitter || n->command_loss > 0;
}

/* ------------------------------------------------------------- faults -- */

int khz_hilSensorFault(khzHil *hil, int i, int type, double value, double until) {
  if (i < 0 || i >= hil->nsensor || !isfinite(value) || !isfinite(until)) return -1;
  if (type != KHZ_FAULT_NONE && type != KHZ_FAULT_FREEZE && type != KHZ_FAULT_DROPOUT &&
      type != KHZ_FAULT_BIAS)
    return -1;
  hilSensor *s = &hil->sensor[i];
  /* a fault begins: the published reading becomes the held one it shows */
  if (s->fault == KHZ_FAULT_NONE) memcpy(s->held, hil->out + s->adr, (size_t)s->dim * sizeof(double));
  s->fault = type;
  s->fault_value = value;
  s->fault_until = type == KHZ_FAULT_NONE ? 0 : until;
  show(hil, s);
  count_faults(hil);
  return 0;
}

int khz_hilDriveFault(khzHil *hil, int i, int type, double value, double until) {
  if (i < 0 || i >= hil->ndrive || !isfinite(value) || !isfinite(until)) return -1;
  if (type != KHZ_FAULT_NONE && type != KHZ_FAULT_LIMP && type != KHZ_FAULT_TORQUE_LOSS &&
      type != KHZ_FAULT_LOCK)
    return -1;
  if (type == KHZ_FAULT_TORQUE_LOSS && !(value >= 0 && value <= 1)) return -1;
  hilDrive *dv = &hil->drive[i];
  dv->fault = type;
  dv->fault_value = value;
  dv->fault_until = type == KHZ_FAULT_NONE ? 0 : until;
  dv->lock_pending = type == KHZ_FAULT_LOCK;
  count_faults(hil);
  return 0;
}

/* every tick: nothing to do until the first timed fault's end */
void khz_hilExpire(khzHil *hil, double time) {
  if (!(time >= hil->next_until)) return;
  for (int i = 0; i < hil->nsensor; i++) {
    hilSensor *s = &hil->sensor[i];
    if (s->fault && s->fault_until > 0 && time >= s->fault_until) {
      s->fault = KHZ_FAULT_NONE;
      s->fault_until = 0;
      show(hil, s);
    }
  }
  for (int i = 0; i < hil->ndrive; i++) {
    hilDrive *dv = &hil->drive[i];
    if (dv->fault && dv->fault_until > 0 && time >= dv->fault_until) {
      dv->fault = KHZ_FAULT_NONE;
      dv->fault_until = 0;
    }
  }
  count_faults(hil);
}

int khz_hilAnyFault(const khzHil *hil) { return hil->nfault > 0; }

/* ---------------------------------------------------------- accessors -- */

int khz_hilNSensor(const khzHil *hil) { return hil->nsensor; }
int khz_hilNDrive(const khzHil *hil) { return hil->ndrive; }
int khz_hilNValue(const khzHil *hil) { return hil->nvalue; }
const double *khz_hilValues(const khzHil *hil) { return hil->out; }
int khz_hilValueAdr(const khzHil *hil, int i) { return hil->sensor[i].adr; }
int khz_hilValueDim(const khzHil *hil, int i) { return hil->sensor[i].dim; }
uint64_t khz_hilSampledAt(const khzHil *hil, int i) { return hil->sensor[i].sampled_at; }
const khzSensorSpec *khz_hilSensor(const khzHil *hil, int i) { return &hil->spec[i]; }
const khzDriveSpec *khz_hilDriveSpec(const khzHil *hil, int i) { return &hil->drive[i].spec; }
int khz_hilSensorFaultType(const khzHil *hil, int i) { return hil->sensor[i].fault; }
int khz_hilDriveFaultType(const khzHil *hil, int i) { return hil->drive[i].fault; }
double khz_hilDriveTorque(const khzHil *hil, int i) { return hil->drive[i].tau_out; }
