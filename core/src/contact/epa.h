#pragma once
/// @file
/// Signed distance between convex shapes: GJK's distance when they are apart and, when they overlap,
/// the penetration depth by the expanding polytope algorithm (EPA), with a contact normal, witness
/// points and a certified bracket on the depth.
///
/// Algorithms: EPA follows van den Bergen, "Proximity Queries and Penetration Depth Computation on 3D
/// Game Objects", GDC 2001, and "Collision Detection in Interactive 3D Environments" (2004): grow a
/// polytope inside the Minkowski difference A - B from GJK's final simplex, always towards the face
/// closest to the origin, until the support value along that face's normal meets the face's distance.
/// The horizon of each expansion is found by a depth-first walk over the face adjacency.
///
/// Conventions. Shapes are closed convex sets posed in world W (X_WA, X_WB). The signed distance is
/// the distance when the shapes are apart and minus the penetration depth when they overlap, where the
/// depth is the length of the shortest translation of B that leaves the shapes with no common
/// interior point. The unit normal n (normal_W) points from A towards B in both cases: translating B
/// by t n (t > 0) increases the signed distance, and p_WB - p_WA = distance n (up to the tolerance).
/// When penetrating, translating B by -distance n (that is, by the depth along n) brings the shapes to
/// touching, and by any more separates them.
///
/// Margins: GJK and EPA run on the shapes' cores (a sphere's centre, a capsule's segment, every other
/// shape itself) and the margins (radii) are added in closed form, so deep sphere and capsule
/// penetrations are exact, not polytope approximations: depth = core depth + r_A + r_B along the same
/// normal. When the cores are apart and only the margins overlap, depth = margins - core distance; the
/// normal between the cores is certified with one support pair (the overlap along it may exceed that
/// depth by the tolerance at most), and where it is not (curved cores nearly touching, where GJK's
/// direction is far less accurate than its distance), EPA runs on the whole shapes instead.
///
/// Robustness: no exceptions, no NaN for valid input, bounded work (iteration and face caps). GJK's
/// verdict is checked before it is used: "apart" needs a separating axis above the contact tolerance,
/// "contact" a final simplex that touches the origin (else an axis along the simplex's closest point,
/// or a fresh GJK run from it, may disprove it), and GJK's distance must be realised by a point of its
/// simplex. A GJK simplex of fewer than four vertices (or a sliver) is blown up to a full-dimensional
/// polytope by support searches along axes and normals. The polytope's expansion merges faces that
/// rounding would fold over and refuses inconsistent expansions. When the cores' Minkowski difference
/// is flat (coplanar triangles or rectangles, crossing capsule axes, concentric spheres) the cores
/// have no common interior point: the core depth is 0 and the normal is perpendicular to the flat set
/// (method kFlat; exact). When a cap, or rounding above the floor kEpaRoundingFloor, stops EPA early,
/// `converged` is false and the bracket and normal are still valid.
///
/// Accuracy (measured in tests/core/epa_test.cc): polytopes and boxes to ~1e-12 relative; spheres,
/// capsules and their pairs in closed form; curved cylinder and cone surfaces to the tolerance, or to
/// the rounding floor of ~1e-9 of the coordinates' scale when faces near the answer get too small.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "narrowphase/convex.h"
#include "narrowphase/gjk.h"
#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"

