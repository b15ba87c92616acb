/* scene.c — the khz scene file loader (YAML, read with libyaml's document API).
 *
 * A scene is one YAML mapping that sets the loop rate, the integrator, gravity,
 * an optional ground plane and the contact settings, places robots (URDF files,
 * see urdf.c) and adds loose or welded primitive objects. The format is
 * documented in docs/scene-format.md.
 *
 * The reader is strict: an unknown key at any level, a value of the wrong type,
 * a missing required key or a value out of range stops the load with one message
 * "FILE:LINE:COL: key 'PATH': PROBLEM". Everything is built into a temporary
 * spec and only handed to the caller when the whole file was read.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "khz/load.h"
#include "load_util.h"
#include "mesh.h"

/* the files compiled into the library by tools/embed.c */
extern const struct {
  const char *name;
  const char *text;
} khz_embedded_files[];

#define KHZ_SCENE_VERSION 1
#define KHZ_EMBEDDED_PREFIX "embedded:"
#define KHZ_KEY_MAX 256

/* one parse: the document, the name used in messages, where relative paths start */
typedef struct khzSceneReader {
  yaml_document_t doc;
  const char *file;
  const char *basedir;
  char *err;
  size_t errsz;
} khzSceneReader;

/* names already used by robots and objects, for the uniqueness check */
typedef struct khzSceneNames {
  char (*name)[KHZ_NAME_MAX];
  int n, cap;
} khzSceneNames;

/* --------------------------------------------------------------- helpers -- */

/* looks up an embedded file by base name; NULL when absent */
static const char *khz_embedded_text(const char *name) {
  for (int i = 0; khz_embedded_files[i].name; i++) {
    if (strcmp(khz_embedded_files[i].name, name) == 0) return khz_embedded_files[i].text;
  }
  return NULL;
}

/* writes "FILE:LINE:COL: key 'KEY': PROBLEM" for node n and returns -1 */
static int khz_scene_fail(khzSceneReader *r, const yaml_node_t *n, const char *key, const char *fmt,
                          ...) KHZ_PRINTF(4, 5);
static int khz_scene_fail(khzSceneReader *r, const yaml_node_t *n, const char *key, const char *fmt,
                          ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t line = n ? n->start_mark.line + 1 : 1;
  size_t col = n ? n->start_mark.column + 1 : 1;
  if (key && key[0]) {
    return khz_loadError(r->err, r->errsz, "%s:%zu:%zu: key '%s': %s", r->file, line, col, key,
                          msg);
  }
  return khz_loadError(r->err, r->errsz, "%s:%zu:%zu: %s", r->file, line, col, msg);
}

static yaml_node_t *khz_node(khzSceneReader *r, int id) {
  return yaml_document_get_node(&r->doc, id);
}

static const char *khz_scalar(const yaml_node_t *n) {
  return (const char *)n->data.scalar.value;
}

/* a short description of a node for "expected X, got Y" messages */
static void khz_describe(const yaml_node_t *n, char *out, size_t outsz) {
  if (n->type == YAML_MAPPING_NODE) {
    snprintf(out, outsz, "a mapping");
  } else if (n->type == YAML_SEQUENCE_NODE) {
    snprintf(out, outsz, "a list");
  } else if (n->data.scalar.length == 0 && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
    snprintf(out, outsz, "an empty value");
  } else {
    snprintf(out, outsz, "'%.40s%s'", khz_scalar(n), n->data.scalar.length > 40 ? "..." : "");
  }
}

static int khz_expected(khzSceneReader *r, const yaml_node_t *n, const char *key,
                        const char *what) {
  char got[64];
  khz_describe(n, got, sizeof got);
  return khz_scene_fail(r, n, key, "expected %s, got %s: write %s", what, got, what);
}

/* child key path: "parent.key" or "key" */
static void khz_keypath(char *out, const char *parent, const char *key) {
  size_t n = 0;
  for (; parent && parent[n] && n < KHZ_KEY_MAX - 1; n++) out[n] = parent[n];
  if (n > 0 && n < KHZ_KEY_MAX - 1) out[n++] = '.';
  for (; *key && n < KHZ_KEY_MAX - 1; key++) out[n++] = *key;
  out[n] = 0;
}

/* checks that n is a mapping whose keys are plain strings from allowed (NULL-ended),
 * each given once */
static int khz_check_keys(khzSceneReader *r, const yaml_node_t *n, const char *path,
                          const char *const *allowed) {
  if (n->type != YAML_MAPPING_NODE) return khz_expected(r, n, path, "a mapping");
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = khz_node(r, p->key);
    char kp[KHZ_KEY_MAX];
    if (k->type != YAML_SCALAR_NODE) {
      return khz_scene_fail(r, k, path, "a key must be a plain name, got %s: write 'name: value'",
                            k->type == YAML_MAPPING_NODE ? "a mapping" : "a list");
    }
    khz_keypath(kp, path, khz_scalar(k));

    /* known? */
    int known = 0;
    for (int i = 0; allowed[i]; i++) known |= strcmp(allowed[i], khz_scalar(k)) == 0;
    if (!known) {
      char list[512] = "";
      size_t len = 0;
      for (int i = 0; allowed[i] && len < sizeof list; i++) {
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", allowed[i]);
      }
      return khz_scene_fail(r, k, kp, "unknown key: use one of %s, or remove it", list);
    }

    /* given once? */
    for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p; q++) {
      yaml_node_t *k2 = khz_node(r, q->key);
      if (k2->type == YAML_SCALAR_NODE && strcmp(khz_scalar(k2), khz_scalar(k)) == 0) {
        return khz_scene_fail(r, k, kp, "given twice (first at line %zu): keep one",
                              k2->start_mark.line + 1);
      }
    }
  }
  return 0;
}

/* the value of key in mapping n, or NULL */
static yaml_node_t *khz_find(khzSceneReader *r, const yaml_node_t *n, const char *key) {
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = khz_node(r, p->key);
    if (k->type == YAML_SCALAR_NODE && strcmp(khz_scalar(k), key) == 0) {
      return khz_node(r, p->value);
    }
  }
  return NULL;
}

/* a finite number written as a plain (unquoted) scalar */
static int khz_get_number(khzSceneReader *r, const yaml_node_t *n, const char *key, double *out) {
  if (n->type == YAML_SCALAR_NODE && n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
    char got[64];
    khz_describe(n, got, sizeof got);
    return khz_scene_fail(r, n, key, "expected a number, got the quoted string %s: write the "
                          "number without quotes", got);
  }
  if (n->type != YAML_SCALAR_NODE || n->data.scalar.length == 0) {
    return khz_expected(r, n, key, "a number");
  }
  const char *s = khz_scalar(n);
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end != 0) return khz_expected(r, n, key, "a number");
  if (!isfinite(v) || errno == ERANGE) {
    return khz_scene_fail(r, n, key, "number '%s' is out of range: write a finite number", s);
  }
  *out = v;
  return 0;
}

/* a number with lower / upper bounds (inclusive unless open_lo / open_hi) */
static int khz_get_range(khzSceneReader *r, const yaml_node_t *n, const char *key, double *out,
                         double lo, int open_lo, double hi, int open_hi, const char *what) {
  double v = 0;
  if (khz_get_number(r, n, key, &v)) return -1;
  if (v < lo || v > hi || (open_lo && v == lo) || (open_hi && v == hi)) {
    return khz_scene_fail(r, n, key, "%.17g is out of range (%s): give a value in that range", v,
                          what);
  }
  *out = v;
  return 0;
}

static int khz_get_bool(khzSceneReader *r, const yaml_node_t *n, const char *key, int *out) {
  if (n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
    if (strcmp(khz_scalar(n), "true") == 0) {
      *out = 1;
      return 0;
    }
    if (strcmp(khz_scalar(n), "false") == 0) {
      *out = 0;
      return 0;
    }
  }
  return khz_expected(r, n, key, "true or false");
}

/* a non-empty string that fits into outsz */
static int khz_get_string(khzSceneReader *r, const yaml_node_t *n, const char *key, char *out,
                          size_t outsz) {
  if (n->type != YAML_SCALAR_NODE || n->data.scalar.length == 0) {
    return khz_expected(r, n, key, "a non-empty string");
  }
  if (n->data.scalar.length >= outsz || strlen(khz_scalar(n)) != n->data.scalar.length) {
    return khz_scene_fail(r, n, key, "string too long: shorten it to at most %zu characters",
                          outsz - 1);
  }
  memcpy(out, khz_scalar(n), n->data.scalar.length + 1);
  return 0;
}

/* a list of exactly len numbers */
static int khz_get_vec(khzSceneReader *r, const yaml_node_t *n, const char *key, double *out,
                       int len) {
  char what[64];
  snprintf(what, sizeof what, "a list of %d number%s", len, len == 1 ? "" : "s");
  if (n->type != YAML_SEQUENCE_NODE) return khz_expected(r, n, key, what);
  long count = n->data.sequence.items.top - n->data.sequence.items.start;
  if (count != len) {
    char form[64] = "[";
    for (int i = 0; i < len && i < 8; i++) {
      snprintf(form + strlen(form), sizeof form - strlen(form), "%sx%d", i ? ", " : "", i + 1);
    }
    strcat(form, "]");
    return khz_scene_fail(r, n, key, "expected %s, got %ld: write it as %s", what, count, form);
  }
  for (int i = 0; i < len; i++) {
    yaml_node_t *e = khz_node(r, n->data.sequence.items.start[i]);
    char kp[KHZ_KEY_MAX];
    if (snprintf(kp, sizeof kp, "%s[%d]", key, i) >= (int)sizeof kp) kp[sizeof kp - 1] = 0;
    if (khz_get_number(r, e, kp, &out[i])) return -1;
  }
  return 0;
}

/* a name usable as a body / joint name and as a robot prefix */
static int khz_get_name(khzSceneReader *r, const yaml_node_t *n, const char *key, char *out,
                        size_t outsz, khzSceneNames *names) {
  if (khz_get_string(r, n, key, out, outsz)) return -1;
  for (const char *c = out; *c; c++) {
    if (*c == '/' || *c == ' ' || *c == '\t' || *c == ',' || *c == '"') {
      return khz_scene_fail(r, n, key,
                            "name '%s' may not contain '/', ',', '\"' or spaces: use letters, "
                            "digits, '_', '-' or '.'", out);
    }
  }
  if (names) {
    for (int i = 0; i < names->n; i++) {
      if (strcmp(names->name[i], out) == 0) {
        return khz_scene_fail(r, n, key,
                              "name '%s' is already used by another robot or object: give each "
                              "a name of its own", out);
      }
    }
    if (names->n == names->cap) {
      int cap = names->cap ? 2 * names->cap : 16;
      void *grown = realloc(names->name, (size_t)cap * sizeof *names->name);
      if (!grown) return khz_scene_fail(r, n, key, "out of memory");
      names->name = grown;
      names->cap = cap;
    }
    snprintf(names->name[names->n++], KHZ_NAME_MAX, "%s", out);
  }
  return 0;
}

/* an orientation from the optional rpy / quat keys of n (identity when neither) */
static int khz_get_orientation(khzSceneReader *r, const yaml_node_t *n, const char *path,
                               double quat[4]) {
  yaml_node_t *rpy = khz_find(r, n, "rpy"), *q = khz_find(r, n, "quat");
  char kp[KHZ_KEY_MAX];
  quat[0] = 1;
  quat[1] = quat[2] = quat[3] = 0;
  if (rpy && q) {
    khz_keypath(kp, path, "quat");
    return khz_scene_fail(r, q, kp, "give either rpy or quat, not both: remove one");
  }
  if (rpy) {
    double v[3];
    khz_keypath(kp, path, "rpy");
    if (khz_get_vec(r, rpy, kp, v, 3)) return -1;
    khz_rpy2quat(v, quat);
  }
  if (q) {
    khz_keypath(kp, path, "quat");
    if (khz_get_vec(r, q, kp, quat, 4)) return -1;
    double norm =
        sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3]);
    if (!(norm > 1e-9))
      return khz_scene_fail(r, q, kp, "quaternion [w, x, y, z] of zero length: give a rotation, "
                            "e.g. [1, 0, 0, 0] for none");
    for (int i = 0; i < 4; i++) quat[i] /= norm;
  }
  return 0;
}

/* a robot's base: its keys checked against keys, then pos and orientation
 * (path names the robot; bp receives "path.base" for the caller's own keys) */
static int khz_get_base(khzSceneReader *r, const yaml_node_t *base, const char *path,
                        const char *const *keys, char *bp, double pos[3], double quat[4]) {
  char kp[KHZ_KEY_MAX];
  khz_keypath(bp, path, "base");
  if (khz_check_keys(r, base, bp, keys)) return -1;
  yaml_node_t *p = khz_find(r, base, "pos");
  khz_keypath(kp, bp, "pos");
  if (p && khz_get_vec(r, p, kp, pos, 3)) return -1;
  return khz_get_orientation(r, base, bp, quat);
}

/* rgba with every component in [0, 1] */
static int khz_get_rgba(khzSceneReader *r, const yaml_node_t *n, const char *key, double rgba[4]) {
  if (khz_get_vec(r, n, key, rgba, 4)) return -1;
  for (int i = 0; i < 4; i++) {
    if (rgba[i] < 0 || rgba[i] > 1) {
      return khz_scene_fail(r, n, key, "component %d = %g is outside [0, 1]: give red, green, blue, "
                            "alpha each from 0 to 1", i, rgba[i]);
    }
  }
  return 0;
}

