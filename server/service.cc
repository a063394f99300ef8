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

namespace proximity::server {

namespace {

constexpr std::string_view kBatchStatesOption = "--max-batch-states";
constexpr std::string_view kPathWaypointsOption = "--max-path-waypoints";
constexpr std::string_view kSceneTrianglesOption = "--max-scene-triangles";
constexpr std::string_view kPlanSecondsOption = "--max-plan-seconds";

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

// ------------------------------------------------------------------------------------------------
// Queries

namespace {
// What a request gave that was accepted with a warning: on the response and in the call's log record.
template <class Response>
void AddWarnings(CallScope& call, std::vector<std::string>* warnings, Response* response) {
  if (warnings->empty()) return;
  call.record().set_field("warnings", *warnings);
  for (std::string& w : *warnings) response->add_warnings(std::move(w));
}
}  // namespace

grpc::Status ProximityServiceImpl::CheckState(grpc::ServerContext* context, const v1::CheckStateRequest* request,
                                              v1::CheckStateResponse* response) {
  return opening_.ServeScene(context, Rpc::kCheckState, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    // Per-thread scratch: a warm unary CheckState allocates nothing beyond its response.
    thread_local std::vector<double> q;
    thread_local core::SceneCache cache;
    std::vector<std::string> warnings;
    if (core::Status s = ResolveState(scene.robot(), request->state(), "state", &q, &warnings); !s.ok()) {
      return ToGrpcStatus(s);
    }
    const core::Result<core::StateResult> checked = scene.CheckState(q, &cache);
    if (!checked.ok()) return ToGrpcStatus(checked.error());
    const core::StateResult& r = checked.value();
    ToWire(scene, r, response);
    AddWarnings(call, &warnings, response);
    const Work work = StateWork(r);
    work.ToWire(response->mutable_stats());
    call.record().Count(QueryKind::kClear, 1, work);
    call.record().set_states(1);
    return grpc::Status::OK;
  });
}

namespace {

// CheckStates' states per Scene::CheckStates call (a run, RunChunkedRuns): enough to fill the SIMD
// lanes many times over, few enough that the deadline and a cancellation are asked every millisecond
// or so (a few microseconds a state).
constexpr int64_t kStatesRun = 256;

// One worker's scratch and tallies in a CheckStates call: no sharing between workers inside the loop.
struct StatesSlot {
  core::SceneCache cache;
  std::vector<double> q;                   // a run's configurations, row after row
  std::vector<core::StateResult> results;  // their answers
  Work work;
  int64_t free_count = 0;
  std::vector<std::pair<int64_t, core::StateContact>> contacts;
};

// One worker's scratch and tallies in a ValidatePaths call (its cache lasts the whole stream).
struct PathsSlot {
  core::SceneCache cache;
  std::vector<double> waypoints;
  Work work;
  int64_t segments = 0;
};

}  // namespace

grpc::Status ProximityServiceImpl::CheckStates(grpc::ServerContext* context, const v1::CheckStatesRequest* request,
                                               v1::CheckStatesResponse* response) {
  return opening_.ServeScene(context, Rpc::kCheckStates, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    auto rows = ConfigurationRows::Make(scene.robot(), request->states(), "states", limits_.max_batch_states,
                                        kBatchStatesOption);
    if (!rows.ok()) return ToGrpcStatus(rows.error());
    const ConfigurationRows& states = rows.value();
    const int64_t n = states.rows();
    call.record().set_states(n);

    response->mutable_free()->Resize(static_cast<int>(n), false);
    response->mutable_within_limits()->Resize(static_cast<int>(n), false);
    bool* free = response->mutable_free()->mutable_data();
    bool* within = response->mutable_within_limits()->mutable_data();
    const auto dof = static_cast<size_t>(scene.dof());
    std::vector<StatesSlot> slots(static_cast<size_t>(pool_->slots()));
    for (StatesSlot& s : slots) {
      s.q.resize(static_cast<size_t>(std::min(n, kStatesRun)) * dof);
      s.results.resize(static_cast<size_t>(std::min(n, kStatesRun)));
    }
    const bool contacts = request->include_contacts();
    const auto record = [&](StatesSlot& slot, int64_t i, const core::StateResult& r) {
      free[i] = r.free;
      within[i] = r.within_limits;
      slot.free_count += r.free ? 1 : 0;
      slot.work += StateWork(r);
      if (contacts && !r.free) slot.contacts.emplace_back(i, r.contact);
    };
    const auto run = [&](int64_t begin, int64_t end, int slot_index) -> core::Status {
      StatesSlot& slot = slots[static_cast<size_t>(slot_index)];
      const auto count = static_cast<size_t>(end - begin);
      for (size_t k = 0; k < count; ++k) states.Row(begin + static_cast<int64_t>(k), slot.q.data() + k * dof);
      const std::span<core::StateResult> results(slot.results.data(), count);
      if (scene.CheckStates(std::span<const double>(slot.q.data(), count * dof), results, &slot.cache).ok()) {
        for (size_t k = 0; k < count; ++k) record(slot, begin + static_cast<int64_t>(k), results[k]);
        return {};
      }
      // A configuration the core refuses (a value beyond its range): the run one state at a time, so
      // that the states before it count and the error names it as one state's check does.
      for (size_t k = 0; k < count; ++k) {
        const int64_t i = begin + static_cast<int64_t>(k);
        const core::Result<core::StateResult> checked =
            scene.CheckState(std::span<const double>(slot.q.data() + k * dof, dof), &slot.cache);
        if (!checked.ok()) return WithField("states: configuration " + std::to_string(i), checked.error());
        record(slot, i, checked.value());
      }
      return {};
    };
    const BatchOutcome outcome = RunChunkedRuns(*pool_, n, kStatesRun, call.cancel(), run);

    Work work;
    int64_t free_count = 0;
    for (const StatesSlot& s : slots) {
      work += s.work;
      free_count += s.free_count;
    }
    call.record().Count(QueryKind::kClear, work.states, work);
    if (outcome.stopped || outcome.error) {
      response->Clear();
      if (outcome.stopped) {
        return call.cancel().status(std::to_string(outcome.done) + " of " + std::to_string(n) + " states");
      }
      return ToGrpcStatus(*outcome.error);
    }
    const auto contacts_in_order = InIndexOrder(slots, [](const StatesSlot& s) -> const auto& { return s.contacts; });
    for (const auto& [index, contact] : contacts_in_order) {
      v1::StateContact* out = response->add_contacts();
      out->set_index(static_cast<uint32_t>(index));
      ToWire(scene, contact, out->mutable_contact());
    }
    response->set_free_count(static_cast<uint32_t>(free_count));
    work.ToWire(response->mutable_stats());
    return call.FitResponse(response, "split the batch or leave out contacts");
  });
}

