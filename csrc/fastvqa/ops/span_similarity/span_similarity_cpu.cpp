// SPDX-License-Identifier: Apache-2.0
// CPU span similarity: one row per OpenMP iteration, with per-thread scratch.
// The per-cell and per-frame math is in span_similarity.h / _math.h.
#include <limits>
#include <vector>

#include "fastvqa/ops/span_similarity/span_similarity.h"

namespace fastvqa {
namespace span_similarity {

namespace {

// Per-frame statistics and prefix sums of one row (shared by both passes).
template <typename T>
void row_prefixes(const Params<T>& p, const RowWork& w, int64_t b, int64_t len) {
  double nq2 = 0.0;
  for (int64_t k = 0; k < p.dim; ++k) {
    w.qv[k] = double(p.q(b, k));
    nq2 += w.qv[k] * w.qv[k];
  }
  w.scalars[0] = sqrt(nq2);
  for (int64_t t = 0; t < len; ++t) frame_stats(p, w, b, t);
  scalar_prefixes(p, w, len);
  if (p.pool != Pool::kCosOfMean) return;
  // Row by row rather than column by column: unit stride in the features.
  double* P = w.feat_prefix;
  for (int64_t k = 0; k < p.dim; ++k) P[k] = 0.0;
  for (int64_t t = 0; t < len; ++t) {
    const bool ok = finite(w.norm[t]);
    double* cur = P + (t + 1) * p.dim;
    const double* prev = P + t * p.dim;
    for (int64_t k = 0; k < p.dim; ++k) cur[k] = prev[k] + (ok ? double(p.frame(b, t, k)) : 0.0);
  }
}

template <typename T>
void forward_row(const Params<T>& p, const RowWork& w, int64_t b) {
  const int64_t len = p.length(b);
  row_prefixes(p, w, b, len);
  T* out = p.out + b * p.cells;
  for (int64_t c = 0; c < p.cells; ++c) {
    int64_t i, j;
    switch (cell_state(p, w, b, c, len, &i, &j)) {
      case CellState::kInvalid: out[c] = -std::numeric_limits<T>::infinity(); break;
      case CellState::kNaN: out[c] = std::numeric_limits<T>::quiet_NaN(); break;
      case CellState::kOk: out[c] = T(cell_value(p, w, i, j)); break;
    }
  }
}

template <typename T>
void backward_row(const Params<T>& p, const RowWork& w, int64_t b) {
  const int64_t len = p.length(b), dim = p.dim;
  T* gf = p.grad_frames + b * p.steps * dim;
  T* gq = p.grad_query + b * dim;
  for (int64_t x = 0; x < p.steps * dim; ++x) gf[x] = T(0);
  for (int64_t k = 0; k < dim; ++k) gq[k] = T(0);
  row_prefixes(p, w, b, len);
  // A non-finite query makes every cell NaN: nothing sends gradient.
  if (!finite(w.scalars[0])) return;
  const bool com = p.pool == Pool::kCosOfMean;
  for (int64_t t = 0; t <= len; ++t) w.diff[t] = 0.0;
  if (com)
    for (int64_t x = 0; x < (len + 1) * dim; ++x) w.vec_diff[x] = 0.0;
  double kappa = 0.0;
  for (int64_t c = 0; c < p.cells; ++c) {
    int64_t i, j;
    if (cell_state(p, w, b, c, len, &i, &j) != CellState::kOk) continue;
    double scalar, gy, beta;
    cell_backward(p, w, double(p.g(b, c)), i, j, &scalar, &gy, &beta);
    w.diff[i] += scalar;
    w.diff[j + 1] -= scalar;
    kappa += gy;
    if (com && beta != 0.0) {
      const double* lo = w.feat_prefix + i * dim;
      const double* hi = w.feat_prefix + (j + 1) * dim;
      double* vi = w.vec_diff + i * dim;
      double* vj = w.vec_diff + (j + 1) * dim;
      for (int64_t k = 0; k < dim; ++k) {
        const double v = beta * (hi[k] - lo[k]);
        vi[k] += v;
        vj[k] -= v;
      }
    }
  }
  std::vector<double> gq_acc(dim, 0.0);
  double D = 0.0;
  for (int64_t t = 0; t < len; ++t) {
    D += w.diff[t];
    double* V = com ? w.vec_diff + t * dim : nullptr;
    if (com && t > 0)  // running prefix of the vector difference array, in place
      for (int64_t k = 0; k < dim; ++k) V[k] += V[k - dim];
    if (!finite(w.norm[t])) continue;  // only NaN cells cover it
    double lambda, mu;
    frame_coefs(p, w, t, D, &lambda, &mu);
    T* g_row = gf + t * dim;
    for (int64_t k = 0; k < dim; ++k) {
      const double f = double(p.frame(b, t, k));
      g_row[k] = T(lambda * w.qv[k] + (com ? V[k] : mu * f));
      gq_acc[k] += lambda * f;
    }
  }
  const double self = query_self_coef(kappa, w.scalars[0], p.eps);
  for (int64_t k = 0; k < dim; ++k) gq[k] = T(gq_acc[k] + self * w.qv[k]);
}

template <typename T, typename RowFn>
void for_rows(const Params<T>& p, bool backward, RowFn&& fn) {
  const int64_t size = RowWork::size(p.steps, p.dim, p.cells, p.pool, backward);
  const int64_t batch = p.batch;
#pragma omp parallel if (batch > 1 && batch * p.cells * (p.dim + 1) >= 65536)
  {
    std::vector<double> scratch(size);
    const RowWork w = RowWork::at(scratch.data(), p.steps, p.dim, p.pool, backward);
#pragma omp for schedule(dynamic, 1)
    for (int64_t b = 0; b < batch; ++b) fn(p, w, b);
  }
}

}  // namespace

template <typename T>
void forward_cpu(const Params<T>& p) {
  for_rows(p, false, forward_row<T>);
}

template <typename T>
void backward_cpu(const Params<T>& p) {
  for_rows(p, true, backward_row<T>);
}

template void forward_cpu<float>(const Params<float>&);
template void forward_cpu<double>(const Params<double>&);
template void backward_cpu<float>(const Params<float>&);
template void backward_cpu<double>(const Params<double>&);

}  // namespace span_similarity
}  // namespace fastvqa
