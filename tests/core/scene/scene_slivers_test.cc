// Far and sliver triangles: a triangle whose height is at the rounding level of its longest edge is a
// line segment, and a segment can run through a link. Mesh cleaning used to drop such triangles as
// "zero area" before the scene's extent check saw them, so a world mesh or a link mesh with one vertex at
// 1e15 m answered "free" through the link (issue: hardening, second round). Here CLEAR is checked against
// a brute-force oracle that keeps every triangle as it was given, on random meshes full of slivers and
// collapsed triangles, and far vertices are refused whatever their triangle's shape.

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "bvh/bvh.h"
#include "proximity/core/mesh/mesh.h"
#include "proximity/core/robot/robot_model.h"
#include "proximity/core/scene/scene.h"

namespace proximity::core {
namespace {

std::shared_ptr<const MeshModel> Model(const TriangleMesh& raw) {
  auto cleaned = MakeTriangleMesh(raw.vertices, raw.triangles);
  EXPECT_TRUE(cleaned.ok()) << cleaned.error().message;
  if (!cleaned.ok()) return nullptr;
  auto model = MeshModel::Build(std::move(cleaned).value(), {}, "probe");
  EXPECT_TRUE(model.ok()) << model.error().message;
  return model.ok() ? model.value() : nullptr;
}

WorldObject MeshObject(const std::string& id, std::shared_ptr<const MeshModel> model) {
  WorldObject o;
  o.id = id;
  ObjectPart part;
  part.geometry.mesh = std::move(model);
  o.parts.push_back(part);
  return o;
}

// A unit vector perpendicular to d.
Vec3 Perpendicular(const Vec3& d) {
  const Vec3 a = std::abs(d.x()) < 0.9 ? Vec3::UnitX() : Vec3::UnitY();
  return d.cross(a).normalized();
}

// A world mesh of `count` triangles in the box [-reach, reach]^2 x [0, reach]: a third are ordinary
// triangles, a third slivers (two far-apart corners and a third on the segment between them, off it by
// 1e-16 of its length: zero area to mesh cleaning), a third collapsed (two corners at the same point,
// as separate vertices with equal coordinates or as one repeated index).
TriangleMesh RandomSliverMesh(std::mt19937_64& rng, double reach, int count) {
  std::uniform_real_distribution<double> xy(-reach, reach), z(0.0, reach), u(0.2, 0.8), small(-0.05, 0.05);
  TriangleMesh m;
  auto add = [&](const Vec3& p) {
    m.vertices.push_back(p);
    return static_cast<int32_t>(m.vertices.size() - 1);
  };
  for (int i = 0; i < count; ++i) {
    const Vec3 a(xy(rng), xy(rng), z(rng)), b(xy(rng), xy(rng), z(rng));
    switch (i % 3) {
      case 0: {
        const Vec3 c = a + Vec3(small(rng), small(rng), small(rng)) * 4;
        m.triangles.push_back({add(a), add(b), add(c)});
        break;
      }
      case 1: {
        const Vec3 c = a + u(rng) * (b - a) + 1e-16 * (b - a).norm() * Perpendicular(b - a);
        m.triangles.push_back({add(a), add(c), add(b)});
        break;
      }
      default: {
        const int32_t ia = add(a), ib = add(b);
        if (i % 2 == 0) {
          m.triangles.push_back({ia, add(a), ib});
        } else {
          m.triangles.push_back({ia, ia, ib});
        }
        break;
      }
    }
  }
  return m;
}

// Whether any collision mesh of the robot at q touches any triangle of `world` as given (every triangle
// kept, degenerate ones as what they are). Links without meshes are left out; the robots here have
// meshes only.
bool OracleWorldContact(const RobotModel& robot, const std::vector<double>& q, const TriangleMesh& world) {
  const std::vector<RigidTransform> X_WL = testing::ValueOrFail(robot.ForwardKinematics(q));
  for (size_t l = 0; l < robot.links().size(); ++l) {
    for (const LinkGeometry& lg : robot.links()[l].geometries) {
      if (lg.type != ShapeType::kMesh || lg.mesh == nullptr) continue;
      if (testing::BruteForceCollide(lg.mesh->mesh(), X_WL[l] * lg.X_LG, world, RigidTransform())) return true;
    }
  }
  return false;
}

bool MeshesOnly(const RobotModel& robot) {
  for (const Link& link : robot.links()) {
    for (const LinkGeometry& lg : link.geometries) {
      if (lg.type != ShapeType::kMesh) return false;
    }
  }
  return true;
}

TEST(SceneSlivers, MeshCleaningKeepsEverySliverThatIsNotAnEdgeOfAnotherTriangle) {
  // A sliver along an edge of a real triangle adds nothing and goes; a lone sliver and a lone collapsed
  // triangle stay as segments.
  TriangleMesh m;
  m.vertices = {Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0), Vec3(0.5, 1e-17, 0),  // a sliver on edge 0-1
                Vec3(0, 0, 1), Vec3(3, 0, 1), Vec3(1.5, 1e-17, 1),                   // a lone sliver
                Vec3(0, 2, 0), Vec3(0, 2, 0), Vec3(2, 2, 0)};                        // a lone collapsed one
  m.triangles = {{0, 1, 2}, {0, 3, 1}, {4, 6, 5}, {7, 8, 9}};
  MeshLoadReport report;
  auto cleaned = MakeTriangleMesh(m.vertices, m.triangles, 0.0, &report);
  ASSERT_TRUE(cleaned.ok()) << cleaned.error().message;
  EXPECT_EQ(cleaned.value().triangles.size(), 3u);
  EXPECT_EQ(report.removed_degenerate, 1);
  EXPECT_EQ(report.kept_degenerate, 2);
  EXPECT_EQ(CountDegenerateTriangles(cleaned.value()), 2);
  // The lone sliver still collides with a segment-crossing triangle at x = 2.
  TriangleMesh probe;
  probe.vertices = {Vec3(2, -1, 0.5), Vec3(2, 1, 0.5), Vec3(2, 0, 1.5)};
  probe.triangles = {{0, 1, 2}};
  EXPECT_TRUE(testing::BruteForceCollide(cleaned.value(), RigidTransform(), probe, RigidTransform()));
  // A mesh with no triangle of any area is still refused.
  TriangleMesh flat;
  flat.vertices = {Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0.5, 1e-17, 0)};
  flat.triangles = {{0, 1, 2}};
  auto refused = MakeTriangleMesh(flat.vertices, flat.triangles);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("zero area"), std::string::npos) << refused.error().message;
}

