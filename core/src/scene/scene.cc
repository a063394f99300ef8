#include "proximity/core/scene/scene.h"

#include <algorithm>
#include <atomic>
#include <numeric>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "proximity/core/narrowphase/gjk.h"
#include "proximity/core/bvh/mesh_query.h"
#include "bvh/query_internal.h"
#include "robot/self_clearance.h"

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
  auto side = [&](int32_t l, int32_t att) {
    const std::string& name = scene.robot().link(l).name;
    return att < 0 ? name : "attached '" + scene.attached()[att].id + "' (on " + name + ")";
  };
  if (self) return side(link, attached) + " x " + side(other_link, other_attached);
  return side(link, attached) + " x object '" + scene.objects()[object].id + "'";
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
      const std::string& unknown = (ea < 0 && oa == object_by_id.end()) ? first : second;
      return NotFound("scene: allowed pair ('" + first + "', '" + second + "') names '" + unknown +
                      "', which is neither a robot link, an attached object nor a world object");
    }
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

namespace {

// Calls f(ca, X_a, cb, X_b) with the convex stand-ins of a and b when one is a mesh with a hull and the
// other a primitive or a mesh with a hull (the mesh's side always first), and returns true; false when
// there is no such pair (two primitives are tested exactly anyway).
template <class F>
bool WithHulls(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b, F&& f) {
  const bool hull_a = a.is_mesh() && a.hull != nullptr;
  const bool hull_b = b.is_mesh() && b.hull != nullptr;
  if (hull_a && hull_b) {
    f(*a.hull, X_a, *b.hull, X_b);
    return true;
  }
  // Otherwise one side must be a mesh with a hull and the other a primitive.
  const bool mesh_and_primitive = (hull_a && !b.is_mesh()) || (hull_b && !a.is_mesh());
  if (!mesh_and_primitive) return false;
  const ConvexPolytope& hull = hull_a ? *a.hull : *b.hull;
  const RigidTransform& X_hull = hull_a ? X_a : X_b;
  const Geometry& other = hull_a ? b : a;
  const RigidTransform& X_other = hull_a ? X_b : X_a;
  std::visit(
      [&](const auto& shape) {
        if constexpr (std::is_same_v<std::decay_t<decltype(shape)>, std::shared_ptr<const ConvexPolytope>>) {
          f(hull, X_hull, *shape, X_other);
        } else {
          f(hull, X_hull, shape, X_other);
        }
      },
      other.shape);
  return true;
}

// Whether the convex stand-ins of a and b (WithHulls) provably keep more than `padding` apart, which
// proves the geometries do. ISA-GJK stops at the first separating axis; with padding, GJK stops once
// its certified lower bound passes the padding.
bool HullsApart(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b,
                double padding, QueryStats* stats, GjkCache* cache) {
  bool apart = false;
  const bool tested = WithHulls(a, X_a, b, X_b, [&](const auto& ca, const RigidTransform& X_ca, const auto& cb,
                                                    const RigidTransform& X_cb) {
    if (padding <= 0.0) {
      apart = !GjkIntersect(ca, X_ca, cb, X_cb, cache).intersecting;
    } else {
      GjkOptions options;
      options.lower_bound_target = std::nextafter(padding, std::numeric_limits<double>::infinity());
      apart = GjkDistance(ca, X_ca, cb, X_cb, cache, options).lower_bound > padding;
    }
  });
  if (tested && stats != nullptr) ++stats->bv_tests;
  return apart;
}

// Certified lower bound (m) on the distance between the convex stand-ins of a and b (WithHulls), GJK
// stopping once it reaches `target`; -1 when there are none.
double HullLowerBound(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b,
                      double target, QueryStats* stats, GjkCache* cache) {
  double lower = -1.0;
  const bool tested = WithHulls(a, X_a, b, X_b, [&](const auto& ca, const RigidTransform& X_ca, const auto& cb,
                                                    const RigidTransform& X_cb) {
    GjkOptions options;
    options.lower_bound_target = target;
    options.rel_tolerance = 1e-3;  // only the bound matters, and only up to the target
    lower = GjkDistance(ca, X_ca, cb, X_cb, cache, options).lower_bound;
  });
  if (tested && stats != nullptr) ++stats->bv_tests;
  return lower;
}

// The distance (m) the self-clearance maps give up per cell (their grid is made fine enough that the
// pair moves at most this much relative to each other within a cell), and their size limit. A wrist's
// links keep a few centimetres apart; on the MotionBenchMaker problems 1.5 cm still decides 99.6% of
// the look-ups while a plan fills a seventh of the cells 4 mm would need.
constexpr double kSelfClearanceLoss = 0.015;
constexpr int64_t kSelfClearanceMaxCells = int64_t{1} << 18;

// A clearance as CheckState and MotionRequest take it: finite, >= 0 and within the world's extent.
Status CheckClearance(double clearance) {
  if (std::isfinite(clearance) && clearance >= 0.0 && clearance <= kWorldExtent) return {};
  return InvalidArgument("clearance must be finite, >= 0 and <= " + FormatNumber(kWorldExtent) + " m, got " +
                         FormatNumber(clearance));
}

// The number of steps a sampled check of a segment of `length` takes at `resolution`: an error naming
// `field` unless the resolution is finite and > 0 and the steps stay within kMaxMotionSteps. Computed
// in floating point and compared before any conversion, so no resolution can overflow the count.
Result<int64_t> MotionSteps(double length, double resolution, const char* field) {
  if (!(std::isfinite(resolution) && resolution > 0.0)) {
    return InvalidArgument(std::string(field) + " must be finite and > 0, got " + FormatNumber(resolution));
  }
  const double steps = std::ceil(length / resolution);
  if (!(steps <= kMaxMotionSteps)) {
    return InvalidArgument(std::string(field) + " " + FormatNumber(resolution) + " would sample " +
                           FormatNumber(steps) + " states on a segment " + FormatNumber(length) +
                           " long; at most " + FormatNumber(kMaxMotionSteps) + " are allowed per segment");
  }
  return std::max<int64_t>(1, static_cast<int64_t>(steps));
}

double SegmentLength(std::span<const double> q0, std::span<const double> q1) {
  double length2 = 0.0;
  for (size_t i = 0; i < q0.size(); ++i) length2 += (q1[i] - q0[i]) * (q1[i] - q0[i]);
  return std::sqrt(length2);
}

// How often the motion checks ask a request's `stop`: every this many states (a power of two).
constexpr int64_t kStopPollStates = 8;

}  // namespace

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

