/* bench_dynamics.c — µs per forward-dynamics call and per full step, khz next to
 * MuJoCo on the same model in the same run (issue #2):
 *   - the 7-dof arm (scenes/models/arm7.urdf, fixed base)
 *   - the 27-dof humanoid (scenes/models/humanoid27.urdf on a floating base)
 * Both engines get the same bodies, joints and inertias (MuJoCo's copy is
 * written as MJCF from khz's model), no contacts, RK4 at h = 1e-3.
 * Prints a markdown table: medians over repetitions, and MuJoCo / khz ratios.
 *
 *   bench_dynamics [--quick]
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "khz/load.h"
#include "mjcf_export.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define REPS 21

typedef struct {
  const khzModel *m;
  khzData *d;
  const mjModel *mm;
  mjData *md;
  double *tau, *qdd;
} bench_ctx;

/* one timed block of `calls` calls of what `which` names; returns µs per call */
static double block(bench_ctx *c, int which, int calls) {
  double t0 = now_us();
  switch (which) {
    case 0:
      for (int k = 0; k < calls; k++) khz_aba(c->m, c->d, c->d->q, c->d->qd, c->tau, c->qdd);
      break;
    case 1:
      for (int k = 0; k < calls; k++) mj_forward(c->mm, c->md);
      break;
    case 2:
      for (int k = 0; k < calls; k++) khz_step(c->m, c->d);
      break;
    case 3:
      for (int k = 0; k < calls; k++) mj_step(c->mm, c->md);
      break;
  }
  return (now_us() - t0) / calls;
}

static void run(const char *label, const char *urdf, int floating, int calls) {
  char err[1024];
  khzSpec *s = khz_spec_new();
  khzUrdfOptions opt;
  khz_urdf_defaultOptions(&opt);
  opt.floating_base = floating;
  opt.base_pos[2] = 1.2;
  if (khz_loadURDF(s, urdf, &opt, err, sizeof err) < 0) {
    fprintf(stderr, "%s\n", err);
    exit(1);
  }
  /* dynamics only, as MuJoCo runs here: no contact */
  khzContactOptions co;
  khz_spec_defaultContact(&co);
  co.method = KHZ_CONTACT_NONE;
  khz_spec_setContact(s, &co);
  khzModel *m = khz_compile(s, err, sizeof err);
  khz_spec_destroy(&s);
  if (!m) {
    fprintf(stderr, "%s\n", err);
    exit(1);
  }
  mjModel *mm = mujoco_from_khz(m);
  if (!mm) exit(1);
  mm->opt.disableflags = mjDSBL_CONSTRAINT | mjDSBL_CONTACT;
  bench_ctx c = {m, khz_makeData(m, 0), mm, mj_makeData(mm), NULL, NULL};
  c.tau = calloc((size_t)m->nv, sizeof(double));
  c.qdd = calloc((size_t)m->nv, sizeof(double));
  for (int k = 0; k < m->nv; k++) c.d->qd[k] = c.md->qvel[k] = 0.1 * ((k % 3) - 1);

  double t[4][REPS];
  for (int r = 0; r < REPS; r++)
    for (int w = 0; w < 4; w++) {
      /* restart from the same state so that both engines see the same motion */
      if (w == 2) khz_resetData(m, c.d);
      if (w == 3) mj_resetData(mm, c.md);
      t[w][r] = block(&c, w, calls);
    }
  double med[4];
  for (int w = 0; w < 4; w++) med[w] = median(t[w], REPS);
  printf("| %s | %d | %.3f | %.3f | %.2fx | %.3f | %.3f | %.2fx |\n", label, m->nv, med[0], med[1],
         med[1] / med[0], med[2], med[3], med[3] / med[2]);
  free(c.tau), free(c.qdd);
  khz_deleteData(&c.d);
  mj_deleteData(c.md);
  mj_deleteModel(mm);
  khz_deleteModel(&m);
}

int main(int argc, char **argv) {
  int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  int calls = quick ? 200 : 2000;
  printf("khz vs MuJoCo %s: forward dynamics (khz ABA vs mj_forward, no contacts) and a full RK4 "
         "step at h = 1e-3; median of %d blocks of %d calls.\n\n",
         mj_versionString(), REPS, calls);
  printf("| model | nv | khz ABA µs | MuJoCo fwd µs | ratio | khz step µs | MuJoCo step µs | ratio |\n");
  printf("|---|---|---|---|---|---|---|---|\n");
  run("7-dof arm (arm7.urdf)", "scenes/models/arm7.urdf", 0, calls);
  run("27-dof humanoid (humanoid27.urdf, floating)", "scenes/models/humanoid27.urdf", 1, calls);
  return 0;
}
