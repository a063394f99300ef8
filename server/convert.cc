#include "server/convert.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <utility>

#include "proximity/core/mesh/mesh.h"
#include "proximity/core/scene/geometry.h"
#include "proximity/planners/scene_validity.h"
#include "server/errors.h"

namespace proximity::server {

static_assert(std::endian::native == std::endian::little,
              "positions_f64le is read with memcpy, which needs a little-endian host");

using core::Error;
using core::Result;
using core::Status;
using core::Vec3;

namespace {

std::string Str(std::string_view s) { return std::string(s); }

std::string Num(double v) { return core::FormatNumber(v); }

// A request-content error: what the request names is missing or malformed, so it is a bad argument
// (NOT_FOUND is kept for unknown scene ids); limits and internal faults keep their codes.
Error Invalid(std::string_view field, const Error& e) {
  const bool keep = e.code == core::ErrorCode::kResourceExhausted || e.code == core::ErrorCode::kInternal;
  return {keep ? e.code : core::ErrorCode::kInvalidArgument, Str(field) + ": " + e.message};
}

Status CheckFinite(double v, std::string_view field) {
  if (!std::isfinite(v)) return core::InvalidArgument(Str(field) + " is not finite (" + Num(v) + ")");
  return {};
}

Status CheckNonNegative(double v, std::string_view field) {
  if (Status s = CheckFinite(v, field); !s.ok()) return s;
  if (v < 0.0) return core::InvalidArgument(Str(field) + " must be >= 0, got " + Num(v));
  return {};
}

Result<Vec3> ToVec3(const v1::Vector3& v, std::string_view field) {
  const Vec3 out(v.x(), v.y(), v.z());
  static constexpr const char* kAxes[3] = {".x", ".y", ".z"};
  for (int i = 0; i < 3; ++i) {
    if (Status s = CheckFinite(out[i], Str(field) + kAxes[i]); !s.ok()) return s.error();
  }
  return out;
}

Result<std::vector<Vec3>> ToPoints(const google::protobuf::RepeatedField<double>& xyz, std::string_view field) {
  if (xyz.size() % 3 != 0) {
    return core::InvalidArgument(Str(field) + ": " + std::to_string(xyz.size()) +
                                 " values is not a multiple of 3 (x, y, z per point)");
  }
  std::vector<Vec3> points(static_cast<size_t>(xyz.size() / 3));
  for (int i = 0; i < xyz.size(); ++i) {
    if (!std::isfinite(xyz[i])) {
      return core::InvalidArgument(Str(field) + "[" + std::to_string(i) + "] is not finite (" + Num(xyz[i]) + ")");
    }
    points[static_cast<size_t>(i / 3)][i % 3] = xyz[i];
  }
  return points;
}

Result<core::Geometry> BuildMesh(core::TriangleMesh mesh, std::string_view field) {
  auto model = core::BuildMeshModel(std::move(mesh), field);
  if (!model.ok()) return Invalid(field, model.error());
  core::Geometry g;
  g.mesh = std::move(model).value();
  return g;
}

Result<core::Geometry> InlineMesh(const v1::Mesh& m, std::string_view field) {
  auto vertices = ToPoints(m.vertices(), Str(field) + ".vertices");
  if (!vertices.ok()) return vertices.error();
  if (m.triangles_size() % 3 != 0) {
    return core::InvalidArgument(Str(field) + ".triangles: " + std::to_string(m.triangles_size()) +
                                 " indices is not a multiple of 3");
  }
  std::vector<std::array<int32_t, 3>> triangles(static_cast<size_t>(m.triangles_size() / 3));
  const auto n = static_cast<uint32_t>(vertices.value().size());
  for (int i = 0; i < m.triangles_size(); ++i) {
    if (m.triangles(i) >= n) {
      return core::InvalidArgument(Str(field) + ".triangles[" + std::to_string(i) + "] = " +
                                   std::to_string(m.triangles(i)) + " is not a vertex index (there are " +
                                   std::to_string(n) + " vertices)");
    }
    triangles[static_cast<size_t>(i / 3)][i % 3] = static_cast<int32_t>(m.triangles(i));
  }
  auto mesh = core::MakeTriangleMesh(std::move(vertices).value(), std::move(triangles));
  if (!mesh.ok()) return Invalid(field, mesh.error());
  return BuildMesh(std::move(mesh).value(), field);
}

Result<core::Geometry> MeshFile(const v1::MeshFile& m, std::string_view field, FileReads* files) {
  if (m.path().empty()) return core::InvalidArgument(Str(field) + ".path is empty");
  if (files == nullptr) return core::InvalidArgument(Str(field) + ": server mesh files are not accepted here");
  core::MeshLoadOptions options;
  options.files = files->access;
  if (m.has_scale()) {
    auto scale = ToVec3(m.scale(), Str(field) + ".scale");
    if (!scale.ok()) return scale.error();
    if (!scale.value().isZero()) options.scale = scale.value();
  }
  auto mesh = core::LoadMesh(m.path(), options);
  if (!mesh.ok()) return Invalid(field, mesh.error());
  files->paths.push_back(m.path());
  return BuildMesh(std::move(mesh).value(), field);
}

// A primitive with a radius and a full length along z (cylinder, capsule, cone).
template <class T>
Result<core::Geometry> RadiusLength(double radius, double length, std::string_view field) {
  if (Status s = CheckNonNegative(radius, Str(field) + ".radius"); !s.ok()) return s.error();
  if (Status s = CheckNonNegative(length, Str(field) + ".length"); !s.ok()) return s.error();
  core::Geometry g;
  g.shape = T{radius, 0.5 * length};
  return g;
}

Result<core::Geometry> Primitive(const v1::Shape& shape, std::string_view field) {
  core::Geometry g;
  switch (shape.shape_case()) {
    case v1::Shape::kBox: {
      auto size = ToVec3(shape.box().size(), Str(field) + ".box.size");
      if (!size.ok()) return size.error();
      static constexpr const char* kAxes[3] = {".x", ".y", ".z"};
      for (int i = 0; i < 3; ++i) {
        if (Status s = CheckNonNegative(size.value()[i], Str(field) + ".box.size" + kAxes[i]); !s.ok()) {
          return s.error();
        }
      }
      g.shape = core::Box{0.5 * size.value()};
      return g;
    }
    case v1::Shape::kSphere:
      if (Status s = CheckNonNegative(shape.sphere().radius(), Str(field) + ".sphere.radius"); !s.ok()) {
        return s.error();
      }
      g.shape = core::Sphere{Vec3::Zero(), shape.sphere().radius()};
      return g;
    case v1::Shape::kCylinder:
      return RadiusLength<core::Cylinder>(shape.cylinder().radius(), shape.cylinder().length(),
                                          Str(field) + ".cylinder");
    case v1::Shape::kCapsule:
      return RadiusLength<core::Capsule>(shape.capsule().radius(), shape.capsule().length(),
                                         Str(field) + ".capsule");
    case v1::Shape::kCone:
      return RadiusLength<core::Cone>(shape.cone().radius(), shape.cone().length(), Str(field) + ".cone");
    default:
      return core::InvalidArgument(Str(field) + ": no shape given");
  }
}

Result<std::vector<core::AttachedPart>> ToAttachedParts(const google::protobuf::RepeatedPtrField<v1::ObjectPart>& parts,
                                                        std::string_view field, FileReads* files) {
  std::vector<core::AttachedPart> out;
  for (int i = 0; i < parts.size(); ++i) {
    const std::string where = Str(field) + "[" + std::to_string(i) + "]";
    auto g = ToGeometry(parts[i].shape(), where + ".shape", files);
    if (!g.ok()) return g.error();
    auto X = ToRigidTransform(parts[i].pose(), where + ".pose");
    if (!X.ok()) return X.error();
    out.push_back({std::move(g).value(), X.value()});
  }
  return out;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Maps joint names (columns) to positions in q: every active joint exactly once. `seen` is scratch.
// `field` names the list in messages ("state" + ".joint_names"); it is only built on an error, so the
// unary path allocates nothing here.
template <class Names>
Status MapColumns(const core::RobotModel& robot, const Names& names, std::string_view owner, int32_t* out,
                  std::vector<uint8_t>* seen) {
  const auto field = [owner] { return Str(owner) + ".joint_names"; };
  const int32_t dof = robot.num_positions();
  seen->assign(static_cast<size_t>(dof), 0);
  for (int i = 0; i < static_cast<int>(names.size()); ++i) {
    const std::string& name = names[i];
    auto index = robot.ActiveIndex(name);
    if (!index.ok()) {
      const bool unknown = index.error().code == core::ErrorCode::kNotFound;
      return core::InvalidArgument(field() + "[" + std::to_string(i) + "]: " +
                                   (unknown ? "unknown joint '" + name + "' (the scene's joints: " +
                                                  JoinNames(robot.active_joint_names()) + ")"
                                            : index.error().message));
    }
    if ((*seen)[static_cast<size_t>(index.value())]++) {
      return core::InvalidArgument(field() + "[" + std::to_string(i) + "]: joint '" + name +
                                   "' appears more than once");
    }
    out[i] = index.value();
  }
  for (int32_t j = 0; j < dof; ++j) {
    if (!(*seen)[static_cast<size_t>(j)]) {
      return core::InvalidArgument(field() + ": joint '" + robot.active_joint_names()[static_cast<size_t>(j)] +
                                   "' is missing (name every joint exactly once, or none for the scene's order)");
    }
  }
  return {};
}

}  // namespace

Result<core::RigidTransform> ToRigidTransform(const v1::Pose& pose, std::string_view field) {
  auto p = ToVec3(pose.position(), Str(field) + ".position");
  if (!p.ok()) return p.error();
  const v1::Quaternion& q = pose.orientation();
  const double c[4] = {q.x(), q.y(), q.z(), q.w()};
  static constexpr const char* kNames[4] = {".x", ".y", ".z", ".w"};
  for (int i = 0; i < 4; ++i) {
    if (Status s = CheckFinite(c[i], Str(field) + ".orientation" + kNames[i]); !s.ok()) return s.error();
  }
  if (c[0] == 0.0 && c[1] == 0.0 && c[2] == 0.0 && c[3] == 0.0) return core::RigidTransform(core::Mat3::Identity(), p.value());
  const double norm = std::sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2] + c[3] * c[3]);
  if (std::abs(norm - 1.0) > kQuaternionTolerance) {
    return core::InvalidArgument(Str(field) + ".orientation: quaternion norm " + Num(norm) +
                                 " is not 1 (within 1e-6); all zeros means identity");
  }
  return core::PoseFromQuaternion(p.value(), Eigen::Quaterniond(q.w(), q.x(), q.y(), q.z()));
}

