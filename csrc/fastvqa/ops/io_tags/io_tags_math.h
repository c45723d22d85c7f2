// SPDX-License-Identifier: Apache-2.0
// Inside/outside tag decoding semantics, written once for CPU and CUDA.
//
// io_to_spans: in a row of per-step probabilities (valid steps t < length),
// a step is "inside" when prob >= threshold (NaN never is). Every maximal run
// of inside steps [i, j] (inclusive) of at least min_len steps is a span,
// scored by the mean probability over the run (summed left to right in
// double, then rounded to the input dtype). A row's spans are ordered by
// higher score, then smaller start (NaN scores, possible only when a run holds
// both +inf and -inf, rank last).
//
// io_to_start_end (WildQA's IO -> SE conversion, wildqa.md §6.3 item 11):
// over the valid steps t < L of a row with values v,
//   start_t = v_t - v_{t-1} for t > 0, start_0 = v_0,
//   end_t   = v_t - v_{t+1} for t < L - 1, end_{L-1} = v_{L-1};
// steps t >= L are padding and get NaN, which span_argmax treats as unusable.
#pragma once

#include <cmath>
#include <cstdint>

#include "fastvqa/common/macros.h"

namespace fastvqa {
namespace io_tags {

template <typename T>
FASTVQA_HD bool is_nan(T x) { return x != x; }

// The threshold is a double compared with the widened probability: exact, so
// it means the same for float32 and float64 inputs.
template <typename T>
FASTVQA_HD bool inside(T prob, double threshold) {
  return static_cast<double>(prob) >= threshold;
}

template <typename T>
struct RowView {
  const T* p;      ///< probabilities of this row, stride ps
  int64_t ps;
  int64_t length;  ///< valid steps
  FASTVQA_HD T at(int64_t t) const { return p[t * ps]; }
};

// The runs of one row in order of their start. Writes the (i, j) pairs of the
// first `cap` runs to `spans` and their mean scores to `scores` when they are
// not null; returns the count of all runs. The fill pass passes the count of
// the count pass as `cap`: a row another thread changes in between may now
// hold more runs, and they must not be written past the row's slots.
template <typename T>
FASTVQA_HD int64_t row_runs(const RowView<T>& r, double threshold, int64_t min_len,
                            int64_t* spans, T* scores, int64_t cap = 0) {
  int64_t count = 0;
  int64_t t = 0;
  while (t < r.length) {
    if (!inside(r.at(t), threshold)) {
      ++t;
      continue;
    }
    const int64_t i = t;
    double sum = 0.0;
    while (t < r.length && inside(r.at(t), threshold)) sum += static_cast<double>(r.at(t++));
    const int64_t len = t - i;
    if (len < min_len) continue;
    if (spans != nullptr && count < cap) {
      spans[2 * count] = i;
      spans[2 * count + 1] = t - 1;
      scores[count] = static_cast<T>(sum / static_cast<double>(len));
    }
    ++count;
  }
  return count;
}

// Run a ranks before run b: higher score (NaN last), then smaller start.
template <typename T>
FASTVQA_HD bool run_before(T sa, int64_t ia, T sb, int64_t ib) {
  const bool na = is_nan(sa), nb = is_nan(sb);
  if (na != nb) return nb;
  if (!na && sa != sb) return sa > sb;
  return ia < ib;
}

// Insertion sort of one row's runs by run_before (the CUDA path; the CPU path
// uses std::sort with the same total order, so both give the same result).
template <typename T>
FASTVQA_HD void sort_runs(int64_t* spans, T* scores, int64_t count) {
  for (int64_t a = 1; a < count; ++a) {
    const T s = scores[a];
    const int64_t i = spans[2 * a], j = spans[2 * a + 1];
    int64_t q = a;
    while (q > 0 && run_before(s, i, scores[q - 1], spans[2 * (q - 1)])) {
      scores[q] = scores[q - 1];
      spans[2 * q] = spans[2 * (q - 1)];
      spans[2 * q + 1] = spans[2 * (q - 1) + 1];
      --q;
    }
    scores[q] = s;
    spans[2 * q] = i;
    spans[2 * q + 1] = j;
  }
}

// Marks the slots [from, to) of a row's runs that the fill pass found no run
// for (possible only when the input changed between the passes): (-1, -1), NaN.
template <typename T>
FASTVQA_HD void fill_missing_runs(int64_t from, int64_t to, int64_t* spans, T* scores) {
  for (int64_t q = from; q < to; ++q) {
    spans[2 * q] = -1;
    spans[2 * q + 1] = -1;
    scores[q] = T(NAN);
  }
}

// start/end scores at step t of a row (see the file comment).
template <typename T>
FASTVQA_HD void start_end_at(const RowView<T>& r, int64_t t, T* start, T* end) {
  if (t >= r.length) {
    *start = T(NAN);
    *end = T(NAN);
    return;
  }
  const T v = r.at(t);
  *start = t == 0 ? v : v - r.at(t - 1);
  *end = t == r.length - 1 ? v : v - r.at(t + 1);
}

}  // namespace io_tags
}  // namespace fastvqa
