// Scene queries beyond CLEAR and LINK: distance(q), time of first contact, path checks, and world
// updates (new versions).
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "proximity/core/bvh/mesh_query.h"
#include "proximity/core/scene/scene.h"

namespace proximity::core {

std::string StateContact::Name(const Scene& scene) const {
  if (attached >= 0) return scene.attached()[attached].id;
  return link >= 0 ? scene.robot().link(link).name : std::string();
}

std::string StateContact::OtherName(const Scene& scene) const {
  if (self) return other_attached >= 0 ? scene.attached()[other_attached].id : scene.robot().link(other_link).name;
  return object >= 0 ? scene.objects()[object].id : std::string();
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

// distance(q). Candidate pairs (robot part x world part, and the self pairs) are ordered by a cheap
// lower bound (their world boxes' distance) and queried in that order; a pair is skipped once its
// cheap bound already meets the budget against the best upper bound found, and each query may stop
// early at that point. With L the smallest lower bound over all pairs (queried or skipped) and U the
// smallest upper bound, the budget then holds for [L, U] (see the header and mesh_query.h).
Status Scene::ComputeDistance(std::span<const double> q, const SceneDistanceRequest& request, SceneCache* cache,
                              SceneDistanceResult* result) const {
  *result = SceneDistanceResult();
  DistanceRequest budget{request.rel_err, request.abs_err, request.max_distance};
  if (Status s = ValidateDistanceRequest(budget); !s.ok()) return s;
  if (Status s = PoseParts(q, cache); !s.ok()) return s;  // rejects a wrong size or NaN
  result->within_limits = robot_->WithinLimits(q);

  struct Candidate {
    int32_t a, b;  // robot part; world part or robot part
    bool self;
    double padding;
    double cheap;  // lower bound on the padded clearance
  };
  // The cheap bound is the distance between padded boxes: growing a box by the padding along every
  // axis covers the padding ball, so that distance is at most the padded clearance.
  const std::vector<Aabb>& boxes = cache->part_bounds;
  std::vector<Candidate> candidates;
  const int32_t nparts = static_cast<int32_t>(robot_parts_.size());
  for (int32_t i = 0; request.world && i < nparts; ++i) {
    const RobotPart& rp = robot_parts_[i];
    for (int32_t k = 0; k < static_cast<int32_t>(world_parts_.size()); ++k) {
      if (AllowedEntityObject(rp.entity, world_parts_[k].object)) continue;
      candidates.push_back({i, k, false, rp.padding, AabbDistance(boxes[i], world_parts_[k].bounds)});
    }
  }
  for (const SelfPair& sp : self_pairs_) {
    if (!request.self) break;
    const double pad = robot_parts_[sp.a].padding + robot_parts_[sp.b].padding;
    candidates.push_back({sp.a, sp.b, true, pad, AabbDistance(boxes[sp.a], boxes[sp.b])});
  }
  if (!request.per_pair) {
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& x, const Candidate& y) { return x.cheap < y.cheap; });
  }

  const double rel = request.rel_err, abs = request.abs_err;
  auto enough = [&](double upper) { return std::min(upper / (1.0 + rel), upper - abs); };
  auto budget_met = [&](const PairDistance& pd) { return pd.upper <= pd.lower * (1.0 + rel) || pd.upper - pd.lower <= abs; };
  double lower = std::numeric_limits<double>::infinity();
  double upper = std::numeric_limits<double>::infinity();
  for (const Candidate& c : candidates) {
    const double stop = request.per_pair ? request.max_distance : std::min(request.max_distance, enough(upper));
    if (!request.per_pair && c.cheap >= stop) {
      lower = std::min(lower, c.cheap);
      continue;
    }
    if (request.stop()) {
      // Nothing is claimed beyond what was seen: the clearance may be anything up to the best upper bound.
      result->stopped = true;
      result->lower_bound = 0.0;
      result->upper_bound = upper;
      return {};
    }
    const RobotPart& rp = robot_parts_[c.a];
    const Geometry& other = c.self ? robot_parts_[c.b].geometry
                                   : objects_[world_parts_[c.b].object].parts[world_parts_[c.b].part].geometry;
    const RigidTransform& X_other = c.self ? cache->X_WG[c.b] : WorldPartPose(c.b);
    DistanceRequest pr{rel, abs, stop + c.padding};
    DistanceResult r;
    PairDistance pd;
    auto query = [&] {
      r = DistanceResult();
      (void)GeometryDistance(rp.geometry, cache->X_WG[c.a], other, X_other, pr, &r);
      result->stats += r.stats;
      pd.lower = std::max(0.0, r.lower_bound - c.padding);
      pd.upper = std::max(0.0, r.upper_bound - c.padding);
    };
    query();
    // The budget applies to the padded clearance d - padding, for which a relative budget on the raw
    // distance d is too loose; when it is missed, the exact distance meets any budget.
    if (c.padding > 0.0 && !r.beyond_max_distance && !r.intersecting && !budget_met(pd)) {
      pr.rel_err = pr.abs_err = 0.0;
      query();
    }
    ++result->pairs_tested;
    pd.pair = c.self ? SelfContact(c.a, c.b) : WorldContact(c.a, world_parts_[c.b].object);
    pd.p_W_robot = r.p_WA;
    pd.p_W_other = r.p_WB;
    lower = std::min(lower, pd.lower);
    if (pd.upper < upper) {
      upper = pd.upper;
      result->nearest = pd;
    }
    if (request.per_pair) result->pairs.push_back(pd);
  }
  result->lower_bound = std::min(lower, upper);
  result->upper_bound = upper;
  result->beyond_max_distance = result->lower_bound >= request.max_distance;
  return {};
}

