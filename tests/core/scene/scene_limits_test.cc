// What a scene accepts (scene_build.cc) and how long its queries may work: the accepted ranges (kWorldExtent,
// kMaxJointValue, kMaxMotionSteps) refuse what would overflow into a wrong answer, a caller's Interrupt ends
// every long query without a guess of free, and a robot without joints works. Each test here reproduces a
// defect found by a hostile caller (issue: hardening) and fails without its fix.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "proximity/core/robot/robot_model.h"
#include "proximity/core/scene/scene.h"

namespace proximity::core {
namespace {

std::string Fixture(const std::string& name) { return testing::TestDataDir() + "/robots/" + name; }

// The planar two-link arm (tests/data/robots/planar_2link.urdf) with a box in its reach: the arm's
// upper link sweeps through x in [0.3, 0.5] at y = 0.6 when the shoulder turns from -0.3 to 1.6 rad.
std::shared_ptr<const Scene> PlanarScene() {
  auto robot = RobotModel::FromUrdfFile(Fixture("planar_2link.urdf"), Fixture("planar_2link.srdf"));
  EXPECT_TRUE(robot.ok()) << robot.error().message;
  SceneDescription d;
  d.robot = robot.value();
  WorldObject post;
  post.id = "post";
  ObjectPart part;
  part.geometry.shape = Box{Vec3(0.05, 0.05, 0.5)};
  part.X_WG.p = Vec3(0.4, 0.6, 0.5);
  post.parts.push_back(part);
  d.objects.push_back(post);
  auto scene = Scene::Build(d);
  EXPECT_TRUE(scene.ok()) << scene.error().message;
  return scene.value();
}

// A motion of the planar arm through the post, and its two free ends.
const std::vector<double> kThroughPostStart = {-0.3, 0.0};
const std::vector<double> kThroughPostGoal = {1.6, 0.0};

TEST(SceneLimits, TinyResolutionsAreRefusedNeverAnsweredFree) {
  const auto scene = PlanarScene();
  SceneCache cache;
  MotionResult r;
  MotionRequest exact;  // certified: the reference answer
  PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckMotion(kThroughPostStart, kThroughPostGoal, exact, &cache));
  ASSERT_FALSE(r.free) << "the fixture motion must cross the post";
  // Before the fix 1e-19 overflowed the step count and every motion came back free.
  for (double resolution : {1e-7, 1e-12, 1e-19, 1e-30, 1e-300, 4.9e-324}) {
    MotionRequest discrete;
    discrete.mode = MotionRequest::Mode::kDiscrete;
    discrete.resolution = resolution;
    const Status s = scene->CheckMotion(kThroughPostStart, kThroughPostGoal, discrete, &cache).status();
    ASSERT_FALSE(s.ok()) << "resolution " << resolution << " was accepted";
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().message.find("resolution"), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find("1e+07"), std::string::npos) << s.error().message;
    EXPECT_FALSE(r.free);
    // The planner's pre-pass resolution takes the same cap.
    MotionRequest prepass;
    prepass.prepass_resolution = resolution;
    const Status p = scene->CheckMotion(kThroughPostStart, kThroughPostGoal, prepass, &cache).status();
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.error().message.find("prepass_resolution"), std::string::npos) << p.error().message;
    // A path with such a motion fails on it, naming the segment.
    std::vector<double> path = kThroughPostStart;
    path.insert(path.end(), kThroughPostGoal.begin(), kThroughPostGoal.end());
    const Status ps = scene->CheckPath(path, discrete, &cache).status();
    ASSERT_FALSE(ps.ok());
  }
  // Non-positive and non-finite resolutions as before.
  for (double resolution : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    MotionRequest discrete;
    discrete.mode = MotionRequest::Mode::kDiscrete;
    discrete.resolution = resolution;
    EXPECT_FALSE(scene->CheckMotion(kThroughPostStart, kThroughPostGoal, discrete, &cache).ok()) << resolution;
  }
}

