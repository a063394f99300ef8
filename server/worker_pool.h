#pragma once
/// @file
/// A fixed pool of worker threads that batch requests split their work across. The calling thread
/// works too, so a pool made for N threads runs N - 1 of its own and a single request uses N.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace proximity::server {

class WorkerPool {
 public:
  /// `threads` >= 1 computing threads per request (the caller plus threads - 1 workers).
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Scratch slots a call needs: a task's slot is unique among the tasks of one call running at once.
  int slots() const { return static_cast<int>(workers_.size()) + 1; }

  /// Runs fn(task, slot) for every task in [0, n) on the workers and the calling thread, and returns
  /// when all have finished. Tasks are claimed in increasing order. fn must not throw.
  template <class Fn>
  void ParallelFor(int64_t n, Fn&& fn) {
    if (n <= 0) return;
    using F = std::remove_reference_t<Fn>;
    Run(n, [](void* f, int64_t task, int slot) { (*static_cast<F*>(f))(task, slot); }, &fn);
  }

 private:
  struct Job {
    int64_t n = 0;
    void (*call)(void*, int64_t, int) = nullptr;
    void* fn = nullptr;
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::mutex mutex;
    std::condition_variable finished;
  };

  void Run(int64_t n, void (*call)(void*, int64_t, int), void* fn);
  // Claims and runs tasks of `job` until none is left.
  static void Drain(Job& job, int slot);
  void WorkerLoop(int slot);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> jobs_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace proximity::server
