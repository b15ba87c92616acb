/* collision.h — private interface of collision detection (rt/src/collision).
 *
 * What feeds Drumwright's multi-point penalty method (Drumwright, "A fast and
 * stable penalty method for rigid body simulation", IEEE TVCG 2008, Appendix
 * I; the first stage of docs/contact.md "One step"): for every pair of geoms
 * that interpenetrate, the vertices of the intersection volume with their
 * depths, the deepest point and the contact normal of eq. 4.
 *
 * Files:
 *   geometry.c    per-geom collision data built by khz_compile (shape class,
 *                 local bounds, convex hulls, triangle-mesh preparation and
 *                 validation, the welded-body filter), one memory block
 *   hull.c        3D convex hull (incremental, compile time only)
 *   sdf.c         triangle meshes: BVHs, exact closest point with angle-
 *                 weighted pseudo-normals, the sparse signed distance grid
 *   shapes.c      shapes in the world: support, inside distance, segment
 *                 clipping, vertices and edges
 *   gjk.c         GJK distance between convex objects given by support maps
 *   broadphase.c  world AABBs, sweep-and-prune, pair filters, radix sort
 *   narrowphase.c one function per shape pair, [type][type] table
 *   pairs.c       khz_collide: the phases, outputs and persistent pair slots
 *
 * Frames: a geom's frame in the world is x_world = rot x_geom + pos (rot row-
 * major, its columns the geom axes). Normals point from geom B to geom A of a
 * narrow-phase call ("toward A"); the dispatcher flips them so that the
 * public normal points toward body[0]. Nothing declared here allocates except
 * the compile-time functions (khz_collisionCompile, khz_hull_build,
 * khz_trimesh_build).
 */
#ifndef KHZ_COLLISION_H
#define KHZ_COLLISION_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "khz/khz.h"
#include "spatial.h"

/* shape classes of the narrow phase, in dispatch-table order */
typedef enum khzShape {
  KHZ_SHAPE_PLANE = 0,
  KHZ_SHAPE_SPHERE,
  KHZ_SHAPE_CAPSULE,
  KHZ_SHAPE_BOX,
  KHZ_SHAPE_CYLINDER,
  KHZ_SHAPE_CONVEX,  /* KHZ_GEOM_MESH with convex = 1: the hull of its vertices */
  KHZ_SHAPE_TRIMESH, /* KHZ_GEOM_MESH with convex = 0: closed triangle mesh + SDF */
  KHZ_SHAPE_N
} khzShape;

/* samples per cylinder rim: 2 rims x 16 vertices, 16 + 16 rim edges and 16
 * generator edges; the exact deepest rim points are added on top */
#define KHZ_CYL_RIM 16
/* sine of the tilt between a cylinder's rim and a contact plane below which
 * the rim samples stand for the rim's exact lowest point */
#define KHZ_RIM_TILT 0.05

/* at most this many hull vertices (more are reduced at compile, geometry.c) */
#define KHZ_HULL_MAXVERT 256

/* capsule vs triangle mesh: the core segment is sampled at most this often */
#define KHZ_CAPSULE_SAMPLES 16

/* feature ids: bits 28.. side (0 = geom[0] of the pair, 1 = geom[1]),
 * bits 24..27 kind, bits 0..23 index */
enum {
  KHZ_FEAT_VERTEX = 0,   /* vertex i (box corner, rim sample, hull/mesh vertex) */
  KHZ_FEAT_EDGE = 1,     /* edge e entering (2e) or leaving (2e+1) the other shape */
  KHZ_FEAT_ROUND = 2,    /* sphere/capsule deepest point: 0 closest, 1/2 ends, 3.. samples */
  KHZ_FEAT_RIM = 3       /* exact deepest point of cylinder rim 0 (bottom) or 1 (top) */
};
#define KHZ_FEATURE(kind, index) (((kind) << 24) | ((index) & 0xffffff))
#define KHZ_FEATURE_SIDE(f) ((f) >> 28)

/* ------------------------------------------------------- model data -- */

