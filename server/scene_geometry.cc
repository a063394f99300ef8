#include "server/scene_geometry.h"

#include <Eigen/Geometry>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "proximity/core/mesh/mesh.h"
#include "proximity/core/scene/geometry.h"
#include "server/convert.h"

namespace proximity::server {

namespace {

using core::RigidTransform;
using core::TriangleMesh;
using core::Vec3;

// ------------------------------------------------------------------------------------------------
// Tessellation of the primitives the core has no mesh maker for.

// A capsule along z: a cylinder of 2 * half_length capped by hemispheres of `radius`.
TriangleMesh CapsuleMesh(double radius, double half_length, int segments) {
  const int rings = std::max(2, segments / 4);  // per hemisphere
  TriangleMesh m;
  // Rows of vertices from the top pole down: the top hemisphere's rings, then the bottom one's.
  std::vector<std::pair<double, double>> rows;  // (z, ring radius)
  for (int i = 1; i <= rings; ++i) {
    const double a = M_PI / 2 * i / rings;
    rows.emplace_back(half_length + radius * std::cos(a), radius * std::sin(a));
  }
  for (int i = 0; i < rings; ++i) {
    const double a = M_PI / 2 * i / rings;
    rows.emplace_back(-half_length - radius * std::sin(a), radius * std::cos(a));
  }
  m.vertices.emplace_back(0.0, 0.0, half_length + radius);
  for (const auto& [z, r] : rows) {
    for (int s = 0; s < segments; ++s) {
      const double a = 2 * M_PI * s / segments;
      m.vertices.emplace_back(r * std::cos(a), r * std::sin(a), z);
    }
  }
  const auto bottom = static_cast<int32_t>(m.vertices.size());
  m.vertices.emplace_back(0.0, 0.0, -half_length - radius);
  const auto at = [&](size_t row, int s) { return static_cast<int32_t>(1 + row * segments + (s % segments)); };
  for (int s = 0; s < segments; ++s) m.triangles.push_back({0, at(0, s), at(0, s + 1)});
  for (size_t row = 0; row + 1 < rows.size(); ++row) {
    for (int s = 0; s < segments; ++s) {
      m.triangles.push_back({at(row, s), at(row + 1, s), at(row + 1, s + 1)});
      m.triangles.push_back({at(row, s), at(row + 1, s + 1), at(row, s + 1)});
    }
  }
  const size_t last = rows.size() - 1;
  for (int s = 0; s < segments; ++s) m.triangles.push_back({bottom, at(last, s + 1), at(last, s)});
  return m;
}

// A cone along z: apex at +half_height, base disk of `radius` at -half_height.
TriangleMesh ConeMesh(double radius, double half_height, int segments) {
  TriangleMesh m;
  m.vertices.emplace_back(0.0, 0.0, half_height);
  m.vertices.emplace_back(0.0, 0.0, -half_height);
  for (int s = 0; s < segments; ++s) {
    const double a = 2 * M_PI * s / segments;
    m.vertices.emplace_back(radius * std::cos(a), radius * std::sin(a), -half_height);
  }
  for (int s = 0; s < segments; ++s) {
    const int32_t a = 2 + s, b = 2 + (s + 1) % segments;
    m.triangles.push_back({0, a, b});
    m.triangles.push_back({1, b, a});
  }
  return m;
}

// ------------------------------------------------------------------------------------------------
// Parts of the response before they are written: a mesh the scene holds (not copied) or a tessellated
// primitive, and what to send when the triangle budget is short.

struct Part {
  v1::GeometryGroup* group = nullptr;
  RigidTransform X_OG;        // the part frame in its owner's frame
  std::string shape;          // GeometryPart.shape
  const TriangleMesh* scene_mesh = nullptr;  // the scene's own mesh (not copied), or
  std::optional<TriangleMesh> owned;          // a tessellated primitive
  std::shared_ptr<const core::ConvexPolytope> hull;  // a mesh's hull when the scene keeps one
  std::optional<TriangleMesh> hull_mesh;             // filled when the part is sent as its hull
  const TriangleMesh& Source() const { return owned ? *owned : *scene_mesh; }
  const TriangleMesh& Sent() const { return hull_mesh ? *hull_mesh : Source(); }
  int64_t triangles() const { return static_cast<int64_t>(Source().triangles.size()); }
};

Part MeshPart(v1::GeometryGroup* group, const RigidTransform& X, const core::MeshModel& model,
              std::shared_ptr<const core::ConvexPolytope> hull) {
  Part p;
  p.group = group;
  p.X_OG = X;
  p.shape = "mesh";
  p.scene_mesh = &core::MeshOf(model);
  p.hull = std::move(hull);
  return p;
}

Part OwnedPart(v1::GeometryGroup* group, const RigidTransform& X, std::string shape, TriangleMesh mesh) {
  Part p;
  p.group = group;
  p.X_OG = X;
  p.shape = std::move(shape);
  p.owned = std::move(mesh);
  return p;
}

// A point cloud drawn as a small octahedron of its radius about each point, at most kDisplayCloudPoints
// of them (evenly through the cloud's tree order, which is spatially coherent).
TriangleMesh CloudMesh(const core::PointCloud& cloud) {
  TriangleMesh m;
  for (const core::Sphere& ball : core::CloudBalls(cloud, kDisplayCloudPoints)) {
    const core::Vec3& c = ball.center;
    const double r = std::max(ball.radius, 1e-3);
    const int32_t base = static_cast<int32_t>(m.vertices.size());
    for (int a = 0; a < 3; ++a) {
      for (double sign : {1.0, -1.0}) {
        core::Vec3 v = c;
        v[a] += sign * r;
        m.vertices.push_back(v);
      }
    }
    // Vertices: +x -x +y -y +z -z; eight faces, outward.
    static constexpr int32_t kFaces[8][3] = {{0, 2, 4}, {2, 1, 4}, {1, 3, 4}, {3, 0, 4},
                                             {2, 0, 5}, {1, 2, 5}, {3, 1, 5}, {0, 3, 5}};
    for (const auto& f : kFaces) m.triangles.push_back({base + f[0], base + f[1], base + f[2]});
  }
  return m;
}

// A scene geometry (mesh, primitive or point cloud) posed at X in its owner's frame.
Part GeometryToPart(v1::GeometryGroup* group, const RigidTransform& X, const core::Geometry& g) {
  if (g.is_cloud()) return OwnedPart(group, X, "point_cloud", CloudMesh(*g.cloud));
  if (g.is_mesh()) return MeshPart(group, X, *g.mesh, g.hull);
  return std::visit(
      [&](const auto& s) -> Part {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, core::Box>) {
          return OwnedPart(group, X, "box", core::MakeBoxMesh(2.0 * s.half_extents));
        } else if constexpr (std::is_same_v<S, core::Sphere>) {
          const RigidTransform X_OC = X * RigidTransform(core::Mat3::Identity(), s.center);
          return OwnedPart(group, X_OC, "sphere", core::MakeIcosphereMesh(s.radius, kDisplaySphereSubdivisions));
        } else if constexpr (std::is_same_v<S, core::Cylinder>) {
          return OwnedPart(group, X, "cylinder",
                           core::MakeCylinderMesh(s.radius, 2.0 * s.half_length, kDisplaySegments));
        } else if constexpr (std::is_same_v<S, core::Capsule>) {
          return OwnedPart(group, X, "capsule", CapsuleMesh(s.radius, s.half_length, kDisplaySegments));
        } else if constexpr (std::is_same_v<S, core::Cone>) {
          return OwnedPart(group, X, "cone", ConeMesh(s.radius, s.half_height, kDisplaySegments));
        } else {
          return OwnedPart(group, X, "convex_hull", core::ConvexPolytopeMesh(*s));
        }
      },
      g.shape);
}

Part LinkGeometryToPart(v1::GeometryGroup* group, const core::LinkGeometry& g) {
  switch (g.type) {
    case core::ShapeType::kMesh:
      return MeshPart(group, g.X_LG, *g.mesh, g.hull);
    case core::ShapeType::kBox:
      return OwnedPart(group, g.X_LG, "box", core::MakeBoxMesh(g.box_size));
    case core::ShapeType::kCylinder:
      return OwnedPart(group, g.X_LG, "cylinder", core::MakeCylinderMesh(g.radius, g.length, kDisplaySegments));
    case core::ShapeType::kSphere:
      break;
  }
  return OwnedPart(group, g.X_LG, "sphere", core::MakeIcosphereMesh(g.radius, kDisplaySphereSubdivisions));
}

void WriteMesh(const TriangleMesh& mesh, v1::Mesh* out) {
  out->mutable_vertices()->Reserve(static_cast<int>(3 * mesh.vertices.size()));
  for (const Vec3& v : mesh.vertices) {
    out->add_vertices(v.x());
    out->add_vertices(v.y());
    out->add_vertices(v.z());
  }
  out->mutable_triangles()->Reserve(static_cast<int>(3 * mesh.triangles.size()));
  for (const auto& t : mesh.triangles) {
    for (int32_t i : t) out->add_triangles(static_cast<uint32_t>(i));
  }
}

// Sends the largest meshes as their hulls until `total` triangles fit in `max_triangles`.
core::Status FitTriangles(std::vector<Part>& parts, int64_t max_triangles, int64_t* total, int32_t* hulls) {
  std::vector<Part*> meshes;
  for (Part& p : parts) {
    if (p.shape == "mesh") meshes.push_back(&p);
  }
  std::stable_sort(meshes.begin(), meshes.end(),
                   [](const Part* a, const Part* b) { return a->triangles() > b->triangles(); });
  for (Part* p : meshes) {
    if (*total <= max_triangles) break;
    std::shared_ptr<const core::ConvexPolytope> hull = p->hull;
    if (hull == nullptr) {
      auto built = core::BuildConvexPolytope(p->Source().vertices);
      if (!built.ok()) continue;  // a flat mesh has no hull: it is sent as it is
      hull = std::move(built).value();
    }
    TriangleMesh hull_mesh = core::ConvexPolytopeMesh(*hull);
    if (static_cast<int64_t>(hull_mesh.triangles.size()) >= p->triangles()) continue;
    p->hull_mesh = std::move(hull_mesh);
    *total -= p->triangles() - static_cast<int64_t>(p->hull_mesh->triangles.size());
    ++*hulls;
  }
  if (*total > max_triangles) {
    return core::ResourceExhausted("the scene's geometry needs " + std::to_string(*total) +
                                   " triangles even with its meshes sent as convex hulls, more than max_triangles = " +
                                   std::to_string(max_triangles));
  }
  return {};
}

}  // namespace