/* v rotated by the unit quaternion q (w, x, y, z), or by its inverse when inverse */
static void khz_quat_rotate(const double q[4], const double v[3], int inverse, double out[3]) {
  double w = q[0], x = inverse ? -q[1] : q[1], y = inverse ? -q[2] : q[2],
         z = inverse ? -q[3] : q[3];
  /* out = v + 2 w (u x v) + 2 u x (u x v), u = (x, y, z) */
  double t[3] = {2 * (y * v[2] - z * v[1]), 2 * (z * v[0] - x * v[2]), 2 * (x * v[1] - y * v[0])};
  out[0] = v[0] + w * t[0] + (y * t[2] - z * t[1]);
  out[1] = v[1] + w * t[1] + (z * t[0] - x * t[2]);
  out[2] = v[2] + w * t[2] + (x * t[1] - y * t[0]);
}

/* the optional initial velocity keys `vel` (linear, world frame) and `angvel`
 * (angular, world frame) of a free body whose initial orientation is quat, into
 * the floating joint's qd layout: linear in the world, angular in the body frame
 * (MuJoCo's free joint). `movable` = 0 rejects both keys with `why`. */
static int khz_get_velocity(khzSceneReader *r, const yaml_node_t *n, const char *path,
                            int movable, const char *why, const double quat[4], double qd[6]) {
  const char *keys[2] = {"vel", "angvel"};
  double v[2][3] = {{0, 0, 0}, {0, 0, 0}};
  for (int i = 0; i < 2; i++) {
    yaml_node_t *e = khz_find(r, n, keys[i]);
    char kp[KHZ_KEY_MAX];
    if (!e) continue;
    khz_keypath(kp, path, keys[i]);
    if (!movable) return khz_scene_fail(r, e, kp, "%s", why);
    if (khz_get_vec(r, e, kp, v[i], 3)) return -1;
  }
  memcpy(qd, v[0], sizeof v[0]);
  khz_quat_rotate(quat, v[1], 1, qd + 3);
  return 0;
}

/* the orientation of a plane whose local z is the unit normal n: the shortest
 * rotation taking z to n (half a turn about x when n = -z) */
static void khz_normal2quat(const double n[3], double quat[4]) {
  double c = n[2];
  if (c < -1 + 1e-12) {
    quat[0] = 0, quat[1] = 1, quat[2] = quat[3] = 0;
    return;
  }
  /* q = [1 + z.n, z x n] normalised, z x n = (-n_y, n_x, 0) */
  double q[4] = {1 + c, -n[1], n[0], 0};
  double norm = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
  for (int k = 0; k < 4; k++) quat[k] = q[k] / norm;
}

/* the orientation of a plane (ground, shape: plane): `normal` (3 numbers, not
 * zero, normalised) or rpy / quat (the normal is the frame's z); not both */
static int khz_get_plane_orientation(khzSceneReader *r, const yaml_node_t *n, const char *path,
                                     double quat[4], double normal[3]) {
  yaml_node_t *v = khz_find(r, n, "normal");
  char kp[KHZ_KEY_MAX];
  khz_keypath(kp, path, "normal");
  if (v) {
    yaml_node_t *other = khz_find(r, n, "rpy") ? khz_find(r, n, "rpy") : khz_find(r, n, "quat");
    if (other) {
      return khz_scene_fail(r, v, kp, "give either normal or rpy / quat, not both: remove one");
    }
    if (khz_get_vec(r, v, kp, normal, 3)) return -1;
    double len = sqrt(normal[0] * normal[0] + normal[1] * normal[1] + normal[2] * normal[2]);
    if (!(len > 1e-9)) {
      return khz_scene_fail(r, v, kp,
                            "normal of zero length: give the plane's up direction, e.g. [0, 0, 1]");
    }
    for (int k = 0; k < 3; k++) normal[k] /= len;
    khz_normal2quat(normal, quat);
    return 0;
  }
  if (khz_get_orientation(r, n, path, quat)) return -1;
  const double z[3] = {0, 0, 1};
  khz_quat_rotate(quat, z, 0, normal);
  return 0;
}

/* ------------------------------------------------------------- sections -- */

static int khz_scene_ground(khzSceneReader *r, const yaml_node_t *n, khzScene *s) {
  static const char *const keys[] = {"height", "pos",  "normal", "rpy",
                                     "quat",   "friction", "rgba", NULL};
  yaml_node_t *v;
  khzGeomSpec g;
  if (khz_check_keys(r, n, "ground", keys)) return -1;
  khz_spec_defaultGeom(&g);
  g.body = 0;
  g.type = KHZ_GEOM_PLANE;
  g.visual = 0;
  g.friction = 0;
  g.rgba[0] = g.rgba[1] = g.rgba[2] = 0.8;
  g.rgba[3] = 1;
  /* the pose: a point (height or pos) and the normal (normal, or rpy / quat) */
  double pos[3] = {0, 0, 0}, quat[4], normal[3];
  if ((v = khz_find(r, n, "height")) && khz_get_number(r, v, "ground.height", &pos[2])) {
    return -1;
  }
  if ((v = khz_find(r, n, "pos"))) {
    if (khz_find(r, n, "height")) {
      return khz_scene_fail(r, v, "ground.pos", "give either height or pos, not both: remove one");
    }
    if (khz_get_vec(r, v, "ground.pos", pos, 3)) return -1;
  }
  if (khz_get_plane_orientation(r, n, "ground", quat, normal)) return -1;
  if ((v = khz_find(r, n, "friction")) &&
      khz_get_range(r, v, "ground.friction", &g.friction, 0, 0, 1e6, 0, ">= 0")) {
    return -1;
  }
  if ((v = khz_find(r, n, "rgba")) && khz_get_rgba(r, v, "ground.rgba", g.rgba)) return -1;
  memcpy(g.pos, pos, sizeof pos);
  memcpy(g.quat, quat, sizeof quat);
  if (khz_spec_addGeom(s->spec, &g) < 0) return khz_scene_fail(r, n, "ground", "out of memory");
  s->has_ground = 1;
  s->ground_height = pos[2];
  memcpy(s->ground_pos, pos, sizeof pos);
  memcpy(s->ground_normal, normal, sizeof normal);
  return 0;
}

static int khz_scene_contact(khzSceneReader *r, const yaml_node_t *n, khzContactOptions *c) {
  static const char *const keys[] = {"method",      "kp",         "kv",          "ki",
                                     "kp_per_kg",   "kv_per_kg",  "ki_per_kg",   "gain_mass",
                                     "gamma",       "mu",         "restitution", "impact_velocity",
                                     "reimpact_velocity", "max_pairs",   "max_points", "rolling_friction",
                                     "torsional_friction", "friction_directions", "lcp_restitution",
                                     "lcp_split_impacts", "lcp_gap", "deepest_stage", "deepest_ties", "joint_friction", "free_closed_form",
                                     "peg_model", "peg_recovery", "peg_splits", "peg_lp_point", "peg_lemke_ties",
                                     NULL};
  yaml_node_t *v;
  if (khz_check_keys(r, n, "contact", keys)) return -1;
  if ((v = khz_find(r, n, "method"))) {
    char method[32];
    if (khz_get_string(r, v, "contact.method", method, sizeof method)) return -1;
    int id = khz_contactMethodFromName(method);
    if (id < 0) {
      return khz_scene_fail(r, v, "contact.method",
                            "unknown method '%s': it must be one of none, penalty, deepest, lcp, peg",
                            method);
    }
    c->method = (khzContactMethod)id;
  }
  /* numeric settings: key, destination, range and what the range means */
  const struct {
    const char *key;
    double *out;
    double lo, hi;
    int open_hi;
    const char *doc;
  } nums[] = {
      {"kp", &c->kp, 0, 1e12, 0, ">= 0; 0 = derived from the masses"},
      {"kv", &c->kv, 0, 1e12, 0, ">= 0; 0 = derived from the masses"},
      {"ki", &c->ki, 0, 1e12, 0, ">= 0; 0 = derived from the masses"},
      {"kp_per_kg", &c->kp_per_kg, 0, 1e12, 0, ">= 0 (N/m per kg)"},
      {"kv_per_kg", &c->kv_per_kg, 0, 1e12, 0, ">= 0 (N s/m per kg)"},
      {"ki_per_kg", &c->ki_per_kg, 0, 1e12, 0, ">= 0 (N/m per kg)"},
      {"gamma", &c->gamma, 0, 1, 1, "0 <= gamma < 1"},
      {"mu", &c->mu, 0, 1e6, 0, ">= 0"},
      {"rolling_friction", &c->rolling, 0, 1, 0, "0 to 1 m (torque per newton of normal force)"},
      {"torsional_friction", &c->torsional, 0, 1, 0, "0 to 1 m (torque per newton of normal force)"},
      {"restitution", &c->restitution, 0, 1, 0, "0 to 1"},
      {"impact_velocity", &c->impact_velocity, 0, 1e3, 0, ">= 0 m/s"},
      {"reimpact_velocity", &c->reimpact_velocity, 0, 1e3, 0, ">= 0 m/s; 0 = never"},
  };
  char kp[KHZ_KEY_MAX];
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
    khz_keypath(kp, "contact", nums[i].key);
    if ((v = khz_find(r, n, nums[i].key)) &&
        khz_get_range(r, v, kp, nums[i].out, nums[i].lo, 0, nums[i].hi, nums[i].open_hi, nums[i].doc)) {
      return -1;
    }
  }
  if ((v = khz_find(r, n, "gain_mass"))) {
    char rule[16];
    if (khz_get_string(r, v, "contact.gain_mass", rule, sizeof rule)) return -1;
    if (strcmp(rule, "sum") == 0) c->gain_mass = KHZ_GAIN_MASS_SUM;
    else if (strcmp(rule, "reduced") == 0) c->gain_mass = KHZ_GAIN_MASS_REDUCED;
    else if (strcmp(rule, "effective") == 0) c->gain_mass = KHZ_GAIN_MASS_EFFECTIVE;
    else return khz_scene_fail(r, v, "contact.gain_mass",
                               "unknown rule '%s': it must be one of sum, reduced, effective", rule);
  }
  /* the LCP method's friction cone */
  if ((v = khz_find(r, n, "friction_directions"))) {
    double x = 0;
    if (khz_get_range(r, v, "contact.friction_directions", &x, 4, 0, 8, 0, "4 or 8")) return -1;
    if (x != 4 && x != 8) return khz_scene_fail(r, v, "contact.friction_directions",
                                         "%g is neither 4 nor 8: give 4 or 8", x);
    c->friction_directions = (int)x;
  }
  /* the LCP method's restitution phase (off: inelastic, the paper's) */
  if ((v = khz_find(r, n, "lcp_restitution")) &&
      khz_get_bool(r, v, "contact.lcp_restitution", &c->lcp_restitution))
    return -1;
  /* the LCP method's steps split at impacts (off: the paper's steps) */
  if ((v = khz_find(r, n, "lcp_split_impacts")) &&
      khz_get_bool(r, v, "contact.lcp_split_impacts", &c->lcp_split_impacts))
    return -1;
  /* the deepest-point method's stage choice: stacked (default), all (true) or
   * off (false: the collision pass's point everywhere) */
  if ((v = khz_find(r, n, "deepest_stage"))) {
    char stage[32];
    if (khz_get_string(r, v, "contact.deepest_stage", stage, sizeof stage)) return -1;
    if (strcmp(stage, "stacked") == 0) c->deepest_stage = KHZ_DEEPEST_STAGE_STACKED;
    else if (strcmp(stage, "all") == 0 || strcmp(stage, "true") == 0) c->deepest_stage = KHZ_DEEPEST_STAGE_ALL;
    else if (strcmp(stage, "off") == 0 || strcmp(stage, "false") == 0) c->deepest_stage = KHZ_DEEPEST_STAGE_OFF;
    else return khz_scene_fail(r, v, "contact.deepest_stage",
                               "unknown choice '%s': it must be one of stacked, all, off (or true, false)", stage);
  }
  /* the deepest-point method's ties under automatic gains (on: a smooth
   * maximum of the depths; off: the collision pass's deepest vertex) */
  if ((v = khz_find(r, n, "deepest_ties"))) {
    int on = 1;
    if (khz_get_bool(r, v, "contact.deepest_ties", &on)) return -1;
    c->deepest_ties = on ? KHZ_DEEPEST_TIES_ON : KHZ_DEEPEST_TIES_OFF;
  }
  /* the multi-point method's joint friction discs (off: each pair's own disc) */
  if ((v = khz_find(r, n, "joint_friction")) && khz_get_bool(r, v, "contact.joint_friction", &c->joint_friction))
    return -1;
  /* RK4's later stages: free objects' accelerations in closed form (khz.h) */
  if ((v = khz_find(r, n, "free_closed_form")) &&
      khz_get_bool(r, v, "contact.free_closed_form", &c->free_closed_form))
    return -1;
  /* the LCP method's gap function of pairs of polytopes */
  if ((v = khz_find(r, n, "lcp_gap"))) {
    char gap[32];
    if (khz_get_string(r, v, "contact.lcp_gap", gap, sizeof gap)) return -1;
    if (strcmp(gap, "narrowphase") == 0) c->lcp_gap = KHZ_LCP_GAP_NARROWPHASE;
    else if (strcmp(gap, "lpdepth") == 0) c->lcp_gap = KHZ_LCP_GAP_LPDEPTH;
    else return khz_scene_fail(r, v, "contact.lcp_gap",
                               "unknown gap '%s': it must be one of narrowphase, lpdepth", gap);
  }
  /* the PEG method's model of the constraints (docs/peg.md) */
  if ((v = khz_find(r, n, "peg_model"))) {
    char model[32];
    if (khz_get_string(r, v, "contact.peg_model", model, sizeof model)) return -1;
    if (strcmp(model, "peg") == 0) c->peg_model = KHZ_PEG_MODEL_PEG;
    else if (strcmp(model, "standard") == 0) c->peg_model = KHZ_PEG_MODEL_STANDARD;
    else if (strcmp(model, "lpdepth") == 0) c->peg_model = KHZ_PEG_MODEL_LPDEPTH;
    else return khz_scene_fail(r, v, "contact.peg_model",
                               "unknown model '%s': it must be one of peg, standard, lpdepth", model);
  }
  /* its recovery from a deep overlap at a step's start (off) and the LP-depth
   * model's witness point alone (off: the nearly active units) */
  if ((v = khz_find(r, n, "peg_recovery")) && khz_get_bool(r, v, "contact.peg_recovery", &c->peg_recovery))
    return -1;
  if ((v = khz_find(r, n, "peg_lp_point")) && khz_get_bool(r, v, "contact.peg_lp_point", &c->peg_lp_point))
    return -1;
  /* how many times a PEG step may be halved (2) */
  if ((v = khz_find(r, n, "peg_splits"))) {
    double x = 0;
    if (khz_get_range(r, v, "contact.peg_splits", &x, 0, 0, 2, 0, "0, 1 or 2")) return -1;
    if (x != floor(x)) return khz_scene_fail(r, v, "contact.peg_splits", "%g is not 0, 1 or 2: give one of them", x);
    c->peg_splits = (int)x;
  }
  /* Lemke's ratio-tie tolerance in PEG's LCPs (0: the default, 1e-3) */
  if ((v = khz_find(r, n, "peg_lemke_ties")) &&
      khz_get_range(r, v, "contact.peg_lemke_ties", &c->peg_lemke_ties, 0, 0, 1e3, 0, "0 to 1000; 0 = 1e-3"))
    return -1;
  /* capacities */
  const struct {
    const char *key;
    int *out;
  } caps[] = {{"max_pairs", &c->max_pairs}, {"max_points", &c->max_points}};
  for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
    double x = 0;
    khz_keypath(kp, "contact", caps[i].key);
    if ((v = khz_find(r, n, caps[i].key))) {
      if (khz_get_range(r, v, kp, &x, 1, 0, 1e6, 0, "1 to 1000000")) return -1;
      if (x != floor(x)) return khz_scene_fail(r, v, kp, "must be a whole number: drop the fraction");
      *caps[i].out = (int)x;
    }
  }
  return 0;
}

