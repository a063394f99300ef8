/// @file
/// Building a scene: validating its description, placing robot and world parts, the
/// broad phase over the world, self-clearance maps, versions by world update, and names of contacts.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "proximity/core/scene/scene.h"
#include "bvh/mesh_query.h"
#include "scene/self_clearance.h"
#include "scene/scene_internal.h"
#include "scene/scene_impl.h"
#include "scene/self_clearance_fill.h"
#include "robot/robot_motion.h"

namespace proximity::core {

using namespace internal;  // scene_internal.h

std::string StateContact::Describe(const Scene& scene) const {
  if (link < 0) return "none";
  auto side = [&](int32_t l, int32_t att) {
    const std::string& name = scene.robot().link(l).name;
    return att < 0 ? name : "attached '" + scene.attached()[att].id + "' (on " + name + ")";
  };
  if (self) return side(link, attached) + " x " + side(other_link, other_attached);
  return side(link, attached) + " x object '" + scene.objects()[object].id + "'";
}

std::string StateContact::Name(const Scene& scene) const {
  if (attached >= 0) return scene.attached()[attached].id;
  return link >= 0 ? scene.robot().link(link).name : std::string();
}

std::string StateContact::OtherName(const Scene& scene) const {
  if (self) return other_attached >= 0 ? scene.attached()[other_attached].id : scene.robot().link(other_link).name;
  return object >= 0 ? scene.objects()[object].id : std::string();
}

Result<std::shared_ptr<const Scene>> Scene::Build(SceneDescription d) {
  Result<std::shared_ptr<SceneImpl>> scene = SceneImpl::Make(std::move(d));
  if (!scene.ok()) return scene.error();
  return std::shared_ptr<const Scene>(std::move(scene).value());
}

namespace {

// An error unless the box (frame G, posed at X_FG in frame F) lies within kWorldExtent of F's origin on
// every axis; `what` names it.
Status CheckWithinExtent(const Obb& box_G, const RigidTransform& X_FG, const std::string& what) {
  const Aabb b = WorldBounds(box_G, X_FG);
  const double reach = std::max(b.max.cwiseAbs().maxCoeff(), b.min.cwiseAbs().maxCoeff());
  if (reach <= kWorldExtent) return {};
  return InvalidArgument(what + " reaches " + FormatNumber(reach) +
                         " m from the origin, beyond the accepted extent of " + FormatNumber(kWorldExtent) + " m");
}

// Every size of a primitive: > 0 (a zero-size solid is almost surely a mistake and has no interior to
// test), except a capsule's half length, which may be 0 (a sphere).
Status CheckPositiveSize(const Shape& shape, const std::string& what) {
  auto positive = [&](double x, const char* field) -> Status {
    if (x > 0.0) return {};
    return InvalidArgument(what + ": " + field + " must be > 0, got " + FormatNumber(x));
  };
  if (const auto* b = std::get_if<Box>(&shape)) {
    if (Status s = positive(b->half_extents.minCoeff(), "box half_extents"); !s.ok()) return s;
  } else if (const auto* sp = std::get_if<Sphere>(&shape)) {
    return positive(sp->radius, "sphere radius");
  } else if (const auto* c = std::get_if<Cylinder>(&shape)) {
    if (Status s = positive(c->radius, "cylinder radius"); !s.ok()) return s;
    return positive(c->half_length, "cylinder half_length");
  } else if (const auto* cap = std::get_if<Capsule>(&shape)) {
    return positive(cap->radius, "capsule radius");
  } else if (const auto* cone = std::get_if<Cone>(&shape)) {
    if (Status s = positive(cone->radius, "cone radius"); !s.ok()) return s;
    return positive(cone->half_height, "cone half_height");
  }
  return {};
}

// Every part of a world or attached object: a valid pose (the member `pose` of the part), a valid
// primitive of positive size, and a bounding box within the accepted extent.
template <class Part>
Status ValidateParts(const std::string& owner, const std::vector<Part>& parts, RigidTransform Part::*pose) {
  for (size_t p = 0; p < parts.size(); ++p) {
    const std::string where = owner + " part " + std::to_string(p);
    const Geometry& geometry = parts[p].geometry;
    const RigidTransform& X = parts[p].*pose;
    if (Status s = ValidatePose(X, (where + " pose").c_str()); !s.ok()) return s.error();
    if (geometry.is_cloud() && !std::is_same_v<Part, ObjectPart>) {
      return InvalidArgument(where + ": a point cloud cannot be attached to the robot (clouds are world objects)");
    }
    if (geometry.is_primitive()) {
      if (Status s = ValidateShape(geometry.shape); !s.ok()) {
        return InvalidArgument(where + ": " + s.error().message);
      }
      if (Status s = CheckPositiveSize(geometry.shape, where); !s.ok()) return s;
    }
    if (Status s = CheckWithinExtent(GeometryBox(geometry), X, where); !s.ok()) return s;
  }
  return {};
}

// The robot's own geometry and joint origins within the accepted extent (each link's geometry in its
// link frame, each joint's origin in its parent's), so that no pose forward kinematics computes from
// accepted joint values can overflow.
Status ValidateRobotExtent(const RobotModel& robot) {
  for (const Joint& j : robot.joints()) {
    if (j.X_PJ.p.cwiseAbs().maxCoeff() > kWorldExtent) {
      return InvalidArgument("robot '" + robot.name() + "': joint '" + j.name + "' origin lies " +
                             FormatNumber(j.X_PJ.p.cwiseAbs().maxCoeff()) + " m from its parent link, beyond the "
                             "accepted extent of " + FormatNumber(kWorldExtent) + " m");
    }
    // A mimic joint's value stays within a bounded multiple of accepted joint values.
    if (j.is_mimic() && !(std::abs(j.mimic_multiplier) <= 1e3 && std::abs(j.mimic_offset) <= kMaxJointValue)) {
      return InvalidArgument("robot '" + robot.name() + "': mimic joint '" + j.name + "' has multiplier " +
                             FormatNumber(j.mimic_multiplier) + " and offset " + FormatNumber(j.mimic_offset) +
                             "; accepted are |multiplier| <= 1000 and |offset| <= " + FormatNumber(kMaxJointValue));
    }
  }
  for (const Link& link : robot.links()) {
    for (size_t g = 0; g < link.geometries.size(); ++g) {
      const LinkGeometry& lg = link.geometries[g];
      Obb box;
      switch (lg.type) {
        case ShapeType::kMesh:
          if (lg.mesh == nullptr) continue;
          box = lg.mesh->obb(0);
          break;
        case ShapeType::kBox:
          box = ShapeBoundingObb(Box{0.5 * lg.box_size});
          break;
        case ShapeType::kCylinder:
          box = ShapeBoundingObb(Cylinder{lg.radius, 0.5 * lg.length});
          break;
        case ShapeType::kSphere:
          box = ShapeBoundingObb(Sphere{Vec3::Zero(), lg.radius});
          break;
      }
      if (Status s = CheckWithinExtent(box, lg.X_LG, "robot '" + robot.name() + "': link '" + link.name +
                                                         "' collision geometry " + std::to_string(g));
          !s.ok()) {
        return s;
      }
    }
  }
  return {};
}

// The robot is set and placed within the accepted extent, with its geometry and joint origins.
Status ValidateRobotPlacement(const SceneDescription& d) {
  if (d.robot == nullptr) return InvalidArgument("scene: no robot");
  if (d.self_clearance_maps != nullptr && d.self_clearance_maps->robot() != d.robot) {
    return InvalidArgument("scene: self_clearance_maps were made for robot model '" +
                           d.self_clearance_maps->robot()->name() + "', not this scene's robot model '" +
                           d.robot->name() + "' (one SelfClearanceMaps per robot model)");
  }
  if (Status s = ValidatePose(d.X_WB, "robot base pose X_WB"); !s.ok()) return s;
  if (d.X_WB.p.cwiseAbs().maxCoeff() > kWorldExtent) {
    return InvalidArgument("scene: robot base pose X_WB lies beyond the accepted extent of " +
                           FormatNumber(kWorldExtent) + " m");
  }
  return ValidateRobotExtent(*d.robot);
}

using NameIndex = std::unordered_map<std::string, int32_t>;

// World objects by id, each checked: a unique, non-empty id that no link has, and valid parts.
Result<NameIndex> IndexObjects(const std::vector<WorldObject>& objects, const RobotModel& robot) {
  NameIndex object_by_id;
  for (size_t o = 0; o < objects.size(); ++o) {
    const WorldObject& obj = objects[o];
    if (obj.id.empty()) return InvalidArgument("scene: object " + std::to_string(o) + " has an empty id");
    if (!object_by_id.emplace(obj.id, static_cast<int32_t>(o)).second) {
      return InvalidArgument("scene: object id '" + obj.id + "' appears twice");
    }
    if (robot.FindLink(obj.id).ok()) {
      return InvalidArgument("scene: object id '" + obj.id + "' is also the name of a robot link");
    }
    if (Status s = ValidateParts("scene: object '" + obj.id + "'", obj.parts, &ObjectPart::X_WG); !s.ok()) {
      return s.error();
    }
  }
  return object_by_id;
}

// Attached objects by id, each checked: a non-empty id that no link, world object or other attached
// object has, a carrying link and touch links of the robot, and valid parts.
Result<NameIndex> IndexAttached(const std::vector<AttachedObject>& attached, const RobotModel& robot,
                                const NameIndex& object_by_id) {
  NameIndex attached_by_id;
  for (size_t a = 0; a < attached.size(); ++a) {
    const AttachedObject& att = attached[a];
    if (att.id.empty()) return InvalidArgument("scene: attached object " + std::to_string(a) + " has an empty id");
    if (object_by_id.contains(att.id) || robot.FindLink(att.id).ok() ||
        !attached_by_id.emplace(att.id, static_cast<int32_t>(a)).second) {
      return InvalidArgument("scene: attached object id '" + att.id +
                             "' is already used by a link, a world object or another attached object");
    }
    if (!robot.FindLink(att.link).ok()) {
      return NotFound("scene: attached object '" + att.id + "' names link '" + att.link + "', which robot '" +
                      robot.name() + "' does not have");
    }
    for (const std::string& t : att.touch_links) {
      if (!robot.FindLink(t).ok()) {
        return NotFound("scene: attached object '" + att.id + "' touch link '" + t + "' is not a link of robot '" +
                        robot.name() + "'");
      }
    }
    if (Status s = ValidateParts("scene: attached object '" + att.id + "'", att.parts, &AttachedPart::X_LG);
        !s.ok()) {
      return s.error();
    }
  }
  return attached_by_id;
}

}  // namespace

// Every name a pair or a padding can use: links, world objects and attached objects share one
// namespace. The entities of the allowed-collision matrix are the links, then the attached objects.
struct SceneImpl::Names {
  const RobotModel* robot = nullptr;
  NameIndex object_by_id, attached_by_id;

