#pragma once
/// @file
/// The joint space planners search: one coordinate per active joint, bounded by the joint limits, with
/// continuous joints wrapping around (their coordinate lives on a circle of circumference 2 pi).
///
/// Metric: the Euclidean norm of the per-joint differences, where a wrapping joint's difference is the
/// shorter way around the circle. The straight segment from a to b is a + t * Difference(a, b), t in
/// [0, 1]; for a wrapping joint its end may leave [-pi, pi) (it is the same angle), and a motion check
/// is always asked about that segment, never about the long way round.

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/robot/robot_model.h"

namespace proximity::planners {

using core::Result;
using core::Status;

/// A configuration: one value per coordinate (radians or metres).
using Configuration = std::vector<double>;

/// The random engine every planner uses; seeded by the caller for determinism.
using Rng = std::mt19937_64;

/// Bounded joint space with optional wrapping coordinates. Immutable, cheap to copy, thread-safe.
class JointSpace {
 public:
  /// Bounds per coordinate; `wraps[i]` marks a continuous joint, whose bounds are ignored (its range
  /// is [-pi, pi)). Errors: sizes differ, no coordinate, a non-wrapping coordinate with non-finite
  /// bounds or lower > upper.
  [[nodiscard]] static Result<JointSpace> Create(std::vector<double> lower, std::vector<double> upper,
                                                 std::vector<bool> wraps);
  /// The robot's active joints: revolute and prismatic within their limits, continuous ones wrapping.
  static JointSpace ForRobot(const core::RobotModel& robot);

  int32_t dof() const { return static_cast<int32_t>(lower_.size()); }
  const std::vector<double>& lower() const { return lower_; }
  const std::vector<double>& upper() const { return upper_; }
  bool wraps(int32_t i) const { return wraps_[static_cast<size_t>(i)] != 0; }
  bool any_wraps() const { return any_wraps_; }

  /// b - a per coordinate, the shorter way round for wrapping ones (in [-pi, pi]).
  void Difference(std::span<const double> a, std::span<const double> b, std::span<double> out) const;
  /// Length of the straight segment a -> b.
  double Distance(std::span<const double> a, std::span<const double> b) const;
  /// a + t * Difference(a, b), with wrapping coordinates brought back to [-pi, pi).
  void Interpolate(std::span<const double> a, std::span<const double> b, double t, std::span<double> out) const;
  /// The end of the straight segment from a toward b as a motion check must see it: a + Difference(a, b)
  /// (equal to b except that a wrapping coordinate may lie outside [-pi, pi)).
  void SegmentEnd(std::span<const double> a, std::span<const double> b, std::span<double> out) const;
  /// Uniform sample of the bounded space.
  void Sample(Rng& rng, std::span<double> out) const;
  /// Wrapping coordinates to [-pi, pi); others unchanged.
  void Normalize(std::span<double> q) const;
  /// Whether q has dof() finite entries within the bounds (wrapping coordinates: any finite value).
  bool Contains(std::span<const double> q) const;
  /// InvalidArgument naming `what` and the first bad coordinate (wrong size, NaN, out of bounds).
  [[nodiscard]] Status Check(std::span<const double> q, const char* what) const;
  /// Length of the space's diagonal: the norm of the per-coordinate ranges (pi for wrapping ones, the
  /// longest difference they can have). OMPL's "maximum extent"; ranges and resolutions scale with it.
  double MaxExtent() const { return max_extent_; }

 private:
  std::vector<double> lower_, upper_;
  std::vector<char> wraps_;
  bool any_wraps_ = false;
  double max_extent_ = 0.0;
};

}  // namespace proximity::planners
