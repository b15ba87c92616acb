/* lcp_figures.c — the figures of the LCP contact method (docs/lcp.md), next
 * to Stewart & Trinkle's ("An implicit time-stepping scheme for rigid body
 * dynamics with inelastic collisions and Coulomb friction", 1996, sec. 4):
 *
 *   rod     the spinning rod (scenes/validation/st_rod.yaml) started at the
 *           height from which free flight ends at the paper's first impact
 *           (0.383 s; the paper does not give the height): each end's first
 *           contact, the sliding after the second, rest; h = 1 ms.
 *   balls   the four balls (scenes/validation/st_four_balls.yaml), 8
 *           directions: landing, reaching the line, the largest LCP.
 *   table1  Table I: for h = 1e-2 .. 1e-4 the velocity error (integral of
 *           |v_h - v|_inf dt), the position error (sup |x_h - x|_inf) against
 *           h = 1e-5, the velocity variation, and the log-log slopes.
 *   solve   time per Lemke solve against the number of contacts: N balls
 *           resting apart on the table (N contacts, k = 4 and 8; k = 4 with the
 *           spin and rolling rows of torsional and rolling friction).
 *   stack   the 5-box stack (scenes/validation/stack.yaml) under LCP for
 *           10 s (LCP_FIGURES_STACK_SECONDS overrides it): fallbacks,
 *           Lemke's statuses, time per step, drift, sink.
 *
 *   warm    the warm start: the stack (LCP_FIGURES_STACK_SECONDS, 10 s)
 *           and the V3 pile's first LCP_FIGURES_V3_STEPS (300) steps, each
 *           run cold (khz_lcpSetWarmStart(0)) then warm in one process:
 *           LCPs, warm hits, Lemke calls, pivots, CPU time per step, the
 *           worst residual of a solved LCP, and how far the runs part.
 *
 *   pile    the V3 pile under LCP (LCP_FIGURES_V3_STEPS, 10,000 steps): every
 *           500 steps its kinetic energy, fallbacks, CPU time per step and
 *           its fastest body.
 *
 *   build/bench/lcp_figures [rod] [balls] [table1] [solve] [stack] [warm] [pile]   (all but pile by default)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "khz/khz.h"
#include "khz/load.h"
#include "lcp/lcp.h"
#include "lcp/lemke.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static khzModel *load(const char *path, int directions) {
  char err[512];
  khzModel *m = khz_loadModel(path, NULL, err, sizeof err);
  if (!m) {
    fprintf(stderr, "%s: %s\n", path, err);
    exit(1);
  }
  if (directions) m->contact.friction_directions = directions;
  m->stack_bytes += khz_lcpStackBytes(m); /* room for 8 directions */
  return m;
}

/* the largest LCP of a run */
static int lcp_nmax, lcp_count;
static void observe_size(void *user, int n, const double *M, const double *q, const double *z,
                         int st) {
  (void)user, (void)M, (void)q, (void)z, (void)st;
  lcp_count++;
  if (n > lcp_nmax) lcp_nmax = n;
}

/* ------------------------------------------------------------------ rod -- */

/* height of the lower end in free flight at t: the centre falls from z0, the
 * axis (elevation e0 at t = 0) turns at w */
static double rod_low_end(double z0, double e0, double w, double half, double rad, double g, double t) {
  return z0 - 0.5 * g * t * t - half * fabs(sin(e0 + w * t)) - rad;
}

