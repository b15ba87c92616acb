/* mjcf.c — the MJCF loader: reads a MuJoCo XML model (libxml2) and appends its
 * bodies to a khzSpec, for the subset that MuJoCo's sample humanoid needs
 * (docs/mjcf.md lists it).
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
 * would change the tree (include, composite, frame, ...) are errors. The load
 * is all-or-nothing: the file is read into private arrays and the spec is
 * touched only at the end; warnings are delivered only when it succeeds.
 */
#include "khz/load.h"
#include "load_util.h"

#include <errno.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KHZ_MJCF_PI 3.14159265358979323846
#define KHZ_MJCF_MAX_SRC 256 /* default classes nested at most this deep */
#define KHZ_MJCF_MINVAL 1e-10

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
  double pos[3];
  double quat[4];
  double inertia[3]; /* principal moments in the geom frame */
} mjcf_mass;

/* what the loader keeps per khz body besides its spec */
typedef struct mjcf_extra {
  int named_joint; /* the joint was named in the file (motors refer to it) */
  int unlimited;   /* a motor without limits drives the joint */
  double effort;   /* summed motor limits */
} mjcf_extra;

/* one joint of the body being read */
typedef struct mjcf_joint {
  xmlNodePtr node;
  const char *name; /* NULL when unnamed */
  int type;         /* khzJointType: REVOLUTE (hinge), PRISMATIC, SPHERICAL, FLOATING */
  double pos[3], axis[3];
  int limited;
  double range[2];
  double damping, armature, frictionloss, ref;
} mjcf_joint;

typedef struct mjcf_ctx {
  /* inputs */
  const char *file;
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

  /* <option> and <mujoco model> */
  double timestep, gravity[3];
  khzIntegrator integrator;
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
                                         "contype", "conaffinity", "group",  NULL};
static const char *const joint_attrs[] = {"name",     "class",        "type",    "pos",
                                          "axis",     "range",        "limited", "damping",
                                          "armature", "frictionloss", "ref",     NULL};
static const char *const freejoint_attrs[] = {"name", NULL};
static const char *const body_attrs[] = {"name",   "childclass", "pos",   "quat", "axisangle",
                                         "xyaxes", "zaxis",      "euler", NULL};
static const char *const inertial_attrs[] = {"pos",   "quat", "axisangle",   "xyaxes",      "zaxis",
                                             "euler", "mass", "diaginertia", "fullinertia", NULL};
static const char *const motor_attrs[] = {"name",       "class",        "joint",
                                          "gear",       "ctrlrange",    "ctrllimited",
                                          "forcerange", "forcelimited", NULL};
static const char *const option_attrs[] = {"timestep", "gravity", "integrator", NULL};
static const char *const compiler_attrs[] = {
    "angle",      "eulerseq",     "autolimits", "inertiafromgeom", "inertiagrouprange",
    "coordinate", "settotalmass", NULL};
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

/* reports an error "FILE:LINE: <element>: problem"; always returns -1 */
static int fail(mjcf_ctx *c, xmlNodePtr at, const char *fmt, ...) KHZ_PRINTF(3, 4);
static int fail(mjcf_ctx *c, xmlNodePtr at, const char *fmt, ...) {
  char what[256], msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  describe(what, sizeof what, at);
  return khz_loadError(c->err, c->errsz, "%s:%ld: %s: %s", c->file, xmlGetLineNo(at), what, msg);
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
  snprintf(line, sizeof line, "%s:%ld: %s: %s", c->file, xmlGetLineNo(at), what, msg);
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
  static const char *const containers[] = {"default", "body",   "worldbody",
                                           "option",  "mujoco", "actuator", NULL};
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
    double tmp[8];
    int k = parse_nums(v, tmp, min, max);
    if (k < 0) {
      if (min == max)
        return fail(c, src[i], "attribute %s=\"%s\" is not %d finite number%s", name, v, min,
                    min > 1 ? "s" : "");
      return fail(c, src[i], "attribute %s=\"%s\" is not %d to %d finite numbers", name, v, min,
                  max);
    }
    memcpy(out, tmp, (size_t)k * sizeof(double));
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
  return fail(c, at, "attribute %s=\"%s\" is not one of %s", name, v, list);
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
    return fail(c, at, "attribute %s=\"%s\" is not a non-negative integer", name, v);
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
  return fail(c, el, "unknown default class \"%s\"", name);
}

