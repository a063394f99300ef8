#pragma once
/// @file
/// Contact regions ("contact manifolds") of touching or penetrating convex shapes: for a pair and a
/// contact normal, the points where the shapes meet, with a depth each and an id built from the features
/// that produced the point, so that a contact keeps its id while the pair moves a little.
///
/// Method (the clipping scheme of physics engines; Gregorius, "Robust Contact Creation for Physics
/// Simulations", GDC 2015): take the support set of A along the normal n and of B along -n (the face,
/// edge or vertex of each shape that is extreme along n, within an angular and a distance tolerance),
/// project both on the contact plane (normal n), intersect the two convex sets there (Sutherland and
/// Hodgman, "Reentrant polygon clipping", CACM 1974, for polygon pairs; parametric clipping for segments;
/// point tests for points), and lift every point of the intersection back onto both support sets along
/// n. The depth of a point is n · (p_WA - p_WB): how far A's surface lies beyond B's along n there.
///
/// ComputeContacts also finds the normal: the GJK witness direction when the shapes are apart by at
/// most the contact margin (convex shapes touch along the line of their closest points); when they
/// overlap, the cores' witness direction for sphere and capsule pairs whose cores (centre, segment) are
/// apart, the separating-axis test over the face normals and the edge pairs that form faces of the
/// Minkowski difference for box, triangle and polytope pairs (the exact minimum-depth axis; Gregorius,
/// "The Separating Axis Test between Convex Polyhedra", GDC 2013), and EPA (epa.h) for the other pairs.
/// Directions from GJK and EPA are then polished by a local search on the unit sphere that lowers the
/// overlap along the axis (GJK's witness direction can be 1e-3 rad off on cylinders and cones, where its
/// distance converges only to second order in the direction) and snapped to a face normal within the
/// angle tolerance when that is no worse. The overlap along any axis bounds the penetration depth from
/// above, and minus it bounds the distance from below, so the result is exact when the search reaches
/// the extremum: measured within 3e-7 relative of GJK's distance for separated pairs with cones, and to
/// rounding for the polyhedral and ball-swept ones.
///
/// Frames: a shape S lives in its frame S (see convex.h); poses X_WA, X_WB put A and B in world W; all
/// results are in W. Units: metres and radians. Nothing here throws; bad input is an Error, and no
/// result holds NaN for finite, valid input.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "proximity/core/narrowphase/convex.h"
#include "proximity/core/contact/epa.h"
#include "proximity/core/narrowphase/gjk.h"
#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"

