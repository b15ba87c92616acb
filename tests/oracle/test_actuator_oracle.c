/* test_actuator_oracle.c — a model's own actuators (MJCF <actuator>) as the
 * server's command interface (Command.ctrl), against MuJoCo 2.2.
 *
 * Menagerie's kuka_iiwa_14 (tests/loader/data/menagerie): seven <general>
 * position servos (gainprm 2000, biasprm 0 -2000 -200) and
 * integrator="implicitfast", which MuJoCo 2.2 does not know. khz takes the
 * servos' velocity gain into the joints' damping, integrated implicitly
 * (implicitfast's M + h D with D holding gear^2 kv). MuJoCo 2.2 reads a copy
 * edited in two ways that leave the dynamics as they are: integrator="Euler",
 * and each servo's kv moved from biasprm[2] into its joint's damping (Euler's
 * implicit damping is then implicitfast's update, as the velocity term of an
 * affine actuator on a hinge with gear 1 is -kv qd, the same force as damping
 * kv). The visual meshes (not in the repo; they neither collide nor weigh)
 * are left out of the copy.
 *
 * 1. qfrc_actuator: at random states and controls (some outside ctrlrange),
 *    khz's PD terms (khz_actuator_pd) plus the damping the servos gave the
 *    joints equal MuJoCo's qfrc_actuator of the unedited actuators.
 * 2. Forward dynamics of the loaded model (khz_aba with those joint torques and
 *    damping) against MuJoCo's qacc at random states.
 * 3. End to end: an in-process khz-server on the unedited file (lockstep,
 *    contact off), a client sending a sequence of controls by name; after
 *    each tick the state's q and qd against mj_step of the edited copy with
 *    the same ctrl (rel. 1e-9).
 * 4. The command's checks: unknown names, wrong counts, ctrl with q_target,
 *    a control outside ctrlrange (applied clamped, CLAMPED warning).
 * 5. Force ranges (tests/loader/data/mjcf_actuator_ranges.xml: asymmetric
 *    forceranges, a negative gear, two actuators on each joint): MuJoCo clamps
 *    each actuator's force to its forcerange before summing them through
 *    gear. qfrc_actuator at random states and controls (khz_actuator_torque
 *    summed per joint), then the server driven by name in lockstep, then the
 *    server and khz_capi with no command at all (MuJoCo's ctrl = 0: the
 *    servos pull to 0), each against mj_step; the key's ctrl as ctrl0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mujoco/mujoco.h>

#include "khz/capi.h"
#include "khz/load.h"
#include "../server/harness.h"

#define IIWA "tests/loader/data/menagerie/kuka_iiwa_14/iiwa14.xml"
#define RANGES "tests/loader/data/mjcf_actuator_ranges.xml"
#define TICKS 300

static double urand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return ((*s >> 8) & 0xffffff) / (double)0x1000000;
}

/* the file's text with every occurrence of a replaced (each must occur) */
static int replace_all(char **text, const char *from, const char *to) {
  int n = 0;
  for (;;) {
    char *at = strstr(*text, from);
    if (!at) return n;
    size_t lf = strlen(from), lt = strlen(to), len = strlen(*text);
    char *out = malloc(len - lf + lt + 1);
    size_t pre = (size_t)(at - *text);
    memcpy(out, *text, pre);
    memcpy(out + pre, to, lt);
    memcpy(out + pre + lt, at + lf, len - pre - lf + 1);
    free(*text);
    *text = out;
    n++;
  }
}

/* drop every line that contains what */
static void drop_lines(char *text, const char *what) {
  char *at;
  while ((at = strstr(text, what))) {
    char *start = at, *end = strchr(at, '\n');
    while (start > text && start[-1] != '\n') start--;
    end = end ? end + 1 : at + strlen(at);
    memmove(start, end, strlen(end) + 1);
  }
}