  // The description's names, checked (IndexObjects, IndexAttached).
  static Result<Names> Index(const SceneDescription& d) {
    Result<NameIndex> objects = IndexObjects(d.objects, *d.robot);
    if (!objects.ok()) return objects.error();
    Result<NameIndex> attached = IndexAttached(d.attached, *d.robot, objects.value());
    if (!attached.ok()) return attached.error();
    return Names{d.robot.get(), std::move(objects).value(), std::move(attached).value()};
  }
  size_t num_links() const { return robot->links().size(); }
  size_t num_entities() const { return num_links() + attached_by_id.size(); }
  // The entity a link or attached object name stands for, or -1.
  int32_t Entity(const std::string& name) const {
    if (auto l = robot->FindLink(name); l.ok()) return l.value();
    if (auto it = attached_by_id.find(name); it != attached_by_id.end()) {
      return static_cast<int32_t>(num_links()) + it->second;
    }
    return -1;
  }
  // The padding of every entity: the default, or the value the description gives its name.
  Result<std::vector<double>> Padding(const SceneDescription& d) const {
    if (!(std::isfinite(d.default_padding) && d.default_padding >= 0.0 && d.default_padding <= kWorldExtent)) {
      return InvalidArgument("scene: default padding must be finite, >= 0 and <= " + FormatNumber(kWorldExtent) +
                             " m, got " + FormatNumber(d.default_padding));
    }
    std::vector<double> padding(num_entities(), d.default_padding);
    for (const auto& [name, value] : d.padding) {
      const int32_t e = Entity(name);
      if (e < 0) return NotFound("scene: padding names '" + name + "', which is neither a link nor an attached object");
      if (!(std::isfinite(value) && value >= 0.0 && value <= kWorldExtent)) {
        return InvalidArgument("scene: padding of '" + name + "' must be finite, >= 0 and <= " +
                               FormatNumber(kWorldExtent) + " m, got " + FormatNumber(value));
      }
      padding[e] = value;
    }
    return padding;
  }
};

// A warning for every mesh with triangles of zero area: they are checked as their hull segments (a
// surface that should be closed may have a crack there), so the user hears of it once per scene.
static std::vector<std::string> DegenerateTriangleWarnings(const SceneDescription& d) {
  std::vector<std::string> warnings;
  auto check = [&](const MeshModel* mesh, const std::string& what) {
    if (mesh == nullptr) return;
    const int32_t n = CountDegenerateTriangles(mesh->mesh());
    if (n == 0) return;
    warnings.push_back(what + ": " + std::to_string(n) + " of " + std::to_string(mesh->num_triangles()) +
                       " triangles have zero area; they are checked as line segments");
  };
  for (const Link& link : d.robot->links()) {
    for (size_t g = 0; g < link.geometries.size(); ++g) {
      check(link.geometries[g].mesh.get(), "link '" + link.name + "' collision geometry " + std::to_string(g));
    }
  }
  for (const WorldObject& obj : d.objects) {
    for (size_t p = 0; p < obj.parts.size(); ++p) {
      check(obj.parts[p].geometry.mesh.get(), "object '" + obj.id + "' part " + std::to_string(p));
    }
  }
  for (const AttachedObject& att : d.attached) {
    for (size_t p = 0; p < att.parts.size(); ++p) {
      check(att.parts[p].geometry.mesh.get(), "attached object '" + att.id + "' part " + std::to_string(p));
    }
  }
  return warnings;
}

namespace {

// A link mesh's distance map for point clouds has cells of at most kCloudMapCell metres (its
// interpolation error is at most sqrt(3) / 2 of a cell, and the points within that of the surface go to
// the exact test), with between kCloudMapMinCells and kCloudMapMaxCells along its longest side (a long
// link gets more cells, not a coarser map; the largest map is about 2 million nodes).
constexpr double kCloudMapCell = 0.005;
constexpr int32_t kCloudMapMinCells = 32;
constexpr int32_t kCloudMapMaxCells = 128;

int32_t CloudMapCells(const MeshModel& mesh) {
  // The map's box is the mesh's padded by 10% of its longest side on each side (SdfBuildOptions).
  Aabb box;
  for (const Vec3& v : mesh.mesh().vertices) box.Extend(v);
  const double longest = 1.2 * (box.max - box.min).maxCoeff();
  const double cells = std::ceil(longest / kCloudMapCell);
  return static_cast<int32_t>(
      std::clamp(cells, static_cast<double>(kCloudMapMinCells), static_cast<double>(kCloudMapMaxCells)));
}

// The distance map of a robot part's mesh (unsigned: meshes are surfaces, so a point inside a closed
// link but away from its triangles is free, and the map proves it so), made once per mesh for every
// scene that holds point clouds and shares `maps` (a sensor's cloud is replaced many times a second,
// and each update builds a scene), and kept while the mesh lives. Null when none can be made: the exact
// walk then.
std::shared_ptr<const SignedDistanceMap> LinkDistanceMap(SelfClearanceMaps& maps,
                                                         const std::shared_ptr<const MeshModel>& mesh) {
  return internal::PartDistanceMapsOf(maps).Get(mesh, [&]() -> std::shared_ptr<const SignedDistanceMap> {
    SdfBuildOptions options;
    options.unsigned_distance = true;
    Result<std::shared_ptr<const SignedDistanceMap>> map =
        SignedDistanceMap::Build(*mesh, CloudMapCells(*mesh), options);
    return map.ok() ? map.value() : nullptr;
  });
}

}  // namespace

Result<std::shared_ptr<SceneImpl>> SceneImpl::Make(SceneDescription d) {
  if (Status s = ValidateRobotPlacement(d); !s.ok()) return s.error();
  auto scene = std::make_shared<SceneImpl>();
  static std::atomic<uint64_t> serials{0};
  scene->serial_ = ++serials;
  scene->robot_ = d.robot;
  scene->self_clearance_maps_ =
      d.self_clearance_maps != nullptr ? d.self_clearance_maps : SelfClearanceMaps::For(d.robot);
  Result<Names> names = Names::Index(d);
  if (!names.ok()) return names.error();
  Result<std::vector<double>> padding = names.value().Padding(d);
  if (!padding.ok()) return padding.error();
  scene->warnings_ = DegenerateTriangleWarnings(d);
  // The entity matrices grow with the square of the robot's links and attached objects.
  const auto entities = static_cast<int64_t>(names.value().num_entities());
  if (Status s = CheckCap(entities * (entities + static_cast<int64_t>(d.objects.size())), d.limits.max_memory_bytes,
                          "scene: estimated bytes of the allowed-pair tables", "max_memory_bytes");
      !s.ok()) {
    return s.error();
  }
  scene->AllowRobotPairs(d, names.value());
  scene->AllowNamedPairs(d.allowed_pairs, names.value());
  // Sealed gaps and interior balls prove contacts (Geometry::hull_surface_gap, Geometry::interior): the
  // scene trusts only the ones its robot model found at load, never one a description gives a world or
  // attached object.
  const auto distrust = [](Geometry& g) {
    g.hull_surface_gap = std::numeric_limits<double>::infinity();
    g.interior = nullptr;
  };
  for (WorldObject& o : d.objects) {
    for (ObjectPart& part : o.parts) distrust(part.geometry);
  }
  for (AttachedObject& a : d.attached) {
    for (AttachedPart& part : a.parts) distrust(part.geometry);
  }
  scene->AddRobotParts(d, padding.value());
  const bool clouds = std::any_of(d.objects.begin(), d.objects.end(), [](const WorldObject& o) {
    return std::any_of(o.parts.begin(), o.parts.end(), [](const ObjectPart& p) { return p.geometry.is_cloud(); });
  });
  if (clouds) {
    for (RobotPart& rp : scene->robot_parts_) {
      if (!rp.geometry.is_mesh()) continue;
      rp.geometry.distance_map = LinkDistanceMap(*scene->self_clearance_maps_, rp.geometry.mesh);
    }
  }
  if (Status s = scene->PairRobotParts(d.limits, d.stop); !s.ok()) return s.error();
  scene->X_WB_ = d.X_WB;
  scene->objects_ = std::move(d.objects);
  scene->attached_ = std::move(d.attached);
  scene->allowed_pairs_ = std::move(d.allowed_pairs);
  scene->default_padding_ = d.default_padding;
  scene->padding_ = std::move(d.padding);
  scene->BuildBroadPhase();
  scene->BuildStaticSelfPhase();
  scene->BuildLanePlan();
  scene->self_clearance_fill_ = d.self_clearance_fill;
  if (d.self_clearance_fill == SelfClearanceFill::kAtBuild) (void)scene->FillSelfClearanceMaps(d.stop);
  if (d.self_clearance_fill != SelfClearanceFill::kOnUse && scene->HasUnclaimedSelfClearanceMaps()) {
    internal::QueueSelfClearanceFill(scene);
  }
  return scene;
}

void SceneImpl::AllowEntities(size_t a, size_t b) {
  entity_allowed_[a * num_entities_ + b] = 1;
  entity_allowed_[b * num_entities_ + a] = 1;
}

// The robot's own allowed pairs (SRDF, adjacent links), and each attached object with itself, its
// carrying link and its touch links.
void SceneImpl::AllowRobotPairs(const SceneDescription& d, const Names& names) {
  const RobotModel& robot = *d.robot;
  const size_t nl = names.num_links(), na = d.attached.size();
  num_entities_ = names.num_entities();
  entity_allowed_.assign(num_entities_ * num_entities_, 0);
  for (size_t a = 0; a < nl; ++a)
    for (size_t b = 0; b < nl; ++b)
      if (robot.AllowedCollision(static_cast<int32_t>(a), static_cast<int32_t>(b))) AllowEntities(a, b);
  for (size_t a = 0; a < na; ++a) {
    AllowEntities(nl + a, nl + a);
    AllowEntities(nl + a, static_cast<size_t>(robot.FindLink(d.attached[a].link).value()));
    for (const std::string& t : d.attached[a].touch_links) AllowEntities(nl + a, static_cast<size_t>(names.Entity(t)));
  }
}

// The description's allowed pairs by name: two entities, or an entity and a world object. Names that
// are nothing here are kept and ignored, with one warning for all of them.
void SceneImpl::AllowNamedPairs(const std::vector<std::pair<std::string, std::string>>& pairs, const Names& names) {
  const NameIndex& object_by_id = names.object_by_id;
  const size_t no = object_by_id.size();
  entity_object_allowed_.assign(num_entities_ * no, 0);
  std::set<std::string> unknown_names;  // sorted: the warning reads the same every time
  for (const auto& [first, second] : pairs) {
    const int32_t ea = names.Entity(first), eb = names.Entity(second);
    const auto oa = object_by_id.find(first), ob = object_by_id.find(second);
    if (ea >= 0 && eb >= 0) {
      AllowEntities(ea, eb);
    } else if (ea >= 0 && ob != object_by_id.end()) {
      entity_object_allowed_[ea * no + ob->second] = 1;
    } else if (eb >= 0 && oa != object_by_id.end()) {
      entity_object_allowed_[eb * no + oa->second] = 1;
    } else if (oa != object_by_id.end() && ob != object_by_id.end()) {
      // Two world objects: never checked against each other anyway.
    } else {
      // A name that is nothing here (MoveIt's matrices often list objects of other scenes): the entry
      // allows nothing that exists, so it is kept and ignored, with one warning for all such names.
      for (const std::string* name : {&first, &second}) {
        if (names.Entity(*name) < 0 && !object_by_id.contains(*name)) unknown_names.insert(*name);
      }
    }
  }
  if (unknown_names.empty()) return;
  std::string list;
  for (const std::string& name : unknown_names) list += (list.empty() ? "'" : ", '") + name + "'";
  warnings_.push_back("allowed pairs name " + list +
                      ", neither robot links, attached objects nor world objects: those entries are ignored");
}

SceneImpl::RobotPart SceneImpl::MakeRobotPart(int32_t link, int32_t entity, int32_t attached, Geometry geometry,
                                              const RigidTransform& X_LG) {
  RobotPart rp;
  rp.link = link;
  rp.entity = entity;
  rp.attached = attached;
  rp.X_LG = X_LG;
  rp.geometry = std::move(geometry);
  rp.local_box = GeometryBox(rp.geometry);
  rp.R_LB = X_LG.R * rp.local_box.R_MB;
  rp.p_LBo = X_LG * rp.local_box.center;
  rp.identity_X_LG = X_LG.R == Mat3::Identity() && X_LG.p == Vec3::Zero();
  // An attached part's farthest point from the link origin: its box's corners bound it.
  if (attached >= 0) rp.reach = rp.p_LBo.norm() + rp.local_box.half_extents.norm();
  return rp;
}

// The robot's parts: every link's collision geometries, then every attached object's parts, each with
// its entity's padding.
void SceneImpl::AddRobotParts(const SceneDescription& d, const std::vector<double>& padding) {
  const RobotModel& robot = *d.robot;
  const int32_t nl = static_cast<int32_t>(robot.links().size());
  for (int32_t l = 0; l < nl; ++l) {
    const auto& link_geometries = robot.link(l).geometries;
    for (size_t gi = 0; gi < link_geometries.size(); ++gi) {
      const LinkGeometry& g = link_geometries[gi];
      robot_parts_.push_back(MakeRobotPart(l, l, -1, FromLinkGeometry(g), g.X_LG));
      robot_parts_.back().geometry_index = static_cast<int32_t>(gi);
    }
  }
  for (int32_t a = 0; a < static_cast<int32_t>(d.attached.size()); ++a) {
    const int32_t link = robot.FindLink(d.attached[a].link).value();
    for (const AttachedPart& part : d.attached[a].parts) {
      robot_parts_.push_back(MakeRobotPart(link, nl + a, a, part.geometry, part.X_LG));
    }
  }
  for (RobotPart& rp : robot_parts_) rp.padding = padding[rp.entity];
  link_padding_.assign(padding.begin(), padding.begin() + nl);
}

// The pairs of robot parts CLEAR tests (parts of two entities not allowed to touch), and the
// self-clearance maps of link pairs that have one (the robot model keeps them across scenes).
Status SceneImpl::PairRobotParts(const BuildLimits& limits, const Interrupt& stop) {
  const RobotModel& robot = *robot_;
  const auto& parts = robot_parts_;
  const auto n = static_cast<int32_t>(parts.size());
  const auto checked = [&](int32_t i, int32_t j) {
    return parts[i].entity != parts[j].entity && !AllowedEntities(parts[i].entity, parts[j].entity);
  };
  // Counted before anything is made: the caps refuse a robot whose pairs would not fit.
  int64_t pairs = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (stop()) return Stopped("scene: the build was stopped counting self pairs");
    for (int32_t j = i + 1; j < n; ++j) pairs += checked(i, j);
  }
  if (Status s = CheckCap(pairs, limits.max_self_pairs, "scene: self pairs (robot parts checked against each other)",
                          "max_self_pairs; an SRDF's disabled collisions lower it");
      !s.ok()) {
    return s;
  }
  if (Status s = CheckCap(pairs * static_cast<int64_t>(sizeof(SelfPair)), limits.max_memory_bytes,
                          "scene: estimated bytes of the self pairs", "max_memory_bytes");
      !s.ok()) {
    return s;
  }
  self_pairs_.reserve(static_cast<size_t>(pairs));
  for (int32_t i = 0; i < n; ++i) {
    if (stop()) return Stopped("scene: the build was stopped pairing robot parts");
    for (int32_t j = i + 1; j < n; ++j) {
      if (checked(i, j)) self_pairs_.push_back({i, j, CommonAncestor(robot, parts[i].link, parts[j].link)});
    }
  }
  for (SelfPair& sp : self_pairs_) {
    if (stop()) return Stopped("scene: the build was stopped making self-clearance maps");
    const RobotPart& a = parts[sp.a];
    const RobotPart& b = parts[sp.b];
    if (a.attached >= 0 || b.attached >= 0) continue;
    sp.clearance_map = internal::MemoOf(*self_clearance_maps_)
                           .Get({a.link, a.geometry_index, b.link, b.geometry_index},
                                [&] { return MakeSelfClearanceMap(robot, a, b, sp.ancestor); });
  }
  return {};
}

