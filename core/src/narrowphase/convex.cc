#include "narrowphase/convex.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

extern "C" {
#include <libqhull_r/qhull_ra.h>
}

#include "narrowphase/mesh_topology.h"

// Depth's GCC vectors stay inside it (no call passes one), so the ABI note GCC gives for them when the
// target's registers are narrower does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace proximity::core {
namespace {

// The convex hull comes from Qhull (Barber, Dobkin, Huhdanpaa 1996, "The Quickhull algorithm for
// convex hulls"), reentrant API, with triangulated output ("Qt") and Qhull's default merging of
// nearly coplanar facets, so every facet is convex within Qhull's precision.
struct QhullOutput {
  std::vector<int32_t> vertex_point;               // hull vertex -> input index
  std::vector<std::array<int32_t, 3>> triangles;   // in input indices
  std::vector<FacePlane> planes;
};

Result<QhullOutput> RunQhull(std::span<const Vec3> points, const std::string& name) {
  std::vector<coordT> coords(points.size() * 3);
  for (size_t i = 0; i < points.size(); ++i) {
    coords[3 * i + 0] = points[i].x();
    coords[3 * i + 1] = points[i].y();
    coords[3 * i + 2] = points[i].z();
  }
  char* err_text = nullptr;
  size_t err_size = 0;
  FILE* err = open_memstream(&err_text, &err_size);
  qhT qh_storage;
  qhT* qh = &qh_storage;
  QHULL_LIB_CHECK
  qh_zero(qh, err);
  char flags[] = "qhull Qt";
  const int exit_code = qh_new_qhull(qh, 3, static_cast<int>(points.size()), coords.data(), False, flags,
                                     nullptr, err);
  QhullOutput out;
  if (exit_code == 0) {
    facetT* facet;
    FORALLfacets {
      setT* ordered = qh_facet3vertex(qh, facet);
      std::array<int32_t, 3> tri{-1, -1, -1};
      int k = 0;
      vertexT* vertex;
      vertexT** vertexp;
      FOREACHvertex_(ordered) {
        if (k < 3) tri[k] = qh_pointid(qh, vertex->point);
        ++k;
      }
      qh_settempfree(qh, &ordered);
      if (k != 3) continue;  // Unreachable with "Qt": every facet is a triangle.
      FacePlane plane;
      plane.normal = Vec3(facet->normal[0], facet->normal[1], facet->normal[2]);
      plane.offset = -facet->offset;
      const Vec3 n = (points[tri[1]] - points[tri[0]]).cross(points[tri[2]] - points[tri[0]]);
      if (n.dot(plane.normal) < 0.0) std::swap(tri[1], tri[2]);
      out.triangles.push_back(tri);
      out.planes.push_back(plane);
    }
    vertexT* vertex;
    FORALLvertices { out.vertex_point.push_back(qh_pointid(qh, vertex->point)); }
  }
  qh_freeqhull(qh, !qh_ALL);
  int curlong = 0, totlong = 0;
  qh_memfreeshort(qh, &curlong, &totlong);
  std::fclose(err);
  std::string message(err_text ? err_text : "");
  std::free(err_text);
  if (exit_code != 0) {
    const bool flat = message.find("QH6154") != std::string::npos || message.find("flat") != std::string::npos ||
                      message.find("QH6214") != std::string::npos;
    const size_t eol = message.find('\n');
    return InvalidArgument("convex hull of " + name + ": " +
                           (flat ? std::string("the points are flat (coplanar, collinear or coincident); a "
                                               "ConvexPolytope needs a solid hull (use Triangle or Box for flat "
                                               "shapes)")
                                 : "Qhull failed: " + message.substr(0, eol)));
  }
  if (out.triangles.size() < 4) return InvalidArgument("convex hull of " + name + ": degenerate hull");
  return out;
}

}  // namespace

Result<std::shared_ptr<const ConvexPolytope>> ConvexPolytope::Build(const TriangleMesh& mesh,
                                                                    const std::string& name) {
  return Build(std::span<const Vec3>(mesh.vertices), name);
}

