/* khz-sim.c — the offline tool: inspect a model, evaluate forward dynamics at one
 * state, or simulate a scene without the server.
 *
 *   khz-sim info MODEL [--json]
 *   khz-sim fd MODEL [--q LIST] [--qd LIST] [--tau LIST] [--passive]
 *   khz-sim run SCENE --steps N [--dt H] [--integrator rk4|euler] [--out FILE]
 *                     [--contacts FILE] [--method none|penalty|deepest] [--sleep on|off]
 *
 * MODEL / SCENE is a .urdf file (welded at the origin), an MJCF .xml file, a .yaml/.yml scene file or
 * the word `default` (the embedded scene). Exit codes: 0 success, 1 the model or
 * an output file failed, 2 a bad command line. The trajectory CSV and the q / qd
 * layout are documented in docs/trajectory-format.md.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "khz/khz.h"
#include "khz/load.h"
#include "khz/loop.h"
#include "experiments.h"

#define KHZ_SIM_USAGE 2
#define KHZ_SIM_FAIL 1

static const char khz_sim_models_help[] =
    "MODEL / SCENE is one of\n"
    "  FILE.urdf        a URDF robot welded at the origin (gravity -9.81 z, dt 1e-3, rk4)\n"
    "  FILE.xml         a MuJoCo MJCF model, <include>s merged (docs/mjcf.md); its <option>\n"
    "                   sets timestep, gravity and integrator\n"
    "  FILE.yaml|.yml   a khz scene file (docs/scene-format.md): URDF and MJCF robots,\n"
    "                   objects, ground\n"
    "  default          the embedded default scene (a 7-DoF arm on a table, loose objects)\n"
    "Meshes the models name are read with assimp (STL, OBJ, DAE, ...; package:// and\n"
    "relative paths in URDF, <compiler meshdir> in MJCF).\n";

static const char khz_sim_layout_help[] =
    "State layout (joints in body order, fixed joints take no entries; see `khz-sim info`):\n"
    "  revolute, continuous, prismatic  q: 1 (rad or m)            qd: 1\n"
    "  spherical                        q: quaternion w x y z (4)   qd: angular velocity in the\n"
    "                                                               child frame (3)\n"
    "  floating                         q: position x y z of the body origin in the parent\n"
    "                                      frame, then quaternion w x y z (7)\n"
    "                                   qd: linear velocity of the body origin in the parent\n"
    "                                      frame (3), then angular velocity in the body frame (3)\n"
    "  tau has the layout of qd: force in the parent frame and torque in the body frame for\n"
    "  a floating joint. Quaternions given in --q are normalised.\n";

static void khz_sim_help_main(FILE *out) {
  fprintf(out,
          "usage: khz-sim COMMAND MODEL [FLAGS]\n"
          "\n"
          "Offline tool of the khz simulator.\n"
          "\n"
          "commands:\n"
          "  info MODEL [--json]                     bodies, joints, limits, indices into q / qd\n"
          "  fd MODEL [--q L] [--qd L] [--tau L]     forward dynamics qdd at one state (JSON)\n"
          "  run SCENE --steps N [--dt H] [--integrator rk4|euler] [--out FILE]\n"
          "                                          simulate without a server (JSON summary)\n"
          "\n%s\n"
          "`khz-sim COMMAND --help` tells more. Exit codes: 0 ok, 1 model or output error,\n"
          "2 bad command line.\n",
          khz_sim_models_help);
}

static void khz_sim_help_info(FILE *out) {
  fprintf(out,
          "usage: khz-sim info MODEL [--json]\n"
          "\n"
          "Prints the model: every body in order with its joint (type, parent, position\n"
          "limits lower/upper, velocity and effort limits, damping, friction, armature) and\n"
          "the joint's first index and count in q and qd; then nq, nv and the total mass.\n"
          "\n"
          "  --json   the same as one JSON object\n"
          "\n%s\n%s",
          khz_sim_models_help, khz_sim_layout_help);
}

static void khz_sim_help_fd(FILE *out) {
  fprintf(out,
          "usage: khz-sim fd MODEL [--q LIST] [--qd LIST] [--tau LIST] [--passive]\n"
          "\n"
          "Computes the joint accelerations qdd = FD(q, qd, tau) with the articulated-body\n"
          "algorithm (gravity included, no contact) and prints\n"
          "  {\"model\": ..., \"joints\": [moving joints in order], \"nq\": .., \"nv\": ..,\n"
          "   \"qdd\": [nv numbers]}\n"
          "\n"
          "  --q LIST     nq comma-separated numbers (default: the model's initial q0)\n"
          "  --qd LIST    nv numbers (default: the model's initial qd0, zeros unless the\n"
          "               scene gives initial velocities)\n"
          "  --tau LIST   nv generalised forces (default: zeros)\n"
          "  --passive    add the passive joint forces (damping, friction, limit springs)\n"
          "               at (q, qd) to tau (sticking friction anchored at q, so it adds\n"
          "               nothing at rest); without it tau is the whole joint force\n"
          "\n%s\n%s",
          khz_sim_models_help, khz_sim_layout_help);
}

static void khz_sim_help_run(FILE *out) {
  fprintf(
      out,
      "usage: khz-sim run SCENE --steps N [--dt H] [--integrator rk4|euler] [--out FILE]\n"
      "                         [--contacts FILE] [--method none|penalty|deepest] [--sleep on|off]\n"
      "                         [--ctrl NAME=VALUE,...] [--contact-reuse M]\n"
      "\n"
      "Simulates N steps from the initial state with zero commanded torque (gravity, the\n"
      "passive joint forces and contact act; a model's own actuators, MJCF <actuator>s and\n"
      "URDF <ros2_control> interfaces, at their initial controls: zero, or the keyframe's,\n"
      "as MuJoCo starts, so a position servo pulls its joint to 0) and prints a JSON summary: steps, dt,\n"
      "integrator, wall time and microseconds per step, final time, kinetic and potential\n"
      "energy at the start and the end, warning counts, the final state hash, the contact\n"
      "method, the number of pairs in contact and of sleeping bodies at the end.\n"
      "\n"
      "A scene with an `experiment:` block (the validation scenes in scenes/validation/)\n"
      "runs its experiment instead and prints the experiment's figures as JSON; --steps and\n"
      "--out and --contacts do not apply then (docs/validation.md).\n"
      "\n"
      "  --steps N        number of steps, 1 to 1000000000 (required without an experiment)\n"
      "  --dt H           timestep in seconds, 1e-6 to 0.1 (default: 1 / the scene's rate_hz)\n"
      "  --integrator I   rk4 or euler (default: the scene's)\n"
      "  --out FILE       write the trajectory as CSV: a header `t,q:JOINT[k]...,qd:JOINT[k]...`\n"
      "                   then N + 1 rows (the initial state and one per step);\n"
      "                   see docs/trajectory-format.md\n"
      "  --contacts FILE  write the contact points as CSV, one row per point per step:\n"
      "                   step,t,body0,body1,geom0,geom1,point,bottom,x,y,z,nx,ny,nz,depth,\n"
      "                   fx,fy,fz (the force on body0, world frame; see\n"
      "                   docs/trajectory-format.md)\n"
      "  --method M       contact method: none, penalty (Drumwright's multi-point method),\n"
      "                   deepest (one spring at the deepest point; the baseline) or lcp\n"
      "                   (Stewart & Trinkle's LCP time-stepping; docs/lcp.md) or peg\n"
      "                   (Williams, Lu & Trinkle's polytope contact; docs/peg.md)\n"
      "                   (default: the scene's contact.method)\n"
      "  --sleep on|off   on: islands of free bodies at rest sleep as in khz-server (not\n"
      "                   integrated, not collided until touched, pushed or commanded;\n"
      "                   docs/sleeping.md) unless the scene says `sleep: false`; off\n"
      "                   (default): every body stays awake, so that the figures measure\n"
      "                   the contact method\n"
      "  --contact-reuse M  keep a pair's contact while its points move less than M meters\n"
      "                   relative to each other (khz_contactReuse; default 0: off)\n"
      "  --threads N      threads for the step, 1 to 16 (khz_setThreads: the same bits with any\n"
      "                   number; default: the scene's `threads`, else 1)\n"
      "  --ctrl LIST      controls of the model's own actuators, NAME=VALUE comma-separated\n"
      "                   (the names `khz-sim info` lists; the others keep their initial\n"
      "                   control), held for the whole run: MuJoCo's data.ctrl. Each is\n"
      "                   clamped to its ctrlrange, its force to its forcerange, and the\n"
      "                   actuators of a joint are summed, evaluated at every step's start\n"
      "\n%s\n%s",
      khz_sim_models_help, khz_sim_layout_help);
}

/* ------------------------------------------------------- command line -- */

