/* experiments.c — the validation experiments of the contact issue, driven by a
 * scene's `experiment:` block and run by `khz-sim run SCENE [--method ...]`.
 * Each prints its figures as one JSON object (docs/validation.md):
 *
 *   block_penetration  Drumwright Figs. 7-9 (V1): a block starts randomly
 *                      oriented and interpenetrating a plane; mean / max
 *                      penetration and kinetic energy over the last steps.
 *   block_forces       Figs. 10-12 (V2): downward forces uniform in
 *                      [force_min, force_max] at random points of the block's
 *                      top face, on for on_steps, off for off_steps, `cycles`
 *                      times; mean penetration and kinetic energy while off,
 *                      and the steps off the ground while off (lift-off).
 *   pile               Fig. 13 (V3): bodies dropped into a container must come
 *                      to rest (kinetic energy below rest_energy) with none
 *                      escaping and penetration below a bound.
 *   robot              V4: a robot on the ground with a PD controller holding
 *                      its initial posture; µs per step and contact figures.
 *   stack              a stack of blocks stands still for `seconds`.
 *   arm_push           V4/issue 21: a fixed-base arm with gravity-compensated
 *                      joint PD tracks a scripted trajectory (one joint swept
 *                      by `sweep_angle` with a cosine profile) whose tool
 *                      pushes a box (`body`) over the floor; the box's path,
 *                      µs per step, tracking error, the box's tilt and height.
 *   st_rod             Stewart & Trinkle's spinning rod (1996, sec. 4): the time
 *                      each end lands, when the rod stops sliding and rests.
 *   st_balls           Stewart & Trinkle's four balls (1996, sec. 4): the time of
 *                      every contact event, the final velocities.
 *   The st_ kinds print the paper's values next to khz's, for the contact
 *   methods khz has now and the LCP path to come.
 */
#include "experiments.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* xorshift64*: a small seeded generator, the same on every machine */
typedef struct {
  unsigned long long s;
} experimentRng;

static double rng_uniform(experimentRng *r, double lo, double hi) {
  r->s ^= r->s >> 12, r->s ^= r->s << 25, r->s ^= r->s >> 27;
  unsigned long long x = r->s * 2685821657736338717ull;
  return lo + (hi - lo) * ((double)(x >> 11) / 9007199254740992.0);
}

double khz_experiment_param(const khzExperiment *e, const char *name, double fallback) {
  for (int k = 0; k < e->nparam; k++)
    if (strcmp(e->param_name[k], name) == 0) return e->param[k];
  return fallback;
}

/* deepest penetration over all pairs after the last step */
static double max_penetration(const khzData *d) {
  double pen = 0;
  for (int k = 0; k < d->ncontact; k++) pen = fmax(pen, d->cpoint[d->contact[k].deepest].depth);
  return pen;
}

static double kinetic(const khzModel *m, khzData *d) {
  double ke;
  khz_energy(m, d, &ke, NULL);
  return ke;
}

/* the floating joint of a named body: its q address, or -1 */
static int floating_qadr(const khzModel *m, const char *body) {
  int b = khz_name2body(m, body);
  if (b < 1 || m->jnt_type[b] != KHZ_JOINT_FLOATING) return -1;
  return m->jnt_qadr[b];
}

/* the first box geom of a body: its half-extents */
static const double *box_size(const khzModel *m, int body) {
  for (int g = 0; g < m->ngeom; g++)
    if (m->geom_body[g] == body && m->geom_type[g] == KHZ_GEOM_BOX && !m->geom_visual[g])
      return m->geom_size + 3 * g;
  return NULL;
}

static void print_common(FILE *out, const khzModel *m, const khzData *d, const char *kind,
                         int steps, double wall) {
  fprintf(out, "  \"experiment\": \"%s\",\n  \"method\": \"%s\",\n", kind,
          khz_contactMethodName((khzContactMethod)d->contact_method));
  fprintf(out, "  \"steps\": %d,\n  \"dt\": %.17g,\n  \"us_per_step\": %.3f,\n", steps, m->timestep,
          steps ? 1e6 * wall / steps : 0.0);
  fprintf(out, "  \"warnings\": {");
  for (int w = 0; w < KHZ_NWARNING; w++)
    fprintf(out, "%s\"%s\": %d", w ? ", " : "", khz_warningName(w), d->warning[w]);
  fprintf(out, "},\n");
}

