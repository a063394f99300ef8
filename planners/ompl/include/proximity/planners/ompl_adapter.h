#pragma once
/// @file
/// OMPL 1.5 adapter: OMPL's own planners (RRTConnect, PRM, ...) and its path simplifier run on our
/// state validity and our (certified) motion validation, through ompl::base::StateValidityChecker and
/// ompl::base::MotionValidator subclasses over the planners' interfaces (validity.h), which may be
/// in process (scene_validity.h) or remote (clients/cpp).
///
/// State layout: a JointSpace without wrapping coordinates becomes one RealVectorStateSpace bounded by
/// the joint limits, whose state array is the configuration itself (read without a copy). With
/// continuous joints it becomes a CompoundStateSpace of one component per coordinate, in joint order:
/// RealVectorStateSpace(1) for a bounded joint, SO2StateSpace for a wrapping one. OMPL measures that
/// compound with the weighted sum of its components' distances (an L1 over joints), not the
/// JointSpace's Euclidean norm; the straight segments, and so the validity of a motion, are the same.
///
/// Errors: OMPL's interfaces return bool, so a validity call that fails (a malformed state, a remote
/// call that failed) answers "invalid" (never a guessed "valid") and is recorded; status() gives the
/// first such error, which a caller should check after solving.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include <ompl/base/MotionValidator.h>
#include <ompl/base/SpaceInformation.h>
#include <ompl/base/State.h>
#include <ompl/base/StateSpace.h>
#include <ompl/base/StateValidityChecker.h>
#include <ompl/geometric/PathGeometric.h>

#include "proximity/core/base/result.h"
#include "proximity/core/scene/scene.h"
#include "proximity/planners/joint_space.h"
#include "proximity/planners/validity.h"

namespace proximity::planners {

/// How a JointSpace's configurations map onto OMPL states (see the file comment). Immutable.
class OmplStateLayout {
 public:
  explicit OmplStateLayout(JointSpace space);

  const JointSpace& space() const { return space_; }
  int32_t dof() const { return space_.dof(); }
  /// True when states are RealVectorStateSpace states (no wrapping coordinate).
  bool flat() const { return !space_.any_wraps(); }

  /// A new OMPL state space for this layout, bounded by the joint limits.
  ompl::base::StateSpacePtr MakeStateSpace() const;
  /// The configuration of `state`: a flat state's own array (no copy), or `scratch` (dof() entries)
  /// filled from a compound state.
  const double* View(const ompl::base::State* state, double* scratch) const;
  /// Copies the configuration of `state` into q (dof() entries).
  void ToConfiguration(const ompl::base::State* state, std::span<double> q) const;
  /// Sets `state` to q (dof() entries); wrapping coordinates are brought to [-pi, pi).
  void FromConfiguration(std::span<const double> q, ompl::base::State* state) const;
  /// The end of the straight segment OMPL interpolates from q0 toward q1, as a motion check must see
  /// it: q1, except that a wrapping coordinate goes the shorter way round exactly as
  /// SO2StateSpace::interpolate does (so it may leave [-pi, pi)).
  void SegmentEnd(std::span<const double> q0, std::span<const double> q1, std::span<double> out) const;
  /// The waypoints of an OMPL path as configurations.
  std::vector<Configuration> PathConfigurations(const ompl::geometric::PathGeometric& path) const;

 private:
  JointSpace space_;
};

/// The first error of the validity calls an adapter made, and how many failed; thread-safe.
class OmplErrorLog {
 public:
  void Record(const core::Status& status);
  /// Ok when no call failed; else the first failure.
  core::Status status() const;
  int64_t errors() const { return errors_.load(std::memory_order_relaxed); }

 private:
  mutable std::mutex mutex_;
  core::Status first_;
  std::atomic<int64_t> errors_{0};
};

/// OMPL state validity over a planners::StateValidityChecker (collision-free and within the limits).
/// Thread-safe when the wrapped checker is.
class OmplStateValidityChecker final : public ompl::base::StateValidityChecker {
 public:
  /// `si` must use a state space made by `layout`; `checker` must not be null.
  OmplStateValidityChecker(ompl::base::SpaceInformation* si, std::shared_ptr<const OmplStateLayout> layout,
                           std::shared_ptr<const planners::StateValidityChecker> checker);
  /// False when the state is invalid or the check failed (see status()).
  bool isValid(const ompl::base::State* state) const override;

