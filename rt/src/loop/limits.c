/* limits.c — the physical inputs a loop accepts, checked against the model
 * (khz/loop.h): perturbation wrenches, reset states, PD gains, and the step
 * size the model's stiffest joint spring and contact gains allow (each a
 * damped oscillator held to the integrator's stability region). The I/O
 * side calls the same functions to refuse a request with a message naming the
 * value and its limit; the loop checks again before it applies anything.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "collision/collision.h"
#include "contact/penalty.h"
#include "dynamics.h"
#include "khz/loop.h"

/* the message for the first value out of its range (name: a body); -1 */
static int fail(char *msg, size_t msz, const char *fmt, const char *name, double a, double b) {
  if (msg && msz) snprintf(msg, msz, fmt, name, a, b);
  return -1;
}

/* largest principal moment of a 3x3 inertia about the com */
static double inertia_max(const double *inertia) {
  double ev[3];
  khz_eig3(inertia, ev, NULL);
  double m = ev[0];
  if (ev[1] > m) m = ev[1];
  if (ev[2] > m) m = ev[2];
  return m > 0 ? m : 0;
}

/* |v| without overflow (1e300 stays 1e300) */
static double norm3(const double *v) {
  double s = fmax(fabs(v[0]), fmax(fabs(v[1]), fabs(v[2])));
  if (!(s > 0)) return 0;
  double a = v[0] / s, b = v[1] / s, c = v[2] / s;
  return s * sqrt(a * a + b * b + c * c);
}

void khz_loop_wrenchLimits(const khzModel *m, int body, double *force, double *torque) {
  *force = KHZ_WRENCH_MAX_ACCEL * m->body_subtreemass[body];
  *torque = KHZ_WRENCH_MAX_ALPHA * inertia_max(m->body_inertia + 9 * body);
}

int khz_loop_checkWrench(const khzModel *m, int body, const double w[6], char *msg, size_t msz) {
  if (body < 1 || body >= m->nbody) {
    if (msg && msz) snprintf(msg, msz, "wrench: no body %d", body);
    return -1;
  }
  for (int k = 0; k < 6; k++)
    if (!isfinite(w[k])) return fail(msg, msz, "wrench on '%s': w[%g] is %g", m->body_name[body], k, w[k]);
  double fmax, tmax;
  khz_loop_wrenchLimits(m, body, &fmax, &tmax);
  double f = norm3(w), t = norm3(w + 3);
  if (f > fmax)
    return fail(msg, msz,
                "wrench on '%s': force %g N is over the limit %g N (" KHZ_STR_(KHZ_WRENCH_MAX_ACCEL)
                " m/s^2 times the mass the body carries)",
                m->body_name[body], f, fmax);
  if (t > tmax)
    return fail(msg, msz,
                "wrench on '%s': torque %g N m is over the limit %g N m (" KHZ_STR_(KHZ_WRENCH_MAX_ALPHA)
                " rad/s^2 times the body's largest principal inertia)",
                m->body_name[body], t, tmax);
  return 0;
}