// Property: at every accepted resolution (log-uniform, coarser than the segment down to many steps),
// a discrete answer of free is never given where one of its own sample states collides, and a
// colliding answer names a state that collides.
TEST(SceneLimits, DiscreteAnswersAgreeWithTheirSampleStatesAtAnyAcceptedResolution) {
  std::mt19937_64 rng(20261125);
  for (const RobotCase& rc : Robots()) {
    SCOPED_TRACE(rc.name);
    auto built = Scene::Build(RandomWorldScene(rc, rng, 12));
    ASSERT_TRUE(built.ok()) << built.error().message;
    const Scene& scene = *built.value();
    SceneCache cache;
    int refused = 0, colliding = 0, free_answers = 0;
    const int cases = testing::Cases(60);
    for (int c = 0; c < cases; ++c) {
      const std::vector<double> q0 = RandomState(rng, scene.robot());
      const std::vector<double> q1 = RandomState(rng, scene.robot());
      double length = 0.0;
      for (size_t i = 0; i < q0.size(); ++i) length += (q1[i] - q0[i]) * (q1[i] - q0[i]);
      length = std::sqrt(length);
      // A quarter beyond the cap (down to the smallest doubles, where the old step count overflowed),
      // the rest from 2e5 steps (a free answer at the cap would take seconds) to a thousandth of one.
      const double log_len = std::log10(length), log_cap = std::log10(length / kMaxMotionSteps);
      const bool beyond = std::uniform_real_distribution<double>(0.0, 1.0)(rng) < 0.25;
      const double log_lo = beyond ? -320.0 : log_len - std::log10(2e5);
      const double log_hi = beyond ? log_cap - 0.01 : log_len + 3.0;
      MotionRequest discrete;
      discrete.mode = MotionRequest::Mode::kDiscrete;
      discrete.resolution = std::pow(10.0, std::uniform_real_distribution<double>(log_lo, log_hi)(rng));
      if (!(discrete.resolution > 0.0)) discrete.resolution = std::numeric_limits<double>::denorm_min();
      discrete.coarse_to_fine = true;  // decides colliding motions after few states, as planners use it
      const Result<MotionResult> checked = scene.CheckMotion(q0, q1, discrete, &cache);
      const double steps = std::ceil(length / discrete.resolution);
      if (steps > kMaxMotionSteps) {
        EXPECT_FALSE(checked.ok()) << "resolution " << discrete.resolution << " gives " << steps << " steps";
        ++refused;
        continue;
      }
      ASSERT_TRUE(checked.ok()) << checked.error().message;
      const MotionResult& r = checked.value();
      const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(steps));
      if (!r.free) {
        ++colliding;
        PROX_ASSERT_OK_AND_ASSIGN(const StateResult sr, scene.CheckState(Along(q0, q1, r.t_collide), &cache));
        EXPECT_FALSE(sr.free) << "t_collide " << r.t_collide << " is free";
        continue;
      }
      ++free_answers;
      // A free answer: every sample state is free (all of them when few, else a seeded choice).
      std::vector<int64_t> samples;
      if (n <= 200) {
        for (int64_t i = 0; i <= n; ++i) samples.push_back(i);
      } else {
        for (int k = 0; k < 200; ++k) samples.push_back(std::uniform_int_distribution<int64_t>(0, n)(rng));
      }
      for (int64_t i : samples) {
        const double t = static_cast<double>(i) / static_cast<double>(n);
        PROX_ASSERT_OK_AND_ASSIGN(const StateResult sr, scene.CheckState(Along(q0, q1, t), &cache));
        ASSERT_TRUE(sr.free) << "discrete said free, but its sample " << i << " of " << n << " collides";
      }
    }
    EXPECT_GT(refused, 0);
    EXPECT_GT(colliding, 0);
    EXPECT_GT(free_answers, 0);
  }
}

