#include "narrowphase/gjk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/test_util.h"
#include "narrowphase/triangle.h"

namespace proximity::core {
namespace {

using testing::Cases;

bool InsideHull(const ConvexPolytope& hull, const RigidTransform& X_WH, const Vec3& p_W, double tol) {
  const Vec3 p_H = X_WH.inverse() * p_W;
  for (const FacePlane& f : hull.face_planes())
    if (f.normal.dot(p_H) > f.offset + tol) return false;
  return true;
}

// Brute-force overlap of two hulls: a pair of surface triangles intersects, or one contains a vertex
// of the other.
bool HullsOverlap(const ConvexPolytope& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                  const RigidTransform& X_WB) {
  if (testing::BruteForceCollide(a.ToMesh(), X_WA, b.ToMesh(), X_WB)) return true;
  return InsideHull(b, X_WB, X_WA * a.vertices()[0], 0.0) || InsideHull(a, X_WA, X_WB * b.vertices()[0], 0.0);
}

void ExpectNear(double value, double truth, double rel, const std::string& what) {
  EXPECT_NEAR(value, truth, rel * std::max(truth, 1e-3)) << what;
}

// The witnesses are |p_WA - p_WB| = distance apart (to 1e-8: builds without fused multiply-add round
// the barycentric combinations less tightly than native ones).
void ExpectWitnessesConsistent(const GjkResult& r) {
  ASSERT_TRUE(r.p_WA.allFinite());
  ASSERT_TRUE(r.p_WB.allFinite());
  EXPECT_NEAR((r.p_WA - r.p_WB).norm(), r.distance, 1e-8 * std::max(1.0, r.distance));
  EXPECT_LE(r.lower_bound, r.distance);
  EXPECT_GE(r.lower_bound, 0.0);
  EXPECT_TRUE(std::isfinite(r.distance));
}

TEST(GjkDistance, PolytopePairsMatchBruteForceTriangleDistance) {
  std::mt19937_64 rng(11);
  int separated = 0, overlapping = 0;
  for (int i = 0; i < Cases(400); ++i) {
    const int na = 4 + static_cast<int>(rng() % 60), nb = 4 + static_cast<int>(rng() % 60);
    const auto a = testing::RandomHull(rng, na, 0.3, 0.3), b = testing::RandomHull(rng, nb, 0.3, 0.3);
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    const GjkResult r = GjkDistance(*a, X_WA, *b, X_WB);
    SCOPED_TRACE(::testing::Message() << "case " << i);
    ExpectWitnessesConsistent(r);
    EXPECT_TRUE(r.converged);
    if (HullsOverlap(*a, X_WA, *b, X_WB)) {
      ++overlapping;
      EXPECT_TRUE(r.intersecting);
      EXPECT_EQ(r.distance, 0.0);
      EXPECT_TRUE(InsideHull(*a, X_WA, r.p_WA, 1e-9) && InsideHull(*b, X_WB, r.p_WA, 1e-9))
          << "the reported common point is in both";
    } else {
      ++separated;
      const double truth = testing::BruteForceDistance(a->ToMesh(), X_WA, b->ToMesh(), X_WB);
      EXPECT_FALSE(r.intersecting);
      ExpectNear(r.distance, truth, 1e-9, "distance");
      EXPECT_LE(r.lower_bound, truth * (1 + 1e-12));
      EXPECT_NEAR(testing::PointMeshDistance(r.p_WA, a->ToMesh(), X_WA), 0.0, 1e-9);
      EXPECT_NEAR(testing::PointMeshDistance(r.p_WB, b->ToMesh(), X_WB), 0.0, 1e-9);
    }
  }
  EXPECT_GT(separated, Cases(400) / 5);
  EXPECT_GT(overlapping, Cases(400) / 10);
}

TEST(GjkDistance, SpheresAndSphereBoxInClosedForm) {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> radius(0.0, 0.5), extent(0.01, 0.6);
  for (int i = 0; i < Cases(2000); ++i) {
    const Sphere a{Vec3(0.1, 0, 0), i % 10 == 0 ? 0.0 : radius(rng)}, b{Vec3::Zero(), radius(rng)};
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    const double centres = (X_WA * a.center - X_WB * b.center).norm();
    const GjkResult r = GjkDistance(a, X_WA, b, X_WB);
    ExpectWitnessesConsistent(r);
    EXPECT_EQ(r.iterations <= 2, true) << "two points: one support pair";
    if (centres > a.radius + b.radius) {
      EXPECT_FALSE(r.intersecting);
      ExpectNear(r.distance, centres - a.radius - b.radius, 1e-12, "sphere-sphere");
    } else {
      EXPECT_TRUE(r.intersecting);
      EXPECT_LE((r.p_WA - X_WA * a.center).norm(), a.radius + 1e-12);
      EXPECT_LE((r.p_WA - X_WB * b.center).norm(), b.radius + 1e-12);
    }

    const Box box{Vec3(extent(rng), extent(rng), extent(rng))};
    const GjkResult s = GjkDistance(a, X_WA, box, X_WB);
    ExpectWitnessesConsistent(s);
    const Vec3 c_B = X_WB.inverse() * (X_WA * a.center);
    const double to_box = (c_B - c_B.cwiseMax(-box.half_extents).cwiseMin(box.half_extents)).norm();
    if (to_box > a.radius) {
      EXPECT_FALSE(s.intersecting);
      ExpectNear(s.distance, to_box - a.radius, 1e-9, "sphere-box");
    } else if (to_box < a.radius - 1e-9) {
      EXPECT_TRUE(s.intersecting);
    }
  }
}

TEST(GjkDistance, BoxPairsMatchTheirMeshes) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> extent(0.0, 0.5);
  for (int i = 0; i < Cases(500); ++i) {
    const Box a{Vec3(extent(rng), extent(rng), extent(rng)) + Vec3::Constant(0.01)};
    const Box b{Vec3(extent(rng), extent(rng), extent(rng)) + Vec3::Constant(0.01)};
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    const auto ha = ConvexPolytope::Build(MakeBoxMesh(2 * a.half_extents)).value();
    const auto hb = ConvexPolytope::Build(MakeBoxMesh(2 * b.half_extents)).value();
    const GjkResult r = GjkDistance(a, X_WA, b, X_WB);
    ExpectWitnessesConsistent(r);
    if (HullsOverlap(*ha, X_WA, *hb, X_WB)) {
      EXPECT_TRUE(r.intersecting);
    } else {
      EXPECT_FALSE(r.intersecting);
      ExpectNear(r.distance, testing::BruteForceDistance(ha->ToMesh(), X_WA, hb->ToMesh(), X_WB), 1e-9, "box-box");
    }
    const GjkResult p = GjkDistance(*ha, X_WA, *hb, X_WB);
    EXPECT_EQ(p.intersecting, r.intersecting);
    EXPECT_NEAR(p.distance, r.distance, 1e-12);
  }
}

TEST(GjkDistance, CapsulePairsMatchSegmentDistance) {
  std::mt19937_64 rng(14);
  std::uniform_real_distribution<double> radius(0.0, 0.3), half(0.0, 0.6);
  int hits = 0;
  for (int i = 0; i < Cases(3000); ++i) {
    const Capsule a{radius(rng), i % 7 == 0 ? 0.0 : half(rng)}, b{radius(rng), half(rng)};
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    if (i % 11 == 0) X_WB.R = X_WA.R;  // Parallel axes: a family of closest pairs.
    Vec3 cp, cq;
    const double seg = std::sqrt(SegmentSegmentDistanceSquared(
        X_WA * Vec3(0, 0, -a.half_length), X_WA * Vec3(0, 0, a.half_length), X_WB * Vec3(0, 0, -b.half_length),
        X_WB * Vec3(0, 0, b.half_length), &cp, &cq));
    const GjkResult r = GjkDistance(a, X_WA, b, X_WB);
    ExpectWitnessesConsistent(r);
    EXPECT_LE(r.iterations, 6);
    if (seg > a.radius + b.radius) {
      EXPECT_FALSE(r.intersecting);
      ExpectNear(r.distance, seg - a.radius - b.radius, 1e-9, "capsule-capsule");
    } else {
      ++hits;
      EXPECT_TRUE(r.intersecting);
    }
  }
  EXPECT_GT(hits, Cases(3000) / 30);
}

// Polytopes inscribed in and circumscribing a cylinder or cone: the true distance to another convex
// body lies between the two polytopes' distances.
template <class Shape>
void ExpectBetweenTessellations(const Shape& shape, std::mt19937_64& rng, int cases) {
  const auto inner = testing::TessellatedHull(shape, 256, false), outer = testing::TessellatedHull(shape, 256, true);
  int separated = 0;
  for (int i = 0; i < cases; ++i) {
    const auto other = testing::RandomHull(rng, 12, 0.2, 0.3);
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    const GjkResult r = GjkDistance(shape, X_WA, *other, X_WB);
    ExpectWitnessesConsistent(r);
    EXPECT_TRUE(r.converged);
    const GjkResult lo = GjkDistance(*outer, X_WA, *other, X_WB);
    const GjkResult hi = GjkDistance(*inner, X_WA, *other, X_WB);
    if (lo.intersecting) continue;
    if (hi.intersecting) {
      continue;  // The truth lies between a touching inner and a separated outer polytope.
    }
    ++separated;
    const double lo_truth = testing::BruteForceDistance(outer->ToMesh(), X_WA, other->ToMesh(), X_WB);
    const double hi_truth = testing::BruteForceDistance(inner->ToMesh(), X_WA, other->ToMesh(), X_WB);
    EXPECT_NEAR(lo.distance, lo_truth, 1e-9 * std::max(lo_truth, 1e-3));
    EXPECT_NEAR(hi.distance, hi_truth, 1e-9 * std::max(hi_truth, 1e-3));
    EXPECT_FALSE(r.intersecting);
    EXPECT_GE(r.distance, lo_truth - 1e-12);
    EXPECT_LE(r.distance, hi_truth + 1e-12);
  }
  EXPECT_GT(separated, cases / 4);
}

TEST(GjkDistance, CylinderAndConeLieBetweenTheirTessellations) {
  std::mt19937_64 rng(15);
  ExpectBetweenTessellations(Cylinder{0.3, 0.4}, rng, Cases(150));
  ExpectBetweenTessellations(Cone{0.35, 0.3}, rng, Cases(150));
}

// Distance from a triangle to a capsule's segment, by features.
double TriangleSegmentDistance(const Triangle& t, const Vec3& p0, const Vec3& p1) {
  double tt;
  if (SegmentTriangle(p0, p1, t.a, t.b, t.c, &tt)) return 0.0;
  double best = std::min((ClosestPointOnTriangle(p0, t.a, t.b, t.c) - p0).norm(),
                         (ClosestPointOnTriangle(p1, t.a, t.b, t.c) - p1).norm());
  Vec3 cp, cq;
  for (const auto& [u, w] : {std::pair{t.a, t.b}, std::pair{t.b, t.c}, std::pair{t.c, t.a}})
    best = std::min(best, std::sqrt(SegmentSegmentDistanceSquared(p0, p1, u, w, &cp, &cq)));
  return best;
}

TEST(GjkDistance, TriangleAgainstPrimitivesAndPolytopes) {
  std::mt19937_64 rng(16);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  int separated = 0;
  for (int i = 0; i < Cases(600); ++i) {
    Triangle t{Vec3(u(rng), u(rng), u(rng)), Vec3(u(rng), u(rng), u(rng)), Vec3(u(rng), u(rng), u(rng))};
    if (i % 20 == 0) t.c = t.a + 0.5 * (t.b - t.a);  // Zero area.
    const RigidTransform X_WT = testing::RandomPose(rng, Vec3::Constant(-0.5), Vec3::Constant(0.5));
    const RigidTransform X_WS = testing::RandomPose(rng, Vec3::Constant(-0.5), Vec3::Constant(0.5));
    const Triangle t_W{X_WT * t.a, X_WT * t.b, X_WT * t.c};
    TriangleMesh tri_mesh{{t_W.a, t_W.b, t_W.c}, {{0, 1, 2}}};

    const Sphere sphere{Vec3::Zero(), 0.2};
    const Vec3 c_W = X_WS.p;
    const double to_sphere = (ClosestPointOnTriangle(c_W, t_W.a, t_W.b, t_W.c) - c_W).norm() - sphere.radius;
    const GjkResult rs = GjkDistance(t, X_WT, sphere, X_WS);
    ExpectWitnessesConsistent(rs);
    if (to_sphere > 0) {
      ExpectNear(rs.distance, to_sphere, 1e-9, "triangle-sphere");
    } else {
      EXPECT_TRUE(rs.intersecting);
    }

    const Capsule capsule{0.1, 0.3};
    const double to_capsule =
        TriangleSegmentDistance(t_W, X_WS * Vec3(0, 0, -0.3), X_WS * Vec3(0, 0, 0.3)) - capsule.radius;
    const GjkResult rc = GjkDistance(capsule, X_WS, t, X_WT);
    ExpectWitnessesConsistent(rc);
    if (to_capsule > 0) {
      ExpectNear(rc.distance, to_capsule, 1e-9, "triangle-capsule");
    } else {
      EXPECT_TRUE(rc.intersecting);
    }

    const Box box{Vec3(0.2, 0.1, 0.3)};
    const auto hull = ConvexPolytope::Build(MakeBoxMesh(2 * box.half_extents)).value();
    const GjkResult rb = GjkDistance(t, X_WT, box, X_WS);
    const GjkResult rp = GjkDistance(t, X_WT, *hull, X_WS);
    ExpectWitnessesConsistent(rb);
    const bool overlap = testing::BruteForceCollide(tri_mesh, RigidTransform(), hull->ToMesh(), X_WS) ||
                         InsideHull(*hull, X_WS, t_W.a, 0.0);
    EXPECT_EQ(rb.intersecting, overlap);
    EXPECT_EQ(rp.intersecting, overlap);
    if (!overlap) {
      ++separated;
      const double truth = testing::BruteForceDistance(tri_mesh, RigidTransform(), hull->ToMesh(), X_WS);
      ExpectNear(rb.distance, truth, 1e-9, "triangle-box");
      ExpectNear(rp.distance, truth, 1e-9, "triangle-polytope");
    }
  }
  EXPECT_GT(separated, Cases(600) / 4);
}

TEST(GjkDistance, NearContactCasesGiveTheRightFlagAndNoNaN) {
  const Box box{Vec3(1, 1, 1)};
  const RigidTransform I;
  const auto at = [](const Vec3& p) { return RigidTransform(Mat3::Identity(), p); };
  // Face to face, touching and 1 nm apart.
  GjkResult r = GjkDistance(box, I, box, at(Vec3(2, 0.3, -0.2)));
  EXPECT_TRUE(r.intersecting);
  EXPECT_EQ(r.distance, 0.0);
  r = GjkDistance(box, I, box, at(Vec3(2 + 1e-9, 0.3, -0.2)));
  EXPECT_FALSE(r.intersecting);
  EXPECT_NEAR(r.distance, 1e-9, 1e-15);
  ExpectWitnessesConsistent(r);
  // Edge on edge: A's vertical edge at x = sqrt(2) crosses B's horizontal edge there.
  const RigidTransform X_WA(Eigen::AngleAxisd(M_PI / 4, Vec3::UnitZ()).toRotationMatrix(), Vec3::Zero());
  const Mat3 R_WB = Eigen::AngleAxisd(M_PI / 4, Vec3::UnitY()).toRotationMatrix();
  for (double gap : {0.0, 1e-9, -1e-9}) {
    r = GjkDistance(box, X_WA, box, RigidTransform(R_WB, Vec3(2 * std::sqrt(2.0) + gap, 0, 0)));
    ExpectWitnessesConsistent(r);
    if (gap > 0) {
      EXPECT_FALSE(r.intersecting);
      EXPECT_NEAR(r.distance, gap, 1e-14);
    } else {
      EXPECT_TRUE(r.intersecting) << "gap " << gap << " distance " << r.distance;
    }
  }
  // Identical shapes at identity, for every shape type.
  const auto hull = ConvexPolytope::Build(MakeIcosphereMesh(0.5, 2)).value();
  EXPECT_TRUE(GjkDistance(box, I, box, I).intersecting);
  EXPECT_TRUE(GjkDistance(*hull, I, *hull, I).intersecting);
  EXPECT_TRUE(GjkDistance(Sphere{Vec3::Zero(), 0.0}, I, Sphere{Vec3::Zero(), 0.0}, I).intersecting);
  EXPECT_TRUE(GjkDistance(Capsule{0.0, 1.0}, I, Capsule{0.0, 1.0}, I).intersecting);
  EXPECT_TRUE(GjkDistance(Cylinder{0.3, 0.2}, I, Cylinder{0.3, 0.2}, I).intersecting);
  EXPECT_TRUE(GjkDistance(Cone{0.3, 0.2}, I, Cone{0.3, 0.2}, I).intersecting);
  const Triangle t{Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0)};
  EXPECT_TRUE(GjkDistance(t, I, t, I).intersecting);
  // Spheres touching, and points.
  r = GjkDistance(Sphere{Vec3::Zero(), 0.5}, I, Sphere{Vec3::Zero(), 0.5}, at(Vec3(1, 0, 0)));
  EXPECT_TRUE(r.intersecting);
  r = GjkDistance(Sphere{Vec3::Zero(), 0.0}, I, Sphere{Vec3::Zero(), 0.0}, at(Vec3(0, 3, 4)));
  EXPECT_NEAR(r.distance, 5.0, 1e-15);
  // A zero-length capsule is a sphere; a point inside a box intersects it.
  r = GjkDistance(Capsule{0.25, 0.0}, at(Vec3(1, 1, 1)), box, I);
  const GjkResult rs = GjkDistance(Sphere{Vec3::Zero(), 0.25}, at(Vec3(1, 1, 1)), box, I);
  EXPECT_TRUE(r.intersecting && rs.intersecting);
  r = GjkDistance(Capsule{0.25, 0.0}, at(Vec3(2, 2, 2)), box, I);
  EXPECT_NEAR(r.distance, std::sqrt(3.0) - 0.25, 1e-12);
  EXPECT_TRUE(GjkDistance(Sphere{Vec3::Zero(), 0.0}, at(Vec3(0.2, 0.1, 0)), box, I).intersecting);
  // Parallel touching capsules, and crossing zero-radius capsules (segments).
  EXPECT_TRUE(GjkDistance(Capsule{0.5, 1.0}, I, Capsule{0.5, 1.0}, at(Vec3(1, 0, 0.3))).intersecting);
  r = GjkDistance(Capsule{0.0, 1.0}, I, Capsule{0.0, 1.0},
                  RigidTransform(Eigen::AngleAxisd(M_PI / 2, Vec3::UnitX()).toRotationMatrix(), Vec3(0, 0, 0)));
  EXPECT_TRUE(r.intersecting);
}

