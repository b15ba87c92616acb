/* test_hull.c — the convex hull (rt/src/collision/hull.c): a cube with points
 * inside gives its 8 vertices, 6 merged faces and 12 feature edges; random
 * clouds give closed, outward, convex hulls containing every point; flat,
 * collinear and too few points are refused. */
#include "col_util.h"

/* every point inside every face plane; hull vertices on the hull; outward */
static void check_hull(const khzColHull *h, const double *p, int n, const char *what) {
  double worst = 0, c[3] = {0, 0, 0};
  for (int i = 0; i < n; i++)
    for (int f = 0; f < h->nplane; f++)
      worst = fmax(worst, khzu_dot3(h->plane + 4 * f, p + 3 * i) - h->plane[4 * f + 3]);
  ENSURE_MSG(worst < 1e-9, "%s: a point %g outside a face", what, worst);
  for (int i = 0; i < h->nvert; i++) khzu_addScl3(c, c, h->vert + 3 * i, 1.0 / h->nvert);
  for (int f = 0; f < h->nplane; f++) {
    const double *pl = h->plane + 4 * f;
    ENSURE(khzu_dot3(pl, c) < pl[3]);
    ENSURE_NEAR(khzu_norm3(pl), 1, 1e-12);
    int on = 0;
    for (int i = 0; i < h->nvert; i++) on += fabs(khzu_dot3(pl, h->vert + 3 * i) - pl[3]) < 1e-9;
    ENSURE(on >= 3);
  }
  /* a closed triangulated surface: V - E + F = 2 with E = 3F / 2 */
  ENSURE_MSG(h->nvert - 3 * h->ntri / 2 + h->ntri == 2, "%s: V %d F %d", what, h->nvert, h->ntri);
  for (int e = 0; e < h->nedge; e++)
    ENSURE(h->edge[2 * e] != h->edge[2 * e + 1] && h->edge[2 * e] < h->nvert &&
           h->edge[2 * e + 1] < h->nvert);
}

static void test_cube(void) {
  double p[3 * 108];
  int n = 0;
  for (int i = 0; i < 8; i++) {
    p[3 * n] = i & 1 ? 1 : -1, p[3 * n + 1] = i & 2 ? 2 : -2, p[3 * n + 2] = i & 4 ? 3 : -3;
    n++;
  }
  for (int i = 0; i < 100; i++, n++) {
    p[3 * n] = cu_uniform(-1, 1), p[3 * n + 1] = cu_uniform(-2, 2), p[3 * n + 2] = cu_uniform(-3, 3);
  }
  /* the corners last too: the order of the input must not matter */
  for (int k = 0; k < 3; k++) {
    double t = p[k];
    p[k] = p[3 * 50 + k], p[3 * 50 + k] = t;
  }
  khzColHull h;
  ENSURE(khz_hull_build(&h, p, n) == 0);
  ENSURE(h.nvert == 8 && h.nplane == 6 && h.nedge == 12 && h.ntri == 12);
  check_hull(&h, p, n, "cube");
  khz_hull_free(&h);
}

static void test_random(void) {
  for (int trial = 0; trial < 20; trial++) {
    int n = 4 + (int)(cu_rand() * 400);
    double *p = malloc(3 * n * sizeof(double));
    for (int i = 0; i < n; i++) {
      double d[3];
      cu_randDir(d);
      double r = trial % 2 ? 1 : cbrt(cu_rand()); /* on a sphere, or in a ball */
      for (int k = 0; k < 3; k++) p[3 * i + k] = r * d[k] * (k == 2 ? 0.3 : 1);
    }
    khzColHull h;
    int rc = khz_hull_build(&h, p, n);
    ENSURE(rc == 0);
    if (rc == 0) {
      check_hull(&h, p, n, trial % 2 ? "sphere" : "ball");
      if (trial % 2) ENSURE(h.nvert == n); /* every point of a sphere is a vertex */
      khz_hull_free(&h);
    }
    free(p);
  }
}

static void test_degenerate(void) {
  khzColHull h;
  double flat[15] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0.5, 0.5, 0};
  double line[12] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3};
  double same[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  ENSURE(khz_hull_build(&h, flat, 5) == -1);
  ENSURE(khz_hull_build(&h, line, 4) == -1);
  ENSURE(khz_hull_build(&h, same, 4) == -1);
  ENSURE(khz_hull_build(&h, flat, 3) == -1);
  double tet[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  ENSURE(khz_hull_build(&h, tet, 4) == 0);
  ENSURE(h.nvert == 4 && h.nplane == 4 && h.nedge == 6);
  khz_hull_free(&h);
}

int main(void) {
  test_cube();
  test_random();
  test_degenerate();
  return ensure_report();
}
