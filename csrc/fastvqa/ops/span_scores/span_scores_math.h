// SPDX-License-Identifier: Apache-2.0
// Span scoring semantics (span_scores, its backward, top_spans), written once
// for the CPU loops and the CUDA kernels.
//
// A span is an inclusive pair of steps [i, j] of one row, n = j - i + 1 steps.
// It is valid when min_len <= n <= max_len and j < L (the row's valid length).
// Its score under each reduce, with S(a, b) the sum of x[a..b-1]:
//   sum:      S(i, j + 1)
//   mean:     S(i, j + 1) / n
//   contrast: S(i, j + 1) / n - S_out / (L - n), S_out = S(0, i) + S(j + 1, L);
//             when the span covers the whole row (L = n) the outside mean is 0.
// Sums come from prefix sums accumulated in double (also for float32 input),
// so each span costs O(1); the result is cast to the output dtype once.
// Non-finite inputs are counted separately (never summed into the prefix, so a
// NaN cannot leak into spans that do not contain it): a range sum is NaN when
// the range holds a NaN or both infinities, +-inf when it holds one kind of
// infinity, i.e. exactly what summing the elements in IEEE arithmetic gives.
#pragma once

#include <cmath>
#include <cstdint>

#include "fastvqa/common/macros.h"
#include "fastvqa/ops/span_argmax/span_argmax_math.h"

