#pragma once
// A min-heap of entries ordered by their `bound` member: the queue of the best-first distance walks.
// Internal to the core; no virtual calls, storage reused across pushes.

#include <algorithm>
#include <vector>

namespace proximity::core::internal {

template <class Entry>
class BoundHeap {
 public:
  /// Empties the heap, then takes the entries of `entries` (in any order) for which `admit(entry)` is
  /// true as its contents; the heap's storage is reused.
  template <class Admit>
  void AssignWhere(const std::vector<Entry>& entries, Admit admit) {
    v_.clear();
    for (const Entry& e : entries) {
      if (admit(e)) v_.push_back(e);
    }
    std::make_heap(v_.begin(), v_.end(), Later);
  }
  void Reserve(size_t n) { v_.reserve(n); }
  size_t capacity() const { return v_.capacity(); }
  /// Empties the heap, keeping its storage (a heap kept per thread across queries).
  void Clear() { v_.clear(); }
  bool empty() const { return v_.empty(); }
  /// The entry with the smallest bound; precondition !empty().
  const Entry& top() const { return v_.front(); }
  void Push(const Entry& e) {
    v_.push_back(e);
    std::push_heap(v_.begin(), v_.end(), Later);
  }
  /// Removes and returns the entry with the smallest bound; precondition !empty().
  Entry Pop() {
    std::pop_heap(v_.begin(), v_.end(), Later);
    const Entry e = v_.back();
    v_.pop_back();
    return e;
  }
  /// Every queued entry, in heap order.
  const std::vector<Entry>& entries() const { return v_; }

 private:
  static bool Later(const Entry& x, const Entry& y) { return x.bound > y.bound; }
  std::vector<Entry> v_;
};

}  // namespace proximity::core::internal
