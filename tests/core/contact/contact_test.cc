#include "contact/contact.h"
// Also checks helpers of the contact module (src/contact/contact_impl.h).
#include "contact/contact_impl.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/test_util.h"

namespace proximity::core {
namespace {

using testing::Cases;
using Vec2 = Eigen::Vector2d;

Mat3 Rx(double a) { return Eigen::AngleAxisd(a, Vec3::UnitX()).toRotationMatrix(); }
Mat3 Ry(double a) { return Eigen::AngleAxisd(a, Vec3::UnitY()).toRotationMatrix(); }
Mat3 Rz(double a) { return Eigen::AngleAxisd(a, Vec3::UnitZ()).toRotationMatrix(); }

RigidTransform Pose(const Mat3& R, const Vec3& p) { return RigidTransform(R, p); }

// Distance from a point to a posed shape: GJK against a zero-radius sphere at the point (0 inside).
template <class S>
double DistanceToShape(const Vec3& p_W, const S& s, const RigidTransform& X_WS) {
  return GjkDistance(Sphere{p_W, 0.0}, RigidTransform(), s, X_WS).distance;
}
// On the curved sides of cylinders and cones GJK's distance stalls near a relative gap of 1e-9 and
// more for points on the surface: closed forms (how far outside the solid the point lies, 0 inside;
// exact on the caps and sides, a lower bound on the distance at the rims).
double DistanceToShape(const Vec3& p_W, const Cylinder& s, const RigidTransform& X_WS) {
  const Vec3 p = X_WS.inverse() * p_W;
  const double radial = std::max(0.0, p.head<2>().norm() - s.radius), axial = std::max(0.0, std::abs(p.z()) - s.half_length);
  return std::hypot(radial, axial);
}
double DistanceToShape(const Vec3& p_W, const Cone& s, const RigidTransform& X_WS) {
  const Vec3 p = X_WS.inverse() * p_W;
  const double h = s.half_height, r = s.radius;
  const double below = std::max(0.0, -h - p.z()), above = std::max(0.0, p.z() - h);
  // Outside the side: distance from the slanted line through the apex in p's azimuthal plane.
  const double rho = p.head<2>().norm(), slant = std::hypot(2.0 * h, r);
  const double side = slant > 0.0 ? std::max(0.0, (2.0 * h * rho + r * (p.z() - h)) / slant) : 0.0;
  return std::max({below, above, side});
}

void ExpectFinite(const ContactManifold& m) {
  EXPECT_TRUE(m.normal_W.allFinite());
  EXPECT_NEAR(m.normal_W.norm(), 1.0, 1e-12);
  EXPECT_TRUE(std::isfinite(m.signed_distance));
  for (const ContactPoint& c : m.points) {
    EXPECT_TRUE(c.p_W.allFinite() && c.p_WA.allFinite() && c.p_WB.allFinite());
    EXPECT_TRUE(std::isfinite(c.depth));
  }
}

// The points' positions in frame F (for a region set up in a local frame and posed by X_WF).
std::vector<Vec3> InFrame(const ContactManifold& m, const RigidTransform& X_WF) {
  std::vector<Vec3> out;
  const RigidTransform X_FW = X_WF.inverse();
  for (const ContactPoint& c : m.points) out.push_back(X_FW * c.p_W);
  return out;
}

// Every expected point is matched by exactly one reported point within tol (x and y only), and the
// counts agree.
::testing::AssertionResult SameXY(const std::vector<Vec3>& got, const std::vector<Vec2>& want, double tol) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "got " << got.size() << " points, want " << want.size();
  }
  std::vector<bool> used(got.size(), false);
  for (const Vec2& w : want) {
    bool found = false;
    for (size_t i = 0; i < got.size() && !found; ++i) {
      if (!used[i] && (got[i].head<2>() - w).norm() <= tol) used[i] = found = true;
    }
    if (!found) return ::testing::AssertionFailure() << "no point near (" << w.x() << ", " << w.y() << ")";
  }
  return ::testing::AssertionSuccess();
}

// ---- Oracles for 2D convex polygons (independent of the clipping code) --------------------------------

double Cross2(const Vec2& a, const Vec2& b) { return a.x() * b.y() - a.y() * b.x(); }

// Corners of the rectangle {|x - c| <= h} rotated by angle about its centre, counter-clockwise.
std::vector<Vec2> Rectangle(const Vec2& c, const Vec2& h, double angle) {
  const Eigen::Rotation2Dd R(angle);
  return {c + R * Vec2(-h.x(), -h.y()), c + R * Vec2(h.x(), -h.y()), c + R * Vec2(h.x(), h.y()),
          c + R * Vec2(-h.x(), h.y())};
}

bool InsideConvex(const std::vector<Vec2>& poly, const Vec2& x, double tol) {
  for (size_t i = 0; i < poly.size(); ++i) {
    const Vec2 &a = poly[i], &b = poly[(i + 1) % poly.size()];
    if (Cross2(b - a, x - a) / (b - a).norm() < -tol) return false;
  }
  return true;
}

// The vertices of the intersection of two convex polygons by brute force: corners of each inside the
// other, and every crossing of an edge of one with an edge of the other.
std::vector<Vec2> BruteIntersectionVertices(const std::vector<Vec2>& p, const std::vector<Vec2>& q) {
  std::vector<Vec2> out;
  const auto add = [&](const Vec2& x) {
    for (const Vec2& y : out)
      if ((x - y).norm() < 1e-9) return;
    out.push_back(x);
  };
  for (const Vec2& x : p)
    if (InsideConvex(q, x, 1e-12)) add(x);
  for (const Vec2& x : q)
    if (InsideConvex(p, x, 1e-12)) add(x);
  for (size_t i = 0; i < p.size(); ++i) {
    for (size_t j = 0; j < q.size(); ++j) {
      const Vec2 &a = p[i], &b = p[(i + 1) % p.size()], &c = q[j], &d = q[(j + 1) % q.size()];
      const double den = Cross2(b - a, d - c);
      if (std::abs(den) < 1e-15) continue;
      const double t = Cross2(c - a, d - c) / den, u = Cross2(c - a, b - a) / den;
      if (t >= 0 && t <= 1 && u >= 0 && u <= 1) add(a + t * (b - a));
    }
  }
  return out;
}

