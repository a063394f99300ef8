#include "narrowphase/bounding_volume.h"

#include <gtest/gtest.h>

#include <array>
#include <random>

#include "core/test_util.h"

namespace proximity::core {
namespace {

using testing::RandomPose;
using testing::RandomRotation;

std::vector<Vec3> RandomCloud(std::mt19937_64& rng, int n, const Vec3& stretch) {
  std::normal_distribution<double> g(0.0, 1.0);
  const Mat3 R = RandomRotation(rng);
  const Vec3 offset(g(rng), g(rng), g(rng));
  std::vector<Vec3> pts;
  for (int i = 0; i < n; ++i) pts.push_back(R * Vec3(g(rng), g(rng), g(rng)).cwiseProduct(stretch) + 10 * offset);
  return pts;
}

bool InsideObb(const Obb& box, const Vec3& p) {
  const Vec3 q = box.R_MB.transpose() * (p - box.center);
  return (q.cwiseAbs().array() <= box.half_extents.array()).all();
}

std::array<Vec3, 8> Corners(const Obb& box, const RigidTransform& X) {
  std::array<Vec3, 8> c;
  for (int k = 0; k < 8; ++k) {
    const Vec3 s((k & 1) ? 1 : -1, (k & 2) ? 1 : -1, (k & 4) ? 1 : -1);
    c[k] = X * (box.center + box.R_MB * s.cwiseProduct(box.half_extents));
  }
  return c;
}

// Independent separating-axis oracle: projects the 8 world-frame corners of each box onto the 15
// candidate axes built from world-frame edge directions. Returns the largest normalised gap
// (<= 0 when no axis separates).
double CornerProjectionGap(const Obb& a, const RigidTransform& X_WA, const Obb& b, const RigidTransform& X_WB) {
  const auto ca = Corners(a, X_WA), cb = Corners(b, X_WB);
  std::vector<Vec3> axes;
  const Mat3 Ra = X_WA.R * a.R_MB, Rb = X_WB.R * b.R_MB;
  for (int i = 0; i < 3; ++i) axes.push_back(Ra.col(i));
  for (int j = 0; j < 3; ++j) axes.push_back(Rb.col(j));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const Vec3 c = Ra.col(i).cross(Rb.col(j));
      if (c.norm() > 1e-6) axes.push_back(c.normalized());
    }
  double best = -std::numeric_limits<double>::infinity();
  for (const Vec3& L : axes) {
    double amin = 1e300, amax = -1e300, bmin = 1e300, bmax = -1e300;
    for (const Vec3& p : ca) amin = std::min(amin, p.dot(L)), amax = std::max(amax, p.dot(L));
    for (const Vec3& p : cb) bmin = std::min(bmin, p.dot(L)), bmax = std::max(bmax, p.dot(L));
    best = std::max(best, std::max(bmin - amax, amin - bmax));
  }
  return best;
}

TEST(FitSphere, EnclosesRandomClouds) {
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 200; ++trial) {
    const auto pts = RandomCloud(rng, 3 + trial % 50, Vec3(1, 0.1 + trial % 3, 0.01 + trial % 7));
    const Sphere s = FitSphere(pts);
    for (const Vec3& p : pts) EXPECT_LE((p - s.center).norm(), s.radius);
    // Never worse than the sphere about the bounding box centre.
    const Vec3 c = FitAabb(pts).center();
    double r = 0;
    for (const Vec3& p : pts) r = std::max(r, (p - c).norm());
    EXPECT_LE(s.radius, r * (1 + 1e-12));
  }
}

TEST(FitTriangleSphere, IsMinimalEnclosing) {
  std::mt19937_64 rng(2);
  std::normal_distribution<double> g;
  for (int trial = 0; trial < 2000; ++trial) {
    const Vec3 a(g(rng), g(rng), g(rng)), b(g(rng), g(rng), g(rng)), c(g(rng), g(rng), g(rng));
    const Sphere s = FitTriangleSphere(a, b, c);
    for (const Vec3* p : {&a, &b, &c}) EXPECT_LE((*p - s.center).norm(), s.radius);
    // Minimal: half the longest edge is a lower bound, the circumradius of an acute triangle is exact.
    const double longest = std::max({(a - b).norm(), (b - c).norm(), (c - a).norm()});
    EXPECT_GE(s.radius, 0.5 * longest * (1 - 1e-12));
    // No point of a small grid of candidate centres on the triangle's plane does better.
    for (double u = 0; u <= 1.0; u += 0.05)
      for (double v = 0; u + v <= 1.0; v += 0.05) {
        const Vec3 q = a + u * (b - a) + v * (c - a);
        const double r = std::max({(a - q).norm(), (b - q).norm(), (c - q).norm()});
        EXPECT_LE(s.radius, r * (1 + 1e-9));
      }
  }
}

