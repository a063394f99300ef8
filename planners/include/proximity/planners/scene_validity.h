#pragma once
/// @file
/// The validity interfaces over an in-process core::Scene: CLEAR(q) plus joint limits for states,
/// Scene::CheckMotion (certified, or discrete like OMPL's DiscreteMotionValidator) for motions. Each
/// object owns a small pool of SceneCaches so that concurrent callers never share scratch space.

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "proximity/core/scene/scene.h"
#include "proximity/planners/planner.h"
#include "proximity/planners/timing.h"
#include "proximity/planners/validity.h"

namespace proximity::planners {

/// SceneCaches handed out one per concurrent call; grows to the number of concurrent callers.
class SceneCachePool {
 public:
  /// A cache for the caller's exclusive use until it is released.
  std::unique_ptr<core::SceneCache> Acquire();
  void Release(std::unique_ptr<core::SceneCache> cache);

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<core::SceneCache>> free_;
};

/// A state is valid when CLEAR(q) says free and q lies within the joint limits.
class SceneStateValidity final : public StateValidityChecker {
 public:
  explicit SceneStateValidity(std::shared_ptr<const core::Scene> scene) : scene_(std::move(scene)) {}
  [[nodiscard]] core::Result<bool> IsValid(std::span<const double> q) const override;
  /// IsValid's answers for every row, from one Scene::CheckStates call (the rows posed across SIMD lanes
  /// a block at a time): free and within the limits. Rows of another length than the scene's dof() are
  /// answered as IsValid answers them (the error for row 0).
  [[nodiscard]] core::Result<std::vector<uint8_t>> AreValid(std::span<const double> qs, int32_t dof) const override;
  const core::Scene& scene() const { return *scene_; }
  /// Configurations checked so far (IsValid calls and AreValid rows).
  int64_t checks() const { return checks_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<const core::Scene> scene_;
  mutable SceneCachePool pool_;
  mutable std::atomic<int64_t> checks_{0};
};

/// The certified motion check as a planner wants it: a sampled pre-pass at `prepass_resolution` rejects
/// most colliding segments after a few CLEARs, and a colliding segment is not narrowed further (a
/// planner needs free or not; OMPL's lastValid fraction is then a certified but not tight prefix).
core::MotionRequest PlanningMotionRequest(double prepass_resolution = 0.1);

/// Motions checked by Scene::CheckMotion as `request` says (certified by default).
class SceneMotionValidator final : public MotionValidator {
 public:
  explicit SceneMotionValidator(std::shared_ptr<const core::Scene> scene,
                                core::MotionRequest request = PlanningMotionRequest())
      : scene_(std::move(scene)), request_(request) {}
  [[nodiscard]] core::Result<MotionCheck> CheckMotion(std::span<const double> q0,
                                                      std::span<const double> q1) const override;
  bool certified() const override { return request_.mode == core::MotionRequest::Mode::kCertified; }
  std::string Describe() const override;
  const core::Scene& scene() const { return *scene_; }
  /// CheckMotion calls and configurations posed so far.
  int64_t checks() const { return checks_.load(std::memory_order_relaxed); }
  int64_t states() const { return states_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<const core::Scene> scene_;
  core::MotionRequest request_;
  mutable SceneCachePool pool_;
  mutable std::atomic<int64_t> checks_{0};
  mutable std::atomic<int64_t> states_{0};
};

/// Corner blends checked on a scene as `request` checks segments (certified by default). The arc is cut
/// into chords, each checked by Scene::CheckMotion with the request's clearance raised by a margin, for
/// every pair (robot-world and robot-robot): a configuration on the arc is within the chord's sagitta of
/// one on its chord, so every robot point is within Scene::RobotDisplacementBound of where the chord puts
/// it, and every pair's gap shrinks by at most twice that, which the margin covers. So a certified
/// answer of free for every chord certifies the arc. Chords are made fine enough for a margin of 1 mm,
/// then (when that fails) 0.1 mm; more than `max_chords` chords, or any chord not free, refuses the arc.
class SceneBlendChecker final : public BlendChecker {
 public:
  explicit SceneBlendChecker(std::shared_ptr<const core::Scene> scene, core::MotionRequest request = PlanningMotionRequest(),
                             int32_t max_chords = 1024)
      : scene_(std::move(scene)), request_(request), max_chords_(max_chords) {}
  /// Errors: an arc of another width than the scene's dof(), the scene's errors.
  [[nodiscard]] core::Result<bool> ArcFree(const BlendArc& arc) const override;
  /// Chords checked so far.
  int64_t checks() const { return checks_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<const core::Scene> scene_;
  core::MotionRequest request_;
  int32_t max_chords_;
  mutable SceneCachePool pool_;
  mutable std::atomic<int64_t> checks_{0};
};

/// Everything a planner needs on a scene: CLEAR plus limits for states, the certified motion check for
/// every edge it returns, and a sampled quick check (states at most `quick_resolution` apart, strictly
/// between the ends, which planners check as states) for growing trees, so only candidate paths pay for
/// certification, and the same check keeping a small clearance for the simplifier's shortcuts.
/// quick_resolution 0 leaves the quick checks out: every tree edge is then certified as it is added.
class ScenePlanning {
 public:
  /// The default quick resolution, radians (joint-space norm); about 0.8% of the Panda's extent. Finer
  /// sampling lets fewer candidate edges fail certification but costs more states than it saves (on the
  /// MotionBenchMaker problems 0.05 rad took a fifth longer).
  static constexpr double kDefaultQuickResolution = 0.1;

  /// The clearance (m) the simplifier's shortcuts keep from obstacles at their sampled states (the quick
  /// check with MotionRequest::clearance and clearance_world_only: pairs of robot parts need only not
  /// touch, since some arms hold links millimetres apart by design, a flange in its forearm's fork). A
  /// shortcut that grazes an obstacle at a sample is dear to certify (the certified walk's steps shrink
  /// with the distance) and likelier to fail certification, sending the simplifier round again: on the
  /// MotionBenchMaker problems 5 mm cut certification time by 40% and the median time to a path by a
  /// fifth, for paths 1.5% longer.
  static constexpr double kDefaultShortcutClearance = 0.005;
  /// `stop` (a cancelled call, an expired deadline) is asked inside every motion check, which then
  /// answers not valid; pass the same condition in the planner's Termination so the call ends.
  explicit ScenePlanning(std::shared_ptr<const core::Scene> scene, double quick_resolution = kDefaultQuickResolution,
                         double shortcut_clearance = kDefaultShortcutClearance, core::Interrupt stop = {});
  ScenePlanning(const ScenePlanning&) = delete;
  ScenePlanning& operator=(const ScenePlanning&) = delete;

  /// The context over this object's validity checks (valid while this object lives).
  const PlanningContext& context() const { return context_; }
  const SceneStateValidity& state() const { return state_; }
  const SceneMotionValidator& certified() const { return certified_; }
  const SceneMotionValidator& quick() const { return quick_; }
  /// The quick check with the shortcut clearance, for the simplifier's shortcuts.
  const SceneMotionValidator& shortcut() const { return shortcut_; }

 private:
  SceneStateValidity state_;
  SceneMotionValidator certified_;
  SceneMotionValidator quick_;
  SceneMotionValidator shortcut_;
  PlanningContext context_;
};

}  // namespace proximity::planners
