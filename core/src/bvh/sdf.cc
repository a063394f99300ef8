#include "bvh/sdf.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "bvh/mesh_query.h"
#include "narrowphase/mesh_topology.h"

namespace proximity::core {
namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMaxNodes = int64_t{1} << 27;
constexpr int64_t kMaxSamples = int64_t{1} << 26;
constexpr int32_t kMaxCells = 1024;
// Largest number of samples in a leaf of the samples' hierarchy.
constexpr int32_t kLeafSamples = 8;
// The pseudonormal sign test is trusted when |(p - c) · n| exceeds this fraction of |p - c| (plus the
// rounding of c). Smaller products mean p - c is nearly tangent to the feature's pseudonormal, which
// happens only at sharp vertices and edges; the winding number decides those.
constexpr double kSignTrust = 1e-4;

// The feature of a triangle a closest point lies on.
enum Region : int8_t { kVertex0, kVertex1, kVertex2, kEdge01, kEdge12, kEdge20, kFace };

// Closest point to p on the non-degenerate triangle (a, b, c) and its feature, by the Voronoi-region
// tests of Ericson, "Real-Time Collision Detection" (2005), section 5.1.5. The region is decided by the
// same signs that place the point, so the two always agree.
inline Vec3 ClosestPointAndRegion(const Vec3& p, const Vec3& a, const Vec3& b, const Vec3& c, Region* region) {
  const Vec3 ab = b - a, ac = c - a, ap = p - a;
  const double d1 = ab.dot(ap), d2 = ac.dot(ap);
  if (d1 <= 0 && d2 <= 0) {
    *region = kVertex0;
    return a;
  }
  const Vec3 bp = p - b;
  const double d3 = ab.dot(bp), d4 = ac.dot(bp);
  if (d3 >= 0 && d4 <= d3) {
    *region = kVertex1;
    return b;
  }
  const double vc = d1 * d4 - d3 * d2;
  if (vc <= 0 && d1 >= 0 && d3 <= 0) {
    *region = kEdge01;
    return a + (d1 / (d1 - d3)) * ab;
  }
  const Vec3 cp = p - c;
  const double d5 = ab.dot(cp), d6 = ac.dot(cp);
  if (d6 >= 0 && d5 <= d6) {
    *region = kVertex2;
    return c;
  }
  const double vb = d5 * d2 - d1 * d6;
  if (vb <= 0 && d2 >= 0 && d6 <= 0) {
    *region = kEdge20;
    return a + (d2 / (d2 - d6)) * ac;
  }
  const double va = d3 * d6 - d5 * d4;
  if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
    *region = kEdge12;
    return b + ((d4 - d3) / ((d4 - d3) + (d5 - d6))) * (c - b);
  }
  *region = kFace;
  const double inv = 1.0 / (va + vb + vc);
  return a + ab * (vb * inv) + ac * (vc * inv);
}

// Squared distance from p to an OBB (0 inside): a lower bound on the squared distance to anything in it.
inline double ObbDistanceSquared(const Obb& box, const Vec3& p) {
  const Vec3 d = box.R_MB.transpose() * (p - box.center);
  return (d.cwiseAbs() - box.half_extents).cwiseMax(0.0).squaredNorm();
}

// |v| without overflow for huge components.
inline double ScaledNorm(const Vec3& v) {
  const double m = v.cwiseAbs().maxCoeff();
  return m > 0.0 && std::isfinite(m) ? m * (v / m).norm() : m;
}

// The closest point of a mesh to a query point, with its triangle (leaf order) and feature.
struct ClosestHit {
  double d2 = kInf;
  Vec3 point = Vec3::Zero();
  int32_t leaf = -1;
  Region region = kFace;
};

// Exact closest point on a mesh by a depth-first walk of its OBB tree, nearer child first, seeded with
// a triangle likely to be close (the previous grid node's). One walker per thread.
class ClosestWalker {
 public:
  explicit ClosestWalker(const MeshModel& model) : model_(model) {
    stack_.reserve(static_cast<std::size_t>(model.depth()) + 4);
  }

  ClosestHit Find(const Vec3& p, int32_t seed_leaf) {
    ClosestHit best;
    if (seed_leaf >= 0) TestLeaf(p, seed_leaf, &best);
    const BvhNode* nodes = model_.nodes();
    const Obb* obbs = model_.obbs();
    stack_.clear();
    stack_.push_back({0, 0.0});
    while (!stack_.empty()) {
      const auto [n, bound] = stack_.back();
      stack_.pop_back();
      if (bound >= best.d2) continue;
      const BvhNode& node = nodes[n];
      if (node.is_leaf()) {
        for (int32_t k = node.first; k < node.first + node.count; ++k) {
          if (k != seed_leaf) TestLeaf(p, k, &best);
        }
        continue;
      }
      const int32_t l = node.first, r = node.first + 1;
      const double bl = ObbDistanceSquared(obbs[l], p), br = ObbDistanceSquared(obbs[r], p);
      box_tests += 2;
      if (bl <= br) {
        if (br < best.d2) stack_.push_back({r, br});
        if (bl < best.d2) stack_.push_back({l, bl});
      } else {
        if (bl < best.d2) stack_.push_back({l, bl});
        if (br < best.d2) stack_.push_back({r, br});
      }
    }
    return best;
  }

  int64_t box_tests = 0;
  int64_t triangle_tests = 0;

 private:
  void TestLeaf(const Vec3& p, int32_t k, ClosestHit* best) {
    const LeafTriangle& t = model_.leaf_triangle(k);
    Region region;
    const Vec3 c = ClosestPointAndRegion(p, t.v[0], t.v[1], t.v[2], &region);
    const double d2 = (p - c).squaredNorm();
    ++triangle_tests;
    if (d2 < best->d2) *best = {d2, c, k, region};
  }

  const MeshModel& model_;
  std::vector<std::pair<int32_t, double>> stack_;
};

