#include "server/worker_pool.h"

#include <algorithm>

namespace proximity::server {

WorkerPool::WorkerPool(int threads) {
  const int helpers = std::max(1, threads) - 1;
  workers_.reserve(static_cast<size_t>(helpers));
  for (int i = 0; i < helpers; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void WorkerPool::Drain(Job& job, int slot) {
  for (;;) {
    const int64_t task = job.next.fetch_add(1, std::memory_order_relaxed);
    if (task >= job.n) return;
    job.call(job.fn, task, slot);
    if (job.done.fetch_add(1, std::memory_order_acq_rel) + 1 == job.n) {
      std::lock_guard lock(job.mutex);
      job.finished.notify_all();
    }
  }
}

void WorkerPool::Run(int64_t n, void (*call)(void*, int64_t, int), void* fn) {
  auto job = std::make_shared<Job>();
  job->n = n;
  job->call = call;
  job->fn = fn;
  if (n > 1 && !workers_.empty()) {
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back(job);
    }
    wake_.notify_all();
  }
  Drain(*job, slots() - 1);
  {
    // Every task is claimed: take the job off the queue so idle workers stop looking at it.
    std::lock_guard lock(mutex_);
    const auto it = std::find(jobs_.begin(), jobs_.end(), job);
    if (it != jobs_.end()) jobs_.erase(it);
  }
  std::unique_lock lock(job->mutex);
  job->finished.wait(lock, [&] { return job->done.load(std::memory_order_acquire) == job->n; });
}

void WorkerPool::WorkerLoop(int slot) {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] {
        if (stop_) return true;
        for (const auto& j : jobs_) {
          if (j->next.load(std::memory_order_relaxed) < j->n) return true;
        }
        return false;
      });
      if (stop_) return;
      for (const auto& j : jobs_) {
        if (j->next.load(std::memory_order_relaxed) < j->n) {
          job = j;
          break;
        }
      }
    }
    if (job != nullptr) Drain(*job, slot);
  }
}

}  // namespace proximity::server
