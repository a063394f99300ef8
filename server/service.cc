#include "server/service.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "proximity/planners/scene_validity.h"
#include "server/batch.h"
#include "server/errors.h"

namespace proximity::server {

namespace {

grpc::Status Invalid(std::string message) { return ToGrpcStatus(core::InvalidArgument(std::move(message))); }

Work StateWork(const core::StateResult& r) {
  Work w;
  w.states = 1;
  w.pairs_tested = r.pairs_tested;
  w.Add(r.stats);
  return w;
}

// The work of a motion or path check (both count states and distance queries).
template <typename MotionOrPath>
Work MotionWork(const MotionOrPath& r) {
  Work w;
  w.states = r.states;
  w.distance_queries = r.distance_queries;
  w.Add(r.stats);
  return w;
}

}  // namespace

ProximityServiceImpl::ProximityServiceImpl(SceneRegistry* registry, Metrics* metrics, WorkerPool* pool,
                                           ServiceLimits limits, core::FileAccess files, std::string auth_token)
    : registry_(registry),
      metrics_(metrics),
      pool_(pool),
      limits_(limits),
      files_(std::move(files)),
      opening_(registry, metrics, &limits_, std::move(auth_token)) {}

// ------------------------------------------------------------------------------------------------
// Scenes

namespace {

// Triangles of the inline meshes in `parts`, counted from the request (nothing is built).
int64_t InlineTriangles(const google::protobuf::RepeatedPtrField<v1::ObjectPart>& parts) {
  int64_t n = 0;
  for (const v1::ObjectPart& p : parts) {
    if (p.shape().shape_case() == v1::Shape::kMesh) n += p.shape().mesh().triangles_size() / 3;
  }
  return n;
}

grpc::Status TooManyTriangles(int64_t triangles, int64_t limit) {
  return ToGrpcStatus(ResourceExhausted("scene: " + std::to_string(triangles) + " triangles exceed the server's " +
                                        "--max-scene-triangles = " + std::to_string(limit)));
}

}  // namespace

grpc::Status ProximityServiceImpl::Admit(std::shared_ptr<const SceneEntry> built, bool* created,
                                         std::shared_ptr<const SceneEntry>* out) {
  if (static_cast<int64_t>(built->info.triangles()) > limits_.max_scene_triangles) {
    return TooManyTriangles(static_cast<int64_t>(built->info.triangles()), limits_.max_scene_triangles);
  }
  int64_t evicted = 0;
  auto inserted = registry_->Insert(std::move(built), &evicted);
  if (!inserted.ok()) return ToGrpcStatus(inserted.error());
  metrics_->AddEvictions(evicted);
  metrics_->SetScenesLoaded(static_cast<int64_t>(registry_->size()));
  metrics_->SetSceneBytes(registry_->memory_bytes());
  *out = inserted.value().first;
  *created = inserted.value().second;
  return grpc::Status::OK;
}

grpc::Status ProximityServiceImpl::CreateScene(grpc::ServerContext* context, const v1::CreateSceneRequest* request,
                                               v1::CreateSceneResponse* response) {
  return opening_.Serve(context, Rpc::kCreateScene, {}, [&](CallScope& call) -> grpc::Status {
    // Cheap limits first: inline meshes are counted before any file is read or anything built.
    int64_t inline_triangles = 0;
    for (const v1::CollisionObject& o : request->objects()) inline_triangles += InlineTriangles(o.parts());
    for (const v1::AttachedObject& a : request->attached_objects()) inline_triangles += InlineTriangles(a.parts());
    if (inline_triangles > limits_.max_scene_triangles) {
      return TooManyTriangles(inline_triangles, limits_.max_scene_triangles);
    }
    // The content id first: a scene already loaded is returned without building it again.
    auto id = CreateSceneId(*request, files_);
    if (!id.ok()) return ToGrpcStatus(id.error(), ErrorScope::kSceneContent);
    std::shared_ptr<const SceneEntry> entry = registry_->Find(id.value());
    bool created = false;
    if (entry == nullptr) {
      metrics_->AddSceneBuild();
      auto built = BuildScene(*request, files_, id.value());
      if (!built.ok()) return ToGrpcStatus(built.error(), ErrorScope::kSceneContent);
      if (grpc::Status s = Admit(std::move(built).value(), &created, &entry); !s.ok()) return s;
    }
    call.set_entry(entry);
    *response->mutable_scene() = entry->info;
    response->set_created(created);
    return grpc::Status::OK;
  });
}

grpc::Status ProximityServiceImpl::GetScene(grpc::ServerContext* context, const v1::GetSceneRequest* request,
                                            v1::GetSceneResponse* response) {
  return opening_.ServeScene(context, Rpc::kGetScene, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    *response->mutable_scene() = call.entry().info;
    return grpc::Status::OK;
  });
}

