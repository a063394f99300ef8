/// @file
/// Building a scene: validating its description, placing robot and world parts, the
/// broad phase over the world, self-clearance maps, versions by world update, and names of contacts.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "proximity/core/scene/scene.h"
#include "proximity/core/bvh/mesh_query.h"
#include "robot/self_clearance.h"
#include "scene/scene_internal.h"

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
  Result<std::shared_ptr<Scene>> scene = Make(std::move(d));
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
  return InvalidArgument(what + " reaches " + FormatNumber(reach) + " m from the origin, beyond the accepted extent of " +
                         FormatNumber(kWorldExtent) + " m");
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

Status ValidateParts(const std::string& owner, std::span<const Geometry* const> geometries,
                     std::span<const RigidTransform* const> poses) {
  for (size_t p = 0; p < geometries.size(); ++p) {
    const std::string where = owner + " part " + std::to_string(p);
    if (Status s = ValidatePose(*poses[p], (where + " pose").c_str()); !s.ok()) return s.error();
    if (!geometries[p]->is_mesh()) {
      if (Status s = ValidateShape(geometries[p]->shape); !s.ok()) {
        return InvalidArgument(where + ": " + s.error().message);
      }
      if (Status s = CheckPositiveSize(geometries[p]->shape, where); !s.ok()) return s;
    }
    if (Status s = CheckWithinExtent(GeometryBox(*geometries[p]), *poses[p], where); !s.ok()) return s;
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

}  // namespace

Result<std::shared_ptr<Scene>> Scene::Make(SceneDescription d) {
  if (d.robot == nullptr) return InvalidArgument("scene: no robot");
  if (Status s = ValidatePose(d.X_WB, "robot base pose X_WB"); !s.ok()) return s.error();
  if (d.X_WB.p.cwiseAbs().maxCoeff() > kWorldExtent) {
    return InvalidArgument("scene: robot base pose X_WB lies beyond the accepted extent of " +
                           FormatNumber(kWorldExtent) + " m");
  }
  if (Status s = ValidateRobotExtent(*d.robot); !s.ok()) return s.error();
  auto scene = std::shared_ptr<Scene>(new Scene());
  static std::atomic<uint64_t> serials{0};
  scene->serial_ = ++serials;
  scene->robot_ = d.robot;
  const RobotModel& robot = *d.robot;
  // Every name a pair can use: links, world objects and attached objects share one namespace.
  std::unordered_map<std::string, int32_t> object_by_id, attached_by_id;
  for (size_t o = 0; o < d.objects.size(); ++o) {
    const WorldObject& obj = d.objects[o];
    if (obj.id.empty()) return InvalidArgument("scene: object " + std::to_string(o) + " has an empty id");
    if (!object_by_id.emplace(obj.id, static_cast<int32_t>(o)).second) {
      return InvalidArgument("scene: object id '" + obj.id + "' appears twice");
    }
    if (robot.FindLink(obj.id).ok()) {
      return InvalidArgument("scene: object id '" + obj.id + "' is also the name of a robot link");
    }
    std::vector<const Geometry*> g;
    std::vector<const RigidTransform*> X;
    for (const ObjectPart& part : obj.parts) {
      g.push_back(&part.geometry);
      X.push_back(&part.X_WG);
    }
    if (Status s = ValidateParts("scene: object '" + obj.id + "'", g, X); !s.ok()) return s.error();
  }
  for (size_t a = 0; a < d.attached.size(); ++a) {
    const AttachedObject& att = d.attached[a];
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
    std::vector<const Geometry*> g;
    std::vector<const RigidTransform*> X;
    for (const AttachedPart& part : att.parts) {
      g.push_back(&part.geometry);
      X.push_back(&part.X_LG);
    }
    if (Status s = ValidateParts("scene: attached object '" + att.id + "'", g, X); !s.ok()) return s.error();
  }

  // Entities: links, then attached objects.
  const size_t nl = robot.links().size(), na = d.attached.size(), no = d.objects.size(), ne = nl + na;
  auto entity = [&](const std::string& name) -> int32_t {
    if (auto l = robot.FindLink(name); l.ok()) return l.value();
    if (auto it = attached_by_id.find(name); it != attached_by_id.end()) return static_cast<int32_t>(nl) + it->second;
    return -1;
  };

  if (!(std::isfinite(d.default_padding) && d.default_padding >= 0.0 && d.default_padding <= kWorldExtent)) {
    return InvalidArgument("scene: default padding must be finite, >= 0 and <= " + FormatNumber(kWorldExtent) +
                           " m, got " + FormatNumber(d.default_padding));
  }
  std::vector<double> padding(ne, d.default_padding);
  for (const auto& [name, value] : d.padding) {
    const int32_t e = entity(name);
    if (e < 0) return NotFound("scene: padding names '" + name + "', which is neither a link nor an attached object");
    if (!(std::isfinite(value) && value >= 0.0 && value <= kWorldExtent)) {
      return InvalidArgument("scene: padding of '" + name + "' must be finite, >= 0 and <= " +
                             FormatNumber(kWorldExtent) + " m, got " + FormatNumber(value));
    }
    padding[e] = value;
  }

  scene->num_entities_ = ne;
  scene->entity_allowed_.assign(ne * ne, 0);
  auto allow = [&](size_t a, size_t b) {
    scene->entity_allowed_[a * ne + b] = 1;
    scene->entity_allowed_[b * ne + a] = 1;
  };
  for (size_t a = 0; a < nl; ++a)
    for (size_t b = 0; b < nl; ++b)
      if (robot.AllowedCollision(static_cast<int32_t>(a), static_cast<int32_t>(b))) allow(a, b);
  for (size_t a = 0; a < na; ++a) {
    allow(nl + a, nl + a);
    allow(nl + a, static_cast<size_t>(robot.FindLink(d.attached[a].link).value()));
    for (const std::string& t : d.attached[a].touch_links) allow(nl + a, static_cast<size_t>(entity(t)));
  }
  scene->entity_object_allowed_.assign(ne * no, 0);
  std::set<std::string> unknown_names;  // sorted: the warning reads the same every time
  for (const auto& [first, second] : d.allowed_pairs) {
    const int32_t ea = entity(first), eb = entity(second);
    const auto oa = object_by_id.find(first), ob = object_by_id.find(second);
    if (ea >= 0 && eb >= 0) {
      allow(ea, eb);
    } else if (ea >= 0 && ob != object_by_id.end()) {
      scene->entity_object_allowed_[ea * no + ob->second] = 1;
    } else if (eb >= 0 && oa != object_by_id.end()) {
      scene->entity_object_allowed_[eb * no + oa->second] = 1;
    } else if (oa != object_by_id.end() && ob != object_by_id.end()) {
      // Two world objects: never checked against each other anyway.
    } else {
      // A name that is nothing here (MoveIt's matrices often list objects of other scenes): the entry
      // allows nothing that exists, so it is kept and ignored, with one warning for all such names.
      for (const std::string* name : {&first, &second}) {
        if (entity(*name) < 0 && !object_by_id.contains(*name)) unknown_names.insert(*name);
      }
    }
  }
  if (!unknown_names.empty()) {
    std::string list;
    for (const std::string& name : unknown_names) list += (list.empty() ? "'" : ", '") + name + "'";
    scene->warnings_.push_back("allowed pairs name " + list +
                               ", neither robot links, attached objects nor world objects: those entries are ignored");
  }

  auto make_part = [](int32_t link, int32_t entity_index, int32_t attached, Geometry geometry,
                      const RigidTransform& X_LG) {
    RobotPart rp;
    rp.link = link;
    rp.entity = entity_index;
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
  };
  for (int32_t l = 0; l < static_cast<int32_t>(nl); ++l) {
    const auto& link_geometries = robot.link(l).geometries;
    for (size_t gi = 0; gi < link_geometries.size(); ++gi) {
      const LinkGeometry& g = link_geometries[gi];
      Geometry geometry;
      switch (g.type) {
        case ShapeType::kMesh:
          geometry.mesh = g.mesh;
          geometry.hull = g.hull;
          geometry.hull_is_surface = g.hull_is_surface;
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
      scene->robot_parts_.push_back(make_part(l, l, -1, std::move(geometry), g.X_LG));
      scene->robot_parts_.back().geometry_index = static_cast<int32_t>(gi);
    }
  }
  for (int32_t a = 0; a < static_cast<int32_t>(na); ++a) {
    const int32_t link = robot.FindLink(d.attached[a].link).value();
    for (const AttachedPart& part : d.attached[a].parts) {
      scene->robot_parts_.push_back(make_part(link, static_cast<int32_t>(nl) + a, a, part.geometry, part.X_LG));
    }
  }
  for (RobotPart& rp : scene->robot_parts_) rp.padding = padding[rp.entity];
  scene->link_padding_.assign(padding.begin(), padding.begin() + static_cast<std::ptrdiff_t>(nl));

  const auto& parts = scene->robot_parts_;
  for (int32_t i = 0; i < static_cast<int32_t>(parts.size()); ++i)
    for (int32_t j = i + 1; j < static_cast<int32_t>(parts.size()); ++j)
      if (parts[i].entity != parts[j].entity && !scene->AllowedEntities(parts[i].entity, parts[j].entity))
        scene->self_pairs_.push_back({i, j, robot.CommonAncestor(parts[i].link, parts[j].link)});
  for (SelfPair& sp : scene->self_pairs_) {
    const RobotPart& a = parts[sp.a];
    const RobotPart& b = parts[sp.b];
    if (a.attached >= 0 || b.attached >= 0) continue;
    sp.clearance_map = robot.self_clearance_memo().Get({a.link, a.geometry_index, b.link, b.geometry_index},
                                                      [&] { return MakeSelfClearanceMap(robot, a, b, sp.ancestor); });
  }

  scene->X_WB_ = d.X_WB;
  scene->objects_ = std::move(d.objects);
  scene->attached_ = std::move(d.attached);
  scene->allowed_pairs_ = std::move(d.allowed_pairs);
  scene->default_padding_ = d.default_padding;
  scene->padding_ = std::move(d.padding);
  scene->BuildBroadPhase();
  return scene;
}

// A median-split AABB tree over the world parts, so that each robot geometry meets only the parts
// near it: cost follows what is near, not how many objects there are.
void Scene::BuildBroadPhase() {
  for (int32_t o = 0; o < static_cast<int32_t>(objects_.size()); ++o)
    for (int32_t p = 0; p < static_cast<int32_t>(objects_[o].parts.size()); ++p) {
      const ObjectPart& part = objects_[o].parts[p];
      const Obb box_G = GeometryBox(part.geometry);
      world_parts_.push_back({o, p, WorldBounds(box_G, part.X_WG),
                              Obb{part.X_WG.R * box_G.R_MB, part.X_WG * box_G.center, box_G.half_extents}});
    }
  broad_.clear();
  if (world_parts_.empty()) return;
  struct Task {
    int32_t node, begin, end;
  };
  broad_.push_back({});
  std::vector<Task> stack{{0, 0, static_cast<int32_t>(world_parts_.size())}};
  while (!stack.empty()) {
    const Task t = stack.back();
    stack.pop_back();
    Aabb box;
    for (int32_t k = t.begin; k < t.end; ++k) box.Extend(world_parts_[k].bounds);
    broad_[t.node].bounds = box;
    if (t.end - t.begin <= 2) {
      broad_[t.node].first = t.begin;
      broad_[t.node].count = t.end - t.begin;
      continue;
    }
    int axis = 0;
    (box.max - box.min).maxCoeff(&axis);
    const int32_t mid = t.begin + (t.end - t.begin) / 2;
    std::nth_element(world_parts_.begin() + t.begin, world_parts_.begin() + mid, world_parts_.begin() + t.end,
                     [axis](const WorldPart& a, const WorldPart& b) {
                       return a.bounds.center()[axis] < b.bounds.center()[axis];
                     });
    const int32_t left = static_cast<int32_t>(broad_.size());
    broad_[t.node].first = left;
    broad_[t.node].count = 0;
    broad_.resize(left + 2);
    stack.push_back({left, t.begin, mid});
    stack.push_back({left + 1, mid, t.end});
  }
}

// A self-clearance map for link parts a and b (below their common ancestor `ancestor`), or null when
// more than two joints, a prismatic, mimic or unlimited joint move them relative to each other, or
// they have no convex stand-ins (WithHulls).
std::unique_ptr<internal::SelfClearanceMap> Scene::MakeSelfClearanceMap(const RobotModel& robot, const RobotPart& a,
                                                                        const RobotPart& b, int32_t ancestor) {
  const std::vector<double> q = robot.DefaultConfiguration();
  std::vector<RobotModel::MotionLever> levers;
  robot.MotionLevers(a.link, ancestor, q, q, 0.0, &levers);
  robot.MotionLevers(b.link, ancestor, q, q, 0.0, &levers);
  if (levers.empty() || levers.size() > 2) return nullptr;
  const bool stand_ins = WithHulls(a.geometry, RigidTransform(), b.geometry, RigidTransform(),
                                   [](const auto&, const RigidTransform&, const auto&, const RigidTransform&) {});
  if (!stand_ins) return nullptr;
  static std::atomic<uint64_t> next_serial{1};
  auto map = std::make_unique<internal::SelfClearanceMap>();
  map->serial = next_serial.fetch_add(1, std::memory_order_relaxed);
  map->dims = static_cast<int32_t>(levers.size());
  std::array<double, 2> radius{};
  for (int32_t d = 0; d < map->dims; ++d) {
    const Joint& joint = robot.joint(levers[d].joint);
    if (joint.type != JointType::kRevolute || !joint.is_active() || !std::isfinite(joint.lower) ||
        !std::isfinite(joint.upper) || !(joint.upper > joint.lower)) {
      return nullptr;
    }
    map->active[d] = joint.active_index;
    map->lower[d] = joint.lower;
    // How far either part's points can be from the joint's axis, for every configuration in limits.
    radius[d] = robot.LeverRadius(a.link, levers[d].joint) + robot.LeverRadius(b.link, levers[d].joint);
    // Half a step moves the pair by at most step / 2 * radius: each joint takes an equal share of the loss.
    const double range = joint.upper - joint.lower;
    const double step = radius[d] > 0.0 ? 2.0 * kSelfClearanceLoss / map->dims / radius[d] : range;
    map->count[d] = static_cast<int32_t>(std::min(1e6, std::ceil(range / step))) + 1;
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
  }
  // Rounding in the cell search may pick a grid point a hair more than half a step away.
  map->loss *= 1.0 + 1e-9;
  const int64_t n = map->num_cells();
  map->cells = std::make_unique<std::atomic<float>[]>(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) map->cells[c].store(std::numeric_limits<float>::quiet_NaN(), std::memory_order_relaxed);
  return map;
}

SceneDescription Scene::Description() const {
  SceneDescription d;
  d.robot = robot_;
  d.X_WB = X_WB_;
  d.objects = objects_;
  d.attached = attached_;
  d.allowed_pairs = allowed_pairs_;
  d.default_padding = default_padding_;
  d.padding = padding_;
  return d;
}

Result<std::shared_ptr<const Scene>> Scene::Update(const WorldUpdate& update) const {
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
  std::erase_if(d.allowed_pairs, [&](const auto& p) { return removed.contains(p.first) || removed.contains(p.second); });
  Result<std::shared_ptr<Scene>> scene = Make(std::move(d));
  if (!scene.ok()) return scene.error();
  scene.value()->version_ = version_ + 1;
  return std::shared_ptr<const Scene>(std::move(scene).value());
}

}  // namespace proximity::core
