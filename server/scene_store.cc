#include "server/scene_store.h"

#include <cctype>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>

#include "proximity/planners/timing.h"
#include "server/errors.h"
#include "server/robot_info.h"
#include "server/scene_id.h"

namespace proximity::server {

using core::Error;
using core::Result;
using core::Status;

namespace {

// The robot's URDF and SRDF text (from the request or from server files) and how to resolve meshes.
struct RobotText {
  std::string urdf;
  std::string srdf;
  core::RobotLoadOptions options;
};

Result<RobotText> ReadRobotSource(const v1::RobotSource& robot, const core::FileAccess& files,
                                  const core::BuildLimits& limits, core::Interrupt stop = {}) {
  RobotText out;
  out.options.files = files;
  out.options.limits = limits;
  out.options.stop = stop;
  for (const auto& [uri, bytes] : robot.files()) out.options.uploaded_files[uri] = bytes;
  if (robot.urdf().empty() == robot.urdf_path().empty()) {
    return core::InvalidArgument("robot: give the URDF as text (urdf) or a server path (urdf_path), exactly one");
  }
  if (!robot.srdf().empty() && !robot.srdf_path().empty()) {
    return core::InvalidArgument("robot: give the SRDF as text (srdf) or a server path (srdf_path), not both");
  }
  if (!robot.urdf_path().empty()) {
    auto text = ReadFileBytes(robot.urdf_path(), files);
    if (!text.ok()) return core::InvalidArgument("robot.urdf_path: " + text.error().message);
    out.urdf = std::move(text).value();
    // Relative mesh paths resolve against the URDF's own directory, as when loading the file.
    out.options.urdf_dir = std::filesystem::path(robot.urdf_path()).parent_path().string();
  } else {
    out.urdf = robot.urdf();
  }
  if (!robot.srdf_path().empty()) {
    auto text = ReadFileBytes(robot.srdf_path(), files);
    if (!text.ok()) return core::InvalidArgument("robot.srdf_path: " + text.error().message);
    out.srdf = std::move(text).value();
  } else {
    out.srdf = robot.srdf();
  }
  for (const auto& [package, dir] : robot.package_dirs()) out.options.package_dirs[package] = dir;
  // "" disables the ROS_PACKAGE_PATH crawl; nullopt reads the environment variable.
  if (!robot.use_ros_package_path()) out.options.ros_package_path = "";
  out.options.collision_from_visual = robot.collision_from_visual();
  return out;
}

Status CheckPadding(double value, const std::string& field) {
  if (!std::isfinite(value) || value < 0.0) {
    return core::InvalidArgument(field + " must be finite and >= 0, got " + core::FormatNumber(value));
  }
  return {};
}

int64_t GeometryTriangles(const core::Geometry& g) {
  return g.is_mesh() ? static_cast<int64_t>(core::MeshOf(*g.mesh).triangles.size()) : 0;
}

v1::SceneInfo MakeSceneInfo(const core::Scene& scene, const std::string& id, uint64_t version,
                            const std::string& parent) {
  v1::SceneInfo info;
  const core::RobotModel& robot = scene.robot();
  info.set_scene_id(id);
  info.set_version(version);
  info.set_parent_scene_id(parent);
  info.set_robot_name(robot.name());
  for (const std::string& warning : scene.robot().warnings()) info.add_warnings(warning);
  for (const std::string& warning : scene.warnings()) info.add_warnings(warning);
  int64_t triangles = 0;
  const std::vector<double> velocity = planners::VelocityLimits(robot);
  for (int32_t i = 0; i < robot.num_positions(); ++i) {
    const core::Joint& joint = robot.joint(robot.active_joints()[static_cast<size_t>(i)]);
    info.add_joint_names(joint.name);
    v1::JointLimit* limit = info.add_limits();
    limit->set_joint_name(joint.name);
    limit->set_lower(robot.lower_limits()[static_cast<size_t>(i)]);
    limit->set_upper(robot.upper_limits()[static_cast<size_t>(i)]);
    limit->set_continuous(joint.type == core::JointType::kContinuous);
    limit->set_prismatic(joint.type == core::JointType::kPrismatic);
    limit->set_velocity(velocity[static_cast<size_t>(i)]);
  }
  for (const core::Link& link : robot.links()) {
    info.add_link_names(link.name);
    for (const core::LinkGeometry& g : link.geometries) {
      if (g.mesh != nullptr) triangles += static_cast<int64_t>(core::MeshOf(*g.mesh).triangles.size());
    }
  }
  for (const core::WorldObject& o : scene.objects()) {
    info.add_object_ids(o.id);
    for (const core::ObjectPart& p : o.parts) triangles += GeometryTriangles(p.geometry);
  }
  for (const core::AttachedObject& a : scene.attached()) {
    info.add_attached_object_ids(a.id);
    for (const core::AttachedPart& p : a.parts) triangles += GeometryTriangles(p.geometry);
  }
  for (const core::SrdfGroupState& s : robot.srdf().group_states) {
    auto q = robot.NamedConfiguration(s.name, s.group);
    if (!q.ok()) continue;  // A state naming joints the model lacks was already reported at load.
    v1::NamedState* named = info.add_named_states();
    named->set_name(s.name);
    named->set_group(s.group);
    for (double v : q.value()) named->add_positions(v);
  }
  info.set_triangles(static_cast<uint64_t>(triangles));
  AddRobotSemantics(scene, &info);
  return info;
}

// The server mesh files a request's parts name, in request order.
void AddMeshFilePaths(const google::protobuf::RepeatedPtrField<v1::ObjectPart>& parts, std::vector<std::string>* out) {
  for (const v1::ObjectPart& part : parts) {
    if (part.shape().shape_case() == v1::Shape::kMeshFile) out->push_back(part.shape().mesh_file().path());
  }
}

Status HashFiles(const std::vector<std::string>& paths, const core::FileAccess& access, SceneHasher* hasher) {
  for (const std::string& f : paths) {
    if (Status s = hasher->AddFile(f, access); !s.ok()) return core::InvalidArgument(s.error().message);
  }
  return {};
}

// Bytes of a geometry's own arrays (a mesh with its hierarchies, a cloud with its tree, a hull, a
// polytope); primitives hold none.
int64_t GeometryBytes(const core::Geometry& g) {
  return static_cast<int64_t>(sizeof(core::Geometry) + core::MemoryBytes(g));
}

// What an entry holds: the robot's meshes and hulls (shared by every scene of the same robot model)
// apart from the world's and attached objects'.
void AccountMemory(SceneEntry* entry) {
  const core::Scene& scene = *entry->scene;
  entry->robot_bytes = 0;
  for (const core::Link& link : scene.robot().links()) {
    for (const core::LinkGeometry& g : link.geometries) {
      core::Geometry built;
      built.mesh = g.mesh;
      built.hull = g.hull;
      entry->robot_bytes += static_cast<int64_t>(core::MemoryBytes(built));
    }
  }
  // The self-clearance maps go with the robot model: a scene's updates share both (Scene::Update), and
  // every map is made whole by the build.
  entry->robot_bytes += scene.self_clearance_maps()->bytes();
  entry->world_bytes = static_cast<int64_t>(sizeof(SceneEntry) + sizeof(core::Scene));
  for (const core::WorldObject& o : scene.objects()) {
    for (const core::ObjectPart& part : o.parts) entry->world_bytes += GeometryBytes(part.geometry) + 256;
  }
  for (const core::AttachedObject& a : scene.attached()) {
    for (const core::AttachedPart& part : a.parts) entry->world_bytes += GeometryBytes(part.geometry) + 256;
  }
}

}  // namespace

Result<std::string> CreateSceneId(const v1::CreateSceneRequest& request, const core::FileAccess& file_access,
                                  const core::BuildLimits& limits) {
  // Content, not routes: the request without its robot source, then the robot's URDF and SRDF text and
  // its mesh bytes in link order (from the server's files or the uploaded bundle alike), so a changed
  // mesh changes the id and the same files give the same id however they arrive.
  SceneHasher hasher;
  v1::CreateSceneRequest canonical = request;
  canonical.clear_robot();
  // Names are server state, not content.
  canonical.clear_name();
  canonical.clear_reassign_name();
  hasher.Add("CreateSceneRequest", canonical);
  auto text = ReadRobotSource(request.robot(), file_access, limits);
  if (!text.ok()) return text.error();
  hasher.Add("urdf", text.value().urdf);
  hasher.Add("srdf", text.value().srdf);
  // Which geometry the links collide with (added only when it is not the default, so ids stay put).
  if (request.robot().collision_from_visual()) hasher.Add("collision_geometry", std::string("visual"));
  auto meshes = core::RobotModel::CollisionMeshFiles(text.value().urdf, text.value().options);
  if (!meshes.ok()) return WithField("robot", meshes.error());
  for (const std::string& mesh : meshes.value()) {
    if (mesh.starts_with(core::kUploadedFilePrefix)) {
      hasher.Add("mesh", request.robot().files().at(mesh.substr(core::kUploadedFilePrefix.size())));
      continue;
    }
    auto bytes = ReadFileBytes(mesh, file_access);
    if (!bytes.ok()) return core::InvalidArgument("robot: " + bytes.error().message);
    hasher.Add("mesh", bytes.value());
  }
  std::vector<std::string> paths;
  for (const v1::CollisionObject& o : request.objects()) AddMeshFilePaths(o.parts(), &paths);
  for (const v1::AttachedObject& a : request.attached_objects()) AddMeshFilePaths(a.parts(), &paths);
  if (Status s = HashFiles(paths, file_access, &hasher); !s.ok()) return s.error();
  return hasher.Id();
}

Result<std::shared_ptr<const SceneEntry>> BuildScene(const v1::CreateSceneRequest& request,
                                                     const core::FileAccess& file_access, std::string id,
                                                     const core::BuildLimits& limits, core::Interrupt stop) {
  if (id.empty()) {
    auto computed = CreateSceneId(request, file_access, limits);
    if (!computed.ok()) return computed.error();
    id = std::move(computed).value();
  }
  auto text = ReadRobotSource(request.robot(), file_access, limits, stop);
  if (!text.ok()) return text.error();
  auto robot = core::RobotModel::FromUrdfString(text.value().urdf, text.value().srdf, text.value().options);
  if (!robot.ok()) return WithField("robot", robot.error());

  auto entry = std::make_shared<SceneEntry>();
  core::SceneDescription d;
  d.robot = robot.value();
  auto X_WB = ToRigidTransform(request.base_pose(), "base_pose");
  if (!X_WB.ok()) return X_WB.error();
  d.X_WB = X_WB.value();

  FileReads files{file_access, {}};
  for (int i = 0; i < request.objects_size(); ++i) {
    const v1::CollisionObject& o = request.objects(i);
    const std::string field = "objects[" + std::to_string(i) + "]";
    if (o.operation() != v1::CollisionObject::OPERATION_UNSPECIFIED &&
        o.operation() != v1::CollisionObject::OPERATION_ADD) {
      return core::InvalidArgument(field + ".operation: CreateScene takes ADD (or unspecified) only");
    }
    core::WorldObject object;
    ObjectFrame frame;
    const CloudContext clouds{d.robot.get(), d.X_WB};
    if (Status s = ToWorldObject(o, field, &object, &frame, &files, &clouds); !s.ok()) return s.error();
    if (!entry->frames.emplace(o.id(), std::move(frame)).second) {
      return core::InvalidArgument(field + ".id: object '" + o.id() + "' appears twice");
    }
    d.objects.push_back(std::move(object));
  }
  for (int i = 0; i < request.attached_objects_size(); ++i) {
    auto a = ToAttachedObject(request.attached_objects(i), "attached_objects[" + std::to_string(i) + "]", &files);
    if (!a.ok()) return a.error();
    d.attached.push_back(std::move(a).value());
  }
  for (int i = 0; i < request.allowed_pairs_size(); ++i) {
    const v1::AllowedPair& p = request.allowed_pairs(i);
    if (p.first().empty() || p.second().empty()) {
      return core::InvalidArgument("allowed_pairs[" + std::to_string(i) + "]: both names are required");
    }
    d.allowed_pairs.emplace_back(p.first(), p.second());
  }
  if (Status s = CheckPadding(request.default_padding(), "default_padding"); !s.ok()) return s.error();
  d.default_padding = request.default_padding();
  // Map order on the wire is unspecified: sort so the built scene does not depend on it.
  for (const auto& [name, value] : request.padding()) {
    if (Status s = CheckPadding(value, "padding['" + name + "']"); !s.ok()) return s.error();
    d.padding.emplace_back(name, value);
  }
  std::sort(d.padding.begin(), d.padding.end());

  d.limits = limits;
  d.stop = stop;
  auto scene = core::Scene::Build(std::move(d));
  if (!scene.ok()) return scene.error();
  entry->id = std::move(id);
  entry->lineage = entry->id;
  entry->scene = std::move(scene).value();
  entry->info = MakeSceneInfo(*entry->scene, entry->id, 0, "");
  AccountMemory(entry.get());
  return std::shared_ptr<const SceneEntry>(std::move(entry));
}

Result<std::string> UpdateSceneId(const SceneEntry& parent, const v1::UpdateWorldRequest& request,
                                  const core::FileAccess& file_access) {
  SceneHasher hasher;
  hasher.Add("parent", parent.id);
  // The parent may be named by its alias; the id above already says which scene it is.
  v1::UpdateWorldRequest canonical = request;
  canonical.clear_scene_id();
  canonical.clear_move_names();  // what happens to names, not content
  hasher.Add("UpdateWorldRequest", canonical);
  std::vector<std::string> paths;
  for (const v1::CollisionObject& o : request.objects()) {
    if (o.operation() == v1::CollisionObject::OPERATION_ADD || o.operation() == v1::CollisionObject::OPERATION_REPLACE) {
      AddMeshFilePaths(o.parts(), &paths);
    }
  }
  if (Status s = HashFiles(paths, file_access, &hasher); !s.ok()) return s.error();
  return hasher.Id();
}

Result<std::shared_ptr<const SceneEntry>> UpdateScene(const SceneEntry& parent, const v1::UpdateWorldRequest& request,
                                                      const core::FileAccess& file_access, std::string id) {
  if (id.empty()) {
    auto computed = UpdateSceneId(parent, request, file_access);
    if (!computed.ok()) return computed.error();
    id = std::move(computed).value();
  }

  auto entry = std::make_shared<SceneEntry>();
  entry->frames = parent.frames;
  core::WorldUpdate update;
  FileReads files{file_access, {}};
  std::set<std::string, std::less<>> touched;
  const core::Scene& scene = *parent.scene;
  for (int i = 0; i < request.objects_size(); ++i) {
    const v1::CollisionObject& o = request.objects(i);
    const std::string field = "objects[" + std::to_string(i) + "]";
    if (o.id().empty()) return core::InvalidArgument(field + ".id is empty");
    if (!touched.insert(o.id()).second) {
      return core::InvalidArgument(field + ".id: object '" + o.id() + "' appears more than once in this update");
    }
    const auto existing = entry->frames.find(o.id());
    const bool exists = existing != entry->frames.end();
    switch (o.operation()) {
      case v1::CollisionObject::OPERATION_ADD: {
        if (exists) {
          return core::InvalidArgument(field + ".id: object '" + o.id() +
                                       "' already exists (MOVE it, or REMOVE it first)");
        }
        core::WorldObject object;
        ObjectFrame frame;
        const CloudContext clouds{&scene.robot(), scene.X_WB()};
        if (Status s = ToWorldObject(o, field, &object, &frame, &files, &clouds); !s.ok()) return s.error();
        entry->frames.emplace(o.id(), std::move(frame));
        update.add.push_back(std::move(object));
        break;
      }
      case v1::CollisionObject::OPERATION_REPLACE: {
        // New parts and pose for an id, or a new object: a sensor's cloud refreshed every frame.
        core::WorldObject object;
        ObjectFrame frame;
        const CloudContext clouds{&scene.robot(), scene.X_WB()};
        if (Status s = ToWorldObject(o, field, &object, &frame, &files, &clouds); !s.ok()) return s.error();
        entry->frames[o.id()] = std::move(frame);
        (exists ? update.replace : update.add).push_back(std::move(object));
        break;
      }
      case v1::CollisionObject::OPERATION_REMOVE:
        if (!exists) return core::InvalidArgument(field + ".id: no object '" + o.id() + "' in scene " + parent.id);
        entry->frames.erase(existing);
        update.remove.push_back(o.id());
        break;
      case v1::CollisionObject::OPERATION_MOVE: {
        if (!exists) return core::InvalidArgument(field + ".id: no object '" + o.id() + "' in scene " + parent.id);
        if (o.parts_size() != 0) {
          return core::InvalidArgument(field + ".parts: MOVE takes the id and the new pose only (parts keep their "
                                       "poses in the object frame); REMOVE and ADD to change the shape");
        }
        auto X_WO = ToRigidTransform(o.pose(), field + ".pose");
        if (!X_WO.ok()) return X_WO.error();
        const auto it = std::find_if(scene.objects().begin(), scene.objects().end(),
                                     [&](const core::WorldObject& w) { return w.id == o.id(); });
        if (it == scene.objects().end()) return Error{core::ErrorCode::kInternal, "object '" + o.id() + "' has a frame but no parts"};
        core::WorldObject moved = *it;
        ObjectFrame& frame = existing->second;
        frame.X_WO = X_WO.value();
        for (size_t k = 0; k < moved.parts.size(); ++k) moved.parts[k].X_WG = frame.X_WO * frame.X_OP[k];
        update.replace.push_back(std::move(moved));
        break;
      }
      default:
        return core::InvalidArgument(field + ".operation: UpdateWorld needs ADD, REMOVE or MOVE");
    }
  }
  auto updated = scene.Update(update);
  if (!updated.ok()) return updated.error();
  entry->id = std::move(id);
  entry->lineage = parent.lineage;
  entry->scene = std::move(updated).value();
  entry->info = MakeSceneInfo(*entry->scene, entry->id, parent.info.version() + 1, parent.id);
  AccountMemory(entry.get());
  return std::shared_ptr<const SceneEntry>(std::move(entry));
}

v1::CreateSceneRequest DefaultSceneRequest(const scenes::DefaultSceneSpec& spec) {
  v1::CreateSceneRequest request;
  request.mutable_robot()->set_urdf_path(spec.urdf_path);
  if (!spec.srdf_path.empty()) request.mutable_robot()->set_srdf_path(spec.srdf_path);
  for (const auto& [name, dir] : spec.package_dirs) (*request.mutable_robot()->mutable_package_dirs())[name] = dir;
  const auto set_pose = [](const core::Vec3& p, const Eigen::Quaterniond& q, v1::Pose* pose) {
    ToWire(p, pose->mutable_position());
    pose->mutable_orientation()->set_x(q.x());
    pose->mutable_orientation()->set_y(q.y());
    pose->mutable_orientation()->set_z(q.z());
    pose->mutable_orientation()->set_w(q.w());
  };
  set_pose(spec.p_WB, spec.q_WB, request.mutable_base_pose());
  for (const scenes::DefaultObject& o : spec.objects) {
    v1::CollisionObject* object = request.add_objects();
    object->set_id(o.id);
    object->set_operation(v1::CollisionObject::OPERATION_ADD);
    set_pose(o.p_WO, o.q_WO, object->mutable_pose());
    v1::Shape* shape = object->add_parts()->mutable_shape();
    if (o.kind == scenes::DefaultObject::Kind::kBox) {
      ToWire(o.box_size, shape->mutable_box()->mutable_size());
    } else {
      shape->mutable_cylinder()->set_radius(o.radius);
      shape->mutable_cylinder()->set_length(o.length);
    }
  }
  return request;
}

std::string_view SceneRegistry::Resolve(std::string_view id) const {
  if (id == kDefaultAlias) return default_id_;
  if (const auto it = names_.find(id); it != names_.end()) return it->second;
  return id;
}

core::Status CheckSceneName(std::string_view name, std::string_view field) {
  const std::string f(field);
  if (name.empty() || name.size() > 64) {
    return core::InvalidArgument(f + " must be 1 to 64 characters, got " + std::to_string(name.size()));
  }
  const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(name[0])) return core::InvalidArgument(f + " must start with a letter or digit");
  for (char c : name) {
    if (!alnum(c) && c != '.' && c != '_' && c != '-') {
      return core::InvalidArgument(f + " may hold only letters, digits, '.', '_' and '-'");
    }
  }
  if (name == SceneRegistry::kDefaultAlias) return core::InvalidArgument(f + " 'default' names the built-in scene");
  if (name.size() == 32 && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isxdigit(static_cast<unsigned char>(c)) != 0;
      })) {
    return core::InvalidArgument(f + " must not look like a scene id (32 hex digits)");
  }
  return {};
}

