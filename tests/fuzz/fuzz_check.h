#pragma once
// What every fuzz target checks besides the sanitizers: a broken invariant prints what broke and
// aborts, which libFuzzer reports as a crash and saves the input.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "proximity/core/base/result.h"

#if __has_include(<console_bridge/console.h>)
#include <console_bridge/console.h>
#endif

#define PROX_FUZZ_CHECK(cond, what)                                                            \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "%s:%d: invariant failed: %s: %s\n", __FILE__, __LINE__, #cond,     \
                   std::string(what).c_str());                                                 \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)

namespace proximity::fuzz {

/// A refused input: an error value with a message, never kInternal (which marks a broken invariant
/// of the library, not a bad input).
inline void CheckError(const core::Error& e) {
  PROX_FUZZ_CHECK(!e.message.empty(), "error without a message");
  PROX_FUZZ_CHECK(e.code != core::ErrorCode::kInternal, e.message);
}

inline bool NotNan(double v) { return !std::isnan(v); }

#if __has_include(<console_bridge/console.h>)
/// urdfdom's reports of malformed URDF (one per rejected input) are silenced once per target.
inline const bool kQuietUrdfdom = [] {
  console_bridge::setLogLevel(console_bridge::CONSOLE_BRIDGE_LOG_NONE);
  return true;
}();
#endif

}  // namespace proximity::fuzz
