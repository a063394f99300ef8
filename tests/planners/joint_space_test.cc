#include "proximity/planners/joint_space.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/test_util.h"

namespace proximity::planners {
namespace {

constexpr double kPi = std::numbers::pi;

JointSpace Mixed() {
  // A bounded joint, a wrapping joint, a prismatic-like bounded coordinate.
  return JointSpace::Create({-2.0, 0.0, 0.0}, {2.0, 0.0, 0.5}, {false, true, false}).value();
}

TEST(JointSpace, CreateRejectsMalformedBounds) {
  EXPECT_FALSE(JointSpace::Create({}, {}, {}).ok());
  auto sizes = JointSpace::Create({0.0, 0.0}, {1.0}, {false, false});
  ASSERT_FALSE(sizes.ok());
  EXPECT_NE(sizes.error().message.find("2 lower bounds, 1 upper"), std::string::npos) << sizes.error().message;
  auto inverted = JointSpace::Create({0.0, 1.0}, {1.0, 0.0}, {false, false});
  ASSERT_FALSE(inverted.ok());
  EXPECT_NE(inverted.error().message.find("coordinate 1"), std::string::npos) << inverted.error().message;
  EXPECT_FALSE(JointSpace::Create({-INFINITY}, {0.0}, {false}).ok());
  // A wrapping coordinate ignores its bounds.
  EXPECT_TRUE(JointSpace::Create({-INFINITY}, {INFINITY}, {true}).ok());
}

TEST(JointSpace, WrappingCoordinatesTakeTheShortWayRound) {
  const JointSpace space = Mixed();
  const std::vector<double> a{0.0, 3.0, 0.1}, b{0.0, -3.0, 0.1};
  EXPECT_NEAR(space.Distance(a, b), 2.0 * kPi - 6.0, 1e-12);
  std::vector<double> d(3), end(3), mid(3);
  space.Difference(a, b, d);
  EXPECT_NEAR(d[1], 2.0 * kPi - 6.0, 1e-12);
  space.SegmentEnd(a, b, end);
  EXPECT_NEAR(end[1], 3.0 + 2.0 * kPi - 6.0, 1e-12);  // Past pi: the same angle as -3.
  space.Interpolate(a, b, 0.5, mid);
  EXPECT_NEAR(std::abs(mid[1]), kPi, 1e-12);  // Halfway round through pi.
  EXPECT_NEAR(space.Distance(a, mid), 0.5 * space.Distance(a, b), 1e-12);
  // Bounded coordinates interpolate linearly and never wrap.
  const std::vector<double> c{-2.0, 0.0, 0.0}, e{2.0, 0.0, 0.5};
  EXPECT_NEAR(space.Distance(c, e), std::sqrt(16.0 + 0.25), 1e-12);
}

TEST(JointSpace, InterpolationIsAStraightLineOfTheMetric) {
  const JointSpace space = Mixed();
  Rng rng(7);
  std::vector<double> a(3), b(3), q(3);
  for (int i = 0; i < 1000; ++i) {
    space.Sample(rng, a);
    space.Sample(rng, b);
    ASSERT_TRUE(space.Contains(a));
    const double t = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    space.Interpolate(a, b, t, q);
    ASSERT_TRUE(space.Contains(q));
    EXPECT_NEAR(space.Distance(a, q) + space.Distance(q, b), space.Distance(a, b), 1e-9);
    EXPECT_NEAR(space.Distance(a, q), t * space.Distance(a, b), 1e-9);
    EXPECT_LE(space.Distance(a, b), space.MaxExtent() + 1e-12);
  }
  space.Interpolate(a, b, 1.0, q);
  EXPECT_NEAR(space.Distance(q, b), 0.0, 1e-12);
}

TEST(JointSpace, CheckNamesTheBadCoordinate) {
  const JointSpace space = Mixed();
  const std::vector<double> ok{0.0, 10.0, 0.2}, nan{0.0, NAN, 0.2}, out{0.0, 0.0, 0.6}, short_q{0.0};
  EXPECT_TRUE(space.Check(ok, "start").ok());  // A wrapping coordinate takes any finite angle.
  auto s = space.Check(nan, "start");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("start[1] is not finite"), std::string::npos) << s.error().message;
  s = space.Check(out, "goal");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("goal[2] = 0.6 lies outside [0, 0.5]"), std::string::npos) << s.error().message;
  s = space.Check(short_q, "goal");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("1 values"), std::string::npos) << s.error().message;
}

TEST(JointSpace, ForRobotWrapsContinuousJoints) {
  auto robot = core::RobotModel::FromUrdfFile(testing::TestDataDir() + "/robots/mixed_joints.urdf", "");
  ASSERT_TRUE(robot.ok()) << robot.error().message;
  const core::RobotModel& r = *robot.value();
  const JointSpace space = JointSpace::ForRobot(r);
  ASSERT_EQ(space.dof(), r.num_positions());
  int wrapping = 0;
  for (int32_t i = 0; i < r.num_positions(); ++i) {
    const bool continuous = r.joint(r.active_joints()[i]).type == core::JointType::kContinuous;
    EXPECT_EQ(space.wraps(i), continuous) << r.active_joint_names()[i];
    wrapping += continuous;
    if (!continuous) {
      EXPECT_EQ(space.lower()[i], r.lower_limits()[i]);
      EXPECT_EQ(space.upper()[i], r.upper_limits()[i]);
    }
  }
  EXPECT_EQ(wrapping, 1);
}

}  // namespace
}  // namespace proximity::planners
