// Continuous joints turn the short way round in every motion query (OMPL's SO(2) convention):
// RobotModel::MotionEnd, CheckMotion (certified and sampled), CheckPath and TimeOfFirstContact.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "proximity/core/robot/robot_model.h"
#include "proximity/core/scene/scene.h"

namespace proximity::core {
namespace {

constexpr double kPi = std::numbers::pi;

// A bar on a continuous joint about z: at angle a it spans radii 0.3-0.7 m in direction (cos a, sin a).
constexpr const char* kSpinnerUrdf = R"(<?xml version="1.0"?>
<robot name="spinner">
  <link name="base"/>
  <joint name="spin" type="continuous">
    <parent link="base"/><child link="bar"/>
    <axis xyz="0 0 1"/>
  </joint>
  <link name="bar">
    <collision>
      <origin xyz="0.5 0 0"/>
      <geometry><box size="0.4 0.05 0.05"/></geometry>
    </collision>
  </link>
</robot>)";

// The value of a query that must succeed (a failure fails the test and gives an empty result).
template <class T>
T Ok(Result<T> r) {
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? std::move(r).value() : T();
}

std::shared_ptr<const RobotModel> Spinner() {
  auto robot = RobotModel::FromUrdfString(kSpinnerUrdf);
  EXPECT_TRUE(robot.ok()) << robot.error().message;
  return robot.ok() ? robot.value() : nullptr;
}

// The spinner with one small box obstacle at (x, 0, 0).
std::shared_ptr<const Scene> SceneWithPostAt(double x) {
  SceneDescription d;
  d.robot = Spinner();
  WorldObject post{"post", {}};
  ObjectPart part;
  part.geometry.shape = Box{Vec3(0.1, 0.1, 0.1)};
  part.X_WG.p = Vec3(x, 0.0, 0.0);
  post.parts.push_back(part);
  d.objects.push_back(post);
  auto scene = Scene::Build(d);
  EXPECT_TRUE(scene.ok()) << scene.error().message;
  return scene.ok() ? scene.value() : nullptr;
}

TEST(ShortWay, ShortestTurnFollowsOmplsConvention) {
  EXPECT_EQ(ShortestTurn(kPi), kPi);
  EXPECT_EQ(ShortestTurn(-kPi), -kPi);
  EXPECT_EQ(ShortestTurn(0.25), 0.25);
  EXPECT_NEAR(ShortestTurn(6.2), 6.2 - 2.0 * kPi, 1e-15);
  EXPECT_NEAR(ShortestTurn(-6.2), 2.0 * kPi - 6.2, 1e-15);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-2e4, 2e4);
  for (int i = 0; i < 10000; ++i) {
    const double d = u(rng);
    const double turn = ShortestTurn(d);
    ASSERT_LE(std::abs(turn), kPi) << d;
    const double turns = (d - turn) / (2.0 * kPi);
    ASSERT_NEAR(turns, std::round(turns), 1e-9) << d;
  }
}

TEST(ShortWay, MotionEndTurnsOnlyContinuousJoints) {
  auto robot = Spinner();
  ASSERT_NE(robot, nullptr);
  ASSERT_TRUE(robot->has_continuous_joints());
  ASSERT_TRUE(robot->is_continuous(0));
  std::vector<double> end(1);
  robot->MotionEnd(std::vector<double>{-3.1}, std::vector<double>{3.1}, end);
  // From -3.1 to 3.1 the short way is 0.083 rad backwards through -pi, not 6.2 rad forwards through 0.
  EXPECT_NEAR(end[0] - -3.1, 6.2 - 2.0 * kPi, 1e-12);
  EXPECT_NEAR(std::abs(end[0] - -3.1), 0.0832, 1e-4);
  // A bounded joint keeps its end.
  auto mixed = RobotModel::FromUrdfFile(std::string(PROX_TEST_DATA_DIR) + "/robots/mixed_joints.urdf");
  ASSERT_TRUE(mixed.ok()) << mixed.error().message;
  const RobotModel& m = *mixed.value();
  std::vector<double> q0(static_cast<size_t>(m.num_positions()), 0.0), q1(q0.size(), 0.0), out(q0.size());
  int continuous = 0;
  for (int32_t i = 0; i < m.num_positions(); ++i) {
    q0[static_cast<size_t>(i)] = m.is_continuous(i) ? -3.0 : m.lower_limits()[static_cast<size_t>(i)];
    q1[static_cast<size_t>(i)] = m.is_continuous(i) ? 3.0 : m.upper_limits()[static_cast<size_t>(i)];
    continuous += m.is_continuous(i);
  }
  ASSERT_GT(continuous, 0);
  m.MotionEnd(q0, q1, out);
  for (int32_t i = 0; i < m.num_positions(); ++i) {
    const size_t k = static_cast<size_t>(i);
    if (m.is_continuous(i)) {
      EXPECT_NEAR(out[k], -3.0 - (2.0 * kPi - 6.0), 1e-12) << m.active_joint_names()[k];
    } else {
      EXPECT_EQ(out[k], q1[k]) << m.active_joint_names()[k];
    }
  }
}

