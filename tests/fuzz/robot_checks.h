#pragma once
// Invariants of a RobotModel that loaded: sizes agree, the default configuration is valid, forward
// kinematics and motion bounds give numbers, the allowed set is symmetric, the SRDF's groups and
// states resolve to configurations or errors.

#include <cmath>
#include <vector>

#include "fuzz_check.h"
#include "proximity/core/robot/robot_model.h"

namespace proximity::fuzz {

inline void CheckRobot(const core::RobotModel& robot) {
  const int32_t dof = robot.num_positions();
  PROX_FUZZ_CHECK(robot.num_links() >= 1, "a robot has a root link");
  PROX_FUZZ_CHECK(robot.num_joints() == robot.num_links() - 1, "joint i has child link i + 1");
  PROX_FUZZ_CHECK(static_cast<int32_t>(robot.lower_limits().size()) == dof &&
                      static_cast<int32_t>(robot.upper_limits().size()) == dof &&
                      static_cast<int32_t>(robot.active_joint_names().size()) == dof,
                  "one limit pair and name per position");
  for (int32_t i = 0; i < dof; ++i) {
    PROX_FUZZ_CHECK(!(robot.lower_limits()[i] > robot.upper_limits()[i]), "lower <= upper");
  }
  const std::vector<double> q0 = robot.DefaultConfiguration();
  PROX_FUZZ_CHECK(static_cast<int32_t>(q0.size()) == dof, "default configuration size");
  const core::Status limits = robot.CheckLimits(q0);
  if (!limits.ok()) {
    // Only a joint whose limits lie beyond the accepted joint values may refuse its own default.
    CheckError(limits.error());
    return;
  }
  const core::Result<std::vector<core::RigidTransform>> fk = robot.ForwardKinematics(q0);
  PROX_FUZZ_CHECK(fk.ok(), fk.status().ToString());
  PROX_FUZZ_CHECK(static_cast<int32_t>(fk.value().size()) == robot.num_links(), "one pose per link");
  for (const core::RigidTransform& X : fk.value()) {
    PROX_FUZZ_CHECK(X.R.allFinite() && X.p.allFinite(), "link poses are finite");
  }
  // A motion to the middle of each limit interval (or by 1 for unbounded joints).
  std::vector<double> q1 = q0;
  for (int32_t i = 0; i < dof; ++i) {
    const double lo = robot.lower_limits()[i], hi = robot.upper_limits()[i];
    q1[i] = std::isfinite(lo) && std::isfinite(hi) ? 0.5 * (lo + hi) : q0[i] + 1.0;
  }
  for (core::LinkIndex k = 0; k < robot.num_links(); ++k) {
    const double b = robot.MotionBound(k, q0, q1);
    PROX_FUZZ_CHECK(!std::isnan(b) && b >= 0.0, "motion bounds are non-negative numbers");
    for (core::LinkIndex l = 0; l < robot.num_links(); ++l) {
      PROX_FUZZ_CHECK(robot.AllowedCollision(k, l) == robot.AllowedCollision(l, k), "allowed set is symmetric");
    }
  }
  for (const core::SrdfGroup& g : robot.srdf().groups) {
    auto indices = robot.GroupActiveIndices(g.name);
    if (!indices.ok()) {
      CheckError(indices.error());
      continue;
    }
    for (size_t i = 0; i < indices.value().size(); ++i) {
      PROX_FUZZ_CHECK(indices.value()[i] >= 0 && indices.value()[i] < dof, "group index in range");
      PROX_FUZZ_CHECK(i == 0 || indices.value()[i - 1] < indices.value()[i], "group indices ascend");
    }
  }
  for (const core::SrdfGroupState& s : robot.srdf().group_states) {
    auto q = robot.NamedConfiguration(s.name, s.group);
    if (!q.ok()) {
      CheckError(q.error());
      continue;
    }
    PROX_FUZZ_CHECK(static_cast<int32_t>(q.value().size()) == dof, "named configuration size");
    for (double v : q.value()) PROX_FUZZ_CHECK(std::isfinite(v), "named configuration values are finite");
  }
}

/// Load options that read no file: every mesh URI resolves to nothing, no package search.
inline core::RobotLoadOptions NoFiles() {
  core::RobotLoadOptions options;
  options.ros_package_path = "";
  options.files = core::FileAccess::Confined({}, 1 << 20).value();
  return options;
}

}  // namespace proximity::fuzz
