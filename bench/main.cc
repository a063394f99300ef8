// proximity-bench SUITE [--quick] [options]: runs one benchmark suite beside its peer and prints one JSON
// object per case on stdout (machine details go to stderr). proximity-bench generate writes
// MotionBenchMaker-format problems for any robot (problem_gen.h). Bad input exits with code 2.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "bench_util.h"
#include "problem_gen.h"
#include "robot_input.h"

namespace proximity::bench {
int RunConvex(const SuiteOptions& options);
int RunEnvRob(const SuiteOptions& options);
int RunRobot(const SuiteOptions& options);
int RunTrack(const SuiteOptions& options);
#ifdef PROX_BENCH_MBM
int RunMbm(const SuiteOptions& options);
#endif
#ifdef PROX_BENCH_SERVICE
int RunService(const SuiteOptions& options);
#endif
#ifdef PROX_BENCH_IK
int RunIk(const SuiteOptions& options);
#endif
int RunPoseGoals(const SuiteOptions& options);

std::map<std::string, SuiteFn>& Suites() {
  static std::map<std::string, SuiteFn> suites = {
      {"convex", &RunConvex},
      {"envrob", &RunEnvRob},
      {"robot", &RunRobot},
      {"track", &RunTrack},
#ifdef PROX_BENCH_MBM
      {"mbm", &RunMbm},
#endif
#ifdef PROX_BENCH_SERVICE
      {"service", &RunService},
#endif
#ifdef PROX_BENCH_IK
      {"ik", &RunIk},
#endif
      {"pose", &RunPoseGoals},
  };
  return suites;
}
}  // namespace proximity::bench

namespace {

using proximity::bench::kBadInput;

// --cases: the robot suite's case groups and the service suite's.
constexpr std::array<const char*, 3> kRobotCases = {"clear", "distance", "link"};
constexpr std::array<const char*, 5> kServiceCases = {"states", "paths", "track", "latency", "plan"};

// The suites that take a robot and problems.
bool TakesRobot(const std::string& suite) {
  return suite == "robot" || suite == "mbm" || suite == "track" || suite == "generate" || suite == "ik" ||
         suite == "pose";
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}
}  // namespace