void ToWire(const Vec3& v, v1::Vector3* out) {
  out->set_x(v.x());
  out->set_y(v.y());
  out->set_z(v.z());
}

void ToWire(const core::RigidTransform& X, v1::Pose* pose) {
  ToWire(X.p, pose->mutable_position());
  const Eigen::Quaterniond q(X.R);
  auto* o = pose->mutable_orientation();
  o->set_x(q.x());
  o->set_y(q.y());
  o->set_z(q.z());
  o->set_w(q.w());
}

Result<core::Geometry> ToGeometry(const v1::Shape& shape, std::string_view field, FileReads* files) {
  switch (shape.shape_case()) {
    case v1::Shape::kConvexHull: {
      auto points = ToPoints(shape.convex_hull().points(), Str(field) + ".convex_hull.points");
      if (!points.ok()) return points.error();
      auto hull = core::BuildConvexPolytope(points.value(), Str(field) + ".convex_hull");
      if (!hull.ok()) return Invalid(Str(field) + ".convex_hull", hull.error());
      core::Geometry g;
      g.shape = std::move(hull).value();
      return g;
    }
    case v1::Shape::kMesh:
      return InlineMesh(shape.mesh(), Str(field) + ".mesh");
    case v1::Shape::kMeshFile:
      return MeshFile(shape.mesh_file(), Str(field) + ".mesh_file", files);
    case v1::Shape::kPointCloud:
      return ToPointCloud(shape.point_cloud(), Str(field) + ".point_cloud", nullptr, nullptr);
    default:
      return Primitive(shape, field);
  }
}

