#pragma once
/// @file
/// Where a remote client connects and how it rides through a replica's loss: targets naming several
/// proximityd replicas, round-robin balancing and retries, as gRPC service config.
///
/// A target is one address ("127.0.0.1:50051", "localhost:50051"), several ("127.0.0.1:50061,127.0.0.1:50062",
/// or gRPC's own "ipv4:a:p,b:p" and "ipv6:[a]:p,[b]:p"), or a name that resolves to several
/// ("dns:///proximityd.ns.svc.cluster.local:50051", a Kubernetes headless Service). Several addresses or a
/// dns: name get gRPC's round_robin policy: calls spread over every replica, and one that goes away is
/// left out until it comes back.
///
/// Retries work at two levels. gRPC's retry policy (the service config's retryPolicy) re-sends a call that
/// failed UNAVAILABLE before the server answered, with exponential backoff, to another replica where there
/// is one. Every ProximityService method but DeleteScene is listed: queries are idempotent (the same request
/// gives the same answer on any replica), and CreateScene and UpdateWorld are too (scene ids are content
/// hashes). DeleteScene is left out: a repeat after a lost answer would report NOT_FOUND. A call that still
/// fails UNAVAILABLE is repeated whole by the client, RetryPolicy::rounds times at most.

#include <chrono>
#include <string>

#include "proximity/core/base/result.h"

namespace proximity::clients {

/// How calls are retried after UNAVAILABLE (a replica stopped, restarted or draining).
struct RetryPolicy {
  /// Attempts per call by gRPC's retry policy, the first included: 2 to 5 (gRPC's cap).
  int max_attempts = 5;
  /// Before the first retry (> 0); gRPC draws each wait at random up to the current backoff.
  std::chrono::milliseconds initial_backoff{50};
  /// Longest backoff (>= initial_backoff).
  std::chrono::milliseconds max_backoff{2000};
  /// Growth of the backoff per retry (>= 1).
  double backoff_multiplier = 2.0;
  /// Whole-call repeats by the client after gRPC's attempts (>= 0), each after its backoff.
  int rounds = 3;
  /// Off: no retry at either level.
  bool enabled = true;

  /// The wait before the client's `retry`-th whole-call repeat (0-based).
  std::chrono::milliseconds Backoff(int retry) const;
};

/// Errors naming the field for a policy outside the ranges above.
[[nodiscard]] core::Status ValidateRetryPolicy(const RetryPolicy& policy);

/// A target as gRPC takes it, and whether it may name several replicas (a list or a dns: name).
struct ResolvedTarget {
  std::string target;
  bool several = false;
};

/// "a:p,b:p" becomes "ipv4:a:p,b:p" (or ipv6:), other forms are checked and kept. Errors name the bad
/// entry: an empty target or entry, no port or one outside [1, 65535], a name in a list (a name that
/// resolves to several goes alone, as dns:///name:port), IPv4 and IPv6 mixed.
[[nodiscard]] core::Result<ResolvedTarget> ResolveTarget(const std::string& target);

/// The channel's service config JSON: round_robin balancing and `retry` (when enabled); "" for neither.
std::string ServiceConfigJson(bool round_robin, const RetryPolicy& retry);

}  // namespace proximity::clients
