/// @file
/// Scene's and SceneCache's installed methods: each reaches the SceneImpl the scene is (scene_impl.h)
/// and the cache's data, where the queries live (state_check.cc, state_batch.cc, motion_*.cc, ...).

#include "proximity/core/scene/scene.h"

#include "scene/scene_impl.h"

namespace proximity::core {

using internal::Impl;
using internal::SceneImpl;

SceneCache::SceneCache() = default;
SceneCache::~SceneCache() = default;
SceneCache::SceneCache(SceneCache&& other) noexcept = default;
SceneCache& SceneCache::operator=(SceneCache&& other) noexcept = default;

SceneCache::Data* SceneCache::data() {
  if (data_ == nullptr) data_ = std::make_unique<Data>();
  return data_.get();
}

std::span<const RigidTransform> SceneCache::link_poses() const {
  if (data_ == nullptr) return {};
  return data_->X_WL;
}

const RobotModel& Scene::robot() const { return *Impl(*this).robot_; }
const std::shared_ptr<const RobotModel>& Scene::robot_ptr() const { return Impl(*this).robot_; }
const std::shared_ptr<SelfClearanceMaps>& Scene::self_clearance_maps() const {
  return Impl(*this).self_clearance_maps_;
}
const std::vector<WorldObject>& Scene::objects() const { return Impl(*this).objects_; }
const RigidTransform& Scene::X_WB() const { return Impl(*this).X_WB_; }
const std::vector<AttachedObject>& Scene::attached() const { return Impl(*this).attached_; }
uint64_t Scene::version() const { return Impl(*this).version_; }
uint64_t Scene::serial() const { return Impl(*this).serial_; }
const std::vector<std::string>& Scene::warnings() const { return Impl(*this).warnings_; }
const std::vector<std::pair<std::string, std::string>>& Scene::allowed_pairs() const {
  return Impl(*this).allowed_pairs_;
}
int32_t Scene::dof() const { return Impl(*this).robot_->num_positions(); }
SceneDescription Scene::Description() const { return Impl(*this).Description(); }
Result<std::shared_ptr<const Scene>> Scene::Update(const WorldUpdate& update) const {
  return Impl(*this).Update(update);
}

Result<StateResult> Scene::CheckState(std::span<const double> q, SceneCache* cache, double clearance) const {
  return Impl(*this).CheckState(q, cache->data(), clearance);
}

Status Scene::CheckStates(std::span<const double> qs, std::span<StateResult> out, SceneCache* cache,
                          double clearance) const {
  return Impl(*this).CheckStates(qs, out, cache->data(), clearance);
}

Result<MotionResult> Scene::CheckMotion(std::span<const double> q0, std::span<const double> q1,
                                        const MotionRequest& request, SceneCache* cache) const {
  return Impl(*this).CheckMotion(q0, q1, request, cache->data());
}

double Scene::RobotDisplacementBound(std::span<const double> dq) const {
  return Impl(*this).RobotDisplacementBound(dq);
}

Result<SceneDistanceResult> Scene::ComputeDistance(std::span<const double> q, const SceneDistanceRequest& request,
                                                   SceneCache* cache) const {
  return Impl(*this).ComputeDistance(q, request, cache->data());
}

Result<ContinuousResult> Scene::TimeOfFirstContact(std::span<const double> q0, std::span<const double> q1,
                                                   const ContinuousRequest& request, SceneCache* cache) const {
  return Impl(*this).TimeOfFirstContact(q0, q1, request, cache->data());
}

Result<ContinuousResult> Scene::TimeOfFirstContact(const Geometry& body, const RigidTransform& X0,
                                                   const RigidTransform& X1, const ContinuousRequest& request) const {
  return Impl(*this).TimeOfFirstContact(body, X0, X1, request);
}

bool Scene::SelfClearanceFilled() const { return Impl(*this).SelfClearanceFilled(); }

Result<PathResult> Scene::CheckPath(std::span<const double> waypoints, const MotionRequest& request,
                                    SceneCache* cache) const {
  return Impl(*this).CheckPath(waypoints, request, cache->data());
}

Result<CollidingPartsResult> Scene::CollidingParts(std::span<const double> q, const CollidingPartsRequest& request,
                                                   SceneCache* cache) const {
  return Impl(*this).CollidingParts(q, request, cache->data());
}

Result<std::vector<PosedPartPair>> Scene::NamedParts(std::string_view a, std::string_view b,
                                                     std::span<const double> q, SceneCache* cache,
                                                     std::string_view field_a, std::string_view field_b) const {
  return Impl(*this).NamedParts(a, b, q, cache->data(), field_a, field_b);
}

}  // namespace proximity::core