// Area of the intersection by counting the centres of a dense grid's cells inside both.
double GridArea(const std::vector<Vec2>& p, const std::vector<Vec2>& q, int n) {
  Vec2 lo = p[0], hi = p[0];
  for (const Vec2& x : p) {
    lo = lo.cwiseMin(x);
    hi = hi.cwiseMax(x);
  }
  const Vec2 cell = (hi - lo) / n;
  int inside = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const Vec2 x = lo + Vec2((i + 0.5) * cell.x(), (j + 0.5) * cell.y());
      if (InsideConvex(p, x, 0.0) && InsideConvex(q, x, 0.0)) ++inside;
    }
  }
  return inside * cell.x() * cell.y();
}

// Shoelace area of points given in angular order around their centroid.
double PolygonArea(std::vector<Vec2> pts) {
  if (pts.size() < 3) return 0.0;
  Vec2 c = Vec2::Zero();
  for (const Vec2& x : pts) c += x;
  c /= static_cast<double>(pts.size());
  std::sort(pts.begin(), pts.end(), [&](const Vec2& a, const Vec2& b) {
    return std::atan2(a.y() - c.y(), a.x() - c.x()) < std::atan2(b.y() - c.y(), b.x() - c.x());
  });
  double area = 0.0;
  for (size_t i = 0; i < pts.size(); ++i) area += Cross2(pts[i], pts[(i + 1) % pts.size()]);
  return 0.5 * std::abs(area);
}

// ---- Box resting on a box ---------------------------------------------------------------------------

// The bottom box A (half extents ha) has its top face at z = ha.z of the local frame F; the top box B
// (half extents hb) is rotated by yaw about z, centred at (c, ha.z + hb.z - penetration). Both are posed
// in W by X_WF.
struct Stack {
  Box a, b;
  RigidTransform X_WA, X_WB;
};

Stack MakeStack(const RigidTransform& X_WF, const Vec3& ha, const Vec3& hb, const Vec2& c, double yaw,
                double penetration) {
  Stack s{Box{ha}, Box{hb}, {}, {}};
  s.X_WA = X_WF;
  s.X_WB = X_WF * Pose(Rz(yaw), Vec3(c.x(), c.y(), ha.z() + hb.z() - penetration));
  return s;
}

TEST(ContactRegion, BoxRestingFaceOnBoxGivesTheTopFaceCorners) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < Cases(40); ++i) {
    const RigidTransform X_WF = i == 0 ? RigidTransform() : testing::RandomPose(rng, Vec3::Constant(-2), Vec3::Constant(2));
    for (double penetration : {0.0, 1e-9}) {
      SCOPED_TRACE(::testing::Message() << "case " << i << " penetration " << penetration);
      const Stack s = MakeStack(X_WF, Vec3(1.0, 0.8, 0.5), Vec3(0.3, 0.2, 0.1), Vec2(0.1, -0.2), 0.0, penetration);
      const Vec3 n_W = X_WF.R * Vec3::UnitZ();
      const std::vector<Vec2> corners{{-0.2, -0.4}, {0.4, -0.4}, {0.4, 0.0}, {-0.2, 0.0}};
      for (int method = 0; method < 2; ++method) {
        auto r = method == 0 ? ComputeContacts(s.a, s.X_WA, s.b, s.X_WB)
                             : ComputeContactRegion(s.a, s.X_WA, s.b, s.X_WB, n_W, -penetration);
        ASSERT_TRUE(r.ok()) << r.error().message;
        const ContactManifold& m = r.value();
        ExpectFinite(m);
        if (method == 0) {
          EXPECT_EQ(m.source, ContactNormalSource::kSat);
          EXPECT_NEAR(m.signed_distance, -penetration, 1e-9);
        }
        EXPECT_NEAR(m.normal_W.dot(n_W), 1.0, 1e-12);
        EXPECT_FALSE(m.disjoint_projections);
        const std::vector<Vec3> p_F = InFrame(m, X_WF);
        EXPECT_TRUE(SameXY(p_F, corners, 1e-9));
        for (size_t k = 0; k < m.points.size(); ++k) {
          const ContactPoint& c = m.points[k];
          EXPECT_NEAR(c.depth, penetration, 1e-9);
          EXPECT_NEAR(p_F[k].z(), 0.5, 1e-9) << "on the mid-plane";
          EXPECT_NEAR((c.p_WA - c.p_WB).dot(n_W), c.depth, 1e-12);
          // A corner of B's bottom face inside A's top face: B's vertex, nothing of A.
          EXPECT_EQ(c.id.a, (std::array<int32_t, 2>{-1, -1}));
          EXPECT_GE(c.id.b[0], 0);
          EXPECT_LT(c.id.b[0], 4) << "a corner of B with z < 0";
          EXPECT_EQ(c.id.b[1], -1);
        }
      }
    }
  }
}

TEST(ContactRegion, OverhangingBoxGivesTheRectangleIntersection) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> offset(-1.2, 1.2), half(0.05, 0.6);
  int cases = 0;
  for (int i = 0; i < Cases(200); ++i) {
    const Vec3 ha(1.0, 0.8, 0.5), hb(half(rng), half(rng), 0.1);
    const Vec2 c(offset(rng), offset(rng));
    // Interval intersection in x and y: the oracle.
    const double x0 = std::max(-ha.x(), c.x() - hb.x()), x1 = std::min(ha.x(), c.x() + hb.x());
    const double y0 = std::max(-ha.y(), c.y() - hb.y()), y1 = std::min(ha.y(), c.y() + hb.y());
    if (x1 - x0 < 1e-3 || y1 - y0 < 1e-3) continue;  // No overlap of the faces: not resting.
    ++cases;
    const RigidTransform X_WF = testing::RandomPose(rng, Vec3::Constant(-2), Vec3::Constant(2));
    const Stack s = MakeStack(X_WF, ha, hb, c, 0.0, 1e-9);
    auto r = ComputeContacts(s.a, s.X_WA, s.b, s.X_WB);
    ASSERT_TRUE(r.ok());
    SCOPED_TRACE(::testing::Message() << "case " << i);
    ExpectFinite(r.value());
    EXPECT_NEAR(r.value().normal_W.dot(X_WF.R * Vec3::UnitZ()), 1.0, 1e-12);
    EXPECT_TRUE(SameXY(InFrame(r.value(), X_WF), {{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}}, 1e-9));
    for (const ContactPoint& p : r.value().points) EXPECT_NEAR(p.depth, 1e-9, 1e-9);
  }
  EXPECT_GT(cases, Cases(200) / 4);
}

