#include "proximity/clients/remote_channel.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

namespace proximity::clients {
namespace {

constexpr int kMaxGrpcAttempts = 5;

// The methods safe to send again after UNAVAILABLE (every one but DeleteScene; remote_channel.h says why).
constexpr const char* kRetryableMethods[] = {
    "CreateScene",   "GetScene",      "ListScenes",         "UpdateWorld", "CheckState",
    "CheckStates",   "ComputeDistance", "CheckMotion",      "CheckPath",   "ValidatePaths",
    "TimeOfFirstContact", "Plan",     "GetLinkPoses",       "GetSceneGeometry"};

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

// host and port of "host:port" or "[v6]:port"; an error names `where` and the entry.
core::Status SplitHostPort(const std::string& entry, const std::string& where, std::string* host) {
  std::string port;
  if (!entry.empty() && entry.front() == '[') {
    const size_t close = entry.find(']');
    if (close == std::string::npos || close + 1 >= entry.size() || entry[close + 1] != ':') {
      return core::InvalidArgument(where + ": '" + entry + "' is not [ipv6]:port");
    }
    *host = entry.substr(1, close - 1);
    port = entry.substr(close + 2);
  } else {
    const size_t colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0 || entry.find(':') != colon) {
      return core::InvalidArgument(where + ": '" + entry +
                                   "' is not host:port (an IPv6 address goes in brackets: [::1]:50051)");
    }
    *host = entry.substr(0, colon);
    port = entry.substr(colon + 1);
  }
  const bool digits = !port.empty() && port.size() <= 5 &&
                      std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535) {
    return core::InvalidArgument(where + ": '" + entry + "' has no port in [1, 65535]");
  }
  return core::Status::Ok();
}

// 4 or 6 for an IP literal, 0 for a name.
int IpVersion(const std::string& host) {
  unsigned char buf[16];
  if (inet_pton(AF_INET, host.c_str(), buf) == 1) return 4;
  if (inet_pton(AF_INET6, host.c_str(), buf) == 1) return 6;
  return 0;
}

core::Result<std::string> AddressList(const std::vector<std::string>& entries, const std::string& where) {
  std::set<int> versions;
  std::string out;
  for (const std::string& entry : entries) {
    if (entry.empty()) return core::InvalidArgument(where + ": an empty address");
    std::string host;
    if (core::Status s = SplitHostPort(entry, where, &host); !s.ok()) return s.error();
    const int v = IpVersion(host);
    if (v == 0) {
      return core::InvalidArgument(where + ": '" + entry +
                                   "' is a name, not an IP address; a list takes IP addresses (a name that "
                                   "resolves to several replicas goes alone: dns:///" + entry + ")");
    }
    versions.insert(v);
    out += (out.empty() ? "" : ",") + entry;
  }
  if (versions.size() > 1) return core::InvalidArgument(where + ": IPv4 and IPv6 addresses cannot be mixed in one list");
  return (*versions.begin() == 6 ? "ipv6:" : "ipv4:") + out;
}

// A protobuf JSON Duration ("0.05s").
std::string Duration(std::chrono::milliseconds d) {
  char text[32];
  std::snprintf(text, sizeof(text), "%lld.%03llds", static_cast<long long>(d.count() / 1000),
                static_cast<long long>(d.count() % 1000));
  return text;
}

}  // namespace

std::chrono::milliseconds RetryPolicy::Backoff(int retry) const {
  const double ms = static_cast<double>(initial_backoff.count()) * std::pow(backoff_multiplier, retry);
  return std::chrono::milliseconds(static_cast<int64_t>(std::min(ms, static_cast<double>(max_backoff.count()))));
}

