/* khz.h — public API of the khz real-time physics core (rt/).
 *
 * The core follows MuJoCo's split between an immutable model (khzModel) and a
 * mutable state (khzData). A model is built from a khzSpec (a plain,
 * growable description that loaders fill in) by khz_compile(); the spec may be
 * discarded afterwards. All memory a step needs is reserved by khz_makeData():
 * nothing below allocates once a khzData exists.
 *
 * Conventions
 *   - Spatial vectors are Featherstone's: motion [w; v], force [n; f], 6 doubles.
 *   - Every body has exactly one joint connecting it to its parent body; body 0 is
 *     the world. Joint arrays are therefore indexed by body id (entry 0 unused).
 *   - The body frame of a body is its joint frame after the joint motion (URDF's
 *     link frame). Joint origin = pose of the joint frame in the parent body frame.
 *   - Quaternions are (w, x, y, z).
 *   - Revolute / continuous / prismatic: 1 q, 1 qd (rad or m).
 *   - Spherical: q = unit quaternion of the child relative to the joint frame (4),
 *     qd = angular velocity in the child frame (3). Same as MuJoCo's ball joint.
 *   - Floating: q = [position of the body origin in the parent frame (3), quaternion
 *     (4)], qd = [linear velocity of the body origin in the parent frame (3),
 *     angular velocity in the body frame (3)]. Same as MuJoCo's free joint, so
 *     qdd compares one to one. Generalised forces on these dofs are a force in the
 *     parent frame and a torque in the body frame.
 *   - External wrenches (xfrc) are [force (3), torque (3)] in the world frame,
 *     acting at the body's centre of mass (as MuJoCo's xfrc_applied).
 */
#ifndef KHZ_KHZ_H
#define KHZ_KHZ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KHZ_NAME_MAX 64
#define KHZ_PATH_MAX 512

/* The loop rate range in Hz, inclusive; a scene's rate_hz, the real-time
 * loop and the server's settings all check against it (the timestep is
 * 1 / rate). Integers, so that messages and help texts can spell the range
 * at compile time: KHZ_RATE_RANGE("..") is "100..10000". */
#define KHZ_RATE_MIN_HZ 100
#define KHZ_RATE_MAX_HZ 10000
#define KHZ_RATE_RANGE(sep) KHZ_STR_(KHZ_RATE_MIN_HZ) sep KHZ_STR_(KHZ_RATE_MAX_HZ)
#define KHZ_STR_(x) KHZ_STR__(x)
#define KHZ_STR__(x) #x

typedef enum khzJointType {
  KHZ_JOINT_FIXED = 0,
  KHZ_JOINT_REVOLUTE,
  KHZ_JOINT_CONTINUOUS, /* revolute without position limits */
  KHZ_JOINT_PRISMATIC,
  KHZ_JOINT_SPHERICAL,
  KHZ_JOINT_FLOATING,
  KHZ_JOINT_NTYPES
} khzJointType;

typedef enum khzGeomType {
  KHZ_GEOM_PLANE = 0, /* half-space z <= 0 of the geom frame */
  KHZ_GEOM_SPHERE,    /* size[0] = radius */
  KHZ_GEOM_BOX,       /* size = half-extents */
  KHZ_GEOM_CAPSULE,   /* size[0] = radius, size[1] = half-length along z */
  KHZ_GEOM_CYLINDER,  /* size[0] = radius, size[1] = half-length along z */
  KHZ_GEOM_MESH,      /* mesh file in `mesh`, scaled by size */
  KHZ_GEOM_NTYPES
} khzGeomType;

typedef enum khzIntegrator { KHZ_INT_RK4 = 0, KHZ_INT_EULER = 1 } khzIntegrator;

/* Contact methods; chosen per scene, switchable between ticks (d->contact_method). */
typedef enum khzContactMethod {
  KHZ_CONTACT_NONE = 0, /* bodies pass through each other */
  KHZ_CONTACT_PENALTY,  /* Drumwright's multi-point penalty method with impacts (docs/contact.md) */
  KHZ_CONTACT_DEEPEST,  /* one penalty spring at the deepest point (the paper's baseline) */
  KHZ_CONTACT_LCP,      /* Stewart & Trinkle's LCP time-stepping, solved by Lemke (docs/lcp.md) */
  KHZ_CONTACT_PEG,      /* Williams, Lu & Trinkle's PEG polytope contact in the same stepping (docs/peg.md) */
  KHZ_CONTACT_NMETHODS
} khzContactMethod;

/* Contact-pair phase (the state machine of Drumwright's Fig. 2). */
typedef enum khzContactPhase {
  KHZ_PHASE_NONE = 0, /* slot free / not in contact */
  KHZ_PHASE_RESTING,  /* handled by the penalty method */
  KHZ_PHASE_IMPACT    /* handled by impulses this tick */
} khzContactPhase;

/* Counted warnings (simulation conditions, never fatal). */
typedef enum khzWarning {
  KHZ_WARN_STACK = 0,  /* scratch stack exhausted: the step was skipped, or a part of it
                          degraded (docs/contact.md, "Capacities and failures") */
  KHZ_WARN_BADSTATE,   /* NaN/inf after a step: state rolled back */
  KHZ_WARN_EFFORT,     /* a commanded torque exceeded the effort limit and was clamped */
  KHZ_WARN_BADCTRL,    /* a commanded torque was NaN/inf and was replaced by zero */
  KHZ_WARN_CONTACTFULL,/* a contact buffer was full: fewer pairs or points were kept */
  KHZ_WARN_IMPULSE,    /* an impact's impulses stopped before they converged (sweep budget
                          spent, or a cluster too large to solve together) */
  KHZ_WARN_LCP,        /* the LCP method could not solve a step (Lemke's pivot budget, ray
                          termination, more contact points than it holds): that step used
                          the penalty method (docs/lcp.md) */
  KHZ_NWARNING
} khzWarning;

/* ------------------------------------------------------------------ spec -- */

