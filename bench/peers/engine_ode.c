/* engine_ode.c — the benchScene in the Open Dynamics Engine (ODE 0.16).
 *
 * ODE as its manual and demos recommend it for robotics, nothing tuned per
 * scene:
 *   - dWorldQuickStep (projected Gauss-Seidel / SOR LCP, ODE's default
 *     relaxation 1.3) with 50 iterations rather than the default 20: the
 *     big-matrix dWorldStep is O(n^3) in the constraint rows and did not
 *     finish one simulated second of a 960-body pile in five minutes;
 *   - global ERP 0.2 (ODE's default) and CFM 1e-5 (the manual's suggested
 *     softness; the double-precision default, 1e-10, is close to rigid and
 *     ill-conditioned with many contacts), the same soft ERP / CFM on every
 *     contact;
 *   - contacts: dCollide up to 8 points per geom pair (a box on a face needs
 *     4), the friction pyramid dContactApprox1 with the scene's mu, bounce with
 *     the scene's restitution above 0.1 m/s of approach, a 1 mm surface layer
 *     and corrections limited to 0.1 m/s (as in ODE's demo_boxstack) so that
 *     resting contacts neither chatter nor pop apart;
 *   - broad phase: one hash space (dHashSpace) for bodies and static shapes;
 *   - no auto-disable and no damping: bodies never sleep, so the resting
 *     kinetic energy the driver measures is what the solver leaves, and the
 *     energy of free motion is not bled away.
 * Collision filter: two geoms do not collide when they share a body, are both
 * static, or belong to a parent and a child joined by a hinge (khz's and
 * MuJoCo's rule).
 *
 * ODE keeps library-wide state: dInitODE2 / dCloseODE are reference counted
 * over the worlds alive, so worlds can be created and destroyed in sequence
 * (one thread at a time; the counter is not atomic).
 */
#include <assert.h>
#include <math.h>
#include <ode/ode.h>
#include <stdio.h>
#include <stdlib.h>

#include "peer.h"

#define ODE_QUICKSTEP_ITERATIONS 50
#define ODE_ERP 0.2
#define ODE_CFM 1e-5
#define ODE_MAX_CONTACTS_PER_PAIR 8
#define ODE_BOUNCE_MIN_SPEED 0.1     /* m/s: slower impacts do not bounce */
#define ODE_SURFACE_LAYER 0.001      /* m of penetration left uncorrected */
#define ODE_MAX_CORRECTING_VEL 0.1   /* m/s */

typedef struct odeWorld {
  dWorldID world;
  dSpaceID space;
  dJointGroupID contacts; /* this step's contact joints, emptied after it */
  dSurfaceParameters surface;
  double timestep;
  int nbody;
  dBodyID *body; /* in the scene's order */
} odeWorld;

/* ------------------------------------------------------ library state -- */

static int ode_worlds_alive;

static void ode_library_release(void) {
  if (--ode_worlds_alive == 0) dCloseODE();
}

/* 1 with the library initialised for this thread (release it later), 0 with
 * err written and nothing held */
static int ode_library_acquire(char *err, int errsz) {
  if (ode_worlds_alive == 0 && !dInitODE2(0)) {
    snprintf(err, (size_t)errsz, "ode: dInitODE2 failed");
    return 0;
  }
  ode_worlds_alive++;
  /* the calling thread needs ODE's per-thread data, collision included */
  if (!dAllocateODEDataForThread((unsigned)dAllocateMaskAll)) {
    snprintf(err, (size_t)errsz, "ode: dAllocateODEDataForThread failed");
    ode_library_release();
    return 0;
  }
  /* dReal is double in the headers we compiled against; a single-precision
   * library would read every dReal we pass as garbage */
  if (!dCheckConfiguration("ODE_double_precision")) {
    snprintf(err, (size_t)errsz, "ode: the library is not built in double precision (%s)",
             dGetConfiguration());
    ode_library_release();
    return 0;
  }
  return 1;
}

/* --------------------------------------------------------- validation -- */

