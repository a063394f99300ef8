// proximityd: the Proximity gRPC service. Flags, or a YAML file (--config) with the same keys as the
// long flags (flags win); structured logs on stderr; SIGTERM / SIGINT drain in-flight calls and exit 0.
#include <CLI/CLI.hpp>

#include "proximity/core/base/file_access.h"
#include <yaml-cpp/yaml.h>

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "server/log.h"
#include "server/server.h"

namespace {

using proximity::server::ServerOptions;

struct Flags {
  ServerOptions server;
  std::string config;
  std::string log_level = "info";
  std::string log_format = "json";
  double drain_seconds = 10.0;
  bool no_default_scene = false;
  bool no_viewer = false;
  int64_t max_memory_mb = 4096;
  int64_t max_memory_mb_per_client = 0;
  int64_t max_tracker_mb = 64;
  std::string auth_token_file;
};

// A YAML key applies only where the flag was not given on the command line.
using Setter = std::function<void(const YAML::Node&)>;

// A repeatable flag's value in the config file: a list of strings, or one string.
std::vector<std::string> StringList(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n.IsSequence()) {
    for (const auto& item : n) out.push_back(item.as<std::string>());
  } else {
    out.push_back(n.as<std::string>());
  }
  return out;
}

std::string ApplyConfigFile(const std::string& path, CLI::App& app, const std::map<std::string, Setter>& setters) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return "--config " + path + ": " + e.what();
  }
  if (!root.IsMap() && !root.IsNull()) return "--config " + path + ": expected a mapping of option: value";
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const auto it = setters.find(key);
    if (it == setters.end()) return "--config " + path + ": unknown key '" + key + "'";
    if (app.get_option("--" + key)->count() > 0) continue;
    try {
      it->second(kv.second);
    } catch (const YAML::Exception& e) {
      return "--config " + path + ": key '" + key + "': " + e.what();
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace proximity::server;
  Flags f;
  CLI::App app{"proximityd: collision, distance and motion checks for robots in scenes, over gRPC"};
  app.add_option("--config", f.config, "YAML file with the same keys as the long flags (flags win)");
  app.add_option("--listen", f.server.listen, "gRPC address host:port (port 0 picks one)")->capture_default_str();
  app.add_option("--metrics-listen", f.server.metrics_listen, "Prometheus /metrics address; empty disables")
      ->capture_default_str();
  app.add_option("--threads", f.server.threads, "Worker pool size (0: hardware concurrency)")->capture_default_str();
  app.add_option("--max-message-bytes", f.server.max_message_bytes, "Largest request or response message")
      ->capture_default_str();
  app.add_option("--max-batch-states", f.server.limits.max_batch_states, "Most configurations per request")
      ->capture_default_str();
  app.add_option("--max-path-waypoints", f.server.limits.max_path_waypoints, "Most waypoints per path")
      ->capture_default_str();
  app.add_option("--max-plan-seconds", f.server.limits.max_plan_seconds, "Largest Plan time limit, seconds")
      ->capture_default_str();
  app.add_option("--max-session-batch", f.server.limits.max_session_batch, "Most queries in one Session batch")
      ->capture_default_str();
  app.add_option("--max-call-seconds", f.server.limits.max_call_seconds,
                 "Longest a query call may work whatever the client's deadline, seconds")
      ->capture_default_str();
  app.add_option("--allow-path-root", f.server.allow_path_roots,
                 "A directory whose files requests may name (urdf_path, package_dirs, mesh_file); repeatable; "
                 "none by default: requests then upload content");
  app.add_option("--max-file-bytes", f.server.max_file_bytes, "Largest server file a request may have read")
      ->capture_default_str();
  app.add_option("--max-scenes", f.server.registry.max_scenes, "Most scenes loaded at once (0: no limit)")
      ->capture_default_str();
  app.add_option("--max-memory-mb", f.max_memory_mb,
                 "Most memory scenes may hold, MiB (least recently used scenes are evicted first; 0: no limit)")
      ->capture_default_str();
  app.add_option("--max-scenes-per-client", f.server.registry.max_scenes_per_client,
                 "Most scenes one named client (--auth-token-file NAME TOKEN lines) owns; its own least recently "
                 "used scenes give way first, never another client's (0: no limit)")
      ->capture_default_str();
  app.add_option("--max-memory-mb-per-client", f.max_memory_mb_per_client,
                 "Most memory the scenes one named client owns may hold, MiB; its own least recently used scenes "
                 "give way first, never another client's (0: no limit)")
      ->capture_default_str();
  app.add_option("--max-versions", f.server.registry.max_versions,
                 "Most versions of one scene (its UpdateWorld chain) kept at once (0: no limit)")
      ->capture_default_str();
  app.add_option("--max-scene-triangles", f.server.limits.max_scene_triangles, "Most triangles in one scene")
      ->capture_default_str();
  app.add_option("--max-cloud-points", f.server.limits.max_cloud_points,
                 "Most points in one point cloud as sent, before filtering")
      ->capture_default_str();
  app.add_option("--max-scene-cloud-points", f.server.limits.max_scene_cloud_points,
                 "Most point cloud points in one scene (kept points plus those an update sends)")
      ->capture_default_str();
  app.add_option("--max-tracker-mb", f.max_tracker_mb,
                 "Most memory a session's clearance tracker keeps between track queries, MiB; past it the tracker "
                 "forgets its warm starts (same answers, colder) (0: no limit)")
      ->capture_default_str();
  app.add_option("--max-links", f.server.limits.build.max_links, "Most links of a robot (checked before building)")
      ->capture_default_str();
  app.add_option("--max-joints", f.server.limits.build.max_joints, "Most joints of a robot (checked before building)")
      ->capture_default_str();
  app.add_option("--max-link-triangles", f.server.limits.build.max_link_triangles,
                 "Most triangles of one link's collision mesh (checked before its hierarchy is built)")
      ->capture_default_str();
  app.add_option("--max-self-pairs", f.server.limits.build.max_self_pairs,
                 "Most robot part pairs a scene checks against each other (checked before pairing)")
      ->capture_default_str();
  app.add_option("--max-concurrent-calls", f.server.max_concurrent_calls,
                 "Calls served at once; more get RESOURCE_EXHAUSTED (0: no limit)")
      ->capture_default_str();
  app.add_option("--tls-cert", f.server.tls_cert_file, "Serve TLS with this certificate chain (PEM)");
  app.add_option("--tls-key", f.server.tls_key_file, "The TLS private key (PEM)");
  app.add_option("--tls-client-ca", f.server.tls_client_ca_file,
                 "Mutual TLS: require client certificates signed by this CA (PEM)");
  app.add_option("--auth-token-file", f.auth_token_file,
                 "Require 'authorization: Bearer <token>' on every call: the file holds one token, or one "
                 "'NAME TOKEN' line per named client ('#' comments)");
  app.add_flag("--reflection", f.server.reflection, "Serve gRPC server reflection (off by default)");
  app.add_flag("--no-default-scene", f.no_default_scene, "Do not load the built-in KR5 workcell");
  app.add_flag("--no-viewer", f.no_viewer, "Do not serve the viewer (/viewer and its JSON API) on the metrics port");
  app.add_option("--viewer-three-dir", f.server.viewer_three_dir,
                 "Debian libjs-three's folder: the viewer serves its three.min.js and OrbitControls.js")
      ->capture_default_str();
  app.add_option("--viewer-allowed-host", f.server.viewer_allowed_hosts,
                 "HOST or HOST:PORT: another Host the viewer's API answers (a name browsers reach this server by), "
                 "besides the metrics address, localhost, 127.0.0.1 and [::1] at the metrics port; repeatable");
  // Hidden: for tests of the metrics port's timeouts.
  app.add_option("--http-request-timeout-seconds", f.server.http_request_timeout_seconds,
                 "How long the metrics port waits for a whole HTTP request")
      ->group("");
  app.add_option("--default-scene-urdf", f.server.default_scene_urdf, "The built-in scene's robot URDF");
  app.add_option("--default-scene-srdf", f.server.default_scene_srdf,
                 "With --default-scene-urdf: its SRDF (allowed pairs, groups, named states)");
  app.add_option("--default-scene-package", f.server.default_scene_packages,
                 "With --default-scene-urdf: NAME=DIR, the folder package://NAME/ URIs resolve to (repeatable)");
  app.add_option("--max-connection-age-seconds", f.server.max_connection_age_seconds,
                 "Close each client connection after about this long, so that clients re-resolve and reach new "
                 "replicas (0: never)")
      ->capture_default_str();
  app.add_option("--max-connection-age-grace-seconds", f.server.max_connection_age_grace_seconds,
                 "How long calls in flight on an aged connection may finish")
      ->capture_default_str();
  app.add_option("--drain-seconds", f.drain_seconds, "On SIGTERM, how long in-flight calls may finish")
      ->capture_default_str();
  app.add_option("--log-level", f.log_level, "trace|debug|info|warn|error|off")->capture_default_str();
  app.add_option("--log-format", f.log_format, "json (one object per line) or text")
      ->check(CLI::IsMember({"json", "text"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (!f.config.empty()) {
    const std::map<std::string, Setter> setters = {
        {"listen", [&](const YAML::Node& n) { f.server.listen = n.as<std::string>(); }},
        {"metrics-listen", [&](const YAML::Node& n) { f.server.metrics_listen = n.IsNull() ? "" : n.as<std::string>(); }},
        {"threads", [&](const YAML::Node& n) { f.server.threads = n.as<int>(); }},
        {"max-message-bytes", [&](const YAML::Node& n) { f.server.max_message_bytes = n.as<int64_t>(); }},
        {"max-batch-states", [&](const YAML::Node& n) { f.server.limits.max_batch_states = n.as<int64_t>(); }},
        {"max-path-waypoints", [&](const YAML::Node& n) { f.server.limits.max_path_waypoints = n.as<int64_t>(); }},
        {"max-plan-seconds", [&](const YAML::Node& n) { f.server.limits.max_plan_seconds = n.as<double>(); }},
        {"max-session-batch", [&](const YAML::Node& n) { f.server.limits.max_session_batch = n.as<int64_t>(); }},
        {"max-call-seconds", [&](const YAML::Node& n) { f.server.limits.max_call_seconds = n.as<double>(); }},
        {"allow-path-root", [&](const YAML::Node& n) { f.server.allow_path_roots = StringList(n); }},
        {"max-file-bytes", [&](const YAML::Node& n) { f.server.max_file_bytes = n.as<int64_t>(); }},
        {"max-scenes", [&](const YAML::Node& n) { f.server.registry.max_scenes = n.as<int64_t>(); }},
        {"max-memory-mb", [&](const YAML::Node& n) { f.max_memory_mb = n.as<int64_t>(); }},
        {"max-versions", [&](const YAML::Node& n) { f.server.registry.max_versions = n.as<int64_t>(); }},
        {"max-scenes-per-client",
         [&](const YAML::Node& n) { f.server.registry.max_scenes_per_client = n.as<int64_t>(); }},
        {"max-memory-mb-per-client", [&](const YAML::Node& n) { f.max_memory_mb_per_client = n.as<int64_t>(); }},
        {"max-scene-triangles", [&](const YAML::Node& n) { f.server.limits.max_scene_triangles = n.as<int64_t>(); }},
        {"max-cloud-points", [&](const YAML::Node& n) { f.server.limits.max_cloud_points = n.as<int64_t>(); }},
        {"max-scene-cloud-points",
         [&](const YAML::Node& n) { f.server.limits.max_scene_cloud_points = n.as<int64_t>(); }},
        {"max-tracker-mb", [&](const YAML::Node& n) { f.max_tracker_mb = n.as<int64_t>(); }},
        {"max-concurrent-calls", [&](const YAML::Node& n) { f.server.max_concurrent_calls = n.as<int>(); }},
        {"max-links", [&](const YAML::Node& n) { f.server.limits.build.max_links = n.as<int64_t>(); }},
        {"max-joints", [&](const YAML::Node& n) { f.server.limits.build.max_joints = n.as<int64_t>(); }},
        {"max-link-triangles", [&](const YAML::Node& n) { f.server.limits.build.max_link_triangles = n.as<int64_t>(); }},
        {"max-self-pairs", [&](const YAML::Node& n) { f.server.limits.build.max_self_pairs = n.as<int64_t>(); }},
        {"tls-cert", [&](const YAML::Node& n) { f.server.tls_cert_file = n.as<std::string>(); }},
        {"tls-key", [&](const YAML::Node& n) { f.server.tls_key_file = n.as<std::string>(); }},
        {"tls-client-ca", [&](const YAML::Node& n) { f.server.tls_client_ca_file = n.as<std::string>(); }},
        {"auth-token-file", [&](const YAML::Node& n) { f.auth_token_file = n.as<std::string>(); }},
        {"reflection", [&](const YAML::Node& n) { f.server.reflection = n.as<bool>(); }},
        {"no-default-scene", [&](const YAML::Node& n) { f.no_default_scene = n.as<bool>(); }},
        {"no-viewer", [&](const YAML::Node& n) { f.no_viewer = n.as<bool>(); }},
        {"viewer-three-dir", [&](const YAML::Node& n) { f.server.viewer_three_dir = n.as<std::string>(); }},
        {"viewer-allowed-host", [&](const YAML::Node& n) { f.server.viewer_allowed_hosts = StringList(n); }},
        {"default-scene-urdf", [&](const YAML::Node& n) { f.server.default_scene_urdf = n.as<std::string>(); }},
        {"default-scene-srdf", [&](const YAML::Node& n) { f.server.default_scene_srdf = n.as<std::string>(); }},
        {"default-scene-package",
         [&](const YAML::Node& n) { f.server.default_scene_packages = n.as<std::vector<std::string>>(); }},
        {"max-connection-age-seconds",
         [&](const YAML::Node& n) { f.server.max_connection_age_seconds = n.as<double>(); }},
        {"max-connection-age-grace-seconds",
         [&](const YAML::Node& n) { f.server.max_connection_age_grace_seconds = n.as<double>(); }},
        {"drain-seconds", [&](const YAML::Node& n) { f.drain_seconds = n.as<double>(); }},
        {"log-level", [&](const YAML::Node& n) { f.log_level = n.as<std::string>(); }},
        {"log-format", [&](const YAML::Node& n) { f.log_format = n.as<std::string>(); }},
    };
    if (const std::string error = ApplyConfigFile(f.config, app, setters); !error.empty()) {
      std::cerr << "proximityd: " << error << "\n";
      return 2;
    }
  }
  spdlog::level::level_enum level;
  if (!ParseLogLevel(f.log_level, &level)) {
    std::cerr << "proximityd: unknown log level '" << f.log_level << "'\n";
    return 2;
  }
  if (f.log_format != "json" && f.log_format != "text") {
    std::cerr << "proximityd: log format must be json or text, not '" << f.log_format << "'\n";
    return 2;
  }
  if (f.server.limits.max_batch_states < 1 || f.server.limits.max_path_waypoints < 1 ||
      f.server.limits.max_session_batch < 1) {
    std::cerr << "proximityd: --max-batch-states, --max-path-waypoints and --max-session-batch must be >= 1\n";
    return 2;
  }
  if (!(f.server.limits.max_plan_seconds > 0.0) || !std::isfinite(f.server.limits.max_plan_seconds)) {
    std::cerr << "proximityd: --max-plan-seconds must be a finite number > 0\n";
    return 2;
  }
  if (f.max_memory_mb < 0 || f.server.registry.max_scenes < 0 || f.server.registry.max_versions < 0 ||
      f.server.max_concurrent_calls < 0 || f.server.limits.max_scene_triangles < 1) {
    std::cerr << "proximityd: --max-scenes, --max-memory-mb, --max-versions and --max-concurrent-calls must be >= 0, "
                 "--max-scene-triangles >= 1\n";
    return 2;
  }
  if (f.server.limits.max_cloud_points < 1 || f.server.limits.max_scene_cloud_points < 1 || f.max_tracker_mb < 0) {
    std::cerr << "proximityd: --max-cloud-points and --max-scene-cloud-points must be >= 1, --max-tracker-mb >= 0\n";
    return 2;
  }
  f.server.limits.max_tracker_bytes = f.max_tracker_mb << 20;
  if (f.server.limits.build.max_links < 1 || f.server.limits.build.max_joints < 1 ||
      f.server.limits.build.max_link_triangles < 1 || f.server.limits.build.max_self_pairs < 1) {
    std::cerr << "proximityd: --max-links, --max-joints, --max-link-triangles and --max-self-pairs must be >= 1\n";
    return 2;
  }
  if (f.server.registry.max_scenes_per_client < 0 || f.max_memory_mb_per_client < 0) {
    std::cerr << "proximityd: --max-scenes-per-client and --max-memory-mb-per-client must be >= 0\n";
    return 2;
  }
  f.server.registry.max_memory_bytes = f.max_memory_mb << 20;
  f.server.registry.max_memory_bytes_per_client = f.max_memory_mb_per_client << 20;
  if (!f.auth_token_file.empty()) {
    auto text = proximity::core::ReadFileUnder({}, f.auth_token_file);
    if (!text.ok()) {
      std::cerr << "proximityd: --auth-token-file: " << text.error().message << "\n";
      return 2;
    }
    // One token, or named clients' (ParseTokenFile); errors name the line, never a token.
    auto tokens = ParseTokenFile(text.value());
    if (!tokens.ok()) {
      std::cerr << "proximityd: --auth-token-file " << f.auth_token_file << ": " << tokens.error().message << "\n";
      return 2;
    }
    if (tokens.value().size() == 1 && tokens.value().front().name.empty()) {
      f.server.auth_token = tokens.value().front().token;
    } else {
      f.server.client_tokens = std::move(tokens).value();
    }
  }
  if (!(f.server.limits.max_call_seconds > 0.0) || !std::isfinite(f.server.limits.max_call_seconds)) {
    std::cerr << "proximityd: --max-call-seconds must be a finite number > 0\n";
    return 2;
  }
  if (!(f.server.http_request_timeout_seconds > 0.0) || !(f.server.http_request_timeout_seconds <= 86400.0)) {
    std::cerr << "proximityd: --http-request-timeout-seconds must be in (0, 86400]\n";
    return 2;
  }
  if (!(f.drain_seconds >= 0.0) || !std::isfinite(f.drain_seconds)) {
    std::cerr << "proximityd: --drain-seconds must be a finite number >= 0\n";
    return 2;
  }
  ConfigureLogging(f.log_format == "json" ? LogFormat::kJson : LogFormat::kText, level);
  f.server.default_scene = !f.no_default_scene;
  f.server.viewer = !f.no_viewer;

  // SIGTERM and SIGINT are blocked in every thread (gRPC's included) and taken by one thread with
  // sigwait, so the drain runs as ordinary code rather than in a signal handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto started = ProximityServer::Start(f.server);
  if (!started.ok()) {
    LogEvent(spdlog::level::critical, "cannot start", {{"error", started.error().message}});
    std::cerr << "proximityd: " << started.error().message << "\n";
    return 1;
  }
  ProximityServer& server = *started.value();
  if (!server.default_scene_id().empty()) {
    LogEvent(spdlog::level::info, "default scene loaded", {{"scene_id", server.default_scene_id()}, {"alias", "default"}});
  }
  std::string host;
  int unused_port = 0;
  if (!SplitHostPort(f.server.listen, &host, &unused_port)) host = f.server.listen;
  const std::string address = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                              std::to_string(server.port());
  std::string metrics_address;
  if (server.metrics_port() != 0) {
    std::string metrics_host;
    int metrics_port = 0;
    SplitHostPort(f.server.metrics_listen, &metrics_host, &metrics_port);
    metrics_address = metrics_host + ":" + std::to_string(server.metrics_port());
  }
  LogEvent(spdlog::level::info, "serving",
           {{"listen", address},
            {"metrics", metrics_address.empty() ? "disabled" : "http://" + metrics_address + "/metrics"},
            {"viewer",
             metrics_address.empty() || !f.server.viewer ? "disabled" : "http://" + metrics_address + "/viewer"}});
  // The one plain line scripts and tests wait for.
  std::fprintf(stderr, "proximityd listening on %s\n", address.c_str());
  std::fflush(stderr);

  std::thread watcher([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    LogEvent(spdlog::level::info, "draining", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"},
                                               {"drain_seconds", f.drain_seconds}});
    // A backstop: calls are cancelled when the drain time is over and every loop asks its call's stop
    // condition, but whatever still runs kDrainGraceSeconds later (a handler stuck outside any loop)
    // must not keep the process alive: it exits then, with status 1 (not a clean drain).
    constexpr double kDrainGraceSeconds = 3.0;
    std::thread([seconds = std::min(f.drain_seconds, 1e9) + kDrainGraceSeconds] {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      LogEvent(spdlog::level::err, "drain overran: exiting with calls still running", {{"after_seconds", seconds}});
      std::fflush(stderr);
      std::_Exit(1);
    }).detach();
    // A billion seconds (32 years) is as good as forever, and the clock can still count it.
    server.Shutdown(std::chrono::milliseconds(static_cast<int64_t>(std::min(f.drain_seconds, 1e9) * 1000.0)));
  });
  server.Wait();
  watcher.join();
  LogEvent(spdlog::level::info, "stopped");
  return 0;
}
