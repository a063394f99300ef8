// The service's kinematics and geometry handlers: GetLinkPoses, GetSceneGeometry, contacts.
#include "server/service.h"
#include "server/queries.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "proximity/planners/pose_goal.h"
#include "proximity/planners/scene_validity.h"
#include "proximity/planners/scene_planner.h"
#include "proximity/planners/timing.h"
#include "server/batch.h"
#include "server/contacts.h"
#include "server/errors.h"
#include "server/scene_geometry.h"
#include "server/service_internal.h"


namespace proximity::server {
// ------------------------------------------------------------------------------------------------
// Kinematics and geometry

grpc::Status ProximityServiceImpl::GetLinkPoses(grpc::ServerContext* context, const v1::GetLinkPosesRequest* request,
                                                v1::GetLinkPosesResponse* response) {
  return opening_.ServeScene(context, Rpc::kGetLinkPoses, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    const core::RobotModel& robot = scene.robot();
    auto states = ToPoseStates(robot, *request, limits_.max_batch_states, kBatchStatesOption);
    if (!states.ok()) return ToGrpcStatus(states.error());
    const int64_t n = states.value().count;
    const auto dof = static_cast<size_t>(robot.num_positions());
    call.record().set_states(n);
    // Refused before any pose is computed: a batch whose poses cannot be sent.
    if (const int64_t bytes = PoseBytes(n, robot.num_links());
        limits_.max_response_bytes > 0 && bytes > limits_.max_response_bytes) {
      call.metrics().AddOversizeResponse();
      return ResponseTooLarge(bytes, limits_.max_response_bytes, "split the batch");
    }
    std::string poses(static_cast<size_t>(PoseBytes(n, robot.num_links())), '\0');
    std::vector<double> row(static_cast<size_t>(robot.num_links()) * kPoseValues);
    std::vector<core::RigidTransform> scratch;
    CallCancel& cancel = call.cancel();
    for (int64_t i = 0; i < n; ++i) {
      if (i % 1024 == 1023 && cancel.Stopped()) {
        return cancel.status(std::to_string(i) + " of " + std::to_string(n) + " configurations");
      }
      const std::span<const double> q(states.value().rows.data() + static_cast<size_t>(i) * dof, dof);
      if (core::Status s = LinkPoses(scene, q, &scratch, row.data()); !s.ok()) {
        return ToGrpcStatus(WithField("configuration " + std::to_string(i), s.error()));
      }
      std::memcpy(poses.data() + static_cast<size_t>(i) * row.size() * sizeof(double), row.data(),
                  row.size() * sizeof(double));
      response->add_within_limits(robot.WithinLimits(q));
    }
    for (const core::Link& link : robot.links()) response->add_link_names(link.name);
    AddWarnings(call, &states.value().warnings, response);
    response->set_count(static_cast<uint32_t>(n));
    response->set_poses_f64le(std::move(poses));
    ToWire(scene.X_WB(), response->mutable_base_pose());
    Work work;
    work.states = n;
    call.record().Count(QueryKind::kPoses, n, work);
    return call.FitResponse(response, "split the batch");
  });
}


grpc::Status ProximityServiceImpl::GetSceneGeometry(grpc::ServerContext* context,
                                                    const v1::GetSceneGeometryRequest* request,
                                                    v1::GetSceneGeometryResponse* response) {
  return opening_.ServeScene(context, Rpc::kGetSceneGeometry, request->scene_id(),
                             [&](CallScope& call) -> grpc::Status {
    const int64_t cap = limits_.max_scene_triangles;
    const int64_t asked = static_cast<int64_t>(std::min<uint64_t>(request->max_triangles(), INT64_MAX));
    const int64_t max_triangles = asked > 0 ? std::min(asked, cap) : cap;
    if (core::Status s = SceneGeometry(call.scene(), max_triangles, response); !s.ok()) {
      response->Clear();
      return ToGrpcStatus(s);
    }
    response->set_scene_id(call.entry().id);
    call.record().set_field("triangles", static_cast<int64_t>(response->triangles()));
    return call.FitResponse(response, "ask for fewer max_triangles");
  });
}

grpc::Status ProximityServiceImpl::ComputeContacts(grpc::ServerContext* context,
                                                   const v1::ComputeContactsRequest* request,
                                                   v1::ComputeContactsResponse* response) {
  return opening_.ServeScene(context, Rpc::kComputeContacts, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    QueryScratch& scratch = *ThreadScratch();  // the thread's configuration and scene cache (queries.h)
    std::vector<double>& q = scratch.q0;
    std::vector<std::string> warnings;
    if (core::Status s = ResolveState(scene.robot(), request->state(), "state", &q, &warnings); !s.ok()) {
      return ToGrpcStatus(s);
    }
    auto query = ToContactRequest(*request);
    if (!query.ok()) return ToGrpcStatus(query.error());
    query.value().stop = call.interrupt();
    const core::Result<core::SceneContactResult> contacts = core::ComputeSceneContacts(scene, q, query.value(), scratch.cache);
    if (!contacts.ok()) return ToGrpcStatus(contacts.error());
    const core::SceneContactResult& r = contacts.value();
    if (r.stopped) return call.cancel().status(std::to_string(r.pairs_tested) + " pairs");
    ToWire(scene, r, response);
    AddWarnings(call, &warnings, response);
    Work work;
    work.states = 1;
    work.pairs_tested = r.pairs_tested;
    work.Add(r.stats);
    work.ToWire(response->mutable_stats());
    call.record().Count(QueryKind::kDistance, 1, work);
    call.record().set_states(1);
    return call.FitResponse(response, "ask for fewer max_pairs or max_points");
  });
}

grpc::Status ProximityServiceImpl::ComputeSignedDistance(grpc::ServerContext* context,
                                                         const v1::ComputeSignedDistanceRequest* request,
                                                         v1::ComputeSignedDistanceResponse* response) {
  return opening_.ServeScene(context, Rpc::kComputeSignedDistance, request->scene_id(),
                             [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    QueryScratch& scratch = *ThreadScratch();  // the thread's configuration and scene cache (queries.h)
    std::vector<double>& q = scratch.q0;
    std::vector<std::string> warnings;
    if (core::Status s = ResolveState(scene.robot(), request->state(), "state", &q, &warnings); !s.ok()) {
      return ToGrpcStatus(s);
    }
    AddWarnings(call, &warnings, response);
    if (request->first().empty()) return ToGrpcStatus(core::InvalidArgument("first: give a link or object name"));
    if (request->second().empty()) return ToGrpcStatus(core::InvalidArgument("second: give a link or object name"));
    core::PairSignedDistanceRequest query;
    query.rel_err = request->rel_err();
    query.abs_err = request->abs_err();
    query.stop = call.interrupt();
    const core::Result<core::PairSignedDistance> distance = core::ComputePairSignedDistance(
        scene, request->first(), request->second(), q, query, scratch.cache, "first", "second");
    if (!distance.ok()) return ToGrpcStatus(distance.error());
    if (distance.value().stopped) return call.cancel().status("the pair's geometries");
    ToWire(scene, distance.value(), response);
    response->set_within_limits(scene.robot().WithinLimits(q));
    Work work;
    work.states = 1;
    work.distance_queries = 1;
    call.record().Count(QueryKind::kDistance, 1, work);
    call.record().set_states(1);
    return grpc::Status::OK;
  });
}
}  // namespace proximity::server
