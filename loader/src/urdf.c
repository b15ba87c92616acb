/* urdf.c — the URDF loader: reads a robot description (libxml2) and appends it
 * to a khzSpec as one body per link, in depth-first order from the root link.
 *
 * Semantics follow the URDF specification (wiki.ros.org/urdf/XML) and urdfdom:
 * a link's body frame is the URDF link frame, the joint that has the link as
 * child becomes the body's joint, the joint origin becomes the body origin in
 * the parent frame, and the inertia given in the <inertial> frame is rotated
 * into the link frame. The root link hangs from the world body at the base
 * pose of the options, welded or floating; a root link called "world" is the
 * world itself (ROS convention), so that a URDF can float its base with a
 * floating joint. Floating joints elsewhere and planar joints are refused; a
 * mimic joint becomes a joint equality constraint (KHZ_EQ_JOINT:
 * q = multiplier q_leader + offset, held by rt/src/constraint.c). As in urdfdom, <limit> lower/upper default to 0 and effort/velocity
 * are required; <capsule radius length> is accepted as an extension.
 * Transmissions, Gazebo tags, calibration and safety controllers are ignored;
 * other unknown top-level elements draw a warning.
 *
 * The load is all-or-nothing: everything is parsed and checked into private
 * arrays first, and the spec is touched only at the end (and truncated back if
 * that fails). Warnings are queued and delivered only when the load succeeds.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* relative tolerance on the inertia checks (principal moments vs. trace) */
#define KHZ_URDF_INERTIA_TOL 1e-6

typedef struct urdf_link {
  xmlNodePtr node;
  const char *name;
  int parent_joint; /* joint with this link as child, -1 for a root */
  int first_child;  /* first joint with this link as parent (document order) */
  int last_child;
  int order;        /* position in the depth-first order, -1 until visited */
} urdf_link;

typedef struct urdf_joint {
  xmlNodePtr node;
  const char *name;
  const char *type;
  int parent, child;  /* link indices */
  int next_sibling;   /* next joint with the same parent link */
} urdf_joint;

typedef struct urdf_material {
  const char *name;
  double rgba[4];
} urdf_material;

typedef struct urdf_ctx {
  /* inputs */
  const char *file;
  const char *basedir;
  const khzUrdfOptions *opt;
  char *err;
  size_t errsz;

  /* strings returned by libxml2, freed at the end */
  khzXmlStrings strings; /* attribute values of this parse */

  /* the robot graph */
  urdf_link *links;
  int nlink;
  urdf_joint *joints;
  int njoint;
  urdf_material *mats;
  int nmat, capmat;

  /* what will be appended to the spec (geom body = spec index) */
  khzBodySpec *bodies;
  int nbody;
  khzGeomSpec *geoms;
  int ngeom, capgeom;

  /* meshes read for collision geoms (geom mesh = index here until appended) */
  khzMeshData *meshes;
  char (*mesh_path)[KHZ_PATH_MAX];
  int nmesh, capmesh;

  /* queued warnings */
  char **warns;
  int nwarn, capwarn;

  /* first parser error */
  char xml_msg[256];
  int xml_line;
} urdf_ctx;

/* ------------------------------------------------------------ messages -- */

/* describes an element for messages: <tag name="...">, or <tag> without name */
static void describe(char *out, size_t n, xmlNodePtr node) {
  xmlChar *name = xmlGetProp(node, (const xmlChar *)"name");
  if (name)
    snprintf(out, n, "<%s name=\"%s\">", (const char *)node->name, (const char *)name);
  else
    snprintf(out, n, "<%s>", (const char *)node->name);
  xmlFree(name);
}

/* reports an error: "FILE:LINE: <element name=...>: problem" with LINE taken
 * from node at and the element from node owner; always returns -1 */
static int fail(urdf_ctx *c, xmlNodePtr at, xmlNodePtr owner, const char *fmt, ...)
    KHZ_PRINTF(4, 5);
static int fail(urdf_ctx *c, xmlNodePtr at, xmlNodePtr owner, const char *fmt, ...) {
  char what[256], msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  describe(what, sizeof what, owner ? owner : at);
  return khz_loadError(c->err, c->errsz, "%s:%ld: %s: %s", c->file, xmlGetLineNo(at), what,
                        msg);
}

static int fail_oom(urdf_ctx *c) {
  return khz_loadError(c->err, c->errsz, "%s: out of memory", c->file);
}

/* queues a warning in the same format as fail(); returns 0, or -1 when out of memory */
static int warn(urdf_ctx *c, xmlNodePtr at, xmlNodePtr owner, const char *fmt, ...)
    KHZ_PRINTF(4, 5);
