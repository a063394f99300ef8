/// @file
/// Clearance tracking (tracker.h): the broad phase's nearby pairs decided nearest first by warm V-Clip,
/// GJK and hierarchy walks, the k closest reported with normals, features and joint gradients.

#include "proximity/core/contact/tracker.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>

#include "bvh/mesh_query.h"
#include "bvh/query_internal.h"
#include "bvh/shape_query.h"
#include "contact/vclip.h"
#include "scene/scene_impl.h"
#include "contact/epa.h"
#include "narrowphase/triangle.h"
#include "base/numerics.h"

namespace proximity::core {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Nearby pairs one frame may keep (a horizon that keeps more is refused, not truncated: the k nearest
// could be among the pairs left out).
constexpr int32_t kMaxTrackCandidates = 1 << 16;
// When V-Clip hands a query to GJK its distance is within eps_rel^2 (1e-10, GjkOptions' default) of the
// truth; lower bounds take off ten times that.
constexpr double kGjkRelativeGap = 1e-9;
// An exact interval's relative width (query_internal.h), and what GJK certifies on the curved surfaces of
// cylinders and cones (shape_query.h).
using internal::kExactRelativeWidth;
constexpr double kCurvedRelativeWidth = 1e-9;

bool Curved(const Shape& s) { return std::holds_alternative<Cylinder>(s) || std::holds_alternative<Cone>(s); }

// Calls f with the convex shape that stands for g: a primitive itself, or a mesh's hull (exact for a
// mesh that is its hull's surface, a lower bound for any other). False when g is a mesh without a hull.
template <class F>
bool VisitConvex(const Geometry& g, F&& f) {
  if (g.is_cloud()) return false;
  if (g.is_mesh()) {
    if (g.hull == nullptr) return false;
    f(*g.hull);
    return true;
  }
  VisitShape(g.shape, f);
  return true;
}

// Whether g is convex as a solid: a primitive, or a mesh that is its hull's surface.
bool IsConvex(const Geometry& g) { return g.is_primitive() || (g.is_mesh() && g.hull != nullptr && g.hull_is_surface); }

// Coordinates' scale of a posed polyhedron, for the rounding allowance.
double PosedScale(const VClipPolyhedron& p, const RigidTransform& X) { return X.p.cwiseAbs().maxCoeff() + p.scale(); }

TrackFeature Feature(const VClipFeature& f) {
  if (!f.valid()) return {};
  return {static_cast<TrackFeatureType>(static_cast<int8_t>(f.type)), f.index};
}

Vec3 UnitOr(const Vec3& v, const Vec3& fallback) {
  const double n = v.norm();
  return n > 0.0 && std::isfinite(n) ? Vec3(v / n) : fallback;
}

// The distance, at the current poses, between the pair's closest triangles of its last walk (two
// meshes), or the last closest triangle and the primitive (a mesh and a primitive): a pair of points on
// the surfaces, so an upper bound on their distance. False when the pair has no last walk.
template <class State>
bool LastSurfacePoints(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b,
                       const State& st, double* u, Vec3* p_a, Vec3* p_b) {
  if (a.is_mesh() && b.is_mesh()) {
    const DistanceCache* c = st.walk.get();
    if (c == nullptr || c->model_a != a.mesh.get() || c->model_b != b.mesh.get() || c->leaf_a < 0 ||
        c->leaf_b < 0 || c->leaf_a >= a.mesh->num_triangles() || c->leaf_b >= b.mesh->num_triangles()) {
      return false;
    }
    const LeafTriangle& ta = a.mesh->leaf_triangle(c->leaf_a);
    const LeafTriangle& tb = b.mesh->leaf_triangle(c->leaf_b);
    *u = TriangleDistance(X_a * ta.v[0], X_a * ta.v[1], X_a * ta.v[2], X_b * tb.v[0], X_b * tb.v[1], X_b * tb.v[2],
                          p_a, p_b);
    return true;
  }
  const bool mesh_a = a.is_mesh();
  const Geometry& m = mesh_a ? a : b;
  const Geometry& s = mesh_a ? b : a;
  const RigidTransform& X_m = mesh_a ? X_a : X_b;
  const RigidTransform& X_s = mesh_a ? X_b : X_a;
  if (st.shape_walk.mesh != m.mesh.get() || st.shape_walk.leaf < 0 || st.shape_walk.leaf >= m.mesh->num_triangles()) {
    return false;
  }
  const LeafTriangle& t = m.mesh->leaf_triangle(st.shape_walk.leaf);
  const Triangle tri{X_m * t.v[0], X_m * t.v[1], X_m * t.v[2]};
  GjkResult g;
  VisitConvex(s, [&](const auto& shape) { g = GjkDistance(tri, RigidTransform(), shape, X_s); });
  *u = (g.p_WA - g.p_WB).norm();  // both points lie on their sets: a true upper bound
  *p_a = mesh_a ? g.p_WA : g.p_WB;
  *p_b = mesh_a ? g.p_WB : g.p_WA;
  return true;
}

Status ValidateTrackRequest(const TrackRequest& r) {
  if (!std::isfinite(r.horizon) || r.horizon < 0.0 || r.horizon > kWorldExtent) {
    return InvalidArgument("horizon must be finite and in [0, " + std::to_string(kWorldExtent) + "] m, got " +
                           std::to_string(r.horizon));
  }
  if (r.max_pairs < 1 || r.max_pairs > kMaxTrackPairs) {
    return InvalidArgument("max_pairs must be in [1, " + std::to_string(kMaxTrackPairs) + "], got " +
                           std::to_string(r.max_pairs));
  }
  DistanceRequest budget{r.rel_err, r.abs_err, kInf};
  return ValidateDistanceRequest(budget);
}

}  // namespace


namespace {

// The V-Clip polyhedron standing for g (its hull, a box, a polytope); null for curved primitives,
// meshes without a hull and flat boxes.
Result<std::shared_ptr<const VClipPolyhedron>> BuildPolyhedron(const Geometry& g) {
  std::shared_ptr<const ConvexPolytope> polytope;
  if (g.is_cloud()) return std::shared_ptr<const VClipPolyhedron>();
  if (g.is_mesh()) {
    polytope = g.hull;
  } else if (const auto* p = std::get_if<std::shared_ptr<const ConvexPolytope>>(&g.shape)) {
    polytope = *p;
  } else if (const auto* b = std::get_if<Box>(&g.shape)) {
    std::vector<Vec3> corners;
    for (int i = 0; i < 8; ++i) {
      corners.emplace_back((i & 1 ? 1 : -1) * b->half_extents.x(), (i & 2 ? 1 : -1) * b->half_extents.y(),
                           (i & 4 ? 1 : -1) * b->half_extents.z());
    }
    Result<std::shared_ptr<const ConvexPolytope>> hull = ConvexPolytope::Build(corners, "box");
    if (hull.ok()) polytope = hull.value();  // a flat box has no polyhedron: GJK decides it
  }
  if (polytope == nullptr) return std::shared_ptr<const VClipPolyhedron>();
  return VClipPolyhedron::Build(*polytope);
}

int64_t PolyhedronBytes(const VClipPolyhedron& p) {
  return static_cast<int64_t>(sizeof(p) + p.vertices().size() * sizeof(VClipPolyhedron::Vertex) +
                              p.edges().size() * sizeof(VClipPolyhedron::Edge) +
                              p.faces().size() * sizeof(VClipPolyhedron::Face) +
                              p.planes().size() * sizeof(VClipVoronoiPlane) +
                              (p.vertex_edges().size() + p.loop_vertices().size() + p.loop_edges().size()) *
                                  sizeof(int32_t));
}

}  // namespace

Result<std::shared_ptr<const TrackingGeometry>> TrackingGeometry::Build(const Scene& scene) {
  std::shared_ptr<TrackingGeometry> g(new TrackingGeometry());
  g->scene_ = scene.serial();
  // Geometry shared by several parts (one link mesh, one box shape object) gets one polyhedron.
  std::unordered_map<const void*, std::shared_ptr<const VClipPolyhedron>> built;
  auto make = [&](const Geometry& geometry) -> Result<std::shared_ptr<const VClipPolyhedron>> {
    const void* key = geometry.is_mesh() ? static_cast<const void*>(geometry.hull.get()) : nullptr;
    if (key != nullptr) {
      auto it = built.find(key);
      if (it != built.end()) return it->second;
    }
    Result<std::shared_ptr<const VClipPolyhedron>> p = BuildPolyhedron(geometry);
    if (!p.ok()) return p.error();
    if (p.value() != nullptr) g->bytes_ += PolyhedronBytes(*p.value());
    if (key != nullptr) built.emplace(key, p.value());
    return p.value();
  };
  g->robot_.reserve(static_cast<size_t>(internal::Impl(scene).num_robot_parts()));
  for (int32_t i = 0; i < internal::Impl(scene).num_robot_parts(); ++i) {
    Result<std::shared_ptr<const VClipPolyhedron>> p = make(internal::Impl(scene).robot_part_geometry(i));
    if (!p.ok()) return p.error();
    g->robot_.push_back(p.value());
  }
  g->world_.reserve(static_cast<size_t>(internal::Impl(scene).num_world_parts()));
  for (int32_t k = 0; k < internal::Impl(scene).num_world_parts(); ++k) {
    Result<std::shared_ptr<const VClipPolyhedron>> p = make(internal::Impl(scene).world_part_geometry(k));
    if (!p.ok()) return p.error();
    g->world_.push_back(p.value());
  }
  g->bytes_ += static_cast<int64_t>(sizeof(TrackingGeometry) + (g->robot_.size() + g->world_.size()) *
                                                                  sizeof(std::shared_ptr<const VClipPolyhedron>));
  return std::shared_ptr<const TrackingGeometry>(std::move(g));
}

// What a Tracker keeps between frames (its warm starts per pair and buffers) and the frame's steps.
class Tracker::Impl {
 public:
  Impl(std::shared_ptr<const Scene> scene, std::shared_ptr<const TrackingGeometry> geometry);
  Status Update(std::span<const double> q, const TrackRequest& request, TrackResult* out);
  void Reset() { pairs_.clear(); }
  int64_t MemoryBytes() const;