typedef struct khzSimFlag {
  const char *name; /* without the leading "--" */
  int has_value;
  const char *value;
  int given;
} khzSimFlag;

/* parses argv into flags and one positional MODEL; 0 ok, 1 help shown, 2 usage error */
static int khz_sim_parse(const char *cmd, int argc, char **argv, khzSimFlag *flags, int nflags,
                         const char **model, void (*help)(FILE *)) {
  *model = NULL;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      help(stdout);
      return 1;
    }
    if (strncmp(a, "--", 2) != 0 || a[2] == 0) {
      if (a[0] == '-' && a[1] != 0) {
        fprintf(stderr, "khz-sim %s: unknown flag '%s' (see khz-sim %s --help)\n", cmd, a, cmd);
        return 2;
      }
      if (*model) {
        fprintf(stderr, "khz-sim %s: unexpected argument '%s' (MODEL is already '%s')\n", cmd, a,
                *model);
        return 2;
      }
      *model = a;
      continue;
    }

    /* --name or --name=value */
    const char *eq = strchr(a + 2, '=');
    size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
    khzSimFlag *f = NULL;
    for (int k = 0; k < nflags; k++) {
      if (strlen(flags[k].name) == len && strncmp(flags[k].name, a + 2, len) == 0) f = &flags[k];
    }
    if (!f) {
      fprintf(stderr, "khz-sim %s: unknown flag '%.*s' (see khz-sim %s --help)\n", cmd,
              (int)len + 2, a, cmd);
      return 2;
    }
    if (f->given) {
      fprintf(stderr, "khz-sim %s: flag --%s given twice\n", cmd, f->name);
      return 2;
    }
    f->given = 1;
    if (!f->has_value) {
      if (eq) {
        fprintf(stderr, "khz-sim %s: flag --%s takes no value\n", cmd, f->name);
        return 2;
      }
      continue;
    }
    if (eq) {
      f->value = eq + 1;
    } else if (i + 1 < argc) {
      f->value = argv[++i];
    } else {
      fprintf(stderr, "khz-sim %s: flag --%s needs a value\n", cmd, f->name);
      return 2;
    }
  }
  if (!*model) {
    fprintf(
        stderr,
        "khz-sim %s: MODEL missing (a .urdf, a .yaml scene or 'default'; see khz-sim %s --help)\n",
        cmd, cmd);
    return 2;
  }
  return 0;
}

/* parses a comma-separated list of exactly n finite numbers; prints why not */
static int khz_sim_list(const char *cmd, const char *flag, const char *s, double *out, int n,
                        const char *what) {
  int count = 0;
  const char *p = s;
  while (*p == ' ') p++;
  if (*p == 0) {
    if (n == 0) return 0;
    fprintf(stderr, "khz-sim %s: --%s: expected %d comma-separated numbers (%s), got none\n", cmd,
            flag, n, what);
    return -1;
  }
  for (;;) {
    char *end;
    errno = 0;
    double v = strtod(p, &end);
    const char *stop = end;
    while (*stop == ' ') stop++;
    if (end == p || (*stop != ',' && *stop != 0) || !isfinite(v) || errno == ERANGE) {
      size_t len = strcspn(p, ",");
      fprintf(stderr, "khz-sim %s: --%s: entry %d '%.*s' is not a finite number\n", cmd, flag,
              count + 1, (int)len, p);
      return -1;
    }
    if (count < n) out[count] = v;
    count++;
    if (*stop == 0) break;
    p = stop + 1;
  }
  if (count != n) {
    fprintf(stderr, "khz-sim %s: --%s: expected %d comma-separated numbers (%s), got %d\n", cmd,
            flag, n, what, count);
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------ printing -- */

static void khz_sim_json_string(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      fprintf(out, "\\%c", c);
    } else if (c < 0x20) {
      fprintf(out, "\\u%04x", c);
    } else {
      fputc(c, out);
    }
  }
  fputc('"', out);
}

