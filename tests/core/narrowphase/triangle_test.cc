// Tests of the triangle, segment and ray primitives against independent oracles. The oracles are
// written here in long double with formulations different from the product's (plane projection with
// area tests, case analysis of the segment quadratic, separating axes, plane crossing with area
// barycentrics), so that a shared mistake is unlikely. Tolerances scale with the conditioning of the
// triangle: the product's plane computations lose about eps / sin(largest angle).

#include "narrowphase/triangle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/test_util.h"

namespace proximity::core {
namespace {

using LD = long double;
using Vec3L = Eigen::Matrix<long double, 3, 1>;
using Tri3 = std::array<Vec3, 3>;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kPerms[6][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}, {1, 0, 2}};

Vec3L L(const Vec3& v) { return v.cast<long double>(); }

// ---------------------------------------------------------------------------------------------------
// Random geometry.

Vec3 Uniform(std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  return {u(rng), u(rng), u(rng)};
}

Vec3 RandomUnit(std::mt19937_64& rng) {
  std::normal_distribution<double> g;
  Vec3 v;
  do v = Vec3{g(rng), g(rng), g(rng)};
  while (v.norm() < 1e-3);
  return v.normalized();
}

double LogUniform(std::mt19937_64& rng, double lo_exp, double hi_exp) {
  return std::pow(10.0, std::uniform_real_distribution<double>(lo_exp, hi_exp)(rng));
}

enum class Shape { kGeneric, kNeedle, kSliver, kCollinear, kRepeated, kPoint };

// A triangle of the given shape inside a box of half-width `size` around `center`, with its
// vertices in random order. Needles have one edge 1e-6..1e-3 of the others; slivers have their
// third vertex 1e-6..1e-3 (relative) off the segment of the other two; collinear triangles are
// collinear up to the rounding of their third vertex.
Tri3 RandomTriangle(std::mt19937_64& rng, Shape shape, const Vec3& center, double size) {
  const Vec3 a = center + Uniform(rng, -size, size), b = center + Uniform(rng, -size, size);
  Vec3 c;
  switch (shape) {
    case Shape::kGeneric:
      c = center + Uniform(rng, -size, size);
      break;
    case Shape::kNeedle: {
      const double length = LogUniform(rng, -6, -3) * (b - a).norm();
      c = b + length * RandomUnit(rng);
      break;
    }
    case Shape::kSliver: {
      const double lambda = std::uniform_real_distribution<double>(0.05, 0.95)(rng);
      Vec3 off = RandomUnit(rng);
      off -= off.dot((b - a).normalized()) * (b - a).normalized();
      c = a + lambda * (b - a) + LogUniform(rng, -6, -3) * (b - a).norm() * off.normalized();
      break;
    }
    case Shape::kCollinear:
      c = a + std::uniform_real_distribution<double>(-0.5, 1.5)(rng) * (b - a);
      break;
    case Shape::kRepeated:
      c = a;
      break;
    case Shape::kPoint:
      return {a, a, a};
  }
  const Tri3 t = {a, b, c};
  const int* p = kPerms[std::uniform_int_distribution<int>(0, 5)(rng)];
  return {t[p[0]], t[p[1]], t[p[2]]};
}

Shape RandomShape(std::mt19937_64& rng, bool allow_degenerate) {
  const int k = std::uniform_int_distribution<int>(0, allow_degenerate ? 9 : 5)(rng);
  if (k <= 3) return Shape::kGeneric;
  if (k == 4) return Shape::kNeedle;
  if (k == 5) return Shape::kSliver;
  if (k <= 7) return Shape::kCollinear;
  if (k == 8) return Shape::kRepeated;
  return Shape::kPoint;
}

Tri3 Permuted(const Tri3& t, int perm) { return {t[kPerms[perm][0]], t[kPerms[perm][1]], t[kPerms[perm][2]]}; }

// Conditioning of a triangle as the product sees it: below a sine of 1e-8 at the largest angle it is
// a segment, otherwise its plane is known to about eps / sine.
struct Conditioning {
  double inv_sine = 0;  // 1 / sin(largest angle) for non-degenerate triangles, else 0.
  double width = 0;     // Height over the longest edge.
  double size = 0;      // Longest edge.
  bool degenerate = false;
};

Conditioning Condition(const Tri3& t) {
  const Vec3L e[3] = {L(t[1]) - L(t[0]), L(t[2]) - L(t[1]), L(t[0]) - L(t[2])};
  LD len[3];
  for (int i = 0; i < 3; ++i) len[i] = e[i].norm();
  const int j = len[0] >= len[1] ? (len[0] >= len[2] ? 0 : 2) : (len[1] >= len[2] ? 1 : 2);
  const LD lp = len[(j + 1) % 3], lq = len[(j + 2) % 3];
  const LD area2 = e[0].cross(e[1]).norm();
  Conditioning c;
  c.size = static_cast<double>(len[j]);
  c.width = len[j] > 0 ? static_cast<double>(area2 / len[j]) : 0.0;
  const LD sine = lp > 0 && lq > 0 ? area2 / (lp * lq) : 0;
  c.degenerate = sine < 1e-8L;
  c.inv_sine = c.degenerate ? 0.0 : static_cast<double>(1 / sine);
  return c;
}

// ---------------------------------------------------------------------------------------------------
// Oracles.

Vec3L OracleOnSegment(const Vec3L& p, const Vec3L& a, const Vec3L& b) {
  const Vec3L ab = b - a;
  const LD den = ab.squaredNorm();
  if (den == 0) return a;
  return a + std::clamp((p - a).dot(ab) / den, LD(0), LD(1)) * ab;
}

// Closest point on a triangle: the orthogonal projection onto the plane when three signed areas show
// it inside, otherwise the best clamped projection onto the three edges. A triangle whose largest
// angle has a sine below 1e-8 is its edges, as in the product (it is within its width of them, and
// even long double cannot place its plane accurately).
Vec3L OracleOnTriangle(const Vec3L& p, const Vec3L& a, const Vec3L& b, const Vec3L& c) {
  Vec3L best = OracleOnSegment(p, a, b);
  for (const Vec3L& x : {OracleOnSegment(p, b, c), OracleOnSegment(p, c, a)})
    if ((x - p).squaredNorm() < (best - p).squaredNorm()) best = x;
  const Vec3L n = (b - a).cross(c - a);
  const LD n2 = n.squaredNorm();
  const LD l[3] = {(b - a).norm(), (c - b).norm(), (a - c).norm()};
  const LD lmax = std::max({l[0], l[1], l[2]});
  const LD shorter = l[0] * l[1] * l[2] / std::max(lmax, std::numeric_limits<LD>::min());
  if (n2 > 0 && std::sqrt(n2) >= 1e-8L * shorter) {
    const Vec3L q = p - n * (n.dot(p - a) / n2);
    const bool inside = n.dot((b - q).cross(c - q)) >= 0 && n.dot((c - q).cross(a - q)) >= 0 &&
                        n.dot((a - q).cross(b - q)) >= 0;
    if (inside && (q - p).squaredNorm() < (best - p).squaredNorm()) best = q;
  }
  return best;
}

LD OraclePointTriangle(const Vec3& p, const Tri3& t) {
  return (OracleOnTriangle(L(p), L(t[0]), L(t[1]), L(t[2])) - L(p)).norm();
}

// Squared segment distance by case analysis of the convex quadratic |w + s u - t v|^2 on the unit
// square: its stationary point when that lies in the square, and the four endpoint-to-segment
// distances that cover the square's boundary.
LD OracleSegSeg2(const Vec3L& p0, const Vec3L& p1, const Vec3L& q0, const Vec3L& q1) {
  auto d2 = [](const Vec3L& x, const Vec3L& y) { return (x - y).squaredNorm(); };
  LD best = std::min({d2(p0, OracleOnSegment(p0, q0, q1)), d2(p1, OracleOnSegment(p1, q0, q1)),
                      d2(q0, OracleOnSegment(q0, p0, p1)), d2(q1, OracleOnSegment(q1, p0, p1))});
  const Vec3L u = p1 - p0, v = q1 - q0, w = p0 - q0;
  const LD a = u.dot(u), b = u.dot(v), c = v.dot(v), d = u.dot(w), e = v.dot(w);
  const LD det = a * c - b * b;
  if (det > 0) {
    const LD s = (b * e - c * d) / det, t = (a * e - b * d) / det;
    if (s >= 0 && s <= 1 && t >= 0 && t <= 1) best = std::min(best, d2(p0 + s * u, q0 + t * v));
  }
  return best;
}

// Squared segment distance by search: a 101 x 101 grid over (s, t), and a ternary search over s of
// the partial minimum over t (an exact clamped projection), which is convex in s.
LD SearchSegSeg2(const Vec3L& p0, const Vec3L& p1, const Vec3L& q0, const Vec3L& q1) {
  const Vec3L u = p1 - p0, v = q1 - q0;
  LD best = std::numeric_limits<LD>::infinity();
  for (int i = 0; i <= 100; ++i)
    for (int j = 0; j <= 100; ++j) {
      best = std::min(best, (p0 + (i / LD(100)) * u - q0 - (j / LD(100)) * v).squaredNorm());
    }
  auto partial = [&](LD s) {
    const Vec3L x = p0 + s * u;
    const LD den = v.squaredNorm();
    const LD t = den > 0 ? std::clamp((x - q0).dot(v) / den, LD(0), LD(1)) : LD(0);
    return (x - q0 - t * v).squaredNorm();
  };
  LD lo = 0, hi = 1;
  for (int it = 0; it < 200; ++it) {
    const LD m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
    if (partial(m1) <= partial(m2)) hi = m2;
    else lo = m1;
  }
  return std::min({best, partial(lo), partial(hi)});
}

// Squared distance of two disjoint triangles: the least of the 6 vertex-triangle and 9 edge-edge
// oracle distances.
LD OracleFeatureDistance(const Tri3& A, const Tri3& B) {
  LD best = std::numeric_limits<LD>::infinity();
  for (int i = 0; i < 3; ++i) {
    best = std::min(best, OraclePointTriangle(A[i], B));
    best = std::min(best, OraclePointTriangle(B[i], A));
    for (int j = 0; j < 3; ++j)
      best = std::min(best, std::sqrt(OracleSegSeg2(L(A[i]), L(A[(i + 1) % 3]), L(B[j]), L(B[(j + 1) % 3]))));
  }
  return best;
}

// Separating-axis test: the largest gap between the projections of the two triangles over the axes
// that decide two triangles (both normals, the 9 edge cross products, and the 6 in-plane edge normals
// for coplanar pairs). Positive means separated by that much; negative means intersecting, with every
// candidate axis overlapping by at least its magnitude. Complete for non-degenerate triangles.
LD SeparatingGap(const Tri3& A, const Tri3& B) {
  const Vec3L a[3] = {L(A[0]), L(A[1]), L(A[2])}, b[3] = {L(B[0]), L(B[1]), L(B[2])};
  const Vec3L ea[3] = {a[1] - a[0], a[2] - a[1], a[0] - a[2]}, eb[3] = {b[1] - b[0], b[2] - b[1], b[0] - b[2]};
  const Vec3L na = ea[0].cross(ea[1]), nb = eb[0].cross(eb[1]);
  std::vector<std::pair<Vec3L, LD>> axes;  // Axis and the product of its factors' norms.
  axes.push_back({na, ea[0].norm() * ea[1].norm()});
  axes.push_back({nb, eb[0].norm() * eb[1].norm()});
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) axes.push_back({ea[i].cross(eb[j]), ea[i].norm() * eb[j].norm()});
    axes.push_back({na.cross(ea[i]), na.norm() * ea[i].norm()});
    axes.push_back({nb.cross(eb[i]), nb.norm() * eb[i].norm()});
  }
  LD best = -std::numeric_limits<LD>::infinity();
  for (const auto& [axis, ref] : axes) {
    const LD len = axis.norm();
    if (!(len > 1e-12L * ref)) continue;
    const Vec3L u = axis / len;
    LD amin = u.dot(a[0]), amax = amin, bmin = u.dot(b[0]), bmax = bmin;
    for (int i = 1; i < 3; ++i) {
      amin = std::min(amin, u.dot(a[i]));
      amax = std::max(amax, u.dot(a[i]));
      bmin = std::min(bmin, u.dot(b[i]));
      bmax = std::max(bmax, u.dot(b[i]));
    }
    best = std::max(best, std::max(bmin - amax, amin - bmax));
  }
  return best;
}

