/* engine_bullet.cpp — the Bullet adapter of bench_peers (see peer.h).
 *
 * Free bodies are btRigidBody; a free body with hinge children becomes one
 * btMultiBody (Featherstone, reduced coordinates: the floating base is the
 * free body, every descendant a revolute link), which is how khz and MuJoCo
 * model articulated chains too. Both live in one btMultiBodyDynamicsWorld
 * (a btDiscreteDynamicsWorld that also steps multibodies) with the
 * btMultiBodyConstraintSolver (btSequentialImpulseConstraintSolver extended
 * to multibody contacts), whatever the scene, so that every scene runs the
 * same configuration. Everything else is Bullet's default, except what an
 * honest comparison needs (see `settings` at the end): no deactivation, no
 * multibody damping, friction and restitution made to combine to the
 * scene's values.
 *
 * Bullet's quaternions are x y z w; peer.h's are w x y z. btScalar is float
 * or double depending on how this file is compiled (pkg-config bullet or
 * bullet-float64); `settings` says which.
 */
/* Bullet's headers are not -Wextra clean (unused parameters) and come in
 * through -I, not as system headers. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <btBulletDynamicsCommon.h>
#include <BulletCollision/CollisionShapes/btEmptyShape.h>
#include <BulletDynamics/Featherstone/btMultiBody.h>
#include <BulletDynamics/Featherstone/btMultiBodyConstraintSolver.h>
#include <BulletDynamics/Featherstone/btMultiBodyDynamicsWorld.h>
#include <BulletDynamics/Featherstone/btMultiBodyLinkCollider.h>
#pragma GCC diagnostic pop

#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "peer.h"

namespace {

/* One articulated tree and its kinematics after the last step. Bullet keeps
 * link velocities only as joint rates, so world poses and twists of every
 * link are recomputed once per step here rather than in every get_state. */
struct Tree {
  btMultiBody *mb;
  btAlignedObjectArray<btQuaternion> w2l; /* world-to-link rotations, [0] the base */
  btAlignedObjectArray<btVector3> origin; /* link centres of mass, world */
  btAlignedObjectArray<btVector3> omega;  /* angular velocities, link frames */
  btAlignedObjectArray<btVector3> vel;    /* COM velocities, link frames */
};

/* Where scene body i lives: a rigid body, or link `link` of tree `tree`
 * (link -1: the tree's base). */
struct BodyRef {
  btRigidBody *rb;
  int tree, link;
};

struct World {
  btScalar h;
  btDefaultCollisionConfiguration *config;
  btCollisionDispatcher *dispatcher;
  btDbvtBroadphase *broadphase;
  btMultiBodyConstraintSolver *solver;
  btMultiBodyDynamicsWorld *world;
  btAlignedObjectArray<btCollisionShape *> shapes;    /* every shape, compounds and children */
  btAlignedObjectArray<btCollisionObject *> objects;  /* rigid bodies, statics, link colliders */
  btAlignedObjectArray<Tree *> trees;
  BodyRef *body;
  int nbody;
  /* Per-object friction and restitution: Bullet multiplies the two objects'
   * values at a contact, so every object gets the square roots. */
  btScalar friction, restitution;
  /* bullet-sleep: Bullet's own deactivation, as it ships (a body below
   * 0.8 m/s and 1 rad/s for 2 s sleeps with its island until touched). */
  bool sleep;
};

__attribute__((format(printf, 3, 4))) void set_err(char *err, int errsz, const char *fmt, ...) {
  if (!err || errsz <= 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, (size_t)errsz, fmt, ap);
  va_end(ap);
}

btVector3 vec(const double v[3]) { return btVector3(btScalar(v[0]), btScalar(v[1]), btScalar(v[2])); }

/* peer.h w x y z -> Bullet x y z w, normalised (the input is double, btScalar
 * may be float). A zero quaternion is left zero for the caller to refuse. */
btQuaternion quat(const double q[4]) {
  btQuaternion r{btScalar(q[1]), btScalar(q[2]), btScalar(q[3]), btScalar(q[0])};
  btScalar n = r.length();
  return n > 0 ? r / n : r;
}

