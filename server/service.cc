#include "server/service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "proximity/planners/scene_validity.h"
#include "server/batch.h"
#include "server/errors.h"
#include "server/log.h"

namespace proximity::server {

namespace {

using Clock = std::chrono::steady_clock;

// Failed calls are logged at most kRate lines a second on average (bursts of kBurst): a client sending
// bad requests in a loop cannot flood the log. Left-out lines are counted in the metrics and the next
// line logged says how many it stands for.
class FailureLogLimiter {
 public:
  static constexpr double kRate = 20.0;
  static constexpr double kBurst = 50.0;

  /// Whether a failed call may be logged now; *suppressed receives the lines left out since the last.
  bool Allow(int64_t* suppressed) {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    tokens_ = std::min(kBurst, tokens_ + kRate * std::chrono::duration<double>(now - last_).count());
    last_ = now;
    if (tokens_ < 1.0) {
      ++suppressed_;
      *suppressed = 0;
      return false;
    }
    tokens_ -= 1.0;
    *suppressed = suppressed_;
    suppressed_ = 0;
    return true;
  }

 private:
  std::mutex mutex_;
  double tokens_ = kBurst;
  Clock::time_point last_ = Clock::now();
  int64_t suppressed_ = 0;
};

FailureLogLimiter& FailureLog() {
  static FailureLogLimiter limiter;
  return limiter;
}

// Records one call in the metrics and the log when it goes out of scope, whatever path the handler
// took: every RPC, including failures, is counted exactly once.
class CallRecorder {
 public:
  /// `scene_id` names the scene the call is about, when it names one (it must outlive the recorder:
  /// a field of the request).
  CallRecorder(Metrics* metrics, Rpc rpc, std::string_view scene_id = {})
      : metrics_(metrics), rpc_(rpc), start_(Clock::now()), scene_id_(scene_id) {
    metrics_->Started(rpc);
  }
  CallRecorder(const CallRecorder&) = delete;
  CallRecorder& operator=(const CallRecorder&) = delete;

  ~CallRecorder() {
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    metrics_->Handled(rpc_, status_.error_code(), seconds);
    const spdlog::level::level_enum level = Level();
    if (!LogEnabled(level)) return;
    int64_t suppressed = 0;
    if (!status_.ok()) {
      if (!FailureLog().Allow(&suppressed)) {
        metrics_->AddSuppressedLogs(1);
        return;
      }
    }
    nlohmann::json fields = {{"rpc", RpcName(rpc_)},
                             {"code", GrpcCodeName(status_.error_code())},
                             {"latency_ms", seconds * 1e3}};
    if (suppressed > 0) fields["suppressed_before"] = suppressed;
    if (!scene_id_.empty()) fields["scene_id"] = Bounded(scene_id_, kMaxQuotedBytes);
    if (states_ >= 0) fields["states"] = states_;
    for (auto& [key, value] : extra_.items()) fields[key] = value;
    if (!status_.ok()) fields["error"] = Bounded(status_.error_message(), kMaxMessageBytes);
    LogEvent(level, status_.ok() ? "rpc done" : "rpc failed", fields);
  }

  /// Counts the call's queries and work in the metrics.
  void Count(QueryKind kind, int64_t queries, const Work& work) {
    metrics_->AddQueries(kind, queries);
    metrics_->AddWork(work.states, work.distance_queries, work.bv_tests, work.triangle_tests);
  }

  /// Notes the call's outcome and passes it through: `return rec.Finish(...)`.
  grpc::Status Finish(grpc::Status status) {
    status_ = status;
    return status;
  }
  void set_scene_id(std::string_view id) { scene_id_ = id; }
  void set_states(int64_t n) { states_ = n; }
  /// Adds a field to the call's log line.
  void set_field(const char* key, nlohmann::json value) { extra_[key] = std::move(value); }

 private:
  spdlog::level::level_enum Level() const {
    if (status_.ok()) {
      return (rpc_ == Rpc::kCreateScene || rpc_ == Rpc::kUpdateWorld || rpc_ == Rpc::kDeleteScene ||
              rpc_ == Rpc::kPlan)
                 ? spdlog::level::info
                 : spdlog::level::debug;
    }
    return IsServerFault(status_.error_code()) ? spdlog::level::err : spdlog::level::info;
  }

