#pragma once
/// @file
/// The definitions behind epa.h: EPA's polytope and helpers, and ComputeSignedDistance's template. Private: included by epa_instances.cc (which compiles every pair of PROX_FOR_EACH_CONVEX_PAIR), contact.cc and the tests.

#include "contact/epa.h"

namespace proximity::core {

namespace internal {

/// A shape seen through its core only (margin 0): GJK on it yields the cores' distance and simplex.
template <class Shape>
struct CoreOnly {
  const Shape* shape = nullptr;
  friend Vec3 CoreSupport(const CoreOnly& c, const Vec3& d_S, int32_t* vertex) {
    return CoreSupport(*c.shape, d_S, vertex);
  }
  friend double Margin(const CoreOnly&) { return 0.0; }
};

/// The core of a shape for GJK: a polytope is its own core (GJK has a faster support for it), any
/// other shape is wrapped in CoreOnly.
template <class Shape>
decltype(auto) CoreView(const Shape& s) {
  if constexpr (std::is_same_v<Shape, ConvexPolytope>) {
    return s;
  } else {
    return CoreOnly<Shape>{&s};
  }
}

/// A shape with its margin folded into the support mapping (margin 0, vertex index -1 on the rounded
/// part): the whole shape as one convex set, for EPA when the margins alone cannot give a certified
/// normal.
template <class Shape>
struct Inflated {
  const Shape* shape = nullptr;
  friend Vec3 CoreSupport(const Inflated& s, const Vec3& d_S, int32_t* vertex) {
    Vec3 p = CoreSupport(*s.shape, d_S, vertex);
    const double r = Margin(*s.shape);
    if (r > 0.0) {
      const double n = d_S.norm();
      if (n > 0.0) p += (r / n) * d_S;
      *vertex = -1;
    }
    return p;
  }
  friend double Margin(const Inflated&) { return 0.0; }
};

/// Input checks: finite, right-handed orthonormal poses, sane options; shapes with finite, non-negative
/// dimensions. The message names `what` and the field.
[[nodiscard]] Status ValidateSignedDistanceInput(const RigidTransform& X_WA, const RigidTransform& X_WB,
                                                 const SignedDistanceOptions& options);
[[nodiscard]] Status ValidateConvexShape(const Sphere& s, const char* what);
[[nodiscard]] Status ValidateConvexShape(const Box& s, const char* what);
[[nodiscard]] Status ValidateConvexShape(const Capsule& s, const char* what);
[[nodiscard]] Status ValidateConvexShape(const Cylinder& s, const char* what);
[[nodiscard]] Status ValidateConvexShape(const Cone& s, const char* what);
[[nodiscard]] Status ValidateConvexShape(const Triangle& s, const char* what);
[[nodiscard]] Status ValidateConvexShape(const ConvexPolytope& s, const char* what);

/// The point of the simplex's hull closest to the origin, with its barycentric weights, computed
/// robustly: over the vertices, the edges, and the interiors of triangles and of a tetrahedron that
/// are not slivers (whose barycentric coordinates rounding would spoil). A point of the hull, so its
/// norm bounds the distance from above; zero when the origin is inside a well-shaped tetrahedron.
Vec3 SimplexClosestPoint(const GjkSimplex& s, std::array<double, 4>* weights);

/// The polytope EPA grows inside the cores' Minkowski difference (points w in A's frame): triangles
/// with outward normals and edge adjacency, and a min-heap of faces by their plane's distance from the
/// origin. No face has a zero normal: initialisation and expansion refuse to create one.
class EpaPolytope {
 public:
  struct Face {
    std::array<int32_t, 3> v{};         ///< Vertex indices, counter-clockwise seen from outside.
    std::array<int32_t, 3> adj{};       ///< adj[i]: the face across edge (v[i], v[i+1]).
    std::array<int8_t, 3> adj_edge{};   ///< That edge's index in the neighbour.
    Vec3 n = Vec3::UnitZ();             ///< Outward unit normal.
    double d = 0.0;                     ///< Signed distance of the plane from the origin (n · centroid).
    bool live = true;
  };

