#pragma once
/// @file
/// The core's rounding allowance and its query counters' bookkeeping: what every certified bound and
/// every query's QueryStats share, not shown to users.

#include <cstdint>
#include <limits>

#include "proximity/core/base/types.h"

namespace proximity::core {

/// How far rounding can move a distance or a distance bound computed from points whose coordinates are
/// at most `scale` in magnitude (metres, in every frame the computation passes through, translations of
/// the poses included). Each such value is a short chain of operations on those coordinates: a rigid
/// transform (three products and three sums a coordinate, rotation entries themselves rounded), a
/// difference, a dot or cross product, a square root, a division. Each step adds an error of at most a
/// few units of the last place of `scale` (about 12 eps * scale in all for the longest chain, GJK's
/// support-plane bound); kRoundingUlps doubles that twice over. Certified lower bounds are lowered by
/// this allowance, so that they hold under any rounding, on any CPU and with any contraction of products
/// into fused multiply-adds, not only on the build machine.
inline constexpr double kRoundingUlps = 64.0;
inline constexpr double RoundingAllowance(double scale) {
  return kRoundingUlps * std::numeric_limits<double>::epsilon() * scale;
}

/// At most this many GJK iterations from a warm start count as answered warm (the cached axis or
/// simplex was, or was next to, the answer).
inline constexpr int32_t kWarmGjkIterations = 2;

/// Counts one GJK test on convex stand-ins in *stats: `warm_start` when the cache held a previous answer.
inline void CountConvex(QueryStats* stats, bool warm_start, int32_t iterations) {
  ++stats->convex_tests;
  stats->convex_iterations += iterations;
  stats->convex_warm += warm_start && iterations <= kWarmGjkIterations;
}

}  // namespace proximity::core
