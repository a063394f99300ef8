// Point clouds against FCL's octree, the second oracle (MoveIt checks sensed worlds this way): on random
// states of real robots among sensed points, our CLEAR of the cloud's balls and the MoveIt-style FCL
// checker on an octomap of the same points (cells of the balls' diameter) agree, except where the two
// worlds differ: every disagreement has the nearest ball within the octree's cell diagonal plus the
// radius of touching (brute force over the link meshes), which is how far a cell and a ball of one point
// can reach beyond each other.

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "peers/fcl_robot.h"
#include "bvh/point_cloud.h"
#include "proximity/core/scene/scene.h"

namespace proximity::core {
namespace {

using testing::ValueOrFail;

// The smallest (distance to a link mesh - radius) over the cloud's balls at q, brute force.
double NearestBall(const RobotModel& robot, std::span<const double> q, const PointCloud& cloud) {
  const std::vector<RigidTransform> X_WL = ValueOrFail(robot.ForwardKinematics(q));
  double best = std::numeric_limits<double>::infinity();
  for (int32_t l = 0; l < robot.num_links(); ++l) {
    for (const LinkGeometry& g : robot.link(l).geometries) {
      if (g.mesh == nullptr) continue;
      const RigidTransform X_WG = X_WL[static_cast<size_t>(l)] * g.X_LG;
      const Sphere& s = g.mesh->sphere(0);
      const Vec3 c_W = X_WG * s.center;
      for (int32_t i = 0; i < cloud.num_points(); ++i) {
        if ((cloud.point(i) - c_W).norm() - s.radius - cloud.point_radius(i) >= best) continue;
        best = std::min(best, testing::PointMeshDistance(cloud.point(i), g.mesh->mesh(), X_WG) - cloud.point_radius(i));
      }
    }
  }
  return best;
}

TEST(PointCloudFcl, AgreesWithFclOctreeUpToItsResolution) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "no robots: ../shared/data and dart-doc are both absent";
  const double radius = 0.01;
  for (const RobotCase& rc : robots) {
    std::mt19937_64 rng(7);
    PointCloudOptions options;
    options.voxel_size = 0.0;  // the octree gets exactly our points
    auto cloud = ValueOrFail(PointCloud::Build(SensedBoxPoints(rng, 0.02), radius, options));
    SceneDescription d;
    d.robot = LoadRobot(rc);
    d.self_clearance_fill = SelfClearanceFill::kOnUse;
    WorldObject o;
    o.id = "sensed";
    o.parts.push_back({Geometry::Cloud(cloud), RigidTransform::Identity()});
    d.objects.push_back(o);
    auto scene = ValueOrFail(Scene::Build(d));
    peers::FclRobot fcl_robot(scene->robot());
    peers::FclWorld fcl_world(*scene);
    SceneCache cache;
    // A cell of side 2r holds a point; the cell reaches sqrt(3) * 2r from it, the ball r: the worlds
    // differ by at most that much.
    const double explained = std::sqrt(3.0) * 2.0 * radius + radius + 1e-9;
    int agree = 0, disagree = 0, hits = 0;
    const int n = testing::Cases(400);
    for (int k = 0; k < n; ++k) {
      const std::vector<double> q = RandomState(rng, scene->robot());
      // Both whole CLEARs: self collisions are exact on both sides, so the worlds make the difference.
      const bool ours_free = ValueOrFail(scene->CheckState(q, &cache)).free;
      fcl_robot.Pose(ValueOrFail(scene->robot().ForwardKinematics(q)));
      const bool fcl_free = fcl_robot.Free(*scene, *fcl_world.manager);
      hits += !ours_free;
      if (ours_free == fcl_free) {
        ++agree;
        continue;
      }
      ++disagree;
      const double nearest = NearestBall(scene->robot(), q, *cloud);
      EXPECT_LE(std::abs(nearest), explained)
          << rc.name << " state " << k << ": ours " << (ours_free ? "free" : "colliding") << ", the octree's "
          << (fcl_free ? "free" : "colliding") << ", the nearest ball " << nearest << " m away";
    }
    std::cout << rc.name << ": " << cloud->num_points() << " points, " << n << " states, " << hits
              << " touching the cloud, " << agree << " agree with FCL's octree, " << disagree
              << " differ (each within its resolution)\n";
    EXPECT_GT(hits, n / 50) << rc.name;
    EXPECT_GT(agree, n * 9 / 10) << rc.name;
  }
}

}  // namespace
}  // namespace proximity::core
