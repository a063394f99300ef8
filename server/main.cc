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
#include <type_traits>
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

// Every long flag, defined once: on the command line and as the config file's key of the same name.
class FlagTable {
 public:
  explicit FlagTable(CLI::App& app) : app_(app) {}
  // An option with a value; its default shown in --help.
  template <class T>
  CLI::Option* Add(const std::string& key, T& value, const std::string& help) {
    if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      setters_[key] = [&value](const YAML::Node& n) { value = StringList(n); };
      return app_.add_option("--" + key, value, help);
    } else if constexpr (std::is_same_v<T, std::string>) {
      setters_[key] = [&value](const YAML::Node& n) { value = n.IsNull() ? "" : n.as<std::string>(); };
      return app_.add_option("--" + key, value, help);
    } else {
      setters_[key] = [&value](const YAML::Node& n) { value = n.as<T>(); };
      return app_.add_option("--" + key, value, help)->capture_default_str();
    }
  }
  // An on/off flag; `true` in the config file sets it.
  void Flag(const std::string& key, bool& value, const std::string& help) {
    setters_[key] = [&value](const YAML::Node& n) { value = n.as<bool>(); };
    app_.add_flag("--" + key, value, help);
  }
  // Applies the config file's keys the command line left unset; an error sentence or "".
  std::string ApplyConfigFile(const std::string& path) const;

 private:
  CLI::App& app_;
  std::map<std::string, Setter> setters_;
};

std::string FlagTable::ApplyConfigFile(const std::string& path) const {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return "--config " + path + ": " + e.what();
  }
  if (!root.IsMap() && !root.IsNull()) return "--config " + path + ": expected a mapping of option: value";
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const auto it = setters_.find(key);
    if (it == setters_.end()) return "--config " + path + ": unknown key '" + key + "'";
    if (app_.get_option("--" + key)->count() > 0) continue;
    try {
      it->second(kv.second);
    } catch (const YAML::Exception& e) {
      return "--config " + path + ": key '" + key + "': " + e.what();
    }
  }
  return "";
}

// What requests and scenes may take on.
void AddLimitFlags(FlagTable& t, Flags& f) {
  ServerOptions& o = f.server;
  t.Add("max-message-bytes", o.max_message_bytes, "Largest request or response message");
  t.Add("max-batch-states", o.limits.max_batch_states, "Most configurations per request");
  t.Add("max-path-waypoints", o.limits.max_path_waypoints, "Most waypoints per path");
  t.Add("max-plan-seconds", o.limits.max_plan_seconds, "Largest Plan time limit, seconds");
  t.Add("max-session-batch", o.limits.max_session_batch, "Most queries in one Session batch");
  t.Add("max-call-seconds", o.limits.max_call_seconds,
        "Longest a query call may work whatever the client's deadline, seconds");
  t.Add("allow-path-root", o.allow_path_roots,
        "A directory whose files requests may name (urdf_path, package_dirs, mesh_file); repeatable; none by "
        "default: requests then upload content");
  t.Add("max-file-bytes", o.max_file_bytes, "Largest server file a request may have read");
  t.Add("max-scenes", o.registry.max_scenes, "Most scenes loaded at once (0: no limit)");
  t.Add("max-memory-mb", f.max_memory_mb,
        "Most memory scenes may hold, MiB (least recently used scenes are evicted first; 0: no limit)");
  t.Add("max-scenes-per-client", o.registry.max_scenes_per_client,
        "Most scenes one named client (--auth-token-file NAME TOKEN lines) owns; its own least recently used "
        "scenes give way first, never another client's (0: no limit)");
  t.Add("max-memory-mb-per-client", f.max_memory_mb_per_client,
        "Most memory the scenes one named client owns may hold, MiB; its own least recently used scenes give way "
        "first, never another client's (0: no limit)");
  t.Add("max-versions", o.registry.max_versions,
        "Most versions of one scene (its UpdateWorld chain) kept at once (0: no limit)");
  t.Add("max-scene-triangles", o.limits.max_scene_triangles, "Most triangles in one scene");
  t.Add("max-cloud-points", o.limits.max_cloud_points, "Most points in one point cloud as sent, before filtering");
  t.Add("max-scene-cloud-points", o.limits.max_scene_cloud_points,
        "Most point cloud points in one scene (kept points plus those an update sends)");
  t.Add("max-tracker-mb", f.max_tracker_mb,
        "Most memory a session's clearance tracker keeps between track queries, MiB; past it the tracker forgets "
        "its warm starts (same answers, colder) (0: no limit)");
  t.Add("max-links", o.limits.build.max_links, "Most links of a robot (checked before building)");
  t.Add("max-joints", o.limits.build.max_joints, "Most joints of a robot (checked before building)");
  t.Add("max-link-triangles", o.limits.build.max_link_triangles,
        "Most triangles of one link's collision mesh (checked before its hierarchy is built)");
  t.Add("max-self-pairs", o.limits.build.max_self_pairs,
        "Most robot part pairs a scene checks against each other (checked before pairing)");
  t.Add("max-concurrent-calls", o.max_concurrent_calls, "Calls served at once; more get RESOURCE_EXHAUSTED (0: no limit)");
}