int khz_loop_checkReset(const khzModel *m, const double *q, char *msg, size_t msz) {
  for (int b = 1; b < m->nbody; b++) {
    const double *qb = q + m->jnt_qadr[b];
    const char *name = m->jnt_name[b][0] ? m->jnt_name[b] : m->body_name[b];
    int t = m->jnt_type[b];
    for (int i = 0; i < m->jnt_nq[b]; i++)
      if (!isfinite(qb[i]))
        return fail(msg, msz, "reset: q[%2$g] (joint '%1$s') is %3$g", name, m->jnt_qadr[b] + i, qb[i]);
    if (t == KHZ_JOINT_REVOLUTE || t == KHZ_JOINT_PRISMATIC || t == KHZ_JOINT_CONTINUOUS) {
      double lo = m->jnt_range[2 * b], hi = m->jnt_range[2 * b + 1];
      /* the limit spring lets a joint a little past its limit: a state read
       * from the stream resets */
      double tol = 0.01 * (hi - lo) + 0.01;
      if (m->jnt_limited[b] && t != KHZ_JOINT_CONTINUOUS && (qb[0] < lo - tol || qb[0] > hi + tol)) {
        if (msg && msz)
          snprintf(msg, msz, "reset: q[%d] = %g (joint '%s') is outside its limits %g..%g",
                   m->jnt_qadr[b], qb[0], name, lo, hi);
        return -1;
      }
      double lim = t == KHZ_JOINT_PRISMATIC ? KHZ_RESET_MAX_POS : KHZ_RESET_MAX_ANGLE;
      if (fabs(qb[0]) > lim) {
        if (msg && msz)
          snprintf(msg, msz, "reset: q[%d] = %g (joint '%s') is beyond %g %s", m->jnt_qadr[b],
                   qb[0], name, lim, t == KHZ_JOINT_PRISMATIC ? "m" : "rad");
        return -1;
      }
    } else if (t == KHZ_JOINT_FLOATING || t == KHZ_JOINT_SPHERICAL) {
      const double *quat = qb + (t == KHZ_JOINT_FLOATING ? 3 : 0);
      if (t == KHZ_JOINT_FLOATING) {
        for (int k = 0; k < 3; k++) {
          if (fabs(qb[k]) > KHZ_RESET_MAX_POS) {
            if (msg && msz)
              snprintf(msg, msz, "reset: q[%d] = %g (position of the joint '%s') is beyond %g m",
                       m->jnt_qadr[b] + k, qb[k], name, (double)KHZ_RESET_MAX_POS);
            return -1;
          }
        }
      }
      double n = sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3]);
      if (!(n >= 1e-6 && n <= 1e6)) {
        if (msg && msz)
          snprintf(msg, msz,
                   "reset: the quaternion of the joint '%s' (q[%d..%d]) has norm %g: not a rotation (1e-6..1e6, "
                   "normalised)",
                   name, (int)(quat - q), (int)(quat - q) + 3, n);
        return -1;
      }
    }
  }
  return 0;
}

int khz_loop_checkGains(const khzModel *m, const int *dof, int na, const double *kp,
                        const double *kd, double h, char *msg, size_t msz) {
  for (int a = 0; a < na; a++) {
    double meff = m->dof_meff[dof[a]];
    int jb = m->dof_body[dof[a]];
    const char *name = m->jnt_name[jb][0] ? m->jnt_name[jb] : m->body_name[jb];
    if (kp && !(isfinite(kp[a]) && kp[a] >= 0))
      return fail(msg, msz, "gains: kp[%2$g] (joint '%1$s') is %3$g: must be finite and >= 0", name, a, kp[a]);
    if (kd && !(isfinite(kd[a]) && kd[a] >= 0))
      return fail(msg, msz, "gains: kd[%2$g] (joint '%1$s') is %3$g: must be finite and >= 0", name, a, kd[a]);
    double kpmax = 4 * meff / (h * h), kdmax = 2 * meff / h;
    if (kp && kp[a] > kpmax) {
      if (msg && msz)
        snprintf(msg, msz,
                 "gains: kp[%d] = %g (joint '%s') is over the limit %g at %g s steps (4 m / h^2, "
                 "effective inertia m = %g): the in-tick PD would be unstable",
                 a, kp[a], name, kpmax, h, meff);
      return -1;
    }
    if (kd && kd[a] > kdmax) {
      if (msg && msz)
        snprintf(msg, msz,
                 "gains: kd[%d] = %g (joint '%s') is over the limit %g at %g s steps (2 m / h, "
                 "effective inertia m = %g): the in-tick PD would be unstable",
                 a, kd[a], name, kdmax, h, meff);
      return -1;
    }
  }
  return 0;
}

/* ------------------------------------------------------ the step size -- */

