/* test_sleep.c — islands and sleeping bodies (rt/src/island.c,
 * docs/sleeping.md): a settled scene falls asleep island by island; sleeping
 * bodies are frozen bit for bit and their contacts stay listed; a wrench, a
 * torque, a velocity and a box dropped on them wake exactly their island;
 * a robot (links hinged to a welded base) sleeps as one tree and wakes on a
 * torque;
 * sleeping off (scene option and run-time switch) keeps everything awake;
 * determinism through sleep and wake; zero heap calls while islands sleep
 * and wake (malloc & co. wrapped at link time). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ensure.h"
#include "khz/khz.h"
#include "heap_count.h"

/* bodies: a column of three boxes (1..3), a ball beside it (4), a box far
 * away (5) */
enum { BOX1 = 1, BOX2, BOX3, BALL, FAR, NBODY };

static void add_free(khzSpec *s, const char *name, khzGeomType type, double half, double mass,
                     double x, double z) {
  khzBodySpec b;
  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "%s", name);
  snprintf(b.joint_name, sizeof b.joint_name, "%s", name);
  b.joint_type = KHZ_JOINT_FLOATING;
  b.mass = mass;
  double I = type == KHZ_GEOM_SPHERE ? 0.4 * mass * half * half : mass * (8 * half * half) / 12;
  b.inertia[0] = b.inertia[1] = b.inertia[2] = I;
  double q0[7] = {x, 0, z, 1, 0, 0, 0};
  memcpy(b.q0, q0, sizeof q0);
  khzGeomSpec g;
  khz_spec_defaultGeom(&g);
  g.body = khz_spec_addBody(s, &b);
  g.type = type;
  g.size[0] = g.size[1] = g.size[2] = half;
  khz_spec_addGeom(s, &g);
}

static khzModel *scene(int sleep) {
  khzSpec *s = khz_spec_new();
  khzGeomSpec plane;
  khz_spec_defaultGeom(&plane);
  plane.type = KHZ_GEOM_PLANE;
  khz_spec_addGeom(s, &plane);
  add_free(s, "box1", KHZ_GEOM_BOX, 0.05, 1, 0, 0.051);
  add_free(s, "box2", KHZ_GEOM_BOX, 0.05, 1, 0.01, 0.153);
  add_free(s, "box3", KHZ_GEOM_BOX, 0.05, 1, -0.01, 0.255);
  add_free(s, "ball", KHZ_GEOM_SPHERE, 0.05, 1, 0.5, 0.06);
  add_free(s, "far", KHZ_GEOM_BOX, 0.05, 1, 3, 0.051);
  khzSleepOptions o;
  khz_spec_defaultSleep(&o);
  o.enabled = sleep;
  khz_spec_setSleep(s, &o);
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m, "%s", err);
  khz_spec_destroy(&s);
  return m;
}

/* a 50 g box under a 20 kg box on the ground (automatic gains): the light
 * box's ground pair carries the column, most of it through the implicit part
 * (the stiffness it needs is far outside RK4's region on 50 g) */
static khzModel *light_column(void) {
  khzSpec *s = khz_spec_new();
  khzGeomSpec plane;
  khz_spec_defaultGeom(&plane);
  plane.type = KHZ_GEOM_PLANE;
  khz_spec_addGeom(s, &plane);
  add_free(s, "light", KHZ_GEOM_BOX, 0.05, 0.05, 0, 0.0501);
  add_free(s, "heavy", KHZ_GEOM_BOX, 0.05, 20, 0, 0.1503);
  add_free(s, "pushed", KHZ_GEOM_BOX, 0.05, 1, 3, 0.0501);
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m, "%s", err);
  khz_spec_destroy(&s);
  return m;
}

/* the normal force of the light box's ground pair (each point's force along
 * the normal, which includes the implicit part) and the implicit share */
static void ground_force(const khzData *d, double *fn, double *fimp) {
  *fn = *fimp = 0;
  for (int i = 0; i < d->ncontact; i++) {
    const khzContact *c = &d->contact[i];
    if (!((c->body[0] == 0 && c->body[1] == 1) || (c->body[0] == 1 && c->body[1] == 0))) continue;
    for (int k = 0; k < c->npoint; k++) {
      const khzContactPoint *p = d->cpoint + c->point_adr + k;
      *fn += p->force[0] * c->normal[0] + p->force[1] * c->normal[1] + p->force[2] * c->normal[2];
      *fimp += p->force_implicit;
    }
  }
}

