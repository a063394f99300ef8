/// @file
/// Point clouds: the voxel filter and point tree (linear time: Morton codes, radix sort, runs of
/// kLeafPoints paired upwards), and the exact cloud-mesh and cloud-solid queries.

#include "bvh/point_cloud.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>
#include <vector>

#include "bvh/bound_heap.h"
#include "bvh/query_internal.h"
#include "narrowphase/gjk.h"
#include "narrowphase/triangle.h"
#include "base/numerics.h"

namespace proximity::core {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kAxisBits = 21;
constexpr uint32_t kAxisCells = (1u << kAxisBits) - 1;  // largest cell index per axis

// Spreads the low 21 bits of v so that two zero bits separate each (bit i goes to bit 3i).
uint64_t Spread(uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffULL;
  v = (v | v << 16) & 0x1f0000ff0000ffULL;
  v = (v | v << 8) & 0x100f00f00f00f00fULL;
  v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
  v = (v | v << 2) & 0x1249249249249249ULL;
  return v;
}

uint64_t Morton(uint32_t x, uint32_t y, uint32_t z) { return Spread(x) | Spread(y) << 1 | Spread(z) << 2; }

// Stable LSD radix sort of (key, index) by key, 16 bits a pass; passes whose digit is the same for
// every key are skipped.
void RadixSort(std::vector<std::pair<uint64_t, int32_t>>* items) {
  std::vector<std::pair<uint64_t, int32_t>> tmp(items->size());
  std::vector<uint32_t> count(1u << 16);
  for (int shift = 0; shift < 64; shift += 16) {
    std::fill(count.begin(), count.end(), 0u);
    for (const auto& it : *items) ++count[(it.first >> shift) & 0xffff];
    if (count[((*items)[0].first >> shift) & 0xffff] == items->size()) continue;
    uint32_t sum = 0;
    for (uint32_t& c : count) {
      const uint32_t n = c;
      c = sum;
      sum += n;
    }
    for (const auto& it : *items) tmp[count[(it.first >> shift) & 0xffff]++] = it;
    items->swap(tmp);
  }
}

}  // namespace

struct PointCloudBuilder {
  static Result<std::shared_ptr<const PointCloud>> Build(std::span<const Vec3> in, double radius,
                                                         const PointCloudOptions& options, const std::string& name) {
    const auto start = std::chrono::steady_clock::now();
    if (in.empty()) return InvalidArgument(name + ": no points");
    if (static_cast<int64_t>(in.size()) > options.max_points) {
      return InvalidArgument(name + ": " + std::to_string(in.size()) + " points, more than the limit of " +
                                     std::to_string(options.max_points));
    }
    if (!std::isfinite(radius) || radius < 0.0 || radius > kWorldExtent) {
      std::ostringstream m;
      m << name << ": radius " << radius << " is not a finite length in [0, " << kWorldExtent << "]";
      return InvalidArgument(m.str());
    }
    const double voxel = options.voxel_size.value_or(radius);
    if (!std::isfinite(voxel) || voxel < 0.0 || voxel > kWorldExtent) {
      std::ostringstream m;
      m << name << ": voxel_size " << voxel << " is not a finite length in [0, " << kWorldExtent << "]";
      return InvalidArgument(m.str());
    }
    Aabb box;
    for (size_t i = 0; i < in.size(); ++i) {
      const Vec3& p = in[i];
      if (!p.allFinite() || p.cwiseAbs().maxCoeff() > kWorldExtent) {
        std::ostringstream m;
        m << name << ": point " << i << " (" << p.x() << ", " << p.y() << ", " << p.z() << ") is "
          << (p.allFinite() ? "beyond the world's extent of " + std::to_string(kWorldExtent) + " m" : "not finite");
        return InvalidArgument(m.str());
      }
      box.Extend(p);
    }

    auto cloud = std::shared_ptr<PointCloud>(new PointCloud());
    PointCloud& c = *cloud;
    c.radius_ = radius;
    c.stats_.input_points = static_cast<int64_t>(in.size());

    // Cells of side `cell` from the box's corner: the filter's voxels, or (no filter) the finest the
    // codes resolve, for the order alone.
    const double extent = (box.max - box.min).maxCoeff();
    const double finest = extent > 0.0 ? extent / kAxisCells : 1.0;
    const bool filter = voxel > 0.0;
    const double cell = filter ? std::max(voxel, finest) : finest;
    c.stats_.voxel_size = filter ? cell : 0.0;
    std::vector<std::pair<uint64_t, int32_t>> keys(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      const Vec3 t = (in[i] - box.min) / cell;
      auto axis = [&](int a) {
        return static_cast<uint32_t>(std::clamp(std::floor(t[a]), 0.0, static_cast<double>(kAxisCells)));
      };
      keys[i] = {Morton(axis(0), axis(1), axis(2)), static_cast<int32_t>(i)};
    }
    RadixSort(&keys);

    // Points in code order; with the filter, each run of one code becomes its centroid, its radius
    // grown by the farthest point it stands for. Rounding of the centroid and of that distance is
    // covered by a relative and an absolute allowance at the cloud's scale.
    const double scale = box.min.cwiseAbs().cwiseMax(box.max.cwiseAbs()).norm();
    const double allowance = RoundingAllowance(scale);
    c.points_.reserve(in.size());
    c.radii_.reserve(in.size());
    for (size_t b = 0; b < keys.size();) {
      size_t e = b + 1;
      if (filter) {
        while (e < keys.size() && keys[e].first == keys[b].first) ++e;
      }
      if (e == b + 1) {
        c.points_.push_back(in[static_cast<size_t>(keys[b].second)]);
        c.radii_.push_back(radius);
      } else {
        Vec3 sum = Vec3::Zero();
        for (size_t k = b; k < e; ++k) sum += in[static_cast<size_t>(keys[k].second)];
        const Vec3 centroid = sum / static_cast<double>(e - b);
        double grow = 0.0;
        for (size_t k = b; k < e; ++k) grow = std::max(grow, (in[static_cast<size_t>(keys[k].second)] - centroid).norm());
        grow = grow * (1.0 + 1e-12) + allowance;
        c.stats_.max_radius_growth = std::max(c.stats_.max_radius_growth, grow);
        c.points_.push_back(centroid);
        c.radii_.push_back(radius + grow);
      }
      b = e;
    }
    c.stats_.points = static_cast<int64_t>(c.points_.size());
    for (size_t i = 0; i < c.points_.size(); ++i) {
      c.max_radius_ = std::max(c.max_radius_, c.radii_[i]);
      c.reach_ = std::max(c.reach_, c.points_[i].norm() + c.radii_[i]);
    }

    // The tree: top down over ranges of whole leaves, children adjacent, boxes from the children up.
    const int32_t n = static_cast<int32_t>(c.points_.size());
    const int32_t leaves = (n + PointCloud::kLeafPoints - 1) / PointCloud::kLeafPoints;
    c.nodes_.reserve(static_cast<size_t>(2 * leaves));
    c.nodes_.emplace_back();
    MakeNode(&c, 0, 0, n);
    c.stats_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::shared_ptr<const PointCloud>(std::move(cloud));
  }

