/* khz_capi.c — the few entry points libkhz.so adds to rt/ and loader/ for
 * callers that cannot read C headers (Python's ctypes, other FFIs).
 *
 * A khzCapi handle owns a loaded scene (its spec), the compiled model and one
 * data. Everything else is read through the structs themselves: khz_capi_field
 * gives the offset and size of every member a binding reads, so that a
 * binding builds numpy views on the C buffers without copying and without
 * restating the structs' layout (which follows the headers of the build it
 * is linked with). Nothing here runs in a real-time tick.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "khz/capi.h"
#include "khz/khz.h"
#include "khz/load.h"

struct khzCapi {
  khzScene scene; /* owns the spec the model was compiled from */
  khzModel *m;
  khzData *d;
  int *act_dof;   /* scene.nactuator: each actuator's dof (-1: none), */
  double *ctrl;   /* its control, */
  double *tau;    /* and the caller's d->tau kept across a step (nv) */
};

/* each actuator's dof in the model h->m (after a compile) */
static void capi_actuatorDofs(khzCapi *h) {
  for (int i = 0; i < h->scene.nactuator; i++) {
    int b = khz_name2joint(h->m, h->scene.actuator[i].joint);
    h->act_dof[i] = b > 0 && h->m->jnt_nv[b] == 1 ? h->m->jnt_dofadr[b] : -1;
  }
}

/* one step with the actuators' torques added to the caller's tau */
static void capi_step1(khzCapi *h) {
  const khzModel *m = h->m;
  khzData *d = h->d;
  int n = h->scene.nactuator;
  if (n == 0) {
    khz_step(m, d);
    return;
  }
  memcpy(h->tau, d->tau, (size_t)m->nv * sizeof(double));
  for (int i = 0; i < n; i++) {
    int k = h->act_dof[i];
    if (k < 0) continue;
    double q = d->q[m->jnt_qadr[m->dof_body[k]]];
    d->tau[k] += khz_actuator_torque(&h->scene.actuator[i], h->ctrl[i], q, d->qd[k]);
  }
  khz_step(m, d);
  memcpy(d->tau, h->tau, (size_t)m->nv * sizeof(double));
}

static void capi_err(char *err, size_t errsz, const char *fmt, const char *a, const char *b) {
  if (err && errsz) snprintf(err, errsz, fmt, a, b);
}

khzCapi *khz_capi_open(const char *path, char *err, size_t errsz) {
  khzCapi *h = calloc(1, sizeof *h);
  if (!h) {
    capi_err(err, errsz, "%s: out of memory%s", path ? path : "(null)", "");
    return NULL;
  }
  h->m = khz_loadModel(path, &h->scene, err, errsz);
  if (!h->m) {
    free(h);
    return NULL;
  }
  h->d = khz_makeData(h->m, 0);
  h->act_dof = calloc((size_t)h->scene.nactuator + 1, sizeof *h->act_dof);
  h->ctrl = calloc((size_t)h->scene.nactuator + 1, sizeof *h->ctrl);
  h->tau = calloc((size_t)h->m->nv + 1, sizeof *h->tau);
  if (!h->d || !h->act_dof || !h->ctrl || !h->tau) {
    capi_err(err, errsz, "%s: out of memory for the data%s", path, "");
    khz_capi_close(h);
    return NULL;
  }
  capi_actuatorDofs(h);
  for (int i = 0; i < h->scene.nactuator; i++) h->ctrl[i] = h->scene.actuator[i].ctrl0;
  khz_kinematics(h->m, h->d);
  return h;
}

void khz_capi_close(khzCapi *h) {
  if (!h) return;
  khz_deleteData(&h->d);
  khz_deleteModel(&h->m);
  khz_deleteScene(&h->scene);
  free(h->act_dof);
  free(h->ctrl);
  free(h->tau);
  free(h);
}

int khz_capi_nActuator(const khzCapi *h) { return h->scene.nactuator; }

const char *khz_capi_actuatorName(const khzCapi *h, int i) {
  return i >= 0 && i < h->scene.nactuator ? h->scene.actuator[i].name : NULL;
}