grpc::Status ProximityServiceImpl::ListScenes(grpc::ServerContext* context, const v1::ListScenesRequest* request,
                                              v1::ListScenesResponse* response) {
  return opening_.Serve(context, Rpc::kListScenes, {}, [&](CallScope&) -> grpc::Status {
    if (request->page_size() < 0) return Invalid("page_size must be >= 0 (0: the server's page size)");
    const int32_t page = request->page_size() == 0 ? limits_.max_list_page
                                                   : std::min(request->page_size(), limits_.max_list_page);
    // Scenes are listed in id order; the token is the last id of the previous page.
    for (const auto& entry : registry_->List()) {
      if (!request->page_token().empty() && entry->id <= request->page_token()) continue;
      if (response->scenes_size() == page) {
        response->set_next_page_token(response->scenes(page - 1).scene_id());
        break;
      }
      *response->add_scenes() = entry->info;
    }
    return grpc::Status::OK;
  });
}

grpc::Status ProximityServiceImpl::UpdateWorld(grpc::ServerContext* context, const v1::UpdateWorldRequest* request,
                                               v1::UpdateWorldResponse* response) {
  return opening_.ServeScene(context, Rpc::kUpdateWorld, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const SceneEntry& parent = call.entry();
    int64_t inline_triangles = static_cast<int64_t>(parent.info.triangles());
    for (const v1::CollisionObject& o : request->objects()) inline_triangles += InlineTriangles(o.parts());
    if (inline_triangles > limits_.max_scene_triangles) {
      return TooManyTriangles(inline_triangles, limits_.max_scene_triangles);
    }
    // The same update of the same parent is the same content: the loaded scene is returned as is,
    // without building it again.
    auto id = UpdateSceneId(parent, *request, files_);
    if (!id.ok()) return ToGrpcStatus(id.error(), ErrorScope::kSceneContent);
    std::shared_ptr<const SceneEntry> entry = registry_->Find(id.value());
    if (entry == nullptr) {
      metrics_->AddSceneBuild();
      auto updated = UpdateScene(parent, *request, files_, id.value());
      if (!updated.ok()) return ToGrpcStatus(updated.error(), ErrorScope::kSceneContent);
      bool created = false;
      if (grpc::Status s = Admit(std::move(updated).value(), &created, &entry); !s.ok()) return s;
    }
    *response->mutable_scene() = entry->info;
    return grpc::Status::OK;
  });
}

grpc::Status ProximityServiceImpl::DeleteScene(grpc::ServerContext* context, const v1::DeleteSceneRequest* request,
                                               v1::DeleteSceneResponse*) {
  return opening_.Serve(context, Rpc::kDeleteScene, request->scene_id(), [&](CallScope&) -> grpc::Status {
    if (!registry_->Erase(request->scene_id())) return SceneNotFound(request->scene_id());
    metrics_->SetScenesLoaded(static_cast<int64_t>(registry_->size()));
    metrics_->SetSceneBytes(registry_->memory_bytes());
    return grpc::Status::OK;
  });
}

// ------------------------------------------------------------------------------------------------
// Queries

grpc::Status ProximityServiceImpl::CheckState(grpc::ServerContext* context, const v1::CheckStateRequest* request,
                                              v1::CheckStateResponse* response) {
  return opening_.ServeScene(context, Rpc::kCheckState, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    // Per-thread scratch: a warm unary CheckState allocates nothing beyond its response.
    thread_local std::vector<double> q;
    thread_local core::SceneCache cache;
    if (core::Status s = ResolveState(scene.robot(), request->state(), "state", &q); !s.ok()) {
      return ToGrpcStatus(s);
    }
    core::StateResult r;
    if (core::Status s = scene.CheckState(q, &cache, &r); !s.ok()) return ToGrpcStatus(s);
    response->set_free(r.free);
    response->set_within_limits(r.within_limits);
    if (!r.free) ToWire(scene, r.contact, response->mutable_contact());
    const Work work = StateWork(r);
    work.ToWire(response->mutable_stats());
    call.record().Count(QueryKind::kClear, 1, work);
    call.record().set_states(1);
    return grpc::Status::OK;
  });
}

