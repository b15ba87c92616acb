/* test_server_hil.c — the scene's hardware-in-the-loop sensors and drives
 * through the server (docs/hil.md): Describe lists them; every state carries
 * their readings, the tick each was sampled at and their fault codes; an
 * encoder without noise reads the state's own q rounded to its count; a
 * sensor with latency shows an older sample; a force-torque sensor under a
 * resting box reads its weight; the same seed gives the same readings in
 * lockstep; a scene with a bad sensor is refused with a message naming it. */
#include <math.h>
#include <string.h>

#include "ensure.h"
#include "harness.h"

static int sensor_index(const Khz__V1__ModelDescription *md, const char *name) {
  for (size_t i = 0; i < md->n_sensors; i++)
    if (!strcmp(md->sensors[i]->name, name)) return (int)i;
  return -1;
}

/* the readings of the state after n lockstep ticks answered with zero torque */
static int lockstep_run(double *out, size_t cap, size_t *n_out) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  snprintf(cfg.scene, sizeof cfg.scene, "scenes/hil_arm.yaml");
  cfg.mode = KHZ_MODE_LOCKSTEP;
  if (harness_start(&h, &cfg, NULL)) return -1;
  khzClient *c = harness_client(&h);
  int rc = -1;
  if (c) {
    const Khz__V1__ModelDescription *md = khz_client_describe(c, 5000);
    double zero[16] = {0};
    const Khz__V1__State *st = khz_client_latestState(c, 2000);
    for (int k = 0; st && k < 50; k++) {
      khz_client_sendTorques(c, st, zero, md->na);
      uint64_t want = st->seq + 1;
      while ((st = khz_client_nextState(c, 2000)) && st->seq < want) {
      }
    }
    if (st && st->n_sensor_values <= cap) {
      memcpy(out, st->sensor_values, st->n_sensor_values * sizeof(double));
      *n_out = st->n_sensor_values;
      rc = 0;
    }
    khz_client_destroy(&c);
  }
  harness_stop(&h);
  return rc;
}

int main(void) {
  khzServerConfig cfg;
  harness h;
  harness_config(&cfg);
  snprintf(cfg.scene, sizeof cfg.scene, "scenes/hil_arm.yaml");
  ENSURE(harness_start(&h, &cfg, NULL) == 0);
  khzClient *c = harness_client(&h);
  ENSURE(c != NULL);
  if (c) {
    const Khz__V1__ModelDescription *md = khz_client_describe(c, 5000);
    ENSURE(md && md->n_sensors == 11 && md->n_drives == 7 && md->hil_seed == 7);
    int enc = sensor_index(md, "enc2"), gyro = sensor_index(md, "wrist_gyro"),
        ft = sensor_index(md, "box1_ft"), touch = sensor_index(md, "box1_touch");
    ENSURE(enc >= 0 && gyro >= 0 && ft >= 0 && touch >= 0);
    ENSURE(md->n_drives == 7 && !strcmp(md->drives[0]->joint, "arm/joint1") &&
           md->drives[0]->actuator == 0 && md->drives[0]->lag == 0.002);
    if (enc >= 0 && gyro >= 0 && ft >= 0 && touch >= 0) {
      ENSURE(!strcmp(md->sensors[enc]->type, "encoder") && md->sensors[enc]->dim == 2);
      ENSURE(!strcmp(md->sensors[ft]->object, "box1") && md->sensors[ft]->dim == 6);
      /* half a second on: box1 rests on the table */
      const Khz__V1__State *st = khz_client_latestState(c, 2000);
      double t_end = st ? st->sim_time + 0.5 : 0;
      while (st && st->sim_time < t_end) st = khz_client_nextState(c, 2000);
      ENSURE(st != NULL);
      if (st) {
        ENSURE(st->n_sensor_values == 27 && st->n_sensor_sampled_tick == 11 &&
               st->n_sensor_faults == 11 && st->n_drive_faults == 7);
        /* enc2: no noise, every tick, no latency: q rounded to 2 pi / 16384 */
        uint32_t vi = md->sensors[enc]->value_index;
        double res = 2 * M_PI / 16384, q = st->q[1];
        ENSURE_MSG(fabs(st->sensor_values[vi] - res * floor(q / res + 0.5)) < 1e-12,
                   "enc2 reads %.12g, q %.12g", st->sensor_values[vi], q);
        uint64_t tick = st->seq - st->reset_seq;
        ENSURE(st->sensor_sampled_tick[enc] == tick);
        ENSURE(st->sensor_sampled_tick[gyro] == tick - 1);            /* latency 1 */
        ENSURE(st->sensor_sampled_tick[ft] == 4 * (tick / 4));        /* every 4th tick */
        double w = 0.2 * 9.81; /* box1: 0.2 kg */
        double fz = st->sensor_values[md->sensors[ft]->value_index + 2];
        double fn = st->sensor_values[md->sensors[touch]->value_index];
        ENSURE_MSG(fabs(fz - w) < 0.3 && fabs(fn - w) < 0.3, "box1 force z %g, touch %g, weight %g",
                   fz, fn, w);
        for (int i = 0; i < 11; i++) ENSURE(st->sensor_faults[i] == 0);
      }
    }
    khz_client_destroy(&c);
  }
  harness_stop(&h);

  /* lockstep with the same seed: the same readings */
  double a[64], b[64];
  size_t na = 0, nb = 0;
  ENSURE(lockstep_run(a, 64, &na) == 0 && lockstep_run(b, 64, &nb) == 0);
  ENSURE(na == 27 && nb == na && memcmp(a, b, na * sizeof(double)) == 0);

  /* a bad sensor: refused, named */
  harness_config(&cfg);
  snprintf(cfg.scene, sizeof cfg.scene, "tests/server/data/hil_bad.yaml");
  char err[1024] = "";
  khzServer *bad = khz_server_new(&cfg, NULL, err, sizeof err);
  ENSURE(bad == NULL);
  ENSURE_MSG(strstr(err, "hil.sensors[0].joint") && strstr(err, "nope"), "%s", err);
  if (bad) khz_server_destroy(&bad);
  return ensure_report();
}