/* convex hull in the geom frame (KHZ_SHAPE_CONVEX), scaled */
typedef struct khzColHull {
  int nvert, nplane, nedge, ntri;
  double *vert;   /* 3 per vertex */
  double *plane;  /* 4 per face: outward unit normal n, offset d; inside: n.x <= d */
  int *edge;      /* 2 per feature edge (between faces that are not coplanar) */
  int *tri;       /* 3 per hull triangle */
} khzColHull;

/* bounding-volume hierarchy node; leaf when count > 0 (items first..first+count
 * of the order array), else children child and child + 1 */
typedef struct khzColNode {
  double lo[3], hi[3];
  int child, first, count;
} khzColNode;

/* closed triangle mesh in the geom frame (KHZ_SHAPE_TRIMESH), scaled */
typedef struct khzColTrimesh {
  int nvert, ntri;
  double *vert;      /* 3 per vertex (identical positions welded) */
  int *tri;          /* 3 per triangle, counter-clockwise seen from outside */
  double *tnormal;   /* 3 per triangle: unit outward normal */
  double *vnormal;   /* 3 per vertex: angle-weighted pseudo-normal */
  double *enormal;   /* 9 per triangle: pseudo-normals of edges ab, bc, ca */
  int ntnode, nvnode;
  khzColNode *tnode; /* BVH over triangles */
  int *torder;
  khzColNode *vnode; /* BVH over vertices */
  int *vorder;
  double lo[3], hi[3]; /* bounds of the vertices */

  /* signed distance field (negative inside), two-level sparse grid: a coarse
   * grid of spacing brick * h over the padded bounds, and for every coarse
   * cell near the surface a brick of (brick + 1)^3 samples at spacing h;
   * trilinear interpolation of exact distances */
  double origin[3], h;
  int brick, nc[3], nbrick;
  float *coarse;     /* (nc + 1) per axis nodes, x fastest */
  int *brickof;      /* per coarse cell: brick index or -1 */
  float *bricks;     /* (brick + 1)^3 per brick */
} khzColTrimesh;

/* per geom */
typedef struct khzColGeom {
  int shape;          /* khzShape, -1 when the geom never collides */
  int hull, trimesh;  /* index into the hulls / trimeshes, else -1 */
  double center[3];   /* bounds in the geom frame: centre and half extents */
  double half[3];
  double radius;      /* bounding sphere about centre (tight for hulls and meshes) */
  double scale;       /* a length typical of the geom (tolerances) */
} khzColGeom;

/* everything khz_collisionCompile builds; one block, freed by khz_deleteModel */
typedef struct khzColModel {
  size_t size;
  int ngeom, nbody, nhull, ntrimesh;
  khzColGeom *geom;
  int *weld;          /* per body: nearest ancestor-or-self with a moving joint
                         (0 = welded to the world) */
  int *weld_parent;   /* per body: weld of the parent of weld; -1 when that is the world */
  int *exclude_adr;   /* per body and one more: where its run of exclude_with starts */
  int *exclude_with;  /* per body, the bodies the model excludes it from (m->exclude_body),
                         each pair listed under both of its bodies */
  int nbounded, nplane;
  int bounded_pairs;  /* 1 when some two bounded geoms pass khz_collisionFilter
                         (which reads the model alone; set by khz_collisionCompile):
                         0 leaves the broadphase's sweep out, only the planes meet boxes */
  int maxvert;        /* vertices of the largest box, cylinder or hull (scratch size) */
  int *bounded;       /* collidable geoms with finite bounds */
  int *planes;        /* collidable plane geoms */
  khzColHull *hull;
  khzColTrimesh *trimesh;
  int *mesh_ndegenerate; /* per mesh: zero-area triangles ignored */
} khzColModel;

/* Builds the collision data of a model whose geoms and meshes are filled in
 * (called by khz_compile). Validates meshes: bad indices and non-finite
 * vertices are errors, zero-area triangles are dropped and counted, a triangle
 * mesh used with convex = 0 must be closed and consistently oriented, a hull
 * must span a volume. Returns 0, or -1 with a message naming the mesh, geom and
 * body in err. Allocates m->collision. */
int khz_collisionCompile(khzModel *m, char *err, size_t errsz);

/* Convex hull of n points (compile time; allocates). On success fills h with
 * malloc'ed arrays (khz_hull_free releases them) and returns 0; returns -1 when
 * the points span no volume or memory runs out. */