TEST(FitObb, EnclosesAndFindsTheAxesOfARotatedBox) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 100; ++trial) {
    const Vec3 size(1.0 + trial % 5, 0.3, 0.05 + 0.01 * (trial % 4));
    const TriangleMesh box = MakeBoxMesh(size);
    const RigidTransform X = RandomPose(rng, Vec3::Constant(-5), Vec3::Constant(5));
    std::vector<Vec3> tri_vertices;
    for (const auto& t : box.triangles)
      for (int i : t) tri_vertices.push_back(X * box.vertices[i]);
    const Obb o = FitObb(tri_vertices);
    EXPECT_NEAR(o.R_MB.determinant(), 1.0, 1e-12);
    EXPECT_LT((o.R_MB.transpose() * o.R_MB - Mat3::Identity()).norm(), 1e-12);
    for (const Vec3& p : tri_vertices) EXPECT_TRUE(InsideObb(o, p));
    EXPECT_NEAR(o.Volume(), size.prod(), 1e-6 * size.prod());
  }
}

TEST(FitObb, EnclosesRandomTriangleSoups) {
  std::mt19937_64 rng(4);
  for (int trial = 0; trial < 200; ++trial) {
    const auto pts = RandomCloud(rng, 3 * (1 + trial % 20), Vec3(3, 1, 0.2));
    const Obb o = FitObb(pts);
    for (const Vec3& p : pts) EXPECT_TRUE(InsideObb(o, p));
    EXPECT_LE(o.Volume(), FitAabb(pts).half_extents().prod() * 8 * (1 + 1e-9));
  }
}

TEST(ObbsOverlap, AgreesWithCornerProjectionOracle) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> ext(0.05, 2.0);
  int overlapping = 0, separated = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    Obb a, b;
    a.R_MB = RandomRotation(rng);
    b.R_MB = RandomRotation(rng);
    a.center = Vec3(ext(rng), ext(rng), ext(rng));
    b.center = Vec3(ext(rng), ext(rng), ext(rng));
    a.half_extents = Vec3(ext(rng), ext(rng), ext(rng));
    b.half_extents = Vec3(ext(rng), ext(rng), ext(rng));
    const RigidTransform X_WA = RandomPose(rng, Vec3::Constant(-2), Vec3::Constant(2));
    const RigidTransform X_WB = RandomPose(rng, Vec3::Constant(-2), Vec3::Constant(2));
    const double gap = CornerProjectionGap(a, X_WA, b, X_WB);
    if (std::abs(gap) < 1e-9) continue;  // too close to call either way
    const BoxPairFrame f = MakeBoxPairFrame(a, b, RelativeTransform(X_WA, X_WB));
    const bool overlap = ObbsOverlap(a.half_extents, b.half_extents, f);
    EXPECT_EQ(overlap, gap < 0) << "trial " << trial << " gap " << gap;
    (overlap ? overlapping : separated)++;
    // The distance bound is at least the largest separating-axis gap (it also tries the direction
    // between the centres); that it never exceeds the true distance is checked below.
    const double lb = ObbDistanceLowerBound(a.half_extents, b.half_extents, f);
    EXPECT_GE(lb, std::max(0.0, gap) - 1e-9);
    if (gap < 0) {
      EXPECT_EQ(lb, 0.0);
    }
  }
  EXPECT_GT(overlapping, 1000);
  EXPECT_GT(separated, 1000);
}

TEST(ObbDistanceLowerBound, NeverExceedsTheTrueBoxDistance) {
  std::mt19937_64 rng(6);
  for (int trial = 0; trial < 3000; ++trial) {
    // Near and far pairs, flat and chunky boxes: the centre direction matters most when far and flat.
    const double reach = trial % 2 ? 1.5 : 6.0;
    const Vec3 sa(1, 0.5, trial % 3 ? 0.2 : 1e-4), sb(0.3, 0.7, trial % 5 ? 1.1 : 1e-4);
    const TriangleMesh ma = MakeBoxMesh(sa), mb = MakeBoxMesh(sb);
    const RigidTransform X_WA = RandomPose(rng, Vec3::Constant(-reach), Vec3::Constant(reach));
    const RigidTransform X_WB = RandomPose(rng, Vec3::Constant(-reach), Vec3::Constant(reach));
    Obb a, b;
    a.half_extents = sa / 2;
    b.half_extents = sb / 2;
    const double lb = ObbDistanceLowerBound(a.half_extents, b.half_extents,
                                            MakeBoxPairFrame(a, b, RelativeTransform(X_WA, X_WB)));
    const double d = testing::BruteForceDistance(ma, X_WA, mb, X_WB);
    EXPECT_LE(lb, d * (1 + 1e-12) + 1e-12) << "trial " << trial;
    // A box pair whose surfaces intersect gets bound 0.
    if (d == 0.0) { EXPECT_EQ(lb, 0.0); }
  }
}

