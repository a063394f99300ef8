// Differential tests of ComputeSignedDistance against FCL 0.7 (fcl::collide and fcl::distance with the
// libccd and the independent GJK solvers) on primitive and convex-polytope pairs. Where the two differ
// beyond a tolerance, an independent oracle decides: exact feature-based formulas for points, segments
// and polytopes (spheres and capsules as a point or a segment plus a margin), and bounds from inscribed
// and circumscribed tessellations for cylinders and cones. Ours must agree with the oracle; FCL's wrong
// answers are counted and printed, never asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/test_util.h"
#include "peers/fcl_peer.h"
#include "contact/epa.h"
#include "narrowphase/triangle.h"

namespace proximity::core {
namespace {

using peers::FclPose;
using testing::Cases;

// ---- The oracle ----------------------------------------------------------------------------------

// A convex core posed in W: a point, a segment or a polytope (vertices, outward face normals, triangles,
// and edges with the normals of their two faces).
struct PosedCore {
  enum Kind { kPoint, kSegment, kPolytope } kind = kPoint;
  Vec3 a = Vec3::Zero(), b = Vec3::Zero();  // Point a; segment a-b.
  std::vector<Vec3> v;
  std::vector<Vec3> face_n;
  std::vector<double> face_d;  // Outward plane offsets: n · x <= d inside.
  std::vector<std::array<int, 3>> tris;
  struct Edge {
    int i, j;
    Vec3 n1, n2;
  };
  std::vector<Edge> edges;