/* a JSON number; null for NaN / infinity, which JSON cannot hold */
static void khz_sim_json_number(FILE *out, double v) {
  if (isfinite(v)) {
    fprintf(out, "%.17g", v);
  } else {
    fputs("null", out);
  }
}

/* a CSV field, quoted when it holds a comma, a quote or a line break */
static void khz_sim_csv_field(FILE *out, const char *s) {
  if (!strpbrk(s, ",\"\n\r")) {
    fputs(s, out);
    return;
  }
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"') fputc('"', out);
    fputc(*s, out);
  }
  fputc('"', out);
}

static const char *khz_sim_integrator(khzIntegrator i) {
  return i == KHZ_INT_EULER ? "euler" : "rk4";
}

static double khz_sim_total_mass(const khzModel *m) {
  double mass = 0;
  for (int i = 1; i < m->nbody; i++) mass += m->body_mass[i];
  return mass;
}

/* loads MODEL; prints the error and returns NULL on failure */
static khzModel *khz_sim_load(const char *cmd, const char *path, khzScene *scene) {
  char err[2048];
  khzModel *m = khz_loadModel(path, scene, err, sizeof err);
  if (!m) fprintf(stderr, "khz-sim %s: %s\n", cmd, err);
  return m;
}

/* ---------------------------------------------------------------- info -- */

static const char *const khz_sim_eq_types[] = {"connect", "weld", "joint"};
static const char *const khz_sim_sensor_types[] = {"jointpos",    "jointvel",   "framepos",
                                                   "framequat",   "framelinvel", "frameangvel",
                                                   "velocimeter"};

static void khz_sim_quiet(void *user, const char *msg) { (void)user, (void)msg; }

/* the sensors an MJCF model declares (none for other files); free with khz_mjcf_freeInfo */
static void khz_sim_sensors(const char *path, khzMjcfInfo *info) {
  memset(info, 0, sizeof *info);
  size_t n = strlen(path);
  if (n < 4 || strcmp(path + n - 4, ".xml") != 0) return;
  khzSpec *spec = khz_spec_new();
  khzMjcfOptions o;
  khz_mjcf_defaultOptions(&o);
  o.info = info;
  o.warn = khz_sim_quiet;
  char err[256];
  if (spec && khz_loadMJCF(spec, path, &o, err, sizeof err) < 0) memset(info, 0, sizeof *info);
  khz_spec_destroy(&spec);
}

static void khz_sim_info_text(const khzModel *m, const khzScene *s, const char *path) {
  printf("model: %s (scene '%s')\n", path, s->name);
  printf("nbody: %d (with the world)  nq: %d  nv: %d  ngeom: %d  total mass: %.6g kg\n", m->nbody,
         m->nq, m->nv, m->ngeom, khz_sim_total_mass(m));
  printf("timestep: %g s  integrator: %s  gravity: [%g, %g, %g]  contact: %s\n", m->timestep,
         khz_sim_integrator(m->integrator), m->gravity[0], m->gravity[1], m->gravity[2],
         khz_contactMethodName(s->contact.method));
  printf("\n%-3s %-24s %-20s %-20s %-10s %-6s %-6s %9s %9s %9s %9s %8s %8s %8s %9s\n", "id", "body",
         "parent", "joint", "type", "q", "qd", "lower", "upper", "velocity", "effort", "damping",
         "friction", "armature", "mass");
  for (int i = 1; i < m->nbody; i++) {
    int type = m->jnt_type[i], nq = m->jnt_nq[i], nv = m->jnt_nv[i];
    char qs[16] = "-", vs[16] = "-", lo[16] = "-", hi[16] = "-", vel[16] = "-", eff[16] = "-";
    char damp[16] = "-", fric[16] = "-", arm[16] = "-";
    if (nq == 1) snprintf(qs, sizeof qs, "%d", m->jnt_qadr[i]);
    if (nq > 1) snprintf(qs, sizeof qs, "%d-%d", m->jnt_qadr[i], m->jnt_qadr[i] + nq - 1);
    if (nv == 1) snprintf(vs, sizeof vs, "%d", m->jnt_dofadr[i]);
    if (nv > 1) snprintf(vs, sizeof vs, "%d-%d", m->jnt_dofadr[i], m->jnt_dofadr[i] + nv - 1);
    if (m->jnt_limited[i]) {
      snprintf(lo, sizeof lo, "%.4g", m->jnt_range[2 * i]);
      snprintf(hi, sizeof hi, "%.4g", m->jnt_range[2 * i + 1]);
    }
    if (m->jnt_vel_limit[i] > 0) snprintf(vel, sizeof vel, "%.4g", m->jnt_vel_limit[i]);
    if (nv > 0) {
      int d = m->jnt_dofadr[i];
      if (m->dof_effort[d] > 0) snprintf(eff, sizeof eff, "%.4g", m->dof_effort[d]);
      snprintf(damp, sizeof damp, "%.4g", m->dof_damping[d]);
      snprintf(fric, sizeof fric, "%.4g", m->dof_friction[d]);
      snprintf(arm, sizeof arm, "%.4g", m->dof_armature[d]);
    }
    printf("%-3d %-24s %-20s %-20s %-10s %-6s %-6s %9s %9s %9s %9s %8s %8s %8s %9.4g\n", i,
           m->body_name[i], m->body_name[m->body_parent[i]],
           m->jnt_name[i][0] ? m->jnt_name[i] : "-", khz_jointTypeName((khzJointType)type), qs, vs,
           lo, hi, vel, eff, damp, fric, arm, m->body_mass[i]);
  }
  if (m->neq) {
    printf("\nequality constraints (held on the articulated bodies):\n");
    for (int i = 0; i < m->neq; i++)
      printf("  %-3d %-20s %-8s %s - %s\n", i, m->eq_name[i][0] ? m->eq_name[i] : "-",
             khz_sim_eq_types[m->eq_type[i]], m->body_name[m->eq_body[2 * i]],
             m->eq_body[2 * i + 1] ? m->body_name[m->eq_body[2 * i + 1]] : "world");
  }
  if (s->nactuator) {
    static const char *const kinds[] = {"motor", "position", "velocity", "general"};
    printf("\nactuators (khz-sim run --ctrl NAME=VALUE; ranges: - when unlimited):\n");
    for (int i = 0; i < s->nactuator; i++) {
      const khzMjcfActuator *a = &s->actuator[i];
      char cr[48] = "-", fr[48] = "-";
      if (a->ctrllimited) snprintf(cr, sizeof cr, "[%.4g, %.4g]", a->ctrlrange[0], a->ctrlrange[1]);
      if (a->forcelimited)
        snprintf(fr, sizeof fr, "[%.4g, %.4g]", a->forcerange[0], a->forcerange[1]);
      printf("  %-3d %-24s %-8s joint %-20s gear %-6.4g ctrlrange %-18s forcerange %-18s ctrl0 %g\n",
             i, a->name, kinds[a->type], a->joint, a->gear, cr, fr, a->ctrl0);
    }
  }
  khzMjcfInfo info;
  khz_sim_sensors(path, &info);
  if (info.nsensor) {
    printf("\nsensors (khz_mjcf_sensorRead):\n");
    for (int i = 0; i < info.nsensor; i++)
      printf("  %-3d %-20s %-12s %-24s dim %d%s\n", i, info.sensor[i].name[0] ? info.sensor[i].name : "-",
             khz_sim_sensor_types[info.sensor[i].type], info.sensor[i].object, info.sensor[i].dim,
             info.sensor[i].com ? " (centre of mass)" : "");
  }
  khz_mjcf_freeInfo(&info);
}

