/* model.c — the spec builder (khzSpec) and its compilation into an immutable
 * khzModel: validation with messages a person can act on, derived quantities
 * (spatial inertias, q/qd addresses, effective joint inertias), one buffer. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carve.h"
#include "collision/collision.h"
#include "constraint.h"
#include "contact/contact.h"
#include "dynamics.h"
#include "peg/peg.h"
#include "island.h"
#include "khz/khz.h"
#include "spatial.h"

typedef struct {
  char name[KHZ_NAME_MAX];
  double *vert;
  int *face;
  int nvert, nface;
} khzMeshSpec;

struct khzSpec {
  khzBodySpec *body;
  int nbody, cap_body;
  khzGeomSpec *geom;
  int ngeom, cap_geom;
  khzMeshSpec *mesh;
  int nmesh, cap_mesh;
  int *exclude; /* 2 per body pair */
  int nexclude, cap_exclude;
  khzEqualitySpec *eq;
  int neq, cap_eq;
  khzContactOptions contact;
  khzSleepOptions sleep;
  double gravity[3];
  double timestep;
  double max_substep;
  khzIntegrator integrator;
};

/* ------------------------------------------------------------------ spec -- */

void khz_spec_defaultBody(khzBodySpec *b) {
  memset(b, 0, sizeof *b);
  b->quat[0] = 1;
  b->axis[2] = 1;
  b->joint_type = KHZ_JOINT_FIXED;
}

void khz_spec_defaultContact(khzContactOptions *c) {
  memset(c, 0, sizeof *c);
  c->method = KHZ_CONTACT_PENALTY;
  c->kp_per_kg = 0; /* automatic gains */
  c->kv_per_kg = 50;
  c->ki_per_kg = 2;
  c->gain_mass = KHZ_GAIN_MASS_SUM;
  c->gamma = 0.85;
  c->mu = 0.8;
  c->restitution = 0.2;
  c->impact_velocity = 1e-4;
  c->peg_splits = 2; /* a PEG step may be halved twice (quarters) */
  c->free_closed_form = 1; /* RK4's stages 2-4: a free object's acceleration in closed form */
}

void khz_spec_setContact(khzSpec *s, const khzContactOptions *c) { s->contact = *c; }

void khz_spec_defaultSleep(khzSleepOptions *o) {
  o->enabled = 1;
  o->velocity = 0.01;
  o->time = 0.5;
}

void khz_spec_setSleep(khzSpec *s, const khzSleepOptions *o) { s->sleep = *o; }

int khz_spec_addMesh(khzSpec *s, const char *name, const double *vert, int nvert, const int *face,
                     int nface) {
  if (nvert < 0 || nface < 0) return -1;
  if (s->nmesh == s->cap_mesh) {
    int cap = s->cap_mesh ? 2 * s->cap_mesh : 8;
    khzMeshSpec *nm = realloc(s->mesh, (size_t)cap * sizeof *nm);
    if (!nm) return -1;
    s->mesh = nm;
    s->cap_mesh = cap;
  }
  khzMeshSpec *ms = &s->mesh[s->nmesh];
  memset(ms, 0, sizeof *ms);
  snprintf(ms->name, sizeof ms->name, "%s", name ? name : "");
  ms->vert = malloc((size_t)(3 * nvert) * sizeof(double) + 1);
  ms->face = malloc((size_t)(3 * nface) * sizeof(int) + 1);
  if (!ms->vert || !ms->face) {
    free(ms->vert);
    free(ms->face);
    return -1;
  }
  memcpy(ms->vert, vert, (size_t)(3 * nvert) * sizeof(double));
  memcpy(ms->face, face, (size_t)(3 * nface) * sizeof(int));
  ms->nvert = nvert;
  ms->nface = nface;
  return s->nmesh++;
}

int khz_spec_addExclude(khzSpec *s, int body1, int body2) {
  if (s->nexclude == s->cap_exclude) {
    int cap = s->cap_exclude ? 2 * s->cap_exclude : 8;
    int *ne = realloc(s->exclude, (size_t)cap * 2 * sizeof *ne);
    if (!ne) return -1;
    s->exclude = ne;
    s->cap_exclude = cap;
  }
  s->exclude[2 * s->nexclude] = body1;
  s->exclude[2 * s->nexclude + 1] = body2;
  return s->nexclude++;
}

int khz_spec_nexclude(const khzSpec *s) { return s->nexclude; }

int khz_spec_addEquality(khzSpec *s, const khzEqualitySpec *e) {
  if (s->neq == s->cap_eq) {
    int cap = s->cap_eq ? 2 * s->cap_eq : 8;
    khzEqualitySpec *ne = realloc(s->eq, (size_t)cap * sizeof *ne);
    if (!ne) return -1;
    s->eq = ne;
    s->cap_eq = cap;
  }
  s->eq[s->neq] = *e;
  return s->neq++;
}

