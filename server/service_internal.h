#pragma once
/// @file
/// Shared by the service's handler files (service*.cc, one per concept: scenes, queries, planning and
/// kinematics, geometry and contacts): the server options a refusal names, and a request's accepted
/// warnings. Not installed.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/call.h"

namespace proximity::server {

inline constexpr std::string_view kBatchStatesOption = "--max-batch-states";
inline constexpr std::string_view kPathWaypointsOption = "--max-path-waypoints";
inline constexpr std::string_view kSceneTrianglesOption = "--max-scene-triangles";
inline constexpr std::string_view kPlanSecondsOption = "--max-plan-seconds";

/// What a request gave that was accepted with a warning: on the response and in the call's log record.
template <class Response>
void AddWarnings(CallScope& call, std::vector<std::string>* warnings, Response* response) {
  if (warnings->empty()) return;
  call.record().set_field("warnings", *warnings);
  for (std::string& w : *warnings) response->add_warnings(std::move(w));
}

}  // namespace proximity::server