  double Support(const Vec3& u) const {
    switch (kind) {
      case kPoint: return u.dot(a);
      case kSegment: return std::max(u.dot(a), u.dot(b));
      default: {
        double best = -std::numeric_limits<double>::infinity();
        for (const Vec3& x : v) best = std::max(best, u.dot(x));
        return best;
      }
    }
  }
  bool Contains(const Vec3& p) const {
    for (size_t f = 0; f < face_n.size(); ++f) {
      if (face_n[f].dot(p) > face_d[f]) return false;
    }
    return true;
  }
  TriangleMesh Mesh() const {
    TriangleMesh m;
    m.vertices = v;
    for (const auto& t : tris) m.triangles.push_back({t[0], t[1], t[2]});
    return m;
  }
};

PosedCore Pose(const ConvexPolytope& hull, const RigidTransform& X_WS) {
  PosedCore c;
  c.kind = PosedCore::kPolytope;
  for (const Vec3& x : hull.vertices()) c.v.push_back(X_WS * x);
  for (size_t f = 0; f < hull.faces().size(); ++f) {
    const Vec3 n = X_WS.R * hull.face_planes()[f].normal;
    c.face_n.push_back(n);
    c.face_d.push_back(n.dot(c.v[hull.faces()[f][0]]));
    c.tris.push_back(hull.faces()[f]);
  }
  std::map<std::pair<int, int>, std::vector<int>> faces_of;
  for (size_t f = 0; f < hull.faces().size(); ++f) {
    for (int e = 0; e < 3; ++e) {
      const int i = hull.faces()[f][e], j = hull.faces()[f][(e + 1) % 3];
      faces_of[{std::min(i, j), std::max(i, j)}].push_back(static_cast<int>(f));
    }
  }
  for (const auto& [ij, fs] : faces_of) {
    if (fs.size() != 2) continue;
    const Vec3 n1 = c.face_n[fs[0]], n2 = c.face_n[fs[1]];
    if (n1.cross(n2).norm() < 1e-12) continue;  // A diagonal of a planar facet: no arc on the Gauss map.
    c.edges.push_back({ij.first, ij.second, n1, n2});
  }
  return c;
}

// Whether the Gauss-map arcs (a, b) and (c, d) on the unit sphere cross (Gregorius, "The Separating Axis
// Test between Convex Polyhedra", GDC 2013), inclusively: borderline pairs pass, as extra candidate
// axes cannot lower the minimum below the truth.
bool ArcsMayCross(const Vec3& a, const Vec3& b, const Vec3& c, const Vec3& d) {
  const Vec3 bxa = b.cross(a), dxc = d.cross(c);
  const double cba = c.dot(bxa), dba = d.dot(bxa), adc = a.dot(dxc), bdc = b.dot(dxc);
  const double eps = 1e-12;
  return cba * dba < eps && adc * bdc < eps && cba * bdc > -eps;
}

// Smallest overlap h_A(u) + h_B(-u) over candidate axes that include every face normal of the
// Minkowski difference A - B (exact penetration depth when positive; <= 0 when A and B are disjoint or
// touch). `prune`: keep only the edge pairs whose Gauss-map arcs cross.
double FeatureDepth(const PosedCore& A, const PosedCore& B, bool prune = true) {
  double best = std::numeric_limits<double>::infinity();
  const auto consider = [&](Vec3 u) {
    const double len = u.norm();
    if (!(len > 0.0)) return;
    u /= len;
    best = std::min(best, A.Support(u) + B.Support(-u));
    best = std::min(best, A.Support(-u) + B.Support(u));
  };
  for (const Vec3& n : A.face_n) consider(n);
  for (const Vec3& n : B.face_n) consider(n);
  if (A.kind == PosedCore::kPolytope && B.kind == PosedCore::kPolytope) {
    for (const auto& ea : A.edges) {
      const Vec3 da = A.v[ea.j] - A.v[ea.i];
      for (const auto& eb : B.edges) {
        if (prune && !ArcsMayCross(ea.n1, ea.n2, -eb.n1, -eb.n2)) continue;
        const Vec3 c = da.cross(B.v[eb.j] - B.v[eb.i]);
        if (c.norm() > 1e-12 * da.norm()) consider(c);
      }
    }
  } else {
    // A segment against a polytope: the segment's direction crossed with the polytope's edges.
    const PosedCore& seg = A.kind == PosedCore::kSegment ? A : B;
    const PosedCore& poly = A.kind == PosedCore::kPolytope ? A : B;
    if (seg.kind == PosedCore::kSegment && poly.kind == PosedCore::kPolytope) {
      for (const auto& e : poly.edges) consider((seg.b - seg.a).cross(poly.v[e.j] - poly.v[e.i]));
    }
  }
  return best;
}

// Exact distance between two cores (0 when they share a point), by brute force over features.
double CoreDistance(const PosedCore& A, const PosedCore& B) {
  using K = PosedCore;
  if (A.kind == K::kPolytope && B.kind == K::kPolytope) {
    if (A.Contains(B.v[0]) || B.Contains(A.v[0])) return 0.0;
    return testing::BruteForceDistance(A.Mesh(), RigidTransform(), B.Mesh(), RigidTransform());
  }
  if (A.kind != K::kPolytope && B.kind != K::kPolytope) {
    Vec3 cp, cq;
    const Vec3 a1 = A.kind == K::kSegment ? A.b : A.a, b1 = B.kind == K::kSegment ? B.b : B.a;
    return std::sqrt(SegmentSegmentDistanceSquared(A.a, a1, B.a, b1, &cp, &cq));
  }
  const PosedCore& low = A.kind == K::kPolytope ? B : A;
  const PosedCore& poly = A.kind == K::kPolytope ? A : B;
  const Vec3 p0 = low.a, p1 = low.kind == K::kSegment ? low.b : low.a;
  if (poly.Contains(p0) || poly.Contains(p1)) return 0.0;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& t : poly.tris) {
    const Vec3 &x = poly.v[t[0]], &y = poly.v[t[1]], &z = poly.v[t[2]];
    double s;
    if (low.kind == K::kSegment && SegmentTriangle(p0, p1, x, y, z, &s)) return 0.0;
    best = std::min(best, (ClosestPointOnTriangle(p0, x, y, z) - p0).norm());
    best = std::min(best, (ClosestPointOnTriangle(p1, x, y, z) - p1).norm());
    Vec3 cp, cq;
    for (const auto& [u, w] : {std::pair{x, y}, std::pair{y, z}, std::pair{z, x}}) {
      best = std::min(best, std::sqrt(SegmentSegmentDistanceSquared(p0, p1, u, w, &cp, &cq)));
    }
  }
  return best;
}

// Signed distance between two cores: minus the penetration depth when their interiors overlap, else
// their distance. Lower-dimensional pairs (points and segments) never have overlapping interiors.
double CoreSignedDistance(const PosedCore& A, const PosedCore& B) {
  if (A.kind == PosedCore::kPolytope || B.kind == PosedCore::kPolytope) {
    const double depth = FeatureDepth(A, B);
    if (depth > 0.0) return -depth;
  }
  return CoreDistance(A, B);
}

// A shape for the oracle: a core (exact, or bracketed by an inner and an outer polytope) plus a margin.
struct OracleShape {
  PosedCore::Kind kind = PosedCore::kPoint;
  Vec3 a = Vec3::Zero(), b = Vec3::Zero();                // Point or segment, frame S.
  std::shared_ptr<const ConvexPolytope> inner, outer;     // Polytope cores (equal when exact).
  double margin = 0.0;

