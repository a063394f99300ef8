#pragma once
/// @file
/// Signed distance maps of closed triangle meshes (and unsigned distance maps of any mesh, see
/// SdfBuildOptions::unsigned_distance), and contacts between two posed signed maps.
///
/// A SignedDistanceMap samples the signed distance phi_M(p) of a closed, outward-oriented mesh on a
/// regular grid in the mesh frame M: negative inside, positive outside, 1-Lipschitz.
///
/// One connected part (triangles linked through shared vertices) that does not intersect itself:
/// every grid node holds the exact signed distance (up to rounding). The unsigned distance comes from
/// a walk of the part's OBB tree seeded with the previous node's closest triangle; the sign is that of
/// (p - c) · n, where c is the closest point and n the angle-weighted pseudonormal of the feature
/// (face, edge or vertex) c lies on (Bærentzen, Aanæs, "Signed distance computation using the angle
/// weighted pseudonormal", IEEE TVCG 2005). When that product is too small to trust (p nearly tangent
/// to a sharp vertex or edge, or on the surface) the sign comes from the generalized winding number
/// over the part's triangles instead (solid angles by Van Oosterom, Strackee, "The solid angle of a
/// plane triangle", IEEE TBME 1983), exact for a closed surface away from it.
///
/// Several parts, which may overlap (robot collision meshes are often unions of overlapping closed
/// shells, where the nearest triangle can be inside another shell and its pseudonormal then gives the
/// wrong side): each part is signed as above on its own, and the parts' inside tests add up to the
/// winding number w (+1 per outward part holding p, -1 per inward part, a cavity, holding p); p is
/// inside the solid when w >= 1. Node values are then
///  - all parts outward (a union): the smallest of the parts' signed distances; exact outside, and
///    inside minus the largest depth within one part, which is at most the true depth;
///  - some part inward: sign(w) times the distance to the nearest triangle; exact for nested parts that
///    do not intersect (a hollow), and otherwise never larger in magnitude than the truth.
/// Either function is 1-Lipschitz, so the bounds below hold for it; "exact" in the rest of this file
/// means this function. Samples lying inside the solid (on a part's surface covered by another part)
/// are dropped. Each part itself must not intersect itself.
///
/// Between nodes the map is the trilinear interpolant phi~. Error bound (proved, not estimated): with
/// weights w_i >= 0 summing to one and node offsets r_i = |x_i - p|, a 1-Lipschitz phi gives
///   |phi~(p) - phi(p)| <= sum_i w_i r_i <= h sqrt(sum_a t_a (1 - t_a)) <= (sqrt(3) / 2) h,
/// (Jensen, and the trilinear weights' per-axis variance t_a (1 - t_a) h^2), where h is the cell size
/// and t_a the point's fractional position in its cell. Lipschitz continuity also confines phi(p) to
/// [max_i (phi_i - r_i), min_i (phi_i + r_i)]; Evaluate reports the smaller of the two bounds, plus the
/// nodes' rounding. Outside the grid, see Evaluate.
///
/// Contacts (Heidelberger, Teschner, Keiser, Müller, Gross, "Consistent penetration depth estimation
/// for deformable collision response", VMV 2004, use maps the same way): surface samples of each mesh
/// are looked up in the other's map; each sample deeper than a margin is one contact.
///
/// Maps are immutable once built and can be queried from any number of threads.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "narrowphase/bounding_volume.h"
#include "bvh/bvh.h"
#include "proximity/core/mesh/mesh.h"
#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"

