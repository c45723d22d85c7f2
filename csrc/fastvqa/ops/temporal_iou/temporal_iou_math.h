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
//
// Extreme and infinite endpoints (every mode, CPU and CUDA alike):
// - Finite endpoints never overflow: a pair with an endpoint of magnitude
//   >= big_endpoint<T>() (2^1020 in double, 2^124 in float) takes the extended
//   path, which computes the mode's quantities unscaled and, only when one of
//   them overflows, again with all four endpoints scaled by 1/4. Scaling is
//   exact for normal numbers, and a quantity that overflowed makes every
//   ratio of the mode either 0/x or x/(something >= 2^970), where the low
//   bits a subnormal endpoint loses in the scaling cannot show; so each ratio
//   is what exact arithmetic gives, rounded (a subnormal span inside
//   [-1e308, 1] has IoG 1). Below that bound the plain formulas above run
//   unchanged (bit for bit what they always gave).
// - An infinite endpoint is the limit of one huge value L -> +inf: +inf is L
//   and -inf is -L, the same L for every infinite endpoint of the pair. Every
//   length, intersection, union and hull is then c * L + v, comparisons are
//   lexicographic in (c, v), and a ratio is its limit: c_num / c_den when the
//   denominator grows with L, v_num / v_den when it does not. So identical
//   spans [-inf, inf] have IoU 1, [0, inf] against [5, inf] has IoU 1,
//   [-inf, inf] against [0, inf] has IoU and IoP 0.5 and IoG 1, and a finite
//   span against an infinite one has IoU 0 (IoG 1 if it lies inside).
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

// Endpoints from this magnitude up (and +-inf) take the extended path, so the
// plain formulas never see a length, sum or hull that could overflow.
template <typename T>
FASTVQA_HD T big_endpoint();
template <>
FASTVQA_HD float big_endpoint<float>() { return 0x1p124f; }
template <>
FASTVQA_HD double big_endpoint<double>() { return 0x1p1020; }

// True for +-inf and for finite values >= big_endpoint (false for NaN).
template <typename T>
FASTVQA_HD bool special(T x) {
  return (x >= big_endpoint<T>()) | (x <= -big_endpoint<T>());
}
template <typename T>
FASTVQA_HD bool any_special(T a, T b, T c, T d) {
  return special(a) | special(b) | special(c) | special(d);
}

// k * L + v with L -> +inf (see the header comment); k is -2 .. 2 at most.
template <typename T>
struct Ext {
  T k, v;
};
// An endpoint, its finite part scaled by s (1 or 1/4).
template <typename T>
FASTVQA_HD Ext<T> ext(T x, T s) {
  if (x - x == T(0)) return Ext<T>{T(0), x * s};
  return Ext<T>{x > T(0) ? T(1) : T(-1), T(0)};  // +-inf (NaN: overridden by the caller)
}
template <typename T>
FASTVQA_HD bool lt(Ext<T> x, Ext<T> y) { return x.k < y.k || (x.k == y.k && x.v < y.v); }
template <typename T>
FASTVQA_HD bool pos(Ext<T> x) { return x.k > T(0) || (x.k == T(0) && x.v > T(0)); }
template <typename T>
FASTVQA_HD Ext<T> emin(Ext<T> x, Ext<T> y) { return lt(y, x) ? y : x; }
template <typename T>
FASTVQA_HD Ext<T> emax(Ext<T> x, Ext<T> y) { return lt(x, y) ? y : x; }
template <typename T>
FASTVQA_HD Ext<T> esub(Ext<T> x, Ext<T> y) { return Ext<T>{x.k - y.k, x.v - y.v}; }
template <typename T>
FASTVQA_HD Ext<T> eadd(Ext<T> x, Ext<T> y) { return Ext<T>{x.k + y.k, x.v + y.v}; }
template <typename T>
FASTVQA_HD Ext<T> eclamp0(Ext<T> x) { return lt(x, Ext<T>{T(0), T(0)}) ? Ext<T>{T(0), T(0)} : x; }
// The limit of x / den for den > 0 (the caller checks pos(den)).
template <typename T>
FASTVQA_HD T elimit(Ext<T> x, Ext<T> den) {
  if (den.k != T(0)) return x.k / den.k;
  if (x.k != T(0)) return x.k > T(0) ? T(INFINITY) : -T(INFINITY);
  return x.v / den.v;
}
template <typename T>
FASTVQA_HD T eratio_or_zero(Ext<T> x, Ext<T> den) { return pos(den) ? elimit(x, den) : T(0); }
// True when a finite part overflowed (+-inf or NaN from inf - inf): only the
// finite parts of Ext values can, as infinite endpoints are carried in k.
template <typename T>
FASTVQA_HD bool overflowed(Ext<T> x) { return !(x.v - x.v == T(0)); }