static int finite3(const double v[3]) {
  return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]);
}

static int usable_quat(const double q[4]) {
  double n = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
  return isfinite(n) && n > 1e-12;
}

static int check_shape(const benchShape *s, int is_static, const char *owner, char *err,
                       int errsz) {
  int sizes = 0; /* how many of size[] the type uses */
  switch (s->type) {
    case BENCH_PLANE:
      if (!is_static) {
        snprintf(err, (size_t)errsz, "ode: %s: a plane must be static", owner);
        return 0;
      }
      break;
    case BENCH_SPHERE: sizes = 1; break;
    case BENCH_BOX: sizes = 3; break;
    case BENCH_CAPSULE:
    case BENCH_CYLINDER: sizes = 2; break;
    default:
      snprintf(err, (size_t)errsz, "ode: %s: unsupported shape type %d", owner, (int)s->type);
      return 0;
  }
  for (int i = 0; i < sizes; i++)
    if (!(s->size[i] > 0) || !isfinite(s->size[i])) {
      snprintf(err, (size_t)errsz, "ode: %s: shape size[%d] = %g must be positive", owner, i,
               s->size[i]);
      return 0;
    }
  if (!finite3(s->pos) || !usable_quat(s->quat)) {
    snprintf(err, (size_t)errsz, "ode: %s: shape pose is not finite or its quaternion is zero",
             owner);
    return 0;
  }
  return 1;
}

/* a parent chain that never reaches a free body would make a closed loop of
 * hinges, which the scene format cannot mean */
static int reaches_free_root(const benchScene *sc, int b) {
  for (int hops = 0; hops <= sc->nbody; hops++) {
    if (sc->body[b].parent < 0) return 1;
    b = sc->body[b].parent;
  }
  return 0;
}

static int check_body(const benchScene *sc, int b, char *err, int errsz) {
  const benchBody *bd = &sc->body[b];
  if (!(bd->mass > 0) || !(bd->inertia[0] > 0) || !(bd->inertia[1] > 0) ||
      !(bd->inertia[2] > 0) || !isfinite(bd->mass) || !finite3(bd->inertia)) {
    snprintf(err, (size_t)errsz, "ode: body %d (%s): mass and principal inertias must be positive",
             b, bd->name);
    return 0;
  }
  if (!finite3(bd->pos) || !usable_quat(bd->quat) || !finite3(bd->vel) || !finite3(bd->angvel)) {
    snprintf(err, (size_t)errsz, "ode: body %d (%s): initial state is not finite", b, bd->name);
    return 0;
  }
  if (bd->parent >= sc->nbody || bd->parent == b ||
      (bd->parent >= 0 && !reaches_free_root(sc, b))) {
    snprintf(err, (size_t)errsz, "ode: body %d (%s): parent %d is not another body of a tree",
             b, bd->name, bd->parent);
    return 0;
  }
  if (bd->parent >= 0 && (!finite3(bd->joint_anchor) || !finite3(bd->joint_axis))) {
    snprintf(err, (size_t)errsz, "ode: body %d (%s): hinge anchor or axis is not finite", b,
             bd->name);
    return 0;
  }
  if (bd->nshape < 0 || bd->shape0 < 0 || bd->shape0 + bd->nshape > sc->nshape) {
    snprintf(err, (size_t)errsz, "ode: body %d (%s): shapes [%d, %d) outside the scene's %d", b,
             bd->name, bd->shape0, bd->shape0 + bd->nshape, sc->nshape);
    return 0;
  }
  char owner[96];
  snprintf(owner, sizeof owner, "body %d (%s)", b, bd->name);
  for (int s = bd->shape0; s < bd->shape0 + bd->nshape; s++)
    if (!check_shape(&sc->shape[s], 0, owner, err, errsz)) return 0;
  return 1;
}

