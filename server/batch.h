#pragma once
/// @file
/// How a batch request's items are spread over the worker pool. RunChunked runs many small items in
/// chunks, each chunk on one slot, and RunChunkedRuns the same a run of items at a time (CheckStates'
/// states); StreamResults runs larger items (ValidatePaths' paths) one task each and sends each result
/// as it is made, one send at a time. All stop starting items once the call's stop condition holds
/// (cancelled, past its deadline, the client gone) or an item failed, and report how far they got and
/// the first error; the handler turns that into its status (errors.h). Everything here is a template
/// over the items: no allocation or indirect call per item beyond the pool's one per task.
///
/// A stop condition is anything with `bool Stopped()` (polls; may become true), `bool stopped() const`
/// (whether it has, without polling) and `Stop()` (makes it true). CallCancel (call.h) is the server's.

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <iterator>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "proximity/core/base/result.h"
#include "server/worker_pool.h"

namespace proximity::server {

template <class T>
concept BatchStop = requires(T& t, const T& c) {
  { t.Stopped() } -> std::convertible_to<bool>;
  { c.stopped() } -> std::convertible_to<bool>;
  t.Stop();
};

/// How far a batch got.
struct BatchOutcome {
  int64_t done = 0;                   ///< Items finished: checked (RunChunked) or sent (StreamResults).
  bool stopped = false;               ///< The stop condition held when the batch ended.
  std::optional<core::Error> error;   ///< The first error an item returned (first in time).
};

/// The first error of a parallel batch (any worker may hit one).
class FirstError {
 public:
  void Set(const core::Error& e);
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  /// The error, once every worker is done.
  const std::optional<core::Error>& error() const { return error_; }

 private:
  std::mutex mutex_;
  std::optional<core::Error> error_;
  std::atomic<bool> failed_{false};
};

/// How RunChunked cuts a batch: chunks small enough to balance the workers (about 8 per slot), large
/// enough that claiming one costs nothing (16 to 1024 items).
struct Chunks {
  int64_t size = 0;   ///< Items per chunk (the last may have fewer).
  int64_t count = 0;  ///< Chunks.
};
Chunks ChunksOf(int64_t items, int slots);

/// Runs `item(i, slot) -> core::Status` for every i in [0, n) on `pool`, in chunks (ChunksOf) claimed
/// in increasing order; the items of a chunk run in order on one slot (a slot is unique among the
/// items running at once: per-slot scratch needs no lock). Asks `stop.Stopped()` before each item and
/// starts none once it holds or an item failed. `done` counts the items that returned OK.
template <BatchStop Stop, class Item>
BatchOutcome RunChunked(WorkerPool& pool, int64_t n, Stop& stop, Item&& item) {
  FirstError error;
  std::atomic<int64_t> done{0};
  const Chunks chunks = ChunksOf(n, pool.slots());
  pool.ParallelFor(chunks.count, [&](int64_t c, int slot) {
    const int64_t begin = c * chunks.size;
    const int64_t end = std::min(n, begin + chunks.size);
    int64_t i = begin;
    for (; i < end; ++i) {
      if (error.failed() || stop.Stopped()) break;
      if (core::Status s = item(i, slot); !s.ok()) {
        error.Set(s.error());
        break;
      }
    }
    done.fetch_add(i - begin, std::memory_order_relaxed);
  });
  return {done.load(), static_cast<bool>(stop.stopped()), error.error()};
}

/// RunChunked for items that are cheaper checked several at a time (CheckStates' states, posed across
/// SIMD lanes): `run(begin, end, slot) -> core::Status` handles the items [begin, end) in order on one
/// slot, a run being at most `max_run` items of one chunk (the chunks as RunChunked's). Asks
/// `stop.Stopped()` before each run, so a chunk ends within one run of the stop condition, and starts
/// none once it holds or a run failed. `done` counts the items of the runs that returned OK.
template <BatchStop Stop, class Run>
BatchOutcome RunChunkedRuns(WorkerPool& pool, int64_t n, int64_t max_run, Stop& stop, Run&& run) {
  FirstError error;
  std::atomic<int64_t> done{0};
  const Chunks chunks = ChunksOf(n, pool.slots());
  const int64_t step = std::max<int64_t>(1, max_run);
  pool.ParallelFor(chunks.count, [&](int64_t c, int slot) {
    const int64_t begin = c * chunks.size;
    const int64_t end = std::min(n, begin + chunks.size);
    int64_t i = begin;
    while (i < end) {
      if (error.failed() || stop.Stopped()) break;
      const int64_t run_end = std::min(end, i + step);
      if (core::Status s = run(i, run_end, slot); !s.ok()) {
        error.Set(s.error());
        break;
      }
      i = run_end;
    }
    done.fetch_add(i - begin, std::memory_order_relaxed);
  });
  return {done.load(), static_cast<bool>(stop.stopped()), error.error()};
}

/// Runs `task(i, slot, Response* out) -> core::Result<bool>` for every i in [0, n) on `pool`, one task
/// per item claimed in increasing order, and sends each result the task made (true: *out is one;
/// false: nothing to send, e.g. the item was stopped part way) with `send(const Response&) -> bool` as
/// soon as it is made: one send at a time, in the order the results are made (request order on a pool
/// of one thread). A send that returns false means the receiver is gone: the batch stops (stop.Stop()).
/// Asks `stop.Stopped()` before each task, and sends nothing once `stop.stopped()`. `done` counts the
/// results sent.
template <class Response, BatchStop Stop, class Task, class Send>
BatchOutcome StreamResults(WorkerPool& pool, int64_t n, Stop& stop, Task&& task, Send&& send) {
  FirstError error;
  std::mutex send_mutex;
  std::atomic<int64_t> sent{0};
  pool.ParallelFor(n, [&](int64_t i, int slot) {
    if (error.failed() || stop.Stopped()) return;
    Response response;
    core::Result<bool> made = task(i, slot, &response);
    if (!made.ok()) {
      error.Set(made.error());
      return;
    }
    if (!made.value()) return;
    std::lock_guard lock(send_mutex);
    if (stop.stopped()) return;
    if (!send(std::as_const(response))) {
      stop.Stop();
      return;
    }
    sent.fetch_add(1, std::memory_order_relaxed);
  });
  return {sent.load(), static_cast<bool>(stop.stopped()), error.error()};
}

/// The (index, value) entries workers gathered per slot (`entries(slot)` is one slot's vector), as one
/// list in index order: a batch's results go out in request order whichever worker made them.
template <class Slots, class Entries>
auto InIndexOrder(const Slots& slots, Entries entries) {
  std::remove_cvref_t<decltype(entries(*std::begin(slots)))> all;
  for (const auto& slot : slots) {
    const auto& e = entries(slot);
    all.insert(all.end(), e.begin(), e.end());
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return all;
}

}  // namespace proximity::server