  /// `scale`: a length of the coordinates' magnitude (for the visibility and rounding tolerances);
  /// vertices farther from the origin raise it.
  void Reset(double scale);
  int32_t AddVertex(const GjkVertex& w);
  /// A tetrahedron, in either orientation. False when a face would have a zero normal.
  bool InitTetrahedron(int32_t a, int32_t b, int32_t c, int32_t d);
  /// The live face whose plane is closest to the origin (-1 when none).
  int32_t ClosestFace();
  /// A lower bound on the distance from the origin to the polytope's surface, valid when *inside is
  /// set: the origin is then inside every face's plane by more than that plane's rounding error. Over
  /// the faces, the plane distance less its rounding error, or the longest edge's distance less the
  /// face's height, whichever is larger.
  double LowerBound(bool* inside) const;
  /// Replaces the faces visible from vertex `w` (starting with `face`, which must be visible) by a fan
  /// of faces from w to the horizon. A new face that rounding would fold over its neighbour makes that
  /// neighbour visible and the horizon is redrawn. False, leaving the polytope unchanged, when the
  /// horizon is not a single loop, a new face would have a zero normal, or folds persist (rounding);
  /// the caller stops there.
  bool Expand(int32_t face, int32_t w);
  /// Whether w repeats a vertex (same support vertex pair, or the same point).
  bool HasVertex(const GjkVertex& w) const;

  const Face& face(int32_t i) const { return faces_[i]; }
  const GjkVertex& vertex(int32_t i) const { return vertices_[i]; }
  int32_t num_faces_created() const { return static_cast<int32_t>(faces_.size()); }

  /// Barycentric weights of the point of face `f` closest to the origin (SimplexClosestPoint).
  std::array<double, 3> ClosestWeights(int32_t f) const;

 private:
  int32_t NewFace(int32_t a, int32_t b, int32_t c);
  /// The faces visible from w (or forced visible) reachable from `start`, and their horizon.
  bool FindHorizon(int32_t start, const Vec3& w);
  double NormalLength(int32_t a, int32_t b, int32_t c) const;
  void LinkInitialFaces();
  bool Visible(const Face& f, const Vec3& w) const;