SceneRegistry::NameOutcome SceneRegistry::AddName(std::string_view scene, const std::string& name, bool reassign,
                                                  std::string* holder) {
  std::unique_lock lock(mutex_);
  const auto it = scenes_.find(Resolve(scene));
  if (it == scenes_.end()) return NameOutcome::kNoScene;
  if (const auto held = names_.find(name); held != names_.end() && held->second != it->first) {
    if (!reassign) {
      if (holder != nullptr) *holder = held->second;
      return NameOutcome::kTaken;
    }
  }
  names_[name] = it->first;
  return NameOutcome::kOk;
}

SceneRegistry::NameOutcome SceneRegistry::RemoveName(std::string_view scene, std::string_view name) {
  std::unique_lock lock(mutex_);
  const auto it = scenes_.find(Resolve(scene));
  if (it == scenes_.end()) return NameOutcome::kNoScene;
  const auto held = names_.find(name);
  if (held == names_.end() || held->second != it->first) return NameOutcome::kNotHeld;
  names_.erase(held);
  return NameOutcome::kOk;
}

void SceneRegistry::MoveNames(std::string_view from, std::string_view to) {
  std::unique_lock lock(mutex_);
  const auto it = scenes_.find(to);
  if (it == scenes_.end() || from == to) return;
  for (auto& [name, id] : names_) {
    if (id == from) id = it->first;
  }
}

