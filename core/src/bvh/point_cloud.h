#pragma once
/// @file
/// Point clouds from depth sensors as world geometry: a set of balls (each sensed point with a radius,
/// the sensor's noise or voxel size), filtered on arrival and held in a point tree built in linear time,
/// and the exact queries between a cloud and a mesh surface or a convex solid.
///
/// Semantics: the cloud is the union of its balls. A mesh (a surface, as everywhere in the core) or a
/// solid collides with the cloud when some ball touches it: a point p with radius r collides when its
/// distance to the mesh's triangles (or to the solid) is at most r plus the query's padding. Their
/// distance is the smallest over points of that distance minus r (0 when they collide). Answers are
/// exact: every point the tree cannot prune is tested against triangles (closest point on a triangle,
/// Ericson, "Real-Time Collision Detection", 5.1.5) or the solid (closed forms for boxes, spheres,
/// capsules and cylinders; GJK for cones and polytopes), with rounding counted against
/// "free": a computed gap must exceed the radius by the rounding allowance of the query's scale.
///
/// Filtering (PointCloudOptions::voxel_size): points are binned into cubic voxels of that side; each
/// voxel's points become one, their centroid, whose radius grows by the distance to the farthest point
/// it replaces, so that its ball covers every input ball it stands for. Filtering can only add
/// collisions, never remove one (never a false "free"). Binning and ordering use 63-bit Morton codes
/// sorted by radix sort; the tree takes consecutive runs of 8 points in that order as leaves and pairs
/// consecutive nodes upwards, so the whole build is linear in the number of points.
///
/// A built cloud is immutable and can be shared by any number of threads and scenes.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"
#include "proximity/core/bvh/query_types.h"
#include "bvh/bvh.h"
#include "bvh/mesh_query.h"
#include "bvh/sdf.h"
#include "bvh/shape_query.h"
#include "narrowphase/bounding_volume.h"

namespace proximity::core {

/// A node of the point tree: the points [first, first + count) in tree order, their box in the cloud
/// frame C, grown by the largest radius among them. Internal nodes have children left and left + 1.
struct PointCloudNode {
  Aabb box;             ///< Holds every ball of the node's points.
  int32_t first = 0;    ///< First point (tree order).
  int32_t count = 0;    ///< Points under the node.
  int32_t left = -1;    ///< Left child; -1 for a leaf.
  float max_radius = 0; ///< Largest radius among the node's points.
  bool is_leaf() const { return left < 0; }
};

/// A filtered point cloud in its frame C with its point tree.
class PointCloud {
 public:
  /// Most points a leaf holds.
  static constexpr int32_t kLeafPoints = 8;

  /// Builds a cloud of `points` (in C) with ball radius `radius` (m, finite, >= 0). Errors
  /// (InvalidArgument) name `name` and what is wrong: no points, a point that is not finite (its index
  /// and coordinates) or beyond kWorldExtent from the origin, a bad radius or voxel size, more than
  /// options.max_points points.
  [[nodiscard]] static Result<std::shared_ptr<const PointCloud>> Build(std::span<const Vec3> points, double radius,
                                                                       const PointCloudOptions& options = {},
                                                                       const std::string& name = "point cloud");
  /// The same from packed float32 x, y, z triples (a sensor's buffer): xyz.size() must be a multiple
  /// of 3 (the error names the count otherwise).
  [[nodiscard]] static Result<std::shared_ptr<const PointCloud>> Build(std::span<const float> xyz, double radius,
                                                                       const PointCloudOptions& options = {},
                                                                       const std::string& name = "point cloud");

  int32_t num_points() const { return static_cast<int32_t>(points_.size()); }
  /// Point i (tree order) in C and its ball's radius (the cloud's radius plus its filter growth).
  const Vec3& point(int32_t i) const { return points_[static_cast<size_t>(i)]; }
  double point_radius(int32_t i) const { return radii_[static_cast<size_t>(i)]; }
  /// The radius the cloud was built with.
  double radius() const { return radius_; }
  /// The largest ball radius.
  double max_radius() const { return max_radius_; }
  const std::vector<PointCloudNode>& nodes() const { return nodes_; }
  /// Box of every ball in C (the root's box).
  const Aabb& bounds() const { return nodes_.front().box; }
  /// bounds() as an oriented box in C.
  Obb box() const;
  /// Farthest distance of a ball's points from C's origin (the scale of the queries' rounding).
  double reach() const { return reach_; }
  int64_t MemoryBytes() const;
  const PointCloudBuildStats& build_stats() const { return stats_; }

