/* test_timestep.c — step sizes from every source are checked (issue 20,
 * item 4): an MJCF <option timestep> outside the rates khz runs at is a load
 * error naming the value and the range (it used to pass and diverge), one
 * inside loads; a scene's rate_hz outside the range is refused the same way;
 * and a step beyond what the model's stiffest element allows gets a warning
 * naming it (khz_loop_stabilityWarning: the default scene at 0.1 s, its arm's
 * last joint damping on its small inertia), none at the scene's 1 ms. */
#include <stdio.h>
#include <string.h>

#include "ensure.h"
#include "khz/khz.h"
#include "khz/load.h"
#include "khz/loop.h"

static int mjcf(const char *timestep, char *err, size_t errsz) {
  char xml[512];
  snprintf(xml, sizeof xml,
           "<mujoco><option timestep='%s'/><worldbody><body><joint type='hinge'/>"
           "<geom type='sphere' size='.1'/></body></worldbody></mujoco>",
           timestep);
  khzSpec *s = khz_spec_new();
  khzMjcfOptions opt;
  khz_mjcf_defaultOptions(&opt);
  err[0] = 0;
  int rc = khz_loadMJCFString(s, xml, "t.xml", &opt, err, errsz);
  khz_spec_destroy(&s);
  return rc;
}

int main(void) {
  char err[1024];
  ENSURE(mjcf("0.5", err, sizeof err) < 0);
  printf("timestep 0.5: %s\n", err);
  ENSURE(strstr(err, "timestep 0.5 s") && strstr(err, "0.0001..0.01 s"));
  ENSURE(mjcf("0.00001", err, sizeof err) < 0);
  ENSURE(mjcf("0.002", err, sizeof err) >= 0);
  ENSURE(mjcf("0.01", err, sizeof err) >= 0);

  /* a scene's rate */
  khzScene sc;
  int rc = khz_loadSceneString(&sc, "khz_scene: 1\nname: t\nrate_hz: 2\n", "t.yaml", ".", err, sizeof err);
  ENSURE(rc < 0 && strstr(err, "rate_hz"));
  if (rc < 0) printf("rate_hz 2: %s\n", err);
  else khz_deleteScene(&sc);

  /* the stability warning */
  khzModel *m = khz_loadModel("default", &sc, err, sizeof err);
  ENSURE(m != NULL);
  if (m) {
    char what[256], msg[512];
    double hmax = khz_loop_stableTimestep(m, what, sizeof what);
    printf("default scene: stable up to %g s (%s)\n", hmax, what);
    ENSURE(hmax > 0.01 && hmax < 0.1);
    ENSURE(khz_loop_stabilityWarning(m, 0.1, msg, sizeof msg) == 1);
    printf("at 0.1 s: %s\n", msg);
    ENSURE(strstr(msg, "0.1 s") && strstr(msg, "arm/joint7"));
    ENSURE(khz_loop_stabilityWarning(m, 0.001, msg, sizeof msg) == 0);
    khz_deleteModel(&m);
    khz_deleteScene(&sc);
  }
  return ensure_report();
}
