#include "proximity/planners/timing.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace proximity::planners {

std::vector<double> VelocityLimits(const core::RobotModel& robot) {
  std::vector<double> v;
  v.reserve(static_cast<size_t>(robot.num_positions()));
  for (const core::JointIndex j : robot.active_joints()) {
    const double limit = robot.joint(j).velocity_limit;
    v.push_back(std::isfinite(limit) && limit > 0.0 ? limit : 0.0);
  }
  return v;
}

core::Result<std::vector<double>> TimeFromStart(const core::RobotModel& robot, std::span<const double> path) {
  const auto dof = static_cast<size_t>(robot.num_positions());
  if (dof == 0) return std::vector<double>{};
  if (path.size() % dof != 0) {
    return core::InvalidArgument("path: " + std::to_string(path.size()) + " values are not rows of " +
                                 std::to_string(dof) + " joint values");
  }
  for (size_t k = 0; k < path.size(); ++k) {
    if (!std::isfinite(path[k])) {
      return core::InvalidArgument("path: row " + std::to_string(k / dof) + ", joint " +
                                   robot.active_joint_names()[k % dof] + " is not finite");
    }
  }
  const std::vector<double> limits = VelocityLimits(robot);
  if (std::none_of(limits.begin(), limits.end(), [](double v) { return v > 0.0; })) return std::vector<double>{};
  const size_t rows = path.size() / dof;
  std::vector<double> t(rows, 0.0);
  for (size_t i = 1; i < rows; ++i) {
    double duration = 0.0;
    for (size_t j = 0; j < dof; ++j) {
      if (limits[j] <= 0.0) continue;
      double delta = path[i * dof + j] - path[(i - 1) * dof + j];
      if (robot.is_continuous(static_cast<int32_t>(j))) delta = core::ShortestTurn(delta);
      duration = std::max(duration, std::abs(delta) / limits[j]);
    }
    t[i] = t[i - 1] + duration;
  }
  return t;
}

}  // namespace proximity::planners