 private:
  PointCloud() = default;
  friend struct PointCloudBuilder;

  double radius_ = 0.0;
  double max_radius_ = 0.0;
  double reach_ = 0.0;
  std::vector<Vec3> points_;
  std::vector<double> radii_;
  std::vector<PointCloudNode> nodes_;
  PointCloudBuildStats stats_;
};

/// A point of a cloud and the mesh triangle (or -1 for a solid) it touches or is closest to.
struct CloudContact {
  int32_t triangle = -1;  ///< Index into the mesh's mesh().triangles; -1 against a solid.
  int32_t point = -1;     ///< Index of the point (tree order).
};

/// What the cloud collision queries found.
struct CloudCollision {
  bool colliding = false;
  /// The first contact found, or every one (up to max_contacts) with all_contacts.
  std::vector<CloudContact> contacts;
  bool truncated = false;
  QueryStats stats;
};

/// Whether the surface of `mesh` (pose X_WM) comes within `padding` (m, >= 0) of a ball of `cloud`
/// (pose X_WC); request.all_contacts lists every touching point (with one triangle each).
///
/// Without `sdf`: walks both trees together, mesh OBBs against the cloud's boxes, then exact
/// point-triangle distances. With `sdf`, the mesh's signed distance map (sdf.h, built from `mesh` in
/// its frame): the cloud's tree alone, a node dropped when the map's certified lower bound at its box's
/// centre exceeds the box's half diagonal plus the padding (the map is 1-Lipschitz, and a positive
/// value is the distance to the nearest triangle), a point when the bound at the point exceeds its
/// radius plus the padding; a point left undecided (near the surface, or inside the solid, where the
/// surface semantics want its distance to the triangles) gets the exact test against the mesh's OBB
/// tree. Both give the same answers. Preconditions: valid poses and padding (the scene validates them).
CloudCollision CollideMeshCloud(const MeshModel& mesh, const RigidTransform& X_WM, const PointCloud& cloud,
                                const RigidTransform& X_WC, double padding, const CollisionRequest& request = {},
                                const SignedDistanceMap* sdf = nullptr);
/// The same for the solid `shape` (pose X_WS): the shape's box against the cloud's boxes, then each
/// point's distance to the solid (closed forms; GJK for cones and polytopes).
CloudCollision CollideShapeCloud(const Shape& shape, const RigidTransform& X_WS, const PointCloud& cloud,
                                 const RigidTransform& X_WC, double padding, const CollisionRequest& request = {});

/// Distance between the surface of `mesh` (pose X_WM, side A) and `cloud` (pose X_WC, side B) as a
/// certified interval under the request's budgets (mesh_query.h's rules): p_WA on a triangle, p_WB on
/// the surface of the closest ball (towards p_WA), triangles.triangle_a the mesh triangle and
/// triangles.triangle_b the point's index. Best first over pairs of tree nodes, ordered by their boxes'
/// distance lower bound. With `sdf` (the mesh's signed distance map, as in CollideMeshCloud) the walk
/// is over the cloud's tree alone: nodes and then points ordered by the map's certified bounds, and a
/// point's exact distance (the mesh's OBB tree) taken only when its bound comes first; the same
/// certified interval rules. Errors for an invalid request.
[[nodiscard]] Result<DistanceResult> ComputeMeshCloudDistance(const MeshModel& mesh, const RigidTransform& X_WM,
                                                              const PointCloud& cloud, const RigidTransform& X_WC,
                                                              const DistanceRequest& request,
                                                              const SignedDistanceMap* sdf = nullptr);
/// The same for the solid `shape` (pose X_WS, side A); triangles.triangle_a is -1.
[[nodiscard]] Result<DistanceResult> ComputeShapeCloudDistance(const Shape& shape, const RigidTransform& X_WS,
                                                               const PointCloud& cloud, const RigidTransform& X_WC,
                                                               const DistanceRequest& request);

}  // namespace proximity::core