grpc::Status ProximityServiceImpl::CheckStates(grpc::ServerContext* context, const v1::CheckStatesRequest* request,
                                               v1::CheckStatesResponse* response) {
  return opening_.ServeScene(context, Rpc::kCheckStates, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    auto rows = ConfigurationRows::Make(scene.robot(), request->states(), "states", limits_.max_batch_states,
                                        "--max-batch-states");
    if (!rows.ok()) return ToGrpcStatus(rows.error());
    const ConfigurationRows& states = rows.value();
    const int64_t n = states.rows();
    call.record().set_states(n);

    response->mutable_free()->Resize(static_cast<int>(n), false);
    response->mutable_within_limits()->Resize(static_cast<int>(n), false);
    bool* free = response->mutable_free()->mutable_data();
    bool* within = response->mutable_within_limits()->mutable_data();

    // Per-call, per-slot scratch and tallies: no sharing between workers inside the loop.
    struct Slot {
      core::SceneCache cache;
      std::vector<double> q;
      Work work;
      int64_t free_count = 0;
      std::vector<std::pair<int64_t, core::StateContact>> contacts;
    };
    std::vector<Slot> slots(static_cast<size_t>(pool_->slots()));
    for (Slot& s : slots) s.q.resize(static_cast<size_t>(scene.dof()));
    CallCancel& cancel = call.cancel();
    const bool contacts = request->include_contacts();
    const BatchOutcome outcome = RunChunked(*pool_, n, cancel, [&](int64_t i, int slot_index) -> core::Status {
      Slot& slot = slots[static_cast<size_t>(slot_index)];
      states.Row(i, slot.q.data());
      core::StateResult r;
      if (core::Status s = scene.CheckState(slot.q, &slot.cache, &r); !s.ok()) {
        return WithField("states: configuration " + std::to_string(i), s.error());
      }
      free[i] = r.free;
      within[i] = r.within_limits;
      slot.free_count += r.free ? 1 : 0;
      slot.work += StateWork(r);
      if (contacts && !r.free) slot.contacts.emplace_back(i, r.contact);
      return {};
    });

    Work work;
    int64_t free_count = 0;
    for (const Slot& s : slots) {
      work += s.work;
      free_count += s.free_count;
    }
    call.record().Count(QueryKind::kClear, work.states, work);
    if (outcome.stopped) {
      response->Clear();
      return cancel.status(std::to_string(outcome.done) + " of " + std::to_string(n) + " states");
    }
    if (outcome.error) {
      response->Clear();
      return ToGrpcStatus(*outcome.error);
    }
    for (const auto& [index, contact] : InIndexOrder(slots, [](const Slot& s) -> const auto& { return s.contacts; })) {
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
    thread_local std::vector<double> q;
    thread_local core::SceneCache cache;
    if (core::Status s = ResolveState(scene.robot(), request->state(), "state", &q); !s.ok()) {
      return ToGrpcStatus(s);
    }
    // The core checks the budget (finite, >= 0) and names the bad field; 0 on the wire means no cap.
    core::SceneDistanceRequest query;
    query.rel_err = request->rel_err();
    query.abs_err = request->abs_err();
    if (request->max_distance() != 0.0) query.max_distance = request->max_distance();
    query.per_pair = request->per_pair();
    query.world = !request->exclude_world();
    query.self = !request->exclude_self();
    CallCancel& cancel = call.cancel();
    query.stop = cancel.interrupt();
    core::SceneDistanceResult r;
    if (core::Status s = scene.ComputeDistance(q, query, &cache, &r); !s.ok()) return ToGrpcStatus(s);
    if (r.stopped) return cancel.status(std::to_string(r.pairs_tested) + " pairs");
    response->set_lower_bound(r.lower_bound);
    response->set_upper_bound(r.upper_bound);
    response->set_beyond_max_distance(r.beyond_max_distance);
    response->set_within_limits(r.within_limits);
    if (r.nearest.pair.link >= 0) ToWire(scene, r.nearest, response->mutable_nearest());
    for (const core::PairDistance& p : r.pairs) ToWire(scene, p, response->add_pairs());
    Work work;
    work.states = 1;
    work.pairs_tested = r.pairs_tested;
    work.distance_queries = r.pairs_tested;
    work.Add(r.stats);
    work.ToWire(response->mutable_stats());
    call.record().Count(QueryKind::kDistance, 1, work);
    call.record().set_states(1);
    return call.FitResponse(response, "leave out per_pair");
  });
}

