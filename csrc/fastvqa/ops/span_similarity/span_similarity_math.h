// SPDX-License-Identifier: Apache-2.0
// Span-to-query similarity semantics, written once for CPU and CUDA.
//
// For one row: frames f_0 .. f_{T-1} (D-vectors), a query q (D-vector) and a
// span [i, j] of inclusive steps (n = j - i + 1 frames). Norms are clamped as
// in torch.nn.functional.cosine_similarity: cos(x, y) = x.y / (max(|x|, eps) *
// max(|y|, eps)), except that a zero vector's cosine with anything is 0 for
// every eps (the eps -> 0 limit of the clamped formula; torch gives 0/0 = NaN
// at eps = 0).
//   mean_of_cos(i, j) = (1/n) sum_{t=i..j} cos(f_t, q)
//   cos_of_mean(i, j) = cos(m, q) with m = (1/n) sum_{t=i..j} f_t
// mean_of_cos comes from prefix sums of the per-frame cosines (each in
// [-1, 1], so a span's error is at most about T * 2^-53 whatever the other
// frames hold); cos_of_mean sums the features of the span itself (a running
// sum from each start in the band), so no value outside the span enters it.
// Everything is accumulated in double. A span that is not 0 <= i <= j <
// length scores -inf; a span touching a frame with a NaN or infinite
// component, or any span of a row whose query has one, scores NaN (other spans
// of the row are unaffected: non-finite frames are kept out of the sums and
// counted instead).
//
// Extreme magnitudes: norms and dot products never overflow or underflow for
// finite input. A vector is used as 2^e * x^ with max |x^_k| in [1/2, 1) when
// its plain sum of squares would leave [2^-900, DBL_MAX] (the two-pass scaling
// of BLAS nrm2; the scale is a power of two, so exact), and a span sum that
// overflows double is recomputed scaled by 2^-64. The query is always scaled.
//
// Gradients: with g the upstream gradient of a cell and y its value,
//   mean_of_cos: each frame t gets G_t = sum over cells containing t of g / n;
//     d cos_t / d f_t = q / (v w) - [|f_t| > eps] cos_t f_t / |f_t|^2,
//     d cos_t / d q   = f_t / (v w) - [|q| > eps] cos_t q / |q|^2
//     (v = max(|f_t|, eps), w = max(|q|, eps)).
//   cos_of_mean: with S = n m, u = max(|m|, eps),
//     d y / d S = alpha q + beta S, alpha = 1 / (n u w),
//                 beta = -[|m| > eps] y / (n^2 u^2),
//     d y / d q = S alpha - [|q| > eps] y q / |q|^2.
// In both cases grad_q = sum_t lambda_t f_t - [|q| > eps] kappa q / |q|^2 with
// kappa = sum over cells of g y. The kernels keep q as 2^eq q^ and fold the
// scale into the coefficients (lambda_t multiplies q^, and grad_q is scaled by
// 2^-eq at the end). Only valid, finite cells send gradient; -inf and NaN
// cells (and the frames only they cover) get zero, and so does a zero vector
// at eps = 0 (where the cosine is not differentiable). The backward pass
// recomputes the span sums as the forward pass does; the per-cell terms are
// spread over their frames through difference arrays (prefix sums of the
// gradient terms, not of the inputs), so a frame's gradient is accurate to
// about T ulps of the largest term in its row.
#pragma once

#include <cmath>
#include <cstdint>

#include "fastvqa/common/macros.h"

