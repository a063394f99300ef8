// CLEAR's proofs of contact for sealed convex meshes (state_check.cc): where a link mesh is a sealed
// surface close to its hull (SealedHullGap), a hull test that finds the hulls meeting can prove the
// meshes collide without walking their triangles. These tests pose such meshes so that they cross,
// touch, keep apart and hold one another, and compare CLEAR with brute force over every triangle pair
// (mesh against mesh) and with the hierarchy walk (mesh against a solid primitive).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "bvh/bvh.h"
#include "proximity/core/mesh/mesh.h"
#include "narrowphase/convex.h"
#include "proximity/core/robot/robot_model.h"
#include "proximity/core/scene/scene.h"
#include "bvh/solid_interior.h"

namespace proximity::core {
namespace {

std::string ToObj(const TriangleMesh& m) {
  std::ostringstream out;
  out.precision(17);
  for (const Vec3& v : m.vertices) out << "v " << v.x() << ' ' << v.y() << ' ' << v.z() << '\n';
  for (const auto& t : m.triangles) out << "f " << t[0] + 1 << ' ' << t[1] + 1 << ' ' << t[2] + 1 << '\n';
  return out.str();
}

// A robot with a fixed link "big" holding `big`, and a link "small" holding `small` on three slides of
// +-`slide` m and three turns.
std::shared_ptr<const RobotModel> TwoBodyRobot(const TriangleMesh& big, const TriangleMesh& small, double slide) {
  const std::string s = std::to_string(slide);
  std::string urdf = R"(<robot name="two_bodies"><link name="base"/>
    <link name="big"><collision><geometry><mesh filename="big.obj"/></geometry></collision></link>
    <joint name="fix" type="fixed"><parent link="base"/><child link="big"/></joint>
    <link name="sx"/><link name="sy"/><link name="sz"/><link name="rz"/><link name="ry"/>
    <link name="small"><collision><geometry><mesh filename="small.obj"/></geometry></collision></link>)";
  const char* joints[6][4] = {{"px", "base", "sx", "1 0 0"}, {"py", "sx", "sy", "0 1 0"}, {"pz", "sy", "sz", "0 0 1"},
                              {"tz", "sz", "rz", "0 0 1"},   {"ty", "rz", "ry", "0 1 0"}, {"tx", "ry", "small", "1 0 0"}};
  for (int j = 0; j < 6; ++j) {
    const bool slides = j < 3;
    urdf += std::string("<joint name=\"") + joints[j][0] + "\" type=\"" + (slides ? "prismatic" : "revolute") +
            "\"><parent link=\"" + joints[j][1] + "\"/><child link=\"" + joints[j][2] + "\"/><axis xyz=\"" +
            joints[j][3] + "\"/><limit effort=\"1\" velocity=\"1\" lower=\"" + (slides ? "-" + s : "-3.1") +
            "\" upper=\"" + (slides ? s : "3.1") + "\"/></joint>";
  }
  urdf += "</robot>";
  RobotLoadOptions options;
  options.ros_package_path = "";
  options.uploaded_files["big.obj"] = ToObj(big);
  options.uploaded_files["small.obj"] = ToObj(small);
  auto robot = RobotModel::FromUrdfString(urdf, "", options);
  EXPECT_TRUE(robot.ok()) << robot.error().message;
  return robot.ok() ? robot.value() : nullptr;
}

const LinkGeometry& OnlyGeometry(const RobotModel& robot, const std::string& link) {
  return robot.links()[static_cast<size_t>(robot.FindLink(link).value())].geometries.at(0);
}

// Two sealed meshes (a dented box, or a cylinder, around a sphere or a cylinder moving through, beside
// and inside it): CLEAR says what brute force over every triangle pair says, and most of its contacts
// come without a triangle test (the proof decided them).
TEST(SealedContact, MeshesCollideExactlyWhenTheirTrianglesMeet) {
  struct Case {
    const char* name;
    TriangleMesh big, small;
    bool can_hold;  // whether the small body fits inside the big one's box |x|, |y|, |z| <= 0.1
    double slide = 0.3;
    int proven_share = 4;  // at least 1 / proven_share of the contacts proven without a walk (0: any)
  };
  const Case cases[] = {
      {"dented box, sphere", testing::DentedBoxMesh(Vec3(0.4, 0.3, 0.35), 0.01), MakeIcosphereMesh(0.06, 2), true},
      {"cylinder, dented box", MakeCylinderMesh(0.2, 0.4, 24), testing::DentedBoxMesh(Vec3(0.12, 0.08, 0.1), 0.01), true},
      {"dented box, cylinder", testing::DentedBoxMesh(Vec3(0.3, 0.3, 0.3), 0.02), MakeCylinderMesh(0.04, 0.5, 16), false},
      // Mostly inside: the hulls meet, and the surfaces only where the sphere reaches out.
      // (The contacts are the sphere's shallow crossings, left to the walk.)
      {"dented box, sphere inside", testing::DentedBoxMesh(Vec3(0.4, 0.3, 0.35), 0.01), MakeIcosphereMesh(0.06, 2), true, 0.12, 0},
  };
  std::mt19937_64 rng(7);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto robot = TwoBodyRobot(c.big, c.small, c.slide);
    ASSERT_NE(robot, nullptr);
    ASSERT_TRUE(std::isfinite(OnlyGeometry(*robot, "big").hull_surface_gap));
    ASSERT_TRUE(std::isfinite(OnlyGeometry(*robot, "small").hull_surface_gap));
    SceneDescription d;
    d.robot = robot;
    auto scene = Scene::Build(d);
    ASSERT_TRUE(scene.ok()) << scene.error().message;
    SceneCache cache;
    const int32_t big = robot->FindLink("big").value(), small = robot->FindLink("small").value();
    int colliding = 0, proven = 0, held = 0;
    const int states = testing::Cases(6000);
    for (int k = 0; k < states; ++k) {
      const auto q = RandomState(rng, *robot);
      PROX_ASSERT_OK_AND_ASSIGN(const StateResult r, scene.value()->CheckState(q, &cache));
      const auto X = cache.link_poses();
      const bool meet = testing::BruteForceCollide(c.big, X[big], c.small, X[small]);
      ASSERT_EQ(!r.free, meet) << "state " << k;
      colliding += meet;
      proven += meet && r.stats.triangle_tests == 0;
      // The small body wholly inside the big one's hull: its hulls meet, its surfaces do not.
      held += !meet && r.stats.convex_tests > 0 &&
              c.small.vertices.end() == std::find_if(c.small.vertices.begin(), c.small.vertices.end(),
                                                     [&](const Vec3& v) {
                                                       return (X[big].inverse() * (X[small] * v)).cwiseAbs().maxCoeff() >
                                                              0.1;
                                                     });
    }
    EXPECT_GT(colliding, states / 10);
    // Shallow crossings (a point deeper than the dent's gap in both is needed) and crossings at the
    // edges are left to the walk.
    if (c.proven_share > 0) {
      EXPECT_GT(proven, colliding / c.proven_share);
    }
    RecordProperty(std::string(c.name) + " colliding / proven / held",
                   std::to_string(colliding) + " / " + std::to_string(proven) + " / " + std::to_string(held));
    if (c.can_hold) {
      EXPECT_GT(held, 0);
    }
  }
}

