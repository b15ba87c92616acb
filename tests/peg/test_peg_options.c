/* test_peg_options.c — PEG's settings are the model's (contact.peg_* from
 * the scene's contact: keys) and its counts the data's (khz_pegLastStats(d);
 * docs/peg.md, "Settings and counts"):
 *  - the keys: each value read into khzContactOptions, the defaults kept
 *    without them, and a bad value refused with the file, line, column and
 *    key named (the loader's rule for every key);
 *  - two models with different settings in one process: model A (a box
 *    2 cm into another, contact: {peg_recovery: true}) and model B (three
 *    bodies dropped, peg_model: standard, peg_splits: 0, peg_lemke_ties: 1)
 *    stepped alternately give each bit for bit the states and the per-step
 *    counts each gives when stepped alone, and every count read back after
 *    the other model's step is still its own. With process-wide settings
 *    one model runs with the other's (recovery on B, the standard model on
 *    A) and with one process-wide count struct A's counts read after B's
 *    step are B's: both checks fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "khz/khz.h"
#include "khz/load.h"
#include "peg/peg.h"

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static void test_keys(void) {
  char err[512];
  khzScene s;
  /* the defaults: the PEG model, no recovery, two halvings, the LP-depth
   * model's units, the default ties */
  int rc = khz_loadSceneString(&s, "khz_scene: 1\ncontact: {method: peg}\n", "peg.yaml", NULL, err, sizeof err);
  ENSURE_MSG(rc == 0, "%s", err);
  if (rc == 0) {
    ENSURE(s.contact.peg_model == KHZ_PEG_MODEL_PEG && s.contact.peg_recovery == 0 && s.contact.peg_splits == 2);
    ENSURE(s.contact.peg_lp_point == 0 && s.contact.peg_lemke_ties == 0);
    khz_deleteScene(&s);
  }
  const struct {
    const char *model;
    int id;
  } models[] = {{"peg", KHZ_PEG_MODEL_PEG}, {"standard", KHZ_PEG_MODEL_STANDARD}, {"lpdepth", KHZ_PEG_MODEL_LPDEPTH}};
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    char yaml[256];
    snprintf(yaml, sizeof yaml,
             "khz_scene: 1\ncontact: {method: peg, peg_model: %s, peg_recovery: true, peg_splits: %d, "
             "peg_lp_point: true, peg_lemke_ties: 1}\n",
             models[i].model, (int)i);
    rc = khz_loadSceneString(&s, yaml, "peg.yaml", NULL, err, sizeof err);
    ENSURE_MSG(rc == 0, "%s", err);
    if (rc == 0) {
      ENSURE(s.contact.peg_model == models[i].id && s.contact.peg_recovery == 1 && s.contact.peg_splits == (int)i);
      ENSURE(s.contact.peg_lp_point == 1 && s.contact.peg_lemke_ties == 1);
      khz_deleteScene(&s);
    }
  }
  /* bad values: the file, line and column of the value, the key, the value */
  const struct {
    const char *yaml, *want;
  } bad[] = {
      {"khz_scene: 1\ncontact: {method: peg, peg_model: exact}\n",
       "bad.yaml:2:35: key 'contact.peg_model': unknown model 'exact': it must be one of peg, standard, lpdepth"},
      {"khz_scene: 1\ncontact:\n  method: peg\n  peg_recovery: 2\n", "bad.yaml:4:17: key 'contact.peg_recovery'"},
      {"khz_scene: 1\ncontact: {peg_splits: 3}\n", "bad.yaml:2:23: key 'contact.peg_splits': 3 is out of range"},
      {"khz_scene: 1\ncontact: {peg_splits: 1.5}\n", "bad.yaml:2:23: key 'contact.peg_splits': 1.5 is not 0, 1 or 2"},
      {"khz_scene: 1\ncontact: {peg_lp_point: maybe}\n", "bad.yaml:2:25: key 'contact.peg_lp_point'"},
      {"khz_scene: 1\ncontact: {peg_lemke_ties: -1}\n", "bad.yaml:2:27: key 'contact.peg_lemke_ties': -1 is out of range"},
      {"khz_scene: 1\ncontact: {peg_recover: true}\n", "bad.yaml:2:11: key 'contact.peg_recover': unknown key"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    rc = khz_loadSceneString(&s, bad[i].yaml, "bad.yaml", NULL, err, sizeof err);
    ENSURE_MSG(rc == -1 && starts_with(err, bad[i].want), "case %zu: got '%s', want '%s...'", i, err, bad[i].want);
    if (rc == 0) khz_deleteScene(&s);
  }
}