// pair_overlap for pairs with a special endpoint, its finite parts scaled by s
// (see the header comment); *over says whether a quantity the mode reads
// overflowed, in which case the caller computes again with s = 1/4.
template <Mode kMode, typename T>
FASTVQA_HD T pair_overlap_ext_at(T as, T ae, T bs, T be, T s, bool* over) {
  const Ext<T> A0 = ext(as, s), A1 = ext(ae, s), B0 = ext(bs, s), B1 = ext(be, s);
  const Ext<T> len_a = eclamp0(esub(A1, A0));
  const Ext<T> len_b = eclamp0(esub(B1, B0));
  const Ext<T> inter = eclamp0(esub(emin(A1, B1), emax(A0, B0)));
  if constexpr (kMode == Mode::kIoP) {
    *over = overflowed(inter) || overflowed(len_a);
    return eratio_or_zero(inter, len_a);
  } else if constexpr (kMode == Mode::kIoG) {
    *over = overflowed(inter) || overflowed(len_b);
    return eratio_or_zero(inter, len_b);
  } else {
    const Ext<T> uni = esub(eadd(len_a, len_b), inter);
    const T iou = eratio_or_zero(inter, uni);
    *over = overflowed(inter) || overflowed(uni);
    if constexpr (kMode == Mode::kIoU) {
      return iou;
    } else {
      const Ext<T> hull = esub(emax(A1, B1), emin(A0, B0));
      const Ext<T> gap = esub(hull, uni);
      *over = *over || overflowed(hull) || overflowed(gap);
      return pos(hull) ? iou - eratio_or_zero(gap, hull) : iou;
    }
  }
}

// pair_overlap for pairs with a special endpoint: unscaled first, so that
// subnormal endpoints keep every bit (a subnormal span inside a 1e308-long one
// has IoG 1); only when a quantity the mode reads overflows is the pair
// computed again with its endpoints scaled by 1/4. That second pass loses the
// low bits of subnormal endpoints only, and only where they cannot matter: a
// quantity that overflowed is at least 2^1023, so every ratio the mode takes
// has a denominator of at least 2^970 (it holds that quantity, or is a
// length at least as long as it) or a zero numerator.
template <Mode kMode, typename T>
FASTVQA_HD T pair_overlap_ext(T as, T ae, T bs, T be) {
  bool over = false;
  T r = pair_overlap_ext_at<kMode>(as, ae, bs, be, T(1), &over);
  if (over) r = pair_overlap_ext_at<kMode>(as, ae, bs, be, T(0.25), &over);
  return any_nan(as, ae, bs, be) ? quiet_nan<T>() : r;
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

// Any pair: the plain formulas, or the extended path when an endpoint is special.
template <Mode kMode, typename T>
FASTVQA_HD T pair_overlap_any(T as, T ae, T bs, T be) {
  return any_special(as, ae, bs, be) ? pair_overlap_ext<kMode>(as, ae, bs, be)
                                     : pair_overlap<kMode>(as, ae, bs, be);
}

// NExT-GQA per-pair rule; returns the signed (iou, iop) before the row max.
// Pairs with a special endpoint follow the header comment's extended rule.
template <typename T>
FASTVQA_HD void nextgqa_pair(T ps, T pe, T gs, T ge, T* iou, T* iop) {
  const T zero = T(0);
  if (ps == pe) {
    *iou = zero;
    *iop = (gs <= ps && ps <= ge) ? T(1) : zero;
    return;
  }
  if (any_special(ps, pe, gs, ge)) {
    // Unscaled first, then each ratio whose quantities overflowed again with
    // the endpoints scaled by 1/4 (see pair_overlap_ext).
    bool redo_iou = true, redo_iop = true;
    for (int pass = 0; pass < 2 && (redo_iou || redo_iop); ++pass) {
      const T s = pass == 0 ? T(1) : T(0.25);
      const Ext<T> P0 = ext(ps, s), P1 = ext(pe, s), G0 = ext(gs, s), G1 = ext(ge, s);
      const Ext<T> inter = esub(emin(P1, G1), emax(P0, G0));
      const Ext<T> hull = esub(emax(P1, G1), emin(P0, G0));
      const Ext<T> len_p = esub(P1, P0);
      if (redo_iou) *iou = pos(hull) ? elimit(inter, hull) : zero;
      if (redo_iop) *iop = lt(P0, P1) ? elimit(inter, len_p) : zero;
      redo_iou = redo_iou && (overflowed(inter) || overflowed(hull));
      redo_iop = redo_iop && (overflowed(inter) || overflowed(len_p));
    }
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