TEST(GjkDistance, WarmStartGivesTheSameAnswersWithFewerIterations) {
  std::mt19937_64 rng(17);
  int64_t cold_iterations = 0, warm_iterations = 0;
  for (int trial = 0; trial < Cases(20); ++trial) {
    const auto a = testing::RandomHull(rng, 200, 0.3, 0.3), b = testing::RandomHull(rng, 200, 0.3, 0.3);
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Zero(), Vec3::Zero());
    const RigidTransform start = testing::RandomPose(rng, Vec3(1.5, -0.2, -0.2), Vec3(2.0, 0.2, 0.2));
    const Eigen::AngleAxisd turn(0.01, Vec3(rng() % 2, 1, 0.5).normalized());
    GjkCache cache;
    RigidTransform X_WB = start;
    for (int step = 0; step < 100; ++step) {
      X_WB.R = turn.toRotationMatrix() * X_WB.R;
      X_WB.p += Vec3(-0.01, 0.002, 0.001);
      const GjkResult cold = GjkDistance(*a, X_WA, *b, X_WB);
      const GjkResult warm = GjkDistance(*a, X_WA, *b, X_WB, &cache);
      EXPECT_EQ(cold.intersecting, warm.intersecting);
      EXPECT_NEAR(cold.distance, warm.distance, 1e-9 * std::max(cold.distance, 1e-3));
      ExpectWitnessesConsistent(warm);
      cold_iterations += cold.iterations;
      warm_iterations += warm.iterations;
    }
  }
  EXPECT_LT(2 * warm_iterations, cold_iterations) << "warm " << warm_iterations << " cold " << cold_iterations;
}