std::string SceneRegistry::NameHolder(std::string_view name) const {
  std::shared_lock lock(mutex_);
  const auto it = names_.find(name);
  return it == names_.end() ? std::string() : it->second;
}

v1::SceneInfo SceneRegistry::Info(const SceneEntry& entry) const {
  v1::SceneInfo info = entry.info;
  info.set_self_clearance_filled(entry.scene->SelfClearanceFilled());  // changes after the build: asked now
  std::shared_lock lock(mutex_);
  for (const auto& [name, id] : names_) {
    if (id == entry.id) info.add_names(name);
  }
  return info;
}

namespace {
// Steady-clock time in units of about a microsecond: fine enough to order lookups a round trip apart.
int64_t Ticks() { return std::chrono::steady_clock::now().time_since_epoch().count() >> 10; }

// Bytes held by `entries`, each robot model counted once.
int64_t Memory(const std::vector<const SceneEntry*>& entries) {
  int64_t total = 0;
  std::set<const core::RobotModel*> robots;
  for (const SceneEntry* e : entries) {
    total += e->world_bytes + e->tracking_bytes.load(std::memory_order_relaxed);
    if (robots.insert(&e->scene->robot()).second) total += e->robot_bytes;
  }
  return total;
}

std::string Megabytes(int64_t bytes) { return core::FormatNumber(std::ceil(static_cast<double>(bytes) / (1 << 20))); }

using Owners = std::map<std::string, std::set<std::string, std::less<>>, std::less<>>;

// The evictions an Insert plans on the side for its target, applied only if they make room. With shares
// (a named client held to its own limits) only the client's own scenes may make room for it, and a scene
// other clients own too is released by the client rather than unloaded.
class EvictionPlan {
 public:
  EvictionPlan(const Owners& owners, std::string_view client, bool shares)
      : owners_(owners), client_(client), shares_(shares) {}
  bool Owns(const SceneEntry* e) const {
    const auto it = owners_.find(e->id);
    return it != owners_.end() && it->second.contains(client_);
  }
  bool OwnsAlone(const SceneEntry* e) const { return Owns(e) && owners_.find(e->id)->second.size() == 1; }
  // What the global limits may unload for the target: any scene, or with shares only the client's own.
  bool Unloadable(const SceneEntry* c) const { return !shares_ || OwnsAlone(c); }
  // Makes the least recently used candidate that `eligible` accepts give way: unloaded, or with shares
  // only released when other clients own it too. False when there is none.
  template <class F>
  bool GiveWay(F eligible) {
    for (const SceneEntry* c : candidates) {
      if (Contains(victims, c) || Contains(released, c) || !eligible(c)) continue;
      if (shares_) owned.erase(std::find(owned.begin(), owned.end(), c));
      if (shares_ && !OwnsAlone(c)) {
        released.push_back(c);
      } else {
        victims.push_back(c);
        kept.erase(std::find(kept.begin(), kept.end(), c));
      }
      return true;
    }
    return false;
  }

