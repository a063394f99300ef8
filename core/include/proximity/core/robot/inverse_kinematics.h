#pragma once
/// @file
/// Numerical inverse kinematics for any chain of a RobotModel: damped least squares (Levenberg-Marquardt
/// damping adapted per step) on the position and orientation error of one link, joint limits enforced
/// at every step, random restarts when a descent stalls. Revolute, continuous and prismatic joints, and
/// mimic joints through the joint they follow.
///
/// A goal is a region, as MoveIt's position and orientation constraints are: a point fixed to the link
/// must lie in a sphere, box or cylinder about the target position (axes along the target frame), and
/// the link's orientation must lie within per-axis tolerances of the target's. A solution is returned
/// only when a fresh forward kinematics of it meets both and every joint lies within its limits.

#include <cstdint>
#include <span>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"
#include "proximity/core/robot/robot_model.h"

namespace proximity::core {

/// The shape of the region a pose goal's point must reach (MoveIt's position-constraint primitives).
enum class PositionRegion { kSphere, kBox, kCylinder };

/// Where a link must be.
struct PoseGoal {
  LinkIndex link = -1;
  /// The point of the link that must reach the target (MoveIt's target_point_offset), in the link frame.
  Vec3 point_L = Vec3::Zero();
  /// The target frame in the robot's root frame (the frame ForwardKinematics poses links in by default;
  /// a scene placing the root at X_WB turns a world target X_WT into X_WB^-1 X_WT): its origin is the
  /// position the point must reach, its rotation the orientation the link frame must take.
  RigidTransform X_WT;
  /// The region about the target's origin, axes along the target frame: kSphere, radius size.x();
  /// kBox, half-extents size; kCylinder, radius size.x() about the target's z axis and half-length size.z().
  /// Every size used must be finite and > 0 (MoveIt's pose goals: a sphere of 1e-4 m).
  PositionRegion region = PositionRegion::kSphere;
  Vec3 region_size = Vec3::Constant(1e-4);
  /// Whether the orientation is constrained at all (false: a position goal).
  bool constrain_orientation = true;
  /// Per-axis bounds (rad, finite, > 0) on the rotation vector of the link frame's orientation seen from
  /// the target frame, R_WT^T R_WL (MoveIt's absolute_{x,y,z}_axis_tolerance, rotation-vector
  /// parameterisation). MoveIt's pose goals: 1e-3 rad.
  Vec3 orientation_tolerance = Vec3::Constant(1e-3);
};

/// How hard to try.
struct IkOptions {
  /// Positions in q that may move (for an SRDF group: RobotModel::GroupActiveIndices); empty: every
  /// active joint that moves the goal's link. The rest keep the seed's values.
  std::vector<int32_t> variables;
  /// Descents tried: the first from the seed (unless start_at_seed is false), the rest from uniformly
  /// random values of the variables within their limits (continuous joints: [-pi, pi]).
  int32_t max_attempts = 300;
  /// Whether the first descent starts from the seed. False: every descent starts from random values
  /// (a goal sampler drawing different solutions; the seed still gives the values that do not move).
  bool start_at_seed = true;
  /// Steps a descent may take before it is abandoned.
  int32_t max_iterations = 100;
  /// Seed of the random restarts: the same inputs give the same answer.
  uint64_t seed = 1;
};

/// What SolveIk found.
struct IkSolution {
  bool found = false;
  /// The solution (found) or the seed. Continuous joints are turned to within pi of the seed's values.
  std::vector<double> q;
  double position_error = 0.0;     ///< Distance (m) of the point from the target position.
  double orientation_error = 0.0;  ///< Angle (rad) between the link's and the target's orientation.
  int32_t attempts = 0;            ///< Descents started.
  int32_t iterations = 0;          ///< Steps taken over all descents (forward kinematics evaluated).
};

/// InvalidArgument naming the field of a malformed goal: unknown link, non-finite numbers, a region size
/// or tolerance <= 0, a target rotation that is not a rotation.
[[nodiscard]] Status CheckPoseGoal(const RobotModel& robot, const PoseGoal& goal);

/// Whether the link's point and frame at the link pose X_WL meet the goal; the errors go to the
/// optional outputs (as IkSolution's).
bool PoseGoalMet(const PoseGoal& goal, const RigidTransform& X_WL, double* position_error = nullptr,
                 double* orientation_error = nullptr);

/// Solves for q with the goal met, starting from `seed_q` (num_positions() finite values; the variables'
/// values are clamped onto their limits before the first descent, the others are kept and must lie
/// within their limits for any answer to be found). Errors: malformed goal, seed or options (variables out of range or
/// repeated, none of which moves the link, attempts or iterations < 1). Not finding a solution is not an
/// error (found = false, q = the seed). `stop` ends the search early (found = false unless the attempt
/// that was running had succeeded). Thread-safe; allocates only its scratch.
[[nodiscard]] Result<IkSolution> SolveIk(const RobotModel& robot, const PoseGoal& goal, std::span<const double> seed_q,
                                         const IkOptions& options = {}, const Interrupt& stop = {});

}  // namespace proximity::core
