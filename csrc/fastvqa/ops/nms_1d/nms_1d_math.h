// SPDX-License-Identifier: Apache-2.0
// 1-D (temporal) non-maximum suppression semantics, written once for the CPU
// loops and the CUDA kernels. Spans are [start, end] in seconds; the overlap
// is the textbook temporal IoU of temporal_iou_math.h (mode "iou").
//
// Order: spans are taken by higher score; equal scores are broken by the tie
// rule (Ties): kStart (the default) by smaller start, then smaller end, then
// smaller index; kStable by smaller index alone (input order among equal
// scores, what a stable sort by descending score gives: Moment-DETR's and
// UniVTG's post-processing). NaN sorts after every number (in the score: ranks
// last; in an endpoint: counts as the largest), which keeps the order total
// with NaN inputs, so CPU and CUDA agree on every input.
//
// hard:     in that order, a span is kept unless its IoU with an already kept
//           span of its group EXCEEDS iou_threshold (strict >, as torchvision).
// linear:   soft-NMS (Bodla et al. 2017, as mmcv's soft_nms): repeatedly take
//           the best remaining span by its current score, then multiply every
//           other remaining score by (1 - iou) where iou > iou_threshold.
// gaussian: the same with the factor exp(-iou^2 / sigma) for every pair.
// All methods: a span whose (current) score is NaN or below score_threshold
// is dropped and never kept. A NaN IoU (NaN endpoint) never exceeds the
// threshold and decays nothing.
#pragma once

#include <cmath>
#include <cstdint>

#include "fastvqa/common/macros.h"
#include "fastvqa/ops/temporal_iou/temporal_iou_math.h"

namespace fastvqa {
namespace nms_1d {

enum class Method : int { kHard = 0, kLinear = 1, kGaussian = 2 };
enum class Ties : int { kStart = 0, kStable = 1 };

template <typename T>
FASTVQA_HD bool is_nan(T x) { return x != x; }

// x < y with NaN as the largest value (NaN == NaN): a strict weak order.
template <typename T>
FASTVQA_HD bool less_nan_last(T x, T y) {
  if (is_nan(x)) return false;
  return is_nan(y) || x < y;
}

// True when candidate a ranks strictly before candidate b: higher score, then
// (kStart) smaller start, then smaller end, then smaller index, or (kStable)
// smaller index. Total for any input under either rule.
template <typename T>
FASTVQA_HD bool ranks_before(Ties ties, T sa, T sta, T ena, int64_t ia, T sb, T stb, T enb,
                             int64_t ib) {
  // Scores descend, so "a before b" is "b's score is smaller".
  if (less_nan_last(sb, sa) || less_nan_last(sa, sb)) return less_nan_last(sb, sa);
  if (ties == Ties::kStable) return ia < ib;
  if (less_nan_last(sta, stb) || less_nan_last(stb, sta)) return less_nan_last(sta, stb);
  if (less_nan_last(ena, enb) || less_nan_last(enb, ena)) return less_nan_last(ena, enb);
  return ia < ib;
}

// The IoU temporal_iou gives for the pair, infinite and huge endpoints
// included (its extended path: [0, inf] and [5, inf] have IoU 1, and
// [0, 3e38] with [1e38, 3e38] does not overflow in float32).
template <typename T>
FASTVQA_HD T span_iou(T as, T ae, T bs, T be) {
  return temporal_iou::pair_overlap_any<temporal_iou::Mode::kIoU>(as, ae, bs, be);
}

// Thresholds are doubles, compared with the float32/float64 value widened to
// double: exact, so a threshold means the same in both dtypes.

// Hard NMS: does a kept span suppress a candidate at this IoU?
template <typename T>
FASTVQA_HD bool suppresses(T iou, double iou_threshold) {
  return static_cast<double>(iou) > iou_threshold;
}

// Which kept spans can suppress a candidate, for the O(N log N) hard NMS of
// the CPU path. With plain endpoints (below) and iou_threshold >= 0, the IoU above
// exceeds the threshold only if the computed intersection
// max2(min2(ae, be) - max2(as, bs), 0) is positive (a zero intersection gives
// 0 / union = 0, or 0 for a union <= 0: never > a threshold >= 0). For finite
// x and y, the rounded difference x - y is positive exactly when x > y
// (gradual underflow; an overflow rounds to +inf), so that happens exactly when
// min(ae, be) > max(as, bs), i.e. when both spans have positive length and each
// starts before the other ends (as < ae, bs < be, as < be, bs < ae; the
// buckets and trees of nms_1d_cpu.cpp find every such kept span), without
// rounding.
// So every kept span that suppresses a candidate is among the kept spans of
// positive length that start before the candidate's end and end after its
// start; the caller still decides with suppresses(span_iou(...)), so the kept
// set is the one of the plain greedy loop bit for bit.
//
// "Plain" spans (both endpoints finite and below temporal_iou's special
// bound) are what that index holds: for a pair of them span_iou is the plain
// formula, so its loops call plain_span_iou and skip the special-endpoint test.
template <typename T>
FASTVQA_HD bool plain_span(T start, T stop) {
  return !is_nan(start) && !is_nan(stop) &&
         !temporal_iou::any_special(start, stop, start, stop);
}
template <typename T>
FASTVQA_HD T plain_span_iou(T as, T ae, T bs, T be) {
  return temporal_iou::pair_overlap<temporal_iou::Mode::kIoU>(as, ae, bs, be);
}

// A score that can be (or stay) a candidate: not NaN, not below the threshold.
template <typename T>
FASTVQA_HD bool score_alive(T score, double score_threshold) {
  return !is_nan(score) && !(static_cast<double>(score) < score_threshold);
}

// exp in the argument's precision on host and device alike.
FASTVQA_HD float exp_of(float x) { return expf(x); }
FASTVQA_HD double exp_of(double x) { return exp(x); }

// Soft-NMS factor (linear or gaussian) applied to a remaining score after a
// span at this IoU was taken.
template <typename T>
FASTVQA_HD T decay(Method method, T iou, double iou_threshold, T sigma) {
  if (method == Method::kLinear) return suppresses(iou, iou_threshold) ? T(1) - iou : T(1);
  // Disjoint spans are the common case; exp(-0) is exactly 1, so skipping the
  // call there changes no result.
  return (is_nan(iou) || iou == T(0)) ? T(1) : exp_of(-(iou * iou) / sigma);
}

// One group of spans [begin, end) seen through strides, and the output slots
// of its segment: up to (end - begin) kept indices and their scores.
template <typename T>
struct Group {
  const T* spans;   ///< N x 2, strides s0, s1
  int64_t s0, s1;
  const T* scores;  ///< N, stride sc0
  int64_t sc0;
  int64_t begin, end;
  Ties ties;        ///< the order among equal scores