Status Scene::CheckPath(std::span<const double> waypoints, const MotionRequest& request, SceneCache* cache,
                        PathResult* result) const {
  *result = PathResult();
  const size_t dof = static_cast<size_t>(robot_->num_positions());
  // A robot without joints has one configuration (no values): its path is that one state.
  if (dof == 0 ? !waypoints.empty() : (waypoints.empty() || waypoints.size() % dof != 0)) {
    return InvalidArgument("path: " + std::to_string(waypoints.size()) + " values is not a whole number (>= 1) of " +
                           std::to_string(dof) + "-joint waypoints");
  }
  const size_t n = dof == 0 ? 1 : waypoints.size() / dof;
  for (size_t w = 0; w < n; ++w) {
    if (Status s = robot_->CheckConfiguration(waypoints.subspan(w * dof, dof)); !s.ok()) {
      return Error{s.error().code, "path waypoint " + std::to_string(w) + ": " + s.error().message};
    }
  }
  if (n == 1) {
    // A single waypoint is a path of one state.
    StateResult r;
    if (Status s = CheckState(waypoints, cache, &r); !s.ok()) return s;
    result->states = 1;
    result->stats = r.stats;
    result->free = r.free;
    result->motion.free = r.free;
    result->motion.t_free = r.free ? 1.0 : 0.0;
    result->motion.t_collide = r.free ? -1.0 : 0.0;
    result->motion.contact = r.contact;
    if (!r.free) result->segment = 0;
    return {};
  }
  for (size_t w = 0; w + 1 < n; ++w) {
    if (request.stop()) {
      result->stopped = true;
      return {};
    }
    MotionResult m;
    if (Status s = CheckMotion(waypoints.subspan(w * dof, dof), waypoints.subspan((w + 1) * dof, dof), request,
                               cache, &m);
        !s.ok()) {
      return Error{s.error().code, "path segment " + std::to_string(w) + ": " + s.error().message};
    }
    result->states += m.states;
    result->distance_queries += m.distance_queries;
    result->stats += m.stats;
    result->motion = m;
    if (m.stopped) {
      result->stopped = true;
      return {};
    }
    ++result->segments_checked;
    if (!m.free) {
      result->segment = static_cast<int32_t>(w);
      return {};
    }
  }
  result->free = true;
  return {};
}

