/* limits.c — the physical inputs a loop accepts, checked against the model
 * (khz/loop.h): perturbation wrenches, reset states, PD gains, and the step
 * size the model's stiffest joint damping and contact gains allow. The I/O
 * side calls the same functions to refuse a request with a message naming the
 * value and its limit; the loop checks again before it applies anything.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "khz/loop.h"

/* the message for the first value out of its range (name: a body); -1 */
static int fail(char *msg, size_t msz, const char *fmt, const char *name, double a, double b) {
  if (msg && msz) snprintf(msg, msz, fmt, name, a, b);
  return -1;
}

/* largest principal moment of a 3x3 inertia about the com */
static double inertia_max(const double *I) {
  double ev[3];
  khz_eig3(I, ev, NULL);
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

/* the stability limits of the explicit integrators: RK4 reaches 2.78 on the
 * negative real axis and 2.83 on the imaginary one; semi-implicit Euler 2.
 * Joint damping sets no limit: the step integrates it implicitly wherever
 * explicit integration could diverge (khz_abaCoreDamped: every dof under
 * semi-implicit Euler, the dofs with h b >= D under RK4) */
double khz_loop_stableTimestep(const khzModel *m, char *what, size_t wsz) {
  int rk4 = m->integrator == KHZ_INT_RK4;
  double c_real = rk4 ? 2.78 : 2.0, c_imag = rk4 ? 2.83 : 2.0;
  double hmax = INFINITY;
  if (what && wsz) what[0] = 0;

  /* contact with gains given in the scene (automatic gains follow the step):
   * stiffness and damping on the lightest body that can touch something */
  const khzContactOptions *c = &m->contact;
  if (c->method != KHZ_CONTACT_NONE) {
    for (int g = 0; g < m->ngeom; g++) {
      int b = m->geom_body[g];
      if (b < 1 || m->geom_visual[g] || !(m->body_subtreemass[b] > 0)) continue;
      double mass = m->body_subtreemass[b];
      double kp = m->geom_gain[3 * g] > 0 ? m->geom_gain[3 * g] : c->kp;
      double kv = m->geom_gain[3 * g + 1] > 0 ? m->geom_gain[3 * g + 1] : c->kv;
      double w2 = kp > 0 ? kp / mass : c->kp_per_kg;
      double lambda = kv > 0 ? kv / mass : (kp > 0 || c->kp_per_kg > 0 ? c->kv_per_kg : 0);
      double hi = INFINITY;
      const char *which = "";
      if (w2 > 0 && c_imag / sqrt(w2) < hi) hi = c_imag / sqrt(w2), which = "stiffness";
      if (lambda > 0 && c_real / lambda < hi) hi = c_real / lambda, which = "damping";
      if (hi < hmax) {
        hmax = hi;
        if (what && wsz)
          snprintf(what, wsz, "contact %s of '%s' (%g kg): kp %g, kv %g", which, m->body_name[b],
                   mass, kp > 0 ? kp : c->kp_per_kg * mass, kv > 0 ? kv : lambda * mass);
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

int khz_loop_stabilityWarning(const khzModel *m, double h, char *msg, size_t msz) {
  char what[256];
  double hmax = khz_loop_stableTimestep(m, what, sizeof what);
  if (!(h > hmax)) return 0;
  if (msg && msz)
    snprintf(msg, msz,
             "timestep %g s is beyond the stability limit %g s of this model's %s integrator (%s): "
             "the simulation may diverge",
             h, hmax, m->integrator == KHZ_INT_RK4 ? "RK4" : "Euler", what);
  return 1;
}
