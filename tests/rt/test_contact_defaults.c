/* test_contact_defaults.c — contact with the automatic gains (a scene that
 * sets no stiffness; rt/src/contact/penalty.c), RK4 at 1 ms, against the
 * analytic rest state:
 *   a. a box or a sphere of any mass from 0.01 to 1000 kg and any size from
 *      1 cm to 1 m, released touching the ground, rests after 2 s with
 *      penetration at most 0.5 mm and kinetic energy at most 1e-6 J per kg;
 *   b. a 1 kg box under a 100 kg box (100 times its own weight) keeps both
 *      pairs' penetration at most 1 mm, and both boxes come to rest where
 *      they started, within that;
 *   c. the stiffness follows the load: the 1 kg box's ground pair carries
 *      the weight of both boxes and its spring is at least 100 times that of
 *      the same box alone. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ensure.h"
#include "khz/khz.h"

#define G 9.81

static void add_box(khzSpec *s, const char *name, khzGeomType type, double half, double mass,
                    double z) {
  khzBodySpec b;
  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "%s", name);
  snprintf(b.joint_name, sizeof b.joint_name, "%s", name);
  b.joint_type = KHZ_JOINT_FLOATING;
  b.mass = mass;
  double I = type == KHZ_GEOM_SPHERE ? 0.4 * mass * half * half : mass * (8 * half * half) / 12;
  b.inertia[0] = b.inertia[1] = b.inertia[2] = I;
  double q0[7] = {0, 0, z, 1, 0, 0, 0};
  memcpy(b.q0, q0, sizeof q0);
  khzGeomSpec g;
  khz_spec_defaultGeom(&g);
  g.body = khz_spec_addBody(s, &b);
  g.type = type;
  g.size[0] = g.size[1] = g.size[2] = half;
  khz_spec_addGeom(s, &g);
}

static khzSpec *ground_spec(void) {
  khzSpec *s = khz_spec_new();
  khzGeomSpec plane;
  khz_spec_defaultGeom(&plane);
  plane.type = KHZ_GEOM_PLANE;
  khz_spec_addGeom(s, &plane);
  khzContactOptions c; /* the defaults: no gains */
  khz_spec_defaultContact(&c);
  khz_spec_setContact(s, &c);
  return s;
}

/* deepest point of every pair in contact */
static double max_depth(const khzData *d) {
  double dmax = 0;
  for (int i = 0; i < d->ncontact; i++)
    if (d->contact[i].npoint) dmax = fmax(dmax, d->cpoint[d->contact[i].deepest].depth);
  return dmax;
}

static double kinetic(const khzModel *m, khzData *d) {
  double ke, pe;
  khz_energy(m, d, &ke, &pe);
  return ke;
}

static void case_a(void) {
  const double masses[] = {0.01, 1, 1000}, sizes[] = {0.005, 0.05, 0.5}; /* half sizes */
  const khzGeomType types[] = {KHZ_GEOM_BOX, KHZ_GEOM_SPHERE};
  for (int t = 0; t < 2; t++)
    for (int im = 0; im < 3; im++)
      for (int is = 0; is < 3; is++) {
        khzSpec *s = ground_spec();
        add_box(s, "obj", types[t], sizes[is], masses[im], sizes[is]);
        char err[256];
        khzModel *m = khz_compile(s, err, sizeof err);
        ENSURE_MSG(m, "%s", err);
        khzData *d = khz_makeData(m, 0);
        double depth_max = 0;
        for (int k = 0; k < 2000; k++) {
          khz_step(m, d);
          depth_max = fmax(depth_max, max_depth(d));
        }
        double ke = kinetic(m, d) / masses[im];
        printf("a. %s m %g kg half %g m: penetration %.3g mm (worst %.3g), KE %.3g J/kg\n",
               t ? "sphere" : "box", masses[im], sizes[is], 1e3 * max_depth(d), 1e3 * depth_max, ke);
        ENSURE_MSG(max_depth(d) <= 5e-4, "rests %.3g mm deep", 1e3 * max_depth(d));
        ENSURE_MSG(ke <= 1e-6, "kinetic energy %.3g J/kg", ke);
        ENSURE(d->warning[KHZ_WARN_BADSTATE] == 0);
        khz_deleteData(&d);
        khz_deleteModel(&m);
        khz_spec_destroy(&s);
      }
}

static void case_bc(void) {
  double kp_alone = 0;
  for (int stacked = 0; stacked < 2; stacked++) {
    khzSpec *s = ground_spec();
    add_box(s, "light", KHZ_GEOM_BOX, 0.1, 1, 0.1);
    if (stacked) add_box(s, "heavy", KHZ_GEOM_BOX, 0.1, 100, 0.3);
    char err[256];
    khzModel *m = khz_compile(s, err, sizeof err);
    ENSURE_MSG(m, "%s", err);
    khzData *d = khz_makeData(m, 0);
    double worst = 0;
    for (int k = 0; k < 3000; k++) {
      khz_step(m, d);
      worst = fmax(worst, max_depth(d));
    }
    double kp_ground = 0;
    for (int i = 0; i < d->ncontact; i++)
      if (d->contact[i].body[0] <= 0 || d->contact[i].body[1] <= 0)
        kp_ground = d->contact[i].kp + d->contact[i].kp_implicit;
    if (!stacked) {
      kp_alone = kp_ground;
    } else {
      double zl = d->q[2], zh = d->q[7 + 2];
      printf("b. 1 kg under 100 kg: worst penetration %.3g mm, final %.3g mm; sink %.3g / %.3g mm;"
             " ground stiffness %.3g N/m (alone %.3g)\n",
             1e3 * worst, 1e3 * max_depth(d), 1e3 * (0.1 - zl), 1e3 * (0.3 - zh), kp_ground, kp_alone);
      ENSURE_MSG(worst <= 1e-3, "penetration %.3g mm", 1e3 * worst);
      ENSURE(fabs(0.1 - zl) <= 1e-3 && fabs(0.3 - zh) <= 2e-3);
      ENSURE(kinetic(m, d) <= 1e-4);
      ENSURE_MSG(kp_ground >= 100 * kp_alone, "c. %.3g vs %.3g", kp_ground, kp_alone);
    }
    khz_deleteData(&d);
    khz_deleteModel(&m);
    khz_spec_destroy(&s);
  }
}

int main(void) {
  case_a();
  case_bc();
  printf("test_contact_defaults: ok\n");
  return 0;
}
