// SelfClearanceMaps: the owner of a robot model's self-clearance maps (scene/self_clearance.h).
#include "proximity/core/scene/self_clearance_maps.h"

#include <utility>

#include "scene/self_clearance.h"

namespace proximity::core {

std::shared_ptr<SelfClearanceMaps> SelfClearanceMaps::For(std::shared_ptr<const RobotModel> robot) {
  return std::shared_ptr<SelfClearanceMaps>(new SelfClearanceMaps(std::move(robot)));
}

SelfClearanceMaps::SelfClearanceMaps(std::shared_ptr<const RobotModel> robot)
    : robot_(std::move(robot)), memo_(std::make_unique<internal::SelfClearanceMemo>()) {}

SelfClearanceMaps::~SelfClearanceMaps() = default;

int64_t SelfClearanceMaps::num_maps() const { return memo_->num_maps(); }

int64_t SelfClearanceMaps::bytes() const { return memo_->bytes(); }

}  // namespace proximity::core
