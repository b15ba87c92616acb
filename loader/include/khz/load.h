/* load.h — model loaders: URDF robots (libxml2) and khz scene files (libyaml).
 *
 * Loaders fill a khzSpec (rt/include/khz/khz.h); khz_compile() validates it and
 * builds the immutable model. Every loader is all-or-nothing: on error the spec
 * is left exactly as it was, the function returns -1 and err holds one message
 * of the form "FILE: ELEMENT: PROBLEM" (FILE:LINE where the parser knows it).
 * Warnings (a missing mesh, an ignored element) go to the warning callback, or
 * to stderr when none is set.
 */
#ifndef KHZ_LOAD_H
#define KHZ_LOAD_H

#include "khz/khz.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*khzWarnFn)(void *user, const char *message);

typedef struct khzUrdfOptions {
  const char *package_path; /* ':'-separated directories searched for package://NAME/...
                               (each entry may hold NAME/ or be NAME itself); NULL = the
                               environment variable KHZ_PACKAGE_PATH, then
                               ROS_PACKAGE_PATH, then the URDF's directory and its parents */
  const char *name_prefix;  /* prepended to every body and joint name ("" = none) */
  double base_pos[3];       /* pose of the root link in the world */
  double base_quat[4];
  int floating_base;        /* 1: the root link gets a floating joint, 0: welded */
  khzWarnFn warn;
  void *warn_user;
} khzUrdfOptions;

/* Defaults: no prefix, identity base pose, fixed base, warnings to stderr. */
void khz_urdf_defaultOptions(khzUrdfOptions *opt);

/* Adds the robot in the URDF file to spec under the world body. Returns the spec
 * index of the root body, or -1 with err set (spec unchanged). */
int khz_load_urdf(khzSpec *spec, const char *path, const khzUrdfOptions *opt, char *err,
                  size_t errsz);

/* The same from a string; name is used in messages, basedir resolves relative
 * mesh paths (may be NULL). */
int khz_load_urdf_string(khzSpec *spec, const char *xml, const char *name,
                         const char *basedir, const khzUrdfOptions *opt, char *err,
                         size_t errsz);


/* A validation experiment a scene may carry (`experiment:`; see
 * docs/scene-format.md and tools/experiments.c): what it does, the body it
 * acts on, and its named numeric parameters. kind[0] == 0: none. */
#define KHZ_EXPERIMENT_PARAMS 16
typedef struct khzExperiment {
  char kind[32];
  char body[KHZ_NAME_MAX];
  int nparam;
  char param_name[KHZ_EXPERIMENT_PARAMS][32];
  double param[KHZ_EXPERIMENT_PARAMS];
} khzExperiment;

/* What a scene file describes beyond the model itself. */
typedef struct khzScene {
  khzSpec *spec;       /* owned; compile with khz_compile() */
  double rate_hz;      /* loop rate (timestep = 1 / rate_hz) */
  khzIntegrator integrator;
  khzContactOptions contact; /* also set on the spec (khz_spec_setContact) */
  int has_ground;
  double ground_height;
  char name[KHZ_NAME_MAX];
  khzExperiment experiment;
} khzScene;

/* Loads a scene file. On error returns -1 with err set and *scene untouched. */
int khz_load_scene(khzScene *scene, const char *path, char *err, size_t errsz);

/* The same from a string; basedir resolves relative paths (URDF files). */
int khz_load_scene_string(khzScene *scene, const char *yaml, const char *name,
                          const char *basedir, char *err, size_t errsz);

/* The embedded default scene (a 7-DoF arm on a table next to loose objects). */
int khz_load_default_scene(khzScene *scene, char *err, size_t errsz);

/* Frees what the scene owns. */
void khz_scene_free(khzScene *scene);

/* Loads MODEL by extension: .urdf (fixed base), .yaml/.yml (scene), or the word
 * "default" for the embedded scene. Returns the compiled model or NULL with err. */
khzModel *khz_load_model(const char *path, khzScene *scene_out, char *err, size_t errsz);

#ifdef __cplusplus
}
#endif
#endif /* KHZ_LOAD_H */
