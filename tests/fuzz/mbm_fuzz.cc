// MotionBenchMaker YAML text, read both as a scene and as a request (the same bytes through both
// readers). What reads is mapped onto a fixed robot (tests/data/robots/planar_2link.urdf, loaded once):
// a scene into a SceneDescription that is built and checked at the robot's default configuration, a
// request into its start and goal configurations.

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "fuzz_check.h"
#include "proximity/mbm/mbm.h"
#include "proximity/core/scene/scene.h"

namespace {

using namespace proximity;

const std::shared_ptr<const core::RobotModel>& Robot() {
  static const std::shared_ptr<const core::RobotModel> robot = [] {
    auto r = core::RobotModel::FromUrdfFile(PROX_TEST_DATA_DIR "/robots/planar_2link.urdf");
    PROX_FUZZ_CHECK(r.ok(), r.ok() ? "" : r.error().message);
    return std::move(r).value();
  }();
  return robot;
}

void CheckConfiguration(const core::Result<std::vector<double>>& q) {
  if (!q.ok()) {
    fuzz::CheckError(q.error());
    return;
  }
  PROX_FUZZ_CHECK(static_cast<int32_t>(q.value().size()) == Robot()->num_positions(), "configuration size");
  for (double v : q.value()) PROX_FUZZ_CHECK(std::isfinite(v), "configuration values are finite");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const core::RobotModel& robot = *Robot();

  auto scene = mbm::LoadMbmSceneFromString(text, "fuzz_scene.yaml");
  if (!scene.ok()) {
    fuzz::CheckError(scene.error());
  } else {
    const mbm::MbmScene& s = scene.value();
    PROX_FUZZ_CHECK(s.acm_values.size() == s.acm_names.size(), "the ACM is square");
    for (const auto& row : s.acm_values) PROX_FUZZ_CHECK(row.size() == s.acm_names.size(), "the ACM is square");
    for (const mbm::MbmCollisionObject& o : s.objects) {
      PROX_FUZZ_CHECK(!o.primitives.empty(), "an object has primitives");
      for (const mbm::MbmPrimitive& p : o.primitives) {
        PROX_FUZZ_CHECK(p.X_RP.R.allFinite() && p.X_RP.p.allFinite(), "primitive poses are finite");
        for (double d : p.dimensions) PROX_FUZZ_CHECK(d > 0.0 && std::isfinite(d), "dimensions are positive");
      }
    }
    auto description = mbm::MbmSceneDescription(s, Robot());
    if (!description.ok()) {
      fuzz::CheckError(description.error());
    } else {
      auto built = core::Scene::Build(std::move(description).value());
      if (!built.ok()) {
        fuzz::CheckError(built.error());
      } else {
        core::SceneCache cache;
        const core::Status st = built.value()->CheckState(robot.DefaultConfiguration(), &cache).status();
        PROX_FUZZ_CHECK(st.ok(), st.ToString());
      }
    }
  }

  auto request = mbm::LoadMbmRequestFromString(text, "fuzz_request.yaml");
  if (!request.ok()) {
    fuzz::CheckError(request.error());
  } else {
    const mbm::MbmRequest& r = request.value();
    PROX_FUZZ_CHECK(r.start_joint_names.size() == r.start_joint_positions.size(), "start names and values pair");
    PROX_FUZZ_CHECK(!r.goals.empty(), "a request has a goal");
    CheckConfiguration(mbm::MbmStartConfiguration(r, robot));
    for (size_t g = 0; g < r.goals.size(); ++g) CheckConfiguration(mbm::MbmGoalConfiguration(r, robot, g));
  }
  return 0;
}