TEST(ContactRegion, YawedBoxGivesTheOctagonIntersection) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> yaw(-M_PI, M_PI), offset(-0.3, 0.3);
  for (int i = 0; i < Cases(60); ++i) {
    // Case 0: a square turned by 45 degrees on a slightly larger square, centred: a regular octagon.
    const bool octagon = i == 0;
    const Vec3 ha = octagon ? Vec3(0.35, 0.35, 0.5) : Vec3(0.5, 0.4, 0.5);
    const Vec3 hb = octagon ? Vec3(0.3, 0.3, 0.1) : Vec3(0.35, 0.25, 0.1);
    const double angle = octagon ? M_PI / 4 : yaw(rng);
    const Vec2 c = octagon ? Vec2::Zero() : Vec2(offset(rng), offset(rng));
    const RigidTransform X_WF = testing::RandomPose(rng, Vec3::Constant(-2), Vec3::Constant(2));
    const Stack s = MakeStack(X_WF, ha, hb, c, angle, 1e-9);
    auto r = ComputeContacts(s.a, s.X_WA, s.b, s.X_WB);
    ASSERT_TRUE(r.ok());
    SCOPED_TRACE(::testing::Message() << "case " << i);
    const ContactManifold& m = r.value();
    ExpectFinite(m);
    const std::vector<Vec2> pa = Rectangle(Vec2::Zero(), ha.head<2>(), 0.0);
    const std::vector<Vec2> pb = Rectangle(c, hb.head<2>(), angle);
    const std::vector<Vec2> want = BruteIntersectionVertices(pa, pb);
    const std::vector<Vec3> got = InFrame(m, X_WF);
    EXPECT_TRUE(SameXY(got, want, 1e-9));
    std::vector<Vec2> got2;
    for (const Vec3& p : got) got2.push_back(p.head<2>());
    const double grid = GridArea(pa, pb, 400);
    EXPECT_NEAR(PolygonArea(got2), grid, 5e-3) << "area against a dense grid";
    if (octagon) {
      ASSERT_EQ(m.points.size(), 8u);
      for (const ContactPoint& p : m.points) {
        EXPECT_NE(p.id.a[1], -1) << "edge of A";
        EXPECT_NE(p.id.b[1], -1) << "crossed by an edge of B";
      }
    }
  }
}

// ---- Persistent ids ------------------------------------------------------------------------------------

// The top box, posed in F by yaw, tilt about x and centre, lowered until its lowest corner is
// `penetration` below A's top face.
RigidTransform Rest(const Vec3& ha, const Box& b, double yaw, double tilt, const Vec2& c, double penetration) {
  const Mat3 R = Rz(yaw) * Rx(tilt);
  double lowest = 0.0;
  for (int k = 0; k < 8; ++k) {
    const Vec3 corner(k & 1 ? 1.0 : -1.0, k & 2 ? 1.0 : -1.0, k & 4 ? 1.0 : -1.0);
    lowest = std::min(lowest, (R * corner.cwiseProduct(b.half_extents)).z());
  }
  return Pose(R, Vec3(c.x(), c.y(), ha.z() - lowest - penetration));
}

TEST(ContactRegion, IdsPersistUnderSmallMotionsAndChangeUnderLargeOnes) {
  std::mt19937_64 rng(4);
  std::uniform_int_distribution<int> pick(0, 3);
  const Vec3 ha(1.0, 0.8, 0.5);
  const Box a{ha}, b{Vec3(0.3, 0.2, 0.1)};
  for (int trial = 0; trial < Cases(20); ++trial) {
    const RigidTransform X_WF = testing::RandomPose(rng, Vec3::Constant(-2), Vec3::Constant(2));
    // Overhanging a corner of A: one corner of each inside the other and two edge crossings.
    double yaw = 0.1, tilt = 0.0;
    Vec2 c(0.9, 0.7);
    const auto contacts = [&] {
      auto r = ComputeContacts(a, X_WF, b, X_WF * Rest(ha, b, yaw, tilt, c, 1e-6));
      EXPECT_TRUE(r.ok());
      return r.value();
    };
    const ContactManifold first = contacts();
    ASSERT_EQ(first.points.size(), 4u);
    std::set<uint64_t> kinds;
    for (const ContactPoint& p : first.points) kinds.insert(static_cast<uint64_t>((p.id.a[0] >= 0) + 2 * (p.id.a[1] >= 0) + 4 * (p.id.b[0] >= 0) + 8 * (p.id.b[1] >= 0)));
    EXPECT_EQ(kinds.size(), 3u) << "a vertex of A, a vertex of B, and edge crossings";
    ContactManifold previous = first;
    for (int step = 0; step < 30; ++step) {
      const int kind = pick(rng);
      const double sign = (rng() & 1) ? 1.0 : -1.0;
      if (kind == 0) c.x() += sign * 1e-4;
      if (kind == 1) c.y() += sign * 1e-4;
      if (kind == 2) yaw += sign * 1e-3;
      if (kind == 3) tilt = std::clamp(tilt + sign * 1e-3, -4e-3, 4e-3);  // Within the angle tolerance.
      const ContactManifold now = contacts();
      SCOPED_TRACE(::testing::Message() << "trial " << trial << " step " << step);
      ASSERT_EQ(now.points.size(), previous.points.size());
      for (const ContactPoint& p : now.points) {
        const auto same = std::find_if(previous.points.begin(), previous.points.end(),
                                       [&](const ContactPoint& q) { return q.id == p.id; });
        ASSERT_NE(same, previous.points.end()) << "id kept";
        EXPECT_LT((same->p_W - p.p_W).norm(), 3e-3) << "the same contact moved a little";
      }
      previous = now;
    }
    // A large motion: centred on A and turned, B's four corners are the contacts, with new ids.
    c = Vec2(0.0, 0.0);
    yaw = 0.5;
    tilt = 0.0;
    const ContactManifold moved = contacts();
    ASSERT_EQ(moved.points.size(), 4u);
    int kept = 0;
    for (const ContactPoint& p : moved.points)
      for (const ContactPoint& q : first.points) kept += p.id == q.id;
    EXPECT_LE(kept, 1) << "at most the one corner of B that was already inside";
  }
}

// ---- Edges, vertices and curved shapes on a box ------------------------------------------------------------

