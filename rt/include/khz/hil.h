/* khz/hil.h — hardware-in-the-loop realism: what real sensors, drives and
 * links do to the exact state (issue 25).
 *
 * Sensors read the exact state after a step and hand out what hardware would:
 * quantised encoders with their drive's finite-difference velocity, IMUs with
 * white noise, bias and bias random walk, force-torque and touch sensors from
 * the contact forces, each at its own rate (a divisor of the tick) and with
 * its own latency. Drives turn a command into the torque a motor and gearbox
 * deliver: the drive's own PD (position / velocity modes), a first-order
 * torque lag, saturation, the torque-speed line of the voltage limit, and
 * gearbox friction. Every random number comes from one seeded generator per
 * sensor, so that a lockstep run is bit-identical for a given seed whatever
 * else the scene holds.
 *
 * Memory is taken at khz_hilCreate; sampling and driving never allocate.
 */
#ifndef KHZ_HIL_H
#define KHZ_HIL_H

#include <stddef.h>
#include <stdint.h>

#include "khz/khz.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ rng -- */

/* xoroshiro128++ (Blackman and Vigna), seeded through splitmix64 from a seed
 * and a stream number: streams of one seed are independent sequences. */
typedef struct khzRng {
  uint64_t s[2];
} khzRng;

void khz_rngSeed(khzRng *r, uint64_t seed, uint64_t stream);
uint64_t khz_rngNext(khzRng *r);
double khz_rngUniform(khzRng *r); /* [0, 1), 53 bits */
/* N(0, 1) by the ziggurat method; khz_rngInit (idempotent, thread-safe;
 * khz_rngSeed and khz_hilCreate call it) builds its tables first */
void khz_rngInit(void);
double khz_rngNormal(khzRng *r);

/* -------------------------------------------------------------- sensors -- */

typedef enum khzSensorType {
  KHZ_SENSOR_ENCODER = 0, /* joint: [position, velocity]; velocity = the difference of two
                             quantised readings over the sample period, as a drive computes it */
  KHZ_SENSOR_GYRO,        /* body: angular velocity, body axes, rad/s */
  KHZ_SENSOR_ACCEL,       /* body: specific force at pos (acceleration minus gravity), body
                             axes, m/s^2; the acceleration is the change of the point's velocity
                             over the sample period */
  KHZ_SENSOR_FORCE,       /* body: [force; torque about pos] of the contacts on the body, body
                             axes (what a force-torque sensor between the body and its contacts
                             reads) */
  KHZ_SENSOR_TOUCH,       /* body: sum of the contacts' normal forces on the body, N */
  KHZ_SENSOR_JOINT_FT,    /* joint: [force; torque about pos] the parent exerts on the joint's
                             child through the joint (constraint and actuator), child body axes,
                             as a force-torque sensor between the joint and the link reads (and
                             as MuJoCo's force / torque sensors on a site of the child) */
  KHZ_NSENSORTYPE
} khzSensorType;

/* one sensor's imperfections, applied to each of its values:
 * out = quantise(x + bias + white * N(0,1)), the bias walking by
 * bias_walk * sqrt(period) * N(0,1) every sample (units / sqrt(s)) */
typedef struct khzNoiseSpec {
  double white;      /* standard deviation of the white noise of one sample */
  double bias;       /* bias at start (and after a reset) */
  double bias_walk;  /* bias random walk, units / sqrt(s); 0 = constant bias */
  double resolution; /* quantisation step (encoder: 2 pi / counts per revolution); 0 = none */
} khzNoiseSpec;

typedef struct khzSensorSpec {
  char name[KHZ_NAME_MAX];
  int type;        /* khzSensorType */
  int object;      /* encoder, joint_force_torque: the joint's body index (its joint);
                      others: the body */
  double pos[3];   /* body sensors: where on the body (body frame; IMU and force-torque) */
  int divisor;     /* sampled every divisor ticks (>= 1); held between samples */
  int latency;     /* ticks from sampling to output (0..KHZ_HIL_MAX_LATENCY) */
  khzNoiseSpec noise;
} khzSensorSpec;

#define KHZ_HIL_MAX_LATENCY 1000
#define KHZ_SENSOR_MAXDIM 6

