#include "narrowphase/triangle.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

// Numerical conventions of this file.
//
// * A triangle is degenerate when the sine of its largest angle is below kDegenerateSine; it is then
//   treated as its hull segment (the longest edge). The normal of a non-degenerate triangle is the
//   cross product of its two shortest edges (the edges at the largest angle), which is the most
//   accurate of the three choices: its relative error is about eps / sin(largest angle). Below
//   kDegenerateSine that error would exceed the width of the triangle, which is what the segment
//   approximation costs, so the threshold balances the two.
// * Signed plane distances n . (x - v_k) are snapped to zero when they are within a bound on their
//   rounding error (kPlaneSnap). A vertex shared bit for bit between two triangles therefore lies
//   exactly on the other's plane, which makes shared vertices and shared edges count as touching.
// * The build contracts a * b - c * d into fused multiply-adds, which breaks the exact antisymmetry of
//   orientation determinants. Orientation tests are therefore centred on the query point
//   ((p - r) x (q - r) for the orientation of r against edge pq): a query point equal to an edge
//   endpoint makes one factor the zero vector, and the result is exactly zero.

namespace proximity::core {
namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();
// Sine of the largest angle below which a triangle is treated as its hull segment.
constexpr double kDegenerateSine = 1e-8;
// Relative rounding-error bound of a plane distance (see PlaneDistance).
constexpr double kPlaneSnap = 16 * kEps;
// Sine of the angle between two planes below which two mutually straddling triangles are tested in 2D:
// the interval test loses about eps / sin(angle) of accuracy, the 2D test at most sin(angle).
constexpr double kParallelSine = 1e-8;
// Squared sine of the angle between two segments below which their closest points are solved in
// the cross-product form (see SegmentParams).
constexpr double kNearParallelSine2 = 1e-2;
// Projected segment parameters this close to 0 or 1 are put on the end (SegmentSegmentDistanceSquared).
constexpr double kParamSnap = 64 * kEps;
// Relative tolerance under which two segments are taken to touch (degenerate triangles only).
constexpr double kTouch = 64 * kEps;

// Index of the next vertex (or edge) of a triangle.
constexpr int kNext[3] = {1, 2, 0};

inline double Clamp01(double x) { return std::min(std::max(x, 0.0), 1.0); }

inline double L1(const Vec3& v) { return std::abs(v.x()) + std::abs(v.y()) + std::abs(v.z()); }

// num / den for 0 <= num <= den, and 0 when den is 0.
inline double SafeRatio(double num, double den) { return den > 0 ? Clamp01(num / den) : 0.0; }

// (1 - s) p0 + s p1: exactly the endpoint at s = 0 and at s = 1, without a branch.
inline Vec3 Lerp(const Vec3& p0, const Vec3& p1, double s) { return (1 - s) * p0 + s * p1; }

inline int MaxAbsAxis(const Vec3& v) {
  const double x = std::abs(v.x()), y = std::abs(v.y()), z = std::abs(v.z());
  return x >= y ? (x >= z ? 0 : 2) : (y >= z ? 1 : 2);
}

inline bool AllPositive(const double d[3]) { return d[0] > 0 && d[1] > 0 && d[2] > 0; }
inline bool AllNegative(const double d[3]) { return d[0] < 0 && d[1] < 0 && d[2] < 0; }
inline bool AllZero(const double d[3]) { return d[0] == 0 && d[1] == 0 && d[2] == 0; }
// Whether three orientation values allow a point inside a closed triangle of either winding.
inline bool SameSignOrZero(double o0, double o1, double o2) {
  return (o0 >= 0 && o1 >= 0 && o2 >= 0) || (o0 <= 0 && o1 <= 0 && o2 <= 0);
}

// A triangle with the quantities every test here needs.
struct Tri {
  Vec3 v[3];
  Vec3 e[3];      // e[i] = v[i + 1] - v[i].
  double l2[3];   // |e[i]|^2.
  Vec3 n;         // (v1 - v0) x (v2 - v0), computed at the largest angle.
  double n2;      // |n|^2.
  double snap;    // Plane distances within snap * |x - v[k]|_1 are treated as zero.
  int k;          // The vertex at the largest angle, origin of the plane distances.
  int longest;    // The longest edge: the hull segment of a degenerate triangle.
  bool degenerate;
};

inline Tri MakeTri(const Vec3& a, const Vec3& b, const Vec3& c) {
  Tri t;
  t.v[0] = a;
  t.v[1] = b;
  t.v[2] = c;
  t.e[0] = b - a;
  t.e[1] = c - b;
  t.e[2] = a - c;
  for (int i = 0; i < 3; ++i) t.l2[i] = t.e[i].squaredNorm();
  const int j = t.l2[0] >= t.l2[1] ? (t.l2[0] >= t.l2[2] ? 0 : 2) : (t.l2[1] >= t.l2[2] ? 1 : 2);
  const int p = kNext[j];
  const int q = kNext[p];
  t.longest = j;
  t.k = q;
  // e[p] ends at v[q] and e[q] starts there; their cross product has the winding of (e0 x -e2).
  t.n = t.e[p].cross(t.e[q]);
  t.n2 = t.n.squaredNorm();
  t.degenerate = !(t.n2 > kDegenerateSine * kDegenerateSine * t.l2[p] * t.l2[q]);
  // |fl(n . w) - n . w| stays below a few eps |e_p| |e_q| |w| (cross product, then dot product).
  t.snap = kPlaneSnap * L1(t.e[p]) * L1(t.e[q]);
  return t;
}

// Signed distance of x to the plane of t, scaled by |t.n|; zero when within its rounding error.
inline double PlaneDistance(const Tri& t, const Vec3& x) {
  const Vec3 w = x - t.v[t.k];
  const double d = t.n.dot(w);
  return std::abs(d) <= t.snap * L1(w) ? 0.0 : d;
}

// Parameters (s, t) in [0, 1]^2 of the closest points p0 + s d1 and q0 + t d2 of two segments, with
// a = |d1|^2 and e = |d2|^2 (Ericson, Real-Time Collision Detection, 2005, section 5.1.9: solve for s
// on the lines, clamp, solve for t, clamp, re-solve for s). The last step is taken unconditionally:
// where Ericson keeps s, re-solving returns the same s (or another optimal one for parallel
// segments), and the solve has no data-dependent branch. The unconstrained s is
// (b f - c e) / (a e - b^2), whose relative error grows like eps / sin^2(angle); below a sine of 0.1
// it is recomputed in the Lagrange-identity form (d1 x d2) . (d2 x r) / |d1 x d2|^2, whose error grows
// only like eps / sin(angle), which keeps the nearly parallel edges that meshes are full of accurate.
// Parallel segments (zero denominator) start from s = 0, which the clamping sequence turns into an
// optimal pair. Either error in the unconstrained s only moves the result along the valley of the
// distance function, which changes the distance to second order.
inline void SegmentParams(const Vec3& p0, const Vec3& d1, double a, const Vec3& q0, const Vec3& d2, double e,
                          double* s_out, double* t_out) {
  const Vec3 r = p0 - q0;
  const double c = d1.dot(r), f = d2.dot(r);
  if (!(a > 0) || !(e > 0)) {
    // A zero-length segment is a point: project it onto the other segment.
    *s_out = a > 0 ? Clamp01(-c / a) : 0.0;
    *t_out = a > 0 || !(e > 0) ? 0.0 : Clamp01(f / e);
    return;
  }
  const double b = d1.dot(d2);
  double num = b * f - c * e, denom = a * e - b * b;
  if (denom < kNearParallelSine2 * a * e) {
    const Vec3 cr = d1.cross(d2);
    denom = cr.squaredNorm();
    num = cr.dot(d2.cross(r));
  }
  const double s0 = denom > 0 ? Clamp01(num / denom) : 0.0;
  const double t = Clamp01((b * s0 + f) / e);
  *t_out = t;
  *s_out = Clamp01((b * t - c) / a);
}

// Moves a segment parameter within kParamSnap of 0 or 1 onto that end, a move at the rounding level
// of a projection.
inline void SnapToEnd(double* s) {
  if (*s < kParamSnap) *s = 0;
  else if (*s > 1 - kParamSnap) *s = 1;
}

// Closest point to p on segment [a, b].
inline Vec3 ClosestOnSegment(const Vec3& p, const Vec3& a, const Vec3& b) {
  const Vec3 ab = b - a;
  const double den = ab.squaredNorm();
  if (!(den > 0)) return a;
  return Lerp(a, b, Clamp01((p - a).dot(ab) / den));
}

// Two segments touching within rounding (used for degenerate triangles only). On success *s is the
// parameter along [p0, p1] of the first shared point and *x that point.
bool SegmentsTouch(const Vec3& p0, const Vec3& p1, const Vec3& q0, const Vec3& q1, double* s_out, Vec3* x) {
  const Vec3 d1 = p1 - p0, d2 = q1 - q0;
  const double a = d1.squaredNorm(), e = d2.squaredNorm();
  double s, t;
  SegmentParams(p0, d1, a, q0, d2, e, &s, &t);
  const Vec3 P = Lerp(p0, p1, s), Q = Lerp(q0, q1, t);
  const double tol = kTouch * (L1(d1) + L1(d2) + L1(p0 - q0));
  const double tol2 = tol * tol;
  if ((P - Q).squaredNorm() > tol2) return false;
  // Collinear overlap: the first shared point is where [q0, q1] starts along [p0, p1].
  if (a > 0 && s > 0) {
    const double u = Clamp01(std::min((q0 - p0).dot(d1), (q1 - p0).dot(d1)) / a);
    const Vec3 U = Lerp(p0, p1, u);
    if (u < s && (U - ClosestOnSegment(U, q0, q1)).squaredNorm() <= tol2) {
      s = u;
      if (x) *x = U;
      *s_out = s;
      return true;
    }
  }
  if (x) *x = P;
  *s_out = s;
  return true;
}

// a * b - c * d with one rounding (Kahan's algorithm with fused multiply-adds). Unlike the plain
// expression under contraction, it is exactly zero when (a, b) and (c, d) are equal or swapped.
inline double DiffOfProducts(double a, double b, double c, double d) {
  const double cd = c * d;
  return std::fma(a, b, -cd) + std::fma(-c, d, cd);
}

// 2D coordinates of a point after dropping axis `axis`; (i1, i2, axis) is a cyclic order, so the
// projected winding of a triangle is the sign of n[axis].
struct P2 {
  double x, y;
};
inline P2 Project(const Vec3& v, int axis) {
  const int i1 = kNext[axis];
  const int i2 = kNext[i1];
  return {v[i1], v[i2]};
}
// Orientation of r against the directed line p -> q, centred on r (exactly zero when r is p or q).
inline double Orient(const P2& p, const P2& q, const P2& r) {
  return (p.x - r.x) * (q.y - r.y) - (p.y - r.y) * (q.x - r.x);
}

// The segment x0 + t (x1 - x0), t in [0, t_max], against a non-degenerate triangle in its own plane
// (Cyrus-Beck clipping against the three edge half-planes after projecting out the dominant axis of
// the normal). On success *t is the first parameter inside the closed triangle.
bool ClipInPlane(const Tri& tri, const Vec3& x0, const Vec3& x1, double t_max, double* t) {
  const int axis = MaxAbsAxis(tri.n);
  const double sign = tri.n[axis] > 0 ? 1.0 : -1.0;
  const P2 v[3] = {Project(tri.v[0], axis), Project(tri.v[1], axis), Project(tri.v[2], axis)};
  const P2 p = Project(x0, axis), q = Project(x1, axis);
  double lo = 0, hi = t_max;
  for (int i = 0; i < 3; ++i) {
    const P2& a = v[i];
    const P2& b = v[kNext[i]];
    const double g0 = sign * Orient(a, b, p), g1 = sign * Orient(a, b, q);
    const double slope = g1 - g0;
    if (slope > 0) {
      if (g0 < 0) lo = std::max(lo, g0 / (g0 - g1));
    } else if (slope < 0) {
      if (g0 < 0) return false;
      hi = std::min(hi, g0 / (g0 - g1));
    } else if (g0 < 0) {
      return false;
    }
  }
  if (lo > hi) return false;
  *t = lo;
  return true;
}

// Segment [p0, p1] against a non-degenerate closed triangle. *t is the first shared parameter.
bool SegmentHitsTri(const Tri& tri, const Vec3& p0, const Vec3& p1, double* t) {
  const double d0 = PlaneDistance(tri, p0), d1 = PlaneDistance(tri, p1);
  if ((d0 > 0 && d1 > 0) || (d0 < 0 && d1 < 0)) return false;
  if (d0 == 0 && d1 == 0) return ClipInPlane(tri, p0, p1, 1.0, t);
  // The line crosses the plane once; it meets the closed triangle iff the three signed volumes it
  // spans with the edges agree in sign. They are centred on the endpoint nearer the plane, so an
  // endpoint that is a vertex gives exact zeros.
  const bool from0 = d0 == 0 || (d1 != 0 && std::abs(d0) <= std::abs(d1));
  const Vec3& c = from0 ? p0 : p1;
  const Vec3 w = p1 - p0;
  const Vec3 r0 = tri.v[0] - c, r1 = tri.v[1] - c, r2 = tri.v[2] - c;
  if (!SameSignOrZero(w.dot(r0.cross(r1)), w.dot(r1.cross(r2)), w.dot(r2.cross(r0)))) return false;
  *t = d0 == 0 ? 0.0 : (d1 == 0 ? 1.0 : d0 / (d0 - d1));
  return true;
}

// Endpoints of the intersection of a triangle with a plane it straddles or touches, given the
// (snapped) signed distances of its vertices; not all three distances are zero or of one strict sign.
void PlaneCut(const Vec3 v[3], const double d[3], Vec3* p, Vec3* q) {
  Vec3 pts[3];
  int m = 0;
  for (int i = 0; i < 3; ++i)
    if (d[i] == 0) pts[m++] = v[i];
  for (int i = 0; i < 3; ++i) {
    const int j = kNext[i];
    if ((d[i] > 0 && d[j] < 0) || (d[i] < 0 && d[j] > 0)) pts[m++] = v[i] + (v[j] - v[i]) * (d[i] / (d[i] - d[j]));
  }
  *p = pts[0];
  *q = pts[m - 1];
}

// Coplanar triangles (Möller 1997, coplanar case): project out the dominant axis of `normal`, then a
// vertex of one inside the other, or two edges crossing. Touching edges always put an endpoint on the
// other triangle's boundary, so the crossing test only needs proper crossings. The containment and
// crossing tests read the same orientation values, which keeps them consistent.
bool CoplanarIntersect(const Tri& A, const Tri& B, const Vec3& normal, Vec3* x) {
  const int axis = MaxAbsAxis(normal);
  const P2 a[3] = {Project(A.v[0], axis), Project(A.v[1], axis), Project(A.v[2], axis)};
  const P2 b[3] = {Project(B.v[0], axis), Project(B.v[1], axis), Project(B.v[2], axis)};
  double oab[3][3], oba[3][3];  // oab[i][j]: a_i against edge b_j b_j+1; oba[j][i]: b_j against a_i a_i+1.
  for (int i = 0; i < 3; ++i) {
    const int i1 = kNext[i];
    for (int j = 0; j < 3; ++j) {
      oab[j][i] = Orient(b[i], b[i1], a[j]);
      oba[j][i] = Orient(a[i], a[i1], b[j]);
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (SameSignOrZero(oab[i][0], oab[i][1], oab[i][2])) {
      if (x) *x = A.v[i];
      return true;
    }
  }
  for (int j = 0; j < 3; ++j) {
    if (SameSignOrZero(oba[j][0], oba[j][1], oba[j][2])) {
      if (x) *x = B.v[j];
      return true;
    }
  }
  auto opposite = [](double u, double w) { return (u > 0 && w < 0) || (u < 0 && w > 0); };
  for (int i = 0; i < 3; ++i) {
    const int i1 = kNext[i];
    for (int j = 0; j < 3; ++j) {
      const int j1 = kNext[j];
      if (opposite(oab[i][j], oab[i1][j]) && opposite(oba[j][i], oba[j1][i])) {
        if (x) *x = A.v[i] + A.e[i] * (oab[i][j] / (oab[i][j] - oab[i1][j]));
        return true;
      }
    }
  }
  return false;
}

// Non-degenerate triangles that each straddle or touch the other's plane (Möller, "A Fast
// Triangle-Triangle Intersection Test", JGT 1997): both meet the line L common to the two planes in a
// segment, and the triangles intersect iff the segments overlap. The segments are compared along the
// dominant axis of L's direction, so equal endpoints compare equal. dA[i] is the distance of A.v[i] to
// B's plane and dB[j] that of B.v[j] to A's plane.
bool StraddlingIntersect(const Tri& A, const Tri& B, const double dA[3], const double dB[3], Vec3* x) {
  if (AllZero(dB)) return CoplanarIntersect(A, B, A.n, x);
  if (AllZero(dA)) return CoplanarIntersect(A, B, B.n, x);
  const Vec3 dir = A.n.cross(B.n);
  if (dir.squaredNorm() <= kParallelSine * kParallelSine * A.n2 * B.n2) return CoplanarIntersect(A, B, A.n, x);
  Vec3 pa0, pa1, pb0, pb1;
  PlaneCut(A.v, dA, &pa0, &pa1);
  PlaneCut(B.v, dB, &pb0, &pb1);
  const int axis = MaxAbsAxis(dir);
  if (pa0[axis] > pa1[axis]) std::swap(pa0, pa1);
  if (pb0[axis] > pb1[axis]) std::swap(pb0, pb1);
  if (pa0[axis] >= pb0[axis]) {
    if (pa0[axis] > pb1[axis]) return false;
    if (x) *x = pa0;
  } else {
    if (pb0[axis] > pa1[axis]) return false;
    if (x) *x = pb0;
  }
  return true;
}

// Intersection with degenerate triangles: a degenerate triangle is its hull segment.
bool DegenerateIntersect(const Tri& A, const Tri& B, Vec3* x) {
  const Vec3& a0 = A.v[A.longest];
  const Vec3& a1 = A.v[kNext[A.longest]];
  const Vec3& b0 = B.v[B.longest];
  const Vec3& b1 = B.v[kNext[B.longest]];
  double s;
  if (A.degenerate && B.degenerate) return SegmentsTouch(a0, a1, b0, b1, &s, x);
  if (A.degenerate) {
    if (!SegmentHitsTri(B, a0, a1, &s)) return false;
    if (x) *x = Lerp(a0, a1, s);
    return true;
  }
  if (!SegmentHitsTri(A, b0, b1, &s)) return false;
  if (x) *x = Lerp(b0, b1, s);
  return true;
}

// Index of the smallest of three plane distances in magnitude.
inline int NearestToPlane(const double d[3]) {
  const double d0 = std::abs(d[0]), d1 = std::abs(d[1]), d2 = std::abs(d[2]);
  return d0 <= d1 ? (d0 <= d2 ? 0 : 2) : (d1 <= d2 ? 1 : 2);
}

// The three edges of a triangle in the order TriangleDistance tries them: `first` if it is an edge
// index, then the two edges at vertex `vertex`, then the third.
inline void OrderEdges(int vertex, int first, int order[3]) {
  order[0] = vertex;                // Edge from the vertex.
  order[1] = kNext[kNext[vertex]];  // Edge into the vertex.
  order[2] = kNext[vertex];         // The opposite edge.
  for (int k = 1; k < 3; ++k)
    if (order[k] == first) std::swap(order[0], order[k]);
}

// Vertex-face case of two disjoint triangles when `other` lies strictly on one side of face's plane
// (d[i] is the scaled distance of other_v[i]): the vertex nearest the plane, if it projects into the
// face, realises the distance, because the plane through it parallel to the face separates the two.
// Otherwise *outside_edge is an edge of the face that the projection lies beyond.
bool VertexFace(const Tri& face, const Vec3 other_v[3], const double d[3], Vec3* on_face, Vec3* vertex,
                double* dist2, int* outside_edge) {
  const int i = NearestToPlane(d);
  const Vec3& y = other_v[i];
  for (int j = 0; j < 3; ++j) {
    if (face.e[j].cross(y - face.v[j]).dot(face.n) < 0) {
      *outside_edge = j;
      return false;
    }
  }
  *on_face = y - face.n * (d[i] / face.n2);
  *vertex = y;
  *dist2 = d[i] * d[i] / face.n2;
  return true;
}

// Distance when a triangle is degenerate: the intersection test on hull segments, then the minimum
// over all 9 edge pairs and all 6 vertex-triangle pairs.
double DegenerateDistance(const Tri& A, const Tri& B, Vec3* p_A, Vec3* p_B) {
  Vec3 x;
  if (DegenerateIntersect(A, B, &x)) {
    *p_A = *p_B = x;
    return 0.0;
  }
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < 3; ++i) {
    const int i1 = kNext[i];
    for (int j = 0; j < 3; ++j) {
      const int j1 = kNext[j];
      double s, t;
      SegmentParams(A.v[i], A.e[i], A.l2[i], B.v[j], B.e[j], B.l2[j], &s, &t);
      const Vec3 P = Lerp(A.v[i], A.v[i1], s), Q = Lerp(B.v[j], B.v[j1], t);
      const double d2 = (P - Q).squaredNorm();
      if (d2 < best) {
        best = d2;
        *p_A = P;
        *p_B = Q;
      }
    }
  }
  for (int i = 0; i < 3; ++i) {
    const Vec3 qb = ClosestPointOnTriangle(A.v[i], B.v[0], B.v[1], B.v[2]);
    const double db = (qb - A.v[i]).squaredNorm();
    if (db < best) {
      best = db;
      *p_A = A.v[i];
      *p_B = qb;
    }
    const Vec3 qa = ClosestPointOnTriangle(B.v[i], A.v[0], A.v[1], A.v[2]);
    const double da = (qa - B.v[i]).squaredNorm();
    if (da < best) {
      best = da;
      *p_A = qa;
      *p_B = B.v[i];
    }
  }
  return std::sqrt(best);
}

}  // namespace

