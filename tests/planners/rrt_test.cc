// The trees of RRT and RRT-Connect (rrt.cc): they grow in rounds of step chains.
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

}  // namespace
}  // namespace proximity::planners
