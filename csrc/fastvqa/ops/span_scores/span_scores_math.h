// SPDX-License-Identifier: Apache-2.0
// Span scoring semantics (span_scores, its backward, top_spans), written once
// for the CPU loops and the CUDA kernels.
//
// A span is an inclusive pair of steps [i, j] of one row, n = j - i + 1 steps.
// It is valid when min_len <= n <= max_len and j < L (the row's valid length).
// Its score under each reduce, with S the sum of x[i..j] and O the sum of the
// row's other valid steps x[0..i-1] and x[j+1..L-1]:
//   sum:      S
//   mean:     S / n
//   contrast: S / n - O / (L - n); when the span covers the whole row (L = n)
//             the outside mean is 0.
//
// Every sum is made of its own terms only, in float64 (also for float32
// input), in a fixed order, so it depends on nothing else in the row. (The
// first version took S as a difference of prefix sums, which carries the
// rounding error of everything before the span: one -3.4e38 mask step wiped
// out every later span, and 1e308 steps overflowed into inf - inf = NaN.)
//   S = x[i] + (x[i+1] + (... + (x[j-1] + x[j])))      last step first;
//   O = P[i] + Q[j+1], P[i] = ((x[0] + x[1]) + ...) + x[i-1] first step first,
//                      Q[k] = x[k] + (... + x[L-1])      last step first.
// S for [i, j] is x[i] + S for [i+1, j]: the band costs one add per cell,
// streamed over the spans ending at each j (or, on the CPU, over the starts
// from the right with one running sum per end). Empty sums are -0.0, the
// exact additive identity.
//
// Non-finite values are counted apart (never added to a finite sum): a sum
// holding a NaN or both infinities is NaN, one kind of infinity gives +-inf;
// for contrast the outside's non-finite values count as well.
//
// Overflow: a row is "careful" when it holds a non-finite value or its finite
// |x| total reaches 2^1022 (only float64 input can). Careful rows also keep
// every finite sum in units of 2^64 (exact scaling); a score whose unscaled
// evaluation overflows is recomputed from those, so it is +-inf only when its
// own value is beyond the float64 range. In other rows no partial sum can
// overflow and the plain loops run.
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

constexpr double kScaleDown = 0x1p-64;
constexpr double kScaleUp = 0x1p64;
// A row whose finite |x| total stays below this has no partial sum, mean or
// contrast beyond 2^1023: nothing can overflow.
constexpr double kCarefulTotal = 0x1p1022;

FASTVQA_HD bool is_finite(double v) { return v - v == 0.0; }

// A float64 sum whose non-finite terms are counted apart, with its finite
// part also in units of 2^64 (ss) for the overflow fallback.
struct WideSum {
  double s, ss;
  int64_t nan, pos, neg;

  FASTVQA_HD WideSum() : s(-0.0), ss(-0.0), nan(0), pos(0), neg(0) {}

  // Adds a term (IEEE addition commutes: the order is that of the calls).
  FASTVQA_HD void add(double v) {
    if (is_finite(v)) {
      s = v + s;
      ss = v * kScaleDown + ss;
    } else if (v != v) {
      ++nan;
    } else if (v > 0.0) {
      ++pos;
    } else {
      ++neg;
    }
  }
  FASTVQA_HD bool special() const { return nan + pos + neg > 0; }
  // NaN or +-inf from the counts; 0 without non-finite terms.
  FASTVQA_HD double special_value() const {
    if (nan > 0 || (pos > 0 && neg > 0)) return NAN;
    if (pos > 0) return INFINITY;
    if (neg > 0) return -INFINITY;
    return 0.0;
  }
};

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

// The outside sums of one row of L valid steps (entries 0..L; see the top).
struct RowSums {
  const double* pre;    ///< P[k] = x[0] + ... + x[k-1] (finite terms)
  const double* suf;    ///< Q[k] = x[k] + ... + x[L-1] (finite terms)
  const double* pre_s;  ///< P in units of 2^64 (careful rows only)
  const double* suf_s;  ///< Q in units of 2^64 (careful rows only)
  const int64_t* cnt;   ///< (L + 1) x 3 prefix counts of NaN, +inf, -inf (careful rows only)
  int64_t length;       ///< L
  bool careful;         ///< non-finite values, or a finite |x| total >= 2^1022
};

