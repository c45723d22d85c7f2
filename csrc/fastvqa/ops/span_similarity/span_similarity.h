// SPDX-License-Identifier: Apache-2.0
// Span-to-query similarity: entry points and the params the kernels see.
#pragma once

#include <cstdint>

#include "fastvqa/ops/span_similarity/span_similarity_math.h"

namespace fastvqa {
namespace span_similarity {

template <typename T>
struct Params {
  const T* frames;          ///< batch x steps x dim, strides f_s0, f_s1, f_s2 (elements)
  int64_t f_s0, f_s1, f_s2;
  const T* query;           ///< batch x dim, strides q_s0, q_s1
  int64_t q_s0, q_s1;
  const int64_t* spans;     ///< batch x cells x 2 inclusive (i, j), or null for the band
  int64_t sp_s0, sp_s1, sp_s2;
  const int64_t* lengths;   ///< band only: batch valid lengths (stride len_s0), or null
  int64_t len_s0;
  int64_t batch, steps, dim;
  int64_t cells;            ///< per row: S explicit spans, or steps * width band cells
  int64_t width, min_len, max_len;  ///< band layout: span [i, i + d] at cell i * width + d
  Pool pool;
  double eps;
  T* out;                   ///< forward: batch x cells, contiguous
  const T* grad;            ///< backward: upstream gradient, strides g_s0, g_s1, g_s2
  int64_t g_s0, g_s1, g_s2;   ///< (g_s2 only for the band: g[b, i, d])
  T* grad_frames;           ///< backward: batch x steps x dim, contiguous
  T* grad_query;            ///< backward: batch x dim, contiguous
  double* work;             ///< CUDA: batch x row_work(...) doubles of scratch

  FASTVQA_HD int64_t length(int64_t b) const {
    return spans == nullptr && lengths != nullptr ? lengths[b * len_s0] : steps;
  }
  FASTVQA_HD T frame(int64_t b, int64_t t, int64_t k) const {
    return frames[b * f_s0 + t * f_s1 + k * f_s2];
  }
  FASTVQA_HD T q(int64_t b, int64_t k) const { return query[b * q_s0 + k * q_s1]; }
  // The span of cell c of row b; false when it is not a valid span.
  FASTVQA_HD bool span(int64_t b, int64_t c, int64_t len, int64_t* i, int64_t* j) const {
    if (spans == nullptr) return band_span(c, width, min_len, max_len, len, i, j);
    *i = spans[b * sp_s0 + c * sp_s1];
    *j = spans[b * sp_s0 + c * sp_s1 + sp_s2];
    return explicit_span(*i, *j, steps);
  }
  FASTVQA_HD T g(int64_t b, int64_t c) const {
    if (spans != nullptr) return grad[b * g_s0 + c * g_s1];
    return grad[b * g_s0 + (c / width) * g_s1 + (c % width) * g_s2];
  }
};

/// Scratch of one row, in doubles. Prefix arrays have steps + 1 entries.
struct RowWork {
  double* cos_prefix;  ///< C: prefix sums of the per-frame cosines (non-finite frames: 0)
  double* bad_prefix;  ///< prefix counts of non-finite frames
  double* dot;         ///< f_t . q
  double* norm;        ///< |f_t|
  double* feat_prefix; ///< cos_of_mean: (steps + 1) x dim prefix sums of the features
  double* diff;        ///< backward: steps + 1 difference array of the per-frame scalar
  double* vec_diff;    ///< backward, cos_of_mean: (steps + 1) x dim difference array
  double* cell_coef;   ///< backward, cos_of_mean: beta of every cell (CUDA)
  double* scalars;     ///< [0] = |q|, [1] = kappa (backward)
  double* qv;          ///< the query, dim entries

