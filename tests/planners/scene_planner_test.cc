// Planning as a service call sets it up (planners::ScenePlanner, GroupJointSpace, PlanFailureMessage) on
// the planar two-link arm: a group's plan moves its joints alone; a discrete resolution too fine for
// the core's cap is refused; the failure messages name the colliding pair, the limit reached.
#include "proximity/planners/scene_planner.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/test_util.h"

namespace proximity::planners {
namespace {

using testing::ValueOrFail;

std::shared_ptr<const core::Scene> ArmScene(bool with_block) {
  auto robot = ValueOrFail(core::RobotModel::FromUrdfFile(testing::TestDataDir() + "/robots/planar_2link.urdf",
                                                          testing::TestDataDir() + "/robots/planar_2link.srdf"));
  core::SceneDescription d;
  d.robot = robot;
  if (with_block) {
    core::WorldObject block;
    block.id = "block";
    core::ObjectPart part;
    part.geometry.shape = core::Box{core::Vec3(0.2, 0.2, 0.2)};
    part.X_WG.p = core::Vec3(1.2, 0.0, 0.1);  // where the elbow is at q = 0
    block.parts.push_back(part);
    d.objects.push_back(block);
  }
  return ValueOrFail(core::Scene::Build(d));
}

TEST(ScenePlanner, AGroupPlanMovesItsJointsAlone) {
  const auto scene = ArmScene(false);
  const std::vector<double> start{0.3, 0.2}, goal{0.3, -1.0};
  ScenePlanner planner(scene, PlanningMotionRequest(), {});
  planner.RestrictTo(ValueOrFail(GroupJointSpace(scene->robot(), "wrist", start, goal)));
  PlannerOptions options;
  Termination termination;
  termination.time_limit_s = 5.0;
  const PlanResult r = ValueOrFail(planner.Plan(start, goal, options, termination));
  ASSERT_EQ(r.outcome, PlanOutcome::kSolved);
  for (const Configuration& q : r.path) EXPECT_EQ(q[0], 0.3);  // the shoulder is not in "wrist"
  EXPECT_GT(planner.state_checks(), 0);
  EXPECT_GT(planner.motion_checks(), 0);
  EXPECT_GE(planner.posed_states(), planner.state_checks());
  // A goal that moves a joint outside the group, an unknown group: refused by name.
  const auto moved = GroupJointSpace(scene->robot(), "wrist", start, std::vector<double>{0.4, -1.0});
  ASSERT_FALSE(moved.ok());
  EXPECT_NE(moved.error().message.find("joint 'shoulder' is not in group 'wrist'"), std::string::npos)
      << moved.error().message;
  const auto unknown = GroupJointSpace(scene->robot(), "no_such_group", start, goal);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("no_such_group"), std::string::npos) << unknown.error().message;
}

TEST(ScenePlanner, ADiscreteResolutionBeyondTheCapIsRefused) {
  const auto scene = ArmScene(false);
  core::MotionRequest fine;
  fine.mode = core::MotionRequest::Mode::kDiscrete;
  fine.resolution = 1e-9;
  EXPECT_FALSE(ScenePlanner(scene, fine, {}).CheckResolution().ok());
  fine.resolution = 0.01;
  EXPECT_TRUE(ScenePlanner(scene, fine, {}).CheckResolution().ok());
  EXPECT_TRUE(ScenePlanner(scene, PlanningMotionRequest(), {}).CheckResolution().ok());
}

TEST(ScenePlanner, FailureMessagesNameTheContactOrTheLimit) {
  const auto scene = ArmScene(true);
  const std::vector<double> colliding{0.0, 0.0}, free{2.0, 0.0};
  PlanResult r;
  r.outcome = PlanOutcome::kInvalidStart;
  const std::string start = PlanFailureMessage(*scene, r, colliding, free, 1.0, 0);
  EXPECT_NE(start.find("start collides: "), std::string::npos) << start;
  EXPECT_NE(start.find("block (world)"), std::string::npos) << start;
  r.outcome = PlanOutcome::kInvalidGoal;
  EXPECT_NE(PlanFailureMessage(*scene, r, free, colliding, 1.0, 0).find("goal collides"), std::string::npos);
  r.outcome = PlanOutcome::kTimeout;
  r.stats.iterations = 17;
  EXPECT_EQ(PlanFailureMessage(*scene, r, free, free, 2.5, 0), "no path within the time limit of 2.5 s (17 iterations)");
  r.outcome = PlanOutcome::kIterationLimit;
  EXPECT_EQ(PlanFailureMessage(*scene, r, free, free, 2.5, 40), "no path within max_iterations = 40");
  r.outcome = PlanOutcome::kSolved;
  EXPECT_EQ(PlanFailureMessage(*scene, r, free, free, 2.5, 0), "");
}

}  // namespace
}  // namespace proximity::planners
