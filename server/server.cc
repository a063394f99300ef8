#include "server/server.h"

#include "proximity/core/base/file_access.h"

#include <grpc/grpc.h>
#include <dlfcn.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <thread>

#include "grpc/health/v1/health.pb.h"
#include "proximity/default_scene/default_scene.h"
#include "server/log.h"
#include "server/viewer.h"

namespace proximity::server {
namespace {

// Channel arguments are int milliseconds: a day keeps them far from overflow.
constexpr double kMaxAgeSeconds = 86400.0;

// The service's limits from the server's options: the token settings checked (named clients' tokens or
// one unnamed token, not both).
core::Result<ServiceLimits> ResolveLimits(const ServerOptions& options) {
  ServiceLimits limits = options.limits;
  limits.max_response_bytes = options.max_message_bytes;
  limits.max_concurrent_calls = options.max_concurrent_calls;
  limits.build.max_memory_bytes = options.registry.max_memory_bytes;
  bool named = false;
  for (const ClientToken& t : options.client_tokens) {
    if (t.name.empty() || t.token.empty()) return core::InvalidArgument("every client token needs a name and a token");
    named = true;
  }
  if (named && !options.auth_token.empty()) {
    return core::InvalidArgument("give one unnamed token or named clients' tokens, not both");
  }
  if (options.registry.per_client() && !named) {
    LogEvent(spdlog::level::warn,
             "--max-scenes-per-client and --max-memory-mb-per-client apply to named clients only "
             "(--auth-token-file with NAME TOKEN lines); every caller is one client here, held to the global limits");
  }
  return limits;
}

// gRPC's reflection and health services, as the options ask.
core::Status EnableStandardServices(const ServerOptions& options) {
  grpc::EnableDefaultHealthCheckService(true);
  if (options.reflection) {
    // Loading gRPC's reflection library registers its server plugin (a static initialiser), which
    // adds the reflection service to every server built in this process from then on.
    static void* const reflection = dlopen(PROX_GRPC_REFLECTION_SONAME, RTLD_NOW | RTLD_GLOBAL);
    if (reflection == nullptr) {
      const char* why = dlerror();
      return core::InvalidArgument(std::string("--reflection: cannot load ") + PROX_GRPC_REFLECTION_SONAME + ": " +
                                   (why != nullptr ? why : "unknown error"));
    }
  }
  // Linking the health messages into the binary lets reflection resolve grpc.health.v1.Health; the
  // built-in health service alone is listed but "symbol not found".
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  return {};
}

// The builder's channel arguments, message sizes (options.max_message_bytes, checked by the caller) and thread quota.
core::Status ConfigureBuilder(const ServerOptions& options, grpc::ServerBuilder* builder) {
  // gRPC sets SO_REUSEPORT by default, so a second server on a busy port would start "fine" and
  // share it; off, a port clash fails at bind.
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Clients that keep idle connections alive must not be told "too many pings".
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  if (!(options.max_connection_age_seconds >= 0.0) || !(options.max_connection_age_seconds <= kMaxAgeSeconds) ||
      !(options.max_connection_age_grace_seconds >= 0.0) ||
      !(options.max_connection_age_grace_seconds <= kMaxAgeSeconds)) {
    return core::InvalidArgument("--max-connection-age-seconds and --max-connection-age-grace-seconds must be in [0, " +
                                 std::to_string(static_cast<int>(kMaxAgeSeconds)) + "] seconds, got " +
                                 std::to_string(options.max_connection_age_seconds) + " and " +
                                 std::to_string(options.max_connection_age_grace_seconds));
  }
  if (options.max_connection_age_seconds > 0.0) {
    // A client connected to one replica stays there for the life of the connection: ageing it out makes
    // the client resolve its target again and pick up replicas added since.
    builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                                std::max(1, static_cast<int>(options.max_connection_age_seconds * 1000.0)));
    builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                                static_cast<int>(options.max_connection_age_grace_seconds * 1000.0));
  }
  if (options.max_concurrent_calls > 0) {
    // The service refuses calls beyond --max-concurrent-calls itself, naming the limit (Opening); gRPC's
    // thread quota is the backstop against a flood faster than those refusals, with headroom so that
    // the refusals and health probes still find a thread.
    grpc::ResourceQuota quota("proximityd");
    quota.SetMaxThreads(2 * options.max_concurrent_calls + 8);
    builder->SetResourceQuota(quota);
  }
  builder->SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  builder->SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  return {};
}