  double scale_ = 1.0;
  std::vector<GjkVertex> vertices_;
  std::vector<Face> faces_;
  std::vector<std::pair<double, int32_t>> heap_;  // (d, face), min-heap with lazy deletion.
  // Scratch for Expand.
  std::vector<int32_t> mark_;    // == epoch_: removed in the current walk.
  std::vector<int32_t> forced_;  // == force_epoch_: visible in effect for the current expansion.
  int32_t epoch_ = 0;
  int32_t force_epoch_ = 0;
  std::vector<int32_t> next_;
  std::vector<std::pair<int32_t, int32_t>> stack_;    // (face, entry edge)
  std::vector<std::pair<int32_t, int32_t>> horizon_;  // (non-visible face, its edge)
  std::vector<int32_t> removed_;
};

/// A support pair of the posed cores' Minkowski difference A - B in A's frame for direction d_A.
template <class ShapeA, class ShapeB>
inline GjkVertex EpaSupport(const ShapeA& a, const ShapeB& b, const RigidTransform& X_AB, const Vec3& d_A,
                            int32_t* start_a, int32_t* start_b) {
  GjkVertex out;
  out.p_A = CoreSupport(a, d_A, start_a);
  out.vertex_a = *start_a;
  out.p_B = CoreSupport(b, Vec3(-(X_AB.R.transpose() * d_A)), start_b);
  out.vertex_b = *start_b;
  out.w = out.p_A - (X_AB.R * out.p_B + X_AB.p);
  return out;
}

/// The largest |w| of a simplex: the scale of its coordinates.
inline double SimplexScale(const GjkSimplex& s) {
  double m = 0.0;
  for (int32_t i = 0; i < s.size; ++i) m = std::max(m, s.vertices[i].w.norm());
  return m;
}

/// EPA's stopping tolerance on (support value - face distance) for depth h at coordinate scale `scale`.
inline double EpaTolerance(const SignedDistanceOptions& options, double h, double scale) {
  return std::max({options.abs_tolerance, options.rel_tolerance * std::abs(h), 1e-14 * scale});
}

/// Where rounding alone stops EPA on curved surfaces: the polytope's faces near the answer become too
/// small for their normals; a gap below this (relative to the coordinates' scale) counts as converged.
inline constexpr double kEpaRoundingFloor = 1e-9;

/// Two unit vectors completing unit vector u to an orthonormal basis.
inline void OrthonormalBasis(const Vec3& u, Vec3* e1, Vec3* e2) {
  Eigen::Index i;
  u.cwiseAbs().minCoeff(&i);
  *e1 = u.cross(Vec3::Unit(i)).normalized();
  *e2 = u.cross(*e1);
}

/// The state of the EPA phase of one query, filled by RunEpa.
struct EpaOutcome {
  bool flat = false;       ///< The Minkowski difference is flat: n is perpendicular to it.
  bool evaluated = false;  ///< A face was evaluated (n, h, d, c_A, c_B set).
  bool converged = false;  ///< Tolerance met, or rounding stopped EPA within kEpaRoundingFloor.
  Vec3 n = Vec3::UnitZ();  ///< Outward normal of A - B in A's frame.
  double h = 0.0;          ///< Support value of the cores' A - B along n.
  double lower = 0.0;      ///< Lower bound on the cores' depth (closest face distance; 0 unless certified).
  bool lower_certified = false;  ///< The origin is inside the polytope beyond rounding (LowerBound).
  Vec3 c_A = Vec3::Zero();  ///< Witness on A's core (frame A).
  Vec3 c_B = Vec3::Zero();  ///< Witness on B's core (frame A).
  int32_t iterations = 0;
  int32_t support_calls = 0;
  int32_t faces = 0;
  /// Why the loop ended: 0 tolerance met, 1 no face left, 2 iteration cap, 3 repeated vertex (rounding),
  /// 4 face cap, 5 expansion refused (rounding), 6 the polytope could not be started.
  int32_t stop = 0;
};

/// EPA's support queries on A - B: counted, warm-started from the previous vertices, and tracking the
/// largest support point seen (the coordinates' scale, for the tolerances).
template <class ShapeA, class ShapeB>
struct EpaSupporter {
  const ShapeA& a;
  const ShapeB& b;
  const RigidTransform& X_AB;
  int32_t start_a, start_b;
  double scale = 0.0;
  int32_t* calls;
  GjkVertex operator()(const Vec3& d) {
    ++*calls;
    GjkVertex w = EpaSupport(a, b, X_AB, d, &start_a, &start_b);
    scale = std::max(scale, w.w.norm());
    return w;
  }
};

/// How EPA's polytope started: a full-dimensional tetrahedron, a flat Minkowski difference (with its
/// normal), or not at all.
enum class EpaStart { kPolytope, kFlat, kFailed };

/// Blows GJK's final simplex `s` (which touches the origin) up to a tetrahedron in *poly, or finds the
/// Minkowski difference flat (*flat_normal: perpendicular to it, away from it when it misses the origin).
template <class Supporter>
EpaStart StartEpaPolytope(Supporter& support, const GjkSimplex& s, const SignedDistanceOptions& options,
                          EpaPolytope* poly, Vec3* flat_normal) {
  // Distinct simplex points.
  std::array<GjkVertex, 4> p;
  int32_t np = 0;
  for (int32_t i = 0; i < s.size; ++i) {
    bool repeat = false;
    for (int32_t j = 0; j < np; ++j) repeat = repeat || p[j].w == s.vertices[i].w;
    if (!repeat) p[np++] = s.vertices[i];
  }
  const auto flat_tol = [&] { return std::max(options.abs_tolerance, 1e-12 * support.scale); };
  // A sliver triangle (or a segment of coincident ends) is replaced by its longest edge (or one end):
  // the origin, within the contact tolerance of the simplex, is within the sliver's height of it, and
  // the blow-up below adds well-spread points instead.
  if (np == 3) {
    int32_t longest = 0;
    double ll = -1.0;
    for (int32_t e = 0; e < 3; ++e) {
      const double l = (p[(e + 1) % 3].w - p[e].w).squaredNorm();
      if (l > ll) {
        ll = l;
        longest = e;
      }
    }
    const double nn = (p[1].w - p[0].w).cross(p[2].w - p[0].w).squaredNorm();
    if (!(nn > 1e-18 * ll * ll)) {
      const GjkVertex e0 = p[longest], e1 = p[(longest + 1) % 3];
      p[0] = e0;
      p[1] = e1;
      np = 2;
    }
  }
  if (np == 2 && !((p[1].w - p[0].w).norm() > flat_tol())) np = 1;
  if (np == 0) p[np++] = support(Vec3::UnitX());
  if (np == 1) {
    // Farthest support point from p0 along the six axis directions.
    double best = -1.0;
    GjkVertex far;
    for (int32_t k = 0; k < 6; ++k) {
      const Vec3 d = (k % 2 == 0 ? 1.0 : -1.0) * Vec3::Unit(k / 2);
      const GjkVertex w = support(d);
      const double dist = (w.w - p[0].w).norm();
      if (dist > best) {
        best = dist;
        far = w;
      }
    }
    if (!(best > flat_tol())) {
      // A single point: any direction; away from it when it is off the origin.
      const double len = p[0].w.norm();
      *flat_normal = len > 0.0 ? Vec3(-p[0].w / len) : Vec3(Vec3::UnitZ());
      return EpaStart::kFlat;
    }
    p[np++] = far;
  }
  if (np == 2) {
    const Vec3 axis = p[1].w - p[0].w;
    const double len = axis.norm();
    Vec3 e1, e2;
    OrthonormalBasis(axis / len, &e1, &e2);
    double best = -1.0;
    GjkVertex far;
    for (int32_t k = 0; k < 6; ++k) {
      const double t = k * (M_PI / 3.0);
      const GjkVertex w = support(std::cos(t) * e1 + std::sin(t) * e2);
      const Vec3 rel = w.w - p[0].w;
      const double dist = (rel - (rel.dot(axis) / (len * len)) * axis).norm();
      if (dist > best) {
        best = dist;
        far = w;
      }
    }
    if (!(best > flat_tol())) {
      // A segment: a normal of its line, away from the line when it misses the origin.
      Vec3 off = -(p[0].w - (p[0].w.dot(axis) / (len * len)) * axis);
      const double off_len = off.norm();
      *flat_normal = off_len > flat_tol() ? Vec3(off / off_len) : e1;
      return EpaStart::kFlat;
    }
    p[np++] = far;
  }
  poly->Reset(std::max(support.scale, 1e-300));
  if (np == 3) {
    const Vec3 n = (p[1].w - p[0].w).cross(p[2].w - p[0].w);
    const double nn = n.norm();
    const Vec3 u = nn > 0.0 ? Vec3(n / nn) : Vec3(Vec3::UnitZ());
    const GjkVertex up = support(u), down = support(-u);
    const double hu = u.dot(up.w - p[0].w), hd = -u.dot(down.w - p[0].w);
    const double tol = flat_tol();
    if (!(hu > tol) && !(hd > tol)) {
      // A polygon: its normal, oriented so that the plane lies behind the origin (n · x <= 0).
      *flat_normal = u.dot(p[0].w) <= 0.0 ? u : Vec3(-u);
      return EpaStart::kFlat;
    }
    // The triangle and its farther apex: the origin lies on (or within the contact tolerance of) the
    // triangle, a face of this tetrahedron; the first expansion reaches past it.
    p[3] = hu >= hd ? up : down;
  }
  return poly->InitTetrahedron(poly->AddVertex(p[0]), poly->AddVertex(p[1]), poly->AddVertex(p[2]),
                               poly->AddVertex(p[3]))
             ? EpaStart::kPolytope
             : EpaStart::kFailed;
}

/// Expands *poly toward the support along its closest face's normal until the tolerance is met (or a
/// cap, or rounding, stops it), each face evaluated into *out.
template <class Supporter>
void ExpandEpaPolytope(Supporter& support, const RigidTransform& X_AB, const SignedDistanceOptions& options,
                       EpaPolytope* poly, EpaOutcome* out) {
  while (true) {
    const int32_t f = poly->ClosestFace();
    if (f < 0) {
      out->stop = 1;
      return;
    }
    const EpaPolytope::Face& face = poly->face(f);
    if (out->iterations >= options.max_iterations) {
      out->stop = 2;
      return;
    }
    ++out->iterations;
    const Vec3 n = face.n;
    const double d = face.d;
    const GjkVertex w = support(n);
    const double h = n.dot(w.w);
    // This face's answer: its normal, its support value, and the witnesses of its point closest to
    // the origin.
    const std::array<double, 3> face_weights = poly->ClosestWeights(f);
    out->evaluated = true;
    out->n = n;
    out->h = h;
    out->c_A.setZero();
    out->c_B.setZero();
    for (int32_t k = 0; k < 3; ++k) {
      const GjkVertex& u = poly->vertex(face.v[k]);
      out->c_A += face_weights[k] * u.p_A;
      out->c_B += face_weights[k] * (X_AB.R * u.p_B + X_AB.p);
    }
    if (h - d <= EpaTolerance(options, h, support.scale)) {
      out->converged = true;
      return;
    }
    // When rounding stops the expansion below, a gap within the rounding floor counts as converged.
    const bool within_floor = h - d <= kEpaRoundingFloor * support.scale;
    if (poly->HasVertex(w)) {  // No progress possible: rounding has the last word.
      out->stop = 3;
      out->converged = within_floor;
      return;
    }
    if (poly->num_faces_created() >= options.max_faces) {
      out->stop = 4;
      return;
    }
    if (!poly->Expand(f, poly->AddVertex(w))) {
      out->stop = 5;
      out->converged = within_floor;
      return;
    }
  }
}

/// EPA on the cores from GJK's final simplex `s` (which touches the origin): blows the simplex up to a
/// full-dimensional polytope (or finds the Minkowski difference flat) and expands it.
template <class ShapeA, class ShapeB>
EpaOutcome RunEpa(const ShapeA& a, const ShapeB& b, const RigidTransform& X_AB, const GjkSimplex& s,
                  int32_t start_a, int32_t start_b, const SignedDistanceOptions& options) {
  EpaOutcome out;
  EpaSupporter<ShapeA, ShapeB> support{a, b, X_AB, start_a, start_b, SimplexScale(s), &out.support_calls};
  EpaPolytope poly;
  Vec3 flat_normal = Vec3::UnitZ();
  switch (StartEpaPolytope(support, s, options, &poly, &flat_normal)) {
    case EpaStart::kFlat: {
      // The simplex's point closest to the origin, within the contact tolerance of it, witnesses.
      std::array<double, 4> weights;
      SimplexClosestPoint(s, &weights);
      out.flat = true;
      out.converged = true;
      out.n = flat_normal;
      for (int32_t i = 0; i < s.size; ++i) {
        out.c_A += weights[i] * s.vertices[i].p_A;
        out.c_B += weights[i] * (X_AB.R * s.vertices[i].p_B + X_AB.p);
      }
      return out;
    }
    case EpaStart::kFailed:
      out.stop = 6;
      return out;
    case EpaStart::kPolytope:
      break;
  }
  ExpandEpaPolytope(support, X_AB, options, &poly, &out);
  out.faces = poly.num_faces_created();
  bool inside = false;
  const double lower = poly.LowerBound(&inside);
  out.lower_certified = inside && lower >= 0.0;
  out.lower = out.lower_certified ? lower : 0.0;
  return out;
}

/// One ComputeSignedDistance query: GJK on the cores decides whether they are apart (and by how much);
/// apart, the margins may still overlap (a certified normal, or EPA on the whole shapes); overlapping,
/// EPA on the cores with the margins added along its normal.
template <class ShapeA, class ShapeB>
class SignedDistanceQuery {
 public:
  SignedDistanceQuery(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b, const RigidTransform& X_WB,
                      GjkCache* cache, const SignedDistanceOptions& options)
      : a_(a), b_(b), X_WA_(X_WA), X_WB_(X_WB), options_(options), margin_a_(Margin(a)), margin_b_(Margin(b)),
        margin_(margin_a_ + margin_b_), gjk_cache_(cache != nullptr ? cache : &local_cache_),
        X_AB_(RelativeTransform(X_WA, X_WB)) {}

