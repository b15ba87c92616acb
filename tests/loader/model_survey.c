/* model_survey.c — loads every model under a folder with khz and runs those
 * that load on the floor (issue 19).
 *
 *   build/tests/loader/khz-model-survey [--seconds S] [--quiet] DIR...
 *
 * Every .urdf and .xml file under DIR (recursively, sorted) is a model, except
 * MJCF fragments (.xml files without a <worldbody>, e.g. dm_control's
 * common/ files, which other files include). For each model it prints one line:
 *
 *   MODEL  FORMAT  load OK|ERROR  [run: finite, floor, energy] [first error]
 *
 * A model that loads is placed on a ground plane (added unless the world
 * already has a plane, whose height then counts as the floor's: z = 0, or lower when a geom's bounding sphere reaches
 * below 0 at the start, e.g. a hand welded at the origin) with contact on (penalty, automatic gains), zero
 * commands, and run S seconds (5 by default) at its own timestep:
 *   - finite: no step was rolled back as non-finite (KHZ_WARN_BADSTATE) and
 *     the final state is finite;
 *   - floor: no moving body's centre of mass went more than 1 cm below the
 *     floor (bodies that start below it are not counted), and the deepest
 *     contact against a world geom stayed under 1 cm;
 *   - energy: kinetic + potential (gravity, joint springs) energy never rose more than
 *     0.1 J + 1% of m g (1 m) above its initial value (m the total mass).
 * URDF robots get a floating base, raised so that their lowest body origin
 * is 0.5 m above the floor, unless their root link is massless (an arm:
 * welded at the origin), without self-collision (a scene's default,
 * docs/scene-format.md); MJCF models keep their own poses, joints and
 * contact filters.
 * The last line counts: models, load OK, run OK (all three checks).
 * --table prints issue 19's coverage table instead (markdown): model, format,
 * loads, first error, forward dynamics against MuJoCo's (relative qdd error
 * at 20 random states, when built with libmujoco-dev; a URDF welded at its
 * root, as MuJoCo's URDF import does, and read by MuJoCo without its
 * <visual> and <collision>: MuJoCo 2.2 reads STL meshes only), the run,
 * khz's microseconds per step on the floor (with the survey's checks) and
 * MuJoCo's per mj_step on the model as its file defines it (2000 steps from
 * qpos0: with its own floor, or falling freely when it has none). With
 * --require-all the exit status is 1 unless every model loads and runs OK;
 * with --qdd-max E (implies --table), unless every compared model without
 * full inertia tensors (MuJoCo diagonalises those to about 1e-7) agrees to E.
 * Files may be given instead of folders.
 * Warnings of the loaders are counted, not printed (--verbose prints them);
 * --trace prints the energy and the deepest contact every 0.05 s.
 * MJCF models whose bodies weigh meshes are compared with MuJoCo on a copy
 * with exactmeshinertia="true" (khz computes the solid mesh's inertia; MuJoCo
 * 2.2's default is a legacy formula), marked "(exactmeshinertia)"; a model
 * with a mesh file MuJoCo cannot open on a copy without its <mesh> assets
 * and mesh geoms, marked "(without its mesh geoms)" (right only where the
 * meshes are visual: every body with an <inertial>). The copies are written
 * beside the model (meshdir, includes) as .khz-survey-*.xml and removed.
 */
#define _XOPEN_SOURCE 700
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <time.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "khz/load.h"
#ifdef KHZ_WITH_MUJOCO
#include <mujoco/mujoco.h>
#endif

static int verbose, trace, require_all, table;
static double qdd_max; /* --qdd-max E: exit 1 when a compared model's qdd error exceeds E */
static int qdd_fail;
static int nwarn;

static void on_warn(void *user, const char *msg) {
  (void)user;
  nwarn++;
  if (verbose) printf("    warning: %s\n", msg);
}

/* ------------------------------------------------------------ the files -- */

static char **files;
static int nfiles, capfiles;

static int has_ext(const char *p, const char *ext) {
  size_t n = strlen(p), e = strlen(ext);
  return n > e && strcmp(p + n - e, ext) == 0;
}

static int is_fragment(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char buf[1 << 16];
  int found = 0;
  size_t n;
  while (!found && (n = fread(buf, 1, sizeof buf - 1, f)) > 0) {
    buf[n] = 0;
    if (strstr(buf, "<worldbody") || strstr(buf, "<include")) found = 1;
  }
  fclose(f);
  return !found;
}

static void add_file(const char *path) {
  if (nfiles == capfiles) {
    capfiles = capfiles ? 2 * capfiles : 64;
    char **f = realloc(files, (size_t)capfiles * sizeof *files);
    if (!f) exit(3);
    files = f;
  }
  files[nfiles++] = strdup(path);
}