int khz_hull_build(khzColHull *h, const double *pts, int n);
void khz_hull_free(khzColHull *h);

/* Prepares a closed triangle mesh (already scaled, degenerate triangles removed):
 * normals, pseudo-normals, BVHs and the signed distance grid. Returns 0, or -1
 * when out of memory. Allocates the arrays of t (khz_trimesh_free). */
int khz_trimesh_build(khzColTrimesh *t, const double *vert, int nvert, const int *tri, int ntri);
void khz_trimesh_free(khzColTrimesh *t);

/* ------------------------------------------------- triangle meshes -- */

/* Closest point of the mesh surface to p (geom frame): returns the signed
 * distance (negative inside, sign from the pseudo-normal of the closest
 * feature), writes the closest point, the triangle and the outward pseudo-
 * normal of the closest feature. Exact; uses the BVH with a fixed stack. */
double khz_trimesh_closest(const khzColTrimesh *t, const double p[3], double q[3], int *tri,
                           double nrm[3]);

/* Signed distance at p (geom frame) from the grid: trilinear, exact at the
 * samples; outside the grid, the distance to it plus the boundary value. */
double khz_trimesh_sdf(const khzColTrimesh *t, const double p[3]);

/* Calls fn(user, v) for every vertex v inside the box [lo, hi] (geom frame);
 * stops early when fn returns non-zero. */
void khz_trimesh_vertsInBox(const khzColTrimesh *t, const double lo[3], const double hi[3],
                            int (*fn)(void *user, int v), void *user);

/* The same for the vertices on the inside of the plane n.x <= d (geom frame). */
void khz_trimesh_vertsBelow(const khzColTrimesh *t, const double n[3], double d,
                            int (*fn)(void *user, int v), void *user);

/* ---------------------------------------------------- shapes in world -- */

/* a geom placed in the world, as the narrow phase sees it */
typedef struct khzColShape {
  int shape, geom;
  double pos[3], rot[9];
  const double *size;
  const khzColHull *hull;
  const khzColTrimesh *mesh;
  double scale;
  double bcenter[3], bradius; /* bounding sphere in the world (plane: infinite) */
  double lo[3], hi[3];        /* bounds in the geom frame */
  double lcenter[3];          /* centre of the bounding sphere in the geom frame */
} khzColShape;

/* builds the view of geom g at world frame (pos[3], rot[9]) */
void khz_shape_make(const khzModel *m, int g, const double *frame12, khzColShape *s);

/* world <-> geom frame; inline, as the support maps below: the narrow
 * phase's searches evaluate them in their innermost loops */
static inline void khz_shape_toLocalDir(const khzColShape *s, const double v[3], double out[3]) {
  const double *R = s->rot;
  double r0 = R[0] * v[0] + R[3] * v[1] + R[6] * v[2];
  double r1 = R[1] * v[0] + R[4] * v[1] + R[7] * v[2];
  double r2 = R[2] * v[0] + R[5] * v[1] + R[8] * v[2];
  out[0] = r0, out[1] = r1, out[2] = r2;
}
static inline void khz_shape_toWorldDir(const khzColShape *s, const double v[3], double out[3]) {
  const double *R = s->rot;
  double r0 = R[0] * v[0] + R[1] * v[1] + R[2] * v[2];
  double r1 = R[3] * v[0] + R[4] * v[1] + R[5] * v[2];
  double r2 = R[6] * v[0] + R[7] * v[1] + R[8] * v[2];
  out[0] = r0, out[1] = r1, out[2] = r2;
}
static inline void khz_shape_toLocal(const khzColShape *s, const double p[3], double out[3]) {
  double d[3];
  khzu_sub3(d, p, s->pos);
  khz_shape_toLocalDir(s, d, out);
}
static inline void khz_shape_toWorld(const khzColShape *s, const double p[3], double out[3]) {
  double r[3];
  khz_shape_toWorldDir(s, p, r);
  khzu_add3(out, r, s->pos);
}

/* sin between a direction and a cylinder's axis below which it has no radial part
 * (the support is the cap's centre) */
#define KHZ_AXIAL_SIN 1e-12

/* the vertex of vert[n] farthest along d (the first of equals), into l */
void khz_shape_supportVertex(const double *vert, int n, const double d[3], double l[3]);