/* the copy MuJoCo 2.2 reads (see the top of this file) */
static mjModel *mujoco_copy(void) {
  FILE *f = fopen(IIWA, "rb");
  ENSURE(f != NULL);
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = calloc((size_t)len + 1, 1);
  ENSURE(fread(text, 1, (size_t)len, f) == (size_t)len);
  fclose(f);
  drop_lines(text, "<geom class=\"visual\"");
  drop_lines(text, "<mesh file=");
  ENSURE(replace_all(&text, "integrator=\"implicitfast\"", "integrator=\"Euler\"") == 1);
  ENSURE(replace_all(&text, "biasprm=\"0 -2000 -200\"", "biasprm=\"0 -2000 0\"") == 1);
  ENSURE(replace_all(&text, "<joint axis=\"0 0 1\"/>", "<joint axis=\"0 0 1\" damping=\"200\"/>") == 1);
  char path[] = "/tmp/khz-iiwa14-euler-XXXXXX.xml";
  int fd = mkstemps(path, 4);
  ENSURE(fd >= 0);
  FILE *o = fdopen(fd, "w");
  fputs(text, o);
  fclose(o);
  free(text);
  char err[1000] = "";
  mjModel *mm = mj_loadXML(path, NULL, err, sizeof err);
  if (!mm) fprintf(stderr, "MuJoCo: %s\n", err);
  unlink(path);
  ENSURE(mm != NULL);
  return mm;
}

/* khz's joint torque from the actuators at (q, qd): PD terms + the servos' damping */
static void khz_actuation(const khzModel *m, const khzScene *sc, const double *ctrl,
                          const double *q, const double *qd, double *tau, int *clamped) {
  memset(tau, 0, (size_t)m->nv * sizeof(double));
  for (int i = 0; i < sc->nactuator; i++) {
    const khzMjcfActuator *a = &sc->actuator[i];
    int b = khz_name2joint(m, a->joint), k = m->jnt_dofadr[b];
    double ff, kp, kd, x = q[m->jnt_qadr[b]], v = qd[k];
    if (khz_actuator_pd(a, ctrl[i], &ff, &kp, &kd) == 1) (*clamped)++;
    tau[k] += ff - kp * x - kd * v;
    /* the velocity gain khz took into the joint's damping */
    if (a->kv_implicit) tau[k] += a->gear * a->gear * a->bias[2] * v;
  }
}

