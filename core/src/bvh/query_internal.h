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
/// Mesh-shape collision; `result` must be cleared.
void CollideMeshShapeTrusted(const MeshModel& mesh, const RigidTransform& X_WM, const Shape& shape,
                             const RigidTransform& X_WS, const CollisionRequest& request, CollisionResult* result);
/// The largest distance of a model's points from its frame's origin, in every coordinate: its root
/// sphere's centre plus radius (the scale of a query's rounding, RoundingAllowance).
inline double ModelReach(const MeshModel& m) { return m.spheres()[0].center.norm() + m.spheres()[0].radius; }
/// Whether two shapes share a point (ISA-GJK).
bool ShapesIntersectTrusted(const Shape& a, const RigidTransform& X_WA, const Shape& b, const RigidTransform& X_WB);

}  // namespace proximity::core::internal