  static void MakeNode(PointCloud* c, int32_t index, int32_t first, int32_t count) {
    if (count <= PointCloud::kLeafPoints) {
      PointCloudNode& node = c->nodes_[static_cast<size_t>(index)];
      node.first = first;
      node.count = count;
      double rmax = 0.0;
      for (int32_t i = first; i < first + count; ++i) {
        node.box.Extend(c->points_[static_cast<size_t>(i)]);
        rmax = std::max(rmax, c->radii_[static_cast<size_t>(i)]);
      }
      // The radius rounded up to a float, and the box grown by it.
      float rf = static_cast<float>(rmax);
      if (static_cast<double>(rf) < rmax) rf = std::nextafter(rf, std::numeric_limits<float>::infinity());
      node.max_radius = rf;
      node.box.min.array() -= rmax;
      node.box.max.array() += rmax;
      return;
    }
    const int32_t leaves = (count + PointCloud::kLeafPoints - 1) / PointCloud::kLeafPoints;
    const int32_t left_count = (leaves + 1) / 2 * PointCloud::kLeafPoints;
    const int32_t left = static_cast<int32_t>(c->nodes_.size());
    c->nodes_.emplace_back();
    c->nodes_.emplace_back();
    MakeNode(c, left, first, left_count);
    MakeNode(c, left + 1, first + left_count, count - left_count);
    PointCloudNode& node = c->nodes_[static_cast<size_t>(index)];
    const PointCloudNode& l = c->nodes_[static_cast<size_t>(left)];
    const PointCloudNode& r = c->nodes_[static_cast<size_t>(left + 1)];
    node.first = first;
    node.count = count;
    node.left = left;
    node.box = l.box;
    node.box.Extend(r.box.min);
    node.box.Extend(r.box.max);
    node.max_radius = std::max(l.max_radius, r.max_radius);
  }
};

Result<std::shared_ptr<const PointCloud>> PointCloud::Build(std::span<const Vec3> points, double radius,
                                                            const PointCloudOptions& options, const std::string& name) {
  return PointCloudBuilder::Build(points, radius, options, name);
}

Result<std::shared_ptr<const PointCloud>> PointCloud::Build(std::span<const float> xyz, double radius,
                                                            const PointCloudOptions& options, const std::string& name) {
  if (xyz.size() % 3 != 0) {
    return InvalidArgument(name + ": " + std::to_string(xyz.size()) +
                                   " coordinates, not a whole number of x, y, z triples");
  }
  if (static_cast<int64_t>(xyz.size() / 3) > options.max_points) {
    return InvalidArgument(name + ": " + std::to_string(xyz.size() / 3) + " points, more than the limit of " +
                                   std::to_string(options.max_points));
  }
  std::vector<Vec3> points(xyz.size() / 3);
  for (size_t i = 0; i < points.size(); ++i) points[i] = Vec3(xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]);
  return PointCloudBuilder::Build(points, radius, options, name);
}

