#pragma once
// The problem generator: MotionBenchMaker-format problems (sceneNNNN.yaml + requestNNNN.yaml in family
// folders) for any robot. Each problem is a random workcell of primitives placed within the robot's
// reach, measured from its kinematics, with a collision-free start and goal; at least half of the
// problems (every other one, starting with the first) have a straight joint-space line from start to
// goal that collides. Everything follows from the seed: the same robot, count and seed give the same
// bytes. bench/README.md describes the files and the workcells.

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"
#include "proximity/core/robot/robot_model.h"
#include "bench_util.h"
#include "robot_input.h"

namespace proximity::bench {

/// Where the robot can reach, from its kinematics alone.
struct Workspace {
  /// The first movable joint's origin in the root frame at the default configuration (m).
  core::Vec3 origin = core::Vec3::Zero();
  /// "Up": the first movable joint's axis in the root frame when it turns, pointed to the side where
  /// the moving links spend more of their time than the fixed ones; the root's z axis otherwise.
  core::Vec3 up = core::Vec3::UnitZ();
  /// The largest distance from `origin` of any point of the robot's collision geometry (bounding spheres
  /// of its parts) over random configurations within the joint limits (m).
  double reach = 0.0;
  /// The same for the links that at most one joint moves (the base and what turns with the first joint):
  /// no obstacle comes closer to `origin` than this.
  double base_radius = 0.0;
  /// A fixed body around the arm (a humanoid's torso, legs and other arm; base_radius would otherwise
  /// reach most of `reach`): `reach` and `base_radius` then count the moving links and the first one
  /// only, obstacles keep clear of each of these bounding spheres of fixed links instead (centre in
  /// the root frame, radius), and `up` is the root's z axis. Empty for an arm on a compact base.
  std::vector<std::pair<core::Vec3, double>> fixed_body;
};

/// Measures the workspace of `robot` on `samples` random configurations (the same ones for every run,
/// whatever the generator's seed). Errors when the robot has no movable joint or no collision geometry.
[[nodiscard]] core::Result<Workspace> MeasureWorkspace(const core::RobotModel& robot, int samples = 2000);

/// The workcell families, in the order problems cycle through them.
const std::vector<std::string>& GeneratorFamilies();

/// One generated problem: its files' text and what the generator found.
struct GeneratedProblem {
  std::string family;          ///< "table", "shelf" or "clutter".
  int number = 0;              ///< NNNN, from 1 within its family.
  std::string folder;          ///< "<family>_<robot label>".
  std::string scene_yaml;      ///< sceneNNNN.yaml.
  std::string request_yaml;    ///< requestNNNN.yaml.
  bool line_collides = false;  ///< The straight start -> goal line collides (certified check).
  /// A path from the start to the goal whose every segment the certified check finds free (the generator's
  /// proof that the problem has a solution); not written to the files.
  std::vector<std::vector<double>> witness;
  int objects = 0;
};

/// What GenerateProblems writes beside the problems (generator.yaml) and reports.
struct GeneratorReport {
  Workspace workspace;
  int line_collides = 0;  ///< Problems whose straight line collides.
  int workcells_tried = 0;
};

/// Generates `count` problems for `robot` with `seed`. Errors (InvalidArgument) for a count below 1 and
/// for a robot that has no collision-free configuration anywhere the generator looks.
[[nodiscard]] core::Result<std::vector<GeneratedProblem>> GenerateProblems(const LoadedRobot& robot, int count,
                                                                           uint64_t seed, GeneratorReport* report);

/// The generator's summary file (generator.yaml): robot, group, joints, seed, count, workspace, families.
std::string GeneratorSummary(const LoadedRobot& robot, const RobotSpec& spec, int count, uint64_t seed,
                             const GeneratorReport& report, const std::vector<GeneratedProblem>& problems);

/// Writes the problems and `summary` (as generator.yaml) into folder `out`, atomically: everything goes
/// into a new temporary folder next to `out`, which is renamed to `out` at the end, and removed on any
/// failure. `out` must not exist or be an empty folder, and its parent folder must exist. Errors name
/// the folder.
[[nodiscard]] core::Status WriteProblems(const std::vector<GeneratedProblem>& problems, const std::string& summary,
                                         const std::string& out);

/// `proximity-bench generate`: loads options.robot, generates options.count problems with options.seed
/// and writes them into options.out_dir. Returns 0, or kBadInput after naming the bad input on stderr.
int RunGenerate(const SuiteOptions& options);

}  // namespace proximity::bench
