#pragma once
/// @file
/// Prometheus metrics of the service, in the go-grpc-prometheus naming: started / handled counters
/// and a handling-time histogram per method, plus the proximity counters. Every update is a relaxed
/// atomic add (no lock on the request path); /metrics renders the text format on demand.

#include <grpcpp/support/status.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "proximity/core/base/result.h"

namespace proximity::server {

/// The service's RPCs, as metric labels.
enum class Rpc : int {
  kCreateScene,
  kGetScene,
  kListScenes,
  kUpdateWorld,
  kDeleteScene,
  kCheckState,
  kCheckStates,
  kComputeDistance,
  kCheckMotion,
  kCheckPath,
  kValidatePaths,
  kTimeOfFirstContact,
  kPlan,
  kGetLinkPoses,
  kGetSceneGeometry,
  kSession,
  kComputeContacts,
  kComputeSignedDistance,
  kNameScene,
  kGetIK,
};
inline constexpr int kNumRpcs = 20;
/// The method name ("CheckState") and its grpc_type ("unary", "server_stream", "bidi_stream").
const char* RpcName(Rpc rpc);
const char* RpcType(Rpc rpc);

/// What proximity_queries_total counts, per state, segment, path, query or planning call; poses per
/// configuration whose link poses GetLinkPoses computed; track per session track query answered.
enum class QueryKind : int { kClear, kDistance, kLink, kPath, kCcd, kPlan, kPoses, kTrack };
inline constexpr int kNumQueryKinds = 8;

class Metrics {
 public:
  /// Upper bounds (seconds) of the handling-time histogram: 1e-5 .. 10 s, 1-2.5-5 per decade.
  static constexpr std::array<double, 19> kBuckets = {1e-5,   2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3,
                                                      2.5e-3, 5e-3,   1e-2, 2.5e-2, 5e-2, 0.1,  0.25,
                                                      0.5,    1.0,    2.5,  5.0,  10.0};
  static constexpr int kNumCodes = 17;

  void Started(Rpc rpc) { rpcs_[Index(rpc)].started.fetch_add(1, std::memory_order_relaxed); }
  void Handled(Rpc rpc, grpc::StatusCode code, double seconds);
  void AddQueries(QueryKind kind, int64_t n) {
    queries_[static_cast<size_t>(kind)].fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  }
  void AddWork(int64_t states, int64_t distance_queries, int64_t bv_tests, int64_t triangle_tests);
  void SetScenesLoaded(int64_t n) { scenes_loaded_.store(n, std::memory_order_relaxed); }
  void SetSceneBytes(int64_t n) { scene_bytes_.store(n, std::memory_order_relaxed); }
  void AddEvictions(int64_t n) { evictions_.fetch_add(n, std::memory_order_relaxed); }
  /// The named clients (--auth-token-file's NAME TOKEN lines): each has its scenes and bytes shown, 0
  /// until it owns a scene. Without them no per-client series is rendered.
  void SetClients(const std::vector<std::string>& names);
  /// What each named client owns now (scenes, bytes); clients left out own nothing.
  void SetClientShares(const std::vector<std::tuple<std::string, int64_t, int64_t>>& shares);
  /// A scene built from a request (CreateScene or UpdateWorld content not loaded yet).
  void AddSceneBuild() { scene_builds_.fetch_add(1, std::memory_order_relaxed); }
  /// A streamed response the client did not take (Write failed).
  void AddFailedSend() { failed_sends_.fetch_add(1, std::memory_order_relaxed); }
  /// A response refused for exceeding --max-message-bytes.
  void AddOversizeResponse() { oversize_responses_.fetch_add(1, std::memory_order_relaxed); }
  /// Failed-call log lines left out by the rate limit.
  void AddSuppressedLogs(int64_t n) { suppressed_logs_.fetch_add(n, std::memory_order_relaxed); }

  /// The Prometheus text exposition format (version 0.0.4).
  std::string RenderText() const;

  /// Handled calls of `rpc` with `code` so far, and started calls (for tests and the bench).
  uint64_t HandledCount(Rpc rpc, grpc::StatusCode code) const;
  uint64_t StartedCount(Rpc rpc) const { return rpcs_[Index(rpc)].started.load(std::memory_order_relaxed); }