Obb PointCloud::box() const {
  Obb b;
  b.center = 0.5 * (bounds().min + bounds().max);
  b.half_extents = 0.5 * (bounds().max - bounds().min);
  return b;
}

int64_t PointCloud::MemoryBytes() const {
  return static_cast<int64_t>(sizeof(PointCloud) + points_.capacity() * sizeof(Vec3) +
                              radii_.capacity() * sizeof(double) + nodes_.capacity() * sizeof(PointCloudNode));
}

namespace {

// A cloud node's box in C as an OBB (axes of C), grown by `grow` on every side.
Obb NodeObb(const PointCloudNode& n, double grow) {
  Obb b;
  b.center = 0.5 * (n.box.min + n.box.max);
  b.half_extents = (0.5 * (n.box.max - n.box.min)).array() + grow;
  return b;
}

// Half the diagonal of a node's box: its size, to choose which tree to descend.
double NodeSize(const PointCloudNode& n) { return 0.5 * (n.box.max - n.box.min).norm(); }

// The axis-aligned box in frame C of `box` (frame A, posed at X_CA), grown by `grow`: the cloud nodes
// outside it are dropped with six comparisons before any oriented test.
Aabb BoxInCloudFrame(const Obb& box, const RigidTransform& X_CA, double grow) {
  const Vec3 c = X_CA * box.center;
  const Vec3 half = (X_CA.R * box.R_MB).cwiseAbs() * box.half_extents + Vec3::Constant(grow);
  Aabb b;
  b.min = c - half;
  b.max = c + half;
  return b;
}

bool Apart(const Aabb& a, const Aabb& b) {
  return (a.max.array() < b.min.array()).any() || (b.max.array() < a.min.array()).any();
}

// The rounding allowance of a query between a model of reach `reach_a` at X_WA and the cloud at X_WC.
double QueryAllowance(double reach_a, const RigidTransform& X_WA, const PointCloud& cloud, const RigidTransform& X_WC) {
  return RoundingAllowance(reach_a + X_WA.p.norm() + cloud.reach() + X_WC.p.norm());
}

void AddContact(CloudCollision* out, const CollisionRequest& request, int32_t triangle, int32_t point) {
  out->colliding = true;
  if (static_cast<int32_t>(out->contacts.size()) < request.max_contacts) {
    out->contacts.push_back({triangle, point});
  } else {
    out->truncated = true;
  }
}

// Closest point on the mesh's leaf triangle k to p_M (frame M) and its squared distance.
double LeafTriangleDistance2(const MeshModel& mesh, int32_t k, const Vec3& p_M, Vec3* cp) {
  const LeafTriangle& t = mesh.leaf_triangle(k);
  *cp = ClosestPointOnTriangle(p_M, t.v[0], t.v[1], t.v[2]);
  return (p_M - *cp).squaredNorm();
}

// The distance from a point (frame S) to a solid: its lower bound (certified) and the closest point on
// the solid (frame S); 0 and the point itself inside.
struct PointSolid {
  double distance = 0.0;
  double lower = 0.0;
  Vec3 closest = Vec3::Zero();
};

// Closed forms for the solids robot links are made of (exact up to rounding, which the queries'
// allowance covers); GJK for the others (cones, polytopes), as it certifies them.
PointSolid PointShapeDistance(const Box& b, const Vec3& p) {
  const Vec3 c = p.cwiseMax(-b.half_extents).cwiseMin(b.half_extents);
  const double d = (p - c).norm();
  return {d, d, c};
}
PointSolid PointShapeDistance(const Sphere& s, const Vec3& p) {
  const Vec3 v = p - s.center;
  const double n = v.norm();
  if (n <= s.radius) return {0.0, 0.0, p};
  return {n - s.radius, n - s.radius, s.center + (s.radius / n) * v};
}
PointSolid PointShapeDistance(const Capsule& c, const Vec3& p) {
  Sphere s{Vec3(0.0, 0.0, std::clamp(p.z(), -c.half_length, c.half_length)), c.radius};
  return PointShapeDistance(s, p);
}
PointSolid PointShapeDistance(const Cylinder& c, const Vec3& p) {
  const double radial = p.head<2>().norm();
  Vec3 q = p;
  if (radial > c.radius) q.head<2>() *= c.radius / radial;
  q.z() = std::clamp(p.z(), -c.half_length, c.half_length);
  const double d = (p - q).norm();
  return {d, d, q};
}
template <class S>
PointSolid PointShapeDistance(const S& shape, const Vec3& p_S) {
  static const RigidTransform kIdentity = RigidTransform::Identity();
  RigidTransform X_SP = RigidTransform::Identity();
  X_SP.p = p_S;
  const GjkResult g = GjkDistance(shape, kIdentity, Sphere{Vec3::Zero(), 0.0}, X_SP);
  if (g.intersecting) return {0.0, 0.0, p_S};
  return {g.distance, g.lower_bound, g.p_WA};
}

}  // namespace

