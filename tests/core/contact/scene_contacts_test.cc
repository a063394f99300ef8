// Scene contacts and pair signed distance (scene_contacts.cc, on scene_pairs.cc's CollidingParts and
// NamedParts): closed-form depths of primitive pairs, convex meshes against our EPA on the primitives they
// tessellate exactly, a non-convex mesh against its closed form and a sampled reference within the reported
// bracket, padding, self pairs, agreement with CLEAR on real robots, and bad input.

#include "proximity/core/contact/scene_contacts.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "contact/epa.h"
#include "proximity/core/mesh/mesh.h"
#include "bvh/bvh.h"
#include "bvh/shape_query.h"
#include "narrowphase/convex.h"

namespace proximity::core {
namespace {

// A robot whose link `tool` slides along x (joint "x") and, when `second` is set, a link `tool_b`
// sliding along y (joint "y"); both hang from `base` (siblings: their pair is checked).
std::shared_ptr<const RobotModel> SliderRobot(const std::string& geometry, const std::string& second = "") {
  std::string urdf = R"(<robot name="slider"><link name="base"/>
    <link name="tool"><collision><geometry>)" + geometry + R"(</geometry></collision></link>
    <joint name="x" type="prismatic"><parent link="base"/><child link="tool"/><axis xyz="1 0 0"/>
      <limit lower="-5" upper="5" effort="1" velocity="1"/></joint>)";
  if (!second.empty()) {
    urdf += R"(<link name="tool_b"><collision><geometry>)" + second + R"(</geometry></collision></link>
      <joint name="y" type="prismatic"><parent link="base"/><child link="tool_b"/><axis xyz="0 1 0"/>
        <limit lower="-5" upper="5" effort="1" velocity="1"/></joint>)";
  }
  urdf += "</robot>";
  auto robot = RobotModel::FromUrdfString(urdf);
  EXPECT_TRUE(robot.ok()) << robot.error().message;
  return robot.ok() ? robot.value() : nullptr;
}

WorldObject Object(const std::string& id, Geometry g, const Vec3& p, const Mat3& R = Mat3::Identity()) {
  WorldObject o;
  o.id = id;
  o.parts.push_back({std::move(g), RigidTransform(R, p)});
  return o;
}

std::shared_ptr<const Scene> MakeScene(std::shared_ptr<const RobotModel> robot, std::vector<WorldObject> objects,
                                       double padding = 0.0) {
  SceneDescription d;
  d.robot = std::move(robot);
  d.objects = std::move(objects);
  d.default_padding = padding;
  auto scene = Scene::Build(std::move(d));
  EXPECT_TRUE(scene.ok()) << scene.error().message;
  return scene.ok() ? scene.value() : nullptr;
}

SceneContactResult Contacts(const Scene& scene, std::vector<double> q, SceneContactRequest request = {}) {
  SceneCache cache;
  return testing::ValueOrFail(ComputeSceneContacts(scene, q, request, &cache));
}

TEST(SceneContactsTest, SphereSphereDepthIsClosedForm) {
  auto scene = MakeScene(SliderRobot(R"(<sphere radius="0.3"/>)"),
                         {Object("ball", Geometry::Primitive(Sphere{Vec3::Zero(), 0.2}), Vec3(0.4, 0.05, -0.02))});
  ASSERT_NE(scene, nullptr);
  for (double x : {0.0, 0.02, -0.03}) {
    const SceneContactResult r = Contacts(*scene, {x});
    ASSERT_EQ(r.pairs.size(), 1u);
    const PairPenetration& p = r.pairs[0];
    const Vec3 d = Vec3(0.4, 0.05, -0.02) - Vec3(x, 0, 0);
    EXPECT_NEAR(p.depth, 0.5 - d.norm(), 1e-9);
    EXPECT_NEAR(p.depth_lower, p.depth, 1e-9);
    EXPECT_NEAR(p.depth_upper, p.depth, 1e-9);
    EXPECT_LT((p.normal_W - d.normalized()).norm(), 1e-9);
    EXPECT_EQ(p.method, PenetrationMethod::kConvex);
    EXPECT_EQ(p.pair.Describe(*scene), "tool x object 'ball'");
    ASSERT_FALSE(p.points.empty());
    // The point lies halfway between the deepest points, on the line between the centres.
    const Vec3 mid = Vec3(x, 0, 0) + d.normalized() * (0.3 - 0.5 * p.depth);
    EXPECT_LT((p.points[0].p_W - mid).norm(), 1e-9);
  }
  // Apart: no pair.
  EXPECT_TRUE(Contacts(*scene, {-0.2}).pairs.empty());
}