namespace fastvqa {
namespace span_scores {

using span_argmax::fill_missing;
using span_argmax::insert_ranked;
using span_argmax::is_nan;
using span_argmax::ranks_before;

enum class Reduce : int { kSum = 0, kMean = 1, kContrast = 2 };

// Prefix sums of one row over its valid steps: entry k describes x[0..k-1].
struct PrefixRow {
  const double* sum;   ///< L + 1 sums of the finite values
  const int64_t* cnt;  ///< (L + 1) x 3 counts of NaN, +inf, -inf values
  int64_t length;      ///< L
  bool special;        ///< any non-finite value in the row (else cnt is not read)
};

// Fills sum[0..L] and cnt[0..3L+2] from x[0..L-1] (stride xs); returns whether
// the row holds a non-finite value.
template <typename T>
FASTVQA_HD bool build_prefix(const T* x, int64_t xs, int64_t length, double* sum, int64_t* cnt) {
  double s = 0.0;
  int64_t nan = 0, pos = 0, neg = 0;
  sum[0] = 0.0;
  cnt[0] = cnt[1] = cnt[2] = 0;
  for (int64_t t = 0; t < length; ++t) {
    const double v = static_cast<double>(x[t * xs]);
    if (v - v == 0.0) {  // finite
      s += v;
    } else if (v != v) {
      ++nan;
    } else if (v > 0.0) {
      ++pos;
    } else {
      ++neg;
    }
    sum[t + 1] = s;
    cnt[3 * (t + 1)] = nan;
    cnt[3 * (t + 1) + 1] = pos;
    cnt[3 * (t + 1) + 2] = neg;
  }
  return nan + pos + neg > 0;
}

// IEEE sum of x[a..b-1], a <= b.
FASTVQA_HD double range_sum(const PrefixRow& p, int64_t a, int64_t b) {
  const double s = p.sum[b] - p.sum[a];
  if (!p.special) return s;
  const int64_t nan = p.cnt[3 * b] - p.cnt[3 * a];
  const int64_t pos = p.cnt[3 * b + 1] - p.cnt[3 * a + 1];
  const int64_t neg = p.cnt[3 * b + 2] - p.cnt[3 * a + 2];
  if (nan > 0 || (pos > 0 && neg > 0)) return NAN;
  if (pos > 0) return INFINITY;
  if (neg > 0) return -INFINITY;
  return s;
}

// A span's score from its inside sum (n steps) and, for contrast, the sum of
// the row's other L - n valid steps. Counts arrive as doubles (exact below
// 2^53): int64 -> double has no SSE/AVX2 vector instruction, and the CPU loop
// over a row's offsets must vectorise. No branches for the same reason (the
// unused arm may divide by 0; it is discarded, and FP traps are off).
template <Reduce R>
FASTVQA_HD double combine(double inside, double outside, double n, double length) {
  if (R == Reduce::kSum) return inside;
  const double mean_in = inside / n;
  if (R == Reduce::kMean) return mean_in;
  const double n_out = length - n;
  const double contrast = mean_in - outside / n_out;
  return n_out == 0.0 ? mean_in : contrast;  // no outside: its mean is defined as 0
}

// Score of the valid span [i, j] (n = j - i + 1 steps) of a row of `length`
// steps without non-finite values (p.special false): plain prefix differences.
template <Reduce R>
FASTVQA_HD double finite_span_value(const double* sum, int64_t i, int64_t j, int64_t length,
                                    double n, double length_d) {
  const double inside = sum[j + 1] - sum[i];
  const double outside = R == Reduce::kContrast ? sum[i] + (sum[length] - sum[j + 1]) : 0.0;
  return combine<R>(inside, outside, n, length_d);
}

// Score of the valid span [i, j] in double.
template <Reduce R>
FASTVQA_HD double span_value(const PrefixRow& p, int64_t i, int64_t j) {
  const double n = static_cast<double>(j - i + 1), length = static_cast<double>(p.length);
  if (!p.special) return finite_span_value<R>(p.sum, i, j, p.length, n, length);
  const double inside = range_sum(p, i, j + 1);
  const double outside =
      R == Reduce::kContrast ? range_sum(p, 0, i) + range_sum(p, j + 1, p.length) : 0.0;
  return combine<R>(inside, outside, n, length);
}

// Inclusive range [lo, hi] of band offsets d (span [i, i + d]) that are valid
// for start i; empty when lo > hi. `width` is the band width (max_len).
FASTVQA_HD void offset_range(int64_t i, int64_t length, int64_t min_len, int64_t width,
                             int64_t* lo, int64_t* hi) {
  const int64_t by_row = length - 1 - i;  // j = i + d < length
  *lo = min_len - 1;
  *hi = width - 1 < by_row ? width - 1 : by_row;
}

// The derivative of a span's score (n steps, row length L) with respect to
// x[t]: `in_c` for t in the span, `out_c` for the other steps t < L. Linear
// in x, so the backward pass never reads x.
template <Reduce R>
FASTVQA_HD void grad_coef(int64_t n, int64_t length, double* in_c, double* out_c) {
  *out_c = 0.0;
  *in_c = R == Reduce::kSum ? 1.0 : 1.0 / static_cast<double>(n);
  const int64_t n_out = length - n;
  // No outside: its mean is the constant 0.
  if (R == Reduce::kContrast && n_out > 0) *out_c = -1.0 / static_cast<double>(n_out);
}

FASTVQA_HD bool is_finite(double v) { return v - v == 0.0; }

// Backward through difference arrays. Span [i, i + d] contributes g * in_c
// to its steps and g * out_c to the others, i.e. c = g * (in_c - out_c) on
// steps i..i+d (+c at diff[i], -c at diff[i + d + 1]) plus g * out_c on every
// step (the row's `every` total). The gradient of step t is the prefix sum of
// diff through t plus `every`. `Grad` is any accessor with g(i, d) for a row.
//
// diff[k] gathered (one entry per thread on CUDA): spans starting at k minus
// spans ending at k - 1. *every gets the out_c part of spans starting at k.
template <Reduce R, typename Grad>
FASTVQA_HD double diff_entry(const Grad& g, int64_t k, int64_t length, int64_t min_len,
                             int64_t width, double* every) {
  double add = 0.0, ev = 0.0;
  if (k < length) {
    int64_t lo, hi;
    offset_range(k, length, min_len, width, &lo, &hi);
    for (int64_t d = lo; d <= hi; ++d) {
      double in_c, out_c;
      grad_coef<R>(d + 1, length, &in_c, &out_c);
      const double gv = static_cast<double>(g(k, d));
      add += gv * (in_c - out_c);
      if (out_c != 0.0) ev += gv * out_c;  // skipped, not added as 0: inf * 0 is NaN
    }
  }
  // Spans [k - 1 - d, k - 1] for the offsets d valid at their start.
  for (int64_t d = min_len - 1; d < width && d <= k - 1; ++d) {
    const int64_t i = k - 1 - d;
    if (i + d >= length) continue;
    double in_c, out_c;
    grad_coef<R>(d + 1, length, &in_c, &out_c);
    add -= static_cast<double>(g(i, d)) * (in_c - out_c);
  }
  *every = ev;
  return add;
}

// A sum that keeps its non-finite terms as counts, so a term can be removed
// again exactly and the value is what IEEE addition of the terms gives.
struct IeeeSum {
  double s = 0.0;
  int64_t nan = 0, pos = 0, neg = 0;

