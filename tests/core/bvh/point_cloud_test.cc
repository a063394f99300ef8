// Point clouds (bvh/point_cloud.h) and clouds in scenes: the filter covers every input ball; the tree
// holds its points; collision and distance between a cloud and a mesh or a solid agree with brute force
// (every point against every triangle, closed forms for boxes and spheres); CLEAR, CheckStates,
// certified LINK and distance(q) on real robots in sensed worlds agree with a brute-force oracle over
// the robot's link meshes (never a false "free"); bad clouds are refused by name.

#include "bvh/point_cloud.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <unordered_map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "proximity/core/contact/scene_contacts.h"
#include "proximity/core/mesh/mesh.h"
#include "narrowphase/triangle.h"
#include "proximity/core/scene/scene.h"
#include "scene/scene_impl.h"

namespace proximity::core {
namespace {

using testing::ValueOrFail;

std::vector<Vec3> RandomPoints(std::mt19937_64& rng, int n, const Vec3& lo, const Vec3& hi) {
  std::vector<Vec3> out(static_cast<size_t>(n));
  for (Vec3& p : out) {
    for (int a = 0; a < 3; ++a) p[a] = std::uniform_real_distribution<double>(lo[a], hi[a])(rng);
  }
  return out;
}

// Brute force: the smallest (distance to the mesh surface - radius) over the cloud's balls.
double BruteMeshCloud(const TriangleMesh& mesh, const RigidTransform& X_WM, const PointCloud& cloud,
                      const RigidTransform& X_WC) {
  double best = std::numeric_limits<double>::infinity();
  for (int32_t i = 0; i < cloud.num_points(); ++i) {
    best = std::min(best, testing::PointMeshDistance(X_WC * cloud.point(i), mesh, X_WM) - cloud.point_radius(i));
  }
  return best;
}

double PointBoxDistance(const Vec3& p_B, const Vec3& h) {
  const Vec3 d = p_B.cwiseAbs() - h;
  return d.cwiseMax(0.0).norm();  // 0 inside: a solid
}

TEST(PointCloud, FilterCoversEveryInputBallAndTheTreeHoldsItsPoints) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 6; ++trial) {
    const int n = std::vector<int>{1, 7, 9, 1000, 5000, 20000}[trial];
    std::vector<Vec3> points = RandomPoints(rng, n, Vec3(-0.3, -0.2, 0.1), Vec3(0.4, 0.3, 0.5));
    if (trial == 5) {  // duplicates and a dense clump
      for (int i = 0; i < 2000; ++i) points[static_cast<size_t>(i)] = points[0] + 1e-4 * Vec3::Random();
    }
    const double radius = 0.01;
    for (const double voxel : {0.0, 0.005, 0.02}) {
      PointCloudOptions options;
      options.voxel_size = voxel;
      auto cloud = ValueOrFail(PointCloud::Build(points, radius, options));
      const PointCloudBuildStats& st = cloud->build_stats();
      EXPECT_EQ(st.input_points, n);
      EXPECT_EQ(st.points, cloud->num_points());
      if (voxel == 0.0) {
        EXPECT_EQ(cloud->num_points(), n);
        std::vector<std::array<double, 3>> a, b;
        for (const Vec3& p : points) a.push_back({p.x(), p.y(), p.z()});
        for (int32_t i = 0; i < cloud->num_points(); ++i) {
          b.push_back({cloud->point(i).x(), cloud->point(i).y(), cloud->point(i).z()});
          EXPECT_EQ(cloud->point_radius(i), radius);
        }
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        EXPECT_EQ(a, b);
      } else {
        EXPECT_LE(cloud->num_points(), n);
        if (trial == 5) {
          EXPECT_LT(cloud->num_points(), n - 1500) << "a voxel of " << voxel << " left the clump";
        }
      }
      // Every input ball lies in some kept ball (brute force over the kept points).
      for (size_t k = 0; k < points.size(); k += std::max<size_t>(1, points.size() / 500)) {
        bool covered = false;
        for (int32_t i = 0; i < cloud->num_points() && !covered; ++i) {
          covered = (points[k] - cloud->point(i)).norm() + radius <= cloud->point_radius(i) + 1e-12;
        }
        EXPECT_TRUE(covered) << "input point " << k << " with voxel " << voxel;
      }
      // The tree: children partition their parent's points, leaves hold at most kLeafPoints, every
      // node's box holds its points' balls.
      const auto& nodes = cloud->nodes();
      ASSERT_FALSE(nodes.empty());
      EXPECT_EQ(nodes[0].first, 0);
      EXPECT_EQ(nodes[0].count, cloud->num_points());
      for (const PointCloudNode& node : nodes) {
        if (node.is_leaf()) {
          EXPECT_LE(node.count, PointCloud::kLeafPoints);
        } else {
          const PointCloudNode& l = nodes[static_cast<size_t>(node.left)];
          const PointCloudNode& r = nodes[static_cast<size_t>(node.left + 1)];
          EXPECT_EQ(l.first, node.first);
          EXPECT_EQ(r.first, l.first + l.count);
          EXPECT_EQ(l.count + r.count, node.count);
        }
        for (int32_t i = node.first; i < node.first + node.count; ++i) {
          const double r = cloud->point_radius(i);
          EXPECT_TRUE(((cloud->point(i).array() - r) >= node.box.min.array()).all());
          EXPECT_TRUE(((cloud->point(i).array() + r) <= node.box.max.array()).all());
          EXPECT_LE(r, static_cast<double>(node.max_radius));
        }
      }
    }
  }
}

