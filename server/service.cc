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

namespace {

// The opening's tokens: the one unnamed token, when given, and the named clients'.
std::vector<ClientToken> Tokens(std::string auth_token, std::vector<ClientToken> client_tokens) {
  if (!auth_token.empty()) client_tokens.insert(client_tokens.begin(), ClientToken{"", std::move(auth_token)});
  return client_tokens;
}

}  // namespace

ProximityServiceImpl::ProximityServiceImpl(SceneRegistry* registry, Metrics* metrics, WorkerPool* pool,
                                           ServiceLimits limits, core::FileAccess files, std::string auth_token,
                                           std::vector<ClientToken> client_tokens)
    : registry_(registry),
      metrics_(metrics),
      pool_(pool),
      limits_(limits),
      files_(std::move(files)),
      opening_(registry, metrics, &limits_, Tokens(std::move(auth_token), client_tokens)) {
  std::vector<std::string> names;
  for (const ClientToken& t : client_tokens) {
    if (!t.name.empty()) names.push_back(t.name);
  }
  metrics_->SetClients(names);
}

void ProximityServiceImpl::CountScenes() {
  metrics_->SetScenesLoaded(static_cast<int64_t>(registry_->size()));
  metrics_->SetSceneBytes(registry_->memory_bytes());
  if (!opening_.named_clients()) return;
  std::vector<std::tuple<std::string, int64_t, int64_t>> shares;
  for (ClientShare& share : registry_->Shares()) shares.emplace_back(std::move(share.client), share.scenes, share.bytes);
  metrics_->SetClientShares(shares);
}

// ------------------------------------------------------------------------------------------------
// Scenes

grpc::Status ProximityServiceImpl::Admit(std::shared_ptr<const SceneEntry> built, std::string_view client,
                                         bool* created, std::shared_ptr<const SceneEntry>* out) {
  const auto triangles = static_cast<int64_t>(built->info.triangles());
  if (core::Status s = CheckSceneTriangles(triangles, limits_.max_scene_triangles, kSceneTrianglesOption); !s.ok()) {
    return ToGrpcStatus(s);
  }
  int64_t evicted = 0;
  auto inserted = registry_->Insert(std::move(built), &evicted, client);
  if (!inserted.ok()) return ToGrpcStatus(inserted.error());
  metrics_->AddEvictions(evicted);
  CountScenes();
  *out = inserted.value().first;
  *created = inserted.value().second;
  return grpc::Status::OK;
}

template <class Build>
grpc::Status ProximityServiceImpl::FindOrBuild(const std::string& id, std::string_view client, Build&& build,
                                               bool* created, std::shared_ptr<const SceneEntry>* out) {
  *out = registry_->Find(id);
  if (*out != nullptr) {
    // A named client re-creating a loaded scene becomes one of its owners, within its share.
    if (client.empty()) return grpc::Status::OK;
    return Admit(*out, client, created, out);
  }
  metrics_->AddSceneBuild();
  auto built = build();
  if (!built.ok()) return ToGrpcStatus(built.error(), ErrorScope::kSceneContent);
  return Admit(std::move(built).value(), client, created, out);
}

grpc::Status ProximityServiceImpl::CreateScene(grpc::ServerContext* context, const v1::CreateSceneRequest* request,
                                               v1::CreateSceneResponse* response) {
  return opening_.Serve(context, Rpc::kCreateScene, {}, [&](CallScope& call) -> grpc::Status {
    // Cheap limits first: inline meshes are counted before any file is read or anything built.
    if (core::Status s = CheckSceneTriangles(InlineTriangles(*request), limits_.max_scene_triangles,
                                             kSceneTrianglesOption);
        !s.ok()) {
      return ToGrpcStatus(s);
    }
    if (core::Status s = CheckCloudPoints(CloudPoints(*request), 0, limits_.max_cloud_points,
                                          limits_.max_scene_cloud_points);
        !s.ok()) {
      return ToGrpcStatus(s);
    }
    if (!request->name().empty()) {
      if (core::Status s = CheckSceneName(request->name(), "name"); !s.ok()) return ToGrpcStatus(s);
    }
    // The content id first: a scene already loaded is returned without building it again. The id and
    // the build read each server file once (one snapshot), so the scene is the content its id names.
    core::FileAccess files = files_;
    files.snapshot = std::make_shared<core::FileSnapshot>();
    auto id = CreateSceneId(*request, files, limits_.build);
    if (!id.ok()) return ToGrpcStatus(id.error(), ErrorScope::kSceneContent);
    // A name another scene holds refuses the request before anything is built.
    if (!request->name().empty() && !request->reassign_name()) {
      if (const std::string holder = registry_->NameHolder(request->name()); !holder.empty() && holder != id.value()) {
        return SceneNameTaken(request->name(), holder);
      }
    }
    bool created = false;
    std::shared_ptr<const SceneEntry> entry;
    if (grpc::Status s = FindOrBuild(
            id.value(), call.client(),
            [&] { return BuildScene(*request, files, id.value(), limits_.build, call.interrupt()); }, &created,
            &entry);
        !s.ok()) {
      // A build the call's deadline or cancellation stopped ends as the call's own status.
      if (call.cancel().stopped()) return call.cancel().status("while building the scene");
      return s;
    }
    call.set_entry(entry);
    if (!request->name().empty()) {
      std::string holder;
      if (registry_->AddName(entry->id, request->name(), request->reassign_name(), &holder) ==
          SceneRegistry::NameOutcome::kTaken) {
        return SceneNameTaken(request->name(), holder);
      }
    }
    *response->mutable_scene() = registry_->Info(*entry);
    response->set_created(created);
    return grpc::Status::OK;
  });
}

