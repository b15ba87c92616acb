/* narrowphase.c — one function per shape pair, dispatched through a
 * [type][type] table (MuJoCo's mjCOLLISIONFUNC), producing what Drumwright's
 * multi-point penalty method needs (Drumwright, "A fast and stable penalty
 * method for rigid body simulation", IEEE TVCG 2008, Appendix I; the first
 * stage of docs/contact.md "One step"): the vertices of the intersection
 * volume with their depths, the deepest point and the contact normal.
 *
 * Points. The vertices of the intersection volume of two convex shapes are
 * (a) vertices of one shape inside the other, (b) points where an edge of one
 * crosses the surface of the other. Polytopes (box, hull) and cylinders give
 * both; a cylinder's vertices are 2 x 16 rim samples, its edges the 32 rim
 * segments and 16 generators, plus the exact deepest point of each rim once
 * the normal is known (so that a rolling wheel's depth does not ripple with
 * the sampling). A sphere gives its single deepest point; a capsule the
 * deepest point of its core's closest point and of each end sphere inside the
 * other shape. Triangle meshes give their vertices inside the other shape and
 * have the other shape's vertices queried against their signed distance field
 * (Appendix I-A).
 *
 * Normal (eq. 4). n = argmin over candidate facets of max_j (distance of
 * point j to the facet's plane). Candidates: the facets of either shape that
 * hold a point of the intersection volume ("intersect or lie inside the other
 * geometry"), and for two polytopes also the cross products of crossing
 * edges (an extension: without it two crossed box edges would be pushed apart
 * along a face normal, not along the shortest direction). Each candidate
 * direction is scored with the depths below (the paper's distance to the
 * facet's plane for a facet of B; the matching supporting plane otherwise).
 * Fast path (Appendix I-B): the facet nearest to the deepest point first; it
 * is optimal when no point lies farther from that facet than the deepest
 * point. A plane's normal is its own. Smooth shapes use their exact normal:
 * between the closest points of a sphere's or capsule's core and the other
 * shape (GJK or closed form), or the radial direction of a cylinder's side.
 * With a triangle mesh, eq. 4 runs literally: each point against the nearest
 * facets of the other geometry, the deepest point's facet first.
 *
 * Depth. Normals point from B toward A. For convex shapes a point of A lies
 * depth = h_B(n) - n.p below B's supporting plane across n, a point of B
 * depth = n.p + h_A(-n) above A's (h = support function): the distance below
 * the contact plane, measured into the other shape; all points of the
 * intersection volume have depth >= 0 and the deepest one is the penetration
 * depth along n. For pairs with a triangle mesh the depth is the signed-
 * distance penetration into the other shape (the paper's ADF depth). A pair is
 * in contact when its deepest point has depth > 0.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "collision.h"

#define KHZ_MAXCROSS 32      /* crossing edges per shape used for edge-edge axes */
#define KHZ_EQ4_CANDIDATES 16 /* deepest points whose facets eq. 4 tries (meshes) */

/* Tolerances. "relative" ones multiply a geom's scale (khzColShape.scale, a
 * length typical of the geom) or the pair's (the sum of both), "absolute"
 * ones are in metres, cosines and sines are of the angle named, t is a clip
 * parameter in [0, 1] (a fraction of the segment). */
/* |cos| between an edge and a face's normal below which the edge grazes the face */
#define KHZ_GRAZE 1e-3
/* 1 - cos between n and a plane's normal within which n is that normal */
#define KHZ_PLANE_COS 1e-9
/* t within which a crossing is the segment's end (the end is inside, not crossing) */
#define KHZ_SEG_END 1e-9
/* relative (geom): margin of the bounds and bounding-sphere tests */
#define KHZ_BOUNDS_SLACK 1e-9
/* absolute: a segment's component below which it is parallel to a slab (no division) */
#define KHZ_DIV_ZERO 1e-300
/* absolute (0.1 um): a rim sample this little above the rim's exact lowest point stands for it */
#define KHZ_ON_SAMPLE 1e-7
/* absolute, in the vector's own units: norm below which a candidate direction (or a
 * cylinder's radial offset) has no direction */
#define KHZ_NO_DIRECTION 1e-12
/* cos to the best normal below which a candidate counts as another direction, a second
 * start for refine_normal (about 8 degrees) */
#define KHZ_OTHER_DIRECTION_COS 0.99
/* first trial angle (rad) of refine_normal: whether the start is a local minimum */
#define KHZ_REFINE_PROBE 1e-4
/* sin between n and a crease axis below which the crease gives no trial direction */
#define KHZ_CREASE_SIN 1e-9
/* sin between two cylinders' axes below which they have no common perpendicular */
#define KHZ_PARALLEL_AXES_SIN 1e-6
/* sin between the axes of two rounded shapes below which any normal to A's axis is taken */
#define KHZ_PARALLEL_CORES_SIN 1e-9
/* sin^2 between two crossing edges below which they give no edge-edge axis */
#define KHZ_PARALLEL_EDGES_SIN2 1e-12
/* relative (pair): eq. 4 objectives closer than this tie; the earlier candidate stays */
#define KHZ_EQ4_TIE 1e-12
/* absolute: the same tie for pairs with a triangle mesh */
#define KHZ_EQ4_MESH_TIE 1e-12
/* relative (pair): a point this close to a facet's plane holds the facet; also the slack
 * within which eq. 4's fast path is optimal */
#define KHZ_FACET_TOL 1e-7
/* relative (pair): core distance below which the closest points give no normal (the
 * cores meet), and an end sphere this close to the closest point is that point */
#define KHZ_CORES_MEET 1e-9
/* relative (mesh): closest-point offset below which the triangle's pseudo-normal is the
 * direction */
#define KHZ_MESH_NO_DIRECTION 1e-12

/* ------------------------------------------------------------ points -- */

void khz_col_addPoint(khzColOut *o, const double p[3], double sd, int side, int feature) {
  khzColPoint *pt;
  if (o->npt < o->cap) {
    pt = &o->pt[o->npt++];
  } else {
    /* full: the shallowest point makes room */
    o->overflow++;
    int k = 0;
    for (int i = 1; i < o->npt; i++)
      if (o->pt[i].sd < o->pt[k].sd) k = i;
    if (!(sd > o->pt[k].sd)) return;
    pt = &o->pt[k];
  }
  khzu_copy3(pt->pos, p);
  pt->sd = sd;
  pt->depth = 0;
  pt->weight = 1;
  pt->side = side;
  pt->feature = feature;
}

static int deepest_sd(const khzColOut *o) {
  int k = 0;
  for (int i = 1; i < o->npt; i++)
    if (o->pt[i].sd > o->pt[k].sd) k = i;
  return k;
}

static int is_round(int shape) { return shape == KHZ_SHAPE_SPHERE || shape == KHZ_SHAPE_CAPSULE; }

static void axis_z(const khzColShape *s, double z[3]) {
  z[0] = s->rot[2], z[1] = s->rot[5], z[2] = s->rot[8];
}

/* the core of a sphere (a point) or capsule (a segment along z) */
static void core_of(const khzColShape *s, khzColCore *c) {
  double z[3];
  axis_z(s, z);
  double h = s->shape == KHZ_SHAPE_CAPSULE ? s->size[1] : 0;
  khzu_addScl3(c->a, s->pos, z, -h);
  khzu_addScl3(c->b, s->pos, z, h);
}

/* support value; a plane supports only its own normal */
KHZ_AVX_CLONES static double support_h(const khzColShape *s, const double n[3]) {
  if (s->shape == KHZ_SHAPE_PLANE) {
    double z[3];
    axis_z(s, z);
    return khzu_dot3(n, z) > 1 - KHZ_PLANE_COS ? khzu_dot3(z, s->pos) : DBL_MAX;
  }
  return khz_shape_h(s, n);
}

/* max over the points of their depth along n, given the support values hb
 * = h_B(n) and ha = h_A(-n) */
static double points_objective(const khzColOut *o, const double n[3], double hb, double ha) {
  double f = -DBL_MAX;
  for (int i = 0; i < o->npt; i++) {
    double d = khzu_dot3(n, o->pt[i].pos);
    double v = o->pt[i].side == 0 ? hb - d : d + ha;
    if (v > f) f = v;
  }
  return f;
}

/* max over the points of their depth along n (eq. 4's objective for convex shapes) */
static double objective(const khzColShape *a, const khzColShape *b, const khzColOut *o,
                        const double n[3]) {
  double m[3] = {-n[0], -n[1], -n[2]};
  return points_objective(o, n, support_h(b, n), support_h(a, m));
}

/* The travel along dir (unit, world) from p, inside the box or hull s, to
 * the plane of the face of s that dir leaves through most directly (largest
 * m_F . dir): how deep p lies below that face, measured along dir; 0 when p
 * is above it. One face, not the nearest exit: a point on a side face nearly
 * parallel to dir would leave through it or not with the sign of a tiny tilt
 * and flicker between its whole depth and 0. */
static double depth_below_face(const khzColShape *s, const double p[3], const double dir[3]) {
  double lp[3], ld[3], v = 0;
  khz_shape_toLocal(s, p, lp);
  for (int k = 0; k < 3; k++) ld[k] = s->rot[k] * dir[0] + s->rot[3 + k] * dir[1] + s->rot[6 + k] * dir[2];
  if (s->shape == KHZ_SHAPE_BOX) {
    int k = 0;
    for (int j = 1; j < 3; j++)
      if (fabs(ld[j]) > fabs(ld[k])) k = j;
    v = ((ld[k] > 0 ? s->size[k] : -s->size[k]) - lp[k]) / ld[k];
  } else if (s->shape == KHZ_SHAPE_CONVEX) {
    const khzColHull *h = s->hull;
    double cbest = -2;
    for (int f = 0; f < h->nplane; f++) {
      const double *pl = h->plane + 4 * f;
      double c = khzu_dot3(pl, ld);
      if (c > cbest) cbest = c, v = (pl[3] - khzu_dot3(pl, lp)) / c;
    }
  }
  return v > 0 ? v : 0;
}

/* final depths along n (clamped at 0); returns the largest */
static double set_depths(const khzColShape *a, const khzColShape *b, khzColOut *o,
                         const double n[3]) {
  double m[3] = {-n[0], -n[1], -n[2]};
  double hb = support_h(b, n), ha = support_h(a, m), best = 0;
  for (int i = 0; i < o->npt; i++) {
    int side = o->pt[i].side;
    double d = khzu_dot3(n, o->pt[i].pos);
    double v = side == 0 ? hb - d : d + ha;
    if (!(v > 0)) v = 0;
    /* a point inside a cylinder is no deeper than the way out of it along the
     * normal: where the curved side falls away from the support plane (two
     * cylinders whose rims cross) that plane lies far beyond the exit. A point
     * on the curved surface whose way out starts there (an edge crossing the
     * rim) is not inside: 0, whichever side of the surface round-off puts it,
     * so that its depth, and eq. 1's count with it, does not jump between the
     * plane depth and 0 from step to step. (Not for polytopes: there the
     * plane distance is eq. 4's depth, and a point near a side face would
     * leave through it before the bodies separate.) Evidence:
     * docs/validation.md, V3, cause (2). */
    const khzColShape *other = side == 0 ? b : a;
    if (v > 0 && other->shape == KHZ_SHAPE_CYLINDER) {
      double end[3], t[2];
      khzu_addScl3(end, o->pt[i].pos, side == 0 ? n : m, 2 * v);
      if (khz_shape_clip(other, o->pt[i].pos, end, t) && t[0] <= KHZ_SEG_END) v = fmin(v, 2 * v * t[1]);
      else v = 0;
    }
    /* eq. 1's weight: the depth above is measured from the other shape's
     * supporting plane across n, which passes through its highest feature
     * along n. When n is not a face normal of that box or hull (n from the
     * other shape's face, eq. 4, or from refine_normal with a cylinder), that
     * plane passes through an edge, and every point near it counts as deep
     * as the deepest one, even where the face below lies above the point: the
     * intersection volume is a wedge, but counted as a slab of equal
     * thickness it has no moment to level the body on it, and a body resting
     * slightly tilted on an edge rocks or creeps. So a point inside a box or
     * hull weighs only its depth below the plane of the face n leaves
     * through, the wedge's thickness there; depths and normals stay eq. 4's.
     * Evidence: docs/validation.md, V3, cause (4). */
    o->pt[i].weight = 1;
    if (v > 0 && (other->shape == KHZ_SHAPE_BOX || other->shape == KHZ_SHAPE_CONVEX))
      o->pt[i].weight = fmin(v, depth_below_face(other, o->pt[i].pos, side == 0 ? n : m)) / v;
    o->pt[i].depth = v;
    if (v > best) best = v;
  }
  khzu_copy3(o->normal, n);
  return best;
}

/* signed-distance depths (pairs with a triangle mesh) */
static double sd_depths(khzColOut *o, const double n[3]) {
  double best = 0;
  for (int i = 0; i < o->npt; i++) {
    o->pt[i].depth = o->pt[i].sd > 0 ? o->pt[i].sd : 0;
    if (o->pt[i].depth > best) best = o->pt[i].depth;
  }
  khzu_copy3(o->normal, n);
  return best;
}

/* -------------------------------------------------------- features -- */

/* the vertices of a box, cylinder or hull, transformed once per call: into the
 * world (w) and into the frame of the other shape (l), where the inside tests
 * and the clipping happen; scratch from the output's work buffer */
typedef struct {
  const khzColShape *s, *other;
  int n;
  double *w, *l;
} vcache;

/* slot k (0, 1) of the vertex scratch in o->work */
static double *vbuf(const khzColOut *o, int k) { return o->work + 6 * o->cap + 6 * k * o->maxvert; }

/* B's local vertices x (khz_shape_vertLocal) in another frame, w = R x + t
 * (R row-major: khz_shape_toWorld's sums for R = B's rotation, t = its
 * position), the same sums of the same products in the same order. A box's
 * coordinates are +-size[k] and a cylinder's two rims share x and y (z =
 * +-size[1]); a product with -s is the exact negation of the product with
 * s, so each product is formed once per shape. Hulls: vertex by vertex. */
static inline __attribute__((always_inline)) void vertex_frame(const khzColShape *b, const double *R,
                                                               const double *t, double *w) {
  const double *sz = b->size;
  if (b->shape == KHZ_SHAPE_BOX) {
    /* pm[r][k][bit]: R's row r times the k-th coordinate, -size[k] (bit 0)
     * or +size[k] (bit 1) */
    double pm[3][3][2];
    for (int r = 0; r < 3; r++)
      for (int k = 0; k < 3; k++) pm[r][k][1] = R[3 * r + k] * sz[k], pm[r][k][0] = -pm[r][k][1];
    for (int i = 0; i < 8; i++) {
      int b0 = i & 1, b1 = (i >> 1) & 1, b2 = (i >> 2) & 1;
      for (int r = 0; r < 3; r++) w[3 * i + r] = pm[r][0][b0] + pm[r][1][b1] + pm[r][2][b2] + t[r];
    }
    return;
  }
  if (b->shape == KHZ_SHAPE_CYLINDER) {
    const int N = KHZ_CYL_RIM;
    const double cz[3] = {R[2] * sz[1], R[5] * sz[1], R[8] * sz[1]};
    for (int k = 0; k < N; k++) {
      double x0 = sz[0] * khz_rim_cs[k][0], x1 = sz[0] * khz_rim_cs[k][1];
      const double xy[3] = {R[0] * x0 + R[1] * x1, R[3] * x0 + R[4] * x1, R[6] * x0 + R[7] * x1};
      for (int r = 0; r < 3; r++) {
        w[3 * k + r] = xy[r] + -cz[r] + t[r];
        w[3 * (N + k) + r] = xy[r] + cz[r] + t[r];
      }
    }
    return;
  }
  for (int i = 0, nv = khz_shape_nvert(b); i < nv; i++) {
    double x[3];
    khz_shape_vertLocal(b, i, x);
    for (int r = 0; r < 3; r++) w[3 * i + r] = R[3 * r] * x[0] + R[3 * r + 1] * x[1] + R[3 * r + 2] * x[2] + t[r];
  }
}

KHZ_AVX_CLONES static void vcache_init(vcache *c, const khzColShape *s, const khzColShape *other, double *buf,
                        int maxvert) {
  c->s = s, c->other = other;
  c->n = khz_shape_nvert(s);
  c->w = buf, c->l = buf + 3 * maxvert;
  if (s->shape == KHZ_SHAPE_TRIMESH || c->n > maxvert) {
    c->n = 0; /* meshes go through their BVH */
    return;
  }

  /* relative pose: l = R_o^T (R_s x + p_s - p_o) */
  double R[9], t[3], dp[3];
  const double *Rs = s->rot, *Ro = other->rot;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      R[3 * i + j] = Ro[i] * Rs[j] + Ro[3 + i] * Rs[3 + j] + Ro[6 + i] * Rs[6 + j];
  khzu_sub3(dp, s->pos, other->pos);
  for (int i = 0; i < 3; i++) t[i] = Ro[i] * dp[0] + Ro[3 + i] * dp[1] + Ro[6 + i] * dp[2];
  vertex_frame(s, s->rot, s->pos, c->w);
  vertex_frame(s, R, t, c->l);
}