TEST(PointCloud, BadCloudsAreRefusedByName) {
  const std::vector<Vec3> good = {Vec3(0, 0, 0), Vec3(0.1, 0, 0)};
  auto message = [](const Result<std::shared_ptr<const PointCloud>>& r) {
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.error().message;
  };
  EXPECT_NE(message(PointCloud::Build(std::span<const Vec3>(), 0.01, {}, "cam")).find("cam: no points"),
            std::string::npos);
  std::vector<Vec3> nan = good;
  nan.push_back(Vec3(0, std::nan(""), 0));
  EXPECT_NE(message(PointCloud::Build(nan, 0.01)).find("point 2"), std::string::npos);
  std::vector<Vec3> far = good;
  far.push_back(Vec3(2e4, 0, 0));
  EXPECT_NE(message(PointCloud::Build(far, 0.01)).find("beyond the world"), std::string::npos);
  EXPECT_NE(message(PointCloud::Build(good, -1.0)).find("radius"), std::string::npos);
  EXPECT_NE(message(PointCloud::Build(good, std::nan(""))).find("radius"), std::string::npos);
  PointCloudOptions bad_voxel;
  bad_voxel.voxel_size = -0.1;
  EXPECT_NE(message(PointCloud::Build(good, 0.01, bad_voxel)).find("voxel_size"), std::string::npos);
  PointCloudOptions few;
  few.max_points = 1;
  EXPECT_NE(message(PointCloud::Build(good, 0.01, few)).find("more than the limit of 1"), std::string::npos);
  const std::vector<float> xyz = {0.f, 0.f, 0.f, 1.f};
  EXPECT_NE(message(PointCloud::Build(std::span<const float>(xyz), 0.01)).find("4 coordinates"), std::string::npos);
  const std::vector<float> ok = {0.f, 0.f, 0.f, 1.f, 2.f, 3.f};
  auto cloud = ValueOrFail(PointCloud::Build(std::span<const float>(ok), 0.01));
  EXPECT_EQ(cloud->num_points(), 2);
}

