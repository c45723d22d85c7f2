// SPDX-License-Identifier: Apache-2.0
// Per-pair temporal overlap semantics, written once for the CPU loops and the
// CUDA kernels. Spans are [start, end] in seconds.
//
// temporal_iou / paired_temporal_iou (textbook set overlap):
//   len(x)  = max(end - start, 0)        (a reversed span is empty)
//   inter   = max(min(ae, be) - max(as, bs), 0)
//   union   = len(a) + len(b) - inter
//   iou = inter / union, iop = inter / len(a), iog = inter / len(b); 0 when the
//   denominator is 0 (e.g. two zero-length spans, a zero-length prediction).
//   giou = iou - (hull - union) / hull with hull = max(ae, be) - min(as, bs)
//   from the raw endpoints; giou = iou when hull <= 0.
//   Any NaN endpoint gives NaN.
//
// grounding_overlap (the official NExT-GQA evaluator, per prediction p and
// ground-truth segment g; the row maximum starts at 0 and IoU and IoP are
// maximised independently):
//   ps == pe:  iou = 0, iop = 1 if gs <= ps <= ge else 0
//   otherwise: inter = min(pe, ge) - max(ps, gs)   (signed, not clamped)
//              hull  = max(pe, ge) - min(ps, gs)
//              iou = inter / hull if hull > 0 else 0
//              iop = inter / (pe - ps) if pe > ps else 0
#pragma once

#include <cmath>

#include "fastvqa/common/macros.h"

namespace fastvqa {
namespace temporal_iou {

enum class Mode : int { kIoU = 0, kIoP = 1, kIoG = 2, kGIoU = 3 };

template <typename T>
FASTVQA_HD T min2(T x, T y) { return y < x ? y : x; }
template <typename T>
FASTVQA_HD T max2(T x, T y) { return x < y ? y : x; }
template <typename T>
FASTVQA_HD T quiet_nan() { return T(NAN); }
template <typename T>
FASTVQA_HD bool any_nan(T a, T b, T c, T d) {
  // x != x is true only for NaN; written out so the compiler can vectorise it.
  return (a != a) | (b != b) | (c != c) | (d != d);
}

// x / den, or 0 when den <= 0. The division always runs on a safe
// denominator so the compiler may evaluate both sides without a branch (a
// guarded division would otherwise block vectorisation of the CPU loop).
template <typename T>
FASTVQA_HD T ratio_or_zero(T x, T den) {
  const bool ok = den > T(0);
  const T q = x / (ok ? den : T(1));
  return ok ? q : T(0);
}

// The overlap of one pair in one mode. Branch-light so the pairwise CPU loop
// vectorises; the mode is a template parameter so each loop holds one formula.
template <Mode kMode, typename T>
FASTVQA_HD T pair_overlap(T as, T ae, T bs, T be) {
  const T zero = T(0);
  const T len_a = max2(ae - as, zero);
  const T len_b = max2(be - bs, zero);
  const T inter = max2(min2(ae, be) - max2(as, bs), zero);
  T r;
  if constexpr (kMode == Mode::kIoP) {
    r = ratio_or_zero(inter, len_a);
  } else if constexpr (kMode == Mode::kIoG) {
    r = ratio_or_zero(inter, len_b);
  } else {
    const T uni = len_a + len_b - inter;
    const T iou = ratio_or_zero(inter, uni);
    if constexpr (kMode == Mode::kIoU) {
      r = iou;
    } else {
      const T hull = max2(ae, be) - min2(as, bs);
      r = hull > zero ? iou - ratio_or_zero(hull - uni, hull) : iou;
    }
  }
  return any_nan(as, ae, bs, be) ? quiet_nan<T>() : r;
}

// NExT-GQA per-pair rule; returns the signed (iou, iop) before the row max.
template <typename T>
FASTVQA_HD void nextgqa_pair(T ps, T pe, T gs, T ge, T* iou, T* iop) {
  const T zero = T(0);
  if (ps == pe) {
    *iou = zero;
    *iop = (gs <= ps && ps <= ge) ? T(1) : zero;
    return;
  }
  const T inter = min2(pe, ge) - max2(ps, gs);
  const T hull = max2(pe, ge) - min2(ps, gs);
  *iou = hull > zero ? inter / hull : zero;
  *iop = pe > ps ? inter / (pe - ps) : zero;
}

// One prediction against its ragged row of ground truth [begin, end) in `gt`
// (row stride gs0, column stride gs1). NaN anywhere in the pair of inputs the
// row touches gives NaN; an empty row gives 0.
template <typename T>
FASTVQA_HD void grounding_row(T ps, T pe, const T* gt, long long gs0, long long gs1,
                              long long begin, long long end, T* out_iou, T* out_iop) {
  T best_iou = T(0), best_iop = T(0);
  bool saw_nan = (ps != ps) || (pe != pe);
  for (long long k = begin; k < end; ++k) {
    const T gs = gt[k * gs0];
    const T ge = gt[k * gs0 + gs1];
    if ((gs != gs) || (ge != ge)) {
      saw_nan = true;
      continue;
    }
    T iou, iop;
    nextgqa_pair(ps, pe, gs, ge, &iou, &iop);
    // The official evaluator keeps a running maximum that starts at 0, which
    // is also what clamps the negative values of disjoint spans.
    if (iou > best_iou) best_iou = iou;
    if (iop > best_iop) best_iop = iop;
  }
  *out_iou = saw_nan ? quiet_nan<T>() : best_iou;
  *out_iop = saw_nan ? quiet_nan<T>() : best_iop;
}

}  // namespace temporal_iou
}  // namespace fastvqa
