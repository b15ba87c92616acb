/* test_timestep.c — step sizes from every source are checked (issue 20,
 * item 4): an MJCF <option timestep> outside the rates khz runs at is a load
 * error naming the value and the range (it used to pass and diverge), one
 * inside loads; a scene's rate_hz outside the range is refused the same way;
 * and a step beyond what the model's stiffest element allows gets a warning
 * naming it (khz_loop_stabilityWarning: a scene's contact stiffness given on
 * a light box), none at 1 ms. Joint damping sets no limit (it is integrated
 * implicitly): a hinge with h b / I = 1000 gets no warning, and runs finite
 * and stops. Contact with automatic gains is limited by the step's fall
 * against the thinnest floating body: the default scene warns at 0.1 s
 * naming box2, not at 20 ms or 1 ms. */
#include <math.h>
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

  /* the stability warning: contact gains given in the scene */
  const char *stiff =
      "khz_scene: 1\nname: stiff\nrate_hz: 1000\ncontact: {kp: 100000, kv: 10}\n"
      "objects:\n  - {name: box, shape: box, size: [0.05, 0.05, 0.05], mass: 0.1, pos: [0, 0, 0.2]}\n";
  rc = khz_loadSceneString(&sc, stiff, "stiff.yaml", ".", err, sizeof err);
  ENSURE_MSG(rc == 0, "%s", err);
  khzModel *m = rc == 0 ? khz_compile(sc.spec, err, sizeof err) : NULL;
  ENSURE_MSG(m != NULL, "%s", err);
  if (m) {
    char what[256], msg[512];
    double hmax = khz_loop_stableTimestep(m, what, sizeof what);
    printf("stiff scene: stable up to %g s (%s)\n", hmax, what);
    ENSURE(hmax > 0.001 && hmax < 0.01); /* 2.83 / sqrt(1e5 / 0.1) = 2.8 ms */
    ENSURE(khz_loop_stabilityWarning(m, 0.005, msg, sizeof msg) == 1);
    printf("at 5 ms: %s\n", msg);
    ENSURE(strstr(msg, "0.005 s") && strstr(msg, "contact stiffness of 'box'"));
    ENSURE(khz_loop_stabilityWarning(m, 0.001, msg, sizeof msg) == 0);
    khz_deleteModel(&m);
  }
  if (rc == 0) khz_deleteScene(&sc);

  /* the default scene: joint damping sets no limit (it used to name the arm's last joint); its
   * contact with automatic gains does: g h^2 against a quarter of the thinnest loose body's
   * half-thickness (box2, 2 cm: 0.0226 s; the scene diverges at 0.06 s, runs at 0.05 s) */
  m = khz_loadModel("default", &sc, err, sizeof err);
  ENSURE(m != NULL);
  if (m) {
    char msg[512];
    ENSURE(khz_loop_stabilityWarning(m, 0.1, msg, sizeof msg) == 1);
    printf("default at 0.1 s: %s\n", msg);
    ENSURE(strstr(msg, "0.1 s") && strstr(msg, "automatic gains on 'box2'"));
    ENSURE(khz_loop_stabilityWarning(m, 0.02, msg, sizeof msg) == 0);
    ENSURE(khz_loop_stabilityWarning(m, 0.001, msg, sizeof msg) == 0);
    khz_deleteModel(&m);
    khz_deleteScene(&sc);
  }
  for (int rk4 = 0; rk4 < 2; rk4++) {
    char xml[512];
    snprintf(xml, sizeof xml,
             "<mujoco><option timestep='0.01' integrator='%s' gravity='0 0 0'/><worldbody><body>"
             "<joint name='j' type='hinge' damping='100'/><inertial pos='0 0 0' mass='1' "
             "diaginertia='0.001 0.001 0.001'/></body></worldbody></mujoco>", rk4 ? "RK4" : "Euler");
    khzSpec *s = khz_spec_new();
    khzMjcfOptions opt;
    khz_mjcf_defaultOptions(&opt);
    ENSURE_MSG(khz_loadMJCFString(s, xml, "damped.xml", &opt, err, sizeof err) >= 0, "%s", err);
    m = khz_compile(s, err, sizeof err);
    ENSURE_MSG(m != NULL, "%s", err);
    if (m) {
      char msg[512];
      ENSURE(khz_loop_stabilityWarning(m, 0.01, msg, sizeof msg) == 0);
      khzData *d = khz_makeData(m, 0);
      d->qd[0] = 1;
      for (int k = 0; k < 100; k++) khz_step(m, d);
      printf("%s, h b / I = 1000: qd after 1 s %g\n", rk4 ? "RK4" : "Euler", d->qd[0]);
      ENSURE(isfinite(d->qd[0]) && fabs(d->qd[0]) < 1e-6);
      khz_deleteData(&d);
      khz_deleteModel(&m);
    }
    khz_spec_destroy(&s);
  }
  return ensure_report();
}
