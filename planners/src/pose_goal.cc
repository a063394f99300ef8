#include "proximity/planners/pose_goal.h"

#include <algorithm>
#include <string>

#include "planner_internal.h"

namespace proximity::planners {

Result<PoseGoalSampler> PoseGoalSampler::Create(std::shared_ptr<const core::RobotModel> robot,
                                                const core::PoseGoal& goal, const JointSpace& space,
                                                std::span<const double> start, core::IkOptions options,
                                                int32_t attempts_per_draw) {
  if (robot == nullptr) return core::InvalidArgument("pose goal: no robot");
  if (Status s = core::CheckPoseGoal(*robot, goal); !s.ok()) return s.error();
  if (space.dof() != robot->num_positions()) {
    return core::InvalidArgument("pose goal: the joint space has " + std::to_string(space.dof()) +
                                 " coordinates, the robot " + std::to_string(robot->num_positions()));
  }
  if (Status s = space.Check(start, "start"); !s.ok()) return s.error();
  if (attempts_per_draw < 1) return core::InvalidArgument("pose goal: attempts_per_draw must be >= 1");
  options.variables.clear();
  for (int32_t i = 0; i < space.dof(); ++i) {
    if (space.wraps(i) || space.lower()[static_cast<size_t>(i)] < space.upper()[static_cast<size_t>(i)]) {
      options.variables.push_back(i);
    }
  }
  options.max_attempts = attempts_per_draw;
  // One descent checks what SolveIk refuses (variables that cannot move the link, bad options) now.
  core::IkOptions probe = options;
  probe.max_attempts = 1;
  probe.max_iterations = 1;
  if (Result<core::IkSolution> r = core::SolveIk(*robot, goal, start, probe); !r.ok()) return r.error();
  PoseGoalSampler sampler;
  sampler.robot_ = std::move(robot);
  sampler.goal_ = goal;
  sampler.options_ = std::move(options);
  sampler.start_.assign(start.begin(), start.end());
  return sampler;
}

Result<bool> PoseGoalSampler::Sample(std::span<double> q) {
  core::IkOptions options = options_;
  options.seed = options_.seed + static_cast<uint64_t>(draws_);
  options.start_at_seed = draws_ == 0;
  ++draws_;
  Result<core::IkSolution> r = core::SolveIk(*robot_, goal_, start_, options);
  if (!r.ok()) return r.error();
  iterations_ += r.value().iterations;
  if (!r.value().found) return false;
  ++solutions_;
  std::copy(r.value().q.begin(), r.value().q.end(), q.begin());
  return true;
}

Result<FreeIk> SolveFreeIk(const core::Scene& scene, const core::PoseGoal& goal, std::span<const double> seed,
                           core::IkOptions options, bool avoid_collisions, const Termination& termination) {
  FreeIk out;
  internal::Clock clock(termination);
  const uint64_t base_seed = options.seed;
  core::SceneCache cache;
  PlanOutcome why = PlanOutcome::kTimeout;
  // The descents' own interrupt: the termination's time, cancel flag and stop callback.
  auto expired = [&] { return clock.Expired(0, &why); };
  const core::Interrupt stop(expired);
  out.solution.q.assign(seed.begin(), seed.end());
  for (int32_t round = 0; round < kMaxIkRounds; ++round) {
    if (expired()) {
      out.stopped = why == PlanOutcome::kCancelled;
      break;
    }
    options.seed = base_seed + static_cast<uint64_t>(round);
    options.start_at_seed = round == 0;
    Result<core::IkSolution> solved = core::SolveIk(scene.robot(), goal, seed, options, stop);
    if (!solved.ok()) return solved.error();
    const int32_t attempts = out.solution.attempts + solved.value().attempts;
    if (solved.value().found && avoid_collisions) {
      ++out.state_checks;
      Result<core::StateResult> checked = scene.CheckState(solved.value().q, &cache);
      if (!checked.ok()) return checked.error();
      if (!checked.value().free) {
        ++out.rejected;
        out.solution.attempts = attempts;
        continue;
      }
    }
    if (solved.value().found) {
      out.solution = std::move(solved).value();
      out.solution.attempts = attempts;
      return out;
    }
    out.solution.attempts = attempts;
  }
  return out;
}

}  // namespace proximity::planners
