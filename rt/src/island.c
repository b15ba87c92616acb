/* island.c — islands and sleeping bodies (docs/sleeping.md).
 *
 * The unit is a tree (a root body and what hangs below it). A tree may sleep
 * when some joint of it moves: free bodies and robots alike (a robot's
 * fixed base sleeps with its links; a robot only while it touches
 * something; a tree held by an equality constraint never sleeps). Trees
 * that touch through this step's contacts
 * form islands (union-find, the smaller root the representative, so the
 * labels do not depend on the order of the contacts). Each awake tree keeps
 * an idle time: the seconds every point of it has moved slower than
 * m->sleep.velocity, bounded by |v_origin| + |w| r with r the reach of the
 * body's geoms from its origin (Box2D's sleep test, with the body's extent).
 * An island of trees all idle for m->sleep.time falls asleep together:
 * velocities set to zero, then not integrated and not collided (their pairs
 * keep their persistent state, so waking is seamless) until a contact with
 * an awake moving body (collision/pairs.c), a torque, a wrench, a velocity
 * (khz_islandWakeOnInputs) or khz_wake wakes the whole island.
 * The dynamics (rt/src/dynamics.c) skip sleeping bodies: their forward pass
 * keeps the values of the frozen q at rest, their accelerations are zero.
 * Everything is deterministic and uses the data's stack only.
 */
#include "island.h"

#include <math.h>
#include <string.h>

#include "collision/collision.h"
#include "dynamics.h"

static int is_root(const khzModel *m, int b) { return b > 0 && m->body_parent[b] == 0; }

int khz_pairAsleep(const khzModel *m, const khzData *d, int b0, int b1) {
  int s0 = b0 > 0 && d->body_sleep[b0], s1 = b1 > 0 && d->body_sleep[b1];
  if (!s0 && !s1) return 0;
  return (s0 || khz_bodyStatic(m, b0)) && (s1 || khz_bodyStatic(m, b1));
}

int khz_pairMixed(const khzModel *m, const khzData *d, int b0, int b1) {
  int s0 = b0 > 0 && d->body_sleep[b0], s1 = b1 > 0 && d->body_sleep[b1];
  if (s0 == s1) return 0;
  return s0 ? !khz_bodyStatic(m, b1) : !khz_bodyStatic(m, b0);
}

int khz_bodySleeping(const khzModel *m, const khzData *d, int b) {
  return b > 0 && b < m->nbody && d->body_sleep[b] != 0;
}

/* 1 when a joint of root r's tree moves (bodies r .. body_treeend[r] - 1) */
static int tree_moves(const khzModel *m, int r) {
  for (int i = r; i < m->body_treeend[r]; i++)
    if (m->jnt_type[i] != KHZ_JOINT_FIXED) return 1;
  return 0;
}

int khz_bodyCanSleep(const khzModel *m, int b) { return is_root(m, b) && tree_moves(m, b); }

void khz_wake(const khzModel *m, khzData *d, int b) {
  if (!khz_anyAsleep(d) || b >= m->nbody || b == 0) return;
  int label = b > 0 ? d->body_sleep[b] : 0;
  if (b > 0 && !label) return;
  d->quiet_ready = 0; /* bodies wake: the next collision pass is not quiet */
  d->aba_held = 0;    /* a woken body is in no held inertia pass (dynamics.c) */
  d->kin_valid = 0;   /* nor are the forward pass's fields taken as they are (dynamics.c's stamp) */
  for (int i = 1; i < m->nbody; i++) {
    if (!d->body_sleep[i] || (label && d->body_sleep[i] != label)) continue;
    d->body_sleep[i] = 0;
    d->body_idle[i] = 0;
    if (is_root(m, i)) d->body_sleep[0]--;
  }
}

static int nonzero(const double *x, int n) {
  for (int k = 0; k < n; k++)
    if (x[k] != 0) return 1;
  return 0;
}