TEST(SceneLimits, HugeCoordinatesAndEmptySolidsAreRefusedWithTheirName) {
  const auto base = PlanarScene();
  const SceneDescription d = base->Description();
  auto with_object = [&](Shape shape, Vec3 p) {
    SceneDescription e = d;
    WorldObject o;
    o.id = "probe";
    ObjectPart part;
    part.geometry.shape = std::move(shape);
    part.X_WG.p = p;
    o.parts.push_back(part);
    e.objects.push_back(o);
    return Scene::Build(e);
  };
  // Before the fix a box at 1e160 made states free and distances [inf, inf], and a 1e308 box was
  // free for the motion check but in contact for time of first contact.
  for (const auto& [shape, p] : std::vector<std::pair<Shape, Vec3>>{
           {Box{Vec3(0.1, 0.1, 0.1)}, Vec3(1e160, 0, 0)},
           {Box{Vec3(1e308, 1e308, 1e308)}, Vec3::Zero()},
           {Sphere{Vec3::Zero(), 2e4}, Vec3::Zero()},
           {Cylinder{0.1, 0.1}, Vec3(0, 0, -1.5e4)}}) {
    auto built = with_object(shape, p);
    ASSERT_FALSE(built.ok());
    EXPECT_NE(built.error().message.find("probe"), std::string::npos) << built.error().message;
    EXPECT_NE(built.error().message.find("extent"), std::string::npos) << built.error().message;
  }
  // Just inside the extent is accepted.
  EXPECT_TRUE(with_object(Box{Vec3(0.5, 0.5, 0.5)}, Vec3(kWorldExtent - 1.0, 0, 0)).ok());
  // Solids of zero size.
  for (const Shape& shape : std::vector<Shape>{Box{Vec3(0.1, 0.0, 0.1)}, Sphere{Vec3::Zero(), 0.0},
                                               Cylinder{0.0, 0.1}, Cylinder{0.1, 0.0}, Cone{0.1, 0.0},
                                               Capsule{0.0, 0.1}}) {
    auto built = with_object(shape, Vec3(0.5, 0.5, 0.5));
    ASSERT_FALSE(built.ok());
    EXPECT_NE(built.error().message.find("must be > 0"), std::string::npos) << built.error().message;
  }
  // A capsule of zero length is a sphere, and fine.
  EXPECT_TRUE(with_object(Capsule{0.1, 0.0}, Vec3(0.5, 0.5, 0.5)).ok());
  // Padding and the base pose.
  SceneDescription padded = d;
  padded.default_padding = 1e300;
  EXPECT_FALSE(Scene::Build(padded).ok());
  SceneDescription far = d;
  far.X_WB.p = Vec3(0, 2e4, 0);
  EXPECT_FALSE(Scene::Build(far).ok());
}

TEST(SceneLimits, HugeJointValuesAreRefusedByEveryQuery) {
  const auto scene = PlanarScene();
  SceneCache cache;
  const std::vector<double> huge = {1e160, 0.0};
  const Status s = scene->CheckState(huge, &cache).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("shoulder"), std::string::npos) << s.error().message;
  EXPECT_FALSE(scene->CheckMotion(kThroughPostStart, huge, {}, &cache).ok());
  EXPECT_FALSE(scene->ComputeDistance(huge, {}, &cache).ok());
  EXPECT_FALSE(scene->TimeOfFirstContact(kThroughPostStart, huge, {}, &cache).ok());
  // The edge of the range is accepted.
  EXPECT_TRUE(scene->CheckState(std::vector<double>{kMaxJointValue, 0.0}, &cache).ok());
  // Clearances and continuous tolerances beyond the extent.
  EXPECT_FALSE(scene->CheckState(kThroughPostStart, &cache, 1e300).ok());
  ContinuousRequest wide;
  wide.tolerance = 1e300;
  EXPECT_FALSE(scene->TimeOfFirstContact(kThroughPostStart, kThroughPostGoal, wide, &cache).ok());
}

