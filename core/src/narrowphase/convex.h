#pragma once
/// @file
/// Convex shapes for the convex narrow phase (GJK, ISA-GJK): primitives with closed-form support
/// mappings, a triangle, and a convex polytope built once as the convex hull of points.
///
/// Every shape S lives in its own frame S. A support mapping returns, for a direction d_S in S, a point
/// p_SQ of the shape with d_S · p_SQ = max over the shape of d_S · x (exact up to rounding). Shapes that
/// are a smaller "core" swept by a ball (Sphere: a point; Capsule: a segment) also expose the core and the
/// ball's radius (the margin), so that GJK runs on the core and finishes in finitely many steps.
///
/// All calls are free functions overloaded on the shape type and resolved at compile time: GJK is
/// templated on the shapes and never makes a virtual call.

#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "narrowphase/bounding_volume.h"
#include "proximity/core/mesh/mesh.h"
#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"

namespace proximity::core {

// The primitives (Box, Sphere, Capsule, Cylinder, Cone) are the installed narrowphase/shapes.h.

/// A solid triangle (a, b, c) in its frame; used to test one mesh triangle against a convex shape
/// exactly. Zero-area triangles (segments, points) are allowed.
struct Triangle {
  Vec3 a = Vec3::Zero();
  Vec3 b = Vec3::Zero();
  Vec3 c = Vec3::Zero();
};

/// A face plane of a polytope in its frame S: points x with normal · x <= offset are inside; normal is
/// a unit vector pointing out of the polytope.
struct FacePlane {
  Vec3 normal = Vec3::UnitZ();
  double offset = 0.0;
};

/// The convex hull of a point set, built once (Qhull, triangulated output) and then immutable: vertices
/// p_SV, outward counter-clockwise triangles, edges, vertex adjacency and face planes. Support queries
/// hill-climb over the adjacency (SUPPORTHC) from a caller-cached start vertex. Flat input (all points
/// on a plane, a line or one point, within Qhull's precision) is rejected with kInvalidArgument: use
/// Triangle or Box for flat shapes.
class ConvexPolytope {
 public:
  /// Polytopes with at most this many vertices answer support queries by scanning all vertices.
  static constexpr int32_t kBruteForceMaxVertices = 16;

  /// Builds the hull of `points` (frame S). Errors (kInvalidArgument) for fewer than 4 points,
  /// non-finite coordinates or flat input; `name` appears in the messages.
  [[nodiscard]] static Result<std::shared_ptr<const ConvexPolytope>> Build(std::span<const Vec3> points,
                                                                           const std::string& name = "points");
  /// Builds the hull of a mesh's vertices (the triangles are ignored).
  [[nodiscard]] static Result<std::shared_ptr<const ConvexPolytope>> Build(const TriangleMesh& mesh,
                                                                           const std::string& name = "mesh");

  int32_t num_vertices() const { return static_cast<int32_t>(vertices_.size()); }
  int32_t num_faces() const { return static_cast<int32_t>(faces_.size()); }
  int32_t num_edges() const { return static_cast<int32_t>(edges_.size()); }

  /// Hull vertices p_SV; each is one of the input points.
  const std::vector<Vec3>& vertices() const { return vertices_; }
  /// For each hull vertex, the index of the input point it is.
  const std::vector<int32_t>& input_indices() const { return input_indices_; }
  /// Triangles of the hull surface, counter-clockwise seen from outside (coplanar facets are split
  /// into triangles, which may include slivers).
  const std::vector<std::array<int32_t, 3>>& faces() const { return faces_; }
  /// The plane of each face (same order as faces()); triangles of one planar facet share their plane.
  const std::vector<FacePlane>& face_planes() const { return face_planes_; }
  /// Each undirected edge of faces() once, smaller vertex index first.
  const std::vector<std::array<int32_t, 2>>& edges() const { return edges_; }
  /// Vertices sharing an edge with vertex v.
  std::span<const int32_t> neighbors(int32_t v) const {
    return {adjacency_.data() + adjacency_start_[v],
            static_cast<size_t>(adjacency_start_[v + 1] - adjacency_start_[v])};
  }
  /// The surface as a closed, outward TriangleMesh in frame S.
  TriangleMesh ToMesh() const;
  /// Bytes held by this object (its arrays' capacities), for memory accounting.
  int64_t MemoryBytes() const {
    return static_cast<int64_t>(sizeof(*this) + vertices_.capacity() * sizeof(Vec3) +
                                input_indices_.capacity() * sizeof(int32_t) + faces_.capacity() * sizeof(faces_[0]) +
                                face_planes_.capacity() * sizeof(FacePlane) +
                                plane_blocks_.capacity() * sizeof(double) +
                                edges_.capacity() * sizeof(edges_[0]) +
                                (adjacency_start_.capacity() + adjacency_.capacity()) * sizeof(int32_t));
  }

