/* engine_mujoco.c — the benchScene built in MuJoCo 2.2.2 (see peer.h).
 *
 * The scene is written out as an MJCF string and compiled with mj_loadXML
 * from a virtual file, so that MuJoCo's own compiler builds the model exactly
 * as a MuJoCo user would. Free bodies are top-level bodies with a free joint;
 * a hinge child is nested in its parent's body with a hinge joint, its pose
 * and joint expressed in the parent's and its own frame. Every body carries an
 * explicit inertial at its frame origin with diagonal inertia (the body frame
 * is the principal-axes COM frame of peer.h), and the compiler is told not to
 * infer inertia from geoms, so geom densities play no part.
 *
 * Stepping is mj_step2 then mj_step1, which is mj_step split at the other
 * seam: after every step the positions, velocities and contacts of the new
 * state are computed, so get_state reads fresh kinematics (after a plain
 * mj_step, xpos and cvel still describe the state before the step) and
 * apply_force's Jacobian is taken at the state the force acts on.
 */
#include "peer.h"

#include <mujoco/mujoco.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mujocoWorld {
  mjModel *m;
  mjData *d;
  int nbody;
  int *bid;        /* MuJoCo body id of each scene body */
  int warned[mjNWARNING];
} mujocoWorld;

/* ---------------------------------------------------------------- errors */

static void set_err(char *err, int errsz, const char *fmt, ...) {
  if (!err || errsz <= 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, (size_t)errsz, fmt, ap);
  va_end(ap);
}

/* MuJoCo's default warning handler prints to stdout and appends to
 * MUJOCO_LOG.TXT in the working directory; the driver's stdout is its
 * report, so warnings go to stderr instead. */
static void warn_to_stderr(const char *msg) { fprintf(stderr, "mujoco: %s\n", msg); }

/* ------------------------------------------------------ growing string */

typedef struct strbuf {
  char *s;
  size_t len, cap;
  int failed;
} strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->failed = 1;
      return;
    }
    if (b->s && b->len + (size_t)n < b->cap) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap <= b->len + (size_t)n) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->failed = 1;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
}

/* "x y z" with round-trip precision. */
static void sb_vec(strbuf *b, const char *attr, const double *v, int n) {
  sb_printf(b, " %s=\"", attr);
  for (int i = 0; i < n; i++) sb_printf(b, i ? " %.17g" : "%.17g", v[i]);
  sb_printf(b, "\"");
}

/* ------------------------------------------------------- frame algebra */

static void quat_unit(double out[4], const double q[4]) {
  mju_copy4(out, q);
  mju_normalize4(out);
}

/* v expressed in the frame (p, q): q^-1 (v - p) for points, q^-1 v for
 * directions (p = NULL). */
static void to_frame(double out[3], const double v[3], const double p[3], const double q[4]) {
  double d[3], qinv[4], qu[4];
  quat_unit(qu, q);
  if (p) mju_sub3(d, v, p);
  else mju_copy3(d, v);
  mju_negQuat(qinv, qu);
  mju_rotVecQuat(out, d, qinv);
}

/* ----------------------------------------------------------- validation */

static int check_shape(const benchShape *s, int is_static, char *err, int errsz) {
  if (s->type == BENCH_PLANE && !is_static) {
    set_err(err, errsz, "mujoco: a plane must be a static shape");
    return 0;
  }
  if (s->type < BENCH_PLANE || s->type > BENCH_CYLINDER) {
    set_err(err, errsz, "mujoco: unknown shape type %d", (int)s->type);
    return 0;
  }
  return 1;
}