// Whether a row of L steps x[0..L-1] (stride xs) is careful; also copies it
// to xd as double unless xd is null.
template <typename T>
FASTVQA_HD bool scan_row(const T* x, int64_t xs, int64_t length, double* xd) {
  bool special = false;
  double total = 0.0;
  for (int64_t t = 0; t < length; ++t) {
    const double v = static_cast<double>(x[t * xs]);
    if (xd) xd[t] = v;
    if (is_finite(v)) {
      total += v < 0.0 ? -v : v;
    } else {
      special = true;
    }
  }
  return special || !(total < kCarefulTotal);
}

// P and Q (entries 0..L) of a row that is not careful.
template <typename T>
FASTVQA_HD void build_plain_sums(const T* x, int64_t xs, int64_t length, double* pre,
                                 double* suf) {
  pre[0] = -0.0;
  for (int64_t t = 0; t < length; ++t) pre[t + 1] = static_cast<double>(x[t * xs]) + pre[t];
  suf[length] = -0.0;
  for (int64_t t = length - 1; t >= 0; --t) suf[t] = static_cast<double>(x[t * xs]) + suf[t + 1];
}

// P, Q (entries 0..L), their scaled copies and the prefix counts of a
// careful row (the same sums as build_plain_sums where both apply).
template <typename T>
FASTVQA_HD void build_careful_sums(const T* x, int64_t xs, int64_t length, double* pre,
                                   double* suf, double* pre_s, double* suf_s, int64_t* cnt) {
  WideSum p;
  pre[0] = pre_s[0] = -0.0;
  cnt[0] = cnt[1] = cnt[2] = 0;
  for (int64_t t = 0; t < length; ++t) {
    p.add(static_cast<double>(x[t * xs]));
    pre[t + 1] = p.s;
    pre_s[t + 1] = p.ss;
    cnt[3 * (t + 1)] = p.nan;
    cnt[3 * (t + 1) + 1] = p.pos;
    cnt[3 * (t + 1) + 2] = p.neg;
  }
  WideSum q;
  suf[length] = suf_s[length] = -0.0;
  for (int64_t t = length - 1; t >= 0; --t) {
    q.add(static_cast<double>(x[t * xs]));
    suf[t] = q.s;
    suf_s[t] = q.ss;
  }
}

// The outside sum of [i, j] (careful rows).
FASTVQA_HD WideSum outside_sum(const RowSums& r, int64_t i, int64_t j) {
  WideSum o;
  o.s = r.pre[i] + r.suf[j + 1];
  o.ss = r.pre_s[i] + r.suf_s[j + 1];
  const int64_t* c0 = r.cnt + 3 * i;
  const int64_t* c1 = r.cnt + 3 * (j + 1);
  const int64_t* cl = r.cnt + 3 * r.length;
  o.nan = c0[0] + (cl[0] - c1[0]);
  o.pos = c0[1] + (cl[1] - c1[1]);
  o.neg = c0[2] + (cl[2] - c1[2]);
  return o;
}

// Score of a span of a row without non-finite values or overflow, from its
// inside sum (the outside from P and Q for contrast).
template <Reduce R>
FASTVQA_HD double plain_score(double inside, const double* pre, const double* suf, int64_t i,
                              int64_t j, double n, double length) {
  const double outside = R == Reduce::kContrast ? pre[i] + suf[j + 1] : 0.0;
  return combine<R>(inside, outside, n, length);
}

// Score of a span of a careful row. Equal to plain_score whenever that one
// neither meets a non-finite value nor overflows.
template <Reduce R>
FASTVQA_HD double careful_score(const WideSum& in, const WideSum& out, double n, double length) {
  const bool out_special = R == Reduce::kContrast && n < length && out.special();
  if (in.special() || out_special)  // the finite parts cannot change an inf or NaN
    return combine<R>(in.special_value(), out_special ? out.special_value() : 0.0, n, length);
  const double v = combine<R>(in.s, out.s, n, length);
  if (is_finite(v)) return v;
  // A partial sum (or the difference of the means) overflowed: in units of
  // 2^64 nothing does, and scaling back gives +-inf only for a value beyond
  // the float64 range.
  return combine<R>(in.ss, out.ss, n, length) * kScaleUp;
}