/* sleep: false | true | {enabled: true|false, velocity: m/s, time: s} (docs/sleeping.md) */
static int khz_scene_sleep(khzSceneReader *r, const yaml_node_t *n, khzSleepOptions *o) {
  static const char *const keys[] = {"enabled", "velocity", "time", NULL};
  yaml_node_t *v = (yaml_node_t *)n;
  if (n->type == YAML_MAPPING_NODE) {
    if (khz_check_keys(r, n, "sleep", keys)) return -1;
    if ((v = khz_find(r, n, "velocity")) &&
        khz_get_range(r, v, "sleep.velocity", &o->velocity, 0, 0, 1e3, 0, "0 to 1000 m/s"))
      return -1;
    if ((v = khz_find(r, n, "time")) && khz_get_range(r, v, "sleep.time", &o->time, 0, 0, 1e6, 0, "0 to 1e6 s"))
      return -1;
    if (!(v = khz_find(r, n, "enabled"))) return 0;
  }
  const char *word = v->type == YAML_SCALAR_NODE ? khz_scalar(v) : "";
  if (strcmp(word, "true") == 0) o->enabled = 1;
  else if (strcmp(word, "false") == 0) o->enabled = 0;
  else return khz_expected(r, v, n == v ? "sleep" : "sleep.enabled", "true or false (or a mapping)");
  return 0;
}

/* the experiment block: kind, body and the kind's numeric parameters */
static int khz_scene_experiment(khzSceneReader *r, const yaml_node_t *n, khzExperiment *e) {
  static const struct {
    const char *kind;
    int needs_body;
    const char *params[KHZ_EXPERIMENT_PARAMS];
  } kinds[] = {
      {"block_penetration", 1, {"seed", "steps", "window", "initial_penetration", NULL}},
      {"block_forces",
       1,
       {"seed", "settle_steps", "on_steps", "off_steps", "cycles", "force_min", "force_max", NULL}},
      {"pile", 0, {"seconds", "rest_energy", "container_x", "container_y", "container_z", NULL}},
      {"robot", 0, {"seconds", "hold_angle", "wheel_speed", NULL}},
      {"stack", 0, {"seconds", NULL}},
      {"arm_push",
       1,
       {"seconds", "hold_angle", "sweep_joint", "sweep_angle", "sweep_start", "sweep_seconds", NULL}},
      {"st_rod", 1, {"seconds", "rest_speed", NULL}},
      {"st_balls", 1, {"seconds", NULL}},
  };
  if (n->type != YAML_MAPPING_NODE) return khz_expected(r, n, "experiment", "a mapping");
  yaml_node_t *v = khz_find(r, n, "kind");
  if (!v) return khz_scene_fail(r, n, "experiment.kind", "required key missing: add it to this entry");
  if (khz_get_string(r, v, "experiment.kind", e->kind, sizeof e->kind)) return -1;
  int k = -1;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp(kinds[i].kind, e->kind) == 0) k = (int)i;
  if (k < 0) {
    return khz_scene_fail(r, v, "experiment.kind",
                          "unknown kind '%s': it must be one of block_penetration, block_forces, "
                          "pile, robot, stack, arm_push, st_rod, st_balls",
                          e->kind);
  }
  /* allowed keys: kind, body and the kind's parameters */
  const char *keys[KHZ_EXPERIMENT_PARAMS + 3];
  int nk = 0;
  keys[nk++] = "kind";
  keys[nk++] = "body";
  for (int i = 0; kinds[k].params[i]; i++) keys[nk++] = kinds[k].params[i];
  keys[nk] = NULL;
  if (khz_check_keys(r, n, "experiment", keys)) return -1;
  if ((v = khz_find(r, n, "body"))) {
    if (khz_get_string(r, v, "experiment.body", e->body, sizeof e->body)) return -1;
  } else if (kinds[k].needs_body) {
    return khz_scene_fail(r, n, "experiment.body", "required key missing: add it to this entry (the body to act on, one "
                          "declared under objects:)");
  }
  e->nparam = 0;
  for (int i = 0; kinds[k].params[i]; i++) {
    char kp[KHZ_KEY_MAX];
    khz_keypath(kp, "experiment", kinds[k].params[i]);
    if (!(v = khz_find(r, n, kinds[k].params[i]))) continue;
    if (khz_get_number(r, v, kp, &e->param[e->nparam])) return -1;
    snprintf(e->param_name[e->nparam], sizeof e->param_name[0], "%s", kinds[k].params[i]);
    e->nparam++;
  }
  return 0;
}

/* sets the initial positions named in q0 (velocity = 0) or the initial velocities
 * named in qd0 (velocity = 1) on the robot's bodies [nb0, nb1) */
static int khz_scene_q0(khzSceneReader *r, const yaml_node_t *n, const char *path, khzSpec *spec,
                        int nb0, int nb1, const char *prefix, int velocity) {
  const char *what = velocity ? "qd0" : "q0";
  if (n->type != YAML_MAPPING_NODE) return khz_expected(r, n, path, "a mapping joint: value");
  size_t plen = strlen(prefix);
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = khz_node(r, p->key), *v = khz_node(r, p->value);
    char kp[KHZ_KEY_MAX];
    if (k->type != YAML_SCALAR_NODE) return khz_expected(r, k, path, "a joint name");
    khz_keypath(kp, path, khz_scalar(k));

    /* given once? */
    for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p; q++) {
      yaml_node_t *k2 = khz_node(r, q->key);
      if (k2->type == YAML_SCALAR_NODE && strcmp(khz_scalar(k2), khz_scalar(k)) == 0) {
        return khz_scene_fail(r, k, kp, "given twice (first at line %zu): keep one",
                              k2->start_mark.line + 1);
      }
    }

    /* find the joint by its name without the robot prefix */
    khzBodySpec *b = NULL;
    for (int i = nb0; i < nb1; i++) {
      khzBodySpec *c = khz_spec_body(spec, i);
      if (strncmp(c->joint_name, prefix, plen) == 0 &&
          strcmp(c->joint_name + plen, khz_scalar(k)) == 0) {
        b = c;
        break;
      }
    }
    if (!b) {
      char list[512] = "";
      size_t len = 0;
      for (int i = nb0; i < nb1 && len < sizeof list; i++) {
        khzBodySpec *c = khz_spec_body(spec, i);
        if (c->joint_type == KHZ_JOINT_FIXED || strncmp(c->joint_name, prefix, plen) != 0) continue;
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "",
                                c->joint_name + plen);
      }
      return khz_scene_fail(r, k, kp, "no joint '%s' in this robot: %s%s", khz_scalar(k),
                            list[0] ? "use one of " : "it has no movable joints; remove it",
                            list);
    }
    if (b->joint_type != KHZ_JOINT_REVOLUTE && b->joint_type != KHZ_JOINT_CONTINUOUS &&
        b->joint_type != KHZ_JOINT_PRISMATIC) {
      return khz_scene_fail(r, k, kp,
                            "joint '%s' is %s; %s sets only revolute, continuous and prismatic "
                            "joints: remove it",
                            khz_scalar(k), khz_jointTypeName(b->joint_type), what);
    }

    /* the value, inside the position limits (q0) or the velocity limit (qd0) */
    double value = 0;
    if (khz_get_number(r, v, kp, &value)) return -1;
    if (velocity) {
      if (b->velocity_limit > 0 && fabs(value) > b->velocity_limit) {
        return khz_scene_fail(r, v, kp, "%.17g is beyond the joint's velocity limit %g: give a "
                              "smaller speed", value,
                              b->velocity_limit);
      }
      b->qd0[0] = value;
      continue;
    }
    if (b->limited && b->joint_type != KHZ_JOINT_CONTINUOUS &&
        (value < b->lower || value > b->upper)) {
      return khz_scene_fail(r, v, kp, "%.17g is outside the joint limits [%g, %g]: give a "
                              "position within them", value, b->lower,
                            b->upper);
    }
    b->q0[0] = value;
  }
  return 0;
}

/* the HIL sensors an MJCF model's <sensor> gives (khzMjcfInfo.hil) appended
 * to the scene's: as many as the scene holds (one warning on stderr for the
 * rest, like the loaders' warnings without a callback); -1 with a message in
 * err when a name is taken */
static int khz_scene_mjcfSensors(khzScene *s, const khzMjcfInfo *info, const char *file, char *err,
                                 size_t errsz) {
  for (int i = 0; i < info->nhil; i++) {
    if (s->hil.nsensor == KHZ_SCENE_MAX_SENSOR) {
      fprintf(stderr,
              "khz: warning: %s: its <sensor> gives %d HIL sensors and a scene holds %d: the "
              "last %d (from '%s') are left out\n",
              file, info->nhil, KHZ_SCENE_MAX_SENSOR, info->nhil - i, info->hil[i].name);
      return 0;
    }
    for (int k = 0; k < s->hil.nsensor; k++)
      if (!strcmp(s->hil.sensor[k].name, info->hil[i].name)) {
        snprintf(err, errsz, "sensor name '%s' is used twice", info->hil[i].name);
        return -1;
      }
    s->hil.sensor[s->hil.nsensor++] = info->hil[i];
  }
  return 0;
}

/* a model's own actuators (MJCF <actuator>, URDF <ros2_control>) appended to
 * the scene's, named with the robot's prefix (MJCF: prefix + name, unnamed
 * "actuatorN"; URDF names carry it already): as many as the scene holds (one
 * warning on stderr for the rest); -1 with a message in err when a name is
 * taken */
static int khz_scene_addActuators(khzScene *s, const khzMjcfActuator *a, int n, const char *prefix,
                                  const char *file, char *err, size_t errsz) {
  for (int i = 0; i < n; i++) {
    if (s->nactuator == KHZ_SCENE_MAX_ACTUATOR) {
      fprintf(stderr,
              "khz: warning: %s: it has %d actuators and a scene holds %d: the last %d (from "
              "'%s') cannot be commanded by Command.ctrl (their joints still take torques)\n",
              file, n, KHZ_SCENE_MAX_ACTUATOR, n - i, a[i].name);
      return 0;
    }
    khzMjcfActuator *d = &s->actuator[s->nactuator];
    *d = a[i];
    char own[KHZ_NAME_MAX];
    if (a[i].name[0]) snprintf(own, sizeof own, "%s", a[i].name);
    else snprintf(own, sizeof own, "actuator%d", i);
    if (prefix && snprintf(d->name, sizeof d->name, "%s%s", prefix, own) >= (int)sizeof d->name) {
      snprintf(err, errsz, "actuator name '%s%s' is longer than %d characters", prefix, own,
               KHZ_NAME_MAX - 1);
      return -1;
    }
    if (!prefix) snprintf(d->name, sizeof d->name, "%s", own);
    for (int k = 0; k < s->nactuator; k++)
      if (!strcmp(s->actuator[k].name, d->name)) {
        snprintf(err, errsz, "actuator name '%s' is used twice: name the robots apart", d->name);
        return -1;
      }
    s->nactuator++;
  }
  return 0;
}

