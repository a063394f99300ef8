// OMPL 1.5's own planners (RRTConnect, PRM) and path simplifier over our state validity and certified
// motion validation (proximity::planners_ompl), on real robots in real scenes: the proximityd default
// KR5 workcell (Debian dart-doc) and the MotionBenchMaker Panda problems (../shared/data). Every
// returned edge is re-checked by the core's certified CheckMotion and by a dense sampled reference
// (1e-3 rad steps, exact CLEAR); lastValid is checked against the dense reference; OMPL's
// DiscreteMotionValidator at a coarse resolution misses a constructed thin obstacle that ours catches.
#include <gtest/gtest.h>

#include <ompl/base/DiscreteMotionValidator.h>
#include <ompl/base/ProblemDefinition.h>
#include <ompl/base/objectives/PathLengthOptimizationObjective.h>
#include <ompl/geometric/PathSimplifier.h>
#include <ompl/geometric/planners/prm/PRM.h>
#include <ompl/geometric/planners/rrt/RRTConnect.h>
#include <ompl/util/Console.h>
#include <ompl/util/RandomNumbers.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "proximity/mbm/mbm.h"
#include "proximity/planners/ompl_adapter.h"
#include "proximity/planners/planner.h"
#include "proximity/planners/scene_validity.h"
#include "proximity/default_scene/default_scene.h"

