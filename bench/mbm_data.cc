#include "mbm_data.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <regex>
#include <set>

#include "robot_input.h"
#include "bvh/point_cloud.h"

namespace proximity::bench {

namespace fs = std::filesystem;

namespace {

// Whether folder `dir` holds a sceneNNNN.yaml or requestNNNN.yaml file.
bool HoldsProblems(const fs::path& dir) {
  static const std::regex kPattern(R"(^(scene|request)[0-9]+\.yaml$)");
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && std::regex_match(it->path().filename().string(), kPattern)) return true;
  }
  return false;
}

// The default data: the MotionBenchMaker Panda problems and the mbm_panda robot of ../shared/data.
// The robot of `data`, its label and its self-clearance maps.
void SetRobot(MbmData* data, std::shared_ptr<const core::RobotModel> robot) {
  data->robot = std::move(robot);
  data->robot_label = FileLabel(data->robot->name());
  data->maps = core::SelfClearanceMaps::For(data->robot);
}

int LoadDefaultData(const std::string& suite, const SuiteOptions& options, MbmData* data) {
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
  data->source = "MotionBenchMaker Panda problems";
  core::RobotLoadOptions load;
  load.package_dirs["meshes"] = robot_dir + "/meshes";
  load.ros_package_path = "";
  auto robot = core::RobotModel::FromUrdfFile(robot_dir + "/panda.urdf", robot_dir + "/panda.srdf", load);
  if (!robot.ok()) {
    std::cerr << suite << ": " << robot.error().message << "\n";
    return 1;
  }
  SetRobot(data, robot.value());
  return 0;
}

// The first `n` problems of every family (problems are grouped by family).
void KeepFirstPerFamily(std::vector<mbm::MbmProblem>* problems, int n) {
  std::map<std::string, int> seen;
  std::vector<mbm::MbmProblem> kept;
  for (mbm::MbmProblem& p : *problems) {
    if (seen[p.family]++ < n) kept.push_back(std::move(p));
  }
  *problems = std::move(kept);
}

// Whether every problem maps onto the robot: its scene builds and its start and goal name the robot's
// joints. Says which does not on stderr.
bool ProblemsFitRobot(const std::string& suite, const MbmData& data) {
  for (const mbm::MbmProblem& p : data.problems) {
    auto description = mbm::MbmSceneDescription(p.scene, data.robot);
    const auto start = mbm::MbmStartConfiguration(p.request, *data.robot);
    const auto goal = mbm::MbmGoalConfiguration(p.request, *data.robot);
    const core::Error* error = !description.ok() ? &description.error()
                               : !start.ok()     ? &start.error()
                               : !goal.ok()      ? &goal.error()
                                                 : nullptr;
    if (error != nullptr) {
      std::cerr << suite << ": problem " << p.name << " does not fit robot '" << data.robot->name()
                << "': " << error->message << "\n";
      return false;
    }
  }
  return true;
}

}  // namespace

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "proximity-bench-XXXXXX").string();
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

core::Result<std::vector<mbm::MbmProblem>> LoadProblemTree(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return core::NotFound(root + ": no such folder");
  std::vector<fs::path> folders;
  if (HoldsProblems(root)) folders.emplace_back(root);
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && HoldsProblems(it->path())) folders.push_back(it->path());
  }
  if (ec) return core::NotFound(root + ": cannot list: " + ec.message());
  std::sort(folders.begin(), folders.end());
  if (folders.empty()) {
    return core::NotFound(root + ": no MotionBenchMaker problems (sceneNNNN.yaml with requestNNNN.yaml) in it or below it");
  }
  std::vector<std::vector<mbm::MbmProblem>> families;
  std::map<std::string, int> uses;
  for (const fs::path& folder : folders) {
    auto loaded = mbm::LoadMbmProblems(folder.string());
    if (!loaded.ok()) return loaded.error();
    if (!loaded.value().empty()) ++uses[loaded.value().front().family];
    families.push_back(std::move(loaded).value());
  }
  std::vector<mbm::MbmProblem> all;
  for (size_t f = 0; f < families.size(); ++f) {
    for (mbm::MbmProblem& p : families[f]) {
      if (uses[p.family] > 1) {
        // The same family name in several folders: prefix the folder's path under the root.
        std::string prefix = fs::relative(folders[f].parent_path(), root, ec).generic_string();
        std::replace(prefix.begin(), prefix.end(), '/', '_');
        if (!prefix.empty() && prefix != ".") {
          const std::string number = p.name.substr(p.name.rfind('/') + 1);
          p.family = prefix + "_" + p.family;
          p.name = p.family + "/" + number;
        }
      }
      all.push_back(std::move(p));
    }
  }
  return all;
}