namespace proximity::core {

/// Settings for SignedDistanceMap::Build.
struct SdfBuildOptions {
  /// Space added around the mesh's bounding box on every side, in mesh units; finite and >= 0.
  /// Unset: 10% of the box's longest side.
  std::optional<double> padding;
  /// Spacing of the surface samples, in mesh units; finite and > 0. Unset: the cell size h.
  std::optional<double> sample_spacing;
  /// Threads that compute grid nodes; 0: one per hardware thread. The map does not depend on it.
  int32_t num_threads = 0;
  /// The unsigned distance to the triangles instead (any mesh: no closed surface needed, no surface
  /// samples, no parts): node values are exact distances, and the interpolation bounds below hold as
  /// they are (the distance is 1-Lipschitz too). What point clouds use: meshes are surfaces there.
  bool unsigned_distance = false;
};

/// What a build did and cost.
struct SdfBuildStats {
  int64_t nodes = 0;            ///< Grid nodes computed.
  int64_t box_tests = 0;        ///< Point–OBB distance bounds evaluated by the closest-point walks.
  int64_t triangle_tests = 0;   ///< Exact point–triangle distances.
  int64_t sign_fallbacks = 0;   ///< Signs that came from the winding number, not a pseudonormal.
  int32_t parts = 0;            ///< Closed parts taken one by one (1: the mesh is taken whole).
  int64_t internal_samples_dropped = 0;  ///< Samples dropped for lying inside another part.
  int32_t threads = 0;          ///< Threads used.
  double seconds = 0.0;         ///< Wall-clock time of the whole build (checks, nodes, samples).
};

/// A point on the mesh surface with the outward unit normal there, both in the mesh frame M.
/// Vertex and edge samples carry the angle-weighted (vertex) or mean (edge) pseudonormal.
struct SdfSample {
  Vec3 p_MS = Vec3::Zero();
  Vec3 n_M = Vec3::Zero();
};

/// A node of the samples' hierarchy: the samples [begin, end) and a sphere in M holding them. Internal
/// nodes have children first_child and first_child + 1; leaves (at most 8 samples) have
/// first_child = -1. Node 0 is the root.
struct SdfSampleNode {
  Sphere bound;
  int32_t begin = 0;
  int32_t end = 0;
  int32_t first_child = -1;
};

/// The map's answer at one point, in the mesh frame M.
struct SdfEvaluation {
  double value = 0.0;               ///< phi~(p): the interpolated signed distance (mesh units).
  Vec3 gradient_M = Vec3::Zero();   ///< Gradient of the function `value` describes; not normalised.
  double error_bound = 0.0;         ///< |phi(p) - value| <= error_bound, phi as in the file comment.
  bool inside_grid = false;         ///< p is in the grid's box (closed).
};

struct SdfContactOptions;
struct SdfContactResult;

/// The signed distance of a closed mesh sampled on a grid in the mesh frame M, with surface samples.
class SignedDistanceMap {
 public:
  /// Builds the map of the mesh of `model`. `cells` is the number of cells along the longest side of
  /// the padded bounding box (for example 32, 64, 128; in [2, 1024]); the cells are cubes of side h,
  /// and the grid is centred on the padded box, covering it. Errors (InvalidArgument) name `name`
  /// and what is wrong: a surface that is not closed and consistently oriented (counts of boundary,
  /// non-manifold and inconsistently oriented edges, with an example), a triangle of zero area, an
  /// inward-facing or flat surface (signed volume <= 0), a part enclosing no volume, bad options.
  /// ResourceExhausted when the grid would exceed 2^27 nodes or the samples 2^26. A mesh of several
  /// parts builds a hierarchy per part and costs about one closest-point walk per part and node.
  [[nodiscard]] static Result<std::shared_ptr<const SignedDistanceMap>> Build(
      const MeshModel& model, int32_t cells, const SdfBuildOptions& options = {},
      const std::string& name = "mesh");
  /// Builds the hierarchy of `mesh` (default BvhBuildOptions), then the map as above.
  [[nodiscard]] static Result<std::shared_ptr<const SignedDistanceMap>> Build(
      const TriangleMesh& mesh, int32_t cells, const SdfBuildOptions& options = {},
      const std::string& name = "mesh");

