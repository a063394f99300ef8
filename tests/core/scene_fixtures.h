#pragma once
// Robots, random worlds and random states shared by the scene tests.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/test_util.h"
#include "proximity/core/robot/robot_model.h"
#include "proximity/core/scene/scene.h"

namespace proximity::core {

struct RobotCase {
  std::string name;
  std::string urdf, srdf;
  RobotLoadOptions options;
};

inline std::vector<RobotCase> Robots() {
  std::vector<RobotCase> out;
  const std::string shared = testing::SharedDataDir();
  if (!shared.empty()) {
    RobotCase panda{"panda", shared + "/robots/panda/moveit_resources_panda_description/urdf/panda.urdf",
                    shared + "/robots/panda/moveit_resources_panda_moveit_config/config/panda.srdf", {}};
    panda.options.package_dirs["moveit_resources_panda_description"] =
        shared + "/robots/panda/moveit_resources_panda_description";
    out.push_back(panda);
    RobotCase ur5{"ur5", shared + "/robots/ur5/ur_description/urdf/ur5_robot.urdf",
                  shared + "/robots/ur5/ur5_moveit_config/config/ur5.srdf", {}};
    ur5.options.package_dirs["ur_description"] = shared + "/robots/ur5/ur_description";
    out.push_back(ur5);
  }
  const std::string dart = testing::DartUrdfDir();
  if (!dart.empty()) out.push_back({"kr5", dart + "/KR5/KR5 sixx R650.urdf", "", {}});
  for (auto& r : out) r.options.ros_package_path = "";
  return out;
}

// The robots of an oracle-heavy robot test: every one in the optimized build; under a sanitizer, whose
// job there is memory faults on the same code paths, the first alone (building a robot's maps and
// running a brute-force oracle over it take about a minute a robot there).
template <class Robot>
std::vector<Robot> FirstUnderSanitizer(std::vector<Robot> robots) {
  if (testing::kSanitizedSlowdown > 1 && robots.size() > 1) robots.resize(1);
  return robots;
}

inline std::shared_ptr<const RobotModel> LoadRobot(const RobotCase& c) {
  auto r = RobotModel::FromUrdfFile(c.urdf, c.srdf, c.options);
  EXPECT_TRUE(r.ok()) << c.name << ": " << r.error().message;
  return r.ok() ? r.value() : nullptr;
}

// A seeded workcell of boxes, cylinders and spheres within the robot's reach, at least 0.3 m from
// the base axis (an obstacle through the fixed base would make every state collide).
inline std::vector<WorldObject> RandomWorld(std::mt19937_64& rng, double reach, int count) {
  std::uniform_real_distribution<double> pos(-reach, reach), size(0.04, 0.25);
  std::vector<WorldObject> objects;
  for (int i = 0; i < count; ++i) {
    WorldObject o;
    o.id = "obj" + std::to_string(i);
    ObjectPart part;
    const double a = size(rng), b = size(rng), c = size(rng);
    switch (i % 3) {
      case 0:
        part.geometry.shape = Box{0.5 * Vec3(a, b, c)};
        break;
      case 1:
        part.geometry.shape = Cylinder{0.5 * a, 0.5 * b};
        break;
      default:
        part.geometry.shape = Sphere{Vec3::Zero(), 0.5 * a};
        break;
    }
    do {
      part.X_WG = testing::RandomPose(rng, Vec3(-reach, -reach, 0.0), Vec3(reach, reach, reach));
    } while (part.X_WG.p.head<2>().norm() < 0.3 + std::max({a, b, c}));
    o.parts.push_back(part);
    objects.push_back(o);
  }
  return objects;
}

// A robot in a seeded random workcell of `count` objects within 0.8 m.
inline SceneDescription RandomWorldScene(std::shared_ptr<const RobotModel> robot, std::mt19937_64& rng, int count) {
  SceneDescription d;
  d.robot = std::move(robot);
  d.objects = RandomWorld(rng, 0.8, count);
  return d;
}

// The robot of `rc`, loaded afresh, in such a workcell.
inline SceneDescription RandomWorldScene(const RobotCase& rc, std::mt19937_64& rng, int count) {
  return RandomWorldScene(LoadRobot(rc), rng, count);
}

// A 30 cm bar carried by the last link: checked against the world and the other links, never
// against its carrier, and certified along motions (its motion bound comes from its own reach).
inline SceneDescription WithTool(SceneDescription d, const std::string& id = "tool") {
  const RobotModel& robot = *d.robot;
  const std::string tip = robot.link(robot.num_links() - 1).name;
  AttachedObject tool;
  tool.id = id;
  tool.link = tip;
  AttachedPart bar;
  bar.geometry.shape = Box{Vec3(0.02, 0.02, 0.15)};
  bar.X_LG.p = Vec3(0.0, 0.0, 0.2);
  tool.parts.push_back(bar);
  d.attached.push_back(tool);
  return d;
}

// The Panda the MotionBenchMaker problems were made with (../shared/data/robots/mbm_panda).
inline std::shared_ptr<const RobotModel> LoadMbmPanda() {
  const std::string dir = testing::SharedDataDir() + "/robots/mbm_panda";
  RobotLoadOptions options;
  options.package_dirs["meshes"] = dir + "/meshes";
  options.ros_package_path = "";
  auto robot = RobotModel::FromUrdfFile(dir + "/panda.urdf", dir + "/panda.srdf", options);
  EXPECT_TRUE(robot.ok()) << robot.error().message;
  return robot.ok() ? robot.value() : nullptr;
}

// Points on the surface of a box (half extents h, pose X_WB) about `spacing` apart, as a depth camera
// would see every side.
inline std::vector<Vec3> BoxSurfacePoints(std::mt19937_64& rng, const Vec3& h, const RigidTransform& X_WB, double spacing) {
  std::vector<Vec3> out;
  const double area = 8.0 * (h.x() * h.y() + h.y() * h.z() + h.x() * h.z());
  const int n = std::max(8, static_cast<int>(area / (spacing * spacing)));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::uniform_int_distribution<int> face(0, 5);
  for (int i = 0; i < n; ++i) {
    const int f = face(rng);
    Vec3 p(u(rng) * h.x(), u(rng) * h.y(), u(rng) * h.z());
    p[f / 2] = (f % 2 ? -1.0 : 1.0) * h[f / 2];
    out.push_back(X_WB * p);
  }
  return out;
}

// Points on the surfaces of five seeded boxes around a robot's base (a table and shelves as a camera
// sees them), `spacing` apart on average.
inline std::vector<Vec3> SensedBoxPoints(std::mt19937_64& rng, double spacing) {
  std::vector<Vec3> out;
  for (int b = 0; b < 5; ++b) {
    const Vec3 h(std::uniform_real_distribution<double>(0.05, 0.25)(rng), std::uniform_real_distribution<double>(0.05, 0.25)(rng),
                 std::uniform_real_distribution<double>(0.02, 0.15)(rng));
    RigidTransform X;
    do {
      X = testing::RandomPose(rng, Vec3(-0.7, -0.7, 0.0), Vec3(0.7, 0.7, 0.8));
    } while (X.p.head<2>().norm() < 0.3 + h.maxCoeff());
    const std::vector<Vec3> s = BoxSurfacePoints(rng, h, X, spacing);
    out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

inline std::vector<double> RandomState(std::mt19937_64& rng, const RobotModel& robot) {
  std::vector<double> q(robot.num_positions());
  for (int i = 0; i < robot.num_positions(); ++i) {
    double lo = robot.lower_limits()[i], hi = robot.upper_limits()[i];
    if (!std::isfinite(lo) || !std::isfinite(hi)) lo = -M_PI, hi = M_PI;
    q[i] = std::uniform_real_distribution<double>(lo, hi)(rng);
  }
  return q;
}

// The dense reference for LINK: states at most 1e-3 (rad or m) apart in every joint, each checked
// exactly (with `clearance`, as CheckState takes it). Returns the first colliding t, or -1.
inline double DenseFirstCollision(const Scene& scene, const std::vector<double>& q0, const std::vector<double>& q1,
                                  SceneCache* cache, double clearance = 0.0) {
  double span = 0.0;
  for (size_t i = 0; i < q0.size(); ++i) span = std::max(span, std::abs(q1[i] - q0[i]));
  const int n = std::max(1, static_cast<int>(std::ceil(span / 1e-3)));
  std::vector<double> q(q0.size());
  for (int k = 0; k <= n; ++k) {
    const double t = static_cast<double>(k) / n;
    for (size_t i = 0; i < q.size(); ++i) q[i] = q0[i] + t * (q1[i] - q0[i]);
    if (!testing::ValueOrFail(scene.CheckState(q, cache, clearance)).free) return t;
  }
  return -1.0;
}

inline std::vector<double> Along(const std::vector<double>& q0, const std::vector<double>& q1, double t) {
  std::vector<double> q(q0.size());
  for (size_t i = 0; i < q.size(); ++i) q[i] = q0[i] + t * (q1[i] - q0[i]);
  return q;
}

// Edges like a planner's: from a free state, a random direction, 0.05 to 1 rad long.
inline std::pair<std::vector<double>, std::vector<double>> RandomEdge(std::mt19937_64& rng, const Scene& scene,
                                                               SceneCache* cache) {
  const RobotModel& robot = scene.robot();
  std::vector<double> q0;
  for (int attempt = 0;; ++attempt) {
    q0 = RandomState(rng, robot);
    if (testing::ValueOrFail(scene.CheckState(q0, cache)).free) break;
    if (attempt == 10000) {
      ADD_FAILURE() << "no free state in 10,000 random samples";
      break;
    }
  }
  std::normal_distribution<double> g;
  std::vector<double> dir(q0.size());
  double norm = 0.0;
  for (double& d : dir) {
    d = g(rng);
    norm += d * d;
  }
  const double length = std::uniform_real_distribution<double>(0.05, 1.0)(rng) / std::sqrt(norm);
  std::vector<double> q1(q0.size());
  for (size_t i = 0; i < q0.size(); ++i) {
    q1[i] = std::clamp(q0[i] + length * dir[i], robot.lower_limits()[i] > -1e9 ? robot.lower_limits()[i] : -M_PI,
                       robot.upper_limits()[i] < 1e9 ? robot.upper_limits()[i] : M_PI);
  }
  return {q0, q1};
}

}  // namespace proximity::core
