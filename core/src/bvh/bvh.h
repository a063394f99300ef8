#pragma once
/// @file
/// A triangle mesh built once into bounding-volume hierarchies: one binary topology whose nodes carry
/// both a sphere (the sphere tree) and an OBB (the OBB tree). Nodes live in flat arrays indexed by
/// int32_t; the two children of an internal node are adjacent. A built MeshModel is immutable and can
/// be shared by any number of threads and scenes.

#include <cstdint>
#include <memory>
#include <vector>

#include "narrowphase/bounding_volume.h"
#include "proximity/core/mesh/mesh.h"
#include "proximity/core/base/result.h"

namespace proximity::core {

/// How a node's triangles are divided between its two children.
enum class SplitRule {
  kMedian,       ///< Median of triangle centroids along the node OBB's longest axis.
  kSurfaceArea,  ///< Binned surface-area heuristic over the three model axes.
};

/// The most triangles a hierarchy leaf may hold (BvhBuildOptions::max_leaf_triangles).
inline constexpr int32_t kMaxLeafTriangles = 16;

/// Settings for MeshModel::Build.
struct BvhBuildOptions {
  /// The surface-area split with two triangles a leaf was fastest for collision and distance on
  /// every mesh measured (FCL's env/rob, Panda, UR5 and KR5 links); see bench/results.
  SplitRule split = SplitRule::kSurfaceArea;
  /// Largest number of triangles in a leaf, 1 to kMaxLeafTriangles.
  int32_t max_leaf_triangles = 2;
};

/// Topology of one hierarchy node.
struct BvhNode {
  /// Leaf: index of the first triangle in leaf order. Internal: index of the left child; the right
  /// child is first + 1.
  int32_t first = 0;
  /// Leaf: number of triangles (>= 1). Internal: 0.
  int32_t count = 0;

  bool is_leaf() const { return count > 0; }
};
static_assert(sizeof(BvhNode) == 8);

/// One triangle's vertices in the model frame M, stored in leaf order.
struct LeafTriangle {
  Vec3 v[3];
};
static_assert(sizeof(LeafTriangle) == 72);

/// A leaf-order triangle's plane in M: its unit normal n (zero for a degenerate triangle) and the
/// extent [low, high] of its vertices along n (equal but for rounding). Any other triangle's vertices
/// projected onto n lie at least their span's gap from it: a lower bound on the two triangles' distance.
struct LeafPlane {
  Vec3 n;
  double low, high;
};
static_assert(sizeof(LeafPlane) == 40);

/// A triangle mesh with its hierarchies, in the mesh's own frame M.
class MeshModel {
 public:
  /// Validates `mesh` (at least one triangle, indices in range, finite coordinates) and builds the
  /// hierarchies. Errors name the problem (and `name`, used in messages, for example the file path).
  [[nodiscard]] static Result<std::shared_ptr<const MeshModel>> Build(TriangleMesh mesh,
                                                                      const BvhBuildOptions& options = {},
                                                                      const std::string& name = "mesh");

  const TriangleMesh& mesh() const { return mesh_; }
  int32_t num_triangles() const { return static_cast<int32_t>(mesh_.triangles.size()); }
  int32_t num_nodes() const { return static_cast<int32_t>(nodes_.size()); }
  /// Depth of the deepest leaf; the root has depth 0.
  int32_t depth() const { return depth_; }
  /// Bytes held by this object (its arrays' capacities), for memory accounting.
  int64_t MemoryBytes() const {
    return static_cast<int64_t>(sizeof(*this) + mesh_.vertices.capacity() * sizeof(Vec3) +
                                mesh_.triangles.capacity() * sizeof(mesh_.triangles[0]) +
                                nodes_.capacity() * sizeof(BvhNode) + spheres_.capacity() * sizeof(Sphere) +
                                obbs_.capacity() * sizeof(Obb) + leaf_triangles_.capacity() * sizeof(LeafTriangle) +
                                leaf_planes_.capacity() * sizeof(LeafPlane) +
                                triangle_ids_.capacity() * sizeof(int32_t));
  }

  const BvhNode& node(int32_t i) const { return nodes_[i]; }
  const Sphere& sphere(int32_t i) const { return spheres_[i]; }
  const Obb& obb(int32_t i) const { return obbs_[i]; }
  /// Triangle at leaf-order position k: its vertices p_MV, and its index in mesh().triangles.
  const LeafTriangle& leaf_triangle(int32_t k) const { return leaf_triangles_[k]; }
  int32_t triangle_id(int32_t k) const { return triangle_ids_[k]; }

  /// Flat arrays, for traversal code.
  const BvhNode* nodes() const { return nodes_.data(); }
  const Sphere* spheres() const { return spheres_.data(); }
  const Obb* obbs() const { return obbs_.data(); }
  const LeafTriangle* leaf_triangles() const { return leaf_triangles_.data(); }
  const LeafPlane* leaf_planes() const { return leaf_planes_.data(); }

 private:
  MeshModel() = default;

  TriangleMesh mesh_;
  std::vector<BvhNode> nodes_;
  std::vector<Sphere> spheres_;
  std::vector<Obb> obbs_;
  std::vector<LeafTriangle> leaf_triangles_;
  std::vector<LeafPlane> leaf_planes_;
  std::vector<int32_t> triangle_ids_;
  int32_t depth_ = 0;
};

}  // namespace proximity::core