// Adds n boxes, spheres and cylinders (in turn) to d's world, their sizes drawn from `size`, posed at
// random within `reach` of the origin; the TwoBodyRobot's "big" link is allowed to touch them and
// "small", so that only "small" against the world counts.
void AddRandomSolids(std::mt19937_64& rng, std::uniform_real_distribution<double>& size, int n, double reach,
                     SceneDescription* d) {
  for (int i = 0; i < n; ++i) {
    WorldObject o;
    o.id = "obj" + std::to_string(i);
    ObjectPart part;
    const double a = size(rng), b = size(rng), c = size(rng);
    if (i % 3 == 0) part.geometry.shape = Box{0.5 * Vec3(a, b, c)};
    if (i % 3 == 1) part.geometry.shape = Sphere{Vec3::Zero(), 0.5 * a};
    if (i % 3 == 2) part.geometry.shape = Cylinder{0.5 * a, 0.5 * b};
    part.X_WG = testing::RandomPose(rng, Vec3(-reach, -reach, -reach), Vec3(reach, reach, reach));
    o.parts.push_back(part);
    d->objects.push_back(o);
  }
  d->allowed_pairs.push_back({"big", "small"});
  for (const WorldObject& o : d->objects) d->allowed_pairs.push_back({"big", o.id});
}

