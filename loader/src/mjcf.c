/* mjcf.c — the MJCF loader: reads a MuJoCo XML model (libxml2), with its
 * <include>d files and mesh assets (assimp), and appends its bodies to a
 * khzSpec (docs/mjcf.md lists what is read).
 *
 * Semantics follow MuJoCo 2.2 (the XML reference and its compiler,
 * user_objects.cc / user_model.cc), checked against Debian's libmujoco:
 *   - <default> classes nest; an element takes each attribute from itself, else
 *     from its class (its `class`, else the nearest body `childclass`, else
 *     "main"), else from that class's ancestors. Partial vectors (size,
 *     friction, gear) overlay the inherited values as MuJoCo does.
 *   - A body's joints act in document order, each about its anchor (joint
 *     pos) in the body frame as moved by the joints before it. khz has one
 *     joint per body, so a body with n joints becomes n khz bodies: body k
 *     sits at anchor k (relative to anchor k - 1), the first n - 1 are
 *     massless and called "BODY:JOINT", the last carries the body's name,
 *     mass, geoms and children. Its frame is the MJCF body frame moved to the
 *     last anchor; everything hanging from it is shifted by that offset.
 *   - A hinge's ref turns the joint origin by -ref about the axis (a slide's
 *     shifts it by -ref along the axis) and q0 = ref, so that khz's q equals
 *     MuJoCo's qpos.
 *   - Mass and inertia from geoms: density (1000) times volume, or the geom's
 *     mass; MuJoCo's solids (a capsule is a cylinder plus two hemispheres as
 *     mjCGeom::SetInertia computes it), summed with the parallel-axis theorem
 *     over the geoms whose group lies in <compiler inertiagrouprange>.
 *     <inertial> replaces them per <compiler inertiafromgeom>.
 *   - Limits: `limited` true / false / auto; auto means "range given" with
 *     <compiler autolimits="true"> and is an error otherwise (MuJoCo 2.2's rule).
 *   - A <motor> on a hinge or slide sets the joint's effort limit to
 *     |gear| * max|ctrlrange| (capped by |gear| * max|forcerange|); several
 *     motors on one joint add up.
 *
 * Every element or attribute outside the subset draws one warning per kind,
 * with the first place it occurs and how often; structural elements that
 * would change the tree (composite, frame, ...) are errors. <include> is
 * expanded in the parsed document first; nodes copied from an included file
 * carry it (node->_private) for messages. The load
 * is all-or-nothing: the file is read into private arrays and the spec is
 * touched only at the end; warnings are delivered only when it succeeds.
 */
#include "khz/load.h"
#include "load_util.h"
#include "mesh.h"

#include <errno.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KHZ_MJCF_PI 3.14159265358979323846
#define KHZ_MJCF_MAX_SRC 256 /* default classes nested at most this deep */
#define KHZ_MJCF_MINVAL 1e-10
#define KHZ_MJCF_MAX_INCLUDE 16 /* <include> nested at most this deep */
#define KHZ_MJCF_MAX_SUBSTEP 0.002 /* s: longer timesteps run in substeps (MuJoCo's default) */
#define KHZ_MJCF_MAX_INCLUDES 256 /* and at most this many in all */

/* one <default> element: a class; several top-level ones chain as "main" */
typedef struct mjcf_class {
  const char *name;
  int parent; /* -1 for the first top-level <default> */
  xmlNodePtr node;
} mjcf_class;

/* one kind of warning: the first message and how often the kind occurred */
typedef struct mjcf_warn {
  char *key;
  char *msg;
  long line;
  int order; /* first occurrence, for ties */
  int count;
} mjcf_warn;

/* one geom's contribution to its body's mass, in the MJCF body frame */
typedef struct mjcf_mass {
  double mass;
  double pos[3];     /* the geom's centre of mass */
  double quat[4];
  double inertia[9]; /* about its centre of mass, in the geom frame (row-major) */
} mjcf_mass;

/* a file brought in by <include>: the name its nodes report (node->_private
 * holds its index in incs + 1, not a pointer: incs is realloc'd as it grows) */
typedef struct mjcf_file {
  char *path;
  char *real; /* its canonical path (realpath, else path), to find include loops */
  int depth;  /* 1 for a file the model includes, 2 for one that file includes, ... */
  int parent; /* the index of the file that includes it, -1 for the model */
} mjcf_file;

/* one <mesh> asset */
typedef struct mjcf_mesh {
  const char *name;
  xmlNodePtr node;
  const char *file;
  double scale[3];
  int state;                /* 0 not read yet, 1 read (data = index), -1 cannot be read */
  int data;                 /* index into c->mdata */
  double volume, com[3], I[9]; /* scaled, unit density: volume, centre, inertia about it */
} mjcf_mesh;

/* one <key> */
typedef struct mjcf_key {
  xmlNodePtr node;
  const char *name;
} mjcf_key;

/* what the loader keeps per khz body besides its spec */
typedef struct mjcf_extra {
  int mj_body;     /* MuJoCo's id of the MJCF body this khz body belongs to */
  int mj_joint;    /* MuJoCo's id of its joint, -1 when none */
  int named_joint; /* the joint was named in the file (motors refer to it) */
  int unlimited;   /* a motor without limits drives the joint */
  double effort;   /* summed motor limits */
  double off[3];   /* the khz body frame's origin in the MJCF body frame (last link) */
  xmlNodePtr jnode; /* its <joint>, NULL when none */
} mjcf_extra;

/* one named <site>: a frame on a body that sensors refer to */
typedef struct mjcf_site {
  char name[KHZ_NAME_MAX];
  int body;          /* local khz body index + 1 (0 = the world) */
  double pos[3];     /* in the khz body frame */
  double quat[4];    /* orientation in the khz body frame */
  xmlNodePtr node;
} mjcf_site;

/* one joint of the body being read */
typedef struct mjcf_joint {
  xmlNodePtr node;
  const char *name; /* NULL when unnamed */
  int type;         /* khzJointType: REVOLUTE (hinge), PRISMATIC, SPHERICAL, FLOATING */
  double pos[3], axis[3];
  int limited;
  double range[2];
  double damping, armature, frictionloss, ref, stiffness, springref;
} mjcf_joint;

typedef struct mjcf_ctx {
  /* inputs */
  const char *file;
  char dir[KHZ_PATH_MAX]; /* the model file's directory ("" = the current one) */
  int from_file;          /* file is a file read (not a name for a buffer) */
  const khzMjcfOptions *opt;
  char *err;
  size_t errsz;
  khzSpec *spec;
  int nbody0;

  /* strings returned by libxml2, freed at the end */
  khzXmlStrings strings; /* attribute values of this parse */

  /* <compiler> */
  int degree;
  char eulerseq[4];
  int autolimits;
  int inertiafromgeom; /* 0 false, 1 true, 2 auto */
  int group_lo, group_hi;
  double settotalmass; /* <= 0: unset */
  double boundmass, boundinertia;
  int exactmesh; /* <compiler exactmeshinertia="true"> */
  const char *meshdir, *assetdir;

  /* included files */
  mjcf_file *incs;
  int ninc, capinc;

  /* mesh assets and the mesh data read for them (and the ellipsoid hull) */
  mjcf_mesh *meshes;
  int nmeshes, capmeshes;
  khzMeshData *mdata;
  char (*mname)[KHZ_NAME_MAX];
  int nmdata, capmdata;
  int ellipsoid_mesh; /* index into mdata, -1 until needed */

  /* <option><flag>: 1 = enabled (MuJoCo's defaults) */
  int flag_gravity, flag_contact, flag_limit, flag_passive, flag_frictionloss, flag_equality;
  int flag_actuation;

  /* keyframes, exclusions (khz body pairs, local indices + 1) */
  mjcf_key *keys;
  int nkey, capkey;
  int *excl;
  int nexcl, capexcl;
  khzEqualitySpec *eqs; /* bodies as local indices + 1 (0 = the world) */
  int neq, capeq;
  khzMjcfSensor *sens;
  int nsens, capsens;
  mjcf_site *sites;
  int nsite, capsite;
  khzSensorSpec *hil; /* HIL sensors (object: local khz body index + 1) */
  int nhil, caphil;
  int mj_nsensor;     /* MuJoCo's sensor ids, for unnamed sensors' names */

  /* <option> and <mujoco model> */
  double timestep, gravity[3];
  khzIntegrator integrator;
  int implicit_kv; /* integrator implicit / implicitfast: actuators' kv into joint damping */
  char model[KHZ_NAME_MAX];

  /* default classes */
  mjcf_class *cls;
  int ncls, capcls;
  int main_cls; /* the last top-level <default>, -1 when none */

  /* what will be appended to the spec (geom body = spec index) */
  khzBodySpec *bodies;
  int nbody, capbody;
  khzGeomSpec *geoms;
  int ngeom, capgeom;
  khzMjcfActuator *acts;
  int nact, capact;
  mjcf_extra *extra; /* per body, beside c->bodies (same capacity) */

  /* scratch of the body being read */
  mjcf_mass *masses;
  int nmass, capmass;
  mjcf_joint *joints;
  int njoint, capjoint;

  /* MuJoCo's ids, for the names of unnamed bodies and joints, and the names
   * the file gives (generated ones avoid them) */
  int mj_nbody, mj_njoint;
  const char **given_body, **given_joint;
  int ngiven_body, capgiven_body, ngiven_joint, capgiven_joint;

  /* queued warnings */
  mjcf_warn *warns;
  int nwarn, capwarn;

  /* first parser error */
  char xml_msg[256];
  int xml_line;
} mjcf_ctx;

/* actuator elements: their defaults all feed one actuator default (MuJoCo) */
static const char *const actuator_kinds[] = {"general",     "motor",  "position", "velocity",
                                             "intvelocity", "damper", "cylinder", "muscle",
                                             "adhesion",    NULL};

/* the attributes khz reads, per element */
static const char *const geom_attrs[] = {"name",    "class",       "type",   "size",  "pos",
                                         "quat",    "axisangle",   "xyaxes", "zaxis", "euler",
                                         "fromto",  "density",     "mass",   "rgba",  "friction",
                                         "contype", "conaffinity", "group",  "mesh",  "material",
                                         NULL};
static const char *const joint_attrs[] = {"name",     "class",        "type",      "pos",
                                          "axis",     "range",        "limited",   "damping",
                                          "armature", "frictionloss", "ref",       "stiffness",
                                          "springref", NULL};
static const char *const freejoint_attrs[] = {"name", NULL};
static const char *const body_attrs[] = {"name",   "childclass", "pos",   "quat", "axisangle",
                                         "xyaxes", "zaxis",      "euler", NULL};
static const char *const site_attrs[] = {"name",  "class",  "type",     "size",  "pos",
                                         "quat",  "axisangle", "xyaxes", "zaxis", "euler",
                                         "fromto", "group", "rgba",     "material", "user", NULL};
static const char *const inertial_attrs[] = {"pos",   "quat", "axisangle",   "xyaxes",      "zaxis",
                                             "euler", "mass", "diaginertia", "fullinertia", NULL};
static const char *const motor_attrs[] = {
    "name",       "class",        "joint",     "gear",     "ctrlrange", "ctrllimited",
    "forcerange", "forcelimited", "kp",        "kv",       "gaintype",  "biastype",
    "gainprm",    "biasprm",      "dyntype",   "group",    NULL};
static const char *const option_attrs[] = {"timestep", "gravity", "integrator", NULL};
static const char *const compiler_attrs[] = {
    "angle",        "eulerseq",  "autolimits", "inertiafromgeom", "inertiagrouprange",
    "coordinate",   "settotalmass", "meshdir", "assetdir",        "texturedir",
    "discardvisual", "convexhull", "strippath", "boundmass",      "boundinertia",
    "usethread",    "exactmeshinertia", NULL};
static const char *const mesh_attrs[] = {"name", "class", "file", "scale", NULL};
static const char *const include_attrs[] = {"file", NULL};
static const char *const default_attrs[] = {"class", NULL};
static const char *const mujoco_attrs[] = {"model", NULL};
static const char *const no_attrs[] = {NULL};

/* ------------------------------------------------------------ messages -- */

static int is(xmlNodePtr n, const char *name) {
  return n && n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static int in_list(const char *s, const char *const *list) {
  for (int i = 0; list[i]; i++)
    if (strcmp(s, list[i]) == 0) return 1;
  return 0;
}

/* describes an element for messages: <tag name="...">, and for an element of
 * a default class also which class: <geom> in <default class="body"> */
static void describe(char *out, size_t n, xmlNodePtr node) {
  const char *key = is(node, "default") ? "class" : "name";
  xmlChar *name = xmlGetProp(node, (const xmlChar *)key);
  int len;
  if (name)
    len = snprintf(out, n, "<%s %s=\"%s\">", (const char *)node->name, key, (const char *)name);
  else
    len = snprintf(out, n, "<%s>", (const char *)node->name);
  xmlFree(name);
  if (len < 0 || (size_t)len >= n) return;
  xmlNodePtr p = node->parent;
  if (is(p, "default") && !is(node, "default")) {
    xmlChar *cls = xmlGetProp(p, (const xmlChar *)"class");
    snprintf(out + len, n - (size_t)len, " in <default class=\"%s\">",
             cls ? (const char *)cls : "main");
    xmlFree(cls);
  }
}

/* the file an element comes from: the model's, or an included one's */
static const mjcf_file *node_inc(const mjcf_ctx *c, xmlNodePtr n) {
  intptr_t i = n ? (intptr_t)n->_private : 0;
  return i > 0 && i <= c->ninc ? &c->incs[i - 1] : NULL;
}
static const char *node_file(const mjcf_ctx *c, xmlNodePtr n) {
  const mjcf_file *f = node_inc(c, n);
  return f ? f->path : c->file;
}

/* reports an error "FILE:LINE: <element>: problem"; always returns -1 */
static int fail(mjcf_ctx *c, xmlNodePtr at, const char *fmt, ...) KHZ_PRINTF(3, 4);
static int fail(mjcf_ctx *c, xmlNodePtr at, const char *fmt, ...) {
  char what[256], msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  describe(what, sizeof what, at);
  return khz_loadError(c->err, c->errsz, "%s:%ld: %s: %s", node_file(c, at), xmlGetLineNo(at),
                        what, msg);
}

static int fail_oom(mjcf_ctx *c) {
  return khz_loadError(c->err, c->errsz, "%s: out of memory", c->file);
}

/* queues a warning of kind key in the format of fail(); a kind seen before
 * only counts. Returns 0, or -1 when out of memory. */
static int warn(mjcf_ctx *c, xmlNodePtr at, const char *key, const char *fmt, ...) KHZ_PRINTF(4, 5);
static int warn(mjcf_ctx *c, xmlNodePtr at, const char *key, const char *fmt, ...) {
  for (int i = 0; i < c->nwarn; i++)
    if (strcmp(c->warns[i].key, key) == 0) {
      c->warns[i].count++;
      return 0;
    }
  char what[256], msg[768], line[1280];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  describe(what, sizeof what, at);
  snprintf(line, sizeof line, "%s:%ld: %s: %s", node_file(c, at), xmlGetLineNo(at), what, msg);
  if (c->nwarn == c->capwarn) {
    int cap = c->capwarn ? 2 * c->capwarn : 16;
    mjcf_warn *w = realloc(c->warns, (size_t)cap * sizeof *w);
    if (!w) return fail_oom(c);
    c->warns = w;
    c->capwarn = cap;
  }
  mjcf_warn *w = &c->warns[c->nwarn];
  w->key = strdup(key);
  w->msg = strdup(line);
  w->line = xmlGetLineNo(at);
  w->order = c->nwarn;
  w->count = 1;
  if (!w->key || !w->msg) {
    free(w->key);
    free(w->msg);
    return fail_oom(c);
  }
  c->nwarn++;
  return 0;
}

/* warns about an element khz does not read (one warning per element name) */
static int warn_element(mjcf_ctx *c, xmlNodePtr el, const char *why) {
  char key[160];
  snprintf(key, sizeof key, "element %s", (const char *)el->name);
  return warn(c, el, key, "%s", why);
}

/* warns once per element kind and attribute about attributes outside list,
 * and about any element inside a leaf element (all but default, body,
 * worldbody, option and actuator sections) */
static int check_attrs(mjcf_ctx *c, xmlNodePtr el, const char *kind, const char *const *list) {
  static const char *const containers[] = {"default", "body",   "worldbody", "option",
                                           "mujoco",  "actuator", "asset",   "contact",
                                           "keyframe", "equality", "sensor", NULL};
  if (!in_list(kind, containers))
    for (xmlNodePtr e = el->children; e; e = e->next)
      if (e->type == XML_ELEMENT_NODE &&
          warn_element(c, e, "element not supported by khz (ignored)"))
        return -1;
  for (xmlAttrPtr a = el->properties; a; a = a->next) {
    const char *name = (const char *)a->name;
    if (in_list(name, list)) continue;
    char key[256];
    snprintf(key, sizeof key, "attribute %s %s", kind, name);
    if (warn(c, el, key, "attribute %s is not supported by khz (ignored)", name)) return -1;
  }
  return 0;
}

/* the libxml2 structured error handler: keeps the first error, prints nothing */
static void xml_error(void *user, xmlErrorPtr e) {
  xmlParserCtxtPtr ctxt = user;
  mjcf_ctx *c = ctxt ? ctxt->_private : NULL;
  if (!c || !e || e->level < XML_ERR_ERROR || c->xml_msg[0]) return;
  snprintf(c->xml_msg, sizeof c->xml_msg, "%s", e->message ? e->message : "parse error");
  size_t len = strlen(c->xml_msg);
  while (len > 0 && (c->xml_msg[len - 1] == '\n' || c->xml_msg[len - 1] == ' '))
    c->xml_msg[--len] = 0;
  c->xml_line = e->line;
}

/* warnings in the order of the file */
static int warn_cmp(const void *a, const void *b) {
  const mjcf_warn *wa = a, *wb = b;
  if (wa->line != wb->line) return (wa->line > wb->line) - (wa->line < wb->line);
  return (wa->order > wb->order) - (wa->order < wb->order);
}

static void warn_stderr(void *user, const char *message) {
  (void)user;
  fprintf(stderr, "khz: warning: %s\n", message);
}

/* ------------------------------------------------------------- helpers -- */

/* an attribute's value, owned by the context (NULL when absent or out of memory) */
static const char *attr(mjcf_ctx *c, xmlNodePtr n, const char *name) {
  return khz_xml_attr(&c->strings, n, name);
}

/* parses between min and max finite numbers separated by white space;
 * returns how many, or -1 */
static int parse_nums(const char *s, double *out, int min, int max) {
  const char *p = s;
  int n = 0;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    if (!*p) break;
    if (n == max) return -1;
    char *end;
    double v = strtod(p, &end);
    if (end == p || !isfinite(v)) return -1;
    if (*end && !strchr(" \t\r\n", *end)) return -1;
    out[n++] = v;
    p = end;
  }
  return n >= min ? n : -1;
}

/* grows an array of elements of size sz to hold one more; returns 0 or -1 */
static int grow(mjcf_ctx *c, void **arr, int n, int *cap, size_t sz) {
  if (n < *cap) return 0;
  int nc = *cap ? 2 * *cap : 16;
  void *a = realloc(*arr, (size_t)nc * sz);
  if (!a) return fail_oom(c);
  *arr = a;
  *cap = nc;
  return 0;
}

/* ---------------------------------------------------------------- math -- */

static void quat_mul(double r[4], const double a[4], const double b[4]) {
  double t[4] = {a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                 a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                 a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                 a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]};
  memcpy(r, t, sizeof t);
}

static double norm3(const double v[3]) {
  return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

/* unit quaternion to a row-major rotation matrix */
static void quat2mat(double R[9], const double q[4]) {
  double w = q[0], x = q[1], y = q[2], z = q[3];
  R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y);
  R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
  R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x), R[8] = 1 - 2 * (x * x + y * y);
}

/* rotation by angle about a unit axis */
static void axisangle2quat(double q[4], const double axis[3], double angle) {
  double s = sin(0.5 * angle);
  q[0] = cos(0.5 * angle);
  q[1] = s * axis[0], q[2] = s * axis[1], q[3] = s * axis[2];
}