Result<core::Geometry> ToPointCloud(const v1::PointCloud& cloud, std::string_view field, const CloudContext* context,
                                    core::RigidTransform* X_WP) {
  const std::string& bytes = cloud.points();
  if (bytes.size() % 12 != 0) {
    return core::InvalidArgument(Str(field) + ".points: " + std::to_string(bytes.size()) +
                                 " bytes, not a whole number of float32 x, y, z triples (12 bytes each)");
  }
  if (Status s = CheckFinite(cloud.radius(), Str(field) + ".radius"); !s.ok()) return s.error();
  if (Status s = CheckNonNegative(cloud.radius(), Str(field) + ".radius"); !s.ok()) return s.error();
  core::PointCloudOptions options;
  if (cloud.has_voxel_size()) {
    if (Status s = CheckFinite(cloud.voxel_size(), Str(field) + ".voxel_size"); !s.ok()) return s.error();
    if (Status s = CheckNonNegative(cloud.voxel_size(), Str(field) + ".voxel_size"); !s.ok()) return s.error();
    options.voxel_size = cloud.voxel_size();
  }
  const bool link_frame = !cloud.frame().empty() && cloud.frame() != "world";
  const bool self_filter = cloud.has_self_filter_padding();
  if (self_filter) {
    if (Status s = CheckFinite(cloud.self_filter_padding(), Str(field) + ".self_filter_padding"); !s.ok()) return s.error();
    if (Status s = CheckNonNegative(cloud.self_filter_padding(), Str(field) + ".self_filter_padding"); !s.ok()) {
      return s.error();
    }
  }
  if ((link_frame || self_filter) && (context == nullptr || context->robot == nullptr || X_WP == nullptr)) {
    return core::InvalidArgument(Str(field) + ": a point cloud in a link frame or with a self filter is a world "
                                 "object's part (attached objects cannot be clouds)");
  }
  if (!link_frame && !self_filter && cloud.state_size() != 0) {
    return core::InvalidArgument(Str(field) + ".state is given, but neither a link frame nor a self filter uses it");
  }
  const int64_t n = static_cast<int64_t>(bytes.size() / 12);
  std::vector<Vec3> points(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float xyz[3];
    std::memcpy(xyz, bytes.data() + 12 * i, 12);
    if constexpr (std::endian::native != std::endian::little) {
      for (float& f : xyz) f = std::bit_cast<float>(__builtin_bswap32(std::bit_cast<uint32_t>(f)));
    }
    points[static_cast<size_t>(i)] = Vec3(xyz[0], xyz[1], xyz[2]);
  }
  if (link_frame || self_filter) {
    const core::RobotModel& robot = *context->robot;
    if (cloud.state_size() != robot.num_positions()) {
      return core::InvalidArgument(Str(field) + ".state has " + std::to_string(cloud.state_size()) +
                                   " values; the robot has " + std::to_string(robot.num_positions()) + " joints");
    }
    const std::vector<double> q(cloud.state().begin(), cloud.state().end());
    auto X_WL = robot.ForwardKinematics(q, context->X_WB);
    if (!X_WL.ok()) return Invalid(Str(field) + ".state", X_WL.error());
    if (link_frame) {
      auto link = robot.FindLink(cloud.frame());
      if (!link.ok()) {
        return core::InvalidArgument(Str(field) + ".frame: '" + cloud.frame() + "' is neither \"world\" nor a link of the robot");
      }
      *X_WP = X_WL.value()[static_cast<size_t>(link.value())] * *X_WP;
    }
    if (self_filter && n > 0) {
      // Every input point is tested (no filter yet): those whose ball comes within the padding of a link
      // at `state` are dropped. The cloud's pose is X_WP (an object's part: its world pose).
      core::PointCloudOptions raw;
      raw.voxel_size = 0.0;
      auto all = core::BuildPointCloud(points, cloud.radius(), raw, field);
      if (!all.ok()) return Invalid(field, all.error());
      const std::vector<core::Sphere> balls = core::CloudBalls(*all.value());
      std::vector<uint8_t> drop(balls.size(), 0);
      for (int32_t l = 0; l < robot.num_links(); ++l) {
        for (const core::LinkGeometry& lg : robot.link(l).geometries) {
          const core::Geometry g = core::FromLinkGeometry(lg);
          const core::RigidTransform X_WG = X_WL.value()[static_cast<size_t>(l)] * lg.X_LG;
          auto near = core::CloudPointsNear(g, X_WG, *all.value(), *X_WP, cloud.self_filter_padding());
          if (!near.ok()) return Invalid(field, near.error());
          for (const int32_t i : near.value()) drop[static_cast<size_t>(i)] = 1;  // tree order
        }
      }
      std::vector<Vec3> kept;
      kept.reserve(points.size());
      for (size_t i = 0; i < balls.size(); ++i) {
        if (!drop[i]) kept.push_back(balls[i].center);
      }
      points = std::move(kept);
      if (points.empty()) {
        return core::InvalidArgument(Str(field) + ": the self filter dropped every point (all " + std::to_string(n) +
                                     " lie on the robot at the given state)");
      }
    }
  }
  auto built = core::BuildPointCloud(points, cloud.radius(), options, field);
  if (!built.ok()) return Invalid(field, built.error());
  return core::Geometry::Cloud(std::move(built).value());
}

Status ToWorldObject(const v1::CollisionObject& object, std::string_view field, core::WorldObject* out,
                     ObjectFrame* frame, FileReads* files, const CloudContext* clouds) {
  if (object.id().empty()) return core::InvalidArgument(Str(field) + ".id is empty");
  auto X_WO = ToRigidTransform(object.pose(), Str(field) + ".pose");
  if (!X_WO.ok()) return X_WO.error();
  out->id = object.id();
  out->parts.clear();
  frame->X_WO = X_WO.value();
  frame->X_OP.clear();
  for (int i = 0; i < object.parts_size(); ++i) {
    const std::string where = Str(field) + ".parts[" + std::to_string(i) + "]";
    auto X_OP = ToRigidTransform(object.parts(i).pose(), where + ".pose");
    if (!X_OP.ok()) return X_OP.error();
    core::RigidTransform X_WP = X_WO.value() * X_OP.value();
    const v1::Shape& shape = object.parts(i).shape();
    const bool in_link = shape.shape_case() == v1::Shape::kPointCloud && !shape.point_cloud().frame().empty() &&
                         shape.point_cloud().frame() != "world";
    if (in_link) X_WP = X_OP.value();  // the link's pose at the state applies, not the object's
    auto g = shape.shape_case() == v1::Shape::kPointCloud
                 ? ToPointCloud(shape.point_cloud(), where + ".shape.point_cloud", clouds, &X_WP)
                 : ToGeometry(shape, where + ".shape", files);
    if (!g.ok()) return g.error();
    // A MOVE keeps the part where it is in the object frame (a cloud in a link frame: where it was posed).
    frame->X_OP.push_back(in_link ? X_WO.value().inverse() * X_WP : X_OP.value());
    out->parts.push_back({std::move(g).value(), X_WP});
  }
  return {};
}

Result<core::AttachedObject> ToAttachedObject(const v1::AttachedObject& object, std::string_view field,
                                              FileReads* files) {
  if (object.id().empty()) return core::InvalidArgument(Str(field) + ".id is empty");
  if (object.link().empty()) return core::InvalidArgument(Str(field) + ".link is empty");
  core::AttachedObject out;
  out.id = object.id();
  out.link = object.link();
  auto parts = ToAttachedParts(object.parts(), Str(field) + ".parts", files);
  if (!parts.ok()) return parts.error();
  out.parts = std::move(parts).value();
  out.touch_links.assign(object.touch_links().begin(), object.touch_links().end());
  return out;
}

Status ResolveState(const core::RobotModel& robot, const v1::JointPositions& state, std::string_view field,
                    std::vector<double>* q, std::vector<std::string>* warnings) {
  const int32_t dof = robot.num_positions();
  if (!state.named_state().empty()) {
    if (state.positions_size() != 0 || state.joint_names_size() != 0) {
      return core::InvalidArgument(Str(field) + ": give named_state or positions, not both");
    }
    auto named = robot.NamedConfiguration(state.named_state());
    if (!named.ok()) return Invalid(Str(field) + ".named_state", named.error());
    *q = std::move(named).value();
    return {};
  }
  q->resize(static_cast<size_t>(dof));
  if (state.joint_names_size() == 0) {
    if (state.positions_size() != dof) {
      return core::InvalidArgument(Str(field) + ".positions: expected " + std::to_string(dof) +
                                   " values (the scene's joints in order: " + JoinNames(robot.active_joint_names()) +
                                   "), got " + std::to_string(state.positions_size()));
    }
    for (int32_t j = 0; j < dof; ++j) (*q)[static_cast<size_t>(j)] = state.positions(j);
  } else {
    if (state.joint_names_size() != state.positions_size()) {
      return core::InvalidArgument(Str(field) + ": " + std::to_string(state.joint_names_size()) +
                                   " joint_names but " + std::to_string(state.positions_size()) + " positions");
    }
    // The unary hot path: scratch kept per thread, so resolving names allocates nothing once warm.
    thread_local std::vector<int32_t> column;
    thread_local std::vector<uint8_t> seen;
    bool unknown = false;
    for (const std::string& name : state.joint_names()) unknown = unknown || !robot.FindJoint(name).ok();
    if (!unknown) {
      column.resize(static_cast<size_t>(state.joint_names_size()));
      if (Status s = MapColumns(robot, state.joint_names(), field, column.data(), &seen); !s.ok()) {
        return s;
      }
      for (int i = 0; i < state.positions_size(); ++i) (*q)[static_cast<size_t>(column[i])] = state.positions(i);
    } else {
      // Entries for joints the robot lacks are ignored, as MoveIt ignores them in a joint state, with
      // one warning naming them; the robot's own joints are still required exactly once.
      std::vector<std::string> names, ignored;
      std::vector<double> values;
      for (int i = 0; i < state.joint_names_size(); ++i) {
        if (robot.FindJoint(state.joint_names(i)).ok()) {
          names.push_back(state.joint_names(i));
          values.push_back(state.positions(i));
        } else {
          ignored.push_back("'" + state.joint_names(i) + "'");
        }
      }
      column.resize(names.size());
      if (Status s = MapColumns(robot, names, field, column.data(), &seen); !s.ok()) return s;
      for (size_t i = 0; i < values.size(); ++i) (*q)[static_cast<size_t>(column[i])] = values[i];
      if (warnings != nullptr) {
        warnings->push_back(Str(field) + ": ignored " + std::to_string(ignored.size()) +
                            " value(s) for joint(s) robot '" + robot.name() + "' does not have: " + JoinNames(ignored));
      }
    }
  }
  for (int32_t j = 0; j < dof; ++j) {
    if (!std::isfinite((*q)[static_cast<size_t>(j)])) {
      return core::InvalidArgument(Str(field) + ".positions: joint '" +
                                   robot.active_joint_names()[static_cast<size_t>(j)] + "' is not finite (" +
                                   Num((*q)[static_cast<size_t>(j)]) + ")");
    }
  }
  return {};
}

