/* codec.c — State packing and ModelDescription building (codec.h). */
#include <stdlib.h>
#include <string.h>

#include "codec.h"

int khz_codec_init(khzStateCodec *c, int nbody) {
  memset(c, 0, sizeof *c);
  khz__v1__state__init(&c->msg);
  khz__v1__tick_stats__init(&c->stats);
  c->pose = calloc((size_t)nbody * 7 + 1, sizeof(double));
  c->cap = 4096;
  c->buf = malloc(c->cap);
  for (int i = 0; i < KHZ_LOOP_MAX_CONTACTS; i++) {
    khz__v1__contact__init(&c->contact[i]);
    c->contact_ptr[i] = &c->contact[i];
    c->contact[i].n_position = c->contact[i].n_normal = c->contact[i].n_force = 3;
    c->contact[i].position = c->contact_data[i];
    c->contact[i].normal = c->contact_data[i] + 3;
    c->contact[i].force = c->contact_data[i] + 6;
    c->contact[i].n_geoms = 2;
    c->contact[i].geoms = c->contact_geoms[i];
  }
  return c->pose && c->buf ? 0 : -1;
}

void khz_codec_free(khzStateCodec *c) {
  free(c->pose);
  free(c->buf);
  c->pose = NULL;
  c->buf = NULL;
}

int khz_codec_packState(khzStateCodec *c, const khzLoopState *s, uint32_t generation,
                        uint64_t rejected, uint8_t **out, size_t *len) {
  Khz__V1__State *m = &c->msg;
  int nbody = s->nbody;

  /* header */
  m->model_generation = generation;
  m->protocol_version = KHZ__V1__PROTOCOL_VERSION__PROTOCOL_VERSION;
  m->seq = s->seq;
  m->sim_time = s->sim_time;
  m->tick_time_ns = s->tick_time_ns;
  m->wall_time_ns = s->wall_ns;
  m->mono_time_ns = s->mono_ns;
  m->mode = (Khz__V1__Mode)s->mode;
  m->rate_hz = s->rate_hz;
  m->flags = s->flags;
  m->reset_seq = s->reset_seq;

  /* arrays point into the loop's slot; poses are interleaved here */
  m->n_q = (size_t)s->nq;
  m->q = s->q;
  m->n_qd = (size_t)s->nv;
  m->qd = s->qd;
  m->n_tau = m->n_qd;
  m->tau = s->tau;
  for (int b = 0; b < nbody; b++) {
    memcpy(c->pose + 7 * b, s->xpos + 3 * b, 3 * sizeof(double));
    memcpy(c->pose + 7 * b + 3, s->xquat + 4 * b, 4 * sizeof(double));
  }
  m->n_body_pose = 7 * (size_t)nbody;
  m->body_pose = c->pose;
  m->n_body_twist = 6 * (size_t)nbody;
  m->body_twist = s->cvel;
  m->n_body_sleeping = (size_t)nbody;
  _Static_assert(sizeof(protobuf_c_boolean) == sizeof(int), "body_sleeping points at ints");
  m->body_sleeping = s->sleeping;

  /* hardware-in-the-loop sensors and faults */
  m->n_sensor_values = (size_t)s->nsensor_value;
  m->sensor_values = s->sensor;
  m->n_sensor_sampled_tick = (size_t)s->nsensor;
  for (int i = 0; i < s->nsensor && i < KHZ_SCENE_MAX_SENSOR; i++)
    c->sensor_tick[i] = (uint64_t)s->sensor_tick[i];
  m->sensor_sampled_tick = c->sensor_tick;
  _Static_assert(sizeof(uint32_t) == sizeof(int), "fault codes point at ints");
  m->n_sensor_faults = (size_t)s->nsensor;
  m->sensor_faults = (uint32_t *)s->sensor_fault;
  m->shown_seq = s->shown_seq;
  m->n_drive_faults = (size_t)s->ndrive;
  m->drive_faults = (uint32_t *)s->drive_fault;

  /* contacts */
  for (int i = 0; i < s->ncontact; i++) {
    const khzLoopContact *k = &s->contact[i];
    c->contact[i].body1 = (uint32_t)k->body[0];
    c->contact[i].body2 = (uint32_t)k->body[1];
    c->contact_geoms[i][0] = (uint32_t)k->geom[0];
    c->contact_geoms[i][1] = (uint32_t)k->geom[1];
    memcpy(c->contact_data[i], k->pos, 3 * sizeof(double));
    memcpy(c->contact_data[i] + 3, k->normal, 3 * sizeof(double));
    memcpy(c->contact_data[i] + 6, k->force, 3 * sizeof(double));
    c->contact[i].depth = k->depth;
  }
  m->n_contacts = (size_t)s->ncontact;
  m->contacts = c->contact_ptr;

  /* the command applied, haptics, statistics, warnings */
  m->command_seq = s->cmd_seq;
  m->command_state_seq = s->cmd_state_seq;
  m->command_client_time_ns = s->cmd_client_time_ns;
  m->n_haptic_wrench = 6 * (size_t)s->nhaptic;
  m->haptic_wrench = s->haptic_wrench;
  Khz__V1__TickStats *t = &c->stats;
  t->lateness_ns = s->stats.lateness_ns;
  t->compute_ns = s->stats.compute_ns;
  t->ticks = s->stats.ticks;
  t->overruns = s->stats.overruns;
  t->missed = s->stats.missed;
  t->commands = s->stats.commands;
  t->on_time = s->stats.on_time;
  t->late = s->stats.late;
  t->superseded = s->stats.superseded;
  t->states_dropped = s->stats.states_dropped;
  t->watchdog_engaged = s->stats.watchdog_engaged;
  t->lockstep_timeouts = s->stats.lockstep_timeouts;
  t->cpu_ns = s->stats.cpu_ns;
  t->between_ns = s->stats.between_ns;
  t->own_overruns = s->stats.own_overruns;
  t->preempted_overruns = s->stats.preempted_overruns;
  t->late_overruns = s->stats.late_overruns;
  t->rejected = rejected;
  m->stats = t;
  for (int w = 0; w < KHZ_NWARNING; w++) c->warnings[w] = (uint32_t)s->warning[w];
  m->n_warnings = KHZ_NWARNING;
  m->warnings = c->warnings;
  m->state_hash = s->hash;
  m->contact_method = (char *)khz_contactMethodName((khzContactMethod)s->contact_method);

  /* pack into the reusable buffer */
  size_t need = khz__v1__state__get_packed_size(m);
  if (need > c->cap) {
    uint8_t *nb = realloc(c->buf, need * 2);
    if (!nb) return -1;
    c->buf = nb;
    c->cap = need * 2;
  }
  *len = khz__v1__state__pack(m, c->buf);
  *out = c->buf;
  return 0;
}

