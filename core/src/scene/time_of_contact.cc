/// @file
/// Time of first contact by conservative advancement: of the robot along a joint-space segment,
/// and of a free-flying body against the world.

#include <algorithm>
#include <cmath>
#include <vector>

#include "proximity/core/scene/scene.h"
#include "bvh/mesh_query.h"
#include "scene/scene_internal.h"
#include "scene/scene_impl.h"

namespace proximity::core {

using namespace internal;  // scene_internal.h

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
      // Poses of a built scene and these requests are valid; an error would read as [0, inf] (contact
      // not excluded), never as clear.
      DistanceResult r = GeometryDistance(*p.a, X_a, *p.b, X_b, req).value_or({});
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
        r = GeometryDistance(*p.a, X_a, *p.b, X_b, exact).value_or({});
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

Result<ContinuousResult> SceneImpl::TimeOfFirstContact(std::span<const double> q0, std::span<const double> q1,
                                                       const ContinuousRequest& request, SceneCacheData* cache) const {
  if (Status s = ValidateContinuousRequest(request); !s.ok()) return s.error();
  if (Status s = robot_->CheckConfiguration(q0); !s.ok()) return Error{s.error().code, "q0: " + s.error().message};
  if (Status s = robot_->CheckConfiguration(q1); !s.ok()) return Error{s.error().code, "q1: " + s.error().message};
  // Continuous joints turn the short way, as in CheckMotion.
  std::vector<double> end;
  if (robot_->has_continuous_joints()) q1 = ShortWayEnd(*robot_, q0, q1, &end);

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
    const SceneImpl* scene;
    std::span<const double> q0, q1;
    std::vector<double>* q;
    SceneCacheData* cache;
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
  ContinuousResult result;
  Advance(pairs, request, prepare, name, &result);
  if (!pose_status.ok()) return pose_status.error();
  if (result.contact) {
    for (size_t j = 0; j < q.size(); ++j) q[j] = q0[j] + result.t_contact * (q1[j] - q0[j]);
    const Result<StateResult> state = CheckState(q, cache);
    if (!state.ok()) return state.error();
    result.penetrating = !state.value().free;
    result.stats += state.value().stats;
  }
  return result;
}

Result<ContinuousResult> SceneImpl::TimeOfFirstContact(const Geometry& body, const RigidTransform& X0,
                                                   const RigidTransform& X1, const ContinuousRequest& request) const {
  if (Status s = ValidateContinuousRequest(request); !s.ok()) return s.error();
  if (Status s = ValidatePose(X0, "body start pose"); !s.ok()) return s.error();
  if (Status s = ValidatePose(X1, "body goal pose"); !s.ok()) return s.error();
  if (body.is_cloud()) return InvalidArgument("body: a point cloud cannot be the moving body");
  if (!body.is_mesh()) {
    if (Status s = ValidateShape(body.shape, "body"); !s.ok()) return s.error();
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
    const SceneImpl* scene;
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
  ContinuousResult result;
  Advance(pairs, request, prepare, name, &result);
  if (result.contact) {
    prepare(result.t_contact);
    for (const AdvancePair& p : pairs) {
      RigidTransform X_a, X_b;
      prepare.pose(p, &X_a, &X_b);
      const Result<CollisionResult> hit = CollideGeometry(*p.a, X_a, *p.b, X_b);
      if (!hit.ok()) continue;  // validated body and world: never taken
      result.stats += hit.value().stats;
      if (hit.value().colliding) {
        result.penetrating = true;
        break;
      }
    }
  }
  return result;
}

}  // namespace proximity::core
