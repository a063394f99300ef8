// Differential tests against FCL 0.7 (an independent implementation, used only here and in the
// benchmarks): the same collision flags and exact distances on the same poses.
#include <gtest/gtest.h>

#include <random>

#include "core/test_util.h"
#include "peers/fcl_peer.h"
#include "bvh/mesh_query.h"

namespace proximity::core {
namespace {

using peers::FclMesh;
using peers::FclPose;

struct Case {
  std::string name, a, b;
  Vec3 lo, hi;
  int poses;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  const std::string shared = testing::SharedDataDir();
  if (!shared.empty()) {
    cases.push_back({"envrob", shared + "/scenes/fcl/env.obj", shared + "/scenes/fcl/rob.obj", Vec3(-3000, -3000, 0),
                     Vec3(3000, 3000, 3000), 1000});
    const std::string ur5 = shared + "/robots/ur5/ur_description/meshes/ur5/collision/";
    cases.push_back({"ur5_upper_arm_forearm", ur5 + "upper_arm.stl", ur5 + "forearm.stl", Vec3(-0.2, -0.2, -0.2),
                     Vec3(0.2, 0.2, 0.6), 500});
    const std::string panda = shared + "/robots/panda/moveit_resources_panda_description/meshes/collision/";
    cases.push_back({"panda_link1_link2", panda + "link1.stl", panda + "link2.stl", Vec3::Constant(-0.25),
                     Vec3::Constant(0.25), 500});
  }
  const std::string dart = testing::DartUrdfDir();
  if (!dart.empty()) {
    cases.push_back({"kr5_shoulder_bicep", dart + "/KR5/meshes/shoulder.STL", dart + "/KR5/meshes/bicep.STL",
                     Vec3::Constant(-0.3), Vec3::Constant(0.3), 500});
  }
  return cases;
}

TEST(MeshQueryFcl, SameCollisionFlagsAndExactDistances) {
  const auto cases = Cases();
  if (cases.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const TriangleMesh ma = testing::LoadMeshOrDie(c.a), mb = testing::LoadMeshOrDie(c.b);
    const auto a = MeshModel::Build(ma).value(), b = MeshModel::Build(mb).value();
    auto fa_obbrss = FclMesh<fcl::OBBRSSd>(ma), fb_obbrss = FclMesh<fcl::OBBRSSd>(mb);
    auto fa_rss = FclMesh<fcl::RSSd>(ma), fb_rss = FclMesh<fcl::RSSd>(mb);
    const double scale = (c.hi - c.lo).norm();
    std::mt19937_64 rng(31);
    int collide_disagree = 0, hits = 0, distance_checked = 0;
    for (int i = 0; i < c.poses; ++i) {
      const RigidTransform X_WB = testing::RandomPose(rng, c.lo, c.hi);
      CollisionResult ours;
      PROX_ASSERT_OK_AND_ASSIGN(ours, Collide(*a, {}, *b, X_WB, {}));
      fcl::CollisionRequestd creq;
      fcl::CollisionResultd cres;
      fcl::CollisionObjectd oa(fa_obbrss, fcl::Transform3d::Identity()), ob(fb_obbrss, FclPose(X_WB));
      fcl::collide(&oa, &ob, creq, cres);
      if (ours.colliding != cres.isCollision()) {
        // Only a touching pose (distance within rounding of 0) may be called either way.
        const double d = testing::BruteForceDistance(ma, {}, mb, X_WB);
        EXPECT_LT(d, 1e-9 * scale) << "pose " << i << ": ours " << ours.colliding << ", FCL " << cres.isCollision();
        ++collide_disagree;
      }
      hits += ours.colliding;
      if (i % 4 != 0 || ours.colliding) continue;
      DistanceResult dist;
      PROX_ASSERT_OK_AND_ASSIGN(dist, ComputeDistance(*a, {}, *b, X_WB, {}, nullptr));
      fcl::DistanceRequestd dreq;
      dreq.enable_nearest_points = true;
      fcl::DistanceResultd dres;
      fcl::CollisionObjectd ra(fa_rss, fcl::Transform3d::Identity()), rb(fb_rss, FclPose(X_WB));
      fcl::distance(&ra, &rb, dreq, dres);
      EXPECT_NEAR(dist.upper_bound, dres.min_distance, 1e-9 * std::max(scale * 1e-3, dres.min_distance))
          << "pose " << i;
      ++distance_checked;
    }
    RecordProperty(c.name + "_touching_disagreements", collide_disagree);
    EXPECT_GT(hits, c.poses / 20);
    EXPECT_GT(distance_checked, c.poses / 10);
  }
}

}  // namespace
}  // namespace proximity::core