// Clouds against a non-convex mesh at random poses: collision agrees with brute force (padding too),
// and the distance interval brackets the brute-force distance within its budget.
TEST(PointCloud, MeshQueriesAgreeWithBruteForce) {
  std::mt19937_64 rng(5);
  TriangleMesh mesh = MakeTorusMesh(0.2, 0.06, 24, 12);
  auto model = ValueOrFail(MeshModel::Build(mesh));
  // The mesh's distance maps (signed, and unsigned as scenes make them), coarse so that many points
  // fall to the exact test.
  auto signed_map = ValueOrFail(SignedDistanceMap::Build(*model, 16));
  SdfBuildOptions unsigned_options;
  unsigned_options.unsigned_distance = true;
  auto unsigned_map = ValueOrFail(SignedDistanceMap::Build(*model, 16, unsigned_options));
  int colliding = 0, free = 0;
  for (int trial = 0; trial < testing::Cases(300); ++trial) {
    const int n = std::uniform_int_distribution<int>(1, 400)(rng);
    const double spread = std::uniform_real_distribution<double>(0.02, 0.4)(rng);
    const double radius = std::uniform_real_distribution<double>(0.0, 0.03)(rng);
    auto cloud = ValueOrFail(PointCloud::Build(RandomPoints(rng, n, Vec3::Constant(-spread), Vec3::Constant(spread)),
                                               radius, {}));
    const RigidTransform X_WM = testing::RandomPose(rng, Vec3::Constant(-0.1), Vec3::Constant(0.1));
    const RigidTransform X_WC = testing::RandomPose(rng, Vec3::Constant(-0.4), Vec3::Constant(0.4));
    const double padding = trial % 3 == 0 ? 0.01 : 0.0;
    const double brute = BruteMeshCloud(mesh, X_WM, *cloud, X_WC);
    const CloudCollision c = CollideMeshCloud(*model, X_WM, *cloud, X_WC, padding);
    if (std::abs(brute - padding) > 1e-9) {
      EXPECT_EQ(c.colliding, brute <= padding) << "trial " << trial << " brute " << brute;
    }
    (brute <= padding ? colliding : free)++;
    // The map's pruning changes the work, never the answer.
    const SignedDistanceMap* sdf = trial % 2 ? signed_map.get() : unsigned_map.get();
    const CloudCollision with_map = CollideMeshCloud(*model, X_WM, *cloud, X_WC, padding, {}, sdf);
    if (std::abs(brute - padding) > 1e-9) {
      EXPECT_EQ(with_map.colliding, brute <= padding) << "trial " << trial;
    }
    if (c.colliding) {
      ASSERT_EQ(c.contacts.size(), 1u);
      const int32_t i = c.contacts[0].point;
      const auto& tri = mesh.triangles[static_cast<size_t>(c.contacts[0].triangle)];
      const Vec3 p_M = X_WM.inverse() * (X_WC * cloud->point(i));
      const Vec3 cp = ClosestPointOnTriangle(p_M, mesh.vertices[tri[0]], mesh.vertices[tri[1]], mesh.vertices[tri[2]]);
      EXPECT_LE((p_M - cp).norm(), cloud->point_radius(i) + padding + 1e-9);
    }
    // Every contact with all_contacts: exactly the balls within reach.
    CollisionRequest all;
    all.all_contacts = true;
    const CloudCollision every = CollideMeshCloud(*model, X_WM, *cloud, X_WC, padding, all);
    int expected = 0;
    for (int32_t i = 0; i < cloud->num_points(); ++i) {
      const double d = testing::PointMeshDistance(X_WC * cloud->point(i), mesh, X_WM) - cloud->point_radius(i);
      expected += d <= padding;
    }
    EXPECT_EQ(static_cast<int>(every.contacts.size()), expected) << "trial " << trial;
    const CloudCollision every_map = CollideMeshCloud(*model, X_WM, *cloud, X_WC, padding, all, sdf);
    EXPECT_EQ(static_cast<int>(every_map.contacts.size()), expected) << "trial " << trial;
    for (const double rel : {0.0, 0.2, 1.0}) {
     for (const SignedDistanceMap* map : {static_cast<const SignedDistanceMap*>(nullptr), sdf}) {
      DistanceRequest req;
      req.rel_err = rel;
      const DistanceResult d = ValueOrFail(ComputeMeshCloudDistance(*model, X_WM, *cloud, X_WC, req, map));
      const double truth = std::max(0.0, brute);
      EXPECT_LE(d.lower_bound, truth + 1e-12) << "trial " << trial;
      EXPECT_GE(d.upper_bound, truth - 1e-12) << "trial " << trial;
      EXPECT_LE(d.upper_bound, d.lower_bound * (1.0 + rel) + 1e-12) << "trial " << trial;
      EXPECT_EQ(d.intersecting, truth == 0.0) << "trial " << trial;
      if (!d.intersecting) {
        EXPECT_NEAR((d.p_WA - d.p_WB).norm(), d.upper_bound, 1e-9);
      }
     }
    }
  }
  EXPECT_GT(colliding, 10);
  EXPECT_GT(free, 10);
}

// Clouds against boxes and spheres (solids: a point inside collides), by closed forms.
TEST(PointCloud, ShapeQueriesAgreeWithClosedForms) {
  std::mt19937_64 rng(9);
  int colliding = 0, free = 0;
  for (int trial = 0; trial < testing::Cases(300); ++trial) {
    const bool box = trial % 2 == 0;
    const Vec3 h(0.05 + 0.1 * std::uniform_real_distribution<double>()(rng), 0.08, 0.12);
    const Shape shape = box ? Shape(Box{h}) : Shape(Sphere{Vec3(0.01, 0, 0), h.x()});
    const int n = std::uniform_int_distribution<int>(1, 200)(rng);
    const double radius = std::uniform_real_distribution<double>(0.0, 0.02)(rng);
    auto cloud = ValueOrFail(PointCloud::Build(RandomPoints(rng, n, Vec3::Constant(-0.2), Vec3::Constant(0.2)), radius, {}));
    const RigidTransform X_WS = testing::RandomPose(rng, Vec3::Constant(-0.1), Vec3::Constant(0.1));
    const RigidTransform X_WC = testing::RandomPose(rng, Vec3::Constant(-0.3), Vec3::Constant(0.3));
    double brute = std::numeric_limits<double>::infinity();
    for (int32_t i = 0; i < cloud->num_points(); ++i) {
      const Vec3 p_S = X_WS.inverse() * (X_WC * cloud->point(i));
      const double d = box ? PointBoxDistance(p_S, h) : std::max(0.0, (p_S - Vec3(0.01, 0, 0)).norm() - h.x());
      brute = std::min(brute, d - cloud->point_radius(i));
    }
    const CloudCollision c = CollideShapeCloud(shape, X_WS, *cloud, X_WC, 0.0);
    if (std::abs(brute) > 1e-7) {
      EXPECT_EQ(c.colliding, brute <= 0.0) << "trial " << trial << " brute " << brute;
    }
    (brute <= 0.0 ? colliding : free)++;
    const DistanceResult d = ValueOrFail(ComputeShapeCloudDistance(shape, X_WS, *cloud, X_WC, {}));
    const double truth = std::max(0.0, brute);
    EXPECT_LE(d.lower_bound, truth + 1e-9) << "trial " << trial;
    EXPECT_GE(d.upper_bound, truth - 1e-9) << "trial " << trial;
    EXPECT_NEAR(d.upper_bound, truth, 1e-7) << "trial " << trial;
  }
  EXPECT_GT(colliding, 10);
  EXPECT_GT(free, 10);
}

