#pragma once
/// @file
/// Exact nearest neighbours in a JointSpace (wrapping coordinates included) for growing sets: a forest
/// of static k-d trees of sizes 2^i (Bentley and Saxe's logarithmic method), so an insertion costs
/// amortised O(log^2 n) and a query visits O(log n) trees. Each node keeps the bounding box of its
/// points; the pruning bound is the distance from the query to that box, with a wrapping coordinate's
/// gap measured around the circle, so answers are exact under the space's metric (no approximation).
/// A leaf holds up to 64 points, stored by coordinate kBlock at a time: a query measures a block's
/// distances in one pass of vector operations, the same values point by point.

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "proximity/planners/joint_space.h"

namespace proximity::planners {

/// Points are added with an id (any int32 the caller chooses, usually a vertex index) and never removed.
class NearestNeighbors {
 public:
  explicit NearestNeighbors(const JointSpace& space);

  void Add(std::span<const double> q, int32_t id);
  int64_t size() const { return static_cast<int64_t>(ids_.size()); }
  void Clear();

  /// The id of the point nearest q; -1 when empty.
  int32_t Nearest(std::span<const double> q) const;
  /// Up to k (id, distance) pairs nearest q, nearest first.
  void KNearest(std::span<const double> q, int32_t k, std::vector<std::pair<int32_t, double>>* out) const;
  /// Every (id, distance) within `radius` of q, nearest first.
  void WithinRadius(std::span<const double> q, double radius, std::vector<std::pair<int32_t, double>>* out) const;
  /// Distances computed by queries so far (work counter).
  int64_t distance_evaluations() const { return distance_evaluations_; }
  /// Points whose distances a query measures together (a leaf's points are stored this many at a time).
  static constexpr int32_t kBlock = 8;

 private:
  struct Node {
    int32_t begin, end;    // Range of the tree's point order.
    int32_t left, right;   // Children (node indices), -1 for a leaf.
    int32_t block;         // A leaf's first block in Tree::blocks (its points kBlock at a time).
  };
  struct Tree {
    std::vector<int32_t> order;   // Point indices.
    // The leaves' points by coordinate, kBlock points a block: block b's coordinate d of its lane j is
    // blocks[(b * dof + d) * kBlock + j] (lanes past a leaf's last point hold 0; their distances are
    // measured and dropped), so one pass of vector operations measures a block's distances to the query.
    std::vector<double> blocks;
    std::vector<Node> nodes;
    std::vector<double> box_lo, box_hi;  // dof per node.
  };
  void Build(Tree* tree, std::vector<int32_t> points);
  int32_t BuildNode(Tree* tree, int32_t begin, int32_t end);
  // kWraps: some coordinate wraps (else every gap is a plain difference, and the loops vectorise).
  template <bool kWraps>
  double BoxLowerBound2(const Tree& tree, int32_t node, const double* q) const;
  // Visits candidates of every tree; keeps the best `k` (or all within radius2 when k < 0).
  void Search(std::span<const double> q, int32_t k, double radius2, std::vector<std::pair<double, int32_t>>* heap) const;
  template <bool kWraps>
  void SearchTrees(const double* q, int32_t k, double radius2, std::vector<std::pair<double, int32_t>>* heap) const;

  JointSpace space_;
  std::vector<double> points_;   // dof per point.
  std::vector<int32_t> ids_;
  std::vector<Tree> trees_;      // trees_[i] holds 2^i points or none.
  std::vector<int32_t> pending_; // Points not yet in a tree (fewer than kPendingMax).
  std::vector<double> pending_blocks_;  // Their coordinates, in Tree::blocks' layout.
  mutable int64_t distance_evaluations_ = 0;
};

}  // namespace proximity::planners