double Scene::SelfPairClearance(const SelfPair& pair, std::span<const double> q) const {
  const internal::SelfClearanceMap* map = pair.clearance_map;
  if (map == nullptr) return -1.0;
  const int64_t cell = map->Cell(q);
  if (cell < 0) return -1.0;
  const float stored = map->cells[cell].load(std::memory_order_relaxed);
  if (!std::isnan(stored)) return stored;
  // First use: the stand-ins' distance at the grid point (the other joints do not move the pair
  // relative to each other, so their values do not matter), less the loss, rounded down to a float.
  // Scratch per thread; consecutive fills of one map start GJK from the last one's answer (a plan
  // moves through neighbouring cells). Keyed by the map's serial: a map freed and another made at the
  // same address must not inherit a simplex on other shapes.
  struct FillScratch {
    uint64_t map = 0;
    GjkCache gjk;
    std::vector<double> q;
    std::vector<RigidTransform> X_WL;
  };
  thread_local FillScratch scratch;
  if (scratch.map != map->serial) {
    scratch.map = map->serial;
    scratch.gjk = GjkCache();
  }
  double values[2];
  map->GridPoint(cell, values);
  scratch.q = robot_->DefaultConfiguration();
  for (int32_t d = 0; d < map->dims; ++d) scratch.q[static_cast<size_t>(map->active[d])] = values[d];
  if (!robot_->ForwardKinematics(scratch.q, &scratch.X_WL, RigidTransform()).ok()) return -1.0;
  const RobotPart& a = robot_parts_[pair.a];
  const RobotPart& b = robot_parts_[pair.b];
  const double lower =
      HullLowerBound(a.geometry, scratch.X_WL[a.link] * a.X_LG, b.geometry, scratch.X_WL[b.link] * b.X_LG,
                     std::numeric_limits<double>::infinity(), nullptr, &scratch.gjk);
  const double bound = std::max(0.0, lower - map->loss);
  float value = static_cast<float>(bound);
  if (static_cast<double>(value) > bound) value = std::nextafter(value, 0.0f);
  map->cells[cell].store(value, std::memory_order_relaxed);
  return value;
}

Result<double> Scene::SelfClearanceBound(std::string_view link_a, std::string_view link_b,
                                         std::span<const double> q) const {
  if (Status s = robot_->CheckConfiguration(q); !s.ok()) return s.error();
  const Result<LinkIndex> a = robot_->FindLink(link_a);
  if (!a.ok()) return a.error();
  const Result<LinkIndex> b = robot_->FindLink(link_b);
  if (!b.ok()) return b.error();
  for (const SelfPair& sp : self_pairs_) {
    const RobotPart& pa = robot_parts_[sp.a];
    const RobotPart& pb = robot_parts_[sp.b];
    if (pa.geometry_index != 0 || pb.geometry_index != 0) continue;
    if ((pa.link == a.value() && pb.link == b.value()) || (pa.link == b.value() && pb.link == a.value())) {
      return SelfPairClearance(sp, q);
    }
  }
  return -1.0;
}

bool Scene::PairCollides(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b,
                         double padding, QueryStats* stats, GjkCache* hull_cache) {
  if (HullsApart(a, X_a, b, X_b, std::max(0.0, padding), stats, hull_cache)) return false;
  if (padding <= 0.0) {
    // Poses and shapes of a built scene are valid: the unvalidated entry points.
    CollisionResult r;
    if (a.is_mesh() && b.is_mesh()) {
      internal::CollideTrusted(*a.mesh, X_a, *b.mesh, X_b, {}, &r);
    } else if (a.is_mesh()) {
      internal::CollideMeshShapeTrusted(*a.mesh, X_a, b.shape, X_b, {}, &r);
    } else if (b.is_mesh()) {
      internal::CollideMeshShapeTrusted(*b.mesh, X_b, a.shape, X_a, {}, &r);
    } else {
      r.colliding = internal::ShapesIntersectTrusted(a.shape, X_a, b.shape, X_b);
      r.stats.triangle_tests = 1;
    }
    if (stats != nullptr) *stats += r.stats;
    return r.colliding;
  }
  // Padded: an exact distance walk that stops as soon as it proves the distance is at least the
  // padding, or finds points closer than it. Its interval is exact to 1e-12 relative otherwise.
  DistanceRequest request;
  request.max_distance = padding;
  request.stop_below = padding;
  DistanceResult r;
  (void)GeometryDistance(a, X_a, b, X_b, request, &r);
  if (stats != nullptr) *stats += r.stats;
  return r.intersecting || r.lower_bound < padding || r.upper_bound <= padding;
}

