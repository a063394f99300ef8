// The call's clock arithmetic (server/call.h): a deadline some seconds after a time point never
// overflows, whatever the operator's time limit or the client's deadline.

#include "server/call.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>

namespace proximity::server {
namespace {

using TimePoint = std::chrono::system_clock::time_point;

TEST(TimeAfter, AddsOrdinarySecondsExactlyEnoughForDeadlines) {
  const TimePoint now = std::chrono::system_clock::now();
  EXPECT_EQ(TimeAfter(now, 0.0), now);
  EXPECT_EQ(TimeAfter(now, 300.0) - now, std::chrono::seconds(300));
  const auto half = TimeAfter(now, 0.5) - now;
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(half).count(), 500);
  EXPECT_EQ(TimeAfter(now, 1e-9) - now, std::chrono::nanoseconds(1));
}

TEST(TimeAfter, SaturatesAtTheClocksEndInsteadOfWrappingIntoThePast) {
  const TimePoint now = std::chrono::system_clock::now();
  for (const double seconds : {1e10, 1e12, 1e300, std::numeric_limits<double>::max(),
                               std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_EQ(TimeAfter(now, seconds), TimePoint::max()) << seconds;
  }
  // A time point that is already the end (a call without a client deadline) stays there.
  EXPECT_EQ(TimeAfter(TimePoint::max(), 1.0), TimePoint::max());
  EXPECT_EQ(TimeAfter(TimePoint::max() - std::chrono::milliseconds(1500), 1.0), TimePoint::max());
  // Just inside the end still adds.
  const TimePoint late = TimePoint::max() - std::chrono::hours(1);
  EXPECT_EQ(TimeAfter(late, 60.0) - late, std::chrono::seconds(60));
}

TEST(TimeAfter, NegativeSecondsAreNone) {
  const TimePoint now = std::chrono::system_clock::now();
  EXPECT_EQ(TimeAfter(now, -1.0), now);
  EXPECT_EQ(TimeAfter(now, -std::numeric_limits<double>::infinity()), now);
}

}  // namespace
}  // namespace proximity::server