/* V1: random orientation, lowest corner `initial_penetration` below z = 0 */
static int run_block_penetration(const khzModel *m, khzData *d, const khzExperiment *e, FILE *out,
                                 char *err, size_t errsz) {
  int qa = floating_qadr(m, e->body), b = khz_name2body(m, e->body);
  const double *half = b > 0 ? box_size(m, b) : NULL;
  if (qa < 0 || !half) {
    snprintf(err, errsz, "experiment: body '%s' must be a floating body with a box geom", e->body);
    return -1;
  }
  experimentRng rng = {(unsigned long long)khz_experiment_param(e, "seed", 1) * 0x9E3779B97F4A7C15ull + 1};
  int steps = (int)khz_experiment_param(e, "steps", 3000);
  int window = (int)khz_experiment_param(e, "window", 2000);
  double pen0 = khz_experiment_param(e, "initial_penetration", 0.1);

  /* a random unit quaternion (uniform on the sphere of rotations) */
  double qu[4], n2 = 0;
  do {
    n2 = 0;
    for (int k = 0; k < 4; k++) qu[k] = rng_uniform(&rng, -1, 1), n2 += qu[k] * qu[k];
  } while (n2 > 1 || n2 < 1e-6);
  for (int k = 0; k < 4; k++) qu[k] /= sqrt(n2);
  double *q = d->q + qa;
  memcpy(q + 3, qu, sizeof qu);
  q[0] = q[1] = 0, q[2] = 0;
  khz_kinematics(m, d);
  double zmin = INFINITY;
  for (int v = 0; v < 8; v++) {
    double l[3] = {(v & 1 ? 1 : -1) * half[0], (v & 2 ? 1 : -1) * half[1], (v & 4 ? 1 : -1) * half[2]};
    const double *R = d->xrot + 9 * b;
    zmin = fmin(zmin, d->xpos[3 * b + 2] + R[6] * l[0] + R[7] * l[1] + R[8] * l[2]);
  }
  q[2] = -zmin - pen0;
  khz_resetStick(m, d);

  double sum_pen = 0, max_pen = 0, sum_ke = 0, max_ke = 0, t0 = now_s();
  for (int s = 0; s < steps; s++) {
    khz_step(m, d);
    if (s >= steps - window) {
      double pen = max_penetration(d), ke = kinetic(m, d);
      sum_pen += pen, max_pen = fmax(max_pen, pen), sum_ke += ke, max_ke = fmax(max_ke, ke);
    }
  }
  double wall = now_s() - t0;
  fprintf(out, "{\n");
  print_common(out, m, d, "block_penetration", steps, wall);
  fprintf(out, "  \"window_steps\": %d,\n  \"mean_penetration\": %.6g,\n  \"max_penetration\": %.6g,\n",
          window, sum_pen / window, max_pen);
  fprintf(out, "  \"mean_kinetic_energy\": %.6g,\n  \"max_kinetic_energy\": %.6g\n}\n", sum_ke / window,
          max_ke);
  return 0;
}

/* V2: forces at random points of the top face, on/off cycles */
static int run_block_forces(const khzModel *m, khzData *d, const khzExperiment *e, FILE *out,
                            char *err, size_t errsz) {
  int b = khz_name2body(m, e->body);
  const double *half = b > 0 ? box_size(m, b) : NULL;
  if (floating_qadr(m, e->body) < 0 || !half) {
    snprintf(err, errsz, "experiment: body '%s' must be a floating body with a box geom", e->body);
    return -1;
  }
  experimentRng rng = {(unsigned long long)khz_experiment_param(e, "seed", 1) * 0x9E3779B97F4A7C15ull + 1};
  int settle = (int)khz_experiment_param(e, "settle_steps", 1000);
  int on = (int)khz_experiment_param(e, "on_steps", 500), off = (int)khz_experiment_param(e, "off_steps", 500);
  int cycles = (int)khz_experiment_param(e, "cycles", 10);
  double fmin_ = khz_experiment_param(e, "force_min", 10), fmax_ = khz_experiment_param(e, "force_max", 100);

  double t0 = now_s();
  for (int s = 0; s < settle; s++) khz_step(m, d);
  double sum_pen_off = 0, sum_ke_off = 0, max_pen_off = 0, sum_pen_on = 0, max_pen_on = 0;
  int n_off = 0, n_on = 0, airborne = 0;
  for (int c = 0; c < cycles; c++) {
    double F = rng_uniform(&rng, fmin_, fmax_);
    double local[3] = {rng_uniform(&rng, -half[0], half[0]), rng_uniform(&rng, -half[1], half[1]), half[2]};
    for (int s = 0; s < on + off; s++) {
      double *w = d->xfrc + 6 * b;
      memset(w, 0, 6 * sizeof(double));
      if (s < on) {
        /* world force -F z at the top-face point: a wrench about the com */
        const double *R = d->xrot + 9 * b, *xc = d->xcom + 3 * b, *xp = d->xpos + 3 * b;
        double p[3], r[3];
        for (int k = 0; k < 3; k++) p[k] = xp[k] + R[3 * k] * local[0] + R[3 * k + 1] * local[1] + R[3 * k + 2] * local[2];
        for (int k = 0; k < 3; k++) r[k] = p[k] - xc[k];
        w[2] = -F;
        w[3] = r[1] * w[2], w[4] = -r[0] * w[2], w[5] = 0;
      }
      khz_step(m, d);
      double pen = max_penetration(d);
      if (s < on) {
        sum_pen_on += pen, max_pen_on = fmax(max_pen_on, pen), n_on++;
      } else {
        double ke = kinetic(m, d);
        sum_pen_off += pen, max_pen_off = fmax(max_pen_off, pen), sum_ke_off += ke, n_off++;
        airborne += pen <= 0; /* the block popped off the ground */
      }
    }
  }
  memset(d->xfrc + 6 * b, 0, 6 * sizeof(double));
  double wall = now_s() - t0;
  int steps = settle + cycles * (on + off);
  fprintf(out, "{\n");
  print_common(out, m, d, "block_forces", steps, wall);
  fprintf(out, "  \"unforced\": {\"mean_penetration\": %.6g, \"max_penetration\": %.6g, \"mean_kinetic_energy\": %.6g, \"airborne_steps\": %d},\n",
          sum_pen_off / n_off, max_pen_off, sum_ke_off / n_off, airborne);
  fprintf(out, "  \"forced\": {\"mean_penetration\": %.6g, \"max_penetration\": %.6g}\n}\n",
          sum_pen_on / n_on, max_pen_on);
  return 0;
}

