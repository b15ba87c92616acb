/* peg_probe: a dumped pour state (peg_figures --dump-step), its pairs'
 * overlaps and the vertices inside another body; with a step count K, K PEG
 * steps from it with the counts of each (diagnosis, session 14; docs/peg.md,
 * tenth round). PEG_PROBE_DUMP=DIR writes every Lemke try of a block that
 * did not solve (and a solving retry) to DIR/block_*.txt for
 * bench/lemke_block and an independent solver (PEG_PROBE_DUMP_K=K: every
 * block of K unknowns or more too). PEG_PROBE_MODEL=standard: the standard
 * model's steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khz/khz.h"
#include "khz/load.h"
#include "dynamics.h"
#include "peg/peg.h"

static double q[512], qd[512];
static int ndumped;
/* every block whose try failed (status != 0) and the solved try after one,
 * as text: "k friction attempt status" then M row by row, then q */
static void dump_block(void *user, int k, const double *M, const double *qb, const double *z, int friction,
                       int attempt, int status) {
  (void)z;
  /* PEG_PROBE_DUMP_K=K: also every solved first try of K unknowns or more */
  const char *kmin = getenv("PEG_PROBE_DUMP_K");
  if (status == 0 && attempt == 0 && !(kmin && k >= atoi(kmin))) return;
  char path[256];
  snprintf(path, sizeof path, "%s/block_%03d_k%d_f%d_t%d_s%d.txt", (const char *)user, ndumped++, k, friction, attempt,
           status);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "%d %d %d %d\n", k, friction, attempt, status);
  for (int i = 0; i < k; i++) {
    for (int j = 0; j < k; j++) fprintf(f, "%.17g ", M[(size_t)i * k + j]);
    fprintf(f, "\n");
  }
  for (int i = 0; i < k; i++) fprintf(f, "%.17g ", qb[i]);
  fprintf(f, "\n");
  fclose(f);
  printf("  dumped %s\n", path);
}

static void overlaps(const khzModel *m, const khzData *d) {
  static khzPegPoly P[32];
  int np = 0;
  for (int g = 0; g < m->ngeom && np < 32; g++)
    if (khz_pegPoly(m, d, g, P + np) == 1) np++;
  for (int i = 0; i < np; i++)
    for (int j = i + 1; j < np; j++) {
      if (khz_bodyStatic(m, P[i].body) && khz_bodyStatic(m, P[j].body)) continue;
      double v = khz_pegOverlap(P + i, P + j);
      if (v <= 1e-15) continue;
      printf("  pair geom %d (body %d) - geom %d (body %d): overlap %.3g m^3\n", P[i].geom, P[i].body, P[j].geom,
             P[j].body, v);
      for (int s = 0; s < 2; s++) {
        const khzPegPoly *A = P + (s ? j : i), *B = P + (s ? i : j);
        for (int k = 0; k < A->nv; k++) {
          double dd = INFINITY;
          int fmin = -1;
          for (int f = 0; f < B->nf; f++) {
            double x = B->d[f] - (B->n[f][0] * A->v[k][0] + B->n[f][1] * A->v[k][1] + B->n[f][2] * A->v[k][2]);
            if (x < dd) dd = x, fmin = f;
          }
          if (dd > 0) printf("    vertex %d of geom %d inside geom %d by %.3g m (face %d)\n", k, A->geom, B->geom, dd, fmin);
        }
        /* edges through B: the clipped segment's midpoint depth */
        for (int e = 0; e < A->ne; e++) {
          const double *a0 = A->v[A->e[e][0]], *a1 = A->v[A->e[e][1]];
          double t0 = 0, t1 = 1;
          for (int f = 0; f < B->nf && t0 < t1; f++) {
            double s0 = B->n[f][0] * a0[0] + B->n[f][1] * a0[1] + B->n[f][2] * a0[2] - B->d[f];
            double s1 = B->n[f][0] * a1[0] + B->n[f][1] * a1[1] + B->n[f][2] * a1[2] - B->d[f];
            if (s0 >= 0 && s1 >= 0) t0 = 2;
            else if (s0 < 0 && s1 < 0) continue;
            else if (s0 >= 0) t0 = fmax(t0, s0 / (s0 - s1));
            else t1 = fmin(t1, s0 / (s0 - s1));
          }
          if (t0 >= t1) continue;
          double x[3], dd = INFINITY;
          for (int c = 0; c < 3; c++) x[c] = a0[c] + 0.5 * (t0 + t1) * (a1[c] - a0[c]);
          for (int f = 0; f < B->nf; f++) dd = fmin(dd, B->d[f] - (B->n[f][0] * x[0] + B->n[f][1] * x[1] + B->n[f][2] * x[2]));
          if (dd > 1e-10)
            printf("    edge %d (vertices %d %d) of geom %d through geom %d: %.3g m deep, inside over [%.3g, %.3g]\n", e,
                   A->e[e][0], A->e[e][1], A->geom, B->geom, dd, t0, t1);
        }
      }
    }
}