static void walk(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st)) continue;
    if (S_ISDIR(st.st_mode)) {
      walk(path);
    } else if (has_ext(path, ".urdf") || (has_ext(path, ".xml") && !is_fragment(path))) {
      add_file(path);
    }
  }
  closedir(d);
}

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ------------------------------------------------------------- the runs -- */

static double floor_z; /* the height of the floor the survey added (0 when the model has one) */

typedef struct result {
  int finite, floor, energy;
  double sink;      /* deepest a moving com went below the floor (m) */
  double depth;     /* deepest contact against a world geom (m) */
  double gain;      /* largest energy rise (J) */
  double tol;       /* allowed rise (J) */
  double t_fail;    /* time of the first non-finite step, or -1 */
  double us_per_step; /* wall time per step of the run (with the checks) */
} result;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------ beside MuJoCo -- */

/* forward dynamics against MuJoCo's (mj_forward's qacc with its constraints,
 * passive forces and actuation off) at 20 random states and joint forces (in
 * [-1, 1] N or N m, MuJoCo's qfrc_applied) of the joints khz and
 * MuJoCo share by name: the largest |qdd - qacc| over the largest |qacc|; and
 * MuJoCo's own microseconds per mj_step over 2000 steps from qpos0. Returns 0
 * when MuJoCo is not built in or cannot load the file (why in note). */
typedef struct mujoco_figures {
  double qdd_rel;  /* relative qdd error */
  int unmatched;   /* MuJoCo joints khz has no joint of that name for */
  int full_inertia; /* some body's inertia is not diagonal in its frame */
  int exact_mesh;  /* compared on a copy with exactmeshinertia="true" (its meshes weigh) */
  int no_meshes;   /* compared on a copy without its mesh geoms (MuJoCo cannot open one) */
  double us_per_step;
  char note[160];
} mujoco_figures;