TEST(GjkDistance, SmoothShapesConvergeWithinTheCap) {
  std::mt19937_64 rng(18);
  int64_t iterations = 0;
  double worst_gap = 0.0;
  const int cases = Cases(3000);
  for (int i = 0; i < cases; ++i) {
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    const GjkResult r = GjkDistance(Cylinder{0.3, 0.2}, X_WA, Cone{0.2, 0.4}, X_WB);
    EXPECT_TRUE(r.converged);
    ExpectWitnessesConsistent(r);
    if (!r.intersecting) worst_gap = std::max(worst_gap, 1.0 - r.lower_bound / r.distance);
    iterations += r.iterations;
  }
  // Rounding ends the progress on curved surfaces near a relative gap of 1e-9 with fused multiply-add
  // and 1e-8 without (the improvement per step falls below the precision of |v|^2); polytopes reach
  // the exact answer.
  EXPECT_LT(worst_gap, 5e-8);
  EXPECT_LT(iterations, 40 * cases);
  std::printf("worst gap %.3g, mean iterations %.2f\n", worst_gap, static_cast<double>(iterations) / cases);
}

// Random shape pairs of every type for the ISA-GJK agreement test.
struct ShapeZoo {
  std::vector<std::shared_ptr<const ConvexPolytope>> hulls;
  explicit ShapeZoo(std::mt19937_64& rng) {
    for (int n : {4, 8, 30, 120}) hulls.push_back(testing::RandomHull(rng, n, 0.25, 0.3));
  }
  template <class F>
  void Visit(int kind, F&& f) const {
    switch (kind) {
      case 0: return f(Sphere{Vec3::Zero(), 0.3});
      case 1: return f(Box{Vec3(0.3, 0.2, 0.1)});
      case 2: return f(Capsule{0.15, 0.3});
      case 3: return f(Cylinder{0.2, 0.3});
      case 4: return f(Cone{0.25, 0.3});
      case 5: return f(Triangle{Vec3(0, 0, 0), Vec3(0.5, 0, 0), Vec3(0, 0.4, 0.1)});
      default: return f(*hulls[(kind - 6) % hulls.size()]);
    }
  }
  static constexpr int kKinds = 10;
};

