// Wire to core (convert.cc): poses, primitives (full sizes on the wire, half sizes in the core), convex
// hulls and point clouds, each refusal naming its field; the cloud self filter against a brute-force
// check of every point against every link geometry.
#include "server/convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/test_util.h"
#include "server/service_fixture.h"
#include "proximity/core/scene/geometry.h"

namespace proximity::server {
namespace {

using core::Vec3;
using testing::WirePose;
namespace test = ::proximity::testing;

std::string Packed(const std::vector<Vec3>& points) {
  std::string bytes(points.size() * 12, '\0');
  for (size_t i = 0; i < points.size(); ++i) {
    const float xyz[3] = {static_cast<float>(points[i].x()), static_cast<float>(points[i].y()),
                          static_cast<float>(points[i].z())};
    std::memcpy(bytes.data() + 12 * i, xyz, 12);
  }
  return bytes;
}

void ExpectRefusedNaming(const core::Status& s, const std::string& field) {
  ASSERT_FALSE(s.ok()) << "expected a refusal naming " << field;
  EXPECT_NE(s.error().message.find(field), std::string::npos) << s.error().message;
}

TEST(Convert, PosesRoundTripAndBadOnesAreNamed) {
  const Eigen::Quaterniond q = Eigen::Quaterniond(0.3, -0.5, 0.2, 0.7).normalized();
  const auto X = test::ValueOrFail(ToRigidTransform(WirePose(Vec3(1, -2, 3), q), "object.pose"));
  EXPECT_TRUE(X.R.isApprox(q.toRotationMatrix(), 1e-12));
  EXPECT_EQ(X.p, Vec3(1, -2, 3));
  v1::Pose back;
  ToWire(X, &back);
  EXPECT_TRUE(test::ValueOrFail(ToRigidTransform(back, "back")).R.isApprox(X.R, 1e-12));
  ExpectRefusedNaming(ToRigidTransform(WirePose(Vec3(std::nan(""), 0, 0), q), "object.pose").status(),
                      "object.pose");
  ExpectRefusedNaming(ToRigidTransform(WirePose(Vec3::Zero(), Eigen::Quaterniond(2, 0, 0, 0)), "part.pose").status(),
                      "part.pose");
}

TEST(Convert, PrimitivesTakeFullSizesOnTheWire) {
  v1::Shape box;
  box.mutable_box()->mutable_size()->set_x(0.2);
  box.mutable_box()->mutable_size()->set_y(0.4);
  box.mutable_box()->mutable_size()->set_z(0.6);
  const core::Geometry g = test::ValueOrFail(ToGeometry(box, "parts[0].shape", nullptr));
  ASSERT_TRUE(std::holds_alternative<core::Box>(g.shape));
  EXPECT_EQ(std::get<core::Box>(g.shape).half_extents, Vec3(0.1, 0.2, 0.3));
  v1::Shape cylinder;
  cylinder.mutable_cylinder()->set_radius(0.05);
  cylinder.mutable_cylinder()->set_length(0.5);
  const core::Geometry c = test::ValueOrFail(ToGeometry(cylinder, "s", nullptr));
  EXPECT_EQ(std::get<core::Cylinder>(c.shape).half_length, 0.25);
  box.mutable_box()->mutable_size()->set_y(-1.0);
  ExpectRefusedNaming(ToGeometry(box, "parts[3].shape", nullptr).status(), "parts[3].shape.box.size.y");
  v1::Shape file;
  file.mutable_mesh_file()->set_path("/etc/hostname");
  ExpectRefusedNaming(ToGeometry(file, "parts[1].shape", nullptr).status(), "parts[1].shape");
  v1::Shape empty;
  ExpectRefusedNaming(ToGeometry(empty, "parts[2].shape", nullptr).status(), "parts[2].shape");
}

TEST(Convert, ConvexHullAndCloudFromPackedFloats) {
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  std::vector<Vec3> points(300);
  for (Vec3& p : points) p = Vec3(u(rng), u(rng), u(rng)).cast<float>().cast<double>();
  v1::Shape hull;
  for (const Vec3& p : points) {
    hull.mutable_convex_hull()->add_points(p.x());
    hull.mutable_convex_hull()->add_points(p.y());
    hull.mutable_convex_hull()->add_points(p.z());
  }
  const core::Geometry h = test::ValueOrFail(ToGeometry(hull, "hull", nullptr));
  const core::TriangleMesh hull_mesh = core::ConvexPolytopeMesh(
      *std::get<std::shared_ptr<const core::ConvexPolytope>>(h.shape));
  EXPECT_GT(test::SignedVolume(hull_mesh), 0.0);
  hull.mutable_convex_hull()->add_points(1.0);  // no longer whole triples
  ExpectRefusedNaming(ToGeometry(hull, "hull", nullptr).status(), "hull.convex_hull.points");

  v1::PointCloud cloud;
  cloud.set_points(Packed(points));
  cloud.set_radius(0.01);
  cloud.set_voxel_size(0.0);
  const core::Geometry g = test::ValueOrFail(ToPointCloud(cloud, "cloud", nullptr, nullptr));
  const std::vector<core::Sphere> balls = core::CloudBalls(*g.cloud);
  ASSERT_EQ(balls.size(), points.size());
  std::multiset<std::array<double, 3>> in, out;
  for (const Vec3& p : points) in.insert({p.x(), p.y(), p.z()});
  for (const core::Sphere& b : balls) out.insert({b.center.x(), b.center.y(), b.center.z()});
  EXPECT_EQ(in, out);
  cloud.set_points(cloud.points() + "abc");
  ExpectRefusedNaming(ToPointCloud(cloud, "objects[0].cloud", nullptr, nullptr).status(), "objects[0].cloud.points");
  cloud.set_points(Packed(points));
  cloud.set_self_filter_padding(0.01);
  ExpectRefusedNaming(ToPointCloud(cloud, "objects[0].cloud", nullptr, nullptr).status(), "objects[0].cloud");
}

// The self filter drops exactly the points whose ball comes within the padding of a link geometry at the
// state: checked point by point against the distance to every link's triangles or solid.
TEST(Convert, SelfFilterDropsWhatTouchesTheRobot) {
  auto robot = test::ValueOrFail(core::RobotModel::FromUrdfFile(test::TestDataDir() + "/robots/planar_2link.urdf", ""));
  const std::vector<double> q = {0.4, -0.9};
  const core::RigidTransform X_WB;
  const std::vector<core::RigidTransform> X_WL = test::ValueOrFail(robot->ForwardKinematics(q, X_WB));
  std::mt19937_64 rng(22);
  std::uniform_real_distribution<double> u(-1.6, 1.6), uz(-0.2, 0.4);
  std::uniform_real_distribution<double> along(-0.1, 1.1), across(-0.12, 0.12);
  std::vector<Vec3> points(2000);
  for (size_t i = 0; i < points.size(); ++i) {
    // Half of them anywhere, half near a link (in its frame, along x where the planar arm's links lie).
    const core::RigidTransform& X = X_WL[1 + i % (X_WL.size() - 1)];
    const Vec3 p = i % 2 == 0 ? Vec3(u(rng), u(rng), uz(rng)) : X * Vec3(along(rng), across(rng), across(rng));
    points[i] = p.cast<float>().cast<double>();
  }
  const double radius = 0.01, padding = 0.02;
  v1::PointCloud cloud;
  cloud.set_points(Packed(points));
  cloud.set_radius(radius);
  cloud.set_voxel_size(0.0);
  cloud.set_self_filter_padding(padding);
  for (const double v : q) cloud.add_state(v);
  const CloudContext context{robot.get(), X_WB};
  core::RigidTransform X_WP;
  const core::Geometry g = test::ValueOrFail(ToPointCloud(cloud, "cloud", &context, &X_WP));
  std::multiset<std::array<double, 3>> kept;
  for (const core::Sphere& b : core::CloudBalls(*g.cloud)) kept.insert({b.center.x(), b.center.y(), b.center.z()});
  int dropped = 0, boundary = 0;
  for (const Vec3& p : points) {
    double nearest = std::numeric_limits<double>::infinity();
    for (int32_t l = 0; l < robot->num_links(); ++l) {
      for (const core::LinkGeometry& lg : robot->link(l).geometries) {
        const core::RigidTransform X_WG = X_WL[static_cast<size_t>(l)] * lg.X_LG;
        const Vec3 p_G = X_WG.R.transpose() * (p - X_WG.p);
        double d = std::numeric_limits<double>::infinity();
        if (lg.type == core::ShapeType::kBox) d = (p_G.cwiseAbs() - 0.5 * lg.box_size).cwiseMax(0.0).norm();
        if (lg.type == core::ShapeType::kSphere) d = std::max(0.0, p_G.norm() - lg.radius);
        if (lg.type == core::ShapeType::kCylinder) {
          const double radial = std::max(0.0, p_G.head<2>().norm() - lg.radius);
          const double axial = std::max(0.0, std::abs(p_G.z()) - 0.5 * lg.length);
          d = std::hypot(radial, axial);
        }
        if (lg.type == core::ShapeType::kMesh) d = test::PointMeshDistance(p, core::MeshOf(*lg.mesh), X_WG);
        nearest = std::min(nearest, d);
      }
    }
    if (std::abs(nearest - (radius + padding)) < 1e-9) {
      ++boundary;
      continue;
    }
    const bool drop = nearest < radius + padding;
    EXPECT_EQ(kept.count({p.x(), p.y(), p.z()}) == 0, drop) << p.transpose() << " at " << nearest;
    dropped += drop;
  }
  EXPECT_GT(dropped, 100);
  EXPECT_LT(dropped + boundary, static_cast<int>(points.size()) - 500);
}

}  // namespace
}  // namespace proximity::server