Result<ConfigurationRows> ConfigurationRows::Make(const core::RobotModel& robot, const v1::Configurations& c,
                                                  std::string_view field, int64_t max_rows,
                                                  std::string_view limit_name) {
  ConfigurationRows out;
  out.cols_ = robot.num_positions();
  const bool packed = !c.positions_f64le().empty();
  if (packed && c.positions_size() != 0) {
    return core::InvalidArgument(Str(field) + ": give positions or positions_f64le, not both");
  }
  if (c.joint_names_size() != 0) {
    // Fails (naming the missing, unknown or repeated joint) unless the names are the scene's joints.
    out.column_to_active_.resize(static_cast<size_t>(c.joint_names_size()));
    std::vector<uint8_t> seen;
    if (Status s = MapColumns(robot, c.joint_names(), field, out.column_to_active_.data(), &seen);
        !s.ok()) {
      return s.error();
    }
    bool identity = true;
    for (int32_t j = 0; j < out.cols_; ++j) identity = identity && out.column_to_active_[static_cast<size_t>(j)] == j;
    if (identity) out.column_to_active_.clear();
  }
  int64_t values = 0;
  if (packed) {
    const auto bytes = static_cast<int64_t>(c.positions_f64le().size());
    if (bytes % 8 != 0) {
      return core::InvalidArgument(Str(field) + ".positions_f64le: " + std::to_string(bytes) +
                                   " bytes is not a whole number of float64 values");
    }
    values = bytes / 8;
    out.packed_ = c.positions_f64le().data();
  } else {
    values = c.positions_size();
    out.values_ = c.positions().data();
  }
  const char* name = packed ? ".positions_f64le" : ".positions";
  const std::string columns = c.joint_names_size() != 0
                                  ? std::to_string(out.cols_) + " joint_names"
                                  : "the " + std::to_string(out.cols_) + " joints of robot '" + robot.name() + "'";
  if (values > 0 && c.width() == 0) {
    return core::InvalidArgument(Str(field) + ".width: give the number of values per configuration (" + columns +
                                 ") with the values, so that an array of the wrong width is refused");
  }
  if (c.width() != 0 && c.width() != static_cast<uint32_t>(out.cols_)) {
    return core::InvalidArgument(Str(field) + ".width: " + std::to_string(c.width()) +
                                 " values per configuration, but the request needs one per joint (" + columns + ")");
  }
  if (out.cols_ == 0) {
    // A robot without joints: configurations carry no values, and `count` says how many there are.
    if (values != 0) {
      return core::InvalidArgument(Str(field) + name + ": robot '" + robot.name() + "' has no joints, but " +
                                   std::to_string(values) + " values were given");
    }
    out.rows_ = c.count() == 0 ? 1 : static_cast<int64_t>(c.count());
  } else {
    if (values % out.cols_ != 0) {
      return core::InvalidArgument(Str(field) + name + ": " + std::to_string(values) +
                                   " values is not a multiple of the column count " + std::to_string(out.cols_) +
                                   " (one value per joint per configuration)");
    }
    out.rows_ = values / out.cols_;
    if (c.count() != 0 && static_cast<int64_t>(c.count()) != out.rows_) {
      return core::InvalidArgument(Str(field) + ".count: " + std::to_string(c.count()) + " configurations, but " +
                                   std::to_string(values) + " values of width " + std::to_string(out.cols_) +
                                   " make " + std::to_string(out.rows_));
    }
  }
  if (out.rows_ > max_rows) {
    return ResourceExhausted(Str(field) + ": " + std::to_string(out.rows_) + " configurations exceed the server's " +
                             Str(limit_name) + " = " + std::to_string(max_rows) + "; split the request");
  }
  for (int64_t k = 0; k < values; ++k) {
    double v;
    if (packed) {
      std::memcpy(&v, out.packed_ + k * 8, 8);
    } else {
      v = out.values_[k];
    }
    if (!std::isfinite(v)) {
      const int64_t row = k / out.cols_;
      const auto col = static_cast<int32_t>(k % out.cols_);
      const int32_t joint = out.column_to_active_.empty() ? col : out.column_to_active_[static_cast<size_t>(col)];
      return core::InvalidArgument(Str(field) + name + ": configuration " + std::to_string(row) + ", joint '" +
                                   robot.active_joint_names()[static_cast<size_t>(joint)] + "' is not finite (" +
                                   Num(v) + ")");
    }
  }
  return out;
}

std::vector<double> ConfigurationRows::All() const {
  std::vector<double> all(static_cast<size_t>(rows_ * cols_));
  for (int64_t i = 0; i < rows_; ++i) Row(i, all.data() + i * cols_);
  return all;
}

void ToWire(const core::Scene& scene, const core::StateContact& contact, v1::PairId* out) {
  out->set_self(contact.self);
  out->set_robot(contact.Name(scene));
  out->set_other(contact.OtherName(scene));
  if (contact.link >= 0) out->set_link(scene.robot().link(contact.link).name);
  if (contact.self && contact.other_link >= 0) out->set_other_link(scene.robot().link(contact.other_link).name);
}

void ToWire(const core::Scene& scene, const core::PairDistance& pair, v1::PairDistance* out) {
  ToWire(scene, pair.pair, out->mutable_pair());
  out->set_lower(pair.lower);
  out->set_upper(pair.upper);
  ToWire(pair.p_W_robot, out->mutable_point_robot());
  ToWire(pair.p_W_other, out->mutable_point_other());
}

void ToWire(const core::Scene& scene, const core::MotionResult& motion, v1::MotionResult* out) {
  out->set_free(motion.free);
  out->set_t_free(motion.t_free);
  out->set_t_collide(motion.t_collide);
  out->set_undecided(motion.undecided);
  if (!motion.free) ToWire(scene, motion.contact, out->mutable_contact());
}

void ToWire(const core::Scene& scene, const core::PathResult& path, v1::PathResult* out) {
  out->set_free(path.free);
  out->set_segment(path.segment);
  ToWire(scene, path.motion, out->mutable_motion());
}

void Work::ToWire(v1::WorkStats* out) const {
  out->set_states(states);
  out->set_pairs_tested(pairs_tested);
  out->set_distance_queries(distance_queries);
  out->set_bv_tests(bv_tests);
  out->set_triangle_tests(triangle_tests);
}

