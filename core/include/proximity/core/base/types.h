#pragma once
/// @file
/// Basic geometric types. Frame notation follows the project convention: X_AB is the pose of frame B
/// in frame A, p_AQ the position of point Q in frame A, R_AB the rotation of B in A. Units are metres
/// (or the mesh's own units) and radians.

#include <Eigen/Core>
#include <Eigen/Geometry>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace proximity::core {

/// What the core accepts as input, so that no arithmetic on accepted values overflows or loses the
/// answer. Every coordinate of the world (object poses and extents, mesh vertices, link geometry, joint
/// origins, padding) lies within kWorldExtent metres of the origin; every joint value within
/// kMaxJointValue (radians or metres); a sampled motion check visits at most kMaxMotionSteps states per
/// segment. Larger values are refused with an error naming the field and the limit, never rounded.
inline constexpr double kWorldExtent = 1e4;
inline constexpr double kMaxJointValue = 1e4;
inline constexpr double kMaxMotionSteps = 1e7;

/// A caller's request to stop a long query early: a cancelled call, an expired deadline. Queries ask it
/// between states, segments and advancement steps (never inside a hierarchy walk or a GJK loop); a query
/// it stops reports `stopped` and never answers "free". Holds a plain function pointer and a context,
/// so copying it is free; the callable it wraps must outlive every query that asks it.
class Interrupt {
 public:
  Interrupt() = default;
  /// Wraps `f`, a callable returning true once the query should stop (kept by reference).
  template <class F>
    requires(std::is_invocable_r_v<bool, F&> && !std::is_same_v<std::remove_cvref_t<F>, Interrupt>)
  explicit Interrupt(F& f)
      : poll_([](const void* c) { return static_cast<bool>((*static_cast<F*>(const_cast<void*>(c)))()); }),
        context_(&f) {}
  /// Whether the query should stop now.
  bool operator()() const { return poll_ != nullptr && poll_(context_); }
  explicit operator bool() const { return poll_ != nullptr; }

 private:
  bool (*poll_)(const void*) = nullptr;
  const void* context_ = nullptr;
};

/// Caps on what building a robot model or a scene may take on, each checked before the work it bounds
/// (a hostile URDF of 10,000 joints must be refused, not built); 0 means no cap. Refusals are
/// kResourceExhausted errors that name the cap's field.
struct BuildLimits {
  int64_t max_links = 0;           ///< Links of a robot.
  int64_t max_joints = 0;          ///< Joints of a robot (fixed ones included).
  int64_t max_link_triangles = 0;  ///< Triangles of one link's collision mesh, checked before its hierarchy.
  int64_t max_self_pairs = 0;      ///< Pairs of robot parts a scene checks against each other.
  int64_t max_memory_bytes = 0;    ///< A build's estimated memory, estimated before its large allocations.
};

using Vec3 = Eigen::Vector3d;
using Mat3 = Eigen::Matrix3d;

/// A rigid transform X_AB = [R_AB, p_AoBo]: maps points from frame B to frame A.
/// Kept as rotation + translation (not a 4x4 matrix) so that the hot paths touch 12 doubles.
struct RigidTransform {
  Mat3 R = Mat3::Identity();
  Vec3 p = Vec3::Zero();

  static RigidTransform Identity() { return {}; }
  RigidTransform() = default;
  RigidTransform(const Mat3& rotation, const Vec3& translation) : R(rotation), p(translation) {}
  explicit RigidTransform(const Eigen::Isometry3d& X) : R(X.linear()), p(X.translation()) {}

  /// p_A = X_AB * p_B.
  Vec3 operator*(const Vec3& p_B) const { return R * p_B + p; }
  /// X_AC = X_AB * X_BC.
  RigidTransform operator*(const RigidTransform& X_BC) const { return {R * X_BC.R, R * X_BC.p + p}; }
  /// X_BA.
  RigidTransform inverse() const {
    Mat3 Rt = R.transpose();
    return {Rt, -(Rt * p)};
  }
  Eigen::Isometry3d ToIsometry() const {
    Eigen::Isometry3d X = Eigen::Isometry3d::Identity();
    X.linear() = R;
    X.translation() = p;
    return X;
  }
};
/// The pose (p, q) with q's rotation normalised: how poses given as a position and a quaternion (the
/// wire's, a scene file's) become transforms, so that every path from the same numbers gives the same
/// bits.
inline RigidTransform PoseFromQuaternion(const Vec3& p, const Eigen::Quaterniond& q) {
  return RigidTransform(q.normalized().toRotationMatrix(), p);
}


/// X_AB^-1 * X_AC = X_BC, without forming the inverse.
inline RigidTransform RelativeTransform(const RigidTransform& X_AB, const RigidTransform& X_AC) {
  return {X_AB.R.transpose() * X_AC.R, X_AB.R.transpose() * (X_AC.p - X_AB.p)};
}

/// Work a query did, for benchmarks and for tuning. Counted on every query.
struct QueryStats {
  int64_t bv_tests = 0;        ///< Bounding-volume pair tests (overlap or distance bound).
  int64_t triangle_tests = 0;  ///< Exact triangle-pair tests (intersection or distance).
  /// Scene queries' GJK tests on convex stand-ins (link hulls against parts; also counted in bv_tests),
  /// their loop iterations, and how many of them the caller's cache answered warm: it held the pair's
  /// previous simplex or separating axis and the test ended within two iterations.
  int64_t convex_tests = 0;
  int64_t convex_iterations = 0;
  int64_t convex_warm = 0;

  QueryStats& operator+=(const QueryStats& o) {
    bv_tests += o.bv_tests;
    triangle_tests += o.triangle_tests;
    convex_tests += o.convex_tests;
    convex_iterations += o.convex_iterations;
    convex_warm += o.convex_warm;
    return *this;
  }
};

}  // namespace proximity::core