namespace {

Status ValidateContinuousRequest(const ContinuousRequest& request) {
  if (!(std::isfinite(request.tolerance) && request.tolerance > 0.0 && request.tolerance <= kWorldExtent)) {
    return InvalidArgument("continuous check: tolerance must be finite, > 0 and <= " + FormatNumber(kWorldExtent) +
                           " m, got " + FormatNumber(request.tolerance));
  }
  if (request.max_iterations < 1) {
    return InvalidArgument("continuous check: max_iterations must be >= 1, got " +
                           std::to_string(request.max_iterations));
  }
  return {};
}

// One pair's state during conservative advancement.
struct AdvancePair {
  const Geometry* a;
  const Geometry* b;
  int32_t ia, ib;    // indices the caller uses to pose a and b and to name the pair
  double lambda;     // motion bound per unit t (m)
  double padding;
  bool active = true;
};

// Conservative advancement (Mirtich; Zhang, Kim, Manocha for articulated bodies) over a set of pairs.
// At time t each active pair gets a certified lower bound eta on its padded clearance; no pair can
// close more than lambda * dt in dt, so all stay at least tolerance / 2 apart until t + (eta -
// tolerance / 2) / lambda. A pair whose bound exceeds what it can travel in the remaining time drops
// out. Contact is declared at the first t where a pair's exact clearance is at most `tolerance`.
// `prepare(t)` moves everything to time t, then `prepare.pose(pair, &X_a, &X_b)` gives a pair's poses
// there; `name(pair)` names a pair for the result. Both are template parameters so the loop makes no
// indirect calls.
template <typename PrepareFn, typename NameFn>
void Advance(std::vector<AdvancePair>& pairs, const ContinuousRequest& request, PrepareFn&& prepare, NameFn&& name,
             ContinuousResult* result) {
  const double tol = request.tolerance;
  double t = 0.0;
  for (result->iterations = 0; result->iterations < request.max_iterations; ++result->iterations) {
    if (request.stop()) {
      result->stopped = true;
      break;
    }
    prepare(t);
    double step = std::numeric_limits<double>::infinity();
    bool any = false;
    for (AdvancePair& p : pairs) {
      if (!p.active) continue;
      RigidTransform X_a, X_b;
      prepare.pose(p, &X_a, &X_b);
      const double travel = p.lambda * (1.0 - t);
      DistanceRequest req;
      req.rel_err = 0.25;
      req.max_distance = travel + p.padding + tol;
      DistanceResult r;
      (void)GeometryDistance(*p.a, X_a, *p.b, X_b, req, &r);
      ++result->distance_queries;
      result->stats += r.stats;
      double eta = r.intersecting ? 0.0 : std::max(0.0, r.lower_bound - p.padding);
      if (eta > travel + tol) {
        p.active = false;  // cannot come within tolerance before t = 1
        continue;
      }
      if (eta <= 2.0 * tol) {
        // Close: settle the clearance exactly.
        DistanceRequest exact;
        r = DistanceResult();
        (void)GeometryDistance(*p.a, X_a, *p.b, X_b, exact, &r);
        ++result->distance_queries;
        result->stats += r.stats;
        eta = r.intersecting ? 0.0 : std::max(0.0, r.lower_bound - p.padding);
        const double clearance = r.intersecting ? 0.0 : std::max(0.0, r.upper_bound - p.padding);
        if (clearance <= tol) {
          result->contact = true;
          result->t_contact = t;
          result->clearance = clearance;
          result->nearest.pair = name(p);
          result->nearest.lower = eta;
          result->nearest.upper = clearance;
          result->nearest.p_W_robot = r.p_WA;
          result->nearest.p_W_other = r.p_WB;
          return;
        }
      }
      any = true;
      step = std::min(step, (eta - 0.5 * tol) / p.lambda);
    }
    if (!any || t + step >= 1.0) {
      result->t_contact = 1.0;
      return;
    }
    t += step;
  }
  result->undecided = true;
  result->t_contact = t;
}

}  // namespace

Status Scene::TimeOfFirstContact(std::span<const double> q0, std::span<const double> q1,
                                 const ContinuousRequest& request, SceneCache* cache, ContinuousResult* result) const {
  *result = ContinuousResult();
  if (Status s = ValidateContinuousRequest(request); !s.ok()) return s;
  if (Status s = robot_->CheckConfiguration(q0); !s.ok()) return Error{s.error().code, "q0: " + s.error().message};
  if (Status s = robot_->CheckConfiguration(q1); !s.ok()) return Error{s.error().code, "q1: " + s.error().message};

  const int32_t nparts = static_cast<int32_t>(robot_parts_.size());
  // Pairs that do not move relative to each other keep their clearance from t = 0: they join the
  // advancement with a tiny motion bound so that a pair starting within tolerance is reported at 0.
  std::vector<AdvancePair> pairs;
  for (int32_t i = 0; i < nparts; ++i) {
    for (int32_t k = 0; k < static_cast<int32_t>(world_parts_.size()); ++k) {
      if (AllowedEntityObject(robot_parts_[i].entity, world_parts_[k].object)) continue;
      const WorldPart& wp = world_parts_[k];
      pairs.push_back({&robot_parts_[i].geometry, &objects_[wp.object].parts[wp.part].geometry, i, -1 - k,
                       std::max(PartMotion(i, q0, q1), 1e-12), robot_parts_[i].padding});
    }
  }
  for (const SelfPair& sp : self_pairs_) {
    const RobotPart& a = robot_parts_[sp.a];
    const RobotPart& b = robot_parts_[sp.b];
    pairs.push_back({&a.geometry, &b.geometry, sp.a, sp.b, std::max(SelfPairMotion(sp, q0, q1), 1e-12),
                     a.padding + b.padding});
  }

  std::vector<double> q(q0.size());
  Status pose_status;
  struct Prepare {
    const Scene* scene;
    std::span<const double> q0, q1;
    std::vector<double>* q;
    SceneCache* cache;
    Status* status;
    int64_t* states;
    void operator()(double t) {
      for (size_t j = 0; j < q->size(); ++j) (*q)[j] = q0[j] + t * (q1[j] - q0[j]);
      Status s = scene->PoseParts(*q, cache);
      if (!s.ok()) *status = s;
      ++*states;
    }
    void pose(const AdvancePair& p, RigidTransform* X_a, RigidTransform* X_b) const {
      *X_a = cache->X_WG[p.ia];
      *X_b = p.ib >= 0 ? cache->X_WG[p.ib] : scene->WorldPartPose(-1 - p.ib);
    }
  };
  int64_t states = 0;
  Prepare prepare{this, q0, q1, &q, cache, &pose_status, &states};
  auto name = [&](const AdvancePair& p) {
    return p.ib >= 0 ? SelfContact(p.ia, p.ib) : WorldContact(p.ia, world_parts_[-1 - p.ib].object);
  };
  Advance(pairs, request, prepare, name, result);
  if (!pose_status.ok()) return pose_status;
  if (result->contact) {
    for (size_t j = 0; j < q.size(); ++j) q[j] = q0[j] + result->t_contact * (q1[j] - q0[j]);
    StateResult state;
    if (Status s = CheckState(q, cache, &state); !s.ok()) return s;
    result->penetrating = !state.free;
    result->stats += state.stats;
  }
  return {};
}