Work StateWork(const core::StateResult& r) {
  Work w;
  w.states = 1;
  w.pairs_tested = r.pairs_tested;
  w.Add(r.stats);
  return w;
}

namespace {
// The work of a motion or path check (both count states and distance queries).
template <typename MotionOrPath>
Work MotionOrPathWork(const MotionOrPath& r) {
  Work w;
  w.states = r.states;
  w.distance_queries = r.distance_queries;
  w.Add(r.stats);
  return w;
}
}  // namespace

Work MotionWork(const core::MotionResult& r) { return MotionOrPathWork(r); }
Work MotionWork(const core::PathResult& r) { return MotionOrPathWork(r); }

Work DistanceWork(const core::SceneDistanceResult& r) {
  Work w;
  w.states = 1;
  w.pairs_tested = r.pairs_tested;
  w.distance_queries = r.pairs_tested;
  w.Add(r.stats);
  return w;
}

Work ContactWork(const core::ContinuousResult& r) {
  Work w;
  w.distance_queries = r.distance_queries;
  w.Add(r.stats);
  return w;
}

Work TrackWork(const core::TrackResult& r) {
  Work w;
  w.states = 1;
  w.pairs_tested = r.decided;
  w.distance_queries = r.decided;
  w.Add(r.stats);
  return w;
}

void ToWire(const core::Scene& scene, const core::StateResult& r, v1::CheckStateResponse* out) {
  out->set_free(r.free);
  out->set_within_limits(r.within_limits);
  if (!r.free) ToWire(scene, r.contact, out->mutable_contact());
}

void ToWire(const core::Scene& scene, const core::SceneDistanceResult& r, v1::ComputeDistanceResponse* out) {
  out->set_lower_bound(r.lower_bound);
  out->set_upper_bound(r.upper_bound);
  out->set_beyond_max_distance(r.beyond_max_distance);
  out->set_within_limits(r.within_limits);
  if (r.nearest.pair.link >= 0) ToWire(scene, r.nearest, out->mutable_nearest());
  for (const core::PairDistance& p : r.pairs) ToWire(scene, p, out->add_pairs());
}

void ToWire(const core::Scene& scene, const core::ContinuousResult& r, v1::TimeOfFirstContactResponse* out) {
  out->set_contact(r.contact);
  out->set_t_contact(r.t_contact);
  out->set_clearance(r.clearance);
  out->set_penetrating(r.penetrating);
  out->set_undecided(r.undecided);
  if (r.nearest.pair.link >= 0 || r.nearest.pair.object >= 0) ToWire(scene, r.nearest, out->mutable_nearest());
  out->set_iterations(r.iterations);
}

namespace {
v1::TrackFeatureType ToWire(core::TrackFeatureType type) {
  switch (type) {
    case core::TrackFeatureType::kVertex: return v1::TRACK_FEATURE_TYPE_VERTEX;
    case core::TrackFeatureType::kEdge: return v1::TRACK_FEATURE_TYPE_EDGE;
    case core::TrackFeatureType::kFace: return v1::TRACK_FEATURE_TYPE_FACE;
    case core::TrackFeatureType::kTriangle: return v1::TRACK_FEATURE_TYPE_TRIANGLE;
    case core::TrackFeatureType::kNone: break;
  }
  return v1::TRACK_FEATURE_TYPE_UNSPECIFIED;
}

v1::TrackMethod ToWire(core::TrackMethod method) {
  switch (method) {
    case core::TrackMethod::kVClip: return v1::TRACK_METHOD_VCLIP;
    case core::TrackMethod::kGjk: return v1::TRACK_METHOD_GJK;
    case core::TrackMethod::kWalk: return v1::TRACK_METHOD_WALK;
  }
  return v1::TRACK_METHOD_UNSPECIFIED;
}

void ToWire(const core::TrackFeature& f, v1::TrackFeature* out) {
  out->set_type(ToWire(f.type));
  out->set_index(f.type == core::TrackFeatureType::kNone ? -1 : f.index);
}
}  // namespace

void ToWire(const core::Scene& scene, const core::TrackResult& r, v1::TrackResponse* out) {
  out->mutable_pairs()->Reserve(static_cast<int>(r.pairs.size()));
  for (const core::TrackedPair& p : r.pairs) {
    v1::TrackedPair* w = out->add_pairs();
    ToWire(scene, p.distance, w->mutable_distance());
    w->set_signed_distance(p.signed_distance);
    ToWire(p.normal_W, w->mutable_normal());
    ToWire(p.feature_robot, w->mutable_feature_robot());
    ToWire(p.feature_other, w->mutable_feature_other());
    w->set_same_features(p.same_features);
    w->set_method(ToWire(p.method));
    w->mutable_gradient()->Add(p.gradient.begin(), p.gradient.end());
  }
  out->set_within_limits(r.within_limits);
  out->set_candidates(static_cast<uint32_t>(std::max(0, r.candidates)));
  out->set_decided(static_cast<uint32_t>(std::max(0, r.decided)));
  out->set_vclip(static_cast<uint32_t>(std::max(0, r.vclip)));
  out->set_gjk(static_cast<uint32_t>(std::max(0, r.gjk)));
  out->set_walks(static_cast<uint32_t>(std::max(0, r.walks)));
  out->set_same_features(static_cast<uint32_t>(std::max(0, r.same_features)));
}

bool TrackApart(const core::TrackResult& r) {
  return std::all_of(r.pairs.begin(), r.pairs.end(), [](const core::TrackedPair& p) { return p.distance.lower > 0.0; });
}

namespace {
int64_t InlineTriangles(const google::protobuf::RepeatedPtrField<v1::ObjectPart>& parts) {
  int64_t n = 0;
  for (const v1::ObjectPart& p : parts) {
    if (p.shape().shape_case() == v1::Shape::kMesh) n += p.shape().mesh().triangles_size() / 3;
  }
  return n;
}
}  // namespace

int64_t InlineTriangles(const v1::CreateSceneRequest& request) {
  int64_t n = 0;
  for (const v1::CollisionObject& o : request.objects()) n += InlineTriangles(o.parts());
  for (const v1::AttachedObject& a : request.attached_objects()) n += InlineTriangles(a.parts());
  return n;
}

int64_t InlineTriangles(const v1::UpdateWorldRequest& request) {
  int64_t n = 0;
  for (const v1::CollisionObject& o : request.objects()) n += InlineTriangles(o.parts());
  return n;
}

namespace {
void CountClouds(const google::protobuf::RepeatedPtrField<v1::CollisionObject>& objects, CloudCount* count) {
  for (const v1::CollisionObject& o : objects) {
    for (const v1::ObjectPart& p : o.parts()) {
      if (p.shape().shape_case() != v1::Shape::kPointCloud) continue;
      const int64_t n = static_cast<int64_t>(p.shape().point_cloud().points().size() / 12);
      count->total += n;
      count->largest = std::max(count->largest, n);
    }
  }
}
}  // namespace

CloudCount CloudPoints(const v1::CreateSceneRequest& request) {
  CloudCount c;
  CountClouds(request.objects(), &c);
  return c;
}

CloudCount CloudPoints(const v1::UpdateWorldRequest& request) {
  CloudCount c;
  CountClouds(request.objects(), &c);
  return c;
}