/* V3: a pile of bodies in a container comes to rest */
static int run_pile(const khzModel *m, khzData *d, const khzExperiment *e, FILE *out, char *err,
                    size_t errsz) {
  (void)err, (void)errsz;
  double seconds = khz_experiment_param(e, "seconds", 10);
  double rest = khz_experiment_param(e, "rest_energy", 1e-3);
  double bx = khz_experiment_param(e, "container_x", 1), by = khz_experiment_param(e, "container_y", 1);
  double bz = khz_experiment_param(e, "container_z", 3);
  int steps = (int)(seconds / m->timestep + 0.5), rest_step = -1, nfloat = 0;
  double max_pen_last = 0, max_pen = 0, ke_last = 0, t0 = now_s();
  int last = (int)(1.0 / m->timestep + 0.5);
  for (int s = 0; s < steps; s++) {
    khz_step(m, d);
    double pen = max_penetration(d), ke = kinetic(m, d);
    max_pen = fmax(max_pen, pen);
    if (s >= steps - last) max_pen_last = fmax(max_pen_last, pen), ke_last += ke / last;
    if (ke < rest && rest_step < 0 && s > 100) rest_step = s;
    if (ke >= rest) rest_step = -1;
  }
  double wall = now_s() - t0, ke_end = kinetic(m, d);
  /* bodies outside the container: com beyond its half-extents (x, y) or height */
  int escaped = 0;
  for (int i = 1; i < m->nbody; i++) {
    if (m->jnt_type[i] != KHZ_JOINT_FLOATING) continue;
    nfloat++;
    const double *x = d->xcom + 3 * i;
    escaped += fabs(x[0]) > bx || fabs(x[1]) > by || x[2] < -0.01 || x[2] > bz;
  }
  fprintf(out, "{\n");
  print_common(out, m, d, "pile", steps, wall);
  fprintf(out, "  \"bodies\": %d,\n  \"contacts_at_end\": %d,\n  \"kinetic_energy_end\": %.6g,\n", nfloat,
          d->ncontact, ke_end);
  fprintf(out, "  \"mean_kinetic_energy_last_second\": %.6g,\n", ke_last);
  fprintf(out, "  \"rest_time_s\": %s%.4g%s,\n", rest_step < 0 ? "null, \"rest_time_note\": \"" : "",
          rest_step < 0 ? 0.0 : (rest_step + 1) * m->timestep, rest_step < 0 ? " not at rest\"" : "");
  fprintf(out, "  \"escaped\": %d,\n  \"max_penetration\": %.6g,\n  \"max_penetration_last_second\": %.6g\n}\n",
          escaped, max_pen, max_pen_last);
  return 0;
}

/* V4: a robot holding its initial posture with joint PD control */
static int run_robot(const khzModel *m, khzData *d, const khzExperiment *e, FILE *out, char *err,
                     size_t errsz) {
  (void)err, (void)errsz;
  /* joint PD posture gains: stiffness from the joint's effort limit (the limit
   * torque at `hold_angle` of error), damping critical for the joint's own
   * effective inertia but bounded by the explicit-integration limit 0.5 meff / h
   * (a standing robot's ankles carry the whole body, so inertia-based
   * stiffness alone would be far too soft) */
  double seconds = khz_experiment_param(e, "seconds", 2);
  double hold = khz_experiment_param(e, "hold_angle", 0.1);
  double wheel_speed = khz_experiment_param(e, "wheel_speed", 0);
  int steps = (int)(seconds / m->timestep + 0.5);
  if (steps < 1) steps = 1;
  double *times = calloc((size_t)steps, sizeof(double));
  if (!times) return -1;
  int root = -1;
  for (int i = 1; i < m->nbody && root < 0; i++)
    if (m->jnt_type[i] == KHZ_JOINT_FLOATING) root = i;
  double z0 = root > 0 ? d->xpos[3 * root + 2] : 0, max_points = 0;
  for (int s = 0; s < steps; s++) {
    /* PD to q0 on posture joints; continuous joints (wheels) track wheel_speed */
    for (int i = 1; i < m->nbody; i++) {
      int t = m->jnt_type[i], qa = m->jnt_qadr[i], da = m->jnt_dofadr[i];
      double meff = m->dof_meff[da], eff = m->dof_effort[da] > 0 ? m->dof_effort[da] : 100;
      double kp = eff / hold, kd = fmin(2 * sqrt(kp * meff), 0.5 * meff / m->timestep);
      if (t == KHZ_JOINT_REVOLUTE || t == KHZ_JOINT_PRISMATIC)
        d->tau[da] = kp * (m->q0[qa] - d->q[qa]) - kd * d->qd[da];
      else if (t == KHZ_JOINT_CONTINUOUS)
        d->tau[da] = 0.5 * meff / m->timestep * 0.2 * (wheel_speed - d->qd[da]);
    }
    double t0 = now_s();
    khz_step(m, d);
    times[s] = now_s() - t0;
    int np = 0;
    for (int k = 0; k < d->ncontact; k++) np += d->contact[k].nbottom;
    max_points = fmax(max_points, np);
  }
  /* median µs per step */
  double total = 0;
  for (int i = 0; i < steps; i++) total += times[i];
  qsort(times, (size_t)steps, sizeof times[0], cmp_double);
  double med = steps ? times[steps / 2] : 0;
  free(times);
  fprintf(out, "{\n");
  print_common(out, m, d, "robot", steps, total);
  fprintf(out, "  \"nv\": %d,\n  \"median_us_per_step\": %.3f,\n  \"max_bottom_points\": %.0f,\n", m->nv,
          1e6 * med, max_points);
  fprintf(out, "  \"contacts_at_end\": %d,\n  \"base_height_change\": %.6g,\n  \"max_penetration_end\": %.6g\n}\n",
          d->ncontact, root > 0 ? d->xpos[3 * root + 2] - z0 : 0.0, max_penetration(d));
  return 0;
}

