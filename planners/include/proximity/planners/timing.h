#pragma once
/// @file
/// Time stamps for a joint-space path from the robot's joint velocity limits (the URDF's
/// <limit velocity>): each straight segment lasts the least time every joint's limit allows, with the
/// joints moving together (a synchronised move, as a controller plays back a waypoint list without
/// acceleration limits).
///
/// Rule: segment i -> i + 1 lasts max over the active joints j with a velocity limit v_j > 0 of
/// |q[i + 1][j] - q[i][j]| / v_j seconds, continuous joints turning the short way (|ShortestTurn(...)|,
/// as every motion query moves them). Joints without a limit (absent or 0 in the URDF) do not count;
/// a segment that moves no limited joint lasts 0 s. Accelerations are not limited: the times are a
/// lower bound on any real execution.

#include <span>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/robot/robot_model.h"

namespace proximity::planners {

/// Velocity limits per entry of q (rad/s or m/s; 0 for a joint the URDF gives none, or gives one that
/// is not finite and > 0).
std::vector<double> VelocityLimits(const core::RobotModel& robot);

/// The time (seconds) each row of `path` is reached, by the rule above: path.size() / dof rows, the
/// first at 0. Empty when the robot has no active joint with a velocity limit (or no joints). Errors:
/// a size that is not a whole number of rows, a value that is not finite.
[[nodiscard]] core::Result<std::vector<double>> TimeFromStart(const core::RobotModel& robot,
                                                              std::span<const double> path);

}  // namespace proximity::planners
