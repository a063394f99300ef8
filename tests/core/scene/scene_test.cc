#include "proximity/core/scene/scene.h"

#include <gtest/gtest.h>

#include <random>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "peers/fcl_peer.h"
#include "bvh/bvh.h"
#include "scene/scene_impl.h"

namespace proximity::core {
namespace {

using peers::FclMesh;
using peers::FclPose;

// The peer: FCL 0.7 objects per robot geometry and per world part, checked pair by pair with the
// scene's allowed-collision sets, the way a MoveIt-style checker does.
class FclOracle {
 public:
  explicit FclOracle(const Scene& scene) : scene_(scene) {
    for (int32_t l = 0; l < scene.robot().num_links(); ++l) {
      for (const LinkGeometry& g : scene.robot().link(l).geometries) {
        robot_.push_back({l, g.X_LG, Make(g)});
      }
    }
    for (int32_t o = 0; o < static_cast<int32_t>(scene.objects().size()); ++o) {
      for (const ObjectPart& p : scene.objects()[o].parts) {
        auto obj = std::make_unique<fcl::CollisionObjectd>(Make(p.geometry), FclPose(p.X_WG));
        obj->computeAABB();
        world_.push_back({o, std::move(obj)});
      }
    }
  }

  bool Colliding(std::span<const RigidTransform> X_WL) {
    std::vector<std::unique_ptr<fcl::CollisionObjectd>> posed;
    for (const auto& r : robot_) {
      posed.push_back(std::make_unique<fcl::CollisionObjectd>(r.geometry, FclPose(X_WL[r.link] * r.X_LG)));
    }
    for (size_t i = 0; i < robot_.size(); ++i) {
      for (const auto& w : world_) {
        if (internal::Impl(scene_).AllowedLinkObject(robot_[i].link, w.object)) continue;
        if (Hit(*posed[i], *w.object_ptr)) return true;
      }
      for (size_t j = i + 1; j < robot_.size(); ++j) {
        if (robot_[i].link == robot_[j].link || internal::Impl(scene_).AllowedLinkLink(robot_[i].link, robot_[j].link)) continue;
        if (Hit(*posed[i], *posed[j])) return true;
      }
    }
    return false;
  }

 private:
  static bool Hit(const fcl::CollisionObjectd& a, const fcl::CollisionObjectd& b) {
    fcl::CollisionRequestd req;
    fcl::CollisionResultd res;
    fcl::collide(&a, &b, req, res);
    return res.isCollision();
  }
  static std::shared_ptr<fcl::CollisionGeometryd> Make(const LinkGeometry& g) {
    switch (g.type) {
      case ShapeType::kMesh:
        return FclMesh<fcl::OBBRSSd>(g.mesh->mesh());
      case ShapeType::kBox:
        return std::make_shared<fcl::Boxd>(g.box_size);
      case ShapeType::kCylinder:
        return std::make_shared<fcl::Cylinderd>(g.radius, g.length);
      case ShapeType::kSphere:
        return std::make_shared<fcl::Sphered>(g.radius);
    }
    return nullptr;
  }
  static std::shared_ptr<fcl::CollisionGeometryd> Make(const Geometry& g) {
    if (g.is_mesh()) return FclMesh<fcl::OBBRSSd>(g.mesh->mesh());
    if (const Box* b = std::get_if<Box>(&g.shape)) return std::make_shared<fcl::Boxd>(2.0 * b->half_extents);
    if (const Cylinder* c = std::get_if<Cylinder>(&g.shape))
      return std::make_shared<fcl::Cylinderd>(c->radius, 2.0 * c->half_length);
    if (const Sphere* s = std::get_if<Sphere>(&g.shape)) return std::make_shared<fcl::Sphered>(s->radius);
    ADD_FAILURE() << "shape without an FCL counterpart in this test";
    return nullptr;
  }