TEST(SceneContactsTest, BoxBoxFaceDepthIsClosedFormWithFourPoints) {
  auto scene = MakeScene(SliderRobot(R"(<box size="0.2 0.2 0.2"/>)"),
                         {Object("block", Geometry::Primitive(Box{Vec3(0.5, 0.5, 0.5)}), Vec3(0.55, 0.1, 0.05))});
  ASSERT_NE(scene, nullptr);
  for (double x : {0.0, 0.01, 0.037}) {
    const SceneContactResult r = Contacts(*scene, {x});
    ASSERT_EQ(r.pairs.size(), 1u);
    const PairPenetration& p = r.pairs[0];
    // The tool spans [x - 0.1, x + 0.1] along x, the block starts at 0.05.
    EXPECT_NEAR(p.depth, x + 0.1 - 0.05, 1e-9);
    EXPECT_LT((p.normal_W - Vec3::UnitX()).norm(), 1e-9);
    ASSERT_EQ(p.points.size(), 4u);
    for (const SceneContactPoint& c : p.points) {
      EXPECT_NEAR(c.depth, p.depth, 1e-9);
      EXPECT_NEAR(c.p_W.x(), 0.5 * (x + 0.1 + 0.05), 1e-9);
    }
  }
}

TEST(SceneContactsTest, CapsuleAndCylinderDepthsAreClosedForm) {
  // Robot: a sphere; world: a capsule (axis z) beside it and a cylinder whose flat cap it sinks into.
  auto scene = MakeScene(SliderRobot(R"(<sphere radius="0.1"/>)"),
                         {Object("capsule", Geometry::Primitive(Capsule{0.15, 0.3}), Vec3(0.2, 0.0, 0.1))});
  ASSERT_NE(scene, nullptr);
  for (double x : {0.0, 0.03}) {
    const SceneContactResult r = Contacts(*scene, {x});
    ASSERT_EQ(r.pairs.size(), 1u);
    EXPECT_NEAR(r.pairs[0].depth, 0.25 - (0.2 - x), 1e-9);
    EXPECT_LT((r.pairs[0].normal_W - Vec3::UnitX()).norm(), 1e-9);
  }
  // A cylinder lying along x (rotated about y) whose curved side is pressed by a box face from below:
  // depth = top of the box minus the lowest point of the cylinder.
  const Mat3 R = Eigen::AngleAxisd(M_PI / 2, Vec3::UnitY()).toRotationMatrix();
  auto boxes = MakeScene(SliderRobot(R"(<box size="0.4 0.4 0.2"/>)"),
                         {Object("roller", Geometry::Primitive(Cylinder{0.1, 0.1}), Vec3(0.0, 0.0, 0.18), R)});
  ASSERT_NE(boxes, nullptr);
  for (double x : {0.0, 0.05}) {
    const SceneContactResult r = Contacts(*boxes, {x});
    ASSERT_EQ(r.pairs.size(), 1u);
    EXPECT_NEAR(r.pairs[0].depth, 0.1 - (0.18 - 0.1), 1e-9);
    EXPECT_LT((r.pairs[0].normal_W - Vec3::UnitZ()).norm(), 1e-7);
  }
  // A cylinder standing on its cap in a box's face.
  auto caps = MakeScene(SliderRobot(R"(<box size="0.4 0.4 0.2"/>)"),
                        {Object("post", Geometry::Primitive(Cylinder{0.05, 0.2}), Vec3(0.02, -0.03, 0.27))});
  ASSERT_NE(caps, nullptr);
  const SceneContactResult c = Contacts(*caps, {0.0});
  ASSERT_EQ(c.pairs.size(), 1u);
  EXPECT_NEAR(c.pairs[0].depth, 0.1 - (0.27 - 0.2), 1e-9);
}