// For triangles in one plane (up to rounding): the largest gap between their projections on the
// in-plane normals of their six edges. Positive means apart by that much within the plane.
LD CoplanarGap(const Tri3& A, const Tri3& B) {
  const Vec3L a[3] = {L(A[0]), L(A[1]), L(A[2])}, b[3] = {L(B[0]), L(B[1]), L(B[2])};
  const Vec3L n = (a[1] - a[0]).cross(a[2] - a[0]);
  LD best = -std::numeric_limits<LD>::infinity();
  for (const Vec3L* t : {a, b}) {
    for (int i = 0; i < 3; ++i) {
      const Vec3L axis = n.cross(t[(i + 1) % 3] - t[i]).normalized();
      LD amin = axis.dot(a[0]), amax = amin, bmin = axis.dot(b[0]), bmax = bmin;
      for (int k = 1; k < 3; ++k) {
        amin = std::min(amin, axis.dot(a[k]));
        amax = std::max(amax, axis.dot(a[k]));
        bmin = std::min(bmin, axis.dot(b[k]));
        bmax = std::max(bmax, axis.dot(b[k]));
      }
      best = std::max(best, std::max(bmin - amax, amin - bmax));
    }
  }
  return best;
}

// A segment (t_max = 1) or a ray (t_max = inf) x(t) = o + t w against a triangle by intersecting the
// plane and taking barycentric coordinates as ratios of signed areas. `margin` is how far the answer
// is from flipping: the smallest of the barycentric margins (scaled by the altitudes) and of the
// distances of the crossing to the ends of the parameter range; near-parallel queries have none.
struct OracleHit {
  bool hit = false;
  LD t = 0, u = 0, v = 0;
  LD margin = 0;
  LD incidence = 1;  // 1 / sin of the angle between the line and the plane: the conditioning of t.
};

OracleHit OracleLineTriangle(const Vec3& o, const Vec3& w, const Vec3& a, const Vec3& b, const Vec3& c, LD t_max) {
  OracleHit r;
  const Vec3L O = L(o), W = L(w), A = L(a), B = L(b), C = L(c);
  const Vec3L n = (B - A).cross(C - A);
  const LD n2 = n.squaredNorm(), wn = W.norm();
  const LD denom = n.dot(W);
  if (!(std::abs(denom) > 1e-9L * std::sqrt(n2) * wn)) return r;  // Near-parallel: no margin.
  const LD t = n.dot(A - O) / denom;
  const Vec3L X = O + t * W;
  const LD la = n.dot((B - X).cross(C - X)) / n2, lb = n.dot((C - X).cross(A - X)) / n2,
           lc = n.dot((A - X).cross(B - X)) / n2;
  const LD area2 = std::sqrt(n2);
  const LD ha = area2 / (C - B).norm(), hb = area2 / (A - C).norm(), hc = area2 / (B - A).norm();
  LD m = std::min({la * ha, lb * hb, lc * hc, t * wn});
  if (t_max < std::numeric_limits<LD>::infinity()) m = std::min(m, (t_max - t) * wn);
  r.hit = m >= 0;
  r.margin = std::abs(m);
  r.incidence = std::sqrt(n2) * wn / std::abs(denom);
  r.t = t;
  r.u = lb;
  r.v = lc;
  return r;
}

// Whether some edge of one triangle crosses the other (the two closed triangles then intersect, and
// every intersecting pair has such an edge), with the margin of that decision. Degenerate triangles
// are crossed by segments only on a set of measure zero; the pairs tested here avoid it by margin.
struct CrossingVerdict {
  bool intersect = false;
  LD margin = 0;
};

CrossingVerdict OracleEdgeCrossing(const Tri3& A, const Tri3& B) {
  CrossingVerdict r;
  LD best_hit = -1, least_miss = std::numeric_limits<LD>::infinity();
  auto edges_against = [&](const Tri3& E, const Tri3& F) {
    if (Condition(F).degenerate) return;
    for (int i = 0; i < 3; ++i) {
      const Vec3& p = E[i];
      const Vec3& q = E[(i + 1) % 3];
      if (p == q) continue;
      const OracleHit h = OracleLineTriangle(p, q - p, F[0], F[1], F[2], 1);
      if (h.hit) best_hit = std::max(best_hit, h.margin);
      else least_miss = std::min(least_miss, h.margin);
    }
  };
  edges_against(A, B);
  edges_against(B, A);
  if (Condition(A).degenerate && Condition(B).degenerate) {
    // Two segments (or points): they meet only if their distance is zero.
    LD d = std::numeric_limits<LD>::infinity();
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        d = std::min(d, std::sqrt(OracleSegSeg2(L(A[i]), L(A[(i + 1) % 3]), L(B[j]), L(B[(j + 1) % 3]))));
    least_miss = std::min(least_miss, d);
  }
  r.intersect = best_hit >= 0;
  r.margin = r.intersect ? best_hit : least_miss;
  return r;
}

bool Hit(const Tri3& A, const Tri3& B) { return TrianglesIntersect(A[0], A[1], A[2], B[0], B[1], B[2]); }

double Dist(const Tri3& A, const Tri3& B, Vec3* pa, Vec3* pb) {
  return TriangleDistance(A[0], A[1], A[2], B[0], B[1], B[2], pa, pb);
}

// ---------------------------------------------------------------------------------------------------
// ClosestPointOnTriangle.

