/* capi.h — libkhz.so's entry points for foreign-function callers (Python's
 * ctypes in clients/python/khz/sim.py): one handle that owns a loaded scene,
 * its model and one data, spec edits for parameter studies, stepping with
 * running figures, and the layout of the structs a binding reads
 * (lib/khz_capi.c). C programs may use them too; the rest of libkhz.so is
 * khz/khz.h, khz/load.h and khz/loop.h. */
#ifndef KHZ_CAPI_H
#define KHZ_CAPI_H

#include <stddef.h>

#include "khz/khz.h"

#ifdef __cplusplus
extern "C" {
#endif

/* bumped whenever a function here changes */
#define KHZ_CAPI_VERSION 2
int khz_capi_version(void);

typedef struct khzCapi khzCapi;

/* Loads MODEL as khz_loadModel does (.urdf, .xml MJCF, .yaml scene or
 * "default"), compiles it and makes one data (kinematics computed). NULL with
 * err set on failure. */
khzCapi *khz_capi_open(const char *path, char *err, size_t errsz);
void khz_capi_close(khzCapi *h);
khzModel *khz_capi_model(khzCapi *h);
khzData *khz_capi_data(khzCapi *h);
/* the scene's loop rate (1 / timestep for MJCF and URDF) */
double khz_capi_rateHz(const khzCapi *h);

/* Spec edits, applied by the next khz_capi_recompile (which makes a new model
 * and data: pointers into the old ones become invalid). scaleMass multiplies
 * the mass and inertia of the body named `body` (NULL or "": every body);
 * returns the bodies changed or -1 with err. setFriction sets every geom's
 * Coulomb coefficient and the scene default; returns the geoms or -1. */
int khz_capi_scaleMass(khzCapi *h, const char *body, double factor, char *err, size_t errsz);
int khz_capi_setFriction(khzCapi *h, double mu, char *err, size_t errsz);
int khz_capi_recompile(khzCapi *h, char *err, size_t errsz);

/* The model's own actuators (MJCF <actuator>s, URDF <ros2_control>
 * interfaces; khz/load.h): every step adds their torques at the step's start
 * to the caller's d->tau (which the step leaves as it was), MuJoCo's
 * qfrc_actuator (khz_actuator_torque: each control clamped to its ctrlrange,
 * each force to its forcerange, summed per joint). Their controls start at
 * their initial values (zero, or a keyframe's: a position servo pulls its
 * joint to 0 from the first step, as in MuJoCo) and stay until set again or
 * the handle is reset. nActuator gives their number, actuatorName(i) the
 * name of actuator i (NULL out of range); setCtrl sets the control of the
 * actuator named `name` and returns its index, or -1 with err (no such
 * actuator, a value that is not finite); getCtrl returns actuator i's
 * control (NaN out of range). */
int khz_capi_nActuator(const khzCapi *h);
const char *khz_capi_actuatorName(const khzCapi *h, int i);
int khz_capi_setCtrl(khzCapi *h, const char *name, double value, char *err, size_t errsz);
double khz_capi_getCtrl(const khzCapi *h, int i);

/* khz_resetData plus kinematics (and the actuators' controls back to their initial values) */
void khz_capi_reset(khzCapi *h);
/* call after writing q or qd: friction anchors, sleeping islands, kinematics */
void khz_capi_stateWritten(khzCapi *h);
/* n steps of the model's timestep (the actuators' torques added at each) */
void khz_capi_step(khzCapi *h, long n);
/* the last step's contacts: out[0] deepest depth (m), out[1] the largest
 * normal force of one pair (N) */
void khz_capi_contactFigures(const khzCapi *h, double out[2]);
/* n steps with running figures: acc[0] max depth, acc[1] max pair normal
 * force, acc[2] max total energy, acc[3] last total energy (set acc[2] and
 * acc[3] to the energy at the start and acc[0..1] to 0 before the first call) */
void khz_capi_stepFigures(khzCapi *h, long n, double acc[4]);
/* kinetic and potential energy (recomputes kinematics) */
void khz_capi_energy(khzCapi *h, double out[2]);

/* Offset and size in bytes of "STRUCT.member" (khzModel, khzData,
 * khzContact, khzContactPoint), or of "STRUCT" alone (offset 0, size =
 * sizeof). 0, or -1 when the name is not in the table. */
int khz_capi_field(const char *name, size_t *offset, size_t *size);

#ifdef __cplusplus
}
#endif
#endif /* KHZ_CAPI_H */