// Insecure, TLS, or mutual TLS, as the options' files say.
core::Result<std::shared_ptr<grpc::ServerCredentials>> Credentials(const ServerOptions& options) {
  if (options.tls_cert_file.empty() && options.tls_key_file.empty() && options.tls_client_ca_file.empty()) {
    return grpc::InsecureServerCredentials();
  }
  if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
    return core::InvalidArgument("TLS needs both --tls-cert and --tls-key");
  }
  grpc::SslServerCredentialsOptions ssl;
  auto cert = core::ReadFileUnder({}, options.tls_cert_file);
  if (!cert.ok()) return core::InvalidArgument("--tls-cert: " + cert.error().message);
  auto key = core::ReadFileUnder({}, options.tls_key_file);
  if (!key.ok()) return core::InvalidArgument("--tls-key: " + key.error().message);
  ssl.pem_key_cert_pairs.push_back({key.value(), cert.value()});
  if (!options.tls_client_ca_file.empty()) {
    auto ca = core::ReadFileUnder({}, options.tls_client_ca_file);
    if (!ca.ok()) return core::InvalidArgument("--tls-client-ca: " + ca.error().message);
    ssl.pem_root_certs = ca.value();
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

core::Result<std::unique_ptr<ProximityServer>> ProximityServer::Start(const ServerOptions& options) {
  // One gRPC library reference held for the life of the process. Otherwise destroying the last server
  // (or channel) runs grpc_shutdown, which can block for up to ~10 s joining an executor thread that
  // sleeps on an internal timer: a drained proximityd would linger that long before exiting.
  static const bool kLibraryKept = (grpc_init(), true);
  (void)kLibraryKept;
  std::unique_ptr<ProximityServer> s(new ProximityServer());
  s->metrics_ = std::make_unique<Metrics>();
  s->registry_ = std::make_unique<SceneRegistry>(options.registry);
  const int threads = options.threads > 0 ? options.threads
                                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  s->pool_ = std::make_unique<WorkerPool>(threads);
  for (const std::string& host : options.viewer_allowed_hosts) {
    if (std::string error = AllowedHostError(host); !error.empty()) return core::InvalidArgument(error);
  }
  if (options.max_file_bytes < 1) {
    return core::InvalidArgument("max file bytes must be >= 1, got " + std::to_string(options.max_file_bytes));
  }
  auto files = core::FileAccess::Confined(options.allow_path_roots, options.max_file_bytes);
  if (!files.ok()) return files.error();
  auto limits = ResolveLimits(options);
  if (!limits.ok()) return limits.error();
  s->service_ = std::make_unique<ProximityServiceImpl>(s->registry_.get(), s->metrics_.get(), s->pool_.get(),
                                                       limits.value(), files.value(), options.auth_token,
                                                       options.client_tokens);
  if (options.default_scene) {
    if (core::Status st = s->LoadDefaultScene(options); !st.ok()) return st.error();
  }
  if (options.max_message_bytes <= 0 || options.max_message_bytes > INT32_MAX) {
    return core::InvalidArgument("max message bytes must be in [1, 2^31 - 1], got " +
                                 std::to_string(options.max_message_bytes));
  }
  // Before the builder: it instantiates the plugins registered by then (reflection's).
  if (core::Status st = EnableStandardServices(options); !st.ok()) return st.error();
  grpc::ServerBuilder builder;
  if (core::Status st = ConfigureBuilder(options, &builder); !st.ok()) return st.error();
  auto credentials = Credentials(options);
  if (!credentials.ok()) return credentials.error();
  builder.AddListeningPort(options.listen, credentials.value(), &s->port_);
  builder.RegisterService(s->service_.get());
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    s->server_.reset();
    return core::InvalidArgument("cannot listen on " + options.listen +
                                 " (is the port in use, or the address not local?)");
  }
  grpc::HealthCheckServiceInterface* health = s->server_->GetHealthCheckService();
  health->SetServingStatus("", true);
  health->SetServingStatus(kServiceName, true);
  if (!options.metrics_listen.empty()) {
    if (core::Status st = s->StartHttp(options); !st.ok()) return st.error();
  }
  return s;
}

