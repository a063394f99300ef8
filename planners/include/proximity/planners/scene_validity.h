#pragma once
/// @file
/// The validity interfaces over an in-process core::Scene: CLEAR(q) plus joint limits for states,
/// Scene::CheckMotion (certified, or discrete like OMPL's DiscreteMotionValidator) for motions. Each
/// object owns a small pool of SceneCaches so that concurrent callers never share scratch space.

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "proximity/core/scene.h"
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
  [[nodiscard]] core::Status IsValid(std::span<const double> q, bool* valid) const override;
  const core::Scene& scene() const { return *scene_; }
  /// IsValid calls so far.
  int64_t checks() const { return checks_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<const core::Scene> scene_;
  mutable SceneCachePool pool_;
  mutable std::atomic<int64_t> checks_{0};
};

/// Motions checked by Scene::CheckMotion as `request` says (certified by default).
class SceneMotionValidator final : public MotionValidator {
 public:
  explicit SceneMotionValidator(std::shared_ptr<const core::Scene> scene, core::MotionRequest request = {})
      : scene_(std::move(scene)), request_(request) {}
  [[nodiscard]] core::Status CheckMotion(std::span<const double> q0, std::span<const double> q1,
                                         MotionCheck* out) const override;
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

}  // namespace proximity::planners
