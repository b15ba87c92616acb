/* mjcf_export.h — writes a khzModel as MJCF and loads it into MuJoCo, so the
 * oracle tests and the benchmarks run MuJoCo on exactly the same bodies,
 * joints and inertias (no geoms: dynamics only). Test/benchmark code only. */
#ifndef KHZ_MJCF_EXPORT_H
#define KHZ_MJCF_EXPORT_H

#include <mujoco/mujoco.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "khz/khz.h"
#include "spatial.h"

/* principal axes of a symmetric 3x3 inertia by cyclic Jacobi rotations run to
 * machine precision: I = V diag(ev) V^T, V a rotation (columns = axes). Writing
 * MuJoCo the principal form keeps its own (looser) eigen-solver out of the
 * comparison. */
static inline void mjcf_principal(const double I_in[9], double ev[3], double quat[4]) {
  double V[9];
  khz_eig3(I_in, ev, V);
  double det = V[0] * (V[4] * V[8] - V[5] * V[7]) - V[1] * (V[3] * V[8] - V[5] * V[6]) +
               V[2] * (V[3] * V[7] - V[4] * V[6]);
  if (det < 0) V[2] = -V[2], V[5] = -V[5], V[8] = -V[8];
  khzu_mat2quat(quat, V);
}

static inline void write_body(FILE *f, const khzModel *m, int i, int depth) {
  const double *p = m->body_pos + 3 * i, *qt = m->body_quat + 4 * i;
  fprintf(f, "%*s<body name=\"%s\" pos=\"%.17g %.17g %.17g\" quat=\"%.17g %.17g %.17g %.17g\">\n",
          depth, "", m->body_name[i], p[0], p[1], p[2], qt[0], qt[1], qt[2], qt[3]);
  const double *I = m->body_inertia + 9 * i, *c = m->body_com + 3 * i;
  double ev[3], iq[4];
  mjcf_principal(I, ev, iq);
  fprintf(f,
          "%*s <inertial pos=\"%.17g %.17g %.17g\" quat=\"%.17g %.17g %.17g %.17g\" mass=\"%.17g\" "
          "diaginertia=\"%.17g %.17g %.17g\"/>\n",
          depth, "", c[0], c[1], c[2], iq[0], iq[1], iq[2], iq[3], m->body_mass[i], ev[0], ev[1], ev[2]);
  const double *a = m->jnt_axis + 3 * i;
  double arm = m->jnt_nv[i] ? m->dof_armature[m->jnt_dofadr[i]] : 0;
  double damp = m->jnt_nv[i] ? m->dof_damping[m->jnt_dofadr[i]] : 0;
  switch (m->jnt_type[i]) {
    case KHZ_JOINT_REVOLUTE:
    case KHZ_JOINT_CONTINUOUS:
      fprintf(f, "%*s <joint name=\"%s\" type=\"hinge\" axis=\"%.17g %.17g %.17g\" armature=\"%.17g\" damping=\"%.17g\"/>\n",
              depth, "", m->jnt_name[i], a[0], a[1], a[2], arm, damp);
      break;
    case KHZ_JOINT_PRISMATIC:
      fprintf(f, "%*s <joint name=\"%s\" type=\"slide\" axis=\"%.17g %.17g %.17g\" armature=\"%.17g\" damping=\"%.17g\"/>\n",
              depth, "", m->jnt_name[i], a[0], a[1], a[2], arm, damp);
      break;
    case KHZ_JOINT_SPHERICAL:
      fprintf(f, "%*s <joint name=\"%s\" type=\"ball\" armature=\"%.17g\" damping=\"%.17g\"/>\n", depth, "",
              m->jnt_name[i], arm, damp);
      break;
    case KHZ_JOINT_FLOATING:
      fprintf(f, "%*s <joint name=\"%s\" type=\"free\" armature=\"%.17g\" damping=\"%.17g\"/>\n", depth, "",
              m->jnt_name[i], arm, damp);
      break;
    default:
      break;
  }
  for (int k = i + 1; k < m->nbody; k++)
    if (m->body_parent[k] == i) write_body(f, m, k, depth + 1);
  fprintf(f, "%*s</body>\n", depth, "");
}

static inline mjModel *mujoco_from_khz(const khzModel *m) {
  char path[] = "/tmp/khz-oracle-XXXXXX.xml";
  int fd = mkstemps(path, 4);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "w");
  fprintf(f, "<mujoco>\n <compiler angle=\"radian\" inertiafromgeom=\"false\" balanceinertia=\"false\"/>\n");
  fprintf(f, " <option gravity=\"%.17g %.17g %.17g\" timestep=\"%.17g\" integrator=\"RK4\"/>\n",
          m->gravity[0], m->gravity[1], m->gravity[2], m->timestep);
  fprintf(f, " <worldbody>\n");
  for (int k = 1; k < m->nbody; k++)
    if (m->body_parent[k] == 0) write_body(f, m, k, 2);
  fprintf(f, " </worldbody>\n</mujoco>\n");
  fclose(f);
  char err[1000] = "";
  mjModel *mm = mj_loadXML(path, NULL, err, sizeof err);
  if (!mm) fprintf(stderr, "mujoco: %s\n", err);
  unlink(path);
  return mm;
}

#endif