int main(int argc, char **argv) {
  if (argc < 3) return fprintf(stderr, "usage: %s SCENE STATEFILE [steps]\n", argv[0]), 2;
  /* the state file: peg_figures --dump-step's two lines (q, qd) */
  int steps = argc > 3 ? atoi(argv[3]) : 0;
  FILE *f = fopen(argv[2], "r");
  static char line[65536];
  double h = 0;
  int nq = 0, nv = 0, off;
  if (fgets(line, sizeof line, f) && sscanf(line, "h %lf step %*d q%n", &h, &off) == 1)
    for (char *p = line + off, *e; nq < 512; p = e, nq++)
      if (q[nq] = strtod(p, &e), e == p) break;
  if (fgets(line, sizeof line, f) && sscanf(line, "h %*f step %*d qd%n", &off) >= 0)
    for (char *p = line + off, *e; nv < 512; p = e, nv++)
      if (qd[nv] = strtod(p, &e), e == p) break;
  fclose(f);
  char err[512];
  khzScene sc;
  if (khz_loadScene(&sc, argv[1], err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
  khz_spec_setTimestep(sc.spec, h);
  khzModel *m = khz_compile(sc.spec, err, sizeof err);
  khz_deleteScene(&sc);
  if (!m || nq != m->nq || nv != m->nv) return fprintf(stderr, "model/state mismatch %d %d\n", nq, nv), 1;
  /* PEG_SPLITS=0: the step's passes alone (no halving) */
  if (getenv("PEG_SPLITS")) m->contact.peg_splits = atoi(getenv("PEG_SPLITS"));
  /* PEG_PROBE_TIES=1: lemke.c's default ratio ties (PEG's before session 14) */
  if (getenv("PEG_PROBE_TIES")) m->contact.peg_lemke_ties = atof(getenv("PEG_PROBE_TIES"));
  /* PEG_PROBE_MODEL=standard: the standard model's step (one constraint per feature pair) */
  if (getenv("PEG_PROBE_MODEL") && !strcmp(getenv("PEG_PROBE_MODEL"), "standard"))
    m->contact.peg_model = KHZ_PEG_MODEL_STANDARD;
  khzData *d = khz_makeData(m, 0);
  memcpy(d->q, q, sizeof(double) * nq);
  memcpy(d->qd, qd, sizeof(double) * nv);
  khz_forwardPass(m, d, d->q, d->qd);
  if (getenv("PEG_PROBE_DUMP")) khz_pegSetBlockObserver(dump_block, getenv("PEG_PROBE_DUMP"));
  printf("state at the start (h %g):\n", h);
  overlaps(m, d);
  for (int s = 0; s < steps; s++) {
    khz_step(m, d);
    const khzPegStats *st = khz_pegLastStats(d);
    printf("step %d: pairs %d groups %d U %d I %d X %d n %d status %d failed %d narrowed %d turn %g added %d passes %d worst %.3g splits %d frictionless %d stop %d polished %d unpolished %d recompliant %d pivots %ld\n",
           s, st->contacts, st->groups, st->nu, st->ni, st->nx, st->n, st->status, st->failed, st->narrowed, st->turn,
           st->added, st->passes, st->worst, st->splits, st->frictionless, st->stop, st->polished, st->unpolished,
           st->recompliant, st->pivots);
    overlaps(m, d);
  }
  khz_deleteData(&d);
  khz_deleteModel(&m);
  return 0;
}
