#include "bvh/solid_interior.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "bvh/sdf.h"
#include "narrowphase/triangle.h"
#include "narrowphase/mesh_topology.h"

namespace proximity::core {
namespace {

// Cells of the proposing map along the mesh's longest side.
constexpr int32_t kProposalCells = 16;
// Meshes of fewer triangles get no balls: their walk costs about what the balls' test does (measured on
// arms whose links have 12 to 52).
constexpr int32_t kMinTriangles = 2 * static_cast<int32_t>(kMaxInteriorBalls);
// The smallest a ball may be beside the largest (see kMaxInteriorBalls).
constexpr double kSmallestShare = 0.1;
// The most triangle evaluations (solid angles and point-triangle distances) the checks spend on one
// mesh (some tenths of a second at most): past it, the balls found so far are kept.
constexpr int64_t kWorkCap = 8'000'000;

// A centre proposed for a ball, and how deep the map says it lies.
struct Proposal {
  double depth;
  Vec3 p;
};

// The map's nodes inside the solid, deepest first.
std::vector<Proposal> ProposeCentres(const SignedDistanceMap& sdf) {
  std::vector<Proposal> proposals;
  const auto& cells = sdf.cells();
  for (int32_t k = 0; k <= cells[2]; ++k) {
    for (int32_t j = 0; j <= cells[1]; ++j) {
      for (int32_t i = 0; i <= cells[0]; ++i) {
        const double value = sdf.node_value(i, j, k);
        if (value < 0.0) proposals.push_back({-value, sdf.node_position(i, j, k)});
      }
    }
  }
  std::stable_sort(proposals.begin(), proposals.end(),
                   [](const Proposal& x, const Proposal& y) { return x.depth > y.depth; });
  return proposals;
}

// A mesh's connected parts: each one's triangles and box.
struct Parts {
  std::vector<std::vector<int32_t>> triangles;
  std::vector<Aabb> boxes;
};

Parts SplitParts(const TriangleMesh& mesh) {
  const internal::MeshParts parts = internal::ConnectedParts(mesh);
  Parts out;
  out.triangles.resize(static_cast<size_t>(parts.count));
  out.boxes.resize(static_cast<size_t>(parts.count));
  for (size_t t = 0; t < mesh.triangles.size(); ++t) {
    const int32_t part = parts.of_triangle[t];
    out.triangles[part].push_back(static_cast<int32_t>(t));
    for (int32_t v : mesh.triangles[t]) {
      out.boxes[part].min = out.boxes[part].min.cwiseMin(mesh.vertices[v]);
      out.boxes[part].max = out.boxes[part].max.cwiseMax(mesh.vertices[v]);
    }
  }
  return out;
}

// The part that winds around p and keeps farthest from it, and that distance (exact up to rounding):
// part -1 when none winds around p. Adds the triangles evaluated to *work, and stops past kWorkCap.
std::pair<int32_t, double> FarthestPartAround(const TriangleMesh& mesh, const Parts& parts, const Vec3& p,
                                              int64_t* work) {
  double best = 0.0;
  int32_t best_part = -1;
  for (size_t part = 0; part < parts.triangles.size(); ++part) {
    const Aabb& box = parts.boxes[part];  // a part winds only inside its box
    if ((p.array() <= box.min.array()).any() || (p.array() >= box.max.array()).any()) continue;
    *work += 2 * static_cast<int64_t>(parts.triangles[part].size());
    if (*work > kWorkCap) break;
    double angle = 0.0;
    for (int32_t t : parts.triangles[part]) {
      const auto& tri = mesh.triangles[t];
      angle += internal::SolidAngle(p, mesh.vertices[tri[0]], mesh.vertices[tri[1]], mesh.vertices[tri[2]]);
    }
    const double winding = angle / (4.0 * M_PI);
    const double turns = std::round(winding);
    if (turns == 0.0 || !(std::abs(winding - turns) < 1e-6)) continue;
    double nearest = std::numeric_limits<double>::infinity();
    for (int32_t t : parts.triangles[part]) {
      const auto& tri = mesh.triangles[t];
      nearest = std::min(nearest, (ClosestPointOnTriangle(p, mesh.vertices[tri[0]], mesh.vertices[tri[1]],
                                                          mesh.vertices[tri[2]]) - p).norm());
    }
    if (nearest > best) {
      best = nearest;
      best_part = static_cast<int32_t>(part);
    }
  }
  return {best_part, best};
}

// Orders the balls along the longest side of their centres' box and cuts them into runs of equal
// length, each in a sphere.
void GroupBalls(SolidInterior* interior) {
  std::vector<InteriorBall>& balls = interior->balls;
  Aabb centres;
  for (const InteriorBall& b : balls) {
    centres.min = centres.min.cwiseMin(b.center);
    centres.max = centres.max.cwiseMax(b.center);
  }
  int axis = 0;
  (centres.max - centres.min).maxCoeff(&axis);
  std::stable_sort(balls.begin(), balls.end(),
                   [&](const InteriorBall& x, const InteriorBall& y) { return x.center[axis] < y.center[axis]; });
  const size_t n = balls.size(), groups = std::min(n, kInteriorBallGroups);
  for (size_t g = 0; g < groups; ++g) {
    InteriorBallGroup group;
    group.begin = static_cast<int32_t>(g * n / groups);
    group.end = static_cast<int32_t>((g + 1) * n / groups);
    for (int32_t i = group.begin; i < group.end; ++i) group.center += balls[i].center;
    group.center /= static_cast<double>(group.end - group.begin);
    for (int32_t i = group.begin; i < group.end; ++i) {
      group.radius = std::max(group.radius, (balls[i].center - group.center).norm() + balls[i].radius);
    }
    group.radius *= 1.0 + 1e-12;  // holds its balls despite rounding
    interior->groups.push_back(group);
  }
}

}  // namespace

std::shared_ptr<const SolidInterior> FindSolidInterior(const MeshModel& model,
                                                       const std::shared_ptr<const ConvexPolytope>& hull) {
  const TriangleMesh& mesh = model.mesh();
  if (hull == nullptr || model.num_triangles() < kMinTriangles) return nullptr;
  // The map refuses what is not closed and outward, part by part; its node values propose centres.
  SdfBuildOptions options;
  options.num_threads = 1;
  const Aabb box = FitAabb(mesh.vertices);
  options.sample_spacing = (box.max - box.min).maxCoeff();  // its surface samples are not used
  const auto map = SignedDistanceMap::Build(model, kProposalCells, options, "interior");
  if (!map.ok()) return nullptr;
  const Parts parts = SplitParts(mesh);
  const bool all_hull_vertices_used = internal::HullVerticesOnTriangles(mesh, *hull);
  const double extent = (box.max - box.min).norm();
  auto interior = std::make_shared<SolidInterior>();
  std::vector<int32_t> hull_of_part(parts.triangles.size(), -1);
  int64_t work = 0;
  for (const Proposal& proposal : ProposeCentres(*map.value())) {
    if (interior->balls.size() == kMaxInteriorBalls || work > kWorkCap) break;
    if (!interior->balls.empty() && proposal.depth < kSmallestShare * interior->balls[0].radius) break;
    const bool covered = std::any_of(interior->balls.begin(), interior->balls.end(), [&](const InteriorBall& b) {
      return (proposal.p - b.center).norm() < b.radius;
    });
    if (covered) continue;
    const auto [part, distance] = FarthestPartAround(mesh, parts, proposal.p, &work);
    // Rounding of the distances kept out of the radius.
    const double radius = distance * (1.0 - 1e-9) - 1e-12 * extent;
    if (part < 0 || !(radius > 0.0)) continue;
    if (!interior->balls.empty() && radius < kSmallestShare * interior->balls[0].radius) continue;
    int32_t& hull_index = hull_of_part[static_cast<size_t>(part)];
    if (hull_index < 0) {
      // The whole mesh's hull serves a mesh of one part whose hull vertices all lie on triangles.
      std::shared_ptr<const ConvexPolytope> part_hull = hull;
      if (parts.triangles.size() > 1 || !all_hull_vertices_used) {
        std::vector<Vec3> points;
        for (int32_t t : parts.triangles[static_cast<size_t>(part)]) {
          for (int32_t v : mesh.triangles[t]) points.push_back(mesh.vertices[v]);
        }
        auto built = ConvexPolytope::Build(points, "interior part");
        if (!built.ok()) continue;
        part_hull = built.value();
      }
      hull_index = static_cast<int32_t>(interior->part_hulls.size());
      interior->part_hulls.push_back(std::move(part_hull));
    }
    interior->balls.push_back({proposal.p, radius, hull_index});
  }
  if (interior->balls.empty()) return nullptr;
  GroupBalls(interior.get());
  return interior;
}

}  // namespace proximity::core
