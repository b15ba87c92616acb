/* scene_convert.h — a loaded khz model as the neutral benchScene of peer.h,
 * and the way back from benchScene states to khz coordinates.
 *
 * khz body frames are joint frames (URDF link frames), with the centre of
 * mass somewhere in them and a full inertia tensor; benchScene body frames are
 * the principal frames at the centre of mass. The converter finds each body's
 * principal frame once (bench_khz_principal) and uses it both ways, so that
 * khz's adapter and the driver's penetration probe read the peers' poses in
 * exactly the frame the scene was written in.
 *
 * What converts: free bodies (a floating joint to the world), hinge chains
 * hanging from a moving body (revolute or continuous joints), bodies welded
 * to the world (their geoms become static shapes) and the world's own geoms
 * (the ground plane). Anything else (a hinge to the world, a ball or slide
 * joint, a body welded to a moving body, meshes) is refused with a message
 * naming the body: peer.h has no way to say it.
 */
#ifndef KHZ_BENCH_SCENE_CONVERT_H
#define KHZ_BENCH_SCENE_CONVERT_H

#include "khz/khz.h"
#include "peer.h"

/* The principal frame of khz body b: its centre of mass in the body frame
 * (com), the rotation from the principal frame to the body frame (rot,
 * row-major, a proper rotation) and the principal moments. */
void bench_khz_principal(const khzModel *m, int b, double com[3], double rot[9],
                         double moments[3]);

/* Builds the scene from m at the state in d (q and qd: the caller may have
 * moved bodies or set velocities first; khz_kinematics is called here).
 * Friction and restitution come from m's contact options. Returns 0, or -1
 * with err set and *out zeroed. Free with bench_scene_free. */
int bench_scene_from_khz(const khzModel *m, khzData *d, const char *name, benchScene *out,
                         char *err, int errsz);
void bench_scene_free(benchScene *scene);

/* The principal frames of a scene's bodies, found once (an eigen-solve per
 * body is too slow to repeat every step of a 960-body pile). */
typedef struct benchKhzMap {
  const benchScene *scene;
  double (*com)[3]; /* per bench body, khz body frame */
  double (*rot)[9]; /* principal -> khz body frame */
} benchKhzMap;

int bench_khz_map_init(benchKhzMap *map, const benchScene *scene); /* -1: out of memory */
void bench_khz_map_free(benchKhzMap *map);

/* Sets d->q and d->qd of the khz model behind the scene from benchScene
 * states of every body (arrays of nbody entries, the principal frames as
 * get_state reports them), then runs khz_kinematics. Hinge angles are read
 * from the relative orientation of the two bodies. */
void bench_khz_set_state(const benchKhzMap *map, khzData *d, const double (*pos)[3],
                         const double (*quat)[4], const double (*vel)[3],
                         const double (*angvel)[3]);

/* The benchScene state of bench body `body` from khz's kinematics in d. */
void bench_khz_get_state(const benchKhzMap *map, const khzData *d, int body, double pos[3],
                         double quat[4], double vel[3], double angvel[3]);

/* Small rotation helpers (row-major matrices, quaternions w x y z). */
void bench_quat2mat(const double q[4], double R[9]);
void bench_mat2quat(const double R[9], double q[4]);
void bench_rotate(const double R[9], const double v[3], double out[3]);     /* R v */
void bench_rotate_t(const double R[9], const double v[3], double out[3]);   /* R^T v */

#endif