  Result<SignedDistanceResult> Run() {
    g_ = GjkDistance(CoreView(a_), X_WA_, CoreView(b_), X_WB_, gjk_cache_, options_.gjk);
    r_.gjk_iterations = g_.iterations;
    r_.support_calls = g_.support_calls;
    r_.converged = g_.converged;
    start_a_ = gjk_cache_->vertex_a;
    start_b_ = gjk_cache_->vertex_b;
    // The final simplex's robust closest point u: a point of the cores' A - B, so |u| bounds their
    // distance from above whatever GJK concluded; its weights give the witnesses on the cores.
    simplex_ = &g_.simplex;
    u_A_ = SimplexClosestPoint(*simplex_, &weights_);
    u_norm_ = u_A_.norm();
    scale_ = SimplexScale(g_.simplex);
    contact_ = std::max(options_.gjk.abs_tolerance, 1e-14 * scale_);
    core_upper_ = u_norm_;
    FindCoresApart();
    for (int32_t i = 0; i < simplex_->size; ++i) {
      c_A_ += weights_[i] * simplex_->vertices[i].p_A;
      c_B_ += weights_[i] * (X_AB_.R * simplex_->vertices[i].p_B + X_AB_.p);
    }
    if (apart_) {
      AnswerApart();
    } else {
      AnswerCoresOverlap();
    }
    if (!(std::isfinite(r_.distance) && std::isfinite(r_.lower_bound) && std::isfinite(r_.upper_bound) &&
          r_.normal_W.allFinite() && r_.p_WA.allFinite() && r_.p_WB.allFinite())) {
      return Error{ErrorCode::kInternal, "ComputeSignedDistance produced a non-finite value"};
    }
    return r_;
  }

