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

namespace proximity::core {

Status GeometryDistanceLowerBound(const Geometry& a, const RigidTransform& X_WA, const Geometry& b,
                                  const RigidTransform& X_WB, double enough, double* lower_bound, QueryStats* stats) {
  // A relative budget keeps the walks short; only the certified lower bound is used.
  DistanceRequest req;
  req.rel_err = 0.25;
  req.max_distance = std::max(0.0, enough);
  DistanceResult r;
  Status s;
  if (a.is_mesh() && b.is_mesh()) {
    s = ComputeDistance(*a.mesh, X_WA, *b.mesh, X_WB, req, nullptr, &r);
  } else if (a.is_mesh()) {
    s = ComputeMeshShapeDistance(*a.mesh, X_WA, b.shape, X_WB, req, &r);
  } else if (b.is_mesh()) {
    s = ComputeMeshShapeDistance(*b.mesh, X_WB, a.shape, X_WA, req, &r);
  } else {
    s = ComputeShapeDistance(a.shape, X_WA, b.shape, X_WB, req, &r);
  }
  *lower_bound = r.intersecting ? 0.0 : r.lower_bound;
  if (stats != nullptr) *stats += r.stats;
  return s;
}

Status Scene::CheckMotion(std::span<const double> q0, std::span<const double> q1, const MotionRequest& request,
                          SceneCache* cache, MotionResult* result) const {
  *result = MotionResult();
  if (Status s = robot_->CheckConfiguration(q0); !s.ok()) return Error{s.error().code, "q0: " + s.error().message};
  if (Status s = robot_->CheckConfiguration(q1); !s.ok()) return Error{s.error().code, "q1: " + s.error().message};
  if (request.mode == MotionRequest::Mode::kDiscrete) {
    if (!(std::isfinite(request.resolution) && request.resolution > 0.0)) {
      return InvalidArgument("resolution must be finite and > 0, got " + std::to_string(request.resolution));
    }
    return CheckMotionDiscrete(q0, q1, request.resolution, cache, result);
  }
  return CheckMotionCertified(q0, q1, cache, result);
}

Status Scene::CheckMotionDiscrete(std::span<const double> q0, std::span<const double> q1, double resolution,
                                  SceneCache* cache, MotionResult* result) const {
  double length2 = 0.0;
  for (size_t i = 0; i < q0.size(); ++i) length2 += (q1[i] - q0[i]) * (q1[i] - q0[i]);
  const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(length2) / resolution)));
  std::vector<double> q(q0.size());
  for (int64_t i = 0; i <= n; ++i) {
    const double t = static_cast<double>(i) / static_cast<double>(n);
    for (size_t j = 0; j < q.size(); ++j) q[j] = q0[j] + t * (q1[j] - q0[j]);
    StateResult r;
    if (Status s = CheckState(q, cache, &r); !s.ok()) return s;
    ++result->states;
    result->stats += r.stats;
    if (!r.free) {
      result->t_collide = t;
      result->t_free = i == 0 ? 0.0 : static_cast<double>(i - 1) / static_cast<double>(n);
      result->contact = r.contact;
      return {};
    }
  }
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
Status Scene::CheckMotionCertified(std::span<const double> q0, std::span<const double> q1, SceneCache* cache,
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
    double lambda; // motion bound over the whole segment
  };
  std::vector<double> link_motion(robot_->links().size());
  for (size_t l = 0; l < link_motion.size(); ++l) link_motion[l] = robot_->MotionBound(static_cast<int32_t>(l), q0, q1);
  // A pair whose parts cannot move relative to each other along the segment (the fixed base against
  // the world, links that do not move) keeps the state it has at q0, which the end check decides.
  std::vector<PairRef> pairs;
  for (int32_t i = 0; i < nparts; ++i) {
    const double motion = link_motion[robot_parts_[i].link];
    if (motion == 0.0) continue;
    for (int32_t k = 0; k < static_cast<int32_t>(world_parts_.size()); ++k) {
      if (!AllowedLinkObject(robot_parts_[i].link, world_parts_[k].object)) pairs.push_back({i, k, false, motion});
    }
  }
  for (const auto& [i, j] : self_pairs_) {
    const double motion = link_motion[robot_parts_[i].link] + link_motion[robot_parts_[j].link];
    if (motion > 0.0) pairs.push_back({i, j, true, motion});
  }
  const size_t npairs = pairs.size();

  // A configuration on the segment: robot geometry poses and bounds, and per-pair distance bounds
  // (cheap box bounds first, certified distance lower bounds when those do not suffice).
  struct Sample {
    double t;
    std::vector<RigidTransform> X_WG;
    std::vector<Aabb> bounds;
    std::vector<double> eta;         // best lower bound so far; NaN: not computed
    std::vector<double> eta_enough;  // the `enough` an exact bound was computed with; NaN: cheap only
  };
  std::vector<Sample> samples;
  std::vector<double> q(q0.size());
  auto make_sample = [&](double t) -> Status {
    for (size_t j = 0; j < q.size(); ++j) q[j] = q0[j] + t * (q1[j] - q0[j]);
    cache->X_WL.resize(robot_->links().size());
    if (Status s = robot_->ForwardKinematics(q, std::span<RigidTransform>(cache->X_WL), X_WB_); !s.ok()) return s;
    Sample smp;
    smp.t = t;
    smp.X_WG.resize(nparts);
    smp.bounds.resize(nparts);
    for (int32_t i = 0; i < nparts; ++i) {
      smp.X_WG[i] = cache->X_WL[robot_parts_[i].link] * robot_parts_[i].X_LG;
      smp.bounds[i] = WorldBounds(robot_parts_[i].local_box, smp.X_WG[i]);
    }
    smp.eta.assign(npairs, std::numeric_limits<double>::quiet_NaN());
    smp.eta_enough.assign(npairs, std::numeric_limits<double>::quiet_NaN());
    samples.push_back(std::move(smp));
    ++result->states;
    return {};
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
  auto cheap_eta = [&](Sample& s, size_t k) {
    if (std::isnan(s.eta[k])) {
      const PairRef& p = pairs[k];
      s.eta[k] = AabbDistance(s.bounds[p.a], p.self ? s.bounds[p.b] : world_parts_[p.b].bounds);
    }
    return s.eta[k];
  };
  auto exact_eta = [&](Sample& s, size_t k, double enough) {
    // A stored bound below the `enough` it was computed with is the full bound; otherwise the walk
    // stopped early at that `enough` and a larger one needs a new query.
    if (!std::isnan(s.eta_enough[k]) && (s.eta[k] < s.eta_enough[k] || enough <= s.eta_enough[k])) return s.eta[k];
    const PairRef& p = pairs[k];
    double lb = 0.0;
    (void)GeometryDistanceLowerBound(robot_parts_[p.a].geometry, s.X_WG[p.a], other_geometry(p), other_pose(s, p),
                                     enough, &lb, &result->stats);
    ++result->distance_queries;
    s.eta[k] = std::max(cheap_eta(s, k), lb);
    s.eta_enough[k] = enough;
    return s.eta[k];
  };
  auto contact_at = [&](Sample& s, size_t k) {
    const PairRef& p = pairs[k];
    bool hit = false;
    (void)CollideGeometry(robot_parts_[p.a].geometry, s.X_WG[p.a], other_geometry(p), other_pose(s, p), &hit,
                          &result->stats);
    if (!hit) return false;
    result->contact = p.self ? StateContact{true, robot_parts_[p.a].link, robot_parts_[p.b].link, -1}
                             : StateContact{false, robot_parts_[p.a].link, -1, world_parts_[p.b].object};
    return true;
  };

  // The ends: a colliding q0 leaves nothing certified; a colliding q1 bounds the search.
  bool collided = false;
  for (double t : {0.0, 1.0}) {
    for (size_t j = 0; j < q.size(); ++j) q[j] = q0[j] + t * (q1[j] - q0[j]);
    StateResult r;
    if (Status s = CheckState(q, cache, &r); !s.ok()) return s;
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

  struct Segment {
    int32_t sa, sb;
    std::vector<int32_t> pairs;
  };
  std::vector<Segment> stack;
  {
    Segment all{0, 1, {}};
    all.pairs.resize(npairs);
    std::iota(all.pairs.begin(), all.pairs.end(), 0);
    stack.push_back(std::move(all));
  }
  double t_free = 0.0;
  while (!stack.empty()) {
    Segment seg = std::move(stack.back());
    stack.pop_back();
    const double ta = samples[seg.sa].t, tb = samples[seg.sb].t, width = tb - ta;
    std::vector<int32_t> open;
    for (int32_t k : seg.pairs) {
      const double lambda = width * pairs[k].lambda;
      if (cheap_eta(samples[seg.sa], k) + cheap_eta(samples[seg.sb], k) > lambda) continue;
      if (exact_eta(samples[seg.sa], k, lambda) + exact_eta(samples[seg.sb], k, lambda) > lambda) continue;
      open.push_back(k);
    }
    if (open.empty()) {
      t_free = tb;  // left to right: everything before ta is certified already
      continue;
    }
    if (collided && width < kRefineWidth) break;  // [t_free, t_collide] is narrow enough
    if (width < kMinWidth) {
      result->undecided = true;
      result->t_collide = tb;
      collided = true;
      break;
    }
    if (Status s = make_sample(0.5 * (ta + tb)); !s.ok()) return s;
    const int32_t sm = static_cast<int32_t>(samples.size()) - 1;
    bool hit = false;
    for (int32_t k : open) {
      if (exact_eta(samples[sm], k, 0.5 * width * pairs[k].lambda) == 0.0 && contact_at(samples[sm], k)) {
        hit = true;
        break;
      }
    }
    if (hit) {
      // A collision at the midpoint: what lies to its right no longer matters; narrow down its left.
      collided = true;
      result->t_collide = samples[sm].t;
      stack.clear();
      stack.push_back({seg.sa, sm, std::move(open)});
      continue;
    }
    stack.push_back({sm, seg.sb, open});
    stack.push_back({seg.sa, sm, std::move(open)});
  }
  result->t_free = t_free;
  result->free = !collided;
  if (result->free) result->t_free = 1.0;
  return {};
}

}  // namespace proximity::core