// A median-split AABB tree over the world parts, so that each robot geometry meets only the parts
// near it: cost follows what is near, not how many objects there are.
void SceneImpl::BuildBroadPhase() {
  for (int32_t o = 0; o < static_cast<int32_t>(objects_.size()); ++o)
    for (int32_t p = 0; p < static_cast<int32_t>(objects_[o].parts.size()); ++p) {
      const ObjectPart& part = objects_[o].parts[p];
      const Obb box_G = GeometryBox(part.geometry);
      world_parts_.push_back({o, p, WorldBounds(box_G, part.X_WG),
                              Obb{part.X_WG.R * box_G.R_MB, part.X_WG * box_G.center, box_G.half_extents}});
    }
  BuildBoxTree(&world_parts_, &broad_);
  world_blocks_.clear();
  if (world_parts_.size() > kFlatWorldParts) return;
  const double inf = std::numeric_limits<double>::infinity();
  world_blocks_.resize((world_parts_.size() + 7) / 8);
  for (size_t k = 0; k < 8 * world_blocks_.size(); ++k) {
    WorldBoxBlock& block = world_blocks_[k / 8];
    for (int d = 0; d < 3; ++d) {
      block.lo[d][k % 8] = k < world_parts_.size() ? world_parts_[k].bounds.min[d] : inf;
      block.hi[d][k % 8] = k < world_parts_.size() ? world_parts_[k].bounds.max[d] : -inf;
    }
  }
}

