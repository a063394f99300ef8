/// @file
/// The background fill of self-clearance maps: a queue of scenes and one low-priority thread.

#include "scene/self_clearance_fill.h"

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "proximity/core/scene/scene.h"
#include "scene/scene_impl.h"

namespace proximity::core::internal {

class SelfClearanceFiller {
 public:
  static SelfClearanceFiller& Instance() {
    static SelfClearanceFiller filler;
    return filler;
  }

  void Queue(std::weak_ptr<const Scene> scene) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    jobs_.push_back(std::move(scene));
    if (!worker_.joinable()) worker_ = std::thread([this] { Run(); });
    wake_.notify_all();
  }

  void Await() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [&] { return jobs_.empty() && !busy_; });
  }

  ~SelfClearanceFiller() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      stop_.store(true);
    }
    wake_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

 private:
  SelfClearanceFiller() = default;

  void Run() {
    // The lowest priority: queries and builds on the other threads come first.
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19);
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) break;
      std::weak_ptr<const Scene> job = std::move(jobs_.front());
      jobs_.pop_front();
      busy_ = true;
      lock.unlock();
      if (std::shared_ptr<const Scene> scene = job.lock()) {
        // Stop at exit, or once nobody else holds the scene (its maps are released for a later fill).
        auto stop = [&] { return stop_.load(std::memory_order_relaxed) || scene.use_count() <= 1; };
        (void)Impl(*scene).FillSelfClearanceMaps(Interrupt(stop));
      }
      lock.lock();
      busy_ = false;
      if (jobs_.empty()) idle_.notify_all();
    }
    busy_ = false;
    idle_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::weak_ptr<const Scene>> jobs_;
  bool busy_ = false;
  bool stopping_ = false;
  std::atomic<bool> stop_{false};
  std::thread worker_;
};

void QueueSelfClearanceFill(const std::shared_ptr<const Scene>& scene) { SelfClearanceFiller::Instance().Queue(scene); }

}  // namespace proximity::core::internal

namespace proximity::core {

void AwaitSelfClearanceFill() { internal::SelfClearanceFiller::Instance().Await(); }

}  // namespace proximity::core
