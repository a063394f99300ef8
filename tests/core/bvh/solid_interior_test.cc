// Balls proven inside closed meshes (solid_interior.cc): every ball is checked by an oracle of this
// file's own (a winding number summed from the triangles' solid angles, and the distance from the centre
// to every triangle), and against the solids' closed forms; the groups partition the balls; meshes that
// are open, flat or tiny get none.
#include "bvh/solid_interior.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numbers>
#include <vector>

#include "core/test_util.h"

namespace proximity::core {
namespace {

using testing::ValueOrFail;

// The winding number of `mesh` about p: the sum of its triangles' signed solid angles over 4 pi
// (Van Oosterom and Strackee), an integer for a closed, consistently oriented mesh.
double WindingNumber(const TriangleMesh& mesh, const Vec3& p) {
  double sum = 0.0;
  for (const auto& t : mesh.triangles) {
    const Vec3 a = mesh.vertices[t[0]] - p, b = mesh.vertices[t[1]] - p, c = mesh.vertices[t[2]] - p;
    const double la = a.norm(), lb = b.norm(), lc = c.norm();
    const double num = a.dot(b.cross(c));
    const double den = la * lb * lc + a.dot(b) * lc + b.dot(c) * la + c.dot(a) * lb;
    sum += 2.0 * std::atan2(num, den);
  }
  return sum / (4.0 * std::numbers::pi);
}

// The connected parts of `mesh` (triangles sharing vertices), each as a mesh of its own.
std::vector<TriangleMesh> Parts(const TriangleMesh& mesh) {
  std::vector<int32_t> root(mesh.vertices.size());
  for (size_t i = 0; i < root.size(); ++i) root[i] = static_cast<int32_t>(i);
  const auto find = [&](int32_t v) {
    while (root[static_cast<size_t>(v)] != v) v = root[static_cast<size_t>(v)] = root[static_cast<size_t>(root[static_cast<size_t>(v)])];
    return v;
  };
  for (const auto& t : mesh.triangles) {
    root[static_cast<size_t>(find(t[1]))] = find(t[0]);
    root[static_cast<size_t>(find(t[2]))] = find(t[0]);
  }
  std::map<int32_t, TriangleMesh> parts;
  for (const auto& t : mesh.triangles) {
    TriangleMesh& part = parts[find(t[0])];
    part.vertices = mesh.vertices;  // indices kept; unused vertices do not count in either oracle
    part.triangles.push_back(t);
  }
  std::vector<TriangleMesh> out;
  for (auto& [r, part] : parts) out.push_back(std::move(part));
  return out;
}

std::shared_ptr<const SolidInterior> Interior(const TriangleMesh& mesh) {
  const auto model = ValueOrFail(MeshModel::Build(mesh));
  return FindSolidInterior(*model, ValueOrFail(ConvexPolytope::Build(mesh)));
}

// Every ball lies inside one connected part of the mesh: that part winds around its centre (winding
// number a non-zero integer) and none of its triangles comes closer than the radius (other parts may
// cross the ball: the proof needs the part alone). The groups hold their balls, in order, and cover them.
void ExpectProvenBalls(const TriangleMesh& mesh, const SolidInterior& in) {
  ASSERT_FALSE(in.balls.empty());
  EXPECT_LE(in.balls.size(), kMaxInteriorBalls);
  const std::vector<TriangleMesh> parts = Parts(mesh);
  for (const InteriorBall& b : in.balls) {
    EXPECT_GT(b.radius, 0.0);
    bool inside_a_part = false;
    for (const TriangleMesh& part : parts) {
      const double w = WindingNumber(part, b.center);
      inside_a_part |= std::abs(w - std::round(w)) < 1e-6 && std::abs(std::round(w)) >= 1.0 &&
                       testing::PointMeshDistance(b.center, part, RigidTransform()) >= b.radius * (1.0 - 1e-9);
    }
    EXPECT_TRUE(inside_a_part) << b.center.transpose() << " r " << b.radius;
    ASSERT_GE(b.part, 0);
    ASSERT_LT(b.part, static_cast<int32_t>(in.part_hulls.size()));
  }
  EXPECT_LE(in.groups.size(), kInteriorBallGroups);
  int32_t next = 0;
  for (const InteriorBallGroup& g : in.groups) {
    EXPECT_EQ(g.begin, next);
    EXPECT_LT(g.begin, g.end);
    for (int32_t i = g.begin; i < g.end; ++i) {
      EXPECT_LE((in.balls[i].center - g.center).norm() + in.balls[i].radius, g.radius * (1.0 + 1e-12));
    }
    next = g.end;
  }
  EXPECT_EQ(next, static_cast<int32_t>(in.balls.size()));
}

TEST(SolidInterior, TorusBallsStayInItsTube) {
  const TriangleMesh torus = MakeTorusMesh(0.2, 0.05, 32, 16);
  const auto in = Interior(torus);
  ASSERT_NE(in, nullptr);
  ExpectProvenBalls(torus, *in);
  // Within the round tube (the polygonal tube lies inside it).
  for (const InteriorBall& b : in->balls) {
    EXPECT_LE(std::hypot(b.center.head<2>().norm() - 0.2, b.center.z()) + b.radius, 0.05) << b.center.transpose();
  }
  EXPECT_GE(in->balls.size(), 8u);
  EXPECT_EQ(in->part_hulls.size(), 1u);
}

TEST(SolidInterior, CrossedBoxesGetBallsInEachPart) {
  const TriangleMesh cross = testing::CrossedBoxesMesh();
  const auto in = Interior(cross);
  ASSERT_NE(in, nullptr);
  ExpectProvenBalls(cross, *in);
  EXPECT_EQ(in->part_hulls.size(), 2u);
  std::vector<int> per_part(in->part_hulls.size(), 0);
  for (const InteriorBall& b : in->balls) {
    const Vec3 d = b.center.cwiseAbs() + Vec3::Constant(b.radius);
    EXPECT_TRUE((d.array() <= Vec3(0.15, 0.04, 0.04).array() + 1e-12).all() ||
                (d.array() <= Vec3(0.035, 0.035, 0.15).array() + 1e-12).all())
        << b.center.transpose() << " r " << b.radius;
    ++per_part[static_cast<size_t>(b.part)];
  }
  for (const int n : per_part) EXPECT_GT(n, 0);
}

TEST(SolidInterior, OpenFlatAndTinyMeshesGetNone) {
  TriangleMesh open = MakeTorusMesh(0.2, 0.05, 32, 16);
  open.triangles.pop_back();
  EXPECT_EQ(Interior(open), nullptr) << "an open mesh";
  TriangleMesh flipped = MakeTorusMesh(0.2, 0.05, 32, 16);
  std::swap(flipped.triangles[5][1], flipped.triangles[5][2]);
  EXPECT_EQ(Interior(flipped), nullptr) << "one triangle turned the other way";
  EXPECT_EQ(Interior(MakeBoxMesh(Vec3(0.1, 0.2, 0.3))), nullptr) << "12 triangles: the walk is as cheap";
  EXPECT_NE(Interior(testing::Subdivided(testing::Subdivided(MakeBoxMesh(Vec3(0.1, 0.2, 0.3))))), nullptr)
      << "the same box subdivided to 192 triangles";
}

}  // namespace
}  // namespace proximity::core