/* One body and the joint that connects it to its parent. */
typedef struct khzBodySpec {
  char name[KHZ_NAME_MAX];       /* body (link) name, unique */
  int parent;                    /* index of the parent body in the spec; 0 = world */
  double pos[3];                 /* joint origin: position in the parent body frame */
  double quat[4];                /* joint origin: orientation in the parent body frame */
  khzJointType joint_type;
  char joint_name[KHZ_NAME_MAX]; /* unique among joints; may be empty for fixed */
  double axis[3];                /* joint axis in the joint frame (revolute, prismatic) */
  int limited;                   /* position limits active (revolute, prismatic) */
  double lower, upper;           /* position limits, rad or m */
  double velocity_limit;         /* |qd| limit, informative; 0 = none */
  double effort_limit;           /* |tau| clamp per dof; 0 = none */
  double damping;                /* viscous joint damping, N m s/rad or N s/m */
  double friction;               /* Coulomb joint friction, N m or N */
  double armature;               /* reflected rotor inertia added to M's diagonal */
  double mass;                   /* kg, >= 0 (0 only for massless links) */
  double com[3];                 /* centre of mass in the body frame */
  double inertia[6];             /* about the com, body axes: xx yy zz xy xz yz */
  double q0[7];                  /* initial joint position (floating: pos + quat) */
  double qd0[6];                 /* initial joint velocity, the joint's nv entries (floating:
                                    linear velocity of the origin in the parent frame, then
                                    angular velocity in the body frame); zero by default */
  double stiffness;              /* joint spring (revolute, continuous, prismatic):
                                    tau = -stiffness (q - springref); 0 = none */
  double springref;              /* the spring's rest position, rad or m */
} khzBodySpec;

/* One geometry attached to a body (collision or visual). */
typedef struct khzGeomSpec {
  int body;                 /* spec body index; 0 = world */
  khzGeomType type;
  double size[3];           /* see khzGeomType; mesh: scale */
  double pos[3];            /* pose in the body frame */
  double quat[4];
  char meshfile[KHZ_PATH_MAX]; /* resolved mesh file (KHZ_GEOM_MESH), informative */
  int visual;               /* 1 = visual only, 0 = collision */
  double rgba[4];
  double friction;          /* Coulomb coefficient, 0 = scene default */
  int mesh;                 /* KHZ_GEOM_MESH: index returned by khz_spec_addMesh, else -1 */
  int convex;               /* KHZ_GEOM_MESH: 1 = treat as convex, 0 = general triangle mesh */
  unsigned contype;         /* collision filter: geoms g1, g2 may collide when */
  unsigned conaffinity;     /* (g1.contype & g2.conaffinity) || (g2.contype & g1.conaffinity) */
  double kp, kv, ki;        /* per-geom penalty gain overrides; 0 = scene default */
} khzGeomSpec;

/* Contact settings of a model (khz_spec_setContact). */
typedef enum khzGainMass {
  KHZ_GAIN_MASS_SUM = 0, /* m1 + m2 of the moving bodies (the paper's rule) */
  KHZ_GAIN_MASS_REDUCED, /* m1 m2 / (m1 + m2); a static body counts as infinite */
  KHZ_GAIN_MASS_EFFECTIVE /* the effective mass of the pair at its deepest point along the
                             normal, 1 / (n^T K n) with K the collision matrix of the
                             articulated bodies (for robots: what the contact really moves) */
} khzGainMass;

typedef struct khzContactOptions {
  khzContactMethod method;
  double kp, kv, ki;        /* > 0: these gains for every pair; 0 = from the masses: */
  double kp_per_kg;         /*   kp = kp_per_kg * mass, with mass by gain_mass; 0 (default)
                               with kp = 0 = automatic gains (docs/contact.md) */
  double kv_per_kg;         /*   kv = kv_per_kg * mass (default 50) */
  double ki_per_kg;         /*   ki = ki_per_kg * mass (default 2) */
  khzGainMass gain_mass;
  double gamma;             /* forgetting factor of the integral term, in [0, 1) */
  double mu;                /* default Coulomb friction coefficient */
  double rolling;           /* rolling friction: largest rolling torque per newton of normal
                               force (m), 0 = none (MuJoCo's condim 6 rolling coefficient) */
  double torsional;         /* torsional friction: largest torque about the normal per newton
                               (m), 0 = none (from the points' springs only) */
  double restitution;       /* coefficient of restitution of impacts, [0, 1] */
  double impact_velocity;   /* eps of Fig. 2: approach faster than this (m/s) is an impact */
  double reimpact_velocity; /* a pair already in contact whose points approach faster than this
                               (m/s) impacts again; 0 = never (Fig. 2 as the paper draws it) */
  int max_pairs;            /* capacity of simultaneous contact pairs; 0 = automatic */
  int max_points;           /* capacity of contact points per pair; 0 = 64 */
  int friction_directions;  /* LCP method: directions of the polyhedral friction cone, 4 or 8
                               (0 = 4) */
  int lcp_restitution;      /* LCP method: 1 = Newton's restitution at impacts (a contact
                               approaching faster than impact_velocity leaves at restitution
                               times that speed); 0 (default) = inelastic, the paper's model */
  int lcp_split_impacts;    /* LCP method: 1 = a step in which a contact closes is split at
                               the closing time, so each impact is taken whole in one LCP
                               (first order through impacts; docs/lcp.md); 0 (default) =
                               the paper's steps, the gap term spreading an impact over two */
  int lcp_gap;              /* LCP method: the gap function of pairs of convex polyhedra (boxes,
                               convex meshes, planes): KHZ_LCP_GAP_NARROWPHASE (0, default),
                               the narrow phase's points at their depths, resting
                               KHZ_LCP_SKIN deep; KHZ_LCP_GAP_LPDEPTH, Anitescu & Hart's LP
                               penetration depth and its nearly active units, resting at a
                               gap of 0 (docs/lcp.md) */
  int deepest_stage;        /* deepest-point method, pairs with the scene's gains: where the
                               deepest point is chosen again at every integrator stage, with
                               the integral term at its steady state, ki / (1 - gamma) on the
                               depth, instead of the step's collision pass's point and eq. 2's
                               integral (docs/contact.md): KHZ_DEEPEST_STAGE_STACKED (0,
                               default) at pairs whose bodies other resting pairs hold too (a
                               stack, a robot on two feet), KHZ_DEEPEST_STAGE_ALL at every
                               pair, KHZ_DEEPEST_STAGE_OFF at none */
  int deepest_ties;         /* deepest-point method, pairs with automatic gains:
                               KHZ_DEEPEST_TIES_ON (0, default) = the one point is the
                               smooth maximum of the pair's depths over a window (a face
                               lying flat: its centre; docs/contact.md, friction),
                               KHZ_DEEPEST_TIES_OFF = the collision pass's deepest vertex */
  int free_closed_form;     /* 1 = RK4's stages 2-4 take a free object's acceleration in closed
                               form (Newton-Euler at the com) instead of ABA's 6x6 factor and
                               inverse: the same to rounding, about half the piles' ABA (docs/
                               benchmarks.md, free26c; the default since session 20: with rs26's
                               static rolling friction the 48 piles give 47 / 47 of 48 at
                               rest / below 1e-3 J either way); 0 = ABA everywhere (ABA's bits) */
  int joint_friction;       /* multi-point method, automatic gains: 1 = a sliding pair that shares
                               a free body with another pair solves its cluster's implicit
                               rows with every friction disc at once, and the implicit
                               tangential force acts where its rows were taken (docs/contact.md,
                               session 13); 0 (default) = each pair's friction scaled onto its
                               own disc, as before. Not ready: it moves other random scenes */
  /* the PEG method's settings (docs/peg.md) */
  int peg_model;            /* the constraints: KHZ_PEG_MODEL_PEG (0, default), the paper's U, I
                               and X constraints; KHZ_PEG_MODEL_STANDARD, every feature pair its
                               own unilateral constraint (eq. 9, the paper's comparison);
                               KHZ_PEG_MODEL_LPDEPTH, one constraint per pair of polytopes on
                               Anitescu & Hart's LP penetration depth */
  int peg_recovery;         /* 1: a pair overlapping at a step's start (deeper than 1e-6 m) also
                               gets a U constraint on its LP depth, released at 0.2 m/s (PEG
                               model); 0 (default): none */
  int peg_splits;           /* how many times a step whose passes leave a violation may be
                               halved, 0 (never) to 2 (the default, khz_spec_defaultContact) */
  int peg_lp_point;         /* LP-depth model: 1 = the LP's witness point alone (the one-point
                               model, for comparison); 0 (default) = the nearly active basic
                               contact units */
  double peg_lemke_ties;    /* Lemke's ratio-tie tolerance for PEG's LCPs; 0 (default) = 1e-3
                               (1 is Lemke's own default, the rule before session 14) */
} khzContactOptions;

