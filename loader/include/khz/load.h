/* load.h — model loaders: URDF robots and MuJoCo MJCF models (libxml2) and khz
 * scene files (libyaml).
 *
 * Loaders fill a khzSpec (rt/include/khz/khz.h); khz_compile() validates it and
 * builds the immutable model. Every loader is all-or-nothing: on error the spec
 * is left exactly as it was, the function returns -1 and err holds one message
 * of the form "FILE: ELEMENT: PROBLEM" (FILE:LINE where the parser knows it).
 * Warnings (a missing mesh, an ignored element) go to the warning callback, or
 * to stderr when none is set.
 */
#ifndef KHZ_LOAD_H
#define KHZ_LOAD_H

#include "khz/hil.h"
#include "khz/khz.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*khzWarnFn)(void *user, const char *message);

typedef struct khzUrdfInfo khzUrdfInfo; /* what a URDF's <ros2_control> says (below) */

typedef struct khzUrdfOptions {
  const char *package_path; /* ':'-separated directories searched for package://NAME/...
                               (each entry may hold NAME/ or be NAME itself); NULL = the
                               environment variable KHZ_PACKAGE_PATH, then
                               ROS_PACKAGE_PATH, then the URDF's directory and its parents */
  const char *name_prefix;  /* prepended to every body and joint name ("" = none) */
  double base_pos[3];       /* pose of the root link in the world */
  double base_quat[4];
  int floating_base;        /* 1: the root link gets a floating joint, 0: welded */
  khzWarnFn warn;
  void *warn_user;
  khzUrdfInfo *info;        /* when not NULL, filled on success with the <ros2_control>
                               interfaces (free with khz_urdf_freeInfo) */
} khzUrdfOptions;

/* Defaults: no prefix, identity base pose, fixed base, warnings to stderr. */
void khz_urdf_defaultOptions(khzUrdfOptions *opt);

/* Adds the robot in the URDF file to spec under the world body. Returns the spec
 * index of the root body, or -1 with err set (spec unchanged). */
int khz_loadURDF(khzSpec *spec, const char *path, const khzUrdfOptions *opt, char *err,
                  size_t errsz);

/* The same from a string; name is used in messages, basedir resolves relative
 * mesh paths (may be NULL). */
int khz_loadURDFString(khzSpec *spec, const char *xml, const char *name,
                         const char *basedir, const khzUrdfOptions *opt, char *err,
                         size_t errsz);

/* ------------------------------------------------------------------ MJCF -- */

/* MJCF (MuJoCo's XML format): nested bodies, hinge / slide / ball / free
 * joints, sphere / capsule / cylinder / box / plane / mesh geoms (fromto
 * included; ellipsoids as convex hulls), <include>, <default> classes, mesh
 * assets, inertia from geom density (meshes included), <inertial>, joint
 * damping / armature / frictionloss / limits / springs, motor / position /
 * velocity / general actuators, <contact><exclude>, <keyframe>, <compiler>
 * angle / eulerseq / autolimits / meshdir / ... and <option> timestep /
 * gravity / integrator / <flag>. docs/mjcf.md lists what is read, the mapping
 * and the warnings.
 *
 * khz has exactly one joint per body: an MJCF body with n > 1 joints becomes a
 * chain of n khz bodies, one joint each; the first n - 1 are massless and
 * called "BODY:JOINT", the last one carries the body's name, geoms, mass and
 * children. The khz body frame of an MJCF body sits at its last joint's
 * anchor (MJCF joint pos), with the MJCF body's orientation; geoms, the
 * centre of mass and child bodies are re-expressed there. Bodies with no joint
 * or a free joint keep the MJCF body frame exactly. The actuators are
 * reported in khzMjcfInfo (with their initial controls): the server's
 * Command.ctrl, khz-sim run --ctrl and khz_capi_setCtrl drive them
 * (khz_actuator_torque), and each bounds its joint's effort limit. Unnamed bodies and joints are called "bodyN" and
 * "jointN" with MuJoCo's ids. */

/* Actuator kinds (khzMjcfActuator.type). */
typedef enum khzMjcfActuatorType {
  KHZ_MJCF_MOTOR = 0,
  KHZ_MJCF_POSITION,
  KHZ_MJCF_VELOCITY,
  KHZ_MJCF_GENERAL
} khzMjcfActuatorType;