/* a stack of blocks stands still: displacement of every floating body */
static int run_stack(const khzModel *m, khzData *d, const khzExperiment *e, FILE *out, char *err,
                     size_t errsz) {
  (void)err, (void)errsz;
  double seconds = khz_experiment_param(e, "seconds", 60);
  int steps = (int)(seconds / m->timestep + 0.5);
  double *x0 = calloc(3 * (size_t)m->nbody, sizeof(double));
  if (!x0) return -1;
  memcpy(x0, d->xpos, 3 * (size_t)m->nbody * sizeof(double));
  double t0 = now_s(), max_ke_late = 0;
  for (int s = 0; s < steps; s++) {
    khz_step(m, d);
    if (s > steps / 2) max_ke_late = fmax(max_ke_late, kinetic(m, d));
  }
  double wall = now_s() - t0, drift = 0, drop = 0;
  for (int i = 1; i < m->nbody; i++) {
    if (m->jnt_type[i] != KHZ_JOINT_FLOATING) continue;
    const double *x = d->xpos + 3 * i, *a = x0 + 3 * i;
    drift = fmax(drift, hypot(x[0] - a[0], x[1] - a[1]));
    drop = fmax(drop, a[2] - x[2]);
  }
  free(x0);
  fprintf(out, "{\n");
  print_common(out, m, d, "stack", steps, wall);
  fprintf(out, "  \"seconds\": %.6g,\n  \"max_horizontal_drift\": %.6g,\n  \"max_sink\": %.6g,\n", seconds,
          drift, drop);
  fprintf(out, "  \"max_kinetic_energy_second_half\": %.6g,\n  \"max_penetration_end\": %.6g\n}\n",
          max_ke_late, max_penetration(d));
  return 0;
}

/* An arm pushes a box: the arm's joints hold q0 by PD with gravity
 * compensation (tau = g(q) + kp (q_ref - q) + kd (qd_ref - qd), g from RNEA at
 * zero velocity and acceleration, kp and kd as run_robot's), except the
 * sweep_joint-th 1-DoF joint, whose reference goes from q0 to q0 +
 * sweep_angle over [sweep_start, sweep_start + sweep_seconds] with the
 * profile (1 - cos(pi u)) / 2 and then holds. The figures: the box's
 * position every 0.5 s, its path length and final displacement, its largest
 * tilt and height change, the swept joint's largest tracking error, µs per
 * step (median and mean). */