  struct RobotGeometry {
    int32_t link;
    RigidTransform X_LG;
    std::shared_ptr<fcl::CollisionGeometryd> geometry;
  };
  struct WorldGeometry {
    int32_t object;
    std::unique_ptr<fcl::CollisionObjectd> object_ptr;
  };
  const Scene& scene_;
  std::vector<RobotGeometry> robot_;
  std::vector<WorldGeometry> world_;
};

TEST(Scene, ClearAgreesWithAnFclPerLinkChecker) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  for (const RobotCase& rc : robots) {
    SCOPED_TRACE(rc.name);
    const auto robot = LoadRobot(rc);
    ASSERT_NE(robot, nullptr);
    std::mt19937_64 rng(41);
    const auto maps = SelfClearanceMaps::For(robot);  // the three worlds' scenes share them
    for (int world = 0; world < 3; ++world) {
      SceneDescription d;
      d.robot = robot;
      d.self_clearance_maps = maps;
      d.objects = RandomWorld(rng, 0.8, 12 + 6 * world);
      // The first world's self-clearance maps fill on use, the others' at build (in the optimized build:
      // the UR5's take seconds): then every cell holds its bound and, where the meshes meet at its grid
      // point, the triangles CLEAR tests first there.
      d.self_clearance_fill = world == 0 || testing::kSanitizedSlowdown > 1 ? SelfClearanceFill::kOnUse
                                                                             : SelfClearanceFill::kAtBuild;
      auto built = Scene::Build(d);
      ASSERT_TRUE(built.ok()) << built.error().message;
      const Scene& scene = *built.value();
      FclOracle oracle(scene);
      SceneCache cache;
      int free = 0, world_hits = 0, self_hits = 0;
      const int states = testing::Cases(11200);  // 3 robots x 3 worlds: 100,800 states
      for (int k = 0; k < states; ++k) {
        const auto q = RandomState(rng, *robot);
        StateResult r;
        PROX_ASSERT_OK_AND_ASSIGN(r, scene.CheckState(q, &cache));
        EXPECT_TRUE(r.within_limits);
        const bool peer = oracle.Colliding(cache.link_poses());
        EXPECT_EQ(!r.free, peer) << "state " << k << ": ours " << (r.free ? "free" : r.contact.Describe(scene));
        if (r.free) {
          ++free;
        } else {
          (r.contact.self ? self_hits : world_hits)++;
        }
      }
      // The worlds are dense enough that all three answers occur.
      if (testing::kSanitizedSlowdown == 1) {
        EXPECT_GT(free, states / 20);
        EXPECT_GT(world_hits, 20);
      }
      RecordProperty(rc.name + "_self_hits", self_hits);
    }
  }
}

// A cache keeps per-pair warm starts for the hull tests; one cache used with several scenes in turn
// (as a pooled cache may be) must answer as a fresh cache per scene does.
TEST(Scene, OneCacheServingScenesInTurnAnswersAsCachesOfTheirOwn) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  std::mt19937_64 rng(43);
  std::vector<std::shared_ptr<const Scene>> scenes;
  for (int w = 0; w < 3; ++w) {
    auto built = Scene::Build(RandomWorldScene(robots.front(), rng, 10 + 8 * w));
    ASSERT_TRUE(built.ok()) << built.error().message;
    scenes.push_back(built.value());
  }
  const RobotModel& robot = scenes.front()->robot();
  SceneCache shared;
  std::vector<SceneCache> own(scenes.size());
  int hits = 0;
  for (int k = 0; k < testing::Cases(3000); ++k) {
    const auto q = RandomState(rng, robot);
    const size_t w = static_cast<size_t>(k) % scenes.size();
    StateResult a, b;
    PROX_ASSERT_OK_AND_ASSIGN(a, scenes[w]->CheckState(q, &shared));
    PROX_ASSERT_OK_AND_ASSIGN(b, scenes[w]->CheckState(q, &own[w]));
    EXPECT_EQ(a.free, b.free) << "state " << k << " in scene " << w;
    hits += !a.free;
  }
  EXPECT_GT(hits, 0);
}