/* an MJCF robot (robots[i].mjcf): the model's own joints and contact filters,
 * its <keyframe> by name, without its world geoms and <option> (the scene's) */
static int khz_scene_mjcf(khzSceneReader *r, const yaml_node_t *n, const char *path, khzScene *s,
                          int index, const char *prefix) {
  char kp[KHZ_KEY_MAX], file[KHZ_PATH_MAX], given[KHZ_PATH_MAX], keyframe[KHZ_NAME_MAX] = "";
  yaml_node_t *v, *mjcf_node = khz_find(r, n, "mjcf");
  khzMjcfOptions opt;
  khz_mjcf_defaultOptions(&opt);
  opt.name_prefix = prefix;
  opt.world_geoms = 0;
  opt.apply_options = 0;
  khz_keypath(kp, path, "mjcf");
  if (khz_get_string(r, mjcf_node, kp, given, sizeof given)) return -1;
  static const char *const not_mjcf[] = {"floating_base", "package_path", NULL};
  for (int i = 0; not_mjcf[i]; i++)
    if ((v = khz_find(r, n, not_mjcf[i]))) {
      khz_keypath(kp, path, not_mjcf[i]);
      return khz_scene_fail(r, v, kp,
                            "only for a URDF robot (an MJCF model has its own joints and files): "
                            "remove it");
    }
  if ((v = khz_find(r, n, "base"))) {
    static const char *const base_keys[] = {"pos", "rpy", "quat", NULL};
    char bp[KHZ_KEY_MAX];
    if (khz_get_base(r, v, path, base_keys, bp, opt.base_pos, opt.base_quat)) return -1;
  }
  khz_keypath(kp, path, "keyframe");
  if ((v = khz_find(r, n, "keyframe"))) {
    if (khz_get_string(r, v, kp, keyframe, sizeof keyframe)) return -1;
    opt.keyframe = keyframe;
  }
  int self_collision = 1; /* the model's own contype / conaffinity */
  khz_keypath(kp, path, "self_collision");
  if ((v = khz_find(r, n, "self_collision")) && khz_get_bool(r, v, kp, &self_collision)) return -1;

  /* the file, relative to the scene */
  char tried[1024], merr[1024];
  khz_keypath(kp, path, "mjcf");
  if (khz_resolve_path(file, sizeof file, given, r->basedir, NULL, tried, sizeof tried))
    return khz_scene_fail(r, mjcf_node, kp, "MJCF file '%s' not found (tried: %s): check the path", given, tried);
  int nb0 = khz_spec_nbody(s->spec), ng0 = khz_spec_ngeom(s->spec);
  khzMjcfInfo info;
  opt.info = &info;
  if (khz_loadMJCF(s->spec, file, &opt, merr, sizeof merr) < 0)
    return khz_scene_fail(r, mjcf_node, kp, "MJCF failed to load: %s", merr);
  /* its sensors that khz's HIL layer has: in State.sensor_values; its actuators */
  int bad = khz_scene_mjcfSensors(s, &info, file, merr, sizeof merr) ||
            khz_scene_addActuators(s, info.actuator, info.nactuator, prefix, file, merr,
                                   sizeof merr);
  khz_mjcf_freeInfo(&info);
  if (bad) return khz_scene_fail(r, mjcf_node, kp, "%s", merr);

  /* self_collision: false as for a URDF robot (geoms that never collide stay so) */
  if (!self_collision) {
    unsigned bit = 1u << (1 + index % 31); /* as for a URDF robot */
    for (int g = ng0; g < khz_spec_ngeom(s->spec); g++) {
      khzGeomSpec *gs = khz_spec_geom(s->spec, g);
      if (gs->contype == 0 && gs->conaffinity == 0) continue;
      gs->contype = bit;
      gs->conaffinity = ~bit;
    }
  }

  /* initial joint positions and velocities over the model's (or its key's) */
  khz_keypath(kp, path, "q0");
  if ((v = khz_find(r, n, "q0")) &&
      khz_scene_q0(r, v, kp, s->spec, nb0, khz_spec_nbody(s->spec), prefix, 0))
    return -1;
  khz_keypath(kp, path, "qd0");
  if ((v = khz_find(r, n, "qd0")) &&
      khz_scene_q0(r, v, kp, s->spec, nb0, khz_spec_nbody(s->spec), prefix, 1))
    return -1;
  return 0;
}

static int khz_scene_robot(khzSceneReader *r, const yaml_node_t *n, int index, khzScene *s,
                           khzSceneNames *names) {
  static const char *const keys[] = {"name", "urdf", "mjcf", "keyframe", "package_path", "base",
                                     "floating_base", "q0", "qd0", "self_collision", NULL};
  static const char *const base_keys[] = {"pos", "rpy", "quat", "vel", "angvel", NULL};
  char path[KHZ_KEY_MAX], kp[KHZ_KEY_MAX];
  char name[KHZ_NAME_MAX], prefix[KHZ_NAME_MAX], urdf[KHZ_PATH_MAX];
  char package_path[4096] = "";
  yaml_node_t *v;
  khzUrdfOptions opt;

  snprintf(path, sizeof path, "robots[%d]", index);
  if (khz_check_keys(r, n, path, keys)) return -1;
  khz_urdf_defaultOptions(&opt);

  /* required: name and urdf */
  khz_keypath(kp, path, "name");
  if (!(v = khz_find(r, n, "name"))) return khz_scene_fail(r, n, kp, "required key missing: add it to this entry");
  if (khz_get_name(r, v, kp, name, KHZ_NAME_MAX - 16, names)) return -1;
  size_t nlen = strlen(name); /* < KHZ_NAME_MAX - 16 */
  memcpy(prefix, name, nlen);
  prefix[nlen] = '/';
  prefix[nlen + 1] = 0;
  if (khz_find(r, n, "mjcf")) {
    if (khz_find(r, n, "urdf")) {
      khz_keypath(kp, path, "mjcf");
      return khz_scene_fail(r, khz_find(r, n, "mjcf"), kp, "give urdf or mjcf, not both: remove one");
    }
    return khz_scene_mjcf(r, n, path, s, index, prefix);
  }
  khz_keypath(kp, path, "urdf");
  if (!(v = khz_find(r, n, "urdf")))
    return khz_scene_fail(r, n, kp, "required key missing: add it to this entry (or mjcf: an MJCF model)");
  if (khz_get_string(r, v, kp, urdf, sizeof urdf)) return -1;
  yaml_node_t *urdf_node = v;
  khz_keypath(kp, path, "keyframe");
  if ((v = khz_find(r, n, "keyframe")))
    return khz_scene_fail(r, v, kp, "only for an MJCF model (mjcf:): remove it");

  /* optional: package_path, base, floating_base */
  khz_keypath(kp, path, "package_path");
  if ((v = khz_find(r, n, "package_path")) &&
      khz_get_string(r, v, kp, package_path, sizeof package_path)) {
    return -1;
  }
  if ((v = khz_find(r, n, "base"))) {
    char bp[KHZ_KEY_MAX];
    if (khz_get_base(r, v, path, base_keys, bp, opt.base_pos, opt.base_quat)) return -1;
  }
  khz_keypath(kp, path, "floating_base");
  if ((v = khz_find(r, n, "floating_base")) && khz_get_bool(r, v, kp, &opt.floating_base)) {
    return -1;
  }
  /* the floating base's initial velocity (base.vel, base.angvel) */
  double base_qd0[6] = {0, 0, 0, 0, 0, 0};
  if ((v = khz_find(r, n, "base"))) {
    char bp[KHZ_KEY_MAX];
    khz_keypath(bp, path, "base");
    if (khz_get_velocity(r, v, bp, opt.floating_base,
                         "only for a floating base: a welded base does not move; remove it or "
                         "set floating_base: true",
                         opt.base_quat, base_qd0)) {
      return -1;
    }
  }
  int self_collision = 0;
  khz_keypath(kp, path, "self_collision");
  if ((v = khz_find(r, n, "self_collision")) && khz_get_bool(r, v, kp, &self_collision)) {
    return -1;
  }
  opt.name_prefix = prefix;
  opt.package_path = package_path[0] ? package_path : NULL;

  /* load the URDF: the embedded copy or a file relative to the scene */
  char uerr[1024];
  int nb0 = khz_spec_nbody(s->spec), ng0 = khz_spec_ngeom(s->spec), root;
  khzUrdfInfo uinfo;
  memset(&uinfo, 0, sizeof uinfo);
  opt.info = &uinfo;
  khz_keypath(kp, path, "urdf");
  if (strncmp(urdf, KHZ_EMBEDDED_PREFIX, strlen(KHZ_EMBEDDED_PREFIX)) == 0) {
    const char *text = khz_embedded_text(urdf + strlen(KHZ_EMBEDDED_PREFIX));
    if (!text) {
      char list[256] = "";
      size_t len = 0;
      for (int i = 0; khz_embedded_files[i].name && len < sizeof list; i++) {
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s%s", i ? ", " : "",
                                KHZ_EMBEDDED_PREFIX, khz_embedded_files[i].name);
      }
      return khz_scene_fail(r, urdf_node, kp, "no embedded file '%s': use one of %s", urdf, list);
    }
    root = khz_loadURDFString(s->spec, text, urdf, NULL, &opt, uerr, sizeof uerr);
  } else {
    char file[KHZ_PATH_MAX], tried[1024];
    if (khz_resolve_path(file, sizeof file, urdf, r->basedir, opt.package_path, tried,
                         sizeof tried)) {
      return khz_scene_fail(r, urdf_node, kp, "URDF file '%s' not found (tried: %s): check the path, or "
                            "set package_path for package:// names", urdf, tried);
    }
    root = khz_loadURDF(s->spec, file, &opt, uerr, sizeof uerr);
  }
  if (root < 0) return khz_scene_fail(r, urdf_node, kp, "URDF failed to load: %s", uerr);
  /* its <ros2_control> command interfaces: the robot's actuators */
  int bad = khz_scene_addActuators(s, uinfo.actuator, uinfo.nactuator, NULL, urdf, uerr,
                                   sizeof uerr);
  khz_urdf_freeInfo(&uinfo);
  if (bad) return khz_scene_fail(r, urdf_node, kp, "%s", uerr);

  /* without self-collision the robot's geoms share a collision bit of their
   * own that they do not accept: they still touch the world, objects and
   * other robots (docs/scene-format.md) */
  if (!self_collision) {
    unsigned bit = 1u << (1 + index % 31);
    for (int g = ng0; g < khz_spec_ngeom(s->spec); g++) {
      khz_spec_geom(s->spec, g)->contype = bit;
      khz_spec_geom(s->spec, g)->conaffinity = ~bit;
    }
  }

  /* initial joint positions and velocities */
  khz_keypath(kp, path, "q0");
  if ((v = khz_find(r, n, "q0")) &&
      khz_scene_q0(r, v, kp, s->spec, nb0, khz_spec_nbody(s->spec), prefix, 0)) {
    return -1;
  }
  khz_keypath(kp, path, "qd0");
  if ((v = khz_find(r, n, "qd0")) &&
      khz_scene_q0(r, v, kp, s->spec, nb0, khz_spec_nbody(s->spec), prefix, 1)) {
    return -1;
  }
  if (opt.floating_base) memcpy(khz_spec_body(s->spec, root)->qd0, base_qd0, sizeof base_qd0);
  return 0;
}

/* solid, uniform-density inertia about the centre of mass (xx yy zz xy xz yz) */
static void khz_shape_inertia(khzGeomType type, const double size[3], double mass,
                              double inertia[6]) {
  memset(inertia, 0, 6 * sizeof(double));
  if (type == KHZ_GEOM_BOX) {
    double x2 = size[0] * size[0], y2 = size[1] * size[1], z2 = size[2] * size[2];
    inertia[0] = mass * (y2 + z2) / 3;
    inertia[1] = mass * (x2 + z2) / 3;
    inertia[2] = mass * (x2 + y2) / 3;
  } else if (type == KHZ_GEOM_SPHERE) {
    inertia[0] = inertia[1] = inertia[2] = 0.4 * mass * size[0] * size[0];
  } else if (type == KHZ_GEOM_CYLINDER) {
    double r2 = size[0] * size[0], h2 = size[1] * size[1];
    inertia[0] = inertia[1] = mass * (3 * r2 + 4 * h2) / 12;
    inertia[2] = mass * r2 / 2;
  } else if (type == KHZ_GEOM_CAPSULE) {
    /* a cylinder of half-length h and two hemispheres, the mass split by volume;
     * each hemisphere about the centre: m (2/5 r^2 + h^2 + 3/4 h r) */
    double r = size[0], h = size[1];
    double vc = 2 * h, vs = 4.0 / 3.0 * r;
    double mc = mass * vc / (vc + vs), ms = mass * vs / (vc + vs);
    inertia[0] = inertia[1] =
        mc * (3 * r * r + 4 * h * h) / 12 + ms * (0.4 * r * r + h * h + 0.75 * h * r);
    inertia[2] = mc * r * r / 2 + ms * 0.4 * r * r;
  }
}

