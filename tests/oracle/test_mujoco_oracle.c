/* test_mujoco_oracle.c — khz's dynamics against MuJoCo (Debian's libmujoco-dev),
 * an engine nobody here wrote.
 *
 *  A. Random trees (revolute, prismatic, spherical, fixed, floating, armature,
 *     offset and rotated origins, oblique axes, full inertias) written as MJCF
 *     from the same spec: qdd from khz's ABA vs MuJoCo's qacc, and the mass
 *     matrix from CRBA vs mj_fullM, at random states with random joint torques
 *     and body wrenches. Issue #2: max relative error of qdd below 1e-9.
 *  B. The same on URDF files loaded by both engines (khz's libxml2 loader,
 *     MuJoCo's own URDF importer), joints matched by name, with joint damping.
 *  C. A torque-free asymmetric rigid body integrated with RK4 at h = 1e-3 by
 *     both engines for 5 s: body angular velocities agree.
 *  D. MuJoCo's humanoid.xml lying on the floor (khz, automatic gains): the
 *     implicit rows' Delassus matrix W = J M^-1 J^T from ABA's L^T D L
 *     factorisation (penalty.c delassus_factored) against the articulated
 *     walks and against MuJoCo's mj_solveM on the rows' Jacobians.
 */
#include <mujoco/mujoco.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "contact/penalty.h"
#include "ensure.h"
#include "khz/load.h"
#include "mjcf_export.h"
#include "rt/random_model.h"

/* qpos/qvel index in MuJoCo for khz body i, matched by joint name */
static int mj_joint_of(const mjModel *mm, const khzModel *m, int i, const char *prefix) {
  const char *name = m->jnt_name[i];
  size_t n = strlen(prefix);
  if (n && strncmp(name, prefix, n) == 0) name += n;
  return mj_name2id(mm, mjOBJ_JOINT, name);
}

/* compare khz and MuJoCo at random states; returns the worst relative errors */
static void compare(const khzModel *m, mjModel *mm, const char *prefix, int trials,
                    int use_damping, int use_xfrc, double *worst_qdd, double *worst_M) {
  khzData *d = khz_makeData(m, 0);
  mjData *md = mj_makeData(mm);
  int nv = m->nv;
  ENSURE_MSG(nv == mm->nv, "nv %d vs mujoco %d", nv, mm->nv);
  if (nv != mm->nv) {
    khz_deleteData(&d);
    mj_deleteData(md);
    return;
  }
  int *dofmap = calloc((size_t)nv, sizeof(int)); /* khz dof -> mujoco dof */
  int *qmap = calloc((size_t)m->nq, sizeof(int));
  for (int i = 1; i < m->nbody; i++) {
    if (!m->jnt_nv[i]) continue;
    int j = mj_joint_of(mm, m, i, prefix);
    ENSURE_MSG(j >= 0, "joint %s missing in mujoco", m->jnt_name[i]);
    if (j < 0) continue;
    for (int k = 0; k < m->jnt_nv[i]; k++) dofmap[m->jnt_dofadr[i] + k] = mm->jnt_dofadr[j] + k;
    for (int k = 0; k < m->jnt_nq[i]; k++) qmap[m->jnt_qadr[i] + k] = mm->jnt_qposadr[j] + k;
  }
  double *tau = calloc((size_t)nv, sizeof(double)), *qdd = calloc((size_t)nv, sizeof(double));
  double *M = calloc((size_t)(nv * nv), sizeof(double)), *Mm = calloc((size_t)(nv * nv), sizeof(double));
  mm->opt.disableflags = mjDSBL_CONSTRAINT | mjDSBL_CONTACT | mjDSBL_LIMIT | mjDSBL_FRICTIONLOSS;
  if (!use_damping) mm->opt.disableflags |= mjDSBL_PASSIVE;
  *worst_qdd = *worst_M = 0;
  for (int t = 0; t < trials; t++) {
    rm_random_state(m, d->q, d->qd);
    for (int k = 0; k < nv; k++) tau[k] = rm_uniform(-5, 5);
    mj_resetData(mm, md);
    for (int k = 0; k < m->nq; k++) md->qpos[qmap[k]] = d->q[k];
    for (int k = 0; k < nv; k++) md->qvel[dofmap[k]] = d->qd[k], md->qfrc_applied[dofmap[k]] = tau[k];
    /* body wrenches: same world-frame force/torque at the com in both */
    for (int i = 1; i < m->nbody; i++) {
      int b = mj_name2id(mm, mjOBJ_BODY, m->body_name[i] + strlen(prefix));
      double w[6];
      for (int k = 0; k < 6; k++) w[k] = (use_xfrc && b >= 0) ? rm_uniform(-3, 3) : 0;
      memcpy(d->xfrc + 6 * i, w, sizeof w);
      if (b >= 0) memcpy(md->xfrc_applied + 6 * b, w, sizeof w);
    }
    mj_forward(mm, md);

    /* khz: joint damping is a passive torque -b qd, added explicitly here */
    for (int k = 0; k < nv; k++) tau[k] -= use_damping ? m->dof_damping[k] * d->qd[k] : 0;
    khz_aba(m, d, d->q, d->qd, tau, qdd);
    double num = 0, den = 0;
    for (int k = 0; k < nv; k++) {
      num = fmax(num, fabs(qdd[k] - md->qacc[dofmap[k]]));
      den = fmax(den, fabs(md->qacc[dofmap[k]]));
    }
    *worst_qdd = fmax(*worst_qdd, num / fmax(den, 1e-12));

    khz_crba(m, d, d->q, M);
    mj_fullM(mm, Mm, md->qM);
    num = den = 0;
    for (int a = 0; a < nv; a++)
      for (int b = 0; b < nv; b++) {
        num = fmax(num, fabs(M[a * nv + b] - Mm[dofmap[a] * nv + dofmap[b]]));
        den = fmax(den, fabs(Mm[dofmap[a] * nv + dofmap[b]]));
      }
    *worst_M = fmax(*worst_M, num / den);
  }
  free(tau), free(qdd), free(M), free(Mm), free(dofmap), free(qmap);
  khz_deleteData(&d);
  mj_deleteData(md);
}