grpc::Status ProximityServiceImpl::CheckMotion(grpc::ServerContext* context, const v1::CheckMotionRequest* request,
                                               v1::CheckMotionResponse* response) {
  return opening_.ServeScene(context, Rpc::kCheckMotion, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    thread_local std::vector<double> q0, q1;
    thread_local core::SceneCache cache;
    if (core::Status s = ResolveState(scene.robot(), request->start(), "start", &q0); !s.ok()) {
      return ToGrpcStatus(s);
    }
    if (core::Status s = ResolveState(scene.robot(), request->goal(), "goal", &q1); !s.ok()) {
      return ToGrpcStatus(s);
    }
    auto motion = ToMotionRequest(request->mode(), request->resolution(), "");
    if (!motion.ok()) return ToGrpcStatus(motion.error());
    CallCancel& cancel = call.cancel();
    core::MotionRequest query = motion.value();
    query.stop = cancel.interrupt();
    core::MotionResult r;
    if (core::Status s = scene.CheckMotion(q0, q1, query, &cache, &r); !s.ok()) {
      return ToGrpcStatus(s);
    }
    if (r.stopped) {
      call.record().Count(QueryKind::kLink, 0, MotionWork(r));
      return cancel.status(std::to_string(r.states) + " states of the motion");
    }
    ToWire(scene, r, response->mutable_result());
    const Work work = MotionWork(r);
    work.ToWire(response->mutable_stats());
    call.record().Count(QueryKind::kLink, 1, work);
    call.record().set_states(work.states);
    return grpc::Status::OK;
  });
}