int khz_spec_nequality(const khzSpec *s) { return s->neq; }

void khz_spec_truncateEqualities(khzSpec *s, int n) {
  if (n >= 0 && n < s->neq) s->neq = n;
}

void khz_spec_truncateExcludes(khzSpec *s, int n) {
  if (n >= 0 && n < s->nexclude) s->nexclude = n;
}

void khz_spec_defaultGeom(khzGeomSpec *g) {
  memset(g, 0, sizeof *g);
  g->quat[0] = 1;
  g->mesh = -1;
  g->convex = 1;
  g->contype = 1;
  g->conaffinity = 1;
  g->rgba[0] = g->rgba[1] = g->rgba[2] = 0.7;
  g->rgba[3] = 1;
}

khzSpec *khz_spec_new(void) {
  khzSpec *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->gravity[2] = -9.81;
  s->timestep = 1e-3;
  s->integrator = KHZ_INT_RK4;
  khz_spec_defaultContact(&s->contact);
  khz_spec_defaultSleep(&s->sleep);
  khzBodySpec world;
  khz_spec_defaultBody(&world);
  snprintf(world.name, sizeof world.name, "world");
  world.parent = -1;
  if (khz_spec_addBody(s, &world) < 0) {
    free(s);
    return NULL;
  }
  return s;
}

void khz_spec_destroy(khzSpec **spec_p) {
  if (!spec_p || !*spec_p) return;
  for (int i = 0; i < (*spec_p)->nmesh; i++) {
    free((*spec_p)->mesh[i].vert);
    free((*spec_p)->mesh[i].face);
  }
  free((*spec_p)->mesh);
  free((*spec_p)->exclude);
  free((*spec_p)->eq);
  free((*spec_p)->body);
  free((*spec_p)->geom);
  free(*spec_p);
  *spec_p = NULL;
}

int khz_spec_addBody(khzSpec *s, const khzBodySpec *b) {
  if (s->nbody == s->cap_body) {
    int cap = s->cap_body ? 2 * s->cap_body : 16;
    khzBodySpec *nb = realloc(s->body, (size_t)cap * sizeof *nb);
    if (!nb) return -1;
    s->body = nb;
    s->cap_body = cap;
  }
  s->body[s->nbody] = *b;
  return s->nbody++;
}

int khz_spec_addGeom(khzSpec *s, const khzGeomSpec *g) {
  if (s->ngeom == s->cap_geom) {
    int cap = s->cap_geom ? 2 * s->cap_geom : 16;
    khzGeomSpec *ng = realloc(s->geom, (size_t)cap * sizeof *ng);
    if (!ng) return -1;
    s->geom = ng;
    s->cap_geom = cap;
  }
  s->geom[s->ngeom] = *g;
  return s->ngeom++;
}

void khz_spec_truncateMeshes(khzSpec *s, int nmesh) {
  while (s->nmesh > nmesh && s->nmesh > 0) {
    s->nmesh--;
    free(s->mesh[s->nmesh].vert);
    free(s->mesh[s->nmesh].face);
  }
}

int khz_spec_nmesh(const khzSpec *s) { return s->nmesh; }

void khz_spec_truncate(khzSpec *s, int nbody, int ngeom) {
  if (nbody >= 1 && nbody < s->nbody) s->nbody = nbody;
  if (ngeom >= 0 && ngeom < s->ngeom) s->ngeom = ngeom;
}

int khz_spec_nbody(const khzSpec *s) { return s->nbody; }
khzBodySpec *khz_spec_body(khzSpec *s, int i) { return (i >= 0 && i < s->nbody) ? &s->body[i] : NULL; }
int khz_spec_ngeom(const khzSpec *s) { return s->ngeom; }
khzGeomSpec *khz_spec_geom(khzSpec *s, int i) { return (i >= 0 && i < s->ngeom) ? &s->geom[i] : NULL; }
void khz_spec_setGravity(khzSpec *s, const double g[3]) { memcpy(s->gravity, g, sizeof s->gravity); }
void khz_spec_setTimestep(khzSpec *s, double h) { s->timestep = h; }
void khz_spec_setMaxSubstep(khzSpec *s, double h_max) { s->max_substep = h_max; }
void khz_spec_setIntegrator(khzSpec *s, khzIntegrator integrator) { s->integrator = integrator; }

/* ----------------------------------------------------------------- names -- */

