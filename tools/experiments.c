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
} khzRng;

static double rng_uniform(khzRng *r, double lo, double hi) {
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
  khzRng rng = {(unsigned long long)khz_experiment_param(e, "seed", 1) * 0x9E3779B97F4A7C15ull + 1};
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
  khzRng rng = {(unsigned long long)khz_experiment_param(e, "seed", 1) * 0x9E3779B97F4A7C15ull + 1};
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
  };
  for (size_t k = 0; k < sizeof table / sizeof table[0]; k++)
    if (strcmp(e->kind, table[k].kind) == 0) return table[k].run(m, d, e, out, err, errsz);
  snprintf(err, errsz, "unknown experiment kind '%s'", e->kind);
  return -1;
}