static int check_scene(const benchScene *sc, char *err, int errsz) {
  if (!(sc->timestep > 0) || !isfinite(sc->timestep) || !finite3(sc->gravity)) {
    snprintf(err, (size_t)errsz, "ode: scene %s: timestep must be positive, gravity finite",
             sc->name);
    return 0;
  }
  if (!(sc->mu >= 0) || !(sc->restitution >= 0) || sc->restitution > 1) {
    snprintf(err, (size_t)errsz, "ode: scene %s: mu must be >= 0, restitution in [0, 1]",
             sc->name);
    return 0;
  }
  if (sc->nbody < 0 || sc->nshape < 0 || sc->nstatic < 0) {
    snprintf(err, (size_t)errsz, "ode: scene %s: negative counts", sc->name);
    return 0;
  }
  for (int b = 0; b < sc->nbody; b++)
    if (!check_body(sc, b, err, errsz)) return 0;
  for (int s = 0; s < sc->nstatic; s++) {
    char owner[96];
    snprintf(owner, sizeof owner, "static shape %d", s);
    if (!check_shape(&sc->static_shape[s], 1, owner, err, errsz)) return 0;
  }
  return 1;
}

/* ------------------------------------------------------------- shapes -- */

static void unit_quat(const double q[4], dQuaternion out) {
  double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  for (int i = 0; i < 4; i++) out[i] = q[i] / n;
}

/* a plane through the shape's origin whose normal is the shape's local +z,
 * as ODE's a x + b y + c z = d */
static dGeomID create_plane(dSpaceID space, const benchShape *s) {
  dQuaternion q;
  unit_quat(s->quat, q);
  double w = q[0], x = q[1], y = q[2], z = q[3];
  double n[3] = {2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)};
  double d = n[0] * s->pos[0] + n[1] * s->pos[1] + n[2] * s->pos[2];
  return dCreatePlane(space, n[0], n[1], n[2], d);
}

/* a bounded shape, centred on its own frame; ODE's capsule and cylinder have
 * their axes along local z like the scene's and take full lengths */
static dGeomID create_solid(dSpaceID space, const benchShape *s) {
  switch (s->type) {
    case BENCH_SPHERE: return dCreateSphere(space, s->size[0]);
    case BENCH_BOX:
      return dCreateBox(space, 2 * s->size[0], 2 * s->size[1], 2 * s->size[2]);
    case BENCH_CAPSULE: return dCreateCapsule(space, s->size[0], 2 * s->size[1]);
    case BENCH_CYLINDER: return dCreateCylinder(space, s->size[0], 2 * s->size[1]);
    default: return NULL; /* planes are static only; check_shape rejected the rest */
  }
}

static void add_body_shape(dSpaceID space, dBodyID body, const benchShape *s) {
  dGeomID g = create_solid(space, s);
  dQuaternion q;
  unit_quat(s->quat, q);
  dGeomSetBody(g, body); /* offsets are relative to the body, set after */
  dGeomSetOffsetPosition(g, s->pos[0], s->pos[1], s->pos[2]);
  dGeomSetOffsetQuaternion(g, q);
}

static void add_static_shape(dSpaceID space, const benchShape *s) {
  if (s->type == BENCH_PLANE) {
    create_plane(space, s);
    return;
  }
  dGeomID g = create_solid(space, s);
  dQuaternion q;
  unit_quat(s->quat, q);
  dGeomSetPosition(g, s->pos[0], s->pos[1], s->pos[2]);
  dGeomSetQuaternion(g, q);
}

/* ------------------------------------------------------------- bodies -- */

static dBodyID create_body(dWorldID world, const benchBody *bd, int sleep) {
  dBodyID body = dBodyCreate(world);
  dMass mass;
  /* the body frame is the principal frame at the centre of mass: no offset,
   * no products of inertia */
  dMassSetParameters(&mass, bd->mass, 0, 0, 0, bd->inertia[0], bd->inertia[1], bd->inertia[2],
                     0, 0, 0);
  dBodySetMass(body, &mass);
  dQuaternion q;
  unit_quat(bd->quat, q);
  dBodySetPosition(body, bd->pos[0], bd->pos[1], bd->pos[2]);
  dBodySetQuaternion(body, q);
  dBodySetLinearVel(body, bd->vel[0], bd->vel[1], bd->vel[2]);
  dBodySetAngularVel(body, bd->angvel[0], bd->angvel[1], bd->angvel[2]);
  dBodySetAutoDisableFlag(body, sleep);
  return body;
}

