// SPDX-License-Identifier: Apache-2.0
// CUDA kernels for span_scores and top_spans; the semantics are in
// span_scores_math.h, so these kernels only index. Prefix sums are built by
// one thread per row into scratch the binding allocates (simple and exact),
// then the band is filled one thread per cell. The backward gathers one
// difference entry per thread (O(width) each), then one thread per row takes
// the running sum. top_spans runs one thread per row.
#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/cuda_utils.cuh"
#include "fastvqa/ops/span_scores/span_scores.h"

namespace fastvqa {
namespace span_scores {

namespace {

template <typename T>
__device__ PrefixRow row_prefix(const RowInput<T>& in, double* prefix, int64_t* counts,
                                int64_t b) {
  // Counts are always built here, so `special` may stay true: range_sum is
  // exact either way.
  return PrefixRow{prefix + b * (in.steps + 1), counts + b * 3 * (in.steps + 1), in.length(b),
                   true};
}

template <typename T>
__global__ void prefix_kernel(RowInput<T> in, double* prefix, int64_t* counts) {
  for (long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x; b < in.batch;
       b += (long long)gridDim.x * blockDim.x) {
    build_prefix(in.x + b * in.x_s0, in.x_s1, in.length(b), prefix + b * (in.steps + 1),
                 counts + b * 3 * (in.steps + 1));
  }
}

template <Reduce R, typename T>
__global__ void forward_kernel(ForwardParams<T> p) {
  const long long total = static_cast<long long>(p.in.batch) * p.in.steps * p.width;
  for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
       idx += (long long)gridDim.x * blockDim.x) {
    const long long d = idx % p.width;
    const long long i = (idx / p.width) % p.in.steps;
    const long long b = idx / (p.width * p.in.steps);
    const PrefixRow pr = row_prefix(p.in, p.prefix, p.counts, b);
    int64_t lo, hi;
    offset_range(i, pr.length, p.min_len, p.width, &lo, &hi);
    p.out[idx] = (d >= lo && d <= hi) ? static_cast<T>(span_value<R>(pr, i, i + d))
                                      : static_cast<T>(-INFINITY);
  }
}

template <typename T>
struct RowGrad {
  BackwardParams<T> p;
  int64_t b;
  __device__ T operator()(int64_t i, int64_t d) const { return p.g(b, i, d); }
};

template <Reduce R, typename T>
__global__ void diff_kernel(BackwardParams<T> p) {
  const long long total = static_cast<long long>(p.batch) * (p.steps + 1);
  for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
       idx += (long long)gridDim.x * blockDim.x) {
    const long long b = idx / (p.steps + 1);
    const long long k = idx % (p.steps + 1);
    const RowGrad<T> g{p, b};
    double every;
    p.diff[idx] = diff_entry<R>(g, k, p.length(b), p.min_len, p.width, &every);
    if (k < p.steps) p.every[b * p.steps + k] = every;
  }
}

template <Reduce R, typename T>
__global__ void scan_kernel(BackwardParams<T> p) {
  for (long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x; b < p.batch;
       b += (long long)gridDim.x * blockDim.x) {
    const int64_t length = p.length(b);
    const double* diff = p.diff + b * (p.steps + 1);
    T* gx = p.grad_x + b * p.steps;
    double every = 0.0;
    for (int64_t t = 0; t < length; ++t) every += p.every[b * p.steps + t];
    double run = 0.0;
    for (int64_t t = 0; t < length; ++t) {
      run += diff[t];
      gx[t] = static_cast<T>(run + every);
    }
    run += diff[length];
    if (!is_finite(run) || !is_finite(every)) {  // see grad_direct
      const RowGrad<T> g{p, b};
      const IeeeSum all_out = outside_total<R>(g, length, p.min_len, p.width);
      for (int64_t t = 0; t < length; ++t)
        gx[t] = static_cast<T>(grad_direct<R>(g, t, length, p.min_len, p.width, all_out));
    }
    for (int64_t t = length; t < p.steps; ++t) gx[t] = T(0);
  }
}

template <Reduce R, typename T>
__global__ void top_kernel(TopParams<T> p) {
  for (long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x; b < p.in.batch;
       b += (long long)gridDim.x * blockDim.x) {
    build_prefix(p.in.x + b * p.in.x_s0, p.in.x_s1, p.in.length(b),
                 p.prefix + b * (p.in.steps + 1), p.counts + b * 3 * (p.in.steps + 1));
    const PrefixRow pr = row_prefix(p.in, p.prefix, p.counts, b);
    int64_t* spans = p.out_spans + b * p.k * 2;
    T* scores = p.out_scores + b * p.k;
    Cursor<T> after{false, T(0), 0, 0};
    if (!p.nms) {
      fill_missing(scan_ranked<R>(pr, p.min_len, p.max_len, p.k, after, spans, scores), p.k,
                   spans, scores);
      continue;
    }
    // Rounds of `cap` candidates in rank order, each resuming after the last
    // one: greedy NMS sees every span in rank order, so the result is exact.
    int64_t* cs = p.cand_spans + b * p.cap * 2;
    T* cv = p.cand_scores + b * p.cap;
    int64_t kept = 0;
    while (kept < p.k) {
      const int64_t count = scan_ranked<R>(pr, p.min_len, p.max_len, p.cap, after, cs, cv);
      for (int64_t c = 0; c < count && kept < p.k; ++c)
        keep_unless_suppressed(cv[c], cs[2 * c], cs[2 * c + 1], p.nms_iou, &kept, spans,
                               scores);
      if (count < p.cap) break;  // no spans left
      after = Cursor<T>{true, cv[p.cap - 1], cs[2 * (p.cap - 1)], cs[2 * (p.cap - 1) + 1]};
    }
    fill_missing(kept, p.k, spans, scores);
  }
}

template <Reduce R, typename T>
void forward_launch(const ForwardParams<T>& p, cudaStream_t s) {
  prefix_kernel<T><<<blocks_for(p.in.batch, 64), 64, 0, s>>>(p.in, p.prefix, p.counts);
  FASTVQA_CUDA_CHECK_LAUNCH();
  const long long total = static_cast<long long>(p.in.batch) * p.in.steps * p.width;
  forward_kernel<R, T><<<blocks_for(total), kThreadsPerBlock, 0, s>>>(p);
  FASTVQA_CUDA_CHECK_LAUNCH();
}

template <Reduce R, typename T>
void backward_launch(const BackwardParams<T>& p, cudaStream_t s) {
  const long long total = static_cast<long long>(p.batch) * (p.steps + 1);
  diff_kernel<R, T><<<blocks_for(total), kThreadsPerBlock, 0, s>>>(p);
  FASTVQA_CUDA_CHECK_LAUNCH();
  scan_kernel<R, T><<<blocks_for(p.batch, 64), 64, 0, s>>>(p);
  FASTVQA_CUDA_CHECK_LAUNCH();
}

template <Reduce R, typename T>
void top_launch(const TopParams<T>& p, cudaStream_t s) {
  top_kernel<R, T><<<blocks_for(p.in.batch, 64), 64, 0, s>>>(p);
  FASTVQA_CUDA_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void forward_cuda(const ForwardParams<T>& p, std::uintptr_t stream) {
  if (p.in.batch == 0 || p.in.steps == 0) return;
  const cudaStream_t s = as_stream(stream);
  switch (p.reduce) {
    case Reduce::kSum: forward_launch<Reduce::kSum>(p, s); break;
    case Reduce::kMean: forward_launch<Reduce::kMean>(p, s); break;
    case Reduce::kContrast: forward_launch<Reduce::kContrast>(p, s); break;
  }
}

template <typename T>
void backward_cuda(const BackwardParams<T>& p, std::uintptr_t stream) {
  if (p.batch == 0 || p.steps == 0) return;
  const cudaStream_t s = as_stream(stream);
  switch (p.reduce) {
    case Reduce::kSum: backward_launch<Reduce::kSum>(p, s); break;
    case Reduce::kMean: backward_launch<Reduce::kMean>(p, s); break;
    case Reduce::kContrast: backward_launch<Reduce::kContrast>(p, s); break;
  }
}

template <typename T>
void top_spans_cuda(const TopParams<T>& p, std::uintptr_t stream) {
  if (p.in.batch == 0) return;
  const cudaStream_t s = as_stream(stream);
  switch (p.reduce) {
    case Reduce::kSum: top_launch<Reduce::kSum>(p, s); break;
    case Reduce::kMean: top_launch<Reduce::kMean>(p, s); break;
    case Reduce::kContrast: top_launch<Reduce::kContrast>(p, s); break;
  }
}

template void forward_cuda<float>(const ForwardParams<float>&, std::uintptr_t);
template void forward_cuda<double>(const ForwardParams<double>&, std::uintptr_t);
template void backward_cuda<float>(const BackwardParams<float>&, std::uintptr_t);
template void backward_cuda<double>(const BackwardParams<double>&, std::uintptr_t);
template void top_spans_cuda<float>(const TopParams<float>&, std::uintptr_t);
template void top_spans_cuda<double>(const TopParams<double>&, std::uintptr_t);

}  // namespace span_scores
}  // namespace fastvqa
