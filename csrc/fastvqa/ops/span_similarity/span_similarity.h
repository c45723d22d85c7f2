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
  double* cos;         ///< cos(f_t, q); NaN for a frame with a non-finite component
  double* inv;         ///< 1 / max(|f_t|, eps) (0 for a zero frame at eps = 0)
  double* self_inv;    ///< inv where |f_t| > eps, else 0
  double* run;         ///< cos_of_mean: running span sums, dim (CPU) or (steps + 1) x dim (CUDA)
  double* feat_prefix; ///< unused (kept null)
  double* diff;        ///< backward: steps + 1 difference array of the per-frame scalar
  double* vec_diff;    ///< backward, cos_of_mean: (steps + 1) x dim difference array
  double* cell_coef;   ///< backward, cos_of_mean (CUDA): 3 per cell (coef, e, shift)
  double* scalars;     ///< see the kQ* indices
  double* qv;          ///< the scaled query q^ = q / 2^eq, dim entries

  // scalars[...]: |q^| (NaN for a non-finite query), kappa (backward), eq,
  // 1 / max(|q^|, eps / 2^eq) (0 for a zero query at eps = 0), [|q| > eps],
  // max(|q^|, eps / 2^eq).
  enum { kQh = 0, kKappa = 1, kQe = 2, kQrho = 3, kQabove = 4, kQc = 5, kScalars = 6 };

  static FASTVQA_HD int64_t size(int64_t steps, int64_t dim, int64_t cells, Pool pool,
                                 bool backward) {
    const int64_t tp = steps + 1;
    const bool com = pool == Pool::kCosOfMean;
    int64_t n = 5 * tp + kScalars + dim + (com ? tp * dim : 0);
    if (backward) n += tp + (com ? tp * dim + 3 * cells : 0);
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
    w.cos = p; p += tp;
    w.inv = p; p += tp;
    w.self_inv = p; p += tp;
    w.scalars = p; p += kScalars;
    w.qv = p; p += dim;
    w.run = com ? p : nullptr; p += com ? tp * dim : 0;
    w.feat_prefix = nullptr;
    w.diff = backward ? p : nullptr; p += backward ? tp : 0;
    w.vec_diff = backward && com ? p : nullptr; p += backward && com ? tp * dim : 0;
    w.cell_coef = backward && com ? p : nullptr;
    return w;
  }
  FASTVQA_HD double hq() const { return scalars[kQh]; }
  FASTVQA_HD int eq() const { return int(scalars[kQe]); }
  FASTVQA_HD double rho_q() const { return scalars[kQrho]; }
  FASTVQA_HD bool q_above() const { return scalars[kQabove] != 0.0; }
  FASTVQA_HD double cq() const { return scalars[kQc]; }
};


enum class CellState { kInvalid, kNaN, kOk };

// Whether cell c of row b is a valid span over finite frames (and its span).
template <typename T>
FASTVQA_HD CellState cell_state(const Params<T>& p, const RowWork& w, int64_t b, int64_t c,
                                int64_t len, int64_t* i, int64_t* j) {
  if (!p.span(b, c, len, i, j)) return CellState::kInvalid;
  if (!finite(w.hq()) || w.bad_prefix[*j + 1] != w.bad_prefix[*i]) return CellState::kNaN;
  return CellState::kOk;
}

// Component k of frame t (vec_stats getter; frames are never shifted).
template <typename T>
struct FrameGet {
  const Params<T>* p;
  int64_t b, t;
  FASTVQA_HD double operator()(int64_t k, int) const { return double(p->frame(b, t, k)); }
  FASTVQA_HD bool first_pass(double*, double*) const { return false; }
};

// Component k of the feature sum of frames [i, j], scaled by 2^-shift,
// summed directly (no prefix sums).
template <typename T>
struct DirectSum {
  const Params<T>* p;
  int64_t b, i, j;
  FASTVQA_HD double operator()(int64_t k, int shift) const {
    double s = 0.0;
    if (shift == 0)
      for (int64_t t = i; t <= j; ++t) s += double(p->frame(b, t, k));
    else
      for (int64_t t = i; t <= j; ++t) s += ldexp(double(p->frame(b, t, k)), -shift);
    return s;
  }
  FASTVQA_HD bool first_pass(double*, double*) const { return false; }
};

// The same sum read from a running vector run[k] (built frame by frame from
// i), recomputed directly only when scaled.
template <typename T>
struct RunningSum {
  const double* run;
  DirectSum<T> direct;
  bool fused = false;  ///< dot and n2 already hold run . q^ and run . run
  double dot = 0.0, n2 = 0.0;
  FASTVQA_HD double operator()(int64_t k, int shift) const {
    return shift == 0 ? run[k] : direct(k, shift);
  }
  FASTVQA_HD bool first_pass(double* d, double* s) const {
    if (!fused) return false;
    *d = dot;
    *s = n2;
    return true;
  }
};