// A box A with its top face at z = 0.5 of frame F, posed by X_WF, and a shape B resting on it.
template <class S>
ContactManifold OnBox(const S& b, const RigidTransform& X_FB, const RigidTransform& X_WF, bool given_normal,
                      const ContactOptions& options = {}) {
  const Box a{Vec3(1.0, 1.0, 0.5)};
  auto r = given_normal ? ComputeContactRegion(a, X_WF, b, X_WF * X_FB, X_WF.R * Vec3::UnitZ(), -1e-9, options)
                        : ComputeContacts(a, X_WF, b, X_WF * X_FB, options);
  EXPECT_TRUE(r.ok()) << r.error().message;
  ExpectFinite(r.value());
  EXPECT_NEAR(r.value().normal_W.dot(X_WF.R * Vec3::UnitZ()), 1.0, 1e-9);
  return r.value();
}

TEST(ContactRegion, BoxOnItsEdgeGivesTwoPointsAndOnItsVertexOne) {
  std::mt19937_64 rng(5);
  const Box b{Vec3(0.2, 0.2, 0.2)};
  for (int i = 0; i < Cases(20); ++i) {
    const RigidTransform X_WF = testing::RandomPose(rng, Vec3::Constant(-2), Vec3::Constant(2));
    for (bool given : {false, true}) {
      // Tipped 45 degrees about x: the lowest edge runs along x at depth 0.2 sqrt(2) below the centre.
      const RigidTransform edge = Pose(Rx(M_PI / 4), Vec3(0.1, 0.3, 0.5 + 0.2 * std::sqrt(2.0) - 1e-9));
      const ContactManifold m = OnBox(b, edge, X_WF, given);
      EXPECT_TRUE(SameXY(InFrame(m, X_WF), {{-0.1, 0.3}, {0.3, 0.3}}, 1e-9));
      for (const ContactPoint& p : m.points) {
        EXPECT_NEAR(p.depth, 1e-9, 1e-9);
        EXPECT_GE(p.id.b[0], 0);
        EXPECT_EQ(p.id.a[0], -1);
      }
      // A body diagonal vertical: corner 0 (-x, -y, -z) lowest, sqrt(3) 0.2 below the centre.
      const Mat3 R = Eigen::Quaterniond::FromTwoVectors(Vec3(-1, -1, -1).normalized(), -Vec3::UnitZ()).toRotationMatrix();
      const RigidTransform vertex = Pose(R, Vec3(-0.2, 0.1, 0.5 + 0.2 * std::sqrt(3.0) - 1e-9));
      const ContactManifold v = OnBox(b, vertex, X_WF, given);
      ASSERT_EQ(v.points.size(), 1u);
      EXPECT_TRUE(SameXY(InFrame(v, X_WF), {{-0.2, 0.1}}, 1e-9));
      EXPECT_EQ(v.points[0].id.b, (std::array<int32_t, 2>{0, -1}));
      EXPECT_NEAR(v.points[0].depth, 1e-9, 1e-9);
    }
  }
}

TEST(ContactRegion, CurvedShapesOnABox) {
  std::mt19937_64 rng(6);
  for (int i = 0; i < Cases(20); ++i) {
    const RigidTransform X_WF = testing::RandomPose(rng, Vec3::Constant(-2), Vec3::Constant(2));
    for (bool given : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "case " << i << (given ? " given normal" : " found normal"));
      // A capsule lying along x: its two ends.
      const Capsule capsule{0.1, 0.3};
      const ContactManifold c = OnBox(capsule, Pose(Ry(M_PI / 2), Vec3(0.2, -0.1, 0.6 - 1e-9)), X_WF, given);
      EXPECT_TRUE(SameXY(InFrame(c, X_WF), {{-0.1, -0.1}, {0.5, -0.1}}, 1e-9));
      if (!given) {
        EXPECT_EQ(c.source, ContactNormalSource::kCoreGjk);
      }
      for (const ContactPoint& p : c.points) EXPECT_NEAR(p.depth, 1e-9, 1e-9);
      // A sphere: the point below its centre.
      const ContactManifold s = OnBox(Sphere{Vec3(0.0, 0.0, 0.0), 0.25}, Pose(Mat3::Identity(), Vec3(0.3, 0.4, 0.75 - 1e-9)), X_WF, given);
      EXPECT_TRUE(SameXY(InFrame(s, X_WF), {{0.3, 0.4}}, 1e-9));
      ASSERT_EQ(s.points.size(), 1u);
      EXPECT_NEAR(s.points[0].depth, 1e-9, 1e-9);
      // A cylinder standing on its cap, turned about its axis: the cap polygon, points at 2 pi k / 16
      // in the cylinder's frame.
      const Cylinder cylinder{0.2, 0.3};
      const double turn = 0.3 * i;
      const ContactManifold d = OnBox(cylinder, Pose(Rz(turn), Vec3(-0.4, 0.2, 0.8 - 1e-9)), X_WF, given);
      std::vector<Vec2> rim;
      for (int k = 0; k < 16; ++k) {
        rim.push_back(Vec2(-0.4, 0.2) + 0.2 * Vec2(std::cos(turn + 2 * M_PI * k / 16), std::sin(turn + 2 * M_PI * k / 16)));
      }
      EXPECT_TRUE(SameXY(InFrame(d, X_WF), rim, 1e-8));
      for (const ContactPoint& p : d.points) {
        EXPECT_NEAR(p.depth, 1e-9, given ? 1e-9 : 1e-7);
        EXPECT_GE(p.id.b[0], 16) << "the bottom cap is ids 16..31";
        EXPECT_LT(p.id.b[0], 32);
      }
      // On its side (axis along y): the rim's segment.
      const ContactManifold e = OnBox(cylinder, Pose(Rx(M_PI / 2), Vec3(0.1, 0.1, 0.7 - 1e-9)), X_WF, given);
      EXPECT_TRUE(SameXY(InFrame(e, X_WF), {{0.1, -0.2}, {0.1, 0.4}}, 1e-8));
      // A cone on its base: the base polygon; lying on its side: the generator from apex to rim.
      const Cone cone{0.2, 0.25};
      const ContactManifold f = OnBox(cone, Pose(Mat3::Identity(), Vec3(0.0, 0.0, 0.75 - 1e-9)), X_WF, given);
      EXPECT_EQ(f.points.size(), 16u);
      const double slope = std::atan2(0.2, 0.5);  // Half-angle at the apex.
      const Mat3 side = Rx(M_PI / 2 + slope);      // A generator along the floor.
      const Vec3 apex = side * Vec3(0, 0, 0.25);
      const RigidTransform X_FC = Pose(side, Vec3(0.0, 0.0, 0.5 - apex.z() - 1e-9));
      const ContactManifold g = OnBox(cone, X_FC, X_WF, given);
      const Vec3 rim_point = X_FC * Vec3(0.0, -0.2, -0.25);
      EXPECT_TRUE(SameXY(InFrame(g, X_WF), {(X_FC * Vec3(0, 0, 0.25)).head<2>(), rim_point.head<2>()}, 1e-7));
    }
  }
}

