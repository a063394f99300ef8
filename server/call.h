#pragma once
/// @file
/// What every call of the service shares, written once. A handler runs inside Opening::Serve (or
/// ServeScene), which counts and logs the call however it ends (CallRecorder), refuses it without the
/// server's token, and finds the scene it names (NOT_FOUND otherwise); the handler's CallScope turns
/// the call's deadline, its cancellation and --max-call-seconds into the core's Interrupt (CallCancel)
/// and holds it to the server's limits. The handler itself keeps only its decode, core call and encode.

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>
#include <google/protobuf/message.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "proximity/core/base/types.h"
#include "server/convert.h"
#include "server/errors.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/scene_store.h"

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
  /// Calls served at once (--max-concurrent-calls); one more is refused with RESOURCE_EXHAUSTED naming
  /// the limit. 0: no limit.
  int32_t max_concurrent_calls = 0;
  /// Largest response message (the server's --max-message-bytes); a larger one is refused with
  /// RESOURCE_EXHAUSTED instead of failing in the transport after being counted as OK. 0: no check.
  int64_t max_response_bytes = 0;
  /// Queries in one Session batch (--max-session-batch); a larger batch ends the stream with
  /// RESOURCE_EXHAUSTED naming the option.
  int64_t max_session_batch = 4096;
  /// Bytes a session's clearance tracker may keep between track queries (its warm starts, one per pair
  /// near the robot: a wide horizon on a large scene keeps many); past it the tracker forgets them, so
  /// the next track query starts cold (its answers are the same). 0: no limit.
  int64_t max_tracker_bytes = int64_t{64} << 20;
  /// Points in one point cloud as sent, before filtering (--max-cloud-points), and points kept in one
  /// scene's clouds plus those an update sends (--max-scene-cloud-points): counted before anything is
  /// built, RESOURCE_EXHAUSTED naming the option.
  int64_t max_cloud_points = 2'000'000;
  int64_t max_scene_cloud_points = 8'000'000;
  /// Caps on a robot and scene before they are built (--max-links, --max-joints, --max-link-triangles,
  /// --max-self-pairs); max_memory_bytes is the registry's --max-memory-mb, which the build's estimate
  /// must fit. A robot of 10,000 joints is refused at once instead of building for minutes past every
  /// memory limit.
  core::BuildLimits build = {.max_links = 1000, .max_joints = 1000, .max_link_triangles = 1'000'000,
                             .max_self_pairs = 100'000, .max_memory_bytes = 0};
};

/// Records one call in the metrics and the log when it goes out of scope, whatever path the handler
/// took: every RPC, including failures, is counted exactly once. Failed calls are logged at most 20
/// lines a second on average (bursts of 50): left-out lines are counted in the metrics and the next
/// line logged says how many it stands for.
class CallRecorder {
 public:
  /// `scene_id` names the scene the call is about, when it names one (it must outlive the recorder:
  /// a field of the request).
  CallRecorder(Metrics* metrics, Rpc rpc, std::string_view scene_id = {});
  CallRecorder(const CallRecorder&) = delete;
  CallRecorder& operator=(const CallRecorder&) = delete;
  ~CallRecorder();

  /// Counts the call's queries and work in the metrics.
  void Count(QueryKind kind, int64_t queries, const Work& work) {
    metrics_->AddQueries(kind, queries);
    metrics_->AddWork(work.states, work.distance_queries, work.bv_tests, work.triangle_tests);
  }
  /// The service's metrics (for the counters that are not per call).
  Metrics& metrics() { return *metrics_; }

  /// Notes the call's outcome and passes it through: `return rec.Finish(...)`.
  grpc::Status Finish(grpc::Status status) {
    status_ = status;
    return status;
  }
  /// `id` must outlive the recorder.
  void set_scene_id(std::string_view id) { scene_id_ = id; }
  /// The named client making the call, for its log line ("" leaves it out); must outlive the recorder.
  void set_client(std::string_view client) { client_ = client; }
  void set_states(int64_t n) { states_ = n; }
  /// Adds a field to the call's log line.
  void set_field(const char* key, nlohmann::json value) { extra_[key] = std::move(value); }

 private:
  using Clock = std::chrono::steady_clock;
  spdlog::level::level_enum Level() const;

  Metrics* metrics_;
  Rpc rpc_;
  Clock::time_point start_;
  // UNKNOWN until Finish: a handler that leaves without Finish is a bug and shows up as such.
  grpc::Status status_ = NoStatus();
  std::string_view scene_id_;  // points into the request (or the call's entry), which outlives the recorder
  std::string_view client_;    // points into the opening's tokens, which outlive every call
  int64_t states_ = -1;
  nlohmann::json extra_ = nlohmann::json::object();
};

/// `t` plus `seconds`, saturating at the clock's end instead of overflowing: a call without a client
/// deadline has none, and an operator's time limit may be longer than the clock can count (negative
/// seconds count as 0).
std::chrono::system_clock::time_point TimeAfter(std::chrono::system_clock::time_point t, double seconds);