// The distance from p_W to one link geometry posed at X_WG: every triangle of a mesh (a surface), a
// closed form for a box, sphere or cylinder (solids: 0 inside).
double PointLinkDistance(const Vec3& p_W, const LinkGeometry& g, const RigidTransform& X_WG) {
  if (g.mesh != nullptr) return testing::PointMeshDistance(p_W, g.mesh->mesh(), X_WG);
  const Vec3 p = X_WG.inverse() * p_W;
  switch (g.type) {
    case ShapeType::kBox:
      return PointBoxDistance(p, 0.5 * g.box_size);
    case ShapeType::kSphere:
      return std::max(0.0, p.norm() - g.radius);
    case ShapeType::kCylinder:
      return Vec3(std::max(0.0, p.head<2>().norm() - g.radius), std::max(0.0, std::abs(p.z()) - 0.5 * g.length), 0).norm();
    default:
      ADD_FAILURE() << "the oracle has no closed form for this link geometry";
      return 0.0;
  }
}

// A sphere (centre in the geometry frame, radius) holding a link geometry.
Sphere LinkBoundingSphere(const LinkGeometry& g) {
  if (g.mesh != nullptr) return g.mesh->sphere(0);
  switch (g.type) {
    case ShapeType::kBox:
      return {Vec3::Zero(), 0.5 * g.box_size.norm()};
    case ShapeType::kSphere:
      return {Vec3::Zero(), g.radius};
    default:
      return {Vec3::Zero(), std::hypot(g.radius, 0.5 * g.length)};
  }
}

// The oracle for scenes: the smallest (distance - radius) between any link geometry of the robot at q
// and any ball of the cloud, every point against every triangle (closed forms for primitives).
double BruteRobotCloud(const RobotModel& robot, std::span<const double> q, const PointCloud& cloud,
                       const RigidTransform& X_WC) {
  const std::vector<RigidTransform> X_WL = ValueOrFail(robot.ForwardKinematics(q));
  double best = std::numeric_limits<double>::infinity();
  for (int32_t l = 0; l < robot.num_links(); ++l) {
    for (const LinkGeometry& g : robot.link(l).geometries) {
      const RigidTransform X_WG = X_WL[static_cast<size_t>(l)] * g.X_LG;
      // Points far from the geometry's bounding sphere cannot be nearest: skipped (exactly).
      const Sphere s = LinkBoundingSphere(g);
      const Vec3 c_W = X_WG * s.center;
      for (int32_t i = 0; i < cloud.num_points(); ++i) {
        const Vec3 p = X_WC * cloud.point(i);
        if ((p - c_W).norm() - s.radius - cloud.point_radius(i) >= best) continue;
        best = std::min(best, PointLinkDistance(p, g, X_WG) - cloud.point_radius(i));
      }
    }
  }
  return best;
}

struct CloudWorld {
  std::shared_ptr<const PointCloud> cloud;
  RigidTransform X_WC;
};

// Points on the surfaces of a few boxes around the robot (a table and shelves as a camera sees them).
CloudWorld SensedWorld(std::mt19937_64& rng, double spacing, double radius) {
  std::vector<Vec3> points = SensedBoxPoints(rng, spacing);
  CloudWorld w;
  w.X_WC = testing::RandomPose(rng, Vec3::Constant(-0.01), Vec3::Constant(0.01));
  for (Vec3& p : points) p = w.X_WC.inverse() * p;
  PointCloudOptions options;
  options.voxel_size = 0.0;
  w.cloud = ValueOrFail(PointCloud::Build(points, radius, options));
  return w;
}

SceneDescription CloudScene(const RobotCase& rc, const CloudWorld& w) {
  SceneDescription d;
  d.robot = LoadRobot(rc);
  WorldObject o;
  o.id = "camera";
  o.parts.push_back({Geometry::Cloud(w.cloud), w.X_WC});
  d.objects.push_back(o);
  return d;
}

