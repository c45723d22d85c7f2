// SPDX-License-Identifier: Apache-2.0
// How fastvqa's CPU loops share out rows between threads.
//
// fastvqa runs its parallel loops on a small pool of its own (parallel.cpp),
// not on an OpenMP runtime. Whatever runtime a build could link (a wheel's
// private libgomp, the system's, torch's), its idle threads spin before they
// sleep, and on cores shared with DataLoader workers that spinning cost many
// times the call itself (docs/architecture.md, "Threading"). The pool's
// workers block on a condition variable and never spin; the calling thread
// works too, and waits at the end only for workers that actually joined, so a
// worker the scheduler has not woken yet costs nothing.
//
// Whether a call splits at all is decided by a cost model: the loop's rows
// times the op's measured cost per row (ns) estimates its single-thread time,
// and only calls estimated above kSplitNs are shared out. Rows are handed out
// dynamically in chunks of about kChunkNs of work, so a descheduled thread's
// rows are taken by the others. Which thread computes a row never changes
// what is computed: outputs are identical on any number of threads.
#pragma once

#include <cstdint>
#include <type_traits>

namespace fastvqa {

// Estimated single-thread time (ns) below which a loop stays on the calling
// thread. Waking a sleeping worker takes 50-90 us on the shared 2-vCPU
// machines of benchmarks/ (BENCHMARKS.md, "Threading"), so a split pays only
// well above twice that.
constexpr double kSplitNs = 250e3;
// Target work (ns) of one dynamic chunk: large enough that claiming chunks
// (one atomic add each) is free, small enough that a thread descheduled
// mid-chunk holds back little.
constexpr double kChunkNs = 40e3;

// What a parallel loop costs: `rows` independent rows of `ns_per_row` each
// (the op's measured cost per element times the elements of a row). `kind`
// names the loop (its op_costs entry's name): each kind judges for itself
// whether splitting pays (parallel.cpp's back-off), so one op whose rows
// cost more than its estimate cannot keep every other op on one thread.
struct LoopCost {
  int64_t rows;
  double ns_per_row;
  const char* kind = nullptr;
};

// The threads fastvqa's CPU loops may use (>= 1). Starts as
// FASTVQA_NUM_THREADS, else OMP_NUM_THREADS (its first entry), else the CPUs
// this process may run on.
int num_threads();
// Sets num_threads(); n >= 1 (checked by the binding).
void set_num_threads(int n);
// Loops so far that the cost model sized to split, and those that did split
// (fewer: one started while another held the pool, or skipped while splits
// were not paying, see parallel.cpp). Tests read them; never reset.
struct LoopCounts {
  int64_t sized_to_split, split;
};
LoopCounts loop_counts();

// Chunks of rows handed to one thread of a team; next() claims the next one.
class Chunks {
 public:
  explicit Chunks(struct Job* job) : job_(job) {}  // Job: parallel.cpp's
  // Claims rows [*lo, *hi); false when every row is taken.
  bool next(int64_t* lo, int64_t* hi);
  // Rows this thread claimed so far.
  int64_t claimed() const { return claimed_; }

 private:
  struct Job* job_;
  int64_t claimed_ = 0;
};

namespace detail {
// A borrowed callable `void(Chunks&)` (no allocation, unlike std::function).
struct TeamRef {
  void* self;
  void (*call)(void*, Chunks&);
  void operator()(Chunks& c) const { call(self, c); }
};
// Runs `team` on the calling thread and up to num_threads() - 1 workers,
// sharing [0, rows) in chunks of `chunk` rows; `one_thread_ns` (the cost
// model's estimate) judges whether the split paid when the caller computed
// no row itself (else its measured rows do, parallel.cpp); `kind` picks the
// back-off state.
void run_team(int64_t rows, int64_t chunk, double one_thread_ns, const char* kind,
              TeamRef team);
// Rows per chunk and whether to split at all, from the cost model.
int64_t chunk_rows(const LoopCost& cost);
bool splits(const LoopCost& cost);
}  // namespace detail

// Runs `team(chunks)` on every thread that takes part in a loop over
// cost.rows rows; each thread claims rows with `chunks.next(&lo, &hi)` until
// it returns false. Per-thread scratch is declared inside `team`. A call the
// cost model finds small runs `team` once on the calling thread with one
// chunk of every row.
template <typename Team>
void parallel_rows(const LoopCost& cost, Team&& team) {
  auto call = [](void* self, Chunks& c) {
    (*static_cast<std::remove_reference_t<Team>*>(self))(c);
  };
  const detail::TeamRef ref{const_cast<void*>(static_cast<const void*>(&team)), call};
  detail::run_team(cost.rows, detail::splits(cost) ? detail::chunk_rows(cost) : cost.rows,
                   static_cast<double>(cost.rows) * cost.ns_per_row, cost.kind, ref);
}

// parallel_rows for a loop body with no per-thread state: body(row).
template <typename Body>
void parallel_for(const LoopCost& cost, Body&& body) {
  parallel_rows(cost, [&](Chunks& chunks) {
    int64_t lo, hi;
    while (chunks.next(&lo, &hi))
      for (int64_t r = lo; r < hi; ++r) body(r);
  });
}

}  // namespace fastvqa