/* a user inertia must be a positive definite matrix obeying the triangle inequality */
static int khz_inertia_ok(const double I[6]) {
  double a = I[0], b = I[1], c = I[2], xy = I[3], xz = I[4], yz = I[5];
  double d2 = a * b - xy * xy;
  double d3 = a * (b * c - yz * yz) - xy * (xy * c - yz * xz) + xz * (xy * yz - b * xz);
  if (!(a > 0 && d2 > 0 && d3 > 0)) return 0;
  double tol = 1e-12 * (a + b + c);
  return a + b + tol >= c && a + c + tol >= b && b + c + tol >= a;
}

/* an object of shape plane: a static half-space (everything below the plane,
 * the normal pointing to the free side) on a welded, massless body named like
 * the object; placed by pos and normal / rpy / quat */
/* an object's surface keys: friction, per-object penalty gains (0 = the
 * scene's) and colour (grey when not given) */
static int khz_scene_surface(khzSceneReader *r, const yaml_node_t *n, const char *path, khzGeomSpec *g,
                             double grey) {
  char kp[KHZ_KEY_MAX];
  const yaml_node_t *v;
  khz_keypath(kp, path, "friction");
  g->friction = 0;
  if ((v = khz_find(r, n, "friction")) &&
      khz_get_range(r, v, kp, &g->friction, 0, 0, 1e6, 0, ">= 0; 0 = the contact mu")) {
    return -1;
  }
  const char *gain_keys[3] = {"kp", "kv", "ki"};
  double *gains[3] = {&g->kp, &g->kv, &g->ki};
  for (int i = 0; i < 3; i++) {
    khz_keypath(kp, path, gain_keys[i]);
    if ((v = khz_find(r, n, gain_keys[i])) &&
        khz_get_range(r, v, kp, gains[i], 0, 0, 1e12, 0, ">= 0; 0 = the scene's gain")) {
      return -1;
    }
  }
  g->rgba[0] = g->rgba[1] = g->rgba[2] = grey;
  g->rgba[3] = 1;
  khz_keypath(kp, path, "rgba");
  if ((v = khz_find(r, n, "rgba")) && khz_get_rgba(r, v, kp, g->rgba)) return -1;
  return 0;
}

static int khz_scene_plane(khzSceneReader *r, const yaml_node_t *n, const char *path,
                           const char *name, khzScene *s) {
  static const char *const not_for_plane[] = {"size", "file", "scale", "convex", "mass",
                                              "inertia", "vel", "angvel", NULL};
  char kp[KHZ_KEY_MAX];
  yaml_node_t *v;
  khzBodySpec b;
  khzGeomSpec g;
  for (int i = 0; not_for_plane[i]; i++) {
    if ((v = khz_find(r, n, not_for_plane[i]))) {
      khz_keypath(kp, path, not_for_plane[i]);
      return khz_scene_fail(r, v, kp, "not used by shape plane (a static half-space): remove it");
    }
  }
  int fixed = 1;
  khz_keypath(kp, path, "fixed");
  if ((v = khz_find(r, n, "fixed"))) {
    if (khz_get_bool(r, v, kp, &fixed)) return -1;
    if (!fixed) {
      return khz_scene_fail(r, v, kp,
                            "a plane is always fixed (static): remove fixed or set it true");
    }
  }
  khz_spec_defaultBody(&b);
  khz_spec_defaultGeom(&g);
  double normal[3];
  khz_keypath(kp, path, "pos");
  if ((v = khz_find(r, n, "pos")) && khz_get_vec(r, v, kp, b.pos, 3)) return -1;
  if (khz_get_plane_orientation(r, n, path, b.quat, normal)) return -1;
  if (khz_scene_surface(r, n, path, &g, 0.8)) return -1;

  snprintf(b.name, sizeof b.name, "%s", name);
  b.parent = 0;
  b.joint_type = KHZ_JOINT_FIXED;
  int body = khz_spec_addBody(s->spec, &b);
  if (body < 0) return khz_scene_fail(r, n, path, "out of memory");
  g.body = body;
  g.type = KHZ_GEOM_PLANE;
  g.visual = 0;
  if (khz_spec_addGeom(s->spec, &g) < 0) return khz_scene_fail(r, n, path, "out of memory");
  return 0;
}

static int khz_scene_object(khzSceneReader *r, const yaml_node_t *n, int index, khzScene *s,
                            khzSceneNames *names) {
  static const char *const keys[] = {"name",  "shape",    "size", "file", "scale",
                                     "mass",  "inertia",  "pos",  "rpy",  "quat",
                                     "fixed", "friction", "rgba", "convex", "kp",
                                     "kv",    "ki",       "vel",  "angvel", "normal", NULL};
  static const struct {
    const char *name;
    khzGeomType type;
    int nsize;
    const char *size_doc;
  } shapes[] = {
      {"box", KHZ_GEOM_BOX, 3, "half-extents [x, y, z]"},
      {"sphere", KHZ_GEOM_SPHERE, 1, "[radius]"},
      {"cylinder", KHZ_GEOM_CYLINDER, 2, "[radius, half_length]"},
      {"capsule", KHZ_GEOM_CAPSULE, 2, "[radius, half_length]"},
      {"mesh", KHZ_GEOM_MESH, 0, ""},
      {"plane", KHZ_GEOM_PLANE, 0, ""},
  };
  char path[KHZ_KEY_MAX], kp[KHZ_KEY_MAX], name[KHZ_NAME_MAX], shape[32];
  yaml_node_t *v;
  khzBodySpec b;
  khzGeomSpec g;
  int fixed = 0, si = -1;
  double pos[3] = {0, 0, 0}, quat[4];

  snprintf(path, sizeof path, "objects[%d]", index);
  if (khz_check_keys(r, n, path, keys)) return -1;
  khz_spec_defaultBody(&b);
  khz_spec_defaultGeom(&g);

  /* name and shape */
  khz_keypath(kp, path, "name");
  if (!(v = khz_find(r, n, "name"))) return khz_scene_fail(r, n, kp, "required key missing: add it to this entry");
  if (khz_get_name(r, v, kp, name, KHZ_NAME_MAX, names)) return -1;
  khz_keypath(kp, path, "shape");
  if (!(v = khz_find(r, n, "shape"))) return khz_scene_fail(r, n, kp, "required key missing: add it to this entry");
  if (khz_get_string(r, v, kp, shape, sizeof shape)) return -1;
  for (int i = 0; i < (int)(sizeof shapes / sizeof shapes[0]); i++) {
    if (strcmp(shapes[i].name, shape) == 0) si = i;
  }
  if (si < 0) {
    return khz_scene_fail(
        r, v, kp, "unknown shape '%s': it must be one of box, sphere, cylinder, capsule, mesh, plane",
        shape);
  }
  g.type = shapes[si].type;
  if (g.type == KHZ_GEOM_PLANE) return khz_scene_plane(r, n, path, name, s);
  if ((v = khz_find(r, n, "normal"))) {
    khz_keypath(kp, path, "normal");
    return khz_scene_fail(r, v, kp, "only for shape plane: use rpy or quat instead");
  }

  /* size of a primitive: every entry > 0 */
  if (g.type != KHZ_GEOM_MESH) {
    khz_keypath(kp, path, "size");
    if (!(v = khz_find(r, n, "size"))) {
      return khz_scene_fail(r, n, kp, "required key missing: add it to this entry (%s: %s)", shape, shapes[si].size_doc);
    }
    g.size[0] = g.size[1] = g.size[2] = 0;
    if (khz_get_vec(r, v, kp, g.size, shapes[si].nsize)) return -1;
    for (int i = 0; i < shapes[si].nsize; i++) {
      if (!(g.size[i] > 0)) {
        return khz_scene_fail(r, v, kp, "entry %d = %g: every entry must be > 0 (%s: %s)", i,
                              g.size[i], shape, shapes[si].size_doc);
      }
    }
    const char *mesh_only[] = {"file", "scale", "convex"};
    for (int i = 0; i < 3; i++) {
      if ((v = khz_find(r, n, mesh_only[i]))) {
        khz_keypath(kp, path, mesh_only[i]);
        return khz_scene_fail(r, v, kp, "only for shape mesh: remove it");
      }
    }
  } else {
    /* a mesh: file (must exist) and scale */
    char file[KHZ_PATH_MAX], tried[1024];
    if ((v = khz_find(r, n, "size"))) {
      khz_keypath(kp, path, "size");
      return khz_scene_fail(r, v, kp, "not used by shape mesh: remove it (use file and scale)");
    }
    khz_keypath(kp, path, "file");
    if (!(v = khz_find(r, n, "file"))) return khz_scene_fail(r, n, kp, "required key missing: add it to this entry");
    if (khz_get_string(r, v, kp, file, sizeof file)) return -1;
    if (khz_resolve_path(g.meshfile, sizeof g.meshfile, file, r->basedir, NULL, tried, sizeof tried)) {
      return khz_scene_fail(r, v, kp, "mesh file '%s' not found (tried: %s): check the path (relative "
                            "paths start at the scene file's folder)", file, tried);
    }
    g.size[0] = g.size[1] = g.size[2] = 1;
    khz_keypath(kp, path, "scale");
    if ((v = khz_find(r, n, "scale"))) {
      if (khz_get_vec(r, v, kp, g.size, 3)) return -1;
      for (int i = 0; i < 3; i++) {
        if (!(g.size[i] > 0))
          return khz_scene_fail(r, v, kp, "got %g: every scale factor must be > 0", g.size[i]);
      }
    }

    /* convex (default): collide as the hull; false: as the closed triangle mesh */
    khz_keypath(kp, path, "convex");
    g.convex = 1;
    if ((v = khz_find(r, n, "convex")) && khz_get_bool(r, v, kp, &g.convex)) return -1;

    /* the mesh itself (rt scales it by size when compiling) */
    char merr[KHZ_PATH_MAX + 256];
    khz_keypath(kp, path, "file");
    g.mesh = khz_mesh_add(s->spec, g.meshfile, name, merr, sizeof merr);
    if (g.mesh < 0) return khz_scene_fail(r, khz_find(r, n, "file"), kp, "%s", merr);
  }

  /* mass and inertia */
  khz_keypath(kp, path, "mass");
  if (!(v = khz_find(r, n, "mass"))) return khz_scene_fail(r, n, kp, "required key missing: add it to this entry");
  if (khz_get_range(r, v, kp, &b.mass, 0, 1, 1e9, 0, "> 0 kg")) return -1;
  khz_keypath(kp, path, "inertia");
  if ((v = khz_find(r, n, "inertia"))) {
    if (khz_get_vec(r, v, kp, b.inertia, 6)) return -1;
    if (!khz_inertia_ok(b.inertia)) {
      return khz_scene_fail(r, v, kp,
                            "[xx, yy, zz, xy, xz, yz] is not positive definite or breaks the "
                            "triangle inequality: give a physical inertia (each of xx, yy, zz "
                            "at most the sum of the other two), or leave it out on a primitive "
                            "shape to get the solid's");
    }
  } else if (g.type == KHZ_GEOM_MESH) {
    return khz_scene_fail(r, n, kp,
                          "required key missing: add it to this entry (a mesh needs inertia: [xx, yy, zz, xy, xz, yz])");
  } else {
    khz_shape_inertia(g.type, g.size, b.mass, b.inertia);
  }

  /* pose, fixed, friction, colour */
  khz_keypath(kp, path, "pos");
  if ((v = khz_find(r, n, "pos")) && khz_get_vec(r, v, kp, pos, 3)) return -1;
  if (khz_get_orientation(r, n, path, quat)) return -1;
  khz_keypath(kp, path, "fixed");
  if ((v = khz_find(r, n, "fixed")) && khz_get_bool(r, v, kp, &fixed)) return -1;
  double qd0[6];
  if (khz_get_velocity(r, n, path, !fixed,
                       "only for a free object: a welded object does not move; remove it or "
                       "set fixed: false",
                       quat, qd0)) {
    return -1;
  }
  if (khz_scene_surface(r, n, path, &g, 0.6)) return -1;

  /* the body: welded at the pose, or a floating joint whose q0 is the pose */
  snprintf(b.name, sizeof b.name, "%s", name);
  b.parent = 0;
  b.com[0] = b.com[1] = b.com[2] = 0;
  if (fixed) {
    b.joint_type = KHZ_JOINT_FIXED;
    memcpy(b.pos, pos, sizeof pos);
    memcpy(b.quat, quat, sizeof quat);
  } else {
    b.joint_type = KHZ_JOINT_FLOATING;
    snprintf(b.joint_name, sizeof b.joint_name, "%s", name);
    memcpy(b.q0, pos, sizeof pos);
    memcpy(b.q0 + 3, quat, sizeof quat);
    memcpy(b.qd0, qd0, sizeof qd0);
  }
  int body = khz_spec_addBody(s->spec, &b);
  if (body < 0) return khz_scene_fail(r, n, path, "out of memory");

  /* one collision geom at the body origin */
  g.body = body;
  g.visual = 0;
  g.pos[0] = g.pos[1] = g.pos[2] = 0;
  g.quat[0] = 1;
  g.quat[1] = g.quat[2] = g.quat[3] = 0;
  if (khz_spec_addGeom(s->spec, &g) < 0) return khz_scene_fail(r, n, path, "out of memory");
  return 0;
}