bool quat_ok(const double q[4]) { return q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] > 1e-12; }

btTransform pose(const double pos[3], const double q[4]) { return btTransform(quat(q), vec(pos)); }

const char *shape_name(int type) {
  static const char *names[] = {"plane", "sphere", "box", "capsule", "cylinder"};
  return type >= 0 && type <= BENCH_CYLINDER ? names[type] : "unknown";
}

/* A Bullet shape for s, owned by W, or NULL with err. Planes only for static
 * shapes: btStaticPlaneShape is infinite and Bullet refuses it on a dynamic
 * body. Capsule and cylinder axes are along local z as in peer.h. */
btCollisionShape *make_shape(World *W, const benchShape *s, bool is_static, char *err, int errsz) {
  const double *z = s->size;
  btCollisionShape *shape = nullptr;
  bool ok = true;
  switch (s->type) {
  case BENCH_PLANE:
    if (is_static) shape = new btStaticPlaneShape(btVector3(0, 0, 1), 0);
    break;
  case BENCH_SPHERE:
    ok = z[0] > 0;
    if (ok) shape = new btSphereShape(btScalar(z[0]));
    break;
  case BENCH_BOX:
    ok = z[0] > 0 && z[1] > 0 && z[2] > 0;
    if (ok) shape = new btBoxShape(vec(z));
    break;
  case BENCH_CAPSULE: /* Bullet's height is the segment length, without the caps */
    ok = z[0] > 0 && z[1] > 0;
    if (ok) shape = new btCapsuleShapeZ(btScalar(z[0]), btScalar(2 * z[1]));
    break;
  case BENCH_CYLINDER:
    ok = z[0] > 0 && z[1] > 0;
    if (ok) shape = new btCylinderShapeZ(btVector3(btScalar(z[0]), btScalar(z[0]), btScalar(z[1])));
    break;
  }
  if (!shape) {
    set_err(err, errsz, ok ? "bullet: a %s shape is not supported on a moving body"
                           : "bullet: a %s shape has a size that is not positive",
            shape_name((int)s->type));
    return nullptr;
  }
  W->shapes.push_back(shape);
  return shape;
}

bool identity_pose(const benchShape *s) {
  return s->pos[0] == 0 && s->pos[1] == 0 && s->pos[2] == 0 && s->quat[0] != 0 && s->quat[1] == 0 &&
         s->quat[2] == 0 && s->quat[3] == 0;
}

/* The collision shape of body b in its principal frame: the shape itself
 * when there is one at the origin, else a compound with the shape poses as
 * child transforms. *shape is NULL for a body without shapes. */
bool body_shape(World *W, const benchScene *sc, const benchBody *b, btCollisionShape **shape, char *err,
                int errsz) {
  *shape = nullptr;
  if (b->nshape == 0) return true;
  const benchShape *s = sc->shape + b->shape0;
  if (b->nshape == 1 && identity_pose(s)) {
    *shape = make_shape(W, s, false, err, errsz);
    return *shape != nullptr;
  }
  btCompoundShape *compound = new btCompoundShape();
  W->shapes.push_back(compound);
  for (int k = 0; k < b->nshape; k++) {
    if (!quat_ok(s[k].quat)) {
      set_err(err, errsz, "bullet: body '%s': shape %d has a zero quaternion", b->name, k);
      return false;
    }
    btCollisionShape *child = make_shape(W, s + k, false, err, errsz);
    if (!child) return false;
    compound->addChildShape(pose(s[k].pos, s[k].quat), child);
  }
  *shape = compound;
  return true;
}

void set_material(World *W, btCollisionObject *o) {
  o->setFriction(W->friction);
  o->setRestitution(W->restitution);
}

/* Sleeping bodies have zero velocity: the resting kinetic energy the
 * benchmark measures would be Bullet's sleeping threshold, not its solver.
 * (Static objects keep Bullet's own state: they never move.) */
