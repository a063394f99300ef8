// Planners over in-process scenes (Plan: RRT, RRT-Connect, PRM, LazyPRM): the narrow passage with certified
// edges, quick checks caught by certification, batched state checks, continuous joints, seeds,
// terminations, bad input and the MotionBenchMaker Panda problems. Every returned path is re-checked
// densely by an oracle that does not use the motion validator: states at most 1e-3 rad apart in every
// joint, each checked by exact CLEAR (and by FCL on the MotionBenchMaker problems).
#include "proximity/planners/planner.h"

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

class PassageTest : public ::testing::TestWithParam<double> {};

TEST_P(PassageTest, EveryPlannerThreadsTheNarrowPassageWithCertifiedEdges) {
  SceneSetup setup(PassageScene(false), GetParam());
  const std::vector<double> start{-2.4, 0.0}, goal{2.4, 0.0};
  // The straight edge sweeps the unfolded arm through the block.
  MotionCheck direct;
  PROX_ASSERT_OK_AND_ASSIGN(direct, setup.motion.CheckMotion(start, goal));
  ASSERT_FALSE(direct.valid);
  for (PlannerType type : kAllPlanners) {
    SCOPED_TRACE(PlannerTypeName(type));
    PlannerOptions options;
    options.type = type;
    options.seed = 11;
    Termination termination;
    termination.time_limit_s = 60.0;
    auto result = Plan(setup.context, start, goal, options, termination);
    ASSERT_TRUE(result.ok()) << result.error().message;
    const PlanResult& r = result.value();
    ASSERT_EQ(r.outcome, PlanOutcome::kSolved) << PlanOutcomeName(r.outcome);
    ASSERT_GE(r.path.size(), 3u);  // The passage needs a fold: never the straight edge.
    EXPECT_EQ(r.path.front(), start);
    EXPECT_EQ(r.path.back(), goal);
    EXPECT_EQ(DenseInvalidSegment(*setup.scene, setup.context.space, r.path), -1);
    // Somewhere on the way the arm passes q1 = 0 with the elbow folded.
    bool folded_at_block = false;
    for (size_t i = 0; i + 1 < r.path.size(); ++i) {
      const auto& a = r.path[i];
      const auto& b = r.path[i + 1];
      if ((a[0] <= 0.0) != (b[0] <= 0.0)) {
        const double t = a[0] / (a[0] - b[0]);
        folded_at_block = folded_at_block || std::abs(a[1] + t * (b[1] - a[1])) > 1.0;
      }
    }
    EXPECT_TRUE(folded_at_block);
    EXPECT_LE(r.stats.length, r.stats.raw_length + 1e-9);
    EXPECT_NEAR(r.stats.length, PathLength(setup.context.space, r.path), 1e-9);
    EXPECT_GT(r.stats.motion_checks, 0);
    EXPECT_GT(r.stats.state_checks, 0);
    std::printf("%s: %.1f ms, %lld iterations, %lld motion checks, %zu waypoints, length %.2f -> %.2f\n",
                PlannerTypeName(type), 1e3 * (r.stats.plan_time_s + r.stats.simplify_time_s),
                static_cast<long long>(r.stats.iterations), static_cast<long long>(r.stats.motion_checks),
                r.path.size(), r.stats.raw_length, r.stats.length);
  }
}

// Quick checks at the default resolution, none (every edge certified), and so coarse (0.5 rad) that
// they pass edges through the block: the certified check must catch those on candidate paths.
INSTANTIATE_TEST_SUITE_P(QuickResolutions, PassageTest, ::testing::Values(0.05, 0.0, 0.5));

TEST(Planner, CoarseQuickChecksAreCaughtByCertification) {
  SceneSetup setup(PassageScene(false), 0.5);
  const std::vector<double> start{-2.4, 0.0}, goal{2.4, 0.0};
  int64_t failures = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    PlannerOptions options;
    options.seed = seed;
    auto r = Plan(setup.context, start, goal, options, Termination{});
    ASSERT_TRUE(r.ok() && r.value().solved()) << seed;
    failures += r.value().stats.certification_failures;
    EXPECT_EQ(DenseInvalidSegment(*setup.scene, setup.context.space, r.value().path), -1) << seed;
  }
  // The sampled check alone would have returned colliding paths; lazily certified, none is.
  EXPECT_GT(failures, 0);
}

