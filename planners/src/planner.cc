#include "proximity/planners/planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "planner_internal.h"

namespace proximity::planners {

const char* PlannerTypeName(PlannerType type) {
  switch (type) {
    case PlannerType::kRrt:
      return "rrt";
    case PlannerType::kRrtConnect:
      return "rrt_connect";
    case PlannerType::kPrm:
      return "prm";
    case PlannerType::kLazyPrm:
      return "lazy_prm";
  }
  return "unknown";
}

Result<PlannerType> ParsePlannerType(const std::string& name) {
  std::string key;
  for (char c : name) {
    if (c != '_' && c != '-') key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (key == "rrt") return PlannerType::kRrt;
  if (key == "rrtconnect") return PlannerType::kRrtConnect;
  if (key == "prm") return PlannerType::kPrm;
  if (key == "lazyprm") return PlannerType::kLazyPrm;
  return core::InvalidArgument("unknown planner '" + name + "'; planners: rrt, rrt_connect, prm, lazy_prm");
}

const char* PlanOutcomeName(PlanOutcome outcome) {
  switch (outcome) {
    case PlanOutcome::kSolved:
      return "solved";
    case PlanOutcome::kTimeout:
      return "timeout";
    case PlanOutcome::kIterationLimit:
      return "iteration_limit";
    case PlanOutcome::kCancelled:
      return "cancelled";
    case PlanOutcome::kInvalidStart:
      return "invalid_start";
    case PlanOutcome::kInvalidGoal:
      return "invalid_goal";
  }
  return "unknown";
}

double PathLength(const JointSpace& space, const std::vector<Configuration>& path) {
  double length = 0.0;
  for (size_t i = 1; i < path.size(); ++i) length += space.Distance(path[i - 1], path[i]);
  return length;
}

Result<std::unique_ptr<Planner>> MakePlanner(const PlanningContext& context, const PlannerOptions& options) {
  if (context.state == nullptr || context.motion == nullptr) {
    return core::InvalidArgument("planner: the state validity checker and the motion validator must be set");
  }
  if (!(options.range >= 0.0) || !std::isfinite(options.range)) {
    return core::InvalidArgument("planner: range must be finite and >= 0 (0 for the default)");
  }
  if (!(options.goal_bias >= 0.0 && options.goal_bias <= 1.0)) {
    return core::InvalidArgument("planner: goal_bias must lie in [0, 1]");
  }
  if (options.prm_neighbors < 1) return core::InvalidArgument("planner: prm_neighbors must be >= 1");
  if (!(options.simplify_time_fraction >= 0.0 && options.simplify_time_fraction <= 1.0)) {
    return core::InvalidArgument("planner: simplify_time_fraction must lie in [0, 1]");
  }
  if (options.simplify_max_rounds < 0) return core::InvalidArgument("planner: simplify_max_rounds must be >= 0");
  switch (options.type) {
    case PlannerType::kRrt:
      return internal::MakeRrt(context, options, false);
    case PlannerType::kRrtConnect:
      return internal::MakeRrt(context, options, true);
    case PlannerType::kPrm:
      return internal::MakePrm(context, options, false);
    case PlannerType::kLazyPrm:
      return internal::MakePrm(context, options, true);
  }
  return core::InvalidArgument("planner: unknown planner type");
}

Result<PlanResult> Plan(const PlanningContext& context, std::span<const double> start, std::span<const double> goal,
                        const PlannerOptions& options, const Termination& termination) {
  auto planner = MakePlanner(context, options);
  if (!planner.ok()) return planner.error();
  return planner.value()->Solve(start, goal, termination);
}

Result<PlanResult> Plan(const PlanningContext& context, std::span<const double> start, GoalSampler& goals,
                        const PlannerOptions& options, const Termination& termination) {
  auto planner = MakePlanner(context, options);
  if (!planner.ok()) return planner.error();
  return planner.value()->Solve(start, goals, termination);
}

Result<PlanResult> Planner::Solve(std::span<const double> start, GoalSampler& goals, const Termination& termination) {
  PlanResult result;
  Configuration goal;
  {
    internal::Clock clock(termination);
    internal::Checker checker(context(), &result.stats);
    bool found = false;
    if (Status s = internal::DrawGoal(&checker, &clock, goals, true, &goal, &found, &result); !s.ok()) return s.error();
    if (!found) return result;
  }
  // The rest of the budget goes to the search for the goal drawn.
  Termination rest = termination;
  if (rest.time_limit_s > 0.0) rest.time_limit_s = std::max(1e-6, rest.time_limit_s - result.stats.plan_time_s);
  Result<PlanResult> solved = Solve(start, goal, rest);
  if (!solved.ok()) return solved;
  solved.value().stats.state_checks += result.stats.state_checks;
  solved.value().stats.plan_time_s += result.stats.plan_time_s;
  return solved;
}

namespace internal {

Status DrawGoal(Checker* checker, Clock* clock, GoalSampler& goals, bool until_found, Configuration* q, bool* found,
                PlanResult* result) {
  *found = false;
  q->assign(static_cast<size_t>(checker->space().dof()), 0.0);
  for (int32_t draw = 0; draw < Planner::kMaxGoalDraws; ++draw) {
    PlanOutcome why = PlanOutcome::kTimeout;
    if (until_found && clock->Expired(0, &why)) {
      result->outcome = why == PlanOutcome::kCancelled ? why : PlanOutcome::kInvalidGoal;
      result->stats.plan_time_s = clock->Elapsed();
      return Status::Ok();
    }
    const Result<bool> drawn = goals.Sample(*q);
    if (!drawn.ok()) return drawn.status();
    if (drawn.value()) {
      if (Status s = checker->space().Check(*q, "goal"); !s.ok()) return s;
      const Result<std::vector<uint8_t>> valid = checker->ValidRows(*q);
      if (!valid.ok()) return valid.status();
      if (valid.value()[0] != 0) {
        *found = true;
        result->stats.plan_time_s = clock->Elapsed();
        return Status::Ok();
      }
    }
    if (!until_found) return Status::Ok();
  }
  result->outcome = PlanOutcome::kInvalidGoal;
  result->stats.plan_time_s = clock->Elapsed();
  return Status::Ok();
}

double Clock::Remaining() const {
  if (termination_.time_limit_s <= 0.0) return std::numeric_limits<double>::infinity();
  return std::max(0.0, termination_.time_limit_s - Elapsed());
}

Status Begin(const PlanningContext& context, const PlannerOptions& options, Checker* checker, Clock* clock, Rng& rng,
             std::span<const double> start, std::span<const double> goal, PlanResult* result, bool* done) {
  *done = true;
  if (Status s = checker->space().Check(start, "start"); !s.ok()) return s;
  if (Status s = checker->space().Check(goal, "goal"); !s.ok()) return s;
  // Both ends and the straight edge's growing check in one batch (one round trip to a remote scene): a
  // chain from the start of two steps, the start itself (its state, and the empty segment to it) and
  // the goal (its state, and the segment from the start), stopped at its first invalid step.
  std::vector<double> ends(start.begin(), start.end());
  ends.insert(ends.end(), goal.begin(), goal.end());
  const std::span<const double> from[1] = {start};
  const int32_t chain[1] = {2};
  const Result<std::vector<StepChecks>> checks = checker->StepChains(from, ends, chain);
  if (!checks.ok()) return checks.status();
  const StepChecks& steps = checks.value()[0];
  if (steps.valid_steps == 0 || steps.motions.size() < 2) {
    // The start's step failed, or the goal's state (whose segment then went unchecked).
    result->outcome = steps.valid_steps == 0 ? PlanOutcome::kInvalidStart : PlanOutcome::kInvalidGoal;
    result->stats.plan_time_s = clock->Elapsed();
    return Status::Ok();
  }
  // The straight edge passed the growing check: the decisive one decides it, when there is one.
  bool direct = steps.valid_steps == 2;
  if (direct && !checker->quick_is_final()) {
    const Result<MotionCheck> decisive = checker->Motion(start, goal);
    if (!decisive.ok()) return decisive.status();
    result->stats.certification_failures += !decisive.value().valid;
    direct = decisive.value().valid;
  }
  if (direct) {
    result->outcome = PlanOutcome::kSolved;
    result->path = {Configuration(start.begin(), start.end()), Configuration(goal.begin(), goal.end())};
    result->stats.vertices = 2;
    result->stats.edges = 1;
    return Finish(context, options, clock, rng, result);
  }
  *done = false;
  return Status::Ok();
}

namespace {
// The simplifier's share of the time left and its rounds.
void SimplifyBudget(const PlannerOptions& options, const Clock& clock, size_t waypoints, Termination* budget,
                    int32_t* rounds) {
  const double remaining = clock.Remaining();
  budget->time_limit_s = std::isfinite(remaining) ? std::max(1e-6, remaining * options.simplify_time_fraction) : 0.0;
  budget->cancel = clock.termination().cancel;
  budget->stop = clock.termination().stop;
  *rounds = options.simplify_max_rounds > 0 ? options.simplify_max_rounds
                                            : std::max<int32_t>(20, 4 * static_cast<int32_t>(waypoints));
}
}  // namespace

Status Finish(const PlanningContext& context, const PlannerOptions& options, Clock* clock, Rng& rng,
              PlanResult* result) {
  result->stats.plan_time_s = clock->Elapsed();
  if (!result->solved()) {
    result->path.clear();
    result->raw_path.clear();
    return Status::Ok();
  }
  result->stats.raw_waypoints = static_cast<int32_t>(result->path.size());
  result->stats.raw_length = PathLength(context.space, result->path);
  result->raw_path = result->path;
  if (options.simplify && result->path.size() > 2) {
    Termination budget;
    int32_t rounds = 0;
    SimplifyBudget(options, *clock, result->path.size(), &budget, &rounds);
    const double t0 = clock->Elapsed();
    Status status = SimplifyPath(context, &result->path, rng, rounds, budget, &result->stats);
    result->stats.simplify_time_s = clock->Elapsed() - t0;
    if (!status.ok()) return status;
  }
  result->stats.length = PathLength(context.space, result->path);
  return Status::Ok();
}

Status FastFinish(const PlanningContext& context, const PlannerOptions& options, Clock* clock, Rng& rng,
                  const std::vector<Configuration>& candidate, PlanResult* result, bool* done) {
  *done = false;
  if (context.quick_motion == nullptr || !options.simplify || candidate.size() <= 2) return Status::Ok();
  const double t0 = clock->Elapsed();
  Termination budget;
  int32_t rounds = 0;
  SimplifyBudget(options, *clock, candidate.size(), &budget, &rounds);
  std::vector<Configuration> path = candidate;
  if (Status s = SimplifyQuick(context, &path, rng, rounds, budget, &result->stats, false, done); !s.ok()) return s;
  if (!*done) return Status::Ok();
  result->outcome = PlanOutcome::kSolved;
  result->stats.plan_time_s = t0;
  result->stats.simplify_time_s = clock->Elapsed() - t0;
  result->stats.raw_waypoints = static_cast<int32_t>(candidate.size());
  result->stats.raw_length = PathLength(context.space, candidate);
  result->raw_path = candidate;
  result->path = std::move(path);
  result->stats.length = PathLength(context.space, result->path);
  return Status::Ok();
}

}  // namespace internal
}  // namespace proximity::planners