/* model A: box b placed about 2 cm into box a (test_peg's test_recovery),
 * with the recovery; model B: two boxes and a convex mesh dropped on the
 * floor (test_peg_alloc's drop) with the standard model, no halving and
 * Lemke's own ties */
static const char scene_a[] =
    "khz_scene: 1\nrate_hz: 100\ngravity: [0, 0, -9.81]\ncontact: {method: peg, mu: 0.3, peg_recovery: true}\n"
    "sleep: false\nobjects:\n"
    "  - {name: floor, shape: box, size: [0.2, 0.2, 0.025], mass: 10, pos: [0, 0, -0.025], fixed: true}\n"
    "  - {name: a, shape: box, size: [0.03, 0.03, 0.03], mass: 0.2, pos: [0, 0, 0.03]}\n"
    "  - {name: b, shape: box, size: [0.025, 0.025, 0.025], mass: 0.1, pos: [0.005, 0.003, 0.065],"
    " rpy: [0.2, 0.1, 0.3]}\n";
static const char scene_b[] =
    "khz_scene: 1\nrate_hz: 500\nground: {height: 0}\n"
    "contact: {method: peg, mu: 0.5, peg_model: standard, peg_splits: 0, peg_lemke_ties: 1}\nsleep: false\n"
    "objects:\n"
    "  - {name: a, shape: box, size: [0.1, 0.08, 0.05], mass: 2, pos: [0, 0, 0.1], rpy: [0.1, 0.2, 0.3]}\n"
    "  - {name: b, shape: box, size: [0.05, 0.05, 0.05], mass: 1, pos: [0.03, 0.02, 0.3], rpy: [0.5, 0.1, 0.9]}\n"
    "  - {name: c, shape: mesh, file: scenes/peg/meshes/poly0.obj, mass: 0.5,"
    " inertia: [0.0005, 0.0005, 0.0005, 0, 0, 0], pos: [-0.05, 0.0, 0.5], rpy: [0.3, 0.7, 0.2]}\n";

#define STEPS 150

typedef struct {
  khzModel *m;
  khzData *d;
  khzPegStats stats[STEPS];
  double *q, *qd; /* the state after the last step */
} run;

static khzModel *scene_model(const char *text) {
  char err[512];
  khzScene sc;
  if (khz_loadSceneString(&sc, text, "peg", ".", err, sizeof err)) {
    fprintf(stderr, "scene: %s\n", err);
    return NULL;
  }
  khzModel *m = khz_compile(sc.spec, err, sizeof err);
  if (!m) fprintf(stderr, "compile: %s\n", err);
  khz_deleteScene(&sc);
  return m;
}

static int run_open(run *r, const char *text) {
  memset(r, 0, sizeof *r);
  r->m = scene_model(text);
  if (!r->m) return -1;
  r->d = khz_makeData(r->m, 0);
  return r->d ? 0 : -1;
}

static void run_close(run *r) {
  r->q = malloc(sizeof(double) * (size_t)r->m->nq), r->qd = malloc(sizeof(double) * (size_t)r->m->nv);
  memcpy(r->q, r->d->q, sizeof(double) * (size_t)r->m->nq);
  memcpy(r->qd, r->d->qd, sizeof(double) * (size_t)r->m->nv);
  khz_deleteData(&r->d);
}

static void run_free(run *r) {
  free(r->q), free(r->qd);
  khz_deleteModel(&r->m);
}