/* 1 and 2: forces and forward dynamics at random states */
static void test_forces(mjModel *mm) {
  khzScene sc;
  char err[1024];
  khzModel *m = khz_loadModel(IIWA, &sc, err, sizeof err);
  ENSURE(m != NULL);
  if (!m) return;
  ENSURE(sc.nactuator == 7 && mm->nu == 7 && m->nv == 7 && mm->nv == 7);
  for (int i = 0; i < sc.nactuator; i++) {
    ENSURE(sc.actuator[i].type == KHZ_MJCF_GENERAL && sc.actuator[i].kv_implicit);
    /* the servo's kv is the joint's damping now */
    int b = khz_name2joint(m, sc.actuator[i].joint);
    ENSURE_NEAR(m->dof_damping[m->jnt_dofadr[b]], 200, 1e-12);
  }
  /* MuJoCo with the unedited actuators (kv back in biasprm[2], no joint damping) for qfrc_actuator */
  mjModel *orig = mj_copyModel(NULL, mm);
  for (int i = 0; i < orig->nu; i++) orig->actuator_biasprm[i * mjNBIAS + 2] = -200;
  for (int k = 0; k < orig->nv; k++) orig->dof_damping[k] = 0;
  mjData *od = mj_makeData(orig), *md = mj_makeData(mm);
  /* the dynamics alone: the random poses bring the links' collision spheres together */
  int flags = mm->opt.disableflags;
  mm->opt.disableflags |= mjDSBL_CONSTRAINT;
  khzData *d = khz_makeData(m, 0);
  unsigned seed = 19;
  double worst_f = 0, worst_a = 0, tau[7];
  int clamped = 0;
  for (int trial = 0; trial < 50; trial++) {
    double ctrl[7];
    for (int k = 0; k < 7; k++) {
      double lo = m->jnt_range[2 * khz_name2joint(m, sc.actuator[k].joint)];
      double hi = m->jnt_range[2 * khz_name2joint(m, sc.actuator[k].joint) + 1];
      d->q[k] = od->qpos[k] = md->qpos[k] = lo + (hi - lo) * urand(&seed);
      d->qd[k] = od->qvel[k] = md->qvel[k] = 4 * urand(&seed) - 2;
      ctrl[k] = od->ctrl[k] = md->ctrl[k] = 1.3 * (lo + (hi - lo) * urand(&seed)); /* some outside */
    }
    /* qfrc_actuator of the unedited actuators vs khz's terms + damping */
    mj_forward(orig, od);
    khz_actuation(m, &sc, ctrl, d->q, d->qd, tau, &clamped);
    double fbig = 0, ferr = 0;
    for (int k = 0; k < 7; k++) {
      fbig = fmax(fbig, fabs(od->qfrc_actuator[k]));
      ferr = fmax(ferr, fabs(od->qfrc_actuator[k] - tau[k]));
    }
    worst_f = fmax(worst_f, ferr / fbig);
    /* qacc: khz_aba with those torques (its damping is the joints') vs the edited copy */
    mj_forward(mm, md);
    double qdd[7];
    khz_aba(m, d, d->q, d->qd, tau, qdd); /* tau holds the damping force too */
    double amax = 0, aerr = 0;
    for (int k = 0; k < 7; k++) {
      amax = fmax(amax, fabs(md->qacc[k]));
      aerr = fmax(aerr, fabs(md->qacc[k] - qdd[k]));
    }
    worst_a = fmax(worst_a, aerr / amax);
  }
  printf("iiwa14 actuators, 50 random states and controls (%d clamped to ctrlrange): "
         "qfrc_actuator rel. error %.2e, qacc rel. error %.2e\n",
         clamped, worst_f, worst_a);
  ENSURE(clamped > 0);
  ENSURE(worst_f < 1e-12);
  ENSURE(worst_a < 1e-9);
  mm->opt.disableflags = flags;
  khz_deleteData(&d);
  mj_deleteData(od);
  mj_deleteData(md);
  mj_deleteModel(orig);
  khz_deleteModel(&m);
  khz_deleteScene(&sc);
}

/* an in-process server on scene, without contact, watchdog or lockstep
 * timeout, and its client; NULL (reported, stopped) when either failed */
static khzClient *start_server(harness *h, const char *scene, khzLoopMode mode) {
  khzServerConfig cfg;
  harness_config(&cfg);
  snprintf(cfg.scene, sizeof cfg.scene, "%s", scene);
  snprintf(cfg.contact_method, sizeof cfg.contact_method, "none");
  cfg.mode = mode;
  cfg.lockstep_timeout_ms = 0;
  cfg.watchdog_ms = 0;
  if (harness_start(h, &cfg, NULL)) {
    ENSURE(0);
    return NULL;
  }
  khzClient *c = harness_client(h);
  ENSURE(c != NULL);
  if (!c) harness_stop(h);
  return c;
}

