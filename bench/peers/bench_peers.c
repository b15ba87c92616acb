/* bench_peers.c — khz next to MuJoCo, ODE and Bullet on the same scenes, in
 * one run, measured the same way for every engine (issue 6,
 * docs/benchmarks.md).
 *
 * Every scene is a khz scene file, loaded by khz's loader and converted to
 * the neutral benchScene (peer.h, scene_convert.c) that each engine's adapter
 * builds its world from. The driver then steps every engine alike and reads
 * back only the body states the adapters report:
 *   - time: each step alone, CLOCK_MONOTONIC; median, p99, steps per second
 *     and the ratio to khz's penalty path on the same scene;
 *   - penetration: khz's own collision detection at the reported poses (a
 *     probe khzData whose q is set from them; the deepest point of every pair);
 *   - energy: kinetic and potential energy from the scene's masses, inertias
 *     and gravity.
 * Experiments follow the scene's `experiment:` block as khz-sim runs them
 * (tools/experiments.c), with one seeded generator in the driver so that all
 * engines see the same V1 orientation and the same V2 pushes.
 *
 * Sections: the validation scenes (V1, V2, V3 pile, stack), the passive chain
 * (energy drift), the pile scaling series (15 .. 960 bodies), and the MJCF
 * humanoid (khz vs MuJoCo only, outside benchScene).
 *
 *   bench_peers [--quick | --smoke] [--engines LIST] [--only LIST] [--json FILE]
 *               [--source DIR] [--piles DIR] [--humanoid FILE] [--trace FILE]
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "khz/khz.h"
#include "khz/load.h"
#include "peer.h"
#include "scene_convert.h"

#ifdef HAVE_MUJOCO
#include <mujoco/mujoco.h>
#endif

#ifndef BENCH_SOURCE_ROOT
#define BENCH_SOURCE_ROOT "."
#endif
#ifndef BENCH_PILE_DIR
#define BENCH_PILE_DIR "."
#endif

/* ---------------------------------------------------------------- engines -- */

typedef struct engineSlot {
  const char *name;
  const benchEngine *engine; /* NULL: not built */
  const char *missing;       /* why not */
  const char *only;          /* the scenes and sections it runs in (NULL: all) */
} engineSlot;

/* khz-euler runs in every scene (V1's block and the chain too); khz-euler-auto
 * on the free-body piles and stacks only (the humanoid has its own rows) */
#define FREE_BODY_SCENES "v3_pile,stack,stack_mixed,stack_heavy_on_light,scaling"

static const engineSlot engines[] = {
    {"khz", &bench_engine_khz, NULL, NULL},
    {"khz-deepest", &bench_engine_khz_deepest, NULL, NULL},
    {"khz-sleep", &bench_engine_khz_sleep, NULL, NULL},
    {"khz-euler", &bench_engine_khz_euler, NULL, NULL},
    {"khz-euler-auto", &bench_engine_khz_euler_auto, NULL, FREE_BODY_SCENES},
    /* khz with the step on two threads (khz_setThreads): the piles */
    {"khz-2t", &bench_engine_khz_2t, NULL, "v3_pile,scaling"},
#ifdef HAVE_MUJOCO
    {"mujoco", &bench_engine_mujoco, NULL, NULL},
#else
    {"mujoco", NULL, "not built: libmujoco not found", NULL},
#endif
#ifdef HAVE_ODE
    {"ode", &bench_engine_ode, NULL, NULL},
    {"ode-sleep", &bench_engine_ode_sleep, NULL, NULL},
#else
    {"ode", NULL, "not built: ODE not found", NULL},
    {"ode-sleep", NULL, "not built: ODE not found", NULL},
#endif
#ifdef HAVE_BULLET
    {"bullet", &bench_engine_bullet, NULL, NULL},
    {"bullet-sleep", &bench_engine_bullet_sleep, NULL, NULL},
#else
    {"bullet", NULL, "not built: Bullet (or a C++ compiler) not found", NULL},
    {"bullet-sleep", NULL, "not built: Bullet (or a C++ compiler) not found", NULL},
#endif
};
#define NENGINE ((int)(sizeof engines / sizeof engines[0]))

/* ---------------------------------------------------------------- options -- */

typedef enum { MODE_FULL, MODE_QUICK, MODE_SMOKE } benchMode;

typedef struct benchOptions {
  benchMode mode;
  int use_engine[NENGINE];
  const char *only;     /* comma-separated scene names, NULL = all */
  const char *json;     /* JSON lines output, NULL = none */
  const char *source;   /* the khz source tree (scenes/) */
  const char *piles;    /* where gen_piles.py wrote pile_N.yaml */
  const char *humanoid; /* MuJoCo's sample humanoid */
  FILE *trace;          /* --trace: every step's kinetic energy and first body, CSV */
} benchOptions;

/* a step count by mode: the full run, --quick, and --smoke (a few steps) */
static int steps_for(const benchOptions *o, int full, int quick) {
  if (o->mode == MODE_SMOKE) return full < 20 ? full : 20;
  return o->mode == MODE_QUICK ? quick : full;
}

static int in_list(const char *list, const char *name) {
  if (!list) return 1;
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && strncmp(p, name, n) == 0) return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

static int in_list_engine(const benchOptions *o, const char *name) {
  for (int e = 0; e < NENGINE; e++)
    if (!strcmp(engines[e].name, name)) return o->use_engine[e];
  return 0;
}

/* whether engine e runs in this section and scene (engineSlot.only) */
static int engine_runs_in(int e, const char *section, const char *scene) {
  return !engines[e].only || in_list(engines[e].only, section) || in_list(engines[e].only, scene);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_peers [--quick | --smoke] [--engines LIST] [--only LIST] [--json FILE]\n"
          "                   [--source DIR] [--piles DIR] [--humanoid FILE] [--trace FILE]\n"
          "  --quick      shorter runs (the whole benchmark in well under a minute)\n"
          "  --smoke      a few steps of everything (a test that it runs)\n"
          "  --engines    comma-separated: khz,khz-deepest,khz-sleep,khz-euler,khz-euler-auto,khz-2t,\n"
          "               mujoco,ode,ode-sleep,bullet,bullet-sleep (default all built; the khz-euler\n"
          "               rows on the piles and stacks only)\n"
          "  --only       comma-separated sections or scenes: v1_block_penetration,\n"
          "               v2_block_forces,v3_pile,stack,stack_mixed,stack_heavy_on_light,\n"
          "               passive_chain,scaling,humanoid\n"
          "  --json       also write every result as one JSON object per line to FILE\n"
          "  --source     the khz source tree holding scenes/ (default %s)\n"
          "  --piles      the directory of pile_N.yaml from gen_piles.py (default %s)\n"
          "  --humanoid   the MJCF humanoid (default /usr/share/mujoco/model/humanoid/humanoid.xml)\n"
          "  --trace      write every step (kinetic energy, pose of the first body) as CSV to FILE\n",
          BENCH_SOURCE_ROOT, BENCH_PILE_DIR);
}

static int parse_engines(benchOptions *o, const char *list) {
  for (int e = 0; e < NENGINE; e++) o->use_engine[e] = in_list(list, engines[e].name);
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    int known = 0;
    for (int e = 0; e < NENGINE; e++)
      known |= strlen(engines[e].name) == len && strncmp(p, engines[e].name, len) == 0;
    if (!known) {
      fprintf(stderr, "bench_peers: --engines: unknown engine '%.*s' (known: khz, khz-deepest, khz-sleep, khz-euler, khz-euler-auto, khz-2t, mujoco, ode, ode-sleep, bullet, bullet-sleep)\n",
              (int)len, p);
      return -1;
    }
    p += len + (p[len] == ',');
  }
  return 0;
}

/* --only names sections and scenes; a typo would silently run nothing */
static int check_only(const char *list) {
  static const char *const known[] = {"v1_block_penetration", "v2_block_forces", "v3_pile", "stack",
                                      "stack_mixed", "stack_heavy_on_light",
                                      "passive_chain", "scaling", "humanoid"};
  for (const char *p = list; p && *p;) {
    size_t len = strcspn(p, ","), k = 0;
    while (k < sizeof known / sizeof known[0] && !(strlen(known[k]) == len && !strncmp(p, known[k], len))) k++;
    if (k == sizeof known / sizeof known[0]) {
      fprintf(stderr, "bench_peers: --only: unknown section '%.*s' (known: v1_block_penetration, "
              "v2_block_forces, v3_pile, stack, stack_mixed, stack_heavy_on_light, passive_chain, "
              "scaling, humanoid)\n", (int)len, p);
      return -1;
    }
    p += len + (p[len] == ',');
  }
  return 0;
}