static char *dup(const char *s) {
  char *d = strdup(s ? s : "");
  return d ? d : calloc(1, 1);
}

static double *dup_doubles(const double *v, size_t n) {
  double *d = malloc(n * sizeof *d);
  if (d) memcpy(d, v, n * sizeof *d);
  return d;
}

/* The geoms (shape, body, pose in the body frame, colour) and the meshes, so
 * that a viewer draws the scene without its file. Meshes share a budget of
 * KHZ_DESCRIBE_MESH_VERTICES / _FACES; one that does not fit in what is left
 * goes without vertices and faces, with its counts and bounding box. */
static int describe_geoms(Khz__V1__ModelDescription *d, const khzModel *m) {
  static const char *const types[KHZ_GEOM_NTYPES] = {"plane",    "sphere",   "box",
                                                     "capsule",  "cylinder", "mesh"};
  d->geoms = calloc((size_t)m->ngeom + 1, sizeof *d->geoms);
  d->meshes = calloc((size_t)m->nmesh + 1, sizeof *d->meshes);
  if (!d->geoms || !d->meshes) return -1;
  for (int g = 0; g < m->ngeom; g++) {
    Khz__V1__GeomInfo *gi = calloc(1, sizeof *gi);
    if (!gi) return -1;
    khz__v1__geom_info__init(gi);
    d->geoms[d->n_geoms++] = gi;
    int t = m->geom_type[g];
    gi->body = (uint32_t)m->geom_body[g];
    gi->type = dup(t >= 0 && t < KHZ_GEOM_NTYPES ? types[t] : "unknown");
    gi->size = dup_doubles(m->geom_size + 3 * g, 3);
    gi->pos = dup_doubles(m->geom_pos + 3 * g, 3);
    gi->quat = dup_doubles(m->geom_quat + 4 * g, 4);
    gi->rgba = dup_doubles(m->geom_rgba + 4 * g, 4);
    if (!gi->size || !gi->pos || !gi->quat || !gi->rgba) return -1;
    gi->n_size = gi->n_pos = 3;
    gi->n_quat = gi->n_rgba = 4;
    gi->visual = m->geom_visual[g] != 0;
    gi->mesh = m->geom_meshid[g];
  }
  long vleft = KHZ_DESCRIBE_MESH_VERTICES, fleft = KHZ_DESCRIBE_MESH_FACES;
  for (int k = 0; k < m->nmesh; k++) {
    Khz__V1__MeshInfo *mi = calloc(1, sizeof *mi);
    if (!mi) return -1;
    khz__v1__mesh_info__init(mi);
    d->meshes[d->n_meshes++] = mi;
    int nv = m->mesh_vertnum[k], nf = m->mesh_facenum[k];
    const double *v = m->mesh_vert + 3 * m->mesh_vertadr[k];
    const int *f = m->mesh_face + 3 * m->mesh_faceadr[k];
    mi->name = dup(m->mesh_name[k]);
    mi->nvertex = (uint32_t)nv;
    mi->nface = (uint32_t)nf;
    mi->lower = calloc(3, sizeof(double));
    mi->upper = calloc(3, sizeof(double));
    if (!mi->lower || !mi->upper) return -1;
    mi->n_lower = mi->n_upper = 3;
    for (int a = 0; a < 3 && nv > 0; a++) {
      mi->lower[a] = mi->upper[a] = v[a];
      for (int i = 1; i < nv; i++) {
        if (v[3 * i + a] < mi->lower[a]) mi->lower[a] = v[3 * i + a];
        if (v[3 * i + a] > mi->upper[a]) mi->upper[a] = v[3 * i + a];
      }
    }
    if (nv > vleft || nf > fleft) {
      mi->omitted = 1;
      continue;
    }
    vleft -= nv;
    fleft -= nf;
    mi->vertices = malloc((size_t)(3 * nv + 1) * sizeof(float));
    mi->faces = malloc((size_t)(3 * nf + 1) * sizeof(uint32_t));
    if (!mi->vertices || !mi->faces) return -1;
    for (int i = 0; i < 3 * nv; i++) mi->vertices[i] = (float)v[i];
    for (int i = 0; i < 3 * nf; i++) mi->faces[i] = (uint32_t)f[i];
    mi->n_vertices = (size_t)(3 * nv);
    mi->n_faces = (size_t)(3 * nf);
  }
  return 0;
}

