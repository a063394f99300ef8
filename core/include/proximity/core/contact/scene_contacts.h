#pragma once
/// @file
/// Contacts of a scene at a state: every colliding pair (world and self) with its penetration depth,
/// contact normal and contact points, and the signed distance of any named pair.
///
/// A pair collides as CLEAR says (Scene::CollidingParts: padding counted, allowed pairs skipped; meshes
/// are surfaces, primitives solids). Its depth is measured per geometry pair and the deepest kept:
///  - Convex pairs, exact (PenetrationMethod::kConvex): primitives, and meshes that are their own hull
///    (Geometry::hull_is_surface) taken as that hull: EPA (epa.h) on the pair, the contact region
///    (contact.h) for the points. Depth exact to EPA's tolerance (1e-9 relative; closed form for
///    spheres and capsules, to rounding for boxes and polytopes).
///  - Other mesh pairs (kMeshBracket): a certified bracket depth_lower <= depth <= depth_upper on the
///    translational penetration depth of the solids the surfaces bound (the shortest translation that
///    leaves them with no common interior point). depth_lower is the deepest penetration over the
///    intersecting triangle pairs (triangle x triangle, or triangle x primitive), each exact by EPA /
///    the separating-axis test: any translation that separates the solids separates every such pair,
///    so none is shorter than the deepest. depth_upper is the penetration depth of the pair's convex
///    hulls (EPA; the hull of a primitive is itself): a translation that separates the hulls separates
///    what they hold. The reported depth is depth_lower, realised by the contact points; the error
///    bound of the answer is depth_upper - depth_lower, reported with it. It is 0 where the meshes are
///    convex where they meet, and grows with how far the hulls over-fill the meshes near the contact.
///  - Pairs whose geometries are apart but within their padding (kPadding): depth = padding - d with d
///    the certified distance interval (GeometryDistance), points at the closest points.
/// Padding: every depth is that of the geometries inflated by the pair's padding (what CLEAR counts),
/// which adds the padding to the depth of the unpadded geometries (exact for convex sets; for the
/// bracket, both ends stay certified).
///
/// Frames: everything in W; the normal points from the robot side (PosedPartPair::robot) towards the
/// other: moving the other side along it by the depth separates the pair.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"
#include "proximity/core/scene/scene.h"

