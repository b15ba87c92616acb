/* test_dart_oracle.cpp — khz's forward dynamics against DART's (Debian's
 * libdart-dev) on robots with full inertia tensors (issue 19, item 4).
 *
 * MuJoCo diagonalises a full inertia tensor when it compiles a model, and
 * only to about 1e-7, so it cannot check khz where a URDF's ixy / ixz / iyz
 * are not zero; DART keeps the tensor as written. Random serial robots are
 * written as URDF text (revolute, continuous and prismatic joints with turned
 * origins and random axes; links with turned inertial frames, offset
 * centres of mass and full tensors), loaded by khz's URDF loader and by
 * DART's, both welded at the root; at random states and joint forces the
 * joint accelerations agree to 1e-9 of their largest magnitude. DOFs are
 * matched by joint name.
 */
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <dart/dynamics/Joint.hpp>
#include <dart/dynamics/Skeleton.hpp>
#include <dart/utils/urdf/DartLoader.hpp>

extern "C" {
#include "khz/khz.h"
#include "khz/load.h"
}

#include "ensure.h"

namespace {

std::mt19937_64 rng(20261127);
double uniform(double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); }

std::string num(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

std::string vec3(double a, double b, double c) { return num(a) + " " + num(b) + " " + num(c); }

/* a random rotation (unit quaternion from four normals) as a matrix */
Eigen::Matrix3d random_rotation() {
  std::normal_distribution<double> n(0, 1);
  Eigen::Quaterniond q(n(rng), n(rng), n(rng), n(rng));
  q.normalize();
  return q.toRotationMatrix();
}

/* a physical inertia tensor about the centre of mass with all six entries
 * non-zero: principal moments that satisfy the triangle inequality, turned */
Eigen::Matrix3d random_inertia(double scale) {
  double a = uniform(0.2, 1.0), b = uniform(0.2, 1.0), c = uniform(std::fabs(a - b) + 0.05, a + b);
  Eigen::Matrix3d R = random_rotation();
  Eigen::Matrix3d I = R * Eigen::Vector3d(a, b, c).asDiagonal() * R.transpose();
  return scale * I;
}

struct Robot {
  std::string urdf;
  std::vector<std::string> joints;
};

Robot random_robot(int nlink, int index) {
  Robot r;
  std::string s = "<robot name=\"r" + std::to_string(index) + "\">\n";
  for (int i = 0; i <= nlink; i++) {
    double mass = uniform(0.3, 3.0);
    Eigen::Matrix3d I = random_inertia(0.02 * mass);
    s += "  <link name=\"l" + std::to_string(i) + "\"><inertial><origin xyz=\"" +
         vec3(uniform(-0.1, 0.1), uniform(-0.1, 0.1), uniform(0.0, 0.2)) + "\" rpy=\"" +
         vec3(uniform(-3, 3), uniform(-1.5, 1.5), uniform(-3, 3)) + "\"/><mass value=\"" +
         num(mass) + "\"/><inertia ixx=\"" + num(I(0, 0)) + "\" ixy=\"" + num(I(0, 1)) +
         "\" ixz=\"" + num(I(0, 2)) + "\" iyy=\"" + num(I(1, 1)) + "\" iyz=\"" + num(I(1, 2)) +
         "\" izz=\"" + num(I(2, 2)) + "\"/></inertial></link>\n";
  }
  for (int i = 1; i <= nlink; i++) {
    static const char *const types[] = {"revolute", "continuous", "prismatic"};
    const char *type = types[i % 3 == 0 ? 2 : (i % 2)];
    std::string name = "j" + std::to_string(i);
    r.joints.push_back(name);
    Eigen::Vector3d axis = random_rotation().col(0); /* unit: urdfdom and DART take it as written */
    double ax = axis[0], ay = axis[1], az = axis[2];
    s += "  <joint name=\"" + name + "\" type=\"" + type + "\"><parent link=\"l" +
         std::to_string(i - 1) + "\"/><child link=\"l" + std::to_string(i) + "\"/><origin xyz=\"" +
         vec3(uniform(-0.2, 0.2), uniform(-0.2, 0.2), uniform(0.1, 0.4)) + "\" rpy=\"" +
         vec3(uniform(-3, 3), uniform(-1.5, 1.5), uniform(-3, 3)) + "\"/><axis xyz=\"" +
         vec3(ax, ay, az) + "\"/>";
    if (std::string(type) != "continuous")
      s += "<limit lower=\"-100\" upper=\"100\" effort=\"1000\" velocity=\"1000\"/>";
    s += "</joint>\n";
  }
  s += "</robot>\n";
  r.urdf = s;
  return r;
}

void compare(const Robot &robot, int index, double *worst) {
  /* khz */
  khzSpec *spec = khz_spec_new();
  double gravity[3] = {0, 0, -9.81};
  khz_spec_setGravity(spec, gravity);
  khzUrdfOptions o;
  khz_urdf_defaultOptions(&o);
  o.floating_base = 0;
  char err[512];
  khzModel *m = NULL;
  if (khz_loadURDFString(spec, robot.urdf.c_str(), "random", NULL, &o, err, sizeof err) >= 0)
    m = khz_compile(spec, err, sizeof err);
  khz_spec_destroy(&spec);
  ENSURE_MSG(m != NULL, "robot %d: khz refuses it: %s\n", index, err);
  if (!m) return;
  khzData *d = khz_makeData(m, 0);

  /* DART */
  dart::utils::DartLoader loader;
  dart::dynamics::SkeletonPtr skel = loader.parseSkeletonString(
      robot.urdf, dart::common::Uri("file:///random.urdf"), nullptr,
      dart::utils::DartLoader::FIXED_BASE_LINK);
  ENSURE_MSG(skel != nullptr, "robot %d: DART refuses it\n", index);
  if (!skel) {
    khz_deleteData(&d);
    khz_deleteModel(&m);
    return;
  }
  skel->setGravity(Eigen::Vector3d(0, 0, -9.81));
  ENSURE_MSG((int)skel->getNumDofs() == m->nv, "robot %d: %zu DOFs in DART, %d in khz\n", index,
             skel->getNumDofs(), m->nv);

  /* the DOF of each named joint in both */
  std::vector<int> kdof, ddof;
  for (const std::string &name : robot.joints) {
    int b = khz_name2joint(m, name.c_str());
    dart::dynamics::Joint *j = skel->getJoint(name);
    ENSURE_MSG(b > 0 && j != nullptr, "robot %d: joint %s missing\n", index, name.c_str());
    if (b <= 0 || !j) continue;
    kdof.push_back(m->jnt_dofadr[b]);
    ddof.push_back((int)j->getIndexInSkeleton(0));
  }
  int n = (int)kdof.size();
  std::vector<double> q(m->nq), qd(m->nv), tau(m->nv), qdd(m->nv);
  for (int trial = 0; trial < 20 && n == m->nv; trial++) {
    /* DOF by DOF: an Eigen vector made inside libdart and freed here would
     * cross Eigen's allocation settings of two builds (ASan shows it) */
    for (int i = 0; i < n; i++) {
      double a = uniform(-2, 2), v = uniform(-3, 3), t = uniform(-5, 5);
      q[kdof[i]] = a, qd[kdof[i]] = v, tau[kdof[i]] = t;
      skel->setPosition(ddof[i], a);
      skel->setVelocity(ddof[i], v);
      skel->setForce(ddof[i], t);
    }
    khz_aba(m, d, q.data(), qd.data(), tau.data(), qdd.data());
    skel->computeForwardDynamics();
    std::vector<double> dqdd(n);
    for (int i = 0; i < n; i++) dqdd[ddof[i]] = skel->getAcceleration(ddof[i]);
    double scale = 0, err_max = 0;
    for (int i = 0; i < n; i++) scale = std::fmax(scale, std::fabs(dqdd[ddof[i]]));
    for (int i = 0; i < n; i++) err_max = std::fmax(err_max, std::fabs(qdd[kdof[i]] - dqdd[ddof[i]]));
    double rel = err_max / std::fmax(scale, 1e-12);
    *worst = std::fmax(*worst, rel);
    ENSURE_MSG(rel <= 1e-9, "robot %d trial %d: |qdd - DART| / max|qdd| = %.3g (max %.3g)\n", index,
               trial, rel, scale);
  }
  khz_deleteData(&d);
  khz_deleteModel(&m);
}

} // namespace

int main() {
  double worst = 0;
  for (int r = 0; r < 12; r++) compare(random_robot(2 + r % 6, r), r, &worst);
  std::printf("12 random robots with full inertia tensors, 20 states each: worst |qdd - DART| / "
              "max|qdd| = %.3g\n",
              worst);
  return ensure_report();
}