TEST(ContactRegion, ReduceToFourKeepsTheDeepestAndALargeQuad) {
  const Cylinder cylinder{0.2, 0.3};
  ContactOptions options;
  options.reduce_to_four = true;
  for (double tilt : {0.0, 0.004}) {
    // Tilted within the angle tolerance: the cap polygon still, with the point at -y deepest.
    const RigidTransform X_FB = Pose(Rx(tilt), Vec3(0.0, 0.0, 0.8 - 1e-6));
    const ContactManifold all = OnBox(cylinder, X_FB, RigidTransform(), true);
    const ContactManifold four = OnBox(cylinder, X_FB, RigidTransform(), true, options);
    ASSERT_EQ(all.points.size(), 16u);
    ASSERT_EQ(four.points.size(), 4u);
    double deepest = -1.0;
    for (const ContactPoint& p : all.points) deepest = std::max(deepest, p.depth);
    double kept_deepest = -1.0;
    std::vector<Vec2> quad;
    for (const ContactPoint& p : four.points) {
      kept_deepest = std::max(kept_deepest, p.depth);
      quad.push_back(p.p_W.head<2>());
      EXPECT_TRUE(std::any_of(all.points.begin(), all.points.end(), [&](const ContactPoint& q) { return q.id == p.id; }));
    }
    EXPECT_EQ(kept_deepest, deepest);
    EXPECT_GT(PolygonArea(quad), 0.95 * 2.0 * 0.2 * 0.2) << "close to the inscribed square";
  }
}

// ---- Random polytopes penetrating ------------------------------------------------------------------------

// The interval of the line p + t n (t real) inside a posed polytope, from its face planes.
std::pair<double, double> LineThrough(const ConvexPolytope& s, const RigidTransform& X_WS, const Vec3& p_W,
                                      const Vec3& n_W) {
  const Vec3 p = X_WS.inverse() * p_W, n = X_WS.R.transpose() * n_W;
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  for (const FacePlane& f : s.face_planes()) {
    const double a = f.normal.dot(n), b = f.offset - f.normal.dot(p);
    if (std::abs(a) < 1e-15) continue;
    if (a > 0) {
      hi = std::min(hi, b / a);
    } else {
      lo = std::max(lo, b / a);
    }
  }
  return {lo, hi};
}

// Brute-force penetration depth of two posed polytopes: the least overlap over every face normal and
// every cross product of an edge of A with an edge of B (no Gauss-map pruning).
double BruteForceDepth(const ConvexPolytope& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                       const RigidTransform& X_WB) {
  std::vector<Vec3> axes;
  for (const FacePlane& f : a.face_planes()) axes.push_back(X_WA.R * f.normal);
  for (const FacePlane& f : b.face_planes()) axes.push_back(X_WB.R * f.normal);
  for (const auto& ea : a.edges()) {
    const Vec3 da = X_WA.R * (a.vertices()[ea[1]] - a.vertices()[ea[0]]);
    for (const auto& eb : b.edges()) {
      const Vec3 c = da.cross(X_WB.R * (b.vertices()[eb[1]] - b.vertices()[eb[0]]));
      if (c.norm() > 1e-12) axes.push_back(c.normalized());
    }
  }
  double best = std::numeric_limits<double>::infinity();
  for (const Vec3& d : axes) {
    for (double sign : {1.0, -1.0}) {
      double max_a = -std::numeric_limits<double>::infinity(), min_b = std::numeric_limits<double>::infinity();
      for (const Vec3& v : a.vertices()) max_a = std::max(max_a, sign * d.dot(X_WA * v));
      for (const Vec3& v : b.vertices()) min_b = std::min(min_b, sign * d.dot(X_WB * v));
      best = std::min(best, max_a - min_b);
    }
  }
  return best;
}

TEST(ContactRegion, PenetratingPolytopesPointsLieOnBothShapes) {
  std::mt19937_64 rng(7);
  const ContactOptions options;
  int overlapping = 0, multi = 0;
  for (int i = 0; i < Cases(150); ++i) {
    const auto a = testing::RandomHull(rng, 4 + static_cast<int>(rng() % 30), 0.3, 0.3);
    const auto b = testing::RandomHull(rng, 4 + static_cast<int>(rng() % 30), 0.3, 0.3);
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.2), Vec3::Constant(0.2));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.2), Vec3::Constant(0.2));
    if (!GjkDistance(*a, X_WA, *b, X_WB).intersecting) continue;
    ++overlapping;
    SCOPED_TRACE(::testing::Message() << "case " << i);
    auto r = ComputeContacts(*a, X_WA, *b, X_WB, options);
    ASSERT_TRUE(r.ok());
    const ContactManifold& m = r.value();
    ExpectFinite(m);
    ASSERT_EQ(m.source, ContactNormalSource::kSat);
    const double depth = BruteForceDepth(*a, X_WA, *b, X_WB);
    EXPECT_NEAR(-m.signed_distance, depth, 1e-6 + 1e-9) << "SAT depth (faces preferred within 1e-6)";
    const double overlap = internal::OverlapAlong(*a, X_WA, *b, X_WB, m.normal_W);
    EXPECT_NEAR(overlap, -m.signed_distance, 1e-9) << "the depth is the overlap along the normal";
    const internal::SatResult exact = internal::PolyhedralSat(*a, X_WA, *b, X_WB, 0.0);
    EXPECT_NEAR(-exact.separation, depth, 1e-9) << "without the face bias the axis is the least overlap";
    ASSERT_FALSE(m.points.empty());
    EXPECT_FALSE(m.disjoint_projections);
    multi += m.points.size() > 1;
    double deepest = -std::numeric_limits<double>::infinity();
    for (const ContactPoint& c : m.points) {
      deepest = std::max(deepest, c.depth);
      EXPECT_LE(c.depth, overlap + 1e-9);
      EXPECT_LE(DistanceToShape(c.p_WA, *a, X_WA), 1e-9);
      EXPECT_LE(DistanceToShape(c.p_WB, *b, X_WB), 1e-9);
      EXPECT_LE(DistanceToShape(c.p_W, *a, X_WA), 0.5 * std::abs(c.depth) + 1e-9);
      EXPECT_LE(DistanceToShape(c.p_W, *b, X_WB), 0.5 * std::abs(c.depth) + 1e-9);
      // On the surfaces: the line along the normal leaves A at p_WA and enters B at p_WB (up to the
      // tilt of faces admitted by the angle tolerance across the contact).
      const double slack = 1e-9 + std::tan(options.feature_angle_tolerance) * 0.5 + options.feature_distance_tolerance;
      const auto [a_lo, a_hi] = LineThrough(*a, X_WA, c.p_W, m.normal_W);
      const auto [b_lo, b_hi] = LineThrough(*b, X_WB, c.p_W, m.normal_W);
      const double ta = m.normal_W.dot(c.p_WA - c.p_W), tb = m.normal_W.dot(c.p_WB - c.p_W);
      EXPECT_LE(ta, a_hi + 1e-9);
      EXPECT_GE(ta, a_hi - slack);
      EXPECT_GE(tb, b_lo - 1e-9);
      EXPECT_LE(tb, b_lo + slack);
      EXPECT_NEAR(c.depth, ta - tb, 1e-12);
    }
    EXPECT_NEAR(deepest, depth, 2e-6) << "the deepest point has the pair's depth";
  }
  EXPECT_GT(overlapping, Cases(150) / 3);
  EXPECT_GT(multi, 0);
}

