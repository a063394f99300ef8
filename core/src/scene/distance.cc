/// @file
/// distance(q) and the distance between two geometries: certified intervals to a budget, pairs
/// ordered by cheap bounds and skipped once those meet it.

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "proximity/core/scene/scene.h"
#include "bvh/mesh_query.h"
#include "bvh/query_internal.h"
#include "bvh/shape_query.h"
#include "scene/scene_internal.h"
#include "scene/scene_impl.h"
#include "base/numerics.h"

namespace proximity::core {

using namespace internal;  // scene_internal.h

namespace internal {

// Certified lower bound (m) on the distance between the convex stand-ins of a and b (WithHulls), GJK
// stopping once it reaches `target`; -1 when there are none.
double HullLowerBound(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b,
                      double target, QueryStats* stats, GjkCache* cache) {
  double lower = -1.0;
  const bool warm = WarmStart(cache);
  int32_t iterations = 0;
  const bool tested = WithHulls(a, X_a, b, X_b, [&](const auto& ca, const RigidTransform& X_ca, const auto& cb,
                                                    const RigidTransform& X_cb) {
    GjkOptions options;
    options.lower_bound_target = target;
    options.rel_tolerance = 1e-3;  // only the bound matters, and only up to the target
    const GjkResult r = GjkDistance(ca, X_ca, cb, X_cb, cache, options);
    lower = r.lower_bound;
    iterations = r.iterations;
  });
  if (tested && stats != nullptr) {
    ++stats->bv_tests;
    CountConvex(stats, warm, iterations);
  }
  return lower;
}

}  // namespace internal

Result<DistanceResult> GeometryDistance(const Geometry& a, const RigidTransform& X_WA, const Geometry& b,
                                        const RigidTransform& X_WB, const DistanceRequest& request) {
  if (a.is_cloud() || b.is_cloud()) {
    const CloudPair p = SplitCloudPair(a, X_WA, b, X_WB);
    const bool swap = p.swapped;
    const Geometry &g = p.other, &c = p.cloud;
    const RigidTransform &X_g = p.X_other, &X_c = p.X_cloud;
    if (g.is_cloud()) return InvalidArgument("two point clouds are never measured against each other");
    Result<DistanceResult> r = g.is_mesh() ? ComputeMeshCloudDistance(*g.mesh, X_g, *c.cloud, X_c, request,
                                                                      g.distance_map.get())
                                           : ComputeShapeCloudDistance(g.shape, X_g, *c.cloud, X_c, request);
    if (r.ok() && swap) {
      std::swap(r.value().p_WA, r.value().p_WB);
      std::swap(r.value().triangles.triangle_a, r.value().triangles.triangle_b);
    }
    return r;
  }
  if (a.is_mesh() && b.is_mesh()) {
    // Poses from the scene; the budget is checked here, as the other pairs' queries check it.
    if (Status s = ValidateDistanceRequest(request); !s.ok()) return s.error();
    return internal::ComputeDistanceTrusted(*a.mesh, X_WA, *b.mesh, X_WB, request, nullptr);
  }
  if (a.is_mesh()) return ComputeMeshShapeDistance(*a.mesh, X_WA, b.shape, X_WB, request);
  if (!b.is_mesh()) return ComputeShapeDistance(a.shape, X_WA, b.shape, X_WB, request);
  Result<DistanceResult> r = ComputeMeshShapeDistance(*b.mesh, X_WB, a.shape, X_WA, request);
  if (r.ok()) {
    DistanceResult& d = r.value();
    std::swap(d.p_WA, d.p_WB);
    std::swap(d.triangles.triangle_a, d.triangles.triangle_b);
  }
  return r;
}

Result<ClearanceBound> GeometryDistanceLowerBound(const Geometry& a, const RigidTransform& X_WA, const Geometry& b,
                                                  const RigidTransform& X_WB, double enough, double padding,
                                                  GjkCache* hull_cache) {
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
  ClearanceBound bound;
  const double hull = HullLowerBound(a, X_WA, b, X_WB, req.max_distance, &bound.stats, hull_cache);
  // Between convex meshes (or a convex mesh and a primitive) that are apart the hulls' distance is the
  // meshes': the walk would add nothing. Hulls that meet leave it to the walk (the surfaces may touch,
  // or one part may lie wholly inside the other apart from its surface).
  const bool convex = (a.is_mesh() ? a.hull_is_surface : true) && (b.is_mesh() ? b.hull_is_surface : true);
  if (hull >= req.max_distance || (hull > 0.0 && convex)) {
    bound.lower_bound = std::max(0.0, hull - padding);
    return bound;
  }
  // The hulls' distance is certified: a walk whose first upper bound meets the budget against it stops.
  req.known_lower = std::max(0.0, hull);
  const Result<DistanceResult> r = GeometryDistance(a, X_WA, b, X_WB, req);
  if (!r.ok()) return r.error();
  bound.lower_bound = r.value().intersecting ? 0.0 : std::max({0.0, r.value().lower_bound - padding, hull - padding});
  bound.stats += r.value().stats;
  return bound;
}

struct SceneImpl::DistanceCandidate {
  int32_t a, b;  // robot part; world part, or (self) the self pair's index until it is queried, then its part
  bool self;
  bool refined;  // `cheap` includes the convex stand-ins' bound (or there are none)
  double padding;
  double cheap;  // lower bound on the padded clearance
};

// The cheap bound is the distance between padded boxes: growing a box by the padding along every axis
// covers the padding ball, so that distance is at most the padded clearance.
std::vector<SceneImpl::DistanceCandidate> SceneImpl::DistanceCandidates(const SceneDistanceRequest& request,
                                                                        const SceneCacheData& cache) const {
  const std::vector<Aabb>& boxes = cache.part_bounds;
  std::vector<DistanceCandidate> candidates;
  const int32_t nparts = static_cast<int32_t>(robot_parts_.size());
  candidates.reserve(static_cast<size_t>(nparts) * world_parts_.size() + self_pairs_.size());
  for (int32_t i = 0; request.world && i < nparts; ++i) {
    const RobotPart& rp = robot_parts_[i];
    for (int32_t k = 0; k < static_cast<int32_t>(world_parts_.size()); ++k) {
      if (AllowedEntityObject(rp.entity, world_parts_[k].object)) continue;
      candidates.push_back({i, k, false, false, rp.padding, AabbDistance(boxes[i], world_parts_[k].bounds)});
    }
  }
  for (int32_t s = 0; request.self && s < static_cast<int32_t>(self_pairs_.size()); ++s) {
    const SelfPair& sp = self_pairs_[s];
    const double pad = robot_parts_[sp.a].padding + robot_parts_[sp.b].padding;
    // (Not the self-clearance maps' bounds: what they hold depends on which cells other queries filled,
    // and the same state and request must give the same answer.)
    candidates.push_back({sp.a, s, true, false, pad, AabbDistance(boxes[sp.a], boxes[sp.b])});
  }
  return candidates;
}

PairDistance SceneImpl::QueryPair(const DistanceCandidate& c, double stop, const SceneDistanceRequest& request,
                                  const SceneCacheData& cache, SceneDistanceResult* result) const {
  const double rel = request.rel_err, abs = request.abs_err;
  const auto budget_met = [&](const PairDistance& pd) {
    return pd.upper <= pd.lower * (1.0 + rel) || pd.upper - pd.lower <= abs;
  };
  const RobotPart& rp = robot_parts_[c.a];
  const Geometry& other = c.self ? robot_parts_[c.b].geometry
                                 : objects_[world_parts_[c.b].object].parts[world_parts_[c.b].part].geometry;
  const RigidTransform& X_other = c.self ? cache.X_WG[c.b] : WorldPartPose(c.b);
  DistanceRequest pr{rel, abs, stop + c.padding};
  // The cheap bound (boxes, or the convex stand-ins) is certified: a walk whose first upper bound
  // already meets the budget against it stops there.
  pr.known_lower = std::max(0.0, c.cheap + c.padding);
  DistanceResult r;
  PairDistance pd;
  auto query = [&] {
    // Poses, shapes and the validated budget make every pair query valid; an error would leave the
    // pair at [0, inf], which claims nothing.
    r = GeometryDistance(rp.geometry, cache.X_WG[c.a], other, X_other, pr).value_or({});
    result->stats += r.stats;
    pd.lower = std::max(0.0, r.lower_bound - c.padding);
    pd.upper = std::max(0.0, r.upper_bound - c.padding);
  };
  query();
  // The budget applies to the padded clearance d - padding, for which a relative budget on the raw
  // distance d is too loose; when it is missed, the exact distance meets any budget.
  if (c.padding > 0.0 && !r.beyond_max_distance && !r.intersecting && !budget_met(pd)) {
    pr.rel_err = pr.abs_err = 0.0;
    pr.known_lower = 0.0;
    query();
  }
  ++result->pairs_tested;
  // The cheap bound holds for the pair too, and the hulls' may exceed what the walk stopped at.
  if (!request.per_pair) pd.lower = std::min(pd.upper, std::max(pd.lower, c.cheap));
  pd.pair = c.self ? SelfContact(c.a, c.b) : WorldContact(c.a, world_parts_[c.b].object);
  pd.p_W_robot = r.p_WA;
  pd.p_W_other = r.p_WB;
  return pd;
}

// distance(q). Candidate pairs (robot part x world part, and the self pairs) are ordered by a cheap
// lower bound (their world boxes' distance, raised to their convex stand-ins' distance when the boxes'
// does not settle them) and queried in that order; a pair is skipped once its cheap bound already
// meets the budget against the best upper bound found, and each query may stop early at that point.
// With L the smallest lower bound over all pairs (queried or skipped) and U the smallest upper bound,
// the budget then holds for [L, U] (see the header and mesh_query.h).
Result<SceneDistanceResult> SceneImpl::ComputeDistance(std::span<const double> q, const SceneDistanceRequest& request,
                                                       SceneCacheData* cache) const {
  DistanceRequest budget{request.rel_err, request.abs_err, request.max_distance};
  if (Status s = ValidateDistanceRequest(budget); !s.ok()) return s.error();
  if (Status s = PoseParts(q, cache); !s.ok()) return s.error();  // rejects a wrong size or NaN
  SceneDistanceResult result;
  result.within_limits = robot_->WithinLimits(q);
  std::vector<DistanceCandidate> candidates = DistanceCandidates(request, *cache);
  // Candidates leave a min-heap by their cheap bound, lazily: once the smallest reaches the budget
  // against the best upper bound, every remaining one does. A pair whose box bound is below it is first
  // put back with the bound of its convex stand-ins (one GJK, far cheaper than a walk), so the
  // walks run in order of the tighter bounds and pairs whose hulls meet the budget are never walked.
  auto later = [](const DistanceCandidate& x, const DistanceCandidate& y) { return x.cheap > y.cheap; };
  if (!request.per_pair) std::make_heap(candidates.begin(), candidates.end(), later);
  std::size_t remaining = candidates.size();
  std::size_t next = 0;  // per_pair: candidates in scene order
  const double rel = request.rel_err, abs = request.abs_err;
  auto enough = [&](double upper) { return std::min(upper / (1.0 + rel), upper - abs); };
  double lower = std::numeric_limits<double>::infinity();
  double upper = std::numeric_limits<double>::infinity();
  for (;;) {
    DistanceCandidate c;
    if (request.per_pair) {
      if (next == candidates.size()) break;
      c = candidates[next++];
    } else {
      if (remaining == 0) break;
      std::pop_heap(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(remaining), later);
      c = candidates[--remaining];
    }
    const double stop = request.per_pair ? request.max_distance : std::min(request.max_distance, enough(upper));
    if (!request.per_pair && c.cheap >= stop) {
      lower = std::min(lower, c.cheap);  // the smallest bound left: every other one is at least this
      break;
    }
    const int32_t other_part = c.self ? self_pairs_[c.b].b : c.b;
    if (!request.per_pair && !c.refined) {
      c.refined = true;
      const Geometry& g = c.self ? robot_parts_[other_part].geometry
                                 : objects_[world_parts_[c.b].object].parts[world_parts_[c.b].part].geometry;
      const RigidTransform& X_g = c.self ? cache->X_WG[other_part] : WorldPartPose(c.b);
      // GJK starts cold: a warm start would make the answer depend on the cache's history in its last
      // digits, and the same state and request must give the same answer.
      const double hull = HullLowerBound(robot_parts_[c.a].geometry, cache->X_WG[c.a], g, X_g, stop + c.padding,
                                         &result.stats, nullptr);
      if (hull - c.padding > c.cheap) {
        c.cheap = hull - c.padding;
        candidates[remaining++] = c;
        std::push_heap(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(remaining), later);
        continue;
      }
    }
    c.b = other_part;
    if (request.stop()) {
      // Nothing is claimed beyond what was seen: the clearance may be anything up to the best upper bound.
      result.stopped = true;
      result.lower_bound = 0.0;
      result.upper_bound = upper;
      return result;
    }
    const PairDistance pd = QueryPair(c, stop, request, *cache, &result);
    lower = std::min(lower, pd.lower);
    if (pd.upper < upper) {
      upper = pd.upper;
      result.nearest = pd;
    }
    if (request.per_pair) result.pairs.push_back(pd);
  }
  result.lower_bound = std::min(lower, upper);
  result.upper_bound = upper;
  result.beyond_max_distance = result.lower_bound >= request.max_distance;
  return result;
}

}  // namespace proximity::core
