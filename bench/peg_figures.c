/* peg_figures.c — the PEG contact method's figure (docs/peg.md), after
 * Williams, Lu & Trinkle 2016, sec. 6 ("box of polyhedra"): convex
 * polyhedra and boxes poured into an open box of five fixed boxes
 * (scenes/peg/pour.yaml, scenes/peg/gen_pour.py), simulated for T seconds
 * at each step size h; after every step the overlap volume of every pair of
 * bodies (exact polytope intersection, rt/src/peg/poly.c) is summed, and
 * its maximum over the run is printed for
 *   PEG       U, I and X constraints (contact.peg_model peg),
 *   standard  the same time-stepping and gathering, every vertex-face and
 *             edge-edge pair its own unilateral constraint (eq. 9),
 *   LP depth  the same time-stepping, one unilateral constraint per pair of
 *             polytopes whose gap is the Anitescu-Hart LP penetration depth
 *             (rho times the centres' distance along its normal), at the
 *             LP's witness point,
 *   lcp       the LCP path (--method lcp: collision at the predicted
 *             positions, up to 4 points per pair),
 * with the steps that fell back (Lemke failed: the penalty method ran) and
 * PEG's steps solved without friction (the frictional LCP failed). Pairs of
 * two fixed bodies (the box's walls on its floor) are not counted.
 *
 * PEG's fallbacks are split by cause: the gathering ran out of room, or
 * Lemke failed. --trace prints every PEG step's counts to stderr.
 *
 *   build/bench/peg_figures [--seconds T] [--scene FILE] [--h H1,H2,...] [--no-lcp] [--trace]
 *                           [--only peg|standard|lpdepth] [--release DT]
 *                           [--lp-one-point] [--recover] [--dump-step N] [--lcp-gaps [--per-step FILE]] [--check]
 * (--lcp-gaps: the LCP path alone, side by side with its two gap functions
 * of polytope pairs, contact.lcp_gap narrowphase (the default) and lpdepth
 * (the Anitescu-Hart LP depth, rt/src/lcp/lpgap.h): per h the largest and
 * the median overlap after a step, the steps over 1e-12 m^3, the fallbacks
 * and the median time per step; --per-step FILE writes every step's overlap
 * and time as CSV: h, gap, step, t, overlap_m3, us)
 * (--check: exit status 1 when PEG misses the goal, for tests)
 * (--release DT: the k-th floating body (k = 0, 1, ..) is kept out of the
 * scene, parked at rest 3 + 0.5 k m beside its pose, until t = k DT, then
 * placed at its scene pose at rest: the paper drops one polyhedron every
 * 0.5 s, scenes/peg/pour_paper.yaml; a body whose pose overlaps a body
 * already in the box, a pile grown to the drop height, is placed higher,
 * by 1 cm at a time until it overlaps nothing)
 * (--only: that model's columns alone; the others print as "-")
 * (--recover: contact.peg_recovery on, a pair overlapping at a step's start
 * also held by its LP depth, released at 0.2 m/s; the scene's key does the same)
 * (--lp-one-point: the LP-depth model with the LP's witness point alone,
 * without its nearly active units: contact.peg_lp_point on)
 * (every run's contact.peg_model is its column's model; the scene's other
 * peg_ keys hold)
 * (--dump-step N1,N2,..: prints the state q and qd at the start of steps N1, N2, .. of every
 * run to stderr, 17 digits: the start of a one-step regression test)
 * The fastest spin is the largest |omega| times the bounding radius of a
 * floating body after any step.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "khz/khz.h"
#include "khz/load.h"
#include "dynamics.h"
#include "lcp/lcp.h"
#include "peg/peg.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct runResult {
  double max_overlap, median_us, median_overlap;
  long over;
  long fallbacks, steps, steps_ix, frictionless, full, narrowed, added, violating, halved;
  double max_n, max_spin;
} runResult;

static int trace;
static int lcp_gap = -1;         /* --lcp-gaps: the scene's contact.lcp_gap set to this */
static int recover, lp_one_point; /* --recover, --lp-one-point: the scene's contact.peg_recovery,
                                     contact.peg_lp_point turned on */
static FILE *per_step;           /* --per-step */
static double release_dt; /* --release */
static long dump_step[64]; /* --dump-step N1,N2,.. */
static int ndump;