  Metrics* metrics_;
  Rpc rpc_;
  Clock::time_point start_;
  // UNKNOWN until Finish: a handler that leaves without Finish is a bug and shows up as such.
  grpc::Status status_ = NoStatus();
  std::string_view scene_id_;  // points into the request, which outlives the recorder
  int64_t states_ = -1;
  nlohmann::json extra_ = nlohmann::json::object();
};

// Whether a call should stop: the client cancelled it, its deadline passed, the server's
// --max-call-seconds ran out, or the server is shutting down (which cancels every call once the drain
// time is over). Cheap enough to ask between states (a clock read; the context itself at most once a
// millisecond), and safe from workers. As a callable it is the core queries' Interrupt.
class CallCancel {
 public:
  CallCancel(grpc::ServerContext* context, double max_seconds)
      : context_(context),
        deadline_(std::min(context->deadline(),
                           std::chrono::system_clock::now() +
                               std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                   std::chrono::duration<double>(max_seconds)))) {}
  bool operator()() { return Stopped(); }
  core::Interrupt interrupt() { return core::Interrupt(*this); }

  bool Stopped() {
    if (stopped_.load(std::memory_order_relaxed)) return true;
    const auto now = std::chrono::system_clock::now();
    if (now >= deadline_) return Stop();
    const int64_t t = now.time_since_epoch().count();
    if (t >= next_poll_.load(std::memory_order_relaxed)) {
      std::unique_lock lock(mutex_, std::try_to_lock);
      if (lock.owns_lock()) {
        next_poll_.store(t + kPollInterval, std::memory_order_relaxed);
        if (context_->IsCancelled()) return Stop();
      }
    }
    return false;
  }
  bool Stop() {
    stopped_.store(true, std::memory_order_relaxed);
    return true;
  }
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }

  /// When the call must end (the client's deadline or --max-call-seconds, whichever is first).
  std::chrono::system_clock::time_point deadline() const { return deadline_; }

  /// CANCELLED or DEADLINE_EXCEEDED, saying how far the call got. The client's own deadline timer may
  /// cancel the call a moment before the server's clock passes the deadline: a cancellation that close
  /// to it is the deadline's.
  grpc::Status status(const std::string& progress) const {
    return CallStopped(std::chrono::system_clock::now() + std::chrono::milliseconds(50) >= deadline_, progress);
  }

 private:
  grpc::ServerContext* context_;
  std::chrono::system_clock::time_point deadline_;
  static constexpr int64_t kPollInterval =
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::milliseconds(1)).count();

  std::atomic<bool> stopped_{false};
  std::atomic<int64_t> next_poll_{0};
  std::mutex mutex_;  // one poller of the context at a time
};

