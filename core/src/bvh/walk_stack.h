#pragma once
// The stack of a depth-first hierarchy walk: on the machine stack while it holds at most N entries (a
// walk adds at most one entry per tree level it descends, so real hierarchies stay there), on the heap
// beyond. A collision query then allocates nothing.
#include <cstddef>
#include <cstdint>
#include <utility>
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

// The children of a node pair that passed their box tests (at most two), each with its centre's squared
// distance from the other box's: pushed so that the nearer comes off the stack first. A walk that stops
// at its first crossing reaches one sooner that way; a walk that visits every overlapping pair does the
// same work in any order.
template <class Entry>
class NearerFirst {
 public:
  void Add(const Entry& e, double centre_gap) {
    kids_[count_] = e;
    gap_[count_++] = centre_gap;
  }
  template <size_t N>
  void PushTo(WalkStack<Entry, N>* stack) {
    if (count_ == 2 && gap_[0] <= gap_[1]) std::swap(kids_[0], kids_[1]);
    for (int32_t k = 0; k < count_; ++k) stack->push(kids_[k]);
  }

 private:
  Entry kids_[2];
  double gap_[2];
  int32_t count_ = 0;
};

}  // namespace proximity::core::internal
