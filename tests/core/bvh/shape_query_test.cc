#include "bvh/shape_query.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/test_util.h"
#include "narrowphase/gjk.h"
#include "narrowphase/triangle.h"
#include "base/numerics.h"

namespace proximity::core {
namespace {

using testing::Cases;
using testing::RandomPose;

std::shared_ptr<const MeshModel> Build(const TriangleMesh& mesh, const BvhBuildOptions& opt = {}) {
  auto r = MeshModel::Build(mesh, opt);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? r.value() : nullptr;
}

std::shared_ptr<const ConvexPolytope> RandomHull(std::mt19937_64& rng, int n, double size) {
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<Vec3> p(n);
  for (Vec3& x : p) x = size * Vec3(g(rng), g(rng), g(rng));
  return ConvexPolytope::Build(p).value();
}

// Whether the shape is a polytope-like shape on which GJK converges exactly (up to rounding).
bool IsCurved(const Shape& s) {
  return std::holds_alternative<Cylinder>(s) || std::holds_alternative<Cone>(s);
}

Triangle WorldTriangle(const TriangleMesh& m, int t, const RigidTransform& X_WM) {
  const auto& f = m.triangles[t];
  return {X_WM * m.vertices[f[0]], X_WM * m.vertices[f[1]], X_WM * m.vertices[f[2]]};
}

// The brute-force oracle: every mesh triangle against the shape by GJK.
struct Oracle {
  double distance = std::numeric_limits<double>::infinity();
  double lower = std::numeric_limits<double>::infinity();  // min of GJK's certified lower bounds
  double realised = std::numeric_limits<double>::infinity();  // min distance between GJK's witnesses
  std::set<int> intersecting;
};

Oracle BruteForce(const TriangleMesh& m, const RigidTransform& X_WM, const Shape& shape,
                  const RigidTransform& X_WS) {
  Oracle o;
  const RigidTransform I;
  for (int t = 0; t < static_cast<int>(m.triangles.size()); ++t) {
    const Triangle tri = WorldTriangle(m, t, X_WM);
    VisitShape(shape, [&](const auto& s) {
      if (GjkIntersect(tri, I, s, X_WS).intersecting) o.intersecting.insert(t);
      const GjkResult g = GjkDistance(tri, I, s, X_WS);
      o.distance = std::min(o.distance, g.distance);
      o.lower = std::min(o.lower, g.lower_bound);
      o.realised = std::min(o.realised, (g.p_WA - g.p_WB).norm());
    });
  }
  return o;
}

// Distance from a world point to the solid shape (0 inside).
double PointShapeDistance(const Vec3& p_W, const Shape& shape, const RigidTransform& X_WS) {
  if (const auto* c = std::get_if<Cylinder>(&shape)) {
    const Vec3 q = X_WS.inverse() * p_W;
    return std::hypot(std::max(0.0, q.head<2>().norm() - c->radius), std::max(0.0, std::abs(q.z()) - c->half_length));
  }
  return VisitShape(shape, [&](const auto& s) {
    return GjkDistance(Sphere{p_W, 0.0}, RigidTransform(), s, X_WS).distance;
  });
}

// A link mesh and the box its bounding-box centre is spread over.
struct MeshCase {
  std::string name;
  std::string path;
};

std::vector<MeshCase> RealMeshes() {
  std::vector<MeshCase> out;
  const std::string shared = testing::SharedDataDir();
  if (!shared.empty()) {
    const std::string panda = shared + "/robots/panda/moveit_resources_panda_description/meshes/collision/";
    for (const char* link : {"link1", "link3", "link5", "hand"}) out.push_back({std::string("panda_") + link, panda + link + ".stl"});
  }
  const std::string dart = testing::DartUrdfDir();
  if (!dart.empty()) {
    for (const char* link : {"forearm", "wrist"}) {
      out.push_back({std::string("kr5_") + link, dart + "/KR5/meshes/" + link + ".STL"});
    }
  }
  return out;
}

// Scene-like primitives at the scale of a robot link.
std::vector<Shape> SceneShapes(std::mt19937_64& rng) {
  return {Box{Vec3(0.08, 0.05, 0.12)}, Cylinder{0.04, 0.1}, Sphere{Vec3(0.01, -0.02, 0.03), 0.06},
          Capsule{0.03, 0.08}, Cone{0.06, 0.08}, RandomHull(rng, 20, 0.05)};
}

struct Posed {
  RigidTransform X_WM, X_WS;
};

// The mesh's bounding-box centre at the origin, randomly rotated; the shape at a random pose within
// a box scaled to the two sizes, so that about half the poses collide.
std::vector<Posed> Poses(const TriangleMesh& m, const Shape& shape, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto b = MeshBounds(m);
  const Vec3 c = 0.5 * (b[0] + b[1]);
  const double reach = 0.9 * (0.5 * (b[1] - b[0]).norm() + ShapeBoundingObb(shape).half_extents.norm()) / std::sqrt(3.0);
  std::vector<Posed> out;
  for (int i = 0; i < n; ++i) {
    Posed p;
    p.X_WM.R = testing::RandomRotation(rng);
    p.X_WM.p = -(p.X_WM.R * c);
    p.X_WS = RandomPose(rng, Vec3::Constant(-reach), Vec3::Constant(reach));
    out.push_back(p);
  }
  return out;
}

class RealMeshTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (RealMeshes().empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  }
};

TEST_F(RealMeshTest, CollideMatchesBruteForceOracle) {
  std::mt19937_64 shape_rng(1);
  const std::vector<Shape> shapes = SceneShapes(shape_rng);
  for (const MeshCase& mc : RealMeshes()) {
    const TriangleMesh m = testing::LoadMeshOrDie(mc.path);
    const auto model = Build(m);
    ASSERT_NE(model, nullptr);
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(mc.name + " vs " + ShapeName(shape));
      int hits = 0, misses = 0;
      for (const Posed& p : Poses(m, shape, Cases(24), 2)) {
        const Oracle o = BruteForce(m, p.X_WM, shape, p.X_WS);
        CollisionResult first;
        PROX_ASSERT_OK_AND_ASSIGN(first, CollideMeshShape(*model, p.X_WM, shape, p.X_WS, {}));
        EXPECT_EQ(first.colliding, !o.intersecting.empty());
        EXPECT_GT(first.stats.bv_tests, 0);
        if (first.colliding) {
          ASSERT_EQ(first.contacts.size(), 1u);
          EXPECT_TRUE(o.intersecting.count(first.contacts[0].triangle_a));
          EXPECT_EQ(first.contacts[0].triangle_b, -1);
        }
        CollisionRequest all;
        all.all_contacts = true;
        CollisionResult every;
        PROX_ASSERT_OK_AND_ASSIGN(every, CollideMeshShape(*model, p.X_WM, shape, p.X_WS, all));
        std::set<int> found;
        for (const TrianglePair& c : every.contacts) found.insert(c.triangle_a);
        EXPECT_EQ(found.size(), every.contacts.size());
        EXPECT_EQ(found, o.intersecting);
        EXPECT_FALSE(every.truncated);
        (o.intersecting.empty() ? misses : hits)++;
      }
      if (testing::kSanitizedSlowdown == 1) {
        EXPECT_GE(hits, 4) << "misses " << misses;
        EXPECT_GE(misses, 4) << "hits " << hits;
      }
    }
  }
}