TEST(SceneContactsTest, CapsuleCapsuleDepthIsClosedForm) {
  // A capsule carried by the robot (an attached object) against world capsules: parallel axes 0.2 apart
  // (depth r1 + r2 - 0.2), and crossing axes (perpendicular, 0.18 apart along z: depth r1 + r2 - 0.18).
  SceneDescription d;
  d.robot = SliderRobot(R"(<sphere radius="0.001"/>)");
  AttachedObject tool;
  tool.id = "pin";
  tool.link = "tool";
  tool.parts.push_back({Geometry::Primitive(Capsule{0.1, 0.2}), RigidTransform()});
  d.attached.push_back(tool);
  d.objects.push_back(Object("parallel", Geometry::Primitive(Capsule{0.15, 0.3}), Vec3(0.0, 0.2, 0.05)));
  const Mat3 R = Eigen::AngleAxisd(M_PI / 2, Vec3::UnitY()).toRotationMatrix();  // axis along x
  d.objects.push_back(Object("crossing", Geometry::Primitive(Capsule{0.15, 0.3}), Vec3(0.0, -0.18, 0.1), R));
  auto scene = testing::ValueOrFail(Scene::Build(d));
  for (double x : {0.0, 0.04}) {
    const SceneContactResult r = Contacts(*scene, {x});
    int measured = 0;
    for (const PairPenetration& p : r.pairs) {
      if (p.pair.attached < 0) continue;
      const std::string other = p.pair.OtherName(*scene);
      if (other == "parallel") {
        EXPECT_NEAR(p.depth, 0.25 - std::hypot(x, 0.2), 1e-9);
        EXPECT_LT((p.normal_W - Vec3(-x, 0.2, 0).normalized()).norm(), 1e-9);
        ++measured;
      } else if (other == "crossing") {
        EXPECT_NEAR(p.depth, 0.25 - 0.18, 1e-9);  // the crossing axis runs along x: x does not matter
        EXPECT_LT((p.normal_W + Vec3::UnitY()).norm(), 1e-9);
        ++measured;
      }
    }
    EXPECT_EQ(measured, 2) << x;
  }
}

TEST(SceneContactsTest, PaddingAddsToTheDepthAndCountsPairsApart) {
  auto scene = MakeScene(SliderRobot(R"(<sphere radius="0.3"/>)"),
                         {Object("ball", Geometry::Primitive(Sphere{Vec3::Zero(), 0.2}), Vec3(0.52, 0, 0))}, 0.05);
  ASSERT_NE(scene, nullptr);
  // Apart by 0.02, inside the 0.05 padding: depth 0.03 (CLEAR says not free there).
  SceneCache cache;
  EXPECT_FALSE(testing::ValueOrFail(scene->CheckState(std::vector<double>{0.0}, &cache)).free);
  const SceneContactResult r = Contacts(*scene, {0.0});
  ASSERT_EQ(r.pairs.size(), 1u);
  EXPECT_NEAR(r.pairs[0].depth, 0.03, 1e-9);
  EXPECT_NEAR(r.pairs[0].padding, 0.05, 0.0);
  EXPECT_EQ(r.pairs[0].method, PenetrationMethod::kPadding);
  // Penetrating by 0.1: depth 0.1 + 0.05.
  const SceneContactResult deep = Contacts(*scene, {0.12});
  ASSERT_EQ(deep.pairs.size(), 1u);
  EXPECT_NEAR(deep.pairs[0].depth, 0.15, 1e-9);
}

TEST(SceneContactsTest, SelfPairsAndTheCapOnPairs) {
  // Two sliding spheres (x and y joints) and two world balls.
  auto scene = MakeScene(SliderRobot(R"(<sphere radius="0.2"/>)", R"(<sphere radius="0.25"/>)"),
                         {Object("a", Geometry::Primitive(Sphere{Vec3::Zero(), 0.1}), Vec3(0.0, 0.0, 0.25)),
                          Object("b", Geometry::Primitive(Sphere{Vec3::Zero(), 0.1}), Vec3(0.0, 0.0, -0.28))});
  ASSERT_NE(scene, nullptr);
  // tool at (0.1, 0, 0), tool_b at (0, 0.3, 0): centres 0.316 apart, radii 0.45.
  const SceneContactResult r = Contacts(*scene, {0.1, 0.3});
  ASSERT_EQ(r.pairs.size(), 3u);
  const double self_depth = 0.45 - std::hypot(0.1, 0.3);
  bool found_self = false;
  for (const PairPenetration& p : r.pairs) {
    if (!p.pair.self) continue;
    found_self = true;
    EXPECT_NEAR(p.depth, self_depth, 1e-9);
    EXPECT_EQ(p.pair.Describe(*scene), "tool x tool_b");
  }
  EXPECT_TRUE(found_self);
  // Deepest first.
  for (size_t i = 1; i < r.pairs.size(); ++i) EXPECT_GE(r.pairs[i - 1].depth, r.pairs[i].depth);
  SceneContactRequest capped;
  capped.max_pairs = 1;
  const SceneContactResult one = Contacts(*scene, {0.1, 0.3}, capped);
  EXPECT_EQ(one.pairs.size(), 1u);
  EXPECT_TRUE(one.truncated);
  SceneContactRequest world_only;
  world_only.self = false;
  for (const PairPenetration& p : Contacts(*scene, {0.1, 0.3}, world_only).pairs) EXPECT_FALSE(p.pair.self);
}