/* One actuator (<motor>, <position>, <velocity>, <general>) on a joint: the
 * model's own command interface. Its joint torque for a control ctrl at the
 * joint's position q and velocity qd is khz_mjcf_actuatorTorque(). */
typedef struct khzMjcfActuator {
  char name[KHZ_NAME_MAX];  /* the motor's name ("" when unnamed) */
  char joint[KHZ_NAME_MAX]; /* the khz joint it drives (with the name prefix) */
  double gear;              /* tau = gear * ctrl */
  int ctrllimited;
  double ctrlrange[2];
  int forcelimited;
  double forcerange[2];     /* bounds on the motor force (= ctrl, unit gain), before the gear */
  khzMjcfActuatorType type;
  double gain;              /* force = gain ctrl + bias[0] + bias[1] gear q + bias[2] gear qd */
  double bias[3];           /* (position: gain kp, bias 0 -kp -kv; velocity: gain kv, bias 0 0
                               -kv; motor: gain 1, no bias; general: gainprm[0], biasprm) */
  double ctrl0;             /* its control before any command (MuJoCo's data.ctrl at the start):
                               0, or the ctrl of the <key> made the initial state */
  int kv_implicit;          /* 1: its velocity feedback -gear^2 bias[2] qd is in the joint's
                               damping (khzBodySpec.damping), integrated implicitly as MuJoCo's
                               implicit / implicitfast integrators do (the file's <option
                               integrator>; not with a forcerange); khz_actuator_pd leaves it out */
} khzMjcfActuator;

/* The joint torque of actuator a for control ctrl at joint position q and
 * velocity qd, MuJoCo's rule: ctrl clamped to ctrlrange (when limited), the
 * force gain ctrl + bias clamped to forcerange (when limited), times gear. */
double khz_mjcf_actuatorTorque(const khzMjcfActuator *a, double ctrl, double q, double qd);

/* Actuator a as the terms of khz's in-tick PD controller on its joint, for
 * control ctrl (MuJoCo's data.ctrl): ctrl clamped to ctrlrange, the joint
 * torque tau_ff - kp q - kd qd with
 *   tau_ff = gear (gain ctrl + bias[0]),  kp = -gear^2 bias[1],
 *   kd = -gear^2 bias[2]  (0 when kv_implicit: the joint's damping has it).
 * Together with the joint damping the actuator adds this is MuJoCo's
 * actuator force times gear before forcerange, which khz_actuator_range
 * bounds (the server's loop clamps each actuator's torque to it before
 * summing the actuators of one joint: khzLoopActuator). Returns 1 when ctrl
 * was clamped to ctrlrange, 0 when not, -1 when ctrl is not finite (outputs
 * then zero). */
int khz_actuator_pd(const khzMjcfActuator *a, double ctrl, double *tau_ff, double *kp,
                    double *kd);

/* Actuator a's joint torque bounds: forcerange times gear, ordered (a
 * negative gear swaps them); -inf, inf when a is not force-limited. */
void khz_actuator_range(const khzMjcfActuator *a, double range[2]);

/* The joint torque actuator a adds for control ctrl at joint position q and
 * velocity qd beside what the model has of it (a kv_implicit actuator's kv is
 * the joint's damping): clamp(tau_ff - kp q - kd qd, khz_actuator_range) of
 * khz_actuator_pd, 0 for a control that is not finite. Summed over the
 * actuators of a joint, MuJoCo's qfrc_actuator (khz-sim run --ctrl,
 * khz_capi_setCtrl and the server's loop apply it so). */
double khz_actuator_torque(const khzMjcfActuator *a, double ctrl, double q, double qd);

/* One <key> of <keyframe>: a named state, laid out as khz's q and qd (which
 * equal MuJoCo's qpos and qvel for an MJCF model loaded alone). */
typedef struct khzMjcfKey {
  char name[KHZ_NAME_MAX]; /* "" when unnamed */
  double time;
  double *qpos;            /* nq of the loaded bodies (the key's or, when absent, qpos0) */
  double *qvel;            /* nv (zero when absent) */
  double *ctrl;            /* nactuator (zero when absent) */
} khzMjcfKey;