  /// Ok, or the first check that failed.
  core::Status status() const { return log_.status(); }
  /// Checks that failed.
  int64_t errors() const { return log_.errors(); }
  /// isValid calls so far.
  int64_t checks() const { return checks_.load(std::memory_order_relaxed); }
  const planners::StateValidityChecker& checker() const { return *checker_; }

 private:
  std::shared_ptr<const OmplStateLayout> layout_;
  std::shared_ptr<const planners::StateValidityChecker> checker_;
  mutable OmplErrorLog log_;
  mutable std::atomic<int64_t> checks_{0};
};

/// OMPL motion validation over a planners::MotionValidator: checkMotion(s1, s2) asks it about the
/// straight segment OMPL interpolates. With a certified validator a "valid" answer is certified (no
/// state on the segment collides), where OMPL's DiscreteMotionValidator only samples it. Counts
/// valid_ / invalid_ as OMPL does. Thread-safe when the wrapped validator is.
class OmplMotionValidator final : public ompl::base::MotionValidator {
 public:
  /// `si` must use a state space made by `layout`; `validator` must not be null.
  OmplMotionValidator(ompl::base::SpaceInformation* si, std::shared_ptr<const OmplStateLayout> layout,
                      std::shared_ptr<const planners::MotionValidator> validator);
  /// Whether every state on s1 -> s2 is valid (false too when the check failed; see status()).
  bool checkMotion(const ompl::base::State* s1, const ompl::base::State* s2) const override;
  /// As above; when invalid, lastValid.second is the validator's last_valid_t (the segment is valid on
  /// [0, last_valid_t], certified for a certified validator) and lastValid.first (when not null) the
  /// state there, interpolated by the space, as DiscreteMotionValidator does. Untouched when valid.
  bool checkMotion(const ompl::base::State* s1, const ompl::base::State* s2,
                   std::pair<ompl::base::State*, double>& lastValid) const override;

  /// Ok, or the first check that failed.
  core::Status status() const { return log_.status(); }
  int64_t errors() const { return log_.errors(); }
  /// Configurations the wrapped validator posed, summed over the checks.
  int64_t states() const { return states_.load(std::memory_order_relaxed); }
  const planners::MotionValidator& validator() const { return *validator_; }

 private:
  // The wrapped validator's check of s1 -> s2; an error is logged and answers not valid.
  MotionCheck Check(const ompl::base::State* s1, const ompl::base::State* s2) const;

  std::shared_ptr<const OmplStateLayout> layout_;
  std::shared_ptr<const planners::MotionValidator> validator_;
  mutable OmplErrorLog log_;
  mutable std::atomic<int64_t> states_{0};
};

/// A SpaceInformation with our checkers set up, and what it was made from.
struct OmplSetup {
  std::shared_ptr<const OmplStateLayout> layout;
  ompl::base::SpaceInformationPtr si;
  std::shared_ptr<OmplStateValidityChecker> state_checker;
  std::shared_ptr<OmplMotionValidator> motion_validator;

  /// A new OMPL state holding q (free it with si->freeState, or use ompl::base::ScopedState).
  ompl::base::State* NewState(std::span<const double> q) const;
  /// Ok, or the first validity call that failed (state or motion).
  core::Status status() const;
};

/// A SpaceInformation over `space` (joint limits as bounds) with `state` and `motion` installed and
/// setup() called. Errors: a null checker, or OMPL refusing the space (its exception's message).
[[nodiscard]] Result<OmplSetup> MakeOmplSetup(const JointSpace& space,
                                              std::shared_ptr<const planners::StateValidityChecker> state,
                                              std::shared_ptr<const planners::MotionValidator> motion);

/// The same for an in-process scene: JointSpace::ForRobot, SceneStateValidity and a
/// SceneMotionValidator checking as `motion` says. The default (certified, collisions narrowed to 2^-10
/// of the segment) gives a tight lastValid; PlanningMotionRequest() rejects colliding motions sooner
/// when the planner does not use lastValid (RRTConnect, PRM), with a certified but loose lastValid.
[[nodiscard]] Result<OmplSetup> MakeOmplSetup(std::shared_ptr<const core::Scene> scene,
                                              core::MotionRequest motion = {});

}  // namespace proximity::planners
