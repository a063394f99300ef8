#include "contact/vclip.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>

#include "narrowphase/gjk.h"
#include "narrowphase/triangle.h"

namespace proximity::core {
namespace {

constexpr VClipFeature VertexFeature(int32_t i) { return {VClipFeatureType::kVertex, i}; }
constexpr VClipFeature EdgeFeature(int32_t i) { return {VClipFeatureType::kEdge, i}; }
constexpr VClipFeature FaceFeature(int32_t i) { return {VClipFeatureType::kFace, i}; }

// ---- Build helpers ------------------------------------------------------------------------------------

// Union-find over triangles.
int32_t FindRoot(std::vector<int32_t>& parent, int32_t i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

uint64_t DirectedKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

// Whether triangles s and t (sharing an edge) lie in one plane within the tolerances.
bool Coplanar(const ConvexPolytope& hull, int32_t s, int32_t t, double angle_tolerance, double distance_tolerance) {
  const FacePlane& ps = hull.face_planes()[s];
  const FacePlane& pt = hull.face_planes()[t];
  if (ps.normal == pt.normal && ps.offset == pt.offset) return true;  // Triangles of one Qhull facet.
  if ((ps.normal - pt.normal).norm() > angle_tolerance) return false;
  for (int k = 0; k < 3; ++k) {
    const Vec3& vs = hull.vertices()[hull.faces()[s][k]];
    const Vec3& vt = hull.vertices()[hull.faces()[t][k]];
    if (std::abs(pt.normal.dot(vs) - pt.offset) > distance_tolerance) return false;
    if (std::abs(ps.normal.dot(vt) - ps.offset) > distance_tolerance) return false;
  }
  return true;
}

// The boundary loop of a group of triangles (counter-clockwise seen from outside), or an empty vector
// when the group is not a disk with every vertex on one simple boundary loop.
std::vector<int32_t> GroupLoop(const ConvexPolytope& hull, const std::vector<int32_t>& triangles,
                               const std::vector<int32_t>& group_of, int32_t group,
                               const std::unordered_map<uint64_t, int32_t>& triangle_of_edge) {
  std::unordered_map<int32_t, int32_t> next;  // Boundary half-edge a -> b, keyed by a.
  for (int32_t t : triangles) {
    const auto& f = hull.faces()[t];
    for (int k = 0; k < 3; ++k) {
      const int32_t a = f[k], b = f[(k + 1) % 3];
      const auto twin = triangle_of_edge.find(DirectedKey(b, a));
      if (twin == triangle_of_edge.end()) return {};
      if (group_of[twin->second] == group) continue;  // Interior edge of the group.
      if (!next.emplace(a, b).second) return {};      // The boundary touches itself at a.
    }
  }
  if (next.size() < 3) return {};
  std::vector<int32_t> loop;
  loop.reserve(next.size());
  int32_t v = next.begin()->first;
  do {
    loop.push_back(v);
    const auto it = next.find(v);
    if (it == next.end() || loop.size() > next.size()) return {};
    v = it->second;
  } while (v != loop.front());
  if (loop.size() != next.size()) return {};  // Several boundary loops.
  // A triangulated disk whose vertices all lie on its boundary has (loop size - 2) triangles.
  if (triangles.size() + 2 != loop.size()) return {};
  return loop;
}

// ---- Query ---------------------------------------------------------------------------------------------

enum class Outcome { kContinue, kDone, kPenetrating };

// A segment clipped against Voronoi planes: the parameters [lo, hi] of the part on the region's side
// of every plane so far, and the neighbours of the planes that set them (invalid: not clipped).
struct Clip {
  double lo = 0.0;
  double hi = 1.0;
  VClipFeature n_lo;
  VClipFeature n_hi;
  bool excluded = false;  // No part of the segment is in the region.
  bool simple = false;    // Excluded by a single plane (both ends beyond it); its neighbour is n_lo.
};

// Clips the segment t -> h (in the planes' frame) against `planes`, narrowing *c. Returns false when the
// segment is excluded.
bool ClipSegment(const Vec3& t, const Vec3& h, std::span<const VClipVoronoiPlane> planes, Clip* c,
                 int32_t* tests) {
  for (const VClipVoronoiPlane& plane : planes) {
    const double st = plane.Evaluate(t), sh = plane.Evaluate(h);
    *tests += 2;
    if (st < 0.0 && sh < 0.0) {
      c->n_lo = c->n_hi = plane.neighbor;
      c->excluded = c->simple = true;
      return false;
    }
    if (st < 0.0) {
      const double lambda = st / (st - sh);
      if (lambda > c->lo) {
        c->lo = lambda;
        c->n_lo = plane.neighbor;
        if (c->lo > c->hi) {
          c->excluded = true;
          return false;
        }
      }
    } else if (sh < 0.0) {
      const double lambda = st / (st - sh);
      if (lambda < c->hi) {
        c->hi = lambda;
        c->n_hi = plane.neighbor;
        if (c->hi < c->lo) {
          c->excluded = true;
          return false;
        }
      }
    }
  }
  return true;
}

// The state machine for one query. Side 0 is A, side 1 is B; X_[s] maps points of the other side's
// frame into side s's frame (X_[0] = X_AB, X_[1] = X_BA).
class Machine {
 public:
  Machine(const VClipPolyhedron& a, const VClipPolyhedron& b, const RigidTransform& X_AB)
      : poly_{&a, &b}, X_{X_AB, X_AB.inverse()} {}

  VClipFeature feature(int s) const { return f_[s]; }
  void set_feature(int s, VClipFeature f) { f_[s] = f; }
  int32_t plane_tests() const { return plane_tests_; }
  int32_t local_min_scans() const { return local_min_scans_; }
  // The common point found on penetration, in the frame of side contact_side().
  int contact_side() const { return contact_side_; }
  const Vec3& contact() const { return contact_; }

  Outcome Step() {
    const VClipFeatureType ta = f_[0].type, tb = f_[1].type;
    using T = VClipFeatureType;
    if (ta == T::kVertex) {
      if (tb == T::kVertex) return VertexVertex();
      if (tb == T::kEdge) return VertexEdge(0);
      return VertexFace(0);
    }
    if (ta == T::kEdge) {
      if (tb == T::kVertex) return VertexEdge(1);
      if (tb == T::kEdge) return EdgeEdge();
      return EdgeFace(0);
    }
    if (tb == T::kVertex) return VertexFace(1);
    return EdgeFace(1);  // Face-face never occurs: VClipDistance replaces it before the loop.
  }

  // Closest points of the final (non-penetrating) feature pair, each in its own frame.
  void Witnesses(Vec3* p_A, Vec3* p_B) const {
    Vec3 p[2];
    if (f_[0].type == VClipFeatureType::kEdge && f_[1].type == VClipFeatureType::kEdge) {
      const VClipPolyhedron::Edge& e0 = poly_[0]->edges()[f_[0].index];
      const VClipPolyhedron::Edge& e1 = poly_[1]->edges()[f_[1].index];
      Vec3 c0, c1;
      SegmentSegmentDistanceSquared(poly_[0]->position(e0.tail), poly_[0]->position(e0.head),
                                    X_[0] * poly_[1]->position(e1.tail), X_[0] * poly_[1]->position(e1.head), &c0,
                                    &c1);
      p[0] = c0;
      p[1] = X_[1] * c1;
    } else {
      // One side is a vertex (or both are): it is its own closest point; project it onto the other.
      const int s = f_[0].type == VClipFeatureType::kVertex ? 0 : 1;
      const int o = 1 - s;
      p[s] = poly_[s]->position(f_[s].index);
      const Vec3 x = X_[o] * p[s];
      const VClipPolyhedron& Q = *poly_[o];
      if (f_[o].type == VClipFeatureType::kVertex) {
        p[o] = Q.position(f_[o].index);
      } else if (f_[o].type == VClipFeatureType::kEdge) {
        const VClipPolyhedron::Edge& e = Q.edges()[f_[o].index];
        const Vec3& t = Q.position(e.tail);
        const Vec3 u = Q.position(e.head) - t;
        const double lambda = std::clamp(u.dot(x - t) / u.squaredNorm(), 0.0, 1.0);
        p[o] = t + lambda * u;
      } else {
        const FacePlane& plane = Q.faces()[f_[o].index].plane;
        p[o] = x - (plane.normal.dot(x) - plane.offset) * plane.normal;
      }
    }
    *p_A = p[0];
    *p_B = p[1];
  }

 private:
  // Vertex-vertex: each vertex must lie in the other's region (its vertex-edge planes).
  Outcome VertexVertex() {
    for (int p = 0; p < 2; ++p) {
      const int q = 1 - p;
      const Vec3 x = X_[p] * poly_[q]->position(f_[q].index);
      VClipFeature worst_neighbor;
      double worst = 0.0;
      for (const VClipVoronoiPlane& plane : poly_[p]->planes(f_[p])) {
        ++plane_tests_;
        const double s = plane.Evaluate(x);
        if (s < worst) {
          worst = s;
          worst_neighbor = plane.neighbor;
        }
      }
      if (worst_neighbor.valid()) {
        f_[p] = worst_neighbor;
        return Outcome::kContinue;
      }
    }
    return Outcome::kDone;
  }

  // Vertex on side p, edge on the other side q.
  Outcome VertexEdge(int p) {
    const int q = 1 - p;
    const VClipPolyhedron& P = *poly_[p];
    const VClipPolyhedron& Q = *poly_[q];
    const int32_t vi = f_[p].index;
    const Vec3 v_Q = X_[q] * P.position(vi);
    const std::span<const VClipVoronoiPlane> edge_planes = Q.planes(f_[q]);
    // The vertex against the edge's region: vertex-edge planes first, then face-edge planes.
    for (int k = 0; k < 2; ++k) {
      ++plane_tests_;
      if (edge_planes[k].Evaluate(v_Q) < 0.0) {
        f_[q] = edge_planes[k].neighbor;
        return Outcome::kContinue;
      }
    }
    const double s2 = edge_planes[2].Evaluate(v_Q), s3 = edge_planes[3].Evaluate(v_Q);
    plane_tests_ += 2;
    if (s2 < 0.0 || s3 < 0.0) {
      f_[q] = s2 <= s3 ? edge_planes[2].neighbor : edge_planes[3].neighbor;
      return Outcome::kContinue;
    }
    // The edge against the vertex's region, then derivative checks at the clip points.
    const VClipPolyhedron::Edge& e = Q.edges()[f_[q].index];
    const Vec3 t = X_[p] * Q.position(e.tail), h = X_[p] * Q.position(e.head);
    Clip c;
    ClipSegment(t, h, P.planes(f_[p]), &c, &plane_tests_);
    if (c.simple) {
      f_[p] = c.n_lo;
      return Outcome::kContinue;
    }
    const Vec3 u = h - t;
    const Vec3& v = P.position(vi);
    if (c.n_lo.valid() && u.dot(t + c.lo * u - v) > 0.0) {
      f_[p] = c.n_lo;
      return Outcome::kContinue;
    }
    if (c.n_hi.valid() && u.dot(t + c.hi * u - v) < 0.0) {
      f_[p] = c.n_hi;
      return Outcome::kContinue;
    }
    if (c.excluded) {
      // Only reachable through rounding (the derivative is increasing along the edge): move on.
      f_[p] = c.n_lo.valid() ? c.n_lo : c.n_hi;
      return Outcome::kContinue;
    }
    return Outcome::kDone;
  }

  // Vertex on side p, face on the other side q.
  Outcome VertexFace(int p) {
    const int q = 1 - p;
    const VClipPolyhedron& P = *poly_[p];
    const VClipPolyhedron& Q = *poly_[q];
    const int32_t vi = f_[p].index;
    const Vec3 v_Q = X_[q] * P.position(vi);
    // The side plane of the face's prism that the vertex violates most.
    VClipFeature worst_neighbor;
    double worst = 0.0;
    for (const VClipVoronoiPlane& plane : Q.planes(f_[q])) {
      ++plane_tests_;
      const double s = plane.Evaluate(v_Q);
      if (s < worst) {
        worst = s;
        worst_neighbor = plane.neighbor;
      }
    }
    if (worst_neighbor.valid()) {
      f_[q] = worst_neighbor;
      return Outcome::kContinue;
    }
    // An edge at the vertex that leads towards the face's plane.
    const FacePlane& plane = Q.faces()[f_[q].index].plane;
    const double dv = plane.normal.dot(v_Q) - plane.offset;
    const VClipPolyhedron::Vertex& vertex = P.vertices()[vi];
    for (int32_t k = vertex.edge_begin; k < vertex.edge_end; ++k) {
      const int32_t e = P.vertex_edges()[k];
      const Vec3 w_Q = X_[q] * P.position(P.OtherEnd(e, vi));
      const double dw = plane.normal.dot(w_Q) - plane.offset;
      ++plane_tests_;
      if ((dv > 0.0 && dw < dv) || (dv < 0.0 && dw > dv)) {
        f_[p] = EdgeFeature(e);
        return Outcome::kContinue;
      }
    }
    if (dv > 0.0) return Outcome::kDone;
    // The vertex is on or below the face's plane and no edge leads up to it: a local minimum of the
    // distance. Either some face plane of Q has the vertex strictly outside (continue from the one
    // it is farthest outside), or the vertex is inside Q (Mirtich's handleLocalMin).
    ++local_min_scans_;
    double best = -std::numeric_limits<double>::infinity();
    int32_t best_face = f_[q].index;
    for (int32_t g = 0; g < Q.num_faces(); ++g) {
      const FacePlane& pg = Q.faces()[g].plane;
      const double s = pg.normal.dot(v_Q) - pg.offset;
      if (s > best) {
        best = s;
        best_face = g;
      }
    }
    plane_tests_ += Q.num_faces();
    if (best > 0.0) {
      f_[q] = FaceFeature(best_face);
      return Outcome::kContinue;
    }
    contact_side_ = q;
    contact_ = v_Q;
    return Outcome::kPenetrating;
  }

  // Sign of the derivative, along direction u, of the distance from x to the region-owning edge at a
  // point x on the boundary plane shared with neighbour n (a vertex or a face of side p).
  double Derivative(int p, VClipFeature n, const Vec3& x, const Vec3& u) const {
    const VClipPolyhedron& P = *poly_[p];
    if (n.type == VClipFeatureType::kVertex) return u.dot(x - P.position(n.index));
    const FacePlane& plane = P.faces()[n.index].plane;
    const double d = plane.normal.dot(x) - plane.offset;
    const double un = u.dot(plane.normal);
    return d > 0.0 ? un : (d < 0.0 ? -un : 0.0);
  }

  // The edge of side q against the region of the edge of side p: vertex-edge planes, then face-edge
  // planes, each followed by derivative checks. Continue when side p's feature was updated.
  Outcome EdgeAgainstEdgeRegion(int p) {
    const int q = 1 - p;
    const VClipPolyhedron& P = *poly_[p];
    const VClipPolyhedron& Q = *poly_[q];
    const VClipPolyhedron::Edge& eq = Q.edges()[f_[q].index];
    const Vec3 t = X_[p] * Q.position(eq.tail), h = X_[p] * Q.position(eq.head);
    const Vec3 u = h - t;
    const std::span<const VClipVoronoiPlane> planes = P.planes(f_[p]);
    Clip c;
    for (int stage = 0; stage < 2; ++stage) {
      ClipSegment(t, h, planes.subspan(2 * stage, 2), &c, &plane_tests_);
      if (c.simple) {
        f_[p] = c.n_lo;
        return Outcome::kContinue;
      }
      if (c.n_lo.valid() && Derivative(p, c.n_lo, t + c.lo * u, u) > 0.0) {
        f_[p] = c.n_lo;
        return Outcome::kContinue;
      }
      if (c.n_hi.valid() && Derivative(p, c.n_hi, t + c.hi * u, u) < 0.0) {
        f_[p] = c.n_hi;
        return Outcome::kContinue;
      }
      if (c.excluded) {
        // Both derivatives vanish (parallel features, up to rounding): prefer the vertex neighbour,
        // which lowers the dimension.
        f_[p] = (c.n_lo.valid() && c.n_lo.type == VClipFeatureType::kVertex) || !c.n_hi.valid() ? c.n_lo : c.n_hi;
        return Outcome::kContinue;
      }
    }
    return Outcome::kDone;
  }

  Outcome EdgeEdge() {
    if (EdgeAgainstEdgeRegion(0) == Outcome::kContinue) return Outcome::kContinue;
    return EdgeAgainstEdgeRegion(1);
  }

  // Edge on side p, face on the other side q.
  Outcome EdgeFace(int p) {
    const int q = 1 - p;
    const VClipPolyhedron& P = *poly_[p];
    const VClipPolyhedron& Q = *poly_[q];
    const VClipPolyhedron::Edge& e = P.edges()[f_[p].index];
    const Vec3 t = X_[q] * P.position(e.tail), h = X_[q] * P.position(e.head);
    Clip c;
    ClipSegment(t, h, Q.planes(f_[q]), &c, &plane_tests_);
    if (c.excluded) {
      // No part of the edge is over the face: the closest point of the face is on its boundary. Move
      // to the boundary edge closest to the edge (the distance stays the same, the dimension drops).
      const VClipPolyhedron::Face& face = Q.faces()[f_[q].index];
      double best = std::numeric_limits<double>::infinity();
      int32_t best_edge = -1;
      for (int32_t k = face.loop_begin; k < face.loop_end; ++k) {
        const int32_t next = k + 1 < face.loop_end ? k + 1 : face.loop_begin;
        Vec3 cp, cq;
        const double d2 = SegmentSegmentDistanceSquared(t, h, Q.position(Q.loop_vertices()[k]),
                                                        Q.position(Q.loop_vertices()[next]), &cp, &cq);
        if (d2 < best) {
          best = d2;
          best_edge = Q.loop_edges()[k];
        }
      }
      plane_tests_ += face.loop_end - face.loop_begin;
      f_[q] = EdgeFeature(best_edge);
      return Outcome::kContinue;
    }
    const FacePlane& plane = Q.faces()[f_[q].index].plane;
    const double dt = plane.normal.dot(t) - plane.offset, dh = plane.normal.dot(h) - plane.offset;
    plane_tests_ += 2;
    const double slope = dh - dt;
    const double dl = dt + c.lo * slope, du = dt + c.hi * slope;
    if ((dl <= 0.0 && du >= 0.0) || (dl >= 0.0 && du <= 0.0)) {
      // The clipped edge meets the face's plane inside the prism: it pierces the face.
      const double lambda = dl == du ? c.lo : c.lo + (c.hi - c.lo) * (dl / (dl - du));
      contact_side_ = q;
      contact_ = t + lambda * (h - t);
      return Outcome::kPenetrating;
    }
    // |distance to the plane| is linear over the clipped part; move towards its smaller end.
    const double derivative = dl > 0.0 ? slope : -slope;
    if (derivative >= 0.0) {
      if (c.n_lo.valid()) {
        f_[q] = c.n_lo;
      } else {
        f_[p] = VertexFeature(e.tail);
      }
    } else {
      if (c.n_hi.valid()) {
        f_[q] = c.n_hi;
      } else {
        f_[p] = VertexFeature(e.head);
      }
    }
    return Outcome::kContinue;
  }

  const VClipPolyhedron* poly_[2];
  RigidTransform X_[2];
  VClipFeature f_[2];
  int32_t plane_tests_ = 0;
  int32_t local_min_scans_ = 0;
  int contact_side_ = 0;
  Vec3 contact_ = Vec3::Zero();
};

bool Finite(const RigidTransform& X) { return X.R.allFinite() && X.p.allFinite(); }

// Index of a vertex of p nearest to x, by steepest descent over the edge graph from `start` (a valid
// index), or a scan for small polytopes. position(k) is vertex k in x's frame.
template <class Position>
int32_t NearestVertex(const ConvexPolytope& p, const Position& position, const Vec3& x, int32_t start,
                      int32_t* evaluations) {
  const int32_t n = p.num_vertices();
  if (n <= ConvexPolytope::kBruteForceMaxVertices) {
    // Keep the start on ties, so that every change strictly shortens the pair.
    int32_t best = start;
    double best_d2 = (position(start) - x).squaredNorm();
    for (int32_t k = 0; k < n; ++k) {
      const double d2 = (position(k) - x).squaredNorm();
      if (d2 < best_d2) {
        best_d2 = d2;
        best = k;
      }
    }
    *evaluations += n + 1;
    return best;
  }
  int32_t current = start;
  double current_d2 = (position(current) - x).squaredNorm();
  ++*evaluations;
  while (true) {
    int32_t best = current;
    double best_d2 = current_d2;
    for (int32_t k : p.neighbors(current)) {
      const double d2 = (position(k) - x).squaredNorm();
      ++*evaluations;
      if (d2 < best_d2) {
        best_d2 = d2;
        best = k;
      }
    }
    if (best == current) return current;
    current = best;
    current_d2 = best_d2;
  }
}

}  // namespace

// ---- VClipPolyhedron ------------------------------------------------------------------------------------

namespace {

Error Broken(const std::string& what) {
  return Error{ErrorCode::kInternal, "V-Clip polyhedron: the hull is not a closed convex surface (" + what + ")"};
}

// The hull's faces as polygons: coplanar neighbouring triangles merged where they make a simple polygon,
// in order of their first triangle; per face its vertex loop and its triangles.
struct HullFaces {
  std::vector<std::vector<int32_t>> loops, triangles;
};

Result<HullFaces> MergeCoplanarTriangles(const ConvexPolytope& hull, double coplanar_tolerance, double scale) {
  const int32_t T = hull.num_faces();
  // Triangles across each directed edge, and groups of coplanar neighbours.
  std::unordered_map<uint64_t, int32_t> triangle_of_edge;
  triangle_of_edge.reserve(3 * T);
  for (int32_t t = 0; t < T; ++t) {
    const auto& f = hull.faces()[t];
    for (int k = 0; k < 3; ++k) {
      if (!triangle_of_edge.emplace(DirectedKey(f[k], f[(k + 1) % 3]), t).second) {
        return Broken("a directed edge is used twice");
      }
    }
  }
  std::vector<int32_t> parent(T);
  for (int32_t t = 0; t < T; ++t) parent[t] = t;
  const double distance_tolerance = coplanar_tolerance * std::max(scale, std::numeric_limits<double>::min());
  for (int32_t t = 0; t < T; ++t) {
    const auto& f = hull.faces()[t];
    for (int k = 0; k < 3; ++k) {
      const auto twin = triangle_of_edge.find(DirectedKey(f[(k + 1) % 3], f[k]));
      if (twin == triangle_of_edge.end()) return Broken("an edge has one triangle");
      const int32_t s = twin->second;
      if (s > t && Coplanar(hull, t, s, coplanar_tolerance, distance_tolerance)) {
        parent[FindRoot(parent, s)] = FindRoot(parent, t);
      }
    }
  }
  std::vector<int32_t> group_of(T);
  std::unordered_map<int32_t, std::vector<int32_t>> members;
  for (int32_t t = 0; t < T; ++t) {
    group_of[t] = FindRoot(parent, t);
    members[group_of[t]].push_back(t);
  }
  // Faces in order of their first triangle; groups that are not simple polygons stay split.
  HullFaces out;
  std::vector<bool> done(T, false);
  for (int32_t t = 0; t < T; ++t) {
    const int32_t g = group_of[t];
    if (done[g]) continue;
    done[g] = true;
    const std::vector<int32_t>& group = members[g];
    std::vector<int32_t> loop;
    if (group.size() > 1) loop = GroupLoop(hull, group, group_of, g, triangle_of_edge);
    if (!loop.empty()) {
      out.loops.push_back(std::move(loop));
      out.triangles.push_back(group);
    } else {
      for (int32_t s : group) {
        const auto& f = hull.faces()[s];
        out.loops.push_back({f[0], f[1], f[2]});
        out.triangles.push_back({s});
      }
    }
  }
  return out;
}

// A face's plane: the Qhull facet normals of its triangles weighted by area (so that a face of one
// Qhull facet keeps its plane exactly); offset: the mean over the loop.
FacePlane MergedFacePlane(const ConvexPolytope& hull, const std::vector<int32_t>& loop,
                          const std::vector<int32_t>& triangles) {
  const Vec3& first_normal = hull.face_planes()[triangles[0]].normal;
  Vec3 n = first_normal;
  bool one_plane = true;
  for (int32_t s : triangles) one_plane = one_plane && hull.face_planes()[s].normal == first_normal;
  if (!one_plane) {
    n.setZero();
    for (int32_t s : triangles) {
      const auto& f = hull.faces()[s];
      const double area =
          (hull.vertices()[f[1]] - hull.vertices()[f[0]]).cross(hull.vertices()[f[2]] - hull.vertices()[f[0]]).norm();
      n += area * hull.face_planes()[s].normal;
    }
    n = n.norm() > 0.0 ? Vec3(n.normalized()) : first_normal;
  }
  double offset = 0.0;
  for (int32_t v : loop) offset += n.dot(hull.vertices()[v]);
  FacePlane plane;
  plane.normal = n;
  plane.offset = offset / static_cast<double>(loop.size());
  return plane;
}

VClipVoronoiPlane PlaneThrough(const Vec3& normal, const Vec3& point, VClipFeature neighbor) {
  VClipVoronoiPlane plane;
  plane.normal = normal;
  plane.offset = normal.dot(point);
  plane.neighbor = neighbor;
  return plane;
}

}  // namespace

Result<std::shared_ptr<const VClipPolyhedron>> VClipPolyhedron::Build(const ConvexPolytope& hull,
                                                                      double coplanar_tolerance) {
  if (!(coplanar_tolerance >= 0.0) || !std::isfinite(coplanar_tolerance)) {
    return InvalidArgument("V-Clip polyhedron: coplanar_tolerance must be finite and >= 0, got " +
                           FormatNumber(coplanar_tolerance));
  }
  const int32_t V = hull.num_vertices(), T = hull.num_faces();
  if (V < 4 || T < 4) return Broken("fewer than 4 vertices or faces");
  std::shared_ptr<VClipPolyhedron> poly(new VClipPolyhedron());
  double scale = 0.0;
  Vec3 centroid = Vec3::Zero();
  for (const Vec3& v : hull.vertices()) {
    scale = std::max(scale, v.cwiseAbs().maxCoeff());
    centroid += v;
  }
  poly->scale_ = scale;
  poly->centroid_ = centroid / V;
  Result<HullFaces> faces = MergeCoplanarTriangles(hull, coplanar_tolerance, scale);
  if (!faces.ok()) return faces.error();
  if (Status s = poly->AddFacesAndEdges(hull, faces.value().loops, faces.value().triangles); !s.ok()) return s.error();
  if (Status s = poly->LinkVertexEdges(); !s.ok()) return s.error();
  if (Status s = poly->AddVoronoiPlanes(); !s.ok()) return s.error();
  return std::shared_ptr<const VClipPolyhedron>(std::move(poly));
}

// Vertices, faces (planes and loops), and edges from the loops: each undirected edge appears once in
// each direction, tail -> head (tail < head) in its left face.
Status VClipPolyhedron::AddFacesAndEdges(const ConvexPolytope& hull, const std::vector<std::vector<int32_t>>& loops,
                                         const std::vector<std::vector<int32_t>>& triangles) {
  const int32_t V = hull.num_vertices(), T = hull.num_faces();
  const int32_t F = static_cast<int32_t>(loops.size());
  vertices_.resize(V);
  for (int32_t v = 0; v < V; ++v) vertices_[v].p = hull.vertices()[v];
  std::unordered_map<uint64_t, int32_t> edge_of;  // Keyed by (min, max).
  edge_of.reserve(3 * T / 2);
  faces_.resize(F);
  for (int32_t fi = 0; fi < F; ++fi) {
    Face& face = faces_[fi];
    const std::vector<int32_t>& loop = loops[fi];
    face.plane = MergedFacePlane(hull, loop, triangles[fi]);
    face.loop_begin = static_cast<int32_t>(loop_vertices_.size());
    for (size_t k = 0; k < loop.size(); ++k) {
      const int32_t a = loop[k], b = loop[(k + 1) % loop.size()];
      const uint64_t key = DirectedKey(std::min(a, b), std::max(a, b));
      auto [it, inserted] = edge_of.emplace(key, static_cast<int32_t>(edges_.size()));
      if (inserted) {
        Edge e;
        e.tail = std::min(a, b);
        e.head = std::max(a, b);
        edges_.push_back(e);
      }
      Edge& e = edges_[it->second];
      int32_t& side = a == e.tail ? e.left : e.right;
      if (side >= 0) return Broken("an edge has two faces on one side");
      side = fi;
      loop_vertices_.push_back(a);
      loop_edges_.push_back(it->second);
    }
    face.loop_end = static_cast<int32_t>(loop_vertices_.size());
  }
  for (const Edge& e : edges_) {
    if (e.left < 0 || e.right < 0 || e.left == e.right) return Broken("an edge without two distinct faces");
  }
  if (V - num_edges() + F != 2) return Broken("Euler characteristic " + std::to_string(V - num_edges() + F));
  return {};
}

// Incident edges of each vertex.
Status VClipPolyhedron::LinkVertexEdges() {
  const auto V = static_cast<int32_t>(vertices_.size());
  std::vector<int32_t> degree(V + 1, 0);
  for (const Edge& e : edges_) {
    ++degree[e.tail];
    ++degree[e.head];
  }
  int32_t running = 0;
  for (int32_t v = 0; v < V; ++v) {
    if (degree[v] < 2) return Broken("vertex " + std::to_string(v) + " has fewer than two edges");
    vertices_[v].edge_begin = vertices_[v].edge_end = running;
    running += degree[v];
  }
  vertex_edges_.resize(running);
  for (int32_t ei = 0; ei < num_edges(); ++ei) {
    for (int32_t v : {edges_[ei].tail, edges_[ei].head}) vertex_edges_[vertices_[v].edge_end++] = ei;
  }
  return {};
}

// Voronoi planes. Planes shared by two features are stored twice with exactly opposite signs, so that a
// point is never outside both regions across one plane.
Status VClipPolyhedron::AddVoronoiPlanes() {
  const int32_t V = static_cast<int32_t>(vertices_.size()), E = num_edges();
  std::vector<Vec3> unit(E);
  for (int32_t ei = 0; ei < E; ++ei) unit[ei] = (vertices_[edges_[ei].head].p - vertices_[edges_[ei].tail].p).normalized();
  std::vector<VClipVoronoiPlane>& planes = planes_;
  planes.reserve(static_cast<size_t>(8) * E);
  for (int32_t v = 0; v < V; ++v) {
    Vertex& vertex = vertices_[v];
    vertex.plane_begin = static_cast<int32_t>(planes.size());
    for (int32_t k = vertex.edge_begin; k < vertex.edge_end; ++k) {
      const int32_t ei = vertex_edges_[k];
      // Inside the vertex's region: not past the vertex along the edge, towards its other end.
      const Vec3 normal = edges_[ei].tail == v ? Vec3(-unit[ei]) : unit[ei];
      planes.push_back(PlaneThrough(normal, vertex.p, EdgeFeature(ei)));
    }
  }
  // Face side planes first (in loop order), then the edges' four planes refer to them.
  std::vector<int32_t> side_plane_left(E, -1), side_plane_right(E, -1);
  std::vector<VClipVoronoiPlane> face_planes;
  face_planes.reserve(static_cast<size_t>(2) * E);
  for (const Face& face : faces_) {
    for (int32_t k = face.loop_begin; k < face.loop_end; ++k) {
      const int32_t ei = loop_edges_[k];
      const Edge& e = edges_[ei];
      const bool left = loop_vertices_[k] == e.tail;  // The loop runs tail -> head.
      const Vec3 direction = left ? unit[ei] : Vec3(-unit[ei]);
      Vec3 inward = face.plane.normal.cross(direction);
      const double length = inward.norm();
      if (!(length > 0.0)) return Broken("an edge is parallel to the normal of its face");
      inward /= length;
      (left ? side_plane_left : side_plane_right)[ei] = static_cast<int32_t>(face_planes.size());
      face_planes.push_back(PlaneThrough(inward, vertices_[e.tail].p, EdgeFeature(ei)));
    }
  }
  for (int32_t ei = 0; ei < E; ++ei) {
    Edge& e = edges_[ei];
    e.plane_begin = static_cast<int32_t>(planes.size());
    planes.push_back(PlaneThrough(unit[ei], vertices_[e.tail].p, VertexFeature(e.tail)));
    planes.push_back(PlaneThrough(-unit[ei], vertices_[e.head].p, VertexFeature(e.head)));
    for (int32_t side : {side_plane_left[ei], side_plane_right[ei]}) {
      VClipVoronoiPlane plane = face_planes[side];
      plane.normal = -plane.normal;
      plane.offset = -plane.offset;
      plane.neighbor = FaceFeature(side == side_plane_left[ei] ? e.left : e.right);
      planes.push_back(plane);
    }
  }
  const int32_t face_plane_base = static_cast<int32_t>(planes.size());
  planes.insert(planes.end(), face_planes.begin(), face_planes.end());
  int32_t next_plane = face_plane_base;
  for (Face& face : faces_) {
    face.plane_begin = next_plane;
    next_plane += face.loop_end - face.loop_begin;
  }
  return {};
}

std::span<const VClipVoronoiPlane> VClipPolyhedron::planes(VClipFeature f) const {
  switch (f.type) {
    case VClipFeatureType::kVertex: {
      const Vertex& v = vertices_[f.index];
      return {planes_.data() + v.plane_begin, static_cast<size_t>(v.edge_end - v.edge_begin)};
    }
    case VClipFeatureType::kEdge:
      return {planes_.data() + edges_[f.index].plane_begin, 4};
    case VClipFeatureType::kFace: {
      const Face& face = faces_[f.index];
      return {planes_.data() + face.plane_begin, static_cast<size_t>(face.loop_end - face.loop_begin)};
    }
  }
  return {};
}

bool VClipPolyhedron::Contains(VClipFeature f) const {
  if (f.index < 0) return false;
  switch (f.type) {
    case VClipFeatureType::kVertex:
      return f.index < num_vertices();
    case VClipFeatureType::kEdge:
      return f.index < num_edges();
    case VClipFeatureType::kFace:
      return f.index < num_faces();
  }
  return false;
}

int32_t VClipPolyhedron::SupportVertex(const Vec3& d_S, int32_t start) const {
  const int32_t n = num_vertices();
  if (n <= kBruteForceMaxVertices || start < 0 || start >= n) {
    if (n <= kBruteForceMaxVertices) {
      int32_t best = 0;
      double best_value = d_S.dot(vertices_[0].p);
      for (int32_t i = 1; i < n; ++i) {
        const double value = d_S.dot(vertices_[i].p);
        if (value > best_value) {
          best_value = value;
          best = i;
        }
      }
      return best;
    }
    start = 0;
  }
  // Hill climbing over the edges (a local maximum of a linear function on a convex polytope's edge
  // graph is a global one).
  int32_t current = start;
  double value = d_S.dot(vertices_[current].p);
  bool moved = true;
  while (moved) {
    moved = false;
    const Vertex& v = vertices_[current];
    for (int32_t k = v.edge_begin; k < v.edge_end; ++k) {
      const int32_t next = OtherEnd(vertex_edges_[k], current);
      const double next_value = d_S.dot(vertices_[next].p);
      if (next_value > value) {
        value = next_value;
        current = next;
        moved = true;
        break;
      }
    }
  }
  return current;
}

// ---- VClipDistance --------------------------------------------------------------------------------------

VClipResult VClipDistance(const VClipPolyhedron& a, const RigidTransform& X_WA, const VClipPolyhedron& b,
                          const RigidTransform& X_WB, VClipCache* cache, const VClipOptions& options) {
  VClipResult r;
  if (!Finite(X_WA) || !Finite(X_WB)) {
    r.penetrating = true;
    return r;
  }
  const RigidTransform X_AB = RelativeTransform(X_WA, X_WB);
  Machine m(a, b, X_AB);

  VClipFeature fa, fb;
  if (cache && a.Contains(cache->feature_a) && b.Contains(cache->feature_b)) {
    fa = cache->feature_a;
    fb = cache->feature_b;
    if (fa.type == VClipFeatureType::kFace && fb.type == VClipFeatureType::kFace) {
      fa = VertexFeature(a.loop_vertices()[a.faces()[fa.index].loop_begin]);
    }
  } else {
    // Cold: the vertices extreme along the line between the centroids.
    r.cold_start = true;
    Vec3 d_A = X_AB * b.centroid() - a.centroid();
    if (!(d_A.squaredNorm() > 0.0)) d_A = Vec3::UnitX();
    fa = VertexFeature(a.SupportVertex(d_A, -1));
    fb = VertexFeature(b.SupportVertex(-(X_AB.R.transpose() * d_A), -1));
  }
  m.set_feature(0, fa);
  m.set_feature(1, fb);

  const int32_t cap = options.max_transitions > 0 ? options.max_transitions
                                                   : 256 + 2 * (a.num_vertices() + b.num_vertices());
  Outcome outcome = Outcome::kContinue;
  while (true) {
    outcome = m.Step();
    if (outcome != Outcome::kContinue) break;
    if (++r.transitions >= cap) break;
  }
  r.plane_tests = m.plane_tests();
  r.local_min_scans = m.local_min_scans();

  if (outcome == Outcome::kContinue) {
    // The cap was hit: answer with GJK, which converges on any input.
    r.fell_back_to_gjk = true;
    GjkOptions gjk_options;
    gjk_options.rel_tolerance = 1e-8;
    const GjkResult g = GjkDistance(a, X_WA, b, X_WB, nullptr, gjk_options);
    r.distance = g.distance;
    r.penetrating = g.intersecting;
    r.p_WA = g.p_WA;
    r.p_WB = g.p_WB;
    if (g.simplex.size > 0) {
      r.feature_a = VertexFeature(g.simplex.vertices[0].vertex_a);
      r.feature_b = VertexFeature(g.simplex.vertices[0].vertex_b);
    }
  } else {
    r.feature_a = m.feature(0);
    r.feature_b = m.feature(1);
    if (outcome == Outcome::kPenetrating) {
      r.penetrating = true;
      r.distance = 0.0;
      r.p_WA = r.p_WB = (m.contact_side() == 0 ? X_WA : X_WB) * m.contact();
    } else {
      Vec3 p_A, p_B;
      m.Witnesses(&p_A, &p_B);
      r.p_WA = X_WA * p_A;
      r.p_WB = X_WB * p_B;
      r.distance = (r.p_WA - r.p_WB).norm();
      r.penetrating = r.distance == 0.0;
    }
  }
  if (cache && a.Contains(r.feature_a) && b.Contains(r.feature_b)) {
    cache->feature_a = r.feature_a;
    cache->feature_b = r.feature_b;
  }
  return r;
}

// ---- NearestVertexPair ----------------------------------------------------------------------------------

VertexPairResult NearestVertexPair(const ConvexPolytope& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                                   const RigidTransform& X_WB, VertexPairCache* cache) {
  VertexPairResult r;
  if (!Finite(X_WA) || !Finite(X_WB)) {
    r.distance = std::numeric_limits<double>::infinity();
    return r;
  }
  const RigidTransform X_AB = RelativeTransform(X_WA, X_WB);
  // Every distance is evaluated in A's frame, so that the pair distance is one function of the pair
  // and each accepted change strictly decreases it.
  const auto a_position = [&](int32_t k) -> const Vec3& { return a.vertices()[k]; };
  const auto b_position = [&](int32_t k) { return Vec3(X_AB * b.vertices()[k]); };
  int32_t ia = cache ? cache->vertex_a : -1;
  int32_t ib = cache ? cache->vertex_b : -1;
  if (ia < 0 || ia >= a.num_vertices() || ib < 0 || ib >= b.num_vertices()) {
    Vec3 d_A = X_AB.p;
    if (!(d_A.squaredNorm() > 0.0)) d_A = Vec3::UnitX();
    ia = a.SupportVertex(d_A, -1);
    ib = b.SupportVertex(-(X_AB.R.transpose() * d_A), -1);
  }
  while (true) {
    ++r.rounds;
    ib = NearestVertex(b, b_position, a_position(ia), ib, &r.evaluations);
    const int32_t next = NearestVertex(a, a_position, b_position(ib), ia, &r.evaluations);
    if (next == ia) break;
    ia = next;
  }
  const Vec3 p_A = a_position(ia), q_A = b_position(ib);
  r.vertex_a = ia;
  r.vertex_b = ib;
  r.distance = (p_A - q_A).norm();
  r.p_WA = X_WA * p_A;
  r.p_WB = X_WB * b.vertices()[ib];
  if (cache) {
    cache->vertex_a = ia;
    cache->vertex_b = ib;
  }
  return r;
}

}  // namespace proximity::core