// ---- Support sets ----------------------------------------------------------------------------------------

std::set<int32_t> Ids(const SupportSet& s) { return {s.ids.begin(), s.ids.end()}; }

TEST(SupportSet, BoxFacesEdgesAndVerticesWithinTheTolerances) {
  const Box box{Vec3(0.5, 0.3, 0.2)};
  ContactOptions o;
  SupportSet s;
  ComputeSupportSet(box, Vec3::UnitZ(), o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{4, 5, 6, 7}));
  ComputeSupportSet(box, Rx(0.5 * o.feature_angle_tolerance) * Vec3::UnitZ(), o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{4, 5, 6, 7})) << "tilted within the angle: still the face";
  ComputeSupportSet(box, Rx(2.0 * o.feature_angle_tolerance) * Vec3::UnitZ(), o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{4, 5})) << "beyond the angle: the edge at -y";
  ComputeSupportSet(box, Vec3(0.0, 1.0, 1.0).normalized(), o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{6, 7}));
  ComputeSupportSet(box, Vec3(1.0, 1.0, 1.0).normalized(), o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{7}));
  // A face tilted beyond the angle but within the distance tolerance across it.
  o.feature_distance_tolerance = 0.1;
  ComputeSupportSet(box, Rx(0.1) * Vec3::UnitZ(), o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{4, 5, 6, 7}));
}

TEST(SupportSet, ThinPolytopePlateKeepsOnlyTheFacingSide) {
  // A 1 m plate 5 mm thick: its side faces are thin, but not facing the normal, so the bottom's
  // vertices never join the top's (the triangulated sides slope by less than the angle tolerance).
  std::vector<Vec3> pts;
  for (int k = 0; k < 8; ++k) pts.push_back(Vec3(k & 1 ? 0.5 : -0.5, k & 2 ? 0.5 : -0.5, k & 4 ? 0.0025 : -0.0025));
  auto plate = ConvexPolytope::Build(pts);
  ASSERT_TRUE(plate.ok());
  SupportSet s;
  for (const Vec3& n : {Vec3(Vec3::UnitZ()), Vec3(Rx(0.004) * Vec3::UnitZ())}) {
    ComputeSupportSet(*plate.value(), n, ContactOptions(), &s);
    ASSERT_EQ(s.size(), 4);
    for (const Vec3& p : s.p_S) EXPECT_GT(p.z(), 0.0);
  }
}

TEST(SupportSet, PolytopeSetsContainTheExtremeVerticesNearTheNormal) {
  std::mt19937_64 rng(8);
  std::normal_distribution<double> g(0.0, 1.0);
  const ContactOptions o;
  for (int i = 0; i < Cases(100); ++i) {
    const auto hull = testing::RandomHull(rng, 4 + static_cast<int>(rng() % 80), 0.5, 0.3);
    const Vec3 n = Vec3(g(rng), g(rng), g(rng)).normalized();
    SupportSet s;
    ComputeSupportSet(*hull, n, o, &s);
    const std::set<int32_t> ids = Ids(s);
    double top = -1e300;
    for (const Vec3& v : hull->vertices()) top = std::max(top, n.dot(v));
    // Contains: every vertex near the top plane, and the extreme vertex of every direction well inside
    // the angle.
    for (int32_t v = 0; v < hull->num_vertices(); ++v) {
      if (n.dot(hull->vertices()[v]) >= top - o.feature_distance_tolerance) {
        EXPECT_TRUE(ids.count(v));
      }
    }
    for (int k = 0; k < 50; ++k) {
      const Vec3 t = internal::AnyOrthogonal(n);
      const double angle = 0.9 * o.feature_angle_tolerance * std::sqrt((k + 0.5) / 50.0);
      const Vec3 d = Eigen::AngleAxisd(2.399963 * k, n) * (std::cos(angle) * n + std::sin(angle) * t);
      EXPECT_TRUE(ids.count(hull->SupportVertexBruteForce(d))) << "direction " << k;
    }
    // Only near the top: a vertex extreme for a direction within the angle lies at most
    // tan(angle) * (its distance from the top vertex) below the top.
    for (int32_t v : ids) {
      const Vec3& p = hull->vertices()[v];
      const Vec3& q = hull->vertices()[hull->SupportVertexBruteForce(n)];
      EXPECT_LE(top - n.dot(p), o.feature_distance_tolerance + std::tan(o.feature_angle_tolerance) * (p - q).norm() / std::cos(o.feature_angle_tolerance) + 1e-12);
    }
  }
}