/* --release: before the step at time t, every floating body whose turn
 * (k release_dt) has not come is parked at rest beside its scene pose; at
 * its turn it is placed at its scene pose at rest */
/* the overlap volume of body b's polytopes with every other body's at d's
 * state (the forward pass made at d->q) */
static double body_overlap(const khzModel *m, khzData *d, int b) {
  static khzPegPoly P, Q;
  khz_forwardPass(m, d, d->q, d->qd);
  double v = 0;
  for (int g = 0; g < m->ngeom; g++) {
    if (m->geom_body[g] != b || khz_pegPoly(m, d, g, &P) != 1) continue;
    for (int o = 0; o < m->ngeom; o++)
      if (m->geom_body[o] != b && khz_pegPoly(m, d, o, &Q) == 1) v += khz_pegOverlap(&P, &Q);
  }
  return v;
}

static long lifted; /* releases whose drop pose overlapped a body (--release) */

static void hold_unreleased(const khzModel *m, khzData *d, double t, double h, long *released) {
  int k = 0;
  long now = 0; /* the bodies released at this step */
  for (int b = 1; b < m->nbody; b++) {
    if (m->jnt_type[b] != KHZ_JOINT_FLOATING || k >= 62) continue;
    double turn = k * release_dt;
    int qa = m->jnt_qadr[b], va = m->jnt_dofadr[b];
    if (t < turn - 0.5 * h || !(*released & (1L << k))) {
      memcpy(d->q + qa, m->q0 + qa, 7 * sizeof(double));
      memset(d->qd + va, 0, 6 * sizeof(double));
      if (t < turn - 0.5 * h) {
        d->q[qa] += 3 + 0.5 * k;
      } else {
        *released |= 1L << k;
        now |= 1L << k;
      }
    }
    k++;
  }
  /* a pile that reached the drop height (seed 10 at h = 0.001: the ninth
   * body placed 8.7 mm into the seventh, 1.5e-5 m^3, which no contact model
   * is asked to resolve) gets the body from higher up: raised by 1 cm until
   * it overlaps nothing (the bodies not yet released are parked by then) */
  k = 0;
  for (int b = 1; b < m->nbody && now; b++) {
    if (m->jnt_type[b] != KHZ_JOINT_FLOATING || k >= 62) continue;
    if (now & (1L << k)) {
      double *z = d->q + m->jnt_qadr[b] + 2, z0 = *z;
      while (body_overlap(m, d, b) > 0 && *z < z0 + 1) *z += 0.01;
      if (*z > z0) {
        lifted++;
        fprintf(stderr, "# t %.4f: body %d released %.2f m higher (its drop pose overlapped a body)\n", t, b, *z - z0);
      }
    }
    k++;
  }
}