grpc::Status ProximityServiceImpl::CheckPath(grpc::ServerContext* context, const v1::CheckPathRequest* request,
                                             v1::CheckPathResponse* response) {
  return opening_.ServeScene(context, Rpc::kCheckPath, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    auto rows = ConfigurationRows::Make(scene.robot(), request->waypoints(), "waypoints", limits_.max_path_waypoints,
                                        "--max-path-waypoints");
    if (!rows.ok()) return ToGrpcStatus(rows.error());
    if (rows.value().rows() < 1) return Invalid("waypoints: a path needs at least one configuration");
    auto motion = ToMotionRequest(request->mode(), request->resolution(), "");
    if (!motion.ok()) return ToGrpcStatus(motion.error());
    const std::vector<double> waypoints = rows.value().All();
    thread_local core::SceneCache cache;
    CallCancel& cancel = call.cancel();
    core::MotionRequest query = motion.value();
    query.stop = cancel.interrupt();
    core::PathResult r;
    if (core::Status s = scene.CheckPath(waypoints, query, &cache, &r); !s.ok()) {
      return ToGrpcStatus(s);
    }
    const Work work = MotionWork(r);
    call.record().Count(QueryKind::kLink, r.segments_checked, work);
    if (r.stopped) return cancel.status("part of the path");
    metrics_->AddQueries(QueryKind::kPath, 1);
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
    std::vector<ConfigurationRows> paths;
    paths.reserve(static_cast<size_t>(request->paths_size()));
    int64_t total = 0;
    for (int i = 0; i < request->paths_size(); ++i) {
      const std::string field = "paths[" + std::to_string(i) + "]";
      auto rows = ConfigurationRows::Make(scene.robot(), request->paths(i), field, limits_.max_path_waypoints,
                                          "--max-path-waypoints");
      if (!rows.ok()) return ToGrpcStatus(rows.error());
      if (rows.value().rows() < 1) return Invalid(field + ": a path needs at least one configuration");
      total += rows.value().rows();
      if (total > limits_.max_batch_states) {
        return ToGrpcStatus(ResourceExhausted(
            "paths: more than " + std::to_string(limits_.max_batch_states) +
            " waypoints in total exceed the server's --max-batch-states; split the request"));
      }
      paths.push_back(std::move(rows).value());
    }
    call.record().set_states(total);

    // The stream's workers keep their caches for the whole stream.
    struct Slot {
      core::SceneCache cache;
      std::vector<double> waypoints;
      Work work;
      int64_t segments = 0;
    };
    std::vector<Slot> slots(static_cast<size_t>(pool_->slots()));
    CallCancel& cancel = call.cancel();
    call.WatchStream();
    core::MotionRequest query = motion.value();
    query.stop = cancel.interrupt();
    const BatchOutcome outcome = StreamResults<v1::ValidatePathsResponse>(
        *pool_, static_cast<int64_t>(paths.size()), cancel,
        [&](int64_t p, int slot_index, v1::ValidatePathsResponse* out) -> core::Result<bool> {
          Slot& slot = slots[static_cast<size_t>(slot_index)];
          const ConfigurationRows& rows = paths[static_cast<size_t>(p)];
          slot.waypoints.resize(static_cast<size_t>(rows.rows() * rows.dof()));
          for (int64_t i = 0; i < rows.rows(); ++i) rows.Row(i, slot.waypoints.data() + i * rows.dof());
          core::PathResult r;
          if (core::Status s = scene.CheckPath(slot.waypoints, query, &slot.cache, &r); !s.ok()) {
            return WithField("paths[" + std::to_string(p) + "]", s.error());
          }
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
          metrics_->AddFailedSend();
          return false;
        });

    Work work;
    int64_t segments = 0;
    for (const Slot& s : slots) {
      work += s.work;
      segments += s.segments;
    }
    metrics_->AddQueries(QueryKind::kLink, segments);
    call.record().Count(QueryKind::kPath, outcome.done, work);
    if (outcome.stopped) {
      return cancel.status(std::to_string(outcome.done) + " of " + std::to_string(paths.size()) + " paths");
    }
    if (outcome.error) return ToGrpcStatus(*outcome.error);
    return grpc::Status::OK;
  });
}

namespace {

// One part of a free-flying body, posed so that the core's body motion (linear translation, slerp
// rotation of the given frame) moves it exactly as the body moves it.
struct BodyPart {
  core::Geometry geometry;
  core::RigidTransform X0, X1;  // the part frame at t = 0 and t = 1
};

core::Result<std::vector<BodyPart>> ToBodyParts(const v1::BodyMotion& body, const core::FileAccess& access) {
  auto X0 = ToRigidTransform(body.start(), "body_motion.start");
  if (!X0.ok()) return X0.error();
  auto X1 = ToRigidTransform(body.goal(), "body_motion.goal");
  if (!X1.ok()) return X1.error();
  if (body.parts_size() == 0) return core::InvalidArgument("body_motion.parts: the body has no parts");
  const bool rotates = X0.value().R != X1.value().R;
  std::vector<BodyPart> parts;
  for (int i = 0; i < body.parts_size(); ++i) {
    const std::string field = "body_motion.parts[" + std::to_string(i) + "]";
    FileReads files{access, {}};
    auto g = ToGeometry(body.parts(i).shape(), field + ".shape", &files);
    if (!g.ok()) return g.error();
    auto X_BP = ToRigidTransform(body.parts(i).pose(), field + ".pose");
    if (!X_BP.ok()) return X_BP.error();
    // Slerp commutes with a fixed rotation on the right, and a fixed offset is exact under pure
    // translation; an offset part of a rotating body would sweep a curve the core's motion is not.
    if (rotates && !X_BP.value().p.isZero()) {
      return core::InvalidArgument(field + ".pose: a part offset from the body origin cannot be checked while the "
                                   "body rotates; give it as a mesh or convex_hull in the body frame, or put the "
                                   "body frame at the part");
    }
    parts.push_back({std::move(g).value(), X0.value() * X_BP.value(), X1.value() * X_BP.value()});
  }
  return parts;
}

}  // namespace

