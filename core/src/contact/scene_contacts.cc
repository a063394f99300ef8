/// @file
/// Contacts of a scene at a state, and the signed distance of named pairs (scene_contacts.h): each
/// geometry pair measured by EPA on convex pieces, or bracketed between the deepest intersecting
/// triangle pair and the hulls' depth for other meshes.

#include "proximity/core/contact/scene_contacts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "bvh/mesh_query.h"
#include "bvh/point_cloud.h"
#include "bvh/shape_query.h"
#include "contact/contact.h"
#include "contact/epa.h"

namespace proximity::core {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Intersecting triangle pairs measured per geometry pair at most; beyond, the lower bound is the
// deepest of those measured (still certified).
constexpr int32_t kMaxTrianglePairs = 1 << 16;


// Whether g is a convex set measured exactly: a primitive, or a mesh that is its hull's surface.
bool ExactConvex(const Geometry& g) { return !g.is_mesh() || (g.hull != nullptr && g.hull_is_surface); }

// Calls f(convex) with g's convex stand-in: the primitive, the mesh's hull, or a hull built here into
// *storage (a mesh without one). False when a mesh has no hull and none can be built (flat).
template <class F>
bool WithHull(const Geometry& g, std::shared_ptr<const ConvexPolytope>* storage, F&& f) {
  if (!g.is_mesh()) {
    VisitShape(g.shape, f);
    return true;
  }
  if (g.hull != nullptr) {
    f(*g.hull);
    return true;
  }
  Result<std::shared_ptr<const ConvexPolytope>> hull = ConvexPolytope::Build(g.mesh->mesh(), "mesh hull");
  if (!hull.ok()) return false;
  *storage = std::move(hull).value();
  f(**storage);
  return true;
}

// One geometry pair's signed distance (unpadded, robot side a towards other side b) and where it is.
struct PartMeasure {
  double sd = 0.0;
  double sd_lower = 0.0;
  double sd_upper = 0.0;
  Vec3 normal_W = Vec3::UnitZ();
  Vec3 p_WA = Vec3::Zero();
  Vec3 p_WB = Vec3::Zero();
  std::vector<SceneContactPoint> points;  // depths unpadded
  PenetrationMethod method = PenetrationMethod::kConvex;
  int64_t triangle_pairs = 0;
  QueryStats stats;
};

Vec3 UnitOr(const Vec3& v, const Vec3& fallback) {
  const double n = v.norm();
  return n > 0.0 && std::isfinite(n) ? Vec3(v / n) : fallback;
}

// EPA on two convex sets, with the contact region's points when `points` and the pair is within
// `margin` (m) of touching.
template <class A, class B>
Result<PartMeasure> MeasureConvex(const A& a, const RigidTransform& X_WA, const B& b, const RigidTransform& X_WB,
                                  bool points, double margin) {
  Result<SignedDistanceResult> epa = ComputeSignedDistance(a, X_WA, b, X_WB);
  if (!epa.ok()) return epa.error();
  const SignedDistanceResult& r = epa.value();
  PartMeasure m;
  m.sd = r.distance;
  m.sd_lower = std::min(r.lower_bound, r.distance);
  m.sd_upper = std::max(r.upper_bound, r.distance);
  m.normal_W = r.normal_W;
  m.p_WA = r.p_WA;
  m.p_WB = r.p_WB;
  m.method = r.distance > 0.0 ? PenetrationMethod::kPadding : PenetrationMethod::kConvex;
  if (!points) return m;
  if (r.distance <= margin) {
    ContactOptions options;
    options.contact_margin = std::max({options.contact_margin, margin, r.distance + 1e-9});
    options.reduce_to_four = true;
    Result<ContactManifold> manifold = ComputeContacts(a, X_WA, b, X_WB, options);
    if (manifold.ok()) {
      for (const ContactPoint& p : manifold.value().points) m.points.push_back({p.p_W, p.depth});
    }
  }
  if (m.points.empty()) m.points.push_back({0.5 * (r.p_WA + r.p_WB), -r.distance});
  return m;
}

// Every intersecting triangle pair of a and b (at least one a mesh), up to kMaxTrianglePairs.
Result<CollisionResult> CollideAll(const Geometry& a, const RigidTransform& X_WA, const Geometry& b,
                                   const RigidTransform& X_WB) {
  CollisionRequest request;
  request.all_contacts = true;
  request.max_contacts = kMaxTrianglePairs;
  if (a.is_mesh() && b.is_mesh()) return Collide(*a.mesh, X_WA, *b.mesh, X_WB, request);
  if (a.is_mesh()) return CollideMeshShape(*a.mesh, X_WA, b.shape, X_WB, request);
  return CollideMeshShape(*b.mesh, X_WB, a.shape, X_WA, request);
}

Triangle WorldTriangle(const MeshModel& model, const RigidTransform& X_WM, int32_t t) {
  const TriangleMesh& mesh = model.mesh();
  const std::array<int32_t, 3>& tri = mesh.triangles[static_cast<size_t>(t)];
  return {X_WM * mesh.vertices[tri[0]], X_WM * mesh.vertices[tri[1]], X_WM * mesh.vertices[tri[2]]};
}

// The bracket of a colliding pair with a mesh that is not its own hull (see the file comment of
// scene_contacts.h): the deepest intersecting triangle pair below, the hulls' depth above.
Result<PartMeasure> MeasureMeshBracket(const Geometry& a, const RigidTransform& X_WA, const Geometry& b,
                                       const RigidTransform& X_WB, const CollisionResult& collision,
                                       int32_t max_points) {
  PartMeasure m;
  m.method = PenetrationMethod::kMeshBracket;
  m.sd = kInf;
  m.sd_upper = kInf;
  std::vector<SceneContactPoint> points;
  const RigidTransform I = RigidTransform::Identity();
  for (const TrianglePair& tp : collision.contacts) {
    // The pair's two sides as convex sets posed in W: a world triangle (identity pose) or a primitive.
    Result<SignedDistanceResult> r = InvalidArgument("unreachable");
    if (a.is_mesh() && b.is_mesh()) {
      r = ComputeSignedDistance(WorldTriangle(*a.mesh, X_WA, tp.triangle_a), I,
                                WorldTriangle(*b.mesh, X_WB, tp.triangle_b), I);
    } else if (a.is_mesh()) {
      const Triangle ta = WorldTriangle(*a.mesh, X_WA, tp.triangle_a);
      VisitShape(b.shape, [&](const auto& sb) { r = ComputeSignedDistance(ta, I, sb, X_WB); });
    } else {
      // CollideAll put b's mesh first: its triangle is triangle_a.
      const Triangle tb = WorldTriangle(*b.mesh, X_WB, tp.triangle_a);
      VisitShape(a.shape, [&](const auto& sa) { r = ComputeSignedDistance(sa, X_WA, tb, I); });
    }
    if (!r.ok()) return r.error();
    const SignedDistanceResult& d = r.value();
    ++m.triangle_pairs;
    m.sd_upper = std::min(m.sd_upper, std::max(d.upper_bound, d.distance));
    if (d.distance < m.sd) {
      m.sd = d.distance;
      m.normal_W = d.normal_W;
      m.p_WA = d.p_WA;
      m.p_WB = d.p_WB;
    }
    points.push_back({0.5 * (d.p_WA + d.p_WB), -d.distance});
  }
  if (m.triangle_pairs == 0) return InvalidArgument("no intersecting triangle pair to measure");  // not reached
  // The touching pairs of a graze measure 0: the surfaces meet, so the signed distance is at most 0.
  m.sd = std::min(m.sd, 0.0);
  m.sd_upper = std::min(m.sd_upper, 0.0);
  std::sort(points.begin(), points.end(),
            [](const SceneContactPoint& x, const SceneContactPoint& y) { return x.depth > y.depth; });
  if (static_cast<int32_t>(points.size()) > max_points) points.resize(static_cast<size_t>(max_points));
  m.points = std::move(points);
  // Upper bound on the depth: the hulls' (a translation separating them separates what they hold).
  m.sd_lower = -kInf;
  std::shared_ptr<const ConvexPolytope> hull_a, hull_b;
  Status hull_status;
  WithHull(a, &hull_a, [&](const auto& ca) {
    WithHull(b, &hull_b, [&](const auto& cb) {
      Result<SignedDistanceResult> r = ComputeSignedDistance(ca, X_WA, cb, X_WB);
      if (!r.ok()) {
        hull_status = r.error();
        return;
      }
      m.sd_lower = std::min(r.value().lower_bound, r.value().distance);
    });
  });
  if (!hull_status.ok()) return hull_status.error();
  m.sd_lower = std::min(m.sd_lower, m.sd);
  return m;
}

// A pair apart (padding-only contact, or the signed distance of a pair apart): the distance interval.
Result<PartMeasure> MeasureApart(const Geometry& a, const RigidTransform& X_WA, const Geometry& b,
                                 const RigidTransform& X_WB, const DistanceRequest& request) {
  Result<DistanceResult> r = GeometryDistance(a, X_WA, b, X_WB, request);
  if (!r.ok()) return r.error();
  const DistanceResult& d = r.value();
  PartMeasure m;
  m.method = PenetrationMethod::kPadding;
  m.sd = d.upper_bound;
  m.sd_lower = d.lower_bound;
  m.sd_upper = d.upper_bound;
  m.p_WA = d.p_WA;
  m.p_WB = d.p_WB;
  m.normal_W = UnitOr(d.p_WB - d.p_WA, UnitOr(X_WB.p - X_WA.p, Vec3::UnitZ()));
  m.points.push_back({0.5 * (d.p_WA + d.p_WB), -d.upper_bound});
  m.stats = d.stats;
  return m;
}

// A pair with a point cloud (b): every ball that touches a's surface or solid, each at its exact depth
// (its radius minus its centre's distance to a); the distance when none does.
Result<PartMeasure> MeasureCloud(const Geometry& a, const RigidTransform& X_WA, const Geometry& b,
                                 const RigidTransform& X_WB, int32_t max_points, const DistanceRequest& apart) {
  CollisionRequest all;
  all.all_contacts = true;
  all.max_contacts = kMaxTrianglePairs;
  if (a.is_cloud()) return InvalidArgument("two point clouds are never measured against each other");
  const CloudCollision collision = a.is_mesh() ? CollideMeshCloud(*a.mesh, X_WA, *b.cloud, X_WB, 0.0, all)
                                               : CollideShapeCloud(a.shape, X_WA, *b.cloud, X_WB, 0.0, all);
  if (!collision.colliding) return MeasureApart(a, X_WA, b, X_WB, apart);
  PartMeasure m;
  m.method = PenetrationMethod::kCloud;
  m.sd = kInf;
  m.stats = collision.stats;
  const PointCloud& cloud = *b.cloud;
  DistanceRequest exact;
  std::vector<SceneContactPoint> points;
  for (const CloudContact& contact : collision.contacts) {
    const int32_t i = contact.point;
    const Vec3 c_W = X_WB * cloud.point(i);
    const double r = cloud.point_radius(i);
    // The centre as a solid point: its distance to a is exact (a mesh's triangles, or GJK on a solid).
    RigidTransform X_WP = RigidTransform::Identity();
    X_WP.p = c_W;
    Result<DistanceResult> d = GeometryDistance(a, X_WA, Geometry::Primitive(Sphere{Vec3::Zero(), 0.0}), X_WP, exact);
    if (!d.ok()) return d.error();
    m.stats += d.value().stats;
    const double gap = d.value().upper_bound;
    const double sd = gap - r;
    const Vec3 on_a = d.value().p_WA;
    // Halfway between a's surface and the ball's along the normal.
    points.push_back({on_a + 0.5 * sd * UnitOr(c_W - on_a, Vec3::UnitZ()), -sd});
    if (sd < m.sd) {
      m.sd = sd;
      m.sd_lower = std::min(d.value().lower_bound, gap) - r;
      m.sd_upper = sd;
      m.normal_W = UnitOr(c_W - on_a, UnitOr(X_WB.p - X_WA.p, Vec3::UnitZ()));
      m.p_WA = on_a;
      m.p_WB = c_W - r * m.normal_W;
    }
    ++m.triangle_pairs;
  }
  m.sd = std::min(m.sd, 0.0);
  m.sd_upper = std::min(m.sd_upper, 0.0);
  m.sd_lower = std::min(m.sd_lower, m.sd);
  std::sort(points.begin(), points.end(),
            [](const SceneContactPoint& x, const SceneContactPoint& y) { return x.depth > y.depth; });
  if (static_cast<int32_t>(points.size()) > max_points) points.resize(static_cast<size_t>(max_points));
  m.points = std::move(points);
  return m;
}

// One geometry pair: convex pairs by EPA, meshes by their surfaces' collision, then the bracket or
// the distance; clouds by their balls.
Result<PartMeasure> MeasurePair(const Geometry& a, const RigidTransform& X_WA, const Geometry& b,
                                const RigidTransform& X_WB, bool points, double margin, int32_t max_points,
                                const DistanceRequest& apart) {
  if (b.is_cloud()) return MeasureCloud(a, X_WA, b, X_WB, max_points, apart);
  if (a.is_mesh() || b.is_mesh()) {
    // Meshes are surfaces: whether the pair collides is the surfaces' test (as CLEAR's).
    Result<CollisionResult> collision = CollideAll(a, X_WA, b, X_WB);
    if (!collision.ok()) return collision.error();
    if (!collision.value().colliding) return MeasureApart(a, X_WA, b, X_WB, apart);
    if (!ExactConvex(a) || !ExactConvex(b)) {
      Result<PartMeasure> m = MeasureMeshBracket(a, X_WA, b, X_WB, collision.value(), max_points);
      if (m.ok()) m.value().stats += collision.value().stats;
      return m;
    }
  }
  Result<PartMeasure> out = InvalidArgument("unreachable");
  std::shared_ptr<const ConvexPolytope> unused_a, unused_b;
  WithHull(a, &unused_a, [&](const auto& ca) {
    WithHull(b, &unused_b, [&](const auto& cb) { out = MeasureConvex(ca, X_WA, cb, X_WB, points, margin); });
  });
  return out;
}

bool SamePair(const StateContact& x, const StateContact& y) {
  return x.self == y.self && x.link == y.link && x.other_link == y.other_link && x.object == y.object &&
         x.attached == y.attached && x.other_attached == y.other_attached;
}

}  // namespace