template <class Item>
void SceneImpl::BuildBoxTree(std::vector<Item>* items, std::vector<BroadNode>* nodes) {
  nodes->clear();
  if (items->empty()) return;
  struct Task {
    int32_t node, begin, end;
  };
  nodes->push_back({});
  std::vector<Task> stack{{0, 0, static_cast<int32_t>(items->size())}};
  while (!stack.empty()) {
    const Task t = stack.back();
    stack.pop_back();
    Aabb box;
    for (int32_t k = t.begin; k < t.end; ++k) box.Extend((*items)[k].bounds);
    (*nodes)[t.node].bounds = box;
    if (t.end - t.begin <= 2) {
      (*nodes)[t.node].first = t.begin;
      (*nodes)[t.node].count = t.end - t.begin;
      continue;
    }
    int axis = 0;
    (box.max - box.min).maxCoeff(&axis);
    const int32_t mid = t.begin + (t.end - t.begin) / 2;
    std::nth_element(items->begin() + t.begin, items->begin() + mid, items->begin() + t.end,
                     [axis](const Item& a, const Item& b) {
                       return a.bounds.center()[axis] < b.bounds.center()[axis];
                     });
    const int32_t left = static_cast<int32_t>(nodes->size());
    (*nodes)[t.node].first = left;
    (*nodes)[t.node].count = 0;
    nodes->resize(left + 2);
    stack.push_back({left, t.begin, mid});
    stack.push_back({left + 1, mid, t.end});
  }
}

