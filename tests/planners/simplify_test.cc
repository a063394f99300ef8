// Certified shortcutting (simplify.cc): every edge stays valid, shortcuts are checked in batches, a quick
// shortcut that fails certification is recovered from, and the shortcut check keeps its clearance.
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

// A validator that forwards to another, counts its batches (CheckMotions calls) and says its calls are
// round trips or not, as asked.
class RoundTrips final : public MotionValidator {
 public:
  RoundTrips(const MotionValidator& inner, bool round_trips) : inner_(inner), round_trips_(round_trips) {}
  core::Result<MotionCheck> CheckMotion(std::span<const double> q0, std::span<const double> q1) const override {
    return inner_.CheckMotion(q0, q1);
  }
  core::Result<std::vector<MotionCheck>> CheckMotions(std::span<const double> starts, std::span<const double> ends,
                                                      int32_t dof) const override {
    ++batches;
    return inner_.CheckMotions(starts, ends, dof);
  }
  bool certified() const override { return inner_.certified(); }
  bool calls_are_round_trips() const override { return round_trips_; }
  std::string Describe() const override { return "round trips " + inner_.Describe(); }
  mutable int64_t batches = 0;

 private:
  const MotionValidator& inner_;
  bool round_trips_;
};

// When the quick check's calls are round trips, a vertex reduction checks every pair of a short path's
// waypoints in one call instead of one call a pass: the same simplified path in fewer calls.
TEST(Planner, VertexReductionOverRoundTripsAsksOnceForTheSamePath) {
  SceneSetup setup(PassageScene(false));
  PlannerOptions options;
  options.simplify = false;
  int fewer = 0;
  for (uint64_t seed : {3u, 4u, 5u, 6u, 7u, 8u}) {
    options.seed = seed;
    auto raw = Plan(setup.context, std::vector<double>{-2.4, 0.0}, std::vector<double>{2.4, 0.0}, options,
                    Termination{});
    ASSERT_TRUE(raw.ok() && raw.value().solved());
    // Each raw edge cut in equal pieces (points on certified edges), up to 10 waypoints in all (one
    // call's table): several passes to drop them.
    const size_t edges = raw.value().path.size() - 1;
    const int pieces = static_cast<int>(std::max<size_t>(1, 9 / edges));
    std::vector<Configuration> path{raw.value().path.front()};
    for (size_t k = 0; k < edges; ++k) {
      for (int s = 1; s <= pieces; ++s) {
        Configuration p(raw.value().path[k].size());
        setup.context.space.Interpolate(raw.value().path[k], raw.value().path[k + 1], s / double(pieces), p);
        path.push_back(p);
      }
    }
    std::vector<Configuration> results[2];
    int64_t batches[2] = {0, 0};
    for (const bool round_trips : {false, true}) {
      RoundTrips quick(*setup.context.quick_motion, round_trips);
      PlanningContext context = setup.context;
      context.quick_motion = &quick;
      context.shortcut_motion = nullptr;
      results[round_trips] = path;
      Rng rng(seed);
      ASSERT_TRUE(SimplifyPath(context, &results[round_trips], rng, 20, Termination{}, nullptr).ok());
      batches[round_trips] = quick.batches;
    }
    EXPECT_EQ(results[1], results[0]) << "seed " << seed;
    EXPECT_LE(batches[1], batches[0]) << "seed " << seed;
    fewer += batches[1] < batches[0];
    EXPECT_EQ(DenseInvalidSegment(*setup.scene, setup.context.space, results[1]), -1) << "seed " << seed;
  }
  EXPECT_GE(fewer, 3) << "the table should save calls on most paths";
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

}  // namespace
}  // namespace proximity::planners
