// SPDX-License-Identifier: Apache-2.0
// CPU span argmax. Top-1 is O(T) per row: a monotonic deque gives the best
// start of every sliding start window (refined exactly for rounding ties);
// top-k reuses those best spans per end to skip ends that cannot enter the
// list and scans the rest exactly.
#include <vector>

#include "fastvqa/ops/span_argmax/span_argmax.h"

namespace fastvqa {
namespace span_argmax {

namespace {

// best[j] = the exact best start of end j (see exact_best_start), or -1 when
// no span ends at j. `dq` and `next_valid` are scratch of size T.
template <typename T>
void best_starts(const RowView<T>& r, int64_t min_len, int64_t max_len, int64_t* best,
                 int64_t* dq, int64_t* next_valid) {
  // next_valid[i] = the first index >= i whose start score is not NaN.
  int64_t next = -1;
  for (int64_t i = r.length - 1; i >= 0; --i) {
    if (!is_nan(r.start[i * r.ss])) next = i;
    next_valid[i] = next;
  }
  int64_t head = 0, tail = 0;  // dq[head, tail): candidate starts, scores non-increasing
  for (int64_t j = 0; j < r.length; ++j) {
    int64_t lo, hi;
    start_window(j, min_len, max_len, &lo, &hi);
    if (hi >= 0) {
      const T v = r.start[hi * r.ss];
      if (!is_nan(v)) {
        // Equal scores stay: the front is the smallest index of the maximum.
        while (tail > head && r.start[dq[tail - 1] * r.ss] < v) --tail;
        dq[tail++] = hi;
      }
    }
    while (tail > head && dq[head] < lo) ++head;
    const T e_j = r.end[j * r.es];
    if (hi < lo || tail == head || is_nan(e_j)) {
      best[j] = -1;
      continue;
    }
    best[j] = exact_best_start(r, e_j, lo, dq[head], next_valid[lo]);
  }
}

template <typename T>
void top1_row(const RowView<T>& r, const int64_t* best, int64_t* out_span, T* out_score) {
  bool found = false;
  T best_score = T(0);
  int64_t bi = -1, bj = -1;
  for (int64_t j = 0; j < r.length; ++j) {
    if (best[j] < 0) continue;
    const T ej = r.end[j * r.es];
    const T score = r.start[best[j] * r.ss] + ej;
    if (is_nan(score)) continue;
    if (!found || ranks_before(score, best[j], j, best_score, bi, bj)) {
      found = true;
      best_score = score;
      bi = best[j];
      bj = j;
    }
  }
  if (found) {
    out_span[0] = bi;
    out_span[1] = bj;
    out_score[0] = best_score;
  }
  fill_missing<T>(found ? 1 : 0, 1, out_span, out_score);
}

}  // namespace

template <typename T>
void span_argmax_cpu(const Params<T>& p) {
  const int64_t batch = p.batch;
#pragma omp parallel if (batch * p.steps >= 16384)
  {
    std::vector<int64_t> best(p.steps), dq(p.steps), next_valid(p.steps);
#pragma omp for schedule(static)
    for (int64_t b = 0; b < batch; ++b) {
      const RowView<T> r = p.row(b);
      int64_t* spans = p.out_spans + b * p.k * 2;
      T* scores = p.out_scores + b * p.k;
      best_starts(r, p.min_len, p.max_len, best.data(), dq.data(), next_valid.data());
      if (p.k == 1) {
        top1_row(r, best.data(), spans, scores);
      } else {
        const int64_t count =
            topk_row(r, p.min_len, p.max_len, p.k, spans, scores, best.data());
        fill_missing(count, p.k, spans, scores);
      }
    }
  }
}

template void span_argmax_cpu<float>(const Params<float>&);
template void span_argmax_cpu<double>(const Params<double>&);

}  // namespace span_argmax
}  // namespace fastvqa