/* One <sensor> child that maps onto khz's state, read by
 * khz_mjcf_sensorRead: jointpos / jointvel (hinge, slide: 1 value), ballquat /
 * ballangvel (a ball joint's quaternion w x y z / angular velocity, as
 * KHZ_MJCF_JOINTPOS / JOINTVEL with dim 4 / 3), framepos / framequat /
 * framelinvel / frameangvel of a body (objtype "xbody": the body frame;
 * "body": its centre of mass for position and linear velocity; world
 * coordinates, quaternion w x y z; framequat needs "xbody") or of a site
 * (objtype "site": the site's frame), and velocimeter (a site's linear
 * velocity in the site's axes). gyro, accelerometer and touch on sites
 * become HIL sensors (khzMjcfInfo.hil), force and torque joint force-torque
 * HIL sensors; other sensor types (subtree sensors, ...) draw one warning
 * each and are left out. */
typedef enum khzMjcfSensorType {
  KHZ_MJCF_JOINTPOS = 0,
  KHZ_MJCF_JOINTVEL,
  KHZ_MJCF_FRAMEPOS,
  KHZ_MJCF_FRAMEQUAT,
  KHZ_MJCF_FRAMELINVEL,
  KHZ_MJCF_FRAMEANGVEL,
  KHZ_MJCF_VELOCIMETER     /* a site's linear velocity in the site's own axes (3 values) */
} khzMjcfSensorType;

typedef struct khzMjcfSensor {
  char name[KHZ_NAME_MAX];   /* "" when unnamed */
  khzMjcfSensorType type;
  char object[KHZ_NAME_MAX]; /* the khz joint (joint sensors) or body (frame sensors) */
  int com;                   /* frame sensors on objtype "body": the centre of mass */
  double pos[3];             /* the MJCF body frame's origin (or the site's) in the khz body frame */
  double quat[4];            /* frame sensors of a site: the site's orientation in the khz body
                                frame (w x y z); identity (or all zero) for a body */
  int dim;                   /* number of values */
} khzMjcfSensor;

/* Reads sensor s at the current state of d (after khz_kinematics or a step)
 * into out (s->dim values, at most 4). Returns s->dim, or -1 when its joint or
 * body is not in m. */
int khz_mjcf_sensorRead(const khzModel *m, const khzData *d, const khzMjcfSensor *s,
                        double out[4]);

/* What the file says beyond the bodies (filled on success when requested). */
typedef struct khzMjcfInfo {
  char model[KHZ_NAME_MAX]; /* <mujoco model=...> */
  double timestep;          /* <option timestep>, MuJoCo's default 0.002 */
  double gravity[3];        /* <option gravity>, default 0 0 -9.81 */
  khzIntegrator integrator; /* <option integrator>: Euler -> KHZ_INT_EULER, RK4 -> KHZ_INT_RK4 */
  int nactuator;
  khzMjcfActuator *actuator; /* nactuator entries, owned: free with khz_mjcf_freeInfo */
  int nq, nv;               /* sizes of the keys' qpos and qvel */
  int nkey;
  khzMjcfKey *key;          /* nkey entries, owned: free with khz_mjcf_freeInfo */
  int nsensor;
  khzMjcfSensor *sensor;    /* nsensor entries, owned: free with khz_mjcf_freeInfo */
  int nhil;                 /* the sensors that khz's HIL layer has (khz/hil.h, docs/hil.md) */
  khzSensorSpec *hil;       /* nhil entries, owned: jointpos / jointvel of a hinge or slide as an
                               encoder, gyro, accelerometer and touch on a site as the HIL gyro,
                               accelerometer (at the site) and touch of the site's body; object
                               is the spec body index, name the sensor's (with name_prefix;
                               unnamed: "sensorN", N MuJoCo's sensor id), MuJoCo's `noise` the
                               white noise's standard deviation */
} khzMjcfInfo;

typedef struct khzMjcfOptions {
  const char *name_prefix; /* prepended to every body and joint name ("" = none) */
  double base_pos[3];      /* pose of the <worldbody> content in the world */
  double base_quat[4];
  int world_geoms;         /* 1: add the geoms of <worldbody> (e.g. the floor) to body 0 */
  int apply_options;       /* 1: <option> sets the spec's timestep, gravity and integrator */
  khzMjcfInfo *info;       /* when not NULL, filled on success (free with khz_mjcf_freeInfo) */
  khzWarnFn warn;
  void *warn_user;
  const char *keyframe;    /* when not NULL, the <key> of this name sets the initial state
                              (q0, qd0); a name that no key has is an error */
} khzMjcfOptions;