static void khz_sim_info_json(const khzModel *m, const khzScene *s, const char *path) {
  printf("{\"model\": ");
  khz_sim_json_string(stdout, path);
  printf(", \"scene\": ");
  khz_sim_json_string(stdout, s->name);
  printf(", \"nbody\": %d, \"nq\": %d, \"nv\": %d, \"ngeom\": %d, \"total_mass\": ", m->nbody,
         m->nq, m->nv, m->ngeom);
  khz_sim_json_number(stdout, khz_sim_total_mass(m));
  printf(", \"timestep\": %.17g, \"integrator\": \"%s\", \"gravity\": [%.17g, %.17g, %.17g]",
         m->timestep, khz_sim_integrator(m->integrator), m->gravity[0], m->gravity[1],
         m->gravity[2]);
  printf(", \"contact\": ");
  khz_sim_json_string(stdout, khz_contactMethodName(s->contact.method));
  printf(", \"bodies\": [");
  for (int i = 1; i < m->nbody; i++) {
    int nv = m->jnt_nv[i], d = m->jnt_dofadr[i];
    printf("%s\n  {\"id\": %d, \"name\": ", i > 1 ? "," : "", i);
    khz_sim_json_string(stdout, m->body_name[i]);
    printf(", \"parent\": ");
    khz_sim_json_string(stdout, m->body_name[m->body_parent[i]]);
    printf(", \"mass\": %.17g, \"joint\": ", m->body_mass[i]);
    khz_sim_json_string(stdout, m->jnt_name[i]);
    printf(", \"type\": \"%s\", \"qadr\": %d, \"nq\": %d, \"dofadr\": %d, \"nv\": %d",
           khz_jointTypeName((khzJointType)m->jnt_type[i]), m->jnt_qadr[i], m->jnt_nq[i], d, nv);
    printf(", \"limited\": %s, \"lower\": ", m->jnt_limited[i] ? "true" : "false");
    if (m->jnt_limited[i]) {
      khz_sim_json_number(stdout, m->jnt_range[2 * i]);
      printf(", \"upper\": ");
      khz_sim_json_number(stdout, m->jnt_range[2 * i + 1]);
    } else {
      printf("null, \"upper\": null");
    }
    printf(", \"velocity\": %.17g", m->jnt_vel_limit[i]);
    printf(", \"effort\": %.17g, \"damping\": %.17g, \"friction\": %.17g, \"armature\": %.17g}",
           nv ? m->dof_effort[d] : 0.0, nv ? m->dof_damping[d] : 0.0, nv ? m->dof_friction[d] : 0.0,
           nv ? m->dof_armature[d] : 0.0);
  }
  printf("\n], \"equalities\": [");
  for (int i = 0; i < m->neq; i++) {
    printf("%s\n  {\"name\": ", i ? "," : "");
    khz_sim_json_string(stdout, m->eq_name[i]);
    printf(", \"type\": \"%s\", \"body1\": ", khz_sim_eq_types[m->eq_type[i]]);
    khz_sim_json_string(stdout, m->body_name[m->eq_body[2 * i]]);
    printf(", \"body2\": ");
    khz_sim_json_string(stdout, m->eq_body[2 * i + 1] ? m->body_name[m->eq_body[2 * i + 1]] : "world");
    printf("}");
  }
  khzMjcfInfo info;
  khz_sim_sensors(path, &info);
  printf("\n], \"sensors\": [");
  for (int i = 0; i < info.nsensor; i++) {
    printf("%s\n  {\"name\": ", i ? "," : "");
    khz_sim_json_string(stdout, info.sensor[i].name);
    printf(", \"type\": \"%s\", \"object\": ", khz_sim_sensor_types[info.sensor[i].type]);
    khz_sim_json_string(stdout, info.sensor[i].object);
    printf(", \"com\": %s, \"dim\": %d}", info.sensor[i].com ? "true" : "false", info.sensor[i].dim);
  }
  khz_mjcf_freeInfo(&info);
  printf("\n]}\n");
}

static int khz_sim_info(int argc, char **argv) {
  khzSimFlag flags[] = {{"json", 0, NULL, 0}};
  const char *path;
  int rc = khz_sim_parse("info", argc, argv, flags, 1, &path, khz_sim_help_info);
  if (rc) return rc == 1 ? 0 : KHZ_SIM_USAGE;

  khzScene scene;
  khzModel *m = khz_sim_load("info", path, &scene);
  if (!m) return KHZ_SIM_FAIL;
  if (flags[0].given) {
    khz_sim_info_json(m, &scene, path);
  } else {
    khz_sim_info_text(m, &scene, path);
  }
  khz_deleteModel(&m);
  khz_deleteScene(&scene);
  return 0;
}

