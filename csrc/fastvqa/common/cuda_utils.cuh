// SPDX-License-Identifier: Apache-2.0
// Device-side helpers for the .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "fastvqa/common/macros.h"

// Every CUDA runtime call is checked; a failure raises RuntimeError with the
// CUDA error string and the call site.
#define FASTVQA_CUDA_CHECK(expr)                                                   \
  do {                                                                             \
    cudaError_t fastvqa_err_ = (expr);                                             \
    if (fastvqa_err_ != cudaSuccess)                                               \
      throw std::runtime_error(::fastvqa::detail::concat(                          \
          "CUDA error ", cudaGetErrorName(fastvqa_err_), " (",                     \
          cudaGetErrorString(fastvqa_err_), ") from ", #expr, " at ", __FILE__, ":", \
          __LINE__));                                                              \
  } while (0)

// Checks the launch that was just made (configuration errors surface here).
#define FASTVQA_CUDA_CHECK_LAUNCH() FASTVQA_CUDA_CHECK(cudaGetLastError())

namespace fastvqa {

constexpr int kThreadsPerBlock = 256;

// Blocks for a grid-stride loop over `n` items; the cap keeps us far below the
// grid-x limit, the loop covers the rest.
inline unsigned int blocks_for(long long n, int threads = kThreadsPerBlock) {
  long long blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > 65535LL * 16) blocks = 65535LL * 16;
  return static_cast<unsigned int>(blocks);
}

// One block per item (a row, a group, a tile), with blocks_for's floor and
// cap; a kernel launched this way loops over the items past the cap.
inline unsigned int block_per_item(long long n) { return blocks_for(n, 1); }

// This thread's items of a grid-stride loop over [0, n):
// `for (const long long i : grid_stride(n))` visits start, start + stride, ...
// (start the thread's global index, stride the grid's thread count).
struct GridStride {
  struct Iter {
    long long i, step;
    __device__ long long operator*() const { return i; }
    __device__ Iter& operator++() {
      i += step;
      return *this;
    }
    __device__ bool operator!=(const Iter& end) const { return i < end.i; }
  };
  long long n;
  __device__ Iter begin() const {
    return Iter{blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x,
                static_cast<long long>(gridDim.x) * blockDim.x};
  }
  __device__ Iter end() const { return Iter{n, 0}; }
};
__device__ inline GridStride grid_stride(long long n) { return GridStride{n}; }

inline cudaStream_t as_stream(std::uintptr_t stream) {
  return reinterpret_cast<cudaStream_t>(stream);
}

}  // namespace fastvqa