// Whether two boxes posed in the world overlap (the 15-axis test): the first test of every hierarchy
// walk, done here without setting a walk up, so that pairs near each other but apart cost one test.
static bool WorldBoxesOverlap(const Obb& a, const Obb& b) {
  const Mat3 R_ab = a.R_MB.transpose() * b.R_MB;
  const Vec3 T = a.R_MB.transpose() * (b.center - a.center);
  return ObbsOverlap(a.half_extents, b.half_extents, BoxPairFrame{R_ab, T});
}

bool Scene::CollideWorld(int32_t i, double clearance, SceneCache* cache, StateResult* out) const {
  if (broad_.empty()) return false;
  const RobotPart& rp = robot_parts_[i];
  const RigidTransform& X_WG = cache->X_WG[i];
  const Aabb& bounds = cache->part_bounds[i];
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
      if (!Overlap(wp.bounds, bounds) || AllowedEntityObject(rp.entity, wp.object)) continue;
      const ObjectPart& part = objects_[wp.object].parts[wp.part];
      ++out->pairs_tested;
      ++out->stats.bv_tests;
      if (!WorldBoxesOverlap(cache->part_boxes[i], wp.box)) continue;
      if (PairCollides(rp.geometry, X_WG, part.geometry, part.X_WG, rp.padding + clearance, &out->stats,
                       HullCache(cache, WorldPairCache(i, k)))) {
        out->free = false;
        out->contact = WorldContact(i, wp.object);
        return true;
      }
    }
  }
  return false;
}

GjkCache* Scene::HullCache(SceneCache* cache, size_t index) const {
  // At most this many pairs keep a warm start (about 26 MB of them); larger scenes start GJK cold.
  constexpr size_t kMaxHullCaches = 1 << 16;
  const size_t n = SelfPairCache(self_pairs_.size());
  if (n > kMaxHullCaches) return nullptr;
  if (cache->hull_caches.size() < n) cache->hull_caches.resize(n);
  SceneCache::HullWarmStart& entry = cache->hull_caches[index];
  if (entry.scene != serial_) {
    entry.gjk = GjkCache();
    entry.scene = serial_;
  }
  return &entry.gjk;
}

Status Scene::PoseParts(std::span<const double> q, SceneCache* cache, double margin) const {
  cache->X_WL.resize(robot_->links().size());
  if (Status s = robot_->ForwardKinematics(q, std::span<RigidTransform>(cache->X_WL), X_WB_); !s.ok()) return s;
  cache->X_WG.resize(robot_parts_.size());
  cache->part_bounds.resize(robot_parts_.size());
  cache->part_boxes.resize(robot_parts_.size());
  for (size_t i = 0; i < robot_parts_.size(); ++i) {
    const RobotPart& rp = robot_parts_[i];
    const RigidTransform& X_WL = cache->X_WL[rp.link];
    if (rp.identity_X_LG) {
      cache->X_WG[i] = X_WL;
    } else {
      cache->X_WG[i] = X_WL * rp.X_LG;
    }
    Obb& box = cache->part_boxes[i];
    box.R_MB.noalias() = X_WL.R * rp.R_LB;
    box.center = X_WL * rp.p_LBo;
    const double grow = rp.padding + margin;
    box.half_extents = rp.local_box.half_extents.array() + grow;
    const Vec3 half = box.R_MB.cwiseAbs() * rp.local_box.half_extents + Vec3::Constant(grow);
    Aabb& b = cache->part_bounds[i];
    b.min = box.center - half;
    b.max = box.center + half;
  }
  return {};
}

Status Scene::CheckState(std::span<const double> q, SceneCache* cache, StateResult* result, double clearance) const {
  if (Status s = CheckClearance(clearance); !s.ok()) {
    *result = StateResult();
    return s;
  }
  return CheckStateWith(q, clearance, cache, result);
}

Status Scene::CheckStateWith(std::span<const double> q, double clearance, SceneCache* cache,
                             StateResult* result) const {
  *result = StateResult();
  if (Status s = PoseParts(q, cache, clearance); !s.ok()) return s;  // rejects a wrong size or NaN
  result->within_limits = robot_->WithinLimits(q);
  result->free = true;
  const std::vector<RigidTransform>& X_WG = cache->X_WG;
  for (int32_t i = 0; i < static_cast<int32_t>(robot_parts_.size()); ++i) {
    if (CollideWorld(i, clearance, cache, result)) return {};
  }
  for (size_t s = 0; s < self_pairs_.size(); ++s) {
    const SelfPair& sp = self_pairs_[s];
    const double padding = robot_parts_[sp.a].padding + robot_parts_[sp.b].padding + clearance;
    // A wrist's links: the precomputed map decides most states with one look-up.
    if (sp.clearance_map != nullptr && SelfPairClearance(sp, q) > padding) continue;
    if (!Overlap(cache->part_bounds[sp.a], cache->part_bounds[sp.b])) continue;
    ++result->pairs_tested;
    ++result->stats.bv_tests;
    if (!WorldBoxesOverlap(cache->part_boxes[sp.a], cache->part_boxes[sp.b])) continue;
    if (PairCollides(robot_parts_[sp.a].geometry, X_WG[sp.a], robot_parts_[sp.b].geometry, X_WG[sp.b], padding,
                     &result->stats,
                     HullCache(cache, SelfPairCache(s)))) {
      result->free = false;
      result->contact = SelfContact(sp.a, sp.b);
      return {};
    }
  }
  return {};
}

}  // namespace proximity::core

