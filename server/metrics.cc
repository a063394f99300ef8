#include "server/metrics.h"

#include <algorithm>
#include <sstream>

#include "server/errors.h"

namespace proximity::server {

static_assert(static_cast<size_t>(Metrics::kNumCodes) == kNumGrpcCodes, "one handled counter per gRPC code");

namespace {

constexpr const char* kService = "proximity.v1.ProximityService";
constexpr const char* kQueryKindNames[kNumQueryKinds] = {"clear", "distance", "link",  "path",
                                                          "ccd",   "plan",     "poses", "track"};

std::string Labels(Rpc rpc) {
  return std::string("grpc_service=\"") + kService + "\",grpc_method=\"" + RpcName(rpc) + "\",grpc_type=\"" +
         RpcType(rpc) + "\"";
}

std::string Le(double bound) {
  std::ostringstream s;
  s << bound;
  return s.str();
}

}  // namespace

const char* RpcName(Rpc rpc) {
  static constexpr const char* kNames[kNumRpcs] = {
      "CreateScene", "GetScene",        "ListScenes",  "UpdateWorld", "DeleteScene",   "CheckState",
      "CheckStates", "ComputeDistance", "CheckMotion", "CheckPath",   "ValidatePaths", "TimeOfFirstContact",
      "Plan",        "GetLinkPoses",    "GetSceneGeometry", "Session",
      "ComputeContacts", "ComputeSignedDistance", "NameScene", "GetIK"};
  return kNames[static_cast<int>(rpc)];
}

const char* RpcType(Rpc rpc) {
  if (rpc == Rpc::kValidatePaths) return "server_stream";
  return rpc == Rpc::kSession ? "bidi_stream" : "unary";
}

void Metrics::Handled(Rpc rpc, grpc::StatusCode code, double seconds) {
  PerRpc& r = rpcs_[Index(rpc)];
  r.handled[GrpcCodeIndex(code)].fetch_add(1, std::memory_order_relaxed);
  size_t b = 0;
  while (b < kBuckets.size() && seconds > kBuckets[b]) ++b;
  if (b < kBuckets.size()) r.buckets[b].fetch_add(1, std::memory_order_relaxed);
  r.count.fetch_add(1, std::memory_order_relaxed);
  r.sum_ns.fetch_add(static_cast<uint64_t>(seconds * 1e9), std::memory_order_relaxed);
}

void Metrics::AddWork(int64_t states, int64_t distance_queries, int64_t bv_tests, int64_t triangle_tests) {
  work_states_.fetch_add(static_cast<uint64_t>(states), std::memory_order_relaxed);
  work_distance_.fetch_add(static_cast<uint64_t>(distance_queries), std::memory_order_relaxed);
  work_bv_.fetch_add(static_cast<uint64_t>(bv_tests), std::memory_order_relaxed);
  work_triangles_.fetch_add(static_cast<uint64_t>(triangle_tests), std::memory_order_relaxed);
}

void Metrics::SetClients(const std::vector<std::string>& names) {
  std::lock_guard lock(clients_mutex_);
  for (const std::string& name : names) clients_.try_emplace(name, 0, 0);
}

void Metrics::SetClientShares(const std::vector<std::tuple<std::string, int64_t, int64_t>>& shares) {
  std::lock_guard lock(clients_mutex_);
  for (auto& [name, share] : clients_) share = {0, 0};
  for (const auto& [name, scenes, bytes] : shares) clients_[name] = {scenes, bytes};
}

uint64_t Metrics::HandledCount(Rpc rpc, grpc::StatusCode code) const {
  return rpcs_[Index(rpc)].handled[GrpcCodeIndex(code)].load(std::memory_order_relaxed);
}

std::string Metrics::RenderText() const {
  std::ostringstream out;
  out << "# HELP grpc_server_started_total Total number of RPCs started on the server.\n"
         "# TYPE grpc_server_started_total counter\n";
  for (int i = 0; i < kNumRpcs; ++i) {
    out << "grpc_server_started_total{" << Labels(Rpc(i)) << "} " << rpcs_[i].started.load() << "\n";
  }
  out << "# HELP grpc_server_handled_total Total number of RPCs completed on the server, regardless of success "
         "or failure.\n# TYPE grpc_server_handled_total counter\n";
  for (int i = 0; i < kNumRpcs; ++i) {
    for (int c = 0; c < kNumCodes; ++c) {
      const uint64_t n = rpcs_[i].handled[c].load();
      // Every method reports OK so the series exist from the start; other codes once they occur.
      if (n == 0 && c != 0) continue;
      out << "grpc_server_handled_total{" << Labels(Rpc(i)) << ",grpc_code=\""
          << GrpcCodeName(static_cast<grpc::StatusCode>(c)) << "\"} " << n << "\n";
    }
  }
  out << "# HELP grpc_server_handling_seconds Histogram of response latency (seconds) of gRPC that had been "
         "application-level handled by the server.\n# TYPE grpc_server_handling_seconds histogram\n";
  for (int i = 0; i < kNumRpcs; ++i) {
    const std::string labels = Labels(Rpc(i));
    uint64_t cumulative = 0;
    for (size_t b = 0; b < kBuckets.size(); ++b) {
      cumulative += rpcs_[i].buckets[b].load();
      out << "grpc_server_handling_seconds_bucket{" << labels << ",le=\"" << Le(kBuckets[b]) << "\"} " << cumulative
          << "\n";
    }
    const uint64_t count = rpcs_[i].count.load();
    out << "grpc_server_handling_seconds_bucket{" << labels << ",le=\"+Inf\"} " << count << "\n";
    out << "grpc_server_handling_seconds_sum{" << labels << "} " << static_cast<double>(rpcs_[i].sum_ns.load()) * 1e-9
        << "\n";
    out << "grpc_server_handling_seconds_count{" << labels << "} " << count << "\n";
  }
  out << "# HELP proximity_queries_total Proximity queries answered: clear per state, link per segment, path "
         "per path, distance and ccd per query, plan per Plan call (whose state and motion checks count as clear "
         "and link), poses per configuration GetLinkPoses posed.\n# TYPE proximity_queries_total counter\n";
  for (int k = 0; k < kNumQueryKinds; ++k) {
    out << "proximity_queries_total{kind=\"" << kQueryKindNames[k] << "\"} " << queries_[k].load() << "\n";
  }
  out << "# HELP proximity_work_total Work done by the queries.\n# TYPE proximity_work_total counter\n";
  out << "proximity_work_total{counter=\"bv_tests\"} " << work_bv_.load() << "\n";
  out << "proximity_work_total{counter=\"triangle_tests\"} " << work_triangles_.load() << "\n";
  out << "proximity_work_total{counter=\"distance_queries\"} " << work_distance_.load() << "\n";
  out << "proximity_work_total{counter=\"states\"} " << work_states_.load() << "\n";
  out << "# HELP proximity_scenes_loaded Scenes currently loaded.\n# TYPE proximity_scenes_loaded gauge\n";
  out << "proximity_scenes_loaded " << scenes_loaded_.load() << "\n";
  out << "# HELP proximity_scene_bytes Bytes held by loaded scenes (each robot model once).\n"
         "# TYPE proximity_scene_bytes gauge\n";
  out << "proximity_scene_bytes " << scene_bytes_.load() << "\n";
  {
    std::lock_guard lock(clients_mutex_);
    if (!clients_.empty()) {
      // Client names are [A-Za-z0-9._-]: nothing to escape in a label value.
      out << "# HELP proximity_client_scenes Scenes each named client owns (created or re-created by it, not yet "
             "deleted by it or evicted from its share).\n# TYPE proximity_client_scenes gauge\n";
      for (const auto& [name, share] : clients_) {
        out << "proximity_client_scenes{client=\"" << name << "\"} " << share.first << "\n";
      }
      out << "# HELP proximity_client_scene_bytes Bytes held by the scenes each named client owns (each robot "
             "model once; a scene several clients own counts in full for each).\n"
             "# TYPE proximity_client_scene_bytes gauge\n";
      for (const auto& [name, share] : clients_) {
        out << "proximity_client_scene_bytes{client=\"" << name << "\"} " << share.second << "\n";
      }
    }
  }
  out << "# HELP proximity_scene_evictions_total Scenes evicted (least recently used) to stay within the limits.\n"
         "# TYPE proximity_scene_evictions_total counter\n";
  out << "proximity_scene_evictions_total " << evictions_.load() << "\n";
  out << "# HELP proximity_scene_builds_total Scenes built from requests (content not loaded yet).\n"
         "# TYPE proximity_scene_builds_total counter\n";
  out << "proximity_scene_builds_total " << scene_builds_.load() << "\n";
  out << "# HELP proximity_stream_send_failures_total Streamed responses the client did not take.\n"
         "# TYPE proximity_stream_send_failures_total counter\n";
  out << "proximity_stream_send_failures_total " << failed_sends_.load() << "\n";
  out << "# HELP proximity_oversize_responses_total Responses refused for exceeding --max-message-bytes.\n"
         "# TYPE proximity_oversize_responses_total counter\n";
  out << "proximity_oversize_responses_total " << oversize_responses_.load() << "\n";
  out << "# HELP proximity_log_lines_suppressed_total Failed-call log lines left out by the rate limit.\n"
         "# TYPE proximity_log_lines_suppressed_total counter\n";
  out << "proximity_log_lines_suppressed_total " << suppressed_logs_.load() << "\n";
  return out.str();
}

bool SplitHostPort(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 >= address.size()) return false;
  *host = address.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  try {
    size_t used = 0;
    *port = std::stoi(address.substr(colon + 1), &used);
    if (used != address.size() - colon - 1 || *port < 0 || *port > 65535) return false;
  } catch (...) {
    return false;
  }
  return !host->empty();
}

}  // namespace proximity::server