static unsigned long long rng = 0x9e3779b97f4a7c15ULL;
static double uniform(double a, double b) {
  rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
  return a + (b - a) * (double)((rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

#ifdef KHZ_WITH_MUJOCO
/* a copy of URDF file path without its <visual> and <collision> elements, in
 * a temporary file (name in tmp): what MuJoCo's URDF import needs for the
 * dynamics (its <inertial>s, joints), without the meshes MuJoCo 2.2 cannot
 * read (it takes STL only; Bullet's models use OBJ). 0 or -1. */
static int urdf_without_geometry(const char *path, char *tmp, size_t tmpsz) {
  FILE *in = fopen(path, "rb");
  if (!in) return -1;
  fseek(in, 0, SEEK_END);
  long n = ftell(in);
  fseek(in, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (!buf || fread(buf, 1, (size_t)n, in) != (size_t)n) {
    free(buf);
    fclose(in);
    return -1;
  }
  fclose(in);
  buf[n] = 0;
  snprintf(tmp, tmpsz, "/tmp/khz-survey-XXXXXX.urdf");
  int fd = mkstemps(tmp, 5);
  FILE *out = fd >= 0 ? fdopen(fd, "wb") : NULL;
  if (!out) {
    free(buf);
    return -1;
  }
  static const char *const drop[] = {"visual", "collision"};
  for (char *p = buf; *p;) {
    /* the next <visual or <collision element (not <visual_...>) */
    char *next = NULL;
    int which = -1;
    for (int k = 0; k < 2; k++) {
      char open[32];
      snprintf(open, sizeof open, "<%s", drop[k]);
      for (char *q = strstr(p, open); q; q = strstr(q + 1, open)) {
        char c = q[strlen(open)];
        if (c == '>' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '/') {
          if (!next || q < next) next = q, which = k;
          break;
        }
      }
    }
    if (!next) {
      fputs(p, out);
      break;
    }
    fwrite(p, 1, (size_t)(next - p), out);
    /* to the end of the element: "/>" of an empty one, else its closing tag */
    char *gt = strchr(next, '>'), close[32];
    if (!gt) break;
    snprintf(close, sizeof close, "</%s>", drop[which]);
    if (gt[-1] == '/') {
      p = gt + 1;
    } else {
      char *end = strstr(gt, close);
      if (!end) break;
      p = end + strlen(close);
    }
  }
  fclose(out);
  free(buf);
  return 0;
}
#endif

#ifdef KHZ_WITH_MUJOCO
/* the text of a file (malloc'd, NUL-terminated), NULL when unreadable */
static char *read_text(const char *path) {
  FILE *in = fopen(path, "rb");
  if (!in) return NULL;
  fseek(in, 0, SEEK_END);
  long n = ftell(in);
  fseek(in, 0, SEEK_SET);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)n, in) != (size_t)n) free(buf), buf = NULL;
  fclose(in);
  if (buf) buf[n] = 0;
  return buf;
}

/* text with [at, at + len) replaced by what (a new string; text freed) */
static char *splice(char *text, size_t at, size_t len, const char *what) {
  size_t n = strlen(text), w = strlen(what);
  char *out = malloc(n - len + w + 1);
  if (!out) exit(3);
  memcpy(out, text, at);
  memcpy(out + at, what, w);
  memcpy(out + at + w, text + at + len, n - at - len + 1);
  free(text);
  return out;
}

/* MJCF text with every <include file="F"/> replaced by F's content inside its
 * <mujoco> element (F relative to dir; nested includes too, 16 deep) */
static char *expand_includes(char *text, const char *dir, int depth) {
  char *at;
  while (depth < 16 && (at = strstr(text, "<include"))) {
    char *end = strstr(at, "/>"), *f = strstr(at, "file=\"");
    if (!end || !f || f > end) return text;
    f += 6;
    char name[1024], path[8192];
    snprintf(name, sizeof name, "%.*s", (int)(strchr(f, '"') - f), f);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *inc = read_text(path);
    if (!inc) return text;
    char *open = strstr(inc, "<mujoco"), *close = strstr(inc, "</mujoco>");
    const char *body = "";
    if (open && close && strchr(open, '>') < close) {
      *close = 0;
      body = strchr(open, '>') + 1;
    }
    char *sub = expand_includes(strdup(body), dir, depth + 1);
    free(inc);
    text = splice(text, (size_t)(at - text), (size_t)(end + 2 - at), sub);
    free(sub);
  }
  return text;
}

/* drops every line of text that contains a and b (b NULL: a alone) */
static void drop_lines_with(char *text, const char *a, const char *b) {
  char *line = text;
  while (*line) {
    char *nl = strchr(line, '\n'), *end = nl ? nl + 1 : line + strlen(line);
    char save = *end;
    *end = 0;
    int hit = strstr(line, a) && (!b || strstr(line, b));
    *end = save;
    if (hit) memmove(line, end, strlen(end) + 1);
    else line = end;
  }
}

/* A copy of MJCF file path for MuJoCo 2.2, beside it (its meshdir and includes
 * resolve there; name in tmp), with its includes expanded and
 *   exact: <compiler exactmeshinertia="true"/> first, the solid meshes' inertia
 *          that khz computes (MuJoCo 2.2's default is a legacy formula);
 *   no_meshes: without its <mesh> assets and mesh geoms (for files whose mesh
 *          files are not all there: only right where the meshes are visual,
 *          every body with an <inertial>, as the qdd column then shows).
 * 0 or -1 (the folder not writable, ...). */
static int mjcf_copy(const char *path, int exact, int no_meshes, char *tmp, size_t tmpsz) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else snprintf(dir, sizeof dir, ".");
  char *text = read_text(path);
  if (!text) return -1;
  text = expand_includes(text, dir, 0);
  if (no_meshes) {
    drop_lines_with(text, "<mesh ", NULL);
    drop_lines_with(text, "<geom", "mesh=\"");
  }
  char *root = strstr(text, "<mujoco");
  if (exact && root && strchr(root, '>')) {
    size_t at = (size_t)(strchr(root, '>') + 1 - text);
    text = splice(text, at, 0, "\n  <compiler exactmeshinertia=\"true\"/>");
  }
  snprintf(tmp, tmpsz, "%s/.khz-survey-XXXXXX.xml", dir);
  int fd = mkstemps(tmp, 4);
  FILE *out = fd >= 0 ? fdopen(fd, "wb") : NULL;
  int ok = out && fputs(text, out) >= 0;
  if (out) ok &= fclose(out) == 0;
  free(text);
  if (!ok && fd >= 0) remove(tmp);
  return ok ? 0 : -1;
}
#endif

/* whether the file gives an inertia tensor with products of inertia: a
 * non-zero URDF ixy, ixz or iyz, or an MJCF fullinertia */
static int file_has_full_inertia(const char *path) {
  FILE *in = fopen(path, "rb");
  if (!in) return 0;
  char line[4096];
  int full = 0;
  while (!full && fgets(line, sizeof line, in)) {
    if (strstr(line, "fullinertia")) full = 1;
    static const char *const prod[] = {"ixy=\"", "ixz=\"", "iyz=\""};
    for (int k = 0; k < 3; k++) {
      const char *p = strstr(line, prod[k]);
      if (p && strtod(p + 5, NULL) != 0) full = 1;
    }
  }
  fclose(in);
  return full;
}