int64_t SceneCloudPoints(const core::Scene& scene) {
  int64_t n = 0;
  for (const core::WorldObject& o : scene.objects()) {
    for (const core::ObjectPart& p : o.parts) {
      if (p.geometry.is_cloud()) n += core::CloudBuildStats(*p.geometry.cloud).points;
    }
  }
  return n;
}

Status CheckCloudPoints(const CloudCount& count, int64_t scene_points, int64_t max_cloud, int64_t max_scene) {
  if (count.largest > max_cloud) {
    return core::ResourceExhausted("point cloud: " + std::to_string(count.largest) +
                                   " points exceed the server's --max-cloud-points = " + std::to_string(max_cloud));
  }
  if (scene_points + count.total > max_scene) {
    return core::ResourceExhausted("scene: " + std::to_string(scene_points + count.total) +
                                   " cloud points exceed the server's --max-scene-cloud-points = " +
                                   std::to_string(max_scene));
  }
  return {};
}

Status CheckSceneTriangles(int64_t triangles, int64_t limit, std::string_view limit_name) {
  if (triangles <= limit) return {};
  return core::ResourceExhausted("scene: " + std::to_string(triangles) + " triangles exceed the server's " +
                                 Str(limit_name) + " = " + std::to_string(limit));
}

Result<int32_t> ToPageSize(int32_t page_size, int32_t max_page) {
  if (page_size < 0) return core::InvalidArgument("page_size must be >= 0 (0: the server's page size)");
  return page_size == 0 ? max_page : std::min(page_size, max_page);
}

Result<ConfigurationRows> ToPath(const core::RobotModel& robot, const v1::Configurations& path,
                                 std::string_view field, int64_t max_waypoints, std::string_view limit_name) {
  auto rows = ConfigurationRows::Make(robot, path, field, max_waypoints, limit_name);
  if (!rows.ok()) return rows.error();
  if (rows.value().rows() < 1) return core::InvalidArgument(Str(field) + ": a path needs at least one configuration");
  return rows;
}

Result<Paths> ToPaths(const core::RobotModel& robot,
                      const google::protobuf::RepeatedPtrField<v1::Configurations>& paths, int64_t max_waypoints,
                      std::string_view limit_name, int64_t max_total, std::string_view total_limit_name) {
  Paths out;
  out.paths.reserve(static_cast<size_t>(paths.size()));
  for (int i = 0; i < paths.size(); ++i) {
    auto rows = ToPath(robot, paths.Get(i), "paths[" + std::to_string(i) + "]", max_waypoints, limit_name);
    if (!rows.ok()) return rows.error();
    out.waypoints += rows.value().rows();
    if (out.waypoints > max_total) {
      return core::ResourceExhausted("paths: more than " + std::to_string(max_total) +
                                     " waypoints in total exceed the server's " + Str(total_limit_name) +
                                     "; split the request");
    }
    out.paths.push_back(std::move(rows).value());
  }
  return out;
}

core::SceneDistanceRequest ToDistanceRequest(const v1::ComputeDistanceRequest& request) {
  core::SceneDistanceRequest query;
  query.rel_err = request.rel_err();
  query.abs_err = request.abs_err();
  if (request.max_distance() != 0.0) query.max_distance = request.max_distance();
  query.per_pair = request.per_pair();
  query.world = !request.exclude_world();
  query.self = !request.exclude_self();
  return query;
}

Result<core::TrackRequest> ToTrackRequest(const v1::TrackRequest& request, std::string_view field) {
  core::TrackRequest out;
  const double horizon = request.horizon();
  if (!std::isfinite(horizon) || horizon < 0.0 || horizon > core::kWorldExtent) {
    return core::InvalidArgument(Str(field) + "horizon: must be finite and in [0, " + Num(core::kWorldExtent) +
                                 "] m (0 means " + Num(kDefaultTrackHorizon) + "), got " + Num(horizon));
  }
  out.horizon = horizon == 0.0 ? kDefaultTrackHorizon : horizon;
  if (request.max_pairs() > static_cast<uint32_t>(core::kMaxTrackPairs)) {
    return core::InvalidArgument(Str(field) + "max_pairs: at most " + std::to_string(core::kMaxTrackPairs) +
                                 " (0 means " + std::to_string(kDefaultTrackPairs) + "), got " +
                                 std::to_string(request.max_pairs()));
  }
  out.max_pairs = request.max_pairs() == 0 ? kDefaultTrackPairs : static_cast<int32_t>(request.max_pairs());
  for (const auto& [name, value] : {std::pair<const char*, double>{"rel_err", request.rel_err()},
                                    std::pair<const char*, double>{"abs_err", request.abs_err()}}) {
    if (!std::isfinite(value) || value < 0.0) {
      return core::InvalidArgument(Str(field) + name + ": must be finite and >= 0, got " + Num(value));
    }
  }
  out.rel_err = request.rel_err();
  out.abs_err = request.abs_err();
  switch (request.convex()) {
    case v1::TRACK_CONVEX_METHOD_UNSPECIFIED:
    case v1::TRACK_CONVEX_METHOD_VCLIP:
      out.convex = core::TrackConvexMethod::kVClip;
      break;
    case v1::TRACK_CONVEX_METHOD_GJK:
      out.convex = core::TrackConvexMethod::kGjk;
      break;
    default:
      return core::InvalidArgument(Str(field) + "convex: unknown TrackConvexMethod " +
                                   std::to_string(static_cast<int>(request.convex())));
  }
  out.per_link = request.per_link();
  out.world = !request.exclude_world();
  out.self = !request.exclude_self();
  out.gradient = !request.skip_gradient();
  return out;
}

Result<core::ContinuousRequest> ToContinuousRequest(double tolerance) {
  if (!std::isfinite(tolerance) || tolerance < 0.0) {
    return core::InvalidArgument("tolerance must be finite and >= 0 (0 means 1e-5)");
  }
  core::ContinuousRequest query;
  if (tolerance > 0.0) query.tolerance = tolerance;
  return query;
}

Result<std::vector<BodyPart>> ToBodyParts(const v1::BodyMotion& body, const core::FileAccess& access) {
  auto X0 = ToRigidTransform(body.start(), "body_motion.start");
  if (!X0.ok()) return X0.error();
  auto X1 = ToRigidTransform(body.goal(), "body_motion.goal");
  if (!X1.ok()) return X1.error();
  if (body.parts_size() == 0) return core::InvalidArgument("body_motion.parts: the body has no parts");
  const bool rotates = X0.value().R != X1.value().R;
  std::vector<BodyPart> parts;
  for (int i = 0; i < body.parts_size(); ++i) {
    const std::string field = "body_motion.parts[" + std::to_string(i) + "]";
    FileReads files{access, {}};
    auto g = ToGeometry(body.parts(i).shape(), field + ".shape", &files);
    if (!g.ok()) return g.error();
    auto X_BP = ToRigidTransform(body.parts(i).pose(), field + ".pose");
    if (!X_BP.ok()) return X_BP.error();
    // Slerp commutes with a fixed rotation on the right, and a fixed offset is exact under pure
    // translation; an offset part of a rotating body would sweep a curve the core's motion is not.
    if (rotates && !X_BP.value().p.isZero()) {
      return core::InvalidArgument(field + ".pose: a part offset from the body origin cannot be checked while the "
                                   "body rotates; give it as a mesh or convex_hull in the body frame, or put the "
                                   "body frame at the part");
    }
    parts.push_back({std::move(g).value(), X0.value() * X_BP.value(), X1.value() * X_BP.value()});
  }
  return parts;
}