/* a robot: a base welded to the world 0.1 m above the ground, two links
 * hinged about y (shoulder at the base, elbow 0.3 m out), held horizontal at
 * the start; with no torque they fall onto the ground and lie there */
enum { RBASE = 1, LINK1, LINK2, NROBOT };
static khzModel *robot(void) {
  khzSpec *s = khz_spec_new();
  khzGeomSpec g;
  khz_spec_defaultGeom(&g);
  g.type = KHZ_GEOM_PLANE;
  khz_spec_addGeom(s, &g);
  khzBodySpec b;
  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "base");
  b.joint_type = KHZ_JOINT_FIXED;
  b.pos[2] = 0.1;
  b.mass = 1;
  b.inertia[0] = b.inertia[1] = b.inertia[2] = 1e-3;
  int parent = khz_spec_addBody(s, &b);
  for (int k = 0; k < 2; k++) {
    khz_spec_defaultBody(&b);
    snprintf(b.name, sizeof b.name, "link%d", k + 1);
    snprintf(b.joint_name, sizeof b.joint_name, "joint%d", k + 1);
    b.parent = parent;
    b.pos[0] = k ? 0.3 : 0;
    b.joint_type = KHZ_JOINT_CONTINUOUS;
    b.axis[1] = 1;
    b.mass = 1;
    b.com[0] = 0.15;
    b.inertia[0] = 1e-3, b.inertia[1] = b.inertia[2] = 0.3 * 0.3 / 12;
    parent = khz_spec_addBody(s, &b);
    khz_spec_defaultGeom(&g);
    g.body = parent;
    g.type = KHZ_GEOM_BOX;
    g.size[0] = 0.15, g.size[1] = g.size[2] = 0.03;
    g.pos[0] = 0.15;
    khz_spec_addGeom(s, &g);
  }
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m, "%s", err);
  khz_spec_destroy(&s);
  return m;
}

static int asleep(const khzModel *m, const khzData *d, int lo, int hi) {
  int n = 0;
  for (int b = lo; b <= hi; b++) n += khz_bodySleeping(m, d, b);
  return n;
}

/* steps until every free body sleeps; returns the time or -1 */
static double settle(const khzModel *m, khzData *d, double limit) {
  while (d->time < limit) {
    khz_step(m, d);
    if (asleep(m, d, 1, NBODY - 1) == NBODY - 1) return d->time;
  }
  return -1;
}

static double energy(const khzModel *m, khzData *d) {
  double ke, pe;
  khz_energy(m, d, &ke, &pe);
  return ke + pe;
}

/* two runs of one model stepped side by side: `warm` as it comes, `cold`
 * with the quiet pass's memory cleared before each step, so that every one
 * of its collision passes runs the broad phase (collision/pairs.c); returns
 * the first step at which their states or their counts of full contact
 * lists differ, -1 when none of `steps` does */
static int warm_cold_split(const khzModel *m, khzData *warm, khzData *cold, int steps) {
  for (int k = 0; k < steps; k++) {
    khz_step(m, warm);
    cold->quiet_ready = 0;
    khz_step(m, cold);
    if (khz_hashState(m, warm) != khz_hashState(m, cold) ||
        warm->warning[KHZ_WARN_CONTACTFULL] != cold->warning[KHZ_WARN_CONTACTFULL])
      return k;
  }
  return -1;
}

/* 12. the quiet pass: with every body asleep the collision pass skips the
 * broad phase; the far box thrown from there at the sleeping column wakes
 * it at the same step, with the same bits, as the run whose every pass runs
 * the broad phase, and leaves the ball asleep */
