/// @file
/// Which build of the lane pass runs: the best the CPU supports, or the one PROXIMITY_SIMD or
/// ForceLaneTarget asks for when the CPU runs it.

#include "scene/lanes.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace proximity::core::internal {

namespace {

LaneTarget Supported() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return LaneTarget::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return LaneTarget::kAvx2;
#endif
  return LaneTarget::kBaseline;
}

LaneTarget Lowered(LaneTarget wanted) {
  const LaneTarget best = Supported();
  return static_cast<int>(wanted) < static_cast<int>(best) ? wanted : best;
}

LaneTarget Automatic() {
  const char* env = std::getenv("PROXIMITY_SIMD");
  if (env != nullptr) {
    if (std::strcmp(env, "baseline") == 0) return Lowered(LaneTarget::kBaseline);
    if (std::strcmp(env, "avx2") == 0) return Lowered(LaneTarget::kAvx2);
  }
  return Supported();
}

// -1: not chosen yet; else a LaneTarget.
std::atomic<int> g_target{-1};

}  // namespace

LaneTarget ActiveLaneTarget() {
  int t = g_target.load(std::memory_order_relaxed);
  if (t < 0) {
    t = static_cast<int>(Automatic());
    g_target.store(t, std::memory_order_relaxed);
  }
  return static_cast<LaneTarget>(t);
}

void ForceLaneTarget(std::optional<LaneTarget> target) {
  g_target.store(static_cast<int>(target ? Lowered(*target) : Automatic()), std::memory_order_relaxed);
}

const LaneKernels& ActiveLaneKernels() {
  static constexpr LaneKernels kBaseline{&PoseLanesBaseline, &BoxesOverlapLanesBaseline, &FixedBoxOverlapLanesBaseline};
  static constexpr LaneKernels kAvx2{&PoseLanesAvx2, &BoxesOverlapLanesAvx2, &FixedBoxOverlapLanesAvx2};
  static constexpr LaneKernels kAvx512{&PoseLanesAvx512, &BoxesOverlapLanesAvx512, &FixedBoxOverlapLanesAvx512};
  switch (ActiveLaneTarget()) {
    case LaneTarget::kAvx512:
      return kAvx512;
    case LaneTarget::kAvx2:
      return kAvx2;
    case LaneTarget::kBaseline:
      break;
  }
  return kBaseline;
}

std::string_view LaneTargetName(LaneTarget target) {
  switch (target) {
    case LaneTarget::kAvx512:
      return "avx512";
    case LaneTarget::kAvx2:
      return "avx2";
    case LaneTarget::kBaseline:
      break;
  }
  return "baseline";
}

}  // namespace proximity::core::internal