// PRM, LazyPRM and RRT-Connect (its connections) check states in batches (AreValid); over a checker whose
// AreValid is the default (IsValid row by row), the same seed gives the same path after the same checks.
TEST(Planner, BatchedStateChecksPlanAsOneAtATime) {
  SceneSetup setup(PassageScene(false));
  const std::vector<double> start{-2.4, 0.3}, goal{2.4, -0.3};
  for (PlannerType type : {PlannerType::kPrm, PlannerType::kLazyPrm, PlannerType::kRrtConnect}) {
    SCOPED_TRACE(PlannerTypeName(type));
    const OneAtATime one_at_a_time(setup.context.state);
    PlanningContext rowwise = setup.context;
    rowwise.state = &one_at_a_time;
    for (uint64_t seed : {3u, 4u}) {
      PlannerOptions options;
      options.type = type;
      options.seed = seed;
      auto batched = Plan(setup.context, start, goal, options, Termination{});
      auto rows = Plan(rowwise, start, goal, options, Termination{});
      ASSERT_TRUE(batched.ok() && batched.value().solved());
      ASSERT_TRUE(rows.ok() && rows.value().solved());
      EXPECT_EQ(batched.value().path, rows.value().path) << "seed " << seed;
      EXPECT_EQ(batched.value().stats.state_checks, rows.value().stats.state_checks) << "seed " << seed;
      EXPECT_EQ(batched.value().stats.iterations, rows.value().stats.iterations) << "seed " << seed;
    }
    EXPECT_GT(one_at_a_time.largest_batch, 1) << "no batch of states";
  }
}

// A continuous joint from 3.0 to -3.0 rad, with a post on the short way through pi: the planner goes round
// through 0, and its path (in process, as over the wire) ends at the goal's value as given, not 2 pi away;
// the time stamps count each segment's short turn.
TEST(Planner, AContinuousJointEndsExactlyAtTheGoalGiven) {
  auto robot = core::RobotModel::FromUrdfString(R"(<robot name="turntable">
      <link name="base"><collision><geometry><box size="0.2 0.2 0.1"/></geometry></collision></link>
      <joint name="spin" type="continuous"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.1"/>
        <axis xyz="0 0 1"/><limit effort="1" velocity="2"/></joint>
      <link name="arm"><collision><origin xyz="0.3 0 0"/><geometry><box size="0.4 0.05 0.05"/></geometry></collision></link>
      </robot>)");
  ASSERT_TRUE(robot.ok()) << robot.error().message;
  for (const bool blocked : {false, true}) {
    SCOPED_TRACE(blocked ? "blocked at pi" : "free");
    core::SceneDescription d;
    d.robot = robot.value();
    if (blocked) d.objects.push_back(BoxObject("post", Vec3(-0.41, -0.01, 0.0), Vec3(-0.39, 0.01, 0.2)));
    auto built = Scene::Build(d);
    ASSERT_TRUE(built.ok()) << built.error().message;
    SceneSetup setup(built.value());
    const std::vector<double> start{3.0}, goal{-3.0};
    Termination termination;
    termination.time_limit_s = 20.0;
    auto result = Plan(setup.context, start, goal, PlannerOptions{}, termination);
    ASSERT_TRUE(result.ok()) << result.error().message;
    const PlanResult& r = result.value();
    ASSERT_EQ(r.outcome, PlanOutcome::kSolved) << PlanOutcomeName(r.outcome);
    EXPECT_EQ(r.path.front(), start);
    EXPECT_EQ(r.path.back(), goal);
    EXPECT_EQ(DenseInvalidSegment(*setup.scene, setup.context.space, r.path), -1);
    double turned = 0.0;
    std::vector<double> rows;
    for (size_t i = 0; i < r.path.size(); ++i) {
      rows.push_back(r.path[i][0]);
      if (i > 0) turned += core::ShortestTurn(r.path[i][0] - r.path[i - 1][0]);
    }
    EXPECT_NEAR(turned, blocked ? -6.0 : 2 * M_PI - 6.0, 1e-9);
    auto times = TimeFromStart(*robot.value(), rows);
    ASSERT_TRUE(times.ok()) << times.error().message;
    EXPECT_NEAR(times.value().back(), (blocked ? 6.0 : 2 * M_PI - 6.0) / 2.0, 1e-9);
  }
}

TEST(Planner, SameSeedSamePath) {
  SceneSetup setup(PassageScene(false));
  const std::vector<double> start{-2.4, 0.3}, goal{2.4, -0.3};
  for (PlannerType type : kAllPlanners) {
    SCOPED_TRACE(PlannerTypeName(type));
    PlannerOptions options;
    options.type = type;
    std::vector<std::vector<Configuration>> paths;
    for (uint64_t seed : {5u, 5u, 6u}) {
      options.seed = seed;
      auto r = Plan(setup.context, start, goal, options, Termination{});
      ASSERT_TRUE(r.ok() && r.value().solved());
      paths.push_back(r.value().path);
    }
    EXPECT_EQ(paths[0], paths[1]);
    EXPECT_NE(paths[0], paths[2]);  // Another seed explores otherwise.
  }
}