static int parse_options(int argc, char **argv, benchOptions *o) {
  memset(o, 0, sizeof *o);
  o->source = BENCH_SOURCE_ROOT, o->piles = BENCH_PILE_DIR;
  o->humanoid = "/usr/share/mujoco/model/humanoid/humanoid.xml";
  for (int e = 0; e < NENGINE; e++) o->use_engine[e] = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has_value = i + 1 < argc;
    if (!strcmp(a, "--quick")) o->mode = MODE_QUICK;
    else if (!strcmp(a, "--smoke")) o->mode = MODE_SMOKE;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout), 1;
    else if (!strcmp(a, "--engines") && has_value) {
      if (parse_engines(o, argv[++i])) return -1;
    } else if (!strcmp(a, "--only") && has_value) o->only = argv[++i];
    else if (!strcmp(a, "--json") && has_value) o->json = argv[++i];
    else if (!strcmp(a, "--source") && has_value) o->source = argv[++i];
    else if (!strcmp(a, "--piles") && has_value) o->piles = argv[++i];
    else if (!strcmp(a, "--humanoid") && has_value) o->humanoid = argv[++i];
    else if (!strcmp(a, "--trace") && has_value) {
      if (!(o->trace = fopen(argv[++i], "w"))) {
        fprintf(stderr, "bench_peers: --trace: cannot write '%s'\n", argv[i]);
        return -1;
      }
      fprintf(o->trace, "scene,engine,step,t,kinetic_energy,x,y,z,qw,qx,qy,qz\n");
    }
    else {
      static const char *const valued[] = {"--engines", "--only", "--json", "--source", "--piles", "--humanoid", "--trace"};
      int missing = 0;
      for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) missing |= !strcmp(a, valued[k]);
      fprintf(stderr, "bench_peers: %s '%s' (--help lists the options)\n",
              missing ? "missing value after" : "unknown argument", a);
      return -1;
    }
  }
  return check_only(o->only);
}

/* ---------------------------------------------------------------- results -- */

/* One row of the output: a scene (or a pile size, or the humanoid) and an
 * engine. NAN = not measured / not applicable. */
typedef struct benchRow {
  char section[16]; /* "scene", "scaling", "humanoid" */
  char scene[64];
  char engine[32];
  char status[192]; /* "ok", "skipped: ...", "failed: ...", "diverged: ..." */
  int nbody, steps;
  double median_us, p99_us, steps_per_s, ratio;
  double pen_mean, pen_max, ke_rest; /* over the scene's measurement window */
  double energy_drift, energy_drift_max; /* passive chain: relative change of KE + PE */
  double rest_time_s;  /* pile: first time after which KE stays below the bound */
  double seconds;      /* simulated time */
  int escaped;         /* pile: bodies outside the container (-1: n/a) */
  double drift, sink;  /* stack: largest horizontal drift and sink of a box */
  double contacts;     /* humanoid: mean number of contacts */
  double height_end;   /* humanoid: torso height at the end */
  double create_s;     /* wall time of the adapter's create() */
} benchRow;

typedef struct rowList {
  benchRow *row;
  int n, cap;
} rowList;

static benchRow *new_row(rowList *l, const char *section, const char *scene, const char *engine) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 64;
    benchRow *r = realloc(l->row, (size_t)cap * sizeof *r);
    if (!r) {
      fprintf(stderr, "bench_peers: out of memory\n");
      exit(1);
    }
    l->row = r, l->cap = cap;
  }
  benchRow *r = l->row + l->n++;
  memset(r, 0, sizeof *r);
  snprintf(r->section, sizeof r->section, "%s", section);
  snprintf(r->scene, sizeof r->scene, "%s", scene);
  snprintf(r->engine, sizeof r->engine, "%s", engine);
  snprintf(r->status, sizeof r->status, "ok");
  r->median_us = r->p99_us = r->steps_per_s = r->ratio = NAN;
  r->pen_mean = r->pen_max = r->ke_rest = r->energy_drift = r->energy_drift_max = NAN;
  r->rest_time_s = r->seconds = r->drift = r->sink = r->contacts = r->height_end = NAN;
  r->escaped = -1;
  r->create_s = NAN;
  return r;
}

static void set_status(benchRow *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->status, sizeof r->status, fmt, ap);
  va_end(ap);
}

/* --------------------------------------------------------------- timing -- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* median, p99 (nearest rank) and steps per second of n step times (s) */
static void timing_figures(double *t, int n, benchRow *r) {
  if (n < 1) return;
  double total = 0;
  for (int i = 0; i < n; i++) total += t[i];
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  r->median_us = 1e6 * (n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]));
  int k = (int)ceil(0.99 * n) - 1;
  r->p99_us = 1e6 * t[k < 0 ? 0 : k];
  r->steps_per_s = n / total;
  r->steps = n;
}

/* xorshift64* (as tools/experiments.c): the same numbers on every machine */
typedef struct {
  unsigned long long s;
} benchRng;

static benchRng rng_seeded(double seed) {
  benchRng r = {(unsigned long long)seed * 0x9E3779B97F4A7C15ull + 1};
  return r;
}

static double rng_uniform(benchRng *r, double lo, double hi) {
  r->s ^= r->s >> 12, r->s ^= r->s << 25, r->s ^= r->s >> 27;
  unsigned long long x = r->s * 2685821657736338717ull;
  return lo + (hi - lo) * ((double)(x >> 11) / 9007199254740992.0);
}

/* -------------------------------------------------------------- one run -- */

static FILE *trace_file; /* --trace, for every run */

/* An engine's world on a scene, the states it reports after each step, the
 * step times, and khz's collision detection as the penetration probe. */
typedef struct benchRun {
  const benchScene *sc;
  const benchEngine *eng;
  void *world;
  double (*pos)[3], (*quat)[4], (*vel)[3], (*angvel)[3];
  double *times;
  int ntime, cap;
  khzData *probe;
  benchKhzMap map;
  int diverged; /* the step at which a state became non-finite or absurd, else -1 */
  double create_s; /* how long create() took */
  FILE *trace;     /* NULL, or where every step goes */
  int nstep;       /* steps taken */
} benchRun;

static void read_states(benchRun *r) {
  for (int i = 0; i < r->sc->nbody; i++)
    r->eng->get_state(r->world, i, r->pos[i], r->quat[i], r->vel[i], r->angvel[i]);
}

static void run_close(benchRun *r) {
  if (r->world) r->eng->destroy(r->world);
  free(r->pos), free(r->quat), free(r->vel), free(r->angvel), free(r->times);
  khz_deleteData(&r->probe);
  bench_khz_map_free(&r->map);
  memset(r, 0, sizeof *r);
}

static int run_open(benchRun *r, const benchScene *sc, const benchEngine *eng, int maxsteps,
                    char *err, int errsz) {
  memset(r, 0, sizeof *r);
  r->sc = sc, r->eng = eng, r->diverged = -1, r->cap = maxsteps, r->trace = trace_file;
  size_t n = (size_t)sc->nbody + 1;
  r->pos = malloc(n * sizeof *r->pos), r->quat = malloc(n * sizeof *r->quat);
  r->vel = malloc(n * sizeof *r->vel), r->angvel = malloc(n * sizeof *r->angvel);
  r->times = malloc(((size_t)maxsteps + 1) * sizeof *r->times);
  r->probe = khz_makeData(sc->khz_model, 0);
  if (!r->pos || !r->quat || !r->vel || !r->angvel || !r->times || !r->probe ||
      bench_khz_map_init(&r->map, sc)) {
    snprintf(err, (size_t)errsz, "out of memory");
    run_close(r);
    return -1;
  }
  double t0 = now_s();
  r->world = eng->create(sc, err, errsz);
  r->create_s = now_s() - t0;
  if (!r->world) {
    if (!err[0]) snprintf(err, (size_t)errsz, "create failed");
    run_close(r);
    return -1;
  }
  read_states(r);
  return 0;
}

static int state_sane(const benchRun *r) {
  for (int i = 0; i < r->sc->nbody; i++)
    for (int k = 0; k < 3; k++)
      if (!isfinite(r->pos[i][k]) || !isfinite(r->vel[i][k]) || !isfinite(r->angvel[i][k]) ||
          fabs(r->pos[i][k]) > 1e6)
        return 0;
  return 1;
}

static double run_kinetic(const benchRun *r);