// A mesh geometry with its hull (as the scene gives robot links).
Geometry MeshGeometry(const TriangleMesh& mesh) {
  Geometry g;
  g.mesh = testing::ValueOrFail(MeshModel::Build(mesh));
  g.hull = testing::ValueOrFail(ConvexPolytope::Build(mesh));
  g.hull_is_surface = IsHullSurface(mesh, *g.hull, 1e-9);
  return g;
}

TEST(SceneContactsTest, ConvexMeshesMatchEpaOnThePrimitives) {
  // A box mesh is its hull: the depth is EPA's on the box it tessellates exactly, against a sphere,
  // a box and a capsule, at random poses.
  std::mt19937_64 rng(19);
  const Vec3 size(0.3, 0.2, 0.25);
  const Geometry mesh = MeshGeometry(MakeBoxMesh(size));
  ASSERT_TRUE(mesh.hull_is_surface);
  const std::vector<Shape> others = {Sphere{Vec3::Zero(), 0.12}, Box{Vec3(0.1, 0.15, 0.08)}, Capsule{0.07, 0.1}};
  int compared = 0;
  for (int i = 0; i < testing::Cases(60); ++i) {
    const Shape& shape = others[static_cast<size_t>(i) % others.size()];
    const RigidTransform X = testing::RandomPose(rng, Vec3::Constant(-0.25), Vec3::Constant(0.25));
    Result<SignedDistanceResult> reference = InvalidArgument("");
    std::visit(
        [&](const auto& s) {
          if constexpr (std::is_same_v<std::decay_t<decltype(s)>, std::shared_ptr<const ConvexPolytope>>) {
          } else {
            reference = ComputeSignedDistance(Box{0.5 * size}, RigidTransform(), s, X);
          }
        },
        shape);
    ASSERT_TRUE(reference.ok());
    if (reference.value().distance >= 0.0) continue;
    // Meshes are surfaces: a primitive wholly inside the box mesh does not collide with it.
    if (!testing::ValueOrFail(CollideMeshShape(*mesh.mesh, RigidTransform(), shape, X, {})).colliding) continue;
    // The mesh rides on the robot (an attached object at the tool frame), the primitive is in the world.
    SceneDescription attached;
    attached.robot = SliderRobot(R"(<sphere radius="0.001"/>)");
    attached.objects.push_back(Object("p", Geometry::Primitive(shape), X.p, X.R));
    AttachedObject tool;
    tool.id = "mesh_tool";
    tool.link = "tool";
    tool.parts.push_back({mesh, RigidTransform()});
    attached.attached.push_back(tool);
    auto s = testing::ValueOrFail(Scene::Build(attached));
    // The link's own tiny sphere may touch the primitive too: only the attached object's pair counts.
    const SceneContactResult r = Contacts(*s, {0.0});
    bool found = false;
    for (const PairPenetration& p : r.pairs) {
      if (p.pair.attached < 0) continue;
      found = true;
      EXPECT_NEAR(p.depth, -reference.value().distance, 1e-9);
      EXPECT_LT((p.normal_W - reference.value().normal_W).norm(), 1e-6);
      EXPECT_EQ(p.method, PenetrationMethod::kConvex);
    }
    EXPECT_TRUE(found) << "case " << i;
    ++compared;
  }
  EXPECT_GT(compared, 10);
}