/* the minimal rotation taking (0, 0, 1) to v (MuJoCo's mjuu_z2quat) */
static void z2quat(double q[4], const double v[3]) {
  double axis[3] = {-v[1], v[0], 0}; /* z x v */
  double s = norm3(axis);
  if (s < KHZ_MJCF_MINVAL) {
    axis[0] = 1, axis[1] = 0, axis[2] = 0;
  } else {
    for (int k = 0; k < 3; k++) axis[k] /= s;
  }
  axisangle2quat(q, axis, atan2(s, v[2]));
}

/* a rotation matrix with columns x, y, z to a unit quaternion */
static void frame2quat(double q[4], const double x[3], const double y[3], const double z[3]) {
  double R[9] = {x[0], y[0], z[0], x[1], y[1], z[1], x[2], y[2], z[2]};
  double tr = R[0] + R[4] + R[8];
  if (tr > 0) {
    double s = 2 * sqrt(1 + tr);
    q[0] = 0.25 * s, q[1] = (R[7] - R[5]) / s, q[2] = (R[2] - R[6]) / s, q[3] = (R[3] - R[1]) / s;
  } else if (R[0] > R[4] && R[0] > R[8]) {
    double s = 2 * sqrt(1 + R[0] - R[4] - R[8]);
    q[0] = (R[7] - R[5]) / s, q[1] = 0.25 * s, q[2] = (R[1] + R[3]) / s, q[3] = (R[2] + R[6]) / s;
  } else if (R[4] > R[8]) {
    double s = 2 * sqrt(1 + R[4] - R[0] - R[8]);
    q[0] = (R[2] - R[6]) / s, q[1] = (R[1] + R[3]) / s, q[2] = 0.25 * s, q[3] = (R[5] + R[7]) / s;
  } else {
    double s = 2 * sqrt(1 + R[8] - R[0] - R[4]);
    q[0] = (R[3] - R[1]) / s, q[1] = (R[2] + R[6]) / s, q[2] = (R[5] + R[7]) / s, q[3] = 0.25 * s;
  }
  double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  for (int k = 0; k < 4; k++) q[k] /= n;
}

/* ------------------------------------------------------------ defaults -- */

/* whether default child d gives values to elements of kind (actuator kinds
 * share one default, as in MuJoCo) */
static int kind_match(xmlNodePtr d, const char *kind) {
  if (d->type != XML_ELEMENT_NODE) return 0;
  if (strcmp(kind, "actuator") == 0) return in_list((const char *)d->name, actuator_kinds);
  return strcmp((const char *)d->name, kind) == 0;
}

/* the elements that give el (of kind) its attribute values, nearest first: el
 * itself (when not NULL), then the <kind> children of class cls and of its
 * ancestors, later children first. Returns the count or -1. */
static int sources(mjcf_ctx *c, xmlNodePtr el, const char *kind, int cls, xmlNodePtr *src) {
  int n = 0;
  if (el) src[n++] = el;
  for (int k = cls; k >= 0; k = c->cls[k].parent)
    for (xmlNodePtr d = c->cls[k].node->last; d; d = d->prev)
      if (kind_match(d, kind)) {
        if (n == KHZ_MJCF_MAX_SRC)
          return fail(c, el ? el : d, "default classes nested more than %d deep", KHZ_MJCF_MAX_SRC);
        src[n++] = d;
      }
  return n;
}

/* the nearest value of attribute name among the sources, and where it was */
static const char *lookup(mjcf_ctx *c, xmlNodePtr *src, int n, const char *name, xmlNodePtr *at) {
  for (int i = 0; i < n; i++) {
    const char *v = attr(c, src[i], name);
    if (v) {
      if (at) *at = src[i];
      return v;
    }
  }
  return NULL;
}

/* reads attribute name as min..max numbers into out, overlaying the values of
 * the sources from the farthest to the nearest (MuJoCo copies a class into
 * its children, then reads what they set). out holds the default on entry.
 * *found (may be NULL) says whether any source set it. */
static int read_vec(mjcf_ctx *c, xmlNodePtr *src, int n, const char *name, double *out, int min,
                    int max, int *found) {
  if (found) *found = 0;
  for (int i = n - 1; i >= 0; i--) {
    const char *v = attr(c, src[i], name);
    if (!v) continue;
    double small[16], *tmp = max <= 16 ? small : malloc((size_t)max * sizeof(double));
    if (!tmp) return fail_oom(c);
    int k = parse_nums(v, tmp, min, max);
    if (k >= 0) memcpy(out, tmp, (size_t)k * sizeof(double));
    if (tmp != small) free(tmp);
    if (k < 0) {
      const char *how = strchr(v, ',') ? "MJCF separates numbers with spaces, not commas"
                                       : "separated by spaces, no nan or inf";
      if (min == max)
        return fail(c, src[i], "attribute %s=\"%s\" is not %d finite number%s: write %d number%s "
                    "(%s)", name, v, min, min > 1 ? "s" : "", min, min > 1 ? "s" : "", how);
      return fail(c, src[i], "attribute %s=\"%s\" is not %d to %d finite numbers: write %d to %d "
                  "numbers (%s)", name, v, min, max, min, max, how);
    }
    if (found) *found = 1;
  }
  return 0;
}

/* reads a keyword attribute: *out = index into words (unchanged when absent) */
static int read_keyword(mjcf_ctx *c, xmlNodePtr *src, int n, const char *name,
                        const char *const *words, int *out) {
  xmlNodePtr at;
  const char *v = lookup(c, src, n, name, &at);
  if (!v) return 0;
  for (int i = 0; words[i]; i++)
    if (strcmp(v, words[i]) == 0) {
      *out = i;
      return 0;
    }
  char list[256] = "";
  for (int i = 0; words[i]; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", words[i]);
  return fail(c, at, "attribute %s=\"%s\" is not one of %s: use one of these (keywords are "
              "case-sensitive)", name, v, list);
}

/* reads a non-negative integer attribute (unchanged when absent) */
static int read_int(mjcf_ctx *c, xmlNodePtr *src, int n, const char *name, long *out) {
  xmlNodePtr at;
  const char *v = lookup(c, src, n, name, &at);
  if (!v) return 0;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n') end++;
  if (end == v || *end || errno || x < 0 || x > (long)INT_MAX)
    return fail(c, at, "attribute %s=\"%s\" is not a non-negative integer: write a whole "
                "number from 0 to %d", name, v, INT_MAX);
  *out = x;
  return 0;
}

static const char *const bool_words[] = {"false", "true", NULL};
static const char *const limited_words[] = {"false", "true", "auto", NULL};

/* the class of an element: its own class attribute, else the inherited one */
static int element_class(mjcf_ctx *c, xmlNodePtr el, int inherited, int *cls) {
  const char *name = attr(c, el, "class");
  if (!name) {
    *cls = inherited;
    return 0;
  }
  for (int k = c->ncls - 1; k >= 0; k--)
    if (strcmp(c->cls[k].name, name) == 0) {
      *cls = k;
      return 0;
    }
  return fail(c, el, "unknown default class \"%s\": define it with <default class=\"%s\"> (class names are case-sensitive)", name, name);
}

/* reads one <default> element (class k) and, recursively, those inside it */
static int read_default(mjcf_ctx *c, xmlNodePtr d, int parent, int top) {
  const char *name = attr(c, d, "class");
  if (top) {
    name = "main";
  } else {
    if (!name || !name[0]) return fail(c, d, "a nested <default> needs a class: add class=\"NAME\"");
    for (int k = 0; k < c->ncls; k++)
      if (strcmp(c->cls[k].name, name) == 0)
        return fail(c, d, "repeated default class name \"%s\" (first at line %ld)", name,
                    xmlGetLineNo(c->cls[k].node));
  }
  if (check_attrs(c, d, "default", default_attrs)) return -1;
  if (grow(c, (void **)&c->cls, c->ncls, &c->capcls, sizeof *c->cls)) return -1;
  int k = c->ncls++;
  c->cls[k].name = name;
  c->cls[k].parent = parent;
  c->cls[k].node = d;
  if (top) c->main_cls = k;

  /* what the class sets: joints, geoms, sites and actuators are read, the rest warned about */
  for (xmlNodePtr e = d->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    const char *en = (const char *)e->name;
    if (is(e, "default")) {
      if (read_default(c, e, k, 0)) return -1;
    } else if (is(e, "joint")) {
      if (check_attrs(c, e, "joint", joint_attrs)) return -1;
    } else if (is(e, "geom")) {
      if (check_attrs(c, e, "geom", geom_attrs)) return -1;
    } else if (in_list(en, actuator_kinds)) {
      if (check_attrs(c, e, "motor", motor_attrs)) return -1;
    } else if (is(e, "mesh")) {
      if (check_attrs(c, e, "mesh", mesh_attrs)) return -1;
    } else if (is(e, "site")) {
      if (check_attrs(c, e, "site", site_attrs)) return -1;
    } else if (is(e, "material")) {
      if (warn_element(c, e, "visual only, no effect on the simulation (ignored)")) return -1;
    } else if (warn_element(c, e, "element not supported by khz (ignored)")) {
      return -1;
    }
  }
  return 0;
}

/* ------------------------------------------------------- orientations -- */

/* the orientation of an element from quat, axisangle, xyaxes, zaxis or euler
 * (at most one per element); the nearest source that has one wins, identity
 * when none has. *found (may be NULL) says whether one was given. */
static int read_orientation(mjcf_ctx *c, xmlNodePtr *src, int n, double q[4], int *found) {
  static const char *const names[] = {"quat", "axisangle", "xyaxes", "zaxis", "euler", NULL};
  q[0] = 1, q[1] = q[2] = q[3] = 0;
  if (found) *found = 0;
  for (int i = 0; i < n; i++) {
    int which = -1, count = 0;
    for (int k = 0; names[k]; k++)
      if (xmlHasProp(src[i], (const xmlChar *)names[k])) which = k, count++;
    if (count == 0) continue;
    if (count > 1)
      return fail(c, src[i], "more than one orientation (quat, axisangle, xyaxes, zaxis, euler): "
                  "keep one of them");
    if (found) *found = 1;
    const char *v = attr(c, src[i], names[which]);
    double a[6];
    static const int len[] = {4, 4, 6, 3, 3};
    if (!v || parse_nums(v, a, len[which], len[which]) < 0)
      return fail(c, src[i], "attribute %s=\"%s\" is not %d finite numbers: write %d numbers "
                  "separated by spaces", names[which], v ? v : "", len[which], len[which]);
    double deg = c->degree ? KHZ_MJCF_PI / 180 : 1;
    switch (which) {
      case 0: { /* quat: normalised */
        double nq = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2] + a[3] * a[3]);
        if (nq < KHZ_MJCF_MINVAL) return fail(c, src[i], "quat is zero");
        for (int k = 0; k < 4; k++) q[k] = a[k] / nq;
        break;
      }
      case 1: { /* axisangle: angle in the compiler's unit */
        double na = norm3(a);
        if (na < KHZ_MJCF_MINVAL) return fail(c, src[i], "axisangle axis is zero");
        double ax[3] = {a[0] / na, a[1] / na, a[2] / na};
        axisangle2quat(q, ax, a[3] * deg);
        break;
      }
      case 2: { /* xyaxes: x normalised, y made orthogonal to it, z = x cross y */
        double nx = norm3(a);
        if (nx < KHZ_MJCF_MINVAL) return fail(c, src[i], "xyaxes: the x axis is zero");
        double x[3] = {a[0] / nx, a[1] / nx, a[2] / nx};
        double d = x[0] * a[3] + x[1] * a[4] + x[2] * a[5];
        double y[3] = {a[3] - d * x[0], a[4] - d * x[1], a[5] - d * x[2]};
        double ny = norm3(y);
        if (ny < KHZ_MJCF_MINVAL)
          return fail(c, src[i], "xyaxes: the y axis is zero or parallel to x");
        for (int k = 0; k < 3; k++) y[k] /= ny;
        double z[3] = {x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2],
                       x[0] * y[1] - x[1] * y[0]};
        frame2quat(q, x, y, z);
        break;
      }
      case 3: { /* zaxis: the minimal rotation taking z there */
        double nz = norm3(a);
        if (nz < KHZ_MJCF_MINVAL) return fail(c, src[i], "zaxis is zero");
        double z[3] = {a[0] / nz, a[1] / nz, a[2] / nz};
        z2quat(q, z);
        break;
      }
      default: { /* euler in <compiler eulerseq>: lowercase moving axes, uppercase fixed */
        for (int k = 0; k < 3; k++) {
          char ch = c->eulerseq[k];
          double ax[3] = {0, 0, 0}, r[4];
          ax[(ch | 0x20) - 'x'] = 1;
          axisangle2quat(r, ax, a[k] * deg);
          if (ch >= 'a')
            quat_mul(q, q, r);
          else
            quat_mul(q, r, q);
        }
        double nq = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        for (int k = 0; k < 4; k++) q[k] /= nq;
        break;
      }
    }
    return 0;
  }
  return 0;
}

/* ---------------------------------------------------- compiler, option -- */

static int read_compiler(mjcf_ctx *c, xmlNodePtr el) {
  xmlNodePtr src[1] = {el};
  if (check_attrs(c, el, "compiler", compiler_attrs)) return -1;

  /* angle unit and euler sequence */
  static const char *const angle_words[] = {"radian", "degree", NULL};
  if (read_keyword(c, src, 1, "angle", angle_words, &c->degree)) return -1;
  const char *seq = attr(c, el, "eulerseq");
  if (seq) {
    if (strlen(seq) != 3 || strspn(seq, "xyzXYZ") != 3)
      return fail(c, el, "eulerseq=\"%s\" must be three of x, y, z, X, Y, Z", seq);
    memcpy(c->eulerseq, seq, 4);
  }

  /* limits and inertia */
  if (read_keyword(c, src, 1, "autolimits", bool_words, &c->autolimits)) return -1;
  static const char *const ifg_words[] = {"false", "true", "auto", NULL};
  if (read_keyword(c, src, 1, "inertiafromgeom", ifg_words, &c->inertiafromgeom)) return -1;
  double g[2] = {c->group_lo, c->group_hi};
  if (read_vec(c, src, 1, "inertiagrouprange", g, 2, 2, NULL)) return -1;
  if (g[0] != floor(g[0]) || g[1] != floor(g[1]) || g[0] < 0 || g[1] > 31 || g[0] > g[1])
    return fail(c, el, "inertiagrouprange must be two integers 0 <= lo <= hi <= 31");
  c->group_lo = (int)g[0], c->group_hi = (int)g[1];
  double total = c->settotalmass;
  if (read_vec(c, src, 1, "settotalmass", &total, 1, 1, NULL)) return -1;
  c->settotalmass = total;
  if (read_vec(c, src, 1, "boundmass", &c->boundmass, 1, 1, NULL) ||
      read_vec(c, src, 1, "boundinertia", &c->boundinertia, 1, 1, NULL))
    return -1;
  if (c->boundmass < 0 || c->boundinertia < 0)
    return fail(c, el, "boundmass and boundinertia must not be negative");

  /* where mesh files are (relative to the model file's directory) */
  int exact = 0;
  if (read_keyword(c, src, 1, "exactmeshinertia", bool_words, &exact)) return -1;
  c->exactmesh = exact;
  const char *md = attr(c, el, "meshdir"), *ad = attr(c, el, "assetdir");
  if (md) c->meshdir = md;
  if (ad) c->assetdir = ad;

  /* global coordinates would change the meaning of every pose */
  const char *coord = attr(c, el, "coordinate");
  if (coord && strcmp(coord, "local") != 0)
    return fail(c, el, "coordinate=\"%s\" is not supported (only local): convert the model to local coordinates (MuJoCo 2.x saves every model local: load it and mj_saveLastXML)", coord);
  return 0;
}

/* <option><flag>: enable / disable switches */
static int read_flag(mjcf_ctx *c, xmlNodePtr el) {
  static const char *const ed[] = {"disable", "enable", NULL};
  /* switches without an effect on khz's dynamics */
  static const char *const quiet[] = {"warmstart", "energy",  "fwdinv", "sensornoise", "sensor",
                                      "refsafe",   "midphase", "eulerdamp", "island", "multiccd",
                                      "nativeccd", NULL};
  for (xmlAttrPtr a = el->properties; a; a = a->next) {
    const char *name = (const char *)a->name;
    xmlNodePtr src[1] = {el};
    int v = -1;
    if (read_keyword(c, src, 1, name, ed, &v)) return -1;
    if (strcmp(name, "gravity") == 0) {
      c->flag_gravity = v;
    } else if (strcmp(name, "contact") == 0) {
      c->flag_contact = v;
    } else if (strcmp(name, "limit") == 0) {
      c->flag_limit = v;
    } else if (strcmp(name, "passive") == 0) {
      c->flag_passive = v;
    } else if (strcmp(name, "frictionloss") == 0) {
      c->flag_frictionloss = v;
    } else if (strcmp(name, "constraint") == 0) {
      if (!v) c->flag_contact = c->flag_limit = c->flag_frictionloss = c->flag_equality = 0;
    } else if (strcmp(name, "equality") == 0) {
      c->flag_equality = v;
    } else if (strcmp(name, "actuation") == 0) {
      c->flag_actuation = v;
      if (!v && warn(c, el, "flag actuation",
                     "actuation is disabled in the file; khz applies the commands it is sent "
                     "(the actuators are listed as usual)"))
        return -1;
    } else if (strcmp(name, "filterparent") == 0 || strcmp(name, "clampctrl") == 0 ||
               strcmp(name, "override") == 0) {
      /* the default is what khz does; only the other value changes anything */
      int dflt = strcmp(name, "override") == 0 ? 0 : 1;
      const char *key = strcmp(name, "filterparent") == 0 ? "flag filterparent"
                        : strcmp(name, "clampctrl") == 0  ? "flag clampctrl"
                                                          : "flag override";
      if (v != dflt &&
          warn(c, el, key, "%s=\"%s\" is not supported by khz: it behaves as if %s", name,
               ed[v],
               strcmp(name, "filterparent") == 0 ? "enabled (parent and child never collide)"
               : strcmp(name, "clampctrl") == 0    ? "enabled (commands are clamped to the "
                                                     "effort limits)"
                                                   : "disabled (khz's own contact gains)"))
        return -1;
    } else if (!in_list(name, quiet)) {
      char key[64];
      snprintf(key, sizeof key, "flag %s", name);
      if (warn(c, el, key, "flag %s is not known to khz (ignored)", name)) return -1;
    }
  }
  return 0;
}

