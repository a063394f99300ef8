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
// to its first invalid step; a chain whose prerequisite did not end complete skipped): an oracle for
// CheckStepsUntilInvalid's batch default. Records the most chains one call asked.
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
                                                               std::span<const int32_t> after,
                                                               int32_t dof) const override {
    if (core::Status s = CheckStepChains(states, starts, ends, chains, after, dof); !s.ok()) return s.error();
    ++calls;
    largest_round = std::max<int64_t>(largest_round, static_cast<int64_t>(chains.size()));
    const auto d = static_cast<size_t>(dof);
    std::vector<StepChecks> out(chains.size());
    size_t k = 0;
    for (size_t c = 0; c < chains.size(); ++c) {
      if (!after.empty() && after[c] >= 0) {
        const size_t p = static_cast<size_t>(after[c]);
        if (out[p].skipped || out[p].valid_steps < static_cast<size_t>(chains[p])) {
          out[c].skipped = true;
          k += static_cast<size_t>(chains[c]);
          continue;
        }
      }
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

// CheckStepsUntilInvalid's default with prerequisites (`after`): the chains decided in waves give the
// answers of deciding them step by step in order, a chain skipped exactly when its prerequisite did not
// end complete; malformed prerequisites are refused by name.
TEST(Planner, StepChainsAfterOthersAnswerAsStepByStep) {
  SceneSetup setup(PassageScene(false));
  const MotionValidator& batched = *setup.context.quick_motion;
  const StepByStep step_by_step(&batched);
  const JointSpace& space = setup.context.space;
  const auto dof = static_cast<size_t>(space.dof());
  Rng rng(23);
  int skipped = 0, decided = 0, complete = 0;
  for (int batch = 0; batch < 40; ++batch) {
    std::vector<double> states, starts, ends;
    std::vector<int32_t> chains, after;
    const int count = 1 + batch % 12;
    for (int c = 0; c < count; ++c) {
      Configuration from(dof), to(dof);
      space.Sample(rng, from);
      const int32_t steps = 1 + static_cast<int32_t>(rng() % 3);
      for (int32_t k = 0; k < steps; ++k) {
        space.Sample(rng, to);
        space.Interpolate(from, to, 0.3, to);
        states.insert(states.end(), to.begin(), to.end());
        starts.insert(starts.end(), from.begin(), from.end());
        ends.insert(ends.end(), to.begin(), to.end());
        from = to;
      }
      chains.push_back(steps);
      after.push_back(c == 0 || rng() % 3 == 0 ? -1 : static_cast<int32_t>(rng() % static_cast<uint64_t>(c)));
    }
    const std::vector<StepChecks> want = proximity::testing::ValueOrFail(
        step_by_step.CheckStepsUntilInvalid(*setup.context.state, states, starts, ends, chains, after, space.dof()));
    const std::vector<StepChecks> got = proximity::testing::ValueOrFail(
        batched.CheckStepsUntilInvalid(*setup.context.state, states, starts, ends, chains, after, space.dof()));
    ASSERT_EQ(got.size(), want.size());
    for (size_t c = 0; c < want.size(); ++c) {
      const std::string where = "batch " + std::to_string(batch) + " chain " + std::to_string(c);
      EXPECT_EQ(got[c].skipped, want[c].skipped) << where;
      EXPECT_EQ(got[c].valid_steps, want[c].valid_steps) << where;
      ASSERT_EQ(got[c].motions.size(), want[c].motions.size()) << where;
      for (size_t m = 0; m < want[c].motions.size(); ++m) {
        EXPECT_EQ(got[c].motions[m].valid, want[c].motions[m].valid) << where;
        EXPECT_EQ(got[c].motions[m].last_valid_t, want[c].motions[m].last_valid_t) << where;
      }
      if (want[c].skipped) {
        EXPECT_EQ(got[c].state_checks, 0) << where;
        ++skipped;
      } else {
        ++decided;
        complete += want[c].valid_steps == static_cast<size_t>(chains[c]);
      }
    }
  }
  EXPECT_GT(skipped, 10);
  EXPECT_GT(complete, 10);
  EXPECT_GT(decided - complete, 10);
  // A prerequisite that is not an earlier chain, and one too few.
  const Configuration q(dof, 0.0);
  std::vector<double> two(q.begin(), q.end());
  two.insert(two.end(), q.begin(), q.end());
  const std::vector<int32_t> chains{1, 1};
  for (const std::vector<int32_t>& after : {std::vector<int32_t>{-1, 1}, std::vector<int32_t>{-1}}) {
    const auto bad = batched.CheckStepsUntilInvalid(*setup.context.state, two, two, two, chains, after, space.dof());
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find(after.size() == 1 ? "1 prerequisites" : "comes after chain 1"),
              std::string::npos)
        << bad.error().message;
  }
}

// RRT and RRT-Connect grow their trees in rounds of step chains (one CheckStepsUntilInvalid call for a
// round's extensions and, for RRT-Connect, the connections toward them, each decided after its
// extension), rounds of several samples once the first ones fail; the batch default (each wave's states
// in one AreValid) plans the same paths as deciding every step one at a time.
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
