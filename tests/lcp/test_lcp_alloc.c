/* test_lcp_alloc.c — zero heap allocations inside khz_step with the LCP
 * method: malloc, calloc, realloc and free are wrapped at link time
 * (-Wl,--wrap) and counted while the four balls (collisions, rolling, the
 * active-set re-check) and the rod (impacts, sliding, rest) run 1,500 steps
 * each, including steps that fall back to the penalty method (a box pushed
 * sideways), and the spin and rolling rows (a ball and a cylinder rolling
 * beside the box), and the LP-depth gap (contact.lcp_gap: lpdepth: a box on
 * a box on the ground, a convex hull and a tilted box dropped beside them,
 * its LPs and the re-check's). */
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "khz/khz.h"
#include "khz/load.h"
#include "heap_count.h"

/* with the spin and rolling rows: a ball spinning and rolling (one point),
 * a cylinder rolling on its side (a line of two points) */
static const char box_scene[] =
    "khz_scene: 1\nrate_hz: 1000\nground: {height: 0}\n"
    "contact: {method: lcp, mu: 0.5, torsional_friction: 0.01, rolling_friction: 0.01}\n"
    "objects:\n  - {name: box, shape: box, size: [0.1, 0.1, 0.1], mass: 3, pos: [0, 0, 0.1], vel: [2, 0, 0]}\n"
    "  - {name: ball, shape: sphere, size: [0.1], mass: 1, pos: [0, 1, 0.1], vel: [0.5, 0, 0], angvel: [0, 5, 3]}\n"
    "  - {name: can, shape: cylinder, size: [0.05, 0.1], mass: 1, pos: [0, -1, 0.05], rpy: [1.5707963267948966, 0, 0], "
    "vel: [0.5, 0, 0], angvel: [0, 10, 0]}\n";

/* the LP-depth gap: box on box, a hull and a tilted box falling on them */
static const char lp_scene[] =
    "khz_scene: 1\nrate_hz: 1000\nground: {height: 0}\nsleep: false\n"
    "contact: {method: lcp, mu: 0.5, lcp_gap: lpdepth}\n"
    "objects:\n  - {name: a, shape: box, size: [0.2, 0.2, 0.1], mass: 2, pos: [0, 0, 0.1]}\n"
    "  - {name: b, shape: box, size: [0.1, 0.1, 0.05], mass: 1, pos: [0, 0, 0.25], rpy: [0, 0, 0.4]}\n"
    "  - {name: h, shape: mesh, file: scenes/peg/meshes/paper0.obj, mass: 0.26, "
    "inertia: [0.0003629, 0.0002797, 0.0002351, 0, 0, 0], pos: [0.05, 0.02, 0.5], rpy: [0.3, 0.2, 0.1]}\n"
    "  - {name: c, shape: box, size: [0.05, 0.05, 0.05], mass: 1, pos: [0.5, 0, 0.3], rpy: [0.7, 0.5, 0.2], "
    "vel: [0.3, 0, -1], angvel: [2, -1, 3]}\n";

int main(void) {
  const char *scenes[] = {"scenes/validation/st_four_balls.yaml", "scenes/validation/st_rod.yaml", NULL, NULL};
  for (int k = 0; k < 4; k++) {
    char err[512];
    khzModel *m = NULL;
    if (scenes[k]) {
      m = khz_loadModel(scenes[k], NULL, err, sizeof err);
    } else {
      khzScene sc;
      if (!khz_loadSceneString(&sc, k == 2 ? box_scene : lp_scene, "box", ".", err, sizeof err)) {
        m = khz_compile(sc.spec, err, sizeof err);
        khz_deleteScene(&sc);
      }
    }
    ENSURE_MSG(m != NULL, "%s", err);
    if (!m) continue;
    /* the wrapper must see rt's own heap_calls, or the test proves nothing */
    heap_calls = 0;
    heap_counting = 1;
    khzData *d = khz_makeData(m, 0);
    heap_counting = 0;
    ENSURE_MSG(heap_calls >= 2, "wrapper saw %ld calls in khz_makeData", heap_calls);
    d->contact_method = KHZ_CONTACT_LCP;
    heap_calls = 0;
    heap_counting = 1;
    int contacts = 0;
    for (int s = 0; s < 1500; s++) {
      if (k == 2) d->xfrc[6] = s > 1000 ? 13 : 0;
      khz_step(m, d);
      contacts += d->ncontact > 0;
    }
    heap_counting = 0;
    ENSURE_MSG(heap_calls == 0, "scene %d: %ld heap calls in 1500 LCP steps", k, heap_calls);
    ENSURE_MSG(contacts > 100, "scene %d: only %d steps with contacts", k, contacts);
    if (k == 3) ENSURE_MSG(d->warning[KHZ_WARN_LCP] == 0, "LP-depth gap: %d fallbacks", (int)d->warning[KHZ_WARN_LCP]);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
  return ensure_report();
}