TEST(ClosestPointOnTriangle, MatchesProjectionOracleOnRandomTriangles) {
  std::mt19937_64 rng(11);
  int checked = 0;
  for (int iter = 0; iter < 30000; ++iter) {
    const double size = LogUniform(rng, -2, 2);
    const Vec3 center = Uniform(rng, -10, 10);
    const Tri3 t = RandomTriangle(rng, RandomShape(rng, true), center, size);
    const Conditioning cond = Condition(t);
    for (int k = 0; k < 4; ++k) {
      Vec3 p;
      const int kind = std::uniform_int_distribution<int>(0, 2)(rng);
      if (kind == 0) {
        p = center + Uniform(rng, -2 * size, 2 * size);
      } else {
        // Near the plane, over or just beyond the triangle.
        std::uniform_real_distribution<double> w(-0.2, 1.2);
        const double wb = w(rng), wc = w(rng);
        const Vec3 n = (t[1] - t[0]).cross(t[2] - t[0]);
        const Vec3 up = n.norm() > 0 ? Vec3(n.normalized()) : RandomUnit(rng);
        p = t[0] + wb * (t[1] - t[0]) + wc * (t[2] - t[0]) +
            (kind == 1 ? LogUniform(rng, -12, 0) * size : 0.0) * (iter % 2 ? 1 : -1) * up;
      }
      const Vec3 q = ClosestPointOnTriangle(p, t[0], t[1], t[2]);
      ASSERT_TRUE(q.allFinite());
      const Vec3L qo = OracleOnTriangle(L(p), L(t[0]), L(t[1]), L(t[2]));
      const double scale = size + (p - center).norm() + center.norm();
      const double tol = 1e-13 * scale * (1 + cond.inv_sine);
      const double d = (q - p).norm(), d_oracle = static_cast<double>((qo - L(p)).norm());
      ASSERT_NEAR(d, d_oracle, tol) << "iteration " << iter;
      // The returned point lies on the triangle and is the unique closest point.
      ASSERT_LE(OraclePointTriangle(q, t), tol) << "iteration " << iter;
      ASSERT_LE(static_cast<double>((L(q) - qo).norm()), std::sqrt(tol * (2 * d_oracle + tol)) + tol)
          << "iteration " << iter;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 120000);
}

TEST(ClosestPointOnTriangle, NeverFartherThanSampledPoints) {
  std::mt19937_64 rng(12);
  for (int iter = 0; iter < 400; ++iter) {
    const Tri3 t = RandomTriangle(rng, RandomShape(rng, true), Vec3::Zero(), 1.0);
    const Vec3 p = Uniform(rng, -2, 2);
    const double d = (ClosestPointOnTriangle(p, t[0], t[1], t[2]) - p).norm();
    double sampled = kInf;
    constexpr int kN = 60;
    for (int i = 0; i <= kN; ++i)
      for (int j = 0; i + j <= kN; ++j) {
        const Vec3 x = t[0] + (double(i) / kN) * (t[1] - t[0]) + (double(j) / kN) * (t[2] - t[0]);
        sampled = std::min(sampled, (x - p).norm());
      }
    ASSERT_LE(d, sampled + 1e-12) << "iteration " << iter;
  }
}

TEST(ClosestPointOnTriangle, EveryVoronoiRegion) {
  const Vec3 a(0, 0, 0), b(4, 0, 0), c(0, 4, 0);
  struct Case {
    Vec3 p, expected;
  };
  const Case cases[] = {
      {{-1, -1, 3}, a},       {{5, -1, -2}, b},       {{-1, 6, 1}, c},         // Vertices.
      {{2, -3, 1}, {2, 0, 0}}, {{-2, 1, -1}, {0, 1, 0}}, {{3, 3, 5}, {2, 2, 0}},  // Edges.
      {{1, 1, 7}, {1, 1, 0}}, {{1, 2, -3}, {1, 2, 0}},                          // Face, both sides.
      {{1, 1, 0}, {1, 1, 0}}, {{4, 0, 0}, b},                                   // On the triangle.
  };
  for (const Case& k : cases) {
    for (int perm = 0; perm < 6; ++perm) {
      const Tri3 t = Permuted({a, b, c}, perm);
      EXPECT_EQ(ClosestPointOnTriangle(k.p, t[0], t[1], t[2]), k.expected) << k.p.transpose();
    }
  }
}

TEST(ClosestPointOnTriangle, DegenerateTrianglesGiveAPointOnTheSegment) {
  const Vec3 a(0, 0, 0), b(2, 0, 0), mid(1, 0, 0), far(3, 0, 0);
  // Collinear with the middle vertex inside, with a vertex beyond, with a repeated vertex, and a point.
  const Tri3 tris[] = {{a, mid, b}, {a, b, far}, {a, a, b}, {b, b, b}};
  const Vec3 probes[] = {{0.5, 1, 0}, {-1, 0, 1}, {2.5, -1, 0}, {5, 0, 0}, {1.5, 0, 0}};
  for (const Tri3& t : tris) {
    const double lo = std::min({t[0].x(), t[1].x(), t[2].x()}), hi = std::max({t[0].x(), t[1].x(), t[2].x()});
    for (const Vec3& p : probes) {
      const Vec3 expected(std::clamp(p.x(), lo, hi), 0, 0);
      for (int perm = 0; perm < 6; ++perm) {
        const Tri3 q = Permuted(t, perm);
        const Vec3 got = ClosestPointOnTriangle(p, q[0], q[1], q[2]);
        ASSERT_TRUE(got.allFinite());
        EXPECT_LE((got - expected).norm(), 1e-15) << "probe " << p.transpose() << ", segment " << lo << " " << hi;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// SegmentSegmentDistanceSquared.

struct SegmentPair {
  Vec3 p0, p1, q0, q1;
};

// Generic, parallel, collinear (overlapping or not), nearly parallel, crossing, and zero-length pairs.
SegmentPair RandomSegmentPair(std::mt19937_64& rng) {
  SegmentPair s{Uniform(rng, -1, 1), Uniform(rng, -1, 1), Uniform(rng, -1, 1), Uniform(rng, -1, 1)};
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  switch (std::uniform_int_distribution<int>(0, 8)(rng)) {
    case 0:
    case 1:
      break;
    case 2:  // Parallel, offset.
      s.q1 = s.q0 + u(rng) * (s.p1 - s.p0);
      break;
    case 3:  // Collinear.
      s.q0 = s.p0 + u(rng) * (s.p1 - s.p0);
      s.q1 = s.p0 + u(rng) * (s.p1 - s.p0);
      break;
    case 4: {  // Nearly parallel.
      const double k = u(rng), tilt = LogUniform(rng, -12, -4);
      s.q1 = s.q0 + k * (s.p1 - s.p0) + tilt * RandomUnit(rng);
      break;
    }
    case 5: {  // Crossing or nearly crossing.
      const Vec3 x = s.p0 + std::uniform_real_distribution<double>(0, 1)(rng) * (s.p1 - s.p0);
      const Vec3 d = RandomUnit(rng);
      const double back = std::uniform_real_distribution<double>(0, 1)(rng), miss = LogUniform(rng, -15, -6);
      s.q0 = x - back * d + miss * RandomUnit(rng);
      s.q1 = s.q0 + d;
      break;
    }
    case 6:
      s.p1 = s.p0;
      break;
    case 7:
      s.q1 = s.q0;
      break;
    case 8:
      s.p1 = s.p0;
      s.q1 = s.q0;
      break;
  }
  if (std::uniform_int_distribution<int>(0, 1)(rng)) std::swap(s.p0, s.p1);
  return s;
}

LD OracleSegSeg2(const SegmentPair& s) { return OracleSegSeg2(L(s.p0), L(s.p1), L(s.q0), L(s.q1)); }

TEST(SegmentSegment, MatchesCaseAnalysisOracle) {
  std::mt19937_64 rng(21);
  for (int iter = 0; iter < 200000; ++iter) {
    const SegmentPair s = RandomSegmentPair(rng);
    Vec3 cp, cq;
    const double d2 = SegmentSegmentDistanceSquared(s.p0, s.p1, s.q0, s.q1, &cp, &cq);
    ASSERT_TRUE(std::isfinite(d2) && cp.allFinite() && cq.allFinite());
    EXPECT_EQ(d2, (cp - cq).squaredNorm());
    const double d = std::sqrt(d2), d_oracle = static_cast<double>(std::sqrt(OracleSegSeg2(s)));
    ASSERT_NEAR(d, d_oracle, 1e-14) << "iteration " << iter;
    ASSERT_LE(static_cast<double>((L(cp) - OracleOnSegment(L(cp), L(s.p0), L(s.p1))).norm()), 1e-15);
    ASSERT_LE(static_cast<double>((L(cq) - OracleOnSegment(L(cq), L(s.q0), L(s.q1))).norm()), 1e-15);
    // Symmetric in the two segments and in their directions.
    EXPECT_NEAR(std::sqrt(SegmentSegmentDistanceSquared(s.q1, s.q0, s.p0, s.p1, nullptr, nullptr)), d, 1e-14);
  }
}

TEST(SegmentSegment, CaseAnalysisOracleAndProductAgreeWithSearch) {
  std::mt19937_64 rng(22);
  for (int iter = 0; iter < 1000; ++iter) {
    const SegmentPair s = RandomSegmentPair(rng);
    const double search = static_cast<double>(std::sqrt(SearchSegSeg2(L(s.p0), L(s.p1), L(s.q0), L(s.q1))));
    const double oracle = static_cast<double>(std::sqrt(OracleSegSeg2(s)));
    const double d = std::sqrt(SegmentSegmentDistanceSquared(s.p0, s.p1, s.q0, s.q1, nullptr, nullptr));
    ASSERT_NEAR(oracle, search, 1e-12) << "iteration " << iter;
    ASSERT_NEAR(d, search, 1e-12) << "iteration " << iter;
  }
}

TEST(SegmentSegment, ParallelCollinearAndZeroLength) {
  const Vec3 o(0, 0, 0), x2(2, 0, 0);
  struct Case {
    Vec3 p0, p1, q0, q1;
    double d2;
  };
  const Case cases[] = {
      {o, x2, {1, 1, 0}, {3, 1, 0}, 1},     // Parallel, overlapping: the offset.
      {o, x2, {3, 1, 0}, {5, 1, 0}, 2},     // Parallel, disjoint: endpoint to endpoint.
      {o, x2, {1, 0, 0}, {4, 0, 0}, 0},     // Collinear, overlapping.
      {o, x2, {3, 0, 0}, {4, 0, 0}, 1},     // Collinear, disjoint.
      {o, x2, {2, 0, 0}, {4, 0, 0}, 0},     // Collinear, sharing an endpoint.
      {o, x2, {-1, 0, 0}, {3, 0, 0}, 0},    // Collinear, containing.
      {o, x2, {1, 1, 1}, {1, 1, 1}, 2},     // Zero-length against a segment.
      {o, o, {1, 1, 1}, {1, 1, 1}, 3},      // Two points.
      {o, o, o, o, 0},                      // The same point.
      {o, x2, {1, -1, 1}, {1, 1, 1}, 1},    // Skew, interior closest points.
      {o, x2, {1, -1, 0}, {1, 1, 0}, 0},    // Crossing.
      {o, x2, {3, -1, 2}, {3, 1, 2}, 5},    // Skew, clamped on one side.
      {o, x2, {2, 0, 0}, {2, 3, 0}, 0},     // T-junction at an endpoint.
  };
  for (const Case& k : cases) {
    const Vec3 pts[2][2] = {{k.p0, k.p1}, {k.q0, k.q1}};
    for (int m = 0; m < 8; ++m) {
      const int first = m & 1, rev_a = (m >> 1) & 1, rev_b = (m >> 2) & 1;
      const Vec3 &a0 = pts[first][rev_a], &a1 = pts[first][1 - rev_a];
      const Vec3 &b0 = pts[1 - first][rev_b], &b1 = pts[1 - first][1 - rev_b];
      Vec3 cp, cq;
      const double d2 = SegmentSegmentDistanceSquared(a0, a1, b0, b1, &cp, &cq);
      EXPECT_NEAR(d2, k.d2, 1e-15) << k.p0.transpose() << " | " << k.p1.transpose() << " | " << k.q0.transpose()
                                    << " | " << k.q1.transpose() << " ordering " << m;
      EXPECT_EQ((cp - cq).squaredNorm(), d2);
    }
  }
}

TEST(SegmentSegment, ClampedEndpointsAreReturnedExactly) {
  // Two edges meeting at a shared endpoint: the closest points are that endpoint, bit for bit.
  std::mt19937_64 rng(23);
  for (int iter = 0; iter < 10000; ++iter) {
    const Vec3 v = Uniform(rng, -1, 1), a = Uniform(rng, -1, 1), b = Uniform(rng, -1, 1);
    if ((a - v).normalized().dot((b - v).normalized()) > 0.99) continue;  // Not nearly collinear.
    // Every direction of the two segments.
    for (int m = 0; m < 4; ++m) {
      const Vec3 &p0 = m & 1 ? v : a, &p1 = m & 1 ? a : v, &q0 = m & 2 ? b : v, &q1 = m & 2 ? v : b;
      Vec3 cp, cq;
      const double d2 = SegmentSegmentDistanceSquared(p0, p1, q0, q1, &cp, &cq);
      ASSERT_EQ(d2, 0.0) << "iteration " << iter << ", directions " << m;
      ASSERT_EQ(cp, v) << "iteration " << iter << ", directions " << m;
      ASSERT_EQ(cq, v) << "iteration " << iter << ", directions " << m;
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// TrianglesIntersect.

// Triangles with vertices in the unit box: about a third of the pairs intersect.
TEST(TrianglesIntersect, AgreesWithTriangleDistanceOnRandomPairs) {
  std::mt19937_64 rng(31);
  int intersecting = 0, near_zero = 0, order_dependent = 0;
  constexpr int kPairs = 150000;
  for (int iter = 0; iter < kPairs; ++iter) {
    const Tri3 A = RandomTriangle(rng, Shape::kGeneric, Vec3::Constant(0.5), 0.5);
    const Tri3 B = RandomTriangle(rng, Shape::kGeneric, Vec3::Constant(0.5), 0.5);
    const bool hit = Hit(A, B);
    Vec3 pa, pb;
    const double d = Dist(A, B, &pa, &pb);
    if (d > 0 && d <= 1e-12) {
      ++near_zero;
      continue;
    }
    ASSERT_EQ(hit, d == 0) << "iteration " << iter << ", distance " << d;
    intersecting += hit;
    if (!hit) {
      ASSERT_NEAR(d, static_cast<double>(OracleFeatureDistance(A, B)), 1e-13) << "iteration " << iter;
    }
    // The answer depends neither on the argument order nor on the vertex order.
    const int pa_perm = iter % 6, pb_perm = (iter / 6) % 6;
    if (Hit(Permuted(B, pb_perm), Permuted(A, pa_perm)) != hit) {
      ++order_dependent;
      ASSERT_LE(std::abs(SeparatingGap(A, B)), 1e-12L) << "iteration " << iter;
    }
  }
  EXPECT_GT(intersecting, kPairs / 5);
  EXPECT_LT(intersecting, kPairs * 4 / 5);
  EXPECT_LT(near_zero, 10);
  EXPECT_LT(order_dependent, 10);
  std::printf("intersecting %d of %d, skipped with distance in (0, 1e-12]: %d, order-dependent: %d\n", intersecting,
              kPairs, near_zero, order_dependent);
}

TEST(TrianglesIntersect, MatchesSeparatingAxisOracle) {
  std::mt19937_64 rng(32);
  int ambiguous = 0, intersecting = 0;
  constexpr int kPairs = 150000;
  for (int iter = 0; iter < kPairs; ++iter) {
    const double size = LogUniform(rng, -1, 1);
    const Vec3 center = Uniform(rng, -5, 5);
    const Shape sa = iter % 4 == 0 ? (iter % 8 == 0 ? Shape::kNeedle : Shape::kSliver) : Shape::kGeneric;
    const Tri3 A = RandomTriangle(rng, sa, center, size);
    const Tri3 B = RandomTriangle(rng, Shape::kGeneric, center + Uniform(rng, -size / 2, size / 2), size);
    const LD gap = SeparatingGap(A, B);
    const double margin = 1e-9 * (size + center.norm());
    if (std::abs(gap) <= margin) {
      ++ambiguous;
      continue;
    }
    const bool expected = gap < 0;
    intersecting += expected;
    ASSERT_EQ(Hit(A, B), expected) << "iteration " << iter << ", gap " << static_cast<double>(gap);
    ASSERT_EQ(Hit(B, A), expected) << "iteration " << iter;
  }
  EXPECT_GT(intersecting, kPairs / 10);
  EXPECT_LT(ambiguous, kPairs / 1000);
  std::printf("intersecting %d of %d, within the margin: %d\n", intersecting, kPairs, ambiguous);
}

// Includes degenerate (segment-like and point) triangles, which the separating axes do not cover.
TEST(TrianglesIntersect, MatchesEdgeCrossingOracleIncludingDegenerateTriangles) {
  std::mt19937_64 rng(33);
  int ambiguous = 0, intersecting = 0, degenerate = 0;
  constexpr int kPairs = 100000;
  for (int iter = 0; iter < kPairs; ++iter) {
    const Tri3 A = RandomTriangle(rng, RandomShape(rng, true), Vec3::Zero(), 1.0);
    const Shape shape_b = RandomShape(rng, true);
    const Tri3 B = RandomTriangle(rng, shape_b, Uniform(rng, -0.5, 0.5), 1.0);
    const CrossingVerdict v = OracleEdgeCrossing(A, B);
    if (v.margin <= 1e-9L) {
      ++ambiguous;
      continue;
    }
    degenerate += Condition(A).degenerate || Condition(B).degenerate;
    intersecting += v.intersect;
    ASSERT_EQ(Hit(A, B), v.intersect) << "iteration " << iter;
    ASSERT_EQ(Hit(B, A), v.intersect) << "iteration " << iter;
    // The product's own segment test gives the same verdict.
    bool by_segments = false;
    for (int i = 0; i < 3 && !by_segments; ++i) {
      by_segments = SegmentTriangle(A[i], A[(i + 1) % 3], B[0], B[1], B[2], nullptr) ||
                    SegmentTriangle(B[i], B[(i + 1) % 3], A[0], A[1], A[2], nullptr);
    }
    if (!(Condition(A).degenerate && Condition(B).degenerate)) {
      ASSERT_EQ(by_segments, v.intersect) << iter;
    }
  }
  EXPECT_GT(intersecting, kPairs / 25);
  EXPECT_GT(degenerate, kPairs / 4);
  EXPECT_LT(ambiguous, kPairs / 200);
  std::printf("intersecting %d of %d, with a degenerate triangle %d, within the margin: %d\n", intersecting, kPairs,
              degenerate, ambiguous);
}

// Coplanar pairs whose second triangle is built from the first's plane (off it by rounding only),
// and nearly parallel pairs that straddle each other's planes, which the interval test resolves along
// a line that the small angle makes ill-conditioned.
TEST(TrianglesIntersect, CoplanarAndNearlyParallelPairs) {
  std::mt19937_64 rng(35);
  int ambiguous = 0, intersecting = 0;
  constexpr int kPairs = 40000;
  std::uniform_real_distribution<double> w(-1.0, 2.0);
  for (int iter = 0; iter < kPairs; ++iter) {
    const Tri3 A = RandomTriangle(rng, Shape::kGeneric, Vec3::Zero(), 1.0);
    const Vec3 e1 = A[1] - A[0], e2 = A[2] - A[0];
    Tri3 B;
    for (Vec3& x : B) {
      const double w1 = w(rng), w2 = w(rng);
      x = A[0] + w1 * e1 + w2 * e2;
    }
    if (Condition(B).degenerate) continue;
    LD gap;
    if (iter % 2 == 0) {
      gap = CoplanarGap(A, B);
    } else {
      // Tilt B about a line of A's plane through a point of each triangle, so that each straddles the
      // other's plane.
      std::uniform_real_distribution<double> u(0.0, 1.0);
      const double ua = u(rng), va = u(rng) * (1 - ua), ub = u(rng), vb = u(rng) * (1 - ub);
      const Vec3 pa = A[0] + ua * e1 + va * e2, pb = B[0] + ub * (B[1] - B[0]) + vb * (B[2] - B[0]);
      const double angle = LogUniform(rng, -6, -2) * (iter % 4 == 1 ? 1 : -1);
      const Eigen::AngleAxisd tilt(angle, (pb - pa).normalized());
      for (Vec3& x : B) x = pa + tilt * (x - pa);
      gap = SeparatingGap(A, B);
    }
    if (std::abs(gap) <= 1e-9L) {
      ++ambiguous;
      continue;
    }
    const bool expected = gap < 0;
    intersecting += expected;
    ASSERT_EQ(Hit(A, B), expected) << "iteration " << iter << ", gap " << static_cast<double>(gap);
    ASSERT_EQ(Hit(B, A), expected) << "iteration " << iter << ", gap " << static_cast<double>(gap);
  }
  EXPECT_GT(intersecting, kPairs / 10);
  EXPECT_LT(ambiguous, kPairs / 100);
}

// Checks one expected verdict under all 36 vertex orderings and both argument orders, and that
// TriangleDistance agrees (0 with a common point on both triangles, or a positive distance).
void ExpectIntersect(const Tri3& A, const Tri3& B, bool expected, const char* what) {
  for (int pa = 0; pa < 6; ++pa) {
    for (int pb = 0; pb < 6; ++pb) {
      const Tri3 a = Permuted(A, pa), b = Permuted(B, pb);
      EXPECT_EQ(Hit(a, b), expected) << what << ", orderings " << pa << " " << pb;
      EXPECT_EQ(Hit(b, a), expected) << what << ", swapped, orderings " << pa << " " << pb;
      Vec3 p, q;
      const double d = Dist(a, b, &p, &q);
      if (expected) {
        EXPECT_EQ(d, 0.0) << what;
        EXPECT_EQ(p, q) << what;
        EXPECT_LE(OraclePointTriangle(p, A), 1e-12L) << what;
        EXPECT_LE(OraclePointTriangle(p, B), 1e-12L) << what;
      } else {
        EXPECT_GT(d, 0.0) << what;
      }
    }
  }
}

TEST(TrianglesIntersect, ConstructedCases) {
  // Small integers keep every computation exact, so touching configurations are exactly touching.
  const Tri3 base = {Vec3(0, 0, 0), Vec3(4, 0, 0), Vec3(0, 4, 0)};
  ExpectIntersect(base, base, true, "identical");
  ExpectIntersect(base, {Vec3(0, 0, 0), Vec3(-3, 1, 2), Vec3(-1, -2, 5)}, true, "shared vertex");
  ExpectIntersect(base, {Vec3(4, 0, 0), Vec3(0, 4, 0), Vec3(3, 3, 2)}, true, "shared edge");
  ExpectIntersect(base, {Vec3(4, 0, 0), Vec3(0, 4, 0), Vec3(3, 3, 0)}, true, "shared edge, coplanar");
  ExpectIntersect(base, {Vec3(1, 1, 0), Vec3(2, 1, 0), Vec3(1, 1, 3)}, true, "edge lying on the face");
  ExpectIntersect(base, {Vec3(1, 1, 0), Vec3(0, 0, 2), Vec3(2, 0, 3)}, true, "vertex touching the face");
  ExpectIntersect(base, {Vec3(2, -1, 1), Vec3(2, 1, -1), Vec3(2, -1, -1)}, true, "edge touching an edge");
  ExpectIntersect(base, {Vec3(1, 1, -2), Vec3(1, 1, 2), Vec3(5, 5, 0)}, true, "piercing");
  ExpectIntersect(base, {Vec3(1, 1, -2), Vec3(2, 1, 2), Vec3(-3, -3, 1)}, true, "piercing, both ways");
  ExpectIntersect(base, {Vec3(1, 1, 0), Vec3(5, 1, 0), Vec3(1, 5, 0)}, true, "coplanar, overlapping");
  ExpectIntersect(base, {Vec3(1, 1, 0), Vec3(2, 1, 0), Vec3(1, 2, 0)}, true, "coplanar, contained");
  ExpectIntersect(base, {Vec3(-1, -1, 0), Vec3(9, -1, 0), Vec3(-1, 9, 0)}, true, "coplanar, containing");
  ExpectIntersect(base, {Vec3(2, 2, 0), Vec3(5, 2, 0), Vec3(2, 5, 0)}, true, "coplanar, vertex on edge");
  ExpectIntersect(base, {Vec3(1, -1, 0), Vec3(2, 5, 0), Vec3(3, -1, 0)}, true, "coplanar, edges crossing only");
  ExpectIntersect(base, {Vec3(3, 3, 0), Vec3(5, 3, 0), Vec3(3, 5, 0)}, false, "coplanar, disjoint");
  ExpectIntersect(base, {Vec3(4, 4, 0), Vec3(4, 4, 0), Vec3(5, 5, 0)}, false, "coplanar, disjoint segment");
  ExpectIntersect(base, {Vec3(1, 1, 1), Vec3(3, 1, 1), Vec3(1, 3, 1)}, false, "parallel planes");
  ExpectIntersect(base, {Vec3(5, 5, -1), Vec3(5, 5, 1), Vec3(6, 7, 0)}, false, "straddling the plane, beside");
  // Degenerate triangles.
  ExpectIntersect(base, {Vec3(1, 1, -1), Vec3(1, 1, 1), Vec3(1, 1, 3)}, true, "collinear triangle piercing");
  ExpectIntersect(base, {Vec3(1, 1, -1), Vec3(1, 1, -1), Vec3(1, 1, 1)}, true, "repeated-vertex triangle piercing");
  ExpectIntersect(base, {Vec3(1, 1, 0), Vec3(1, 1, 2), Vec3(1, 1, 1)}, true, "segment ending on the face");
  ExpectIntersect(base, {Vec3(1, 1, 0), Vec3(1, 1, 0), Vec3(1, 1, 0)}, true, "point on the face");
  ExpectIntersect(base, {Vec3(4, 0, 0), Vec3(4, 0, 0), Vec3(4, 0, 0)}, true, "point on a vertex");
  ExpectIntersect(base, {Vec3(1, 1, 1), Vec3(1, 1, 1), Vec3(1, 1, 1)}, false, "point above the face");
  ExpectIntersect(base, {Vec3(-1, 1, 0), Vec3(3, 1, 0), Vec3(5, 1, 0)}, true, "segment in the plane, crossing");
  ExpectIntersect(base, {Vec3(-2, 1, 0), Vec3(-1, 1, 0), Vec3(-3, 1, 0)}, false, "segment in the plane, outside");
  ExpectIntersect(base, {Vec3(1, 1, 1), Vec3(2, 2, 1), Vec3(3, 3, 1)}, false, "segment above the face");
  const Tri3 seg = {Vec3(0, 0, 0), Vec3(2, 2, 0), Vec3(1, 1, 0)};
  ExpectIntersect(seg, {Vec3(0, 2, 0), Vec3(2, 0, 0), Vec3(2, 0, 0)}, true, "two segments crossing");
  ExpectIntersect(seg, {Vec3(0, 2, 1), Vec3(2, 0, 1), Vec3(2, 0, 1)}, false, "two skew segments");
  ExpectIntersect(seg, {Vec3(2, 2, 0), Vec3(3, 3, 0), Vec3(3, 3, 0)}, true, "two segments end to end");
  ExpectIntersect(seg, {Vec3(1, 1, 0), Vec3(1, 1, 0), Vec3(1, 1, 0)}, true, "point on a segment");
}

TEST(TrianglesIntersect, SharedFeaturesAndNearMissesAfterRigidMotions) {
  // Shared vertices and edges stay bit-for-bit shared under any pose, so they must keep touching;
  // a 1e-9 offset must separate them.
  std::mt19937_64 rng(34);
  for (int iter = 0; iter < 2000; ++iter) {
    const RigidTransform X = proximity::testing::RandomPose(rng, Vec3::Constant(-3), Vec3::Constant(3));
    const Vec3 v0 = X * Vec3(0, 0, 0), v1 = X * Vec3(1, 0, 0), v2 = X * Vec3(0, 1, 0);
    const Vec3 n = X.R * Vec3::UnitZ();
    const Tri3 A = {v0, v1, v2};
    // Shared vertex, the second triangle on one side of the plane.
    const Tri3 Bv = {v1, X * Vec3(2, 1, 1), X * Vec3(1.5, -1, 0.5)};
    // Shared edge, folded.
    const Tri3 Be = {v1, v2, X * Vec3(1, 1, 0.7)};
    const Tri3 Be_flat = {v1, v2, X * Vec3(1, 1, 0)};
    ASSERT_TRUE(Hit(A, Bv) && Hit(Bv, A)) << iter;
    ASSERT_TRUE(Hit(A, Be) && Hit(Be, A)) << iter;
    ASSERT_TRUE(Hit(A, Be_flat) && Hit(Be_flat, A)) << iter;
    // Near misses: lifted off the plane, and shifted away in the plane.
    const Tri3 lifted = {v1 + 1e-9 * n, Bv[1], Bv[2]};
    const Tri3 apart = {v1 + 1e-9 * (v1 - v0), Bv[1] + 1e-9 * (v1 - v0), Bv[2] + 1e-9 * (v1 - v0)};
    const Vec3 out = X.R * Vec3(1, 1, 0).normalized() * 1e-9;
    const Tri3 beside = {v1 + out, v2 + out, Be_flat[2] + out};
    ASSERT_FALSE(Hit(A, lifted) || Hit(lifted, A)) << iter;
    ASSERT_FALSE(Hit(A, apart) || Hit(apart, A)) << iter;
    ASSERT_FALSE(Hit(A, beside) || Hit(beside, A)) << iter;
  }
}

TEST(TrianglesIntersect, DegenerateTrianglesTouchingWithinRounding) {
  // Segment-like and point triangles meeting at a point that is only representable up to rounding
  // touch; moved apart by 1e-9 they do not.
  std::mt19937_64 rng(36);
  for (int iter = 0; iter < 5000; ++iter) {
    const Vec3 p0 = Uniform(rng, -3, 3), p1 = Uniform(rng, -3, 3);
    const double s = std::uniform_real_distribution<double>(0.05, 0.95)(rng);
    const Vec3 x = p0 + s * (p1 - p0);
    const Tri3 A = {p0, p1, p0 + 0.5 * (p1 - p0)};
    const Vec3 d = RandomUnit(rng);
    const Tri3 crossing = {x - d, x + d, x + 0.25 * d};
    const Tri3 point = {x, x, x};
    ASSERT_TRUE(Hit(A, crossing) && Hit(crossing, A)) << "iteration " << iter;
    ASSERT_TRUE(Hit(A, point) && Hit(point, A)) << "iteration " << iter;
    const Vec3 away = (p1 - p0).cross(d).normalized() * 1e-9;
    const Tri3 moved = {crossing[0] + away, crossing[1] + away, crossing[2] + away};
    ASSERT_FALSE(Hit(A, moved) || Hit(moved, A)) << "iteration " << iter;
    Vec3 pa, pb;
    ASSERT_EQ(Dist(A, crossing, &pa, &pb), 0.0) << "iteration " << iter;
    ASSERT_NEAR(Dist(A, moved, &pa, &pb), 1e-9, 1e-14) << "iteration " << iter;
  }
}

// ---------------------------------------------------------------------------------------------------
// TriangleDistance.

// Checks one TriangleDistance answer against the oracles and returns whether it reported contact.
// The tolerance grows with the conditioning of the two triangles.
bool CheckDistance(const Tri3& A, const Tri3& B, double scale, const char* what, int iter) {
  Vec3 pa, pb;
  const double d = Dist(A, B, &pa, &pb);
  EXPECT_TRUE(std::isfinite(d) && pa.allFinite() && pb.allFinite()) << what << " " << iter;
  const Conditioning ca = Condition(A), cb = Condition(B);
  const double tol = 1e-13 * scale * (1 + ca.inv_sine + cb.inv_sine);
  // The closest points lie on their triangles and realise the distance.
  EXPECT_LE(OraclePointTriangle(pa, A), tol) << what << " " << iter;
  EXPECT_LE(OraclePointTriangle(pb, B), tol) << what << " " << iter;
  EXPECT_NEAR((pa - pb).norm(), d, 1e-12 * std::max(d, 1e-3 * scale)) << what << " " << iter;
  const CrossingVerdict v = OracleEdgeCrossing(A, B);
  const LD feature = OracleFeatureDistance(A, B);
  if (d == 0) {
    EXPECT_EQ(pa, pb) << what << " " << iter;
    // Contact: no edge clearly misses, or the triangles are within the product's rounding.
    if (!v.intersect) {
      EXPECT_LE(std::min(v.margin, feature), tol + ca.width + cb.width) << what << " " << iter;
    }
  } else {
    if (v.intersect) {
      EXPECT_LE(v.margin, tol + ca.width + cb.width) << what << " " << iter;
    }
    if (!v.intersect) {
      EXPECT_NEAR(d, static_cast<double>(feature), tol) << what << " " << iter;
    }
  }
  return d == 0;
}

TEST(TriangleDistance, MatchesFeatureOracleOnRandomPairs) {
  std::mt19937_64 rng(41);
  int contacts = 0;
  constexpr int kPairs = 60000;
  for (int iter = 0; iter < kPairs; ++iter) {
    const double size = LogUniform(rng, -1, 1);
    const Vec3 center = Uniform(rng, -5, 5);
    const bool degenerate = iter % 5 == 0;
    const Tri3 A = RandomTriangle(rng, RandomShape(rng, degenerate), center, size);
    const double reach = std::uniform_real_distribution<double>(0, 2.5 * size)(rng);
    const Vec3 offset = RandomUnit(rng) * reach;
    const Tri3 B = RandomTriangle(rng, RandomShape(rng, degenerate), center + offset, size);
    contacts += CheckDistance(A, B, size + center.norm(), "random", iter);
    if (HasFailure()) return;
  }
  EXPECT_GT(contacts, kPairs / 40);
  EXPECT_LT(contacts, kPairs / 2);
}

TEST(TriangleDistance, NeverExceedsSampledPointDistances) {
  std::mt19937_64 rng(42);
  constexpr int kN = 16;
  std::vector<Vec3> sa, sb;
  for (int iter = 0; iter < 400; ++iter) {
    const Tri3 A = RandomTriangle(rng, RandomShape(rng, iter % 3 == 0), Vec3::Zero(), 1.0);
    const Shape shape_b = RandomShape(rng, iter % 3 == 0);
    const Tri3 B = RandomTriangle(rng, shape_b, RandomUnit(rng) * 1.5, 1.0);
    auto sample = [](const Tri3& t, std::vector<Vec3>* out) {
      out->clear();
      for (int i = 0; i <= kN; ++i)
        for (int j = 0; i + j <= kN; ++j) {
          out->push_back(t[0] + (double(i) / kN) * (t[1] - t[0]) + (double(j) / kN) * (t[2] - t[0]));
        }
    };
    sample(A, &sa);
    sample(B, &sb);
    double sampled = kInf;
    for (const Vec3& x : sa)
      for (const Vec3& y : sb) sampled = std::min(sampled, (x - y).norm());
    Vec3 pa, pb;
    ASSERT_LE(Dist(A, B, &pa, &pb), sampled + 1e-12) << "iteration " << iter;
  }
}

TEST(TriangleDistance, InvariantUnderRigidMotions) {
  std::mt19937_64 rng(43);
  for (int iter = 0; iter < 20000; ++iter) {
    const Tri3 A = RandomTriangle(rng, RandomShape(rng, iter % 4 == 0), Vec3::Zero(), 1.0);
    const Shape shape_b = RandomShape(rng, iter % 4 == 0);
    const Tri3 B = RandomTriangle(rng, shape_b, RandomUnit(rng) * 1.2, 1.0);
    const RigidTransform X = proximity::testing::RandomPose(rng, Vec3::Constant(-10), Vec3::Constant(10));
    const Tri3 XA = {X * A[0], X * A[1], X * A[2]}, XB = {X * B[0], X * B[1], X * B[2]};
    Vec3 p, q;
    const double d = Dist(A, B, &p, &q), dx = Dist(XA, XB, &p, &q);
    const Conditioning ca = Condition(A), cb = Condition(B);
    // The posed copy is rounded, which moves a degenerate triangle's width and a sliver's plane.
    const double floor = 1e-12 * (1 + ca.inv_sine + cb.inv_sine) + ca.width + cb.width;
    ASSERT_NEAR(dx, d, 1e-9 * d + floor) << "iteration " << iter;
  }
}

TEST(TriangleDistance, ConstructedCases) {
  const Tri3 base = {Vec3(0, 0, 0), Vec3(4, 0, 0), Vec3(0, 4, 0)};
  struct Case {
    Tri3 B;
    double distance;
    const char* what;
  };
  const Case cases[] = {
      {{Vec3(0, 0, 2), Vec3(4, 0, 2), Vec3(0, 4, 2)}, 2, "stacked faces"},
      {{Vec3(1, 1, 3), Vec3(9, 9, 5), Vec3(-9, 9, 8)}, 3, "vertex over the face"},
      {{Vec3(1, 1, -3), Vec3(9, 9, -5), Vec3(-9, 9, -8)}, 3, "vertex under the face"},
      {{Vec3(2, -1, 1), Vec3(2, 1, 1), Vec3(2, 0, 5)}, 1, "edge over an edge"},
      {{Vec3(6, 0, 0), Vec3(9, 0, 0), Vec3(6, 3, 0)}, 2, "coplanar, vertex to vertex"},
      {{Vec3(3, 3, 0), Vec3(6, 3, 0), Vec3(3, 6, 0)}, std::sqrt(2.0), "coplanar, vertex to edge"},
      {{Vec3(-1, -1, -1), Vec3(-1, -1, -1), Vec3(-1, -1, -1)}, std::sqrt(3.0), "point"},
      {{Vec3(1, 1, 2), Vec3(2, 1, 2), Vec3(3, 1, 2)}, 2, "segment over the face"},
      {{Vec3(-2, -1, 0), Vec3(-2, 1, 0), Vec3(-2, 5, 0)}, 2, "segment beside, in the plane"},
      {{Vec3(2, 2, 5), Vec3(2, 2, 5), Vec3(8, 8, 5)}, 5, "segment over the hypotenuse"},
      {{Vec3(5, 5, 0), Vec3(5, 5, 1), Vec3(6, 6, 0)}, std::sqrt(18.0), "straddling the plane, beside"},
  };
  for (const Case& k : cases) {
    for (int pa = 0; pa < 6; ++pa) {
      for (int pb = 0; pb < 6; ++pb) {
        const Tri3 a = Permuted(base, pa), b = Permuted(k.B, pb);
        Vec3 p, q;
        EXPECT_NEAR(Dist(a, b, &p, &q), k.distance, 1e-14) << k.what;
        EXPECT_NEAR((p - q).norm(), k.distance, 1e-14) << k.what;
        EXPECT_NEAR(Dist(b, a, &q, &p), k.distance, 1e-14) << k.what << ", swapped";
        EXPECT_LE(OraclePointTriangle(p, base), 1e-14L) << k.what;
        EXPECT_LE(OraclePointTriangle(q, k.B), 1e-14L) << k.what;
      }
    }
  }
}

TEST(TriangleDistance, FiniteAndExactOnAllDegenerateCombinations) {
  // Every shape against every shape at contact scale: no NaN, answers per the oracles.
  std::mt19937_64 rng(44);
  const Shape shapes[] = {Shape::kGeneric, Shape::kNeedle, Shape::kSliver, Shape::kCollinear, Shape::kRepeated,
                          Shape::kPoint};
  int iter = 0;
  for (Shape sa : shapes)
    for (Shape sb : shapes)
      for (int k = 0; k < 500; ++k, ++iter) {
        const Tri3 A = RandomTriangle(rng, sa, Vec3::Zero(), 1.0);
        const Tri3 B = RandomTriangle(rng, sb, Uniform(rng, -1, 1), 1.0);
        CheckDistance(A, B, 3.0, "shapes", iter);
        if (HasFailure()) return;
      }
}

// ---------------------------------------------------------------------------------------------------
// RayTriangle and SegmentTriangle.

TEST(RayTriangle, MatchesPlaneAndAreaOracle) {
  std::mt19937_64 rng(51);
  int hits = 0, ambiguous = 0;
  constexpr int kRays = 100000;
  for (int iter = 0; iter < kRays; ++iter) {
    const Tri3 T = RandomTriangle(rng, iter % 4 ? Shape::kGeneric : Shape::kSliver, Vec3::Zero(), 1.0);
    const Vec3 o = Uniform(rng, -3, 3);
    // Half the rays aim at a point near the triangle, with random length scale.
    Vec3 dir = RandomUnit(rng);
    if (iter % 2) {
      std::uniform_real_distribution<double> w(-0.3, 1.1);
      const double w1 = w(rng), w2 = w(rng);
      dir = T[0] + w1 * (T[1] - T[0]) + w2 * (T[2] - T[0]) - o;
    }
    dir *= LogUniform(rng, -2, 2);
    const OracleHit h = OracleLineTriangle(o, dir, T[0], T[1], T[2], std::numeric_limits<LD>::infinity());
    if (h.margin <= 1e-9L) {
      ++ambiguous;
      continue;
    }
    double t = -1, u = -1, v = -1;
    const bool hit = RayTriangle(o, dir, T[0], T[1], T[2], &t, &u, &v);
    ASSERT_EQ(hit, h.hit) << "iteration " << iter;
    if (!hit) continue;
    ++hits;
    const Conditioning c = Condition(T);
    const double tol = 1e-13 * (1 + c.inv_sine) * static_cast<double>(h.incidence);
    ASSERT_NEAR(t * dir.norm(), static_cast<double>(h.t) * dir.norm(), tol) << "iteration " << iter;
    ASSERT_NEAR(u, static_cast<double>(h.u), tol) << "iteration " << iter;
    ASSERT_NEAR(v, static_cast<double>(h.v), tol) << "iteration " << iter;
  }
  EXPECT_GT(hits, kRays / 10);
  EXPECT_LT(ambiguous, kRays / 500);
}

TEST(RayTriangle, EdgesVerticesBackFacesParallelAndCoplanar) {
  const Vec3 a(0, 0, 0), b(4, 0, 0), c(0, 4, 0);
  double t, u, v;
  // Through the interior from above, and from below (back face).
  ASSERT_TRUE(RayTriangle({1, 1, 4}, {0, 0, -2}, a, b, c, &t, &u, &v));
  EXPECT_EQ(t, 2);
  EXPECT_EQ(u, 0.25);
  EXPECT_EQ(v, 0.25);
  ASSERT_TRUE(RayTriangle({1, 2, -1}, {0, 0, 1}, a, b, c, &t, &u, &v));
  EXPECT_EQ(t, 1);
  EXPECT_EQ(u, 0.25);
  EXPECT_EQ(v, 0.5);
  // Exactly through an edge and through a vertex.
  ASSERT_TRUE(RayTriangle({2, 0, 1}, {0, 0, -1}, a, b, c, &t, &u, &v));
  EXPECT_EQ(v, 0);
  ASSERT_TRUE(RayTriangle({2, 2, 1}, {0, 0, -1}, a, b, c, &t, &u, &v));
  EXPECT_EQ(u + v, 1);
  ASSERT_TRUE(RayTriangle({4, 0, 3}, {0, 0, -1}, a, b, c, &t, &u, &v));
  EXPECT_EQ(t, 3);
  EXPECT_EQ(u, 1);
  EXPECT_EQ(v, 0);
  // Just outside an edge, pointing away, and starting on the face.
  EXPECT_FALSE(RayTriangle({2, -1e-12, 1}, {0, 0, -1}, a, b, c, &t, &u, &v));
  EXPECT_FALSE(RayTriangle({1, 1, 1}, {0, 0, 1}, a, b, c, &t, &u, &v));
  ASSERT_TRUE(RayTriangle({1, 1, 0}, {0, 0, 1}, a, b, c, &t, &u, &v));
  EXPECT_EQ(t, 0);
  // Parallel off the plane: no hit.
  EXPECT_FALSE(RayTriangle({-1, 1, 1}, {1, 0, 0}, a, b, c, &t, &u, &v));
  // In the plane: the first point of the closed triangle, or t = 0 from inside; a miss beside it.
  ASSERT_TRUE(RayTriangle({-2, 1, 0}, {2, 0, 0}, a, b, c, &t, &u, &v));
  EXPECT_EQ(t, 1);
  EXPECT_EQ(u, 0);
  EXPECT_EQ(v, 0.25);
  ASSERT_TRUE(RayTriangle({1, 1, 0}, {1, 0, 0}, a, b, c, &t, &u, &v));
  EXPECT_EQ(t, 0);
  EXPECT_FALSE(RayTriangle({-2, 5, 0}, {1, 0, 0}, a, b, c, &t, &u, &v));
  EXPECT_FALSE(RayTriangle({-2, 1, 0}, {-1, 0, 0}, a, b, c, &t, &u, &v));
  // Degenerate triangles: a segment is hit where the ray crosses it, with barycentrics (not unique
  // for a repeated vertex) that reproduce the hit point.
  ASSERT_TRUE(RayTriangle({1, -1, 0}, {0, 1, 0}, a, a, b, &t, &u, &v));
  EXPECT_EQ(t, 1);
  EXPECT_GE(u, 0);
  EXPECT_GE(v, 0);
  EXPECT_LE(u + v, 1);
  EXPECT_EQ(a + u * (a - a) + v * (b - a), Vec3(1, 0, 0));
  EXPECT_FALSE(RayTriangle({1, -1, 1}, {0, 1, 0}, a, a, b, &t, &u, &v));
  ASSERT_TRUE(RayTriangle({-1, 0, 0}, {1, 0, 0}, b, a, a, &t, &u, &v));
  EXPECT_EQ(t, 1);
  // A zero direction hits only from a point of the triangle.
  EXPECT_TRUE(RayTriangle({1, 1, 0}, {0, 0, 0}, a, b, c, &t, &u, &v));
  EXPECT_FALSE(RayTriangle({1, 1, 1}, {0, 0, 0}, a, b, c, &t, &u, &v));
}

TEST(SegmentTriangle, MatchesPlaneAndAreaOracle) {
  std::mt19937_64 rng(52);
  int hits = 0, ambiguous = 0;
  constexpr int kSegments = 100000;
  for (int iter = 0; iter < kSegments; ++iter) {
    const Tri3 T = RandomTriangle(rng, iter % 4 ? Shape::kGeneric : Shape::kNeedle, Vec3::Zero(), 1.0);
    const Vec3 p0 = Uniform(rng, -2, 2), p1 = Uniform(rng, -2, 2);
    const OracleHit h = OracleLineTriangle(p0, p1 - p0, T[0], T[1], T[2], 1);
    if (h.margin <= 1e-9L) {
      ++ambiguous;
      continue;
    }
    double t = -1;
    const bool hit = SegmentTriangle(p0, p1, T[0], T[1], T[2], &t);
    ASSERT_EQ(hit, h.hit) << "iteration " << iter;
    ASSERT_EQ(SegmentTriangle(p1, p0, T[2], T[0], T[1], nullptr), h.hit) << "iteration " << iter;
    if (!hit) continue;
    ++hits;
    ASSERT_NEAR(t, static_cast<double>(h.t), 1e-13 * (1 + Condition(T).inv_sine) * static_cast<double>(h.incidence))
        << "iteration " << iter;
  }
  EXPECT_GT(hits, kSegments / 50);
  EXPECT_LT(ambiguous, kSegments / 500);
}

TEST(RayTriangle, RaysFromAVertexHitAtZero) {
  // Exact contact with arbitrary coordinates: a ray that starts at a vertex starts on the triangle.
  std::mt19937_64 rng(53);
  for (int iter = 0; iter < 20000; ++iter) {
    const Tri3 T = RandomTriangle(rng, iter % 4 ? Shape::kGeneric : Shape::kNeedle, Uniform(rng, -5, 5), 1.0);
    const int k = iter % 3;
    const double length = LogUniform(rng, -2, 2);
    const Vec3 dir = RandomUnit(rng) * length;
    double t = -1, u = -1, v = -1;
    ASSERT_TRUE(RayTriangle(T[k], dir, T[0], T[1], T[2], &t, &u, &v)) << "iteration " << iter;
    EXPECT_EQ(t, 0) << "iteration " << iter;
    EXPECT_NEAR(u, k == 1 ? 1 : 0, 1e-12) << "iteration " << iter;
    EXPECT_NEAR(v, k == 2 ? 1 : 0, 1e-12) << "iteration " << iter;
  }
}

TEST(SegmentTriangle, SegmentsEndingAtAVertexHit) {
  std::mt19937_64 rng(54);
  for (int iter = 0; iter < 20000; ++iter) {
    const Tri3 T = RandomTriangle(rng, iter % 4 ? Shape::kGeneric : Shape::kSliver, Uniform(rng, -5, 5), 1.0);
    const Vec3& x = T[iter % 3];
    const double length = LogUniform(rng, -3, 1);
    const Vec3 y = x + RandomUnit(rng) * length;
    double t = -1;
    ASSERT_TRUE(SegmentTriangle(x, y, T[0], T[1], T[2], &t)) << "iteration " << iter;
    EXPECT_EQ(t, 0) << "iteration " << iter;
    ASSERT_TRUE(SegmentTriangle(y, x, T[0], T[1], T[2], &t)) << "iteration " << iter;
    // The far end is the first shared point unless the segment lies in the plane and enters earlier.
    EXPECT_LE(t, 1) << "iteration " << iter;
    if (std::abs((y - x).normalized().dot((T[1] - T[0]).cross(T[2] - T[0]).normalized())) > 1e-6) {
      EXPECT_EQ(t, 1) << "iteration " << iter;
    }
  }
}

TEST(SegmentTriangle, CollinearWithASegmentLikeTriangleGivesTheFirstSharedPoint) {
  std::mt19937_64 rng(55);
  std::uniform_real_distribution<double> u(-0.5, 1.5);
  int overlapping = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    const Vec3 p0 = Uniform(rng, -3, 3), p1 = Uniform(rng, -3, 3);
    const double alpha = u(rng), beta = u(rng), gamma = u(rng);
    const Vec3 a = p0 + alpha * (p1 - p0), b = p0 + beta * (p1 - p0), c = p0 + gamma * (p1 - p0);
    const double lo = std::min({alpha, beta, gamma}), hi = std::max({alpha, beta, gamma});
    double t = -1;
    const bool hit = SegmentTriangle(p0, p1, a, b, c, &t);
    if (hi < -1e-9 || lo > 1 + 1e-9) {
      ASSERT_FALSE(hit) << "iteration " << iter;
    } else if (hi > 1e-9 && lo < 1 - 1e-9) {
      ++overlapping;
      ASSERT_TRUE(hit) << "iteration " << iter;
      ASSERT_NEAR(t, std::clamp(lo, 0.0, 1.0), 1e-12) << "iteration " << iter;
    }
  }
  EXPECT_GT(overlapping, 2500);
}

TEST(SegmentTriangle, ConstructedCases) {
  const Vec3 a(0, 0, 0), b(4, 0, 0), c(0, 4, 0);
  struct Case {
    Vec3 p0, p1;
    bool hit;
    double t;
    const char* what;
  };
  const Case cases[] = {
      {{1, 1, -1}, {1, 1, 3}, true, 0.25, "crossing"},
      {{1, 1, 0}, {1, 1, 3}, true, 0, "starting on the face"},
      {{1, 1, 3}, {1, 1, 0}, true, 1, "ending on the face"},
      {{0, 0, 2}, {0, 0, 0}, true, 1, "ending on a vertex"},
      {{4, 0, 0}, {9, 9, 9}, true, 0, "starting on a vertex"},
      {{2, -1, -1}, {2, 1, 1}, true, 0.5, "through an edge"},
      {{1, 1, 1}, {1, 1, 3}, false, 0, "above"},
      {{5, 5, -1}, {5, 5, 1}, false, 0, "beside"},
      {{-1, 1, 1}, {3, 1, 1}, false, 0, "parallel above"},
      {{-2, 1, 0}, {2, 1, 0}, true, 0.5, "coplanar, entering"},
      {{1, 1, 0}, {9, 1, 0}, true, 0, "coplanar, leaving"},
      {{-3, 2, 0}, {5, 2, 0}, true, 0.375, "coplanar, through"},
      {{1, 1, 0}, {2, 1, 0}, true, 0, "coplanar, inside"},
      {{-4, 0, 0}, {-2, 0, 0}, false, 0, "coplanar, collinear with an edge, short of it"},
      {{-4, 0, 0}, {0, 0, 0}, true, 1, "coplanar, collinear, ending on a vertex"},
      {{6, 0, 0}, {1, 0, 0}, true, 0.4, "coplanar, along an edge"},
      {{-1, 6, 0}, {6, -1, 0}, false, 0, "coplanar, beyond the hypotenuse"},
      {{4, 4, 0}, {2, 2, 0}, true, 1, "coplanar, ending on the hypotenuse"},
      {{-1, 5, 0}, {5, -1, 0}, true, 1.0 / 6, "coplanar, along the hypotenuse"},
      {{1, 1, 0}, {1, 1, 0}, true, 0, "a point on the face"},
      {{1, 1, 1}, {1, 1, 1}, false, 0, "a point above"},
  };
  for (const Case& k : cases) {
    for (int perm = 0; perm < 6; ++perm) {
      const Tri3 T = Permuted({a, b, c}, perm);
      double t = -1;
      ASSERT_EQ(SegmentTriangle(k.p0, k.p1, T[0], T[1], T[2], &t), k.hit) << k.what;
      if (k.hit) {
        EXPECT_EQ(t, k.t) << k.what;
      }
    }
  }
  // Degenerate triangles are their hull segments.
  double t = -1;
  EXPECT_TRUE(SegmentTriangle({1, -1, 0}, {1, 1, 0}, a, b, b, &t));
  EXPECT_EQ(t, 0.5);
  EXPECT_TRUE(SegmentTriangle({-2, 0, 0}, {2, 0, 0}, b, a, Vec3(2, 0, 0), &t));
  EXPECT_EQ(t, 0.5);
  // Collinear overlap: the first shared point, whichever way the hull runs.
  for (int perm = 0; perm < 6; ++perm) {
    const Tri3 T = Permuted({a, b, Vec3(1, 0, 0)}, perm);
    EXPECT_TRUE(SegmentTriangle({-2, 0, 0}, {6, 0, 0}, T[0], T[1], T[2], &t));
    EXPECT_EQ(t, 0.25);
    EXPECT_TRUE(SegmentTriangle({6, 0, 0}, {-2, 0, 0}, T[0], T[1], T[2], &t));
    EXPECT_EQ(t, 0.25);
    EXPECT_TRUE(RayTriangle({-4, 0, 0}, {2, 0, 0}, T[0], T[1], T[2], &t, nullptr, nullptr));
    EXPECT_EQ(t, 2);
  }
  EXPECT_FALSE(SegmentTriangle({1, -1, 1}, {1, 1, 1}, a, b, b, &t));
  EXPECT_TRUE(SegmentTriangle({1, 0, -1}, {1, 0, 1}, Vec3(1, 0, 0), Vec3(1, 0, 0), Vec3(1, 0, 0), &t));
  EXPECT_EQ(t, 0.5);
}

}  // namespace
}  // namespace proximity::core
