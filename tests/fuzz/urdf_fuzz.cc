// URDF text through RobotModel::FromUrdfString with options that read no file: a robot loads whole or
// not at all, with an error naming what is wrong; a loaded robot satisfies CheckRobot.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "robot_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace proximity;
  static const core::RobotLoadOptions options = fuzz::NoFiles();
  const std::string_view urdf(reinterpret_cast<const char*>(data), size);
  auto robot = core::RobotModel::FromUrdfString(urdf, {}, options);
  if (!robot.ok()) {
    fuzz::CheckError(robot.error());
    return 0;
  }
  fuzz::CheckRobot(*robot.value());
  return 0;
}