int LoadMbmData(const std::string& suite, const SuiteOptions& options, MbmData* data) {
  if (!options.robot.given() && options.problems_dir.empty()) {
    return LoadDefaultData(suite, options, data);
  }
  if (options.problems_dir.empty()) {
    std::cerr << suite << ": --robot needs --problems DIR (the default problems are for the default robot; "
              << "proximity-bench generate makes problems for any robot)\n";
    return kBadInput;
  }
  auto loaded = LoadProblemTree(options.problems_dir);
  if (!loaded.ok()) {
    std::cerr << suite << ": --problems " << loaded.error().message << "\n";
    return kBadInput;
  }
  data->problems = std::move(loaded).value();
  if (options.quick) KeepFirstPerFamily(&data->problems, kQuickPerFamily);
  data->source = options.problems_dir;
  if (options.robot.given()) {
    // Joints outside --group keep the first problem's start values.
    std::map<std::string, double> start;
    const mbm::MbmRequest& first = data->problems.front().request;
    for (size_t i = 0; i < first.start_joint_names.size(); ++i) start[first.start_joint_names[i]] = first.start_joint_positions[i];
    std::vector<std::string> warnings;
    auto robot = LoadRobot(options.robot, start, &warnings);
    for (const std::string& w : warnings) std::cerr << suite << ": warning: " << w << "\n";
    if (!robot.ok()) {
      std::cerr << suite << ": " << robot.error().message << "\n";
      return kBadInput;
    }
    SetRobot(data, robot.value().model);
    for (const auto& [name, value] : robot.value().frozen) {
      std::cerr << suite << ": joint " << name << " (outside --group " << robot.value().group << ") held at " << value << "\n";
    }
  } else {
    SuiteOptions defaults = options;
    defaults.quick = true;  // Only the robot is used; the extracted problems need no archive.
    MbmData panda;
    if (int code = LoadDefaultData(suite, defaults, &panda); code != 0) return code;
    SetRobot(data, panda.robot);
  }
  if (!ProblemsFitRobot(suite, *data)) return kBadInput;
  return 0;
}

