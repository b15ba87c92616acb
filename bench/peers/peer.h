/* peer.h — one scene, built in every engine from the same parameters.
 *
 * bench_peers loads a khz scene file (the YAML files in scenes/validation/, or a generated
 * pile), converts the loaded model to the neutral benchScene below and hands
 * it to each engine's adapter (engine_khz.c, engine_mujoco.c, engine_ode.c,
 * engine_bullet.cpp). The driver then steps every engine the same way and
 * measures every engine the same way, from the poses and velocities the
 * adapters report: penetration by khz's own collision detection at those
 * poses, kinetic and potential energy from the masses below.
 *
 * Conventions (all SI, world z up, quaternions w x y z):
 *   - every body frame is at the body's centre of mass with its axes along the
 *     principal axes of inertia (inertia[] is diagonal in that frame);
 *   - shape poses are relative to their body frame; a capsule or cylinder has
 *     its axis along the shape's local z;
 *   - a body with parent < 0 is free (6 DoF); a body with parent >= 0 hangs
 *     from that body by a hinge at joint_anchor about joint_axis (both given
 *     in world coordinates at the initial configuration, where the hinge
 *     angle is zero);
 *   - static shapes (the ground plane, container walls) belong to the world.
 */
#ifndef KHZ_BENCH_PEER_H
#define KHZ_BENCH_PEER_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum benchShapeType {
  BENCH_PLANE = 0, /* static only: normal +z of the shape frame through its origin */
  BENCH_SPHERE,    /* size[0] radius */
  BENCH_BOX,       /* size[0..2] half extents */
  BENCH_CAPSULE,   /* size[0] radius, size[1] half length of the segment (local z) */
  BENCH_CYLINDER   /* size[0] radius, size[1] half length (local z) */
} benchShapeType;

typedef struct benchShape {
  benchShapeType type;
  double size[3];
  double pos[3];  /* in the body frame (world frame for static shapes) */
  double quat[4];
} benchShape;

typedef struct benchBody {
  char name[64];
  double mass;          /* kg, > 0 */
  double inertia[3];    /* principal moments about the centre of mass, kg m^2 */
  double pos[3];        /* initial centre of mass, world */
  double quat[4];       /* initial orientation of the principal axes, world */
  double vel[3];        /* initial linear velocity of the centre of mass, world */
  double angvel[3];     /* initial angular velocity, world */
  int parent;           /* -1: free body; else index of the parent body (hinge) */
  double joint_anchor[3];
  double joint_axis[3]; /* unit */
  int shape0, nshape;   /* its shapes: benchScene.shape[shape0 .. shape0 + nshape) */
  int khz_body;         /* the body's index in khz_model (engine_khz only) */
} benchBody;

typedef struct benchScene {
  char name[64];
  double timestep;      /* s */
  double gravity[3];
  double mu;            /* Coulomb friction coefficient of every contact */
  double restitution;   /* coefficient of restitution of impacts */
  int nbody;
  benchBody *body;
  int nshape;
  benchShape *shape;    /* shapes of the bodies */
  int nstatic;
  benchShape *static_shape;
  /* The khz model the scene was converted from: engine_khz steps it as loaded
   * (with the scene file's contact settings); the peers ignore it. */
  const struct khzModel *khz_model;
  /* The spec it was compiled from (or NULL): engine_khz's Euler rows compile
   * their own model from it with another integrator or gains. */
  struct khzSpec *khz_spec;
} benchScene;

/* An engine adapter. create() returns NULL and writes err on failure (an
 * unsupported shape, say); every other call is valid only on a created world.
 * Bodies keep the scene's order. */
typedef struct benchEngine {
  const char *name;       /* "khz", "khz-deepest", "mujoco", "ode", "bullet" */
  const char *settings;   /* one line: integrator, solver, iterations, softness... */
  void *(*create)(const benchScene *scene, char *err, int errsz);
  /* Adds a force (N, world) at a point (m, world) of a body, for the next step
   * only. */
  void (*apply_force)(void *world, int body, const double force[3], const double point[3]);
  void (*step)(void *world); /* one step of scene->timestep */
  /* State of a body's centre-of-mass frame, world. */
  void (*get_state)(void *world, int body, double pos[3], double quat[4], double vel[3],
                    double angvel[3]);
  void (*destroy)(void *world);
} benchEngine;

extern const benchEngine bench_engine_khz;         /* penalty (multi-point) method */
extern const benchEngine bench_engine_khz_deepest; /* khz's deepest-point baseline */
extern const benchEngine bench_engine_khz_sleep;   /* penalty method, sleeping bodies on */
extern const benchEngine bench_engine_khz_lcp;     /* Stewart-Trinkle LCP method */
extern const benchEngine bench_engine_khz_euler;   /* semi-implicit Euler, the scene's gains */
extern const benchEngine bench_engine_khz_euler_auto; /* semi-implicit Euler, automatic gains */
extern const benchEngine bench_engine_khz_2t;      /* penalty method, the step on two threads */
extern const benchEngine bench_engine_mujoco;
extern const benchEngine bench_engine_ode;
extern const benchEngine bench_engine_ode_sleep;    /* ODE's auto-disable on */
extern const benchEngine bench_engine_bullet;
extern const benchEngine bench_engine_bullet_sleep; /* Bullet's deactivation on */

#ifdef __cplusplus
}
#endif

#endif