TEST_F(RealMeshTest, AllContactsStopAtMaxContacts) {
  const MeshCase mc = RealMeshes().front();
  const TriangleMesh m = testing::LoadMeshOrDie(mc.path);
  const auto model = Build(m);
  // A box through the middle of the link cuts many triangles.
  const auto b = MeshBounds(m);
  const Shape box = Box{Vec3(1.0, 1.0, 0.01)};
  const RigidTransform X_WS(Mat3::Identity(), 0.5 * (b[0] + b[1]));
  CollisionRequest req;
  req.all_contacts = true;
  req.max_contacts = 3;
  CollisionResult r;
  PROX_ASSERT_OK_AND_ASSIGN(r, CollideMeshShape(*model, RigidTransform(), box, X_WS, req));
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.contacts.size(), 3u);
}

TEST_F(RealMeshTest, DistanceMatchesBruteForceOracle) {
  std::mt19937_64 shape_rng(1);
  const std::vector<Shape> shapes = SceneShapes(shape_rng);
  for (const MeshCase& mc : RealMeshes()) {
    const TriangleMesh m = testing::LoadMeshOrDie(mc.path);
    const auto model = Build(m);
    ASSERT_NE(model, nullptr);
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(mc.name + " vs " + ShapeName(shape));
      // GJK is exact up to rounding on polytope-like shapes; on curved surfaces it stops near a 1e-9
      // relative gap (gjk.h), for the oracle and the query alike.
      const double tol = IsCurved(shape) ? 1e-8 : 1e-9;
      for (const Posed& p : Poses(m, shape, Cases(24), 3)) {
        const Oracle o = BruteForce(m, p.X_WM, shape, p.X_WS);
        DistanceResult r;
        PROX_ASSERT_OK_AND_ASSIGN(r, ComputeMeshShapeDistance(*model, p.X_WM, shape, p.X_WS, {}));
        EXPECT_EQ(r.intersecting, !o.intersecting.empty());
        EXPECT_LE(r.lower_bound, r.upper_bound);
        // A certified lower bound never exceeds a distance the oracle realises (its witnesses lie in
        // both sets). On curved shapes the oracle's |v| is no such bound: GJK stops with a gap, and its
        // simplex's closest point can lie off a sliver simplex, below the truth (on a portable build,
        // by 8e-13 here). The oracle runs in the world frame, the query in the mesh's: rounding apart.
        EXPECT_LE(r.lower_bound, o.realised * (1.0 + 1e-12) + RoundingAllowance(1.0 + p.X_WS.p.norm()))
            << "oracle |v| " << o.distance << " realised " << o.realised << " ours " << r.lower_bound;
        EXPECT_TRUE(std::isfinite(r.upper_bound));
        EXPECT_GE(r.stats.triangle_tests, 1);
        if (o.intersecting.empty()) {
          EXPECT_NEAR(r.upper_bound, o.distance, tol * o.distance);
          EXPECT_GE(r.lower_bound, o.distance * (1.0 - tol));
          EXPECT_NEAR((r.p_WA - r.p_WB).norm(), r.upper_bound, 1e-12 + 1e-9 * r.upper_bound);
        } else {
          EXPECT_EQ(r.upper_bound, 0.0);
          EXPECT_EQ(r.lower_bound, 0.0);
        }
        // The witnesses lie on the mesh surface and on the solid; the triangle is the witness's.
        EXPECT_LT(testing::PointMeshDistance(r.p_WA, m, p.X_WM), 1e-9);
        EXPECT_LT(PointShapeDistance(r.p_WB, shape, p.X_WS), IsCurved(shape) ? 1e-8 : 1e-9);
        ASSERT_GE(r.triangles.triangle_a, 0);
        EXPECT_EQ(r.triangles.triangle_b, -1);
        const Triangle t = WorldTriangle(m, r.triangles.triangle_a, p.X_WM);
        EXPECT_LT((ClosestPointOnTriangle(r.p_WA, t.a, t.b, t.c) - r.p_WA).norm(), 1e-9);
      }
    }
  }
}

