#include "bvh/shape_query.h"

#include "bvh/query_internal.h"

#include "bvh/bound_heap.h"
#include "bvh/walk_stack.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "narrowphase/gjk.h"
#include "base/numerics.h"

namespace proximity::core {
namespace {

constexpr int kStackReserve = 128;

// GJK settings at the leaves: eps_rel^2 = 1e-12 matches the exact-answer width (kExactRelativeWidth) on
// shapes where GJK converges exactly. Rounding stops it near 1e-9 on cylinders and cones, so there the
// default (eps_rel^2 = 1e-10) ends the loop instead of running it into the no-progress exit.
template <class ShapeT>
GjkOptions LeafGjkOptions() {
  GjkOptions o;
  if constexpr (!std::is_same_v<ShapeT, Cylinder> && !std::is_same_v<ShapeT, Cone>) o.rel_tolerance = 1e-6;
  return o;
}


// Whether triangle (v0, v1, v2), in the box's frame, shares a point with the box {|x_i| <= h_i}:
// Akenine-Möller's 13 separating axes (the 9 edge-axis crosses, the 3 box normals, the triangle
// normal). Closed: touching counts. Zero-area triangles are handled (their normal axis is void and
// the edge crosses cover the segment case). Callers pass h inflated by the contact tolerance.
bool TriangleBoxOverlap(const Vec3& v0, const Vec3& v1, const Vec3& v2, const Vec3& h) {
  const Vec3 e[3] = {v1 - v0, v2 - v1, v0 - v2};
  for (int i = 0; i < 3; ++i) {
    const Vec3& f = e[i];
    // Axis u_x × f = (0, -f.z, f.y), and cyclically; the projections of v0, v1, v2 on it.
    {
      const double p0 = -f.z() * v0.y() + f.y() * v0.z();
      const double p1 = -f.z() * v1.y() + f.y() * v1.z();
      const double p2 = -f.z() * v2.y() + f.y() * v2.z();
      const double r = h.y() * std::abs(f.z()) + h.z() * std::abs(f.y());
      if (std::min({p0, p1, p2}) > r || std::max({p0, p1, p2}) < -r) return false;
    }
    {
      const double p0 = f.z() * v0.x() - f.x() * v0.z();
      const double p1 = f.z() * v1.x() - f.x() * v1.z();
      const double p2 = f.z() * v2.x() - f.x() * v2.z();
      const double r = h.x() * std::abs(f.z()) + h.z() * std::abs(f.x());
      if (std::min({p0, p1, p2}) > r || std::max({p0, p1, p2}) < -r) return false;
    }
    {
      const double p0 = -f.y() * v0.x() + f.x() * v0.y();
      const double p1 = -f.y() * v1.x() + f.x() * v1.y();
      const double p2 = -f.y() * v2.x() + f.x() * v2.y();
      const double r = h.x() * std::abs(f.y()) + h.y() * std::abs(f.x());
      if (std::min({p0, p1, p2}) > r || std::max({p0, p1, p2}) < -r) return false;
    }
  }
  for (int j = 0; j < 3; ++j) {
    if (std::min({v0[j], v1[j], v2[j]}) > h[j] || std::max({v0[j], v1[j], v2[j]}) < -h[j]) return false;
  }
  const Vec3 n = e[0].cross(e[1]);
  return std::abs(n.dot(v0)) <= h.dot(n.cwiseAbs());
}

Obb BoundingObb(const Box& b) { return {Mat3::Identity(), Vec3::Zero(), b.half_extents}; }
Obb BoundingObb(const Sphere& s) { return {Mat3::Identity(), s.center, Vec3::Constant(s.radius)}; }
Obb BoundingObb(const Cylinder& c) { return {Mat3::Identity(), Vec3::Zero(), Vec3(c.radius, c.radius, c.half_length)}; }
Obb BoundingObb(const Capsule& c) {
  return {Mat3::Identity(), Vec3::Zero(), Vec3(c.radius, c.radius, c.half_length + c.radius)};
}
Obb BoundingObb(const Cone& c) { return {Mat3::Identity(), Vec3::Zero(), Vec3(c.radius, c.radius, c.half_height)}; }
Obb BoundingObb(const ConvexPolytope& p) {
  Aabb box;
  for (const Vec3& v : p.vertices()) box.Extend(v);
  return {Mat3::Identity(), box.center(), box.half_extents()};
}

// A mesh (frame M) against one shape (frame S) in M: the shape's bounding box and pose are mapped into
// M once, and every node test and leaf test runs against them.
template <class ShapeT>
struct MeshShapeWalk {
  const MeshModel& mesh;
  const ShapeT& shape;
  RigidTransform X_MS;
  RigidTransform X_SM;
  Mat3 R_Mb;     // Axes of the shape's bounding box in M.
  Vec3 p_Mb;     // Its centre in M.
  Vec3 half_b;   // Its half extents.
  QueryStats stats;
  GjkCache cache;
  GjkOptions gjk_options = LeafGjkOptions<ShapeT>();
  // For boxes: the half extents grown by GJK's contact tolerance (raised to the rounding level of
  // the coordinates), so that the separating-axis test and GJK agree on touching faces.
  Vec3 box_contact_extents = Vec3::Zero();