namespace {

// Whether p_M (mesh frame) lies within `reach` of a triangle of the mesh, by its OBB tree (each box's
// distance to the point first); the triangle found (leaf order) in *leaf.
bool PointNearMesh(const MeshModel& mesh, const Vec3& p_M, double reach, int32_t* leaf, QueryStats* stats) {
  const double reach2 = reach * reach;
  // Depth-first: at most the tree's depth plus one nodes wait at once.
  thread_local std::vector<int32_t> stack;
  stack.resize(static_cast<size_t>(mesh.depth()) + 2);
  int32_t top = 0;
  stack[top++] = 0;
  while (top > 0) {
    const int32_t m = stack[--top];
    const Obb& o = mesh.obb(m);
    ++stats->bv_tests;
    const Vec3 local = o.R_MB.transpose() * (p_M - o.center);
    if ((local.cwiseAbs() - o.half_extents).cwiseMax(0.0).squaredNorm() > reach2) continue;
    const BvhNode& n = mesh.node(m);
    if (!n.is_leaf()) {
      stack[top++] = n.first + 1;
      stack[top++] = n.first;
      continue;
    }
    for (int32_t t = n.first; t < n.first + n.count; ++t) {
      ++stats->triangle_tests;
      Vec3 cp;
      if (LeafTriangleDistance2(mesh, t, p_M, &cp) <= reach2) {
        *leaf = t;
        return true;
      }
    }
  }
  return false;
}

// CollideMeshCloud with the mesh's signed distance map: the cloud's tree alone, nodes and points
// dropped by the map's certified bounds, the rest tested exactly.
CloudCollision CollideMeshCloudSdf(const MeshModel& mesh, const RigidTransform& X_WM, const PointCloud& cloud,
                                   const RigidTransform& X_WC, double padding, const CollisionRequest& request,
                                   const SignedDistanceMap& sdf) {
  CloudCollision out;
  const RigidTransform X_MC = X_WM.inverse() * X_WC;
  const double grow = padding + QueryAllowance(internal::ModelReach(mesh), X_WM, cloud, X_WC);
  const std::vector<PointCloudNode>& nodes = cloud.nodes();
  const Obb& root = mesh.obb(0);
  const Aabb grid = sdf.grid_box();  // where the map's bound is tight; the boxes' test beyond
  // The mesh's box as an axis-aligned box in the cloud's frame, grown by the padding: six comparisons
  // drop most of the cloud's nodes before the boxes' separating-axis test.
  const Aabb near_C = BoxInCloudFrame(root, X_MC.inverse(), grow);
  const double link_size = root.half_extents.norm();
  int32_t stack[64];
  int32_t top = 0;
  stack[top++] = 0;
  while (top > 0) {
    const PointCloudNode& cn = nodes[static_cast<size_t>(stack[--top])];
    if (Apart(cn.box, near_C)) continue;
    // A node larger than the link's box is descended after the axis-aligned test alone: neither the
    // map (whose values do not reach beyond the link's padded box) nor the boxes' test drops such a node
    // often enough to pay for itself.
    if (!cn.is_leaf() && NodeSize(cn) > link_size) {
      stack[top++] = cn.left + 1;
      stack[top++] = cn.left;
      continue;
    }
    // Every ball of the node lies within the box, so within its half diagonal of the centre: the map's
    // nearest node first (one look-up), then, for a centre off the map's grid (where that bound is
    // loose), the boxes' separating-axis test.
    const Obb co = NodeObb(cn, grow);
    const Vec3 c_M = X_MC * co.center;
    ++out.stats.bv_tests;
    if (sdf.ProvesAbove(c_M, NodeSize(cn) + grow)) continue;
    const bool in_grid = (c_M.array() >= grid.min.array()).all() && (c_M.array() <= grid.max.array()).all();
    if (!in_grid && !ObbsOverlap(root.half_extents, co.half_extents, MakeBoxPairFrame(root, co, X_MC))) continue;
    if (!cn.is_leaf()) {
      stack[top++] = cn.left + 1;
      stack[top++] = cn.left;
      continue;
    }
    for (int32_t i = cn.first; i < cn.first + cn.count; ++i) {
      const Vec3 p_M = X_MC * cloud.point(i);
      const double reach = cloud.point_radius(i) + grow;
      ++out.stats.bv_tests;
      if (sdf.ProvesAbove(p_M, reach)) continue;
      // The interpolated value's tighter bound, then the exact test.
      const SdfEvaluation ep = sdf.Evaluate(p_M);
      if (ep.value - ep.error_bound > reach) continue;
      int32_t leaf = -1;
      if (PointNearMesh(mesh, p_M, reach, &leaf, &out.stats)) {
        AddContact(&out, request, mesh.triangle_id(leaf), i);
        if (!request.all_contacts || out.truncated) return out;
      }
    }
  }
  return out;
}

}  // namespace