TEST(SceneSlivers, AFarVertexIsRefusedWhateverItsTriangleLooksLike) {
  const std::vector<RobotCase> robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "no robot data (../shared or dart-doc)";
  SceneDescription d;
  d.robot = LoadRobot(robots.back());
  ASSERT_NE(d.robot, nullptr);
  // A triangle from (-1, 0, 0.4) to (1, 0, 0.4) through the arm's reach, whose third corner lies at 1e15 m
  // or 1e30 m: its height over its longest edge is far below the zero-area threshold, and before the fix
  // it was dropped, the extent check never fired, and states through it answered free.
  for (const double far : {1e6, 1e15, 1e30}) {
    TriangleMesh m;
    m.vertices = {Vec3(-1, 0, 0.4), Vec3(1, 0, 0.4), Vec3(far, 0.5, 0.4),
                  Vec3(3, 3, 0), Vec3(3.2, 3, 0), Vec3(3, 3.2, 0)};  // and an ordinary triangle far off
    m.triangles = {{0, 1, 2}, {0, 2, 1}, {3, 4, 5}};
    auto model = Model(m);
    ASSERT_NE(model, nullptr) << far;
    SceneDescription e = d;
    e.objects.push_back(MeshObject("far_probe", model));
    auto built = Scene::Build(e);
    ASSERT_FALSE(built.ok()) << "a vertex at " << far << " m was accepted";
    EXPECT_NE(built.error().message.find("far_probe"), std::string::npos) << built.error().message;
    EXPECT_NE(built.error().message.find("extent"), std::string::npos) << built.error().message;
  }
  // The same through a link: a URDF whose link mesh (an uploaded OBJ) has a vertex at 1e15 m.
  const std::string urdf = R"(<?xml version="1.0"?>
<robot name="far_link">
  <link name="base"><collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision></link>
  <link name="arm"><collision><geometry><mesh filename="far.obj"/></geometry></collision></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>)";
  RobotLoadOptions options;
  options.ros_package_path = "";
  options.uploaded_files["far.obj"] =
      "v -1 0 0.5\nv 1 0 0.5\nv 1e15 0.5 0.5\nv 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nf 1 2 3\nf 1 3 2\nf 4 5 6\n";
  auto robot = RobotModel::FromUrdfString(urdf, "", options);
  if (robot.ok()) {
    SceneDescription e;
    e.robot = robot.value();
    auto built = Scene::Build(e);
    ASSERT_FALSE(built.ok()) << "a link mesh vertex at 1e15 m was accepted";
    EXPECT_NE(built.error().message.find("arm"), std::string::npos) << built.error().message;
    EXPECT_NE(built.error().message.find("extent"), std::string::npos) << built.error().message;
  } else {
    EXPECT_NE(robot.error().message.find("far.obj"), std::string::npos) << robot.error().message;
  }
}