static void trace_step(const benchRun *r) {
  const double *x = r->pos[0], *q = r->quat[0];
  fprintf(r->trace, "%s,%s,%d,%.6f,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", r->sc->name, r->eng->name,
          r->nstep, r->nstep * r->sc->timestep, run_kinetic(r), x[0], x[1], x[2], q[0], q[1], q[2], q[3]);
}

/* one timed step; returns 0, or -1 once the engine's state is no longer sane */
static int run_step(benchRun *r) {
  double t0 = now_s();
  r->eng->step(r->world);
  double t1 = now_s();
  if (r->ntime < r->cap) r->times[r->ntime++] = t1 - t0;
  read_states(r);
  r->nstep++;
  if (r->trace) trace_step(r);
  if (!state_sane(r)) {
    r->diverged = r->nstep;
    return -1;
  }
  return 0;
}

/* the deepest penetration of the scene at the engine's current poses, as
 * khz's collision detection sees it */
static double run_penetration(benchRun *r) {
  bench_khz_set_state(&r->map, r->probe, (const double(*)[3])r->pos, (const double(*)[4])r->quat,
                      (const double(*)[3])r->vel, (const double(*)[3])r->angvel);
  khz_collide(r->sc->khz_model, r->probe);
  double pen = 0;
  for (int k = 0; k < r->probe->ncontact; k++)
    pen = fmax(pen, r->probe->cpoint[r->probe->contact[k].deepest].depth);
  return pen;
}

static double body_kinetic(const benchBody *b, const double vel[3], const double quat[4],
                           const double w[3]) {
  double R[9], wl[3];
  bench_quat2mat(quat, R);
  bench_rotate_t(R, w, wl);
  double ke = 0.5 * b->mass * (vel[0] * vel[0] + vel[1] * vel[1] + vel[2] * vel[2]);
  for (int k = 0; k < 3; k++) ke += 0.5 * b->inertia[k] * wl[k] * wl[k];
  return ke;
}

static double run_kinetic(const benchRun *r) {
  double ke = 0;
  for (int i = 0; i < r->sc->nbody; i++) ke += body_kinetic(r->sc->body + i, r->vel[i], r->quat[i], r->angvel[i]);
  return ke;
}

static double run_potential(const benchRun *r) {
  double pe = 0;
  const double *g = r->sc->gravity;
  for (int i = 0; i < r->sc->nbody; i++)
    pe -= r->sc->body[i].mass * (g[0] * r->pos[i][0] + g[1] * r->pos[i][1] + g[2] * r->pos[i][2]);
  return pe;
}

/* timing figures and the divergence note into the row; closes the run */
static void run_finish(benchRun *r, benchRow *row) {
  timing_figures(r->times, r->ntime, row);
  row->nbody = r->sc->nbody;
  row->seconds = r->ntime * r->sc->timestep;
  row->create_s = r->create_s;
  if (r->diverged >= 0)
    set_status(row, "diverged: non-finite or runaway state at t = %.3f s", r->diverged * r->sc->timestep);
  run_close(r);
}

static void progress(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fflush(stderr);
}

/* every engine's time relative to khz's penalty path on the same scene */
static void fill_ratios(benchRow *rows, int n) {
  double khz = NAN;
  for (int i = 0; i < n; i++)
    if (!strcmp(rows[i].engine, "khz")) khz = rows[i].median_us;
  for (int i = 0; i < n; i++) rows[i].ratio = rows[i].median_us / khz;
}

/* ------------------------------------------------------------ experiments -- */

/* A loaded scene file: the khz model, its scene (for the experiment block)
 * and the benchScene every engine builds. */
typedef struct sceneCase {
  char name[64];
  khzScene ks;
  khzModel *m;
  benchScene bs;
} sceneCase;

static double param(const khzExperiment *e, const char *name, double fallback) {
  for (int k = 0; k < e->nparam; k++)
    if (strcmp(e->param_name[k], name) == 0) return e->param[k];
  return fallback;
}

static int bench_body(const benchScene *s, const char *name) {
  for (int i = 0; i < s->nbody; i++)
    if (strcmp(s->body[i].name, name) == 0) return i;
  return -1;
}

/* the first box shape of a bench body, or NULL */
static const benchShape *first_box(const benchScene *s, int body) {
  const benchBody *b = s->body + body;
  for (int k = 0; k < b->nshape; k++)
    if (s->shape[b->shape0 + k].type == BENCH_BOX) return s->shape + b->shape0 + k;
  return NULL;
}

/* V2's push: a world force -F z at a point of the block's top face, given in
 * the frame of its box shape */
static void push_block(benchRun *r, int body, const benchShape *box, const double local[3], double F) {
  double Rs[9], Rb[9], inbody[3], p[3];
  bench_quat2mat(box->quat, Rs);
  bench_rotate(Rs, local, inbody);
  for (int k = 0; k < 3; k++) inbody[k] += box->pos[k];
  bench_quat2mat(r->quat[body], Rb);
  bench_rotate(Rb, inbody, p);
  for (int k = 0; k < 3; k++) p[k] += r->pos[body][k];
  const double f[3] = {0, 0, -F};
  r->eng->apply_force(r->world, body, f, p);
}

typedef struct pushPlan {
  int settle, on, off, cycles;
  int body;                   /* the block */
  const benchShape *box;      /* its box: the pushes' frame */
  double *force, (*local)[3]; /* per cycle */
} pushPlan;

/* V2's schedule, drawn once in tools/experiments.c's order */
static int plan_pushes(const benchOptions *o, const sceneCase *c, pushPlan *p) {
  const khzExperiment *e = &c->ks.experiment;
  benchRng rng = rng_seeded(param(e, "seed", 1));
  int smoke = o->mode == MODE_SMOKE;
  p->settle = smoke ? 5 : (int)param(e, "settle_steps", 1000);
  p->on = smoke ? 5 : (int)param(e, "on_steps", 500);
  p->off = smoke ? 5 : (int)param(e, "off_steps", 500);
  int cycles = (int)param(e, "cycles", 10);
  p->cycles = smoke ? 1 : o->mode == MODE_QUICK ? (cycles < 3 ? cycles : 3) : cycles;
  double fmin_ = param(e, "force_min", 10), fmax_ = param(e, "force_max", 100);
  p->body = bench_body(&c->bs, e->body);
  const benchShape *box = p->box = p->body < 0 ? NULL : first_box(&c->bs, p->body);
  p->force = malloc(((size_t)p->cycles + 1) * sizeof *p->force);
  p->local = malloc(((size_t)p->cycles + 1) * sizeof *p->local);
  if (!box || !p->force || !p->local) return -1;
  for (int k = 0; k < p->cycles; k++) {
    p->force[k] = rng_uniform(&rng, fmin_, fmax_);
    p->local[k][0] = rng_uniform(&rng, -box->size[0], box->size[0]);
    p->local[k][1] = rng_uniform(&rng, -box->size[1], box->size[1]);
    p->local[k][2] = box->size[2];
  }
  return 0;
}

static int escaped_bodies(const benchRun *r, const khzExperiment *e) {
  double bx = param(e, "container_x", 1), by = param(e, "container_y", 1), bz = param(e, "container_z", 3);
  int escaped = 0;
  for (int i = 0; i < r->sc->nbody; i++) {
    const double *x = r->pos[i];
    escaped += fabs(x[0]) > bx || fabs(x[1]) > by || x[2] < -0.01 || x[2] > bz;
  }
  return escaped;
}

/* One engine's run through an experiment, and the sums its figures come from. */
typedef struct engineRun {
  benchRun run;
  benchRow *row;
  int open, done;
  double sum_pen, max_pen, sum_ke; /* over the window */
  int nwin;
  int rest_step;                   /* pile: since when the energy stays below the bound */
  double e0, e, worst;             /* passive chain: total energy */
} engineRun;

#define SCENE_BLOCK 1000 /* steps per block in the scenes (run_interleaved) */

/* An experiment: what happens at each step, the same for every engine. */
typedef struct benchExperiment {
  int steps;       /* in all */
  int timed_from;  /* steps before it run untimed (the scaling piles' drop) */
  int window_from; /* penetration and kinetic energy averaged from this step on */
  double rest, h;  /* pile: the rest energy bound; the timestep */
  const khzExperiment *e;
  int block;       /* steps an engine runs before the next one's turn */
  pushPlan push;   /* V2 */
  void (*before)(const struct benchExperiment *, engineRun *, int s); /* forces, or NULL */
  int (*in_window)(const struct benchExperiment *, int s);
  void (*after)(const struct benchExperiment *, engineRun *, int s); /* per-step figures, or NULL */
  void (*finish)(const struct benchExperiment *, const sceneCase *, engineRun *); /* or NULL */
} benchExperiment;

