#pragma once
/// @file
/// Pose goals for the planners: a GoalSampler whose goals are inverse-kinematics solutions of a link
/// pose (core::SolveIk), drawn lazily while the planner searches, as OMPL's goal samplers draw them.

#include <cstdint>
#include <span>
#include <vector>

#include "proximity/core/robot/inverse_kinematics.h"
#include "proximity/core/scene/scene.h"
#include "proximity/planners/joint_space.h"
#include "proximity/planners/planner.h"

namespace proximity::planners {

/// Goal configurations meeting a pose goal, for plans from `start` in `space`.
class PoseGoalSampler final : public GoalSampler {
 public:
  /// `goal` is in the robot's root frame. Only the coordinates `space` lets move (a group's space holds
  /// the others at the start) are solved for; the rest keep the start's values. Each draw descends
  /// `attempts_per_draw` times (a draw that finds nothing returns, and the planner searches on before
  /// the next), the first draw first from the start itself (the solution nearest the start, when the
  /// descent finds it), every other descent from random values, seeded by options.seed and the draw's
  /// number; options.variables and max_attempts are set here, the rest (max_iterations) taken as given.
  /// Errors: a malformed goal or start, a space of another size, a space in which nothing that moves the
  /// goal's link may move, attempts_per_draw < 1.
  [[nodiscard]] static Result<PoseGoalSampler> Create(std::shared_ptr<const core::RobotModel> robot,
                                                      const core::PoseGoal& goal, const JointSpace& space,
                                                      std::span<const double> start, core::IkOptions options = {},
                                                      int32_t attempts_per_draw = 4);

  [[nodiscard]] Result<bool> Sample(std::span<double> q) override;

  int64_t draws() const { return draws_; }            ///< Sample calls.
  int64_t solutions() const { return solutions_; }    ///< Calls that returned a solution.
  int64_t ik_iterations() const { return iterations_; }  ///< Descent steps over all calls.

 private:
  PoseGoalSampler() = default;
  std::shared_ptr<const core::RobotModel> robot_;
  core::PoseGoal goal_;
  core::IkOptions options_;
  std::vector<double> start_;
  int64_t draws_ = 0, solutions_ = 0, iterations_ = 0;
};

/// What SolveFreeIk found.
struct FreeIk {
  core::IkSolution solution;  ///< found: a solution (free of collision when asked); else the seed
  int32_t rejected = 0;       ///< solutions found in collision
  int64_t state_checks = 0;   ///< CLEAR queries made
  bool stopped = false;       ///< the termination's cancel flag or stop callback ended the search
};

/// Inverse kinematics on a scene (MoveIt's GetPositionIK): random-restart descents in rounds of
/// options.max_attempts (the first round's first descent from `seed`), each solution checked by the
/// scene's CLEAR when `avoid_collisions` (world and self contact, with the scene's padding), until one
/// passes or `termination` ends the search (its time limit, cancel flag or stop callback; at most
/// kMaxRounds rounds without a time limit). `goal` is in the robot's root frame; options.seed seeds the
/// rounds. Errors: SolveIk's, the scene's.
[[nodiscard]] Result<FreeIk> SolveFreeIk(const core::Scene& scene, const core::PoseGoal& goal,
                                         std::span<const double> seed, core::IkOptions options,
                                         bool avoid_collisions, const Termination& termination);
inline constexpr int32_t kMaxIkRounds = 100000;

}  // namespace proximity::planners