namespace proximity::core {

Status GeometryDistance(const Geometry& a, const RigidTransform& X_WA, const Geometry& b, const RigidTransform& X_WB,
                        const DistanceRequest& request, DistanceResult* result) {
  if (a.is_mesh() && b.is_mesh()) return ComputeDistance(*a.mesh, X_WA, *b.mesh, X_WB, request, nullptr, result);
  if (a.is_mesh()) return ComputeMeshShapeDistance(*a.mesh, X_WA, b.shape, X_WB, request, result);
  if (!b.is_mesh()) return ComputeShapeDistance(a.shape, X_WA, b.shape, X_WB, request, result);
  Status s = ComputeMeshShapeDistance(*b.mesh, X_WB, a.shape, X_WA, request, result);
  std::swap(result->p_WA, result->p_WB);
  std::swap(result->triangles.triangle_a, result->triangles.triangle_b);
  return s;
}

Status GeometryDistanceLowerBound(const Geometry& a, const RigidTransform& X_WA, const Geometry& b,
                                  const RigidTransform& X_WB, double enough, double padding, double* lower_bound,
                                  QueryStats* stats, GjkCache* hull_cache) {
  // A budget keeps the walks short; only the certified lower bound is used. A loose one (the bound may
  // be half the distance) costs certified LINK a few more samples but far fewer box and triangle tests:
  // on MotionBenchMaker path edges 1.0 takes half the time of 0.25.
  DistanceRequest req;
  if (padding == 0.0) {
    req.rel_err = 1.0;
  } else {
    req.abs_err = 0.25 * std::max(0.0, enough);
  }
  req.max_distance = std::max(0.0, enough) + padding;
  // The hulls first: a bound that reaches `enough` there holds for the meshes.
  const double hull = HullLowerBound(a, X_WA, b, X_WB, req.max_distance, stats, hull_cache);
  // Between convex meshes (or a convex mesh and a primitive) that are apart the hulls' distance is the
  // meshes': the walk would add nothing. Hulls that meet leave it to the walk (the surfaces may touch,
  // or one part may lie wholly inside the other apart from its surface).
  const bool convex = (a.is_mesh() ? a.hull_is_surface : true) && (b.is_mesh() ? b.hull_is_surface : true);
  if (hull >= req.max_distance || (hull > 0.0 && convex)) {
    *lower_bound = std::max(0.0, hull - padding);
    return {};
  }
  DistanceResult r;
  Status s = GeometryDistance(a, X_WA, b, X_WB, req, &r);
  *lower_bound = r.intersecting ? 0.0 : std::max({0.0, r.lower_bound - padding, hull - padding});
  if (stats != nullptr) *stats += r.stats;
  return s;
}

Status Scene::CheckMotion(std::span<const double> q0, std::span<const double> q1, const MotionRequest& request,
                          SceneCache* cache, MotionResult* result) const {
  *result = MotionResult();
  if (Status s = robot_->CheckConfiguration(q0); !s.ok()) return Error{s.error().code, "q0: " + s.error().message};
  if (Status s = robot_->CheckConfiguration(q1); !s.ok()) return Error{s.error().code, "q1: " + s.error().message};
  if (Status s = CheckClearance(request.clearance); !s.ok()) return s;
  const double length = SegmentLength(q0, q1);
  if (request.mode == MotionRequest::Mode::kDiscrete) {
    Result<int64_t> steps = MotionSteps(length, request.resolution, "resolution");
    if (!steps.ok()) return steps.error();
    return CheckMotionDiscrete(q0, q1, steps.value(), request, cache, result);
  }
  if (!(std::isfinite(request.prepass_resolution) && request.prepass_resolution >= 0.0)) {
    return InvalidArgument("prepass_resolution must be finite and >= 0, got " +
                           FormatNumber(request.prepass_resolution));
  }
  if (request.prepass_resolution > 0.0) {
    Result<int64_t> steps = MotionSteps(length, request.prepass_resolution, "prepass_resolution");
    if (!steps.ok()) return steps.error();
    // The ends are left to the certified walk, which checks them first.
    if (Status s = SampleSegment(q0, q1, steps.value(), true, false, request.clearance, request.stop, cache, result);
        !s.ok() || result->t_collide >= 0.0 || result->stopped) {
      return s;
    }
  }
  return CheckMotionCertified(q0, q1, request.narrow_collision, request.clearance, request.stop, cache, result);
}

// States q0 + (i / n) (q1 - q0), i = 0..n (n from MotionSteps), each checked by CLEAR until one
// collides (recorded in *result). In order from q0, or coarse to fine: the ends, then the odd multiples
// of the largest power of two below n, then of half of it, and so on: the same states, each once, so the
// same answer, but a collision anywhere is met after a few of them. `ends` false leaves q0 and q1 out.
// `stop` is asked every kStopPollStates states; when it says stop, result->stopped is set.
Status Scene::SampleSegment(std::span<const double> q0, std::span<const double> q1, int64_t n,
                            bool coarse_to_fine, bool ends, double clearance, const Interrupt& stop,
                            SceneCache* cache, MotionResult* result) const {
  std::vector<double> q(q0.size());
  int64_t visited = 0;
  // Checks state i; true when it collides (or the check must stop).
  auto collides = [&](int64_t i, Status* status) {
    if ((++visited & (kStopPollStates - 1)) == 0 && stop()) {
      result->stopped = true;
      return true;
    }
    const double t = static_cast<double>(i) / static_cast<double>(n);
    for (size_t j = 0; j < q.size(); ++j) q[j] = q0[j] + t * (q1[j] - q0[j]);
    StateResult r;
    *status = CheckStateWith(q, clearance, cache, &r);
    if (!status->ok()) return true;
    ++result->states;
    result->stats += r.stats;
    if (r.free) return false;
    result->t_collide = t;
    result->t_free = coarse_to_fine || i == 0 ? 0.0 : static_cast<double>(i - 1) / static_cast<double>(n);
    result->contact = r.contact;
    return true;
  };
  Status status;
  if (!coarse_to_fine) {
    for (int64_t i = ends ? 0 : 1; i <= (ends ? n : n - 1); ++i) {
      if (collides(i, &status)) return status;
    }
    return status;
  }
  if (ends && (collides(0, &status) || collides(n, &status))) return status;
  int64_t stride = 1;
  while (stride * 2 < n) stride *= 2;
  for (; stride >= 1; stride /= 2) {
    for (int64_t i = stride; i < n; i += 2 * stride) {
      if (collides(i, &status)) return status;
    }
  }
  return status;
}

Status Scene::CheckMotionDiscrete(std::span<const double> q0, std::span<const double> q1, int64_t steps,
                                  const MotionRequest& request, SceneCache* cache, MotionResult* result) const {
  if (Status s = SampleSegment(q0, q1, steps, request.coarse_to_fine, request.check_ends, request.clearance,
                               request.stop, cache, result);
      !s.ok()) {
    return s;
  }
  if (result->t_collide >= 0.0 || result->stopped) return {};
  result->free = true;
  result->t_free = 1.0;
  return {};
}

// Certified LINK after Schwarzer, Saha and Latombe ("Exact collision checking of robot paths", 2002;
// "Adaptive dynamic collision checking for single and multiple articulated robots in complex
// environments", 2005). For each pair that may collide (a robot geometry against a world part, or two
// robot geometries), eta(t) is a lower bound on their distance at t and lambda an upper bound on how
// far the pair's points can move relative to each other along [ta, tb] (the robot model's motion
// bounds, linear in the segment length). If eta(ta) + eta(tb) > lambda no point of one can reach the
// other anywhere on the segment: the pair is certified there. Pairs that are not are bisected; a
// midpoint where a pair's bound is 0 and the exact test confirms contact ends the search for a free
// answer. Segments are walked left to right, so the certified part is always a prefix [0, t_free].
Status Scene::CheckMotionCertified(std::span<const double> q0, std::span<const double> q1, bool narrow,
                                   double clearance, const Interrupt& stop, SceneCache* cache,
                                   MotionResult* result) const {
  // The smallest segment (in t) the walk splits before calling the segment undecided, and the width
  // to which it narrows [t_free, t_collide] once a collision is known.
  constexpr double kMinWidth = 1.0 / (1 << 30);
  constexpr double kRefineWidth = 1.0 / (1 << 10);
  const int32_t nparts = static_cast<int32_t>(robot_parts_.size());

  struct PairRef {
    int32_t a;     // robot part
    int32_t b;     // world part (self == false) or robot part
    bool self;
    double lambda;  // motion bound over the whole segment
    double padding; // the pair's total padding and the clearance asked for: distances count from there
    int32_t skip;   // self: the common ancestor's moving joints, which move both parts alike
    size_t cache;   // the pair's hull warm start in the SceneCache
  };
  std::vector<double> part_motion(nparts);
  for (int32_t i = 0; i < nparts; ++i) part_motion[i] = PartMotion(i, q0, q1);
  // A pair whose parts cannot move relative to each other along the segment (the fixed base against
  // the world, links that do not move) keeps the state it has at q0, which the end check decides.
  std::vector<PairRef> pairs;
  for (int32_t i = 0; i < nparts; ++i) {
    const double motion = part_motion[i];
    if (motion == 0.0) continue;
    for (int32_t k = 0; k < static_cast<int32_t>(world_parts_.size()); ++k) {
      if (!AllowedEntityObject(robot_parts_[i].entity, world_parts_[k].object)) {
        pairs.push_back({i, k, false, motion, robot_parts_[i].padding + clearance, 0, WorldPairCache(i, k)});
      }
    }
  }
  for (size_t s = 0; s < self_pairs_.size(); ++s) {
    const SelfPair& sp = self_pairs_[s];
    const double motion = SelfPairMotion(sp, q0, q1);
    if (motion > 0.0) {
      pairs.push_back({sp.a, sp.b, true, motion, robot_parts_[sp.a].padding + robot_parts_[sp.b].padding + clearance,
                       robot_->NumMovingJoints(sp.ancestor), SelfPairCache(s)});
    }
  }
  const size_t npairs = pairs.size();
  auto hull_cache = [&](const PairRef& p) { return HullCache(cache, p.cache); };

  // Tighter bounds from the poses at the samples. The bound above takes each joint's lever (how far
  // the part can be from the joint's axis) at its worst over every configuration; at a sample the
  // distance from the axis to the part's bounding sphere is known, and along [ta, tb] it grows by at
  // most the part's motion relative to the joint's child link (the axis is fixed there), itself
  // linear in the width. So over [ta, tb] lever_j <= min(static lever, axis distance at ta + width *
  // growth_j), and the same from tb.
  std::vector<RobotModel::MotionLever> levers;
  std::vector<int32_t> lever_begin(nparts + 1, 0);
  std::vector<double> lever_growth;
  for (int32_t i = 0; i < nparts; ++i) {
    const RobotPart& rp = robot_parts_[i];
    lever_begin[i] = static_cast<int32_t>(levers.size());
    if (part_motion[i] > 0.0) robot_->MotionLevers(rp.link, 0, q0, q1, rp.reach, &levers);
    for (size_t l = lever_growth.size(); l < levers.size(); ++l) {
      lever_growth.push_back(levers[l].prismatic || levers[l].dq == 0.0
                                 ? 0.0
                                 : robot_->MotionBoundRelative(rp.link, robot_->joint(levers[l].joint).child_link,
                                                               q0, q1, rp.reach));
    }
  }
  lever_begin[nparts] = static_cast<int32_t>(levers.size());

  // A configuration on the segment: robot geometry poses and bounds, and per-pair distance bounds
  // (cheap box bounds first, certified distance lower bounds when those do not suffice).
  // A sample's poses and bounds live in flat buffers shared by all samples (sample s's part i at
  // s * nparts + i, pair k at s * npairs + k, lever l at s * nlevers + l): no allocation per sample.
  // A Sample points into them and is valid until the next make_sample.
  struct Sample {
    double t;
    RigidTransform* X_WG;
    Aabb* bounds;
    double* eta;            // best lower bound so far; NaN: not computed
    double* eta_enough;     // the `enough` an exact bound was computed with; NaN: cheap only
    double* axis_distance;  // per lever: axis to the part's bounding sphere, plus its radius
    Vec3* ball_center;      // per robot part: its bounding sphere (radius in part_radius)
  };
  std::vector<double> part_radius(nparts);
  for (int32_t i = 0; i < nparts; ++i) part_radius[i] = robot_parts_[i].local_box.half_extents.norm();
  const size_t nlevers = levers.size();
  std::vector<double> sample_t;
  std::vector<RigidTransform> sample_X_WG;
  std::vector<Aabb> sample_bounds;
  std::vector<double> sample_eta, sample_eta_enough, sample_axis;
  std::vector<Vec3> sample_ball;
  {
    constexpr size_t kExpectedSamples = 64;
    sample_t.reserve(kExpectedSamples);
    sample_X_WG.reserve(kExpectedSamples * nparts);
    sample_bounds.reserve(kExpectedSamples * nparts);
    sample_ball.reserve(kExpectedSamples * nparts);
    sample_eta.reserve(kExpectedSamples * npairs);
    sample_eta_enough.reserve(kExpectedSamples * npairs);
    sample_axis.reserve(kExpectedSamples * nlevers);
  }
  auto sample = [&](int32_t s) {
    const size_t i = static_cast<size_t>(s);
    return Sample{sample_t[i],
                  sample_X_WG.data() + i * nparts,
                  sample_bounds.data() + i * nparts,
                  sample_eta.data() + i * npairs,
                  sample_eta_enough.data() + i * npairs,
                  sample_axis.data() + i * nlevers,
                  sample_ball.data() + i * nparts};
  };
  std::vector<double> q(q0.size());
  auto make_sample = [&](double t) -> Status {
    for (size_t j = 0; j < q.size(); ++j) q[j] = q0[j] + t * (q1[j] - q0[j]);
    cache->X_WL.resize(robot_->links().size());
    if (Status s = robot_->ForwardKinematics(q, std::span<RigidTransform>(cache->X_WL), X_WB_); !s.ok()) return s;
    sample_t.push_back(t);
    sample_X_WG.resize(sample_X_WG.size() + nparts);
    sample_bounds.resize(sample_bounds.size() + nparts);
    sample_ball.resize(sample_ball.size() + nparts);
    sample_axis.resize(sample_axis.size() + nlevers);
    sample_eta.resize(sample_eta.size() + npairs, std::numeric_limits<double>::quiet_NaN());
    sample_eta_enough.resize(sample_eta_enough.size() + npairs, std::numeric_limits<double>::quiet_NaN());
    const Sample smp = sample(static_cast<int32_t>(sample_t.size()) - 1);
    for (int32_t i = 0; i < nparts; ++i) {
      smp.X_WG[i] = cache->X_WL[robot_parts_[i].link] * robot_parts_[i].X_LG;
      smp.bounds[i] = WorldBounds(robot_parts_[i].local_box, smp.X_WG[i]);
    }
    for (int32_t i = 0; i < nparts; ++i) {
      const Obb& box = robot_parts_[i].local_box;
      const Vec3 c_W = smp.X_WG[i] * box.center;
      const double r = part_radius[i];
      smp.ball_center[i] = c_W;
      for (int32_t l = lever_begin[i]; l < lever_begin[i + 1]; ++l) {
        if (levers[l].prismatic || levers[l].dq == 0.0) continue;
        const Joint& j = robot_->joint(levers[l].joint);
        smp.axis_distance[l] = robot_->JointAxisDistance(levers[l].joint, cache->X_WL[j.parent_link], c_W) + r;
      }
    }
    ++result->states;
    return {};
  };
  // Motion bound of part i over a sub-segment of `width` (in t) next to sample s, in the frame of the
  // ancestor whose `skip` moving joints are left out.
  auto part_bound = [&](const Sample& s, int32_t i, int32_t skip, double width) {
    double sum = 0.0;
    for (int32_t l = lever_begin[i] + skip; l < lever_begin[i + 1]; ++l) {
      const RobotModel::MotionLever& lv = levers[l];
      if (lv.dq == 0.0) continue;
      sum += lv.dq * (lv.prismatic ? 1.0 : std::min(lv.lever, s.axis_distance[l] + width * lever_growth[l]));
    }
    return width * sum;
  };
  // World-frame part bounds over the current segment from either end (world pairs share them).
  std::vector<double> world_bound_a(nparts), world_bound_b(nparts);
  // Pair k's motion bound over [sa.t, sb.t]: the least of the static bound and those from either end.
  auto pair_lambda = [&](const Sample& sa, const Sample& sb, size_t k) {
    const PairRef& p = pairs[k];
    const double width = sb.t - sa.t;
    if (!p.self) return std::min({width * p.lambda, world_bound_a[p.a], world_bound_b[p.a]});
    const double from_a = part_bound(sa, p.a, p.skip, width) + part_bound(sa, p.b, p.skip, width);
    const double from_b = part_bound(sb, p.a, p.skip, width) + part_bound(sb, p.b, p.skip, width);
    return std::min({width * p.lambda, from_a, from_b});
  };
  auto other_geometry = [&](const PairRef& p) -> const Geometry& {
    if (p.self) return robot_parts_[p.b].geometry;
    const WorldPart& wp = world_parts_[p.b];
    return objects_[wp.object].parts[wp.part].geometry;
  };
  auto other_pose = [&](const Sample& s, const PairRef& p) -> const RigidTransform& {
    if (p.self) return s.X_WG[p.b];
    const WorldPart& wp = world_parts_[p.b];
    return objects_[wp.object].parts[wp.part].X_WG;
  };
  auto cheap_eta = [&](const Sample& s, size_t k) {
    if (std::isnan(s.eta[k])) {
      const PairRef& p = pairs[k];
      s.eta[k] = std::max(0.0, AabbDistance(s.bounds[p.a], p.self ? s.bounds[p.b] : world_parts_[p.b].bounds) - p.padding);
    }
    return s.eta[k];
  };
  // An upper bound on what exact_eta can give: every point of each part lies within its bounding
  // sphere, so the parts are at most |c_a - c_b| + r_a + r_b apart. A segment whose ends' upper bounds
  // add up to no more than its motion bound cannot be certified there: it is split without asking.
  auto eta_upper = [&](const Sample& s, size_t k) {
    const PairRef& p = pairs[k];
    const Vec3& c_b = p.self ? s.ball_center[p.b] : world_parts_[p.b].box.center;
    const double r_b = p.self ? part_radius[p.b] : world_parts_[p.b].box.half_extents.norm();
    return (s.ball_center[p.a] - c_b).norm() + part_radius[p.a] + r_b - p.padding;
  };
  auto exact_eta = [&](const Sample& s, size_t k, double enough) {
    // A stored bound below the `enough` it was computed with is the full bound; otherwise the walk
    // stopped early at that `enough` and a larger one needs a new query.
    if (!std::isnan(s.eta_enough[k]) && (s.eta[k] < s.eta_enough[k] || enough <= s.eta_enough[k])) return s.eta[k];
    const PairRef& p = pairs[k];
    double lb = 0.0;
    (void)GeometryDistanceLowerBound(robot_parts_[p.a].geometry, s.X_WG[p.a], other_geometry(p), other_pose(s, p),
                                     enough, p.padding, &lb, &result->stats, hull_cache(p));
    ++result->distance_queries;
    s.eta[k] = std::max(cheap_eta(s, k), lb);
    s.eta_enough[k] = enough;
    return s.eta[k];
  };
  auto contact_at = [&](const Sample& s, size_t k) {
    const PairRef& p = pairs[k];
    if (!PairCollides(robot_parts_[p.a].geometry, s.X_WG[p.a], other_geometry(p), other_pose(s, p), p.padding,
                      &result->stats, hull_cache(p))) {
      return false;
    }
    result->contact = p.self ? SelfContact(p.a, p.b) : WorldContact(p.a, world_parts_[p.b].object);
    return true;
  };

  // The ends: a colliding q0 leaves nothing certified; a colliding q1 bounds the search.
  bool collided = false;
  for (double t : {0.0, 1.0}) {
    for (size_t j = 0; j < q.size(); ++j) q[j] = q0[j] + t * (q1[j] - q0[j]);
    StateResult r;
    if (Status s = CheckStateWith(q, clearance, cache, &r); !s.ok()) return s;
    result->stats += r.stats;
    if (!r.free) {
      result->t_collide = t;
      result->contact = r.contact;
      collided = true;
      if (t == 0.0) return {};
      break;
    }
  }
  if (Status s = make_sample(0.0); !s.ok()) return s;
  if (Status s = make_sample(1.0); !s.ok()) return s;

  // Segments still to decide, each with the pairs open on it: pair_pool[first, first + count) (the two
  // halves of a split share their parent's open list).
  struct Segment {
    int32_t sa, sb;
    size_t first, count;
  };
  std::vector<int32_t> pair_pool(npairs);
  std::iota(pair_pool.begin(), pair_pool.end(), 0);
  std::vector<Segment> stack;
  stack.push_back({0, 1, 0, npairs});
  struct Undecided {
    double ratio;   // upper bounds over the motion bound: the smaller, the likelier to fail
    double lambda;
    int32_t k;
  };
  std::vector<Undecided> undecided;
  std::vector<int32_t> open;
  std::vector<double> open_lambda;
  double t_free = 0.0;
  int64_t steps = 0;
  while (!stack.empty()) {
    if ((++steps & (kStopPollStates - 1)) == 0 && stop()) {
      // Whatever was certified stays certified; nothing else is claimed.
      result->stopped = true;
      result->t_free = t_free;
      result->t_collide = -1.0;
      result->free = false;
      return {};
    }
    const Segment seg = stack.back();
    stack.pop_back();
    // Pairs the box bounds certify drop out. Exact bounds are asked only while the segment might still
    // be certified whole: once some pair is known to fail (its upper bounds already fall short, or its
    // exact bounds do) the segment is split anyway, and the pairs not yet decided go to the halves
    // undecided, where their smaller motion bounds make the queries cheaper and more often decisive.
    // Pairs most likely to fail are asked first.
    const Sample a = sample(seg.sa);
    const Sample b = sample(seg.sb);
    const double ta = a.t, tb = b.t, width = tb - ta;
    for (int32_t i = 0; i < nparts; ++i) {
      world_bound_a[i] = part_bound(a, i, 0, width);
      world_bound_b[i] = part_bound(b, i, 0, width);
    }
    open.clear();
    open_lambda.clear();
    undecided.clear();
    bool split = false;
    for (size_t n = 0; n < seg.count; ++n) {
      const int32_t k = pair_pool[seg.first + n];
      const double lambda = pair_lambda(a, b, k);
      if (cheap_eta(a, k) + cheap_eta(b, k) > lambda) continue;
      const double upper = eta_upper(a, k) + eta_upper(b, k);
      if (upper <= lambda) {
        split = true;
        open.push_back(k);
        open_lambda.push_back(lambda);
      } else {
        undecided.push_back({upper / lambda, lambda, k});
      }
    }
    if (!split) {
      std::sort(undecided.begin(), undecided.end(),
                [](const Undecided& x, const Undecided& y) { return x.ratio < y.ratio; });
    }
    for (const Undecided& u : undecided) {
      if (!split) {
        // b's exact bound need only make up what a's leaves.
        const double eta_a = exact_eta(a, u.k, u.lambda);
        if (eta_a + cheap_eta(b, u.k) > u.lambda || eta_a + exact_eta(b, u.k, u.lambda - eta_a) > u.lambda) {
          continue;
        }
        split = true;
      }
      open.push_back(u.k);
      open_lambda.push_back(u.lambda);
    }
    if (open.empty()) {
      t_free = tb;  // left to right: everything before ta is certified already
      continue;
    }
    if (collided && (!narrow || width < kRefineWidth)) break;  // [t_free, t_collide] is narrow enough
    if (width < kMinWidth) {
      result->undecided = true;
      result->t_collide = tb;
      collided = true;
      break;
    }
    if (Status s = make_sample(0.5 * (ta + tb)); !s.ok()) return s;  // a and b are stale from here
    const int32_t sm = static_cast<int32_t>(sample_t.size()) - 1;
    const Sample mid = sample(sm);
    bool hit = false;
    for (size_t o = 0; o < open.size(); ++o) {
      const int32_t k = open[o];
      // Only pairs whose boxes meet there can touch at the midpoint.
      if (cheap_eta(mid, k) == 0.0 && exact_eta(mid, k, 0.5 * open_lambda[o]) == 0.0 && contact_at(mid, k)) {
        hit = true;
        break;
      }
    }
    const size_t first = pair_pool.size();
    pair_pool.insert(pair_pool.end(), open.begin(), open.end());
    if (hit) {
      // A collision at the midpoint: what lies to its right no longer matters; narrow down its left.
      collided = true;
      result->t_collide = mid.t;
      stack.clear();
      stack.push_back({seg.sa, sm, first, open.size()});
      continue;
    }
    stack.push_back({sm, seg.sb, first, open.size()});
    stack.push_back({seg.sa, sm, first, open.size()});
  }
  result->t_free = t_free;
  result->free = !collided;
  if (result->free) result->t_free = 1.0;
  return {};
}

}  // namespace proximity::core
