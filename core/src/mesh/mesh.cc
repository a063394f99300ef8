#include "proximity/core/mesh/mesh.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <numbers>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "mesh_read.h"

namespace proximity::core {
namespace internal {

std::string FormatVec(const Vec3& v) {
  std::ostringstream os;
  os.precision(17);
  os << "(" << v.x() << ", " << v.y() << ", " << v.z() << ")";
  return os.str();
}

}  // namespace internal

namespace {

using internal::FormatVec;

/// Triangles whose height over their longest edge is at most this fraction of that edge are zero-area.
/// The cross product of edges no longer than L carries a rounding error of a few ulps of L^2, about
/// 1e-15 L^2, so a collinear triangle computes below the threshold while any triangle with a height of
/// more than 1e-14 of its size is kept. The test is scale invariant.
constexpr double kDegenerateRelativeHeight = 1e-14;

/// Exact coordinates as a hash key; -0.0 and +0.0 compare equal.
struct ExactKey {
  std::array<uint64_t, 3> bits;

  explicit ExactKey(const Vec3& p) {
    for (int i = 0; i < 3; ++i) {
      const double c = p[i] + 0.0;
      std::memcpy(&bits[i], &c, sizeof(double));
    }
  }
  bool operator==(const ExactKey& o) const { return bits == o.bits; }
};

struct CellKey {
  std::array<int64_t, 3> cell;
  bool operator==(const CellKey& o) const { return cell == o.cell; }
};

template <class T>
uint64_t MixHash(const std::array<T, 3>& a) {
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (const T v : a) {
    uint64_t x = static_cast<uint64_t>(v);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  }
  return h;
}

struct ExactKeyHash {
  size_t operator()(const ExactKey& k) const { return MixHash(k.bits); }
};
struct CellKeyHash {
  size_t operator()(const CellKey& k) const { return MixHash(k.cell); }
};

/// Maps every vertex to the first vertex with identical coordinates.
std::vector<int32_t> WeldExact(const std::vector<Vec3>& vertices) {
  std::vector<int32_t> representative(vertices.size());
  std::unordered_map<ExactKey, int32_t, ExactKeyHash> first;
  first.reserve(vertices.size());
  for (size_t i = 0; i < vertices.size(); ++i) {
    representative[i] = first.try_emplace(ExactKey(vertices[i]), static_cast<int32_t>(i)).first->second;
  }
  return representative;
}

/// Maps every vertex to the closest earlier representative within `tolerance`, or to itself, making it a
/// representative. Distances are measured to representatives, so welding never chains: two vertices of one
/// weld group are at most 2 * tolerance apart. Representatives are found through a uniform grid whose cells
/// are at least `tolerance` wide, so the 27 cells around a vertex hold every candidate.
std::vector<int32_t> WeldWithinTolerance(const std::vector<Vec3>& vertices, double tolerance) {
  double max_abs = 0.0;
  for (const Vec3& p : vertices) max_abs = std::max(max_abs, p.cwiseAbs().maxCoeff());
  // Wide enough that every cell index stays far inside the int64 range.
  const double cell_size = std::max(tolerance, max_abs * std::ldexp(1.0, -40));
  auto cell_of = [&](const Vec3& p) {
    CellKey key;
    for (int i = 0; i < 3; ++i) key.cell[i] = static_cast<int64_t>(std::floor(p[i] / cell_size));
    return key;
  };

  std::vector<int32_t> representative(vertices.size());
  std::unordered_map<CellKey, std::vector<int32_t>, CellKeyHash> grid;
  grid.reserve(vertices.size());
  for (size_t i = 0; i < vertices.size(); ++i) {
    const Vec3& p = vertices[i];
    const CellKey home = cell_of(p);
    int32_t best = -1;
    double best_distance = std::numeric_limits<double>::infinity();
    for (int64_t dx = -1; dx <= 1; ++dx) {
      for (int64_t dy = -1; dy <= 1; ++dy) {
        for (int64_t dz = -1; dz <= 1; ++dz) {
          const auto it = grid.find(CellKey{{home.cell[0] + dx, home.cell[1] + dy, home.cell[2] + dz}});
          if (it == grid.end()) continue;
          for (const int32_t r : it->second) {
            const double d = (vertices[r] - p).stableNorm();
            if (d <= tolerance && (d < best_distance || (d == best_distance && r < best))) {
              best = r;
              best_distance = d;
            }
          }
        }
      }
    }
    if (best < 0) {
      best = static_cast<int32_t>(i);
      grid[home].push_back(best);
    }
    representative[i] = best;
  }
  return representative;
}

/// Whether the triangle's height over its longest edge is at most kDegenerateRelativeHeight times that
/// edge, i.e. |cross| <= kDegenerateRelativeHeight * longest_edge^2. Edges are divided by their largest
/// component first so that neither the squares nor the cross product overflow or underflow. The cross
/// product is taken at the vertex opposite the longest edge, where its rounding error is smallest.
bool IsZeroArea(const Vec3& a, const Vec3& b, const Vec3& c) {
  Vec3 ab = b - a, bc = c - b, ca = a - c;
  const double scale = std::max({ab.cwiseAbs().maxCoeff(), bc.cwiseAbs().maxCoeff(), ca.cwiseAbs().maxCoeff()});
  if (scale == 0.0) return true;
  if (!std::isfinite(scale)) return false;
  ab /= scale;
  bc /= scale;
  ca /= scale;
  const double lab = ab.squaredNorm(), lbc = bc.squaredNorm(), lca = ca.squaredNorm();
  double twice_area;
  double longest;
  if (lab >= lbc && lab >= lca) {
    twice_area = ca.cross(bc).norm();
    longest = lab;
  } else if (lbc >= lca) {
    twice_area = ab.cross(ca).norm();
    longest = lbc;
  } else {
    twice_area = ab.cross(bc).norm();
    longest = lca;
  }
  return twice_area <= kDegenerateRelativeHeight * longest;
}

// Whether triangle t (indices into `vertices`) is degenerate: two corners on one vertex, or zero area.
bool IsDegenerate(const std::array<int32_t, 3>& t, const std::vector<Vec3>& vertices) {
  return t[0] == t[1] || t[1] == t[2] || t[2] == t[0] || IsZeroArea(vertices[t[0]], vertices[t[1]], vertices[t[2]]);
}

}  // namespace

/// Welding keeps the position of the first vertex of each group. A triangle that keeps an area is kept.
/// A degenerate one (two corners welded together, or zero area by IsZeroArea) is geometrically its hull
/// segment, or a point: it is dropped only when that segment is an edge of a kept triangle, or that point
/// a vertex of one, so that dropping it removes no point of the surface. Any other degenerate triangle is
/// kept as it is (the narrowphase treats it as its hull segment): a sliver can be long where it matters,
/// and dropping it would make a collision through it unseen. The remaining vertices keep their input
/// order. Fills `removed_degenerate`, `kept_degenerate` and `welded_vertices` of `report` on success and
/// leaves its other fields alone.
Result<TriangleMesh> MakeTriangleMesh(std::vector<Vec3> vertices, std::vector<std::array<int32_t, 3>> triangles,
                                      double weld_tolerance, MeshLoadReport* report) {
  if (!std::isfinite(weld_tolerance) || weld_tolerance < 0.0) {
    std::ostringstream os;
    os << "weld tolerance must be finite and >= 0, got " << weld_tolerance;
    return InvalidArgument(os.str());
  }
  if (vertices.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return InvalidArgument("mesh has " + std::to_string(vertices.size()) +
                           " vertices, more than 32-bit indices can address");
  }
  for (size_t i = 0; i < vertices.size(); ++i) {
    if (!vertices[i].allFinite()) {
      return InvalidArgument("vertex " + std::to_string(i) + " has a non-finite coordinate " +
                             FormatVec(vertices[i]));
    }
  }
  const auto num_vertices = static_cast<int64_t>(vertices.size());
  for (size_t t = 0; t < triangles.size(); ++t) {
    for (const int32_t index : triangles[t]) {
      if (index < 0 || index >= num_vertices) {
        return InvalidArgument("triangle " + std::to_string(t) + " has vertex index " + std::to_string(index) +
                               " out of range [0, " + std::to_string(num_vertices) + ")");
      }
    }
  }
  if (triangles.empty()) return InvalidArgument("mesh has no triangles");

  const std::vector<int32_t> representative =
      weld_tolerance == 0.0 ? WeldExact(vertices) : WeldWithinTolerance(vertices, weld_tolerance);
  int32_t welded = 0;
  for (size_t i = 0; i < representative.size(); ++i) {
    if (representative[i] != static_cast<int32_t>(i)) ++welded;
  }

  // Triangles with an area first; their edges and vertices are what a degenerate triangle may be covered by.
  std::vector<std::array<int32_t, 3>> kept;
  std::vector<std::array<int32_t, 3>> degenerate;
  kept.reserve(triangles.size());
  for (const auto& t : triangles) {
    const std::array<int32_t, 3> w = {representative[t[0]], representative[t[1]], representative[t[2]]};
    (IsDegenerate(w, vertices) ? degenerate : kept).push_back(w);
  }
  auto edge_key = [](int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(std::min(a, b))) << 32) |
           static_cast<uint32_t>(std::max(a, b));
  };
  std::unordered_set<uint64_t> covered;  // Edges (a < b) and vertices (a == a) of the kept triangles.
  if (!degenerate.empty()) {
    covered.reserve(kept.size() * 4);
    for (const auto& t : kept) {
      for (int i = 0; i < 3; ++i) {
        covered.insert(edge_key(t[i], t[(i + 1) % 3]));
        covered.insert(edge_key(t[i], t[i]));
      }
    }
  }
  int32_t removed = 0;
  int32_t kept_degenerate = 0;
  for (const auto& w : degenerate) {
    // The hull segment: the two corners farthest apart (a point when all three coincide).
    int32_t a = w[0], b = w[1];
    double longest = (vertices[w[0]] - vertices[w[1]]).squaredNorm();
    for (const auto& [i, j] : {std::pair{1, 2}, std::pair{2, 0}}) {
      const double l = (vertices[w[i]] - vertices[w[j]]).squaredNorm();
      if (l > longest) {
        longest = l;
        a = w[i];
        b = w[j];
      }
    }
    // A collinear middle corner lies on the hull segment, so the segment being an edge covers it too.
    if (covered.contains(edge_key(a, b))) {
      ++removed;
      continue;
    }
    ++kept_degenerate;
    kept.push_back(w);
  }
  if (kept_degenerate == static_cast<int32_t>(kept.size())) {
    return InvalidArgument("mesh has no triangle with an area: all " + std::to_string(triangles.size()) +
                           " triangles have zero area (after welding)");
  }

  // Reindex the referenced vertices, keeping their input order.
  std::vector<int32_t> new_index(vertices.size(), -1);
  for (const auto& t : kept) {
    for (const int32_t v : t) new_index[v] = 0;
  }
  TriangleMesh mesh;
  for (size_t i = 0; i < vertices.size(); ++i) {
    if (new_index[i] < 0) continue;
    new_index[i] = static_cast<int32_t>(mesh.vertices.size());
    mesh.vertices.push_back(vertices[i]);
  }
  mesh.triangles.reserve(kept.size());
  for (const auto& t : kept) mesh.triangles.push_back({new_index[t[0]], new_index[t[1]], new_index[t[2]]});

  if (report != nullptr) {
    report->removed_degenerate = removed;
    report->kept_degenerate = kept_degenerate;
    report->welded_vertices = welded;
  }
  return mesh;
}