static void quiet_throw(const khzModel *m, const khzData *asleep_d) {
  khzData *warm = khz_makeData(m, 0), *cold = khz_makeData(m, 0);
  khz_copyState(m, warm, asleep_d);
  khz_copyState(m, cold, asleep_d);
  ENSURE(warm_cold_split(m, warm, cold, 3) < 0);
  ENSURE(warm->quiet_ready == 1 && cold->quiet_ready == 1); /* the next pass of warm is quiet */
  khzData *run[2] = {warm, cold};
  int qa = m->jnt_qadr[FAR], da = m->jnt_dofadr[FAR];
  for (int i = 0; i < 2; i++) {
    run[i]->q[qa] = 0.4, run[i]->q[qa + 2] = 0.26; /* beside the top box, thrown at it */
    run[i]->qd[da] = -2;
    khz_wake(m, run[i], FAR);
  }
  int hit[2] = {-1, -1}, split = -1;
  for (int k = 0; k < 400 && split < 0; k++) {
    split = warm_cold_split(m, warm, cold, 1);
    for (int i = 0; i < 2; i++)
      if (hit[i] < 0 && asleep(m, run[i], BOX1, BOX3) == 0) hit[i] = k;
  }
  ENSURE_MSG(split < 0, "the warm run left the cold one at a step after the throw");
  ENSURE(hit[0] > 0 && hit[0] == hit[1] && khz_bodySleeping(m, warm, BALL));
  /* asleep again: the quiet passes resume, the same bits */
  for (int k = 0; k < 6000 && asleep(m, warm, 1, NBODY - 1) < NBODY - 1; k += 100)
    ENSURE(warm_cold_split(m, warm, cold, 100) < 0);
  ENSURE(asleep(m, warm, 1, NBODY - 1) == NBODY - 1);
  ENSURE(warm_cold_split(m, warm, cold, 10) < 0 && warm->quiet_ready == 1);
  printf("quiet pass: the thrown box woke the column at step %d of the throw, as with the broad "
         "phase every pass; all asleep again at %.3f s, the same bits\n", hit[0], warm->time);
  khz_deleteData(&warm), khz_deleteData(&cold);
}

/* 13. a quiet pass whose broad phase overflows its pair list: 20 balls
 * asleep on a static floor, inside the boxes of 24 static rods laid
 * diagonally across the scene and clear of them (480 candidate pairs, room
 * for 424). The broad phase counts the full list at every pass; the quiet
 * pass must not skip it (the same counts as the run that never skips) */
static void quiet_overflow(void) {
  khzSpec *s = khz_spec_new();
  khzGeomSpec floor;
  khz_spec_defaultGeom(&floor);
  floor.type = KHZ_GEOM_BOX;
  floor.size[0] = floor.size[1] = 2, floor.size[2] = 1;
  floor.pos[2] = -1; /* its lower bounds are the lowest: its pairs are listed first */
  khz_spec_addGeom(s, &floor);
  for (int i = 0; i < 24; i++) {
    khzGeomSpec rod;
    khz_spec_defaultGeom(&rod);
    rod.type = KHZ_GEOM_CAPSULE;
    rod.size[0] = 0.005, rod.size[1] = 1.5;
    rod.pos[2] = -0.24 + 0.02 * i;
    /* the capsule's z turned onto (2, 2, 1) / 3: about (-1, 1, 0), cos 1/3 */
    double half = 0.5 * acos(1.0 / 3);
    rod.quat[0] = cos(half), rod.quat[1] = -sin(half) / sqrt(2), rod.quat[2] = sin(half) / sqrt(2);
    rod.quat[3] = 0;
    khz_spec_addGeom(s, &rod);
  }
  for (int k = 0; k < 20; k++) {
    char name[16];
    snprintf(name, sizeof name, "ball%d", k);
    add_free(s, name, KHZ_GEOM_SPHERE, 0.02, 0.1, 0.3 + 0.03 * k, 0.02);
  }
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  ENSURE_MSG(m, "%s", err);
  khz_spec_destroy(&s);
  if (!m) return;
  int nball = m->nbody - 1;
  khzData *warm = khz_makeData(m, 0), *cold = khz_makeData(m, 0);
  for (int b = 1; b <= nball; b++) { /* along x = -y, away from the rods */
    int qa = m->jnt_qadr[b];
    warm->q[qa + 1] = cold->q[qa + 1] = -warm->q[qa];
  }
  int split = -1;
  while (warm->time < 4 && asleep(m, warm, 1, nball) < nball && split < 0)
    split = warm_cold_split(m, warm, cold, 1);
  ENSURE(split < 0 && asleep(m, warm, 1, nball) == nball);
  int full0 = warm->warning[KHZ_WARN_CONTACTFULL];
  ENSURE(warm_cold_split(m, warm, cold, 200) < 0);
  printf("quiet pass with the pair list full: %d balls asleep at %.3f s; %d full lists in the "
         "200 quiet steps that followed, as the broad phase every pass counts\n", nball,
         warm->time - 0.2, warm->warning[KHZ_WARN_CONTACTFULL] - full0);
  ENSURE(warm->warning[KHZ_WARN_CONTACTFULL] - full0 == 200 && warm->quiet_ready == 0);
  khz_deleteData(&warm), khz_deleteData(&cold);
  khz_deleteModel(&m);
}