int khz_col_vertexCache(const khzColShape *s, const khzColShape *other, double *scratch, int maxvert) {
  vcache vc;
  vcache_init(&vc, s, other, scratch, maxvert);
  return vc.n;
}

static void vert(const vcache *c, int i, double out[3]) { khzu_copy3(out, c->w + 3 * i); }

/* is q (geom frame of s) within the bounds and the bounding sphere of s? */
static int in_bounds(const khzColShape *s, const double q[3]) {
  if (s->shape == KHZ_SHAPE_PLANE) return 1;
  double tol = KHZ_BOUNDS_SLACK * s->scale, d[3], r = s->bradius + tol;
  if (!(q[0] >= s->lo[0] - tol && q[0] <= s->hi[0] + tol && q[1] >= s->lo[1] - tol &&
        q[1] <= s->hi[1] + tol && q[2] >= s->lo[2] - tol && q[2] <= s->hi[2] + tol))
    return 0;
  khzu_sub3(d, q, s->lcenter);
  return khzu_dot3(d, d) <= r * r;
}

/* can segment [a, b] (geom frame of s) meet the bounds of s? the bounding
 * sphere, then a slab test */
static int segment_in_bounds(const khzColShape *s, const double a[3], const double b[3]) {
  if (s->shape == KHZ_SHAPE_PLANE) return 1;
  double t0 = 0, t1 = 1, tol = KHZ_BOUNDS_SLACK * s->scale, c[3], d[3], r = s->bradius + tol;
  khzu_closestOnSegment(s->lcenter, a, b, c);
  khzu_sub3(d, c, s->lcenter);
  if (khzu_dot3(d, d) > r * r) return 0;
  for (int k = 0; k < 3; k++) {
    double d = b[k] - a[k], lo = s->lo[k] - tol, hi = s->hi[k] + tol;
    if (fabs(d) < KHZ_DIV_ZERO) {
      if (a[k] < lo || a[k] > hi) return 0;
      continue;
    }
    double u = (lo - a[k]) / d, v = (hi - a[k]) / d;
    if (u > v) {
      double w = u;
      u = v, v = w;
    }
    t0 = u > t0 ? u : t0, t1 = v < t1 ? v : t1;
    if (t0 > t1) return 0;
  }
  return 1;
}

static int is_polytope(int shape) { return shape == KHZ_SHAPE_BOX || shape == KHZ_SHAPE_CONVEX; }

/* A cylinder's rims wholly outside the other's bounds (bit 0: the rim at
 * -h, vertices and edges 0-15; bit 1: +h, 16-31): the rim's circle in the
 * other's frame, centred between its opposite samples 0 and 8, with its
 * radius and a margin of 1e-6 of the pair's scale (far above the rounding
 * of the centre and of the tests), lies farther from the bounds (as
 * in_bounds and segment_in_bounds widen them) than that radius. Then
 * in_bounds fails for each of its vertices and segment_in_bounds for each
 * of its edges (chords of the circle): the same answers without the tests */
static int rims_outside(const vcache *vc) {
  const khzColShape *s = vc->s, *other = vc->other;
  if (s->shape != KHZ_SHAPE_CYLINDER || other->shape == KHZ_SHAPE_PLANE || vc->n != 2 * KHZ_CYL_RIM) return 0;
  double tol = KHZ_BOUNDS_SLACK * other->scale, r = s->size[0] + 1e-6 * (s->scale + other->scale);
  int out = 0;
  for (int rim = 0; rim < 2; rim++) {
    const double *v0 = vc->l + 3 * (rim * KHZ_CYL_RIM), *v8 = vc->l + 3 * (rim * KHZ_CYL_RIM + KHZ_CYL_RIM / 2);
    double d2 = 0;
    for (int k = 0; k < 3; k++) {
      double c = 0.5 * (v0[k] + v8[k]), lo = other->lo[k] - tol, hi = other->hi[k] + tol;
      double ex = c < lo ? lo - c : c > hi ? c - hi : 0;
      d2 += ex * ex;
    }
    if (d2 > r * r) out |= 1 << rim;
  }
  return out;
}

int khz_col_rimsOutside(const khzColShape *s, const khzColShape *other, double *scratch, int maxvert) {
  vcache vc;
  vcache_init(&vc, s, other, scratch, maxvert);
  return rims_outside(&vc);
}

/* Vertices of s inside other. Between two polytopes (box, hull) a vertex on
 * the other's surface, to KHZ_BOUNDS_SLACK of its scale, counts as inside:
 * a face resting on a face of the same width (a stack of equal boxes) puts
 * every corner of each on the other's side planes, where the inside test is
 * decided by round-off, and the edges along those planes graze them
 * (edges_crossing skips their crossings). Tested strictly, 2 of the 4
 * corners were found, or none and the pair was lost while 0.2 mm deep
 * (tests/collision/test_narrowphase.c, test_box_face_manifold). The
 * vertices of the overlap of two coplanar faces are corners of one face on
 * or inside the other, or crossings of edges that are not parallel, which
 * edges_crossing finds, so the footprint is then whole. */
static void vertices_inside(const vcache *vc, int side, khzColOut *o) {
  const khzColShape *other = vc->other;
  double on = is_polytope(vc->s->shape) && is_polytope(other->shape) ? KHZ_BOUNDS_SLACK * other->scale : 0;
  int out = rims_outside(vc);
  for (int i = 0; i < vc->n; i++) {
    const double *q = vc->l + 3 * i;
    if ((out && (out >> (i / KHZ_CYL_RIM) & 1)) || !in_bounds(other, q)) continue;
    double sd = khz_shape_sdLocal(other, q, NULL);
    if (sd >= -on) khz_col_addPoint(o, vc->w + 3 * i, fmax(sd, 0), side, KHZ_FEATURE(KHZ_FEAT_VERTEX, i));
  }
}

/* points where the edges of s cross the surface of other; the straight
 * crossing edges go to list for the edge-edge axes (box and hull edges, one
 * generator of a cylinder: its rim segments only approximate a circle) */
KHZ_AVX_CLONES static void edges_crossing(const vcache *vc, int side, khzColOut *o, int *list, int *nlist) {
  const khzColShape *s = vc->s, *other = vc->other;
  int ne = vc->n ? khz_shape_nedge(s) : 0, generator = 0;
  double on = is_polytope(s->shape) && is_polytope(other->shape) ? KHZ_BOUNDS_SLACK * other->scale : 0;
  int out = ne ? rims_outside(vc) : 0;
  for (int e = 0; e < ne; e++) {
    int v[2];
    double t[2], c[3];
    if (out && e < 2 * KHZ_CYL_RIM && (out >> (e / KHZ_CYL_RIM) & 1)) continue;
    khz_shape_edge(s, e, v);
    const double *a = vc->l + 3 * v[0], *b = vc->l + 3 * v[1];
    if (!segment_in_bounds(other, a, b) || !khz_shape_clipLocal(other, a, b, t)) continue;
    const double *p0 = vc->w + 3 * v[0], *p1 = vc->w + 3 * v[1];
    double dir[3];
    khzu_sub3(dir, p1, p0);
    int cross = 0;
    double dl = sqrt(khzu_dot3(dir, dir));
    /* the part of the edge within which a crossing is its end: between
     * polytopes `on`, in the terms of vertices_inside, which then finds the
     * end (KHZ_SEG_END of a 0.4 m edge is 4e-10 m, and a corner 3e-10 m
     * outside the other box was neither) */
    double at_end = on > 0 && dl > 0 ? on / dl : KHZ_SEG_END;
    for (int end = 0; end < 2; end++) {
      if (end == 0 ? !(t[0] > at_end) : !(t[1] < 1 - at_end)) continue;
      khzu_addScl3(c, p0, dir, t[end]);
      cross = 1;
      /* an edge that grazes a face (lies in its plane, as the edges of two
       * aligned boxes of one size do) crosses it at a place set by round-off:
       * such points would come and go anywhere along the edge */
      double nrm[3];
      khz_shape_sd(other, c, nrm);
      if (dl > 0 && fabs(khzu_dot3(dir, nrm)) < KHZ_GRAZE * dl * sqrt(khzu_dot3(nrm, nrm))) continue;
      khz_col_addPoint(o, c, 0, side, KHZ_FEATURE(KHZ_FEAT_EDGE, 2 * e + end));
    }
    if (!cross || !list || *nlist >= KHZ_MAXCROSS) continue;
    if (s->shape == KHZ_SHAPE_CYLINDER && (e < 2 * KHZ_CYL_RIM || generator++)) continue;
    list[(*nlist)++] = e;
  }
}

/* The deepest generator p0-p1 of a cylinder's side (between its exact
 * deepest rim points): a side lying across an edge or another cylinder is
 * deepest between its rims, where no rim point and no sampled generator is.
 * Its points are where it enters and leaves the other shape and, inside a
 * cylinder (whose depths are capped by the way out along the normal,
 * set_depths), the point of the longest way out, by ternary search: that
 * length is concave along a line through a convex shape. */
#define KHZ_GENERATOR_SEARCH 24

static double way_out(const khzColShape *other, const double q[3], const double dir[3], double len) {
  double end[3], t[2];
  khzu_addScl3(end, q, dir, len);
  if (!khz_shape_clip(other, q, end, t) || t[0] > KHZ_SEG_END) return 0;
  return t[1] * len;
}

static void generator_points(const khzColShape *s, const khzColShape *other, int side,
                             const double n[3], const double p0[3], const double p1[3], int ends,
                             khzColOut *o) {
  double t[2], d[3], q[3];
  if (!khz_shape_clip(other, p0, p1, t) || !(t[1] > t[0])) return;
  khzu_sub3(d, p1, p0);
  for (int e = 0; e < 2 && ends; e++) {
    if (!(t[e] > KHZ_SEG_END && t[e] < 1 - KHZ_SEG_END)) continue;
    khzu_addScl3(q, p0, d, t[e]);
    khz_col_addPoint(o, q, 0, side, KHZ_FEATURE(KHZ_FEAT_RIM, 2 + e));
  }
  if (other->shape != KHZ_SHAPE_CYLINDER) return;
  double out[3], len = 4 * (other->bradius + s->bradius), lo = t[0], hi = t[1];
  khzu_scl3(out, n, side == 0 ? 1 : -1);
  for (int it = 0; it < KHZ_GENERATOR_SEARCH; it++) {
    double a = lo + (hi - lo) / 3, b = hi - (hi - lo) / 3, qa[3], qb[3];
    khzu_addScl3(qa, p0, d, a);
    khzu_addScl3(qb, p0, d, b);
    if (way_out(other, qa, out, len) < way_out(other, qb, out, len)) lo = a;
    else hi = b;
  }
  khzu_addScl3(q, p0, d, 0.5 * (lo + hi));
  double sd = khz_shape_sd(other, q, NULL);
  if (sd > 0) khz_col_addPoint(o, q, sd, side, KHZ_FEATURE(KHZ_FEAT_RIM, 4));
}

/* drops the points of side `side` with feature kind and index among idx[0..nidx) */
static void drop_points(khzColOut *o, int side, int kind, const int *idx, int nidx) {
  int w = 0;
  for (int i = 0; i < o->npt; i++) {
    const khzColPoint *pt = o->pt + i;
    int drop = 0;
    if (pt->side == side && ((pt->feature >> 24) & 0xf) == kind)
      for (int j = 0; j < nidx; j++) drop |= (pt->feature & 0xffffff) == idx[j];
    if (!drop) o->pt[w++] = *pt;
  }
  o->npt = w;
}

/* the exact deepest point of each rim of cylinder s along -n (side 0) or +n
 * (side 1), when it lies inside other, and the points of the generator
 * between them.
 * The rim samples next to that point (within one sample spacing) are
 * material points: where one of them carries the side of a cylinder lying
 * on it, rolling the cylinder by phi moves it r sin(phi) ahead of the
 * centre, and its normal force (the weight) drives the rolling further, a
 * torque m g r phi against the rolling inertia 3/2 m r^2: the resting
 * cylinder was unstable, e-folding in sqrt(1.5 r / g) (28 ms at r = 5 mm),
 * until the sample rose out (phi = sqrt(2 d / r)) and it rocked with that
 * amplitude; rolling down a slope it ran over a 16-sided polygon. So for a
 * cylinder lying on its side (both rims' points inside) the exact points,
 * kept where the surface faces the other body (contact/penalty.c,
 * surface_point), stand for those samples: they and the crossings of the
 * generator edges through them are dropped, and the generator's crossings
 * are the exact generator's. Tilted onto one rim, the samples stay (dropping
 * them there too moved the piles; docs/validation.md). */
static void rim_points(const khzColShape *s, const khzColShape *other, int side,
                       const double n[3], khzColOut *o) {
  if (s->shape != KHZ_SHAPE_CYLINDER) return;
  double z[3], u[3];
  axis_z(s, z);
  khzu_addScl3(u, n, z, -khzu_dot3(n, z));
  /* a rim nearly parallel to the contact plane: its samples lie within
   * r (1 - cos(pi/16)) KHZ_RIM_TILT of its lowest point, and that point's
   * place along the rim is ill-conditioned (it swings round with the tilt) */
  if (khzu_normalize3(u) < KHZ_RIM_TILT) return;
  double sgn = side == 0 ? -1 : 1;
  const double *R = s->rot; /* the rim point's direction sgn u in the cylinder's frame */
  double ang = atan2(sgn * (R[1] * u[0] + R[4] * u[1] + R[7] * u[2]),
                     sgn * (R[0] * u[0] + R[3] * u[1] + R[6] * u[2]));
  const int N = KHZ_CYL_RIM;
  double step = 2 * M_PI / N;
  /* the samples bracketing the rim point (one when it is on a sample, to
   * 0.1 um): k0 = floor(ang / step) and k0 + 1 */
  double fk = floor(ang / step), off = ang - step * fk;
  int k0 = ((int)fk % N + N) % N, k1 = (k0 + 1) % N;
  int on0 = s->size[0] * (1 - cos(off)) < KHZ_ON_SAMPLE;
  int on1 = s->size[0] * (1 - cos(step - off)) < KHZ_ON_SAMPLE;
  int near[2], nnear = 0;
  if (!on1) near[nnear++] = k0;
  if (!on0) near[nnear++] = k1;
  double p[2][3], sd[2];
  for (int rim = 0; rim < 2; rim++) {
    khzu_addScl3(p[rim], s->pos, z, rim ? s->size[1] : -s->size[1]);
    khzu_addScl3(p[rim], p[rim], u, sgn * s->size[0]);
    sd[rim] = khz_shape_sd(other, p[rim], NULL);
  }
  /* lying on its side (both rims' points inside): the exact points carry the
   * side, and the samples next to them go (above). Tilted onto one rim, the
   * samples near its point carry the cylinder's tilt as before and the exact
   * point is added only between samples (on one, to 0.1 um, it would be a
   * second point in the same place). */
  int lying = sd[0] >= 0 && sd[1] >= 0;
  for (int rim = 0; rim < 2; rim++) {
    if (!(sd[rim] >= 0)) continue;
    if (lying) {
      int v[2] = {rim * N + near[0], rim * N + near[nnear - 1]};
      drop_points(o, side, KHZ_FEAT_VERTEX, v, 2);
    } else if (nnear < 2)
      continue;
    khz_col_addPoint(o, p[rim], sd[rim], side, KHZ_FEATURE(KHZ_FEAT_RIM, rim));
  }
  if (lying) { /* the generator edges 2N + k through those samples: their crossings */
    int e[4] = {2 * (2 * N + near[0]), 2 * (2 * N + near[0]) + 1, 2 * (2 * N + near[nnear - 1]),
                2 * (2 * N + near[nnear - 1]) + 1};
    drop_points(o, side, KHZ_FEAT_EDGE, e, 4);
  }
  /* on a sample and not lying, the generator is an edge: its crossings are
   * points already, but not its deepest point inside a cylinder */
  generator_points(s, other, side, n, p[0], p[1], lying || nnear == 2, o);
}

/* the outward facet normals of s that a cylinder may rest on: a box's faces,
 * a hull's planes, a cylinder's caps and its radial direction towards p */