static int read_option(mjcf_ctx *c, xmlNodePtr el) {
  xmlNodePtr src[1] = {el};
  /* MuJoCo's solver settings: khz's penalty contact has no use for them */
  static const char *const solver[] = {
      "impratio",   "tolerance",    "iterations",      "ls_iterations",   "ls_tolerance",
      "solver",     "cone",         "jacobian",        "noslip_iterations", "noslip_tolerance",
      "mpr_iterations", "mpr_tolerance", "ccd_iterations", "ccd_tolerance", "o_margin",
      "o_solref",   "o_solimp",     "o_friction",      "apirate",         "collision",
      "sdf_iterations", "sdf_initpoints", NULL};
  for (xmlAttrPtr a = el->properties; a; a = a->next) {
    const char *name = (const char *)a->name;
    if (in_list(name, option_attrs) || strcmp(name, "magnetic") == 0) continue;
    if (in_list(name, solver)) {
      if (warn(c, el, "option solver",
               "attribute %s: MuJoCo's constraint solver settings have no meaning for khz's "
               "penalty contact (ignored)", name))
        return -1;
    } else if (strcmp(name, "density") == 0 || strcmp(name, "viscosity") == 0 ||
               strcmp(name, "wind") == 0) {
      double v[3] = {0, 0, 0};
      int nv = parse_nums(attr(c, el, name), v, 1, 3);
      if (nv > 0 && (v[0] != 0 || v[1] != 0 || v[2] != 0) &&
          warn(c, el, "option fluid",
               "attribute %s: khz has no fluid forces; the model moves as in vacuum", name))
        return -1;
    } else {
      char key[256];
      snprintf(key, sizeof key, "attribute option %s", name);
      if (warn(c, el, key, "attribute %s is not supported by khz (ignored)", name)) return -1;
    }
  }
  if (read_vec(c, src, 1, "timestep", &c->timestep, 1, 1, NULL) ||
      read_vec(c, src, 1, "gravity", c->gravity, 3, 3, NULL))
    return -1;
  if (!(c->timestep > 0)) return fail(c, el, "timestep must be positive");
  /* the step sizes khz runs at: the rate range of scenes, the server and the loop */
  if (c->opt->apply_options &&
      !(c->timestep >= 1.0 / KHZ_RATE_MAX_HZ && c->timestep <= 1.0 / KHZ_RATE_MIN_HZ))
    return fail(c, el,
                "timestep %g s is outside %g..%g s (the rates khz runs at, " KHZ_RATE_RANGE("..")
                " Hz)",
                c->timestep, 1.0 / KHZ_RATE_MAX_HZ, 1.0 / KHZ_RATE_MIN_HZ);

  /* integrators: MuJoCo's Euler is semi-implicit, as khz's */
  static const char *const int_words[] = {"Euler", "RK4", "implicit", "implicitfast", NULL};
  int integ = c->integrator == KHZ_INT_RK4 ? 1 : 0;
  if (read_keyword(c, src, 1, "integrator", int_words, &integ)) return -1;
  if (integ >= 2 &&
      warn(c, el, "integrator",
           "integrator=\"%s\" is not supported by khz: semi-implicit Euler is used, with joint "
           "damping and the actuators' velocity gains (kv, biasprm[2]) implicit as in MuJoCo's "
           "implicitfast (they join the joint's damping); %s",
           int_words[integ],
           integ == 2 ? "MuJoCo's implicit also takes the Coriolis derivatives implicitly, khz "
                        "keeps them explicit"
                      : "the Coriolis derivatives stay explicit, as in implicitfast"))
    return -1;
  c->implicit_kv = integ >= 2;
  c->integrator = integ == 1 ? KHZ_INT_RK4 : KHZ_INT_EULER;

  /* <flag>, and anything else */
  for (xmlNodePtr e = el->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    if (is(e, "flag")) {
      if (read_flag(c, e)) return -1;
    } else if (warn_element(c, e, "element not supported by khz (ignored)")) {
      return -1;
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- names -- */

/* where a name is used already: 1 = in the spec before this load, 2 = earlier
 * in this file, 0 = nowhere */
static int name_used(mjcf_ctx *c, const char *name, int joint) {
  for (int i = 0; i < c->nbody0; i++) {
    const khzBodySpec *b = khz_spec_body(c->spec, i);
    if (strcmp(joint ? b->joint_name : b->name, name) == 0) return 1;
  }
  for (int i = 0; i < c->nbody; i++)
    if (strcmp(joint ? c->bodies[i].joint_name : c->bodies[i].name, name) == 0) return 2;
  return 0;
}

/* whether the file names some body (or joint) name */
static int name_given(const mjcf_ctx *c, const char *name, int joint) {
  const char *const *v = joint ? c->given_joint : c->given_body;
  int n = joint ? c->ngiven_joint : c->ngiven_body;
  for (int i = 0; i < n; i++)
    if (strcmp(v[i], name) == 0) return 1;
  return 0;
}

/* collects the names the file gives to bodies and joints (generated names avoid them) */
static int collect_names(mjcf_ctx *c, xmlNodePtr el) {
  for (xmlNodePtr e = el->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    int body = is(e, "body"), joint = is(e, "joint") || is(e, "freejoint");
    const char *name = body || joint ? attr(c, e, "name") : NULL;
    if (name && name[0]) {
      const char ***v = joint ? &c->given_joint : &c->given_body;
      int *n = joint ? &c->ngiven_joint : &c->ngiven_body;
      int *cap = joint ? &c->capgiven_joint : &c->capgiven_body;
      if (grow(c, (void **)v, *n, cap, sizeof **v)) return -1;
      (*v)[(*n)++] = name;
    }
    if (body && collect_names(c, e)) return -1;
  }
  return 0;
}

/* writes prefix + name into out (the body being added is not yet compared).
 * A name given in the file must be new; a generated one (given = 0) is
 * shortened to fit and made unique with a suffix, also against every name
 * the file gives. */
static int make_name(mjcf_ctx *c, xmlNodePtr at, char out[KHZ_NAME_MAX], const char *name,
                     int joint, int given) {
  const char *prefix = c->opt->name_prefix ? c->opt->name_prefix : "";
  const char *what = joint ? "joint" : "body";
  char buf[KHZ_NAME_MAX];
  out[0] = 0;
  if (given) {
    if (snprintf(buf, sizeof buf, "%s%s", prefix, name) >= KHZ_NAME_MAX)
      return fail(c, at, "name \"%s%s\" is longer than %d characters", prefix, name,
                  KHZ_NAME_MAX - 1);
    int used = name_used(c, buf, joint);
    if (used == 1)
      return fail(c, at, "a %s called \"%s\" is already in the model (use a name prefix)", what,
                  buf);
    if (used == 2) return fail(c, at, "repeated %s name \"%s\"", what, name);
    memcpy(out, buf, sizeof buf);
    return 0;
  }
  int room = KHZ_NAME_MAX - 1 - (int)strlen(prefix) - 8;
  if (room < 1) return fail(c, at, "the name prefix \"%s\" is too long", prefix);
  for (int k = 0; k < 1000000; k++) {
    char raw[KHZ_NAME_MAX];
    if (k == 0)
      snprintf(raw, sizeof raw, "%.*s", room, name);
    else
      snprintf(raw, sizeof raw, "%.*s_%d", room, name, k);
    snprintf(buf, sizeof buf, "%s%s", prefix, raw);
    if (!name_used(c, buf, joint) && !name_given(c, raw, joint)) {
      memcpy(out, buf, sizeof buf);
      return 0;
    }
  }
  return fail(c, at, "cannot make a unique %s name from \"%s\"", what, name);
}

/* --------------------------------------------------------------- geoms -- */

enum { G_PLANE, G_HFIELD, G_SPHERE, G_CAPSULE, G_ELLIPSOID, G_CYLINDER, G_BOX, G_MESH, G_SDF };
static const char *const geom_words[] = {"plane",    "hfield", "sphere", "capsule", "ellipsoid",
                                         "cylinder", "box",    "mesh",   "sdf",     NULL};

/* volume of a solid geom (MuJoCo's mjCGeom::GetVolume); h = full height */
static double geom_volume(int type, const double s[3]) {
  switch (type) {
    case G_SPHERE:
      return 4 * KHZ_MJCF_PI * s[0] * s[0] * s[0] / 3;
    case G_CAPSULE:
      return KHZ_MJCF_PI * (s[0] * s[0] * 2 * s[1] + 4 * s[0] * s[0] * s[0] / 3);
    case G_CYLINDER:
      return KHZ_MJCF_PI * s[0] * s[0] * 2 * s[1];
    case G_ELLIPSOID:
      return 4 * KHZ_MJCF_PI * s[0] * s[1] * s[2] / 3;
    case G_BOX:
      return 8 * s[0] * s[1] * s[2];
    default:
      return 0;
  }
}

/* principal moments of a solid geom of the given mass about its centre, in
 * the geom frame (MuJoCo's mjCGeom::SetInertia) */
static void geom_inertia(int type, const double s[3], double mass, double I[3]) {
  double r = s[0], h = 2 * s[1];
  switch (type) {
    case G_SPHERE:
      I[0] = I[1] = I[2] = 2 * mass * r * r / 5;
      break;
    case G_CAPSULE: {
      /* a cylinder of height h and a sphere split into two hemispheres at its ends */
      double ms = mass * 4 * r / (4 * r + 3 * h);
      double mc = mass - ms;
      I[0] = I[1] = mc * (3 * r * r + h * h) / 12;
      I[2] = mc * r * r / 2;
      double is = 2 * ms * r * r / 5;
      I[0] += is + ms * h * (3 * r + 2 * h) / 8;
      I[1] += is + ms * h * (3 * r + 2 * h) / 8;
      I[2] += is;
      break;
    }
    case G_CYLINDER:
      I[0] = I[1] = mass * (3 * r * r + h * h) / 12;
      I[2] = mass * r * r / 2;
      break;
    case G_ELLIPSOID:
      I[0] = mass * (s[1] * s[1] + s[2] * s[2]) / 5;
      I[1] = mass * (s[0] * s[0] + s[2] * s[2]) / 5;
      I[2] = mass * (s[0] * s[0] + s[1] * s[1]) / 5;
      break;
    case G_BOX:
      I[0] = mass * (s[1] * s[1] + s[2] * s[2]) / 3;
      I[1] = mass * (s[0] * s[0] + s[2] * s[2]) / 3;
      I[2] = mass * (s[0] * s[0] + s[1] * s[1]) / 3;
      break;
    default:
      I[0] = I[1] = I[2] = 0;
      break;
  }
}

/* ------------------------------------------------------------- meshes -- */

/* volume, centre and inertia about the centre (unit density) of the closed
 * triangle mesh md scaled by sc: the divergence theorem over signed
 * tetrahedra from the origin (Mirtich; exact for any closed mesh). Faces
 * turned inward give the same result. */
static void mesh_props(const khzMeshData *md, const double sc[3], double *vol, double com[3],
                       double I[9]) {
  double V = 0, C[3] = {0, 0, 0}, P[9] = {0};
  for (int f = 0; f < md->nface; f++) {
    double v[3][3];
    for (int k = 0; k < 3; k++)
      for (int a = 0; a < 3; a++) v[k][a] = md->vert[3 * md->face[3 * f + k] + a] * sc[a];
    double det = v[0][0] * (v[1][1] * v[2][2] - v[1][2] * v[2][1]) -
                 v[0][1] * (v[1][0] * v[2][2] - v[1][2] * v[2][0]) +
                 v[0][2] * (v[1][0] * v[2][1] - v[1][1] * v[2][0]);
    double sum[3] = {v[0][0] + v[1][0] + v[2][0], v[0][1] + v[1][1] + v[2][1],
                     v[0][2] + v[1][2] + v[2][2]};
    V += det;
    for (int a = 0; a < 3; a++) C[a] += det * sum[a];
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++)
        P[3 * a + b] += det * (v[0][a] * v[0][b] + v[1][a] * v[1][b] + v[2][a] * v[2][b] +
                               sum[a] * sum[b]);
  }
  V /= 6;
  for (int a = 0; a < 3; a++) C[a] /= 24;
  for (int a = 0; a < 9; a++) P[a] /= 120;
  if (V < 0) { /* faces turned inward */
    V = -V;
    for (int a = 0; a < 3; a++) C[a] = -C[a];
    for (int a = 0; a < 9; a++) P[a] = -P[a];
  }
  *vol = V;
  for (int a = 0; a < 3; a++) com[a] = V > 0 ? C[a] / V : 0;
  double tr = P[0] + P[4] + P[8], cc = com[0] * com[0] + com[1] * com[1] + com[2] * com[2];
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      I[3 * a + b] = (a == b ? tr : 0) - P[3 * a + b] -
                     V * ((a == b ? cc : 0) - com[a] * com[b]);
}

/* adds mesh data (taken over) under a name; returns its index or -1 */
static int add_mdata(mjcf_ctx *c, khzMeshData *md, const char *name) {
  if (c->nmdata == c->capmdata) {
    int cap = c->capmdata ? 2 * c->capmdata : 8;
    khzMeshData *nm = realloc(c->mdata, (size_t)cap * sizeof *nm);
    if (nm) c->mdata = nm;
    char(*nn)[KHZ_NAME_MAX] = realloc(c->mname, (size_t)cap * sizeof *nn);
    if (nn) c->mname = nn;
    if (!nm || !nn) {
      khz_mesh_free(md);
      return fail_oom(c);
    }
    c->capmdata = cap;
  }
  c->mdata[c->nmdata] = *md;
  snprintf(c->mname[c->nmdata], KHZ_NAME_MAX, "%s", name);
  return c->nmdata++;
}

/* the file of mesh asset mm: <compiler meshdir> (else assetdir), relative to
 * the model file's directory */
static int mesh_path(mjcf_ctx *c, const mjcf_mesh *mm, char *out, size_t n) {
  const char *dir = c->meshdir ? c->meshdir : c->assetdir;
  char d[KHZ_PATH_MAX];
  if (dir) {
    if (khz_path_join(d, sizeof d, c->dir[0] ? c->dir : NULL, dir)) return -1;
  } else {
    snprintf(d, sizeof d, "%s", c->dir);
  }
  return khz_path_join(out, n, d[0] ? d : NULL, mm->file);
}

/* reads mesh asset k (once): its triangles and mass properties */
static int mesh_load(mjcf_ctx *c, int k) {
  mjcf_mesh *mm = &c->meshes[k];
  if (mm->state) return mm->state > 0 ? 0 : -1;
  mm->state = -1;
  if (!mm->file) return fail(c, mm->node, "a mesh without a file is not supported by khz");
  char path[KHZ_PATH_MAX], merr[KHZ_PATH_MAX + 256];
  if (mesh_path(c, mm, path, sizeof path)) return fail(c, mm->node, "mesh path too long");
  if (!khz_file_exists(path))
    return fail(c, mm->node, "mesh file \"%s\" not found (looked for %s)", mm->file, path);
  khzMeshData md;
  if (khz_mesh_read(path, &md, merr, sizeof merr) < 0) return fail(c, mm->node, "%s", merr);
  mesh_props(&md, mm->scale, &mm->volume, mm->com, mm->I);
  int id = add_mdata(c, &md, mm->name);
  if (id < 0) return -1;
  mm->data = id;
  mm->state = 1;
  return 0;
}

/* a convex mesh for ellipsoids: points on the unit sphere (scaled by the
 * radii as a mesh geom), made once per load */
#define KHZ_MJCF_ELL_NLAT 8
#define KHZ_MJCF_ELL_NLON 16
static int ellipsoid_mesh(mjcf_ctx *c) {
  if (c->ellipsoid_mesh >= 0) return c->ellipsoid_mesh;
  const int nlat = KHZ_MJCF_ELL_NLAT, nlon = KHZ_MJCF_ELL_NLON;
  khzMeshData md;
  md.nvert = 2 + (nlat - 1) * nlon;
  md.nface = 2 * nlon * (nlat - 1);
  md.vert = malloc((size_t)md.nvert * 3 * sizeof(double));
  md.face = malloc((size_t)md.nface * 3 * sizeof(int));
  if (!md.vert || !md.face) {
    khz_mesh_free(&md);
    return fail_oom(c);
  }
  double *v = md.vert;
  v[0] = 0, v[1] = 0, v[2] = 1;
  for (int i = 1; i < nlat; i++)
    for (int j = 0; j < nlon; j++) {
      double th = KHZ_MJCF_PI * i / nlat, ph = 2 * KHZ_MJCF_PI * j / nlon;
      double *p = v + 3 * (1 + (i - 1) * nlon + j);
      p[0] = sin(th) * cos(ph), p[1] = sin(th) * sin(ph), p[2] = cos(th);
    }
  int south = md.nvert - 1, *f = md.face;
  v[3 * south] = 0, v[3 * south + 1] = 0, v[3 * south + 2] = -1;
  for (int j = 0; j < nlon; j++) { /* caps */
    int j1 = (j + 1) % nlon;
    *f++ = 0, *f++ = 1 + j, *f++ = 1 + j1;
    int base = 1 + (nlat - 2) * nlon;
    *f++ = south, *f++ = base + j1, *f++ = base + j;
  }
  for (int i = 1; i < nlat - 1; i++) /* bands */
    for (int j = 0; j < nlon; j++) {
      int j1 = (j + 1) % nlon, a = 1 + (i - 1) * nlon, b = 1 + i * nlon;
      *f++ = a + j, *f++ = b + j, *f++ = b + j1;
      *f++ = a + j, *f++ = b + j1, *f++ = a + j1;
    }
  c->ellipsoid_mesh = add_mdata(c, &md, "ellipsoid");
  return c->ellipsoid_mesh;
}

/* <asset>: meshes are read (when a geom uses them), the rest warned about */
static int read_assets(mjcf_ctx *c, xmlNodePtr sec) {
  if (check_attrs(c, sec, "asset", no_attrs)) return -1;
  for (xmlNodePtr e = sec->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    if (!is(e, "mesh")) {
      const char *why = is(e, "texture") || is(e, "material")
                            ? "visual only, no effect on the simulation (ignored)"
                        : is(e, "hfield") ? "height fields are not supported by khz: geoms using "
                                            "them are left out"
                                          : "element not supported by khz (ignored)";
      if (warn_element(c, e, why)) return -1;
      continue;
    }
    int cls = -1;
    xmlNodePtr src[KHZ_MJCF_MAX_SRC];
    if (check_attrs(c, e, "mesh", mesh_attrs) || element_class(c, e, c->main_cls, &cls))
      return -1;
    int n = sources(c, e, "mesh", cls, src);
    if (n < 0 || grow(c, (void **)&c->meshes, c->nmeshes, &c->capmeshes, sizeof *c->meshes))
      return -1;
    mjcf_mesh *mm = &c->meshes[c->nmeshes];
    memset(mm, 0, sizeof *mm);
    mm->node = e;
    mm->file = attr(c, e, "file");
    mm->scale[0] = mm->scale[1] = mm->scale[2] = 1;
    if (read_vec(c, src, n, "scale", mm->scale, 3, 3, NULL)) return -1;
    for (int k = 0; k < 3; k++)
      if (mm->scale[k] == 0) return fail(c, e, "scale[%d] is zero: give a non-zero scale (negative mirrors)", k);
    mm->name = attr(c, e, "name");
    if (!mm->name && mm->file) {
      /* MuJoCo's rule: the file name without directory and extension */
      const char *base = strrchr(mm->file, '/');
      base = base ? base + 1 : mm->file;
      const char *dot = strrchr(base, '.');
      size_t len = dot ? (size_t)(dot - base) : strlen(base);
      char *nm = malloc(len + 1);
      if (!nm) return fail_oom(c);
      memcpy(nm, base, len);
      nm[len] = 0;
      /* keep it with the attribute strings (freed with them) */
      if (grow(c, (void **)&c->strings.strs, c->strings.n, &c->strings.cap,
               sizeof *c->strings.strs)) {
        free(nm);
        return -1;
      }
      c->strings.strs[c->strings.n++] = (xmlChar *)nm;
      mm->name = nm;
    }
    if (!mm->name) return fail(c, e, "a mesh needs a name or a file: add file=\"PATH\" (an STL or OBJ file)");
    for (int k = 0; k < c->nmeshes; k++)
      if (strcmp(c->meshes[k].name, mm->name) == 0)
        return fail(c, e, "repeated mesh name \"%s\"", mm->name);
    c->nmeshes++;
  }
  return 0;
}

/* --------------------------------------------------------------- geoms -- */

/* one <geom> of body `body` (spec index; 0 = world) in class cls; off is the
 * khz body frame's offset in the MJCF body frame; static_ = the body does not
 * move; mass = the body's mass comes from its geoms. Records the mass
 * contribution in c->masses. */
static int read_geom(mjcf_ctx *c, xmlNodePtr el, int inherited, int body, const double off[3],
                     int static_, int need_mass) {
  int cls = -1;
  xmlNodePtr src[KHZ_MJCF_MAX_SRC];
  if (check_attrs(c, el, "geom", geom_attrs) || element_class(c, el, inherited, &cls)) return -1;
  int n = sources(c, el, "geom", cls, src);
  if (n < 0) return -1;

  /* shape and size */
  int type = G_SPHERE;
  double size[3] = {0, 0, 0}, fromto[6], pos[3] = {0, 0, 0}, quat[4];
  int has_fromto, has_mass;
  if (read_keyword(c, src, n, "type", geom_words, &type) ||
      read_vec(c, src, n, "size", size, 1, 3, NULL) ||
      read_vec(c, src, n, "fromto", fromto, 6, 6, &has_fromto) ||
      read_vec(c, src, n, "pos", pos, 3, 3, NULL) || read_orientation(c, src, n, quat, NULL))
    return -1;
  if (type == G_HFIELD || type == G_SDF) {
    char key[64];
    snprintf(key, sizeof key, "geom type %s", geom_words[type]);
    return warn(c, el, key,
                "%s geoms are not supported by khz: left out, with their mass and inertia",
                geom_words[type]);
  }
  long contype = 1, conaffinity = 1, group = 0;
  if (read_int(c, src, n, "contype", &contype) ||
      read_int(c, src, n, "conaffinity", &conaffinity) || read_int(c, src, n, "group", &group))
    return -1;
  int collides = (contype != 0 || conaffinity != 0) && c->flag_contact;
  int counts = body != 0 && type != G_PLANE && group >= c->group_lo && group <= c->group_hi &&
               need_mass;

  /* a mesh: the asset it names, read when it collides or weighs */
  int mesh = -1;
  xmlNodePtr mat;
  const char *mname = lookup(c, src, n, "mesh", &mat);
  if (type == G_MESH) {
    if (!mname) return fail(c, el, "a mesh geom needs a mesh: add mesh=\"NAME\" naming an <asset><mesh>");
    for (int k = 0; k < c->nmeshes && mesh < 0; k++)
      if (strcmp(c->meshes[k].name, mname) == 0) mesh = k;
    if (mesh < 0) return fail(c, el, "unknown mesh \"%s\": declare it in <asset> as <mesh name=\"%s\" file=...> (unnamed meshes are called by their file name without extension)", mname, mname);
    if ((collides || counts) && mesh_load(c, mesh)) return -1;
  } else if (mname && warn(c, el, "geom mesh fit",
                           "a mesh on a %s geom (MuJoCo fits the shape to the mesh) is not "
                           "supported by khz: the size given is used",
                           geom_words[type])) {
    return -1;
  }

  /* fromto: centre, z axis from `to` towards `from`, half-length */
  if (has_fromto) {
    if (type != G_CAPSULE && type != G_CYLINDER && type != G_BOX && type != G_ELLIPSOID)
      return fail(c, el, "fromto requires a capsule, cylinder, box or ellipsoid: give this shape pos and size instead");
    double v[3] = {fromto[0] - fromto[3], fromto[1] - fromto[4], fromto[2] - fromto[5]};
    double len = norm3(v);
    if (len < KHZ_MJCF_MINVAL) return fail(c, el, "fromto points coincide");
    for (int k = 0; k < 3; k++) pos[k] = 0.5 * (fromto[k] + fromto[k + 3]);
    z2quat(quat, v);
    if (type == G_CAPSULE || type == G_CYLINDER) {
      size[1] = 0.5 * len;
    } else {
      /* a box or ellipsoid gets a square cross-section of half-width size[0] */
      size[1] = size[0];
      size[2] = 0.5 * len;
    }
  }
  int need = type == G_PLANE || type == G_MESH               ? 0
             : type == G_SPHERE                              ? 1
             : type == G_CAPSULE || type == G_CYLINDER       ? 2
                                                             : 3;
  for (int k = 0; k < need; k++)
    if (!(size[k] > 0))
      return fail(c, el, "size[%d] = %g must be positive: give the geom's %d size number%s (sphere: "
                  "radius; capsule, cylinder: radius, half-length; box, ellipsoid: half-extents)",
                  k, size[k], need, need > 1 ? "s" : "");
  if (type == G_PLANE && !static_)
    return fail(c, el, "a plane is only allowed in a body that does not move: put it in <worldbody> (or a body without joints), or use a thin box");
  if (type == G_PLANE && !(size[2] > 0))
    return fail(c, el, "size[2] = %g of a plane (its grid spacing) must be positive", size[2]);

  /* mass: the geom's own, else density times volume */
  double density = 1000, mass = 0;
  if (read_vec(c, src, n, "density", &density, 1, 1, NULL) ||
      read_vec(c, src, n, "mass", &mass, 1, 1, &has_mass))
    return -1;
  if (density < 0 || mass < 0)
    return fail(c, el, "%s=%g is negative: give a %s >= 0 (0 makes the geom weightless)",
                density < 0 ? "density" : "mass", density < 0 ? density : mass,
                density < 0 ? "density in kg/m^3" : "mass in kg");
  if (counts) {
    if (grow(c, (void **)&c->masses, c->nmass, &c->capmass, sizeof *c->masses)) return -1;
    mjcf_mass *mm = &c->masses[c->nmass];
    memcpy(mm->quat, quat, sizeof quat);
    memset(mm->inertia, 0, sizeof mm->inertia);
    if (type == G_MESH) {
      const mjcf_mesh *me = &c->meshes[mesh];
      if (me->volume < 1e-12)
        return fail(c, el, "the volume of mesh \"%s\" is %g m^3: too small for its mass and "
                    "inertia (give the body an <inertial>)", me->name, me->volume);
      if (!has_mass) mass = density * me->volume;
      if (!c->exactmesh &&
          warn(c, el, "mesh inertia",
               "the mass and inertia of mesh \"%s\" are computed exactly (MuJoCo's "
               "exactmeshinertia=\"true\"); MuJoCo 2.2's default legacy formula differs on "
               "non-convex meshes", me->name))
        return -1;
      double R[9], d[3];
      quat2mat(R, quat);
      for (int a = 0; a < 3; a++) {
        d[a] = 0;
        for (int k = 0; k < 3; k++) d[a] += R[3 * a + k] * me->com[k];
        mm->pos[a] = pos[a] + d[a];
      }
      for (int k = 0; k < 9; k++) mm->inertia[k] = me->I[k] * mass / me->volume;
    } else {
      if (!has_mass) mass = density * geom_volume(type, size);
      double I[3];
      geom_inertia(type, size, mass, I);
      memcpy(mm->pos, pos, sizeof pos);
      mm->inertia[0] = I[0], mm->inertia[4] = I[1], mm->inertia[8] = I[2];
    }
    mm->mass = mass;
    c->nmass++;
  }

  /* the khz geom: contact filter, friction (sliding only), colour */
  khzGeomSpec g;
  khz_spec_defaultGeom(&g);
  g.body = body;
  if (type == G_ELLIPSOID) {
    if (warn(c, el, "geom type ellipsoid",
             "ellipsoids have no khz shape: each collides as the convex hull of %d points on "
             "its surface (up to about %.0f%% smaller; its mass and inertia are the ellipsoid's)",
             2 + (KHZ_MJCF_ELL_NLAT - 1) * KHZ_MJCF_ELL_NLON,
             100 * (1 - cos(KHZ_MJCF_PI / (2 * KHZ_MJCF_ELL_NLAT)) *
                            cos(KHZ_MJCF_PI / KHZ_MJCF_ELL_NLON))))
      return -1;
    g.type = KHZ_GEOM_MESH;
    g.mesh = collides ? ellipsoid_mesh(c) : -1;
    if (collides && g.mesh < 0) return -1;
    g.convex = 1;
    memcpy(g.size, size, sizeof size);
    snprintf(g.meshfile, sizeof g.meshfile, "ellipsoid");
  } else if (type == G_MESH) {
    const mjcf_mesh *me = &c->meshes[mesh];
    g.type = KHZ_GEOM_MESH;
    g.mesh = me->state > 0 && collides ? me->data : -1;
    g.convex = 1; /* MuJoCo collides meshes as their convex hulls too */
    memcpy(g.size, me->scale, sizeof g.size);
    if (mesh_path(c, me, g.meshfile, sizeof g.meshfile)) g.meshfile[0] = 0;
  } else {
    g.type = type == G_PLANE      ? KHZ_GEOM_PLANE
             : type == G_SPHERE   ? KHZ_GEOM_SPHERE
             : type == G_CAPSULE  ? KHZ_GEOM_CAPSULE
             : type == G_CYLINDER ? KHZ_GEOM_CYLINDER
                                  : KHZ_GEOM_BOX;
    memcpy(g.size, size, sizeof size);
  }
  for (int k = 0; k < 3; k++) g.pos[k] = pos[k] - off[k];
  memcpy(g.quat, quat, sizeof quat);
  double rgba[4] = {0.5, 0.5, 0.5, 1}, friction[3] = {1, 0.005, 0.0001};
  int nfric = 0;
  if (read_vec(c, src, n, "rgba", rgba, 4, 4, NULL) ||
      read_vec(c, src, n, "friction", friction, 1, 3, NULL))
    return -1;
  xmlNodePtr fat;
  const char *fv = lookup(c, src, n, "friction", &fat);
  if (fv) {
    double tmp[3];
    nfric = parse_nums(fv, tmp, 1, 3);
  }
  if (nfric > 1 && warn(c, fat, "geom friction torsional",
                        "torsional and rolling friction are not supported by khz (ignored)"))
    return -1;
  if (friction[0] < 0)
    return fail(c, el, "friction[0] = %g is negative: the sliding friction coefficient must be "
                ">= 0 (MuJoCo's default is 1)", friction[0]);
  memcpy(g.rgba, rgba, sizeof rgba);
  g.friction = friction[0];
  g.contype = collides ? (unsigned)contype : 0;
  g.conaffinity = collides ? (unsigned)conaffinity : 0;
  g.visual = g.type == KHZ_GEOM_MESH && g.mesh < 0; /* a mesh that never collides: drawn only */

  /* world geoms follow the base pose, or are left out */
  if (body == 0) {
    if (!c->opt->world_geoms) return 0;
    khz_pose_compose(g.pos, g.quat, c->opt->base_pos, c->opt->base_quat, g.pos, g.quat);
  } else {
    g.body = c->nbody0 + body - 1;
  }
  if (grow(c, (void **)&c->geoms, c->ngeom, &c->capgeom, sizeof *c->geoms)) return -1;
  c->geoms[c->ngeom++] = g;
  return 0;
}

/* mass, centre of mass and inertia about it (xx yy zz xy xz yz) of the
 * recorded geoms, in the MJCF body frame */
static void sum_masses(const mjcf_ctx *c, double *mass, double com[3], double I6[6]) {
  double m = 0, p[3] = {0, 0, 0}, I[9] = {0};
  for (int i = 0; i < c->nmass; i++) {
    m += c->masses[i].mass;
    for (int k = 0; k < 3; k++) p[k] += c->masses[i].mass * c->masses[i].pos[k];
  }
  *mass = m;
  memset(I6, 0, 6 * sizeof(double));
  com[0] = com[1] = com[2] = 0;
  if (!(m > 0)) return;
  for (int k = 0; k < 3; k++) com[k] = p[k] / m;

  /* rotated principal inertias plus the parallel-axis terms */
  for (int i = 0; i < c->nmass; i++) {
    const mjcf_mass *g = &c->masses[i];
    double R[9], d[3] = {g->pos[0] - com[0], g->pos[1] - com[1], g->pos[2] - com[2]};
    quat2mat(R, g->quat);
    double dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++) {
        double v = 0;
        for (int k = 0; k < 3; k++)
          for (int l = 0; l < 3; l++) v += R[3 * a + k] * g->inertia[3 * k + l] * R[3 * b + l];
        I[3 * a + b] += v + g->mass * ((a == b ? dd : 0) - d[a] * d[b]);
      }
  }
  I6[0] = I[0], I6[1] = I[4], I6[2] = I[8];
  I6[3] = 0.5 * (I[1] + I[3]), I6[4] = 0.5 * (I[2] + I[6]), I6[5] = 0.5 * (I[5] + I[7]);
}

/* <inertial>: mass, centre of mass and inertia about it in the MJCF body frame */
static int read_inertial(mjcf_ctx *c, xmlNodePtr el, double *mass, double com[3], double I6[6]) {
  xmlNodePtr src[1] = {el};
  if (!xmlHasProp(el, (const xmlChar *)"pos") || !xmlHasProp(el, (const xmlChar *)"mass"))
    return fail(c, el, "<inertial> needs pos and mass");
  int has_diag = xmlHasProp(el, (const xmlChar *)"diaginertia") != NULL;
  int has_full = xmlHasProp(el, (const xmlChar *)"fullinertia") != NULL;
  if (has_diag == has_full) return fail(c, el, "<inertial> needs one of diaginertia, fullinertia");
  double q[4];
  int oriented;
  if (read_vec(c, src, 1, "pos", com, 3, 3, NULL) ||
      read_vec(c, src, 1, "mass", mass, 1, 1, NULL) || read_orientation(c, src, 1, q, &oriented))
    return -1;
  if (*mass < 0) return fail(c, el, "mass=%g is negative: give the body's mass in kg (> 0)", *mass);
  double I[9] = {0};
  if (has_full) {
    /* the full matrix is given in the body frame */
    double f[6];
    if (oriented) return fail(c, el, "fullinertia takes no orientation");
    if (read_vec(c, src, 1, "fullinertia", f, 6, 6, NULL)) return -1;
    memcpy(I6, f, sizeof f);
  } else {
    double dg[3], R[9];
    if (read_vec(c, src, 1, "diaginertia", dg, 3, 3, NULL)) return -1;
    quat2mat(R, q);
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++)
        for (int k = 0; k < 3; k++) I[3 * a + b] += R[3 * a + k] * dg[k] * R[3 * b + k];
    I6[0] = I[0], I6[1] = I[4], I6[2] = I[8];
    I6[3] = 0.5 * (I[1] + I[3]), I6[4] = 0.5 * (I[2] + I[6]), I6[5] = 0.5 * (I[5] + I[7]);
  }
  return 0;
}

