#include "proximity/core/robot/robot_model.h"
#include "robot/sincos.h"

#include <urdf_parser/urdf_parser.h>

#include <Eigen/Geometry>

#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "core/test_util.h"
#include "bvh/bvh.h"
#include "robot/robot_motion.h"

namespace proximity::core {
namespace {

using testing::DartUrdfDir;
using testing::SharedDataDir;
using testing::TestDataDir;

std::string Fixture(const std::string& name) { return TestDataDir() + "/robots/" + name; }

std::string ReadText(const std::string& path) { return testing::ReadFile(path); }

// A robot the tests use, with how to load it.
struct RobotCase {
  std::string label;
  std::string urdf;
  std::string srdf;
  RobotLoadOptions options;
};

std::vector<RobotCase> AvailableRobots() {
  std::vector<RobotCase> robots;
  robots.push_back({"planar_2link", Fixture("planar_2link.urdf"), Fixture("planar_2link.srdf"), {}});
  robots.push_back({"mixed_joints", Fixture("mixed_joints.urdf"), "", {}});
  if (const std::string shared = SharedDataDir(); !shared.empty()) {
    RobotCase panda{"panda", shared + "/robots/panda/moveit_resources_panda_description/urdf/panda.urdf",
                    shared + "/robots/panda/moveit_resources_panda_moveit_config/config/panda.srdf", {}};
    panda.options.ros_package_path = shared + "/robots/panda";
    robots.push_back(panda);
    RobotCase ur5{"ur5", shared + "/robots/ur5/ur_description/urdf/ur5_robot.urdf",
                  shared + "/robots/ur5/ur5_moveit_config/config/ur5.srdf", {}};
    ur5.options.package_dirs["ur_description"] = shared + "/robots/ur5/ur_description";
    robots.push_back(ur5);
  }
  if (const std::string dart = DartUrdfDir(); !dart.empty()) {
    robots.push_back({"kr5", dart + "/KR5/KR5 sixx R650.urdf", "", {}});
  }
  return robots;
}

std::shared_ptr<const RobotModel> LoadOrDie(const RobotCase& c) {
  auto r = RobotModel::FromUrdfFile(c.urdf, c.srdf, c.options);
  if (!r.ok()) {
    ADD_FAILURE() << c.label << ": " << r.error().message;
    return nullptr;
  }
  return r.value();
}

// Independent forward kinematics: compose urdfdom's parsed origins and axes with Eigen, walking from
// each link up to the root.
std::map<std::string, Eigen::Isometry3d> OracleFk(const urdf::ModelInterface& model,
                                                  const std::map<std::string, double>& active_values) {
  std::map<std::string, Eigen::Isometry3d> X_WL;
  for (const auto& [name, link] : model.links_) {
    Eigen::Isometry3d X = Eigen::Isometry3d::Identity();
    for (urdf::LinkConstSharedPtr at = link; at->parent_joint; at = model.getLink(at->parent_joint->parent_link_name)) {
      const urdf::Joint& j = *at->parent_joint;
      const urdf::Pose& o = j.parent_to_joint_origin_transform;
      Eigen::Isometry3d X_PJ = Eigen::Isometry3d::Identity();
      X_PJ.translate(Eigen::Vector3d(o.position.x, o.position.y, o.position.z));
      X_PJ.rotate(Eigen::Quaterniond(o.rotation.w, o.rotation.x, o.rotation.y, o.rotation.z));
      double value = 0;
      if (j.mimic) {
        value = j.mimic->multiplier * active_values.at(j.mimic->joint_name) + j.mimic->offset;
      } else if (j.type != urdf::Joint::FIXED) {
        value = active_values.at(j.name);
      }
      const Eigen::Vector3d axis = Eigen::Vector3d(j.axis.x, j.axis.y, j.axis.z).normalized();
      Eigen::Isometry3d X_JC = Eigen::Isometry3d::Identity();
      if (j.type == urdf::Joint::REVOLUTE || j.type == urdf::Joint::CONTINUOUS) {
        X_JC.rotate(Eigen::AngleAxisd(value, axis));
      } else if (j.type == urdf::Joint::PRISMATIC) {
        X_JC.translate(value * axis);
      }
      X = X_PJ * X_JC * X;
    }
    X_WL[name] = X;
  }
  return X_WL;
}

// Random q: inside limits, or within +/- 2 pi for continuous joints.
std::vector<double> RandomQ(const RobotModel& m, std::mt19937_64& rng, double widen = 0.0) {
  std::vector<double> q(m.num_positions());
  for (int i = 0; i < m.num_positions(); ++i) {
    double lo = m.lower_limits()[i], hi = m.upper_limits()[i];
    if (!std::isfinite(lo)) lo = -2 * M_PI;
    if (!std::isfinite(hi)) hi = 2 * M_PI;
    const double pad = widen * (hi - lo);
    q[i] = std::uniform_real_distribution<double>(lo - pad, hi + pad)(rng);
  }
  return q;
}

TEST(RobotModelTest, PlanarArmMatchesClosedForm) {
  auto m = LoadOrDie(AvailableRobots()[0]);
  ASSERT_TRUE(m);
  const LinkIndex tip = m->FindLink("tip").value();
  const LinkIndex lower = m->FindLink("lower").value();
  std::mt19937_64 rng(7);
  std::vector<RigidTransform> X_WL;
  for (int i = 0; i < 100; ++i) {
    const std::vector<double> q = RandomQ(*m, rng, 0.5);  // outside limits is fine for FK
    PROX_ASSERT_OK_AND_ASSIGN(X_WL, m->ForwardKinematics(q));
    const double a = q[0], b = q[0] + q[1];
    const Vec3 p_tip(std::cos(a) + 0.5 * std::cos(b), std::sin(a) + 0.5 * std::sin(b), 0.1);
    EXPECT_LT((X_WL[tip].p - p_tip).norm(), 1e-12);
    EXPECT_LT((X_WL[lower].p - Vec3(std::cos(a), std::sin(a), 0.1)).norm(), 1e-12);
    const Mat3 R_expected = Eigen::AngleAxisd(b, Vec3::UnitZ()).toRotationMatrix();
    EXPECT_LT((X_WL[tip].R - R_expected).norm(), 1e-12);
  }
}

TEST(RobotModelTest, ForwardKinematicsMatchesUrdfdomComposition) {
  std::mt19937_64 rng(11);
  for (const RobotCase& c : AvailableRobots()) {
    SCOPED_TRACE(c.label);
    auto m = LoadOrDie(c);
    ASSERT_TRUE(m);
    const urdf::ModelInterfaceSharedPtr parsed = urdf::parseURDF(ReadText(c.urdf));
    ASSERT_TRUE(parsed);
    std::vector<RigidTransform> X_WL;
    for (int i = 0; i < 20; ++i) {
      const std::vector<double> q = RandomQ(*m, rng);
      std::map<std::string, double> values;
      for (int k = 0; k < m->num_positions(); ++k) values[m->active_joint_names()[k]] = q[k];
      PROX_ASSERT_OK_AND_ASSIGN(X_WL, m->ForwardKinematics(q));
      const auto oracle = OracleFk(*parsed, values);
      ASSERT_EQ(oracle.size(), X_WL.size());
      for (LinkIndex l = 0; l < m->num_links(); ++l) {
        const Eigen::Isometry3d& X = oracle.at(m->link(l).name);
        EXPECT_LT((X_WL[l].p - X.translation()).norm(), 1e-12) << m->link(l).name;
        EXPECT_LT((X_WL[l].R - X.linear()).norm(), 1e-12) << m->link(l).name;
      }
    }
  }
}

TEST(RobotModelTest, PandaReadyFlangePositionFromHandDerivation) {
  const std::string shared = SharedDataDir();
  PROX_REQUIRE_DIR(shared, "../shared/data");
  auto m = LoadOrDie(AvailableRobots()[2]);
  ASSERT_TRUE(m);
  auto q = m->NamedConfiguration("ready", "panda_arm");
  ASSERT_TRUE(q.ok()) << q.error().message;
  // With joints 1, 3, 5 at zero the arm stays in the xz plane. Reading the URDF origins, the segment
  // offsets (0.0825, 0.316), (-0.0825, 0.384), (0.088, -0.107) (x, z in each frame) turn about +y by
  // q2, q2 - q4 and q2 - q4 - q6 respectively, above the shoulder at z = 0.333.
  const double q2 = -0.785, q4 = -2.356, q6 = 1.571;
  const auto Ry = [](double t, double x, double z) { return Vec3(x * std::cos(t) + z * std::sin(t), 0, -x * std::sin(t) + z * std::cos(t)); };
  const Vec3 p_flange = Vec3(0, 0, 0.333) + Ry(q2, 0.0825, 0.316) + Ry(q2 - q4, -0.0825, 0.384) + Ry(q2 - q4 - q6, 0.088, -0.107);
  EXPECT_NEAR(p_flange.x(), 0.3069, 5e-4);  // the commonly quoted ready pose, as a check of the derivation
  EXPECT_NEAR(p_flange.z(), 0.5903, 5e-4);
  std::vector<RigidTransform> X_WL;
  PROX_ASSERT_OK_AND_ASSIGN(X_WL, m->ForwardKinematics(q.value()));
  const LinkIndex link8 = m->FindLink("panda_link8").value();
  const LinkIndex hand = m->FindLink("panda_hand").value();
  EXPECT_LT((X_WL[link8].p - p_flange).norm(), 1e-9);
  EXPECT_LT((X_WL[hand].p - p_flange).norm(), 1e-9);
  // The flange points down: Ry(q2 - q4 - q6) Rx(pi) maps z to -z when q2 - q4 - q6 = 0.
  EXPECT_LT((X_WL[hand].R.col(2) - Vec3(0, 0, -1)).norm(), 1e-3);
}

TEST(RobotModelTest, Ur5ZeroToolPositionFromHandDerivation) {
  PROX_REQUIRE_DIR(SharedDataDir(), "../shared/data");
  auto m = LoadOrDie(AvailableRobots()[3]);
  ASSERT_TRUE(m);
  std::vector<RigidTransform> X_WL;
  PROX_ASSERT_OK_AND_ASSIGN(X_WL, m->ForwardKinematics(std::vector<double>(6, 0.0)));
  // At zero: shoulder z 0.089159; shoulder_lift at y 0.13585 pitched by pi/2 so its z is world x; the
  // upper arm adds (y -0.1197, along x 0.425), the forearm 0.39225 along x, wrist_2 y 0.093, wrist_3
  // 0.09465 down (pitched by pi in total), ee_fixed_joint y 0.0823.
  const Vec3 expected(0.425 + 0.39225, 0.13585 - 0.1197 + 0.093 + 0.0823, 0.089159 - 0.09465);
  EXPECT_LT((X_WL[m->FindLink("ee_link").value()].p - expected).norm(), 1e-8);
  EXPECT_LT(X_WL[m->FindLink("world").value()].p.norm(), 1e-15);
}

// ForwardKinematicsMoving poses only the links some active or mimic joint moves (LinkMoves: the others
// sit still between random configurations, these move), over poses a full pass left at another
// configuration: every link's pose is then the full pass's at the new one, bit for bit (fixtures with
// fixed branches and mimic joints, real robots, a base pose away from the origin).
TEST(RobotModelTest, ForwardKinematicsOfMovingLinksAsAFullPass) {
  std::mt19937_64 rng(57);
  for (const RobotCase& c : AvailableRobots()) {
    SCOPED_TRACE(c.label);
    auto model = LoadOrDie(c);
    ASSERT_NE(model, nullptr);
    const RobotModel& m = *model;
    RigidTransform X_WB;
    X_WB.R = Eigen::AngleAxisd(0.7, Vec3(1, 2, 3).normalized()).toRotationMatrix();
    X_WB.p = Vec3(0.3, -1.2, 0.5);
    std::vector<RigidTransform> kept(m.links().size()), full(m.links().size());
    for (int trial = 0; trial < 20; ++trial) {
      ASSERT_TRUE(m.ForwardKinematics(RandomQ(m, rng), kept, X_WB).ok());
      const std::vector<double> q = RandomQ(m, rng);
      ASSERT_TRUE(m.ForwardKinematics(q, full, X_WB).ok());
      for (size_t l = 0; l < full.size(); ++l) {  // a link no joint moves sits still; the others move
        const bool same = kept[l].R == full[l].R && kept[l].p == full[l].p;
        EXPECT_EQ(same, !m.LinkMoves(static_cast<LinkIndex>(l))) << "link " << m.links()[l].name;
      }
      ASSERT_TRUE(m.ForwardKinematicsMoving(q, kept).ok());
      for (size_t l = 0; l < full.size(); ++l) {
        EXPECT_TRUE(kept[l].R == full[l].R && kept[l].p == full[l].p) << "link " << m.links()[l].name;
      }
    }
    // A wrong configuration size is refused and leaves the poses as they were.
    const std::vector<RigidTransform> before = kept;
    EXPECT_FALSE(m.ForwardKinematicsMoving(std::vector<double>(m.num_positions() + 1, 0.0), kept).ok());
    for (size_t l = 0; l < kept.size(); ++l) EXPECT_TRUE(kept[l].R == before[l].R && kept[l].p == before[l].p);
  }
}

TEST(RobotModelTest, BasePoseMovesEveryLink) {
  auto m = LoadOrDie(AvailableRobots()[1]);
  ASSERT_TRUE(m);
  std::mt19937_64 rng(3);
  const RigidTransform X_WB = testing::RandomPose(rng, Vec3(-1, -1, -1), Vec3(1, 1, 1));
  const std::vector<double> q = RandomQ(*m, rng);
  std::vector<RigidTransform> at_identity, at_base;
  PROX_ASSERT_OK_AND_ASSIGN(at_identity, m->ForwardKinematics(q));
  PROX_ASSERT_OK_AND_ASSIGN(at_base, m->ForwardKinematics(q, X_WB));
  for (size_t l = 0; l < at_base.size(); ++l) {
    const RigidTransform expected = X_WB * at_identity[l];
    EXPECT_LT((at_base[l].p - expected.p).norm(), 1e-12);
    EXPECT_LT((at_base[l].R - expected.R).norm(), 1e-12);
  }
}

TEST(RobotModelTest, ForwardKinematicsRejectsBadInput) {
  auto m = LoadOrDie(AvailableRobots()[1]);
  ASSERT_TRUE(m);
  Status s = m->ForwardKinematics(std::vector<double>(3, 0.0)).status();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message.find("needs 4"), std::string::npos) << s.error().message;
  std::vector<double> q(4, 0.0);
  q[2] = std::nan("");
  s = m->ForwardKinematics(q).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("q[2]"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("elbow"), std::string::npos) << s.error().message;
  q[2] = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(m->ForwardKinematics(q).ok());
  q[2] = 0;
  std::vector<RigidTransform> small(2);
  s = m->ForwardKinematics(q, std::span<RigidTransform>(small));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("buffer"), std::string::npos);
}