  PosedCore Posed(const RigidTransform& X_WS, bool use_outer) const {
    if (kind == PosedCore::kPolytope) return Pose(use_outer ? *outer : *inner, X_WS);
    PosedCore c;
    c.kind = kind;
    c.a = X_WS * a;
    c.b = X_WS * b;
    return c;
  }
};

// Certified bracket [lo, hi] on the signed distance of a pair: signed distance shrinks as the shapes
// grow, so the outer cores give the lower end and the inner cores the upper end.
std::pair<double, double> OracleBracket(const OracleShape& A, const RigidTransform& X_WA, const OracleShape& B,
                                        const RigidTransform& X_WB) {
  const double margin = A.margin + B.margin;
  const double lo = CoreSignedDistance(A.Posed(X_WA, true), B.Posed(X_WB, true)) - margin;
  const bool exact = A.inner == A.outer && B.inner == B.outer;
  const double hi = exact ? lo : CoreSignedDistance(A.Posed(X_WA, false), B.Posed(X_WB, false)) - margin;
  return {lo, hi};
}

// ---- The shapes, in all three representations ----------------------------------------------------

constexpr int kTessellation = 64;

struct Zoo {
  Sphere sphere{Vec3::Zero(), 0.25};
  Box box{Vec3(0.3, 0.2, 0.15)};
  Capsule capsule{0.12, 0.2};
  Cylinder cylinder{0.2, 0.25};
  Cone cone{0.25, 0.25};
  std::shared_ptr<const ConvexPolytope> hull;
  std::vector<std::shared_ptr<fcl::CollisionGeometryd>> fcl;
  std::vector<OracleShape> oracle;
  static constexpr int kKinds = 6;
  static constexpr const char* kNames[kKinds] = {"sphere", "box", "capsule", "cylinder", "cone", "convex"};

  explicit Zoo(std::mt19937_64& rng) : hull(testing::RandomHull(rng, 24, 0.18, 0.5)) {
    auto vertices = std::make_shared<std::vector<fcl::Vector3d>>(hull->vertices().begin(), hull->vertices().end());
    auto faces = std::make_shared<std::vector<int>>();
    for (const auto& f : hull->faces()) faces->insert(faces->end(), {3, f[0], f[1], f[2]});
    fcl = {std::make_shared<fcl::Sphered>(sphere.radius),
           std::make_shared<fcl::Boxd>(2 * box.half_extents),
           std::make_shared<fcl::Capsuled>(capsule.radius, 2 * capsule.half_length),
           std::make_shared<fcl::Cylinderd>(cylinder.radius, 2 * cylinder.half_length),
           std::make_shared<fcl::Coned>(cone.radius, 2 * cone.half_height),
           std::make_shared<fcl::Convexd>(vertices, hull->num_faces(), faces)};
    for (auto& g : fcl) g->computeLocalAABB();
    oracle.resize(kKinds);
    oracle[0] = {PosedCore::kPoint, Vec3::Zero(), Vec3::Zero(), nullptr, nullptr, sphere.radius};
    const auto box_hull = ConvexPolytope::Build(MakeBoxMesh(2 * box.half_extents)).value();
    oracle[1] = {PosedCore::kPolytope, Vec3::Zero(), Vec3::Zero(), box_hull, box_hull, 0.0};
    oracle[2] = {PosedCore::kSegment, Vec3(0, 0, -capsule.half_length), Vec3(0, 0, capsule.half_length), nullptr,
                 nullptr, capsule.radius};
    oracle[3] = {PosedCore::kPolytope, Vec3::Zero(), Vec3::Zero(),
                 testing::TessellatedHull(cylinder, kTessellation, false),
                 testing::TessellatedHull(cylinder, kTessellation, true), 0.0};
    oracle[4] = {PosedCore::kPolytope, Vec3::Zero(), Vec3::Zero(), testing::TessellatedHull(cone, kTessellation, false),
                 testing::TessellatedHull(cone, kTessellation, true), 0.0};
    oracle[5] = {PosedCore::kPolytope, Vec3::Zero(), Vec3::Zero(), hull, hull, 0.0};
  }