/* 14. the quiet step (step.c): while every tree that may move sleeps
 * (m->ntree_moving sleeping roots) the integrator's stages are skipped. The
 * count is khz_bodyCanSleep's; one tree awake among sleeping ones (the far
 * box, a velocity written into it) is integrated bit for bit as the same
 * box in a run where nothing sleeps; asleep again, the steps leave the
 * state as it was and qdd zero */
static void quiet_step(const khzModel *m, const khzData *asleep_d) {
  int trees = 0;
  for (int b = 1; b < m->nbody; b++) trees += khz_bodyCanSleep(m, b);
  ENSURE(m->ntree_moving == trees && trees == NBODY - 1);
  khzData *w = khz_makeData(m, 0), *awake = khz_makeData(m, 0);
  khz_copyState(m, w, asleep_d);
  khz_copyState(m, awake, asleep_d);
  ENSURE(asleep(m, w, 1, NBODY - 1) == NBODY - 1);
  awake->sleep_enabled = 0; /* its next step wakes every island, and nothing sleeps again */
  int qa = m->jnt_qadr[FAR], da = m->jnt_dofadr[FAR], nq = m->jnt_nq[FAR], nv = m->jnt_nv[FAR], split = -1;
  double x0 = w->q[qa];
  w->qd[da] = awake->qd[da] = 0.2; /* sliding along x: friction stops it within 3 cm */
  for (int k = 0; k < 100 && split < 0; k++) {
    khz_step(m, w), khz_step(m, awake);
    if (memcmp(w->q + qa, awake->q + qa, (size_t)nq * sizeof(double)) != 0 ||
        memcmp(w->qd + da, awake->qd + da, (size_t)nv * sizeof(double)) != 0)
      split = k;
  }
  ENSURE_MSG(split < 0, "the far box left the run where nothing sleeps at step %d", split);
  ENSURE(asleep(m, w, BOX1, BALL) == 4 && !khz_bodySleeping(m, w, FAR) && w->q[qa] > x0 + 1e-3);
  double slid = w->q[qa] - x0;
  double t = settle(m, w, w->time + 5);
  ENSURE(t > 0 && w->body_sleep[0] == m->ntree_moving);
  size_t n = khz_stateSize(m);
  unsigned char *before = malloc(n), *after = malloc(n);
  khz_saveState(m, w, before);
  for (int k = 0; k < 100; k++) khz_step(m, w);
  khz_saveState(m, w, after);
  ENSURE(memcmp(before + sizeof(double), after + sizeof(double), n - sizeof(double)) == 0);
  for (int k = 0; k < m->nv; k++) ENSURE(w->qdd[k] == 0 && w->qd[k] == 0);
  printf("quiet step: %d trees, all asleep; the far box woken by a velocity slid %.4f m bit for bit as "
         "with nothing asleep, asleep again at %.3f s, then frozen\n", trees, slid, t);
  free(before), free(after);
  khz_deleteData(&w), khz_deleteData(&awake);
}

