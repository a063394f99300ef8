#include "proximity/core/scene.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <unordered_map>

#include "proximity/core/mesh_query.h"

namespace proximity::core {
namespace {

bool Overlap(const Aabb& a, const Aabb& b) {
  return (a.min.array() <= b.max.array()).all() && (b.min.array() <= a.max.array()).all();
}

Obb GeometryBox(const Geometry& g) { return g.is_mesh() ? g.mesh->obb(0) : ShapeBoundingObb(g.shape); }

}  // namespace

Aabb WorldBounds(const Obb& box_G, const RigidTransform& X_WG) {
  const Mat3 R = X_WG.R * box_G.R_MB;
  const Vec3 c = X_WG * box_G.center;
  const Vec3 half = R.cwiseAbs() * box_G.half_extents;
  Aabb out;
  out.min = c - half;
  out.max = c + half;
  return out;
}

Status CollideGeometry(const Geometry& a, const RigidTransform& X_WA, const Geometry& b, const RigidTransform& X_WB,
                       bool* colliding, QueryStats* stats) {
  CollisionResult r;
  Status s;
  if (a.is_mesh() && b.is_mesh()) {
    s = Collide(*a.mesh, X_WA, *b.mesh, X_WB, {}, &r);
  } else if (a.is_mesh()) {
    s = CollideMeshShape(*a.mesh, X_WA, b.shape, X_WB, {}, &r);
  } else if (b.is_mesh()) {
    s = CollideMeshShape(*b.mesh, X_WB, a.shape, X_WA, {}, &r);
  } else {
    s = CollideShapes(a.shape, X_WA, b.shape, X_WB, {}, &r);
  }
  *colliding = r.colliding;
  if (stats != nullptr) *stats += r.stats;
  return s;
}

std::string StateContact::Describe(const Scene& scene) const {
  if (link < 0) return "none";
  const std::string a = scene.robot().link(link).name;
  if (self) return a + " x " + scene.robot().link(other_link).name;
  return a + " x object '" + scene.objects()[object].id + "'";
}

Result<std::shared_ptr<const Scene>> Scene::Build(SceneDescription d) {
  if (d.robot == nullptr) return InvalidArgument("scene: no robot");
  if (Status s = ValidatePose(d.X_WB, "robot base pose X_WB"); !s.ok()) return s.error();
  auto scene = std::shared_ptr<Scene>(new Scene());
  scene->robot_ = d.robot;
  const RobotModel& robot = *d.robot;
  std::unordered_map<std::string, int32_t> object_by_id;
  for (size_t o = 0; o < d.objects.size(); ++o) {
    const WorldObject& obj = d.objects[o];
    if (obj.id.empty()) return InvalidArgument("scene: object " + std::to_string(o) + " has an empty id");
    if (!object_by_id.emplace(obj.id, static_cast<int32_t>(o)).second) {
      return InvalidArgument("scene: object id '" + obj.id + "' appears twice");
    }
    if (robot.FindLink(obj.id).ok()) {
      return InvalidArgument("scene: object id '" + obj.id + "' is also the name of a robot link");
    }
    for (size_t p = 0; p < obj.parts.size(); ++p) {
      const ObjectPart& part = obj.parts[p];
      const std::string where = "scene: object '" + obj.id + "' part " + std::to_string(p);
      if (Status s = ValidatePose(part.X_WG, (where + " pose").c_str()); !s.ok()) return s.error();
      if (!part.geometry.is_mesh()) {
        if (Status s = ValidateShape(part.geometry.shape); !s.ok()) {
          return InvalidArgument(where + ": " + s.error().message);
        }
      }
    }
  }

  const size_t nl = robot.links().size(), no = d.objects.size();
  scene->link_link_allowed_.assign(nl * nl, 0);
  for (size_t a = 0; a < nl; ++a)
    for (size_t b = 0; b < nl; ++b)
      scene->link_link_allowed_[a * nl + b] = robot.AllowedCollision(static_cast<int32_t>(a), static_cast<int32_t>(b));
  scene->link_object_allowed_.assign(nl * no, 0);
  for (const auto& [first, second] : d.allowed_pairs) {
    const auto la = robot.FindLink(first), lb = robot.FindLink(second);
    const auto oa = object_by_id.find(first), ob = object_by_id.find(second);
    if (la.ok() && lb.ok()) {
      scene->link_link_allowed_[la.value() * nl + lb.value()] = 1;
      scene->link_link_allowed_[lb.value() * nl + la.value()] = 1;
    } else if (la.ok() && ob != object_by_id.end()) {
      scene->link_object_allowed_[la.value() * no + ob->second] = 1;
    } else if (lb.ok() && oa != object_by_id.end()) {
      scene->link_object_allowed_[lb.value() * no + oa->second] = 1;
    } else if (oa != object_by_id.end() && ob != object_by_id.end()) {
      // Two world objects: never checked against each other anyway.
    } else {
      const std::string& unknown = (!la.ok() && oa == object_by_id.end()) ? first : second;
      return NotFound("scene: allowed pair ('" + first + "', '" + second + "') names '" + unknown +
                      "', which is neither a robot link nor an object");
    }
  }

  for (int32_t l = 0; l < static_cast<int32_t>(nl); ++l) {
    for (const LinkGeometry& g : robot.link(l).geometries) {
      RobotPart rp;
      rp.link = l;
      rp.X_LG = g.X_LG;
      switch (g.type) {
        case ShapeType::kMesh:
          rp.geometry.mesh = g.mesh;
          break;
        case ShapeType::kBox:
          rp.geometry.shape = Box{0.5 * g.box_size};
          break;
        case ShapeType::kCylinder:
          rp.geometry.shape = Cylinder{g.radius, 0.5 * g.length};
          break;
        case ShapeType::kSphere:
          rp.geometry.shape = Sphere{Vec3::Zero(), g.radius};
          break;
      }
      rp.local_box = GeometryBox(rp.geometry);
      scene->robot_parts_.push_back(std::move(rp));
    }
  }
  const auto& parts = scene->robot_parts_;
  for (int32_t i = 0; i < static_cast<int32_t>(parts.size()); ++i)
    for (int32_t j = i + 1; j < static_cast<int32_t>(parts.size()); ++j)
      if (parts[i].link != parts[j].link && !scene->AllowedLinkLink(parts[i].link, parts[j].link))
        scene->self_pairs_.emplace_back(i, j);

  scene->X_WB_ = d.X_WB;
  scene->objects_ = std::move(d.objects);
  scene->BuildBroadPhase();
  return std::shared_ptr<const Scene>(std::move(scene));
}

// A median-split AABB tree over the world parts, so that each robot geometry meets only the parts
// near it: cost follows what is near, not how many objects there are.
void Scene::BuildBroadPhase() {
  for (int32_t o = 0; o < static_cast<int32_t>(objects_.size()); ++o)
    for (int32_t p = 0; p < static_cast<int32_t>(objects_[o].parts.size()); ++p) {
      const ObjectPart& part = objects_[o].parts[p];
      world_parts_.push_back({o, p, WorldBounds(GeometryBox(part.geometry), part.X_WG)});
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

bool Scene::CollideWorld(const RobotPart& rp, const RigidTransform& X_WG, const Aabb& bounds,
                         StateResult* out) const {
  if (broad_.empty()) return false;
  int32_t stack[64];
  int32_t top = 0;
  stack[top++] = 0;
  while (top > 0) {
    const BroadNode& n = broad_[stack[--top]];
    if (!Overlap(n.bounds, bounds)) continue;
    if (n.count == 0) {
      stack[top++] = n.first;
      stack[top++] = n.first + 1;
      continue;
    }
    for (int32_t k = n.first; k < n.first + n.count; ++k) {
      const WorldPart& wp = world_parts_[k];
      if (!Overlap(wp.bounds, bounds) || AllowedLinkObject(rp.link, wp.object)) continue;
      const ObjectPart& part = objects_[wp.object].parts[wp.part];
      bool hit = false;
      ++out->pairs_tested;
      (void)CollideGeometry(rp.geometry, X_WG, part.geometry, part.X_WG, &hit, &out->stats);
      if (hit) {
        out->free = false;
        out->contact = {false, rp.link, -1, wp.object};
        return true;
      }
    }
  }
  return false;
}

Status Scene::CheckState(std::span<const double> q, SceneCache* cache, StateResult* result) const {
  *result = StateResult();
  if (Status s = robot_->CheckConfiguration(q); !s.ok()) return s;
  result->within_limits = robot_->CheckLimits(q).ok();
  cache->X_WL.resize(robot_->links().size());
  if (Status s = robot_->ForwardKinematics(q, std::span<RigidTransform>(cache->X_WL), X_WB_); !s.ok()) return s;
  result->free = true;

  std::vector<RigidTransform>& X_WG = cache->X_WG;
  X_WG.resize(robot_parts_.size());
  cache->part_bounds.resize(robot_parts_.size());
  for (size_t i = 0; i < robot_parts_.size(); ++i) {
    const RobotPart& rp = robot_parts_[i];
    X_WG[i] = cache->X_WL[rp.link] * rp.X_LG;
    cache->part_bounds[i] = WorldBounds(rp.local_box, X_WG[i]);
    if (CollideWorld(rp, X_WG[i], cache->part_bounds[i], result)) return {};
  }
  for (const auto& [i, j] : self_pairs_) {
    if (!Overlap(cache->part_bounds[i], cache->part_bounds[j])) continue;
    bool hit = false;
    ++result->pairs_tested;
    (void)CollideGeometry(robot_parts_[i].geometry, X_WG[i], robot_parts_[j].geometry, X_WG[j], &hit,
                          &result->stats);
    if (hit) {
      result->free = false;
      result->contact = {true, robot_parts_[i].link, robot_parts_[j].link, -1};
      return {};
    }
  }
  return {};
}

}  // namespace proximity::core