  std::vector<const SceneEntry*> kept;        // loaded once the plan is applied
  std::vector<const SceneEntry*> candidates;  // may give way to the target, least recently used first
  std::vector<const SceneEntry*> owned;       // the client's scenes once the plan is applied (shares only)
  std::vector<const SceneEntry*> victims;     // unloaded
  std::vector<const SceneEntry*> released;    // stay loaded, no longer the client's (other clients own them)

 private:
  static bool Contains(const std::vector<const SceneEntry*>& v, const SceneEntry* e) {
    return std::find(v.begin(), v.end(), e) != v.end();
  }
  const Owners& owners_;
  std::string_view client_;
  bool shares_;
};

// Plans evictions until the target fits every limit; the refusal names the limit that cannot be met.
core::Status MakeRoom(EvictionPlan& plan, const RegistryLimits& limits, const SceneEntry& target, bool loaded,
                      const std::string& default_id, std::string_view client, bool shares) {
  const auto refuse = [](const std::string& why) -> core::Status { return core::ResourceExhausted(why); };
  const auto owns = [&](const SceneEntry* c) { return plan.Owns(c); };
  const auto unloadable = [&](const SceneEntry* c) { return plan.Unloadable(c); };
  const std::string who = "client '" + std::string(client) + "'";
  if (!loaded && limits.max_versions > 0) {
    const auto versions = [&] {
      return std::count_if(plan.kept.begin(), plan.kept.end(),
                           [&](const SceneEntry* e) { return e->lineage == target.lineage && e->id != default_id; });
    };
    while (versions() > limits.max_versions) {
      if (!plan.GiveWay([&](const SceneEntry* c) { return c->lineage == target.lineage && unloadable(c); })) break;
    }
  }
  if (shares && limits.max_scenes_per_client > 0) {
    while (static_cast<int64_t>(plan.owned.size()) > limits.max_scenes_per_client) {
      if (plan.GiveWay(owns)) continue;
      return refuse("scenes: " + who + " holds its share of --max-scenes-per-client = " +
                    std::to_string(limits.max_scenes_per_client) + " scenes and none of them can give way; " +
                    "delete one of its scenes or raise the limit");
    }
  }
  if (shares && limits.max_memory_bytes_per_client > 0) {
    while (Memory(plan.owned) > limits.max_memory_bytes_per_client) {
      if (plan.GiveWay(owns)) continue;
      return refuse("scene needs about " + Megabytes(Memory({&target})) + " MB, and that exceeds " + who +
                    "'s share of --max-memory-mb-per-client = " + Megabytes(limits.max_memory_bytes_per_client));
    }
  }
  // Why the global limits evict nothing more: with shares, only the client's own scenes may go.
  const std::string none_left = shares ? who + " has no scene of its own left to evict (other clients' scenes are "
                                               "not evicted for it)"
                                       : "none can be evicted";
  if (!loaded && limits.max_scenes > 0) {
    while (static_cast<int64_t>(plan.kept.size()) > limits.max_scenes) {
      if (plan.GiveWay(unloadable)) continue;
      return refuse("scenes: the server holds its limit of --max-scenes = " + std::to_string(limits.max_scenes) +
                    " scenes and " + none_left + "; delete a scene or raise the limit");
    }
  }
  if (!loaded && limits.max_memory_bytes > 0) {
    while (Memory(plan.kept) > limits.max_memory_bytes) {
      if (plan.GiveWay(unloadable)) continue;
      return refuse("scene needs about " + Megabytes(Memory({&target})) + " MB, and the scenes it would " +
                    "share the server with exceed --max-memory-mb = " + Megabytes(limits.max_memory_bytes) + ": " +
                    none_left);
    }
  }
  return {};
}
}  // namespace

