// URDF loading: real robots, joint and geometry contents, mesh URI resolution, mesh sharing, and
// every kind of bad input returning an error that names the element.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/test_util.h"
#include "proximity/core/robot/robot_model.h"
#include "bvh/bvh.h"

namespace proximity::core {
namespace {

namespace fs = std::filesystem;
using testing::DartUrdfDir;
using testing::SharedDataDir;
using testing::TestDataDir;

std::string Fixture(const std::string& name) { return TestDataDir() + "/robots/" + name; }

std::map<JointType, int> CountTypes(const RobotModel& m) {
  std::map<JointType, int> counts;
  for (const Joint& j : m.joints()) ++counts[j.type];
  return counts;
}

int CountMimics(const RobotModel& m) {
  int n = 0;
  for (const Joint& j : m.joints()) n += j.is_mimic();
  return n;
}

std::set<const MeshModel*> DistinctMeshes(const RobotModel& m) {
  std::set<const MeshModel*> meshes;
  for (const Link& l : m.links()) {
    for (const LinkGeometry& g : l.geometries) {
      if (g.type == ShapeType::kMesh) meshes.insert(g.mesh.get());
    }
  }
  return meshes;
}

int CountGeometries(const RobotModel& m, ShapeType type) {
  int n = 0;
  for (const Link& l : m.links()) {
    for (const LinkGeometry& g : l.geometries) n += g.type == type;
  }
  return n;
}

::testing::AssertionResult FailsNaming(const Result<std::shared_ptr<const RobotModel>>& r,
                                       std::initializer_list<std::string> names) {
  if (r.ok()) return ::testing::AssertionFailure() << "loaded, expected an error";
  for (const std::string& n : names) {
    if (r.error().message.find(n) == std::string::npos) {
      return ::testing::AssertionFailure() << "message '" << r.error().message << "' does not name " << n;
    }
  }
  std::printf("  error: %s\n", r.error().message.c_str());
  return ::testing::AssertionSuccess();
}

// A temporary directory removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("prox_urdf_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

void WriteFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(UrdfTest, MixedFixtureContents) {
  auto r = RobotModel::FromUrdfFile(Fixture("mixed_joints.urdf"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const RobotModel& m = *r.value();
  EXPECT_EQ(m.name(), "mixed_joints");
  EXPECT_EQ(m.num_links(), 7);
  EXPECT_EQ(m.num_joints(), 6);
  EXPECT_EQ(m.link(0).name, "base");
  // Parents come before children; joint i has child link i + 1.
  for (JointIndex j = 0; j < m.num_joints(); ++j) {
    EXPECT_EQ(m.joint(j).child_link, j + 1);
    EXPECT_LT(m.joint(j).parent_link, m.joint(j).child_link);
    EXPECT_EQ(m.link(j + 1).parent_joint, j);
  }
  const Joint& wheel = m.joint(m.FindJoint("wheel").value());
  EXPECT_EQ(wheel.type, JointType::kContinuous);
  EXPECT_EQ(wheel.lower, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(wheel.upper, std::numeric_limits<double>::infinity());
  const Joint& slide = m.joint(m.FindJoint("slide").value());
  EXPECT_EQ(slide.type, JointType::kPrismatic);
  EXPECT_EQ(slide.lower, -0.2);
  EXPECT_EQ(slide.upper, 0.3);
  EXPECT_EQ(slide.velocity_limit, 0.5);
  EXPECT_LT((slide.axis_J - Vec3::UnitX()).norm(), 1e-15);
  const Joint& elbow = m.joint(m.FindJoint("elbow").value());
  EXPECT_LT((elbow.X_PJ.R - Eigen::AngleAxisd(0.3, Vec3::UnitX()).toRotationMatrix()).norm(), 1e-12);
  const Joint& finger = m.joint(m.FindJoint("finger").value());
  EXPECT_TRUE(finger.is_mimic());
  EXPECT_EQ(finger.mimic_active_index, elbow.active_index);
  EXPECT_EQ(finger.mimic_multiplier, -2.0);
  EXPECT_EQ(finger.mimic_offset, 0.1);
  EXPECT_EQ(m.joint(m.FindJoint("tool_mount").value()).type, JointType::kFixed);

  // Primitives keep their parameters; meshes are shared per (file, scale).
  const Link& turret = m.link(m.FindLink("turret").value());
  ASSERT_EQ(turret.geometries.size(), 1u);
  EXPECT_EQ(turret.geometries[0].type, ShapeType::kCylinder);
  EXPECT_EQ(turret.geometries[0].radius, 0.05);
  EXPECT_EQ(turret.geometries[0].length, 0.2);
  EXPECT_LT((turret.geometries[0].X_LG.p - Vec3(0, 0, 0.1)).norm(), 1e-15);
  const Link& finger_link = m.link(m.FindLink("finger_link").value());
  ASSERT_EQ(finger_link.geometries.size(), 2u);
  EXPECT_EQ(finger_link.geometries[0].type, ShapeType::kSphere);
  EXPECT_EQ(finger_link.geometries[0].radius, 0.03);
  EXPECT_EQ(finger_link.geometries[1].type, ShapeType::kMesh);
  const Link& carriage = m.link(m.FindLink("carriage").value());
  const Link& tool = m.link(m.FindLink("tool").value());
  const Link& side = m.link(m.FindLink("side").value());
  EXPECT_EQ(carriage.geometries[0].mesh.get(), tool.geometries[0].mesh.get());
  EXPECT_EQ(carriage.geometries[0].mesh.get(), finger_link.geometries[1].mesh.get());
  EXPECT_NE(carriage.geometries[0].mesh.get(), side.geometries[0].mesh.get());
  EXPECT_EQ(DistinctMeshes(m).size(), 2u);
  // The scale is applied: the unit tetrahedron becomes 0.1 (or 0.2 along x) in size.
  const auto bounds = MeshBounds(side.geometries[0].mesh->mesh());
  EXPECT_LT((bounds[1] - Vec3(0.2, 0.1, 0.1)).norm(), 1e-12);
  EXPECT_EQ(carriage.geometries[0].mesh_path, fs::weakly_canonical(TestDataDir() + "/tetrahedron.stl").string());
  const Link& base = m.link(0);
  EXPECT_EQ(base.geometries[0].type, ShapeType::kBox);
  EXPECT_EQ(base.geometries[0].box_size, Vec3(0.2, 0.2, 0.2));
}

TEST(UrdfTest, MeshCacheIsSharedAcrossModels) {
  RobotLoadOptions options;
  options.mesh_cache = std::make_shared<MeshCache>();
  auto a = RobotModel::FromUrdfFile(Fixture("mixed_joints.urdf"), "", options);
  auto b = RobotModel::FromUrdfFile(Fixture("mixed_joints.urdf"), "", options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(options.mesh_cache->size(), 2u);
  EXPECT_EQ(DistinctMeshes(*a.value()), DistinctMeshes(*b.value()));
  // Without a shared cache each load builds its own.
  auto c = RobotModel::FromUrdfFile(Fixture("mixed_joints.urdf"));
  ASSERT_TRUE(c.ok());
  EXPECT_NE(DistinctMeshes(*a.value()), DistinctMeshes(*c.value()));
}

TEST(UrdfTest, PlanarFixtureIgnoresVisualMeshes) {
  // The visual mesh names a package that exists nowhere; collision geometry alone is read.
  RobotLoadOptions options;
  options.ros_package_path = "";
  auto r = RobotModel::FromUrdfFile(Fixture("planar_2link.urdf"), "", options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value()->num_positions(), 2);
  EXPECT_EQ(r.value()->active_joint_names(), (std::vector<std::string>{"shoulder", "elbow"}));
}

TEST(UrdfTest, LoadsPanda) {
  const std::string shared = SharedDataDir();
  PROX_REQUIRE_DIR(shared, "../shared/data");
  RobotLoadOptions options;
  options.mesh_cache = std::make_shared<MeshCache>();
  options.ros_package_path = shared + "/robots/panda";
  auto r = RobotModel::FromUrdfFile(shared + "/robots/panda/moveit_resources_panda_description/urdf/panda.urdf", "", options);
  ASSERT_TRUE(r.ok()) << r.error().message;  // its 11 visual DAE files are absent
  const RobotModel& m = *r.value();
  EXPECT_EQ(m.name(), "panda");
  EXPECT_EQ(m.link(0).name, "panda_link0");
  EXPECT_EQ(m.num_links(), 12);
  EXPECT_EQ(m.num_joints(), 11);
  const auto types = CountTypes(m);
  EXPECT_EQ(types.at(JointType::kRevolute), 7);
  EXPECT_EQ(types.at(JointType::kPrismatic), 2);
  EXPECT_EQ(types.at(JointType::kFixed), 2);
  EXPECT_EQ(CountMimics(m), 1);
  EXPECT_EQ(m.num_positions(), 8);
  EXPECT_EQ(m.active_joint_names().front(), "panda_joint1");
  EXPECT_EQ(m.active_joint_names()[6], "panda_joint7");
  EXPECT_EQ(m.active_joint_names()[7], "panda_finger_joint1");
  EXPECT_EQ(CountGeometries(m, ShapeType::kMesh), 11);
  EXPECT_EQ(DistinctMeshes(m).size(), 10u);  // both fingers share finger.stl
  EXPECT_EQ(options.mesh_cache->size(), 10u);
  int triangles = 0;
  for (const MeshModel* mesh : DistinctMeshes(m)) triangles += mesh->num_triangles();
  EXPECT_EQ(triangles, 2332);
  EXPECT_EQ(m.joint(m.FindJoint("panda_joint4").value()).lower, -3.1416);
  EXPECT_EQ(m.joint(m.FindJoint("panda_finger_joint1").value()).upper, 0.04);
}

TEST(UrdfTest, LoadsUr5) {
  const std::string shared = SharedDataDir();
  PROX_REQUIRE_DIR(shared, "../shared/data");
  RobotLoadOptions options;
  options.package_dirs["ur_description"] = shared + "/robots/ur5/ur_description";
  auto r = RobotModel::FromUrdfFile(shared + "/robots/ur5/ur_description/urdf/ur5_robot.urdf", "", options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const RobotModel& m = *r.value();
  EXPECT_EQ(m.link(0).name, "world");
  EXPECT_EQ(m.num_links(), 9);
  EXPECT_EQ(m.num_joints(), 8);
  EXPECT_EQ(CountTypes(m).at(JointType::kRevolute), 6);
  EXPECT_EQ(CountTypes(m).at(JointType::kFixed), 2);
  EXPECT_EQ(m.active_joint_names(),
            (std::vector<std::string>{"shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
                                      "wrist_2_joint", "wrist_3_joint"}));
  EXPECT_EQ(CountGeometries(m, ShapeType::kMesh), 7);
  int triangles = 0;
  for (const MeshModel* mesh : DistinctMeshes(m)) triangles += mesh->num_triangles();
  EXPECT_EQ(triangles, 5328);
  const Link& ee = m.link(m.FindLink("ee_link").value());
  ASSERT_EQ(ee.geometries.size(), 1u);
  EXPECT_EQ(ee.geometries[0].type, ShapeType::kBox);
  EXPECT_EQ(ee.geometries[0].box_size, Vec3(0.01, 0.01, 0.01));
  EXPECT_EQ(ee.geometries[0].X_LG.p, Vec3(-0.01, 0, 0));
}

TEST(UrdfTest, LoadsMbmPandaWithPseudoPackage) {
  const std::string shared = SharedDataDir();
  PROX_REQUIRE_DIR(shared, "../shared/data");
  RobotLoadOptions options;
  options.package_dirs["meshes"] = shared + "/robots/mbm_panda/meshes";
  auto r = RobotModel::FromUrdfFile(shared + "/robots/mbm_panda/panda.urdf", shared + "/robots/mbm_panda/panda.srdf", options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const RobotModel& m = *r.value();
  EXPECT_EQ(m.num_links(), 13);
  EXPECT_EQ(m.num_joints(), 12);
  EXPECT_EQ(CountTypes(m).at(JointType::kRevolute), 7);
  EXPECT_EQ(CountTypes(m).at(JointType::kFixed), 5);
  EXPECT_EQ(m.num_positions(), 7);
  EXPECT_EQ(DistinctMeshes(m).size(), 10u);
  EXPECT_EQ(m.srdf().disabled_collisions.size(), 34u);
}

TEST(UrdfTest, LoadsDartRobots) {
  const std::string dart = DartUrdfDir();
  PROX_REQUIRE_DIR(dart, "dart-doc's URDF folder");
  // KR5 names its meshes relative to the URDF ("meshes/base_link.STL"); the file name has spaces.
  auto kr5 = RobotModel::FromUrdfFile(dart + "/KR5/KR5 sixx R650.urdf");
  ASSERT_TRUE(kr5.ok()) << kr5.error().message;
  EXPECT_EQ(kr5.value()->num_links(), 8);
  EXPECT_EQ(kr5.value()->num_joints(), 7);
  EXPECT_EQ(kr5.value()->num_positions(), 6);
  EXPECT_EQ(kr5.value()->link(0).name, "world");
  EXPECT_EQ(DistinctMeshes(*kr5.value()).size(), 7u);
  // WAM names package://herb_description/meshes/wam/...; the package's files live in the wam folder.
  RobotLoadOptions options;
  options.package_dirs["herb_description"] = dart + "/wam";
  auto wam = RobotModel::FromUrdfFile(dart + "/wam/wam.urdf", "", options);
  ASSERT_TRUE(wam.ok()) << wam.error().message;
  EXPECT_EQ(wam.value()->num_links(), 9);
  EXPECT_EQ(wam.value()->num_joints(), 8);
  EXPECT_EQ(wam.value()->num_positions(), 7);
  EXPECT_EQ(CountGeometries(*wam.value(), ShapeType::kMesh), 8);
  // Without the map the error names the URI and the package.
  RobotLoadOptions none;
  none.ros_package_path = "";
  auto missing = RobotModel::FromUrdfFile(dart + "/wam/wam.urdf", "", none);
  EXPECT_TRUE(FailsNaming(missing, {"package://herb_description/meshes/wam/", "herb_description", "wam.urdf"}));
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST(UrdfTest, ResolvesPackagesThroughRosPackagePath) {
  TempDir tmp;
  // The folder is "some_folder", the package inside is "fancy_pkg"; a nested package is found too.
  WriteFile(tmp.path / "ws/src/some_folder/package.xml", "<package format=\"2\">\n  <name> fancy_pkg </name>\n</package>");
  fs::create_directories(tmp.path / "ws/src/some_folder/meshes");
  fs::copy_file(TestDataDir() + "/tetrahedron.stl", tmp.path / "ws/src/some_folder/meshes/t.stl");
  WriteFile(tmp.path / "ws/src/deep/er/other/package.xml", "<package><name>other_pkg</name></package>");
  fs::create_directories(tmp.path / "ws/src/deep/er/other/m");
  fs::copy_file(TestDataDir() + "/tetrahedron.stl", tmp.path / "ws/src/deep/er/other/m/t.stl");
  // A package inside a package is not crawled (rospkg does the same), and CATKIN_IGNORE hides folders.
  WriteFile(tmp.path / "ws/src/ignored/CATKIN_IGNORE", "");
  WriteFile(tmp.path / "ws/src/ignored/hidden/package.xml", "<package><name>hidden_pkg</name></package>");
  fs::create_directories(tmp.path / "ws/src/ignored/hidden/m");
  fs::copy_file(TestDataDir() + "/tetrahedron.stl", tmp.path / "ws/src/ignored/hidden/m/t.stl");

  RobotLoadOptions options;
  options.ros_package_path = "/nonexistent_root:" + (tmp.path / "ws").string();
  auto r = ResolveMeshUri("package://fancy_pkg/meshes/t.stl", options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value(), fs::weakly_canonical(tmp.path / "ws/src/some_folder/meshes/t.stl").string());
  r = ResolveMeshUri("package://other_pkg/m/t.stl", options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(ResolveMeshUri("package://hidden_pkg/m/t.stl", options).ok());
  // The folder name is not a package name.
  r = ResolveMeshUri("package://some_folder/meshes/t.stl", options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("package://some_folder/meshes/t.stl"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("ROS_PACKAGE_PATH"), std::string::npos) << r.error().message;
  // The server's folders are not told to whoever sent the URDF: neither the crawled roots nor a crawled
  // package's folder (only what the caller gave, as the package map below, is named).
  EXPECT_EQ(r.error().message.find(tmp.path.string()), std::string::npos) << r.error().message;
  r = ResolveMeshUri("package://fancy_pkg/meshes/missing.stl", options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.find(tmp.path.string()), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("(package 'fancy_pkg' under ROS_PACKAGE_PATH)/meshes/missing.stl"),
            std::string::npos)
      << r.error().message;

  // The explicit map wins over the crawl.
  WriteFile(tmp.path / "override/meshes/t.stl", "solid x\nendsolid x\n");
  options.package_dirs["fancy_pkg"] = (tmp.path / "override").string();
  r = ResolveMeshUri("package://fancy_pkg/meshes/t.stl", options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), fs::weakly_canonical(tmp.path / "override/meshes/t.stl").string());
  // A map entry without the file falls back to the crawl.
  r = ResolveMeshUri("package://fancy_pkg/m2.stl", options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find((tmp.path / "override/m2.stl").string()), std::string::npos) << r.error().message;

  // Unset ros_package_path reads the environment variable.
  RobotLoadOptions from_env;
  ::setenv("ROS_PACKAGE_PATH", (tmp.path / "ws").string().c_str(), 1);
  EXPECT_TRUE(ResolveMeshUri("package://fancy_pkg/meshes/t.stl", from_env).ok());
  ::unsetenv("ROS_PACKAGE_PATH");
  EXPECT_FALSE(ResolveMeshUri("package://fancy_pkg/meshes/t.stl", from_env).ok());

  // A whole robot loads through the crawl.
  const std::string urdf = R"(<robot name="r"><link name="a"><collision><geometry>
      <mesh filename="package://fancy_pkg/meshes/t.stl"/></geometry></collision></link></robot>)";
  RobotLoadOptions crawl;
  crawl.ros_package_path = (tmp.path / "ws").string();
  auto m = RobotModel::FromUrdfString(urdf, "", crawl);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m.value()->link(0).geometries[0].mesh->num_triangles(), 4);
}

TEST(UrdfTest, ResolvesFileAbsoluteAndRelativePaths) {
  const std::string tet = fs::weakly_canonical(TestDataDir() + "/tetrahedron.stl").string();
  RobotLoadOptions options;
  options.ros_package_path = "";
  EXPECT_EQ(ResolveMeshUri("file://" + tet, options).value(), tet);
  EXPECT_EQ(ResolveMeshUri(tet, options).value(), tet);
  options.urdf_dir = TestDataDir() + "/robots";
  EXPECT_EQ(ResolveMeshUri("../tetrahedron.stl", options).value(), tet);
  auto r = ResolveMeshUri("meshes/nope.stl", options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'meshes/nope.stl'"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("robots/meshes/nope.stl"), std::string::npos) << r.error().message;
  EXPECT_FALSE(ResolveMeshUri("file:///no/such/file.stl", options).ok());
  EXPECT_FALSE(ResolveMeshUri("package://", options).ok());
  EXPECT_FALSE(ResolveMeshUri("", options).ok());
}

TEST(UrdfTest, BrokenFixturesNameTheElement) {
  EXPECT_TRUE(FailsNaming(RobotModel::FromUrdfFile(Fixture("cyclic.urdf")), {"'b'", "'c'", "cycle", "cyclic.urdf"}));
  EXPECT_TRUE(FailsNaming(RobotModel::FromUrdfFile(Fixture("missing_parent.urdf")), {"arm_joint", "ghost_link"}));
  auto malformed = RobotModel::FromUrdfFile(Fixture("malformed.urdf"));
  EXPECT_TRUE(FailsNaming(malformed, {"malformed.urdf", "line"}));
  EXPECT_EQ(malformed.error().code, ErrorCode::kParseError);
  auto missing = RobotModel::FromUrdfFile(Fixture("no_such_robot.urdf"));
  EXPECT_TRUE(FailsNaming(missing, {"no_such_robot.urdf"}));
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

// Found by urdf_fuzz: names that tinyxml2 (the outline) and urdfdom's TinyXML read differently, here
// a bare '&'. A link named so made the load throw std::out_of_range (through every caller, up to the
// server's CreateScene); a joint named so was reported as an internal error.
TEST(UrdfTest, NamesTheXmlReadersDisagreeOnAreRefused) {
  RobotLoadOptions options;
  options.ros_package_path = "";
  const std::string link = R"(<robot name="r"><link name="a&b"/><link name="c"/>
      <joint name="j" type="fixed"><parent link="a&b"/><child link="c"/></joint></robot>)";
  const std::string joint = R"(<robot name="r"><link name="a"/><link name="c"/>
      <joint name="j&k" type="fixed"><parent link="a"/><child link="c"/></joint></robot>)";
  for (const std::string& urdf : {link, joint}) {
    Result<std::shared_ptr<const RobotModel>> r = RobotModel::FromUrdfString(urdf, "", options);
    ASSERT_FALSE(r.ok()) << urdf;
    EXPECT_EQ(r.error().code, ErrorCode::kParseError) << r.error().message;
    EXPECT_NE(r.error().message.find("reads"), std::string::npos) << r.error().message;
  }
  // Character references both readers decode alike still load.
  auto decoded = RobotModel::FromUrdfString(R"(<robot name="r"><link name="a&#65;"/><link name="c"/>
      <joint name="j&amp;k" type="continuous"><parent link="a&#65;"/><child link="c"/></joint></robot>)", "", options);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_TRUE(decoded.value()->FindLink("aA").ok());
  EXPECT_TRUE(decoded.value()->FindJoint("j&k").ok());
}

TEST(UrdfTest, BadInlineUrdfsNameTheElement) {
  const auto load = [](const std::string& body) {
    RobotLoadOptions options;
    options.ros_package_path = "";
    options.urdf_dir = TestDataDir();
    return RobotModel::FromUrdfString("<robot name=\"bad\">" + body + "</robot>", "", options);
  };
  const std::string two_links = R"(<link name="a"/><link name="b"/>)";
  EXPECT_TRUE(FailsNaming(load(R"(<link name="a"/><link name="a"/>)"), {"duplicate link", "'a'"}));
  EXPECT_TRUE(FailsNaming(load(two_links + R"(<link name="c"/>
      <joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint>
      <joint name="j" type="fixed"><parent link="a"/><child link="c"/></joint>)"), {"duplicate joint", "'j'"}));
  EXPECT_TRUE(FailsNaming(load(two_links + R"(<joint name="j" type="revolute"><parent link="a"/><child link="b"/>
      <axis xyz="0 0 1"/></joint>)"), {"'j'", "limit"}));
  EXPECT_TRUE(FailsNaming(load(two_links + R"(<joint name="p" type="prismatic"><parent link="a"/><child link="b"/>
      <limit effort="1" velocity="1"/></joint>)"), {"'p'", "limit"}));
  EXPECT_TRUE(FailsNaming(load(two_links + R"(<joint name="j" type="fixed"><parent link="a"/><child link="b"/>
      <origin xyz="0 nan 0"/></joint>)"), {"joint 'j'", "xyz", "not finite"}));
  EXPECT_TRUE(FailsNaming(load(two_links + R"(<joint name="j" type="revolute"><parent link="a"/><child link="b"/>
      <limit lower="-inf" upper="1" effort="1" velocity="1"/></joint>)"), {"joint 'j'", "lower"}));
  EXPECT_TRUE(FailsNaming(load(R"(<link name="a"><collision><geometry><box size="1 NaN 1"/></geometry></collision></link>)"),
                          {"link 'a'", "size"}));
  EXPECT_TRUE(FailsNaming(load(R"(<link name="a"><collision><geometry><sphere radius="x"/></geometry></collision></link>)"),
                          {"link 'a'", "radius"}));
  EXPECT_TRUE(FailsNaming(load(two_links + R"(<joint name="f" type="floating"><parent link="a"/><child link="b"/></joint>)"),
                          {"'f'", "floating"}));
  EXPECT_TRUE(FailsNaming(load(two_links + R"(<joint name="j" type="revolute"><parent link="a"/><child link="b"/>
      <limit lower="1" upper="-1" effort="1" velocity="1"/></joint>)"), {"'j'", "lower limit"}));
  EXPECT_TRUE(FailsNaming(load(two_links + R"(<joint name="j" type="revolute"><parent link="a"/><child link="b"/>
      <axis xyz="0 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>)"), {"'j'", "axis"}));
  EXPECT_TRUE(FailsNaming(load(two_links + R"(<joint name="j" type="revolute"><parent link="a"/><child link="b"/>
      <limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="ghost"/></joint>)"), {"'j'", "'ghost'"}));
  EXPECT_TRUE(FailsNaming(load(two_links + R"(<joint name="j" type="fixed"><parent link="a"/><child link="zz"/></joint>)"),
                          {"'j'", "'zz'"}));
  EXPECT_TRUE(FailsNaming(load(two_links), {"root links", "'a'", "'b'"}));
  EXPECT_TRUE(FailsNaming(load(two_links + R"(<link name="c"/>
      <joint name="j1" type="fixed"><parent link="a"/><child link="c"/></joint>
      <joint name="j2" type="fixed"><parent link="b"/><child link="c"/></joint>)"), {"'c'", "j1", "j2"}));
  EXPECT_TRUE(FailsNaming(load(two_links + R"(<joint name="j" type="fixed"><parent link="a"/><child link="a"/></joint>)"),
                          {"'j'", "itself"}));
  EXPECT_TRUE(FailsNaming(load(R"(<link name="a"><collision><geometry>
      <mesh filename="package://ghost_pkg/m.stl"/></geometry></collision></link>)"), {"link 'a'", "package://ghost_pkg/m.stl"}));
  EXPECT_TRUE(FailsNaming(load(R"(<link name="a"><collision><geometry>
      <mesh filename="malformed.stl"/></geometry></collision></link>)"), {"link 'a'", "malformed.stl"}));
  EXPECT_TRUE(FailsNaming(load(R"(<link name="a"><collision><geometry>
      <mesh filename="tetrahedron.stl" scale="1 0 1"/></geometry></collision></link>)"), {"link 'a'", "scale"}));
  EXPECT_TRUE(FailsNaming(RobotModel::FromUrdfString(""), {"URDF"}));
  EXPECT_TRUE(FailsNaming(RobotModel::FromUrdfString("<robt/>"), {"<robot>"}));
  EXPECT_TRUE(FailsNaming(load(""), {"no links"}));
  // Mimic chains resolve to the active joint at their end; a mimic of a fixed joint is an error.
  auto chain = load(R"(<link name="a"/><link name="b"/><link name="c"/><link name="d"/>
      <joint name="j1" type="revolute"><parent link="a"/><child link="b"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="j2" type="revolute"><parent link="b"/><child link="c"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
        <mimic joint="j1" multiplier="2" offset="0.5"/></joint>
      <joint name="j3" type="continuous"><parent link="c"/><child link="d"/><mimic joint="j2" multiplier="3" offset="1"/></joint>)");
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  const Joint& j3 = chain.value()->joint(chain.value()->FindJoint("j3").value());
  EXPECT_EQ(j3.mimic_active_index, 0);
  EXPECT_DOUBLE_EQ(j3.mimic_multiplier, 6.0);
  EXPECT_DOUBLE_EQ(j3.mimic_offset, 2.5);
  EXPECT_TRUE(FailsNaming(load(two_links + R"(<link name="c"/>
      <joint name="j1" type="fixed"><parent link="a"/><child link="b"/></joint>
      <joint name="j2" type="continuous"><parent link="b"/><child link="c"/><mimic joint="j1"/></joint>)"), {"'j2'", "'j1'"}));
}

TEST(UrdfTest, CollisionFromVisualUsesVisualGeometryWhereALinkHasSome) {
  constexpr const char* kUrdf = R"(<robot name="two_kinds">
    <link name="a">
      <visual><origin xyz="0 0 0.1"/><geometry><box size="0.1 0.2 0.3"/></geometry></visual>
      <visual><geometry><cylinder radius="0.05" length="0.4"/></geometry></visual>
      <collision><geometry><sphere radius="0.2"/></geometry></collision>
    </link>
    <joint name="j" type="revolute"><parent link="a"/><child link="b"/>
      <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
    <link name="b"><collision><geometry><sphere radius="0.1"/></geometry></collision></link>
  </robot>)";
  auto plain = RobotModel::FromUrdfString(kUrdf);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  ASSERT_EQ(plain.value()->link(0).geometries.size(), 1u);
  EXPECT_EQ(plain.value()->link(0).geometries[0].type, ShapeType::kSphere);
  RobotLoadOptions options;
  options.collision_from_visual = true;
  auto visual = RobotModel::FromUrdfString(kUrdf, "", options);
  ASSERT_TRUE(visual.ok()) << visual.error().message;
  const Link& a = visual.value()->link(visual.value()->FindLink("a").value());
  ASSERT_EQ(a.geometries.size(), 2u);
  EXPECT_EQ(a.geometries[0].type, ShapeType::kBox);
  EXPECT_EQ(a.geometries[0].box_size, Vec3(0.1, 0.2, 0.3));
  EXPECT_EQ(a.geometries[0].X_LG.p, Vec3(0, 0, 0.1));
  EXPECT_EQ(a.geometries[1].type, ShapeType::kCylinder);
  // A link without a visual keeps its collision geometry.
  const Link& b = visual.value()->link(visual.value()->FindLink("b").value());
  ASSERT_EQ(b.geometries.size(), 1u);
  EXPECT_EQ(b.geometries[0].type, ShapeType::kSphere);
  // A visual mesh that cannot be found (as ROS tools tolerate for visuals): the link keeps its collision
  // geometry, never left bare, and one warning names the link and the URI.
  RobotLoadOptions planar;
  planar.ros_package_path = "";
  planar.collision_from_visual = false;
  auto collision = RobotModel::FromUrdfFile(Fixture("planar_2link.urdf"), "", planar);
  ASSERT_TRUE(collision.ok()) << collision.error().message;
  EXPECT_TRUE(collision.value()->warnings().empty());  // visuals are not read at all
  planar.collision_from_visual = true;
  auto fallback = RobotModel::FromUrdfFile(Fixture("planar_2link.urdf"), "", planar);
  ASSERT_TRUE(fallback.ok()) << fallback.error().message;
  ASSERT_EQ(fallback.value()->warnings().size(), 1u);
  const std::string& warning = fallback.value()->warnings()[0];
  EXPECT_NE(warning.find("'upper'"), std::string::npos) << warning;
  EXPECT_NE(warning.find("no_such_package"), std::string::npos) << warning;
  EXPECT_NE(warning.find("<collision> geometry instead"), std::string::npos) << warning;
  const LinkIndex upper = fallback.value()->FindLink("upper").value();
  ASSERT_EQ(fallback.value()->link(upper).geometries.size(), collision.value()->link(upper).geometries.size());
  EXPECT_EQ(fallback.value()->link(upper).geometries[0].type, collision.value()->link(upper).geometries[0].type);
  // The content id's file list follows the same rule (no missing file listed).
  auto files = RobotModel::CollisionMeshFiles(proximity::testing::ReadFile(Fixture("planar_2link.urdf")), planar);
  ASSERT_TRUE(files.ok()) << files.error().message;
  for (const std::string& f : files.value()) EXPECT_EQ(f.find("no_such_package"), std::string::npos) << f;
}

TEST(UrdfTest, Ur5VisualMeshesAsCollisionGeometryMatchTheCollisionMeshesInPlace) {
  const std::string shared = SharedDataDir();
  PROX_REQUIRE_DIR(shared, "../shared/data");
  RobotLoadOptions options;
  options.package_dirs["ur_description"] = shared + "/robots/ur5/ur_description";
  const std::string urdf = shared + "/robots/ur5/ur_description/urdf/ur5_robot.urdf";
  auto collision = RobotModel::FromUrdfFile(urdf, "", options);
  options.collision_from_visual = true;
  auto visual = RobotModel::FromUrdfFile(urdf, "", options);
  ASSERT_TRUE(collision.ok()) << collision.error().message;
  ASSERT_TRUE(visual.ok()) << visual.error().message;
  int triangles = 0;
  for (const MeshModel* mesh : DistinctMeshes(*visual.value())) triangles += mesh->num_triangles();
  // The data README's count of the seven COLLADA files (zero-area triangles included).
  EXPECT_NEAR(triangles, 95694, 95694 * 0.001);
  // Each visual mesh sits where its collision mesh sits (COLLADA's Z_UP is not turned into Y_UP): the
  // link-frame boxes agree within a few millimetres.
  int compared = 0;
  for (const Link& l : collision.value()->links()) {
    const Link& v = visual.value()->link(visual.value()->FindLink(l.name).value());
    if (l.geometries.size() != 1 || v.geometries.size() != 1 || l.geometries[0].type != ShapeType::kMesh ||
        v.geometries[0].type != ShapeType::kMesh) {
      continue;
    }
    auto box = [](const LinkGeometry& g) {
      Vec3 lo = Vec3::Constant(1e9), hi = Vec3::Constant(-1e9);
      for (const Vec3& p : g.mesh->mesh().vertices) {
        const Vec3 q = g.X_LG * p;
        lo = lo.cwiseMin(q);
        hi = hi.cwiseMax(q);
      }
      return std::array<Vec3, 2>{lo, hi};
    };
    const auto c = box(l.geometries[0]);
    const auto w = box(v.geometries[0]);
    EXPECT_LT((c[0] - w[0]).cwiseAbs().maxCoeff(), 0.005) << l.name;
    EXPECT_LT((c[1] - w[1]).cwiseAbs().maxCoeff(), 0.005) << l.name;
    ++compared;
  }
  EXPECT_EQ(compared, 7);
}

}  // namespace
}  // namespace proximity::core