// Per-triangle and per-vertex normals for the sign test, indexed by mesh triangle / vertex.
struct Pseudonormals {
  std::vector<Vec3> face;    // Unit face normal of each triangle.
  std::vector<Vec3> edge;    // 3 per triangle: edge (i, i+1)'s normalised sum of its two face normals.
  std::vector<Vec3> vertex;  // Angle-weighted sum of the incident face normals, normalised.
  std::vector<int32_t> edge_id;  // 3 per triangle: index of the undirected edge.
  int32_t num_edges = 0;
  std::vector<int32_t> part;     // Connected part (through shared vertices) of each triangle.
  std::vector<double> part_volume;
};

std::string EdgeText(int32_t a, int32_t b, int32_t t) {
  return "vertices " + std::to_string(a) + "-" + std::to_string(b) + " of triangle " + std::to_string(t);
}

// Unit face normals into out->face; refuses a zero-area triangle.
Status FaceNormals(const TriangleMesh& mesh, const std::string& name, Pseudonormals* out) {
  const int32_t nt = static_cast<int32_t>(mesh.triangles.size());
  out->face.resize(nt);
  for (int32_t t = 0; t < nt; ++t) {
    const auto& tri = mesh.triangles[t];
    const Vec3 n = (mesh.vertices[tri[1]] - mesh.vertices[tri[0]]).cross(mesh.vertices[tri[2]] - mesh.vertices[tri[0]]);
    const double len = n.norm();
    if (!(len > 0.0)) {
      return InvalidArgument(name + ": triangle " + std::to_string(t) + " (vertices " + std::to_string(tri[0]) + ", " +
                             std::to_string(tri[1]) + ", " + std::to_string(tri[2]) +
                             ") has zero area; its normal is undefined (MakeTriangleMesh drops such triangles)");
    }
    out->face[t] = n / len;
  }
  return {};
}

// Every edge shared by exactly two triangles running it in opposite directions: out->edge_id and
// out->num_edges, or an error counting the edges that are not, with an example of each kind.
Status PairEdges(const TriangleMesh& mesh, const std::string& name, Pseudonormals* out) {
  const int32_t nt = static_cast<int32_t>(mesh.triangles.size());
  // Every directed edge, grouped by its undirected key.
  struct HalfEdge {
    int32_t lo, hi, tri;
    int8_t local;
    bool forward;  // The triangle runs lo -> hi.
  };
  std::vector<HalfEdge> half(static_cast<std::size_t>(nt) * 3);
  for (int32_t t = 0; t < nt; ++t) {
    for (int8_t e = 0; e < 3; ++e) {
      const int32_t a = mesh.triangles[t][e], b = mesh.triangles[t][(e + 1) % 3];
      half[3 * static_cast<std::size_t>(t) + e] = {std::min(a, b), std::max(a, b), t, e, a < b};
    }
  }
  std::sort(half.begin(), half.end(), [](const HalfEdge& x, const HalfEdge& y) {
    return x.lo != y.lo ? x.lo < y.lo : (x.hi != y.hi ? x.hi < y.hi : x.tri < y.tri);
  });
  out->edge_id.assign(half.size(), -1);
  int64_t boundary = 0, non_manifold = 0, inconsistent = 0;
  std::string boundary_example, non_manifold_example, inconsistent_example;
  for (std::size_t i = 0; i < half.size();) {
    std::size_t j = i + 1;
    while (j < half.size() && half[j].lo == half[i].lo && half[j].hi == half[i].hi) ++j;
    const HalfEdge& h0 = half[i];
    const std::string here = EdgeText(h0.forward ? h0.lo : h0.hi, h0.forward ? h0.hi : h0.lo, h0.tri);
    if (j - i == 1) {
      if (boundary++ == 0) boundary_example = here;
    } else if (j - i > 2) {
      if (non_manifold++ == 0) non_manifold_example = here + " (" + std::to_string(j - i) + " triangles)";
    } else if (half[i].forward == half[i + 1].forward) {
      if (inconsistent++ == 0) inconsistent_example = here + " and triangle " + std::to_string(half[i + 1].tri);
    } else {
      for (std::size_t k = i; k < j; ++k) out->edge_id[3 * static_cast<std::size_t>(half[k].tri) + half[k].local] = out->num_edges;
      ++out->num_edges;
    }
    i = j;
  }
  if (boundary + non_manifold + inconsistent == 0) return {};
  std::string msg = name + ": the surface is not closed and consistently oriented: ";
  msg += std::to_string(boundary) + " boundary edges (used by one triangle" +
         (boundary ? "; e.g. " + boundary_example : std::string()) + "), ";
  msg += std::to_string(non_manifold) + " non-manifold edges (used by more than two triangles" +
         (non_manifold ? "; e.g. " + non_manifold_example : std::string()) + "), ";
  msg += std::to_string(inconsistent) + " edges used twice in the same direction (inconsistent orientation" +
         (inconsistent ? "; e.g. " + inconsistent_example : std::string()) + ")";
  msg += ". A signed distance map needs a watertight mesh whose every edge is shared by exactly two "
         "triangles running it in opposite directions";
  return InvalidArgument(std::move(msg));
}