TEST_F(RealMeshTest, BudgetsAndMaxDistanceAreMet) {
  std::mt19937_64 shape_rng(1);
  const std::vector<Shape> shapes = SceneShapes(shape_rng);
  const MeshCase mc = RealMeshes().front();
  const TriangleMesh m = testing::LoadMeshOrDie(mc.path);
  const auto model = Build(m);
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(mc.name + " vs " + ShapeName(shape));
    int64_t exact_tests = 0, budget_tests = 0;
    for (const Posed& p : Poses(m, shape, Cases(24), 4)) {
      const Oracle o = BruteForce(m, p.X_WM, shape, p.X_WS);
      DistanceResult exact;
      PROX_ASSERT_OK_AND_ASSIGN(exact, ComputeMeshShapeDistance(*model, p.X_WM, shape, p.X_WS, {}));
      exact_tests += exact.stats.triangle_tests;
      for (const auto& [rel, abs] : {std::pair{0.2, 0.0}, std::pair{0.0, 0.01}, std::pair{0.05, 0.002}}) {
        DistanceRequest req;
        req.rel_err = rel;
        req.abs_err = abs;
        DistanceResult r;
        PROX_ASSERT_OK_AND_ASSIGN(r, ComputeMeshShapeDistance(*model, p.X_WM, shape, p.X_WS, req));
        if (rel == 0.2) budget_tests += r.stats.triangle_tests;
        EXPECT_LE(r.lower_bound, o.distance * (1.0 + 1e-12));
        EXPECT_GE(r.upper_bound, o.distance * (1.0 - 1e-8));
        const bool met = r.upper_bound <= r.lower_bound * (1.0 + rel) * (1.0 + 1e-12) ||
                         r.upper_bound - r.lower_bound <= abs + 1e-15;
        EXPECT_TRUE(met) << "rel " << rel << " abs " << abs << " interval [" << r.lower_bound << ", "
                         << r.upper_bound << "]";
        EXPECT_NEAR((r.p_WA - r.p_WB).norm(), r.upper_bound, 1e-12 + 1e-9 * r.upper_bound);
      }
      if (o.distance > 0.0) {
        DistanceRequest req;
        req.max_distance = 0.5 * o.distance;
        DistanceResult r;
        PROX_ASSERT_OK_AND_ASSIGN(r, ComputeMeshShapeDistance(*model, p.X_WM, shape, p.X_WS, req));
        EXPECT_TRUE(r.beyond_max_distance);
        EXPECT_GE(r.lower_bound, req.max_distance);
        EXPECT_LE(r.lower_bound, o.distance * (1.0 + 1e-12));
        EXPECT_GE(r.upper_bound, o.distance * (1.0 - 1e-8));
      }
    }
    EXPECT_LE(budget_tests, exact_tests);
  }
}