TEST(ShortWay, EveryMotionQueryTurnsTheShortWay) {
  // A post at +x is met by -3.1 -> 3.1 only the long way (through 0); a post at -x is met by
  // -2.5 -> 2.5 only the short way (through pi). All four ends are free.
  auto post_at_0 = SceneWithPostAt(0.5);
  auto post_at_pi = SceneWithPostAt(-0.5);
  ASSERT_NE(post_at_0, nullptr);
  ASSERT_NE(post_at_pi, nullptr);
  const std::vector<double> a0{-3.1}, a1{3.1};  // free the short way in post_at_0
  const std::vector<double> b0{-2.5}, b1{2.5};  // colliding the short way in post_at_pi
  SceneCache cache;
  StateResult state;
  for (const auto& q : {a0, a1}) {
    state = Ok(post_at_0->CheckState(q, &cache));
    ASSERT_TRUE(state.free);
  }
  for (const auto& q : {b0, b1}) {
    state = Ok(post_at_pi->CheckState(q, &cache));
    ASSERT_TRUE(state.free);
  }
  // Certified LINK.
  MotionRequest certified;
  MotionResult m;
  m = Ok(post_at_0->CheckMotion(a0, a1, certified, &cache));
  EXPECT_TRUE(m.free);
  m = Ok(post_at_pi->CheckMotion(b0, b1, certified, &cache));
  EXPECT_FALSE(m.free);
  // The state at t_collide is on the short way (through pi at t = 0.5) and collides there.
  EXPECT_GT(m.t_collide, 0.0);
  EXPECT_LT(m.t_collide, 0.5);
  const std::vector<double> at{b0[0] + m.t_collide * ShortestTurn(b1[0] - b0[0])};
  state = Ok(post_at_pi->CheckState(at, &cache));
  EXPECT_FALSE(state.free) << "t_collide " << m.t_collide;
  // Sampled LINK at 0.01 rad: the 0.083 rad turn takes 9 steps (10 states), where 6.2 rad would take 620.
  MotionRequest sampled;
  sampled.mode = MotionRequest::Mode::kDiscrete;
  sampled.resolution = 0.01;
  sampled.coarse_to_fine = false;
  m = Ok(post_at_0->CheckMotion(a0, a1, sampled, &cache));
  EXPECT_TRUE(m.free);
  EXPECT_EQ(m.states, 10);
  m = Ok(post_at_pi->CheckMotion(b0, b1, sampled, &cache));
  EXPECT_FALSE(m.free);
  const double sampled_collide = m.t_collide;
  // Path checks, segment by segment.
  PathResult p;
  p = Ok(post_at_0->CheckPath(std::vector<double>{-3.1, 3.1, -3.1}, certified, &cache));
  EXPECT_TRUE(p.free);
  p = Ok(post_at_pi->CheckPath(std::vector<double>{-2.5, 2.5, -2.5}, certified, &cache));
  EXPECT_FALSE(p.free);
  EXPECT_EQ(p.segment, 0);
  // Time of first contact.
  ContinuousRequest toi;
  ContinuousResult c;
  c = Ok(post_at_0->TimeOfFirstContact(a0, a1, toi, &cache));
  EXPECT_FALSE(c.contact);
  c = Ok(post_at_pi->TimeOfFirstContact(b0, b1, toi, &cache));
  EXPECT_TRUE(c.contact);
  EXPECT_LE(c.t_contact, sampled_collide + 1e-9);
  // The long way is still there for a caller who wants it: through a waypoint at 0.
  p = Ok(post_at_pi->CheckPath(std::vector<double>{-2.5, 0.0, 2.5}, certified, &cache));
  EXPECT_TRUE(p.free);
  p = Ok(post_at_0->CheckPath(std::vector<double>{-3.1, -1.5, 0.0}, certified, &cache));
  EXPECT_FALSE(p.free);
}

}  // namespace
}  // namespace proximity::core
