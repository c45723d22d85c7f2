// SPDX-License-Identifier: Apache-2.0
// CPU span argmax, O(T) per row for top-1.
//
// The best start of end j is the argmax of the start scores over the sliding
// window [j - max_len + 1, j - min_len + 1] (refined by exact_best_start for
// rounding ties). Window maxima come from the van Herk / Gil-Werman scheme:
// cut the starts into blocks as wide as the window, take running maxima
// forward (prefix) and backward (suffix) inside each block; a window then
// spans at most two blocks and its maximum is suffix[lo] combined with
// prefix[hi]. Unlike a monotonic deque this has no data-dependent branches,
// which is what makes it fast on random scores. Top-k reuses the best span of
// every end to skip ends that cannot enter the list and scans the rest exactly.
#include <vector>

#include "fastvqa/common/parallel.h"
#include "fastvqa/ops/span_argmax/span_argmax.h"

namespace fastvqa {
namespace span_argmax {

namespace {

// Block-wise running argmax of the start scores. idx < 0 marks "no usable
// start yet" (all NaN so far in the block). Ties keep the smaller index:
// forward with a strict >, backward with >=.
template <typename T>
struct BlockMax {
  std::vector<T> pre_val, suf_val;
  std::vector<int64_t> pre_idx, suf_idx;

  void resize(int64_t n) {
    pre_val.resize(n);
    suf_val.resize(n);
    pre_idx.resize(n);
    suf_idx.resize(n);
  }

  void build(const RowView<T>& r, int64_t n, int64_t width) {
    for (int64_t block = 0; block < n; block += width) {
      const int64_t stop = block + width < n ? block + width : n;
      T v_best = T(0);
      int64_t i_best = -1;
      for (int64_t i = block; i < stop; ++i) {
        const T v = r.start[i * r.ss];
        const bool take = !is_nan(v) && (i_best < 0 || v > v_best);
        v_best = take ? v : v_best;
        i_best = take ? i : i_best;
        pre_val[i] = v_best;
        pre_idx[i] = i_best;
      }
      v_best = T(0);
      i_best = -1;
      for (int64_t i = stop - 1; i >= block; --i) {
        const T v = r.start[i * r.ss];
        const bool take = !is_nan(v) && (i_best < 0 || v >= v_best);
        v_best = take ? v : v_best;
        i_best = take ? i : i_best;
        suf_val[i] = v_best;
        suf_idx[i] = i_best;
      }
    }
  }

  // Smallest index of the maximum over [lo, hi] (a window of at most `width`
  // starts; wider windows begin at 0 and lie in the first block), or -1 when
  // every start there is NaN. The maximum itself goes to *value.
  int64_t window_argmax(int64_t lo, int64_t hi, int64_t width, T* value) const {
    if (lo == 0 && hi < width) {  // inside the first block
      *value = pre_val[hi];
      return pre_idx[hi];
    }
    const int64_t a = suf_idx[lo], b = pre_idx[hi];
    // Ties go to the suffix side, whose indices are the earlier ones.
    const bool take_b = a < 0 || (b >= 0 && pre_val[hi] > suf_val[lo]);
    *value = take_b ? pre_val[hi] : suf_val[lo];
    return take_b ? b : a;
  }
};

// Calls visit(j, lo, e_j, b, m) for every end j that has a usable span: b is
// the smallest index of the window's largest start score and m = start[b] + e_j
// the largest sum ending at j (addition is monotone). Whether a smaller start
// ties at m is left to the visitor (exact_best_start), which top-1 asks only
// for ends that can still win.
template <typename T, typename Visit>
void for_each_end(const RowView<T>& r, int64_t min_len, int64_t max_len, BlockMax<T>& bm,
                  Visit&& visit) {
  // Start i pairs only with ends up to length - 1, so starts past
  // length - min_len never matter; a window spans max_len - min_len + 1 starts.
  const int64_t n_starts = r.length - min_len + 1;
  if (n_starts <= 0) return;
  const int64_t width = max_len - min_len + 1;
  bm.build(r, n_starts, width);
  for (int64_t j = min_len - 1; j < r.length; ++j) {
    int64_t lo, hi;
    start_window(j, min_len, max_len, &lo, &hi);
    const T e_j = r.end[j * r.es];
    if (is_nan(e_j)) continue;
    T s_b;
    const int64_t b = bm.window_argmax(lo, hi, width, &s_b);
    if (b < 0) continue;
    const T m = s_b + e_j;
    if (is_nan(m)) continue;
    visit(j, lo, e_j, b, m);
  }
}

template <typename T>
void top1_row(const RowView<T>& r, int64_t min_len, int64_t max_len, BlockMax<T>& bm,
              int64_t* out_span, T* out_score) {
  bool found = false;
  T best = T(0);
  int64_t bi = -1, bj = -1;
  for_each_end(r, min_len, max_len, bm, [&](int64_t j, int64_t lo, T e_j, int64_t b, T m) {
    if (found && m < best) return;  // cannot win, nor tie
    const int64_t i = exact_best_start(r, e_j, lo, b);
    if (!found || ranks_before(m, i, j, best, bi, bj)) {
      found = true;
      best = m;
      bi = i;
      bj = j;
    }
  });
  if (found) {
    out_span[0] = bi;
    out_span[1] = bj;
    out_score[0] = best;
  }
  fill_missing<T>(found ? 1 : 0, 1, out_span, out_score);
}

template <typename T>
int64_t topk_row_cpu(const RowView<T>& r, int64_t min_len, int64_t max_len, int64_t k,
                     BlockMax<T>& bm, int64_t* best, int64_t* out_spans, T* out_scores) {
  for (int64_t j = 0; j < r.length; ++j) best[j] = -1;
  for_each_end(r, min_len, max_len, bm, [&](int64_t j, int64_t lo, T e_j, int64_t b, T) {
    best[j] = exact_best_start(r, e_j, lo, b);
  });
  return topk_row(r, min_len, max_len, k, out_spans, out_scores, best);
}

}  // namespace

template <typename T>
void span_argmax_cpu(const Params<T>& p) {
  const int64_t batch = p.batch;
#pragma omp parallel if (batch * p.steps >= 65536)
  {
    BlockMax<T> bm;
    bm.resize(p.steps);
    std::vector<int64_t> best(p.steps);
#pragma omp for schedule(dynamic, rows_per_chunk(p.steps))
    for (int64_t b = 0; b < batch; ++b) {
      const RowView<T> r = p.row(b);
      int64_t* spans = p.out_spans + b * p.k * 2;
      T* scores = p.out_scores + b * p.k;
      if (p.k == 1) {
        top1_row(r, p.min_len, p.max_len, bm, spans, scores);
      } else {
        const int64_t count =
            topk_row_cpu(r, p.min_len, p.max_len, p.k, bm, best.data(), spans, scores);
        fill_missing(count, p.k, spans, scores);
      }
    }
  }
}

template void span_argmax_cpu<float>(const Params<float>&);
template void span_argmax_cpu<double>(const Params<double>&);

}  // namespace span_argmax
}  // namespace fastvqa
