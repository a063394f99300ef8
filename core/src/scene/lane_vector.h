#pragma once
/// @file
/// kLanes doubles as one GCC vector, for the lane kernels (lanes_kernel.inc, built once per instruction
/// set) and CheckStates' block loop (state_batch.cc): each operation is one instruction per register on
/// AVX-512, two on AVX2, four SSE2 ones on the baseline. Everything here is in an unnamed namespace and
/// always inlined: each translation unit gets its own copy for its own instruction set, so no copy
/// compiled for one set can serve a caller built for another (see lanes.h).

#include <cstdint>

#include "scene/lanes.h"

// Lanes travel by value only between these always-inlined helpers and their callers in the same file:
// no call crosses the vector-argument ABI GCC warns about when the target's registers are narrower
// than kLanes doubles (the warning is reported at the end of the file, so it stays off to the end).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace proximity::core::internal {
namespace {

typedef double Lanes __attribute__((vector_size(sizeof(double) * kLanes)));
typedef int64_t LaneBits __attribute__((vector_size(sizeof(double) * kLanes)));

[[gnu::always_inline]] inline Lanes Load(const LaneVec& a) {
  Lanes out;
  __builtin_memcpy(&out, a.v, sizeof(out));
  return out;
}

[[gnu::always_inline]] inline Lanes Load(const double* a) {
  Lanes out;
  __builtin_memcpy(&out, a, sizeof(out));
  return out;
}

[[gnu::always_inline]] inline void Store(LaneVec& a, Lanes v) { __builtin_memcpy(a.v, &v, sizeof(v)); }

[[gnu::always_inline]] inline Lanes Abs(Lanes v) {
  return reinterpret_cast<Lanes>(reinterpret_cast<LaneBits>(v) & INT64_MAX);
}

// Bit k set where lane k of `ok` is all ones: each lane keeps its own bit, then the halves are or-ed
// together (three steps instead of eight lane extractions).
[[gnu::always_inline]] inline uint32_t LaneMask(LaneBits ok) {
  static_assert(kLanes == 8, "the reduction below halves 8 lanes three times");
  typedef int64_t Half __attribute__((vector_size(4 * sizeof(int64_t))));
  typedef int64_t Quarter __attribute__((vector_size(2 * sizeof(int64_t))));
  const LaneBits bits = ok & LaneBits{1, 2, 4, 8, 16, 32, 64, 128};
  const Half h = __builtin_shufflevector(bits, bits, 0, 1, 2, 3) | __builtin_shufflevector(bits, bits, 4, 5, 6, 7);
  const Quarter q = __builtin_shufflevector(h, h, 0, 1) | __builtin_shufflevector(h, h, 2, 3);
  return static_cast<uint32_t>(q[0] | q[1]);
}

}  // namespace
}  // namespace proximity::core::internal
