// The problem generator and the robot flags: generated problems read back through the MotionBenchMaker
// reader, their starts and goals are free (by our CLEAR and by the independent FCL checker), at least
// half have a straight line that collides (found by a dense FCL walk), every obstacle lies within the
// measured reach and clear of the base, the same seed gives the same bytes; joints frozen outside a
// group keep the full model's kinematics; bad input gives errors that name it. Robots: Debian
// dart-doc's (always installed) and the ../shared/data ones (skipped when absent).

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/test_util.h"
#include "mbm_data.h"
#include "peers/fcl_robot.h"
#include "problem_gen.h"
#include "proximity/core/scene/scene.h"
#include "proximity/mbm/mbm.h"
#include "robot_input.h"

namespace proximity::bench {
namespace {

namespace fs = std::filesystem;

// A robot to test on, as the command line would name it; `dir` empty when its data is absent.
struct TestRobot {
  std::string label;
  std::string dir;
  RobotSpec spec;
};

void PrintTo(const TestRobot& robot, std::ostream* os) { *os << robot.label; }

std::vector<TestRobot> Robots() {
  std::vector<TestRobot> robots;
  const std::string dart = testing::DartUrdfDir();
  robots.push_back({"kr5", dart, {dart + "/KR5/KR5 sixx R650.urdf", "", {}, ""}});
  // The WAM's collision meshes overlap at two joints in every configuration; its SRDF allows those pairs.
  robots.push_back({"wam", dart,
                    {dart + "/wam/wam.urdf", testing::TestDataDir() + "/robots/wam.srdf",
                     {"herb_description=" + dart + "/wam"}, ""}});
  const std::string shared = testing::SharedDataDir();
  const std::string panda = shared + "/robots/panda";
  robots.push_back({"panda_arm", shared,
                    {panda + "/moveit_resources_panda_description/urdf/panda.urdf",
                     panda + "/moveit_resources_panda_moveit_config/config/panda.srdf",
                     {"moveit_resources_panda_description=" + panda + "/moveit_resources_panda_description"},
                     "panda_arm"}});
  const std::string ur5 = shared + "/robots/ur5";
  robots.push_back({"ur5", shared,
                    {ur5 + "/ur_description/urdf/ur5_robot.urdf", ur5 + "/ur5_moveit_config/config/ur5.srdf",
                     {"ur_description=" + ur5 + "/ur_description"}, ""}});
  return robots;
}

// A fresh folder, removed with everything in it on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "prox_generate_test_XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Every file under `root` by relative path, with its bytes.
std::map<std::string, std::string> Files(const std::string& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) {
      files[fs::relative(entry.path(), root).generic_string()] = testing::ReadFile(entry.path().string());
    }
  }
  return files;
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class GenerateTest : public ::testing::TestWithParam<TestRobot> {
 protected:
  void SetUp() override {
    if (GetParam().dir.empty()) GTEST_SKIP() << "the data of robot " << GetParam().label << " is not present";
    auto robot = LoadRobot(GetParam().spec, {}, nullptr);
    ASSERT_TRUE(robot.ok()) << robot.error().message;
    robot_ = robot.value();
  }
  LoadedRobot robot_;
};

constexpr int kCount = 6;
constexpr uint64_t kSeed = 7;

TEST_P(GenerateTest, ProblemsAreFreeSolvableReadBackAndHalfCollideOnTheStraightLine) {
  GeneratorReport report;
  auto problems = GenerateProblems(robot_, kCount, kSeed, &report);
  ASSERT_TRUE(problems.ok()) << problems.error().message;
  ASSERT_EQ(problems.value().size(), static_cast<size_t>(kCount));
  ScratchDir dir;
  const std::string out = dir.path() + "/problems";
  ASSERT_TRUE(WriteProblems(problems.value(), GeneratorSummary(robot_, GetParam().spec, kCount, kSeed, report,
                                                               problems.value()),
                            out)
                  .ok());
  // The files are the generated text, byte for byte, and read back through the reader.
  auto read = mbm::LoadMbmProblems(out);
  ASSERT_TRUE(read.ok()) << read.error().message;
  ASSERT_EQ(read.value().size(), static_cast<size_t>(kCount));
  auto tree = LoadProblemTree(out);
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  ASSERT_EQ(tree.value().size(), static_cast<size_t>(kCount));
  std::map<std::string, const GeneratedProblem*> by_name;
  for (const GeneratedProblem& g : problems.value()) {
    char digits[16];
    std::snprintf(digits, sizeof(digits), "%04d", g.number);
    by_name[g.family + "/" + digits] = &g;
    EXPECT_EQ(testing::ReadFile(out + "/" + g.folder + "/scene" + digits + ".yaml"), g.scene_yaml);
    EXPECT_EQ(testing::ReadFile(out + "/" + g.folder + "/request" + digits + ".yaml"), g.request_yaml);
  }

  const core::RobotModel& model = *robot_.model;
  const Workspace& ws = report.workspace;
  peers::FclRobot fcl_robot(model);
  const auto maps = core::SelfClearanceMaps::For(robot_.model);
  core::SceneCache cache;
  std::vector<core::RigidTransform> X_WL;
  int colliding_lines = 0;
  for (const mbm::MbmProblem& p : read.value()) {
    SCOPED_TRACE(p.name);
    ASSERT_TRUE(by_name.contains(p.name));
    const GeneratedProblem& g = *by_name[p.name];
    EXPECT_EQ(p.scene.robot_model_name, model.name());
    EXPECT_EQ(static_cast<int>(p.scene.objects.size()), g.objects);
    EXPECT_EQ(p.request.group_name, robot_.group.empty() ? std::string(kAllJointsGroup) : robot_.group);
    ASSERT_EQ(p.request.goals.size(), 1u);
    ASSERT_EQ(p.request.goals[0].joint_constraints.size(), static_cast<size_t>(model.num_positions()));
    for (int32_t i = 0; i < model.num_positions(); ++i) {
      EXPECT_EQ(p.request.goals[0].joint_constraints[static_cast<size_t>(i)].joint_name, model.active_joint_names()[i]);
    }
    auto scene = BuildProblemScene(p, maps);
    ASSERT_TRUE(scene.ok()) << scene.error().message;
    peers::FclWorld world(*scene.value());
    const auto start = mbm::MbmStartConfiguration(p.request, model);
    const auto goal = mbm::MbmGoalConfiguration(p.request, model);
    ASSERT_TRUE(start.ok() && goal.ok());
    for (const auto* q : {&start.value(), &goal.value()}) {
      EXPECT_TRUE(model.WithinLimits(*q));
      auto r = scene.value()->CheckState(*q, &cache);
      ASSERT_TRUE(r.ok());
      EXPECT_TRUE(r.value().free) << r.value().contact.Describe(*scene.value());
      auto poses = model.ForwardKinematics(*q);
      ASSERT_TRUE(poses.ok());
      X_WL = std::move(poses).value();
      fcl_robot.Pose(X_WL);
      EXPECT_TRUE(fcl_robot.Free(*scene.value(), *world.manager)) << "the FCL checker finds a contact";
    }
    // The straight line, walked densely with the FCL checker.
    const peers::DensePathResult dense = peers::DensePathCheck(fcl_robot, world, *scene.value(),
                                                               {start.value(), goal.value()}, 1e-3, false);
    ASSERT_TRUE(dense.error.empty()) << dense.error;
    const bool collides = dense.segment >= 0;
    colliding_lines += collides;
    if (g.line_collides) {
      EXPECT_TRUE(collides) << "the generator found a collision the dense walk misses";
    }
    // The problem has a solution: the generator's witness path joins the start to the goal, and the
    // FCL checker finds it free when walked densely.
    ASSERT_GE(g.witness.size(), 2u);
    EXPECT_EQ(g.witness.front(), start.value());
    EXPECT_EQ(g.witness.back(), goal.value());
    for (const auto& q : g.witness) EXPECT_TRUE(model.WithinLimits(q));
    const peers::DensePathResult witness =
        peers::DensePathCheck(fcl_robot, world, *scene.value(), g.witness, 1e-3, false);
    ASSERT_TRUE(witness.error.empty()) << witness.error;
    EXPECT_EQ(witness.segment, -1) << "the FCL checker finds a contact on segment " << witness.segment
                                   << " of the witness path (" << g.witness.size() << " states)";
  }
  EXPECT_GE(2 * colliding_lines, kCount);
  EXPECT_EQ(report.line_collides, colliding_lines);
  EXPECT_GT(ws.reach, ws.base_radius);
  EXPECT_NEAR(ws.up.norm(), 1.0, 1e-12);
}

TEST_P(GenerateTest, ObstaclesLieWithinReachAndClearOfTheBase) {
  GeneratorReport report;
  auto problems = GenerateProblems(robot_, 3, kSeed + 1, &report);
  ASSERT_TRUE(problems.ok()) << problems.error().message;
  const Workspace& ws = report.workspace;
  for (const GeneratedProblem& g : problems.value()) {
    auto scene = mbm::LoadMbmSceneFromString(g.scene_yaml, g.family);
    ASSERT_TRUE(scene.ok()) << scene.error().message;
    for (const mbm::MbmCollisionObject& o : scene.value().objects) {
      for (const mbm::MbmPrimitive& prim : o.primitives) {
        // The distance from the workspace origin to the solid primitive.
        const core::Vec3 local = prim.X_RP.R.transpose() * (ws.origin - prim.X_RP.p);
        double nearest = 0.0;
        if (prim.type == mbm::MbmShapeType::kBox) {
          const core::Vec3 half(0.5 * prim.dimensions[0], 0.5 * prim.dimensions[1], 0.5 * prim.dimensions[2]);
          nearest = (local.cwiseAbs() - half).cwiseMax(0.0).norm();
        } else if (prim.type == mbm::MbmShapeType::kCylinder) {
          nearest = std::hypot(std::max(0.0, std::hypot(local.x(), local.y()) - prim.dimensions[1]),
                               std::max(0.0, std::abs(local.z()) - 0.5 * prim.dimensions[0]));
        } else {
          nearest = std::max(0.0, local.norm() - prim.dimensions[0]);
        }
        EXPECT_LE(nearest, ws.reach) << g.family << " " << o.id;
        EXPECT_GE(nearest, ws.base_radius - 1e-3) << g.family << " " << o.id;
      }
    }
  }
}

TEST_P(GenerateTest, SameSeedSameBytes) {
  ScratchDir dir;
  std::vector<std::map<std::string, std::string>> runs;
  for (uint64_t seed : {kSeed, kSeed, kSeed + 100}) {
    GeneratorReport report;
    auto problems = GenerateProblems(robot_, 3, seed, &report);
    ASSERT_TRUE(problems.ok()) << problems.error().message;
    const std::string out = dir.path() + "/run" + std::to_string(runs.size());
    ASSERT_TRUE(
        WriteProblems(problems.value(), GeneratorSummary(robot_, GetParam().spec, 3, seed, report, problems.value()), out)
            .ok());
    runs.push_back(Files(out));
  }
  EXPECT_EQ(runs[0].size(), 7u);  // 3 problems (scene + request) and generator.yaml.
  EXPECT_EQ(runs[0], runs[1]);
  ASSERT_EQ(runs[0].size(), runs[2].size());
  EXPECT_NE(runs[0], runs[2]);
  // Only the new folders are left: no temporary folder beside them.
  EXPECT_EQ(Entries(dir.path()), (std::vector<std::string>{"run0", "run1", "run2"}));
}

std::string RobotName(const ::testing::TestParamInfo<TestRobot>& info) { return info.param.label; }

INSTANTIATE_TEST_SUITE_P(Robots, GenerateTest, ::testing::ValuesIn(Robots()), RobotName);

// A joint frozen by FreezeJoints moves the links below it exactly as the full model at that value does.
TEST(FreezeJointsTest, FrozenModelMatchesTheFullModel) {
  const std::string dart = testing::DartUrdfDir();
  PROX_REQUIRE_DIR(dart, "Debian dart-doc's URDF folder");
  const std::string urdf = testing::ReadFile(dart + "/wam/wam.urdf");
  core::RobotLoadOptions options;
  options.package_dirs["herb_description"] = dart + "/wam";
  auto full = core::RobotModel::FromUrdfString(urdf, "", options);
  ASSERT_TRUE(full.ok()) << full.error().message;
  const core::RobotModel& model = *full.value();
  ASSERT_GE(model.num_positions(), 3);
  // Freeze the second and the last movable joints.
  const std::vector<int32_t> frozen_index = {1, model.num_positions() - 1};
  const std::vector<std::pair<std::string, double>> values = {{model.active_joint_names()[1], 0.7},
                                                              {model.active_joint_names().back(), -1.3}};
  auto text = FreezeJoints(urdf, model, values);
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto reduced = core::RobotModel::FromUrdfString(text.value(), "", options);
  ASSERT_TRUE(reduced.ok()) << reduced.error().message;
  ASSERT_EQ(reduced.value()->num_positions(), model.num_positions() - 2);
  ASSERT_EQ(reduced.value()->num_links(), model.num_links());
  std::mt19937_64 rng(3);
  std::vector<core::RigidTransform> X_full, X_reduced;
  for (int s = 0; s < 20; ++s) {
    std::vector<double> q_full(static_cast<size_t>(model.num_positions())), q_reduced;
    for (int32_t i = 0; i < model.num_positions(); ++i) {
      q_full[static_cast<size_t>(i)] =
          std::uniform_real_distribution<double>(model.lower_limits()[i], model.upper_limits()[i])(rng);
    }
    q_full[1] = 0.7;
    q_full.back() = -1.3;
    for (int32_t i = 0; i < model.num_positions(); ++i) {
      if (i != frozen_index[0] && i != frozen_index[1]) q_reduced.push_back(q_full[static_cast<size_t>(i)]);
    }
    auto full_poses = model.ForwardKinematics(q_full);
    auto reduced_poses = reduced.value()->ForwardKinematics(q_reduced);
    ASSERT_TRUE(full_poses.ok() && reduced_poses.ok());
    X_full = std::move(full_poses).value();
    X_reduced = std::move(reduced_poses).value();
    for (core::LinkIndex k = 0; k < model.num_links(); ++k) {
      auto k_reduced = reduced.value()->FindLink(model.link(k).name);
      ASSERT_TRUE(k_reduced.ok());
      const core::RigidTransform& a = X_full[static_cast<size_t>(k)];
      const core::RigidTransform& b = X_reduced[static_cast<size_t>(k_reduced.value())];
      EXPECT_LT((a.p - b.p).norm(), 1e-12) << model.link(k).name;
      EXPECT_LT((a.R - b.R).norm(), 1e-12) << model.link(k).name;
    }
  }
}

// The panda of ../shared/data with --group panda_arm: the fingers are held fixed, the arm's seven joints
// remain, and the finger values come from the given start state.
TEST(LoadRobotTest, GroupFreezesTheOtherJoints) {
  const std::string shared = testing::SharedDataDir();
  PROX_REQUIRE_DIR(shared, "../shared/data");
  const TestRobot panda = Robots()[2];
  std::map<std::string, double> start;
  auto full = LoadRobot({panda.spec.urdf, panda.spec.srdf, panda.spec.packages, ""}, {}, nullptr);
  ASSERT_TRUE(full.ok()) << full.error().message;
  for (const std::string& name : full.value().model->active_joint_names()) start[name] = 0.02;
  auto robot = LoadRobot(panda.spec, start, nullptr);
  ASSERT_TRUE(robot.ok()) << robot.error().message;
  // The arm's seven joints move; the active finger joint and the one mimicking it are frozen.
  EXPECT_EQ(robot.value().model->num_positions(), 7);
  ASSERT_EQ(robot.value().frozen.size(), 2u);
  for (const auto& [name, value] : robot.value().frozen) EXPECT_EQ(value, 0.02) << name;
}

// Bad input: each error names what is wrong.
TEST(LoadRobotTest, ErrorsNameTheBadInput) {
  const std::string dart = testing::DartUrdfDir();
  PROX_REQUIRE_DIR(dart, "Debian dart-doc's URDF folder");
  const auto message = [](const RobotSpec& spec) {
    auto r = LoadRobot(spec, {}, nullptr);
    return r.ok() ? std::string("(loaded)") : r.error().message;
  };
  EXPECT_NE(message({"/nonexistent/robot.urdf", "", {}, ""}).find("/nonexistent/robot.urdf: no such file"),
            std::string::npos);
  // The WAM's meshes are package://herb_description/...: without --package the package is unknown.
  EXPECT_NE(message({dart + "/wam/wam.urdf", "", {}, ""}).find("herb_description"), std::string::npos);
  EXPECT_NE(message({dart + "/wam/wam.urdf", "", {"herb_description"}, ""}).find("expected NAME=DIR"),
            std::string::npos);
  EXPECT_NE(message({dart + "/wam/wam.urdf", "", {"herb_description=/nonexistent"}, ""}).find("is not a folder"),
            std::string::npos);
  EXPECT_NE(message({dart + "/wam/wam.urdf", "", {}, "arm"}).find("--srdf"), std::string::npos);
  EXPECT_NE(message({dart + "/wam/wam.urdf", "/nonexistent.srdf", {}, ""}).find("/nonexistent.srdf"),
            std::string::npos);
  ScratchDir dir;
  const std::string fixed_only = dir.path() + "/fixed.urdf";
  std::ofstream(fixed_only) << "<robot name=\"statue\"><link name=\"a\"><collision><geometry><box size=\"1 1 1\"/>"
                               "</geometry></collision></link><link name=\"b\"/><joint name=\"j\" type=\"fixed\">"
                               "<parent link=\"a\"/><child link=\"b\"/></joint></robot>";
  EXPECT_NE(message({fixed_only, "", {}, ""}).find("no movable joint"), std::string::npos);
  // Without its SRDF the WAM touches itself everywhere: the generator names the pair.
  auto wam = LoadRobot({dart + "/wam/wam.urdf", "", {"herb_description=" + dart + "/wam"}, ""}, {}, nullptr);
  ASSERT_TRUE(wam.ok()) << wam.error().message;
  auto none = GenerateProblems(wam.value(), 1, 1, nullptr);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("collides with itself"), std::string::npos) << none.error().message;
  EXPECT_NE(none.error().message.find("/wam"), std::string::npos) << none.error().message;
  // Unused packages are only a warning.
  std::vector<std::string> warnings;
  auto kr5 = LoadRobot({dart + "/KR5/KR5 sixx R650.urdf", "", {"unused=" + dart}, ""}, {}, &warnings);
  ASSERT_TRUE(kr5.ok()) << kr5.error().message;
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("unused"), std::string::npos);
}

