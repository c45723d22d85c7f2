// SPDX-License-Identifier: Apache-2.0
// Stress driver for fastvqa's thread pool (csrc/fastvqa/common/parallel.cpp),
// built and run by tests/test_thread_pool.py under ThreadSanitizer: loops
// started from several threads at once, thread counts changed meanwhile,
// loops whose rows cost nothing and rows that throw, and a fork in the
// middle (with the argument "fork"; ThreadSanitizer cannot follow a fork of a
// threaded process, so the test runs that case in a plain build). Every
// row's output is checked against a plain loop; prints "ok".
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fastvqa/common/parallel.h"

using fastvqa::Chunks;
using fastvqa::LoopCost;

namespace {

// About a microsecond of arithmetic per row, so that workers wake in time
// to take chunks (a row that costs nothing is all done by the caller).
int64_t expected(int64_t r, int64_t salt) {
  uint64_t h = static_cast<uint64_t>(r) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(salt);
  for (int i = 0; i < 300; ++i) h = (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ull;
  return static_cast<int64_t>(h >> 1);
}

// One loop: rows of a size drawn from `seed`, each written once; false on a
// wrong or missing row.
bool one_loop(int64_t seed) {
  const int64_t rows = 1 + (seed * 7919) % 5000;
  std::vector<int64_t> out(rows, -1);
  // ns_per_row large enough that most loops split (kSplitNs = 250 us)
  fastvqa::parallel_rows(LoopCost{rows, 1000.0}, [&](Chunks& chunks) {
    int64_t lo, hi;
    while (chunks.next(&lo, &hi))
      for (int64_t r = lo; r < hi; ++r) out[r] = expected(r, seed);
  });
  for (int64_t r = 0; r < rows; ++r)
    if (out[r] != expected(r, seed)) return false;
  return true;
}

bool throwing_loop() {
  try {
    fastvqa::parallel_for(LoopCost{4000, 1000.0}, [&](int64_t r) {
      if (r == 3999) throw std::runtime_error("row 3999");
    });
  } catch (const std::runtime_error&) {
    return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const bool with_fork = argc > 1 && std::strcmp(argv[1], "fork") == 0;
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        if (t == 0 && i % 50 == 0) fastvqa::set_num_threads(1 + (i / 50) % 4);
        if (!one_loop(t * 1000 + i)) failures.fetch_add(1);
        if (i % 40 == 0 && !throwing_loop()) failures.fetch_add(1);
      }
    });
  }
  // A fork while the other threads run loops: the child must get a pool of
  // its own and finish (no wait on its parent's threads).
  const pid_t child = with_fork ? fork() : 0;
  if (with_fork && child == 0) {
    fastvqa::set_num_threads(3);
    for (int i = 0; i < 20; ++i)
      if (!one_loop(99 + i)) _exit(3);
    _exit(0);
  }
  for (auto& c : callers) c.join();
  int status = 0;
  if (with_fork && (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
                    WEXITSTATUS(status) != 0)) {
    std::printf("forked child failed (status %d)\n", status);
    return 2;
  }
  const fastvqa::LoopCounts counts = fastvqa::loop_counts();
  if (failures.load() != 0 || counts.split == 0) {
    std::printf("failures %d, loops split %lld\n", failures.load(),
                static_cast<long long>(counts.split));
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