TEST(Scene, ContactsNameTheirPartsAndAllowedPairsAreSkipped) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  const auto robot = LoadRobot(robots.front());
  ASSERT_NE(robot, nullptr);
  // A large box around the whole robot collides with every link; allowing the base link against it
  // moves the first contact to another link, and allowing every link frees the state.
  SceneDescription d;
  d.robot = robot;
  WorldObject slab{"slab", {}};
  ObjectPart part;
  part.geometry.shape = Box{Vec3(2.0, 2.0, 0.02)};
  part.X_WG.p = Vec3(0, 0, 0.05);
  slab.parts.push_back(part);
  d.objects.push_back(slab);
  // A configuration free of self collision.
  SceneCache cache;
  StateResult r;
  SceneDescription empty;
  empty.robot = robot;
  const auto bare = Scene::Build(empty).value();
  std::mt19937_64 rng(43);
  std::vector<double> q;
  do {
    q = RandomState(rng, *robot);
    PROX_ASSERT_OK_AND_ASSIGN(r, bare->CheckState(q, &cache));
  } while (!r.free);
  auto scene = Scene::Build(d).value();
  PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckState(q, &cache));
  ASSERT_FALSE(r.free);
  EXPECT_FALSE(r.contact.self);
  EXPECT_EQ(scene->objects()[r.contact.object].id, "slab");
  const int32_t first = r.contact.link;
  d.allowed_pairs.push_back({robot->link(first).name, "slab"});
  scene = Scene::Build(d).value();
  PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckState(q, &cache));
  EXPECT_TRUE(r.free || r.contact.link != first);
  for (const Link& l : robot->links()) d.allowed_pairs.push_back({"slab", l.name});
  scene = Scene::Build(d).value();
  PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckState(q, &cache));
  EXPECT_TRUE(r.free) << r.contact.Describe(*scene);
}

TEST(Scene, BadInputIsRejectedWithTheNameOfWhatIsWrong) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  const auto robot = LoadRobot(robots.front());
  ASSERT_NE(robot, nullptr);
  SceneDescription d;
  d.robot = robot;
  WorldObject a{"a", {}};
  ObjectPart part;
  part.geometry.shape = Box{Vec3(0.1, 0.1, 0.1)};
  a.parts.push_back(part);
  d.objects = {a, a};
  auto r = Scene::Build(d);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'a' appears twice"), std::string::npos) << r.error().message;

  d.objects = {a};
  // An allowed pair naming nothing known is accepted and ignored (as MoveIt does), with a warning.
  d.allowed_pairs = {{"a", "no_such_link"}};
  r = Scene::Build(d);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r.value()->warnings().size(), 1u);
  EXPECT_NE(r.value()->warnings()[0].find("'no_such_link'"), std::string::npos) << r.value()->warnings()[0];

  d.allowed_pairs.clear();
  d.objects[0].parts[0].X_WG.p.x() = std::nan("");
  r = Scene::Build(d);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'a' part 0"), std::string::npos) << r.error().message;

  d.objects[0].parts[0].X_WG.p.x() = 0;
  d.objects[0].parts[0].geometry.shape = Box{Vec3(-0.1, 0.1, 0.1)};
  r = Scene::Build(d);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'a' part 0"), std::string::npos) << r.error().message;

  d.objects.clear();
  d.robot = nullptr;
  EXPECT_FALSE(Scene::Build(d).ok());

  // Queries: wrong size and NaN are errors; out-of-limits states are answered and flagged.
  d.robot = robot;
  const auto scene = Scene::Build(d).value();
  SceneCache cache;
  StateResult res;
  std::vector<double> q = robot->DefaultConfiguration();
  q.push_back(0.0);
  EXPECT_FALSE(scene->CheckState(q, &cache).ok());
  q.pop_back();
  q[0] = std::nan("");
  EXPECT_FALSE(scene->CheckState(q, &cache).ok());
  q[0] = robot->upper_limits()[0] + 1.0;
  PROX_ASSERT_OK_AND_ASSIGN(res, scene->CheckState(q, &cache));
  EXPECT_FALSE(res.within_limits);
}

}  // namespace
}  // namespace proximity::core

