/* engine_khz.c — khz as a benchmark engine: the scene's own khz model (as
 * loaded from the scene file, with its integrator, timestep and contact
 * gains) stepped by khz_step, with the penalty method or the deepest-point
 * baseline, with sleeping off (khz) or on (khz-sleep); khz-euler and
 * khz-euler-auto compile the scene's spec again with semi-implicit Euler, as
 * the peers step (one collision and one contact force evaluation per step
 * instead of RK4's four evaluations), with the scene's gains or with
 * automatic gains. The initial state comes from the benchScene (the driver may have
 * moved bodies, V1's random orientation), mapped back to khz coordinates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khz/khz.h"
#include "peer.h"
#include "scene_convert.h"

typedef struct khzWorld {
  const khzModel *m;
  khzModel *own; /* the Euler rows' model, compiled here (else NULL) */
  khzData *d;
  benchKhzMap map;
  int forced; /* xfrc holds forces to clear after the next step */
} khzWorld;

static void destroy(void *world) {
  khzWorld *w = world;
  if (!w) return;
  khz_deleteData(&w->d);
  khz_deleteModel(&w->own);
  bench_khz_map_free(&w->map);
  free(w);
}

/* The Euler rows' model: the scene's spec compiled with semi-implicit Euler;
 * auto_gains: without the scene's gains (kp, kv, ki and their per-kg rules
 * 0), so that khz derives them from the step and the load and integrates
 * the stiffness and damping beyond Euler's limit implicitly
 * (docs/contact.md). The spec is restored after. */
static khzModel *compile_euler(const benchScene *scene, int auto_gains, char *err, int errsz) {
  khzSpec *spec = scene->khz_spec;
  const khzModel *m = scene->khz_model;
  if (!spec) {
    snprintf(err, (size_t)errsz, "the scene carries no khz spec");
    return NULL;
  }
  khzContactOptions co = m->contact;
  if (auto_gains) {
    co.kp = co.kv = co.ki = 0;
    co.kp_per_kg = co.kv_per_kg = co.ki_per_kg = 0;
  }
  khz_spec_setIntegrator(spec, KHZ_INT_EULER);
  khz_spec_setContact(spec, &co);
  khzModel *euler = khz_compile(spec, err, (size_t)errsz);
  khz_spec_setIntegrator(spec, m->integrator);
  khz_spec_setContact(spec, &m->contact);
  if (euler && auto_gains)
    for (int g = 0; g < euler->ngeom; g++)
      if (euler->geom_gain[3 * g] > 0 || euler->geom_gain[3 * g + 1] > 0 || euler->geom_gain[3 * g + 2] > 0) {
        snprintf(err, (size_t)errsz, "geom %d has gains of its own (no automatic gains)", g);
        khz_deleteModel(&euler);
      }
  return euler;
}

static void *create_with(const benchScene *scene, khzContactMethod method, int sleep, int euler,
                         char *err, int errsz) {
  if (!scene->khz_model) {
    snprintf(err, (size_t)errsz, "the scene carries no khz model");
    return NULL;
  }
  khzWorld *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->m = scene->khz_model;
  if (euler) {
    if (!(w->own = compile_euler(scene, euler == 2, err, errsz))) {
      destroy(w);
      return NULL;
    }
    w->m = w->own;
  }
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
  if (w->own) khz_kinematics(w->m, w->d); /* (bench_khz_set_state's was the scene model's) */
  khz_resetStick(w->m, w->d);
  w->d->contact_method = method;
  w->d->sleep_enabled = sleep;
  return w;
}

static void *create_penalty(const benchScene *scene, char *err, int errsz) {
  return create_with(scene, KHZ_CONTACT_PENALTY, 0, 0, err, errsz);
}

static void *create_sleep(const benchScene *scene, char *err, int errsz) {
  return create_with(scene, KHZ_CONTACT_PENALTY, 1, 0, err, errsz);
}

static void *create_lcp(const benchScene *scene, char *err, int errsz) {
  return create_with(scene, KHZ_CONTACT_LCP, 0, 0, err, errsz);
}

static void *create_euler(const benchScene *scene, char *err, int errsz) {
  return create_with(scene, KHZ_CONTACT_PENALTY, 0, 1, err, errsz);
}

static void *create_euler_auto(const benchScene *scene, char *err, int errsz) {
  return create_with(scene, KHZ_CONTACT_PENALTY, 0, 2, err, errsz);
}

static void *create_2t(const benchScene *scene, char *err, int errsz) {
  khzWorld *w = create_with(scene, KHZ_CONTACT_PENALTY, 0, 0, err, errsz);
  if (w && khz_setThreads(w->m, w->d, 2)) {
    snprintf(err, (size_t)errsz, "cannot start the step's second thread");
    destroy(w);
    return NULL;
  }
  return w;
}

static void *create_deepest(const benchScene *scene, char *err, int errsz) {
  return create_with(scene, KHZ_CONTACT_DEEPEST, 0, 0, err, errsz);
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

const benchEngine bench_engine_khz_2t = {
    "khz-2t",
    "as khz, with the step on two threads (khz_setThreads: the narrow phase's pairs and the free "
    "objects' ABA split, the same bits as khz); the second thread spins between steps",
    create_2t, apply_force, step, get_state, destroy};

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

const benchEngine bench_engine_khz_euler = {
    "khz-euler",
    "as khz, with semi-implicit Euler as the peers step (one contact force and dynamics evaluation "
    "per step, RK4 four; one collision pass either way) and the scene file's gains",
    create_euler, apply_force, step, get_state, destroy};

const benchEngine bench_engine_khz_euler_auto = {
    "khz-euler-auto",
    "as khz-euler, with khz's automatic gains instead of the scene file's (from the step and the "
    "load each pair carries; the stiffness and damping beyond Euler's limit in implicit rows)",
    create_euler_auto, apply_force, step, get_state, destroy};