  MeshShapeWalk(const MeshModel& m, const ShapeT& s, const RigidTransform& X_MS_in)
      : mesh(m), shape(s), X_MS(X_MS_in), X_SM(X_MS_in.inverse()) {
    const Obb b = BoundingObb(s);
    R_Mb = X_MS.R * b.R_MB;
    p_Mb = X_MS * b.center;
    half_b = b.half_extents;
    if constexpr (std::is_same_v<ShapeT, Box>) {
      const double scale = std::max(half_b.maxCoeff(), X_MS.p.cwiseAbs().maxCoeff() + m.obb(0).half_extents.norm());
      box_contact_extents = half_b.array() + std::max(gjk_options.abs_tolerance, 1e-14 * scale);
    }
  }

  BoxPairFrame Frame(int32_t n) const {
    const Obb& o = mesh.obbs()[n];
    return {o.R_MB.transpose() * R_Mb, o.R_MB.transpose() * (p_Mb - o.center)};
  }

  // *centre_gap, when given, receives the squared distance between the boxes' centres.
  bool Overlap(int32_t n, double* centre_gap = nullptr) {
    ++stats.bv_tests;
    const BoxPairFrame frame = Frame(n);
    if (centre_gap != nullptr) *centre_gap = frame.T.squaredNorm();
    return ObbsOverlap(mesh.obbs()[n].half_extents, half_b, frame);
  }

  bool TriangleIntersects(int32_t k) {
    const LeafTriangle& t = mesh.leaf_triangles()[k];
    ++stats.triangle_tests;
    if constexpr (std::is_same_v<ShapeT, Box>) {
      return TriangleBoxOverlap(X_SM * t.v[0], X_SM * t.v[1], X_SM * t.v[2], box_contact_extents);
    } else {
      const Triangle tri{t.v[0], t.v[1], t.v[2]};
      cache.simplex.size = 0;  // only the axis and hill-climbing starts carry over between triangles
      return GjkIntersect(tri, RigidTransform(), shape, X_MS, &cache, gjk_options).intersecting;
    }
  }

  void Collide(const CollisionRequest& request, CollisionResult* result) {
    internal::WalkStack<int32_t> stack;
    if (Overlap(0)) stack.push(0);
    while (!stack.empty()) {
      const int32_t n = stack.pop();
      const BvhNode& node = mesh.nodes()[n];
      if (node.is_leaf()) {
        for (int32_t k = node.first; k < node.first + node.count; ++k) {
          if (!TriangleIntersects(k)) continue;
          result->colliding = true;
          result->contacts.push_back({mesh.triangle_id(k), -1});
          if (!request.all_contacts) return;
          if (static_cast<int32_t>(result->contacts.size()) >= request.max_contacts) {
            result->truncated = true;
            return;
          }
        }
        continue;
      }
      // The child nearer the shape first (NearerFirst).
      internal::NearerFirst<int32_t> kids;
      for (int32_t c = node.first; c < node.first + 2; ++c) {
        double gap;
        if (Overlap(c, &gap)) kids.Add(c, gap);
      }
      kids.PushTo(&stack);
    }
  }

  // Distance state, as in mesh_query.cc's DistanceWalk.
  double rel_err = 0.0, abs_err = 0.0, max_distance = std::numeric_limits<double>::infinity();
  double stop_below = 0.0;
  double upper = std::numeric_limits<double>::infinity();
  double threshold = std::numeric_limits<double>::infinity();
  double min_pruned = std::numeric_limits<double>::infinity();
  int32_t best_k = -1;
  Vec3 best_pa = Vec3::Zero(), best_pb = Vec3::Zero();  // in M