  template <class F>
  void Visit(int kind, F&& f) const {
    switch (kind) {
      case 0: return f(sphere);
      case 1: return f(box);
      case 2: return f(capsule);
      case 3: return f(cylinder);
      case 4: return f(cone);
      default: return f(*hull);
    }
  }
};

TEST(ConvexFclOracle, PrunedFeatureDepthMatchesAllEdgePairs) {
  // The Gauss-map pruning only skips edge pairs that are no faces of A - B: it must not change the
  // minimum.
  std::mt19937_64 rng(201);
  int overlapping = 0;
  for (int i = 0; i < Cases(200); ++i) {
    const auto a = testing::RandomHull(rng, 6 + static_cast<int>(rng() % 20), 0.3, 0.5);
    const auto b = i % 4 == 0 ? testing::TessellatedHull(Cylinder{0.2, 0.3}, 12, i % 8 == 0)
                              : testing::RandomHull(rng, 6 + static_cast<int>(rng() % 20), 0.3, 0.5);
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.3), Vec3::Constant(0.3));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.3), Vec3::Constant(0.3));
    const PosedCore A = Pose(*a, X_WA), B = Pose(*b, X_WB);
    const double pruned = FeatureDepth(A, B, true), all = FeatureDepth(A, B, false);
    if (all > 0) ++overlapping;
    // Overlapping: the same depth. Apart: both <= 0 (a non-face axis may then give a lower value).
    if (std::max(pruned, all) > 0) {
      EXPECT_NEAR(pruned, all, 1e-12) << "case " << i;
    } else {
      EXPECT_LE(pruned, 0.0) << "case " << i;
    }
    // And the sign says whether they overlap (brute force over triangles and containment).
    const bool apart = CoreDistance(A, B) > 1e-12;
    if (apart) {
      EXPECT_LE(all, 0.0);
    } else if (all < -1e-12) {
      ADD_FAILURE() << "case " << i << ": overlapping hulls with a separating axis";
    }
  }
  EXPECT_GT(overlapping, Cases(200) / 5);
}

// ---- The differential test -----------------------------------------------------------------------

struct Tally {
  int compared = 0, agree = 0, fcl_wrong = 0, sign_flipped = 0, undecided = 0, fcl_no_answer = 0, fcl_abort = 0;
  double worst_fcl_error = 0.0;
  std::string worst_case;
  std::vector<double> magnitude_errors;  // ||FCL| - |ours|| / |ours| of FCL's wrong answers.
};

struct FclAnswers {
  bool collide = false;
  double depth = -INFINITY;      // Largest contact penetration depth (collide, enable_contact), as reported.
  bool has_contacts = false;
  double signed_distance = NAN;  // distance() with enable_signed_distance (nan: not asked).
  bool would_abort = false;      // See AskFcl.
};