// A lower-bound target stops the loop once the certified lower bound reaches it: the bound then
// lies between the target and the converged distance, the loop ran no longer than the full one, and
// a target above the distance changes nothing. Triangles against curved shapes (the leaves of a mesh
// walk), where the full loop is longest.
template <class Shape>
void ExpectTargetStopsEarly(const Shape& shape, std::mt19937_64& rng, int cases, int* stopped, int* saved) {
  std::uniform_real_distribution<double> u(-0.4, 0.4), frac(0.05, 1.3);
  for (int i = 0; i < cases; ++i) {
    const Triangle t{Vec3(u(rng), u(rng), u(rng)), Vec3(u(rng), u(rng), u(rng)), Vec3(u(rng), u(rng), u(rng))};
    const RigidTransform X_WT = testing::RandomPose(rng, Vec3::Constant(-0.6), Vec3::Constant(0.6));
    const RigidTransform X_WS = testing::RandomPose(rng, Vec3::Constant(-0.6), Vec3::Constant(0.6));
    const GjkResult full = GjkDistance(t, X_WT, shape, X_WS);
    if (full.intersecting) continue;
    GjkOptions o;
    o.lower_bound_target = frac(rng) * full.distance;
    const GjkResult r = GjkDistance(t, X_WT, shape, X_WS, nullptr, o);
    SCOPED_TRACE(::testing::Message() << "case " << i << " distance " << full.distance << " target "
                                      << o.lower_bound_target);
    EXPECT_FALSE(r.intersecting);
    EXPECT_LE(r.iterations, full.iterations);
    EXPECT_LE(r.lower_bound, full.distance * (1 + 1e-9));
    EXPECT_GE(r.distance, full.distance * (1 - 1e-9));  // Still an upper bound.
    if (r.reached_target) {
      EXPECT_GE(r.lower_bound, o.lower_bound_target);
      EXPECT_FALSE(r.converged);
      ++*stopped;
      *saved += full.iterations - r.iterations;
    } else {
      EXPECT_EQ(r.iterations, full.iterations);
      EXPECT_DOUBLE_EQ(r.distance, full.distance);
    }
  }
}