core::Result<PoseStates> ToPoseStates(const core::RobotModel& robot, const v1::GetLinkPosesRequest& request,
                                      int64_t max_rows, std::string_view limit_name) {
  if (request.has_state() == request.has_states()) {
    return core::InvalidArgument(request.has_state() ? "give state or states, not both"
                                                     : "give state (one configuration) or states (a batch)");
  }
  PoseStates out;
  if (request.has_state()) {
    if (core::Status s = ResolveState(robot, request.state(), "state", &out.rows, &out.warnings); !s.ok()) {
      return s.error();
    }
    out.count = 1;
    return out;
  }
  auto rows = ConfigurationRows::Make(robot, request.states(), "states", max_rows, limit_name);
  if (!rows.ok()) return rows.error();
  out.rows = rows.value().All();
  out.count = rows.value().rows();
  return out;
}

core::Status LinkPoses(const core::Scene& scene, std::span<const double> q, std::vector<RigidTransform>* scratch,
                       double* out) {
  const core::RobotModel& robot = scene.robot();
  scratch->resize(static_cast<size_t>(robot.num_links()));
  if (core::Status s = robot.ForwardKinematics(q, *scratch, scene.X_WB()); !s.ok()) return s;
  for (const RigidTransform& X : *scratch) {
    Eigen::Quaterniond r(X.R);
    r.normalize();
    if (r.w() < 0.0) r.coeffs() = -r.coeffs();
    const double values[kPoseValues] = {X.p.x(), X.p.y(), X.p.z(), r.x(), r.y(), r.z(), r.w()};
    out = std::copy(values, values + kPoseValues, out);
  }
  return {};
}