TEST(ObbDistanceLowerBound, StopsOnceEnoughIsReached) {
  Obb a, b;
  a.half_extents = b.half_extents = Vec3::Constant(0.5);
  RigidTransform X_AB;
  X_AB.p = Vec3(10, 0, 0);
  const BoxPairFrame f = MakeBoxPairFrame(a, b, X_AB);
  EXPECT_DOUBLE_EQ(ObbDistanceLowerBound(a.half_extents, b.half_extents, f), 9.0);
  EXPECT_GE(ObbDistanceLowerBound(a.half_extents, b.half_extents, f, 1.0), 1.0);
}

TEST(SphereDistanceLowerBound, BoundsPointPairs) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g;
  for (int trial = 0; trial < 1000; ++trial) {
    const Vec3 ca(g(rng), g(rng), g(rng)), cb(g(rng), g(rng), g(rng));
    const double ra = std::abs(g(rng)), rb = std::abs(g(rng));
    const double lb = SphereDistanceLowerBound(ca, ra, cb, rb);
    EXPECT_EQ(lb == 0.0, SpheresOverlap(ca, ra, cb, rb) || (ca - cb).norm() == ra + rb);
    for (int k = 0; k < 20; ++k) {
      const Vec3 pa = ca + ra * Vec3(g(rng), g(rng), g(rng)).normalized() * std::sqrt(std::abs(g(rng)) / 4);
      const Vec3 pb = cb + rb * Vec3(g(rng), g(rng), g(rng)).normalized() * std::sqrt(std::abs(g(rng)) / 4);
      if ((pa - ca).norm() > ra || (pb - cb).norm() > rb) continue;
      EXPECT_LE(lb, (pa - pb).norm() + 1e-12);
    }
  }
}

TEST(SphereMotionBound, BoundsEveryPointEvenForTinyRotations) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> g;
  int tiny = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const double scale = std::pow(10.0, trial % 7 - 3);          // spheres from 1e-3 to 1e3
    const double angle = std::pow(10.0, -(trial % 13));           // rotations from 1 rad to 1e-12 rad
    const Vec3 axis = Vec3(g(rng), g(rng), g(rng)).normalized();
    RigidTransform X0 = RandomPose(rng, Vec3::Constant(-scale), Vec3::Constant(scale)), X1 = X0;
    X1.R = Eigen::AngleAxisd(angle, axis).toRotationMatrix() * X0.R;
    if (trial % 2) X1.p += angle * scale * Vec3(g(rng), g(rng), g(rng));
    const Sphere s{scale * Vec3(g(rng), g(rng), g(rng)), scale * std::abs(g(rng))};
    const double bound = SphereMotionBound(X0, X1, s);
    for (int k = 0; k < 50; ++k) {
      const Vec3 p = s.center + s.radius * Vec3(g(rng), g(rng), g(rng)).normalized();
      // The true displacement, in long double so that the oracle does not cancel as well.
      long double moved2 = 0;
      for (int i = 0; i < 3; ++i) {
        long double d = (long double)X1.p[i] - (long double)X0.p[i];
        for (int j = 0; j < 3; ++j) d += ((long double)X1.R(i, j) - (long double)X0.R(i, j)) * (long double)p[j];
        moved2 += d * d;
      }
      EXPECT_LE((double)std::sqrt(moved2), bound) << "trial " << trial << " angle " << angle << " scale " << scale;
    }
    tiny += angle < 1e-8;
  }
  EXPECT_GT(tiny, 500);
}

TEST(AabbDistance, MatchesBoxMeshDistance) {
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> u(-2, 2);
  for (int trial = 0; trial < 200; ++trial) {
    Aabb a, b;
    a.Extend(Vec3(u(rng), u(rng), u(rng)));
    a.Extend(Vec3(u(rng), u(rng), u(rng)));
    b.Extend(Vec3(u(rng), u(rng), u(rng)));
    b.Extend(Vec3(u(rng), u(rng), u(rng)));
    RigidTransform Xa, Xb;
    Xa.p = a.center();
    Xb.p = b.center();
    const double d = testing::BruteForceDistance(MakeBoxMesh(2 * a.half_extents()), Xa,
                                                 MakeBoxMesh(2 * b.half_extents()), Xb);
    const bool nested = (a.min.array() <= b.min.array()).all() && (b.max.array() <= a.max.array()).all();
    const bool nested2 = (b.min.array() <= a.min.array()).all() && (a.max.array() <= b.max.array()).all();
    if (nested || nested2) continue;  // solids overlap, surfaces may not
    EXPECT_NEAR(AabbDistance(a, b), d, 1e-9);
  }
}

}  // namespace
}  // namespace proximity::core