/* Parents in range and no cycles, so the nested MJCF is a tree. */
static int check_scene(const benchScene *sc, char *err, int errsz) {
  if (sc->nbody < 0 || sc->nshape < 0 || sc->nstatic < 0 || sc->timestep <= 0) {
    set_err(err, errsz, "mujoco: bad scene sizes or timestep");
    return 0;
  }
  for (int i = 0; i < sc->nbody; i++) {
    const benchBody *b = &sc->body[i];
    if (b->parent >= sc->nbody || b->parent == i || b->mass <= 0) {
      set_err(err, errsz, "mujoco: body %d (%s): bad parent or mass", i, b->name);
      return 0;
    }
    if (b->shape0 < 0 || b->nshape < 0 || b->shape0 + b->nshape > sc->nshape) {
      set_err(err, errsz, "mujoco: body %d (%s): shapes out of range", i, b->name);
      return 0;
    }
    for (int k = 0; k < b->nshape; k++)
      if (!check_shape(&sc->shape[b->shape0 + k], 0, err, errsz)) return 0;
    int steps = 0;
    for (int p = b->parent; p >= 0; p = sc->body[p].parent)
      if (++steps > sc->nbody) {
        set_err(err, errsz, "mujoco: body %d (%s): cycle in parents", i, b->name);
        return 0;
      }
  }
  for (int k = 0; k < sc->nstatic; k++)
    if (!check_shape(&sc->static_shape[k], 1, err, errsz)) return 0;
  return 1;
}

/* ----------------------------------------------------------------- MJCF */

static const char *geom_type(benchShapeType t) {
  switch (t) {
    case BENCH_PLANE: return "plane";
    case BENCH_SPHERE: return "sphere";
    case BENCH_BOX: return "box";
    case BENCH_CAPSULE: return "capsule";
    case BENCH_CYLINDER: return "cylinder";
  }
  return "?";
}

static void write_geom(strbuf *b, const benchShape *s) {
  /* MuJoCo's sizes: plane 0 0 = infinite (the third is only the rendering
   * grid spacing); capsule and cylinder are radius, half length along z,
   * as in peer.h. */
  double size[3] = {s->size[0], s->size[1], s->size[2]};
  int nsize = 3;
  if (s->type == BENCH_PLANE) size[0] = 0, size[1] = 0, size[2] = 1;
  if (s->type == BENCH_SPHERE) nsize = 1;
  if (s->type == BENCH_CAPSULE || s->type == BENCH_CYLINDER) nsize = 2;
  double q[4];
  quat_unit(q, s->quat);
  sb_printf(b, "<geom type=\"%s\"", geom_type(s->type));
  sb_vec(b, "size", size, nsize);
  sb_vec(b, "pos", s->pos, 3);
  sb_vec(b, "quat", q, 4);
  sb_printf(b, "/>\n");
}

/* Children lists in scene order, so the MJCF can nest each hinge child in
 * its parent. */
typedef struct tree {
  int *first, *next;
} tree;

static int tree_build(tree *t, const benchScene *sc) {
  int n = sc->nbody > 0 ? sc->nbody : 1;
  t->first = malloc(sizeof(int) * (size_t)n);
  t->next = malloc(sizeof(int) * (size_t)n);
  if (!t->first || !t->next) return 0;
  for (int i = 0; i < sc->nbody; i++) t->first[i] = t->next[i] = -1;
  /* back to front, so that each list comes out in scene order */
  for (int i = sc->nbody - 1; i >= 0; i--) {
    int p = sc->body[i].parent;
    if (p < 0) continue;
    t->next[i] = t->first[p];
    t->first[p] = i;
  }
  return 1;
}

static void tree_free(tree *t) {
  free(t->first);
  free(t->next);
}

static void write_body(strbuf *b, const benchScene *sc, const tree *t, int i);

static void write_body_frame(strbuf *b, const benchScene *sc, int i) {
  const benchBody *bd = &sc->body[i];
  double pos[3], q[4];
  if (bd->parent < 0) {
    mju_copy3(pos, bd->pos);
    quat_unit(q, bd->quat);
  } else { /* nested: pose relative to the parent's frame */
    const benchBody *pb = &sc->body[bd->parent];
    double qp[4], qpinv[4], qc[4];
    to_frame(pos, bd->pos, pb->pos, pb->quat);
    quat_unit(qp, pb->quat);
    quat_unit(qc, bd->quat);
    mju_negQuat(qpinv, qp);
    mju_mulQuat(q, qpinv, qc);
  }
  sb_printf(b, "<body name=\"b%d\"", i);
  sb_vec(b, "pos", pos, 3);
  sb_vec(b, "quat", q, 4);
  sb_printf(b, ">\n");
}