static void part_random_trees(void) {
  struct { int n, floating, tree, arm; } cases[] = {
      {7, 0, 0, 0}, {7, 0, 0, 1}, {12, 0, 1, 1}, {12, 1, 1, 0}, {27, 1, 1, 1}, {3, 1, 0, 1},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    khzModel *m = rm_random_model(cases[c].n, cases[c].floating, cases[c].tree, cases[c].arm);
    ENSURE(m != NULL);
    if (!m) continue;
    mjModel *mm = mujoco_from_khz(m);
    ENSURE(mm != NULL);
    if (mm) {
      double eq = 0, eM = 0;
      compare(m, mm, "", 100, 0, 1, &eq, &eM);
      printf("random tree %zu (nv %d): qdd rel err %.3g, M rel err %.3g\n", c, m->nv, eq, eM);
      ENSURE_MSG(eq < 1e-9, "qdd vs mujoco: %g", eq);
      ENSURE_MSG(eM < 1e-9, "M vs mujoco: %g", eM);
      mj_deleteModel(mm);
    }
    khz_deleteModel(&m);
  }
}

/* tol: relative qdd tolerance. MuJoCo's URDF importer diagonalises inertias
 * with products of inertia by an eigen-solver accurate to ~1e-10 in M, which
 * the conditioning of M amplifies in qdd: such files get a looser tolerance
 * here and are also compared at 1e-9 through the exact MJCF route. */
