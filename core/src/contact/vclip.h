#pragma once
/// @file
/// V-Clip: closest features and exact distance between convex polyhedra, warm-started from the feature
/// pair of the previous query, and a cheap upper bound on the distance by alternating nearest vertices.
///
/// Algorithm: Mirtich, "V-Clip: Fast and Robust Polyhedral Collision Detection", ACM Transactions on
/// Graphics 17(3), 1998. Every feature X (vertex, edge, face) of a polyhedron owns a Voronoi region
/// VR(X), an intersection of half-spaces ("Voronoi planes"), each plane shared with one neighbouring
/// feature: vertex-edge planes (perpendicular to an edge through one of its ends) and face-edge planes
/// (through an edge, perpendicular to one of its faces). A feature pair (X on A, Y on B) whose closest
/// points lie in each other's regions is a globally closest pair (Mirtich's Theorem 1). Otherwise one
/// feature moves to a neighbour so that the distance between the features strictly decreases, or stays
/// the same while the dimension of a feature drops; edges are clipped against regions, and derivative
/// checks at the clip points pick the neighbour. Interpenetration is detected in the vertex-face and
/// edge-face states. Coherent queries (small motions) typically need 0 to 2 transitions.
///
/// Frames: each polyhedron lives in its own frame (A, B) and is posed in world W by X_WA, X_WB; the
/// results are in W. Units are those of the vertices (metres).

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "narrowphase/convex.h"
#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"

namespace proximity::core {

/// What kind of feature a VClipFeature names.
enum class VClipFeatureType : int8_t {
  kVertex = 0,
  kEdge = 1,
  kFace = 2,
};

/// A vertex, edge or face of a VClipPolyhedron, by index into vertices(), edges() or faces().
/// index < 0 means "no feature".
struct VClipFeature {
  VClipFeatureType type = VClipFeatureType::kVertex;
  int32_t index = -1;

  bool valid() const { return index >= 0; }
  friend bool operator==(const VClipFeature&, const VClipFeature&) = default;
};

/// One Voronoi plane of a feature's region, in the polyhedron's frame S: points x_S with
/// normal · x_S - offset >= 0 are on the region's side; `neighbor` owns the region on the other side.
/// normal is a unit vector.
struct VClipVoronoiPlane {
  Vec3 normal = Vec3::UnitX();
  double offset = 0.0;
  VClipFeature neighbor;

  /// Signed distance of x_S from the plane: positive on the region's side.
  double Evaluate(const Vec3& x_S) const { return normal.dot(x_S) - offset; }
};

/// A convex polyhedron as V-Clip needs it, built once from a ConvexPolytope and then immutable: the
/// Qhull triangles that share a plane are merged back into polygonal faces, giving a boundary
/// representation (vertices, edges with their two vertices and two faces, faces with counter-clockwise
/// vertex and edge loops and planes) and the Voronoi planes of every feature, all in flat arrays.
///
/// Vertices are the polytope's vertices, in the same order (so vertex indices agree with the
/// ConvexPolytope's). Two triangles are merged when they share an edge and their planes agree within
/// the build tolerance; a group whose union is not a simple polygon with every vertex on its boundary
/// stays split into its triangles (still a valid polyhedron, with flat edges between coplanar faces).
class VClipPolyhedron {
 public:
  /// A vertex p_SV and the range of its incident edges in vertex_edges(); its Voronoi planes are
  /// planes()[plane_begin, plane_begin + edge_end - edge_begin), one per incident edge, in the same
  /// order.
  struct Vertex {
    Vec3 p = Vec3::Zero();
    int32_t edge_begin = 0;
    int32_t edge_end = 0;
    int32_t plane_begin = 0;
  };
  /// An edge from `tail` to `head`. `left` is the face whose counter-clockwise loop runs tail -> head,
  /// `right` the face whose loop runs head -> tail. Its four Voronoi planes are
  /// planes()[plane_begin + k]: k = 0 vertex-edge plane at the tail (neighbour: tail), 1 at the head
  /// (neighbour: head), 2 face-edge plane of the left face (neighbour: left), 3 of the right face.
  struct Edge {
    int32_t tail = -1;
    int32_t head = -1;
    int32_t left = -1;
    int32_t right = -1;
    int32_t plane_begin = 0;
  };
  /// A face: plane (unit outward normal, offset; points with normal · x <= offset are inside) and its
  /// counter-clockwise loop, loop_vertices()/loop_edges()[loop_begin, loop_end): loop edge k runs from
  /// loop vertex k to loop vertex k + 1. Its Voronoi side planes are planes()[plane_begin + k], one per
  /// loop edge (neighbour: that edge); the region is the prism above and below the face.
  struct Face {
    FacePlane plane;
    int32_t loop_begin = 0;
    int32_t loop_end = 0;
    int32_t plane_begin = 0;
  };