/* support point of a bounded convex shape (not plane, not trimesh) in world
 * direction dir, and the support value h(dir) = dir . support */
/* the same in the geom frame: support point l of local direction d */
static inline void khz_shape_supportLocal(const khzColShape *s, const double d[3], double l[3]) {
  const double *sz = s->size;
  l[0] = l[1] = l[2] = 0;
  switch (s->shape) {
    case KHZ_SHAPE_SPHERE:
    case KHZ_SHAPE_CAPSULE: {
      double n = khzu_norm3(d);
      if (n > 0) khzu_scl3(l, d, sz[0] / n);
      if (s->shape == KHZ_SHAPE_CAPSULE) l[2] += d[2] >= 0 ? sz[1] : -sz[1];
      break;
    }
    case KHZ_SHAPE_BOX:
      for (int k = 0; k < 3; k++) l[k] = d[k] >= 0 ? sz[k] : -sz[k];
      break;
    case KHZ_SHAPE_CYLINDER: {
      /* radial when rho > KHZ_AXIAL_SIN |d|; |d| <= |d0| + |d1| + |d2|, so above
       * 1e6 times that bound the answer is known without the square root */
      double rho = sqrt(d[0] * d[0] + d[1] * d[1]);
      if (rho > 1e6 * KHZ_AXIAL_SIN * (fabs(d[0]) + fabs(d[1]) + fabs(d[2])) ||
          rho > KHZ_AXIAL_SIN * khzu_norm3(d))
        l[0] = sz[0] * d[0] / rho, l[1] = sz[0] * d[1] / rho;
      l[2] = d[2] >= 0 ? sz[1] : -sz[1];
      break;
    }
    case KHZ_SHAPE_CONVEX:
      khz_shape_supportVertex(s->hull->vert, s->hull->nvert, d, l);
      break;
    case KHZ_SHAPE_TRIMESH:
      khz_shape_supportVertex(s->mesh->vert, s->mesh->nvert, d, l);
      break;
    default: /* plane: its origin (unbounded; never asked for) */
      break;
  }
}
static inline void khz_shape_support(const khzColShape *s, const double dir[3], double out[3]) {
  double d[3], l[3];
  khz_shape_toLocalDir(s, dir, d);
  khz_shape_supportLocal(s, d, l);
  khz_shape_toWorld(s, l, out);
}
static inline double khz_shape_h(const khzColShape *s, const double dir[3]) {
  double p[3];
  khz_shape_support(s, dir, p);
  return khzu_dot3(dir, p);
}

/* Inside distance of world point p: > 0 inside (distance to the boundary for
 * every convex shape), < 0 outside; nrm = outward unit normal of the nearest
 * boundary feature (the face of a box or hull, the cap or the radial direction
 * of a cylinder, the radial direction of a sphere or capsule). Triangle meshes:
 * minus the grid SDF, nrm from its gradient. */
double khz_shape_sd(const khzColShape *s, const double p[3], double nrm[3]);
/* the same for a point and normal in the geom frame (nrm may be NULL) */
double khz_shape_sdLocal(const khzColShape *s, const double q[3], double nrm[3]);

/* Clips the segment p0 + t (p1 - p0), t in [0, 1], to a plane, box, cylinder or
 * hull; returns 1 and the interval t[0] <= t[1] when they meet. */
int khz_shape_clip(const khzColShape *s, const double p0[3], const double p1[3], double t[2]);
/* the same for a segment given in the geom frame */
int khz_shape_clipLocal(const khzColShape *s, const double a[3], const double b[3], double t[2]);

/* Vertices and edges used as contact features (box corners and edges,
 * cylinder rim samples, rim and generator edges, hull vertices and feature
 * edges, mesh vertices); 0 for plane, sphere and capsule. */
int khz_shape_nvert(const khzColShape *s);
void khz_shape_vert(const khzColShape *s, int i, double out[3]);
int khz_shape_nedge(const khzColShape *s);