  /// Index of a vertex maximising d_S · p_SV: hill climbing over the adjacency from `start`, or a scan
  /// for small polytopes. An out-of-range start (-1 for a cold query) starts from the best of the
  /// extreme vertices along 14 fixed directions, precomputed at build. Exact up to rounding: a local
  /// maximum of a linear function over a convex polytope's edge graph is a global one. `*steps`, when
  /// given, receives the vertices whose value was evaluated.
  int32_t SupportVertex(const Vec3& d_S, int32_t start, int32_t* steps = nullptr) const;
  /// Index of a vertex maximising d_S · p_SV by scanning every vertex (the oracle for tests).
  int32_t SupportVertexBruteForce(const Vec3& d_S) const;
  /// How deep p_S lies inside: the least distance to a face plane (metres), negative outside.
  double Depth(const Vec3& p_S) const;

 private:
  ConvexPolytope() = default;
  void BuildPlaneBlocks();

  /// Planes per block of plane_blocks_ (one AVX-512 register of doubles).
  static constexpr int kBlock = 8;

  std::vector<Vec3> vertices_;
  std::vector<int32_t> input_indices_;
  std::vector<std::array<int32_t, 3>> faces_;
  std::vector<FacePlane> face_planes_;
  std::vector<double> plane_blocks_;  // Depth's copy of the distinct face planes (BuildPlaneBlocks).
  std::vector<std::array<int32_t, 2>> edges_;
  std::vector<int32_t> adjacency_start_;
  std::vector<int32_t> adjacency_;
  std::array<int32_t, 14> seeds_{};  // Extreme vertices along the axes and cube diagonals.
};

/// Whether `mesh` is the surface of `hull` (the hull of its vertices): every vertex lies within
/// `tolerance` (metres) of the hull's boundary, and the triangles' area equals the hull's to a relative
/// 1e-4 (nearly flat patches may be triangulated differently), so no triangle cuts through the inside.
/// Then, for anything apart from the hull, the distance to the mesh is the distance to the hull: the
/// hull answers distance queries for the mesh. (The hull's distance bounds the mesh's from below in any
/// case: the mesh lies inside it.)
bool IsHullSurface(const TriangleMesh& mesh, const ConvexPolytope& hull, double tolerance);

/// How far (metres) `mesh` lies inside the boundary of `hull` (the hull of its vertices) when the mesh
/// is a sealed surface close to that boundary, +infinity when it is not. Sealed: every triangle lies
/// within the returned gap of one face's plane, every edge joins exactly two triangles in opposite
/// directions, the triangles form one connected piece that holds every hull vertex, and the surface winds
/// once around the hull vertices' mean, which lies deeper than twice the gap. Then every point deeper
/// inside the hull than the gap is inside the mesh and each hull vertex is on the mesh, so a hull test
/// can prove that such a mesh's surface meets another's without walking their triangles (CLEAR does).
double SealedHullGap(const TriangleMesh& mesh, const ConvexPolytope& hull);

// Core support mappings. CoreSupport(shape, d_S, &vertex) returns a support point of the shape's core
// (the shape itself when its margin is 0) for direction d_S in frame S; `*vertex` is read as the start
// of a polytope's hill climbing and set to the index of the returned vertex for shapes with finitely
// many candidate points (polytope, box, triangle, capsule end), else -1. Margin(shape) is the radius of
// the ball swept over the core.

inline Vec3 CoreSupport(const Sphere& s, const Vec3&, int32_t* vertex) {
  *vertex = 0;
  return s.center;
}
inline double Margin(const Sphere& s) { return s.radius; }

inline Vec3 CoreSupport(const Capsule& c, const Vec3& d_S, int32_t* vertex) {
  const bool top = d_S.z() >= 0.0;
  *vertex = top ? 1 : 0;
  return Vec3(0.0, 0.0, top ? c.half_length : -c.half_length);
}
inline double Margin(const Capsule& c) { return c.radius; }

inline Vec3 CoreSupport(const Box& b, const Vec3& d_S, int32_t* vertex) {
  const bool x = d_S.x() >= 0.0, y = d_S.y() >= 0.0, z = d_S.z() >= 0.0;
  *vertex = (x ? 1 : 0) | (y ? 2 : 0) | (z ? 4 : 0);
  return Vec3(x ? b.half_extents.x() : -b.half_extents.x(), y ? b.half_extents.y() : -b.half_extents.y(),
              z ? b.half_extents.z() : -b.half_extents.z());
}
inline double Margin(const Box&) { return 0.0; }

inline Vec3 CoreSupport(const Cylinder& c, const Vec3& d_S, int32_t* vertex) {
  *vertex = -1;
  const double z = d_S.z() >= 0.0 ? c.half_length : -c.half_length;
  const double s = std::sqrt(d_S.x() * d_S.x() + d_S.y() * d_S.y());
  if (!(s > 0.0)) return Vec3(0.0, 0.0, z);
  const double k = c.radius / s;
  return Vec3(k * d_S.x(), k * d_S.y(), z);
}
inline double Margin(const Cylinder&) { return 0.0; }

inline Vec3 CoreSupport(const Cone& c, const Vec3& d_S, int32_t* vertex) {
  const double s = std::sqrt(d_S.x() * d_S.x() + d_S.y() * d_S.y());
  // Apex value h d_z against the best rim point's value r |d_xy| - h d_z.
  if (c.half_height * d_S.z() >= c.radius * s - c.half_height * d_S.z()) {
    *vertex = 0;
    return Vec3(0.0, 0.0, c.half_height);
  }
  *vertex = -1;
  if (!(s > 0.0)) return Vec3(0.0, 0.0, -c.half_height);
  const double k = c.radius / s;
  return Vec3(k * d_S.x(), k * d_S.y(), -c.half_height);
}
inline double Margin(const Cone&) { return 0.0; }

inline Vec3 CoreSupport(const Triangle& t, const Vec3& d_S, int32_t* vertex) {
  const double da = d_S.dot(t.a), db = d_S.dot(t.b), dc = d_S.dot(t.c);
  if (da >= db && da >= dc) {
    *vertex = 0;
    return t.a;
  }
  if (db >= dc) {
    *vertex = 1;
    return t.b;
  }
  *vertex = 2;
  return t.c;
}
inline double Margin(const Triangle&) { return 0.0; }

inline Vec3 CoreSupport(const ConvexPolytope& p, const Vec3& d_S, int32_t* vertex) {
  *vertex = p.SupportVertex(d_S, *vertex);
  return p.vertices()[*vertex];
}
inline double Margin(const ConvexPolytope&) { return 0.0; }

/// Support point p_SQ of the whole shape (core plus margin) for direction d_S; exact up to rounding.
/// A zero direction returns a point of the shape.
template <class Shape>
Vec3 Support(const Shape& shape, const Vec3& d_S) {
  int32_t vertex = -1;
  Vec3 p = CoreSupport(shape, d_S, &vertex);
  const double r = Margin(shape);
  if (r > 0.0) {
    const double n = d_S.norm();
    if (n > 0.0) p += (r / n) * d_S;
  }
  return p;
}

/// Every convex shape type, and every ordered pair of them (X(A, B) for the 7 x 7 pairs). The heavier
/// convex algorithms (ComputeSignedDistance, ComputeContacts, ComputeContactRegion) are compiled once for
/// each pair in the core library (epa_instances.cc, contact_instances.cc); their headers declare those
/// instances extern so that other translation units call them instead of compiling their own copies.
/// GJK stays inline: it runs inside hierarchy walks and tight loops, where inlining it into the caller
/// (constant options, no cache) is worth a third of a small query. Other shape types still instantiate
/// the templates where they are used.
#define PROX_CONVEX_PAIRS_WITH(X, A) \
  X(A, Sphere) X(A, Box) X(A, Capsule) X(A, Cylinder) X(A, Cone) X(A, Triangle) X(A, ConvexPolytope)
#define PROX_FOR_EACH_CONVEX_PAIR(X)                                                                      \
  PROX_CONVEX_PAIRS_WITH(X, Sphere) PROX_CONVEX_PAIRS_WITH(X, Box) PROX_CONVEX_PAIRS_WITH(X, Capsule)    \
  PROX_CONVEX_PAIRS_WITH(X, Cylinder) PROX_CONVEX_PAIRS_WITH(X, Cone) PROX_CONVEX_PAIRS_WITH(X, Triangle) \
  PROX_CONVEX_PAIRS_WITH(X, ConvexPolytope)

}  // namespace proximity::core
