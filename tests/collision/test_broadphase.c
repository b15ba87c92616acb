/* test_broadphase.c — the broad phase (rt/src/collision/broadphase.c): the
 * sweep-and-prune pairs equal the brute-force O(n^2) set of overlapping,
 * filtered boxes on 300 random bodies (several densities and sweep axes), the
 * filters one by one (same body, welded bodies, parent and child, two bodies
 * welded to the world, contype / conaffinity, visual geoms, the model's
 * excluded body pairs), the radix sort, the sort from the last call's order,
 * and the time per call for 15 / 60 / 240 / 960 bodies (information only). */
#include "col_util.h"

/* n bodies of random shapes at random poses in a box of side L (flattened in
 * y and z by flat; column = 1 stacks them along z), and a ground plane. Each
 * body slides on a prismatic joint, so that it moves (is not welded to the
 * world) while the model stays cheap to compile (khz_compile factors the
 * dense mass matrix) */
static khzModel *random_world_types(int n, double L, double flat, int column, int floor_only);
static khzModel *random_world(int n, double L, double flat, int column) {
  return random_world_types(n, L, flat, column, 0);
}

/* floor_only 1: as MuJoCo's humanoid in bench_peers (ground_contacts_only),
 * the bodies' geoms contype 2, conaffinity 1 and the plane's 1, 2: only the
 * plane's pairs pass the filter; 2: the same, but every seventh geom also
 * has conaffinity 2, so that it meets the others */
static int plane_first; /* 1: the ground plane is geom 0 (its pairs one run of the pair sort) */
static khzModel *random_world_types(int n, double L, double flat, int column, int floor_only) {
  khzSpec *s = khz_spec_new();
  if (plane_first) cu_geom(s, 0, KHZ_GEOM_PLANE, 0, 0, 0);
  int hull = cu_boxMesh(s, "hull", 0.3, 0.2, 0.1);
  for (int i = 0; i < n; i++) {
    khzBodySpec bs;
    khz_spec_defaultBody(&bs);
    snprintf(bs.name, sizeof bs.name, "b%d", i);
    snprintf(bs.joint_name, sizeof bs.joint_name, "j%d", i);
    bs.joint_type = KHZ_JOINT_PRISMATIC;
    bs.mass = 1;
    bs.inertia[0] = bs.inertia[1] = bs.inertia[2] = 0.01;
    if (column) {
      bs.pos[0] = 0.1 * cu_rand(), bs.pos[1] = 0.1 * cu_rand(), bs.pos[2] = 0.2 * i;
    } else {
      bs.pos[0] = cu_uniform(0, L), bs.pos[1] = cu_uniform(0, L * flat);
      bs.pos[2] = cu_uniform(-0.3, L * flat);
    }
    cu_randQuat(bs.quat);
    int b = khz_spec_addBody(s, &bs);
    double r0 = cu_uniform(0.05, 0.4), r1 = cu_uniform(0.05, 0.4), r2 = cu_uniform(0.05, 0.4);
    switch (i % 6) {
      case 0: cu_geom(s, b, KHZ_GEOM_BOX, r0, r1, r2); break;
      case 1: cu_geom(s, b, KHZ_GEOM_SPHERE, r0, 0, 0); break;
      case 2: cu_geom(s, b, KHZ_GEOM_CAPSULE, 0.5 * r0, r1, 0); break;
      case 3: cu_geom(s, b, KHZ_GEOM_CYLINDER, 0.75 * r0, 0.75 * r1, 0); break;
      case 4: cu_meshGeom(s, b, hull, 1); break;
      default: {
        /* two geoms on one body: never a pair of their own */
        cu_geom(s, b, KHZ_GEOM_SPHERE, 0.2, 0, 0);
        khzGeomSpec g;
        khz_spec_defaultGeom(&g);
        g.body = b, g.type = KHZ_GEOM_BOX, g.size[0] = g.size[1] = g.size[2] = 0.15;
        g.pos[0] = 0.1;
        khz_spec_addGeom(s, &g);
      }
    }
  }
  if (!plane_first) cu_geom(s, 0, KHZ_GEOM_PLANE, 0, 0, 0);
  for (int g = 0; floor_only && g < khz_spec_ngeom(s); g++) {
    khzGeomSpec *gs = khz_spec_geom(s, g);
    gs->contype = gs->body == 0 ? 1 : 2;
    gs->conaffinity = gs->body == 0 ? 2 : g % 7 == 3 && floor_only == 2 ? 3 : 1;
  }
  khzModel *m = cu_compile(s);
  khz_spec_destroy(&s);
  return m;
}

