/* test_sweep.c — the sweep of small fast bodies (rt/src/contact/sweep.c)
 * finds the geoms a path enters through the broad phase's boxes; this
 * checks it against the plain algorithm, every fast geom's path clipped
 * against every geom (written out below as sweep.c had it), on random
 * scenes: 240 free bodies (boxes, thin plates, cylinders, spheres, capsules;
 * some with a second geom added after every body's first, so that a body's
 * geoms are not consecutive), 80 fixed targets (boxes, plates, cylinders),
 * the ground plane, some geoms in another collision group, and random moves
 * of up to 0.6 m since the step's start. The positions after the sweep must
 * be the plain algorithm's bit for bit, in 8 layouts, and the layouts must
 * put back bodies (of every kind) for the check to mean something. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collision/collision.h"
#include "contact/sweep.h"
#include "dynamics.h"
#include "ensure.h"
#include "khz/khz.h"
#include "spatial.h"

#define NFREE 240
#define NFIXED 80
#define NEXTRA 40

static double urand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return ((*s >> 8) & 0xffffff) / (double)0x1000000;
}

/* sweep.c before the broad phase's boxes: every fast geom against every geom */
static int plain_sweep(const khzModel *m, const khzData *d, const double *q0, double *q) {
  const khzColModel *cm = m->collision;
  double *frame = malloc(12 * (size_t)m->ngeom * sizeof(double));
  double *aabb = malloc(6 * (size_t)m->ngeom * sizeof(double));
  khz_collisionFrames(m, d, frame, aabb);
  int clamped = 0, last = -1;
  for (int gb = 0; gb < m->ngeom; gb++) {
    int b = m->geom_body[gb];
    if (cm->geom[gb].shape < 0 || b == last || !khz_bodyFree(m, b)) continue;
    const double *hf = cm->geom[gb].half;
    double th = fmin(hf[0], fmin(hf[1], hf[2]));
    int qa = m->jnt_qadr[b];
    double step[3];
    khzu_sub3(step, q + qa, q0 + qa);
    double len = khzu_norm3(step);
    if (!(len > 0.5 * th)) continue;
    double c1[3], c0[3], off[3];
    khzu_mulMatVec3(off, frame + 12 * gb + 3, cm->geom[gb].center);
    khzu_add3(c1, frame + 12 * gb, off);
    khzu_sub3(c0, c1, step);
    double tmin = INFINITY;
    for (int g = 0; g < m->ngeom; g++) {
      int sh = cm->geom[g].shape;
      if (m->geom_body[g] == b || !(sh == KHZ_SHAPE_PLANE || sh == KHZ_SHAPE_BOX ||
                                    sh == KHZ_SHAPE_CYLINDER || sh == KHZ_SHAPE_CONVEX))
        continue;
      if (!khz_collisionFilter(m, gb, g)) continue;
      khzColShape s;
      khz_shape_make(m, g, frame + 12 * g, &s);
      double t[2];
      if (!khz_shape_clip(&s, c0, c1, t) || !(t[0] > 0) || t[0] > 1) continue;
      tmin = fmin(tmin, t[0]);
    }
    if (!(tmin <= 1)) continue;
    double t = fmax(tmin - 0.98 * th / len, 0);
    for (int k = 0; k < 3; k++) q[qa + k] = q0[qa + k] + t * step[k];
    clamped++, last = b;
  }
  free(frame);
  free(aabb);
  return clamped;
}

static void random_quat(unsigned *s, double q[4]) {
  double n = 0;
  for (int k = 0; k < 4; k++) q[k] = urand(s) - 0.5, n += q[k] * q[k];
  for (int k = 0; k < 4; k++) q[k] /= sqrt(n);
}