// Where and how the service listens, who may call it, the built-in scene, the viewer and the logs.
void AddServiceFlags(FlagTable& t, Flags& f) {
  ServerOptions& o = f.server;
  t.Add("listen", o.listen, "gRPC address host:port (port 0 picks one)")->capture_default_str();
  t.Add("metrics-listen", o.metrics_listen, "Prometheus /metrics address; empty disables")->capture_default_str();
  t.Add("threads", o.threads, "Worker pool size (0: hardware concurrency)");
  t.Add("tls-cert", o.tls_cert_file, "Serve TLS with this certificate chain (PEM)");
  t.Add("tls-key", o.tls_key_file, "The TLS private key (PEM)");
  t.Add("tls-client-ca", o.tls_client_ca_file, "Mutual TLS: require client certificates signed by this CA (PEM)");
  t.Add("auth-token-file", f.auth_token_file,
        "Require 'authorization: Bearer <token>' on every call: the file holds one token, or one 'NAME TOKEN' "
        "line per named client ('#' comments)");
  t.Flag("reflection", o.reflection, "Serve gRPC server reflection (off by default)");
  t.Flag("no-default-scene", f.no_default_scene, "Do not load the built-in KR5 workcell");
  t.Flag("no-viewer", f.no_viewer, "Do not serve the viewer (/viewer and its JSON API) on the metrics port");
  t.Add("viewer-three-dir", o.viewer_three_dir,
        "Debian libjs-three's folder: the viewer serves its three.min.js and OrbitControls.js")
      ->capture_default_str();
  t.Add("viewer-allowed-host", o.viewer_allowed_hosts,
        "HOST or HOST:PORT: another Host the viewer's API answers (a name browsers reach this server by), besides "
        "the metrics address, localhost, 127.0.0.1 and [::1] at the metrics port; repeatable");
  // Hidden: for tests of the metrics port's timeouts.
  t.Add("http-request-timeout-seconds", o.http_request_timeout_seconds,
        "How long the metrics port waits for a whole HTTP request")
      ->group("");
  t.Add("default-scene-urdf", o.default_scene_urdf, "The built-in scene's robot URDF");
  t.Add("default-scene-srdf", o.default_scene_srdf, "With --default-scene-urdf: its SRDF (allowed pairs, groups, named states)");
  t.Add("default-scene-package", o.default_scene_packages,
        "With --default-scene-urdf: NAME=DIR, the folder package://NAME/ URIs resolve to (repeatable)");
  t.Add("max-connection-age-seconds", o.max_connection_age_seconds,
        "Close each client connection after about this long, so that clients re-resolve and reach new replicas "
        "(0: never)");
  t.Add("max-connection-age-grace-seconds", o.max_connection_age_grace_seconds,
        "How long calls in flight on an aged connection may finish");
  t.Add("drain-seconds", f.drain_seconds, "On SIGTERM, how long in-flight calls may finish");
  t.Add("log-level", f.log_level, "trace|debug|info|warn|error|off")->capture_default_str();
  t.Add("log-format", f.log_format, "json (one object per line) or text")
      ->check(CLI::IsMember({"json", "text"}))
      ->capture_default_str();
}