TEST(SupportSet, CurvedShapesAndTriangles) {
  const ContactOptions o;
  SupportSet s;
  const Cylinder cyl{0.2, 0.3};
  ComputeSupportSet(cyl, Vec3::UnitZ(), o, &s);
  EXPECT_EQ(s.size(), 16);
  for (const Vec3& p : s.p_S) EXPECT_NEAR(p.head<2>().norm(), 0.2, 1e-15);
  ComputeSupportSet(cyl, -Vec3::UnitZ(), o, &s);
  EXPECT_EQ(*Ids(s).begin(), 16);
  ComputeSupportSet(cyl, Vec3(1, 1, 0).normalized(), o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{32, 33})) << "the side's segment";
  ComputeSupportSet(cyl, Vec3(1, 0, 1).normalized(), o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{32})) << "the top rim's point";
  const Cone cone{0.2, 0.25};
  ComputeSupportSet(cone, -Vec3::UnitZ(), o, &s);
  EXPECT_EQ(s.size(), 16);
  ComputeSupportSet(cone, Vec3::UnitZ(), o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{16})) << "the apex";
  const Vec3 side_normal = Vec3(0.5, 0.0, 0.2).normalized();  // (2h, 0, r) / |.|
  ComputeSupportSet(cone, side_normal, o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{16, 17})) << "apex and rim: a generator";
  const Capsule cap{0.1, 0.4};
  ComputeSupportSet(cap, Vec3::UnitX(), o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{0, 1}));
  for (const Vec3& p : s.p_S) EXPECT_NEAR(p.x(), 0.1, 1e-15);
  ComputeSupportSet(cap, Vec3(1, 0, 0.1).normalized(), o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{1}));
  const Triangle tri{Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0)};
  ComputeSupportSet(tri, Vec3::UnitZ(), o, &s);
  EXPECT_EQ(s.size(), 3);
  ComputeSupportSet(tri, -Vec3::UnitY(), o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{0, 1}));
  ComputeSupportSet(tri, Vec3(1, 1, 0).normalized(), o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{1, 2}));
  ComputeSupportSet(tri, Vec3(1, -0.5, 0.2).normalized(), o, &s);
  EXPECT_EQ(Ids(s), (std::set<int32_t>{1}));
}

// ---- Every shape pair, random poses ------------------------------------------------------------------------

struct ShapeZoo {
  Sphere sphere;
  Capsule capsule;
  Box box;
  Cylinder cylinder;
  Cone cone;
  Triangle triangle;
  std::shared_ptr<const ConvexPolytope> polytope;
};

ShapeZoo RandomZoo(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 0.3);
  const auto dim = [&] { return (rng() % 8 == 0) ? 0.0 : u(rng); };  // Some degenerate shapes.
  ShapeZoo z;
  z.sphere = Sphere{Vec3(u(rng), 0.0, 0.0), dim()};
  z.capsule = Capsule{dim(), dim()};
  z.box = Box{Vec3(dim(), dim(), dim())};
  z.cylinder = Cylinder{dim(), dim()};
  z.cone = Cone{dim(), dim()};
  std::normal_distribution<double> g(0.0, 0.2);
  z.triangle = Triangle{Vec3(g(rng), g(rng), g(rng)), Vec3(g(rng), g(rng), g(rng)), Vec3(g(rng), g(rng), g(rng))};
  if (rng() % 8 == 0) z.triangle.c = z.triangle.b;  // A segment.
  z.polytope = testing::RandomHull(rng, 4 + static_cast<int>(rng() % 20), 0.2, 0.3);
  return z;
}

template <class F>
void ForEachShape(const ShapeZoo& z, F&& f) {
  f(z.sphere, "sphere");
  f(z.capsule, "capsule");
  f(z.box, "box");
  f(z.cylinder, "cylinder");
  f(z.cone, "cone");
  f(z.triangle, "triangle");
  f(*z.polytope, "polytope");
}

TEST(ContactRegion, EveryShapePairGivesFinitePointsOnBothShapes) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> g(0.0, 1.0);
  ContactOptions options;
  options.contact_margin = 0.05;
  int with_points = 0, pairs = 0, disjoint = 0;
  std::array<int, 8> sources{};
  for (int i = 0; i < Cases(40); ++i) {
    const ShapeZoo zoo = RandomZoo(rng);
    ForEachShape(zoo, [&](const auto& a, const char* name_a) {
      ForEachShape(zoo, [&](const auto& b, const char* name_b) {
        for (int k = 0; k < 4; ++k) {
          const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.2), Vec3::Constant(0.2));
          const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.2), Vec3::Constant(0.2));
          SCOPED_TRACE(::testing::Message() << name_a << " / " << name_b << " case " << i << "." << k);
          ++pairs;
          options.reduce_to_four = k == 3;
          auto r = ComputeContacts(a, X_WA, b, X_WB, options);
          ASSERT_TRUE(r.ok()) << r.error().message;
          const ContactManifold& m = r.value();
          ExpectFinite(m);
          const GjkResult gjk = GjkDistance(a, X_WA, b, X_WB);
          if (m.source == ContactNormalSource::kSeparated) {
            EXPECT_TRUE(m.points.empty());
            EXPECT_NEAR(m.signed_distance, gjk.distance, 1e-12);
            EXPECT_GT(m.signed_distance, options.contact_margin);
            continue;
          }
          ASSERT_FALSE(m.points.empty());
          ++with_points;
          if (options.reduce_to_four) {
            EXPECT_LE(m.points.size(), 4u);
          }
          // The separation along any direction is at most the distance, which GJK bounds from above (on
          // cylinders and cones to within a relative 1e-9, 1e-8 without fused multiply-add).
          EXPECT_LE(m.signed_distance, gjk.distance * (1.0 + 1e-8) + 1e-12);
          if (m.source == ContactNormalSource::kGjkWitness) {
            // Polished from GJK's witness direction (up to 1e-3 rad off on curved shapes) to the normal.
            EXPECT_NEAR(m.signed_distance, gjk.distance, 1e-6 * gjk.distance + 1e-12) << "the exact normal";
          } else {
            EXPECT_LE(m.signed_distance, 1e-12) << "overlapping";
          }
          const double overlap = internal::OverlapAlong(a, X_WA, b, X_WB, m.normal_W);
          EXPECT_NEAR(-m.signed_distance, overlap, 1e-9) << "the signed distance is the separation along n";
          ++sources[static_cast<int>(m.source)];
          if (m.signed_distance <= 0.0) {
            // EPA's certified bracket holds the true signed distance, which the separation along any
            // axis bounds from below; EPA's own axis is where the polish started.
            auto e = ComputeSignedDistance(a, X_WA, b, X_WB);
            ASSERT_TRUE(e.ok());
            EXPECT_LE(m.signed_distance, e.value().upper_bound + 1e-9);
            if (m.source == ContactNormalSource::kEpa) {
              EXPECT_GE(m.signed_distance, e.value().distance - 1e-12) << "the polish never loses";
            }
          }
          disjoint += m.disjoint_projections;
          for (const ContactPoint& c : m.points) {
            EXPECT_LE(c.depth, overlap + 1e-9);
            EXPECT_NEAR(c.depth, m.normal_W.dot(c.p_WA - c.p_WB), 1e-12);
            EXPECT_LE(DistanceToShape(c.p_WA, a, X_WA), 1e-9);
            EXPECT_LE(DistanceToShape(c.p_WB, b, X_WB), 1e-9);
          }
          // A normal chosen at random gives a finite region too (possibly from the disjoint fallback).
          const Vec3 n(g(rng), g(rng), g(rng));
          auto q = ComputeContactRegion(a, X_WA, b, X_WB, n, 0.0, options);
          ASSERT_TRUE(q.ok());
          ExpectFinite(q.value());
          EXPECT_FALSE(q.value().points.empty());
        }
      });
    });
  }
  EXPECT_GT(with_points, pairs / 4);
  EXPECT_LT(disjoint, with_points / 10) << "fitting normals give overlapping projections";
  for (ContactNormalSource s : {ContactNormalSource::kGjkWitness, ContactNormalSource::kCoreGjk, ContactNormalSource::kSat,
                                ContactNormalSource::kEpa}) {
    EXPECT_GT(sources[static_cast<int>(s)], 0) << "source " << static_cast<int>(s) << " exercised";
  }
  std::printf("contacts from: witness %d, cores %d, SAT %d, EPA %d, axis search %d; disjoint %d of %d\n",
              sources[2], sources[3], sources[4], sources[5], sources[6], disjoint, with_points);
}

