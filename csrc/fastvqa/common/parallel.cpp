// SPDX-License-Identifier: Apache-2.0
// fastvqa's thread pool: blocking workers, the caller works too (parallel.h).
#include "fastvqa/common/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace fastvqa {

// One loop being shared out. Lives on the calling thread's stack; the pool
// points at it only between posting it and closing it (both under the pool's
// mutex), and the caller returns only after every worker that joined it left.
struct Job {
  detail::TeamRef team;
  int64_t rows, chunk;
  double one_thread_ns;  // the cost model's estimate of the loop on one thread
  alignas(64) std::atomic<int64_t> next{0};
  std::exception_ptr error;  // the first exception of a worker (pool mutex)
};

bool Chunks::next(int64_t* lo, int64_t* hi) {
  const int64_t begin = job_->next.fetch_add(job_->chunk, std::memory_order_relaxed);
  if (begin >= job_->rows) return false;
  *lo = begin;
  *hi = std::min(job_->rows, begin + job_->chunk);
  claimed_ += *hi - begin;
  return true;
}

namespace {

int threads_from_environment() {
  for (const char* name : {"FASTVQA_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);  // "4,2" (nested OpenMP levels): the first
    if (end != v && n >= 1) return static_cast<int>(std::min(n, 1024L));
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::atomic<int> g_threads{0};  // 0: not read from the environment yet
std::atomic<int64_t> g_loops_sized_to_split{0}, g_loops_split{0};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// When splitting stopped paying. A worker preempted in the middle of a chunk
// (cores shared with more runnable threads than they have) holds the caller
// until the scheduler runs it again, which can take milliseconds; one thread
// alone would have finished sooner. A split is lost when the whole loop took
// longer than the loop costs on one thread; then the next splits are skipped
// (1, 2, 4, ... up to kMaxBackoff loops, doubling while splits keep losing),
// so on an oversubscribed machine only a rare probe pays that wait, and on
// idle cores nothing changes. Each kind of loop keeps its own state (one
// whose rows cost more than expected cannot hold the others back), guarded
// by the dispatch flag (one loop at a time).
//
// What the loop would take on one thread is measured, not taken from the
// cost model: the caller's wall-clock time over the rows it computed itself,
// times all rows. The caller shares the cores as a lone thread would (on a
// machine with more runnable threads than cores it is preempted too), so its
// pace is what one thread would have had; the loop's own CPU time is not,
// since under fair sharing a lone thread gets less than a core and takes
// longer than its CPU time: judged by CPU time, a split that gave the loop a
// whole core where one thread would have had two thirds of one was lost as
// often as won, and the loop fell back to one thread (grounded_qa under two
// busy processes, 37-47 ms against 28-30 ms; BENCHMARKS.md). The model's
// estimate is an average that a row can exceed many times over (top_spans
// with NMS on rows whose best spans all overlap costs 62 ns per cell against
// the model's 2.1), so it is only the fallback when the caller computed no
// row.
struct Backoff {
  static constexpr int kMaxBackoff = 128;
  int skip = 0;     // split-sized loops still to run on one thread
  int penalty = 0;  // the skip after the next lost split

  bool allow() {
    if (skip == 0) return true;
    --skip;
    return false;
  }
  void record(int64_t elapsed_ns, double one_thread_ns) {
    if (static_cast<double>(elapsed_ns) > one_thread_ns) {
      penalty = penalty == 0 ? 1 : std::min(2 * penalty, kMaxBackoff);
      skip = penalty;
    } else {
      penalty = 0;
    }
  }
};

class Pool {
 public:
  // The back-off of one kind of loop (LoopCost::kind; its name's address is
  // its identity). A handful of kinds exist; kinds past the table, and loops
  // that name none, share the last slot.
  Backoff& backoff(const char* kind) {
    if (kind != nullptr) {
      for (int i = 0; i + 1 < kKinds; ++i) {
        Slot& slot = backoffs_[i];
        if (slot.kind == nullptr) slot.kind = kind;  // the kind's first loop
        if (slot.kind == kind) return slot.state;
      }
    }
    return backoffs_[kKinds - 1].state;
  }

  // Shares `job` between the caller and up to `helpers` workers.
  void run(Job& job, int helpers, Backoff& backoff) {
    grow(helpers);
    const int64_t start = now_ns();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      wanted_ = helpers;
    }
    for (int i = 0; i < helpers; ++i) work_.notify_one();
    Chunks chunks(&job);
    std::exception_ptr own;
    try {
      job.team(chunks);
    } catch (...) {
      own = std::current_exception();
    }
    const int64_t caller_ns = now_ns() - start;
    // Every row is claimed: close the job to workers that wake late, then
    // wait only for those inside it.
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = nullptr;
    wanted_ = 0;
    done_.wait(lock, [&] { return active_ == 0; });
    lock.unlock();
    const double one_thread_ns =
        chunks.claimed() > 0
            ? static_cast<double>(caller_ns) * static_cast<double>(job.rows) /
                  static_cast<double>(chunks.claimed())
            : job.one_thread_ns;
    backoff.record(now_ns() - start, one_thread_ns);
    if (own) std::rethrow_exception(own);
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  void grow(int helpers) {
    // Threads are created once and kept; only the caller of a loop (which
    // holds the dispatch flag) grows the pool.
    while (static_cast<int>(workers_.size()) < helpers) {
      workers_.emplace_back([this] { serve(); });
      workers_.back().detach();  // never joined: the pool lives for the process
    }
  }

  void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      work_.wait(lock, [&] { return job_ != nullptr && wanted_ > 0; });
      Job* job = job_;
      --wanted_;
      ++active_;
      lock.unlock();
      Chunks chunks(job);
      std::exception_ptr error;
      try {
        job->team(chunks);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error && !job->error) job->error = error;
      if (--active_ == 0) done_.notify_one();
    }
  }

  struct Slot {
    const char* kind = nullptr;
    Backoff state;
  };
  static constexpr int kKinds = 32;
  Slot backoffs_[kKinds];  // guarded, like Backoff, by the dispatch flag

  std::mutex mutex_;
  std::condition_variable work_, done_;
  Job* job_ = nullptr;
  int wanted_ = 0;
  int active_ = 0;
  std::vector<std::thread> workers_;
};

// The pool and the flag that gives one loop at a time the use of it. Leaked
// on purpose: detached workers may still be blocked in it at exit, and a
// forked child (DataLoader workers) must not touch its parent's pool, whose
// threads do not exist there and whose mutex may be held.
std::atomic<Pool*> g_pool{nullptr};
std::atomic<bool> g_busy{false};
std::once_flag g_atfork;

void forget_pool_in_child() {
  g_pool.store(nullptr);
  g_busy.store(false);
}

Pool* pool() {
  std::call_once(g_atfork, [] { pthread_atfork(nullptr, nullptr, &forget_pool_in_child); });
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p == nullptr) {
    p = new Pool();
    g_pool.store(p, std::memory_order_release);  // only the flag holder gets here
  }
  return p;
}

}  // namespace