grpc::Status ProximityServiceImpl::ComputeDistance(grpc::ServerContext* context,
                                                   const v1::ComputeDistanceRequest* request,
                                                   v1::ComputeDistanceResponse* response) {
  return opening_.ServeScene(context, Rpc::kComputeDistance, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    thread_local core::SceneCache cache;
    thread_local QueryScratch scratch;
    scratch.cache = &cache;
    std::vector<std::string> warnings;
    const Answered a = AnswerDistance(scene, *request, "", &scratch, call.interrupt(), &warnings, response);
    if (!a.status.ok()) return ToGrpcStatus(a.status);
    if (a.stopped) return call.cancel().status(std::to_string(a.work.pairs_tested) + " pairs");
    AddWarnings(call, &warnings, response);
    call.record().Count(QueryKind::kDistance, 1, a.work);
    call.record().set_states(1);
    return call.FitResponse(response, "leave out per_pair");
  });
}

grpc::Status ProximityServiceImpl::CheckMotion(grpc::ServerContext* context, const v1::CheckMotionRequest* request,
                                               v1::CheckMotionResponse* response) {
  return opening_.ServeScene(context, Rpc::kCheckMotion, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    thread_local core::SceneCache cache;
    thread_local QueryScratch scratch;
    scratch.cache = &cache;
    std::vector<std::string> warnings;
    const Answered a = AnswerMotion(scene, *request, "", &scratch, call.interrupt(), &warnings, response);
    if (!a.status.ok()) return ToGrpcStatus(a.status);
    if (a.stopped) {
      call.record().Count(QueryKind::kLink, 0, a.work);
      return call.cancel().status(std::to_string(a.work.states) + " states of the motion");
    }
    AddWarnings(call, &warnings, response);
    call.record().Count(QueryKind::kLink, 1, a.work);
    call.record().set_states(a.work.states);
    return grpc::Status::OK;
  });
}