Result<std::shared_ptr<const ConvexPolytope>> ConvexPolytope::Build(std::span<const Vec3> points,
                                                                    const std::string& name) {
  if (points.size() < 4) {
    return InvalidArgument("convex hull of " + name + ": needs at least 4 points, got " +
                           std::to_string(points.size()));
  }
  if (points.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 4)) {
    return InvalidArgument("convex hull of " + name + ": too many points");
  }
  for (size_t i = 0; i < points.size(); ++i) {
    if (!points[i].allFinite()) {
      return InvalidArgument("convex hull of " + name + ": point " + std::to_string(i) + " is not finite");
    }
  }
  auto hull = RunQhull(points, name);
  if (!hull.ok()) return hull.error();
  QhullOutput& q = hull.value();

  std::shared_ptr<ConvexPolytope> poly(new ConvexPolytope());
  std::vector<int32_t> point_to_vertex(points.size(), -1);
  // Number vertices in input order so that the result does not depend on Qhull's internal order.
  std::sort(q.vertex_point.begin(), q.vertex_point.end());
  for (int32_t p : q.vertex_point) {
    point_to_vertex[p] = static_cast<int32_t>(poly->vertices_.size());
    poly->vertices_.push_back(points[p]);
    poly->input_indices_.push_back(p);
  }
  poly->faces_.reserve(q.triangles.size());
  for (const auto& t : q.triangles) {
    std::array<int32_t, 3> f{point_to_vertex[t[0]], point_to_vertex[t[1]], point_to_vertex[t[2]]};
    if (f[0] < 0 || f[1] < 0 || f[2] < 0) return Error{ErrorCode::kInternal, "convex hull of " + name + ": facet vertex missing"};
    poly->faces_.push_back(f);
  }
  poly->face_planes_ = std::move(q.planes);
  poly->BuildPlaneBlocks();

  for (const auto& f : poly->faces_) {
    for (int k = 0; k < 3; ++k) {
      const int32_t a = f[k], b = f[(k + 1) % 3];
      poly->edges_.push_back({std::min(a, b), std::max(a, b)});
    }
  }
  std::sort(poly->edges_.begin(), poly->edges_.end());
  poly->edges_.erase(std::unique(poly->edges_.begin(), poly->edges_.end()), poly->edges_.end());

  const int32_t n = poly->num_vertices();
  poly->adjacency_start_.assign(n + 1, 0);
  for (const auto& e : poly->edges_) {
    ++poly->adjacency_start_[e[0] + 1];
    ++poly->adjacency_start_[e[1] + 1];
  }
  for (int32_t v = 0; v < n; ++v) poly->adjacency_start_[v + 1] += poly->adjacency_start_[v];
  poly->adjacency_.resize(poly->adjacency_start_[n]);
  std::vector<int32_t> fill(poly->adjacency_start_.begin(), poly->adjacency_start_.end() - 1);
  for (const auto& e : poly->edges_) {
    poly->adjacency_[fill[e[0]]++] = e[1];
    poly->adjacency_[fill[e[1]]++] = e[0];
  }
  int32_t k = 0;
  for (int axis = 0; axis < 3; ++axis) {
    for (double sign : {-1.0, 1.0}) poly->seeds_[k++] = poly->SupportVertexBruteForce(sign * Vec3::Unit(axis));
  }
  for (int corner = 0; corner < 8; ++corner) {
    const Vec3 d(corner & 1 ? 1.0 : -1.0, corner & 2 ? 1.0 : -1.0, corner & 4 ? 1.0 : -1.0);
    poly->seeds_[k++] = poly->SupportVertexBruteForce(d);
  }
  return std::shared_ptr<const ConvexPolytope>(std::move(poly));
}

TriangleMesh ConvexPolytope::ToMesh() const { return TriangleMesh{vertices_, faces_}; }

int32_t ConvexPolytope::SupportVertexBruteForce(const Vec3& d_S) const {
  int32_t best = 0;
  double best_value = d_S.dot(vertices_[0]);
  const int32_t n = num_vertices();
  for (int32_t i = 1; i < n; ++i) {
    const double value = d_S.dot(vertices_[i]);
    if (value > best_value) {
      best_value = value;
      best = i;
    }
  }
  return best;
}