// Connected parts (triangles sharing a vertex) and the volume each encloses, about the bounding box's
// centre for accuracy: out->part and out->part_volume; refuses a surface or part enclosing no volume.
Status PartVolumes(const TriangleMesh& mesh, const std::string& name, Pseudonormals* out) {
  const int32_t nt = static_cast<int32_t>(mesh.triangles.size());
  const internal::MeshParts parts = internal::ConnectedParts(mesh);
  out->part = parts.of_triangle;
  out->part_volume.assign(static_cast<std::size_t>(parts.count), 0.0);
  const auto bounds = MeshBounds(mesh);
  const Vec3 centre = 0.5 * (bounds[0] + bounds[1]);
  double volume = 0.0;
  for (int32_t t = 0; t < nt; ++t) {
    const auto& tri = mesh.triangles[t];
    const int32_t part = out->part[t];
    const double v6 = (mesh.vertices[tri[0]] - centre).dot((mesh.vertices[tri[1]] - centre).cross(mesh.vertices[tri[2]] - centre));
    out->part_volume[part] += v6 / 6.0;
    volume += v6 / 6.0;
  }
  const double longest = (bounds[1] - bounds[0]).maxCoeff();
  const double tiny = 1e-12 * longest * longest * longest;
  if (!(volume > tiny)) {
    if (volume < 0.0) {
      return InvalidArgument(name + ": the triangles face inward (signed volume " + std::to_string(volume) +
                             " < 0); reverse every triangle so that they run counter-clockwise seen from outside");
    }
    return InvalidArgument(name + ": the surface encloses no volume (signed volume " + std::to_string(volume) + ")");
  }
  for (std::size_t k = 0; k < out->part_volume.size(); ++k) {
    if (!(std::abs(out->part_volume[k]) > tiny)) {
      const int32_t t = static_cast<int32_t>(std::find(out->part.begin(), out->part.end(), static_cast<int32_t>(k)) - out->part.begin());
      return InvalidArgument(name + ": the connected part holding triangle " + std::to_string(t) +
                             " encloses no volume (signed volume " + std::to_string(out->part_volume[k]) + ")");
    }
  }
  return {};
}

// Edge pseudonormals (the normalised sum of the two faces') and vertex pseudonormals (angle-weighted).
void EdgeAndVertexNormals(const TriangleMesh& mesh, Pseudonormals* out) {
  const int32_t nt = static_cast<int32_t>(mesh.triangles.size());
  out->edge.assign(out->face.size() * 3, Vec3::Zero());
  std::vector<Vec3> edge_sum(out->num_edges, Vec3::Zero());
  for (int32_t t = 0; t < nt; ++t) {
    for (int e = 0; e < 3; ++e) edge_sum[out->edge_id[3 * static_cast<std::size_t>(t) + e]] += out->face[t];
  }
  for (std::size_t k = 0; k < out->edge.size(); ++k) {
    const Vec3& s = edge_sum[out->edge_id[k]];
    const double len = s.norm();
    out->edge[k] = len > 1e-12 ? Vec3(s / len) : Vec3::Zero();
  }
  out->vertex.assign(mesh.vertices.size(), Vec3::Zero());
  for (int32_t t = 0; t < nt; ++t) {
    const auto& tri = mesh.triangles[t];
    for (int i = 0; i < 3; ++i) {
      const Vec3& v = mesh.vertices[tri[i]];
      const Vec3 e1 = mesh.vertices[tri[(i + 1) % 3]] - v, e2 = mesh.vertices[tri[(i + 2) % 3]] - v;
      const double angle = std::atan2(e1.cross(e2).norm(), e1.dot(e2));
      out->vertex[tri[i]] += angle * out->face[t];
    }
  }
  for (Vec3& n : out->vertex) {
    const double len = n.norm();
    n = len > 1e-12 ? Vec3(n / len) : Vec3::Zero();
  }
}