/// Whether a call should stop: the client cancelled it, its deadline passed, the server's
/// --max-call-seconds ran out, or the server is shutting down (which cancels every call once the drain
/// time is over). Cheap enough to ask between states (a clock read; the context itself at most once a
/// millisecond), and safe from workers. As a callable it is the core queries' Interrupt; it is also the
/// stop condition of a batch (batch.h).
class CallCancel {
 public:
  CallCancel(grpc::ServerContext* context, double max_seconds);
  CallCancel(const CallCancel&) = delete;
  CallCancel& operator=(const CallCancel&) = delete;

  bool operator()() { return Stopped(); }
  core::Interrupt interrupt() { return core::Interrupt(*this); }

  /// Whether the call should stop now (polls the clock, and the context at most once a millisecond).
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
  /// Stops the call (the client is gone); true.
  bool Stop() {
    stopped_.store(true, std::memory_order_relaxed);
    return true;
  }
  /// Whether the call was stopped, without polling.
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }

  /// When the call must end (the client's deadline or --max-call-seconds, whichever is first).
  std::chrono::system_clock::time_point deadline() const { return deadline_; }

  /// CANCELLED or DEADLINE_EXCEEDED, saying how far the call got. The client's own deadline timer may
  /// cancel the call a moment before the server's clock passes the deadline (by the request's transit
  /// delay): a cancellation within a quarter of the call's time of it, 50 to 250 ms, is the deadline's.
  grpc::Status status(std::string_view progress) const;

 private:
  grpc::ServerContext* context_;
  std::chrono::system_clock::time_point start_;  // when the call arrived
  std::chrono::system_clock::time_point deadline_;
  static constexpr int64_t kPollInterval =
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::milliseconds(1)).count();

  std::atomic<bool> stopped_{false};
  std::atomic<int64_t> next_poll_{0};
  std::mutex mutex_;  // one poller of the context at a time
};

/// Ends a streaming call at its deadline even while a Write is blocked on a client that stopped reading:
/// a synchronous Write returns only once flow control lets it, so the handler cannot notice the
/// deadline itself. TryCancel makes the blocked Write return false.
///
/// It fires kGrace after the deadline: a handler that is not blocked notices the deadline itself
/// between two states and ends the call with DEADLINE_EXCEEDED. Cancelling at the deadline itself would
/// race that status, and on a loaded machine the client could see the server's CANCELLED before its own
/// deadline timer ran.
class StreamWatchdog {
 public:
  static constexpr std::chrono::milliseconds kGrace{1000};

  StreamWatchdog(grpc::ServerContext* context, std::chrono::system_clock::time_point deadline);
  StreamWatchdog(const StreamWatchdog&) = delete;
  StreamWatchdog& operator=(const StreamWatchdog&) = delete;
  ~StreamWatchdog();

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

/// One call as its handler sees it, from the opening (Opening) to its status: the scene it names, its
/// recorder, its stop condition and the server's limits.
class CallScope {
 public:
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

  /// The loaded scene the call names (ServeScene only).
  const SceneEntry& entry() const { return *entry_; }
  const core::Scene& scene() const { return *entry_->scene; }
  /// Makes `entry` the scene the call's log line names (CreateScene: the scene it created or found).
  void set_entry(std::shared_ptr<const SceneEntry> entry) {
    entry_ = std::move(entry);
    recorder_.set_scene_id(entry_->id);
  }

  const ServiceLimits& limits() const { return *limits_; }
  /// The named client making the call (its token's name), or "" when the server names no clients
  /// (no token, or one unnamed token): everyone.
  std::string_view client() const { return client_; }
  CallRecorder& record() { return recorder_; }
  Metrics& metrics() { return recorder_.metrics(); }

  /// The call's stop condition; its --max-call-seconds run from the first use.
  CallCancel& cancel() {
    if (!cancel_) cancel_.emplace(context_, limits_->max_call_seconds);
    return *cancel_;
  }
  /// The stop condition as the core's Interrupt.
  core::Interrupt interrupt() { return cancel().interrupt(); }
  /// Streaming calls: cancels the call just after its deadline even while a Write is blocked
  /// (StreamWatchdog).
  void WatchStream() {
    if (!watchdog_) watchdog_.emplace(context_, cancel().deadline());
  }

  /// OK, or RESOURCE_EXHAUSTED when `response` exceeds the server's --max-message-bytes: the response
  /// is then cleared and counted in the metrics. `advice` tells the client how to ask for less.
  grpc::Status FitResponse(google::protobuf::Message* response, std::string_view advice);

 private:
  friend class Opening;
  CallScope(grpc::ServerContext* context, Metrics* metrics, Rpc rpc, std::string_view scene_id,
            const ServiceLimits* limits)
      : recorder_(metrics, rpc, scene_id), context_(context), limits_(limits) {}
  grpc::Status Finish(grpc::Status status) { return recorder_.Finish(std::move(status)); }