static void part_urdf(const char *path, double tol) {
  char err[1024];
  khzSpec *s = khz_spec_new();
  khzUrdfOptions opt;
  khz_urdf_defaultOptions(&opt);
  int rc = khz_loadURDF(s, path, &opt, err, sizeof err);
  ENSURE_MSG(rc >= 0, "%s", err);
  khzModel *m = rc >= 0 ? khz_compile(s, err, sizeof err) : NULL;
  khz_spec_destroy(&s);
  ENSURE_MSG(m != NULL, "%s", err);
  mjModel *mm = mj_loadXML(path, NULL, err, sizeof err);
  ENSURE_MSG(mm != NULL, "mujoco: %s", err);
  if (m && mm) {
    /* MuJoCo fuses links welded to the world into it: compare the moving mass */
    double mass_khz = 0, mass_mj = 0;
    for (int i = 1; i < m->nbody; i++) {
      int welded = 1;
      for (int j = i; j > 0 && welded; j = m->body_parent[j]) welded = m->jnt_type[j] == KHZ_JOINT_FIXED;
      if (!welded) mass_khz += m->body_mass[i];
    }
    for (int i = 1; i < mm->nbody; i++) mass_mj += mm->body_mass[i];
    ENSURE_NEAR(mass_khz, mass_mj, 1e-9 * mass_mj);
    /* MuJoCo also fuses welded children into their parents, moving the point
     * where a body wrench acts: wrenches are left to the MJCF part above */
    double eq = 0, eM = 0;
    compare(m, mm, "", 100, 1, 0, &eq, &eM);
    printf("%s via MuJoCo's URDF importer (nv %d): qdd rel err %.3g, M rel err %.3g\n", path,
           m->nv, eq, eM);
    ENSURE_MSG(eq < tol, "%s qdd vs mujoco: %g", path, eq);
    ENSURE_MSG(eM < 1e-9, "%s M vs mujoco: %g", path, eM);
  }
  mjModel *exact = m ? mujoco_from_khz(m) : NULL;
  if (exact) {
    double eq = 0, eM = 0;
    compare(m, exact, "", 100, 1, 1, &eq, &eM);
    printf("%s via MJCF (nv %d): qdd rel err %.3g, M rel err %.3g\n", path, m->nv, eq, eM);
    ENSURE_MSG(eq < 1e-9, "%s qdd vs mujoco (MJCF): %g", path, eq);
    ENSURE_MSG(eM < 1e-9, "%s M vs mujoco (MJCF): %g", path, eM);
    mj_deleteModel(exact);
  }
  if (mm) mj_deleteModel(mm);
  khz_deleteModel(&m);
}