/* unit rim directions of a cylinder, k = 0..15: (cos, sin)(2 pi k / 16) */
_Static_assert(KHZ_CYL_RIM == 16, "the rim table holds 16 samples");
static const double khz_rim_cs[KHZ_CYL_RIM][2] = {
    {1, 0},
    {0.92387953251128674, 0.38268343236508978},
    {0.70710678118654757, 0.70710678118654746},
    {0.38268343236508984, 0.92387953251128674},
    {6.123233995736766e-17, 1},
    {-0.38268343236508973, 0.92387953251128674},
    {-0.70710678118654746, 0.70710678118654757},
    {-0.92387953251128674, 0.38268343236508989},
    {-1, 1.2246467991473532e-16},
    {-0.92387953251128685, -0.38268343236508967},
    {-0.70710678118654768, -0.70710678118654746},
    {-0.38268343236509034, -0.92387953251128652},
    {-1.8369701987210297e-16, -1},
    {0.38268343236509, -0.92387953251128663},
    {0.70710678118654735, -0.70710678118654768},
    {0.92387953251128652, -0.38268343236509039},
};

/* vertex i in the geom frame (khz_shape_vert: in the world); inline with the
 * edges below, for the per-pair feature loops of the narrow phase */
static inline void khz_shape_vertLocal(const khzColShape *s, int i, double l[3]) {
  const double *sz = s->size;
  switch (s->shape) {
    case KHZ_SHAPE_BOX:
      l[0] = i & 1 ? sz[0] : -sz[0];
      l[1] = i & 2 ? sz[1] : -sz[1];
      l[2] = i & 4 ? sz[2] : -sz[2];
      break;
    case KHZ_SHAPE_CYLINDER: {
      int k = i % KHZ_CYL_RIM;
      l[0] = sz[0] * khz_rim_cs[k][0], l[1] = sz[0] * khz_rim_cs[k][1];
      l[2] = i >= KHZ_CYL_RIM ? sz[1] : -sz[1];
      break;
    }
    case KHZ_SHAPE_CONVEX:
      khzu_copy3(l, s->hull->vert + 3 * i);
      break;
    case KHZ_SHAPE_TRIMESH:
      khzu_copy3(l, s->mesh->vert + 3 * i);
      break;
    default:
      l[0] = l[1] = l[2] = 0;
  }
}

static inline void khz_shape_edge(const khzColShape *s, int i, int v[2]) {
  switch (s->shape) {
    case KHZ_SHAPE_BOX: {
      /* 4 edges along each axis: from the corners with that bit clear */
      static const int from[3][4] = {{0, 2, 4, 6}, {0, 1, 4, 5}, {0, 1, 2, 3}};
      int axis = i / 4;
      v[0] = from[axis][i % 4];
      v[1] = v[0] | (1 << axis);
      break;
    }
    case KHZ_SHAPE_CYLINDER: {
      int N = KHZ_CYL_RIM;
      if (i < 2 * N) {
        int rim = i / N, k = i % N;
        v[0] = rim * N + k, v[1] = rim * N + (k + 1) % N;
      } else {
        v[0] = i - 2 * N, v[1] = i - N;
      }
      break;
    }
    case KHZ_SHAPE_CONVEX:
      v[0] = s->hull->edge[2 * i], v[1] = s->hull->edge[2 * i + 1];
      break;
    default:
      v[0] = v[1] = 0;
  }
}

/* ------------------------------------------------------------------ GJK -- */

typedef void (*khzSupportFn)(const void *obj, const double dir[3], double out[3]);

/* a point (sphere core) or a segment (capsule core) for GJK */
typedef struct khzColCore {
  double a[3], b[3];
} khzColCore;
void khz_core_support(const void *core, const double dir[3], double out[3]);
void khz_shape_supportFn(const void *shape, const double dir[3], double out[3]);

/* Distance between two convex objects by GJK (Gilbert-Johnson-Keerthi, with
 * Ericson's closest point on simplex); writes the closest points pa, pb.
 * Returns 0 when they intersect (pa, pb then undefined). scale is a length
 * typical of the objects (tolerances). Fixed memory, at most 64 iterations. */
double khz_gjk(const void *a, khzSupportFn sa, const void *b, khzSupportFn sb, double scale,
               double pa[3], double pb[3]);

/* ------------------------------------------------------- narrow phase -- */