namespace fastvqa {
namespace span_similarity {

enum class Pool { kMeanOfCos, kCosOfMean };

FASTVQA_HD bool finite(double x) { return x - x == 0.0; }  // false for NaN and +-inf

// A plain sum of squares inside [kTinySq, DBL_MAX] is safe: every product of
// the dot and the norm keeps full relative precision. Outside it, rescale.
constexpr double kTinySq = 0x1p-900;
// A span sum of finite frames that overflows is recomputed scaled by 2^-kShift.
constexpr int kShift = 64;

// Statistics of a vector x (component k from get(k, shift), scaled by
// 2^-shift) against the scaled query qh: x = 2^e x^, *dot = x^ . qh and
// *h = |x^| (*shift_out: the shift the components were read with). Returns false when a component is not finite (with shift 0 and
// allow_shift false: a NaN/inf frame). With allow_shift, non-finite
// components (an overflowing sum) are retried with shift kShift.
// get.first_pass(&d, &n2) may supply the plain first pass (x . qh, x . x).
template <typename Get>
FASTVQA_HD bool vec_stats(const Get& get, int64_t dim, const double* qh, bool allow_shift,
                          double* dot, double* h, int* e, int* shift_out) {
  double d = 0.0, n2 = 0.0;
  if (!get.first_pass(&d, &n2)) {  // the getter may have fused this pass
    for (int64_t k = 0; k < dim; ++k) {
      const double x = get(k, 0);
      d += x * qh[k];
      n2 += x * x;
    }
  }
  if (finite(n2) && n2 >= kTinySq) {
    *dot = d;
    *h = sqrt(n2);
    *e = 0;
    *shift_out = 0;
    return true;
  }
  int shift = 0;
  double m = 0.0;
  for (int64_t k = 0; k < dim; ++k) {
    const double x = get(k, 0);
    if (!finite(x)) {
      if (!allow_shift) return false;
      shift = kShift;
      break;
    }
    m = fmax(m, fabs(x));
  }
  if (shift != 0) {
    m = 0.0;
    for (int64_t k = 0; k < dim; ++k) m = fmax(m, fabs(get(k, shift)));
  }
  if (m == 0.0) {  // the zero vector
    *dot = 0.0;
    *h = 0.0;
    *e = 0;
    *shift_out = 0;
    return true;
  }
  int ex;
  frexp(m, &ex);
  d = 0.0;
  n2 = 0.0;
  for (int64_t k = 0; k < dim; ++k) {
    const double x = ldexp(get(k, shift), -ex);
    d += x * qh[k];
    n2 += x * x;
  }
  *dot = d;
  *h = sqrt(n2);
  *e = ex + shift;
  *shift_out = shift;
  return true;
}

// x * 2^e (ldexp is a call; e is 0 on the fast path).
FASTVQA_HD double pow2(double x, int e) { return e == 0 ? x : ldexp(x, e); }

// max(|x|, c) / 2^e for |x| = 2^e h: the clamped norm in x^'s units.
FASTVQA_HD double clamped(double h, int e, double c) { return fmax(h, pow2(c, -e)); }

// Whether |x| > c for |x| = 2^e h.
FASTVQA_HD bool above(double h, int e, double c) { return h > pow2(c, -e); }

// cos(x, q) from x's statistics (dot with q^, h, e; c the clamp of |x|) and
// the query's |q^| = hq and clamped norm cq = clamped(hq, eq, eps); 0 when
// either vector is zero.
FASTVQA_HD double scaled_cos(double dot, double h, int e, double c, double hq, double cq) {
  if (h == 0.0 || hq == 0.0) return 0.0;
  return dot / clamped(h, e, c) / cq;
}

// 1 / max(|x|, c) for |x| = 2^e h, in real units; 0 for the zero vector at c = 0.
FASTVQA_HD double inv_clamped(double h, int e, double c) {
  if (h == 0.0 && c == 0.0) return 0.0;
  return above(h, e, c) ? pow2(1.0 / h, -e) : 1.0 / c;
}

// Mean of the per-frame cosines of [i, j] from their prefix sums C.
FASTVQA_HD double mean_of_cos(const double* C, int64_t i, int64_t j) {
  return (C[j + 1] - C[i]) / double(j - i + 1);
}

FASTVQA_HD double query_self_coef(double kappa, double hq, bool q_above) {
  return q_above ? -kappa / (hq * hq) : 0.0;
}

// The span of cell c of row b: explicit (spans[b, c]) or banded (start
// c / width, end start + c % width). False when the cell is not a valid span.
FASTVQA_HD bool band_span(int64_t c, int64_t width, int64_t min_len, int64_t max_len,
                          int64_t length, int64_t* i, int64_t* j) {
  const int64_t d = c % width;
  *i = c / width;
  *j = *i + d;
  return d + 1 >= min_len && d + 1 <= max_len && *j < length;
}

FASTVQA_HD bool explicit_span(int64_t i, int64_t j, int64_t steps) {
  return 0 <= i && i <= j && j < steps;
}

}  // namespace span_similarity
}  // namespace fastvqa