  /// Polytopes with at most this many vertices answer support queries by scanning every vertex.
  static constexpr int32_t kBruteForceMaxVertices = ConvexPolytope::kBruteForceMaxVertices;

  /// Builds the V-Clip representation of `hull` (frame S). Triangles are merged into one face when
  /// they share an edge and either come from one Qhull facet (they share its plane exactly) or their
  /// unit normals differ by at most `coplanar_tolerance` (radians, roughly) and each one's vertices lie
  /// within coplanar_tolerance times the hull's size (largest |coordinate|) of the other's plane.
  /// Errors only on a broken hull (kInternal), which a ConvexPolytope never is; a negative or non-finite
  /// tolerance is kInvalidArgument.
  [[nodiscard]] static Result<std::shared_ptr<const VClipPolyhedron>> Build(const ConvexPolytope& hull,
                                                                            double coplanar_tolerance = 1e-12);

  int32_t num_vertices() const { return static_cast<int32_t>(vertices_.size()); }
  int32_t num_edges() const { return static_cast<int32_t>(edges_.size()); }
  int32_t num_faces() const { return static_cast<int32_t>(faces_.size()); }

  const std::vector<Vertex>& vertices() const { return vertices_; }
  const std::vector<Edge>& edges() const { return edges_; }
  const std::vector<Face>& faces() const { return faces_; }
  /// Incident edges of every vertex (ranges in Vertex).
  const std::vector<int32_t>& vertex_edges() const { return vertex_edges_; }
  /// Face loops (ranges in Face).
  const std::vector<int32_t>& loop_vertices() const { return loop_vertices_; }
  const std::vector<int32_t>& loop_edges() const { return loop_edges_; }
  /// Every feature's Voronoi planes (ranges in Vertex, Edge, Face).
  const std::vector<VClipVoronoiPlane>& planes() const { return planes_; }

  /// Position p_SV of vertex v.
  const Vec3& position(int32_t v) const { return vertices_[v].p; }
  /// The end of edge e that is not v (precondition: v is an end of e).
  int32_t OtherEnd(int32_t e, int32_t v) const { return edges_[e].tail == v ? edges_[e].head : edges_[e].tail; }
  /// The Voronoi planes of feature f (precondition: f is a valid feature of this polyhedron).
  std::span<const VClipVoronoiPlane> planes(VClipFeature f) const;
  /// Whether f names a feature of this polyhedron (type and index in range).
  bool Contains(VClipFeature f) const;
  /// Mean of the vertices, p_SC (the cold start looks from one centre to the other).
  const Vec3& centroid() const { return centroid_; }
  /// Largest |coordinate| of any vertex (the scale for tolerances).
  double scale() const { return scale_; }

  /// Index of a vertex maximising d_S · p_SV: hill climbing over the edges from `start` (any
  /// out-of-range value starts from vertex 0), or a scan for small polyhedra. Exact up to rounding.
  int32_t SupportVertex(const Vec3& d_S, int32_t start) const;

 private:
  VClipPolyhedron() = default;
  // Build's steps: faces (planes and loops) and edges from the hull's face loops (the polyhedron's
  // faces, coplanar triangles merged: loops[i] is made of triangles[i]); each vertex's incident edges;
  // the Voronoi planes.
  Status AddFacesAndEdges(const ConvexPolytope& hull, const std::vector<std::vector<int32_t>>& loops,
                          const std::vector<std::vector<int32_t>>& triangles);
  Status LinkVertexEdges();
  Status AddVoronoiPlanes();

  std::vector<Vertex> vertices_;
  std::vector<Edge> edges_;
  std::vector<Face> faces_;
  std::vector<int32_t> vertex_edges_;
  std::vector<int32_t> loop_vertices_;
  std::vector<int32_t> loop_edges_;
  std::vector<VClipVoronoiPlane> planes_;
  Vec3 centroid_ = Vec3::Zero();
  double scale_ = 0.0;
};

// Support mapping, so that GJK runs on a VClipPolyhedron (the fallback of VClipDistance).
inline Vec3 CoreSupport(const VClipPolyhedron& p, const Vec3& d_S, int32_t* vertex) {
  *vertex = p.SupportVertex(d_S, *vertex);
  return p.position(*vertex);
}
inline double Margin(const VClipPolyhedron&) { return 0.0; }

/// Warm-start state the caller owns, one per polyhedron pair (per thread): the last closest (or
/// penetrating) feature pair. A default-constructed cache means a cold start. Any pair of features of
/// the two polyhedra is a correct start (only the number of transitions depends on it); a feature
/// that does not exist in the polyhedron it is used with (wrong type or index, e.g. a cache carried
/// over from another pair) is ignored and the query starts cold.
struct VClipCache {
  VClipFeature feature_a;
  VClipFeature feature_b;

