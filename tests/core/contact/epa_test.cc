#include "contact/epa.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
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

RigidTransform At(const Vec3& p) { return RigidTransform(Mat3::Identity(), p); }
Mat3 Rot(double angle, const Vec3& axis) { return Eigen::AngleAxisd(angle, axis.normalized()).toRotationMatrix(); }

template <class A, class B>
SignedDistanceResult Sd(const A& a, const RigidTransform& X_WA, const B& b, const RigidTransform& X_WB,
                        const SignedDistanceOptions& options = {}) {
  auto r = ComputeSignedDistance(a, X_WA, b, X_WB, nullptr, options);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : SignedDistanceResult{};
}

// ---- Oracles -------------------------------------------------------------------------------------

// Support value max over the shape of u · x (world frame), by brute force over a polytope's vertices or
// in closed form for the primitives. Written independently of convex.h's support mappings.
double SupportValue(const Sphere& s, const RigidTransform& X, const Vec3& u) {
  return u.dot(X * s.center) + s.radius * u.norm();
}
double SupportValue(const Box& s, const RigidTransform& X, const Vec3& u) {
  const Vec3 u_S = X.R.transpose() * u;
  return u.dot(X.p) + u_S.cwiseAbs().dot(s.half_extents);
}
double SupportValue(const Capsule& s, const RigidTransform& X, const Vec3& u) {
  return u.dot(X.p) + s.half_length * std::abs(u.dot(X.R.col(2))) + s.radius * u.norm();
}
double SupportValue(const Cylinder& s, const RigidTransform& X, const Vec3& u) {
  const Vec3 u_S = X.R.transpose() * u;
  return u.dot(X.p) + s.half_length * std::abs(u_S.z()) + s.radius * std::hypot(u_S.x(), u_S.y());
}
double SupportValue(const Cone& s, const RigidTransform& X, const Vec3& u) {
  const Vec3 u_S = X.R.transpose() * u;
  const double apex = s.half_height * u_S.z();
  const double rim = -s.half_height * u_S.z() + s.radius * std::hypot(u_S.x(), u_S.y());
  return u.dot(X.p) + std::max(apex, rim);
}
double SupportValue(const Triangle& s, const RigidTransform& X, const Vec3& u) {
  return std::max({u.dot(X * s.a), u.dot(X * s.b), u.dot(X * s.c)});
}
double SupportValue(const ConvexPolytope& s, const RigidTransform& X, const Vec3& u) {
  double best = -std::numeric_limits<double>::infinity();
  for (const Vec3& v : s.vertices()) best = std::max(best, u.dot(X * v));
  return best;
}

// Overlap of the projections of A and B on unit axis u, for B to move along +u: h_A(u) + h_B(-u).
template <class A, class B>
double Overlap(const A& a, const RigidTransform& X_WA, const B& b, const RigidTransform& X_WB, const Vec3& u) {
  return SupportValue(a, X_WA, u) + SupportValue(b, X_WB, Vec3(-u));
}

// Box–box penetration depth by the 15 separating-axis candidates (Gottschalk, Lin, Manocha 1996):
// exact, as they include every face normal of the Minkowski difference. Returns the minimum of the
// overlap over both orientations of each axis, and the minimising axis in *axis.
double BoxBoxDepth(const Box& a, const RigidTransform& X_WA, const Box& b, const RigidTransform& X_WB,
                   Vec3* axis = nullptr) {
  std::vector<Vec3> axes;
  for (int i = 0; i < 3; ++i) {
    axes.push_back(X_WA.R.col(i));
    axes.push_back(X_WB.R.col(i));
    for (int j = 0; j < 3; ++j) {
      const Vec3 c = X_WA.R.col(i).cross(X_WB.R.col(j));
      if (c.norm() > 1e-9) axes.push_back(c.normalized());
    }
  }
  double best = std::numeric_limits<double>::infinity();
  for (const Vec3& u : axes) {
    for (double s : {1.0, -1.0}) {
      const double o = Overlap(a, X_WA, b, X_WB, Vec3(s * u));
      if (o < best) {
        best = o;
        if (axis) *axis = s * u;
      }
    }
  }
  return best;
}

// Penetration depth of two convex polytopes, exact: the minimum of h_A(u) + h_B(-u) over the face
// normals of A and of B and the cross products of every pair of edges, both orientations (these
// include all face normals of A - B; any other direction only gives a larger value).
double PolytopeDepth(const ConvexPolytope& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                     const RigidTransform& X_WB) {
  std::vector<Vec3> candidates;
  for (const FacePlane& f : a.face_planes()) candidates.push_back(X_WA.R * f.normal);
  for (const FacePlane& f : b.face_planes()) candidates.push_back(-(X_WB.R * f.normal));
  for (const auto& ea : a.edges()) {
    const Vec3 da = X_WA.R * (a.vertices()[ea[1]] - a.vertices()[ea[0]]);
    for (const auto& eb : b.edges()) {
      const Vec3 db = X_WB.R * (b.vertices()[eb[1]] - b.vertices()[eb[0]]);
      const Vec3 c = da.cross(db);
      if (c.norm() > 1e-12 * da.norm() * db.norm()) {
        candidates.push_back(c.normalized());
        candidates.push_back(-c.normalized());
      }
    }
  }
  double best = std::numeric_limits<double>::infinity();
  for (const Vec3& u : candidates) best = std::min(best, Overlap(a, X_WA, b, X_WB, u));
  return best;
}

// Whether point p_W lies in the shape (within tol), by GJK from a zero-radius sphere.
template <class S>
bool Contains(const S& s, const RigidTransform& X_WS, const Vec3& p_W, double tol) {
  return GjkDistance(Sphere{Vec3::Zero(), 0.0}, At(p_W), s, X_WS).distance <= tol;
}

// The checks every penetrating answer must pass, whatever the pair: finite, unit normal, the bracket
// ordered, translating B by (depth + 1e-9) along the normal separates, by (depth - slack) does not;
// the witnesses lie in their shapes and are the deepest points along the normal.
template <class A, class B>
void ExpectValidAnswer(const A& a, const RigidTransform& X_WA, const B& b, const RigidTransform& X_WB,
                       const SignedDistanceResult& r, double slack = 1e-6) {
  ASSERT_TRUE(std::isfinite(r.distance) && std::isfinite(r.lower_bound) && std::isfinite(r.upper_bound));
  ASSERT_TRUE(r.normal_W.allFinite() && r.p_WA.allFinite() && r.p_WB.allFinite());
  EXPECT_NEAR(r.normal_W.norm(), 1.0, 1e-12);
  EXPECT_LE(r.lower_bound, r.distance);
  EXPECT_LE(r.distance, r.upper_bound);
  const double scale = 1.0 + X_WA.p.norm() + X_WB.p.norm();
  if (r.distance > 0) {
    EXPECT_FALSE(r.intersecting && r.distance > 1e-12);
    EXPECT_NEAR((r.p_WB - r.p_WA).norm(), r.distance, 1e-9 * scale);
    EXPECT_NEAR((r.p_WB - r.p_WA).dot(r.normal_W), r.distance, 1e-9 * scale);
    return;
  }
  EXPECT_TRUE(r.intersecting);
  const double depth = -r.distance;
  RigidTransform moved = X_WB;
  moved.p += (depth + 1e-9) * r.normal_W;
  const GjkResult apart = GjkDistance(a, X_WA, b, moved);
  EXPECT_FALSE(apart.intersecting) << "moving B by depth + 1e-9 = " << depth + 1e-9 << " leaves distance "
                                   << apart.distance;
  if (r.converged && depth > slack) {
    moved.p = X_WB.p + (depth - slack) * r.normal_W;
    EXPECT_TRUE(GjkDistance(a, X_WA, b, moved).intersecting) << "moving B by depth - " << slack << " separates";
  }
  // Witnesses: in their shapes, and the deepest points along the normal.
  EXPECT_TRUE(Contains(a, X_WA, r.p_WA, 1e-9 * scale)) << "p_WA outside A";
  EXPECT_TRUE(Contains(b, X_WB, r.p_WB, 1e-9 * scale)) << "p_WB outside B";
  if (r.converged) {
    EXPECT_NEAR(r.normal_W.dot(r.p_WA), SupportValue(a, X_WA, r.normal_W), 1e-7 * scale);
    EXPECT_NEAR(-r.normal_W.dot(r.p_WB), SupportValue(b, X_WB, Vec3(-r.normal_W)), 1e-7 * scale);
    EXPECT_NEAR((r.p_WB - r.p_WA).dot(r.normal_W), r.distance, 1e-7 * scale);
  }
}

