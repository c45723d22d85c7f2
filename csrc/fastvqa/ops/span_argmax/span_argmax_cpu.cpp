// SPDX-License-Identifier: Apache-2.0
// CPU span argmax. Top-1 is O(T) per row: a monotonic deque gives the best
// start of every sliding start window; top-k reuses those window maxima to
// skip ends that cannot enter the list and scans the rest exactly.
#include <vector>

#include "fastvqa/ops/span_argmax/span_argmax.h"

namespace fastvqa {
namespace span_argmax {

namespace {

// best[j] = argmax of start over the window of end j (smallest index on ties,
// NaN starts skipped), or -1 when the window is empty. `dq` is scratch of size T.
template <typename T>
void window_argmax(const RowView<T>& r, int64_t min_len, int64_t max_len, int64_t* best,
                   int64_t* dq) {
  int64_t head = 0, tail = 0;  // dq[head, tail) holds candidate starts, scores non-increasing
  for (int64_t j = 0; j < r.length; ++j) {
    int64_t lo, hi;
    start_window(j, min_len, max_len, &lo, &hi);
    if (hi >= 0) {
      const T v = r.start[hi * r.ss];
      if (!is_nan(v)) {
        // Equal scores stay: the earlier start keeps priority on ties.
        while (tail > head && r.start[dq[tail - 1] * r.ss] < v) --tail;
        dq[tail++] = hi;
      }
    }
    while (tail > head && dq[head] < lo) ++head;
    best[j] = (hi >= lo && tail > head) ? dq[head] : -1;
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
    std::vector<int64_t> best(p.steps), dq(p.steps);
#pragma omp for schedule(static)
    for (int64_t b = 0; b < batch; ++b) {
      const RowView<T> r = p.row(b);
      int64_t* spans = p.out_spans + b * p.k * 2;
      T* scores = p.out_scores + b * p.k;
      window_argmax(r, p.min_len, p.max_len, best.data(), dq.data());
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
