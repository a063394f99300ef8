#pragma once
/// @file
/// GJK on convex shapes: proximity (distance and witness points) and ISA-GJK (a boolean overlap test
/// that stops at the first separating axis), both warm-started from a caller-owned cache.
///
/// Algorithms: Gilbert, Johnson, Keerthi, "A fast procedure for computing the distance between complex
/// objects in three-dimensional space", IEEE J. Robotics and Automation 1988; the termination bound, the
/// separating-axis variant (ISA-GJK) and hill-climbing supports (here by steepest ascent, restarted
/// from fixed seed vertices after a sharp turn of the search direction) follow van den Bergen,
/// "Collision Detection in Interactive 3D Environments" (2004); the sub-simplex selection uses the
/// Voronoi-region tests of Ericson, "Real-Time Collision Detection" (2005), with signed-volume
/// barycentrics for the tetrahedron and an explicit fallback for flat simplices.
///
/// Both shapes are posed in world W (X_WA, X_WB); the iteration runs in A's frame on the Minkowski
/// difference of the cores, A - B = {p_A - p_B}, and the margins (sphere and capsule radii) are
/// subtracted at the end, so sphere and capsule pairs converge in finitely many steps. Shapes are closed
/// sets: touching counts as intersecting.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include "narrowphase/convex.h"
#include "proximity/core/base/types.h"
#include "base/numerics.h"