static int facet_normals(const khzColShape *s, const double p[3], double (*out)[3], int cap) {
  int n = 0;
  if (s->shape == KHZ_SHAPE_BOX) {
    for (int k = 0; k < 3; k++)
      for (int sg = 1; sg >= -1; sg -= 2) {
        double ax[3] = {sg * s->rot[k], sg * s->rot[3 + k], sg * s->rot[6 + k]};
        khzu_copy3(out[n++], ax);
      }
  } else if (s->shape == KHZ_SHAPE_CYLINDER) {
    double z[3], r[3];
    axis_z(s, z);
    khzu_copy3(out[n++], z);
    khzu_scl3(out[n++], z, -1);
    khzu_sub3(r, p, s->pos);
    khzu_addScl3(r, r, z, -khzu_dot3(r, z));
    if (khzu_normalize3(r) > KHZ_NO_DIRECTION) khzu_copy3(out[n++], r);
  } else if (s->shape == KHZ_SHAPE_CONVEX) {
    for (int f = 0; f < s->hull->nplane && n < cap; f++) {
      double w[3];
      khz_shape_toWorld(s, s->hull->plane + 4 * f, w);
      khzu_sub3(out[n++], w, s->pos);
    }
  }
  return n;
}

/* A cylinder's curved side can sink into a plane between its rim samples
 * with no sample inside (up to r (1 - cos(pi / 16)), 2 mm for a 0.11 m
 * wheel): then the exact deepest rim points along the plane's normal are the
 * contact. (A plane is shape A.) */
static int rims_plane(const khzColShape *a, const khzColShape *b, khzColOut *o) {
  double n[3];
  o->npt = 0;
  if (b->shape != KHZ_SHAPE_CYLINDER) return 0;
  axis_z(a, n);
  khzu_scl3(n, n, -1);
  rim_points(b, a, 1, n, o);
  return set_depths(a, b, o, n) > 0;
}

/* ------------------------------------------------------ eq. 4 search -- */

typedef struct {
  const khzColShape *a, *b;
  const khzColOut *o;
  double best, n[3], tie;
  int have;
  int sat; /* both bounded convex: score by the overlap of the projections */
  double second, n2[3]; /* the best candidate away from n (another start for refine_normal) */
  int have2;
  int until_apart; /* refine_normal stops at the first n along which the shapes are apart */
  int flags;       /* KHZ_COL_SCORE_ALL: exact_normal solves every circle and pair of rims (no
                    * pruning); KHZ_COL_EXACT_SLOPES: slope_at at every arc end (tests) */
} nsearch;

/* the overlap of the two shapes' projections on n, h_B(n) + h_A(-n): the
 * translation along n that separates them */
/* khz_shape_h inline (GCC kept it out of line in consider) */
static inline __attribute__((always_inline)) double shape_h(const khzColShape *s, const double dir[3]) {
  double p[3];
  khz_shape_support(s, dir, p);
  return khzu_dot3(dir, p);
}

KHZ_AVX_CLONES static double overlap(const khzColShape *a, const khzColShape *b, const double n[3]) {
  double m[3] = {-n[0], -n[1], -n[2]};
  return shape_h(b, n) + shape_h(a, m);
}

KHZ_AVX_CLONES static void consider(nsearch *ns, const double cand[3]) {
  double n[3];
  khzu_copy3(n, cand);
  if (khzu_normalize3(n) < KHZ_NO_DIRECTION) return;
  double f;
  if (ns->sat && ns->a->shape != KHZ_SHAPE_PLANE && ns->b->shape != KHZ_SHAPE_PLANE) {
    /* the translation that separates A along n is the overlap of the two
     * shapes' projections, h_B(n) + h_A(-n): eq. 4 scored on the points alone
     * picks a side facet of two aligned boxes whose penetrating corners lie on
     * that facet's plane (max distance 0) although A cannot leave that way.
     * Without a plane support_h is khz_shape_h, so the objective's two
     * support values are the overlap's: each is computed once (the same
     * bits as overlap()) */
    double m[3] = {-n[0], -n[1], -n[2]};
    double hb = shape_h(ns->b, n), ha = shape_h(ns->a, m);
    f = fmax(points_objective(ns->o, n, hb, ha), hb + ha);
  } else {
    f = objective(ns->a, ns->b, ns->o, n);
    if (ns->sat) f = fmax(f, overlap(ns->a, ns->b, n));
  }
  if (!ns->have || f < ns->best - ns->tie) {
    if (ns->have && khzu_dot3(ns->n, n) < KHZ_OTHER_DIRECTION_COS) ns->second = ns->best, khzu_copy3(ns->n2, ns->n), ns->have2 = 1;
    ns->best = f;
    khzu_copy3(ns->n, n);
    ns->have = 1;
  } else if (khzu_dot3(ns->n, n) < KHZ_OTHER_DIRECTION_COS && (!ns->have2 || f < ns->second)) {
    ns->second = f, khzu_copy3(ns->n2, n), ns->have2 = 1;
  }
}

/* the facets of s holding a point (local coordinates loc) as candidates;
 * sign = +1 for B (outward normal = n), -1 for A */
static void facet_candidates(nsearch *ns, const khzColShape *s, double sign, const double *loc,
                             double tol) {
  const khzColOut *o = ns->o;
  const double *sz = s->size;
  double ln[3], w[3];
  switch (s->shape) {
    case KHZ_SHAPE_BOX:
      for (int k = 0; k < 3; k++)
        for (int sg = 1; sg >= -1; sg -= 2) {
          int on = 0;
          for (int i = 0; i < o->npt && !on; i++) on = fabs(sg * loc[3 * i + k] - sz[k]) <= tol;
          if (!on) continue;
          ln[0] = ln[1] = ln[2] = 0;
          ln[k] = sign * sg;
          khz_shape_toWorld(s, ln, w);
          khzu_sub3(w, w, s->pos);
          consider(ns, w);
        }
      break;
    case KHZ_SHAPE_CYLINDER: {
      /* caps */
      for (int sg = 1; sg >= -1; sg -= 2) {
        int on = 0;
        for (int i = 0; i < o->npt && !on; i++) on = fabs(sg * loc[3 * i + 2] - sz[1]) <= tol;
        if (!on) continue;
        double z[3];
        axis_z(s, z);
        khzu_scl3(w, z, sign * sg);
        consider(ns, w);
      }
      /* side: the radial direction at the deepest side point and at their mean */
      double mean[2] = {0, 0}, deep = -DBL_MAX;
      int nside = 0, kd = -1;
      for (int i = 0; i < o->npt; i++) {
        double rho = sqrt(loc[3 * i] * loc[3 * i] + loc[3 * i + 1] * loc[3 * i + 1]);
        if (fabs(rho - sz[0]) > tol) continue;
        mean[0] += loc[3 * i], mean[1] += loc[3 * i + 1], nside++;
        if (o->pt[i].sd > deep) deep = o->pt[i].sd, kd = i;
      }
      for (int c = 0; c < 2 && nside; c++) {
        ln[0] = c ? mean[0] : loc[3 * kd], ln[1] = c ? mean[1] : loc[3 * kd + 1], ln[2] = 0;
        if (khzu_normalize3(ln) == 0) continue;
        khzu_scl3(ln, ln, sign);
        khz_shape_toWorld(s, ln, w);
        khzu_sub3(w, w, s->pos);
        consider(ns, w);
      }
      break;
    }
    case KHZ_SHAPE_CONVEX: {
      const khzColHull *h = s->hull;
      for (int f = 0; f < h->nplane; f++) {
        const double *pl = h->plane + 4 * f;
        int on = 0;
        for (int i = 0; i < o->npt && !on; i++) on = fabs(khzu_dot3(pl, loc + 3 * i) - pl[3]) <= tol;
        if (!on) continue;
        khzu_scl3(ln, pl, sign);
        khz_shape_toWorld(s, ln, w);
        khzu_sub3(w, w, s->pos);
        consider(ns, w);
      }
      break;
    }
    default:
      break;
  }
}

/* A cylinder's rim is a curved edge: where a corner or an edge meets it, the
 * direction of least penetration lies between the cap's and the side's
 * normals and no facet gives it (the cap's axis can overstate a shallow
 * corner's depth many times over). From the best candidate, a pattern
 * search on the unit sphere lowers the overlap of the projections,
 * g(n) = h_B(n) + h_A(-n): for two convex shapes it is at least the
 * penetration depth along any n and equals it at its minimum (the distance
 * from the origin to the boundary of the Minkowski difference B - A), so each
 * accepted step only tightens the bound. g has creases along the great
 * circles normal to a box's axes and to a cylinder's axis (h_box(n) =
 * sum_k a_k |n.e_k|, h_cyl(n) = h |n.z| + r |n - (n.z) z|); a minimum on a
 * crease is found by trial steps along it, e x n, besides the ring of eight.
 * A local minimum (a resting face) is recognised by the first ring. A box
 * against a cylinder and two cylinders take the exact form instead
 * (exact_normal, below); the search stays for cylinder-hull pairs. */
#define KHZ_REFINE_STEP 0.25  /* largest trial angle (rad) */
#define KHZ_REFINE_TOL 1e-6   /* last trial angle (rad): depth error ~ size * tol^2 */
#define KHZ_REFINE_EVALS 600  /* overlap evaluations at most */

/* the axes whose normal great circles are creases of g (<= 6) */
static int crease_axes(const khzColShape *s, double (*ax)[3], int n) {
  if (s->shape == KHZ_SHAPE_BOX)
    for (int k = 0; k < 3; k++) ax[n][0] = s->rot[k], ax[n][1] = s->rot[3 + k], ax[n++][2] = s->rot[6 + k];
  else if (s->shape == KHZ_SHAPE_CYLINDER)
    axis_z(s, ax[n++]);
  return n;
}

static double refine_from(const nsearch *ns, double n[3]);

/* ------------------------------------- exact least overlap, box-cylinder -- */

/* The least overlap g(n) = h_B(n) + h_A(-n) of a box and a cylinder, in
 * closed form up to one root per arc (Minkowski-difference argument):
 * where n crosses no crease (n.e_k != 0 for the box's axes e_k, n.z != 0
 * and n != +-z for the cylinder's axis z) the supports are a box vertex v
 * and a point of one rim, and g(n) = d.n + r |n - (n.z) z| with
 * d = v - (the rim's centre): for a fixed direction u of n's part across z,
 * g = A cos(a) + B sin(a) along the meridian n = cos(a) u + sin(a) z, whose
 * only interior minimum is -sqrt(A^2 + B^2) <= 0. So a positive minimum of g
 * (the penetration depth, the distance from the origin to the boundary of
 * the Minkowski difference B - A) lies on a crease or at a pole: on one of
 * the four great circles normal to e_0, e_1, e_2 and z (a box edge against
 * a rim or a generator, a box vertex or edge against the side), or at +-z
 * (the caps). On a circle n(phi) = cos(phi) p + sin(phi) q the creases of
 * the other axes cut arcs on which g is smooth; its slope there is
 * g'(phi) = n'.(s_B(n) - s_A(-n)) (the gradient of a support function is
 * the support point), and each change of sign from - to + is a local
 * minimum, found by the Illinois method. Face normals, edge-generator
 * normals (e_k x z) are the arcs' ends, evaluated too. A negative minimum
 * (apart) can also lie inside a region: a box vertex against a rim, whose
 * direction is from the rim's closest point to the vertex. Every candidate
 * is scored by g itself, an upper bound on the depth: the least of them is
 * exact when the true minimiser is among them, and never above a search's
 * result started from any of them. */
#define KHZ_EXACT_ITERS 48      /* Illinois steps per root at most */
#define KHZ_EXACT_TOL 1e-11     /* rad: a root's bracket this narrow is the root */
#define KHZ_EXACT_INSIDE 1e-9   /* fraction of an arc inside its ends where g' is taken */
#define KHZ_PRUNE_SLACK 1e-9 /* x the pair's scale: a pruning bound's margin over rounding */

typedef struct {
  const nsearch *ns;
  double f, n[3]; /* the least overlap so far and its direction */
  int prune;      /* skip the circles, rims and candidates whose lower bound is above f (0: tests) */
  int sure;       /* take the arc ends' slope signs from slope_sign where certain (0: tests) */
  double d[3];    /* pos_B - pos_A */
  double floor;   /* the shapes' inradii less the pruning slack (exact_try) */
} exact_best;

/* g(n) = h_B(n) + h_A(-n) = n.(pos_B - pos_A) + n_B.l_B - n_A.l_A with n_X
 * = n in X's frame and l_X the local support points (no rotation back) */
static double overlap_local(const khzColShape *a, const khzColShape *b, const double n[3]) {
  double na[3], nb[3], la[3], lb[3], d[3];
  khz_shape_toLocalDir(b, n, nb);
  khz_shape_toLocalDir(a, n, na);
  khzu_scl3(na, na, -1);
  khz_shape_supportLocal(b, nb, lb);
  khz_shape_supportLocal(a, na, la);
  khzu_sub3(d, b->pos, a->pos);
  return khzu_dot3(n, d) + khzu_dot3(nb, lb) + khzu_dot3(na, la);
}

/* Every unit n scores g(n) = n.d + h_B(n) + h_A(-n) >= n.d + rho_A + rho_B,
 * rho a shape's inradius (a box's least half size, a cylinder's min(r, h)):
 * sum_k a_k |n.e_k| >= min_k a_k and h |n.z| + r |n across z| >= min(r, h).
 * A candidate whose bound lies above the least overlap so far by the slack
 * (far above g's rounding) would not be taken: it is not scored (the same
 * answer bit for bit; test_exact_pruned). n.d is overlap_local's own term. */
static double inradius(const khzColShape *s) {
  const double *sz = s->size;
  return s->shape == KHZ_SHAPE_BOX ? khzu_fmin(sz[0], khzu_fmin(sz[1], sz[2])) : khzu_fmin(sz[0], sz[1]);
}

static void exact_begin(exact_best *e, const nsearch *ns) {
  const khzColShape *a = ns->a, *b = ns->b;
  e->ns = ns, e->f = DBL_MAX, e->n[0] = e->n[1] = 0, e->n[2] = 1;
  e->prune = !(ns->flags & KHZ_COL_SCORE_ALL), e->sure = !(ns->flags & KHZ_COL_EXACT_SLOPES);
  khzu_sub3(e->d, b->pos, a->pos);
  e->floor = inradius(a) + inradius(b) - KHZ_PRUNE_SLACK * (a->scale + b->scale);
}

KHZ_AVX_CLONES static void exact_try(exact_best *e, const double cand[3]) {
  double n[3];
  khzu_copy3(n, cand);
  if (khzu_normalize3(n) < KHZ_NO_DIRECTION) return;
  if (e->prune && khzu_dot3(n, e->d) + e->floor > e->f) return;
  double f = overlap_local(e->ns->a, e->ns->b, n);
  if (f < e->f) e->f = f, khzu_copy3(e->n, n);
}

static void circle_at(const double p[3], const double q[3], double phi, double n[3], double t[3]) {
  double c = cos(phi), s = sin(phi);
  for (int j = 0; j < 3; j++) n[j] = c * p[j] + s * q[j], t[j] = c * q[j] - s * p[j];
}

/* a great circle n(phi) = cos(phi) p + sin(phi) q, with p and q turned once
 * into each shape's frame, so that g's slope costs no rotation */
typedef struct {
  double p[3], q[3];
  double pa[3], qa[3], pb[3], qb[3]; /* p, q in A's and B's frames */
  double pd, qd;                     /* p, q dotted with pos_B - pos_A */
} exact_gc;

static void gc_make(exact_gc *gc, const exact_best *e, const double p[3], const double q[3]) {
  const khzColShape *a = e->ns->a, *b = e->ns->b;
  double d[3];
  khzu_copy3(gc->p, p);
  khzu_copy3(gc->q, q);
  khz_shape_toLocalDir(a, p, gc->pa);
  khz_shape_toLocalDir(a, q, gc->qa);
  khz_shape_toLocalDir(b, p, gc->pb);
  khz_shape_toLocalDir(b, q, gc->qb);
  khzu_sub3(d, b->pos, a->pos);
  gc->pd = khzu_dot3(p, d), gc->qd = khzu_dot3(q, d);
}

/* g'(phi) = t.(s_B(n) - s_A(-n)), t = n'(phi): t.pos + (t in the shape's
 * frame).(the local support point) for each shape */
KHZ_AVX_CLONES static double slope_at(const exact_best *e, const exact_gc *gc, double phi) {
  double c = cos(phi), s = sin(phi), na[3], nb[3], la[3], lb[3], ta[3], tb[3];
  for (int j = 0; j < 3; j++) {
    na[j] = -(c * gc->pa[j] + s * gc->qa[j]), nb[j] = c * gc->pb[j] + s * gc->qb[j];
    ta[j] = c * gc->qa[j] - s * gc->pa[j], tb[j] = c * gc->qb[j] - s * gc->pb[j];
  }
  khz_shape_supportLocal(e->ns->a, na, la);
  khz_shape_supportLocal(e->ns->b, nb, lb);
  return c * gc->qd - s * gc->pd + khzu_dot3(tb, lb) - khzu_dot3(ta, la);
}

