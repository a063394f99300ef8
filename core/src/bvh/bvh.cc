#include "bvh/bvh.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <string>

namespace proximity::core {
namespace {

struct BuildTask {
  int32_t node;
  int32_t begin;
  int32_t end;
  int32_t depth;
};

// Splits order[begin, end) at its median along the box's longest axis; returns the split index.
int32_t SplitMedian(const Obb& box, const std::vector<Vec3>& centroids, std::vector<int32_t>& order,
                    int32_t begin, int32_t end) {
  int axis = 0;
  box.half_extents.maxCoeff(&axis);
  const Vec3 dir = box.R_MB.col(axis);
  const int32_t mid = begin + (end - begin) / 2;
  std::nth_element(order.begin() + begin, order.begin() + mid, order.begin() + end,
                   [&](int32_t x, int32_t y) { return centroids[x].dot(dir) < centroids[y].dot(dir); });
  return mid;
}

// Binned surface-area heuristic over the model axes; falls back to the median when every centroid
// lands in one bin.
int32_t SplitSurfaceArea(const Obb& box, const std::vector<Vec3>& centroids, const std::vector<Aabb>& bounds,
                         std::vector<int32_t>& order, int32_t begin, int32_t end) {
  constexpr int kBins = 16;
  Aabb cbox;
  for (int32_t k = begin; k < end; ++k) cbox.Extend(centroids[order[k]]);
  double best_cost = std::numeric_limits<double>::infinity();
  int best_axis = -1, best_bin = -1;
  for (int axis = 0; axis < 3; ++axis) {
    const double lo = cbox.min[axis], extent = cbox.max[axis] - cbox.min[axis];
    if (!(extent > 0.0)) continue;
    std::array<Aabb, kBins> bin_box;
    std::array<int32_t, kBins> bin_count{};
    for (int32_t k = begin; k < end; ++k) {
      const int32_t t = order[k];
      const int b = std::min(kBins - 1, static_cast<int>(kBins * (centroids[t][axis] - lo) / extent));
      bin_box[b].Extend(bounds[t]);
      ++bin_count[b];
    }
    std::array<double, kBins> right_area{};
    std::array<int32_t, kBins> right_count{};
    Aabb acc;
    int32_t cnt = 0;
    for (int b = kBins - 1; b > 0; --b) {
      acc.Extend(bin_box[b]);
      cnt += bin_count[b];
      right_area[b] = acc.empty() ? 0.0 : acc.SurfaceArea();
      right_count[b] = cnt;
    }
    acc = Aabb();
    cnt = 0;
    for (int b = 0; b < kBins - 1; ++b) {
      acc.Extend(bin_box[b]);
      cnt += bin_count[b];
      if (cnt == 0 || right_count[b + 1] == 0) continue;
      const double cost = acc.SurfaceArea() * cnt + right_area[b + 1] * right_count[b + 1];
      if (cost < best_cost) {
        best_cost = cost;
        best_axis = axis;
        best_bin = b;
      }
    }
  }
  if (best_axis < 0) return SplitMedian(box, centroids, order, begin, end);
  const double lo = cbox.min[best_axis], extent = cbox.max[best_axis] - cbox.min[best_axis];
  auto it = std::partition(order.begin() + begin, order.begin() + end, [&](int32_t t) {
    const int b = std::min(kBins - 1, static_cast<int>(kBins * (centroids[t][best_axis] - lo) / extent));
    return b <= best_bin;
  });
  const int32_t mid = static_cast<int32_t>(it - order.begin());
  if (mid == begin || mid == end) return SplitMedian(box, centroids, order, begin, end);
  return mid;
}

}  // namespace

Result<std::shared_ptr<const MeshModel>> MeshModel::Build(TriangleMesh mesh, const BvhBuildOptions& options,
                                                          const std::string& name) {
  if (options.max_leaf_triangles < 1 || options.max_leaf_triangles > kMaxLeafTriangles) {
    return InvalidArgument(name + ": max_leaf_triangles must be in [1, " + std::to_string(kMaxLeafTriangles) +
                           "], got " + std::to_string(options.max_leaf_triangles));
  }
  if (mesh.triangles.empty()) return InvalidArgument(name + ": mesh has no triangles");
  if (mesh.triangles.size() > static_cast<std::size_t>(std::numeric_limits<int32_t>::max() / 2)) {
    return InvalidArgument(name + ": too many triangles");
  }
  for (std::size_t i = 0; i < mesh.vertices.size(); ++i) {
    if (!mesh.vertices[i].allFinite()) {
      return InvalidArgument(name + ": vertex " + std::to_string(i) + " has a non-finite coordinate");
    }
  }
  const int64_t nv = static_cast<int64_t>(mesh.vertices.size());
  for (std::size_t t = 0; t < mesh.triangles.size(); ++t) {
    for (int32_t idx : mesh.triangles[t]) {
      if (idx < 0 || idx >= nv) {
        return InvalidArgument(name + ": triangle " + std::to_string(t) + " has vertex index " +
                               std::to_string(idx) + " outside [0, " + std::to_string(nv) + ")");
      }
    }
  }

  auto model = std::shared_ptr<MeshModel>(new MeshModel());
  const int32_t n = static_cast<int32_t>(mesh.triangles.size());
  std::vector<Vec3> centroids(n);
  std::vector<Aabb> bounds(n);
  for (int32_t t = 0; t < n; ++t) {
    const auto& tri = mesh.triangles[t];
    centroids[t] = (mesh.vertices[tri[0]] + mesh.vertices[tri[1]] + mesh.vertices[tri[2]]) / 3.0;
    for (int32_t idx : tri) bounds[t].Extend(mesh.vertices[idx]);
  }
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);

