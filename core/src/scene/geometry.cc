// Building and reading the opaque geometry of geometry.h.
#include "proximity/core/scene/geometry.h"

#include <cmath>
#include <string>

#include "bvh/bvh.h"
#include "bvh/mesh_query.h"
#include "bvh/point_cloud.h"
#include "bvh/sdf.h"
#include "bvh/shape_query.h"
#include "narrowphase/convex.h"

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

std::vector<Sphere> CloudBalls(const PointCloud& cloud) {
  std::vector<Sphere> out(static_cast<size_t>(cloud.num_points()));
  for (int32_t i = 0; i < cloud.num_points(); ++i) out[static_cast<size_t>(i)] = {cloud.point(i), cloud.point_radius(i)};
  return out;
}

PointCloudBuildStats CloudBuildStats(const PointCloud& cloud) { return cloud.build_stats(); }

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