/* The sign of slope_at(x) without sin and cos of x: exact_circle knows
 * cos x and sin x to within about 1e-14 from its creases' directions, and
 * the same sum with the same supports gives slope_at's sign as long as no
 * support can change side within that error and the value lies beyond the
 * sum's error bound. The supports: a box's side of each axis (|n.e_k| above
 * KHZ_SLOPE_SIDE), a cylinder's cap (|n.z|, the same) and its rim point
 * (the radial part |n across z| above KHZ_SLOPE_RHO); an axis whose crease
 * holds the circle (|p.e_k| + |q.e_k| below KHZ_SLOPE_OPEN: there n.e_k is
 * rounding) is left out of the sum, with its term's largest size, 2 (|p.e_k|
 * + |q.e_k|) a_k, added to the bound. The bound: n and t move by <= 2e-14,
 * the slope by that times |pos.p| + |pos.q|, the support points' sizes and
 * a rim point's turn, r |dn| / |n across z| <= 2e-14 r / KHZ_SLOPE_RHO;
 * KHZ_SLOPE_SURE x that scale leaves a factor 50 over it and the sums'
 * rounding. Once per circle (slope_bound_make); 0 when not certain (the
 * caller takes slope_at). */
#define KHZ_SLOPE_SURE 1e-12 /* x the slope's scale: a value this far from 0 has a certain sign */
#define KHZ_SLOPE_SIDE 1e-12 /* |n.axis| above which a support's side is certain */
#define KHZ_SLOPE_RHO 1e-3   /* |n across z| above which a rim point is certain */
#define KHZ_SLOPE_OPEN 1e-9  /* |p.axis| + |q.axis| below which the circle lies in the axis's crease */
typedef struct {
  double tol; /* the bound on the sum's error */
  int open[2]; /* A's, B's axes (bit k: axis k; a cylinder's z is bit 2) whose crease holds the circle */
} slope_bound;

static void slope_bound_make(slope_bound *sb, const exact_best *e, const exact_gc *gc) {
  const khzColShape *sh[2] = {e->ns->a, e->ns->b};
  const double *pl[2] = {gc->pa, gc->pb}, *ql[2] = {gc->qa, gc->qb};
  double scale = fabs(gc->pd) + fabs(gc->qd), open = 0;
  for (int i = 0; i < 2; i++) {
    const double *sz = sh[i]->size;
    int box = sh[i]->shape == KHZ_SHAPE_BOX;
    sb->open[i] = 0;
    for (int k = box ? 0 : 2; k < 3; k++) {
      double across = fabs(pl[i][k]) + fabs(ql[i][k]), half = box ? sz[k] : sz[1];
      if (across < KHZ_SLOPE_OPEN) sb->open[i] |= 1 << k, open += 2 * across * half;
    }
    scale += box ? sz[0] + sz[1] + sz[2] : sz[0] * (2 + 4 / KHZ_SLOPE_RHO) + sz[1];
  }
  sb->tol = KHZ_SLOPE_SURE * scale + open;
}

/* the local support point l of a box or cylinder along d when its sides
 * are certain (above), 0 if not; an open axis's coordinate 0 */
static inline __attribute__((always_inline)) int support_side(const khzColShape *s, int open, const double d[3],
                                                              double l[3]) {
  const double *sz = s->size;
  if (s->shape == KHZ_SHAPE_BOX) {
    for (int k = 0; k < 3; k++)
      if (open >> k & 1) l[k] = 0;
      else if (fabs(d[k]) > KHZ_SLOPE_SIDE) l[k] = d[k] >= 0 ? sz[k] : -sz[k];
      else return 0;
    return 1;
  }
  double rho2 = d[0] * d[0] + d[1] * d[1];
  if (!(rho2 > KHZ_SLOPE_RHO * KHZ_SLOPE_RHO)) return 0;
  double rr = sz[0] / sqrt(rho2);
  l[0] = rr * d[0], l[1] = rr * d[1];
  if (open) l[2] = 0;
  else if (fabs(d[2]) > KHZ_SLOPE_SIDE) l[2] = d[2] >= 0 ? sz[1] : -sz[1];
  else return 0;
  return 1;
}

/* slope_at's sign at the point with cos c and sin s (1, -1), 0 if not certain */
static inline __attribute__((always_inline)) int slope_sign(const exact_best *e, const exact_gc *gc,
                                                            const slope_bound *sb, double c, double s) {
  double na[3], nb[3], la[3], lb[3], ta[3], tb[3];
  for (int j = 0; j < 3; j++) {
    na[j] = -(c * gc->pa[j] + s * gc->qa[j]), nb[j] = c * gc->pb[j] + s * gc->qb[j];
    ta[j] = c * gc->qa[j] - s * gc->pa[j], tb[j] = c * gc->qb[j] - s * gc->pb[j];
  }
  if (!support_side(e->ns->a, sb->open[0], na, la) || !support_side(e->ns->b, sb->open[1], nb, lb)) return 0;
  double g = c * gc->qd - s * gc->pd + khzu_dot3(tb, lb) - khzu_dot3(ta, la);
  return g > sb->tol ? 1 : g < -sb->tol ? -1 : 0;
}

/* a local minimum of g on the circle between x0 and x1, where its slope
 * goes from s0 < 0 to s1 > 0: Illinois (regula falsi halving the value at
 * the end that stays) on g' */
static void exact_root(exact_best *e, const exact_gc *gc, double x0, double s0, double x1,
                       double s1) {
  double a = x0, fa = s0, b = x1, fb = s1, x = 0.5 * (a + b), n[3], t[3];
  int last = 0;
  for (int it = 0; it < KHZ_EXACT_ITERS && b - a > KHZ_EXACT_TOL; it++) {
    double xn = (a * fb - b * fa) / (fb - fa);
    if (!(xn > a && xn < b)) xn = 0.5 * (a + b);
    if (fabs(xn - x) < KHZ_EXACT_TOL && it) { x = xn; break; }
    x = xn;
    double fx = slope_at(e, gc, x);
    if (fx < 0) {
      a = x, fa = fx;
      if (last < 0) fb *= 0.5;
      last = -1;
    } else if (fx > 0) {
      b = x, fb = fx;
      if (last > 0) fa *= 0.5;
      last = 1;
    } else {
      break;
    }
  }
  circle_at(gc->p, gc->q, x, n, t);
  exact_try(e, n);
}

/* A lower bound on a box's or a cylinder's local support function h(n)
 * over the unit n normal to w (its inradius along that circle). A box's
 * h(n) = sum_k a_k |n.e_k| is, on each arc between the circle's creases
 * (n.e_k = 0), n.v for one sign vector v: R cos(phi - phi_0), concave where
 * positive, so its least is at a crease, n = w x e_k / |w x e_k|, where it
 * is (a_i |w_j| + a_j |w_i|) / sqrt(w_i^2 + w_j^2) (w_i = w.e_i; i, j the
 * other two axes); with w along e_k (w_i^2 + w_j^2 below KHZ_AXIS_SAME)
 * the least of a_i, a_j, as the circle is e_k's own plane (an error of
 * about 1e-12 of the size there, inside KHZ_PRUNE_SLACK below). A
 * cylinder's h |n.z| + r |n - (n.z) z| is, in c = |n.z| (0 <= c <= s =
 * |w x z| on the circle), h c + r sqrt(1 - c^2): concave, least at c = 0
 * (r) or c = s (h s + r |w.z|). Both are at least the former bounds
 * (min_k a_k; min(h, r)), and above them where w is no axis. */
#define KHZ_AXIS_SAME 1e-12
static double circle_inradius(const khzColShape *s, const double w[3]) {
  const double *sz = s->size;
  if (s->shape == KHZ_SHAPE_CYLINDER) {
    double z[3];
    axis_z(s, z);
    double wz[3];
    khzu_cross(wz, w, z); /* |w x z|, not sqrt(1 - (w.z)^2): no cancellation near the axis */
    return khzu_fmin(sz[0], sz[1] * khzu_norm3(wz) + sz[0] * fabs(khzu_dot3(w, z)));
  }
  double l[3], least = DBL_MAX;
  for (int k = 0; k < 3; k++) l[k] = s->rot[k] * w[0] + s->rot[3 + k] * w[1] + s->rot[6 + k] * w[2];
  for (int k = 0; k < 3; k++) {
    int i = (k + 1) % 3, j = (k + 2) % 3;
    double across = l[i] * l[i] + l[j] * l[j];
    if (across < KHZ_AXIS_SAME) return khzu_fmin(sz[i], sz[j]);
    least = khzu_fmin(least, (sz[i] * fabs(l[j]) + sz[j] * fabs(l[i])) / sqrt(across));
  }
  return least;
}

double khz_col_circleInradius(const khzColShape *s, const double w[3]) { return circle_inradius(s, w); }

/* Every candidate of the circle normal to w scores g(n) = n.d + h_B(n) +
 * h_A(-n) (d = pos_B - pos_A) >= -|d across w| + the two inradii along the
 * circle: a circle whose bound lies above the least overlap so far by the
 * slack has no candidate that exact_try would take, and is skipped (the
 * answer is the same bit for bit; test_exact_pruned checks it) */
static int circle_above(const exact_best *e, const double w[3]) {
  const khzColShape *a = e->ns->a, *b = e->ns->b;
  double d[3];
  khzu_sub3(d, b->pos, a->pos);
  khzu_addScl3(d, d, w, -khzu_dot3(d, w));
  double bound = circle_inradius(a, w) + circle_inradius(b, w) - khzu_norm3(d);
  return bound > e->f + KHZ_PRUNE_SLACK * (a->scale + b->scale);
}

/* a circle's sorted breaks: angles, their cos and sin (by the place before
 * the sort), and kink[i] = 2 (that place) + (a kink) */
typedef struct {
  const double *brk, *bc, *bs;
  const int *kink;
  int nb;
} arc_breaks;

/* the angle inside break i by KHZ_EXACT_INSIDE of the arc after it (hi 0)
 * or before it (hi 1) at a kink; at a smooth break its own */
static inline double arc_end_eps(const arc_breaks *ab, int i, int hi) {
  const double *brk = ab->brk;
  int nb = ab->nb;
  if (hi) return KHZ_EXACT_INSIDE * (i ? brk[i] - brk[i - 1] : brk[0] + 2 * M_PI - brk[nb - 1]);
  return KHZ_EXACT_INSIDE * ((i + 1 < nb ? brk[i + 1] : brk[0] + 2 * M_PI) - brk[i]);
}

static inline double arc_end_x(const arc_breaks *ab, int i, int hi) {
  if (!(ab->kink[i] & 1)) return ab->brk[i];
  double eps = arc_end_eps(ab, i, hi);
  return hi ? ab->brk[i] - eps : ab->brk[i] + eps;
}

/* g's slope sign at the end x of an arc at break i (its start: hi 0; its
 * end: hi 1): slope_sign's when certain, else 0 with slope_at's value in
 * *val; a smooth break's once per circle (known, sg, sv) */
static inline __attribute__((always_inline)) int arc_end(const exact_best *e, const exact_gc *gc,
                                                         const slope_bound *sb, const arc_breaks *ab, int i,
                                                         int hi, double x, unsigned long long *known, int *sg,
                                                         double *sv, double *val) {
  int at = ab->kink[i] >> 1, g;
  double c = ab->bc[at], sn = ab->bs[at];
  if (ab->kink[i] & 1) {
    double eps = arc_end_eps(ab, i, hi);
    g = hi ? slope_sign(e, gc, sb, c + sn * eps, sn - c * eps) : slope_sign(e, gc, sb, c - sn * eps, sn + c * eps);
    if (!g) *val = slope_at(e, gc, x);
    return g;
  }
  if (!(*known >> i & 1)) {
    sg[i] = slope_sign(e, gc, sb, c, sn);
    if (!sg[i]) sv[i] = slope_at(e, gc, x);
    *known |= 1ull << i;
  }
  if (!sg[i]) *val = sv[i];
  return sg[i];
}

/* exact_circle's arcs as before arc_end (tests: KHZ_COL_EXACT_SLOPES):
 * slope_at at both ends of every arc first, then the roots */
static __attribute__((noinline)) void exact_arcs_every_end(exact_best *e, const exact_gc *gc, const arc_breaks *ab) {
  double lo_x[6 * 8], lo_s[6 * 8], hi_x[6 * 8], hi_s[6 * 8];
  const double *brk = ab->brk;
  int nb = ab->nb;
  for (int i = 0; i < nb; i++) {
    int k = i ? i - 1 : nb - 1;
    if (ab->kink[i] & 1) {
      double before = i ? brk[i] - brk[k] : brk[0] + 2 * M_PI - brk[k];
      double after = (i + 1 < nb ? brk[i + 1] : brk[0] + 2 * M_PI) - brk[i];
      lo_x[i] = brk[i] + KHZ_EXACT_INSIDE * after, hi_x[k] = brk[i] - KHZ_EXACT_INSIDE * before;
      lo_s[i] = slope_at(e, gc, lo_x[i]);
      hi_s[k] = slope_at(e, gc, hi_x[k]);
    } else {
      lo_x[i] = hi_x[k] = brk[i];
      lo_s[i] = hi_s[k] = slope_at(e, gc, brk[i]);
    }
  }
  for (int i = 0; i < nb; i++) {
    double hi = hi_x[i] < lo_x[i] ? hi_x[i] + 2 * M_PI : hi_x[i];
    if (lo_s[i] < 0 && hi_s[i] > 0 && hi - lo_x[i] > KHZ_EXACT_TOL) exact_root(e, gc, lo_x[i], lo_s[i], hi, hi_s[i]);
  }
}

/* the local minima of g on the great circle normal to w, away from its
 * creases (those points are exact_normal's own candidates); ax[nax] the
 * crease axes, cyl[ncyl] the cylinders' axes */
KHZ_AVX_CLONES static void exact_circle(exact_best *e, const double w[3], const double (*ax)[3], int nax,
                         const double (*cyl)[3], int ncyl) {
  double p[3], q[3], brk[6 * 8];
  double bc[6 * 8], bs[6 * 8]; /* cos, sin of each break, by its place before the sort */
  int kink[6 * 8], nb = 0; /* kink: 2 (place before the sort) + (a kink) */
  if (e->prune && circle_above(e, w)) return;
  khzu_orthogonal(p, w);
  khzu_cross(q, w, p);
  /* arc ends: the other creases (n.x = 0, kinks of g), and the points
   * nearest a cylinder's poles (smooth unless the circle passes through the
   * pole; they split the arc where g may have two minima) */
  for (int j = 0; j < nax + ncyl; j++) {
    const double *x = j < nax ? ax[j] : cyl[j - nax];
    /* |(cp, cq)| by sqrt: within 2 ulps of hypot's, which decides only
     * within 1e-12 of the threshold (c and sn feed slope_sign alone, whose
     * bound takes 2e-14) */
    double cp = khzu_dot3(p, x), cq = khzu_dot3(q, x), len = sqrt(cp * cp + cq * cq);
    if (fabs(len - KHZ_CREASE_SIN) <= 1e-12 * KHZ_CREASE_SIN) len = hypot(cp, cq);
    if (len < KHZ_CREASE_SIN) continue; /* this circle's own axis */
    double phi = j < nax ? atan2(-cp, cq) : atan2(cq, cp);
    /* phi's cos and sin: the direction (cq, -cp) or (cp, cq), turned by pi with phi */
    double c = (j < nax ? cq : cp) / len, sn = (j < nax ? -cp : cq) / len;
    if (phi < 0) phi += M_PI, c = -c, sn = -sn;
    if (phi >= M_PI) phi -= M_PI, c = -c, sn = -sn;
    kink[nb] = 2 * nb + (j < nax), kink[nb + 1] = 2 * nb + 2 + (j < nax);
    bc[nb] = c, bs[nb] = sn, bc[nb + 1] = -c, bs[nb + 1] = -sn;
    brk[nb++] = phi, brk[nb++] = phi + M_PI;
    if (j < nax) continue;
    /* the circle passes the pole at the angle c = |w.z| (small c: g's
     * cylinder term r sqrt(sin^2 + c^2 cos^2) of the angle from the nearest
     * point turns from a slope -r to +r within about c of it, where the
     * minimum next to the pole lies, and the rest of g bends only over angles
     * of order 1): splits at sqrt(c) on either side part the two */
    double sc = fmin(sqrt(fabs(khzu_dot3(w, x))), 0.25 * M_PI), csc = cos(sc), ssc = sin(sc);
    for (int side = 0; side < 4; side++) {
      double v = (side < 2 ? phi : phi + M_PI) + (side & 1 ? sc : -sc);
      double c0 = side < 2 ? c : -c, s0 = side < 2 ? sn : -sn, s1 = side & 1 ? ssc : -ssc;
      bc[nb] = c0 * csc - s0 * s1, bs[nb] = s0 * csc + c0 * s1;
      kink[nb] = 2 * nb, brk[nb++] = v < 0 ? v + 2 * M_PI : v >= 2 * M_PI ? v - 2 * M_PI : v;
    }
  }
  if (!nb) kink[nb] = 0, bc[nb] = 1, bs[nb] = 0, brk[nb++] = 0;
  exact_gc gc;
  gc_make(&gc, e, p, q);
  for (int i = 1; i < nb; i++) /* insertion sort */
    for (int k = i; k > 0 && brk[k] < brk[k - 1]; k--) {
      double tb = brk[k];
      int tk = kink[k];
      brk[k] = brk[k - 1], kink[k] = kink[k - 1];
      brk[k - 1] = tb, kink[k - 1] = tk;
    }
  slope_bound sb;
  if (e->sure) slope_bound_make(&sb, e, &gc);
  /* g's slope at both ends of each arc (arc i from break i to the next):
   * at a smooth end the slope there (shared with the next arc), at a kink
   * just inside; a change of sign from - to + brackets a minimum. The sign
   * alone decides that: slope_sign's where it is certain (the cos and sin
   * of a point inside a kink by eps from brk's, to first order: the error
   * eps^2 / 2 <= 2e-17), slope_at's otherwise; slope_at's values only for
   * the arcs solved. An arc whose start's slope is not negative holds no
   * minimum: its far end is not taken (arc_end) */
  arc_breaks ab = {brk, bc, bs, kink, nb};
  if (!e->sure) {
    exact_arcs_every_end(e, &gc, &ab);
    return;
  }
  unsigned long long smooth_known = 0; /* bit i: break i's smooth slope in smooth_g, smooth_s */
  int smooth_g[6 * 8];
  double smooth_s[6 * 8];
  for (int i = 0; i < nb; i++) {
    int j = i + 1 < nb ? i + 1 : 0, lo_g, hi_g;
    double lo_x, lo_s = 0, hi_x, hi_s = 0;
    lo_x = arc_end_x(&ab, i, 0);
    hi_x = arc_end_x(&ab, j, 1);
    double hi = hi_x < lo_x ? hi_x + 2 * M_PI : hi_x;
    if (!(hi - lo_x > KHZ_EXACT_TOL)) continue;
    lo_g = arc_end(e, &gc, &sb, &ab, i, 0, lo_x, &smooth_known, smooth_g, smooth_s, &lo_s);
    if (!(lo_g ? lo_g < 0 : lo_s < 0)) continue;
    hi_g = arc_end(e, &gc, &sb, &ab, j, 1, hi_x, &smooth_known, smooth_g, smooth_s, &hi_s);
    if (!(hi_g ? hi_g > 0 : hi_s > 0)) continue;
    if (lo_g) lo_s = slope_at(e, &gc, lo_x);
    if (hi_g) hi_s = slope_at(e, &gc, hi_x);
    exact_root(e, &gc, lo_x, lo_s, hi, hi_s);
  }
}

