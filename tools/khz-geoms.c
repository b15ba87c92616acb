/* khz-geoms — the geometry of a model as JSON, for viewers (`khz view`,
 * `khz record --mcap`): the wire's ModelDescription names bodies and joints
 * but carries no shapes, so a viewer loads the same scene file the server
 * loaded and draws what this prints.
 *
 *   khz-geoms MODEL      MODEL: a .yaml scene, .urdf, .xml (MJCF) or "default"
 *
 * Output (one JSON object on stdout):
 *   {"scene": NAME, "bodies": [NAME...],
 *    "geoms": [{"body": I, "type": "plane|sphere|box|capsule|cylinder|mesh",
 *               "size": [3], "pos": [3], "quat": [w,x,y,z], "rgba": [4],
 *               "visual": 0|1, "mesh": MESH INDEX or -1}...],
 *    "meshes": [{"name": NAME, "vertices": [x,y,z,...], "faces": [i,j,k,...]}...]}
 * Sizes follow khzGeomType (half-extents, radius, half-length); geom poses are
 * in their body's frame, mesh vertices in the geom's frame, unscaled (a mesh
 * geom's size is its scale per axis). */
#include <stdio.h>
#include <string.h>

#include "khz/khz.h"
#include "khz/load.h"

static void put_string(const char *s) {
  putchar('"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c < 0x20) printf("\\u%04x", c);
    else putchar(c);
  }
  putchar('"');
}

static void put_doubles(const double *v, int n) {
  putchar('[');
  for (int i = 0; i < n; i++) printf(i ? ",%.9g" : "%.9g", v[i]);
  putchar(']');
}

int main(int argc, char **argv) {
  static const char *const types[KHZ_GEOM_NTYPES] = {"plane",    "sphere",   "box",
                                                     "capsule",  "cylinder", "mesh"};
  if (argc != 2 || argv[1][0] == '-') {
    fprintf(stderr, "usage: khz-geoms MODEL   (a .yaml scene, .urdf, .xml (MJCF) or 'default'):"
                    " the model's bodies, geoms and meshes as JSON\n");
    return 2;
  }
  char err[1024];
  khzScene scene;
  khzModel *m = khz_loadModel(argv[1], &scene, err, sizeof err);
  if (!m) {
    fprintf(stderr, "khz-geoms: %s\n", err);
    return 1;
  }
  printf("{\"scene\":");
  put_string(scene.name);
  printf(",\"bodies\":[");
  for (int b = 0; b < m->nbody; b++) {
    if (b) putchar(',');
    put_string(m->body_name[b]);
  }
  printf("],\"geoms\":[");
  for (int g = 0; g < m->ngeom; g++) {
    int t = m->geom_type[g];
    printf("%s{\"body\":%d,\"type\":\"%s\",\"size\":", g ? "," : "", m->geom_body[g],
           t >= 0 && t < KHZ_GEOM_NTYPES ? types[t] : "unknown");
    put_doubles(m->geom_size + 3 * g, 3);
    printf(",\"pos\":");
    put_doubles(m->geom_pos + 3 * g, 3);
    printf(",\"quat\":");
    put_doubles(m->geom_quat + 4 * g, 4);
    printf(",\"rgba\":");
    put_doubles(m->geom_rgba + 4 * g, 4);
    printf(",\"visual\":%d,\"mesh\":%d}", m->geom_visual[g] ? 1 : 0, m->geom_meshid[g]);
  }
  printf("],\"meshes\":[");
  for (int k = 0; k < m->nmesh; k++) {
    printf("%s{\"name\":", k ? "," : "");
    put_string(m->mesh_name[k]);
    printf(",\"vertices\":");
    put_doubles(m->mesh_vert + 3 * m->mesh_vertadr[k], 3 * m->mesh_vertnum[k]);
    printf(",\"faces\":[");
    const int *f = m->mesh_face + 3 * m->mesh_faceadr[k];
    for (int i = 0; i < 3 * m->mesh_facenum[k]; i++) printf(i ? ",%d" : "%d", f[i]);
    printf("]}");
  }
  printf("]}\n");
  khz_deleteModel(&m);
  khz_deleteScene(&scene);
  return ferror(stdout) ? 1 : 0;
}