 private:
  // Separation of the cores along unit n (A's frame): a lower bound on their distance.
  double Separation(const Vec3& n, GjkVertex* w) {
    *w = EpaSupport(a_, b_, X_AB_, n, &start_a_, &start_b_);
    ++r_.support_calls;
    return -n.dot(w->w);
  }

  // From a GJK run that found the cores apart: its closest point v gives the distance and the normal
  // -v / |v| when u realises it (within rounding); v can lie off a sliver simplex, and then u answers.
  // GJK can also stop on rounding without a separating axis: apart counts only once an axis proves it
  // (GJK's lower bound, or the separation along the normal, above the contact tolerance).
  bool TakeApart(const GjkResult& run, const Vec3& v_A) {
    const double v_norm = v_A.norm();
    const bool realised = u_norm_ <= v_norm * (1.0 + 1e-9) + 1e-14 * scale_;
    core_distance_ = realised ? run.distance : u_norm_;
    core_lower_ = std::min(run.lower_bound, core_distance_);
    core_upper_ = std::max(u_norm_, core_distance_);
    const Vec3& dir = realised ? v_A : u_A_;
    const double dir_norm = realised ? v_norm : u_norm_;
    if (dir_norm > 0.0) n_A_ = -dir / dir_norm;
    if (!realised || !(core_lower_ > contact_)) {
      GjkVertex w;
      core_lower_ = std::max(core_lower_, std::min(Separation(n_A_, &w), core_distance_));
    }
    if (!(core_lower_ > contact_)) return false;
    apart_ = true;
    if (!realised) {
      r_.converged = r_.converged && core_distance_ - core_lower_ <= std::max(contact_, 1e-9 * core_distance_);
    }
    return true;
  }