int main(int argc, char** argv) {
  using namespace proximity::bench;
  CLI::App app{"Proximity benchmarks: ours beside a peer library on the same inputs, in one run; and a "
               "generator of MotionBenchMaker-format problems for any robot"};
  std::string suite;
  SuiteOptions options;
  options.data_dir = PROX_SHARED_DATA_DIR;
  std::string names;
  for (const auto& [name, fn] : Suites()) names += (names.empty() ? "" : ", ") + name;
  app.add_option("suite", suite, "Suite to run: " + names + "; or generate, to write problems")->required();
  app.add_flag("--quick", options.quick, "A reduced run that finishes in under a minute");
  app.add_option("--data", options.data_dir, "The shared data folder (robots and scenes)");
  app.add_option("--seed", options.seed, "Seed for poses, motions and generated problems");
  app.add_option("--leaf-size", options.leaf_size, "Triangles per hierarchy leaf (1-16)");
  app.add_option("--split", options.split, "Hierarchy split rule")->check(CLI::IsMember({"median", "sah"}));
  app.add_option("--time-limit", options.time_limit_s,
                 "Planning suites: seconds per problem and planner (default: the suite's)")
      ->check(CLI::PositiveNumber);
  app.add_option("--ompl-log", options.ompl_log,
                 "Planning suites: folder to write OMPL benchmark logs to (one per problem family)");
  auto* robot = app.add_option("--robot", options.robot.urdf,
                               "robot, mbm, track, generate: the robot's URDF (required by generate; robot and mbm "
                               "need --problems with it, and without it run the MotionBenchMaker Panda of --data; "
                               "track makes its own worlds, and without it runs the KR5 of dart-doc)");
  app.add_option("--srdf", options.robot.srdf,
                 "With --robot: its SRDF (allowed pairs, groups). Without it, links joined by a joint are "
                 "allowed pairs (MoveIt's Adjacent) and every other pair is checked");
  app.add_option("--package", options.robot.packages,
                 "With --robot: NAME=DIR, the folder package://NAME/ URIs resolve to (repeat the flag for more)")
      ->allow_extra_args(false);
  app.add_option("--group", options.robot.group,
                 "With --robot and --srdf: the SRDF group whose joints move; the other joints are held fixed "
                 "(robot, mbm: at the first problem's start values; generate: at 0, or mid-range when 0 is "
                 "outside the limits). Without it every movable joint of the URDF moves, in the model's order "
                 "(depth-first from the root link), and generated requests name the group all_movable_joints");
  app.add_flag("--collision-from-visual", options.robot.collision_from_visual,
               "With --robot: each link collides with its <visual> geometry (links without one keep their "
               "<collision>), ours and the peer's alike");
  app.add_option("--problems", options.problems_dir,
                 "robot, mbm: a folder of MotionBenchMaker-format problems (sceneNNNN.yaml + requestNNNN.yaml "
                 "in family folders, any depth); --quick keeps the first 5 of each family");
  app.add_option("--cloud", options.cloud_spacing,
                 "robot, mbm: replace each problem's world by points sampled on its obstacles' surfaces this far "
                 "apart (m), one point cloud of balls of half that radius; the peer checks an FCL octree of that "
                 "resolution")
      ->check(CLI::PositiveNumber);
  std::vector<std::string> all_cases(kRobotCases.begin(), kRobotCases.end());
  all_cases.insert(all_cases.end(), kServiceCases.begin(), kServiceCases.end());
  app.add_option("--cases", options.cases,
                 "robot: run only these case groups (clear, distance, link); service: only these (states, paths, "
                 "track, latency, plan)")
      ->check(CLI::IsMember(all_cases))
      ->delimiter(',');
  app.add_option("--tip", options.tip,
                 "ik, pose: the link to solve for (default: the --group's chain tip, else the link with the most moving "
                 "joints above it)");
  app.add_option("--out", options.out_dir, "generate: the new folder to write the problems into");
  app.add_option("--count", options.count, "generate: how many problems (default 100)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kBadInput;
  }
  const auto misuse = [&](const std::string& message) {
    std::cerr << "proximity-bench " << suite << ": " << message << "\n";
    return kBadInput;
  };
  if (!TakesRobot(suite)) {
    for (const char* flag : {"--robot", "--srdf", "--package", "--group", "--problems", "--out", "--count"}) {
      if (app.count(flag) > 0) {
        return misuse(std::string(flag) + " applies to the robot, mbm, track and ik suites and generate");
      }
    }
  }
  if (suite != "robot" && suite != "mbm" && app.count("--cloud") > 0) return misuse("--cloud applies to the robot and mbm suites");
  if (suite == "track" && app.count("--problems") > 0) {
    return misuse("--problems applies to the robot and mbm suites (track makes its own worlds)");
  }
  if (!robot->count()) {
    for (const char* flag : {"--srdf", "--package", "--group"}) {
      if (app.count(flag) > 0) return misuse(std::string(flag) + " needs --robot");
    }
  }
  if (suite != "robot" && suite != "service" && app.count("--cases") > 0) {
    return misuse("--cases applies to the robot and service suites only");
  }
  for (const std::string& c : options.cases) {
    const bool service_case = std::find(kServiceCases.begin(), kServiceCases.end(), c) != kServiceCases.end();
    if (service_case != (suite == "service")) return misuse("--cases " + c + " is not a case group of " + suite);
  }
  if (suite != "ik" && suite != "pose" && app.count("--tip") > 0) return misuse("--tip applies to the ik and pose suites");
  if (suite == "ik" && app.count("--problems") > 0) return misuse("--problems applies to the robot and mbm suites");
  if (suite != "generate") {
    for (const char* flag : {"--out", "--count"}) {
      if (app.count(flag) > 0) return misuse(std::string(flag) + " applies to generate only");
    }
  }
  if (suite == "generate") return RunGenerate(options);
  auto it = Suites().find(suite);
  if (it == Suites().end()) {
    std::cerr << "unknown suite '" << suite << "'; suites: " << names << ", and generate\n";
    return kBadInput;
  }
  std::cerr << "machine: " << CpuModel() << ", " << std::thread::hardware_concurrency() << " threads; compiler "
            << __VERSION__ << "\n";
  return it->second(options);
}