void SceneImpl::BuildStaticSelfPhase() {
  part_static_.clear();
  static_boxes_.clear();
  static_broad_.clear();
  static_pair_of_.clear();
  movers_with_static_.clear();
  listed_pairs_.clear();
  // A part is static when no active joint (nor a mimic of one) lies between its link and the root.
  const RobotModel& robot = *robot_;
  const auto n = static_cast<int32_t>(robot_parts_.size());
  part_static_.assign(robot_parts_.size(), 0);
  for (int32_t i = 0; i < n; ++i) part_static_[i] = !robot.LinkMoves(robot_parts_[i].link);
  const auto moves = [&](int32_t i) { return !part_static_[i]; };
  // The static parts' boxes as PoseParts makes them (any configuration: they do not depend on it), with no
  // clearance, grown a little above the rounding of other ways of computing them (the lane pass's).
  SceneCacheData pose;
  if (!PoseParts(robot.DefaultConfiguration(), &pose, 0.0).ok()) return;
  for (int32_t i = 0; i < n; ++i) {
    if (moves(i)) continue;
    Aabb b = pose.part_bounds[i];
    const double slack = 1e-9 * (1.0 + std::max(b.min.cwiseAbs().maxCoeff(), b.max.cwiseAbs().maxCoeff()));
    b.min.array() -= slack;
    b.max.array() += slack;
    static_boxes_.push_back({i, b});
  }
  int64_t through_tree = 0;
  std::vector<uint8_t> mover(robot_parts_.size(), 0);
  for (const SelfPair& sp : self_pairs_) {
    if (moves(sp.a) == moves(sp.b)) continue;
    ++through_tree;
    mover[moves(sp.a) ? sp.a : sp.b] = 1;
  }
  // A tree pays when it replaces several box tests per moving part and state (a robot whose base link
  // alone is static keeps its plain loop).
  const auto movers = static_cast<int64_t>(std::count(mover.begin(), mover.end(), 1));
  // Its table (a row per moving part with static partners, a column per static part) is kept when dense
  // enough to cost no more memory than the pairs themselves.
  const auto ns = static_cast<int64_t>(static_boxes_.size());
  if (through_tree < 4 * std::max<int64_t>(movers, 1) || movers * ns > 8 * through_tree) {
    static_boxes_.clear();
    return;
  }
  BuildBoxTree(&static_boxes_, &static_broad_);
  std::vector<int32_t> slot(robot_parts_.size(), -1);
  for (int64_t k = 0; k < ns; ++k) slot[static_boxes_[k].part] = static_cast<int32_t>(k);
  std::vector<int32_t> row(robot_parts_.size(), -1);
  for (int32_t i = 0; i < n; ++i) {
    if (!mover[i]) continue;
    row[i] = static_cast<int32_t>(movers_with_static_.size());
    movers_with_static_.push_back(i);
  }
  static_pair_of_.assign(static_cast<size_t>(movers * ns), -1);
  for (int32_t s = 0; s < static_cast<int32_t>(self_pairs_.size()); ++s) {
    const SelfPair& sp = self_pairs_[s];
    if (moves(sp.a) == moves(sp.b)) {
      listed_pairs_.push_back(s);
      continue;
    }
    const int32_t m = moves(sp.a) ? sp.a : sp.b;
    const int32_t t = moves(sp.a) ? sp.b : sp.a;
    static_pair_of_[static_cast<size_t>(row[m] * ns + slot[t])] = s;
  }
}