CloudCollision CollideMeshCloud(const MeshModel& mesh, const RigidTransform& X_WM, const PointCloud& cloud,
                                const RigidTransform& X_WC, double padding, const CollisionRequest& request,
                                const SignedDistanceMap* sdf) {
  if (sdf != nullptr) return CollideMeshCloudSdf(mesh, X_WM, cloud, X_WC, padding, request, *sdf);
  CloudCollision out;
  const RigidTransform X_MC = X_WM.inverse() * X_WC;
  const double allowance = QueryAllowance(internal::ModelReach(mesh), X_WM, cloud, X_WC);
  const double grow = padding + allowance;
  const std::vector<PointCloudNode>& nodes = cloud.nodes();
  // With every contact, each point is reported once (it may touch triangles of several leaves).
  std::vector<uint8_t> reported(request.all_contacts ? static_cast<size_t>(cloud.num_points()) : 0);
  std::vector<std::pair<int32_t, int32_t>> stack;
  stack.reserve(64);
  stack.push_back({0, 0});
  while (!stack.empty()) {
    const auto [m, k] = stack.back();
    stack.pop_back();
    const PointCloudNode& cn = nodes[static_cast<size_t>(k)];
    const Obb& mo = mesh.obb(m);
    const Obb co = NodeObb(cn, grow);
    ++out.stats.bv_tests;
    if (!ObbsOverlap(mo.half_extents, co.half_extents, MakeBoxPairFrame(mo, co, X_MC))) continue;
    const BvhNode& mn = mesh.node(m);
    if (mn.is_leaf() && cn.is_leaf()) {
      for (int32_t i = cn.first; i < cn.first + cn.count; ++i) {
        if (!reported.empty() && reported[static_cast<size_t>(i)]) continue;
        const Vec3 p_M = X_MC * cloud.point(i);
        const double reach = cloud.point_radius(i) + grow;
        for (int32_t t = mn.first; t < mn.first + mn.count; ++t) {
          ++out.stats.triangle_tests;
          Vec3 cp;
          if (LeafTriangleDistance2(mesh, t, p_M, &cp) <= reach * reach) {
            AddContact(&out, request, mesh.triangle_id(t), i);
            if (!request.all_contacts || out.truncated) return out;
            reported[static_cast<size_t>(i)] = 1;
            break;  // one triangle per point is enough
          }
        }
      }
      continue;
    }
    const bool descend_cloud = mn.is_leaf() || (!cn.is_leaf() && NodeSize(cn) > mesh.sphere(m).radius);
    if (descend_cloud) {
      stack.push_back({m, cn.left + 1});
      stack.push_back({m, cn.left});
    } else {
      stack.push_back({mn.first + 1, k});
      stack.push_back({mn.first, k});
    }
  }
  return out;
}

CloudCollision CollideShapeCloud(const Shape& shape, const RigidTransform& X_WS, const PointCloud& cloud,
                                 const RigidTransform& X_WC, double padding, const CollisionRequest& request) {
  CloudCollision out;
  const RigidTransform X_SC = X_WS.inverse() * X_WC;
  const Obb so = ShapeBoundingObb(shape);
  const double reach = so.center.norm() + so.half_extents.norm();
  const double grow = padding + QueryAllowance(reach, X_WS, cloud, X_WC);
  const std::vector<PointCloudNode>& nodes = cloud.nodes();
  const Aabb near_C = BoxInCloudFrame(so, X_SC.inverse(), grow);
  VisitShape(shape, [&](const auto& solid) {
    std::vector<int32_t> stack;
    stack.reserve(64);
    stack.push_back(0);
    while (!stack.empty()) {
      const PointCloudNode& cn = nodes[static_cast<size_t>(stack.back())];
      stack.pop_back();
      if (Apart(cn.box, near_C)) continue;
      const Obb co = NodeObb(cn, grow);
      ++out.stats.bv_tests;
      if (!ObbsOverlap(so.half_extents, co.half_extents, MakeBoxPairFrame(so, co, X_SC))) continue;
      if (!cn.is_leaf()) {
        stack.push_back(cn.left + 1);
        stack.push_back(cn.left);
        continue;
      }
      for (int32_t i = cn.first; i < cn.first + cn.count; ++i) {
        ++out.stats.triangle_tests;
        const PointSolid g = PointShapeDistance(solid, X_SC * cloud.point(i));
        if (g.lower <= cloud.point_radius(i) + grow) {
          AddContact(&out, request, -1, i);
          if (!request.all_contacts || out.truncated) return;
        }
      }
    }
  });
  return out;
}