/* 3 and 4: through the server, against mj_step */
static void test_server(mjModel *mm) {
  harness h;
  mm->opt.disableflags |= mjDSBL_CONTACT;
  khzClient *c = start_server(&h, IIWA, KHZ_MODE_LOCKSTEP);
  if (!c) return;
  const Khz__V1__ModelDescription *md = khz_client_model(c);
  ENSURE(md->nu == 7 && md->n_model_actuators == 7);
  const Khz__V1__ModelActuator *a0 = md->model_actuators[0];
  ENSURE(!strcmp(a0->name, "actuator1") && !strcmp(a0->type, "general") &&
         !strcmp(a0->joint, "joint1") && a0->actuator == 0 && a0->ctrllimited &&
         fabs(a0->ctrl_upper - 2.96706) < 1e-12 && a0->gain == 2000 && a0->n_bias == 3 &&
         a0->bias[1] == -2000 && a0->bias[2] == -200 && a0->kv_implicit);
  ENSURE(khz_client_ctrlIndex(c, "actuator7") == 6 && khz_client_ctrlIndex(c, "nope") == -1);

  /* controls by name, in reverse order, against MuJoCo with data.ctrl */
  const char *names[7] = {"actuator7", "actuator6", "actuator5", "actuator4",
                          "actuator3", "actuator2", "actuator1"};
  mjData *d = mj_makeData(mm);
  const Khz__V1__State *st = khz_client_nextState(c, 5000);
  while (st && st->seq != 0) st = khz_client_nextState(c, 5000);
  ENSURE(st && st->n_q == 7);
  if (!st) goto done;
  for (int k = 0; k < 7; k++) d->qpos[k] = st->q[k], d->qvel[k] = st->qd[k];
  double worst_q = 0, worst_qd = 0;
  uint64_t answered = 0;
  int ticks = 0;
  while (ticks < TICKS) {
    /* a sweep of targets around the home pose, joint 2 past its ctrlrange at the end */
    double t = ticks * mm->opt.timestep, ctrl[7], byname[7];
    for (int k = 0; k < 7; k++) {
      ctrl[k] = 0.4 * sin(2 * M_PI * (0.7 + 0.3 * k) * t) + (k == 3 ? -0.8 : 0);
      if (k == 1 && ticks > TICKS - 20) ctrl[k] = 2.5; /* ctrlrange +-2.0944: clamped */
      byname[6 - k] = ctrl[k];
      d->ctrl[k] = ctrl[k];
    }
    ENSURE(khz_client_sendCtrl(c, st, byname, names, 7) == 0);
    answered = st->seq;
    mj_step(mm, d);
    /* the state of the tick that applied it (a refused command leaves lockstep
     * repeating the old state: give up after 10 s) */
    int64_t until = khz_client_now() + (int64_t)10000 * 1000000;
    do st = khz_client_nextState(c, 1000);
    while (st && st->seq <= answered && khz_client_now() < until);
    if (st && st->seq <= answered) {
      const Khz__V1__Error *e = khz_client_nextError(c, 0);
      fprintf(stderr, "tick %d: no new state (%s)\n", ticks, e ? e->message : "no error");
      st = NULL;
    }
    ENSURE(st != NULL);
    if (!st) break;
    ticks++;
    double qs = 0, vs = 0, qe = 0, ve = 0;
    for (int k = 0; k < 7; k++) {
      qs = fmax(qs, fabs(d->qpos[k])), vs = fmax(vs, fabs(d->qvel[k]));
      qe = fmax(qe, fabs(d->qpos[k] - st->q[k])), ve = fmax(ve, fabs(d->qvel[k] - st->qd[k]));
    }
    worst_q = fmax(worst_q, qe / qs), worst_qd = fmax(worst_qd, ve / vs);
  }
  printf("iiwa14 through khz-server, %d ticks of controls by name vs mj_step: q rel. %.2e, "
         "qd rel. %.2e (the last position %.4f, MuJoCo %.4f)\n",
         ticks, worst_q, worst_qd, st ? st->q[1] : NAN, d->qpos[1]);
  ENSURE(ticks == TICKS);
  ENSURE(worst_q < 1e-9 && worst_qd < 1e-9);

  /* 4: refusals, each naming what was wrong; a clamp is applied and reported */
  {
    double v[7] = {0};
    const char *bad_name[1] = {"actuator9"};
    const char *twice[2] = {"actuator1", "actuator1"};
    khz_client_sendCtrl(c, st, v, bad_name, 1);
    const Khz__V1__Error *r = khz_client_nextError(c, 5000);
    while (r && r->code == KHZ__V1__ERROR_CODE__CLAMPED) r = khz_client_nextError(c, 5000);
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__UNKNOWN_NAME && strstr(r->message, "actuator9") &&
           !r->applied);
    khz_client_sendCtrl(c, st, v, twice, 2);
    r = khz_client_nextError(c, 5000);
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OUT_OF_RANGE && strstr(r->message, "twice"));
    Khz__V1__Command cmd;
    khz__v1__command__init(&cmd);
    cmd.model_generation = md->model_generation;
    cmd.seq = 1000;
    cmd.state_seq = st->seq;
    cmd.n_ctrl = 3, cmd.ctrl = v;
    khz_client_command(c, &cmd);
    r = khz_client_nextError(c, 5000);
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__WRONG_SIZE && strstr(r->message, "ctrl has 3"));
    double q7[7] = {0};
    cmd.seq = 1001, cmd.n_ctrl = 7, cmd.n_q_target = 7, cmd.q_target = q7;
    khz_client_command(c, &cmd);
    r = khz_client_nextError(c, 5000);
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OUT_OF_RANGE && strstr(r->message, "q_target"));
    v[0] = NAN;
    cmd.seq = 1002, cmd.n_q_target = 0;
    khz_client_command(c, &cmd);
    r = khz_client_nextError(c, 5000);
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__NOT_FINITE && strstr(r->message, "ctrl[0]"));
    v[0] = 5; /* beyond joint1's ctrlrange 2.967: applied clamped */
    cmd.seq = 1003;
    khz_client_command(c, &cmd);
    r = khz_client_nextError(c, 5000);
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__CLAMPED && r->applied &&
           strstr(r->message, "actuator1") && strstr(r->message, "ctrlrange"));
  }