int khz_capi_setCtrl(khzCapi *h, const char *name, double value, char *err, size_t errsz) {
  int i = -1;
  for (int k = 0; name && k < h->scene.nactuator; k++)
    if (strcmp(h->scene.actuator[k].name, name) == 0) i = k;
  if (i < 0) {
    if (err && errsz)
      snprintf(err, errsz, "%s: '%s' is not one of the model's %d actuators%s%s", h->scene.name,
               name ? name : "(null)", h->scene.nactuator, h->scene.nactuator ? ", e.g. " : "",
               h->scene.nactuator ? h->scene.actuator[0].name : "");
    return -1;
  }
  if (!isfinite(value)) {
    if (err && errsz)
      snprintf(err, errsz, "%s: control %g of actuator '%s' is not finite: not set",
               h->scene.name, value, name);
    return -1;
  }
  h->ctrl[i] = value;
  return i;
}

double khz_capi_getCtrl(const khzCapi *h, int i) {
  return i >= 0 && i < h->scene.nactuator ? h->ctrl[i] : NAN;
}

khzModel *khz_capi_model(khzCapi *h) { return h->m; }
khzData *khz_capi_data(khzCapi *h) { return h->d; }
double khz_capi_rateHz(const khzCapi *h) { return h->scene.rate_hz; }

/* spec edits (campaign parameters): the loader's (the server's mass_scale and
 * friction settings make the same edits); they take effect at khz_capi_recompile */
int khz_capi_scaleMass(khzCapi *h, const char *body, double factor, char *err, size_t errsz) {
  return khz_scene_scaleMass(&h->scene, body, factor, err, errsz);
}

int khz_capi_setFriction(khzCapi *h, double mu, char *err, size_t errsz) {
  return khz_scene_setFriction(&h->scene, mu, err, errsz);
}

int khz_capi_recompile(khzCapi *h, char *err, size_t errsz) {
  khzModel *m = khz_compile(h->scene.spec, err, errsz);
  if (!m) return -1;
  khzData *d = khz_makeData(m, 0);
  if (!d) {
    capi_err(err, errsz, "%s: out of memory for the data%s", h->scene.name, "");
    khz_deleteModel(&m);
    return -1;
  }
  double *tau = realloc(h->tau, ((size_t)m->nv + 1) * sizeof *tau);
  if (!tau) {
    capi_err(err, errsz, "%s: out of memory for the data%s", h->scene.name, "");
    khz_deleteData(&d);
    khz_deleteModel(&m);
    return -1;
  }
  h->tau = tau;
  khz_deleteData(&h->d);
  khz_deleteModel(&h->m);
  h->m = m;
  h->d = d;
  capi_actuatorDofs(h);
  khz_kinematics(m, d);
  return 0;
}

void khz_capi_reset(khzCapi *h) {
  for (int i = 0; i < h->scene.nactuator; i++) h->ctrl[i] = h->scene.actuator[i].ctrl0;
  khz_resetData(h->m, h->d);
  khz_kinematics(h->m, h->d);
}

/* after the caller wrote q or qd: friction anchors at the new positions,
 * sleeping islands woken, kinematics recomputed */
void khz_capi_stateWritten(khzCapi *h) {
  khz_resetStick(h->m, h->d);
  khz_wake(h->m, h->d, -1);
  khz_kinematics(h->m, h->d);
}

void khz_capi_step(khzCapi *h, long n) {
  for (long i = 0; i < n; i++) capi_step1(h);
}

/* Figures of the contacts the last step found: out[0] the deepest point's
 * depth (m), out[1] the largest normal force of one pair (N): the sum over
 * its points of the force along the normal (a point's force holds the
 * implicit part too; force_implicit is its share, not added again). */
void khz_capi_contactFigures(const khzCapi *h, double out[2]) {
  const khzData *d = h->d;
  double depth = 0, force = 0;
  for (int i = 0; i < d->ncontact; i++) {
    const khzContact *c = d->contact + i;
    double fn = 0;
    for (int k = 0; k < c->npoint; k++) {
      const khzContactPoint *p = d->cpoint + c->point_adr + k;
      if (p->depth > depth) depth = p->depth;
      fn += p->force[0] * c->normal[0] + p->force[1] * c->normal[1] + p->force[2] * c->normal[2];
    }
    if (fn > force) force = fn;
  }
  out[0] = depth;
  out[1] = force;
}