  // Are the cores apart, and by how much: [core_lower_, core_upper_], reported as core_distance_ along
  // n_A_ (from A towards B)?
  void FindCoresApart() {
    if (!g_.intersecting) {
      TakeApart(g_, gjk_cache_->v_A);
      return;
    }
    if (!(u_norm_ > contact_)) return;
    // GJK found contact, yet its simplex's robust closest point is off the origin: a sliver simplex
    // can fool its inside test. An axis separating the cores along -u disproves the contact; failing
    // that, GJK again from u, with a fresh simplex, may find them apart.
    GjkVertex w;
    const Vec3 n = -u_A_ / u_norm_;
    const double sep = Separation(n, &w);
    if (sep > contact_) {
      apart_ = true;
      core_distance_ = u_norm_;
      core_lower_ = std::min(sep, u_norm_);
      core_upper_ = u_norm_;
      n_A_ = n;
      r_.converged = r_.converged && core_distance_ - core_lower_ <= std::max(contact_, 1e-9 * core_distance_);
      return;
    }
    GjkCache fresh;
    fresh.v_A = u_A_;
    retry_ = GjkDistance(CoreView(a_), X_WA_, CoreView(b_), X_WB_, &fresh, options_.gjk);
    r_.gjk_iterations += retry_.iterations;
    r_.support_calls += retry_.support_calls;
    if (retry_.intersecting) return;
    std::array<double, 4> retry_weights;
    const Vec3 retry_u = SimplexClosestPoint(retry_.simplex, &retry_weights);
    const Vec3 saved_u = u_A_;
    const double saved_norm = u_norm_;
    u_A_ = retry_u;
    u_norm_ = retry_u.norm();
    if (TakeApart(retry_, fresh.v_A)) {
      simplex_ = &retry_.simplex;
      weights_ = retry_weights;
      r_.converged = r_.converged && retry_.converged;
    } else {
      u_A_ = saved_u;
      u_norm_ = saved_norm;
      core_upper_ = u_norm_;
    }
  }