/* ---------------------------------- exact least overlap, cylinder-cylinder -- */

/* Two cylinders A, B (axes a, b, half-heights h, radii r, centres c):
 * g(n) = d.n + h_a |n.a| + h_b |n.b| + r_a |P_a n| + r_b |P_b n| with
 * d = c_B - c_A and P_x the projection across x. Its creases are the great
 * circles normal to a and to b (a generator's side: the same arcs as a box's
 * crease against a cylinder, exact_circle), their crossings +-(a x b) (a
 * generator against a generator) and the poles +-a, +-b (the caps). Away
 * from them the supports are a point of one rim of each, and g is smooth, so
 * a minimum can lie inside a region (rim against rim is a two-dimensional
 * surface of the Minkowski difference): there g's gradient on the sphere
 * vanishes, s_B(n) - s_A(-n) is parallel to n, and the rims' support points
 * P (on A's rim) and Q (on B's) are a critical pair of the distance between
 * the two rim circles: Q - P is normal to both circles' tangents. For P(th)
 * = C_A + r_a (cos th U + sin th V), the critical Q of the distance to P
 * are C_B +- r_b w / |w| (w = P - C_B across b), and P is critical when
 * (Q - P).P'(th) = 0: (E.P') |w| = r_b (E.P' - (D.b)(b.P')) with E = C_A -
 * C_B, D = P - C_B. Squared, and with t = tan(th / 2), this is a polynomial
 * of degree 8 in t (Eberly, "Distance to circles in 3D", 2015: the same
 * degree), whose real roots on t in [-1, 1] (th in [-pi/2, pi/2], and again
 * with U, V turned by pi) are isolated exactly between the roots of its
 * derivatives (each derivative's roots part monotone pieces of the one
 * above). Every critical pair gives the candidates +-(Q - P), scored by g
 * like every other: the least is the exact minimum when the minimiser is
 * among them (squaring adds the far points of B's circle, which only cost a
 * score). */
#define KHZ_CC_DEG 8          /* degree of the critical-pair polynomial */
#define KHZ_CC_ROOT_TOL 1e-15 /* t: a bracket this narrow is the root */
#define KHZ_CC_ROOT_ITERS 80  /* Illinois steps per root at most */
#define KHZ_CC_FLAT 1e-7      /* |R| at a turning point below this x max |R|: a double root */

static double poly_at(const double *c, int deg, double t) {
  double v = c[deg];
  for (int k = deg - 1; k >= 0; k--) v = v * t + c[k];
  return v;
}

/* res = x * y (degrees nx, ny; res may alias neither) */
static void poly_mul(double *res, const double *x, int nx, const double *y, int ny) {
  for (int k = 0; k <= nx + ny; k++) res[k] = 0;
  for (int i = 0; i <= nx; i++)
    for (int j = 0; j <= ny; j++) res[i + j] += x[i] * y[j];
}

/* (1 + t^2) (x0 + xc cos th + xs sin th) with t = tan(th / 2) */
static void trig_poly(double res[3], double x0, double xc, double xs) {
  res[0] = x0 + xc, res[1] = 2 * xs, res[2] = x0 - xc;
}

/* the root of c (degree deg) between x0 and x1 whose values differ in sign */
static double poly_root(const double *c, int deg, double x0, double f0, double x1, double f1) {
  double a = x0, fa = f0, b = x1, fb = f1, x = 0.5 * (a + b);
  int last = 0;
  for (int it = 0; it < KHZ_CC_ROOT_ITERS && b - a > KHZ_CC_ROOT_TOL; it++) {
    x = (a * fb - b * fa) / (fb - fa);
    if (!(x > a && x < b)) x = 0.5 * (a + b);
    double fx = poly_at(c, deg, x);
    if (fx == 0) return x;
    if ((fx < 0) == (fa < 0)) {
      a = x, fa = fx;
      if (last < 0) fb *= 0.5;
      last = -1;
    } else {
      b = x, fb = fx;
      if (last > 0) fa *= 0.5;
      last = 1;
    }
  }
  return x;
}

/* the real roots of p (degree KHZ_CC_DEG) in [-1, 1], and its turning
 * points where it nearly touches 0 (double roots); returns their count */
static int cc_roots(const double p[KHZ_CC_DEG + 1], double *out) {
  double der[KHZ_CC_DEG + 1][KHZ_CC_DEG + 1], pts[2 * KHZ_CC_DEG + 2], nxt[2 * KHZ_CC_DEG + 2];
  int npts = 0;
  for (int k = 0; k <= KHZ_CC_DEG; k++) der[0][k] = p[k];
  for (int l = 1; l < KHZ_CC_DEG; l++) /* der[l]: the l-th derivative, degree 8 - l */
    for (int k = 0; k <= KHZ_CC_DEG - l; k++) der[l][k] = (k + 1) * der[l - 1][k + 1];
  double big = 0;
  for (int k = 0; k <= KHZ_CC_DEG; k++) big = fmax(big, fabs(p[k]));
  if (!(big > 0)) return 0;
  /* from the linear derivative up: between consecutive turning points each
   * derivative is monotone, so a change of sign brackets its only root there */
  for (int l = KHZ_CC_DEG - 1; l >= 0; l--) {
    int deg = KHZ_CC_DEG - l, nn = 0;
    double x0 = -1, f0 = poly_at(der[l], deg, -1);
    for (int i = 0; i <= npts; i++) {
      double x1 = i < npts ? pts[i] : 1, f1 = poly_at(der[l], deg, x1);
      if (f0 == 0) nxt[nn++] = x0;
      else if ((f0 < 0) != (f1 < 0) && f1 != 0) nxt[nn++] = poly_root(der[l], deg, x0, f0, x1, f1);
      if (l == 0 && i < npts && f1 != 0 && fabs(f1) <= KHZ_CC_FLAT * big) nxt[nn++] = x1;
      x0 = x1, f0 = f1;
    }
    if (f0 == 0) nxt[nn++] = 1;
    for (int i = 0; i < nn; i++) pts[i] = nxt[i];
    npts = nn;
  }
  for (int i = 0; i < npts; i++) out[i] = pts[i];
  return npts;
}

/* the critical pairs of the distance between rim circle (ca, a, ra) of A and
 * (cb, b, rb) of B, scored as Q - P, and as P - Q when apart is 1 */
KHZ_AVX_CLONES static void cc_rims(exact_best *e, const double ca[3], const double a[3], double ra,
                    const double cb[3], const double b[3], double rb, int apart) {
  double U[3], V[3], E[3];
  khzu_orthogonal(U, a);
  khzu_cross(V, a, U);
  khzu_sub3(E, ca, cb);
  for (int half = 0; half < 2; half++) {
    if (half) khzu_scl3(U, U, -1), khzu_scl3(V, V, -1); /* th + pi */
    double eu = khzu_dot3(E, U), ev = khzu_dot3(E, V), ub = khzu_dot3(U, b), vb = khzu_dot3(V, b);
    double L[3], M[3], N[3], S[3], one[3] = {1, 0, 1};
    trig_poly(L, 0, ra * ev, -ra * eu);                     /* E.P' */
    trig_poly(M, khzu_dot3(E, b), ra * ub, ra * vb);         /* D.b */
    trig_poly(N, 0, ra * vb, -ra * ub);                      /* b.P' */
    trig_poly(S, khzu_dot3(E, E) + ra * ra, 2 * ra * eu, 2 * ra * ev); /* |D|^2 */
    double W[5], MM[5], L2[5], LO[5], MN[5], K[5], R[9], T[9];
    poly_mul(W, S, 2, one, 2); /* |w|^2 (1 + t^2)^2 = |D|^2 - (D.b)^2 */
    poly_mul(MM, M, 2, M, 2);
    for (int k = 0; k < 5; k++) W[k] -= MM[k];
    poly_mul(L2, L, 2, L, 2);
    poly_mul(LO, L, 2, one, 2);
    poly_mul(MN, M, 2, N, 2);
    for (int k = 0; k < 5; k++) K[k] = LO[k] - MN[k]; /* (E.P' - (D.b)(b.P')) (1 + t^2)^2 */
    poly_mul(R, L2, 4, W, 4);
    poly_mul(T, K, 4, K, 4);
    for (int k = 0; k <= KHZ_CC_DEG; k++) R[k] -= rb * rb * T[k];
    double t[2 * KHZ_CC_DEG + 2];
    int nt = cc_roots(R, t);
    for (int i = 0; i < nt; i++) {
      double den = 1 + t[i] * t[i], c = (1 - t[i] * t[i]) / den, s = 2 * t[i] / den, P[3], D[3];
      for (int j = 0; j < 3; j++) P[j] = ca[j] + ra * (c * U[j] + s * V[j]);
      khzu_sub3(D, P, cb);
      khzu_addScl3(D, D, b, -khzu_dot3(D, b));
      if (khzu_normalize3(D) < KHZ_NO_DIRECTION) continue; /* P on B's axis: every Q */
      for (int sq = -1; sq <= 1; sq += 2) {
        double n[3];
        for (int j = 0; j < 3; j++) n[j] = cb[j] + sq * rb * D[j] - P[j];
        exact_try(e, n);
        if (!apart) continue;
        khzu_scl3(n, n, -1);
        exact_try(e, n);
      }
    }
  }
}

/* is x (world) inside cylinder s by at least margin? */
static int cyl_holds(const khzColShape *s, const double x[3], double margin) {
  double l[3];
  khz_shape_toLocal(s, x, l);
  double r = s->size[0] - margin;
  return fabs(l[2]) <= s->size[1] - margin && r > 0 && l[0] * l[0] + l[1] * l[1] <= r * r;
}

/* Two cylinders that may be apart (rims_convex) overlap for certain when a
 * point lies inside both by a margin above rounding: the midpoint of B's
 * support along the best direction so far and A's against it (across the
 * lens of a shallow contact). Then g > 0 everywhere, as for eq. 4's pairs:
 * an interior minimum is (Q - P) / |Q - P|, never the other sign, and the
 * rims can be pruned by their distance. No proof: the pair keeps both
 * signs and every pair of rims. */
static int cyl_cyl_overlap(const khzColShape *A, const khzColShape *B, const double n[3]) {
  double m[3] = {-n[0], -n[1], -n[2]}, pa[3], pb[3], x[3];
  khz_shape_support(B, n, pb);
  khz_shape_support(A, m, pa);
  double margin = KHZ_PRUNE_SLACK * (A->scale + B->scale), g = khzu_dot3(n, pb) - khzu_dot3(n, pa);
  if (!(g > 0)) return 0;
  for (int k = 0; k < 3; k++) {
    const double *from = k == 1 ? pa : pb;
    double t = k == 0 ? 0 : k == 1 ? 0.5 * g : -0.5 * g;
    for (int j = 0; j < 3; j++) x[j] = k == 0 ? 0.5 * (pa[j] + pb[j]) : from[j] + t * n[j];
    if (cyl_holds(A, x, margin) && cyl_holds(B, x, margin)) return 1;
  }
  return 0;
}

/* two cylinders: the poles, the creases' crossings, the crease circles'
 * minima and the rims' critical pairs */
static void exact_cyl_cyl(nsearch *ns, exact_best *e) {
  const khzColShape *A = ns->a, *B = ns->b;
  double ax[2][3], c[3];
  axis_z(A, ax[0]);
  axis_z(B, ax[1]);
  for (int k = 0; k < 2; k++) {
    exact_try(e, ax[k]);
    khzu_scl3(c, ax[k], -1);
    exact_try(e, c);
  }
  double c_ab[3];
  khzu_cross(c_ab, ax[0], ax[1]);
  khzu_copy3(c, c_ab);
  if (khzu_normalize3(c) >= KHZ_CREASE_SIN) {
    exact_try(e, c);
    khzu_scl3(c, c, -1);
    exact_try(e, c);
  }
  for (int k = 0; k < 2; k++) exact_circle(e, ax[k], (const double(*)[3])ax, 2, (const double(*)[3])ax, 2);
  if (ns->until_apart && !(e->f > 0)) return;
  /* Shapes that hold each other's points (eq. 4's pairs, until_apart 0)
   * overlap, so g > 0 at its minimum, and an interior minimum is n = (Q - P)
   * / |Q - P| with g = |Q - P|: only that sign is scored, and a pair of rims
   * whose circles lie farther apart (|C_A - C_B| - r_a - r_b) than the least
   * overlap so far has no candidate below it. Pairs that may be apart keep
   * both signs and every pair of rims. */
  int apart = ns->until_apart && !(e->prune && cyl_cyl_overlap(A, B, e->n));
  double tie = KHZ_EQ4_TIE * (A->scale + B->scale), slack = KHZ_PRUNE_SLACK * (A->scale + B->scale);
  /* a lower bound on the distance between the rims: besides |C_A - C_B| -
   * r_a - r_b, each rim's height over the other's plane, (C_B - C_A).a
   * +- r_b |a x b| for B's points (P's is 0), so that of two stacked
   * cylinders only the two rims that meet are solved */
  double sin_ab = khzu_norm3(c_ab);
  for (int ra = 0; ra < 2; ra++)
    for (int rb = 0; rb < 2; rb++) {
      double pa[3], pb[3], ab[3];
      khzu_addScl3(pa, A->pos, ax[0], ra ? A->size[1] : -A->size[1]);
      khzu_addScl3(pb, B->pos, ax[1], rb ? B->size[1] : -B->size[1]);
      khzu_sub3(ab, pb, pa);
      if (!apart && khzu_norm3(ab) - A->size[0] - B->size[0] > e->f + tie) continue;
      if (!apart && e->prune) {
        double above_a = fabs(khzu_dot3(ab, ax[0])) - B->size[0] * sin_ab;
        double above_b = fabs(khzu_dot3(ab, ax[1])) - A->size[0] * sin_ab;
        if (fmax(above_a, above_b) > e->f + slack) continue;
      }
      cc_rims(e, pa, ax[0], A->size[0], pb, ax[1], B->size[0], apart);
    }
}

/* a box against a cylinder (either way round): the least overlap over the
 * candidates above and the searches' own starts; two cylinders
 * (exact_cyl_cyl); 0 for other pairs */