/* khzContactOptions.lcp_gap */
enum { KHZ_LCP_GAP_NARROWPHASE = 0, KHZ_LCP_GAP_LPDEPTH = 1 };
/* khzContactOptions.peg_model */
enum { KHZ_PEG_MODEL_PEG = 0, KHZ_PEG_MODEL_STANDARD = 1, KHZ_PEG_MODEL_LPDEPTH = 2 };
/* khzContactOptions.deepest_stage */
enum { KHZ_DEEPEST_STAGE_STACKED = 0, KHZ_DEEPEST_STAGE_ALL = 1, KHZ_DEEPEST_STAGE_OFF = 2 };
/* khzContactOptions.deepest_ties */
enum { KHZ_DEEPEST_TIES_ON = 0, KHZ_DEEPEST_TIES_OFF = 1 };

/* Sleeping bodies (khz_spec_setSleep; docs/sleeping.md): trees with a moving joint (free
 * bodies, robots and their welded bases) that touch one another form islands; an island whose every point moves
 * slower than `velocity` for `time` seconds sleeps: its bodies are frozen
 * (not integrated, their pairs not collided, their pair state kept) until a
 * contact with an awake body, a torque, a wrench or a velocity wakes them. */
typedef struct khzSleepOptions {
  int enabled;      /* 1 (default): trees may sleep; 0: never */
  double velocity;  /* m/s: bound on the speed of every point of the body (default 0.01) */
  double time;      /* s the island stays below it before it sleeps (default 0.5) */
} khzSleepOptions;

typedef struct khzSpec khzSpec;

/* Creates an empty spec with world body only. Returns NULL when out of memory. */
khzSpec *khz_spec_new(void);

/* Frees a spec and nulls the caller's pointer. */
void khz_spec_destroy(khzSpec **spec_p);

/* Fills a body spec with defaults: identity origin, fixed joint, axis z, unit
 * quaternions, no limits, zero mass. */
void khz_spec_defaultBody(khzBodySpec *b);

/* Fills a geom spec with defaults. */
void khz_spec_defaultGeom(khzGeomSpec *g);

/* Appends a body; returns its index (>= 1) or -1 when out of memory. The
 * parent must already exist. Validation happens in khz_compile(). */
int khz_spec_addBody(khzSpec *spec, const khzBodySpec *b);

/* Appends a geom; returns its index or -1 when out of memory. */
int khz_spec_addGeom(khzSpec *spec, const khzGeomSpec *g);

/* Drops every body and geom from index nbody / ngeom on (used by loaders to
 * undo a partial load). */
void khz_spec_truncate(khzSpec *spec, int nbody, int ngeom);

/* Excludes contact between the geoms of two bodies (spec indices; MJCF
 * <contact><exclude>). Returns the exclusion's index or -1 (out of memory).
 * khz_spec_truncateExcludes drops them from index n on (loaders undoing a
 * partial load). */
int khz_spec_addExclude(khzSpec *spec, int body1, int body2);
int khz_spec_nexclude(const khzSpec *spec);
void khz_spec_truncateExcludes(khzSpec *spec, int n);

/* Equality constraints (MJCF <equality> connect and weld): a point of body1
 * held on a point of body2 (connect), and also body1's orientation held in
 * body2's frame (weld). Solved on the articulated bodies at every evaluation
 * of the accelerations, with Baumgarte drift correction (rt/src/constraint.c).
 * khz_spec_addEquality returns the constraint's index or -1 (out of memory);
 * khz_compile checks the bodies. */