/* the brute-force pair set */
static int brute(const khzModel *m, const double *aabb, uint64_t *out) {
  int n = 0;
  for (int i = 0; i < m->ngeom; i++)
    for (int j = i + 1; j < m->ngeom; j++) {
      if (!khz_collisionFilter(m, i, j)) continue;
      const double *a = aabb + 6 * i, *b = aabb + 6 * j;
      int overlap = 1;
      for (int k = 0; k < 3; k++) overlap &= a[k] <= b[3 + k] && b[k] <= a[3 + k];
      if (m->geom_type[i] == KHZ_GEOM_PLANE || m->geom_type[j] == KHZ_GEOM_PLANE) {
        /* the plane here is z <= 0 of the world */
        const double *box = m->geom_type[i] == KHZ_GEOM_PLANE ? b : a;
        overlap = box[2] <= 0;
      }
      if (overlap) out[n++] = ((uint64_t)i << 32) | (uint64_t)j;
    }
  return n;
}

static void test_brute_force(void) {
  for (int trial = 0; trial < 12; trial++) {
    /* dense and sparse, a flat layer (sweep along x) and a column (sweep along z) */
    double L = trial % 3 == 0 ? 3 : trial % 3 == 1 ? 8 : 20, flat = trial % 4 == 3 ? 0.1 : 1;
    khzModel *m = random_world(300, L, flat, trial == 11);
    khzData *d = khz_makeData(m, 0);
    int ng = m->ngeom, overflow;
    double *frame = malloc(12 * ng * sizeof(double)), *aabb = malloc(6 * ng * sizeof(double));
    uint64_t *sap = malloc(ng * ng * sizeof(uint64_t)), *bf = malloc(ng * ng * sizeof(uint64_t));
    khz_collisionFrames(m, d, frame, aabb);
    int n = khz_broadphase(m, d, frame, aabb, sap, ng * ng, &overflow);
    int nb = brute(m, aabb, bf);
    ENSURE_MSG(n == nb, "trial %d: sweep-and-prune %d pairs, brute force %d", trial, n, nb);
    ENSURE(overflow == 0);
    int same = n == nb;
    for (int i = 0; same && i < n; i++) same = sap[i] == bf[i];
    ENSURE_MSG(same, "trial %d: the pair sets differ", trial);
    if (trial < 3 || trial == 11)
      printf("300 bodies (%d geoms) in %s: %d candidate pairs, the same as brute force\n", ng,
             trial == 11 ? "a column" : trial == 0 ? "3 m" : trial == 1 ? "8 m" : "20 m", n);

    /* a full pair buffer: what fits, and the overflow count */
    if (trial == 0) {
      int some = khz_broadphase(m, d, frame, aabb, sap, 10, &overflow);
      ENSURE(some == 10 && overflow == n - 10);
    }
    ENSURE(d->stack_top == 0);
    free(frame), free(aabb), free(sap), free(bf);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
}

/* khzColModel.bounded_pairs: 0 only when no two bounded geoms pass the
 * filter, and the sweep it leaves out loses no pair: the broad phase equals
 * brute force with only the floor's pairs (a humanoid's ground contacts),
 * and with some geoms that meet the others (then the flag must be 1) */
static void test_floor_only(void) {
  for (int mode = 1; mode <= 2; mode++) {
    khzModel *m = random_world_types(60, 3, 1, 0, mode);
    khzData *d = khz_makeData(m, 0);
    const khzColModel *cm = m->collision;
    int ng = m->ngeom, overflow, any = 0;
    for (int i = 0; i < ng; i++)
      for (int j = i + 1; j < ng; j++)
        any |= m->geom_type[i] != KHZ_GEOM_PLANE && m->geom_type[j] != KHZ_GEOM_PLANE &&
               khz_collisionFilter(m, i, j);
    ENSURE_MSG(cm->bounded_pairs == any, "mode %d: bounded_pairs %d, brute force %d", mode,
               cm->bounded_pairs, any);
    double *frame = malloc(12 * ng * sizeof(double)), *aabb = malloc(6 * ng * sizeof(double));
    uint64_t *sap = malloc(ng * ng * sizeof(uint64_t)), *bf = malloc(ng * ng * sizeof(uint64_t));
    khz_collisionFrames(m, d, frame, aabb);
    int n = khz_broadphase(m, d, frame, aabb, sap, ng * ng, &overflow);
    int nb = brute(m, aabb, bf), same = n == nb, planes = 0;
    for (int i = 0; same && i < n; i++) same = sap[i] == bf[i];
    for (int i = 0; i < nb; i++)
      planes += m->geom_type[bf[i] >> 32] == KHZ_GEOM_PLANE || m->geom_type[bf[i] & 0xffffffffu] == KHZ_GEOM_PLANE;
    printf("60 bodies, %s: bounded_pairs %d, %d pairs (%d with the floor), the same as brute force %d\n",
           mode == 1 ? "floor contacts only" : "some geoms meet the others", cm->bounded_pairs, n,
           planes, same);
    ENSURE_MSG(same, "mode %d: sweep %d pairs, brute force %d", mode, n, nb);
    ENSURE(planes > 0 && (mode == 1 ? nb == planes : nb > planes));
    free(frame), free(aabb), free(sap), free(bf);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
}

/* the sort from the last call's order (khzData.sweep_order): boxes that
 * drift a little between calls (insertion from a nearly sorted list) and
 * boxes dealt out anew among the geoms (the list far from sorted: the
 * insertion hands over to the radix sort), each call equal to brute force
 * and to a fresh data's (no last order) */
static void test_warm_order(void) {
  plane_first = 1;
  khzModel *m = random_world(300, 3, 1, 0);
  plane_first = 0;
  ENSURE(m->geom_type[0] == KHZ_GEOM_PLANE);
  khzData *d = khz_makeData(m, 0), *fresh = khz_makeData(m, 0);
  int ng = m->ngeom, overflow, ok = 1, warm = 0, calls = 0, floor_pairs = 0;
  double *frame = malloc(12 * ng * sizeof(double)), *aabb = malloc(6 * ng * sizeof(double)), row[6];
  uint64_t *sap = malloc(ng * ng * sizeof(uint64_t)), *bf = malloc(ng * ng * sizeof(uint64_t)),
           *cold = malloc(ng * ng * sizeof(uint64_t));
  khz_collisionFrames(m, d, frame, aabb);
  for (int round = 0; round < 40; round++) {
    if (round % 10 == 9) { /* dealt out anew: swap the boxes of random geom pairs */
      for (int k = 0; k < ng; k++) {
        int a = (int)(cu_rand() * ng), b = (int)(cu_rand() * ng);
        if (m->geom_type[a] == KHZ_GEOM_PLANE || m->geom_type[b] == KHZ_GEOM_PLANE) continue;
        memcpy(row, aabb + 6 * a, sizeof row);
        memcpy(aabb + 6 * a, aabb + 6 * b, sizeof row);
        memcpy(aabb + 6 * b, row, sizeof row);
      }
    } else if (round > 0) { /* a drift of up to 4 cm along each axis */
      for (int g = 0; g < ng; g++) {
        if (m->geom_type[g] == KHZ_GEOM_PLANE) continue;
        for (int k = 0; k < 3; k++) {
          double dx = cu_uniform(-0.04, 0.04);
          aabb[6 * g + k] += dx, aabb[6 * g + 3 + k] += dx;
        }
      }
    }
    warm += d->sweep_n > 0;
    int n = khz_broadphase(m, d, frame, aabb, sap, ng * ng, &overflow);
    fresh->sweep_n = 0;
    int nc = khz_broadphase(m, fresh, frame, aabb, cold, ng * ng, &overflow);
    int nb = brute(m, aabb, bf), same = n == nb && nc == nb;
    for (int i = 0; same && i < n; i++) same = sap[i] == bf[i] && cold[i] == bf[i];
    ENSURE_MSG(same, "round %d: from the last order %d pairs, fresh %d, brute force %d", round, n, nc, nb);
    ok &= same, calls++;
    for (int i = 0; i < nb; i++) floor_pairs += m->geom_type[bf[i] >> 32] == KHZ_GEOM_PLANE;
  }
  printf("300 bodies drifting and dealt out anew: %d of %d calls from the last order, all as brute force %d; "
         "%.1f floor pairs a call (sorted as one run)\n", warm, calls, ok, (double)floor_pairs / calls);
  ENSURE(warm == calls - 1 && d->stack_top == 0);
  ENSURE(floor_pairs > 48 * calls); /* the floor's run past KHZ_SORT_SMALL: khz_sortNearlySorted sorts it */
  free(frame), free(aabb), free(sap), free(bf), free(cold);
  khz_deleteData(&d);
  khz_deleteData(&fresh);
  khz_deleteModel(&m);
}

/* ------------------------------------------------------------- timing -- */

static void test_timing(void) {
  printf("broad phase per call (frames + sweep-and-prune), bodies at constant density:\n");
  for (int n = 15; n <= 960; n *= 4) {
    double L = 1.2 * cbrt((double)n); /* about one body per 1.7 m^3 */
    khzModel *m = random_world(n, L, 1, 0);
    khzData *d = khz_makeData(m, 0);
    int ng = m->ngeom;
    double *frame = malloc(12 * ng * sizeof(double)), *aabb = malloc(6 * ng * sizeof(double));
    uint64_t *pairs = malloc(16 * ng * sizeof(uint64_t));
    int np = 0, overflow, reps = 200000 / n + 10;
    khz_collisionFrames(m, d, frame, aabb); /* warm up */
    khz_broadphase(m, d, frame, aabb, pairs, 16 * ng, &overflow);
    double t0 = cu_now();
    for (int r = 0; r < reps; r++) {
      khz_collisionFrames(m, d, frame, aabb);
      np = khz_broadphase(m, d, frame, aabb, pairs, 16 * ng, &overflow);
    }
    double dt = (cu_now() - t0) / reps;
    printf("  %4d bodies (%4d geoms): %8.2f us per call, %5d candidate pairs\n", n, ng, 1e6 * dt, np);
    ENSURE(np >= 0 && overflow == 0);
    free(frame), free(aabb), free(pairs);
    khz_deleteData(&d);
    khz_deleteModel(&m);
  }
}

/* ------------------------------------------------------------ filters -- */

static void test_filters(void) {
  khzSpec *s = khz_spec_new();
  khzBodySpec b;

  /* a free base with a revolute child, a link welded to the child, a grandchild */
  int base = cu_body(s, "base");
  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "child");
  snprintf(b.joint_name, sizeof b.joint_name, "hinge");
  b.parent = base, b.joint_type = KHZ_JOINT_REVOLUTE, b.mass = 1;
  b.inertia[0] = b.inertia[1] = b.inertia[2] = 0.01;
  int child = khz_spec_addBody(s, &b);
  snprintf(b.name, sizeof b.name, "welded"), b.joint_name[0] = 0;
  b.parent = child, b.joint_type = KHZ_JOINT_FIXED;
  int welded = khz_spec_addBody(s, &b);
  snprintf(b.name, sizeof b.name, "grandchild"), snprintf(b.joint_name, sizeof b.joint_name, "h2");
  b.parent = child, b.joint_type = KHZ_JOINT_REVOLUTE;
  int grand = khz_spec_addBody(s, &b);

  /* two bodies welded to the world, a free one */
  snprintf(b.name, sizeof b.name, "table"), b.joint_name[0] = 0;
  b.parent = 0, b.joint_type = KHZ_JOINT_FIXED;
  int table = khz_spec_addBody(s, &b);
  snprintf(b.name, sizeof b.name, "shelf");
  int shelf = khz_spec_addBody(s, &b);
  int loose = cu_body(s, "loose");

  int g_base = cu_geom(s, base, KHZ_GEOM_SPHERE, 1, 0, 0);
  int g_base2 = cu_geom(s, base, KHZ_GEOM_SPHERE, 1, 0, 0);
  int g_child = cu_geom(s, child, KHZ_GEOM_SPHERE, 1, 0, 0);
  int g_welded = cu_geom(s, welded, KHZ_GEOM_SPHERE, 1, 0, 0);
  int g_grand = cu_geom(s, grand, KHZ_GEOM_SPHERE, 1, 0, 0);
  int g_table = cu_geom(s, table, KHZ_GEOM_BOX, 1, 1, 1);
  int g_shelf = cu_geom(s, shelf, KHZ_GEOM_BOX, 1, 1, 1);
  int g_ground = cu_geom(s, 0, KHZ_GEOM_PLANE, 0, 0, 0);
  int g_loose = cu_geom(s, loose, KHZ_GEOM_SPHERE, 1, 0, 0);
  int g_other = cu_geom(s, loose, KHZ_GEOM_SPHERE, 1, 0, 0);
  khz_spec_geom(s, g_other)->contype = 2, khz_spec_geom(s, g_other)->conaffinity = 2;
  int g_vis = cu_geom(s, loose, KHZ_GEOM_SPHERE, 1, 0, 0);
  khz_spec_geom(s, g_vis)->visual = 1;
  int g_only_aff = cu_geom(s, grand, KHZ_GEOM_SPHERE, 1, 0, 0);
  khz_spec_geom(s, g_only_aff)->contype = 0, khz_spec_geom(s, g_only_aff)->conaffinity = 2;
  khzModel *m = cu_compile(s);
  khz_spec_destroy(&s);

  ENSURE(!khz_collisionFilter(m, g_base, g_base2));    /* same body */
  ENSURE(!khz_collisionFilter(m, g_base, g_child));    /* parent and child */
  ENSURE(!khz_collisionFilter(m, g_child, g_welded));  /* welded together */
  ENSURE(!khz_collisionFilter(m, g_base, g_welded));   /* parent of the weld */
  ENSURE(khz_collisionFilter(m, g_base, g_grand));     /* two joints apart */
  ENSURE(!khz_collisionFilter(m, g_grand, g_welded));  /* the weld is the parent */
  ENSURE(!khz_collisionFilter(m, g_table, g_shelf));   /* both welded to the world */
  ENSURE(!khz_collisionFilter(m, g_table, g_ground));  /* welded to the world */
  ENSURE(khz_collisionFilter(m, g_base, g_ground));    /* a free base meets the ground */
  ENSURE(khz_collisionFilter(m, g_loose, g_table));
  ENSURE(khz_collisionFilter(m, g_table, g_loose));
  ENSURE(!khz_collisionFilter(m, g_other, g_base));    /* contype 2 vs conaffinity 1 */
  ENSURE(!khz_collisionFilter(m, g_vis, g_base));      /* visual */
  ENSURE(khz_collisionFilter(m, g_only_aff, g_other)); /* 2 & 2 one way is enough */
  ENSURE(!khz_collisionFilter(m, g_only_aff, g_base));
  ENSURE(!khz_collisionFilter(m, g_loose, g_loose));
  khz_deleteModel(&m);
}

/* MJCF <exclude> pairs: the filter's per-body runs (cm->exclude_adr /
 * exclude_with) give for every geom pair what a scan of the model's whole
 * list says, on 40 free bodies with 150 random exclusions (repeats, both
 * orders, a body with itself, many on one body), and each body's run holds
 * exactly its own exclusions, so that a pair costs O(its bodies'
 * exclusions), not O(all of them) */
static void test_exclusions(void) {
  enum { NB = 40, NX = 150 };
  khzSpec *s = khz_spec_new();
  int body[NB], geom[NB];
  for (int i = 0; i < NB; i++) {
    char name[16];
    snprintf(name, sizeof name, "x%d", i);
    body[i] = cu_body(s, name);
    geom[i] = cu_geom(s, body[i], KHZ_GEOM_SPHERE, 1, 0, 0);
  }
  for (int i = 0; i < NX; i++) {
    int a = body[(int)(cu_rand() * NB)], b = body[(int)(cu_rand() * NB)];
    if (i % 5 == 0) a = body[3]; /* one body in many pairs */
    ENSURE(khz_spec_addExclude(s, a, b) == i);
  }
  khzModel *m = cu_compile(s);
  khz_spec_destroy(&s);
  ENSURE(m->nexclude == NX);
  int wrong = 0, self = 0;
  for (int i = 0; i < NB; i++)
    for (int j = 0; j < NB; j++) {
      int excluded = 0;
      for (int x = 0; x < m->nexclude; x++) {
        int e1 = m->exclude_body[2 * x], e2 = m->exclude_body[2 * x + 1];
        excluded |= (e1 == body[i] && e2 == body[j]) || (e1 == body[j] && e2 == body[i]);
        self += i == 0 && j == 0 && e1 == e2;
      }
      wrong += khz_collisionFilter(m, geom[i], geom[j]) != (i != j && !excluded);
    }
  ENSURE(wrong == 0);
  ENSURE(self > 0); /* the draw holds a body excluded from itself */
  const khzColModel *cm = m->collision;
  int runs = 0;
  for (int b = 0; b < m->nbody; b++) {
    int own = 0;
    for (int x = 0; x < m->nexclude; x++) own += (m->exclude_body[2 * x] == b) + (m->exclude_body[2 * x + 1] == b);
    runs += cm->exclude_adr[b + 1] - cm->exclude_adr[b] == own;
  }
  ENSURE(runs == m->nbody);
  ENSURE(cm->exclude_adr[m->nbody] == 2 * m->nexclude);
  khz_deleteModel(&m);
}

/* sorted, a permutation, and stable (equal keys keep their order), on both
 * sides of the size below which an insertion sort replaces the radix passes */
/* khz_floatNext against libm's nextafterf, both directions, bit for bit (a
 * zero's sign included): every 61st bit pattern that is not a NaN, and the
 * patterns within 3 of each sign's zero, least normal, largest finite and
 * infinity (all 2^32 pass too: a minute here) */
static void test_float_next(void) {
  long differ = 0, checked = 0;
  static const uint32_t edge[] = {0, 0x00800000u, 0x7f7fffffu, 0x7f800000u};
  for (uint64_t k = 0, nk = 0xffffffffu / 61 + 1 + 2 * 4 * 7; k < nk; k++) {
    uint64_t j = k - (0xffffffffu / 61 + 1);
    uint32_t u = k <= 0xffffffffu / 61 ? (uint32_t)(k * 61)
                                       : (edge[j / 14] + (uint32_t)(j % 7) - 3) ^ (j % 14 >= 7 ? 0x80000000u : 0),
             r, e;
    float f;
    memcpy(&f, &u, sizeof f);
    if (f != f) continue;
    for (int up = 0; up < 2; up++) {
      float got = khz_floatNext(f, up), want = nextafterf(f, up ? INFINITY : -INFINITY);
      memcpy(&r, &got, sizeof r), memcpy(&e, &want, sizeof e);
      differ += r != e, checked++;
    }
  }
  printf("khz_floatNext: %ld floats x 2 directions, %ld differ from nextafterf\n", checked / 2, differ);
  ENSURE(checked > 100000000L && differ == 0);
}

static void test_radix(void) {
  enum { N = 5000 };
  static uint64_t k[N], t[N], orig[N];
  static int p[N], pt[N];
  const int sizes[] = {1, 2, 17, 48, 49, 300, N};
  for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int n = sizes[s], ok = 1;
    for (int i = 0; i < n; i++) {
      cu_rng = cu_rng * 6364136223846793005ull + 1442695040888963407ull;
      k[i] = i % 3 ? cu_rng >> (i % 40) : cu_rng >> 60; /* a third of them in 16 values */
      p[i] = i;
    }
    memcpy(orig, k, (size_t)n * sizeof k[0]);
    khz_radixSort64(k, p, n, t, pt);
    for (int i = 0; i < n; i++)
      ok &= orig[p[i]] == k[i] && (i == 0 || k[i - 1] < k[i] || (k[i - 1] == k[i] && p[i - 1] < p[i]));
    ENSURE_MSG(ok, "radix sort of %d keys", n);
  }
  khz_radixSort64(k, NULL, 0, t, NULL);
}