namespace proximity::core {

/// Tolerances and limits for ComputeSignedDistance.
struct SignedDistanceOptions {
  /// Options of the GJK run on the cores (its abs_tolerance is also the contact tolerance).
  GjkOptions gjk;
  /// EPA stops when the support value h along the closest face's normal and that face's distance d
  /// satisfy h - d <= max(abs_tolerance, rel_tolerance * h, rounding at the coordinates' scale): the
  /// reported depth is then within that of the true depth.
  double rel_tolerance = 1e-9;
  /// Absolute floor of the same test (metres).
  double abs_tolerance = 1e-12;
  /// EPA iteration cap (at least 1); each iteration costs one support pair. Polytope pairs need a few
  /// to a few dozen; curved surfaces converge linearly, typically in 10 to 60 (up to ~150 when two
  /// curved surfaces meet nearly flat, such as parallel cylinders side by side).
  int32_t max_iterations = 256;
  /// Cap on the faces EPA creates (at least 8), against pathological growth.
  int32_t max_faces = 4096;
};

/// How ComputeSignedDistance found its answer.
enum class SignedDistanceMethod : uint8_t {
  kGjk,     ///< The shapes are apart: GJK's distance between the cores minus the margins.
  kMargin,  ///< The cores are apart but the margins overlap: depth = margins - core distance (exact).
  /// The cores overlap, or their separation is below what GJK could certify: EPA on the cores'
  /// Minkowski difference, plus the margins (its distance may then be slightly positive). Also kMargin's
  /// fallback when its normal cannot be certified: EPA on the whole shapes.
  kEpa,
  kFlat,    ///< The cores touch and their Minkowski difference is flat: core depth 0, plus the margins.
};

/// The answer of ComputeSignedDistance. Frames: everything in W.
struct SignedDistanceResult {
  /// Signed distance (metres): > 0 apart (GJK's distance, realised by the witnesses: an upper bound),
  /// <= 0 overlapping (minus the overlap of the shapes along normal_W: exact along that normal, and a
  /// lower bound on the true signed distance).
  double distance = 0.0;
  /// Certified bracket on the true signed distance: lower_bound <= distance <= upper_bound, and the
  /// truth lies in [lower_bound, upper_bound] up to rounding (on curved surfaces up to the rounding
  /// floor, kEpaRoundingFloor times the coordinates' scale) and the GJK contact tolerance. When
  /// penetrating, -upper_bound is EPA's lower bound on the depth (closest face of the polytope grown
  /// inside A - B) and -lower_bound the upper bound (a support value).
  double lower_bound = 0.0;
  double upper_bound = 0.0;
  /// Unit normal from A towards B (see the file comment); moving B along it separates the shapes.
  Vec3 normal_W = Vec3::UnitZ();
  /// Witness points on A and on B (on the surfaces up to rounding): apart, the closest points; when
  /// penetrating, the deepest points along the normal, with p_WB - p_WA = distance normal_W up to the
  /// tolerance.
  Vec3 p_WA = Vec3::Zero();
  Vec3 p_WB = Vec3::Zero();
  /// The shapes share a point (distance <= 0, or within GJK's contact tolerance).
  bool intersecting = false;
  /// False when a cap or rounding stopped GJK or EPA before its tolerance (a gap within EPA's rounding
  /// floor, kEpaRoundingFloor times the coordinates' scale, counts as converged), or when GJK's verdict
  /// could not be certified; the bracket stays valid.
  bool converged = true;
  SignedDistanceMethod method = SignedDistanceMethod::kGjk;
  int32_t gjk_iterations = 0;  ///< GJK loop iterations.
  int32_t epa_iterations = 0;  ///< EPA expansions tried (one support pair each).
  int32_t support_calls = 0;   ///< All support-pair evaluations (GJK, simplex blow-up, EPA).
  int32_t epa_faces = 0;       ///< Faces EPA created (the initial polytope's included).
};

/// Signed distance between convex shapes a (pose X_WA) and b (pose X_WB): GJK on the cores and, when
/// the cores overlap, EPA, with the margins added in closed form (see the file comment for the
/// conventions). `cache` (optional) warm-starts GJK as in GjkDistance and receives its state. Errors
/// (kInvalidArgument) for non-finite or non-orthonormal poses, invalid shape dimensions or options.
template <class ShapeA, class ShapeB>
Result<SignedDistanceResult> ComputeSignedDistance(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b,
                                                   const RigidTransform& X_WB, GjkCache* cache = nullptr,
                                                   const SignedDistanceOptions& options = {});

// The instances compiled in epa.cc (see PROX_FOR_EACH_CONVEX_PAIR).
#define PROX_EPA_INSTANCES(PREFIX, A, B)                                                                    \
  PREFIX template Result<SignedDistanceResult> ComputeSignedDistance<A, B>(                                 \
      const A&, const RigidTransform&, const B&, const RigidTransform&, GjkCache*, const SignedDistanceOptions&);
#define PROX_EPA_EXTERN(A, B) PROX_EPA_INSTANCES(extern, A, B)
PROX_FOR_EACH_CONVEX_PAIR(PROX_EPA_EXTERN)
#undef PROX_EPA_EXTERN

}  // namespace proximity::core