typedef enum khzEqualityType {
  KHZ_EQ_CONNECT = 0,
  KHZ_EQ_WELD = 1,
  KHZ_EQ_JOINT = 2 /* the joint of body1 (a hinge or slide) follows a polynomial of body2's:
                      q1 - r1 = c0 + c1 (q2 - r2) + ... + c4 (q2 - r2)^4, r1 = pos1[0],
                      r2 = pos2[0]; body2 = 0: q1 = r1 + c0 (MJCF <equality><joint>,
                      URDF mimic) */
} khzEqualityType;
typedef struct khzEqualitySpec {
  int type;         /* khzEqualityType */
  int body1, body2; /* spec indices; body2 = 0: the world */
  double pos1[3];   /* the anchor in body1's frame (joint: pos1[0] = r1) */
  double pos2[3];   /* the point of body2 held on it, in body2's frame (the world's for 0;
                       joint: pos2[0] = r2) */
  double quat[4];   /* weld: body1's orientation in body2's frame (w x y z) */
  double polycoef[5]; /* joint: c0..c4 */
  int at_q0;        /* 1: pos2 and quat (joint: r1, r2) are computed at compile time from
                       the pose at q0 */
  char name[KHZ_NAME_MAX];
} khzEqualitySpec;
int khz_spec_addEquality(khzSpec *spec, const khzEqualitySpec *e);
int khz_spec_nequality(const khzSpec *spec);
void khz_spec_truncateEqualities(khzSpec *spec, int n);

/* Drops meshes from index nmesh on; khz_spec_nmesh counts them. */
void khz_spec_truncateMeshes(khzSpec *spec, int nmesh);
int khz_spec_nmesh(const khzSpec *spec);

/* Number of bodies including the world, and access for loaders. */
int khz_spec_nbody(const khzSpec *spec);
khzBodySpec *khz_spec_body(khzSpec *spec, int i);
int khz_spec_ngeom(const khzSpec *spec);
khzGeomSpec *khz_spec_geom(khzSpec *spec, int i);

/* Global options. */
void khz_spec_setGravity(khzSpec *spec, const double g[3]);
void khz_spec_setTimestep(khzSpec *spec, double h);
void khz_spec_setIntegrator(khzSpec *spec, khzIntegrator integrator);
/* The longest step the integrators take: khz_stepWith splits a longer h into
 * the fewest equal substeps no longer than h_max (0, the default: never).
 * Loaders set it for models whose own timestep is long (MJCF files at 10 ms:
 * contact and joint limits then act every h_max). */
void khz_spec_setMaxSubstep(khzSpec *spec, double h_max);

/* Contact settings; khz_spec_defaultContact fills the defaults (penalty method,
 * derived gains, gamma 0.85, mu 0.8, restitution 0.2, eps 1e-4 m/s). */
void khz_spec_defaultContact(khzContactOptions *c);
void khz_spec_setContact(khzSpec *spec, const khzContactOptions *c);

/* Sleep settings; khz_spec_defaultSleep fills the defaults (enabled, 0.01 m/s,
 * 0.5 s). */
void khz_spec_defaultSleep(khzSleepOptions *s);
void khz_spec_setSleep(khzSpec *spec, const khzSleepOptions *s);

/* Adds a triangle mesh (vertices in the mesh frame, counter-clockwise faces seen
 * from outside); the data are copied. Returns the mesh index or -1 (out of
 * memory). Validation (degenerate triangles, open meshes) happens in
 * khz_compile(). */
int khz_spec_addMesh(khzSpec *spec, const char *name, const double *vert, int nvert,
                     const int *face, int nface);

/* ----------------------------------------------------------------- model -- */

typedef struct khzModel {
  int nbody; /* including the world body 0 */
  int nq;    /* generalised positions */
  int nv;    /* generalised velocities (degrees of freedom) */
  int ngeom;
  int nmesh;
  int nmeshvert;  /* vertices of all meshes */
  int nmeshface;  /* triangles of all meshes */

  double gravity[3];
  double timestep;
  double max_substep; /* khz_stepWith splits a longer h into equal substeps (0: never) */

  /* contact */
  khzContactOptions contact; /* scene defaults (method, gains, gamma, mu, ...) */
  int npair_max;             /* capacity of simultaneous contact pairs */
  int max_points;            /* capacity of points per pair */
  size_t stack_bytes;        /* scratch stack khz_makeData gives when asked for 0 bytes */
  khzSleepOptions sleep;     /* islands and sleeping bodies (d->sleep_enabled switches it) */
  khzIntegrator integrator;
  double limit_hz;   /* natural frequency of the joint-limit spring (capped by 0.3 / h) */
  double limit_zeta; /* its damping ratio */

  /* bodies (nbody) */
  int *body_parent;
  int *body_root;           /* the tree's root body (child of the world) */
  int *body_treeend;        /* at a root: one past its tree's last body (a tree's bodies all lie
                               in [root, treeend); other trees' may lie between them) */
  double *body_subtreemass; /* mass of the body and all its descendants */
  double *body_mass;        /* kg */
  double *body_com;         /* 3 per body, body frame */
  double *body_inertia;     /* 9 per body, about the com, body frame */
  double *body_pos;         /* 3 per body: joint origin in the parent frame */
  double *body_quat;        /* 4 per body */
  double *body_rot;         /* 9 per body: the same origin as a rotation matrix */
  int *body_zeros;          /* the dynamics' structural zeros of each body, fixed at compile
                               (dynamics.c: massless, unrotated origin, principal inertia) */
  double *body_reach;       /* how far each body reaches from its origin (island.c's sleep
                               bound: its geoms, at least its mass), fixed at compile */

  /* joints, one per body (entry 0 unused) */
  int *jnt_type;            /* khzJointType */
  int *jnt_qadr;            /* first index into q */
  int *jnt_dofadr;          /* first index into qd */
  int *jnt_nq;
  int *jnt_nv;
  double *jnt_axis;         /* 3 per joint, unit */
  int *jnt_limited;
  double *jnt_range;        /* 2 per joint */
  double *jnt_vel_limit;

  /* dofs (nv) */
  int *dof_body;
  double *dof_damping;
  double *dof_friction;
  double *dof_meff;         /* effective inertia 1 / (M^-1)_ii at q0: scales the joint-limit
                               spring and the friction regularisation to the timestep */
  double *dof_armature;
  double *dof_effort;       /* 0 = unlimited */
  double *dof_stiffness;    /* joint spring of 1-dof joints, 0 = none */
  double *dof_springref;    /* its rest position */
  int passive_terms;        /* private (step.c): which of khz_passive's terms some joint has
                               (springs, Coulomb friction, limits), fixed at compile */
  int ntree_moving;         /* private (island.h): the trees that may sleep (khz_bodyCanSleep's
                               roots), fixed at compile: all asleep when d->body_sleep[0] is this */

  /* initial state */
  double *q0;               /* nq */
  double *qd0;              /* nv (zero unless the spec gave initial velocities) */

  /* geoms */
  int *geom_body;
  int *geom_type;
  double *geom_size;        /* 3 per geom */
  double *geom_pos;         /* 3 per geom */
  double *geom_quat;        /* 4 per geom */
  int *geom_visual;
  double *geom_rgba;        /* 4 per geom */
  double *geom_friction;
  char (*geom_mesh)[KHZ_PATH_MAX]; /* the file the mesh came from (informative) */
  int *geom_meshid;         /* index of the mesh (KHZ_GEOM_MESH), else -1 */
  int *geom_convex;
  unsigned *geom_contype;
  unsigned *geom_conaffinity;
  double *geom_gain;        /* 3 per geom: kp kv ki overrides, 0 = default */

  /* body pairs whose geoms never collide (khz_spec_addExclude) */
  int nexclude;
  int *exclude_body;        /* 2 per pair */

  /* equality constraints (khz_spec_addEquality) */
  int neq;
  int *eq_type;             /* khzEqualityType */
  int *eq_body;             /* 2 per constraint: body1, body2 (0 = world) */
  double *eq_pos;           /* 6 per constraint: the anchor in body1's frame, in body2's */
  double *eq_quat;          /* 4 per constraint: weld, body1's orientation in body2's frame */
  double *eq_poly;          /* 5 per constraint: joint, the polynomial's coefficients */
  char (*eq_name)[KHZ_NAME_MAX];

  /* meshes: vertices (3 doubles) and triangles (3 ints) of all meshes, concatenated */
  int *mesh_vertadr;
  int *mesh_vertnum;
  int *mesh_faceadr;
  int *mesh_facenum;
  double *mesh_vert;
  int *mesh_face;           /* vertex indices local to the mesh */
  char (*mesh_name)[KHZ_NAME_MAX];

  /* names */
  char (*body_name)[KHZ_NAME_MAX];
  char (*jnt_name)[KHZ_NAME_MAX];

  size_t nbuffer;
  void *buffer; /* every array above points into this one block */

  /* ---- collision data (rt/src/collision) ----
   * Built by khz_compile after the geoms: each geom's shape class and bounds,
   * the convex hulls of convex meshes, the BVHs and signed distance grids of
   * triangle meshes, the welded-body tables of the pair filters. Its sizes
   * depend on computation, so it is one block of its own (not in `buffer`),
   * freed by khz_deleteModel. */
  int *mesh_ndegenerate;  /* per mesh: zero-area triangles dropped at compile (informative;
                             points into the collision block) */
  size_t ncollision;      /* bytes of the block */
  void *collision;        /* khzColModel, rt/src/collision/collision.h */
} khzModel;