grpc::Status ProximityServiceImpl::TimeOfFirstContact(grpc::ServerContext* context,
                                                      const v1::TimeOfFirstContactRequest* request,
                                                      v1::TimeOfFirstContactResponse* response) {
  return opening_.ServeScene(context, Rpc::kTimeOfFirstContact, request->scene_id(),
                             [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    if (!std::isfinite(request->tolerance()) || request->tolerance() < 0.0) {
      return Invalid("tolerance must be finite and >= 0 (0 means 1e-5)");
    }
    core::ContinuousRequest query;
    if (request->tolerance() > 0.0) query.tolerance = request->tolerance();
    CallCancel& cancel = call.cancel();
    query.stop = cancel.interrupt();
    core::ContinuousResult r;
    switch (request->motion_case()) {
      case v1::TimeOfFirstContactRequest::kJointMotion: {
        thread_local std::vector<double> q0, q1;
        thread_local core::SceneCache cache;
        const v1::JointMotion& m = request->joint_motion();
        if (core::Status s = ResolveState(scene.robot(), m.start(), "joint_motion.start", &q0); !s.ok()) {
          return ToGrpcStatus(s);
        }
        if (core::Status s = ResolveState(scene.robot(), m.goal(), "joint_motion.goal", &q1); !s.ok()) {
          return ToGrpcStatus(s);
        }
        if (core::Status s = scene.TimeOfFirstContact(q0, q1, query, &cache, &r); !s.ok()) {
          return ToGrpcStatus(s);
        }
        break;
      }
      case v1::TimeOfFirstContactRequest::kBodyMotion: {
        auto parts = ToBodyParts(request->body_motion(), files_);
        if (!parts.ok()) return ToGrpcStatus(parts.error());
        // The body's first contact is its earliest part's (a tie keeps the first part).
        bool first = true;
        int32_t iterations = 0;
        int64_t distance_queries = 0;
        core::QueryStats stats;
        for (const BodyPart& part : parts.value()) {
          core::ContinuousResult pr;
          if (core::Status s = scene.TimeOfFirstContact(part.geometry, part.X0, part.X1, query, &pr); !s.ok()) {
            return ToGrpcStatus(s);
          }
          iterations += pr.iterations;
          distance_queries += pr.distance_queries;
          stats += pr.stats;
          if (first || pr.t_contact < r.t_contact) r = pr;
          first = false;
        }
        r.iterations = iterations;
        r.distance_queries = distance_queries;
        r.stats = stats;
        break;
      }
      default:
        return Invalid("motion: give joint_motion or body_motion");
    }
    if (cancel.stopped()) return cancel.status(std::to_string(r.iterations) + " advancement steps");
    response->set_contact(r.contact);
    response->set_t_contact(r.t_contact);
    response->set_clearance(r.clearance);
    response->set_penetrating(r.penetrating);
    response->set_undecided(r.undecided);
    if (r.nearest.pair.link >= 0 || r.nearest.pair.object >= 0) ToWire(scene, r.nearest, response->mutable_nearest());
    response->set_iterations(r.iterations);
    Work work;
    work.distance_queries = r.distance_queries;
    work.Add(r.stats);
    work.ToWire(response->mutable_stats());
    call.record().Count(QueryKind::kCcd, 1, work);
    return grpc::Status::OK;
  });
}

// ------------------------------------------------------------------------------------------------
// Planning