/* one haptic proxy: a floating body coupled to a device (used by the server) */
static int khz_scene_haptic(khzSceneReader *r, const yaml_node_t *n, int index, khzScene *s,
                            khzSceneNames *names) {
  static const char *const keys[] = {"body", "stiffness", "damping", "rot_stiffness",
                                     "rot_damping", NULL};
  char path[KHZ_KEY_MAX], kp[KHZ_KEY_MAX];
  yaml_node_t *v;
  khzHapticSettings h;
  (void)names;
  snprintf(path, sizeof path, "haptics[%d]", index);
  if (khz_check_keys(r, n, path, keys)) return -1;
  if (s->nhaptic == KHZ_SCENE_MAX_HAPTIC) {
    return khz_scene_fail(r, n, path, "at most %d haptic proxies: remove the extra ones",
                          KHZ_SCENE_MAX_HAPTIC);
  }
  memset(&h, 0, sizeof h);

  /* the body: an existing floating body */
  khz_keypath(kp, path, "body");
  if (!(v = khz_find(r, n, "body"))) return khz_scene_fail(r, n, kp, "required key missing: add it to this entry");
  if (khz_get_string(r, v, kp, h.body, sizeof h.body)) return -1;
  int found = -1;
  for (int i = 1; i < khz_spec_nbody(s->spec); i++) {
    if (strcmp(khz_spec_body(s->spec, i)->name, h.body) == 0) found = i;
  }
  if (found < 0)
    return khz_scene_fail(r, v, kp, "no body named '%s': name one of the scene's objects (a "
                          "robot's bodies are ROBOT/LINK)", h.body);
  if (khz_spec_body(s->spec, found)->joint_type != KHZ_JOINT_FLOATING) {
    return khz_scene_fail(r, v, kp, "body '%s' is not a free (floating) object: a haptic proxy "
                          "must be an object without 'fixed: true'", h.body);
  }

  /* gains: stiffness and damping required, rotational ones optional; passive at the rate */
  static const char *const gain[] = {"stiffness", "damping", "rot_stiffness", "rot_damping"};
  double *out[] = {&h.stiffness, &h.damping, &h.rot_stiffness, &h.rot_damping};
  for (int k = 0; k < 4; k++) {
    khz_keypath(kp, path, gain[k]);
    if (!(v = khz_find(r, n, gain[k]))) {
      if (k < 2) return khz_scene_fail(r, n, kp, "required key missing: add it to this entry");
      continue;
    }
    if (khz_get_range(r, v, kp, out[k], 0, 0, 1e9, 0, ">= 0")) return -1;
  }
  double T = 1.0 / s->rate_hz;
  for (int k = 0; k < 4; k += 2) {
    if (*out[k] > 0 && !(*out[k + 1] > *out[k] * T / 2)) {
      khz_keypath(kp, path, gain[k + 1]);
      return khz_scene_fail(r, n, kp,
                            "%g violates the passivity bound: raise %s above %s * T / 2 = %g "
                            "at rate_hz %g, or lower %s",
                            *out[k + 1], gain[k + 1], gain[k], *out[k] * T / 2, s->rate_hz,
                            gain[k]);
    }
  }
  s->haptic[s->nhaptic++] = h;
  return 0;
}

/* ---------------------------------------------------------------- hil -- */

/* the spec body whose joint (joint = 1) or body has this name; -1 */
static int khz_scene_findBody(const khzScene *s, const char *name, int joint) {
  for (int i = 1; i < khz_spec_nbody(s->spec); i++) {
    const khzBodySpec *b = khz_spec_body(s->spec, i);
    if (strcmp(joint ? b->joint_name : b->name, name) == 0) return i;
  }
  return -1;
}

/* hil.sensors[i]: type, joint or body, pos, rate_divisor, latency_ticks,
 * counts_per_rev or resolution, white, bias, bias_walk */
static int khz_scene_sensor(khzSceneReader *r, const yaml_node_t *n, int index, khzScene *s,
                            khzSceneNames *names) {
  static const char *const keys[] = {"name", "type", "joint", "body", "pos", "rate_divisor",
                                     "latency_ticks", "counts_per_rev", "resolution", "white",
                                     "bias", "bias_walk", NULL};
  char path[KHZ_KEY_MAX], kp[KHZ_KEY_MAX], type[32];
  yaml_node_t *v;
  (void)names;
  snprintf(path, sizeof path, "hil.sensors[%d]", index);
  if (khz_check_keys(r, n, path, keys)) return -1;
  if (s->hil.nsensor == KHZ_SCENE_MAX_SENSOR)
    return khz_scene_fail(r, n, path, "at most %d sensors: remove the extra ones",
                          KHZ_SCENE_MAX_SENSOR);
  khzSensorSpec *o = &s->hil.sensor[s->hil.nsensor];
  memset(o, 0, sizeof *o);
  o->divisor = 1;

  khz_keypath(kp, path, "name");
  if (!(v = khz_find(r, n, "name"))) return khz_scene_fail(r, n, kp, "required key missing: add it to this entry");
  if (khz_get_string(r, v, kp, o->name, sizeof o->name)) return -1;
  for (int i = 0; i < s->hil.nsensor; i++)
    if (!strcmp(s->hil.sensor[i].name, o->name))
      return khz_scene_fail(r, v, kp, "sensor name '%s' is used twice: rename one of them",
                            o->name);
  khz_keypath(kp, path, "type");
  if (!(v = khz_find(r, n, "type"))) return khz_scene_fail(r, n, kp, "required key missing: add it to this entry");
  if (khz_get_string(r, v, kp, type, sizeof type)) return -1;
  if ((o->type = khz_sensorTypeFind(type)) < 0)
    return khz_scene_fail(r, v, kp,
                          "unknown sensor type '%s': it must be one of encoder, gyro, "
                          "accelerometer, force_torque, touch, joint_force_torque",
                          type);

  /* what it is on: an encoder's or a joint force-torque sensor's joint,
   * another sensor's body */
  int joint = o->type == KHZ_SENSOR_ENCODER || o->type == KHZ_SENSOR_JOINT_FT;
  const char *on = joint ? "joint" : "body";
  char name[KHZ_NAME_MAX];
  khz_keypath(kp, path, on);
  if (!(v = khz_find(r, n, on))) return khz_scene_fail(r, n, kp, "required key missing: add it to this entry");
  if (khz_get_string(r, v, kp, name, sizeof name)) return -1;
  if ((o->object = khz_scene_findBody(s, name, joint)) < 0)
    return khz_scene_fail(r, v, kp, "no %s named '%s': name %s (khz-sim info lists them)", on,
                          name,
                          joint ? "a robot's joint as ROBOT/JOINT"
                                : "one of the scene's objects, or a robot's link as ROBOT/LINK");
  if (o->type == KHZ_SENSOR_JOINT_FT &&
      khz_spec_body(s->spec, o->object)->joint_type == KHZ_JOINT_FLOATING)
    return khz_scene_fail(r, v, kp, "joint '%s' is a free joint: it transmits no force; name a "
                          "joint between two bodies", name);
  if (o->type == KHZ_SENSOR_ENCODER) {
    int t = khz_spec_body(s->spec, o->object)->joint_type;
    if (t != KHZ_JOINT_REVOLUTE && t != KHZ_JOINT_CONTINUOUS && t != KHZ_JOINT_PRISMATIC)
      return khz_scene_fail(r, v, kp, "joint '%s' is not revolute or prismatic: an encoder reads "
                            "a 1-dof joint; name a revolute or prismatic one", name);
  }
  if ((v = khz_find(r, n, joint ? "body" : "joint")))
    return khz_scene_fail(r, v, path, "an %s sensor takes '%s', not '%s': rename the key", type, on,
                          joint ? "body" : "joint");
  khz_keypath(kp, path, "pos");
  if ((v = khz_find(r, n, "pos")) && khz_get_vec(r, v, kp, o->pos, 3)) return -1;

  double x = 0;
  khz_keypath(kp, path, "rate_divisor");
  if ((v = khz_find(r, n, "rate_divisor"))) {
    if (khz_get_range(r, v, kp, &x, 1, 0, 1e6, 0, "1 to 1e6 ticks")) return -1;
    if (x != floor(x)) return khz_scene_fail(r, v, kp, "%g is not a whole number of ticks: give an integer", x);
    o->divisor = (int)x;
  }
  khz_keypath(kp, path, "latency_ticks");
  if ((v = khz_find(r, n, "latency_ticks"))) {
    if (khz_get_range(r, v, kp, &x, 0, 0, KHZ_HIL_MAX_LATENCY, 0, "0 to 1000 ticks")) return -1;
    if (x != floor(x)) return khz_scene_fail(r, v, kp, "%g is not a whole number of ticks: give an integer", x);
    o->latency = (int)x;
  }
  yaml_node_t *cpr = khz_find(r, n, "counts_per_rev"), *res = khz_find(r, n, "resolution");
  if (cpr && res)
    return khz_scene_fail(r, res, path, "give counts_per_rev or resolution, not both: remove one");
  if (cpr) {
    khz_keypath(kp, path, "counts_per_rev");
    if (!joint) {
      return khz_scene_fail(r, cpr, kp,
                            "only an encoder has counts per revolution: use resolution");
    }
    if (khz_get_range(r, cpr, kp, &x, 1, 0, 1e12, 0, "1 to 1e12")) return -1;
    o->noise.resolution = 2 * M_PI / x;
  }
  if (res) {
    khz_keypath(kp, path, "resolution");
    if (khz_get_range(r, res, kp, &o->noise.resolution, 0, 0, 1e9, 0, ">= 0")) return -1;
  }
  static const char *const nk[] = {"white", "bias", "bias_walk"};
  double *nv[] = {&o->noise.white, &o->noise.bias, &o->noise.bias_walk};
  for (int k = 0; k < 3; k++) {
    khz_keypath(kp, path, nk[k]);
    if ((v = khz_find(r, n, nk[k])) &&
        (k == 1 ? khz_get_number(r, v, kp, nv[k]) : khz_get_range(r, v, kp, nv[k], 0, 0, 1e9, 0, ">= 0")))
      return -1;
  }
  s->hil.nsensor++;
  return 0;
}

/* hil.drives[i]: joint, mode, kp, kd, max_torque, stall_torque,
 * no_load_speed, gear, lag, coulomb, viscous */
static int khz_scene_drive(khzSceneReader *r, const yaml_node_t *n, int index, khzScene *s,
                           khzSceneNames *names) {
  static const char *const keys[] = {"joint", "mode", "kp", "kd", "max_torque", "stall_torque",
                                     "no_load_speed", "gear", "lag", "coulomb", "viscous", NULL};
  char path[KHZ_KEY_MAX], kp[KHZ_KEY_MAX], mode[32];
  yaml_node_t *v;
  (void)names;
  snprintf(path, sizeof path, "hil.drives[%d]", index);
  if (khz_check_keys(r, n, path, keys)) return -1;
  if (s->hil.ndrive == KHZ_SCENE_MAX_DRIVE)
    return khz_scene_fail(r, n, path, "at most %d drives: remove the extra ones", KHZ_SCENE_MAX_DRIVE);
  khzDriveSpec *o = &s->hil.drive[s->hil.ndrive];
  memset(o, 0, sizeof *o);
  khz_keypath(kp, path, "joint");
  if (!(v = khz_find(r, n, "joint"))) return khz_scene_fail(r, n, kp, "required key missing: add it to this entry");
  if (khz_get_string(r, v, kp, o->joint, sizeof o->joint)) return -1;
  if ((o->body = khz_scene_findBody(s, o->joint, 1)) < 0)
    return khz_scene_fail(r, v, kp, "no joint named '%s': name a robot's joint as ROBOT/JOINT "
                          "(khz-sim info lists them)", o->joint);
  int t = khz_spec_body(s->spec, o->body)->joint_type;
  if (t != KHZ_JOINT_REVOLUTE && t != KHZ_JOINT_CONTINUOUS && t != KHZ_JOINT_PRISMATIC)
    return khz_scene_fail(r, v, kp, "joint '%s' is not revolute or prismatic: a drive moves a "
                          "1-dof joint; name one", o->joint);
  for (int i = 0; i < s->hil.ndrive; i++)
    if (!strcmp(s->hil.drive[i].joint, o->joint))
      return khz_scene_fail(r, v, kp, "joint '%s' has two drives: keep one", o->joint);
  khz_keypath(kp, path, "mode");
  if ((v = khz_find(r, n, "mode"))) {
    if (khz_get_string(r, v, kp, mode, sizeof mode)) return -1;
    if ((o->mode = khz_driveModeFind(mode)) < 0)
      return khz_scene_fail(r, v, kp, "unknown drive mode '%s': it must be one of torque, position, velocity",
                            mode);
  }
  static const char *const dk[] = {"kp", "kd", "max_torque", "stall_torque", "no_load_speed",
                                   "gear", "lag", "coulomb", "viscous"};
  double *dv[] = {&o->kp, &o->kd, &o->max_torque, &o->stall_torque, &o->no_load_speed,
                  &o->gear, &o->lag, &o->coulomb, &o->viscous};
  for (int k = 0; k < 9; k++) {
    khz_keypath(kp, path, dk[k]);
    if ((v = khz_find(r, n, dk[k])) && khz_get_range(r, v, kp, dv[k], 0, 0, 1e9, 0, ">= 0"))
      return -1;
  }
  if (o->gear != 0 && o->gear < 1) {
    khz_keypath(kp, path, "gear");
    return khz_scene_fail(r, khz_find(r, n, "gear"), kp,
                          "%g is below 1 (motor turns per joint turn): give a ratio >= 1, "
                          "or leave it out for a direct drive", o->gear);
  }
  if (o->stall_torque > 0 && !(o->no_load_speed > 0)) {
    khz_keypath(kp, path, "no_load_speed");
    return khz_scene_fail(r, n, kp, "required with stall_torque (the motor's speed at no load): add it, "
                          "or remove stall_torque");
  }
  if (o->mode != KHZ_DRIVE_TORQUE && o->kp == 0 && o->kd == 0) {
    khz_keypath(kp, path, "kp");
    return khz_scene_fail(r, n, kp, "a %s drive needs its gains: set kp and/or kd > 0, or use mode: torque",
                          khz_driveModeName(o->mode));
  }
  s->hil.ndrive++;
  return 0;
}