/* ODE takes the anchor and axis in world coordinates at the bodies' current
 * poses, which are the scene's initial ones: there the hinge angle is zero */
static void create_hinge(dWorldID world, dBodyID parent, dBodyID child, const benchBody *bd) {
  dJointID hinge = dJointCreateHinge(world, NULL);
  dJointAttach(hinge, parent, child);
  dJointSetHingeAnchor(hinge, bd->joint_anchor[0], bd->joint_anchor[1], bd->joint_anchor[2]);
  dJointSetHingeAxis(hinge, bd->joint_axis[0], bd->joint_axis[1], bd->joint_axis[2]);
}

/* -------------------------------------------------------------- world -- */

static void configure_world(odeWorld *w, const benchScene *sc) {
  dWorldSetGravity(w->world, sc->gravity[0], sc->gravity[1], sc->gravity[2]);
  dWorldSetERP(w->world, ODE_ERP);
  dWorldSetCFM(w->world, ODE_CFM);
  dWorldSetQuickStepNumIterations(w->world, ODE_QUICKSTEP_ITERATIONS);
  dWorldSetContactSurfaceLayer(w->world, ODE_SURFACE_LAYER);
  dWorldSetContactMaxCorrectingVel(w->world, ODE_MAX_CORRECTING_VEL);
  dWorldSetAutoDisableFlag(w->world, 0);
  dWorldSetLinearDamping(w->world, 0);
  dWorldSetAngularDamping(w->world, 0);

  dSurfaceParameters *s = &w->surface;
  s->mode = dContactApprox1 | dContactSoftERP | dContactSoftCFM;
  if (sc->restitution > 0) s->mode |= dContactBounce;
  s->mu = sc->mu;
  s->soft_erp = ODE_ERP;
  s->soft_cfm = ODE_CFM;
  s->bounce = sc->restitution;
  s->bounce_vel = ODE_BOUNCE_MIN_SPEED;
}

static void ode_destroy(void *handle) {
  odeWorld *w = handle;
  if (!w) return;
  /* contact joints first (dWorldDestroy only deactivates grouped joints),
   * then the space with its geoms, then the world with bodies and hinges */
  if (w->contacts) dJointGroupDestroy(w->contacts);
  if (w->space) dSpaceDestroy(w->space);
  if (w->world) dWorldDestroy(w->world);
  free(w->body);
  free(w);
  ode_library_release();
}

static void *ode_create_with(const benchScene *sc, int sleep, char *err, int errsz) {
  if (!check_scene(sc, err, errsz)) return NULL;
  if (!ode_library_acquire(err, errsz)) return NULL;
  /* QuickStep reorders its constraints with ODE's library-wide random
   * generator: seeding it here makes every world repeat itself run to run */
  dRandSetSeed(0);
  odeWorld *w = calloc(1, sizeof *w);
  if (w) w->body = calloc((size_t)sc->nbody + 1, sizeof *w->body);
  if (!w || !w->body) {
    free(w);
    ode_library_release();
    snprintf(err, (size_t)errsz, "ode: out of memory for %d bodies", sc->nbody);
    return NULL;
  }
  w->nbody = sc->nbody;
  w->timestep = sc->timestep;
  w->world = dWorldCreate();
  w->space = dHashSpaceCreate(NULL);
  w->contacts = dJointGroupCreate(0);
  configure_world(w, sc);

  for (int b = 0; b < sc->nbody; b++) {
    const benchBody *bd = &sc->body[b];
    w->body[b] = create_body(w->world, bd, sleep);
    for (int s = bd->shape0; s < bd->shape0 + bd->nshape; s++)
      add_body_shape(w->space, w->body[b], &sc->shape[s]);
  }
  /* hinges after all bodies: a parent may come after its child in the list */
  for (int b = 0; b < sc->nbody; b++)
    if (sc->body[b].parent >= 0)
      create_hinge(w->world, w->body[sc->body[b].parent], w->body[b], &sc->body[b]);
  for (int s = 0; s < sc->nstatic; s++) add_static_shape(w->space, &sc->static_shape[s]);
  return w;
}