/* reads one <default> element (class k) and, recursively, those inside it */
static int read_default(mjcf_ctx *c, xmlNodePtr d, int parent, int top) {
  const char *name = attr(c, d, "class");
  if (top) {
    name = "main";
  } else {
    if (!name || !name[0]) return fail(c, d, "a nested <default> needs a class");
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

  /* what the class sets: joints, geoms and actuators are read, the rest warned about */
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
      return fail(c, src[i], "more than one orientation (quat, axisangle, xyaxes, zaxis, euler)");
    if (found) *found = 1;
    const char *v = attr(c, src[i], names[which]);
    double a[6];
    static const int len[] = {4, 4, 6, 3, 3};
    if (!v || parse_nums(v, a, len[which], len[which]) < 0)
      return fail(c, src[i], "attribute %s=\"%s\" is not %d finite numbers", names[which],
                  v ? v : "", len[which]);
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

  /* global coordinates would change the meaning of every pose */
  const char *coord = attr(c, el, "coordinate");
  if (coord && strcmp(coord, "local") != 0)
    return fail(c, el, "coordinate=\"%s\" is not supported (only local)", coord);
  return 0;
}

static int read_option(mjcf_ctx *c, xmlNodePtr el) {
  xmlNodePtr src[1] = {el};
  if (check_attrs(c, el, "option", option_attrs)) return -1;
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
      warn(c, el, "integrator", "integrator=\"%s\" is not supported by khz: Euler is used",
           int_words[integ]))
    return -1;
  c->integrator = integ == 1 ? KHZ_INT_RK4 : KHZ_INT_EULER;

  /* <flag> and the like */
  for (xmlNodePtr e = el->children; e; e = e->next)
    if (e->type == XML_ELEMENT_NODE && warn_element(c, e, "element not supported by khz (ignored)"))
      return -1;
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

/* one <geom> of body `body` (spec index; 0 = world) in class cls; off is the
 * khz body frame's offset in the MJCF body frame; static_ = the body does not
 * move. Records the mass contribution in c->masses. */
static int read_geom(mjcf_ctx *c, xmlNodePtr el, int inherited, int body, const double off[3],
                     int static_) {
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
  if (type == G_MESH || type == G_HFIELD || type == G_SDF) {
    char key[64];
    snprintf(key, sizeof key, "geom type %s", geom_words[type]);
    return warn(c, el, key,
                "%s geoms are not supported by khz: left out, with their mass and inertia",
                geom_words[type]);
  }

  /* fromto: centre, z axis from `to` towards `from`, half-length */
  if (has_fromto) {
    if (type != G_CAPSULE && type != G_CYLINDER && type != G_BOX && type != G_ELLIPSOID)
      return fail(c, el, "fromto requires a capsule, cylinder, box or ellipsoid");
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
  int need = type == G_PLANE                           ? 0
             : type == G_SPHERE                        ? 1
             : type == G_CAPSULE || type == G_CYLINDER ? 2
                                                       : 3;
  for (int k = 0; k < need; k++)
    if (!(size[k] > 0)) return fail(c, el, "size[%d] = %g must be positive", k, size[k]);
  if (type == G_PLANE && !static_)
    return fail(c, el, "a plane is only allowed in a body that does not move");
  if (type == G_PLANE && !(size[2] > 0))
    return fail(c, el, "size[2] = %g of a plane (its grid spacing) must be positive", size[2]);

  /* mass: the geom's own, else density times volume */
  double density = 1000, mass = 0;
  if (read_vec(c, src, n, "density", &density, 1, 1, NULL) ||
      read_vec(c, src, n, "mass", &mass, 1, 1, &has_mass))
    return -1;
  if (density < 0 || mass < 0) return fail(c, el, "negative density or mass");
  if (!has_mass) mass = density * geom_volume(type, size);
  long group = 0;
  if (read_int(c, src, n, "group", &group)) return -1;
  if (body != 0 && type != G_PLANE && group >= c->group_lo && group <= c->group_hi) {
    if (grow(c, (void **)&c->masses, c->nmass, &c->capmass, sizeof *c->masses)) return -1;
    mjcf_mass *mm = &c->masses[c->nmass++];
    mm->mass = mass;
    memcpy(mm->pos, pos, sizeof pos);
    memcpy(mm->quat, quat, sizeof quat);
    geom_inertia(type, size, mass, mm->inertia);
  }

  /* the khz geom: contact filter, friction (sliding only), colour */
  if (type == G_ELLIPSOID)
    return warn(c, el, "geom type ellipsoid",
                "ellipsoid geoms have no khz shape: the collision shape is left out (its mass "
                "is counted)");
  khzGeomSpec g;
  khz_spec_defaultGeom(&g);
  g.body = body;
  g.type = type == G_PLANE      ? KHZ_GEOM_PLANE
           : type == G_SPHERE   ? KHZ_GEOM_SPHERE
           : type == G_CAPSULE  ? KHZ_GEOM_CAPSULE
           : type == G_CYLINDER ? KHZ_GEOM_CYLINDER
                                : KHZ_GEOM_BOX;
  memcpy(g.size, size, sizeof size);
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
  if (friction[0] < 0) return fail(c, el, "negative friction");
  memcpy(g.rgba, rgba, sizeof rgba);
  g.friction = friction[0];
  long contype = 1, conaffinity = 1;
  if (read_int(c, src, n, "contype", &contype) || read_int(c, src, n, "conaffinity", &conaffinity))
    return -1;
  g.contype = (unsigned)contype;
  g.conaffinity = (unsigned)conaffinity;

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
        for (int k = 0; k < 3; k++) v += R[3 * a + k] * g->inertia[k] * R[3 * b + k];
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
  if (*mass < 0) return fail(c, el, "negative mass");
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
      read_vec(c, src, n, "ref", &j->ref, 1, 1, NULL))
    return -1;
  j->type = types[t];
  double na = norm3(j->axis);
  if (j->type != KHZ_JOINT_FLOATING && j->type != KHZ_JOINT_SPHERICAL && na < KHZ_MJCF_MINVAL)
    return fail(c, el, "axis is zero");
  if (na >= KHZ_MJCF_MINVAL)
    for (int k = 0; k < 3; k++) j->axis[k] /= na;
  if (j->damping < 0 || j->armature < 0 || j->frictionloss < 0)
    return fail(c, el, "negative damping, armature or frictionloss");

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
    return fail(c, el, "range[0] = %g must be below range[1] = %g", j->range[0], j->range[1]);
  j->limited = lim;

  /* angles in the compiler's unit */
  if (c->degree && (j->type == KHZ_JOINT_REVOLUTE || j->type == KHZ_JOINT_SPHERICAL)) {
    j->range[0] *= KHZ_MJCF_PI / 180, j->range[1] *= KHZ_MJCF_PI / 180;
    if (j->type == KHZ_JOINT_REVOLUTE) j->ref *= KHZ_MJCF_PI / 180;
  }
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
    if (k < 0) return fail(c, el, "unknown childclass \"%s\"", cc);
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
  if (ndof > 6) return fail(c, el, "more than 6 degrees of freedom in one body");

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
    }

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

  /* geoms, then the body's mass: <inertial> or the geoms' */
  c->nmass = 0;
  static_ = static_ && c->njoint == 0;
  xmlNodePtr inertial = NULL;
  for (xmlNodePtr e = el->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    if (is(e, "geom")) {
      if (read_geom(c, e, cls, self, off, static_)) return -1;
    } else if (is(e, "inertial")) {
      if (inertial) return fail(c, e, "a body has at most one <inertial>");
      if (check_attrs(c, e, "inertial", inertial_attrs)) return -1;
      inertial = e;
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
      if (read_geom(c, e, c->main_cls, 0, zero, 1)) return -1;
    } else if (is(e, "joint") || is(e, "freejoint")) {
      return fail(c, e, "the world body cannot have joints");
    } else if (is(e, "inertial")) {
      return fail(c, e, "the world body cannot have an <inertial>");
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
    return fail(c, el, "%srange[0] = %g must be below %srange[1] = %g", what, range[0], what,
                range[1]);
  return lim;
}

static int read_motor(mjcf_ctx *c, xmlNodePtr el) {
  int cls = -1;
  xmlNodePtr src[KHZ_MJCF_MAX_SRC];
  if (check_attrs(c, el, "motor", motor_attrs) || element_class(c, el, c->main_cls, &cls))
    return -1;
  int n = sources(c, el, "actuator", cls, src);
  if (n < 0) return -1;

  /* the transmission must be a joint */
  const char *joint = attr(c, el, "joint");
  if (!joint)
    return warn(c, el, "motor transmission",
                "a motor that does not drive a joint (tendon, site, body) is not supported by "
                "khz (ignored)");
  char full[KHZ_NAME_MAX];
  const char *prefix = c->opt->name_prefix ? c->opt->name_prefix : "";
  snprintf(full, sizeof full, "%s%s", prefix, joint);
  int b = -1;
  for (int i = 0; i < c->nbody; i++)
    if (c->extra[i].named_joint && strcmp(c->bodies[i].joint_name, full) == 0) b = i;
  if (b < 0) return fail(c, el, "unknown joint \"%s\"", joint);
  khzJointType t = c->bodies[b].joint_type;
  if (t == KHZ_JOINT_SPHERICAL || t == KHZ_JOINT_FLOATING)
    return warn(c, el, "motor multidof",
                "a motor on a ball or free joint is not supported by khz (ignored)");

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

  /* the joint's effort limit: |gear| times the largest control (or force) */
  double g = fabs(gear[0]);
  double lim = INFINITY;
  if (cl) lim = g * fmax(fabs(ctrl[0]), fabs(ctrl[1]));
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
  return 0;
}

static int read_actuators(mjcf_ctx *c, xmlNodePtr sec) {
  if (check_attrs(c, sec, "actuator", no_attrs)) return -1;
  for (xmlNodePtr e = sec->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    if (is(e, "motor")) {
      if (read_motor(c, e)) return -1;
    } else if (warn_element(c, e,
                            "actuator not supported by khz (ignored; khz takes joint torques)")) {
      return -1;
    }
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

  /* settings first (MuJoCo applies them whatever their place in the file) */
  for (xmlNodePtr e = root->children; e; e = e->next) {
    if (is(e, "compiler") && read_compiler(c, e)) return -1;
    if (is(e, "option") && read_option(c, e)) return -1;
    if (is(e, "include"))
      return fail(c, e, "<include> is not supported by khz (merge the files first)");
  }
  for (xmlNodePtr e = root->children; e; e = e->next)
    if (is(e, "default") && read_default(c, e, c->main_cls, 1)) return -1;

  /* the body tree, then the motors */
  for (xmlNodePtr e = root->children; e; e = e->next)
    if (is(e, "worldbody") && collect_names(c, e)) return -1;
  for (xmlNodePtr e = root->children; e; e = e->next)
    if (is(e, "worldbody") && read_worldbody(c, e)) return -1;
  for (xmlNodePtr e = root->children; e; e = e->next)
    if (is(e, "actuator") && read_actuators(c, e)) return -1;
  for (int i = 0; i < c->nbody; i++)
    c->bodies[i].effort_limit = c->extra[i].unlimited ? 0 : c->extra[i].effort;

  /* everything else at the top level is ignored, with a warning */
  for (xmlNodePtr e = root->children; e; e = e->next) {
    if (e->type != XML_ELEMENT_NODE) continue;
    static const char *const known[] = {"compiler",  "option",   "default",
                                        "worldbody", "actuator", NULL};
    if (!in_list((const char *)e->name, known) &&
        warn_element(c, e, "element not supported by khz (ignored)"))
      return -1;
  }

  /* <compiler settotalmass>: scale masses and inertias */
  if (c->settotalmass > 0) {
    double total = 0;
    for (int i = 0; i < c->nbody; i++) total += c->bodies[i].mass;
    if (!(total > 0)) return fail(c, root, "settotalmass on a model without mass");
    double s = c->settotalmass / total;
    for (int i = 0; i < c->nbody; i++) {
      c->bodies[i].mass *= s;
      for (int k = 0; k < 6; k++) c->bodies[i].inertia[k] *= s;
    }
  }
  return 0;
}

static int load(khzSpec *spec, const char *xml, size_t len, const char *name,
                const khzMjcfOptions *opt, char *err, size_t errsz) {
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
                .main_cls = -1};
  if (err && errsz) err[0] = 0;
  if (!spec) return khz_loadError(err, errsz, "%s: no spec", c.file);
  if (len > (size_t)INT_MAX) return khz_loadError(err, errsz, "%s: file too large", c.file);
  int nbody0 = khz_spec_nbody(spec), ngeom0 = khz_spec_ngeom(spec);
  c.nbody0 = nbody0;
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

  /* build privately, then append to the spec */
  if (build(&c, doc) < 0) goto done;
  khzMjcfActuator *acts = NULL;
  if (opt->info && c.nact > 0) {
    acts = malloc((size_t)c.nact * sizeof *acts);
    if (!acts) {
      fail_oom(&c);
      goto done;
    }
    memcpy(acts, c.acts, (size_t)c.nact * sizeof *acts);
  }
  for (int i = 0; i < c.nbody; i++)
    if (khz_spec_addBody(spec, &c.bodies[i]) != nbody0 + i) {
      khz_spec_truncate(spec, nbody0, ngeom0);
      free(acts);
      fail_oom(&c);
      goto done;
    }
  for (int i = 0; i < c.ngeom; i++)
    if (khz_spec_addGeom(spec, &c.geoms[i]) < 0) {
      khz_spec_truncate(spec, nbody0, ngeom0);
      free(acts);
      fail_oom(&c);
      goto done;
    }
  ret = nbody0;

  /* the settings of <option>, and what the caller asked to know */
  if (opt->apply_options) {
    khz_spec_setTimestep(spec, c.timestep);
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
  }

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

void khz_mjcf_freeInfo(khzMjcfInfo *info) {
  if (!info) return;
  free(info->actuator);
  memset(info, 0, sizeof *info);
}

int khz_loadMJCFString(khzSpec *spec, const char *xml, const char *name,
                         const khzMjcfOptions *opt, char *err, size_t errsz) {
  if (!xml) return khz_loadError(err, errsz, "%s: no MJCF text", name ? name : "<string>");
  return load(spec, xml, strlen(xml), name, opt, err, errsz);
}

int khz_loadMJCF(khzSpec *spec, const char *path, const khzMjcfOptions *opt, char *err,
                  size_t errsz) {
  /* read the whole file */
  char *buf;
  size_t len;
  if (khz_read_file(path, &buf, &len, err, errsz) < 0) return -1;
  int ret = load(spec, buf, len, path, opt, err, errsz);
  free(buf);
  return ret;
}