/* n steps, keeping running figures in acc (before a run the caller sets
 * acc[0] = acc[1] = 0 and acc[2] = acc[3] = the energy at the start):
 * acc[0] max depth, acc[1] max pair normal force, acc[2] max total energy,
 * acc[3] the last total energy */
void khz_capi_stepFigures(khzCapi *h, long n, double acc[4]) {
  for (long i = 0; i < n; i++) {
    double f[2], ke, pe;
    capi_step1(h);
    khz_capi_contactFigures(h, f);
    if (f[0] > acc[0]) acc[0] = f[0];
    if (f[1] > acc[1]) acc[1] = f[1];
    khz_energy(h->m, h->d, &ke, &pe);
    if (ke + pe > acc[2]) acc[2] = ke + pe;
    acc[3] = ke + pe;
  }
}

void khz_capi_energy(khzCapi *h, double out[2]) { khz_energy(h->m, h->d, out, out + 1); }

/* ---------------------------------------------------------------- layout -- */

typedef struct capiField {
  const char *name;
  size_t offset, size;
} capiField;

#define CAPI_F(T, f) {#T "." #f, offsetof(T, f), sizeof(((T *)0)->f)}
#define CAPI_T(T) {#T, 0, sizeof(T)}

static const capiField capi_fields[] = {
    CAPI_T(khzModel), CAPI_F(khzModel, nbody), CAPI_F(khzModel, nq), CAPI_F(khzModel, nv),
    CAPI_F(khzModel, ngeom), CAPI_F(khzModel, timestep), CAPI_F(khzModel, gravity),
    CAPI_F(khzModel, npair_max), CAPI_F(khzModel, max_points), CAPI_F(khzModel, body_parent),
    CAPI_F(khzModel, body_mass), CAPI_F(khzModel, jnt_type), CAPI_F(khzModel, jnt_qadr),
    CAPI_F(khzModel, jnt_dofadr), CAPI_F(khzModel, jnt_nq), CAPI_F(khzModel, jnt_nv),
    CAPI_F(khzModel, jnt_limited), CAPI_F(khzModel, jnt_range), CAPI_F(khzModel, dof_effort),
    CAPI_F(khzModel, q0), CAPI_F(khzModel, qd0), CAPI_F(khzModel, geom_body),
    CAPI_F(khzModel, body_name), CAPI_F(khzModel, jnt_name),
    CAPI_T(khzData), CAPI_F(khzData, time), CAPI_F(khzData, q), CAPI_F(khzData, qd),
    CAPI_F(khzData, tau), CAPI_F(khzData, xfrc), CAPI_F(khzData, qdd),
    CAPI_F(khzData, tau_applied), CAPI_F(khzData, xpos), CAPI_F(khzData, xrot),
    CAPI_F(khzData, xcom), CAPI_F(khzData, cvel), CAPI_F(khzData, contact_method),
    CAPI_F(khzData, ncontact), CAPI_F(khzData, contact), CAPI_F(khzData, ncpoint),
    CAPI_F(khzData, cpoint), CAPI_F(khzData, warning), CAPI_F(khzData, sleep_enabled),
    CAPI_T(khzContact), CAPI_F(khzContact, geom), CAPI_F(khzContact, body),
    CAPI_F(khzContact, normal), CAPI_F(khzContact, point_adr), CAPI_F(khzContact, npoint),
    CAPI_F(khzContact, deepest), CAPI_F(khzContact, mu),
    CAPI_T(khzContactPoint), CAPI_F(khzContactPoint, pos), CAPI_F(khzContactPoint, depth),
    CAPI_F(khzContactPoint, force), CAPI_F(khzContactPoint, force_implicit),
    CAPI_F(khzContactPoint, bottom),
};

int khz_capi_field(const char *name, size_t *offset, size_t *size) {
  for (size_t i = 0; i < sizeof capi_fields / sizeof capi_fields[0]; i++)
    if (strcmp(capi_fields[i].name, name) == 0) {
      *offset = capi_fields[i].offset;
      *size = capi_fields[i].size;
      return 0;
    }
  return -1;
}

int khz_capi_version(void) { return KHZ_CAPI_VERSION; }
