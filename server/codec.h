/* codec.h — translation between the loop's structures and the khz.v1 wire
 * messages: the State of every tick (packed into a reusable buffer, no
 * per-tick allocation once the buffer has grown) and the ModelDescription.
 */
#ifndef KHZ_SERVER_CODEC_H
#define KHZ_SERVER_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "khz/khz.h"
#include "khz/load.h"
#include "khz/loop.h"
#include "khz_msgs/v1/control.pb-c.h"
#include "khz_msgs/v1/state.pb-c.h"

typedef struct khzStateCodec {
  Khz__V1__State msg;
  Khz__V1__TickStats stats;
  double *pose;                       /* 7 per body */
  Khz__V1__Contact contact[KHZ_LOOP_MAX_CONTACTS];
  Khz__V1__Contact *contact_ptr[KHZ_LOOP_MAX_CONTACTS];
  double contact_data[KHZ_LOOP_MAX_CONTACTS][9];
  uint32_t contact_geoms[KHZ_LOOP_MAX_CONTACTS][2];
  uint32_t warnings[KHZ_NWARNING];
  uint64_t sensor_tick[KHZ_SCENE_MAX_SENSOR];
  uint8_t *buf;
  size_t cap;
} khzStateCodec;

int khz_codec_init(khzStateCodec *c, int nbody);
void khz_codec_free(khzStateCodec *c);

/* Packs one state; *out points into the codec's buffer until the next call.
 * Returns 0 / -1 (out of memory). */
int khz_codec_packState(khzStateCodec *c, const khzLoopState *s, uint32_t generation,
                        uint64_t rejected, uint8_t **out, size_t *len);

/* What a server knows beyond the model for a description. */
typedef struct khzDescribeInfo {
  uint32_t generation;
  const char *scene;
  double rate_hz;
  double timestep;      /* the loop's step size (khz_loop_rate) */
  int mode;
  int contact_method;
  int na;
  const int *act_dof;
  int nhaptic;
  const khzHapticProxy *haptic;
  const khzHil *hil;    /* sensors and drives; NULL = none */
  const khzNetworkModel *net; /* NULL = none */
  uint64_t hil_seed;
  int nu;               /* the model's own actuators (Command.ctrl) */
  const khzMjcfActuator *ctrl_act;
  const int *ctrl_slot; /* each one's index into Command arrays (-1: none) */
} khzDescribeInfo;

/* The most mesh vertices and triangles (all meshes together) a description
 * carries (control.proto MeshInfo): about 6 MB at most. */
#define KHZ_DESCRIBE_MESH_VERTICES 200000
#define KHZ_DESCRIBE_MESH_FACES 400000

/* Builds a ModelDescription on the heap (geoms and meshes included); free with khz_codec_freeDescription. */
Khz__V1__ModelDescription *khz_codec_describe(const khzModel *m, const khzDescribeInfo *info);
void khz_codec_freeDescription(Khz__V1__ModelDescription **d_p);

#endif
