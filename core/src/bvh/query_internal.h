#pragma once
// Entry points of the collision queries without input validation, for callers whose poses and shapes
// are valid by construction (a built scene: validated world poses, link poses from forward
// kinematics). Validation costs more than a bounding-volume test, and CLEAR makes a dozen of these
// calls per state. The public functions validate and then call these.

#include <algorithm>
#include <limits>

#include "bvh/mesh_query.h"
#include "bvh/shape_query.h"
#include "base/numerics.h"

namespace proximity::core::internal {

/// "Exact" distance answers are intervals of relative width at most this: node pairs whose bound is within
/// rounding of the upper bound (faces at exactly the closest distance, common on boxes and CAD meshes) are
/// settled without testing each of them.
inline constexpr double kExactRelativeWidth = 1e-12;

/// A distance walk's pruning threshold: node pairs whose lower bound reaches it may be skipped (L (1 + rel)
/// >= upper, L + abs >= upper, or L >= max_distance); -infinity once the walk is done. It is done when an
/// upper bound below stop_below is found, or when the upper bound meets the budget against the caller's
/// certified lower bound (DistanceRequest::known_lower; 0: none) or comes within twice the rounding
/// allowance of it: that bound lost about one allowance to rounding and the answer's lower end loses one
/// more, so a whole walk could end no narrower. `rounding`: the walk's RoundingAllowance.
inline double DistanceWalkThreshold(double upper, double known_lower, double rel_err, double abs_err, double rounding,
                                    double stop_below, double max_distance) {
  const double rel = std::max(rel_err, kExactRelativeWidth);
  const bool met = known_lower > 0.0 && (upper <= known_lower * (1.0 + rel) ||
                                         upper - known_lower <= std::max(abs_err, 2.0 * rounding));
  return upper < stop_below || met ? -std::numeric_limits<double>::infinity()
                                   : std::min({upper / (1.0 + rel), upper - abs_err, max_distance});
}

/// First-contact mesh-mesh collision; `result` must be cleared.
void CollideTrusted(const MeshModel& a, const RigidTransform& X_WA, const MeshModel& b, const RigidTransform& X_WB,
                    const CollisionRequest& request, CollisionResult* result);
/// Two leaf triangles, one of each model, by their index in the model's leaf order
/// (MeshModel::leaf_triangles); -1: none.
struct LeafPair {
  int32_t a = -1;
  int32_t b = -1;
};
/// Whether leaf triangle pair.a of `a` and pair.b of `b` share a point, tested as the collision walk
/// tests them; false for a pair out of the models' range. Adds the work to `stats`.
bool LeafPairIntersects(const MeshModel& a, const RigidTransform& X_WA, const MeshModel& b,
                        const RigidTransform& X_WB, LeafPair pair, QueryStats* stats);
/// First-contact mesh-mesh collision (CollideTrusted without a contact list): the contact found is
/// written to `contact`. Adds the work to `stats`.
bool CollideFirstTrusted(const MeshModel& a, const RigidTransform& X_WA, const MeshModel& b,
                         const RigidTransform& X_WB, LeafPair* contact, QueryStats* stats);
/// ComputeDistance for a valid request (ValidateDistanceRequest) and poses.
DistanceResult ComputeDistanceTrusted(const MeshModel& a, const RigidTransform& X_WA, const MeshModel& b,
                                      const RigidTransform& X_WB, const DistanceRequest& request, DistanceCache* cache);
/// Mesh-shape collision; `result` must be cleared.
void CollideMeshShapeTrusted(const MeshModel& mesh, const RigidTransform& X_WM, const Shape& shape,
                             const RigidTransform& X_WS, const CollisionRequest& request, CollisionResult* result);
/// The largest distance of a model's points from its frame's origin, in every coordinate: its root
/// sphere's centre plus radius (the scale of a query's rounding, RoundingAllowance).
inline double ModelReach(const MeshModel& m) { return m.spheres()[0].center.norm() + m.spheres()[0].radius; }
/// How far a model's points can move when up to two revolute joints turn by at most a given angle each:
/// the joints' axes in the model's frame as they lie at the start. Turning a chain's joints by t0 and t1
/// moves the model by R1 R0 (each a rotation about its axis as it lies at the start), so a point p moves
/// by |R1 R0 p - p| <= |R0 p - p| + |R1 p - p| (R1 keeps distances) <= t0 d0(p) + t1 d1(p), d the
/// distance from the axis: the axes' order and how one carries the other do not matter.
struct AxisSweep {
  int32_t count = 0;  ///< 0, 1 or 2 axes
  Vec3 point[2] = {Vec3::Zero(), Vec3::Zero()};
  Vec3 direction[2] = {Vec3::UnitZ(), Vec3::UnitZ()};  ///< unit
  double angle[2] = {0.0, 0.0};                         ///< rad, >= 0
  /// The most any point within `radius` of `center` moves.
  double Bound(const Vec3& center, double radius) const {
    double move = 0.0;
    for (int32_t k = 0; k < count; ++k) move += angle[k] * ((center - point[k]).cross(direction[k]).norm() + radius);
    return move * (1.0 + 1e-9);
  }
};
/// A lower bound on the distance between meshes a and b over every pair of poses their sweeps reach
/// from X_WA and X_WB (each point of a moves at most sweep_a.Bound of its node, of b likewise): the
/// smallest over the node pairs a hierarchy walk stops at of their distance less both nodes' motion.
/// Returns a value <= target as soon as a pair of leaves comes within target of each other that way, or
/// when the walk has made max_tests box tests; the work is added to `stats`.
double SweptDistanceLowerBound(const MeshModel& a, const RigidTransform& X_WA, const AxisSweep& sweep_a,
                               const MeshModel& b, const RigidTransform& X_WB, const AxisSweep& sweep_b,
                               double target, int64_t max_tests, QueryStats* stats);
/// Whether two shapes share a point (ISA-GJK).
bool ShapesIntersectTrusted(const Shape& a, const RigidTransform& X_WA, const Shape& b, const RigidTransform& X_WB);

}  // namespace proximity::core::internal