KHZ_AVX_CLONES static int exact_normal(nsearch *ns) {
  const khzColShape *a = ns->a, *b = ns->b;
  if (a->shape == KHZ_SHAPE_CYLINDER && b->shape == KHZ_SHAPE_CYLINDER) {
    exact_best e;
    exact_begin(&e, ns);
    exact_try(&e, ns->n);
    if (ns->have2) exact_try(&e, ns->n2);
    exact_cyl_cyl(ns, &e);
    khzu_copy3(ns->n, e.n);
    ns->best = e.f;
    return 1;
  }
  const khzColShape *box = a->shape == KHZ_SHAPE_BOX ? a : b, *cyl = box == a ? b : a;
  if (box->shape != KHZ_SHAPE_BOX || cyl->shape != KHZ_SHAPE_CYLINDER) return 0;
  exact_best e;
  exact_begin(&e, ns);
  double ax[4][3], z[1][3];
  crease_axes(box, ax, 0);
  axis_z(cyl, z[0]);
  exact_try(&e, ns->n);
  if (ns->have2) exact_try(&e, ns->n2);
  exact_try(&e, z[0]);
  double mz[3] = {-z[0][0], -z[0][1], -z[0][2]};
  exact_try(&e, mz);
  /* the creases' crossings: the box's face normals, and a box edge against
   * a generator (e_k x z) */
  for (int k = 0; k < 3; k++) {
    double c[3];
    exact_try(&e, ax[k]);
    khzu_scl3(c, ax[k], -1);
    exact_try(&e, c);
    khzu_cross(c, ax[k], z[0]);
    if (khzu_normalize3(c) < KHZ_CREASE_SIN) continue;
    exact_try(&e, c);
    khzu_scl3(c, c, -1);
    exact_try(&e, c);
  }
  khzu_copy3(ax[3], z[0]);
  for (int k = 0; k < 4; k++) exact_circle(&e, ax[k], ax, 3, z, k < 3 ? 1 : 0);
  if (ns->until_apart && e.f > 0) {
    /* apart along the line from a rim's closest point to a box vertex (n
     * points towards A) */
    double sgn = box == a ? 1 : -1;
    for (int i = 0; i < 8 && e.f > 0; i++) {
      double lv[3] = {i & 1 ? box->size[0] : -box->size[0], i & 2 ? box->size[1] : -box->size[1],
                      i & 4 ? box->size[2] : -box->size[2]}, v[3];
      khz_shape_toWorld(box, lv, v);
      for (int rim = 0; rim < 2; rim++) {
        double c[3], r[3], cand[3];
        khzu_addScl3(c, cyl->pos, z[0], rim ? cyl->size[1] : -cyl->size[1]);
        khzu_sub3(r, v, c);
        khzu_addScl3(r, r, z[0], -khzu_dot3(r, z[0]));
        if (khzu_normalize3(r) < KHZ_NO_DIRECTION) continue;
        khzu_addScl3(c, c, r, cyl->size[0]);
        khzu_sub3(cand, v, c);
        khzu_scl3(cand, cand, sgn);
        exact_try(&e, cand);
      }
    }
  }
  khzu_copy3(ns->n, e.n);
  ns->best = e.f;
  return 1;
}


/* from the best candidate and from the best one in another direction (two
 * cylinders have minima in several basins) */
static void refine_normal(nsearch *ns) {
  if (exact_normal(ns)) return;
  double n[3], f;
  khzu_copy3(n, ns->n);
  f = refine_from(ns, n);
  if (ns->have2) {
    double n2[3];
    khzu_copy3(n2, ns->n2);
    double f2 = refine_from(ns, n2);
    if (f2 < f) f = f2, khzu_copy3(n, n2);
  }
  khzu_copy3(ns->n, n);
  ns->best = f;
}

static double refine_from(const nsearch *ns, double n[3]) {
  static const double ring[8][2] = {{1, 0},  {0.7071067811865476, 0.7071067811865476},
                                    {0, 1},  {-0.7071067811865476, 0.7071067811865476},
                                    {-1, 0}, {-0.7071067811865476, -0.7071067811865476},
                                    {0, -1}, {0.7071067811865476, -0.7071067811865476}};
  double ax[6][3];
  int nax = crease_axes(ns->b, ax, crease_axes(ns->a, ax, 0));
  double f = overlap(ns->a, ns->b, n), step = KHZ_REFINE_PROBE;
  int evals = 0, descending = 0;
  while (step >= KHZ_REFINE_TOL && evals < KHZ_REFINE_EVALS && !(ns->until_apart && f <= 0)) {
    /* the trial steps in order: the ring, then both ways along each crease
     * (those only when the ring found no way down) */
    double dir[2 * 6][3], t1[3], t2[3];
    int nd = 0, moved = 0;
    khzu_orthogonal(t1, n);
    khzu_cross(t2, n, t1);
    for (int k = 0; k < 8 + 2 * nax && !moved; k++, evals++) {
      double c[3], dk[3];
      if (k < 8) {
        for (int j = 0; j < 3; j++) dk[j] = ring[k][0] * t1[j] + ring[k][1] * t2[j];
      } else {
        if (k == 8)
          for (int a = 0; a < nax; a++) {
            khzu_cross(dir[nd], ax[a], n);
            if (khzu_normalize3(dir[nd]) < KHZ_CREASE_SIN) continue;
            khzu_scl3(dir[nd + 1], dir[nd], -1);
            nd += 2;
          }
        if (k - 8 >= nd) break;
        khzu_copy3(dk, dir[k - 8]);
      }
      khzu_addScl3(c, n, dk, step);
      khzu_normalize3(c);
      double fc = overlap(ns->a, ns->b, c);
      if (fc < f) f = fc, khzu_copy3(n, c), moved = 1;
    }
    if (moved && !descending) descending = 1, step = KHZ_REFINE_STEP; /* a way down: coarse to fine */
    else if (moved) step = fmin(2 * step, KHZ_REFINE_STEP);
    else if (!descending) break; /* the candidate is a local minimum */
    else step *= 0.5;
  }
  return f;
}

/* two cylinders: both ways along the common perpendicular of their axes */
static void consider_common_perpendicular(nsearch *ns) {
  const khzColShape *a = ns->a, *b = ns->b;
  if (a->shape != KHZ_SHAPE_CYLINDER || b->shape != KHZ_SHAPE_CYLINDER) return;
  double za[3], zb[3], c[3];
  axis_z(a, za);
  axis_z(b, zb);
  khzu_cross(c, za, zb);
  if (khzu_normalize3(c) > KHZ_PARALLEL_AXES_SIN) {
    consider(ns, c);
    khzu_scl3(c, c, -1);
    consider(ns, c);
  }
}

/* Two bounded convex shapes, one at least a cylinder, with no sampled vertex
 * of either inside the other and no edge crossing: a cylinder's side has
 * sunk between its samples into a face, a rim or another cylinder's side
 * (two crossed cylinders lying on each other touch only there). The normal
 * is the direction of least overlap of the projections, which for convex
 * shapes is the penetration direction (refine_normal, from the facet normals
 * of both, the line of the centres and two cylinders' common perpendicular);
 * no positive overlap: the shapes are apart. The contact is then the exact
 * deepest rim points and generator of each cylinder along it. */
/* rims_convex's candidates: the facet normals of both, the line of the
 * centres and two cylinders' common perpendicular, scored by the overlap of
 * the projections alone (no points yet) */
static void rim_candidates(nsearch *ns) {
  const khzColShape *a = ns->a, *b = ns->b;
  double cand[64][3], c[3];
  for (int side = 0; side < 2; side++) { /* n points towards A */
    const khzColShape *s = side ? a : b, *other = side ? b : a;
    int nc = facet_normals(s, other->pos, cand, 64);
    for (int i = 0; i < nc; i++) {
      khzu_scl3(c, cand[i], side ? -1 : 1);
      consider(ns, c);
    }
  }
  khzu_sub3(c, a->pos, b->pos);
  consider(ns, c);
  consider_common_perpendicular(ns);
}

static int rims_convex(const khzColShape *a, const khzColShape *b, khzColOut *o) {
  double scale = a->scale + b->scale;
  nsearch ns = {a, b, o, 0, {0, 0, 1}, KHZ_EQ4_TIE * scale, 0, 1, 0, {0, 0, 1}, 0, 0, 0};
  o->npt = 0; /* no points: consider() scores the overlap alone */
  if (a->shape != KHZ_SHAPE_CYLINDER && b->shape != KHZ_SHAPE_CYLINDER) return 0;
  rim_candidates(&ns);
  /* a separating axis among the candidates: apart (refining only lowers the
   * overlap; most pairs the broad phase passes here end at this line) */
  if (ns.have && !(ns.best > 0)) khzu_copy3(o->apart, ns.n);
  if (!ns.have || !(ns.best > 0)) return 0;
  ns.until_apart = 1;
  refine_normal(&ns);
  if (!(ns.best > 0)) {
    khzu_copy3(o->apart, ns.n);
    return 0;
  }
  rim_points(a, b, 0, ns.n, o);
  rim_points(b, a, 1, ns.n, o);
  return set_depths(a, b, o, ns.n) > 0;
}

/* the least overlap of a bounded convex pair from rim_candidates' best
 * axes, by the exact form where there is one (exact & 3 != 0; 2: for shapes
 * known to overlap, as eq. 4's pairs; | KHZ_COL_SCORE_ALL: without the
 * lower-bound pruning; | KHZ_COL_EXACT_SLOPES: slope_at at every arc end)
 * or by the pattern search (tests compare them) */
double khz_col_leastOverlap(const khzColShape *a, const khzColShape *b, int exact, double n[3]) {
  double scale = a->scale + b->scale;
  khzColOut o = {0};
  nsearch ns = {a, b, &o, 0, {0, 0, 1}, KHZ_EQ4_TIE * scale, 0, 1, 0, {0, 0, 1}, 0, 0, 0};
  rim_candidates(&ns);
  ns.flags = exact & (KHZ_COL_SCORE_ALL | KHZ_COL_EXACT_SLOPES);
  exact &= 3;
  ns.until_apart = exact != 2;
  if (!exact || !exact_normal(&ns)) {
    double n1[3], f = 0;
    khzu_copy3(n1, ns.n);
    f = refine_from(&ns, n1);
    if (ns.have2) {
      double n2[3];
      khzu_copy3(n2, ns.n2);
      double f2 = refine_from(&ns, n2);
      if (f2 < f) f = f2, khzu_copy3(n1, n2);
    }
    khzu_copy3(ns.n, n1);
    ns.best = f;
  }
  khzu_copy3(n, ns.n);
  return ns.best;
}

/* eq. 4 for two convex shapes without a plane: fast path, then the facets
 * and the edge-edge axes */
static void eq4_convex(const vcache *va_, const vcache *vb_, khzColOut *o, const int *ea,
                       int nea, const int *eb, int neb, double n[3]) {
  const khzColShape *a = va_->s, *b = vb_->s;
  double scale = a->scale + b->scale, tol = KHZ_FACET_TOL * scale;
  nsearch ns = {a, b, o, 0, {0, 0, 1}, KHZ_EQ4_TIE * scale, 0, 1, 0, {0, 0, 1}, 0, 0, 0};

  /* fast path: the facet nearest to the deepest point */
  int k = deepest_sd(o);
  const khzColPoint *pk = &o->pt[k];
  double nrm[3];
  khz_shape_sd(pk->side == 0 ? b : a, pk->pos, nrm);
  if (pk->side == 1) khzu_scl3(nrm, nrm, -1);
  consider(&ns, nrm);
  /* (a point on the other's surface may have no normal there: then no
   * candidate was taken and the full search must run) */
  if (ns.have && ns.best <= pk->sd + tol) {
    khzu_copy3(n, ns.n);
    return;
  }

  /* the facets holding a point */
  double *la = o->work, *lb = o->work + 3 * o->cap;
  for (int i = 0; i < o->npt; i++) {
    khz_shape_toLocal(a, o->pt[i].pos, la + 3 * i);
    khz_shape_toLocal(b, o->pt[i].pos, lb + 3 * i);
  }
  facet_candidates(&ns, b, 1, lb, tol);
  facet_candidates(&ns, a, -1, la, tol);

  /* edge-edge axes of crossing edges */
  for (int i = 0; i < nea; i++) {
    int va[2];
    double a0[3], a1[3], da[3];
    khz_shape_edge(a, ea[i], va);
    vert(va_, va[0], a0);
    vert(va_, va[1], a1);
    khzu_sub3(da, a1, a0);
    for (int j = 0; j < neb; j++) {
      int vb[2];
      double b0[3], b1[3], db[3], c[3];
      khz_shape_edge(b, eb[j], vb);
      vert(vb_, vb[0], b0);
      vert(vb_, vb[1], b1);
      khzu_sub3(db, b1, b0);
      khzu_cross(c, da, db);
      if (khzu_dot3(c, c) <= KHZ_PARALLEL_EDGES_SIN2 * khzu_dot3(da, da) * khzu_dot3(db, db)) continue;
      consider(&ns, c);
      khzu_scl3(c, c, -1);
      consider(&ns, c);
    }
  }

  consider_common_perpendicular(&ns);
  if (a->shape == KHZ_SHAPE_CYLINDER || b->shape == KHZ_SHAPE_CYLINDER) refine_normal(&ns);
  khzu_copy3(n, ns.n);
}

/* ------------------------------------------------ polytopes, cylinders -- */

/* box, cylinder, hull against each other, or below a plane (A = plane) */
static int poly_poly(const khzColShape *a, const khzColShape *b, khzColOut *o) {
  int ea[KHZ_MAXCROSS], eb[KHZ_MAXCROSS], nea = 0, neb = 0;
  double n[3];
  vcache va, vb;
  vcache_init(&va, a, b, vbuf(o, 0), o->maxvert);
  vcache_init(&vb, b, a, vbuf(o, 1), o->maxvert);

  /* vertices inside the other shape, edges crossing its surface */
  vertices_inside(&va, 0, o);
  vertices_inside(&vb, 1, o);
  edges_crossing(&va, 0, o, ea, &nea);
  edges_crossing(&vb, 1, o, eb, &neb);
  /* no point: a cylinder's side sunk between its samples, or apart
   * (rims_convex's candidate axes part most such pairs at once). The pairs
   * that reach here are mostly in contact: the coherent pass parts most
   * apart pairs by their kept directions, so the points come first and the
   * candidate axes only for pairs without points */
  if (!o->npt) return a->shape == KHZ_SHAPE_PLANE ? rims_plane(a, b, o) : rims_convex(a, b, o);

  /* normal: the plane's, or eq. 4 */
  if (a->shape == KHZ_SHAPE_PLANE) {
    axis_z(a, n);
    khzu_scl3(n, n, -1);
  } else {
    eq4_convex(&va, &vb, o, ea, nea, eb, neb, n);
  }

  /* the exact deepest rim points of cylinders, then the depths */
  rim_points(a, b, 0, n, o);
  rim_points(b, a, 1, n, o);
  return set_depths(a, b, o, n) > 0;
}

/* plane_poly's vertices: heights R2 . x + t2 and world positions w = R x +
 * p (khz_shape_toWorld) of B's local vertices x (khz_shape_vertLocal), the
 * same sums of the same products. A box's coordinates are +-size[k] and a
 * cylinder's two rims share x and y (z = +-size[1]); a product with -s is
 * the exact negation of the product with s, so each product is formed once
 * per shape. Hulls: vertex by vertex. */
static inline __attribute__((always_inline)) void vertex_heights(const khzColShape *b, const double R2[3],
                                                                 double t2, double *hgt) {
  const double *sz = b->size;
  if (b->shape == KHZ_SHAPE_BOX) {
    /* pm[k][bit]: R2[k] times -size[k] (bit 0) or +size[k] (bit 1) */
    double pm[3][2];
    for (int k = 0; k < 3; k++) pm[k][1] = R2[k] * sz[k], pm[k][0] = -pm[k][1];
    for (int i = 0; i < 8; i++) hgt[i] = pm[0][i & 1] + pm[1][(i >> 1) & 1] + pm[2][(i >> 2) & 1] + t2;
    return;
  }
  if (b->shape == KHZ_SHAPE_CYLINDER) {
    const int N = KHZ_CYL_RIM;
    double cz = R2[2] * sz[1]; /* the top rim's z product; the bottom rim's is -cz */
    for (int k = 0; k < N; k++) {
      double x0 = sz[0] * khz_rim_cs[k][0], x1 = sz[0] * khz_rim_cs[k][1], xy = R2[0] * x0 + R2[1] * x1;
      hgt[k] = xy + -cz + t2;
      hgt[N + k] = xy + cz + t2;
    }
    return;
  }
  for (int i = 0, nv = khz_shape_nvert(b); i < nv; i++) {
    double x[3];
    khz_shape_vertLocal(b, i, x);
    hgt[i] = R2[0] * x[0] + R2[1] * x[1] + R2[2] * x[2] + t2;
  }
}

static inline __attribute__((always_inline)) void vertex_positions(const khzColShape *b, double *w) {
  vertex_frame(b, b->rot, b->pos, w);
}

/* plane_poly's edge e from vertex v0 to v1 (world positions w, heights
 * hgt): the part below the plane, clip_half with n.a = height of v0, n.d =
 * its change along the edge, offset 0; its ends inside the edge are points
 * unless the edge grazes the plane (nrm: the plane's normal, its length) */
