#pragma once
/// @file
/// Collision and distance between a built triangle mesh and a convex primitive, and between two
/// primitives, all posed in the world.
///
/// The mesh is a surface and the primitive a solid: they collide when some mesh triangle shares a
/// point with the solid (touching, or closer than GJK's 1e-12 contact tolerance, counts), so a triangle
/// lying wholly inside a box collides with it, unlike the same box given as a 12-triangle mesh to
/// Collide. Their distance is the smallest distance between a mesh triangle and the solid.
///
/// Mesh–shape walks descend the mesh's OBB tree against one bounding OBB of the shape (Gottschalk,
/// Lin, Manocha, "OBBTree", SIGGRAPH 1996) and test each leaf triangle against the shape exactly by
/// GJK (Gilbert, Johnson, Keerthi 1988; ISA-GJK, van den Bergen 2004) or, for boxes, by the 13-axis
/// triangle–box separating-axis test (Akenine-Möller, "Fast 3D triangle-box overlap testing", JGT 2001).
/// The variant is resolved once per query; the walk is a template on the shape type.
///
/// Distance results follow mesh_query.h: a certified interval lower_bound <= distance <= upper_bound,
/// witness points realising upper_bound, the same rel_err / abs_err / max_distance rules. The leaves'
/// lower bounds are GJK's certified lower bounds, so with zero budgets the interval is as narrow as GJK
/// certifies: relative width about 1e-12 for boxes, spheres, capsules and polytopes, and about 1e-9 on
/// the curved surfaces of cylinders and cones (a budget below that is met only as far as GJK allows).
/// Contacts and distance results name the mesh triangle in triangle_a; triangle_b is always -1 (a
/// primitive has no triangles). Primitive pairs report -1 on both sides.

#include <memory>
#include <type_traits>
#include <variant>

#include "narrowphase/bounding_volume.h"
#include "bvh/bvh.h"
#include "narrowphase/convex.h"
#include "bvh/mesh_query.h"
#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"
#include "proximity/core/narrowphase/shapes.h"

namespace proximity::core {

/// Calls f with the concrete solid `shape` holds (a polytope as `const ConvexPolytope&`) and returns
/// what it returns: one dispatch per query, outside every walk and GJK loop.
template <class F>
auto VisitShape(const Shape& shape, F&& f) {
  return std::visit(
      [&](const auto& s) {
        if constexpr (std::is_same_v<std::decay_t<decltype(s)>, std::shared_ptr<const ConvexPolytope>>) {
          return f(*s);
        } else {
          return f(s);
        }
      },
      shape);
}

/// Bounding box of `shape` in its frame S: exact for a box, sphere, cylinder, capsule and cone; the
/// vertices' axis-aligned box for a polytope. Precondition: ValidateShape(shape) is ok.
Obb ShapeBoundingObb(const Shape& shape);

/// Whether the surface of `mesh` (pose X_WM) touches the solid `shape` (pose X_WS). Contacts name
/// mesh triangles in triangle_a (triangle_b = -1); all_contacts and max_contacts as in Collide.
/// stats: OBB tests and triangle–shape tests. Errors for invalid poses, shapes or requests.
[[nodiscard]] Result<CollisionResult> CollideMeshShape(const MeshModel& mesh, const RigidTransform& X_WM,
                                                       const Shape& shape, const RigidTransform& X_WS,
                                                       const CollisionRequest& request);

/// Warm-start state for ComputeMeshShapeDistance: the mesh it was last used with and that query's
/// closest triangle (leaf order), -1 for none.
struct MeshShapeDistanceCache {
  const MeshModel* mesh = nullptr;
  int32_t leaf = -1;
};

/// Distance between the surface of `mesh` (pose X_WM) and the solid `shape` (pose X_WS), as a certified
/// interval with the request's budgets (see the file comment). p_WA lies on the mesh, p_WB on the
/// shape (world frame); triangles.triangle_a is the mesh triangle of p_WA, triangle_b = -1.
///
/// `cache` (optional, caller-owned, one per mesh-shape pair and thread) warm-starts a query along a
/// motion: the last closest triangle is tested first, so the walk starts with a tight upper bound.
/// Answers are the same with or without it; only the work changes. A cache used with another mesh is
/// ignored and refilled.
[[nodiscard]] Result<DistanceResult> ComputeMeshShapeDistance(const MeshModel& mesh, const RigidTransform& X_WM,
                                                              const Shape& shape, const RigidTransform& X_WS,
                                                              const DistanceRequest& request,
                                                              MeshShapeDistanceCache* cache = nullptr);


/// Whether solids a (pose X_WA) and b (pose X_WB) share a point, by ISA-GJK; a contact {-1, -1} is
/// reported when they do. stats.triangle_tests counts the one GJK test.
[[nodiscard]] Result<CollisionResult> CollideShapes(const Shape& a, const RigidTransform& X_WA, const Shape& b,
                                                    const RigidTransform& X_WB, const CollisionRequest& request);

/// Distance between solids a (pose X_WA) and b (pose X_WB) by GJK: certified interval (GJK's lower
/// bound and distance), witness points p_WA on a and p_WB on b in the world frame, 0 when they
/// intersect; beyond_max_distance as in ComputeDistance.
[[nodiscard]] Result<DistanceResult> ComputeShapeDistance(const Shape& a, const RigidTransform& X_WA, const Shape& b,
                                                          const RigidTransform& X_WB, const DistanceRequest& request);

}  // namespace proximity::core