// ---- Closed-form penetrations --------------------------------------------------------------------

TEST(SignedDistance, BoxBoxMatchesSeparatingAxes) {
  std::mt19937_64 rng(101);
  std::uniform_real_distribution<double> extent(0.05, 0.6), offset(-0.6, 0.6), angle(-M_PI, M_PI);
  int penetrating = 0;
  double worst = 0.0;
  int64_t iterations = 0;
  for (int i = 0; i < Cases(1500); ++i) {
    const Box a{Vec3(extent(rng), extent(rng), extent(rng))}, b{Vec3(extent(rng), extent(rng), extent(rng))};
    RigidTransform X_WA, X_WB;
    switch (i % 3) {
      case 0:  // Axis-aligned.
        X_WA = At(Vec3(offset(rng), offset(rng), offset(rng)));
        X_WB = At(Vec3(offset(rng), offset(rng), offset(rng)));
        break;
      case 1:  // Rotated about one shared axis.
        X_WA = RigidTransform(Rot(angle(rng), Vec3::UnitZ()), Vec3(offset(rng), offset(rng), offset(rng)));
        X_WB = RigidTransform(Rot(angle(rng), Vec3::UnitZ()), Vec3(offset(rng), offset(rng), offset(rng)));
        break;
      default:
        X_WA = testing::RandomPose(rng, Vec3::Constant(-0.5), Vec3::Constant(0.5));
        X_WB = testing::RandomPose(rng, Vec3::Constant(-0.5), Vec3::Constant(0.5));
    }
    SCOPED_TRACE(::testing::Message() << "case " << i);
    const SignedDistanceResult r = Sd(a, X_WA, b, X_WB);
    ExpectValidAnswer(a, X_WA, b, X_WB, r);
    Vec3 axis;
    const double depth = BoxBoxDepth(a, X_WA, b, X_WB, &axis);
    if (depth <= 0) {
      EXPECT_GT(r.distance, -1e-12);
      continue;
    }
    ++penetrating;
    EXPECT_TRUE(r.converged);
    EXPECT_EQ(r.method, SignedDistanceMethod::kEpa);
    EXPECT_NEAR(-r.distance, depth, 1e-9 * depth + 1e-12);
    EXPECT_LE(r.lower_bound, -depth + 1e-12);
    EXPECT_GE(r.upper_bound, -depth - 1e-12);
    worst = std::max(worst, std::abs(-r.distance - depth) / depth);
    iterations += r.epa_iterations;
  }
  EXPECT_GT(penetrating, Cases(1500) / 4);
  std::printf("box-box: %d penetrating, worst relative depth error %.3g, mean EPA iterations %.2f\n", penetrating,
              worst, static_cast<double>(iterations) / std::max(penetrating, 1));
}

TEST(SignedDistance, SphereSphereAndSphereBoxInClosedForm) {
  std::mt19937_64 rng(102);
  std::uniform_real_distribution<double> radius(0.05, 0.5), extent(0.02, 0.5);
  int inside = 0, outside = 0;
  for (int i = 0; i < Cases(2000); ++i) {
    const Sphere a{Vec3(0.05, -0.02, 0.1), radius(rng)}, b{Vec3::Zero(), radius(rng)};
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.4), Vec3::Constant(0.4));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.4), Vec3::Constant(0.4));
    SCOPED_TRACE(::testing::Message() << "case " << i);
    const SignedDistanceResult r = Sd(a, X_WA, b, X_WB);
    ExpectValidAnswer(a, X_WA, b, X_WB, r);
    const Vec3 d = X_WB * b.center - X_WA * a.center;
    EXPECT_NEAR(r.distance, d.norm() - a.radius - b.radius, 1e-12);
    if (d.norm() > 1e-9) {
      EXPECT_NEAR(r.normal_W.dot(d.normalized()), 1.0, 1e-12);
    }

    const Box box{Vec3(extent(rng), extent(rng), extent(rng))};
    const SignedDistanceResult s = Sd(a, X_WA, box, X_WB);
    ExpectValidAnswer(a, X_WA, box, X_WB, s);
    const Vec3 c_B = X_WB.inverse() * (X_WA * a.center);
    const Vec3 clamped = c_B.cwiseMax(-box.half_extents).cwiseMin(box.half_extents);
    double truth;
    if (clamped != c_B) {
      ++outside;
      truth = (c_B - clamped).norm() - a.radius;
    } else {
      ++inside;  // Centre inside the box: out through the nearest face.
      truth = -a.radius - (box.half_extents - c_B.cwiseAbs()).minCoeff();
    }
    EXPECT_NEAR(s.distance, truth, 1e-9);
  }
  EXPECT_GT(inside, Cases(2000) / 20);
  EXPECT_GT(outside, Cases(2000) / 5);
}

// Signed distance from point p (frame C) to a cylinder: negative inside.
double PointCylinderSignedDistance(const Cylinder& c, const Vec3& p) {
  const double rho = std::hypot(p.x(), p.y()), z = std::abs(p.z());
  if (rho <= c.radius && z <= c.half_length) return -std::min(c.radius - rho, c.half_length - z);
  return std::hypot(std::max(rho - c.radius, 0.0), std::max(z - c.half_length, 0.0));
}

// Signed distance from point p (frame C) to a cone, in the meridian half-plane (rho, z): the solid's
// section there is the triangle apex (0, h), rim (r, -h), base centre (0, -h); its boundary in 3D is
// the slanted side and the base (the axis is inside).
double PointConeSignedDistance(const Cone& c, const Vec3& p) {
  const double rho = std::hypot(p.x(), p.y()), z = p.z(), h = c.half_height, r = c.radius;
  const auto segment = [&](double x0, double z0, double x1, double z1) {
    const double dx = x1 - x0, dz = z1 - z0;
    const double t = std::clamp(((rho - x0) * dx + (z - z0) * dz) / (dx * dx + dz * dz), 0.0, 1.0);
    return std::hypot(rho - (x0 + t * dx), z - (z0 + t * dz));
  };
  const double to_side = segment(0, h, r, -h), to_base = segment(r, -h, 0, -h);
  // Inside: below the apex-rim line and above the base.
  const bool inside = z >= -h && (z - h) * r <= -2 * h * rho;
  return inside ? -std::min(to_side, to_base) : std::min(to_side, to_base);
}

TEST(SignedDistance, SphereAgainstCurvedSidesInClosedForm) {
  // A large sphere whose centre lies near a cylinder's or a cone's curved side: the margin dwarfs the
  // cores' distance, and near contact GJK's direction between the cores can be far worse than its
  // distance. The normal must still be right: the overlap along it is the exact depth.
  std::mt19937_64 rng(112);
  const Cylinder cyl{0.2, 0.3};
  const Cone cone{0.25, 0.3};
  std::uniform_real_distribution<double> angle(-M_PI, M_PI), s01(0.05, 0.95), log_gap(-11, -1);
  int margin_only = 0;
  for (int i = 0; i < Cases(2000); ++i) {
    const double t = angle(rng), s = s01(rng);
    const double gap = (i % 3 == 0 ? -1.0 : 1.0) * std::pow(10.0, log_gap(rng));
    const Vec3 radial(std::cos(t), std::sin(t), 0);
    const bool on_cone = i % 2 == 1;
    Vec3 p_C;
    if (on_cone) {
      const double h = 2 * cone.half_height, r = cone.radius;
      const Vec3 on = Vec3(0, 0, cone.half_height) + s * (r * radial - Vec3(0, 0, h));
      p_C = on + gap * (h * radial + Vec3(0, 0, r)).normalized();
    } else {
      p_C = (cyl.radius + gap) * radial + Vec3(0, 0, (2 * s - 1) * 0.28);
    }
    const RigidTransform X_WC = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    const Sphere ball{Vec3::Zero(), 0.25};
    const RigidTransform X_WS(testing::RandomRotation(rng), X_WC * p_C);
    SCOPED_TRACE(::testing::Message() << "case " << i << (on_cone ? " cone" : " cylinder") << " gap " << gap);
    const SignedDistanceResult r = on_cone ? Sd(cone, X_WC, ball, X_WS) : Sd(cyl, X_WC, ball, X_WS);
    const double truth =
        (on_cone ? PointConeSignedDistance(cone, p_C) : PointCylinderSignedDistance(cyl, p_C)) - ball.radius;
    if (on_cone) {
      ExpectValidAnswer(cone, X_WC, ball, X_WS, r, 1e-9);
    } else {
      ExpectValidAnswer(cyl, X_WC, ball, X_WS, r, 1e-9);
    }
    EXPECT_NEAR(r.distance, truth, 1e-9);
    EXPECT_LE(r.lower_bound, truth + 1e-12);
    EXPECT_GE(r.upper_bound, truth - 1e-12);
    margin_only += r.method == SignedDistanceMethod::kMargin;
  }
  EXPECT_GT(margin_only, Cases(2000) / 4);
}