void set_moving(World *W, btCollisionObject *o) {
  set_material(W, o);
  if (!W->sleep) o->setActivationState(DISABLE_DEACTIVATION);
}

/* Static shapes are mass-0 rigid bodies placed at the shape pose. */
bool add_static(World *W, const benchShape *s, int k, char *err, int errsz) {
  if (!quat_ok(s->quat)) {
    set_err(err, errsz, "bullet: static shape %d has a zero quaternion", k);
    return false;
  }
  btCollisionShape *shape = make_shape(W, s, true, err, errsz);
  if (!shape) return false;
  btRigidBody::btRigidBodyConstructionInfo info(0, nullptr, shape);
  info.m_startWorldTransform = pose(s->pos, s->quat);
  btRigidBody *rb = new btRigidBody(info);
  W->objects.push_back(rb);
  set_material(W, rb);
  W->world->addRigidBody(rb);
  return true;
}

/* A free body without hinge children. The inertia is the scene's, not
 * Bullet's estimate from the shape (calculateLocalInertia). */
bool add_rigid(World *W, const benchScene *sc, int i, char *err, int errsz) {
  const benchBody *b = sc->body + i;
  btCollisionShape *shape;
  if (!body_shape(W, sc, b, &shape, err, errsz)) return false;
  bool collides = shape != nullptr;
  if (!collides) { /* Bullet needs a shape; this one never meets anything */
    shape = new btEmptyShape();
    W->shapes.push_back(shape);
  }
  btRigidBody::btRigidBodyConstructionInfo info(btScalar(b->mass), nullptr, shape, vec(b->inertia));
  info.m_startWorldTransform = pose(b->pos, b->quat);
  btRigidBody *rb = new btRigidBody(info);
  W->objects.push_back(rb);
  rb->setLinearVelocity(vec(b->vel));
  rb->setAngularVelocity(vec(b->angvel));
  set_moving(W, rb);
  if (collides)
    W->world->addRigidBody(rb);
  else
    W->world->addRigidBody(rb, btBroadphaseProxy::DefaultFilter, 0);
  W->body[i].rb = rb;
  return true;
}

/* Collider of link `link` (-1: base) of mb, placed at the body's pose. */
void add_collider(World *W, btMultiBody *mb, int link, btCollisionShape *shape, const benchBody *b) {
  btMultiBodyLinkCollider *col = new btMultiBodyLinkCollider(mb, link);
  W->objects.push_back(col);
  col->setCollisionShape(shape);
  col->setWorldTransform(pose(b->pos, b->quat));
  set_moving(W, col);
  W->world->addCollisionObject(col, btBroadphaseProxy::DefaultFilter, btBroadphaseProxy::AllFilter);
  if (link < 0)
    mb->setBaseCollider(col);
  else
    mb->getLink(link).m_collider = col;
}

/* Link `link` for body b, hinged to its parent p at the initial
 * configuration (hinge angle zero). Bullet wants the rotation parent-to-link,
 * the axis in the link frame, parent COM to pivot in the parent frame and
 * pivot to link COM in the link frame. */
bool setup_link(btMultiBody *mb, int link, int parent_link, const benchBody *b, const benchBody *p,
                char *err, int errsz) {
  btVector3 axis = vec(b->joint_axis);
  if (axis.length() < btScalar(1e-6)) {
    set_err(err, errsz, "bullet: body '%s' has a zero hinge axis", b->name);
    return false;
  }
  axis.normalize();
  btQuaternion qb = quat(b->quat), qp = quat(p->quat);
  btVector3 anchor = vec(b->joint_anchor);
  mb->setupRevolute(link, btScalar(b->mass), vec(b->inertia), parent_link, qb.inverse() * qp,
                    quatRotate(qb.inverse(), axis), quatRotate(qp.inverse(), anchor - vec(p->pos)),
                    quatRotate(qb.inverse(), vec(b->pos) - anchor), true);
  return true;
}