  struct PairState {
    uint64_t frame = 0;  // last frame the pair was near
    VClipCache vclip;
    GjkCache gjk;
    std::unique_ptr<DistanceCache> walk;
    MeshShapeDistanceCache shape_walk;
    TrackFeature feature_robot, feature_other;
    Vec3 normal_W = Vec3::Zero();
    bool has_features = false;
  };
  // A nearby pair on its way through the frame: its cheap bound, and whether the hulls have raised it.
  struct Candidate {
    int32_t index;   // into the broad phase's pairs
    double cheap;    // certified lower bound on the padded clearance
    bool refined;
  };

  // One nearby pair's geometry this frame, and what deciding it has found so far (below).
  struct PairView;
  struct PairAnswer;
  // Update's steps: the broad phase and each nearby pair's warm-start state; the hulls' lower bound on a
  // non-convex pair; a convex pair's distance (V-Clip or GJK/EPA, and the surface check of a convex
  // mesh); the exact walk (false: the pair is beyond `t`); the k nearest with their gradients.
  Status Gather(std::span<const double> q, const TrackRequest& request);
  PairView View(const NearbyPart& p, const TrackRequest& request) const;
  double HullBound(const PairView& v, PairState& st, double t, TrackResult* result) const;
  Status DecideConvex(const PairView& v, PairState& st, const TrackRequest& request, TrackResult* result,
                      TrackedPair* tp, PairAnswer* answer) const;
  Result<bool> Walk(const PairView& v, PairState& st, double t, double cheap, const TrackRequest& request,
                    TrackResult* result, TrackedPair* tp, PairAnswer* answer) const;
  void Report(const TrackRequest& request, TrackResult* result);

