#include "contact/epa_impl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "bvh/mesh_query.h"

namespace proximity::core::internal {
namespace {

// A triangle whose height over its longest edge is below this fraction of that edge is a sliver.
constexpr double kSliver = 1e-9;
// A new face closer to the origin than the closest old face by more than this fraction of the scale
// shows a broken expansion (far beyond the rounding of thin faces' planes).
constexpr double kBrokenWalk = 1e-10;
// Rounds of redrawing the horizon around faces that a new face would fold over.
constexpr int32_t kMaxRepairs = 4;
// Faces with w less than this fraction of the scale beyond their plane do not count as visible: w
// (nearly) on a neighbour's plane leaves that neighbour, and every new face is at least this high.
constexpr double kVisibility = 1e-13;

bool HeapGreater(const std::pair<double, int32_t>& x, const std::pair<double, int32_t>& y) {
  return x.first > y.first;
}

Status CheckLength(double value, const char* what, const char* type, const char* field) {
  if (!std::isfinite(value) || value < 0.0) {
    return InvalidArgument(std::string(what) + " (" + type + ") " + field + " must be finite and >= 0, got " +
                           FormatNumber(value));
  }
  return {};
}

Status CheckPoint(const Vec3& p, const char* what, const char* type, const char* field) {
  if (!p.allFinite()) return InvalidArgument(std::string(what) + " (" + type + ") " + field + " must be finite");
  return {};
}

}  // namespace

Status ValidateSignedDistanceInput(const RigidTransform& X_WA, const RigidTransform& X_WB,
                                   const SignedDistanceOptions& options) {
  if (Status s = ValidatePose(X_WA, "X_WA"); !s.ok()) return s;
  if (Status s = ValidatePose(X_WB, "X_WB"); !s.ok()) return s;
  const auto bad = [](double x) { return !std::isfinite(x) || x < 0.0; };
  if (bad(options.gjk.rel_tolerance) || bad(options.gjk.abs_tolerance) || options.gjk.max_iterations < 1) {
    return InvalidArgument("options.gjk: tolerances must be finite and >= 0 and max_iterations >= 1");
  }
  if (bad(options.rel_tolerance) || bad(options.abs_tolerance)) {
    return InvalidArgument("options: rel_tolerance and abs_tolerance must be finite and >= 0");
  }
  if (options.max_iterations < 1) return InvalidArgument("options.max_iterations must be >= 1");
  if (options.max_faces < 8) return InvalidArgument("options.max_faces must be >= 8");
  return {};
}

Status ValidateConvexShape(const Sphere& s, const char* what) {
  if (Status st = CheckPoint(s.center, what, "sphere", "center"); !st.ok()) return st;
  return CheckLength(s.radius, what, "sphere", "radius");
}
Status ValidateConvexShape(const Box& s, const char* what) {
  static const char* kFields[3] = {"half_extents.x", "half_extents.y", "half_extents.z"};
  for (int i = 0; i < 3; ++i) {
    if (Status st = CheckLength(s.half_extents[i], what, "box", kFields[i]); !st.ok()) return st;
  }
  return {};
}
Status ValidateConvexShape(const Capsule& s, const char* what) {
  if (Status st = CheckLength(s.radius, what, "capsule", "radius"); !st.ok()) return st;
  return CheckLength(s.half_length, what, "capsule", "half_length");
}
Status ValidateConvexShape(const Cylinder& s, const char* what) {
  if (Status st = CheckLength(s.radius, what, "cylinder", "radius"); !st.ok()) return st;
  return CheckLength(s.half_length, what, "cylinder", "half_length");
}
Status ValidateConvexShape(const Cone& s, const char* what) {
  if (Status st = CheckLength(s.radius, what, "cone", "radius"); !st.ok()) return st;
  return CheckLength(s.half_height, what, "cone", "half_height");
}
Status ValidateConvexShape(const Triangle& s, const char* what) {
  if (Status st = CheckPoint(s.a, what, "triangle", "a"); !st.ok()) return st;
  if (Status st = CheckPoint(s.b, what, "triangle", "b"); !st.ok()) return st;
  return CheckPoint(s.c, what, "triangle", "c");
}
Status ValidateConvexShape(const ConvexPolytope&, const char*) { return {}; }

Vec3 SimplexClosestPoint(const GjkSimplex& s, std::array<double, 4>* weights) {
  double best = std::numeric_limits<double>::infinity();
  Vec3 best_point = Vec3::Zero();
  *weights = {0.0, 0.0, 0.0, 0.0};
  if (s.size <= 0) return best_point;
  const auto consider = [&](const std::array<double, 4>& w) {
    Vec3 p = Vec3::Zero();
    for (int32_t i = 0; i < s.size; ++i) p += w[i] * s.vertices[i].w;
    const double pp = p.squaredNorm();
    if (pp < best) {
      best = pp;
      best_point = p;
      *weights = w;
    }
  };
  for (int32_t i = 0; i < s.size; ++i) {
    std::array<double, 4> w{};
    w[i] = 1.0;
    consider(w);
  }
  for (int32_t i = 0; i < s.size; ++i) {
    for (int32_t j = i + 1; j < s.size; ++j) {
      const Vec3& a = s.vertices[i].w;
      const Vec3 ab = s.vertices[j].w - a;
      const double ll = ab.squaredNorm();
      if (!(ll > 0.0)) continue;
      const double t = std::clamp(-a.dot(ab) / ll, 0.0, 1.0);
      std::array<double, 4> w{};
      w[i] = 1.0 - t;
      w[j] = t;
      consider(w);
    }
  }
  // Triangle interiors, only where the triangle's plane is well defined: a sliver's barycentric
  // coordinates are meaningless, and its edges serve instead.
  for (int32_t i = 0; i < s.size; ++i) {
    for (int32_t j = i + 1; j < s.size; ++j) {
      for (int32_t k = j + 1; k < s.size; ++k) {
        const Vec3& a = s.vertices[i].w;
        const Vec3& b = s.vertices[j].w;
        const Vec3& c = s.vertices[k].w;
        const Vec3 n = (b - a).cross(c - a);
        const double nn = n.squaredNorm();
        const double longest = std::max({(b - a).squaredNorm(), (c - a).squaredNorm(), (c - b).squaredNorm()});
        if (!(nn > kSliver * kSliver * longest * longest)) continue;
        const Vec3 p = (n.dot(a) / nn) * n;
        const double la = (b - p).cross(c - p).dot(n) / nn;
        const double lb = (c - p).cross(a - p).dot(n) / nn;
        const double lc = 1.0 - la - lb;
        if (la < 0.0 || lb < 0.0 || lc < 0.0) continue;
        std::array<double, 4> w{};
        w[i] = la;
        w[j] = lb;
        w[k] = lc;
        consider(w);
      }
    }
  }
  // The tetrahedron's interior, when it is no sliver: barycentric coordinates from signed volumes.
  if (s.size == 4 && best > 0.0) {
    const Vec3& a = s.vertices[0].w;
    const Vec3& b = s.vertices[1].w;
    const Vec3& c = s.vertices[2].w;
    const Vec3& d = s.vertices[3].w;
    const double vol = (b - a).dot((c - a).cross(d - a));
    double longest = 0.0, largest_face = 0.0;
    for (int32_t i = 0; i < 4; ++i) {
      for (int32_t j = i + 1; j < 4; ++j) longest = std::max(longest, (s.vertices[j].w - s.vertices[i].w).norm());
      const Vec3& p = s.vertices[(i + 1) % 4].w;
      largest_face = std::max(largest_face,
                              (s.vertices[(i + 2) % 4].w - p).cross(s.vertices[(i + 3) % 4].w - p).norm());
    }
    // vol / largest_face is the smallest height; against the longest edge, it measures flatness.
    if (largest_face > 0.0 && std::abs(vol) / largest_face > kSliver * longest) {
      const double wa = b.dot(c.cross(d)) / vol, wb = -a.dot(c.cross(d)) / vol;
      const double wc = a.dot(b.cross(d)) / vol, wd = -a.dot(b.cross(c)) / vol;
      if (wa >= 0.0 && wb >= 0.0 && wc >= 0.0 && wd >= 0.0) {
        *weights = {wa, wb, wc, wd};
        best_point = Vec3::Zero();
      }
    }
  }
  return best_point;
}

void EpaPolytope::Reset(double scale) {
  scale_ = scale;
  vertices_.clear();
  faces_.clear();
  heap_.clear();
  mark_.clear();
  forced_.clear();
  epoch_ = 0;
  force_epoch_ = 0;
}

int32_t EpaPolytope::AddVertex(const GjkVertex& w) {
  scale_ = std::max(scale_, w.w.norm());
  vertices_.push_back(w);
  return static_cast<int32_t>(vertices_.size()) - 1;
}

bool EpaPolytope::HasVertex(const GjkVertex& w) const {
  for (const GjkVertex& u : vertices_) {
    if (u.vertex_a >= 0 && u.vertex_b >= 0 && u.vertex_a == w.vertex_a && u.vertex_b == w.vertex_b) return true;
    if (u.w == w.w) return true;
  }
  return false;
}

int32_t EpaPolytope::NewFace(int32_t a, int32_t b, int32_t c) {
  Face f;
  f.v = {a, b, c};
  f.adj = {-1, -1, -1};
  const Vec3& pa = vertices_[a].w;
  const Vec3& pb = vertices_[b].w;
  const Vec3& pc = vertices_[c].w;
  const Vec3 n = (pb - pa).cross(pc - pa);
  const double len = n.norm();
  f.n = n / len;  // Callers ensure len > 0 (see NormalLength).
  // The plane's offset from the three vertices' mean: symmetric in the vertices.
  f.d = f.n.dot((pa + pb + pc) / 3.0);
  faces_.push_back(f);
  const int32_t index = static_cast<int32_t>(faces_.size()) - 1;
  heap_.emplace_back(f.d, index);
  std::push_heap(heap_.begin(), heap_.end(), HeapGreater);
  return index;
}

double EpaPolytope::NormalLength(int32_t a, int32_t b, int32_t c) const {
  const Vec3& pa = vertices_[a].w;
  const double len = (vertices_[b].w - pa).cross(vertices_[c].w - pa).norm();
  return std::isfinite(len) ? len : 0.0;
}

void EpaPolytope::LinkInitialFaces() {
  const int32_t nf = static_cast<int32_t>(faces_.size());
  for (int32_t f = 0; f < nf; ++f) {
    for (int32_t e = 0; e < 3; ++e) {
      const int32_t a = faces_[f].v[e], b = faces_[f].v[(e + 1) % 3];
      for (int32_t g = 0; g < nf; ++g) {
        if (g == f) continue;
        for (int32_t k = 0; k < 3; ++k) {
          if (faces_[g].v[k] == b && faces_[g].v[(k + 1) % 3] == a) {
            faces_[f].adj[e] = g;
            faces_[f].adj_edge[e] = static_cast<int8_t>(k);
          }
        }
      }
    }
  }
}

bool EpaPolytope::InitTetrahedron(int32_t a, int32_t b, int32_t c, int32_t d) {
  const Vec3& pa = vertices_[a].w;
  if ((vertices_[b].w - pa).cross(vertices_[c].w - pa).dot(vertices_[d].w - pa) > 0.0) std::swap(b, c);
  for (const auto& [i, j, k] : {std::array{a, b, c}, std::array{a, d, b}, std::array{b, d, c}, std::array{c, d, a}}) {
    if (!(NormalLength(i, j, k) > 0.0)) return false;
  }
  NewFace(a, b, c);
  NewFace(a, d, b);
  NewFace(b, d, c);
  NewFace(c, d, a);
  LinkInitialFaces();
  return ClosestFace() >= 0;
}

int32_t EpaPolytope::ClosestFace() {
  while (!heap_.empty()) {
    const int32_t f = heap_.front().second;
    if (faces_[f].live) return f;
    std::pop_heap(heap_.begin(), heap_.end(), HeapGreater);
    heap_.pop_back();
  }
  return -1;
}

bool EpaPolytope::Visible(const Face& f, const Vec3& w) const {
  return f.n.dot(w - vertices_[f.v[0]].w) > kVisibility * scale_;
}

bool EpaPolytope::FindHorizon(int32_t start, const Vec3& w) {
  ++epoch_;
  removed_.clear();
  horizon_.clear();
  stack_.clear();
  // Depth-first walk over the visible faces from `start`; each edge to a face that is not visible is a
  // horizon edge, listed as (that face, its edge index).
  mark_[start] = epoch_;
  removed_.push_back(start);
  for (int32_t e = 2; e >= 0; --e) stack_.emplace_back(faces_[start].adj[e], faces_[start].adj_edge[e]);
  while (!stack_.empty()) {
    const auto [f, entry] = stack_.back();
    stack_.pop_back();
    if (f < 0) return false;  // Broken adjacency.
    if (mark_[f] == epoch_) continue;
    const Face& face = faces_[f];
    if (!face.live) return false;
    if (forced_[f] != force_epoch_ && !Visible(face, w)) {
      horizon_.emplace_back(f, entry);
      continue;
    }
    mark_[f] = epoch_;
    removed_.push_back(f);
    stack_.emplace_back(face.adj[(entry + 2) % 3], face.adj_edge[(entry + 2) % 3]);
    stack_.emplace_back(face.adj[(entry + 1) % 3], face.adj_edge[(entry + 1) % 3]);
  }
  // A face listed on the horizon before a later branch of the walk reached it visible is no horizon.
  horizon_.erase(std::remove_if(horizon_.begin(), horizon_.end(),
                                [&](const std::pair<int32_t, int32_t>& h) { return mark_[h.first] == epoch_; }),
                 horizon_.end());
  return horizon_.size() >= 3;
}

bool EpaPolytope::Expand(int32_t start, int32_t wi) {
  const Vec3 w = vertices_[wi].w;
  const double d_min = faces_[start].d;
  mark_.resize(faces_.size(), 0);
  forced_.resize(faces_.size(), 0);
  ++force_epoch_;
  // New face i is (a_i, b_i, w), with (b_i, a_i) the horizon edge as its outer face lists it.
  const auto a_of = [&](int32_t i) {
    const Face& f = faces_[horizon_[i].first];
    return f.v[(horizon_[i].second + 1) % 3];
  };
  const auto b_of = [&](int32_t i) {
    const Face& f = faces_[horizon_[i].first];
    return f.v[horizon_[i].second];
  };
  int32_t k = 0;
  for (int32_t round = 0;; ++round) {
    if (!FindHorizon(start, w)) return false;
    k = static_cast<int32_t>(horizon_.size());
    // Each new face must meet its outer face in a convex edge. In exact arithmetic it does, as w is
    // not beyond the outer face; rounding within the visibility tolerance can leave the outer face's
    // far vertex in front of the new face (a reflex edge), or w (nearly) in the outer face's plane
    // over that face (a fold: the new face lies on the outer one, facing inwards). Either way the outer
    // face is visible in effect: it is merged and the horizon drawn again.
    bool folded = false;
    const double tol = kVisibility * scale_;
    for (int32_t i = 0; i < k; ++i) {
      const auto [outer, edge] = horizon_[i];
      const Face& g = faces_[outer];
      const Vec3& pa = vertices_[a_of(i)].w;
      const Vec3 e = vertices_[b_of(i)].w - pa;
      const Vec3 n = e.cross(w - pa);
      const double len = n.norm();
      if (!(len > 0.0) || !std::isfinite(len)) return false;
      const Vec3 far = vertices_[g.v[(edge + 2) % 3]].w - pa;
      const Vec3 t_g = far - (far.dot(e) / e.squaredNorm()) * e;  // g's direction away from the edge.
      const bool reflex = n.dot(far) > tol * len;
      const bool fold = (w - pa).dot(t_g) > 0.0 && g.n.dot(w - pa) > -tol;
      if (reflex || fold) {
        forced_[outer] = force_epoch_;
        folded = true;
      } else if (d_min >= 0.0 && n.dot(pa) / len < d_min - kBrokenWalk * scale_) {
        // New faces bound a polytope containing the old one, and the origin: none is closer to the
        // origin than the closest old face, beyond the rounding of a thin face's plane. One that is
        // means the walk went wrong.
        return false;
      }
    }
    if (!folded) break;
    if (round == kMaxRepairs) return false;
  }
  // The horizon must be one loop: every a_i is some b_j exactly once, and following it visits all.
  std::vector<int32_t>& next = next_;
  next.assign(k, -1);
  for (int32_t i = 0; i < k; ++i) {
    if (a_of(i) == wi || b_of(i) == wi) return false;
    for (int32_t j = 0; j < k; ++j) {
      if (a_of(j) != b_of(i)) continue;
      if (next[i] >= 0) return false;  // The horizon touches itself at a vertex.
      next[i] = j;
    }
    if (next[i] < 0) return false;
  }
  int32_t steps = 0;
  for (int32_t i = next[0]; i != 0; i = next[i]) {
    if (++steps > k) return false;
  }
  if (steps + 1 != k) return false;

  // Commit.
  for (int32_t f : removed_) faces_[f].live = false;
  const int32_t first = static_cast<int32_t>(faces_.size());
  for (int32_t i = 0; i < k; ++i) {
    const auto [outer, edge] = horizon_[i];
    const int32_t nf = NewFace(a_of(i), b_of(i), wi);
    faces_[nf].adj[0] = outer;
    faces_[nf].adj_edge[0] = static_cast<int8_t>(edge);
    faces_[outer].adj[edge] = nf;
    faces_[outer].adj_edge[edge] = 0;
  }
  for (int32_t i = 0; i < k; ++i) {
    // Edge 1 of face i runs b_i -> w; edge 2 of face next[i] runs w -> a_next = b_i.
    const int32_t fi = first + i, fj = first + next[i];
    faces_[fi].adj[1] = fj;
    faces_[fi].adj_edge[1] = 2;
    faces_[fj].adj[2] = fi;
    faces_[fj].adj_edge[2] = 1;
  }
  return true;
}

double EpaPolytope::LowerBound(bool* inside) const {
  // Rounding of the vertices (a few ulps of the coordinates' scale) tilts a face's computed plane by
  // up to ~delta / height about the face, which moves the plane's distance at the origin's foot point
  // by up to delta * (1 + R / height), R the foot point's distance to the face's farthest vertex.
  const double delta = 4.0 * std::numeric_limits<double>::epsilon() * scale_;
  double lower = std::numeric_limits<double>::infinity();
  *inside = true;
  for (const Face& f : faces_) {
    if (!f.live) continue;
    const Vec3 foot = f.d * f.n;
    double longest = 0.0, reach = 0.0;
    int32_t longest_edge = 0;
    for (int32_t e = 0; e < 3; ++e) {
      const Vec3& p = vertices_[f.v[e]].w;
      const double len = (vertices_[f.v[(e + 1) % 3]].w - p).norm();
      if (len > longest) {
        longest = len;
        longest_edge = e;
      }
      reach = std::max(reach, (p - foot).norm());
    }
    const Vec3& p = vertices_[f.v[longest_edge]].w;
    const Vec3 pq = vertices_[f.v[(longest_edge + 1) % 3]].w - p;
    const Vec3& r = vertices_[f.v[(longest_edge + 2) % 3]].w;
    const double height = (r - p).cross(pq).norm() / longest;
    // The origin is on the inner side of this face's plane for sure when the plane distance exceeds
    // its rounding; inside all of them, it is inside the polytope.
    const double by_plane = f.d - delta * (1.0 + reach / height);
    if (!(by_plane >= 0.0)) *inside = false;
    // Then two bounds on the distance to the face: the plane's; and, as every point of the face lies
    // within its height of its longest edge, that edge's distance less the height.
    const double t = std::clamp(-p.dot(pq) / (longest * longest), 0.0, 1.0);
    const double edge_distance = (p + t * pq).norm();
    lower = std::min(lower, std::max(by_plane, edge_distance - height));
  }
  return lower;
}

std::array<double, 3> EpaPolytope::ClosestWeights(int32_t fi) const {
  GjkSimplex s;
  s.size = 3;
  for (int32_t k = 0; k < 3; ++k) s.vertices[k] = vertices_[faces_[fi].v[k]];
  std::array<double, 4> w;
  SimplexClosestPoint(s, &w);
  return {w[0], w[1], w[2]};
}

}  // namespace proximity::core::internal