  FASTVQA_HD T start(int64_t k) const { return spans[k * s0]; }
  FASTVQA_HD T stop(int64_t k) const { return spans[k * s0 + s1]; }
  FASTVQA_HD T score(int64_t k) const { return scores[k * sc0]; }
  // Rank order of two spans of this group by their input scores (global indices).
  FASTVQA_HD bool before(int64_t a, int64_t b) const {
    return ranks_before(ties, score(a), start(a), stop(a), a, score(b), start(b), stop(b), b);
  }
};

// Soft-NMS of one group, the sequential algorithm of mmcv's soft_nms with the
// total order above. `idx` and `cur` are scratch for the group's size (the
// live candidates and their current scores; the order of the live list does
// not matter because every pick scans it with the total order). Writes the
// kept global indices in selection order with their decayed scores to
// out_keep / out_scores and returns how many there are.
template <typename T>
FASTVQA_HD int64_t soft_nms_group(const Group<T>& g, Method method, double iou_threshold,
                                  T sigma, double score_threshold, int64_t* idx, T* cur,
                                  int64_t* out_keep, T* out_scores) {
  int64_t live = 0;
  for (int64_t k = g.begin; k < g.end; ++k) {
    const T s = g.score(k);
    if (!score_alive(s, score_threshold)) continue;
    idx[live] = k;
    cur[live] = s;
    ++live;
  }
  int64_t count = 0;
  while (live > 0) {
    // Live scores are never NaN, so plain comparisons decide unless they tie.
    int64_t best = 0;
    T cb = cur[0];
    for (int64_t q = 1; q < live; ++q) {
      const T cq = cur[q];
      if (cq > cb) {
        best = q;
        cb = cq;
      } else if (cq == cb) {
        const int64_t a = idx[q], b = idx[best];
        if (ranks_before(g.ties, cq, g.start(a), g.stop(a), a, cb, g.start(b), g.stop(b), b))
          best = q;
      }
    }
    const int64_t sel = idx[best];
    out_keep[count] = sel;
    out_scores[count] = cur[best];
    ++count;
    --live;
    idx[best] = idx[live];
    cur[best] = cur[live];
    const T ss = g.start(sel), se = g.stop(sel);
    for (int64_t q = 0; q < live;) {
      const int64_t k = idx[q];
      const T ks = g.start(k), ke = g.stop(k);
      // Disjoint spans (most pairs) have IoU 0 and weight exactly 1 in both
      // methods; the test is false for NaN endpoints, which take the full path.
      if (!(ks >= se || ke <= ss))
        cur[q] *= decay(method, span_iou(ss, se, ks, ke), iou_threshold, sigma);
      if (score_alive(cur[q], score_threshold)) {
        ++q;
      } else {  // dropped: the last live candidate takes its slot
        --live;
        idx[q] = idx[live];
        cur[q] = cur[live];
      }
    }
  }
  return count;
}

}  // namespace nms_1d
}  // namespace fastvqa
