#pragma once
/// @file
/// proximityd as a library: builds the gRPC server (service, health, reflection, limits), the metrics
/// endpoint with the viewer and the default scene, and shuts them down gracefully. main.cc and the service tests both
/// start it this way.

#include <grpcpp/server.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "proximity/core/base/result.h"
#include "server/metrics.h"
#include "server/scene_store.h"
#include "server/service.h"
#include "server/worker_pool.h"

namespace proximity::server {

/// The health-check service name of the proximity service (besides "" for the whole server).
inline constexpr const char* kServiceName = "proximity.v1.ProximityService";

struct ServerOptions {
  std::string listen = "127.0.0.1:50051";          ///< host:port; port 0 picks a free one.
  std::string metrics_listen = "127.0.0.1:9464";   ///< host:port for GET /metrics; empty disables.
  int threads = 0;                                 ///< Worker pool size; 0 means hardware_concurrency.
  int64_t max_message_bytes = 64ll << 20;          ///< Receive and send limit per message.
  ServiceLimits limits;
  bool default_scene = true;                       ///< Load the built-in scene (alias "default").
  std::string default_scene_urdf;                  ///< Its robot; empty means DefaultRobotUrdfPath().
  std::string default_scene_srdf;                  ///< Its robot's SRDF (allowed pairs, groups); empty: none.
  std::vector<std::string> default_scene_packages; ///< NAME=DIR: where package://NAME/ resolves for it.
  /// Directories whose files requests may name (urdf_path, srdf_path, package_dirs, mesh_file);
  /// none by default, so that no request opens a server file. The operator's own files (the
  /// default scene) are not limited by them.
  std::vector<std::string> allow_path_roots;
  int64_t max_file_bytes = 256ll << 20;            ///< Largest server file a request may have read.
  /// What the scene registry may hold (least recently used scenes are evicted to stay within it).
  RegistryLimits registry{256, 4096ll << 20, 64};
  /// Calls served at once; more are refused with RESOURCE_EXHAUSTED naming the limit (gRPC's thread
  /// quota, at twice this plus 8, is the backstop). 0: no limit.
  int max_concurrent_calls = 256;
  /// TLS: the server's certificate chain and private key (PEM files); both empty serves plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  /// Mutual TLS: clients must present a certificate this CA (PEM file) signed.
  std::string tls_client_ca_file;
  /// The bearer token every ProximityService call must carry; empty: none. Health stays open.
  std::string auth_token;
  /// Named clients' tokens (--auth-token-file's NAME TOKEN lines): each call must carry one of them (or
  /// `auth_token`), and is its client's. Named clients own the scenes they create and are held to
  /// registry.max_scenes_per_client and max_memory_bytes_per_client.
  std::vector<ClientToken> client_tokens;
  /// Serve gRPC server reflection (off unless asked: it tells any caller every message shape).
  bool reflection = false;
  /// Serve the viewer (viewer.h) on the metrics port: /viewer and its JSON API.
  bool viewer = true;
  /// Debian libjs-three's folder, whose three.min.js and OrbitControls.js the viewer serves.
  std::string viewer_three_dir = "/usr/share/javascript/three";
  /// More Host header values (HOST or HOST:PORT) the viewer's API accepts besides the metrics address,
  /// localhost, 127.0.0.1 and [::1] at the metrics port: the names a browser reaches this server by.
  std::vector<std::string> viewer_allowed_hosts;
  /// How long the metrics port waits for a whole HTTP request (and keeps an idle connection), seconds.
  double http_request_timeout_seconds = 10.0;
  /// Close each client connection after about this long (gRPC's GRPC_ARG_MAX_CONNECTION_AGE_MS, with
  /// its +-10% jitter), so that clients re-resolve a DNS name and spread over replicas added since;
  /// 0: never. Calls in flight then have `max_connection_age_grace_seconds` to finish.
  double max_connection_age_seconds = 0.0;
  /// GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS: how long calls in flight on an aged connection may finish.
  double max_connection_age_grace_seconds = 300.0;
};

class ProximityServer {
 public:
  /// Loads the default scene, then binds and starts serving. Errors name what failed (a busy port,
  /// an unreadable default robot); nothing keeps running after an error.
  [[nodiscard]] static core::Result<std::unique_ptr<ProximityServer>> Start(const ServerOptions& options);
  ~ProximityServer();

  int port() const { return port_; }
  /// The metrics port, or 0 when metrics are disabled.
  int metrics_port() const { return metrics_http_ != nullptr ? metrics_http_->port() : 0; }
  /// The built-in scene's id, or "" when it was not loaded.
  const std::string& default_scene_id() const { return default_scene_id_; }
  Metrics& metrics() { return *metrics_; }
  SceneRegistry& registry() { return *registry_; }

  /// Health NOT_SERVING, stop accepting calls, let in-flight calls finish for up to `drain` (then
  /// cancel them), stop the metrics endpoint. Idempotent.
  void Shutdown(std::chrono::milliseconds drain);
  /// Blocks until the server has shut down.
  void Wait();

 private:
  ProximityServer() = default;
  // Start's steps: the built-in scene into the registry, and the metrics port (with the viewer).
  core::Status LoadDefaultScene(const ServerOptions& options);
  core::Status StartHttp(const ServerOptions& options);

  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<SceneRegistry> registry_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<ProximityServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<MetricsHttpServer> metrics_http_;
  std::string default_scene_id_;
  int port_ = 0;
  std::mutex shutdown_mutex_;  // Shutdown may come from a signal thread and the destructor
  bool shut_down_ = false;
};

}  // namespace proximity::server