// A stop condition that says stop from its `after`-th question on, counting the questions.
struct StopAfter {
  int after;
  int asked = 0;
  bool operator()() { return ++asked >= after; }
};

TEST(SceneLimits, AnInterruptEndsEveryLongQueryWithoutAnsweringFree) {
  const auto scene = PlanarScene();
  SceneCache cache;
  // A long free motion sampled finely: 1e6 states unless stopped.
  const std::vector<double> a = {-2.5, 0.2}, b = {-0.6, 0.2};
  MotionRequest discrete;
  discrete.mode = MotionRequest::Mode::kDiscrete;
  discrete.resolution = 1.9 / 1e6;
  MotionResult r;
  PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckMotion(a, b, {}, &cache));
  ASSERT_TRUE(r.free) << "the fixture motion must be free";
  StopAfter stop{3};
  discrete.stop = Interrupt(stop);
  PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckMotion(a, b, discrete, &cache));
  EXPECT_TRUE(r.stopped);
  EXPECT_FALSE(r.free);
  EXPECT_EQ(stop.asked, 3);
  EXPECT_LT(r.states, 100) << "the check went on after the stop";
  // Coarse to fine as well.
  StopAfter stop2{2};
  discrete.coarse_to_fine = true;
  discrete.stop = Interrupt(stop2);
  PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckMotion(a, b, discrete, &cache));
  EXPECT_TRUE(r.stopped);
  EXPECT_FALSE(r.free);

  // The certified walk, on the motion through the post (narrowing the collision takes many bisection
  // steps), and its sampled pre-pass on the free motion.
  const std::vector<double>& graze0 = kThroughPostStart;
  const std::vector<double>& graze1 = kThroughPostGoal;
  {
    StopAfter stop3{1};
    MotionRequest certified;
    certified.stop = Interrupt(stop3);
    PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckMotion(graze0, graze1, certified, &cache));
    EXPECT_TRUE(r.stopped);
    EXPECT_FALSE(r.free);
    StopAfter stop_prepass{1};
    certified.prepass_resolution = 1e-5;
    certified.stop = Interrupt(stop_prepass);
    PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckMotion(a, b, certified, &cache));
    EXPECT_TRUE(r.stopped);
    EXPECT_FALSE(r.free);
    EXPECT_LT(r.states, 100);
  }
  StopAfter never{1 << 30};
  MotionRequest certified;
  certified.stop = Interrupt(never);
  PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckMotion(graze0, graze1, certified, &cache));
  EXPECT_FALSE(r.stopped);
  EXPECT_FALSE(r.free);
  EXPECT_GT(never.asked, 0) << "the certified walk never asked its stop";

  // Time of first contact and distance.
  StopAfter stop4{1};
  ContinuousRequest toi;
  toi.stop = Interrupt(stop4);
  ContinuousResult cr;
  PROX_ASSERT_OK_AND_ASSIGN(cr, scene->TimeOfFirstContact(graze0, graze1, toi, &cache));
  EXPECT_TRUE(cr.stopped);
  EXPECT_TRUE(cr.undecided);
  EXPECT_LT(cr.t_contact, 1.0) << "a stopped check certified the whole motion";
  StopAfter stop5{1};
  SceneDistanceRequest dq;
  dq.stop = Interrupt(stop5);
  SceneDistanceResult dr;
  PROX_ASSERT_OK_AND_ASSIGN(dr, scene->ComputeDistance(graze0, dq, &cache));
  EXPECT_TRUE(dr.stopped);
  EXPECT_EQ(dr.lower_bound, 0.0) << "a stopped distance claims no clearance";
}

