#pragma once
// The stack of a depth-first hierarchy walk: on the machine stack while it holds at most N entries (a
// walk adds at most one entry per tree level it descends, so real hierarchies stay there), on the heap
// beyond. A collision query then allocates nothing.
#include <cstddef>
#include <vector>

namespace proximity::core::internal {

template <class Entry, size_t N = 192>
class WalkStack {
 public:
  bool empty() const { return size_ == 0; }
  void push(const Entry& e) {
    if (size_ < N) {
      inline_[size_] = e;
    } else {
      spill_.push_back(e);
    }
    ++size_;
  }
  Entry pop() {
    --size_;
    if (size_ < N) return inline_[size_];
    const Entry e = spill_.back();
    spill_.pop_back();
    return e;
  }

 private:
  Entry inline_[N];
  std::vector<Entry> spill_;
  size_t size_ = 0;
};

}  // namespace proximity::core::internal
