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

#include <cstdint>
#include <span>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/robot/robot_model.h"
#include "proximity/planners/joint_space.h"

namespace proximity::planners {

/// Velocity limits per entry of q (rad/s or m/s; 0 for a joint the URDF gives none, or gives one that
/// is not finite and > 0).
std::vector<double> VelocityLimits(const core::RobotModel& robot);

/// The time (seconds) each row of `path` is reached, by the rule above: path.size() / dof rows, the
/// first at 0. Empty when the robot has no active joint with a velocity limit (or no joints). Errors:
/// a size that is not a whole number of rows, a value that is not finite.
[[nodiscard]] core::Result<std::vector<double>> TimeFromStart(const core::RobotModel& robot,
                                                              std::span<const double> path);

/// Per entry of q, the largest speed (rad/s or m/s) and acceleration (rad/s^2 or m/s^2) a timed
/// trajectory may use; MoveIt's joint_limits.yaml max_velocity and max_acceleration. 0 (or absent):
/// none given.
struct TimingLimits {
  std::vector<double> velocity;
  std::vector<double> acceleration;
};

/// A path timed with velocities and accelerations, sampled: rows of dof() values at `time` (seconds,
/// from 0, increasing). Every sample lies on the path's straight segments (see TimeOptimalTrajectory).
struct TimedTrajectory {
  int32_t dof = 0;
  std::vector<double> time;
  std::vector<double> positions, velocities, accelerations;  ///< rows of dof values
  /// Per waypoint of the path, its sample (duplicate waypoints share one).
  std::vector<int32_t> waypoint_samples;
  double duration() const { return time.empty() ? 0.0 : time.back(); }
  size_t size() const { return time.size(); }
};

/// Time-optimal timing of `path` followed exactly (Kunz and Stilman's time-optimal path following with
/// no blend allowed: a path whose corners must be passed exactly is passed at rest there): along each
/// straight segment a -> b (wrapping coordinates the short way, JointSpace::SegmentEnd) the joints move
/// together, at the largest path speed and acceleration every joint's limits allow (V = min over the
/// moving joints of v_j / |u_j|, A = min of a_j / |u_j|, u the unit direction), accelerating at A,
/// cruising at V and braking at A (a trapezoid; a triangle when the segment is too short to reach V),
/// from rest to rest. No other timing of the same geometric path is faster within the limits, and the
/// samples never leave the certified segments: a sample at every waypoint (velocity 0), at every switch
/// of the profile, and every `resample_dt` seconds between; accelerations hold from a sample to the
/// next (the value at a sample is the one that starts there). The last row is the path's last waypoint
/// as given. Errors: a path of fewer than 1 waypoint or of the wrong width, non-finite values, a joint
/// that moves without a finite velocity or acceleration limit > 0 (named), resample_dt not finite and
/// > 0, more than `max_samples` samples.
[[nodiscard]] core::Result<TimedTrajectory> TimeOptimalTrajectory(const JointSpace& space,
                                                                  std::span<const Configuration> path,
                                                                  const TimingLimits& limits,
                                                                  const std::vector<std::string>& joint_names,
                                                                  double resample_dt = 0.01,
                                                                  int64_t max_samples = 1000000);

}  // namespace proximity::planners