void ConvexPolytope::BuildPlaneBlocks() {
  // Each distinct plane once (a planar facet's triangles share theirs), in blocks of kBlock:
  // normals' x, y, z, then offsets; the last block is filled with planes no point is beyond.
  std::vector<FacePlane> planes = face_planes_;
  const auto key = [](const FacePlane& f) {
    return std::array<double, 4>{f.normal.x(), f.normal.y(), f.normal.z(), f.offset};
  };
  std::sort(planes.begin(), planes.end(), [&](const FacePlane& a, const FacePlane& b) { return key(a) < key(b); });
  planes.erase(std::unique(planes.begin(), planes.end(),
                           [&](const FacePlane& a, const FacePlane& b) { return key(a) == key(b); }),
               planes.end());
  const size_t blocks = (planes.size() + kBlock - 1) / kBlock;
  plane_blocks_.assign(blocks * 4 * kBlock, 0.0);
  for (size_t i = 0; i < blocks * kBlock; ++i) {
    double* block = plane_blocks_.data() + (i / kBlock) * 4 * kBlock + i % kBlock;
    if (i >= planes.size()) {
      block[3 * kBlock] = std::numeric_limits<double>::infinity();
      continue;
    }
    for (int d = 0; d < 3; ++d) block[d * kBlock] = planes[i].normal[d];
    block[3 * kBlock] = planes[i].offset;
  }
}

double ConvexPolytope::Depth(const Vec3& p_S) const {
  // A block's gaps as one GCC vector (one instruction per step on AVX-512, several narrower ones
  // elsewhere), a running minimum per slot (CLEAR's contact proofs call this on every colliding pair
  // of sealed meshes).
  typedef double Block __attribute__((vector_size(sizeof(double) * kBlock)));
  const auto load = [](const double* x) {
    Block out;
    __builtin_memcpy(&out, x, sizeof(out));
    return out;
  };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Block d = Block{} + kInf;
  const double x = p_S.x(), y = p_S.y(), z = p_S.z();
  const double* block = plane_blocks_.data();
  const double* const end = block + plane_blocks_.size();
  for (; block != end; block += 4 * kBlock) {
    const Block gap = load(block + 3 * kBlock) -
                      (load(block) * x + load(block + kBlock) * y + load(block + 2 * kBlock) * z);
    d = gap < d ? gap : d;
  }
  double out = kInf;
  for (int k = 0; k < kBlock; ++k) out = std::min(out, d[k]);
  return out;
}

int32_t ConvexPolytope::SupportVertex(const Vec3& d_S, int32_t start, int32_t* steps) const {
  const int32_t n = num_vertices();
  if (n <= kBruteForceMaxVertices) {
    if (steps) *steps = n;
    return SupportVertexBruteForce(d_S);
  }
  // Hill climbing over the edge graph (SUPPORTHC; van den Bergen, "Collision Detection in Interactive
  // 3D Environments", 2004): move to the first neighbour that improves until none does.
  int32_t current = start;
  double value;
  int32_t evaluated;
  if (start >= 0 && start < n) {
    value = d_S.dot(vertices_[current]);
    evaluated = 1;
  } else {
    current = seeds_[0];
    value = d_S.dot(vertices_[current]);
    for (int32_t seed : seeds_) {
      const double seed_value = d_S.dot(vertices_[seed]);
      if (seed_value > value) {
        value = seed_value;
        current = seed;
      }
    }
    evaluated = static_cast<int32_t>(seeds_.size());
  }
  const Vec3* v = vertices_.data();
  const int32_t* adjacency = adjacency_.data();
  const int32_t* adjacency_start = adjacency_start_.data();
  bool moved = true;
  while (moved) {
    moved = false;
    const int32_t end = adjacency_start[current + 1];
    for (int32_t k = adjacency_start[current]; k < end; ++k) {
      const int32_t next = adjacency[k];
      const double next_value = d_S.dot(v[next]);
      ++evaluated;
      if (next_value > value) {
        value = next_value;
        current = next;
        moved = true;
        break;
      }
    }
  }
  if (steps) *steps = evaluated;
  return current;
}