// Points hashed in a uniform grid (a structure of the test's own): the volume oracle below visits only
// the cells within reach of each link's bounding sphere.
class PointGrid {
 public:
  PointGrid(const PointCloud& cloud, const RigidTransform& X_WC, double cell) : cell_(cell) {
    for (int32_t i = 0; i < cloud.num_points(); ++i) {
      points_W_.push_back(X_WC * cloud.point(i));
      cells_[Key(Cell(points_W_.back()))].push_back(i);
    }
  }
  // Calls f(i, p_W) for every point within `reach` of c_W (and some beyond).
  template <class F>
  void Near(const Vec3& c_W, double reach, F&& f) const {
    const Eigen::Vector3i lo = Cell(c_W - Vec3::Constant(reach)), hi = Cell(c_W + Vec3::Constant(reach));
    for (int x = lo.x(); x <= hi.x(); ++x) {
      for (int y = lo.y(); y <= hi.y(); ++y) {
        for (int z = lo.z(); z <= hi.z(); ++z) {
          auto it = cells_.find(Key(Eigen::Vector3i(x, y, z)));
          if (it == cells_.end()) continue;
          for (int32_t i : it->second) f(i, points_W_[static_cast<size_t>(i)]);
        }
      }
    }
  }

 private:
  Eigen::Vector3i Cell(const Vec3& p) const { return (p / cell_).array().floor().cast<int>(); }
  static int64_t Key(const Eigen::Vector3i& c) {
    return (int64_t{c.x() + 100000} * 200001 + (c.y() + 100000)) * 200001 + (c.z() + 100000);
  }
  double cell_;
  std::vector<Vec3> points_W_;
  std::unordered_map<int64_t, std::vector<int32_t>> cells_;
};

// The smallest (distance - radius) over the balls near any link mesh at q (every point within reach of
// a link's bounding sphere against the link), stopping below -1e-9: enough to decide CLEAR's world part
// away from ties.
double BruteRobotCloudNear(const RobotModel& robot, std::span<const double> q, const PointCloud& cloud,
                           const PointGrid& grid) {
  const std::vector<RigidTransform> X_WL = ValueOrFail(robot.ForwardKinematics(q));
  double best = std::numeric_limits<double>::infinity();
  for (int32_t l = 0; l < robot.num_links() && best > -1e-9; ++l) {
    for (const LinkGeometry& g : robot.link(l).geometries) {
      const RigidTransform X_WG = X_WL[static_cast<size_t>(l)] * g.X_LG;
      const Sphere s = LinkBoundingSphere(g);
      const Vec3 c_W = X_WG * s.center;
      grid.Near(c_W, s.radius + cloud.max_radius(), [&](int32_t i, const Vec3& p) {
        if (best <= -1e-9 || (p - c_W).norm() - s.radius - cloud.point_radius(i) >= std::min(best, 1e-6)) return;
        best = std::min(best, PointLinkDistance(p, g, X_WG) - cloud.point_radius(i));
      });
    }
  }
  return best;
}

// Points on the surfaces of five boxes around the robot (within `reach` of its base, none through
// its base), about `count` of them.
CloudWorld SensedWorldOf(std::mt19937_64& rng, int count, double radius, double reach) {
  std::vector<std::pair<Vec3, RigidTransform>> boxes;
  double area = 0.0;
  for (int b = 0; b < 5; ++b) {
    const Vec3 h(std::uniform_real_distribution<double>(0.05, 0.25)(rng), std::uniform_real_distribution<double>(0.05, 0.25)(rng),
                 std::uniform_real_distribution<double>(0.02, 0.15)(rng));
    RigidTransform X;
    do {
      X = testing::RandomPose(rng, Vec3(-reach, -reach, 0.0), Vec3(reach, reach, reach));
    } while (X.p.head<2>().norm() < 0.35 * reach + h.norm());
    boxes.push_back({h, X});
    area += 8.0 * (h.x() * h.y() + h.y() * h.z() + h.x() * h.z());
  }
  const double spacing = std::sqrt(area / count);
  std::vector<Vec3> points;
  for (const auto& [h, X] : boxes) {
    const std::vector<Vec3> s = BoxSurfacePoints(rng, h, X, spacing);
    points.insert(points.end(), s.begin(), s.end());
  }
  CloudWorld w;
  w.X_WC = RigidTransform::Identity();
  w.cloud = ValueOrFail(PointCloud::Build(points, radius, {}));
  return w;
}