// A robot whose joints are all fixed has one configuration, of no values: every query works on it.
TEST(SceneLimits, ARobotWithoutMovableJointsAnswersEveryQuery) {
  const std::string urdf = R"(<?xml version="1.0"?>
<robot name="pedestal">
  <link name="base"><collision><geometry><box size="0.4 0.4 0.2"/></geometry></collision></link>
  <joint name="mount" type="fixed"><parent link="base"/><child link="column"/><origin xyz="0 0 0.6"/></joint>
  <link name="column"><collision><geometry><cylinder radius="0.1" length="1.0"/></geometry></collision></link>
</robot>)";
  auto robot = RobotModel::FromUrdfString(urdf);
  ASSERT_TRUE(robot.ok()) << robot.error().message;
  ASSERT_EQ(robot.value()->num_positions(), 0);
  for (double x : {0.5, 0.05}) {  // a box beside the column, then one through it
    SceneDescription d;
    d.robot = robot.value();
    WorldObject o;
    o.id = "crate";
    ObjectPart part;
    part.geometry.shape = Box{Vec3(0.1, 0.1, 0.1)};
    part.X_WG.p = Vec3(x, 0, 0.6);
    o.parts.push_back(part);
    d.objects.push_back(o);
    auto built = Scene::Build(d);
    ASSERT_TRUE(built.ok()) << built.error().message;
    const Scene& scene = *built.value();
    const bool expect_free = x > 0.3;
    SceneCache cache;
    const std::vector<double> q;
    StateResult sr;
    PROX_ASSERT_OK_AND_ASSIGN(sr, scene.CheckState(q, &cache));
    EXPECT_EQ(sr.free, expect_free);
    MotionResult mr;
    PROX_ASSERT_OK_AND_ASSIGN(mr, scene.CheckMotion(q, q, {}, &cache));
    EXPECT_EQ(mr.free, expect_free);
    PathResult pr;
    PROX_ASSERT_OK_AND_ASSIGN(pr, scene.CheckPath(q, {}, &cache));
    EXPECT_EQ(pr.free, expect_free);
    SceneDistanceResult dr;
    PROX_ASSERT_OK_AND_ASSIGN(dr, scene.ComputeDistance(q, {}, &cache));
    if (expect_free) {
      EXPECT_NEAR(dr.upper_bound, 0.3, 1e-6);
    } else {
      EXPECT_EQ(dr.upper_bound, 0.0);
    }
    ContinuousResult cr;
    PROX_ASSERT_OK_AND_ASSIGN(cr, scene.TimeOfFirstContact(q, q, {}, &cache));
    EXPECT_EQ(cr.contact, !expect_free);
  }
}

// An SRDF state outside the joint limits loads (MoveIt loads it) but is never used as a configuration.
TEST(SceneLimits, SrdfStatesOutsideTheLimitsAreRefusedWhenUsed) {
  std::string srdf = testing::ReadFile(Fixture("planar_2link.srdf"));
  const std::string state = R"(<group_state name="too_far" group="arm">
    <joint name="shoulder" value="3.5"/>
    <joint name="elbow" value="0"/>
  </group_state>
</robot>)";
  srdf.replace(srdf.rfind("</robot>"), std::string("</robot>").size(), state);
  auto robot = RobotModel::FromUrdfString(testing::ReadFile(Fixture("planar_2link.urdf")), srdf);
  ASSERT_TRUE(robot.ok()) << robot.error().message;
  EXPECT_TRUE(robot.value()->NamedConfiguration("home").ok());
  auto far = robot.value()->NamedConfiguration("too_far");
  ASSERT_FALSE(far.ok());
  EXPECT_NE(far.error().message.find("shoulder"), std::string::npos) << far.error().message;
  EXPECT_NE(far.error().message.find("too_far"), std::string::npos) << far.error().message;
}

}  // namespace
}  // namespace proximity::core