static void *ode_create(const benchScene *sc, char *err, int errsz) {
  return ode_create_with(sc, 0, err, errsz);
}

/* ODE's auto-disable with its default thresholds (10 steps below 0.01 m/s
 * and 0.01 rad/s, the whole island at once); a contact re-enables a body. */
static void *ode_create_sleep(const benchScene *sc, char *err, int errsz) {
  return ode_create_with(sc, 1, err, errsz);
}

/* --------------------------------------------------------------- step -- */

static void on_near_pair(void *data, dGeomID a, dGeomID b) {
  odeWorld *w = data;
  dBodyID body_a = dGeomGetBody(a), body_b = dGeomGetBody(b);
  if (body_a == body_b) return; /* one body's own shapes, or static with static */
  if (body_a && body_b && dAreConnectedExcluding(body_a, body_b, dJointTypeContact)) return;

  dContactGeom points[ODE_MAX_CONTACTS_PER_PAIR];
  int n = dCollide(a, b, ODE_MAX_CONTACTS_PER_PAIR, points, sizeof points[0]);
  for (int i = 0; i < n; i++) {
    dContact contact = {.surface = w->surface, .geom = points[i]};
    dJointID joint = dJointCreateContact(w->world, w->contacts, &contact);
    dJointAttach(joint, body_a, body_b);
  }
}

static void ode_step(void *handle) {
  odeWorld *w = handle;
  dSpaceCollide(w->space, w, on_near_pair);
  dWorldQuickStep(w->world, w->timestep);
  dJointGroupEmpty(w->contacts);
}

static void ode_apply_force(void *handle, int body, const double force[3],
                            const double point[3]) {
  odeWorld *w = handle;
  assert(body >= 0 && body < w->nbody);
  /* ODE clears force accumulators after every step: this step only */
  dBodyAddForceAtPos(w->body[body], force[0], force[1], force[2], point[0], point[1], point[2]);
}

static void ode_get_state(void *handle, int body, double pos[3], double quat[4], double vel[3],
                          double angvel[3]) {
  odeWorld *w = handle;
  assert(body >= 0 && body < w->nbody);
  dBodyID b = w->body[body];
  /* the body frame is the centre-of-mass frame; ODE's quaternion is w x y z
   * and its velocities are in the world */
  const dReal *p = dBodyGetPosition(b), *q = dBodyGetQuaternion(b);
  const dReal *v = dBodyGetLinearVel(b), *omega = dBodyGetAngularVel(b);
  for (int i = 0; i < 3; i++) pos[i] = p[i], vel[i] = v[i], angvel[i] = omega[i];
  for (int i = 0; i < 4; i++) quat[i] = q[i];
}

const benchEngine bench_engine_ode = {
    .name = "ode",
    .settings = "dWorldQuickStep 50 iterations (SOR 1.3), ERP 0.2, CFM 1e-5; contacts: "
                "dContactApprox1 pyramid, soft ERP 0.2 / CFM 1e-5, <= 8 per pair, bounce above "
                "0.1 m/s, surface layer 1 mm, max correcting vel 0.1 m/s; hash space; "
                "no auto-disable, no damping",
    .create = ode_create,
    .apply_force = ode_apply_force,
    .step = ode_step,
    .get_state = ode_get_state,
    .destroy = ode_destroy,
};

const benchEngine bench_engine_ode_sleep = {
    .name = "ode-sleep",
    .settings = "as ode, with ODE's auto-disable on at its default thresholds (a whole island "
                "below 0.01 m/s and 0.01 rad/s for 10 steps is disabled until touched)",
    .create = ode_create_sleep,
    .apply_force = ode_apply_force,
    .step = ode_step,
    .get_state = ode_get_state,
    .destroy = ode_destroy,
};