int32_t CountDegenerateTriangles(const TriangleMesh& mesh) {
  return static_cast<int32_t>(std::count_if(mesh.triangles.begin(), mesh.triangles.end(),
                                            [&](const auto& t) { return IsDegenerate(t, mesh.vertices); }));
}

TriangleMesh MakeBoxMesh(const Vec3& size) {
  const Vec3 h = size / 2;
  TriangleMesh mesh;
  // Vertex i has the +x half-size when bit 0 is set, +y for bit 1, +z for bit 2.
  for (int i = 0; i < 8; ++i) {
    mesh.vertices.emplace_back((i & 1) ? h.x() : -h.x(), (i & 2) ? h.y() : -h.y(), (i & 4) ? h.z() : -h.z());
  }
  mesh.triangles = {{0, 4, 6}, {0, 6, 2}, {1, 3, 7}, {1, 7, 5}, {0, 1, 5}, {0, 5, 4},
                    {2, 6, 7}, {2, 7, 3}, {0, 2, 3}, {0, 3, 1}, {4, 5, 7}, {4, 7, 6}};
  return mesh;
}

/// Negative subdivision counts are taken as 0.
TriangleMesh MakeIcosphereMesh(double radius, int subdivisions) {
  const double phi = (1.0 + std::sqrt(5.0)) / 2.0;
  std::vector<Vec3> unit;
  for (const double s1 : {-1.0, 1.0}) {
    for (const double s2 : {-phi, phi}) {
      unit.emplace_back(0.0, s1, s2);
      unit.emplace_back(s1, s2, 0.0);
      unit.emplace_back(s2, 0.0, s1);
    }
  }
  // The icosahedron's faces are the vertex triples at mutual distance 2 (its edge length), oriented so that
  // the normal points away from the centre.
  std::vector<std::array<int32_t, 3>> faces;
  auto is_edge = [&](int a, int b) { return std::abs((unit[a] - unit[b]).squaredNorm() - 4.0) < 1e-9; };
  for (int32_t a = 0; a < 12; ++a) {
    for (int32_t b = a + 1; b < 12; ++b) {
      for (int32_t c = b + 1; c < 12; ++c) {
        if (!is_edge(a, b) || !is_edge(b, c) || !is_edge(a, c)) continue;
        const Vec3 n = (unit[b] - unit[a]).cross(unit[c] - unit[a]);
        if (n.dot(unit[a] + unit[b] + unit[c]) > 0) {
          faces.push_back({a, b, c});
        } else {
          faces.push_back({a, c, b});
        }
      }
    }
  }
  for (Vec3& v : unit) v.normalize();

  for (int level = 0; level < subdivisions; ++level) {
    std::map<std::pair<int32_t, int32_t>, int32_t> midpoint;
    auto mid = [&](int32_t a, int32_t b) {
      const auto key = std::minmax(a, b);
      const auto [it, inserted] = midpoint.try_emplace(key, static_cast<int32_t>(unit.size()));
      if (inserted) unit.push_back((unit[a] + unit[b]).normalized());
      return it->second;
    };
    std::vector<std::array<int32_t, 3>> finer;
    finer.reserve(faces.size() * 4);
    for (const auto& f : faces) {
      const int32_t ab = mid(f[0], f[1]), bc = mid(f[1], f[2]), ca = mid(f[2], f[0]);
      finer.push_back({f[0], ab, ca});
      finer.push_back({ab, f[1], bc});
      finer.push_back({ca, bc, f[2]});
      finer.push_back({ab, bc, ca});
    }
    faces = std::move(finer);
  }

  TriangleMesh mesh;
  mesh.vertices.reserve(unit.size());
  for (const Vec3& v : unit) mesh.vertices.push_back(v.normalized() * radius);
  mesh.triangles = std::move(faces);
  return mesh;
}

