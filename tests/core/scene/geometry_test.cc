// The installed geometry API (geometry.h): what a user builds meshes, polytopes and clouds with and reads
// them back through, against what went in and against brute force.
#include "proximity/core/scene/geometry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "core/test_util.h"
#include "proximity/core/robot/robot_model.h"

namespace proximity::core {
namespace {

using testing::ValueOrFail;

// Distance from p to the solid box {|x_i| <= h_i} posed at X_WB.
double PointBoxDistance(const Vec3& p_W, const Vec3& h, const RigidTransform& X_WB) {
  const Vec3 p_B = X_WB.R.transpose() * (p_W - X_WB.p);
  return (p_B.cwiseAbs() - h).cwiseMax(0.0).norm();
}

// The result is an error whose message names `word`.
template <class T>
void ExpectErrorNaming(const Result<T>& result, const std::string& word) {
  ASSERT_FALSE(result.ok()) << "expected an error naming " << word;
  EXPECT_NE(result.error().message.find(word), std::string::npos) << result.error().message;
}

std::vector<Vec3> RandomPoints(std::mt19937_64& rng, int n, double extent) {
  std::uniform_real_distribution<double> u(-extent, extent);
  std::vector<Vec3> points(static_cast<size_t>(n));
  for (Vec3& p : points) p = Vec3(u(rng), u(rng), u(rng));
  return points;
}

TEST(Geometry, BuiltMeshGivesBackItsTriangles) {
  const TriangleMesh torus = MakeTorusMesh(0.3, 0.1, 24, 12);
  const std::shared_ptr<const MeshModel> model = ValueOrFail(BuildMeshModel(torus, "torus"));
  EXPECT_EQ(testing::Soup(MeshOf(*model)), testing::Soup(torus));
  Geometry g;
  g.mesh = model;
  const size_t mesh_only = MemoryBytes(g);
  EXPECT_GT(mesh_only, torus.triangles.size() * sizeof(torus.triangles[0]));
  g.hull = ValueOrFail(BuildConvexPolytope(torus.vertices));
  EXPECT_GT(MemoryBytes(g), mesh_only);
  EXPECT_EQ(MemoryBytes(Geometry::Primitive(Box{Vec3(1, 1, 1)})), 0u);

  TriangleMesh broken = torus;
  broken.vertices[3].y() = std::nan("");
  ExpectErrorNaming(BuildMeshModel(broken, "link 'wrist'"), "link 'wrist'");
}

TEST(Geometry, LinkGeometryTakesHalfSizesAndWhatTheLoadFound) {
  LinkGeometry box;
  box.type = ShapeType::kBox;
  box.box_size = Vec3(0.2, 0.4, 0.6);
  EXPECT_EQ(std::get<Box>(FromLinkGeometry(box).shape).half_extents, Vec3(0.1, 0.2, 0.3));
  LinkGeometry cylinder;
  cylinder.type = ShapeType::kCylinder;
  cylinder.radius = 0.05;
  cylinder.length = 0.5;
  const Cylinder c = std::get<Cylinder>(FromLinkGeometry(cylinder).shape);
  EXPECT_EQ(c.radius, 0.05);
  EXPECT_EQ(c.half_length, 0.25);
  LinkGeometry mesh;
  mesh.type = ShapeType::kMesh;
  mesh.mesh = ValueOrFail(BuildMeshModel(MakeBoxMesh(Vec3(1, 1, 1))));
  mesh.hull = ValueOrFail(BuildConvexPolytope(MeshOf(*mesh.mesh).vertices));
  mesh.hull_is_surface = true;
  mesh.hull_surface_gap = 1e-6;
  const Geometry g = FromLinkGeometry(mesh);
  EXPECT_EQ(g.mesh, mesh.mesh);
  EXPECT_EQ(g.hull, mesh.hull);
  EXPECT_TRUE(g.hull_is_surface);
  EXPECT_EQ(g.hull_surface_gap, 1e-6);
}

TEST(Geometry, ConvexPolytopeMeshIsTheHull) {
  std::mt19937_64 rng(11);
  const std::vector<Vec3> points = RandomPoints(rng, 200, 1.0);
  const auto hull = ValueOrFail(BuildConvexPolytope(points, "cloud of 200"));
  const TriangleMesh m = ConvexPolytopeMesh(*hull);
  ASSERT_GE(m.triangles.size(), 4u);
  // Closed and outward: its signed volume is positive, every input point lies behind every face, and
  // every hull vertex is an input point.
  EXPECT_GT(testing::SignedVolume(m), 0.0);
  for (const auto& t : m.triangles) {
    const Vec3 a = m.vertices[t[0]], b = m.vertices[t[1]], c = m.vertices[t[2]];
    const Vec3 n = (b - a).cross(c - a).normalized();
    for (const Vec3& p : points) EXPECT_LE(n.dot(p - a), 1e-9);
  }
  for (const Vec3& v : m.vertices) {
    EXPECT_TRUE(std::any_of(points.begin(), points.end(), [&](const Vec3& p) { return (p - v).norm() == 0.0; }));
  }
  const std::vector<Vec3> flat = {Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0), Vec3(1, 1, 0)};
  ExpectErrorNaming(BuildConvexPolytope(flat, "a square"), "a square");
}

TEST(Geometry, CloudBallsAreThePointsKept) {
  std::mt19937_64 rng(12);
  const std::vector<Vec3> points = RandomPoints(rng, 500, 0.5);
  PointCloudOptions keep_all;
  keep_all.voxel_size = 0.0;
  const auto cloud = ValueOrFail(BuildPointCloud(points, 0.01, keep_all));
  const std::vector<Sphere> balls = CloudBalls(*cloud);
  ASSERT_EQ(balls.size(), points.size());
  std::multiset<std::array<double, 3>> in, out;
  for (const Vec3& p : points) in.insert({p.x(), p.y(), p.z()});
  for (const Sphere& b : balls) {
    out.insert({b.center.x(), b.center.y(), b.center.z()});
    EXPECT_EQ(b.radius, 0.01);
  }
  EXPECT_EQ(in, out) << "without a filter, the balls are the points, reordered";
  EXPECT_EQ(CloudBuildStats(*cloud).points, 500);
  // A capped list takes the balls evenly through the same order.
  const std::vector<Sphere> some = CloudBalls(*cloud, 64);
  ASSERT_EQ(some.size(), 64u);
  for (size_t k = 0; k < some.size(); ++k) EXPECT_EQ(some[k].center, balls[k * balls.size() / some.size()].center);
  EXPECT_TRUE(CloudBalls(*cloud, 0).empty());
  EXPECT_EQ(CloudBalls(*cloud, 10000).size(), balls.size());
  EXPECT_EQ(CloudBuildStats(*cloud).input_points, 500);

  // With the default filter (voxels of the radius) fewer balls, grown to cover every input point.
  const auto filtered = ValueOrFail(BuildPointCloud(points, 0.2));
  const std::vector<Sphere> kept = CloudBalls(*filtered);
  EXPECT_LT(kept.size(), points.size());
  EXPECT_EQ(CloudBuildStats(*filtered).points, static_cast<int64_t>(kept.size()));
  for (const Vec3& p : points) {
    EXPECT_TRUE(std::any_of(kept.begin(), kept.end(), [&](const Sphere& b) {
      return (p - b.center).norm() + 0.2 <= b.radius + 1e-12;
    })) << "a filtered cloud's balls hold every input ball";
  }
  Geometry g = Geometry::Cloud(filtered);
  EXPECT_GT(MemoryBytes(g), kept.size() * sizeof(Vec3));

  const std::vector<Vec3> nan_point = {Vec3(0, std::nan(""), 0)};
  ExpectErrorNaming(BuildPointCloud(nan_point, 0.01, {}, "camera 2"), "camera 2");
}

// CloudPointsNear against brute force: a ball is near when its centre is within radius + padding of the
// geometry (a box's solid, a mesh's surface), at random poses and paddings.
TEST(Geometry, CloudPointsNearMatchesBruteForce) {
  std::mt19937_64 rng(13);
  const Vec3 h(0.2, 0.1, 0.15);
  const Geometry box = Geometry::Primitive(Box{h});
  const TriangleMesh torus = MakeTorusMesh(0.25, 0.08, 24, 12);
  Geometry mesh;
  mesh.mesh = ValueOrFail(BuildMeshModel(torus));
  PointCloudOptions keep_all;
  keep_all.voxel_size = 0.0;
  int near_total = 0, far_total = 0;
  for (int round = 0; round < testing::Cases(20); ++round) {
    const auto cloud = ValueOrFail(BuildPointCloud(RandomPoints(rng, 400, 0.5), 0.01, keep_all));
    const std::vector<Sphere> balls = CloudBalls(*cloud);
    const RigidTransform X_WC = testing::RandomPose(rng, Vec3::Constant(-0.05), Vec3::Constant(0.05));
    const RigidTransform X_WG = testing::RandomPose(rng, Vec3::Constant(-0.05), Vec3::Constant(0.05));
    const double padding = std::uniform_real_distribution<double>(0.0, 0.05)(rng);
    for (const bool is_mesh : {false, true}) {
      const std::vector<int32_t> found = ValueOrFail(CloudPointsNear(is_mesh ? mesh : box, X_WG, *cloud, X_WC, padding));
      const std::set<int32_t> near(found.begin(), found.end());
      EXPECT_EQ(near.size(), found.size()) << "each point once";
      for (size_t i = 0; i < balls.size(); ++i) {
        const Vec3 c_W = X_WC * balls[i].center;
        const double d = is_mesh ? testing::PointMeshDistance(c_W, torus, X_WG) : PointBoxDistance(c_W, h, X_WG);
        const double reach = balls[i].radius + padding;
        if (std::abs(d - reach) < 1e-9) continue;  // on the boundary: either answer is right
        EXPECT_EQ(near.count(static_cast<int32_t>(i)) == 1, d < reach)
            << (is_mesh ? "torus" : "box") << " point " << i << " at " << d << ", reach " << reach;
        (d < reach ? near_total : far_total) += 1;
      }
    }
  }
  EXPECT_GT(near_total, 100);
  EXPECT_GT(far_total, 100);
}

TEST(Geometry, CloudPointsNearRefusesBadInput) {
  const auto cloud = ValueOrFail(BuildPointCloud(std::vector<Vec3>{Vec3::Zero()}, 0.01));
  const Geometry box = Geometry::Primitive(Box{Vec3(0.1, 0.1, 0.1)});
  RigidTransform nan_pose;
  nan_pose.p.x() = std::nan("");
  EXPECT_FALSE(CloudPointsNear(Geometry::Cloud(cloud), RigidTransform(), *cloud, RigidTransform(), 0.0).ok());
  EXPECT_FALSE(CloudPointsNear(box, nan_pose, *cloud, RigidTransform(), 0.0).ok());
  EXPECT_FALSE(CloudPointsNear(box, RigidTransform(), *cloud, nan_pose, 0.0).ok());
  EXPECT_FALSE(CloudPointsNear(box, RigidTransform(), *cloud, RigidTransform(), -0.1).ok());
  EXPECT_FALSE(CloudPointsNear(Geometry::Primitive(Box{Vec3(-1, 1, 1)}), RigidTransform(), *cloud, RigidTransform(), 0.0).ok());
  const std::vector<int32_t> inside = ValueOrFail(CloudPointsNear(box, RigidTransform(), *cloud, RigidTransform(), 0.0));
  EXPECT_EQ(inside, std::vector<int32_t>{0});
}

// CollideGeometry with every contact: the triangle pairs that touch, as brute force finds them.
TEST(Geometry, CollideGeometryReportsEveryContact) {
  const TriangleMesh a = MakeBoxMesh(Vec3(0.4, 0.4, 0.4)), b = MakeIcosphereMesh(0.25, 1);
  Geometry ga, gb;
  ga.mesh = ValueOrFail(BuildMeshModel(a));
  gb.mesh = ValueOrFail(BuildMeshModel(b));
  RigidTransform X_b;
  X_b.p = Vec3(0.3, 0.05, 0.0);
  CollisionRequest every;
  every.all_contacts = true;
  const CollisionResult first = ValueOrFail(CollideGeometry(ga, RigidTransform(), gb, X_b));
  const CollisionResult all = ValueOrFail(CollideGeometry(ga, RigidTransform(), gb, X_b, every));
  ASSERT_TRUE(first.colliding);
  EXPECT_EQ(first.contacts.size(), 1u);
  int expected = 0;
  for (size_t i = 0; i < a.triangles.size(); ++i) {
    for (size_t j = 0; j < b.triangles.size(); ++j) {
      TriangleMesh ta, tb;
      ta.vertices = {a.vertices[a.triangles[i][0]], a.vertices[a.triangles[i][1]], a.vertices[a.triangles[i][2]]};
      ta.triangles = {{0, 1, 2}};
      tb.vertices = {b.vertices[b.triangles[j][0]], b.vertices[b.triangles[j][1]], b.vertices[b.triangles[j][2]]};
      tb.triangles = {{0, 1, 2}};
      expected += testing::BruteForceCollide(ta, RigidTransform(), tb, X_b);
    }
  }
  EXPECT_GT(expected, 1);
  EXPECT_EQ(static_cast<int>(all.contacts.size()), expected);
}

}  // namespace
}  // namespace proximity::core
