/* test_timestep.c — step sizes from every source are checked (issue 20,
 * item 4): an MJCF <option timestep> outside the rates khz runs at is a load
 * error naming the value and the range (it used to pass and diverge), one
 * inside loads; a scene's rate_hz outside the range is refused the same way;
 * and a step beyond what the model's stiffest element allows gets a warning
 * naming it (khz_loop_stabilityWarning: a scene's contact stiffness given on
 * a light box, and the lighter pair of two such boxes), none at 1 ms. The
 * limits are the analytic ones of the damped oscillator (limits.c): a hinge
 * spring k on inertia + armature m is stable up to h omega = 2 sqrt(2) under
 * RK4 (the imaginary-axis limit) and 2 under semi-implicit Euler, up to
 * k h^2 = 4 m + 2 b h with implicit damping b; the step itself is run at 0.98
 * and 1.02 of each limit and must stay bounded below it and grow above it.
 * Joint damping alone sets no limit (it is integrated implicitly): a hinge
 * with h b / I = 1000 gets no warning, and runs finite and stops. Contact
 * with automatic gains is limited by the step's fall against the thinnest
 * floating body: the default scene warns at 0.1 s naming box2, not at 20 ms
 * or 1 ms. */
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

/* a hinge spring (stiffness k, damping b) on a body of inertia I about the
 * axis plus armature a, no gravity: khz_loop_stableTimestep must give the
 * analytic limit want (want < 0: none known in closed form, RK4 with
 * damping), name the joint, and the step must agree: bounded at 0.98 of
 * the limit, growing at 1.02 */
static void test_spring(int rk4, double inertia, double armature, double k, double b, double want) {
  char xml[768], err[512];
  snprintf(xml, sizeof xml,
           "<mujoco><option timestep='0.001' integrator='%s' gravity='0 0 0'/><worldbody><body>"
           "<joint name='spring' type='hinge' axis='0 0 1' stiffness='%.17g' damping='%.17g' "
           "armature='%.17g'/><inertial pos='0 0 0' mass='1' diaginertia='%.17g %.17g %.17g'/>"
           "</body></worldbody></mujoco>",
           rk4 ? "RK4" : "Euler", k, b, armature, inertia, inertia, inertia);
  khzSpec *s = khz_spec_new();
  khzMjcfOptions opt;
  khz_mjcf_defaultOptions(&opt);
  ENSURE_MSG(khz_loadMJCFString(s, xml, "spring.xml", &opt, err, sizeof err) >= 0, "%s", err);
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  if (m) {
    char what[256], msg[512];
    double hmax = khz_loop_stableTimestep(m, what, sizeof what);
    printf("%s, k %g, b %g, I + armature %g: stable up to %.6g s (analytic %.6g): %s\n",
           rk4 ? "RK4" : "Euler", k, b, inertia + armature, hmax, want, what);
    if (want > 0) ENSURE_MSG(fabs(hmax - want) <= 1e-9 * want, "%.12g vs %.12g", hmax, want);
    ENSURE(strstr(what, "joint 'spring'"));
    ENSURE(khz_loop_stabilityWarning(m, 1.01 * hmax, msg, sizeof msg) == 1 && strstr(msg, "joint 'spring'"));
    ENSURE(khz_loop_stabilityWarning(m, 0.99 * hmax, msg, sizeof msg) == 0);
    for (int above = 0; above < 2; above++) {
      khzData *d = khz_makeData(m, 0);
      double h = (above ? 1.02 : 0.98) * hmax;
      d->q[0] = 0.01;
      double early = 0, late = 0; /* the largest |q| over steps 0-100 and 300-400 */
      for (int n = 0; n < 400; n++) {
        khz_stepWith(m, d, h);
        if (n < 100) early = fmax(early, fabs(d->q[0]));
        if (n >= 300) late = fmax(late, fabs(d->q[0]));
      }
      printf("  at %.2f of it: |q| %g over steps 0-100, %g over 300-400\n", above ? 1.02 : 0.98,
             early, late);
      /* below: no growth (Euler undamped keeps its amplitude); above: growth by far */
      ENSURE_MSG(above ? !(late < 1e3 * early) : late <= 1.01 * early,
                 "%s at %.2f of the limit: |q| %g then %g", rk4 ? "RK4" : "Euler",
                 above ? 1.02 : 0.98, early, late);
      khz_deleteData(&d);
    }
    khz_deleteModel(&m);
  }
  khz_spec_destroy(&s);
}