/* hil.faults[i]: at, and either target + fault (+ value, duration) or
 * push + force / torque + duration */
static int khz_scene_fault(khzSceneReader *r, const yaml_node_t *n, int index, khzScene *s,
                           khzSceneNames *names) {
  static const char *const keys[] = {"at", "target", "fault", "value", "duration", "push",
                                     "force", "torque", NULL};
  char path[KHZ_KEY_MAX], kp[KHZ_KEY_MAX], name[KHZ_NAME_MAX], type[32];
  yaml_node_t *v;
  (void)names;
  snprintf(path, sizeof path, "hil.faults[%d]", index);
  if (khz_check_keys(r, n, path, keys)) return -1;
  if (s->hil.nfault == KHZ_SCENE_MAX_FAULT)
    return khz_scene_fail(r, n, path, "at most %d fault events: remove the extra ones", KHZ_SCENE_MAX_FAULT);
  khzFaultEvent *e = &s->hil.fault[s->hil.nfault];
  memset(e, 0, sizeof *e);
  khz_keypath(kp, path, "at");
  if (!(v = khz_find(r, n, "at"))) return khz_scene_fail(r, n, kp, "required key missing: add it to this entry");
  if (khz_get_range(r, v, kp, &e->at, 0, 0, 1e9, 0, ">= 0 s")) return -1;
  khz_keypath(kp, path, "duration");
  if ((v = khz_find(r, n, "duration")) && khz_get_range(r, v, kp, &e->duration, 0, 0, 1e9, 0, ">= 0 s"))
    return -1;
  khz_keypath(kp, path, "value");
  if ((v = khz_find(r, n, "value")) && khz_get_number(r, v, kp, &e->value)) return -1;

  yaml_node_t *push = khz_find(r, n, "push"), *target = khz_find(r, n, "target");
  if (!push == !target)
    return khz_scene_fail(r, n, path, "give either target and fault, or push (a body) and force: "
                          "exactly one of target and push");
  if (push) {
    khz_keypath(kp, path, "push");
    if (khz_get_string(r, push, kp, name, sizeof name)) return -1;
    e->target = KHZ_FAULT_ON_BODY;
    if ((e->index = khz_scene_findBody(s, name, 0)) < 0)
      return khz_scene_fail(r, push, kp, "no body named '%s': name an object or a robot's ROBOT/LINK", name);
    khz_keypath(kp, path, "force");
    if ((v = khz_find(r, n, "force")) && khz_get_vec(r, v, kp, e->wrench, 3)) return -1;
    khz_keypath(kp, path, "torque");
    if ((v = khz_find(r, n, "torque")) && khz_get_vec(r, v, kp, e->wrench + 3, 3)) return -1;
    if (!(e->duration > 0)) {
      khz_keypath(kp, path, "duration");
      return khz_scene_fail(r, n, kp, "a push needs a duration > 0 s: add it");
    }
    if ((v = khz_find(r, n, "fault")))
      return khz_scene_fail(r, v, path, "a push takes force and torque, not a fault: remove fault");
  } else {
    khz_keypath(kp, path, "target");
    if (khz_get_string(r, target, kp, name, sizeof name)) return -1;
    char fp[KHZ_KEY_MAX];
    khz_keypath(fp, path, "fault");
    if (!(v = khz_find(r, n, "fault"))) return khz_scene_fail(r, n, fp, "required key missing: add it to this entry");
    if (khz_get_string(r, v, fp, type, sizeof type)) return -1;
    if ((e->type = khz_faultTypeFind(type)) < 0)
      return khz_scene_fail(r, v, fp,
                            "unknown fault '%s': it must be one of none, freeze, dropout, bias, "
                            "limp, torque_loss, lock, stall",
                            type);
    int ok;
    e->index = -1;
    if (!strcmp(name, "commands")) {
      e->target = KHZ_FAULT_ON_COMMANDS, e->index = 0;
      ok = e->type == KHZ_FAULT_STALL || e->type == KHZ_FAULT_NONE;
    } else {
      for (int i = 0; i < s->hil.nsensor; i++)
        if (!strcmp(s->hil.sensor[i].name, name)) e->target = KHZ_FAULT_ON_SENSOR, e->index = i;
      for (int i = 0; e->index < 0 && i < s->hil.ndrive; i++)
        if (!strcmp(s->hil.drive[i].joint, name)) e->target = KHZ_FAULT_ON_DRIVE, e->index = i;
      if (e->index < 0)
        return khz_scene_fail(r, target, kp,
                              "no sensor or drive named '%s': name a sensor of hil.sensors, "
                              "the joint of a drive in hil.drives, or commands",
                              name);
      ok = e->target == KHZ_FAULT_ON_SENSOR
               ? e->type <= KHZ_FAULT_BIAS
               : e->type == KHZ_FAULT_NONE || (e->type >= KHZ_FAULT_LIMP && e->type <= KHZ_FAULT_LOCK);
    }
    if (!ok) return khz_scene_fail(r, v, fp, "'%s' cannot take the fault %s: a sensor takes none, freeze, dropout "
                          "or bias; a drive none, limp, torque_loss or lock; commands none or "
                          "stall", name, type);
    if (e->type == KHZ_FAULT_TORQUE_LOSS && !(e->value >= 0 && e->value <= 1)) {
      khz_keypath(kp, path, "value");
      return khz_scene_fail(r, n, kp, "torque_loss keeps a share of the torque: %g is not in 0..1; give "
                            "a value from 0 to 1",
                            e->value);
    }
  }
  /* keep the list sorted by time (stable: equal times in file order) */
  int k = s->hil.nfault++;
  khzFaultEvent tmp = *e;
  while (k > 0 && s->hil.fault[k - 1].at > tmp.at) {
    s->hil.fault[k] = s->hil.fault[k - 1];
    k--;
  }
  s->hil.fault[k] = tmp;
  return 0;
}

static int khz_scene_list(khzSceneReader *r, const yaml_node_t *n, const char *key, khzScene *s,
                          khzSceneNames *names,
                          int (*fn)(khzSceneReader *, const yaml_node_t *, int, khzScene *,
                                    khzSceneNames *));

/* hil: seed, sensors, drives (after robots and objects: they name them) */
static int khz_scene_hil(khzSceneReader *r, const yaml_node_t *n, khzScene *s) {
  static const char *const keys[] = {"seed", "sensors", "drives", "faults", "network", NULL};
  yaml_node_t *v;
  if (n->type != YAML_MAPPING_NODE) return khz_expected(r, n, "hil", "a mapping");
  if (khz_check_keys(r, n, "hil", keys)) return -1;
  if ((v = khz_find(r, n, "seed"))) {
    double x = 0;
    if (khz_get_range(r, v, "hil.seed", &x, 0, 0, 9007199254740992.0, 0, "0 to 2^53")) return -1;
    if (x != floor(x)) {
      return khz_scene_fail(r, v, "hil.seed", "%g is not a whole number: give an integer", x);
    }
    s->hil.seed = (uint64_t)x;
  }
  if ((v = khz_find(r, n, "sensors")) &&
      khz_scene_list(r, v, "hil.sensors", s, NULL, khz_scene_sensor))
    return -1;
  if ((v = khz_find(r, n, "drives")) && khz_scene_list(r, v, "hil.drives", s, NULL, khz_scene_drive))
    return -1;
  if ((v = khz_find(r, n, "faults")) && khz_scene_list(r, v, "hil.faults", s, NULL, khz_scene_fault))
    return -1;
  if ((v = khz_find(r, n, "network"))) {
    static const char *const nk[] = {"state_delay_ticks", "state_jitter_ticks", "state_loss",
                                     "command_delay_ticks", "command_jitter_ticks",
                                     "command_loss", NULL};
    khzNetworkModel *net = &s->hil.network;
    int *ticks[4] = {&net->state_delay, &net->state_jitter, &net->command_delay,
                     &net->command_jitter};
    const char *tk[4] = {nk[0], nk[1], nk[3], nk[4]};
    char kp[KHZ_KEY_MAX];
    if (v->type != YAML_MAPPING_NODE) return khz_expected(r, v, "hil.network", "a mapping");
    if (khz_check_keys(r, v, "hil.network", nk)) return -1;
    for (int k = 0; k < 4; k++) {
      yaml_node_t *x = khz_find(r, v, tk[k]);
      double t = 0;
      khz_keypath(kp, "hil.network", tk[k]);
      if (!x) continue;
      if (khz_get_range(r, x, kp, &t, 0, 0, KHZ_NET_MAX_DELAY, 0, "0 to 100 ticks")) return -1;
      if (t != floor(t)) return khz_scene_fail(r, x, kp, "%g is not a whole number of ticks: give an integer", t);
      *ticks[k] = (int)t;
    }
    yaml_node_t *x;
    khz_keypath(kp, "hil.network", "state_loss");
    if ((x = khz_find(r, v, "state_loss")) &&
        khz_get_range(r, x, kp, &net->state_loss, 0, 0, 1, 1, "0 <= loss < 1"))
      return -1;
    khz_keypath(kp, "hil.network", "command_loss");
    if ((x = khz_find(r, v, "command_loss")) &&
        khz_get_range(r, x, kp, &net->command_loss, 0, 0, 1, 1, "0 <= loss < 1"))
      return -1;
    char err[256];
    if (khz_networkCheck(net, err, sizeof err) < 0) return khz_scene_fail(r, v, "hil.network", "%s", err);
  }
  s->hil.network.seed = s->hil.seed;
  return 0;
}

/* a list section (robots, objects): each entry through fn */
static int khz_scene_list(khzSceneReader *r, const yaml_node_t *n, const char *key, khzScene *s,
                          khzSceneNames *names,
                          int (*fn)(khzSceneReader *, const yaml_node_t *, int, khzScene *,
                                    khzSceneNames *)) {
  if (n->type != YAML_SEQUENCE_NODE) return khz_expected(r, n, key, "a list");
  int count = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
  for (int i = 0; i < count; i++) {
    if (fn(r, khz_node(r, n->data.sequence.items.start[i]), i, s, names)) return -1;
  }
  return 0;
}

