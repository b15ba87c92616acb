/* test_pairs.c — khz_collide end to end (rt/src/collision/pairs.c): the
 * contact outputs (order, body frames, deepest point), the persistent pair
 * slots across calls, full buffers that degrade with a warning, a stack too
 * small, the method names, determinism, and zero heap allocations in 1000
 * calls on a mixed pile (malloc & co. wrapped at link time). */
#include "col_util.h"
#include "spatial.h"
#include "heap_count.h"

static const double up[4] = {1, 0, 0, 0};

/* n unit boxes in a row above the ground (geom i on body i + 1, the ground last) */
static khzModel *row_of_boxes(int n, int max_pairs, int max_points) {
  khzSpec *s = khz_spec_new();
  for (int i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof name, "box%d", i);
    cu_geom(s, cu_body(s, name), KHZ_GEOM_BOX, 0.5, 0.5, 0.5);
  }
  cu_geom(s, 0, KHZ_GEOM_PLANE, 0, 0, 0);
  khzContactOptions c;
  khz_spec_defaultContact(&c);
  c.max_pairs = max_pairs;
  c.max_points = max_points;
  khz_spec_setContact(s, &c);
  khzModel *m = cu_compile(s);
  khz_spec_destroy(&s);
  return m;
}

static void place(const khzModel *m, khzData *d, int i, double z) {
  cu_pose(m, d, i + 1, (double[3]){2.0 * i, 0, z}, up);
}

/* ------------------------------------------------------------ outputs -- */