std::shared_ptr<const core::TrackingGeometry> TrackingGeometryOf(const SceneEntry& entry, bool* built) {
  bool made = false;
  std::call_once(entry.tracking_once, [&] {
    made = true;
    core::Result<std::shared_ptr<const core::TrackingGeometry>> g = core::TrackingGeometry::Build(*entry.scene);
    if (!g.ok()) return;
    entry.tracking = std::move(g).value();
    entry.tracking_bytes.store(entry.tracking->MemoryBytes(), std::memory_order_relaxed);
  });
  if (built != nullptr) *built = made;
  return entry.tracking;
}

std::shared_ptr<const SceneEntry> SceneRegistry::Find(std::string_view id) const {
  std::shared_lock lock(mutex_);
  const auto it = scenes_.find(Resolve(id));
  if (it == scenes_.end()) return nullptr;
  // Written only when the tick moved: concurrent queries on one scene do not all write its cache line.
  const int64_t now = Ticks();
  if (it->second->last_used.load(std::memory_order_relaxed) != now) {
    it->second->last_used.store(now, std::memory_order_relaxed);
  }
  return it->second;
}

int64_t SceneRegistry::MemoryLocked() const {
  std::vector<const SceneEntry*> all;
  for (const auto& [id, e] : scenes_) all.push_back(e.get());
  return Memory(all);
}