static int run_arm_push(const khzModel *m, khzData *d, const khzExperiment *e, FILE *out, char *err,
                        size_t errsz) {
  double seconds = khz_experiment_param(e, "seconds", 4);
  double hold = khz_experiment_param(e, "hold_angle", 0.1);
  int sweep_joint = (int)khz_experiment_param(e, "sweep_joint", 1);
  double sweep = khz_experiment_param(e, "sweep_angle", 0.8);
  double t_start = khz_experiment_param(e, "sweep_start", 0.5);
  double t_sweep = khz_experiment_param(e, "sweep_seconds", 2.5);
  int box = khz_name2body(m, e->body);
  if (box < 1 || m->jnt_type[box] != KHZ_JOINT_FLOATING) {
    snprintf(err, errsz, "experiment.body: '%s' is not a free body", e->body);
    return -1;
  }
  if (!(t_sweep > 0)) {
    snprintf(err, errsz, "experiment.sweep_seconds: must be positive");
    return -1;
  }
  /* the swept joint: the sweep_joint-th revolute or prismatic joint */
  int swept = -1;
  for (int i = 1, k = 0; i < m->nbody && swept < 0; i++)
    if (m->jnt_type[i] == KHZ_JOINT_REVOLUTE || m->jnt_type[i] == KHZ_JOINT_CONTINUOUS ||
        m->jnt_type[i] == KHZ_JOINT_PRISMATIC)
      if (++k == sweep_joint) swept = i;
  if (swept < 0) {
    snprintf(err, errsz, "experiment.sweep_joint: the model has no 1-DoF joint number %d", sweep_joint);
    return -1;
  }
  int steps = (int)(seconds / m->timestep + 0.5);
  if (steps < 1) steps = 1;
  double *times = calloc((size_t)steps, sizeof(double));
  double *zero = calloc((size_t)m->nv, sizeof(double)), *grav = calloc((size_t)m->nv, sizeof(double));
  if (!times || !zero || !grav) {
    free(times), free(zero), free(grav);
    return -1;
  }
  const double *bx = d->xpos + 3 * box;
  double x0[3] = {bx[0], bx[1], bx[2]}, prev[2] = {bx[0], bx[1]}, path = 0, max_tilt = 0, dz_max = 0;
  double track_max = 0;
  fprintf(out, "{\n  \"box_path\": [[0, %.6g, %.6g]", x0[0], x0[1]);
  int every = (int)(0.5 / m->timestep + 0.5);
  for (int s = 0; s < steps; s++) {
    double t = s * m->timestep, u = fmin(fmax((t - t_start) / t_sweep, 0), 1);
    khz_rnea(m, d, d->q, zero, zero, grav);
    for (int i = 1; i < m->nbody; i++) {
      int ty = m->jnt_type[i], qa = m->jnt_qadr[i], da = m->jnt_dofadr[i];
      if (ty != KHZ_JOINT_REVOLUTE && ty != KHZ_JOINT_CONTINUOUS && ty != KHZ_JOINT_PRISMATIC) continue;
      double meff = m->dof_meff[da], eff = m->dof_effort[da] > 0 ? m->dof_effort[da] : 100;
      double kp = eff / hold, kd = fmin(2 * sqrt(kp * meff), 0.5 * meff / m->timestep);
      double qref = m->q0[qa], vref = 0;
      if (i == swept) {
        qref += sweep * 0.5 * (1 - cos(M_PI * u));
        if (u > 0 && u < 1) vref = sweep * 0.5 * M_PI / t_sweep * sin(M_PI * u);
        track_max = fmax(track_max, fabs(qref - d->q[qa]));
      }
      d->tau[da] = grav[da] + kp * (qref - d->q[qa]) + kd * (vref - d->qd[da]);
    }
    double t0 = now_s();
    khz_step(m, d);
    times[s] = now_s() - t0;
    path += hypot(bx[0] - prev[0], bx[1] - prev[1]), prev[0] = bx[0], prev[1] = bx[1];
    /* tilt: the angle of the box's z axis from the vertical */
    max_tilt = fmax(max_tilt, acos(fmin(fmax(d->xrot[9 * box + 8], -1), 1)));
    dz_max = fmax(dz_max, fabs(bx[2] - x0[2]));
    if ((s + 1) % every == 0) fprintf(out, ", [%.4g, %.6g, %.6g]", (s + 1) * m->timestep, bx[0], bx[1]);
  }
  double total = 0;
  for (int i = 0; i < steps; i++) total += times[i];
  qsort(times, (size_t)steps, sizeof times[0], cmp_double);
  fprintf(out, "],\n");
  print_common(out, m, d, "arm_push", steps, total);
  fprintf(out, "  \"nv\": %d,\n  \"median_us_per_step\": %.3f,\n", m->nv, 1e6 * times[steps / 2]);
  fprintf(out, "  \"box_start\": [%.6g, %.6g, %.6g],\n  \"box_end\": [%.6g, %.6g, %.6g],\n", x0[0], x0[1],
          x0[2], bx[0], bx[1], bx[2]);
  fprintf(out, "  \"box_displacement\": %.6g,\n  \"box_path_length\": %.6g,\n", hypot(bx[0] - x0[0], bx[1] - x0[1]),
          path);
  fprintf(out, "  \"box_max_tilt_rad\": %.6g,\n  \"box_max_height_change\": %.6g,\n", max_tilt, dz_max);
  fprintf(out, "  \"swept_joint\": \"%s\",\n  \"max_tracking_error_rad\": %.6g,\n", m->body_name[swept],
          track_max);
  fprintf(out, "  \"max_penetration_end\": %.6g\n}\n", max_penetration(d));
  free(times), free(zero), free(grav);
  return 0;
}

/* ------------------------------------------------- Stewart & Trinkle -- */

/* the first collision geom of a body of the given type, or -1 */
static int geom_of(const khzModel *m, int body, int type) {
  for (int g = 0; g < m->ngeom; g++)
    if (m->geom_body[g] == body && m->geom_type[g] == type && !m->geom_visual[g]) return g;
  return -1;
}

/* world angular velocity of a floating body: R w_body */
static void world_angvel(const khzModel *m, const khzData *d, int b, double w[3]) {
  const double *R = d->xrot + 9 * b, *wb = d->qd + m->jnt_dofadr[b] + 3;
  for (int k = 0; k < 3; k++) w[k] = R[3 * k] * wb[0] + R[3 * k + 1] * wb[1] + R[3 * k + 2] * wb[2];
}

static void print_vec(FILE *out, const double v[3]) {
  fprintf(out, "[%.6g, %.6g, %.6g]", v[0] + 0.0, v[1] + 0.0, v[2] + 0.0);
}