/* -------------------------------------------------------------- joints -- */

/* reads <joint> or <freejoint> into c->joints */
static int read_joint(mjcf_ctx *c, xmlNodePtr el, int inherited) {
  if (grow(c, (void **)&c->joints, c->njoint, &c->capjoint, sizeof *c->joints)) return -1;
  mjcf_joint *j = &c->joints[c->njoint];
  memset(j, 0, sizeof *j);
  j->node = el;
  j->axis[2] = 1;
  j->name = attr(c, el, "name");
  if (j->name && !j->name[0]) j->name = NULL;

  /* <freejoint> takes no defaults */
  if (is(el, "freejoint")) {
    if (check_attrs(c, el, "freejoint", freejoint_attrs)) return -1;
    j->type = KHZ_JOINT_FLOATING;
    c->njoint++;
    return 0;
  }

  int cls = -1;
  xmlNodePtr src[KHZ_MJCF_MAX_SRC];
  if (check_attrs(c, el, "joint", joint_attrs) || element_class(c, el, inherited, &cls)) return -1;
  int n = sources(c, el, "joint", cls, src);
  if (n < 0) return -1;

  /* type, anchor, axis */
  static const char *const type_words[] = {"free", "ball", "slide", "hinge", NULL};
  static const khzJointType types[] = {KHZ_JOINT_FLOATING, KHZ_JOINT_SPHERICAL, KHZ_JOINT_PRISMATIC,
                                       KHZ_JOINT_REVOLUTE};
  int t = 3, lim = 2;
  if (read_keyword(c, src, n, "type", type_words, &t) ||
      read_vec(c, src, n, "pos", j->pos, 3, 3, NULL) ||
      read_vec(c, src, n, "axis", j->axis, 3, 3, NULL) ||
      read_vec(c, src, n, "range", j->range, 2, 2, NULL) ||
      read_keyword(c, src, n, "limited", limited_words, &lim) ||
      read_vec(c, src, n, "damping", &j->damping, 1, 1, NULL) ||
      read_vec(c, src, n, "armature", &j->armature, 1, 1, NULL) ||
      read_vec(c, src, n, "frictionloss", &j->frictionloss, 1, 1, NULL) ||
      read_vec(c, src, n, "ref", &j->ref, 1, 1, NULL) ||
      read_vec(c, src, n, "stiffness", &j->stiffness, 1, 1, NULL) ||
      read_vec(c, src, n, "springref", &j->springref, 1, 1, NULL))
    return -1;
  j->type = types[t];
  if (j->stiffness < 0)
    return fail(c, el, "stiffness=%g is negative: a joint spring's stiffness must be >= 0 (0: no "
                "spring)", j->stiffness);
  double na = norm3(j->axis);
  if (j->type != KHZ_JOINT_FLOATING && j->type != KHZ_JOINT_SPHERICAL && na < KHZ_MJCF_MINVAL)
    return fail(c, el, "axis is zero: give the joint's direction, e.g. axis=\"0 0 1\"");
  if (na >= KHZ_MJCF_MINVAL)
    for (int k = 0; k < 3; k++) j->axis[k] /= na;
  if (j->damping < 0 || j->armature < 0 || j->frictionloss < 0) {
    const char *what = j->damping < 0 ? "damping" : j->armature < 0 ? "armature" : "frictionloss";
    double v = j->damping < 0 ? j->damping : j->armature < 0 ? j->armature : j->frictionloss;
    return fail(c, el, "%s=%g is negative: it must be >= 0 (0: none)", what, v);
  }

  /* limits: explicit, or from the range with autolimits (MuJoCo 2.2's rule) */
  int hasrange = j->range[0] != 0 || j->range[1] != 0;
  if (lim == 2) {
    if (hasrange && !c->autolimits)
      return fail(c, el,
                  "range without limited: set <compiler autolimits=\"true\"> or limited "
                  "explicitly (MuJoCo refuses this too)");
    lim = hasrange;
  }
  if (j->type == KHZ_JOINT_FLOATING) lim = 0;
  if (lim && j->type == KHZ_JOINT_SPHERICAL && j->range[0] != 0)
    return fail(c, el,
                "range[0] = %g of a limited ball joint must be 0 (range[1] is the cone angle)",
                j->range[0]);
  if (lim && !(j->range[0] < j->range[1]))
    return fail(c, el, "range[0] = %g must be below range[1] = %g: give range=\"lower upper\" "
                "(swap them%s)", j->range[0], j->range[1],
                c->degree ? "; <compiler angle=\"degree\">, MuJoCo's default, reads degrees" : "");
  j->limited = lim;

  /* angles in the compiler's unit */
  if (c->degree && (j->type == KHZ_JOINT_REVOLUTE || j->type == KHZ_JOINT_SPHERICAL)) {
    j->range[0] *= KHZ_MJCF_PI / 180, j->range[1] *= KHZ_MJCF_PI / 180;
    if (j->type == KHZ_JOINT_REVOLUTE) j->ref *= KHZ_MJCF_PI / 180;
    if (j->type == KHZ_JOINT_REVOLUTE) j->springref *= KHZ_MJCF_PI / 180;
  }
  if ((j->type == KHZ_JOINT_SPHERICAL || j->type == KHZ_JOINT_FLOATING) && j->stiffness > 0 &&
      warn(c, el, "ball stiffness",
           "stiffness on a ball or free joint is not supported by khz: the joint has no spring"))
    return -1;

  /* <option><flag> switches */
  if (!c->flag_limit) j->limited = 0;
  if (!c->flag_passive) j->damping = 0, j->stiffness = 0;
  if (!c->flag_frictionloss) j->frictionloss = 0;
  if (j->type == KHZ_JOINT_SPHERICAL && lim &&
      warn(c, el, "ball range", "the cone limit of a ball joint is not supported by khz (ignored)"))
    return -1;
  if ((j->type == KHZ_JOINT_SPHERICAL || j->type == KHZ_JOINT_FLOATING) && j->ref != 0 &&
      warn(c, el, "ball ref", "ref of a ball or free joint has no meaning (ignored)"))
    return -1;
  c->njoint++;
  return 0;
}

/* --------------------------------------------------------------- bodies -- */

/* appends a khz body (default-filled) and returns it, or NULL when out of memory */
static khzBodySpec *new_body(mjcf_ctx *c) {
  if (c->nbody == c->capbody) {
    int cap = c->capbody ? 2 * c->capbody : 32;
    khzBodySpec *b = realloc(c->bodies, (size_t)cap * sizeof *b);
    if (b) c->bodies = b;
    mjcf_extra *x = realloc(c->extra, (size_t)cap * sizeof *x);
    if (x) c->extra = x;
    if (!b || !x) {
      fail_oom(c);
      return NULL;
    }
    c->capbody = cap;
  }
  memset(&c->extra[c->nbody], 0, sizeof *c->extra);
  khzBodySpec *b = &c->bodies[c->nbody++];
  khz_spec_defaultBody(b);
  return b;
}

/* the children of worldbody or of a body that are neither bodies, joints,
 * geoms nor inertials */
static int other_child(mjcf_ctx *c, xmlNodePtr e) {
  static const char *const structural[] = {"include",   "composite", "flexcomp", "frame",
                                           "replicate", "attach",    NULL};
  if (in_list((const char *)e->name, structural))
    return fail(c, e, "<%s> is not supported by khz (it would change the body tree)",
                (const char *)e->name);
  return warn_element(c, e, "element not supported by khz (ignored)");
}

static int read_body(mjcf_ctx *c, xmlNodePtr el, int parent, const double poff[3], int inherited,
                     int static_);

/* one <site> of body self (local index + 1, 0 = the world) whose khz frame is
 * offset off from its MJCF frame: its pose, kept for the sensors on it
 * (unnamed sites cannot be referred to and are not kept) */