static inline __attribute__((always_inline)) void plane_edge(khzColOut *o, const double *w, const double *hgt,
                                                             int e, int v0, int v1, const double nrm[3],
                                                             double nrm_len) {
  double ha = hgt[v0], nd = hgt[v1] - ha, num = 0 - ha, t[2] = {0, 1};
  if (fabs(nd) < KHZ_DIV_ZERO) {
    if (!(num >= 0)) return;
  } else {
    double tc = num / nd;
    if (nd < 0) {
      if (tc > t[0]) t[0] = tc;
    } else if (tc < t[1]) {
      t[1] = tc;
    }
    if (!(t[0] <= t[1])) return;
  }
  if (!(t[0] > KHZ_SEG_END) && !(t[1] < 1 - KHZ_SEG_END)) return; /* wholly below */
  const double *p0 = w + 3 * v0, *p1 = w + 3 * v1;
  double dir[3], c[3];
  khzu_sub3(dir, p1, p0);
  double dl = sqrt(khzu_dot3(dir, dir));
  for (int end = 0; end < 2; end++) {
    if (end == 0 ? !(t[0] > KHZ_SEG_END) : !(t[1] < 1 - KHZ_SEG_END)) continue;
    khzu_addScl3(c, p0, dir, t[end]);
    if (dl > 0 && fabs(khzu_dot3(dir, nrm)) < KHZ_GRAZE * dl * nrm_len) continue;
    khz_col_addPoint(o, c, 0, 1, KHZ_FEATURE(KHZ_FEAT_EDGE, 2 * e + end));
  }
}

/* A box, cylinder or hull below a plane (A = plane): poly_poly's answer --
 * the same points in the same order, features, sd, depths and normal, bit
 * for bit -- from each vertex's height above the plane alone. poly_poly
 * turns every vertex into the plane's frame (all three coordinates), tests
 * it against the plane's infinite bounds and clips all 12 (box) or 48
 * (cylinder) edges through khz_shape_clipLocal; against a plane the inside
 * test is -height >= 0 and the clip is one half-space (clip_half in
 * shapes.c, written out here with its operations in the same order), so
 * the world positions and one local coordinate are all it needs. An edge
 * is sought only when the clip keeps a part of it. */
KHZ_AVX_CLONES static int plane_poly(const khzColShape *a, const khzColShape *b, khzColOut *o) {
  int nv = khz_shape_nvert(b);
  if (nv > o->maxvert) return poly_poly(a, b, o); /* vcache would find no vertices: its answer */
  double *w = vbuf(o, 1), *hgt = w + 3 * o->maxvert;
  /* the third row of vcache_init's relative rotation and offset (the plane's
   * z in B's frame, B's origin above the plane), as vcache_init forms them */
  const double *Rs = b->rot, *Ro = a->rot;
  double R2[3], dp[3];
  for (int j = 0; j < 3; j++) R2[j] = Ro[2] * Rs[j] + Ro[5] * Rs[3 + j] + Ro[8] * Rs[6 + j];
  khzu_sub3(dp, b->pos, a->pos);
  double t2 = Ro[2] * dp[0] + Ro[5] * dp[1] + Ro[8] * dp[2];
  vertex_heights(b, R2, t2, hgt);
  /* Every vertex above, the least height above 2^-50 of the most: no vertex
   * and no edge gives a point (clip_half's operations, plane_edge), and the
   * positions are not needed. Along an edge going down (ha > hb > 0) t = ha
   * / fl(ha - hb) > (1 - 2^-50)^-1 (1 + 2^-53)^-1 > 1 + 2^-52 rounds above
   * 1, past the segment's end; going up (hb > ha > 0) t = -ha / fl(hb - ha)
   * <= -2^-50 rounds below 0 (no underflow to -0, which would keep the end
   * at the vertex); level (|nd| below KHZ_DIV_ZERO) -ha < 0 is outside.
   * Most such pairs are cylinders lying between their samples (rims_plane). */
  double hlo = DBL_MAX, hhi = 0;
  int all_above = 1;
  for (int i = 0; i < nv; i++) {
    if (!(hgt[i] > 0)) all_above = 0;
    if (hgt[i] < hlo) hlo = hgt[i];
    if (hgt[i] > hhi) hhi = hgt[i];
  }
  if (!(all_above && hlo * 0x1p50 > hhi)) {
    vertex_positions(b, w);
    /* vertices_inside: a plane's sd is -height (no polytope slack) */
    for (int i = 0; i < nv; i++) {
      double sd = -hgt[i];
      if (sd >= 0) khz_col_addPoint(o, w + 3 * i, khzu_max0(sd), 1, KHZ_FEATURE(KHZ_FEAT_VERTEX, i));
    }
    /* edges_crossing: each edge's part below the plane (plane_edge); the
     * graze test's normal: khz_shape_sd's for a plane, the same at every
     * point (its local normal (0, 0, 1) turned into the world) */
    const double zl[3] = {0, 0, 1};
    double nrm[3];
    khz_shape_toWorldDir(a, zl, nrm);
    double nrm_len = sqrt(khzu_dot3(nrm, nrm));
    if (b->shape == KHZ_SHAPE_BOX) {
      /* khz_shape_edge's order: 4 edges along each axis, from the corners
       * with that bit clear (the index j with a 0 bit inserted at the axis) */
      for (int e = 0; e < 12; e++) {
        int axis = e >> 2, j = e & 3, v0 = ((j >> axis) << (axis + 1)) | (j & ((1 << axis) - 1));
        plane_edge(o, w, hgt, e, v0, v0 | 1 << axis, nrm, nrm_len);
      }
    } else if (b->shape == KHZ_SHAPE_CYLINDER) {
      /* the two rims' edges, then the generators (khz_shape_edge's order) */
      const int N = KHZ_CYL_RIM;
      for (int rim = 0; rim < 2; rim++)
        for (int k = 0; k < N; k++)
          plane_edge(o, w, hgt, rim * N + k, rim * N + k, rim * N + (k + 1) % N, nrm, nrm_len);
      for (int k = 0; k < N; k++) plane_edge(o, w, hgt, 2 * N + k, k, N + k, nrm, nrm_len);
    } else {
      for (int e = 0, ne = nv ? khz_shape_nedge(b) : 0; e < ne; e++) {
        int v[2];
        khz_shape_edge(b, e, v);
        plane_edge(o, w, hgt, e, v[0], v[1], nrm, nrm_len);
      }
    }
  }
  if (!o->npt) return rims_plane(a, b, o);

  double n[3], m[3];
  axis_z(a, n);
  khzu_scl3(n, n, -1);
  rim_points(b, a, 1, n, o);
  /* set_depths with every point on B (side 1) and A a plane: the depth
   * above A's supporting plane, weight 1 (no wedge, no cylinder to leave) */
  m[0] = -n[0], m[1] = -n[1], m[2] = -n[2];
  double ha = support_h(a, m), best = 0;
  for (int i = 0; i < o->npt; i++) {
    double v = khzu_dot3(n, o->pt[i].pos) + ha;
    if (!(v > 0)) v = 0;
    o->pt[i].weight = 1;
    o->pt[i].depth = v;
    if (v > best) best = v;
  }
  khzu_copy3(o->normal, n);
  return best > 0;
}

int khz_col_polyPoly(const khzColShape *a, const khzColShape *b, khzColOut *o) { return poly_poly(a, b, o); }

/* ----------------------------------------------------- rounded shapes -- */

/* normal when the core of A (sphere, capsule) touches B: the direction of
 * least overlap h_B(n) + h_A(-n) among B's facet normals and the cross
 * products of A's axis with B's edges */
static void deep_normal(const khzColShape *a, const khzColShape *b, const khzColCore *ca,
                        double n[3]) {
  double za[3], best = DBL_MAX;
  int sphere = a->shape == KHZ_SHAPE_SPHERE;
  axis_z(a, za);
  n[0] = n[1] = 0, n[2] = 1;

  /* a sphere: the nearest facet of B */
  if (sphere && !is_round(b->shape)) {
    khz_shape_sd(b, ca->a, n);
    return;
  }

  /* candidate directions */
  double cand[64][3];
  int nc = 0;
  switch (b->shape) {
    case KHZ_SHAPE_BOX:
      for (int k = 0; k < 3; k++) {
        double ax[3] = {b->rot[k], b->rot[3 + k], b->rot[6 + k]};
        khzu_copy3(cand[nc++], ax);
        khzu_scl3(cand[nc++], ax, -1);
        if (!sphere) khzu_cross(cand[nc++], za, ax);
      }
      break;
    case KHZ_SHAPE_CYLINDER: {
      double zb[3], b0[3], b1[3], c1[3], c2[3], r[3];
      axis_z(b, zb);
      khzu_copy3(cand[nc++], zb);
      khzu_scl3(cand[nc++], zb, -1);
      khzu_cross(cand[nc++], za, zb);
      khzu_addScl3(b0, b->pos, zb, -b->size[1]);
      khzu_addScl3(b1, b->pos, zb, b->size[1]);
      khzu_closestSegSeg(ca->a, ca->b, b0, b1, NULL, NULL, c1, c2);
      khzu_sub3(r, c1, c2);
      khzu_addScl3(r, r, zb, -khzu_dot3(r, zb));
      if (khzu_normalize3(r) == 0) khzu_orthogonal(r, zb);
      khzu_copy3(cand[nc++], r);
      break;
    }
    case KHZ_SHAPE_CONVEX: {
      const khzColHull *h = b->hull;
      for (int f = 0; f < h->nplane && nc < 48; f++) {
        double w[3];
        khz_shape_toWorld(b, h->plane + 4 * f, w);
        khzu_sub3(cand[nc++], w, b->pos);
      }
      for (int e = 0; e < h->nedge && nc < 64; e++) {
        double v0[3], v1[3], d[3];
        khz_shape_vert(b, h->edge[2 * e], v0);
        khz_shape_vert(b, h->edge[2 * e + 1], v1);
        khzu_sub3(d, v1, v0);
        khzu_cross(cand[nc++], za, d);
      }
      break;
    }
    default: {
      /* two rounded shapes whose cores meet */
      double zb[3];
      axis_z(b, zb);
      khzu_cross(cand[nc], za, zb);
      if (khzu_norm3(cand[nc]) < KHZ_PARALLEL_CORES_SIN) khzu_orthogonal(cand[nc], za);
      nc++;
      break;
    }
  }
  for (int i = 0; i < nc; i++)
    for (int sg = 1; sg >= -1; sg -= 2) {
      double d[3], m[3];
      khzu_scl3(d, cand[i], sg);
      if (khzu_normalize3(d) < KHZ_NO_DIRECTION) continue;
      khzu_scl3(m, d, -1);
      double f = khz_shape_h(b, d) + khz_shape_h(a, m);
      if (f < best) best = f, khzu_copy3(n, d);
    }
}

/* sphere or capsule A against a sphere, capsule, box, cylinder or hull B */
static int rounded_pair(const khzColShape *a, const khzColShape *b, khzColOut *o) {
  khzColCore ca, cb;
  double pa[3], pb[3], dist, ra = a->size[0], rb = 0;
  double scale = a->scale + b->scale, tiny = KHZ_CORES_MEET * scale;
  int bround = is_round(b->shape);
  core_of(a, &ca);

  /* distance between A's core and B (B's core when B is rounded too) */
  if (bround) {
    core_of(b, &cb);
    rb = b->size[0];
    dist = sqrt(khzu_closestSegSeg(ca.a, ca.b, cb.a, cb.b, NULL, NULL, pa, pb));
  } else if (a->shape == KHZ_SHAPE_SPHERE &&
             (b->shape == KHZ_SHAPE_BOX || b->shape == KHZ_SHAPE_CYLINDER)) {
    /* a point outside a box or cylinder: the exact distance of khz_shape_sd */
    double nrm[3], sd = khz_shape_sd(b, a->pos, nrm);
    dist = sd < 0 ? -sd : 0;
    khzu_copy3(pa, a->pos);
    khzu_addScl3(pb, a->pos, nrm, -dist);
  } else {
    dist = khz_gjk(&ca, khz_core_support, b, khz_shape_supportFn, scale, pa, pb);
  }
  if (dist >= ra + rb) {
    khzu_sub3(o->apart, pa, pb);
    return 0;
  }

  /* the exact normal between the closest points, else the least overlap */
  double n[3], q[3];
  int deep = !(dist > tiny);
  if (!deep) {
    khzu_sub3(n, pa, pb);
    khzu_normalize3(n);
    khzu_copy3(q, pa);
  } else {
    deep_normal(a, b, &ca, n);
    double m[3] = {-n[0], -n[1], -n[2]};
    khz_core_support(&ca, m, q);
  }

  /* A's deepest points: the closest point, and the end spheres inside B */
  double p[3];
  khzu_addScl3(p, q, n, -ra);
  khz_col_addPoint(o, p, ra + rb - dist, 0, KHZ_FEATURE(KHZ_FEAT_ROUND, 0));
  if (a->shape == KHZ_SHAPE_CAPSULE)
    for (int e = 0; e < 2; e++) {
      const double *c = e ? ca.b : ca.a;
      double d[3];
      khzu_sub3(d, c, q);
      if (khzu_norm3(d) <= tiny) continue;
      khzu_addScl3(p, c, n, -ra);
      double sd = khz_shape_sd(b, p, NULL);
      if (sd >= 0) khz_col_addPoint(o, p, sd, 0, KHZ_FEATURE(KHZ_FEAT_ROUND, 1 + e));
    }

  /* B's points: a capsule's end spheres inside A, a polytope's vertices inside A */
  if (bround && a->shape == KHZ_SHAPE_CAPSULE && b->shape == KHZ_SHAPE_CAPSULE) {
    for (int e = 0; e < 2; e++) {
      const double *c = e ? cb.b : cb.a;
      double d[3];
      khzu_sub3(d, c, pb);
      if (khzu_norm3(d) <= tiny) continue;
      khzu_addScl3(p, c, n, rb);
      double sd = khz_shape_sd(a, p, NULL);
      if (sd >= 0) khz_col_addPoint(o, p, sd, 1, KHZ_FEATURE(KHZ_FEAT_ROUND, 1 + e));
    }
  } else if (!bround) {
    vcache vb;
    vcache_init(&vb, b, a, vbuf(o, 0), o->maxvert);
    vertices_inside(&vb, 1, o);
  }
  return set_depths(a, b, o, n) > 0;
}

/* ------------------------------------------------------------- planes -- */

static int plane_sphere(const khzColShape *a, const khzColShape *b, khzColOut *o) {
  double z[3], n[3], p[3], r = b->size[0];
  axis_z(a, z);
  double dist = khzu_dot3(z, b->pos) - khzu_dot3(z, a->pos);
  if (dist >= r) return 0;
  khzu_addScl3(p, b->pos, z, -r);
  khz_col_addPoint(o, p, r - dist, 1, KHZ_FEATURE(KHZ_FEAT_ROUND, 0));
  khzu_scl3(n, z, -1);
  return set_depths(a, b, o, n) > 0;
}

static int plane_capsule(const khzColShape *a, const khzColShape *b, khzColOut *o) {
  double z[3], n[3], p[3], r = b->size[0];
  khzColCore c;
  axis_z(a, z);
  core_of(b, &c);
  double off = khzu_dot3(z, a->pos);
  for (int e = 0; e < 2; e++) {
    const double *x = e ? c.b : c.a;
    double dist = khzu_dot3(z, x) - off;
    if (dist >= r) continue;
    khzu_addScl3(p, x, z, -r);
    khz_col_addPoint(o, p, r - dist, 1, KHZ_FEATURE(KHZ_FEAT_ROUND, 1 + e));
  }
  if (!o->npt) return 0;
  khzu_scl3(n, z, -1);
  return set_depths(a, b, o, n) > 0;
}

/* ---------------------------------------------------- triangle meshes -- */

typedef struct {
  const khzColShape *s, *other;
  khzColOut *o;
  int side;
} vert_ctx;

/* a mesh vertex inside the other shape becomes a point */
static int mesh_vertex_cb(void *user, int v) {
  vert_ctx *c = user;
  double p[3];
  khz_shape_toWorld(c->s, c->s->mesh->vert + 3 * v, p);
  double sd = khz_shape_sd(c->other, p, NULL);
  if (sd >= 0) khz_col_addPoint(c->o, p, sd, c->side, KHZ_FEATURE(KHZ_FEAT_VERTEX, v));
  return 0;
}

/* the vertices of mesh s within the bounding sphere of other, inside it */
static void mesh_vertices_inside(const khzColShape *s, const khzColShape *other, int side,
                                 khzColOut *o) {
  double c[3], lo[3], hi[3];
  khz_shape_toLocal(s, other->bcenter, c);
  for (int k = 0; k < 3; k++) lo[k] = c[k] - other->bradius, hi[k] = c[k] + other->bradius;
  vert_ctx ctx = {s, other, o, side};
  khz_trimesh_vertsInBox(s->mesh, lo, hi, mesh_vertex_cb, &ctx);
}