static int beside_mujoco(const char *path, const khzModel *m_run, mujoco_figures *f) {
  memset(f, 0, sizeof *f);
#ifndef KHZ_WITH_MUJOCO
  (void)path, (void)m_run;
  snprintf(f->note, sizeof f->note, "MuJoCo not built in");
  return 0;
#else
  char err[512] = "";
  const khzModel *m = m_run;
  khzModel *m_fixed = NULL;
  mjModel *mm;
  if (has_ext(path, ".urdf")) {
    /* MuJoCo's URDF import welds the root to the world: khz's model the
     * same way (the survey runs it on a floating base), with the survey's
     * gravity; MuJoCo reads the file without its geometry (above) */
    char tmp[64];
    if (urdf_without_geometry(path, tmp, sizeof tmp) < 0) {
      snprintf(f->note, sizeof f->note, "URDF: cannot write a copy without geometry");
      return 0;
    }
    mm = mj_loadXML(tmp, NULL, err, sizeof err);
    remove(tmp);
    khzSpec *spec = khz_spec_new();
    double gravity[3] = {0, 0, -9.81};
    khz_spec_setGravity(spec, gravity);
    khzUrdfOptions o;
    khz_urdf_defaultOptions(&o);
    o.floating_base = 0;
    char kerr[512];
    if (khz_loadURDF(spec, path, &o, kerr, sizeof kerr) >= 0) m_fixed = khz_compile(spec, kerr, sizeof kerr);
    khz_spec_destroy(&spec);
    if (!m_fixed) {
      if (mm) mj_deleteModel(mm);
      snprintf(f->note, sizeof f->note, "URDF welded: %.100s", kerr);
      return 0;
    }
    m = m_fixed;
  } else {
    mm = mj_loadXML(path, NULL, err, sizeof err);
    /* a mesh file MuJoCo cannot open (a sample without its visual STLs):
     * the dynamics on a copy without the mesh geoms */
    if (!mm && strstr(err, "could not open STL file")) {
      char tmp[4200], err2[512];
      if (mjcf_copy(path, 0, 1, tmp, sizeof tmp) == 0) {
        mm = mj_loadXML(tmp, NULL, err2, sizeof err2);
        remove(tmp);
        f->no_meshes = mm != NULL;
      }
    }
  }
  if (!mm) {
    for (char *c = err; *c; c++)
      if (*c == '\n' || *c == '|') *c = ' ';
    snprintf(f->note, sizeof f->note, "MuJoCo 2.2 refuses it: %.100s", err);
    khz_deleteModel(&m_fixed);
    return 0;
  }
  /* full inertia tensors in the file (URDF ixy / ixz / iyz, MJCF fullinertia):
   * MuJoCo diagonalises them, to about 1e-7 */
  f->full_inertia = file_has_full_inertia(path);
  mjData *md = mj_makeData(mm);
  khzData *d = khz_makeData(m, 0);
  double *tau = calloc((size_t)m->nv + 1, sizeof *tau), *qdd = calloc((size_t)m->nv + 1, sizeof *qdd);
  int *map = calloc((size_t)mm->njnt + 1, sizeof *map);
  for (int j = 0; j < mm->njnt; j++) {
    const char *n = mj_id2name(mm, mjOBJ_JOINT, j);
    char gen[32];
    if (!n) snprintf(gen, sizeof gen, "joint%d", j), n = gen;
    map[j] = khz_name2joint(m, n);
    if (map[j] <= 0) f->unmatched++;
  }
  /* timing first, from qpos0 with everything on */
  double t0 = now_s();
  for (int k = 0; k < 2000; k++) mj_step(mm, md);
  f->us_per_step = 1e6 * (now_s() - t0) / 2000;
  /* bodies that weigh meshes: the dynamics against MuJoCo's exact solid-mesh
   * inertia (exactmeshinertia, which khz computes), on a copy */
  if (!has_ext(path, ".urdf") && mm->nmesh > 0) {
    char tmp[4200], err2[512];
    mjModel *exact = NULL;
    if (mjcf_copy(path, 1, f->no_meshes, tmp, sizeof tmp) == 0) {
      exact = mj_loadXML(tmp, NULL, err2, sizeof err2);
      remove(tmp);
    }
    if (exact && exact->nv == mm->nv && exact->njnt == mm->njnt) {
      mj_deleteData(md);
      mj_deleteModel(mm);
      mm = exact;
      md = mj_makeData(mm);
      f->exact_mesh = 1;
    } else if (exact) {
      mj_deleteModel(exact);
    }
  }
  mm->opt.disableflags |= mjDSBL_CONSTRAINT | mjDSBL_PASSIVE | mjDSBL_ACTUATION;
  double worst = 0, scale = 0;
  for (int t = 0; t < 20; t++) {
    mj_resetData(mm, md);
    memcpy(d->q, m->q0, (size_t)m->nq * sizeof(double));
    memset(d->qd, 0, (size_t)m->nv * sizeof(double));
    memset(tau, 0, (size_t)m->nv * sizeof(double));
    for (int j = 0; j < mm->njnt; j++) {
      int b = map[j], qa = mm->jnt_qposadr[j], da = mm->jnt_dofadr[j], type = mm->jnt_type[j];
      int nq = type == mjJNT_FREE ? 7 : type == mjJNT_BALL ? 4 : 1, nv = nq == 7 ? 6 : nq == 4 ? 3 : 1;
      double q[7];
      if (nq == 1) {
        int lim = mm->jnt_limited[j];
        q[0] = uniform(lim ? mm->jnt_range[2 * j] : -1, lim ? mm->jnt_range[2 * j + 1] : 1);
      } else {
        int o = nq == 7 ? 3 : 0;
        for (int k = 0; k < o; k++) q[k] = md->qpos[qa + k] + uniform(-0.1, 0.1);
        double n = 0;
        for (int k = 0; k < 4; k++) q[o + k] = uniform(-1, 1), n += q[o + k] * q[o + k];
        for (int k = 0; k < 4; k++) q[o + k] /= sqrt(n);
      }
      for (int k = 0; k < nq; k++) {
        md->qpos[qa + k] = q[k];
        if (b > 0) d->q[m->jnt_qadr[b] + k] = q[k];
      }
      for (int k = 0; k < nv; k++) {
        double v = uniform(-1, 1);
        md->qvel[da + k] = v;
        if (b > 0) d->qd[m->jnt_dofadr[b] + k] = v;
      }
      /* and random joint forces (MuJoCo's qfrc_applied): without them a model
       * whose gravity and bias forces vanish (joints about vertical axes,
       * spherical inertias) would compare zero with zero */
      for (int k = 0; k < nv && b > 0; k++) {
        double t = uniform(-1, 1);
        md->qfrc_applied[da + k] = t;
        tau[m->jnt_dofadr[b] + k] = t;
      }
    }
    mj_forward(mm, md);
    khz_aba(m, d, d->q, d->qd, tau, qdd);
    for (int j = 0; j < mm->njnt; j++) {
      int b = map[j], type = mm->jnt_type[j];
      if (b <= 0) continue;
      int nv = type == mjJNT_FREE ? 6 : type == mjJNT_BALL ? 3 : 1;
      for (int k = 0; k < nv; k++) {
        double a = qdd[m->jnt_dofadr[b] + k], r = md->qacc[mm->jnt_dofadr[j] + k];
        worst = fmax(worst, fabs(a - r));
        scale = fmax(scale, fabs(r));
      }
    }
  }
  f->qdd_rel = worst / fmax(scale, 1e-300);
  free(tau), free(qdd), free(map);
  khz_deleteData(&d);
  khz_deleteModel(&m_fixed);
  mj_deleteData(md);
  mj_deleteModel(mm);
  if (has_ext(path, ".urdf")) f->us_per_step = 0; /* no geometry: not the same model */
  return 1;
#endif
}