// The property: on random meshes full of slivers and collapsed triangles, CLEAR never answers free where
// the oracle that keeps every triangle finds the robot touching the world, and answers collision only
// where it does.
TEST(SceneSlivers, ClearAgreesWithAnOracleThatKeepsEveryTriangle) {
  const std::vector<RobotCase> robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "no robot data (../shared or dart-doc)";
  int checked_robots = 0;
  for (const RobotCase& rc : robots) {
    std::mt19937_64 rng(20261128);
    auto robot = LoadRobot(rc);
    ASSERT_NE(robot, nullptr);
    if (!MeshesOnly(*robot)) continue;
    ++checked_robots;
    SceneDescription alone;
    alone.robot = robot;
    const auto robot_only = testing::ValueOrFail(Scene::Build(alone));
    int world_contacts = 0, states = 0, sliver_only = 0;
    for (int world = 0; world < 4; ++world) {
      const TriangleMesh raw = RandomSliverMesh(rng, 0.8, 24);
      SceneDescription d = alone;
      d.objects.push_back(MeshObject("slivers", Model(raw)));
      auto scene = Scene::Build(d);
      ASSERT_TRUE(scene.ok()) << rc.name << ": " << scene.error().message;
      EXPECT_FALSE(scene.value()->warnings().empty()) << "the zero-area triangles were not reported";
      // The ordinary triangles alone: a state that touches the world only through slivers is what the
      // old cleaning got wrong.
      TriangleMesh ordinary;
      ordinary.vertices = raw.vertices;
      for (size_t t = 0; t < raw.triangles.size(); t += 3) ordinary.triangles.push_back(raw.triangles[t]);
      SceneCache cache, cache_alone;
      for (int i = 0; i < testing::Cases(300); ++i) {
        const std::vector<double> q = RandomState(rng, *robot);
        if (!testing::ValueOrFail(robot_only->CheckState(q, &cache_alone)).free) continue;  // self contact
        ++states;
        const bool oracle = OracleWorldContact(*robot, q, raw);
        const bool clear = testing::ValueOrFail(scene.value()->CheckState(q, &cache)).free;
        world_contacts += oracle;
        if (oracle && !OracleWorldContact(*robot, q, ordinary)) ++sliver_only;
        ASSERT_EQ(clear, !oracle) << rc.name << " world " << world << " state " << i
                                  << (clear ? ": free where the oracle finds contact" : ": contact the oracle lacks");
      }
    }
    EXPECT_GT(states, 0) << rc.name;
    EXPECT_GT(sliver_only, 0) << rc.name << ": no state touched the world through slivers alone; the test "
                              << "would not see them dropped";
    std::printf("%s: %d self-free states, %d touching the world, %d of them through slivers alone\n",
                rc.name.c_str(), states, world_contacts, sliver_only);
  }
  EXPECT_GT(checked_robots, 0) << "no robot with meshes only";
}

}  // namespace
}  // namespace proximity::core