/* Refreshes the tree's cached link poses and velocities. */
void update_tree(Tree *t) {
  int n = t->mb->getNumLinks() + 1;
  t->mb->forwardKinematics(t->w2l, t->origin);
  t->omega.resize(n);
  t->vel.resize(n);
  t->mb->compTreeLinkVelocities(&t->omega[0], &t->vel[0]);
}

/* The tree rooted at free body r: its descendants (parent < child, checked
 * by the caller) become links in scene order. */
bool add_tree(World *W, const benchScene *sc, int r, const int *root, char *err, int errsz) {
  const benchBody *B = sc->body;
  int nlinks = 0;
  for (int j = r + 1; j < sc->nbody; j++)
    if (root[j] == r) W->body[j].link = nlinks++;
  Tree *t = new Tree();
  int tree = W->trees.size();
  W->trees.push_back(t);
  btMultiBody *mb = new btMultiBody(nlinks, btScalar(B[r].mass), vec(B[r].inertia), false, false);
  t->mb = mb;
  W->body[r].tree = tree;
  W->body[r].link = -1;
  mb->setBasePos(vec(B[r].pos));
  mb->setWorldToBaseRot(quat(B[r].quat).inverse());
  for (int j = r + 1; j < sc->nbody; j++) {
    if (root[j] != r) continue;
    W->body[j].tree = tree;
    int parent = B[j].parent;
    if (!setup_link(mb, W->body[j].link, W->body[parent].link, B + j, B + parent, err, errsz)) return false;
  }
  mb->finalizeMultiDof();
  /* Initial velocities: the base twist (world), then each hinge rate from the
   * relative angular velocity of the two bodies about the hinge axis. */
  mb->setBaseVel(vec(B[r].vel));
  mb->setBaseOmega(vec(B[r].angvel));
  for (int j = r + 1; j < sc->nbody; j++) {
    if (root[j] != r) continue;
    btVector3 axis = vec(B[j].joint_axis).normalized();
    btVector3 rel = vec(B[j].angvel) - vec(B[B[j].parent].angvel);
    mb->setJointVel(W->body[j].link, axis.dot(rel));
  }
  /* btMultiBody defaults to 0.04 linear and angular damping; the other
   * engines have none. Self-collision off like khz's robots (parent-child
   * pairs are excluded in any case). */
  mb->setLinearDamping(0);
  mb->setAngularDamping(0);
  mb->setHasSelfCollision(false);
  W->world->addMultiBody(mb);
  for (int j = r; j < sc->nbody; j++) {
    if (root[j] != r) continue;
    btCollisionShape *shape;
    if (!body_shape(W, sc, B + j, &shape, err, errsz)) return false;
    if (shape) add_collider(W, mb, W->body[j].link, shape, B + j);
  }
  update_tree(t);
  return true;
}

bool check_scene(const benchScene *sc, char *err, int errsz) {
  if (!(sc->timestep > 0)) {
    set_err(err, errsz, "bullet: timestep must be positive");
    return false;
  }
  if (!(sc->mu >= 0 && sc->mu <= 10)) { /* Bullet clamps combined friction to 10 */
    set_err(err, errsz, "bullet: friction coefficient %g outside [0, 10]", sc->mu);
    return false;
  }
  if (!(sc->restitution >= 0 && sc->restitution <= 1)) {
    set_err(err, errsz, "bullet: restitution %g outside [0, 1]", sc->restitution);
    return false;
  }
  for (int i = 0; i < sc->nbody; i++) {
    const benchBody *b = sc->body + i;
    if (!(b->mass > 0 && b->inertia[0] > 0 && b->inertia[1] > 0 && b->inertia[2] > 0)) {
      set_err(err, errsz, "bullet: body '%s' needs a positive mass and principal moments", b->name);
      return false;
    }
    if (!quat_ok(b->quat)) {
      set_err(err, errsz, "bullet: body '%s' has a zero quaternion", b->name);
      return false;
    }
    /* btMultiBody links must follow their parents */
    if (b->parent >= i) {
      set_err(err, errsz, "bullet: body '%s' (%d) comes before its parent %d", b->name, i, b->parent);
      return false;
    }
    if (b->nshape < 0 || b->shape0 < 0 || b->shape0 + b->nshape > sc->nshape) {
      set_err(err, errsz, "bullet: body '%s' has shapes out of range", b->name);
      return false;
    }
  }
  return true;
}

