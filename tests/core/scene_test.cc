#include "proximity/core/scene.h"

#include <gtest/gtest.h>

#include <random>

#include "core/test_util.h"
#include "peers/fcl_peer.h"

namespace proximity::core {
namespace {

using peers::FclMesh;
using peers::FclPose;

struct RobotCase {
  std::string name;
  std::string urdf, srdf;
  RobotLoadOptions options;
};

std::vector<RobotCase> Robots() {
  std::vector<RobotCase> out;
  const std::string shared = testing::SharedDataDir();
  if (!shared.empty()) {
    RobotCase panda{"panda", shared + "/robots/panda/moveit_resources_panda_description/urdf/panda.urdf",
                    shared + "/robots/panda/moveit_resources_panda_moveit_config/config/panda.srdf", {}};
    panda.options.package_dirs["moveit_resources_panda_description"] =
        shared + "/robots/panda/moveit_resources_panda_description";
    out.push_back(panda);
    RobotCase ur5{"ur5", shared + "/robots/ur5/ur_description/urdf/ur5_robot.urdf",
                  shared + "/robots/ur5/ur5_moveit_config/config/ur5.srdf", {}};
    ur5.options.package_dirs["ur_description"] = shared + "/robots/ur5/ur_description";
    out.push_back(ur5);
  }
  const std::string dart = testing::DartUrdfDir();
  if (!dart.empty()) out.push_back({"kr5", dart + "/KR5/KR5 sixx R650.urdf", "", {}});
  for (auto& r : out) r.options.ros_package_path = "";
  return out;
}

std::shared_ptr<const RobotModel> LoadRobot(const RobotCase& c) {
  auto r = RobotModel::FromUrdfFile(c.urdf, c.srdf, c.options);
  EXPECT_TRUE(r.ok()) << c.name << ": " << r.error().message;
  return r.ok() ? r.value() : nullptr;
}

// A seeded workcell of boxes, cylinders and spheres within the robot's reach, at least 0.3 m from
// the base axis (an obstacle through the fixed base would make every state collide).
std::vector<WorldObject> RandomWorld(std::mt19937_64& rng, double reach, int count) {
  std::uniform_real_distribution<double> pos(-reach, reach), size(0.04, 0.25);
  std::vector<WorldObject> objects;
  for (int i = 0; i < count; ++i) {
    WorldObject o;
    o.id = "obj" + std::to_string(i);
    ObjectPart part;
    const double a = size(rng), b = size(rng), c = size(rng);
    switch (i % 3) {
      case 0:
        part.geometry.shape = Box{0.5 * Vec3(a, b, c)};
        break;
      case 1:
        part.geometry.shape = Cylinder{0.5 * a, 0.5 * b};
        break;
      default:
        part.geometry.shape = Sphere{Vec3::Zero(), 0.5 * a};
        break;
    }
    do {
      part.X_WG = testing::RandomPose(rng, Vec3(-reach, -reach, 0.0), Vec3(reach, reach, reach));
    } while (part.X_WG.p.head<2>().norm() < 0.3 + std::max({a, b, c}));
    o.parts.push_back(part);
    objects.push_back(o);
  }
  return objects;
}

std::vector<double> RandomState(std::mt19937_64& rng, const RobotModel& robot) {
  std::vector<double> q(robot.num_positions());
  for (int i = 0; i < robot.num_positions(); ++i) {
    double lo = robot.lower_limits()[i], hi = robot.upper_limits()[i];
    if (!std::isfinite(lo) || !std::isfinite(hi)) lo = -M_PI, hi = M_PI;
    q[i] = std::uniform_real_distribution<double>(lo, hi)(rng);
  }
  return q;
}

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

  bool Colliding(const std::vector<RigidTransform>& X_WL) {
    std::vector<std::unique_ptr<fcl::CollisionObjectd>> posed;
    for (const auto& r : robot_) {
      posed.push_back(std::make_unique<fcl::CollisionObjectd>(r.geometry, FclPose(X_WL[r.link] * r.X_LG)));
    }
    for (size_t i = 0; i < robot_.size(); ++i) {
      for (const auto& w : world_) {
        if (scene_.AllowedLinkObject(robot_[i].link, w.object)) continue;
        if (Hit(*posed[i], *w.object_ptr)) return true;
      }
      for (size_t j = i + 1; j < robot_.size(); ++j) {
        if (robot_[i].link == robot_[j].link || scene_.AllowedLinkLink(robot_[i].link, robot_[j].link)) continue;
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
    for (int world = 0; world < 3; ++world) {
      SceneDescription d;
      d.robot = robot;
      d.objects = RandomWorld(rng, 0.8, 12 + 6 * world);
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
        ASSERT_TRUE(scene.CheckState(q, &cache, &r).ok());
        EXPECT_TRUE(r.within_limits);
        const bool peer = oracle.Colliding(cache.X_WL);
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
    ASSERT_TRUE(bare->CheckState(q, &cache, &r).ok());
  } while (!r.free);
  auto scene = Scene::Build(d).value();
  ASSERT_TRUE(scene->CheckState(q, &cache, &r).ok());
  ASSERT_FALSE(r.free);
  EXPECT_FALSE(r.contact.self);
  EXPECT_EQ(scene->objects()[r.contact.object].id, "slab");
  const int32_t first = r.contact.link;
  d.allowed_pairs.push_back({robot->link(first).name, "slab"});
  scene = Scene::Build(d).value();
  ASSERT_TRUE(scene->CheckState(q, &cache, &r).ok());
  EXPECT_TRUE(r.free || r.contact.link != first);
  for (const Link& l : robot->links()) d.allowed_pairs.push_back({"slab", l.name});
  scene = Scene::Build(d).value();
  ASSERT_TRUE(scene->CheckState(q, &cache, &r).ok());
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
  d.allowed_pairs = {{"a", "no_such_link"}};
  r = Scene::Build(d);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no_such_link"), std::string::npos) << r.error().message;

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
  EXPECT_FALSE(scene->CheckState(q, &cache, &res).ok());
  q.pop_back();
  q[0] = std::nan("");
  EXPECT_FALSE(scene->CheckState(q, &cache, &res).ok());
  q[0] = robot->upper_limits()[0] + 1.0;
  ASSERT_TRUE(scene->CheckState(q, &cache, &res).ok());
  EXPECT_FALSE(res.within_limits);
}

}  // namespace
}  // namespace proximity::core