TEST(RobotModelTest, ActiveOrderMimicAndLimits) {
  auto m = LoadOrDie(AvailableRobots()[1]);
  ASSERT_TRUE(m);
  // Depth first from the root, children in document order; the mimic and fixed joints are not active.
  EXPECT_EQ(m->active_joint_names(), (std::vector<std::string>{"wheel", "slide", "elbow", "lift"}));
  EXPECT_EQ(m->ActiveIndex("lift").value(), 3);
  EXPECT_FALSE(m->ActiveIndex("finger").ok());
  EXPECT_FALSE(m->ActiveIndex("tool_mount").ok());
  EXPECT_EQ(m->ActiveIndex("nope").error().code, ErrorCode::kNotFound);

  // Continuous joints have no limits; others report the joint and value.
  EXPECT_TRUE(m->CheckLimits(std::vector<double>{100.0, 0.1, 0.0, 0.2}).ok());
  Status s = m->CheckLimits(std::vector<double>{0.0, 0.31, 0.0, 0.2});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("'slide'"), std::string::npos) << s.error().message;
  EXPECT_TRUE(m->CheckLimits(std::vector<double>{0.0, 0.31, 0.0, 0.2}, 0.02).ok());
  s = m->CheckLimits(std::vector<double>{0.0, 0.0, 0.0, -0.01});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("'lift'"), std::string::npos) << s.error().message;

  // The finger turns by -2 * elbow + 0.1 about its z axis relative to the forearm.
  std::vector<RigidTransform> X_WL;
  const double elbow = 0.4;
  PROX_ASSERT_OK_AND_ASSIGN(X_WL, m->ForwardKinematics(std::vector<double>{0.3, 0.1, elbow, 0.2}));
  const RigidTransform X_FL = RelativeTransform(X_WL[m->FindLink("forearm").value()], X_WL[m->FindLink("finger_link").value()]);
  EXPECT_LT((X_FL.p - Vec3(0.4, 0, 0)).norm(), 1e-12);
  EXPECT_LT((X_FL.R - Eigen::AngleAxisd(-2 * elbow + 0.1, Vec3::UnitZ()).toRotationMatrix()).norm(), 1e-12);
  // The slide's axis "2 0 0" is normalised: 0.1 moves the carriage 0.1 m.
  const RigidTransform X_TC = RelativeTransform(X_WL[m->FindLink("turret").value()], X_WL[m->FindLink("carriage").value()]);
  EXPECT_LT((X_TC.p - Vec3(0.1, 0, 0.2)).norm(), 1e-12);
}

