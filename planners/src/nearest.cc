#include "proximity/planners/nearest.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

// GCC notes that vector arguments of this width change the ABI between instruction sets; the block
// distances are always inlined and never cross a call.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace proximity::planners {
namespace {

constexpr int32_t kLeaf = 64;          // Points per k-d leaf, at most (eight blocks).
constexpr size_t kPendingMax = 16;     // Points scanned linearly before they join the forest.
constexpr double kTwoPi = 2.0 * std::numbers::pi;

// Circular distance between two angles in [-pi, pi).
double CircleGap(double a, double b) {
  const double d = std::abs(a - b);
  return std::min(d, kTwoPi - d);
}

// Point p's dof coordinates into lane `lane` of the block at `block` (the layout of Tree::blocks).
void PutInBlock(double* block, size_t dof, size_t lane, const double* p) {
  for (size_t d = 0; d < dof; ++d) block[d * NearestNeighbors::kBlock + lane] = p[d];
}

}  // namespace

NearestNeighbors::NearestNeighbors(const JointSpace& space) : space_(space) {}

void NearestNeighbors::Clear() {
  points_.clear();
  ids_.clear();
  trees_.clear();
  pending_.clear();
  pending_blocks_.clear();
}

void NearestNeighbors::Add(std::span<const double> q, int32_t id) {
  const int32_t index = static_cast<int32_t>(ids_.size());
  const size_t first = points_.size();
  points_.insert(points_.end(), q.begin(), q.end());
  space_.Normalize(std::span<double>(points_.data() + first, q.size()));
  ids_.push_back(id);
  pending_.push_back(index);
  const size_t dof = q.size(), lane = (pending_.size() - 1) % kBlock;
  if (lane == 0) pending_blocks_.resize(pending_blocks_.size() + dof * kBlock, 0.0);
  PutInBlock(&pending_blocks_[pending_blocks_.size() - dof * kBlock], dof, lane, &points_[first]);
  if (pending_.size() < kPendingMax) return;
  // Logarithmic method: merge the pending points with every full tree below the first empty slot.
  std::vector<int32_t> merged = std::move(pending_);
  pending_.clear();
  pending_blocks_.clear();
  size_t slot = 0;
  for (; slot < trees_.size() && !trees_[slot].order.empty(); ++slot) {
    merged.insert(merged.end(), trees_[slot].order.begin(), trees_[slot].order.end());
    trees_[slot] = Tree{};
  }
  if (slot == trees_.size()) trees_.emplace_back();
  Build(&trees_[slot], std::move(merged));
}

void NearestNeighbors::Build(Tree* tree, std::vector<int32_t> points) {
  tree->order = std::move(points);
  tree->nodes.clear();
  tree->box_lo.clear();
  tree->box_hi.clear();
  tree->nodes.reserve(4 * tree->order.size() / kLeaf + 2);
  BuildNode(tree, 0, static_cast<int32_t>(tree->order.size()));
  // Each leaf's points into whole blocks of their own.
  const size_t dof = static_cast<size_t>(space_.dof());
  size_t num_blocks = 0;
  for (Node& n : tree->nodes) {
    if (n.left >= 0) continue;
    n.block = static_cast<int32_t>(num_blocks);
    num_blocks += static_cast<size_t>((n.end - n.begin + kBlock - 1) / kBlock);
  }
  tree->blocks.assign(num_blocks * dof * kBlock, 0.0);
  for (const Node& n : tree->nodes) {
    if (n.left >= 0) continue;
    for (int32_t i = n.begin; i < n.end; ++i) {
      const size_t b = static_cast<size_t>(n.block + (i - n.begin) / kBlock);
      PutInBlock(&tree->blocks[b * dof * kBlock], dof, static_cast<size_t>((i - n.begin) % kBlock),
                 &points_[static_cast<size_t>(tree->order[static_cast<size_t>(i)]) * dof]);
    }
  }
}

