// SPDX-License-Identifier: Apache-2.0
// CPU span similarity: one row per OpenMP iteration, with per-thread scratch.
// The per-cell and per-frame math is in span_similarity.h / _math.h.
#include <limits>
#include <vector>

#include "fastvqa/common/op_costs.h"
#include "fastvqa/common/parallel.h"
#include "fastvqa/ops/span_similarity/span_similarity.h"

namespace fastvqa {
namespace span_similarity {

namespace {

// Per-frame statistics and prefix sums of one row (shared by both passes).
template <typename T>
void row_prefixes(const Params<T>& p, const RowWork& w, int64_t b, int64_t len) {
  query_stats(p, w, b);
  for (int64_t t = 0; t < len; ++t) frame_stats(p, w, b, t);
  scalar_prefixes(p, w, len);
}

// Calls fn(c, i, j, get) for every OK cell of row b, in cell order, and
// sets every other cell through other(c, state). For cos_of_mean, get reads
// the span's feature sum: from a running sum per start on the band (cells
// of one start are consecutive, longer and longer), summed directly for
// explicit spans. mean_of_cos passes the direct getter, which it never calls.
template <typename T, typename Fn, typename Other>
void for_cells(const Params<T>& p, const RowWork& w, int64_t b, int64_t len, Fn&& fn,
               Other&& other) {
  const bool running = p.pool == Pool::kCosOfMean && p.spans == nullptr;
  double* R = w.run;  // the first dim entries: one running sum at a time
  int64_t start = -1, filled = -1;  // R holds the good frames of [start, filled]
  for (int64_t c = 0; c < p.cells; ++c) {
    int64_t i, j;
    const CellState st = cell_state(p, w, b, c, len, &i, &j);
    if (st != CellState::kOk) {
      other(c, st);
      continue;
    }
    if (!running) {
      fn(c, i, j, DirectSum<T>{&p, b, i, j});
      continue;
    }
    if (i != start) {
      for (int64_t k = 0; k < p.dim; ++k) R[k] = 0.0;
      start = i;
      filled = i - 1;
    }
    RunningSum<T> get{R, DirectSum<T>{&p, b, i, j}};
    for (; filled < j; ++filled) {
      const int64_t t = filled + 1;
      if (!finite(w.cos[t])) continue;  // only NaN cells of this start cover it
      const T* f = p.frames + b * p.f_s0 + t * p.f_s1;
      if (p.f_s2 == 1 && t == j) {
        // The last frame: add it and take vec_stats' first pass in one sweep.
        double d = 0.0, n2 = 0.0;
        for (int64_t k = 0; k < p.dim; ++k) {
          const double x = R[k] + double(f[k]);
          R[k] = x;
          d += x * w.qv[k];
          n2 += x * x;
        }
        get.fused = true;
        get.dot = d;
        get.n2 = n2;
      } else {
        for (int64_t k = 0; k < p.dim; ++k) R[k] += double(f[k * p.f_s2]);
      }
    }
    fn(c, i, j, get);
  }
}

template <typename T>
void forward_row(const Params<T>& p, const RowWork& w, int64_t b) {
  const int64_t len = p.length(b);
  row_prefixes(p, w, b, len);
  T* out = p.out + b * p.cells;
  const bool com = p.pool == Pool::kCosOfMean;
  for_cells(
      p, w, b, len,
      [&](int64_t c, int64_t i, int64_t j, const auto& get) {
        SumStats st;
        out[c] = T(com ? com_value(p, w, get, j - i + 1, &st) : mean_of_cos(w.cos_prefix, i, j));
      },
      [&](int64_t c, CellState st) {
        out[c] = st == CellState::kInvalid ? -std::numeric_limits<T>::infinity()
                                           : std::numeric_limits<T>::quiet_NaN();
      });
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
  if (!finite(w.hq())) return;
  const bool com = p.pool == Pool::kCosOfMean;
  for (int64_t t = 0; t <= len; ++t) w.diff[t] = 0.0;
  if (com)
    for (int64_t x = 0; x < (len + 1) * dim; ++x) w.vec_diff[x] = 0.0;
  double kappa = 0.0;
  for_cells(
      p, w, b, len,
      [&](int64_t c, int64_t i, int64_t j, const auto& get) {
        const double g = double(p.g(b, c));
        const int64_t n = j - i + 1;
        double scalar, gy, coef = 0.0;
        SumStats st;
        if (com) {
          com_backward(p, w, get, g, n, &scalar, &gy, &coef, &st);
        } else {
          scalar = g / double(n);
          gy = g * mean_of_cos(w.cos_prefix, i, j);
        }
        w.diff[i] += scalar;
        w.diff[j + 1] -= scalar;
        kappa += gy;
        if (coef != 0.0) {
          double* vi = w.vec_diff + i * dim;
          double* vj = w.vec_diff + (j + 1) * dim;
          if (st.shift == 0 && st.e == 0) {
            for (int64_t k = 0; k < dim; ++k) {
              const double v = get(k, 0) * coef;
              vi[k] += v;
              vj[k] -= v;
            }
          } else {
            for (int64_t k = 0; k < dim; ++k) {
              const double v = scaled_part(get(k, st.shift), st.shift, st.e) * coef;
              vi[k] += v;
              vj[k] -= v;
            }
          }
        }
      },
      [](int64_t, CellState) {});
  std::vector<double> gq_acc(dim, 0.0);
  double D = 0.0;
  for (int64_t t = 0; t < len; ++t) {
    D += w.diff[t];
    double* V = com ? w.vec_diff + t * dim : nullptr;
    if (com && t > 0)  // running prefix of the vector difference array, in place
      for (int64_t k = 0; k < dim; ++k) V[k] += V[k - dim];
    if (!finite(w.cos[t])) continue;  // only NaN cells cover it
    double lambda, mu;
    frame_coefs(p, w, t, D, &lambda, &mu);
    const double sinv = w.self_inv[t];
    T* g_row = gf + t * dim;
    for (int64_t k = 0; k < dim; ++k) {
      const double f = double(p.frame(b, t, k));
      g_row[k] = T(lambda * w.qv[k] + (com ? V[k] : (mu * f) * sinv));
      gq_acc[k] += lambda * f;
    }
  }
  for (int64_t k = 0; k < dim; ++k) gq[k] = T(query_grad(w, gq_acc[k], kappa, k));
}

template <typename T, typename RowFn>
void for_rows(const Params<T>& p, bool backward, RowFn&& fn) {
  const int64_t size = RowWork::size(p.steps, p.dim, p.cells, p.pool, backward);
  const int64_t batch = p.batch;
  const LoopCost cost =
      op_costs::loop_cost(op_costs::kSpanSimilarity, batch, p.cells * (p.dim + 1));
  parallel_rows(cost, [&](Chunks& chunks) {
    std::vector<double> scratch(size);
    const RowWork w = RowWork::at(scratch.data(), p.steps, p.dim, p.pool, backward);
    int64_t lo, hi;
    while (chunks.next(&lo, &hi)) {
      for (int64_t b = lo; b < hi; ++b) fn(p, w, b);
    }
  });
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