  double known_lower = 0.0;  // the caller's certified lower bound (DistanceRequest::known_lower)
  // What the answer's lower bound loses to rounding (ComputeMeshShapeDistance): no walk can certify more.
  double rounding = 0.0;

  void UpdateThreshold() {
    threshold = internal::DistanceWalkThreshold(upper, known_lower, rel_err, abs_err, rounding, stop_below,
                                                max_distance);
  }

  double LowerBound(int32_t n) {
    ++stats.bv_tests;
    return ObbDistanceLowerBound(mesh.obbs()[n].half_extents, half_b, Frame(n), threshold);
  }

  // GJK on one triangle: updates the upper bound and returns GJK's certified lower bound.
  double TestTriangle(int32_t k) {
    const LeafTriangle& t = mesh.leaf_triangles()[k];
    const Triangle tri{t.v[0], t.v[1], t.v[2]};
    ++stats.triangle_tests;
    // Only the direction and the shape's hill-climbing start carry over between triangles: the
    // simplex's points lie on the previous triangle.
    cache.simplex.size = 0;
    // A triangle whose lower bound reaches the threshold is pruned whatever its distance: GJK stops
    // there instead of converging.
    GjkOptions o = gjk_options;
    o.lower_bound_target = threshold;
    const GjkResult g = GjkDistance(tri, RigidTransform(), shape, X_MS, &cache, o);
    if (g.distance < upper) {
      upper = g.distance;
      best_k = k;
      best_pa = g.p_WA;
      best_pb = g.p_WB;
      UpdateThreshold();
    }
    return g.lower_bound;
  }

  double TestLeaf(int32_t n) {
    const BvhNode& node = mesh.nodes()[n];
    double lower = std::numeric_limits<double>::infinity();
    for (int32_t k = node.first; k < node.first + node.count; ++k) lower = std::min(lower, TestTriangle(k));
    return lower;
  }

  // A first upper bound: greedy descent to the leaf whose sphere is nearest the shape's bounding
  // sphere at each step; one triangle test and 2 * depth sphere tests.
  void Seed(int32_t warm_leaf) {
    if (warm_leaf >= 0) {
      TestTriangle(warm_leaf);
      return;
    }
    int32_t n = 0;
    auto gap = [&](int32_t x) {
      ++stats.bv_tests;
      const Sphere& s = mesh.spheres()[x];
      return (s.center - p_Mb).norm() - s.radius;
    };
    while (!mesh.nodes()[n].is_leaf()) {
      const int32_t c = mesh.nodes()[n].first;
      n = gap(c) <= gap(c + 1) ? c : c + 1;
    }
    TestTriangle(mesh.nodes()[n].first);
  }

  struct Entry {
    int32_t node;
    double bound;
  };

  void stop(double bound) { min_pruned = std::min(min_pruned, bound); }

  // Best-first over mesh nodes by OBB lower bound; the nearer child of an expanded node is walked at
  // once when no queued node has a smaller bound. Stops when the smallest bound reaches the threshold,
  // which then certifies the lower bound.
  void Distance(int32_t warm_leaf = -1) {
    // A root box already max_distance away settles the query without a triangle test (upper stays
    // infinite: beyond_max_distance, only the interval holds).
    const double root = LowerBound(0);
    if (root >= max_distance) {
      stop(root);
      return;
    }
    Seed(warm_leaf);
    if (upper == 0.0) return;
    internal::BoundHeap<Entry> heap;
    heap.Reserve(kStackReserve);
    auto push = [&](const Entry& e) {
      if (e.bound >= threshold) {
        stop(e.bound);
        return;
      }
      heap.Push(e);
    };
    auto pop = [&]() { return heap.Pop(); };
    Entry e{0, root};
    for (;;) {
      if (e.bound >= threshold) {
        stop(e.bound);  // every queued node has a bound at least this large
        break;
      }
      const BvhNode& node = mesh.nodes()[e.node];
      if (node.is_leaf()) {
        stop(TestLeaf(e.node));
        if (upper == 0.0 || heap.empty()) break;
        e = pop();
        continue;
      }
      Entry c0{node.first, LowerBound(node.first)};
      Entry c1{node.first + 1, LowerBound(node.first + 1)};
      if (c1.bound < c0.bound) std::swap(c0, c1);
      push(c1);
      if (heap.empty() || c0.bound <= heap.top().bound) {
        e = c0;
        continue;
      }
      push(c0);
      e = pop();
    }
    for (const Entry& r : heap.entries()) stop(r.bound);
    PolishWitnesses();
  }