/* the counts' fields compared one by one (the struct's padding is not) */
static int stats_equal(const khzPegStats *a, const khzPegStats *b) {
  return a->contacts == b->contacts && a->groups == b->groups && a->members == b->members && a->nu == b->nu &&
         a->ni == b->ni && a->nx == b->nx && a->n == b->n && a->status == b->status && a->failed == b->failed &&
         a->frictionless == b->frictionless && a->cones == b->cones && a->full == b->full &&
         a->narrowed == b->narrowed && a->turn == b->turn && a->added == b->added && a->speed == b->speed &&
         a->spin == b->spin && a->passes == b->passes && a->stop == b->stop && a->split_stop == b->split_stop &&
         a->worst == b->worst && a->splits == b->splits && a->blocks == b->blocks && a->nblock == b->nblock &&
         a->dropped == b->dropped && a->stale == b->stale && a->pivots == b->pivots &&
         a->reinverts == b->reinverts && a->recovering == b->recovering && a->polished == b->polished &&
         a->unpolished == b->unpolished;
}

static void test_two_models(void) {
  run alone[2], both[2];
  const char *scenes[2] = {scene_a, scene_b};
  /* each alone */
  for (int k = 0; k < 2; k++) {
    ENSURE(run_open(&alone[k], scenes[k]) == 0);
    if (!alone[k].d) return;
    for (int s = 0; s < STEPS; s++) {
      khz_step(alone[k].m, alone[k].d);
      alone[k].stats[s] = *khz_pegLastStats(alone[k].d);
    }
  }
  /* alternately: A's step, B's step, then both counts read */
  for (int k = 0; k < 2; k++) {
    ENSURE(run_open(&both[k], scenes[k]) == 0);
    if (!both[k].d) return;
  }
  int stats_off[2] = {0, 0};
  for (int s = 0; s < STEPS; s++) {
    for (int k = 0; k < 2; k++) khz_step(both[k].m, both[k].d);
    for (int k = 0; k < 2; k++) {
      both[k].stats[s] = *khz_pegLastStats(both[k].d);
      stats_off[k] += !stats_equal(&both[k].stats[s], &alone[k].stats[s]);
    }
  }
  /* what the settings do in these runs: A recovers (B would not), B takes
   * the standard model's constraints (no I or X) */
  int recovering[2] = {0, 0}, ix[2] = {0, 0}, fallbacks[2];
  for (int k = 0; k < 2; k++) {
    for (int s = 0; s < STEPS; s++)
      recovering[k] += alone[k].stats[s].recovering, ix[k] += alone[k].stats[s].ni + alone[k].stats[s].nx;
    fallbacks[k] = (int)both[k].d->warning[KHZ_WARN_LCP];
    ENSURE(fallbacks[k] == (int)alone[k].d->warning[KHZ_WARN_LCP]);
    run_close(&alone[k]);
    run_close(&both[k]);
  }
  int same[2];
  for (int k = 0; k < 2; k++) {
    const khzModel *m = alone[k].m;
    same[k] = !memcmp(alone[k].q, both[k].q, sizeof(double) * (size_t)m->nq) &&
              !memcmp(alone[k].qd, both[k].qd, sizeof(double) * (size_t)m->nv);
  }
  printf("two models stepped alternately, %d steps each: A (peg_recovery) %d steps with a pair recovering, "
         "%d fallbacks, state %s, %d steps' counts differ; B (standard, no halving, ties 1) %d I/X constraints, "
         "%d fallbacks, state %s, %d steps' counts differ\n",
         STEPS, recovering[0], fallbacks[0], same[0] ? "bit-identical to A alone" : "DIFFERS from A alone",
         stats_off[0], ix[1], fallbacks[1], same[1] ? "bit-identical to B alone" : "DIFFERS from B alone",
         stats_off[1]);
  ENSURE_MSG(recovering[0] > 0, "model A's recovery never acted");
  ENSURE_MSG(ix[1] == 0, "model B (standard) had %d I or X constraints", ix[1]);
  for (int k = 0; k < 2; k++) {
    ENSURE_MSG(same[k], "model %c: the state stepped beside the other model is not the state stepped alone",
               'A' + k);
    ENSURE_MSG(stats_off[k] == 0, "model %c: %d steps' counts differ from its run alone", 'A' + k, stats_off[k]);
    run_free(&alone[k]);
    run_free(&both[k]);
  }
}

int main(void) {
  test_keys();
  test_two_models();
  return ensure_report();
}