grpc::Status ProximityServiceImpl::CheckPath(grpc::ServerContext* context, const v1::CheckPathRequest* request,
                                             v1::CheckPathResponse* response) {
  return opening_.ServeScene(context, Rpc::kCheckPath, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    auto rows = ToPath(scene.robot(), request->waypoints(), "waypoints", limits_.max_path_waypoints,
                       kPathWaypointsOption);
    if (!rows.ok()) return ToGrpcStatus(rows.error());
    auto motion = ToMotionRequest(request->mode(), request->resolution(), "");
    if (!motion.ok()) return ToGrpcStatus(motion.error());
    const std::vector<double> waypoints = rows.value().All();
    thread_local core::SceneCache cache;
    core::MotionRequest query = motion.value();
    query.stop = call.interrupt();
    const core::Result<core::PathResult> checked = scene.CheckPath(waypoints, query, &cache);
    if (!checked.ok()) return ToGrpcStatus(checked.error());
    const core::PathResult& r = checked.value();
    const Work work = MotionWork(r);
    call.record().Count(QueryKind::kLink, r.segments_checked, work);
    if (r.stopped) return call.cancel().status("part of the path");
    call.metrics().AddQueries(QueryKind::kPath, 1);
    ToWire(scene, r, response->mutable_result());
    work.ToWire(response->mutable_stats());
    call.record().set_states(work.states);
    return grpc::Status::OK;
  });
}

grpc::Status ProximityServiceImpl::ValidatePaths(grpc::ServerContext* context, const v1::ValidatePathsRequest* request,
                                                 grpc::ServerWriter<v1::ValidatePathsResponse>* writer) {
  return opening_.ServeScene(context, Rpc::kValidatePaths, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    auto motion = ToMotionRequest(request->mode(), request->resolution(), "");
    if (!motion.ok()) return ToGrpcStatus(motion.error());
    // Every path is checked before the first result goes out: a bad request streams nothing.
    auto decoded = ToPaths(scene.robot(), request->paths(), limits_.max_path_waypoints, kPathWaypointsOption,
                           limits_.max_batch_states, kBatchStatesOption);
    if (!decoded.ok()) return ToGrpcStatus(decoded.error());
    const std::vector<ConfigurationRows>& paths = decoded.value().paths;
    call.record().set_states(decoded.value().waypoints);

    std::vector<PathsSlot> slots(static_cast<size_t>(pool_->slots()));
    call.WatchStream();
    core::MotionRequest query = motion.value();
    query.stop = call.interrupt();
    const BatchOutcome outcome = StreamResults<v1::ValidatePathsResponse>(
        *pool_, static_cast<int64_t>(paths.size()), call.cancel(),
        [&](int64_t p, int slot_index, v1::ValidatePathsResponse* out) -> core::Result<bool> {
          PathsSlot& slot = slots[static_cast<size_t>(slot_index)];
          const ConfigurationRows& rows = paths[static_cast<size_t>(p)];
          slot.waypoints.resize(static_cast<size_t>(rows.rows() * rows.dof()));
          for (int64_t i = 0; i < rows.rows(); ++i) rows.Row(i, slot.waypoints.data() + i * rows.dof());
          const core::Result<core::PathResult> checked = scene.CheckPath(slot.waypoints, query, &slot.cache);
          if (!checked.ok()) return WithField("paths[" + std::to_string(p) + "]", checked.error());
          const core::PathResult& r = checked.value();
          const Work work = MotionWork(r);
          slot.work += work;
          slot.segments += r.segments_checked;
          if (r.stopped) return false;
          out->set_index(static_cast<uint32_t>(p));
          ToWire(scene, r, out->mutable_result());
          work.ToWire(out->mutable_stats());
          return true;
        },
        [&](const v1::ValidatePathsResponse& out) {
          // Write fails once the client is gone: the remaining paths are not checked.
          if (writer->Write(out)) return true;
          call.metrics().AddFailedSend();
          return false;
        });

    Work work;
    int64_t segments = 0;
    for (const PathsSlot& s : slots) {
      work += s.work;
      segments += s.segments;
    }
    call.metrics().AddQueries(QueryKind::kLink, segments);
    call.record().Count(QueryKind::kPath, outcome.done, work);
    if (outcome.stopped) {
      return call.cancel().status(std::to_string(outcome.done) + " of " + std::to_string(paths.size()) + " paths");
    }
    if (outcome.error) return ToGrpcStatus(*outcome.error);
    return grpc::Status::OK;
  });
}