/* a time, or null when t < 0 (the event did not happen) */
static void print_time(FILE *out, double t) {
  if (t < 0) fprintf(out, "null");
  else fprintf(out, "%.4f", t);
}

/* The spinning rod: a capsule (the paper's 2D rod with round ends) falls and
 * spins onto the ground. Each step, the collision pass's points (found in the
 * state at the start of the step: event times are that state's time) are
 * sorted to the rod's two ends by their side of the centre along the axis.
 * Figures: the free-flight landing time from the initial state (no contact
 * involved), the time each end first touches and how often it touches, the
 * angle and velocities just after the first impact, until when a touching
 * end slides, when the rod comes to rest (every speed below rest_speed from
 * then to the end), and the final pose. */
static int run_st_rod(const khzModel *m, khzData *d, const khzExperiment *e, FILE *out, char *err,
                      size_t errsz) {
  int b = khz_name2body(m, e->body), g = b > 0 ? geom_of(m, b, KHZ_GEOM_CAPSULE) : -1;
  if (floating_qadr(m, e->body) < 0 || g < 0) {
    snprintf(err, errsz, "experiment: body '%s' must be a floating body with a capsule geom",
             e->body);
    return -1;
  }
  double seconds = khz_experiment_param(e, "seconds", 1.5);
  double rest_speed = khz_experiment_param(e, "rest_speed", 1e-3);
  double half = m->geom_size[3 * g + 1], rad = m->geom_size[3 * g], dt = m->timestep;
  int steps = (int)(seconds / dt + 0.5), dof = m->jnt_dofadr[b];

  /* free flight from the initial state: when does the lower end reach z = 0
   * (constant spin about a fixed axis, constant gravity)? */
  double ax0[3], w0[3], x0[3], v0[3], t_free = -1;
  const double *R0 = d->xrot + 9 * b;
  for (int k = 0; k < 3; k++) {
    ax0[k] = R0[3 * k + 2], x0[k] = d->xcom[3 * b + k], v0[k] = d->qd[dof + k];
  }
  world_angvel(m, d, b, w0);
  double wn = sqrt(w0[0] * w0[0] + w0[1] * w0[1] + w0[2] * w0[2]);
  double u[3] = {0, 0, 1};
  if (wn > 0) u[0] = w0[0] / wn, u[1] = w0[1] / wn, u[2] = w0[2] / wn;
  for (double t = 0; t < seconds; t += 1e-6) {
    /* the axis turned by |w| t about w (Rodrigues), its z component */
    double c = cos(wn * t), sn = sin(wn * t), ud = u[0] * ax0[0] + u[1] * ax0[1] + u[2] * ax0[2];
    double az = ax0[2] * c + (u[0] * ax0[1] - u[1] * ax0[0]) * sn + u[2] * ud * (1 - c);
    double zc = x0[2] + v0[2] * t + 0.5 * m->gravity[2] * t * t;
    if (zc - half * fabs(az) - rad <= 0) {
      t_free = t;
      break;
    }
  }

  /* the run: per end, first touch and touches */
  double t_end[2] = {-1, -1}, t_rest_last = 0, t_slide_last = -1, max_pen = 0;
  int touches[2] = {0, 0}, was[2] = {0, 0}, first_end = -1;
  double after_v[3] = {0, 0, 0}, after_w[3] = {0, 0, 0}, after_angle = 0, t0 = now_s();
  for (int s = 0; s < steps; s++) {
    khz_step(m, d);
    double ts = d->time - dt; /* the state the collision pass saw */
    const double *R = d->xrot + 9 * b, *xc = d->xcom + 3 * b;
    double ax[3] = {R[2], R[5], R[8]}, w[3], v[3];
    world_angvel(m, d, b, w);
    for (int k = 0; k < 3; k++) v[k] = d->qd[dof + k];
    int in[2] = {0, 0}, sliding = 0;
    for (int c = 0; c < d->ncontact; c++) {
      const khzContact *ct = d->contact + c;
      if (ct->body[0] != b && ct->body[1] != b) continue;
      for (int k = 0; k < ct->npoint; k++) {
        const khzContactPoint *p = d->cpoint + ct->point_adr + k;
        if (p->depth <= 0) continue;
        double r[3] = {p->pos[0] - xc[0], p->pos[1] - xc[1], p->pos[2] - xc[2]};
        int end = r[0] * ax[0] + r[1] * ax[1] + r[2] * ax[2] > 0 ? 0 : 1;
        in[end] = 1;
        max_pen = fmax(max_pen, p->depth);
        /* does the rod's material point there slide? v + w x r, tangential part */
        double vp[3] = {v[0] + w[1] * r[2] - w[2] * r[1], v[1] + w[2] * r[0] - w[0] * r[2],
                        v[2] + w[0] * r[1] - w[1] * r[0]};
        double vn = vp[0] * ct->normal[0] + vp[1] * ct->normal[1] + vp[2] * ct->normal[2], vt2 = 0;
        for (int j = 0; j < 3; j++) vt2 += (vp[j] - vn * ct->normal[j]) * (vp[j] - vn * ct->normal[j]);
        sliding |= sqrt(vt2) > rest_speed;
      }
    }
    for (int k = 0; k < 2; k++) {
      if (in[k] && !was[k]) {
        touches[k]++;
        if (t_end[k] < 0) t_end[k] = ts;
        if (first_end < 0) {
          first_end = k;
          memcpy(after_v, v, sizeof v), memcpy(after_w, w, sizeof w);
          after_angle = asin(fmin(1, fabs(ax[2]))) * 180 / M_PI;
        }
      }
      was[k] = in[k];
    }
    if (sliding) t_slide_last = d->time;
    double speed = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    double wspeed = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]) * (half + rad);
    if (speed > rest_speed || wspeed > rest_speed) t_rest_last = d->time;
  }
  double wall = now_s() - t0;
  int second_end = first_end < 0 ? -1 : 1 - first_end;
  double t1 = first_end < 0 ? -1 : t_end[first_end], t2 = second_end < 0 ? -1 : t_end[second_end];
  double rest = t_rest_last < d->time - dt / 2 ? t_rest_last : -1; /* moving at the end: null */
  double vend[3], wend[3];
  for (int k = 0; k < 3; k++) vend[k] = d->qd[dof + k];
  world_angvel(m, d, b, wend);

  fprintf(out, "{\n");
  print_common(out, m, d, "st_rod", steps, wall);
  fprintf(out, "  \"event_times\": \"the state in which the collision pass first found the "
               "contact (the start of that step)\",\n");
  fprintf(out, "  \"free_flight_landing\": ");
  print_time(out, t_free);
  fprintf(out, ",\n  \"first_impact\": ");
  print_time(out, t1);
  fprintf(out, ",\n  \"first_end\": %s,\n",
          first_end < 0 ? "null" : first_end ? "\"-axis\"" : "\"+axis\"");
  fprintf(out, "  \"angle_at_first_impact_deg\": %.4g,\n", after_angle);
  fprintf(out, "  \"velocity_after_first_impact\": ");
  print_vec(out, after_v);
  fprintf(out, ",\n  \"angvel_after_first_impact\": ");
  print_vec(out, after_w);
  fprintf(out, ",\n  \"second_end_lands\": ");
  print_time(out, t2);
  fprintf(out, ",\n  \"touches\": {\"first_end\": %d, \"second_end\": %d},\n",
          first_end < 0 ? 0 : touches[first_end], second_end < 0 ? 0 : touches[second_end]);
  fprintf(out, "  \"slides_until\": ");
  print_time(out, t_slide_last);
  fprintf(out, ",\n  \"slide_after_second_end\": ");
  print_time(out, t2 >= 0 && t_slide_last >= t2 ? t_slide_last - t2 : -1);
  fprintf(out, ",\n  \"rest_time\": ");
  print_time(out, rest);
  fprintf(out, ",\n  \"final\": {\"com\": ");
  print_vec(out, d->xcom + 3 * b);
  fprintf(out, ", \"angle_deg\": %.4g, \"velocity\": ",
          asin(fmin(1, fabs(d->xrot[9 * b + 8]))) * 180 / M_PI);
  print_vec(out, vend);
  fprintf(out, ", \"angvel\": ");
  print_vec(out, wend);
  fprintf(out, "},\n  \"max_penetration\": %.6g,\n  \"max_penetration_end\": %.6g,\n", max_pen,
          max_penetration(d));
  fprintf(out, "  \"paper\": {\"first_impact\": 0.383, \"second_end_lands\": 0.548, "
               "\"slide_after_second_end\": 0.02, \"then\": \"at rest\", "
               "\"source\": \"Stewart & Trinkle, An implicit time-stepping scheme for rigid body dynamics with inelastic collisions and Coulomb friction, 1996, sec. 4\"}\n}\n");
  return 0;
}