// An independent oracle for boxes: the box as a 12-triangle mesh through the mesh–mesh queries. They
// agree except where a mesh triangle lies wholly inside the solid box.
TEST_F(RealMeshTest, BoxAgreesWithItsTriangleMesh) {
  const Box box{Vec3(0.08, 0.05, 0.12)};
  const auto box_mesh = Build(MakeBoxMesh(2.0 * box.half_extents));
  for (const MeshCase& mc : RealMeshes()) {
    SCOPED_TRACE(mc.name);
    const TriangleMesh m = testing::LoadMeshOrDie(mc.path);
    const auto model = Build(m);
    int only_inside = 0;
    for (const Posed& p : Poses(m, box, Cases(40), 5)) {
      CollisionResult solid, surface;
      PROX_ASSERT_OK_AND_ASSIGN(solid, CollideMeshShape(*model, p.X_WM, box, p.X_WS, {}));
      PROX_ASSERT_OK_AND_ASSIGN(surface, Collide(*model, p.X_WM, *box_mesh, p.X_WS, {}));
      DistanceResult ds, dm;
      PROX_ASSERT_OK_AND_ASSIGN(ds, ComputeMeshShapeDistance(*model, p.X_WM, box, p.X_WS, {}));
      PROX_ASSERT_OK_AND_ASSIGN(dm, ComputeDistance(*model, p.X_WM, *box_mesh, p.X_WS, {}, nullptr));
      if (surface.colliding) {
        EXPECT_TRUE(solid.colliding);
      }
      if (!solid.colliding) {
        EXPECT_NEAR(ds.upper_bound, dm.upper_bound, 1e-9 * dm.upper_bound);
        continue;
      }
      EXPECT_EQ(ds.upper_bound, 0.0);
      if (surface.colliding) continue;
      // The only difference allowed: some triangle lies wholly inside the box.
      ++only_inside;
      const RigidTransform X_SW = p.X_WS.inverse();
      bool inside = false;
      for (const auto& f : m.triangles) {
        bool all = true;
        for (int i : f) all = all && ((X_SW * (p.X_WM * m.vertices[i])).cwiseAbs().array() <= box.half_extents.array()).all();
        inside = inside || all;
      }
      EXPECT_TRUE(inside);
    }
    std::printf("%s: %d poses where only the solid box collides\n", mc.name.c_str(), only_inside);
  }
}

TEST(ShapeQuery, MeshWhollyInsideABoxCollidesOnlyWithTheSolid) {
  const auto ball = Build(MakeIcosphereMesh(0.1, 2));
  const Box box{Vec3(0.3, 0.4, 0.5)};
  const auto box_mesh = Build(MakeBoxMesh(2.0 * box.half_extents));
  std::mt19937_64 rng(6);
  const RigidTransform X_WS = RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
  const RigidTransform X_WM = X_WS * RigidTransform(testing::RandomRotation(rng), Vec3(0.05, -0.1, 0.2));
  CollisionResult solid, surface;
  PROX_ASSERT_OK_AND_ASSIGN(solid, CollideMeshShape(*ball, X_WM, box, X_WS, {}));
  PROX_ASSERT_OK_AND_ASSIGN(surface, Collide(*ball, X_WM, *box_mesh, X_WS, {}));
  EXPECT_TRUE(solid.colliding);
  EXPECT_FALSE(surface.colliding);
  DistanceResult ds, dm;
  PROX_ASSERT_OK_AND_ASSIGN(ds, ComputeMeshShapeDistance(*ball, X_WM, box, X_WS, {}));
  PROX_ASSERT_OK_AND_ASSIGN(dm, ComputeDistance(*ball, X_WM, *box_mesh, X_WS, {}, nullptr));
  EXPECT_TRUE(ds.intersecting);
  EXPECT_EQ(ds.upper_bound, 0.0);
  // The surfaces are apart: the ball's side is 0.15 from the box's face at x = 0.3.
  EXPECT_NEAR(dm.upper_bound, 0.15, 1e-2);
  EXPECT_FALSE(dm.intersecting);
}