std::vector<core::Vec3> SampleSurfaces(const std::vector<core::WorldObject>& objects, double spacing, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<core::Vec3> out;
  const double per_area = 1.0 / (spacing * spacing);
  auto count = [&](double area) {
    const double n = area * per_area;
    return static_cast<int64_t>(n) + (u(rng) < n - std::floor(n) ? 1 : 0);
  };
  for (const core::WorldObject& o : objects) {
    for (const core::ObjectPart& part : o.parts) {
      const core::Geometry& g = part.geometry;
      auto put = [&](const core::Vec3& p_G) { out.push_back(part.X_WG * p_G); };
      if (const auto* b = std::get_if<core::Box>(&g.shape); b != nullptr && g.is_primitive()) {
        const core::Vec3 h = b->half_extents;
        for (int axis = 0; axis < 3; ++axis) {
          const int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
          for (const double side : {-1.0, 1.0}) {
            const int64_t n = count(4.0 * h[a1] * h[a2]);
            for (int64_t k = 0; k < n; ++k) {
              core::Vec3 p;
              p[axis] = side * h[axis];
              p[a1] = (2.0 * u(rng) - 1.0) * h[a1];
              p[a2] = (2.0 * u(rng) - 1.0) * h[a2];
              put(p);
            }
          }
        }
      } else if (const auto* c = std::get_if<core::Cylinder>(&g.shape); c != nullptr && g.is_primitive()) {
        const int64_t side = count(2.0 * M_PI * c->radius * 2.0 * c->half_length);
        for (int64_t k = 0; k < side; ++k) {
          const double t = 2.0 * M_PI * u(rng);
          put(core::Vec3(c->radius * std::cos(t), c->radius * std::sin(t), (2.0 * u(rng) - 1.0) * c->half_length));
        }
        for (const double z : {-c->half_length, c->half_length}) {
          const int64_t n = count(M_PI * c->radius * c->radius);
          for (int64_t k = 0; k < n; ++k) {
            const double t = 2.0 * M_PI * u(rng), r = c->radius * std::sqrt(u(rng));
            put(core::Vec3(r * std::cos(t), r * std::sin(t), z));
          }
        }
      } else if (const auto* sp = std::get_if<core::Sphere>(&g.shape); sp != nullptr && g.is_primitive()) {
        const int64_t n = count(4.0 * M_PI * sp->radius * sp->radius);
        std::normal_distribution<double> gauss;
        for (int64_t k = 0; k < n; ++k) {
          core::Vec3 d(gauss(rng), gauss(rng), gauss(rng));
          put(sp->center + sp->radius * d.normalized());
        }
      }
    }
  }
  return out;
}

core::Result<core::WorldObject> SensedWorld(const std::vector<core::WorldObject>& objects, double spacing, uint64_t seed,
                                            SensedWorldStats* stats) {
  const std::vector<core::Vec3> points = SampleSurfaces(objects, spacing, seed);
  const double t0 = Now();
  auto cloud = core::PointCloud::Build(points, 0.5 * spacing, {}, "sensed world");
  const double t1 = Now();
  if (!cloud.ok()) return cloud.error();
  if (stats != nullptr) {
    stats->points = static_cast<int64_t>(points.size());
    stats->kept = cloud.value()->num_points();
    stats->build_s = t1 - t0;
  }
  core::WorldObject o;
  o.id = "sensed";
  o.parts.push_back({core::Geometry::Cloud(std::move(cloud).value()), core::RigidTransform::Identity()});
  return o;
}

core::Result<std::shared_ptr<const core::Scene>> BuildProblemScene(const mbm::MbmProblem& p,
                                                                 const std::shared_ptr<core::SelfClearanceMaps>& maps,
                                                                 double cloud_spacing, SensedWorldStats* stats) {
  auto description = mbm::MbmSceneDescription(p.scene, maps->robot());
  if (!description.ok()) return description.error();
  description.value().self_clearance_maps = maps;
  if (cloud_spacing > 0.0) {
    auto sensed = SensedWorld(description.value().objects, cloud_spacing, std::hash<std::string>()(p.name), stats);
    if (!sensed.ok()) return sensed.error();
    description.value().objects = {std::move(sensed).value()};
    description.value().allowed_pairs.clear();  // they named the objects replaced
  }
  return core::Scene::Build(std::move(description).value());
}

core::Result<std::pair<std::vector<double>, std::vector<double>>> ProblemEnds(const mbm::MbmProblem& p,
                                                                             const core::RobotModel& robot) {
  auto start = mbm::MbmStartConfiguration(p.request, robot);
  if (!start.ok()) return start.error();
  auto goal = mbm::MbmGoalConfiguration(p.request, robot);
  if (!goal.ok()) return goal.error();
  return std::make_pair(std::move(start).value(), std::move(goal).value());
}

}  // namespace proximity::bench