namespace {

// The time of first contact of a free-flying body: its earliest part's (a tie keeps the first part),
// with the work of all its parts.
core::Result<core::ContinuousResult> BodyFirstContact(const core::Scene& scene, const std::vector<BodyPart>& parts,
                                                      const core::ContinuousRequest& query) {
  core::ContinuousResult r;
  bool first = true;
  int32_t iterations = 0;
  int64_t distance_queries = 0;
  core::QueryStats stats;
  for (const BodyPart& part : parts) {
    const core::Result<core::ContinuousResult> checked =
        scene.TimeOfFirstContact(part.geometry, part.X0, part.X1, query);
    if (!checked.ok()) return checked.error();
    const core::ContinuousResult& pr = checked.value();
    iterations += pr.iterations;
    distance_queries += pr.distance_queries;
    stats += pr.stats;
    if (first || pr.t_contact < r.t_contact) r = pr;
    first = false;
  }
  r.iterations = iterations;
  r.distance_queries = distance_queries;
  r.stats = stats;
  return r;
}

}  // namespace

grpc::Status ProximityServiceImpl::TimeOfFirstContact(grpc::ServerContext* context,
                                                      const v1::TimeOfFirstContactRequest* request,
                                                      v1::TimeOfFirstContactResponse* response) {
  return opening_.ServeScene(context, Rpc::kTimeOfFirstContact, request->scene_id(),
                             [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    auto continuous = ToContinuousRequest(request->tolerance());
    if (!continuous.ok()) return ToGrpcStatus(continuous.error());
    core::ContinuousRequest query = continuous.value();
    query.stop = call.interrupt();
    core::ContinuousResult r;
    switch (request->motion_case()) {
      case v1::TimeOfFirstContactRequest::kJointMotion: {
        thread_local std::vector<double> q0, q1;
        thread_local core::SceneCache cache;
        const v1::JointMotion& m = request->joint_motion();
        std::vector<std::string> warnings;
        if (core::Status s = ResolveState(scene.robot(), m.start(), "joint_motion.start", &q0, &warnings); !s.ok()) {
          return ToGrpcStatus(s);
        }
        if (core::Status s = ResolveState(scene.robot(), m.goal(), "joint_motion.goal", &q1, &warnings); !s.ok()) {
          return ToGrpcStatus(s);
        }
        AddWarnings(call, &warnings, response);
        core::Result<core::ContinuousResult> checked = scene.TimeOfFirstContact(q0, q1, query, &cache);
        if (!checked.ok()) return ToGrpcStatus(checked.error());
        r = std::move(checked).value();
        break;
      }
      case v1::TimeOfFirstContactRequest::kBodyMotion: {
        auto parts = ToBodyParts(request->body_motion(), files_);
        if (!parts.ok()) return ToGrpcStatus(parts.error());
        core::Result<core::ContinuousResult> checked = BodyFirstContact(scene, parts.value(), query);
        if (!checked.ok()) return ToGrpcStatus(checked.error());
        r = std::move(checked).value();
        break;
      }
      default:
        return ToGrpcStatus(core::InvalidArgument("motion: give joint_motion or body_motion"));
    }
    if (call.cancel().stopped()) return call.cancel().status(std::to_string(r.iterations) + " advancement steps");
    ToWire(scene, r, response);
    const Work work = ContactWork(r);
    work.ToWire(response->mutable_stats());
    call.record().Count(QueryKind::kCcd, 1, work);
    return grpc::Status::OK;
  });
}