  /// phi~(p_MQ), the interpolated signed distance at a point in M (see Evaluate). A non-finite point
  /// gives +infinity.
  double Value(const Vec3& p_MQ) const;
  /// Gradient of Value at p_MQ (frame M, not normalised; |gradient| <= sqrt(3) inside the grid, and 0
  /// where the interpolant is flat, as at a medial point). Zero for a non-finite point.
  Vec3 Gradient(const Vec3& p_MQ) const;
  /// Value and Gradient in one lookup, without the error bound (the contact query's inner loop).
  /// Precondition: gradient_M is not null.
  double ValueAndGradient(const Vec3& p_MQ, Vec3* gradient_M) const;
  /// Value, gradient and a certified error bound at p_MQ. Inside the grid (closed box): the trilinear
  /// interpolant of the cell holding p (on a face shared by two cells, the upper one, except at the
  /// grid's far faces), with the bound in the file comment. Outside: with q the grid point nearest p,
  /// e = |p - q| and D the distance from p to the mesh's bounding box, the exact phi(p) lies in
  /// [max(phi~(q) - b(q) - e, D), phi~(q) + b(q) + e],
  /// where b(q) is the bound at q; value is max(phi~(q) + e, D), which lies in that interval, and
  /// error_bound the larger distance from it to the interval's ends. The gradient is that of the value:
  /// phi~'s along the axes where p is within the grid's slab and (p - q) / e along the others, or D's
  /// gradient where D is the larger. A non-finite point gives value = error_bound = +infinity and a
  /// zero gradient.
  SdfEvaluation Evaluate(const Vec3& p_MQ) const;
  /// Whether the map proves phi(p_MQ) > t from the grid node nearest p (the node's value less its
  /// distance to p and its rounding: phi is 1-Lipschitz), with one look-up and no square root: the
  /// first test of a hot loop, Evaluate's tighter bound after. False for a non-finite point.
  bool ProvesAbove(const Vec3& p_MQ, double t) const {
    const Vec3 u = (p_MQ - origin_) / h_;
    int32_t c[3];
    for (int a = 0; a < 3; ++a) {
      const double r = std::nearbyint(u[a]);
      if (!(r >= 0.0)) {
        c[a] = 0;
      } else {
        c[a] = r > cells_[a] ? cells_[a] : static_cast<int32_t>(r);
      }
    }
    const double margin = node_value(c[0], c[1], c[2]) - node_rounding_ - t;
    if (!(margin > 0.0)) return false;
    return (p_MQ - node_position(c[0], c[1], c[2])).squaredNorm() * (1.0 + 1e-12) < margin * margin;
  }
  /// The certified lower bound on phi(p_MQ) ProvesAbove uses (one look-up, one square root);
  /// -infinity for a non-finite point.
  double NodeLowerBound(const Vec3& p_MQ) const {
    if (!p_MQ.allFinite()) return -std::numeric_limits<double>::infinity();
    const Vec3 u = (p_MQ - origin_) / h_;
    int32_t c[3];
    for (int a = 0; a < 3; ++a) {
      c[a] = static_cast<int32_t>(std::clamp(std::nearbyint(u[a]), 0.0, static_cast<double>(cells_[a])));
    }
    return node_value(c[0], c[1], c[2]) - node_rounding_ -
           (p_MQ - node_position(c[0], c[1], c[2])).norm() * (1.0 + 1e-12);
  }

  /// Cell side h (mesh units).
  double cell_size() const { return h_; }
  /// Number of cells along x, y, z; the grid has cells + 1 nodes per axis.
  const std::array<int32_t, 3>& cells() const { return cells_; }
  /// Position p_MO of node (0, 0, 0); node (i, j, k) is at p_MO + h (i, j, k).
  const Vec3& origin() const { return origin_; }
  /// The grid's box in M.
  Aabb grid_box() const;
  /// The mesh's bounding box in M.
  const Aabb& mesh_box() const { return mesh_box_; }
  /// Signed distance stored at node (i, j, k), exact up to rounding. Precondition: indices in range.
  double node_value(int32_t i, int32_t j, int32_t k) const {
    return values_[static_cast<std::size_t>(i) +
                   static_cast<std::size_t>(cells_[0] + 1) *
                       (static_cast<std::size_t>(j) + static_cast<std::size_t>(cells_[1] + 1) * k)];
  }
  /// Position of node (i, j, k) in M.
  Vec3 node_position(int32_t i, int32_t j, int32_t k) const { return origin_ + h_ * Vec3(i, j, k); }
  /// (sqrt(3) / 2) h plus twice the nodes' rounding bound (theirs, and the interpolation's): the
  /// largest error_bound Evaluate reports inside the grid.
  double interpolation_error_bound() const { return 0.5 * std::sqrt(3.0) * h_ + 2 * node_rounding_; }
  /// Bound on the rounding error of each stored node value.
  double node_rounding() const { return node_rounding_; }

  /// Surface samples in M: every vertex, points along every edge and area-uniform points inside every
  /// triangle at about `sample_spacing` apart (one per spacing^2 of area), but those inside the solid
  /// (see the file comment on parts); deterministic, in the order of their hierarchy (each node's
  /// samples are contiguous).
  const std::vector<SdfSample>& samples() const { return samples_; }
  /// The samples' hierarchy (median splits along the longest axis), for pruning.
  const std::vector<SdfSampleNode>& sample_tree() const { return sample_tree_; }
  /// The spacing the samples were placed at.
  double sample_spacing() const { return sample_spacing_; }

  /// Memory held by the map: node values, samples and their hierarchy (bytes).
  std::size_t memory_bytes() const;
  const SdfBuildStats& build_stats() const { return stats_; }
  /// Wall-clock build time in seconds (build_stats().seconds).
  double build_seconds() const { return stats_.seconds; }
  /// Built with SdfBuildOptions::unsigned_distance: values are distances to the triangles, never
  /// negative; no samples.
  bool is_unsigned() const { return unsigned_; }