FclAnswers AskFcl(const fcl::CollisionGeometryd* a, const RigidTransform& X_WA, const fcl::CollisionGeometryd* b,
                  const RigidTransform& X_WB, fcl::GJKSolverType solver) {
  FclAnswers out;
  fcl::CollisionRequestd creq(16, true);
  creq.gjk_solver_type = solver;
  fcl::CollisionResultd cres;
  fcl::collide(a, FclPose(X_WA), b, FclPose(X_WB), creq, cres);
  out.collide = cres.isCollision();
  for (size_t i = 0; i < cres.numContacts(); ++i) {
    out.has_contacts = true;
    out.depth = std::max(out.depth, cres.getContact(i).penetration_depth);
  }
  if (solver == fcl::GST_INDEP) {
    // FCL 0.7's signed distance with the independent solver: when its GJK finds penetration it runs
    // collide() (one contact) and takes the deepest contact of positive depth; if collide() finds no
    // collision or only contacts of depth <= 0, it fails an assert in libfcl (an abort; an
    // out-of-range read in builds without asserts). Run that collide() first and skip the call then.
    fcl::CollisionRequestd probe(1, true);
    probe.gjk_solver_type = solver;
    fcl::CollisionResultd pres;
    fcl::collide(a, FclPose(X_WA), b, FclPose(X_WB), probe, pres);
    bool positive = false;
    for (size_t i = 0; i < pres.numContacts(); ++i) {
      positive = positive || pres.getContact(i).penetration_depth > std::numeric_limits<double>::min();
    }
    fcl::DistanceRequestd plain(false, false);
    plain.gjk_solver_type = solver;
    fcl::DistanceResultd plain_result;
    fcl::distance(a, FclPose(X_WA), b, FclPose(X_WB), plain, plain_result);
    if (plain_result.min_distance < 0 && !(pres.isCollision() && positive)) {
      out.would_abort = true;
      return out;
    }
  }
  fcl::DistanceRequestd dreq(solver == fcl::GST_LIBCCD, true);
  dreq.gjk_solver_type = solver;
  fcl::DistanceResultd dres;
  fcl::distance(a, FclPose(X_WA), b, FclPose(X_WB), dreq, dres);
  out.signed_distance = dres.min_distance;
  return out;
}