void destroy(void *world);

void make_world(World *W, const benchScene *sc) {
  /* Bigger pools than the default 4096 for the ~1000-body piles: only
   * avoids falling back to the heap, the physics is the same. */
  btDefaultCollisionConstructionInfo cci;
  int pool = 16 * sc->nbody > 4096 ? 16 * sc->nbody : 4096;
  cci.m_defaultMaxPersistentManifoldPoolSize = pool;
  cci.m_defaultMaxCollisionAlgorithmPoolSize = pool;
  W->config = new btDefaultCollisionConfiguration(cci);
  W->dispatcher = new btCollisionDispatcher(W->config);
  W->broadphase = new btDbvtBroadphase();
  W->solver = new btMultiBodyConstraintSolver();
  W->world = new btMultiBodyDynamicsWorld(W->dispatcher, W->broadphase, W->solver, W->config);
  W->world->setGravity(vec(sc->gravity));
  W->h = btScalar(sc->timestep);
  W->friction = btScalar(std::sqrt(sc->mu));
  W->restitution = btScalar(std::sqrt(sc->restitution));
}

/* Builds everything into W; false with err on the first problem. */
bool build(World *W, const benchScene *sc, char *err, int errsz) {
  make_world(W, sc);
  W->nbody = sc->nbody;
  W->body = new BodyRef[sc->nbody > 0 ? sc->nbody : 1];
  int *root = new int[sc->nbody > 0 ? sc->nbody : 1];
  bool *has_child = new bool[sc->nbody > 0 ? sc->nbody : 1];
  for (int i = 0; i < sc->nbody; i++) {
    W->body[i] = BodyRef{nullptr, -1, -1};
    root[i] = sc->body[i].parent < 0 ? i : root[sc->body[i].parent];
    has_child[i] = false;
    if (sc->body[i].parent >= 0) has_child[sc->body[i].parent] = true;
  }
  bool ok = true;
  for (int k = 0; ok && k < sc->nstatic; k++) ok = add_static(W, sc->static_shape + k, k, err, errsz);
  for (int i = 0; ok && i < sc->nbody; i++) {
    if (sc->body[i].parent >= 0) continue;
    ok = has_child[i] ? add_tree(W, sc, i, root, err, errsz) : add_rigid(W, sc, i, err, errsz);
  }
  delete[] root;
  delete[] has_child;
  return ok;
}

void *create_with(const benchScene *scene, bool sleep, char *err, int errsz) {
  if (!scene || !check_scene(scene, err, errsz)) return nullptr;
  World *W = nullptr;
  bool ok;
  try {
    W = new World();
    W->sleep = sleep;
    ok = build(W, scene, err, errsz);
  } catch (...) { /* nothing may cross into the C driver */
    set_err(err, errsz, "bullet: out of memory building the world");
    ok = false;
  }
  if (!ok) {
    destroy(W);
    return nullptr;
  }
  return W;
}

void *create(const benchScene *scene, char *err, int errsz) { return create_with(scene, false, err, errsz); }

void *create_sleep(const benchScene *scene, char *err, int errsz) { return create_with(scene, true, err, errsz); }

/* Applied for the next step only: Bullet clears rigid-body forces at the end
 * of stepSimulation and multibody forces once they are integrated. */
void apply_force(void *world, int body, const double force[3], const double point[3]) {
  World *W = (World *)world;
  const BodyRef &r = W->body[body];
  btVector3 f = vec(force), p = vec(point);
  if (r.rb) {
    r.rb->applyForce(f, p - r.rb->getCenterOfMassPosition());
    return;
  }
  Tree *t = W->trees[r.tree];
  btVector3 torque = (p - t->origin[r.link + 1]).cross(f); /* about the COM, world */
  if (r.link < 0) {
    t->mb->addBaseForce(f);
    t->mb->addBaseTorque(torque);
  } else {
    t->mb->addLinkForce(r.link, f);
    t->mb->addLinkTorque(r.link, torque);
  }
}