static void rod(void) {
  khzModel *m = load("scenes/validation/st_rod.yaml", 0);
  khzData *d = khz_makeData(m, 0);
  d->contact_method = KHZ_CONTACT_LCP;
  int b = khz_name2body(m, "rod"), qa = m->jnt_qadr[b], dof = m->jnt_dofadr[b];
  const double half = 0.25, rad = 0.05, g = 9.81, w = 4, t_paper = 0.383;
  double e0 = asin(d->xrot[9 * b + 8]); /* the axis' elevation */
  /* z0 so that the lower end first reaches the table at t_paper */
  double z0 = 0.5 * g * t_paper * t_paper + half * fabs(sin(e0 + w * t_paper)) + rad;
  double t_free = -1;
  for (double t = 0; t < 1; t += 1e-6)
    if (rod_low_end(z0, e0, w, half, rad, g, t) <= 0) {
      t_free = t;
      break;
    }
  d->q[qa + 2] = z0;
  khz_kinematics(m, d);
  double t_end[2] = {-1, -1}, slide = -1, rest = -1, h = m->timestep;
  for (int s = 0; s < 1500; s++) {
    khz_step(m, d);
    const double *R = d->xrot + 9 * b, *xc = d->xcom + 3 * b;
    double wv[3];
    for (int k = 0; k < 3; k++) wv[k] = R[3 * k] * d->qd[dof + 3] + R[3 * k + 1] * d->qd[dof + 4] + R[3 * k + 2] * d->qd[dof + 5];
    int sliding = 0;
    for (int c = 0; c < d->ncontact; c++)
      for (int k = 0; k < d->contact[c].npoint; k++) {
        const khzContactPoint *p = d->cpoint + d->contact[c].point_adr + k;
        if (p->depth <= 0) continue;
        double r[3] = {p->pos[0] - xc[0], p->pos[1] - xc[1], p->pos[2] - xc[2]};
        int end = r[0] * R[2] + r[1] * R[5] + r[2] * R[8] > 0;
        if (t_end[end] < 0) t_end[end] = d->time - h;
        double vx = d->qd[dof] + wv[1] * r[2] - wv[2] * r[1], vy = d->qd[dof + 1] + wv[2] * r[0] - wv[0] * r[2];
        sliding |= hypot(vx, vy) > 1e-3;
      }
    if (sliding) slide = d->time;
    double speed = fmax(fmax(fabs(d->qd[dof]), fabs(d->qd[dof + 1])), fabs(d->qd[dof + 2]));
    speed = fmax(speed, sqrt(wv[0] * wv[0] + wv[1] * wv[1] + wv[2] * wv[2]) * (half + rad));
    if (speed > 1e-3) rest = -1;
    else if (rest < 0) rest = d->time;
  }
  double first = fmin(t_end[0], t_end[1]), second = fmax(t_end[0], t_end[1]);
  printf("# rod (scenes/validation/st_rod.yaml, h = %g s, start height %.4f m: free flight ends at %.4f s)\n",
         h, z0, t_free);
  printf("| event | paper (s) | khz lcp (s) | difference |\n|---|---|---|---|\n");
  printf("| first impact | 0.383 | %.4f | %+.2f %% |\n", first, 100 * (first / 0.383 - 1));
  printf("| other end lands | 0.548 | %.4f | %+.2f %% |\n", second, 100 * (second / 0.548 - 1));
  printf("| sliding after it | 0.02 | %.4f | %+.2f %% |\n", slide - second, 100 * ((slide - second) / 0.02 - 1));
  printf("| at rest from | (then at rest) | %.4f | |\n", rest);
  printf("LCP fallbacks: %d\n\n", d->warning[KHZ_WARN_LCP]);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* ---------------------------------------------------------------- balls -- */

static void balls(void) {
  khzModel *m = load("scenes/validation/st_four_balls.yaml", 8);
  khzData *d = khz_makeData(m, 0);
  d->contact_method = KHZ_CONTACT_LCP;
  int thrown = khz_name2body(m, "ball1"), maxc = 0;
  double land = -1, hit = -1, h = m->timestep;
  lcp_nmax = lcp_count = 0;
  khz_lcpSetObserver(observe_size, NULL);
  double t0 = now_s();
  for (int s = 0; s < 1500; s++) {
    khz_step(m, d);
    int nc = 0;
    for (int c = 0; c < d->ncontact; c++) {
      const khzContact *ct = d->contact + c;
      nc += ct->npoint > 0;
      if (ct->body[0] != thrown && ct->body[1] != thrown) continue;
      int other = ct->body[0] ^ ct->body[1] ^ thrown;
      if (other == 0 && land < 0) land = d->time - h;
      if (other != 0 && hit < 0) hit = d->time - h;
    }
    if (nc > maxc) maxc = nc;
  }
  double wall = now_s() - t0;
  khz_lcpSetObserver(NULL, NULL);
  printf("# four balls (scenes/validation/st_four_balls.yaml, h = %g s, 8 friction directions)\n", h);
  printf("| event | paper | khz lcp |\n|---|---|---|\n");
  printf("| thrown ball lands (s) | 0.42 | %.4f |\n", land);
  printf("| reaches the line (s) | 0.59 | %.4f |\n", hit);
  printf("| largest LCP | 70 x 70 (7 contacts) | %d x %d (%d contacts) |\n", lcp_nmax, lcp_nmax, lcp_nmax / 10);
  printf("%d LCPs in 1500 steps, %.1f us per step, LCP fallbacks %d\n\n", lcp_count, 1e6 * wall / 1500,
         d->warning[KHZ_WARN_LCP]);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* --------------------------------------------------------------- table1 -- */

/* Table I of the paper: errors of the four balls' solution at step h against
 * a finer "exact" one, over [0, T] (the paper does not state T; 1.5 s by
 * default, LCP_FIGURES_T1_END overrides it). The paper's measures: velocity
 * error = integral of |v_h(t) - v(t)|_inf dt, position error =
 * sup |x_h(t) - x(t)|_inf, velocity variation = sum |v_h(t+h) - v_h(t)|_inf
 * (24 velocities: per ball linear, then angular in the world frame; 12 centre
 * coordinates). Both solutions are compared at the coarse run's step ends. */

static double t1_end = 1.5;
/* the line's two gaps of 1e-5 m closed to the skin's depth (the balls of
 * the line resting against each other as the LCP rests contacts), so that
 * no length but h is left in the line's impact (LCP_FIGURES_T1_FINE) */
static int t1_closed;
/* the step grid shifted by this fraction of h (a first step of t1_offset h,
 * the last of (1 - t1_offset) h, the same end): every event, the line's
 * impact among them, at another phase of its step (table1_phase) */
static double t1_offset;

/* the 24 velocities (per ball: linear, angular in the world) and 12 positions */
static void ball_state(const khzModel *m, const khzData *d, double *v, double *x) {
  int n = 0;
  for (int b = 1; b < m->nbody; b++) {
    int dof = m->jnt_dofadr[b];
    const double *R = d->xrot + 9 * b;
    for (int k = 0; k < 3; k++) v[6 * n + k] = d->qd[dof + k];
    for (int k = 0; k < 3; k++)
      v[6 * n + 3 + k] = R[3 * k] * d->qd[dof + 3] + R[3 * k + 1] * d->qd[dof + 4] + R[3 * k + 2] * d->qd[dof + 5];
    for (int k = 0; k < 3; k++) x[3 * n + k] = d->xpos[3 * b + k];
    n++;
  }
}

/* runs the balls with step h to t1_end; the state after every step into v, x
 * (step 0: the start); the fallbacks counted in *fallbacks; ev[0] the end of
 * the step in which the thrown ball first touches the table, ev[1] the ball
 * of the line */
static int run_table1(khzModel *m, double h, double *v, double *x, int *fallbacks, double ev[2]) {
  khzData *d = khz_makeData(m, 0);
  d->contact_method = KHZ_CONTACT_LCP;
  if (t1_closed) {
    /* ball3 and ball4 against ball2 and ball3, KHZ_LCP_SKIN deep */
    int b2 = khz_name2body(m, "ball2");
    for (int i = 1; i <= 2; i++) {
      int b = b2 + i;
      d->q[m->jnt_qadr[b]] = d->q[m->jnt_qadr[b2]] + i * (0.2 - KHZ_LCP_SKIN);
    }
    khz_kinematics(m, d);
  }
  int steps = (int)(t1_end / h + 0.5), thrown = khz_name2body(m, "ball1");
  ev[0] = ev[1] = -1;
  ball_state(m, d, v, x);
  if (t1_offset > 0) khz_stepWith(m, d, t1_offset * h);
  for (int s = 1; s <= steps; s++) {
    khz_stepWith(m, d, t1_offset > 0 && s == steps ? (1 - t1_offset) * h : h);
    ball_state(m, d, v + 24 * s, x + 12 * s);
    for (int c = 0; c < d->ncontact; c++) {
      const khzContact *ct = d->contact + c;
      if (ct->body[0] != thrown && ct->body[1] != thrown) continue;
      int other = ct->body[0] ^ ct->body[1] ^ thrown;
      if (ev[other != 0] < 0) ev[other != 0] = s * h;
    }
  }
  *fallbacks = d->warning[KHZ_WARN_LCP];
  khz_deleteData(&d);
  return steps;
}

static double slope(const double *h, const double *e, int n) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int i = 0; i < n; i++) {
    double lx = log(h[i]), ly = log(e[i]);
    sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

/* one table: the rows hs[0..nh) against the reference href; tsplit splits
 * the velocity error at that time (before: flight, landing and rolling of
 * the thrown ball; after: the collision with the line and what follows),
 * and the part after it into the linear and the angular velocities; the
 * event times' errors (landing, the line) against the reference's */
static void table1_against(khzModel *m, double href, const double *hs, int nh, double tsplit,
                           const char *title) {
  int nref = (int)(t1_end / href + 0.5) + 1, fbref, fb;
  double *vr = malloc((size_t)nref * 24 * sizeof(double)), *xr = malloc((size_t)nref * 12 * sizeof(double));
  double *vh = malloc((size_t)nref * 24 * sizeof(double)), *xh = malloc((size_t)nref * 12 * sizeof(double));
  double evr[2], evh[2];
  run_table1(m, href, vr, xr, &fbref, evr);
  printf("# %s: four balls, 8 directions, t in [0, %g] s, reference h = %g (%d of %d steps fall back; "
         "lands %.6f s, meets the line %.6f s)\n",
         title, t1_end, href, fbref, nref - 1, evr[0], evr[1]);
  printf("| h (s) | velocity error | position error | velocity variation | velocity error t < %g | t >= %g | "
         "of it linear / angular | landing / line time error (s) | steps falling back |\n"
         "|---|---|---|---|---|---|---|---|---|\n",
         tsplit, tsplit);
  double ev[16], ex[16], eb[16], ea[16], el[16], ew[16], et[16], eland[16];
  for (int i = 0; i < nh; i++) {
    int ratio = (int)(hs[i] / href + 0.5);
    if (fabs(ratio * href - hs[i]) > 1e-9 * hs[i]) {
      printf("| %g | (not a multiple of the reference step) |\n", hs[i]);
      continue;
    }
    int n = run_table1(m, hs[i], vh, xh, &fb, evh) + 1;
    double verr = 0, verr_before = 0, xerr = 0, var = 0, lin = 0, ang = 0;
    for (int s = 0; s < n; s++) {
      double dv = 0, dx = 0, dd = 0, dl = 0, dw = 0;
      for (int k = 0; k < 24; k++) {
        double e = fabs(vh[24 * s + k] - vr[24 * (s * ratio) + k]);
        dv = fmax(dv, e);
        if (k % 6 < 3) dl = fmax(dl, e);
        else dw = fmax(dw, e);
      }
      for (int k = 0; k < 12; k++) dx = fmax(dx, fabs(xh[12 * s + k] - xr[12 * (s * ratio) + k]));
      if (s)
        for (int k = 0; k < 24; k++) dd = fmax(dd, fabs(vh[24 * s + k] - vh[24 * (s - 1) + k]));
      verr += (s ? hs[i] : 0) * dv, xerr = fmax(xerr, dx), var += dd;
      if (s && s * hs[i] < tsplit + 1e-12) verr_before += hs[i] * dv;
      else if (s) lin += hs[i] * dl, ang += hs[i] * dw;
    }
    ev[i] = verr, ex[i] = xerr, eb[i] = verr_before, ea[i] = verr - verr_before, el[i] = lin, ew[i] = ang;
    et[i] = fabs(evh[1] - evr[1]), eland[i] = fabs(evh[0] - evr[0]);
    printf("| %g | %.4g | %.4g | %.4g | %.4g | %.4g | %.4g / %.4g | %.3g / %.3g | %d |\n", hs[i], verr, xerr, var,
           verr_before, verr - verr_before, lin, ang, fabs(evh[0] - evr[0]), et[i], fb);
  }
  /* an event time's error is 0 when both runs find it in steps ending at the same time */
  int nz = 0;
  for (int i = 0; i < nh; i++) nz += eland[i] > 0 && et[i] > 0;
  printf("log-log slope (least squares over these h): velocity error %.2f, position error %.2f "
         "(first order: 1); velocity error before t = %g: %.2f, after: %.2f (linear %.2f, angular %.2f); "
         "event times: landing %.2f, the line %.2f\n\n",
         slope(hs, ev, nh), slope(hs, ex, nh), tsplit, slope(hs, eb, nh), slope(hs, ea, nh), slope(hs, el, nh),
         slope(hs, ew, nh), nz == nh ? slope(hs, eland, nh) : NAN, nz == nh ? slope(hs, et, nh) : NAN);
  free(vr), free(xr), free(vh), free(xh);
}

/* the events at 8 phases of the step: the step grid shifted by s h,
 * s = 0, 1/8 .. 7/8 (a first step of s h, the last of (1 - s) h; the same
 * scene, the same end); the spread over the phases of the final spins about
 * the vertical, of the other angular velocities and of the linear ones (the
 * largest over the balls), for h = 1e-2, 1e-3, 1e-4. (Before lcp21d the
 * line was moved by s v h instead, which also moved the impact in time by
 * up to h and the end state with it.) */
static void table1_phase(khzModel *m) {
  static const double hs[] = {1e-2, 1e-3, 1e-4};
  printf("# the events at 8 phases of the step (the step grid shifted by s h, s = 0 .. 7/8): spread of the "
         "velocities at t = %g s over the phases\n",
         t1_end);
  printf("| h (s) | spin about the vertical (rad/s) | other angular (rad/s) | linear (m/s) | steps falling back |\n"
         "|---|---|---|---|---|\n");
  for (int i = 0; i < 3; i++) {
    int n = (int)(t1_end / hs[i] + 0.5) + 1, fb_all = 0;
    double *v = malloc((size_t)n * 24 * sizeof(double)), *x = malloc((size_t)n * 12 * sizeof(double));
    double lo[24], hi[24], ev[2];
    for (int s = 0; s < 8; s++) {
      int fb;
      t1_offset = s / 8.0;
      int steps = run_table1(m, hs[i], v, x, &fb, ev);
      fb_all += fb;
      for (int k = 0; k < 24; k++) {
        double e = v[24 * steps + k];
        lo[k] = s ? fmin(lo[k], e) : e, hi[k] = s ? fmax(hi[k], e) : e;
      }
    }
    t1_offset = 0;
    double spin = 0, ang = 0, lin = 0;
    for (int k = 0; k < 24; k++) {
      double r = hi[k] - lo[k];
      if (k % 6 == 5) spin = fmax(spin, r);
      else if (k % 6 >= 3) ang = fmax(ang, r);
      else lin = fmax(lin, r);
    }
    printf("| %g | %.3g | %.3g | %.3g | %d |\n", hs[i], spin, ang, lin, fb_all);
    free(v), free(x);
  }
  printf("\n");
}

static void table1(void) {
  /* LCP_FIGURES_T1_SCENE: another scene of four balls (e.g. the line's
   * gaps changed), LCP_FIGURES_T1_REF: the fine table's reference step */
  const char *scene = getenv("LCP_FIGURES_T1_SCENE");
  khzModel *m = load(scene && *scene ? scene : "scenes/validation/st_four_balls.yaml", 8);
  /* the steps split at impacts (contact.lcp_split_impacts): first order through
   * them; LCP_FIGURES_T1_SPLIT=0 gives the paper's steps */
  const char *split = getenv("LCP_FIGURES_T1_SPLIT");
  m->contact.lcp_split_impacts = !(split && atoi(split) == 0);
  const char *te = getenv("LCP_FIGURES_T1_END");
  if (te && atof(te) > 0) t1_end = atof(te);
  if (m->max_substep > 0) printf("(the scene substeps at %g s: steps above it are split)\n", m->max_substep);
  /* the paper's definition: h = 0.02 .. 0.0025 against h = 0.00125 */
  static const double paper_h[] = {0.02, 0.01, 0.005, 0.0025};
  table1_against(m, 0.00125, paper_h, 4, 0.58, "Table I as the paper defines it");
  printf("paper (reference h = 1.25e-3): h 0.02 / 0.01 / 0.005 / 0.0025: velocity error 0.5050 / "
         "0.3523 / 0.1657 / 0.0700, position error 0.2505 / 0.2015 / 0.0838 / 0.0298, velocity variation "
         "19.40 / 19.17 / 19.17 / 19.09 (19.07 at 0.00125); slope of the velocity errors %.2f, position %.2f\n\n",
         slope(paper_h, (const double[]){0.5050, 0.3523, 0.1657, 0.0700}, 4),
         slope(paper_h, (const double[]){0.2505, 0.2015, 0.0838, 0.0298}, 4));
  /* the same h against a reference 25x finer than the finest of them */
  table1_against(m, 1e-4, paper_h, 4, 0.58, "the paper's h against a finer reference");
  /* smaller steps against a far finer reference (LCP_FIGURES_T1_FINE=1: slow) */
  const char *fine = getenv("LCP_FIGURES_T1_FINE"); /* 1: both tables, 2: the closed line's only */
  if (fine && atoi(fine)) {
    static const double hs[] = {1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4};
    const char *ref = getenv("LCP_FIGURES_T1_REF");
    double href = ref && atof(ref) > 0 ? atof(ref) : 1e-5;
    char title[96];
    snprintf(title, sizeof title, "h = 1e-2 .. 1e-4 against h = %g", href);
    if (atoi(fine) != 2) table1_against(m, href, hs, 7, 0.58, title);
    t1_closed = 1;
    snprintf(title, sizeof title, "the line closed to the skin, h = 1e-2 .. 1e-4 against h = %g", href);
    table1_against(m, href, hs, 7, 0.58, title);
    t1_closed = 0;
  }
  /* the impact's phase in the step (LCP_FIGURES_T1_PHASE=1) */
  const char *phase = getenv("LCP_FIGURES_T1_PHASE");
  if (phase && atoi(phase)) table1_phase(m);
  khz_deleteModel(&m);
}

/* ---------------------------------------------------------------- stack -- */

/* every Lemke attempt's status (the regularised retries included) */
static long stat_count[KHZ_LCP_NSTATUS + 1], stat_calls;
static int step_calls;
static void observe_status(void *user, int n, const double *M, const double *q, const double *z, int st) {
  (void)user, (void)n, (void)M, (void)q, (void)z;
  stat_count[st >= 0 && st < KHZ_LCP_NSTATUS ? st : KHZ_LCP_NSTATUS]++;
  stat_calls++, step_calls++;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void stack(void) {
  const char *env = getenv("LCP_FIGURES_STACK_SECONDS"); /* default 10 s */
  const double seconds = env ? atof(env) : 10;
  khzModel *m = load("scenes/validation/stack.yaml", 0);
  khzData *d = khz_makeData(m, 0);
  d->contact_method = KHZ_CONTACT_LCP;
  int steps = (int)(seconds / m->timestep + 0.5), first_ok = 0;
  double *x0 = malloc(3 * (size_t)m->nbody * sizeof(double)), *us = malloc((size_t)steps * sizeof(double));
  memcpy(x0, d->xpos, 3 * (size_t)m->nbody * sizeof(double));
  memset(stat_count, 0, sizeof stat_count), stat_calls = 0;
  khz_lcpSetObserver(observe_status, NULL);
  double t0 = now_s(), qd_late = 0;
  for (int s = 0; s < steps; s++) {
    step_calls = 0;
    long solved0 = stat_count[KHZ_LCP_SOLVED];
    double a = now_s();
    khz_step(m, d);
    us[s] = 1e6 * (now_s() - a);
    first_ok += step_calls > 0 && stat_count[KHZ_LCP_SOLVED] > solved0 && step_calls == 1;
    if (s > steps / 2) {
      double v = 0;
      for (int k = 0; k < m->nv; k++) v = fmax(v, fabs(d->qd[k]));
      qd_late = fmax(qd_late, v);
    }
  }
  double wall = now_s() - t0;
  khz_lcpSetObserver(NULL, NULL);
  double drift = 0, sink = 0;
  for (int i = 1; i < m->nbody; i++) {
    const double *x = d->xpos + 3 * i, *a = x0 + 3 * i;
    drift = fmax(drift, hypot(x[0] - a[0], x[1] - a[1]));
    sink = fmax(sink, a[2] - x[2]);
  }
  qsort(us, (size_t)steps, sizeof(double), cmp_double);
  printf("# 5-box stack (scenes/validation/stack.yaml) under LCP, %g s, h = %g s, k = %d\n", seconds,
         m->timestep, khz_lcpDirections(m));
  printf("| figure | value |\n|---|---|\n");
  printf("| steps falling back to penalty | %d of %d |\n", d->warning[KHZ_WARN_LCP], steps);
  printf("| steps solved by the first Lemke call | %d |\n", first_ok);
  printf("| Lemke calls: solved / budget / ray / toobig / inaccurate | %ld / %ld / %ld / %ld / %ld |\n",
         stat_count[KHZ_LCP_SOLVED], stat_count[KHZ_LCP_BUDGET], stat_count[KHZ_LCP_RAY],
         stat_count[KHZ_LCP_TOOBIG], stat_count[KHZ_LCP_INACCURATE]);
  printf("| us per step: median / p99 / max | %.1f / %.1f / %.1f |\n", us[steps / 2], us[(int)(0.99 * steps)],
         us[steps - 1]);
  printf("| wall time (s) | %.2f |\n", wall);
  printf("| max horizontal drift / sink of a box (m) | %.3g / %.3g |\n", drift, sink);
  printf("| largest |qd| in the second half | %.3g |\n\n", qd_late);
  free(x0), free(us);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* ----------------------------------------------------------------- warm -- */

static double worst_residual;
static void observe_residual(void *user, int n, const double *M, const double *q, const double *z, int st) {
  (void)user;
  if (st == KHZ_LCP_SOLVED) {
    /* on q scaled as Lemke scales it (max |q| at least 1e-3) */
    double qmax = 0;
    for (int i = 0; i < n; i++) qmax = fmax(qmax, fabs(q[i]));
    double r = khz_lcpResidual(n, M, q, z) / (qmax < 1e-3 && qmax > 0 ? qmax / 1e-3 : 1);
    worst_residual = fmax(worst_residual, r);
  }
}

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* steps the scene under LCP, warm start on or off; its final q into qend */
static void warm_run(const char *path, int steps, int warm, double *qend) {
  khzModel *m = load(path, 0);
  khzData *d = khz_makeData(m, 0);
  d->contact_method = KHZ_CONTACT_LCP;
  khz_lcpSetWarmStart(warm);
  khz_lcpResetCounters();
  worst_residual = 0;
  khz_lcpSetObserver(observe_residual, NULL);
  double t0 = cpu_s();
  for (int s = 0; s < steps; s++) khz_step(m, d);
  double cpu = cpu_s() - t0;
  khz_lcpSetObserver(NULL, NULL);
  khz_lcpSetWarmStart(1);
  khzLcpCounters c = khz_lcpGetCounters();
  printf("| %s | %s | %ld (%.1f rows) | %ld / %ld | %ld | %ld (%.2f per LCP) | %.3f | %.2g | %d |\n", path,
         warm ? "warm" : "cold", c.solves, c.solves ? (double)c.rows / c.solves : 0, c.warm_hits, c.warm_tries,
         c.lemke_calls, c.pivots, c.solves ? (double)c.pivots / c.solves : 0, 1e3 * cpu / steps, worst_residual,
         d->warning[KHZ_WARN_LCP]);
  memcpy(qend, d->q, (size_t)m->nq * sizeof(double));
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

static void warm_figures(void) {
  const char *env = getenv("LCP_FIGURES_STACK_SECONDS"), *v3 = getenv("LCP_FIGURES_V3_STEPS");
  struct {
    const char *path;
    int steps;
  } runs[] = {{"scenes/validation/stack.yaml", (int)((env ? atof(env) : 10) * 1000 + 0.5)},
              {"scenes/validation/v3_pile.yaml", v3 ? atoi(v3) : 300}};
  printf("# warm start: each scene cold (every LCP by Lemke from scratch), then warm (the last step's "
         "basis tried first); CPU time, this process\n");
  printf("| scene (steps) | start | LCPs solved (mean size) | warm hits / tries | Lemke calls | pivots | "
         "CPU ms per step | worst residual (scaled q) | steps falling back |\n|---|---|---|---|---|---|---|---|---|\n");
  for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
    khzModel *m = load(runs[r].path, 0);
    int nq = m->nq;
    khz_deleteModel(&m);
    double *qc = malloc((size_t)nq * sizeof(double)), *qw = malloc((size_t)nq * sizeof(double));
    warm_run(runs[r].path, runs[r].steps, 0, qc);
    warm_run(runs[r].path, runs[r].steps, 1, qw);
    double dq = 0;
    for (int i = 0; i < nq; i++) dq = fmax(dq, fabs(qc[i] - qw[i]));
    printf("| (%d steps: final q warm - cold, max abs: %.3g) |\n", runs[r].steps, dq);
    free(qc), free(qw);
  }
  printf("\n");
}

/* ----------------------------------------------------------------- pile -- */

/* the V3 pile (scenes/validation/v3_pile.yaml: rolling and torsional
 * friction 0.002 m) under LCP for LCP_FIGURES_V3_STEPS (10,000) steps:
 * every 500 steps the kinetic energy, the steps fallen back so far, the CPU
 * time per step over those 500, and the body of the largest speed (linear
 * speed plus angular speed times a 0.1 m lever) */
static void pile(void) {
  const char *env = getenv("LCP_FIGURES_V3_STEPS");
  int steps = env && atoi(env) > 0 ? atoi(env) : 10000;
  khzModel *m = load("scenes/validation/v3_pile.yaml", 0);
  khzData *d = khz_makeData(m, 0);
  d->contact_method = KHZ_CONTACT_LCP;
  printf("# V3 pile under LCP (rolling friction %g m, torsional %g m, k = %d), h = %g s\n", m->contact.rolling,
         m->contact.torsional, khz_lcpDirections(m), m->timestep);
  printf("| t (s) | kinetic energy (J) | steps fallen back | CPU ms per step | fastest body: speed (m/s), spin (rad/s) |\n"
         "|---|---|---|---|---|\n");
  double t0 = cpu_s();
  for (int s = 1; s <= steps; s++) {
    khz_step(m, d);
    if (s % 500) continue;
    double ke, best = -1, bv = 0, bw = 0, t1 = cpu_s();
    int bb = -1;
    khz_energy(m, d, &ke, NULL);
    for (int b = 1; b < m->nbody; b++) {
      if (m->jnt_type[b] != KHZ_JOINT_FLOATING) continue;
      const double *qd = d->qd + m->jnt_dofadr[b];
      double v = sqrt(qd[0] * qd[0] + qd[1] * qd[1] + qd[2] * qd[2]), w = sqrt(qd[3] * qd[3] + qd[4] * qd[4] + qd[5] * qd[5]);
      if (v + 0.1 * w > best) best = v + 0.1 * w, bb = b, bv = v, bw = w;
    }
    printf("| %.1f | %.3g | %d | %.2f | %s: %.3g, %.3g |\n", d->time, ke, d->warning[KHZ_WARN_LCP],
           1e3 * (t1 - t0) / 500, bb > 0 ? m->body_name[bb] : "-", bv, bw);
    fflush(stdout);
    t0 = cpu_s();
  }
  printf("\n");
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* ---------------------------------------------------------------- solve -- */

/* the LCP of the last step, captured to be solved again under the clock */
static int cap_n;
static double *cap_M, *cap_q;
static void observe_capture(void *user, int n, const double *M, const double *q, const double *z, int st) {
  (void)user, (void)z;
  if (st != KHZ_LCP_SOLVED) return;
  cap_n = n;
  memcpy(cap_M, M, (size_t)n * n * sizeof(double));
  memcpy(cap_q, q, (size_t)n * sizeof(double));
}

static void solve_timing(void) {
  printf("# time per Lemke solve: N balls in a line on the table, each against the next (one contact "
         "island of 2 N - 1 contacts), sliding at 0.3 m/s; the LCP of step 20 solved again and again by Lemke with "
         "the stepper's tie and re-inversion settings\n");
  printf("| balls | contacts | k | spin and rolling rows | LCP size | pivots | re-inversions | CPU us per solve | "
         "steps falling back |\n|---|---|---|---|---|---|---|---|---|\n");
  /* the largest: 63 one-point pairs with k = 8 (10 rows each) or k = 4 and
   * the extra rows (14) */
  cap_M = malloc(900 * 900 * sizeof(double)), cap_q = malloc(900 * sizeof(double));
  static const int counts[] = {1, 2, 4, 8, 16, 32};
  /* k = 4, 8 without, then k = 4 with the spin and rolling rows (the
   * scene's torsional and rolling friction) */
  for (int run = 0; run < 3; run++)
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      int N = counts[c], dir = run == 1 ? 8 : 4, extra = run == 2;
      char *yaml = malloc(200 + 120 * (size_t)N), *p = yaml;
      p += sprintf(p, "khz_scene: 1\nrate_hz: 1000\nground: {height: 0}\n"
                      "contact: {method: lcp, mu: 0.5, max_pairs: %d, friction_directions: %d%s}\nobjects:\n",
                   2 * N + 4, dir, extra ? ", torsional_friction: 0.002, rolling_friction: 0.002" : "");
      /* resting KHZ_LCP_SKIN deep in the table and in each other: one island
       * (balls apart are an island each, and the LCP one ball's) */
      for (int i = 0; i < N; i++)
        p += sprintf(p, "  - {name: b%d, shape: sphere, size: [0.1], mass: 1, pos: [%.17g, 0, %.17g], vel: [0.3, 0, 0]}\n",
                     i, i * (0.2 - KHZ_LCP_SKIN), 0.1 - KHZ_LCP_SKIN);
      khzScene sc;
      char err[512];
      if (khz_loadSceneString(&sc, yaml, "balls", ".", err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(1);
      }
      free(yaml);
      khzModel *m = khz_compile(sc.spec, err, sizeof err);
      khz_deleteScene(&sc);
      khzData *d = khz_makeData(m, 0);
      cap_n = 0;
      khz_lcpSetObserver(observe_capture, NULL);
      for (int s = 0; s < 20; s++) khz_step(m, d);
      khz_lcpSetObserver(NULL, NULL);
      int n = cap_n;
      khzLemke lk;
      void *mem = malloc(khz_lemkeBytes(n));
      khz_lemkeInit(&lk, n, mem);
      khz_lcpLemkeSettings(&lk); /* as the stepper's first attempt */
      double *z = malloc((size_t)n * sizeof(double)), *w = malloc((size_t)n * sizeof(double));
      int reps = 0, st;
      double t0 = cpu_s(), t;
      do {
        st = khz_lemke(&lk, n, cap_M, cap_q, z, w, 0);
        reps++;
      } while ((t = cpu_s() - t0) < 0.05);
      char note[64] = "";
      if (st != KHZ_LCP_SOLVED) snprintf(note, sizeof note, " (status %d, residual %.2g)", st, lk.residual);
      printf("| %d | %d | %d | %s | %d | %d%s | %d | %.2f | %d |\n", N, d->ncontact, dir, extra ? "yes" : "no", n,
             lk.pivots, note, lk.reinverts, 1e6 * t / reps, d->warning[KHZ_WARN_LCP]);
      free(mem), free(z), free(w);
      khz_deleteData(&d);
      khz_deleteModel(&m);
    }
  printf("\n");
  free(cap_M), free(cap_q);
}

int main(int argc, char **argv) {
  int all = argc < 2;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "rod") && strcmp(argv[i], "balls") && strcmp(argv[i], "table1") &&
        strcmp(argv[i], "solve") && strcmp(argv[i], "stack") && strcmp(argv[i], "warm") && strcmp(argv[i], "pile")) {
      fprintf(stderr, "lcp_figures: unknown section '%s' (rod, balls, table1, solve, stack, warm, pile)\n", argv[i]);
      return 2;
    }
  for (int s = 0; s < 7; s++) {
    static const char *const names[] = {"rod", "balls", "table1", "solve", "stack", "warm", "pile"};
    int want = all && s < 6; /* the pile only when named */
    for (int i = 1; i < argc; i++) want |= !strcmp(argv[i], names[s]);
    if (!want) continue;
    if (s == 0) rod();
    if (s == 1) balls();
    if (s == 2) table1();
    if (s == 3) solve_timing();
    if (s == 4) stack();
    if (s == 5) warm_figures();
    if (s == 6) pile();
  }
  return 0;
}