static int run(const char *path, double h, double seconds, int method, int model, runResult *r) {
  char err[512];
  khzScene sc;
  if (khz_loadScene(&sc, path, err, sizeof err)) {
    fprintf(stderr, "%s: %s\n", path, err);
    return -1;
  }
  khz_spec_setTimestep(sc.spec, h);
  if (lcp_gap >= 0) {
    sc.contact.lcp_gap = lcp_gap;
    khz_spec_setContact(sc.spec, &sc.contact);
  }
  khzModel *m = khz_compile(sc.spec, err, sizeof err);
  khz_deleteScene(&sc);
  if (!m) {
    fprintf(stderr, "%s: %s\n", path, err);
    return -1;
  }
  m->contact.peg_model = model;
  if (recover) m->contact.peg_recovery = 1;
  if (lp_one_point) m->contact.peg_lp_point = 1;
  khzData *d = khz_makeData(m, 0);
  d->contact_method = method;
  khzPegPoly *P = malloc(sizeof *P * (size_t)m->ngeom);
  long steps = (long)(seconds / h + 0.5);
  double *us = malloc(sizeof(double) * (size_t)steps), *ov = malloc(sizeof(double) * (size_t)steps);
  memset(r, 0, sizeof *r);
  long released = 0;
  lifted = 0;
  for (long s = 0; s < steps; s++) {
    if (release_dt > 0) hold_unreleased(m, d, s * h, h, &released);
    int dump = 0;
    for (int k = 0; k < ndump; k++) dump |= s == dump_step[k];
    if (dump) {
      fprintf(stderr, "h %.17g step %ld q", h, s);
      for (int i = 0; i < m->nq; i++) fprintf(stderr, " %.17g", d->q[i]);
      fprintf(stderr, "\nh %.17g step %ld qd", h, s);
      for (int i = 0; i < m->nv; i++) fprintf(stderr, " %.17g", d->qd[i]);
      fprintf(stderr, "\n");
    }
    double t0 = now_s();
    khz_step(m, d);
    us[s] = 1e6 * (now_s() - t0);
    if (method == KHZ_CONTACT_PEG) {
      const khzPegStats *st = khz_pegLastStats(d);
      r->steps_ix += st->ni + st->nx > 0;
      r->frictionless += st->frictionless;
      r->max_n = fmax(r->max_n, st->n);
      r->full += st->failed && st->full > 0;
      r->narrowed += st->narrowed > 0;
      r->added += st->added;
      r->violating += st->worst > 1e-10;
      r->halved += st->splits > 0;
      if (trace)
        fprintf(stderr, "h %g model %d step %ld: pairs %d groups %d members %d U %d I %d X %d n %d status %d failed %d full %d narrowed %d turn %g added %d speed %.3g spin %.3g passes %d worst %.3g splits %d cones %d frictionless %d stop %d split_stop %d blocks %d nblock %d dropped %d pivots %ld reinverts %ld unpolished %d recompliant %d us %.0f\n", h, model, s,
                st->contacts, st->groups, st->members, st->nu, st->ni, st->nx, st->n, st->status, st->failed, st->full,
                st->narrowed, st->turn, st->added, st->speed, st->spin, st->passes, st->worst, st->splits, st->cones,
                st->frictionless, st->stop, st->split_stop, st->blocks, st->nblock, st->dropped, st->pivots, st->reinverts,
                st->unpolished, st->recompliant, us[s]);
    }
    /* the fastest spin: |omega| times the body's bounding radius */
    for (int g = 0; g < m->ngeom; g++) {
      int b = m->geom_body[g];
      if (m->jnt_type[b] != KHZ_JOINT_FLOATING || khz_pegPoly(m, d, g, P) != 1) continue;
      const double *w = d->qd + m->jnt_dofadr[b] + 3;
      r->max_spin = fmax(r->max_spin, sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]) * P->radius);
    }
    int np = 0;
    for (int g = 0; g < m->ngeom; g++)
      if (khz_pegPoly(m, d, g, P + np) == 1) np++;
    double v = 0;
    for (int i = 0; i < np; i++)
      for (int j = i + 1; j < np; j++)
        if (P[i].body != P[j].body && !(khz_bodyStatic(m, P[i].body) && khz_bodyStatic(m, P[j].body)))
          v += khz_pegOverlap(P + i, P + j);
    r->max_overlap = fmax(r->max_overlap, v);
    ov[s] = v;
    r->over += v > 1e-12;
    if (per_step)
      fprintf(per_step, "%g,%s,%ld,%.6f,%.6g,%.1f\n", h, lcp_gap == KHZ_LCP_GAP_LPDEPTH ? "lpdepth" : "narrowphase", s,
              (s + 1) * h, v, us[s]);
    if (trace && v > 1e-12) fprintf(stderr, "h %g model %d step %ld: overlap %.3g m^3\n", h, model, s, v);
  }
  qsort(us, (size_t)steps, sizeof *us, cmp_double);
  r->median_us = us[steps / 2];
  qsort(ov, (size_t)steps, sizeof *ov, cmp_double);
  r->median_overlap = ov[steps / 2];
  free(ov);
  if (lifted) fprintf(stderr, "# h %g model %d: %ld releases raised above a body\n", h, model, lifted);
  r->fallbacks = (long)d->warning[KHZ_WARN_LCP];
  r->steps = steps;
  free(us);
  free(P);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  return 0;
}

/* the LCP path's counters move while an observer is set */
static int lcp_nmax; /* the largest LCP of a run */
static void no_observer(void *user, int n, const double *M, const double *q, const double *z, int status) {
  (void)user, (void)M, (void)q, (void)z, (void)status;
  if (n > lcp_nmax) lcp_nmax = n;
}