  model->nodes_.reserve(2 * static_cast<std::size_t>(n));
  model->nodes_.push_back({});
  model->spheres_.push_back({});
  model->obbs_.push_back({});
  std::vector<BuildTask> stack{{0, 0, n, 0}};
  std::vector<Vec3> points;
  while (!stack.empty()) {
    const BuildTask task = stack.back();
    stack.pop_back();
    model->depth_ = std::max(model->depth_, task.depth);
    points.clear();
    for (int32_t k = task.begin; k < task.end; ++k) {
      for (int32_t idx : mesh.triangles[order[k]]) points.push_back(mesh.vertices[idx]);
    }
    const int32_t count = task.end - task.begin;
    const Obb box = FitObb(points);
    model->obbs_[task.node] = box;
    model->spheres_[task.node] = count == 1 ? FitTriangleSphere(points[0], points[1], points[2]) : FitSphere(points);
    if (count <= options.max_leaf_triangles) {
      model->nodes_[task.node] = {task.begin, count};
      continue;
    }
    const int32_t mid = options.split == SplitRule::kMedian
                            ? SplitMedian(box, centroids, order, task.begin, task.end)
                            : SplitSurfaceArea(box, centroids, bounds, order, task.begin, task.end);
    const int32_t left = static_cast<int32_t>(model->nodes_.size());
    model->nodes_[task.node] = {left, 0};
    model->nodes_.resize(left + 2);
    model->spheres_.resize(left + 2);
    model->obbs_.resize(left + 2);
    stack.push_back({left + 1, mid, task.end, task.depth + 1});
    stack.push_back({left, task.begin, mid, task.depth + 1});
  }

  model->leaf_triangles_.resize(n);
  model->triangle_ids_ = order;
  for (int32_t k = 0; k < n; ++k) {
    const auto& tri = mesh.triangles[order[k]];
    for (int i = 0; i < 3; ++i) model->leaf_triangles_[k].v[i] = mesh.vertices[tri[i]];
  }
  model->leaf_planes_.resize(n);
  for (int32_t k = 0; k < n; ++k) {
    const Vec3* v = model->leaf_triangles_[k].v;
    LeafPlane& plane = model->leaf_planes_[k];
    const Vec3 c = (v[1] - v[0]).cross(v[2] - v[0]);
    const double length = c.norm();
    plane.n = length > 0.0 ? Vec3(c / length) : Vec3::Zero();
    const double p0 = plane.n.dot(v[0]), p1 = plane.n.dot(v[1]), p2 = plane.n.dot(v[2]);
    plane.low = std::min({p0, p1, p2});
    plane.high = std::max({p0, p1, p2});
  }
  model->mesh_ = std::move(mesh);
  return std::shared_ptr<const MeshModel>(std::move(model));
}

}  // namespace proximity::core