// Single triangles against a box: the separating-axis test at the leaves against ISA-GJK.
TEST(ShapeQuery, TriangleBoxSeparatingAxesAgreeWithGjk) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-0.6, 0.6);
  const Box box{Vec3(0.3, 0.2, 0.1)};
  int hits = 0;
  const int n = Cases(4000);
  for (int i = 0; i < n; ++i) {
    Vec3 v[3] = {Vec3(u(rng), u(rng), u(rng)), Vec3(u(rng), u(rng), u(rng)), Vec3(u(rng), u(rng), u(rng))};
    if (i % 10 == 0) v[2] = v[0] + 0.3 * (v[1] - v[0]);  // zero area
    if (i % 10 == 1) v[1] = v[2] = v[0];                 // a point
    if (i % 10 == 2) v[0] *= 0.1, v[1] *= 0.1, v[2] *= 0.1;  // small, often inside
    auto mesh = MakeTriangleMesh({v[0], v[1], v[2]}, {{0, 1, 2}});
    if (!mesh.ok()) continue;  // zero-area triangles are dropped by mesh validation
    const auto model = Build(mesh.value());
    const RigidTransform X_WS = RandomPose(rng, Vec3::Constant(-0.2), Vec3::Constant(0.2));
    CollisionResult r;
    PROX_ASSERT_OK_AND_ASSIGN(r, CollideMeshShape(*model, RigidTransform(), box, X_WS, {}));
    const Triangle t{v[0], v[1], v[2]};
    const bool truth = GjkIntersect(t, RigidTransform(), box, X_WS).intersecting;
    EXPECT_EQ(r.colliding, truth) << i;
    hits += truth;
  }
  EXPECT_GT(hits, n / 5);
  EXPECT_LT(hits, 4 * n / 5);
}

// A mesh face flush on a shape's face, at gaps of +-1e-9 and 0, in several orientations.
TEST(ShapeQuery, FlushFacesNearContact) {
  const auto cube = Build(MakeBoxMesh(Vec3(0.2, 0.2, 0.2)));
  const std::vector<std::pair<Shape, double>> shapes = {
      {Box{Vec3(0.5, 0.4, 0.3)}, 0.3}, {Cylinder{0.4, 0.3}, 0.3}, {Cone{0.4, 0.3}, 0.3}};
  std::mt19937_64 rng(8);
  for (const auto& [shape, top] : shapes) {
    SCOPED_TRACE(ShapeName(shape));
    for (int k = 0; k < 4; ++k) {
      // The cube's bottom face (z = -0.1) on the shape's face z = top, in the shape's frame; the cone's
      // base is its bottom face, so it is used from below.
      const bool below = std::holds_alternative<Cone>(shape);
      const RigidTransform X_WS = RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
      const double yaw = 0.3 * k;
      const Mat3 Rz = Eigen::AngleAxisd(yaw, Vec3::UnitZ()).toRotationMatrix();
      for (double gap : {1e-9, 0.0, -1e-9}) {
        const double z = below ? -(top + 0.1 + gap) : top + 0.1 + gap;
        const Vec3 offset(below ? 0.0 : 0.05 * k, 0.0, z);
        const RigidTransform X_WM = X_WS * RigidTransform(Rz, offset);
        CollisionResult c;
        PROX_ASSERT_OK_AND_ASSIGN(c, CollideMeshShape(*cube, X_WM, shape, X_WS, {}));
        DistanceResult d;
        PROX_ASSERT_OK_AND_ASSIGN(d, ComputeMeshShapeDistance(*cube, X_WM, shape, X_WS, {}));
        EXPECT_EQ(c.colliding, gap <= 0.0) << "gap " << gap;
        EXPECT_EQ(d.intersecting, gap <= 0.0) << "gap " << gap;
        if (gap > 0.0) {
          EXPECT_NEAR(d.upper_bound, gap, 1e-12);
          EXPECT_LE(d.lower_bound, d.upper_bound);
          EXPECT_GT(d.lower_bound, 0.0);
        }
        EXPECT_FALSE(std::isnan(d.lower_bound) || std::isnan(d.upper_bound) || d.p_WA.hasNaN() || d.p_WB.hasNaN());
      }
    }
  }
}

