/* fuzz_loaders.c — libFuzzer targets for the loaders (issue 20, item 7): one
 * file, one target per KHZ_FUZZ_TARGET (urdf, mjcf, scene, mesh). Each feeds
 * the input to the loader from memory (the mesh target through a temporary
 * file: assimp reads files), compiles what loads, and frees everything; a
 * crash, a leak or a sanitizer report is a finding. Built by fuzz/meson.build
 * twice: with -fsanitize=fuzzer (-Dfuzz=true, clang) and with the standalone
 * driver (standalone.c) that runs a corpus in the test suite. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "khz/khz.h"
#include "khz/load.h"
#include "mesh.h"

#define URDF 1
#define MJCF 2
#define SCENE 3
#define MESH 4

static __attribute__((unused)) void quiet(void *user, const char *msg) { (void)user, (void)msg; }

static __attribute__((unused)) void compile_and_free(khzSpec *spec) {
  char err[1024];
  khzModel *m = khz_compile(spec, err, sizeof err);
  if (m) {
    khzData *d = khz_makeData(m, 0);
    if (d) khz_step(m, d), khz_deleteData(&d);
    khz_deleteModel(&m);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[1024];
  if (size > (1u << 20)) return 0;
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
#if KHZ_FUZZ_TARGET == URDF
  khzSpec *spec = khz_spec_new();
  khzUrdfOptions opt;
  khz_urdf_defaultOptions(&opt);
  opt.warn = quiet;
  if (spec && khz_loadURDFString(spec, text, "fuzz.urdf", "/nonexistent", &opt, err, sizeof err) >= 0)
    compile_and_free(spec);
  khz_spec_destroy(&spec);
#elif KHZ_FUZZ_TARGET == MJCF
  khzSpec *spec = khz_spec_new();
  khzMjcfOptions opt;
  khz_mjcf_defaultOptions(&opt);
  opt.warn = quiet;
  if (spec && khz_loadMJCFString(spec, text, "fuzz.xml", &opt, err, sizeof err) >= 0)
    compile_and_free(spec);
  khz_spec_destroy(&spec);
#elif KHZ_FUZZ_TARGET == SCENE
  khzScene scene;
  if (khz_loadSceneString(&scene, text, "fuzz.yaml", "scenes", err, sizeof err) == 0) {
    compile_and_free(scene.spec);
    khz_deleteScene(&scene);
  }
#elif KHZ_FUZZ_TARGET == MESH
  /* assimp reads files: the input goes to a private one (STL or OBJ by its start) */
  static char path[64];
  if (!path[0]) snprintf(path, sizeof path, "/tmp/khz-fuzz-mesh-%d.%s", (int)getpid(), "stl");
  const char *ext = size > 0 && (data[0] == 'v' || data[0] == '#' || data[0] == 'o') ? "obj" : "stl";
  snprintf(path + strlen(path) - 3, 4, "%s", ext);
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(data, 1, size, f);
    fclose(f);
    khzMeshData md;
    memset(&md, 0, sizeof md);
    if (khz_mesh_read(path, &md, err, sizeof err) == 0) khz_mesh_free(&md);
    unlink(path);
  }
#else
#error "KHZ_FUZZ_TARGET: URDF, MJCF, SCENE or MESH"
#endif
  free(text);
  return 0;
}
