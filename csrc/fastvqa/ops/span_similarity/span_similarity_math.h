// SPDX-License-Identifier: Apache-2.0
// Span-to-query similarity semantics, written once for CPU and CUDA.
//
// For one row: frames f_0 .. f_{T-1} (D-vectors), a query q (D-vector) and a
// span [i, j] of inclusive steps (n = j - i + 1 frames). Norms are clamped as
// in torch.nn.functional.cosine_similarity: cos(x, y) = x.y / (max(|x|, eps) *
// max(|y|, eps)).
//   mean_of_cos(i, j) = (1/n) sum_{t=i..j} cos(f_t, q)
//   cos_of_mean(i, j) = cos(m, q) with m = (1/n) sum_{t=i..j} f_t
// Both come from prefix sums over t (of the per-frame cosines, or of the
// features), accumulated in double. A span that is not 0 <= i <= j < length
// scores -inf; a span touching a frame with a NaN or infinite component, or
// any span of a row whose query has one, scores NaN (other spans of the row
// are unaffected: non-finite frames are kept out of the prefix sums and
// counted instead).
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
// kappa = sum over cells of g y. Only valid, finite cells send gradient;
// -inf and NaN cells (and the frames only they cover) get zero.
#pragma once

#include <cmath>
#include <cstdint>

#include "fastvqa/common/macros.h"

namespace fastvqa {
namespace span_similarity {

enum class Pool { kMeanOfCos, kCosOfMean };

FASTVQA_HD double clamp_eps(double norm, double eps) { return norm > eps ? norm : eps; }

FASTVQA_HD bool finite(double x) { return x - x == 0.0; }  // false for NaN and +-inf

// Per-frame cosine from its dot with the query and the two (unclamped) norms.
FASTVQA_HD double frame_cos(double dot, double nf, double nq, double eps) {
  return dot / (clamp_eps(nf, eps) * clamp_eps(nq, eps));
}

// Mean of the per-frame cosines of [i, j] from their prefix sums C.
FASTVQA_HD double mean_of_cos(const double* C, int64_t i, int64_t j) {
  return (C[j + 1] - C[i]) / double(j - i + 1);
}

// cos(S / n, q) from a = S.q and r = |S| (S the feature sum of n frames).
FASTVQA_HD double cos_of_mean(double a, double r, int64_t n, double nq, double eps) {
  const double dn = double(n);
  return (a / dn) / (clamp_eps(r / dn, eps) * clamp_eps(nq, eps));
}

// d y / d S of cos_of_mean, scaled by the upstream gradient g: the
// coefficients of q and of S (see the header comment).
FASTVQA_HD void cos_of_mean_grad(double g, double a, double r, int64_t n, double nq, double eps,
                                 double* alpha, double* beta) {
  const double dn = double(n);
  const double u = clamp_eps(r / dn, eps), w = clamp_eps(nq, eps);
  const double y = (a / dn) / (u * w);
  *alpha = g / (dn * u * w);
  *beta = r / dn > eps ? -g * y / (dn * dn * u * u) : 0.0;
}

// The coefficient of f_t in d cos_t / d f_t, scaled by G_t (the q
// coefficient is G_t / (v w), the lambda_t of the header comment).
FASTVQA_HD double frame_self_coef(double G, double cos_t, double nf, double eps) {
  return nf > eps ? -G * cos_t / (nf * nf) : 0.0;
}

FASTVQA_HD double query_self_coef(double kappa, double nq, double eps) {
  return nq > eps ? -kappa / (nq * nq) : 0.0;
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