TEST(ShapeQuery, BadInputGivesClearErrors) {
  const auto cube = Build(MakeBoxMesh(Vec3(0.2, 0.2, 0.2)));
  const Shape box = Box{Vec3(0.1, 0.1, 0.1)};
  const RigidTransform I;
  RigidTransform nan_pose;
  nan_pose.p.x() = std::numeric_limits<double>::quiet_NaN();
  RigidTransform skew;
  skew.R(0, 1) = 0.1;

  Status s = CollideMeshShape(*cube, nan_pose, box, I, {}).status();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message.find("X_WM"), std::string::npos) << s.error().message;
  s = ComputeMeshShapeDistance(*cube, I, box, skew, {}).status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("X_WS"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("orthonormal"), std::string::npos) << s.error().message;

  s = CollideMeshShape(*cube, I, Capsule{-0.1, 0.2}, I, {}).status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("capsule"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("radius"), std::string::npos) << s.error().message;
  s = ValidateShape(Box{Vec3(0.1, std::numeric_limits<double>::infinity(), 0.1)}, "obstacle 3");
  EXPECT_NE(s.error().message.find("obstacle 3"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("half_extents.y"), std::string::npos) << s.error().message;
  EXPECT_FALSE(ValidateShape(Sphere{Vec3(0, std::nan(""), 0), 0.1}).ok());
  EXPECT_FALSE(ValidateShape(Cylinder{0.1, -1.0}).ok());
  EXPECT_FALSE(ValidateShape(Cone{std::nan(""), 1.0}).ok());
  EXPECT_FALSE(ValidateShape(std::shared_ptr<const ConvexPolytope>()).ok());
  EXPECT_TRUE(ValidateShape(Box{Vec3::Zero()}).ok());

  DistanceRequest bad;
  bad.rel_err = -1.0;
  s = ComputeMeshShapeDistance(*cube, I, box, I, bad).status();
  EXPECT_NE(s.error().message.find("rel_err"), std::string::npos);
  CollisionRequest bad_c;
  bad_c.all_contacts = true;
  bad_c.max_contacts = 0;
  EXPECT_FALSE(CollideMeshShape(*cube, I, box, I, bad_c).ok());
  EXPECT_FALSE(CollideShapes(box, I, Sphere{Vec3::Zero(), -1.0}, I, {}).ok());
  EXPECT_FALSE(ComputeShapeDistance(box, nan_pose, box, I, {}).ok());
}

TEST(ShapeQuery, BoundingBoxesEncloseTheShapes) {
  std::mt19937_64 rng(9);
  std::vector<Shape> shapes = SceneShapes(rng);
  shapes.push_back(Sphere{Vec3(1, 2, 3), 0.5});
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(ShapeName(shape));
    const Obb b = ShapeBoundingObb(shape);
    double touch[3] = {0, 0, 0};
    std::normal_distribution<double> g;
    for (int i = 0; i < 2000; ++i) {
      const Vec3 d(g(rng), g(rng), g(rng));
      const Vec3 p = VisitShape(shape, [&](const auto& s) { return Support(s, d); });
      const Vec3 q = b.R_MB.transpose() * (p - b.center);
      for (int k = 0; k < 3; ++k) {
        EXPECT_LE(std::abs(q[k]), b.half_extents[k] * (1 + 1e-12) + 1e-15);
        touch[k] = std::max(touch[k], std::abs(q[k]) / b.half_extents[k]);
      }
    }
    for (int k = 0; k < 3; ++k) EXPECT_GT(touch[k], 0.95) << "not tight on axis " << k;
  }
  const Obb box = ShapeBoundingObb(Box{Vec3(1, 2, 3)});
  EXPECT_EQ(box.half_extents, Vec3(1, 2, 3));
  EXPECT_EQ(box.center, Vec3::Zero());
}

double SphereBoxDistance(const Vec3& c_B, double r, const Vec3& h) {
  const Vec3 q = c_B.cwiseMax(-h).cwiseMin(h);
  return std::max(0.0, (c_B - q).norm() - r);
}

