#pragma once
// What the planner tests share: the planar arm's narrow passage, a dense exact re-check of paths, a
// scene's planning context, a checker that answers one state at a time, and the MotionBenchMaker Panda
// problems with an FCL oracle.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "peers/fcl_robot.h"
#include "proximity/mbm/mbm.h"
#include "proximity/planners/planner.h"
#include "proximity/planners/scene_validity.h"

namespace proximity::planners {

using core::Box;
using core::RigidTransform;
using core::Scene;
using core::SelfClearanceMaps;
using core::SceneCache;
using core::Vec3;

inline constexpr PlannerType kAllPlanners[] = {PlannerType::kRrt, PlannerType::kRrtConnect, PlannerType::kPrm,
                                    PlannerType::kLazyPrm};

inline core::WorldObject BoxObject(const std::string& id, const Vec3& lo, const Vec3& hi) {
  core::WorldObject o;
  o.id = id;
  core::ObjectPart part;
  part.geometry.shape = Box{0.5 * (hi - lo)};
  part.X_WG.p = 0.5 * (hi + lo);
  o.parts.push_back(part);
  return o;
}

// The planar two-link arm (links 1.0 and 0.5 long, shoulder limited to [-3, 3]) must swing from
// q1 = -2.4 to q1 = +2.4, through q1 = 0 where a block stands beyond the upper link's reach: the
// elbow has to fold (|q2| > 1.3 at q1 = 0) and stay folded while the upper link sweeps between the
// block's neighbours above and below (free q2 at |q1| = 0.6: a band about 0.6 rad wide, about a
// tenth of the elbow's range). `closed` walls the sweep off, so no path exists.
inline std::shared_ptr<const Scene> PassageScene(bool closed) {
  auto robot = core::RobotModel::FromUrdfFile(testing::TestDataDir() + "/robots/planar_2link.urdf", "");
  EXPECT_TRUE(robot.ok()) << robot.error().message;
  core::SceneDescription d;
  d.robot = robot.value();
  d.objects.push_back(BoxObject("block", Vec3(1.12, -0.3, -0.1), Vec3(1.8, 0.3, 0.3)));
  d.objects.push_back(BoxObject("above", Vec3(1.0, 0.56, -0.1), Vec3(1.8, 1.0, 0.3)));
  d.objects.push_back(BoxObject("below", Vec3(1.0, -1.0, -0.1), Vec3(1.8, -0.56, 0.3)));
  if (closed) d.objects.push_back(BoxObject("plug", Vec3(0.2, -1.0, -0.1), Vec3(1.0, 1.0, 0.3)));
  auto scene = Scene::Build(d);
  EXPECT_TRUE(scene.ok()) << scene.error().message;
  return scene.value();
}

// The first waypoint index whose segment to the next collides somewhere (dense exact CLEAR), or -1;
// also fails the test for a waypoint outside the joint limits.
inline int DenseInvalidSegment(const Scene& scene, const JointSpace& space, const std::vector<Configuration>& path) {
  SceneCache cache;
  std::vector<double> end(static_cast<size_t>(space.dof()));
  for (size_t i = 0; i < path.size(); ++i) {
    EXPECT_TRUE(space.Contains(path[i])) << "waypoint " << i << " outside the joint limits";
    if (i + 1 == path.size()) break;
    space.SegmentEnd(path[i], path[i + 1], end);
    if (core::DenseFirstCollision(scene, path[i], end, &cache) >= 0.0) return static_cast<int>(i);
  }
  return -1;
}

// A scene's planning context: lazy (a quick sampled check grows the trees, certified checks decide the
// candidate paths) unless quick_resolution is 0 (every edge certified as it is added).
struct SceneSetup {
  std::shared_ptr<const Scene> scene;
  ScenePlanning planning;
  const PlanningContext& context;
  const SceneMotionValidator& motion;
  explicit SceneSetup(std::shared_ptr<const Scene> s, double quick_resolution = ScenePlanning::kDefaultQuickResolution)
      : scene(s), planning(s, quick_resolution), context(planning.context()), motion(planning.certified()) {}
};

// A StateValidityChecker with IsValid only (AreValid is the interface's default, IsValid row by row),
// answered by another checker's IsValid.
class OneAtATime final : public StateValidityChecker {
 public:
  explicit OneAtATime(const StateValidityChecker* inner) : inner_(inner) {}
  core::Result<bool> IsValid(std::span<const double> q) const override { return inner_->IsValid(q); }
  core::Result<std::vector<uint8_t>> AreValid(std::span<const double> qs, int32_t dof) const override {
    largest_batch = std::max<int64_t>(largest_batch, static_cast<int64_t>(qs.size()) / std::max(1, dof));
    return StateValidityChecker::AreValid(qs, dof);  // IsValid row by row
  }
  mutable int64_t largest_batch = 0;  // the most rows one AreValid call asked

 private:
  const StateValidityChecker* inner_;
};

// MotionBenchMaker Panda problems (one per family; four under a sanitizer) with RRT-Connect and LazyPRM;
// every path re-checked densely by an independent oracle: FCL 0.7's exact collision on the same meshes
// and primitives (a MoveIt-style checker) at 1e-3 rad steps in every joint.
// One MotionBenchMaker Panda problem as the tests below plan it: its scene (the robot's self-clearance
// maps shared), the FCL world of the dense re-check, and its ends.
struct MbmCase {
  const mbm::MbmProblem& problem;
  SceneSetup& setup;
  peers::FclRobot& fcl_robot;
  const peers::FclWorld& fcl_world;
  std::vector<double> start, goal;
};

// Calls `run` on the first problem of each of the first Cases(7) families; false (with a failure
// recorded) when the data cannot be loaded.
template <class F>
bool ForEachMbmFamily(const std::shared_ptr<const core::RobotModel>& robot, F&& run) {
  auto problems = mbm::LoadMbmProblems(testing::SharedDataDir() + "/scenes/mbm/problems/panda");
  EXPECT_TRUE(problems.ok()) << problems.error().message;
  if (!problems.ok() || robot == nullptr) return false;
  peers::FclRobot fcl_robot(*robot);
  const int families = testing::Cases(7);
  const auto maps = SelfClearanceMaps::For(robot);  // shared by the problems' scenes
  std::string last_family;
  int family = 0;
  for (const mbm::MbmProblem& p : problems.value()) {
    if (p.family == last_family) continue;
    last_family = p.family;
    if (++family > families) break;
    auto description = mbm::MbmSceneDescription(p.scene, robot);
    EXPECT_TRUE(description.ok()) << description.error().message;
    if (!description.ok()) return false;
    description.value().self_clearance_maps = maps;
    auto scene = Scene::Build(description.value());
    EXPECT_TRUE(scene.ok()) << scene.error().message;
    if (!scene.ok()) return false;
    SceneSetup setup(scene.value());
    const peers::FclWorld fcl_world(*setup.scene);
    MbmCase c{p, setup, fcl_robot, fcl_world, mbm::MbmStartConfiguration(p.request, *robot).value(),
              mbm::MbmGoalConfiguration(p.request, *robot).value()};
    SCOPED_TRACE(p.name);
    run(c);
  }
  return true;
}

}  // namespace proximity::planners