done:
  mj_deleteData(d);
  khz_client_destroy(&c);
  harness_stop(&h);
}

/* the largest relative difference of khz's (q, qd) from MuJoCo's (2 dofs) */
static double state_diff(const mjData *d, const double *q, const double *qd) {
  double qs = 1e-300, vs = 1e-300, qe = 0, ve = 0;
  for (int k = 0; k < 2; k++) {
    qs = fmax(qs, fabs(d->qpos[k])), vs = fmax(vs, fabs(d->qvel[k]));
    qe = fmax(qe, fabs(d->qpos[k] - q[k])), ve = fmax(ve, fabs(d->qvel[k] - qd[k]));
  }
  return fmax(qe / qs, ve / vs);
}

/* 5a: qfrc_actuator with force ranges at random states and controls */
static void test_range_forces(mjModel *mm) {
  khzScene sc;
  char err[1024];
  khzModel *m = khz_loadModel(RANGES, &sc, err, sizeof err);
  ENSURE(m != NULL);
  if (!m) return;
  ENSURE(sc.nactuator == 4 && mm->nu == 4 && m->nv == 2);
  mjData *md = mj_makeData(mm);
  unsigned seed = 25;
  double worst = 0;
  int clamped = 0, one_clamp_wrong = 0;
  for (int trial = 0; trial < 200; trial++) {
    double q[2], qd[2], tau[2] = {0, 0}, sum[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
      q[k] = md->qpos[k] = 2 * urand(&seed) - 1;
      qd[k] = md->qvel[k] = 4 * urand(&seed) - 2;
    }
    for (int i = 0; i < 4; i++) md->ctrl[i] = 3 * urand(&seed) - 1.5;
    mj_forward(mm, md);
    for (int i = 0; i < 4; i++) {
      const khzMjcfActuator *a = &sc.actuator[i];
      int b = khz_name2joint(m, a->joint), k = m->jnt_dofadr[b];
      double ff, kp, kd, r[2];
      khz_actuator_pd(a, md->ctrl[i], &ff, &kp, &kd);
      khz_actuator_range(a, r);
      double t = ff - kp * q[k] - kd * qd[k];
      clamped += t < r[0] || t > r[1];
      sum[k] += t;
      tau[k] += khz_actuator_torque(a, md->ctrl[i], q[k], qd[k]);
    }
    double big = 1e-300, e = 0;
    for (int k = 0; k < 2; k++) {
      big = fmax(big, fabs(md->qfrc_actuator[k]));
      e = fmax(e, fabs(md->qfrc_actuator[k] - tau[k]));
      /* the joint's symmetric effort limit on the sum instead (the rule before) */
      double lim = m->dof_effort[k], one = lim > 0 ? fmin(fmax(sum[k], -lim), lim) : sum[k];
      one_clamp_wrong += fabs(one - md->qfrc_actuator[k]) > 1e-9;
    }
    worst = fmax(worst, e / big);
  }
  printf("force ranges, 200 random states and controls (%d actuator forces clamped to their "
         "forcerange): qfrc_actuator rel. error %.2e; one symmetric clamp per joint would be wrong "
         "in %d of 400\n",
         clamped, worst, one_clamp_wrong);
  ENSURE(clamped > 100 && one_clamp_wrong > 100);
  ENSURE(worst < 1e-14);

  /* the key's ctrl is the actuators' control before any command when the key is the start */
  khzSpec *spec = khz_spec_new();
  khzMjcfInfo info;
  khzMjcfOptions opt;
  khz_mjcf_defaultOptions(&opt);
  opt.info = &info;
  opt.keyframe = "held";
  ENSURE(khz_loadMJCF(spec, RANGES, &opt, err, sizeof err) >= 0);
  ENSURE(info.nactuator == 4 && info.actuator[0].ctrl0 == 0.5 && info.actuator[1].ctrl0 == 0.4 &&
         info.actuator[2].ctrl0 == -0.2 && info.actuator[3].ctrl0 == 0.1);
  ENSURE(sc.actuator[0].ctrl0 == 0 && sc.actuator[3].ctrl0 == 0); /* no key chosen: zero */
  khz_mjcf_freeInfo(&info);
  khz_spec_destroy(&spec);
  mj_deleteData(md);
  khz_deleteModel(&m);
  khz_deleteScene(&sc);
}