TEST(ShapeQuery, PrimitivePairsMatchClosedForms) {
  std::mt19937_64 rng(10);
  int separated = 0;
  const int n = Cases(500);
  for (int i = 0; i < n; ++i) {
    const RigidTransform X_WA = RandomPose(rng, Vec3::Constant(-0.5), Vec3::Constant(0.5));
    const RigidTransform X_WB = RandomPose(rng, Vec3::Constant(-0.5), Vec3::Constant(0.5));
    CollisionResult c;
    DistanceResult d;
    // Sphere–sphere (off-centre spheres).
    {
      const Sphere a{Vec3(0.1, 0, 0), 0.2}, b{Vec3(0, 0.05, 0), 0.25};
      const double truth = std::max(0.0, (X_WA * a.center - X_WB * b.center).norm() - 0.45);
      PROX_ASSERT_OK_AND_ASSIGN(d, ComputeShapeDistance(a, X_WA, b, X_WB, {}));
      PROX_ASSERT_OK_AND_ASSIGN(c, CollideShapes(a, X_WA, b, X_WB, {}));
      EXPECT_NEAR(d.upper_bound, truth, 1e-12);
      EXPECT_LE(d.lower_bound, truth + 1e-15);
      EXPECT_EQ(c.colliding, truth == 0.0);
      EXPECT_EQ(d.intersecting, truth == 0.0);
      if (c.colliding) {
        EXPECT_EQ(c.contacts[0].triangle_a, -1);
      }
    }
    // Sphere–box.
    {
      const Sphere s{Vec3::Zero(), 0.2};
      const Box b{Vec3(0.3, 0.1, 0.2)};
      const double truth = SphereBoxDistance(X_WB.inverse() * X_WA.p, s.radius, b.half_extents);
      PROX_ASSERT_OK_AND_ASSIGN(d, ComputeShapeDistance(s, X_WA, b, X_WB, {}));
      PROX_ASSERT_OK_AND_ASSIGN(c, CollideShapes(b, X_WB, s, X_WA, {}));
      EXPECT_NEAR(d.upper_bound, truth, 1e-10);
      EXPECT_LE(d.lower_bound, truth + 1e-15);
      EXPECT_EQ(c.colliding, truth == 0.0);
      if (truth > 0.0) {
        ++separated;
        EXPECT_NEAR((d.p_WA - X_WA.p).norm(), s.radius, 1e-9);
        EXPECT_NEAR((d.p_WA - d.p_WB).norm(), d.upper_bound, 1e-12);
      }
    }
    // Capsule–capsule.
    {
      const Capsule a{0.1, 0.3}, b{0.05, 0.2};
      Vec3 cp, cq;
      const double seg = std::sqrt(SegmentSegmentDistanceSquared(X_WA * Vec3(0, 0, -0.3), X_WA * Vec3(0, 0, 0.3),
                                                                 X_WB * Vec3(0, 0, -0.2), X_WB * Vec3(0, 0, 0.2),
                                                                 &cp, &cq));
      const double truth = std::max(0.0, seg - 0.15);
      PROX_ASSERT_OK_AND_ASSIGN(d, ComputeShapeDistance(a, X_WA, b, X_WB, {}));
      PROX_ASSERT_OK_AND_ASSIGN(c, CollideShapes(a, X_WA, b, X_WB, {}));
      EXPECT_NEAR(d.upper_bound, truth, 1e-10);
      EXPECT_LE(d.lower_bound, truth + 1e-15);
      EXPECT_EQ(c.colliding, truth == 0.0);
      if (truth > 0.0) {
        DistanceRequest req;
        req.max_distance = 0.5 * truth;
        PROX_ASSERT_OK_AND_ASSIGN(d, ComputeShapeDistance(a, X_WA, b, X_WB, req));
        EXPECT_TRUE(d.beyond_max_distance);
      }
    }
  }
  EXPECT_GT(separated, n / 5);
}