  // GJK's witnesses are barycentric combinations over its final simplex; on curved surfaces that
  // simplex can be a sliver whose weights lose digits that its closest point v keeps, so
  // |p_A - p_B| may exceed |v|. Both witnesses are points of their sets, so their distance is a true
  // upper bound: the best of a few cold restarts is kept, and the upper bound becomes the distance the
  // reported witnesses realise.
  void PolishWitnesses() {
    if (best_k < 0 || upper == 0.0) return;
    double realised = (best_pa - best_pb).norm();
    if (realised <= upper * (1.0 + internal::kExactRelativeWidth)) return;
    const LeafTriangle& t = mesh.leaf_triangles()[best_k];
    const Triangle tri{t.v[0], t.v[1], t.v[2]};
    for (const double rel : {GjkOptions().rel_tolerance, gjk_options.rel_tolerance}) {
      GjkOptions o = gjk_options;
      o.rel_tolerance = rel;
      ++stats.triangle_tests;
      const GjkResult g = GjkDistance(tri, RigidTransform(), shape, X_MS, nullptr, o);
      const double d = (g.p_WA - g.p_WB).norm();
      if (!g.intersecting && d < realised) {
        realised = d;
        best_pa = g.p_WA;
        best_pb = g.p_WB;
      }
    }
    upper = std::max(upper, realised);
  }
};

}  // namespace

Obb ShapeBoundingObb(const Shape& shape) {
  return VisitShape(shape, [](const auto& s) { return BoundingObb(s); });
}

Result<CollisionResult> CollideMeshShape(const MeshModel& mesh, const RigidTransform& X_WM, const Shape& shape,
                                         const RigidTransform& X_WS, const CollisionRequest& request) {
  if (Status s = ValidatePose(X_WM, "X_WM"); !s.ok()) return s.error();
  if (Status s = ValidatePose(X_WS, "X_WS"); !s.ok()) return s.error();
  if (Status s = ValidateShape(shape); !s.ok()) return s.error();
  if (Status s = ValidateCollisionRequest(request); !s.ok()) return s.error();
  CollisionResult result;
  internal::CollideMeshShapeTrusted(mesh, X_WM, shape, X_WS, request, &result);
  return result;
}

void internal::CollideMeshShapeTrusted(const MeshModel& mesh, const RigidTransform& X_WM, const Shape& shape,
                                       const RigidTransform& X_WS, const CollisionRequest& request,
                                       CollisionResult* result) {
  const RigidTransform X_MS = RelativeTransform(X_WM, X_WS);
  VisitShape(shape, [&](const auto& s) {
    MeshShapeWalk walk(mesh, s, X_MS);
    walk.Collide(request, result);
    result->stats = walk.stats;
  });
}

bool internal::ShapesIntersectTrusted(const Shape& a, const RigidTransform& X_WA, const Shape& b,
                                      const RigidTransform& X_WB) {
  return VisitShape(a, [&](const auto& sa) {
    return VisitShape(b, [&](const auto& sb) { return GjkIntersect(sa, X_WA, sb, X_WB).intersecting; });
  });
}

Result<DistanceResult> ComputeMeshShapeDistance(const MeshModel& mesh, const RigidTransform& X_WM, const Shape& shape,
                                                const RigidTransform& X_WS, const DistanceRequest& request,
                                                MeshShapeDistanceCache* cache) {
  if (Status s = ValidatePose(X_WM, "X_WM"); !s.ok()) return s.error();
  if (Status s = ValidatePose(X_WS, "X_WS"); !s.ok()) return s.error();
  if (Status s = ValidateShape(shape); !s.ok()) return s.error();
  if (Status s = ValidateDistanceRequest(request); !s.ok()) return s.error();
  const RigidTransform X_MS = RelativeTransform(X_WM, X_WS);
  DistanceResult result;
  VisitShape(shape, [&](const auto& s) {
    MeshShapeWalk walk(mesh, s, X_MS);
    walk.rel_err = request.rel_err;
    walk.abs_err = request.abs_err;
    walk.max_distance = request.max_distance;
    walk.stop_below = request.stop_below;
    walk.known_lower = request.known_lower;
    // Rounded outward as in ComputeDistance (GJK's leaf bounds already are; the box bounds are not).
    const Obb box = ShapeBoundingObb(shape);
    const double scale = X_WM.p.cwiseAbs().maxCoeff() + X_WS.p.cwiseAbs().maxCoeff() + internal::ModelReach(mesh) +
                         box.center.norm() + box.half_extents.norm();
    walk.rounding = RoundingAllowance(scale);
    walk.UpdateThreshold();
    const bool warm = cache != nullptr && cache->mesh == &mesh && cache->leaf >= 0 &&
                      cache->leaf < mesh.num_triangles();
    walk.Distance(warm ? cache->leaf : -1);
    if (cache != nullptr) {
      cache->mesh = &mesh;
      cache->leaf = walk.best_k;
    }
    result.upper_bound = walk.upper;
    result.lower_bound = std::max(0.0, std::min(walk.upper, walk.min_pruned) - walk.rounding);
    result.lower_bound = std::max(result.lower_bound, std::min(request.known_lower, walk.upper));
    result.intersecting = walk.upper == 0.0;
    result.beyond_max_distance = result.lower_bound >= request.max_distance;
    result.p_WA = X_WM * walk.best_pa;
    result.p_WB = X_WM * walk.best_pb;
    result.triangles = {walk.best_k >= 0 ? mesh.triangle_id(walk.best_k) : -1, -1};
    result.stats = walk.stats;
  });
  return result;
}

Result<CollisionResult> CollideShapes(const Shape& a, const RigidTransform& X_WA, const Shape& b,
                                      const RigidTransform& X_WB, const CollisionRequest& request) {
  if (Status s = ValidatePose(X_WA, "X_WA"); !s.ok()) return s.error();
  if (Status s = ValidatePose(X_WB, "X_WB"); !s.ok()) return s.error();
  if (Status s = ValidateShape(a, "shape a"); !s.ok()) return s.error();
  if (Status s = ValidateShape(b, "shape b"); !s.ok()) return s.error();
  if (Status s = ValidateCollisionRequest(request); !s.ok()) return s.error();
  CollisionResult result;
  const bool hit = internal::ShapesIntersectTrusted(a, X_WA, b, X_WB);
  result.stats.triangle_tests = 1;
  if (hit) {
    result.colliding = true;
    result.contacts.push_back({-1, -1});
  }
  return result;
}

Result<DistanceResult> ComputeShapeDistance(const Shape& a, const RigidTransform& X_WA, const Shape& b,
                                            const RigidTransform& X_WB, const DistanceRequest& request) {
  if (Status s = ValidatePose(X_WA, "X_WA"); !s.ok()) return s.error();
  if (Status s = ValidatePose(X_WB, "X_WB"); !s.ok()) return s.error();
  if (Status s = ValidateShape(a, "shape a"); !s.ok()) return s.error();
  if (Status s = ValidateShape(b, "shape b"); !s.ok()) return s.error();
  if (Status s = ValidateDistanceRequest(request); !s.ok()) return s.error();
  const GjkResult g = VisitShape(a, [&](const auto& sa) {
    return VisitShape(b, [&](const auto& sb) {
      using A = std::decay_t<decltype(sa)>;
      using B = std::decay_t<decltype(sb)>;
      const GjkOptions o = LeafGjkOptions<A>().rel_tolerance < LeafGjkOptions<B>().rel_tolerance
                               ? LeafGjkOptions<B>()
                               : LeafGjkOptions<A>();
      return GjkDistance(sa, X_WA, sb, X_WB, nullptr, o);
    });
  });
  DistanceResult result;
  result.stats.triangle_tests = 1;
  result.upper_bound = g.distance;
  result.lower_bound = std::min(g.distance, std::max(0.0, g.lower_bound));
  result.intersecting = g.intersecting;
  result.beyond_max_distance = result.lower_bound >= request.max_distance;
  result.p_WA = g.p_WA;
  result.p_WB = g.p_WB;
  return result;
}

}  // namespace proximity::core
