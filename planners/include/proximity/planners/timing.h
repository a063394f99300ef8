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
/// from 0, increasing). Every sample lies on the path's straight segments or on a certified corner
/// blend (see TimeOptimalTrajectory).
struct TimedTrajectory {
  int32_t dof = 0;
  std::vector<double> time;
  std::vector<double> positions, velocities, accelerations;  ///< rows of dof values
  /// Per waypoint of the path, its sample (duplicate waypoints share one): the waypoint itself, at
  /// rest or passed straight through, or for a blended corner the middle of its arc (the sample
  /// closest to the corner).
  std::vector<int32_t> waypoint_samples;
  int32_t blended_corners = 0;  ///< Corners passed on a blend arc instead of at rest.
  /// The largest joint-space distance (Euclidean norm) between a blended corner and its arc.
  double max_deviation = 0.0;
  double duration() const { return time.empty() ? 0.0 : time.back(); }
  size_t size() const { return time.size(); }
};

/// A corner blend (Kunz and Stilman): the circular arc tangent to both segments at a corner, in their
/// plane, that replaces the corner. Its points are center + radius (cos t x + sin t y) for t in
/// [0, angle]; x and y are orthonormal, y the incoming direction (t = 0 is where the arc leaves the
/// incoming segment, t = angle where it joins the outgoing one).
struct BlendArc {
  std::vector<double> center, x, y;
  double radius = 0.0, angle = 0.0;
  /// The point at parameter t, into q (size of center).
  void At(double t, std::span<double> q) const;
};

/// Says whether a blend arc may be followed. A checker answers true only when every configuration on
/// the arc is as free as the path's checked segments are (for a certified path: certified free).
class BlendChecker {
 public:
  virtual ~BlendChecker() = default;
  [[nodiscard]] virtual core::Result<bool> ArcFree(const BlendArc& arc) const = 0;
};

/// How TimeOptimalTrajectory samples and blends.
struct TimingOptions {
  double resample_dt = 0.01;       ///< Seconds between samples, finite and > 0.
  int64_t max_samples = 1000000;   ///< More samples than this is an error.
  /// MoveIt's path_tolerance: how far (joint-space Euclidean norm) the trajectory may pass from a corner
  /// of the path on a blend arc instead of stopping there. 0 (the default): every waypoint is passed at
  /// rest, on the path exactly. Finite and >= 0.
  double path_tolerance = 0.0;
  /// Required when path_tolerance > 0: asked about every arc the timing would use. A corner whose arc it
  /// refuses, and then the arc a quarter as far from the corner, is passed at rest.
  const BlendChecker* blend_checker = nullptr;
  /// Asked between corners while blends are chosen (a path of many corners costs many checks); when it
  /// says stop, TimeOptimalTrajectory ends with a kStopped error.
  core::Interrupt stop;
};

/// Time-optimal timing of `path` (Kunz and Stilman's time-optimal path following). The geometric path
/// is the waypoints joined by straight segments (wrapping coordinates the short way,
/// JointSpace::SegmentEnd, from the previous segment's end), each corner either passed at rest or, with
/// options.path_tolerance > 0, replaced by the circular arc tangent to both segments that comes within
/// path_tolerance of the corner and takes at most half of either segment (MoveIt's blends), when
/// options.blend_checker accepts it and the blend shortens the trajectory (an arc is held at one speed,
/// so a sharp turn's blend can be slower than stopping; corners are decided one by one, in order);
/// collinear corners are passed without stopping.
///
/// Along a straight segment the joints move together at the largest path speed and acceleration every
/// joint's limits allow (V = min over the moving joints of v_j / |u_j|, A = min of a_j / |u_j|, u the
/// unit direction): accelerating at A, cruising at V and braking at A (a trapezoid, or a triangle when the
/// segment is too short to reach V). An arc is followed at one speed, the largest that its joints'
/// velocity and centripetal acceleration limits allow over the whole arc and that the segments on either
/// side can reach and leave within their own limits (a forward and a backward pass, as Kunz and Stilman
/// integrate the phase plane, with the arcs held at constant speed). Rest at the first and last
/// waypoint. On the straight segments no timing of the same path is faster.
///
/// Samples: at every waypoint (or arc middle), every switch of a segment's profile, the ends of every
/// arc, and every `resample_dt` seconds from 0. A segment's acceleration holds from a sample to the
/// next (the value at a sample is the one that starts there); on an arc the values are the arc's at the
/// sample. The last row is the path's last waypoint as given. Errors: a path of fewer than 1 waypoint
/// or of the wrong width, non-finite values, a joint that moves without a finite velocity or
/// acceleration limit > 0 (named), a bad resample_dt or path_tolerance, path_tolerance > 0 without a
/// checker, more than `max_samples` samples, the checker's errors, and kStopped when options.stop said so.
[[nodiscard]] core::Result<TimedTrajectory> TimeOptimalTrajectory(const JointSpace& space,
                                                                  std::span<const Configuration> path,
                                                                  const TimingLimits& limits,
                                                                  const std::vector<std::string>& joint_names,
                                                                  const TimingOptions& options);
/// As above with resample_dt and max_samples, every waypoint passed at rest.
[[nodiscard]] core::Result<TimedTrajectory> TimeOptimalTrajectory(const JointSpace& space,
                                                                  std::span<const Configuration> path,
                                                                  const TimingLimits& limits,
                                                                  const std::vector<std::string>& joint_names,
                                                                  double resample_dt = 0.01,
                                                                  int64_t max_samples = 1000000);

}  // namespace proximity::planners