/* torque-free asymmetric body, RK4 at 1 ms in both engines for 5 s */
static void part_free_body(void) {
  khzSpec *s = khz_spec_new();
  khzBodySpec b;
  khz_spec_defaultBody(&b);
  snprintf(b.name, sizeof b.name, "body");
  snprintf(b.joint_name, sizeof b.joint_name, "free");
  b.joint_type = KHZ_JOINT_FLOATING;
  b.mass = 2;
  double inertia[6] = {0.05, 0.08, 0.11, 0.004, -0.003, 0.002};
  memcpy(b.inertia, inertia, sizeof inertia);
  b.com[0] = 0.02, b.com[1] = -0.01, b.com[2] = 0.03;
  khz_spec_addBody(s, &b);
  khz_spec_setGravity(s, (double[3]){0, 0, 0});
  char err[256];
  khzModel *m = khz_compile(s, err, sizeof err);
  khz_spec_destroy(&s);
  mjModel *mm = m ? mujoco_from_khz(m) : NULL;
  ENSURE(m && mm);
  if (!m || !mm) return;
  mm->opt.disableflags = mjDSBL_CONSTRAINT | mjDSBL_CONTACT;
  khzData *d = khz_makeData(m, 0);
  mjData *md = mj_makeData(mm);
  double qd0[6] = {0.1, -0.2, 0.05, 1.5, 0.2, -2.0};
  memcpy(d->qd, qd0, sizeof qd0);
  memcpy(md->qvel, qd0, sizeof qd0);
  /* MuJoCo's RK4 combines quaternion stages in the tangent space (second order
   * on rotations): it runs at h = 1e-5, where its error is far below khz's */
  mm->opt.timestep = 1e-5;
  double worst = 0;
  for (int k = 0; k < 5000; k++) {
    khz_step(m, d);
    for (int sub = 0; sub < 100; sub++) mj_step(mm, md);
    for (int j = 0; j < 6; j++) worst = fmax(worst, fabs(d->qd[j] - md->qvel[j]));
  }
  printf("free body (khz RK4 h=1e-3) vs MuJoCo (RK4 h=1e-5), 5 s: max |qd diff| %.3g\n", worst);
  ENSURE_MSG(worst < 1e-8, "free body trajectory differs from mujoco by %g", worst);
  mj_deleteData(md);
  mj_deleteModel(mm);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

static void part_humanoid_delassus(void) {
  const char *path = "/usr/share/mujoco/model/humanoid/humanoid.xml";
  if (access(path, R_OK) != 0) {
    printf("humanoid Delassus: %s not installed, skipped\n", path);
    return;
  }
  char err[1024];
  khzSpec *spec = khz_spec_new();
  khzMjcfOptions opt;
  khz_mjcf_defaultOptions(&opt);
  ENSURE(khz_loadMJCF(spec, path, &opt, err, sizeof err) >= 0);
  for (int g = 0; g < khz_spec_ngeom(spec); g++) { /* contacts with the floor only */
    khzGeomSpec *gs = khz_spec_geom(spec, g);
    gs->contype = gs->body == 0 ? 1 : 2;
    gs->conaffinity = gs->body == 0 ? 2 : 1;
  }
  khzContactOptions co;
  khz_spec_defaultContact(&co); /* automatic gains: implicit rows */
  co.method = KHZ_CONTACT_PENALTY;
  co.mu = 1, co.max_points = 10;
  khz_spec_setContact(spec, &co);
  khz_spec_setTimestep(spec, 1e-3);
  khzModel *m = khz_compile(spec, err, sizeof err);
  khz_spec_destroy(&spec);
  ENSURE(m != NULL);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);
  mjModel *mm = mj_loadXML(path, NULL, err, sizeof err);
  ENSURE(mm != NULL && mm->nv == m->nv);
  if (!mm || mm->nv != m->nv) return;
  mjData *md = mj_makeData(mm);
  int nv = m->nv, kmax = 256, *dofmap = calloc((size_t)nv, sizeof(int)), *qmap = calloc((size_t)m->nq, sizeof(int));
  for (int i = 1; i < m->nbody; i++) {
    int j = m->jnt_nv[i] ? mj_joint_of(mm, m, i, "") : -1;
    if (j < 0) continue;
    for (int k = 0; k < m->jnt_nv[i]; k++) dofmap[m->jnt_dofadr[i] + k] = mm->jnt_dofadr[j] + k;
    for (int k = 0; k < m->jnt_nq[i]; k++) qmap[m->jnt_qadr[i] + k] = mm->jnt_qposadr[j] + k;
  }
  double *Af = calloc((size_t)kmax * kmax, sizeof(double)), *Aw = calloc((size_t)kmax * kmax, sizeof(double));
  double *J = calloc((size_t)kmax * nv, sizeof(double)), *Jm = calloc((size_t)kmax * nv, sizeof(double));
  double *X = calloc((size_t)kmax * nv, sizeof(double));
  double worst_walk = 0, worst_mj = 0, worst_limits = 0;
  int states = 0, rows = 0, factored = 0, from_limits = 0;
  double worst_damped = 0, damping_moves = 0;
  int from_damped = 0;
  double *Al = calloc((size_t)kmax * kmax, sizeof(double)), *Ad = calloc((size_t)kmax * kmax, sizeof(double));
  double *Md = calloc((size_t)nv * nv, sizeof(double)), *Xd = calloc((size_t)kmax * nv, sizeof(double));
  for (int step = 1; step <= 3000; step++) {
    khz_step(m, d);
    if (step % 250) continue;
    int kf = khz_penaltyDelassus(m, d, 1, Af, J, kmax), kw = khz_penaltyDelassus(m, d, 0, Aw, NULL, kmax);
    int kl = khz_penaltyDelassus(m, d, 3, Al, NULL, kmax), kd = khz_penaltyDelassus(m, d, 4, Ad, NULL, kmax);
    from_damped += kd > 0 && kd == kf;
    factored += kf > 0, from_limits += kl > 0 && kl == kf;
    int k = kf > 0 ? kf : -kf - 1;
    ENSURE(kf != -1 && kw == -k - 1);
    if (k <= 0 || kw != -k - 1) continue;
    /* MuJoCo: W = J M^-1 J^T at the same q, M from mj_forward's factor */
    mj_resetData(mm, md);
    for (int a = 0; a < m->nq; a++) md->qpos[qmap[a]] = d->q[a];
    mj_forward(mm, md);
    for (int r = 0; r < k; r++)
      for (int a = 0; a < nv; a++) Jm[r * nv + dofmap[a]] = J[r * nv + a];
    mj_solveM(mm, md, X, Jm, k);
    /* and (M + h B)^-1 J^T, B MuJoCo's dof_damping, by a dense Cholesky
     * of mj_fullM's M plus h B */
    mj_fullM(mm, Md, md->qM);
    for (int a = 0; a < nv; a++) Md[a * nv + a] += m->timestep * mm->dof_damping[a];
    for (int a = 0; a < nv; a++) /* M + h B = C C^T, C in the lower half */
      for (int b = 0; b <= a; b++) {
        double x = Md[a * nv + b];
        for (int e = 0; e < b; e++) x -= Md[a * nv + e] * Md[b * nv + e];
        Md[a * nv + b] = a == b ? sqrt(x) : x / Md[b * nv + b];
      }
    for (int r = 0; r < k; r++) {
      double *x = Xd + r * nv;
      memcpy(x, Jm + r * nv, (size_t)nv * sizeof(double));
      for (int a = 0; a < nv; a++) {
        for (int e = 0; e < a; e++) x[a] -= Md[a * nv + e] * x[e];
        x[a] /= Md[a * nv + a];
      }
      for (int a = nv - 1; a >= 0; a--) {
        for (int e = a + 1; e < nv; e++) x[a] -= Md[e * nv + a] * x[e];
        x[a] /= Md[a * nv + a];
      }
    }
    double big = 0, dw = 0, dm = 0, dl = 0, bigd = 0, dd = 0, du = 0;
    for (int r = 0; r < k; r++)
      for (int c = 0; c < k; c++) {
        double w = 0;
        for (int a = 0; a < nv; a++) w += Jm[r * nv + a] * X[c * nv + a];
        big = fmax(big, fabs(Af[r * k + c]));
        dw = fmax(dw, fabs(Af[r * k + c] - Aw[r * k + c]));
        dm = fmax(dm, fabs(Af[r * k + c] - w));
        dl = fmax(dl, fabs(Al[r * k + c] - w));
        double wd = 0;
        for (int a = 0; a < nv; a++) wd += Jm[r * nv + a] * Xd[c * nv + a];
        bigd = fmax(bigd, fabs(wd)), dd = fmax(dd, fabs(Ad[r * k + c] - wd));
        du = fmax(du, fabs(wd - w));
      }
    worst_damped = fmax(worst_damped, dd / bigd), damping_moves = fmax(damping_moves, du / big);
    worst_walk = fmax(worst_walk, dw / big), worst_mj = fmax(worst_mj, dm / big);
    worst_limits = fmax(worst_limits, dl / big);
    states++, rows += k;
  }
  printf("humanoid.xml on the floor, %d states, %d implicit rows (%d from the factors): W from ABA's L^T D L "
         "vs the walks %.3g, vs MuJoCo's J M^-1 J^T %.3g relative to its largest entry\n",
         states, rows, factored, worst_walk, worst_mj);
  ENSURE(states >= 10 && factored == states && rows > 10 * states);
  ENSURE(worst_walk < 1e-12 && worst_mj < 1e-9);
  /* W = G L G^T from the tree limits' L (delassus_kept, what the implicit
   * rows take in the step) against MuJoCo's J M^-1 J^T */
  printf("  W from the tree limits' L (%d of %d states) vs MuJoCo's %.3g relative to its largest entry\n",
         from_limits, states, worst_limits);
  ENSURE(from_limits == states && worst_limits < 1e-9);
  /* the same at M + h B (the step's factors under Euler, which the limits
   * and the implicit rows take) against MuJoCo's M plus h dof_damping; the
   * damping moves W by far more than the tolerance (else the check could
   * not tell the two apart) */
  printf("  W from the tree limits' L at M + h B (%d of %d states) vs MuJoCo's %.3g (B moves W by %.3g)\n",
         from_damped, states, worst_damped, damping_moves);
  ENSURE(m->integrator == KHZ_INT_EULER);
  ENSURE(from_damped == states && worst_damped < 1e-9 && damping_moves > 1e-6);
  free(Al), free(Ad), free(Md), free(Xd);
  free(Af), free(Aw), free(J), free(Jm), free(X), free(dofmap), free(qmap);
  mj_deleteData(md);
  mj_deleteModel(mm);
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

int main(void) {
  part_random_trees();
  part_urdf("scenes/models/arm7.urdf", 1e-6);
  part_urdf("scenes/models/humanoid27.urdf", 1e-6);
  part_urdf("tests/oracle/data/offset_chain.urdf", 1e-9);
  part_free_body();
  part_humanoid_delassus();
  return ensure_report();
}