TEST(RobotModelTest, ConfigurationFromNames) {
  auto m = LoadOrDie(AvailableRobots()[1]);
  ASSERT_TRUE(m);
  auto q = m->Configuration({{"elbow", 0.5}, {"lift", 0.25}, {"finger", 9.0}, {"tool_mount", 1.0}});
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q.value(), (std::vector<double>{0.0, 0.0, 0.5, 0.25}));
  auto bad = m->Configuration({{"elbow", 0.5}, {"wrist", 0.1}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'wrist'"), std::string::npos) << bad.error().message;
  auto missing = m->Configuration({{"elbow", 0.5}}, /*require_all=*/true);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("'wheel'"), std::string::npos) << missing.error().message;
  EXPECT_FALSE(m->Configuration({{"elbow", std::nan("")}}).ok());
  // Lenient, as MoveIt reads joint states: names the robot lacks are handed back, the rest applies.
  std::vector<std::string> ignored;
  auto lenient = m->Configuration({{"elbow", 0.5}, {"wrist", 0.1}, {"base_wheel", 2.0}}, false, &ignored);
  ASSERT_TRUE(lenient.ok()) << lenient.error().message;
  EXPECT_EQ(lenient.value(), (std::vector<double>{0.0, 0.0, 0.5, 0.0}));
  EXPECT_EQ(ignored, (std::vector<std::string>{"base_wheel", "wrist"}));
  // Known joints are checked as strictly as before: non-finite values, and every joint under require_all.
  ignored.clear();
  EXPECT_FALSE(m->Configuration({{"elbow", std::nan("")}, {"wrist", 0.1}}, false, &ignored).ok());
  auto still_missing = m->Configuration({{"elbow", 0.5}, {"wrist", 0.1}}, /*require_all=*/true, &ignored);
  ASSERT_FALSE(still_missing.ok());
  EXPECT_NE(still_missing.error().message.find("'wheel'"), std::string::npos) << still_missing.error().message;
}