core::Status ProximityServer::LoadDefaultScene(const ServerOptions& options) {
  const std::string urdf = options.default_scene_urdf.empty() ? scenes::DefaultRobotUrdfPath() : options.default_scene_urdf;
  scenes::DefaultSceneSpec spec = scenes::DefaultScene(urdf);
  spec.srdf_path = options.default_scene_srdf;
  for (const std::string& package : options.default_scene_packages) {
    const size_t eq = package.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == package.size()) {
      return core::InvalidArgument("--default-scene-package: expected NAME=DIR, got '" + package + "'");
    }
    spec.package_dirs[package.substr(0, eq)] = package.substr(eq + 1);
  }
  auto entry = BuildScene(DefaultSceneRequest(spec));
  if (!entry.ok()) {
    return core::InvalidArgument("default scene (" + urdf + "): " + entry.error().message +
                                 " (install dart-doc, or start with --no-default-scene)");
  }
  default_scene_id_ = entry.value()->id;
  registry_->set_default_id(default_scene_id_);
  auto inserted = registry_->Insert(std::move(entry).value());
  if (!inserted.ok()) return core::InvalidArgument("default scene: " + inserted.error().message);
  metrics_->SetScenesLoaded(1);
  metrics_->SetSceneBytes(registry_->memory_bytes());
  return {};
}

core::Status ProximityServer::StartHttp(const ServerOptions& options) {
  metrics_http_ = std::make_unique<MetricsHttpServer>();
  std::vector<HttpRoute> routes;
  if (options.viewer) {
    // The viewer's API reaches the service in process, through the same opening as any call.
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
    args.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
    ViewerOptions viewer;
    viewer.three_dir = options.viewer_three_dir;
    viewer.call_seconds = options.limits.max_call_seconds;
    viewer.api_enabled = options.tls_client_ca_file.empty();
    viewer.listen_address = options.metrics_listen;
    // The routes live in the HTTP server, and the port is known before it serves any request.
    viewer.bound_port = [http = metrics_http_.get()] { return http->port(); };
    viewer.allowed_hosts = options.viewer_allowed_hosts;
    std::vector<std::string> warnings;
    routes = ViewerRoutes(server_->InProcessChannel(args), viewer, &warnings);
    for (const std::string& w : warnings) LogEvent(spdlog::level::warn, w);
  }
  HttpServerLimits http_limits;
  http_limits.request_timeout_seconds = options.http_request_timeout_seconds;
  if (core::Status st = metrics_http_->Start(options.metrics_listen, metrics_.get(), std::move(routes),
                                             options.max_message_bytes, http_limits);
      !st.ok()) {
    metrics_http_.reset();
    Shutdown(std::chrono::milliseconds(0));
    return st;
  }
  return {};
}

ProximityServer::~ProximityServer() {
  Shutdown(std::chrono::milliseconds(0));
  if (server_ != nullptr) server_->Wait();
}

void ProximityServer::Shutdown(std::chrono::milliseconds drain) {
  std::lock_guard lock(shutdown_mutex_);
  if (shut_down_) return;
  shut_down_ = true;
  if (server_ != nullptr) {
    server_->GetHealthCheckService()->Shutdown();  // every service NOT_SERVING, and stays so
    if (service_ != nullptr) service_->EndSessions();
    server_->Shutdown(std::chrono::system_clock::now() + drain);
  }
  if (metrics_http_ != nullptr) metrics_http_->Stop();
}

void ProximityServer::Wait() {
  if (server_ != nullptr) server_->Wait();
}

}  // namespace proximity::server