namespace {

// Best-first distance walk over node pairs, shared by the mesh and the solid: `Bound(entry)` gives a
// pair's certified lower bound, `Leaf(entry, &leaf)` tests a pair of leaves exactly, `Children` splits.
struct Entry {
  double bound;
  int32_t a;  // mesh node (-1 for a solid)
  int32_t c;  // cloud node
  bool operator>(const Entry& o) const { return bound > o.bound; }
};

struct Best {
  double upper = kInf;      // smallest distance found (point ball to A)
  double leaf_lower = kInf; // smallest certified lower bound of the points tested
  Vec3 p_A = Vec3::Zero();  // closest point on A (frame A)
  Vec3 p_B = Vec3::Zero();  // on the ball's surface (frame A)
  int32_t triangle = -1;
  int32_t point = -1;
};

// Records the point i (centre p_A in A's frame, radius r) at distance `gap` from A's closest point q.
void Offer(Best* best, double gap, double lower, const Vec3& q, const Vec3& p, double r, int32_t triangle, int32_t point) {
  best->leaf_lower = std::min(best->leaf_lower, lower);
  const double d = std::max(0.0, gap - r);
  if (d < best->upper || best->point < 0) {
    best->upper = d;
    best->p_A = q;
    const Vec3 dir = gap > 0.0 ? Vec3((q - p) / gap) : Vec3::Zero();
    best->p_B = gap > r ? Vec3(p + r * dir) : q;
    best->triangle = triangle;
    best->point = point;
  }
}

// Whether a best-first walk may stop before a pair whose bound is `next`: its best answer meets the
// request (touching, below stop_below, or within the budget of the caller's known lower bound), or
// `next` reaches the budget against the best or max_distance.
bool WalkDone(const DistanceRequest& request, const Best& best, double next) {
  const double enough = std::min(best.upper / (1.0 + request.rel_err), best.upper - request.abs_err);
  const bool met = best.point >= 0 &&
                   (best.upper == 0.0 || best.upper < request.stop_below || enough <= request.known_lower);
  return met || next >= std::min(request.max_distance, enough);
}

// The certified interval of a walk that stopped with `open` the smallest bound it left unexpanded.
void Settle(const DistanceRequest& request, const Best& best, double open, DistanceResult* result) {
  result->intersecting = best.point >= 0 && best.upper == 0.0;
  const double lower = std::min({open, best.leaf_lower, best.upper});
  result->lower_bound = std::max({0.0, lower, std::min(request.known_lower, best.upper)});
  result->upper_bound = best.upper;
  if (result->intersecting) result->lower_bound = result->upper_bound = 0.0;
  result->beyond_max_distance = result->lower_bound >= request.max_distance;
}

template <class BoundFn, class LeafFn, class SplitFn>
DistanceResult BestFirst(const DistanceRequest& request, int32_t root_a, BoundFn&& bound, LeafFn&& leaf,
                         SplitFn&& split, Best* best) {
  DistanceResult result;
  // The heap's storage is the thread's, kept from call to call (a walk does not call another).
  thread_local internal::BoundHeap<Entry> heap;
  heap.Clear();
  double open = kInf;  // smallest bound of a pair left unexpanded or pruned
  auto push = [&](int32_t a, int32_t c) {
    const double b = bound(a, c, &result.stats);
    if (b < request.max_distance) {
      heap.Push({b, a, c});
    } else {
      open = std::min(open, b);
    }
  };
  push(root_a, 0);
  while (!heap.empty()) {
    const Entry e = heap.top();
    if (WalkDone(request, *best, e.bound)) {
      open = std::min(open, e.bound);
      break;
    }
    heap.Pop();
    if (leaf(e, best, &result.stats)) continue;  // both leaves: tested
    split(e, push);
  }
  Settle(request, *best, open, &result);
  return result;
}

}  // namespace