static int read_site(mjcf_ctx *c, xmlNodePtr el, int inherited, int self, const double off[3]) {
  int cls = -1;
  xmlNodePtr src[KHZ_MJCF_MAX_SRC];
  if (check_attrs(c, el, "site", site_attrs) || element_class(c, el, inherited, &cls)) return -1;
  int n = sources(c, el, "site", cls, src);
  if (n < 0) return -1;
  double pos[3] = {0, 0, 0}, quat[4], fromto[6];
  int has_fromto;
  if (read_vec(c, src, n, "pos", pos, 3, 3, NULL) || read_orientation(c, src, n, quat, NULL) ||
      read_vec(c, src, n, "fromto", fromto, 6, 6, &has_fromto))
    return -1;
  if (has_fromto) {
    /* as a geom's: the midpoint, +z from `to` towards `from` */
    double v[3] = {fromto[0] - fromto[3], fromto[1] - fromto[4], fromto[2] - fromto[5]};
    if (norm3(v) < KHZ_MJCF_MINVAL) return fail(c, el, "fromto points coincide");
    for (int k = 0; k < 3; k++) pos[k] = 0.5 * (fromto[k] + fromto[k + 3]);
    z2quat(quat, v);
  }
  const char *name = attr(c, el, "name");
  if (!name || !name[0]) return 0;
  for (int i = 0; i < c->nsite; i++)
    if (strcmp(c->sites[i].name, name) == 0) return fail(c, el, "repeated site name \"%s\"", name);
  if (strlen(name) >= KHZ_NAME_MAX)
    return fail(c, el, "site name \"%s\" is longer than %d characters", name, KHZ_NAME_MAX - 1);
  if (grow(c, (void **)&c->sites, c->nsite, &c->capsite, sizeof *c->sites)) return -1;
  mjcf_site *st = &c->sites[c->nsite++];
  memset(st, 0, sizeof *st);
  snprintf(st->name, sizeof st->name, "%s", name);
  st->body = self;
  st->node = el;
  for (int k = 0; k < 3; k++) st->pos[k] = pos[k] - off[k];
  memcpy(st->quat, quat, sizeof st->quat);
  if (self == 0) khz_pose_compose(st->pos, st->quat, c->opt->base_pos, c->opt->base_quat, st->pos, st->quat);
  return 0;
}

/* reads the geoms and child bodies of el (the world or a body, khz body index
 * self with frame offset off) */
static int read_children(mjcf_ctx *c, xmlNodePtr el, int self, const double off[3], int cls,
                         int static_) {
  for (xmlNodePtr e = el->children; e; e = e->next)
    if (is(e, "body") && read_body(c, e, self, off, cls, static_)) return -1;
  return 0;
}

/* one <body>: its joints become a chain of khz bodies under parent (0 = the
 * world, k = c->bodies[k - 1]) whose frame is offset poff from the parent's
 * MJCF frame */
static int read_body(mjcf_ctx *c, xmlNodePtr el, int parent, const double poff[3], int inherited,
                     int static_) {
  int id = ++c->mj_nbody;
  if (check_attrs(c, el, "body", body_attrs)) return -1;

  /* name, class for the children, pose in the parent's MJCF frame */
  const char *name = attr(c, el, "name");
  char gen[32];
  int named = name && name[0];
  if (!named) snprintf(gen, sizeof gen, "body%d", id), name = gen;
  int cls = inherited;
  const char *cc = attr(c, el, "childclass");
  if (cc) {
    int k;
    for (k = c->ncls - 1; k >= 0 && strcmp(c->cls[k].name, cc) != 0; k--) {
    }
    if (k < 0) return fail(c, el, "unknown childclass \"%s\": define it with <default class=\"%s\">", cc, cc);
    cls = k;
  }
  xmlNodePtr src[1] = {el};
  double pos[3] = {0, 0, 0}, quat[4];
  if (read_vec(c, src, 1, "pos", pos, 3, 3, NULL) || read_orientation(c, src, 1, quat, NULL))
    return -1;
  for (int k = 0; k < 3; k++) pos[k] -= poff[k];
  if (parent == 0) khz_pose_compose(pos, quat, c->opt->base_pos, c->opt->base_quat, pos, quat);

  /* joints in document order, MuJoCo's rules on combining them */
  c->njoint = 0;
  for (xmlNodePtr e = el->children; e; e = e->next)
    if ((is(e, "joint") || is(e, "freejoint")) && read_joint(c, e, cls)) return -1;
  int ndof = 0, after_ball = 0;
  for (int i = 0; i < c->njoint; i++) {
    const mjcf_joint *j = &c->joints[i];
    if (j->type == KHZ_JOINT_FLOATING && parent != 0)
      return fail(c, j->node, "a free joint is only allowed in a body directly in <worldbody>");
    if (j->type == KHZ_JOINT_FLOATING && c->njoint > 1)
      return fail(c, j->node, "a free joint must be the body's only joint");
    if (after_ball && (j->type == KHZ_JOINT_REVOLUTE || j->type == KHZ_JOINT_SPHERICAL))
      return fail(c, j->node, "a rotation after a ball joint in the same body (MuJoCo refuses it)");
    after_ball |= j->type == KHZ_JOINT_SPHERICAL;
    ndof += j->type == KHZ_JOINT_FLOATING ? 6 : j->type == KHZ_JOINT_SPHERICAL ? 3 : 1;
  }
  if (ndof > 6) return fail(c, el, "more than 6 degrees of freedom in one body: put the extra joints in a nested child body");

  /* the chain: joint k at anchor k, relative to anchor k - 1 */
  double off[3] = {0, 0, 0};
  int nchain = c->njoint ? c->njoint : 1;
  for (int i = 0; i < nchain; i++) {
    khzBodySpec *b = new_body(c);
    if (!b) return -1;
    int pref = i == 0 ? parent : c->nbody - 1;
    b->parent = pref ? c->nbody0 + pref - 1 : 0;
    const mjcf_joint *j = c->njoint ? &c->joints[i] : NULL;
    if (i == 0) {
      memcpy(b->pos, pos, sizeof pos);
      memcpy(b->quat, quat, sizeof quat);
    }
    if (!j) {
      b->joint_type = KHZ_JOINT_FIXED;
    } else if (j->type == KHZ_JOINT_FLOATING) {
      /* free: q0 is the body's pose, the origin identity */
      b->joint_type = KHZ_JOINT_FLOATING;
      memcpy(b->q0, pos, sizeof pos);
      memcpy(b->q0 + 3, quat, sizeof quat);
      memset(b->pos, 0, sizeof b->pos);
      b->quat[0] = 1, b->quat[1] = b->quat[2] = b->quat[3] = 0;
    } else {
      /* move the origin to the anchor; ref turns / shifts it back */
      double zero[3] = {0, 0, 0}, ident[4] = {1, 0, 0, 0}, d[3];
      for (int k = 0; k < 3; k++) d[k] = j->pos[k] - off[k];
      khz_pose_compose(b->pos, b->quat, b->pos, b->quat, d, ident);
      if (j->type == KHZ_JOINT_REVOLUTE && j->ref != 0) {
        double r[4];
        axisangle2quat(r, j->axis, -j->ref);
        khz_pose_compose(b->pos, b->quat, b->pos, b->quat, zero, r);
      } else if (j->type == KHZ_JOINT_PRISMATIC && j->ref != 0) {
        double t[3] = {-j->ref * j->axis[0], -j->ref * j->axis[1], -j->ref * j->axis[2]};
        khz_pose_compose(b->pos, b->quat, b->pos, b->quat, t, ident);
      }
      b->joint_type = j->type == KHZ_JOINT_REVOLUTE && !j->limited ? KHZ_JOINT_CONTINUOUS : j->type;
      memcpy(b->axis, j->axis, sizeof b->axis);
      b->limited = j->limited && j->type != KHZ_JOINT_SPHERICAL;
      b->lower = b->limited ? j->range[0] : 0;
      b->upper = b->limited ? j->range[1] : 0;
      if (j->type == KHZ_JOINT_REVOLUTE || j->type == KHZ_JOINT_PRISMATIC) b->q0[0] = j->ref;
      memcpy(off, j->pos, sizeof off);
    }
    if (j) {
      b->damping = j->damping;
      b->armature = j->armature;
      b->friction = j->frictionloss;
      if (j->type == KHZ_JOINT_REVOLUTE || j->type == KHZ_JOINT_PRISMATIC) {
        b->stiffness = j->stiffness;
        b->springref = j->springref;
      }
    }
    c->extra[c->nbody - 1].mj_body = id;
    c->extra[c->nbody - 1].mj_joint = j ? c->mj_njoint : -1;
    c->extra[c->nbody - 1].jnode = j ? j->node : NULL;

    /* names: the joint's, the body's on the last link, "BODY:JOINT" before */
    int jid = j ? c->mj_njoint++ : 0;
    if (j) {
      char jgen[32];
      snprintf(jgen, sizeof jgen, "joint%d", jid);
      if (make_name(c, j->node, b->joint_name, j->name ? j->name : jgen, 1, j->name != NULL))
        return -1;
      c->extra[c->nbody - 1].named_joint = j->name != NULL;
    }
    if (i == nchain - 1) {
      if (make_name(c, el, b->name, name, 0, named)) return -1;
    } else {
      char inter[3 * KHZ_NAME_MAX];
      const char *prefix = c->opt->name_prefix ? c->opt->name_prefix : "";
      snprintf(inter, sizeof inter, "%s:%s", name,
               j->name ? j->name : b->joint_name + strlen(prefix));
      if (make_name(c, j->node, b->name, inter, 0, 0)) return -1;
    }
  }
  int self = c->nbody; /* the last link */
  memcpy(c->extra[self - 1].off, off, sizeof off);

  /* MuJoCo's parent filter: a body's geoms never touch its moving parent's. khz
   * filters parent and child, but the last link of a chain has the chain's
   * massless links between it and the MJCF parent: exclude that pair */
  if (nchain > 1 && parent != 0 && !static_) {
    if (grow(c, (void **)&c->excl, c->nexcl, &c->capexcl, 2 * sizeof *c->excl)) return -1;
    c->excl[2 * c->nexcl] = parent;
    c->excl[2 * c->nexcl + 1] = self;
    c->nexcl++;
  }

  /* geoms, then the body's mass: <inertial> or the geoms' */
  c->nmass = 0;
  static_ = static_ && c->njoint == 0;
  xmlNodePtr inertial = NULL;
  int has_inertial = 0;
  for (xmlNodePtr e = el->children; e; e = e->next) has_inertial |= is(e, "inertial");
  int need_mass = c->inertiafromgeom == 1 || (c->inertiafromgeom == 2 && !has_inertial);
  for (xmlNodePtr e = el->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    if (is(e, "geom")) {
      if (read_geom(c, e, cls, self, off, static_, need_mass)) return -1;
    } else if (is(e, "inertial")) {
      if (inertial) return fail(c, e, "a body has at most one <inertial>");
      if (check_attrs(c, e, "inertial", inertial_attrs)) return -1;
      inertial = e;
    } else if (is(e, "site")) {
      if (read_site(c, e, cls, self, off)) return -1;
    } else if (!is(e, "body") && !is(e, "joint") && !is(e, "freejoint") && other_child(c, e)) {
      return -1;
    }
  }
  double mass, com[3], I6[6];
  if (inertial && c->inertiafromgeom != 1) {
    if (read_inertial(c, inertial, &mass, com, I6)) return -1;
  } else if (c->inertiafromgeom != 0) {
    sum_masses(c, &mass, com, I6);
  } else {
    mass = 0, com[0] = com[1] = com[2] = 0;
    memset(I6, 0, sizeof I6);
  }
  if (c->boundmass > 0 && mass < c->boundmass) mass = c->boundmass;
  if (c->boundinertia > 0) {
    /* principal moments at least boundinertia (MuJoCo bounds the diagonalised inertia) */
    double A[9] = {I6[0], I6[3], I6[4], I6[3], I6[1], I6[5], I6[4], I6[5], I6[2]}, ev[3], V[9];
    khz_eig3(A, ev, V);
    int changed = 0;
    for (int k = 0; k < 3; k++)
      if (ev[k] < c->boundinertia) ev[k] = c->boundinertia, changed = 1;
    if (changed) {
      double B[9] = {0};
      for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
          for (int k = 0; k < 3; k++) B[3 * a + b] += V[3 * a + k] * ev[k] * V[3 * b + k];
      I6[0] = B[0], I6[1] = B[4], I6[2] = B[8];
      I6[3] = 0.5 * (B[1] + B[3]), I6[4] = 0.5 * (B[2] + B[6]), I6[5] = 0.5 * (B[5] + B[7]);
    }
  }
  khzBodySpec *last = &c->bodies[self - 1];
  last->mass = mass;
  for (int k = 0; k < 3; k++) last->com[k] = com[k] - off[k];
  memcpy(last->inertia, I6, sizeof I6);

  /* children */
  return read_children(c, el, self, off, cls, static_);
}

/* <worldbody>: geoms on the world, bodies below it */
static int read_worldbody(mjcf_ctx *c, xmlNodePtr wb) {
  double zero[3] = {0, 0, 0};
  if (check_attrs(c, wb, "worldbody", no_attrs)) return -1;
  c->nmass = 0;
  for (xmlNodePtr e = wb->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    if (is(e, "geom")) {
      if (read_geom(c, e, c->main_cls, 0, zero, 1, 0)) return -1;
    } else if (is(e, "joint") || is(e, "freejoint")) {
      return fail(c, e, "the world body cannot have joints: put the joint and what it moves in a <body>");
    } else if (is(e, "inertial")) {
      return fail(c, e, "the world body cannot have an <inertial>: remove it (the world does not move)");
    } else if (is(e, "site")) {
      if (read_site(c, e, c->main_cls, 0, zero)) return -1;
    } else if (!is(e, "body") && other_child(c, e)) {
      return -1;
    }
  }
  return read_children(c, wb, 0, zero, c->main_cls, 1);
}

/* ------------------------------------------------------------ actuators -- */

/* limits of a control or force range: explicit, or auto per the compiler */
static int range_limited(mjcf_ctx *c, xmlNodePtr el, const char *what, int lim,
                         const double range[2]) {
  int hasrange = range[0] != 0 || range[1] != 0;
  if (lim == 2) {
    if (hasrange && !c->autolimits)
      return fail(c, el,
                  "%srange without %slimited: set <compiler autolimits=\"true\"> or %slimited "
                  "explicitly (MuJoCo refuses this too)",
                  what, what, what);
    lim = hasrange;
  }
  if (lim && !(range[0] < range[1]))
    return fail(c, el, "%srange[0] = %g must be below %srange[1] = %g: give %srange=\"lower upper\"",
                what, range[0], what, range[1], what);
  return lim;
}

/* one actuator on a joint: <motor>, <position>, <velocity> or <general> */
static int read_actuator(mjcf_ctx *c, xmlNodePtr el) {
  int cls = -1;
  xmlNodePtr src[KHZ_MJCF_MAX_SRC];
  const char *kind = (const char *)el->name;
  if (check_attrs(c, el, "motor", motor_attrs) || element_class(c, el, c->main_cls, &cls))
    return -1;
  int n = sources(c, el, "actuator", cls, src);
  if (n < 0) return -1;

  /* the transmission must be a joint */
  const char *joint = attr(c, el, "joint");
  if (!joint)
    return warn(c, el, "actuator transmission",
                "an actuator that does not drive a joint (tendon, site, body) is not supported "
                "by khz: the model has no such command");
  char full[KHZ_NAME_MAX];
  const char *prefix = c->opt->name_prefix ? c->opt->name_prefix : "";
  snprintf(full, sizeof full, "%s%s", prefix, joint);
  int b = -1;
  for (int i = 0; i < c->nbody; i++)
    if (c->extra[i].named_joint && strcmp(c->bodies[i].joint_name, full) == 0) b = i;
  if (b < 0) return fail(c, el, "unknown joint \"%s\": no <joint name=\"%s\"> in the model (names are case-sensitive)", joint, joint);
  khzJointType t = c->bodies[b].joint_type;
  if (t == KHZ_JOINT_SPHERICAL || t == KHZ_JOINT_FLOATING)
    return warn(c, el, "motor multidof",
                "an actuator on a ball or free joint is not supported by khz: the model has no "
                "such command");

  /* gear, control and force ranges */
  double gear[6] = {1, 0, 0, 0, 0, 0}, ctrl[2] = {0, 0}, force[2] = {0, 0};
  int cl = 2, fl = 2;
  if (read_vec(c, src, n, "gear", gear, 1, 6, NULL) ||
      read_vec(c, src, n, "ctrlrange", ctrl, 2, 2, NULL) ||
      read_vec(c, src, n, "forcerange", force, 2, 2, NULL) ||
      read_keyword(c, src, n, "ctrllimited", limited_words, &cl) ||
      read_keyword(c, src, n, "forcelimited", limited_words, &fl))
    return -1;
  if ((cl = range_limited(c, el, "ctrl", cl, ctrl)) < 0 ||
      (fl = range_limited(c, el, "force", fl, force)) < 0)
    return -1;

  /* gain and bias: force = gain ctrl + bias0 + bias1 length + bias2 velocity */
  khzMjcfActuatorType type = KHZ_MJCF_MOTOR;
  double gain = 1, bias[3] = {0, 0, 0};
  if (strcmp(kind, "position") == 0 || strcmp(kind, "velocity") == 0) {
    double kp = 1, kv = strcmp(kind, "velocity") == 0 ? 1 : 0;
    /* only the element itself: kp and kv are not shared through the actuator default */
    xmlNodePtr self[1] = {el};
    if (read_vec(c, self, 1, "kp", &kp, 1, 1, NULL) || read_vec(c, self, 1, "kv", &kv, 1, 1, NULL))
      return -1;
    if (kp < 0 || kv < 0)
      return fail(c, el, "%s=%g is negative: a servo gain must be >= 0", kp < 0 ? "kp" : "kv",
                  kp < 0 ? kp : kv);
    if (strcmp(kind, "position") == 0) {
      type = KHZ_MJCF_POSITION, gain = kp, bias[1] = -kp, bias[2] = -kv;
    } else {
      type = KHZ_MJCF_VELOCITY, gain = kv, bias[2] = -kv;
    }
  } else if (strcmp(kind, "general") == 0) {
    static const char *const gt[] = {"fixed", "affine", "muscle", "user", NULL};
    static const char *const bt[] = {"none", "affine", "muscle", "user", NULL};
    static const char *const dt[] = {"none", "integrator", "filter", "filterexact", "muscle",
                                     "user", NULL};
    int g = 0, bb = 0, d = 0;
    double gp[10] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, bp[10] = {0};
    if (read_keyword(c, src, n, "gaintype", gt, &g) ||
        read_keyword(c, src, n, "biastype", bt, &bb) ||
        read_keyword(c, src, n, "dyntype", dt, &d) ||
        read_vec(c, src, n, "gainprm", gp, 1, 10, NULL) ||
        read_vec(c, src, n, "biasprm", bp, 1, 10, NULL))
      return -1;
    if (g != 0 || bb >= 2)
      return warn(c, el, "general gain",
                  "an actuator with a gain other than fixed or a bias other than none or affine "
                  "is not supported by khz: the model has no such command");
    if (d != 0 && warn(c, el, "general dyntype",
                       "actuator dynamics (dyntype=\"%s\") are not supported by khz: the force "
                       "follows the control at once", dt[d]))
      return -1;
    type = KHZ_MJCF_GENERAL, gain = gp[0];
    if (bb == 1) bias[0] = bp[0], bias[1] = bp[1], bias[2] = bp[2];
  } else if (strcmp(kind, "motor") != 0) {
    return warn_element(c, el, "actuator not supported by khz: the model has no such command");
  }

  /* under an implicit integrator the velocity feedback (kv) is joint damping,
   * which the step integrates implicitly (MuJoCo's implicitfast: M + h D with
   * D holding gear^2 kv); a force clamped to forcerange is not linear: explicit */
  int kv_implicit = c->implicit_kv && !fl && bias[2] < 0;
  if (kv_implicit) c->bodies[b].damping += gear[0] * gear[0] * -bias[2];

  /* the joint's effort limit: |gear| times the largest force; a force the
   * control bounds only without bias (motor, general without bias) */
  double g = fabs(gear[0]);
  double lim = INFINITY;
  int nobias = bias[0] == 0 && bias[1] == 0 && bias[2] == 0;
  if (cl && nobias) lim = g * fabs(gain) * fmax(fabs(ctrl[0]), fabs(ctrl[1]));
  if (fl) lim = fmin(lim, g * fmax(fabs(force[0]), fabs(force[1])));
  if (isinf(lim))
    c->extra[b].unlimited = 1;
  else
    c->extra[b].effort += lim;

  /* what the caller needs to turn controls into torques */
  if (grow(c, (void **)&c->acts, c->nact, &c->capact, sizeof *c->acts)) return -1;
  khzMjcfActuator *a = &c->acts[c->nact++];
  memset(a, 0, sizeof *a);
  const char *name = attr(c, el, "name");
  snprintf(a->name, sizeof a->name, "%s", name ? name : "");
  snprintf(a->joint, sizeof a->joint, "%s", full);
  a->gear = gear[0];
  a->ctrllimited = cl;
  memcpy(a->ctrlrange, ctrl, sizeof ctrl);
  a->forcelimited = fl;
  memcpy(a->forcerange, force, sizeof force);
  a->type = type;
  a->gain = gain;
  memcpy(a->bias, bias, sizeof bias);
  a->kv_implicit = kv_implicit;
  return 0;
}