/* values a sensor type gives (encoder 2 per joint dof: position, velocity) */
int khz_sensorDim(int type);
const char *khz_sensorTypeName(int type);
int khz_sensorTypeFind(const char *name); /* -1 if unknown */

/* --------------------------------------------------------------- drives -- */

typedef enum khzDriveMode {
  KHZ_DRIVE_TORQUE = 0, /* the command is a torque (at the joint) */
  KHZ_DRIVE_POSITION,   /* the command is a position: the drive's PD at the tick rate */
  KHZ_DRIVE_VELOCITY,   /* the command is a velocity: the drive's P on velocity (kd) */
} khzDriveMode;

/* a motor and gearbox on one joint dof. Every torque here is at the joint
 * (after the gear); zero fields are off. The delivered torque is
 *   tau_cmd  = the command (torque mode) or the drive's PD,
 *   tau_m   += (tau_cmd - tau_m) (1 - exp(-h / lag)),
 *   tau_m    = clamp to +-max_torque and to the voltage limit
 *              |tau| <= stall_torque (1 - gear |qd| / no_load_speed) when it drives the motion,
 *   tau      = tau_m - coulomb tanh(qd / v_eps) - viscous qd. */
typedef struct khzDriveSpec {
  char joint[KHZ_NAME_MAX];
  int body;             /* the joint's body index (filled by khz_hilCreate from joint) */
  int mode;             /* khzDriveMode */
  double kp, kd;        /* position / velocity modes: the drive's own gains */
  double max_torque;    /* saturation at the joint, N m (0 = none) */
  double stall_torque;  /* voltage limit: torque at zero speed at the joint (0 = none) */
  double no_load_speed; /* motor speed at zero torque, rad/s at the motor */
  double gear;          /* gear ratio (motor turns per joint turn), >= 1; reflected inertia is
                           the joint's armature */
  double lag;           /* first-order torque (current loop) time constant, s (0 = none) */
  double coulomb;       /* gearbox Coulomb friction at the joint, N m */
  double viscous;       /* gearbox viscous friction, N m s/rad */
} khzDriveSpec;

/* joint speeds below this count as sticking for the regularised Coulomb term */
#define KHZ_DRIVE_STICK_SPEED 1e-3

const char *khz_driveModeName(int mode);
int khz_driveModeFind(const char *name);

/* --------------------------------------------------------------- faults -- */

typedef enum khzFaultType {
  KHZ_FAULT_NONE = 0,
  KHZ_FAULT_FREEZE,     /* sensor: its output holds its last value */
  KHZ_FAULT_DROPOUT,    /* sensor: its output is NaN (no reading) */
  KHZ_FAULT_BIAS,       /* sensor: value added to every output */
  KHZ_FAULT_LIMP,       /* drive: no torque at all */
  KHZ_FAULT_TORQUE_LOSS,/* drive: its torque is scaled by value (0..1) */
  KHZ_FAULT_LOCK,       /* drive: the joint is held where it is (a stiff brake) */
  KHZ_FAULT_STALL,      /* the command channel: no command is taken (the loop's watchdog
                           or lockstep timeout applies the safe command) */
  KHZ_NFAULTTYPE
} khzFaultType;

/* What a scheduled fault event acts on. */
typedef enum khzFaultTarget {
  KHZ_FAULT_ON_SENSOR = 0,
  KHZ_FAULT_ON_DRIVE,
  KHZ_FAULT_ON_COMMANDS, /* type KHZ_FAULT_STALL (or NONE: the stall ends) */
  KHZ_FAULT_ON_BODY      /* a push: wrench on body index for duration */
} khzFaultTarget;

/* One entry of a scripted fault schedule (the scene's hil.faults), applied by
 * the loop when the simulated time since the last reset reaches 'at'. */
typedef struct khzFaultEvent {
  double at;         /* s since the reset */
  int target;        /* khzFaultTarget */
  int index;         /* sensor, drive or body index */
  int type;          /* khzFaultType (sensor, drive, commands) */
  double value;      /* bias; torque kept (0..1) */
  double duration;   /* s; 0 = until cleared or reset */
  double wrench[6];  /* push: force, torque (world, at the com) */
} khzFaultEvent;

const char *khz_faultTypeName(int type);
int khz_faultTypeFind(const char *name);

/* -------------------------------------------------------------- network -- */

