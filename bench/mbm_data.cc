#include "mbm_data.h"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace proximity::bench {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "proximity-bench-XXXXXX").string();
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

int LoadMbmData(const std::string& suite, const SuiteOptions& options, MbmData* data) {
  const std::string problems_root = options.data_dir + "/scenes/mbm/problems/panda";
  const std::string robot_dir = options.data_dir + "/robots/mbm_panda";
  if (!fs::is_directory(problems_root) || !fs::is_regular_file(robot_dir + "/panda.urdf")) {
    std::cerr << suite << " needs ../shared/data/scenes/mbm/problems/panda and ../shared/data/robots/mbm_panda\n";
    return 77;
  }
  std::string problems_dir = problems_root;
  if (!options.quick) {
    const std::string archive = problems_root + "/problems.tar.bz2";
    if (!fs::is_regular_file(archive)) {
      std::cerr << suite << " needs ../shared/data/scenes/mbm/problems/panda/problems.tar.bz2 (or run with --quick)\n";
      return 77;
    }
    if (data->tmp.path().empty()) {
      std::cerr << suite << ": cannot create a temporary folder\n";
      return 1;
    }
    const std::string command = "tar -xjf '" + archive + "' -C '" + data->tmp.path() + "'";
    if (std::system(command.c_str()) != 0) {
      std::cerr << suite << ": '" << command << "' failed\n";
      return 1;
    }
    problems_dir = data->tmp.path() + "/problems";
  }
  auto loaded = mbm::LoadMbmProblems(problems_dir);
  if (!loaded.ok()) {
    std::cerr << suite << ": " << loaded.error().message << "\n";
    return 1;
  }
  data->problems = std::move(loaded).value();
  core::RobotLoadOptions load;
  load.package_dirs["meshes"] = robot_dir + "/meshes";
  load.ros_package_path = "";
  auto robot = core::RobotModel::FromUrdfFile(robot_dir + "/panda.urdf", robot_dir + "/panda.srdf", load);
  if (!robot.ok()) {
    std::cerr << suite << ": " << robot.error().message << "\n";
    return 1;
  }
  data->robot = robot.value();
  return 0;
}

}  // namespace proximity::bench
