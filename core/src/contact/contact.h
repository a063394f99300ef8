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

#include "narrowphase/convex.h"
#include "contact/epa.h"
#include "narrowphase/gjk.h"
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
                                             double signed_distance, const ContactOptions& options = {});

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
                                        GjkCache* cache = nullptr);

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