Result<core::MotionRequest> ToMotionRequest(v1::MotionMode mode, double resolution, std::string_view field) {
  core::MotionRequest request;
  switch (mode) {
    case v1::MOTION_MODE_UNSPECIFIED:
    case v1::MOTION_MODE_CERTIFIED:
      request.mode = core::MotionRequest::Mode::kCertified;
      break;
    case v1::MOTION_MODE_DISCRETE:
      request.mode = core::MotionRequest::Mode::kDiscrete;
      break;
    default:
      return core::InvalidArgument(Str(field) + "mode: unknown value " + std::to_string(static_cast<int>(mode)));
  }
  if (Status s = CheckNonNegative(resolution, Str(field) + "resolution"); !s.ok()) return s.error();
  if (resolution > 0.0) request.resolution = resolution;
  return request;
}

Result<PlanSettings> ToPlanSettings(const v1::PlanRequest& request, double max_time_limit_s,
                                    std::string_view limit_name) {
  PlanSettings out;
  switch (request.planner()) {
    case v1::PLANNER_UNSPECIFIED:
    case v1::PLANNER_RRT_CONNECT:
      out.options.type = planners::PlannerType::kRrtConnect;
      break;
    case v1::PLANNER_RRT:
      out.options.type = planners::PlannerType::kRrt;
      break;
    case v1::PLANNER_PRM:
      out.options.type = planners::PlannerType::kPrm;
      break;
    case v1::PLANNER_LAZY_PRM:
      out.options.type = planners::PlannerType::kLazyPrm;
      break;
    default:
      return core::InvalidArgument("planner: unknown value " + std::to_string(static_cast<int>(request.planner())));
  }
  if (Status s = CheckNonNegative(request.time_limit(), "time_limit"); !s.ok()) return s.error();
  if (request.time_limit() > max_time_limit_s) {
    return core::InvalidArgument("time_limit: " + Num(request.time_limit()) + " s exceeds the server's " +
                                 Str(limit_name) + " = " + Num(max_time_limit_s) + " s");
  }
  out.time_limit_s =
      request.time_limit() > 0.0 ? request.time_limit() : std::min(kDefaultPlanTimeLimit, max_time_limit_s);
  if (Status s = CheckNonNegative(request.range(), "range"); !s.ok()) return s.error();
  out.options.range = request.range();
  if (request.max_iterations() < 0) {
    return core::InvalidArgument("max_iterations must be >= 0 (0: no limit), got " +
                                 std::to_string(request.max_iterations()));
  }
  out.max_iterations = request.max_iterations();
  out.options.seed = request.seed();
  out.options.simplify = !request.has_simplify() || request.simplify();
  auto motion = ToMotionRequest(request.mode(), request.resolution(), "");
  if (!motion.ok()) return motion.error();
  // Certified mode is planned lazily on the scene's ScenePlanning (the handler builds it); discrete
  // mode checks every edge with this request.
  out.motion = motion.value();
  return out;
}

Status ClampState(const core::RobotModel& robot, std::vector<double>* q, const char* what, double tolerance,
                  std::vector<std::string>* warnings) {
  const std::vector<double> given = *q;
  auto clamped = robot.ClampToLimits(*q, tolerance);
  if (!clamped.ok()) return WithField(what, clamped.error());
  if (!clamped.value().empty() && warnings != nullptr) {
    warnings->push_back(robot.ClampWarning(what, given, *q, clamped.value(), tolerance));
  }
  return {};
}

Status ToPlanEnds(const core::RobotModel& robot, const v1::PlanRequest& request, std::vector<double>* start,
                  std::vector<double>* goal, std::vector<std::string>* warnings) {
  if (Status s = ResolveState(robot, request.start(), "start", start, warnings); !s.ok()) return s;
  const bool to_pose = request.has_goal_pose();
  if (to_pose && request.has_goal()) return core::InvalidArgument("goal and goal_pose: give one of them, not both");
  goal->clear();
  if (!to_pose) {
    if (Status s = ResolveState(robot, request.goal(), "goal", goal, warnings); !s.ok()) return s;
  }
  // Values just outside a limit are clamped to it (MoveIt's start_state_max_bounds_error for the start,
  // a goal joint tolerance for the goal), with one warning each; values further out are refused.
  if (Status s = ClampState(robot, start, "start", core::kStartBoundsTolerance, warnings); !s.ok()) return s;
  return to_pose ? Status{} : ClampState(robot, goal, "goal", core::kGoalBoundsTolerance, warnings);
}

Result<core::PoseGoal> ToPoseGoal(const core::RobotModel& robot, const core::RigidTransform& X_WB,
                                  const v1::PoseGoal& goal, std::string_view field) {
  const std::string f(field);
  if (goal.link().empty()) return core::InvalidArgument(f + ".link: name the link that must reach the pose");
  auto link = robot.FindLink(goal.link());
  if (!link.ok()) return WithField(f + ".link", link.error());
  auto X_WT = ToRigidTransform(goal.pose(), f + ".pose");
  if (!X_WT.ok()) return X_WT.error();
  auto offset = ToVec3(goal.point_offset(), f + ".point_offset");
  if (!offset.ok()) return offset.error();
  auto size = ToVec3(goal.region_size(), f + ".region_size");
  if (!size.ok()) return size.error();
  auto tolerance = ToVec3(goal.orientation_tolerance(), f + ".orientation_tolerance");
  if (!tolerance.ok()) return tolerance.error();
  core::PoseGoal out;
  out.link = link.value();
  out.point_L = offset.value();
  out.X_WT = core::RelativeTransform(X_WB, X_WT.value());
  switch (goal.region()) {
    case v1::POSITION_REGION_SPHERE: out.region = core::PositionRegion::kSphere; break;
    case v1::POSITION_REGION_BOX: out.region = core::PositionRegion::kBox; break;
    case v1::POSITION_REGION_CYLINDER: out.region = core::PositionRegion::kCylinder; break;
    default: return core::InvalidArgument(f + ".region: unknown shape " + std::to_string(goal.region()));
  }
  const bool size_unset = size.value() == Vec3::Zero();
  if (size_unset && out.region != core::PositionRegion::kSphere) {
    return core::InvalidArgument(f + ".region_size: a box or cylinder region needs its size");
  }
  if (!size_unset) out.region_size = size.value();
  out.constrain_orientation = !goal.position_only();
  if (tolerance.value() != Vec3::Zero()) out.orientation_tolerance = tolerance.value();
  if (Status s = core::CheckPoseGoal(robot, out); !s.ok()) {
    std::string message = s.error().message;
    if (message.rfind("pose goal: ", 0) == 0) message = message.substr(11);
    return core::InvalidArgument(f + ": " + message);
  }
  return out;
}