static int window_tail(const benchExperiment *x, int s) { return s >= x->window_from; }

/* V2: pushes in the first part of each cycle, figures in the unforced rest */
static int push_phase(const benchExperiment *x, int s, int *cycle) {
  const pushPlan *p = &x->push;
  if (s < p->settle) return -1;
  *cycle = (s - p->settle) / (p->on + p->off);
  return (s - p->settle) % (p->on + p->off) < p->on;
}

static void push_before(const benchExperiment *x, engineRun *er, int s) {
  int cycle;
  if (push_phase(x, s, &cycle) == 1)
    push_block(&er->run, x->push.body, x->push.box, x->push.local[cycle], x->push.force[cycle]);
}

static int unforced(const benchExperiment *x, int s) {
  int cycle;
  return push_phase(x, s, &cycle) == 0;
}

static void pile_after(const benchExperiment *x, engineRun *er, int s) {
  double ke = run_kinetic(&er->run);
  if (ke < x->rest && er->rest_step < 0 && s > 100) er->rest_step = s;
  if (ke >= x->rest) er->rest_step = -1;
}

static void pile_finish(const benchExperiment *x, const sceneCase *c, engineRun *er) {
  (void)c;
  int diverged = er->run.diverged >= 0;
  er->row->rest_time_s = er->rest_step < 0 || diverged ? NAN : (er->rest_step + 1) * x->h;
  er->row->escaped = escaped_bodies(&er->run, x->e);
}

static void stack_finish(const benchExperiment *x, const sceneCase *c, engineRun *er) {
  (void)x;
  benchRow *row = er->row;
  row->drift = row->sink = 0;
  for (int i = 0; i < c->bs.nbody; i++) {
    const double *a = c->bs.body[i].pos, *p = er->run.pos[i];
    row->drift = fmax(row->drift, hypot(p[0] - a[0], p[1] - a[1]));
    row->sink = fmax(row->sink, a[2] - p[2]);
  }
}

static void energy_after(const benchExperiment *x, engineRun *er, int s) {
  (void)x, (void)s;
  er->e = run_kinetic(&er->run) + run_potential(&er->run);
  er->worst = fmax(er->worst, fabs(er->e - er->e0));
}

/* the relative change of the total energy, at the end and at worst */
static void energy_finish(const benchExperiment *x, const sceneCase *c, engineRun *er) {
  (void)x, (void)c;
  if (er->run.diverged >= 0) return;
  er->row->energy_drift = (er->e - er->e0) / fabs(er->e0);
  er->row->energy_drift_max = er->worst / fabs(er->e0);
}

/* the experiment of a scene's `experiment:` block (none: the passive chain) */
static int experiment_setup(const benchOptions *o, const sceneCase *c, benchExperiment *x, char *err,
                            int errsz) {
  const khzExperiment *e = &c->ks.experiment;
  const char *kind = e->kind;
  double h = c->bs.timestep;
  memset(x, 0, sizeof *x);
  x->e = e, x->h = h, x->in_window = window_tail, x->block = SCENE_BLOCK;
  if (!strcmp(kind, "block_penetration")) {
    x->steps = steps_for(o, (int)param(e, "steps", 3000), (int)param(e, "steps", 3000));
    x->window_from = x->steps - (int)param(e, "window", 2000);
  } else if (!strcmp(kind, "block_forces")) {
    if (plan_pushes(o, c, &x->push)) {
      snprintf(err, (size_t)errsz, "experiment body '%s' is not a free box", e->body);
      return -1;
    }
    x->steps = x->push.settle + x->push.cycles * (x->push.on + x->push.off);
    x->before = push_before, x->in_window = unforced;
  } else if (!strcmp(kind, "pile")) {
    x->steps = steps_for(o, (int)(param(e, "seconds", 10) / h + 0.5), (int)(1 / h + 0.5));
    x->window_from = x->steps - (int)(1 / h + 0.5); /* the last second */
    x->rest = param(e, "rest_energy", 1e-3);
    x->after = pile_after, x->finish = pile_finish;
  } else if (!strcmp(kind, "stack")) {
    x->steps = steps_for(o, (int)(param(e, "seconds", 60) / h + 0.5), (int)(5 / h + 0.5));
    x->window_from = x->steps / 2, x->finish = stack_finish;
  } else if (!kind[0]) {
    x->steps = steps_for(o, (int)(10 / h + 0.5), (int)(2 / h + 0.5));
    x->window_from = x->steps, x->after = energy_after, x->finish = energy_finish;
  } else {
    snprintf(err, (size_t)errsz, "experiment kind '%s' is not benchmarked", kind);
    return -1;
  }
  return 0;
}

static void experiment_free(benchExperiment *x) {
  free(x->push.force), free(x->push.local);
  x->push.force = NULL, x->push.local = NULL;
}

static void measure_window(engineRun *er) {
  double pen = run_penetration(&er->run), ke = run_kinetic(&er->run);
  er->sum_pen += pen, er->max_pen = fmax(er->max_pen, pen), er->sum_ke += ke, er->nwin++;
}

static void run_block(const benchExperiment *x, engineRun *er, int from, int to) {
  for (int s = from; s < to && !er->done; s++) {
    if (s == x->timed_from) er->run.ntime = 0;
    if (x->before) x->before(x, er, s);
    if (run_step(&er->run)) {
      er->done = 1;
      break;
    }
    if (x->in_window(x, s)) measure_window(er);
    if (x->after) x->after(x, er, s);
  }
}

/* Every engine advances by blocks of steps in turn (the first engine of a
 * block rotating), so that whatever else the machine does meanwhile slows
 * all engines alike and the ratios of one run hold. The first step of a
 * block starts with cold caches: blocks of the scenes are long (1000 steps),
 * so that these steps stay out of the p99. */
static void run_interleaved(const benchExperiment *x, engineRun *er, int n) {
  for (int b = 0, k = 0; b < x->steps; b += x->block, k++) {
    int end = b + x->block < x->steps ? b + x->block : x->steps;
    for (int i = 0; i < n; i++) {
      engineRun *e = er + (i + k) % n;
      if (e->open) run_block(x, e, b, end);
    }
  }
}

/* the rows of every engine on one scene: open, run interleaved, finish */
static void run_experiment(const benchOptions *o, const sceneCase *c, const benchExperiment *x,
                           const char *section, rowList *rows) {
  engineRun er[NENGINE];
  int n = 0, first = rows->n;
  memset(er, 0, sizeof er);
  for (int e = 0; e < NENGINE; e++) {
    if (!o->use_engine[e] || !engine_runs_in(e, section, c->name)) continue;
    benchRow *row = new_row(rows, section, c->name, engines[e].name);
    row->nbody = c->bs.nbody;
    if (!engines[e].engine) {
      set_status(row, "skipped: %s", engines[e].missing);
      continue;
    }
    char err[256] = "";
    engineRun *r = er + n++;
    r->rest_step = -1;
    if (run_open(&r->run, &c->bs, engines[e].engine, x->steps, err, sizeof err)) {
      set_status(row, "failed: %s", err);
      continue;
    }
    r->open = 1;
    r->e0 = r->e = run_kinetic(&r->run) + run_potential(&r->run);
  }
  /* rows may have moved while they were added: attach them now */
  for (int i = first, k = 0; i < rows->n; i++)
    if (strncmp(rows->row[i].status, "skipped", 7)) er[k++].row = rows->row + i;
  double t0 = now_s();
  run_interleaved(x, er, n);
  for (int k = 0; k < n; k++) {
    if (!er[k].open) continue;
    benchRow *row = er[k].row;
    if (er[k].nwin)
      row->pen_mean = er[k].sum_pen / er[k].nwin, row->pen_max = er[k].max_pen, row->ke_rest = er[k].sum_ke / er[k].nwin;
    if (x->finish) x->finish(x, c, er + k);
    run_finish(&er[k].run, row);
  }
  fill_ratios(rows->row + first, rows->n - first);
  progress("  %-22s %d engines, %d steps each, %.1f s\n", c->name, n, x->steps, now_s() - t0);
  for (int i = first; i < rows->n; i++)
    if (strcmp(rows->row[i].status, "ok")) progress("    %s: %s\n", rows->row[i].engine, rows->row[i].status);
}

/* ---------------------------------------------------- preparing a scene -- */

/* V1's start, as khz-sim draws it: a random orientation (uniform on the
 * rotations), then the lowest box corner `initial_penetration` below z = 0 */