core::Status ValidateRetryPolicy(const RetryPolicy& p) {
  if (!p.enabled) return core::Status::Ok();
  if (p.max_attempts < 2 || p.max_attempts > kMaxGrpcAttempts) {
    return core::InvalidArgument("retry policy: max_attempts must be in [2, 5] (gRPC's cap), got " +
                                 std::to_string(p.max_attempts));
  }
  if (p.initial_backoff.count() <= 0) {
    return core::InvalidArgument("retry policy: initial_backoff must be > 0 ms, got " +
                                 std::to_string(p.initial_backoff.count()));
  }
  if (p.max_backoff < p.initial_backoff) {
    return core::InvalidArgument("retry policy: max_backoff (" + std::to_string(p.max_backoff.count()) +
                                 " ms) must be >= initial_backoff (" + std::to_string(p.initial_backoff.count()) +
                                 " ms)");
  }
  if (!(p.backoff_multiplier >= 1.0) || !std::isfinite(p.backoff_multiplier)) {
    return core::InvalidArgument("retry policy: backoff_multiplier must be a finite number >= 1, got " +
                                 std::to_string(p.backoff_multiplier));
  }
  if (p.rounds < 0) return core::InvalidArgument("retry policy: rounds must be >= 0, got " + std::to_string(p.rounds));
  return core::Status::Ok();
}

core::Result<ResolvedTarget> ResolveTarget(const std::string& target) {
  if (target.empty()) {
    return core::InvalidArgument("target is empty (expected host:port, a list of them, or dns:///name:port)");
  }
  const std::string where = "target '" + target + "'";
  const size_t colon = target.find(':');
  const std::string scheme = colon == std::string::npos ? "" : target.substr(0, colon);
  if (scheme == "ipv4" || scheme == "ipv6") {
    const std::vector<std::string> entries = Split(target.substr(colon + 1), ',');
    auto list = AddressList(entries, where);
    if (!list.ok()) return list.error();
    if (list.value().rfind(scheme + ":", 0) != 0) {
      return core::InvalidArgument(where + ": the addresses are not " + scheme + " addresses");
    }
    return ResolvedTarget{list.value(), entries.size() > 1};
  }
  if (scheme == "dns") {
    std::string rest = target.substr(4);
    if (rest.rfind("//", 0) == 0) {
      const size_t slash = rest.find('/', 2);
      if (slash == std::string::npos) {
        return core::InvalidArgument(where + ": expected dns:///name:port or dns://resolver/name:port");
      }
      rest = rest.substr(slash + 1);
    }
    std::string host;
    if (core::Status s = SplitHostPort(rest, where, &host); !s.ok()) return s.error();
    return ResolvedTarget{target, true};
  }
  if (scheme == "unix" || scheme == "unix-abstract" || scheme == "vsock") return ResolvedTarget{target, false};
  if (target.find(',') != std::string::npos) {
    auto list = AddressList(Split(target, ','), where);
    if (!list.ok()) return list.error();
    return ResolvedTarget{list.value(), true};
  }
  std::string host;
  if (core::Status s = SplitHostPort(target, where, &host); !s.ok()) return s.error();
  return ResolvedTarget{target, false};
}

std::string ServiceConfigJson(bool round_robin, const RetryPolicy& retry) {
  std::string parts;
  if (round_robin) parts += R"("loadBalancingConfig":[{"round_robin":{}}])";
  if (retry.enabled) {
    std::string names;
    for (const char* m : kRetryableMethods) {
      names += std::string(names.empty() ? "" : ",") + R"({"service":"proximity.v1.ProximityService","method":")" +
               m + "\"}";
    }
    names += R"(,{"service":"grpc.health.v1.Health","method":"Check"})";
    char multiplier[32];
    std::snprintf(multiplier, sizeof(multiplier), "%.6g", retry.backoff_multiplier);
    parts += std::string(parts.empty() ? "" : ",") + R"("methodConfig":[{"name":[)" + names +
             R"(],"retryPolicy":{"maxAttempts":)" + std::to_string(retry.max_attempts) + R"(,"initialBackoff":")" +
             Duration(retry.initial_backoff) + R"(","maxBackoff":")" + Duration(retry.max_backoff) +
             R"(","backoffMultiplier":)" + multiplier + R"(,"retryableStatusCodes":["UNAVAILABLE"]}}])";
  }
  return parts.empty() ? "" : "{" + parts + "}";
}

}  // namespace proximity::clients