/* maxSubSteps 0: exactly one internal step of h, no interpolation. */
void step(void *world) {
  World *W = (World *)world;
  W->world->stepSimulation(W->h, 0);
  for (int k = 0; k < W->trees.size(); k++) update_tree(W->trees[k]);
}

void put(const btVector3 &v, double out[3]) {
  out[0] = v.x();
  out[1] = v.y();
  out[2] = v.z();
}

void put_quat(const btQuaternion &q, double out[4]) {
  out[0] = q.w();
  out[1] = q.x();
  out[2] = q.y();
  out[3] = q.z();
}

void get_state(void *world, int body, double pos[3], double quat_out[4], double vel[3], double angvel[3]) {
  World *W = (World *)world;
  const BodyRef &r = W->body[body];
  if (r.rb) {
    const btTransform &T = r.rb->getCenterOfMassTransform();
    put(T.getOrigin(), pos);
    put_quat(T.getRotation(), quat_out);
    put(r.rb->getLinearVelocity(), vel);
    put(r.rb->getAngularVelocity(), angvel);
    return;
  }
  const Tree *t = W->trees[r.tree];
  int k = r.link + 1;
  btQuaternion rot = t->w2l[k].inverse(); /* link to world */
  put(t->origin[k], pos);
  put_quat(rot, quat_out);
  put(quatRotate(rot, t->vel[k]), vel);
  put(quatRotate(rot, t->omega[k]), angvel);
}

/* Also frees a partly built world (create's failure path). */
void destroy(void *world) {
  World *W = (World *)world;
  if (!W) return;
  if (W->world) {
    for (int k = W->objects.size() - 1; k >= 0; k--) W->world->removeCollisionObject(W->objects[k]);
    for (int k = 0; k < W->trees.size(); k++)
      if (W->trees[k]->mb) W->world->removeMultiBody(W->trees[k]->mb);
  }
  for (int k = 0; k < W->objects.size(); k++) delete W->objects[k];
  for (int k = 0; k < W->trees.size(); k++) {
    delete W->trees[k]->mb;
    delete W->trees[k];
  }
  for (int k = W->shapes.size() - 1; k >= 0; k--) delete W->shapes[k];
  delete W->world;
  delete W->solver;
  delete W->broadphase;
  delete W->dispatcher;
  delete W->config;
  delete[] W->body;
  delete W;
}

#ifdef BT_USE_DOUBLE_PRECISION
#define PRECISION "double"
#else
#define PRECISION "single"
#endif

const char settings[] =
    "Bullet " PRECISION " precision; btMultiBodyDynamicsWorld + btMultiBodyConstraintSolver "
    "(sequential impulse, 10 iterations, warm starting 0.85, contact ERP 0.2, split impulse for "
    "free bodies, 2 friction directions), btDbvtBroadphase, semi-implicit Euler, one internal step "
    "per step; free bodies btRigidBody (implicit gyroscopic term), hinge chains one btMultiBody "
    "(reduced coordinates, damping off, no self-collision, generalized velocities clamped at 100 "
    "as by default); friction and restitution sqrt(mu), sqrt(e) per object (Bullet multiplies), "
    "restitution off below 0.2 m/s; default margins: box/cylinder min(0.04 m, 10% of smallest "
    "half extent) inside the surface, sphere/capsule the radius; no deactivation, no CCD";

} // namespace

extern "C" const benchEngine bench_engine_bullet = {
    "bullet", settings, create, apply_force, step, get_state, destroy,
};

extern "C" const benchEngine bench_engine_bullet_sleep = {
    "bullet-sleep",
    "as bullet, with Bullet's deactivation on as it ships (a body below 0.8 m/s and 1 rad/s for "
    "2 s sleeps with its island until touched)",
    create_sleep, apply_force, step, get_state, destroy,
};
