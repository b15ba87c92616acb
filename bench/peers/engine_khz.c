/* engine_khz.c — khz as a benchmark engine: the scene's own khz model (as
 * loaded from the scene file, with its integrator, timestep and contact
 * gains) stepped by khz_step, with the penalty method or the deepest-point
 * baseline, with sleeping off (khz) or on (khz-sleep). The initial state comes from the benchScene (the driver may have
 * moved bodies, V1's random orientation), mapped back to khz coordinates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khz/khz.h"
#include "peer.h"
#include "scene_convert.h"

typedef struct khzWorld {
  const khzModel *m;
  khzData *d;
  benchKhzMap map;
  int forced; /* xfrc holds forces to clear after the next step */
} khzWorld;

static void destroy(void *world) {
  khzWorld *w = world;
  if (!w) return;
  khz_deleteData(&w->d);
  bench_khz_map_free(&w->map);
  free(w);
}

static void *create_model(const benchScene *scene, const khzModel *m, khzContactMethod method, int sleep,
                          char *err, int errsz) {
  if (!m) {
    snprintf(err, (size_t)errsz, "the scene carries no khz model");
    return NULL;
  }
  khzWorld *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->m = m;
  w->d = khz_makeData(w->m, 0);
  if (!w->d || bench_khz_map_init(&w->map, scene)) {
    snprintf(err, (size_t)errsz, "out of memory");
    destroy(w);
    return NULL;
  }
  /* the scene's initial state, body by body */
  int n = scene->nbody;
  double(*pos)[3] = malloc((size_t)(n + 1) * sizeof *pos), (*vel)[3] = malloc((size_t)(n + 1) * sizeof *vel);
  double(*quat)[4] = malloc((size_t)(n + 1) * sizeof *quat), (*angvel)[3] = malloc((size_t)(n + 1) * sizeof *angvel);
  if (pos && vel && quat && angvel) {
    for (int i = 0; i < n; i++) {
      const benchBody *b = scene->body + i;
      memcpy(pos[i], b->pos, sizeof pos[i]), memcpy(quat[i], b->quat, sizeof quat[i]);
      memcpy(vel[i], b->vel, sizeof vel[i]), memcpy(angvel[i], b->angvel, sizeof angvel[i]);
    }
    bench_khz_set_state(&w->map, w->d, (const double(*)[3])pos, (const double(*)[4])quat,
                        (const double(*)[3])vel, (const double(*)[3])angvel);
  }
  int ok = pos && vel && quat && angvel;
  free(pos), free(vel), free(quat), free(angvel);
  if (!ok) {
    snprintf(err, (size_t)errsz, "out of memory");
    destroy(w);
    return NULL;
  }
  khz_resetStick(w->m, w->d);
  w->d->contact_method = method;
  w->d->sleep_enabled = sleep;
  return w;
}

static void *create_with(const benchScene *scene, khzContactMethod method, int sleep, char *err,
                         int errsz) {
  return create_model(scene, scene->khz_model, method, sleep, err, errsz);
}

static void *create_euler(const benchScene *scene, char *err, int errsz) {
  return create_model(scene, scene->khz_model_euler, KHZ_CONTACT_PENALTY, 0, err, errsz);
}

static void *create_penalty(const benchScene *scene, char *err, int errsz) {
  return create_with(scene, KHZ_CONTACT_PENALTY, 0, err, errsz);
}

static void *create_sleep(const benchScene *scene, char *err, int errsz) {
  return create_with(scene, KHZ_CONTACT_PENALTY, 1, err, errsz);
}

static void *create_lcp(const benchScene *scene, char *err, int errsz) {
  return create_with(scene, KHZ_CONTACT_LCP, 0, err, errsz);
}

static void *create_deepest(const benchScene *scene, char *err, int errsz) {
  return create_with(scene, KHZ_CONTACT_DEEPEST, 0, err, errsz);
}

/* xfrc is a wrench at the centre of mass: the force plus its moment about it */
static void apply_force(void *world, int body, const double force[3], const double point[3]) {
  khzWorld *w = world;
  int b = w->map.scene->body[body].khz_body;
  const double *c = w->d->xcom + 3 * b;
  double r[3] = {point[0] - c[0], point[1] - c[1], point[2] - c[2]}, *x = w->d->xfrc + 6 * b;
  x[0] += force[0], x[1] += force[1], x[2] += force[2];
  x[3] += r[1] * force[2] - r[2] * force[1];
  x[4] += r[2] * force[0] - r[0] * force[2];
  x[5] += r[0] * force[1] - r[1] * force[0];
  w->forced = 1;
}

static void step(void *world) {
  khzWorld *w = world;
  khz_step(w->m, w->d);
  if (w->forced) {
    memset(w->d->xfrc, 0, 6 * (size_t)w->m->nbody * sizeof(double));
    w->forced = 0;
  }
}

static void get_state(void *world, int body, double pos[3], double quat[4], double vel[3],
                      double angvel[3]) {
  khzWorld *w = world;
  bench_khz_get_state(&w->map, w->d, body, pos, quat, vel, angvel);
}

const benchEngine bench_engine_khz = {
    "khz",
    "reduced coordinates (Featherstone ABA), the scene file's integrator (RK4) and timestep; "
    "Drumwright's multi-point penalty method with impulses at impacts, the scene file's gains; "
    "no sleeping (as the peers: no deactivation, no auto-disable)",
    create_penalty, apply_force, step, get_state, destroy};

const benchEngine bench_engine_khz_euler = {
    "khz-euler",
    "as khz, with semi-implicit Euler instead of the scene file's RK4 (MuJoCo's and ODE's "
    "integrator family): one contact and dynamics evaluation per step instead of four",
    create_euler, apply_force, step, get_state, destroy};

const benchEngine bench_engine_khz_deepest = {
    "khz-deepest",
    "as khz, with one penalty spring at the deepest point of each pair (the paper's baseline), "
    "same gains",
    create_deepest, apply_force, step, get_state, destroy};

const benchEngine bench_engine_khz_sleep = {
    "khz-sleep",
    "as khz, with sleeping on (khz's default: islands of free bodies at rest for 0.5 s below "
    "0.01 m/s are frozen until touched; docs/sleeping.md); the peers run without theirs",
    create_sleep, apply_force, step, get_state, destroy};

const benchEngine bench_engine_khz_lcp = {
    "khz-lcp",
    "as khz, with Stewart & Trinkle's LCP time-stepping solved by Lemke (docs/lcp.md): "
    "inelastic, the scene's friction_directions (4 unless set)",
    create_lcp, apply_force, step, get_state, destroy};