/* Each element the step integrates explicitly is, linearised, a damped
 * oscillator x'' = -(k x + b x') / m. With s = h^2 k / m and beta = h b / m:
 *  - semi-implicit Euler (v' = v + h a, x' = x + h v') maps (x, h v) by
 *    [[1 - s, 1 - beta], [-s, 1 - beta]] with explicit damping, trace
 *    2 - s - beta and determinant 1 - beta; Jury's conditions (|det| < 1,
 *    |trace| < 1 + det) give s + 2 beta <= 4. With the damping implicit
 *    ((m + h b) a = -k x - b v) the map has determinant 1 / (1 + beta) and
 *    trace 1 + (1 - s) / (1 + beta), stable for s <= 4 + 2 beta. Undamped,
 *    both are h omega <= 2.
 *  - classical RK4 multiplies each eigenmode by R(z) = 1 + z + z^2/2 + z^3/6
 *    + z^4/24 at z = h mu, mu the roots of mu^2 + (b/m) mu + k/m; stable while
 *    |R(z)| <= 1 for both (Hairer & Wanner, Solving ODEs II, sec. IV.2: the
 *    region meets the imaginary axis at 2 sqrt(2), the real one at -2.785).
 * A joint's damping is implicit under Euler always, under RK4 where
 * h b > m (khz_abaCoreDamped; its articulated inertia D is taken as the
 * effective inertia m here): there RK4 integrates x'' = -(k x + b x') / (m + h b).
 * Contact damping is explicit, its rate held to KHZ_CONTACT_DAMPING_LIMIT / h
 * at run time (the contact models' damping limit). */
#define KHZ_CONTACT_DAMPING_LIMIT 1.8

enum { DAMP_EXPLICIT, DAMP_JOINT };

/* |R(z)| for RK4's stability function at z = x + i y (Horner in complex) */
static double rk4_gain(double x, double y) {
  static const double coef[5] = {1.0 / 24, 1.0 / 6, 0.5, 1, 1};
  double re = coef[0], im = 0;
  for (int k = 1; k < 5; k++) {
    double r = re * x - im * y + coef[k], i = re * y + im * x;
    re = r, im = i;
  }
  return hypot(re, im);
}

static int rk4_stable(double w2, double lam, double h) {
  /* the roots of mu^2 + lam mu + w2, times h */
  double disc = 0.25 * lam * lam - w2;
  double x[2], y[2];
  if (disc >= 0) {
    x[0] = h * (-0.5 * lam + sqrt(disc)), x[1] = h * (-0.5 * lam - sqrt(disc));
    y[0] = y[1] = 0;
  } else {
    x[0] = x[1] = -0.5 * h * lam;
    y[0] = h * sqrt(-disc), y[1] = -y[0];
  }
  return rk4_gain(x[0], y[0]) <= 1 + 1e-12 && rk4_gain(x[1], y[1]) <= 1 + 1e-12;
}

/* 1 when the integrator keeps the oscillator (k, b on mass mass) bounded at step h */
static int oscillator_stable(int rk4, int damping, double k, double b, double mass, double h) {
  if (damping == DAMP_EXPLICIT && h * b / mass > KHZ_CONTACT_DAMPING_LIMIT)
    b = KHZ_CONTACT_DAMPING_LIMIT * mass / h;
  double s = h * h * k / mass, beta = h * b / mass;
  if (!rk4) return damping == DAMP_JOINT ? s <= 4 + 2 * beta : s + 2 * beta <= 4;
  if (damping == DAMP_JOINT && beta > 1) mass += h * b;
  return rk4_stable(k / mass, b / mass, h);
}

/* the largest h at which the oscillator is stable (INFINITY when every h up to
 * 100 s is): doubling to the first unstable step, then bisection */
