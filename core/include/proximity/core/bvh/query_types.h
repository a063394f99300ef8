#pragma once
/// @file
/// The values the hierarchy queries take and give (requests, results, the point cloud build's options
/// and report), and the built geometry they walk, opaque: a MeshModel (a triangle mesh with its
/// bounding-volume hierarchy), a PointCloud (filtered points with their tree) and a SignedDistanceMap.
/// scene/geometry.h builds them and answers queries on them.
///
/// Meshes are surfaces: two meshes collide when a triangle of one touches a triangle of the other (a
/// mesh wholly inside another does not). Distances are certified intervals [lower_bound, upper_bound]
/// within the request's budget: upper_bound <= lower_bound * (1 + rel_err) or upper_bound - lower_bound
/// <= abs_err, with witness points at exactly upper_bound.

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "proximity/core/base/types.h"

namespace proximity::core {

/// A triangle mesh built for queries: its triangles and their bounding-volume hierarchy (opaque).
class MeshModel;
/// A filtered point cloud with its point tree (opaque).
class PointCloud;
/// A closed mesh's signed distance map (opaque).
class SignedDistanceMap;

/// Options for a collision query (CollideGeometry).
struct CollisionRequest {
  /// false: stop at the first intersecting triangle pair. true: report every intersecting pair, up to
  /// max_contacts.
  bool all_contacts = false;
  int32_t max_contacts = 1 << 20;
};

/// A pair of triangles, as indices into each mesh's triangles.
struct TrianglePair {
  int32_t triangle_a = -1;
  int32_t triangle_b = -1;
};

/// What a collision query found.
struct CollisionResult {
  bool colliding = false;
  /// The first intersecting pair found, or all of them (up to max_contacts) with all_contacts.
  std::vector<TrianglePair> contacts;
  /// True when all_contacts stopped at max_contacts.
  bool truncated = false;
  QueryStats stats;
};

/// Options for a distance query (GeometryDistance, Scene::ComputeDistance). Every field must be finite (max_distance may be +inf) and >= 0.
struct DistanceRequest {
  double rel_err = 0.0;  ///< Relative error budget (0.2 = upper may exceed lower by 20%).
  double abs_err = 0.0;  ///< Absolute error budget, in mesh units.
  /// The walk may stop once it proves the distance is at least this (for "is it farther than d?").
  double max_distance = std::numeric_limits<double>::infinity();
  /// The walk may stop once it finds points closer than this (for "is it closer than d?"): then
  /// upper_bound < stop_below and only the interval holds. 0: never.
  double stop_below = 0.0;
  /// A lower bound on the distance the caller has already certified (its convex hulls' distance, a
  /// tracker's previous answer lowered by the motion since): the walk stops as soon as an upper bound
  /// meets the budget against it, and the result's lower bound is never below it. Must be finite, >= 0
  /// and truly a lower bound: the answer is only as certified as this value. 0: none.
  double known_lower = 0.0;
};

/// What a distance query found. Points are in the world frame.
struct DistanceResult {
  double lower_bound = 0.0;
  double upper_bound = std::numeric_limits<double>::infinity();
  bool intersecting = false;         ///< The meshes share a point; then lower = upper = 0.
  bool beyond_max_distance = false;  ///< lower_bound >= request.max_distance.
  Vec3 p_WA = Vec3::Zero();          ///< Point on A's surface; |p_WA - p_WB| = upper_bound.
  Vec3 p_WB = Vec3::Zero();          ///< Point on B's surface.
  TrianglePair triangles;            ///< The triangles p_WA and p_WB lie on.
  QueryStats stats;
};

/// Settings for building a point cloud (BuildPointCloud in scene/geometry.h).
struct PointCloudOptions {
  /// Side (m) of the filter's voxels; unset: the cloud's radius; 0: no filtering (every input point is
  /// kept, in tree order). Finite and >= 0. A voxel finer than the cloud's extent / 2^21 is coarsened
  /// to that (the codes' resolution), and build_stats() reports the side used.
  std::optional<double> voxel_size;
  /// Most input points accepted (a refusal names the count and this limit).
  int64_t max_points = int64_t{1} << 24;
};

/// What a build did and cost.
struct PointCloudBuildStats {
  int64_t input_points = 0;
  int64_t points = 0;             ///< Kept after filtering.
  double voxel_size = 0.0;        ///< The filter's voxel side used (0: none).
  double max_radius_growth = 0.0; ///< The largest radius growth of a kept point (m).
  double seconds = 0.0;           ///< Wall-clock time of the build.
};

}  // namespace proximity::core