/* one candidate point of a pair during the narrow phase */
typedef struct khzColPoint {
  double pos[3];
  double sd;     /* normal-independent depth (inside distance), used to rank */
  double depth;  /* final depth along the normal */
  double weight; /* factor on depth in eq. 1's count, in [0, 1] (set_depths) */
  int side;      /* 0 = a point of shape A, 1 = of shape B */
  int feature;   /* KHZ_FEATURE(kind, index), side added by the dispatcher */
} khzColPoint;

/* the output of one narrow-phase call: bounded point buffer (the shallowest
 * point makes room when it is full), normal toward A */
typedef struct khzColOut {
  khzColPoint *pt;
  int npt, cap, overflow;
  double *work;  /* scratch of KHZ_COL_WORK(cap, maxvert) doubles */
  int maxvert;   /* vertices of the largest box, cylinder or hull involved */
  double normal[3];
  double apart[3]; /* after a call that found no contact: a direction (toward A, not unit)
                      along which the shapes were found apart, or 0 (khz_col_coherent) */
} khzColOut;

/* doubles of scratch a narrow-phase call needs for a point buffer of cap and
 * shapes of at most maxvert vertices: local coordinates of the points, and
 * each shape's vertices in the world and in the other's frame */
#define KHZ_COL_WORK(cap, maxvert) (6 * (cap) + 12 * (maxvert))

typedef int (*khzCollideFn)(const khzColShape *a, const khzColShape *b, khzColOut *out);

/* [type A][type B] for type A <= type B; NULL = these shapes never collide */
extern const khzCollideFn khz_collideTable[KHZ_SHAPE_N][KHZ_SHAPE_N];

/* adds a candidate point (keeps the deepest by sd when the buffer is full) */
void khz_col_addPoint(khzColOut *o, const double p[3], double sd, int side, int feature);

/* The least overlap h_B(n) + h_A(-n) of two bounded convex shapes over unit n
 * (n towards A), from the best of the candidate axes: by the exact form of a
 * box against a cylinder or of two cylinders when exact != 0 (2: for shapes
 * known to overlap, as eq. 4 calls it), otherwise (and for other pairs) by
 * the pattern search; the direction into n. With KHZ_COL_SCORE_ALL in
 * exact, no circle or pair of rims is skipped by its lower bound (the
 * answer must be the same bit for bit); with KHZ_COL_EXACT_SLOPES, every
 * arc end's slope sign is slope_at's, taken at both ends of every arc
 * (none from slope_sign, no far end left out: the same bits again). For
 * tests. */
#define KHZ_COL_SCORE_ALL 4    /* exact's flag: solve every circle and pair of rims */
#define KHZ_COL_EXACT_SLOPES 8 /* exact's flag: no arc end's slope sign without slope_at */
double khz_col_leastOverlap(const khzColShape *a, const khzColShape *b, int exact, double n[3]);

/* A lower bound on h(n) over the unit n normal to w for a box or cylinder
 * (the exact least: exact_normal's circle bound, circle_inradius). For
 * tests. */
double khz_col_circleInradius(const khzColShape *s, const double w[3]);

/* Which rims of cylinder s (bit 0: at -h, bit 1: at +h) the narrow phase
 * skips as wholly outside other's bounds (rims_outside); scratch holds 6
 * maxvert doubles (vcache_init's). For tests. */
int khz_col_rimsOutside(const khzColShape *s, const khzColShape *other, double *scratch, int maxvert);

/* The narrow phase's vertex cache of s against other (vcache_init): s's
 * vertices in the world into scratch[0, 3 maxvert) and in other's frame
 * into scratch[3 maxvert, 6 maxvert); returns their count. For tests. */
int khz_col_vertexCache(const khzColShape *s, const khzColShape *other, double *scratch, int maxvert);

/* The general path (poly_poly) of a plane A and a box, cylinder or hull B,
 * for which the table's plane_poly stands in bit for bit. For tests. */
int khz_col_polyPoly(const khzColShape *a, const khzColShape *b, khzColOut *o);

/* khz_collide as the step runs it: d->contact is left advanced past the
 * sleeping pairs (d->contact_shift of them) until khz_islandUpdate */
int khz_collideStep(const khzModel *m, khzData *d);

/* Bytes of scratch khz_collide takes from the data's stack at most (a bound
 * for data.c's default stack size). */