// Checks the surface is closed, consistently oriented, without zero-area triangles, and encloses a
// positive volume with no flat part; finds its connected parts; computes the pseudonormals.
Result<Pseudonormals> AnalyseSurface(const TriangleMesh& mesh, const std::string& name) {
  Pseudonormals out;
  if (Status s = FaceNormals(mesh, name, &out); !s.ok()) return s.error();
  if (Status s = PairEdges(mesh, name, &out); !s.ok()) return s.error();
  if (Status s = PartVolumes(mesh, name, &out); !s.ok()) return s.error();
  EdgeAndVertexNormals(mesh, &out);
  return out;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

// A closed part of the mesh with its own hierarchy, or the whole mesh (see SdfBuilder).
struct SdfPart {
  std::shared_ptr<const MeshModel> own;  // The part's hierarchy; null when it is the input model.
  const MeshModel* model = nullptr;
  std::vector<int32_t> to_mesh;          // Part triangle -> mesh triangle; empty for the input model.
  bool outward = true;                   // Encloses a positive volume (else a cavity's inward surface).

  int32_t MeshTriangle(int32_t leaf) const {
    const int32_t t = model->triangle_id(leaf);
    return to_mesh.empty() ? t : to_mesh[t];
  }
};

// What the parts say about one point.
struct PartsValue {
  double value = kInf;    // The map's value (see SdfBuilder).
  double nearest = kInf;  // Distance to the nearest triangle of the parts looked at.
  int32_t winding = 0;    // Their winding number: outward parts holding p, minus cavities holding p.
};

// Everything Build does, with access to the map's members.
//
// A mesh of one connected part is taken whole: each node holds its exact signed distance (the part
// must not intersect itself). A mesh of several parts (triangles connected through shared vertices)
// may have parts that overlap, as robot collision meshes often do, so that the closest triangle's
// pseudonormal no longer tells inside from outside. Each part then gets its own hierarchy, its exact
// distance d_c and its own inside test, and the parts' inside tests add up to the mesh's winding
// number w (+1 for each outward part holding p, -1 for each inward part, a cavity, holding p); p is
// inside when w >= 1. The value is
//  - all parts outward (a union of solids): min over parts of their signed distances; exact outside,
//    and inside minus the largest depth in one part, which is at most the true depth;
//  - some parts inward: sign(w) times the distance to the nearest triangle; inside, at most the true
//    depth, and outside at most the true distance when a part lies outside the solid.
// Both are 1-Lipschitz (the sign changes only across a surface, where the distance is 0), so the
// interpolation bound holds for them.
struct SdfBuilder {
  const MeshModel& model;
  const std::vector<SdfPart>& parts;
  const Pseudonormals& normals;
  SignedDistanceMap& map;
  double rounding = 0.0;  // Bound on the rounding of a closest point's coordinates.
  bool all_outward = true;

  // Signed distance at p to one part, given its closest hit there (the distance itself for an
  // unsigned map).
  double Signed(const Vec3& p, const SdfPart& part, const ClosestHit& hit, int64_t* fallbacks) const {
    const double d = std::sqrt(hit.d2);
    if (map.unsigned_) return d;
    const int32_t t = part.MeshTriangle(hit.leaf);
    Vec3 n;
    switch (hit.region) {
      case kFace: n = normals.face[t]; break;
      case kEdge01: n = normals.edge[3 * static_cast<std::size_t>(t) + 0]; break;
      case kEdge12: n = normals.edge[3 * static_cast<std::size_t>(t) + 1]; break;
      case kEdge20: n = normals.edge[3 * static_cast<std::size_t>(t) + 2]; break;
      default: n = normals.vertex[model.mesh().triangles[t][hit.region - kVertex0]]; break;
    }
    const double s = (p - hit.point).dot(n);
    if (std::abs(s) > kSignTrust * d + rounding) return s > 0 ? d : -d;
    ++*fallbacks;
    double omega = 0.0;
    const LeafTriangle* tris = part.model->leaf_triangles();
    for (int32_t k = 0; k < part.model->num_triangles(); ++k) {
      omega += internal::SolidAngle(p, tris[k].v[0], tris[k].v[1], tris[k].v[2]);
    }
    // The winding number omega / 4 pi of one closed part is 1 inside it and 0 outside when it faces
    // outward, -1 and 0 when it faces inward; a part taken whole adds its nested surfaces the same way.
    return std::abs(omega) > 2.0 * M_PI ? (part.outward ? -d : d) : (part.outward ? d : -d);
  }

  // The map's value at p from every part but `skip`. `seeds` holds each part's closest leaf at the
  // previous point, and is updated.
  PartsValue Value(const Vec3& p, std::vector<ClosestWalker>& walkers, std::vector<int32_t>& seeds,
                   int64_t* fallbacks, int32_t skip = -1) const {
    PartsValue out;
    for (std::size_t g = 0; g < parts.size(); ++g) {
      if (static_cast<int32_t>(g) == skip) continue;
      // A part whose box is no nearer than the nearest triangle so far does not hold p, so it changes
      // neither the winding number nor the nearest distance, nor (being positive there) the minimum.
      if (parts.size() > 1 && ObbDistanceSquared(parts[g].model->obb(0), p) >= out.nearest * out.nearest) continue;
      const ClosestHit hit = walkers[g].Find(p, seeds[g]);
      seeds[g] = hit.leaf;
      const double phi = Signed(p, parts[g], hit, fallbacks);
      out.value = std::min(out.value, phi);
      out.nearest = std::min(out.nearest, std::abs(phi));
      out.winding += parts[g].outward ? (phi < 0) : -(phi > 0);
    }
    if (!all_outward) out.value = out.winding >= 1 ? -out.nearest : out.nearest;
    return out;
  }

  std::vector<ClosestWalker> Walkers() const {
    std::vector<ClosestWalker> walkers;
    walkers.reserve(parts.size());
    for (const SdfPart& part : parts) walkers.emplace_back(*part.model);
    return walkers;
  }

  // Computes the nodes of z-slabs handed out by `next`.
  void Slabs(std::atomic<int32_t>* next, SdfBuildStats* stats) const {
    std::vector<ClosestWalker> walkers = Walkers();
    std::vector<int32_t> seeds(parts.size(), -1);
    int64_t fallbacks = 0;
    const int32_t nx = map.cells_[0] + 1, ny = map.cells_[1] + 1, nz = map.cells_[2] + 1;
    for (int32_t k = next->fetch_add(1); k < nz; k = next->fetch_add(1)) {
      for (int32_t j = 0; j < ny; ++j) {
        // Rows alternate direction so that each node's seed is its neighbour's closest triangle.
        const bool up = (j % 2) == 0;
        for (int32_t s = 0; s < nx; ++s) {
          const int32_t i = up ? s : nx - 1 - s;
          map.values_[static_cast<std::size_t>(i) + static_cast<std::size_t>(nx) * (j + static_cast<std::size_t>(ny) * k)] =
              Value(map.node_position(i, j, k), walkers, seeds, &fallbacks).value;
        }
      }
    }
    for (const ClosestWalker& w : walkers) {
      stats->box_tests += w.box_tests;
      stats->triangle_tests += w.triangle_tests;
    }
    stats->sign_fallbacks = fallbacks;
  }

  void ComputeNodes(int32_t threads) {
    std::atomic<int32_t> next{0};
    std::vector<SdfBuildStats> per(threads);
    std::vector<std::thread> pool;
    for (int32_t w = 1; w < threads; ++w) {
      try {
        pool.emplace_back([this, &next, &per, w] { Slabs(&next, &per[w]); });
      } catch (const std::system_error&) {
        break;  // No more threads: the ones running and this one finish the work.
      }
    }
    Slabs(&next, &per[0]);
    for (std::thread& th : pool) th.join();
    map.stats_.threads = static_cast<int32_t>(pool.size()) + 1;
    for (const SdfBuildStats& s : per) {
      map.stats_.box_tests += s.box_tests;
      map.stats_.triangle_tests += s.triangle_tests;
      map.stats_.sign_fallbacks += s.sign_fallbacks;
    }
  }

  // The part of each sample, while they are placed.
  std::vector<int32_t> sample_part_;
  int32_t current_part_ = 0;

  void AddSample(const Vec3& p, const Vec3& n) {
    map.samples_.push_back({p, n});
    sample_part_.push_back(current_part_);
  }

  // Vertices, edge points and area-uniform face points, triangle by triangle in leaf order (each vertex
  // and edge with the first triangle that has it), then their hierarchy.
  void PlaceSamples(double spacing) {
    const TriangleMesh& mesh = model.mesh();
    std::vector<char> vertex_done(mesh.vertices.size(), 0), edge_done(normals.num_edges, 0);
    const double inv_area = 1.0 / (spacing * spacing);
    // The golden-ratio (Kronecker) sequence fills the unit square evenly for any count.
    const double golden = 0.5 * (std::sqrt(5.0) - 1.0);
    double carry = 0.0;
    for (int32_t k = 0; k < model.num_triangles(); ++k) {
      const int32_t t = model.triangle_id(k);
      current_part_ = parts.size() > 1 ? normals.part[t] : 0;
      const auto& tri = mesh.triangles[t];
      const Vec3 a = mesh.vertices[tri[0]], b = mesh.vertices[tri[1]], c = mesh.vertices[tri[2]];
      for (int i = 0; i < 3; ++i) {
        if (vertex_done[tri[i]]) continue;
        vertex_done[tri[i]] = 1;
        AddSample(mesh.vertices[tri[i]], normals.vertex[tri[i]]);
      }
      for (int e = 0; e < 3; ++e) {
        const int32_t id = normals.edge_id[3 * static_cast<std::size_t>(t) + e];
        if (edge_done[id]) continue;
        edge_done[id] = 1;
        const Vec3& p0 = mesh.vertices[tri[e]];
        const Vec3& p1 = mesh.vertices[tri[(e + 1) % 3]];
        const int32_t pieces = static_cast<int32_t>(std::ceil((p1 - p0).norm() / spacing - 1e-9));
        for (int32_t s = 1; s < pieces; ++s) {
          const double u = static_cast<double>(s) / pieces;
          AddSample((1 - u) * p0 + u * p1, normals.edge[3 * static_cast<std::size_t>(t) + e]);
        }
      }
      carry += 0.5 * (b - a).cross(c - a).norm() * inv_area;
      const int32_t count = static_cast<int32_t>(std::floor(carry));
      carry -= count;
      for (int32_t s = 0; s < count; ++s) {
        double u = (s + 0.5) / count, v = (s + 0.5) * golden;
        v -= std::floor(v);
        if (u + v > 1.0) {
          u = 1.0 - u;
          v = 1.0 - v;
        }
        AddSample(a + u * (b - a) + v * (c - a), normals.face[t]);
      }
    }
    DropInternalSamples();
    map.samples_.shrink_to_fit();
    BuildSampleTree();
  }

  // With several parts, a sample lies on the solid's boundary only when crossing its own part's surface
  // there changes whether the winding number is >= 1: the other parts' winding w' must be 0 at a sample
  // of an outward part and 1 at a sample of an inward part. Others lie inside the solid (or in empty
  // space) and are dropped; samples where another part's surface passes too are kept.
  void DropInternalSamples() {
    if (parts.size() < 2) return;
    std::vector<ClosestWalker> walkers = Walkers();
    std::vector<int32_t> seeds(parts.size(), -1);
    int64_t fallbacks = 0;
    const double tolerance = 64 * rounding;
    std::size_t kept = 0;
    for (std::size_t k = 0; k < map.samples_.size(); ++k) {
      const SdfSample sample = map.samples_[k];
      const int32_t part = sample_part_[k];
      const PartsValue others = Value(sample.p_MS, walkers, seeds, &fallbacks, part);
      if (others.nearest <= tolerance || others.winding == (parts[part].outward ? 0 : 1)) map.samples_[kept++] = sample;
    }
    map.stats_.internal_samples_dropped = static_cast<int64_t>(map.samples_.size() - kept);
    map.samples_.resize(kept);
  }

  // A binary hierarchy over the samples: each node splits its run at the median along its box's longest
  // axis, down to kLeafSamples; the samples are reordered so that every node's run is contiguous.
  void BuildSampleTree() {
    std::vector<SdfSample>& samples = map.samples_;
    std::vector<SdfSampleNode>& tree = map.sample_tree_;
    tree.clear();
    if (samples.empty()) return;
    struct Task {
      int32_t node, begin, end, depth;
    };
    tree.emplace_back();
    std::vector<Task> stack{{0, 0, static_cast<int32_t>(samples.size()), 0}};
    while (!stack.empty()) {
      const Task task = stack.back();
      stack.pop_back();
      map.sample_tree_depth_ = std::max(map.sample_tree_depth_, task.depth);
      Aabb box;
      for (int32_t s = task.begin; s < task.end; ++s) box.Extend(samples[s].p_MS);
      const Vec3 centre = box.center();
      double r2 = 0.0;
      for (int32_t s = task.begin; s < task.end; ++s) r2 = std::max(r2, (samples[s].p_MS - centre).squaredNorm());
      SdfSampleNode& node = tree[task.node];
      node.bound = {centre, std::sqrt(r2) * (1 + 8 * kEps) + rounding};
      node.begin = task.begin;
      node.end = task.end;
      if (task.end - task.begin <= kLeafSamples) continue;
      int axis;
      (box.max - box.min).maxCoeff(&axis);
      const int32_t mid = task.begin + (task.end - task.begin) / 2;
      std::nth_element(samples.begin() + task.begin, samples.begin() + mid, samples.begin() + task.end,
                       [axis](const SdfSample& x, const SdfSample& y) { return x.p_MS[axis] < y.p_MS[axis]; });
      const int32_t left = static_cast<int32_t>(tree.size());
      tree[task.node].first_child = left;
      tree.resize(tree.size() + 2);
      stack.push_back({left + 1, mid, task.end, task.depth + 1});
      stack.push_back({left, task.begin, mid, task.depth + 1});
    }
    tree.shrink_to_fit();
  }
};

Result<std::shared_ptr<const SignedDistanceMap>> SignedDistanceMap::Build(const TriangleMesh& mesh, int32_t cells,
                                                                          const SdfBuildOptions& options,
                                                                          const std::string& name) {
  auto model = MeshModel::Build(mesh, {}, name);
  if (!model.ok()) return model.error();
  return Build(*model.value(), cells, options, name);
}

Result<std::shared_ptr<const SignedDistanceMap>> SignedDistanceMap::Build(const MeshModel& model, int32_t cells,
                                                                          const SdfBuildOptions& options,
                                                                          const std::string& name) {
  const auto start = std::chrono::steady_clock::now();
  if (cells < 2 || cells > kMaxCells) {
    return InvalidArgument(name + ": cells must be in [2, " + std::to_string(kMaxCells) + "], got " +
                           std::to_string(cells));
  }
  if (options.padding && !(std::isfinite(*options.padding) && *options.padding >= 0.0)) {
    return InvalidArgument(name + ": padding must be finite and >= 0, got " + FormatNumber(*options.padding));
  }
  if (options.sample_spacing && !(std::isfinite(*options.sample_spacing) && *options.sample_spacing > 0.0)) {
    return InvalidArgument(name + ": sample_spacing must be finite and > 0, got " +
                           std::to_string(*options.sample_spacing));
  }
  if (options.num_threads < 0) {
    return InvalidArgument(name + ": num_threads must be >= 0, got " + std::to_string(options.num_threads));
  }
  const TriangleMesh& mesh = model.mesh();
  // An unsigned map needs no closed surface, no normals and no parts.
  auto analysed = options.unsigned_distance ? Result<Pseudonormals>(Pseudonormals{}) : AnalyseSurface(mesh, name);
  if (!analysed.ok()) return analysed.error();
  const Pseudonormals& normals = analysed.value();

  auto map = std::shared_ptr<SignedDistanceMap>(new SignedDistanceMap());
  map->unsigned_ = options.unsigned_distance;
  const auto bounds = MeshBounds(mesh);
  map->mesh_box_.min = bounds[0];
  map->mesh_box_.max = bounds[1];
  const Vec3 extent = bounds[1] - bounds[0];
  const double longest = extent.maxCoeff();
  const double padding = options.padding.value_or(0.1 * longest);
  map->h_ = (longest + 2 * padding) / cells;
  if (!(map->h_ > 0.0) || !std::isfinite(map->h_)) {
    return InvalidArgument(name + ": the padded bounding box has no extent");
  }
  int64_t nodes = 1;
  for (int a = 0; a < 3; ++a) {
    const double want = (extent[a] + 2 * padding) / map->h_;
    const int32_t n = extent[a] == longest ? cells : std::max(1, static_cast<int32_t>(std::ceil(want * (1 - 1e-12))));
    map->cells_[a] = std::min(n, cells);
    nodes *= map->cells_[a] + 1;
  }
  if (nodes > kMaxNodes) {
    return Error{ErrorCode::kResourceExhausted, name + ": the grid would have " + std::to_string(nodes) +
                                                    " nodes, more than " + std::to_string(kMaxNodes)};
  }
  const Vec3 centre = 0.5 * (bounds[0] + bounds[1]);
  map->origin_ = centre - 0.5 * map->h_ * Vec3(map->cells_[0], map->cells_[1], map->cells_[2]);

  const double spacing = options.sample_spacing.value_or(map->h_);
  double area = 0.0, edge_length = 0.0;
  for (const auto& tri : mesh.triangles) {
    const Vec3 a = mesh.vertices[tri[0]], b = mesh.vertices[tri[1]], c = mesh.vertices[tri[2]];
    area += 0.5 * (b - a).cross(c - a).norm();
    edge_length += 0.5 * ((b - a).norm() + (c - b).norm() + (a - c).norm());
  }
  const double expected_samples =
      area / (spacing * spacing) + edge_length / spacing + 3.0 * static_cast<double>(mesh.triangles.size()) + 1.0;
  if (!(expected_samples <= static_cast<double>(kMaxSamples))) {
    return Error{ErrorCode::kResourceExhausted, name + ": sample_spacing " + std::to_string(spacing) +
                                                    " would place more than " + std::to_string(kMaxSamples) +
                                                    " surface samples"};
  }

  // Coordinates are at most `scale` in magnitude; a closest point and a node value round within a
  // few eps of it.
  const double scale = map->origin_.cwiseAbs().maxCoeff() + map->h_ * cells + longest;
  map->node_rounding_ = 128 * kEps * scale;
  map->values_.assign(static_cast<std::size_t>(nodes), 0.0);
  map->sample_spacing_ = spacing;

  // Parts taken one by one when there are several (see SdfBuilder).
  std::vector<SdfPart> parts;
  const int32_t num_parts = options.unsigned_distance ? 1 : static_cast<int32_t>(normals.part_volume.size());
  if (num_parts > 1) {
    std::vector<TriangleMesh> pieces(num_parts);
    parts.resize(num_parts);
    std::vector<int32_t> local(mesh.vertices.size(), -1);  // Vertex index in its part's piece.
    for (int32_t t = 0; t < static_cast<int32_t>(mesh.triangles.size()); ++t) {
      TriangleMesh& piece = pieces[normals.part[t]];
      std::array<int32_t, 3> tri;
      for (int i = 0; i < 3; ++i) {
        const int32_t v = mesh.triangles[t][i];
        if (local[v] < 0) {
          local[v] = static_cast<int32_t>(piece.vertices.size());
          piece.vertices.push_back(mesh.vertices[v]);
        }
        tri[i] = local[v];
      }
      piece.triangles.push_back(tri);
      parts[normals.part[t]].to_mesh.push_back(t);
    }
    for (int32_t g = 0; g < num_parts; ++g) {
      auto built = MeshModel::Build(std::move(pieces[g]), {}, name);
      if (!built.ok()) return built.error();
      parts[g].own = std::move(built).value();
      parts[g].model = parts[g].own.get();
      parts[g].outward = normals.part_volume[g] > 0.0;
    }
  } else {
    parts.resize(1);
    parts[0].model = &model;
  }
  map->stats_.parts = static_cast<int32_t>(parts.size());

  SdfBuilder builder{model, parts, normals, *map, 16 * kEps * scale,
                     std::all_of(parts.begin(), parts.end(), [](const SdfPart& part) { return part.outward; }),
                     /*sample_part_=*/{}, /*current_part_=*/0};
  int32_t threads = options.num_threads > 0 ? options.num_threads
                                            : std::max(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
  threads = std::min(threads, map->cells_[2] + 1);
  builder.ComputeNodes(threads);
  if (!options.unsigned_distance) builder.PlaceSamples(spacing);
  map->stats_.nodes = nodes;
  map->stats_.seconds = Seconds(start);
  return std::shared_ptr<const SignedDistanceMap>(std::move(map));
}

Aabb SignedDistanceMap::grid_box() const {
  Aabb box;
  box.min = origin_;
  box.max = origin_ + h_ * Vec3(cells_[0], cells_[1], cells_[2]);
  return box;
}

std::size_t SignedDistanceMap::memory_bytes() const {
  return sizeof(*this) + values_.capacity() * sizeof(double) + samples_.capacity() * sizeof(SdfSample) +
         sample_tree_.capacity() * sizeof(SdfSampleNode);
}

template <int kBound>
void SignedDistanceMap::Interpolate(const Vec3& q_M, double* value, Vec3* gradient_M, double* bound) const {
  const Vec3 u = (q_M - origin_) / h_;
  int32_t c[3];
  double t[3];
  for (int a = 0; a < 3; ++a) {
    // q is in the grid's box, so u is in [0, cells] up to rounding.
    c[a] = std::min(std::max(static_cast<int32_t>(std::floor(u[a])), 0), cells_[a] - 1);
    t[a] = std::min(std::max(u[a] - c[a], 0.0), 1.0);
  }
  const std::size_t sx = 1, sy = static_cast<std::size_t>(cells_[0] + 1),
                    sz = sy * static_cast<std::size_t>(cells_[1] + 1);
  const double* f = values_.data() + c[0] * sx + c[1] * sy + c[2] * sz;
  const double f000 = f[0], f100 = f[sx], f010 = f[sy], f110 = f[sx + sy];
  const double f001 = f[sz], f101 = f[sx + sz], f011 = f[sy + sz], f111 = f[sx + sy + sz];
  const double tx = t[0], ty = t[1], tz = t[2];
  const double f00 = f000 + tx * (f100 - f000), f10 = f010 + tx * (f110 - f010);
  const double f01 = f001 + tx * (f101 - f001), f11 = f011 + tx * (f111 - f011);
  const double f0 = f00 + ty * (f10 - f00), f1 = f01 + ty * (f11 - f01);
  const double v = f0 + tz * (f1 - f0);
  *value = v;
  const double inv_h = 1.0 / h_;
  const double gx = ((f100 - f000) * (1 - ty) + (f110 - f010) * ty) * (1 - tz) +
                    ((f101 - f001) * (1 - ty) + (f111 - f011) * ty) * tz;
  const double gy = (f10 - f00) * (1 - tz) + (f11 - f01) * tz;
  *gradient_M = Vec3(gx, gy, f1 - f0) * inv_h;
  if constexpr (kBound != kNoBound) {
    const double corner[8] = {f000, f100, f010, f110, f001, f101, f011, f111};
    // The nodes' rounding, then that of the interpolation and of the offsets r: at most 32 eps times
    // (|values| + h), which node_rounding_ (128 eps times the coordinates' scale) exceeds, since no
    // value exceeds the grid's diagonal.
    const double rounding = 2 * node_rounding_;
    double b = h_ * std::sqrt(tx * (1 - tx) + ty * (1 - ty) + tz * (1 - tz));
    if constexpr (kBound == kTightBound) {
      // Squared offsets to the corners along each axis, then the eight distances.
      const double sq[3][2] = {{tx * tx, (1 - tx) * (1 - tx)}, {ty * ty, (1 - ty) * (1 - ty)}, {tz * tz, (1 - tz) * (1 - tz)}};
      double r[8];
      for (int n = 0; n < 8; ++n) r[n] = sq[0][n & 1] + sq[1][(n >> 1) & 1] + sq[2][(n >> 2) & 1];
      for (int n = 0; n < 8; ++n) r[n] = h_ * std::sqrt(r[n]);
      double lo = -kInf, hi = kInf;
      for (int n = 0; n < 8; ++n) {
        lo = std::max(lo, corner[n] - r[n]);
        hi = std::min(hi, corner[n] + r[n]);
      }
      b = std::min(b, std::max(hi - v, v - lo));
    }
    *bound = b + rounding;
  }
}

double SignedDistanceMap::ValueAndGradient(const Vec3& p_MQ, Vec3* gradient_M) const {
  const Vec3 hi = origin_ + h_ * Vec3(cells_[0], cells_[1], cells_[2]);
  if ((p_MQ.array() >= origin_.array()).all() && (p_MQ.array() <= hi.array()).all()) {
    double value;
    Interpolate<kNoBound>(p_MQ, &value, gradient_M, nullptr);
    return value;
  }
  const SdfEvaluation e = EvaluateWith<kCheapBound>(p_MQ);
  *gradient_M = e.gradient_M;
  return e.value;
}

double SignedDistanceMap::Value(const Vec3& p_MQ) const {
  Vec3 g;
  return ValueAndGradient(p_MQ, &g);
}

Vec3 SignedDistanceMap::Gradient(const Vec3& p_MQ) const {
  Vec3 g;
  (void)ValueAndGradient(p_MQ, &g);
  return g;
}

template <int kBound>
SdfEvaluation SignedDistanceMap::EvaluateWith(const Vec3& p_MQ) const {
  SdfEvaluation out;
  if (!p_MQ.allFinite()) {
    out.value = kInf;
    out.error_bound = kInf;
    return out;
  }
  const Vec3 top = origin_ + h_ * Vec3(cells_[0], cells_[1], cells_[2]);
  const Vec3 q = p_MQ.cwiseMax(origin_).cwiseMin(top);
  double vq, bq;
  Vec3 gq;
  Interpolate<kBound>(q, &vq, &gq, &bq);
  if (q == p_MQ) {
    out = {vq, gq, bq, true};
    return out;
  }
  const Vec3 off = p_MQ - q;
  const double e = ScaledNorm(off);
  const Vec3 off_box = p_MQ - p_MQ.cwiseMax(mesh_box_.min).cwiseMin(mesh_box_.max);
  const double to_box = ScaledNorm(off_box);
  const double hi = vq + bq + e;
  const double lo = std::max(vq - bq - e, to_box);
  if (vq + e >= to_box) {
    out.value = vq + e;
    for (int a = 0; a < 3; ++a) out.gradient_M[a] = off[a] != 0.0 ? off[a] / e : gq[a];
  } else {
    out.value = to_box;
    out.gradient_M = off_box / to_box;
  }
  out.error_bound = std::max(hi - out.value, out.value - lo) * (1 + 4 * kEps);
  out.inside_grid = false;
  return out;
}

SdfEvaluation SignedDistanceMap::Evaluate(const Vec3& p_MQ) const { return EvaluateWith<kTightBound>(p_MQ); }

Result<SdfContactResult> SdfContacts(const SignedDistanceMap& a, const RigidTransform& X_WA,
                                     const SignedDistanceMap& b, const RigidTransform& X_WB,
                                     const SdfContactOptions& options) {
  if (Status s = ValidatePose(X_WA, "X_WA"); !s.ok()) return s.error();
  if (Status s = ValidatePose(X_WB, "X_WB"); !s.ok()) return s.error();
  if (!std::isfinite(options.margin)) {
    return InvalidArgument("SdfContacts: margin must be finite, got " + std::to_string(options.margin));
  }
  if (options.max_contacts < 1) {
    return InvalidArgument("SdfContacts: max_contacts must be >= 1, got " + std::to_string(options.max_contacts));
  }
  if (a.is_unsigned() || b.is_unsigned()) {
    return InvalidArgument("SdfContacts: an unsigned distance map has no inside (and no surface samples)");
  }
  const double margin = options.margin;
  SdfContactResult result;
  std::vector<SdfContact>& out = result.contacts;
  SdfContactStats& stats = result.stats;

  // Samples of `from` (pose X_WF) looked up in `in` (pose X_WI), through `from`'s sample hierarchy.
  // `sign` is +1 for samples of B in A's map (A's gradient points from A to B) and -1 for samples of A
  // in B's map.
  std::vector<int32_t> stack;
  stack.reserve(static_cast<std::size_t>(std::max(a.sample_tree_depth_, b.sample_tree_depth_)) + 2);
  const auto lookup = [&](const SignedDistanceMap& from, const RigidTransform& X_WF, const SignedDistanceMap& in,
                          const RigidTransform& X_WI, double sign, bool sample_of_b) {
    const std::vector<SdfSampleNode>& tree = from.sample_tree();
    const std::vector<SdfSample>& samples = from.samples();
    if (tree.empty()) return;
    const RigidTransform X_IF = RelativeTransform(X_WI, X_WF);
    stack.clear();
    stack.push_back(0);
    while (!stack.empty()) {
      const SdfSampleNode& node = tree[stack.back()];
      stack.pop_back();
      ++stats.nodes_tested;
      // The cheap bound first; the tight one only when it could prune where the cheap one did not.
      const Vec3 c_I = X_IF * node.bound.center;
      SdfEvaluation e = in.EvaluateWith<SignedDistanceMap::kCheapBound>(c_I);
      if (e.value - e.error_bound - node.bound.radius < margin && e.value - node.bound.radius >= margin) {
        e = in.EvaluateWith<SignedDistanceMap::kTightBound>(c_I);
      }
      if (e.value - e.error_bound - node.bound.radius >= margin) {
        ++stats.nodes_pruned;
        continue;
      }
      if (node.first_child >= 0) {
        stack.push_back(node.first_child + 1);
        stack.push_back(node.first_child);
        continue;
      }
      for (int32_t s = node.begin; s < node.end; ++s) {
        ++stats.samples_tested;
        const Vec3 p_I = X_IF * samples[s].p_MS;
        Vec3 g_I;
        const double value = in.ValueAndGradient(p_I, &g_I);
        if (!(value < margin)) continue;
        SdfContact c;
        c.p_W = X_WI * p_I;
        const double g = g_I.norm();
        // A flat interpolant (a medial point) has no direction; the sample's own normal stands in.
        c.normal_W = g > 1e-12 ? Vec3(sign * (X_WI.R * g_I) / g) : Vec3(-sign * (X_WF.R * samples[s].n_M));
        c.depth = -value;
        c.error_bound = in.Evaluate(p_I).error_bound;
        c.sample_of_b = sample_of_b;
        c.sample = s;
        out.push_back(c);
      }
    }
  };
  lookup(b, X_WB, a, X_WA, 1.0, true);
  lookup(a, X_WA, b, X_WB, -1.0, false);

  const auto deeper = [](const SdfContact& x, const SdfContact& y) {
    if (x.depth != y.depth) return x.depth > y.depth;
    if (x.sample_of_b != y.sample_of_b) return x.sample_of_b;
    return x.sample < y.sample;
  };
  if (out.size() > static_cast<std::size_t>(options.max_contacts)) {
    std::nth_element(out.begin(), out.begin() + options.max_contacts, out.end(), deeper);
    out.resize(options.max_contacts);
    result.truncated = true;
  }
  std::sort(out.begin(), out.end(), deeper);
  return result;
}

}  // namespace proximity::core