int main(void) {
  khzModel *m = scene(1);
  if (!m) return ensure_report();
  for (int b = 1; b < NBODY; b++) ENSURE(khz_bodyCanSleep(m, b));
  khzData *d = khz_makeData(m, 0);

  /* 1. the scene settles and sleeps, island by island; contacts stay listed */
  double t = settle(m, d, 5);
  printf("everything asleep at %.3f s; %d pairs listed, %d of them asleep\n", t, d->ncontact,
         d->ncontact_asleep);
  ENSURE(t > 0.5 && t < 4);
  ENSURE(d->body_sleep[BOX1] == d->body_sleep[BOX3] && d->body_sleep[BOX1] != d->body_sleep[BALL] &&
         d->body_sleep[BALL] != d->body_sleep[FAR]);
  ENSURE(d->body_sleep[BOX1] == 1 + BOX1 && d->body_sleep[FAR] == 1 + FAR); /* label: smallest root */
  khz_step(m, d);
  ENSURE(d->ncontact == 5 && d->ncontact_asleep == 5); /* 3 on the ground and 2 in the column */

  /* 2. frozen bit for bit: q, qd, energy, the contact list; nothing collided */
  size_t n = khz_stateSize(m);
  unsigned char *before = malloc(n), *after = malloc(n);
  khzContact c0 = d->contact[3];
  double e0 = energy(m, d);
  khz_saveState(m, d, before);
  for (int k = 0; k < 1000; k++) khz_step(m, d);
  khz_saveState(m, d, after);
  /* the time differs; everything after it must not */
  ENSURE(memcmp(before + sizeof(double), after + sizeof(double), n - sizeof(double)) == 0);
  ENSURE(energy(m, d) == e0);
  for (int k = 0; k < m->nv; k++) ENSURE(d->qd[k] == 0 && d->qdd[k] == 0);
  ENSURE(memcmp(&c0, &d->contact[3], sizeof c0) == 0);

  /* 3. a wrench on the column's top box wakes the column only */
  khzData *w = khz_makeData(m, 0);
  khz_copyState(m, w, d);
  heap_counting = 1;
  w->xfrc[6 * BOX3 + 0] = 300; /* a push along x, at the com: 0.3 m/s */
  khz_step(m, w);
  w->xfrc[6 * BOX3 + 0] = 0;
  ENSURE(asleep(m, w, BOX1, BOX3) == 0 && asleep(m, w, BALL, FAR) == 2);
  ENSURE(w->qd[m->jnt_dofadr[BOX3]] > 0);
  double t2 = settle(m, w, w->time + 5);
  ENSURE(t2 > 0);
  heap_counting = 0;
  printf("a wrench woke the column (ball and far box asleep); asleep again %.3f s later\n", t2 - d->time - 0.001);

  /* 4. a torque on the ball, and a velocity written into the far box, wake them alone */
  khz_copyState(m, w, d);
  khz_step(m, w);
  w->tau[m->jnt_dofadr[BALL] + 3] = 1e-3;
  khz_step(m, w);
  ENSURE(!khz_bodySleeping(m, w, BALL) && asleep(m, w, BOX1, BOX3) == 3 && khz_bodySleeping(m, w, FAR));
  w->tau[m->jnt_dofadr[BALL] + 3] = 0;
  w->qd[m->jnt_dofadr[FAR]] = 0.2;
  khz_step(m, w);
  ENSURE(!khz_bodySleeping(m, w, FAR) && asleep(m, w, BOX1, BOX3) == 3);

  /* 5. the far box moved above the column (khz_wake after writing q) drops on
   * it: the contact with an awake body wakes the column, not the ball */
  khz_copyState(m, w, d);
  heap_counting = 1;
  int qa = m->jnt_qadr[FAR];
  w->q[qa] = 0, w->q[qa + 2] = 0.40;
  khz_wake(m, w, FAR);
  ENSURE(!khz_bodySleeping(m, w, FAR) && asleep(m, w, BOX1, BOX3) == 3);
  int woke = 0;
  double hit = -1;
  for (int k = 0; k < 300 && !woke; k++) {
    khz_step(m, w);
    if (asleep(m, w, BOX1, BOX3) == 0) woke = 1, hit = w->time;
  }
  ENSURE(woke && khz_bodySleeping(m, w, BALL));
  double t3 = settle(m, w, w->time + 6);
  heap_counting = 0;
  printf("the dropped box woke the column at %.3f s (ball asleep); all asleep again at %.3f s, "
         "dropped box at z = %.4f m\n", hit, t3, w->q[qa + 2]);
  ENSURE(t3 > 0 && fabs(w->q[qa + 2] - 0.35) < 0.005);
  printf("heap calls while sleeping and waking: %ld\n", heap_calls);
  ENSURE(heap_calls == 0);
  ENSURE(w->warning[KHZ_WARN_STACK] == 0 && d->warning[KHZ_WARN_STACK] == 0);

  /* 6. determinism: the same inputs give the same bits, through sleep and
   * wake, also from a restored state */
  khzData *a = khz_makeData(m, 0), *b = khz_makeData(m, 0);
  for (int k = 0; k < 4000; k++) {
    if (k == 2500) a->xfrc[6 * BOX2 + 1] = b->xfrc[6 * BOX2 + 1] = 5;
    if (k == 2501) a->xfrc[6 * BOX2 + 1] = b->xfrc[6 * BOX2 + 1] = 0;
    if (k == 2000) { /* b goes through a save and a restore while asleep */
      khz_saveState(m, b, before);
      khz_resetData(m, b);
      khz_restoreState(m, b, before);
    }
    khz_step(m, a), khz_step(m, b);
  }
  ENSURE(khz_hashState(m, a) == khz_hashState(m, b));
  ENSURE(asleep(m, a, 1, NBODY - 1) == NBODY - 1);

  /* 7. a body held still by a constant wrench (1 N sideways, below
   * friction) is not idle: it stays awake while the others sleep */
  khz_resetData(m, w);
  for (int k = 0; k < 3000; k++) {
    w->xfrc[6 * FAR + 1] = 1;
    khz_step(m, w);
  }
  ENSURE(!khz_bodySleeping(m, w, FAR) && asleep(m, w, BOX1, BALL) == 4);
  w->xfrc[6 * FAR + 1] = 0;

  /* 8. sleeping off: by the scene, and switched off at run time */
  khzModel *m0 = scene(0);
  khzData *z = khz_makeData(m0, 0);
  ENSURE(z->sleep_enabled == 0 && settle(m0, z, 5) < 0 && asleep(m0, z, 1, NBODY - 1) == 0);
  khz_copyState(m, w, d);
  w->sleep_enabled = 0;
  khz_step(m, w);
  ENSURE(asleep(m, w, 1, NBODY - 1) == 0);
  for (int k = 0; k < 3000; k++) khz_step(m, w);
  ENSURE(asleep(m, w, 1, NBODY - 1) == 0);

  /* 9. the public khz_collide between steps while islands sleep: the list
   * comes back whole (the sleeping pairs in front) at the same address, and
   * the steps after it keep it there (a shift left pending made them write
   * past the contact array); a sleeping pair still reports the force that
   * holds its body up: the far box's ground contact its weight */
  khz_step(m, d); /* d: asleep since 1 (a copy would list its sleeping pairs only once they wake) */
  ENSURE(asleep(m, d, 1, NBODY - 1) == NBODY - 1 && d->ncontact == 5 && d->ncontact_asleep == 5);
  khzContact *base = d->contact;
  for (int k = 0; k < 3; k++) {
    ENSURE(khz_collide(m, d) == 5 && d->contact == base && d->ncontact_asleep == 5);
    khz_step(m, d);
    ENSURE(d->contact == base && d->ncontact == 5 && d->ncontact_asleep == 5);
  }
  for (int k = 0; k < 100; k++) khz_step(m, d);
  ENSURE(d->contact == base && d->ncontact == 5 && asleep(m, d, 1, NBODY - 1) == NBODY - 1);
  double fz = 0;
  for (int i = 0; i < d->ncontact; i++) {
    const khzContact *c = &d->contact[i];
    if (c->body[0] != FAR && c->body[1] != FAR) continue;
    for (int k = 0; k < c->npoint; k++)
      fz += (c->body[0] == FAR ? 1 : -1) * d->cpoint[c->point_adr + k].force[2];
  }
  printf("khz_collide between steps: the list stays whole; the sleeping far box's contact holds %.4f N "
         "(weight %.4f N)\n", fz, 9.81);
  ENSURE(fabs(fz - 9.81) < 0.01 * 9.81);

  /* 10. a sleeping pair keeps the forces it had when it fell asleep, its
   * implicit part included. The light box's ground pair carries the column,
   * most of it through the implicit part; a point's force holds the whole of
   * it (explicit + implicit) and force_implicit tells the implicit share. The
   * step used to zero every point's force_implicit, the sleeping pairs' too,
   * and the share read 0 while the force still held it all. */
  khzModel *mc = light_column();
  if (!mc) return ensure_report();
  khzData *dc = khz_makeData(mc, 0);
  double fn_awake = 0, fi_awake = 0, fn = 0, fimp = 0, weight = 20.05 * 9.81;
  while (dc->time < 5 && asleep(mc, dc, 1, 2) < 2) { /* the pushed box may sleep too */
    khz_step(mc, dc);
    if (asleep(mc, dc, 1, 2) == 0) ground_force(dc, &fn_awake, &fi_awake);
  }
  ENSURE(asleep(mc, dc, 1, 2) == 2);
  /* a third box pushed along the ground stays awake: the contact stages run */
  for (int k = 0; k < 50; k++) {
    dc->xfrc[6 * 3 + 0] = 20; /* a push along x at the com */
    khz_step(mc, dc);
  }
  ENSURE(asleep(mc, dc, 1, 2) == 2 && !khz_bodySleeping(mc, dc, 3) && dc->ncontact_asleep == 2 &&
         dc->ncontact == 3);
  ground_force(dc, &fn, &fimp);
  printf("light box under 20 kg: ground pair holds %.3f N awake (%.3f N implicit), %.3f N asleep (%.3f N "
         "implicit); weight %.3f N\n", fn_awake, fi_awake, fn, fimp, weight);
  ENSURE(fabs(fn_awake - weight) < 0.01 * weight && fabs(fn - weight) < 0.01 * weight);
  ENSURE(fi_awake > 0.5 * weight); /* the case needs the implicit part to show */
  ENSURE(fabs(fimp - fi_awake) < 0.01 * weight);
  khz_deleteData(&dc);
  khz_deleteModel(&mc);

  /* 11. a robot sleeps as a tree: lying on the ground with no torque, its
   * links and its welded base fall asleep together (one label), frozen bit
   * for bit; a torque on the elbow wakes the whole tree, shoulder included;
   * held against the ground by a constant torque it never sleeps */
  khzModel *mr = robot();
  if (!mr) return ensure_report();
  ENSURE(khz_bodyCanSleep(mr, RBASE) && !khz_bodyCanSleep(mr, LINK1) && !khz_bodyCanSleep(mr, LINK2));
  ENSURE(mr->ntree_moving == 1); /* the quiet step's count (14): the robot's tree */
  khzData *r = khz_makeData(mr, 0), *rh = khz_makeData(mr, 0);
  while (r->time < 5 && asleep(mr, r, RBASE, LINK2) < 3) khz_step(mr, r);
  double t_robot = r->time;
  ENSURE(asleep(mr, r, RBASE, LINK2) == 3 && r->body_sleep[LINK1] == r->body_sleep[LINK2] &&
         r->body_sleep[RBASE] == r->body_sleep[LINK1] && r->body_sleep[0] == 1);
  printf("the robot lying on the ground sleeps at %.3f s (shoulder %.4f rad, elbow %.4f rad)\n", t_robot,
         r->q[mr->jnt_qadr[LINK1]], r->q[mr->jnt_qadr[LINK2]]);
  ENSURE(r->q[mr->jnt_qadr[LINK1]] > 0.1); /* it fell: the shoulder turned down */
  size_t nr = khz_stateSize(mr);
  unsigned char *rb = malloc(nr), *ra = malloc(nr);
  khz_saveState(mr, r, rb);
  heap_counting = 1;
  for (int k = 0; k < 500; k++) khz_step(mr, r);
  khz_saveState(mr, r, ra);
  ENSURE(memcmp(rb + sizeof(double), ra + sizeof(double), nr - sizeof(double)) == 0);
  ENSURE(r->qd[0] == 0 && r->qd[1] == 0 && r->ncontact_asleep == r->ncontact && r->ncontact > 0);
  r->tau[mr->jnt_dofadr[LINK2]] = -2; /* lifts the forearm */
  khz_step(mr, r);
  r->tau[mr->jnt_dofadr[LINK2]] = 0;
  ENSURE(asleep(mr, r, RBASE, LINK2) == 0 && r->qd[mr->jnt_dofadr[LINK2]] < 0);
  while (r->time < t_robot + 6 && asleep(mr, r, RBASE, LINK2) < 3) khz_step(mr, r);
  ENSURE(asleep(mr, r, RBASE, LINK2) == 3);
  heap_counting = 0;
  printf("a torque on the elbow woke the whole robot; asleep again at %.3f s\n", r->time);
  for (int k = 0; k < 4000; k++) {
    rh->tau[mr->jnt_dofadr[LINK1]] = 0.5; /* pushes the arm into the ground */
    khz_step(mr, rh);
  }
  ENSURE(asleep(mr, rh, RBASE, LINK2) == 0);
  ENSURE(heap_calls == 0);
  free(rb), free(ra);
  khz_deleteData(&r), khz_deleteData(&rh);
  khz_deleteModel(&mr);

  quiet_throw(m, d);
  quiet_overflow();
  quiet_step(m, d);

  free(before), free(after);
  khz_deleteData(&a), khz_deleteData(&b), khz_deleteData(&z), khz_deleteData(&w), khz_deleteData(&d);
  khz_deleteModel(&m0);
  khz_deleteModel(&m);
  return ensure_report();
}