  std::shared_ptr<const Scene> scene_;
  std::shared_ptr<const TrackingGeometry> geometry_;
  SceneCache cache_;
  uint64_t frame_ = 0;
  std::unordered_map<uint64_t, PairState> pairs_;
  // Buffers kept between frames.
  NearbyPartsResult nearby_;
  std::vector<PairState*> states_;
  std::vector<Candidate> heap_;
  std::vector<TrackedPair> decided_;
  std::vector<std::vector<double>> best_;  // KBest's heaps
  std::vector<int32_t> order_, count_;     // Report's
  int64_t list_bytes_ = 0;                 // the broad phase's list in cache_ (SceneCacheData::NearbyList)
  TrackResult result_;  // the frame being made, in the storage of a frame the caller gave back
};

Tracker::Impl::Impl(std::shared_ptr<const Scene> scene, std::shared_ptr<const TrackingGeometry> geometry)
    : scene_(std::move(scene)), geometry_(std::move(geometry)) {
  if (geometry_ == nullptr || !geometry_->Fits(*scene_)) {
    // Polyhedra of hulls a scene accepted always build; a failure leaves V-Clip out (GJK decides).
    Result<std::shared_ptr<const TrackingGeometry>> g = TrackingGeometry::Build(*scene_);
    if (g.ok()) geometry_ = g.value();
  }
}

int64_t Tracker::Impl::MemoryBytes() const {
  int64_t bytes = static_cast<int64_t>(sizeof(*this));
  for (const auto& [key, s] : pairs_) {
    bytes += static_cast<int64_t>(sizeof(key) + sizeof(s));
    if (s.walk) bytes += static_cast<int64_t>(sizeof(DistanceCache) + s.walk->front.capacity() * sizeof(NodePairBound));
  }
  bytes += static_cast<int64_t>(nearby_.pairs.capacity() * sizeof(NearbyPart) + states_.capacity() * sizeof(void*) +
                                heap_.capacity() * sizeof(Candidate) + decided_.capacity() * sizeof(TrackedPair) +
                                (order_.capacity() + count_.capacity()) * sizeof(int32_t) +
                                result_.pairs.capacity() * sizeof(TrackedPair));
  for (const TrackedPair& tp : result_.pairs) bytes += static_cast<int64_t>(tp.gradient.capacity() * sizeof(double));
  for (const std::vector<double>& h : best_) bytes += static_cast<int64_t>(sizeof(h) + h.capacity() * sizeof(double));
  bytes += list_bytes_;
  return bytes;  // the shared TrackingGeometry is counted by its owner
}

struct Tracker::Impl::PairView {
  const NearbyPart& p;
  const Geometry& a;
  const Geometry& b;
  const RigidTransform& X_a;
  const RigidTransform& X_b;
  double pad;
  const VClipPolyhedron* poly_a;  // both set when V-Clip serves the pair's hulls
  const VClipPolyhedron* poly_b;
  bool convex;
  bool has_mesh;
};

struct Tracker::Impl::PairAnswer {
  double lower_raw = 0.0, upper_raw = kInf, signed_raw = 0.0;
  Vec3 last_normal = Vec3::UnitZ();
  Vec3 overlap_normal = Vec3::Zero();  // set when convex shapes overlap
  bool need_walk = false;
  double hull_floor = 0.0;  // a certified lower bound on the raw distance from the convex stand-ins
};

namespace {

// The k best upper bounds so far, overall or per link (a self pair counts for both of its links): a pair
// whose lower bound exceeds them cannot be reported. Its heaps are the caller's (kept between frames).
class KBest {
 public:
  KBest(int32_t k, bool per_link, int32_t num_links, double horizon, std::vector<std::vector<double>>* heaps)
      : k_(k), per_link_(per_link), horizon_(horizon), best_(*heaps) {
    best_.resize(per_link ? static_cast<size_t>(num_links) : 1);
    for (std::vector<double>& h : best_) h.clear();
  }
  double Threshold(const StateContact& pair) const {
    double t = LinkThreshold(pair.link);
    if (per_link_ && pair.self) t = std::max(t, LinkThreshold(pair.other_link));
    return t;
  }
  void Record(const StateContact& pair, double upper) {
    Push(pair.link, upper);
    if (per_link_ && pair.self) Push(pair.other_link, upper);
  }

