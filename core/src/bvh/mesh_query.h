#pragma once
/// @file
/// Collision and distance between two built meshes posed in the world.
///
/// Meshes are surfaces: two meshes collide when some triangle of one shares a point with some
/// triangle of the other (touching counts), and their distance is the smallest distance between their
/// triangles. A mesh wholly inside another without touching its surface neither collides nor has
/// distance 0 (closed-solid semantics come with convex shapes and signed distance maps).
///
/// Distance semantics, on purpose unlike FCL's and PQP's: every result carries a certified interval
/// lower_bound <= true distance <= upper_bound, and the nearest points returned realise upper_bound
/// exactly. With rel_err = abs_err = 0 the answer is exact: the interval's relative width is at most
/// 1e-12, so that pairs of faces at exactly the closest distance (boxes, CAD meshes) are settled
/// without testing each one. With a budget, the walk stops early and guarantees
///   upper_bound <= lower_bound * (1 + rel_err)   or   upper_bound - lower_bound <= abs_err,
/// unless it stopped because lower_bound >= max_distance (then beyond_max_distance is true and only the
/// interval holds; when the root boxes alone were that far apart no triangle was tested, the upper
/// bound is +inf and the points and triangles are unset). The lower bound is what certification
/// needs; the upper bound and points are real.

#include <cstdint>
#include <limits>
#include <vector>

#include "bvh/bvh.h"
#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"
#include "proximity/core/bvh/query_types.h"

namespace proximity::core {

/// A pair of hierarchy nodes (one of each model) with a lower bound on the distance between their
/// triangles, valid at the relative pose the cache records.
struct NodePairBound {
  int32_t node_a = 0;
  int32_t node_b = 0;
  double bound = 0.0;
  /// Two leaves whose triangles were tested: the unit direction, in A's frame, from the closest point
  /// on A's triangles to the closest on B's (zero when none: inner nodes, touching leaves). At a new
  /// pose the gap of the leaves' vertices projected on it is a lower bound on their distance that stays
  /// tight when the motion since is mostly tangential (a wrist turning about its axis).
  Vec3 axis_A = Vec3::Zero();
};

/// Caller-owned warm-start state for repeated distance queries of one pair of models along a motion.
/// One cache per thread (or per stream); never shared. A cache used with other models is ignored and
/// refilled. It holds:
///  - the last closest triangle pair, whose distance at the new pose seeds the upper bound;
///  - the front of the last walk: node pairs it stopped at, which together cover every triangle pair,
///    each with a lower bound. At the new pose each bound is lowered by a certified bound on how far
///    the second model's node moved relative to the first (from the change of relative pose and the
///    node's bounding sphere); a leaf pair whose lowered bound no longer prunes it is first bounded by
///    the gap of its vertices along its last closest direction, and only pairs that neither prunes are
///    tested again. Answers are the same as without a cache; only the work changes.
struct DistanceCache {
  const MeshModel* model_a = nullptr;
  const MeshModel* model_b = nullptr;
  int32_t leaf_a = -1;  ///< Leaf-order index of A's closest triangle last time.
  int32_t leaf_b = -1;
  RigidTransform X_AB;                ///< Relative pose the front's bounds hold at.
  std::vector<NodePairBound> front;   ///< Empty: the next walk starts at the roots.
  std::size_t cold_front_size = 0;    ///< Front size after the last walk from the roots.
};

/// Checks that a pose is usable: finite, with an orthonormal, right-handed rotation (within 1e-6).
/// `what` names the pose in the error message.
[[nodiscard]] Status ValidatePose(const RigidTransform& X, const char* what);

/// Checks a collision request: max_contacts >= 1 when all_contacts. Errors name the field.
[[nodiscard]] Status ValidateCollisionRequest(const CollisionRequest& request);
/// Checks a distance request: finite, non-negative budgets and a non-negative max_distance.
[[nodiscard]] Status ValidateDistanceRequest(const DistanceRequest& request);

/// Whether meshes a and b, posed at X_WA and X_WB, intersect. Errors only for invalid poses or
/// requests.
[[nodiscard]] Result<CollisionResult> Collide(const MeshModel& a, const RigidTransform& X_WA, const MeshModel& b,
                                              const RigidTransform& X_WB, const CollisionRequest& request);

/// Distance between meshes a and b posed at X_WA and X_WB, as a certified interval (see the file
/// comment). `cache` (caller-owned warm-start state, kept between calls) may be null. Errors only for
/// invalid poses or requests.
[[nodiscard]] Result<DistanceResult> ComputeDistance(const MeshModel& a, const RigidTransform& X_WA,
                                                     const MeshModel& b, const RigidTransform& X_WB,
                                                     const DistanceRequest& request, DistanceCache* cache);

}  // namespace proximity::core