int32_t NearestNeighbors::BuildNode(Tree* tree, int32_t begin, int32_t end) {
  const size_t dof = static_cast<size_t>(space_.dof());
  const int32_t node = static_cast<int32_t>(tree->nodes.size());
  tree->nodes.push_back({begin, end, -1, -1, -1});
  tree->box_lo.resize(tree->box_lo.size() + dof, std::numeric_limits<double>::infinity());
  tree->box_hi.resize(tree->box_hi.size() + dof, -std::numeric_limits<double>::infinity());
  double* lo = &tree->box_lo[static_cast<size_t>(node) * dof];
  double* hi = &tree->box_hi[static_cast<size_t>(node) * dof];
  for (int32_t k = begin; k < end; ++k) {
    const double* p = &points_[static_cast<size_t>(tree->order[k]) * dof];
    for (size_t d = 0; d < dof; ++d) {
      lo[d] = std::min(lo[d], p[d]);
      hi[d] = std::max(hi[d], p[d]);
    }
  }
  if (end - begin <= kLeaf) return node;
  size_t axis = 0;
  double widest = -1.0;
  for (size_t d = 0; d < dof; ++d) {
    if (hi[d] - lo[d] > widest) {
      widest = hi[d] - lo[d];
      axis = d;
    }
  }
  const int32_t mid = begin + (end - begin) / 2;
  std::nth_element(tree->order.begin() + begin, tree->order.begin() + mid, tree->order.begin() + end,
                   [&](int32_t a, int32_t b) {
                     return points_[static_cast<size_t>(a) * dof + axis] < points_[static_cast<size_t>(b) * dof + axis];
                   });
  const int32_t left = BuildNode(tree, begin, mid);
  const int32_t right = BuildNode(tree, mid, end);
  tree->nodes[static_cast<size_t>(node)].left = left;
  tree->nodes[static_cast<size_t>(node)].right = right;
  return node;
}

namespace {

// kBlock doubles as one GCC vector: one register on AVX-512, two or four on narrower CPUs, the same values.
using Lanes = double __attribute__((vector_size(NearestNeighbors::kBlock * sizeof(double))));

// Squared distances from q to a block's points: each lane sums its coordinates' squared gaps in order,
// a wrapping coordinate's gap measured around the circle (CircleGap).
template <bool kWraps>
[[gnu::always_inline]] inline void BlockDistance2(const JointSpace& space, const double* q, const double* block,
                                                  size_t dof, double* out) {
  Lanes s = {};
  for (size_t d = 0; d < dof; ++d) {
    Lanes x;
    __builtin_memcpy(&x, block + d * NearestNeighbors::kBlock, sizeof(x));
    Lanes g = q[d] - x;
    if (kWraps && space.wraps(static_cast<int32_t>(d))) {
      const Lanes a = g < 0.0 ? -g : g;
      g = a < kTwoPi - a ? a : kTwoPi - a;
    }
    s += g * g;
  }
  __builtin_memcpy(out, &s, sizeof(s));
}

}  // namespace

template <bool kWraps>
double NearestNeighbors::BoxLowerBound2(const Tree& tree, int32_t node, const double* q) const {
  const size_t dof = static_cast<size_t>(space_.dof());
  const double* lo = &tree.box_lo[static_cast<size_t>(node) * dof];
  const double* hi = &tree.box_hi[static_cast<size_t>(node) * dof];
  double s = 0.0;
  for (size_t d = 0; d < dof; ++d) {
    double g;
    if constexpr (kWraps) {
      g = 0.0;
      if (q[d] < lo[d] || q[d] > hi[d]) {
        // Outside the interval: the nearest point of it is an end (around the circle for wrapping ones).
        g = space_.wraps(static_cast<int32_t>(d)) ? std::min(CircleGap(q[d], lo[d]), CircleGap(q[d], hi[d]))
                                                  : (q[d] < lo[d] ? lo[d] - q[d] : q[d] - hi[d]);
      }
    } else {
      // The gap to [lo, hi]: zero inside, branch-free.
      g = std::max({lo[d] - q[d], q[d] - hi[d], 0.0});
    }
    s += g * g;
  }
  return s;
}

void NearestNeighbors::Search(std::span<const double> q_in, int32_t k, double radius2,
                              std::vector<std::pair<double, int32_t>>* heap) const {
  std::vector<double> q(q_in.begin(), q_in.end());
  space_.Normalize(q);
  heap->clear();
  if (space_.any_wraps()) {
    SearchTrees<true>(q.data(), k, radius2, heap);
  } else {
    SearchTrees<false>(q.data(), k, radius2, heap);
  }
  std::sort(heap->begin(), heap->end());
}