// CLEAR and CheckStates at volume: clouds of about 10,000 and 100,000 points sent (the default filter
// keeps fewer of the dense one), on
// PROX_CLOUD_STATES random states per robot and cloud (default 1,500; a quarter under the sanitizers;
// the 100,000-state run is committed with the benchmark results): never "free" where a ball touches a
// link, never a world contact where none does (ties within 1e-9 aside).
TEST(PointCloudScene, ClearAgreesWithBruteForceAtVolume) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "no robots: ../shared/data and dart-doc are both absent";
  const char* env = std::getenv("PROX_CLOUD_STATES");
  const int states = env != nullptr ? std::atoi(env) : testing::Cases(1500);
  for (const RobotCase& rc : robots) {
    // The robot's reach: the farthest link origin over random states.
    std::mt19937_64 rng(101);
    double reach = 0.0;
    {
      const auto robot = LoadRobot(rc);
      for (int k = 0; k < 200; ++k) {
        for (const RigidTransform& X : ValueOrFail(robot->ForwardKinematics(RandomState(rng, *robot)))) {
          reach = std::max(reach, X.p.norm());
        }
      }
    }
    for (const int count : {10000, 100000}) {
      // A world clear of the robot at its zero state (clamped to the limits), so that the cloud blocks
      // some states and not others.
      CloudWorld w;
      for (int attempt = 0;; ++attempt) {
        w = SensedWorldOf(rng, count, 0.005, 0.8 * reach);
        SceneDescription probe = CloudScene(rc, w);
        probe.self_clearance_fill = SelfClearanceFill::kOnUse;
        auto probe_scene = ValueOrFail(Scene::Build(probe));
        std::vector<double> zero(static_cast<size_t>(probe_scene->dof()), 0.0);
        for (int j = 0; j < probe_scene->dof(); ++j) {
          zero[static_cast<size_t>(j)] = std::clamp(0.0, probe_scene->robot().lower_limits()[j],
                                                    probe_scene->robot().upper_limits()[j]);
        }
        SceneDistanceRequest world;
        world.self = false;
        SceneCache probe_cache;
        if (ValueOrFail(probe_scene->ComputeDistance(zero, world, &probe_cache)).lower_bound > 0.0) break;
        ASSERT_LT(attempt, 20) << rc.name << ": no world clear of the zero state";
      }
      const PointGrid grid(*w.cloud, w.X_WC, 0.05);
      SceneDescription d = CloudScene(rc, w);
      d.self_clearance_fill = SelfClearanceFill::kOnUse;
      auto scene = ValueOrFail(Scene::Build(d));
      SceneCache cache;
      int64_t touching = 0, false_free = 0, false_contact = 0, ties = 0;
      std::vector<double> qs;
      std::vector<bool> expect;
      for (int k = 0; k < states; ++k) {
        const std::vector<double> q = RandomState(rng, scene->robot());
        const StateResult r = ValueOrFail(scene->CheckState(q, &cache));
        const double brute = BruteRobotCloudNear(scene->robot(), q, *w.cloud, grid);
        if (std::abs(brute) <= 1e-9) {
          ++ties;
        } else if (brute < 0.0) {
          ++touching;
          false_free += r.free;
        } else if (!r.free && !r.contact.self) {
          ++false_contact;
        }
        if (k < 2000) {
          qs.insert(qs.end(), q.begin(), q.end());
          expect.push_back(r.free);
        }
      }
      std::cout << rc.name << ", " << w.cloud->build_stats().input_points << " points sent, " << w.cloud->num_points()
                << " kept: " << states << " states, " << touching
                << " touching the cloud, " << false_free << " false free, " << false_contact << " false contacts, "
                << ties << " ties\n";
      EXPECT_EQ(false_free, 0) << rc.name << " " << count;
      EXPECT_EQ(false_contact, 0) << rc.name << " " << count;
      EXPECT_GT(touching, states / 50) << rc.name << " " << count << ": the cloud should reach the robot";
      std::vector<StateResult> out(expect.size());
      ASSERT_TRUE(scene->CheckStates(qs, out, &cache).ok());
      for (size_t k = 0; k < expect.size(); ++k) {
        EXPECT_EQ(out[k].free, expect[k]) << rc.name << " " << count << " state " << k;
      }
    }
  }
}