Vec3 ClosestPointOnTriangle(const Vec3& p, const Vec3& a, const Vec3& b, const Vec3& c) {
  const Tri tri = MakeTri(a, b, c);
  if (tri.degenerate) {
    // The union of the edges is the triangle up to its (negligible) width.
    Vec3 best = ClosestOnSegment(p, a, b);
    double best2 = (best - p).squaredNorm();
    for (const auto& [u, w] : {std::pair{&b, &c}, std::pair{&c, &a}}) {
      const Vec3 q = ClosestOnSegment(p, *u, *w);
      const double q2 = (q - p).squaredNorm();
      if (q2 < best2) {
        best2 = q2;
        best = q;
      }
    }
    return best;
  }
  // Ericson, Real-Time Collision Detection, 2005, section 5.1.5: walk the Voronoi regions of the
  // vertices, then of the edges, then the face. The edge and face tests use the scaled barycentric
  // areas n . (edge x (p - vertex)) with the accurate normal, and the face case projects onto the
  // plane along n rather than summing barycentric multiples of the edges, which loses accuracy on
  // slivers.
  const Vec3 ab = b - a, ac = c - a, ap = p - a;
  const double d1 = ab.dot(ap), d2 = ac.dot(ap);
  if (d1 <= 0 && d2 <= 0) return a;
  const Vec3 bp = p - b;
  const double d3 = ab.dot(bp), d4 = ac.dot(bp);
  if (d3 >= 0 && d4 <= d3) return b;
  const Vec3& n = tri.n;
  const double vc = n.dot(ab.cross(ap));
  if (vc <= 0 && d1 >= 0 && d3 <= 0) return Lerp(a, b, SafeRatio(d1, d1 - d3));
  const Vec3 cp = p - c;
  const double d5 = ab.dot(cp), d6 = ac.dot(cp);
  if (d6 >= 0 && d5 <= d6) return c;
  const double vb = n.dot(ap.cross(ac));
  if (vb <= 0 && d2 >= 0 && d6 <= 0) return Lerp(a, c, SafeRatio(d2, d2 - d6));
  const Vec3 bc = c - b;
  const double va = n.dot(bc.cross(bp));
  if (va <= 0 && d4 - d3 >= 0 && d5 - d6 >= 0) return Lerp(b, c, SafeRatio(d4 - d3, (d4 - d3) + (d5 - d6)));
  return p - n * (n.dot(ap) / tri.n2);
}

