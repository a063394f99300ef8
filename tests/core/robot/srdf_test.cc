// SRDF parsing, its checks against the URDF, named states, groups, and the default allowed-collision set.

#include <fstream>
#include <sstream>

#include "core/test_util.h"
#include "proximity/core/robot/robot_model.h"

namespace proximity::core {
namespace {

using testing::SharedDataDir;
using testing::TestDataDir;

std::string Fixture(const std::string& name) { return TestDataDir() + "/robots/" + name; }

std::string ReadText(const std::string& path) { return testing::ReadFile(path); }

std::shared_ptr<const RobotModel> LoadPlanar(const std::string& srdf) {
  auto r = RobotModel::FromUrdfFile(Fixture("planar_2link.urdf"), srdf);
  if (!r.ok()) {
    ADD_FAILURE() << r.error().message;
    return nullptr;
  }
  return r.value();
}

TEST(SrdfTest, ParsesPlanarFixture) {
  auto r = ParseSrdf(ReadText(Fixture("planar_2link.srdf")));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Srdf& s = r.value();
  EXPECT_EQ(s.robot_name, "planar_2link");
  ASSERT_EQ(s.groups.size(), 3u);
  EXPECT_EQ(s.groups[0].name, "arm");
  EXPECT_EQ(s.groups[0].chains, (std::vector<std::pair<std::string, std::string>>{{"base", "tip"}}));
  EXPECT_EQ(s.groups[1].joints, std::vector<std::string>{"elbow"});
  EXPECT_EQ(s.groups[2].subgroups, std::vector<std::string>{"arm"});
  EXPECT_EQ(s.groups[2].links, std::vector<std::string>{"lower"});
  ASSERT_EQ(s.group_states.size(), 2u);
  EXPECT_EQ(s.group_states[1].name, "bent");
  EXPECT_EQ(s.group_states[1].group, "arm");
  EXPECT_EQ(s.group_states[1].values,
            (std::vector<std::pair<std::string, double>>{{"shoulder", 0.5}, {"elbow", -1.25}}));
  ASSERT_EQ(s.virtual_joints.size(), 1u);
  EXPECT_EQ(s.virtual_joints[0].type, "fixed");
  EXPECT_EQ(s.virtual_joints[0].parent_frame, "world");
  EXPECT_EQ(s.virtual_joints[0].child_link, "base");
  ASSERT_EQ(s.disabled_collisions.size(), 1u);
  EXPECT_EQ(s.disabled_collisions[0].link1, "base");
  EXPECT_EQ(s.disabled_collisions[0].link2, "lower");
  EXPECT_EQ(s.disabled_collisions[0].reason, "Never");
}

TEST(SrdfTest, MalformedSrdfIsAParseError) {
  auto r = ParseSrdf(ReadText(Fixture("malformed.srdf")), "malformed.srdf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kParseError);
  EXPECT_NE(r.error().message.find("malformed.srdf"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("line"), std::string::npos) << r.error().message;
  // Loading a robot with it fails as a whole.
  auto m = RobotModel::FromUrdfFile(Fixture("planar_2link.urdf"), Fixture("malformed.srdf"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("SRDF"), std::string::npos) << m.error().message;

  r = ParseSrdf(R"(<robot><disable_collisions link1="a"/></robot>)");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("link2"), std::string::npos) << r.error().message;
  r = ParseSrdf(R"(<robot><group_state name="s" group="g"><joint name="j" value="nan"/></group_state></robot>)");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'j'"), std::string::npos) << r.error().message;
  r = ParseSrdf(R"(<robot><group_state name="s" group="g"><joint name="j" value="0 1"/></group_state></robot>)");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'s'"), std::string::npos) << r.error().message;
  EXPECT_FALSE(ParseSrdf("<nothing/>").ok());
  EXPECT_FALSE(ParseSrdf(R"(<robot><group><joint name="j"/></group></robot>)").ok());
}

TEST(SrdfTest, DisabledPairsNamingUnknownLinksAreSkippedWithOneWarning) {
  // As MoveIt does: an SRDF written for a variant of the robot still loads; the pair is skipped.
  auto m = RobotModel::FromUrdfFile(Fixture("planar_2link.urdf"), Fixture("unknown_link.srdf"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ(m.value()->warnings().size(), 1u);
  EXPECT_NE(m.value()->warnings()[0].find("'forearm_that_does_not_exist'"), std::string::npos)
      << m.value()->warnings()[0];
  EXPECT_NE(m.value()->warnings()[0].find("skipped 1 <disable_collisions>"), std::string::npos);
  // The known pairs of the same SRDF still count.
  const std::string urdf = ReadText(Fixture("planar_2link.urdf"));
  auto both = RobotModel::FromUrdfString(urdf, R"(<robot name="planar_2link">
      <disable_collisions link1="base" link2="tip" reason="Never"/>
      <disable_collisions link1="base" link2="ghost" reason="Never"/>
      <disable_collisions link1="ghost" link2="phantom" reason="Never"/></robot>)");
  ASSERT_TRUE(both.ok()) << both.error().message;
  const RobotModel& robot = *both.value();
  EXPECT_TRUE(robot.AllowedCollision(robot.FindLink("base").value(), robot.FindLink("tip").value()));
  ASSERT_EQ(robot.warnings().size(), 1u);
  EXPECT_NE(robot.warnings()[0].find("skipped 2"), std::string::npos) << robot.warnings()[0];
  EXPECT_NE(robot.warnings()[0].find("'ghost', 'phantom'"), std::string::npos) << robot.warnings()[0];
}

TEST(SrdfTest, ElementsOutsideTheFormatAreIgnoredWithOneWarning) {
  const std::string urdf = ReadText(Fixture("planar_2link.urdf"));
  auto r = RobotModel::FromUrdfString(urdf, R"(<robot name="planar_2link">
      <group name="arm"><chain base_link="base" tip_link="tip"/></group>
      <end_effector name="ee" parent_link="tip" group="arm"/>
      <my_tool_config speed="3"/><my_tool_config speed="4"/><calibration/></robot>)");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r.value()->warnings().size(), 1u);  // end_effector is SRDF, read as MoveIt reads it
  EXPECT_NE(r.value()->warnings()[0].find("<my_tool_config> x2, <calibration>"), std::string::npos)
      << r.value()->warnings()[0];
  // A clean SRDF has no warnings.
  auto clean = RobotModel::FromUrdfFile(Fixture("planar_2link.urdf"), Fixture("planar_2link.srdf"));
  ASSERT_TRUE(clean.ok()) << clean.error().message;
  EXPECT_TRUE(clean.value()->warnings().empty());
}

TEST(SrdfTest, UnknownNamesAreErrorsNamingThem) {
  const std::string urdf = ReadText(Fixture("planar_2link.urdf"));
  const auto fails_naming = [&](const std::string& srdf, const std::string& name) {
    auto r = RobotModel::FromUrdfString(urdf, "<robot name=\"planar_2link\">" + srdf + "</robot>");
    if (r.ok()) return ::testing::AssertionFailure() << "loaded";
    if (r.error().message.find(name) == std::string::npos) return ::testing::AssertionFailure() << r.error().message;
    return ::testing::AssertionSuccess();
  };
  EXPECT_TRUE(fails_naming(R"(<group name="g"><joint name="wrist"/></group>)", "'wrist'"));
  EXPECT_TRUE(fails_naming(R"(<group name="g"><link name="hand"/></group>)", "'hand'"));
  EXPECT_TRUE(fails_naming(R"(<group name="g"><chain base_link="base" tip_link="claw"/></group>)", "'claw'"));
  EXPECT_TRUE(fails_naming(R"(<group name="g"><chain base_link="tip" tip_link="base"/></group>)", "does not descend"));
  EXPECT_TRUE(fails_naming(R"(<group name="g"><group name="h"/></group>)", "'h'"));
  EXPECT_TRUE(fails_naming(R"(<group name="g"/><group name="g"/>)", "duplicate group 'g'"));
  EXPECT_TRUE(fails_naming(R"(<group name="g"/><group_state name="s" group="g"><joint name="knee" value="1"/></group_state>)",
                           "'knee'"));
  EXPECT_TRUE(fails_naming(R"(<group_state name="s" group="legs"/>)", "'legs'"));
  EXPECT_TRUE(fails_naming(R"(<virtual_joint name="v" type="fixed" parent_frame="world" child_link="plate"/>)", "'plate'"));
  EXPECT_TRUE(fails_naming(R"(<passive_joint name="ankle"/>)", "'ankle'"));
}

TEST(SrdfTest, VirtualJointsAreReadAsMoveItReadsThem) {
  const std::string urdf = ReadText(Fixture("planar_2link.urdf"));
  const auto load = [&](const std::string& srdf) {
    return RobotModel::FromUrdfString(urdf, "<robot name=\"planar_2link\">" + srdf + "</robot>");
  };
  auto plain = load("");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  const std::vector<double> q = {0.4, -0.7};
  const std::vector<RigidTransform> X_plain = plain.value()->ForwardKinematics(q).value();
  // A fixed virtual joint on the root places the robot at the identity in its parent frame; passive
  // joints, groups and group states may name it (MoveIt's dual-arm configurations do).
  auto fixed = load(R"(<virtual_joint name="virtual_joint" type="fixed" parent_frame="world" child_link="base"/>
      <group name="arm"><joint name="virtual_joint"/><chain base_link="base" tip_link="tip"/></group>
      <group_state name="up" group="arm"><joint name="virtual_joint" value="0"/><joint name="shoulder" value="0.3"/></group_state>
      <passive_joint name="virtual_joint"/>)");
  ASSERT_TRUE(fixed.ok()) << fixed.error().message;
  EXPECT_TRUE(fixed.value()->warnings().empty()) << fixed.value()->warnings()[0];
  EXPECT_TRUE(fixed.value()->IsVirtualJoint("virtual_joint"));
  EXPECT_FALSE(fixed.value()->IsVirtualJoint("shoulder"));
  EXPECT_EQ(fixed.value()->GroupActiveIndices("arm").value(), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(fixed.value()->NamedConfiguration("up").value(), (std::vector<double>{0.3, 0.0}));
  const std::vector<RigidTransform> X_fixed = fixed.value()->ForwardKinematics(q).value();
  for (size_t k = 0; k < X_plain.size(); ++k) {
    EXPECT_EQ(X_fixed[k].p, X_plain[k].p);
    EXPECT_EQ(X_fixed[k].R, X_plain[k].R);
  }
  // Planar and floating: held at the identity, one warning naming them; coordinates "name/x" of a
  // virtual joint in a group state move nothing.
  auto planar = load(R"(<virtual_joint name="base_planar" type="planar" parent_frame="odom" child_link="base"/>
      <virtual_joint name="free" type="floating" parent_frame="world" child_link="base"/>
      <group name="arm"><chain base_link="base" tip_link="tip"/></group>
      <group_state name="s" group="arm"><joint name="base_planar/x" value="2"/><joint name="elbow" value="1"/></group_state>
      <passive_joint name="base_planar"/>)");
  ASSERT_TRUE(planar.ok()) << planar.error().message;
  ASSERT_EQ(planar.value()->warnings().size(), 1u);
  const std::string& held = planar.value()->warnings()[0];
  EXPECT_NE(held.find("'base_planar' (planar)"), std::string::npos) << held;
  EXPECT_NE(held.find("'free' (floating)"), std::string::npos) << held;
  EXPECT_NE(held.find("identity"), std::string::npos) << held;
  EXPECT_EQ(planar.value()->NamedConfiguration("s").value(), (std::vector<double>{0.0, 1.0}));
  const std::vector<RigidTransform> X_planar = planar.value()->ForwardKinematics(q).value();
  for (size_t k = 0; k < X_plain.size(); ++k) EXPECT_EQ(X_planar[k].p, X_plain[k].p);
  // Attached below the root: skipped, as MoveIt skips it; no type: read as fixed. One warning each.
  auto odd = load(R"(<virtual_joint name="mid" type="fixed" parent_frame="world" child_link="upper"/>
      <virtual_joint name="untyped" parent_frame="world" child_link="base"/>)");
  ASSERT_TRUE(odd.ok()) << odd.error().message;
  ASSERT_EQ(odd.value()->warnings().size(), 2u);
  EXPECT_NE(odd.value()->warnings()[0].find("'untyped' (no type)"), std::string::npos) << odd.value()->warnings()[0];
  EXPECT_NE(odd.value()->warnings()[1].find("'mid' (child 'upper', the root is 'base')"), std::string::npos)
      << odd.value()->warnings()[1];
  // A passive joint naming neither a URDF joint nor a virtual joint is still refused.
  auto unknown = load(R"(<virtual_joint name="virtual_joint" type="fixed" parent_frame="world" child_link="base"/>
      <passive_joint name="other_joint"/>)");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("'other_joint'"), std::string::npos) << unknown.error().message;
}

TEST(SrdfTest, AllowedPairsKeepTheirReason) {
  auto m = LoadPlanar(Fixture("planar_2link.srdf"));
  ASSERT_TRUE(m);
  const auto reason = [&](const char* a, const char* b) {
    return m->AllowedPairReason(m->FindLink(a).value(), m->FindLink(b).value());
  };
  EXPECT_EQ(reason("tip", "tip"), AllowedReason::kSameLink);
  EXPECT_EQ(reason("base", "upper"), AllowedReason::kAdjacent);
  EXPECT_EQ(reason("upper", "base"), AllowedReason::kAdjacent);
  EXPECT_EQ(reason("lower", "tip"), AllowedReason::kAdjacent);  // the fixed joint's own pair
  EXPECT_EQ(reason("base", "lower"), AllowedReason::kSrdf);
  EXPECT_EQ(m->SrdfReason(m->FindLink("lower").value(), m->FindLink("base").value()), "Never");
  EXPECT_EQ(reason("base", "tip"), AllowedReason::kNone);
  EXPECT_EQ(reason("upper", "tip"), AllowedReason::kNone);
  for (LinkIndex a = 0; a < m->num_links(); ++a) {
    for (LinkIndex b = 0; b < m->num_links(); ++b) {
      EXPECT_EQ(m->AllowedCollision(a, b), m->AllowedPairReason(a, b) != AllowedReason::kNone);
    }
  }
  // Rigid through a chain of fixed joints; an SRDF pair that is adjacent anyway keeps "adjacent".
  auto chain = RobotModel::FromUrdfString(R"(<robot name="r"><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
      <joint name="ab" type="fixed"><parent link="a"/><child link="b"/></joint>
      <joint name="bc" type="fixed"><parent link="b"/><child link="c"/></joint>
      <joint name="cd" type="revolute"><parent link="c"/><child link="d"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      </robot>)", R"(<robot name="r"><disable_collisions link1="c" link2="d" reason="Adjacent"/>
      <disable_collisions link1="a" link2="d" reason="Default"/></robot>)");
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  const RobotModel& r = *chain.value();
  EXPECT_EQ(r.AllowedPairReason(r.FindLink("a").value(), r.FindLink("c").value()), AllowedReason::kRigid);
  EXPECT_EQ(r.AllowedPairReason(r.FindLink("c").value(), r.FindLink("d").value()), AllowedReason::kAdjacent);
  EXPECT_EQ(r.AllowedPairReason(r.FindLink("d").value(), r.FindLink("a").value()), AllowedReason::kSrdf);
  EXPECT_EQ(r.SrdfReason(r.FindLink("a").value(), r.FindLink("d").value()), "Default");
  EXPECT_EQ(r.SrdfReason(r.FindLink("c").value(), r.FindLink("d").value()), "");
}

TEST(SrdfTest, NamedStatesAndGroups) {
  auto m = LoadPlanar(Fixture("planar_2link.srdf"));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->NamedConfiguration("bent").value(), (std::vector<double>{0.5, -1.25}));
  EXPECT_EQ(m->NamedConfiguration("home", "arm").value(), (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(m->NamedConfiguration("bent", "wrist").error().code, ErrorCode::kNotFound);
  auto none = m->NamedConfiguration("folded");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("'folded'"), std::string::npos);
  EXPECT_EQ(m->GroupActiveIndices("arm").value(), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(m->GroupActiveIndices("wrist").value(), (std::vector<int32_t>{1}));
  EXPECT_EQ(m->GroupActiveIndices("everything").value(), (std::vector<int32_t>{0, 1}));
  EXPECT_FALSE(m->GroupActiveIndices("legs").ok());
}

TEST(SrdfTest, AChainHoldsTheJointsBelowItsBaseLinkOnly) {
  // As MoveIt builds a chain group: from the tip up to the base link, the joint above the base link
  // (here the active shoulder) not included.
  auto m = RobotModel::FromUrdfString(ReadText(Fixture("planar_2link.urdf")), R"(<robot name="planar_2link">
      <group name="forearm"><chain base_link="upper" tip_link="tip"/></group>
      <group name="whole"><chain base_link="base" tip_link="tip"/></group></robot>)");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m.value()->GroupActiveIndices("forearm").value(), (std::vector<int32_t>{1}));
  EXPECT_EQ(m.value()->GroupActiveIndices("whole").value(), (std::vector<int32_t>{0, 1}));
}

TEST(SrdfTest, PlanarAllowedCollisions) {
  auto with = LoadPlanar(Fixture("planar_2link.srdf"));
  auto without = LoadPlanar("");
  ASSERT_TRUE(with && without);
  const auto allowed = [](const RobotModel& m, const char* a, const char* b) {
    return m.AllowedCollision(a, b).value();
  };
  for (const RobotModel* m : {with.get(), without.get()}) {
    EXPECT_TRUE(allowed(*m, "base", "upper"));   // joined by the shoulder
    EXPECT_TRUE(allowed(*m, "upper", "lower"));  // joined by the elbow
    EXPECT_TRUE(allowed(*m, "lower", "tip"));    // fixed joint
    EXPECT_TRUE(allowed(*m, "tip", "tip"));
    EXPECT_FALSE(allowed(*m, "base", "tip"));
    EXPECT_FALSE(allowed(*m, "upper", "tip"));
    for (LinkIndex a = 0; a < m->num_links(); ++a) {
      for (LinkIndex b = 0; b < m->num_links(); ++b) EXPECT_EQ(m->AllowedCollision(a, b), m->AllowedCollision(b, a));
    }
  }
  EXPECT_TRUE(allowed(*with, "base", "lower"));  // the SRDF's pair
  EXPECT_TRUE(allowed(*with, "lower", "base"));
  EXPECT_FALSE(allowed(*without, "base", "lower"));
  auto unknown = with->AllowedCollision("base", "gripper");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("'gripper'"), std::string::npos);
}

TEST(SrdfTest, RigidGroupsThroughFixedJointsAreAllowed) {
  auto r = RobotModel::FromUrdfFile(Fixture("mixed_joints.urdf"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const RobotModel& m = *r.value();
  EXPECT_TRUE(m.AllowedCollision("forearm", "tool").value());
  EXPECT_TRUE(m.AllowedCollision("forearm", "finger_link").value());
  EXPECT_FALSE(m.AllowedCollision("finger_link", "tool").value());
  EXPECT_FALSE(m.AllowedCollision("turret", "forearm").value());
  EXPECT_TRUE(m.AllowedCollision("base", "side").value());
  // A chain of fixed joints: a, b, c are one rigid body, d hangs off c by a revolute joint.
  auto chain = RobotModel::FromUrdfString(R"(<robot name="r"><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
      <joint name="ab" type="fixed"><parent link="a"/><child link="b"/></joint>
      <joint name="bc" type="fixed"><parent link="b"/><child link="c"/></joint>
      <joint name="cd" type="revolute"><parent link="c"/><child link="d"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      </robot>)");
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  EXPECT_TRUE(chain.value()->AllowedCollision("a", "c").value());
  EXPECT_TRUE(chain.value()->AllowedCollision("c", "d").value());
  EXPECT_FALSE(chain.value()->AllowedCollision("a", "d").value());
}

TEST(SrdfTest, PandaSemantics) {
  const std::string shared = SharedDataDir();
  PROX_REQUIRE_DIR(shared, "../shared/data");
  RobotLoadOptions options;
  options.package_dirs["moveit_resources_panda_description"] = shared + "/robots/panda/moveit_resources_panda_description";
  auto r = RobotModel::FromUrdfFile(shared + "/robots/panda/moveit_resources_panda_description/urdf/panda.urdf",
                                    shared + "/robots/panda/moveit_resources_panda_moveit_config/config/panda.srdf", options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const RobotModel& m = *r.value();
  const Srdf& s = m.srdf();
  EXPECT_EQ(s.disabled_collisions.size(), 34u);
  for (const SrdfDisabledCollision& d : s.disabled_collisions) {
    EXPECT_TRUE(m.AllowedCollision(d.link1, d.link2).value()) << d.link1 << " " << d.link2;
  }
  EXPECT_EQ(s.group_states.size(), 5u);
  EXPECT_EQ(s.groups.size(), 3u);
  ASSERT_EQ(s.virtual_joints.size(), 1u);
  EXPECT_EQ(s.virtual_joints[0].child_link, "panda_link0");
  EXPECT_EQ(s.passive_joints, std::vector<std::string>{"panda_finger_joint2"});
  const std::vector<double> ready = m.NamedConfiguration("ready").value();
  EXPECT_EQ(ready, (std::vector<double>{0, -0.785, 0, -2.356, 0, 1.571, 0.785, 0}));
  // "open" names both fingers; the mimic finger's value is determined by the model.
  const std::vector<double> open = m.NamedConfiguration("open", "hand").value();
  EXPECT_EQ(open[7], 0.035);
  EXPECT_EQ(m.GroupActiveIndices("panda_arm").value(), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(m.GroupActiveIndices("hand").value(), (std::vector<int32_t>{7}));
  EXPECT_EQ(m.GroupActiveIndices("panda_arm_hand").value().size(), 8u);
  // Never-adjacent, never-disabled: link0 and the hand can collide.
  EXPECT_FALSE(m.AllowedCollision("panda_link0", "panda_hand").value());
  // link7, link8 and the hand are rigidly connected through fixed joints.
  EXPECT_TRUE(m.AllowedCollision("panda_link7", "panda_hand").value());
}

TEST(SrdfTest, Ur5Semantics) {
  const std::string shared = SharedDataDir();
  PROX_REQUIRE_DIR(shared, "../shared/data");
  RobotLoadOptions options;
  options.package_dirs["ur_description"] = shared + "/robots/ur5/ur_description";
  auto r = RobotModel::FromUrdfFile(shared + "/robots/ur5/ur_description/urdf/ur5_robot.urdf",
                                    shared + "/robots/ur5/ur5_moveit_config/config/ur5.srdf", options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const RobotModel& m = *r.value();
  EXPECT_EQ(m.srdf().disabled_collisions.size(), 10u);
  for (const SrdfDisabledCollision& d : m.srdf().disabled_collisions) {
    EXPECT_TRUE(m.AllowedCollision(d.link1, d.link2).value()) << d.link1 << " " << d.link2;
  }
  ASSERT_EQ(m.srdf().group_states.size(), 2u);
  EXPECT_TRUE(m.NamedConfiguration("home", "manipulator").ok());
  EXPECT_TRUE(m.NamedConfiguration("up").ok());
  EXPECT_EQ(m.GroupActiveIndices("manipulator").value(), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_FALSE(m.AllowedCollision("base_link", "wrist_3_link").value());
}

}  // namespace
}  // namespace proximity::core