/* --lcp-gaps: the LCP path with each gap function of polytope pairs */
static int lcp_gaps(const char *scene, double seconds, const double *hs, int nh) {
  khz_lcpSetObserver(no_observer, NULL);
  if (release_dt > 0) printf("# one floating body released every %g s (at rest at its scene pose)\n", release_dt);
  printf("# %s, %g s, the LCP path (--method lcp); overlap = the sum over body pairs of the intersection volume after "
         "a step\n", scene, seconds);
  printf("| h (s) | gap | max overlap (m^3) | median overlap (m^3) | steps over 1e-12 m^3 | fallbacks | pairs whose LP failed |"
         " largest LCP | median us/step | wall s |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (int k = 0; k < nh; k++)
    for (int g = 0; g < 2; g++) {
      runResult r;
      lcp_gap = g ? KHZ_LCP_GAP_LPDEPTH : KHZ_LCP_GAP_NARROWPHASE;
      khz_lcpResetCounters();
      lcp_nmax = 0;
      double t0 = now_s();
      if (run(scene, hs[k], seconds, KHZ_CONTACT_LCP, KHZ_PEG_MODEL_PEG, &r)) return 1;
      printf("| %g | %s | %.3g | %.3g | %ld of %ld | %ld | %ld | %d | %.0f | %.1f |\n", hs[k], g ? "lpdepth" : "narrowphase",
             r.max_overlap, r.median_overlap, r.over, r.steps, r.fallbacks, khz_lcpGetCounters().lp_failures, lcp_nmax,
             r.median_us, now_s() - t0);
      fflush(stdout);
    }
  if (per_step) fclose(per_step);
  return 0;
}

int main(int argc, char **argv) {
  const char *scene = "scenes/peg/pour.yaml";
  double seconds = 2.0, hs[16] = {1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 2.5e-2};
  int nh = 6, lcp = 1, only = -1, check = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = atof(argv[++i]);
    } else if (!strcmp(argv[i], "--scene") && i + 1 < argc) {
      scene = argv[++i];
    } else if (!strcmp(argv[i], "--trace")) {
      trace = 1;
    } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
      i++;
      only = !strcmp(argv[i], "peg") ? KHZ_PEG_MODEL_PEG : !strcmp(argv[i], "standard") ? KHZ_PEG_MODEL_STANDARD
             : !strcmp(argv[i], "lpdepth")                ? KHZ_PEG_MODEL_LPDEPTH : -2;
      if (only == -2) {
        fprintf(stderr, "--only takes peg, standard or lpdepth\n");
        return 2;
      }
      lcp = 0;
    } else if (!strcmp(argv[i], "--release") && i + 1 < argc) {
      release_dt = atof(argv[++i]);
    } else if (!strcmp(argv[i], "--dump-step") && i + 1 < argc) {
      for (char *t = strtok(argv[++i], ","); t && ndump < 64; t = strtok(NULL, ",")) dump_step[ndump++] = atol(t);
    } else if (!strcmp(argv[i], "--recover")) {
      recover = 1;
    } else if (!strcmp(argv[i], "--lp-one-point")) {
      lp_one_point = 1;
    } else if (!strcmp(argv[i], "--lcp-gaps")) {
      lcp_gap = KHZ_LCP_GAP_NARROWPHASE;
    } else if (!strcmp(argv[i], "--per-step") && i + 1 < argc) {
      per_step = fopen(argv[++i], "w");
      if (!per_step) {
        perror(argv[i]);
        return 2;
      }
      fprintf(per_step, "h,gap,step,t,overlap_m3,us\n");
    } else if (!strcmp(argv[i], "--no-lcp")) {
      lcp = 0;
    } else if (!strcmp(argv[i], "--check")) {
      check = 1;
    } else if (!strcmp(argv[i], "--h") && i + 1 < argc) {
      nh = 0;
      for (char *t = strtok(argv[++i], ","); t && nh < 16; t = strtok(NULL, ",")) hs[nh++] = atof(t);
    } else {
      fprintf(stderr, "usage: %s [--seconds T] [--scene FILE] [--h H1,H2,...] [--no-lcp] [--trace] [--only MODEL] [--release DT] [--lp-one-point] [--recover] [--dump-step N] [--lcp-gaps [--per-step FILE]] [--check]\n", argv[0]);
      return 2;
    }
  }
  if (lcp_gap >= 0) return lcp_gaps(scene, seconds, hs, nh);
  if (release_dt > 0) printf("# one floating body released every %g s (at rest at its scene pose)\n", release_dt);
  printf("# %s, %g s; overlap = the largest sum over body pairs of the intersection volume after a step\n",
         scene, seconds);
  printf("| h (s) | PEG max overlap (m^3) | PEG fallbacks (gathering full) | PEG steps gathered again narrower | PEG constraints added at q+ | PEG steps left deeper than 1e-10 m |"
         " PEG steps solved without friction | PEG steps with I/X | PEG largest LCP | PEG median us/step |"
         " standard max overlap (m^3) | standard fallbacks | standard median us/step | LP-depth max overlap (m^3) | LP-depth fallbacks |"
         " LP-depth largest LCP | LP-depth fastest spin (m/s) | LP-depth median us/step | PEG steps halved | standard steps halved |%s\n",
         lcp ? " lcp path max overlap (m^3) | lcp path fallbacks |" : "");
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|%s\n", lcp ? "---|---|" : "");
  int bad = 0;
  for (int k = 0; k < nh; k++) {
    runResult p, s, g, l;
    memset(&p, 0, sizeof p), memset(&s, 0, sizeof s), memset(&g, 0, sizeof g);
    if ((only < 0 || only == KHZ_PEG_MODEL_PEG) && run(scene, hs[k], seconds, KHZ_CONTACT_PEG, KHZ_PEG_MODEL_PEG, &p)) return 1;
    if ((only < 0 || only == KHZ_PEG_MODEL_STANDARD) && run(scene, hs[k], seconds, KHZ_CONTACT_PEG, KHZ_PEG_MODEL_STANDARD, &s))
      return 1;
    if ((only < 0 || only == KHZ_PEG_MODEL_LPDEPTH) && run(scene, hs[k], seconds, KHZ_CONTACT_PEG, KHZ_PEG_MODEL_LPDEPTH, &g))
      return 1;
    printf("| %g |", hs[k]);
    if (only < 0 || only == KHZ_PEG_MODEL_PEG)
      printf(" %.3g | %ld of %ld (%ld) | %ld | %ld | %ld | %ld | %ld | %.0f | %.0f |", p.max_overlap, p.fallbacks, p.steps,
             p.full, p.narrowed, p.added, p.violating, p.frictionless, p.steps_ix, p.max_n, p.median_us);
    else
      printf(" - | - | - | - | - | - | - | - | - |");
    if (only < 0 || only == KHZ_PEG_MODEL_STANDARD)
      printf(" %.3g | %ld | %.0f |", s.max_overlap, s.fallbacks, s.median_us);
    else
      printf(" - | - | - |");
    if (only < 0 || only == KHZ_PEG_MODEL_LPDEPTH)
      printf(" %.3g | %ld | %.0f | %.2f | %.0f |", g.max_overlap, g.fallbacks, g.max_n, g.max_spin, g.median_us);
    else
      printf(" - | - | - | - | - |");
    for (int i = 0; i < 2; i++) {
      int mdl = i ? KHZ_PEG_MODEL_STANDARD : KHZ_PEG_MODEL_PEG;
      if (only < 0 || only == mdl) printf(" %ld |", i ? s.halved : p.halved);
      else printf(" - |");
    }
    if (lcp) {
      if (run(scene, hs[k], seconds, KHZ_CONTACT_LCP, KHZ_PEG_MODEL_PEG, &l)) return 1;
      printf(" %.3g | %ld |", l.max_overlap, l.fallbacks);
    }
    printf("\n");
    fflush(stdout);
    if (only < 0 || only == KHZ_PEG_MODEL_PEG) bad |= p.max_overlap > 1e-12 || p.fallbacks > 0;
  }
  printf("# goal (PEG at most 1e-12 m^3 at every h, no fallback): %s\n",
         only >= 0 && only != KHZ_PEG_MODEL_PEG ? "not checked (PEG not run)" : bad ? "not met" : "met");
  return check && bad ? 1 : 0;
}
