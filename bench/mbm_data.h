#pragma once
// The MotionBenchMaker Panda problems and robot the robot and mbm suites share.

#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "proximity/mbm/mbm.h"
#include "proximity/core/robot/robot_model.h"

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

/// The problems (the 35 extracted ones with --quick, all 700 from the archive otherwise, extracted into
/// `tmp`) and the mbm_panda robot.
struct MbmData {
  TempDir tmp;
  std::vector<mbm::MbmProblem> problems;
  std::shared_ptr<const core::RobotModel> robot;
};

/// Loads `data` for suite `suite`; 0, or the exit code after saying why on stderr (77 when
/// ../shared/data lacks the problems or the robot).
int LoadMbmData(const std::string& suite, const SuiteOptions& options, MbmData* data);

}  // namespace proximity::bench