TEST(SignedDistance, PointNearAConeSideKeepsItsBracketWhereGjkAloneFails) {
  // A point within 1e-10 to 1e-3 of a cone's slanted side, outside and inside. GJK's final simplex is
  // often a sliver there, off which its closest point (and so its distance) can be wrong, or whose
  // inside test can claim contact for a point 1e-8 away; the answer must still bracket the truth.
  std::mt19937_64 rng(113);
  const Cone cone{0.25, 0.3};
  const Sphere point{Vec3::Zero(), 0.0};
  std::uniform_real_distribution<double> angle(-M_PI, M_PI), s01(0.05, 0.95), log_gap(-10, -3);
  int gjk_wrong = 0, not_converged = 0;
  const int cases = Cases(6000);
  for (int i = 0; i < cases; ++i) {
    const double t = angle(rng), s = s01(rng);
    const double gap = (i % 4 == 0 ? -1.0 : 1.0) * std::pow(10.0, log_gap(rng));
    const Vec3 radial(std::cos(t), std::sin(t), 0);
    const double h = 2 * cone.half_height;
    const Vec3 p_C = Vec3(0, 0, cone.half_height) + s * (cone.radius * radial - Vec3(0, 0, h)) +
                     gap * (h * radial + Vec3(0, 0, cone.radius)).normalized();
    const RigidTransform X_WC = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    const RigidTransform X_WP(testing::RandomRotation(rng), X_WC * p_C);
    const double truth = PointConeSignedDistance(cone, p_C);
    SCOPED_TRACE(::testing::Message() << "case " << i << " gap " << gap);
    const SignedDistanceResult r = Sd(cone, X_WC, point, X_WP);
    // The bracket holds up to the rounding floor on curved surfaces (1e-9 of the coordinates' scale).
    EXPECT_LE(r.lower_bound, truth + 1e-9);
    EXPECT_GE(r.upper_bound, truth - 1e-9);
    if (r.converged) {
      EXPECT_NEAR(r.distance, truth, 1e-9);  // The rounding floor: 1e-9 of the coordinates' scale.
    } else {
      ++not_converged;
    }
    const GjkResult g = GjkDistance(cone, X_WC, point, X_WP);
    if (std::abs(g.distance - std::max(truth, 0.0)) > 1e-6 * std::abs(truth) + 1e-12) ++gjk_wrong;
  }
  EXPECT_LT(not_converged, cases / 20);
  std::printf("point near a cone side: GJK alone off by more than 1e-6 relative in %d of %d, ours not converged in %d\n",
              gjk_wrong, cases, not_converged);
  // Poses where GJK alone claims contact for a point 1e-9 to 1e-7 outside (above the rounding floor):
  // ours must say apart. The search has its own seed and is not shortened under sanitizers (a GJK call a
  // try), so how many it finds does not depend on the cases above.
  std::mt19937_64 search_rng(211);
  int false_contacts = 0, tries = 0;
  std::uniform_real_distribution<double> small_gap(-9, -7);
  while (false_contacts < 4 && tries < 200000) {
    ++tries;
    const double t = angle(search_rng), s = s01(search_rng), gap = std::pow(10.0, small_gap(search_rng));
    const Vec3 radial(std::cos(t), std::sin(t), 0);
    const double h = 2 * cone.half_height;
    const Vec3 p_C = Vec3(0, 0, cone.half_height) + s * (cone.radius * radial - Vec3(0, 0, h)) +
                     gap * (h * radial + Vec3(0, 0, cone.radius)).normalized();
    const RigidTransform X_WC = testing::RandomPose(search_rng, Vec3::Constant(-1), Vec3::Constant(1));
    const RigidTransform X_WP(testing::RandomRotation(search_rng), X_WC * p_C);
    if (!GjkDistance(cone, X_WC, point, X_WP).intersecting) continue;
    ++false_contacts;
    const double truth = PointConeSignedDistance(cone, p_C);
    SCOPED_TRACE(::testing::Message() << "GJK's false contact, gap " << gap);
    const SignedDistanceResult r = Sd(cone, X_WC, point, X_WP);
    EXPECT_LE(r.lower_bound, truth + 1e-12);
    EXPECT_GE(r.upper_bound, truth - 1e-12);
    EXPECT_GT(r.distance, 0.0);
  }
  std::printf("GJK alone claimed contact for a point 1e-9 to 1e-7 away in %d of %d poses\n", false_contacts, tries);
  EXPECT_GT(false_contacts, 0);
}

TEST(SignedDistance, CrossingCylindersOverlappingByLessThanAMicronAreNotCalledApart) {
  // Two crossing cylinders whose axes are 2r - eps apart along their common perpendicular overlap:
  // translating one by eps along it separates them, so the depth is in (0, eps]. GJK alone now and
  // then stops on rounding and calls such a pair apart, without a separating axis.
  std::mt19937_64 rng(114);
  const Cylinder c{0.2, 0.3};
  std::uniform_real_distribution<double> log_eps(-7, -6);
  int gjk_apart = 0, tries = 0;
  while (gjk_apart < 3 && tries < Cases(40000)) {
    ++tries;
    const RigidTransform X_WA(testing::RandomRotation(rng), Vec3(0.1, -0.2, 0.3));
    const Mat3 R_WB = testing::RandomRotation(rng);
    const Vec3 perp = X_WA.R.col(2).cross(R_WB.col(2)).normalized();
    const double eps = std::pow(10.0, log_eps(rng));
    const RigidTransform X_WB(R_WB, X_WA.p + (2 * c.radius - eps) * perp);
    if (GjkDistance(c, X_WA, c, X_WB).intersecting) continue;
    ++gjk_apart;
    SCOPED_TRACE(::testing::Message() << "GJK's false separation, overlap " << eps);
    const SignedDistanceResult r = Sd(c, X_WA, c, X_WB);
    EXPECT_TRUE(r.intersecting);
    EXPECT_LT(r.distance, 0.0);
    EXPECT_GE(r.distance, -eps - 1e-9);
    EXPECT_LE(r.lower_bound, 0.0);
    EXPECT_GE(r.upper_bound, -eps - 1e-12);
  }
  std::printf("GJK alone called crossing cylinders overlapping by 1e-7 to 1e-6 apart in %d of %d poses\n", gjk_apart,
              tries);
  EXPECT_GT(gjk_apart, 0);
}

TEST(SignedDistance, CapsulePairsMatchSegmentDistance) {
  std::mt19937_64 rng(103);
  std::uniform_real_distribution<double> radius(0.02, 0.3), half(0.0, 0.6);
  int penetrating = 0;
  for (int i = 0; i < Cases(3000); ++i) {
    const Capsule a{radius(rng), i % 7 == 0 ? 0.0 : half(rng)}, b{radius(rng), half(rng)};
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.5), Vec3::Constant(0.5));
    RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.5), Vec3::Constant(0.5));
    if (i % 11 == 0) X_WB.R = X_WA.R;  // Parallel axes.
    if (i % 13 == 0) X_WB.p = X_WA * Vec3(0, 0, 0.1);  // Axes through one point.
    Vec3 cp, cq;
    const double seg = std::sqrt(SegmentSegmentDistanceSquared(
        X_WA * Vec3(0, 0, -a.half_length), X_WA * Vec3(0, 0, a.half_length), X_WB * Vec3(0, 0, -b.half_length),
        X_WB * Vec3(0, 0, b.half_length), &cp, &cq));
    SCOPED_TRACE(::testing::Message() << "case " << i);
    const SignedDistanceResult r = Sd(a, X_WA, b, X_WB);
    ExpectValidAnswer(a, X_WA, b, X_WB, r);
    EXPECT_NEAR(r.distance, seg - a.radius - b.radius, 1e-9);
    penetrating += r.distance < 0;
  }
  EXPECT_GT(penetrating, Cases(3000) / 10);
}