  friend bool operator==(const VClipCache&, const VClipCache&) = default;
};

/// Limits for VClipDistance.
struct VClipOptions {
  /// Transitions allowed before the query gives up on V-Clip and answers with GJK (flagged in the
  /// result). <= 0 selects 256 + 2 (num_vertices(a) + num_vertices(b)). V-Clip does not cycle on
  /// well-formed input; the cap only guards against rounding in degenerate configurations.
  int32_t max_transitions = 0;
};

/// The answer of VClipDistance. Frames: witnesses in W.
struct VClipResult {
  /// Distance between the polyhedra (metres), exact up to rounding; 0 when penetrating.
  double distance = 0.0;
  /// The polyhedra share a point: interpenetration was detected (edge-face crossing, or a vertex
  /// inside the other polyhedron), or they touch (distance 0).
  bool penetrating = false;
  /// Closest points p_WA on A and p_WB on B, |p_WA - p_WB| = distance. When penetrating both are one
  /// point common to both polyhedra (up to rounding).
  Vec3 p_WA = Vec3::Zero();
  Vec3 p_WB = Vec3::Zero();
  /// The final feature pair: the closest features, or the penetrating vertex-face / edge-face pair.
  /// After a GJK fallback, two vertices near the closest points.
  VClipFeature feature_a;
  VClipFeature feature_b;
  /// Feature updates made (state transitions).
  int32_t transitions = 0;
  /// Voronoi-plane and face-plane evaluations, including the local-minimum scans, and the segment
  /// distances of the boundary search when an edge misses a face's prism.
  int32_t plane_tests = 0;
  /// Full scans of a polyhedron's face planes (Mirtich's local-minimum handling in the vertex-face
  /// state), each O(number of faces).
  int32_t local_min_scans = 0;
  /// The query started from a default feature pair (empty or invalid cache).
  bool cold_start = false;
  /// The transition cap was hit and the answer (distance, penetrating, witnesses) comes from
  /// GjkDistance instead; the features are then its closest vertices.
  bool fell_back_to_gjk = false;
};

/// Distance between convex polyhedra a (pose X_WA) and b (pose X_WB) by V-Clip, with closest features,
/// witness points in W, penetration detection and the work done. `cache` (optional) warm-starts from
/// the previous query of the pair and receives this query's final feature pair. A cold start begins at
/// the vertices extreme along the line between the centroids. Poses must be finite rigid transforms; a
/// non-finite pose gives distance 0, penetrating = true and no features (never NaN).
VClipResult VClipDistance(const VClipPolyhedron& a, const RigidTransform& X_WA, const VClipPolyhedron& b,
                          const RigidTransform& X_WB, VClipCache* cache = nullptr, const VClipOptions& options = {});

// ---- Approximate distance by alternating nearest vertices ------------------------------------------

/// Warm-start state for NearestVertexPair: the last vertex pair (-1 or out of range: cold).
struct VertexPairCache {
  int32_t vertex_a = -1;
  int32_t vertex_b = -1;
};

/// The answer of NearestVertexPair. Frames: points in W.
struct VertexPairResult {
  /// |p_WA - p_WB| for the final vertex pair: an upper bound on the distance between the polytopes
  /// (a real pair of points of A and B), never below it, also when they overlap.
  double distance = 0.0;
  int32_t vertex_a = -1;  ///< Index into a.vertices().
  int32_t vertex_b = -1;  ///< Index into b.vertices().
  Vec3 p_WA = Vec3::Zero();
  Vec3 p_WB = Vec3::Zero();
  int32_t rounds = 0;        ///< Alternations (a nearest-vertex search on B then on A).
  int32_t evaluations = 0;   ///< Vertex distances evaluated.
};

/// A cheap upper bound on the distance between convex polytopes a (pose X_WA) and b (pose X_WB): from a
/// vertex of A, the nearest vertex of B by steepest descent over B's edge graph
/// (ConvexPolytope::neighbors), then the nearest vertex of A to that one, and so on until neither
/// changes. Each change strictly shortens the pair, so it terminates.
///
/// Guarantee: the returned pair (i, j) is a mutual local minimum: no neighbour of j in B's graph is
/// strictly closer to vertex i than j, and no neighbour of i in A's graph is strictly closer to vertex
/// j than i (for polytopes with at most ConvexPolytope::kBruteForceMaxVertices vertices the search
/// scans all vertices, so j is a nearest vertex of B to i outright, and likewise i). It is not in
/// general the closest vertex pair, nor the distance between the polytopes: distance over a vertex
/// graph has local minima that are not global (elongated shapes); on a polytope whose vertices lie on
/// one sphere the distance from a point is linear in the vertex and every local minimum is global. The
/// cold start takes the vertices extreme along the line between the frame origins; `cache` (optional)
/// supplies the start and receives the final pair. A non-finite pose gives distance = +infinity and no
/// vertices (never NaN); the cache is then left untouched.
VertexPairResult NearestVertexPair(const ConvexPolytope& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                                   const RigidTransform& X_WB, VertexPairCache* cache = nullptr);

}  // namespace proximity::core