template <bool kWraps>
void NearestNeighbors::SearchTrees(const double* q, int32_t k, double radius2,
                                   std::vector<std::pair<double, int32_t>>* heap) const {
  const size_t dof = static_cast<size_t>(space_.dof());
  // The pruning bound: the k-th best so far, or the radius; kept up to date by offer().
  double bound = k < 0 ? radius2 : std::numeric_limits<double>::infinity();
  int64_t evaluations = 0;
  auto offer = [&](double d2, int32_t point) {
    if (k < 0) {
      if (d2 <= radius2) heap->push_back({d2, point});
      return;
    }
    if (static_cast<int32_t>(heap->size()) < k) {
      heap->push_back({d2, point});
      std::push_heap(heap->begin(), heap->end());
      if (static_cast<int32_t>(heap->size()) == k) bound = heap->front().first;
    } else if (d2 < bound) {
      std::pop_heap(heap->begin(), heap->end());
      heap->back() = {d2, point};
      std::push_heap(heap->begin(), heap->end());
      bound = heap->front().first;
    }
  };
  // Offers the `count` points whose coordinates start at `blocks` (kBlock at a time, Tree::blocks' layout)
  // and whose indices are ids[0, count).
  auto scan = [&](const double* blocks, const int32_t* ids, int32_t count) {
    evaluations += count;
    for (int32_t first = 0; first < count; first += kBlock) {
      alignas(64) double d2[kBlock];
      BlockDistance2<kWraps>(space_, q, blocks + static_cast<size_t>(first / kBlock) * dof * kBlock, dof, d2);
      const int32_t lanes = std::min(kBlock, count - first);
      // Most blocks hold no point within the bound (the k-th best, or the radius): one test of all their
      // lanes spares the point-by-point offers.
      const bool full = k < 0 || static_cast<int32_t>(heap->size()) == k;
      bool any = !full;
      for (int32_t j = 0; j < lanes; ++j) any |= k < 0 ? d2[j] <= bound : d2[j] < bound;
      if (!any) continue;
      for (int32_t j = 0; j < lanes; ++j) offer(d2[j], ids[first + j]);
    }
  };
  scan(pending_blocks_.data(), pending_.data(), static_cast<int32_t>(pending_.size()));
  // A tree of 2^i points (i < 32) has depth below 32 and the walk keeps at most two entries a level.
  std::pair<double, int32_t> stack[2 * 32 + 2];
  for (const Tree& tree : trees_) {
    if (tree.order.empty()) continue;
    int32_t top = 0;
    stack[top++] = {BoxLowerBound2<kWraps>(tree, 0, q), 0};
    while (top > 0) {
      const auto [lb, node] = stack[--top];
      if (lb > bound) continue;
      const Node& n = tree.nodes[static_cast<size_t>(node)];
      if (n.left < 0) {
        scan(&tree.blocks[static_cast<size_t>(n.block) * dof * kBlock], &tree.order[static_cast<size_t>(n.begin)],
             n.end - n.begin);
        continue;
      }
      const double l = BoxLowerBound2<kWraps>(tree, n.left, q), r = BoxLowerBound2<kWraps>(tree, n.right, q);
      // Push the farther child first so the nearer one is searched first; a child beyond the bound is
      // not pushed at all.
      const bool left_first = l <= r;
      const double near_lb = left_first ? l : r, far_lb = left_first ? r : l;
      const int32_t near = left_first ? n.left : n.right, far = left_first ? n.right : n.left;
      if (far_lb <= bound) stack[top++] = {far_lb, far};
      if (near_lb <= bound) stack[top++] = {near_lb, near};
    }
  }
  distance_evaluations_ += evaluations;
}

int32_t NearestNeighbors::Nearest(std::span<const double> q) const {
  std::vector<std::pair<double, int32_t>> heap;
  Search(q, 1, 0.0, &heap);
  return heap.empty() ? -1 : ids_[static_cast<size_t>(heap.front().second)];
}

void NearestNeighbors::KNearest(std::span<const double> q, int32_t k, std::vector<std::pair<int32_t, double>>* out) const {
  out->clear();
  if (k <= 0) return;
  std::vector<std::pair<double, int32_t>> heap;
  Search(q, k, 0.0, &heap);
  for (const auto& [d2, p] : heap) out->push_back({ids_[static_cast<size_t>(p)], std::sqrt(d2)});
}

void NearestNeighbors::WithinRadius(std::span<const double> q, double radius,
                                    std::vector<std::pair<int32_t, double>>* out) const {
  out->clear();
  std::vector<std::pair<double, int32_t>> heap;
  Search(q, -1, radius * radius, &heap);
  for (const auto& [d2, p] : heap) out->push_back({ids_[static_cast<size_t>(p)], std::sqrt(d2)});
}

}  // namespace proximity::planners