static int prepare_block_penetration(const khzModel *m, khzData *d, const khzExperiment *e) {
  int b = khz_name2body(m, e->body), g = -1;
  if (b < 1 || m->jnt_type[b] != KHZ_JOINT_FLOATING) return -1;
  for (int k = 0; k < m->ngeom && g < 0; k++)
    if (m->geom_body[k] == b && m->geom_type[k] == KHZ_GEOM_BOX && !m->geom_visual[k]) g = k;
  if (g < 0) return -1;
  benchRng rng = rng_seeded(param(e, "seed", 1));
  double qu[4], n2;
  do {
    n2 = 0;
    for (int k = 0; k < 4; k++) qu[k] = rng_uniform(&rng, -1, 1), n2 += qu[k] * qu[k];
  } while (n2 > 1 || n2 < 1e-6);
  double *q = d->q + m->jnt_qadr[b];
  for (int k = 0; k < 4; k++) q[3 + k] = qu[k] / sqrt(n2);
  q[0] = q[1] = q[2] = 0;
  khz_kinematics(m, d);
  const double *half = m->geom_size + 3 * g, *R = d->xrot + 9 * b;
  double zmin = INFINITY, Rg[9];
  bench_quat2mat(m->geom_quat + 4 * g, Rg);
  for (int v = 0; v < 8; v++) {
    double l[3] = {(v & 1 ? 1 : -1) * half[0], (v & 2 ? 1 : -1) * half[1], (v & 4 ? 1 : -1) * half[2]}, x[3];
    bench_rotate(Rg, l, x);
    for (int k = 0; k < 3; k++) x[k] += m->geom_pos[3 * g + k];
    zmin = fmin(zmin, d->xpos[3 * b + 2] + R[6] * x[0] + R[7] * x[1] + R[8] * x[2]);
  }
  q[2] = -zmin - param(e, "initial_penetration", 0.1);
  return 0;
}

/* the passive chain's start: every hinge turning at a seeded rate in
 * [-3, 3] rad/s (the floating base at rest) */
static void prepare_chain(const khzModel *m, khzData *d) {
  benchRng rng = rng_seeded(5);
  for (int b = 1; b < m->nbody; b++)
    if (m->jnt_type[b] == KHZ_JOINT_REVOLUTE || m->jnt_type[b] == KHZ_JOINT_CONTINUOUS)
      d->qd[m->jnt_dofadr[b]] = rng_uniform(&rng, -3, 3);
}

static void case_free(sceneCase *c) {
  bench_scene_free(&c->bs);
  khz_deleteModel(&c->m);
  if (c->ks.spec) khz_deleteScene(&c->ks);
  memset(c, 0, sizeof *c);
}

/* loads a scene file, applies the experiment's start, converts it */
static int case_load(sceneCase *c, const char *path, char *err, int errsz) {
  memset(c, 0, sizeof *c);
  c->m = khz_loadModel(path, &c->ks, err, (size_t)errsz);
  if (!c->m) return -1;
  snprintf(c->name, sizeof c->name, "%s", c->ks.name);
  khzData *d = khz_makeData(c->m, 0);
  int rc = d ? 0 : -1;
  if (rc) snprintf(err, (size_t)errsz, "out of memory");
  const khzExperiment *e = &c->ks.experiment;
  if (!rc && !strcmp(e->kind, "block_penetration") && prepare_block_penetration(c->m, d, e)) {
    snprintf(err, (size_t)errsz, "%s: experiment body '%s' must be a floating box", path, e->body);
    rc = -1;
  }
  if (!rc && !e->kind[0]) prepare_chain(c->m, d);
  if (!rc) rc = bench_scene_from_khz(c->m, d, c->name, &c->bs, err, errsz);
  if (!rc) c->bs.khz_spec = c->ks.spec; /* the Euler rows compile their own model from it */
  khz_deleteData(&d);
  if (rc) case_free(c);
  return rc;
}

/* ---------------------------------------------------------- the sections -- */

static void skipped_rows(rowList *rows, const char *section, const char *scene, const char *why) {
  for (int e = 0; e < NENGINE; e++)
    if (engine_runs_in(e, section, scene)) set_status(new_row(rows, section, scene, engines[e].name), "%s", why);
}

static void run_scene(const benchOptions *o, const char *path, rowList *rows) {
  sceneCase c;
  benchExperiment x;
  char err[1024] = "";
  if (case_load(&c, path, err, sizeof err)) {
    fprintf(stderr, "bench_peers: %s\n", err);
    return skipped_rows(rows, "scene", path, "failed: scene did not load");
  }
  if (experiment_setup(o, &c, &x, err, sizeof err)) {
    fprintf(stderr, "bench_peers: %s: %s\n", path, err);
    skipped_rows(rows, "scene", c.name, "failed: experiment not runnable");
  } else {
    run_experiment(o, &c, &x, "scene", rows);
  }
  experiment_free(&x);
  case_free(&c);
}

/* µs per step of every engine as the pile grows: the drop (0.3 s) untimed,
 * then the steps in contact timed */
static void run_scaling(const benchOptions *o, rowList *rows) {
  /* --quick stops at 120 bodies: MuJoCo 2.2.2 alone needs seconds to set up
   * a 240-body pile (its dense constraint buffers) */
  static const int full_counts[] = {15, 60, 240, 960}, full_steps[] = {1000, 600, 400, 300};
  static const int quick_counts[] = {15, 60, 120};
  const int *counts = o->mode == MODE_FULL ? full_counts : quick_counts;
  int ncount = o->mode == MODE_FULL ? 4 : o->mode == MODE_QUICK ? 3 : 1;
  for (int k = 0; k < ncount; k++) {
    char path[1024], name[32], err[1024] = "";
    snprintf(path, sizeof path, "%s/pile_%d.yaml", o->piles, counts[k]);
    snprintf(name, sizeof name, "pile_%d", counts[k]);
    sceneCase c;
    if (case_load(&c, path, err, sizeof err)) {
      fprintf(stderr, "bench_peers: %s (run bench/peers/gen_piles.py --out %s %d)\n", err, o->piles,
              counts[k]);
      skipped_rows(rows, "scaling", name, "failed: pile file did not load");
      continue;
    }
    benchExperiment x;
    memset(&x, 0, sizeof x);
    x.timed_from = o->mode == MODE_SMOKE ? 5 : 300;
    x.steps = x.timed_from + (o->mode == MODE_SMOKE ? 5 : o->mode == MODE_QUICK ? 150 : full_steps[k]);
    /* short blocks: a pile step is long enough that a cold start does not
     * show, and only medians are reported */
    x.window_from = x.steps, x.in_window = window_tail, x.h = c.bs.timestep, x.block = 50;
    run_experiment(o, &c, &x, "scaling", rows);
    case_free(&c);
  }
}

/* ------------------------------------------------------------ humanoid -- */

static void count_warning(void *user, const char *message) {
  (void)message;
  ++*(int *)user;
}

/* The humanoid's geoms touch the world's (the floor) but not each other.
 * MuJoCo skips parent-child pairs only, but khz splits an MJCF body with
 * several joints into a chain of massless bodies, and its parent-child filter
 * then misses pairs such as pelvis-thigh, whose capsules overlap by design:
 * the humanoid would blow apart in its first steps. */
static void ground_contacts_only(khzSpec *spec) {
  for (int g = 0; g < khz_spec_ngeom(spec); g++) {
    khzGeomSpec *gs = khz_spec_geom(spec, g);
    int world = gs->body == 0;
    gs->contype = world ? 1 : 2;
    gs->conaffinity = world ? 2 : 1;
  }
}

/* MuJoCo's humanoid through khz's MJCF loader at timestep h, the contact
 * settings of khz's own humanoid scene (v4_humanoid.yaml); rk4: RK4, else
 * the file's own integrator (MuJoCo's default, semi-implicit Euler, when the
 * file names none, as humanoid.xml); auto_gains: no gains given, khz's
 * automatic gains instead (their stiffness and damping beyond the explicit
 * integrator's limit integrated implicitly, docs/contact.md) */
