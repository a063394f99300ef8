// SelfClearanceMaps: the owner of a robot model's self-clearance maps (scene/self_clearance.h).
#include "proximity/core/scene/self_clearance_maps.h"

#include <utility>

#include "scene/self_clearance.h"

namespace proximity::core {

using internal::SelfClearanceMapsImpl;

std::shared_ptr<SelfClearanceMaps> SelfClearanceMaps::For(std::shared_ptr<const RobotModel> robot) {
  return std::make_shared<SelfClearanceMapsImpl>(std::move(robot));
}

const std::shared_ptr<const RobotModel>& SelfClearanceMaps::robot() const {
  return static_cast<const SelfClearanceMapsImpl&>(*this).robot_;
}

int64_t SelfClearanceMaps::num_maps() const { return static_cast<const SelfClearanceMapsImpl&>(*this).memo.num_maps(); }

int64_t SelfClearanceMaps::bytes() const {
  const auto& impl = static_cast<const SelfClearanceMapsImpl&>(*this);
  return impl.memo.bytes() + impl.distance_maps.bytes();
}

}  // namespace proximity::core
