#pragma once
/// @file
/// Sampling-based planners over the validity interfaces: RRT (LaValle 1998), RRT-Connect (Kuffner,
/// LaValle 2000), PRM (Kavraki, Svestka, Latombe, Overmars 1996) and LazyPRM (Bohlin, Kavraki 2000).
/// Every edge of a returned path has passed the MotionValidator, so with a certified validator every
/// returned path is certified free; simplification (shortcutting) checks each new edge the same way.
///
/// Determinism: a planner's answer depends only on its inputs and seed (single-threaded, no clocks in
/// decisions), unless a time limit or cancellation cuts it short.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "proximity/planners/joint_space.h"
#include "proximity/planners/validity.h"

namespace proximity::planners {

/// The planners.
enum class PlannerType { kRrt, kRrtConnect, kPrm, kLazyPrm };

/// "rrt", "rrt_connect", "prm", "lazy_prm".
const char* PlannerTypeName(PlannerType type);
/// The inverse of PlannerTypeName (also accepts "rrtconnect", "lazyprm" and OMPL's class names
/// "RRT", "RRTConnect", "PRM", "LazyPRM"); InvalidArgument naming the unknown name.
[[nodiscard]] Result<PlannerType> ParsePlannerType(const std::string& name);

/// When a Solve call stops without a solution. Checked once per iteration; `stop` (a cancelled RPC,
/// an expired deadline) is asked at most every millisecond or so.
struct Termination {
  double time_limit_s = 10.0;      ///< Wall-clock budget for the call; <= 0 means none.
  int64_t max_iterations = 0;      ///< Planner iterations (samples); 0 means none.
  const std::atomic<bool>* cancel = nullptr;  ///< Stops the call when it becomes true.
  std::function<bool()> stop;      ///< Stops the call when it returns true.
};

/// Planner settings. Zero values take the defaults OMPL uses, scaled by the space's MaxExtent().
struct PlannerOptions {
  PlannerType type = PlannerType::kRrtConnect;
  uint64_t seed = 1;
  /// Longest tree extension (RRT, RRT-Connect) and PRM connection radius cap, in joint-space units;
  /// 0: 0.2 * MaxExtent() (OMPL's default range).
  double range = 0.0;
  /// RRT: probability of sampling the goal.
  double goal_bias = 0.05;
  /// PRM / LazyPRM: neighbours each new roadmap vertex is connected to.
  int32_t prm_neighbors = 10;
  /// Shortcut the raw path (each new edge checked by the MotionValidator), then drop redundant vertices.
  bool simplify = true;
  /// Simplification budget as a fraction of the time left once a path is found, and in rounds.
  double simplify_time_fraction = 0.5;
  int32_t simplify_max_rounds = 0;  ///< 0: 4 * (number of path vertices), at least 20.
};

/// Why Solve returned.
enum class PlanOutcome {
  kSolved,          ///< A path from start to goal.
  kTimeout,         ///< The time limit passed first.
  kIterationLimit,  ///< max_iterations passed first.
  kCancelled,       ///< `cancel` or `stop` ended the call.
  kInvalidStart,    ///< The start configuration is not valid.
  kInvalidGoal,     ///< The goal configuration is not valid.
};
/// "solved", "timeout", "iteration_limit", "cancelled", "invalid_start", "invalid_goal".
const char* PlanOutcomeName(PlanOutcome outcome);

/// What a Solve call did.
struct PlanStats {
  int64_t iterations = 0;       ///< Samples drawn.
  int64_t state_checks = 0;     ///< Configurations the StateValidityChecker checked (IsValid, AreValid rows).
  int64_t motion_checks = 0;    ///< Decisive MotionValidator calls (planning and simplification).
  int64_t quick_motion_checks = 0;  ///< Calls of the context's quick_motion validator.
  int64_t certification_failures = 0;  ///< Candidate-path edges the quick check passed and `motion` rejected.
  int64_t motion_states = 0;    ///< Configurations the motion checks posed.
  int64_t vertices = 0;         ///< Tree or roadmap vertices at the end.
  int64_t edges = 0;            ///< Tree or roadmap edges at the end (LazyPRM: unchecked ones too).
  double plan_time_s = 0.0;     ///< Until the raw path was found (or the call stopped).
  double simplify_time_s = 0.0; ///< Simplification.
  double raw_length = 0.0;      ///< Joint-space length of the raw path.
  double length = 0.0;          ///< Joint-space length of the returned path.
  int32_t raw_waypoints = 0;
};

/// A Solve call's answer. `path` is empty unless outcome is kSolved; then it runs from the start to
/// the goal (its first and last rows are exactly the given start and goal), consecutive waypoints
/// joined by validated straight segments (JointSpace::SegmentEnd semantics for wrapping joints).
struct PlanResult {
  PlanOutcome outcome = PlanOutcome::kTimeout;
  std::vector<Configuration> path;
  /// The path as the search found it, before simplification (empty unless solved). For statistics: with
  /// a quick check in the context its edges may have passed only that (the returned `path` is what
  /// the decisive check vouches for).
  std::vector<Configuration> raw_path;
  PlanStats stats;
  bool solved() const { return outcome == PlanOutcome::kSolved; }
};

/// What a planner works with. The pointers must outlive the planner.
struct PlanningContext {
  JointSpace space;
  const StateValidityChecker* state = nullptr;
  /// Decides every edge of a returned path (and every shortcut the simplifier takes).
  const MotionValidator* motion = nullptr;
  /// Optional cheaper check (a sampled one) for growing trees and roadmaps: planners then check tree
  /// and roadmap edges with it, and a candidate path is first shortened by quick checks and its few
  /// remaining edges decided by `motion`; only when one fails are the candidate's own edges decided,
  /// an edge `motion` rejects being cut from its tree or roadmap (with the subtree below it) before the
  /// search goes on (lazy collision checking, as in Bohlin and Kavraki's LazyPRM). The returned path is
  /// as certified as `motion` makes it either way. Planners ask it only between configurations they
  /// have checked as states or that lie on edges it passed, so it may leave the ends out.
  const MotionValidator* quick_motion = nullptr;
  /// Optional check for the shortcuts the simplifier tries with a quick check (defaults to quick_motion).
  const MotionValidator* shortcut_motion = nullptr;
};

/// A goal other than one configuration (a pose of a link: PoseGoalSampler), drawn lazily as OMPL's
/// GoalLazySamples draws it: the planner asks for goal configurations as the search goes on.
class GoalSampler {
 public:
  virtual ~GoalSampler() = default;
  /// Writes a configuration that meets the goal into `q` (dof values within the space's bounds) and
  /// returns true, or returns false when this call found none (the planner asks again later, while its
  /// termination allows). The planner checks each configuration's validity itself. Errors end the plan.
  [[nodiscard]] virtual Result<bool> Sample(std::span<double> q) = 0;
};

/// A planner. Solve may be called again with other ends: PRM and LazyPRM keep their roadmap (multi
/// query); RRT and RRT-Connect start new trees. Not thread-safe itself; use one per thread.
class Planner {
 public:
  virtual ~Planner() = default;
  /// Plans from `start` to `goal`. Errors for malformed ends (wrong size, NaN, outside the bounds) or
  /// a validity call that failed; a search that finds nothing is not an error (see outcome).
  [[nodiscard]] virtual Result<PlanResult> Solve(std::span<const double> start, std::span<const double> goal,
                                                 const Termination& termination) = 0;
  /// Plans from `start` to any configuration `goals` draws. RRT-Connect roots its goal tree at every
  /// valid goal drawn (the first before the search, one more every few rounds, up to kMaxGoals) and
  /// RRT biases toward them all; PRM and LazyPRM plan to the first valid goal. The path's last row is
  /// exactly one of the drawn goals. Outcome kInvalidGoal when no valid goal was drawn before the
  /// termination (or in kMaxGoalDraws draws); errors as Solve's and the sampler's.
  [[nodiscard]] virtual Result<PlanResult> Solve(std::span<const double> start, GoalSampler& goals,
                                                 const Termination& termination);
  /// Goals a goal region's search keeps at most, and draws it makes without a valid goal before giving up.
  static constexpr int32_t kMaxGoals = 16;
  static constexpr int32_t kMaxGoalDraws = 10000;
  /// Forgets the roadmap (PRM, LazyPRM); nothing otherwise.
  virtual void Clear() {}
  virtual PlannerType type() const = 0;
  /// What the planner works with.
  virtual const PlanningContext& context() const = 0;
};

/// A planner of options.type over `context`. Errors: null validity pointers, bad options.
[[nodiscard]] Result<std::unique_ptr<Planner>> MakePlanner(const PlanningContext& context, const PlannerOptions& options);

/// One call: MakePlanner, then Solve.
[[nodiscard]] Result<PlanResult> Plan(const PlanningContext& context, std::span<const double> start,
                                      std::span<const double> goal, const PlannerOptions& options,
                                      const Termination& termination);

/// One call to a goal region: MakePlanner, then Solve(start, goals, termination).
[[nodiscard]] Result<PlanResult> Plan(const PlanningContext& context, std::span<const double> start, GoalSampler& goals,
                                      const PlannerOptions& options, const Termination& termination);

/// Joint-space length of a path.
double PathLength(const JointSpace& space, const std::vector<Configuration>& path);

/// Shortens a valid path: random shortcuts between non-adjacent waypoints (kept when the
/// MotionValidator accepts the new edge), then removal of waypoints whose neighbours see each other.
/// The ends never move. Stops after `max_rounds` shortcut attempts or when `termination` says so.
/// Adds the motion checks it made to *stats (may be null).
[[nodiscard]] Status SimplifyPath(const PlanningContext& context, std::vector<Configuration>* path, Rng& rng,
                                  int32_t max_rounds, const Termination& termination, PlanStats* stats);

}  // namespace proximity::planners