// ------------------------------------------------------------------------------------------------
// Planning

namespace {

using planners::ScenePlanner;

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

// Times a solved plan's path (`rows`: the path as sent, continuous joints unwrapped, so the times are
// those of the segments CheckPath checks) into the response, with blends when asked.
grpc::Status TimePlan(CallScope& call, const core::Scene& scene, const ScenePlanner& planner,
                      const TimingSettings& timing, const std::vector<double>& rows, int64_t max_samples,
                      v1::PlanResponse* response) {
  const auto dof = static_cast<size_t>(scene.robot().num_positions());
  std::vector<planners::Configuration> sent(rows.size() / dof);
  for (size_t i = 0; i < sent.size(); ++i) sent[i].assign(rows.begin() + i * dof, rows.begin() + (i + 1) * dof);
  planners::TimingOptions options;
  options.resample_dt = timing.resample_dt;
  options.max_samples = max_samples;
  options.path_tolerance = timing.path_tolerance;
  options.blend_checker = &planner.blends();
  options.stop = call.interrupt();
  auto timed = planners::TimeOptimalTrajectory(planner.space(), sent, timing.limits,
                                               scene.robot().active_joint_names(), options);
  // A blend check the deadline or a cancel stopped refused its arc: no answer then, not a slower one.
  if (call.cancel().Stopped()) return call.cancel().status("timing the path");
  if (!timed.ok()) return ToGrpcStatus(WithField("timing", timed.error()));
  ToWire(scene.robot(), timed.value(), response->mutable_trajectory());
  call.record().set_field("duration_s", timed.value().duration());
  if (timing.path_tolerance > 0.0) {
    call.record().set_field("blended_corners", static_cast<int64_t>(timed.value().blended_corners));
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::Status ProximityServiceImpl::Plan(grpc::ServerContext* context, const v1::PlanRequest* request,
                                        v1::PlanResponse* response) {
  return opening_.ServeScene(context, Rpc::kPlan, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    std::vector<double> start, goal;
    std::vector<std::string> warnings;
    if (core::Status s = ToPlanEnds(scene.robot(), *request, &start, &goal, &warnings); !s.ok()) {
      return ToGrpcStatus(s);
    }
    if (!warnings.empty()) call.record().set_field("warnings", warnings);
    for (std::string& w : warnings) response->add_warnings(std::move(w));
    auto settings = ToPlanSettings(*request, limits_.max_plan_seconds, kPlanSecondsOption);
    if (!settings.ok()) return ToGrpcStatus(settings.error());
    const PlanSettings& plan = settings.value();
    ScenePlanner planner(call.entry().scene, plan.motion, call.interrupt());
    const bool to_pose = request->has_goal_pose();
    if (!request->group().empty()) {
      core::Result<planners::JointSpace> space =
          planners::GroupJointSpace(scene.robot(), request->group(), start, to_pose ? std::span<const double>(start) : goal);
      if (!space.ok()) return ToGrpcStatus(space.error());
      planner.RestrictTo(std::move(space).value());
    }
    if (core::Status s = planner.CheckResolution(); !s.ok()) return ToGrpcStatus(s);
    std::optional<TimingSettings> timing;
    if (request->has_timing()) {
      auto resolved = ToTimingSettings(scene.robot(), planner.space(), request->timing());
      if (!resolved.ok()) return ToGrpcStatus(resolved.error());
      timing = std::move(resolved).value();
    }
    std::optional<planners::PoseGoalSampler> sampler;
    if (to_pose) {
      auto goal_pose = ToPoseGoal(scene.robot(), scene.X_WB(), request->goal_pose(), "goal_pose");
      if (!goal_pose.ok()) return ToGrpcStatus(goal_pose.error());
      core::IkOptions ik;
      ik.seed = plan.options.seed;
      auto made = planners::PoseGoalSampler::Create(scene.robot_ptr(), goal_pose.value(), planner.space(), start, ik);
      if (!made.ok()) return ToGrpcStatus(WithField("goal_pose", made.error()));
      sampler.emplace(std::move(made).value());
    }
    CallCancel& cancel = call.cancel();
    planners::Termination termination;
    termination.time_limit_s = plan.time_limit_s;
    termination.max_iterations = plan.max_iterations;
    termination.stop = [&cancel] { return cancel.Stopped(); };
    auto planned = sampler ? planner.Plan(start, *sampler, plan.options, termination)
                           : planner.Plan(start, goal, plan.options, termination);

    // The checks the planner made count as CLEAR and LINK queries, whatever the outcome.
    Work work;
    work.states = planner.posed_states();
    call.record().Count(QueryKind::kClear, planner.state_checks(), work);
    call.metrics().AddQueries(QueryKind::kLink, planner.motion_checks());
    call.record().set_states(work.states);
    call.record().set_field("planner", planners::PlannerTypeName(plan.options.type));
    if (!planned.ok()) return ToGrpcStatus(planned.error());
    const planners::PlanResult& r = planned.value();
    call.record().set_field("outcome", planners::PlanOutcomeName(r.outcome));
    call.record().set_field("iterations", r.stats.iterations);
    if (r.outcome == planners::PlanOutcome::kCancelled ||
        (r.outcome != planners::PlanOutcome::kSolved && cancel.stopped())) {
      return cancel.status(std::to_string(r.stats.iterations) + " planner iterations");
    }
    metrics_->AddQueries(QueryKind::kPlan, 1);
    response->set_outcome(ToWire(r.outcome));
    response->set_planner(ToWire(plan.options.type));
    ToWire(r.stats, response->mutable_stats());
    ToWire(planner.space(), scene.robot(), r.path, response->mutable_path());
    if (r.outcome == planners::PlanOutcome::kSolved) {
      // The rows as sent (continuous joints unwrapped), so the times are those of the segments CheckPath checks.
      const std::string& packed = response->path().positions_f64le();
      std::vector<double> rows(packed.size() / sizeof(double));
      std::memcpy(rows.data(), packed.data(), rows.size() * sizeof(double));
      auto times = planners::TimeFromStart(scene.robot(), rows);
      if (!times.ok()) return ToGrpcStatus(times.error());
      for (double t : times.value()) response->add_time_from_start(t);
      if (timing) {
        if (grpc::Status s = TimePlan(call, scene, planner, *timing, rows, limits_.max_batch_states, response);
            !s.ok()) {
          return s;
        }
      }
    }
    if (to_pose) call.record().set_field("goal_draws", sampler->draws());
    if (std::string message = planners::PlanFailureMessage(scene, r, start, goal, plan.time_limit_s,
                                                          plan.max_iterations, sampler ? &*sampler : nullptr);
        !message.empty()) {
      response->set_message(std::move(message));
    }
    if (r.outcome == planners::PlanOutcome::kSolved) {
      call.record().set_field("waypoints", static_cast<int64_t>(r.path.size()));
      call.record().set_field("length", r.stats.length);
    }
    // A timed trajectory sampled finely can outgrow a message: refused by name instead of failing in transport.
    return call.FitResponse(response, "ask for a larger timing.resample_dt");
  });
}

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

grpc::Status ProximityServiceImpl::GetIK(grpc::ServerContext* context, const v1::GetIKRequest* request,
                                         v1::GetIKResponse* response) {
  return opening_.ServeScene(context, Rpc::kGetIK, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    const core::RobotModel& robot = scene.robot();
    auto goal = ToPoseGoal(robot, scene.X_WB(), request->goal(), "goal");
    if (!goal.ok()) return ToGrpcStatus(goal.error());
    std::vector<double> seed = robot.DefaultConfiguration();
    std::vector<std::string> warnings;
    if (request->has_seed()) {
      if (core::Status s = ResolveState(robot, request->seed(), "seed", &seed, &warnings); !s.ok()) return ToGrpcStatus(s);
      if (core::Status s = ClampState(robot, &seed, "seed", core::kStartBoundsTolerance, &warnings); !s.ok()) {
        return ToGrpcStatus(s);
      }
    }
    core::IkOptions options;
    if (!request->group().empty()) {
      auto members = robot.GroupActiveIndices(request->group());
      if (!members.ok()) return ToGrpcStatus(WithField("group", members.error()));
      options.variables = members.value();
    }
    const double timeout = request->timeout();
    if (!std::isfinite(timeout) || timeout < 0.0) {
      return ToGrpcStatus(core::InvalidArgument("timeout must be finite and >= 0 (0 for 1 s)"));
    }
    if (timeout > limits_.max_plan_seconds) {
      return ToGrpcStatus(core::InvalidArgument("timeout " + core::FormatNumber(timeout) + " s exceeds " +
                                                std::string(kPlanSecondsOption) + " " +
                                                core::FormatNumber(limits_.max_plan_seconds) + " s"));
    }
    const double budget = timeout > 0.0 ? timeout : std::min(1.0, limits_.max_plan_seconds);
    CallCancel& cancel = call.cancel();
    planners::Termination termination;
    termination.time_limit_s = budget;
    termination.stop = [&cancel] { return cancel.Stopped(); };
    options.max_attempts = 8;
    options.seed = request->random_seed();
    auto found = planners::SolveFreeIk(scene, goal.value(), seed, options, request->avoid_collisions(), termination);
    if (!found.ok()) return ToGrpcStatus(WithField("goal", found.error()));
    const planners::FreeIk& r = found.value();
    const core::IkSolution& answer = r.solution;
    if (cancel.stopped()) return cancel.status(std::to_string(answer.attempts) + " descents");
    Work work;
    work.states = r.state_checks;
    call.record().Count(QueryKind::kClear, r.state_checks, work);
    call.record().set_field("found", answer.found);
    response->set_attempts(answer.attempts);
    response->set_rejected(r.rejected);
    if (answer.found) {
      response->set_found(true);
      for (int32_t i = 0; i < robot.num_positions(); ++i) {
        response->mutable_solution()->add_joint_names(robot.active_joint_names()[static_cast<size_t>(i)]);
        response->mutable_solution()->add_positions(answer.q[static_cast<size_t>(i)]);
      }
      response->set_position_error(answer.position_error);
      response->set_orientation_error(answer.orientation_error);
    } else {
      response->set_message("no " + std::string(request->avoid_collisions() ? "collision-free " : "") +
                            "solution within " + Seconds(budget) + " (" + std::to_string(answer.attempts) +
                            " descents" +
                            (r.rejected > 0 ? ", " + std::to_string(r.rejected) + " solutions in collision" : "") + ")");
    }
    for (std::string& w : warnings) response->add_warnings(std::move(w));
    return grpc::Status::OK;
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
    thread_local std::vector<double> q;
    thread_local core::SceneCache cache;
    std::vector<std::string> warnings;
    if (core::Status s = ResolveState(scene.robot(), request->state(), "state", &q, &warnings); !s.ok()) {
      return ToGrpcStatus(s);
    }
    auto query = ToContactRequest(*request);
    if (!query.ok()) return ToGrpcStatus(query.error());
    query.value().stop = call.interrupt();
    const core::Result<core::SceneContactResult> contacts = core::ComputeSceneContacts(scene, q, query.value(), &cache);
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
    thread_local std::vector<double> q;
    thread_local core::SceneCache cache;
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
        scene, request->first(), request->second(), q, query, &cache, "first", "second");
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