TEST(GjkDistance, LowerBoundTargetStopsTheLoopOnceReached) {
  std::mt19937_64 rng(17);
  int stopped = 0, saved = 0;
  ExpectTargetStopsEarly(Cylinder{0.3, 0.4}, rng, Cases(400), &stopped, &saved);
  ExpectTargetStopsEarly(Cone{0.35, 0.3}, rng, Cases(400), &stopped, &saved);
  ExpectTargetStopsEarly(Box{Vec3(0.2, 0.1, 0.3)}, rng, Cases(400), &stopped, &saved);
  std::printf("lower-bound target reached in %d queries, %d iterations saved\n", stopped, saved);
  EXPECT_GT(stopped, Cases(400));
  EXPECT_GT(saved, stopped);
}

TEST(GjkIntersect, AgreesWithGjkDistanceOnRandomPairs) {
  std::mt19937_64 rng(19);
  const ShapeZoo zoo(rng);
  const int cases = Cases(100000);
  int intersecting = 0;
  for (int i = 0; i < cases; ++i) {
    const int ka = static_cast<int>(rng() % ShapeZoo::kKinds), kb = static_cast<int>(rng() % ShapeZoo::kKinds);
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.5), Vec3::Constant(0.5));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.5), Vec3::Constant(0.5));
    zoo.Visit(ka, [&](const auto& a) {
      zoo.Visit(kb, [&](const auto& b) {
        const GjkResult d = GjkDistance(a, X_WA, b, X_WB);
        const GjkIntersectResult s = GjkIntersect(a, X_WA, b, X_WB);
        EXPECT_EQ(s.intersecting, d.intersecting) << "case " << i << " kinds " << ka << ", " << kb << " distance "
                                                  << d.distance;
        EXPECT_LE(s.support_calls, d.support_calls + 4);
        intersecting += d.intersecting ? 1 : 0;
      });
    });
  }
  EXPECT_GT(intersecting, cases / 10);
  EXPECT_LT(intersecting, cases * 9 / 10);
}

TEST(GjkIntersect, CachedAxisAnswersCoherentQueriesInOneSupportPair) {
  std::mt19937_64 rng(20);
  const auto a = testing::RandomHull(rng, 300, 0.3, 0.3), b = testing::RandomHull(rng, 300, 0.3, 0.3);
  GjkCache cache;
  int reused = 0, separated = 0, support_calls = 0, cold_support_calls = 0;
  const RigidTransform X_WA;
  for (int step = 0; step < 400; ++step) {
    // B approaches A, passes through it and leaves.
    const RigidTransform X_WB(Eigen::AngleAxisd(0.005 * step, Vec3::UnitZ()).toRotationMatrix(),
                              Vec3(2.0 - 0.01 * step, 0.1, 0.0));
    const GjkIntersectResult warm = GjkIntersect(*a, X_WA, *b, X_WB, &cache);
    const GjkIntersectResult cold = GjkIntersect(*a, X_WA, *b, X_WB);
    const bool truth = GjkDistance(*a, X_WA, *b, X_WB).intersecting;
    EXPECT_EQ(warm.intersecting, truth) << "step " << step;
    EXPECT_EQ(cold.intersecting, truth) << "step " << step;
    if (warm.cached_axis_separated) {
      ++reused;
      EXPECT_EQ(warm.support_calls, 1);
    }
    separated += truth ? 0 : 1;
    support_calls += warm.support_calls;
    cold_support_calls += cold.support_calls;
  }
  EXPECT_GT(reused, separated * 3 / 4) << "reused " << reused << " of " << separated << " separated steps";
  EXPECT_LT(support_calls, cold_support_calls);
}