static void test_outputs(void) {
  khzModel *m = row_of_boxes(3, 0, 0);
  khzData *d = khz_makeData(m, 0);
  place(m, d, 0, 0.49);
  place(m, d, 1, 0.48);
  place(m, d, 2, 2.0);
  khz_kinematics(m, d);
  ENSURE(khz_collide(m, d) == 2);
  ENSURE(d->ncontact == 2 && d->ncpoint == 16);
  for (int c = 0; c < d->ncontact; c++) {
    const khzContact *ct = &d->contact[c];
    ENSURE(ct->geom[0] == c && ct->geom[1] == 3);
    ENSURE(ct->body[0] == c + 1 && ct->body[1] == 0);
    ENSURE_NEAR(ct->normal[2], 1, 1e-12);
    ENSURE(ct->point_adr == 8 * c && ct->npoint == 8);
    ENSURE_NEAR(d->cpoint[ct->deepest].depth, c ? 0.02 : 0.01, 1e-12);
    for (int i = ct->point_adr; i < ct->point_adr + ct->npoint; i++) {
      /* local coordinates map back to the world point */
      const khzContactPoint *p = &d->cpoint[i];
      for (int k = 0; k < 2; k++) {
        double w[3];
        int b = ct->body[k];
        khzu_mulMatVec3(w, d->xrot + 9 * b, p->local[k]);
        for (int j = 0; j < 3; j++) ENSURE_NEAR(w[j] + d->xpos[3 * b + j], p->pos[j], 1e-12);
      }
      ENSURE(p->depth <= d->cpoint[ct->deepest].depth);
      ENSURE(p->bottom == 0);
    }
  }
  ENSURE(d->warning[KHZ_WARN_CONTACTFULL] == 0);

  /* the same state gives the same bytes */
  khzContact c0[2];
  khzContactPoint p0[16];
  memcpy(c0, d->contact, sizeof c0);
  memcpy(p0, d->cpoint, sizeof p0);
  khz_collide(m, d);
  ENSURE(memcmp(c0, d->contact, sizeof c0) == 0 && memcmp(p0, d->cpoint, sizeof p0) == 0);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* -------------------------------------------------------------- slots -- */

static void test_slots(void) {
  khzModel *m = row_of_boxes(3, 0, 0);
  khzData *d = khz_makeData(m, 0);
  for (int s = 0; s < m->npair_max; s++) ENSURE(d->pair[s].geom[0] == -1);

  /* boxes 0 and 1 touch the ground: slots 0 and 1, fresh */
  place(m, d, 0, 0.49), place(m, d, 1, 0.49), place(m, d, 2, 2);
  khz_kinematics(m, d);
  ENSURE(khz_collide(m, d) == 2);
  ENSURE(d->contact[0].slot == 0 && d->contact[1].slot == 1);
  ENSURE(d->pair[0].geom[0] == 0 && d->pair[0].geom[1] == 3);
  ENSURE(d->pair[1].geom[0] == 1 && d->pair[1].geom[1] == 3);
  ENSURE(d->pair[1].phase == KHZ_PHASE_NONE && d->pair[1].integral == 0 && d->pair[1].nanchor == 0);

  /* the penalty method writes its state */
  for (int s = 0; s < 2; s++) {
    d->pair[s].phase = KHZ_PHASE_RESTING;
    d->pair[s].integral = 5 + s;
    d->pair[s].nanchor = 1;
    d->pair[s].anchor_feature[0] = 7;
    d->pair[s].anchor[0][0] = 0.25;
  }

  /* box 0 lifts off, box 2 lands: box 1 keeps its slot and state, box 0's slot
   * is freed and zeroed, then reused, fresh, by box 2 */
  place(m, d, 0, 2), place(m, d, 2, 0.49);
  khz_kinematics(m, d);
  ENSURE(khz_collide(m, d) == 2);
  ENSURE(d->contact[0].geom[0] == 1 && d->contact[0].slot == 1);
  ENSURE(d->pair[1].integral == 6 && d->pair[1].phase == KHZ_PHASE_RESTING);
  ENSURE(d->pair[1].nanchor == 1 && d->pair[1].anchor[0][0] == 0.25);
  ENSURE(d->contact[1].geom[0] == 2 && d->contact[1].slot == 0);
  ENSURE(d->pair[0].geom[0] == 2 && d->pair[0].integral == 0 && d->pair[0].nanchor == 0);
  ENSURE(d->pair[0].phase == KHZ_PHASE_NONE && d->pair[0].anchor[0][0] == 0);

  /* all apart: every slot free and zeroed */
  place(m, d, 1, 2), place(m, d, 2, 2);
  khz_kinematics(m, d);
  ENSURE(khz_collide(m, d) == 0);
  for (int s = 0; s < m->npair_max; s++) {
    ENSURE(d->pair[s].geom[0] == -1 && d->pair[s].geom[1] == -1);
    ENSURE(d->pair[s].integral == 0 && d->pair[s].nanchor == 0 && d->pair[s].phase == 0);
  }

  /* a restored state with a stale pair of out-of-range geoms is cleaned */
  d->pair[3].geom[0] = 0, d->pair[3].geom[1] = 99;
  khz_collide(m, d);
  ENSURE(d->pair[3].geom[0] == -1);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* ---------------------------------------------------------- full -- */

static void test_full(void) {
  /* 4 boxes in contact, room for 2 pairs of 3 points */
  khzModel *m = row_of_boxes(4, 2, 3);
  khzData *d = khz_makeData(m, 0);
  for (int i = 0; i < 4; i++) place(m, d, i, 0.5 - 0.01 * (i + 1));
  khz_kinematics(m, d);
  ENSURE(khz_collide(m, d) == 2);
  ENSURE(d->warning[KHZ_WARN_CONTACTFULL] == 1);
  ENSURE(d->ncpoint == 6);
  for (int c = 0; c < 2; c++) {
    ENSURE(d->contact[c].geom[0] == c && d->contact[c].npoint == 3);
    for (int i = 0; i < 3; i++)
      ENSURE_NEAR(d->cpoint[d->contact[c].point_adr + i].depth, 0.01 * (c + 1), 1e-12);
  }
  khz_collide(m, d);
  ENSURE(d->warning[KHZ_WARN_CONTACTFULL] == 2);
  khz_deleteData(&d);

  /* a stack too small: nothing found, a stack warning, the slots untouched */
  d = khz_makeData(m, 512);
  for (int i = 0; i < 4; i++) place(m, d, i, 0.49);
  khz_kinematics(m, d);
  d->pair[0].geom[0] = 0, d->pair[0].geom[1] = 4, d->pair[0].integral = 3;
  ENSURE(khz_collide(m, d) == 0);
  ENSURE(d->warning[KHZ_WARN_STACK] > 0);
  ENSURE(d->pair[0].integral == 3);
  ENSURE(d->stack_top == 0);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* a standing cylinder (16 rim points at full depth) with room for 8: the kept
 * points surround the axis, not one side of the rim */
static void test_footprint(void) {
  khzSpec *s = khz_spec_new();
  int b = cu_body(s, "can");
  cu_geom(s, b, KHZ_GEOM_CYLINDER, 0.2, 0.3, 0);
  cu_geom(s, 0, KHZ_GEOM_PLANE, 0, 0, 0);
  khzContactOptions c;
  khz_spec_defaultContact(&c);
  c.max_points = 8;
  khz_spec_setContact(s, &c);
  khzModel *m = cu_compile(s);
  khz_spec_destroy(&s);
  khzData *d = khz_makeData(m, 0);
  cu_pose(m, d, b, (double[3]){1, 2, 0.3 - 0.002}, up);
  khz_kinematics(m, d);
  ENSURE(khz_collide(m, d) == 1);
  ENSURE(d->contact[0].npoint == 8 && d->warning[KHZ_WARN_CONTACTFULL] == 1);
  double cx = 0, cy = 0;
  for (int i = 0; i < 8; i++) {
    ENSURE_NEAR(d->cpoint[i].depth, 0.002, 1e-12);
    cx += d->cpoint[i].pos[0] / 8, cy += d->cpoint[i].pos[1] / 8;
  }
  ENSURE_MSG(hypot(cx - 1, cy - 2) < 0.05, "kept points centred %g m off the axis", hypot(cx - 1, cy - 2));
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

static void test_names(void) {
  ENSURE(strcmp(khz_contactMethodName(KHZ_CONTACT_NONE), "none") == 0);
  ENSURE(strcmp(khz_contactMethodName(KHZ_CONTACT_PENALTY), "penalty") == 0);
  ENSURE(strcmp(khz_contactMethodName(KHZ_CONTACT_DEEPEST), "deepest") == 0);
  ENSURE(strcmp(khz_contactMethodName((khzContactMethod)42), "unknown") == 0);
  for (int i = 0; i < KHZ_CONTACT_NMETHODS; i++)
    ENSURE(khz_contactMethodFromName(khz_contactMethodName((khzContactMethod)i)) == i);
  ENSURE(khz_contactMethodFromName("lcp") == KHZ_CONTACT_LCP && khz_contactMethodFromName(NULL) == -1);
}

/* ------------------------------------------------------- allocations -- */

/* every shape class in a resting pile: 12 bodies on the ground, 12 resting on
 * them, 1 mm deep; their bodies, places and turns */
enum { PILE_N = 24 };
static khzModel *mixed_pile(int *bodies, double (*pos)[3], double (*quat)[4]) {
  khzSpec *s = khz_spec_new();
  int hull = cu_boxMesh(s, "hull", 0.2, 0.15, 0.1), ball = cu_sphereMesh(s, "ball", 0.2, 8, 12);
  int nb = PILE_N;
  double half[PILE_N];
  for (int i = 0; i < nb; i++) {
    char name[16];
    snprintf(name, sizeof name, "b%d", i);
    int b = bodies[i] = cu_body(s, name);
    double yaw[4];
    cu_axisQuat(yaw, 0, 0, 1, cu_uniform(0, 2 * M_PI));
    memcpy(quat[i], yaw, sizeof yaw);
    switch ((i + i / 12) % 6) {
      case 0: cu_geom(s, b, KHZ_GEOM_BOX, 0.2, 0.15, 0.1), half[i] = 0.1; break;
      case 1: cu_geom(s, b, KHZ_GEOM_SPHERE, 0.15, 0, 0), half[i] = 0.15; break;
      case 2: {
        /* a capsule lying down: roll it onto its side, then yaw */
        double r[4], q[4];
        cu_geom(s, b, KHZ_GEOM_CAPSULE, 0.1, 0.15, 0), half[i] = 0.1;
        cu_axisQuat(r, 1, 0, 0, M_PI / 2);
        q[0] = yaw[0] * r[0] - yaw[3] * r[3];
        q[1] = yaw[0] * r[1] - yaw[3] * r[2];
        q[2] = yaw[0] * r[2] + yaw[3] * r[1];
        q[3] = yaw[0] * r[3] + yaw[3] * r[0];
        memcpy(quat[i], q, sizeof q);
        break;
      }
      case 3: cu_geom(s, b, KHZ_GEOM_CYLINDER, 0.15, 0.1, 0), half[i] = 0.1; break;
      case 4: cu_meshGeom(s, b, hull, 1), half[i] = 0.1; break;
      default: cu_meshGeom(s, b, ball, 0), half[i] = 0.2; break;
    }
  }
  for (int i = 0; i < 12; i++) {
    pos[i][0] = 0.6 * (i % 4), pos[i][1] = 0.6 * (i / 4), pos[i][2] = half[i] - 0.001;
    int j = i + 12;
    pos[j][0] = pos[i][0] + 0.02, pos[j][1] = pos[i][1] - 0.01;
    pos[j][2] = 2 * half[i] - 0.001 + half[j] - 0.001;
  }
  cu_geom(s, 0, KHZ_GEOM_PLANE, 0, 0, 0);
  khzModel *m = cu_compile(s);
  khz_spec_destroy(&s);
  return m;
}

/* the mixed pile, slightly bobbing; zero heap calls, and the time per call */
static void test_alloc(void) {
  int nb = PILE_N, bodies[PILE_N];
  double quat[PILE_N][4], pos[PILE_N][3];
  khzModel *m = mixed_pile(bodies, pos, quat);
  khzData *d = khz_makeData(m, 0);
  int total = 0, maxc = 0;
  long points = 0;
  double tk = 0, tc = 0;
  heap_counting = 1;
  for (int step = 0; step < 1000; step++) {
    for (int i = 0; i < nb; i++) {
      double p[3] = {pos[i][0], pos[i][1], pos[i][2] + 0.0004 * sin(0.01 * step + i)};
      cu_pose(m, d, bodies[i], p, quat[i]);
    }
    double t0 = cu_now();
    khz_kinematics(m, d);
    double t1 = cu_now();
    int n = khz_collide(m, d);
    tc += cu_now() - t1, tk += t1 - t0;
    total += n;
    points += d->ncpoint;
    if (n > maxc) maxc = n;
  }
  heap_counting = 0;
  printf("resting pile of %d bodies (every shape class): %ld heap calls in 1000 khz_collide; "
         "%.1f pairs and %.0f points per call; %.1f us per khz_collide (kinematics %.1f us)\n",
         nb, heap_calls, total / 1000.0, points / 1000.0, 1e6 * tc / 1000, 1e6 * tk / 1000);
  ENSURE(heap_calls == 0);
  ENSURE(total >= 20 * 1000); /* every body on the ground or on another */
  ENSURE(d->warning[KHZ_WARN_STACK] == 0 && d->warning[KHZ_WARN_CONTACTFULL] == 0);
  ENSURE(d->stack_top == 0);
  khz_deleteData(&d);

  /* khz_collisionStackBytes is enough: a data with exactly that stack */
  size_t need = khz_collisionStackBytes(m);
  d = khz_makeData(m, need);
  for (int i = 0; i < nb; i++) cu_pose(m, d, bodies[i], pos[i], quat[i]);
  khz_kinematics(m, d);
  ENSURE(khz_collide(m, d) >= 20 && d->warning[KHZ_WARN_STACK] == 0);
  printf("khz_collide needs %zu bytes of stack here\n", need);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* The collision pass makes each geom's view (khz_shape_make) once, at its
 * first pair, and keeps it for the pass (pairs.c, pass_shape). Every
 * contact must be the one khz_narrowphase gives the pair on its own (which
 * makes both views afresh), bit for bit: the mixed pile bobbing over 300
 * passes, the same normal and points (place, depth, weight, feature) for
 * every contact. Fails with the views kept from one pass to the next (stale
 * poses) or a pair given another geom's view. */
static void test_pass_views(void) {
  int nb = PILE_N, bodies[PILE_N];
  double quat[PILE_N][4], pos[PILE_N][3];
  khzModel *m = mixed_pile(bodies, pos, quat);
  khzData *d = khz_makeData(m, 0);
  static cu_pair p;
  int bad = 0, total = 0;
  for (int step = 0; step < 300; step++) {
    for (int i = 0; i < nb; i++) {
      double x[3] = {pos[i][0], pos[i][1], pos[i][2] + 0.0004 * sin(0.05 * step + i)};
      cu_pose(m, d, bodies[i], x, quat[i]);
    }
    khz_kinematics(m, d);
    int n = khz_collide(m, d);
    total += n;
    for (int c = 0; c < n; c++) {
      const khzContact *con = &d->contact[c];
      int same = cu_collidePair(m, d, con->geom[0], con->geom[1], &p) && p.out.npt == con->npoint &&
                 !memcmp(con->normal, p.out.normal, sizeof con->normal);
      for (int i = 0; same && i < con->npoint; i++) {
        const khzContactPoint *q = &d->cpoint[con->point_adr + i];
        const khzColPoint *r = &p.out.pt[i];
        same = !memcmp(q->pos, r->pos, sizeof q->pos) && !memcmp(&q->depth, &r->depth, sizeof q->depth) &&
               !memcmp(&q->weight, &r->weight, sizeof q->weight) && q->feature == r->feature;
      }
      bad += !same;
    }
  }
  printf("pass views: %d contacts in 300 passes, %d differ from the pair's own narrow phase\n", total, bad);
  ENSURE(total >= 20 * 300);
  ENSURE_MSG(bad == 0, "%d of %d contacts differ from the pair's own narrow phase", bad, total);
  ENSURE(d->warning[KHZ_WARN_STACK] == 0);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

/* Contact reuse (khz_contactReuse, pairs.c): the mixed pile, every body
 * bobbing by at most 1e-7 m about its place (a step moves it by at most
 * 5e-9 m), and every 40 passes each body jumped by (1 + i) x 1e-5 m for a
 * pass, so that every pair's points move by more than the bound relative
 * to each other. Bound 1e-7 m. Every contact against the pair's own narrow
 * phase: at a jump every one must be it bit for bit (recomputed past the
 * bound); otherwise a contact either is it bit for bit (recomputed) or is a
 * reuse: the same normal feature by feature, and each depth within 5 % of
 * the bound of the narrow phase's (translations only here: the first-order
 * depth is exact for the flat faces and within d^2 / r for the round ones).
 * Fails with the bound's test removed (the jumps' contacts are reused),
 * and with the depths not carried (off by up to the bound). */
static void test_contact_reuse(void) {
  int nb = PILE_N, bodies[PILE_N];
  double quat[PILE_N][4], pos[PILE_N][3], bound = 1e-7;
  khzModel *m = mixed_pile(bodies, pos, quat);
  khzData *d = khz_makeData(m, 0);
  ENSURE(khz_contactReuse(m, d, bound) == 0);
  static cu_pair p;
  int total = 0, reused = 0, jump_bad = 0, bad = 0, feat = 0, counted = 0;
  double worst = 0;
  for (int step = 0; step < 400; step++) {
    int jump = step % 40 == 39;
    for (int i = 0; i < nb; i++) {
      double x[3] = {pos[i][0], pos[i][1], pos[i][2] + 1e-7 * sin(0.05 * step + i) + (jump ? 1e-5 * (1 + i) : 0)};
      cu_pose(m, d, bodies[i], x, quat[i]);
    }
    khz_kinematics(m, d);
    int n = khz_collide(m, d);
    total += n;
    counted += d->reuse_count;
    for (int c = 0; c < n; c++) {
      const khzContact *con = &d->contact[c];
      int found = cu_collidePair(m, d, con->geom[0], con->geom[1], &p);
      int same = found && p.out.npt == con->npoint && !memcmp(con->normal, p.out.normal, sizeof con->normal);
      for (int i = 0; same && i < con->npoint; i++) {
        const khzContactPoint *q = &d->cpoint[con->point_adr + i];
        const khzColPoint *r = &p.out.pt[i];
        same = !memcmp(q->pos, r->pos, sizeof q->pos) && !memcmp(&q->depth, &r->depth, sizeof q->depth) &&
               q->feature == r->feature;
      }
      if (same) continue;
      if (jump) {
        jump_bad++;
        continue;
      }
      reused++;
      if (!found || p.out.npt != con->npoint) {
        feat++;
        continue;
      }
      for (int i = 0; i < con->npoint; i++) {
        const khzContactPoint *q = &d->cpoint[con->point_adr + i];
        const khzColPoint *r = &p.out.pt[i];
        if (q->feature != r->feature) {
          feat++;
          break;
        }
        double e = fabs(q->depth - r->depth);
        if (e > worst) worst = e;
        bad += e > 0.05 * bound;
        if (e > 0.05 * bound && bad < 6)
          printf("  step %d pair %d-%d (types %d %d) point %d feature %x side %d: reused %.12g fresh %.12g normal %g %g %g fresh %g %g %g\n", step, con->geom[0], con->geom[1],
                 m->geom_type[con->geom[0]], m->geom_type[con->geom[1]], i, q->feature, r->side, q->depth, r->depth, con->normal[0], con->normal[1], con->normal[2], p.out.normal[0], p.out.normal[1], p.out.normal[2]);
      }
    }
  }
  printf("contact reuse: %d contacts in 400 passes, %d reused (%d counted), depth error at most %.3g m, "
         "%d feature lists differ, %d points off, %d differ at the jumps\n",
         total, reused, counted, worst, feat, bad, jump_bad);
  ENSURE(reused > total / 4 && reused <= counted); /* a reuse can be the narrow phase's bits too */
  ENSURE_MSG(jump_bad == 0, "%d contacts kept across a jump past the bound", jump_bad);
  ENSURE(feat == 0 && bad == 0);
  /* off again: the narrow phase's answer for every pair */
  ENSURE(khz_contactReuse(m, d, 0) == 0);
  khz_collide(m, d);
  ENSURE(d->reuse_count == 0);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

int main(void) {
  test_outputs();
  test_slots();
  test_full();
  test_footprint();
  test_names();
  test_alloc();
  test_pass_views();
  test_contact_reuse();
  return ensure_report();
}