void khz_islandWakeOnInputs(const khzModel *m, khzData *d) {
  d->ncontact_asleep = d->contact_shift = 0; /* khz_collide lists them again */
  if (!khz_anyAsleep(d)) return;
  /* nothing sleeps without contact, nor under the LCP and PEG methods, which find
   * its contacts itself (lcp.c), past the pass that keeps sleeping pairs */
  if (!d->sleep_enabled || d->contact_method == KHZ_CONTACT_NONE ||
      d->contact_method == KHZ_CONTACT_LCP || d->contact_method == KHZ_CONTACT_PEG) {
    khz_wake(m, d, -1);
    return;
  }
  for (int b = 1; b < m->nbody; b++) {
    if (!d->body_sleep[b]) continue;
    int da = m->jnt_dofadr[b], nv = m->jnt_nv[b];
    if (nonzero(d->xfrc + 6 * b, 6) || nonzero(d->qd + da, nv) || nonzero(d->tau_applied + da, nv))
      khz_wake(m, d, b);
  }
}

void khz_islandFreeze(const khzModel *m, khzData *d, const double *q0, const double *v0) {
  if (!khz_anyAsleep(d)) return;
  for (int b = 1; b < m->nbody; b++) {
    if (!d->body_sleep[b]) continue;
    int qa = m->jnt_qadr[b], da = m->jnt_dofadr[b];
    memcpy(d->q + qa, q0 + qa, (size_t)m->jnt_nq[b] * sizeof(double));
    memcpy(d->qd + da, v0 + da, (size_t)m->jnt_nv[b] * sizeof(double));
    memset(d->qdd + da, 0, (size_t)m->jnt_nv[b] * sizeof(double));
  }
}

size_t khz_islandStackBytes(const khzModel *m) {
  return (size_t)m->nbody * (2 * sizeof(int) + 2 * sizeof(double)) + 4 * 64;
}

/* how far each body reaches from its origin: its geoms, and at least its
 * mass (com plus sqrt(trace I / m), 1.1 radii for a ball), so that a body
 * without geoms that spins does not count as still. The model's alone: once,
 * at compile (it was taken at every step) */
void khz_islandReach(khzModel *m) {
  const khzColModel *cm = m->collision;
  double *reach = m->body_reach;
  for (int b = 0; b < m->nbody; b++) {
    const double *I = m->body_inertia + 9 * b;
    double mass = m->body_mass[b], tr = I[0] + I[4] + I[8];
    reach[b] = khzu_norm3(m->body_com + 3 * b) + (mass > 0 && tr > 0 ? sqrt(tr / mass) : 0);
  }
  for (int g = 0; cm && g < m->ngeom; g++) {
    const khzColGeom *cg = cm->geom + g;
    if (cg->shape < 0) continue;
    int b = m->geom_body[g];
    double r = khzu_norm3(m->geom_pos + 3 * g) + khzu_norm3(cg->center) + cg->radius;
    if (cg->shape == KHZ_SHAPE_PLANE) r = INFINITY;
    if (r > reach[b]) reach[b] = r;
  }
}

static int find(int *parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]]; /* path halving */
  return x;
}

/* the smaller root represents the union: labels independent of contact order */
static void unite(int *parent, int a, int b) {
  a = find(parent, a), b = find(parent, b);
  if (a < b) parent[b] = a;
  else if (b < a) parent[a] = b;
}