namespace {

// The distance from p_M (mesh frame) to the mesh's triangles, by its OBB tree (nearest box first, boxes
// no nearer than the best so far dropped): the closest point and its triangle (leaf order).
double PointMeshDistance(const MeshModel& mesh, const Vec3& p_M, Vec3* closest, int32_t* leaf, QueryStats* stats) {
  double best2 = kInf;
  struct Item {
    double d2;
    int32_t node;
  };
  thread_local std::vector<Item> stack;
  stack.resize(static_cast<size_t>(mesh.depth()) + 2);
  int32_t top = 0;
  auto box_d2 = [&](int32_t m) {
    const Obb& o = mesh.obb(m);
    ++stats->bv_tests;
    const Vec3 local = o.R_MB.transpose() * (p_M - o.center);
    return (local.cwiseAbs() - o.half_extents).cwiseMax(0.0).squaredNorm();
  };
  stack[top++] = {box_d2(0), 0};
  while (top > 0) {
    const Item it = stack[--top];
    if (it.d2 >= best2) continue;
    const BvhNode& n = mesh.node(it.node);
    if (n.is_leaf()) {
      for (int32_t t = n.first; t < n.first + n.count; ++t) {
        ++stats->triangle_tests;
        Vec3 cp;
        const double d2 = LeafTriangleDistance2(mesh, t, p_M, &cp);
        if (d2 < best2) {
          best2 = d2;
          *closest = cp;
          *leaf = t;
        }
      }
      continue;
    }
    const double l = box_d2(n.first), r = box_d2(n.first + 1);
    // The nearer child on top: tested first.
    if (l <= r) {
      stack[top++] = {r, n.first + 1};
      stack[top++] = {l, n.first};
    } else {
      stack[top++] = {l, n.first};
      stack[top++] = {r, n.first + 1};
    }
  }
  return std::sqrt(best2);
}

// ComputeMeshCloudDistance with the mesh's signed distance map: best first over the cloud's nodes and
// points by the map's certified bounds (a node: the bound at its centre less its half diagonal; a
// point: the bound at it less its radius), each point's exact distance taken when it comes first.
DistanceResult MeshCloudDistanceSdf(const MeshModel& mesh, const RigidTransform& X_WM, const PointCloud& cloud,
                                    const RigidTransform& X_WC, const DistanceRequest& request,
                                    const SignedDistanceMap& sdf, Best* best) {
  DistanceResult result;
  const RigidTransform X_MC = X_WM.inverse() * X_WC;
  const double allowance = QueryAllowance(internal::ModelReach(mesh), X_WM, cloud, X_WC);
  const std::vector<PointCloudNode>& nodes = cloud.nodes();
  const Obb& root = mesh.obb(0);
  const double link_size = root.half_extents.norm();
  // Entries: a node (c >= 0, a = 0), or a point (a = 1, c its index) whose bound is the map's. The
  // heap's storage is the thread's, kept from call to call.
  thread_local internal::BoundHeap<Entry> heap;
  heap.Clear();
  double open = kInf;
  auto push = [&](double b, int32_t a, int32_t c) {
    b = std::max(0.0, b - allowance);
    if (b < request.max_distance) {
      heap.Push({b, a, c});
    } else {
      open = std::min(open, b);
    }
  };
  auto push_node = [&](int32_t k) {
    const PointCloudNode& cn = nodes[static_cast<size_t>(k)];
    const Obb co = NodeObb(cn, 0.0);
    result.stats.bv_tests += 2;
    double b = ObbDistanceLowerBound(root.half_extents, co.half_extents, MakeBoxPairFrame(root, co, X_MC));
    // The map's bound only for a node no larger than the link's box (for a larger one it is negative).
    if (const double size = NodeSize(cn); size <= link_size) {
      b = std::max(b, sdf.NodeLowerBound(X_MC * co.center) - size);
    }
    push(b, 0, k);
  };
  push_node(0);
  while (!heap.empty()) {
    const Entry e = heap.top();
    if (WalkDone(request, *best, e.bound)) {
      open = std::min(open, e.bound);
      break;
    }
    heap.Pop();
    if (e.a == 1) {  // a point: its exact distance
      const Vec3 p_M = X_MC * cloud.point(e.c);
      const double r = cloud.point_radius(e.c);
      Vec3 cp;
      int32_t leaf = -1;
      const double gap = PointMeshDistance(mesh, p_M, &cp, &leaf, &result.stats);
      Offer(best, gap, gap - r - allowance, cp, p_M, r, mesh.triangle_id(leaf), e.c);
      continue;
    }
    const PointCloudNode& cn = nodes[static_cast<size_t>(e.c)];
    if (!cn.is_leaf()) {
      push_node(cn.left);
      push_node(cn.left + 1);
      continue;
    }
    for (int32_t i = cn.first; i < cn.first + cn.count; ++i) {
      // The nearest node's bound, and the interpolated value's when that one is tighter.
      const Vec3 p_M = X_MC * cloud.point(i);
      const SdfEvaluation ep = sdf.Evaluate(p_M);
      result.stats.bv_tests += 2;
      push(std::max(sdf.NodeLowerBound(p_M), ep.value - ep.error_bound) - cloud.point_radius(i), 1, i);
    }
  }
  Settle(request, *best, open, &result);
  return result;
}

}  // namespace