// The query's scaled form and statistics (serial; the CUDA caller runs it on
// one thread). q^ = q / 2^eq with max |q^_k| in [1/2, 1).
template <typename T>
FASTVQA_HD void query_stats(const Params<T>& p, const RowWork& w, int64_t b) {
  double m = 0.0;
  bool ok = true;
  for (int64_t k = 0; k < p.dim; ++k) {
    w.qv[k] = double(p.q(b, k));
    ok = ok && finite(w.qv[k]);
    m = fmax(m, fabs(w.qv[k]));
  }
  int eq = 0;
  if (ok && m > 0.0) frexp(m, &eq);
  double n2 = 0.0;
  for (int64_t k = 0; k < p.dim; ++k) {
    w.qv[k] = ldexp(w.qv[k], -eq);
    n2 += w.qv[k] * w.qv[k];
  }
  const double hq = sqrt(n2);
  w.scalars[RowWork::kQh] = ok ? hq : double(NAN);
  w.scalars[RowWork::kQe] = double(eq);
  w.scalars[RowWork::kQc] = clamped(hq, eq, p.eps);
  w.scalars[RowWork::kQrho] = hq == 0.0 && p.eps == 0.0 ? 0.0 : 1.0 / clamped(hq, eq, p.eps);
  w.scalars[RowWork::kQabove] = above(hq, eq, p.eps) ? 1.0 : 0.0;
}

// Frame t's cosine and inverse clamped norms; the query must be done.
template <typename T>
FASTVQA_HD void frame_stats(const Params<T>& p, const RowWork& w, int64_t b, int64_t t) {
  double dot, h;
  int e, shift;
  if (!vec_stats(FrameGet<T>{&p, b, t}, p.dim, w.qv, false, &dot, &h, &e, &shift)) {
    w.cos[t] = double(NAN);
    w.inv[t] = 0.0;
    w.self_inv[t] = 0.0;
    return;
  }
  w.cos[t] = scaled_cos(dot, h, e, p.eps, w.hq(), w.cq());
  w.inv[t] = inv_clamped(h, e, p.eps);
  w.self_inv[t] = above(h, e, p.eps) ? w.inv[t] : 0.0;
}

// Sequential prefix sums of the per-frame cosines and non-finite counts.
template <typename T>
FASTVQA_HD void scalar_prefixes(const Params<T>&, const RowWork& w, int64_t len) {
  w.cos_prefix[0] = 0.0;
  w.bad_prefix[0] = 0.0;
  for (int64_t t = 0; t < len; ++t) {
    const bool bad = !finite(w.cos[t]);
    w.cos_prefix[t + 1] = w.cos_prefix[t] + (bad ? 0.0 : w.cos[t]);
    w.bad_prefix[t + 1] = w.bad_prefix[t] + (bad ? 1.0 : 0.0);
  }
}

// The statistics of a cos_of_mean cell's feature sum.
struct SumStats {
  double dot, h;
  int e, shift;
};

// cos_of_mean of an OK cell of n frames whose sum get reads.
template <typename T, typename Get>
FASTVQA_HD double com_value(const Params<T>& p, const RowWork& w, const Get& get, int64_t n,
                            SumStats* st) {
  vec_stats(get, p.dim, w.qv, true, &st->dot, &st->h, &st->e, &st->shift);
  return scaled_cos(st->dot, st->h, st->e, double(n) * p.eps, w.hq(), w.cq());
}

// The value of an OK cell [i, j]; cos_of_mean sums the span directly.
template <typename T>
FASTVQA_HD double cell_value(const Params<T>& p, const RowWork& w, int64_t b, int64_t i,
                             int64_t j) {
  if (p.pool == Pool::kMeanOfCos) return mean_of_cos(w.cos_prefix, i, j);
  SumStats st;
  return com_value(p, w, DirectSum<T>{&p, b, i, j}, j - i + 1, &st);
}

// Backward of one OK cos_of_mean cell of n frames (sum read by get) with
// upstream gradient g: *alpha multiplies q^ in the gradient of each of its
// frames, *gy = g * y, and its frames' vector term is
// scaled_part(get(k, shift), shift, e) * *coef (see vec_term).
template <typename T, typename Get>
FASTVQA_HD void com_backward(const Params<T>& p, const RowWork& w, const Get& get, double g,
                             int64_t n, double* alpha, double* gy, double* coef, SumStats* st) {
  const double c = double(n) * p.eps;
  const double y = com_value(p, w, get, n, st);
  *alpha = g * inv_clamped(st->h, st->e, c) * w.rho_q();
  *gy = g * y;
  *coef = above(st->h, st->e, c) ? pow2(-g * y / (st->h * st->h), -st->e) : 0.0;
}

// x (a sum component scaled by 2^-shift) in units of 2^e.
FASTVQA_HD double scaled_part(double x, int shift, int e) {
  return pow2(x, shift - e);
}

// lambda_t (the coefficient of q^ in frame t's gradient and of f_t in the
// query's, before the final 2^-eq) and mu_t (mean_of_cos: frame t's own
// term is (mu_t f_t) * self_inv_t), from the prefix-summed difference value D.
template <typename T>
FASTVQA_HD void frame_coefs(const Params<T>& p, const RowWork& w, int64_t t, double D,
                            double* lambda, double* mu) {
  if (p.pool == Pool::kCosOfMean) {
    *lambda = D;
    *mu = 0.0;
    return;
  }
  *lambda = D * w.inv[t] * w.rho_q();
  *mu = -D * w.cos[t] * w.self_inv[t];
}

// The query gradient component from sum_t lambda_t f_tk and kappa.
FASTVQA_HD double query_grad(const RowWork& w, double acc, double kappa, int64_t k) {
  return pow2(acc + query_self_coef(kappa, w.hq(), w.q_above()) * w.qv[k], -w.eq());
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