namespace proximity::core {
namespace {

TEST(SceneMotion, CertifiedLinkNeverMissesACollisionTheDenseCheckFinds) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  for (const RobotCase& rc : robots) {
    SCOPED_TRACE(rc.name);
    const auto robot = LoadRobot(rc);
    ASSERT_NE(robot, nullptr);
    std::mt19937_64 rng(51);
    SceneDescription d;
    d.robot = robot;
    d.objects = RandomWorld(rng, 0.8, 18);
    const auto scene = Scene::Build(d).value();
    SceneCache cache;
    int colliding = 0, free = 0, discrete_misses = 0;
    const int edges = testing::Cases(120);
    for (int e = 0; e < edges; ++e) {
      const auto [q0, q1] = RandomEdge(rng, *scene, &cache);
      MotionResult certified, discrete;
      PROX_ASSERT_OK_AND_ASSIGN(certified, scene->CheckMotion(q0, q1, {}, &cache));
      MotionRequest sampled;
      sampled.mode = MotionRequest::Mode::kDiscrete;
      sampled.resolution = 0.17;  // OMPL's default spacing for a 7-joint arm: 1% of the space's extent
      PROX_ASSERT_OK_AND_ASSIGN(discrete, scene->CheckMotion(q0, q1, sampled, &cache));
      const double dense = DenseFirstCollision(*scene, q0, q1, &cache);
      if (dense >= 0.0) {
        ++colliding;
        EXPECT_FALSE(certified.free) << "edge " << e << ": certified says free, the dense check collides at t = "
                                     << dense;
        discrete_misses += discrete.free;
      } else {
        ++free;
      }
      if (!certified.free && !certified.undecided) {
        // The reported state collides, and the certified prefix holds no collision of the dense check.
        StateResult r;
        PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckState(Along(q0, q1, certified.t_collide), &cache));
        EXPECT_FALSE(r.free) << "edge " << e << " t_collide " << certified.t_collide;
        EXPECT_LE(certified.t_free, certified.t_collide);
        if (dense >= 0.0) {
          EXPECT_GE(dense + 1e-3, certified.t_free) << "edge " << e;
        }
      }
      EXPECT_FALSE(certified.undecided) << "edge " << e;
    }
    if (testing::kSanitizedSlowdown == 1) {
      EXPECT_GT(colliding, edges / 20);
      EXPECT_GT(free, edges / 20);
    }
    RecordProperty(rc.name + "_discrete_misses", discrete_misses);
  }
}

TEST(Scene, PartsNoJointMovesKeepTheirClearanceToTheWorld) {
  // The planar arm's base (no joint moves it) stands 0.03 above a slab: one at a time and in batches,
  // CLEAR must agree with distance(q) at clearances on both sides of that gap (a part whose pose never
  // changes still keeps the clearance asked).
  auto robot = RobotModel::FromUrdfFile(testing::TestDataDir() + "/robots/planar_2link.urdf");
  ASSERT_TRUE(robot.ok()) << robot.error().message;
  SceneDescription d;
  d.robot = robot.value();
  WorldObject slab{"slab", {}};
  ObjectPart part;
  part.geometry.shape = Box{Vec3(0.3, 0.3, 0.01)};
  part.X_WG.p = Vec3(0.0, 0.0, -0.04);
  slab.parts.push_back(part);
  d.objects = {slab};
  const auto scene = testing::ValueOrFail(Scene::Build(d));
  SceneCache cache;
  std::mt19937_64 rng(3);
  int base_contacts = 0;
  for (int i = 0; i < 300; ++i) {
    const std::vector<double> q = RandomState(rng, *d.robot);
    const SceneDistanceResult distance = testing::ValueOrFail(scene->ComputeDistance(q, {}, &cache));
    for (const double clearance : {0.0, 0.02, 0.029, 0.031, 0.05}) {
      const StateResult one = testing::ValueOrFail(scene->CheckState(q, &cache, clearance));
      std::vector<StateResult> batch(1);
      ASSERT_TRUE(scene->CheckStates(q, batch, &cache, clearance).ok());
      EXPECT_EQ(one.free, batch[0].free) << "state " << i << " clearance " << clearance;
      if (distance.lower_bound > clearance + 1e-9) {
        EXPECT_TRUE(one.free) << "state " << i << " clearance " << clearance;
      }
      if (distance.upper_bound < clearance - 1e-9) {
        EXPECT_FALSE(one.free) << "state " << i << " clearance " << clearance;
        base_contacts += !one.free && !one.contact.self && one.contact.link == d.robot->FindLink("base").value();
      }
    }
  }
  // The slab is met by the base, which no joint moves, at the clearances past the gap.
  EXPECT_GT(base_contacts, 0);
}

