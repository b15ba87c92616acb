/* test_robots_floor.c — real robots on the floor with the automatic contact
 * gains (rt/src/contact/penalty.c; docs/contact.md, "Robots"): each model of
 * tests/validation/robots, as published (dm_control's walker and cheetah,
 * Gymnasium's ant and humanoid, MuJoCo Menagerie's Unitree Go1), is loaded
 * with its own floor, time step and integrator, contact by the penalty
 * method with no gains in the scene, zero commands, and run 5 s:
 *   - the state stays finite (no step rolled back), and no stack, impulse
 *     or contact-buffer warning is counted;
 *   - no body's centre of mass goes below the floor, and no contact point
 *     with the floor is deeper than 1 cm (or the overlap the model starts
 *     with); the 10 ms models run in the 2 ms substeps the MJCF loader sets
 *     (khz_spec_setMaxSubstep): --no-substeps runs them at 10 ms, where the
 *     cheetah's foot lands 1.3 cm deep and the ant's torso 2.6 cm;
 *   - the energy (kinetic + gravity + joint springs) never rises above its
 *     initial value by more than 1e-3 m g (1 mm of the whole robot falling)
 *     plus m g times the initial overlap (the floor pushing the robot out
 *     of it): contact may only take energy out.
 * Before the articulated limits every one of them gained energy at the
 * first contact of a foot (the walker 2.4e3 J in 25 ms, the Go1 non-finite
 * at 0.04 s) or, at dm_control's 10 ms step, sank up to 3 cm.
 *   usage (from the source root):
 *   test_robots_floor [--seconds S] [--only NAME] [--trace DT] [--no-substeps] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "khz/load.h"

static double trace; /* --trace DT: energy and the deepest contact every DT s */

static void quiet(void *user, const char *msg) { (void)user, (void)msg; }

/* kinetic + gravity + joint-spring energy */
static double energy(const khzModel *m, khzData *d) {
  double k, p;
  khz_kinematics(m, d);
  khz_energy(m, d, &k, &p);
  for (int b = 1; b < m->nbody; b++) {
    int dof = m->jnt_dofadr[b];
    if (m->jnt_nv[b] != 1 || m->dof_stiffness[dof] == 0) continue;
    double x = d->q[m->jnt_qadr[b]] - m->dof_springref[dof];
    p += 0.5 * m->dof_stiffness[dof] * x * x;
  }
  return k + p;
}

static const char *only; /* --only NAME: the models whose path contains NAME */
static int no_substeps;  /* --no-substeps: every step at the model's timestep */

static khzModel *load(const char *path, const char *key) {
  char err[1024];
  khzSpec *spec = khz_spec_new();
  khzContactOptions co;
  khz_spec_defaultContact(&co); /* no gains: the automatic ones */
  co.method = KHZ_CONTACT_PENALTY;
  khz_spec_setContact(spec, &co);
  khzMjcfOptions o;
  khz_mjcf_defaultOptions(&o);
  o.warn = quiet;
  o.keyframe = key;
  khzModel *m = NULL;
  if (khz_loadMJCF(spec, path, &o, err, sizeof err) >= 0) {
    if (no_substeps) khz_spec_setMaxSubstep(spec, 0);
    m = khz_compile(spec, err, sizeof err);
  }
  if (!m) fprintf(stderr, "%s: %s\n", path, err);
  khz_spec_destroy(&spec);
  return m;
}

/* runs one model; q0 (may be NULL) replaces its initial q; release (J) is
 * the energy its joints' limits may put in when it starts outside them */