namespace proximity::core {

/// Tolerances and limits for GjkDistance and GjkIntersect.
struct GjkOptions {
  /// eps_rel: the distance loop stops when ||v||^2 - v·w <= eps_rel^2 ||v||^2, which bounds the gap
  /// between the reported distance and its lower bound by eps_rel^2 times the distance.
  double rel_tolerance = 1e-5;
  /// eps_abs (metres): the absolute floor of the same test (||v||^2 - v·w <= eps_abs^2), and the
  /// contact tolerance: shapes closer than this are reported as intersecting. Keep it above rounding at
  /// the coordinates' scale.
  double abs_tolerance = 1e-12;
  /// Iteration cap (at least 1); a capped run reports converged = false with valid (looser) bounds.
  int32_t max_iterations = 128;
  /// GjkDistance stops as soon as its certified lower bound on the shapes' distance reaches this
  /// (metres): a caller that only needs to know the shapes are at least this far apart (a hierarchy
  /// walk pruning a leaf) skips the rest of the loop. The result then reports reached_target, a
  /// distance that is only an upper bound (not converged) and the lower bound reached. Infinity (the
  /// default) never stops early.
  double lower_bound_target = std::numeric_limits<double>::infinity();
};

/// One simplex vertex: w = p_A - X_AB p_B in A's frame, from the core support points p_A (frame A) and
/// p_B (frame B), with their vertex indices (-1 for points on smooth parts).
struct GjkVertex {
  Vec3 w = Vec3::Zero();
  Vec3 p_A = Vec3::Zero();
  Vec3 p_B = Vec3::Zero();
  int32_t vertex_a = -1;
  int32_t vertex_b = -1;
};

/// A GJK simplex of 0 to 4 vertices and the barycentric weights of its point closest to the origin.
struct GjkSimplex {
  std::array<GjkVertex, 4> vertices;
  std::array<double, 4> weights{};
  int32_t size = 0;
};

/// Warm-start state the caller owns, one per shape pair (per thread). GjkDistance reads and writes
/// the simplex, the direction and the support start vertices; GjkIntersect the direction (its last
/// separating axis) and the start vertices. A default-constructed cache means a cold start.
struct GjkCache {
  /// Last closest point of A - B (GjkDistance) or separating axis (GjkIntersect), in A's frame.
  Vec3 v_A = Vec3::Zero();
  /// Last final simplex; its points stay on the shapes, so it is re-posed at the next query.
  GjkSimplex simplex;
  /// Where polytope hill climbing starts (last support vertices of A and B; -1: no hint).
  int32_t vertex_a = -1;
  int32_t vertex_b = -1;
};

/// The answer of GjkDistance. Frames: witnesses in W.
struct GjkResult {
  /// Distance between the shapes (metres): an upper bound, within eps_rel^2 (relative) or eps_abs
  /// (absolute) of the truth; exact up to rounding for polytopes, boxes, triangles, spheres and
  /// capsules. On curved cylinder and cone surfaces rounding stops progress near a relative gap of 1e-9
  /// (1e-8 in builds without fused multiply-add) first. 0 when intersecting.
  double distance = 0.0;
  /// Certified lower bound on the distance (<= distance).
  double lower_bound = 0.0;
  /// The shapes share a point, or are closer than abs_tolerance.
  bool intersecting = false;
  /// False when the iteration cap or GjkOptions::lower_bound_target stopped the loop.
  bool converged = true;
  /// The lower bound reached GjkOptions::lower_bound_target and the loop stopped there.
  bool reached_target = false;
  /// Closest points p_WA on A and p_WB on B, |p_WA - p_WB| = distance. When intersecting both are one
  /// point common to both shapes (up to rounding); penetration depth and contact normals are EPA's job.
  Vec3 p_WA = Vec3::Zero();
  Vec3 p_WB = Vec3::Zero();
  /// The final simplex (w in A's frame); contains the origin (size 4) when the cores overlap.
  GjkSimplex simplex;
  int32_t iterations = 0;     ///< Loop iterations (one support pair each).
  int32_t support_calls = 0;  ///< Support-pair evaluations (CoreSupport of A and of B).
};

/// The answer of GjkIntersect.
struct GjkIntersectResult {
  bool intersecting = false;     ///< The shapes share a point, or are closer than abs_tolerance.
  bool cached_axis_separated = false;  ///< The cache's axis separated the shapes at the first support pair.
  bool cached_simplex_intersecting = false;  ///< The cache's re-posed simplex held the origin (no support call).
  int32_t iterations = 0;        ///< Loop iterations.
  int32_t support_calls = 0;     ///< Support-pair evaluations.
};

namespace internal {

/// Reduces `s` to the smallest sub-simplex whose hull contains the point closest to the origin, sets
/// the weights, and returns that point v (in the frame of the w's). Size 4 with v = 0 when the origin
/// is inside the tetrahedron. Never NaN for finite input; flat simplices fall back to their faces.
Vec3 SolveSimplex(GjkSimplex* s);

/// A cached simplex re-posed at the relative pose X_AB (its support points stay on the shapes) and
/// solved: the point of its hull closest to the origin, as SolveSimplex.
inline Vec3 RePoseSimplex(const GjkSimplex& cached, const RigidTransform& X_AB, GjkSimplex* s) {
  *s = cached;
  for (int32_t i = 0; i < s->size; ++i) {
    GjkVertex& u = s->vertices[i];
    u.w = u.p_A - (X_AB.R * u.p_B + X_AB.p);
  }
  return SolveSimplex(s);
}

/// Cosine of the largest turn of the search direction after which a polytope's support search
/// restarts from its seed vertices (ConvexPolytope's extreme vertices along 14 fixed directions) instead
/// of climbing from the last support vertex: after a turn of more than about 37 degrees (typical of a
/// cold query's first iterations) the climb across the hull costs more than the seed scan plus the
/// short climb from the best seed.
inline constexpr double kReseedCosine = 0.8;

/// Whether direction d turned from `last` by more than acos(kReseedCosine); false when either is zero.
inline bool TurnedFar(const Vec3& d, const Vec3& last) {
  const double dot = d.dot(last);
  return dot < 0.0 || dot * dot < kReseedCosine * kReseedCosine * d.squaredNorm() * last.squaredNorm();
}

/// The core support point GJK uses: CoreSupport, except for a polytope with more than
/// kBruteForceMaxVertices vertices and a valid start vertex in *vertex, which GJK climbs itself by
/// steepest ascent over the edge graph: every neighbour of the current vertex is evaluated with a
/// branch-free maximum and the best one taken. That mispredicts far less than moving to the first
/// improving neighbour and needs fewer moves. Exact up to rounding, as CoreSupport (a local maximum of
/// a linear function over a convex polytope's edge graph is a global one); *vertex receives the
/// support vertex.
template <class Shape>
inline Vec3 GjkCoreSupport(const Shape& shape, const Vec3& d_S, int32_t* vertex) {
  return CoreSupport(shape, d_S, vertex);
}
inline Vec3 GjkCoreSupport(const ConvexPolytope& p, const Vec3& d_S, int32_t* vertex) {
  const int32_t n = p.num_vertices();
  int32_t current = *vertex;
  if (n <= ConvexPolytope::kBruteForceMaxVertices || current < 0 || current >= n) {
    *vertex = p.SupportVertex(d_S, current);
    return p.vertices()[*vertex];
  }
  const Vec3* v = p.vertices().data();
  double value = d_S.dot(v[current]);
  for (;;) {
    int32_t best = current;
    double best_value = value;
    for (const int32_t k : p.neighbors(current)) {
      const double x = d_S.dot(v[k]);
      best = x > best_value ? k : best;
      best_value = x > best_value ? x : best_value;
    }
    if (best == current) break;
    current = best;
    value = best_value;
  }
  *vertex = current;
  return v[current];
}

/// A support pair of the posed Minkowski difference A - B in A's frame for direction d_A.
template <class ShapeA, class ShapeB>
inline void MinkowskiSupport(const ShapeA& a, const ShapeB& b, const RigidTransform& X_AB, const Vec3& d_A,
                             int32_t* start_a, int32_t* start_b, GjkVertex* out) {
  out->p_A = GjkCoreSupport(a, d_A, start_a);
  out->vertex_a = *start_a;
  const Vec3 d_B = -(X_AB.R.transpose() * d_A);
  out->p_B = GjkCoreSupport(b, d_B, start_b);
  out->vertex_b = *start_b;
  out->w = out->p_A - (X_AB.R * out->p_B + X_AB.p);
}

/// Whether w repeats a vertex of the simplex (same vertex pair, or the same point).
inline bool InSimplex(const GjkSimplex& s, const GjkVertex& w) {
  for (int32_t i = 0; i < s.size; ++i) {
    const GjkVertex& u = s.vertices[i];
    if (u.vertex_a >= 0 && u.vertex_b >= 0 && u.vertex_a == w.vertex_a && u.vertex_b == w.vertex_b) return true;
    if (u.w == w.w) return true;
  }
  return false;
}

inline double MaxNormSquared(const GjkSimplex& s) {
  double m = 0.0;
  for (int32_t i = 0; i < s.size; ++i) m = std::max(m, s.vertices[i].w.squaredNorm());
  return m;
}

/// Contact threshold on the cores' distance: the margins plus the absolute tolerance, raised to the
/// rounding level of the simplex's coordinates.
inline double ContactThreshold(double margin, double abs_tolerance, const GjkSimplex& s) {
  return margin + std::max(abs_tolerance, 1e-14 * std::sqrt(MaxNormSquared(s)));
}

/// A start direction for a cold query: from B towards A, or +x when the origins coincide.
inline Vec3 ColdDirection(const RigidTransform& X_AB) {
  const Vec3 d = -X_AB.p;
  return d.squaredNorm() > 0.0 ? d : Vec3::UnitX();
}

}  // namespace internal

/// Distance between convex shapes a (pose X_WA) and b (pose X_WB) by proximity GJK, with witness
/// points in W, a certified lower bound, the final simplex and the work done. `cache` (optional)
/// warm-starts from the previous query of the same pair and receives this query's state.
template <class ShapeA, class ShapeB>
GjkResult GjkDistance(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b, const RigidTransform& X_WB,
                      GjkCache* cache = nullptr, const GjkOptions& options = {}) {
  const RigidTransform X_AB = RelativeTransform(X_WA, X_WB);
  const double margin_a = Margin(a), margin_b = Margin(b);
  const double margin = margin_a + margin_b;
  const double eps_rel2 = options.rel_tolerance * options.rel_tolerance;
  const double eps_abs2 = options.abs_tolerance * options.abs_tolerance;

  GjkResult r;
  GjkSimplex& s = r.simplex;
  int32_t start_a = cache ? cache->vertex_a : -1;
  int32_t start_b = cache ? cache->vertex_b : -1;
  Vec3 v;
  bool v_in_set = false;  // Whether v is a point of A - B (else only a search direction).
  if (cache && cache->simplex.size > 0) {
    v = internal::RePoseSimplex(cache->simplex, X_AB, &s);
    v_in_set = true;
  } else {
    s.size = 0;
    v = (cache && cache->v_A.squaredNorm() > 0.0) ? cache->v_A : internal::ColdDirection(X_AB);
  }

  // The direction of the last support pair (the cache's for the first one): after a sharp turn the
  // polytope climbs restart from their seeds.
  Vec3 last_v = cache ? cache->v_A : Vec3::Zero();
  double lower = 0.0;  // Largest lower bound on the cores' distance seen.
  // The largest coordinate the computation meets (support points in A's frame, the poses'
  // translations, the margins): the scale of its rounding (RoundingAllowance).
  double scale = X_WA.p.cwiseAbs().maxCoeff() + X_WB.p.cwiseAbs().maxCoeff() + margin;
  bool converged = false;
  bool contact = false;
  while (r.iterations < options.max_iterations) {
    if (v_in_set) {
      const double threshold = internal::ContactThreshold(margin, options.abs_tolerance, s);
      if (s.size == 4 || v.squaredNorm() <= threshold * threshold) {
        contact = true;
        converged = true;
        break;
      }
    }
    ++r.iterations;
    if (internal::TurnedFar(v, last_v)) start_a = start_b = -1;
    last_v = v;
    GjkVertex w;
    internal::MinkowskiSupport(a, b, X_AB, -v, &start_a, &start_b, &w);
    ++r.support_calls;
    scale = std::max({scale, w.p_A.cwiseAbs().maxCoeff(), (w.p_A - w.w).cwiseAbs().maxCoeff()});
    if (v_in_set) {
      const double vv = v.squaredNorm();
      const double vw = v.dot(w.w);
      if (vw > 0.0) lower = std::max(lower, vw / std::sqrt(vv));
      if (lower > margin && lower - margin - RoundingAllowance(scale) >= options.lower_bound_target) {
        r.reached_target = true;
        break;
      }
      const double gap = vv - vw;
      if (gap <= eps_rel2 * vv || gap <= eps_abs2 || internal::InSimplex(s, w)) {
        converged = true;
        break;
      }
    }
    const GjkSimplex previous = s;
    s.vertices[s.size++] = w;
    const Vec3 v_new = internal::SolveSimplex(&s);
    if (v_in_set && v_new.squaredNorm() >= v.squaredNorm()) {
      // No progress: rounding has the last word; keep the better simplex.
      s = previous;
      converged = true;
      break;
    }
    v = v_new;
    v_in_set = true;
  }
  if (!converged && !r.reached_target && v_in_set) {
    const double threshold = internal::ContactThreshold(margin, options.abs_tolerance, s);
    contact = s.size == 4 || v.squaredNorm() <= threshold * threshold;
  }
  r.converged = converged;

  // Closest points of the cores, both in A's frame.
  Vec3 c_A = Vec3::Zero(), c_B = Vec3::Zero();
  for (int32_t i = 0; i < s.size; ++i) {
    c_A += s.weights[i] * s.vertices[i].p_A;
    c_B += s.weights[i] * (X_AB.R * s.vertices[i].p_B + X_AB.p);
  }
  const double core_distance = v.norm();
  if (contact) {
    r.intersecting = true;
    r.distance = 0.0;
    r.lower_bound = 0.0;
    // A point within both shapes: on the segment between the cores' closest points, split in the ratio
    // of the margins.
    const Vec3 p_A = margin > 0.0 ? Vec3(c_B + (margin_b / margin) * (c_A - c_B)) : Vec3(0.5 * (c_A + c_B));
    r.p_WA = r.p_WB = X_WA * p_A;
  } else {
    r.distance = std::max(0.0, core_distance - margin);
    // The support-plane bound holds at every iterate, converged or not; rounded outward here.
    r.lower_bound = std::min(r.distance, std::max(0.0, lower - margin - RoundingAllowance(scale)));
    const Vec3 n = core_distance > 0.0 ? Vec3(v / core_distance) : Vec3::Zero();
    r.p_WA = X_WA * Vec3(c_A - margin_a * n);
    r.p_WB = X_WA * Vec3(c_B + margin_b * n);
  }
  if (cache) {
    cache->simplex = s;
    cache->v_A = v;
    cache->vertex_a = start_a;
    cache->vertex_b = start_b;
  }
  return r;
}

/// Whether convex shapes a (pose X_WA) and b (pose X_WB) share a point (or are closer than
/// abs_tolerance), by ISA-GJK: stops at the first separating axis found, trying the cache's axis first,
/// and stores the axis for the next query. When the shapes intersected at the cache's last query (its
/// simplex a tetrahedron, its axis zero), that simplex is re-posed first: still holding the origin, it
/// proves the shapes intersect without a support call; else GJK goes on from it. Agrees with
/// GjkDistance's intersecting flag.
template <class ShapeA, class ShapeB>
GjkIntersectResult GjkIntersect(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b,
                                const RigidTransform& X_WB, GjkCache* cache = nullptr,
                                const GjkOptions& options = {}) {
  const RigidTransform X_AB = RelativeTransform(X_WA, X_WB);
  const double margin = Margin(a) + Margin(b);
  GjkIntersectResult r;
  GjkSimplex s;
  int32_t start_a = cache ? cache->vertex_a : -1;
  int32_t start_b = cache ? cache->vertex_b : -1;
  const bool warm = cache && cache->v_A.squaredNorm() > 0.0;
  Vec3 v = warm ? cache->v_A : internal::ColdDirection(X_AB);
  bool v_in_set = false;
  bool decided = false;
  if (cache && !warm && cache->simplex.size == 4) {
    // The last query found them intersecting: its tetrahedron's points stay on the shapes.
    v = internal::RePoseSimplex(cache->simplex, X_AB, &s);
    v_in_set = true;
    r.iterations = 1;
    const double contact = internal::ContactThreshold(margin, options.abs_tolerance, s);
    if (s.size == 4 || v.squaredNorm() <= contact * contact) {
      r.intersecting = true;
      r.cached_simplex_intersecting = true;
      decided = true;
    }
  }
  Vec3 last_v = v;  // Direction of the last support pair, as in GjkDistance.
  while (!decided && r.iterations < options.max_iterations) {
    ++r.iterations;
    if (internal::TurnedFar(v, last_v)) start_a = start_b = -1;
    last_v = v;
    GjkVertex w;
    internal::MinkowskiSupport(a, b, X_AB, -v, &start_a, &start_b, &w);
    ++r.support_calls;
    const double vw = v.dot(w.w);
    // Separating axis: the lower bound v·w / |v| on the cores' distance exceeds the contact threshold.
    const double threshold = margin + options.abs_tolerance;
    if (vw > 0.0 && vw * vw > threshold * threshold * v.squaredNorm()) {
      r.intersecting = false;
      r.cached_axis_separated = warm && r.iterations == 1;
      decided = true;
      break;
    }
    if (v_in_set && internal::InSimplex(s, w)) break;
    const GjkSimplex previous = s;
    s.vertices[s.size++] = w;
    const Vec3 v_new = internal::SolveSimplex(&s);
    if (v_in_set && v_new.squaredNorm() >= v.squaredNorm()) {
      s = previous;
      break;
    }
    v = v_new;
    v_in_set = true;
    const double contact = internal::ContactThreshold(margin, options.abs_tolerance, s);
    if (s.size == 4 || v.squaredNorm() <= contact * contact) {
      r.intersecting = true;
      decided = true;
      break;
    }
  }
  if (!decided) {
    // Converged (or capped) without a separating axis beyond the threshold: v is the closest point.
    const double contact = internal::ContactThreshold(margin, options.abs_tolerance, s);
    r.intersecting = !v_in_set || s.size == 4 || v.squaredNorm() <= contact * contact;
  }
  if (cache) {
    if (r.intersecting) {
      cache->v_A = Vec3::Zero();
      cache->simplex = s;  // a tetrahedron holding the origin, or the contact's smaller simplex
    } else {
      cache->v_A = v;
      cache->simplex.size = 0;  // the axis is the warm start now
    }
    cache->vertex_a = start_a;
    cache->vertex_b = start_b;
  }
  return r;
}

}  // namespace proximity::core
