#pragma once
// Shared pieces of the planners: the termination clock and validity calls that count their work.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "proximity/planners/planner.h"

namespace proximity::planners::internal {

// Decides when a Solve call stops; asks the caller's `stop` at most about every millisecond.
class Clock {
 public:
  explicit Clock(const Termination& termination)
      : termination_(termination), start_(std::chrono::steady_clock::now()) {}
  double Elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  // Whether to stop before iteration `iteration`; sets *why.
  bool Expired(int64_t iteration, PlanOutcome* why) {
    if (termination_.max_iterations > 0 && iteration >= termination_.max_iterations) {
      *why = PlanOutcome::kIterationLimit;
      return true;
    }
    if (termination_.cancel != nullptr && termination_.cancel->load(std::memory_order_relaxed)) {
      *why = PlanOutcome::kCancelled;
      return true;
    }
    const double now = Elapsed();
    if (termination_.time_limit_s > 0.0 && now >= termination_.time_limit_s) {
      *why = PlanOutcome::kTimeout;
      return true;
    }
    if (termination_.stop && now - last_stop_check_ >= 1e-3) {
      last_stop_check_ = now;
      if (termination_.stop()) {
        *why = PlanOutcome::kCancelled;
        return true;
      }
    }
    return false;
  }
  // Seconds left of the time limit (infinity when none).
  double Remaining() const;
  const Termination& termination() const { return termination_; }

 private:
  const Termination& termination_;
  std::chrono::steady_clock::time_point start_;
  double last_stop_check_ = -1.0;
};

// Validity calls that add to PlanStats.
class Checker {
 public:
  Checker(const PlanningContext& context, PlanStats* stats) : context_(context), stats_(stats) {
    end_.resize(static_cast<size_t>(context.space.dof()));
  }
  // Whether each row of `rows` (configurations of dof() values, row after row) is valid, in one call
  // (StateValidityChecker::AreValid: one batch check in process, one round trip to a remote scene); each
  // row counted as a state check.
  Result<std::vector<uint8_t>> ValidRows(std::span<const double> rows) {
    const int32_t dof = context_.space.dof();
    stats_->state_checks += static_cast<int64_t>(rows.size() / static_cast<size_t>(dof));
    return context_.state->AreValid(rows, dof);
  }
  // The straight segment a -> b (b's wrapping coordinates taken the short way round), decisively.
  Result<MotionCheck> Motion(std::span<const double> a, std::span<const double> b) {
    ++stats_->motion_checks;
    return Segment(*context_.motion, a, b);
  }
  // The decisive checks of the segments a[i] -> b[i] in order, up to and including the first that is
  // not valid (MotionValidator::CheckMotionsUntilInvalid: one round trip for a remote validator); each
  // counted as Motion() counts it.
  Result<std::vector<MotionCheck>> MotionsUntilInvalid(std::span<const std::span<const double>> a,
                                                       std::span<const std::span<const double>> b) {
    Result<std::vector<MotionCheck>> checks = UntilInvalid(*context_.motion, a, b);
    if (checks.ok()) stats_->motion_checks += static_cast<int64_t>(checks.value().size());
    return checks;
  }
  // Chains of a tree's steps: chain c starts from froms[c] and goes through the next chains[c] rows of
  // `steps` (each step's state, then the segment to it from the step before), each decided in order up
  // to its first invalid step by the quick check (the decisive one when the context has none), and only
  // when chain after[c] (if any, >= 0) ended complete: MotionValidator::CheckStepsUntilInvalid, one
  // batch of states per wave in process, one round trip to a remote scene for every chain. Counted as
  // ValidRows() and Quick() count them.
  Result<std::vector<StepChecks>> StepChains(std::span<const std::span<const double>> froms,
                                             std::span<const double> steps, std::span<const int32_t> chains,
                                             std::span<const int32_t> after = {}) {
    const auto dof = static_cast<size_t>(context_.space.dof());
    const size_t n = steps.size() / dof;
    starts_.resize(n * dof);
    ends_.resize(n * dof);
    size_t k = 0;
    for (size_t c = 0; c < chains.size(); ++c) {
      for (int32_t j = 0; j < chains[c]; ++j, ++k) {
        std::span<const double> a = j == 0 ? froms[c] : steps.subspan((k - 1) * dof, dof);
        std::copy(a.begin(), a.end(), starts_.begin() + static_cast<std::ptrdiff_t>(k * dof));
        context_.space.SegmentEnd(a, steps.subspan(k * dof, dof), std::span<double>(ends_.data() + k * dof, dof));
      }
    }
    const bool quick = context_.quick_motion != nullptr;
    const MotionValidator& validator = quick ? *context_.quick_motion : *context_.motion;
    Result<std::vector<StepChecks>> checks =
        validator.CheckStepsUntilInvalid(*context_.state, steps, starts_, ends_, chains, after, context_.space.dof());
    if (!checks.ok()) return checks;
    for (const StepChecks& chain : checks.value()) {
      stats_->state_checks += chain.state_checks;
      (quick ? stats_->quick_motion_checks : stats_->motion_checks) += static_cast<int64_t>(chain.motions.size());
      for (const MotionCheck& c : chain.motions) stats_->motion_states += c.states;
    }
    return checks;
  }
  // The tree-growing check: the quick one when the context has it.
  Result<MotionCheck> Quick(std::span<const double> a, std::span<const double> b) {
    if (context_.quick_motion == nullptr) return Motion(a, b);
    ++stats_->quick_motion_checks;
    return Segment(*context_.quick_motion, a, b);
  }
  // A shortcut the simplifier considers: the context's shortcut check, else the quick one.
  Result<MotionCheck> Shortcut(std::span<const double> a, std::span<const double> b) {
    if (context_.shortcut_motion == nullptr) return Quick(a, b);
    ++stats_->quick_motion_checks;
    return Segment(*context_.shortcut_motion, a, b);
  }
  // The segments a[i] -> b[i], every one, by the check Motion() (decisive) or Shortcut() makes, in one
  // call to its validator (MotionValidator::CheckMotions: one round trip for a remote validator); each
  // counted as that check counts it.
  Result<std::vector<MotionCheck>> Edges(bool decisive, std::span<const Configuration> a,
                                         std::span<const Configuration> b) {
    const MotionValidator& validator = EdgeValidator(decisive);
    const bool quick = !decisive && (context_.shortcut_motion != nullptr || context_.quick_motion != nullptr);
    int64_t* counter = quick ? &stats_->quick_motion_checks : &stats_->motion_checks;
    Segments(a, b);
    Result<std::vector<MotionCheck>> checks = validator.CheckMotions(starts_, ends_, context_.space.dof());
    if (!checks.ok()) return checks;
    *counter += static_cast<int64_t>(checks.value().size());
    for (const MotionCheck& c : checks.value()) stats_->motion_states += c.states;
    return checks;
  }
  // The validator Edges(decisive) calls: the decisive one, else the shortcut check, else the quick one
  // (the decisive one when the context has neither).
  const MotionValidator& EdgeValidator(bool decisive) const {
    if (decisive) return *context_.motion;
    if (context_.shortcut_motion != nullptr) return *context_.shortcut_motion;
    return context_.quick_motion != nullptr ? *context_.quick_motion : *context_.motion;
  }
  // Whether Quick() answers are final (no separate decisive check).
  bool quick_is_final() const { return context_.quick_motion == nullptr; }
  const JointSpace& space() const { return context_.space; }