double SegmentSegmentDistanceSquared(const Vec3& p0, const Vec3& p1, const Vec3& q0, const Vec3& q1, Vec3* cp,
                                     Vec3* cq) {
  const Vec3 d1 = p1 - p0, d2 = q1 - q0;
  const double a = d1.squaredNorm(), e = d2.squaredNorm();
  double s, t;
  SegmentParams(p0, d1, a, q0, d2, e, &s, &t);
  Vec3 P = Lerp(p0, p1, s), Q = Lerp(q0, q1, t);
  double best = (P - Q).squaredNorm();
  // Two more candidates, each with one parameter on its nearer end and the other projected from
  // that exact endpoint; an equally close candidate wins. Segments meeting at an endpoint thus
  // report the endpoint itself and distance 0, however the solve rounded.
  auto consider = [&](double sc, double tc) {
    const Vec3 Pc = Lerp(p0, p1, sc), Qc = Lerp(q0, q1, tc);
    const double dc = (Pc - Qc).squaredNorm();
    if (dc <= best) {
      best = dc;
      P = Pc;
      Q = Qc;
    }
  };
  const double s_end = s < 0.5 ? 0.0 : 1.0, t_end = t < 0.5 ? 0.0 : 1.0;
  double t_proj = e > 0 ? Clamp01((Lerp(p0, p1, s_end) - q0).dot(d2) / e) : 0.0;
  double s_proj = a > 0 ? Clamp01((Lerp(q0, q1, t_end) - p0).dot(d1) / a) : 0.0;
  SnapToEnd(&t_proj);
  SnapToEnd(&s_proj);
  consider(s_end, t_proj);
  consider(s_proj, t_end);
  if (cp) *cp = P;
  if (cq) *cq = Q;
  return best;
}