// ---- The axis search (the fallback when EPA cannot answer) ----------------------------------------------------

TEST(ContactRegion, AxisSearchBoundsTheDepthAndMatchesEpaMostly) {
  std::mt19937_64 rng(10);
  std::uniform_real_distribution<double> u(0.05, 0.3);
  int cases = 0, as_good = 0;
  const ContactOptions options;
  for (int i = 0; i < Cases(150); ++i) {
    const Cylinder cyl{u(rng), u(rng)};
    const Cone cone{u(rng), u(rng)};
    const Box box{Vec3(u(rng), u(rng), u(rng))};
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.1), Vec3::Constant(0.1));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.1), Vec3::Constant(0.1));
    const auto check = [&](const auto& a, const auto& b) {
      auto e = ComputeSignedDistance(a, X_WA, b, X_WB);
      ASSERT_TRUE(e.ok());
      if (e.value().distance > 0.0) return;
      ++cases;
      Vec3 n;
      double overlap = 0.0;
      int32_t axes = 0;
      internal::SearchPenetrationAxis(a, X_WA, b, X_WB, options, &n, &overlap, &axes);
      EXPECT_NEAR(n.norm(), 1.0, 1e-12);
      EXPECT_NEAR(overlap, internal::OverlapAlong(a, X_WA, b, X_WB, n), 1e-12);
      // No axis overlaps by less than the depth, which EPA's certified bracket bounds from below.
      EXPECT_GE(overlap, -e.value().upper_bound - 1e-9);
      as_good += overlap <= -e.value().distance + 1e-9;
    };
    check(cyl, box);
    check(cone, box);
    check(cyl, cone);
  }
  EXPECT_GT(cases, Cases(150));
  EXPECT_GT(as_good, 0.95 * cases) << "a local search: as deep as EPA's answer in most cases";
  std::printf("axis search as good as EPA in %d of %d overlapping pairs\n", as_good, cases);
}

// ---- Errors and separated pairs ------------------------------------------------------------------------------

TEST(ContactRegion, BadInputIsAnErrorAndFarPairsHaveNoPoints) {
  const Box a{Vec3(0.5, 0.5, 0.5)}, b{Vec3(0.2, 0.2, 0.2)};
  const RigidTransform X_WB = Pose(Mat3::Identity(), Vec3(0.0, 0.0, 0.7));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(ComputeContactRegion(a, RigidTransform(), b, X_WB, Vec3(nan, 0, 1), 0.0).ok());
  EXPECT_FALSE(ComputeContactRegion(a, RigidTransform(), b, X_WB, Vec3::Zero(), 0.0).ok());
  EXPECT_FALSE(ComputeContactRegion(a, RigidTransform(), b, X_WB, Vec3::UnitZ(), nan).ok());
  EXPECT_FALSE(ComputeContactRegion(a, RigidTransform(), b, X_WB, Vec3::UnitZ(), 0.5).ok()) << "beyond the margin";
  EXPECT_FALSE(ComputeContacts(a, Pose(Mat3::Identity(), Vec3(nan, 0, 0)), b, X_WB).ok());
  EXPECT_FALSE(ComputeContacts(Box{Vec3(-1, 1, 1)}, RigidTransform(), b, X_WB).ok());
  EXPECT_FALSE(ComputeContacts(Sphere{Vec3::Zero(), nan}, RigidTransform(), b, X_WB).ok());
  ContactOptions bad;
  bad.disk_points = 2;
  EXPECT_FALSE(ComputeContacts(a, RigidTransform(), b, X_WB, bad).ok());
  bad = ContactOptions();
  bad.feature_angle_tolerance = 1.0;
  EXPECT_FALSE(ComputeContacts(a, RigidTransform(), b, X_WB, bad).ok());
  bad = ContactOptions();
  bad.contact_margin = -1.0;
  EXPECT_FALSE(ComputeContacts(a, RigidTransform(), b, X_WB, bad).ok());

  // Apart by 0.5 mm: within the default 1 mm margin, contacts at -0.5 mm depth; by 2 mm: none.
  auto near = ComputeContacts(a, RigidTransform(), b, Pose(Mat3::Identity(), Vec3(0, 0, 0.7005)));
  ASSERT_TRUE(near.ok());
  EXPECT_EQ(near.value().source, ContactNormalSource::kGjkWitness);
  EXPECT_NEAR(near.value().signed_distance, 5e-4, 1e-12);
  ASSERT_EQ(near.value().points.size(), 4u);
  for (const ContactPoint& p : near.value().points) EXPECT_NEAR(p.depth, -5e-4, 1e-12);
  auto far = ComputeContacts(a, RigidTransform(), b, Pose(Mat3::Identity(), Vec3(0, 0, 0.702)));
  ASSERT_TRUE(far.ok());
  EXPECT_EQ(far.value().source, ContactNormalSource::kSeparated);
  EXPECT_TRUE(far.value().points.empty());
  EXPECT_NEAR(far.value().signed_distance, 2e-3, 1e-12);
}

}  // namespace
}  // namespace proximity::core