// A link mesh against boxes, spheres and cylinders of the world, from ones wholly inside the link (no
// contact: the link is a surface) to ones holding it wholly (contact: a mesh inside a solid collides):
// CLEAR says what the hierarchy walk (CollideGeometry) says, pair by pair, and proves most contacts
// without a triangle test. `link` must be closed (interior balls), sealed or not as the caller asserts.
void ExpectMeshAgainstSolidsAnswersAsTheWalk(const TriangleMesh& link, bool sealed, uint64_t seed) {
  const auto robot = TwoBodyRobot(MakeIcosphereMesh(0.01, 0), link, 0.2);
  ASSERT_NE(robot, nullptr);
  const LinkGeometry& g = OnlyGeometry(*robot, "small");
  ASSERT_EQ(std::isfinite(g.hull_surface_gap), sealed);
  if (!sealed) {
    ASSERT_NE(g.interior, nullptr);
  }
  Geometry mesh;
  mesh.mesh = g.mesh;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> size(0.02, 0.45);
  int colliding = 0, proven = 0, free = 0;
  const int worlds = testing::Cases(40);
  for (int world = 0; world < worlds; ++world) {
    SceneDescription d;
    d.robot = robot;
    // Sizes from well inside the link to well around it, placed where the link moves.
    AddRandomSolids(rng, size, 3, 0.25, &d);
    auto scene = Scene::Build(d);
    ASSERT_TRUE(scene.ok()) << scene.error().message;
    SceneCache cache;
    const int32_t small = robot->FindLink("small").value();
    for (int k = 0; k < 100; ++k) {
      const auto q = RandomState(rng, *robot);
      PROX_ASSERT_OK_AND_ASSIGN(const StateResult r, scene.value()->CheckState(q, &cache));
      const RigidTransform X_WL = cache.link_poses()[small];
      bool meet = false;
      for (const WorldObject& o : d.objects) {
        auto walk = CollideGeometry(mesh, X_WL, o.parts[0].geometry, o.parts[0].X_WG);
        ASSERT_TRUE(walk.ok()) << walk.error().message;
        meet = meet || walk.value().colliding;
      }
      ASSERT_EQ(!r.free, meet) << "world " << world << " state " << k;
      colliding += meet;
      free += !meet;
      proven += meet && r.stats.triangle_tests == 0;
    }
  }
  // 100 states a world: most collide (the solids are large), some are free.
  EXPECT_GT(colliding, worlds * 10);
  EXPECT_GT(free, worlds * 100 / 40);
  EXPECT_GT(proven, colliding / 2);
  ::testing::Test::RecordProperty("colliding / free / proven",
                 std::to_string(colliding) + " / " + std::to_string(free) + " / " + std::to_string(proven));
}

