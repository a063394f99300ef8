// Batch scheduling (server/batch.h) on a real worker pool (worker_pool.cc), without gRPC: how batches are
// chunked, the order items run and results are sent in, cancellation between items, and error propagation.

#include "server/batch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "server/worker_pool.h"

namespace proximity::server {
namespace {

// A stop condition: stops once Stop() is called, or at its `after`-th poll (0-based) when `after` >= 0.
class TestStop {
 public:
  explicit TestStop(int64_t after = -1) : after_(after) {}
  bool Stopped() {
    if (flag_.load()) return true;
    if (after_ >= 0 && polls_.fetch_add(1) >= after_) flag_.store(true);
    return flag_.load();
  }
  bool stopped() const { return flag_.load(); }
  bool Stop() {
    flag_.store(true);
    return true;
  }

 private:
  int64_t after_;
  std::atomic<int64_t> polls_{0};
  std::atomic<bool> flag_{false};
};

// Per-item marks written by workers (each item by at most one worker).
struct Marks {
  explicit Marks(int64_t n) : runs(static_cast<size_t>(n)), slot(static_cast<size_t>(n)) {
    for (auto& r : runs) r.store(0);
  }
  std::vector<std::atomic<int>> runs;
  std::vector<int> slot;
  int64_t Ran() const {
    int64_t k = 0;
    for (const auto& r : runs) k += r.load() > 0 ? 1 : 0;
    return k;
  }
};

TEST(BatchTest, ChunksBalanceTheSlotsWithinBounds) {
  EXPECT_EQ(ChunksOf(0, 2).count, 0);
  // Small batches: one chunk of at least 16 items.
  EXPECT_EQ(ChunksOf(10, 2).size, 16);
  EXPECT_EQ(ChunksOf(10, 2).count, 1);
  EXPECT_EQ(ChunksOf(16, 1).count, 1);
  EXPECT_EQ(ChunksOf(17, 1).count, 2);
  // About 8 chunks a slot in between.
  EXPECT_EQ(ChunksOf(5000, 4).size, 156);
  EXPECT_EQ(ChunksOf(5000, 4).count, 33);
  // Large batches: at most 1024 items a chunk.
  EXPECT_EQ(ChunksOf(1'000'000, 2).size, 1024);
  EXPECT_EQ(ChunksOf(1'000'000, 2).count, 977);
  for (int64_t n : {1, 15, 16, 17, 1000, 4097, 123457}) {
    for (int slots : {1, 2, 3, 8}) {
      const Chunks c = ChunksOf(n, slots);
      EXPECT_GE(c.size, 16);
      EXPECT_LE(c.size, 1024);
      EXPECT_GE(c.size * c.count, n) << n << " items, " << slots << " slots";
      EXPECT_LT(c.size * (c.count - 1), n) << n << " items, " << slots << " slots";
    }
  }
}

TEST(BatchTest, EveryItemRunsOnceAndEachChunkOnOneSlotInOrder) {
  WorkerPool pool(4);
  const int64_t n = 10'007;  // not a multiple of the chunk size
  Marks marks(n);
  std::vector<std::atomic<int64_t>> last(static_cast<size_t>(pool.slots()));
  for (auto& l : last) l.store(-1);
  std::atomic<int> out_of_order{0};
  TestStop stop;
  const BatchOutcome outcome = RunChunked(pool, n, stop, [&](int64_t i, int slot) -> core::Status {
    marks.runs[static_cast<size_t>(i)].fetch_add(1);
    marks.slot[static_cast<size_t>(i)] = slot;
    // Chunks are claimed in increasing order and run in order: a slot's items only increase.
    if (last[static_cast<size_t>(slot)].exchange(i) >= i) out_of_order.fetch_add(1);
    return {};
  });
  EXPECT_EQ(outcome.done, n);
  EXPECT_FALSE(outcome.stopped);
  EXPECT_FALSE(outcome.error.has_value());
  EXPECT_EQ(out_of_order.load(), 0);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(marks.runs[static_cast<size_t>(i)].load(), 1) << "item " << i;
  const Chunks chunks = ChunksOf(n, pool.slots());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t first = i / chunks.size * chunks.size;
    ASSERT_EQ(marks.slot[static_cast<size_t>(i)], marks.slot[static_cast<size_t>(first)])
        << "item " << i << " ran on another slot than its chunk's first item";
    ASSERT_GE(marks.slot[static_cast<size_t>(i)], 0);
    ASSERT_LT(marks.slot[static_cast<size_t>(i)], pool.slots());
  }
}

TEST(BatchTest, OneThreadRunsItemsInRequestOrder) {
  WorkerPool pool(1);
  std::vector<int64_t> order;
  TestStop stop;
  const BatchOutcome outcome = RunChunked(pool, 3000, stop, [&](int64_t i, int slot) -> core::Status {
    EXPECT_EQ(slot, 0);
    order.push_back(i);
    return {};
  });
  EXPECT_EQ(outcome.done, 3000);
  std::vector<int64_t> expected(3000);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
}

TEST(BatchTest, EmptyBatchDoesNothing) {
  WorkerPool pool(2);
  TestStop stop;
  int calls = 0;
  const BatchOutcome a = RunChunked(pool, 0, stop, [&](int64_t, int) -> core::Status {
    ++calls;
    return {};
  });
  const BatchOutcome b = StreamResults<int>(
      pool, 0, stop,
      [&](int64_t, int, int*) -> core::Result<bool> {
        ++calls;
        return true;
      },
      [&](const int&) { return true; });
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(a.done, 0);
  EXPECT_EQ(b.done, 0);
  EXPECT_FALSE(a.stopped || b.stopped || a.error || b.error);
}

TEST(BatchTest, ChunkedBatchStopsBetweenItemsWhenCancelled) {
  // One thread: the stop condition is asked before each item, so exactly the items before it ran.
  {
    WorkerPool pool(1);
    Marks marks(5000);
    TestStop stop(/*after=*/1234);
    const BatchOutcome outcome = RunChunked(pool, 5000, stop, [&](int64_t i, int) -> core::Status {
      marks.runs[static_cast<size_t>(i)].fetch_add(1);
      return {};
    });
    EXPECT_TRUE(outcome.stopped);
    EXPECT_FALSE(outcome.error.has_value());
    EXPECT_EQ(outcome.done, 1234);
    EXPECT_EQ(marks.Ran(), 1234);
    for (int64_t i = 0; i < 1234; ++i) ASSERT_EQ(marks.runs[static_cast<size_t>(i)].load(), 1) << i;
  }
  // Several threads, cancelled from inside an item: the others stop at their next item, and `done`
  // counts exactly the items that ran.
  {
    WorkerPool pool(4);
    const int64_t n = 200'000;
    Marks marks(n);
    TestStop stop;
    std::atomic<int64_t> ran{0};
    const BatchOutcome outcome = RunChunked(pool, n, stop, [&](int64_t i, int) -> core::Status {
      marks.runs[static_cast<size_t>(i)].fetch_add(1);
      if (ran.fetch_add(1) + 1 == 500) stop.Stop();
      return {};
    });
    EXPECT_TRUE(outcome.stopped);
    EXPECT_EQ(outcome.done, ran.load());
    EXPECT_EQ(marks.Ran(), ran.load());
    EXPECT_GE(outcome.done, 500);
    EXPECT_LT(outcome.done, n);
  }
}

TEST(BatchTest, ChunkedBatchReportsTheFirstErrorAndStartsNoMoreItems) {
  // One thread: items after the failing one never run; the failing item is not counted as done.
  {
    WorkerPool pool(1);
    Marks marks(4000);
    TestStop stop;
    const BatchOutcome outcome = RunChunked(pool, 4000, stop, [&](int64_t i, int) -> core::Status {
      marks.runs[static_cast<size_t>(i)].fetch_add(1);
      if (i == 1037) return core::InvalidArgument("states: configuration 1037: bad");
      return {};
    });
    ASSERT_TRUE(outcome.error.has_value());
    EXPECT_EQ(outcome.error->code, core::ErrorCode::kInvalidArgument);
    EXPECT_EQ(outcome.error->message, "states: configuration 1037: bad");
    EXPECT_FALSE(outcome.stopped);
    EXPECT_EQ(outcome.done, 1037);
    EXPECT_EQ(marks.Ran(), 1038);
    EXPECT_EQ(marks.runs[1038].load(), 0);
  }
  // Several threads, every item from 3000 on failing: one of their errors (the first in time) comes
  // back with its code, and the batch ends early.
  {
    WorkerPool pool(4);
    const int64_t n = 100'000;
    Marks marks(n);
    TestStop stop;
    const BatchOutcome outcome = RunChunked(pool, n, stop, [&](int64_t i, int) -> core::Status {
      marks.runs[static_cast<size_t>(i)].fetch_add(1);
      if (i >= 3000) return core::ResourceExhausted("item " + std::to_string(i));
      return {};
    });
    ASSERT_TRUE(outcome.error.has_value());
    EXPECT_EQ(outcome.error->code, core::ErrorCode::kResourceExhausted);
    EXPECT_EQ(outcome.error->message.rfind("item ", 0), 0u) << outcome.error->message;
    EXPECT_GE(std::stoll(outcome.error->message.substr(5)), 3000);
    EXPECT_FALSE(outcome.stopped);
    EXPECT_LT(marks.Ran(), n);
    EXPECT_LT(outcome.done, n);
    EXPECT_LE(outcome.done, 3000);
  }
}

// RunChunkedRuns: every item in exactly one run, runs of at most max_run items within one chunk, in
// increasing order on their slot; the stop condition asked before each run (so a run once started
// finishes, and `done` counts whole runs); a failed run stops the batch and counts none of its items.
TEST(BatchTest, RunsCoverEveryItemOnceWithinTheirChunks) {
  WorkerPool pool(4);
  const int64_t n = 100'003;
  const int64_t max_run = 100;
  Marks marks(n);
  std::vector<std::atomic<int64_t>> last(static_cast<size_t>(pool.slots()));
  for (auto& l : last) l.store(-1);
  std::atomic<int> bad_runs{0};
  TestStop stop;
  const Chunks chunks = ChunksOf(n, pool.slots());
  ASSERT_GT(chunks.size, max_run) << "the test needs chunks of several runs";
  const BatchOutcome outcome = RunChunkedRuns(pool, n, max_run, stop, [&](int64_t begin, int64_t end, int slot) {
    const bool one_chunk = begin / chunks.size == (end - 1) / chunks.size;
    if (end <= begin || end - begin > max_run || !one_chunk) bad_runs.fetch_add(1);
    // A run that ends before its chunk does is a full one.
    if (end - begin < max_run && end % chunks.size != 0 && end != n) bad_runs.fetch_add(1);
    if (last[static_cast<size_t>(slot)].exchange(begin) >= begin) bad_runs.fetch_add(1);
    for (int64_t i = begin; i < end; ++i) marks.runs[static_cast<size_t>(i)].fetch_add(1);
    return core::Status{};
  });
  EXPECT_EQ(outcome.done, n);
  EXPECT_FALSE(outcome.stopped || outcome.error.has_value());
  EXPECT_EQ(bad_runs.load(), 0);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(marks.runs[static_cast<size_t>(i)].load(), 1) << "item " << i;

  // One thread, stopped at the 7th poll: six whole runs ran.
  {
    WorkerPool one(1);
    TestStop at(/*after=*/6);
    int64_t items = 0;
    const BatchOutcome stopped = RunChunkedRuns(one, 5000, 64, at, [&](int64_t begin, int64_t end, int) {
      items += end - begin;
      return core::Status{};
    });
    EXPECT_TRUE(stopped.stopped);
    EXPECT_EQ(stopped.done, 6 * 64);
    EXPECT_EQ(items, 6 * 64);
  }
  // One thread, the run holding item 1037 fails: the runs before it are done, none after it starts.
  {
    WorkerPool one(1);
    TestStop never;
    int64_t last_begin = -1;
    const BatchOutcome failed = RunChunkedRuns(one, 4000, 64, never, [&](int64_t begin, int64_t end, int) {
      last_begin = begin;
      if (begin <= 1037 && 1037 < end) return core::Status(core::InvalidArgument("states: configuration 1037: bad"));
      return core::Status{};
    });
    ASSERT_TRUE(failed.error.has_value());
    EXPECT_EQ(failed.error->message, "states: configuration 1037: bad");
    EXPECT_FALSE(failed.stopped);
    EXPECT_LE(failed.done, 1037);
    EXPECT_GT(failed.done, 1037 - 64);
    EXPECT_LE(last_begin, 1037);
  }
  // Nothing to do.
  {
    TestStop never;
    int calls = 0;
    const BatchOutcome empty = RunChunkedRuns(pool, 0, 64, never, [&](int64_t, int64_t, int) {
      ++calls;
      return core::Status{};
    });
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(empty.done, 0);
  }
}

TEST(BatchTest, StreamSendsEveryResultOnceOneSendAtATime) {
  WorkerPool pool(4);
  const int64_t n = 2000;
  std::vector<int64_t> sent;
  std::atomic<int> sending{0};
  std::atomic<int> overlaps{0};
  TestStop stop;
  const BatchOutcome outcome = StreamResults<int64_t>(
      pool, n, stop,
      [&](int64_t i, int, int64_t* out) -> core::Result<bool> {
        *out = i;
        return true;
      },
      [&](const int64_t& r) {
        if (sending.fetch_add(1) != 0) overlaps.fetch_add(1);
        sent.push_back(r);  // unguarded on purpose: sends never overlap
        sending.fetch_sub(1);
        return true;
      });
  EXPECT_EQ(outcome.done, n);
  EXPECT_FALSE(outcome.stopped || outcome.error);
  EXPECT_EQ(overlaps.load(), 0);
  std::sort(sent.begin(), sent.end());
  std::vector<int64_t> expected(static_cast<size_t>(n));
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(sent, expected);
}

TEST(BatchTest, StreamOnOneThreadSendsInRequestOrderAndSkipsEmptyResults) {
  WorkerPool pool(1);
  std::vector<int64_t> sent;
  TestStop stop;
  const BatchOutcome outcome = StreamResults<int64_t>(
      pool, 100, stop,
      [&](int64_t i, int slot, int64_t* out) -> core::Result<bool> {
        EXPECT_EQ(slot, 0);
        *out = i;
        return i % 3 != 0;  // every third item has nothing to send (stopped part way)
      },
      [&](const int64_t& r) {
        sent.push_back(r);
        return true;
      });
  std::vector<int64_t> expected;
  for (int64_t i = 0; i < 100; ++i) {
    if (i % 3 != 0) expected.push_back(i);
  }
  EXPECT_EQ(sent, expected);
  EXPECT_EQ(outcome.done, static_cast<int64_t>(expected.size()));
  EXPECT_FALSE(outcome.stopped || outcome.error);
}

TEST(BatchTest, StreamStopsWhenTheReceiverIsGone) {
  // The third send fails: the batch stops itself, no later task runs (one thread) and `done` counts the
  // results that went out.
  {
    WorkerPool pool(1);
    Marks marks(50);
    TestStop stop;
    int sends = 0;
    const BatchOutcome outcome = StreamResults<int64_t>(
        pool, 50, stop,
        [&](int64_t i, int, int64_t* out) -> core::Result<bool> {
          marks.runs[static_cast<size_t>(i)].fetch_add(1);
          *out = i;
          return true;
        },
        [&](const int64_t&) { return ++sends < 3; });
    EXPECT_TRUE(outcome.stopped);
    EXPECT_TRUE(stop.stopped());
    EXPECT_EQ(outcome.done, 2);
    EXPECT_EQ(sends, 3);
    EXPECT_EQ(marks.Ran(), 3);
  }
  // Several threads: once a send failed nothing more is sent.
  {
    WorkerPool pool(4);
    TestStop stop;
    std::atomic<int> sends{0}, after_failure{0};
    std::atomic<bool> failed{false};
    const BatchOutcome outcome = StreamResults<int64_t>(
        pool, 10'000, stop,
        [&](int64_t i, int, int64_t* out) -> core::Result<bool> {
          *out = i;
          return true;
        },
        [&](const int64_t&) {
          if (failed.load()) after_failure.fetch_add(1);
          if (sends.fetch_add(1) + 1 == 100) {
            failed.store(true);
            return false;
          }
          return true;
        });
    EXPECT_TRUE(outcome.stopped);
    EXPECT_EQ(outcome.done, 99);
    EXPECT_EQ(after_failure.load(), 0);
  }
}

TEST(BatchTest, StreamStopsWhenCancelledAndSendsNothingAfter) {
  WorkerPool pool(1);
  TestStop stop(/*after=*/7);
  std::vector<int64_t> sent;
  const BatchOutcome outcome = StreamResults<int64_t>(
      pool, 40, stop,
      [&](int64_t i, int, int64_t* out) -> core::Result<bool> {
        *out = i;
        return true;
      },
      [&](const int64_t& r) {
        sent.push_back(r);
        return true;
      });
  EXPECT_TRUE(outcome.stopped);
  EXPECT_EQ(outcome.done, 7);
  EXPECT_EQ(sent, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  // A result made after the call was stopped (the item noticed the stop itself) is not sent.
  TestStop stop_inside;
  sent.clear();
  const BatchOutcome inside = StreamResults<int64_t>(
      pool, 10, stop_inside,
      [&](int64_t i, int, int64_t* out) -> core::Result<bool> {
        *out = i;
        if (i == 4) stop_inside.Stop();
        return true;
      },
      [&](const int64_t& r) {
        sent.push_back(r);
        return true;
      });
  EXPECT_TRUE(inside.stopped);
  EXPECT_EQ(inside.done, 4);
  EXPECT_EQ(sent, (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(BatchTest, StreamReportsATaskErrorAndSendsNoLaterResult) {
  WorkerPool pool(1);
  TestStop stop;
  std::vector<int64_t> sent;
  const BatchOutcome outcome = StreamResults<int64_t>(
      pool, 30, stop,
      [&](int64_t i, int, int64_t* out) -> core::Result<bool> {
        if (i == 12) return core::InvalidArgument("paths[12]: waypoint 3 is not finite");
        *out = i;
        return true;
      },
      [&](const int64_t& r) {
        sent.push_back(r);
        return true;
      });
  ASSERT_TRUE(outcome.error.has_value());
  EXPECT_EQ(outcome.error->code, core::ErrorCode::kInvalidArgument);
  EXPECT_EQ(outcome.error->message, "paths[12]: waypoint 3 is not finite");
  EXPECT_FALSE(outcome.stopped);
  EXPECT_EQ(outcome.done, 12);
  EXPECT_EQ(sent.size(), 12u);
  EXPECT_EQ(sent.back(), 11);
}

TEST(BatchTest, PerSlotEntriesMergeInIndexOrder) {
  struct Slot {
    std::vector<std::pair<int64_t, std::string>> entries;
  };
  // Gathered by a real batch: every third item, by whichever slot ran it.
  WorkerPool pool(4);
  std::vector<Slot> slots(static_cast<size_t>(pool.slots()));
  TestStop stop;
  const int64_t n = 20'000;
  const BatchOutcome outcome = RunChunked(pool, n, stop, [&](int64_t i, int slot) -> core::Status {
    if (i % 3 == 0) slots[static_cast<size_t>(slot)].entries.emplace_back(i, std::to_string(i));
    return {};
  });
  ASSERT_EQ(outcome.done, n);
  const auto merged = InIndexOrder(slots, [](const Slot& s) -> const auto& { return s.entries; });
  ASSERT_EQ(static_cast<int64_t>(merged.size()), (n + 2) / 3);
  for (size_t k = 0; k < merged.size(); ++k) {
    ASSERT_EQ(merged[k].first, static_cast<int64_t>(3 * k));
    ASSERT_EQ(merged[k].second, std::to_string(3 * k));
  }
  // Interleaved by hand.
  std::vector<Slot> hand(3);
  hand[0].entries = {{5, "e"}, {1, "a"}};
  hand[2].entries = {{3, "c"}, {9, "z"}, {2, "b"}};
  const auto m = InIndexOrder(hand, [](const Slot& s) -> const auto& { return s.entries; });
  const std::vector<std::pair<int64_t, std::string>> expected = {{1, "a"}, {2, "b"}, {3, "c"}, {5, "e"}, {9, "z"}};
  EXPECT_EQ(m, expected);
}

}  // namespace
}  // namespace proximity::server
