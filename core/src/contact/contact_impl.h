#pragma once
/// @file
/// The definitions behind contact.h: support sets, separating-axis tests, the axis searches and the contact-region templates. Private: included by contact_instances.cc (which compiles every pair of PROX_FOR_EACH_CONVEX_PAIR), contact.cc and the tests.

#include "contact/contact.h"
#include "contact/epa_impl.h"

namespace proximity::core {

namespace internal {

/// ok, or an Error naming the bad field of `options`.
Status ValidateContactOptions(const ContactOptions& options);
/// ok, or an Error naming `what` and the non-finite entry of the pose.
Status ValidatePose(const RigidTransform& X, const char* what);

/// ok when every dimension is finite and >= 0 (and a sphere's centre, a triangle's vertices finite).
Status ValidateContactShape(const Sphere& s, const char* what);
Status ValidateContactShape(const Capsule& s, const char* what);
Status ValidateContactShape(const Box& s, const char* what);
Status ValidateContactShape(const Cylinder& s, const char* what);
Status ValidateContactShape(const Cone& s, const char* what);
Status ValidateContactShape(const Triangle& s, const char* what);
Status ValidateContactShape(const ConvexPolytope& s, const char* what);

/// The non-template part of ComputeContactRegion: projects the support sets (a in frame A, b in frame
/// B) on the plane normal to unit n_W, intersects them and fills m->points and m->stats.
void BuildContactRegion(const SupportSet& a, const RigidTransform& X_WA, const SupportSet& b,
                        const RigidTransform& X_WB, const Vec3& n_W, const ContactOptions& options,
                        ContactManifold* m);

template <class S>
inline constexpr bool kIsPolyhedral =
    std::is_same_v<S, Box> || std::is_same_v<S, Triangle> || std::is_same_v<S, ConvexPolytope>;

/// The answer of the separating-axis test on an overlapping polyhedral pair.
struct SatResult {
  Vec3 n_W = Vec3::UnitZ();  ///< Unit axis from A towards B of the largest separation.
  double separation = 0.0;   ///< Metres: the largest separation found (<= 0 when overlapping).
  int32_t axes = 0;          ///< Axes evaluated (face normals and Minkowski-face edge pairs).
};

/// Separating-axis test of polyhedral shapes over the face normals of both and the cross products of
/// the edge pairs whose Gauss-map arcs cross (the faces of the Minkowski difference). Faces win over
/// edge pairs, and A's faces over B's, unless the other separates by more than `bias` (metres).
SatResult PolyhedralSat(const Box& a, const RigidTransform& X_WA, const Box& b, const RigidTransform& X_WB,
                        double bias);
SatResult PolyhedralSat(const Box& a, const RigidTransform& X_WA, const Triangle& b,
                        const RigidTransform& X_WB, double bias);
SatResult PolyhedralSat(const Box& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                        const RigidTransform& X_WB, double bias);
SatResult PolyhedralSat(const Triangle& a, const RigidTransform& X_WA, const Box& b,
                        const RigidTransform& X_WB, double bias);
SatResult PolyhedralSat(const Triangle& a, const RigidTransform& X_WA, const Triangle& b,
                        const RigidTransform& X_WB, double bias);
SatResult PolyhedralSat(const Triangle& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                        const RigidTransform& X_WB, double bias);
SatResult PolyhedralSat(const ConvexPolytope& a, const RigidTransform& X_WA, const Box& b,
                        const RigidTransform& X_WB, double bias);
SatResult PolyhedralSat(const ConvexPolytope& a, const RigidTransform& X_WA, const Triangle& b,
                        const RigidTransform& X_WB, double bias);
SatResult PolyhedralSat(const ConvexPolytope& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                        const RigidTransform& X_WB, double bias);

/// Candidate axes of a shape in W for the axis search: face normals (and symmetry axes) in *faces, edge
/// directions (and axes of revolution) in *edges. Polytopes give every face normal and edge direction.
void AppendCandidateAxes(const Sphere& s, const Mat3& R_WS, std::vector<Vec3>* faces, std::vector<Vec3>* edges);
void AppendCandidateAxes(const Capsule& s, const Mat3& R_WS, std::vector<Vec3>* faces, std::vector<Vec3>* edges);
void AppendCandidateAxes(const Box& s, const Mat3& R_WS, std::vector<Vec3>* faces, std::vector<Vec3>* edges);
void AppendCandidateAxes(const Cylinder& s, const Mat3& R_WS, std::vector<Vec3>* faces, std::vector<Vec3>* edges);
void AppendCandidateAxes(const Cone& s, const Mat3& R_WS, std::vector<Vec3>* faces, std::vector<Vec3>* edges);
void AppendCandidateAxes(const Triangle& s, const Mat3& R_WS, std::vector<Vec3>* faces, std::vector<Vec3>* edges);
void AppendCandidateAxes(const ConvexPolytope& s, const Mat3& R_WS, std::vector<Vec3>* faces,
                         std::vector<Vec3>* edges);

/// A unit vector orthogonal to unit n.
Vec3 AnyOrthogonal(const Vec3& n);

/// The core of a shape swept by a ball (Sphere: its centre; Capsule: its segment); other shapes are
/// their own core.
inline Sphere CoreShape(const Sphere& s) { return Sphere{s.center, 0.0}; }
inline Capsule CoreShape(const Capsule& c) { return Capsule{0.0, c.half_length}; }
template <class S>
const S& CoreShape(const S& s) {
  return s;
}
template <class S>
inline constexpr bool kHasMargin = std::is_same_v<S, Sphere> || std::is_same_v<S, Capsule>;

/// Overlap of posed shapes along unit d_W (from A towards B), metres: max over A of d·x minus min over B
/// of d·x. For overlapping shapes every value bounds the penetration depth from above, and the minimum
/// over unit directions is the depth.
template <class ShapeA, class ShapeB>
double OverlapAlong(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b, const RigidTransform& X_WB,
                    const Vec3& d_W) {
  const Vec3 s_A = X_WA * Support(a, Vec3(X_WA.R.transpose() * d_W));
  const Vec3 s_B = X_WB * Support(b, Vec3(-(X_WB.R.transpose() * d_W)));
  return d_W.dot(s_A - s_B);
}

/// Whether the points of `s` lie on a segment of positive length (within 1e-9 of its length); sets
/// *e_W to its unit direction rotated by R_WS.
inline bool SegmentDirection(const SupportSet& s, const Mat3& R_WS, Vec3* e_W) {
  if (s.size() < 2) return false;
  int32_t i0 = 0, i1 = 0;
  double far = 0.0;
  for (int32_t i = 1; i < s.size(); ++i) {
    const double d = (s.p_S[i] - s.p_S[0]).squaredNorm();
    if (d > far) {
      far = d;
      i1 = i;
    }
  }
  for (int32_t i = 0; i < s.size(); ++i) {
    const double d = (s.p_S[i] - s.p_S[i1]).squaredNorm();
    if (d > far) {
      far = d;
      i0 = i;
    }
  }
  if (!(far > 0.0)) return false;
  const Vec3 u = (s.p_S[i1] - s.p_S[i0]) / std::sqrt(far);
  for (const Vec3& p : s.p_S) {
    const Vec3 r = p - s.p_S[i0];
    if ((r - r.dot(u) * u).squaredNorm() > 1e-18 * far) return false;
  }
  *e_W = R_WS * u;
  return true;
}

/// Local refinement of a contact axis: a pattern search on the unit sphere that tilts unit *n_W by
/// `step` towards eight directions normal to it (their fan turned by the golden angle at every round) and
/// keeps the first tilt that lowers the overlap. When none does, it also tries the two tilts along each
/// ridge of the overlap at *n_W: where a shape's support set is a segment (an edge, a cylinder's side
/// line, a cone's generator, a capsule's axis), the overlap has a crease whose tangent is the segment
/// crossed with the axis, and descent along it hides in a wedge the fan can miss. Only then the step
/// halves, down to 1e-10 rad or 1000 evaluations, or until the overlap reaches `target` (a known lower
/// bound on it, such as minus GJK's distance; -infinity for none). For separated shapes the overlap is minus the
/// separation along the axis, whose sub-level sets are convex cones, so the search approaches the exact
/// normal (the direction of the closest points); for overlapping shapes a local minimum of the depth.
/// Updates *n_W and *overlap (which must hold the overlap along *n_W) and counts evaluations in *axes.
template <class ShapeA, class ShapeB>
void PolishAxis(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b, const RigidTransform& X_WB,
                const ContactOptions& options, double step, double target, Vec3* n_W, double* overlap,
                int32_t* axes) {
  Vec3 best = *n_W;
  double best_overlap = *overlap;
  int32_t budget = 1000;
  double turn = 0.0;
  SupportSet sa, sb;
  const auto probe = [&](const Vec3& t) {
    const Vec3 d = (best + step * t).normalized();
    const double o = OverlapAlong(a, X_WA, b, X_WB, d);
    ++*axes;
    --budget;
    if (!(o < best_overlap)) return false;
    best_overlap = o;
    best = d;
    return true;
  };
  while (step > 1e-10 && budget > 0 && best_overlap > target) {
    const Vec3 t1 = AnyOrthogonal(best);
    const Vec3 t2 = best.cross(t1);
    bool moved = false;
    for (int32_t k = 0; k < 8 && !moved; ++k) {
      const double angle = turn + k * (M_PI / 4.0);
      moved = probe(std::cos(angle) * t1 + std::sin(angle) * t2);
    }
    turn += 2.399963229728653;
    if (!moved) {
      ComputeSupportSet(a, Vec3(X_WA.R.transpose() * best), options, &sa);
      ComputeSupportSet(b, Vec3(-(X_WB.R.transpose() * best)), options, &sb);
      Vec3 ea, eb;
      const bool seg_a = SegmentDirection(sa, X_WA.R, &ea), seg_b = SegmentDirection(sb, X_WB.R, &eb);
      if (seg_a && seg_b) {
        // Two creases cross at the normal of both segments.
        const Vec3 c = ea.cross(eb);
        const double cn = c.norm();
        if (cn > 1e-9) {
          const Vec3 d = c.dot(best) >= 0.0 ? Vec3(c / cn) : Vec3(-c / cn);
          const double o = OverlapAlong(a, X_WA, b, X_WB, d);
          ++*axes;
          --budget;
          if (o < best_overlap) {
            best_overlap = o;
            best = d;
            moved = true;
          }
        }
      }
      for (const Vec3& e : {Vec3(seg_a ? ea : Vec3::Zero()), Vec3(seg_b ? eb : Vec3::Zero())}) {
        const Vec3 t = e.cross(best);
        const double tn = t.norm();
        if (moved || !(tn > 1e-12)) continue;
        moved = probe(t / tn) || probe(-t / tn);
      }
    }
    if (!moved) step *= 0.5;
  }
  *n_W = best;
  *overlap = best_overlap;
}

/// Replaces unit *n_W by the face normal (a face normal or symmetry axis of either shape, see
/// AppendCandidateAxes, in either sense) within `angle` of it that has the least overlap, when that
/// overlap is no larger than *overlap: contacts on a face get that face's normal exactly.
template <class ShapeA, class ShapeB>
void SnapToFaceNormal(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b, const RigidTransform& X_WB,
                      double angle, Vec3* n_W, double* overlap, int32_t* axes) {
  std::vector<Vec3> faces, edges;
  AppendCandidateAxes(a, X_WA.R, &faces, &edges);
  AppendCandidateAxes(b, X_WB.R, &faces, &edges);
  const double cos_angle = std::cos(angle);
  for (const Vec3& f : faces) {
    const double norm = f.norm();
    if (!(norm > 0.0) || !std::isfinite(norm)) continue;
    const Vec3 u = f / norm;
    const double c = u.dot(*n_W);
    if (std::abs(c) < cos_angle) continue;
    const Vec3 d = c > 0.0 ? u : Vec3(-u);
    const double o = OverlapAlong(a, X_WA, b, X_WB, d);
    ++*axes;
    if (o <= *overlap) {
      *overlap = o;
      *n_W = d;
    }
  }
}

/// The axis search of ComputeContacts for overlapping pairs EPA cannot answer: candidate axes (face
/// normals, axes, cross products of edge directions, the line between the frame origins, and 64
/// directions spread over the sphere on a Fibonacci lattice), then PolishAxis from the three best
/// candidates that are more than 0.1 rad apart, keeping the least overlap. Sets the unit axis *n_W (from
/// A towards B) and its overlap *overlap (>= the penetration depth; a local search, so deep overlaps may
/// end above the depth); counts evaluations in *axes.
template <class ShapeA, class ShapeB>
void SearchPenetrationAxis(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b,
                           const RigidTransform& X_WB, const ContactOptions& options, Vec3* n_W,
                           double* overlap, int32_t* axes) {
  std::vector<Vec3> faces, edges_a, edges_b;
  AppendCandidateAxes(a, X_WA.R, &faces, &edges_a);
  AppendCandidateAxes(b, X_WB.R, &faces, &edges_b);
  constexpr int32_t kStarts = 3;
  std::array<Vec3, kStarts> start;
  std::array<double, kStarts> start_overlap;
  start.fill(Vec3::UnitZ());
  start_overlap.fill(std::numeric_limits<double>::infinity());
  // Keeps the kStarts least overlaps among mutually distant axes.
  const auto keep = [&](const Vec3& v, double o) {
    for (int32_t k = 0; k < kStarts; ++k) {
      if (std::isfinite(start_overlap[k]) && v.dot(start[k]) > std::cos(0.1)) {
        if (o < start_overlap[k]) {
          start_overlap[k] = o;
          start[k] = v;
        }
        return;
      }
    }
    int32_t worst = 0;
    for (int32_t k = 1; k < kStarts; ++k)
      if (start_overlap[k] > start_overlap[worst]) worst = k;
    if (o < start_overlap[worst]) {
      start_overlap[worst] = o;
      start[worst] = v;
    }
  };
  const auto consider = [&](const Vec3& d) {
    const double norm = d.norm();
    if (!(norm > 1e-12) || !std::isfinite(norm)) return;
    const Vec3 u = d / norm;
    for (const Vec3& v : {u, Vec3(-u)}) {
      keep(v, OverlapAlong(a, X_WA, b, X_WB, v));
      ++*axes;
    }
  };
  consider(X_WB.p - X_WA.p);
  for (const Vec3& f : faces) consider(f);
  for (const Vec3& ea : edges_a)
    for (const Vec3& eb : edges_b) consider(ea.cross(eb));
  for (int32_t k = 0; k < 32; ++k) {  // Both senses of each: 64 directions.
    const double z = 1.0 - (2.0 * k + 1.0) / 64.0;
    const double r = std::sqrt(std::max(0.0, 1.0 - z * z)), phi = 2.399963229728653 * k;
    consider(Vec3(r * std::cos(phi), r * std::sin(phi), z));
  }
  Vec3 best = Vec3::UnitZ();
  double best_overlap = std::numeric_limits<double>::infinity();
  for (int32_t k = 0; k < kStarts; ++k) {
    if (!std::isfinite(start_overlap[k])) continue;
    PolishAxis(a, X_WA, b, X_WB, options, 0.1, -std::numeric_limits<double>::infinity(), &start[k],
               &start_overlap[k], axes);
    if (start_overlap[k] < best_overlap) {
      best_overlap = start_overlap[k];
      best = start[k];
    }
  }
  if (!std::isfinite(best_overlap)) {
    best = Vec3::UnitZ();
    best_overlap = OverlapAlong(a, X_WA, b, X_WB, best);
    ++*axes;
  }
  SnapToFaceNormal(a, X_WA, b, X_WB, options.feature_angle_tolerance, &best, &best_overlap, axes);
  *n_W = best;
  *overlap = best_overlap;
}

/// Shapes with curved surfaces whose GJK witness direction is only approximate (GJK's distance
/// converges to second order in the direction's error there): ComputeContacts starts its polish of the
/// direction with a wider step for them.
template <class S>
inline constexpr bool kCurvedRim = std::is_same_v<S, Cylinder> || std::is_same_v<S, Cone>;

}  // namespace internal

template <class ShapeA, class ShapeB>
Result<ContactManifold> ComputeContactRegion(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b,
                                             const RigidTransform& X_WB, const Vec3& n_W,
                                             double signed_distance, const ContactOptions& options) {
  if (Status s = internal::ValidateContactOptions(options); !s.ok()) return s.error();
  if (Status s = internal::ValidatePose(X_WA, "X_WA"); !s.ok()) return s.error();
  if (Status s = internal::ValidatePose(X_WB, "X_WB"); !s.ok()) return s.error();
  if (Status s = internal::ValidateContactShape(a, "shape a"); !s.ok()) return s.error();
  if (Status s = internal::ValidateContactShape(b, "shape b"); !s.ok()) return s.error();
  const double norm = n_W.norm();
  if (!std::isfinite(norm) || !(norm > 1e-12)) {
    return InvalidArgument("contact normal n_W must be finite and nonzero");
  }
  if (!std::isfinite(signed_distance) || signed_distance > options.contact_margin) {
    return InvalidArgument("signed_distance must be finite and at most contact_margin (" +
                           std::to_string(options.contact_margin) + " m), got " + std::to_string(signed_distance));
  }
  ContactManifold m;
  m.normal_W = n_W / norm;
  m.signed_distance = signed_distance;
  m.source = ContactNormalSource::kGiven;
  SupportSet sa, sb;
  ComputeSupportSet(a, Vec3(X_WA.R.transpose() * m.normal_W), options, &sa);
  ComputeSupportSet(b, Vec3(-(X_WB.R.transpose() * m.normal_W)), options, &sb);
  internal::BuildContactRegion(sa, X_WA, sb, X_WB, m.normal_W, options, &m);
  return m;
}

template <class ShapeA, class ShapeB>
Result<ContactManifold> ComputeContacts(const ShapeA& a, const RigidTransform& X_WA, const ShapeB& b,
                                        const RigidTransform& X_WB, const ContactOptions& options,
                                        GjkCache* cache) {
  if (Status s = internal::ValidateContactOptions(options); !s.ok()) return s.error();
  if (Status s = internal::ValidatePose(X_WA, "X_WA"); !s.ok()) return s.error();
  if (Status s = internal::ValidatePose(X_WB, "X_WB"); !s.ok()) return s.error();
  if (Status s = internal::ValidateContactShape(a, "shape a"); !s.ok()) return s.error();
  if (Status s = internal::ValidateContactShape(b, "shape b"); !s.ok()) return s.error();

  constexpr bool kCurved = internal::kCurvedRim<ShapeA> || internal::kCurvedRim<ShapeB>;
  ContactManifold m;
  const GjkResult g = GjkDistance(a, X_WA, b, X_WB, cache, options.gjk);
  m.stats.gjk_iterations += g.iterations;
  bool found = false, polish = false;
  // A lower bound on the overlap along any axis (minus an upper bound on the signed distance) where the
  // polish may stop, with room for the bound's own accuracy.
  double target = -std::numeric_limits<double>::infinity();
  const double scale = std::max({1.0, X_WA.p.norm(), X_WB.p.norm()});
  const auto bound = [scale](double signed_distance_upper) {
    return -signed_distance_upper + 1e-12 * std::abs(signed_distance_upper) + 1e-14 * scale;
  };
  if (!g.intersecting) {
    const Vec3 d = g.p_WB - g.p_WA;
    const double dn = d.norm();
    m.signed_distance = g.distance;
    if (dn > 0.0 && std::isfinite(dn)) m.normal_W = d / dn;
    if (g.distance > options.contact_margin) {
      m.source = ContactNormalSource::kSeparated;
      return m;
    }
    if (dn > 0.0 && std::isfinite(dn)) {
      m.source = ContactNormalSource::kGjkWitness;
      found = true;
      polish = true;
      target = bound(g.distance);
    }
  }
  if (!found) {
    if constexpr (internal::kHasMargin<ShapeA> || internal::kHasMargin<ShapeB>) {
      // Shallow overlap of a ball-swept shape: the cores are apart, and their closest points give the
      // normal.
      const GjkResult c = GjkDistance(internal::CoreShape(a), X_WA, internal::CoreShape(b), X_WB, nullptr,
                                      options.gjk);
      m.stats.gjk_iterations += c.iterations;
      const Vec3 d = c.p_WB - c.p_WA;
      const double dn = d.norm();
      if (!c.intersecting && dn > 1e-9 * scale && std::isfinite(dn)) {
        m.normal_W = d / dn;
        m.source = ContactNormalSource::kCoreGjk;
        found = true;
        polish = true;
        target = bound(c.distance - Margin(a) - Margin(b));
      }
    }
  }
  if (!found) {
    if constexpr (internal::kIsPolyhedral<ShapeA> && internal::kIsPolyhedral<ShapeB>) {
      const internal::SatResult s =
          internal::PolyhedralSat(a, X_WA, b, X_WB, options.feature_distance_tolerance);
      m.stats.axes_tested += s.axes;
      m.normal_W = s.n_W;
      m.source = ContactNormalSource::kSat;
    } else {
      SignedDistanceOptions epa_options;
      epa_options.gjk = options.gjk;
      const Result<SignedDistanceResult> e = ComputeSignedDistance(a, X_WA, b, X_WB, nullptr, epa_options);
      if (e.ok() && e.value().normal_W.allFinite() && e.value().normal_W.norm() > 0.5) {
        m.normal_W = e.value().normal_W.normalized();
        m.stats.gjk_iterations += e.value().gjk_iterations;
        m.stats.epa_iterations += e.value().epa_iterations;
        m.source = ContactNormalSource::kEpa;
        polish = true;
        target = bound(e.value().upper_bound);
      } else {
        double overlap = 0.0;
        internal::SearchPenetrationAxis(a, X_WA, b, X_WB, options, &m.normal_W, &overlap, &m.stats.axes_tested);
        m.source = ContactNormalSource::kAxisSearch;
      }
    }
  }
  double overlap = internal::OverlapAlong(a, X_WA, b, X_WB, m.normal_W);
  ++m.stats.axes_tested;
  if (polish) {
    // A face normal first (often exact, and then the polish stops at once), then the local search, then
    // a face normal again for the search's end.
    internal::SnapToFaceNormal(a, X_WA, b, X_WB, options.feature_angle_tolerance, &m.normal_W, &overlap,
                               &m.stats.axes_tested);
    internal::PolishAxis(a, X_WA, b, X_WB, options, kCurved ? 1e-2 : 1e-4, target, &m.normal_W, &overlap,
                         &m.stats.axes_tested);
    internal::SnapToFaceNormal(a, X_WA, b, X_WB, options.feature_angle_tolerance, &m.normal_W, &overlap,
                               &m.stats.axes_tested);
  }
  m.signed_distance = -overlap;
  SupportSet sa, sb;
  ComputeSupportSet(a, Vec3(X_WA.R.transpose() * m.normal_W), options, &sa);
  ComputeSupportSet(b, Vec3(-(X_WB.R.transpose() * m.normal_W)), options, &sb);
  internal::BuildContactRegion(sa, X_WA, sb, X_WB, m.normal_W, options, &m);
  return m;
}

}  // namespace proximity::core