core::Status SceneGeometry(const core::Scene& scene, int64_t max_triangles, v1::GetSceneGeometryResponse* out) {
  const core::RobotModel& robot = scene.robot();
  std::vector<Part> parts;
  for (const core::Link& link : robot.links()) {
    v1::GeometryGroup* group = out->add_links();
    group->set_name(link.name);
    for (const core::LinkGeometry& g : link.geometries) parts.push_back(LinkGeometryToPart(group, g));
  }
  for (const core::WorldObject& object : scene.objects()) {
    v1::GeometryGroup* group = out->add_objects();
    group->set_name(object.id);
    for (const core::ObjectPart& p : object.parts) parts.push_back(GeometryToPart(group, p.X_WG, p.geometry));
  }
  for (const core::AttachedObject& object : scene.attached()) {
    v1::GeometryGroup* group = out->add_attached_objects();
    group->set_name(object.id);
    group->set_link(object.link);
    for (const core::AttachedPart& p : object.parts) parts.push_back(GeometryToPart(group, p.X_LG, p.geometry));
  }
  int64_t total = 0;
  for (const Part& p : parts) total += p.triangles();
  int32_t hulls = 0;
  if (core::Status s = FitTriangles(parts, max_triangles, &total, &hulls); !s.ok()) return s;
  for (const Part& p : parts) {
    v1::GeometryPart* wire = p.group->add_parts();
    WriteMesh(p.Sent(), wire->mutable_mesh());
    ToWire(p.X_OG, wire->mutable_pose());
    wire->set_shape(p.shape);
    wire->set_hull(p.hull_mesh.has_value());
  }
  ToWire(scene.X_WB(), out->mutable_base_pose());
  out->set_triangles(static_cast<uint64_t>(total));
  out->set_hull_parts(static_cast<uint32_t>(hulls));
  return {};
}

}  // namespace proximity::server