// The clearances (m) geometries ga (on link la, at X_LGa) and gb keep, and those of their convex
// stand-ins, over a fixed sample of configurations of the joints `levers` name (the others at their
// defaults), each capped at `cap` (nothing beyond it is resolved).
struct SelfClearanceSample {
  std::vector<double> apart;  // exact distances of the samples where the geometries are apart
  std::vector<double> hulls;  // the stand-ins' distances at every sample
};
static SelfClearanceSample SampleSelfClearance(const RobotModel& robot, LinkIndex la, const Geometry& ga,
                                               const RigidTransform& X_LGa, LinkIndex lb, const Geometry& gb,
                                               const RigidTransform& X_LGb,
                                               const std::vector<MotionLever>& levers, double cap) {
  constexpr int kSamples = 48;
  std::vector<double> q = robot.DefaultConfiguration();
  std::vector<RigidTransform> X_WL(robot.links().size());
  SelfClearanceSample sample;
  DistanceRequest request;
  request.rel_err = 0.05;
  request.max_distance = cap;
  for (int i = 0; i < kSamples; ++i) {
    // Stratified in the first joint, a golden-ratio sequence in the second: deterministic and spread.
    const double u[2] = {(i + 0.5) / kSamples, std::fmod(0.5 + i * 0.6180339887498949, 1.0)};
    for (size_t d = 0; d < levers.size(); ++d) {
      const Joint& joint = robot.joint(levers[d].joint);
      q[static_cast<size_t>(joint.active_index)] = joint.lower + u[d] * (joint.upper - joint.lower);
    }
    if (!robot.ForwardKinematics(q, std::span<RigidTransform>(X_WL), RigidTransform()).ok()) continue;
    const RigidTransform X_a = X_WL[la] * X_LGa;
    const RigidTransform X_b = X_WL[lb] * X_LGb;
    sample.hulls.push_back(std::min(cap, HullLowerBound(ga, X_a, gb, X_b, cap, nullptr, nullptr)));
    const Result<DistanceResult> r = GeometryDistance(ga, X_a, gb, X_b, request);
    if (r.ok() && !r.value().intersecting) sample.apart.push_back(std::min(cap, r.value().lower_bound));
  }
  return sample;
}