TEST(GenerateErrorsTest, CountAndOutputFolder) {
  const std::string dart = testing::DartUrdfDir();
  PROX_REQUIRE_DIR(dart, "Debian dart-doc's URDF folder");
  auto robot = LoadRobot({dart + "/KR5/KR5 sixx R650.urdf", "", {}, ""}, {}, nullptr);
  ASSERT_TRUE(robot.ok()) << robot.error().message;
  auto none = GenerateProblems(robot.value(), 0, 1, nullptr);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("--count 0"), std::string::npos);
  auto problems = GenerateProblems(robot.value(), 1, 1, nullptr);
  ASSERT_TRUE(problems.ok()) << problems.error().message;
  ScratchDir dir;
  // A folder that cannot be written, one under a file, and a folder that is not empty: each an error
  // naming the folder, with nothing left behind.
  const std::string file = dir.path() + "/file";
  std::ofstream(file) << "x";
  const std::string busy = dir.path() + "/busy";
  fs::create_directories(busy + "/inside");
  for (const std::string& out : {std::string("/proc/prox_generate_test"), file + "/out", busy, file}) {
    const core::Status s = WriteProblems(problems.value(), "", out);
    ASSERT_FALSE(s.ok()) << out;
    EXPECT_NE(s.error().message.find(out), std::string::npos) << s.error().message;
  }
  EXPECT_EQ(Entries(dir.path()), (std::vector<std::string>{"busy", "file"}));
  EXPECT_EQ(Entries(busy), (std::vector<std::string>{"inside"}));
  // An empty folder may be the target.
  const std::string empty = dir.path() + "/empty";
  fs::create_directories(empty);
  EXPECT_TRUE(WriteProblems(problems.value(), "", empty).ok());
  EXPECT_EQ(Entries(dir.path()), (std::vector<std::string>{"busy", "empty", "file"}));
}

}  // namespace
}  // namespace proximity::bench