/* Validates and compiles a spec into a model. On error returns NULL and writes
 * a message naming the body/joint and the problem into err (if errsz > 0).
 * Nothing is allocated on failure. */
khzModel *khz_compile(const khzSpec *spec, char *err, size_t errsz);

/* Frees a model and nulls the caller's pointer. */
void khz_deleteModel(khzModel **m_p);

/* Name lookup; returns -1 when absent. */
int khz_name2body(const khzModel *m, const char *name);
int khz_name2joint(const khzModel *m, const char *name); /* returns the body id */

/* Eigen-decomposition of a symmetric 3x3 matrix (row-major) by cyclic Jacobi
 * rotations run to round-off: A = V diag(ev) V^T with V's columns the
 * eigenvectors (V may be NULL). Used to check inertias and find principal axes. */
void khz_eig3(const double A[9], double ev[3], double V[9]);

/* Human-readable joint type ("revolute", ...). */
const char *khz_jointTypeName(khzJointType t);

/* ------------------------------------------------------------------ data -- */

/* State fields, listed once: generates the struct members, copy, hash, save and
 * restore. X(type, name, count) with count an expression of the model m. */
#define KHZ_STATE_FIELDS(X)       \
  X(double, q, m->nq)             \
  X(double, qd, m->nv)            \
  X(double, tau, m->nv)           \
  X(double, xfrc, 6 * m->nbody)   \
  X(double, stick, m->nv)         \
  X(khzPairState, pair, m->npair_max) \
  X(int, body_sleep, m->nbody)    \
  X(double, body_idle, m->nbody)  \
  X(unsigned char, lcp_warm, KHZ_LCP_WARM_BYTES(m)) \
  X(double, rate_warm, 6 * m->nbody) \
  X(double, pair_turn, 4 * m->npair_max)

/* Bytes of the LCP method's warm-start record (state field lcp_warm; its
 * layout is private to rt/src/lcp/lcp.c, which checks it against this): the
 * complementary bases the last LCP step's pairs ended in, which the next
 * LCP step tries first (docs/lcp.md). All zero when there is none: the
 * penalty methods never write it. */
#define KHZ_LCP_WARM_BYTES(m) (16 + 64 * (size_t)(m)->npair_max)

/* State field rate_warm (6 per body): the tree limits' kept Lanczos start,
 * the Ritz vector of the last rate of the cluster each body was in
 * (rt/src/contact/penalty.c lanczos_rate); zero for a body in no cluster.
 * All zero without robots pressed by automatic-gain pairs. */

/* State field pair_turn (4 per pair slot): the rolling and torsional
 * friction's anchor (rt/src/contact/penalty.c rolling_torque), the
 * orientation of the pair's body[0] in body[1]'s frame at which the couple's
 * spring is unstretched, a unit quaternion (w, x, y, z); all zero when the
 * slot has none (free, not resting, or no rolling / torsional friction in
 * the scene), and then left out of the state hash. */

/* Per-pair contact state that persists from tick to tick (part of the state:
 * the integral term, the Fig. 2 phase and the friction anchors). A slot is
 * free when geom[0] < 0. */