namespace proximity::core {

/// How a pair's depth or signed distance was found (see the file comment).
enum class PenetrationMethod : uint8_t {
  kConvex,       ///< Penetrating convex pieces: EPA, exact to the tolerance.
  kMeshBracket,  ///< Deepest intersecting triangle pair (lower) and the hulls' depth (upper).
  kPadding,      ///< Apart (within the padding, for contacts): the distance (GJK, or a certified interval).
  kCloud,        ///< A point cloud's balls: each touching ball's depth (radius minus its centre's distance), exact.
};

/// One contact point of a pair. Frames: W.
struct SceneContactPoint {
  Vec3 p_W = Vec3::Zero();  ///< Halfway between the two surfaces along the normal.
  double depth = 0.0;       ///< Metres, of the padded geometries at this point (the local penetration).
};

/// The contact of one named pair at a state.
struct PairPenetration {
  StateContact pair;
  /// Metres, > 0 for every reported pair up to rounding: the penetration depth of the pair's geometries
  /// inflated by `padding`; the deepest over the pair's geometry pairs. depth_lower <= depth <= depth_upper
  /// certify it (equal up to the tolerance for kConvex; depth_upper may be +inf when a mesh has no hull).
  double depth = 0.0;
  double depth_lower = 0.0;
  double depth_upper = 0.0;
  Vec3 normal_W = Vec3::UnitZ();  ///< Unit, from the robot side towards the other side.
  /// The deepest geometry pair's deepest points: on the robot side and on the other side; for a
  /// penetrating pair p_W_other - p_W_robot = -(depth - padding) normal_W, up to the tolerance.
  Vec3 p_W_robot = Vec3::Zero();
  Vec3 p_W_other = Vec3::Zero();
  std::vector<SceneContactPoint> points;  ///< Deepest first, at most SceneContactRequest::max_points.
  double padding = 0.0;                   ///< Metres: the pair's padding, included in the depths.
  PenetrationMethod method = PenetrationMethod::kConvex;
  int32_t geometry_pairs = 0;             ///< Colliding geometry pairs of this named pair.
};

/// Options for ComputeSceneContacts.
struct SceneContactRequest {
  /// At most this many colliding geometry pairs are measured (>= 1); SceneContactResult::truncated beyond.
  int32_t max_pairs = 256;
  int32_t max_points = 8;  ///< Contact points kept per named pair (>= 1).
  bool world = true;       ///< Include robot-world pairs.
  bool self = true;        ///< Include robot-robot pairs.
  /// Asked between pairs; when it says stop the query ends with SceneContactResult::stopped.
  Interrupt stop;
};

/// The contacts at a state.
struct SceneContactResult {
  std::vector<PairPenetration> pairs;  ///< Deepest first.
  bool truncated = false;              ///< More geometry pairs collide than max_pairs.
  bool stopped = false;                ///< The request's stop ended the query; pairs is partial.
  bool within_limits = true;
  int64_t pairs_tested = 0;            ///< Geometry pairs that reached an exact collision test.
  int64_t triangle_pairs = 0;          ///< Intersecting triangle pairs measured (kMeshBracket).
  QueryStats stats;
};

/// Every colliding pair of `scene` at q with depth, normal and contact points (see the file comment).
/// Errors as Scene::CheckState for q, and for max_pairs or max_points < 1.
[[nodiscard]] Result<SceneContactResult> ComputeSceneContacts(const Scene& scene, std::span<const double> q,
                                                              const SceneContactRequest& request,
                                                              SceneCache* cache);

/// Options for ComputePairSignedDistance: the budget of the distance interval of pairs that are apart
/// (as DistanceRequest's: upper <= lower (1 + rel_err) or upper - lower <= abs_err; 0 and 0: exact).
struct PairSignedDistanceRequest {
  double rel_err = 0.0;
  double abs_err = 0.0;
  Interrupt stop;  ///< Asked between geometry pairs; see PairSignedDistance::stopped.
};

/// The signed distance of a named pair: the distance between its (unpadded) geometries when apart,
/// minus the penetration depth when they collide (as CLEAR's exact test says, without padding),
/// negative inside. lower <= distance <= upper certify it: the budget's interval when apart, the
/// depth bracket when colliding (-depth_upper, -depth_lower).
struct PairSignedDistance {
  StateContact pair;
  double distance = 0.0;
  double lower = 0.0;
  double upper = 0.0;
  Vec3 normal_W = Vec3::UnitZ();  ///< Unit, from the first side (the robot side) towards the second.
  Vec3 p_W_robot = Vec3::Zero();  ///< Witness on the robot side (closest, or deepest point).
  Vec3 p_W_other = Vec3::Zero();
  bool allowed = false;           ///< The scene does not check the pair (allowed-collision set).
  /// The request's stop ended the query before every geometry pair was measured: no answer.
  bool stopped = false;
  PenetrationMethod method = PenetrationMethod::kConvex;
};

/// Signed distance between the two things named (links, attached objects, world objects; at least
/// one on the robot) at q: the minimum over their geometry pairs. Errors as Scene::NamedParts (names
/// `field_a`, `field_b`) and for a bad budget.
[[nodiscard]] Result<PairSignedDistance> ComputePairSignedDistance(const Scene& scene, std::string_view a,
                                                                   std::string_view b, std::span<const double> q,
                                                                   const PairSignedDistanceRequest& request,
                                                                   SceneCache* cache,
                                                                   std::string_view field_a = "a",
                                                                   std::string_view field_b = "b");

}  // namespace proximity::core
