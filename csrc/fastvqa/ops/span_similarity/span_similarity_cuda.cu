// SPDX-License-Identifier: Apache-2.0
// CUDA span similarity: one block per row, in phases separated by
// __syncthreads (query, per-frame statistics, prefix sums, cells). Scratch
// is a caller-allocated double buffer, one RowWork per row. The backward pass
// adds the per-frame scalar difference array through double atomics (sm_60+)
// and the vector one with one thread per feature column, which owns that
// column and so needs no atomics.
#include <limits>

#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/cuda_utils.cuh"
#include "fastvqa/ops/span_similarity/span_similarity.h"

namespace fastvqa {
namespace span_similarity {

namespace {

constexpr int kThreads = 256;

// Phases shared by forward and backward: leaves w ready for the cells.
template <typename T>
__device__ void row_prefixes(const Params<T>& p, const RowWork& w, int64_t b, int64_t len) {
  const int t0 = threadIdx.x;
  if (t0 == 0) query_stats(p, w, b);
  __syncthreads();
  for (int64_t t = t0; t < len; t += blockDim.x) frame_stats(p, w, b, t);
  __syncthreads();
  if (t0 == 0) scalar_prefixes(p, w, len);
  __syncthreads();
}

// Adds the good frames of (*filled, j] to the running sum R (dim entries, or
// one column when dim is 1 and R points at it).
template <typename T>
__device__ void extend_run(const Params<T>& p, const RowWork& w, int64_t b, int64_t j,
                           int64_t* filled, double* R, int64_t k0, int64_t nk) {
  for (; *filled < j; ++*filled) {
    const int64_t t = *filled + 1;
    if (!finite(w.cos[t])) continue;  // only NaN cells of this start cover it
    for (int64_t k = 0; k < nk; ++k) R[k] += double(p.frame(b, t, k0 + k));
  }
}

template <typename T>
__device__ T other_value(CellState s) {
  return s == CellState::kInvalid ? -std::numeric_limits<T>::infinity()
                                  : std::numeric_limits<T>::quiet_NaN();
}

template <typename T>
__global__ void forward_kernel(Params<T> p, int64_t row_size) {
  const bool band_com = p.pool == Pool::kCosOfMean && p.spans == nullptr;
  for (int64_t b = blockIdx.x; b < p.batch; b += gridDim.x) {
    const RowWork w =
        RowWork::at(p.work + b * row_size, p.steps, p.dim, p.pool, false);
    const int64_t len = p.length(b);
    row_prefixes(p, w, b, len);
    T* out = p.out + b * p.cells;
    if (band_com) {
      // One thread per start: a running sum over ever longer spans.
      for (int64_t i = threadIdx.x; i < p.steps; i += blockDim.x) {
        double* R = w.run + i * p.dim;
        for (int64_t k = 0; k < p.dim; ++k) R[k] = 0.0;
        int64_t filled = i - 1;
        for (int64_t d = 0; d < p.width; ++d) {
          const int64_t c = i * p.width + d;
          int64_t si, sj;
          const CellState s = cell_state(p, w, b, c, len, &si, &sj);
          if (s != CellState::kOk) {
            out[c] = other_value<T>(s);
            continue;
          }
          extend_run(p, w, b, sj, &filled, R, 0, p.dim);
          SumStats st;
          out[c] = T(com_value(p, w, RunningSum<T>{R, DirectSum<T>{&p, b, si, sj}}, sj - si + 1,
                               &st));
        }
      }
    } else {
      for (int64_t c = threadIdx.x; c < p.cells; c += blockDim.x) {
        int64_t i, j;
        const CellState s = cell_state(p, w, b, c, len, &i, &j);
        out[c] = s == CellState::kOk ? T(cell_value(p, w, b, i, j)) : other_value<T>(s);
      }
    }
    __syncthreads();
  }
}

// Backward of one OK cell: the per-frame scalar into the difference array,
// g * y into kappa, and (cos_of_mean) the cell's vector coefficients.
template <typename T, typename Get>
__device__ void cell_backward(const Params<T>& p, const RowWork& w, int64_t b, int64_t c,
                              int64_t i, int64_t j, const Get& get) {
  const double g = double(p.g(b, c));
  const int64_t n = j - i + 1;
  double scalar, gy;
  if (p.pool == Pool::kCosOfMean) {
    double coef;
    SumStats st;
    com_backward(p, w, get, g, n, &scalar, &gy, &coef, &st);
    w.cell_coef[3 * c] = coef;
    w.cell_coef[3 * c + 1] = double(st.e);
    w.cell_coef[3 * c + 2] = double(st.shift);
  } else {
    scalar = g / double(n);
    gy = g * mean_of_cos(w.cos_prefix, i, j);
  }
  atomicAdd(w.diff + i, scalar);
  atomicAdd(w.diff + j + 1, -scalar);
  atomicAdd(w.scalars + RowWork::kKappa, gy);
}

template <typename T>
__global__ void backward_kernel(Params<T> p, int64_t row_size) {
  const bool com = p.pool == Pool::kCosOfMean;
  const bool band_com = com && p.spans == nullptr;
  const int t0 = threadIdx.x;
  for (int64_t b = blockIdx.x; b < p.batch; b += gridDim.x) {
    const RowWork w = RowWork::at(p.work + b * row_size, p.steps, p.dim, p.pool, true);
    const int64_t len = p.length(b), dim = p.dim;
    T* gf = p.grad_frames + b * p.steps * dim;
    T* gq = p.grad_query + b * dim;
    for (int64_t x = t0; x < p.steps * dim; x += blockDim.x) gf[x] = T(0);
    for (int64_t k = t0; k < dim; k += blockDim.x) gq[k] = T(0);
    row_prefixes(p, w, b, len);
    // A non-finite query makes every cell NaN: nothing sends gradient.
    if (!finite(w.hq())) continue;  // uniform across the block
    for (int64_t t = t0; t <= len; t += blockDim.x) w.diff[t] = 0.0;
    if (com) {
      for (int64_t x = t0; x < (len + 1) * dim; x += blockDim.x) w.vec_diff[x] = 0.0;
      for (int64_t x = t0; x < 3 * p.cells; x += blockDim.x) w.cell_coef[x] = 0.0;
    }
    if (t0 == 0) w.scalars[RowWork::kKappa] = 0.0;
    __syncthreads();
    if (band_com) {
      for (int64_t i = t0; i < p.steps; i += blockDim.x) {
        double* R = w.run + i * dim;
        for (int64_t k = 0; k < dim; ++k) R[k] = 0.0;
        int64_t filled = i - 1;
        for (int64_t d = 0; d < p.width; ++d) {
          const int64_t c = i * p.width + d;
          int64_t si, sj;
          if (cell_state(p, w, b, c, len, &si, &sj) != CellState::kOk) continue;
          extend_run(p, w, b, sj, &filled, R, 0, dim);
          cell_backward(p, w, b, c, si, sj, RunningSum<T>{R, DirectSum<T>{&p, b, si, sj}});
        }
      }
    } else {
      for (int64_t c = t0; c < p.cells; c += blockDim.x) {
        int64_t i, j;
        if (cell_state(p, w, b, c, len, &i, &j) == CellState::kOk)
          cell_backward(p, w, b, c, i, j, DirectSum<T>{&p, b, i, j});
      }
    }
    __syncthreads();
    if (com) {
      // Thread k owns column k of the vector difference array; on the band
      // it keeps a running column sum per start, as the cell phase did.
      for (int64_t k = t0; k < dim; k += blockDim.x) {
        int64_t start = -1, filled = -1;
        double r = 0.0;
        for (int64_t c = 0; c < p.cells; ++c) {
          const double coef = w.cell_coef[3 * c];
          if (coef == 0.0) continue;
          const int e = int(w.cell_coef[3 * c + 1]), shift = int(w.cell_coef[3 * c + 2]);
          int64_t i, j;
          // Read again from the caller's spans, which may have changed since: checked again.
          if (!p.span(b, c, len, &i, &j)) continue;
          double x;
          if (band_com && shift == 0) {
            if (i != start) {
              start = i;
              filled = i - 1;
              r = 0.0;
            }
            extend_run(p, w, b, j, &filled, &r, k, 1);
            x = r;
          } else {
            x = DirectSum<T>{&p, b, i, j}(k, shift);
          }
          const double v = scaled_part(x, shift, e) * coef;
          w.vec_diff[i * dim + k] += v;
          w.vec_diff[(j + 1) * dim + k] -= v;
        }
        for (int64_t t = 1; t < len; ++t) w.vec_diff[t * dim + k] += w.vec_diff[(t - 1) * dim + k];
      }
    }
    if (t0 == 0)
      for (int64_t t = 1; t < len; ++t) w.diff[t] += w.diff[t - 1];
    __syncthreads();
    for (int64_t x = t0; x < len * dim; x += blockDim.x) {
      const int64_t t = x / dim, k = x - t * dim;
      if (!finite(w.cos[t])) continue;
      double lambda, mu;
      frame_coefs(p, w, t, w.diff[t], &lambda, &mu);
      const double f = double(p.frame(b, t, k));
      gf[x] = T(lambda * w.qv[k] + (com ? w.vec_diff[x] : (mu * f) * w.self_inv[t]));
    }
    const double kappa = w.scalars[RowWork::kKappa];
    for (int64_t k = t0; k < dim; k += blockDim.x) {
      double acc = 0.0;
      for (int64_t t = 0; t < len; ++t) {
        if (!finite(w.cos[t])) continue;
        double lambda, mu;
        frame_coefs(p, w, t, w.diff[t], &lambda, &mu);
        acc += lambda * double(p.frame(b, t, k));
      }
      gq[k] = T(query_grad(w, acc, kappa, k));
    }
    __syncthreads();
  }
}

}  // namespace

template <typename T>
void forward_cuda(const Params<T>& p, std::uintptr_t stream) {
  if (p.batch == 0) return;
  const int64_t size = RowWork::size(p.steps, p.dim, p.cells, p.pool, false);
  forward_kernel<T><<<block_per_item(p.batch), kThreads, 0, as_stream(stream)>>>(p, size);
  FASTVQA_CUDA_CHECK_LAUNCH();
}

template <typename T>
void backward_cuda(const Params<T>& p, std::uintptr_t stream) {
  if (p.batch == 0) return;
  const int64_t size = RowWork::size(p.steps, p.dim, p.cells, p.pool, true);
  backward_kernel<T><<<block_per_item(p.batch), kThreads, 0, as_stream(stream)>>>(p, size);
  FASTVQA_CUDA_CHECK_LAUNCH();
}

template void forward_cuda<float>(const Params<float>&, std::uintptr_t);
template void forward_cuda<double>(const Params<double>&, std::uintptr_t);
template void backward_cuda<float>(const Params<float>&, std::uintptr_t);
template void backward_cuda<double>(const Params<double>&, std::uintptr_t);

}  // namespace span_similarity
}  // namespace fastvqa