// Inputs that broke other libraries' GJK (FCL #493, #495, libccd #25, Coal #604, Drake #18704) through
// the primitive queries the scenes use: collision agrees with the distance, the interval holds the closed
// form or the brute-force triangle oracle, and nothing is NaN.
TEST(ShapeQuery, OtherLibrariesFailurePosesGiveTheRightAnswer) {
  const auto rows = [](std::initializer_list<double> v) {
    Mat3 R;
    auto it = v.begin();
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) R(i, j) = *it++;
    return Eigen::Quaterniond(R).normalized().toRotationMatrix();
  };
  struct Case {
    std::string name;
    Shape a, b;
    RigidTransform X_WA, X_WB;
    double truth;  // NaN: take the brute-force triangle distance of two boxes
  };
  const double oracle = std::numeric_limits<double>::quiet_NaN();
  const Mat3 R493 = rows({0.96193976625564348026, 0.15401279915737359216, 0.22572537250328919556,
                          -0.19134171618254486313, 0.96936494951283913579, 0.15401279915737359216,
                          -0.19509032201612822033, -0.19134171618254486313, 0.96193976625564348026});
  const Mat3 R495 = rows({0.94096063217417758029, 0.29296840037289501035, 0.16959541586174811667,
                          -0.23569836841299879326, 0.92661523595848427348, -0.29296840037289506586,
                          -0.2429801799032638987, 0.23569836841299884878, 0.94096063217417758029});
  const Mat3 R604a = rows({0.9999195703, 0.01021849413, 0.007512347878, -0.01021878248, 0.9999477869,
                           -3.329855922e-17, -0.007511955635, -7.676704888e-05, 0.9999717819});
  const Mat3 R604b = rows({0.9998670967, -0.01297708324, 0.009868343982, 0.01297771517, 0.9999157859,
                           5.255670031e-17, -0.009867512928, 0.0001280685574, 0.9999513067});
  const auto at = [](const Vec3& p) { return RigidTransform(Mat3::Identity(), p); };
  // Same-rotation box pairs moved a micrometre apart along their contact axis, so the closed form is
  // the gap: |R^T (p2 - p1)| along that axis minus the half sizes, plus 1e-6.
  const auto apart = [](const Mat3& R, const Vec3& p1, const Vec3& p2, double h) {
    const Vec3 d = R.transpose() * (p2 - p1);
    int axis;
    d.cwiseAbs().maxCoeff(&axis);
    const double shift = 2 * h + 1e-6 - std::abs(d[axis]);
    return p2 + shift * R.col(axis) * (d[axis] > 0 ? 1.0 : -1.0);
  };
  const Vec3 p493(2.0770063995786869349, 0.48468247475641951239, 1.1543291419087275962);
  const Vec3 p495(0.073242100093223821977, 0.2316538089896212349, 1.3089245921032497399);
  const std::vector<Case> cases = {
      {"fcl 493 micrometre apart", Box{Vec3::Constant(0.25)}, Box{Vec3::Constant(0.25)}, RigidTransform(R493, p493),
       RigidTransform(R493, apart(R493, p493, Vec3(2, 0, 1.25), 0.25)), 1e-6},
      {"fcl 495 micrometre apart", Box{Vec3::Constant(0.125)}, Box{Vec3::Constant(0.125)}, RigidTransform(R495, p495),
       RigidTransform(R495, apart(R495, p495, Vec3(0, 0, 1.25), 0.125)), 1e-6},
      {"libccd 25 stacked cubes", Box{Vec3::Ones()}, Box{Vec3::Ones()}, at(Vec3::Zero()), at(Vec3(0, 0, 1.9)), 0.0},
      {"coal 604 rotated boxes", Box{0.5 * Vec3(0.363, 0.277, 0.363)}, Box{0.5 * Vec3(0.363, 0.363, 0.277)},
       RigidTransform(R604a, Vec3(1.503354966, -0.8531707835, 0.7700092418)),
       RigidTransform(R604b, Vec3(1.48838308, -1.102020834, 0.4497073799)), oracle},
      {"sphere on a face", Box{Vec3::Ones()}, Sphere{Vec3::Zero(), 0.5}, at(Vec3::Zero()), at(Vec3(0.3, -0.2, 1.5)), 0.0},
      {"sphere a nanometre off a face", Box{Vec3::Ones()}, Sphere{Vec3::Zero(), 0.5}, at(Vec3::Zero()),
       at(Vec3(0.3, -0.2, 1.5 + 1e-9)), 1e-9},
      {"capsules nearly parallel", Capsule{0.1, 1.0}, Capsule{0.1, 1.0}, at(Vec3::Zero()),
       RigidTransform(Eigen::AngleAxisd(1e-9, Vec3::UnitX()).toRotationMatrix(), Vec3(0.3, 0, 0.25)), 0.1},
      {"tiny box on a huge slab", Box{Vec3(5000, 5000, 1)}, Box{Vec3::Constant(5e-6)}, at(Vec3::Zero()),
       at(Vec3(-2500, 4000, 1 + 5e-6 + 2e-6)), 2e-6},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    double truth = c.truth;
    if (std::isnan(truth)) {
      const Box& a = std::get<Box>(c.a);
      const Box& b = std::get<Box>(c.b);
      truth = testing::BruteForceDistance(MakeBoxMesh(2 * a.half_extents), c.X_WA, MakeBoxMesh(2 * b.half_extents), c.X_WB);
    }
    DistanceResult d;
    CollisionResult col;
    PROX_ASSERT_OK_AND_ASSIGN(d, ComputeShapeDistance(c.a, c.X_WA, c.b, c.X_WB, {}));
    PROX_ASSERT_OK_AND_ASSIGN(col, CollideShapes(c.a, c.X_WA, c.b, c.X_WB, {}));
    EXPECT_TRUE(std::isfinite(d.lower_bound) && std::isfinite(d.upper_bound));
    EXPECT_TRUE(d.p_WA.allFinite() && d.p_WB.allFinite());
    EXPECT_LE(d.lower_bound, truth + 1e-12);
    EXPECT_NEAR(d.upper_bound, truth, 1e-11);
    EXPECT_EQ(col.colliding, truth == 0.0);
    EXPECT_EQ(d.intersecting, col.colliding);
  }
}

}  // namespace
}  // namespace proximity::core