  // Fills r_ from an EPA outcome on shapes whose margins (shift_a + shift_b) add to the depth along the
  // same normal; upper bounds the signed distance when EPA's lower bound is not certified.
  void FromEpa(const EpaOutcome& e, double shift_a, double shift_b, double upper) {
    const double extra = shift_a + shift_b;
    r_.epa_iterations += e.iterations;
    r_.support_calls += e.support_calls;
    r_.epa_faces += e.faces;
    r_.method = e.flat ? SignedDistanceMethod::kFlat : SignedDistanceMethod::kEpa;
    if (e.flat) {
      r_.distance = std::min(upper, u_norm_ - extra);
      r_.upper_bound = std::max(r_.distance, upper);
      r_.lower_bound = std::min(r_.distance, -extra);
    } else {
      r_.distance = -(e.h + extra);
      r_.lower_bound = r_.distance;
      r_.upper_bound = std::max(r_.distance, e.lower_certified ? std::min(upper, -(e.lower + extra)) : upper);
      // EPA's answer stands on its own (GJK only gave it a start) once the cores' contact is
      // established (the origin proven inside EPA's polytope, or GJK's simplex touching it), or once
      // the bracket is tight anyway (the origin just outside: EPA's support value then certifies the
      // separation along its normal).
      r_.converged = e.converged && (e.lower_certified || u_norm_ <= contact_ ||
                                     r_.upper_bound - r_.lower_bound <= EpaTolerance(options_, e.h, scale_));
    }
    r_.intersecting = r_.distance <= options_.gjk.abs_tolerance;
    r_.normal_W = X_WA_.R * e.n;
    r_.p_WA = X_WA_ * Vec3(e.c_A + shift_a * e.n);
    r_.p_WB = X_WA_ * Vec3(e.c_B - shift_b * e.n);
  }

  // The cores apart: their distance less the margins, and when only the margins overlap, the depth.
  void AnswerApart() {
    r_.normal_W = X_WA_.R * n_A_;
    r_.distance = core_distance_ - margin_;
    r_.upper_bound = std::max(r_.distance, core_upper_ - margin_);
    r_.lower_bound = std::min(r_.distance, core_lower_ - margin_);
    r_.p_WA = X_WA_ * Vec3(c_A_ + margin_a_ * n_A_);
    r_.p_WB = X_WA_ * Vec3(c_B_ - margin_b_ * n_A_);
    r_.method = r_.distance > 0.0 ? SignedDistanceMethod::kGjk : SignedDistanceMethod::kMargin;
    r_.intersecting = r_.distance <= options_.gjk.abs_tolerance;
    if (r_.distance <= 0.0) AnswerMarginOverlap();
  }

  // Only the margins overlap: depth = margins - core distance. The normal is only as good as the
  // direction between the cores, which near contact of curved cores can be far less accurate than
  // their distance. Certify it: the overlap along n (one support pair) may exceed the largest possible
  // depth, margins - core_upper... at least the exact depth, by the tolerance at most; else try u's
  // direction, and else EPA on the whole shapes (margins folded in) decides.
  void AnswerMarginOverlap() {
    const double depth_at_least = margin_ - core_upper_;
    double overlap = std::numeric_limits<double>::infinity();
    for (int32_t attempt = 0; attempt < 2; ++attempt) {
      const Vec3 n = attempt == 0 ? n_A_ : (u_norm_ > 0.0 ? Vec3(-u_A_ / u_norm_) : n_A_);
      if (attempt == 1 && !(n != n_A_)) break;
      GjkVertex w;
      const double along = margin_ - Separation(n, &w);
      if (along < overlap) {
        overlap = along;
        n_A_ = n;
      }
      if (overlap - depth_at_least <= EpaTolerance(options_, overlap, scale_ + margin_)) break;
    }
    r_.normal_W = X_WA_.R * n_A_;
    r_.p_WA = X_WA_ * Vec3(c_A_ + margin_a_ * n_A_);
    r_.p_WB = X_WA_ * Vec3(c_B_ - margin_b_ * n_A_);
    r_.distance = -overlap;
    r_.lower_bound = r_.distance;
    r_.upper_bound = std::max(r_.distance, core_upper_ - margin_);
    if (overlap - depth_at_least <= EpaTolerance(options_, overlap, scale_ + margin_)) return;
    const Inflated<ShapeA> full_a{&a_};
    const Inflated<ShapeB> full_b{&b_};
    GjkCache full_cache;
    const GjkResult f = GjkDistance(full_a, X_WA_, full_b, X_WB_, &full_cache, options_.gjk);
    r_.gjk_iterations += f.iterations;
    r_.support_calls += f.support_calls;
    if (f.intersecting) {
      const EpaOutcome e = RunEpa(full_a, full_b, X_AB_, f.simplex, full_cache.vertex_a, full_cache.vertex_b, options_);
      if (e.evaluated && e.h < overlap) {
        FromEpa(e, 0.0, 0.0, r_.upper_bound);
        r_.method = SignedDistanceMethod::kEpa;
        return;
      }
    }
    // EPA could not improve on the overlap along n: the bracket [-overlap, core_upper - margin] stands.
    // It is as good as converged when rounding alone keeps it open (the rounding floor, as for EPA
    // itself: on curved cores the support values near the answer stop improving at about 1e-12
    // relative, which a portable build without fused multiply-adds reaches first).
    r_.converged = r_.converged && r_.upper_bound - r_.lower_bound <= kEpaRoundingFloor * (scale_ + margin_);
  }