// A U made of three boxes (a floor and two walls) as one mesh: not convex; its hull is the whole cube
// [0, 1]^3.
TriangleMesh UMesh() {
  TriangleMesh out;
  auto add = [&](const Vec3& lo, const Vec3& hi) {
    TriangleMesh box = MakeBoxMesh(hi - lo);
    const int32_t base = static_cast<int32_t>(out.vertices.size());
    for (const Vec3& v : box.vertices) out.vertices.push_back(v + 0.5 * (lo + hi));
    for (auto t : box.triangles) out.triangles.push_back({t[0] + base, t[1] + base, t[2] + base});
  };
  add(Vec3(0, 0, 0), Vec3(1, 1, 0.2));
  add(Vec3(0, 0, 0), Vec3(0.2, 1, 1));
  add(Vec3(0.8, 0, 0), Vec3(1, 1, 1));
  return out;
}

// Whether an axis-aligned box [lo, hi] overlaps the U's solid (open intervals: touching is apart).
bool OverlapsU(const Vec3& lo, const Vec3& hi) {
  const Vec3 parts[3][2] = {{Vec3(0, 0, 0), Vec3(1, 1, 0.2)}, {Vec3(0, 0, 0), Vec3(0.2, 1, 1)},
                            {Vec3(0.8, 0, 0), Vec3(1, 1, 1)}};
  for (const auto& p : parts) {
    if ((lo.array() < p[1].array()).all() && (p[0].array() < hi.array()).all()) return true;
  }
  return false;
}

// The sampled reference depth of an axis-aligned box (centre c, half extents h) in the U: over many
// directions, the first translation along each that leaves the solids apart (bisected to 1e-12); the
// least of them is at least the true depth and approaches it as the directions get denser.
double SampledDepth(const Vec3& c, const Vec3& h) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<Vec3> dirs = {Vec3::UnitX(), -Vec3::UnitX(), Vec3::UnitY(), -Vec3::UnitY(), Vec3::UnitZ(),
                            -Vec3::UnitZ()};
  const int n = 4000;
  for (int i = 0; i < n; ++i) {  // Fibonacci sphere
    const double z = 1.0 - (2.0 * i + 1.0) / n, r = std::sqrt(1.0 - z * z), phi = i * M_PI * (3.0 - std::sqrt(5.0));
    dirs.emplace_back(r * std::cos(phi), r * std::sin(phi), z);
  }
  for (const Vec3& d : dirs) {
    double lo = 0.0, hi = -1.0;
    for (double t = 1e-3; t < 2.0; t += 1e-3) {
      if (!OverlapsU(c + t * d - h, c + t * d + h)) {
        hi = t;
        break;
      }
      lo = t;
    }
    if (hi < 0.0) continue;
    while (hi - lo > 1e-12) {
      const double mid = 0.5 * (lo + hi);
      (OverlapsU(c + mid * d - h, c + mid * d + h) ? lo : hi) = mid;
    }
    best = std::min(best, hi);
  }
  return best;
}

TEST(SceneContactsTest, NonConvexMeshDepthIsBracketedAndTheLowerEndIsExactInTheNotch) {
  const Geometry u = MeshGeometry(UMesh());
  ASSERT_FALSE(u.hull_is_surface);
  // The robot's box (0.1 on a side) sinks into the U's floor from the notch; the hull (the whole cube)
  // holds it deep inside.
  auto scene = MakeScene(SliderRobot(R"(<box size="0.1 0.1 0.1"/>)"), {Object("u", u, Vec3(0, 0, 0))});
  ASSERT_NE(scene, nullptr);
  std::mt19937_64 rng(7);
  for (int i = 0; i < testing::Cases(6); ++i) {
    // Centre in the notch, sinking 0.005 to 0.04 into the floor, at least 0.1 from the walls.
    const double sink = std::uniform_real_distribution<double>(0.005, 0.04)(rng);
    const double x = std::uniform_real_distribution<double>(0.35, 0.65)(rng);
    const Vec3 c(x, 0.5, 0.2 + 0.05 - sink);
    SceneDescription d = scene->Description();
    d.X_WB = RigidTransform(Mat3::Identity(), Vec3(0, c.y(), c.z()));
    auto posed = testing::ValueOrFail(Scene::Build(d));
    const SceneContactResult r = Contacts(*posed, {c.x()});
    ASSERT_EQ(r.pairs.size(), 1u);
    const PairPenetration& p = r.pairs[0];
    EXPECT_EQ(p.method, PenetrationMethod::kMeshBracket);
    EXPECT_NEAR(p.depth, sink, 1e-9);
    EXPECT_NEAR(p.depth_lower, sink, 1e-9);
    EXPECT_LT((p.normal_W + Vec3::UnitZ()).norm(), 1e-9);  // from the box towards the floor: down
    const double reference = SampledDepth(c, Vec3::Constant(0.05));
    EXPECT_LE(p.depth_lower, reference + 1e-9);
    EXPECT_GE(p.depth_upper, reference - 1e-9);
    // The hull's depth: out of the cube [0, 1]^3 through its nearest face.
    EXPECT_NEAR(p.depth_upper, std::min({c.z() + 0.05, c.x() + 0.05, 1.05 - c.x(), 0.55}), 1e-9);
    EXPECT_GT(r.triangle_pairs, 0);
  }
}