TEST(SignedDistance, PolytopePairsMatchBruteForceOverFeatures) {
  std::mt19937_64 rng(104);
  int penetrating = 0, separated = 0;
  double worst = 0.0;
  int64_t iterations = 0;
  for (int i = 0; i < Cases(300); ++i) {
    const auto a = testing::RandomHull(rng, 4 + static_cast<int>(rng() % 30), 0.3, 0.4);
    const auto b = testing::RandomHull(rng, 4 + static_cast<int>(rng() % 30), 0.3, 0.4);
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.4), Vec3::Constant(0.4));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.4), Vec3::Constant(0.4));
    SCOPED_TRACE(::testing::Message() << "case " << i);
    const SignedDistanceResult r = Sd(*a, X_WA, *b, X_WB);
    ExpectValidAnswer(*a, X_WA, *b, X_WB, r);
    const double depth = PolytopeDepth(*a, X_WA, *b, X_WB);
    if (depth <= 0) {
      ++separated;
      EXPECT_GT(r.distance, -1e-12);
      EXPECT_NEAR(r.distance, testing::BruteForceDistance(a->ToMesh(), X_WA, b->ToMesh(), X_WB),
                  1e-9 * std::max(r.distance, 1e-3));
      continue;
    }
    ++penetrating;
    EXPECT_TRUE(r.converged);
    EXPECT_NEAR(-r.distance, depth, 1e-9 * depth + 1e-12);
    EXPECT_LE(r.lower_bound, -depth + 1e-12);
    EXPECT_GE(r.upper_bound, -depth - 1e-12);
    worst = std::max(worst, std::abs(-r.distance - depth) / depth);
    iterations += r.epa_iterations;
  }
  EXPECT_GT(penetrating, Cases(300) / 4);
  EXPECT_GT(separated, Cases(300) / 20);
  std::printf("polytopes: %d penetrating, worst relative depth error %.3g, mean EPA iterations %.2f\n", penetrating,
              worst, static_cast<double>(iterations) / std::max(penetrating, 1));
}


// ---- Regression poses ----------------------------------------------------------------------------

TEST(SignedDistance, TouchingBoxesGiveZeroDepthAndTheFaceNormal) {
  const Box box{Vec3(1, 1, 1)};
  std::mt19937_64 rng(105);
  for (int trial = 0; trial < 8; ++trial) {
    // The pair is posed in a common random frame F: A at its origin, B touching along one axis.
    const RigidTransform X_WF = trial == 0 ? RigidTransform() : testing::RandomPose(rng, Vec3::Constant(-1),
                                                                                      Vec3::Constant(1));
    for (int axis = 0; axis < 3; ++axis) {
      for (double sign : {1.0, -1.0}) {
        Vec3 p_FB(0.3, -0.2, 0.1);
        p_FB[axis] = 2.0 * sign;
        const RigidTransform X_WB = X_WF * At(p_FB);
        SCOPED_TRACE(::testing::Message() << "trial " << trial << " axis " << axis << " sign " << sign);
        const SignedDistanceResult r = Sd(box, X_WF, box, X_WB);
        ExpectValidAnswer(box, X_WF, box, X_WB, r);
        EXPECT_TRUE(r.intersecting);
        EXPECT_NEAR(r.distance, 0.0, 1e-12);
        EXPECT_NEAR(r.normal_W.dot(sign * X_WF.R.col(axis)), 1.0, 1e-9) << r.normal_W.transpose();
        // Penetrating by 0.1 with the same lateral offset: depth 0.1 along the same normal.
        p_FB[axis] = 1.9 * sign;
        const SignedDistanceResult s = Sd(box, X_WF, box, X_WF * At(p_FB));
        EXPECT_NEAR(s.distance, -0.1, 1e-12);
        EXPECT_NEAR(s.normal_W.dot(sign * X_WF.R.col(axis)), 1.0, 1e-9);
        EXPECT_TRUE(s.converged);
      }
    }
  }
}

TEST(SignedDistance, StackedCubesAtContactAndWithinANanometre) {
  const Box cube{Vec3::Constant(0.5)};
  const RigidTransform I;
  for (double lateral : {0.0, 0.25, 0.7}) {
    SCOPED_TRACE(::testing::Message() << "lateral " << lateral);
    // Exact contact.
    SignedDistanceResult r = Sd(cube, I, cube, At(Vec3(lateral, -0.5 * lateral, 1.0)));
    EXPECT_TRUE(r.intersecting);
    EXPECT_NEAR(r.distance, 0.0, 1e-15);
    EXPECT_NEAR(r.normal_W.z(), 1.0, 1e-12);
    // 1e-9 overlap.
    r = Sd(cube, I, cube, At(Vec3(lateral, -0.5 * lateral, 1.0 - 1e-9)));
    EXPECT_TRUE(r.intersecting);
    EXPECT_NEAR(r.distance, -1e-9, 1e-15);
    EXPECT_NEAR(r.normal_W.z(), 1.0, 1e-12);
    EXPECT_LE(r.lower_bound, -1e-9 + 1e-15);
    EXPECT_GE(r.upper_bound, -1e-9 - 1e-15);
    ExpectValidAnswer(cube, I, cube, At(Vec3(lateral, -0.5 * lateral, 1.0 - 1e-9)), r);
    // 1e-9 apart: GJK's distance.
    r = Sd(cube, I, cube, At(Vec3(lateral, -0.5 * lateral, 1.0 + 1e-9)));
    EXPECT_FALSE(r.intersecting);
    EXPECT_EQ(r.method, SignedDistanceMethod::kGjk);
    EXPECT_NEAR(r.distance, 1e-9, 1e-15);
    EXPECT_NEAR(r.normal_W.z(), 1.0, 1e-6);
  }
}

TEST(SignedDistance, OriginOnAFaceEdgeOrVertexOfTheMinkowskiDifference) {
  const Box box{Vec3(1, 1, 1)};
  const RigidTransform I;
  // B touches A face to face, edge to edge and corner to corner: the origin lies on a face, an edge
  // and a vertex of A - B. The depth is 0 and the normal lies in that feature's normal cone.
  for (const Vec3& p : {Vec3(2, 0.5, 0.5), Vec3(2, 2, 0.5), Vec3(2, 2, 2), Vec3(-2, 2, -2)}) {
    SCOPED_TRACE(::testing::Message() << "B at " << p.transpose());
    const SignedDistanceResult r = Sd(box, I, box, At(p));
    ExpectValidAnswer(box, I, box, At(p), r);
    EXPECT_NEAR(r.distance, 0.0, 1e-12);
    for (int i = 0; i < 3; ++i) {
      if (std::abs(p[i]) < 2) {
        EXPECT_NEAR(r.normal_W[i], 0.0, 1e-9);
      } else {
        EXPECT_GE(r.normal_W[i] * p[i], -1e-9);
      }
    }
  }
  // Edge crossing edge: A turned 45 degrees about z, B 45 degrees about y, their edges meeting at
  // x = sqrt(2); at contact, 1e-9 apart and 1e-9 overlapping.
  const RigidTransform X_WA(Rot(M_PI / 4, Vec3::UnitZ()), Vec3::Zero());
  const Mat3 R_WB = Rot(M_PI / 4, Vec3::UnitY());
  for (double gap : {0.0, 1e-9, -1e-9}) {
    const RigidTransform X_WB(R_WB, Vec3(2 * std::sqrt(2.0) + gap, 0, 0));
    SCOPED_TRACE(::testing::Message() << "edge-edge gap " << gap);
    const SignedDistanceResult r = Sd(box, X_WA, box, X_WB);
    ExpectValidAnswer(box, X_WA, box, X_WB, r);
    EXPECT_NEAR(r.distance, gap, 1e-14);
    EXPECT_NEAR(r.normal_W.x(), 1.0, 1e-6);
    EXPECT_EQ(r.intersecting, gap <= 0);
  }
}

