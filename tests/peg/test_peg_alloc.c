/* test_peg_alloc.c — zero heap allocations inside khz_step with the PEG
 * method: malloc, calloc, realloc and free are wrapped at link time
 * (-Wl,--wrap) and counted while a cube falls corner first on a block's
 * edge, and two boxes and a convex mesh drop onto the ground and each other
 * (vertex-face, edge-edge, I and X constraints, friction, rest), 1,000
 * steps each. */
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "khz/khz.h"
#include "khz/load.h"
#include "peg/peg.h"

static int counting;
static long allocations;

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

void *__wrap_malloc(size_t n) {
  if (counting) allocations++;
  return __real_malloc(n);
}
void *__wrap_calloc(size_t k, size_t n) {
  if (counting) allocations++;
  return __real_calloc(k, n);
}
void *__wrap_realloc(void *p, size_t n) {
  if (counting) allocations++;
  return __real_realloc(p, n);
}
void __wrap_free(void *p) {
  if (counting) allocations++;
  __real_free(p);
}

static const char corner_scene[] =
    "khz_scene: 1\nrate_hz: 500\nground: {height: 0}\ncontact: {method: peg, mu: 0.3}\nobjects:\n"
    "  - {name: block, shape: box, size: [0.2, 0.2, 0.1], mass: 10, pos: [0, 0, 0.1], fixed: true}\n"
    "  - {name: cube, shape: box, size: [0.05, 0.05, 0.05], mass: 1, pos: [0.2, 0.0, 0.3],"
    " rpy: [0.7853981633974483, 0.6154797086703874, 0], vel: [0.3, 0, 0]}\n";
static const char drop_scene[] =
    "khz_scene: 1\nrate_hz: 500\nground: {height: 0}\ncontact: {method: peg, mu: 0.5}\nobjects:\n"
    "  - {name: a, shape: box, size: [0.1, 0.08, 0.05], mass: 2, pos: [0, 0, 0.1], rpy: [0.1, 0.2, 0.3]}\n"
    "  - {name: b, shape: box, size: [0.05, 0.05, 0.05], mass: 1, pos: [0.03, 0.02, 0.3], rpy: [0.5, 0.1, 0.9]}\n"
    "  - {name: c, shape: mesh, file: scenes/peg/meshes/poly0.obj, mass: 0.5,"
    " inertia: [0.0005, 0.0005, 0.0005, 0, 0, 0], pos: [-0.05, 0.0, 0.5], rpy: [0.3, 0.7, 0.2]}\n";

int main(void) {
  const char *scenes[] = {corner_scene, drop_scene, drop_scene};
  /* the third run: the drop with the LP-depth model (khz_lpDepth in the step) */
  for (int k = 0; k < 3; k++) {
    khz_pegSetModel(k == 2 ? KHZ_PEG_MODEL_LPDEPTH : KHZ_PEG_MODEL_PEG);
    char err[512];
    khzModel *m = NULL;
    khzScene sc;
    if (!khz_loadSceneString(&sc, scenes[k], "peg", ".", err, sizeof err)) {
      m = khz_compile(sc.spec, err, sizeof err);
      khz_deleteScene(&sc);
    }
    ENSURE_MSG(m != NULL, "%s", err);
    if (!m) continue;
    allocations = 0;
    counting = 1;
    khzData *d = khz_makeData(m, 0);
    counting = 0;
    ENSURE_MSG(allocations >= 2, "wrapper saw %ld calls in khz_makeData", allocations);
    ENSURE(d->contact_method == KHZ_CONTACT_PEG);
    allocations = 0;
    counting = 1;
    int contacts = 0, groups = 0;
    for (int s = 0; s < 1000; s++) {
      khz_step(m, d);
      contacts += d->ncontact > 0;
      const khzPegStats *st = khz_pegLastStats();
      groups += st->ni + st->nx > 0;
    }
    counting = 0;
    ENSURE_MSG(allocations == 0, "scene %d: %ld heap calls in 1000 PEG steps", k, allocations);
    ENSURE_MSG(contacts > 100, "scene %d: only %d steps with contacts", k, contacts);
    printf("scene %d: %d steps with contacts, %d with I or X constraints, %ld fallbacks\n", k, contacts, groups,
           (long)d->warning[KHZ_WARN_LCP]);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
  khz_pegSetModel(KHZ_PEG_MODEL_PEG);
  return ensure_report();
}