// A self-clearance map for link parts a and b (below their common ancestor `ancestor`), or null when
// more than two joints, a prismatic, mimic or unlimited joint move them relative to each other, or
// they have no convex stand-ins (WithHulls).
std::unique_ptr<internal::SelfClearanceMap> SceneImpl::MakeSelfClearanceMap(const RobotModel& robot, const RobotPart& a,
                                                                            const RobotPart& b, int32_t ancestor) {
  const std::vector<double> q = robot.DefaultConfiguration();
  std::vector<MotionLever> levers;
  MotionLevers(robot, a.link, ancestor, q, q, 0.0, &levers);
  const size_t levers_of_a = levers.size();
  MotionLevers(robot, b.link, ancestor, q, q, 0.0, &levers);
  if (levers.empty() || levers.size() > 2) return nullptr;
  const bool stand_ins = WithHulls(a.geometry, RigidTransform(), b.geometry, RigidTransform(),
                                   [](const auto&, const RigidTransform&, const auto&, const RigidTransform&) {});
  if (!stand_ins) return nullptr;
  for (const MotionLever& lever : levers) {
    const Joint& joint = robot.joint(lever.joint);
    if (joint.type != JointType::kRevolute || !joint.is_active() || !std::isfinite(joint.lower) ||
        !std::isfinite(joint.upper) || !(joint.upper > joint.lower)) {
      return nullptr;
    }
  }
  static std::atomic<uint64_t> next_serial{1};
  auto map = std::make_unique<internal::SelfClearanceMap>();
  map->serial = next_serial.fetch_add(1, std::memory_order_relaxed);
  map->dims = static_cast<int32_t>(levers.size());
  // The loss this pair can afford: a share of the clearance it typically keeps (a low percentile of the
  // sampled distances where the pair is apart; the largest loss when it never is).
  const double cap = kSelfClearanceLoss / kSelfClearanceLossShare;
  SelfClearanceSample sample =
      SampleSelfClearance(robot, a.link, a.geometry, a.X_LG, b.link, b.geometry, b.X_LG, levers, cap);
  double typical = cap;
  if (!sample.apart.empty()) {
    const size_t k = sample.apart.size() / 4;
    std::nth_element(sample.apart.begin(), sample.apart.begin() + static_cast<std::ptrdiff_t>(k), sample.apart.end());
    typical = sample.apart[k];
  }
  const double target_loss = std::clamp(kSelfClearanceLossShare * typical, kSelfClearanceMinLoss, kSelfClearanceLoss);
  std::array<double, 2> radius{};
  for (int32_t d = 0; d < map->dims; ++d) {
    const Joint& joint = robot.joint(levers[d].joint);
    map->active[d] = joint.active_index;
    map->joint[d] = levers[d].joint;
    map->side[d] = static_cast<size_t>(d) < levers_of_a ? 0 : 1;
    map->lower[d] = joint.lower;
    // How far either part's points can be from the joint's axis, for every configuration in limits.
    radius[d] = LeverRadius(robot, a.link, levers[d].joint) + LeverRadius(robot, b.link, levers[d].joint);
    // Half a step moves the pair by at most step / 2 * radius: each joint takes an equal share of the loss.
    const double range = joint.upper - joint.lower;
    const double step = radius[d] > 0.0 ? 2.0 * target_loss / map->dims / radius[d] : range;
    map->count[d] = static_cast<int32_t>(std::min(1e6, std::ceil(range / step))) + 1;
  }
  // Over the size limit: every dimension coarser by the same factor (the loss grows by it).
  if (map->num_cells() > kSelfClearanceMaxCells) {
    const double f = std::pow(static_cast<double>(map->num_cells()) / static_cast<double>(kSelfClearanceMaxCells),
                              1.0 / map->dims);
    for (int32_t d = 0; d < map->dims; ++d) {
      map->count[d] = std::max(2, static_cast<int32_t>(std::floor((map->count[d] - 1) / f)) + 1);
    }
  }
  while (map->num_cells() > kSelfClearanceMaxCells) {
    const int32_t d = map->dims == 2 && map->count[1] > map->count[0] ? 1 : 0;
    map->count[d] = (map->count[d] + 2) / 2;
  }
  map->loss = 0.0;
  for (int32_t d = 0; d < map->dims; ++d) {
    const Joint& joint = robot.joint(levers[d].joint);
    map->step[d] = (joint.upper - joint.lower) / (map->count[d] - 1);
    map->loss += 0.5 * map->step[d] * radius[d];
    map->radius[d] = radius[d];
  }
  // Rounding in the cell search may pick a grid point a hair more than half a step away.
  map->loss *= 1.0 + 1e-9;
  // Stand-ins that settle fewer than one sampled configuration in ten (a flange inside its wrist's
  // hull) are not worth a first GJK per cell: their cells go to the geometries directly.
  const double settles = map->SettledBy();
  map->hulls_settle = 10 * std::count_if(sample.hulls.begin(), sample.hulls.end(),
                                         [&](double d) { return d >= settles; }) >=
                      static_cast<std::ptrdiff_t>(sample.hulls.size());
  const int64_t n = map->num_cells();
  map->cells = std::make_unique<std::atomic<float>[]>(static_cast<size_t>(n));
  map->grid = std::make_unique<std::atomic<float>[]>(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) {
    map->cells[c].store(std::numeric_limits<float>::quiet_NaN(), std::memory_order_relaxed);
    map->grid[c].store(0.0f, std::memory_order_relaxed);
  }
  if (a.geometry.is_mesh() && b.geometry.is_mesh()) {
    map->witness = std::make_unique<std::atomic<uint64_t>[]>(static_cast<size_t>(n));
    for (int64_t c = 0; c < n; ++c)
      map->witness[c].store(internal::SelfClearanceMap::kNoWitness, std::memory_order_relaxed);
  }
  return map;
}

