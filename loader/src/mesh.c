/* mesh.c — triangle meshes from files through assimp (STL, OBJ, ...): every
 * mesh of the file, triangulated (aiProcess_Triangulate), identical vertices
 * joined (aiProcess_JoinIdenticalVertices, after aiProcess_DropNormals: an
 * STL's per-facet normals would keep its corners apart), placed by its node
 * transforms, concatenated into one vertex and one triangle array for
 * khz_spec_addMesh. Points and lines in the file are ignored. Validation of the geometry
 * (degenerate triangles, closedness) happens when the model is compiled
 * (rt/src/collision/geometry.c), where the use of the mesh is known.
 */
#include "mesh.h"

#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load_util.h"

typedef struct {
  khzMeshData *md;
  int capv, capf;
} mesh_acc;

static int grow(void **p, int *cap, int need, size_t item) {
  if (need <= *cap) return 0;
  int cap2 = *cap ? *cap : 256;
  while (cap2 < need) cap2 *= 2;
  void *q = realloc(*p, (size_t)cap2 * item);
  if (!q) return -1;
  *p = q;
  *cap = cap2;
  return 0;
}

/* appends the triangles of the meshes of node (and its children) under transform T */
static int add_node(mesh_acc *a, const struct aiScene *sc, const struct aiNode *node,
                    struct aiMatrix4x4 T) {
  /* the node's transform in the file: parent's first (M = T * local) */
  struct aiMatrix4x4 M = T;
  aiMultiplyMatrix4(&M, &node->mTransformation);
  for (unsigned i = 0; i < node->mNumMeshes; i++) {
    const struct aiMesh *mesh = sc->mMeshes[node->mMeshes[i]];
    khzMeshData *md = a->md;
    int base = md->nvert;
    if (grow((void **)&md->vert, &a->capv, 3 * (md->nvert + (int)mesh->mNumVertices),
             sizeof(double)))
      return -1;
    for (unsigned v = 0; v < mesh->mNumVertices; v++) {
      struct aiVector3D p = mesh->mVertices[v];
      aiTransformVecByMatrix4(&p, &M);
      md->vert[3 * md->nvert] = p.x;
      md->vert[3 * md->nvert + 1] = p.y;
      md->vert[3 * md->nvert + 2] = p.z;
      md->nvert++;
    }
    for (unsigned f = 0; f < mesh->mNumFaces; f++) {
      const struct aiFace *face = &mesh->mFaces[f];
      if (face->mNumIndices != 3) continue;
      if (grow((void **)&md->face, &a->capf, 3 * (md->nface + 1), sizeof(int))) return -1;
      for (int k = 0; k < 3; k++) md->face[3 * md->nface + k] = base + (int)face->mIndices[k];
      md->nface++;
    }
  }
  for (unsigned c = 0; c < node->mNumChildren; c++)
    if (add_node(a, sc, node->mChildren[c], M) < 0) return -1;
  return 0;
}

void khz_mesh_free(khzMeshData *md) {
  free(md->vert);
  free(md->face);
  memset(md, 0, sizeof *md);
}

int khz_mesh_read(const char *path, khzMeshData *md, char *err, size_t errsz) {
  memset(md, 0, sizeof *md);
  const struct aiScene *sc = aiImportFile(
      path, aiProcess_Triangulate | aiProcess_DropNormals | aiProcess_JoinIdenticalVertices);
  if (!sc || !sc->mRootNode) {
    const char *why = aiGetErrorString();
    return khz_loadError(err, errsz, "%s: cannot read the mesh: %s", path,
                          why && why[0] ? why : "unknown format");
  }
  mesh_acc a = {md, 0, 0};
  struct aiMatrix4x4 I;
  aiIdentityMatrix4(&I);
  int rc = add_node(&a, sc, sc->mRootNode, I);
  aiReleaseImport(sc);
  if (rc < 0) {
    khz_mesh_free(md);
    return khz_loadError(err, errsz, "%s: out of memory", path);
  }
  if (md->nface == 0) {
    khz_mesh_free(md);
    return khz_loadError(err, errsz, "%s: the mesh holds no triangle", path);
  }
  return 0;
}

int khz_mesh_add(khzSpec *spec, const char *path, const char *name, char *err, size_t errsz) {
  khzMeshData md;
  if (khz_mesh_read(path, &md, err, errsz) < 0) return -1;
  char nm[KHZ_NAME_MAX];
  snprintf(nm, sizeof nm, "%s", name ? name : path);
  int id = khz_spec_addMesh(spec, nm, md.vert, md.nvert, md.face, md.nface);
  khz_mesh_free(&md);
  if (id < 0) return khz_loadError(err, errsz, "%s: out of memory", path);
  return id;
}
