#pragma once
// Entry points of the collision queries without input validation, for callers whose poses and shapes
// are valid by construction (a built scene: validated world poses, link poses from forward
// kinematics). Validation costs more than a bounding-volume test, and CLEAR makes a dozen of these
// calls per state. The public functions validate and then call these.

#include "bvh/mesh_query.h"
#include "bvh/shape_query.h"
#include "base/numerics.h"

namespace proximity::core::internal {

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
