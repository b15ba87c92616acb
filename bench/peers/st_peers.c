/* st_peers.c — Stewart & Trinkle's spinning rod and four balls (1996, sec. 4;
 * SPEC §4) in khz's LCP method, khz's penalty method, MuJoCo and ODE, side by
 * side (issue 21, docs/lcp.md).
 *
 * Every engine gets the same benchScene (peer.h) converted from the scene
 * file, steps it at the scene's h = 1 ms, and is measured the same way, from
 * the body poses and velocities its adapter reports (no engine's own contact
 * list is read):
 *   rod    the height of each end's lowest point, centre + R (0, 0, +-half)
 *          - radius; an end lands when that is below TOUCH; sliding = a
 *          touching end's horizontal speed above 1 mm/s after the second
 *          landing; rest = every point of the rod below 1 mm/s from then on.
 *          Started at the height from which free flight ends at the paper's
 *          first impact (0.383 s), as bench/lcp_figures' rod.
 *   balls  the thrown ball lands when its lowest point is below TOUCH, reaches
 *          the line when its surface is within TOUCH of the second ball's;
 *          the final speeds of the four balls at 1.5 s.
 * TOUCH = 1e-4 m (0.03 ms of flight at the impact speeds here).
 *
 *   build/bench/peers/st_peers [rod] [balls]      (both by default)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khz/khz.h"
#include "khz/load.h"
#include "lcp/lcp.h"
#include "peer.h"
#include "scene_convert.h"

#define TOUCH 1e-4

typedef struct slot {
  const char *name;
  const benchEngine *engine;
} slot;

static const slot engines[] = {
    {"khz lcp", &bench_engine_khz_lcp},
    {"khz penalty", &bench_engine_khz},
#ifdef HAVE_MUJOCO
    {"MuJoCo", &bench_engine_mujoco},
#endif
#ifdef HAVE_ODE
    {"ODE", &bench_engine_ode},
#endif
};
#define NENGINE ((int)(sizeof engines / sizeof engines[0]))

static khzModel *load(const char *path, int directions, benchScene *bs, double z_start) {
  char err[512];
  khzModel *m = khz_loadModel(path, NULL, err, sizeof err);
  if (!m) {
    fprintf(stderr, "st_peers: %s: %s\n", path, err);
    exit(1);
  }
  if (directions) {
    m->contact.friction_directions = directions;
    m->stack_bytes += khz_lcpStackBytes(m) /* room for 8 directions */;
  }
  khzData *d = khz_makeData(m, 0);
  if (z_start > 0) d->q[m->jnt_qadr[1] + 2] = z_start; /* the first free body's height */
  if (bench_scene_from_khz(m, d, path, bs, err, sizeof err)) {
    fprintf(stderr, "st_peers: %s: %s\n", path, err);
    exit(1);
  }
  khz_deleteData(&d);
  return m;
}

/* ------------------------------------------------------------------ rod -- */

typedef struct rodEvents {
  double end[2], slide, rest;
} rodEvents;

static rodEvents rod_run(const benchEngine *e, const benchScene *bs, char *err) {
  rodEvents ev = {{-1, -1}, -1, -1};
  void *w = e->create(bs, err, 256);
  if (!w) return ev;
  const benchShape *cap = bs->shape + bs->body[0].shape0;
  double rad = cap->size[0], half = cap->size[1], h = bs->timestep;
  double Rs[9], axis_b[3], ax[3] = {0, 0, 1};
  bench_quat2mat(cap->quat, Rs);
  bench_rotate(Rs, ax, axis_b);
  for (int s = 0; s < 1500; s++) {
    e->step(w);
    double t = (s + 1) * h, pos[3], quat[4], vel[3], om[3], R[9], axis[3], off[3];
    e->get_state(w, 0, pos, quat, vel, om);
    bench_quat2mat(quat, R);
    bench_rotate(R, axis_b, axis);
    bench_rotate(R, cap->pos, off);
    int sliding = 0;
    for (int k = 0; k < 2; k++) {
      double sg = k ? 1 : -1, r[3];
      for (int i = 0; i < 3; i++) r[i] = off[i] + sg * half * axis[i];
      r[2] -= rad; /* the end's lowest point */
      double low = pos[2] + r[2];
      if (low <= TOUCH && ev.end[k] < 0) ev.end[k] = t;
      double vx = vel[0] + om[1] * r[2] - om[2] * r[1], vy = vel[1] + om[2] * r[0] - om[0] * r[2];
      if (low <= TOUCH && ev.end[0] >= 0 && ev.end[1] >= 0) sliding |= hypot(vx, vy) > 1e-3;
    }
    if (sliding) ev.slide = t;
    double wn = sqrt(om[0] * om[0] + om[1] * om[1] + om[2] * om[2]);
    double speed = sqrt(vel[0] * vel[0] + vel[1] * vel[1] + vel[2] * vel[2]) + wn * (half + rad);
    if (speed > 1e-3) ev.rest = -1;
    else if (ev.rest < 0) ev.rest = t;
  }
  e->destroy(w);
  return ev;
}

