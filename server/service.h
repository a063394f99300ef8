#pragma once
/// @file
/// proximity.v1.ProximityService on the synchronous gRPC API. Every handler runs inside the shared
/// opening (call.h: recorded, authorized, its scene looked up as a shared_ptr copy under a shared
/// lock), then decodes the request (convert.h), calls the core with no lock held, and encodes the
/// answer; every status comes from errors.h. Batches run on the worker pool (batch.h) with per-call
/// scene caches and stop between states or paths once the call is cancelled or past its deadline.
/// Plan runs proximity::planners on the scene, inline. GetLinkPoses and GetSceneGeometry answer from
/// scene_geometry.h. Session (session.cc) serves a stream of query batches on one opening.

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "proximity/core/base/file_access.h"
#include "proximity/v1/proximity.grpc.pb.h"
#include "server/call.h"
#include "server/metrics.h"
#include "server/scene_store.h"
#include "server/worker_pool.h"

namespace proximity::server {

class ProximityServiceImpl final : public v1::ProximityService::Service {
 public:
  /// The registry, metrics and pool must outlive the service.
  /// Requests read server files under `files` (confined to the operator's roots in proximityd).
  /// `auth_token`, when not empty, is a bearer token calls may carry ("authorization: Bearer <token>"
  /// metadata); `client_tokens` are more, each naming the client that carries it. With any token, every
  /// call must carry one (UNAUTHENTICATED otherwise). A named client owns the scenes it creates
  /// (SceneRegistry::Insert), within its share of the registry, and deletes only those.
  ProximityServiceImpl(SceneRegistry* registry, Metrics* metrics, WorkerPool* pool, ServiceLimits limits,
                       core::FileAccess files = {}, std::string auth_token = {},
                       std::vector<ClientToken> client_tokens = {});

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
  /// Forward kinematics at one configuration or a batch (at most --max-batch-states, and a response
  /// within --max-message-bytes, refused before any pose is computed); stops between configurations.
  grpc::Status GetLinkPoses(grpc::ServerContext* context, const v1::GetLinkPosesRequest* request,
                            v1::GetLinkPosesResponse* response) override;
  /// Inverse kinematics: random-restart descents (core::SolveIk) until a solution (free of collision
  /// when asked) or the request's timeout (at most --max-plan-seconds); stops at cancellation.
  grpc::Status GetIK(grpc::ServerContext* context, const v1::GetIKRequest* request,
                     v1::GetIKResponse* response) override;
  /// The scene's meshes, at most max_triangles (or --max-scene-triangles) triangles.
  grpc::Status GetSceneGeometry(grpc::ServerContext* context, const v1::GetSceneGeometryRequest* request,
                                v1::GetSceneGeometryResponse* response) override;
  /// A query session (session.cc): one opening, then batches of CLEAR, LINK and distance queries
  /// answered in order on the handler's thread with the session's own caches.
  grpc::Status Session(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<v1::SessionResponse, v1::SessionRequest>* stream) override;
  /// Ends every open session (their streams are cancelled) and refuses new ones: the drain's first step,
  /// so that a client holding an idle session does not hold the drain to its end.
  void EndSessions();
  grpc::Status ComputeContacts(grpc::ServerContext* context, const v1::ComputeContactsRequest* request,
                               v1::ComputeContactsResponse* response) override;
  grpc::Status ComputeSignedDistance(grpc::ServerContext* context, const v1::ComputeSignedDistanceRequest* request,
                                     v1::ComputeSignedDistanceResponse* response) override;
  grpc::Status NameScene(grpc::ServerContext* context, const v1::NameSceneRequest* request,
                         v1::NameSceneResponse* response) override;

 private:
  // Checks a built scene against the triangle limit and inserts it for `client` (evicting as the
  // registry's limits say); *out is the loaded entry, *created whether it is new.
  grpc::Status Admit(std::shared_ptr<const SceneEntry> built, std::string_view client, bool* created,
                     std::shared_ptr<const SceneEntry>* out);
  // The loaded scene `id` (a named `client` then owns it too), or the one `build()` makes (a
  // core::Result of an entry; its errors are about the request's content) once admitted.
  template <class Build>
  grpc::Status FindOrBuild(const std::string& id, std::string_view client, Build&& build, bool* created,
                           std::shared_ptr<const SceneEntry>* out);
  // The scene gauges (loaded, bytes, each named client's share) as the registry holds them now.
  void CountScenes();

  SceneRegistry* registry_;
  Metrics* metrics_;
  WorkerPool* pool_;
  ServiceLimits limits_;
  core::FileAccess files_;
  Opening opening_;  // after limits_, which it points to
  // Open sessions, so that the drain can end them.
  std::mutex sessions_mutex_;
  std::set<grpc::ServerContext*> sessions_;
  bool sessions_ended_ = false;
};

}  // namespace proximity::server