static khzModel *humanoid_khz(const char *path, int rk4, int auto_gains, double h, char *err,
                              size_t errsz) {
  khzSpec *spec = khz_spec_new();
  khzMjcfOptions opt;
  int nwarn = 0;
  khz_mjcf_defaultOptions(&opt);
  opt.warn = count_warning, opt.warn_user = &nwarn;
  if (!spec || khz_loadMJCF(spec, path, &opt, err, errsz) < 0) {
    khz_spec_destroy(&spec);
    return NULL;
  }
  ground_contacts_only(spec);
  khzContactOptions co;
  khz_spec_defaultContact(&co);
  co.method = KHZ_CONTACT_PENALTY;
  if (!auto_gains) {
    co.kp_per_kg = 4e5, co.kv_per_kg = 800, co.ki_per_kg = 1e4;
    co.gain_mass = KHZ_GAIN_MASS_EFFECTIVE;
  }
  co.gamma = 0.85, co.mu = 1, co.restitution = 0;
  co.max_points = 10;
  khz_spec_setContact(spec, &co);
  khz_spec_setTimestep(spec, h);
  if (rk4) khz_spec_setIntegrator(spec, KHZ_INT_RK4);
  khzModel *m = khz_compile(spec, err, errsz);
  khz_spec_destroy(&spec);
  return m;
}

/* One engine on the humanoid: how to open, step and read it. */
typedef struct humanoidRun {
  const char *engine;
  int (*open)(struct humanoidRun *, const char *path, char *err, size_t errsz);
  void (*step)(struct humanoidRun *);
  int (*ncontact)(const struct humanoidRun *);
  double (*torso_z)(const struct humanoidRun *);
  void (*close)(struct humanoidRun *);
  void *model, *data;
  int torso, nv;
  double h;
  double *times, contacts;
  int ntime;
  benchRow *row;
} humanoidRun;

static int khz_h_open_with(humanoidRun *r, const char *path, int rk4, int auto_gains, char *err,
                           size_t errsz) {
  khzModel *m = humanoid_khz(path, rk4, auto_gains, 1e-3, err, errsz);
  khzData *d = m ? khz_makeData(m, 0) : NULL;
  r->model = m, r->data = d;
  if (!d) return -1;
  d->contact_method = KHZ_CONTACT_PENALTY;
  d->sleep_enabled = 0; /* as the peers: no deactivation (engine_khz.c's khz row) */
  r->torso = khz_name2body(m, "torso"), r->nv = m->nv, r->h = m->timestep;
  return 0;
}

static int khz_h_open(humanoidRun *r, const char *path, char *err, size_t errsz) {
  return khz_h_open_with(r, path, 1, 0, err, errsz);
}

/* like for like with MuJoCo: the file's integrator (Euler for humanoid.xml) */
static int khz_h_open_file(humanoidRun *r, const char *path, char *err, size_t errsz) {
  return khz_h_open_with(r, path, 0, 0, err, errsz);
}

/* the file's integrator with the contact's stiff part implicit: automatic
 * gains instead of v4_humanoid.yaml's (a contact model of its own) */
static int khz_h_open_auto(humanoidRun *r, const char *path, char *err, size_t errsz) {
  return khz_h_open_with(r, path, 0, 1, err, errsz);
}

static void khz_h_step(humanoidRun *r) { khz_step(r->model, r->data); }
static int khz_h_ncontact(const humanoidRun *r) { return ((const khzData *)r->data)->ncontact; }

static double khz_h_torso(const humanoidRun *r) {
  return r->torso > 0 ? ((const khzData *)r->data)->xpos[3 * r->torso + 2] : NAN;
}

