#pragma once
// The problems and robot the robot and mbm suites share: by default the MotionBenchMaker Panda problems
// and robot of ../shared/data; with --robot and --problems any robot and any folder of
// MotionBenchMaker-format problems.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "proximity/core/robot/robot_model.h"
#include "proximity/core/scene/scene.h"
#include "proximity/mbm/mbm.h"

namespace proximity::bench {

/// A temporary folder, removed with its contents when this goes out of scope; path() is "" when it
/// could not be made.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// The problems and the robot of a run. By default: the 35 extracted Panda problems with --quick, all
/// 700 from the archive (extracted into `tmp`) otherwise, and the mbm_panda robot. With --problems DIR:
/// every problem in DIR and the folders below it (the first kQuickPerFamily of each family with
/// --quick); with --robot: that robot (the problems' first start state gives the values of the joints
/// outside --group).
struct MbmData {
  TempDir tmp;
  std::vector<mbm::MbmProblem> problems;
  std::shared_ptr<const core::RobotModel> robot;
  /// The robot's self-clearance maps, shared by every problem's scene (made with the robot).
  std::shared_ptr<core::SelfClearanceMaps> maps;
  /// The robot's name as a file-name part (FileLabel), for log file names.
  std::string robot_label;
  /// What the problems are, for logs: "MotionBenchMaker Panda problems" or the --problems folder.
  std::string source;
};

/// Problems per family that --quick keeps from a --problems folder.
inline constexpr int kQuickPerFamily = 5;

/// Loads `data` for suite `suite`; 0, or the exit code after saying why on stderr: 77 when
/// ../shared/data lacks the default problems or robot, kBadInput when a --robot or --problems input is
/// missing or unusable (naming it), 1 otherwise.
int LoadMbmData(const std::string& suite, const SuiteOptions& options, MbmData* data);

/// The problems in folder `root` and in every folder below it, at any depth: each folder holding
/// sceneNNNN.yaml / requestNNNN.yaml pairs is a family (named as proximity::mbm names it, from the
/// folder's name without its "_<robot_model_name>" suffix; families whose names repeat are told apart
/// by their folder's path under `root`). Sorted by folder path, then number. NotFound when `root` is
/// not a folder or holds no problem; reader errors name the file.
[[nodiscard]] core::Result<std::vector<mbm::MbmProblem>> LoadProblemTree(const std::string& root);

/// Points sampled uniformly on the surfaces of `objects`' boxes, cylinders and spheres (posed in the
/// world), about `spacing` apart (one per spacing^2 of area), seeded: what a depth camera seeing every
/// side would report.
std::vector<core::Vec3> SampleSurfaces(const std::vector<core::WorldObject>& objects, double spacing, uint64_t seed);

/// What turning a world into a cloud cost: points sampled, kept, and the filter and build time.
struct SensedWorldStats {
  int64_t points = 0;
  int64_t kept = 0;
  double build_s = 0.0;
};

/// `objects` replaced by one object "sensed": the points SampleSurfaces gives as a cloud of radius
/// spacing / 2 (the default filter).
[[nodiscard]] core::Result<core::WorldObject> SensedWorld(const std::vector<core::WorldObject>& objects, double spacing,
                                                          uint64_t seed, SensedWorldStats* stats = nullptr);

/// Problem `p`'s scene on the robot of `maps`: its MotionBenchMaker description, built with those
/// self-clearance maps (shared with the robot's other scenes); with `cloud_spacing` > 0 its world is
/// SensedWorld's (seeded by the problem's number).
[[nodiscard]] core::Result<std::shared_ptr<const core::Scene>> BuildProblemScene(
    const mbm::MbmProblem& p, const std::shared_ptr<core::SelfClearanceMaps>& maps, double cloud_spacing = 0.0,
    SensedWorldStats* stats = nullptr);

/// Problem `p`'s start and goal configurations on `robot`.
[[nodiscard]] core::Result<std::pair<std::vector<double>, std::vector<double>>> ProblemEnds(
    const mbm::MbmProblem& p, const core::RobotModel& robot);

}  // namespace proximity::bench