Result<DistanceResult> ComputeMeshCloudDistance(const MeshModel& mesh, const RigidTransform& X_WM,
                                                const PointCloud& cloud, const RigidTransform& X_WC,
                                                const DistanceRequest& request, const SignedDistanceMap* sdf) {
  if (Status s = ValidateDistanceRequest(request); !s.ok()) return s.error();
  if (sdf != nullptr) {
    Best best;
    DistanceResult r = MeshCloudDistanceSdf(mesh, X_WM, cloud, X_WC, request, *sdf, &best);
    r.p_WA = X_WM * best.p_A;
    r.p_WB = X_WM * best.p_B;
    r.triangles = {best.triangle, best.point};
    return r;
  }
  const RigidTransform X_MC = X_WM.inverse() * X_WC;
  const double allowance = QueryAllowance(internal::ModelReach(mesh), X_WM, cloud, X_WC);
  const std::vector<PointCloudNode>& nodes = cloud.nodes();
  auto bound = [&](int32_t m, int32_t k, QueryStats* stats) {
    ++stats->bv_tests;
    const Obb& mo = mesh.obb(m);
    const Obb co = NodeObb(nodes[static_cast<size_t>(k)], 0.0);
    return std::max(0.0, ObbDistanceLowerBound(mo.half_extents, co.half_extents, MakeBoxPairFrame(mo, co, X_MC)) -
                             allowance);
  };
  auto leaf = [&](const Entry& e, Best* best, QueryStats* stats) {
    const BvhNode& mn = mesh.node(e.a);
    const PointCloudNode& cn = nodes[static_cast<size_t>(e.c)];
    if (!mn.is_leaf() || !cn.is_leaf()) return false;
    for (int32_t i = cn.first; i < cn.first + cn.count; ++i) {
      const Vec3 p_M = X_MC * cloud.point(i);
      const double r = cloud.point_radius(i);
      for (int32_t t = mn.first; t < mn.first + mn.count; ++t) {
        ++stats->triangle_tests;
        Vec3 cp;
        const double gap = std::sqrt(LeafTriangleDistance2(mesh, t, p_M, &cp));
        Offer(best, gap, gap - r - allowance, cp, p_M, r, mesh.triangle_id(t), i);
      }
    }
    return true;
  };
  auto split = [&](const Entry& e, auto&& push) {
    const BvhNode& mn = mesh.node(e.a);
    const PointCloudNode& cn = nodes[static_cast<size_t>(e.c)];
    if (mn.is_leaf() || (!cn.is_leaf() && NodeSize(cn) > mesh.sphere(e.a).radius)) {
      push(e.a, cn.left);
      push(e.a, cn.left + 1);
    } else {
      push(mn.first, e.c);
      push(mn.first + 1, e.c);
    }
  };
  Best best;
  DistanceResult r = BestFirst(request, 0, bound, leaf, split, &best);
  r.p_WA = X_WM * best.p_A;
  r.p_WB = X_WM * best.p_B;
  r.triangles = {best.triangle, best.point};
  return r;
}

Result<DistanceResult> ComputeShapeCloudDistance(const Shape& shape, const RigidTransform& X_WS, const PointCloud& cloud,
                                                 const RigidTransform& X_WC, const DistanceRequest& request) {
  if (Status s = ValidateDistanceRequest(request); !s.ok()) return s.error();
  if (Status s = ValidateShape(shape); !s.ok()) return s.error();
  const RigidTransform X_SC = X_WS.inverse() * X_WC;
  const Obb so = ShapeBoundingObb(shape);
  const double allowance = QueryAllowance(so.center.norm() + so.half_extents.norm(), X_WS, cloud, X_WC);
  const std::vector<PointCloudNode>& nodes = cloud.nodes();
  Best best;
  DistanceResult r;
  VisitShape(shape, [&](const auto& solid) {
    auto bound = [&](int32_t, int32_t k, QueryStats* stats) {
      ++stats->bv_tests;
      const Obb co = NodeObb(nodes[static_cast<size_t>(k)], 0.0);
      return std::max(0.0, ObbDistanceLowerBound(so.half_extents, co.half_extents, MakeBoxPairFrame(so, co, X_SC)) -
                               allowance);
    };
    auto leaf = [&](const Entry& e, Best* b, QueryStats* stats) {
      const PointCloudNode& cn = nodes[static_cast<size_t>(e.c)];
      if (!cn.is_leaf()) return false;
      for (int32_t i = cn.first; i < cn.first + cn.count; ++i) {
        ++stats->triangle_tests;
        const Vec3 p_S = X_SC * cloud.point(i);
        const double rad = cloud.point_radius(i);
        const PointSolid g = PointShapeDistance(solid, p_S);
        Offer(b, g.distance, g.lower - rad - allowance, g.closest, p_S, rad, -1, i);
      }
      return true;
    };
    auto split = [&](const Entry& e, auto&& push) {
      const PointCloudNode& cn = nodes[static_cast<size_t>(e.c)];
      push(-1, cn.left);
      push(-1, cn.left + 1);
    };
    r = BestFirst(request, -1, bound, leaf, split, &best);
  });
  r.p_WA = X_WS * best.p_A;
  r.p_WB = X_WS * best.p_B;
  r.triangles = {-1, best.point};
  return r;
}

}  // namespace proximity::core