size_t khz_collisionStackBytes(const khzModel *m);

/* Narrow phase of geoms g0 < g1 at the given world frames (12 doubles per
 * geom: pos, rot): fills out with points whose feature carries the side
 * relative to (g0, g1) and the normal pointing toward g0. Returns 1 on
 * contact. */
int khz_narrowphase(const khzModel *m, int g0, int g1, const double *frame, khzColOut *out);
/* khz_narrowphase with temporal coherence for pairs that are apart: *apart
 * = 1 on entry when axis (unit, world, toward g0) is the direction the pair
 * was last found apart along. If the shapes' projections on it are still
 * apart by more than 1e-6 of the pair's scale the pair is apart (return 0)
 * without the narrow phase; else the narrow phase runs, and on a 0 result
 * *apart = 1 when axis now holds a direction that parts them by that gap.
 * The return value and the points are khz_narrowphase's in both cases. */
/* the narrow phase's scratch in a pool of threads (pool.c): the per-pair
 * records' bytes, each thread's points and doubles of work */
void khz_collisionPoolSizes(const khzModel *m, size_t *task_bytes, int *points, size_t *work_doubles);
int khz_narrowphaseCoherent(const khzModel *m, int g0, int g1, const double *frame, khzColOut *out,
                            double axis[3], int *apart);
/* the same for two shapes made by khz_shape_make (normal toward s0) */
int khz_col_coherent(const khzColShape *s0, const khzColShape *s1, khzColOut *out, double axis[3], int *apart);

/* The point of geom g farthest along world direction dir (its support
 * point), at its body's pose in d (world). A point a contact will reach
 * before the narrow phase finds it (contact/phases.c, landings). */
void khz_geomSupport(const khzModel *m, const khzData *d, int g, const double dir[3], double out[3]);
/* geom g's shape at its body's pose in d (what khz_geomSupport makes): one
 * shape for several support points (khz_shape_support), the same bits */
void khz_geomShape(const khzModel *m, const khzData *d, int g, khzColShape *s);

/* --------------------------------------------------------- broad phase -- */

/* 1 when geoms g1 and g2 may collide: both collidable, not on the same body or
 * rigidly welded bodies (which includes two bodies welded to the world), not
 * parent and child (unless the parent is the world), and
 * (contype1 & conaffinity2) || (contype2 & conaffinity1). */
int khz_collisionFilter(const khzModel *m, int g1, int g2);

/* World frames (12 doubles per geom: pos, row-major rot) and AABBs (6 per geom:
 * lo, hi) of every geom at the current kinematics; planes get infinite bounds. */
void khz_collisionFrames(const khzModel *m, const khzData *d, double *frame, double *aabb);

/* The candidate pairs one khz_broadphase call of khz_collide may return
 * (the capacity it is given). */
int khz_collisionPairCap(const khzModel *m);

/* Candidate pairs of bounded geoms whose AABBs overlap (sweep-and-prune on the
 * axis of largest spread, a radix sort of the lower bounds) plus plane pairs,
 * filtered; written as keys (g0 << 32 | g1, g0 < g1) sorted ascending. Scratch
 * from d's stack. Returns the number of pairs (at most cap; *overflow counts
 * the pairs that did not fit), or -1 when the stack is exhausted. */
int khz_broadphase(const khzModel *m, khzData *d, const double *frame, const double *aabb,
                   uint64_t *pairs, int cap, int *overflow);

/* LSD radix sort of n 64-bit keys (ascending) with an optional int payload;
 * tmp and ptmp are scratch of n entries (ptmp may be NULL with payload NULL). */
void khz_radixSort64(uint64_t *key, int *payload, int n, uint64_t *tmp, int *ptmp);
/* distinct keys ascending by insertion from a nearly sorted start (the
 * broad phase's last order), khz_radixSort64 past KHZ_SORT_WARM_MOVES moves
 * per key; tmp: n */
void khz_sortNearlySorted(uint64_t *key, int n, uint64_t *tmp);
/* nextafterf(f, up ? INFINITY : -INFINITY) for f not a NaN, on the bits
 * (broadphase.c: the boxes' float bounds, rounded outward) */
float khz_floatNext(float f, int up);

#endif /* KHZ_COLLISION_H */