grpc::Status ProximityServiceImpl::GetScene(grpc::ServerContext* context, const v1::GetSceneRequest* request,
                                            v1::GetSceneResponse* response) {
  return opening_.ServeScene(context, Rpc::kGetScene, request->scene_id(), [&](CallScope& call) {
    *response->mutable_scene() = registry_->Info(call.entry());
    return grpc::Status::OK;
  });
}

grpc::Status ProximityServiceImpl::ListScenes(grpc::ServerContext* context, const v1::ListScenesRequest* request,
                                              v1::ListScenesResponse* response) {
  return opening_.Serve(context, Rpc::kListScenes, {}, [&](CallScope&) -> grpc::Status {
    auto page = ToPageSize(request->page_size(), limits_.max_list_page);
    if (!page.ok()) return ToGrpcStatus(page.error());
    // Scenes are listed in id order; the token is the last id of the previous page.
    for (const auto& entry : registry_->List()) {
      if (!request->page_token().empty() && entry->id <= request->page_token()) continue;
      if (response->scenes_size() == page.value()) {
        response->set_next_page_token(response->scenes(page.value() - 1).scene_id());
        break;
      }
      *response->add_scenes() = registry_->Info(*entry);
    }
    return grpc::Status::OK;
  });
}

grpc::Status ProximityServiceImpl::UpdateWorld(grpc::ServerContext* context, const v1::UpdateWorldRequest* request,
                                               v1::UpdateWorldResponse* response) {
  return opening_.ServeScene(context, Rpc::kUpdateWorld, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const SceneEntry& parent = call.entry();
    if (core::Status s = CheckSceneTriangles(static_cast<int64_t>(parent.info.triangles()) + InlineTriangles(*request),
                                             limits_.max_scene_triangles, kSceneTrianglesOption);
        !s.ok()) {
      return ToGrpcStatus(s);
    }
    if (core::Status s = CheckCloudPoints(CloudPoints(*request), SceneCloudPoints(*parent.scene),
                                          limits_.max_cloud_points, limits_.max_scene_cloud_points);
        !s.ok()) {
      return ToGrpcStatus(s);
    }
    // The same update of the same parent is the same content: the loaded scene is returned as is,
    // without building it again.
    core::FileAccess files = files_;
    files.snapshot = std::make_shared<core::FileSnapshot>();  // one read of each file for the id and the build
    auto id = UpdateSceneId(parent, *request, files);
    if (!id.ok()) return ToGrpcStatus(id.error(), ErrorScope::kSceneContent);
    bool created = false;
    std::shared_ptr<const SceneEntry> entry;
    if (grpc::Status s = FindOrBuild(id.value(), call.client(),
                                     [&] { return UpdateScene(parent, *request, files, id.value()); }, &created,
                                     &entry);
        !s.ok()) {
      return s;
    }
    if (request->move_names()) registry_->MoveNames(parent.id, entry->id);
    *response->mutable_scene() = registry_->Info(*entry);
    return grpc::Status::OK;
  });
}

grpc::Status ProximityServiceImpl::DeleteScene(grpc::ServerContext* context, const v1::DeleteSceneRequest* request,
                                               v1::DeleteSceneResponse*) {
  return opening_.Serve(context, Rpc::kDeleteScene, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    if (call.client().empty()) {
      if (!registry_->Erase(request->scene_id())) return SceneNotFound(request->scene_id());
    } else {
      // A named client gives up its own ownership; the scene goes once nobody owns it.
      switch (registry_->Release(request->scene_id(), call.client())) {
        case SceneRegistry::ReleaseOutcome::kNoScene:
          return SceneNotFound(request->scene_id());
        case SceneRegistry::ReleaseOutcome::kNotOwner:
          return NotSceneOwner(call.client(), request->scene_id());
        case SceneRegistry::ReleaseOutcome::kReleased:
          call.record().set_field("unloaded", false);
          break;
        case SceneRegistry::ReleaseOutcome::kErased:
          call.record().set_field("unloaded", true);
          break;
      }
    }
    CountScenes();
    return grpc::Status::OK;
  });
}


grpc::Status ProximityServiceImpl::NameScene(grpc::ServerContext* context, const v1::NameSceneRequest* request,
                                             v1::NameSceneResponse* response) {
  return opening_.Serve(context, Rpc::kNameScene, request->scene_id(), [&](CallScope&) -> grpc::Status {
    if (core::Status s = CheckSceneName(request->name(), "name"); !s.ok()) return ToGrpcStatus(s);
    std::string holder;
    const SceneRegistry::NameOutcome outcome =
        request->remove() ? registry_->RemoveName(request->scene_id(), request->name())
                          : registry_->AddName(request->scene_id(), request->name(), request->reassign(), &holder);
    switch (outcome) {
      case SceneRegistry::NameOutcome::kNoScene:
        return SceneNotFound(request->scene_id());
      case SceneRegistry::NameOutcome::kTaken:
        return SceneNameTaken(request->name(), holder);
      case SceneRegistry::NameOutcome::kNotHeld:
        return SceneNameNotHeld(request->name(), request->scene_id());
      case SceneRegistry::NameOutcome::kOk:
        break;
    }
    const std::shared_ptr<const SceneEntry> entry = registry_->Find(request->scene_id());
    if (entry == nullptr) return SceneNotFound(request->scene_id());
    *response->mutable_scene() = registry_->Info(*entry);
    return grpc::Status::OK;
  });
}

}  // namespace proximity::server