// Overlapping shapes moving a little: the tetrahedron the last query ended on, re-posed, still holds
// the origin most of the time and answers with no support call; the answers always match a cold query
// and GJK distance's (the truth), including on the way out, where the cached tetrahedron stops
// holding the origin and GJK goes on from it.
TEST(GjkIntersect, CachedSimplexAnswersCoherentOverlapsWithoutSupportCalls) {
  std::mt19937_64 rng(22);
  int overlapping = 0, reused = 0, support_calls = 0, cold_support_calls = 0;
  for (int trial = 0; trial < Cases(6); ++trial) {
    const auto a = testing::RandomHull(rng, 200, 0.3, 0.3), b = testing::RandomHull(rng, 200, 0.3, 0.3);
    GjkCache cache;
    const RigidTransform X_WA;
    for (int step = 0; step < 300; ++step) {
      // B passes through A with a small turn per step, then leaves.
      const RigidTransform X_WB(Eigen::AngleAxisd(0.004 * step, Vec3(0.3, 0.2, 1.0).normalized()).toRotationMatrix(),
                                Vec3(1.2 - 0.008 * step, 0.05 * trial, 0.0));
      const GjkIntersectResult warm = GjkIntersect(*a, X_WA, *b, X_WB, &cache);
      const GjkIntersectResult cold = GjkIntersect(*a, X_WA, *b, X_WB);
      const bool truth = GjkDistance(*a, X_WA, *b, X_WB).intersecting;
      ASSERT_EQ(warm.intersecting, truth) << "trial " << trial << " step " << step;
      ASSERT_EQ(cold.intersecting, truth) << "trial " << trial << " step " << step;
      EXPECT_FALSE(cold.cached_simplex_intersecting);
      if (warm.cached_simplex_intersecting) {
        ++reused;
        EXPECT_EQ(warm.support_calls, 0);
        EXPECT_TRUE(truth);
      }
      if (truth) {
        ++overlapping;
        support_calls += warm.support_calls;
        cold_support_calls += cold.support_calls;
      }
    }
  }
  ASSERT_GT(overlapping, 100);
  EXPECT_GT(reused, overlapping * 3 / 4) << "reused " << reused << " of " << overlapping << " overlapping steps";
  EXPECT_LT(support_calls, cold_support_calls / 4);
}

TEST(GjkSupport, SteepestAscentFromAnyStartFindsTheMaximum) {
  // GJK's own polytope climb (steepest ascent from a cached vertex, seeds when the start is invalid)
  // against a scan of every vertex, on hulls of points on an ellipsoid (nearly all of them hull
  // vertices, so the climbs are long).
  std::mt19937_64 rng(21);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> stretch(0.3, 1.5);
  int64_t climbs = 0;
  for (int trial = 0; trial < Cases(40); ++trial) {
    const Vec3 axes(stretch(rng), stretch(rng), stretch(rng));
    std::vector<Vec3> points(40 + rng() % 1500);
    for (Vec3& x : points) x = 0.3 * Vec3(g(rng), g(rng), g(rng)).normalized().cwiseProduct(axes);
    const auto hull = ConvexPolytope::Build(points).value();
    ASSERT_GT(hull->num_vertices(), ConvexPolytope::kBruteForceMaxVertices);
    for (int q = 0; q < 200; ++q) {
      const Vec3 d(g(rng), g(rng), g(rng));
      int32_t vertex = q % 10 == 0 ? -1 : static_cast<int32_t>(rng() % hull->num_vertices());
      climbs += vertex >= 0;
      const Vec3 p = internal::GjkCoreSupport(*hull, d, &vertex);
      ASSERT_GE(vertex, 0);
      ASSERT_LT(vertex, hull->num_vertices());
      EXPECT_EQ(p, hull->vertices()[vertex]);
      const double best = d.dot(hull->vertices()[hull->SupportVertexBruteForce(d)]);
      EXPECT_GE(d.dot(p), best - 1e-12 * d.norm()) << "trial " << trial << " query " << q;
    }
  }
  EXPECT_GT(climbs, 0);
}

TEST(GjkSupport, TurnedFarFlagsTurnsBeyondTheReseedAngle) {
  const Vec3 x = Vec3::UnitX();
  const double limit = std::acos(internal::kReseedCosine);
  for (double angle : {0.0, 0.5 * limit, 0.99 * limit, 1.01 * limit, 1.5, 2.0, M_PI}) {
    const Vec3 d = 3.0 * Vec3(std::cos(angle), std::sin(angle), 0.0);
    EXPECT_EQ(internal::TurnedFar(d, x), angle > limit) << "angle " << angle;
  }
  EXPECT_FALSE(internal::TurnedFar(x, Vec3::Zero()));
  EXPECT_FALSE(internal::TurnedFar(Vec3::Zero(), x));
}

