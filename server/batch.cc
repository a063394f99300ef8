#include "server/batch.h"

namespace proximity::server {

void FirstError::Set(const core::Error& e) {
  std::lock_guard lock(mutex_);
  if (!error_) error_ = e;
  failed_.store(true, std::memory_order_relaxed);
}

Chunks ChunksOf(int64_t items, int slots) {
  Chunks c;
  c.size = std::clamp<int64_t>(items / (8 * static_cast<int64_t>(std::max(1, slots))), 16, 1024);
  c.count = items <= 0 ? 0 : (items + c.size - 1) / c.size;
  return c;
}

}  // namespace proximity::server