// The world's broad phase: worlds of up to 64 parts are scanned eight boxes at a time, larger ones
// walk a tree. On either side of that size and at block edges (1, 7, 8, 9, 64, 65, 200 parts), CLEAR
// says what testing the link against every object says, and a reported contact names an object the
// link meets.
TEST(WorldBroadPhase, EverySizeOfWorldFindsWhatTestingEveryObjectFinds) {
  const auto robot = TwoBodyRobot(MakeIcosphereMesh(0.01, 0), MakeCylinderMesh(0.03, 0.2, 12), 0.3);
  ASSERT_NE(robot, nullptr);
  Geometry link;
  link.mesh = OnlyGeometry(*robot, "small").mesh;
  const int32_t small = robot->FindLink("small").value();
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> size(0.01, 0.08);
  for (const int n : {1, 7, 8, 9, 64, 65, 200}) {
    SCOPED_TRACE(n);
    SceneDescription d;
    d.robot = robot;
    AddRandomSolids(rng, size, n, 0.4, &d);
    auto scene = Scene::Build(d);
    ASSERT_TRUE(scene.ok()) << scene.error().message;
    SceneCache cache;
    int colliding = 0;
    const int states = testing::Cases(400);
    for (int k = 0; k < states; ++k) {
      const auto q = RandomState(rng, *robot);
      PROX_ASSERT_OK_AND_ASSIGN(const StateResult r, scene.value()->CheckState(q, &cache));
      const RigidTransform X_WL = cache.link_poses()[small];
      std::vector<char> meets(d.objects.size(), 0);
      for (size_t o = 0; o < d.objects.size(); ++o) {
        auto walk = CollideGeometry(link, X_WL, d.objects[o].parts[0].geometry, d.objects[o].parts[0].X_WG);
        ASSERT_TRUE(walk.ok()) << walk.error().message;
        meets[o] = walk.value().colliding;
      }
      const bool meet = std::find(meets.begin(), meets.end(), 1) != meets.end();
      ASSERT_EQ(!r.free, meet) << "state " << k;
      if (!r.free) {
        ASSERT_FALSE(r.contact.self);
        ASSERT_GE(r.contact.object, 0);
        EXPECT_TRUE(meets[static_cast<size_t>(r.contact.object)]) << "state " << k << ": the contact names "
                                                                    << d.objects[r.contact.object].id;
      }
      colliding += meet;
    }
    // Both answers occur in worlds of several objects.
    if (n >= 8) {
      EXPECT_GT(colliding, 0);
      EXPECT_LT(colliding, states);
    }
  }
}

TEST(SealedContact, MeshAgainstSolidsAnswersAsTheWalk) {
  ExpectMeshAgainstSolidsAnswersAsTheWalk(testing::DentedBoxMesh(Vec3(0.3, 0.25, 0.3), 0.01), true, 11);
}

// A scene trusts only the sealed gaps its robot model found: a world mesh that claims one (a torus,
// whose hull holds a rod through its hole while the surfaces keep apart) gets no proof, and the rod is
// free.
TEST(SealedContact, AGapAWorldObjectClaimsIsIgnored) {
  const TriangleMesh rod = MakeCylinderMesh(0.08, 0.6, 24);
  const auto robot = TwoBodyRobot(MakeIcosphereMesh(0.01, 0), rod, 0.2);
  ASSERT_NE(robot, nullptr);
  ASSERT_TRUE(std::isfinite(OnlyGeometry(*robot, "small").hull_surface_gap));
  const TriangleMesh torus = MakeTorusMesh(0.2, 0.05, 32, 16);
  Geometry claimed;
  claimed.mesh = testing::ValueOrFail(MeshModel::Build(torus));
  claimed.hull = testing::ValueOrFail(ConvexPolytope::Build(torus));
  claimed.hull_surface_gap = 0.0;  // not so: the torus's inner ring lies deep inside its hull
  SceneDescription d;
  d.robot = robot;
  d.objects.push_back({"torus", {ObjectPart{claimed, RigidTransform::Identity()}}});
  d.allowed_pairs = {{"big", "small"}, {"big", "torus"}};
  const auto scene = testing::ValueOrFail(Scene::Build(d));
  SceneCache cache;
  const std::vector<double> centre(6, 0.0);  // the rod through the torus's hole, out of its hull
  PROX_ASSERT_OK_AND_ASSIGN(const StateResult r, scene->CheckState(centre, &cache));
  EXPECT_TRUE(r.free);
  EXPECT_FALSE(testing::BruteForceCollide(torus, RigidTransform::Identity(), rod,
                                          cache.link_poses()[robot->FindLink("small").value()]));
  // Moved onto the ring, it collides.
  std::vector<double> ring(6, 0.0);
  ring[0] = 0.2;
  PROX_ASSERT_OK_AND_ASSIGN(const StateResult hit, scene->CheckState(ring, &cache));
  EXPECT_FALSE(hit.free);
}

}  // namespace
}  // namespace proximity::core