TEST(SignedDistance, NanometreSeparationsAreGjkDistances) {
  const RigidTransform I;
  const Vec3 x = Vec3::UnitX();
  const auto check = [&](const auto& a, const auto& b, double contact_x) {
    for (double gap : {1e-9, 1e-7}) {
      const SignedDistanceResult r = Sd(a, I, b, At((contact_x + gap) * x));
      EXPECT_FALSE(r.intersecting);
      EXPECT_EQ(r.method, SignedDistanceMethod::kGjk);
      EXPECT_NEAR(r.distance, gap, 1e-14);
      EXPECT_NEAR(r.normal_W.x(), 1.0, 1e-6);
      const SignedDistanceResult s = Sd(a, I, b, At((contact_x - gap) * x));
      EXPECT_TRUE(s.intersecting);
      EXPECT_NEAR(s.distance, -gap, 1e-14);
      EXPECT_NEAR(s.normal_W.x(), 1.0, 1e-6);
    }
  };
  check(Box{Vec3(1, 1, 1)}, Box{Vec3(0.5, 0.5, 0.5)}, 1.5);
  check(Sphere{Vec3::Zero(), 0.5}, Sphere{Vec3::Zero(), 0.25}, 0.75);
  check(Sphere{Vec3::Zero(), 0.5}, Box{Vec3(0.5, 0.5, 0.5)}, 1.0);
  check(Capsule{0.5, 1.0}, Capsule{0.25, 2.0}, 0.75);
  check(Cylinder{0.5, 1.0}, Box{Vec3(0.5, 0.5, 0.5)}, 1.0);
  check(Box{Vec3(1, 1, 1)}, Triangle{Vec3(0, -1, -1), Vec3(0, 1, -1), Vec3(0, 0, 1)}, 1.0);
}

TEST(SignedDistance, DeepPenetrationOneShapeInsideTheOther) {
  std::mt19937_64 rng(106);
  const RigidTransform I;
  // A small box anywhere inside a big one: out through the nearest big face along a shared axis, or
  // by the SAT oracle in general.
  const Box big{Vec3(1.0, 0.8, 0.6)};
  std::uniform_real_distribution<double> u(-0.3, 0.3);
  for (int i = 0; i < Cases(200); ++i) {
    const Box small{Vec3(0.1, 0.05, 0.2)};
    const RigidTransform X_WB(i % 2 ? Mat3::Identity() : testing::RandomRotation(rng), Vec3(u(rng), u(rng), u(rng)));
    const SignedDistanceResult r = Sd(big, I, small, X_WB);
    ExpectValidAnswer(big, I, small, X_WB, r);
    EXPECT_NEAR(-r.distance, BoxBoxDepth(big, I, small, X_WB), 1e-9);
  }
  // Identical shapes at one pose: the depth is the smallest width.
  const Box box{Vec3(0.3, 0.2, 0.5)};
  EXPECT_NEAR(Sd(box, I, box, I).distance, -0.4, 1e-12);
  // A 162-vertex icosphere against itself needs more than the default 128 EPA iterations: capped, the
  // answer is flagged and its bracket holds; with room, it is exact.
  const auto hull = ConvexPolytope::Build(MakeIcosphereMesh(0.5, 2)).value();
  const double hull_depth = PolytopeDepth(*hull, I, *hull, I);
  SignedDistanceResult h = Sd(*hull, I, *hull, I);
  ExpectValidAnswer(*hull, I, *hull, I, h);
  EXPECT_LE(h.lower_bound, -hull_depth + 1e-12);
  EXPECT_GE(h.upper_bound, -hull_depth - 1e-12);
  SignedDistanceOptions patient;
  patient.max_iterations = 5000;
  patient.max_faces = 1 << 20;
  h = Sd(*hull, I, *hull, I, patient);
  EXPECT_TRUE(h.converged);
  EXPECT_NEAR(-h.distance, hull_depth, 1e-9);
  std::printf("icosphere against itself: %d EPA iterations, %d faces\n", h.epa_iterations, h.epa_faces);
  // Concentric spheres: the cores are one point (a flat Minkowski difference), any normal is right.
  const SignedDistanceResult s = Sd(Sphere{Vec3::Zero(), 0.3}, I, Sphere{Vec3::Zero(), 0.2}, I);
  EXPECT_EQ(s.method, SignedDistanceMethod::kFlat);
  EXPECT_NEAR(s.distance, -0.5, 1e-15);
  ExpectValidAnswer(Sphere{Vec3::Zero(), 0.3}, I, Sphere{Vec3::Zero(), 0.2}, I, s);
  // A sphere at a box's centre, a capsule along a box's long axis: out through the nearest faces.
  EXPECT_NEAR(Sd(Sphere{Vec3::Zero(), 0.1}, I, big, I).distance, -0.7, 1e-12);
  const SignedDistanceResult c = Sd(Capsule{0.1, 0.3}, RigidTransform(Rot(M_PI / 2, Vec3::UnitY()), Vec3::Zero()),
                                    big, I);
  EXPECT_NEAR(c.distance, -0.7, 1e-12);
  EXPECT_NEAR(std::abs(c.normal_W.z()), 1.0, 1e-9);
}

// ---- Every primitive pair on random poses --------------------------------------------------------

struct ShapeZoo {
  std::vector<std::shared_ptr<const ConvexPolytope>> hulls;
  explicit ShapeZoo(std::mt19937_64& rng) {
    for (int n : {4, 12, 60}) hulls.push_back(testing::RandomHull(rng, n, 0.2, 0.4));
  }
  template <class F>
  void Visit(int kind, F&& f) const {
    switch (kind) {
      case 0: return f(Sphere{Vec3(0.02, 0, 0), 0.25});
      case 1: return f(Box{Vec3(0.3, 0.2, 0.1)});
      case 2: return f(Capsule{0.12, 0.25});
      case 3: return f(Cylinder{0.2, 0.3});
      case 4: return f(Cone{0.25, 0.3});
      case 5: return f(Triangle{Vec3(-0.2, -0.1, 0), Vec3(0.3, 0, 0), Vec3(0, 0.35, 0.05)});
      case 6: return f(Box{Vec3(0.3, 0.25, 0.0)});  // A rectangle.
      case 7: return f(Capsule{0.0, 0.3});            // A segment.
      default: return f(*hulls[(kind - 8) % hulls.size()]);
    }
  }
  static constexpr int kKinds = 11;
};

TEST(SignedDistance, RandomPosesOfEveryPairGiveValidAnswers) {
  std::mt19937_64 rng(107);
  const ShapeZoo zoo(rng);
  int penetrating = 0, not_converged = 0;
  int64_t epa_iterations = 0, epa_runs = 0;
  const int cases = Cases(6000);
  for (int i = 0; i < cases; ++i) {
    const int ka = i % ShapeZoo::kKinds, kb = (i / ShapeZoo::kKinds) % ShapeZoo::kKinds;
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.25), Vec3::Constant(0.25));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.25), Vec3::Constant(0.25));
    zoo.Visit(ka, [&](const auto& a) {
      zoo.Visit(kb, [&](const auto& b) {
        SCOPED_TRACE(::testing::Message() << "case " << i << " kinds " << ka << ", " << kb);
        const SignedDistanceResult r = Sd(a, X_WA, b, X_WB);
        ExpectValidAnswer(a, X_WA, b, X_WB, r);
        if (r.distance < 0) ++penetrating;
        if (!r.converged) ++not_converged;
        if (r.method == SignedDistanceMethod::kEpa) {
          ++epa_runs;
          epa_iterations += r.epa_iterations;
        }
        // Swapping the shapes gives the same signed distance and the opposite normal.
        const SignedDistanceResult s = Sd(b, X_WB, a, X_WA);
        EXPECT_NEAR(s.distance, r.distance, 1e-7 * std::max(1.0, std::abs(r.distance)));
        if (r.distance < -1e-6 && r.converged && s.converged) {
          // The normal is unique unless two directions give (nearly) the same depth.
          const double along_r = Overlap(b, X_WB, a, X_WA, Vec3(-r.normal_W));
          EXPECT_NEAR(along_r, -s.distance, 1e-7) << "A's normal reversed is as good for the swapped pair";
        }
      });
    });
  }
  EXPECT_GT(penetrating, cases / 4);
  EXPECT_LT(not_converged, cases / 100 + 1);
  std::printf("%d cases: %d penetrating, %d not converged, mean EPA iterations %.2f\n", cases, penetrating,
              not_converged, static_cast<double>(epa_iterations) / std::max<int64_t>(epa_runs, 1));
}

