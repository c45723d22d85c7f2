// SPDX-License-Identifier: Apache-2.0
// CUDA kernels for I/O tag decoding; the semantics are in io_tags_math.h.
// io_to_spans: one thread per row counts its runs, then (after the binding
// has computed the row offsets) one thread per row writes them at its offset
// and insertion-sorts them (a row has at most ceil(T / 2) runs).
// io_to_start_end: one thread per output cell.
#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/cuda_utils.cuh"
#include "fastvqa/ops/io_tags/io_tags.h"

namespace fastvqa {
namespace io_tags {

namespace {

constexpr int kRowThreads = 64;

template <typename T>
__global__ void count_kernel(SpansParams<T> p) {
  for (const int64_t b : grid_stride(p.rows.batch))
    p.counts[b] = row_runs<T>(p.rows.row(b), p.threshold, p.min_len, nullptr, nullptr);
}

template <typename T>
__global__ void fill_kernel(SpansParams<T> p) {
  for (const int64_t b : grid_stride(p.rows.batch)) {
    const int64_t begin = p.row_offsets[b];
    const int64_t slots = p.row_offsets[b + 1] - begin;  // the count pass's runs
    int64_t* spans = p.out_spans + 2 * begin;
    T* scores = p.out_scores + begin;
    int64_t count = row_runs<T>(p.rows.row(b), p.threshold, p.min_len, spans, scores, slots);
    count = count < slots ? count : slots;  // differs only if the input changed meanwhile
    sort_runs(spans, scores, count);
    fill_missing_runs(count, slots, spans, scores);
  }
}

template <typename T>
__global__ void start_end_kernel(StartEndParams<T> p) {
  const long long total = static_cast<long long>(p.rows.batch) * p.rows.steps;
  for (const long long idx : grid_stride(total)) {
    const long long b = idx / p.rows.steps, t = idx - b * p.rows.steps;
    start_end_at(p.rows.row(b), t, &p.out_start[idx], &p.out_end[idx]);
  }
}

}  // namespace

template <typename T>
void io_count_cuda(const SpansParams<T>& p, std::uintptr_t stream) {
  if (p.rows.batch == 0) return;
  count_kernel<T><<<blocks_for(p.rows.batch, kRowThreads), kRowThreads, 0, as_stream(stream)>>>(p);
  FASTVQA_CUDA_CHECK_LAUNCH();
}

template <typename T>
void io_fill_cuda(const SpansParams<T>& p, const std::vector<int64_t>& row_offsets,
                  std::uintptr_t stream) {
  const cudaStream_t s = as_stream(stream);
  // Pageable host memory: the call returns once the offsets have been staged.
  FASTVQA_CUDA_CHECK(cudaMemcpyAsync(const_cast<int64_t*>(p.row_offsets), row_offsets.data(),
                                     row_offsets.size() * sizeof(int64_t),
                                     cudaMemcpyHostToDevice, s));
  if (p.rows.batch == 0 || row_offsets.back() == 0) return;
  fill_kernel<T><<<blocks_for(p.rows.batch, kRowThreads), kRowThreads, 0, s>>>(p);
  FASTVQA_CUDA_CHECK_LAUNCH();
}

template <typename T>
void io_start_end_cuda(const StartEndParams<T>& p, std::uintptr_t stream) {
  const long long total = static_cast<long long>(p.rows.batch) * p.rows.steps;
  if (total == 0) return;
  start_end_kernel<T><<<blocks_for(total), kThreadsPerBlock, 0, as_stream(stream)>>>(p);
  FASTVQA_CUDA_CHECK_LAUNCH();
}

template void io_count_cuda<float>(const SpansParams<float>&, std::uintptr_t);
template void io_count_cuda<double>(const SpansParams<double>&, std::uintptr_t);
template void io_fill_cuda<float>(const SpansParams<float>&, const std::vector<int64_t>&,
                                  std::uintptr_t);
template void io_fill_cuda<double>(const SpansParams<double>&, const std::vector<int64_t>&,
                                   std::uintptr_t);
template void io_start_end_cuda<float>(const StartEndParams<float>&, std::uintptr_t);
template void io_start_end_cuda<double>(const StartEndParams<double>&, std::uintptr_t);

}  // namespace io_tags
}  // namespace fastvqa