static int read_actuators(mjcf_ctx *c, xmlNodePtr sec) {
  if (check_attrs(c, sec, "actuator", no_attrs)) return -1;
  for (xmlNodePtr e = sec->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    if (in_list((const char *)e->name, actuator_kinds)) {
      if (read_actuator(c, e)) return -1;
    } else if (warn_element(c, e, "element not supported by khz (ignored)")) {
      return -1;
    }
  }
  return 0;
}

/* ------------------------------------------------------ contact, keys -- */

/* the local index + 1 of the khz body carrying MJCF body `name`, 0 for the world */
static int body_by_name(mjcf_ctx *c, const char *name) {
  if (strcmp(name, "world") == 0) return 0;
  char full[KHZ_NAME_MAX];
  const char *prefix = c->opt->name_prefix ? c->opt->name_prefix : "";
  snprintf(full, sizeof full, "%s%s", prefix, name);
  for (int i = 0; i < c->nbody; i++)
    if (strcmp(c->bodies[i].name, full) == 0) return i + 1;
  return -1;
}

/* <contact>: <exclude> body pairs; <pair> is warned about */
static int read_contact(mjcf_ctx *c, xmlNodePtr sec) {
  static const char *const excl_attrs[] = {"name", "body1", "body2", NULL};
  if (check_attrs(c, sec, "contact", no_attrs)) return -1;
  for (xmlNodePtr e = sec->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    if (!is(e, "exclude")) {
      if (warn_element(c, e,
                       is(e, "pair") ? "explicit contact pairs are not supported by khz: the "
                                       "geoms' contype and conaffinity decide (its gains, margins "
                                       "and friction are not used)"
                                     : "element not supported by khz (ignored)"))
        return -1;
      continue;
    }
    if (check_attrs(c, e, "exclude", excl_attrs)) return -1;
    const char *n1 = attr(c, e, "body1"), *n2 = attr(c, e, "body2");
    if (!n1 || !n2) return fail(c, e, "<exclude> needs body1 and body2");
    int b1 = body_by_name(c, n1), b2 = body_by_name(c, n2);
    if (b1 < 0) return fail(c, e, "unknown body \"%s\": no <body name=\"%s\"> in the model (names are case-sensitive)", n1, n1);
    if (b2 < 0) return fail(c, e, "unknown body \"%s\": no <body name=\"%s\"> in the model (names are case-sensitive)", n2, n2);
    if (grow(c, (void **)&c->excl, c->nexcl, &c->capexcl, 2 * sizeof *c->excl)) return -1;
    c->excl[2 * c->nexcl] = b1;
    c->excl[2 * c->nexcl + 1] = b2;
    c->nexcl++;
  }
  return 0;
}

/* the local index + 1 of the khz body carrying the joint `name`, -1 when none */
static int body_by_joint(mjcf_ctx *c, const char *name) {
  char full[KHZ_NAME_MAX];
  const char *prefix = c->opt->name_prefix ? c->opt->name_prefix : "";
  snprintf(full, sizeof full, "%s%s", prefix, name);
  for (int i = 0; i < c->nbody; i++)
    if (c->bodies[i].joint_type != KHZ_JOINT_FIXED && strcmp(c->bodies[i].joint_name, full) == 0)
      return i + 1;
  return -1;
}

/* <equality><joint joint1 joint2 polycoef>: q1 - qpos0_1 = p(q2 - qpos0_2)
 * (MuJoCo's), with qpos0 the joints' ref */
static int read_joint_equality(mjcf_ctx *c, xmlNodePtr e) {
  static const char *const attrs[] = {"name", "class", "active", "solref", "solimp",
                                      "joint1", "joint2", "polycoef", NULL};
  if (check_attrs(c, e, "joint equality", attrs)) return -1;
  xmlNodePtr src[1] = {e};
  if ((attr(c, e, "solref") || attr(c, e, "solimp")) &&
      warn(c, e, "equality solref",
           "solref and solimp: khz holds equality constraints rigidly (Baumgarte drift "
           "correction), not as MuJoCo's soft constraints (ignored)"))
    return -1;
  int active = 1;
  static const char *const bools[] = {"false", "true", NULL};
  if (read_keyword(c, src, 1, "active", bools, &active)) return -1;
  const char *n1 = attr(c, e, "joint1"), *n2 = attr(c, e, "joint2");
  if (!n1) return fail(c, e, "<joint> equality needs joint1");
  int b1 = body_by_joint(c, n1), b2 = n2 ? body_by_joint(c, n2) : 0;
  if (b1 < 0) return fail(c, e, "unknown joint \"%s\": no <joint name=\"%s\"> in the model (names are case-sensitive)", n1, n1);
  if (b2 < 0) return fail(c, e, "unknown joint \"%s\": no <joint name=\"%s\"> in the model (names are case-sensitive)", n2, n2);
  int ok1 = c->bodies[b1 - 1].joint_type, ok2 = b2 ? c->bodies[b2 - 1].joint_type : KHZ_JOINT_REVOLUTE;
  if (ok1 == KHZ_JOINT_SPHERICAL || ok1 == KHZ_JOINT_FLOATING || ok2 == KHZ_JOINT_SPHERICAL ||
      ok2 == KHZ_JOINT_FLOATING)
    return fail(c, e, "a <joint> equality couples hinges and slides only");
  if (b1 == b2) return fail(c, e, "joint1 and joint2 are the same joint \"%s\"", n1);
  khzEqualitySpec q;
  memset(&q, 0, sizeof q);
  q.type = KHZ_EQ_JOINT;
  q.body1 = b1, q.body2 = b2;
  q.quat[0] = 1;
  q.polycoef[1] = 1;
  if (read_vec(c, src, 1, "polycoef", q.polycoef, 1, 5, NULL)) return -1;
  q.pos1[0] = c->bodies[b1 - 1].q0[0];
  q.pos2[0] = b2 ? c->bodies[b2 - 1].q0[0] : 0;
  const char *name = attr(c, e, "name");
  snprintf(q.name, sizeof q.name, "%s", name ? name : "");
  if (!active) return 0;
  if (grow(c, (void **)&c->eqs, c->neq, &c->capeq, sizeof *c->eqs)) return -1;
  c->eqs[c->neq++] = q;
  return 0;
}

/* <equality>: connect and weld on bodies, held on the articulated bodies
 * (rt/src/constraint.c). MuJoCo's semantics: connect's anchor is in body1's
 * frame and the point of body2 is where it is at qpos0; weld's relpose is
 * body2's pose in body1's frame (all-zero quaternion: the pose at qpos0) and
 * its anchor a point of body2. Points move from the MJCF body frame to the khz
 * one (a multi-joint body's frame sits at its last joint's anchor). */
static int read_equality(mjcf_ctx *c, xmlNodePtr sec) {
  static const char *const eq_attrs[] = {"name",   "class",   "active",  "solref",
                                         "solimp", "body1",   "body2",   "anchor",
                                         "relpose", "torquescale", NULL};
  if (check_attrs(c, sec, "equality", no_attrs)) return -1;
  for (xmlNodePtr e = sec->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    int weld = is(e, "weld");
    if (is(e, "joint")) {
      if (read_joint_equality(c, e)) return -1;
      continue;
    }
    if (!weld && !is(e, "connect")) {
      const char *why = is(e, "tendon")
                            ? "tendon equality constraints are not supported by khz: the "
                              "tendons' joints move independently"
                            : "element not supported by khz (ignored)";
      if (warn_element(c, e, why)) return -1;
      continue;
    }
    if (check_attrs(c, e, weld ? "weld" : "connect", eq_attrs)) return -1;
    xmlNodePtr src[1] = {e};
    if ((attr(c, e, "solref") || attr(c, e, "solimp")) &&
        warn(c, e, "equality solref",
             "solref and solimp: khz holds equality constraints rigidly (Baumgarte drift "
             "correction), not as MuJoCo's soft constraints (ignored)"))
      return -1;
    if (attr(c, e, "class") &&
        warn(c, e, "equality class", "default classes of equality constraints are not read "
                                     "by khz (the element's own attributes are used)"))
      return -1;
    if (attr(c, e, "torquescale") &&
        warn(c, e, "equality torquescale", "torquescale is not supported by khz (ignored)"))
      return -1;
    int active = 1;
    static const char *const bools[] = {"false", "true", NULL};
    if (read_keyword(c, src, 1, "active", bools, &active)) return -1;
    const char *n1 = attr(c, e, "body1"), *n2 = attr(c, e, "body2");
    if (!n1)
      return fail(c, e, "<%s> needs body1 (khz reads body constraints; site1/site2 are not "
                        "supported)", weld ? "weld" : "connect");
    int b1 = body_by_name(c, n1), b2 = n2 ? body_by_name(c, n2) : 0;
    if (b1 < 0) return fail(c, e, "unknown body \"%s\": no <body name=\"%s\"> in the model (names are case-sensitive)", n1, n1);
    if (b2 < 0) return fail(c, e, "unknown body \"%s\": no <body name=\"%s\"> in the model (names are case-sensitive)", n2, n2);
    if (b1 == b2) return fail(c, e, "body1 and body2 are the same body \"%s\"", n1);
    double anchor[3] = {0, 0, 0}, relpose[7] = {0, 0, 0, 0, 0, 0, 0};
    int has_anchor = 0, has_relpose = 0;
    if (read_vec(c, src, 1, "anchor", anchor, 3, 3, &has_anchor)) return -1;
    if (weld && read_vec(c, src, 1, "relpose", relpose, 7, 7, &has_relpose)) return -1;
    if (!weld && !has_anchor) return fail(c, e, "<connect> needs anchor (a point in body1's frame)");
    if (!active) continue; /* MuJoCo starts it disabled: not enforced */
    khzEqualitySpec q;
    memset(&q, 0, sizeof q);
    q.type = weld ? KHZ_EQ_WELD : KHZ_EQ_CONNECT;
    q.body1 = b1, q.body2 = b2;
    q.quat[0] = 1;
    const char *name = attr(c, e, "name");
    snprintf(q.name, sizeof q.name, "%s", name ? name : "");
    const double zero[3] = {0, 0, 0};
    const double *off1 = b1 ? c->extra[b1 - 1].off : zero, *off2 = b2 ? c->extra[b2 - 1].off : zero;
    double qn = relpose[3] * relpose[3] + relpose[4] * relpose[4] + relpose[5] * relpose[5] +
                relpose[6] * relpose[6];
    if (!weld) {
      /* body1's anchor; body2's point where it is at q0 */
      for (int k = 0; k < 3; k++) q.pos1[k] = anchor[k] - off1[k];
      q.at_q0 = 1;
    } else if (!(qn > 0)) {
      /* the relative pose at q0: body1's MJCF origin held where it is in body2 */
      for (int k = 0; k < 3; k++) q.pos1[k] = -off1[k];
      q.at_q0 = 1;
    } else {
      /* body2's anchor a on body1's point relpos + Q a; body1 in body2's frame is Q^-1 */
      double Q[4] = {relpose[3], relpose[4], relpose[5], relpose[6]}, R[9], Qa[3];
      double nq = sqrt(qn);
      for (int k = 0; k < 4; k++) Q[k] /= nq;
      quat2mat(R, Q);
      for (int r = 0; r < 3; r++) Qa[r] = R[3 * r] * anchor[0] + R[3 * r + 1] * anchor[1] + R[3 * r + 2] * anchor[2];
      for (int k = 0; k < 3; k++) {
        q.pos1[k] = relpose[k] + Qa[k] - off1[k];
        q.pos2[k] = anchor[k] - off2[k];
      }
      q.quat[0] = Q[0], q.quat[1] = -Q[1], q.quat[2] = -Q[2], q.quat[3] = -Q[3];
    }
    if (grow(c, (void **)&c->eqs, c->neq, &c->capeq, sizeof *c->eqs)) return -1;
    c->eqs[c->neq++] = q;
  }
  return 0;
}

/* the site named name, or NULL */
static const mjcf_site *site_by_name(const mjcf_ctx *c, const char *name) {
  for (int i = 0; i < c->nsite; i++)
    if (strcmp(c->sites[i].name, name) == 0) return &c->sites[i];
  return NULL;
}

/* a HIL sensor (khz/hil.h) for MJCF sensor e: named as in the file (with the
 * model's prefix; unnamed: "sensorID", MuJoCo's id), MuJoCo's `noise` as the
 * white noise's standard deviation; object is the local body index + 1 */
static int add_hil(mjcf_ctx *c, xmlNodePtr e, int id, int type, int object, const double pos[3]) {
  khzSensorSpec h;
  memset(&h, 0, sizeof h);
  const char *name = attr(c, e, "name"), *prefix = c->opt->name_prefix ? c->opt->name_prefix : "";
  char gen[32];
  if (!name || !name[0]) snprintf(gen, sizeof gen, "sensor%d", id), name = gen;
  size_t lp = strlen(prefix), ln = strlen(name);
  if (lp + ln >= sizeof h.name)
    return fail(c, e, "sensor name \"%s%s\" is longer than %d characters", prefix, name,
                (int)sizeof h.name - 1);
  memcpy(h.name, prefix, lp);
  memcpy(h.name + lp, name, ln + 1);
  for (int i = 0; i < c->nhil; i++)
    if (strcmp(c->hil[i].name, h.name) == 0) return fail(c, e, "repeated sensor name \"%s\"", name);
  h.type = type;
  h.object = object;
  if (pos) memcpy(h.pos, pos, sizeof h.pos);
  h.divisor = 1;
  xmlNodePtr src[1] = {e};
  if (read_vec(c, src, 1, "noise", &h.noise.white, 1, 1, NULL)) return -1;
  if (h.noise.white < 0)
    return fail(c, e, "noise=%g is negative: it is the noise's standard deviation, >= 0 (0: none)",
                h.noise.white);
  if (grow(c, (void **)&c->hil, c->nhil, &c->caphil, sizeof *c->hil)) return -1;
  c->hil[c->nhil++] = h;
  return 0;
}

/* <sensor>: the kinds that map onto khz's state (load.h) and, where khz's
 * HIL layer has the same sensor, onto a HIL sensor (encoder, gyro,
 * accelerometer, touch, and force / torque as a joint force-torque sensor);
 * others warn once per kind */
static int read_sensors(mjcf_ctx *c, xmlNodePtr sec) {
  static const char *const kinds[] = {"jointpos",    "jointvel",    "framepos", "framequat",
                                      "framelinvel", "frameangvel", "ballquat", "ballangvel",
                                      NULL};
  static const char *const attrs[] = {"name",    "joint", "objtype", "objname", "noise",
                                      "cutoff",  "user",  "reftype", "refname", NULL};
  static const char *const site_kinds[] = {"gyro", "accelerometer", "touch", "force", "torque", NULL};
  static const int site_types[] = {KHZ_SENSOR_GYRO, KHZ_SENSOR_ACCEL, KHZ_SENSOR_TOUCH,
                                   KHZ_SENSOR_JOINT_FT, KHZ_SENSOR_JOINT_FT};
  static const char *const site_sensor_attrs[] = {"name", "site", "noise", "cutoff", "user", NULL};
  if (check_attrs(c, sec, "sensor", no_attrs)) return -1;
  for (xmlNodePtr e = sec->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    int id = c->mj_nsensor++;
    int k;
    for (k = 0; site_kinds[k] && !is(e, site_kinds[k]); k++) {
    }
    if (site_kinds[k]) {
      /* a site sensor with a HIL counterpart: on the site's body, at the site */
      if (check_attrs(c, e, (const char *)e->name, site_sensor_attrs)) return -1;
      const char *sn = attr(c, e, "site");
      if (!sn) return fail(c, e, "<%s> needs site", site_kinds[k]);
      const mjcf_site *st = site_by_name(c, sn);
      if (!st) return fail(c, e, "unknown site \"%s\": no <site name=\"%s\"> in the model (names are case-sensitive)", sn, sn);
      if (st->body == 0) {
        if (warn(c, e, "sensor on a world site",
                 "a %s on a site of the world reads nothing that moves: left out", site_kinds[k]))
          return -1;
        continue;
      }
      const char *body = c->bodies[st->body - 1].name;
      int turned = fabs(fabs(st->quat[0]) - 1) > 1e-12;
      if (site_types[k] != KHZ_SENSOR_TOUCH && site_types[k] != KHZ_SENSOR_JOINT_FT && turned) {
        char key[64];
        snprintf(key, sizeof key, "sensor %s site axes", site_kinds[k]);
        if (warn(c, e, key,
                 "site \"%s\" is turned from body \"%s\": khz's %s reads in the body's axes, "
                 "MuJoCo's in the site's",
                 sn, body, site_kinds[k]))
          return -1;
      }
      if (site_types[k] == KHZ_SENSOR_JOINT_FT) {
        /* what the site's body's joint transmits (MuJoCo's cfrc_int, the
         * same sign): khz's joint force-torque sensor, 6 values */
        if (c->bodies[st->body - 1].joint_type == KHZ_JOINT_FLOATING) {
          if (warn(c, e, "sensor force on a free body",
                   "a %s sensor on a site of free body \"%s\" reads what no joint transmits "
                   "(khz: left out)",
                   site_kinds[k], body))
            return -1;
          continue;
        }
        char key[64];
        snprintf(key, sizeof key, "sensor %s layout", site_kinds[k]);
        if (warn(c, e, key,
                 "khz's joint force-torque sensor for <%s> gives 6 values, force then torque "
                 "about site \"%s\" in body \"%s\"'s axes (MuJoCo: the 3 of the %s, in the "
                 "site's axes)",
                 site_kinds[k], sn, body, site_kinds[k]))
          return -1;
      }
      if (site_types[k] == KHZ_SENSOR_TOUCH &&
          warn(c, e, "sensor touch volume",
               "touch reads the normal forces of all contacts of body \"%s\" (MuJoCo: those "
               "inside site \"%s\"'s volume)",
               body, sn))
        return -1;
      if (add_hil(c, e, id, site_types[k], st->body, st->pos)) return -1;
      continue;
    }
    if (is(e, "velocimeter")) {
      /* a site's linear velocity in its own axes: read from the state */
      if (check_attrs(c, e, "velocimeter", site_sensor_attrs)) return -1;
      const char *sn = attr(c, e, "site");
      if (!sn) return fail(c, e, "<velocimeter> needs site: name the <site> it reads");
      const mjcf_site *st = site_by_name(c, sn);
      if (!st) return fail(c, e, "unknown site \"%s\": no <site name=\"%s\"> in the model (names are case-sensitive)", sn, sn);
      if (st->body == 0) {
        if (warn(c, e, "sensor on a world site",
                 "a velocimeter on a site of the world reads zero: left out"))
          return -1;
        continue;
      }
      khzMjcfSensor v;
      memset(&v, 0, sizeof v);
      const char *name = attr(c, e, "name");
      snprintf(v.name, sizeof v.name, "%s", name ? name : "");
      v.type = KHZ_MJCF_VELOCIMETER;
      snprintf(v.object, sizeof v.object, "%s", c->bodies[st->body - 1].name);
      memcpy(v.pos, st->pos, sizeof v.pos);
      memcpy(v.quat, st->quat, sizeof v.quat);
      v.dim = 3;
      if (grow(c, (void **)&c->sens, c->nsens, &c->capsens, sizeof *c->sens)) return -1;
      c->sens[c->nsens++] = v;
      continue;
    }
    for (k = 0; kinds[k] && !is(e, kinds[k]); k++) {
    }
    if (!kinds[k]) {
      const char *why = "this sensor type is not read by khz (left out); khz reads jointpos, "
                        "jointvel, frame sensors of bodies and sites, velocimeter, gyro, "
                        "accelerometer, touch, force and torque";
      if (warn_element(c, e, why)) return -1;
      continue;
    }
    if (check_attrs(c, e, (const char *)e->name, attrs)) return -1;
    khzMjcfSensor sn;
    memset(&sn, 0, sizeof sn);
    sn.quat[0] = 1;
    int ball = k >= 6;
    if (ball) k -= 6; /* ballquat, ballangvel: jointpos, jointvel of a ball joint */
    sn.type = (khzMjcfSensorType)k;
    const char *name = attr(c, e, "name");
    snprintf(sn.name, sizeof sn.name, "%s", name ? name : "");
    int encoder = 0; /* the local body of a hinge or slide: also a HIL encoder */
    if (k <= KHZ_MJCF_JOINTVEL) {
      const char *j = attr(c, e, "joint");
      if (!j) return fail(c, e, "<%s> needs joint", (const char *)e->name);
      int b = body_by_joint(c, j);
      if (b < 0) return fail(c, e, "unknown joint \"%s\": no <joint name=\"%s\"> in the model (names are case-sensitive)", j, j);
      int t = c->bodies[b - 1].joint_type;
      if (ball != (t == KHZ_JOINT_SPHERICAL))
        return fail(c, e, "<%s> needs a %s joint (MuJoCo's rule)", (const char *)e->name,
                    ball ? "ball" : "hinge or slide");
      snprintf(sn.object, sizeof sn.object, "%s", c->bodies[b - 1].joint_name);
      sn.dim = t == KHZ_JOINT_SPHERICAL ? (k == KHZ_MJCF_JOINTPOS ? 4 : 3) : 1;
      if (!ball) encoder = b;
    } else {
      const char *ot = attr(c, e, "objtype"), *on = attr(c, e, "objname");
      if (!ot || !on) return fail(c, e, "<%s> needs objtype and objname", kinds[k]);
      int xbody = strcmp(ot, "xbody") == 0, site = strcmp(ot, "site") == 0;
      if (!xbody && !site && strcmp(ot, "body") != 0) {
        char key[64];
        snprintf(key, sizeof key, "sensor objtype %s", ot);
        if (warn(c, e, key, "frame sensors on objtype \"%s\" are not read by khz (geoms and "
                            "cameras are not kept): left out", ot))
          return -1;
        continue;
      }
      if (!xbody && !site && k == KHZ_MJCF_FRAMEQUAT) {
        if (warn(c, e, "sensor framequat body",
                 "framequat of objtype \"body\" (the principal axes) is not read by khz: left "
                 "out; objtype \"xbody\" gives the body frame's"))
          return -1;
        continue;
      }
      if (site) {
        /* the site's frame: its pose on its body */
        const mjcf_site *st = site_by_name(c, on);
        if (!st) return fail(c, e, "unknown site \"%s\": no <site name=\"%s\"> in the model (names are case-sensitive)", on, on);
        if (st->body == 0) {
          if (warn(c, e, "sensor on a world site",
                   "a frame sensor on a site of the world reads a constant: left out"))
            return -1;
          continue;
        }
        snprintf(sn.object, sizeof sn.object, "%s", c->bodies[st->body - 1].name);
        memcpy(sn.pos, st->pos, sizeof sn.pos);
        memcpy(sn.quat, st->quat, sizeof sn.quat);
      } else {
        int b = body_by_name(c, on);
        if (b <= 0) return fail(c, e, "unknown body \"%s\": no <body name=\"%s\"> in the model (names are case-sensitive)", on, on);
        snprintf(sn.object, sizeof sn.object, "%s", c->bodies[b - 1].name);
        sn.com = !xbody;
        for (int q = 0; q < 3; q++) sn.pos[q] = -c->extra[b - 1].off[q];
      }
      sn.dim = k == KHZ_MJCF_FRAMEQUAT ? 4 : 3;
    }
    if (attr(c, e, "reftype") || attr(c, e, "refname")) {
      if (warn(c, e, "sensor reftype", "frame sensors relative to another frame (reftype, "
                                       "refname) are not read by khz: left out"))
        return -1;
      continue;
    }
    if (grow(c, (void **)&c->sens, c->nsens, &c->capsens, sizeof *c->sens)) return -1;
    c->sens[c->nsens++] = sn;
    /* jointpos / jointvel of a hinge or slide: an encoder (position and velocity) */
    if (encoder && add_hil(c, e, id, KHZ_SENSOR_ENCODER, encoder, NULL)) return -1;
  }
  return 0;
}