TEST(RobotModelTest, ClampToLimitsWithinATolerance) {
  // Limits of +-3.14159 and a goal written at pi, 2.65e-6 beyond: clamped, within any tolerance above that.
  const std::string urdf = R"(<robot name="r"><link name="a"/><link name="b"/><link name="c"/>
    <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit lower="-3.14159" upper="3.14159" effort="1" velocity="1"/></joint>
    <joint name="k" type="prismatic"><parent link="b"/><child link="c"/><axis xyz="1 0 0"/>
    <limit lower="0" upper="0.5" effort="1" velocity="1"/></joint></robot>)";
  auto loaded = RobotModel::FromUrdfString(urdf);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const RobotModel& m = *loaded.value();
  const double pi = 3.14159265358979323846;
  std::vector<double> q = {pi, 0.25};
  const std::vector<double> given = q;
  auto clamped = m.ClampToLimits(q, kGoalBoundsTolerance);
  ASSERT_TRUE(clamped.ok()) << clamped.error().message;
  EXPECT_EQ(clamped.value(), std::vector<int32_t>{0});
  EXPECT_EQ(q, (std::vector<double>{3.14159, 0.25}));
  const std::string warning = m.ClampWarning("goal", given, q, clamped.value(), kGoalBoundsTolerance);
  EXPECT_NE(warning.find("joint 'j' from 3.14159265"), std::string::npos) << warning;
  EXPECT_NE(warning.find("to 3.14159 "), std::string::npos) << warning;
  // Within the limits nothing moves; both sides of both joints clamp.
  q = {0.1, 0.2};
  EXPECT_TRUE(m.ClampToLimits(q, kStartBoundsTolerance).value().empty());
  EXPECT_EQ(q, (std::vector<double>{0.1, 0.2}));
  q = {-3.18, -0.04};
  EXPECT_EQ(m.ClampToLimits(q, kStartBoundsTolerance).value(), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(q, (std::vector<double>{-3.14159, 0.0}));
  // Beyond the tolerance: refused naming the joint, the value and the limits, and q is left as given.
  q = {0.0, 0.56};
  auto far = m.ClampToLimits(q, kStartBoundsTolerance);
  ASSERT_FALSE(far.ok());
  EXPECT_NE(far.error().message.find("'k'"), std::string::npos) << far.error().message;
  EXPECT_NE(far.error().message.find("0.56"), std::string::npos) << far.error().message;
  EXPECT_NE(far.error().message.find("[0, 0.5]"), std::string::npos) << far.error().message;
  EXPECT_EQ(q, (std::vector<double>{0.0, 0.56}));
  q = {pi + 2e-4, 0.0};
  EXPECT_FALSE(m.ClampToLimits(q, kGoalBoundsTolerance).ok());
  q = {std::nan(""), 0.0};
  EXPECT_FALSE(m.ClampToLimits(q, kStartBoundsTolerance).ok());
}