/* The four balls: one thrown (`body`) lands on the ground and rolls into a
 * line of three at rest. Every pair of bodies that touches is an event: its
 * first contact time (the state the collision pass saw) and how many times it
 * came into contact; then each ball's final velocity. */
static int run_st_balls(const khzModel *m, khzData *d, const khzExperiment *e, FILE *out,
                        char *err, size_t errsz) {
  int thrown = khz_name2body(m, e->body);
  int gs = thrown > 0 ? geom_of(m, thrown, KHZ_GEOM_SPHERE) : -1;
  if (floating_qadr(m, e->body) < 0 || gs < 0) {
    snprintf(err, errsz, "experiment: body '%s' must be a floating body with a sphere geom",
             e->body);
    return -1;
  }
  double seconds = khz_experiment_param(e, "seconds", 1.5), dt = m->timestep;
  int steps = (int)(seconds / dt + 0.5), nb = m->nbody;
  size_t nn = (size_t)nb * (size_t)nb;
  double *first = malloc(nn * sizeof(double));
  int *count = calloc(nn, sizeof(int)), *was = calloc(nn, sizeof(int)), *now = calloc(nn, sizeof(int));
  if (!first || !count || !was || !now) {
    free(first), free(count), free(was), free(now);
    snprintf(err, errsz, "out of memory");
    return -1;
  }
  for (size_t k = 0; k < nn; k++) first[k] = -1;

  /* free flight of the thrown ball down to the ground (z = 0) */
  double r = m->geom_size[3 * gs], z0 = d->xpos[3 * thrown + 2];
  double vz = d->qd[m->jnt_dofadr[thrown] + 2], gz = -m->gravity[2];
  double t_free = gz > 0 && z0 > r ? (vz + sqrt(vz * vz + 2 * gz * (z0 - r))) / gz : -1;

  double max_pen = 0, t0 = now_s();
  for (int s = 0; s < steps; s++) {
    khz_step(m, d);
    memset(now, 0, nn * sizeof(int));
    for (int c = 0; c < d->ncontact; c++) {
      const khzContact *ct = d->contact + c;
      int a = ct->body[0] < ct->body[1] ? ct->body[0] : ct->body[1];
      int bb = ct->body[0] ^ ct->body[1] ^ a;
      if (!ct->npoint) continue;
      double depth = d->cpoint[ct->deepest].depth;
      if (depth > 0) now[a * nb + bb] = 1;
      max_pen = fmax(max_pen, depth);
    }
    for (size_t k = 0; k < nn; k++) {
      if (now[k] && !was[k]) {
        count[k]++;
        if (first[k] < 0) first[k] = d->time - dt;
      }
      was[k] = now[k];
    }
  }
  double wall = now_s() - t0;

  /* the thrown ball's landing, and its hitting the line (any other body but the world) */
  double t_land = first[thrown], t_hit = -1;
  for (int i = 1; i < nb; i++) {
    if (i == thrown) continue;
    double t = first[i < thrown ? i * nb + thrown : thrown * nb + i];
    if (t >= 0 && (t_hit < 0 || t < t_hit)) t_hit = t;
  }

  fprintf(out, "{\n");
  print_common(out, m, d, "st_balls", steps, wall);
  fprintf(out, "  \"event_times\": \"the state in which the collision pass first found the "
               "contact (the start of that step)\",\n");
  fprintf(out, "  \"free_flight_landing\": ");
  print_time(out, t_free);
  fprintf(out, ",\n  \"thrown_lands\": ");
  print_time(out, t_land);
  fprintf(out, ",\n  \"thrown_hits_line\": ");
  print_time(out, t_hit);
  fprintf(out, ",\n  \"contact_events\": [");
  /* the pairs in the order of their first contact */
  int printed = 0;
  for (;;) {
    size_t best = nn;
    for (size_t k = 0; k < nn; k++)
      if (first[k] >= 0 && (best == nn || first[k] < first[best])) best = k;
    if (best == nn) break;
    fprintf(out,
            "%s\n    {\"bodies\": [\"%s\", \"%s\"], \"first\": %.4f, \"contacts\": %d, "
            "\"in_contact_at_end\": %s}",
            printed++ ? "," : "", m->body_name[best / (size_t)nb], m->body_name[best % (size_t)nb],
            first[best], count[best], was[best] ? "true" : "false");
    first[best] = -2; /* printed */
  }
  fprintf(out, "\n  ],\n  \"final\": [");
  printed = 0;
  for (int i = 1; i < nb; i++) {
    if (m->jnt_type[i] != KHZ_JOINT_FLOATING) continue;
    double v[3], w[3];
    for (int k = 0; k < 3; k++) v[k] = d->qd[m->jnt_dofadr[i] + k];
    world_angvel(m, d, i, w);
    fprintf(out, "%s\n    {\"body\": \"%s\", \"pos\": ", printed++ ? "," : "", m->body_name[i]);
    print_vec(out, d->xpos + 3 * i);
    fprintf(out, ", \"velocity\": ");
    print_vec(out, v);
    fprintf(out, ", \"angvel\": ");
    print_vec(out, w);
    fprintf(out, "}");
  }
  fprintf(out, "\n  ],\n  \"max_penetration\": %.6g,\n", max_pen);
  fprintf(out, "  \"paper\": {\"thrown_lands\": 0.42, \"thrown_hits_line\": 0.59, "
               "\"line_closes\": \"within the first step of the collision\", "
               "\"source\": \"Stewart & Trinkle, An implicit time-stepping scheme for rigid body dynamics with inelastic collisions and Coulomb friction, 1996, sec. 4; final velocities are "
               "only plotted (Figs. 7-8), Table I gives errors between step sizes\"}\n}\n");
  free(first), free(count), free(was), free(now);
  return 0;
}

int khz_experiment_run(const khzModel *m, khzData *d, const khzExperiment *e, FILE *out, char *err,
                       size_t errsz) {
  static const struct {
    const char *kind;
    int (*run)(const khzModel *, khzData *, const khzExperiment *, FILE *, char *, size_t);
  } table[] = {
      {"block_penetration", run_block_penetration},
      {"block_forces", run_block_forces},
      {"pile", run_pile},
      {"robot", run_robot},
      {"stack", run_stack},
      {"arm_push", run_arm_push},
      {"st_rod", run_st_rod},
      {"st_balls", run_st_balls},
  };
  for (size_t k = 0; k < sizeof table / sizeof table[0]; k++)
    if (strcmp(e->kind, table[k].kind) == 0) return table[k].run(m, d, e, out, err, errsz);
  snprintf(err, errsz, "unknown experiment kind '%s'", e->kind);
  return -1;
}