 private:
  // Each heap holds its link's k smallest upper bounds, the largest of them on top.
  double LinkThreshold(int32_t link) const {
    const std::vector<double>& h = best_[per_link_ ? static_cast<size_t>(link) : 0];
    return static_cast<int32_t>(h.size()) < k_ ? horizon_ : std::min(horizon_, h.front());
  }
  void Push(int32_t link, double upper) {
    std::vector<double>& h = best_[per_link_ ? static_cast<size_t>(link) : 0];
    h.push_back(upper);
    std::push_heap(h.begin(), h.end());
    if (static_cast<int32_t>(h.size()) > k_) {
      std::pop_heap(h.begin(), h.end());
      h.pop_back();
    }
  }
  int32_t k_;
  bool per_link_;
  double horizon_;
  std::vector<std::vector<double>>& best_;
};

}  // namespace

Status Tracker::Impl::Gather(std::span<const double> q, const TrackRequest& request) {
  NearbyPartsRequest near;
  near.horizon = request.horizon;
  near.world = request.world;
  near.self = request.self;
  near.max_pairs = kMaxTrackCandidates;
  if (Status s = internal::Impl(*scene_).NearbyParts(q, near, SceneCacheAccess::Data(&cache_), &nearby_); !s.ok()) return s;
  if (nearby_.truncated) {
    return InvalidArgument("horizon " + std::to_string(request.horizon) + " m keeps more than " +
                           std::to_string(kMaxTrackCandidates) + " geometry pairs near each other: lower it");
  }
  const SceneCache::Data::NearbyList& list = SceneCacheAccess::Data(&cache_)->nearby_list;
  list_bytes_ = static_cast<int64_t>(list.boxes.capacity() * sizeof(Aabb) +
                                     list.world_pairs.capacity() * sizeof(list.world_pairs[0]) +
                                     list.self_pairs.capacity() * sizeof(int32_t));
  ++frame_;
  // Warm-start state per pair, keyed by the pair's indices in the scene.
  const auto num_robot = static_cast<uint64_t>(nearby_.num_robot_parts);
  const auto num_world = static_cast<uint64_t>(nearby_.num_world_parts);
  states_.resize(nearby_.pairs.size());
  for (size_t i = 0; i < nearby_.pairs.size(); ++i) {
    const NearbyPart& p = nearby_.pairs[i];
    const uint64_t a = static_cast<uint64_t>(p.robot_part), b = static_cast<uint64_t>(p.other_part);
    const uint64_t key = p.pair.self ? num_robot * num_world + a * num_robot + b : a * num_world + b;
    states_[i] = &pairs_[key];  // node-based: references stay valid as the map grows
    states_[i]->frame = frame_;
  }
  return {};
}

Tracker::Impl::PairView Tracker::Impl::View(const NearbyPart& p, const TrackRequest& request) const {
  const Geometry& a = *p.robot;
  const Geometry& b = *p.other;
  const bool use_vclip = request.convex == TrackConvexMethod::kVClip;
  const VClipPolyhedron* poly_a = use_vclip && geometry_ != nullptr ? geometry_->robot(p.robot_part) : nullptr;
  const VClipPolyhedron* poly_b = poly_a == nullptr         ? nullptr
                                  : p.pair.self ? geometry_->robot(p.other_part)
                                                      : geometry_->world(p.other_part);
  return {p, a, b, *p.X_WR, *p.X_WO, p.padding, poly_a, poly_b, IsConvex(a) && IsConvex(b),
          a.is_mesh() || b.is_mesh()};
}

// The hulls' distance bounds the meshes' from below (each mesh lies inside its hull).
double Tracker::Impl::HullBound(const PairView& v, PairState& st, double t, TrackResult* result) const {
  if (v.poly_a != nullptr && v.poly_b != nullptr) {
    const VClipResult r = VClipDistance(*v.poly_a, v.X_a, *v.poly_b, v.X_b, &st.vclip);
    ++result->vclip;
    result->vclip_transitions += r.transitions;
    return r.penetrating ? 0.0
                         : std::max(0.0, r.fell_back_to_gjk ? r.distance * (1.0 - kGjkRelativeGap) : r.distance) -
                               RoundingAllowance(PosedScale(*v.poly_a, v.X_a) + PosedScale(*v.poly_b, v.X_b));
  }
  double hull = -1.0;
  VisitConvex(v.a, [&](const auto& sa) {
    VisitConvex(v.b, [&](const auto& sb) {
      GjkOptions o;
      o.lower_bound_target = t + v.pad;
      const GjkResult g = GjkDistance(sa, v.X_a, sb, v.X_b, &st.gjk, o);
      ++result->gjk;
      hull = g.intersecting ? 0.0 : g.lower_bound;
    });
  });
  return hull;
}

Status Tracker::Impl::DecideConvex(const PairView& v, PairState& st, const TrackRequest& request, TrackResult* result,
                                   TrackedPair* tp, PairAnswer* ans) const {
  // GJK, and EPA when they overlap, on the pair's convex shapes, warm from the pair's last simplex.
  auto signed_distance = [&]() -> Result<SignedDistanceResult> {
    Result<SignedDistanceResult> out = Error{ErrorCode::kInternal, "no convex shape"};
    VisitConvex(v.a, [&](const auto& sa) {
      VisitConvex(v.b, [&](const auto& sb) { out = ComputeSignedDistance(sa, v.X_a, sb, v.X_b, &st.gjk); });
    });
    ++result->gjk;
    return out;
  };
  // A convex mesh lies inside its hull but on it only up to the tolerance it was accepted with (a vertex
  // may sit a little inside a merged face): the hulls' distance (lower_raw) is a lower bound, and the
  // upper bound must be realised on the mesh surfaces. The pair's last closest triangles give one in a
  // single test; when it meets the hulls' bound within the budget (or rounding) the pair is settled,
  // otherwise the warm walk decides it.
  auto surface_upper = [&] {
    double u = kInf;
    Vec3 p_a, p_b;
    if (!LastSurfacePoints(v.a, v.X_a, v.b, v.X_b, st, &u, &p_a, &p_b)) {
      ans->need_walk = true;
      ans->hull_floor = ans->lower_raw;
      return;
    }
    const double lo = std::max(0.0, ans->lower_raw - v.pad), hi = std::max(0.0, u - v.pad);
    // Exact up to rounding, and on curved primitives up to what GJK certifies there (mesh_query.h).
    const bool curved = (!v.a.is_mesh() && Curved(v.a.shape)) || (!v.b.is_mesh() && Curved(v.b.shape));
    const double slack =
        std::max((curved ? kCurvedRelativeWidth : kExactRelativeWidth) * hi,
                 2.0 * RoundingAllowance(v.X_a.p.cwiseAbs().maxCoeff() + v.X_b.p.cwiseAbs().maxCoeff() + 1.0));
    if (hi <= lo * (1.0 + request.rel_err) + slack || hi - lo <= request.abs_err + slack) {
      ans->upper_raw = u;
      tp->distance.p_W_robot = p_a;
      tp->distance.p_W_other = p_b;
      ++result->surface_checks;
    } else {
      ans->need_walk = true;
      ans->hull_floor = ans->lower_raw;
    }
  };
  if (v.poly_a != nullptr && v.poly_b != nullptr) {
    const VClipResult r = VClipDistance(*v.poly_a, v.X_a, *v.poly_b, v.X_b, &st.vclip);
    ++result->vclip;
    result->vclip_transitions += r.transitions;
    tp->method = TrackMethod::kVClip;
    tp->feature_robot = Feature(r.feature_a);
    tp->feature_other = Feature(r.feature_b);
    if (r.penetrating) {
      // Overlapping: EPA gives the depth and the direction that separates them.
      Result<SignedDistanceResult> sd = signed_distance();
      if (!sd.ok()) return sd.error();
      ans->signed_raw = std::min(0.0, sd.value().distance);
      tp->normal_W = UnitOr(-sd.value().normal_W, ans->last_normal);
      tp->distance.p_W_robot = sd.value().p_WA;
      tp->distance.p_W_other = sd.value().p_WB;
      ans->lower_raw = ans->upper_raw = 0.0;
      ans->overlap_normal = tp->normal_W;
    } else {
      ans->upper_raw = std::max(r.distance, (r.p_WA - r.p_WB).norm());
      ans->lower_raw = std::max(0.0, (r.fell_back_to_gjk ? r.distance * (1.0 - kGjkRelativeGap) : r.distance) -
                                         RoundingAllowance(PosedScale(*v.poly_a, v.X_a) + PosedScale(*v.poly_b, v.X_b)));
      ans->signed_raw = r.distance;
      tp->normal_W = UnitOr(r.p_WA - r.p_WB, ans->last_normal);
      tp->distance.p_W_robot = r.p_WA;
      tp->distance.p_W_other = r.p_WB;
      if (v.has_mesh) surface_upper();
    }
    return {};
  }
  Result<SignedDistanceResult> sd = signed_distance();
  if (!sd.ok()) return sd.error();
  const SignedDistanceResult& r = sd.value();
  tp->distance.p_W_robot = r.p_WA;
  tp->distance.p_W_other = r.p_WB;
  tp->normal_W = UnitOr(-r.normal_W, ans->last_normal);
  if (r.intersecting || r.distance <= 0.0) {
    ans->lower_raw = ans->upper_raw = 0.0;
    ans->signed_raw = std::min(0.0, r.distance);
    ans->overlap_normal = tp->normal_W;
  } else {
    ans->upper_raw = std::max(r.distance, (r.p_WA - r.p_WB).norm());
    ans->lower_raw = std::max(0.0, r.lower_bound);
    ans->signed_raw = r.distance;
  }
  tp->method = TrackMethod::kGjk;
  if (v.has_mesh && ans->overlap_normal.squaredNorm() == 0.0) surface_upper();
  return {};
}

// The exact walk, warm from the pair's last triangles (and, between two meshes, its last front); it may
// stop once it proves the pair beyond what this frame still reports (then false).
Result<bool> Tracker::Impl::Walk(const PairView& v, PairState& st, double t, double cheap, const TrackRequest& request,
                                 TrackResult* result, TrackedPair* tp, PairAnswer* ans) const {
  DistanceRequest req{request.rel_err, request.abs_err, t + v.pad};
  req.known_lower = std::max({0.0, ans->hull_floor, cheap + v.pad});  // certified: boxes or hulls
  const Geometry& a = v.a;
  const Geometry& b = v.b;
  auto walk = [&]() -> Result<DistanceResult> {
    ++result->walks;
    if (a.is_cloud() || b.is_cloud()) return GeometryDistance(a, v.X_a, b, v.X_b, req);  // cold: the cloud's tree
    if (a.is_mesh() && b.is_mesh()) {
      if (st.walk == nullptr) st.walk = std::make_unique<DistanceCache>();
      // Poses from the scene, and a budget Update validated.
      return internal::ComputeDistanceTrusted(*a.mesh, v.X_a, *b.mesh, v.X_b, req, st.walk.get());
    }
    if (a.is_mesh()) return ComputeMeshShapeDistance(*a.mesh, v.X_a, b.shape, v.X_b, req, &st.shape_walk);
    Result<DistanceResult> r = ComputeMeshShapeDistance(*b.mesh, v.X_b, a.shape, v.X_a, req, &st.shape_walk);
    if (r.ok()) {
      std::swap(r.value().p_WA, r.value().p_WB);
      std::swap(r.value().triangles.triangle_a, r.value().triangles.triangle_b);
    }
    return r;
  };
  Result<DistanceResult> r = walk();
  if (!r.ok()) return r.error();
  // A relative budget on the raw distance is too loose for the padded clearance: when it is missed
  // there, the exact distance meets any budget.
  auto padded_met = [&](const DistanceResult& d) {
    const double lo = std::max(0.0, d.lower_bound - v.pad), hi = std::max(0.0, d.upper_bound - v.pad);
    return hi <= lo * (1.0 + request.rel_err) || hi - lo <= request.abs_err;
  };
  if (v.pad > 0.0 && !r.value().beyond_max_distance && !r.value().intersecting && !padded_met(r.value())) {
    req.rel_err = req.abs_err = 0.0;
    req.known_lower = 0.0;
    r = walk();
    if (!r.ok()) return r.error();
  }
  const DistanceResult& d = r.value();
  result->stats += d.stats;
  if (d.beyond_max_distance) return false;  // at least t away: neither reported nor within the horizon
  tp->method = TrackMethod::kWalk;
  ans->lower_raw = d.intersecting ? 0.0 : std::max(d.lower_bound, ans->hull_floor);
  ans->upper_raw = d.intersecting ? 0.0 : d.upper_bound;
  ans->signed_raw = ans->upper_raw;
  tp->distance.p_W_robot = d.p_WA;
  tp->distance.p_W_other = d.p_WB;
  const Vec3 touching = ans->overlap_normal.squaredNorm() > 0.0 ? ans->overlap_normal : ans->last_normal;
  tp->normal_W = d.intersecting ? touching : UnitOr(d.p_WA - d.p_WB, touching);
  if (!v.convex) {
    // Convex pairs keep the features of their polyhedra; the others name the closest triangles.
    tp->feature_robot = d.triangles.triangle_a >= 0 ? TrackFeature{TrackFeatureType::kTriangle, d.triangles.triangle_a}
                                                    : TrackFeature{};
    tp->feature_other = d.triangles.triangle_b >= 0 ? TrackFeature{TrackFeatureType::kTriangle, d.triangles.triangle_b}
                                                    : TrackFeature{};
  }
  return true;
}

// The k nearest of the decided pairs, overall or per link, with their gradients.
void Tracker::Impl::Report(const TrackRequest& request, TrackResult* result) {
  const RobotModel& robot = scene_->robot();
  const int32_t k = request.max_pairs;
  const bool per_link = request.per_link;
  // Nearest first; pairs at the same bound in the order they were decided.
  order_.resize(decided_.size());
  std::iota(order_.begin(), order_.end(), 0);
  std::sort(order_.begin(), order_.end(), [&](int32_t x, int32_t y) {
    const double ux = decided_[x].distance.upper, uy = decided_[y].distance.upper;
    return ux < uy || (ux == uy && x < y);
  });
  count_.assign(per_link ? static_cast<size_t>(robot.num_links()) : 1, 0);
  // The reported pairs go into result->pairs' elements in turn, each keeping its gradient's storage.
  std::vector<TrackedPair>& pairs = result->pairs;
  size_t used = 0;
  for (const int32_t d : order_) {
    TrackedPair& tp = decided_[d];
    const StateContact pair = tp.distance.pair;
    const size_t la = per_link ? static_cast<size_t>(pair.link) : 0;
    const size_t lb = per_link && pair.self ? static_cast<size_t>(pair.other_link) : la;
    if (count_[la] >= k && count_[lb] >= k) continue;
    ++count_[la];
    if (lb != la) ++count_[lb];
    if (tp.same_features) ++result->same_features;
    if (used == pairs.size()) pairs.emplace_back();
    TrackedPair& out = pairs[used++];
    out.gradient.swap(tp.gradient);  // the element keeps its gradient's storage
    out = std::move(tp);
    out.gradient.clear();
    if (request.gradient) {
      // d/dq of |p_robot - p_other| with both points fixed to their bodies: n . (J_robot - J_other).
      out.gradient.assign(static_cast<size_t>(robot.num_positions()), 0.0);
      robot.AddPointGradient(pair.link, out.distance.p_W_robot, out.normal_W, cache_.link_poses(), out.gradient);
      if (pair.self) {
        robot.AddPointGradient(pair.other_link, out.distance.p_W_other, Vec3(-out.normal_W), cache_.link_poses(),
                               out.gradient);
      }
    }
  }
  pairs.resize(used);
}

Status Tracker::Impl::Update(std::span<const double> q, const TrackRequest& request, TrackResult* out) {
  if (Status s = ValidateTrackRequest(request); !s.ok()) return s;
  if (Status s = Gather(q, request); !s.ok()) return s;
  const std::vector<NearbyPart>& pairs = nearby_.pairs;
  const int32_t n = static_cast<int32_t>(pairs.size());
  // The frame is made in the tracker's own result (its reported pairs' storage kept from frame to frame)
  // and swapped with *out at the end, which leaves *out as it was on an error.
  TrackResult& result = result_;
  std::vector<TrackedPair> kept_pairs = std::move(result.pairs);
  result = TrackResult{};
  result.pairs = std::move(kept_pairs);
  result.within_limits = nearby_.within_limits;
  result.candidates = n;
  KBest best(request.max_pairs, request.per_link, scene_->robot().num_links(), request.horizon, &best_);
  // Candidates leave a min-heap by their cheap bound; a non-convex pair goes back once with its hulls'
  // bound before it is walked, so that walks run in order of the tighter bounds.
  heap_.clear();
  for (int32_t i = 0; i < n; ++i) heap_.push_back({i, pairs[i].box_clearance, false});
  auto later = [](const Candidate& x, const Candidate& y) { return x.cheap > y.cheap; };
  std::make_heap(heap_.begin(), heap_.end(), later);
  decided_.clear();
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    Candidate c = heap_.back();
    heap_.pop_back();
    const NearbyPart& p = pairs[c.index];
    const double t = best.Threshold(p.pair);
    // Beyond the horizon, or no better than the k-th best found (a tie cannot change what is reported).
    if (c.cheap > t || (c.cheap == t && t < request.horizon)) {
      if (!request.per_link) break;  // every remaining bound is at least this one
      continue;
    }
    if (request.stop()) {
      result.stopped = true;
      result.pairs.clear();
      std::swap(result, *out);
      return {};
    }
    PairState& st = *states_[c.index];
    const PairView v = View(p, request);
    if (!v.convex && !c.refined) {
      c.refined = true;
      const double hull = HullBound(v, st, t, &result);
      if (hull - v.pad > c.cheap) {
        c.cheap = hull - v.pad;
        heap_.push_back(c);
        std::push_heap(heap_.begin(), heap_.end(), later);
        continue;
      }
    }
    TrackedPair tp;
    tp.robot_part = p.robot_part;
    tp.other_part = p.other_part;
    tp.distance.pair = p.pair;
    PairAnswer ans;
    const Vec3 centres = UnitOr(v.X_a.p - v.X_b.p, Vec3::UnitZ());
    ans.last_normal = st.normal_W.squaredNorm() > 0.0 ? st.normal_W : centres;
    if (v.convex) {
      if (Status s = DecideConvex(v, st, request, &result, &tp, &ans); !s.ok()) return s;
    }
    // Convex solids that overlap have distance 0; a convex mesh is a surface, though, and one wholly
    // inside the other is apart from it: overlapping pairs with a mesh side go on to the walk, which
    // keeps the surface semantics, with the overlap's normal.
    if (!v.convex || (v.has_mesh && ans.overlap_normal.squaredNorm() > 0.0)) ans.need_walk = true;
    if (ans.need_walk) {
      Result<bool> kept = Walk(v, st, t, c.cheap, request, &result, &tp, &ans);
      if (!kept.ok()) return kept.status();
      if (!kept.value()) continue;
    }
    ++result.decided;
    tp.distance.upper = std::max(0.0, ans.upper_raw - v.pad);
    // The cheap bound holds for the pair too (and may exceed what a walk stopped at).
    tp.distance.lower = std::min(tp.distance.upper, std::max({0.0, ans.lower_raw - v.pad, c.cheap}));
    tp.signed_distance = ans.signed_raw - v.pad;
    tp.same_features = st.has_features && st.feature_robot == tp.feature_robot && st.feature_other == tp.feature_other;
    st.feature_robot = tp.feature_robot;
    st.feature_other = tp.feature_other;
    st.has_features = true;
    st.normal_W = tp.normal_W;
    if (tp.distance.lower > request.horizon) continue;
    best.Record(p.pair, tp.distance.upper);
    decided_.push_back(std::move(tp));
  }
  Report(request, &result);
  // Pairs that left the horizon are forgotten.
  for (auto it = pairs_.begin(); it != pairs_.end();) {
    it = it->second.frame == frame_ ? std::next(it) : pairs_.erase(it);
  }
  std::swap(result, *out);
  return {};
}

Tracker::Tracker(std::shared_ptr<const Scene> scene, std::shared_ptr<const TrackingGeometry> geometry)
    : impl_(std::make_unique<Impl>(std::move(scene), std::move(geometry))) {}
Tracker::~Tracker() = default;
Tracker::Tracker(Tracker&& other) noexcept = default;
Tracker& Tracker::operator=(Tracker&& other) noexcept = default;

Result<TrackResult> Tracker::Update(std::span<const double> q, const TrackRequest& request) {
  TrackResult result;
  if (Status s = impl_->Update(q, request, &result); !s.ok()) return s.error();
  return result;
}
Status Tracker::Update(std::span<const double> q, const TrackRequest& request, TrackResult* out) {
  return impl_->Update(q, request, out);
}
void Tracker::Reset() { impl_->Reset(); }
const std::shared_ptr<const Scene>& Tracker::scene() const { return impl_->scene_; }
size_t Tracker::tracked_pairs() const { return impl_->pairs_.size(); }
int64_t Tracker::MemoryBytes() const { return impl_->MemoryBytes() + static_cast<int64_t>(sizeof(Tracker)); }

}  // namespace proximity::core