/// Fewer than 3 segments are taken as 3.
TriangleMesh MakeCylinderMesh(double radius, double length, int segments) {
  const int n = std::max(segments, 3);
  const double half = length / 2;
  TriangleMesh mesh;
  mesh.vertices.reserve(2 * n + 2);
  for (const double z : {-half, half}) {
    for (int i = 0; i < n; ++i) {
      const double theta = 2.0 * std::numbers::pi * i / n;
      mesh.vertices.emplace_back(radius * std::cos(theta), radius * std::sin(theta), z);
    }
  }
  const int32_t bottom_centre = 2 * n, top_centre = 2 * n + 1;
  mesh.vertices.emplace_back(0.0, 0.0, -half);
  mesh.vertices.emplace_back(0.0, 0.0, half);
  mesh.triangles.reserve(4 * n);
  for (int32_t i = 0; i < n; ++i) {
    const int32_t j = (i + 1) % n;
    const int32_t bi = i, bj = j, ti = n + i, tj = n + j;
    mesh.triangles.push_back({bi, bj, tj});
    mesh.triangles.push_back({bi, tj, ti});
    mesh.triangles.push_back({bottom_centre, bj, bi});
    mesh.triangles.push_back({top_centre, ti, tj});
  }
  return mesh;
}

/// Fewer than 3 segments in either direction are taken as 3.
TriangleMesh MakeTorusMesh(double major, double minor, int major_segments, int minor_segments) {
  const int nu = std::max(major_segments, 3), nv = std::max(minor_segments, 3);
  TriangleMesh mesh;
  mesh.vertices.reserve(nu * nv);
  for (int i = 0; i < nu; ++i) {
    const double theta = 2.0 * std::numbers::pi * i / nu;
    for (int j = 0; j < nv; ++j) {
      const double phi = 2.0 * std::numbers::pi * j / nv;
      const double rho = major + minor * std::cos(phi);
      mesh.vertices.emplace_back(rho * std::cos(theta), rho * std::sin(theta), minor * std::sin(phi));
    }
  }
  auto index = [nv](int i, int j) { return static_cast<int32_t>(i * nv + j); };
  mesh.triangles.reserve(2 * nu * nv);
  for (int i = 0; i < nu; ++i) {
    const int i1 = (i + 1) % nu;
    for (int j = 0; j < nv; ++j) {
      const int j1 = (j + 1) % nv;
      mesh.triangles.push_back({index(i, j), index(i1, j), index(i1, j1)});
      mesh.triangles.push_back({index(i, j), index(i1, j1), index(i, j1)});
    }
  }
  return mesh;
}

void AppendMesh(TriangleMesh* into, const TriangleMesh& part, const RigidTransform& X_MP) {
  const int32_t base = static_cast<int32_t>(into->vertices.size());
  into->vertices.reserve(into->vertices.size() + part.vertices.size());
  for (const Vec3& v : part.vertices) into->vertices.push_back(X_MP * v);
  into->triangles.reserve(into->triangles.size() + part.triangles.size());
  for (const auto& t : part.triangles) into->triangles.push_back({base + t[0], base + t[1], base + t[2]});
}

std::array<Vec3, 2> MeshBounds(const TriangleMesh& mesh) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::array<Vec3, 2> bounds = {Vec3::Constant(kInf), Vec3::Constant(-kInf)};
  for (const Vec3& v : mesh.vertices) {
    bounds[0] = bounds[0].cwiseMin(v);
    bounds[1] = bounds[1].cwiseMax(v);
  }
  return bounds;
}

}  // namespace proximity::core