static void rod(void) {
  const double half = 0.25, rad = 0.05, g = 9.81, om = 4, t_paper = 0.383;
  const double e0 = M_PI / 6; /* st_rod.yaml: the axis 30 degrees above +x */
  double z0 = 0.5 * g * t_paper * t_paper + half * fabs(sin(e0 + om * t_paper)) + rad;
  benchScene bs;
  khzModel *m = load("scenes/validation/st_rod.yaml", 0, &bs, z0);
  printf("# rod (scenes/validation/st_rod.yaml, h = %g s, started at %.4f m), measured from each "
         "engine's poses\n",
         bs.timestep, z0);
  printf("| event | paper (s) |");
  for (int e = 0; e < NENGINE; e++) printf(" %s |", engines[e].name);
  printf("\n|---|---|");
  for (int e = 0; e < NENGINE; e++) printf("---|");
  printf("\n");
  rodEvents ev[NENGINE];
  for (int e = 0; e < NENGINE; e++) {
    char err[256] = "";
    ev[e] = rod_run(engines[e].engine, &bs, err);
    if (err[0]) fprintf(stderr, "st_peers: %s: %s\n", engines[e].name, err);
  }
  static const char *const rows[] = {"first impact", "other end lands", "sliding after it",
                                     "at rest from"};
  static const char *const paper[] = {"0.383", "0.548", "0.02", "(then at rest)"};
  for (int r = 0; r < 4; r++) {
    printf("| %s | %s |", rows[r], paper[r]);
    for (int e = 0; e < NENGINE; e++) {
      double a = ev[e].end[0], b = ev[e].end[1], first = fmin(a, b), second = fmax(a, b), v;
      if (a < 0 || b < 0) first = fmax(a, b), second = -1;
      v = r == 0 ? first : r == 1 ? second : r == 2 ? (ev[e].slide >= 0 && second >= 0 ? ev[e].slide - second : 0)
                                                    : ev[e].rest;
      if ((r < 2 || r == 3) && v < 0) printf(" never |");
      else printf(" %.4f |", v);
    }
    printf("\n");
  }
  printf("\n");
  bench_scene_free(&bs);
  khz_deleteModel(&m);
}

/* ---------------------------------------------------------------- balls -- */

static void balls(void) {
  benchScene bs;
  khzModel *m = load("scenes/validation/st_four_balls.yaml", 8, &bs, 0);
  double r = bs.shape[bs.body[0].shape0].size[0], h = bs.timestep;
  printf("# four balls (scenes/validation/st_four_balls.yaml, h = %g s; khz lcp with 8 friction "
         "directions), measured from each engine's poses\n",
         h);
  printf("| event | paper |");
  for (int e = 0; e < NENGINE; e++) printf(" %s |", engines[e].name);
  printf("\n|---|---|");
  for (int e = 0; e < NENGINE; e++) printf("---|");
  printf("\n");
  double land[NENGINE], hit[NENGINE], vend[NENGINE][4];
  for (int e = 0; e < NENGINE; e++) {
    const benchEngine *en = engines[e].engine;
    char err[256] = "";
    land[e] = hit[e] = -1;
    void *w = en->create(&bs, err, sizeof err);
    if (!w) {
      fprintf(stderr, "st_peers: %s: %s\n", engines[e].name, err);
      continue;
    }
    for (int s = 0; s < 1500; s++) {
      en->step(w);
      double t = (s + 1) * h, p[4][3], q[4], v[4][3], om[3];
      for (int b = 0; b < 4; b++) en->get_state(w, b, p[b], q, v[b], om);
      if (land[e] < 0 && p[0][2] - r <= TOUCH) land[e] = t;
      double dx = p[0][0] - p[1][0], dy = p[0][1] - p[1][1], dz = p[0][2] - p[1][2];
      if (hit[e] < 0 && sqrt(dx * dx + dy * dy + dz * dz) - 2 * r <= TOUCH) hit[e] = t;
      if (s == 1499)
        for (int b = 0; b < 4; b++) vend[e][b] = sqrt(v[b][0] * v[b][0] + v[b][1] * v[b][1] + v[b][2] * v[b][2]);
    }
    en->destroy(w);
  }
  printf("| thrown ball lands (s) | 0.42 |");
  for (int e = 0; e < NENGINE; e++) printf(" %.4f |", land[e]);
  printf("\n| reaches the line (s) | 0.59 |");
  for (int e = 0; e < NENGINE; e++) printf(" %.4f |", hit[e]);
  for (int b = 0; b < 4; b++) {
    printf("\n| ball %d speed at 1.5 s (m/s) | |", b + 1);
    for (int e = 0; e < NENGINE; e++) printf(" %.4f |", vend[e][b]);
  }
  printf("\n\n");
  bench_scene_free(&bs);
  khz_deleteModel(&m);
}

int main(int argc, char **argv) {
  int want_rod = argc < 2, want_balls = argc < 2;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "rod")) want_rod = 1;
    else if (!strcmp(argv[i], "balls")) want_balls = 1;
    else {
      fprintf(stderr, "st_peers: unknown section '%s' (rod, balls)\n", argv[i]);
      return 2;
    }
  }
  printf("engines:\n");
  for (int e = 0; e < NENGINE; e++) printf("- %s: %s\n", engines[e].name, engines[e].engine->settings);
  printf("\n");
  if (want_rod) rod();
  if (want_balls) balls();
  return 0;
}