/* kinetic + gravity + joint-spring energy */
static double total_energy(const khzModel *m, khzData *d) {
  double k, p;
  khz_kinematics(m, d);
  khz_energy(m, d, &k, &p);
  for (int b = 1; b < m->nbody; b++) {
    int dof = m->jnt_dofadr[b];
    if (m->jnt_nv[b] != 1 || m->dof_stiffness[dof] == 0) continue;
    double x = d->q[m->jnt_qadr[b]] - m->dof_springref[dof];
    p += 0.5 * m->dof_stiffness[dof] * x * x;
  }
  return k + p;
}

static void run(const khzModel *m, double seconds, result *r) {
  khzData *d = khz_makeData(m, 0);
  memset(r, 0, sizeof *r);
  r->t_fail = -1;
  if (!d) return;
  double mass = 0;
  for (int b = 1; b < m->nbody; b++) mass += m->body_mass[b];
  double g = sqrt(m->gravity[0] * m->gravity[0] + m->gravity[1] * m->gravity[1] +
                  m->gravity[2] * m->gravity[2]);
  r->tol = 0.1 + 0.01 * mass * (g > 0 ? g : 9.81);
  double e0 = total_energy(m, d);
  double *z0 = calloc((size_t)m->nbody, sizeof *z0);
  for (int b = 0; b < m->nbody; b++) z0[b] = d->xcom[3 * b + 2];
  long steps = (long)ceil(seconds / m->timestep), done = 0;
  int finite = 1;
  double t0 = now_s();
  for (long s = 0; s < steps; s++) {
    khz_step(m, d);
    done++;
    if (verbose && s == 0) /* the pairs in contact at the start, deepest point each */
      for (int c = 0; c < d->ncontact; c++) {
        const khzContact *ct = &d->contact[c];
        printf("    contact at start: %s - %s, depth %.4f m\n", m->body_name[ct->body[0]],
               m->body_name[ct->body[1]], d->cpoint[ct->deepest].depth);
      }
    if (d->warning[KHZ_WARN_BADSTATE] && r->t_fail < 0) r->t_fail = d->time;
    for (int i = 0; i < m->nq; i++)
      if (!isfinite(d->q[i])) finite = 0;
    if (!finite || r->t_fail >= 0) break; /* the rest would be meaningless */
    for (int b = 1; b < m->nbody; b++) {
      if (m->body_root[b] == 0 || m->body_mass[b] <= 0) continue;
      double z = d->xcom[3 * b + 2];
      if (z0[b] >= floor_z - 0.01 && floor_z - z > r->sink) r->sink = floor_z - z;
    }
    for (int c = 0; c < d->ncontact; c++) {
      const khzContact *ct = &d->contact[c];
      if (ct->body[0] != 0 && ct->body[1] != 0) continue;
      const khzContactPoint *p = &d->cpoint[ct->deepest];
      if (p->depth > r->depth) r->depth = p->depth;
    }
    if (s % 10 == 9) {
      double e = total_energy(m, d) - e0;
      if (e > r->gain) r->gain = e;
    }
    if (trace && (s + 1) % (long)fmax(1, round(fmin(0.05, seconds / 40) / m->timestep)) == 0) {
      double dmax = 0;
      int pair = -1;
      for (int c = 0; c < d->ncontact; c++) {
        const khzContactPoint *p = &d->cpoint[d->contact[c].deepest];
        if (p->depth > dmax) dmax = p->depth, pair = c;
      }
      printf("    t %.3f  energy %+.4g J  contacts %d  deepest %.4f m", d->time,
             total_energy(m, d) - e0, d->ncontact, dmax);
      if (pair >= 0)
        printf(" (%s - %s)", m->body_name[d->contact[pair].body[0]],
               m->body_name[d->contact[pair].body[1]]);
      printf("\n");
    }
  }
  r->us_per_step = done ? 1e6 * (now_s() - t0) / (double)done : 0;
  r->finite = finite && r->t_fail < 0;
  r->floor = r->sink <= 0.01 && r->depth <= 0.01;
  r->energy = r->gain <= r->tol;
  free(z0);
  khz_deleteData(&d);
}