TEST(ConvexFcl, SignedDistanceAgreesWithFclOrTheOracleDecides) {
  std::mt19937_64 rng(202);
  const Zoo zoo(rng);
  // Tallies: [solver][query] with query 0 = distance of separated pairs (fcl::distance), 1 = depth from
  // fcl::collide contacts, 2 = depth from fcl::distance with signed distance enabled.
  Tally tally[2][3];
  const char* kSolver[2] = {"libccd", "indep"};
  const char* kQuery[3] = {"distance (separated)", "depth (collide contacts)", "depth (signed distance)"};
  int oracle_checks = 0, near_contact = 0, cases = 0;
  std::set<std::string> abort_pairs;
  double worst_ours = 0.0;
  const int poses = Cases(40);
  for (int ka = 0; ka < Zoo::kKinds; ++ka) {
    for (int kb = ka; kb < Zoo::kKinds; ++kb) {
      for (int i = 0; i < poses; ++i) {
        const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.3), Vec3::Constant(0.3));
        const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.3), Vec3::Constant(0.3));
        const std::string where = std::string(Zoo::kNames[ka]) + "-" + Zoo::kNames[kb] + " pose " + std::to_string(i);
        SCOPED_TRACE(where);
        ++cases;
        SignedDistanceResult ours;
        zoo.Visit(ka, [&](const auto& a) {
          zoo.Visit(kb, [&](const auto& b) {
            auto r = ComputeSignedDistance(a, X_WA, b, X_WB);
            ASSERT_TRUE(r.ok()) << r.error().message;
            ours = r.value();
          });
        });
        EXPECT_TRUE(ours.converged) << "distance " << ours.distance << " in [" << ours.lower_bound << ", "
                                    << ours.upper_bound << "], method " << static_cast<int>(ours.method)
                                    << ", GJK " << ours.gjk_iterations << " and EPA " << ours.epa_iterations
                                    << " iterations, " << ours.epa_faces << " faces";
        if (std::abs(ours.distance) < 1e-6) {
          ++near_contact;  // Touching within FCL's tolerances: either answer is defensible.
          continue;
        }
        const bool penetrating = ours.distance < 0;
        // The oracle's bracket, computed lazily: on disagreement, and for every 8th case anyway.
        bool have_bracket = false;
        std::pair<double, double> bracket;
        const auto oracle = [&]() -> const std::pair<double, double>& {
          if (!have_bracket) {
            bracket = OracleBracket(zoo.oracle[ka], X_WA, zoo.oracle[kb], X_WB);
            have_bracket = true;
            ++oracle_checks;
            // Ours must lie in the bracket.
            EXPECT_GE(ours.distance, bracket.first - 1e-8) << "ours below the oracle's bracket";
            EXPECT_LE(ours.distance, bracket.second + 1e-8) << "ours above the oracle's bracket";
            worst_ours = std::max({worst_ours, bracket.first - ours.distance, ours.distance - bracket.second});
          }
          return bracket;
        };
        if (i % 8 == 0) oracle();
        for (int s = 0; s < 2; ++s) {
          const FclAnswers f = AskFcl(zoo.fcl[ka].get(), X_WA, zoo.fcl[kb].get(), X_WB,
                                      s == 0 ? fcl::GST_LIBCCD : fcl::GST_INDEP);
          // Each query FCL answers: its signed-distance estimate (nan: no answer).
          double fcl_value[3] = {NAN, NAN, NAN};
          if (!penetrating) {
            fcl_value[0] = f.signed_distance;
          } else {
            fcl_value[1] = f.collide && f.has_contacts ? -f.depth : NAN;
            fcl_value[2] = f.signed_distance;
          }
          for (int q = 0; q < 3; ++q) {
            if ((q == 0) == penetrating) continue;
            Tally& t = tally[s][q];
            ++t.compared;
            if (q != 1 && f.would_abort) {
              ++t.fcl_abort;
              abort_pairs.insert(Zoo::kNames[ka] + std::string("-") + Zoo::kNames[kb]);
              continue;
            }
            const double tol = 1e-5 + 1e-4 * std::abs(ours.distance);
            if (std::isfinite(fcl_value[q]) && std::abs(fcl_value[q] - ours.distance) <= tol) {
              ++t.agree;
              continue;
            }
            const auto& [lo, hi] = oracle();
            const bool fcl_in = std::isfinite(fcl_value[q]) && fcl_value[q] >= lo - tol && fcl_value[q] <= hi + tol;
            if (!std::isfinite(fcl_value[q])) {
              ++t.fcl_no_answer;
            } else if (!fcl_in) {
              ++t.fcl_wrong;
              if (std::abs(fcl_value[q] + ours.distance) <= tol) ++t.sign_flipped;
              t.magnitude_errors.push_back(std::abs(std::abs(fcl_value[q]) - std::abs(ours.distance)) /
                                           std::abs(ours.distance));
              const double err = std::max(lo - fcl_value[q], fcl_value[q] - hi);
              if (err > t.worst_fcl_error) {
                t.worst_fcl_error = err;
                char buf[200];
                std::snprintf(buf, sizeof(buf), "%s: FCL %.6g, ours %.9g, oracle [%.9g, %.9g]", where.c_str(),
                              fcl_value[q], ours.distance, lo, hi);
                t.worst_case = buf;
              }
            } else {
              ++t.undecided;
            }
          }
        }
      }
    }
  }
  std::printf("%d cases (%d within 1e-6 of contact, skipped), %d oracle brackets, ours at most %.3g outside them\n",
              cases, near_contact, oracle_checks, std::max(0.0, worst_ours));
  for (int s = 0; s < 2; ++s) {
    for (int q = 0; q < 3; ++q) {
      const Tally& t = tally[s][q];
      if (t.compared == 0) continue;
      std::printf(
          "FCL %-6s %-24s compared %4d agree %4d FCL wrong %4d (sign flipped %3d, worst %.3g) no answer %3d "
          "would abort %3d undecided %3d\n",
          kSolver[s], kQuery[q], t.compared, t.agree, t.fcl_wrong, t.sign_flipped, t.worst_fcl_error, t.fcl_no_answer,
          t.fcl_abort, t.undecided);
      if (!t.worst_case.empty()) std::printf("    worst: %s\n", t.worst_case.c_str());
      if (!t.magnitude_errors.empty()) {
        std::vector<double> m = t.magnitude_errors;
        std::nth_element(m.begin(), m.begin() + m.size() / 2, m.end());
        std::printf("    FCL's wrong answers: median relative error of the magnitude %.3g\n", m[m.size() / 2]);
      }
    }
  }
  if (!abort_pairs.empty()) {
    std::printf("FCL indep signed distance would abort on:");
    for (const std::string& p : abort_pairs) std::printf(" %s", p.c_str());
    std::printf("\n");
  }
  EXPECT_GT(oracle_checks, cases / 10);
}

}  // namespace
}  // namespace proximity::core