/* the plane of the facet of `other` nearest to p: outward normal m, offset d */
static void nearest_facet(const khzColShape *other, const double p[3], double m[3], double *d) {
  if (other->shape == KHZ_SHAPE_TRIMESH) {
    double q[3], cq[3], pn[3];
    int tri;
    khz_shape_toLocal(other, p, q);
    khz_trimesh_closest(other->mesh, q, cq, &tri, pn);
    const double *tn = other->mesh->tnormal + 3 * tri;
    double w[3], v[3];
    khz_shape_toWorld(other, tn, w);
    khzu_sub3(m, w, other->pos);
    khz_shape_toWorld(other, other->mesh->vert + 3 * other->mesh->tri[3 * tri], v);
    *d = khzu_dot3(m, v);
  } else {
    khz_shape_sd(other, p, m);
    *d = khz_shape_h(other, m);
  }
}

/* eq. 4 objective for point j's nearest facet: max over the points of the same
 * side of their distance to that facet's plane */
static double mesh_candidate(const khzColShape *a, const khzColShape *b, const khzColOut *o,
                             int j, double n[3]) {
  const khzColPoint *pj = &o->pt[j];
  double m[3], d, f = 0;
  nearest_facet(pj->side == 0 ? b : a, pj->pos, m, &d);
  for (int i = 0; i < o->npt; i++)
    if (o->pt[i].side == pj->side) f = fmax(f, fabs(khzu_dot3(m, o->pt[i].pos) - d));
  khzu_scl3(n, m, pj->side == 0 ? 1 : -1);
  return f;
}

/* eq. 4 for pairs with a triangle mesh: each point is measured against the
 * facets of the other geometry, fast path first */
static void eq4_mesh(const khzColShape *a, const khzColShape *b, khzColOut *o, double n[3]) {
  double tol = KHZ_FACET_TOL * (a->scale + b->scale), c[3];
  int k = deepest_sd(o);
  double best = mesh_candidate(a, b, o, k, n);
  if (best <= o->pt[k].sd + tol) return;

  /* the facets of the deepest few points */
  double last = o->pt[k].sd;
  int lastk = k;
  for (int round = 1; round < KHZ_EQ4_CANDIDATES; round++) {
    /* next deepest point after (last, lastk) in (sd desc, index asc) order */
    int nk = -1;
    for (int i = 0; i < o->npt; i++) {
      double s = o->pt[i].sd;
      int after = s < last || (s == last && i > lastk);
      if (!after) continue;
      if (nk < 0 || s > o->pt[nk].sd) nk = i;
    }
    if (nk < 0) break;
    double f = mesh_candidate(a, b, o, nk, c);
    if (f < best - KHZ_EQ4_MESH_TIE) best = f, khzu_copy3(n, c);
    last = o->pt[nk].sd, lastk = nk;
  }
}

typedef struct {
  const khzColShape *s;
  khzColOut *o;
  double z[3], d;
} below_ctx;

static int below_cb(void *user, int v) {
  below_ctx *c = user;
  double p[3];
  khz_shape_toWorld(c->s, c->s->mesh->vert + 3 * v, p);
  double sd = c->d - khzu_dot3(c->z, p);
  if (sd >= 0) khz_col_addPoint(c->o, p, sd, 1, KHZ_FEATURE(KHZ_FEAT_VERTEX, v));
  return 0;
}

static int plane_trimesh(const khzColShape *a, const khzColShape *b, khzColOut *o) {
  double z[3], lz[3], n[3];
  axis_z(a, z);
  below_ctx ctx = {b, o, {z[0], z[1], z[2]}, khzu_dot3(z, a->pos)};

  /* the plane in the mesh frame */
  double w1[3];
  khzu_add3(w1, b->pos, z);
  khz_shape_toLocal(b, w1, lz);
  khz_trimesh_vertsBelow(b->mesh, lz, ctx.d - khzu_dot3(z, b->pos), below_cb, &ctx);
  if (!o->npt) return 0;
  khzu_scl3(n, z, -1);
  return sd_depths(o, n) > 0;
}

/* the normal at a sphere centre c against the mesh: exact, from the closest point */
static double sphere_mesh_query(const khzColShape *b, const double c[3], double n[3]) {
  double q[3], cq[3], pn[3], d[3];
  int tri;
  khz_shape_toLocal(b, c, q);
  double phi = khz_trimesh_closest(b->mesh, q, cq, &tri, pn);
  khzu_sub3(d, q, cq);
  if (khzu_normalize3(d) > KHZ_MESH_NO_DIRECTION * b->scale)
    khzu_scl3(d, d, phi >= 0 ? 1 : -1);
  else
    khzu_copy3(d, pn);
  khz_shape_toWorld(b, d, n);
  khzu_sub3(n, n, b->pos);
  return phi;
}

static int sphere_trimesh(const khzColShape *a, const khzColShape *b, khzColOut *o) {
  double n[3], p[3], r = a->size[0];
  double phi = sphere_mesh_query(b, a->pos, n);
  if (phi >= r) return 0;
  khzu_addScl3(p, a->pos, n, -r);
  khz_col_addPoint(o, p, r - phi, 0, KHZ_FEATURE(KHZ_FEAT_ROUND, 0));
  return sd_depths(o, n) > 0;
}

static int capsule_trimesh(const khzColShape *a, const khzColShape *b, khzColOut *o) {
  khzColCore c;
  core_of(a, &c);
  double r = a->size[0], len = 2 * a->size[1];
  int ns = (int)ceil(len / r) + 1;
  if (ns < 2) ns = 2;
  if (ns > KHZ_CAPSULE_SAMPLES) ns = KHZ_CAPSULE_SAMPLES;

  /* spheres along the core */
  double best = -DBL_MAX, n[3] = {0, 0, 1};
  for (int k = 0; k < ns; k++) {
    double x[3], d[3], nk[3], p[3];
    khzu_sub3(d, c.b, c.a);
    khzu_addScl3(x, c.a, d, (double)k / (ns - 1));
    double phi = sphere_mesh_query(b, x, nk);
    if (phi >= r) continue;
    int idx = k == 0 ? 1 : k == ns - 1 ? 2 : 2 + k;
    khzu_addScl3(p, x, nk, -r);
    khz_col_addPoint(o, p, r - phi, 0, KHZ_FEATURE(KHZ_FEAT_ROUND, idx));
    if (r - phi > best) best = r - phi, khzu_copy3(n, nk);
  }

  /* mesh vertices inside the capsule; the deepest of them may set the normal */
  int before = o->npt;
  mesh_vertices_inside(b, a, 1, o);
  for (int i = before; i < o->npt; i++) {
    if (o->pt[i].sd <= best) continue;
    double q[3], d[3];
    khzu_closestOnSegment(o->pt[i].pos, c.a, c.b, q);
    khzu_sub3(d, q, o->pt[i].pos);
    if (khzu_normalize3(d) < KHZ_MESH_NO_DIRECTION * b->scale) continue;
    best = o->pt[i].sd, khzu_copy3(n, d);
  }
  if (!o->npt) return 0;
  return sd_depths(o, n) > 0;
}

/* box, cylinder or hull A against triangle mesh B */
static int convex_trimesh(const khzColShape *a, const khzColShape *b, khzColOut *o) {
  double n[3];
  vcache va;
  vcache_init(&va, a, b, vbuf(o, 0), o->maxvert);
  vertices_inside(&va, 0, o);
  mesh_vertices_inside(b, a, 1, o);
  if (!o->npt) return 0;
  eq4_mesh(a, b, o, n);
  rim_points(a, b, 0, n, o);
  return sd_depths(o, n) > 0;
}

static int trimesh_trimesh(const khzColShape *a, const khzColShape *b, khzColOut *o) {
  double n[3];
  mesh_vertices_inside(a, b, 0, o);
  mesh_vertices_inside(b, a, 1, o);
  if (!o->npt) return 0;
  eq4_mesh(a, b, o, n);
  return sd_depths(o, n) > 0;
}

/* -------------------------------------------------------------- table -- */

/* the pairs that share a general routine */
#define POLY(name)                                                         \
  static int name(const khzColShape *a, const khzColShape *b, khzColOut *o) { \
    return poly_poly(a, b, o);                                             \
  }
#define ROUND(name)                                                        \
  static int name(const khzColShape *a, const khzColShape *b, khzColOut *o) { \
    return rounded_pair(a, b, o);                                          \
  }
#define MESH(name)                                                         \
  static int name(const khzColShape *a, const khzColShape *b, khzColOut *o) { \
    return convex_trimesh(a, b, o);                                        \
  }

ROUND(sphere_sphere)
ROUND(sphere_capsule)
ROUND(sphere_box)
ROUND(sphere_cylinder)
ROUND(sphere_convex)
ROUND(capsule_capsule)
ROUND(capsule_box)
ROUND(capsule_cylinder)
ROUND(capsule_convex)
POLY(box_box)
POLY(box_cylinder)
POLY(box_convex)
POLY(cylinder_cylinder)
POLY(cylinder_convex)
POLY(convex_convex)
MESH(box_trimesh)
MESH(cylinder_trimesh)
MESH(convex_trimesh_)

const khzCollideFn khz_collideTable[KHZ_SHAPE_N][KHZ_SHAPE_N] = {
    [KHZ_SHAPE_PLANE] = {NULL, plane_sphere, plane_capsule, plane_poly, plane_poly, plane_poly,
                         plane_trimesh},
    [KHZ_SHAPE_SPHERE] = {NULL, sphere_sphere, sphere_capsule, sphere_box, sphere_cylinder,
                          sphere_convex, sphere_trimesh},
    [KHZ_SHAPE_CAPSULE] = {NULL, NULL, capsule_capsule, capsule_box, capsule_cylinder,
                           capsule_convex, capsule_trimesh},
    [KHZ_SHAPE_BOX] = {NULL, NULL, NULL, box_box, box_cylinder, box_convex, box_trimesh},
    [KHZ_SHAPE_CYLINDER] = {NULL, NULL, NULL, NULL, cylinder_cylinder, cylinder_convex,
                            cylinder_trimesh},
    [KHZ_SHAPE_CONVEX] = {NULL, NULL, NULL, NULL, NULL, convex_convex, convex_trimesh_},
    [KHZ_SHAPE_TRIMESH] = {NULL, NULL, NULL, NULL, NULL, NULL, trimesh_trimesh},
};

/* ---------------------------------------------------------- dispatch -- */

KHZ_AVX_CLONES void khz_shape_make(const khzModel *m, int g, const double *frame12, khzColShape *s) {
  const khzColModel *cm = m->collision;
  const khzColGeom *cg = &cm->geom[g];
  memset(s, 0, sizeof *s);
  s->shape = cg->shape;
  s->geom = g;
  khzu_copy3(s->pos, frame12);
  memcpy(s->rot, frame12 + 3, sizeof s->rot);
  s->size = m->geom_size + 3 * g;
  s->hull = cg->hull >= 0 ? &cm->hull[cg->hull] : NULL;
  s->mesh = cg->trimesh >= 0 ? &cm->trimesh[cg->trimesh] : NULL;
  s->scale = cg->scale;
  khz_shape_toWorld(s, cg->center, s->bcenter);
  khzu_copy3(s->lcenter, cg->center);
  s->bradius = cg->shape == KHZ_SHAPE_PLANE ? DBL_MAX : cg->radius;
  for (int k = 0; k < 3; k++)
    s->lo[k] = cg->center[k] - cg->half[k], s->hi[k] = cg->center[k] + cg->half[k];
}

/* the table's routine for a pair of shapes (s0, s1): normal toward s0,
 * sides relative to (s0, s1) */
static int narrow_shapes(const khzColShape *s0, const khzColShape *s1, khzColOut *out) {
  /* the table holds type A <= type B */
  int swap = s0->shape > s1->shape;
  const khzColShape *a = swap ? s1 : s0, *b = swap ? s0 : s1;
  khzCollideFn fn = khz_collideTable[a->shape][b->shape];
  if (!fn || !fn(a, b, out)) {
    out->npt = 0;
    if (swap) khzu_scl3(out->apart, out->apart, -1);
    return 0;
  }

  /* normal toward g0, sides relative to (g0, g1) */
  if (swap) khzu_scl3(out->normal, out->normal, -1);
  for (int i = 0; i < out->npt; i++) {
    int side = swap ? 1 - out->pt[i].side : out->pt[i].side;
    out->pt[i].side = side;
    out->pt[i].feature = (out->pt[i].feature & 0x0fffffff) | (side << 28);
  }
  return 1;
}

int khz_narrowphase(const khzModel *m, int g0, int g1, const double *frame, khzColOut *out) {
  const khzColModel *cm = m->collision;
  khzColShape s0, s1;
  out->npt = 0;
  out->overflow = 0;
  if (cm->geom[g0].shape < 0 || cm->geom[g1].shape < 0) return 0;
  khz_shape_make(m, g0, frame + 12 * g0, &s0);
  khz_shape_make(m, g1, frame + 12 * g1, &s1);
  return narrow_shapes(&s0, &s1, out);
}

/* ------------------------------------------------- temporal coherence -- */

/* A pair found apart keeps a direction along which it was apart (the
 * separating axis of the pass). At the next pass the two shapes' supports
 * along it are taken at their new poses: if their projections are still
 * apart by more than KHZ_COHERENT_GAP of the pair's scale, that axis
 * separates them -- a proof, whatever either shape did since, so a stale
 * direction can only fail the test, never return a wrong contact -- and
 * the pair is apart without the narrow phase. The answer is the narrow
 * phase's own: shapes that far apart have no vertex inside the other (its
 * inside tests' slack is 1e-9 of the scale), no edge crossing it, and a
 * negative exact least overlap (rims_convex), and the rounded pairs'
 * distance exceeds their radii (test_narrowphase, test_coherent_apart,
 * checks the same outputs bit for bit on slowly moving pose sequences).
 * Otherwise the narrow phase runs, and if it finds the pair apart, the
 * better of the direction it found them apart along (o->apart: the least
 * overlap's, or the closest points') and the line of centres is kept when
 * it parts them by the gap. Bounded convex pairs only, and not two rounded
 * shapes (their closed forms cost less than the test). */
#define KHZ_COHERENT_GAP 1e-6

static int coherent_shape(int t) { return t >= KHZ_SHAPE_SPHERE && t <= KHZ_SHAPE_CONVEX; }

int khz_col_coherent(const khzColShape *s0, const khzColShape *s1, khzColOut *out, double axis[3], int *apart) {
  int kind = coherent_shape(s0->shape) && coherent_shape(s1->shape) && !(is_round(s0->shape) && is_round(s1->shape));
  double gap = -KHZ_COHERENT_GAP * (s0->scale + s1->scale);
  out->npt = 0;
  out->overflow = 0;
  if (kind && *apart && overlap(s0, s1, axis) < gap) return 0;
  *apart = 0;
  out->apart[0] = out->apart[1] = out->apart[2] = 0;
  int r = narrow_shapes(s0, s1, out);
  if (r || !kind) return r;
  double c[3], best = gap;
  khzu_sub3(c, s0->bcenter, s1->bcenter);
  for (int k = 0; k < 2; k++) {
    double n[3];
    khzu_copy3(n, k ? c : out->apart);
    if (khzu_normalize3(n) < KHZ_NO_DIRECTION) continue;
    double f = overlap(s0, s1, n);
    if (f < best) best = f, khzu_copy3(axis, n), *apart = 1;
  }
  return 0;
}

int khz_narrowphaseCoherent(const khzModel *m, int g0, int g1, const double *frame, khzColOut *out,
                            double axis[3], int *apart) {
  const khzColModel *cm = m->collision;
  khzColShape s0, s1;
  out->npt = 0;
  out->overflow = 0;
  if (cm->geom[g0].shape < 0 || cm->geom[g1].shape < 0) return *apart = 0;
  khz_shape_make(m, g0, frame + 12 * g0, &s0);
  khz_shape_make(m, g1, frame + 12 * g1, &s1);
  return khz_col_coherent(&s0, &s1, out, axis, apart);
}

void khz_geomShape(const khzModel *m, const khzData *d, int g, khzColShape *s) {
  /* geom frame = body frame * geom offset (as khz_collisionFrames) */
  int b = m->geom_body[g];
  const double *xp = d->xpos + 3 * b, *xr = d->xrot + 9 * b;
  double frame[12], lr[9];
  khzu_quat2mat(lr, m->geom_quat + 4 * g);
  khzu_mulMatVec3(frame, xr, m->geom_pos + 3 * g);
  khzu_add3(frame, frame, xp);
  khzu_mulMat3(frame + 3, xr, lr);
  khz_shape_make(m, g, frame, s);
}

void khz_geomSupport(const khzModel *m, const khzData *d, int g, const double dir[3], double out[3]) {
  khzColShape s;
  khz_geomShape(m, d, g, &s);
  khz_shape_support(&s, dir, out);
}