bool TrianglesIntersect(const Vec3& a0, const Vec3& a1, const Vec3& a2, const Vec3& b0, const Vec3& b1,
                        const Vec3& b2) {
  // The second triangle's own quantities are computed only once its vertices straddle A's plane.
  const Tri A = MakeTri(a0, a1, a2);
  if (A.degenerate) return DegenerateIntersect(A, MakeTri(b0, b1, b2), nullptr);
  const double dB[3] = {PlaneDistance(A, b0), PlaneDistance(A, b1), PlaneDistance(A, b2)};
  if (AllPositive(dB) || AllNegative(dB)) return false;
  const Tri B = MakeTri(b0, b1, b2);
  if (B.degenerate) return DegenerateIntersect(A, B, nullptr);
  const double dA[3] = {PlaneDistance(B, a0), PlaneDistance(B, a1), PlaneDistance(B, a2)};
  if (AllPositive(dA) || AllNegative(dA)) return false;
  return StraddlingIntersect(A, B, dA, dB, nullptr);
}

// Order of work, cheapest certificate first:
//  1. Signed distances of each triangle's vertices to the other's plane (6 dot products). When one
//     triangle lies strictly on one side of the other's plane, that plane separates them and no
//     intersection test is needed.
//  2. Otherwise both straddle (or touch) each other's planes, and Möller's interval test decides
//     intersection from the same distances; if they meet, the distance is 0 at a common point.
//  3. The triangles are now known to be disjoint, and their distance is realised by an edge pair or by
//     a vertex and a face interior. A vertex-face pair can only be the minimum when the other
//     triangle lies strictly on one side of the face's plane and the vertex is the one nearest the
//     plane (any other vertex sees an edge of the same triangle pass over the face's boundary closer
//     to the plane); in that case the plane through the vertex parallel to the face separates the
//     triangles, so the pair is the answer and is returned at once.
//  4. Otherwise the minimum over the 9 edge pairs. An edge pair with closest points P, Q and V = Q - P
//     is returned at once when the third vertex of A lies on A's side of the plane through P normal
//     to V and the third vertex of B on B's side of the plane through Q (the edges' own endpoints
//     are on the right sides by the optimality of P and Q): the slab between the planes separates
//     the triangles, so |V| is the distance (the separating-edge shortcut of the PQP library's
//     triangle distance; Larsen, Gottschalk, Lin and Manocha, "Fast Proximity Queries with Swept
//     Sphere Volumes", 1999). The shortcut is only a certificate: without it the loop still returns
//     the minimum, so the order of the pairs (likely pairs first, below) affects speed alone.
// Intersection is therefore always decided before any feature distance is trusted: triangles that
// pierce each other can have all 15 feature distances positive. No square root is taken before the
// answer is known.
double TriangleDistance(const Vec3& a0, const Vec3& a1, const Vec3& a2, const Vec3& b0, const Vec3& b1,
                        const Vec3& b2, Vec3* p_A, Vec3* p_B) {
  Vec3 unused_a, unused_b;
  if (!p_A) p_A = &unused_a;
  if (!p_B) p_B = &unused_b;
  const Tri A = MakeTri(a0, a1, a2), B = MakeTri(b0, b1, b2);
  if (A.degenerate || B.degenerate) return DegenerateDistance(A, B, p_A, p_B);

  double dA[3], dB[3];
  for (int i = 0; i < 3; ++i) {
    dB[i] = PlaneDistance(A, B.v[i]);
    dA[i] = PlaneDistance(B, A.v[i]);
  }
  const bool b_one_side = AllPositive(dB) || AllNegative(dB);
  const bool a_one_side = AllPositive(dA) || AllNegative(dA);
  if (!b_one_side && !a_one_side) {
    Vec3 x;
    if (StraddlingIntersect(A, B, dA, dB, &x)) {
      *p_A = *p_B = x;
      return 0.0;
    }
  }
  double d2;
  int outside_a = -1, outside_b = -1;
  if (b_one_side && VertexFace(A, B.v, dB, p_A, p_B, &d2, &outside_a)) return std::sqrt(d2);
  if (a_one_side && VertexFace(B, A.v, dA, p_B, p_A, &d2, &outside_b)) return std::sqrt(d2);

  // Likely edges first, so that the separating-edge shortcut ends the loop early: on each triangle,
  // the edge that the other's nearest vertex projects beyond, else the two edges at its own vertex
  // nearest the other's plane. On random near pairs this takes the loop from about 4 edge pairs
  // (fixed order) to about 1.5.
  int ea[3], eb[3];
  OrderEdges(NearestToPlane(dA), outside_a, ea);
  OrderEdges(NearestToPlane(dB), outside_b, eb);
  static constexpr int kPairs[9][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 2}, {1, 2}, {2, 0}, {2, 1}, {2, 2}};
  double best = std::numeric_limits<double>::infinity();
  for (const auto& pair : kPairs) {
    const int i = ea[pair[0]], j = eb[pair[1]];
    const int i1 = kNext[i], i2 = kNext[i1];
    const int j1 = kNext[j], j2 = kNext[j1];
    double s, t;
    SegmentParams(A.v[i], A.e[i], A.l2[i], B.v[j], B.e[j], B.l2[j], &s, &t);
    const Vec3 P = Lerp(A.v[i], A.v[i1], s), Q = Lerp(B.v[j], B.v[j1], t);
    const Vec3 V = Q - P;
    const double v2 = V.squaredNorm();
    if (v2 < best) {
      best = v2;
      *p_A = P;
      *p_B = Q;
      if ((A.v[i2] - P).dot(V) <= 0 && (B.v[j2] - Q).dot(V) >= 0) return std::sqrt(v2);
    }
  }
  return std::sqrt(best);
}