int khz_islandUpdate(const khzModel *m, khzData *d) {
  /* the sleeping pairs back in front of the list (khz_collide moved past them) */
  int frozen = d->contact_shift;
  d->contact -= frozen;
  d->ncontact += frozen;
  d->contact_shift = 0;
  d->ncontact_kept = 0;
  if (!d->sleep_enabled || d->contact_method == KHZ_CONTACT_NONE ||
      d->contact_method == KHZ_CONTACT_LCP || d->contact_method == KHZ_CONTACT_PEG)
    return 0;
  /* every tree asleep: no idle time to count, no tree to put to sleep */
  if (khz_allAsleep(m, d)) {
    d->ncontact_kept = d->ncontact;
    return 0;
  }
  int nb = m->nbody, slept = 0;
  size_t mark = khz_stackMark(d);
  int *parent = khz_stackAlloc(d, (size_t)nb * sizeof(int));
  int *capable = khz_stackAlloc(d, (size_t)nb * sizeof(int));
  double *least = khz_stackAlloc(d, (size_t)nb * sizeof(double));
  if (!parent || !capable || !least) { /* counted as KHZ_WARN_STACK: nobody sleeps */
    khz_stackFree(d, mark);
    return 0;
  }
  const double *reach = m->body_reach;

  /* trees that move (free bodies and robots), and the islands of this step's
   * contacts; a tree welded whole to the world is not one. capable: 1 a free
   * body, 2 a robot (a moving joint below its root, or a root that is not
   * floating), | 4 once a robot touches something this step */
  for (int b = 0; b < nb; b++) parent[b] = b, capable[b] = 0, least[b] = INFINITY;
  for (int b = 1; b < nb; b++) {
    int r = m->body_root[b];
    if (m->jnt_type[b] == KHZ_JOINT_FIXED) continue;
    capable[r] = b == r && m->jnt_type[b] == KHZ_JOINT_FLOATING && capable[r] != 2 ? 1 : 2;
  }
  /* a body held by an equality constraint (constraint.c) never sleeps: its
   * partner would pull on a frozen body, and nothing would wake it */
  for (int e = 0; e < m->neq; e++)
    for (int s = 0; s < 2; s++)
      if (m->eq_body[2 * e + s] > 0) capable[m->body_root[m->eq_body[2 * e + s]]] = 0;
  for (int i = frozen; i < d->ncontact; i++) {
    const khzContact *c = d->contact + i;
    int b0 = c->body[0], b1 = c->body[1];
    for (int s = 0; s < 2; s++) { /* a robot held up by a contact, not only by its joints */
      int r = m->body_root[c->body[s]];
      if (c->body[s] > 0 && capable[r] == 2) capable[r] |= 4;
    }
    if (khz_bodyStatic(m, b0) || khz_bodyStatic(m, b1)) continue;
    unite(parent, m->body_root[b0], m->body_root[b1]);
  }

  /* idle times: every body of the tree below the speed bound */
  double h = d->timestep, vmax = m->sleep.velocity;
  for (int b = 1; b < nb; b++) {
    int r = m->body_root[b];
    if (b == r && !d->body_sleep[r]) d->body_idle[r] += h; /* back to 0 below if it moves */
  }
  for (int b = 1; b < nb; b++) {
    int r = m->body_root[b];
    if (d->body_sleep[r]) continue;
    const double *w = d->cvel + 6 * b, *v = w + 3;
    double bound = khzu_norm3(v) + khzu_norm3(w) * reach[b];
    /* a body held by a wrench or a torque (a haptic coupling at rest) is
     * not idle: asleep, the input would wake it at once */
    int driven = nonzero(d->xfrc + 6 * b, 6) || nonzero(d->tau_applied + m->jnt_dofadr[b], m->jnt_nv[b]);
    if (!capable[r] || driven || !(bound <= vmax)) d->body_idle[r] = 0;
  }

  /* an island sleeps when its least idle tree has been idle long enough;
   * a tree that cannot sleep (held by an equality constraint, idle 0) keeps
   * its island awake. A robot's root is welded to the world (static) but its
   * tree moves: the tree, not the root, decides */
  for (int r = 1; r < nb; r++) {
    if (!is_root(m, r) || d->body_sleep[r] || !tree_moves(m, r)) continue;
    int rep = find(parent, r);
    /* a robot touching nothing is held by its joints alone (damping, springs,
     * friction) and may be creeping (a heavily damped link sinking under
     * gravity): it does not sleep, nor does its island */
    double t = capable[r] == 1 || capable[r] == 6 ? d->body_idle[r] : -1;
    if (t < least[rep]) least[rep] = t;
  }
  for (int r = 1; r < nb; r++) {
    capable[r] = 0; /* from here: 1 + the label of a tree falling asleep, else 0 */
    if (!is_root(m, r) || d->body_sleep[r] || !tree_moves(m, r)) continue;
    int rep = find(parent, r);
    if (!(least[rep] >= m->sleep.time)) continue;
    for (int b = r; b < m->body_treeend[r]; b++) /* every dof of the tree at rest */
      memset(d->qd + m->jnt_dofadr[b], 0, (size_t)m->jnt_nv[b] * sizeof(double));
    capable[r] = 1 + rep;
    slept = 1;
  }
  /* the kinematics at rest (zero velocity) before the flags are set: the
   * dynamics skip sleeping bodies, whose last pass must be this one */
  if (slept) khz_kinematics(m, d);
  for (int b = 1; slept && b < nb; b++) {
    int r = m->body_root[b];
    if (!capable[r]) continue;
    d->body_sleep[b] = capable[r];
    if (b == r) d->body_sleep[0]++;
  }
  khz_stackFree(d, mark);
  if (khz_anyAsleep(d)) d->ncontact_kept = d->ncontact;
  return slept;
}