#define KHZ_PAIR_ANCHORS 32
typedef struct khzPairState {
  int geom[2];                      /* geom[0] < geom[1]; -1 = free slot */
  int phase;                        /* khzContactPhase */
  int nanchor;
  double integral;                  /* I(t) = sum gamma^(t-i-1) max_y d(y, i) */
  double meff;                      /* effective mass at first contact (gain_mass effective) */
  double rot_inertia;               /* rotational effective inertia of the pair at first contact
                                       (rolling and torsional friction) */
  double offset;                    /* penetration left when an impact's impulses ended,
                                       released gradually rather than by the spring */
  double fn;                        /* normal force the pair held at the end of the last step */
  double kp;                        /* stiffness of the last step (automatic gains) */
  /* friction anchors, one per sticking point: the tangential spring's
   * stretch, the slip of body[0] against body[1] accumulated since the point
   * began sticking (clamped to the friction cone); body[1]'s frame */
  int anchor_feature[KHZ_PAIR_ANCHORS];  /* feature id of the sticking point */
  double anchor_pos[KHZ_PAIR_ANCHORS][3];  /* the point at the last step, body[1]'s frame */
  double anchor[KHZ_PAIR_ANCHORS][3];    /* stretch at the start of the step, body[1]'s frame */
  /* deepest-point method: 1 when the anchor's corner was not the deepest
   * point at the last step (its spring kept, anchor_pos where the corner
   * was when it last was); -1 when it was and its stretch was cut back to
   * the friction cone (sliding), 0 when it stuck */
  int anchor_idle[KHZ_PAIR_ANCHORS];
} khzPairState;

/* One contact point of a pair (outputs of the collision pass). */
typedef struct khzContactPoint {
  double pos[3];        /* world position at detection */
  double depth;         /* penetration depth along the pair normal, > 0 inside */
  double weight;        /* factor in [0, 1] on depth in eq. 1's count: 1, or for a point inside
                           a box or hull the part of the depth that lies below the plane of
                           the face the normal leaves through (docs/contact.md) */
  double local[2][3];   /* the point in the frames of body[0] and body[1] */
  int feature;          /* stable id of the generating feature (for friction anchors) */
  int round;            /* the side (0, 1) whose curved surface the point lies on (a sphere,
                           capsule or cylinder rim: it rolls over it), else -1 */
  double center[3];     /* round: the centre of curvature in that body's frame */
  double axis[3];       /* round, cylinder rim: the cylinder's axis in that body's frame */
  int bottom;           /* 1 when on the bottom of the intersection volume */
  double share;         /* bottom: 1 / (bottom points within KHZ_CLUSTER of it): near-duplicates
                           count once together in eq. 1's count r (times the depth) */
  double force[3];      /* world force on body[0] at the last evaluation (body[1]: minus) */
  double force_implicit; /* normal force of the implicit part, constant over the step (N) */
} khzContactPoint;

/* One pair of geoms in contact this tick. */
typedef struct khzContact {
  int geom[2], body[2];
  double normal[3];     /* unit, world; points toward body[0] (away from body[1]) */
  int point_adr;        /* first point in d->cpoint */
  int npoint;
  int deepest;          /* index into d->cpoint */
  int slot;             /* index into d->pair (the persistent state) */
  /* filled by the contact method */
  int nbottom;          /* points on the bottom of the intersection volume */
  double kp, kv, ki;    /* the gains used for this pair */
  double kp_implicit;   /* stiffness and damping applied implicitly at the end of the step */
  double kv_implicit;   /* (an automatic pair's gains beyond the explicit integrator's limit) */
  double force_implicit[3]; /* tangential force of the implicit part on body[0] (world, N),
                               constant over the step, spread over the bottom points */
  double implicit_at[3]; /* where the implicit part's tangential rows were taken (world): the
                            centroid of the bottom points at the step's start */
  double mu;            /* Coulomb coefficient used for this pair */
} khzContact;

/* doubles per body of khzData.cinert */
#define KHZ_CINERT 12