// Polytopes inscribed in and circumscribing a cylinder or cone: the depth of a pair is monotone under
// inclusion, so the true depth lies between the inner and the outer polytope's.
template <class Shape>
void ExpectBetweenTessellations(const Shape& shape, std::mt19937_64& rng, int cases) {
  const auto inner = testing::TessellatedHull(shape, 48, false), outer = testing::TessellatedHull(shape, 48, true);
  int penetrating = 0;
  for (int i = 0; i < cases; ++i) {
    const auto other = testing::RandomHull(rng, 10, 0.15, 0.4);
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.2), Vec3::Constant(0.2));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.2), Vec3::Constant(0.2));
    const double lo = PolytopeDepth(*inner, X_WA, *other, X_WB);
    if (lo <= 0) continue;
    ++penetrating;
    const double hi = PolytopeDepth(*outer, X_WA, *other, X_WB);
    SCOPED_TRACE(::testing::Message() << "case " << i);
    const SignedDistanceResult r = Sd(shape, X_WA, *other, X_WB);
    ExpectValidAnswer(shape, X_WA, *other, X_WB, r);
    EXPECT_TRUE(r.converged);
    EXPECT_GE(-r.distance, lo - 1e-12);
    EXPECT_LE(-r.distance, hi + 1e-9);
    // The certified bracket agrees with the tessellations' bracket.
    EXPECT_LE(-r.upper_bound, hi + 1e-9);
    EXPECT_GE(-r.lower_bound, lo - 1e-12);
  }
  EXPECT_GT(penetrating, cases / 4);
}

TEST(SignedDistance, CylinderAndConeLieBetweenTheirTessellations) {
  std::mt19937_64 rng(108);
  ExpectBetweenTessellations(Cylinder{0.2, 0.25}, rng, Cases(40));
  ExpectBetweenTessellations(Cone{0.25, 0.2}, rng, Cases(40));
}

// ---- Degenerate and invalid input ----------------------------------------------------------------

TEST(SignedDistance, FlatInputGivesExactAnswersOrFlags) {
  const RigidTransform I;
  const Box box{Vec3(0.5, 0.5, 0.5)};
  // A triangle through a box: a full-dimensional Minkowski difference; EPA finds the way out.
  const Triangle t{Vec3(-1, -1, 0.1), Vec3(1, -1, 0.1), Vec3(0, 1.5, 0.1)};
  SignedDistanceResult r = Sd(t, I, box, I);
  ExpectValidAnswer(t, I, box, I, r);
  // The box leaves the plane z = 0.1 downwards by 0.5 + 0.1 - 0.2 = 0.4 (upwards would take 0.6).
  EXPECT_NEAR(r.distance, -0.4, 1e-12);
  EXPECT_NEAR(r.normal_W.z(), -1.0, 1e-9);
  // A rectangle (zero-extent box) through a box: the same.
  const Box rect{Vec3(2, 2, 0)};
  r = Sd(rect, At(Vec3(0, 0, -0.2)), box, I);
  ExpectValidAnswer(rect, At(Vec3(0, 0, -0.2)), box, I, r);
  EXPECT_NEAR(r.distance, -0.3, 1e-12);
  // Coplanar overlapping triangles and rectangles: no common interior; depth 0, the plane's normal.
  const Triangle t2{Vec3(0, 0, 0.1), Vec3(2, 0.5, 0.1), Vec3(0.5, 2, 0.1)};
  r = Sd(t, I, t2, I);
  EXPECT_EQ(r.method, SignedDistanceMethod::kFlat);
  EXPECT_TRUE(r.intersecting);
  EXPECT_NEAR(r.distance, 0.0, 1e-12);
  EXPECT_NEAR(std::abs(r.normal_W.z()), 1.0, 1e-12);
  ExpectValidAnswer(t, I, t2, I, r);
  r = Sd(rect, I, Box{Vec3(1, 0.5, 0)}, RigidTransform(Rot(0.3, Vec3::UnitZ()), Vec3(0.5, 0.2, 0)));
  EXPECT_EQ(r.method, SignedDistanceMethod::kFlat);
  EXPECT_NEAR(std::abs(r.normal_W.z()), 1.0, 1e-12);
  // Coplanar within GJK's contact tolerance: the normal points from A's plane towards B's.
  for (double dz : {3e-13, -3e-13}) {
    r = Sd(t, I, t2, At(Vec3(0, 0, dz)));
    EXPECT_EQ(r.method, SignedDistanceMethod::kFlat);
    EXPECT_TRUE(r.intersecting);
    EXPECT_NEAR(r.normal_W.z(), dz > 0 ? 1.0 : -1.0, 1e-12) << "offset " << dz;
    EXPECT_NEAR(r.distance, std::abs(dz), 1e-14);
  }
  // Crossing capsule axes: the margins alone; the normal is perpendicular to both axes.
  const RigidTransform X_WB(Rot(M_PI / 3, Vec3::UnitX()), Vec3(0, 0, 0.2));
  r = Sd(Capsule{0.1, 1.0}, I, Capsule{0.2, 1.0}, X_WB);
  EXPECT_EQ(r.method, SignedDistanceMethod::kFlat);
  EXPECT_NEAR(r.distance, -0.3, 1e-12);
  EXPECT_NEAR(r.normal_W.dot(Vec3::UnitZ()), 0.0, 1e-12);
  EXPECT_NEAR(r.normal_W.dot(X_WB.R.col(2)), 0.0, 1e-12);
  ExpectValidAnswer(Capsule{0.1, 1.0}, I, Capsule{0.2, 1.0}, X_WB, r);
  // Collinear overlapping capsules: a segment Minkowski difference; any perpendicular normal.
  r = Sd(Capsule{0.1, 1.0}, I, Capsule{0.2, 1.0}, At(Vec3(0, 0, 0.5)));
  EXPECT_NEAR(r.distance, -0.3, 1e-12);
  EXPECT_NEAR(r.normal_W.z(), 0.0, 1e-12);
  // Points: zero-radius spheres and zero-size boxes at one place.
  r = Sd(Sphere{Vec3::Zero(), 0.0}, I, Box{Vec3::Zero()}, I);
  EXPECT_TRUE(r.intersecting);
  EXPECT_EQ(r.distance, 0.0);
  EXPECT_TRUE(r.normal_W.allFinite());
  // A point inside a box: out through the nearest face.
  r = Sd(Sphere{Vec3::Zero(), 0.0}, At(Vec3(0.1, 0.4, 0)), box, I);
  EXPECT_NEAR(r.distance, -0.1, 1e-12);
  EXPECT_NEAR(r.normal_W.y(), -1.0, 1e-9);
}

TEST(SignedDistance, DegenerateRandomInputNeverGivesNaN) {
  std::mt19937_64 rng(109);
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<int> pick(0, 5);
  const auto scale_of = [&](int k) { return std::array{0.0, 1e-12, 1e-6, 1e-3, 1.0, 1e3}[k]; };
  for (int i = 0; i < Cases(3000); ++i) {
    const double s = scale_of(pick(rng)), offset = scale_of(pick(rng));
    // Boxes with some zero extents, triangles with repeated or collinear vertices, capsules and
    // cylinders with zero sizes, all at tiny to large scales and offsets.
    Box a{Vec3(s * std::abs(u(rng)), s * std::abs(u(rng)), s * std::abs(u(rng)))};
    for (int k = 0; k < 3; ++k) {
      if (rng() % 3 == 0) a.half_extents[k] = 0.0;
    }
    Triangle t{s * Vec3(u(rng), u(rng), u(rng)), s * Vec3(u(rng), u(rng), u(rng)), s * Vec3(u(rng), u(rng), u(rng))};
    if (i % 3 == 0) t.c = t.a;
    if (i % 3 == 1) t.c = 0.3 * t.a + 0.7 * t.b;
    const Capsule c{rng() % 2 ? 0.0 : s * std::abs(u(rng)), rng() % 2 ? 0.0 : s * std::abs(u(rng))};
    const Cylinder y{rng() % 2 ? 0.0 : s * std::abs(u(rng)), rng() % 2 ? 0.0 : s * std::abs(u(rng))};
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-s), Vec3::Constant(s));
    RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-s), Vec3::Constant(s));
    X_WB.p += offset * Vec3(u(rng), u(rng), u(rng)) * (i % 2);
    if (i % 5 == 0) X_WB = X_WA;
    SCOPED_TRACE(::testing::Message() << "case " << i << " scale " << s);
    const auto check = [&](const auto& x, const auto& z) {
      auto result = ComputeSignedDistance(x, X_WA, z, X_WB);
      ASSERT_TRUE(result.ok()) << result.error().message;
      const SignedDistanceResult& r = result.value();
      EXPECT_TRUE(std::isfinite(r.distance) && r.normal_W.allFinite() && r.p_WA.allFinite() && r.p_WB.allFinite());
      EXPECT_NEAR(r.normal_W.norm(), 1.0, 1e-12);
      EXPECT_LE(r.lower_bound, r.distance);
      EXPECT_LE(r.distance, r.upper_bound);
    };
    check(a, a);
    check(t, a);
    check(t, t);
    check(c, a);
    check(c, t);
    check(y, t);
    check(c, c);
  }
}