  // Cores overlap: EPA on the cores, plus the margins along the same normal. |u| (within the contact
  // tolerance) bounds the cores' signed distance from above.
  void AnswerCoresOverlap() {
    const EpaOutcome e = RunEpa(a_, b_, X_AB_, g_.simplex, start_a_, start_b_, options_);
    if (e.flat || e.evaluated) {
      FromEpa(e, margin_a_, margin_b_, u_norm_ - margin_);
      return;
    }
    // EPA could not start (a polytope too thin to orient): the best axis is still a valid answer.
    r_.epa_iterations += e.iterations;
    r_.support_calls += e.support_calls;
    r_.method = SignedDistanceMethod::kEpa;
    r_.converged = false;
    double best = std::numeric_limits<double>::infinity();
    for (int32_t k = 0; k < 6; ++k) {
      const Vec3 d = (k % 2 == 0 ? 1.0 : -1.0) * Vec3::Unit(k / 2);
      GjkVertex w;
      const double along = -Separation(d, &w);
      if (along < best) {
        best = along;
        n_A_ = d;
        c_A_ = w.p_A;
        c_B_ = X_AB_.R * w.p_B + X_AB_.p;
      }
    }
    r_.distance = -(best + margin_);
    r_.lower_bound = r_.distance;
    r_.upper_bound = std::max(r_.distance, u_norm_ - margin_);
    r_.intersecting = r_.distance <= options_.gjk.abs_tolerance;
    r_.normal_W = X_WA_.R * n_A_;
    r_.p_WA = X_WA_ * Vec3(c_A_ + margin_a_ * n_A_);
    r_.p_WB = X_WA_ * Vec3(c_B_ - margin_b_ * n_A_);
  }

  const ShapeA& a_;
  const ShapeB& b_;
  const RigidTransform& X_WA_;
  const RigidTransform& X_WB_;
  const SignedDistanceOptions& options_;
  const double margin_a_, margin_b_, margin_;
  GjkCache local_cache_;
  GjkCache* gjk_cache_;
  const RigidTransform X_AB_;
  SignedDistanceResult r_;
  GjkResult g_, retry_;
  int32_t start_a_ = 0, start_b_ = 0;
  const GjkSimplex* simplex_ = nullptr;
  std::array<double, 4> weights_{};
  Vec3 u_A_ = Vec3::Zero();
  double u_norm_ = 0.0, scale_ = 0.0, contact_ = 0.0;
  bool apart_ = false;
  double core_distance_ = 0.0, core_lower_ = 0.0, core_upper_ = 0.0;
  Vec3 n_A_ = Vec3::UnitZ();
  Vec3 c_A_ = Vec3::Zero(), c_B_ = Vec3::Zero();
};

}  // namespace internal

template <class ShapeA, class ShapeB>
Result<SignedDistanceResult> ComputeSignedDistance(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b,
                                                   const RigidTransform& X_WB, GjkCache* cache,
                                                   const SignedDistanceOptions& options) {
  if (Status st = internal::ValidateSignedDistanceInput(X_WA, X_WB, options); !st.ok()) return st.error();
  if (Status st = internal::ValidateConvexShape(a, "shape a"); !st.ok()) return st.error();
  if (Status st = internal::ValidateConvexShape(b, "shape b"); !st.ok()) return st.error();
  return internal::SignedDistanceQuery<ShapeA, ShapeB>(a, X_WA, b, X_WB, cache, options).Run();
}

}  // namespace proximity::core