bool IsHullSurface(const TriangleMesh& mesh, const ConvexPolytope& hull, double tolerance) {
  // Every vertex on the hull's boundary: within `tolerance` of some face plane (Qhull merges nearly
  // coplanar facets, so a vertex may sit a little off its merged plane).
  for (const Vec3& p : mesh.vertices) {
    if (hull.Depth(p) > tolerance) return false;
  }
  // And no triangle cutting through the inside or doubling the surface: the areas agree.
  double mesh_area = 0.0;
  for (const auto& t : mesh.triangles) {
    const Vec3& p0 = mesh.vertices[t[0]];
    mesh_area += 0.5 * (mesh.vertices[t[1]] - p0).cross(mesh.vertices[t[2]] - p0).norm();
  }
  const std::vector<Vec3>& hv = hull.vertices();
  double hull_area = 0.0;
  for (const auto& f : hull.faces()) hull_area += 0.5 * (hv[f[1]] - hv[f[0]]).cross(hv[f[2]] - hv[f[0]]).norm();
  return std::abs(mesh_area - hull_area) <= 1e-4 * hull_area;
}

namespace internal {

MeshParts ConnectedParts(const TriangleMesh& mesh) {
  std::vector<int32_t> parent(mesh.vertices.size());
  for (size_t v = 0; v < parent.size(); ++v) parent[v] = static_cast<int32_t>(v);
  const auto root = [&](int32_t v) {  // path halving
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
  };
  for (const std::array<int32_t, 3>& t : mesh.triangles) {
    for (int k = 1; k < 3; ++k) parent[root(t[k])] = root(t[0]);
  }
  MeshParts parts;
  std::vector<int32_t> part_of_root(mesh.vertices.size(), -1);
  parts.of_triangle.reserve(mesh.triangles.size());
  for (const std::array<int32_t, 3>& t : mesh.triangles) {
    int32_t& part = part_of_root[root(t[0])];
    if (part < 0) part = parts.count++;
    parts.of_triangle.push_back(part);
  }
  return parts;
}

bool HullVerticesOnTriangles(const TriangleMesh& mesh, const ConvexPolytope& hull) {
  std::vector<char> used(mesh.vertices.size(), 0);
  for (const std::array<int32_t, 3>& t : mesh.triangles) {
    for (int32_t k : t) used[static_cast<size_t>(k)] = 1;
  }
  return std::all_of(hull.input_indices().begin(), hull.input_indices().end(), [&](int32_t i) {
    return i >= 0 && static_cast<size_t>(i) < used.size() && used[static_cast<size_t>(i)] != 0;
  });
}

}  // namespace internal

// The most plane evaluations SealedHullGap spends on one mesh (some tens of milliseconds): a robot
// link's mesh takes a few million at most.
constexpr int64_t kSealedHullWorkCap = 50'000'000;

