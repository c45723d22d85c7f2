// SPDX-License-Identifier: Apache-2.0
// Scratch that a thread keeps from one call to the next.
//
// A kernel's per-row scratch (prefix sums, window maxima, a copy of the row)
// is a few bytes per step. Allocated and freed on every call, a few MiB of
// it made glibc hand the top of the heap back to the OS at each free (its
// trim threshold follows the largest block freed) and take it again at the
// next call, page by page: a 100,000-step span_argmax row spent 85% of its
// time in 456 page faults (BENCHMARKS.md, "Threading"). Each thread keeps
// one object per scratch type instead, whose vectors keep their capacity,
// up to kKeepScratchBytes; a larger one is released when the call ends.
// Kernels already reuse scratch from row to row, writing what they read, so
// reuse across calls changes no result.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace fastvqa {

// Scratch bytes a thread keeps per scratch type between calls.
constexpr int64_t kKeepScratchBytes = int64_t(16) << 20;

// Bytes held by the vectors `v` (their capacity).
template <typename... V>
int64_t vector_bytes(const V&... v) {
  return (int64_t(0) + ... + static_cast<int64_t>(v.capacity() * sizeof(typename V::value_type)));
}

// The calling thread's S for the life of this object (S: default
// constructible, with `int64_t bytes() const`). Declare it inside a
// parallel_rows team, once per thread. A nested use of the same type on the
// same thread gets a fresh S rather than the one in use.
template <typename S>
class ThreadScratch {
 public:
  ThreadScratch() {
    Slot& slot = this_thread();
    if (!slot.busy) {
      slot.busy = true;
      slot_ = &slot;
      s_ = &slot.s;
    } else {
      own_ = std::make_unique<S>();
      s_ = own_.get();
    }
  }
  ~ThreadScratch() {
    if (slot_ == nullptr) return;
    if (slot_->s.bytes() > kKeepScratchBytes) slot_->s = S();
    slot_->busy = false;
  }
  ThreadScratch(const ThreadScratch&) = delete;
  ThreadScratch& operator=(const ThreadScratch&) = delete;

  S& operator*() { return *s_; }
  S* operator->() { return s_; }

 private:
  struct Slot {
    S s;
    bool busy = false;
  };
  static Slot& this_thread() {
    thread_local Slot slot;
    return slot;
  }
  Slot* slot_ = nullptr;
  std::unique_ptr<S> own_;
  S* s_ = nullptr;
};

}  // namespace fastvqa
