#include "bvh/bvh.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/test_util.h"

namespace proximity::core {
namespace {

bool InsideObb(const Obb& box, const Vec3& p) {
  const Vec3 q = box.R_MB.transpose() * (p - box.center);
  return (q.cwiseAbs().array() <= box.half_extents.array()).all();
}

// Walks the whole tree and checks every structural and containment invariant.
void CheckInvariants(const MeshModel& m, int32_t max_leaf) {
  std::vector<int32_t> seen(m.num_triangles(), 0);
  int32_t leaves = 0;
  struct Item {
    int32_t node;
    std::vector<int32_t> ancestors;
  };
  std::vector<Item> stack{{0, {}}};
  while (!stack.empty()) {
    Item it = std::move(stack.back());
    stack.pop_back();
    const BvhNode& n = m.node(it.node);
    it.ancestors.push_back(it.node);
    if (n.is_leaf()) {
      ++leaves;
      ASSERT_LE(n.count, max_leaf);
      for (int32_t k = n.first; k < n.first + n.count; ++k) {
        ASSERT_GE(k, 0);
        ASSERT_LT(k, m.num_triangles());
        ++seen[k];
        const auto& tri = m.mesh().triangles[m.triangle_id(k)];
        for (int i = 0; i < 3; ++i) {
          const Vec3& v = m.mesh().vertices[tri[i]];
          EXPECT_EQ(m.leaf_triangle(k).v[i], v);
          for (int32_t a : it.ancestors) {
            EXPECT_LE((v - m.sphere(a).center).norm(), m.sphere(a).radius) << "node " << a;
            EXPECT_TRUE(InsideObb(m.obb(a), v)) << "node " << a;
          }
          // The triangle's plane: a unit normal (zero only for a degenerate triangle) whose span
          // holds the vertex.
          const LeafPlane& plane = m.leaf_planes()[k];
          const double along = plane.n.dot(v), tol = 1e-12 * (1.0 + v.norm());
          EXPECT_GE(along, plane.low - tol) << "leaf triangle " << k;
          EXPECT_LE(along, plane.high + tol) << "leaf triangle " << k;
        }
        const LeafTriangle& t = m.leaf_triangle(k);
        const Vec3 c = (t.v[1] - t.v[0]).cross(t.v[2] - t.v[0]);
        const LeafPlane& plane = m.leaf_planes()[k];
        if (c.norm() > 0.0) {
          EXPECT_NEAR(plane.n.norm(), 1.0, 1e-12) << "leaf triangle " << k;
          EXPECT_NEAR(plane.n.dot(c), c.norm(), 1e-9 * c.norm()) << "leaf triangle " << k;
          EXPECT_LE(plane.high - plane.low, 1e-9 * (1.0 + t.v[0].norm())) << "leaf triangle " << k;
        } else {
          EXPECT_EQ(plane.n, Vec3::Zero()) << "leaf triangle " << k;
        }
      }
    } else {
      ASSERT_GT(n.first, it.node);
      ASSERT_LT(n.first + 1, m.num_nodes());
      stack.push_back({n.first, it.ancestors});
      stack.push_back({n.first + 1, it.ancestors});
    }
  }
  for (int32_t k = 0; k < m.num_triangles(); ++k) EXPECT_EQ(seen[k], 1) << "leaf triangle " << k;
  EXPECT_EQ(m.num_nodes(), 2 * leaves - 1);
  std::set<int32_t> ids;
  for (int32_t k = 0; k < m.num_triangles(); ++k) ids.insert(m.triangle_id(k));
  EXPECT_EQ(static_cast<int32_t>(ids.size()), m.num_triangles());
}

class BvhBuild : public ::testing::TestWithParam<std::tuple<SplitRule, int32_t>> {};

TEST_P(BvhBuild, InvariantsHoldOnProceduralMeshes) {
  const auto [rule, leaf] = GetParam();
  BvhBuildOptions opt;
  opt.split = rule;
  opt.max_leaf_triangles = leaf;
  for (const TriangleMesh& mesh : {MakeBoxMesh(Vec3(1, 2, 3)), MakeIcosphereMesh(1.0, 3),
                                   MakeTorusMesh(1.0, 0.2, 48, 16), MakeCylinderMesh(0.1, 2.0, 40)}) {
    auto built = MeshModel::Build(mesh, opt);
    ASSERT_TRUE(built.ok()) << built.error().message;
    const MeshModel& m = *built.value();
    CheckInvariants(m, leaf);
    // Balanced enough: the median rule halves, the surface-area rule stays within a few times that.
    const double ideal = std::ceil(std::log2(std::max(1.0, double(m.num_triangles()) / leaf)));
    EXPECT_LE(m.depth(), rule == SplitRule::kMedian ? ideal + 1 : 4 * ideal + 4);
  }
}

TEST_P(BvhBuild, InvariantsHoldOnRealMeshes) {
  const std::string data = testing::SharedDataDir();
  PROX_REQUIRE_DIR(data, "../shared/data");
  const auto [rule, leaf] = GetParam();
  BvhBuildOptions opt;
  opt.split = rule;
  opt.max_leaf_triangles = leaf;
  for (const char* rel : {"/scenes/fcl/env.obj", "/robots/mbm_panda/meshes/collision/link6.obj"}) {
    auto built = MeshModel::Build(testing::LoadMeshOrDie(data + rel), opt, rel);
    ASSERT_TRUE(built.ok()) << built.error().message;
    CheckInvariants(*built.value(), leaf);
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, BvhBuild,
                         ::testing::Combine(::testing::Values(SplitRule::kMedian, SplitRule::kSurfaceArea),
                                            ::testing::Values(1, 4)));

TEST(BvhBuild, SingleTriangle) {
  TriangleMesh m;
  m.vertices = {Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0)};
  m.triangles = {{0, 1, 2}};
  auto built = MeshModel::Build(m);
  ASSERT_TRUE(built.ok());
  EXPECT_EQ(built.value()->num_nodes(), 1);
  EXPECT_TRUE(built.value()->node(0).is_leaf());
}

TEST(BvhBuild, RejectsBadInput) {
  TriangleMesh empty;
  auto r = MeshModel::Build(empty, {}, "empty.stl");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("empty.stl"), std::string::npos);

  TriangleMesh bad_index = MakeBoxMesh(Vec3::Ones());
  bad_index.triangles[3][1] = 99;
  r = MeshModel::Build(bad_index);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("triangle 3"), std::string::npos) << r.error().message;

  TriangleMesh nan = MakeBoxMesh(Vec3::Ones());
  nan.vertices[2].y() = std::nan("");
  r = MeshModel::Build(nan);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("vertex 2"), std::string::npos) << r.error().message;

  BvhBuildOptions opt;
  opt.max_leaf_triangles = 0;
  r = MeshModel::Build(MakeBoxMesh(Vec3::Ones()), opt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("max_leaf_triangles"), std::string::npos);
}

}  // namespace
}  // namespace proximity::core