/* ------------------------------------------------------------ the loads -- */

/* 1 when the world has a plane; floor_z becomes the height of its origin (the
 * models' floors are horizontal: Menagerie's Allegro scenes put it at -0.1 m) */
static int world_has_plane(khzSpec *spec) {
  for (int i = 0; i < khz_spec_ngeom(spec); i++) {
    khzGeomSpec *g = khz_spec_geom(spec, i);
    if (g->body == 0 && g->type == KHZ_GEOM_PLANE) return floor_z = g->pos[2], 1;
  }
  return 0;
}

static khzModel *load(const char *path, char *err, size_t errsz) {
  floor_z = 0;
  int welded = 0;
  khzSpec *spec = khz_spec_new();
  khzContactOptions co;
  khz_spec_defaultContact(&co);
  co.method = KHZ_CONTACT_PENALTY;
  khz_spec_setContact(spec, &co);
  double gravity[3] = {0, 0, -9.81};
  khz_spec_setGravity(spec, gravity);
  khz_spec_setTimestep(spec, 1e-3);
  khz_spec_setIntegrator(spec, KHZ_INT_RK4);
  int rc;
  if (has_ext(path, ".urdf")) {
    khzUrdfOptions o;
    khz_urdf_defaultOptions(&o);
    o.floating_base = 1;
    o.warn = on_warn;
    rc = khz_loadURDF(spec, path, &o, err, errsz);
    if (rc < 0 && strstr(err, "as a floating base it needs a mass")) {
      /* a massless root: a robot meant to be welded (an arm) */
      o.floating_base = 0;
      nwarn = 0;
      rc = khz_loadURDF(spec, path, &o, err, errsz);
      welded = 1;
    }
    if (rc >= 0) {
      /* a scene's default (self_collision: false): the robot's geoms touch the floor only */
      for (int g = 0; g < khz_spec_ngeom(spec); g++) {
        khz_spec_geom(spec, g)->contype = 2;
        khz_spec_geom(spec, g)->conaffinity = ~2u;
      }
    }
    if (rc >= 0 && !welded) {
      /* raise the robot: its lowest body origin 0.5 m above the floor */
      khzModel *m0 = khz_compile(spec, err, errsz);
      if (!m0) {
        khz_spec_destroy(&spec);
        return NULL;
      }
      khzData *d = khz_makeData(m0, 0);
      khz_kinematics(m0, d);
      double zmin = INFINITY;
      for (int b = 1; b < m0->nbody; b++) zmin = fmin(zmin, d->xpos[3 * b + 2]);
      khz_deleteData(&d);
      khz_deleteModel(&m0);
      khzBodySpec *root = khz_spec_body(spec, rc);
      root->q0[2] += 0.5 - zmin;
    }
  } else {
    khzMjcfOptions o;
    khz_mjcf_defaultOptions(&o);
    o.warn = on_warn;
    rc = khz_loadMJCF(spec, path, &o, err, errsz);
  }
  if (rc < 0) {
    khz_spec_destroy(&spec);
    return NULL;
  }
  if (!world_has_plane(spec)) {
    /* the floor at z = 0, or lower when a geom starts below it (a hand welded at the
     * origin): the lowest point of the geoms' bounding spheres at q0 */
    khzModel *m0 = khz_compile(spec, err, errsz);
    if (!m0) {
      khz_spec_destroy(&spec);
      return NULL;
    }
    khzData *d = khz_makeData(m0, 0);
    khz_kinematics(m0, d);
    double zlow = 0;
    for (int g = 0; g < m0->ngeom; g++) {
      int b = m0->geom_body[g];
      if (b == 0 || m0->geom_visual[g]) continue;
      const double *sz = m0->geom_size + 3 * g, *R = d->xrot + 9 * b, *p = m0->geom_pos + 3 * g;
      double r = 0;
      switch (m0->geom_type[g]) {
        case KHZ_GEOM_SPHERE: r = sz[0]; break;
        case KHZ_GEOM_CAPSULE: r = sz[0] + sz[1]; break;
        case KHZ_GEOM_CYLINDER: r = sqrt(sz[0] * sz[0] + sz[1] * sz[1]); break;
        case KHZ_GEOM_BOX: r = sqrt(sz[0] * sz[0] + sz[1] * sz[1] + sz[2] * sz[2]); break;
        case KHZ_GEOM_MESH: {
          int id = m0->geom_meshid[g];
          if (id < 0) break;
          const double *v = m0->mesh_vert + 3 * m0->mesh_vertadr[id];
          for (int k = 0; k < m0->mesh_vertnum[id]; k++) {
            double x = v[3 * k] * sz[0], y = v[3 * k + 1] * sz[1], z = v[3 * k + 2] * sz[2];
            r = fmax(r, sqrt(x * x + y * y + z * z));
          }
          break;
        }
        default: break;
      }
      double zc = d->xpos[3 * b + 2] + R[6] * p[0] + R[7] * p[1] + R[8] * p[2];
      zlow = fmin(zlow, zc - r);
    }
    khz_deleteData(&d);
    khz_deleteModel(&m0);
    khzGeomSpec g;
    khz_spec_defaultGeom(&g);
    g.body = 0;
    g.type = KHZ_GEOM_PLANE;
    g.pos[2] = zlow;
    g.size[0] = g.size[1] = 10, g.size[2] = 1;
    khz_spec_addGeom(spec, &g);
    floor_z = zlow;
  }
  khzModel *m = khz_compile(spec, err, errsz);
  khz_spec_destroy(&spec);
  return m;
}