static void khz_h_close(humanoidRun *r) {
  khzData *d = r->data;
  khzModel *m = r->model;
  if (d && d->warning[KHZ_WARN_BADSTATE] && r->row)
    set_status(r->row, "diverged: %d states rolled back", d->warning[KHZ_WARN_BADSTATE]);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

#ifdef HAVE_MUJOCO
/* MuJoCo's own file, only its timestep changed */
static int mj_h_open(humanoidRun *r, const char *path, char *err, size_t errsz) {
  mjModel *mm = mj_loadXML(path, NULL, err, (int)errsz);
  mjData *md = mm ? mj_makeData(mm) : NULL;
  r->model = mm, r->data = md;
  if (!md) return -1;
  mm->opt.timestep = 1e-3;
  r->torso = mj_name2id(mm, mjOBJ_BODY, "torso"), r->nv = mm->nv, r->h = mm->opt.timestep;
  return 0;
}

static void mj_h_step(humanoidRun *r) { mj_step(r->model, r->data); }
static int mj_h_ncontact(const humanoidRun *r) { return ((const mjData *)r->data)->ncon; }

static double mj_h_torso(const humanoidRun *r) {
  return r->torso >= 0 ? ((const mjData *)r->data)->xpos[3 * r->torso + 2] : NAN;
}

static void mj_h_close(humanoidRun *r) {
  if (r->data) mj_deleteData(r->data);
  if (r->model) mj_deleteModel(r->model);
}
#endif

static void humanoid_block(humanoidRun *r, int steps) {
  for (int s = 0; s < steps; s++) {
    double t0 = now_s();
    r->step(r);
    r->times[r->ntime++] = now_s() - t0;
    r->contacts += r->ncontact(r);
  }
}

/* 3 s from the file's initial pose (the fall, the impact and lying on the
 * floor), both engines interleaved by blocks as the scenes are */
#define NHUMANOID_RUN 4

/* khz-euler (khz with the file's integrator, as MuJoCo steps it) and
 * khz-euler-auto (the same with automatic gains) run when both khz and
 * mujoco are selected: they are the like-for-like rows */
static int humanoid_selected(const benchOptions *o, const char *engine) {
  if (!strncmp(engine, "khz-euler", 9)) return in_list_engine(o, "khz") && in_list_engine(o, "mujoco");
  return in_list_engine(o, engine);
}

static void run_humanoid(const benchOptions *o, rowList *rows) {
  humanoidRun runs[NHUMANOID_RUN] = {
      {.engine = "khz", .open = khz_h_open, .step = khz_h_step, .ncontact = khz_h_ncontact,
       .torso_z = khz_h_torso, .close = khz_h_close},
      {.engine = "khz-euler", .open = khz_h_open_file, .step = khz_h_step, .ncontact = khz_h_ncontact,
       .torso_z = khz_h_torso, .close = khz_h_close},
      {.engine = "khz-euler-auto", .open = khz_h_open_auto, .step = khz_h_step,
       .ncontact = khz_h_ncontact, .torso_z = khz_h_torso, .close = khz_h_close},
#ifdef HAVE_MUJOCO
      {.engine = "mujoco", .open = mj_h_open, .step = mj_h_step, .ncontact = mj_h_ncontact,
       .torso_z = mj_h_torso, .close = mj_h_close},
#else
      {.engine = "mujoco"},
#endif
  };
  int steps = steps_for(o, 3000, 2000), first = rows->n, open[NHUMANOID_RUN] = {0};
  for (int k = 0; k < NHUMANOID_RUN; k++) {
    if (!humanoid_selected(o, runs[k].engine)) continue;
    benchRow *row = new_row(rows, "humanoid", "humanoid", runs[k].engine);
    char err[1024] = "";
    runs[k].times = malloc((size_t)steps * sizeof(double));
    if (!runs[k].open) set_status(row, "skipped: not built: libmujoco not found");
    else if (!runs[k].times || runs[k].open(runs + k, o->humanoid, err, sizeof err))
      set_status(row, "failed: %s", err[0] ? err : "out of memory");
    else open[k] = 1;
  }
  for (int k = 0, i = first; k < NHUMANOID_RUN; k++)
    if (humanoid_selected(o, runs[k].engine)) runs[k].row = rows->row + i++;
  double t0 = now_s();
  for (int b = 0, n = 0; b < steps; b += SCENE_BLOCK, n++)
    for (int j = 0; j < NHUMANOID_RUN; j++) {
      int k = (j + n) % NHUMANOID_RUN;
      if (open[k]) humanoid_block(runs + k, b + SCENE_BLOCK < steps ? SCENE_BLOCK : steps - b);
    }
  for (int k = 0; k < NHUMANOID_RUN; k++) {
    benchRow *row = runs[k].row;
    if (open[k]) {
      row->contacts = runs[k].contacts / steps, row->height_end = runs[k].torso_z(runs + k);
      row->nbody = runs[k].nv, row->seconds = steps * runs[k].h;
      timing_figures(runs[k].times, runs[k].ntime, row);
    }
    if (runs[k].close) runs[k].close(runs + k);
    free(runs[k].times);
  }
  fill_ratios(rows->row + first, rows->n - first);
  progress("  %-22s %d steps each, %.1f s\n", "humanoid", steps, now_s() - t0);
}

/* Accuracy on the same run: each configuration from the file's initial
 * pose for HUMANOID_ACC_S seconds (the fall and the first impact), then the
 * torso's height and the centres of mass of the model's bodies (MuJoCo's
 * bodies; in khz the body of each name, the last of an MJCF body's split
 * chain, which carries its mass) against two references stepped with RK4 at
 * h / 10: MuJoCo's (the reference) and khz's own (what is integration
 * error, apart from the two contact models' difference). Not timed. */
#define HUMANOID_ACC_S 1.0
#define HUMANOID_ACC_BODIES 64

typedef struct humanoidPose {
  char what[48];
  double h, torso_z, com[3 * HUMANOID_ACC_BODIES];
  int ok;
} humanoidPose;

/* the body names compared: khz's bodies without ':' (not a split link) */
static int humanoid_names(const khzModel *m, char names[][KHZ_NAME_MAX]) {
  int n = 0;
  for (int b = 1; b < m->nbody && n < HUMANOID_ACC_BODIES; b++)
    if (!strchr(m->body_name[b], ':')) snprintf(names[n++], KHZ_NAME_MAX, "%s", m->body_name[b]);
  return n;
}

static void khz_pose(const char *path, int rk4, int auto_gains, double h, char names[][KHZ_NAME_MAX],
                     int n, humanoidPose *p) {
  char err[1024] = "";
  khzModel *m = humanoid_khz(path, rk4, auto_gains, h, err, sizeof err);
  khzData *d = m ? khz_makeData(m, 0) : NULL;
  snprintf(p->what, sizeof p->what, "khz %s%s", m && m->integrator == KHZ_INT_RK4 ? "RK4" : "Euler",
           auto_gains ? ", automatic gains" : "");
  p->h = h, p->ok = 0;
  if (d) {
    d->contact_method = KHZ_CONTACT_PENALTY;
    for (long s = lround(HUMANOID_ACC_S / h); s > 0; s--) khz_step(m, d);
    p->ok = !d->warning[KHZ_WARN_BADSTATE];
    for (int k = 0; k < n; k++) {
      int b = khz_name2body(m, names[k]);
      if (b < 0) p->ok = 0;
      else memcpy(p->com + 3 * k, d->xcom + 3 * b, 3 * sizeof(double));
    }
    int torso = khz_name2body(m, "torso");
    p->torso_z = torso > 0 ? d->xpos[3 * torso + 2] : NAN;
  }
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

#ifdef HAVE_MUJOCO
static void mj_pose(const char *path, int rk4, double h, char names[][KHZ_NAME_MAX], int n, humanoidPose *p) {
  char err[1024] = "";
  mjModel *mm = mj_loadXML(path, NULL, err, (int)sizeof err);
  mjData *md = mm ? mj_makeData(mm) : NULL;
  p->h = h, p->ok = 0;
  if (md) {
    mm->opt.timestep = h;
    if (rk4) mm->opt.integrator = mjINT_RK4;
    snprintf(p->what, sizeof p->what, "MuJoCo %s", mm->opt.integrator == mjINT_RK4 ? "RK4" : "Euler");
    for (long s = lround(HUMANOID_ACC_S / h); s > 0; s--) mj_step(mm, md);
    mj_forward(mm, md); /* mj_step leaves the positions of the step's start in xipos */
    p->ok = 1;
    for (int k = 0; k < n; k++) {
      int b = mj_name2id(mm, mjOBJ_BODY, names[k]);
      if (b < 0) p->ok = 0;
      else memcpy(p->com + 3 * k, md->xipos + 3 * b, 3 * sizeof(double));
    }
    int torso = mj_name2id(mm, mjOBJ_BODY, "torso");
    p->torso_z = torso >= 0 ? md->xpos[3 * torso + 2] : NAN;
    for (int k = 0; k < 3 * n; k++) p->ok &= isfinite(p->com[k]);
  }
  if (md) mj_deleteData(md);
  if (mm) mj_deleteModel(mm);
}
#endif

/* RMS over the bodies of the distance between their centres of mass */
static double pose_error(const humanoidPose *a, const humanoidPose *b, int n) {
  if (!a->ok || !b->ok || n < 1) return NAN;
  double sum = 0;
  for (int k = 0; k < 3 * n; k++) sum += (a->com[k] - b->com[k]) * (a->com[k] - b->com[k]);
  return sqrt(sum / n);
}

static void humanoid_accuracy(const benchOptions *o) {
  char err[1024] = "", names[HUMANOID_ACC_BODIES][KHZ_NAME_MAX];
  khzModel *m = humanoid_khz(o->humanoid, 1, 0, 1e-3, err, sizeof err);
  if (!m) {
    printf("\nhumanoid accuracy: %s\n", err);
    return;
  }
  int n = humanoid_names(m, names);
  khz_deleteModel(&m);
  double t0 = now_s();
  humanoidPose ref_khz, ref_auto, run[5];
  int nrun = 0;
  khz_pose(o->humanoid, 1, 0, 1e-4, names, n, &ref_khz);
  khz_pose(o->humanoid, 1, 1, 1e-4, names, n, &ref_auto);
  khz_pose(o->humanoid, 1, 0, 1e-3, names, n, run + nrun++);
  khz_pose(o->humanoid, 0, 0, 1e-3, names, n, run + nrun++);
  int auto_run = nrun;
  khz_pose(o->humanoid, 0, 1, 1e-3, names, n, run + nrun++);
#ifdef HAVE_MUJOCO
  humanoidPose ref_mj;
  mj_pose(o->humanoid, 1, 1e-4, names, n, &ref_mj);
  mj_pose(o->humanoid, 0, 1e-3, names, n, run + nrun++);
  mj_pose(o->humanoid, 1, 1e-3, names, n, run + nrun++);
#else
  humanoidPose ref_mj = {.what = "MuJoCo (not built)", .ok = 0, .torso_z = NAN};
#endif
  /* the last column: khz's own reference with the row's gains (automatic
   * gains follow h: omega = 0.3 / h, so that reference's springs are 10 times
   * stiffer, a contact model of its own) */
  printf("\n| humanoid after %g s (%d bodies' com) | h | torso z (m) | com error vs MuJoCo RK4 h = 1e-4, "
         "RMS (m) | vs khz RK4 h = 1e-4, same gains (m) |\n|---|---|---|---|---|\n", HUMANOID_ACC_S, n);
  const humanoidPose *refs[3] = {&ref_mj, &ref_khz, &ref_auto};
  for (int r = 0; r < 3; r++)
    printf("| reference: %s | %g | %.4f | %.3g | %.3g |\n", refs[r]->what, refs[r]->h, refs[r]->torso_z,
           pose_error(refs[r], &ref_mj, n), pose_error(refs[r], r == 2 ? &ref_auto : &ref_khz, n));
  for (int k = 0; k < nrun; k++)
    printf("| %s | %g | %.4f | %.3g | %.3g |\n", run[k].what, run[k].h, run[k].torso_z,
           pose_error(run + k, &ref_mj, n), pose_error(run + k, k == auto_run ? &ref_auto : &ref_khz, n));
  progress("  %-22s %.1f s\n", "humanoid accuracy", now_s() - t0);
}

/* ------------------------------------------------------------- printing -- */

/* a number for the table: %.*g, or a dash when not measured */
static const char *num(char *buf, size_t n, double v, int digits) {
  if (isnan(v)) snprintf(buf, n, "–");
  else snprintf(buf, n, "%.*g", digits, v);
  return buf;
}

static const char *scene_figure(const benchRow *r, char *buf, size_t n) {
  if (r->escaped >= 0) {
    if (isnan(r->rest_time_s))
      snprintf(buf, n, "not at rest in %.3g s; %d escaped", r->seconds, r->escaped);
    else
      snprintf(buf, n, "at rest after %.3g s; %d escaped", r->rest_time_s, r->escaped);
  } else if (!isnan(r->drift)) {
    snprintf(buf, n, "drift %.3g mm, sink %.3g mm", 1e3 * r->drift, 1e3 * r->sink);
  } else if (!isnan(r->energy_drift)) {
    snprintf(buf, n, "energy %+.2e (worst %.2e) in %.3g s", r->energy_drift, r->energy_drift_max, r->seconds);
  } else {
    snprintf(buf, n, "–");
  }
  return buf;
}

static void print_scene_table(const rowList *rows) {
  printf("| scene | engine | bodies | steps | µs/step median | p99 | steps/s | time / khz | "
         "mean pen. (m) | max pen. (m) | KE at rest (J) | scene figure | status |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < rows->n; i++) {
    const benchRow *r = rows->row + i;
    if (strcmp(r->section, "scene")) continue;
    char a[32], b[32], c[32], d[32], e[32], f[32], g[32], fig[128];
    printf("| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r->scene, r->engine,
           r->nbody, r->steps, num(a, sizeof a, r->median_us, 4), num(b, sizeof b, r->p99_us, 4),
           num(c, sizeof c, round(r->steps_per_s), 7), num(d, sizeof d, r->ratio, 3),
           num(e, sizeof e, r->pen_mean, 3), num(f, sizeof f, r->pen_max, 3), num(g, sizeof g, r->ke_rest, 3),
           scene_figure(r, fig, sizeof fig), r->status);
  }
}

/* least-squares slope of log(µs) against log(bodies) */
static double growth_exponent(const rowList *rows, const char *engine) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int n = 0;
  for (int i = 0; i < rows->n; i++) {
    const benchRow *r = rows->row + i;
    if (strcmp(r->section, "scaling") || strcmp(r->engine, engine) || !(r->median_us > 0) ||
        strncmp(r->status, "ok", 2))
      continue;
    double x = log(r->nbody), y = log(r->median_us);
    sx += x, sy += y, sxx += x * x, sxy += x * y, n++;
  }
  if (n < 2) return NAN;
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

static void print_scaling_table(const rowList *rows) {
  int counts[8], ncount = 0;
  for (int i = 0; i < rows->n && ncount < 8; i++) {
    const benchRow *r = rows->row + i;
    if (strcmp(r->section, "scaling") || (ncount && counts[ncount - 1] == r->nbody)) continue;
    counts[ncount++] = r->nbody;
  }
  if (!ncount) return;
  printf("\n| engine |");
  for (int k = 0; k < ncount; k++) printf(" %d bodies µs |", counts[k]);
  printf(" growth exponent |\n|---|");
  for (int k = 0; k <= ncount; k++) printf("---|");
  printf("\n");
  for (int e = 0; e < NENGINE; e++) {
    int any = 0;
    for (int i = 0; i < rows->n; i++) any |= !strcmp(rows->row[i].section, "scaling") && !strcmp(rows->row[i].engine, engines[e].name);
    if (!any) continue;
    printf("| %s |", engines[e].name);
    for (int k = 0; k < ncount; k++) {
      const benchRow *hit = NULL;
      for (int i = 0; i < rows->n && !hit; i++) {
        const benchRow *r = rows->row + i;
        if (!strcmp(r->section, "scaling") && !strcmp(r->engine, engines[e].name) && r->nbody == counts[k]) hit = r;
      }
      char a[32];
      if (hit && !strncmp(hit->status, "ok", 2)) printf(" %s |", num(a, sizeof a, hit->median_us, 4));
      else printf(" %s |", hit ? hit->status : "–");
    }
    char x[32];
    printf(" %s |\n", num(x, sizeof x, growth_exponent(rows, engines[e].name), 3));
  }
}

static void print_humanoid_table(const rowList *rows) {
  int any = 0;
  for (int i = 0; i < rows->n; i++) any |= !strcmp(rows->row[i].section, "humanoid");
  if (!any) return;
  printf("\n| humanoid (h = 1e-3) | nv | steps | µs/step median | p99 | steps/s | time / khz | "
         "contacts (mean) | torso z at end (m) | status |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < rows->n; i++) {
    const benchRow *r = rows->row + i;
    if (strcmp(r->section, "humanoid")) continue;
    char a[32], b[32], c[32], d[32], e[32], f[32];
    printf("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n", r->engine, r->nbody, r->steps,
           num(a, sizeof a, r->median_us, 4), num(b, sizeof b, r->p99_us, 4),
           num(c, sizeof c, round(r->steps_per_s), 7), num(d, sizeof d, r->ratio, 3),
           num(e, sizeof e, r->contacts, 3), num(f, sizeof f, r->height_end, 3), r->status);
  }
}

/* JSON: numbers with full precision, null for what was not measured */
static void json_num(FILE *f, const char *key, double v) {
  if (isfinite(v)) fprintf(f, ", \"%s\": %.9g", key, v);
  else fprintf(f, ", \"%s\": null", key);
}

static void json_str(FILE *f, const char *key, const char *s) {
  fprintf(f, "\"%s\": \"", key);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    if ((unsigned char)*s >= 0x20) fputc(*s, f);
  }
  fputc('"', f);
}

static void write_json(const char *path, const rowList *rows) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "bench_peers: cannot write %s\n", path);
    return;
  }
  for (int e = 0; e < NENGINE; e++) {
    fprintf(f, "{\"section\": \"engine\", ");
    json_str(f, "engine", engines[e].name);
    fprintf(f, ", ");
    json_str(f, "settings", engines[e].engine ? engines[e].engine->settings : engines[e].missing);
    fprintf(f, ", \"built\": %s}\n", engines[e].engine ? "true" : "false");
  }
  for (int i = 0; i < rows->n; i++) {
    const benchRow *r = rows->row + i;
    fputc('{', f);
    json_str(f, "section", r->section), fputs(", ", f);
    json_str(f, "scene", r->scene), fputs(", ", f);
    json_str(f, "engine", r->engine), fputs(", ", f);
    json_str(f, "status", r->status);
    fprintf(f, ", \"bodies\": %d, \"steps\": %d", r->nbody, r->steps);
    json_num(f, "median_us", r->median_us), json_num(f, "p99_us", r->p99_us);
    json_num(f, "steps_per_s", r->steps_per_s), json_num(f, "time_ratio_to_khz", r->ratio);
    json_num(f, "mean_penetration_m", r->pen_mean), json_num(f, "max_penetration_m", r->pen_max);
    json_num(f, "kinetic_energy_at_rest_j", r->ke_rest);
    json_num(f, "energy_drift", r->energy_drift), json_num(f, "energy_drift_worst", r->energy_drift_max);
    json_num(f, "rest_time_s", r->rest_time_s), json_num(f, "simulated_s", r->seconds);
    if (r->escaped >= 0) fprintf(f, ", \"escaped\": %d", r->escaped);
    json_num(f, "drift_m", r->drift), json_num(f, "sink_m", r->sink);
    json_num(f, "contacts_mean", r->contacts), json_num(f, "torso_height_end_m", r->height_end);
    json_num(f, "create_s", r->create_s);
    fputs("}\n", f);
  }
  for (int e = 0; e < NENGINE; e++) {
    double x = growth_exponent(rows, engines[e].name);
    if (!isfinite(x)) continue;
    fprintf(f, "{\"section\": \"scaling_fit\", \"engine\": \"%s\", \"growth_exponent\": %.4f}\n", engines[e].name, x);
  }
  fclose(f);
}

