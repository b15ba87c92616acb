/* reuse_bound.c — would a contact kept while its pair's relative pose moves
 * less than a bound hold in a pile, and how far would its depths be off?
 * (docs/benchmarks.md, col27: the measurement behind the contact reuse
 * not built.) Usage: reuse_bound SCENE.yaml FROM TO (sleeping off).
 *
 * Steps the scene and, for every pair in contact from step FROM on, keeps a
 * reference per bound: body[1]'s pose in body[0]'s frame, the normal in
 * body[0]'s frame and the points (body[1]'s frame, depths, features) when
 * the pair was last "fresh". At each step the relative motion since the
 * reference (the largest displacement of the reference's points, carried
 * by body[1], in body[0]'s frame) is compared with the bound; below it the pair would be
 * reused: each depth predicted to first order, depth_ref + n0 . (p_now -
 * p_ref) (the point carried by body[1], in body[0]'s frame), against the
 * narrow phase's depth of the point of the same feature. Counts only: the
 * library is stepped as it is. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "khz/khz.h"
#include "khz/load.h"
#define NB 4
static const double bounds[NB] = {1e-7, 1e-6, 1e-5, 1e-4};
typedef struct { long long key; int valid, npt, feat[64]; double R[9], t[3], n0[3], p1[64][3], dep[64], r; } ref_t;
static void rel_pose(const khzData *d, int b0, int b1, double R[9], double t[3]) {
  const double *R0 = d->xrot + 9 * b0, *R1 = d->xrot + 9 * b1, *x0 = d->xpos + 3 * b0, *x1 = d->xpos + 3 * b1;
  for (int i = 0; i < 3; i++) {
    t[i] = 0;
    for (int k = 0; k < 3; k++) t[i] += R0[3 * k + i] * (x1[k] - x0[k]);
    for (int j = 0; j < 3; j++) { R[3 * i + j] = 0; for (int k = 0; k < 3; k++) R[3 * i + j] += R0[3 * k + i] * R1[3 * k + j]; }
  }
}
int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: reuse_bound SCENE.yaml FROM TO\n"); return 2; }
  char err[1024]; khzScene scene;
  khzModel *m = khz_loadModel(argv[1], &scene, err, sizeof err);
  if (!m) { fprintf(stderr, "%s\n", err); return 1; }
  khzData *d = khz_makeData(m, 0); d->sleep_enabled = 0;
  int from = atoi(argv[2]), to = atoi(argv[3]);
  int cap = 1 << 13; /* slots by hash of the geom pair (its top 13 bits); a pair whose slot another
                        took counts as fresh: 11,000 pairs at most in the windows measured */
  ref_t *ref[NB]; for (int b = 0; b < NB; b++) ref[b] = calloc(cap, sizeof(ref_t));
  long long npairs = 0, reuse[NB] = {0}, npts[NB] = {0}, nmiss[NB] = {0}; double maxerr[NB] = {0}, sumerr[NB] = {0}, relerr[NB] = {0};
  long long nfeatchg[NB] = {0};
  for (int s = 0; s < to; s++) {
    khz_step(m, d);
    if (s < from) continue;
    for (int c = 0; c < d->ncontact; c++) {
      const khzContact *ct = &d->contact[c];
      if (ct->body[0] == ct->body[1]) continue;
      long long key = ((long long)ct->geom[0] << 20) | ct->geom[1];
      unsigned h = (unsigned)(((unsigned long long)key * 0x9e3779b97f4a7c15ull) >> 51); /* the top 13 bits: cap */
      double R[9], t[3]; rel_pose(d, ct->body[0], ct->body[1], R, t);
      npairs++;
      for (int b = 0; b < NB; b++) {
        ref_t *r = &ref[b][h];
        int hit = 0;
        if (r->valid && r->key == key) {
          /* the largest displacement of the reference's points (body[1]'s
           * material points, in body[0]'s frame) since the reference */
          double move = 0;
          for (int i = 0; i < r->npt; i++) {
            double dd = 0;
            for (int a = 0; a < 3; a++) {
              double now = R[3 * a] * r->p1[i][0] + R[3 * a + 1] * r->p1[i][1] + R[3 * a + 2] * r->p1[i][2] + t[a];
              double was = r->R[3 * a] * r->p1[i][0] + r->R[3 * a + 1] * r->p1[i][1] + r->R[3 * a + 2] * r->p1[i][2] + r->t[a];
              dd += (now - was) * (now - was);
            }
            if (dd > move) move = dd;
          }
          if (sqrt(move) < bounds[b]) hit = 1;
        }
        if (hit) {
          reuse[b]++;
          /* feature sets equal? then compare depths */
          int same = r->npt == ct->npoint;
          for (int i = 0; i < ct->npoint && same; i++) same = r->feat[i] == d->cpoint[ct->point_adr + i].feature;
          if (!same) nfeatchg[b]++;
          for (int i = 0; i < ct->npoint; i++) {
            const khzContactPoint *p = &d->cpoint[ct->point_adr + i];
            int j = -1; for (int q = 0; q < r->npt; q++) if (r->feat[q] == p->feature) { j = q; break; }
            npts[b]++;
            if (j < 0) { nmiss[b]++; continue; }
            double now[3]; for (int a = 0; a < 3; a++) now[a] = R[3*a]*r->p1[j][0]+R[3*a+1]*r->p1[j][1]+R[3*a+2]*r->p1[j][2]+t[a];
            double old[3]; for (int a = 0; a < 3; a++) old[a] = r->R[3*a]*r->p1[j][0]+r->R[3*a+1]*r->p1[j][1]+r->R[3*a+2]*r->p1[j][2]+r->t[a];
            double pred = r->dep[j]; for (int a = 0; a < 3; a++) pred += r->n0[a] * (now[a] - old[a]);
            double e = fabs(pred - p->depth);
            if (e > maxerr[b]) maxerr[b] = e;
            sumerr[b] += e; if (p->depth > 1e-6) relerr[b] = fmax(relerr[b], e / p->depth);
          }
        } else {
          r->valid = 1; r->key = key; memcpy(r->R, R, sizeof R); memcpy(r->t, t, sizeof t);
          const double *R0 = d->xrot + 9 * ct->body[0];
          for (int a = 0; a < 3; a++) r->n0[a] = R0[a]*ct->normal[0]+R0[3+a]*ct->normal[1]+R0[6+a]*ct->normal[2];
          r->npt = ct->npoint > 64 ? 64 : ct->npoint; r->r = 0;
          for (int i = 0; i < r->npt; i++) {
            const khzContactPoint *p = &d->cpoint[ct->point_adr + i];
            r->feat[i] = p->feature; r->dep[i] = p->depth;
            /* point in body[1]'s frame -> in body[0]'s frame via the relative pose: keep body1-local */
            memcpy(r->p1[i], p->local[1], sizeof r->p1[i]);
            double rr = sqrt(p->local[1][0]*p->local[1][0]+p->local[1][1]*p->local[1][1]+p->local[1][2]*p->local[1][2]);
            if (rr > r->r) r->r = rr;
          }
        }
      }
    }
  }
  printf("%s steps %d-%d: %lld pair-steps in contact\n", argv[1], from, to, npairs);
  for (int b = 0; b < NB; b++)
    printf("  bound %.0e m: reused %lld (%.1f %%), feature list changed %lld, points %lld (no same feature %lld), depth error max %.3g m mean %.3g m, max rel %.3g\n",
           bounds[b], reuse[b], 100.0 * reuse[b] / (npairs ? npairs : 1), nfeatchg[b], npts[b], nmiss[b], maxerr[b],
           sumerr[b] / (npts[b] - nmiss[b] > 0 ? npts[b] - nmiss[b] : 1), relerr[b]);
  for (int b = 0; b < NB; b++) free(ref[b]);
  khz_deleteData(&d);
  khz_deleteModel(&m);
  return 0;
}
