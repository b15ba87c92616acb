/* test_peg_alloc.c — zero heap allocations inside khz_step with the PEG
 * method: malloc, calloc, realloc and free are wrapped at link time
 * (-Wl,--wrap) and counted while a cube falls corner first on a block's
 * edge, and two boxes and a convex mesh drop onto the ground and each other
 * (with PEG and with the LP-depth model). Each run is only as long as it
 * takes to reach the step's paths (vertex-face and edge-edge U, I and X
 * constraints, friction, a frictional LCP solved again without friction,
 * re-linearisation passes), and the test checks that it reached them: at
 * 1,000 steps each it took 68 s of the CI's 15 minutes under ASan, most of
 * it in bodies at rest. */
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "khz/khz.h"
#include "khz/load.h"
#include "peg/peg.h"
#include "heap_count.h"

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

/* box b placed 2 cm into box a (test_peg's recovery), run with
 * contact.peg_recovery: the LP depth solved in the gathering */
static const char sunk_scene[] =
    "khz_scene: 1\nrate_hz: 500\ngravity: [0, 0, -9.81]\ncontact: {method: peg, mu: 0.3, peg_recovery: true}\n"
    "sleep: false\nobjects:\n"
    "  - {name: floor, shape: box, size: [0.2, 0.2, 0.025], mass: 10, pos: [0, 0, -0.025], fixed: true}\n"
    "  - {name: a, shape: box, size: [0.03, 0.03, 0.03], mass: 0.2, pos: [0, 0, 0.03]}\n"
    "  - {name: b, shape: box, size: [0.025, 0.025, 0.025], mass: 0.1, pos: [0.005, 0.003, 0.065],"
    " rpy: [0.2, 0.1, 0.3]}\n";

int main(void) {
  const char *scenes[] = {corner_scene, drop_scene, drop_scene, sunk_scene};
  /* steps of each run (h = 2 ms), measured at fc9dbe3: the corner scene has
   * its I and X constraints at steps 92-99 and passes at 38-43; the drop
   * its I and X at 80-94, passes at 80-81 and 108-122, steps solved without
   * friction from 114 on (28 of them after the solve's pivot-tolerance
   * retry); the LP-depth drop passes from 106 on. The drop's steps without
   * friction come only with Lemke's ratio ties as they were before session
   * 14 (tie_abs 1: with PEG_TIE_ABS every block of the drop solves with
   * friction), so the drop runs with them to keep that path covered */
  const int nsteps[] = {120, 240, 240, 120};
  /* the third run: the drop with the LP-depth model (khz_lpDepth in the step) */
  /* the fourth: the sunk box with the recovery's LP-depth constraint */
  for (int k = 0; k < 4; k++) {
    char err[512];
    khzModel *m = NULL;
    khzScene sc;
    if (!khz_loadSceneString(&sc, scenes[k], "peg", ".", err, sizeof err)) {
      m = khz_compile(sc.spec, err, sizeof err);
      khz_deleteScene(&sc);
    }
    ENSURE_MSG(m != NULL, "%s", err);
    if (!m) continue;
    if (k == 2) m->contact.peg_model = KHZ_PEG_MODEL_LPDEPTH;
    if (k == 1) m->contact.peg_lemke_ties = 1;
    heap_calls = 0;
    heap_counting = 1;
    khzData *d = khz_makeData(m, 0);
    heap_counting = 0;
    ENSURE_MSG(heap_calls >= 2, "wrapper saw %ld calls in khz_makeData", heap_calls);
    ENSURE(d->contact_method == KHZ_CONTACT_PEG);
    heap_calls = 0;
    heap_counting = 1;
    int recovering = 0;
    int contacts = 0, groups = 0, frictionless = 0, passes = 0, given_back = 0, withheld = 0, last_frictionless = 0;
    for (int s = 0; s < nsteps[k]; s++) {
      khz_step(m, d);
      contacts += d->ncontact > 0;
      const khzPegStats *st = khz_pegLastStats(d);
      /* a step after one solved without friction gathers its cones again
       * (one per U and I constraint: the scenes' mu > 0) */
      if (last_frictionless && k < 2 && st->nu + st->ni > 0) {
        given_back += st->cones > 0;
        withheld += st->cones == 0;
      }
      last_frictionless = st->frictionless;
      groups += st->ni + st->nx > 0;
      frictionless += st->frictionless;
      passes += st->passes > 1;
      recovering += st->recovering;
    }
    heap_counting = 0;
    ENSURE_MSG(heap_calls == 0, "scene %d: %ld heap calls in %d PEG steps", k, heap_calls, nsteps[k]);
    ENSURE_MSG(contacts > nsteps[k] / 2, "scene %d: only %d steps with contacts", k, contacts);
    /* the paths the runs are there for */
    ENSURE_MSG(passes > 0, "scene %d: no step took a second pass", k);
    if (k < 2) ENSURE_MSG(groups > 0, "scene %d: no step with I or X constraints", k);
    if (k == 1) ENSURE_MSG(frictionless > 0, "scene %d: no step solved without friction", k);
    if (k == 3) ENSURE_MSG(recovering > 0, "scene %d: no pair recovering", k);
    if (k == 1) ENSURE_MSG(given_back > 0, "scene %d: no step after a frictionless one", k);
    ENSURE_MSG(withheld == 0, "scene %d: %d steps after a frictionless one started without friction cones", k,
               withheld);
    printf("scene %d: %d of %d steps with contacts, %d with I or X constraints, %d with passes, %d without friction "
           "(the next step with its friction cones again: %d, without: %d), %ld fallbacks\n",
           k, contacts, nsteps[k], groups, passes, frictionless, given_back, withheld, (long)d->warning[KHZ_WARN_LCP]);
    if (k == 3) printf("scene 3: %d steps with a pair recovering\n", recovering);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
  return ensure_report();
}