  static FASTVQA_HD int64_t size(int64_t steps, int64_t dim, int64_t cells, Pool pool,
                                 bool backward) {
    const int64_t tp = steps + 1;
    const bool com = pool == Pool::kCosOfMean;
    int64_t n = 4 * tp + 2 + dim + (com ? tp * dim : 0);
    if (backward) n += tp + (com ? tp * dim + cells : 0);
    return n;
  }
  static FASTVQA_HD RowWork at(double* base, int64_t steps, int64_t dim, Pool pool,
                               bool backward) {
    const int64_t tp = steps + 1;
    const bool com = pool == Pool::kCosOfMean;
    RowWork w;
    double* p = base;
    w.cos_prefix = p; p += tp;
    w.bad_prefix = p; p += tp;
    w.dot = p; p += tp;
    w.norm = p; p += tp;
    w.scalars = p; p += 2;
    w.qv = p; p += dim;
    w.feat_prefix = com ? p : nullptr; p += com ? tp * dim : 0;
    w.diff = backward ? p : nullptr; p += backward ? tp : 0;
    w.vec_diff = backward && com ? p : nullptr; p += backward && com ? tp * dim : 0;
    w.cell_coef = backward && com ? p : nullptr;
    return w;
  }
};


enum class CellState { kInvalid, kNaN, kOk };

// Whether cell c of row b is a valid span over finite frames (and its span).
template <typename T>
FASTVQA_HD CellState cell_state(const Params<T>& p, const RowWork& w, int64_t b, int64_t c,
                                int64_t len, int64_t* i, int64_t* j) {
  if (!p.span(b, c, len, i, j)) return CellState::kInvalid;
  if (!finite(w.scalars[0]) || w.bad_prefix[*j + 1] != w.bad_prefix[*i]) return CellState::kNaN;
  return CellState::kOk;
}

// a = S.q and r = |S| for the feature sum S of frames [i, j].
FASTVQA_HD void span_sums(const RowWork& w, int64_t dim, int64_t i, int64_t j, double* a,
                          double* r) {
  const double* lo = w.feat_prefix + i * dim;
  const double* hi = w.feat_prefix + (j + 1) * dim;
  double dot = 0.0, n2 = 0.0;
  for (int64_t k = 0; k < dim; ++k) {
    const double s = hi[k] - lo[k];
    dot += s * w.qv[k];
    n2 += s * s;
  }
  *a = dot;
  *r = sqrt(n2);
}

// The value of an OK cell [i, j].
template <typename T>
FASTVQA_HD double cell_value(const Params<T>& p, const RowWork& w, int64_t i, int64_t j) {
  if (p.pool == Pool::kMeanOfCos) return mean_of_cos(w.cos_prefix, i, j);
  double a, r;
  span_sums(w, p.dim, i, j, &a, &r);
  return cos_of_mean(a, r, j - i + 1, w.scalars[0], p.eps);
}

// Frame t's statistics (dot with the query, norm); the query must be in w.qv.
template <typename T>
FASTVQA_HD void frame_stats(const Params<T>& p, const RowWork& w, int64_t b, int64_t t) {
  double dot = 0.0, n2 = 0.0;
  for (int64_t k = 0; k < p.dim; ++k) {
    const double f = double(p.frame(b, t, k));
    dot += f * w.qv[k];
    n2 += f * f;
  }
  w.dot[t] = dot;
  w.norm[t] = sqrt(n2);
}

// Sequential prefix sums of the per-frame cosines and non-finite counts.
template <typename T>
FASTVQA_HD void scalar_prefixes(const Params<T>& p, const RowWork& w, int64_t len) {
  w.cos_prefix[0] = 0.0;
  w.bad_prefix[0] = 0.0;
  for (int64_t t = 0; t < len; ++t) {
    const bool bad = !finite(w.norm[t]);
    w.cos_prefix[t + 1] =
        w.cos_prefix[t] + (bad ? 0.0 : frame_cos(w.dot[t], w.norm[t], w.scalars[0], p.eps));
    w.bad_prefix[t + 1] = w.bad_prefix[t] + (bad ? 1.0 : 0.0);
  }
}

// Prefix sums of feature column k over the first len frames (non-finite frames add 0).
template <typename T>
FASTVQA_HD void feature_prefix_column(const Params<T>& p, const RowWork& w, int64_t b,
                                      int64_t len, int64_t k) {
  double run = 0.0;
  w.feat_prefix[k] = 0.0;
  for (int64_t t = 0; t < len; ++t) {
    if (finite(w.norm[t])) run += double(p.frame(b, t, k));
    w.feat_prefix[(t + 1) * p.dim + k] = run;
  }
}

// Backward, one OK cell with upstream gradient g: the scalar it adds to the
// per-frame difference array at i (and subtracts at j + 1), its g * y for
// kappa, and (cos_of_mean) the beta coefficient of its feature sum.
template <typename T>
FASTVQA_HD void cell_backward(const Params<T>& p, const RowWork& w, double g, int64_t i,
                              int64_t j, double* scalar, double* gy, double* beta) {
  const int64_t n = j - i + 1;
  if (p.pool == Pool::kMeanOfCos) {
    *scalar = g / double(n);
    *gy = g * mean_of_cos(w.cos_prefix, i, j);
    *beta = 0.0;
    return;
  }
  double a, r;
  span_sums(w, p.dim, i, j, &a, &r);
  cos_of_mean_grad(g, a, r, n, w.scalars[0], p.eps, scalar, beta);
  *gy = g * cos_of_mean(a, r, n, w.scalars[0], p.eps);
}

// lambda_t (the coefficient of q in frame t's gradient and of f_t in the
// query's) and mu_t (mean_of_cos: the coefficient of f_t in its own
// gradient), from the prefix-summed difference array value D_t.
template <typename T>
FASTVQA_HD void frame_coefs(const Params<T>& p, const RowWork& w, int64_t t, double D,
                            double* lambda, double* mu) {
  if (p.pool == Pool::kCosOfMean) {
    *lambda = D;
    *mu = 0.0;
    return;
  }
  const double nq = w.scalars[0], nf = w.norm[t];
  *lambda = D / (clamp_eps(nf, p.eps) * clamp_eps(nq, p.eps));
  *mu = frame_self_coef(D, frame_cos(w.dot[t], nf, nq, p.eps), nf, p.eps);
}

template <typename T>
void forward_cpu(const Params<T>& p);
template <typename T>
void backward_cpu(const Params<T>& p);
template <typename T>
void forward_cuda(const Params<T>& p, std::uintptr_t stream);
template <typename T>
void backward_cuda(const Params<T>& p, std::uintptr_t stream);

}  // namespace span_similarity
}  // namespace fastvqa
