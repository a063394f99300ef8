#pragma once
/// @file
/// A piece of geometry as scenes hold it, how to build one, and the queries between two posed pieces.
///
/// Meshes are surfaces (two meshes collide when their triangles touch; a mesh wholly inside another does
/// not), primitives are solids (shapes.h), and a point cloud is the union of its points' balls. Distances
/// are certified intervals (query_types.h). The built types (MeshModel, ConvexPolytope, PointCloud,
/// SignedDistanceMap) are opaque: built here, shared by pointer, read through the functions below.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"
#include "proximity/core/bvh/query_types.h"
#include "proximity/core/mesh/mesh.h"
#include "proximity/core/narrowphase/shapes.h"

namespace proximity::core {

struct SolidInterior;
struct LinkGeometry;

/// A piece of geometry: a built triangle mesh (surface), a convex primitive (solid), or a point cloud
/// (the union of its points' balls; world objects only).
struct Geometry {
  std::shared_ptr<const MeshModel> mesh;  ///< Set for a mesh; null for a primitive or a cloud.
  Shape shape;                            ///< The primitive when mesh and cloud are null.
  /// Set for a point cloud (point_cloud.h): a world object's sensed points. Robot links and attached
  /// objects are never clouds.
  std::shared_ptr<const PointCloud> cloud;
  /// A mesh's convex hull (frame G), or null. When set, collision and distance-bound queries test the
  /// hull first (GJK): what is clear of the hull is clear of the mesh, so a pair whose hulls keep apart
  /// costs no hierarchy walk. Robot link meshes carry theirs (LinkGeometry::hull).
  std::shared_ptr<const ConvexPolytope> hull;
  /// The mesh is its hull's surface (IsHullSurface): for a pair apart, the hull's distance is the mesh's
  /// and the hierarchy walk is skipped.
  bool hull_is_surface = false;
  /// Finite when the mesh is a sealed surface at most this far inside its hull's boundary (SealedHullGap):
  /// CLEAR proves that two such meshes meet when their hulls share a point deeper than the gaps and
  /// neither hull holds the other, without walking the triangles. A scene takes it from its robot
  /// model's links (found at load) and ignores it on world and attached objects.
  double hull_surface_gap = std::numeric_limits<double>::infinity();
  /// Balls proven inside a closed mesh (convex or not): CLEAR proves that two such meshes meet when a
  /// ball of each overlap and each mesh's part holding its ball reaches beyond the other part's hull.
  /// Like the gap, a scene takes them from its robot model's links and ignores them on other objects.
  std::shared_ptr<const SolidInterior> interior;
  /// A closed mesh's signed distance map (sdf.h): robot link meshes carry one in scenes that hold point
  /// clouds, and cloud collision queries drop what its certified bounds prove apart. Answers are the
  /// same without it.
  std::shared_ptr<const SignedDistanceMap> distance_map;

  bool is_mesh() const { return mesh != nullptr; }
  bool is_cloud() const { return cloud != nullptr; }
  /// Neither a mesh nor a cloud: `shape` is the geometry.
  bool is_primitive() const { return mesh == nullptr && cloud == nullptr; }
  static Geometry Cloud(std::shared_ptr<const PointCloud> c) {
    Geometry g;
    g.cloud = std::move(c);
    return g;
  }
  static Geometry Primitive(Shape s) {
    Geometry g;
    g.shape = std::move(s);
    return g;
  }
};

/// The geometry a robot link's collision geometry stands for in a scene: its mesh with what was found at
/// load (hull, sealed gap, interior balls), or its primitive (full sizes to half sizes).
Geometry FromLinkGeometry(const LinkGeometry& link_geometry);

/// A triangle mesh built for queries (its bounding-volume hierarchy, default options). Errors (a mesh
/// with non-finite or out-of-range vertices, bad indices) name `what`.
[[nodiscard]] Result<std::shared_ptr<const MeshModel>> BuildMeshModel(TriangleMesh mesh,
                                                                      std::string_view what = "mesh");

/// The triangles a built mesh holds, in its frame.
const TriangleMesh& MeshOf(const MeshModel& model);

/// The convex hull of `points` (at least 4 not all in a plane). Errors name `what`.
[[nodiscard]] Result<std::shared_ptr<const ConvexPolytope>> BuildConvexPolytope(std::span<const Vec3> points,
                                                                                std::string_view what = "points");

/// The convex hull's boundary as a triangle mesh (outward-facing triangles).
TriangleMesh ConvexPolytopeMesh(const ConvexPolytope& polytope);

/// A point cloud of balls of `radius` about `points` (frame C), filtered and built into its tree
/// (PointCloudOptions). Errors name `what`.
[[nodiscard]] Result<std::shared_ptr<const PointCloud>> BuildPointCloud(std::span<const Vec3> points, double radius,
                                                                        const PointCloudOptions& options = {},
                                                                        std::string_view what = "point cloud");

/// The points a cloud kept, each as its ball (centre in frame C, radius grown by the filter), in the
/// cloud's tree order (spatially coherent); at most `max_balls` of them, evenly through that order (a
/// display of a large cloud), all by default.
std::vector<Sphere> CloudBalls(const PointCloud& cloud, int32_t max_balls = std::numeric_limits<int32_t>::max());

/// What the cloud's build did and cost.
PointCloudBuildStats CloudBuildStats(const PointCloud& cloud);

/// Bytes a geometry's built parts hold (mesh and hierarchy, hull, cloud, polytope, distance map); parts
/// shared with other geometries are counted in each.
size_t MemoryBytes(const Geometry& geometry);

/// Distance between two posed geometries as a certified interval (query_types.h semantics), dispatching
/// to the mesh, shape and point cloud queries; p_WA lies on a and p_WB on b (for a cloud: on the
/// closest point's ball, its index in the cloud's triangle field). Two clouds are an error.
[[nodiscard]] Result<DistanceResult> GeometryDistance(const Geometry& a, const RigidTransform& X_WA, const Geometry& b,
                                                      const RigidTransform& X_WB, const DistanceRequest& request);

/// Collision between two posed geometries (the first contact, or every one with request.all_contacts),
/// dispatching to the mesh, shape and point cloud queries (a cloud's contact names its point). Two clouds
/// are an error.
[[nodiscard]] Result<CollisionResult> CollideGeometry(const Geometry& a, const RigidTransform& X_WA,
                                                      const Geometry& b, const RigidTransform& X_WB,
                                                      const CollisionRequest& request = {});

/// The points of `cloud` (pose X_WC) whose ball comes within `padding` (>= 0) of the geometry `g` (pose
/// X_WG, a mesh's surface or a primitive's solid), as indices into CloudBalls(cloud). Errors for a cloud
/// `g`, invalid poses or padding.
[[nodiscard]] Result<std::vector<int32_t>> CloudPointsNear(const Geometry& g, const RigidTransform& X_WG,
                                                           const PointCloud& cloud, const RigidTransform& X_WC,
                                                           double padding);

}  // namespace proximity::core