/* ------------------------------------------------------------------ fd -- */

static int khz_sim_fd(int argc, char **argv) {
  khzSimFlag flags[] = {
      {"q", 1, NULL, 0}, {"qd", 1, NULL, 0}, {"tau", 1, NULL, 0}, {"passive", 0, NULL, 0}};
  const char *path;
  int rc = khz_sim_parse("fd", argc, argv, flags, 4, &path, khz_sim_help_fd);
  if (rc) return rc == 1 ? 0 : KHZ_SIM_USAGE;

  khzScene scene;
  khzModel *m = khz_sim_load("fd", path, &scene);
  if (!m) return KHZ_SIM_FAIL;
  khzData *d = khz_makeData(m, 0);
  size_t nq = (size_t)m->nq + 1, nv = (size_t)m->nv + 1;
  double *q = calloc(nq, sizeof *q), *qd = calloc(nv, sizeof *qd);
  double *tau = calloc(nv, sizeof *tau), *qdd = calloc(nv, sizeof *qdd);
  double *passive = calloc(nv, sizeof *passive);
  rc = 0;
  if (!d || !q || !qd || !tau || !qdd || !passive) {
    fprintf(stderr, "khz-sim fd: out of memory\n");
    rc = KHZ_SIM_FAIL;
    goto done;
  }

  /* the state: flags, or the initial q0 and qd0, and zero tau */
  char what[64];
  memcpy(q, m->q0, (size_t)m->nq * sizeof *q);
  memcpy(qd, m->qd0, (size_t)m->nv * sizeof *qd);
  snprintf(what, sizeof what, "nq = %d", m->nq);
  if (flags[0].given && khz_sim_list("fd", "q", flags[0].value, q, m->nq, what)) {
    rc = KHZ_SIM_USAGE;
    goto done;
  }
  snprintf(what, sizeof what, "nv = %d", m->nv);
  if ((flags[1].given && khz_sim_list("fd", "qd", flags[1].value, qd, m->nv, what)) ||
      (flags[2].given && khz_sim_list("fd", "tau", flags[2].value, tau, m->nv, what))) {
    rc = KHZ_SIM_USAGE;
    goto done;
  }

  /* normalise the quaternions of spherical and floating joints */
  for (int i = 1; i < m->nbody; i++) {
    int t = m->jnt_type[i];
    if (t != KHZ_JOINT_SPHERICAL && t != KHZ_JOINT_FLOATING) continue;
    double *quat = q + m->jnt_qadr[i] + (t == KHZ_JOINT_FLOATING ? 3 : 0);
    double n = sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3]);
    if (!(n > 1e-9)) {
      fprintf(stderr, "khz-sim fd: --q: the quaternion of joint '%s' (q[%d..%d]) has zero length\n",
              m->jnt_name[i], (int)(quat - q), (int)(quat - q) + 3);
      rc = KHZ_SIM_USAGE;
      goto done;
    }
    for (int k = 0; k < 4; k++) quat[k] /= n;
  }

  /* forward dynamics */
  if (flags[3].given) {
    /* friction anchors at the given q: a sticking joint starts with no spring force */
    memcpy(d->q, q, (size_t)m->nq * sizeof *q);
    khz_resetStick(m, d);
    khz_passive(m, d, q, qd, passive);
    for (int k = 0; k < m->nv; k++) tau[k] += passive[k];
  }
  khz_aba(m, d, q, qd, tau, qdd);

  /* JSON */
  printf("{\"model\": ");
  khz_sim_json_string(stdout, path);
  printf(", \"joints\": [");
  int first = 1;
  for (int i = 1; i < m->nbody; i++) {
    if (m->jnt_nv[i] == 0) continue;
    printf("%s", first ? "" : ", ");
    khz_sim_json_string(stdout, m->jnt_name[i]);
    first = 0;
  }
  printf("], \"nq\": %d, \"nv\": %d, \"passive\": %s, \"qdd\": [", m->nq, m->nv,
         flags[3].given ? "true" : "false");
  int bad = 0;
  for (int k = 0; k < m->nv; k++) {
    printf("%s", k ? ", " : "");
    khz_sim_json_number(stdout, qdd[k]);
    bad += !isfinite(qdd[k]);
  }
  printf("]}\n");
  if (bad) fprintf(stderr, "khz-sim fd: warning: %d entries of qdd are not finite (null)\n", bad);

done:
  free(q);
  free(qd);
  free(tau);
  free(qdd);
  free(passive);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_deleteScene(&scene);
  return rc;
}

/* ----------------------------------------------------------------- run -- */

static double khz_sim_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* one CSV row: t, q, qd */
static void khz_sim_csv_row(FILE *out, const khzModel *m, const khzData *d) {
  fprintf(out, "%.17g", d->time);
  for (int k = 0; k < m->nq; k++) fprintf(out, ",%.17g", d->q[k]);
  for (int k = 0; k < m->nv; k++) fprintf(out, ",%.17g", d->qd[k]);
  if (d->sleep_enabled)
    for (int i = 1; i < m->nbody; i++)
      if (khz_bodyCanSleep(m, i)) fprintf(out, ",%d", khz_bodySleeping(m, d, i));
  fputc('\n', out);
}

static void khz_sim_csv_header(FILE *out, const khzModel *m, const khzData *d) {
  char col[KHZ_NAME_MAX + 32];
  fputs("t", out);
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 1; i < m->nbody; i++) {
      int n = pass ? m->jnt_nv[i] : m->jnt_nq[i];
      for (int k = 0; k < n; k++) {
        snprintf(col, sizeof col, "%s:%s[%d]", pass ? "qd" : "q", m->jnt_name[i], k);
        fputc(',', out);
        khz_sim_csv_field(out, col);
      }
    }
  }
  /* with sleeping on: one column per tree that may sleep (its root), 1 while it sleeps */
  for (int i = 1; d->sleep_enabled && i < m->nbody; i++) {
    if (!khz_bodyCanSleep(m, i)) continue;
    snprintf(col, sizeof col, "sleep:%s", m->body_name[i]);
    fputc(',', out);
    khz_sim_csv_field(out, col);
  }
  fputc('\n', out);
}