SceneDescription SceneImpl::Description() const {
  SceneDescription d;
  d.robot = robot_;
  d.X_WB = X_WB_;
  d.objects = objects_;
  d.attached = attached_;
  d.allowed_pairs = allowed_pairs_;
  d.default_padding = default_padding_;
  d.padding = padding_;
  d.self_clearance_fill = self_clearance_fill_;
  d.self_clearance_maps = self_clearance_maps_;
  return d;
}

Result<std::shared_ptr<const Scene>> SceneImpl::Update(const WorldUpdate& update) const {
  SceneDescription d = Description();
  std::unordered_set<std::string> removed;
  for (const std::string& id : update.remove) {
    auto it = std::find_if(d.objects.begin(), d.objects.end(), [&](const WorldObject& o) { return o.id == id; });
    if (it == d.objects.end()) return NotFound("world update: cannot remove '" + id + "': no such object");
    d.objects.erase(it);
    removed.insert(id);
  }
  for (const WorldObject& obj : update.replace) {
    auto it = std::find_if(d.objects.begin(), d.objects.end(), [&](const WorldObject& o) { return o.id == obj.id; });
    if (it == d.objects.end()) return NotFound("world update: cannot move '" + obj.id + "': no such object");
    *it = obj;
  }
  for (const WorldObject& obj : update.add) {
    for (const WorldObject& o : d.objects) {
      if (o.id == obj.id) return InvalidArgument("world update: cannot add '" + obj.id + "': the id exists");
    }
    d.objects.push_back(obj);
  }
  std::erase_if(d.allowed_pairs,
                [&](const auto& p) { return removed.contains(p.first) || removed.contains(p.second); });
  Result<std::shared_ptr<SceneImpl>> scene = SceneImpl::Make(std::move(d));
  if (!scene.ok()) return scene.error();
  scene.value()->version_ = version_ + 1;
  return std::shared_ptr<const Scene>(std::move(scene).value());
}

}  // namespace proximity::core