double SealedHullGap(const TriangleMesh& mesh, const ConvexPolytope& hull) {
  constexpr double kNotSealed = std::numeric_limits<double>::infinity();
  const std::vector<FacePlane>& planes = hull.face_planes();
  const auto nv = static_cast<int32_t>(mesh.vertices.size());
  if (mesh.triangles.empty() || planes.empty()) return kNotSealed;
  // The gap must stay below half the depth of the hull vertices' mean (see the winding test below).
  Vec3 centre = Vec3::Zero();
  for (const Vec3& v : hull.vertices()) centre += v;
  centre /= static_cast<double>(hull.num_vertices());
  const double limit = 0.5 * hull.Depth(centre);
  if (!(limit > 0.0)) return kNotSealed;
  // Work is counted in plane evaluations and capped: a mesh that would take more (a hostile one, or
  // one far larger than a robot link) is taken as not sealed, which only costs CLEAR its shortcut.
  int64_t work = 0;
  const auto over_budget = [&](size_t evaluations) {
    work += static_cast<int64_t>(evaluations);
    return work > kSealedHullWorkCap;
  };
  // A vertex deeper than that ends it cheaply (the gap is at least every vertex's depth); the vertices
  // are visited in sixteen interleaved sweeps, so that a mesh with deep parts meets one early.
  constexpr size_t kSweeps = 16;
  for (size_t sweep = 0; sweep < kSweeps; ++sweep) {
    for (size_t v = sweep; v < mesh.vertices.size(); v += kSweeps) {
      if (over_budget(planes.size()) || hull.Depth(mesh.vertices[v]) >= limit) return kNotSealed;
    }
  }
  // How far each triangle lies off the face plane it is nearest. The planes of the hull faces at the
  // triangle's corners are tried first (on a convex mesh one of them is the triangle's own); the rest
  // only while those leave the triangle farther off than the gap so far.
  std::vector<int32_t> faces_start(static_cast<size_t>(hull.num_vertices()) + 1, 0), faces_at;
  for (const auto& f : hull.faces()) {
    for (int32_t h : f) ++faces_start[static_cast<size_t>(h) + 1];
  }
  for (size_t h = 0; h < static_cast<size_t>(hull.num_vertices()); ++h) faces_start[h + 1] += faces_start[h];
  faces_at.resize(static_cast<size_t>(faces_start.back()));
  {
    std::vector<int32_t> fill(faces_start.begin(), faces_start.end() - 1);
    for (int32_t f = 0; f < hull.num_faces(); ++f) {
      for (int32_t h : hull.faces()[f]) faces_at[static_cast<size_t>(fill[h]++)] = f;
    }
  }
  std::vector<int32_t> hull_vertex(static_cast<size_t>(nv), -1);
  for (int32_t h = 0; h < hull.num_vertices(); ++h) {
    const int32_t i = hull.input_indices()[h];
    if (i >= 0 && i < nv) hull_vertex[i] = h;
  }
  double gap = 0.0;
  const auto off_plane = [&](const std::array<int32_t, 3>& t, const FacePlane& f) {
    double worst = 0.0;
    for (int32_t k : t) worst = std::max(worst, std::abs(f.offset - f.normal.dot(mesh.vertices[k])));
    return worst;
  };
  for (const std::array<int32_t, 3>& t : mesh.triangles) {
    double off = std::numeric_limits<double>::infinity();
    for (int32_t k : t) {
      const int32_t h = hull_vertex[k];
      if (h < 0) continue;
      if (over_budget(static_cast<size_t>(faces_start[h + 1] - faces_start[h]))) return kNotSealed;
      for (int32_t e = faces_start[h]; e < faces_start[h + 1]; ++e) off = std::min(off, off_plane(t, planes[faces_at[e]]));
    }
    if (off > gap) {
      if (over_budget(planes.size())) return kNotSealed;
      for (size_t f = 0; f < planes.size() && off > gap; ++f) off = std::min(off, off_plane(t, planes[f]));
    }
    if (off >= limit) return kNotSealed;
    gap = std::max(gap, off);
  }
  // Closed and consistently oriented: every directed edge once, and its reverse once.
  std::vector<int64_t> edges;
  edges.reserve(3 * mesh.triangles.size());
  for (const std::array<int32_t, 3>& t : mesh.triangles) {
    for (int k = 0; k < 3; ++k) edges.push_back(int64_t{t[k]} * nv + t[(k + 1) % 3]);
  }
  std::sort(edges.begin(), edges.end());
  if (std::adjacent_find(edges.begin(), edges.end()) != edges.end()) return kNotSealed;
  for (int64_t e : edges) {
    const int64_t a = e / nv, b = e % nv;
    if (a == b || !std::binary_search(edges.begin(), edges.end(), b * nv + a)) return kNotSealed;
  }
  // One connected piece holding every hull vertex.
  if (internal::ConnectedParts(mesh).count != 1 || !internal::HullVerticesOnTriangles(mesh, hull)) return kNotSealed;
  // Winding once around the hull vertices' mean, deeper than the gap: then around every point deeper
  // than the gap, since the surface stays within the gap of the boundary.
  double angle = 0.0;
  for (const std::array<int32_t, 3>& t : mesh.triangles) {
    angle += internal::SolidAngle(centre, mesh.vertices[t[0]], mesh.vertices[t[1]], mesh.vertices[t[2]]);
  }
  const double winding = angle / (4.0 * M_PI);
  if (!(std::abs(std::abs(winding) - 1.0) < 1e-6)) return kNotSealed;
  return gap;
}

}  // namespace proximity::core
