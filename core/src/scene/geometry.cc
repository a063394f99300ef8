// Building and reading the opaque geometry of geometry.h.
#include "proximity/core/scene/geometry.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "bvh/bvh.h"
#include "bvh/mesh_query.h"
#include "bvh/point_cloud.h"
#include "bvh/sdf.h"
#include "bvh/shape_query.h"
#include "narrowphase/convex.h"
#include "proximity/core/robot/robot_model.h"

namespace proximity::core {

Result<std::shared_ptr<const MeshModel>> BuildMeshModel(TriangleMesh mesh, std::string_view what) {
  return MeshModel::Build(std::move(mesh), {}, std::string(what));
}

const TriangleMesh& MeshOf(const MeshModel& model) { return model.mesh(); }

Result<std::shared_ptr<const ConvexPolytope>> BuildConvexPolytope(std::span<const Vec3> points,
                                                                  std::string_view what) {
  return ConvexPolytope::Build(points, std::string(what));
}

TriangleMesh ConvexPolytopeMesh(const ConvexPolytope& polytope) { return polytope.ToMesh(); }

Result<std::shared_ptr<const PointCloud>> BuildPointCloud(std::span<const Vec3> points, double radius,
                                                          const PointCloudOptions& options, std::string_view what) {
  return PointCloud::Build(points, radius, options, std::string(what));
}

std::vector<Sphere> CloudBalls(const PointCloud& cloud, int32_t max_balls) {
  const int32_t n = cloud.num_points();
  const int32_t shown = std::clamp(max_balls, 0, n);
  std::vector<Sphere> out(static_cast<size_t>(shown));
  for (int32_t k = 0; k < shown; ++k) {
    const auto i = static_cast<int32_t>(static_cast<int64_t>(k) * n / shown);
    out[static_cast<size_t>(k)] = {cloud.point(i), cloud.point_radius(i)};
  }
  return out;
}

PointCloudBuildStats CloudBuildStats(const PointCloud& cloud) { return cloud.build_stats(); }

Geometry FromLinkGeometry(const LinkGeometry& g) {
  Geometry geometry;
  switch (g.type) {
    case ShapeType::kMesh:
      geometry.mesh = g.mesh;
      geometry.hull = g.hull;
      geometry.hull_is_surface = g.hull_is_surface;
      geometry.hull_surface_gap = g.hull_surface_gap;
      geometry.interior = g.interior;
      break;
    case ShapeType::kBox:
      geometry.shape = Box{0.5 * g.box_size};
      break;
    case ShapeType::kCylinder:
      geometry.shape = Cylinder{g.radius, 0.5 * g.length};
      break;
    case ShapeType::kSphere:
      geometry.shape = Sphere{Vec3::Zero(), g.radius};
      break;
  }
  return geometry;
}

size_t MemoryBytes(const Geometry& g) {
  size_t bytes = 0;
  if (g.mesh != nullptr) bytes += static_cast<size_t>(g.mesh->MemoryBytes());
  if (g.cloud != nullptr) bytes += static_cast<size_t>(g.cloud->MemoryBytes());
  if (g.hull != nullptr) bytes += static_cast<size_t>(g.hull->MemoryBytes());
  if (g.distance_map != nullptr) bytes += g.distance_map->memory_bytes();
  if (const auto* p = std::get_if<std::shared_ptr<const ConvexPolytope>>(&g.shape); p != nullptr && *p != nullptr) {
    bytes += static_cast<size_t>((*p)->MemoryBytes());
  }
  return bytes;
}

Result<std::vector<int32_t>> CloudPointsNear(const Geometry& g, const RigidTransform& X_WG, const PointCloud& cloud,
                                             const RigidTransform& X_WC, double padding) {
  if (g.is_cloud()) return InvalidArgument("CloudPointsNear: the geometry is a point cloud (two clouds are not compared)");
  if (Status s = ValidatePose(X_WG, "X_WG"); !s.ok()) return s.error();
  if (Status s = ValidatePose(X_WC, "X_WC"); !s.ok()) return s.error();
  if (!(std::isfinite(padding) && padding >= 0.0)) {
    return InvalidArgument("CloudPointsNear: padding must be finite and >= 0, got " + std::to_string(padding));
  }
  if (g.is_primitive()) {
    if (Status s = ValidateShape(g.shape); !s.ok()) return s.error();
  }
  CollisionRequest every;
  every.all_contacts = true;
  every.max_contacts = std::max(1, cloud.num_points());
  const CloudCollision hit = g.is_mesh() ? CollideMeshCloud(*g.mesh, X_WG, cloud, X_WC, padding, every)
                                         : CollideShapeCloud(g.shape, X_WG, cloud, X_WC, padding, every);
  std::vector<int32_t> out;
  out.reserve(hit.contacts.size());
  for (const CloudContact& c : hit.contacts) out.push_back(c.point);
  return out;
}

}  // namespace proximity::core