Status Scene::TimeOfFirstContact(const Geometry& body, const RigidTransform& X0, const RigidTransform& X1,
                                 const ContinuousRequest& request, ContinuousResult* result) const {
  *result = ContinuousResult();
  if (Status s = ValidateContinuousRequest(request); !s.ok()) return s;
  if (Status s = ValidatePose(X0, "body start pose"); !s.ok()) return s;
  if (Status s = ValidatePose(X1, "body goal pose"); !s.ok()) return s;
  if (!body.is_mesh()) {
    if (Status s = ValidateShape(body.shape, "body"); !s.ok()) return s;
  }
  {
    const Obb box = body.is_mesh() ? body.mesh->obb(0) : ShapeBoundingObb(body.shape);
    for (const RigidTransform* X : {&X0, &X1}) {
      const Aabb b = WorldBounds(box, *X);
      if (std::max(b.max.cwiseAbs().maxCoeff(), b.min.cwiseAbs().maxCoeff()) > kWorldExtent) {
        return InvalidArgument(std::string(X == &X0 ? "body start pose" : "body goal pose") +
                               ": the body reaches beyond the accepted extent of " + FormatNumber(kWorldExtent) +
                               " m");
      }
    }
  }
  // Translation is linear and rotation turns at a constant rate about one axis (slerp), so a point
  // at distance r from the body origin moves at most |p1 - p0| + theta * r per unit t.
  const Eigen::Quaterniond r0(X0.R), r1(X1.R);
  const double theta = r0.angularDistance(r1);
  const Obb box = body.is_mesh() ? body.mesh->obb(0) : ShapeBoundingObb(body.shape);
  const double reach = box.center.norm() + box.half_extents.norm();
  const double lambda = std::max((X1.p - X0.p).norm() + theta * reach, 1e-12);

  std::vector<AdvancePair> pairs;
  for (int32_t k = 0; k < static_cast<int32_t>(world_parts_.size()); ++k) {
    const WorldPart& wp = world_parts_[k];
    pairs.push_back({&body, &objects_[wp.object].parts[wp.part].geometry, -1, k, lambda, 0.0});
  }
  struct Prepare {
    const Scene* scene;
    Eigen::Quaterniond r0, r1;
    Vec3 p0, p1;
    RigidTransform X;
    void operator()(double t) { X = RigidTransform(r0.slerp(t, r1).toRotationMatrix(), p0 + t * (p1 - p0)); }
    void pose(const AdvancePair& p, RigidTransform* X_a, RigidTransform* X_b) const {
      *X_a = X;
      *X_b = scene->WorldPartPose(p.ib);
    }
  };
  Prepare prepare{this, r0, r1, X0.p, X1.p, {}};
  auto name = [&](const AdvancePair& p) {
    StateContact c;
    c.object = world_parts_[p.ib].object;
    return c;
  };
  Advance(pairs, request, prepare, name, result);
  if (result->contact) {
    prepare(result->t_contact);
    for (const AdvancePair& p : pairs) {
      RigidTransform X_a, X_b;
      prepare.pose(p, &X_a, &X_b);
      bool hit = false;
      (void)CollideGeometry(*p.a, X_a, *p.b, X_b, &hit, &result->stats);
      if (hit) {
        result->penetrating = true;
        break;
      }
    }
  }
  return {};
}

}  // namespace proximity::core