namespace proximity::planners {
namespace {

namespace ob = ompl::base;
namespace og = ompl::geometric;

// OMPL's seed may be set once per process, before any of its random generators exists.
[[maybe_unused]] const bool kOmplSeeded = [] {
  ompl::msg::setLogLevel(ompl::msg::LOG_WARN);
  ompl::RNG::setSeed(20240611);
  return true;
}();

std::shared_ptr<const core::Scene> BuildScene(core::SceneDescription d) {
  auto scene = core::Scene::Build(std::move(d));
  EXPECT_TRUE(scene.ok()) << scene.error().message;
  return scene.ok() ? scene.value() : nullptr;
}

std::shared_ptr<const core::Scene> DefaultKr5Scene() {
  auto d = scenes::DefaultSceneDescription();
  EXPECT_TRUE(d.ok()) << d.error().message;
  return d.ok() ? BuildScene(std::move(d).value()) : nullptr;
}

bool Clear(const core::Scene& scene, const Configuration& q, core::SceneCache* cache) {
  core::StateResult r;
  r = testing::ValueOrFail(scene.CheckState(q, cache));
  return r.free && r.within_limits;
}

Configuration RandomValid(const core::Scene& scene, const JointSpace& space, Rng& rng, core::SceneCache* cache) {
  Configuration q(static_cast<size_t>(space.dof()));
  for (int i = 0; i < 100000; ++i) {
    space.Sample(rng, q);
    if (Clear(scene, q, cache)) return q;
  }
  ADD_FAILURE() << "no valid state in 100,000 samples";
  return q;
}

// A start and a goal, both valid, whose straight motion collides: the planner has to go around.
std::pair<Configuration, Configuration> DetourQuery(const core::Scene& scene, const JointSpace& space, Rng& rng) {
  core::SceneCache cache;
  for (int i = 0; i < 10000; ++i) {
    Configuration a = RandomValid(scene, space, rng, &cache), b = RandomValid(scene, space, rng, &cache);
    core::MotionResult m;
    m = testing::ValueOrFail(scene.CheckMotion(a, b, {}, &cache));
    if (!m.free && space.Distance(a, b) > 1.0) return {a, b};
  }
  ADD_FAILURE() << "no start and goal with a colliding straight motion";
  return {};
}

// Every waypoint valid; every edge free by the core's certified check and by the dense reference.
void ExpectPathFree(const core::Scene& scene, const std::vector<Configuration>& path, const std::string& what,
                    int* edges_checked) {
  core::SceneCache cache;
  for (size_t i = 0; i < path.size(); ++i) EXPECT_TRUE(Clear(scene, path[i], &cache)) << what << ": waypoint " << i;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    core::MotionResult m;
    PROX_ASSERT_OK_AND_ASSIGN(m, scene.CheckMotion(path[i], path[i + 1], {}, &cache));
    EXPECT_TRUE(m.free) << what << ": edge " << i << " collides at t in [" << m.t_free << ", " << m.t_collide << "]";
    const double dense = core::DenseFirstCollision(scene, path[i], path[i + 1], &cache);
    EXPECT_EQ(dense, -1.0) << what << ": edge " << i << " collides in the dense check at t = " << dense;
    ++*edges_checked;
  }
}

void ExpectSame(const Configuration& a, const Configuration& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_DOUBLE_EQ(a[i], b[i]) << what << ": coordinate " << i;
}

void ExpectNear(const Configuration& a, const Configuration& b, double tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << what << ": coordinate " << i;
}

struct Solution {
  bool solved = false;
  std::vector<Configuration> raw, simplified;
};

// Solves start -> goal with `planner`, stopping at the first solution (PRM too: any finite cost
// satisfies the objective), then simplifies the path with OMPL's PathSimplifier.
Solution Solve(const OmplSetup& setup, const ob::PlannerPtr& planner, const Configuration& start,
               const Configuration& goal) {
  auto pdef = std::make_shared<ob::ProblemDefinition>(setup.si);
  ob::State* s = setup.NewState(start);
  ob::State* g = setup.NewState(goal);
  pdef->setStartAndGoalStates(s, g);
  setup.si->freeState(s);
  setup.si->freeState(g);
  auto objective = std::make_shared<ob::PathLengthOptimizationObjective>(setup.si);
  objective->setCostThreshold(ob::Cost(std::numeric_limits<double>::infinity()));
  pdef->setOptimizationObjective(objective);
  planner->setProblemDefinition(pdef);
  planner->setup();
  const ob::PlannerStatus status = planner->solve(ob::timedPlannerTerminationCondition(120.0));
  Solution out;
  out.solved = status == ob::PlannerStatus::EXACT_SOLUTION;
  if (!out.solved) return out;
  auto* path = pdef->getSolutionPath()->as<og::PathGeometric>();
  out.raw = setup.layout->PathConfigurations(*path);
  og::PathSimplifier simplifier(setup.si);
  simplifier.simplifyMax(*path);
  EXPECT_TRUE(path->check()) << "OMPL's own check of the simplified path (our checkers) fails";
  out.simplified = setup.layout->PathConfigurations(*path);
  return out;
}

TEST(OmplAdapter, RrtConnectAndPrmSolveTheDefaultSceneWithCertifiedEdges) {
  PROX_REQUIRE_DIR(testing::DartUrdfDir(), "Debian dart-doc's URDF folder (the default scene's KR5)");
  auto scene = DefaultKr5Scene();
  ASSERT_NE(scene, nullptr);
  // Both motion requests: the tight default, and the planners' (a sampled pre-pass, no narrowing).
  for (const bool planning : {false, true}) {
    const char* request_name = planning ? "planning request" : "default request";
    SCOPED_TRACE(request_name);
    auto made = MakeOmplSetup(scene, planning ? PlanningMotionRequest() : core::MotionRequest{});
    ASSERT_TRUE(made.ok()) << made.error().message;
    const OmplSetup& setup = made.value();
    ASSERT_EQ(setup.si->getMotionValidator(), setup.motion_validator);
    ASSERT_EQ(setup.si->getStateValidityChecker(), setup.state_checker);
    const JointSpace& space = setup.layout->space();
    EXPECT_TRUE(setup.layout->flat());
    EXPECT_NEAR(setup.si->getMaximumExtent(), space.MaxExtent(), 1e-12);

    Rng rng(7);
    int edges = 0;
    // One query under a sanitizer, whose job is memory and threading faults, not repeating cases.
    const int queries = testing::kSanitizedSlowdown == 1 ? 3 : 1;
    for (int query = 0; query < queries; ++query) {
      const auto [start, goal] = DetourQuery(*scene, space, rng);
      ASSERT_FALSE(start.empty());
      // The dense reference sees the collision the planner has to avoid: it can fail a path.
      core::SceneCache cache;
      ASSERT_GE(core::DenseFirstCollision(*scene, start, goal, &cache), 0.0);
      for (const char* name : {"RRTConnect", "PRM"}) {
        const std::string what = std::string(name) + " query " + std::to_string(query) + ", " + request_name;
        SCOPED_TRACE(what);
        ob::PlannerPtr planner;
        if (std::string(name) == "RRTConnect") {
          planner = std::make_shared<og::RRTConnect>(setup.si);
        } else {
          planner = std::make_shared<og::PRM>(setup.si);
        }
        const unsigned int before = setup.motion_validator->getCheckedMotionCount();
        const Solution sol = Solve(setup, planner, start, goal);
        ASSERT_TRUE(sol.solved);
        EXPECT_GT(setup.motion_validator->getCheckedMotionCount(), before) << "OMPL did not use our motion validator";
        ASSERT_GE(sol.raw.size(), 3u) << "the straight motion collides, so the path needs a waypoint";
        ExpectSame(sol.raw.front(), start, what + " first waypoint");
        ExpectSame(sol.raw.back(), goal, what + " last waypoint");
        ExpectSame(sol.simplified.front(), start, what + " simplified first waypoint");
        ExpectSame(sol.simplified.back(), goal, what + " simplified last waypoint");
        ExpectPathFree(*scene, sol.raw, what + " raw", &edges);
        ExpectPathFree(*scene, sol.simplified, what + " simplified", &edges);
        std::printf("[ %s ] raw %zu waypoints (length %.3f), simplified %zu (length %.3f)\n", what.c_str(),
                    sol.raw.size(), PathLength(space, sol.raw), sol.simplified.size(),
                    PathLength(space, sol.simplified));
      }
    }
    EXPECT_TRUE(setup.status().ok()) << setup.status().ToString();
    std::printf("[ default scene, %s ] %d path edges re-checked (certified and dense): 0 invalid; %u motions "
                "checked by OMPL through the adapter (%u valid), %ld states posed, %ld state checks\n",
                request_name, edges, setup.motion_validator->getCheckedMotionCount(),
                setup.motion_validator->getValidMotionCount(), static_cast<long>(setup.motion_validator->states()),
                static_cast<long>(setup.state_checker->checks()));
  }
}

TEST(OmplAdapter, RrtConnectSolvesMotionBenchMakerPandaProblems) {
  const std::string shared = testing::SharedDataDir();
  PROX_REQUIRE_DIR(shared.empty() ? "" : shared + "/scenes/mbm/problems/panda", "scenes/mbm/problems/panda");
  auto robot = core::LoadMbmPanda();
  ASSERT_NE(robot, nullptr);
  auto problems = mbm::LoadMbmProblems(shared + "/scenes/mbm/problems/panda");
  ASSERT_TRUE(problems.ok()) << problems.error().message;
  int solved = 0, edges = 0, family = 0;
  const int families = testing::Cases(7);  // four under a sanitizer
  const auto maps = core::SelfClearanceMaps::For(robot);  // shared by the problems' scenes
  std::string last_family;
  for (const mbm::MbmProblem& p : problems.value()) {
    if (p.family == last_family) continue;  // the first problem of each family
    last_family = p.family;
    if (++family > families) break;
    SCOPED_TRACE(p.name);
    auto d = mbm::MbmSceneDescription(p.scene, robot);
    ASSERT_TRUE(d.ok()) << d.error().message;
    d.value().self_clearance_maps = maps;
    auto scene = BuildScene(std::move(d).value());
    ASSERT_NE(scene, nullptr);
    auto start = mbm::MbmStartConfiguration(p.request, *robot);
    auto goal = mbm::MbmGoalConfiguration(p.request, *robot);
    ASSERT_TRUE(start.ok() && goal.ok());
    // The planners' certified request (the tight default one is exercised on the default scene).
    auto made = MakeOmplSetup(scene, PlanningMotionRequest());
    ASSERT_TRUE(made.ok()) << made.error().message;
    const Solution sol = Solve(made.value(), std::make_shared<og::RRTConnect>(made.value().si), start.value(),
                               goal.value());
    ASSERT_TRUE(sol.solved) << p.name;
    ++solved;
    ExpectSame(sol.raw.front(), start.value(), p.name + " start");
    ExpectSame(sol.raw.back(), goal.value(), p.name + " goal");
    ExpectPathFree(*scene, sol.raw, p.name + " raw", &edges);
    ExpectPathFree(*scene, sol.simplified, p.name + " simplified", &edges);
    EXPECT_TRUE(made.value().status().ok()) << made.value().status().ToString();
  }
  EXPECT_EQ(solved, families);
  std::printf("[ mbm panda ] %d problems (one per family) solved by OMPL RRTConnect, %d edges re-checked: 0 invalid\n",
              solved, edges);
}

// The last-valid variant: on colliding edges, lastValid.second is our certified t_free: at most the
// dense reference's first colliding t, and close before the first collision found (the dense one, or
// the core's colliding witness when the dense steps pass over a graze). Close means within
// kLastValidTolerance of joint-space travel: the certified walk stops refining once it holds a
// collision and its open segments are narrower than 2^-10 of the edge, which can leave it at a near
// contact a little ahead of the collision. lastValid.first is that state, interpolated by OMPL's
// space, and CLEAR. On free edges lastValid is untouched; OMPL's valid / invalid counters tally like
// the answers.
constexpr double kLastValidTolerance = 0.05;  // rad of joint-space travel

TEST(OmplAdapter, LastValidIsClearAndJustBeforeTheFirstCollision) {
  PROX_REQUIRE_DIR(testing::DartUrdfDir(), "Debian dart-doc's URDF folder (the default scene's KR5)");
  auto scene = DefaultKr5Scene();
  ASSERT_NE(scene, nullptr);
  auto made = MakeOmplSetup(scene);
  ASSERT_TRUE(made.ok()) << made.error().message;
  const OmplSetup& setup = made.value();
  const SceneMotionValidator direct(scene, core::MotionRequest{});
  std::mt19937_64 rng(99);
  core::SceneCache cache;
  const int n = testing::Cases(500);
  int colliding = 0, free_edges = 0, dense_missed = 0;
  double worst_gap = 0.0;
  ob::State* last = setup.si->allocState();
  Configuration q_last(static_cast<size_t>(setup.layout->dof()));
  for (int e = 0; e < n; ++e) {
    auto [q0, q1] = core::RandomEdge(rng, *scene, &cache);
    // Longer edges than a planner's, so that many collide.
    q1 = core::Along(q0, q1, 1.5);
    setup.layout->space().Normalize(q1);
    for (size_t i = 0; i < q1.size(); ++i) {
      q1[i] = std::clamp(q1[i], setup.layout->space().lower()[i], setup.layout->space().upper()[i]);
    }
    ob::State* s0 = setup.NewState(q0);
    ob::State* s1 = setup.NewState(q1);
    std::pair<ob::State*, double> last_valid(last, -7.0);
    const bool valid = setup.motion_validator->checkMotion(s0, s1, last_valid);
    EXPECT_EQ(setup.motion_validator->checkMotion(s0, s1), valid) << "edge " << e;
    MotionCheck reference;
    PROX_ASSERT_OK_AND_ASSIGN(reference, direct.CheckMotion(q0, q1));
    EXPECT_EQ(valid, reference.valid) << "edge " << e;
    const double dense = core::DenseFirstCollision(*scene, q0, q1, &cache);
    if (valid) {
      ++free_edges;
      EXPECT_EQ(dense, -1.0) << "edge " << e << ": free by the adapter, the dense check collides at t = " << dense;
      EXPECT_EQ(last_valid.second, -7.0) << "edge " << e << ": lastValid changed on a valid motion";
    } else {
      ++colliding;
      EXPECT_EQ(last_valid.second, reference.last_valid_t) << "edge " << e;
      setup.layout->ToConfiguration(last, q_last);
      // OMPL interpolates in its own arithmetic: the same state up to rounding.
      ExpectNear(q_last, core::Along(q0, q1, last_valid.second), 1e-12,
                 "edge " + std::to_string(e) + " lastValid state");
      EXPECT_TRUE(Clear(*scene, q_last, &cache)) << "edge " << e << ": lastValid state at t = " << last_valid.second
                                                 << " is not CLEAR";
      // The core's collision witness: the state at t_collide collides (the dense scan, whose steps can
      // step over a graze, may only see a later contact).
      core::MotionResult m;
      PROX_ASSERT_OK_AND_ASSIGN(m, scene->CheckMotion(q0, q1, {}, &cache));
      EXPECT_FALSE(m.free);
      EXPECT_FALSE(Clear(*scene, core::Along(q0, q1, m.t_collide), &cache)) << "edge " << e << ": no collision at t_collide";
      double span = 0.0;
      for (size_t i = 0; i < q0.size(); ++i) span = std::max(span, std::abs(q1[i] - q0[i]));
      const double dense_step = 1.0 / std::max(1.0, std::ceil(span / 1e-3));
      if (dense >= 0.0) {
        EXPECT_LE(last_valid.second, dense) << "edge " << e << ": lastValid past the dense first collision";
      }
      dense_missed += dense < 0.0 || dense > m.t_collide + dense_step;
      const double first = dense >= 0.0 ? std::min(dense, m.t_collide) : m.t_collide;
      const double gap = (first - last_valid.second) * setup.layout->space().Distance(q0, q1);
      EXPECT_LE(gap, kLastValidTolerance) << "edge " << e << ": lastValid t = " << last_valid.second
                                          << " is far before the first collision found, t = " << first;
      worst_gap = std::max(worst_gap, gap);
      last_valid.second = -7.0;
    }
    setup.si->freeState(s0);
    setup.si->freeState(s1);
  }
  setup.si->freeState(last);
  EXPECT_GT(colliding, n / 10) << "too few colliding edges to test lastValid";
  EXPECT_GT(free_edges, n / 10);
  EXPECT_EQ(setup.motion_validator->getValidMotionCount(), 2u * static_cast<unsigned>(free_edges));
  EXPECT_EQ(setup.motion_validator->getInvalidMotionCount(), 2u * static_cast<unsigned>(colliding));
  std::printf("[ lastValid ] %d edges: %d colliding, %d free; largest gap lastValid -> first collision %.5f rad; the "
              "dense scan stepped over the first contact on %d edges\n",
              n, colliding, free_edges, worst_gap, dense_missed);
}

// A thin bar carried by the last link sweeps through a 5 mm ball halfway along a 1.5 rad swing of the
// joint that turns it. OMPL's DiscreteMotionValidator at a coarse resolution (three segments, states
// at t = 1/3 and 2/3) steps over the ball; our certified validator does not.
TEST(OmplAdapter, DiscreteMotionValidatorMissesAThinObstacleThatOursCatches) {
  PROX_REQUIRE_DIR(testing::DartUrdfDir(), "Debian dart-doc's URDF folder (the default scene's KR5)");
  auto base = scenes::DefaultSceneDescription();
  ASSERT_TRUE(base.ok()) << base.error().message;
  const core::RobotModel& robot = *base.value().robot;
  const int32_t tip = robot.num_links() - 1;
  const Configuration home = robot.DefaultConfiguration();
  std::vector<core::RigidTransform> X0, X1;
  PROX_ASSERT_OK_AND_ASSIGN(X0, robot.ForwardKinematics(home));
  // The last joint that turns the tip link, and the bar direction (in the tip frame) it swings most.
  int joint = -1;
  core::Vec3 dir = core::Vec3::UnitX();
  for (int j = robot.num_positions() - 1; j >= 0 && joint < 0; --j) {
    Configuration moved = home;
    moved[static_cast<size_t>(j)] += 0.3;
    PROX_ASSERT_OK_AND_ASSIGN(X1, robot.ForwardKinematics(moved));
    if (X1[tip].R.isApprox(X0[tip].R, 1e-6)) continue;
    joint = j;
    double best = -1.0;
    for (int axis = 0; axis < 3; ++axis) {
      const core::Vec3 d = core::Vec3::Unit(axis);
      const double swing = ((X1[tip] * d) - (X0[tip] * d)).norm() - (X1[tip].p - X0[tip].p).norm();
      if (swing > best) best = swing, dir = d;
    }
  }
  ASSERT_GE(joint, 0);
  core::SceneDescription with_tool = base.value();
  core::AttachedObject tool;
  tool.id = "tool";
  tool.link = robot.link(tip).name;
  core::AttachedPart bar;
  bar.geometry.shape = core::Box{0.2 * dir + 0.01 * (core::Vec3::Ones() - dir)};
  bar.X_LG.p = 0.25 * dir;
  tool.parts.push_back(bar);
  with_tool.attached.push_back(tool);
  auto tool_scene = BuildScene(with_tool);
  ASSERT_NE(tool_scene, nullptr);

  std::mt19937_64 rng(47);
  core::SceneCache cache;
  int caught = 0;
  for (int attempt = 0; attempt < 400 && caught < 3; ++attempt) {
    auto [q0, unused] = core::RandomEdge(rng, *tool_scene, &cache);
    Configuration q1 = q0;
    const double lo = robot.lower_limits()[static_cast<size_t>(joint)];
    const double hi = robot.upper_limits()[static_cast<size_t>(joint)];
    const double qj = q0[static_cast<size_t>(joint)];
    q1[static_cast<size_t>(joint)] = qj + 1.5 <= hi ? qj + 1.5 : qj - 1.5;
    if (q1[static_cast<size_t>(joint)] < lo) continue;
    core::MotionResult m;
    PROX_ASSERT_OK_AND_ASSIGN(m, tool_scene->CheckMotion(q0, q1, {}, &cache));
    if (!m.free) continue;
    // The ball where the bar's tip is halfway along.
    std::vector<core::RigidTransform> X_half;
    PROX_ASSERT_OK_AND_ASSIGN(X_half, robot.ForwardKinematics(core::Along(q0, q1, 0.5), with_tool.X_WB));
    core::SceneDescription with_ball = with_tool;
    core::ObjectPart ball;
    ball.geometry.shape = core::Sphere{core::Vec3::Zero(), 0.005};
    ball.X_WG.p = X_half[tip] * (0.445 * dir);
    with_ball.objects.push_back({"ball", {ball}});
    auto scene = BuildScene(with_ball);
    ASSERT_NE(scene, nullptr);
    // The construction holds: the ball is hit halfway and clear of the states OMPL's coarse check
    // poses. (The robot may pass through the ball elsewhere too; such attempts are skipped.)
    if (Clear(*scene, core::Along(q0, q1, 0.5), &cache)) continue;
    if (!Clear(*scene, core::Along(q0, q1, 1.0 / 3), &cache) || !Clear(*scene, core::Along(q0, q1, 2.0 / 3), &cache) ||
        !Clear(*scene, q1, &cache)) {
      continue;
    }
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    const double dense = core::DenseFirstCollision(*scene, q0, q1, &cache);
    ASSERT_GE(dense, 0.0);

    auto ours = MakeOmplSetup(scene);
    ASSERT_TRUE(ours.ok()) << ours.error().message;
    // OMPL's own validator on the same states: our state checker, OMPL's DiscreteMotionValidator at a
    // resolution of 0.6 rad (ceil(1.5 / 0.6) = 3 segments).
    auto space = ours.value().layout->MakeStateSpace();
    auto si = std::make_shared<ob::SpaceInformation>(space);
    si->setStateValidityChecker(std::make_shared<OmplStateValidityChecker>(
        si.get(), ours.value().layout, std::make_shared<const SceneStateValidity>(scene)));
    si->setMotionValidator(std::make_shared<ob::DiscreteMotionValidator>(si));
    si->setStateValidityCheckingResolution(0.6 / space->getMaximumExtent());
    si->setup();
    ob::State* s0 = ours.value().NewState(q0);
    ob::State* s1 = ours.value().NewState(q1);
    ASSERT_EQ(space->validSegmentCount(s0, s1), 3u);
    EXPECT_TRUE(si->checkMotion(s0, s1)) << "OMPL's discrete check should step over the ball";
    EXPECT_FALSE(ours.value().si->checkMotion(s0, s1)) << "the certified check misses the ball at t = " << dense;
    std::pair<ob::State*, double> last_valid(nullptr, -1.0);
    EXPECT_FALSE(ours.value().motion_validator->checkMotion(s0, s1, last_valid));
    EXPECT_GE(last_valid.second, 0.0);
    EXPECT_LE(last_valid.second, dense);
    EXPECT_TRUE(Clear(*scene, core::Along(q0, q1, last_valid.second), &cache));
    ours.value().si->freeState(s0);
    ours.value().si->freeState(s1);
    std::printf("[ thin obstacle ] attempt %d: joint %d swings 1.5 rad; dense first contact t = %.4f, ours "
                "lastValid t = %.4f; OMPL discrete (3 segments) says valid\n",
                attempt, joint, dense, last_valid.second);
    ++caught;
  }
  EXPECT_EQ(caught, 3) << "the construction did not come together often enough";
}

// Continuous joints: a compound of per-joint RealVector and SO2 components. States map to and from
// configurations, the validator is asked about exactly the segment OMPL interpolates (the shorter way
// round), and failures of our interfaces surface as "invalid" plus a recorded error.
class RecordingStateValidity final : public StateValidityChecker {
 public:
  core::Result<bool> IsValid(std::span<const double> q) const override {
    if (q[0] > 0.9) return core::InvalidArgument("coordinate 0 above 0.9");
    return q[1] > 0.0;
  }
};

class RecordingMotionValidator final : public MotionValidator {
 public:
  core::Result<MotionCheck> CheckMotion(std::span<const double> q0, std::span<const double> q1) const override {
    std::lock_guard lock(mutex_);
    last_q0.assign(q0.begin(), q0.end());
    last_q1.assign(q1.begin(), q1.end());
    MotionCheck out;
    out.valid = false;
    out.last_valid_t = 0.25;
    out.states = 3;
    return out;
  }
  bool certified() const override { return true; }
  std::string Describe() const override { return "recording"; }
  mutable std::mutex mutex_;
  mutable Configuration last_q0, last_q1;
};

TEST(OmplAdapter, WrappingJointsUseSo2AndTheSegmentOmplInterpolates) {
  auto space = JointSpace::Create({-1.0, -2.0, 0.0}, {1.0, 2.0, 0.0}, {false, false, true});
  ASSERT_TRUE(space.ok()) << space.error().message;
  auto motion = std::make_shared<RecordingMotionValidator>();
  auto made = MakeOmplSetup(space.value(), std::make_shared<RecordingStateValidity>(), motion);
  ASSERT_TRUE(made.ok()) << made.error().message;
  const OmplSetup& setup = made.value();
  EXPECT_FALSE(setup.layout->flat());
  const auto* compound = dynamic_cast<const ob::CompoundStateSpace*>(setup.si->getStateSpace().get());
  ASSERT_NE(compound, nullptr);
  EXPECT_EQ(compound->getSubspaceCount(), 3u);

  const double pi = std::numbers::pi;
  Rng rng(3);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Configuration a(3), b(3), x(3);
  ob::State* state = setup.si->allocState();
  for (int k = 0; k < 200; ++k) {
    a = {u(rng), 2.0 * u(rng), pi * u(rng)};
    b = {u(rng), 2.0 * u(rng), pi * u(rng)};
    ob::State* s0 = setup.NewState(a);
    ob::State* s1 = setup.NewState(b);
    setup.layout->ToConfiguration(s0, x);
    ExpectSame(x, a, "round trip");
    std::pair<ob::State*, double> last_valid(state, 0.0);
    EXPECT_FALSE(setup.motion_validator->checkMotion(s0, s1, last_valid));
    EXPECT_EQ(last_valid.second, 0.25);
    // The validator saw q0 -> q0 + the shorter way round; OMPL's interpolation lies on that segment.
    ExpectSame(motion->last_q0, a, "q0");
    const double d = motion->last_q1[2] - a[2];
    EXPECT_LE(std::abs(d), pi + 1e-12);
    double wrapped = std::remainder(b[2] - a[2], 2.0 * pi);
    EXPECT_NEAR(d, wrapped, 1e-12);
    for (double t : {0.1, 0.5, 0.9}) {
      setup.si->getStateSpace()->interpolate(s0, s1, t, state);
      setup.layout->ToConfiguration(state, x);
      for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(x[i], a[i] + t * (b[i] - a[i]), 1e-12);
      EXPECT_NEAR(std::remainder(x[2] - (a[2] + t * d), 2.0 * pi), 0.0, 1e-12) << "t = " << t;
    }
    setup.si->freeState(s0);
    setup.si->freeState(s1);
  }
  // Validity: q[1] > 0; q[0] > 0.9 is an error, answered "invalid" and recorded.
  setup.layout->FromConfiguration(Configuration{0.0, 0.5, 3.0 * pi}, state);
  setup.layout->ToConfiguration(state, x);
  EXPECT_NEAR(std::abs(x[2]), pi, 1e-12) << "wrapping coordinates come back in [-pi, pi]";
  EXPECT_TRUE(setup.si->isValid(state));
  setup.layout->FromConfiguration(Configuration{0.0, -0.5, 0.0}, state);
  EXPECT_FALSE(setup.si->isValid(state));
  EXPECT_TRUE(setup.status().ok());
  setup.layout->FromConfiguration(Configuration{0.95, 0.5, 0.0}, state);
  EXPECT_FALSE(setup.si->isValid(state));
  EXPECT_EQ(setup.state_checker->errors(), 1);
  EXPECT_FALSE(setup.status().ok());
  EXPECT_NE(setup.status().error().message.find("above 0.9"), std::string::npos) << setup.status().ToString();
  setup.si->freeState(state);
}

TEST(OmplAdapter, NullCheckersAreRejected) {
  auto space = JointSpace::Create({-1.0}, {1.0}, {false});
  ASSERT_TRUE(space.ok());
  auto no_state = MakeOmplSetup(space.value(), nullptr, std::make_shared<RecordingMotionValidator>());
  ASSERT_FALSE(no_state.ok());
  EXPECT_NE(no_state.error().message.find("state validity checker is null"), std::string::npos);
  auto no_motion = MakeOmplSetup(space.value(), std::make_shared<RecordingStateValidity>(), nullptr);
  ASSERT_FALSE(no_motion.ok());
  EXPECT_NE(no_motion.error().message.find("motion validator is null"), std::string::npos);
  auto no_scene = MakeOmplSetup(std::shared_ptr<const core::Scene>());
  EXPECT_FALSE(no_scene.ok());
}

}  // namespace
}  // namespace proximity::planners