TEST(SceneContactsTest, NonConvexBracketHoldsTheSampledReferenceAtRandomPlacements) {
  const Geometry u = MeshGeometry(UMesh());
  auto scene = MakeScene(SliderRobot(R"(<box size="0.12 0.12 0.12"/>)"), {Object("u", u, Vec3(0, 0, 0))});
  ASSERT_NE(scene, nullptr);
  std::mt19937_64 rng(11);
  int measured = 0;
  // Twelve placements under every build (about a second under the sanitizers): the count measured below
  // needs them all, so this test does not shrink its cases there.
  for (int i = 0; i < 12; ++i) {
    const Vec3 c(std::uniform_real_distribution<double>(0.1, 0.9)(rng), 0.5,
                 std::uniform_real_distribution<double>(0.15, 0.5)(rng));
    SceneDescription d = scene->Description();
    d.X_WB = RigidTransform(Mat3::Identity(), Vec3(0, c.y(), c.z()));
    auto posed = testing::ValueOrFail(Scene::Build(d));
    const SceneContactResult r = Contacts(*posed, {c.x()});
    const bool overlaps = OverlapsU(c - Vec3::Constant(0.06), c + Vec3::Constant(0.06));
    if (r.pairs.empty()) {
      // Surfaces that do not cross: apart, or the box wholly inside the material (surface semantics).
      continue;
    }
    ASSERT_TRUE(overlaps) << "contact reported for a box apart from the U at " << c.transpose();
    const PairPenetration& p = r.pairs[0];
    const double reference = SampledDepth(c, Vec3::Constant(0.06));
    EXPECT_LE(p.depth_lower, reference + 1e-9) << c.transpose();
    EXPECT_GE(p.depth_upper, reference - 1e-9) << c.transpose();
    EXPECT_LE(p.depth_lower, p.depth);
    EXPECT_LE(p.depth, p.depth_upper);
    ++measured;
  }
  EXPECT_GT(measured, 3);
}

TEST(SceneContactsTest, PairSignedDistanceIsNegativeInsideAndExactApart) {
  auto scene = MakeScene(SliderRobot(R"(<sphere radius="0.3"/>)"),
                         {Object("ball", Geometry::Primitive(Sphere{Vec3::Zero(), 0.2}), Vec3(0.9, 0, 0)),
                          Object("u", MeshGeometry(UMesh()), Vec3(5, 5, 5))});
  ASSERT_NE(scene, nullptr);
  SceneCache cache;
  for (double x : {-0.5, 0.0, 0.3, 0.45}) {
    PROX_ASSERT_OK_AND_ASSIGN(const PairSignedDistance d,
                              ComputePairSignedDistance(*scene, "tool", "ball", std::vector<double>{x}, {}, &cache));
    EXPECT_NEAR(d.distance, (0.9 - x) - 0.5, 1e-9) << x;
    EXPECT_LE(d.lower, d.distance);
    EXPECT_GE(d.upper, d.distance);
    EXPECT_LT((d.normal_W - Vec3::UnitX()).norm(), 1e-6);
  }
  // Either order; the world object goes second.
  PROX_ASSERT_OK_AND_ASSIGN(const PairSignedDistance swapped,
                            ComputePairSignedDistance(*scene, "ball", "tool", std::vector<double>{0.3}, {}, &cache));
  EXPECT_NEAR(swapped.distance, 0.1, 1e-9);
  // A mesh far away: its distance within the budget.
  PairSignedDistanceRequest budget;
  budget.rel_err = 0.01;
  PROX_ASSERT_OK_AND_ASSIGN(const PairSignedDistance far,
                            ComputePairSignedDistance(*scene, "tool", "u", std::vector<double>{0.0}, budget, &cache));
  const double truth = Vec3(5, 5, 5).norm() - 0.3;
  EXPECT_LE(far.lower, truth + 1e-9);
  EXPECT_GE(far.upper, truth - 1e-9);
  EXPECT_LE(far.upper, far.lower * 1.01 + 1e-12);
  EXPECT_EQ(far.method, PenetrationMethod::kPadding);
}