Result<SceneContactResult> ComputeSceneContacts(const Scene& scene, std::span<const double> q,
                                                const SceneContactRequest& request, SceneCache* cache) {
  if (request.max_points < 1) {
    return InvalidArgument("max_points must be >= 1, got " + std::to_string(request.max_points));
  }
  CollidingPartsRequest parts_request;
  parts_request.max_pairs = request.max_pairs;
  parts_request.world = request.world;
  parts_request.self = request.self;
  parts_request.stop = request.stop;
  Result<CollidingPartsResult> colliding = scene.CollidingParts(q, parts_request, cache);
  if (!colliding.ok()) return colliding.error();
  const CollidingPartsResult& parts = colliding.value();
  SceneContactResult result;
  result.truncated = parts.truncated;
  result.stopped = parts.stopped;
  result.within_limits = parts.within_limits;
  result.pairs_tested = parts.pairs_tested;
  result.stats = parts.stats;
  for (const PosedPartPair& pp : parts.pairs) {
    if (request.stop()) {
      result.stopped = true;
      break;
    }
    Result<PartMeasure> measured =
        MeasurePair(*pp.robot, pp.X_WR, *pp.other, pp.X_WO, true, pp.padding, request.max_points, DistanceRequest{});
    if (!measured.ok()) return measured.error();
    const PartMeasure& m = measured.value();
    result.triangle_pairs += m.triangle_pairs;
    result.stats += m.stats;
    const double depth = pp.padding - m.sd;
    const double lower = pp.padding - m.sd_upper;
    const double upper = pp.padding - m.sd_lower;
    auto it = std::find_if(result.pairs.begin(), result.pairs.end(),
                           [&](const PairPenetration& p) { return SamePair(p.pair, pp.pair); });
    if (it == result.pairs.end()) {
      PairPenetration fresh;
      fresh.pair = pp.pair;
      fresh.depth = fresh.depth_lower = fresh.depth_upper = -kInf;
      fresh.padding = pp.padding;
      result.pairs.push_back(std::move(fresh));
      it = result.pairs.end() - 1;
    }
    PairPenetration& out = *it;
    ++out.geometry_pairs;
    out.depth_lower = std::max(out.depth_lower, lower);
    out.depth_upper = std::max(out.depth_upper, upper);
    if (depth > out.depth) {
      out.depth = depth;
      out.normal_W = m.normal_W;
      out.p_W_robot = m.p_WA;
      out.p_W_other = m.p_WB;
      out.method = m.method;
      out.padding = pp.padding;
    } else if (m.method == PenetrationMethod::kMeshBracket && out.method != PenetrationMethod::kMeshBracket) {
      out.method = PenetrationMethod::kMeshBracket;  // the pair's answer is a bracket once any part is
    }
    for (const SceneContactPoint& p : m.points) out.points.push_back({p.p_W, p.depth + pp.padding});
  }
  for (PairPenetration& p : result.pairs) {
    std::sort(p.points.begin(), p.points.end(),
              [](const SceneContactPoint& x, const SceneContactPoint& y) { return x.depth > y.depth; });
    if (static_cast<int32_t>(p.points.size()) > request.max_points) {
      p.points.resize(static_cast<size_t>(request.max_points));
    }
    p.depth_lower = std::min(p.depth_lower, p.depth);
    p.depth_upper = std::max(p.depth_upper, p.depth);
  }
  std::stable_sort(result.pairs.begin(), result.pairs.end(),
                   [](const PairPenetration& x, const PairPenetration& y) { return x.depth > y.depth; });
  return result;
}