TEST(RobotModelTest, DefaultConfigurationStaysWithinLimits) {
  const std::string urdf = R"(<robot name="r"><link name="a"/><link name="b"/>
    <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit lower="0.5" upper="1.5" effort="1" velocity="1"/></joint></robot>)";
  auto m = RobotModel::FromUrdfString(urdf);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m.value()->DefaultConfiguration(), std::vector<double>{1.0});
}

TEST(RobotModelTest, SharedModelAcrossThreads) {
  auto m = LoadOrDie(AvailableRobots()[1]);
  ASSERT_TRUE(m);
  std::mt19937_64 rng(5);
  std::vector<std::vector<double>> qs;
  for (int i = 0; i < 200; ++i) qs.push_back(RandomQ(*m, rng));
  std::vector<std::vector<RigidTransform>> serial(qs.size());
  for (size_t i = 0; i < qs.size(); ++i) {
    PROX_ASSERT_OK_AND_ASSIGN(serial[i], m->ForwardKinematics(qs[i]));
  }
  std::vector<int> mismatches(2, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      std::vector<RigidTransform> X_WL(m->num_links());
      for (int rep = 0; rep < 20; ++rep) {
        for (size_t i = 0; i < qs.size(); ++i) {
          if (!m->ForwardKinematics(qs[i], std::span<RigidTransform>(X_WL)).ok()) ++mismatches[t];
          if (X_WL.back().p != serial[i].back().p) ++mismatches[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches[0] + mismatches[1], 0);
}

TEST(RobotModelTest, PlanarLeverRadiiByHand) {
  auto m = LoadOrDie(AvailableRobots()[0]);
  ASSERT_TRUE(m);
  const LinkIndex lower = m->FindLink("lower").value(), tip = m->FindLink("tip").value();
  const LinkIndex upper = m->FindLink("upper").value();
  const JointIndex shoulder = m->FindJoint("shoulder").value(), elbow = m->FindJoint("elbow").value();
  // tip: sphere r 0.05 at 0.5 beyond the elbow, which is 1.0 beyond the shoulder.
  EXPECT_NEAR(LeverRadius(*m, tip, elbow), 0.55, 1e-12);
  EXPECT_NEAR(LeverRadius(*m, tip, shoulder), 1.55, 1e-12);
  // lower: cylinder r 0.04 from 0 to 0.5 along x, covered by the capsule over its cap centres.
  EXPECT_NEAR(LeverRadius(*m, lower, elbow), 0.54, 1e-12);
  EXPECT_NEAR(LeverRadius(*m, lower, shoulder), 1.54, 1e-12);
  EXPECT_EQ(LeverRadius(*m, upper, elbow), 0.0);
  // upper: box 1.0 x 0.1 x 0.1 from 0 to 1 along x; farthest corner from z: hypot(1, 0.05).
  EXPECT_NEAR(LeverRadius(*m, upper, shoulder), std::hypot(1.0, 0.05), 1e-12);
  // A shoulder-only move sweeps the tip sphere's far point along an arc of exactly this length.
  EXPECT_NEAR(m->MotionBound(tip, std::vector<double>{0, 0}, std::vector<double>{0.1, 0}), 0.155, 1e-12);
  EXPECT_NEAR(m->MotionBound(tip, std::vector<double>{0, 0}, std::vector<double>{0.1, -0.2}), 0.155 + 0.11, 1e-12);
  EXPECT_EQ(m->MotionBound(m->FindLink("base").value(), std::vector<double>{0, 0}, std::vector<double>{1, 1}), 0.0);
}

// Points of a link's collision geometry, in the link frame: vertices, and random points on
// triangles and primitive surfaces.
std::vector<Vec3> SamplePoints(const Link& link, std::mt19937_64& rng, int per_geometry) {
  std::vector<Vec3> points;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (const LinkGeometry& g : link.geometries) {
    switch (g.type) {
      case ShapeType::kMesh: {
        const TriangleMesh& mesh = g.mesh->mesh();
        const size_t stride = std::max<size_t>(1, mesh.vertices.size() / per_geometry);
        for (size_t i = 0; i < mesh.vertices.size(); i += stride) points.push_back(g.X_LG * mesh.vertices[i]);
        for (int i = 0; i < per_geometry; ++i) {
          const auto& t = mesh.triangles[rng() % mesh.triangles.size()];
          double a = u(rng), b = u(rng);
          if (a + b > 1) a = 1 - a, b = 1 - b;
          const Vec3 p = mesh.vertices[t[0]] + a * (mesh.vertices[t[1]] - mesh.vertices[t[0]]) +
                         b * (mesh.vertices[t[2]] - mesh.vertices[t[0]]);
          points.push_back(g.X_LG * p);
        }
        break;
      }
      case ShapeType::kBox:
        for (int i = 0; i < per_geometry; ++i) {
          Vec3 p(u(rng) - 0.5, u(rng) - 0.5, u(rng) - 0.5);
          p[rng() % 3] = (rng() % 2) ? 0.5 : -0.5;
          points.push_back(g.X_LG * Vec3(p.cwiseProduct(g.box_size)));
        }
        break;
      case ShapeType::kSphere:
        for (int i = 0; i < per_geometry; ++i) {
          const Vec3 d = testing::RandomRotation(rng).col(0);
          points.push_back(g.X_LG * (g.radius * d));
        }
        break;
      case ShapeType::kCylinder:
        for (int i = 0; i < per_geometry; ++i) {
          const double a = 2 * M_PI * u(rng);
          points.push_back(g.X_LG * Vec3(g.radius * std::cos(a), g.radius * std::sin(a), (u(rng) - 0.5) * g.length));
        }
        break;
    }
  }
  return points;
}

// For random segments, the path length of every sampled point (summed over a fine grid of t) and the
// displacement over random sub-segments never exceed MotionBound.
void CheckMotionBounds(const RobotCase& c, double widen, int segments) {
  SCOPED_TRACE(c.label);
  auto m = LoadOrDie(c);
  ASSERT_TRUE(m);
  std::mt19937_64 rng(2024);
  std::vector<std::vector<Vec3>> points(m->num_links());
  for (LinkIndex l = 0; l < m->num_links(); ++l) points[l] = SamplePoints(m->link(l), rng, 40);
  constexpr int kSteps = 64;
  std::vector<std::vector<RigidTransform>> X(kSteps + 1, std::vector<RigidTransform>(m->num_links()));
  std::vector<double> q(m->num_positions());
  double worst_ratio = 0;
  double tight_sum = 0, static_sum = 0;
  for (int s = 0; s < segments; ++s) {
    const std::vector<double> q0 = RandomQ(*m, rng, widen), q1 = RandomQ(*m, rng, widen);
    for (int i = 0; i <= kSteps; ++i) {
      const double t = static_cast<double>(i) / kSteps;
      for (int k = 0; k < m->num_positions(); ++k) q[k] = q0[k] + t * (q1[k] - q0[k]);
      ASSERT_TRUE(m->ForwardKinematics(q, std::span<RigidTransform>(X[i])).ok());
    }
    const int ia = static_cast<int>(rng() % kSteps), ib = ia + 1 + static_cast<int>(rng() % (kSteps - ia));
    std::vector<double> qa(m->num_positions()), qb(m->num_positions());
    for (int k = 0; k < m->num_positions(); ++k) {
      qa[k] = q0[k] + (static_cast<double>(ia) / kSteps) * (q1[k] - q0[k]);
      qb[k] = q0[k] + (static_cast<double>(ib) / kSteps) * (q1[k] - q0[k]);
    }
    for (LinkIndex l = 0; l < m->num_links(); ++l) {
      const double bound = m->MotionBound(l, q0, q1);
      const double sub_bound = m->MotionBound(l, qa, qb);
      for (const Vec3& p_L : points[l]) {
        double length = 0;
        for (int i = 1; i <= kSteps; ++i) length += (X[i][l] * p_L - X[i - 1][l] * p_L).norm();
        EXPECT_LE(length, bound * (1 + 1e-9) + 1e-12) << m->link(l).name;
        EXPECT_LE((X[ib][l] * p_L - X[ia][l] * p_L).norm(), sub_bound * (1 + 1e-9) + 1e-12) << m->link(l).name;
        if (bound > 0) worst_ratio = std::max(worst_ratio, length / bound);
      }
      // Relative to every ancestor's frame: only the joints in between count.
      for (LinkIndex a = l; a >= 0; a = m->link(a).parent_joint >= 0 ? m->joint(m->link(a).parent_joint).parent_link : -1) {
        const double relative = MotionBoundRelative(*m, l, a, q0, q1);
        EXPECT_LE(relative, bound * (1 + 1e-12));
        for (const Vec3& p_L : points[l]) {
          double length = 0;
          for (int i = 1; i <= kSteps; ++i) {
            length += (X[i][a].inverse() * (X[i][l] * p_L) - X[i - 1][a].inverse() * (X[i - 1][l] * p_L)).norm();
          }
          EXPECT_LE(length, relative * (1 + 1e-9) + 1e-12) << m->link(l).name << " in " << m->link(a).name;
        }
      }
      // The levers add up to the bound, and tightened by the poses at either end of [ia, ib] (the
      // distance from each joint's axis to a ball around the points, grown by the link's motion
      // relative to the joint's child link) they still cover every point's path.
      if (!points[l].empty()) {
        std::vector<MotionLever> levers;
        MotionLevers(*m, l, 0, qa, qb, 0.0, &levers);
        ASSERT_EQ(static_cast<int32_t>(levers.size()), NumMovingJoints(*m, l));
        double sum = 0;
        for (const auto& lv : levers) sum += lv.dq * (lv.prismatic ? 1.0 : lv.lever);
        EXPECT_NEAR(sum, sub_bound, 1e-12 * (1 + sub_bound));
        Vec3 c_L = Vec3::Zero();
        for (const Vec3& p_L : points[l]) c_L += p_L;
        c_L /= static_cast<double>(points[l].size());
        double r = 0;
        for (const Vec3& p_L : points[l]) r = std::max(r, (p_L - c_L).norm());
        for (int end : {ia, ib}) {
          double tight = 0;
          for (const auto& lv : levers) {
            if (lv.prismatic) {
              tight += lv.dq;
              continue;
            }
            const Joint& j = m->joint(lv.joint);
            const double at_end = JointAxisDistance(*m, lv.joint, X[end][j.parent_link], X[end][l] * c_L) + r;
            tight += lv.dq * std::min(lv.lever, at_end + MotionBoundRelative(*m, l, j.child_link, qa, qb));
          }
          EXPECT_LE(tight, sub_bound * (1 + 1e-12) + 1e-15);
          tight_sum += tight;
          static_sum += sub_bound;
          for (const Vec3& p_L : points[l]) {
            double length = 0;
            for (int i = ia + 1; i <= ib; ++i) length += (X[i][l] * p_L - X[i - 1][l] * p_L).norm();
            EXPECT_LE(length, tight * (1 + 1e-9) + 1e-12) << m->link(l).name << " tightened at step " << end;
          }
        }
      }
      // A carried object: any point within `reach` of the link origin.
      const double reach = 0.3;
      const double carried = m->MotionBound(l, q0, q1, reach);
      for (int k = 0; k < 8; ++k) {
        const Vec3 p_L = reach * Vec3::Random().normalized();
        double length = 0;
        for (int i = 1; i <= kSteps; ++i) length += (X[i][l] * p_L - X[i - 1][l] * p_L).norm();
        EXPECT_LE(length, carried * (1 + 1e-9) + 1e-12) << m->link(l).name << " carrying a point at " << reach;
      }
    }
  }
  // The bound is not vacuous: some point travels a good fraction of it.
  EXPECT_GT(worst_ratio, 0.3);
  std::printf("%s: levers tightened by the poses at the ends: %.3f of the static bound\n", c.label.c_str(),
              static_sum > 0 ? tight_sum / static_sum : 1.0);
}

TEST(RobotModelTest, CommonAncestorMatchesThePathsToTheRoot) {
  for (const RobotCase& c : AvailableRobots()) {
    SCOPED_TRACE(c.label);
    auto m = LoadOrDie(c);
    ASSERT_TRUE(m);
    auto path = [&](LinkIndex l) {
      std::vector<LinkIndex> p;
      for (; l >= 0; l = m->link(l).parent_joint >= 0 ? m->joint(m->link(l).parent_joint).parent_link : -1) p.push_back(l);
      return p;
    };
    for (LinkIndex a = 0; a < m->num_links(); ++a) {
      for (LinkIndex b = 0; b < m->num_links(); ++b) {
        const auto pa = path(a), pb = path(b);
        LinkIndex expected = -1;  // the first link on a's path that is also on b's
        for (LinkIndex x : pa) {
          if (std::find(pb.begin(), pb.end(), x) != pb.end()) {
            expected = x;
            break;
          }
        }
        EXPECT_EQ(CommonAncestor(*m, a, b), expected) << m->link(a).name << ", " << m->link(b).name;
      }
    }
  }
}

TEST(RobotModelTest, MotionBoundCoversSampledPointsOnFixtures) {
  const auto robots = AvailableRobots();
  CheckMotionBounds(robots[0], 0.0, testing::Cases(100));
  // Out of limits too: the prismatic extents are taken from the segment itself.
  CheckMotionBounds(robots[1], 0.5, testing::Cases(100));
}

TEST(RobotModelTest, MotionBoundCoversSampledPointsOnRealRobots) {
  const auto robots = AvailableRobots();
  if (robots.size() <= 2) GTEST_SKIP() << "no shared or dart-doc robots present";
  for (size_t i = 2; i < robots.size(); ++i) CheckMotionBounds(robots[i], 0.0, testing::Cases(30));
}

// Forward kinematics' sines and cosines against the long-double library: random angles over joint
// ranges and beyond, the quadrant boundaries (multiples of pi/4, nudged), tiny, signed-zero and huge
// arguments, in batches of every length up to 19 (the vectorized pass and its remainder).
// FrameJacobian against central differences of forward kinematics: a point fixed to each link (its
// velocity, rows 0-2, equal to PointJacobian's) and the link's rotation (rows 3-5, the angular velocity
// from log(R(q + h e_j) R(q - h e_j)^T) / 2h), on the fixtures (mimic joints included) and real robots.
// AddPointGradient adds PointJacobian's transpose times a direction to what the gradient holds.
TEST(RobotModelTest, FrameJacobianIsTheDerivativeOfForwardKinematics) {
  std::mt19937_64 rng(31);
  for (const RobotCase& c : AvailableRobots()) {
    auto model = LoadOrDie(c);
    ASSERT_NE(model, nullptr);
    const RobotModel& m = *model;
    const auto dof = static_cast<size_t>(m.num_positions());
    std::vector<double> J(6 * dof), P(3 * dof);
    for (int trial = 0; trial < 5; ++trial) {
      const std::vector<double> q = RandomQ(m, rng);
      const auto X = m.ForwardKinematics(q).value();
      for (LinkIndex k = 0; k < m.num_links(); ++k) {
        const Vec3 p_L(0.05, -0.02, 0.1);
        const Vec3 p_W = X[static_cast<size_t>(k)] * p_L;
        m.FrameJacobian(k, p_W, X, J);
        m.PointJacobian(k, p_W, X, P);
        const Vec3 v_W(0.3, -0.7, 0.5);
        std::vector<double> g(dof);
        for (size_t j = 0; j < dof; ++j) g[j] = static_cast<double>(j);  // added to, not overwritten
        m.AddPointGradient(k, p_W, v_W, X, g);
        for (size_t j = 0; j < dof; ++j) {
          const double expected = static_cast<double>(j) + v_W.dot(Vec3(P[3 * j], P[3 * j + 1], P[3 * j + 2]));
          EXPECT_NEAR(g[j], expected, 1e-12 * (1.0 + std::abs(expected))) << c.label << " link " << k << " joint " << j;
        }
        for (size_t j = 0; j < dof; ++j) {
          const double h = 1e-6;
          std::vector<double> hi = q, lo = q;
          hi[j] += h;
          lo[j] -= h;
          const RigidTransform Xh = m.ForwardKinematics(hi).value()[static_cast<size_t>(k)];
          const RigidTransform Xl = m.ForwardKinematics(lo).value()[static_cast<size_t>(k)];
          const Vec3 v = (Xh * p_L - Xl * p_L) / (2 * h);
          const Eigen::AngleAxisd turn(Xh.R * Xl.R.transpose());
          const Vec3 w = turn.angle() * turn.axis() / (2 * h);
          for (int i = 0; i < 3; ++i) {
            EXPECT_NEAR(J[6 * j + i], v[i], 1e-6) << c.label << " link " << k << " joint " << j;
            EXPECT_NEAR(J[6 * j + 3 + i], w[i], 1e-6) << c.label << " link " << k << " joint " << j;
            EXPECT_EQ(J[6 * j + i], P[3 * j + i]);
          }
        }
      }
    }
  }
}

TEST(SinCosTest, MatchesTheLongDoubleLibraryToAnUlpOfOne) {
  std::mt19937_64 rng(7);
  std::vector<double> x;
  for (int i = 0; i < 200000; ++i) x.push_back(std::uniform_real_distribution<double>(-40.0, 40.0)(rng));
  for (int k = -400; k <= 400; ++k) {
    for (const double e : {0.0, 1e-300, 1e-17, -1e-17, 1e-9, -1e-9, 1e-3}) x.push_back(k * M_PI / 4 + e);
  }
  for (const double v : {0.0, -0.0, 1e-310, 99999.9, -99999.9, 1e5, 2e5, -3.5e7, 1e300}) x.push_back(v);
  std::vector<double> s(x.size()), c(x.size());
  size_t at = 0;
  for (int n = 1; at < x.size(); n = n % 19 + 1) {
    const int m = static_cast<int>(std::min<size_t>(static_cast<size_t>(n), x.size() - at));
    SinCos(&x[at], &s[at], &c[at], m);
    at += static_cast<size_t>(m);
  }
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const long double ls = std::sin(static_cast<long double>(x[i]));
    const long double lc = std::cos(static_cast<long double>(x[i]));
    const double es = static_cast<double>(std::fabs(s[i] - ls)), ec = static_cast<double>(std::fabs(c[i] - lc));
    worst = std::max({worst, es, ec});
    ASSERT_LE(es, 2.5e-16) << "sin(" << x[i] << ")";
    ASSERT_LE(ec, 2.5e-16) << "cos(" << x[i] << ")";
    if (std::abs(x[i]) > kSinCosRange) {
      EXPECT_EQ(s[i], std::sin(x[i]));
      EXPECT_EQ(c[i], std::cos(x[i]));
    }
  }
  EXPECT_GT(worst, 0.0) << "every value exact: the comparison is not at long double precision";
  double zs = 1.0, zc = 0.0;
  const double negative_zero = -0.0;
  SinCos(&negative_zero, &zs, &zc, 1);
  EXPECT_EQ(zs, 0.0);
  EXPECT_EQ(zc, 1.0);
}

}  // namespace
}  // namespace proximity::core