static khzModel *random_scene(unsigned seed) {
  unsigned s = seed;
  khzSpec *sp = khz_spec_new();
  khzGeomSpec plane;
  khz_spec_defaultGeom(&plane);
  plane.type = KHZ_GEOM_PLANE;
  khz_spec_addGeom(sp, &plane);
  int first_free = 0;
  for (int i = 0; i < NFIXED + NFREE; i++) {
    khzBodySpec b;
    khz_spec_defaultBody(&b);
    snprintf(b.name, sizeof b.name, "b%d", i);
    double p[3] = {3 * urand(&s) - 1.5, 3 * urand(&s) - 1.5, 1.5 * urand(&s)}, qt[4];
    random_quat(&s, qt);
    b.mass = 1;
    b.inertia[0] = b.inertia[1] = b.inertia[2] = 0.01;
    if (i < NFIXED) {
      memcpy(b.pos, p, sizeof p);
      memcpy(b.quat, qt, sizeof qt);
    } else {
      snprintf(b.joint_name, sizeof b.joint_name, "j%d", i);
      b.joint_type = KHZ_JOINT_FLOATING;
      memcpy(b.q0, p, sizeof p);
      memcpy(b.q0 + 3, qt, sizeof qt);
    }
    khzGeomSpec g;
    khz_spec_defaultGeom(&g);
    g.body = khz_spec_addBody(sp, &b);
    if (i == NFIXED) first_free = g.body;
    int kind = (int)(5 * urand(&s));
    double a = 0.01 + 0.1 * urand(&s), c = 0.002 + 0.05 * urand(&s);
    switch (i < NFIXED ? kind % 3 : kind) {
      case 0: g.type = KHZ_GEOM_BOX, g.size[0] = a, g.size[1] = 0.5 * a + c, g.size[2] = c; break;
      case 1: g.type = KHZ_GEOM_BOX, g.size[0] = a, g.size[1] = a, g.size[2] = 0.3 * a + c; break;
      case 2: g.type = KHZ_GEOM_CYLINDER, g.size[0] = a, g.size[1] = c; break;
      case 3: g.type = KHZ_GEOM_SPHERE, g.size[0] = c + 0.005; break;
      default: g.type = KHZ_GEOM_CAPSULE, g.size[0] = c + 0.005, g.size[1] = a; break;
    }
    if (urand(&s) < 0.1) g.contype = g.conaffinity = 2; /* another group */
    khz_spec_addGeom(sp, &g);
  }
  for (int i = 0; i < NEXTRA; i++) { /* second geoms, after every body's first */
    khzGeomSpec g;
    khz_spec_defaultGeom(&g);
    g.body = first_free + (int)(NFREE * urand(&s));
    g.type = KHZ_GEOM_BOX;
    g.size[0] = g.size[1] = g.size[2] = 0.01 + 0.02 * urand(&s);
    g.pos[0] = 0.05;
    khz_spec_addGeom(sp, &g);
  }
  char err[256];
  khzModel *m = khz_compile(sp, err, sizeof err);
  if (!m) fprintf(stderr, "compile: %s\n", err);
  khz_spec_destroy(&sp);
  return m;
}

int main(void) {
  int clamped_all = 0, fast_all = 0, layouts = 0;
  for (unsigned seed = 1; seed <= 8; seed++) {
    khzModel *m = random_scene(seed);
    ENSURE(m != NULL);
    if (!m) continue;
    /* the kinematics and the sweep only: a stack of their size (the default
     * one holds a step's nv x nv matrices, 33 MB here) */
    khzData *d = khz_makeData(m, khz_sweepStackBytes(m) + 65536);
    unsigned s = 1000 + seed;
    /* the step's end: each free body moved up to 0.6 m in a random direction */
    double *q0 = malloc((size_t)m->nq * sizeof(double)), *q = malloc((size_t)m->nq * sizeof(double));
    memcpy(q0, d->q, (size_t)m->nq * sizeof(double));
    for (int b = 1; b < m->nbody; b++) {
      if (m->jnt_type[b] != KHZ_JOINT_FLOATING) continue;
      int qa = m->jnt_qadr[b];
      double dir[3] = {urand(&s) - 0.5, urand(&s) - 0.5, urand(&s) - 0.5}, n = khzu_norm3(dir),
             len = urand(&s) < 0.3 ? 0.001 * urand(&s) : 0.6 * urand(&s);
      for (int k = 0; k < 3; k++) d->q[qa + k] += len * dir[k] / n;
      fast_all += len > 0.01;
    }
    khz_kinematics(m, d);
    memcpy(q, d->q, (size_t)m->nq * sizeof(double));
    int expect = plain_sweep(m, d, q0, q);
    int got = khz_contactSweep(m, d, q0);
    int same = memcmp(q, d->q, (size_t)m->nq * sizeof(double)) == 0;
    printf("layout %u: %d bodies put back by the plain sweep; same positions: %s\n", seed, expect,
           same ? "yes" : "no");
    ENSURE(same);
    ENSURE(got == (expect > 0));
    ENSURE(d->warning[KHZ_WARN_STACK] == 0);
    clamped_all += expect, layouts += expect > 0;
    free(q0);
    free(q);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
  printf("%d fast bodies, %d put back, in %d of 8 layouts\n", fast_all, clamped_all, layouts);
  ENSURE(layouts == 8 && clamped_all > 100);
  return ensure_report();
}
