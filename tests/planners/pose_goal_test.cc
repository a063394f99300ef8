// Pose goals (pose_goal.cc): paths end within tolerance on certified edges, collision-free IK rejects
// solutions in collision, and the MotionBenchMaker Panda problems as pose goals.
#include "proximity/planners/pose_goal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <thread>

#include "planners/planner_fixtures.h"
#include "proximity/planners/pose_goal.h"
#include "proximity/planners/scene_validity.h"
#include "proximity/planners/timing.h"

namespace proximity::planners {
namespace {

// The tip's pose at `q`, as a pose goal of the default tolerances (a 1e-4 m sphere, 1e-3 rad).
core::PoseGoal TipGoal(const core::RobotModel& robot, const std::string& tip, std::span<const double> q) {
  core::PoseGoal goal;
  goal.link = robot.FindLink(tip).value();
  goal.X_WT = robot.ForwardKinematics(q).value()[static_cast<size_t>(goal.link)];
  return goal;
}

// Whether the tip at the path's last row meets the goal, computed here from forward kinematics.
bool EndsAtPose(const core::RobotModel& robot, const core::PoseGoal& goal, const std::vector<Configuration>& path) {
  const RigidTransform X = robot.ForwardKinematics(path.back()).value()[static_cast<size_t>(goal.link)];
  const double angle = Eigen::AngleAxisd(goal.X_WT.R.transpose() * X.R).angle();
  return (X.p - goal.X_WT.p).norm() <= 1e-4 && angle <= std::sqrt(3.0) * 1e-3;
}

TEST(Planner, PoseGoalsEndWithinToleranceOnCertifiedPaths) {
  SceneSetup setup(PassageScene(false));
  const core::RobotModel& robot = setup.scene->robot();
  const std::vector<double> start{-2.4, 0.0};
  // The tip where the arm, stretched at q1 = 2.4, puts it: the passage must be threaded to get there.
  const core::PoseGoal goal = TipGoal(robot, "tip", std::vector<double>{2.4, 0.0});
  for (PlannerType type : kAllPlanners) {
    SCOPED_TRACE(PlannerTypeName(type));
    auto sampler = PoseGoalSampler::Create(setup.scene->robot_ptr(), goal, setup.context.space, start);
    ASSERT_TRUE(sampler.ok()) << sampler.error().message;
    PlannerOptions options;
    options.type = type;
    options.seed = 5;
    Termination termination;
    termination.time_limit_s = 60.0;
    auto result = Plan(setup.context, start, sampler.value(), options, termination);
    ASSERT_TRUE(result.ok()) << result.error().message;
    const PlanResult& r = result.value();
    ASSERT_EQ(r.outcome, PlanOutcome::kSolved) << PlanOutcomeName(r.outcome);
    EXPECT_EQ(r.path.front(), start);
    EXPECT_TRUE(EndsAtPose(robot, goal, r.path));
    EXPECT_EQ(DenseInvalidSegment(*setup.scene, setup.context.space, r.path), -1);
    EXPECT_GE(sampler.value().solutions(), 1);
  }
  // A pose no configuration reaches: the plan ends without a goal, by its termination.
  core::PoseGoal far = goal;
  far.X_WT.p.x() = 5.0;
  auto sampler = PoseGoalSampler::Create(setup.scene->robot_ptr(), far, setup.context.space, start);
  ASSERT_TRUE(sampler.ok());
  Termination termination;
  termination.time_limit_s = 0.5;
  auto result = Plan(setup.context, start, sampler.value(), PlannerOptions{}, termination);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.value().outcome, PlanOutcome::kInvalidGoal);
  EXPECT_TRUE(result.value().path.empty());
  // Malformed goals are refused by name before any planning.
  core::PoseGoal bad = goal;
  bad.region_size.x() = -1.0;
  auto refused = PoseGoalSampler::Create(setup.scene->robot_ptr(), bad, setup.context.space, start);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("region"), std::string::npos);
}