TEST(SceneContactsTest, BadInputIsNamed) {
  auto scene = MakeScene(SliderRobot(R"(<sphere radius="0.3"/>)"),
                         {Object("ball", Geometry::Primitive(Sphere{Vec3::Zero(), 0.2}), Vec3(0.9, 0, 0)),
                          Object("wall", Geometry::Primitive(Box{Vec3::Constant(0.1)}), Vec3(-2, 0, 0))});
  ASSERT_NE(scene, nullptr);
  SceneCache cache;
  const std::vector<double> q{0.0};
  auto unknown = ComputePairSignedDistance(*scene, "tool", "nothing", q, {}, &cache, "first", "second");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("second 'nothing'"), std::string::npos) << unknown.error().message;
  auto worlds = ComputePairSignedDistance(*scene, "ball", "wall", q, {}, &cache);
  ASSERT_FALSE(worlds.ok());
  EXPECT_NE(worlds.error().message.find("both world objects"), std::string::npos);
  auto same = ComputePairSignedDistance(*scene, "tool", "tool", q, {}, &cache);
  ASSERT_FALSE(same.ok());
  EXPECT_NE(same.error().message.find("same thing"), std::string::npos);
  PairSignedDistanceRequest bad;
  bad.rel_err = -1;
  EXPECT_FALSE(ComputePairSignedDistance(*scene, "tool", "ball", q, bad, &cache).ok());
  SceneContactRequest none;
  none.max_pairs = 0;
  auto capped = ComputeSceneContacts(*scene, q, none, &cache);
  ASSERT_FALSE(capped.ok());
  EXPECT_NE(capped.error().message.find("max_pairs"), std::string::npos);
  auto wrong = ComputeSceneContacts(*scene, std::vector<double>{0.0, 1.0}, {}, &cache);
  EXPECT_FALSE(wrong.ok());
  auto nan = ComputeSceneContacts(*scene, std::vector<double>{std::nan("")}, {}, &cache);
  EXPECT_FALSE(nan.ok());
}

TEST(SceneContactsTest, AgreesWithClearOnRealRobots) {
  // Contacts exist exactly when CLEAR says not free, every pair CLEAR would report is among them,
  // and every bracket holds its depth.
  std::mt19937_64 rng(5);
  int colliding = 0;
  for (const RobotCase& rc : Robots()) {
    SceneDescription d = RandomWorldScene(rc, rng, 12);
    ASSERT_NE(d.robot, nullptr);
    auto scene = testing::ValueOrFail(Scene::Build(d));
    SceneCache cache;
    for (int i = 0; i < testing::Cases(40); ++i) {
      const std::vector<double> q = RandomState(rng, scene->robot());
      const StateResult clear = testing::ValueOrFail(scene->CheckState(q, &cache));
      const SceneContactResult r = Contacts(*scene, q);
      ASSERT_EQ(clear.free, r.pairs.empty()) << rc.name << " state " << i;
      if (clear.free) continue;
      ++colliding;
      bool has_first = false;
      for (const PairPenetration& p : r.pairs) {
        has_first |= p.pair.Describe(*scene) == clear.contact.Describe(*scene);
        EXPECT_GE(p.depth, -1e-9) << p.pair.Describe(*scene);
        EXPECT_LE(p.depth_lower, p.depth);
        EXPECT_GE(p.depth_upper, p.depth);
        EXPECT_NEAR(p.normal_W.norm(), 1.0, 1e-9);
        EXPECT_FALSE(p.points.empty());
      }
      EXPECT_TRUE(has_first) << clear.contact.Describe(*scene);
    }
  }
  if (Robots().empty()) GTEST_SKIP() << "no robots (dart-doc or the shared data) present";
  EXPECT_GT(colliding, 5);
}

}  // namespace
}  // namespace proximity::core