/* <keyframe>: the keys, read after the bodies (their sizes) */
static int read_keyframe(mjcf_ctx *c, xmlNodePtr sec) {
  static const char *const key_attrs[] = {"name", "time", "qpos", "qvel", "ctrl", "act",
                                          "mpos", "mquat", NULL};
  if (check_attrs(c, sec, "keyframe", no_attrs)) return -1;
  for (xmlNodePtr e = sec->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    if (!is(e, "key")) {
      if (warn_element(c, e, "element not supported by khz (ignored)")) return -1;
      continue;
    }
    if (check_attrs(c, e, "key", key_attrs)) return -1;
    if (grow(c, (void **)&c->keys, c->nkey, &c->capkey, sizeof *c->keys)) return -1;
    c->keys[c->nkey].node = e;
    c->keys[c->nkey].name = attr(c, e, "name");
    c->nkey++;
  }
  return 0;
}

/* sizes of MuJoCo's qpos and qvel for the bodies read */
static void mj_sizes(const mjcf_ctx *c, int *nq, int *nv) {
  *nq = *nv = 0;
  for (int i = 0; i < c->nbody; i++) {
    khzJointType t = c->bodies[i].joint_type;
    *nq += t == KHZ_JOINT_FLOATING ? 7 : t == KHZ_JOINT_SPHERICAL ? 4 : t == KHZ_JOINT_FIXED ? 0 : 1;
    *nv += t == KHZ_JOINT_FLOATING ? 6 : t == KHZ_JOINT_SPHERICAL ? 3 : t == KHZ_JOINT_FIXED ? 0 : 1;
  }
}

/* key k into out (allocated: qpos nq, qvel nv, ctrl nact); qpos defaults to qpos0 */
static int key_values(mjcf_ctx *c, int k, khzMjcfKey *out) {
  int nq, nv;
  mj_sizes(c, &nq, &nv);
  xmlNodePtr e = c->keys[k].node;
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", c->keys[k].name ? c->keys[k].name : "");
  out->qpos = calloc((size_t)nq + 1, sizeof(double));
  out->qvel = calloc((size_t)nv + 1, sizeof(double));
  out->ctrl = calloc((size_t)c->nact + 1, sizeof(double));
  if (!out->qpos || !out->qvel || !out->ctrl) return fail_oom(c);
  int qa = 0;
  for (int i = 0; i < c->nbody; i++) {
    const khzBodySpec *b = &c->bodies[i];
    int n = b->joint_type == KHZ_JOINT_FLOATING    ? 7
            : b->joint_type == KHZ_JOINT_SPHERICAL ? 4
            : b->joint_type == KHZ_JOINT_FIXED     ? 0
                                                   : 1;
    memcpy(out->qpos + qa, b->q0, (size_t)n * sizeof(double));
    if (b->joint_type == KHZ_JOINT_SPHERICAL) out->qpos[qa] = 1; /* identity quaternion */
    qa += n;
  }
  xmlNodePtr src[1] = {e};
  struct {
    const char *name;
    double *out;
    int n;
  } vecs[] = {{"qpos", out->qpos, nq}, {"qvel", out->qvel, nv}, {"ctrl", out->ctrl, c->nact}};
  for (int v = 0; v < 3; v++) {
    const char *val = attr(c, e, vecs[v].name);
    if (!val) continue;
    double *tmp = malloc(((size_t)vecs[v].n + 1) * sizeof(double));
    if (!tmp) return fail_oom(c);
    int got = parse_nums(val, tmp, 0, vecs[v].n + 1);
    free(tmp);
    if (got < 0)
      return fail(c, e, "%s=\"%.40s%s\" is not a list of finite numbers: write numbers separated "
                  "by spaces", vecs[v].name, val, strlen(val) > 40 ? "..." : "");
    if (got != vecs[v].n)
      return fail(c, e, "%s has %d numbers; the model needs %d: give one per %s of the model "
                  "(or leave %s out for its default)", vecs[v].name, got, vecs[v].n,
                  !strcmp(vecs[v].name, "ctrl") ? "actuator" : "coordinate", vecs[v].name);
    if (vecs[v].n > 0 && read_vec(c, src, 1, vecs[v].name, vecs[v].out, vecs[v].n, vecs[v].n, NULL))
      return -1;
  }
  if (read_vec(c, src, 1, "time", &out->time, 1, 1, NULL)) return -1;
  /* free joints: the pose in the world follows the base pose, as the bodies do */
  qa = 0;
  for (int i = 0; i < c->nbody; i++) {
    const khzBodySpec *b = &c->bodies[i];
    if (b->joint_type == KHZ_JOINT_FLOATING) {
      double *p = out->qpos + qa, n = 0;
      for (int j = 3; j < 7; j++) n += p[j] * p[j];
      if (n < 1e-20) return fail(c, e, "qpos holds a zero quaternion");
      for (int j = 3; j < 7; j++) p[j] /= sqrt(n);
      khz_pose_compose(p, p + 3, c->opt->base_pos, c->opt->base_quat, p, p + 3);
    }
    qa += b->joint_type == KHZ_JOINT_FLOATING    ? 7
          : b->joint_type == KHZ_JOINT_SPHERICAL ? 4
          : b->joint_type == KHZ_JOINT_FIXED     ? 0
                                                 : 1;
  }
  return 0;
}

static void free_key(khzMjcfKey *k) {
  free(k->qpos);
  free(k->qvel);
  free(k->ctrl);
  memset(k, 0, sizeof *k);
}

/* sets the bodies' q0 and qd0 from a key */
static void apply_key(mjcf_ctx *c, const khzMjcfKey *k) {
  int qa = 0, va = 0;
  for (int i = 0; i < c->nbody; i++) {
    khzBodySpec *b = &c->bodies[i];
    khzJointType t = b->joint_type;
    int nq = t == KHZ_JOINT_FLOATING ? 7 : t == KHZ_JOINT_SPHERICAL ? 4 : t == KHZ_JOINT_FIXED ? 0 : 1;
    int nv = t == KHZ_JOINT_FLOATING ? 6 : t == KHZ_JOINT_SPHERICAL ? 3 : t == KHZ_JOINT_FIXED ? 0 : 1;
    memcpy(b->q0, k->qpos + qa, (size_t)nq * sizeof(double));
    memcpy(b->qd0, k->qvel + va, (size_t)nv * sizeof(double));
    qa += nq, va += nv;
  }
}

/* a limited joint whose initial position (qpos0, or the chosen key's) lies
 * outside its range: one warning each, naming the value and the range
 * (Gymnasium's ant starts with its ankles 30 degrees outside theirs) */
static int warn_outside_range(mjcf_ctx *c, xmlNodePtr key) {
  for (int i = 0; i < c->nbody; i++) {
    const khzBodySpec *b = &c->bodies[i];
    if (!b->limited || !c->extra[i].jnode) continue;
    double x = b->q0[0], lo = b->lower, hi = b->upper;
    if (x >= lo && x <= hi) continue;
    int hinge = b->joint_type == KHZ_JOINT_REVOLUTE;
    double deg = 180 / KHZ_MJCF_PI;
    char key_name[KHZ_NAME_MAX + 32], val[64] = "", rng[64] = "";
    snprintf(key_name, sizeof key_name, "outside range %s", b->joint_name);
    if (hinge) {
      snprintf(val, sizeof val, " (%.4g deg)", x * deg);
      snprintf(rng, sizeof rng, " (%.4g..%.4g deg)", lo * deg, hi * deg);
    }
    const char *u = hinge ? "rad" : "m";
    if (warn(c, c->extra[i].jnode, key_name,
             "joint '%s' starts at %.6g %s%s%s, outside its range %.6g..%.6g %s%s, %.4g %s past "
             "the limit: khz's limit brings it back at a bounded speed (its push is capped, "
             "so the limit spring's stored energy is not released at once), as MuJoCo's soft "
             "limit pushes it back; start inside the range (a <key>, or the joint's ref) to "
             "avoid that first motion",
             b->joint_name, x, u, val, key ? " in the chosen <key>" : " (qpos0)", lo, hi, u, rng,
             x < lo ? lo - x : x - hi, u))
      return -1;
  }
  return 0;
}

/* ------------------------------------------------------------ includes -- */

/* marks a copied element and everything in it as coming from file incs[i] */
static void mark_file(xmlNodePtr n, int i) {
  for (xmlNodePtr k = n; k; k = k->next) {
    k->_private = (void *)(intptr_t)(i + 1);
    if (k->type == XML_ELEMENT_NODE) mark_file(k->children, i);
  }
}

/* the canonical form of path (itself when realpath fails), malloc'd */
static char *canon_path(const char *path) {
  char *r = realpath(path, NULL);
  return r ? r : strdup(path);
}

/* replaces every <include file="..."/> under el by the children of the
 * included file's <mujoco> element, in place and recursively (MuJoCo's rule:
 * the path is relative to the model file's directory, whichever file holds
 * the <include>) */
static int expand_includes(mjcf_ctx *c, xmlNodePtr el) {
  xmlNodePtr next;
  for (xmlNodePtr e = el->children; e; e = next) {
    next = e->next;
    if (e->type != XML_ELEMENT_NODE) continue;
    if (!is(e, "include")) {
      if (expand_includes(c, e)) return -1;
      continue;
    }
    const mjcf_file *from = node_inc(c, e);
    int depth = from ? from->depth : 0;
    int parent = from ? (int)(from - c->incs) : -1;
    if (depth >= KHZ_MJCF_MAX_INCLUDE)
      return fail(c, e, "<include> nested more than %d deep", KHZ_MJCF_MAX_INCLUDE);
    if (c->ninc >= KHZ_MJCF_MAX_INCLUDES)
      return fail(c, e, "more than %d <include>s in all", KHZ_MJCF_MAX_INCLUDES);
    if (check_attrs(c, e, "include", include_attrs)) return -1;
    const char *file = attr(c, e, "file");
    if (!file || !file[0]) return fail(c, e, "<include> needs a file");
    char path[KHZ_PATH_MAX];
    if (khz_path_join(path, sizeof path, c->dir[0] ? c->dir : NULL, file))
      return fail(c, e, "the path of \"%s\" is too long", file);
    if (!khz_file_exists(path))
      return fail(c, e, "included file \"%s\" not found (looked for %s; paths are relative to "
                  "the model file's directory)", file, path);
    char *buf = NULL, ferr[KHZ_PATH_MAX + 128];
    size_t len;
    if (khz_read_file(path, &buf, &len, ferr, sizeof ferr) < 0) return fail(c, e, "%s", ferr);
    if (len > (size_t)INT_MAX) {
      free(buf);
      return fail(c, e, "included file \"%s\" is too large", file);
    }
    if (grow(c, (void **)&c->incs, c->ninc, &c->capinc, sizeof *c->incs)) {
      free(buf);
      return -1;
    }
    /* a file already on the chain of includes that led here is a loop */
    char *real = canon_path(path);
    if (!real) {
      free(buf);
      return fail_oom(c);
    }
    int loop = 0;
    for (int i = parent; i >= 0 && !loop; i = c->incs[i].parent)
      loop = strcmp(c->incs[i].real, real) == 0;
    if (!loop && c->from_file) {
      char *model = canon_path(c->file);
      loop = model && strcmp(model, real) == 0;
      free(model);
    }
    if (loop) {
      free(real);
      free(buf);
      return fail(c, e, "included file \"%s\" includes itself (an include loop)", file);
    }
    mjcf_file *f = &c->incs[c->ninc];
    f->path = strdup(path);
    f->real = real;
    f->depth = depth + 1;
    f->parent = parent;
    if (!f->path) {
      free(real);
      free(buf);
      return fail_oom(c);
    }
    int fi = c->ninc++;

    /* parse it quietly, as the model */
    xmlParserCtxtPtr pc = xmlNewParserCtxt();
    if (!pc) {
      free(buf);
      return fail_oom(c);
    }
    pc->_private = c;
    pc->sax->serror = xml_error;
    pc->sax->warning = NULL;
    pc->sax->error = NULL;
    pc->sax->fatalError = NULL;
    c->xml_msg[0] = 0;
    xmlDocPtr inc = xmlCtxtReadMemory(
        pc, buf, (int)len, f->path, NULL,
        XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES);
    free(buf);
    int ok = inc && pc->wellFormed;
    xmlFreeParserCtxt(pc);
    if (!ok) {
      if (inc) xmlFreeDoc(inc);
      return khz_loadError(c->err, c->errsz, "%s:%d: malformed XML: %s (included from %s:%ld)",
                           f->path, c->xml_line, c->xml_msg[0] ? c->xml_msg : "parse error",
                           node_file(c, e), xmlGetLineNo(e));
    }
    xmlNodePtr root = xmlDocGetRootElement(inc);
    if (!is(root, "mujoco")) {
      xmlFreeDoc(inc);
      return fail(c, e, "included file \"%s\": the root element must be <mujoco>", file);
    }

    /* its elements take the place of the <include> */
    xmlNodePtr first = NULL;
    for (xmlNodePtr k = root->children; k; k = k->next) {
      if (k->type != XML_ELEMENT_NODE) continue;
      xmlNodePtr cp = xmlDocCopyNode(k, e->doc, 1);
      if (!cp) {
        xmlFreeDoc(inc);
        return fail_oom(c);
      }
      mark_file(cp, fi);
      xmlAddPrevSibling(e, cp);
      if (!first) first = cp;
    }
    xmlFreeDoc(inc);
    xmlUnlinkNode(e);
    xmlFreeNode(e);
    if (first) next = first; /* read the copies next: they may include more */
  }
  return 0;
}

/* ---------------------------------------------------------------- load -- */

/* parses the document into c->bodies, c->geoms and c->acts */
static int build(mjcf_ctx *c, xmlDocPtr doc) {
  xmlNodePtr root = xmlDocGetRootElement(doc);
  if (!root) return khz_loadError(c->err, c->errsz, "%s: missing <mujoco>", c->file);
  if (!is(root, "mujoco")) return fail(c, root, "the root element must be <mujoco>");
  if (check_attrs(c, root, "mujoco", mujoco_attrs)) return -1;
  const char *model = attr(c, root, "model");
  snprintf(c->model, sizeof c->model, "%s", model ? model : "");

  /* the included files' elements in place of their <include> */
  if (expand_includes(c, root)) return -1;

  /* settings first (MuJoCo applies them whatever their place in the file) */
  for (xmlNodePtr e = root->children; e; e = e->next) {
    if (is(e, "compiler") && read_compiler(c, e)) return -1;
    if (is(e, "option") && read_option(c, e)) return -1;
  }
  for (xmlNodePtr e = root->children; e; e = e->next)
    if (is(e, "default") && read_default(c, e, c->main_cls, 1)) return -1;
  for (xmlNodePtr e = root->children; e; e = e->next)
    if (is(e, "asset") && read_assets(c, e)) return -1;

  /* the body tree, then what refers to it */
  for (xmlNodePtr e = root->children; e; e = e->next)
    if (is(e, "worldbody") && collect_names(c, e)) return -1;
  for (xmlNodePtr e = root->children; e; e = e->next)
    if (is(e, "worldbody") && read_worldbody(c, e)) return -1;
  for (xmlNodePtr e = root->children; e; e = e->next)
    if (is(e, "actuator") && read_actuators(c, e)) return -1;
  for (int i = 0; i < c->nbody; i++)
    c->bodies[i].effort_limit = c->extra[i].unlimited ? 0 : c->extra[i].effort;
  for (xmlNodePtr e = root->children; e; e = e->next) {
    if (is(e, "contact") && read_contact(c, e)) return -1;
    if (is(e, "equality") && read_equality(c, e)) return -1;
    if (is(e, "sensor") && read_sensors(c, e)) return -1;
    if (is(e, "keyframe") && read_keyframe(c, e)) return -1;
  }

  /* everything else at the top level is ignored, with a warning saying what changes */
  for (xmlNodePtr e = root->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    static const char *const known[] = {"compiler", "option",   "default",  "worldbody",
                                        "actuator", "asset",    "contact",  "keyframe",
                                        "equality", "sensor",   NULL};
    const char *why = "element not supported by khz (ignored)";
    if (is(e, "tendon"))
      why = "tendons are not supported by khz: their forces, limits and couplings are absent";
    else if (is(e, "visual") || is(e, "statistic"))
      why = "visual settings: no effect on the simulation (ignored)";
    if (!in_list((const char *)e->name, known) && warn_element(c, e, why)) return -1;
  }

  /* <compiler settotalmass>: scale masses and inertias */
  if (c->settotalmass > 0) {
    double total = 0;
    for (int i = 0; i < c->nbody; i++) total += c->bodies[i].mass;
    if (!(total > 0)) return fail(c, root, "settotalmass on a model without mass: give the bodies an <inertial> or geoms with density, or remove settotalmass");
    double s = c->settotalmass / total;
    for (int i = 0; i < c->nbody; i++) {
      c->bodies[i].mass *= s;
      for (int k = 0; k < 6; k++) c->bodies[i].inertia[k] *= s;
    }
  }
  return 0;
}