const char *khz_jointTypeName(khzJointType t) {
  static const char *names[KHZ_JOINT_NTYPES] = {"fixed",     "revolute",  "continuous",
                                                "prismatic", "spherical", "floating"};
  return (t >= 0 && t < KHZ_JOINT_NTYPES) ? names[t] : "unknown";
}

int khz_name2body(const khzModel *m, const char *name) {
  for (int i = 0; i < m->nbody; i++)
    if (strcmp(m->body_name[i], name) == 0) return i;
  return -1;
}

int khz_name2joint(const khzModel *m, const char *name) {
  for (int i = 1; i < m->nbody; i++)
    if (m->jnt_name[i][0] && strcmp(m->jnt_name[i], name) == 0) return i;
  return -1;
}

/* --------------------------------------------------------------- compile -- */

static int fail(char *err, size_t errsz, const char *fmt, ...) {
  if (err && errsz) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsz, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static int finite_n(const double *x, int n) {
  for (int i = 0; i < n; i++)
    if (!isfinite(x[i])) return 0;
  return 1;
}

static void joint_dims(khzJointType t, int *nq, int *nv) {
  switch (t) {
    case KHZ_JOINT_FIXED: *nq = 0, *nv = 0; break;
    case KHZ_JOINT_SPHERICAL: *nq = 4, *nv = 3; break;
    case KHZ_JOINT_FLOATING: *nq = 7, *nv = 6; break;
    default: *nq = 1, *nv = 1; break;
  }
}


/* validates one body of the spec; messages name the body and the joint */
static int check_body(const khzSpec *s, int i, char *err, size_t errsz) {
  const khzBodySpec *b = &s->body[i];
  const char *jn = b->joint_name[0] ? b->joint_name : "(unnamed)";
  if (!b->name[0]) return fail(err, errsz, "body %d: empty name", i);
  if (b->parent < 0 || b->parent >= i)
    return fail(err, errsz, "body '%s': parent index %d is not an earlier body (kinematic loop or bad order)",
                b->name, b->parent);
  for (int k = 0; k < i; k++)
    if (strcmp(s->body[k].name, b->name) == 0)
      return fail(err, errsz, "body '%s': duplicate name", b->name);
  if (b->joint_name[0])
    for (int k = 1; k < i; k++)
      if (strcmp(s->body[k].joint_name, b->joint_name) == 0)
        return fail(err, errsz, "joint '%s': duplicate name", b->joint_name);
  if (b->joint_type < 0 || b->joint_type >= KHZ_JOINT_NTYPES)
    return fail(err, errsz, "joint '%s' (body '%s'): unknown type %d", jn, b->name, b->joint_type);
  if (!finite_n(b->pos, 3) || !finite_n(b->quat, 4) || !finite_n(b->axis, 3) ||
      !finite_n(b->com, 3) || !finite_n(b->inertia, 6) || !finite_n(b->q0, 7) ||
      !finite_n(b->qd0, 6) ||
      !isfinite(b->mass) || !isfinite(b->damping) || !isfinite(b->friction) ||
      !isfinite(b->armature) || !isfinite(b->effort_limit) || !isfinite(b->velocity_limit) ||
      !isfinite(b->stiffness) || !isfinite(b->springref))
    return fail(err, errsz, "body '%s': a value is NaN or infinite", b->name);
  if (b->limited && (!isfinite(b->lower) || !isfinite(b->upper)))
    return fail(err, errsz, "joint '%s': limit is NaN or infinite", jn);
  double qn = sqrt(khzu_dot3(b->quat + 1, b->quat + 1) + b->quat[0] * b->quat[0]);
  if (qn < 1e-9) return fail(err, errsz, "body '%s': joint origin quaternion is zero", b->name);
  int axial = b->joint_type == KHZ_JOINT_REVOLUTE || b->joint_type == KHZ_JOINT_CONTINUOUS ||
              b->joint_type == KHZ_JOINT_PRISMATIC;
  if (axial && sqrt(khzu_dot3(b->axis, b->axis)) < 1e-9)
    return fail(err, errsz, "joint '%s': axis is zero", jn);
  if (b->joint_type == KHZ_JOINT_FLOATING && b->parent != 0)
    return fail(err, errsz, "joint '%s': a floating joint must connect a body to the world, not to '%s'",
                jn, s->body[b->parent].name);
  if (b->limited && b->lower > b->upper)
    return fail(err, errsz, "joint '%s': lower limit %g is above upper limit %g", jn, b->lower,
                b->upper);
  if (b->damping < 0 || b->friction < 0 || b->armature < 0 || b->effort_limit < 0 ||
      b->velocity_limit < 0 || b->stiffness < 0)
    return fail(err, errsz, "joint '%s': negative damping, friction, armature, limit or stiffness",
                jn);
  if (b->mass < 0) return fail(err, errsz, "body '%s': negative mass %g", b->name, b->mass);

  /* inertia: symmetric positive definite, principal moments obey the triangle inequality */
  const double *in = b->inertia;
  double Ic[9] = {in[0], in[3], in[4], in[3], in[1], in[5], in[4], in[5], in[2]};
  if (b->mass == 0) {
    for (int k = 0; k < 6; k++)
      if (in[k] != 0)
        return fail(err, errsz, "body '%s': zero mass with a non-zero inertia", b->name);
  } else {
    double ev[3];
    khz_eig3(Ic, ev, NULL);
    double scale = fabs(ev[0]) + fabs(ev[1]) + fabs(ev[2]);
    if (!(ev[0] > 0 && ev[1] > 0 && ev[2] > 0))
      return fail(err, errsz,
                  "body '%s': inertia is not positive definite (principal moments %g %g %g)",
                  b->name, ev[0], ev[1], ev[2]);
    double tol = 1e-9 * scale;
    if (ev[0] + ev[1] < ev[2] - tol || ev[0] + ev[2] < ev[1] - tol || ev[1] + ev[2] < ev[0] - tol)
      return fail(err, errsz,
                  "body '%s': principal moments %g %g %g violate the triangle inequality", b->name,
                  ev[0], ev[1], ev[2]);
  }
  return 0;
}

static int check_geom(const khzSpec *s, int i, char *err, size_t errsz) {
  const khzGeomSpec *g = &s->geom[i];
  if (g->body < 0 || g->body >= s->nbody)
    return fail(err, errsz, "geom %d: body index %d does not exist", i, g->body);
  if (g->type < 0 || g->type >= KHZ_GEOM_NTYPES)
    return fail(err, errsz, "geom %d of body '%s': unknown type %d", i, s->body[g->body].name, g->type);
  if (!finite_n(g->size, 3) || !finite_n(g->pos, 3) || !finite_n(g->quat, 4))
    return fail(err, errsz, "geom %d of body '%s': NaN or infinite size or pose", i,
                s->body[g->body].name);
  int need = g->type == KHZ_GEOM_PLANE ? 0
             : g->type == KHZ_GEOM_SPHERE ? 1
             : (g->type == KHZ_GEOM_CAPSULE || g->type == KHZ_GEOM_CYLINDER) ? 2
                                                                             : 3;
  for (int k = 0; k < need; k++)
    if (!(g->size[k] > 0))
      return fail(err, errsz, "geom %d of body '%s': size[%d] = %g must be positive", i,
                  s->body[g->body].name, k, g->size[k]);
  return 0;
}


static void layout_model(khzModel *m, carver *c) {
  size_t nb = (size_t)m->nbody, nv = (size_t)m->nv, nq = (size_t)m->nq, ng = (size_t)m->ngeom;
#define D(n) carve(c, (n) * sizeof(double))
#define I(n) carve(c, (n) * sizeof(int))
  m->body_parent = I(nb);
  m->body_root = I(nb);
  m->body_treeend = I(nb);
  m->body_subtreemass = D(nb);
  m->body_mass = D(nb);
  m->body_com = D(3 * nb);
  m->body_inertia = D(9 * nb);
  m->body_pos = D(3 * nb);
  m->body_quat = D(4 * nb);
  m->body_rot = D(9 * nb);
  m->body_zeros = I(nb);
  m->body_reach = D(nb);
  m->jnt_type = I(nb);
  m->jnt_qadr = I(nb);
  m->jnt_dofadr = I(nb);
  m->jnt_nq = I(nb);
  m->jnt_nv = I(nb);
  m->jnt_axis = D(3 * nb);
  m->jnt_limited = I(nb);
  m->jnt_range = D(2 * nb);
  m->jnt_vel_limit = D(nb);
  m->dof_body = I(nv);
  m->dof_damping = D(nv);
  m->dof_friction = D(nv);
  m->dof_meff = D(nv);
  m->dof_armature = D(nv);
  m->dof_effort = D(nv);
  m->dof_stiffness = D(nv);
  m->dof_springref = D(nv);
  m->exclude_body = I(2 * (size_t)m->nexclude);
  m->eq_type = I((size_t)m->neq);
  m->eq_body = I(2 * (size_t)m->neq);
  m->eq_pos = D(6 * (size_t)m->neq);
  m->eq_quat = D(4 * (size_t)m->neq);
  m->eq_poly = D(5 * (size_t)m->neq);
  m->eq_name = carve(c, (size_t)m->neq * KHZ_NAME_MAX);
  m->q0 = D(nq);
  m->qd0 = D(nv);
  m->geom_body = I(ng);
  m->geom_type = I(ng);
  m->geom_size = D(3 * ng);
  m->geom_pos = D(3 * ng);
  m->geom_quat = D(4 * ng);
  m->geom_visual = I(ng);
  m->geom_rgba = D(4 * ng);
  m->geom_friction = D(ng);
  m->geom_mesh = carve(c, ng * KHZ_PATH_MAX);
  m->geom_meshid = I(ng);
  m->geom_convex = I(ng);
  m->geom_contype = carve(c, ng * sizeof(unsigned));
  m->geom_conaffinity = carve(c, ng * sizeof(unsigned));
  m->geom_gain = D(3 * ng);
  size_t nm = (size_t)m->nmesh;
  m->mesh_vertadr = I(nm);
  m->mesh_vertnum = I(nm);
  m->mesh_faceadr = I(nm);
  m->mesh_facenum = I(nm);
  m->mesh_vert = D(3 * (size_t)m->nmeshvert);
  m->mesh_face = I(3 * (size_t)m->nmeshface);
  m->mesh_name = carve(c, nm * KHZ_NAME_MAX);
  m->body_name = carve(c, nb * KHZ_NAME_MAX);
  m->jnt_name = carve(c, nb * KHZ_NAME_MAX);
#undef D
#undef I
}

/* The first dof of a tree whose leading block of M is singular, to name it. */
static int first_singular_dof(const double *Mtree, int n, const int *dofs) {
  double *T = malloc((size_t)n * (size_t)n * sizeof(double));
  int bad = dofs[0];
  for (int k = 1; T && k <= n; k++) {
    for (int i = 0; i < k; i++)
      for (int j = 0; j < k; j++) T[i * k + j] = Mtree[i * n + j];
    if (khzu_cholFactor(T, k) != 0) {
      bad = dofs[k - 1];
      break;
    }
  }
  free(T);
  return bad;
}

/* Effective inertia of each dof at q0, 1 / (M^-1)_ii, and a positive-
 * definiteness check of M. M is block diagonal over the trees, so each tree's
 * block is factored alone: O(sum of n_tree^3), not O(nv^3) (a pile of a
 * thousand free bodies is a thousand 6 x 6 blocks). */
static int compute_meff(khzModel *m, char *err, size_t errsz) {
  if (m->nv == 0) return 0;
  khzData *d = khz_makeData(m, 0);
  int nv = m->nv;
  int *local = malloc((size_t)nv * sizeof(int)), *dofs = malloc((size_t)nv * sizeof(int));
  double *M = NULL, *Mcopy = NULL, *e = malloc((size_t)nv * sizeof(double));
  int rc = 0, nmax = 0;
  if (!d || !local || !dofs || !e) {
    rc = fail(err, errsz, "out of memory");
    goto done;
  }
  for (int r = 1; r < m->nbody; r++) { /* the largest tree's dof count sizes the block */
    if (m->body_root[r] != r) continue;
    int n = 0;
    for (int i = r; i < m->nbody; i++)
      if (m->body_root[i] == r) n += m->jnt_nv[i];
    if (n > nmax) nmax = n;
  }
  M = malloc((size_t)nmax * (size_t)nmax * sizeof(double));
  Mcopy = malloc((size_t)nmax * (size_t)nmax * sizeof(double));
  if (nmax && (!M || !Mcopy)) {
    rc = fail(err, errsz, "out of memory");
    goto done;
  }
  khz_compositeInertia(m, d, m->q0);
  for (int r = 1; r < m->nbody && rc == 0; r++) {
    if (m->body_root[r] != r) continue;
    int n = 0;
    for (int i = r; i < m->nbody; i++)
      if (m->body_root[i] == r)
        for (int k = 0; k < m->jnt_nv[i]; k++) {
          dofs[n] = m->jnt_dofadr[i] + k;
          local[dofs[n]] = n;
          n++;
        }
    if (n == 0) continue;
    khz_crbaBlock(m, d, r, local, n, M);
    memcpy(Mcopy, M, (size_t)n * (size_t)n * sizeof(double));
    if (khzu_cholFactor(M, n) != 0) {
      int b = m->dof_body[first_singular_dof(Mcopy, n, dofs)];
      rc = fail(err, errsz,
                "joint '%s' (body '%s'): the mass matrix is singular: nothing with mass or "
                "inertia moves with this joint",
                m->jnt_name[b][0] ? m->jnt_name[b] : "(unnamed)", m->body_name[b]);
      break;
    }
    for (int i = 0; i < n; i++) { /* solve M x = e_i and read x_i */
      memset(e, 0, (size_t)n * sizeof(double));
      e[i] = 1;
      khzu_cholSolve(M, n, e);
      m->dof_meff[dofs[i]] = 1 / e[i];
    }
  }
done:
  free(M);
  free(Mcopy);
  free(e);
  free(local);
  free(dofs);
  khz_deleteData(&d);
  return rc;
}

/* the default scratch stack: RK4 stages (4 q/qd/qdd copies), a rollback
 * copy, two nv x nv matrices, per-body temporaries, the collision pass, the
 * contact stages, and slack */
static size_t scratch_bytes(const khzModel *m) {
  size_t nq = (size_t)m->nq, nv = (size_t)m->nv;
  return (16 * (nq + nv) + 2 * nv * nv + (64 + 24) * (size_t)m->nbody) * sizeof(double) +
         khz_collisionStackBytes(m) + khz_contactStackBytes(m) + khz_constraintStackBytes(m) +
         khz_islandStackBytes(m) + 65536;
}

khzModel *khz_compile(const khzSpec *s, char *err, size_t errsz) {
  if (err && errsz) err[0] = 0;
  if (!s || s->nbody < 1) {
    fail(err, errsz, "empty spec");
    return NULL;
  }
  for (int i = 1; i < s->nbody; i++)
    if (check_body(s, i, err, errsz) < 0) return NULL;
  for (int i = 0; i < s->nexclude; i++)
    for (int k = 0; k < 2; k++)
      if (s->exclude[2 * i + k] < 0 || s->exclude[2 * i + k] >= s->nbody) {
        fail(err, errsz, "contact exclusion %d: body index %d does not exist", i,
             s->exclude[2 * i + k]);
        return NULL;
      }
  for (int i = 0; i < s->neq; i++)
    if (khz_constraintCheck(&s->eq[i], i, s->nbody, err, errsz) < 0) return NULL;
  for (int i = 0; i < s->ngeom; i++)
    if (check_geom(s, i, err, errsz) < 0) return NULL;
  if (!finite_n(s->gravity, 3) || !(s->timestep > 0) || !isfinite(s->timestep)) {
    fail(err, errsz, "gravity must be finite and the timestep positive");
    return NULL;
  }
  if (!(s->max_substep >= 0) || !isfinite(s->max_substep)) {
    fail(err, errsz, "max_substep %g must be finite and >= 0 (0: no substeps)", s->max_substep);
    return NULL;
  }
  if (s->contact.method == KHZ_CONTACT_LCP && s->neq > 0) {
    fail(err, errsz, "contact method 'lcp': the model has %d equality constraints, which the LCP "
         "method does not solve (use penalty or deepest)", s->neq);
    return NULL;
  }
  if (!(s->sleep.velocity >= 0) || !isfinite(s->sleep.velocity) || !(s->sleep.time >= 0) ||
      !isfinite(s->sleep.time)) {
    fail(err, errsz, "sleep: velocity %g m/s and time %g s must be finite and >= 0", s->sleep.velocity,
         s->sleep.time);
    return NULL;
  }

  /* sizes */
  khzModel tmp = {0};
  tmp.nbody = s->nbody;
  tmp.ngeom = s->ngeom;
  tmp.nmesh = s->nmesh;
  tmp.nexclude = s->nexclude;
  tmp.neq = s->neq;
  for (int i = 0; i < s->nmesh; i++) tmp.nmeshvert += s->mesh[i].nvert, tmp.nmeshface += s->mesh[i].nface;
  for (int i = 1; i < s->nbody; i++) {
    int nq, nv;
    joint_dims(s->body[i].joint_type, &nq, &nv);
    tmp.nq += nq;
    tmp.nv += nv;
  }
  carver c = {0};
  layout_model(&tmp, &c);
  khzModel *m = calloc(1, sizeof *m);
  void *buffer = calloc(1, c.used + 64);
  if (!m || !buffer) {
    free(m);
    free(buffer);
    fail(err, errsz, "out of memory");
    return NULL;
  }
  *m = tmp;
  m->buffer = buffer;
  m->nbuffer = c.used + 64;
  c.base = (unsigned char *)(((uintptr_t)buffer + 63) & ~(uintptr_t)63);
  c.used = 0;
  layout_model(m, &c);

  memcpy(m->gravity, s->gravity, sizeof m->gravity);
  m->timestep = s->timestep;
  m->max_substep = s->max_substep;
  m->integrator = s->integrator;
  m->limit_hz = 50;
  m->limit_zeta = 1;

  /* bodies and joints */
  int qadr = 0, dofadr = 0;
  for (int i = 0; i < s->nbody; i++) {
    const khzBodySpec *b = &s->body[i];
    snprintf(m->body_name[i], KHZ_NAME_MAX, "%s", b->name);
    snprintf(m->jnt_name[i], KHZ_NAME_MAX, "%s", i ? b->joint_name : "");
    m->body_parent[i] = i ? b->parent : -1;
    m->body_root[i] = (i == 0 || b->parent == 0) ? i : m->body_root[b->parent];
    m->body_mass[i] = i ? b->mass : 0;
    memcpy(m->body_com + 3 * i, b->com, 3 * sizeof(double));
    const double *in = b->inertia;
    double Ic[9] = {in[0], in[3], in[4], in[3], in[1], in[5], in[4], in[5], in[2]};
    if (!i) memset(Ic, 0, sizeof Ic);
    memcpy(m->body_inertia + 9 * i, Ic, sizeof Ic);

    double quat[4] = {b->quat[0], b->quat[1], b->quat[2], b->quat[3]};
    khzu_normalizeQuat(quat);
    double pos[3] = {b->pos[0], b->pos[1], b->pos[2]};
    khzJointType type = i ? b->joint_type : KHZ_JOINT_FIXED;
    int nq, nv;
    joint_dims(type, &nq, &nv);
    double q0[7], qd0[6];
    memcpy(q0, b->q0, sizeof q0);
    memcpy(qd0, b->qd0, sizeof qd0);
    if (type == KHZ_JOINT_FLOATING) {
      /* fold the joint origin into q0 so that floating q is the world pose */
      double *qq = q0 + 3;
      if (khzu_dot3(qq + 1, qq + 1) + qq[0] * qq[0] < 1e-18) qq[0] = 1, qq[1] = qq[2] = qq[3] = 0;
      khzu_normalizeQuat(qq);
      double R[9], p[3];
      khzu_quat2mat(R, quat);
      khzu_mulMatVec3(p, R, q0);
      for (int k = 0; k < 3; k++) q0[k] = pos[k] + p[k];
      /* the linear velocity likewise into the world frame; the angular one is in the
       * body frame and stays */
      khzu_mulMatVec3(p, R, qd0);
      khzu_copy3(qd0, p);
      khzu_mulQuat(qq, quat, qq);
      khzu_normalizeQuat(qq);
      pos[0] = pos[1] = pos[2] = 0;
      quat[0] = 1, quat[1] = quat[2] = quat[3] = 0;
    } else if (type == KHZ_JOINT_SPHERICAL) {
      if (khzu_dot3(q0 + 1, q0 + 1) + q0[0] * q0[0] < 1e-18) q0[0] = 1, q0[1] = q0[2] = q0[3] = 0;
      khzu_normalizeQuat(q0);
    }
    memcpy(m->body_pos + 3 * i, pos, sizeof pos);
    memcpy(m->body_quat + 4 * i, quat, sizeof quat);
    khzu_quat2mat(m->body_rot + 9 * i, quat);

    m->jnt_type[i] = type;
    m->jnt_qadr[i] = qadr;
    m->jnt_dofadr[i] = dofadr;
    m->jnt_nq[i] = nq;
    m->jnt_nv[i] = nv;
    double axis[3] = {b->axis[0], b->axis[1], b->axis[2]};
    double an = sqrt(khzu_dot3(axis, axis));
    if (an > 0) axis[0] /= an, axis[1] /= an, axis[2] /= an;
    memcpy(m->jnt_axis + 3 * i, axis, sizeof axis);
    int axial = type == KHZ_JOINT_REVOLUTE || type == KHZ_JOINT_PRISMATIC;
    m->jnt_limited[i] = axial && b->limited;
    m->jnt_range[2 * i] = m->jnt_limited[i] ? b->lower : 0;
    m->jnt_range[2 * i + 1] = m->jnt_limited[i] ? b->upper : 0;
    m->jnt_vel_limit[i] = b->velocity_limit;
    memcpy(m->q0 + qadr, q0, (size_t)nq * sizeof(double));
    memcpy(m->qd0 + dofadr, qd0, (size_t)nv * sizeof(double));
    for (int k = 0; k < nv; k++) {
      m->dof_body[dofadr + k] = i;
      m->dof_damping[dofadr + k] = b->damping;
      m->dof_friction[dofadr + k] = b->friction;
      m->dof_armature[dofadr + k] = b->armature;
      m->dof_effort[dofadr + k] = b->effort_limit;
      int scalar = type == KHZ_JOINT_REVOLUTE || type == KHZ_JOINT_CONTINUOUS ||
                   type == KHZ_JOINT_PRISMATIC;
      m->dof_stiffness[dofadr + k] = scalar ? b->stiffness : 0;
      m->dof_springref[dofadr + k] = scalar ? b->springref : 0;
    }
    qadr += nq;
    dofadr += nv;
  }

  /* excluded body pairs */
  if (s->nexclude > 0)
    memcpy(m->exclude_body, s->exclude, 2 * (size_t)s->nexclude * sizeof(int));

  /* meshes */
  int vadr = 0, fadr = 0;
  for (int i = 0; i < s->nmesh; i++) {
    const khzMeshSpec *ms = &s->mesh[i];
    m->mesh_vertadr[i] = vadr, m->mesh_vertnum[i] = ms->nvert;
    m->mesh_faceadr[i] = fadr, m->mesh_facenum[i] = ms->nface;
    memcpy(m->mesh_vert + 3 * vadr, ms->vert, (size_t)(3 * ms->nvert) * sizeof(double));
    memcpy(m->mesh_face + 3 * fadr, ms->face, (size_t)(3 * ms->nface) * sizeof(int));
    snprintf(m->mesh_name[i], KHZ_NAME_MAX, "%s", ms->name);
    vadr += ms->nvert, fadr += ms->nface;
  }

  /* contact settings and capacities */
  m->contact = s->contact;
  m->sleep = s->sleep;
  m->max_points = s->contact.max_points > 0 ? s->contact.max_points : 64;
  m->npair_max = s->contact.max_pairs > 0 ? s->contact.max_pairs : 4 * s->ngeom + 16;

  /* each tree's extent in body order: the loops over one tree's bodies stop
   * at its last instead of scanning every body after its root */
  for (int i = 0; i < m->nbody; i++) m->body_treeend[m->body_root[i]] = i + 1;

  /* subtree masses, leaves to root */
  for (int i = 0; i < m->nbody; i++) m->body_subtreemass[i] = m->body_mass[i];
  for (int i = m->nbody - 1; i > 0; i--) m->body_subtreemass[m->body_parent[i]] += m->body_subtreemass[i];
  khz_dynamicsZeros(m);
  khz_passiveTerms(m);
  m->ntree_moving = 0;
  for (int i = 1; i < m->nbody; i++) m->ntree_moving += khz_bodyCanSleep(m, i);

  /* geoms */
  for (int i = 0; i < s->ngeom; i++) {
    const khzGeomSpec *g = &s->geom[i];
    m->geom_body[i] = g->body;
    m->geom_type[i] = g->type;
    memcpy(m->geom_size + 3 * i, g->size, 3 * sizeof(double));
    memcpy(m->geom_pos + 3 * i, g->pos, 3 * sizeof(double));
    double q[4] = {g->quat[0], g->quat[1], g->quat[2], g->quat[3]};
    khzu_normalizeQuat(q);
    memcpy(m->geom_quat + 4 * i, q, sizeof q);
    m->geom_visual[i] = g->visual;
    memcpy(m->geom_rgba + 4 * i, g->rgba, 4 * sizeof(double));
    m->geom_friction[i] = g->friction;
    snprintf(m->geom_mesh[i], KHZ_PATH_MAX, "%s", g->meshfile);
    m->geom_meshid[i] = g->type == KHZ_GEOM_MESH ? g->mesh : -1;
    m->geom_convex[i] = g->convex;
    m->geom_contype[i] = g->contype;
    m->geom_conaffinity[i] = g->conaffinity;
    m->geom_gain[3 * i] = g->kp, m->geom_gain[3 * i + 1] = g->kv, m->geom_gain[3 * i + 2] = g->ki;
  }

  /* collision data: shapes, hulls, triangle-mesh distance fields, filters */
  if (khz_collisionCompile(m, err, errsz) < 0) {
    khz_deleteModel(&m);
    return NULL;
  }
  khz_islandReach(m); /* from the geoms' bounding spheres */

  if (m->contact.method == KHZ_CONTACT_PEG && khz_pegRefusal(m)) {
    fail(err, errsz, "contact method 'peg': %s", khz_pegRefusal(m));
    khz_deleteModel(&m);
    return NULL;
  }

  if (compute_meff(m, err, errsz) < 0) {
    khz_deleteModel(&m);
    return NULL;
  }
  m->stack_bytes = scratch_bytes(m);
  /* equality constraints: copied, then those to hold at q0 completed there */
  if (khz_constraintCompile(m, s->eq, err, errsz) < 0) {
    khz_deleteModel(&m);
    return NULL;
  }
  return m;
}

void khz_deleteModel(khzModel **m_p) {
  if (!m_p || !*m_p) return;
  free((*m_p)->buffer);
  free((*m_p)->collision);
  free(*m_p);
  *m_p = NULL;
}

const char *khz_contactMethodRefusal(const khzModel *m, int method) {
  if (method == KHZ_CONTACT_LCP && m->neq > 0)
    return "the LCP method does not solve the model's equality constraints (use penalty or deepest)";
  if (method == KHZ_CONTACT_PEG) return khz_pegRefusal(m);
  return NULL;
}
