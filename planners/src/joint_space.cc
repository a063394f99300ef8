#include "proximity/planners/joint_space.h"

#include <cmath>
#include <numbers>
#include <string>

namespace proximity::planners {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kTwoPi = 2.0 * std::numbers::pi;

// Angle brought to [-pi, pi).
double WrapAngle(double a) {
  double w = std::fmod(a + kPi, kTwoPi);
  if (w < 0.0) w += kTwoPi;
  return w - kPi;
}

}  // namespace

Result<JointSpace> JointSpace::Create(std::vector<double> lower, std::vector<double> upper, std::vector<bool> wraps) {
  if (lower.empty()) return core::InvalidArgument("joint space: no coordinates");
  if (upper.size() != lower.size() || wraps.size() != lower.size()) {
    return core::InvalidArgument("joint space: " + std::to_string(lower.size()) + " lower bounds, " +
                                 std::to_string(upper.size()) + " upper bounds and " + std::to_string(wraps.size()) +
                                 " wrap flags");
  }
  JointSpace space;
  double extent2 = 0.0;
  for (size_t i = 0; i < lower.size(); ++i) {
    if (wraps[i]) {
      lower[i] = -kPi;
      upper[i] = kPi;
      extent2 += kPi * kPi;
      space.any_wraps_ = true;
      continue;
    }
    if (!std::isfinite(lower[i]) || !std::isfinite(upper[i]) || lower[i] > upper[i]) {
      return core::InvalidArgument("joint space: coordinate " + std::to_string(i) + " has bounds [" +
                                   core::FormatNumber(lower[i]) + ", " + core::FormatNumber(upper[i]) +
                                   "]; a bounded coordinate needs finite lower <= upper");
    }
    extent2 += (upper[i] - lower[i]) * (upper[i] - lower[i]);
  }
  space.lower_ = std::move(lower);
  space.upper_ = std::move(upper);
  space.wraps_.assign(wraps.begin(), wraps.end());
  space.max_extent_ = std::sqrt(extent2);
  return space;
}

JointSpace JointSpace::ForRobot(const core::RobotModel& robot) {
  const int32_t n = robot.num_positions();
  std::vector<bool> wraps(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    wraps[static_cast<size_t>(i)] = robot.joint(robot.active_joints()[static_cast<size_t>(i)]).type ==
                                    core::JointType::kContinuous;
  }
  auto space = Create(robot.lower_limits(), robot.upper_limits(), std::move(wraps));
  // A built RobotModel has finite limits for every bounded joint and at least one active joint; a robot
  // without active joints gets a one-coordinate point space so callers still see a valid object.
  if (!space.ok()) return Create({0.0}, {0.0}, {false}).value();
  return std::move(space).value();
}

void JointSpace::Difference(std::span<const double> a, std::span<const double> b, std::span<double> out) const {
  for (size_t i = 0; i < lower_.size(); ++i) {
    const double d = b[i] - a[i];
    out[i] = wraps_[i] ? core::ShortestTurn(d) : d;
  }
}

double JointSpace::Distance(std::span<const double> a, std::span<const double> b) const {
  double s = 0.0;
  for (size_t i = 0; i < lower_.size(); ++i) {
    double d = b[i] - a[i];
    if (wraps_[i]) d = core::ShortestTurn(d);
    s += d * d;
  }
  return std::sqrt(s);
}

void JointSpace::Interpolate(std::span<const double> a, std::span<const double> b, double t,
                             std::span<double> out) const {
  for (size_t i = 0; i < lower_.size(); ++i) {
    if (wraps_[i]) {
      out[i] = WrapAngle(a[i] + t * core::ShortestTurn(b[i] - a[i]));
    } else {
      out[i] = a[i] + t * (b[i] - a[i]);
    }
  }
}

void JointSpace::SegmentEnd(std::span<const double> a, std::span<const double> b, std::span<double> out) const {
  for (size_t i = 0; i < lower_.size(); ++i) out[i] = wraps_[i] ? a[i] + core::ShortestTurn(b[i] - a[i]) : b[i];
}

void JointSpace::Sample(Rng& rng, std::span<double> out) const {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (size_t i = 0; i < lower_.size(); ++i) out[i] = lower_[i] + u(rng) * (upper_[i] - lower_[i]);
}

void JointSpace::Normalize(std::span<double> q) const {
  for (size_t i = 0; i < lower_.size(); ++i) {
    if (wraps_[i]) q[i] = WrapAngle(q[i]);
  }
}

bool JointSpace::Contains(std::span<const double> q) const {
  if (q.size() != lower_.size()) return false;
  for (size_t i = 0; i < lower_.size(); ++i) {
    if (!std::isfinite(q[i])) return false;
    if (!wraps_[i] && (q[i] < lower_[i] || q[i] > upper_[i])) return false;
  }
  return true;
}

Status JointSpace::Check(std::span<const double> q, const char* what) const {
  if (q.size() != lower_.size()) {
    return core::InvalidArgument(std::string(what) + " has " + std::to_string(q.size()) + " values; the space has " +
                                 std::to_string(lower_.size()) + " coordinates");
  }
  for (size_t i = 0; i < lower_.size(); ++i) {
    if (!std::isfinite(q[i])) {
      return core::InvalidArgument(std::string(what) + "[" + std::to_string(i) + "] is not finite");
    }
    if (!wraps_[i] && (q[i] < lower_[i] || q[i] > upper_[i])) {
      return core::InvalidArgument(std::string(what) + "[" + std::to_string(i) + "] = " + core::FormatNumber(q[i]) +
                                   " lies outside [" + core::FormatNumber(lower_[i]) + ", " + core::FormatNumber(upper_[i]) +
                                   "]");
    }
  }
  return Status::Ok();
}

}  // namespace proximity::planners