TEST(SignedDistance, InvalidInputIsAnError) {
  const Box box{Vec3(1, 1, 1)};
  RigidTransform bad;
  bad.p.x() = std::nan("");
  EXPECT_EQ(ComputeSignedDistance(box, bad, box, RigidTransform()).error().code, ErrorCode::kInvalidArgument);
  bad = RigidTransform();
  bad.R(0, 0) = 2.0;
  EXPECT_EQ(ComputeSignedDistance(box, RigidTransform(), box, bad).error().code, ErrorCode::kInvalidArgument);
  EXPECT_FALSE(ComputeSignedDistance(Sphere{Vec3::Zero(), -1.0}, RigidTransform(), box, RigidTransform()).ok());
  EXPECT_FALSE(ComputeSignedDistance(Box{Vec3(1, std::nan(""), 1)}, RigidTransform(), box, RigidTransform()).ok());
  EXPECT_FALSE(ComputeSignedDistance(Capsule{1.0, -0.1}, RigidTransform(), box, RigidTransform()).ok());
  EXPECT_FALSE(ComputeSignedDistance(Triangle{Vec3::Zero(), Vec3::Constant(INFINITY), Vec3::Zero()},
                                     RigidTransform(), box, RigidTransform())
                   .ok());
  SignedDistanceOptions options;
  options.max_iterations = 0;
  EXPECT_FALSE(ComputeSignedDistance(box, RigidTransform(), box, RigidTransform(), nullptr, options).ok());
  options = {};
  options.rel_tolerance = -1.0;
  const auto r = ComputeSignedDistance(box, RigidTransform(), box, RigidTransform(), nullptr, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("rel_tolerance"), std::string::npos) << r.error().message;
}

// ---- Caps, warm starts, work counters ------------------------------------------------------------

TEST(SignedDistance, IterationCapKeepsAValidBracket) {
  std::mt19937_64 rng(110);
  SignedDistanceOptions capped;
  capped.max_iterations = 2;
  int not_converged = 0;
  for (int i = 0; i < Cases(300); ++i) {
    const auto a = testing::RandomHull(rng, 40, 0.3, 0.4), b = testing::RandomHull(rng, 40, 0.3, 0.4);
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.2), Vec3::Constant(0.2));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.2), Vec3::Constant(0.2));
    const double depth = PolytopeDepth(*a, X_WA, *b, X_WB);
    if (depth <= 0) continue;
    SCOPED_TRACE(::testing::Message() << "case " << i);
    const SignedDistanceResult r = Sd(*a, X_WA, *b, X_WB, capped);
    EXPECT_LE(r.epa_iterations, 2);
    ExpectValidAnswer(*a, X_WA, *b, X_WB, r);
    EXPECT_LE(r.lower_bound, -depth + 1e-12);
    EXPECT_GE(r.upper_bound, -depth - 1e-12);
    if (!r.converged) ++not_converged;
  }
  EXPECT_GT(not_converged, Cases(300) / 10);
}

TEST(SignedDistance, WarmStartGivesTheSameAnswers) {
  std::mt19937_64 rng(111);
  const auto a = testing::RandomHull(rng, 100, 0.3, 0.4), b = testing::RandomHull(rng, 100, 0.3, 0.4);
  GjkCache cache;
  int64_t warm_gjk = 0, cold_gjk = 0;
  for (int step = 0; step < 300; ++step) {
    // B approaches A, passes through it and leaves.
    const RigidTransform X_WB(Rot(0.01 * step, Vec3(0.2, 1, 0.3)), Vec3(1.5 - 0.01 * step, 0.05, 0.0));
    const SignedDistanceResult cold = Sd(*a, RigidTransform(), *b, X_WB);
    const auto warm = ComputeSignedDistance(*a, RigidTransform(), *b, X_WB, &cache);
    ASSERT_TRUE(warm.ok());
    EXPECT_NEAR(warm.value().distance, cold.distance, 1e-9) << "step " << step;
    EXPECT_EQ(warm.value().intersecting, cold.intersecting) << "step " << step;
    warm_gjk += warm.value().gjk_iterations;
    cold_gjk += cold.gjk_iterations;
  }
  EXPECT_LT(warm_gjk, cold_gjk);
}

TEST(SignedDistance, WorkCountersAddUp) {
  const Box box{Vec3(1, 1, 1)};
  const SignedDistanceResult r = Sd(box, RigidTransform(), box, RigidTransform(Rot(0.4, Vec3(1, 2, 3)), Vec3(1.2, 0.3, 0)));
  EXPECT_EQ(r.method, SignedDistanceMethod::kEpa);
  EXPECT_GT(r.epa_iterations, 0);
  EXPECT_GE(r.epa_faces, 4);
  EXPECT_GE(r.support_calls, r.gjk_iterations + r.epa_iterations);
  const SignedDistanceResult s = Sd(box, RigidTransform(), box, At(Vec3(3, 0, 0)));
  EXPECT_EQ(s.method, SignedDistanceMethod::kGjk);
  EXPECT_EQ(s.epa_iterations, 0);
  EXPECT_EQ(s.epa_faces, 0);
}

// ---- Inputs that broke other signed-distance implementations -------------------------------------
// FCL #493 and #495 (EPA called on boxes in kissing contact that GJK and EPA classify differently),
// libccd #25 (stacked cubes: NaN direction, wrong depth), Drake #18704 (a small sphere against a
// convex hull; boxes stacked like a wall), and the classes behind them. Every answer is a number, its
// bracket holds the closed form, and the normal is the closed form's.

Mat3 Rows(double a, double b, double c, double d, double e, double f, double g, double h, double i) {
  Mat3 R;
  R << a, b, c, d, e, f, g, h, i;
  return R;
}

void ExpectFinite(const SignedDistanceResult& r) {
  EXPECT_TRUE(std::isfinite(r.distance) && std::isfinite(r.lower_bound) && std::isfinite(r.upper_bound));
  EXPECT_TRUE(r.normal_W.allFinite() && r.p_WA.allFinite() && r.p_WB.allFinite());
  EXPECT_NEAR(r.normal_W.norm(), 1.0, 1e-12);
}

// Two boxes sharing the rotation R: the signed distance by separating axes and the axis (a column of
// R, pointing from box 1 to box 2) that realises it.
void ExpectSameRotationBoxes(const Mat3& R, const Vec3& p1, double h1, const Vec3& p2, double h2,
                             const std::string& what) {
  const Vec3 d = R.transpose() * (p2 - p1);
  const Vec3 gap = d.cwiseAbs() - Vec3::Constant(h1 + h2);
  int axis;
  gap.maxCoeff(&axis);
  const double truth = gap.maxCoeff() > 0.0 ? gap.cwiseMax(0.0).norm() : gap.maxCoeff();
  const RigidTransform X1(R, p1), X2(R, p2);
  const SignedDistanceResult r = Sd(Box{Vec3::Constant(h1)}, X1, Box{Vec3::Constant(h2)}, X2);
  SCOPED_TRACE(what + ": closed form " + std::to_string(truth));
  ExpectFinite(r);
  EXPECT_NEAR(r.distance, truth, 1e-12);
  EXPECT_LE(r.lower_bound, truth + 1e-12);
  EXPECT_GE(r.upper_bound, truth - 1e-12);
  if (truth < 1e-9 && (gap.array() > -1e-9).count() == 1) {
    // One axis decides (face contact): the normal is that axis.
    EXPECT_NEAR(r.normal_W.dot(R.col(axis) * (d[axis] > 0 ? 1.0 : -1.0)), 1.0, 1e-9);
  }
  if (truth < -1e-12) {
    EXPECT_TRUE(r.intersecting);
  }
  if (truth > 1e-12) {
    EXPECT_FALSE(r.intersecting);
  }
}