int64_t SceneRegistry::memory_bytes() const {
  std::shared_lock lock(mutex_);
  return MemoryLocked();
}

core::Result<std::pair<std::shared_ptr<const SceneEntry>, bool>> SceneRegistry::Insert(
    std::shared_ptr<const SceneEntry> entry, int64_t* evicted, std::string_view client) {
  std::unique_lock lock(mutex_);
  const auto found = scenes_.find(entry->id);
  const bool loaded = found != scenes_.end();
  // Whether the client's scenes are held to its share (and only they make room for it).
  const bool shares = !client.empty() && limits_.per_client();
  EvictionPlan plan(owners_, client, shares);
  if (loaded) {
    found->second->last_used.store(Ticks(), std::memory_order_relaxed);
    // Nobody named, an owner already, or the built-in scene (which belongs to nobody): nothing changes.
    if (client.empty() || found->first == default_id_ || plan.Owns(found->second.get())) {
      return std::make_pair(found->second, false);
    }
    if (!shares) {
      owners_[found->first].emplace(client);
      return std::make_pair(found->second, false);
    }
    // A new owner of a loaded scene: its share grows, so room is made for it as for a new scene.
  }
  const std::shared_ptr<const SceneEntry> target = loaded ? found->second : std::move(entry);
  if (!loaded) target->last_used.store(Ticks(), std::memory_order_relaxed);
  for (const auto& [id, e] : scenes_) {
    plan.kept.push_back(e.get());
    if (id != default_id_ && e != target) plan.candidates.push_back(e.get());
    if (shares && e != target && plan.Owns(e.get())) plan.owned.push_back(e.get());
  }
  if (!loaded) plan.kept.push_back(target.get());
  if (shares) plan.owned.push_back(target.get());
  std::sort(plan.candidates.begin(), plan.candidates.end(), [](const SceneEntry* a, const SceneEntry* b) {
    return a->last_used.load(std::memory_order_relaxed) < b->last_used.load(std::memory_order_relaxed);
  });
  if (core::Status s = MakeRoom(plan, limits_, *target, loaded, default_id_, client, shares); !s.ok()) {
    return s.error();
  }
  for (const SceneEntry* r : plan.released) {
    const auto it = owners_.find(r->id);
    it->second.erase(it->second.find(client));
  }
  for (const SceneEntry* v : plan.victims) RemoveLocked(std::string(v->id));  // a copy: `v` goes with its entry
  if (evicted != nullptr) *evicted = static_cast<int64_t>(plan.victims.size());
  if (!client.empty() && target->id != default_id_) owners_[target->id].emplace(client);
  if (loaded) return std::make_pair(target, false);
  const auto [it, inserted] = scenes_.try_emplace(target->id, target);
  return std::make_pair(it->second, inserted);
}

