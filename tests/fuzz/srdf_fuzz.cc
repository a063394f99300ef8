// SRDF text against a fixed URDF (tests/data/robots/planar_2link.urdf, read once at start-up): the
// parser alone, then the robot with it; a loaded robot's groups and states resolve or give errors.

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "robot_checks.h"

namespace {

const std::string& Urdf() {
  static const std::string urdf = [] {
    std::ifstream in(PROX_TEST_DATA_DIR "/robots/planar_2link.urdf");
    std::ostringstream s;
    s << in.rdbuf();
    PROX_FUZZ_CHECK(in && !s.str().empty(), "cannot read " PROX_TEST_DATA_DIR "/robots/planar_2link.urdf");
    return s.str();
  }();
  return urdf;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace proximity;
  static const core::RobotLoadOptions options = fuzz::NoFiles();
  const std::string_view srdf(reinterpret_cast<const char*>(data), size);
  auto parsed = core::ParseSrdf(srdf, "fuzz.srdf");
  if (!parsed.ok()) fuzz::CheckError(parsed.error());
  auto robot = core::RobotModel::FromUrdfString(Urdf(), srdf, options);
  if (!robot.ok()) {
    fuzz::CheckError(robot.error());
    return 0;
  }
  // An empty SRDF is no SRDF; otherwise the robot only loads with a parsed SRDF.
  PROX_FUZZ_CHECK(srdf.empty() || parsed.ok(), "a robot loaded with an SRDF that does not parse");
  fuzz::CheckRobot(*robot.value());
  return 0;
}
