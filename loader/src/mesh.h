/* mesh.h — triangle meshes from files for the loaders: STL, OBJ (and the other
 * formats assimp reads), triangulated, identical vertices joined, the node
 * transforms of the file applied. Vertices stay in the file's units and
 * frame: a mesh geom scales them by its size (the URDF <mesh scale> or the
 * scene's `scale`) when the model is compiled, so one mesh can serve several
 * scales.
 */
#ifndef KHZ_LOADER_MESH_H
#define KHZ_LOADER_MESH_H

#include <stddef.h>

#include "khz/khz.h"

typedef struct khzMeshData {
  double *vert; /* 3 per vertex */
  int *face;    /* 3 per triangle, counter-clockwise seen from outside */
  int nvert, nface;
} khzMeshData;

/* Reads the triangles of every mesh in the file into md (malloc'ed; free with
 * khz_mesh_free). Returns 0, or -1 with a message naming the file when it
 * cannot be read or holds no triangle. */
int khz_mesh_read(const char *path, khzMeshData *md, char *err, size_t errsz);

/* Releases what khz_mesh_read allocated and zeroes md. */
void khz_mesh_free(khzMeshData *md);

/* Reads a mesh file and adds it to the spec under `name` (truncated to
 * KHZ_NAME_MAX - 1). Returns the mesh index, or -1 with err set; the spec is
 * unchanged on failure. */
int khz_mesh_add(khzSpec *spec, const char *path, const char *name, char *err, size_t errsz);

#endif /* KHZ_LOADER_MESH_H */