  std::shared_ptr<const SceneEntry> entry_;  // first: the recorder's log line may name its id
  CallRecorder recorder_;
  std::string_view client_;  // points into the opening's tokens
  grpc::ServerContext* context_;
  const ServiceLimits* limits_;
  std::optional<CallCancel> cancel_;
  std::optional<StreamWatchdog> watchdog_;
};

/// A bearer token the server accepts, and the client it names ("" for the one token of a single-token
/// file: every caller is the same client, "everyone").
struct ClientToken {
  std::string name;
  std::string token;
};

/// The tokens of an --auth-token-file's text. Either one token (the first line that is neither blank
/// nor a comment is a single word; anything but comments after it is an error), or named clients, one a
/// line as `NAME TOKEN` (whitespace between): names 1 to 64 of [A-Za-z0-9._-] and unique, tokens at least
/// 16 characters and unique. Blank lines and lines starting with '#' are skipped. INVALID_ARGUMENT naming
/// the line (1-based) at fault; no message quotes a token.
core::Result<std::vector<ClientToken>> ParseTokenFile(std::string_view text);

/// The opening every handler shares: record the call, authorize it, find its scene, run the handler's
/// body and record the status it returns. A body is any callable taking the CallScope and returning the
/// call's status (a lambda, inlined: no allocation or indirect call per request).
class Opening {
 public:
  /// The registry, metrics and limits must outlive the opening. `tokens`, when not empty, are the
  /// bearer tokens of which every call must carry one ("authorization: Bearer <token>" metadata); the
  /// call's client is the matching token's name.
  Opening(SceneRegistry* registry, Metrics* metrics, const ServiceLimits* limits, std::vector<ClientToken> tokens);

  /// Runs `body` as the call `rpc` once it is authorized (UNAUTHENTICATED otherwise). `scene_id`, when
  /// the call names a scene it does not look up (DeleteScene), goes into its log line; it must outlive
  /// the call (a field of the request).
  template <class Body>
  grpc::Status Serve(grpc::ServerContext* context, Rpc rpc, std::string_view scene_id, Body&& body) const {
    CallScope call(context, metrics_, rpc, scene_id, limits_);
    const Slot slot(&in_flight_);
    if (grpc::Status s = Admit(context, slot, &call); !s.ok()) return call.Finish(std::move(s));
    return call.Finish(body(call));
  }

  /// As Serve, on the loaded scene `scene_id` names (or the alias "default"): NOT_FOUND when none is
  /// loaded, INVALID_ARGUMENT when the id is empty. The call holds the scene until it ends.
  template <class Body>
  grpc::Status ServeScene(grpc::ServerContext* context, Rpc rpc, const std::string& scene_id, Body&& body) const {
    CallScope call(context, metrics_, rpc, scene_id, limits_);
    const Slot slot(&in_flight_);
    if (grpc::Status s = Admit(context, slot, &call); !s.ok()) return call.Finish(std::move(s));
    call.entry_ = registry_->Find(scene_id);
    if (call.entry_ == nullptr) return call.Finish(SceneNotFound(scene_id));
    return call.Finish(body(call));
  }

  /// OK when the server needs no token or the call carries one of its tokens; *client (when given)
  /// is then that token's name. The call's token is compared with every token, each in constant time,
  /// so the time taken does not tell which one matched.
  grpc::Status Authorize(grpc::ServerContext* context, std::string_view* client = nullptr) const;
  /// Whether the server's tokens name clients (a file of `NAME TOKEN` lines).
  bool named_clients() const { return named_; }

 private:
  // One call in flight: counted while it lives.
  class Slot {
   public:
    explicit Slot(std::atomic<int32_t>* in_flight)
        : in_flight_(in_flight), position_(in_flight->fetch_add(1, std::memory_order_relaxed) + 1) {}
    ~Slot() { in_flight_->fetch_sub(1, std::memory_order_relaxed); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    int32_t position() const { return position_; }

   private:
    std::atomic<int32_t>* in_flight_;
    int32_t position_;  // calls in flight when this one arrived, itself included
  };
  // Within --max-concurrent-calls, then authorized; the call learns its client.
  grpc::Status Admit(grpc::ServerContext* context, const Slot& slot, CallScope* call) const {
    if (limits_->max_concurrent_calls > 0 && slot.position() > limits_->max_concurrent_calls) {
      return TooManyConcurrentCalls(limits_->max_concurrent_calls);
    }
    grpc::Status status = Authorize(context, &call->client_);
    call->recorder_.set_client(call->client_);
    return status;
  }

  SceneRegistry* registry_;
  Metrics* metrics_;
  const ServiceLimits* limits_;
  std::vector<ClientToken> tokens_;  // with "Bearer " before each token
  bool named_ = false;
  mutable std::atomic<int32_t> in_flight_{0};  // calls inside Serve / ServeScene now
};

}  // namespace proximity::server