int num_threads() {
  int n = g_threads.load(std::memory_order_relaxed);
  if (n == 0) {
    n = threads_from_environment();
    int expected = 0;
    if (!g_threads.compare_exchange_strong(expected, n)) n = expected;
  }
  return n;
}

void set_num_threads(int n) { g_threads.store(std::max(1, n)); }

LoopCounts loop_counts() { return {g_loops_sized_to_split.load(), g_loops_split.load()}; }

namespace detail {

int64_t chunk_rows(const LoopCost& cost) {
  if (!(cost.ns_per_row > 0)) return std::max<int64_t>(cost.rows, 1);
  const double rows = std::floor(kChunkNs / cost.ns_per_row);
  return rows < 1 ? 1 : (rows > 1e9 ? int64_t(1e9) : static_cast<int64_t>(rows));
}

bool splits(const LoopCost& cost) {
  return cost.rows >= 2 && static_cast<double>(cost.rows) * cost.ns_per_row >= kSplitNs &&
         num_threads() > 1;
}

void run_team(int64_t rows, int64_t chunk, double one_thread_ns, const char* kind,
              TeamRef team) {
  Job job;
  job.team = team;
  job.rows = rows;
  job.one_thread_ns = one_thread_ns;
  job.chunk = std::max<int64_t>(chunk, 1);
  const int64_t chunks = (rows + job.chunk - 1) / job.chunk;
  const int helpers = static_cast<int>(std::min<int64_t>(num_threads() - 1, chunks - 1));
  if (helpers >= 1) g_loops_sized_to_split.fetch_add(1, std::memory_order_relaxed);
  // A loop started while another one holds the pool (another Python thread,
  // or a loop inside a worker) runs on its own thread rather than wait; so
  // does one the back-off skips.
  bool expected = false;
  struct Hold {
    bool held;
    ~Hold() {
      if (held) g_busy.store(false, std::memory_order_release);
    }
  } hold{helpers >= 1 && g_busy.compare_exchange_strong(expected, true, std::memory_order_acquire)};
  Pool* p = hold.held ? pool() : nullptr;
  Backoff* backoff = p != nullptr ? &p->backoff(kind) : nullptr;
  if (backoff != nullptr && backoff->allow()) {
    g_loops_split.fetch_add(1, std::memory_order_relaxed);
    p->run(job, helpers, *backoff);
    return;
  }
  Chunks all(&job);
  team(all);
}

}  // namespace detail
}  // namespace fastvqa