static double oscillator_hmax(int rk4, int damping, double k, double b, double mass) {
  if (!(k > 0) || !(mass > 0)) return INFINITY;
  double lo = 0, hi = 1e-7;
  while (oscillator_stable(rk4, damping, k, b, mass, hi)) {
    lo = hi, hi *= 2;
    if (hi > 100) return INFINITY;
  }
  for (int it = 0; it < 60; it++) {
    double mid = 0.5 * (lo + hi);
    if (oscillator_stable(rk4, damping, k, b, mass, mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

static int can_collide(const khzModel *m, int g1, int g2) {
  if (m->geom_visual[g1] || m->geom_visual[g2]) return 0;
  if (m->collision) return khz_collisionFilter(m, g1, g2);
  return m->geom_body[g1] != m->geom_body[g2] &&
         ((m->geom_contype[g1] & m->geom_conaffinity[g2]) || (m->geom_contype[g2] & m->geom_conaffinity[g1]));
}

static const char *joint_name(const khzModel *m, int b) {
  return m->jnt_name[b][0] ? m->jnt_name[b] : m->body_name[b];
}

double khz_loop_stableTimestep(const khzModel *m, char *what, size_t wsz) {
  int rk4 = m->integrator == KHZ_INT_RK4;
  double hmax = INFINITY;
  if (what && wsz) what[0] = 0;

  /* joint springs (MJCF stiffness) with the joint's damping on its effective
   * inertia at q0 (armature included): damping alone sets no limit, being
   * implicit wherever explicit integration could diverge */
  for (int b = 1; b < m->nbody; b++) {
    if (m->jnt_nv[b] != 1) continue;
    int dof = m->jnt_dofadr[b];
    double k = m->dof_stiffness[dof], damp = m->dof_damping[dof], inertia = m->dof_meff[dof];
    /* stable at the least limit so far: not the stiffest (the stable steps are an interval) */
    if (!(k > 0) || (hmax < INFINITY && oscillator_stable(rk4, DAMP_JOINT, k, damp, inertia, hmax))) continue;
    double hi = oscillator_hmax(rk4, DAMP_JOINT, k, damp, inertia);
    if (hi < hmax) {
      hmax = hi;
      if (what && wsz)
        snprintf(what, wsz,
                 "joint '%s': stiffness %g, damping %g on its effective inertia %g (omega %g rad/s)",
                 joint_name(m, b), k, damp, inertia, sqrt(k / inertia));
    }
  }

  /* contact with gains given in the scene (automatic gains follow the step):
   * the normal spring-damper of every pair of geoms that can touch, on the
   * pair's reduced mass (a static body counts as infinite) */
  const khzContactOptions *c = &m->contact;
  int given = c->kp > 0 || c->kp_per_kg > 0;
  for (int g = 0; g < m->ngeom && !given; g++) given = m->geom_gain[3 * g] > 0;
  if (c->method != KHZ_CONTACT_NONE && given) {
    for (int g1 = 0; g1 < m->ngeom; g1++) {
      double m1 = khz_penaltyContactMass(m, m->geom_body[g1]);
      if (!(m1 > 0)) continue; /* g1: the moving side */
      for (int g2 = 0; g2 < m->ngeom; g2++) {
        double m2 = khz_penaltyContactMass(m, m->geom_body[g2]);
        if (g2 == g1 || (m2 > 0 && g2 < g1) || !can_collide(m, g1, g2)) continue;
        /* the gains penalty.c gives the pair (its effective mass counts as
         * the reduced mass here: the configuration is not known at load) */
        double gains[3];
        khz_penaltySceneGains(m, g1, g2,
                              c->gain_mass == KHZ_GAIN_MASS_SUM || !(m2 > 0) ? m1 + m2 : m1 * m2 / (m1 + m2),
                              gains);
        double kp = gains[0], kv = gains[1];
        if (!(kp > 0)) continue; /* automatic gains: below */
        double mu = m2 > 0 ? m1 * m2 / (m1 + m2) : m1;
        if (hmax < INFINITY && oscillator_stable(rk4, DAMP_EXPLICIT, kp, kv, mu, hmax)) continue;
        double hi = oscillator_hmax(rk4, DAMP_EXPLICIT, kp, kv, mu);
        if (hi < hmax) {
          hmax = hi;
          int b1 = m->geom_body[g1], b2 = m->geom_body[g2];
          if (what && wsz)
            snprintf(what, wsz,
                     "contact between '%s' and '%s': kp %g, kv %g on the pair's mass %g kg (omega "
                     "%g rad/s)",
                     m->body_name[b1], b2 > 0 ? m->body_name[b2] : "world", kp, kv, mu, sqrt(kp / mu));
        }
      }
    }
  }

  /* contact with automatic gains: their springs follow the step (docs/contact.md), so no stiffness
   * limits h; what does is collision at discrete steps. A body resting on a contact falls g h^2
   * in a step before the contact force of the next answers it; once that reaches the thickness
   * of the body's thinnest collision geom (its smallest half-extent) the contact is found on the
   * wrong feature or not at all, and the body is thrown. The limit: g h^2 <= r_min / 4, the
   * factor measured, not derived: the default scene (box2, r 2 cm) runs at 0.05 s and diverges
   * at 0.06 s (g h^2 = 1.8 r); a floating humanoid with automatic gains (l_foot, r 2.5 cm) runs
   * at 0.03 s and diverges at 0.035 s (g h^2 = 0.48 r); a lone cube of half-size 1 cm comes to
   * rest up to 0.015 s (0.22 r) and keeps bouncing from 0.02 s (0.39 r) (docs/server.md). */
  double g = norm3(m->gravity);
  int penalty = c->method == KHZ_CONTACT_PENALTY || c->method == KHZ_CONTACT_DEEPEST;
  if (penalty && !(c->kp > 0) && !(c->kp_per_kg > 0) && g > 0) {
    for (int gi = 0; gi < m->ngeom; gi++) {
      int b = m->geom_body[gi];
      if (b < 1 || m->geom_visual[gi] || !(m->body_subtreemass[b] > 0) || m->geom_gain[3 * gi] > 0) continue;
      if (!(m->geom_contype[gi] | m->geom_conaffinity[gi])) continue;
      /* only a body that can rest on contact: one carried by a floating joint (a fixed-base
       * arm's links are held by their joints) */
      int free = 0;
      for (int a = b; a >= 1 && !free; a = m->body_parent[a]) free = m->jnt_type[a] == KHZ_JOINT_FLOATING;
      if (!free) continue;
      const double *sz = m->geom_size + 3 * gi;
      double r = INFINITY;
      switch (m->geom_type[gi]) {
        case KHZ_GEOM_SPHERE:
        case KHZ_GEOM_CAPSULE: r = sz[0]; break;
        case KHZ_GEOM_CYLINDER: r = fmin(sz[0], sz[1]); break;
        case KHZ_GEOM_BOX: r = fmin(sz[0], fmin(sz[1], sz[2])); break;
        case KHZ_GEOM_MESH: { /* half the smallest side of its scaled box */
          int id = m->geom_meshid[gi];
          if (id < 0) break;
          const double *v = m->mesh_vert + 3 * m->mesh_vertadr[id];
          for (int k = 0; k < 3; k++) {
            double lo = INFINITY, hi = -INFINITY, s = sz[k] != 0 ? fabs(sz[k]) : 1;
            for (int i = 0; i < m->mesh_vertnum[id]; i++)
              lo = fmin(lo, v[3 * i + k]), hi = fmax(hi, v[3 * i + k]);
            if (hi >= lo) r = fmin(r, 0.5 * (hi - lo) * s);
          }
          break;
        }
        default: break;
      }
      if (!(r > 0) || !isfinite(r)) continue;
      double hi = sqrt(r / (4 * g));
      if (hi < hmax) {
        hmax = hi;
        if (what && wsz)
          snprintf(what, wsz,
                   "contact with automatic gains on '%s': a resting body falls g h^2 a step, %g m at "
                   "this limit, a quarter of the half-thickness of its thinnest geom",
                   m->body_name[b], r / 4);
      }
    }
  }
  return hmax;
}

int khz_loop_stabilityWarningFor(const khzModel *m, double hmax, const char *what, double h,
                                  char *msg, size_t msz) {
  /* a step longer than the model's max_substep runs as equal substeps (khz_stepWith) */
  double sub = h;
  if (m->max_substep > 0 && h > m->max_substep * (1 + 1e-9)) sub = h / ceil(h / m->max_substep - 1e-9);
  if (!(sub > hmax)) return 0;
  char in[64] = "";
  if (sub < h) snprintf(in, sizeof in, " (in substeps of %g s)", sub);
  if (msg && msz)
    snprintf(msg, msz,
             "timestep %g s%s is beyond the stability limit %g s of this model's %s integrator (%s): "
             "the simulation may diverge",
             h, in, hmax, m->integrator == KHZ_INT_RK4 ? "RK4" : "Euler", what);
  return 1;
}

int khz_loop_stabilityWarning(const khzModel *m, double h, char *msg, size_t msz) {
  char what[256];
  double hmax = khz_loop_stableTimestep(m, what, sizeof what);
  return khz_loop_stabilityWarningFor(m, hmax, what, h, msg, msz);
}
