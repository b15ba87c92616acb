/* tick.h — what the loop computes inside a tick besides khz_step(): the
 * actuator torques (command, in-tick PD controller or the safe command), the
 * haptic virtual couplings and the perturbation wrenches. Pure functions of
 * the model, the state and their arguments; nothing here allocates.
 */
#ifndef KHZ_LOOP_TICK_H
#define KHZ_LOOP_TICK_H

#include "khz/khz.h"
#include "khz/loop.h"

/* A perturbation wrench active until sim time `until`. */
typedef struct khzWrench {
  int body;
  double wrench[6]; /* force, torque; world frame, at the com */
  double until;     /* s of simulated time */
  int fault;        /* a push of the scene's fault schedule: FLAG_FAULT while it acts */
} khzWrench;

/* Writes d->tau from a command: zero on every dof, then on each actuator
 * (dof[i], i < na) the torque of the command kind. kp / kd are the loop's
 * default gains for PD commands without gains; act (nu entries) the model's
 * own actuators that KHZ_CMD_ACTUATORS commands drive. */
void khz_tick_command(const khzModel *m, khzData *d, int na, const int *dof,
                      const khzCommand *c, const double *kp, const double *kd, int nu,
                      const khzLoopActuator *act);

/* Writes d->tau with the safe command (zero, or -damping * qd on the actuators). */
void khz_tick_safe(const khzModel *m, khzData *d, int na, const int *dof, int safe,
                   double damping);

/* The coupling wrench between proxy p's body and the device input: returns in
 * body_wrench[6] the wrench on the body (world, at its com); the device renders
 * the opposite. Uses the kinematics in d (valid after a step or a reset). */
void khz_tick_coupling(const khzModel *m, const khzData *d, const khzHapticProxy *p,
                       const khzHapticInput *in, double body_wrench[6]);

/* 1 when the coupling gains satisfy the passivity bound at period T:
 * damping > stiffness T / 2 for both pairs (or zero stiffness, damping >= 0). */
int khz_tick_passive(const khzHapticProxy *p, double T);

#endif /* KHZ_LOOP_TICK_H */