namespace {

// Why `q` is not a valid end of a plan: its first contact, when CLEAR finds one.
std::string InvalidEnd(const core::Scene& scene, std::span<const double> q, const char* what) {
  core::SceneCache cache;
  core::StateResult r;
  if (!scene.CheckState(q, &cache, &r).ok() || r.free) return std::string(what) + " is not a valid state";
  return std::string(what) + " collides: " + r.contact.Name(scene) + " x " + r.contact.OtherName(scene) +
         (r.contact.self ? " (self)" : " (world)");
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

}  // namespace

grpc::Status ProximityServiceImpl::Plan(grpc::ServerContext* context, const v1::PlanRequest* request,
                                        v1::PlanResponse* response) {
  return opening_.ServeScene(context, Rpc::kPlan, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    const core::RobotModel& robot = scene.robot();
    std::vector<double> start, goal;
    if (core::Status s = ResolveState(robot, request->start(), "start", &start); !s.ok()) {
      return ToGrpcStatus(s);
    }
    if (core::Status s = ResolveState(robot, request->goal(), "goal", &goal); !s.ok()) {
      return ToGrpcStatus(s);
    }
    // Ends outside the joint limits are malformed requests (the planner's space is bounded by them).
    if (core::Status s = robot.CheckLimits(start); !s.ok()) {
      return ToGrpcStatus(WithField("start", s.error()));
    }
    if (core::Status s = robot.CheckLimits(goal); !s.ok()) {
      return ToGrpcStatus(WithField("goal", s.error()));
    }
    auto settings = ToPlanSettings(*request, limits_.max_plan_seconds, "--max-plan-seconds");
    if (!settings.ok()) return ToGrpcStatus(settings.error());
    const PlanSettings& plan = settings.value();

    // Certified edges are certified lazily: trees grow on quick sampled checks and candidate paths are
    // certified. Discrete mode samples every edge at the requested resolution, as OMPL does.
    const bool certified = plan.motion.mode == core::MotionRequest::Mode::kCertified;
    // Every motion check asks the call's stop condition, so a cancelled or expired call ends within one
    // check's poll interval even inside a long edge.
    CallCancel& cancel = call.cancel();
    const planners::ScenePlanning lazy(call.entry().scene, planners::ScenePlanning::kDefaultQuickResolution,
                                       planners::ScenePlanning::kDefaultShortcutClearance, cancel.interrupt());
    core::MotionRequest discrete_request = plan.motion;
    discrete_request.stop = cancel.interrupt();
    const planners::SceneMotionValidator discrete(call.entry().scene, discrete_request);
    planners::PlanningContext planning = lazy.context();
    if (!certified) {
      // Edges (and the simplifier's shortcuts) span at most the joint space's extent: refuse up front a
      // resolution that would sample more than the core's cap on one of them.
      const double steps = planning.space.MaxExtent() / plan.motion.resolution;
      if (!(steps <= core::kMaxMotionSteps)) {
        return Invalid("resolution " + core::FormatNumber(plan.motion.resolution) + " would sample up to " +
                       core::FormatNumber(std::ceil(steps)) + " states on an edge; at most " +
                       core::FormatNumber(core::kMaxMotionSteps) + " are allowed per edge");
      }
      planning.motion = &discrete;
      planning.quick_motion = nullptr;
    }
    const planners::SceneStateValidity& state_validity = lazy.state();
    planners::Termination termination;
    termination.time_limit_s = plan.time_limit_s;
    termination.max_iterations = plan.max_iterations;
    termination.stop = [&cancel] { return cancel.Stopped(); };
    auto planned = planners::Plan(planning, start, goal, plan.options, termination);

    // The checks the planner made count as CLEAR and LINK queries, whatever the outcome.
    Work work;
    const int64_t link_checks = lazy.certified().checks() + lazy.quick().checks() + discrete.checks();
    work.states = state_validity.checks() + lazy.certified().states() + lazy.quick().states() + discrete.states();
    call.record().Count(QueryKind::kClear, state_validity.checks(), work);
    metrics_->AddQueries(QueryKind::kLink, link_checks);
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
    ToWire(planning.space, robot, r.path, response->mutable_path());
    switch (r.outcome) {
      case planners::PlanOutcome::kSolved:
        call.record().set_field("waypoints", static_cast<int64_t>(r.path.size()));
        call.record().set_field("length", r.stats.length);
        break;
      case planners::PlanOutcome::kInvalidStart:
        response->set_message(InvalidEnd(scene, start, "start"));
        break;
      case planners::PlanOutcome::kInvalidGoal:
        response->set_message(InvalidEnd(scene, goal, "goal"));
        break;
      case planners::PlanOutcome::kTimeout:
        response->set_message("no path within the time limit of " + Seconds(plan.time_limit_s) + " (" +
                              std::to_string(r.stats.iterations) + " iterations)");
        break;
      case planners::PlanOutcome::kIterationLimit:
        response->set_message("no path within max_iterations = " + std::to_string(plan.max_iterations));
        break;
      case planners::PlanOutcome::kCancelled:
        break;
    }
    return grpc::Status::OK;
  });
}

}  // namespace proximity::server