/* 5b: the server with force ranges, driven by name in lockstep, then with no
 * command at all (paused, stepped by request), each tick against mj_step */
static void test_range_server(mjModel *mm, int commanded) {
  harness h;
  khzClient *c = start_server(&h, RANGES, commanded ? KHZ_MODE_LOCKSTEP : KHZ_MODE_REALTIME);
  if (!c) return;
  mjData *d = mj_makeData(mm);
  double worst = 0;
  int ticks = 0;
  if (commanded) {
    const char *names[4] = {"slide_servo", "hinge_servo", "slide_vel", "hinge_motor"};
    const Khz__V1__State *st = khz_client_nextState(c, 5000);
    while (st && st->seq != 0) st = khz_client_nextState(c, 5000);
    unsigned seed = 7;
    while (st && ticks < 200) {
      /* new controls every 20 ticks, some outside their ctrlrange */
      double byname[4];
      if (ticks % 20 == 0)
        for (int i = 0; i < 4; i++) d->ctrl[i] = 3 * urand(&seed) - 1.5;
      byname[0] = d->ctrl[3], byname[1] = d->ctrl[1], byname[2] = d->ctrl[2],
      byname[3] = d->ctrl[0];
      ENSURE(khz_client_sendCtrl(c, st, byname, names, 4) == 0);
      uint64_t answered = st->seq;
      mj_step(mm, d);
      int64_t until = patience_ends();
      do st = khz_client_nextState(c, 1000);
      while (st && st->seq <= answered && khz_client_now() < until);
      if (!st || st->seq <= answered) break;
      ticks++;
      worst = fmax(worst, state_diff(d, st->q, st->qd));
    }
    printf("force ranges through khz-server, %d ticks of controls by name vs mj_step: q, qd "
           "rel. %.2e\n", ticks, worst);
  } else {
    /* no command: MuJoCo's ctrl stays 0, the servos pull to 0 and the velocity
     * actuator brakes; paused, reset (no command since), stepped 10 ticks
     * per request, every state against it */
    const Khz__V1__Reply *r = req_simple(c, KHZ__V1__REQUEST__OP_PAUSE);
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
    r = req_reset(c);
    ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
    uint64_t base = r ? r->state_seq : 0;
    int steps = 0;
    for (int round = 0; r && round < 20; round++) {
      Khz__V1__Request rq;
      Khz__V1__Step step;
      khz__v1__request__init(&rq);
      khz__v1__step__init(&step);
      step.n = 10;
      rq.op_case = KHZ__V1__REQUEST__OP_STEP;
      rq.step = &step;
      r = khz_client_request(c, &rq, 5000);
      ENSURE(r && r->code == KHZ__V1__ERROR_CODE__OK);
      if (!r) break;
      uint64_t target = r->state_seq;
      int64_t until = patience_ends();
      const Khz__V1__State *st;
      while ((st = patient_state(c, until))) {
        if (st->seq <= base) continue; /* before the reset, or the reset's own state */
        ENSURE(st->flags & KHZ_FLAG_NO_COMMAND);
        ENSURE(!(st->flags & KHZ_FLAG_WATCHDOG));
        while (steps < (int)(st->seq - base)) mj_step(mm, d), steps++;
        if (steps == (int)(st->seq - base))
          worst = fmax(worst, state_diff(d, st->q, st->qd)), ticks++;
        if (st->seq >= target) break;
      }
    }
    printf("force ranges through khz-server with no command (ctrl 0), %d states up to step %d "
           "vs mj_step: q, qd rel. %.2e (hinge at %.4f rad)\n", ticks, steps, worst, d->qpos[0]);
  }
  ENSURE(ticks >= (commanded ? 200 : 20));
  ENSURE(worst < 1e-9);
  mj_deleteData(d);
  khz_client_destroy(&c);
  harness_stop(&h);
}