TEST(SignedDistance, FclKissingBoxesGiveOneAnswerAcrossZero) {
  const Mat3 R493 = Rows(0.96193976625564348026, 0.15401279915737359216, 0.22572537250328919556,
                         -0.19134171618254486313, 0.96936494951283913579, 0.15401279915737359216,
                         -0.19509032201612822033, -0.19134171618254486313, 0.96193976625564348026);
  const Vec3 p1(2.0770063995786869349, 0.48468247475641951239, 1.1543291419087275962), p2(2, 0, 1.25);
  const Mat3 R495 = Rows(0.94096063217417758029, 0.29296840037289501035, 0.16959541586174811667,
                         -0.23569836841299879326, 0.92661523595848427348, -0.29296840037289506586,
                         -0.2429801799032638987, 0.23569836841299884878, 0.94096063217417758029);
  const Vec3 q1(0.073242100093223821977, 0.2316538089896212349, 1.3089245921032497399), q2(0, 0, 1.25);
  ExpectSameRotationBoxes(R493, p1, 0.25, p2, 0.25, "fcl 493");
  ExpectSameRotationBoxes(R495, q1, 0.125, q2, 0.125, "fcl 495");
  // The same pairs moved along their contact normal from 1e-6 into each other to 1e-6 apart: the
  // signed distance follows the shift continuously through zero.
  for (double shift : {-1e-6, -1e-9, -1e-12, 0.0, 1e-12, 1e-9, 1e-6}) {
    for (const auto& [R, a, b, h] : {std::tuple{R493, p1, p2, 0.25}, std::tuple{R495, q1, q2, 0.125}}) {
      const Vec3 d = R.transpose() * (b - a);
      int axis;
      d.cwiseAbs().maxCoeff(&axis);
      const Vec3 n = R.col(axis) * (d[axis] > 0 ? 1.0 : -1.0);
      ExpectSameRotationBoxes(R, a, h, b + shift * n, h, "shift " + std::to_string(shift));
    }
  }
}

TEST(SignedDistance, LibccdStackedCubesAndDrakeWallOfBoxes) {
  // libccd #25: cubes of side 2 at z = 0 and z = 1.9 overlap by 0.1 along z.
  const SignedDistanceResult r = Sd(Box{Vec3::Ones()}, At(Vec3::Zero()), Box{Vec3::Ones()}, At(Vec3(0, 0, 1.9)));
  ExpectFinite(r);
  EXPECT_TRUE(r.intersecting);
  EXPECT_NEAR(r.distance, -0.1, 1e-12);
  EXPECT_NEAR(r.normal_W.z(), 1.0, 1e-12);
  EXPECT_TRUE(r.converged);
  // Drake #18704 (second report): 0.3 m cubes stacked like a wall under a slight rotation, touching,
  // a picometre apart or into each other, and a micrometre either way.
  const Mat3 R = Eigen::Quaterniond(Rows(0.99983216350830295127, 0.017302258779861117571, 0.0060230104948389619895,
                                         -0.017255387167394182352, 0.99982108658241231058, -0.0077489637286347464937,
                                         -0.0061560074731557591632, 0.007643733791746519686, 0.9999518372930324972))
                     .normalized()
                     .toRotationMatrix();
  const Vec3 p(0.85626818476862631702, -0.77764714060125894601, 0.070907056388150049853);
  for (int axis = 0; axis < 3; ++axis) {
    for (double gap : {-1e-6, -1e-12, 0.0, 1e-12, 1e-6}) {
      ExpectSameRotationBoxes(R, p, 0.15, p + (0.3 + gap) * R.col(axis) + 0.05 * R.col((axis + 1) % 3), 0.15,
                              "wall axis " + std::to_string(axis) + " gap " + std::to_string(gap));
    }
  }
}

TEST(SignedDistance, DrakeSmallSphereAgainstASixteenVertexHull) {
  // Drake #18704: a 12 mm sphere against a 16-vertex convex hull, here an octagonal prism, with the
  // report's sphere pose as the common frame. The sphere sits on a side face, on the top face, on a
  // vertical edge, each touching, a nanometre apart and a nanometre in.
  const double rho = 0.05, h = 0.03, r = 0.012;
  std::vector<Vec3> points;
  for (int k = 0; k < 8; ++k) {
    const double a = (k + 0.5) * M_PI / 4;
    for (double z : {-h, h}) points.emplace_back(rho * std::cos(a), rho * std::sin(a), z);
  }
  const auto prism = ConvexPolytope::Build(points).value();
  ASSERT_EQ(prism->num_vertices(), 16);
  const Mat3 R = Eigen::Quaterniond(Rows(-0.40370167831914760548, -0.019479333109567995019, -0.9146832842595900015,
                                         -0.4289595844695910376, 0.88710005183204809764, 0.17043231187557600359,
                                         0.80809568110093199511, 0.46116597188125679763, -0.36647962639802561524))
                     .normalized()
                     .toRotationMatrix();
  const RigidTransform X_WF(R, Vec3(0.74747104350671045303, 0.025509175267072643767, 0.045779118115638992026));
  const double apothem = rho * std::cos(M_PI / 8);
  // (contact point on the prism, outward unit direction of the approach) in the prism's frame F.
  const Vec3 edge = Vec3(rho * std::cos(M_PI / 8), rho * std::sin(M_PI / 8), 0.0);
  const std::vector<std::pair<Vec3, Vec3>> contacts = {
      {Vec3(apothem, 0.0, 0.01), Vec3::UnitX()}, {Vec3(0.01, -0.01, h), Vec3::UnitZ()}, {edge, edge.normalized()}};
  for (const auto& [on, out] : contacts) {
    for (double gap : {0.0, 1e-9, -1e-9}) {
      const Vec3 centre_F = on + (r + gap) * out;
      const SignedDistanceResult s = Sd(Sphere{Vec3::Zero(), r}, X_WF * At(centre_F), *prism, X_WF);
      SCOPED_TRACE(::testing::Message() << "contact at " << on.transpose() << " gap " << gap);
      ExpectFinite(s);
      EXPECT_NEAR(s.distance, gap, 1e-12);
      EXPECT_LE(s.lower_bound, gap + 1e-12);
      EXPECT_GE(s.upper_bound, gap - 1e-12);
      if (gap < 0) {
        EXPECT_TRUE(s.intersecting);
      }
      if (gap > 0) {
        EXPECT_FALSE(s.intersecting);
      }
      if (gap != 0.0 && out != edge.normalized()) {  // on an edge the normal cone is a whole wedge
        EXPECT_NEAR(s.normal_W.dot(-(R * out)), 1.0, 1e-6);
      }
    }
  }
}

TEST(SignedDistance, NearDegenerateClassesAgainstClosedForms) {
  // A sphere exactly touching a face: distance 0, normal along the face normal.
  const Box box{Vec3::Ones()};
  SignedDistanceResult r = Sd(box, At(Vec3::Zero()), Sphere{Vec3::Zero(), 0.5}, At(Vec3(0.3, -0.2, 1.5)));
  ExpectFinite(r);
  EXPECT_TRUE(r.intersecting);
  EXPECT_NEAR(r.distance, 0.0, 1e-15);
  EXPECT_NEAR(r.normal_W.z(), 1.0, 1e-12);
  // Capsules nearly parallel (1e-9 rad apart), overlapping by 0.05 and touching.
  const Capsule c{0.1, 1.0};
  const Mat3 tilt = Eigen::AngleAxisd(1e-9, Vec3::UnitX()).toRotationMatrix();
  for (const auto& [offset, truth] : {std::pair{0.15, -0.05}, std::pair{0.2, 0.0}, std::pair{0.3, 0.1}}) {
    r = Sd(c, At(Vec3::Zero()), c, RigidTransform(tilt, Vec3(offset, 0, 0.25)));
    SCOPED_TRACE(::testing::Message() << "offset " << offset);
    ExpectFinite(r);
    EXPECT_NEAR(r.distance, truth, 1e-12);
    EXPECT_NEAR(r.normal_W.x(), 1.0, 1e-9);
  }
  // Huge against tiny: a 10 um cube 1 um into, on, and 1 um above a 10 km slab.
  const Box slab{Vec3(5000, 5000, 1)};
  for (double gap : {-1e-6, 0.0, 1e-6}) {
    r = Sd(slab, At(Vec3::Zero()), Box{Vec3::Constant(5e-6)}, At(Vec3(-2500, 4000, 1 + 5e-6 + gap)));
    SCOPED_TRACE(::testing::Message() << "gap " << gap);
    ExpectFinite(r);
    EXPECT_NEAR(r.distance, gap, 1e-11);
    EXPECT_NEAR(r.normal_W.z(), 1.0, 1e-9);
  }
  // Coplanar faces: boxes side by side with flush tops, overlapping by 1e-9 along x.
  r = Sd(box, At(Vec3::Zero()), Box{Vec3(0.5, 1, 1)}, At(Vec3(1.5 - 1e-9, 0.5, 0)));
  ExpectFinite(r);
  EXPECT_NEAR(r.distance, -1e-9, 1e-15);
  EXPECT_NEAR(r.normal_W.x(), 1.0, 1e-9);
}

}  // namespace
}  // namespace proximity::core