Result<TimingSettings> ToTimingSettings(const core::RobotModel& robot, const planners::JointSpace& space,
                                        const v1::TimingRequest& request) {
  const auto dof = static_cast<size_t>(robot.num_positions());
  const auto nonnegative = [](double x) { return std::isfinite(x) && x >= 0.0; };
  if (!nonnegative(request.default_acceleration())) {
    return core::InvalidArgument("timing.default_acceleration must be finite and >= 0, got " +
                                 Num(request.default_acceleration()));
  }
  const auto scaling = [&](double x, const char* field) -> Result<double> {
    if (x == 0.0) return 1.0;
    if (!(std::isfinite(x) && x > 0.0 && x <= 1.0)) {
      return core::InvalidArgument(std::string("timing.") + field + " must lie in (0, 1] (0 means 1), got " + Num(x));
    }
    return x;
  };
  auto vs = scaling(request.velocity_scaling(), "velocity_scaling");
  if (!vs.ok()) return vs.error();
  auto as = scaling(request.acceleration_scaling(), "acceleration_scaling");
  if (!as.ok()) return as.error();
  TimingSettings out;
  out.resample_dt = request.resample_dt() == 0.0 ? 0.01 : request.resample_dt();
  if (!(std::isfinite(out.resample_dt) && out.resample_dt > 0.0)) {
    return core::InvalidArgument("timing.resample_dt must be finite and > 0 (0 means 0.01), got " +
                                 Num(request.resample_dt()));
  }
  out.path_tolerance = request.path_tolerance();
  if (!nonnegative(out.path_tolerance)) {
    return core::InvalidArgument("timing.path_tolerance must be finite and >= 0, got " + Num(request.path_tolerance()));
  }
  out.limits.velocity = planners::VelocityLimits(robot);
  out.limits.acceleration.assign(dof, request.default_acceleration());
  std::vector<char> seen(dof, 0);
  for (int i = 0; i < request.limits_size(); ++i) {
    const v1::JointTimingLimit& l = request.limits(i);
    const std::string field = "timing.limits[" + std::to_string(i) + "]";
    auto index = robot.ActiveIndex(l.joint_name());
    if (!index.ok()) return WithField(field + ".joint_name", index.error());
    const auto j = static_cast<size_t>(index.value());
    if (seen[j]++) return core::InvalidArgument(field + ": joint '" + l.joint_name() + "' is listed twice");
    if (!nonnegative(l.max_velocity()) || !nonnegative(l.max_acceleration())) {
      return core::InvalidArgument(field + " (joint '" + l.joint_name() +
                                   "'): max_velocity and max_acceleration must be finite and >= 0");
    }
    if (l.max_velocity() > 0.0) out.limits.velocity[j] = l.max_velocity();
    if (l.max_acceleration() > 0.0) out.limits.acceleration[j] = l.max_acceleration();
  }
  for (size_t j = 0; j < dof; ++j) {
    out.limits.velocity[j] *= vs.value();
    out.limits.acceleration[j] *= as.value();
    const bool moves = space.wraps(static_cast<int32_t>(j)) || space.lower()[j] < space.upper()[j];
    if (!moves) continue;
    if (!(out.limits.velocity[j] > 0.0) || !(out.limits.acceleration[j] > 0.0)) {
      return core::InvalidArgument("timing: joint '" + robot.active_joint_names()[j] + "' may move but has no " +
                                   (out.limits.velocity[j] > 0.0 ? "acceleration limit (give timing.limits or "
                                                                   "timing.default_acceleration)"
                                                                 : "velocity limit (the URDF gives none; give "
                                                                   "timing.limits)"));
    }
  }
  return out;
}

void ToWire(const core::RobotModel& robot, const planners::TimedTrajectory& trajectory, v1::TimedTrajectory* out) {
  out->Clear();
  for (double t : trajectory.time) out->add_time_from_start(t);
  const auto rows = [&](const std::vector<double>& values, v1::Configurations* c) {
    for (const std::string& name : robot.active_joint_names()) c->add_joint_names(name);
    c->set_positions_f64le(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double)));
    c->set_width(static_cast<uint32_t>(trajectory.dof));
    c->set_count(static_cast<uint32_t>(trajectory.size()));
  };
  rows(trajectory.positions, out->mutable_positions());
  rows(trajectory.velocities, out->mutable_velocities());
  rows(trajectory.accelerations, out->mutable_accelerations());
  for (int32_t k : trajectory.waypoint_samples) out->add_waypoint_samples(static_cast<uint32_t>(k));
  out->set_blended_corners(static_cast<uint32_t>(trajectory.blended_corners));
  out->set_max_deviation(trajectory.max_deviation);
}

v1::Planner ToWire(planners::PlannerType type) {
  switch (type) {
    case planners::PlannerType::kRrt: return v1::PLANNER_RRT;
    case planners::PlannerType::kRrtConnect: return v1::PLANNER_RRT_CONNECT;
    case planners::PlannerType::kPrm: return v1::PLANNER_PRM;
    case planners::PlannerType::kLazyPrm: return v1::PLANNER_LAZY_PRM;
  }
  return v1::PLANNER_UNSPECIFIED;
}

v1::PlanOutcome ToWire(planners::PlanOutcome outcome) {
  switch (outcome) {
    case planners::PlanOutcome::kSolved: return v1::PLAN_OUTCOME_SOLVED;
    case planners::PlanOutcome::kTimeout: return v1::PLAN_OUTCOME_TIMEOUT;
    case planners::PlanOutcome::kIterationLimit: return v1::PLAN_OUTCOME_ITERATION_LIMIT;
    case planners::PlanOutcome::kCancelled: return v1::PLAN_OUTCOME_CANCELLED;
    case planners::PlanOutcome::kInvalidStart: return v1::PLAN_OUTCOME_INVALID_START;
    case planners::PlanOutcome::kInvalidGoal: return v1::PLAN_OUTCOME_INVALID_GOAL;
  }
  return v1::PLAN_OUTCOME_UNSPECIFIED;
}

void ToWire(const planners::PlanStats& stats, v1::PlanStats* out) {
  out->set_plan_time(stats.plan_time_s);
  out->set_simplify_time(stats.simplify_time_s);
  out->set_iterations(stats.iterations);
  out->set_state_checks(stats.state_checks);
  out->set_motion_checks(stats.motion_checks);
  out->set_motion_states(stats.motion_states);
  out->set_vertices(stats.vertices);
  out->set_edges(stats.edges);
  out->set_raw_length(stats.raw_length);
  out->set_length(stats.length);
  out->set_raw_waypoints(stats.raw_waypoints);
  out->set_quick_motion_checks(stats.quick_motion_checks);
  out->set_certification_failures(stats.certification_failures);
}

void ToWire(const planners::JointSpace& space, const core::RobotModel& robot,
            const std::vector<planners::Configuration>& path, v1::Configurations* out) {
  out->Clear();
  for (const std::string& name : robot.active_joint_names()) out->add_joint_names(name);
  const auto dof = static_cast<size_t>(space.dof());
  std::vector<double> rows(path.size() * dof);
  for (size_t i = 0; i < path.size(); ++i) {
    const std::span<double> row(rows.data() + i * dof, dof);
    if (i == 0 || !space.any_wraps()) {
      std::copy(path[i].begin(), path[i].end(), row.begin());
    } else {
      space.SegmentEnd(std::span<const double>(rows.data() + (i - 1) * dof, dof), path[i], row);
    }
  }
  // The last row is the goal as given: unwrapping may have left a continuous joint 2 pi k away from it,
  // the same angle, which the last segment (turning the short way, as every motion query does) reaches.
  if (path.size() > 1) std::copy(path.back().begin(), path.back().end(), rows.end() - static_cast<std::ptrdiff_t>(dof));
  out->set_positions_f64le(std::string(reinterpret_cast<const char*>(rows.data()), rows.size() * sizeof(double)));
  out->set_width(static_cast<uint32_t>(dof));
  out->set_count(static_cast<uint32_t>(path.size()));
}

}  // namespace proximity::server