/* contact gains given in the scene act on the pair's reduced mass: two
 * 0.1 kg boxes that can touch each other make a 0.05 kg pair, whose limit is
 * sqrt(2) below a box on the ground (kv small: 2 sqrt(2) / omega) */
static void test_pair_mass(void) {
  char err[512];
  const char *two =
      "khz_scene: 1\nname: pair\nrate_hz: 1000\nground: {height: 0}\ncontact: {kp: 100000, kv: 0.001}\n"
      "objects:\n  - {name: a, shape: box, size: [0.05, 0.05, 0.05], mass: 0.1, pos: [0, 0, 0.2]}\n"
      "  - {name: b, shape: box, size: [0.05, 0.05, 0.05], mass: 0.1, pos: [0, 0, 0.4]}\n";
  khzScene sc;
  int rc = khz_loadSceneString(&sc, two, "pair.yaml", ".", err, sizeof err);
  ENSURE_MSG(rc == 0, "%s", err);
  if (rc) return;
  khzModel *m = khz_compile(sc.spec, err, sizeof err);
  ENSURE_MSG(m != NULL, "%s", err);
  if (m) {
    char what[256];
    double hmax = khz_loop_stableTimestep(m, what, sizeof what), want = 2 * sqrt(2) / sqrt(1e5 / 0.05);
    printf("two boxes: stable up to %.6g s (2 sqrt(2) / omega on 0.05 kg: %.6g): %s\n", hmax, want, what);
    ENSURE_MSG(fabs(hmax - want) < 1e-3 * want, "%g vs %g", hmax, want);
    ENSURE(strstr(what, "between 'a' and 'b'") && strstr(what, "mass 0.05 kg"));
    khz_deleteModel(&m);
  }
  khz_deleteScene(&sc);
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
      "khz_scene: 1\nname: stiff\nrate_hz: 1000\nground: {height: 0}\ncontact: {kp: 100000, kv: 10}\n"
      "objects:\n  - {name: box, shape: box, size: [0.05, 0.05, 0.05], mass: 0.1, pos: [0, 0, 0.2]}\n";
  rc = khz_loadSceneString(&sc, stiff, "stiff.yaml", ".", err, sizeof err);
  ENSURE_MSG(rc == 0, "%s", err);
  khzModel *m = rc == 0 ? khz_compile(sc.spec, err, sizeof err) : NULL;
  ENSURE_MSG(m != NULL, "%s", err);
  if (m) {
    char what[256], msg[512];
    double hmax = khz_loop_stableTimestep(m, what, sizeof what);
    printf("stiff scene: stable up to %g s (%s)\n", hmax, what);
    ENSURE(hmax > 0.001 && hmax < 0.01); /* about 2.83 / sqrt(1e5 / 0.1) = 2.8 ms */
    ENSURE(khz_loop_stabilityWarning(m, 0.005, msg, sizeof msg) == 1);
    printf("at 5 ms: %s\n", msg);
    ENSURE(strstr(msg, "0.005 s") && strstr(msg, "contact between 'box' and 'world'"));
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
  test_pair_mass();
  for (int rk4 = 0; rk4 < 2; rk4++) {
    /* undamped: h omega = 2 sqrt(2) (RK4), 2 (Euler); below the MJCF substep of 2 ms */
    double w = 2 * sqrt(2) / 0.0015;
    test_spring(rk4, 0.001, 0.001, 0.002 * w * w, 0, rk4 ? 2 * sqrt(2) / w : 2 / w);
    /* damped, b / m = omega / 4: Euler's closed form (damping implicit) */
    double k = 0.002 * w * w, b = 0.002 * w / 4, km = k / 0.002, bm = b / 0.002;
    test_spring(rk4, 0.001, 0.001, k, b, rk4 ? -1 : (bm + sqrt(bm * bm + 4 * km)) / km);
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
