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
  for (int64_t k = t0; k < p.dim; k += blockDim.x) w.qv[k] = double(p.q(b, k));
  __syncthreads();
  if (t0 == 0) {
    double nq2 = 0.0;
    for (int64_t k = 0; k < p.dim; ++k) nq2 += w.qv[k] * w.qv[k];
    w.scalars[0] = sqrt(nq2);
  }
  for (int64_t t = t0; t < len; t += blockDim.x) frame_stats(p, w, b, t);
  __syncthreads();
  if (t0 == 0) scalar_prefixes(p, w, len);
  if (p.pool == Pool::kCosOfMean)
    for (int64_t k = t0; k < p.dim; k += blockDim.x) feature_prefix_column(p, w, b, len, k);
  __syncthreads();
}

template <typename T>
__global__ void forward_kernel(Params<T> p, int64_t row_size) {
  for (int64_t b = blockIdx.x; b < p.batch; b += gridDim.x) {
    const RowWork w =
        RowWork::at(p.work + b * row_size, p.steps, p.dim, p.pool, false);
    const int64_t len = p.length(b);
    row_prefixes(p, w, b, len);
    T* out = p.out + b * p.cells;
    for (int64_t c = threadIdx.x; c < p.cells; c += blockDim.x) {
      int64_t i, j;
      const CellState s = cell_state(p, w, b, c, len, &i, &j);
      out[c] = s == CellState::kInvalid ? -std::numeric_limits<T>::infinity()
               : s == CellState::kNaN   ? std::numeric_limits<T>::quiet_NaN()
                                        : T(cell_value(p, w, i, j));
    }
    __syncthreads();
  }
}

template <typename T>
__global__ void backward_kernel(Params<T> p, int64_t row_size) {
  const bool com = p.pool == Pool::kCosOfMean;
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
    if (!finite(w.scalars[0])) continue;  // uniform across the block
    for (int64_t t = t0; t <= len; t += blockDim.x) w.diff[t] = 0.0;
    if (com)
      for (int64_t x = t0; x < (len + 1) * dim; x += blockDim.x) w.vec_diff[x] = 0.0;
    if (t0 == 0) w.scalars[1] = 0.0;
    __syncthreads();
    for (int64_t c = t0; c < p.cells; c += blockDim.x) {
      int64_t i, j;
      double beta = 0.0;
      if (cell_state(p, w, b, c, len, &i, &j) == CellState::kOk) {
        double scalar, gy;
        cell_backward(p, w, double(p.g(b, c)), i, j, &scalar, &gy, &beta);
        atomicAdd(w.diff + i, scalar);
        atomicAdd(w.diff + j + 1, -scalar);
        atomicAdd(w.scalars + 1, gy);
      }
      if (com) w.cell_coef[c] = beta;
    }
    __syncthreads();
    if (com) {
      // Thread k owns column k of the vector difference array.
      for (int64_t k = t0; k < dim; k += blockDim.x) {
        for (int64_t c = 0; c < p.cells; ++c) {
          const double beta = w.cell_coef[c];
          if (beta == 0.0) continue;
          int64_t i, j;
          // Read again from the caller's spans, which may have changed since: checked again.
          if (!p.span(b, c, len, &i, &j)) continue;
          const double v = beta * (w.feat_prefix[(j + 1) * dim + k] - w.feat_prefix[i * dim + k]);
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
      if (!finite(w.norm[t])) continue;
      double lambda, mu;
      frame_coefs(p, w, t, w.diff[t], &lambda, &mu);
      const double f = double(p.frame(b, t, k));
      gf[x] = T(lambda * w.qv[k] + (com ? w.vec_diff[x] : mu * f));
    }
    const double self = query_self_coef(w.scalars[1], w.scalars[0], p.eps);
    for (int64_t k = t0; k < dim; k += blockDim.x) {
      double acc = 0.0;
      for (int64_t t = 0; t < len; ++t) {
        if (!finite(w.norm[t])) continue;
        double lambda, mu;
        frame_coefs(p, w, t, w.diff[t], &lambda, &mu);
        acc += lambda * double(p.frame(b, t, k));
      }
      gq[k] = T(acc + self * w.qv[k]);
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