typedef struct khzData {
  /* state: what a snapshot holds (plus time); `stick` holds the friction anchors */
  double time;
#define KHZ_X_MEMBER(type, name, count) type *name;
  KHZ_STATE_FIELDS(KHZ_X_MEMBER)
#undef KHZ_X_MEMBER

  /* the step context: the step size of the current (or last) step; the
   * model's timestep after khz_makeData / khz_resetData */
  double timestep;
  double step_timestep; /* the whole step's h when it runs in substeps (max_substep); else
                           timestep */
  /* sleeping (state fields body_sleep, body_idle): body_sleep[b] is 0 while
   * b is awake, else 1 + the island's label (its smallest root body);
   * body_idle[b] the seconds b's tree has moved slower than the threshold.
   * sleep_enabled switches sleeping between ticks (m->sleep.enabled after a
   * reset); turning it off wakes every body at the next step. */
  int sleep_enabled;

  /* outputs of the last step / khz_forward() */
  double *qdd;            /* nv */
  double *tau_applied;    /* nv: commanded torque after clamping */
  double *tau_passive;    /* nv: damping + friction + limits */
  double *xpos;           /* 3 per body: world position of the body origin */
  double *xrot;           /* 9 per body: world rotation (row-major) */
  double *xcom;           /* 3 per body: world position of the com */
  double *cvel;           /* 6 per body: [angular velocity; velocity of the body origin],
                             world axes */

  /* contact (outputs of the collision pass, valid until the next step) */
  int contact_method;     /* khzContactMethod in use; switchable between ticks */
  double lcp_time_limit;  /* LCP method: seconds of wall time one step may spend in its
                             collision passes and Lemke solves before it gives up (the step
                             falls back to the penalty method, or keeps its last solved
                             re-check pass); 0 = no bound. The realtime loop sets half the
                             period; lockstep and fast runs leave it 0 (docs/lcp.md) */
  long lcp_timeouts;      /* LCP steps that reached lcp_time_limit (the first pass: also
                             counted as KHZ_WARN_LCP) */
  struct khzPegStats *peg_stats; /* private (rt/src/peg/peg.h): the counts of the last PEG
                             step (khz_pegLastStats) */
  int ncontact;
  khzContact *contact;    /* m->npair_max */
  int ncpoint;
  khzContactPoint *cpoint;/* m->npair_max * m->max_points */
  int ncontact_asleep;    /* after a step: the first ncontact_asleep pairs of d->contact are
                             those of sleeping islands, as they were when the island fell
                             asleep (not collided again; docs/sleeping.md); the rest follow,
                             ordered by geom pair */
  int contact_shift;      /* private (island.c): during a step d->contact is advanced past the
                             sleeping pairs so that the contact stages see the awake ones */
  int ncontact_kept;      /* private: d->ncontact at the end of the last step when some body
                             slept (khz_collide keeps the sleeping pairs among them) */
  int napart;             /* private (pairs.c): the geom pairs the last collision pass found
                             apart along a kept direction (khz_narrowphaseCoherent), ascending */
  int apart_half;         /* private: the half of apart_pair and apart_axis that holds them */
  uint64_t *apart_pair;   /* private: 2 x khz_collisionPairCap: (g0 << 32 | g1) */
  double *apart_axis;     /* private: 3 per apart_pair: the direction, world, toward g0 */
  /* contact reuse (khz_contactReuse; off unless it is called): a pair in
   * contact whose points have moved less than reuse_bound (m) relative to
   * its body[0]'s geom since its last narrow phase keeps that pass's
   * normal, points and features, its depths carried to first order
   * (docs/benchmarks.md, col27). Not state: a restore, a reset or a copy
   * empties it (the next pass runs every narrow phase), so a restored run
   * with it on steps differently from the run it came from. */
  double reuse_bound;     /* m; 0 = off */
  int reuse_count;        /* pairs reused by the last collision pass */
  int reuse_n;            /* private (pairs.c): the pairs kept by the last pass, ascending */
  int reuse_half;         /* private: the half of the reuse arrays that holds them */
  struct khzReusePair *reuse_pair; /* private: 2 x m->npair_max, or NULL */
  struct khzReusePoint *reuse_point; /* private: 2 x m->npair_max x m->max_points */
  int sweep_n;            /* private (broadphase.c): the boxes sweep_order holds, 0 = none yet */
  int *sweep_order;       /* private: the last broad phase's sweep order of the bounded geoms
                             (their indices in khzColModel.bounded), where the next sort starts;
                             a hint only: any permutation gives the same sorted order */
  int quiet_ready;        /* private (pairs.c): 1 when the last collision pass had every body
                             with a collidable geom asleep or welded to the world and its broad
                             phase did not overflow: the next such pass skips the broad phase
                             (nothing it finds is collided); cleared by a restore, a reset, a
                             wake */

  /* warnings */
  int warning[KHZ_NWARNING];
  int warning_body;       /* body of the last KHZ_WARN_BADSTATE, -1 if none */

  /* scratch for the dynamics algorithms (body-indexed) */
  double *vtree;          /* 6 per body: spatial velocity at the tree origin, world axes */
  double *cinert;         /* KHZ_CINERT (12) per body: the spatial inertia at the tree
                             origin, world axes, as the com relative to that origin (3)
                             and the rotational inertia about the com (9, row-major) */
  double *cbias;          /* 6 per body */
  double *IA;             /* 36 per body: after ABA the articulated inertias,
                             transposed (column-major); after khz_compositeInertia
                             the composite ones, row-major */
  double *pA;             /* 6 per body */
  double *U;              /* 36 per body */
  double *Dinv;           /* 36 per body */
  double *u;              /* 6 per body */
  double *acc;            /* 6 per body */
  double *fext;           /* 6 per body, body coordinates */
  double *S;              /* 36 per body: motion subspace at the tree origin, world axes */
  double *kin_q;          /* private (dynamics.c): nq, the q of the last forward pass */
  double *kin_qd;         /* private: nv, its qd */
  double *tree_resp;      /* private (penalty.c): the tree limits' response matrices L of
                             this step's clusters, (6 nb)^2 each (khz_penaltyTreeRespDoubles) */
  int *tree_resp_at;      /* private: 3 per body: its cluster's L's offset in tree_resp
                             (-1: none), its place there, the cluster's body count */
  int tree_resp_valid;    /* private: 1 while tree_resp holds L of the step's damped
                             inertias (the implicit rows take W from it) */
  double *IA_handed;      /* private (dynamics.c): 36 per body, the articulated inertia each
                             body handed its parent, IA - U D^-1 U^T (transposed), in the
                             last khz_abaInertiasHeld */
  double aba_held_h;      /* private: the h of that pass */
  int aba_held;           /* private: 1 + stiff_only while IA, U, Dinv and IA_handed hold
                             that pass's inertias at the forward pass's q, 3 while U and
                             Dinv hold khz_abaInertias' (a forward pass, a wake, any other
                             ABA clears it) */
  int kin_valid;          /* private: 2 when the forward pass's fields hold (kin_q, kin_qd)
                             for every body, 1 positions only, 0 unknown */

  struct khzPool *pool;   /* private (pool.c): the step's worker threads (khz_setThreads), or
                             NULL: one thread */

  /* mark/free scratch stack for per-step temporaries */
  size_t stack_size;
  size_t stack_top;
  unsigned char *stack;

  size_t nbuffer;
  void *buffer;
} khzData;

/* Allocates a data for the model, reset to the model's initial state.
 * stack_bytes = 0 chooses a size sufficient for every algorithm here. */
khzData *khz_makeData(const khzModel *m, size_t stack_bytes);

/* Frees a data and nulls the caller's pointer. */
void khz_deleteData(khzData **d_p);
/* Contact reuse on (bound > 0, meters: see khzData.reuse_bound) or off (0).
 * Allocates its cache at the first call with a bound (not in a tick); 0 on
 * success, -1 when out of memory (then off). */
int khz_contactReuse(const khzModel *m, khzData *d, double bound);

/* Threads for the step (1, the default: the caller's only). With n > 1,
 * n - 1 workers take a share of the step's independent work (the narrow
 * phase's pairs); every result is computed as with one thread and summed or
 * ordered in the same order, so the state's bits do not depend on n. Not in
 * a tick: it starts (or joins) threads and allocates their scratch. The
 * workers inherit the caller's scheduling class and CPU set; between steps
 * they spin for 2 ms, then sleep on a futex. 0 on success, -1 (the data
 * left at 1 thread) when n is outside 1..16 or a thread or its scratch
 * cannot be had. khz_deleteData joins them. */
int khz_setThreads(const khzModel *m, khzData *d, int n);
int khz_threads(const khzData *d);
/* pins worker `thread` (1..n-1) to a CPU; 0 on success */
int khz_threadsPin(khzData *d, int thread, int cpu);

/* Resets the state to q0 and qd0, zero torques and wrenches, time 0. */
void khz_resetData(const khzModel *m, khzData *d);

/* Copies the state fields (and time) bit-exactly; when some body sleeps,
 * also dst's kinematics (a step does not recompute a sleeping body's pose). */
void khz_copyState(const khzModel *m, khzData *dst, const khzData *src);