/* Defaults: no prefix, identity base pose, world geoms added, <option> applied,
 * no info, warnings to stderr. */
void khz_mjcf_defaultOptions(khzMjcfOptions *opt);

/* Adds the bodies of the MJCF file to spec under the world body. Returns the
 * spec index of the first body added (the spec's body count when the file has
 * no body), or -1 with err set (spec unchanged). Every unsupported element or
 * attribute draws one warning (with a count when it occurs several times);
 * warnings are delivered only when the load succeeds. */
int khz_loadMJCF(khzSpec *spec, const char *path, const khzMjcfOptions *opt, char *err,
                  size_t errsz);

/* The same from a string; name is used in messages. */
int khz_loadMJCFString(khzSpec *spec, const char *xml, const char *name,
                         const khzMjcfOptions *opt, char *err, size_t errsz);

/* Frees what a khzMjcfInfo owns and zeroes it. */
void khz_mjcf_freeInfo(khzMjcfInfo *info);

/* -------------------------------------------------------------- end MJCF -- */

/* ---------------------------------------------------- URDF ros2_control -- */

/* A URDF's <ros2_control> blocks (ros2_control's hardware description): each
 * <joint name> with its <command_interface>s becomes one actuator per
 * interface, named "JOINT/INTERFACE" as in ros2_control (JOINT with the name
 * prefix), of khz's actuator kinds (khz_mjcf_actuatorTorque applies them):
 *   effort   -> KHZ_MJCF_MOTOR (gain 1): ctrl is the joint torque or force;
 *   position -> KHZ_MJCF_POSITION: kp (ctrl - q) - kv qd, with <param name="kp">
 *               and "kd" (also "p", "d"); without them kp = effort limit / 0.1
 *               (100 when the joint has none) and kv = kp / 10, with a warning;
 *   velocity -> KHZ_MJCF_VELOCITY: kv (ctrl - qd), <param name="kd"> (also "d",
 *               "kv"), else kv = effort limit / 1 (10 without one), with a warning.
 * ctrlrange is the interface's <param name="min"> / "max", else the joint's
 * position limits (position), velocity limit (velocity) or effort limit
 * (effort); forcerange is the joint's effort limit. Each <state_interface>
 * (position, velocity, effort: khz's q, qd and applied torque) is listed in
 * state; a position state's <param name="initial_value"> (velocity's too) is
 * the joint's initial q (qd). Other interface names, <sensor> and <gpio>
 * blocks draw a warning; a joint the robot does not have is an error. */
typedef struct khzUrdfStateInterface {
  char joint[KHZ_NAME_MAX]; /* the khz joint (with the name prefix) */
  char name[32];            /* "position", "velocity" or "effort" */
} khzUrdfStateInterface;

struct khzUrdfInfo {
  char hardware[KHZ_NAME_MAX]; /* the first <ros2_control name> */
  int nactuator;
  khzMjcfActuator *actuator;   /* nactuator entries, owned */
  int nstate;
  khzUrdfStateInterface *state; /* nstate entries, owned */
};

/* Frees what a khzUrdfInfo owns and zeroes it. */
void khz_urdf_freeInfo(khzUrdfInfo *info);


/* A validation experiment a scene may carry (`experiment:`; see
 * docs/scene-format.md and tools/experiments.c): what it does, the body it
 * acts on, and its named numeric parameters. kind[0] == 0: none. */
#define KHZ_EXPERIMENT_PARAMS 16
typedef struct khzExperiment {
  char kind[32];
  char body[KHZ_NAME_MAX];
  int nparam;
  char param_name[KHZ_EXPERIMENT_PARAMS][32];
  double param[KHZ_EXPERIMENT_PARAMS];
} khzExperiment;

/* A haptic proxy: a floating body that the server couples to a haptic
 * device's pose with a spring-damper (docs/server.md, Haptics). */
#define KHZ_SCENE_MAX_HAPTIC 8
typedef struct khzHapticSettings {
  char body[KHZ_NAME_MAX]; /* the proxy body (a floating object) */
  double stiffness;        /* N/m */
  double damping;          /* N s/m; > stiffness / (2 rate_hz) (passivity) */
  double rot_stiffness;    /* N m/rad */
  double rot_damping;      /* N m s/rad; > rot_stiffness / (2 rate_hz) */
} khzHapticSettings;