// ---- Inputs that broke other GJK implementations -------------------------------------------------
// Poses reported against FCL (#493, #495), libccd (#25), Coal (#604) and Drake (#18704), and the
// near-degenerate classes behind them: boxes in kissing contact under a shared rotation, stacked and
// coplanar faces, huge against tiny shapes, nearly parallel capsules, a sphere exactly on a face.
// Each answer is compared with a closed form (or a brute-force triangle oracle) and must be a number.

Mat3 Rows(double a, double b, double c, double d, double e, double f, double g, double h, double i) {
  Mat3 R;
  R << a, b, c, d, e, f, g, h, i;
  return R;
}

// Signed distance of two boxes sharing the orientation R, by separating axes along R's columns (exact
// for that pair: their Minkowski difference is a box).
double SameRotationBoxesSignedDistance(const Mat3& R, const Vec3& p1, const Vec3& h1, const Vec3& p2, const Vec3& h2) {
  const Vec3 gap = (R.transpose() * (p2 - p1)).cwiseAbs() - (h1 + h2);
  return gap.maxCoeff() > 0.0 ? gap.cwiseMax(0.0).norm() : gap.maxCoeff();
}

// GJK against the closed form: the distance when apart (to `tol`), contact when the boxes overlap or
// touch within the contact tolerance, and no NaN either way.
void ExpectBoxPair(const Mat3& R, const Vec3& p1, const Vec3& h1, const Vec3& p2, const Vec3& h2, double tol,
                   const std::string& what) {
  const double truth = SameRotationBoxesSignedDistance(R, p1, h1, p2, h2);
  const GjkResult r = GjkDistance(Box{h1}, RigidTransform(R, p1), Box{h2}, RigidTransform(R, p2));
  SCOPED_TRACE(what + ": closed form " + std::to_string(truth));
  ExpectWitnessesConsistent(r);
  EXPECT_TRUE(r.converged);
  EXPECT_NEAR(r.distance, std::max(truth, 0.0), tol);
  if (truth > tol) {
    EXPECT_FALSE(r.intersecting);
  }
  if (truth < -tol) {
    EXPECT_TRUE(r.intersecting);
  }
  if (std::abs(truth) > tol) {
    EXPECT_EQ(GjkIntersect(Box{h1}, RigidTransform(R, p1), Box{h2}, RigidTransform(R, p2)).intersecting,
              r.intersecting);
  }
}

TEST(GjkDistance, FclKissingBoxesUnderASharedRotation) {
  // FCL #493: 0.5 m cubes, one rotation, kissing contact that rounding turns into a sub-epsilon gap.
  const Mat3 R493 = Rows(0.96193976625564348026, 0.15401279915737359216, 0.22572537250328919556,
                         -0.19134171618254486313, 0.96936494951283913579, 0.15401279915737359216,
                         -0.19509032201612822033, -0.19134171618254486313, 0.96193976625564348026);
  const Vec3 p1(2.0770063995786869349, 0.48468247475641951239, 1.1543291419087275962), p2(2, 0, 1.25);
  ExpectBoxPair(R493, p1, Vec3::Constant(0.25), p2, Vec3::Constant(0.25), 1e-12, "fcl 493");
  // FCL #495: the same kind of pair with 0.25 m cubes, explicitly an epsilon apart.
  const Mat3 R495 = Rows(0.94096063217417758029, 0.29296840037289501035, 0.16959541586174811667,
                         -0.23569836841299879326, 0.92661523595848427348, -0.29296840037289506586,
                         -0.2429801799032638987, 0.23569836841299884878, 0.94096063217417758029);
  const Vec3 q1(0.073242100093223821977, 0.2316538089896212349, 1.3089245921032497399), q2(0, 0, 1.25);
  ExpectBoxPair(R495, q1, Vec3::Constant(0.125), q2, Vec3::Constant(0.125), 1e-12, "fcl 495");
  // Around both: moved along the contact normal by -1e-9 .. 1e-9 (penetrating, touching, apart).
  for (double shift : {-1e-9, -1e-12, 0.0, 1e-12, 1e-9}) {
    for (const auto& [R, a, b, h] : {std::tuple{R493, p1, p2, 0.25}, std::tuple{R495, q1, q2, 0.125}}) {
      const Vec3 d = R.transpose() * (b - a);
      int axis;
      d.cwiseAbs().maxCoeff(&axis);
      const Vec3 n = R.col(axis) * (d[axis] > 0 ? 1.0 : -1.0);
      ExpectBoxPair(R, a, Vec3::Constant(h), b + shift * n, Vec3::Constant(h), 1e-12,
                    "shift " + std::to_string(shift));
    }
  }
}

TEST(GjkDistance, LibccdStackedCubesPenetrating) {
  // libccd #25: cubes of side 2 at the origin and at z = 1.9 (its GJK returned a NaN direction).
  const Box cube{Vec3::Ones()};
  const GjkResult r = GjkDistance(cube, RigidTransform(), cube, RigidTransform(Mat3::Identity(), Vec3(0, 0, 1.9)));
  EXPECT_TRUE(r.intersecting);
  EXPECT_EQ(r.distance, 0.0);
  ExpectWitnessesConsistent(r);
  // Stacked like a wall (Drake #18704's second report): 0.3 m cubes side by side under a rotation.
  const Mat3 R = Eigen::Quaterniond(Rows(0.99983216350830295127, 0.017302258779861117571, 0.0060230104948389619895,
                                         -0.017255387167394182352, 0.99982108658241231058, -0.0077489637286347464937,
                                         -0.0061560074731557591632, 0.007643733791746519686, 0.9999518372930324972))
                     .normalized()
                     .toRotationMatrix();
  const Vec3 p(0.85626818476862631702, -0.77764714060125894601, 0.070907056388150049853);
  for (int axis = 0; axis < 3; ++axis) {
    for (double gap : {-1e-6, -1e-12, 0.0, 1e-12, 1e-6}) {
      ExpectBoxPair(R, p, Vec3::Constant(0.15), p + (0.3 + gap) * R.col(axis), Vec3::Constant(0.15), 1e-12,
                    "wall axis " + std::to_string(axis) + " gap " + std::to_string(gap));
    }
  }
}