namespace proximity::core {
namespace {

// Closed meshes that are not convex (a torus, two crossing boxes) prove their contacts from balls
// inside them (Geometry::interior; the balls themselves are solid_interior_test's): a robot's link
// meshes carry theirs from the load, and CLEAR says what brute force over every triangle pair says, with
// a rod through the torus's hole (hulls meeting, surfaces apart) among the states.
TEST(InteriorContact, LinkMeshesCarryTheirBalls) {
  const TriangleMesh torus = MakeTorusMesh(0.2, 0.05, 32, 16);
  const auto robot = TwoBodyRobot(torus, testing::CrossedBoxesMesh(), 0.3);
  ASSERT_NE(robot, nullptr);
  const LinkGeometry& ring = OnlyGeometry(*robot, "big");
  const LinkGeometry& cross = OnlyGeometry(*robot, "small");
  ASSERT_FALSE(std::isfinite(ring.hull_surface_gap));
  ASSERT_NE(ring.interior, nullptr);
  ASSERT_NE(cross.interior, nullptr);
  EXPECT_FALSE(ring.interior->balls.empty());
  EXPECT_FALSE(cross.interior->balls.empty());
}

TEST(InteriorContact, MeshesCollideExactlyWhenTheirTrianglesMeet) {
  struct Case {
    const char* name;
    TriangleMesh big, small;
    double slide;
    bool apart_in_hulls;  // states where the hulls meet and the surfaces do not are common
  };
  const Case cases[] = {
      {"torus, rod", MakeTorusMesh(0.2, 0.05, 24, 12), MakeCylinderMesh(0.03, 0.5, 16), 0.3, true},
      {"torus, cross", MakeTorusMesh(0.2, 0.06, 24, 12), testing::CrossedBoxesMesh(), 0.3, false},
      {"cross, sphere", testing::CrossedBoxesMesh(), MakeIcosphereMesh(0.05, 2), 0.2, true},
      // The sphere often wholly inside the tube: balls meeting, surfaces apart.
      {"torus, sphere in its tube", MakeTorusMesh(0.2, 0.08, 24, 12), MakeIcosphereMesh(0.03, 1), 0.25, true},
  };
  std::mt19937_64 rng(13);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto robot = TwoBodyRobot(c.big, c.small, c.slide);
    ASSERT_NE(robot, nullptr);
    ASSERT_NE(OnlyGeometry(*robot, "big").interior, nullptr);
    ASSERT_NE(OnlyGeometry(*robot, "small").interior, nullptr);
    SceneDescription d;
    d.robot = robot;
    const auto scene = testing::ValueOrFail(Scene::Build(d));
    SceneCache cache;
    const int32_t big = robot->FindLink("big").value(), small = robot->FindLink("small").value();
    int colliding = 0, proven = 0, hulls_only = 0;
    const int states = testing::Cases(800);
    for (int k = 0; k < states; ++k) {
      const auto q = RandomState(rng, *robot);
      PROX_ASSERT_OK_AND_ASSIGN(const StateResult r, scene->CheckState(q, &cache));
      const auto X = cache.link_poses();
      const bool meet = testing::BruteForceCollide(c.big, X[big], c.small, X[small]);
      ASSERT_EQ(!r.free, meet) << "state " << k;
      colliding += meet;
      proven += meet && r.stats.triangle_tests == 0;
      hulls_only += !meet && r.stats.triangle_tests > 0;  // the hulls met, the walk found them apart
    }
    EXPECT_GT(colliding, states / 10);
    // The shares need the full count of states (sanitized builds run a fraction of it; the answers above
    // are checked there all the same).
    if (states == 800) {
      EXPECT_GT(proven, colliding / 4);
      if (c.apart_in_hulls) {
        EXPECT_GT(hulls_only, 0);
      }
    }
    RecordProperty(std::string(c.name) + " colliding / proven / hulls only",
                   std::to_string(colliding) + " / " + std::to_string(proven) + " / " + std::to_string(hulls_only));
  }
}

TEST(InteriorContact, MeshAgainstSolidsAnswersAsTheWalk) {
  ExpectMeshAgainstSolidsAnswersAsTheWalk(MakeTorusMesh(0.2, 0.06, 32, 16), false, 17);
  ExpectMeshAgainstSolidsAnswersAsTheWalk(testing::CrossedBoxesMesh(), false, 19);
}

}  // namespace
}  // namespace proximity::core