// CLEAR, the batch and distance(q) on real robots among sensed points, against the oracle.
TEST(PointCloudScene, ClearBatchAndDistanceAgreeWithBruteForceOnRobots) {
  const auto robots = FirstUnderSanitizer(Robots());
  if (robots.empty()) GTEST_SKIP() << "no robots: ../shared/data and dart-doc are both absent";
  for (const RobotCase& rc : robots) {
    std::mt19937_64 rng(17);
    const CloudWorld w = SensedWorld(rng, 0.02, 0.01);
    SceneDescription d = CloudScene(rc, w);
    d.self_clearance_fill = SelfClearanceFill::kOnUse;
    auto scene = ValueOrFail(Scene::Build(d));
    SceneCache cache;
    const int n = testing::Cases(120);
    std::vector<double> qs;
    std::vector<bool> expect;
    int world_hits = 0, free = 0;
    const auto check = [&](const std::vector<double>& q) {
      const int k = static_cast<int>(expect.size());
      const StateResult r = ValueOrFail(scene->CheckState(q, &cache));
      const double brute = BruteRobotCloud(scene->robot(), q, *w.cloud, w.X_WC);
      // Self collisions are the scene's own business: compare the world part where the state is free of
      // self collision.
      if (brute <= 0.0) {
        ++world_hits;
        EXPECT_FALSE(r.free) << rc.name << " state " << k << ": a ball touches a link (" << brute << ") but CLEAR says free";
      } else if (r.free) {
        ++free;
      } else if (!r.contact.self && std::abs(brute) > 1e-9) {
        ADD_FAILURE() << rc.name << " state " << k << ": CLEAR reports the cloud, but the nearest ball is " << brute
                      << " m away";
      }
      qs.insert(qs.end(), q.begin(), q.end());
      expect.push_back(r.free);
      // distance(q) over the world alone brackets the oracle.
      SceneDistanceRequest dr;
      dr.self = false;
      const SceneDistanceResult dist = ValueOrFail(scene->ComputeDistance(q, dr, &cache));
      const double truth = std::max(0.0, brute);
      EXPECT_LE(dist.lower_bound, truth + 1e-9) << rc.name << " state " << k;
      EXPECT_GE(dist.upper_bound, truth - 1e-9) << rc.name << " state " << k;
      EXPECT_NEAR(dist.upper_bound, truth, 1e-7) << rc.name << " state " << k;
    };
    for (int k = 0; k < n; ++k) check(RandomState(rng, scene->robot()));
    // Fewer states (under a sanitizer) may hold too few of either kind: more random states are drawn, and
    // the grid's sign (an oracle of the test's own, not the scene's answer) picks the kind still missing.
    const PointGrid grid(*w.cloud, w.X_WC, 0.05);
    for (int draw = 0; (world_hits <= 3 || free <= 3) && draw < 100 * n; ++draw) {
      const std::vector<double> q = RandomState(rng, scene->robot());
      const double near = BruteRobotCloudNear(scene->robot(), q, *w.cloud, grid);
      if ((world_hits <= 3 && near < -1e-9) || (free <= 3 && near > 1e-9)) check(q);
    }
    std::vector<StateResult> out(expect.size());
    ASSERT_TRUE(scene->CheckStates(qs, out, &cache).ok());
    for (size_t k = 0; k < expect.size(); ++k) EXPECT_EQ(out[k].free, expect[k]) << rc.name << " state " << k;
  }
}

// Certified LINK never says "free" where a dense 1e-3 rad reference finds a state touching the cloud.
TEST(PointCloudScene, CertifiedLinkNeverMissesAgainstTheDenseReference) {
  const auto robots = FirstUnderSanitizer(Robots());
  if (robots.empty()) GTEST_SKIP() << "no robots: ../shared/data and dart-doc are both absent";
  for (const RobotCase& rc : robots) {
    std::mt19937_64 rng(23);
    const CloudWorld w = SensedWorld(rng, 0.03, 0.01);
    SceneDescription d = CloudScene(rc, w);
    d.self_clearance_fill = SelfClearanceFill::kOnUse;
    auto scene = ValueOrFail(Scene::Build(d));
    SceneCache cache;
    MotionRequest req;
    req.mode = MotionRequest::Mode::kCertified;
    int blocked = 0, clear = 0;
    for (int e = 0; e < testing::Cases(120); ++e) {
      auto [q0, q1] = RandomEdge(rng, *scene, &cache);
      const MotionResult m = ValueOrFail(scene->CheckMotion(q0, q1, req, &cache));
      const double dense = DenseFirstCollision(*scene, q0, q1, &cache);
      if (dense >= 0.0) {
        ++blocked;
        EXPECT_FALSE(m.free) << rc.name << " edge " << e << ": certified free, dense collides at t = " << dense;
      } else {
        clear += m.free;
      }
    }
    EXPECT_GT(blocked, 0) << rc.name;
    EXPECT_GT(clear, 0) << rc.name;
  }
}