/* 5c: khz_capi with no control set (ctrl 0), then with controls set by name */
static void test_range_capi(mjModel *mm) {
  char err[1024];
  khzCapi *h = khz_capi_open(RANGES, err, sizeof err);
  ENSURE(h != NULL);
  if (!h) return;
  khzData *kd = khz_capi_data(h);
  mjData *d = mj_makeData(mm);
  double worst = 0;
  ENSURE(khz_capi_nActuator(h) == 4 && !strcmp(khz_capi_actuatorName(h, 2), "slide_vel"));
  for (int s = 0; s < 600; s++) {
    if (s == 300) {
      /* controls by name from here on, one outside its ctrlrange */
      ENSURE(khz_capi_setCtrl(h, "hinge_motor", 1.4, err, sizeof err) == 0);
      ENSURE(khz_capi_setCtrl(h, "slide_servo", 0.25, err, sizeof err) == 3);
      d->ctrl[0] = 1.4, d->ctrl[3] = 0.25;
    }
    khz_capi_step(h, 1);
    mj_step(mm, d);
    worst = fmax(worst, state_diff(d, kd->q, kd->qd));
  }
  ENSURE(khz_capi_setCtrl(h, "nope", 1, err, sizeof err) == -1 && strstr(err, "'nope'"));
  ENSURE(khz_capi_setCtrl(h, "slide_vel", NAN, err, sizeof err) == -1 && strstr(err, "finite"));
  ENSURE(khz_capi_getCtrl(h, 0) == 1.4 && isnan(khz_capi_getCtrl(h, 4)));
  khz_capi_reset(h);
  ENSURE(khz_capi_getCtrl(h, 0) == 0);
  printf("force ranges through khz_capi, 300 steps at ctrl 0 then 300 with controls set by name "
         "vs mj_step: q, qd rel. %.2e\n", worst);
  ENSURE(worst < 1e-9);
  mj_deleteData(d);
  khz_capi_close(h);
}

int main(void) {
  mjModel *mm = mujoco_copy();
  if (!mm) return 1;
  test_forces(mm);
  test_server(mm);
  mj_deleteModel(mm);
  char err[1024];
  mjModel *rm = mj_loadXML(RANGES, NULL, err, sizeof err);
  if (!rm) fprintf(stderr, "MuJoCo: %s\n", err);
  ENSURE(rm != NULL);
  if (rm) {
    test_range_forces(rm);
    test_range_server(rm, 1);
    test_range_server(rm, 0);
    test_range_capi(rm);
    mj_deleteModel(rm);
  }
  return ensure_report();
}