static void write_joint(strbuf *b, const benchBody *bd) {
  if (bd->parent < 0) {
    sb_printf(b, "<freejoint/>\n");
    return;
  }
  /* peer.h gives the hinge in world coordinates at the initial
   * configuration; MJCF wants it in the body's own frame. */
  double anchor[3], axis[3];
  to_frame(anchor, bd->joint_anchor, bd->pos, bd->quat);
  to_frame(axis, bd->joint_axis, NULL, bd->quat);
  sb_printf(b, "<joint type=\"hinge\"");
  sb_vec(b, "pos", anchor, 3);
  sb_vec(b, "axis", axis, 3);
  sb_printf(b, "/>\n");
}

static void write_body(strbuf *b, const benchScene *sc, const tree *t, int i) {
  const benchBody *bd = &sc->body[i];
  write_body_frame(b, sc, i);
  write_joint(b, bd);
  sb_printf(b, "<inertial pos=\"0 0 0\" mass=\"%.17g\"", bd->mass);
  sb_vec(b, "diaginertia", bd->inertia, 3);
  sb_printf(b, "/>\n");
  for (int k = 0; k < bd->nshape; k++) write_geom(b, &sc->shape[bd->shape0 + k]);
  for (int c = t->first[i]; c >= 0; c = t->next[c]) write_body(b, sc, t, c);
  sb_printf(b, "</body>\n");
}

/* Degrees of freedom: 6 per free body, 1 per hinge. */
static double scene_nv(const benchScene *sc) {
  double nv = 0;
  for (int i = 0; i < sc->nbody; i++) nv += sc->body[i].parent < 0 ? 6 : 1;
  return nv;
}

/* MuJoCo 2.2.2 sizes mjData once, from nconmax (contacts) and njmax
 * (constraint rows); overflowing either drops contacts (reported on stderr
 * by note_warnings). A pyramidal condim-3 contact takes 4 rows. mjData's
 * buffer size is an int and its efc arrays are dense-sized (njmax x nv
 * Jacobian, njmax x njmax AR), so njmax is capped to keep the buffer under
 * 2 GB: about 2000 contacts for 1000 free bodies. */
static void contact_sizes(const benchScene *sc, int *nconmax, int *njmax, int *nstack) {
  double nv = scene_nv(sc);
  double want_con = 64.0 + 16.0 * sc->nbody;
  double want_rows = 4.0 * want_con;
  /* bytes per row: J, JT, their colind (24 nv), AR and its colind (12 njmax),
   * ~20 per-row scalars, plus a quarter contact (mjContact ~ 500 B). */
  double a = 12.0, bcoef = 24.0 * nv + 300.0, budget = 1.8e9;
  double cap = (-bcoef + sqrt(bcoef * bcoef + 4.0 * a * budget)) / (2.0 * a);
  if (want_rows > cap) want_rows = cap;
  *njmax = (int)want_rows;
  *nconmax = (int)(want_rows / 4.0);
  /* The compiler's own stack size grows with njmax^2 (7 GB, all of it
   * touched, for 1000 bodies); the Newton solver uses about 3 nv^2 (its
   * Hessian is laid out nv x nv even when sparse) plus a little per row,
   * and running out of stack is a fatal mju_error. */
  double stack = 4.0 * nv * nv + 64.0 * want_rows + 1e6;
  *nstack = stack < 2e9 ? (int)stack : 2000000000;
}

/* MuJoCo's default solver. In 2.2.2 its cost grows steeply with the size
 * of a connected pile (its sparse factorisation has no fill-reducing
 * reordering); "CG" avoids the factorisation but stops unconverged at the
 * iteration cap on the large piles, so Newton stays, the engine's own
 * recommendation. Measured figures: docs/benchmarks.md. */
static const char *const solver = "Newton";