TEST(Planner, UnsolvableProblemsEndByTheirTermination) {
  SceneSetup setup(PassageScene(true));
  const std::vector<double> start{-2.4, 0.0}, goal{2.4, 0.0};
  for (PlannerType type : kAllPlanners) {
    SCOPED_TRACE(PlannerTypeName(type));
    PlannerOptions options;
    options.type = type;
    Termination by_count;
    by_count.max_iterations = 300;
    auto r = Plan(setup.context, start, goal, options, by_count);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r.value().outcome, PlanOutcome::kIterationLimit);
    EXPECT_TRUE(r.value().path.empty());
    EXPECT_EQ(r.value().stats.iterations, 300);

    Termination by_time;
    by_time.time_limit_s = 0.05;
    r = Plan(setup.context, start, goal, options, by_time);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.value().outcome, PlanOutcome::kTimeout);

    std::atomic<bool> cancel{true};
    Termination cancelled;
    cancelled.cancel = &cancel;
    r = Plan(setup.context, start, goal, options, cancelled);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.value().outcome, PlanOutcome::kCancelled);

    int asked = 0;
    Termination stopped;
    stopped.stop = [&asked] { return ++asked > 2; };
    r = Plan(setup.context, start, goal, options, stopped);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.value().outcome, PlanOutcome::kCancelled);

    // A range of 1e-300 makes every step nothing: one RRT-Connect connection would take ~1e300 steps,
    // so the stop condition must be asked inside it too (service fuzzing finding 8: it hung here).
    PlannerOptions tiny = options;
    tiny.range = 1e-300;
    asked = 0;
    r = Plan(setup.context, start, goal, tiny, stopped);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.value().outcome, PlanOutcome::kCancelled);
  }
}

TEST(Planner, InvalidEndsAndBadInput) {
  SceneSetup setup(PassageScene(false));
  const std::vector<double> free_q{-2.4, 0.0}, in_block{0.0, 0.0}, nan_q{NAN, 0.0}, short_q{0.1},
      outside{3.5, 0.0};
  auto r = Plan(setup.context, in_block, free_q, PlannerOptions{}, Termination{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().outcome, PlanOutcome::kInvalidStart);
  r = Plan(setup.context, free_q, in_block, PlannerOptions{}, Termination{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().outcome, PlanOutcome::kInvalidGoal);
  for (const auto* bad : {&nan_q, &short_q, &outside}) {
    r = Plan(setup.context, *bad, free_q, PlannerOptions{}, Termination{});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("start"), std::string::npos) << r.error().message;
  }
  PlannerOptions bad_options;
  bad_options.goal_bias = 2.0;
  EXPECT_FALSE(Plan(setup.context, free_q, free_q, bad_options, Termination{}).ok());
  PlanningContext missing = setup.context;
  missing.motion = nullptr;
  EXPECT_FALSE(Plan(missing, free_q, free_q, PlannerOptions{}, Termination{}).ok());
  EXPECT_EQ(ParsePlannerType("RRTConnect").value(), PlannerType::kRrtConnect);
  EXPECT_EQ(ParsePlannerType("lazy_prm").value(), PlannerType::kLazyPrm);
  EXPECT_FALSE(ParsePlannerType("rrt*").ok());
}

TEST(Planner, SolvesMotionBenchMakerProblemsWithValidPaths) {
  PROX_REQUIRE_DIR(testing::SharedDataDir(), "../shared/data");
  auto robot = core::LoadMbmPanda();
  int solved = 0, tried = 0;
  ASSERT_TRUE(ForEachMbmFamily(robot, [&](MbmCase& c) {
    for (PlannerType type : {PlannerType::kRrtConnect, PlannerType::kLazyPrm}) {
      SCOPED_TRACE(PlannerTypeName(type));
      PlannerOptions options;
      options.type = type;
      options.seed = static_cast<uint64_t>(c.problem.index);
      Termination termination;
      termination.time_limit_s = 20.0;
      auto r = Plan(c.setup.context, c.start, c.goal, options, termination);
      ASSERT_TRUE(r.ok()) << r.error().message;
      ++tried;
      if (!r.value().solved()) continue;
      ++solved;
      const peers::DensePathResult dense = peers::DensePathCheck(c.fcl_robot, c.fcl_world, *c.setup.scene, r.value().path);
      EXPECT_TRUE(dense.valid) << "segment " << dense.segment << " t " << dense.t << " " << dense.error;
      EXPECT_GT(dense.states, 1000);
    }
  }));
  EXPECT_EQ(tried, 2 * testing::Cases(7));
  EXPECT_GE(solved, tried - 1);
}

}  // namespace
}  // namespace proximity::planners