/* The link between the server and its controllers, in ticks: each state is
 * shown state_delay + U{0..state_jitter} ticks after it was computed (in
 * order: a state is never shown before an older one) or, with probability
 * state_loss, never; each command takes effect command_delay +
 * U{0..command_jitter} ticks after the tick that took it (in order), or is
 * lost with probability command_loss. Draws come from the seeded generator
 * (lockstep runs stay bit-identical). All zero: no network model. */
#define KHZ_NET_MAX_DELAY 100
typedef struct khzNetworkModel {
  int state_delay, state_jitter;     /* ticks, delay + jitter <= KHZ_NET_MAX_DELAY */
  double state_loss;                 /* [0, 1) */
  int command_delay, command_jitter; /* ticks, delay + jitter <= KHZ_NET_MAX_DELAY */
  double command_loss;               /* [0, 1) */
  uint64_t seed;
} khzNetworkModel;

/* 1 when any part of the model is on; -1 (err set) when a value is out of range */
int khz_networkCheck(const khzNetworkModel *n, char *err, size_t errsz);

/* ------------------------------------------------------------ the unit -- */

typedef struct khzHil khzHil;

/* Checks the specs against the model and allocates everything (err names the
 * first bad entry: sensor or drive, field, value, limit). h: the tick's step. */
khzHil *khz_hilCreate(const khzModel *m, const khzSensorSpec *sensor, int nsensor,
                      const khzDriveSpec *drive, int ndrive, uint64_t seed, double h, char *err,
                      size_t errsz);
void khz_hilFree(khzHil **hil);

/* back to the start: generators reseeded, biases, histories and drive
 * states reset to the current state of d (after a reset of the data) */
void khz_hilReset(khzHil *hil, const khzModel *m, const khzData *d);

/* the drives: d->tau's entries of the driven dofs hold the commands
 * (torque, position or velocity, by mode) on entry and the delivered torques
 * on return. Call before khz_step. */
void khz_hilDrive(khzHil *hil, const khzModel *m, khzData *d);

/* the sensors after a step of tick number 'tick' (the first step is tick 1):
 * samples those due, and moves outputs whose latency has passed into the
 * published values */
void khz_hilSample(khzHil *hil, const khzModel *m, const khzData *d, uint64_t tick);

/* a new tick step (the loop's rate changed): sample periods and lags follow */
void khz_hilSetStep(khzHil *hil, double h);

/* for the next khz_hilDrive only: drive i takes d->tau as a torque whatever
 * its mode (the loop's safe command, a torque command to a position drive) */
void khz_hilDriveTorqueOnce(khzHil *hil, int i);

/* sets or clears (type NONE) a fault on sensor or drive i, until the
 * simulated time 'until' (0 = until cleared; khz_hilExpire ends it); -1 for
 * a type the target cannot take or a value out of range */
int khz_hilSensorFault(khzHil *hil, int i, int type, double value, double until);
int khz_hilDriveFault(khzHil *hil, int i, int type, double value, double until);
/* ends the faults whose time is up (call each tick with d->time) */
void khz_hilExpire(khzHil *hil, double time);
/* 1 when some sensor or drive has a fault */
int khz_hilAnyFault(const khzHil *hil);

/* the published readings: nvalue doubles, sensor i's at value_adr(i) (its
 * dim values); the tick each sensor's current output was sampled at */
int khz_hilNSensor(const khzHil *hil);
int khz_hilNDrive(const khzHil *hil);
int khz_hilNValue(const khzHil *hil);
const double *khz_hilValues(const khzHil *hil);
int khz_hilValueAdr(const khzHil *hil, int i);
int khz_hilValueDim(const khzHil *hil, int i);
uint64_t khz_hilSampledAt(const khzHil *hil, int i);
const khzSensorSpec *khz_hilSensor(const khzHil *hil, int i);
const khzDriveSpec *khz_hilDriveSpec(const khzHil *hil, int i);
int khz_hilSensorFaultType(const khzHil *hil, int i);
int khz_hilDriveFaultType(const khzHil *hil, int i);
/* the torque drive i delivered at the last khz_hilDrive (N m at the joint) */
double khz_hilDriveTorque(const khzHil *hil, int i);

#ifdef __cplusplus
}
#endif
#endif