 private:
  // The segments a[i] -> b[i] as rows of starts_ and ends_ (b's wrapping coordinates the short way round).
  template <class Points>
  void Segments(const Points& a, const Points& b) {
    const auto dof = static_cast<size_t>(context_.space.dof());
    starts_.resize(a.size() * dof);
    ends_.resize(a.size() * dof);
    for (size_t i = 0; i < a.size(); ++i) {
      std::copy(a[i].begin(), a[i].end(), starts_.begin() + static_cast<std::ptrdiff_t>(i * dof));
      context_.space.SegmentEnd(a[i], b[i], std::span<double>(ends_.data() + i * dof, dof));
    }
  }
  // `validator`'s CheckMotionsUntilInvalid of a[i] -> b[i]; the states counted.
  Result<std::vector<MotionCheck>> UntilInvalid(const MotionValidator& validator,
                                                std::span<const std::span<const double>> a,
                                                std::span<const std::span<const double>> b) {
    Segments(a, b);
    Result<std::vector<MotionCheck>> checks = validator.CheckMotionsUntilInvalid(starts_, ends_, context_.space.dof());
    if (!checks.ok()) return checks;
    for (const MotionCheck& c : checks.value()) stats_->motion_states += c.states;
    return checks;
  }
  Result<MotionCheck> Segment(const MotionValidator& validator, std::span<const double> a,
                              std::span<const double> b) {
    context_.space.SegmentEnd(a, b, end_);
    Result<MotionCheck> check = validator.CheckMotion(a, end_);
    if (check.ok()) stats_->motion_states += check.value().states;
    return check;
  }

  const PlanningContext& context_;
  PlanStats* stats_;
  std::vector<double> end_;
  std::vector<double> starts_, ends_;
};

// The start of every Solve: malformed ends are errors; an invalid end ends the call (outcome set); a
// free straight edge solves it (the path start -> goal, finished). *done in both cases.
Status Begin(const PlanningContext& context, const PlannerOptions& options, Checker* checker, Clock* clock, Rng& rng,
             std::span<const double> start, std::span<const double> goal, PlanResult* result, bool* done);

// Draws goal configurations from `goals` until one is valid (until_found: as long as the clock and
// Planner::kMaxGoalDraws allow; otherwise one draw): *found and *q when one was. When until_found ends
// without one, result's outcome is kInvalidGoal (kCancelled when cancelled) and its plan time set.
Status DrawGoal(Checker* checker, Clock* clock, GoalSampler& goals, bool until_found, Configuration* q, bool* found,
                PlanResult* result);

// Simplifies when asked, fills the path statistics and the timing. The path's edges are decided.
Status Finish(const PlanningContext& context, const PlannerOptions& options, Clock* clock, Rng& rng,
              PlanResult* result);

// With a quick check: a candidate path whose edges passed only the quick check is shortened by quick
// checks and every edge of the result is decided; *done (and result filled as Finish fills it, raw_path
// being the candidate) when all pass. Most candidates end here, paying for certification only on the
// few edges of the simplified path. Without simplification or on a failure, *done is false and the
// caller decides the candidate's own edges.
Status FastFinish(const PlanningContext& context, const PlannerOptions& options, Clock* clock, Rng& rng,
                  const std::vector<Configuration>& candidate, PlanResult* result, bool* done);

// Shortens a copy of *path by quick checks and decides its edges (skipping edges *path already has when
// input_decided); on success replaces *path and sets *certified.
Status SimplifyQuick(const PlanningContext& context, std::vector<Configuration>* path, Rng& rng, int32_t max_rounds,
                     const Termination& termination, PlanStats* stats, bool input_decided, bool* certified);

// The planners' constructors.
std::unique_ptr<Planner> MakeRrt(const PlanningContext& context, const PlannerOptions& options, bool connect);
std::unique_ptr<Planner> MakePrm(const PlanningContext& context, const PlannerOptions& options, bool lazy);

}  // namespace proximity::planners::internal