  FASTVQA_HD void add(double v, int64_t sign = 1) {
    if (v - v == 0.0) {
      s += sign * v;
    } else if (v != v) {
      nan += sign;
    } else if (v > 0.0) {
      pos += sign;
    } else {
      neg += sign;
    }
  }
  FASTVQA_HD double value() const {
    if (nan > 0 || (pos > 0 && neg > 0)) return NAN;
    if (pos > 0) return INFINITY;
    if (neg > 0) return -INFINITY;
    return s;
  }
};

// The out_c terms of every valid span of the row.
template <Reduce R, typename Grad>
FASTVQA_HD IeeeSum outside_total(const Grad& g, int64_t length, int64_t min_len, int64_t width) {
  IeeeSum acc;
  // (sum and mean have no out_c terms; an empty loop, not an early return, so
  // nvcc does not warn about an unreachable loop.)
  const int64_t rows = R == Reduce::kContrast ? length : 0;
  for (int64_t i = 0; i < rows; ++i) {
    int64_t lo, hi;
    offset_range(i, length, min_len, width, &lo, &hi);
    for (int64_t d = lo; d <= hi; ++d) {
      double in_c, out_c;
      grad_coef<R>(d + 1, length, &in_c, &out_c);
      if (out_c != 0.0) acc.add(static_cast<double>(g(i, d)) * out_c);
    }
  }
  return acc;
}

// Step t's gradient term by term: `all_out` (outside_total) with the spans
// holding t swapped from out_c to in_c. Used for rows whose grad_out holds a
// non-finite value, where the differences above would spread it past its
// spans (inf - inf); O(width^2) per step.
template <Reduce R, typename Grad>
FASTVQA_HD double grad_direct(const Grad& g, int64_t t, int64_t length, int64_t min_len,
                              int64_t width, IeeeSum acc) {
  for (int64_t i = t - width + 1 > 0 ? t - width + 1 : 0; i <= t; ++i) {
    int64_t lo, hi;
    offset_range(i, length, min_len, width, &lo, &hi);
    for (int64_t d = lo > t - i ? lo : t - i; d <= hi; ++d) {
      double in_c, out_c;
      grad_coef<R>(d + 1, length, &in_c, &out_c);
      const double gv = static_cast<double>(g(i, d));
      if (out_c != 0.0) acc.add(gv * out_c, -1);
      acc.add(gv * in_c);
    }
  }
  return acc.value();
}

// ------------------------------------------------------------------ top_spans

// IoU of inclusive index spans [i1, j1] and [i2, j2] (lengths j - i + 1).
FASTVQA_HD double index_iou(int64_t i1, int64_t j1, int64_t i2, int64_t j2) {
  const int64_t lo = i1 > i2 ? i1 : i2;
  const int64_t hi = j1 < j2 ? j1 : j2;
  const int64_t inter = hi >= lo ? hi - lo + 1 : 0;
  const int64_t uni = (j1 - i1 + 1) + (j2 - i2 + 1) - inter;
  return static_cast<double>(inter) / static_cast<double>(uni);
}

// A position in the rank order: only spans ranking strictly after it are
// considered (active = false: no restriction).
template <typename T>
struct Cursor {
  bool active;
  T score;
  int64_t i, j;
};

// The best `cap` valid spans of a row ranking after `after`, scored in T (the
// output dtype, so the order is that of span_scores' band), NaN spans skipped.
// Sorted into spans (cap x 2) / scores (cap); returns how many were found.
template <Reduce R, typename T>
FASTVQA_HD int64_t scan_ranked(const PrefixRow& p, int64_t min_len, int64_t max_len,
                               int64_t cap, const Cursor<T>& after, int64_t* spans, T* scores) {
  int64_t count = 0;
  for (int64_t i = 0; i < p.length; ++i) {
    int64_t lo, hi;
    offset_range(i, p.length, min_len, max_len, &lo, &hi);
    for (int64_t d = lo; d <= hi; ++d) {
      const T s = static_cast<T>(span_value<R>(p, i, i + d));
      if (is_nan(s)) continue;
      if (after.active && !ranks_before(after.score, after.i, after.j, s, i, i + d)) continue;
      insert_ranked(s, i, i + d, cap, &count, spans, scores);
    }
  }
  return count;
}

// Greedy NMS step: appends candidate (s, i, j) to the kept list unless its
// IoU with a kept span exceeds thr (strict >, as torchvision). Returns
// whether it was kept.
template <typename T>
FASTVQA_HD bool keep_unless_suppressed(T s, int64_t i, int64_t j, double thr, int64_t* kept,
                                       int64_t* kept_spans, T* kept_scores) {
  for (int64_t m = 0; m < *kept; ++m)
    if (index_iou(i, j, kept_spans[2 * m], kept_spans[2 * m + 1]) > thr) return false;
  kept_spans[2 * *kept] = i;
  kept_spans[2 * *kept + 1] = j;
  kept_scores[*kept] = s;
  ++*kept;
  return true;
}

}  // namespace span_scores
}  // namespace fastvqa