// Contacts name the touching balls with their exact depth; a cloud is refused as an attached object
// or a moving body; geometry of a world update with a cloud keeps the rest of the scene.
TEST(PointCloudScene, ContactsUpdatesAndRefusals) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "no robots: ../shared/data and dart-doc are both absent";
  const RobotCase& rc = robots.back();
  std::mt19937_64 rng(31);
  const CloudWorld w = SensedWorld(rng, 0.02, 0.01);
  auto scene = ValueOrFail(Scene::Build(CloudScene(rc, w)));
  SceneCache cache;
  std::vector<double> hit;
  for (int k = 0; k < 2000 && hit.empty(); ++k) {
    const std::vector<double> q = RandomState(rng, scene->robot());
    const StateResult r = ValueOrFail(scene->CheckState(q, &cache));
    if (!r.free && !r.contact.self) hit = q;
  }
  ASSERT_FALSE(hit.empty()) << "no state touching the cloud";
  SceneContactRequest cr;
  const SceneContactResult contacts = ValueOrFail(ComputeSceneContacts(*scene, hit, cr, &cache));
  bool saw_cloud = false;
  double deepest = 0.0;
  for (const PairPenetration& p : contacts.pairs) {
    if (p.pair.self) continue;
    saw_cloud = true;
    EXPECT_EQ(p.method, PenetrationMethod::kCloud);
    EXPECT_GE(p.depth, 0.0);
    EXPECT_LE(p.depth_lower, p.depth);
    EXPECT_GE(p.depth_upper, p.depth);
    EXPECT_FALSE(p.points.empty());
    deepest = std::max(deepest, p.depth);
  }
  // The deepest ball's depth is the oracle's: its radius minus its centre's distance to the links.
  EXPECT_NEAR(deepest, -std::min(0.0, BruteRobotCloud(scene->robot(), hit, *w.cloud, w.X_WC)), 1e-9);
  EXPECT_TRUE(saw_cloud);

  SceneDescription attached = CloudScene(rc, w);
  AttachedObject a;
  a.id = "sensed";
  a.link = scene->robot().link(scene->robot().num_links() - 1).name;
  a.parts.push_back({Geometry::Cloud(w.cloud), RigidTransform::Identity()});
  attached.attached.push_back(a);
  auto refused = Scene::Build(attached);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("point cloud cannot be attached"), std::string::npos) << refused.error().message;

  ContinuousRequest creq;
  auto body = scene->TimeOfFirstContact(Geometry::Cloud(w.cloud), RigidTransform::Identity(), RigidTransform::Identity(), creq);
  ASSERT_FALSE(body.ok());
  EXPECT_NE(body.error().message.find("point cloud"), std::string::npos);

  // Replacing the cloud by an empty region's makes the state free of the world.
  WorldUpdate u;
  WorldObject moved;
  moved.id = "camera";
  moved.parts.push_back({Geometry::Cloud(w.cloud), RigidTransform(Mat3::Identity(), Vec3(50, 50, 50))});
  u.replace.push_back(moved);
  auto next = ValueOrFail(scene->Update(u));
  const StateResult after = ValueOrFail(next->CheckState(hit, &cache));
  EXPECT_TRUE(after.free || after.contact.self);
}

// The link meshes' distance maps belong to the scene's SelfClearanceMaps object: scenes that share it
// (given the same object, or made by Update) share each mesh's map, made once; another object makes its
// own; an object's bytes count them.
TEST(PointCloudScene, LinkDistanceMapsBelongToTheSceneSharedMapsObject) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "no robots: ../shared/data and dart-doc are both absent";
  const RobotCase& rc = robots.back();
  std::mt19937_64 rng(37);
  const CloudWorld w = SensedWorld(rng, 0.02, 0.01);
  SceneDescription d = CloudScene(rc, w);
  d.self_clearance_fill = SelfClearanceFill::kOnUse;
  d.self_clearance_maps = SelfClearanceMaps::For(d.robot);
  auto first = ValueOrFail(Scene::Build(d));
  auto second = ValueOrFail(Scene::Build(d));
  WorldUpdate u;
  WorldObject moved;
  moved.id = "camera";
  moved.parts.push_back({Geometry::Cloud(w.cloud), RigidTransform(Mat3::Identity(), Vec3(0.01, 0, 0))});
  u.replace.push_back(moved);
  auto updated = ValueOrFail(first->Update(u));
  d.self_clearance_maps = nullptr;
  auto own = ValueOrFail(Scene::Build(d));
  // The same robot without the cloud: its maps object holds the self-clearance maps alone.
  SceneDescription bare = d;
  bare.objects.clear();
  auto without = ValueOrFail(Scene::Build(bare));
  std::set<const SignedDistanceMap*> distinct;
  int64_t map_bytes = 0;
  for (int32_t i = 0; i < internal::Impl(*first).num_robot_parts(); ++i) {
    const Geometry& g = internal::Impl(*first).robot_part_geometry(i);
    if (!g.is_mesh()) continue;
    ASSERT_NE(g.distance_map, nullptr) << "robot part " << i;
    if (distinct.insert(g.distance_map.get()).second) map_bytes += static_cast<int64_t>(g.distance_map->memory_bytes());
    EXPECT_EQ(internal::Impl(*second).robot_part_geometry(i).distance_map, g.distance_map) << "robot part " << i;
    EXPECT_EQ(internal::Impl(*updated).robot_part_geometry(i).distance_map, g.distance_map) << "robot part " << i;
    EXPECT_NE(internal::Impl(*own).robot_part_geometry(i).distance_map, g.distance_map) << "robot part " << i;
    EXPECT_EQ(internal::Impl(*without).robot_part_geometry(i).distance_map, nullptr) << "robot part " << i;
  }
  ASSERT_FALSE(distinct.empty()) << rc.name << " has no link mesh";
  EXPECT_EQ(first->self_clearance_maps(), updated->self_clearance_maps());
  EXPECT_EQ(own->self_clearance_maps()->bytes() - without->self_clearance_maps()->bytes(), map_bytes);
}

}  // namespace
}  // namespace proximity::core