// Ends a streaming call at its deadline even while a Write is blocked on a client that stopped reading:
// a synchronous Write returns only once flow control lets it, so the handler cannot notice the
// deadline itself. TryCancel makes the blocked Write return false.
class StreamWatchdog {
 public:
  StreamWatchdog(grpc::ServerContext* context, std::chrono::system_clock::time_point deadline)
      : thread_([this, context, deadline] {
          std::unique_lock lock(mutex_);
          if (!done_cv_.wait_until(lock, deadline, [this] { return done_; })) context->TryCancel();
        }) {}
  StreamWatchdog(const StreamWatchdog&) = delete;
  StreamWatchdog& operator=(const StreamWatchdog&) = delete;
  ~StreamWatchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

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
      auth_token_(std::move(auth_token)) {}

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

namespace {
// Equal strings, in time that depends on their lengths only (not on where they differ).
bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    diff |= static_cast<unsigned char>((i < a.size() ? a[i] : 0) ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}
}  // namespace

grpc::Status ProximityServiceImpl::Authorize(grpc::ServerContext* context) const {
  if (auth_token_.empty()) return grpc::Status::OK;
  const auto& metadata = context->client_metadata();
  const auto it = metadata.find("authorization");
  const std::string_view given = it == metadata.end() ? std::string_view() : std::string_view(it->second.data(), it->second.size());
  if (!ConstantTimeEqual(given, "Bearer " + auth_token_)) {
    return Unauthenticated();
  }
  return grpc::Status::OK;
}

grpc::Status ProximityServiceImpl::CheckResponseSize(const google::protobuf::Message& response, const char* advice) {
  const auto bytes = static_cast<int64_t>(response.ByteSizeLong());
  if (limits_.max_response_bytes <= 0 || bytes <= limits_.max_response_bytes) return grpc::Status::OK;
  metrics_->AddOversizeResponse();
  return ResponseTooLarge(bytes, limits_.max_response_bytes, advice);
}

grpc::Status ProximityServiceImpl::CreateScene(grpc::ServerContext* context, const v1::CreateSceneRequest* request,
                                               v1::CreateSceneResponse* response) {
  CallRecorder rec(metrics_, Rpc::kCreateScene);
  if (grpc::Status s = Authorize(context); !s.ok()) return rec.Finish(s);
  // Cheap limits first: inline meshes are counted before any file is read or anything built.
  int64_t inline_triangles = 0;
  for (const v1::CollisionObject& o : request->objects()) inline_triangles += InlineTriangles(o.parts());
  for (const v1::AttachedObject& a : request->attached_objects()) inline_triangles += InlineTriangles(a.parts());
  if (inline_triangles > limits_.max_scene_triangles) {
    return rec.Finish(TooManyTriangles(inline_triangles, limits_.max_scene_triangles));
  }
  // The content id first: a scene already loaded is returned without building it again.
  auto id = CreateSceneId(*request, files_);
  if (!id.ok()) return rec.Finish(ToGrpcStatus(id.error(), ErrorScope::kSceneContent));
  std::shared_ptr<const SceneEntry> entry = registry_->Find(id.value());
  bool created = false;
  if (entry == nullptr) {
    metrics_->AddSceneBuild();
    auto built = BuildScene(*request, files_, id.value());
    if (!built.ok()) return rec.Finish(ToGrpcStatus(built.error(), ErrorScope::kSceneContent));
    if (grpc::Status s = Admit(std::move(built).value(), &created, &entry); !s.ok()) return rec.Finish(s);
  }
  rec.set_scene_id(entry->id);
  *response->mutable_scene() = entry->info;
  response->set_created(created);
  return rec.Finish(grpc::Status::OK);
}

grpc::Status ProximityServiceImpl::GetScene(grpc::ServerContext* context, const v1::GetSceneRequest* request,
                                            v1::GetSceneResponse* response) {
  CallRecorder rec(metrics_, Rpc::kGetScene, request->scene_id());
  if (grpc::Status s = Authorize(context); !s.ok()) return rec.Finish(s);
  const auto entry = registry_->Find(request->scene_id());
  if (entry == nullptr) return rec.Finish(SceneNotFound(request->scene_id()));
  *response->mutable_scene() = entry->info;
  return rec.Finish(grpc::Status::OK);
}

grpc::Status ProximityServiceImpl::ListScenes(grpc::ServerContext* context, const v1::ListScenesRequest* request,
                                              v1::ListScenesResponse* response) {
  CallRecorder rec(metrics_, Rpc::kListScenes);
  if (grpc::Status s = Authorize(context); !s.ok()) return rec.Finish(s);
  if (request->page_size() < 0) return rec.Finish(Invalid("page_size must be >= 0 (0: the server's page size)"));
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
  return rec.Finish(grpc::Status::OK);
}

grpc::Status ProximityServiceImpl::UpdateWorld(grpc::ServerContext* context, const v1::UpdateWorldRequest* request,
                                               v1::UpdateWorldResponse* response) {
  CallRecorder rec(metrics_, Rpc::kUpdateWorld, request->scene_id());
  if (grpc::Status s = Authorize(context); !s.ok()) return rec.Finish(s);
  const auto parent = registry_->Find(request->scene_id());
  if (parent == nullptr) return rec.Finish(SceneNotFound(request->scene_id()));
  int64_t inline_triangles = static_cast<int64_t>(parent->info.triangles());
  for (const v1::CollisionObject& o : request->objects()) inline_triangles += InlineTriangles(o.parts());
  if (inline_triangles > limits_.max_scene_triangles) {
    return rec.Finish(TooManyTriangles(inline_triangles, limits_.max_scene_triangles));
  }
  // The same update of the same parent is the same content: the loaded scene is returned as is,
  // without building it again.
  auto id = UpdateSceneId(*parent, *request, files_);
  if (!id.ok()) return rec.Finish(ToGrpcStatus(id.error(), ErrorScope::kSceneContent));
  std::shared_ptr<const SceneEntry> entry = registry_->Find(id.value());
  if (entry == nullptr) {
    metrics_->AddSceneBuild();
    auto updated = UpdateScene(*parent, *request, files_, id.value());
    if (!updated.ok()) return rec.Finish(ToGrpcStatus(updated.error(), ErrorScope::kSceneContent));
    bool created = false;
    if (grpc::Status s = Admit(std::move(updated).value(), &created, &entry); !s.ok()) return rec.Finish(s);
  }
  *response->mutable_scene() = entry->info;
  return rec.Finish(grpc::Status::OK);
}

grpc::Status ProximityServiceImpl::DeleteScene(grpc::ServerContext* context, const v1::DeleteSceneRequest* request,
                                               v1::DeleteSceneResponse*) {
  CallRecorder rec(metrics_, Rpc::kDeleteScene, request->scene_id());
  if (grpc::Status s = Authorize(context); !s.ok()) return rec.Finish(s);
  if (!registry_->Erase(request->scene_id())) return rec.Finish(SceneNotFound(request->scene_id()));
  metrics_->SetScenesLoaded(static_cast<int64_t>(registry_->size()));
  metrics_->SetSceneBytes(registry_->memory_bytes());
  return rec.Finish(grpc::Status::OK);
}

// ------------------------------------------------------------------------------------------------
// Queries

grpc::Status ProximityServiceImpl::CheckState(grpc::ServerContext* context, const v1::CheckStateRequest* request,
                                              v1::CheckStateResponse* response) {
  CallRecorder rec(metrics_, Rpc::kCheckState, request->scene_id());
  if (grpc::Status s = Authorize(context); !s.ok()) return rec.Finish(s);
  const auto entry = registry_->Find(request->scene_id());
  if (entry == nullptr) return rec.Finish(SceneNotFound(request->scene_id()));
  const core::Scene& scene = *entry->scene;
  // Per-thread scratch: a warm unary CheckState allocates nothing beyond its response.
  thread_local std::vector<double> q;
  thread_local core::SceneCache cache;
  if (core::Status s = ResolveState(scene.robot(), request->state(), "state", &q); !s.ok()) {
    return rec.Finish(ToGrpcStatus(s));
  }
  core::StateResult r;
  if (core::Status s = scene.CheckState(q, &cache, &r); !s.ok()) return rec.Finish(ToGrpcStatus(s));
  response->set_free(r.free);
  response->set_within_limits(r.within_limits);
  if (!r.free) ToWire(scene, r.contact, response->mutable_contact());
  const Work work = StateWork(r);
  work.ToWire(response->mutable_stats());
  rec.Count(QueryKind::kClear, 1, work);
  rec.set_states(1);
  return rec.Finish(grpc::Status::OK);
}

grpc::Status ProximityServiceImpl::CheckStates(grpc::ServerContext* context, const v1::CheckStatesRequest* request,
                                               v1::CheckStatesResponse* response) {
  CallRecorder rec(metrics_, Rpc::kCheckStates, request->scene_id());
  if (grpc::Status s = Authorize(context); !s.ok()) return rec.Finish(s);
  const auto entry = registry_->Find(request->scene_id());
  if (entry == nullptr) return rec.Finish(SceneNotFound(request->scene_id()));
  const core::Scene& scene = *entry->scene;
  auto rows = ConfigurationRows::Make(scene.robot(), request->states(), "states", limits_.max_batch_states,
                                      "--max-batch-states");
  if (!rows.ok()) return rec.Finish(ToGrpcStatus(rows.error()));
  const ConfigurationRows& states = rows.value();
  const int64_t n = states.rows();
  rec.set_states(n);

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
  CallCancel cancel(context, limits_.max_call_seconds);
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
  rec.Count(QueryKind::kClear, work.states, work);
  if (outcome.stopped) {
    response->Clear();
    return rec.Finish(cancel.status(std::to_string(outcome.done) + " of " + std::to_string(n) + " states"));
  }
  if (outcome.error) {
    response->Clear();
    return rec.Finish(ToGrpcStatus(*outcome.error));
  }
  for (const auto& [index, contact] : InIndexOrder(slots, [](const Slot& s) -> const auto& { return s.contacts; })) {
    v1::StateContact* out = response->add_contacts();
    out->set_index(static_cast<uint32_t>(index));
    ToWire(scene, contact, out->mutable_contact());
  }
  response->set_free_count(static_cast<uint32_t>(free_count));
  work.ToWire(response->mutable_stats());
  if (grpc::Status s = CheckResponseSize(*response, "split the batch or leave out contacts"); !s.ok()) {
    response->Clear();
    return rec.Finish(s);
  }
  return rec.Finish(grpc::Status::OK);
}

grpc::Status ProximityServiceImpl::ComputeDistance(grpc::ServerContext* context,
                                                   const v1::ComputeDistanceRequest* request,
                                                   v1::ComputeDistanceResponse* response) {
  CallRecorder rec(metrics_, Rpc::kComputeDistance, request->scene_id());
  if (grpc::Status s = Authorize(context); !s.ok()) return rec.Finish(s);
  const auto entry = registry_->Find(request->scene_id());
  if (entry == nullptr) return rec.Finish(SceneNotFound(request->scene_id()));
  const core::Scene& scene = *entry->scene;
  thread_local std::vector<double> q;
  thread_local core::SceneCache cache;
  if (core::Status s = ResolveState(scene.robot(), request->state(), "state", &q); !s.ok()) {
    return rec.Finish(ToGrpcStatus(s));
  }
  // The core checks the budget (finite, >= 0) and names the bad field; 0 on the wire means no cap.
  core::SceneDistanceRequest query;
  query.rel_err = request->rel_err();
  query.abs_err = request->abs_err();
  if (request->max_distance() != 0.0) query.max_distance = request->max_distance();
  query.per_pair = request->per_pair();
  query.world = !request->exclude_world();
  query.self = !request->exclude_self();
  CallCancel cancel(context, limits_.max_call_seconds);
  query.stop = cancel.interrupt();
  core::SceneDistanceResult r;
  if (core::Status s = scene.ComputeDistance(q, query, &cache, &r); !s.ok()) return rec.Finish(ToGrpcStatus(s));
  if (r.stopped) return rec.Finish(cancel.status(std::to_string(r.pairs_tested) + " pairs"));
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
  rec.Count(QueryKind::kDistance, 1, work);
  rec.set_states(1);
  if (grpc::Status s = CheckResponseSize(*response, "leave out per_pair"); !s.ok()) {
    response->Clear();
    return rec.Finish(s);
  }
  return rec.Finish(grpc::Status::OK);
}

grpc::Status ProximityServiceImpl::CheckMotion(grpc::ServerContext* context, const v1::CheckMotionRequest* request,
                                               v1::CheckMotionResponse* response) {
  CallRecorder rec(metrics_, Rpc::kCheckMotion, request->scene_id());
  if (grpc::Status s = Authorize(context); !s.ok()) return rec.Finish(s);
  const auto entry = registry_->Find(request->scene_id());
  if (entry == nullptr) return rec.Finish(SceneNotFound(request->scene_id()));
  const core::Scene& scene = *entry->scene;
  thread_local std::vector<double> q0, q1;
  thread_local core::SceneCache cache;
  if (core::Status s = ResolveState(scene.robot(), request->start(), "start", &q0); !s.ok()) {
    return rec.Finish(ToGrpcStatus(s));
  }
  if (core::Status s = ResolveState(scene.robot(), request->goal(), "goal", &q1); !s.ok()) {
    return rec.Finish(ToGrpcStatus(s));
  }
  auto motion = ToMotionRequest(request->mode(), request->resolution(), "");
  if (!motion.ok()) return rec.Finish(ToGrpcStatus(motion.error()));
  CallCancel cancel(context, limits_.max_call_seconds);
  core::MotionRequest query = motion.value();
  query.stop = cancel.interrupt();
  core::MotionResult r;
  if (core::Status s = scene.CheckMotion(q0, q1, query, &cache, &r); !s.ok()) {
    return rec.Finish(ToGrpcStatus(s));
  }
  if (r.stopped) {
    rec.Count(QueryKind::kLink, 0, MotionWork(r));
    return rec.Finish(cancel.status(std::to_string(r.states) + " states of the motion"));
  }
  ToWire(scene, r, response->mutable_result());
  const Work work = MotionWork(r);
  work.ToWire(response->mutable_stats());
  rec.Count(QueryKind::kLink, 1, work);
  rec.set_states(work.states);
  return rec.Finish(grpc::Status::OK);
}

grpc::Status ProximityServiceImpl::CheckPath(grpc::ServerContext* context, const v1::CheckPathRequest* request,
                                             v1::CheckPathResponse* response) {
  CallRecorder rec(metrics_, Rpc::kCheckPath, request->scene_id());
  if (grpc::Status s = Authorize(context); !s.ok()) return rec.Finish(s);
  const auto entry = registry_->Find(request->scene_id());
  if (entry == nullptr) return rec.Finish(SceneNotFound(request->scene_id()));
  const core::Scene& scene = *entry->scene;
  auto rows = ConfigurationRows::Make(scene.robot(), request->waypoints(), "waypoints", limits_.max_path_waypoints,
                                      "--max-path-waypoints");
  if (!rows.ok()) return rec.Finish(ToGrpcStatus(rows.error()));
  if (rows.value().rows() < 1) return rec.Finish(Invalid("waypoints: a path needs at least one configuration"));
  auto motion = ToMotionRequest(request->mode(), request->resolution(), "");
  if (!motion.ok()) return rec.Finish(ToGrpcStatus(motion.error()));
  const std::vector<double> waypoints = rows.value().All();
  thread_local core::SceneCache cache;
  CallCancel cancel(context, limits_.max_call_seconds);
  core::MotionRequest query = motion.value();
  query.stop = cancel.interrupt();
  core::PathResult r;
  if (core::Status s = scene.CheckPath(waypoints, query, &cache, &r); !s.ok()) {
    return rec.Finish(ToGrpcStatus(s));
  }
  const Work work = MotionWork(r);
  rec.Count(QueryKind::kLink, r.segments_checked, work);
  if (r.stopped) return rec.Finish(cancel.status("part of the path"));
  metrics_->AddQueries(QueryKind::kPath, 1);
  ToWire(scene, r, response->mutable_result());
  work.ToWire(response->mutable_stats());
  rec.set_states(work.states);
  return rec.Finish(grpc::Status::OK);
}

grpc::Status ProximityServiceImpl::ValidatePaths(grpc::ServerContext* context, const v1::ValidatePathsRequest* request,
                                                 grpc::ServerWriter<v1::ValidatePathsResponse>* writer) {
  CallRecorder rec(metrics_, Rpc::kValidatePaths, request->scene_id());
  if (grpc::Status s = Authorize(context); !s.ok()) return rec.Finish(s);
  const auto entry = registry_->Find(request->scene_id());
  if (entry == nullptr) return rec.Finish(SceneNotFound(request->scene_id()));
  const core::Scene& scene = *entry->scene;
  auto motion = ToMotionRequest(request->mode(), request->resolution(), "");
  if (!motion.ok()) return rec.Finish(ToGrpcStatus(motion.error()));
  // Every path is checked before the first result goes out: a bad request streams nothing.
  std::vector<ConfigurationRows> paths;
  paths.reserve(static_cast<size_t>(request->paths_size()));
  int64_t total = 0;
  for (int i = 0; i < request->paths_size(); ++i) {
    const std::string field = "paths[" + std::to_string(i) + "]";
    auto rows = ConfigurationRows::Make(scene.robot(), request->paths(i), field, limits_.max_path_waypoints,
                                        "--max-path-waypoints");
    if (!rows.ok()) return rec.Finish(ToGrpcStatus(rows.error()));
    if (rows.value().rows() < 1) return rec.Finish(Invalid(field + ": a path needs at least one configuration"));
    total += rows.value().rows();
    if (total > limits_.max_batch_states) {
      return rec.Finish(ToGrpcStatus(ResourceExhausted(
          "paths: more than " + std::to_string(limits_.max_batch_states) +
          " waypoints in total exceed the server's --max-batch-states; split the request")));
    }
    paths.push_back(std::move(rows).value());
  }
  rec.set_states(total);

  // The stream's workers keep their caches for the whole stream.
  struct Slot {
    core::SceneCache cache;
    std::vector<double> waypoints;
    Work work;
    int64_t segments = 0;
  };
  std::vector<Slot> slots(static_cast<size_t>(pool_->slots()));
  CallCancel cancel(context, limits_.max_call_seconds);
  const StreamWatchdog watchdog(context, cancel.deadline());
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
  rec.Count(QueryKind::kPath, outcome.done, work);
  if (outcome.stopped) {
    return rec.Finish(cancel.status(std::to_string(outcome.done) + " of " + std::to_string(paths.size()) + " paths"));
  }
  if (outcome.error) return rec.Finish(ToGrpcStatus(*outcome.error));
  return rec.Finish(grpc::Status::OK);
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
  CallRecorder rec(metrics_, Rpc::kTimeOfFirstContact, request->scene_id());
  if (grpc::Status s = Authorize(context); !s.ok()) return rec.Finish(s);
  const auto entry = registry_->Find(request->scene_id());
  if (entry == nullptr) return rec.Finish(SceneNotFound(request->scene_id()));
  const core::Scene& scene = *entry->scene;
  if (!std::isfinite(request->tolerance()) || request->tolerance() < 0.0) {
    return rec.Finish(Invalid("tolerance must be finite and >= 0 (0 means 1e-5)"));
  }
  core::ContinuousRequest query;
  if (request->tolerance() > 0.0) query.tolerance = request->tolerance();
  CallCancel cancel(context, limits_.max_call_seconds);
  query.stop = cancel.interrupt();
  core::ContinuousResult r;
  switch (request->motion_case()) {
    case v1::TimeOfFirstContactRequest::kJointMotion: {
      thread_local std::vector<double> q0, q1;
      thread_local core::SceneCache cache;
      const v1::JointMotion& m = request->joint_motion();
      if (core::Status s = ResolveState(scene.robot(), m.start(), "joint_motion.start", &q0); !s.ok()) {
        return rec.Finish(ToGrpcStatus(s));
      }
      if (core::Status s = ResolveState(scene.robot(), m.goal(), "joint_motion.goal", &q1); !s.ok()) {
        return rec.Finish(ToGrpcStatus(s));
      }
      if (core::Status s = scene.TimeOfFirstContact(q0, q1, query, &cache, &r); !s.ok()) {
        return rec.Finish(ToGrpcStatus(s));
      }
      break;
    }
    case v1::TimeOfFirstContactRequest::kBodyMotion: {
      auto parts = ToBodyParts(request->body_motion(), files_);
      if (!parts.ok()) return rec.Finish(ToGrpcStatus(parts.error()));
      // The body's first contact is its earliest part's (a tie keeps the first part).
      bool first = true;
      int32_t iterations = 0;
      int64_t distance_queries = 0;
      core::QueryStats stats;
      for (const BodyPart& part : parts.value()) {
        core::ContinuousResult pr;
        if (core::Status s = scene.TimeOfFirstContact(part.geometry, part.X0, part.X1, query, &pr); !s.ok()) {
          return rec.Finish(ToGrpcStatus(s));
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
      return rec.Finish(Invalid("motion: give joint_motion or body_motion"));
  }
  if (cancel.stopped()) return rec.Finish(cancel.status(std::to_string(r.iterations) + " advancement steps"));
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
  rec.Count(QueryKind::kCcd, 1, work);
  return rec.Finish(grpc::Status::OK);
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
  CallRecorder rec(metrics_, Rpc::kPlan, request->scene_id());
  if (grpc::Status s = Authorize(context); !s.ok()) return rec.Finish(s);
  const auto entry = registry_->Find(request->scene_id());
  if (entry == nullptr) return rec.Finish(SceneNotFound(request->scene_id()));
  const core::Scene& scene = *entry->scene;
  const core::RobotModel& robot = scene.robot();
  std::vector<double> start, goal;
  if (core::Status s = ResolveState(robot, request->start(), "start", &start); !s.ok()) {
    return rec.Finish(ToGrpcStatus(s));
  }
  if (core::Status s = ResolveState(robot, request->goal(), "goal", &goal); !s.ok()) {
    return rec.Finish(ToGrpcStatus(s));
  }
  // Ends outside the joint limits are malformed requests (the planner's space is bounded by them).
  if (core::Status s = robot.CheckLimits(start); !s.ok()) {
    return rec.Finish(ToGrpcStatus(WithField("start", s.error())));
  }
  if (core::Status s = robot.CheckLimits(goal); !s.ok()) {
    return rec.Finish(ToGrpcStatus(WithField("goal", s.error())));
  }
  auto settings = ToPlanSettings(*request, limits_.max_plan_seconds, "--max-plan-seconds");
  if (!settings.ok()) return rec.Finish(ToGrpcStatus(settings.error()));
  const PlanSettings& plan = settings.value();

  // Certified edges are certified lazily: trees grow on quick sampled checks and candidate paths are
  // certified. Discrete mode samples every edge at the requested resolution, as OMPL does.
  const bool certified = plan.motion.mode == core::MotionRequest::Mode::kCertified;
  // Every motion check asks the call's stop condition, so a cancelled or expired call ends within one
  // check's poll interval even inside a long edge.
  CallCancel cancel(context, limits_.max_call_seconds);
  const planners::ScenePlanning lazy(entry->scene, planners::ScenePlanning::kDefaultQuickResolution,
                                     planners::ScenePlanning::kDefaultShortcutClearance, cancel.interrupt());
  core::MotionRequest discrete_request = plan.motion;
  discrete_request.stop = cancel.interrupt();
  const planners::SceneMotionValidator discrete(entry->scene, discrete_request);
  planners::PlanningContext planning = lazy.context();
  if (!certified) {
    // Edges (and the simplifier's shortcuts) span at most the joint space's extent: refuse up front a
    // resolution that would sample more than the core's cap on one of them.
    const double steps = planning.space.MaxExtent() / plan.motion.resolution;
    if (!(steps <= core::kMaxMotionSteps)) {
      return rec.Finish(Invalid("resolution " + core::FormatNumber(plan.motion.resolution) + " would sample up to " +
                                core::FormatNumber(std::ceil(steps)) + " states on an edge; at most " +
                                core::FormatNumber(core::kMaxMotionSteps) + " are allowed per edge"));
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
  rec.Count(QueryKind::kClear, state_validity.checks(), work);
  metrics_->AddQueries(QueryKind::kLink, link_checks);
  rec.set_states(work.states);
  rec.set_field("planner", planners::PlannerTypeName(plan.options.type));
  if (!planned.ok()) return rec.Finish(ToGrpcStatus(planned.error()));
  const planners::PlanResult& r = planned.value();
  rec.set_field("outcome", planners::PlanOutcomeName(r.outcome));
  rec.set_field("iterations", r.stats.iterations);
  if (r.outcome == planners::PlanOutcome::kCancelled || (r.outcome != planners::PlanOutcome::kSolved && cancel.stopped())) {
    return rec.Finish(cancel.status(std::to_string(r.stats.iterations) + " planner iterations"));
  }
  metrics_->AddQueries(QueryKind::kPlan, 1);
  response->set_outcome(ToWire(r.outcome));
  response->set_planner(ToWire(plan.options.type));
  ToWire(r.stats, response->mutable_stats());
  ToWire(planning.space, robot, r.path, response->mutable_path());
  switch (r.outcome) {
    case planners::PlanOutcome::kSolved:
      rec.set_field("waypoints", static_cast<int64_t>(r.path.size()));
      rec.set_field("length", r.stats.length);
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
  return rec.Finish(grpc::Status::OK);
}

}  // namespace proximity::server