/* 64-bit FNV-1a hash of the state fields and time (body_sleep, body_idle
 * and lcp_warm only when some entry is non-zero: without sleeping or the LCP
 * method, the hash of before those fields). */
uint64_t khz_hashState(const khzModel *m, const khzData *d);
/* The same hash of a state that khz_saveState wrote (khz_stateSize bytes). */
uint64_t khz_hashSavedState(const khzModel *m, const void *saved);

/* Size in bytes of a serialised state; khz_saveState writes exactly that. */
size_t khz_stateSize(const khzModel *m);
void khz_saveState(const khzModel *m, const khzData *d, void *out);
void khz_restoreState(const khzModel *m, khzData *d, const void *in);

/* Sleeping bodies: 1 when body b sleeps; khz_wake wakes b's island (b < 0:
 * every island). Call khz_wake after writing q of a sleeping body (a written
 * velocity, torque or wrench wakes it by itself at the next step). */
int khz_bodySleeping(const khzModel *m, const khzData *d, int b);
/* 1 when b is the root of a tree that may sleep: some joint of the tree
 * moves (a free body; a robot, its root welded to the world or not) */
int khz_bodyCanSleep(const khzModel *m, int b);
void khz_wake(const khzModel *m, khzData *d, int b);

/* Scratch stack: returns NULL (and counts KHZ_WARN_STACK) when full. */
void *khz_stackAlloc(khzData *d, size_t bytes);
size_t khz_stackMark(const khzData *d);
void khz_stackFree(khzData *d, size_t mark);

/* ------------------------------------------------------------- dynamics -- */

/* Forward kinematics at d->q, d->qd: xpos, xrot, xcom, cvel, S. */
void khz_kinematics(const khzModel *m, khzData *d);

/* How far equality constraint i is from holding at the current kinematics
 * (after khz_kinematics or a step): |x1 - x2| in m, and for a weld the angle
 * of the orientation error in rad into *rot (rot may be NULL). */
double khz_equalityResidual(const khzModel *m, const khzData *d, int i, double *rot);

/* Articulated-body algorithm: qdd = FD(q, qd, tau) with gravity and d->xfrc.
 * Uses d's scratch; q, qd, tau, qdd may be any arrays (qdd is written). */
void khz_aba(const khzModel *m, khzData *d, const double *q, const double *qd,
             const double *tau, double *qdd);

/* Recursive Newton-Euler: tau = ID(q, qd, qdd) with gravity and d->xfrc,
 * armature included. */
void khz_rnea(const khzModel *m, khzData *d, const double *q, const double *qd,
              const double *qdd, double *tau);

/* Composite-rigid-body algorithm: joint-space mass matrix M (nv x nv, row-major,
 * armature on the diagonal). */
void khz_crba(const khzModel *m, khzData *d, const double *q, double *M);

/* Point Jacobians at the current kinematics (call khz_kinematics first): the
 * world velocity of the world point p rigidly attached to body b is
 * jacp * qd, the body's angular velocity jacr * qd. Each 3 x nv, row-major;
 * either may be NULL. */
void khz_jacobian(const khzModel *m, const khzData *d, int body, const double p[3],
                  double *jacp, double *jacr);

/* Passive joint forces at (q, qd): viscous damping, Coulomb friction and the
 * joint-limit spring-damper. Coulomb friction on 1-dof joints sticks with a stiff
 * spring-damper anchored at d->stick (the position where sticking began) and
 * slides at the friction torque once the spring would exceed it; multi-dof joints
 * use a tanh-regularised Coulomb law. khz_step() moves the anchors. */
void khz_passive(const khzModel *m, const khzData *d, const double *q, const double *qd,
                 double *tau);

/* Sets the friction anchors to the current positions (call after writing d->q). */
void khz_resetStick(const khzModel *m, khzData *d);

/* Forward dynamics at the current state: clamps d->tau into tau_applied, computes
 * passive forces, qdd and kinematics. */
void khz_forward(const khzModel *m, khzData *d);

/* Advances the state by one step of h seconds with the model's integrator
 * (the step context: d->timestep = h for everything the step computes). A
 * non-finite result is rolled back and counted (KHZ_WARN_BADSTATE,
 * d->warning_body). h must be positive; the real-time loop passes its rate's
 * period, everything else the model's timestep (khz_step). An h longer than
 * the model's max_substep is taken as that many equal substeps, each a full
 * step (collision, contact, integration). */
void khz_stepWith(const khzModel *m, khzData *d, double h);

/* khz_stepWith(m, d, m->timestep): one step of the scene's timestep. */
void khz_step(const khzModel *m, khzData *d);

/* qout = q (+) h * v: integrates positions on the joint manifolds (quaternions
 * by the exponential map, renormalised). */
void khz_integratePos(const khzModel *m, double *qout, const double *q, const double *v,
                      double h);

/* ------------------------------------------------------------- contact -- */

/* Collision detection at the current kinematics (call khz_kinematics first):
 * broad phase, narrow phase and the persistent pair slots. Fills d->contact /
 * d->cpoint with every pair of geoms in contact, their points of the
 * intersection volume with depths, the deepest point and the contact normal
 * (Drumwright eq. 4), and assigns each pair its slot in d->pair (new pairs get
 * a free slot with phase KHZ_PHASE_NONE; slots of pairs no longer in contact are
 * freed and reset). Never allocates; when a buffer is full it keeps what fits
 * and counts KHZ_WARN_CONTACTFULL. Returns the number of pairs. */
int khz_collide(const khzModel *m, khzData *d);

/* Human-readable contact method name, and its inverse (-1 when unknown). */
const char *khz_contactMethodName(khzContactMethod method);
/* NULL when the method can run this model, else why not (the LCP method does
 * not solve equality constraints) */
const char *khz_contactMethodRefusal(const khzModel *m, int method);
int khz_contactMethodFromName(const char *name);

/* Short name of a counted warning ("stack", "badstate", ...; NULL when out
 * of range): the keys of the CLIs' JSON and the clients' WARNINGS. */
const char *khz_warningName(int warning);

/* Kinetic and potential (gravity) energy at the current kinematics. */
void khz_energy(const khzModel *m, khzData *d, double *kinetic, double *potential);

#ifdef __cplusplus
}
#endif
#endif /* KHZ_KHZ_H */
