// SPDX-License-Identifier: Apache-2.0
// Start/end span decoding semantics, written once for CPU and CUDA.
//
// A span is an inclusive pair of steps (i, j), i <= j, scored start[i] + end[j].
// It is valid when min_len <= j - i + 1 <= max_len and j < length (the row's
// unpadded length); a start (end) score that is NaN makes that step unusable as
// a start (end), and a span whose sum is NaN is skipped.
// Order: higher score first, then smaller start, then smaller end. This total
// order is what makes CPU and CUDA results identical, ties included.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "fastvqa/common/macros.h"

namespace fastvqa {
namespace span_argmax {

template <typename T>
FASTVQA_HD bool is_nan(T x) { return x != x; }

// True when span (sa, ia, ja) ranks strictly before span (sb, ib, jb).
template <typename T>
FASTVQA_HD bool ranks_before(T sa, int64_t ia, int64_t ja, T sb, int64_t ib, int64_t jb) {
  if (sa != sb) return sa > sb;
  if (ia != ib) return ia < ib;
  return ja < jb;
}

// Inserts (s, i, j) into the list sorted by rank (count entries, capacity cap)
// when it belongs there; the last entry drops out of a full list.
template <typename T>
FASTVQA_HD void insert_ranked(T s, int64_t i, int64_t j, int64_t cap, int64_t* count,
                              int64_t* spans, T* scores) {
  const int64_t n = *count;
  if (n == cap && !ranks_before(s, i, j, scores[cap - 1], spans[2 * (cap - 1)],
                                spans[2 * (cap - 1) + 1]))
    return;
  // A shift beats a heap for the small lists used here.
  int64_t pos = n < cap ? n : cap - 1;
  while (pos > 0 &&
         ranks_before(s, i, j, scores[pos - 1], spans[2 * (pos - 1)], spans[2 * (pos - 1) + 1])) {
    scores[pos] = scores[pos - 1];
    spans[2 * pos] = spans[2 * (pos - 1)];
    spans[2 * pos + 1] = spans[2 * (pos - 1) + 1];
    --pos;
  }
  scores[pos] = s;
  spans[2 * pos] = i;
  spans[2 * pos + 1] = j;
  if (n < cap) *count = n + 1;
}

// Inclusive range [lo, hi] of starts that may pair with end j; empty if lo > hi.
FASTVQA_HD void start_window(int64_t j, int64_t min_len, int64_t max_len, int64_t* lo,
                             int64_t* hi) {
  const int64_t first = j - max_len + 1;
  *lo = first > 0 ? first : 0;
  *hi = j - min_len + 1;
}

// The largest value below x, for finite x or +inf (never called with NaN or
// -inf). Bit arithmetic rather than nextafter(): this runs once per end step
// and a libm call there costs more than the rest of the step.
template <typename T, typename Bits>
FASTVQA_HD T next_down_bits(T x) {
  if (x == T(0)) return -std::numeric_limits<T>::denorm_min();
  Bits bits;
  memcpy(&bits, &x, sizeof(T));
  bits = x > T(0) ? bits - 1 : bits + 1;
  memcpy(&x, &bits, sizeof(T));
  return x;
}
FASTVQA_HD float next_down(float x) { return next_down_bits<float, uint32_t>(x); }
FASTVQA_HD double next_down(double x) { return next_down_bits<double, uint64_t>(x); }

template <typename T>
struct RowView {
  const T* start;     ///< start scores of this row, stride `ss`
  int64_t ss;
  const T* end;       ///< end scores of this row, stride `es`
  int64_t es;
  int64_t length;     ///< valid steps: ends j < length
};

// The exact best start for end j (score e_j, not NaN) among the starts of its
// window, which begins at lo, given b, the smallest index holding the
// window's largest start score. Floating-point addition is monotone, so b's
// span has the largest sum; but a smaller start whose score is lower can round
// to the same sum (always so when e_j or the maximum is -inf), and the tie
// rule then prefers it.
template <typename T>
FASTVQA_HD int64_t exact_best_start(const RowView<T>& r, T e_j, int64_t lo, int64_t b) {
  const T s_b = r.start[b * r.ss];
  // Any lower start score is <= next_down(s_b); if even that sum is smaller,
  // no collision is possible and b is exact (the common case, O(1)).
  if (e_j != -INFINITY && s_b != -INFINITY && next_down(s_b) + e_j < s_b + e_j) return b;
  const T best = s_b + e_j;
  for (int64_t i = lo; i < b; ++i) {
    const T s_i = r.start[i * r.ss];
    if (!is_nan(s_i) && s_i + e_j == best) return i;
  }
  return b;
}

// With a -inf end every usable start ties at -inf, except a +inf start, whose
// sum is NaN: so where the window's best start is +inf, the best span ending
// at a -inf end is the first start in [lo, hi] that is neither NaN nor +inf
// (-1 if none). Only +inf start scores need it.
template <typename T>
FASTVQA_HD int64_t first_start_for_neg_inf_end(const RowView<T>& r, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i <= hi; ++i) {
    const T s_i = r.start[i * r.ss];
    if (!is_nan(s_i) && s_i != INFINITY) return i;
  }
  return -1;
}

// Exact top-k of one row by scanning every start window, keeping a sorted
// list of the best k in `out_spans` (k x 2) / `out_scores` (k); returns how
// many are filled. O(T * max_len): the CUDA kernel's per-row thread runs it
// (the CPU uses the best-first search of span_argmax_topk_cpu.h).
template <typename T>
FASTVQA_HD int64_t topk_row(const RowView<T>& r, int64_t min_len, int64_t max_len, int64_t k,
                            int64_t* out_spans, T* out_scores) {
  int64_t count = 0;
  for (int64_t j = 0; j < r.length; ++j) {
    const T ej = r.end[j * r.es];
    if (is_nan(ej)) continue;
    int64_t lo, hi;
    start_window(j, min_len, max_len, &lo, &hi);
    for (int64_t i = lo; i <= hi; ++i) {
      const T si = r.start[i * r.ss];
      const T score = si + ej;
      if (is_nan(score)) continue;
      insert_ranked(score, i, j, k, &count, out_spans, out_scores);
    }
  }
  return count;
}

// Marks the unfilled tail of a row's output: spans (-1, -1), score -inf.
template <typename T>
FASTVQA_HD void fill_missing(int64_t count, int64_t k, int64_t* out_spans, T* out_scores) {
  for (int64_t t = count; t < k; ++t) {
    out_spans[2 * t] = -1;
    out_spans[2 * t + 1] = -1;
    out_scores[t] = -INFINITY;
  }
}

}  // namespace span_argmax
}  // namespace fastvqa
