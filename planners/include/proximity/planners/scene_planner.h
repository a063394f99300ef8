#pragma once
/// @file
/// Planning on an in-process scene as a service call sets it up: the planner over the scene's checks
/// (certified lazily, or discrete as OMPL samples), the joint space of an SRDF group, the blend checker
/// for the timed path, and why a plan found no path, in words.

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "proximity/core/scene/scene.h"
#include "proximity/planners/joint_space.h"
#include "proximity/planners/planner.h"
#include "proximity/planners/pose_goal.h"
#include "proximity/planners/scene_validity.h"
#include "proximity/planners/timing.h"

namespace proximity::planners {

/// The planner of one request over a scene's validity checks. Certified mode certifies lazily: trees
/// grow on quick sampled checks and candidate paths are certified. Discrete mode samples every edge at
/// the request's resolution, as OMPL does. Every motion check asks `stop`, so a cancelled or expired
/// call ends within one check's poll interval even inside a long edge. Not copyable (the context points
/// into it).
class ScenePlanner {
 public:
  ScenePlanner(const std::shared_ptr<const core::Scene>& scene, const core::MotionRequest& motion,
               core::Interrupt stop);
  ScenePlanner(const ScenePlanner&) = delete;
  ScenePlanner& operator=(const ScenePlanner&) = delete;

  /// Discrete mode: edges (and the simplifier's shortcuts) span at most the joint space's extent, so a
  /// resolution that would sample more than the core's cap on one of them is refused up front.
  [[nodiscard]] core::Status CheckResolution() const;
  [[nodiscard]] core::Result<PlanResult> Plan(std::span<const double> start, std::span<const double> goal,
                                              const PlannerOptions& options, const Termination& termination) const {
    return planners::Plan(planning_, start, goal, options, termination);
  }
  [[nodiscard]] core::Result<PlanResult> Plan(std::span<const double> start, GoalSampler& goals,
                                              const PlannerOptions& options, const Termination& termination) const {
    return planners::Plan(planning_, start, goals, options, termination);
  }
  /// The checks made so far: states (CLEAR queries), motions (LINK queries, blends' chords included),
  /// and configurations posed by all of them.
  int64_t state_checks() const { return lazy_.state().checks(); }
  int64_t motion_checks() const;
  int64_t posed_states() const;
  const JointSpace& space() const { return planning_.space; }
  /// Corner blends of the timed path, checked as the plan's motions are.
  const BlendChecker& blends() const { return blends_; }
  /// Plans in `space` instead of the robot's whole joint space (a group's joints only).
  void RestrictTo(JointSpace space) { planning_.space = std::move(space); }

 private:
  const ScenePlanning lazy_;
  const SceneMotionValidator discrete_;
  const SceneBlendChecker blends_;
  PlanningContext planning_;
  double resolution_;
  bool certified_;
};

/// The joint space of a plan that moves only SRDF group `group`: every other joint held at its start
/// value, which the goal must share. Errors name the group (unknown, moving none of the joints) or the
/// joint outside it whose goal differs.
[[nodiscard]] core::Result<JointSpace> GroupJointSpace(const core::RobotModel& robot, const std::string& group,
                                                       std::span<const double> start, std::span<const double> goal);

/// Why a plan found no path, in words ("" when it found one or was cancelled): the colliding start or
/// goal with its first contact, no collision-free IK solution of a pose goal (`sampler`, when given),
/// the time or iteration limit reached.
std::string PlanFailureMessage(const core::Scene& scene, const PlanResult& result, std::span<const double> start,
                               std::span<const double> goal, double time_limit_s, int64_t max_iterations,
                               const PoseGoalSampler* sampler = nullptr);

}  // namespace proximity::planners