/* ------------------------------------------------------------------ main -- */

int main(int argc, char **argv) {
  benchOptions o;
  int rc = parse_options(argc, argv, &o);
  if (rc) return rc < 0 ? 2 : 0;
  static const char *const scenes[] = {"scenes/validation/v1_block_penetration.yaml",
                                       "scenes/validation/v2_block_forces.yaml",
                                       "scenes/validation/v3_pile.yaml", "scenes/validation/stack.yaml",
                                       "scenes/validation/stack_mixed.yaml",
                                       "scenes/validation/stack_heavy_on_light.yaml",
                                       "scenes/bench/passive_chain.yaml"};
  rowList rows = {0};
  trace_file = o.trace;
  printf("bench_peers (%s): khz next to MuJoCo, ODE and Bullet on the same scenes\n\n",
         o.mode == MODE_FULL ? "full" : o.mode == MODE_QUICK ? "quick" : "smoke");
  for (int e = 0; e < NENGINE; e++)
    if (o.use_engine[e])
      printf("- %s: %s\n", engines[e].name, engines[e].engine ? engines[e].engine->settings : engines[e].missing);
  printf("\n");
  fflush(stdout);
  for (size_t k = 0; k < sizeof scenes / sizeof scenes[0]; k++) {
    const char *base = strrchr(scenes[k], '/') + 1;
    char name[64], path[1024];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(base, "."), base);
    if (!in_list(o.only, name)) continue;
    snprintf(path, sizeof path, "%s/%s", o.source, scenes[k]);
    run_scene(&o, path, &rows);
  }
  if (in_list(o.only, "scaling")) run_scaling(&o, &rows);
  if (in_list(o.only, "humanoid")) run_humanoid(&o, &rows);
  print_scene_table(&rows);
  print_scaling_table(&rows);
  print_humanoid_table(&rows);
  if (in_list(o.only, "humanoid") && o.mode != MODE_SMOKE && humanoid_selected(&o, "khz-euler"))
    humanoid_accuracy(&o); /* with khz and mujoco both selected, as the khz-euler row */
  if (o.json) write_json(o.json, &rows);
  if (o.trace) fclose(o.trace);
  free(rows.row);
  return 0;
}
