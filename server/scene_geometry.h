#pragma once
/// @file
/// What GetLinkPoses and GetSceneGeometry answer: a scene's link poses at configurations (forward
/// kinematics), and its geometry as triangle meshes for viewers and exporters. Wire in, wire out; the
/// handlers in service.cc add the call's opening, stop condition and limits.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"
#include "proximity/core/scene/scene.h"
#include "proximity/v1/proximity.pb.h"

namespace proximity::server {

namespace v1 = ::proximity::v1;

/// Values per link pose in GetLinkPosesResponse.poses_f64le: position x, y, z, quaternion x, y, z, w.
inline constexpr int kPoseValues = 7;

/// The configurations of a GetLinkPoses request in the scene's joint order, row after row, and how many:
/// `state` (ResolveState) or `states` (ConfigurationRows, at most `max_rows`, the option `limit_name`).
/// Errors name the field: both or neither given, a wrong joint count, a value that is not finite.
struct PoseStates {
  std::vector<double> rows;
  int64_t count = 0;
  std::vector<std::string> warnings;  ///< one state's values for joints the scene lacks (ignored)
};
[[nodiscard]] core::Result<PoseStates> ToPoseStates(const core::RobotModel& robot,
                                                    const v1::GetLinkPosesRequest& request, int64_t max_rows,
                                                    std::string_view limit_name);

/// Bytes of the poses of `count` configurations of a robot with `links` links.
inline int64_t PoseBytes(int64_t count, int64_t links) { return count * links * kPoseValues * 8; }

/// Writes the pose X_WL of every link at `q` (the scene's base pose applied) into `out` as
/// num_links() * kPoseValues values (quaternion with w >= 0).
[[nodiscard]] core::Status LinkPoses(const core::Scene& scene, std::span<const double> q,
                                     std::vector<core::RigidTransform>* scratch, double* out);

/// Tessellation of primitives for display: segments around an axis, and sphere subdivisions.
inline constexpr int kDisplaySegments = 32;
inline constexpr int kDisplaySphereSubdivisions = 2;
/// Points of a cloud drawn (as octahedra of their radius) at most; beyond, an even subset.
inline constexpr int32_t kDisplayCloudPoints = 20000;

/// The scene's geometry as triangle meshes, at most `max_triangles` in all: when the meshes hold more,
/// the largest are sent as their convex hulls until the rest fits. Errors: RESOURCE_EXHAUSTED naming
/// max_triangles when even the hulls do not fit.
[[nodiscard]] core::Status SceneGeometry(const core::Scene& scene, int64_t max_triangles,
                                         v1::GetSceneGeometryResponse* out);

}  // namespace proximity::server
