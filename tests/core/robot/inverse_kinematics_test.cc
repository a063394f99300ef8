// Inverse kinematics on real arms and generated chains: every solution's forward kinematics meets the
// goal (checked here with quaternions, not the solver's rotation vectors) within the joint limits, and
// reachable poses (forward kinematics of random states) are found at least 99% of the time.
#include "proximity/core/robot/inverse_kinematics.h"

#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <random>
#include <sstream>

#include "core/scene_fixtures.h"
#include "core/test_util.h"

namespace proximity::core {
namespace {

using testing::ValueOrFail;

struct ArmCase {
  std::string name;
  std::shared_ptr<const RobotModel> robot;
  std::string tip;
};

// One joint of a generated serial chain.
struct ChainJoint {
  std::string type;  // revolute, continuous, prismatic
  Vec3 xyz, rpy, axis;
  double lower = 0.0, upper = 0.0;
};

// A serial chain of `joints` as URDF text, a small box on every link.
std::string ChainUrdf(const std::string& name, const std::vector<ChainJoint>& joints) {
  std::ostringstream u;
  auto link = [&](int i) {
    u << "<link name=\"l" << i << "\"><collision><geometry><box size=\"0.04 0.04 0.04\"/></geometry></collision></link>\n";
  };
  u << "<robot name=\"" << name << "\">\n";
  link(0);
  for (size_t i = 0; i < joints.size(); ++i) {
    const ChainJoint& j = joints[i];
    link(static_cast<int>(i) + 1);
    u << "<joint name=\"j" << i + 1 << "\" type=\"" << j.type << "\"><parent link=\"l" << i << "\"/><child link=\"l"
      << i + 1 << "\"/><origin xyz=\"" << j.xyz.x() << " " << j.xyz.y() << " " << j.xyz.z() << "\" rpy=\"" << j.rpy.x()
      << " " << j.rpy.y() << " " << j.rpy.z() << "\"/><axis xyz=\"" << j.axis.x() << " " << j.axis.y() << " "
      << j.axis.z() << "\"/>";
    if (j.type != "continuous") u << "<limit lower=\"" << j.lower << "\" upper=\"" << j.upper << "\" effort=\"1\" velocity=\"1\"/>";
    u << "</joint>\n";
  }
  u << "</robot>\n";
  return u.str();
}

std::shared_ptr<const RobotModel> FromText(const std::string& urdf) {
  auto r = RobotModel::FromUrdfString(urdf);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? r.value() : nullptr;
}

// A 7-joint arm laid out as Kinova's Gen3 (continuous joints 1, 3, 5, 7 alternating with limited ones).
std::shared_ptr<const RobotModel> KinovaLike() {
  const double pi = M_PI;
  return FromText(ChainUrdf(
      "kinova_like", {{"continuous", {0, 0, 0.156}, {pi, 0, 0}, {0, 0, 1}},
                      {"revolute", {0, 0.005, -0.128}, {pi / 2, 0, 0}, {0, 0, 1}, -2.24, 2.24},
                      {"continuous", {0, -0.21, -0.006}, {-pi / 2, 0, 0}, {0, 0, 1}},
                      {"revolute", {0, 0.006, -0.21}, {pi / 2, 0, 0}, {0, 0, 1}, -2.57, 2.57},
                      {"continuous", {0, -0.208, -0.006}, {-pi / 2, 0, 0}, {0, 0, 1}},
                      {"revolute", {0, 0, -0.106}, {pi / 2, 0, 0}, {0, 0, 1}, -2.09, 2.09},
                      {"continuous", {0, -0.106, 0}, {-pi / 2, 0, 0}, {0, 0, 1}}}));
}

// A prismatic torso under a 6-joint arm with tilted axes (a mobile manipulator's lift).
std::shared_ptr<const RobotModel> LiftArm() {
  return FromText(ChainUrdf("lift_arm", {{"prismatic", {0.1, 0, 0.3}, {0, 0, 0}, {0, 0, 1}, 0.0, 0.5},
                                         {"revolute", {0, 0, 0.2}, {0, 0, 0.3}, {0, 0, 1}, -2.9, 2.9},
                                         {"revolute", {0, 0.05, 0.1}, {0, 0, 0}, {0, 1, 0}, -1.8, 1.8},
                                         {"revolute", {0.35, 0, 0}, {0, 0, 0}, {0, 1, 0}, -2.6, 2.6},
                                         {"revolute", {0.3, 0, 0}, {0.2, 0, 0}, {1, 0, 0}, -3.0, 3.0},
                                         {"revolute", {0.05, 0, 0}, {0, 0, 0}, {0, 1, 0}, -2.0, 2.0},
                                         {"revolute", {0.08, 0, 0}, {0, 0, 0}, {1, 0, 0}, -3.0, 3.0}}));
}

std::vector<ArmCase> Arms() {
  std::vector<ArmCase> out;
  for (const RobotCase& c : Robots()) {
    const char* tip = c.name == "panda" ? "panda_link8" : c.name == "ur5" ? "ee_link" : "palm";
    out.push_back({c.name, LoadRobot(c), tip});
  }
  if (const std::string dart = testing::DartUrdfDir(); !dart.empty()) {
    RobotLoadOptions options;
    options.package_dirs["herb_description"] = dart + "/wam";
    options.ros_package_path = "";
    auto wam = RobotModel::FromUrdfFile(dart + "/wam/wam.urdf", testing::TestDataDir() + "/robots/wam.srdf", options);
    EXPECT_TRUE(wam.ok()) << wam.error().message;
    if (wam.ok()) out.push_back({"wam", wam.value(), "/wam7"});
  }
  out.push_back({"kinova_like", KinovaLike(), "l7"});
  out.push_back({"lift_arm", LiftArm(), "l7"});
  return out;
}

// The goal checked independently of the solver: the point's offset in the target frame, and the
// orientation error from quaternions (axis components of the rotation vector).
bool MeetsGoal(const RobotModel& robot, const PoseGoal& goal, const std::vector<double>& q, std::string* why) {
  const auto X = robot.ForwardKinematics(q);
  if (!X.ok()) {
    *why = X.error().message;
    return false;
  }
  const RigidTransform& X_WL = X.value()[static_cast<size_t>(goal.link)];
  const Vec3 d = goal.X_WT.R.transpose() * (X_WL * goal.point_L - goal.X_WT.p);
  const Vec3& s = goal.region_size;
  bool in = false;
  switch (goal.region) {
    case PositionRegion::kSphere: in = d.norm() <= s.x(); break;
    case PositionRegion::kBox: in = std::abs(d.x()) <= s.x() && std::abs(d.y()) <= s.y() && std::abs(d.z()) <= s.z(); break;
    case PositionRegion::kCylinder: in = std::hypot(d.x(), d.y()) <= s.x() && std::abs(d.z()) <= s.z(); break;
  }
  if (!in) {
    *why = "point off by " + std::to_string(d.norm());
    return false;
  }
  if (goal.constrain_orientation) {
    Eigen::Quaterniond r(goal.X_WT.R.transpose() * X_WL.R);
    if (r.w() < 0) r.coeffs() = -r.coeffs();
    const double half = std::atan2(r.vec().norm(), r.w());
    const Vec3 rv = r.vec().norm() > 0 ? Vec3(r.vec().normalized() * 2.0 * half) : Vec3::Zero();
    for (int i = 0; i < 3; ++i) {
      if (std::abs(rv[i]) > goal.orientation_tolerance[i] * (1 + 1e-9)) {
        *why = "orientation off by " + std::to_string(rv.norm());
        return false;
      }
    }
  }
  for (int i = 0; i < robot.num_positions(); ++i) {
    if (q[i] < robot.lower_limits()[i] || q[i] > robot.upper_limits()[i]) {
      *why = "joint " + robot.active_joint_names()[i] + " outside its limits";
      return false;
    }
  }
  return true;
}

TEST(InverseKinematics, ReachablePosesOnArmsAndChains) {
  const int n = testing::Cases(1000);
  for (const ArmCase& arm : Arms()) {
    ASSERT_NE(arm.robot, nullptr) << arm.name;
    const RobotModel& robot = *arm.robot;
    std::mt19937_64 rng(7);
    PoseGoal goal;
    goal.link = ValueOrFail(robot.FindLink(arm.tip));
    int found = 0;
    int64_t iterations = 0;
    for (int i = 0; i < n; ++i) {
      const std::vector<double> target = RandomState(rng, robot);
      goal.X_WT = ValueOrFail(robot.ForwardKinematics(target))[static_cast<size_t>(goal.link)];
      const std::vector<double> seed = RandomState(rng, robot);
      IkOptions options;
      options.seed = static_cast<uint64_t>(i) + 1;
      const IkSolution s = ValueOrFail(SolveIk(robot, goal, seed, options));
      iterations += s.iterations;
      if (!s.found) {
        EXPECT_EQ(s.q, seed);
        continue;
      }
      ++found;
      std::string why;
      EXPECT_TRUE(MeetsGoal(robot, goal, s.q, &why)) << arm.name << " case " << i << ": " << why;
      EXPECT_LE(s.position_error, 1e-4);
      EXPECT_LE(s.orientation_error, std::sqrt(3.0) * 1e-3);
      for (int v = 0; v < robot.num_positions(); ++v) {
        if (robot.is_continuous(v)) {
          EXPECT_LE(std::abs(s.q[v] - seed[v]), M_PI + 1e-12) << arm.name;
        }
      }
    }
    const double rate = static_cast<double>(found) / n;
    std::printf("%s: %d of %d reachable poses solved (%.1f%%), %.1f steps a solve\n", arm.name.c_str(), found, n,
                100.0 * rate, static_cast<double>(iterations) / n);
    EXPECT_GE(rate, 0.99) << arm.name;
  }
}

TEST(InverseKinematics, RegionsAndPositionOnlyGoals) {
  for (const ArmCase& arm : Arms()) {
    const RobotModel& robot = *arm.robot;
    std::mt19937_64 rng(11);
    for (int shape = 0; shape < 4; ++shape) {
      PoseGoal goal;
      goal.link = ValueOrFail(robot.FindLink(arm.tip));
      goal.point_L = Vec3(0.01, -0.02, 0.05);
      switch (shape) {
        case 0: goal.region = PositionRegion::kBox; goal.region_size = Vec3(0.05, 0.002, 0.01); break;
        case 1: goal.region = PositionRegion::kCylinder; goal.region_size = Vec3(0.003, 0, 0.04); break;
        case 2: goal.constrain_orientation = false; break;
        case 3: goal.orientation_tolerance = Vec3(0.3, 0.01, M_PI); break;
      }
      int found = 0;
      const int n = testing::Cases(100);
      for (int i = 0; i < n; ++i) {
        goal.X_WT = ValueOrFail(robot.ForwardKinematics(RandomState(rng, robot)))[static_cast<size_t>(goal.link)];
        // The target moves off the reachable pose within the region: still reachable.
        goal.X_WT.p += goal.X_WT.R * Vec3(0.5 * goal.region_size.x(), 0, 0) + goal.X_WT.R * goal.point_L;
        IkOptions options;
        const IkSolution s = ValueOrFail(SolveIk(robot, goal, RandomState(rng, robot), options));
        if (!s.found) continue;
        ++found;
        std::string why;
        EXPECT_TRUE(MeetsGoal(robot, goal, s.q, &why)) << arm.name << " shape " << shape << ": " << why;
      }
      EXPECT_GE(found, n * 95 / 100) << arm.name << " shape " << shape;
    }
  }
}

TEST(InverseKinematics, UnreachableGoalsReturnTheSeed) {
  for (const ArmCase& arm : Arms()) {
    const RobotModel& robot = *arm.robot;
    PoseGoal goal;
    goal.link = ValueOrFail(robot.FindLink(arm.tip));
    goal.X_WT.p = Vec3(50.0, 0.0, 0.0);  // far beyond any of these arms' reach
    const std::vector<double> seed = robot.DefaultConfiguration();
    IkOptions options;
    options.max_attempts = 5;
    const IkSolution s = ValueOrFail(SolveIk(robot, goal, seed, options));
    EXPECT_FALSE(s.found) << arm.name;
    EXPECT_EQ(s.q, seed);
    EXPECT_EQ(s.attempts, 5);
  }
}

TEST(InverseKinematics, OnlyTheGivenVariablesMoveAndAnswersRepeat) {
  const auto robot = LiftArm();
  ASSERT_NE(robot, nullptr);
  std::mt19937_64 rng(3);
  PoseGoal goal;
  goal.link = ValueOrFail(robot->FindLink("l7"));
  goal.constrain_orientation = false;
  int found = 0;
  for (int i = 0; i < 50; ++i) {
    std::vector<double> target = RandomState(rng, *robot);
    const std::vector<double> seed = RandomState(rng, *robot);
    target[0] = seed[0];  // the lift stays: the pose is reachable without it
    goal.X_WT = ValueOrFail(robot->ForwardKinematics(target))[static_cast<size_t>(goal.link)];
    IkOptions options;
    options.variables = {1, 2, 3, 4, 5, 6};
    options.seed = 9;
    const IkSolution a = ValueOrFail(SolveIk(*robot, goal, seed, options));
    const IkSolution b = ValueOrFail(SolveIk(*robot, goal, seed, options));
    EXPECT_EQ(a.q, b.q);
    EXPECT_EQ(a.iterations, b.iterations);
    EXPECT_EQ(a.q[0], seed[0]);
    found += a.found;
  }
  EXPECT_GE(found, 49);
}

TEST(InverseKinematics, MalformedInputIsRefusedByName) {
  const auto robot = KinovaLike();
  ASSERT_NE(robot, nullptr);
  const std::vector<double> seed = robot->DefaultConfiguration();
  PoseGoal good;
  good.link = 7;
  auto expect_error = [&](const PoseGoal& goal, const IkOptions& options, std::span<const double> q, const std::string& word) {
    const auto r = SolveIk(*robot, goal, q, options);
    ASSERT_FALSE(r.ok()) << word;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message.find(word), std::string::npos) << r.error().message;
  };
  PoseGoal g = good;
  g.link = 99;
  expect_error(g, {}, seed, "link index 99");
  g = good;
  g.X_WT.p.x() = NAN;
  expect_error(g, {}, seed, "target pose");
  g = good;
  g.X_WT.R(0, 0) = 2.0;
  expect_error(g, {}, seed, "not a rotation");
  g = good;
  g.region_size.x() = 0.0;
  expect_error(g, {}, seed, "region");
  g = good;
  g.orientation_tolerance.y() = -1.0;
  expect_error(g, {}, seed, "orientation tolerances");
  IkOptions o;
  o.variables = {0, 0};
  expect_error(good, o, seed, "listed twice");
  o.variables = {12};
  expect_error(good, o, seed, "variable 12");
  o = {};
  o.max_attempts = 0;
  expect_error(good, o, seed, "max_attempts");
  g = good;
  g.link = 0;  // the root: nothing moves it
  expect_error(g, {}, seed, "moves link 'l0'");
  std::vector<double> bad = seed;
  bad[2] = INFINITY;
  expect_error(good, {}, bad, "j3");
  expect_error(good, {}, std::vector<double>(3, 0.0), "");
}

}  // namespace
}  // namespace proximity::core
