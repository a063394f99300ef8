// Planners over in-process scenes. Every returned path is re-checked densely by an oracle that does not
// use the motion validator: states at most 1e-3 rad apart in every joint, each checked by exact CLEAR.
#include "proximity/planners/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <thread>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "peers/fcl_robot.h"
#include "proximity/mbm/mbm.h"
#include "proximity/planners/pose_goal.h"
#include "proximity/planners/scene_validity.h"
#include "proximity/planners/timing.h"

namespace proximity::planners {
namespace {

using core::Box;
using core::RigidTransform;
using core::Scene;
using core::SelfClearanceMaps;
using core::SceneCache;
using core::Vec3;

const PlannerType kAllPlanners[] = {PlannerType::kRrt, PlannerType::kRrtConnect, PlannerType::kPrm,
                                    PlannerType::kLazyPrm};

core::WorldObject BoxObject(const std::string& id, const Vec3& lo, const Vec3& hi) {
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
std::shared_ptr<const Scene> PassageScene(bool closed) {
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
int DenseInvalidSegment(const Scene& scene, const JointSpace& space, const std::vector<Configuration>& path) {
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

// The validity objects are shared by concurrent callers (OMPL's contract): four threads asking the same
// questions get the answers one thread gets. Run under the thread sanitizer too.
TEST(SceneValidity, ConcurrentCallersGetTheSingleThreadedAnswers) {
  SceneSetup setup(PassageScene(false));
  const JointSpace& space = setup.context.space;
  Rng rng(17);
  const int n = testing::Cases(400);
  std::vector<Configuration> a(n, Configuration(2)), b(n, Configuration(2));
  for (int i = 0; i < n; ++i) {
    space.Sample(rng, a[i]);
    space.Sample(rng, b[i]);
  }
  auto answers = [&](std::vector<char>* state, std::vector<char>* motion, std::vector<char>* quick) {
    for (int i = 0; i < n; ++i) {
      bool valid = false;
      MotionCheck m, q;
      PROX_ASSERT_OK_AND_ASSIGN(valid, setup.context.state->IsValid(a[i]));
      PROX_ASSERT_OK_AND_ASSIGN(m, setup.context.motion->CheckMotion(a[i], b[i]));
      PROX_ASSERT_OK_AND_ASSIGN(q, setup.context.quick_motion->CheckMotion(a[i], b[i]));
      state->push_back(valid);
      motion->push_back(m.valid);
      quick->push_back(q.valid);
    }
  };
  std::vector<char> state, motion, quick;
  answers(&state, &motion, &quick);
  EXPECT_GT(std::count(state.begin(), state.end(), 1), 0);
  EXPECT_GT(std::count(motion.begin(), motion.end(), 0), 0);
  std::vector<std::vector<char>> s(4), m(4), q(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { answers(&s[t], &m[t], &q[t]); });
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(s[t], state);
    EXPECT_EQ(m[t], motion);
    EXPECT_EQ(q[t], quick);
  }
  EXPECT_EQ(setup.planning.state().checks(), 5 * n);
}

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

// AreValid over a MotionBenchMaker Panda scene (the first problem's) equals IsValid row by row on 3,000
// seeded random states, a tenth of them just outside a joint limit (free there but not valid), whole and
// in slices of every length up to 20 (blocks that leave SIMD lanes empty); the interface's default
// (IsValid row by row) answers the same. A bad row fails the batch with an error naming it.
TEST(SceneValidity, AreValidEqualsIsValidRowByRow) {
  const std::string shared = testing::SharedDataDir();
  PROX_REQUIRE_DIR(shared, "../shared/data");
  auto problems = mbm::LoadMbmProblems(shared + "/scenes/mbm/problems/panda");
  ASSERT_TRUE(problems.ok()) << problems.error().message;
  ASSERT_FALSE(problems.value().empty());
  auto robot = core::LoadMbmPanda();
  ASSERT_NE(robot, nullptr);
  auto description = mbm::MbmSceneDescription(problems.value().front().scene, robot);
  ASSERT_TRUE(description.ok()) << description.error().message;
  auto built = Scene::Build(description.value());
  ASSERT_TRUE(built.ok()) << built.error().message;
  const SceneStateValidity validity(built.value());
  const JointSpace space = JointSpace::ForRobot(built.value()->robot());
  const int32_t dof = space.dof();
  const auto d = static_cast<size_t>(dof);

  const int n = testing::Cases(3000);
  Rng rng(29);
  std::uniform_int_distribution<int32_t> joint(0, dof - 1);
  std::vector<double> rows(static_cast<size_t>(n) * d);
  for (int i = 0; i < n; ++i) {
    const std::span<double> q(rows.data() + static_cast<size_t>(i) * d, d);
    space.Sample(rng, q);
    if (i % 10 == 3) {
      const auto j = static_cast<size_t>(joint(rng));
      q[j] = space.wraps(static_cast<int32_t>(j)) ? q[j] : space.upper()[j] + 0.01;
    }
  }
  std::vector<uint8_t> expected(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    bool valid = false;
    const std::span<const double> q(rows.data() + static_cast<size_t>(i) * d, d);
    PROX_ASSERT_OK_AND_ASSIGN(valid, validity.IsValid(q));
    expected[static_cast<size_t>(i)] = valid ? 1 : 0;
  }
  const int64_t valid_count = std::count(expected.begin(), expected.end(), uint8_t{1});
  EXPECT_GT(valid_count, n / 10) << "too few valid states to compare";
  EXPECT_LT(valid_count, n - n / 5) << "too few invalid states to compare";
  EXPECT_EQ(validity.checks(), n);

  std::vector<uint8_t> batch;
  PROX_ASSERT_OK_AND_ASSIGN(batch, validity.AreValid(rows, dof));
  ASSERT_EQ(batch.size(), expected.size());
  int mismatches = 0;
  for (int i = 0; i < n; ++i) {
    mismatches += batch[static_cast<size_t>(i)] != expected[static_cast<size_t>(i)];
    EXPECT_EQ(batch[static_cast<size_t>(i)], expected[static_cast<size_t>(i)]) << "configuration " << i;
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(validity.checks(), 2 * n) << "every row counts as a check";

  // Slices of 1 to 20 rows, one after another.
  size_t first = 0;
  for (size_t len = 1; first < expected.size(); len = len % 20 + 1) {
    const size_t count = std::min(len, expected.size() - first);
    std::vector<uint8_t> slice;
    const std::span<const double> part = std::span<const double>(rows).subspan(first * d, count * d);
    PROX_ASSERT_OK_AND_ASSIGN(slice, validity.AreValid(part, dof));
    ASSERT_EQ(slice.size(), count);
    for (size_t k = 0; k < count; ++k) EXPECT_EQ(slice[k], expected[first + k]) << "configuration " << first + k;
    first += count;
  }

  // The interface's default, on the first 500 rows.
  const OneAtATime one_at_a_time(&validity);
  const size_t m = std::min<size_t>(500, expected.size());
  std::vector<uint8_t> by_default;
  PROX_ASSERT_OK_AND_ASSIGN(by_default, one_at_a_time.AreValid(std::span<const double>(rows).first(m * d), dof));
  EXPECT_EQ(by_default, std::vector<uint8_t>(expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(m)));

  std::vector<uint8_t> none;
  PROX_ASSERT_OK_AND_ASSIGN(none, validity.AreValid({}, dof));
  EXPECT_TRUE(none.empty());

  // A NaN in row 37 of 100: the batch fails, naming the row, as IsValid fails for it alone; the
  // default names it too.
  std::vector<double> bad(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(100 * d));
  bad[37 * d + 2] = std::nan("");
  const core::Error alone = validity.IsValid(std::span<const double>(bad).subspan(37 * d, d)).status().error();
  for (const StateValidityChecker* checker : {static_cast<const StateValidityChecker*>(&validity),
                                              static_cast<const StateValidityChecker*>(&one_at_a_time)}) {
    const core::Result<std::vector<uint8_t>> failed = checker->AreValid(bad, dof);
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.error().code, core::ErrorCode::kInvalidArgument);
    EXPECT_EQ(failed.error().message, "configuration 37: " + alone.message);
  }
  // Values that are not whole rows, rows of another length (IsValid's error for row 0), no columns.
  const core::Result<std::vector<uint8_t>> ragged =
      validity.AreValid(std::span<const double>(rows).first(2 * d + 1), dof);
  ASSERT_FALSE(ragged.ok());
  EXPECT_EQ(ragged.error().code, core::ErrorCode::kInvalidArgument);
  const core::Result<std::vector<uint8_t>> shorter =
      validity.AreValid(std::span<const double>(rows).first(2 * (d - 1)), dof - 1);
  ASSERT_FALSE(shorter.ok());
  EXPECT_EQ(shorter.error().message.rfind("configuration 0: ", 0), 0u) << shorter.error().message;
  EXPECT_FALSE(validity.AreValid(rows, 0).ok());
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

// A MotionValidator whose step chains are decided step by step (IsValid, then CheckMotion, each chain up
// to its first invalid step): an oracle for CheckStepsUntilInvalid's batch default. Records the most
// chains one call asked.
class StepByStep final : public MotionValidator {
 public:
  explicit StepByStep(const MotionValidator* inner) : inner_(inner) {}
  core::Result<MotionCheck> CheckMotion(std::span<const double> q0, std::span<const double> q1) const override {
    return inner_->CheckMotion(q0, q1);
  }
  core::Result<std::vector<StepChecks>> CheckStepsUntilInvalid(const StateValidityChecker& state_checker,
                                                               std::span<const double> states,
                                                               std::span<const double> starts,
                                                               std::span<const double> ends,
                                                               std::span<const int32_t> chains,
                                                               int32_t dof) const override {
    if (core::Status s = CheckStepChains(states, starts, ends, chains, dof); !s.ok()) return s.error();
    ++calls;
    largest_round = std::max<int64_t>(largest_round, static_cast<int64_t>(chains.size()));
    const auto d = static_cast<size_t>(dof);
    std::vector<StepChecks> out(chains.size());
    size_t k = 0;
    for (size_t c = 0; c < chains.size(); ++c) {
      bool invalid = false;
      for (int32_t j = 0; j < chains[c]; ++j, ++k) {
        if (invalid) continue;
        ++out[c].state_checks;
        const core::Result<bool> valid = state_checker.IsValid(states.subspan(k * d, d));
        if (!valid.ok()) return valid.error();
        if (!valid.value()) {
          invalid = true;
          continue;
        }
        const core::Result<MotionCheck> m = inner_->CheckMotion(starts.subspan(k * d, d), ends.subspan(k * d, d));
        if (!m.ok()) return m.error();
        out[c].motions.push_back(m.value());
        invalid = !m.value().valid;
        out[c].valid_steps += m.value().valid;
      }
    }
    return out;
  }
  bool certified() const override { return inner_->certified(); }
  std::string Describe() const override { return "step by step"; }
  mutable int64_t calls = 0, largest_round = 0;

 private:
  const MotionValidator* inner_;
};

// RRT and RRT-Connect grow their trees in rounds of step chains (one CheckStepsUntilInvalid call for a
// round's extensions, one for its connections), rounds of several samples once the first ones fail; the
// batch default (every chain's states in one AreValid) plans the same paths as deciding every step one
// at a time.
TEST(Planner, TreesGrowInRoundsOfStepChains) {
  SceneSetup setup(PassageScene(false));
  const std::vector<double> start{-2.4, 0.3}, goal{2.4, -0.3};
  for (PlannerType type : {PlannerType::kRrt, PlannerType::kRrtConnect}) {
    SCOPED_TRACE(PlannerTypeName(type));
    const StepByStep step_by_step(setup.context.quick_motion);
    PlanningContext stepwise = setup.context;
    stepwise.quick_motion = &step_by_step;
    for (uint64_t seed : {5u, 6u, 7u}) {
      PlannerOptions options;
      options.type = type;
      options.seed = seed;
      auto batched = Plan(setup.context, start, goal, options, Termination{});
      auto steps = Plan(stepwise, start, goal, options, Termination{});
      ASSERT_TRUE(batched.ok() && batched.value().solved()) << "seed " << seed;
      ASSERT_TRUE(steps.ok() && steps.value().solved()) << "seed " << seed;
      EXPECT_EQ(batched.value().path, steps.value().path) << "seed " << seed;
      EXPECT_EQ(batched.value().stats.iterations, steps.value().stats.iterations) << "seed " << seed;
      EXPECT_EQ(batched.value().stats.quick_motion_checks, steps.value().stats.quick_motion_checks) << "seed " << seed;
    }
    EXPECT_GT(step_by_step.calls, 3);
    EXPECT_GE(step_by_step.largest_round, 4) << "no round of several samples";
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

TEST(Planner, PrmKeepsItsRoadmapAcrossQueries) {
  SceneSetup setup(PassageScene(false));
  for (PlannerType type : {PlannerType::kPrm, PlannerType::kLazyPrm}) {
    SCOPED_TRACE(PlannerTypeName(type));
    PlannerOptions options;
    options.type = type;
    auto planner = MakePlanner(setup.context, options);
    ASSERT_TRUE(planner.ok());
    auto first = planner.value()->Solve(std::vector<double>{-2.4, 0.0}, std::vector<double>{2.4, 0.0}, Termination{});
    ASSERT_TRUE(first.ok() && first.value().solved());
    // A second query across the passage reuses the roadmap: far fewer samples.
    auto second = planner.value()->Solve(std::vector<double>{-2.2, 0.5}, std::vector<double>{2.2, -0.5}, Termination{});
    ASSERT_TRUE(second.ok() && second.value().solved());
    EXPECT_GE(second.value().stats.vertices, first.value().stats.vertices);
    EXPECT_LT(second.value().stats.iterations, std::max<int64_t>(1, first.value().stats.iterations));
    EXPECT_EQ(DenseInvalidSegment(*setup.scene, setup.context.space, second.value().path), -1);
  }
}

TEST(Planner, SimplifyKeepsEveryEdgeValid) {
  SceneSetup setup(PassageScene(false));
  PlannerOptions options;
  options.simplify = false;
  auto raw = Plan(setup.context, std::vector<double>{-2.4, 0.0}, std::vector<double>{2.4, 0.0}, options, Termination{});
  ASSERT_TRUE(raw.ok() && raw.value().solved());
  std::vector<Configuration> path = raw.value().path;
  const double before = PathLength(setup.context.space, path);
  Rng rng(3);
  PlanStats stats;
  ASSERT_TRUE(SimplifyPath(setup.context, &path, rng, 200, Termination{}, &stats).ok());
  EXPECT_LE(PathLength(setup.context.space, path), before + 1e-12);
  EXPECT_EQ(path.front(), raw.value().path.front());
  EXPECT_EQ(path.back(), raw.value().path.back());
  EXPECT_GT(stats.motion_checks, 0);
  EXPECT_EQ(DenseInvalidSegment(*setup.scene, setup.context.space, path), -1);
}

// A validator that forwards to another and counts the batches (CheckMotions calls) and the segments
// checked one at a time (CheckMotion calls).
class CountingMotion final : public MotionValidator {
 public:
  explicit CountingMotion(const MotionValidator& inner) : inner_(inner) {}
  core::Result<MotionCheck> CheckMotion(std::span<const double> q0, std::span<const double> q1) const override {
    ++singles;
    return inner_.CheckMotion(q0, q1);
  }
  core::Result<std::vector<MotionCheck>> CheckMotions(std::span<const double> starts, std::span<const double> ends,
                                                      int32_t dof) const override {
    ++batches;
    largest = std::max<int64_t>(largest, static_cast<int64_t>(starts.size()) / dof);
    return MotionValidator::CheckMotions(starts, ends, dof);  // CheckMotion row by row (counted above)
  }
  bool certified() const override { return inner_.certified(); }
  std::string Describe() const override { return "counting " + inner_.Describe(); }
  mutable int64_t singles = 0, batches = 0, largest = 0;

 private:
  const MotionValidator& inner_;
};

// The simplifier proposes its shortcuts and vertex drops in batches (one call, one round trip to a
// remote validator, per batch), and the result keeps every edge valid.
TEST(Planner, SimplifyChecksItsShortcutsInBatches) {
  SceneSetup setup(PassageScene(false));
  PlannerOptions options;
  options.simplify = false;
  auto raw = Plan(setup.context, std::vector<double>{-2.4, 0.0}, std::vector<double>{2.4, 0.0}, options, Termination{});
  ASSERT_TRUE(raw.ok() && raw.value().solved());
  // The raw path with each edge cut in ten (points on valid edges): many waypoints, as a sampling
  // planner's paths have before simplification.
  std::vector<Configuration> dense{raw.value().path.front()};
  for (size_t k = 0; k + 1 < raw.value().path.size(); ++k) {
    for (int s = 1; s <= 10; ++s) {
      Configuration p(raw.value().path[k].size());
      setup.context.space.Interpolate(raw.value().path[k], raw.value().path[k + 1], s / 10.0, p);
      dense.push_back(p);
    }
  }
  for (uint64_t seed : {3u, 4u, 5u}) {
    std::vector<Configuration> path = dense;
    CountingMotion counting(*setup.context.motion);
    PlanningContext context = setup.context;
    context.motion = &counting;
    context.quick_motion = nullptr;
    context.shortcut_motion = nullptr;
    Rng rng(seed);
    PlanStats stats;
    ASSERT_TRUE(SimplifyPath(context, &path, rng, 200, Termination{}, &stats).ok());
    EXPECT_EQ(counting.singles, stats.motion_checks) << "every check went through a batch";
    EXPECT_GT(counting.largest, 1);
    EXPECT_LT(counting.batches * 2, counting.singles) << "batches of more than two on average";
    EXPECT_LE(PathLength(setup.context.space, path), PathLength(setup.context.space, dense) + 1e-12);
    EXPECT_LT(path.size(), dense.size() / 4);
    EXPECT_EQ(path.front(), raw.value().path.front());
    EXPECT_EQ(path.back(), raw.value().path.back());
    EXPECT_EQ(DenseInvalidSegment(*setup.scene, setup.context.space, path), -1) << "seed " << seed;
  }
}

// A quick check that passes every segment: everything it lets through is left to the decisive check.
class PassEverything final : public MotionValidator {
 public:
  core::Result<MotionCheck> CheckMotion(std::span<const double>, std::span<const double>) const override {
    MotionCheck out;
    out.valid = true;
    out.last_valid_t = 1.0;
    out.states = 0;
    return out;
  }
  bool certified() const override { return false; }
  std::string Describe() const override { return "pass everything"; }
};

TEST(Planner, SimplifyRecoversWhenTheQuickShortcutsFailCertification) {
  // With a quick check that passes everything, quick shortening collapses the path to the straight
  // start-goal edge through the block: certification rejects it (once: later attempts that produce it
  // again fail without a check), and the decisive shortening still returns a valid, shorter path.
  SceneSetup setup(PassageScene(false));
  PlannerOptions options;
  options.simplify = false;
  const std::vector<double> start{-2.4, 0.0}, goal{2.4, 0.0};
  auto raw = Plan(setup.context, start, goal, options, Termination{});
  ASSERT_TRUE(raw.ok() && raw.value().solved());
  const PassEverything pass;
  PlanningContext context = setup.context;
  context.quick_motion = &pass;
  context.shortcut_motion = &pass;
  MotionCheck direct;
  PROX_ASSERT_OK_AND_ASSIGN(direct, setup.motion.CheckMotion(start, goal));
  ASSERT_FALSE(direct.valid);
  std::vector<Configuration> path = raw.value().path;
  const double before = PathLength(setup.context.space, path);
  Rng rng(5);
  PlanStats stats;
  ASSERT_TRUE(SimplifyPath(context, &path, rng, 40, Termination{}, &stats).ok());
  EXPECT_EQ(stats.certification_failures, 1);
  EXPECT_LE(PathLength(setup.context.space, path), before + 1e-12);
  EXPECT_EQ(path.front(), start);
  EXPECT_EQ(path.back(), goal);
  EXPECT_EQ(DenseInvalidSegment(*setup.scene, setup.context.space, path), -1);
}

// Counts the calls it passes on.
class Counting final : public MotionValidator {
 public:
  explicit Counting(const MotionValidator* inner) : inner_(inner) {}
  core::Result<MotionCheck> CheckMotion(std::span<const double> a, std::span<const double> b) const override {
    ++calls;
    return inner_->CheckMotion(a, b);
  }
  bool certified() const override { return inner_->certified(); }
  std::string Describe() const override { return inner_->Describe(); }
  mutable std::atomic<int64_t> calls{0};

 private:
  const MotionValidator* inner_;
};

TEST(Planner, ShortcutsAreTriedByTheShortcutCheckThatKeepsAClearance) {
  SceneSetup setup(PassageScene(false));
  const SceneMotionValidator& shortcut = setup.planning.shortcut();
  EXPECT_NE(shortcut.Describe().find("clearance"), std::string::npos) << shortcut.Describe();
  // The shortcut check is the quick one with a clearance: it never passes what the quick one refuses,
  // and refuses some segments the quick one passes (those grazing the block or its neighbours).
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> q1(-3.0, 3.0), q2(-2.8, 2.8);
  int stricter = 0;
  for (int i = 0; i < 400; ++i) {
    const std::vector<double> a{q1(rng), q2(rng)}, b{q1(rng), q2(rng)};
    MotionCheck quick, kept;
    PROX_ASSERT_OK_AND_ASSIGN(quick, setup.planning.quick().CheckMotion(a, b));
    PROX_ASSERT_OK_AND_ASSIGN(kept, shortcut.CheckMotion(a, b));
    if (kept.valid) {
      EXPECT_TRUE(quick.valid) << "segment " << i;
    }
    stricter += quick.valid && !kept.valid;
  }
  EXPECT_GT(stricter, 0);
  // The simplifier asks the shortcut check, never the tree-growing one.
  PlannerOptions options;
  options.simplify = false;
  auto raw = Plan(setup.context, std::vector<double>{-2.4, 0.0}, std::vector<double>{2.4, 0.0}, options, Termination{});
  ASSERT_TRUE(raw.ok() && raw.value().solved());
  const Counting quick(&setup.planning.quick()), shortcuts(&shortcut);
  PlanningContext context = setup.context;
  context.quick_motion = &quick;
  context.shortcut_motion = &shortcuts;
  std::vector<Configuration> path = raw.value().path;
  Rng simplify_rng(3);
  PlanStats stats;
  ASSERT_TRUE(SimplifyPath(context, &path, simplify_rng, 100, Termination{}, &stats).ok());
  EXPECT_GT(shortcuts.calls.load(), 0);
  EXPECT_EQ(quick.calls.load(), 0);
  EXPECT_EQ(DenseInvalidSegment(*setup.scene, setup.context.space, path), -1);
}

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
