#pragma once
// The robot a benchmark run or the problem generator is asked for on the command line: a URDF, an
// optional SRDF, package folders for package:// URIs and an optional SRDF group. Without a group every
// movable joint of the URDF is a coordinate, in the model's order; with one, the joints outside the
// group are frozen (made fixed) at given values, so that every suite, peer and planner sees a robot
// whose configuration is exactly the group's joints.

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/robot/robot_model.h"

namespace proximity::bench {

/// Exit code for bad input on the command line (a missing file, a malformed flag, an unusable robot).
inline constexpr int kBadInput = 2;

/// The robot flags: --robot URDF [--srdf SRDF] [--package NAME=DIR]... [--group NAME].
struct RobotSpec {
  std::string urdf;
  std::string srdf;
  std::vector<std::string> packages;  ///< "NAME=DIR", as given.
  std::string group;
  /// --collision-from-visual: each link collides with its <visual> geometry (both sides of the run).
  bool collision_from_visual = false;

  bool given() const { return !urdf.empty(); }
};

/// A loaded robot: the model every run uses, and the joints held fixed outside the group.
struct LoadedRobot {
  std::shared_ptr<const core::RobotModel> model;
  /// Movable joints of the URDF outside the group, frozen at these values (radians or metres), in the
  /// URDF model's joint order. Empty without a group.
  std::vector<std::pair<std::string, double>> frozen;
  /// The group's name, or "" when every movable joint is a coordinate.
  std::string group;
};

/// The group name written into generated requests when no group is given: every movable joint.
inline constexpr char kAllJointsGroup[] = "all_movable_joints";

/// Loads the robot `spec` names. Joints outside spec.group are frozen at `frozen_values[name]` when
/// given (the first problem's start state), otherwise at the model's default configuration (0, or the
/// middle of the limits when 0 lies outside them); mimic joints follow their leader. Every error names
/// the flag and the file or name at fault: a missing URDF or SRDF, a malformed --package, a package
/// folder that does not exist, a mesh URI naming a package no --package maps (and no ROS_PACKAGE_PATH
/// holds), an unknown group, --group without --srdf, and a robot (or group) with no movable joint.
/// Packages given but never named by the URDF are reported in *warnings.
[[nodiscard]] core::Result<LoadedRobot> LoadRobot(const RobotSpec& spec,
                                                  const std::map<std::string, double>& frozen_values,
                                                  std::vector<std::string>* warnings);

/// The URDF text `urdf_xml` with every joint named in `values` turned into a fixed joint at that value:
/// its origin becomes X_PJ * motion(axis, value) and its <mimic> is dropped. `model` is the model
/// loaded from the same text (for the joint frames, axes and types). Errors name a joint the text or
/// the model lacks.
[[nodiscard]] core::Result<std::string> FreezeJoints(const std::string& urdf_xml, const core::RobotModel& model,
                                                     const std::vector<std::pair<std::string, double>>& values);

/// The link the ik and pose suites solve for: `tip` when given (NotFound naming it when the robot lacks
/// it), else the tip of `group`'s first chain, else the first link (in the model's order) with the most
/// moving joints above it.
[[nodiscard]] core::Result<core::LinkIndex> TipLink(const core::RobotModel& robot, const std::string& tip,
                                                    const std::string& group);

/// A name safe to use in a file name: the robot's name with every character outside [A-Za-z0-9_.-]
/// replaced by '_' ("robot" when empty).
std::string FileLabel(const std::string& name);

}  // namespace proximity::bench