int main(int argc, char **argv) {
  double seconds = 5;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = atof(argv[++i]);
    } else if (strcmp(argv[i], "--verbose") == 0) {
      verbose = 1;
    } else if (strcmp(argv[i], "--trace") == 0) {
      trace = 1;
    } else if (strcmp(argv[i], "--qdd-max") == 0 && i + 1 < argc) {
      qdd_max = atof(argv[++i]);
      table = 1;
    } else if (strcmp(argv[i], "--require-all") == 0) {
      require_all = 1;
    } else if (strcmp(argv[i], "--table") == 0) {
      table = 1;
    } else if (strcmp(argv[i], "--help") == 0 || argv[i][0] == '-') {
      fprintf(stderr, "usage: %s [--seconds S] [--verbose] [--trace] [--require-all] [--table] [--qdd-max E] DIR|FILE...\n", argv[0]);
      return strcmp(argv[i], "--help") == 0 ? 0 : 2;
    } else {
      struct stat st;
      if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode))
        add_file(argv[i]);
      else
        walk(argv[i]);
    }
  }
  if (nfiles == 0) {
    fprintf(stderr, "no .urdf or .xml model found\n");
    return 2;
  }
  qsort(files, (size_t)nfiles, sizeof *files, cmp);
  int nload = 0, nrun = 0;
  if (table)
    printf("| model | format | loads | first error | qdd vs MuJoCo (rel.) | %.0f s run | "
           "khz us/step | MuJoCo us/step |\n|---|---|---|---|---|---|---|---|\n", seconds);
  for (int i = 0; i < nfiles; i++) {
    char err[2048] = "";
    nwarn = 0;
    if (verbose) printf("%s\n", files[i]);
    khzModel *m = load(files[i], err, sizeof err);
    const char *fmt = has_ext(files[i], ".urdf") ? "urdf" : "mjcf";
    if (!m) {
      if (table) {
        for (char *c = err; *c; c++)
          if (*c == '\n' || *c == '|') *c = ' ';
        printf("| %s | %s | no | %s | | | | |\n", files[i], fmt, err);
      }
      else
        printf("%-70s %s  load ERROR  %s\n", files[i], fmt, err);
      continue;
    }
    nload++;
    result r;
    run(m, seconds, &r);
    int ok = r.finite && r.floor && r.energy;
    nrun += ok;
    if (table) {
      mujoco_figures mf;
      char qe[200], mus[32] = "";
      if (beside_mujoco(files[i], m, &mf)) {
        snprintf(qe, sizeof qe, "%.2g%s%s%s%s%s", mf.qdd_rel,
                 mf.unmatched ? " (joints unmatched)" : "", mf.full_inertia ? " (full inertia)" : "",
                 has_ext(files[i], ".urdf") ? " (welded)" : "",
                 mf.exact_mesh ? " (exactmeshinertia)" : "",
                 mf.no_meshes ? " (without its mesh geoms)" : "");
        if (mf.us_per_step > 0) snprintf(mus, sizeof mus, "%.1f", mf.us_per_step);
        /* MuJoCo diagonalises full inertia tensors only to about 1e-7: not held to qdd_max */
        if (qdd_max > 0 && !mf.full_inertia && (mf.unmatched || !(mf.qdd_rel <= qdd_max))) {
          fprintf(stderr, "%s: qdd differs from MuJoCo's by %.3g (limit %.3g)%s\n", files[i],
                  mf.qdd_rel, qdd_max, mf.unmatched ? ", joints unmatched" : "");
          qdd_fail = 1;
        }
      } else {
        snprintf(qe, sizeof qe, "%s", mf.note);
      }
      char runs[200];
      if (ok)
        snprintf(runs, sizeof runs, "OK");
      else
        snprintf(runs, sizeof runs, "%s%s%s%s", r.finite ? "" : "non-finite",
                 r.floor ? "" : r.finite ? "below the floor" : "; below the floor",
                 r.energy ? "" : r.finite && r.floor ? "energy gain" : "; energy gain",
                 "");
      if (!r.finite && r.t_fail >= 0) snprintf(runs, sizeof runs, "non-finite at %.3f s", r.t_fail);
      else if (!ok && !r.energy) snprintf(runs + strlen(runs), sizeof runs - strlen(runs), " (+%.3g J)", r.gain);
      printf("| %s | %s | yes (%d warnings) | | %s | %s | %.1f | %s |\n", files[i], fmt, nwarn, qe,
             runs, r.us_per_step, mus);
      khz_deleteModel(&m);
      continue;
    }
    printf("%-70s %s  load OK (%d warnings, %d bodies, %d dofs)  run %s: finite %s",
           files[i], fmt, nwarn, m->nbody - 1, m->nv, ok ? "OK" : "FAIL",
           r.finite ? "yes" : "NO");
    if (r.t_fail >= 0) printf(" (from t = %.3f s)", r.t_fail);
    printf(", floor %s (sink %.4f m, depth %.4f m), energy %s (gain %.3g J, allowed %.3g J)\n",
           r.floor ? "yes" : "NO", r.sink, r.depth, r.energy ? "yes" : "NO", r.gain, r.tol);
    khz_deleteModel(&m);
  }
  printf("%smodels %d, load OK %d, run OK %d (%.1f s on the floor)\n", table ? "\n" : "", nfiles,
         nload, nrun, seconds);
  for (int i = 0; i < nfiles; i++) free(files[i]);
  free(files);
  return (require_all && (nload < nfiles || nrun < nfiles)) || qdd_fail ? 1 : 0;
}