/* khz_sortNearlySorted against the radix sort: distinct keys nearly in
 * order (neighbours swapped, a few moved far: the insertion) and shuffled
 * (past the moves' budget: the radix sort takes over) */
static void test_nearly_sorted(void) {
  enum { N = 2000 };
  static uint64_t k[N], ref[N], t[N];
  const int sizes[] = {0, 1, 2, 5, 64, 300, N};
  for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int mode = 0; mode < 3; mode++) {
      int n = sizes[s], ok = 1;
      for (int i = 0; i < n; i++) k[i] = ((uint64_t)(1000 * i + (int)(cu_rand() * 900)) << 32) | (uint64_t)i;
      for (int i = 0; i + 1 < n; i++) {
        int far = mode == 1 && cu_rand() < 0.01, j = far ? (int)(cu_rand() * n) : i + 1;
        if (mode == 2) j = i + (int)(cu_rand() * (n - i));
        if (mode == 0 && cu_rand() < 0.7) continue;
        uint64_t x = k[i];
        k[i] = k[j], k[j] = x;
      }
      memcpy(ref, k, (size_t)n * sizeof k[0]);
      khz_radixSort64(ref, NULL, n, t, NULL);
      khz_sortNearlySorted(k, n, t);
      for (int i = 0; i < n; i++) ok &= k[i] == ref[i];
      ENSURE_MSG(ok, "%d keys, %s: not the radix sort's order", n,
                 mode == 0 ? "neighbours swapped" : mode == 1 ? "a few moved far" : "shuffled");
    }
}

int main(void) {
  test_filters();
  test_exclusions();
  test_radix();
  test_nearly_sorted();
  test_float_next();
  test_brute_force();
  test_floor_only();
  test_warm_order();
  test_timing();
  return ensure_report();
}