bool RayTriangle(const Vec3& origin, const Vec3& dir, const Vec3& a, const Vec3& b, const Vec3& c, double* t,
                 double* u, double* v) {
  const Tri tri = MakeTri(a, b, c);
  if (tri.degenerate) {
    // The ray against the hull segment, as the segment of the ray that spans the hull's extent.
    const int j0 = tri.longest, j1 = kNext[j0];
    const double dd = dir.squaredNorm();
    double reach = 0;
    if (dd > 0) reach = std::max({0.0, (tri.v[j0] - origin).dot(dir) / dd, (tri.v[j1] - origin).dot(dir) / dd});
    const Vec3 end = origin + reach * dir;
    double s;
    Vec3 x;
    if (!SegmentsTouch(origin, end, tri.v[j0], tri.v[j1], &s, &x)) return false;
    const Vec3 h = tri.v[j1] - tri.v[j0];
    const double lambda = SafeRatio((x - tri.v[j0]).dot(h), h.squaredNorm());
    double w[3] = {0, 0, 0};
    w[j0] += 1 - lambda;
    w[j1] += lambda;
    if (t) *t = s * reach;
    if (u) *u = w[1];
    if (v) *v = w[2];
    return true;
  }
  // Möller and Trumbore, "Fast, Minimum Storage Ray/Triangle Intersection", JGT 1997, with the
  // division deferred until the hit is known (no overflow for nearly parallel rays).
  const Vec3 e1 = b - a, e2 = c - a;
  const Vec3 pv = dir.cross(e2);
  double det = e1.dot(pv);
  const bool parallel = det * det <= kParallelSine * kParallelSine * dir.squaredNorm() * tri.n2;
  if (PlaneDistance(tri, origin) == 0) {
    // The origin lies on the plane (within rounding). A ray leaving the plane meets the triangle only
    // at t = 0, if the origin is inside; a ray in the plane meets the closed triangle first where it
    // enters it (as SegmentTriangle does). Both are decided by orientation tests centred on the query
    // point, which are exact for an origin at a vertex or on an edge line.
    double tt = 0;
    if (!ClipInPlane(tri, origin, parallel ? Vec3(origin + dir) : origin,
                     parallel ? std::numeric_limits<double>::infinity() : 0.0, &tt)) {
      return false;
    }
    // Barycentrics as ratios of areas anchored at a: a hit at b or c reproduces the denominator's own
    // expression and gives exactly 1, and the other area is then exactly 0.
    const int axis = MaxAbsAxis(tri.n);
    const P2 pa = Project(a, axis), pb = Project(b, axis), pc = Project(c, axis), px = Project(origin + tt * dir, axis);
    const P2 ab = {pb.x - pa.x, pb.y - pa.y}, ac = {pc.x - pa.x, pc.y - pa.y}, ax = {px.x - pa.x, px.y - pa.y};
    const double area = DiffOfProducts(ab.x, ac.y, ab.y, ac.x);
    if (t) *t = tt;
    if (u) *u = Clamp01(DiffOfProducts(ax.x, ac.y, ax.y, ac.x) / area);
    if (v) *v = Clamp01(DiffOfProducts(ab.x, ax.y, ab.y, ax.x) / area);
    return true;
  }
  // A ray parallel to the plane and off it misses; a nearly parallel one meets the plane far away.
  if (det == 0) return false;
  const Vec3 s = origin - a;
  double un = s.dot(pv);
  const Vec3 qv = s.cross(e1);
  double vn = dir.dot(qv), tn = e2.dot(qv);
  if (det < 0) {
    det = -det;
    un = -un;
    vn = -vn;
    tn = -tn;
  }
  if (un < 0 || vn < 0 || un + vn > det || tn < 0) return false;
  const double tt = tn / det;
  if (!std::isfinite(tt)) return false;
  if (t) *t = tt;
  if (u) *u = un / det;
  if (v) *v = vn / det;
  return true;
}

bool SegmentTriangle(const Vec3& p0, const Vec3& p1, const Vec3& a, const Vec3& b, const Vec3& c, double* t) {
  const Tri tri = MakeTri(a, b, c);
  double s;
  bool hit;
  if (tri.degenerate) {
    const int j0 = tri.longest, j1 = kNext[j0];
    hit = SegmentsTouch(p0, p1, tri.v[j0], tri.v[j1], &s, nullptr);
  } else {
    hit = SegmentHitsTri(tri, p0, p1, &s);
  }
  if (hit && t) *t = s;
  return hit;
}

}  // namespace proximity::core