 private:
  SignedDistanceMap() = default;
  friend struct SdfBuilder;
  friend Result<SdfContactResult> SdfContacts(const SignedDistanceMap&, const RigidTransform&,
                                             const SignedDistanceMap&, const RigidTransform&,
                                             const SdfContactOptions&);

  // Which error bound a lookup computes: none, the Jensen bound alone (one square root), or the smaller
  // of it and the Lipschitz interval's (eight more).
  static constexpr int kNoBound = 0, kCheapBound = 1, kTightBound = 2;
  // Interpolation at q inside the grid's box: value, gradient and (unless kNoBound) the bound.
  template <int kBound>
  void Interpolate(const Vec3& q_M, double* value, Vec3* gradient_M, double* bound) const;
  // Evaluate with the chosen bound.
  template <int kBound>
  SdfEvaluation EvaluateWith(const Vec3& p_MQ) const;

  bool unsigned_ = false;
  Vec3 origin_ = Vec3::Zero();
  double h_ = 0.0;
  std::array<int32_t, 3> cells_{};
  std::vector<double> values_;
  Aabb mesh_box_;
  double node_rounding_ = 0.0;
  std::vector<SdfSample> samples_;
  std::vector<SdfSampleNode> sample_tree_;
  int32_t sample_tree_depth_ = 0;
  double sample_spacing_ = 0.0;
  SdfBuildStats stats_;
};

/// Options for SdfContacts.
struct SdfContactOptions {
  /// Samples whose interpolated signed distance to the other surface is below this (mesh units) are
  /// reported; 0 reports penetrating samples only. Finite.
  double margin = 0.0;
  /// At most this many contacts (>= 1); the deepest are kept.
  int32_t max_contacts = 1 << 20;
};

/// One surface sample of one map that lies within the margin of the other mesh.
///
/// Direction convention: normal_W points from A towards B, the direction in which B moves (relative to
/// A) to reduce the penetration. For a sample of B it is A's gradient, out of A; for a sample of A it is
/// minus B's gradient, into B. Both agree for two bodies pressed together.
struct SdfContact {
  Vec3 p_W = Vec3::Zero();       ///< The sample point (on the surface of the mesh it belongs to), world.
  Vec3 normal_W = Vec3::Zero();  ///< Unit normal, world, from A towards B (see above).
  /// -phi~: how deep the sample is inside the other mesh (negative: outside, by less than the margin).
  double depth = 0.0;
  /// |depth - true depth| <= error_bound, the true depth being minus the exact signed distance of
  /// p_W to the other mesh's surface (the map's Evaluate bound at that point).
  double error_bound = 0.0;
  bool sample_of_b = false;      ///< true: a sample of B looked up in A's map; false: of A in B's.
  int32_t sample = -1;           ///< Index of the sample in its map's samples().
};

/// Work done by SdfContacts.
struct SdfContactStats {
  int64_t nodes_tested = 0;     ///< Sample-hierarchy spheres looked up in the other map.
  int64_t nodes_pruned = 0;     ///< Those proved beyond the margin by that lookup alone.
  int64_t samples_tested = 0;   ///< Samples looked up one by one.
};

/// What SdfContacts found.
struct SdfContactResult {
  /// Deepest first (ties by sample_of_b, then sample index), at most max_contacts.
  std::vector<SdfContact> contacts;
  bool truncated = false;  ///< More samples were within the margin than max_contacts.
  SdfContactStats stats;
};

/// Contacts between the meshes of signed maps `a` (pose X_WA) and `b` (pose X_WB): every sample of B with
/// phi~_A(X_AB p) < margin and every sample of A with phi~_B(X_BA p) < margin, as SdfContact. Each
/// map's sample hierarchy is walked from the root; a node is skipped when phi~ at its sphere's centre,
/// minus the error bound there and the radius, is at least the margin (phi is 1-Lipschitz), so pruning
/// drops only samples whose exact signed distance is at least the margin. Sampling caveat: the deepest
/// contact under-reports the true penetration depth by how far the deepest surface point is from its
/// nearest sample. Errors (InvalidArgument) for invalid poses or options.
[[nodiscard]] Result<SdfContactResult> SdfContacts(const SignedDistanceMap& a, const RigidTransform& X_WA,
                                                   const SignedDistanceMap& b, const RigidTransform& X_WB,
                                                   const SdfContactOptions& options);

}  // namespace proximity::core