static void run(const char *path, const char *key, const double *q0, int nq0, double seconds,
                double release) {
  if (only && !strstr(path, only)) return;
  khzModel *m = load(path, key);
  ENSURE_MSG(m != NULL, "%s does not load\n", path);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);
  if (q0) {
    ENSURE(nq0 == m->nq);
    if (nq0 == m->nq) memcpy(d->q, q0, (size_t)nq0 * sizeof(double));
  }
  double mass = 0, g = fabs(m->gravity[2]);
  for (int b = 1; b < m->nbody; b++) mass += m->body_mass[b];
  double e0 = energy(m, d), gain = 0, sink = 0, depth = 0, spring = 0, d0 = 0;
  long steps = lround(seconds / m->timestep), bad = -1, half = steps / 2;
  void *snap = malloc(khz_stateSize(m));
  ENSURE(snap);
  int kept = 0;
  for (long s = 0; s < steps && bad < 0; s++) {
    if (s == half) { /* the state halfway, with the tree limits' kept Ritz vectors (d->rate_warm) */
      khz_saveState(m, d, snap);
      for (int b = 0; b < 6 * m->nbody; b++) kept += d->rate_warm[b] != 0;
    }
    khz_step(m, d);
    for (int i = 0; i < m->nq; i++)
      if (!isfinite(d->q[i])) bad = s;
    if (d->warning[KHZ_WARN_BADSTATE]) bad = s;
    for (int b = 1; b < m->nbody; b++)
      if (m->body_mass[b] > 0) sink = fmax(sink, -d->xcom[3 * b + 2]);
    for (int c = 0; c < d->ncontact; c++) {
      const khzContact *ct = d->contact + c;
      if (ct->body[0] != 0 && ct->body[1] != 0) continue;
      double x = d->cpoint[ct->deepest].depth;
      depth = fmax(depth, x);
      spring = fmax(spring, x - d->pair[ct->slot].offset);
      if (s == 0) d0 = fmax(d0, x); /* the overlap the model starts with */
    }
    gain = fmax(gain, energy(m, d) - e0);
    if (trace && (s + 1) % lround(fmax(1, trace / m->timestep)) == 0) {
      double dd = 0;
      int cc = -1;
      for (int c = 0; c < d->ncontact; c++)
        if (d->cpoint[d->contact[c].deepest].depth > dd) dd = d->cpoint[d->contact[c].deepest].depth, cc = c;
      printf("  t %.3f  energy %+.4g J  contacts %d  deepest %.4f m (%s - %s)\n", d->time, energy(m, d) - e0,
             d->ncontact, dd, cc >= 0 ? m->body_name[d->contact[cc].body[0]] : "",
             cc >= 0 ? m->body_name[d->contact[cc].body[1]] : "");
    }
  }
  /* a model that starts overlapping the floor is pushed out: its centre
   * of mass may rise by that overlap */
  double tol = 1e-3 * mass * g + mass * g * d0 + release;
  double dlim = fmax(0.01, d0 + 1e-3), dseen = depth;
  printf("%-45s %-5s %6.2f kg  h %.4f s  finite %s  com below floor %.2e m  deepest %.2e m "
         "(springs %.2e, at start %.2e)  energy gain %.3g J (allowed %.3g)\n",
         path, key ? key : "q0", mass, m->timestep, bad < 0 ? "yes" : "NO", sink, depth, spring, d0, gain,
         tol);
  ENSURE_MSG(bad < 0, "%s: non-finite at step %ld\n", path, bad);
  ENSURE_MSG(d->warning[KHZ_WARN_STACK] == 0 && d->warning[KHZ_WARN_IMPULSE] == 0 &&
                 d->warning[KHZ_WARN_CONTACTFULL] == 0,
             "%s: warnings stack %d, impulse %d, contactfull %d\n", path, d->warning[KHZ_WARN_STACK],
             d->warning[KHZ_WARN_IMPULSE], d->warning[KHZ_WARN_CONTACTFULL]);
  ENSURE_MSG(sink <= 0, "%s: a centre of mass %.3g m below the floor\n", path, sink);
  ENSURE_MSG(dseen <= dlim, "%s: a contact %.3g m deep\n", path, dseen);
  ENSURE_MSG(gain <= tol, "%s: energy rose by %.3g J\n", path, gain);
  if (bad < 0) { /* the second half again from the saved state in a fresh data: the same bits */
    khzData *e = khz_makeData(m, 0);
    ENSURE(e);
    khz_restoreState(m, e, snap);
    for (long s = half; s < steps; s++) khz_step(m, e);
    printf("%-45s %-5s halfway: %d kept rate entries; the second half restored in a fresh data: %s\n", path,
           key ? key : "q0", kept, khz_hashState(m, e) == khz_hashState(m, d) ? "the same hash" : "ANOTHER HASH");
    ENSURE_MSG(khz_hashState(m, e) == khz_hashState(m, d), "%s: restored halfway, another hash\n", path);
    khz_deleteData(&e);
  }
  free(snap);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

int main(int argc, char **argv) {
  double seconds = 5;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
    if (!strcmp(argv[i], "--trace") && i + 1 < argc) trace = atof(argv[++i]);
    if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    if (!strcmp(argv[i], "--no-substeps")) no_substeps = 1;
  }
  const char *dir = "tests/validation/robots";
  char p[512];
  snprintf(p, sizeof p, "%s/dm_control/walker.xml", dir);
  run(p, NULL, NULL, 0, seconds, 0);
  snprintf(p, sizeof p, "%s/dm_control/cheetah.xml", dir);
  run(p, NULL, NULL, 0, seconds, 0);
  /* the ant from Gymnasium's own initial state (its <custom> init_qpos): at
   * qpos0 its ankles start 30 degrees outside their limits */
  static const double ant_q[15] = {0, 0, 0.55, 1, 0, 0, 0, 0, 1, 0, -1, 0, -1, 0, 1};
  snprintf(p, sizeof p, "%s/gym/ant.xml", dir);
  run(p, NULL, ant_q, 15, seconds, 0);
  /* and from qpos0: its four ankles come back into range at 0.3 rad/s (the
   * limits' gentle release, rt/src/step.c) with armature 1 kg m^2 each:
   * 4 * 1/2 * 1 * 0.3^2 = 0.18 J of kinetic energy the limits put in, and
   * 5 % over it; it falls 0.5 m onto its torso (3.1 m/s) */
  run(p, NULL, NULL, 0, seconds, 1.05 * 4 * 0.5 * 1 * 0.3 * 0.3);
  snprintf(p, sizeof p, "%s/gym/humanoid.xml", dir);
  run(p, NULL, NULL, 0, seconds, 0);
  snprintf(p, sizeof p, "%s/unitree_go1/scene.xml", dir);
  run(p, NULL, NULL, 0, seconds, 0);
  run(p, "home", NULL, 0, seconds, 0);
  return ensure_report();
}