/* the contact CSV (docs/trajectory-format.md): its header, and one row per
 * contact point of the pairs the last step found; written from what khzData
 * holds after khz_step, outside the step */
static void khz_sim_contacts_header(FILE *out) {
  fputs("step,t,body0,body1,geom0,geom1,point,bottom,x,y,z,nx,ny,nz,depth,fx,fy,fz\n", out);
}

static long long khz_sim_contacts_rows(FILE *out, const khzModel *m, const khzData *d,
                                       long long step) {
  long long rows = 0;
  for (int i = 0; i < d->ncontact; i++) {
    const khzContact *c = d->contact + i;
    for (int k = 0; k < c->npoint; k++) {
      const khzContactPoint *p = d->cpoint + c->point_adr + k;
      fprintf(out, "%lld,%.17g,", step, d->time);
      khz_sim_csv_field(out, m->body_name[c->body[0]]);
      fputc(',', out);
      khz_sim_csv_field(out, m->body_name[c->body[1]]);
      fprintf(out, ",%d,%d,%d,%d", c->geom[0], c->geom[1], k, p->bottom);
      /* + 0.0: no "-0" in the file */
      for (int j = 0; j < 3; j++) fprintf(out, ",%.17g", p->pos[j] + 0.0);
      for (int j = 0; j < 3; j++) fprintf(out, ",%.17g", c->normal[j] + 0.0);
      fprintf(out, ",%.17g", p->depth + 0.0);
      for (int j = 0; j < 3; j++) fprintf(out, ",%.17g", p->force[j] + 0.0);
      fputc('\n', out);
      rows++;
    }
  }
  return rows;
}

static void khz_sim_energy_json(const char *key, double ke, double pe) {
  printf("  \"%s\": {\"kinetic\": ", key);
  khz_sim_json_number(stdout, ke);
  printf(", \"potential\": ");
  khz_sim_json_number(stdout, pe);
  printf(", \"total\": ");
  khz_sim_json_number(stdout, ke + pe);
  printf("},\n");
}

/* a model's own actuators as khz-sim run drives them: each one's dof (-1: not
 * a joint of the model) and its control, held for the run */
typedef struct khzSimActuators {
  int n;
  const khzMjcfActuator *a;
  int *dof;
  double *ctrl;
} khzSimActuators;

/* the scene's actuators at their initial controls, then --ctrl NAME=VALUE,...
 * over them; 0, or -1 after a message (an unknown name, a bad number) */
static int khz_sim_actuators(khzSimActuators *act, const khzModel *m, const khzScene *scene,
                             const char *list) {
  act->n = scene->nactuator;
  act->a = scene->actuator;
  act->dof = calloc((size_t)act->n + 1, sizeof *act->dof);
  act->ctrl = calloc((size_t)act->n + 1, sizeof *act->ctrl);
  if (!act->dof || !act->ctrl) {
    fprintf(stderr, "khz-sim run: out of memory\n");
    return -1;
  }
  for (int i = 0; i < act->n; i++) {
    int b = khz_name2joint(m, act->a[i].joint);
    act->dof[i] = b > 0 && m->jnt_nv[b] == 1 ? m->jnt_dofadr[b] : -1;
    act->ctrl[i] = act->a[i].ctrl0;
  }
  for (const char *p = list; p && *p;) {
    size_t len = strcspn(p, ","), nl = strcspn(p, "=");
    if (nl >= len) {
      fprintf(stderr, "khz-sim run: --ctrl: '%.*s' is not NAME=VALUE (e.g. --ctrl "
              "elbow=0.5,wrist=-1)\n", (int)len, p);
      return -1;
    }
    int i = -1;
    for (int k = 0; k < act->n; k++)
      if (strlen(act->a[k].name) == nl && strncmp(act->a[k].name, p, nl) == 0) i = k;
    if (i < 0) {
      fprintf(stderr, "khz-sim run: --ctrl: '%.*s' is not one of the model's %d actuators%s%s "
              "(khz-sim info lists them)\n", (int)nl, p, act->n, act->n ? ", e.g. " : "",
              act->n ? act->a[0].name : "");
      return -1;
    }
    char num[64], *end;
    snprintf(num, sizeof num, "%.*s", (int)(len - nl - 1), p + nl + 1);
    errno = 0;
    double v = strtod(num, &end);
    if (end == num || *end || errno || !isfinite(v)) {
      fprintf(stderr, "khz-sim run: --ctrl: the value of '%.*s' ('%s') is not a finite number\n",
              (int)nl, p, num);
      return -1;
    }
    act->ctrl[i] = v;
    p += len + (p[len] == ',');
  }
  return 0;
}

/* d->tau from the actuators at the state of d: MuJoCo's qfrc_actuator
 * (khz_actuator_torque: each force clamped to its forcerange, summed per joint) */
static void khz_sim_actuate(const khzSimActuators *act, const khzModel *m, khzData *d) {
  memset(d->tau, 0, (size_t)m->nv * sizeof *d->tau);
  for (int i = 0; i < act->n; i++) {
    int k = act->dof[i];
    if (k < 0) continue;
    double q = d->q[m->jnt_qadr[m->dof_body[k]]];
    d->tau[k] += khz_actuator_torque(&act->a[i], act->ctrl[i], q, d->qd[k]);
  }
}