// Visits the valid spans ending at step j < L, shortest first: emit(i, d, v)
// with start i = j - d and score v (double). width: the longest span.
template <Reduce R, typename T, typename Emit>
FASTVQA_HD void spans_ending_at(const T* x, int64_t xs, const RowSums& r, int64_t j,
                                int64_t min_len, int64_t width, Emit& emit) {
  const int64_t last = width - 1 < j ? width - 1 : j;  // d <= j: the start stays >= 0
  const double length = static_cast<double>(r.length);
  if (!r.careful) {
    double s = -0.0;
    for (int64_t d = 0; d <= last; ++d) {
      s = static_cast<double>(x[(j - d) * xs]) + s;
      if (d + 1 >= min_len)
        emit(j - d, d,
             plain_score<R>(s, r.pre, r.suf, j - d, j, static_cast<double>(d + 1), length));
    }
    return;
  }
  WideSum s;
  for (int64_t d = 0; d <= last; ++d) {
    s.add(static_cast<double>(x[(j - d) * xs]));
    if (d + 1 >= min_len) {
      const WideSum out = R == Reduce::kContrast ? outside_sum(r, j - d, j) : WideSum();
      emit(j - d, d, careful_score<R>(s, out, static_cast<double>(d + 1), length));
    }
  }
}

// Inclusive range [lo, hi] of band offsets d (span [i, i + d]) that are valid
// for start i; empty when lo > hi. `width` is the band width (max_len).
FASTVQA_HD void offset_range(int64_t i, int64_t length, int64_t min_len, int64_t width,
                             int64_t* lo, int64_t* hi) {
  const int64_t by_row = length - 1 - i;  // j = i + d < length
  *lo = min_len - 1;
  *hi = width - 1 < by_row ? width - 1 : by_row;
}

// ------------------------------------------------------------------- backward
//
// The gradient of step t < L is the sum of its terms g(i, d) * coef over the
// valid spans whose score depends on x[t]: coef = in_c for the spans holding
// t, out_c (contrast only) for the others. It is summed from its own terms
// only, again never as a difference (a difference array lets one huge or
// non-finite g spread to unrelated steps):
//   inside(t) = sum over ends j = t..t+W-1 of C(j, t),
//               C(j, t) = sum over starts i <= t of g(i, j - i) * in_c
//               (i ascending; every span [i, j] with i <= t <= j holds t);
//   left(t)   = sum over ends j < t of E(j), E(j) = the out_c terms of the spans ending at j;
//   right(t)  = sum over starts i > t of F(i), F(i) = the out_c terms of the spans starting at i;
//   grad[t]   = (inside(t) + left(t)) + right(t).
// Non-finite g then reaches exactly the steps it is a term of (IEEE addition:
// NaN if a NaN or both infinities are among them, else +-inf). A gradient
// overflows only if its own terms reach the float64 range.

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

// g * c, or 0 when c is 0 (not multiplied: inf * 0 is NaN).
FASTVQA_HD double term(double g, double c) { return c != 0.0 ? g * c : 0.0; }

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

// Collects spans into a sorted list of the best `cap` (see scan_ranked).
template <typename T>
struct RankedEmit {
  const Cursor<T>* after;
  int64_t cap;
  int64_t* count;
  int64_t* spans;
  T* scores;

  FASTVQA_HD void operator()(int64_t i, int64_t d, double v) const {
    const T s = static_cast<T>(v);
    if (is_nan(s)) return;
    if (after->active && !ranks_before(after->score, after->i, after->j, s, i, i + d)) return;
    insert_ranked(s, i, i + d, cap, count, spans, scores);
  }
};

// The best `cap` valid spans of a row (x: its L steps, stride xs) ranking
// after `after`, scored in T (the output dtype, so the order is that of
// span_scores' band; same sums, bit for bit), NaN spans skipped. Sorted into
// spans (cap x 2) / scores (cap); returns how many were found.
template <Reduce R, typename T, typename X>
FASTVQA_HD int64_t scan_ranked(const X* x, int64_t xs, const RowSums& r, int64_t min_len,
                               int64_t max_len, int64_t cap, const Cursor<T>& after,
                               int64_t* spans, T* scores) {
  int64_t count = 0;
  RankedEmit<T> emit{&after, cap, &count, spans, scores};
  for (int64_t j = 0; j < r.length; ++j) spans_ending_at<R>(x, xs, r, j, min_len, max_len, emit);
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