Khz__V1__ModelDescription *khz_codec_describe(const khzModel *m, const khzDescribeInfo *info) {
  Khz__V1__ModelDescription *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  khz__v1__model_description__init(d);
  d->model_generation = info->generation;
  d->protocol_version = KHZ__V1__PROTOCOL_VERSION__PROTOCOL_VERSION;
  d->scene = dup(info->scene);
  d->rate_hz = info->rate_hz;
  d->timestep = info->timestep;
  d->nq = (uint32_t)m->nq;
  d->nv = (uint32_t)m->nv;
  d->na = (uint32_t)info->na;
  d->mode = (Khz__V1__Mode)info->mode;
  d->contact_method = dup(khz_contactMethodName((khzContactMethod)info->contact_method));
  d->n_gravity = 3;
  d->gravity = malloc(3 * sizeof(double));
  if (d->gravity) memcpy(d->gravity, m->gravity, 3 * sizeof(double));

  /* bodies */
  d->bodies = calloc((size_t)m->nbody, sizeof *d->bodies);
  for (int b = 0; d->bodies && b < m->nbody; b++) {
    Khz__V1__BodyInfo *bi = calloc(1, sizeof *bi);
    if (!bi) continue;
    khz__v1__body_info__init(bi);
    bi->index = (uint32_t)b;
    bi->name = dup(m->body_name[b]);
    bi->parent = b == 0 ? -1 : m->body_parent[b];
    bi->mass = m->body_mass[b];
    d->bodies[d->n_bodies++] = bi;
  }

  /* joints (moving ones), and which actuator each is */
  int nj = 0;
  for (int b = 1; b < m->nbody; b++) nj += m->jnt_type[b] != KHZ_JOINT_FIXED;
  d->joints = calloc((size_t)nj + 1, sizeof *d->joints);
  d->actuators = calloc((size_t)info->na + 1, sizeof *d->actuators);
  for (int b = 1; d->joints && d->actuators && b < m->nbody; b++) {
    if (m->jnt_type[b] == KHZ_JOINT_FIXED) continue;
    Khz__V1__JointInfo *j = calloc(1, sizeof *j);
    if (!j) continue;
    khz__v1__joint_info__init(j);
    int da = m->jnt_dofadr[b];
    j->body = (uint32_t)b;
    j->name = dup(m->jnt_name[b]);
    j->type = dup(khz_jointTypeName((khzJointType)m->jnt_type[b]));
    j->q_index = (uint32_t)m->jnt_qadr[b];
    j->nq = (uint32_t)m->jnt_nq[b];
    j->qd_index = (uint32_t)da;
    j->nv = (uint32_t)m->jnt_nv[b];
    j->limited = m->jnt_limited[b] != 0;
    j->lower = m->jnt_range[2 * b];
    j->upper = m->jnt_range[2 * b + 1];
    j->velocity_limit = m->jnt_vel_limit[b];
    j->effort_limit = m->dof_effort[da];
    j->damping = m->dof_damping[da];
    j->friction = m->dof_friction[da];
    j->actuator = -1;
    for (int a = 0; a < info->na; a++) {
      if (info->act_dof[a] != da) continue;
      j->actuator = a;
      Khz__V1__Actuator *ac = calloc(1, sizeof *ac);
      if (!ac) break;
      khz__v1__actuator__init(ac);
      ac->name = dup(m->jnt_name[b]);
      ac->body = (uint32_t)b;
      ac->q_index = (uint32_t)m->jnt_qadr[b];
      ac->qd_index = (uint32_t)da;
      ac->effort_limit = m->dof_effort[da];
      ac->limited = j->limited;
      ac->lower = j->lower;
      ac->upper = j->upper;
      d->actuators[a] = ac;
      d->n_actuators = (size_t)a + 1 > d->n_actuators ? (size_t)a + 1 : d->n_actuators;
    }
    d->joints[d->n_joints++] = j;
  }

  /* the model's own actuators: what Command.ctrl drives */
  static const char *const act_type[] = {"motor", "position", "velocity", "general"};
  d->model_actuators = calloc((size_t)info->nu + 1, sizeof *d->model_actuators);
  for (int i = 0; d->model_actuators && i < info->nu; i++) {
    const khzMjcfActuator *a = &info->ctrl_act[i];
    Khz__V1__ModelActuator *o = calloc(1, sizeof *o);
    if (!o) continue;
    khz__v1__model_actuator__init(o);
    o->name = dup(a->name);
    o->type = dup(act_type[a->type <= KHZ_MJCF_GENERAL ? a->type : KHZ_MJCF_GENERAL]);
    o->joint = dup(a->joint);
    o->actuator = info->ctrl_slot[i];
    o->gear = a->gear;
    o->ctrllimited = a->ctrllimited != 0;
    o->ctrl_lower = a->ctrlrange[0], o->ctrl_upper = a->ctrlrange[1];
    o->forcelimited = a->forcelimited != 0;
    o->force_lower = a->forcerange[0], o->force_upper = a->forcerange[1];
    o->gain = a->gain;
    o->bias = malloc(3 * sizeof(double));
    if (o->bias) memcpy(o->bias, a->bias, 3 * sizeof(double)), o->n_bias = 3;
    o->kv_implicit = a->kv_implicit != 0;
    d->model_actuators[d->n_model_actuators++] = o;
  }
  d->nu = (uint32_t)d->n_model_actuators;

  /* haptic proxies */
  d->haptic_proxies = calloc((size_t)info->nhaptic + 1, sizeof *d->haptic_proxies);
  for (int p = 0; d->haptic_proxies && p < info->nhaptic; p++) {
    Khz__V1__HapticProxyInfo *h = calloc(1, sizeof *h);
    if (!h) continue;
    khz__v1__haptic_proxy_info__init(h);
    h->index = (uint32_t)p;
    h->body = (uint32_t)info->haptic[p].body;
    h->body_name = dup(m->body_name[info->haptic[p].body]);
    h->stiffness = info->haptic[p].stiffness;
    h->damping = info->haptic[p].damping;
    h->rot_stiffness = info->haptic[p].rot_stiffness;
    h->rot_damping = info->haptic[p].rot_damping;
    d->haptic_proxies[d->n_haptic_proxies++] = h;
  }

  /* hardware-in-the-loop sensors and drives */
  const khzHil *hil = info->hil;
  int nsensor = hil ? khz_hilNSensor(hil) : 0, ndrive = hil ? khz_hilNDrive(hil) : 0;
  d->hil_seed = info->hil_seed;
  d->sensors = calloc((size_t)nsensor + 1, sizeof *d->sensors);
  for (int i = 0; d->sensors && i < nsensor; i++) {
    const khzSensorSpec *sp = khz_hilSensor(hil, i);
    Khz__V1__SensorInfo *o = calloc(1, sizeof *o);
    if (!o) continue;
    khz__v1__sensor_info__init(o);
    o->index = (uint32_t)i;
    o->name = dup(sp->name);
    o->type = dup(khz_sensorTypeName(sp->type));
    o->object = dup(sp->type == KHZ_SENSOR_ENCODER || sp->type == KHZ_SENSOR_JOINT_FT
                        ? m->jnt_name[sp->object]
                        : m->body_name[sp->object]);
    o->value_index = (uint32_t)khz_hilValueAdr(hil, i);
    o->dim = (uint32_t)khz_hilValueDim(hil, i);
    o->rate_divisor = (uint32_t)sp->divisor;
    o->latency_ticks = (uint32_t)sp->latency;
    o->white = sp->noise.white;
    o->bias = sp->noise.bias;
    o->bias_walk = sp->noise.bias_walk;
    o->resolution = sp->noise.resolution;
    o->pos = malloc(3 * sizeof(double));
    if (o->pos) memcpy(o->pos, sp->pos, 3 * sizeof(double)), o->n_pos = 3;
    d->sensors[d->n_sensors++] = o;
  }
  d->drives = calloc((size_t)ndrive + 1, sizeof *d->drives);
  for (int i = 0; d->drives && i < ndrive; i++) {
    const khzDriveSpec *sp = khz_hilDriveSpec(hil, i);
    Khz__V1__DriveInfo *o = calloc(1, sizeof *o);
    if (!o) continue;
    khz__v1__drive_info__init(o);
    o->index = (uint32_t)i;
    o->joint = dup(sp->joint);
    o->mode = dup(khz_driveModeName(sp->mode));
    o->actuator = -1;
    for (int a = 0; a < info->na; a++)
      if (info->act_dof[a] == m->jnt_dofadr[sp->body]) o->actuator = a;
    o->kp = sp->kp, o->kd = sp->kd, o->max_torque = sp->max_torque;
    o->stall_torque = sp->stall_torque, o->no_load_speed = sp->no_load_speed, o->gear = sp->gear;
    o->lag = sp->lag, o->coulomb = sp->coulomb, o->viscous = sp->viscous;
    d->drives[d->n_drives++] = o;
  }

  if (info->net && khz_networkCheck(info->net, NULL, 0) > 0) {
    Khz__V1__NetworkModel *n = calloc(1, sizeof *n);
    if (n) {
      khz__v1__network_model__init(n);
      n->state_delay_ticks = (uint32_t)info->net->state_delay;
      n->state_jitter_ticks = (uint32_t)info->net->state_jitter;
      n->state_loss = info->net->state_loss;
      n->command_delay_ticks = (uint32_t)info->net->command_delay;
      n->command_jitter_ticks = (uint32_t)info->net->command_jitter;
      n->command_loss = info->net->command_loss;
      d->network = n;
    }
  }

  if (describe_geoms(d, m) != 0) {
    khz_codec_freeDescription(&d);
    return NULL;
  }

  /* contact methods this build knows */
  d->contact_methods = calloc(KHZ_CONTACT_NMETHODS, sizeof(char *));
  for (int k = 0; d->contact_methods && k < KHZ_CONTACT_NMETHODS; k++)
    d->contact_methods[d->n_contact_methods++] = dup(khz_contactMethodName((khzContactMethod)k));
  return d;
}

void khz_codec_freeDescription(Khz__V1__ModelDescription **d_p) {
  if (!d_p || !*d_p) return;
  /* every part was allocated with malloc, as protobuf-c's default allocator does */
  khz__v1__model_description__free_unpacked(*d_p, NULL);
  *d_p = NULL;
}