static int load(khzSpec *spec, const char *xml, size_t len, const char *name,
                const khzMjcfOptions *opt, char *err, size_t errsz, int from_file) {
  khzMjcfOptions defaults;
  if (!opt) {
    khz_mjcf_defaultOptions(&defaults);
    opt = &defaults;
  }
  mjcf_ctx c = {.file = name ? name : "<string>",
                .opt = opt,
                .err = err,
                .errsz = errsz,
                .spec = spec,
                .degree = 1,
                .eulerseq = "xyz",
                .inertiafromgeom = 2,
                .group_lo = 0,
                .group_hi = 5,
                .settotalmass = -1,
                .timestep = 0.002,
                .gravity = {0, 0, -9.81},
                .integrator = KHZ_INT_EULER,
                .main_cls = -1,
                .ellipsoid_mesh = -1,
                .flag_gravity = 1,
                .flag_contact = 1,
                .flag_limit = 1,
                .flag_passive = 1,
                .flag_frictionloss = 1,
                .flag_equality = 1,
                .flag_actuation = 1};
  if (err && errsz) err[0] = 0;
  if (!spec) return khz_loadError(err, errsz, "%s: no spec", c.file);
  if (len > (size_t)INT_MAX) return khz_loadError(err, errsz, "%s: file too large", c.file);
  int nbody0 = khz_spec_nbody(spec), ngeom0 = khz_spec_ngeom(spec);
  c.nbody0 = nbody0;
  c.from_file = from_file;
  if (from_file && name && strchr(name, '/') && khz_path_dirname(c.dir, sizeof c.dir, name))
    return khz_loadError(err, errsz, "%s: path too long", c.file);
  int ret = -1;

  /* parse quietly: errors come back through the structured handler */
  xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
  if (!ctxt) return fail_oom(&c);
  ctxt->_private = &c;
  ctxt->sax->serror = xml_error;
  ctxt->sax->warning = NULL;
  ctxt->sax->error = NULL;
  ctxt->sax->fatalError = NULL;
  xmlDocPtr doc = xmlCtxtReadMemory(
      ctxt, xml, (int)len, c.file, NULL,
      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES);
  if (!doc || !ctxt->wellFormed) {
    if (c.xml_msg[0])
      khz_loadError(err, errsz, "%s:%d: malformed XML: %s", c.file, c.xml_line, c.xml_msg);
    else
      khz_loadError(err, errsz, "%s: malformed XML", c.file);
    goto done;
  }

  /* build privately: bodies, geoms, actuators, keys */
  if (build(&c, doc) < 0) goto done;
  if (!c.flag_gravity) c.gravity[0] = c.gravity[1] = c.gravity[2] = 0;
  khzMjcfActuator *acts = NULL;
  khzMjcfKey *keys = NULL;
  int nkeys = 0, nq, nv, chosen = -1;
  mj_sizes(&c, &nq, &nv);
  if (opt->keyframe) {
    for (int k = 0; k < c.nkey && chosen < 0; k++)
      if (c.keys[k].name && strcmp(c.keys[k].name, opt->keyframe) == 0) chosen = k;
    if (chosen < 0) {
      khz_loadError(err, errsz, "%s: no <key name=\"%s\"> in the model (%d keys)", c.file,
                    opt->keyframe, c.nkey);
      goto done;
    }
  }
  if (c.nkey > 0) { /* read (and checked) even when nobody asks for them */
    keys = calloc((size_t)c.nkey, sizeof *keys);
    if (!keys) {
      fail_oom(&c);
      goto done;
    }
    for (; nkeys < c.nkey; nkeys++)
      if (key_values(&c, nkeys, &keys[nkeys])) {
        for (int k = 0; k <= nkeys; k++) free_key(&keys[k]);
        free(keys);
        goto done;
      }
    if (chosen >= 0) apply_key(&c, &keys[chosen]);
  }
  if (warn_outside_range(&c, chosen >= 0 ? c.keys[chosen].node : NULL)) goto undo_keys;
  if (opt->info && c.nact > 0) {
    acts = malloc((size_t)c.nact * sizeof *acts);
    if (!acts) {
      fail_oom(&c);
      goto undo_keys;
    }
    memcpy(acts, c.acts, (size_t)c.nact * sizeof *acts);
    /* the controls before any command: MuJoCo's data.ctrl, zero or the chosen key's */
    for (int i = 0; chosen >= 0 && i < c.nact; i++) acts[i].ctrl0 = keys[chosen].ctrl[i];
  }

  /* append: meshes, bodies, geoms, exclusions */
  int nmesh0 = khz_spec_nmesh(spec), nexcl0 = khz_spec_nexclude(spec);
  int ok = 1;
  for (int i = 0; i < c.nmdata && ok; i++)
    ok = khz_spec_addMesh(spec, c.mname[i], c.mdata[i].vert, c.mdata[i].nvert, c.mdata[i].face,
                          c.mdata[i].nface) == nmesh0 + i;
  for (int i = 0; i < c.ngeom; i++)
    if (c.geoms[i].type == KHZ_GEOM_MESH && c.geoms[i].mesh >= 0) c.geoms[i].mesh += nmesh0;
  for (int i = 0; i < c.nbody && ok; i++) ok = khz_spec_addBody(spec, &c.bodies[i]) == nbody0 + i;
  for (int i = 0; i < c.ngeom && ok; i++) ok = khz_spec_addGeom(spec, &c.geoms[i]) >= 0;
  for (int i = 0; i < c.nexcl && ok; i++) {
    int b1 = c.excl[2 * i] ? nbody0 + c.excl[2 * i] - 1 : 0;
    int b2 = c.excl[2 * i + 1] ? nbody0 + c.excl[2 * i + 1] - 1 : 0;
    ok = khz_spec_addExclude(spec, b1, b2) >= 0;
  }
  int neq0 = khz_spec_nequality(spec);
  for (int i = 0; i < c.neq && ok && c.flag_equality; i++) {
    khzEqualitySpec q = c.eqs[i];
    q.body1 = q.body1 ? nbody0 + q.body1 - 1 : 0;
    q.body2 = q.body2 ? nbody0 + q.body2 - 1 : 0;
    if (c.opt->name_prefix && q.name[0]) {
      char full[KHZ_NAME_MAX];
      size_t lp = strlen(c.opt->name_prefix);
      if (lp < sizeof full) {
        memcpy(full, c.opt->name_prefix, lp);
        size_t ln = strnlen(q.name, sizeof full - 1 - lp);
        memcpy(full + lp, q.name, ln);
        full[lp + ln] = 0;
        memcpy(q.name, full, sizeof full);
      }
    }
    ok = khz_spec_addEquality(spec, &q) >= 0;
  }
  if (!ok) {
    khz_spec_truncate(spec, nbody0, ngeom0);
    khz_spec_truncateMeshes(spec, nmesh0);
    khz_spec_truncateExcludes(spec, nexcl0);
    khz_spec_truncateEqualities(spec, neq0);
    free(acts);
    fail_oom(&c);
    goto undo_keys;
  }
  ret = nbody0;

  /* the settings of <option>, and what the caller asked to know */
  if (opt->apply_options) {
    khz_spec_setTimestep(spec, c.timestep);
    /* a long timestep (Gymnasium's and dm_control's 10 ms) is taken in substeps
     * of MuJoCo's default 2 ms: contact then acts before a falling body is deep */
    khz_spec_setMaxSubstep(spec, KHZ_MJCF_MAX_SUBSTEP);
    khz_spec_setGravity(spec, c.gravity);
    khz_spec_setIntegrator(spec, c.integrator);
  }
  if (opt->info) {
    khzMjcfInfo *info = opt->info;
    memset(info, 0, sizeof *info);
    snprintf(info->model, sizeof info->model, "%s", c.model);
    info->timestep = c.timestep;
    memcpy(info->gravity, c.gravity, sizeof c.gravity);
    info->integrator = c.integrator;
    info->nactuator = acts ? c.nact : 0;
    info->actuator = acts;
    info->nq = nq;
    info->nv = nv;
    info->nkey = nkeys;
    info->key = keys;
    keys = NULL;
    if (c.nsens > 0) {
      info->sensor = malloc((size_t)c.nsens * sizeof *info->sensor);
      if (info->sensor) {
        memcpy(info->sensor, c.sens, (size_t)c.nsens * sizeof *info->sensor);
        info->nsensor = c.nsens;
      }
    }
    if (c.nhil > 0) {
      info->hil = malloc((size_t)c.nhil * sizeof *info->hil);
      if (info->hil) {
        memcpy(info->hil, c.hil, (size_t)c.nhil * sizeof *info->hil);
        for (int i = 0; i < c.nhil; i++) info->hil[i].object += c.nbody0 - 1; /* spec index */
        info->nhil = c.nhil;
      }
    }
  }
undo_keys:
  if (keys) {
    for (int k = 0; k < nkeys; k++) free_key(&keys[k]);
    free(keys);
  }
  if (ret < 0) goto done;

  /* deliver the warnings of a successful load in file order, with how often each occurred */
  if (c.nwarn > 1) qsort(c.warns, (size_t)c.nwarn, sizeof *c.warns, warn_cmp);
  for (int i = 0; i < c.nwarn; i++) {
    char line[1536];
    if (c.warns[i].count > 1)
      snprintf(line, sizeof line, "%s (%d occurrences)", c.warns[i].msg, c.warns[i].count);
    else
      snprintf(line, sizeof line, "%s", c.warns[i].msg);
    (opt->warn ? opt->warn : warn_stderr)(opt->warn ? opt->warn_user : NULL, line);
  }

done:
  if (doc) xmlFreeDoc(doc);
  xmlFreeParserCtxt(ctxt);
  khz_xml_strings_free(&c.strings);
  for (int i = 0; i < c.nwarn; i++) free(c.warns[i].key), free(c.warns[i].msg);
  free(c.warns);
  free(c.cls);
  free(c.bodies);
  free(c.extra);
  free(c.geoms);
  free(c.acts);
  free(c.masses);
  free(c.joints);
  free(c.given_body);
  free(c.given_joint);
  free(c.sites);
  free(c.hil);
  for (int i = 0; i < c.ninc; i++) {
    free(c.incs[i].path);
    free(c.incs[i].real);
  }
  free(c.incs);
  free(c.meshes);
  for (int i = 0; i < c.nmdata; i++) khz_mesh_free(&c.mdata[i]);
  free(c.mdata);
  free(c.mname);
  free(c.keys);
  free(c.excl);
  free(c.eqs);
  free(c.sens);
  return ret;
}

/* --------------------------------------------------------------- public -- */

void khz_mjcf_defaultOptions(khzMjcfOptions *opt) {
  memset(opt, 0, sizeof *opt);
  opt->name_prefix = "";
  opt->base_quat[0] = 1;
  opt->world_geoms = 1;
  opt->apply_options = 1;
}

double khz_mjcf_actuatorTorque(const khzMjcfActuator *a, double ctrl, double q, double qd) {
  if (!a || !isfinite(ctrl)) return 0;
  if (a->ctrllimited) ctrl = fmin(fmax(ctrl, a->ctrlrange[0]), a->ctrlrange[1]);
  double f = a->gain * ctrl + a->bias[0] + a->bias[1] * a->gear * q + a->bias[2] * a->gear * qd;
  if (a->forcelimited) f = fmin(fmax(f, a->forcerange[0]), a->forcerange[1]);
  return a->gear * f;
}

int khz_actuator_pd(const khzMjcfActuator *a, double ctrl, double *tau_ff, double *kp,
                    double *kd) {
  *tau_ff = *kp = *kd = 0;
  if (!a || !isfinite(ctrl)) return -1;
  int clamped = 0;
  if (a->ctrllimited && (ctrl < a->ctrlrange[0] || ctrl > a->ctrlrange[1])) {
    ctrl = fmin(fmax(ctrl, a->ctrlrange[0]), a->ctrlrange[1]);
    clamped = 1;
  }
  /* gear (gain ctrl + b0 + b1 gear q + b2 gear qd), MuJoCo's affine force on a joint */
  double g = a->gear;
  *tau_ff = g * (a->gain * ctrl + a->bias[0]);
  *kp = -g * g * a->bias[1];
  *kd = a->kv_implicit ? 0 : -g * g * a->bias[2];
  return clamped;
}

void khz_actuator_range(const khzMjcfActuator *a, double range[2]) {
  range[0] = -INFINITY, range[1] = INFINITY;
  if (!a || !a->forcelimited) return;
  /* gear times the force bounds, in order (a negative gear swaps them) */
  double t0 = a->gear * a->forcerange[0], t1 = a->gear * a->forcerange[1];
  range[0] = fmin(t0, t1), range[1] = fmax(t0, t1);
}

double khz_actuator_torque(const khzMjcfActuator *a, double ctrl, double q, double qd) {
  double ff, kp, kd, r[2];
  if (khz_actuator_pd(a, ctrl, &ff, &kp, &kd) < 0) return 0;
  khz_actuator_range(a, r);
  double t = ff - kp * q - kd * qd;
  return t < r[0] ? r[0] : t > r[1] ? r[1] : t;
}

void khz_mjcf_freeInfo(khzMjcfInfo *info) {
  if (!info) return;
  for (int i = 0; i < info->nkey; i++) free_key(&info->key[i]);
  free(info->key);
  free(info->actuator);
  free(info->sensor);
  free(info->hil);
  memset(info, 0, sizeof *info);
}

/* a row-major rotation matrix to a unit quaternion w x y z, w >= 0 (Shepperd's method) */
static void mat2quat(double q[4], const double R[9]) {
  double t = R[0] + R[4] + R[8];
  if (t > 0) {
    double s = 2 * sqrt(1 + t);
    q[0] = s / 4, q[1] = (R[7] - R[5]) / s, q[2] = (R[2] - R[6]) / s, q[3] = (R[3] - R[1]) / s;
  } else if (R[0] > R[4] && R[0] > R[8]) {
    double s = 2 * sqrt(1 + R[0] - R[4] - R[8]);
    q[0] = (R[7] - R[5]) / s, q[1] = s / 4, q[2] = (R[1] + R[3]) / s, q[3] = (R[2] + R[6]) / s;
  } else if (R[4] > R[8]) {
    double s = 2 * sqrt(1 + R[4] - R[0] - R[8]);
    q[0] = (R[2] - R[6]) / s, q[1] = (R[1] + R[3]) / s, q[2] = s / 4, q[3] = (R[5] + R[7]) / s;
  } else {
    double s = 2 * sqrt(1 + R[8] - R[0] - R[4]);
    q[0] = (R[3] - R[1]) / s, q[1] = (R[2] + R[6]) / s, q[2] = (R[5] + R[7]) / s, q[3] = s / 4;
  }
  if (q[0] < 0)
    for (int k = 0; k < 4; k++) q[k] = -q[k];
}

int khz_mjcf_sensorRead(const khzModel *m, const khzData *d, const khzMjcfSensor *s,
                        double out[4]) {
  if (!m || !d || !s) return -1;
  if (s->type <= KHZ_MJCF_JOINTVEL) {
    int b = khz_name2joint(m, s->object);
    if (b <= 0) return -1;
    const double *src = s->type == KHZ_MJCF_JOINTPOS ? d->q + m->jnt_qadr[b] : d->qd + m->jnt_dofadr[b];
    for (int k = 0; k < s->dim; k++) out[k] = src[k];
    return s->dim;
  }
  int b = khz_name2body(m, s->object);
  if (b < 0) return -1;
  const double *R = d->xrot + 9 * b, *x = d->xpos + 3 * b, *cv = d->cvel + 6 * b;
  double p[3]; /* the point: the MJCF frame origin or the com, in the world */
  for (int r = 0; r < 3; r++)
    p[r] = s->com ? d->xcom[3 * b + r]
                  : x[r] + R[3 * r] * s->pos[0] + R[3 * r + 1] * s->pos[1] + R[3 * r + 2] * s->pos[2];
  switch (s->type) {
    case KHZ_MJCF_FRAMEPOS:
      for (int r = 0; r < 3; r++) out[r] = p[r];
      break;
    case KHZ_MJCF_FRAMEQUAT: {
      /* the body's rotation times the frame's on it (a site's; identity for a body) */
      double Rs[9], Rw[9];
      quat2mat(Rs, s->quat[0] == 0 && s->quat[1] == 0 && s->quat[2] == 0 && s->quat[3] == 0
                       ? (const double[4]){1, 0, 0, 0}
                       : s->quat);
      for (int r = 0; r < 3; r++)
        for (int q = 0; q < 3; q++)
          Rw[3 * r + q] = R[3 * r] * Rs[q] + R[3 * r + 1] * Rs[3 + q] + R[3 * r + 2] * Rs[6 + q];
      mat2quat(out, Rw);
      break;
    }
    case KHZ_MJCF_FRAMELINVEL: {
      /* v(p) = v(origin) + w x (p - origin) */
      double r[3] = {p[0] - x[0], p[1] - x[1], p[2] - x[2]};
      out[0] = cv[3] + cv[1] * r[2] - cv[2] * r[1];
      out[1] = cv[4] + cv[2] * r[0] - cv[0] * r[2];
      out[2] = cv[5] + cv[0] * r[1] - cv[1] * r[0];
      break;
    }
    case KHZ_MJCF_VELOCIMETER: {
      /* v(p) = v(origin) + w x (p - origin), in the site's axes: (R_body R_site)^T v */
      double r[3] = {p[0] - x[0], p[1] - x[1], p[2] - x[2]}, v[3], Rs[9], vb[3];
      v[0] = cv[3] + cv[1] * r[2] - cv[2] * r[1];
      v[1] = cv[4] + cv[2] * r[0] - cv[0] * r[2];
      v[2] = cv[5] + cv[0] * r[1] - cv[1] * r[0];
      quat2mat(Rs, s->quat[0] == 0 && s->quat[1] == 0 && s->quat[2] == 0 && s->quat[3] == 0
                       ? (const double[4]){1, 0, 0, 0}
                       : s->quat);
      for (int q = 0; q < 3; q++) vb[q] = R[q] * v[0] + R[3 + q] * v[1] + R[6 + q] * v[2];
      for (int q = 0; q < 3; q++) out[q] = Rs[q] * vb[0] + Rs[3 + q] * vb[1] + Rs[6 + q] * vb[2];
      break;
    }
    default: /* FRAMEANGVEL */
      for (int r = 0; r < 3; r++) out[r] = cv[r];
      break;
  }
  return s->dim;
}

int khz_loadMJCFString(khzSpec *spec, const char *xml, const char *name,
                         const khzMjcfOptions *opt, char *err, size_t errsz) {
  if (!xml) return khz_loadError(err, errsz, "%s: no MJCF text", name ? name : "<string>");
  return load(spec, xml, strlen(xml), name, opt, err, errsz, 0);
}

int khz_loadMJCF(khzSpec *spec, const char *path, const khzMjcfOptions *opt, char *err,
                  size_t errsz) {
  /* read the whole file */
  char *buf;
  size_t len;
  if (khz_read_file(path, &buf, &len, err, errsz) < 0) return -1;
  int ret = load(spec, buf, len, path, opt, err, errsz, 1);
  free(buf);
  return ret;
}