Result<PairSignedDistance> ComputePairSignedDistance(const Scene& scene, std::string_view a, std::string_view b,
                                                     std::span<const double> q,
                                                     const PairSignedDistanceRequest& request, SceneCache* cache,
                                                     std::string_view field_a, std::string_view field_b) {
  if (!(std::isfinite(request.rel_err) && request.rel_err >= 0.0)) {
    return InvalidArgument("rel_err must be finite and >= 0");
  }
  if (!(std::isfinite(request.abs_err) && request.abs_err >= 0.0)) {
    return InvalidArgument("abs_err must be finite and >= 0");
  }
  Result<std::vector<PosedPartPair>> named = scene.NamedParts(a, b, q, cache, field_a, field_b);
  if (!named.ok()) return named.error();
  DistanceRequest apart;
  apart.rel_err = request.rel_err;
  apart.abs_err = request.abs_err;
  PairSignedDistance out;
  out.distance = out.lower = out.upper = kInf;
  bool first = true;
  for (const PosedPartPair& pp : named.value()) {
    if (request.stop()) {
      out.stopped = true;
      return out;
    }
    Result<PartMeasure> measured = MeasurePair(*pp.robot, pp.X_WR, *pp.other, pp.X_WO, false, 0.0, 1, apart);
    if (!measured.ok()) return measured.error();
    const PartMeasure& m = measured.value();
    out.lower = std::min(out.lower, m.sd_lower);
    out.upper = std::min(out.upper, m.sd_upper);
    if (first || m.sd < out.distance) {
      out.pair = pp.pair;
      out.distance = m.sd;
      out.normal_W = m.normal_W;
      out.p_W_robot = m.p_WA;
      out.p_W_other = m.p_WB;
      out.method = m.method;
      first = false;
    }
    out.allowed = pp.allowed;
  }
  out.lower = std::min(out.lower, out.distance);
  out.upper = std::max(out.upper, out.distance);
  return out;
}

}  // namespace proximity::core