/* Sensors and drives of the scene's key `hil` (docs/hil.md): sensor objects
 * are body indices of the spec (= of the compiled model). */
#define KHZ_SCENE_MAX_SENSOR 64
#define KHZ_SCENE_MAX_DRIVE 64
#define KHZ_SCENE_MAX_FAULT 64
#define KHZ_SCENE_MAX_ACTUATOR 256
typedef struct khzSceneHil {
  uint64_t seed;
  int nsensor;
  khzSensorSpec sensor[KHZ_SCENE_MAX_SENSOR];
  int ndrive;
  khzDriveSpec drive[KHZ_SCENE_MAX_DRIVE];
  khzNetworkModel network;                  /* key network (seed: the hil seed) */
  int nfault;                               /* the scripted faults, sorted by time */
  khzFaultEvent fault[KHZ_SCENE_MAX_FAULT];
} khzSceneHil;

/* What a scene file describes beyond the model itself. */
typedef struct khzScene {
  khzSpec *spec;       /* owned; compile with khz_compile() */
  double rate_hz;      /* loop rate (timestep = 1 / rate_hz) */
  khzIntegrator integrator;
  int threads;         /* key threads: the step's threads (khz_setThreads), 1 to 16; 1 by
                          default. The loader only reads it: whoever makes the data sets it */
  khzContactOptions contact; /* also set on the spec (khz_spec_setContact) */
  int has_ground;
  double ground_height;     /* ground.height (or ground.pos's z) */
  double ground_pos[3];     /* a point of the ground plane, world frame */
  double ground_normal[3];  /* its unit normal (the free side), world frame; [0, 0, 1] unless
                               ground.normal / rpy / quat tilt it */
  char name[KHZ_NAME_MAX];
  int nhaptic;         /* haptic proxies (key `haptics`) */
  khzHapticSettings haptic[KHZ_SCENE_MAX_HAPTIC];
  khzExperiment experiment;
  khzSceneHil hil;     /* key `hil`: sensors and drives (none by default) */
  int nactuator;       /* the models' own actuators: MJCF <actuator>s and URDF <ros2_control>
                          command interfaces of every robot, in load order, names and joints
                          with the robot's prefix (unnamed MJCF actuators: "actuatorN", N
                          their index in the file); the server's Command.ctrl addresses them */
  khzMjcfActuator actuator[KHZ_SCENE_MAX_ACTUATOR];
} khzScene;

/* Loads a scene file. On error returns -1 with err set and *scene untouched. */
int khz_loadScene(khzScene *scene, const char *path, char *err, size_t errsz);

/* The same from a string; basedir resolves relative paths (URDF files). */
int khz_loadSceneString(khzScene *scene, const char *yaml, const char *name,
                          const char *basedir, char *err, size_t errsz);

/* The embedded default scene (a 7-DoF arm on a table next to loose objects). */
int khz_loadDefaultScene(khzScene *scene, char *err, size_t errsz);

/* Frees what the scene owns. */
void khz_deleteScene(khzScene *scene);

/* Loads MODEL by extension: .urdf (fixed base), .xml (MJCF, with its <option>
 * timestep, gravity and integrator), .yaml/.yml (scene), or the word
 * "default" for the embedded scene. Returns the compiled model or NULL with err. */
khzModel *khz_loadModel(const char *path, khzScene *scene_out, char *err, size_t errsz);

/* Edits of a loaded scene's spec for parameter studies (campaigns, the
 * server's mass_scale and friction settings); they take effect when the spec
 * is compiled again (khz_compile).
 *
 * khz_scene_scaleMass multiplies the mass and inertia of the body named
 * `body` (every body but the world when body is NULL or "") by factor > 0, a
 * uniform change of density; returns the number of bodies scaled, or -1 with
 * err (a bad factor, no such body). khz_scene_setFriction sets every geom's
 * Coulomb coefficient and the scene's default to mu >= 0; returns the number
 * of geoms, or -1 with err. khz_scene_setSeed replaces the scene's hil seed
 * (sensor noise, drive and network draws: docs/hil.md). */
int khz_scene_scaleMass(khzScene *scene, const char *body, double factor, char *err,
                        size_t errsz);
int khz_scene_setFriction(khzScene *scene, double mu, char *err, size_t errsz);
void khz_scene_setSeed(khzScene *scene, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif /* KHZ_LOAD_H */