// The flags' values checked and turned into the server's options; an error sentence or "".
std::string Resolve(Flags& f) {
  ServerOptions& o = f.server;
  if (o.limits.max_batch_states < 1 || o.limits.max_path_waypoints < 1 || o.limits.max_session_batch < 1) {
    return "--max-batch-states, --max-path-waypoints and --max-session-batch must be >= 1";
  }
  if (!(o.limits.max_plan_seconds > 0.0) || !std::isfinite(o.limits.max_plan_seconds)) {
    return "--max-plan-seconds must be a finite number > 0";
  }
  if (f.max_memory_mb < 0 || o.registry.max_scenes < 0 || o.registry.max_versions < 0 || o.max_concurrent_calls < 0 ||
      o.limits.max_scene_triangles < 1) {
    return "--max-scenes, --max-memory-mb, --max-versions and --max-concurrent-calls must be >= 0, "
           "--max-scene-triangles >= 1";
  }
  if (o.limits.max_cloud_points < 1 || o.limits.max_scene_cloud_points < 1 || f.max_tracker_mb < 0) {
    return "--max-cloud-points and --max-scene-cloud-points must be >= 1, --max-tracker-mb >= 0";
  }
  if (o.limits.build.max_links < 1 || o.limits.build.max_joints < 1 || o.limits.build.max_link_triangles < 1 ||
      o.limits.build.max_self_pairs < 1) {
    return "--max-links, --max-joints, --max-link-triangles and --max-self-pairs must be >= 1";
  }
  if (o.registry.max_scenes_per_client < 0 || f.max_memory_mb_per_client < 0) {
    return "--max-scenes-per-client and --max-memory-mb-per-client must be >= 0";
  }
  o.limits.max_tracker_bytes = f.max_tracker_mb << 20;
  o.registry.max_memory_bytes = f.max_memory_mb << 20;
  o.registry.max_memory_bytes_per_client = f.max_memory_mb_per_client << 20;
  if (!f.auth_token_file.empty()) {
    auto text = proximity::core::ReadFileUnder({}, f.auth_token_file);
    if (!text.ok()) return "--auth-token-file: " + text.error().message;
    // One token, or named clients' (ParseTokenFile); errors name the line, never a token.
    auto tokens = proximity::server::ParseTokenFile(text.value());
    if (!tokens.ok()) return "--auth-token-file " + f.auth_token_file + ": " + tokens.error().message;
    if (tokens.value().size() == 1 && tokens.value().front().name.empty()) {
      o.auth_token = tokens.value().front().token;
    } else {
      o.client_tokens = std::move(tokens).value();
    }
  }
  if (!(o.limits.max_call_seconds > 0.0) || !std::isfinite(o.limits.max_call_seconds)) {
    return "--max-call-seconds must be a finite number > 0";
  }
  if (!(o.http_request_timeout_seconds > 0.0) || !(o.http_request_timeout_seconds <= 86400.0)) {
    return "--http-request-timeout-seconds must be in (0, 86400]";
  }
  if (!(f.drain_seconds >= 0.0) || !std::isfinite(f.drain_seconds)) return "--drain-seconds must be a finite number >= 0";
  o.default_scene = !f.no_default_scene;
  o.viewer = !f.no_viewer;
  return "";
}

// Logs where the server listens, and the one plain line scripts and tests wait for.
void AnnounceServing(const Flags& f, const proximity::server::ProximityServer& server) {
  using proximity::server::LogEvent;
  using proximity::server::SplitHostPort;
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
  std::fprintf(stderr, "proximityd listening on %s\n", address.c_str());
  std::fflush(stderr);
}

// Serves until SIGTERM or SIGINT, then drains; the exit status.
int Serve(const Flags& f) {
  using namespace proximity::server;
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
  AnnounceServing(f, server);
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

}  // namespace

int main(int argc, char** argv) {
  using namespace proximity::server;
  Flags f;
  CLI::App app{"proximityd: collision, distance and motion checks for robots in scenes, over gRPC"};
  app.add_option("--config", f.config, "YAML file with the same keys as the long flags (flags win)");
  FlagTable flags(app);
  AddServiceFlags(flags, f);
  AddLimitFlags(flags, f);
  CLI11_PARSE(app, argc, argv);
  if (!f.config.empty()) {
    if (const std::string error = flags.ApplyConfigFile(f.config); !error.empty()) {
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
  if (const std::string error = Resolve(f); !error.empty()) {
    std::cerr << "proximityd: " << error << "\n";
    return 2;
  }
  ConfigureLogging(f.log_format == "json" ? LogFormat::kJson : LogFormat::kText, level);
  return Serve(f);
}
