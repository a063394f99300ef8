#pragma once
/// @file
/// proximity.v1.ProximityService on the synchronous gRPC API. Handlers look a scene up (a shared_ptr
/// copy under a shared lock), convert the request, and call the core with no lock held. Batches run on
/// the worker pool with per-call scene caches and stop between states, segments or paths once the
/// call is cancelled or past its deadline. Plan runs proximity::planners on the scene, inline.

#include <cstdint>

#include "proximity/core/base/file_access.h"
#include "proximity/v1/proximity.grpc.pb.h"
#include "server/metrics.h"
#include "server/scene_store.h"
#include "server/worker_pool.h"

namespace proximity::server {

/// Request limits (RESOURCE_EXHAUSTED beyond them, naming the option; Plan's time limit: INVALID_ARGUMENT).
struct ServiceLimits {
  int64_t max_batch_states = 1'000'000;   ///< Configurations per request (CheckStates; ValidatePaths in total).
  int64_t max_path_waypoints = 100'000;   ///< Waypoints per path (CheckPath, each ValidatePaths path).
  double max_plan_seconds = 60.0;         ///< Largest Plan time_limit (INVALID_ARGUMENT beyond it).
  /// Longest any query call may work, whatever deadline the client set (or none): past it the call
  /// stops with DEADLINE_EXCEEDED.
  double max_call_seconds = 300.0;
  /// Triangles in one scene (robot and world meshes); inline meshes are counted before anything is built.
  int64_t max_scene_triangles = 1'000'000;
  /// Scenes per ListScenes page when the request asks for none (or more).
  int32_t max_list_page = 100;
  /// Largest response message (the server's --max-message-bytes); a larger one is refused with
  /// RESOURCE_EXHAUSTED instead of failing in the transport after being counted as OK. 0: no check.
  int64_t max_response_bytes = 0;
};

class ProximityServiceImpl final : public v1::ProximityService::Service {
 public:
  /// The registry, metrics and pool must outlive the service.
  /// Requests read server files under `files` (confined to the operator's roots in proximityd).
  /// `auth_token`, when not empty, is the bearer token every call must carry ("authorization:
  /// Bearer <token>" metadata; UNAUTHENTICATED otherwise).
  ProximityServiceImpl(SceneRegistry* registry, Metrics* metrics, WorkerPool* pool, ServiceLimits limits,
                       core::FileAccess files = {}, std::string auth_token = {});

  grpc::Status CreateScene(grpc::ServerContext* context, const v1::CreateSceneRequest* request,
                           v1::CreateSceneResponse* response) override;
  grpc::Status GetScene(grpc::ServerContext* context, const v1::GetSceneRequest* request,
                        v1::GetSceneResponse* response) override;
  grpc::Status ListScenes(grpc::ServerContext* context, const v1::ListScenesRequest* request,
                          v1::ListScenesResponse* response) override;
  grpc::Status UpdateWorld(grpc::ServerContext* context, const v1::UpdateWorldRequest* request,
                           v1::UpdateWorldResponse* response) override;
  grpc::Status DeleteScene(grpc::ServerContext* context, const v1::DeleteSceneRequest* request,
                           v1::DeleteSceneResponse* response) override;
  grpc::Status CheckState(grpc::ServerContext* context, const v1::CheckStateRequest* request,
                          v1::CheckStateResponse* response) override;
  grpc::Status CheckStates(grpc::ServerContext* context, const v1::CheckStatesRequest* request,
                           v1::CheckStatesResponse* response) override;
  grpc::Status ComputeDistance(grpc::ServerContext* context, const v1::ComputeDistanceRequest* request,
                               v1::ComputeDistanceResponse* response) override;
  grpc::Status CheckMotion(grpc::ServerContext* context, const v1::CheckMotionRequest* request,
                           v1::CheckMotionResponse* response) override;
  grpc::Status CheckPath(grpc::ServerContext* context, const v1::CheckPathRequest* request,
                         v1::CheckPathResponse* response) override;
  grpc::Status ValidatePaths(grpc::ServerContext* context, const v1::ValidatePathsRequest* request,
                             grpc::ServerWriter<v1::ValidatePathsResponse>* writer) override;
  grpc::Status TimeOfFirstContact(grpc::ServerContext* context, const v1::TimeOfFirstContactRequest* request,
                                  v1::TimeOfFirstContactResponse* response) override;
  /// Runs one planner inline on the calling thread over the scene's validity checks; stops at the
  /// request's time limit, the call's deadline or its cancellation.
  grpc::Status Plan(grpc::ServerContext* context, const v1::PlanRequest* request,
                    v1::PlanResponse* response) override;

 private:
  // Checks a built scene against the triangle limit and inserts it (evicting as the registry's limits
  // say); *out is the loaded entry, *created whether it is new.
  grpc::Status Admit(std::shared_ptr<const SceneEntry> built, bool* created, std::shared_ptr<const SceneEntry>* out);
  // OK when the server needs no token or the call carries it (compared in constant time).
  grpc::Status Authorize(grpc::ServerContext* context) const;
  // OK, or RESOURCE_EXHAUSTED (counted in the metrics) when `response` exceeds max_response_bytes.
  grpc::Status CheckResponseSize(const google::protobuf::Message& response, const char* advice);

  SceneRegistry* registry_;
  Metrics* metrics_;
  WorkerPool* pool_;
  ServiceLimits limits_;
  core::FileAccess files_;
  std::string auth_token_;
};

}  // namespace proximity::server