static int khz_sim_run(int argc, char **argv) {
  khzSimFlag flags[] = {{"steps", 1, NULL, 0},      {"dt", 1, NULL, 0}, {"integrator", 1, NULL, 0},
                        {"out", 1, NULL, 0},        {"method", 1, NULL, 0}, {"contacts", 1, NULL, 0},
                        {"sleep", 1, NULL, 0},      {"ctrl", 1, NULL, 0}, {"contact-reuse", 1, NULL, 0},
                        {"threads", 1, NULL, 0}};
  const char *path;
  int rc = khz_sim_parse("run", argc, argv, flags, 10, &path, khz_sim_help_run);
  if (rc) return rc == 1 ? 0 : KHZ_SIM_USAGE;

  /* flags first: a bad flag is reported before the model is read */
  long long steps = 0;
  double dt = 0;
  int integrator = -1, method = -1;
  if (flags[4].given && (method = khz_contactMethodFromName(flags[4].value)) < 0) {
    fprintf(stderr, "khz-sim run: --method: expected none, penalty, deepest, lcp or peg, got '%s'\n",
            flags[4].value);
    return KHZ_SIM_USAGE;
  }
  double reuse = 0;
  if (flags[8].given) {
    char *end;
    errno = 0;
    reuse = strtod(flags[8].value, &end);
    if (end == flags[8].value || *end || errno || !(reuse >= 0 && reuse <= 1e-3)) {
      fprintf(stderr, "khz-sim run: --contact-reuse: expected a bound in meters from 0 to 1e-3, got '%s'\n",
              flags[8].value);
      return KHZ_SIM_USAGE;
    }
  }
  long threads = 0;
  if (flags[9].given) {
    char *end;
    errno = 0;
    threads = strtol(flags[9].value, &end, 10);
    if (end == flags[9].value || *end || errno || threads < 1 || threads > 16) {
      fprintf(stderr, "khz-sim run: --threads: expected an integer from 1 to 16, got '%s'\n", flags[9].value);
      return KHZ_SIM_USAGE;
    }
  }
  int sleep = -1;
  if (flags[6].given) {
    if (strcmp(flags[6].value, "on") == 0) sleep = 1;
    else if (strcmp(flags[6].value, "off") == 0) sleep = 0;
    else {
      fprintf(stderr, "khz-sim run: --sleep: expected on or off, got '%s'\n", flags[6].value);
      return KHZ_SIM_USAGE;
    }
  }
  if (flags[0].given) {
    char *end;
    errno = 0;
    steps = strtoll(flags[0].value, &end, 10);
    if (end == flags[0].value || *end || errno || steps < 1 || steps > 1000000000LL) {
      fprintf(stderr, "khz-sim run: --steps: expected an integer from 1 to 1000000000, got '%s'\n",
              flags[0].value);
      return KHZ_SIM_USAGE;
    }
  }
  if (flags[1].given) {
    char *end;
    errno = 0;
    dt = strtod(flags[1].value, &end);
    if (end == flags[1].value || *end || errno || !(dt >= 1e-6 && dt <= 0.1)) {
      fprintf(stderr,
              "khz-sim run: --dt: expected a timestep in seconds from 1e-6 to 0.1, got '%s'\n",
              flags[1].value);
      return KHZ_SIM_USAGE;
    }
  }
  if (flags[2].given) {
    if (strcmp(flags[2].value, "rk4") == 0) {
      integrator = KHZ_INT_RK4;
    } else if (strcmp(flags[2].value, "euler") == 0) {
      integrator = KHZ_INT_EULER;
    } else {
      fprintf(stderr, "khz-sim run: --integrator: expected rk4 or euler, got '%s'\n",
              flags[2].value);
      return KHZ_SIM_USAGE;
    }
  }
  if (flags[3].given && flags[3].value[0] == 0) {
    fprintf(stderr, "khz-sim run: --out: expected a file name, got an empty string\n");
    return KHZ_SIM_USAGE;
  }
  if (flags[5].given && flags[5].value[0] == 0) {
    fprintf(stderr, "khz-sim run: --contacts: expected a file name, got an empty string\n");
    return KHZ_SIM_USAGE;
  }

  /* the model, recompiled when --dt or --integrator override the scene */
  khzScene scene;
  khzModel *m = khz_sim_load("run", path, &scene);
  if (!m) return KHZ_SIM_FAIL;
  if (flags[1].given || flags[2].given) {
    char err[1024];
    khz_deleteModel(&m);
    if (flags[1].given) khz_spec_setTimestep(scene.spec, dt);
    if (flags[2].given) khz_spec_setIntegrator(scene.spec, (khzIntegrator)integrator);
    m = khz_compile(scene.spec, err, sizeof err);
    if (!m) {
      fprintf(stderr, "khz-sim run: %s: %s\n", path, err);
      khz_deleteScene(&scene);
      return KHZ_SIM_FAIL;
    }
  }
  {
    char warn[512];
    if (khz_loop_stabilityWarning(m, m->timestep, warn, sizeof warn))
      fprintf(stderr, "khz-sim run: warning: %s: %s\n", path, warn);
  }
  khzData *d = khz_makeData(m, 0);
  FILE *csv = NULL, *ccsv = NULL;
  long long crows = 0;
  khzSimActuators act = {0};
  rc = 0;
  if (d && khz_sim_actuators(&act, m, &scene, flags[7].given ? flags[7].value : NULL)) {
    rc = KHZ_SIM_USAGE;
    goto done;
  }
  if (!d) {
    fprintf(stderr, "khz-sim run: out of memory\n");
    rc = KHZ_SIM_FAIL;
    goto done;
  }
  if (method >= 0 && khz_contactMethodRefusal(m, method)) {
    fprintf(stderr, "khz-sim run: --method %s: %s\n", khz_contactMethodName((khzContactMethod)method),
            khz_contactMethodRefusal(m, method));
    rc = KHZ_SIM_USAGE;
    goto done;
  }
  if (method >= 0) d->contact_method = method;
  /* khz-sim measures the contact method (validation, bench/untuned.py):
   * bodies stay awake unless --sleep on asks for the server's behaviour;
   * with --sleep on a scene's `sleep: false` still wins */
  d->sleep_enabled = sleep == 1 && m->sleep.enabled;
  if (reuse > 0 && khz_contactReuse(m, d, reuse)) {
    fprintf(stderr, "khz-sim run: --contact-reuse: out of memory\n");
    rc = KHZ_SIM_FAIL;
    goto done;
  }
  if (!threads) threads = scene.threads;
  if (threads > 1 && khz_setThreads(m, d, (int)threads)) {
    fprintf(stderr, "khz-sim run: --threads %ld: cannot start the threads\n", threads);
    rc = KHZ_SIM_FAIL;
    goto done;
  }

  /* a validation experiment drives the run itself and prints its figures */
  if (scene.experiment.kind[0]) {
    char err[1024];
    if (flags[0].given || flags[3].given || flags[5].given) {
      fprintf(stderr,
              "khz-sim run: %s: the scene's experiment sets the steps; drop "
              "--steps/--out/--contacts\n",
              path);
      rc = KHZ_SIM_USAGE;
    } else if (khz_experiment_run(m, d, &scene.experiment, stdout, err, sizeof err) < 0) {
      fprintf(stderr, "khz-sim run: %s: %s\n", path, err);
      rc = KHZ_SIM_FAIL;
    }
    goto done;
  }
  if (!flags[0].given) {
    fprintf(stderr, "khz-sim run: --steps N is required (1 to 1000000000)\n");
    rc = KHZ_SIM_USAGE;
    goto done;
  }
  if (flags[3].given) {
    csv = fopen(flags[3].value, "w");
    if (!csv) {
      fprintf(stderr, "khz-sim run: --out: cannot open '%s': %s\n", flags[3].value,
              strerror(errno));
      rc = KHZ_SIM_FAIL;
      goto done;
    }
    khz_sim_csv_header(csv, m, d);
    khz_sim_csv_row(csv, m, d);
  }
  if (flags[5].given) {
    ccsv = fopen(flags[5].value, "w");
    if (!ccsv) {
      fprintf(stderr, "khz-sim run: --contacts: cannot open '%s': %s\n", flags[5].value,
              strerror(errno));
      rc = KHZ_SIM_FAIL;
      goto done;
    }
    khz_sim_contacts_header(ccsv);
  }

  /* energy at the start */
  double ke0, pe0, ke1, pe1;
  khz_kinematics(m, d);
  khz_energy(m, d, &ke0, &pe0);

  /* the loop; only the steps are timed */
  double wall = 0;
  for (long long s = 0; s < steps; s++) {
    double t0 = khz_sim_now();
    if (act.n) khz_sim_actuate(&act, m, d);
    khz_step(m, d);
    wall += khz_sim_now() - t0;
    if (csv) khz_sim_csv_row(csv, m, d);
    if (ccsv) crows += khz_sim_contacts_rows(ccsv, m, d, s + 1);
  }
  khz_kinematics(m, d);
  khz_energy(m, d, &ke1, &pe1);
  if (csv) {
    int bad = ferror(csv);
    if (fclose(csv) != 0 || bad) {
      fprintf(stderr, "khz-sim run: --out: writing '%s' failed\n", flags[3].value);
      rc = KHZ_SIM_FAIL;
    }
    csv = NULL;
  }
  if (ccsv) {
    int bad = ferror(ccsv);
    if (fclose(ccsv) != 0 || bad) {
      fprintf(stderr, "khz-sim run: --contacts: writing '%s' failed\n", flags[5].value);
      rc = KHZ_SIM_FAIL;
    }
    ccsv = NULL;
  }

  /* summary */
  printf("{\n  \"model\": ");
  khz_sim_json_string(stdout, path);
  printf(",\n  \"scene\": ");
  khz_sim_json_string(stdout, scene.name);
  printf(",\n  \"nq\": %d,\n  \"nv\": %d,\n", m->nq, m->nv);
  printf("  \"steps\": %lld,\n  \"dt\": %.17g,\n  \"integrator\": \"%s\",\n", steps, m->timestep,
         khz_sim_integrator(m->integrator));
  printf("  \"wall_time_s\": %.9f,\n  \"us_per_step\": %.4f,\n", wall, 1e6 * wall / (double)steps);
  printf("  \"final_time\": %.17g,\n", d->time);
  khz_sim_energy_json("energy_start", ke0, pe0);
  khz_sim_energy_json("energy_end", ke1, pe1);
  printf("  \"warnings\": {");
  for (int w = 0; w < KHZ_NWARNING; w++)
    printf("%s\"%s\": %d", w ? ", " : "", khz_warningName(w), d->warning[w]);
  printf("},\n");
  printf("  \"state_hash\": \"%016llx\",\n", (unsigned long long)khz_hashState(m, d));
  printf("  \"contact_method\": ");
  khz_sim_json_string(stdout, khz_contactMethodName((khzContactMethod)d->contact_method));
  int nsleep = 0;
  for (int i = 1; i < m->nbody; i++) nsleep += m->body_parent[i] == 0 && khz_bodySleeping(m, d, i);
  printf(",\n  \"contacts_at_end\": %d,\n  \"sleeping_at_end\": %d", d->ncontact, nsleep);
  if (act.n) {
    printf(",\n  \"ctrl\": {");
    for (int i = 0; i < act.n; i++) {
      printf("%s", i ? ", " : "");
      khz_sim_json_string(stdout, act.a[i].name);
      printf(": ");
      khz_sim_json_number(stdout, act.ctrl[i]);
    }
    printf("}");
  }
  printf("\n}\n");
  if (flags[3].given && rc == 0) {
    fprintf(stderr, "khz-sim run: wrote %lld rows to %s\n", steps + 1, flags[3].value);
  }
  if (flags[5].given && rc == 0) {
    fprintf(stderr, "khz-sim run: wrote %lld contact rows to %s\n", crows, flags[5].value);
  }

done:
  if (csv) fclose(csv);
  if (ccsv) fclose(ccsv);
  free(act.ctrl);
  free(act.dof);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  khz_deleteScene(&scene);
  return rc;
}

/* ---------------------------------------------------------------- main -- */

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "khz-sim: usage: khz-sim info|fd|run MODEL [FLAGS] (see khz-sim --help)\n");
    return KHZ_SIM_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    khz_sim_help_main(stdout);
    return 0;
  }
  if (strcmp(cmd, "info") == 0) return khz_sim_info(argc - 2, argv + 2);
  if (strcmp(cmd, "fd") == 0) return khz_sim_fd(argc - 2, argv + 2);
  if (strcmp(cmd, "run") == 0) return khz_sim_run(argc - 2, argv + 2);
  fprintf(stderr, "khz-sim: unknown command '%s' (expected info, fd or run; see khz-sim --help)\n",
          cmd);
  return KHZ_SIM_USAGE;
}