static char *write_mjcf(const benchScene *sc, size_t *len) {
  tree t;
  strbuf b = {0};
  if (!tree_build(&t, sc)) {
    tree_free(&t);
    return NULL;
  }
  int nconmax, njmax, nstack;
  contact_sizes(sc, &nconmax, &njmax, &nstack);
  sb_printf(&b, "<mujoco model=\"bench\">\n");
  /* balanceinertia only touches inertias that break the triangle inequality
   * (impossible bodies, or a flat plate's rounding), which MuJoCo would
   * otherwise refuse to compile. */
  sb_printf(&b, "<compiler inertiafromgeom=\"false\" balanceinertia=\"true\" angle=\"radian\"/>\n");
  sb_printf(&b, "<size nconmax=\"%d\" njmax=\"%d\" nstack=\"%d\"/>\n", nconmax, njmax, nstack);
  sb_printf(&b, "<option timestep=\"%.17g\"", sc->timestep);
  sb_vec(&b, "gravity", sc->gravity, 3);
  /* MuJoCo's defaults, spelled out so the settings line is checkable. */
  sb_printf(&b, " integrator=\"Euler\" solver=\"%s\" cone=\"pyramidal\""
                " iterations=\"100\" tolerance=\"1e-8\"/>\n", solver);
  /* condim 3: sliding friction only, so the torsional and rolling
   * coefficients are MuJoCo's defaults and unused. */
  sb_printf(&b, "<default><geom condim=\"3\" friction=\"%.17g 0.005 0.0001\"/></default>\n",
            sc->mu);
  sb_printf(&b, "<worldbody>\n");
  for (int k = 0; k < sc->nstatic; k++) write_geom(&b, &sc->static_shape[k]);
  for (int i = 0; i < sc->nbody; i++)
    if (sc->body[i].parent < 0) write_body(&b, sc, &t, i);
  sb_printf(&b, "</worldbody>\n</mujoco>\n");
  tree_free(&t);
  if (b.failed) {
    free(b.s);
    return NULL;
  }
  *len = b.len;
  return b.s;
}

/* ------------------------------------------------------------- loading */

static mjModel *load_mjcf(const char *xml, size_t len, char *err, int errsz) {
  /* mjVFS holds its file names inline (~2 MB): heap, not stack. */
  mjVFS *vfs = malloc(sizeof *vfs);
  if (!vfs) {
    set_err(err, errsz, "mujoco: out of memory");
    return NULL;
  }
  mj_defaultVFS(vfs);
  /* The terminating NUL goes in too: the parser reads a C string. */
  if (len + 1 > (size_t)2147483647 || mj_makeEmptyFileVFS(vfs, "bench.xml", (int)(len + 1))) {
    set_err(err, errsz, "mujoco: cannot make the virtual MJCF file");
    free(vfs);
    return NULL;
  }
  memcpy(vfs->filedata[mj_findFileVFS(vfs, "bench.xml")], xml, len + 1);
  char msg[1000] = "";
  mjModel *m = mj_loadXML("bench.xml", vfs, msg, (int)sizeof msg);
  if (!m) set_err(err, errsz, "mujoco: %s", msg);
  mj_deleteVFS(vfs);
  free(vfs);
  return m;
}

/* Initial velocities: a free joint's qvel is the linear velocity of the body
 * origin (the COM here) in the world and the angular velocity in the body
 * frame; a hinge's is the angular velocity relative to the parent about the
 * axis. */
static void set_velocities(mujocoWorld *w, const benchScene *sc) {
  for (int i = 0; i < sc->nbody; i++) {
    const benchBody *bd = &sc->body[i];
    int dof = w->m->jnt_dofadr[w->m->body_jntadr[w->bid[i]]];
    mjtNum *qv = w->d->qvel + dof;
    if (bd->parent < 0) {
      mju_copy3(qv, bd->vel);
      to_frame(qv + 3, bd->angvel, NULL, bd->quat);
    } else {
      double rel[3];
      mju_sub3(rel, bd->angvel, sc->body[bd->parent].angvel);
      qv[0] = mju_dot3(rel, bd->joint_axis);
    }
  }
}

static int map_bodies(mujocoWorld *w, char *err, int errsz) {
  for (int i = 0; i < w->nbody; i++) {
    char name[32];
    snprintf(name, sizeof name, "b%d", i);
    w->bid[i] = mj_name2id(w->m, mjOBJ_BODY, name);
    if (w->bid[i] < 0 || w->m->body_jntnum[w->bid[i]] != 1) {
      set_err(err, errsz, "mujoco: body %d missing from the compiled model", i);
      return 0;
    }
  }
  return 1;
}

/* --------------------------------------------------------------- engine */

static void mujoco_destroy(void *world);