 private:
  struct PerRpc {
    std::atomic<uint64_t> started{0};
    std::array<std::atomic<uint64_t>, kNumCodes> handled{};
    std::array<std::atomic<uint64_t>, kBuckets.size()> buckets{};  // non-cumulative
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> sum_ns{0};
  };
  static size_t Index(Rpc rpc) { return static_cast<size_t>(rpc); }

  std::array<PerRpc, kNumRpcs> rpcs_{};
  std::array<std::atomic<uint64_t>, kNumQueryKinds> queries_{};
  std::atomic<uint64_t> work_states_{0}, work_distance_{0}, work_bv_{0}, work_triangles_{0};
  std::atomic<int64_t> scenes_loaded_{0};
  std::atomic<int64_t> scene_bytes_{0};
  std::atomic<int64_t> evictions_{0};
  std::atomic<int64_t> scene_builds_{0};
  std::atomic<int64_t> failed_sends_{0};
  std::atomic<int64_t> oversize_responses_{0};
  std::atomic<int64_t> suppressed_logs_{0};
  mutable std::mutex clients_mutex_;
  std::map<std::string, std::pair<int64_t, int64_t>, std::less<>> clients_;  // name -> (scenes, bytes)
};

/// One request to a route of the HTTP server besides /metrics.
struct HttpRequest {
  std::string path;
  std::string body;
  std::string authorization;         ///< The Authorization header, or "".
  std::vector<std::string> matches;  ///< The route pattern's capture groups.
  std::string content_type;          ///< The Content-Type header, or "".
  std::string host;                  ///< The Host header, or "".
  std::string origin;                ///< The Origin header, or "" (browsers send it with every POST).
};
/// Its answer.
struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};
/// A route: `method` ("GET" or "POST") on the paths matching `pattern` (a regular expression the whole
/// path must match); handlers run on the HTTP server's worker threads and may block.
struct HttpRoute {
  std::string method;
  std::string pattern;
  std::function<HttpReply(const HttpRequest&)> handler;
};

/// What the HTTP server lets its clients hold. A client that sends too slowly or holds too many
/// connections costs one socket each, never a thread.
struct HttpServerLimits {
  /// A request (request line, headers and body) must arrive within this long from when the server starts
  /// waiting for it; a keep-alive connection idle for this long is closed.
  double request_timeout_seconds = 10.0;
  /// Writing one response may take this long.
  double write_timeout_seconds = 60.0;
  int max_connections = 256;              ///< Open connections at once; more are closed as accepted.
  int max_connections_per_address = 32;   ///< Open connections from one client address.
  int max_requests_per_connection = 100;  ///< Then the response says `Connection: close`.
  uint32_t max_header_bytes = 16 << 10;   ///< Request line and headers (431 beyond).
  int workers = 4;                        ///< Threads that run route handlers.
  int max_queued = 64;                    ///< Route requests waiting for a worker; more get 503.
};

/// Serves GET /metrics over HTTP/1.1 and 1.0 (Boost.Beast), and any routes added (the viewer). One
/// thread does all network I/O for every connection and answers /metrics itself; route handlers run on
/// a small pool of worker threads (http_server.cc).
class MetricsHttpServer {
 public:
  MetricsHttpServer();
  ~MetricsHttpServer();
  /// Binds `address` ("host:port"; port 0 picks one) and starts serving `metrics` and `routes`; request
  /// bodies above `max_body_bytes` are refused (413).
  [[nodiscard]] core::Status Start(const std::string& address, const Metrics* metrics,
                                   std::vector<HttpRoute> routes = {}, int64_t max_body_bytes = 1 << 20,
                                   const HttpServerLimits& limits = {});
  /// Closes the port and every connection and joins the threads (a handler running is waited for).
  void Stop();
  /// The bound port (set before any request is served).
  int port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

/// Splits "host:port" (IPv6 hosts in brackets); false when malformed.
bool SplitHostPort(const std::string& address, std::string* host, int* port);

}  // namespace proximity::server