static int warn(urdf_ctx *c, xmlNodePtr at, xmlNodePtr owner, const char *fmt, ...) {
  char what[256], msg[1024], line[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  describe(what, sizeof what, owner ? owner : at);
  snprintf(line, sizeof line, "%s:%ld: %s: %s", c->file, xmlGetLineNo(at), what, msg);

  /* keep a copy until the load succeeds */
  if (c->nwarn == c->capwarn) {
    int cap = c->capwarn ? 2 * c->capwarn : 8;
    char **w = realloc(c->warns, (size_t)cap * sizeof *w);
    if (!w) return fail_oom(c);
    c->warns = w;
    c->capwarn = cap;
  }
  char *copy = strdup(line);
  if (!copy) return fail_oom(c);
  c->warns[c->nwarn++] = copy;
  return 0;
}

/* the libxml2 structured error handler: keeps the first error, prints nothing */
static void xml_error(void *user, xmlErrorPtr e) {
  xmlParserCtxtPtr ctxt = user;
  urdf_ctx *c = ctxt ? ctxt->_private : NULL;
  if (!c || !e || e->level < XML_ERR_ERROR || c->xml_msg[0]) return;
  snprintf(c->xml_msg, sizeof c->xml_msg, "%s", e->message ? e->message : "parse error");
  size_t len = strlen(c->xml_msg);
  while (len > 0 && (c->xml_msg[len - 1] == '\n' || c->xml_msg[len - 1] == ' '))
    c->xml_msg[--len] = 0;
  c->xml_line = e->line;
}

static void warn_stderr(void *user, const char *message) {
  (void)user;
  fprintf(stderr, "khz: warning: %s\n", message);
}

/* ------------------------------------------------------------- helpers -- */

static int is(xmlNodePtr n, const char *name) {
  return n && n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

/* first element child called name, or NULL */
static xmlNodePtr child(xmlNodePtr n, const char *name) {
  for (xmlNodePtr k = n->children; k; k = k->next)
    if (is(k, name)) return k;
  return NULL;
}

/* an attribute's value, owned by the context (NULL when absent or out of memory) */
static const char *attr(urdf_ctx *c, xmlNodePtr n, const char *name) {
  return khz_xml_attr(&c->strings, n, name);
}

/* reads attribute name of n as count numbers into out; when absent, out is left
 * as it is (the default) unless the attribute is required */
static int attr_doubles(urdf_ctx *c, xmlNodePtr n, xmlNodePtr owner, const char *name,
                        double *out, int count, int required) {
  const char *v = attr(c, n, name);
  if (!v) {
    if (required)
      return fail(c, n, owner, "<%s> needs the attribute %s", (const char *)n->name, name);
    return 0;
  }
  if (khz_parse_doubles(v, out, count) != 0)
    return fail(c, n, owner, "<%s>: %s=\"%s\" is not %d finite number%s",
                (const char *)n->name, name, v, count, count > 1 ? "s" : "");
  return 0;
}

/* the pose of an optional <origin xyz rpy> child of n: position and quaternion
 * (and the rotation matrix when mat is not NULL) */
static int parse_origin(urdf_ctx *c, xmlNodePtr n, xmlNodePtr owner, double pos[3],
                        double quat[4], double mat[9]) {
  double rpy[3] = {0, 0, 0};
  pos[0] = pos[1] = pos[2] = 0;
  xmlNodePtr o = child(n, "origin");
  if (o && (attr_doubles(c, o, owner, "xyz", pos, 3, 0) ||
            attr_doubles(c, o, owner, "rpy", rpy, 3, 0)))
    return -1;
  khz_rpy2quat(rpy, quat);
  if (mat) khz_rpy2mat(rpy, mat);
  return 0;
}

/* copies prefix + name into out[KHZ_NAME_MAX] */
static int make_name(urdf_ctx *c, xmlNodePtr at, char out[KHZ_NAME_MAX], const char *name) {
  const char *prefix = c->opt->name_prefix ? c->opt->name_prefix : "";
  if (snprintf(out, KHZ_NAME_MAX, "%s%s", prefix, name) >= KHZ_NAME_MAX)
    return fail(c, at, NULL, "name \"%s%s\" is longer than %d characters", prefix, name,
                KHZ_NAME_MAX - 1);
  return 0;
}

static int find_link(const urdf_ctx *c, const char *name) {
  for (int i = 0; i < c->nlink; i++)
    if (strcmp(c->links[i].name, name) == 0) return i;
  return -1;
}

static const urdf_material *find_material(const urdf_ctx *c, const char *name) {
  for (int i = 0; i < c->nmat; i++)
    if (strcmp(c->mats[i].name, name) == 0) return &c->mats[i];
  return NULL;
}

/* records a named material that carries a color (the first definition wins) */
static int add_material(urdf_ctx *c, xmlNodePtr m, xmlNodePtr owner) {
  const char *name = attr(c, m, "name");
  xmlNodePtr color = child(m, "color");
  if (!color) return 0;
  double rgba[4];
  if (attr_doubles(c, color, owner, "rgba", rgba, 4, 1)) return -1;
  if (!name || !name[0] || find_material(c, name)) return 0;
  if (c->nmat == c->capmat) {
    int cap = c->capmat ? 2 * c->capmat : 16;
    urdf_material *mm = realloc(c->mats, (size_t)cap * sizeof *mm);
    if (!mm) return fail_oom(c);
    c->mats = mm;
    c->capmat = cap;
  }
  c->mats[c->nmat].name = name;
  memcpy(c->mats[c->nmat].rgba, rgba, sizeof rgba);
  c->nmat++;
  return 0;
}

/* ------------------------------------------------------------- inertia -- */


/* <inertial>: mass, com and the inertia rotated into the link frame */
static int parse_inertial(urdf_ctx *c, xmlNodePtr link, khzBodySpec *b) {
  xmlNodePtr in = child(link, "inertial");
  if (!in) return 0;

  /* mass */
  xmlNodePtr mass = child(in, "mass");
  if (!mass) return fail(c, in, link, "<inertial> needs a <mass value=...>");
  if (attr_doubles(c, mass, link, "value", &b->mass, 1, 1)) return -1;
  if (b->mass < 0) return fail(c, mass, link, "negative mass %g", b->mass);

  /* inertia in the inertial frame */
  xmlNodePtr inertia = child(in, "inertia");
  if (!inertia) return fail(c, in, link, "<inertial> needs an <inertia ixx=... izz=...>");
  static const char *const names[6] = {"ixx", "ixy", "ixz", "iyy", "iyz", "izz"};
  double v[6];
  for (int k = 0; k < 6; k++)
    if (attr_doubles(c, inertia, link, names[k], &v[k], 1, 1)) return -1;
  double I[9] = {v[0], v[1], v[2], v[1], v[3], v[4], v[2], v[4], v[5]};

  /* rotate into the link frame: I_body = R I R^T */
  double quat[4], R[9], RI[9], Ib[9];
  if (parse_origin(c, in, link, b->com, quat, R)) return -1;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      RI[3 * i + j] = R[3 * i] * I[j] + R[3 * i + 1] * I[3 + j] + R[3 * i + 2] * I[6 + j];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      Ib[3 * i + j] = RI[3 * i] * R[3 * j] + RI[3 * i + 1] * R[3 * j + 1] +
                      RI[3 * i + 2] * R[3 * j + 2];
  b->inertia[0] = Ib[0];
  b->inertia[1] = Ib[4];
  b->inertia[2] = Ib[8];
  b->inertia[3] = 0.5 * (Ib[1] + Ib[3]);
  b->inertia[4] = 0.5 * (Ib[2] + Ib[6]);
  b->inertia[5] = 0.5 * (Ib[5] + Ib[7]);

  /* a massless link may have no inertia at all; otherwise it must be physical */
  int zero = 1;
  for (int k = 0; k < 6; k++) zero &= v[k] == 0;
  if (zero && b->mass == 0) return 0;
  double ev[3];
  khz_eig3(Ib, ev, NULL);
  double tr = ev[0] + ev[1] + ev[2];
  double tol = KHZ_URDF_INERTIA_TOL * fabs(tr);
  double lmin = fmin(ev[0], fmin(ev[1], ev[2]));
  if (!(tr > 0) || lmin <= 1e-12 * tr)
    return fail(c, inertia, link,
                "inertia is not positive definite (principal moments %g %g %g)", ev[0], ev[1],
                ev[2]);
  for (int k = 0; k < 3; k++)
    if (ev[k] > ev[(k + 1) % 3] + ev[(k + 2) % 3] + tol)
      return fail(c, inertia, link,
                  "inertia violates the triangle inequality (principal moments %g %g %g)",
                  ev[0], ev[1], ev[2]);
  return 0;
}

/* ------------------------------------------------------------ geometry -- */

/* one <collision> or <visual> element of a link, for spec body index body */
static int parse_geom(urdf_ctx *c, xmlNodePtr link, xmlNodePtr el, int body, int visual) {
  khzGeomSpec g;
  khz_spec_defaultGeom(&g);
  g.body = body;
  g.visual = visual;
  if (parse_origin(c, el, link, g.pos, g.quat, NULL)) return -1;

  /* one shape inside <geometry>: as urdfdom, the first one counts; further
   * shapes, an empty <geometry> or an unknown shape leave out what they are
   * with a warning, not the robot */
  xmlNodePtr geo = child(el, "geometry");
  const char *kind = visual ? "visual" : "collision";
  if (!geo)
    return warn(c, el, link, "<%s> has no <geometry>: this %s geom is left out",
                (const char *)el->name, kind);
  xmlNodePtr s = NULL;
  for (xmlNodePtr k = geo->children; k; k = k->next)
    if (k->type == XML_ELEMENT_NODE) {
      if (s) {
        if (warn(c, k, link, "<geometry> holds more than one shape: <%s> is left out (the first, "
                 "<%s>, is used; give each shape its own <%s>)", (const char *)k->name,
                 (const char *)s->name, (const char *)el->name))
          return -1;
        continue;
      }
      s = k;
    }
  if (!s) return warn(c, geo, link, "<geometry> holds no shape: this %s geom is left out", kind);

  /* the shape */
  if (is(s, "box")) {
    g.type = KHZ_GEOM_BOX;
    if (attr_doubles(c, s, link, "size", g.size, 3, 1)) return -1;
    for (int k = 0; k < 3; k++) g.size[k] *= 0.5;
  } else if (is(s, "sphere")) {
    g.type = KHZ_GEOM_SPHERE;
    if (attr_doubles(c, s, link, "radius", g.size, 1, 1)) return -1;
  } else if (is(s, "cylinder") || is(s, "capsule")) {
    g.type = is(s, "cylinder") ? KHZ_GEOM_CYLINDER : KHZ_GEOM_CAPSULE;
    if (attr_doubles(c, s, link, "radius", &g.size[0], 1, 1) ||
        attr_doubles(c, s, link, "length", &g.size[1], 1, 1))
      return -1;
    g.size[1] *= 0.5;
  } else if (is(s, "mesh")) {
    g.type = KHZ_GEOM_MESH;
    g.size[0] = g.size[1] = g.size[2] = 1;
    const char *file = attr(c, s, "filename");
    if (!file || !file[0]) return fail(c, s, link, "<mesh> needs a filename: add filename=\"package://PKG/PATH\" or a path relative to the URDF");
    if (attr_doubles(c, s, link, "scale", g.size, 3, 0)) return -1;

    /* a mesh that cannot be found drops this geom only, with a warning */
    char tried[1024];
    if (khz_resolve_path(g.meshfile, sizeof g.meshfile, file, c->basedir, c->opt->package_path, tried,
                         sizeof tried) != 0)
      return warn(c, s, link, "mesh \"%s\" not found (tried %s); %s geom dropped", file,
                  tried[0] ? tried : "nothing", visual ? "visual" : "collision");

    /* a collision mesh is read now (once per file) and collides as its convex hull;
     * one that cannot be read drops this geom only, with a warning */
    if (!visual) {
      int k = 0;
      while (k < c->nmesh && strcmp(c->mesh_path[k], g.meshfile) != 0) k++;
      if (k == c->nmesh) {
        char merr[KHZ_PATH_MAX + 256];
        khzMeshData md;
        if (khz_mesh_read(g.meshfile, &md, merr, sizeof merr) < 0)
          return warn(c, s, link, "mesh \"%s\": %s; collision geom dropped", file, merr);
        if (c->nmesh == c->capmesh) {
          int cap = c->capmesh ? 2 * c->capmesh : 8;
          khzMeshData *nm = realloc(c->meshes, (size_t)cap * sizeof *nm);
          char(*np)[KHZ_PATH_MAX] = nm ? realloc(c->mesh_path, (size_t)cap * sizeof *np) : NULL;
          if (nm) c->meshes = nm;
          if (!nm || !np) {
            khz_mesh_free(&md);
            return fail_oom(c);
          }
          c->mesh_path = np;
          c->capmesh = cap;
        }
        c->meshes[k] = md;
        snprintf(c->mesh_path[k], KHZ_PATH_MAX, "%s", g.meshfile);
        c->nmesh++;
      }
      g.mesh = k;
      g.convex = 1;
    }
  } else {
    return warn(c, s, link, "unknown shape <%s> (URDF has box, sphere, cylinder, mesh; khz also "
                "capsule): this %s geom is left out", (const char *)s->name, kind);
  }

  /* sizes must be positive */
  int nsize = g.type == KHZ_GEOM_SPHERE ? 1
              : g.type == KHZ_GEOM_BOX || g.type == KHZ_GEOM_MESH ? 3
                                                                  : 2;
  for (int k = 0; k < nsize; k++)
    if (!(g.size[k] >= 0))
      return fail(c, s, link, "<%s>: dimensions must be positive", (const char *)s->name);
  for (int k = 0; k < nsize; k++)
    if (g.size[k] == 0) /* a placeholder shape (pybullet's zero-radius toes): skipped */
      return warn(c, s, link, "<%s>: size 0: this %s geom is left out", (const char *)s->name,
                  visual ? "visual" : "collision");

  /* the color of a visual: inline, or a material defined elsewhere by name */
  xmlNodePtr mat = visual ? child(el, "material") : NULL;
  if (mat) {
    xmlNodePtr color = child(mat, "color");
    const char *name = attr(c, mat, "name");
    const urdf_material *m = name ? find_material(c, name) : NULL;
    if (color) {
      if (attr_doubles(c, color, link, "rgba", g.rgba, 4, 1)) return -1;
    } else if (m) {
      memcpy(g.rgba, m->rgba, sizeof g.rgba);
    }
  }

  /* keep it */
  if (c->ngeom == c->capgeom) {
    int cap = c->capgeom ? 2 * c->capgeom : 16;
    khzGeomSpec *gg = realloc(c->geoms, (size_t)cap * sizeof *gg);
    if (!gg) return fail_oom(c);
    c->geoms = gg;
    c->capgeom = cap;
  }
  c->geoms[c->ngeom++] = g;
  return 0;
}

/* --------------------------------------------------------------- joints -- */

/* fills the joint part of body b from URDF joint j */
static int parse_joint(urdf_ctx *c, const urdf_joint *j, khzBodySpec *b) {
  xmlNodePtr n = j->node;
  if (make_name(c, n, b->joint_name, j->name)) return -1;
  if (parse_origin(c, n, n, b->pos, b->quat, NULL)) return -1;

  /* type */
  const char *t = j->type;
  if (strcmp(t, "revolute") == 0)
    b->joint_type = KHZ_JOINT_REVOLUTE;
  else if (strcmp(t, "continuous") == 0)
    b->joint_type = KHZ_JOINT_CONTINUOUS;
  else if (strcmp(t, "prismatic") == 0)
    b->joint_type = KHZ_JOINT_PRISMATIC;
  else if (strcmp(t, "fixed") == 0)
    b->joint_type = KHZ_JOINT_FIXED;
  else if (strcmp(t, "floating") == 0)
    b->joint_type = KHZ_JOINT_FLOATING;
  else if (strcmp(t, "planar") == 0)
    return fail(c, n, n, "planar joints are not supported: model the plane as two prismatic joints and a revolute one through two massless links");
  else
    return fail(c, n, n, "unknown joint type \"%s\": use revolute, continuous, prismatic, fixed or floating", t);
  int moving_1dof = b->joint_type == KHZ_JOINT_REVOLUTE ||
                    b->joint_type == KHZ_JOINT_CONTINUOUS ||
                    b->joint_type == KHZ_JOINT_PRISMATIC;

  /* axis: default x, unit, never zero for a moving joint */
  b->axis[0] = 1;
  b->axis[1] = b->axis[2] = 0;
  xmlNodePtr ax = child(n, "axis");
  if (ax && attr_doubles(c, ax, n, "xyz", b->axis, 3, 0)) return -1;
  if (moving_1dof) {
    double len = sqrt(b->axis[0] * b->axis[0] + b->axis[1] * b->axis[1] + b->axis[2] * b->axis[2]);
    if (!(len > 1e-9)) return fail(c, ax ? ax : n, n, "the joint axis is zero: give <axis xyz=\"...\"> a non-zero direction");
    for (int k = 0; k < 3; k++) b->axis[k] /= len;
  }

  /* limits: required for revolute and prismatic joints */
  xmlNodePtr lim = child(n, "limit");
  if (!lim && (b->joint_type == KHZ_JOINT_REVOLUTE || b->joint_type == KHZ_JOINT_PRISMATIC))
    return fail(c, n, n, "a %s joint needs <limit lower upper effort velocity>", t);
  if (lim && moving_1dof) {
    if (attr_doubles(c, lim, n, "effort", &b->effort_limit, 1, 1) ||
        attr_doubles(c, lim, n, "velocity", &b->velocity_limit, 1, 1))
      return -1;
    if (b->effort_limit < 0 || b->velocity_limit < 0)
      return fail(c, lim, n, "<limit>: effort and velocity must not be negative");
    if (b->joint_type != KHZ_JOINT_CONTINUOUS) {
      b->lower = b->upper = 0;
      if (attr_doubles(c, lim, n, "lower", &b->lower, 1, 0) ||
          attr_doubles(c, lim, n, "upper", &b->upper, 1, 0))
        return -1;
      if (b->lower > b->upper)
        return fail(c, lim, n, "<limit>: lower %g is greater than upper %g: swap them", b->lower, b->upper);
      b->limited = 1;
    }
  }

  /* dynamics */
  xmlNodePtr dyn = child(n, "dynamics");
  if (dyn && moving_1dof) {
    if (attr_doubles(c, dyn, n, "damping", &b->damping, 1, 0) ||
        attr_doubles(c, dyn, n, "friction", &b->friction, 1, 0))
      return -1;
    if (b->damping < 0 || b->friction < 0)
      return fail(c, dyn, n, "<dynamics>: damping and friction must not be negative");
  }

  return 0;
}

/* --------------------------------------------------------------- graph -- */

/* collects links, joints and top-level materials; checks names and the tree */
static int read_graph(urdf_ctx *c, xmlNodePtr robot) {
  int nl = 0, nj = 0;
  for (xmlNodePtr k = robot->children; k; k = k->next) {
    nl += is(k, "link");
    nj += is(k, "joint");
  }
  if (nl == 0) return fail(c, robot, NULL, "the robot has no <link>");
  c->links = calloc((size_t)nl, sizeof *c->links);
  c->joints = calloc((size_t)(nj ? nj : 1), sizeof *c->joints);
  if (!c->links || !c->joints) return fail_oom(c);

  /* links, joints and materials in document order */
  for (xmlNodePtr k = robot->children; k; k = k->next) {
    if (k->type != XML_ELEMENT_NODE) continue;
    if (is(k, "link")) {
      const char *name = attr(c, k, "name");
      if (!name || !name[0]) return fail(c, k, NULL, "a link needs a name");
      int dup = find_link(c, name);
      if (dup >= 0)
        return fail(c, k, NULL, "duplicate link name (first defined at line %ld)",
                    xmlGetLineNo(c->links[dup].node));
      urdf_link *l = &c->links[c->nlink++];
      l->node = k;
      l->name = name;
      l->parent_joint = l->first_child = l->last_child = -1;
      l->order = -1;
    } else if (is(k, "joint")) {
      const char *name = attr(c, k, "name");
      if (!name || !name[0]) return fail(c, k, NULL, "a joint needs a name");
      for (int i = 0; i < c->njoint; i++)
        if (strcmp(c->joints[i].name, name) == 0)
          return fail(c, k, NULL, "duplicate joint name (first defined at line %ld)",
                      xmlGetLineNo(c->joints[i].node));
      urdf_joint *j = &c->joints[c->njoint++];
      j->node = k;
      j->name = name;
      j->type = attr(c, k, "type");
      if (!j->type) return fail(c, k, NULL, "a joint needs a type: add type=\"revolute\" (or continuous, prismatic, fixed, floating)");
      j->next_sibling = -1;
    } else if (is(k, "material")) {
      if (add_material(c, k, k)) return -1;
    } else if (!is(k, "transmission") && !is(k, "gazebo") && !is(k, "ros2_control")) {
      if (warn(c, k, NULL, "unknown element ignored")) return -1;
    }
  }

  /* named materials defined inside visuals are usable elsewhere too */
  for (int i = 0; i < c->nlink; i++)
    for (xmlNodePtr v = c->links[i].node->children; v; v = v->next)
      if (is(v, "visual") && child(v, "material") &&
          add_material(c, child(v, "material"), c->links[i].node))
        return -1;

  /* connect joints to their links */
  for (int i = 0; i < c->njoint; i++) {
    urdf_joint *j = &c->joints[i];
    xmlNodePtr pn = child(j->node, "parent"), cn = child(j->node, "child");
    if (!pn || !cn) return fail(c, j->node, NULL, "a joint needs <parent link> and <child link>");
    const char *pname = attr(c, pn, "link"), *cname = attr(c, cn, "link");
    if (!pname) return fail(c, pn, j->node, "<parent> needs a link");
    if (!cname) return fail(c, cn, j->node, "<child> needs a link");
    j->parent = find_link(c, pname);
    j->child = find_link(c, cname);
    if (j->parent < 0) return fail(c, pn, j->node, "unknown parent link \"%s\": no <link name=\"%s\"> in the robot (names are case-sensitive)", pname, pname);
    if (j->child < 0) return fail(c, cn, j->node, "unknown child link \"%s\": no <link name=\"%s\"> in the robot (names are case-sensitive)", cname, cname);
    if (j->parent == j->child)
      return fail(c, j->node, NULL, "kinematic loop: link \"%s\" is its own parent", pname);
    urdf_link *cl = &c->links[j->child];
    if (cl->parent_joint >= 0)
      return fail(c, cn, j->node, "link \"%s\" is already the child of joint \"%s\" (line %ld)",
                  cname, c->joints[cl->parent_joint].name,
                  xmlGetLineNo(c->joints[cl->parent_joint].node));
    cl->parent_joint = i;

    /* children of a link in document order */
    urdf_link *pl = &c->links[j->parent];
    if (pl->last_child < 0)
      pl->first_child = i;
    else
      c->joints[pl->last_child].next_sibling = i;
    pl->last_child = i;
  }

  /* exactly one root */
  int root = -1;
  for (int i = 0; i < c->nlink; i++)
    if (c->links[i].parent_joint < 0) {
      if (root >= 0)
        return fail(c, c->links[i].node, NULL,
                    "more than one root link (\"%s\" and \"%s\" have no parent joint)",
                    c->links[root].name, c->links[i].name);
      root = i;
    }
  if (root < 0) {
    const urdf_joint *j = &c->joints[c->links[0].parent_joint];
    return fail(c, j->node, NULL, "kinematic loop: every link has a parent joint");
  }
  return root;
}

/* depth-first order from the root, children in document order; returns the
 * link indices in order (nlink of them) or NULL */
static int *dfs_order(urdf_ctx *c, int root) {
  int *order = malloc((size_t)c->nlink * sizeof *order);
  int *stack = malloc((size_t)c->nlink * sizeof *stack);
  if (!order || !stack) {
    free(order);
    free(stack);
    fail_oom(c);
    return NULL;
  }

  /* preorder with an explicit stack; children pushed last-first */
  int n = 0, top = 0;
  stack[top++] = root;
  while (top > 0) {
    int l = stack[--top];
    c->links[l].order = n;
    order[n++] = l;
    int nchild = 0;
    for (int j = c->links[l].first_child; j >= 0; j = c->joints[j].next_sibling) nchild++;
    int at = top + nchild;
    for (int j = c->links[l].first_child; j >= 0; j = c->joints[j].next_sibling)
      stack[--at] = c->joints[j].child;
    top += nchild;
  }
  free(stack);

  /* links not reached hang in a loop of their own */
  if (n < c->nlink) {
    for (int i = 0; i < c->nlink; i++)
      if (c->links[i].order < 0) {
        const urdf_joint *j = &c->joints[c->links[i].parent_joint];
        fail(c, j->node, NULL, "kinematic loop through link \"%s\" (not connected to root \"%s\")",
             c->links[i].name, c->links[root].name);
        break;
      }
    free(order);
    return NULL;
  }
  return order;
}

/* ---------------------------------------------------------------- load -- */

/* checks a name against the bodies (or joints) already in the spec */
static int name_taken(khzSpec *spec, int nbody0, const char *name, int joint) {
  if (!name[0]) return 0;
  for (int i = 0; i < nbody0; i++) {
    const khzBodySpec *b = khz_spec_body(spec, i);
    if (strcmp(joint ? b->joint_name : b->name, name) == 0) return 1;
  }
  return 0;
}

/* parses the document into c->bodies and c->geoms; returns 0 or -1. A root
 * link called "world" stands for the world body itself (the ROS convention):
 * it adds no body, its geoms go to body 0 and its joints attach to body 0, so
 * that a URDF may say how it is attached (e.g. a floating joint). */
static int build(urdf_ctx *c, xmlDocPtr doc, khzSpec *spec, int nbody0) {
  xmlNodePtr robot = xmlDocGetRootElement(doc);
  if (!robot) return khz_loadError(c->err, c->errsz, "%s: missing <robot>", c->file);
  if (!is(robot, "robot"))
    return fail(c, robot, NULL, "the root element must be <robot>: is this a URDF file? (xacro files must be expanded first: xacro FILE > robot.urdf)");

  /* the tree */
  int root = read_graph(c, robot);
  if (root < 0) return -1;
  int world = strcmp(c->links[root].name, "world") == 0;
  if (world && c->nlink == 1)
    return fail(c, c->links[root].node, NULL, "the robot has no link besides \"world\"");
  int *order = dfs_order(c, root);
  if (!order) return -1;
  c->bodies = calloc((size_t)c->nlink, sizeof *c->bodies);
  if (!c->bodies) {
    free(order);
    return fail_oom(c);
  }

  /* one body per link, parents first */
  const khzUrdfOptions *o = c->opt;
  for (int i = 0; i < c->nlink; i++) {
    const urdf_link *l = &c->links[order[i]];
    int body = i == 0 && world ? 0 : nbody0 + i - world;
    if (body == 0) {
      /* the world link: geoms only */
      if (child(l->node, "inertial") &&
          warn(c, child(l->node, "inertial"), l->node, "the inertial of the world is ignored"))
        goto fail;
      for (xmlNodePtr g = l->node->children; g; g = g->next)
        if ((is(g, "collision") || is(g, "visual")) &&
            parse_geom(c, l->node, g, 0, is(g, "visual")))
          goto fail;
      continue;
    }
    khzBodySpec *b = &c->bodies[c->nbody++];
    khz_spec_defaultBody(b);
    if (make_name(c, l->node, b->name, l->name)) goto fail;
    if (name_taken(spec, nbody0, b->name, 0)) {
      fail(c, l->node, NULL, "a body called \"%s\" is already in the model (use a name prefix)",
           b->name);
      goto fail;
    }

    if (l->parent_joint < 0) {
      /* the root: welded or floating at the base pose */
      b->parent = 0;
      if (o->floating_base) {
        b->joint_type = KHZ_JOINT_FLOATING;
        char jname[KHZ_NAME_MAX * 2];
        snprintf(jname, sizeof jname, "%s_floating", l->name);
        if (make_name(c, l->node, b->joint_name, jname)) goto fail;
        for (int j = 0; j < c->njoint; j++)
          if (strcmp(c->joints[j].name, jname) == 0) {
            fail(c, c->joints[j].node, NULL, "joint name clashes with the floating base joint");
            goto fail;
          }
        memcpy(b->q0, o->base_pos, 3 * sizeof(double));
        memcpy(b->q0 + 3, o->base_quat, 4 * sizeof(double));
      } else {
        b->joint_type = KHZ_JOINT_FIXED;
        memcpy(b->pos, o->base_pos, 3 * sizeof(double));
        memcpy(b->quat, o->base_quat, 4 * sizeof(double));
      }
    } else {
      /* the joint that has this link as child; below "world" it sits at the base pose */
      const urdf_joint *j = &c->joints[l->parent_joint];
      int on_world = world && j->parent == root;
      b->parent = on_world ? 0 : nbody0 + c->links[j->parent].order - world;
      if (parse_joint(c, j, b)) goto fail;
      if (on_world) khz_pose_compose(b->pos, b->quat, o->base_pos, o->base_quat, b->pos, b->quat);

      /* a floating joint starts at its origin: q0 holds the pose, the origin is identity */
      if (b->joint_type == KHZ_JOINT_FLOATING) {
        if (!on_world) {
          fail(c, j->node, NULL,
               "a floating joint must have the world as parent (the root link, or a root "
               "link called \"world\")");
          goto fail;
        }
        memcpy(b->q0, b->pos, 3 * sizeof(double));
        memcpy(b->q0 + 3, b->quat, 4 * sizeof(double));
        b->pos[0] = b->pos[1] = b->pos[2] = 0;
        b->quat[0] = 1;
        b->quat[1] = b->quat[2] = b->quat[3] = 0;
      }
    }
    if (name_taken(spec, nbody0, b->joint_name, 1)) {
      fail(c, l->parent_joint < 0 ? l->node : c->joints[l->parent_joint].node, NULL,
           "a joint called \"%s\" is already in the model (use a name prefix)", b->joint_name);
      goto fail;
    }

    /* mass properties and geometry in document order */
    if (parse_inertial(c, l->node, b)) goto fail;
    if (b->mass == 0 && (b->inertia[0] != 0 || b->inertia[1] != 0 || b->inertia[2] != 0)) {
      if (l->parent_joint < 0 && !o->floating_base) {
        /* welded to the world, its inertia has no effect: MuJoCo fuses it too */
        memset(b->inertia, 0, sizeof b->inertia);
      } else if (l->parent_joint >= 0) {
        /* an inertia without mass is no rigid body: dropped */
        if (warn(c, l->node, NULL,
                 "inertia without mass: the link is massless in khz (its inertia is dropped)"))
          goto fail;
        memset(b->inertia, 0, sizeof b->inertia);
      } else {
        fail(c, l->node, NULL,
             "the root link has inertia but zero mass: as a floating base it needs a mass "
             "(welded to the world it would be fused with it)");
        goto fail;
      }
    }
    for (xmlNodePtr g = l->node->children; g; g = g->next)
      if ((is(g, "collision") || is(g, "visual")) &&
          parse_geom(c, l->node, g, body, is(g, "visual")))
        goto fail;
  }

  /* a floating base needs mass in its rigid part (the root and what is fixed
   * to it): without it its articulated inertia is singular and the first
   * step is not finite */
  if (o->floating_base) {
    int root = -1;
    double rigid_mass = 0;
    char *rigid = calloc((size_t)c->nbody + 1, 1);
    if (!rigid) {
      fail_oom(c);
      goto fail;
    }
    for (int k = 0; k < c->nbody; k++) {
      const khzBodySpec *b = &c->bodies[k];
      int p = b->parent - nbody0; /* local index of the parent, < 0 for the world */
      rigid[k] = b->joint_type == KHZ_JOINT_FLOATING ||
                 (b->joint_type == KHZ_JOINT_FIXED && p >= 0 && p < k && rigid[p]);
      if (b->joint_type == KHZ_JOINT_FLOATING) root = k;
      if (rigid[k]) rigid_mass += b->mass;
    }
    free(rigid);
    const urdf_link *rl = NULL;
    for (int i = 0; i < c->nlink && !rl; i++)
      if (c->links[i].parent_joint < 0 && strcmp(c->links[i].name, "world") != 0) rl = &c->links[i];
    if (root >= 0 && rigid_mass <= 0 && c->nbody > 1 && rl) {
      fail(c, rl->node, NULL,
           "the root link and the links fixed to it have no mass: as a floating base it needs "
           "a mass (or load the robot welded to the world)");
      goto fail;
    }
  }
  free(order);

  /* geoms of the world link sit at the base pose */
  for (int i = 0; i < c->ngeom; i++)
    if (c->geoms[i].body == 0)
      khz_pose_compose(c->geoms[i].pos, c->geoms[i].quat, o->base_pos, o->base_quat,
                       c->geoms[i].pos, c->geoms[i].quat);
  return 0;

fail:
  free(order);
  return -1;
}

/* --------------------------------------------------------- ros2_control -- */

/* <param name="NAME">VALUE</param> of an interface as a number: 1 when found
 * (into *out), 0 when absent, -1 (error set) when not one finite number */
static int iface_param(urdf_ctx *c, xmlNodePtr iface, const char *name, double *out) {
  for (xmlNodePtr p = iface->children; p; p = p->next) {
    if (!is(p, "param")) continue;
    const char *pn = attr(c, p, "name");
    if (!pn || strcmp(pn, name) != 0) continue;
    xmlChar *text = xmlNodeGetContent(p);
    int ok = text && khz_parse_doubles((const char *)text, out, 1) == 0;
    char shown[64];
    snprintf(shown, sizeof shown, "%s", text ? (const char *)text : "");
    xmlFree(text);
    if (!ok)
      return fail(c, p, iface, "<param name=\"%s\">%s</param> is not one finite number", name,
                  shown);
    return 1;
  }
  return 0;
}

/* the first of the names that the interface has as a <param>: as iface_param */
static int iface_param_any(urdf_ctx *c, xmlNodePtr iface, const char *const *names, double *out) {
  for (int i = 0; names[i]; i++) {
    int r = iface_param(c, iface, names[i], out);
    if (r) return r;
  }
  return 0;
}

static int add_actuator(urdf_ctx *c, khzUrdfInfo *info, const khzMjcfActuator *a) {
  khzMjcfActuator *n = realloc(info->actuator, (size_t)(info->nactuator + 1) * sizeof *n);
  if (!n) return fail_oom(c);
  info->actuator = n;
  n[info->nactuator++] = *a;
  return 0;
}

/* reads every <ros2_control> of the robot into info (actuators and state
 * interfaces) and the state interfaces' initial values into the bodies' q0 /
 * qd0; info may be NULL (the initial values are still read) */
static int read_ros2_control(urdf_ctx *c, xmlNodePtr robot, khzUrdfInfo *info) {
  static const char *const kp_names[] = {"kp", "p", NULL}, *const kd_names[] = {"kd", "d", "kv", NULL};
  int warned_gains = 0;
  for (xmlNodePtr rc = robot->children; rc; rc = rc->next) {
    if (!is(rc, "ros2_control")) continue;
    const char *hw = attr(c, rc, "name");
    if (info && !info->hardware[0] && hw) snprintf(info->hardware, sizeof info->hardware, "%s", hw);
    for (xmlNodePtr j = rc->children; j; j = j->next) {
      if (j->type != XML_ELEMENT_NODE || is(j, "hardware")) continue;
      if (!is(j, "joint")) {
        if (warn(c, j, rc, "<%s> is not read by khz (only <joint> interfaces are): left out",
                 (const char *)j->name))
          return -1;
        continue;
      }
      const char *jn = attr(c, j, "name");
      if (!jn || !jn[0]) return fail(c, j, rc, "a ros2_control <joint> needs a name");
      char full[KHZ_NAME_MAX];
      if (make_name(c, j, full, jn)) return -1;
      khzBodySpec *b = NULL;
      for (int k = 0; k < c->nbody; k++)
        if (strcmp(c->bodies[k].joint_name, full) == 0) b = &c->bodies[k];
      if (!b)
        return fail(c, j, rc, "the robot has no joint \"%s\": name one of the URDF's <joint>s "
                    "(or remove this <joint> from <ros2_control>)", jn);
      int scalar = b->joint_type == KHZ_JOINT_REVOLUTE || b->joint_type == KHZ_JOINT_CONTINUOUS ||
                   b->joint_type == KHZ_JOINT_PRISMATIC;
      if (!scalar)
        return fail(c, j, rc, "joint \"%s\" is %s: ros2_control interfaces need a revolute, "
                    "continuous or prismatic joint", jn,
                    b->joint_type == KHZ_JOINT_FIXED ? "fixed" : "floating");
      double E = b->effort_limit;
      for (xmlNodePtr f = j->children; f; f = f->next) {
        int cmd = is(f, "command_interface"), st = is(f, "state_interface");
        if (f->type != XML_ELEMENT_NODE || is(f, "param")) continue;
        if (!cmd && !st) {
          if (warn(c, f, j, "not read by khz: left out")) return -1;
          continue;
        }
        const char *in = attr(c, f, "name");
        if (!in || !in[0]) return fail(c, f, j, "an interface needs a name");
        int kind = strcmp(in, "position") == 0 ? 1 : strcmp(in, "velocity") == 0 ? 2
                   : strcmp(in, "effort") == 0 ? 3 : 0;
        if (!kind) {
          if (warn(c, f, j, "interface \"%s\" of joint \"%s\": khz has position, velocity and "
                   "effort interfaces only: left out", in, jn))
            return -1;
          continue;
        }
        if (st) {
          double v;
          int r = iface_param(c, f, "initial_value", &v);
          if (r < 0) return -1;
          if (r && kind == 1) b->q0[0] = v;
          if (r && kind == 2) b->qd0[0] = v;
          if (r && kind == 3 &&
              warn(c, f, j, "initial_value of an effort state is not a state khz keeps: ignored"))
            return -1;
          if (info) {
            khzUrdfStateInterface *n = realloc(info->state, (size_t)(info->nstate + 1) * sizeof *n);
            if (!n) return fail_oom(c);
            info->state = n;
            khzUrdfStateInterface *s = &n[info->nstate++];
            memset(s, 0, sizeof *s);
            snprintf(s->joint, sizeof s->joint, "%s", full);
            snprintf(s->name, sizeof s->name, "%s", in);
          }
          continue;
        }
        /* a command interface: one actuator */
        khzMjcfActuator a;
        memset(&a, 0, sizeof a);
        if (snprintf(a.name, sizeof a.name, "%s/%s", full, in) >= (int)sizeof a.name)
          return fail(c, f, j, "actuator name \"%s/%s\" is longer than %d characters", full, in,
                      KHZ_NAME_MAX - 1);
        snprintf(a.joint, sizeof a.joint, "%s", full);
        a.gear = 1;
        if (E > 0) a.forcelimited = 1, a.forcerange[0] = -E, a.forcerange[1] = E;
        double lo, hi;
        int rl = iface_param(c, f, "min", &lo), rh = iface_param(c, f, "max", &hi);
        if (rl < 0 || rh < 0) return -1;
        if (rl && rh) {
          if (!(lo <= hi))
            return fail(c, f, j, "min %g is greater than max %g", lo, hi);
          a.ctrllimited = 1, a.ctrlrange[0] = lo, a.ctrlrange[1] = hi;
        } else if (rl || rh) {
          return fail(c, f, j, "give both <param name=\"min\"> and \"max\" (or neither: the "
                      "joint's limits apply)");
        } else if (kind == 1 && b->limited) {
          a.ctrllimited = 1, a.ctrlrange[0] = b->lower, a.ctrlrange[1] = b->upper;
        } else if (kind == 2 && b->velocity_limit > 0) {
          a.ctrllimited = 1, a.ctrlrange[0] = -b->velocity_limit, a.ctrlrange[1] = b->velocity_limit;
        } else if (kind == 3 && E > 0) {
          a.ctrllimited = 1, a.ctrlrange[0] = -E, a.ctrlrange[1] = E;
        }
        double kp = 0, kv = 0;
        int hp = iface_param_any(c, f, kp_names, &kp), hd = iface_param_any(c, f, kd_names, &kv);
        if (hp < 0 || hd < 0) return -1;
        if ((hp && kp < 0) || (hd && kv < 0)) return fail(c, f, j, "gains must not be negative");
        if (kind == 3) {
          a.type = KHZ_MJCF_MOTOR, a.gain = 1;
        } else if (kind == 1) {
          if (!hp) kp = E > 0 ? E / 0.1 : 100;
          if (!hd) kv = kp / 10;
          a.type = KHZ_MJCF_POSITION, a.gain = kp, a.bias[1] = -kp, a.bias[2] = -kv;
        } else {
          if (!hd) kv = E > 0 ? E : 10;
          a.type = KHZ_MJCF_VELOCITY, a.gain = kv, a.bias[2] = -kv;
        }
        if (kind != 3 && !(kind == 1 ? hp && hd : hd) && !warned_gains) {
          warned_gains = 1;
          if (warn(c, f, j, "no servo gains given (<param name=\"kp\"> and \"kd\"): khz's %s "
                   "servo uses kp = %g, kv = %g (position: kp = effort limit / 0.1, kv = kp / "
                   "10; velocity: kv = effort limit; 100 and 10 without an effort limit; the "
                   "first such interface shown)",
                   in, kind == 1 ? kp : 0, kv))
            return -1;
        }
        if (info && add_actuator(c, info, &a)) return -1;
      }
    }
  }
  /* a position interface starts at its joint's initial position (a state's
   * initial_value, read in any order): with no command yet its servo holds
   * the joint where it starts, as ros2_control starts a position command from
   * the state it reads */
  for (int i = 0; info && i < info->nactuator; i++) {
    khzMjcfActuator *a = &info->actuator[i];
    if (a->type != KHZ_MJCF_POSITION) continue;
    for (int k = 0; k < c->nbody; k++)
      if (strcmp(c->bodies[k].joint_name, a->joint) == 0) a->ctrl0 = c->bodies[k].q0[0];
  }
  return 0;
}

void khz_urdf_freeInfo(khzUrdfInfo *info) {
  if (!info) return;
  free(info->actuator);
  free(info->state);
  memset(info, 0, sizeof *info);
}

static int load(khzSpec *spec, const char *xml, size_t len, const char *name,
                const char *basedir, const khzUrdfOptions *opt, char *err, size_t errsz) {
  khzUrdfOptions defaults;
  if (!opt) {
    khz_urdf_defaultOptions(&defaults);
    opt = &defaults;
  }
  urdf_ctx c = {.file = name ? name : "<string>", .basedir = basedir, .opt = opt,
                .err = err, .errsz = errsz};
  if (err && errsz) err[0] = 0;
  if (!spec) return khz_loadError(err, errsz, "%s: no spec", c.file);
  if (len > (size_t)INT_MAX) return khz_loadError(err, errsz, "%s: file too large", c.file);
  int nbody0 = khz_spec_nbody(spec), ngeom0 = khz_spec_ngeom(spec);
  int ret = -1;
  khzUrdfInfo info; /* <ros2_control>, handed to opt->info on success */
  memset(&info, 0, sizeof info);

  /* parse quietly: errors come back through the structured handler */
  xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
  if (!ctxt) return fail_oom(&c);
  ctxt->_private = &c;
  ctxt->sax->serror = xml_error;
  ctxt->sax->warning = NULL;
  ctxt->sax->error = NULL;
  ctxt->sax->fatalError = NULL;
  xmlDocPtr doc = xmlCtxtReadMemory(ctxt, xml, (int)len, c.file, NULL,
                                    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  if (!doc || !ctxt->wellFormed) {
    if (c.xml_msg[0])
      khz_loadError(err, errsz, "%s:%d: malformed XML: %s", c.file, c.xml_line, c.xml_msg);
    else
      khz_loadError(err, errsz, "%s: malformed XML", c.file);
    goto done;
  }

  /* build privately, then append to the spec: meshes, bodies, geoms */
  if (build(&c, doc, spec, nbody0) < 0) goto done;
  if (read_ros2_control(&c, xmlDocGetRootElement(doc), opt->info ? &info : NULL) < 0) goto done;
  int nmesh0 = khz_spec_nmesh(spec);
  for (int i = 0; i < c.nmesh; i++) {
    const char *base = strrchr(c.mesh_path[i], '/');
    khzMeshData *md = &c.meshes[i];
    if (khz_spec_addMesh(spec, base ? base + 1 : c.mesh_path[i], md->vert, md->nvert, md->face,
                         md->nface) != nmesh0 + i) {
      khz_spec_truncateMeshes(spec, nmesh0);
      fail_oom(&c);
      goto done;
    }
  }
  for (int i = 0; i < c.ngeom; i++)
    if (c.geoms[i].type == KHZ_GEOM_MESH && c.geoms[i].mesh >= 0) c.geoms[i].mesh += nmesh0;
  for (int i = 0; i < c.nbody; i++)
    if (khz_spec_addBody(spec, &c.bodies[i]) != nbody0 + i) {
      khz_spec_truncate(spec, nbody0, ngeom0);
      khz_spec_truncateMeshes(spec, nmesh0);
      fail_oom(&c);
      goto done;
    }
  for (int i = 0; i < c.ngeom; i++)
    if (khz_spec_addGeom(spec, &c.geoms[i]) < 0) {
      khz_spec_truncate(spec, nbody0, ngeom0);
      khz_spec_truncateMeshes(spec, nmesh0);
      fail_oom(&c);
      goto done;
    }
  /* mimic joints: joint equality constraints q = multiplier q_leader + offset */
  int neq0 = khz_spec_nequality(spec);
  for (int i = 0; i < c.njoint; i++) {
    xmlNodePtr mim = child(c.joints[i].node, "mimic");
    if (!mim) continue;
    const char *leader = attr(&c, mim, "joint");
    khzEqualitySpec q;
    memset(&q, 0, sizeof q);
    q.type = KHZ_EQ_JOINT;
    q.quat[0] = 1;
    q.polycoef[1] = 1;
    if (attr_doubles(&c, mim, c.joints[i].node, "multiplier", q.polycoef + 1, 1, 0) ||
        attr_doubles(&c, mim, c.joints[i].node, "offset", q.polycoef, 1, 0))
      goto undo_all;
    int b1 = -1, b2 = -1;
    char full[KHZ_NAME_MAX];
    for (int k = 0; k < c.nbody; k++) {
      const khzBodySpec *b = &c.bodies[k];
      int scalar = b->joint_type == KHZ_JOINT_REVOLUTE || b->joint_type == KHZ_JOINT_CONTINUOUS ||
                   b->joint_type == KHZ_JOINT_PRISMATIC;
      snprintf(full, sizeof full, "%s%s", opt->name_prefix ? opt->name_prefix : "",
               c.joints[i].name ? c.joints[i].name : "");
      if (scalar && strcmp(b->joint_name, full) == 0) b1 = nbody0 + k;
      snprintf(full, sizeof full, "%s%s", opt->name_prefix ? opt->name_prefix : "",
               leader ? leader : "");
      if (scalar && strcmp(b->joint_name, full) == 0) b2 = nbody0 + k;
    }
    if (b1 < 0 || b2 < 0 || b1 == b2) {
      if (warn(&c, mim, c.joints[i].node,
               "mimic of \"%s\": khz couples revolute, continuous and prismatic joints only "
               "(%s): this joint moves independently", leader ? leader : "?",
               b2 < 0 ? "the leader is none of these or unknown" : "this joint is none of these"))
        goto undo_all;
      continue;
    }
    q.body1 = b1, q.body2 = b2;
    snprintf(q.name, sizeof q.name, "mimic:%s", c.joints[i].name ? c.joints[i].name : "");
    if (khz_spec_addEquality(spec, &q) < 0) {
      fail_oom(&c);
      goto undo_all;
    }
  }
  ret = nbody0;
  if (opt->info) {
    khz_urdf_freeInfo(opt->info);
    *opt->info = info;
    memset(&info, 0, sizeof info);
  }
  goto deliver;
undo_all:
  khz_spec_truncateEqualities(spec, neq0);
  khz_spec_truncate(spec, nbody0, ngeom0);
  khz_spec_truncateMeshes(spec, nmesh0);
  goto done;

deliver:
  /* deliver the warnings of a successful load */
  for (int i = 0; i < c.nwarn; i++)
    (opt->warn ? opt->warn : warn_stderr)(opt->warn ? opt->warn_user : NULL, c.warns[i]);

done:
  khz_urdf_freeInfo(&info);
  if (doc) xmlFreeDoc(doc);
  xmlFreeParserCtxt(ctxt);
  khz_xml_strings_free(&c.strings);
  for (int i = 0; i < c.nwarn; i++) free(c.warns[i]);
  free(c.warns);
  free(c.links);
  free(c.joints);
  free(c.mats);
  free(c.bodies);
  free(c.geoms);
  for (int i = 0; i < c.nmesh; i++) khz_mesh_free(&c.meshes[i]);
  free(c.meshes);
  free(c.mesh_path);
  return ret;
}

/* --------------------------------------------------------------- public -- */

void khz_urdf_defaultOptions(khzUrdfOptions *opt) {
  memset(opt, 0, sizeof *opt);
  opt->name_prefix = "";
  opt->base_quat[0] = 1;
}

int khz_loadURDFString(khzSpec *spec, const char *xml, const char *name,
                         const char *basedir, const khzUrdfOptions *opt, char *err,
                         size_t errsz) {
  if (!xml) return khz_loadError(err, errsz, "%s: no URDF text", name ? name : "<string>");
  return load(spec, xml, strlen(xml), name, basedir, opt, err, errsz);
}

int khz_loadURDF(khzSpec *spec, const char *path, const khzUrdfOptions *opt, char *err,
                  size_t errsz) {
  /* read the whole file */
  char *buf;
  size_t len;
  if (khz_read_file(path, &buf, &len, err, errsz) < 0) return -1;

  /* relative meshes resolve against the file's directory */
  char dir[KHZ_PATH_MAX * 4];
  if (khz_path_dirname(dir, sizeof dir, path) != 0) {
    free(buf);
    return khz_loadError(err, errsz, "%s: path too long", path);
  }
  int ret = load(spec, buf, len, path, dir, opt, err, errsz);
  free(buf);
  return ret;
}