namespace proximity::core {
namespace {

// A serial chain of `joints` revolute joints, each link a small box.
std::string ChainUrdf(int joints) {
  std::string xml = "<?xml version=\"1.0\"?>\n<robot name=\"chain\">\n";
  for (int i = 0; i <= joints; ++i) {
    xml += "<link name=\"l" + std::to_string(i) +
           "\"><collision><geometry><box size=\"0.02 0.02 0.05\"/></geometry></collision></link>\n";
  }
  for (int i = 0; i < joints; ++i) {
    xml += "<joint name=\"j" + std::to_string(i) + "\" type=\"revolute\"><parent link=\"l" + std::to_string(i) +
           "\"/><child link=\"l" + std::to_string(i + 1) +
           "\"/><origin xyz=\"0 0 0.06\"/><axis xyz=\"0 1 0\"/><limit lower=\"-1\" upper=\"1\" effort=\"1\" "
           "velocity=\"1\"/></joint>\n";
  }
  return xml + "</robot>\n";
}

// A robot of 10,000 joints used to be built for minutes, past every memory limit. The caps refuse it
// before anything is built, naming the cap; a stop ends a build that is within the caps.
TEST(SceneLimits, BuildsAreCappedBeforeTheyStartAndStopWhenAsked) {
  RobotLoadOptions options;
  options.ros_package_path = "";
  options.limits.max_links = 1000;
  options.limits.max_joints = 1000;
  // Refused before anything is built: the load never reaches its first link (where it asks the stop).
  StopAfter never_asked{1 << 30};
  options.stop = Interrupt(never_asked);
  auto big = RobotModel::FromUrdfString(ChainUrdf(10000), "", options);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(big.error().message.find("max_links"), std::string::npos) << big.error().message;
  EXPECT_EQ(never_asked.asked, 0) << "the refused robot was built in part";
  options.stop = {};
  options.limits.max_links = 0;
  auto joints = RobotModel::FromUrdfString(ChainUrdf(2000), "", options);
  ASSERT_FALSE(joints.ok());
  EXPECT_NE(joints.error().message.find("max_joints"), std::string::npos) << joints.error().message;

  // The model's tables against a memory cap.
  RobotLoadOptions small = options;
  small.limits = {};
  small.limits.max_memory_bytes = 1 << 20;
  auto tables = RobotModel::FromUrdfString(ChainUrdf(400), "", small);
  ASSERT_FALSE(tables.ok());
  EXPECT_NE(tables.error().message.find("max_memory_bytes"), std::string::npos) << tables.error().message;

  // Self pairs: a 300-link chain has about 45,000 pairs of non-adjacent links.
  RobotLoadOptions plain;
  plain.ros_package_path = "";
  auto chain = RobotModel::FromUrdfString(ChainUrdf(300), "", plain);
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  SceneDescription d;
  d.robot = chain.value();
  d.limits.max_self_pairs = 10000;
  auto refused = Scene::Build(d);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(refused.error().message.find("max_self_pairs"), std::string::npos) << refused.error().message;
  d.limits.max_self_pairs = 100000;
  d.limits.max_memory_bytes = 4096;
  auto too_big = Scene::Build(d);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.error().message.find("max_memory_bytes"), std::string::npos) << too_big.error().message;
  d.limits = {};
  EXPECT_TRUE(Scene::Build(d).ok());

  // A stop ends the robot's load and the scene's build with kStopped, having done little.
  StopAfter stop_load{5};
  RobotLoadOptions stopped = plain;
  stopped.stop = Interrupt(stop_load);
  auto interrupted = RobotModel::FromUrdfString(ChainUrdf(300), "", stopped);
  ASSERT_FALSE(interrupted.ok());
  EXPECT_EQ(interrupted.error().code, ErrorCode::kStopped) << interrupted.error().message;
  EXPECT_EQ(stop_load.asked, 5);
  StopAfter stop_build{3};
  d.stop = Interrupt(stop_build);
  auto stopped_build = Scene::Build(d);
  ASSERT_FALSE(stopped_build.ok());
  EXPECT_EQ(stopped_build.error().code, ErrorCode::kStopped) << stopped_build.error().message;
}

}  // namespace
}  // namespace proximity::core