TEST(GjkDistance, CoalNearlyTouchingRotatedBoxesMatchTheTriangleOracle) {
  // Coal #604: two nearly axis-aligned boxes a few millimetres apart (its loose tolerance gave a wrong
  // distance). The rotations are the report's, normalised; the oracle is the brute-force triangle distance.
  const auto rot = [](const Mat3& R) { return Eigen::Quaterniond(R).normalized().toRotationMatrix(); };
  const RigidTransform X1(rot(Rows(0.9999195703, 0.01021849413, 0.007512347878, -0.01021878248, 0.9999477869,
                                   -3.329855922e-17, -0.007511955635, -7.676704888e-05, 0.9999717819)),
                          Vec3(1.503354966, -0.8531707835, 0.7700092418));
  const RigidTransform X2(rot(Rows(0.9998670967, -0.01297708324, 0.009868343982, 0.01297771517, 0.9999157859,
                                   5.255670031e-17, -0.009867512928, 0.0001280685574, 0.9999513067)),
                          Vec3(1.48838308, -1.102020834, 0.4497073799));
  const Box b1{0.5 * Vec3(0.363, 0.277, 0.363)}, b2{0.5 * Vec3(0.363, 0.363, 0.277)};
  const double truth = testing::BruteForceDistance(MakeBoxMesh(2 * b1.half_extents), X1, MakeBoxMesh(2 * b2.half_extents), X2);
  for (double rel : {1e-5, 1e-3}) {  // the default tolerance, and a loose one as in the report
    GjkOptions options;
    options.rel_tolerance = rel;
    const GjkResult r = GjkDistance(b1, X1, b2, X2, nullptr, options);
    SCOPED_TRACE(::testing::Message() << "rel_tolerance " << rel << " oracle " << truth);
    ExpectWitnessesConsistent(r);
    EXPECT_FALSE(r.intersecting);
    EXPECT_LE(r.lower_bound, truth + 1e-12);
    EXPECT_GE(r.distance, truth - 1e-12);
    EXPECT_LE(r.distance, truth * (1 + rel * rel) + 1e-12);
  }
}

TEST(GjkDistance, NearDegenerateClassesAgainstClosedForms) {
  const RigidTransform I;
  const auto at = [](const Vec3& p) { return RigidTransform(Mat3::Identity(), p); };
  // A sphere exactly on a face, a nanometre above it, a nanometre into it.
  const Box box{Vec3::Ones()};
  for (double gap : {0.0, 1e-9, -1e-9}) {
    const GjkResult r = GjkDistance(Sphere{Vec3::Zero(), 0.5}, at(Vec3(0.3, -0.2, 1.5 + gap)), box, I);
    ExpectWitnessesConsistent(r);
    EXPECT_NEAR(r.distance, std::max(gap, 0.0), 1e-15) << gap;
    EXPECT_EQ(r.intersecting, gap <= 0.0) << gap;
  }
  // Coplanar faces: two boxes side by side with flush tops, touching and a nanometre apart.
  for (double gap : {0.0, 1e-9}) {
    const GjkResult r = GjkDistance(box, I, Box{Vec3(0.5, 1, 1)}, at(Vec3(1.5 + gap, 0.5, 0)));
    ExpectWitnessesConsistent(r);
    EXPECT_NEAR(r.distance, gap, 1e-15);
    EXPECT_EQ(r.intersecting, gap == 0.0);
  }
  // Huge against tiny: a 10 km slab and a 0.1 mm sphere a micrometre above it, a 10 um box on it.
  const Box slab{Vec3(5000, 5000, 1)};
  for (double gap : {1e-6, 0.0}) {
    const GjkResult r = GjkDistance(slab, I, Sphere{Vec3::Zero(), 1e-4}, at(Vec3(4321.5, -1234.25, 1 + 1e-4 + gap)));
    ExpectWitnessesConsistent(r);
    EXPECT_NEAR(r.distance, gap, 1e-11) << gap;
    if (gap > 0) {
      EXPECT_FALSE(r.intersecting);
    }
  }
  {
    const GjkResult r = GjkDistance(Box{Vec3::Constant(5e-6)}, at(Vec3(-2500, 4000, 1 + 5e-6 + 2e-6)), slab, I);
    ExpectWitnessesConsistent(r);
    EXPECT_NEAR(r.distance, 2e-6, 1e-11);
  }
  // Capsules nearly parallel (tilted by 1e-9 rad): apart, touching, overlapping.
  const Capsule c{0.1, 1.0};
  const Mat3 tilt = Eigen::AngleAxisd(1e-9, Vec3::UnitX()).toRotationMatrix();
  for (const auto& [offset, truth] : {std::pair{0.3, 0.1}, std::pair{0.2, 0.0}, std::pair{0.15, 0.0}}) {
    const GjkResult r = GjkDistance(c, I, c, RigidTransform(tilt, Vec3(offset, 0, 0.25)));
    ExpectWitnessesConsistent(r);
    EXPECT_NEAR(r.distance, truth, 1e-12) << offset;
    EXPECT_EQ(r.intersecting, truth == 0.0) << offset;
  }
}

}  // namespace
}  // namespace proximity::core