TEST(Planner, CollisionFreeIkRejectsSolutionsInCollision) {
  SceneSetup setup(PassageScene(false));
  const Scene& scene = *setup.scene;
  const std::vector<double> seed{-2.4, 0.0};
  // Free: the stretched arm at q1 = 2.4.
  const core::PoseGoal free_goal = TipGoal(scene.robot(), "tip", std::vector<double>{2.4, 0.0});
  Termination termination;
  termination.time_limit_s = 2.0;
  const FreeIk found = testing::ValueOrFail(SolveFreeIk(scene, free_goal, seed, {}, true, termination));
  ASSERT_TRUE(found.solution.found);
  SceneCache cache;
  EXPECT_TRUE(testing::ValueOrFail(scene.CheckState(found.solution.q, &cache)).free);
  EXPECT_TRUE(EndsAtPose(scene.robot(), free_goal, {found.solution.q}));
  // The tip inside the block: every solution collides, so none is returned (but one exists without the check).
  core::PoseGoal inside;
  inside.link = scene.robot().FindLink("tip").value();
  inside.X_WT.p = Vec3(1.45, 0.0, 0.1);  // the arm moves in the plane z = 0.1
  inside.constrain_orientation = false;
  inside.region_size = Vec3::Constant(1e-3);
  termination.time_limit_s = 0.2;
  const FreeIk blocked = testing::ValueOrFail(SolveFreeIk(scene, inside, seed, {}, true, termination));
  EXPECT_FALSE(blocked.solution.found);
  EXPECT_GT(blocked.rejected, 0);
  EXPECT_EQ(blocked.solution.q, seed);
  const FreeIk unchecked = testing::ValueOrFail(SolveFreeIk(scene, inside, seed, {}, false, termination));
  ASSERT_TRUE(unchecked.solution.found);
  EXPECT_FALSE(testing::ValueOrFail(scene.CheckState(unchecked.solution.q, &cache)).free);
  // Cancelled: stops at once, saying so.
  std::atomic<bool> cancel{true};
  termination.cancel = &cancel;
  const FreeIk cancelled = testing::ValueOrFail(SolveFreeIk(scene, inside, seed, {}, true, termination));
  EXPECT_TRUE(cancelled.stopped);
  EXPECT_FALSE(cancelled.solution.found);
}

TEST(Planner, PoseGoalsOnMotionBenchMakerProblems) {
  PROX_REQUIRE_DIR(testing::SharedDataDir(), "../shared/data");
  auto robot = core::LoadMbmPanda();
  int solved = 0, tried = 0;
  ASSERT_TRUE(ForEachMbmFamily(robot, [&](MbmCase& c) {
    // The problem's goal as the pose of the arm's flange: any collision-free solution will do.
    const core::PoseGoal goal = TipGoal(*robot, "panda_link8", c.goal);
    auto sampler = PoseGoalSampler::Create(robot, goal, c.setup.context.space, c.start);
    ASSERT_TRUE(sampler.ok()) << sampler.error().message;
    PlannerOptions options;
    options.seed = static_cast<uint64_t>(c.problem.index);
    Termination termination;
    termination.time_limit_s = 20.0;
    auto r = Plan(c.setup.context, c.start, sampler.value(), options, termination);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ++tried;
    if (!r.value().solved()) return;
    ++solved;
    EXPECT_EQ(r.value().path.front(), c.start);
    EXPECT_TRUE(EndsAtPose(*robot, goal, r.value().path));
    const peers::DensePathResult dense = peers::DensePathCheck(c.fcl_robot, c.fcl_world, *c.setup.scene, r.value().path);
    EXPECT_TRUE(dense.valid) << "segment " << dense.segment << " t " << dense.t << " " << dense.error;
    std::printf("%s: %.1f ms, %lld goals drawn, %lld solutions\n", c.problem.name.c_str(),
                1e3 * (r.value().stats.plan_time_s + r.value().stats.simplify_time_s),
                static_cast<long long>(sampler.value().draws()), static_cast<long long>(sampler.value().solutions()));
  }));
  EXPECT_EQ(tried, testing::Cases(7));
  EXPECT_GE(solved, tried - 1);
}

}  // namespace
}  // namespace proximity::planners