/* the whole document into s (s->spec already made) */
static int khz_scene_root(khzSceneReader *r, const yaml_node_t *root, khzScene *s) {
  static const char *const keys[] = {"khz_scene", "name",    "rate_hz", "integrator", "gravity",
                                     "ground",    "contact", "robots",  "objects",    "haptics",
                                     "experiment", "sleep", "hil", "threads",
                                     NULL};
  yaml_node_t *v;
  double gravity[3] = {0, 0, -9.81}, version = 0;
  khzSceneNames names = {NULL, 0, 0};
  int rc = -1;

  if (root->type != YAML_MAPPING_NODE) {
    return khz_expected(r, root, "", "a mapping at the top (khz_scene: 1, ...)");
  }
  if (khz_check_keys(r, root, "", keys)) return -1;

  /* format version */
  if (!(v = khz_find(r, root, "khz_scene"))) {
    return khz_scene_fail(r, root, "khz_scene", "required key missing: add it to this entry (the format version, 1)");
  }
  if (khz_get_number(r, v, "khz_scene", &version)) return -1;
  if (version != KHZ_SCENE_VERSION) {
    return khz_scene_fail(r, v, "khz_scene",
                          "format version %g is not supported: write khz_scene: %d", version,
                          KHZ_SCENE_VERSION);
  }

  /* global settings */
  if ((v = khz_find(r, root, "name")) && khz_get_string(r, v, "name", s->name, sizeof s->name)) {
    return -1;
  }
  if ((v = khz_find(r, root, "rate_hz")) &&
      khz_get_range(r, v, "rate_hz", &s->rate_hz, KHZ_RATE_MIN_HZ, 0, KHZ_RATE_MAX_HZ, 0,
                    KHZ_RATE_RANGE(" to ") " Hz")) {
    return -1;
  }
  if ((v = khz_find(r, root, "integrator"))) {
    if (v->type == YAML_SCALAR_NODE && strcmp(khz_scalar(v), "rk4") == 0) {
      s->integrator = KHZ_INT_RK4;
    } else if (v->type == YAML_SCALAR_NODE && strcmp(khz_scalar(v), "euler") == 0) {
      s->integrator = KHZ_INT_EULER;
    } else {
      char got[64];
      khz_describe(v, got, sizeof got);
      return khz_scene_fail(r, v, "integrator", "unknown integrator %s: it must be one of rk4, euler",
                            got);
    }
  }
  if ((v = khz_find(r, root, "threads"))) {
    double n = 0;
    if (khz_get_number(r, v, "threads", &n)) return -1;
    if (!(n >= 1 && n <= 16 && n == (int)n))
      return khz_scene_fail(r, v, "threads", "expected an integer from 1 to 16, got %g", n);
    s->threads = (int)n;
  }
  if ((v = khz_find(r, root, "gravity")) && khz_get_vec(r, v, "gravity", gravity, 3)) return -1;
  khz_spec_setGravity(s->spec, gravity);
  khz_spec_setTimestep(s->spec, 1.0 / s->rate_hz);
  khz_spec_setIntegrator(s->spec, s->integrator);

  /* ground and contact */
  if ((v = khz_find(r, root, "ground")) && khz_scene_ground(r, v, s)) return -1;
  if ((v = khz_find(r, root, "contact")) && khz_scene_contact(r, v, &s->contact)) return -1;
  khz_spec_setContact(s->spec, &s->contact);
  {
    khzSleepOptions sleep;
    khz_spec_defaultSleep(&sleep);
    if ((v = khz_find(r, root, "sleep")) && khz_scene_sleep(r, v, &sleep)) return -1;
    khz_spec_setSleep(s->spec, &sleep);
  }
  if ((v = khz_find(r, root, "experiment")) && khz_scene_experiment(r, v, &s->experiment)) return -1;

  /* robots, then objects */
  if ((v = khz_find(r, root, "robots")) &&
      khz_scene_list(r, v, "robots", s, &names, khz_scene_robot)) {
    goto done;
  }
  if ((v = khz_find(r, root, "objects")) &&
      khz_scene_list(r, v, "objects", s, &names, khz_scene_object)) {
    goto done;
  }
  /* haptic proxies name bodies made above */
  if ((v = khz_find(r, root, "haptics")) &&
      khz_scene_list(r, v, "haptics", s, &names, khz_scene_haptic)) {
    goto done;
  }
  /* sensors and drives name joints and bodies made above */
  if ((v = khz_find(r, root, "hil")) && khz_scene_hil(r, v, s)) goto done;
  rc = 0;
done:
  free(names.name);
  return rc;
}

/* ------------------------------------------------------------------ API -- */

/* the defaults of a scene before the file is read */
static void khz_scene_defaults(khzScene *s, const char *file) {
  memset(s, 0, sizeof *s);
  s->rate_hz = 1000;
  s->integrator = KHZ_INT_RK4;
  s->threads = 1;
  s->ground_normal[2] = 1;
  khz_spec_defaultContact(&s->contact);

  /* the name: the file's base name without its extension */
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  if (strncmp(base, KHZ_EMBEDDED_PREFIX, strlen(KHZ_EMBEDDED_PREFIX)) == 0) {
    base += strlen(KHZ_EMBEDDED_PREFIX);
  }
  snprintf(s->name, sizeof s->name, "%s", base);
  char *dot = strrchr(s->name, '.');
  if (dot && dot != s->name) *dot = 0;
}

int khz_loadSceneString(khzScene *scene, const char *yaml, const char *name, const char *basedir,
                          char *err, size_t errsz) {
  khzSceneReader r;
  yaml_parser_t parser;
  khzScene tmp;
  int rc = -1;

  r.file = name ? name : "<string>";
  r.basedir = basedir;
  r.err = err;
  r.errsz = errsz;
  if (!scene || !yaml) return khz_loadError(err, errsz, "%s: no scene or no text given", r.file);

  /* parse the text into a document */
  if (!yaml_parser_initialize(&parser))
    return khz_loadError(err, errsz, "%s: out of memory", r.file);
  yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, strlen(yaml));
  if (!yaml_parser_load(&parser, &r.doc)) {
    khz_loadError(err, errsz, "%s:%zu:%zu: YAML syntax: %s%s%s", r.file,
                   parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                   parser.problem ? parser.problem : "error", parser.context ? " " : "",
                   parser.context ? parser.context : "");
    yaml_parser_delete(&parser);
    return -1;
  }
  yaml_node_t *root = yaml_document_get_root_node(&r.doc);
  if (!root) {
    khz_loadError(err, errsz,
                   "%s:1:1: empty scene: write a mapping starting with khz_scene: 1", r.file);
    goto out_doc;
  }

  /* one document only */
  {
    yaml_document_t next;
    if (!yaml_parser_load(&parser, &next)) {
      khz_loadError(err, errsz, "%s:%zu:%zu: YAML syntax: %s%s%s", r.file,
                     parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                     parser.problem ? parser.problem : "error", parser.context ? " " : "",
                     parser.context ? parser.context : "");
      goto out_doc;
    }
    yaml_node_t *extra = yaml_document_get_root_node(&next);
    if (extra) {
      khz_loadError(err, errsz, "%s:%zu:%zu: a second YAML document: a scene is one document; "
                     "remove the '---' and what follows, or move it to a file of its own",
                     r.file, extra->start_mark.line + 1, extra->start_mark.column + 1);
      yaml_document_delete(&next);
      goto out_doc;
    }
    yaml_document_delete(&next);
  }

  /* build into a temporary scene */
  khz_scene_defaults(&tmp, r.file);
  tmp.spec = khz_spec_new();
  if (!tmp.spec) {
    khz_loadError(err, errsz, "%s: out of memory", r.file);
    goto out_doc;
  }
  if (khz_scene_root(&r, root, &tmp)) {
    khz_spec_destroy(&tmp.spec);
    goto out_doc;
  }
  *scene = tmp;
  rc = 0;
out_doc:
  yaml_document_delete(&r.doc);
  yaml_parser_delete(&parser);
  return rc;
}

/* reads a whole text file into a NUL-terminated heap buffer */
static char *khz_read_text(const char *path, char *err, size_t errsz) {
  char *buf;
  size_t len;
  if (khz_read_file(path, &buf, &len, err, errsz) < 0) return NULL;
  if (strlen(buf) != len) {
    khz_loadError(err, errsz, "%s: holds a NUL byte, so it is not a text file: give a YAML scene",
                  path);
    free(buf);
    return NULL;
  }
  return buf;
}

int khz_loadScene(khzScene *scene, const char *path, char *err, size_t errsz) {
  char dir[KHZ_PATH_MAX];
  if (!scene || !path) return khz_loadError(err, errsz, "(null): no scene or no path given");
  if (khz_path_dirname(dir, sizeof dir, path)) {
    return khz_loadError(err, errsz, "%s: path too long", path);
  }
  char *text = khz_read_text(path, err, errsz);
  if (!text) return -1;
  int rc = khz_loadSceneString(scene, text, path, dir, err, errsz);
  free(text);
  return rc;
}

int khz_loadDefaultScene(khzScene *scene, char *err, size_t errsz) {
  const char *text = khz_embedded_text("default.yaml");
  if (!text) return khz_loadError(err, errsz, "embedded:default.yaml: not built in");
  return khz_loadSceneString(scene, text, "embedded:default.yaml", NULL, err, errsz);
}

void khz_deleteScene(khzScene *scene) {
  if (!scene) return;
  khz_spec_destroy(&scene->spec);
}

/* ".ext" at the end of path, compared without case */
static int khz_has_ext(const char *path, const char *ext) {
  size_t n = strlen(path), e = strlen(ext);
  return n > e && strcasecmp(path + n - e, ext) == 0;
}

khzModel *khz_loadModel(const char *path, khzScene *scene_out, char *err, size_t errsz) {
  khzScene s;
  if (!path) {
    khz_loadError(err, errsz, "(null): no model given");
    return NULL;
  }

  /* the scene: embedded default, a scene file, or one URDF robot welded at the origin */
  if (strcmp(path, "default") == 0) {
    if (khz_loadDefaultScene(&s, err, errsz)) return NULL;
  } else if (khz_has_ext(path, ".yaml") || khz_has_ext(path, ".yml")) {
    if (khz_loadScene(&s, path, err, errsz)) return NULL;
  } else if (khz_has_ext(path, ".urdf")) {
    khzUrdfOptions opt;
    const double gravity[3] = {0, 0, -9.81};
    khz_scene_defaults(&s, path);
    s.contact.method = KHZ_CONTACT_NONE;
    s.spec = khz_spec_new();
    if (!s.spec) {
      khz_loadError(err, errsz, "%s: out of memory", path);
      return NULL;
    }
    khz_spec_setContact(s.spec, &s.contact);
    khz_spec_setGravity(s.spec, gravity);
    khz_spec_setTimestep(s.spec, 1.0 / s.rate_hz);
    khz_spec_setIntegrator(s.spec, s.integrator);
    khz_urdf_defaultOptions(&opt);
    khzUrdfInfo uinfo;
    memset(&uinfo, 0, sizeof uinfo);
    opt.info = &uinfo;
    if (khz_loadURDF(s.spec, path, &opt, err, errsz) < 0) {
      khz_spec_destroy(&s.spec);
      return NULL;
    }
    char aerr[256];
    int bad = khz_scene_addActuators(&s, uinfo.actuator, uinfo.nactuator, NULL, path, aerr,
                                     sizeof aerr);
    khz_urdf_freeInfo(&uinfo);
    if (bad) {
      khz_loadError(err, errsz, "%s: %s", path, aerr);
      khz_spec_destroy(&s.spec);
      return NULL;
    }
  } else if (khz_has_ext(path, ".xml")) {
    /* an MJCF model: its <option> sets the timestep, gravity and integrator */
    khzMjcfOptions opt;
    khzMjcfInfo info;
    khz_scene_defaults(&s, path);
    s.spec = khz_spec_new();
    if (!s.spec) {
      khz_loadError(err, errsz, "%s: out of memory", path);
      return NULL;
    }
    khz_mjcf_defaultOptions(&opt);
    opt.info = &info;
    if (khz_loadMJCF(s.spec, path, &opt, err, errsz) < 0) {
      khz_spec_destroy(&s.spec);
      return NULL;
    }
    s.rate_hz = 1.0 / info.timestep;
    s.integrator = info.integrator;
    char herr[256];
    int bad = khz_scene_mjcfSensors(&s, &info, path, herr, sizeof herr) ||
              khz_scene_addActuators(&s, info.actuator, info.nactuator, "", path, herr,
                                     sizeof herr);
    khz_mjcf_freeInfo(&info);
    if (bad) {
      khz_loadError(err, errsz, "%s: %s", path, herr);
      khz_spec_destroy(&s.spec);
      return NULL;
    }
  } else {
    khz_loadError(err, errsz,
                   "%s: unknown model type (expected a .urdf or .xml (MJCF) file, a .yaml/.yml "
                   "scene or 'default')",
                   path);
    return NULL;
  }

  /* compile; the caller keeps the scene (and its spec) when it asked for it */
  char cerr[1024];
  khzModel *m = khz_compile(s.spec, cerr, sizeof cerr);
  if (!m) {
    khz_loadError(err, errsz, "%s: %s", path, cerr);
    khz_deleteScene(&s);
    return NULL;
  }
  if (scene_out) {
    *scene_out = s;
  } else {
    khz_deleteScene(&s);
  }
  return m;
}

/* ------------------------------------------------------------ spec edits -- */

int khz_scene_scaleMass(khzScene *scene, const char *body, double factor, char *err,
                        size_t errsz) {
  const char *which = body && body[0] ? body : NULL;
  if (!(factor > 0) || !isfinite(factor)) {
    khz_loadError(err, errsz, "mass scale for '%s': expected a positive finite factor, got %g",
                  which ? which : "*", factor);
    return -1;
  }
  int n = khz_spec_nbody(scene->spec), hit = 0;
  for (int i = 1; i < n; i++) {
    khzBodySpec *b = khz_spec_body(scene->spec, i);
    if (which && strcmp(b->name, which) != 0) continue;
    b->mass *= factor; /* a uniform density change: the inertia scales with the mass */
    for (int k = 0; k < 6; k++) b->inertia[k] *= factor;
    hit++;
  }
  if (!hit) {
    khz_loadError(err, errsz, "mass scale: no body named '%s' in %s: name one of its bodies "
                  "(khz-sim info lists them)", which ? which : "", scene->name);
    return -1;
  }
  return hit;
}

int khz_scene_setFriction(khzScene *scene, double mu, char *err, size_t errsz) {
  if (!(mu >= 0) || !isfinite(mu)) {
    khz_loadError(err, errsz, "friction: expected a finite coefficient >= 0, got %g", mu);
    return -1;
  }
  /* every geom's own coefficient and the scene's default */
  int n = khz_spec_ngeom(scene->spec);
  for (int i = 0; i < n; i++) khz_spec_geom(scene->spec, i)->friction = mu;
  scene->contact.mu = mu;
  khz_spec_setContact(scene->spec, &scene->contact);
  return n;
}

void khz_scene_setSeed(khzScene *scene, uint64_t seed) {
  scene->hil.seed = seed;
  scene->hil.network.seed = seed; /* the network model draws from the hil seed too */
}