namespace proximity::core {

/// Tolerances and choices for contact regions.
struct ContactOptions {
  /// Metres, >= 0. ComputeContacts: pairs farther apart than this have no contact points (the manifold
  /// is empty, with the distance in signed_distance). ComputeContactRegion: the largest signed distance
  /// accepted.
  double contact_margin = 1e-3;
  /// Metres, >= 0: a vertex belongs to a shape's support set when it lies within this distance of the
  /// shape's extreme plane along the normal.
  double feature_distance_tolerance = 1e-6;
  /// Radians, in [0, 0.5]: a vertex also belongs to the support set when it is the extreme point for
  /// some direction within this angle of the normal (so a face tilted from the contact plane by less than
  /// this angle counts as a face contact; its points then have different depths).
  double feature_angle_tolerance = 1e-2;
  /// Points of the regular polygon that stands for a cylinder's cap or a cone's base disk when that disk
  /// is the support set, in [3, 1024]. The polygon is inscribed: its vertices lie on the rim, at angles
  /// 2 pi k / disk_points from the frame's +x axis.
  int32_t disk_points = 16;
  /// Keep at most four points: the deepest, the one farthest from it, then the two that add the most
  /// area (Gregorius 2015). Off: every vertex of the intersection polygon is reported.
  bool reduce_to_four = false;
  /// GJK settings for ComputeContacts.
  GjkOptions gjk;
};

/// The points of a shape that are extreme along a direction (its support feature: a face, edge or
/// vertex, within the tolerances of ContactOptions), in the shape's frame S, each with a feature id.
///
/// Feature ids per shape: Sphere 0. Capsule: 0 for the end at z = -half_length, 1 for the end at
/// +half_length (the points are the ends moved by the radius along the direction). Box: the corner
/// index (bit 0 set for +x, bit 1 for +y, bit 2 for +z), as CoreSupport numbers them. Triangle: 0, 1, 2
/// for a, b, c. ConvexPolytope: the vertex index. Cylinder with k = disk_points: cap polygon vertices
/// 0..k-1 on the top cap (z = +half_length), k..2k-1 on the bottom cap, 2k for the point of the top rim
/// and 2k+1 for the point of the bottom rim in the direction's azimuth (these two form the side's
/// segment). Cone: base polygon vertices 0..k-1, k for the apex, k+1 for the base rim's point in the
/// direction's azimuth.
struct SupportSet {
  std::vector<Vec3> p_S;       ///< The points, frame S.
  std::vector<int32_t> ids;    ///< One feature id per point.
  void clear() {
    p_S.clear();
    ids.clear();
  }
  int32_t size() const { return static_cast<int32_t>(p_S.size()); }
  void Add(const Vec3& p, int32_t id) {
    p_S.push_back(p);
    ids.push_back(id);
  }
};

/// The support set of a shape along unit direction n_S (frame S) with `options`' tolerances; replaces
/// the contents of *out. Polytopes cost O(V + F log F) (a scan of the vertices and of the edges' face
/// normals); the other shapes O(1), or O(disk_points) for disks.
void ComputeSupportSet(const Sphere& shape, const Vec3& n_S, const ContactOptions& options, SupportSet* out);
void ComputeSupportSet(const Capsule& shape, const Vec3& n_S, const ContactOptions& options, SupportSet* out);
void ComputeSupportSet(const Box& shape, const Vec3& n_S, const ContactOptions& options, SupportSet* out);
void ComputeSupportSet(const Cylinder& shape, const Vec3& n_S, const ContactOptions& options, SupportSet* out);
void ComputeSupportSet(const Cone& shape, const Vec3& n_S, const ContactOptions& options, SupportSet* out);
void ComputeSupportSet(const Triangle& shape, const Vec3& n_S, const ContactOptions& options, SupportSet* out);
void ComputeSupportSet(const ConvexPolytope& shape, const Vec3& n_S, const ContactOptions& options,
                       SupportSet* out);

/// Which features of A and of B produced a contact point, by the feature ids of SupportSet. Per side:
/// a vertex {id, -1}, an edge {smaller id, larger id} (the edge of that shape's projected support polygon
/// between those two points), or {-1, -1} when the point lies inside that side's support set. A point
/// where an edge of A crosses an edge of B names both edges; a vertex of A inside B's support set names
/// that vertex and {-1, -1} for B; the one point of disjoint projections names the closest features of
/// both. Unchanged while the pair moves without the features changing.
struct ContactId {
  std::array<int32_t, 2> a{-1, -1};
  std::array<int32_t, 2> b{-1, -1};
  bool operator==(const ContactId&) const = default;
  /// One 64-bit key for hashing (equal ids give equal keys).
  uint64_t key() const {
    uint64_t h = 1469598103934665603ull;
    for (int32_t v : {a[0], a[1], b[0], b[1]}) {
      h ^= static_cast<uint64_t>(static_cast<uint32_t>(v));
      h *= 1099511628211ull;
    }
    return h;
  }
};

/// One contact point. Frames: W.
struct ContactPoint {
  /// The point halfway between the two surfaces along the normal, (p_WA + p_WB) / 2: on the mid-plane
  /// between the two support sets when both are parallel to the contact plane.
  Vec3 p_W = Vec3::Zero();
  /// The point of A's support set on the line through p_W along the normal (on A's surface, up to the
  /// tolerances and to the polygon standing for a disk).
  Vec3 p_WA = Vec3::Zero();
  /// The point of B's support set on the same line.
  Vec3 p_WB = Vec3::Zero();
  /// Metres: n · (p_WA - p_WB). Positive when A's surface lies beyond B's along n (penetration), negative
  /// when they are apart there (touching within the margin, or a face tilted within the angle tolerance).
  double depth = 0.0;
  ContactId id;
};

/// Where ComputeContacts found the normal.
enum class ContactNormalSource {
  kGiven,       ///< Passed to ComputeContactRegion.
  kSeparated,   ///< GJK: apart by more than the contact margin; no points.
  kGjkWitness,  ///< GJK: apart by at most the margin; the direction between the closest points, polished.
  kCoreGjk,     ///< Overlapping sphere/capsule pair whose cores are apart: the cores' direction, polished.
  kSat,         ///< Overlapping polyhedral pair: the separating-axis test (exact).
  kEpa,         ///< Overlapping pair of other shapes: EPA (epa.h), polished by a local search.
  kAxisSearch,  ///< Overlapping pair EPA could not answer: candidate axes and a local search.
};

/// Work a contact query did.
struct ContactStats {
  int32_t gjk_iterations = 0;    ///< GJK loop iterations (ComputeContacts).
  int32_t epa_iterations = 0;    ///< EPA expansions (ComputeContacts).
  int32_t axes_tested = 0;       ///< Axes whose overlap was evaluated (separating-axis test, polish, search).
  int32_t support_points_a = 0;  ///< Size of A's support set.
  int32_t support_points_b = 0;  ///< Size of B's support set.
  int32_t polygon_a = 0;         ///< Vertices of A's projected support set (its 2D convex hull).
  int32_t polygon_b = 0;         ///< Vertices of B's.
  int32_t clip_tests = 0;        ///< Point-against-half-plane tests of the 2D intersection.
};

/// The contact region of a pair. Frames: W.
struct ContactManifold {
  /// Unit contact normal, pointing from A towards B.
  Vec3 normal_W = Vec3::UnitZ();
  /// Metres: the pair's signed distance (negative: minus the penetration depth): as given to
  /// ComputeContactRegion; from ComputeContacts the separation of the shapes along normal_W, except for
  /// pairs apart by more than the margin (source kSeparated), which carry their GJK distance and no points.
  double signed_distance = 0.0;
  /// The points, in the order of the intersection polygon (counter-clockwise seen from +normal_W).
  std::vector<ContactPoint> points;
  ContactNormalSource source = ContactNormalSource::kGiven;
  /// The projected support sets are apart by more than feature_distance_tolerance (a normal that does
  /// not fit the pair, or a shape touching a cap or base between the vertices of its polygon): the
  /// region is one point, p_WA and p_WB the lifted closest points of the two projections (on the shapes,
  /// but not on one line along the normal).
  bool disjoint_projections = false;
  ContactStats stats;
};

namespace internal {

/// ok, or an Error naming the bad field of `options`.
Status ValidateContactOptions(const ContactOptions& options);
/// ok, or an Error naming `what` and the non-finite entry of the pose.
Status ValidatePose(const RigidTransform& X, const char* what);

/// ok when every dimension is finite and >= 0 (and a sphere's centre, a triangle's vertices finite).
Status ValidateContactShape(const Sphere& s, const char* what);
Status ValidateContactShape(const Capsule& s, const char* what);
Status ValidateContactShape(const Box& s, const char* what);
Status ValidateContactShape(const Cylinder& s, const char* what);
Status ValidateContactShape(const Cone& s, const char* what);
Status ValidateContactShape(const Triangle& s, const char* what);
Status ValidateContactShape(const ConvexPolytope& s, const char* what);

/// The non-template part of ComputeContactRegion: projects the support sets (a in frame A, b in frame
/// B) on the plane normal to unit n_W, intersects them and fills m->points and m->stats.
void BuildContactRegion(const SupportSet& a, const RigidTransform& X_WA, const SupportSet& b,
                        const RigidTransform& X_WB, const Vec3& n_W, const ContactOptions& options,
                        ContactManifold* m);

template <class S>
inline constexpr bool kIsPolyhedral =
    std::is_same_v<S, Box> || std::is_same_v<S, Triangle> || std::is_same_v<S, ConvexPolytope>;

/// The answer of the separating-axis test on an overlapping polyhedral pair.
struct SatResult {
  Vec3 n_W = Vec3::UnitZ();  ///< Unit axis from A towards B of the largest separation.
  double separation = 0.0;   ///< Metres: the largest separation found (<= 0 when overlapping).
  int32_t axes = 0;          ///< Axes evaluated (face normals and Minkowski-face edge pairs).
};

/// Separating-axis test of polyhedral shapes over the face normals of both and the cross products of
/// the edge pairs whose Gauss-map arcs cross (the faces of the Minkowski difference). Faces win over
/// edge pairs, and A's faces over B's, unless the other separates by more than `bias` (metres).
SatResult PolyhedralSat(const Box& a, const RigidTransform& X_WA, const Box& b, const RigidTransform& X_WB,
                        double bias);
SatResult PolyhedralSat(const Box& a, const RigidTransform& X_WA, const Triangle& b,
                        const RigidTransform& X_WB, double bias);
SatResult PolyhedralSat(const Box& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                        const RigidTransform& X_WB, double bias);
SatResult PolyhedralSat(const Triangle& a, const RigidTransform& X_WA, const Box& b,
                        const RigidTransform& X_WB, double bias);
SatResult PolyhedralSat(const Triangle& a, const RigidTransform& X_WA, const Triangle& b,
                        const RigidTransform& X_WB, double bias);
SatResult PolyhedralSat(const Triangle& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                        const RigidTransform& X_WB, double bias);
SatResult PolyhedralSat(const ConvexPolytope& a, const RigidTransform& X_WA, const Box& b,
                        const RigidTransform& X_WB, double bias);
SatResult PolyhedralSat(const ConvexPolytope& a, const RigidTransform& X_WA, const Triangle& b,
                        const RigidTransform& X_WB, double bias);
SatResult PolyhedralSat(const ConvexPolytope& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                        const RigidTransform& X_WB, double bias);

/// Candidate axes of a shape in W for the axis search: face normals (and symmetry axes) in *faces, edge
/// directions (and axes of revolution) in *edges. Polytopes give every face normal and edge direction.
void AppendCandidateAxes(const Sphere& s, const Mat3& R_WS, std::vector<Vec3>* faces, std::vector<Vec3>* edges);
void AppendCandidateAxes(const Capsule& s, const Mat3& R_WS, std::vector<Vec3>* faces, std::vector<Vec3>* edges);
void AppendCandidateAxes(const Box& s, const Mat3& R_WS, std::vector<Vec3>* faces, std::vector<Vec3>* edges);
void AppendCandidateAxes(const Cylinder& s, const Mat3& R_WS, std::vector<Vec3>* faces, std::vector<Vec3>* edges);
void AppendCandidateAxes(const Cone& s, const Mat3& R_WS, std::vector<Vec3>* faces, std::vector<Vec3>* edges);
void AppendCandidateAxes(const Triangle& s, const Mat3& R_WS, std::vector<Vec3>* faces, std::vector<Vec3>* edges);
void AppendCandidateAxes(const ConvexPolytope& s, const Mat3& R_WS, std::vector<Vec3>* faces,
                         std::vector<Vec3>* edges);

/// A unit vector orthogonal to unit n.
Vec3 AnyOrthogonal(const Vec3& n);

/// The core of a shape swept by a ball (Sphere: its centre; Capsule: its segment); other shapes are
/// their own core.
inline Sphere CoreShape(const Sphere& s) { return Sphere{s.center, 0.0}; }
inline Capsule CoreShape(const Capsule& c) { return Capsule{0.0, c.half_length}; }
template <class S>
const S& CoreShape(const S& s) {
  return s;
}
template <class S>
inline constexpr bool kHasMargin = std::is_same_v<S, Sphere> || std::is_same_v<S, Capsule>;

/// Overlap of posed shapes along unit d_W (from A towards B), metres: max over A of d·x minus min over B
/// of d·x. For overlapping shapes every value bounds the penetration depth from above, and the minimum
/// over unit directions is the depth.
template <class ShapeA, class ShapeB>
double OverlapAlong(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b, const RigidTransform& X_WB,
                    const Vec3& d_W) {
  const Vec3 s_A = X_WA * Support(a, Vec3(X_WA.R.transpose() * d_W));
  const Vec3 s_B = X_WB * Support(b, Vec3(-(X_WB.R.transpose() * d_W)));
  return d_W.dot(s_A - s_B);
}

/// Whether the points of `s` lie on a segment of positive length (within 1e-9 of its length); sets
/// *e_W to its unit direction rotated by R_WS.
inline bool SegmentDirection(const SupportSet& s, const Mat3& R_WS, Vec3* e_W) {
  if (s.size() < 2) return false;
  int32_t i0 = 0, i1 = 0;
  double far = 0.0;
  for (int32_t i = 1; i < s.size(); ++i) {
    const double d = (s.p_S[i] - s.p_S[0]).squaredNorm();
    if (d > far) {
      far = d;
      i1 = i;
    }
  }
  for (int32_t i = 0; i < s.size(); ++i) {
    const double d = (s.p_S[i] - s.p_S[i1]).squaredNorm();
    if (d > far) {
      far = d;
      i0 = i;
    }
  }
  if (!(far > 0.0)) return false;
  const Vec3 u = (s.p_S[i1] - s.p_S[i0]) / std::sqrt(far);
  for (const Vec3& p : s.p_S) {
    const Vec3 r = p - s.p_S[i0];
    if ((r - r.dot(u) * u).squaredNorm() > 1e-18 * far) return false;
  }
  *e_W = R_WS * u;
  return true;
}

/// Local refinement of a contact axis: a pattern search on the unit sphere that tilts unit *n_W by
/// `step` towards eight directions normal to it (their fan turned by the golden angle at every round) and
/// keeps the first tilt that lowers the overlap. When none does, it also tries the two tilts along each
/// ridge of the overlap at *n_W: where a shape's support set is a segment (an edge, a cylinder's side
/// line, a cone's generator, a capsule's axis), the overlap has a crease whose tangent is the segment
/// crossed with the axis, and descent along it hides in a wedge the fan can miss. Only then the step
/// halves, down to 1e-10 rad or 1000 evaluations, or until the overlap reaches `target` (a known lower
/// bound on it, such as minus GJK's distance; -infinity for none). For separated shapes the overlap is minus the
/// separation along the axis, whose sub-level sets are convex cones, so the search approaches the exact
/// normal (the direction of the closest points); for overlapping shapes a local minimum of the depth.
/// Updates *n_W and *overlap (which must hold the overlap along *n_W) and counts evaluations in *axes.
template <class ShapeA, class ShapeB>
void PolishAxis(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b, const RigidTransform& X_WB,
                const ContactOptions& options, double step, double target, Vec3* n_W, double* overlap,
                int32_t* axes) {
  Vec3 best = *n_W;
  double best_overlap = *overlap;
  int32_t budget = 1000;
  double turn = 0.0;
  SupportSet sa, sb;
  const auto probe = [&](const Vec3& t) {
    const Vec3 d = (best + step * t).normalized();
    const double o = OverlapAlong(a, X_WA, b, X_WB, d);
    ++*axes;
    --budget;
    if (!(o < best_overlap)) return false;
    best_overlap = o;
    best = d;
    return true;
  };
  while (step > 1e-10 && budget > 0 && best_overlap > target) {
    const Vec3 t1 = AnyOrthogonal(best);
    const Vec3 t2 = best.cross(t1);
    bool moved = false;
    for (int32_t k = 0; k < 8 && !moved; ++k) {
      const double angle = turn + k * (M_PI / 4.0);
      moved = probe(std::cos(angle) * t1 + std::sin(angle) * t2);
    }
    turn += 2.399963229728653;
    if (!moved) {
      ComputeSupportSet(a, Vec3(X_WA.R.transpose() * best), options, &sa);
      ComputeSupportSet(b, Vec3(-(X_WB.R.transpose() * best)), options, &sb);
      Vec3 ea, eb;
      const bool seg_a = SegmentDirection(sa, X_WA.R, &ea), seg_b = SegmentDirection(sb, X_WB.R, &eb);
      if (seg_a && seg_b) {
        // Two creases cross at the normal of both segments.
        const Vec3 c = ea.cross(eb);
        const double cn = c.norm();
        if (cn > 1e-9) {
          const Vec3 d = c.dot(best) >= 0.0 ? Vec3(c / cn) : Vec3(-c / cn);
          const double o = OverlapAlong(a, X_WA, b, X_WB, d);
          ++*axes;
          --budget;
          if (o < best_overlap) {
            best_overlap = o;
            best = d;
            moved = true;
          }
        }
      }
      for (const Vec3& e : {Vec3(seg_a ? ea : Vec3::Zero()), Vec3(seg_b ? eb : Vec3::Zero())}) {
        const Vec3 t = e.cross(best);
        const double tn = t.norm();
        if (moved || !(tn > 1e-12)) continue;
        moved = probe(t / tn) || probe(-t / tn);
      }
    }
    if (!moved) step *= 0.5;
  }
  *n_W = best;
  *overlap = best_overlap;
}

/// Replaces unit *n_W by the face normal (a face normal or symmetry axis of either shape, see
/// AppendCandidateAxes, in either sense) within `angle` of it that has the least overlap, when that
/// overlap is no larger than *overlap: contacts on a face get that face's normal exactly.
template <class ShapeA, class ShapeB>
void SnapToFaceNormal(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b, const RigidTransform& X_WB,
                      double angle, Vec3* n_W, double* overlap, int32_t* axes) {
  std::vector<Vec3> faces, edges;
  AppendCandidateAxes(a, X_WA.R, &faces, &edges);
  AppendCandidateAxes(b, X_WB.R, &faces, &edges);
  const double cos_angle = std::cos(angle);
  for (const Vec3& f : faces) {
    const double norm = f.norm();
    if (!(norm > 0.0) || !std::isfinite(norm)) continue;
    const Vec3 u = f / norm;
    const double c = u.dot(*n_W);
    if (std::abs(c) < cos_angle) continue;
    const Vec3 d = c > 0.0 ? u : Vec3(-u);
    const double o = OverlapAlong(a, X_WA, b, X_WB, d);
    ++*axes;
    if (o <= *overlap) {
      *overlap = o;
      *n_W = d;
    }
  }
}

/// The axis search of ComputeContacts for overlapping pairs EPA cannot answer: candidate axes (face
/// normals, axes, cross products of edge directions, the line between the frame origins, and 64
/// directions spread over the sphere on a Fibonacci lattice), then PolishAxis from the three best
/// candidates that are more than 0.1 rad apart, keeping the least overlap. Sets the unit axis *n_W (from
/// A towards B) and its overlap *overlap (>= the penetration depth; a local search, so deep overlaps may
/// end above the depth); counts evaluations in *axes.
template <class ShapeA, class ShapeB>
void SearchPenetrationAxis(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b,
                           const RigidTransform& X_WB, const ContactOptions& options, Vec3* n_W,
                           double* overlap, int32_t* axes) {
  std::vector<Vec3> faces, edges_a, edges_b;
  AppendCandidateAxes(a, X_WA.R, &faces, &edges_a);
  AppendCandidateAxes(b, X_WB.R, &faces, &edges_b);
  constexpr int32_t kStarts = 3;
  std::array<Vec3, kStarts> start;
  std::array<double, kStarts> start_overlap;
  start.fill(Vec3::UnitZ());
  start_overlap.fill(std::numeric_limits<double>::infinity());
  // Keeps the kStarts least overlaps among mutually distant axes.
  const auto keep = [&](const Vec3& v, double o) {
    for (int32_t k = 0; k < kStarts; ++k) {
      if (std::isfinite(start_overlap[k]) && v.dot(start[k]) > std::cos(0.1)) {
        if (o < start_overlap[k]) {
          start_overlap[k] = o;
          start[k] = v;
        }
        return;
      }
    }
    int32_t worst = 0;
    for (int32_t k = 1; k < kStarts; ++k)
      if (start_overlap[k] > start_overlap[worst]) worst = k;
    if (o < start_overlap[worst]) {
      start_overlap[worst] = o;
      start[worst] = v;
    }
  };
  const auto consider = [&](const Vec3& d) {
    const double norm = d.norm();
    if (!(norm > 1e-12) || !std::isfinite(norm)) return;
    const Vec3 u = d / norm;
    for (const Vec3& v : {u, Vec3(-u)}) {
      keep(v, OverlapAlong(a, X_WA, b, X_WB, v));
      ++*axes;
    }
  };
  consider(X_WB.p - X_WA.p);
  for (const Vec3& f : faces) consider(f);
  for (const Vec3& ea : edges_a)
    for (const Vec3& eb : edges_b) consider(ea.cross(eb));
  for (int32_t k = 0; k < 32; ++k) {  // Both senses of each: 64 directions.
    const double z = 1.0 - (2.0 * k + 1.0) / 64.0;
    const double r = std::sqrt(std::max(0.0, 1.0 - z * z)), phi = 2.399963229728653 * k;
    consider(Vec3(r * std::cos(phi), r * std::sin(phi), z));
  }
  Vec3 best = Vec3::UnitZ();
  double best_overlap = std::numeric_limits<double>::infinity();
  for (int32_t k = 0; k < kStarts; ++k) {
    if (!std::isfinite(start_overlap[k])) continue;
    PolishAxis(a, X_WA, b, X_WB, options, 0.1, -std::numeric_limits<double>::infinity(), &start[k],
               &start_overlap[k], axes);
    if (start_overlap[k] < best_overlap) {
      best_overlap = start_overlap[k];
      best = start[k];
    }
  }
  if (!std::isfinite(best_overlap)) {
    best = Vec3::UnitZ();
    best_overlap = OverlapAlong(a, X_WA, b, X_WB, best);
    ++*axes;
  }
  SnapToFaceNormal(a, X_WA, b, X_WB, options.feature_angle_tolerance, &best, &best_overlap, axes);
  *n_W = best;
  *overlap = best_overlap;
}

/// Shapes with curved surfaces whose GJK witness direction is only approximate (GJK's distance
/// converges to second order in the direction's error there): ComputeContacts starts its polish of the
/// direction with a wider step for them.
template <class S>
inline constexpr bool kCurvedRim = std::is_same_v<S, Cylinder> || std::is_same_v<S, Cone>;

}  // namespace internal

/// The contact region of shapes a (pose X_WA) and b (pose X_WB) for the contact normal n_W (from A
/// towards B; normalised here) and their signed distance (negative when penetrating, at most
/// options.contact_margin): support sets of A along n_W and of B along -n_W, projected on the contact
/// plane, intersected, and lifted back onto both (see the file comment). Never empty: when the
/// projections do not overlap, one point from their closest points (disjoint_projections when they are
/// apart by more than feature_distance_tolerance).
/// Errors (kInvalidArgument): non-finite or zero normal, non-finite or too large signed distance, bad
/// options, poses or shape dimensions.
template <class ShapeA, class ShapeB>
Result<ContactManifold> ComputeContactRegion(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b,
                                             const RigidTransform& X_WB, const Vec3& n_W,
                                             double signed_distance, const ContactOptions& options = {}) {
  if (Status s = internal::ValidateContactOptions(options); !s.ok()) return s.error();
  if (Status s = internal::ValidatePose(X_WA, "X_WA"); !s.ok()) return s.error();
  if (Status s = internal::ValidatePose(X_WB, "X_WB"); !s.ok()) return s.error();
  if (Status s = internal::ValidateContactShape(a, "shape a"); !s.ok()) return s.error();
  if (Status s = internal::ValidateContactShape(b, "shape b"); !s.ok()) return s.error();
  const double norm = n_W.norm();
  if (!std::isfinite(norm) || !(norm > 1e-12)) {
    return InvalidArgument("contact normal n_W must be finite and nonzero");
  }
  if (!std::isfinite(signed_distance) || signed_distance > options.contact_margin) {
    return InvalidArgument("signed_distance must be finite and at most contact_margin (" +
                           std::to_string(options.contact_margin) + " m), got " + std::to_string(signed_distance));
  }
  ContactManifold m;
  m.normal_W = n_W / norm;
  m.signed_distance = signed_distance;
  m.source = ContactNormalSource::kGiven;
  SupportSet sa, sb;
  ComputeSupportSet(a, Vec3(X_WA.R.transpose() * m.normal_W), options, &sa);
  ComputeSupportSet(b, Vec3(-(X_WB.R.transpose() * m.normal_W)), options, &sb);
  internal::BuildContactRegion(sa, X_WA, sb, X_WB, m.normal_W, options, &m);
  return m;
}

/// Contact region of shapes a (pose X_WA) and b (pose X_WB), finding the normal itself (see the file
/// comment for how, and `source` for which way was taken): no points when the shapes are apart by more
/// than options.contact_margin (source kSeparated, the GJK distance in signed_distance). Otherwise
/// signed_distance is the separation of the shapes along the normal found, -OverlapAlong(normal_W):
/// to rounding for polyhedral pairs (overlapping ones up to the face bias, feature_distance_tolerance)
/// and ball-swept pairs, within 1e-6 relative of the distance for separated pairs with cylinders or
/// cones (measured: 3e-7 at worst, with cones), and for overlapping pairs found by EPA or the axis search
/// a lower bound (the depth an upper bound; EPA's depth or better).
/// `cache` (optional) warm-starts the first GJK call. Errors as ComputeContactRegion (bad options,
/// poses or shapes).
template <class ShapeA, class ShapeB>
Result<ContactManifold> ComputeContacts(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b,
                                        const RigidTransform& X_WB, const ContactOptions& options = {},
                                        GjkCache* cache = nullptr) {
  if (Status s = internal::ValidateContactOptions(options); !s.ok()) return s.error();
  if (Status s = internal::ValidatePose(X_WA, "X_WA"); !s.ok()) return s.error();
  if (Status s = internal::ValidatePose(X_WB, "X_WB"); !s.ok()) return s.error();
  if (Status s = internal::ValidateContactShape(a, "shape a"); !s.ok()) return s.error();
  if (Status s = internal::ValidateContactShape(b, "shape b"); !s.ok()) return s.error();

  constexpr bool kCurved = internal::kCurvedRim<ShapeA> || internal::kCurvedRim<ShapeB>;
  ContactManifold m;
  const GjkResult g = GjkDistance(a, X_WA, b, X_WB, cache, options.gjk);
  m.stats.gjk_iterations += g.iterations;
  bool found = false, polish = false;
  // A lower bound on the overlap along any axis (minus an upper bound on the signed distance) where the
  // polish may stop, with room for the bound's own accuracy.
  double target = -std::numeric_limits<double>::infinity();
  const double scale = std::max({1.0, X_WA.p.norm(), X_WB.p.norm()});
  const auto bound = [scale](double signed_distance_upper) {
    return -signed_distance_upper + 1e-12 * std::abs(signed_distance_upper) + 1e-14 * scale;
  };
  if (!g.intersecting) {
    const Vec3 d = g.p_WB - g.p_WA;
    const double dn = d.norm();
    m.signed_distance = g.distance;
    if (dn > 0.0 && std::isfinite(dn)) m.normal_W = d / dn;
    if (g.distance > options.contact_margin) {
      m.source = ContactNormalSource::kSeparated;
      return m;
    }
    if (dn > 0.0 && std::isfinite(dn)) {
      m.source = ContactNormalSource::kGjkWitness;
      found = true;
      polish = true;
      target = bound(g.distance);
    }
  }
  if (!found) {
    if constexpr (internal::kHasMargin<ShapeA> || internal::kHasMargin<ShapeB>) {
      // Shallow overlap of a ball-swept shape: the cores are apart, and their closest points give the
      // normal.
      const GjkResult c = GjkDistance(internal::CoreShape(a), X_WA, internal::CoreShape(b), X_WB, nullptr,
                                      options.gjk);
      m.stats.gjk_iterations += c.iterations;
      const Vec3 d = c.p_WB - c.p_WA;
      const double dn = d.norm();
      if (!c.intersecting && dn > 1e-9 * scale && std::isfinite(dn)) {
        m.normal_W = d / dn;
        m.source = ContactNormalSource::kCoreGjk;
        found = true;
        polish = true;
        target = bound(c.distance - Margin(a) - Margin(b));
      }
    }
  }
  if (!found) {
    if constexpr (internal::kIsPolyhedral<ShapeA> && internal::kIsPolyhedral<ShapeB>) {
      const internal::SatResult s =
          internal::PolyhedralSat(a, X_WA, b, X_WB, options.feature_distance_tolerance);
      m.stats.axes_tested += s.axes;
      m.normal_W = s.n_W;
      m.source = ContactNormalSource::kSat;
    } else {
      SignedDistanceOptions epa_options;
      epa_options.gjk = options.gjk;
      const Result<SignedDistanceResult> e = ComputeSignedDistance(a, X_WA, b, X_WB, nullptr, epa_options);
      if (e.ok() && e.value().normal_W.allFinite() && e.value().normal_W.norm() > 0.5) {
        m.normal_W = e.value().normal_W.normalized();
        m.stats.gjk_iterations += e.value().gjk_iterations;
        m.stats.epa_iterations += e.value().epa_iterations;
        m.source = ContactNormalSource::kEpa;
        polish = true;
        target = bound(e.value().upper_bound);
      } else {
        double overlap = 0.0;
        internal::SearchPenetrationAxis(a, X_WA, b, X_WB, options, &m.normal_W, &overlap, &m.stats.axes_tested);
        m.source = ContactNormalSource::kAxisSearch;
      }
    }
  }
  double overlap = internal::OverlapAlong(a, X_WA, b, X_WB, m.normal_W);
  ++m.stats.axes_tested;
  if (polish) {
    // A face normal first (often exact, and then the polish stops at once), then the local search, then
    // a face normal again for the search's end.
    internal::SnapToFaceNormal(a, X_WA, b, X_WB, options.feature_angle_tolerance, &m.normal_W, &overlap,
                               &m.stats.axes_tested);
    internal::PolishAxis(a, X_WA, b, X_WB, options, kCurved ? 1e-2 : 1e-4, target, &m.normal_W, &overlap,
                         &m.stats.axes_tested);
    internal::SnapToFaceNormal(a, X_WA, b, X_WB, options.feature_angle_tolerance, &m.normal_W, &overlap,
                               &m.stats.axes_tested);
  }
  m.signed_distance = -overlap;
  SupportSet sa, sb;
  ComputeSupportSet(a, Vec3(X_WA.R.transpose() * m.normal_W), options, &sa);
  ComputeSupportSet(b, Vec3(-(X_WB.R.transpose() * m.normal_W)), options, &sb);
  internal::BuildContactRegion(sa, X_WA, sb, X_WB, m.normal_W, options, &m);
  return m;
}

// The instances compiled in contact.cc (see PROX_FOR_EACH_CONVEX_PAIR).
#define PROX_CONTACT_INSTANCES(PREFIX, A, B)                                                                 \
  PREFIX template Result<ContactManifold> ComputeContactRegion<A, B>(                                        \
      const A&, const RigidTransform&, const B&, const RigidTransform&, const Vec3&, double, const ContactOptions&); \
  PREFIX template Result<ContactManifold> ComputeContacts<A, B>(const A&, const RigidTransform&, const B&,     \
                                                               const RigidTransform&, const ContactOptions&, GjkCache*);
#define PROX_CONTACT_EXTERN(A, B) PROX_CONTACT_INSTANCES(extern, A, B)
PROX_FOR_EACH_CONVEX_PAIR(PROX_CONTACT_EXTERN)
#undef PROX_CONTACT_EXTERN

}  // namespace proximity::core