bool SceneRegistry::Erase(std::string_view id) {
  std::unique_lock lock(mutex_);
  const auto it = scenes_.find(Resolve(id));
  if (it == scenes_.end()) return false;
  RemoveLocked(std::string(it->first));
  return true;
}

void SceneRegistry::RemoveLocked(const std::string& id) {
  std::erase_if(names_, [&](const auto& n) { return n.second == id; });
  owners_.erase(id);
  scenes_.erase(id);
}

SceneRegistry::ReleaseOutcome SceneRegistry::Release(std::string_view id, std::string_view client) {
  std::unique_lock lock(mutex_);
  const auto it = scenes_.find(Resolve(id));
  if (it == scenes_.end()) return ReleaseOutcome::kNoScene;
  const auto owners = owners_.find(it->first);
  if (owners == owners_.end()) return ReleaseOutcome::kNotOwner;
  const auto owner = owners->second.find(client);
  if (owner == owners->second.end()) return ReleaseOutcome::kNotOwner;
  owners->second.erase(owner);
  if (!owners->second.empty()) return ReleaseOutcome::kReleased;
  RemoveLocked(std::string(it->first));
  return ReleaseOutcome::kErased;
}

std::vector<ClientShare> SceneRegistry::Shares() const {
  std::shared_lock lock(mutex_);
  std::map<std::string, std::vector<const SceneEntry*>, std::less<>> by_client;
  for (const auto& [id, clients] : owners_) {
    const auto scene = scenes_.find(id);
    if (scene == scenes_.end()) continue;
    for (const std::string& c : clients) by_client[c].push_back(scene->second.get());
  }
  std::vector<ClientShare> out;
  out.reserve(by_client.size());
  for (const auto& [name, entries] : by_client) {
    out.push_back({name, static_cast<int64_t>(entries.size()), Memory(entries)});
  }
  return out;
}

std::vector<std::shared_ptr<const SceneEntry>> SceneRegistry::List() const {
  std::shared_lock lock(mutex_);
  std::vector<std::shared_ptr<const SceneEntry>> out;
  out.reserve(scenes_.size());
  for (const auto& [id, entry] : scenes_) out.push_back(entry);
  return out;
}

size_t SceneRegistry::size() const {
  std::shared_lock lock(mutex_);
  return scenes_.size();
}

void SceneRegistry::set_default_id(std::string id) {
  std::unique_lock lock(mutex_);
  default_id_ = std::move(id);
}

}  // namespace proximity::server