static void *mujoco_create(const benchScene *sc, char *err, int errsz) {
  if (!check_scene(sc, err, errsz)) return NULL;
  mju_user_warning = warn_to_stderr;
  size_t len = 0;
  char *xml = write_mjcf(sc, &len);
  if (!xml) {
    set_err(err, errsz, "mujoco: out of memory writing MJCF");
    return NULL;
  }
  mujocoWorld *w = calloc(1, sizeof *w);
  if (w) w->bid = malloc(sizeof(int) * (size_t)(sc->nbody > 0 ? sc->nbody : 1));
  if (!w || !w->bid) {
    free(xml);
    if (w) free(w);
    set_err(err, errsz, "mujoco: out of memory");
    return NULL;
  }
  w->nbody = sc->nbody;
  w->m = load_mjcf(xml, len, err, errsz);
  free(xml);
  if (w->m) w->d = mj_makeData(w->m);
  if (!w->m || !w->d || !map_bodies(w, err, errsz)) {
    if (w->m && !w->d) set_err(err, errsz, "mujoco: mj_makeData failed");
    mujoco_destroy(w);
    return NULL;
  }
  set_velocities(w, sc);
  mj_step1(w->m, w->d); /* kinematics and contacts of the initial state */
  return w;
}

static void mujoco_apply_force(void *world, int body, const double force[3],
                               const double point[3]) {
  mujocoWorld *w = world;
  const mjtNum torque[3] = {0, 0, 0};
  mj_applyFT(w->m, w->d, force, torque, point, w->bid[body], w->d->qfrc_applied);
}

/* Report each kind of warning once per world, when it first occurs (MuJoCo
 * itself reports only the first occurrence per mjData). */
static void note_warnings(mujocoWorld *w) {
  static const char *what[mjNWARNING] = {
      [mjWARN_CONTACTFULL] = "contact list full (nconmax): contacts dropped",
      [mjWARN_CNSTRFULL] = "constraint rows full (njmax): contacts dropped",
      [mjWARN_BADQACC] = "bad qacc: state reset",
  };
  for (int k = 0; k < mjNWARNING; k++)
    if (what[k] && w->d->warning[k].number && !w->warned[k]) {
      w->warned[k] = 1;
      fprintf(stderr, "mujoco: %s (at t = %g s)\n", what[k], w->d->time);
    }
}

static void mujoco_step(void *world) {
  mujocoWorld *w = world;
  mj_step2(w->m, w->d);
  mju_zero(w->d->qfrc_applied, w->m->nv); /* forces last one step */
  mj_step1(w->m, w->d);
  note_warnings(w);
}

static void mujoco_get_state(void *world, int body, double pos[3], double quat[4],
                             double vel[3], double angvel[3]) {
  mujocoWorld *w = world;
  int id = w->bid[body];
  mjtNum v[6];
  mju_copy3(pos, w->d->xpos + 3 * id);
  mju_copy4(quat, w->d->xquat + 4 * id);
  /* [angular linear] at the body's COM, world orientation (flg_local 0);
   * the body origin is the COM, as the inertial sits at the origin. */
  mj_objectVelocity(w->m, w->d, mjOBJ_BODY, id, v, 0);
  mju_copy3(angvel, v);
  mju_copy3(vel, v + 3);
}

static void mujoco_destroy(void *world) {
  mujocoWorld *w = world;
  if (!w) return;
  if (w->d) mj_deleteData(w->d);
  if (w->m) mj_deleteModel(w->m);
  free(w->bid);
  free(w);
}

const benchEngine bench_engine_mujoco = {
    .name = "mujoco",
    .settings = "MuJoCo 2.2.2: semi-implicit Euler, Newton solver (at most 100 iterations, "
                "tol 1e-8), pyramidal cones, condim 3 (sliding friction mu only), default soft "
                "contact (solref 0.02 1, solimp 0.9 0.95 0.001), no margin, parent-child "
                "contacts excluded; restitution ignored (MuJoCo has no coefficient of "
                "restitution); contacts capped by 2.2.2's 2 GB mjData (~2000 at 1000 bodies)",
    .create = mujoco_create,
    .apply_force = mujoco_apply_force,
    .step = mujoco_step,
    .get_state = mujoco_get_state,
    .destroy = mujoco_destroy,
};