TEST(SceneMotion, ANearMissBetweenSamplesIsMissedByDiscreteAndCaughtByCertified) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  const auto robot = LoadRobot(robots.front());
  ASSERT_NE(robot, nullptr);
  // The outermost link with a mesh, and its vertex farthest from the first joint's axis: the point
  // that moves fastest when the first joint swings.
  int32_t tip = -1;
  for (int32_t l = robot->num_links() - 1; l >= 0 && tip < 0; --l)
    if (!robot->link(l).geometries.empty() && robot->link(l).geometries[0].type == ShapeType::kMesh) tip = l;
  ASSERT_GE(tip, 0);
  const LinkGeometry& g = robot->link(tip).geometries[0];
  SceneDescription bare;
  bare.robot = robot;
  const auto empty = Scene::Build(bare).value();
  SceneCache cache;
  std::mt19937_64 rng(61);
  bool found = false;
  for (int attempt = 0; attempt < 200 && !found; ++attempt) {
    // Swing the first joint by 1.2 rad from a free state through free space.
    auto q0 = RandomState(rng, *robot), q1 = q0;
    q1[0] = std::clamp(q0[0] + 1.2, robot->lower_limits()[0], robot->upper_limits()[0]);
    MotionResult m;
    PROX_ASSERT_OK_AND_ASSIGN(m, empty->CheckMotion(q0, q1, {}, &cache));
    if (!m.free || std::abs(q1[0] - q0[0]) < 1.0) continue;
    // Halfway between two of the discrete samples, a 2 mm sphere on the fastest point of the link.
    const int n = static_cast<int>(std::ceil(std::abs(q1[0] - q0[0]) / 0.17));
    const double t_obstacle = (std::floor(0.5 * n) + 0.5) / n;
    StateResult r;
    PROX_ASSERT_OK_AND_ASSIGN(r, empty->CheckState(Along(q0, q1, t_obstacle), &cache));
    const RigidTransform X_WG = cache.link_poses()[tip] * g.X_LG;
    Vec3 fastest = Vec3::Zero();
    for (const Vec3& v : g.mesh->mesh().vertices) {
      const Vec3 p = X_WG * v;
      if (p.head<2>().norm() > fastest.head<2>().norm()) fastest = p;
    }
    SceneDescription d = bare;
    ObjectPart ball;
    ball.geometry.shape = Sphere{Vec3::Zero(), 0.002};
    ball.X_WG.p = fastest;
    d.objects.push_back({"ball", {ball}});
    const auto scene = Scene::Build(d).value();
    MotionRequest sampled;
    sampled.mode = MotionRequest::Mode::kDiscrete;
    sampled.resolution = 0.17;
    MotionResult discrete, certified;
    PROX_ASSERT_OK_AND_ASSIGN(discrete, scene->CheckMotion(q0, q1, sampled, &cache));
    if (!discrete.free) continue;  // another sample happened to touch it; try another swing
    found = true;
    // The state at t_obstacle touches the ball; the certified check must say so.
    PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckState(Along(q0, q1, t_obstacle), &cache));
    EXPECT_FALSE(r.free);
    PROX_ASSERT_OK_AND_ASSIGN(certified, scene->CheckMotion(q0, q1, {}, &cache));
    EXPECT_FALSE(certified.free) << "attempt " << attempt;
    EXPECT_FALSE(certified.undecided);
    EXPECT_EQ(scene->objects()[certified.contact.object].id, "ball") << certified.contact.Describe(*scene);
    EXPECT_LE(certified.t_free, t_obstacle);
    EXPECT_GE(certified.t_collide, certified.t_free);
  }
  EXPECT_TRUE(found) << "no swing put the ball between discrete samples";
}

TEST(SceneMotion, BadMotionRequestsAreRejected) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  const auto robot = LoadRobot(robots.front());
  SceneDescription d;
  d.robot = robot;
  const auto scene = Scene::Build(d).value();
  SceneCache cache;
  auto q = robot->DefaultConfiguration();
  auto bad = q;
  bad.pop_back();
  EXPECT_FALSE(scene->CheckMotion(q, bad, {}, &cache).ok());
  bad = q;
  bad[1] = std::nan("");
  const Status s = scene->CheckMotion(bad, q, {}, &cache).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("q0"), std::string::npos) << s.error().message;
  MotionRequest zero;
  zero.mode = MotionRequest::Mode::kDiscrete;
  zero.resolution = 0.0;
  EXPECT_FALSE(scene->CheckMotion(q, q, zero, &cache).ok());
}

}  // namespace
}  // namespace proximity::core
