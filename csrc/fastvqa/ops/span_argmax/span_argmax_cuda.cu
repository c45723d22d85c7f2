// SPDX-License-Identifier: Apache-2.0
// CUDA span argmax. Top-1: one block per row. When the start window is the
// whole prefix (no max_len), a chunked block scan carries the running argmax
// of the start scores (refined by exact_best_start for rounding ties), so the
// row costs O(T); with max_len each end scans the sums of its window of at
// most max_len - min_len + 1 starts. The block then reduces the per-thread
// best spans with the shared total order. Top-k: one thread per
// row runs the exact scan from span_argmax_math.h.
#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/cuda_utils.cuh"
#include "fastvqa/ops/span_argmax/span_argmax.h"

namespace fastvqa {
namespace span_argmax {

namespace {

constexpr int kTop1Threads = 256;

template <typename T>
struct Cand {
  T score;
  int64_t i, j;  // i < 0: no span
};

template <typename T>
__device__ __forceinline__ bool cand_better(const Cand<T>& a, const Cand<T>& b) {
  if (a.i < 0) return false;
  if (b.i < 0) return true;
  return ranks_before(a.score, a.i, a.j, b.score, b.i, b.j);
}

// Running maximum of start scores, smaller index first on ties.
template <typename T>
struct Arg {
  T v;
  int64_t idx;  // < 0: empty
};

template <typename T>
__device__ __forceinline__ Arg<T> arg_max(const Arg<T>& a, const Arg<T>& b) {
  if (a.idx < 0) return b;
  if (b.idx < 0) return a;
  if (a.v != b.v) return a.v > b.v ? a : b;
  return a.idx < b.idx ? a : b;
}

template <typename T>
__global__ void top1_kernel(Params<T> p) {
  __shared__ Arg<T> scan[kTop1Threads];
  __shared__ Cand<T> red[kTop1Threads];
  const int t = threadIdx.x;
  for (int64_t b = blockIdx.x; b < p.batch; b += gridDim.x) {
    const RowView<T> r = p.row(b);
    Cand<T> mine{T(0), -1, -1};
    if (p.max_len >= r.length) {
      // Every window is a prefix [0, j - min_len + 1]: scan over starts i and
      // pair each with the end j = i + min_len - 1 it is the last start of.
      Arg<T> carry{T(0), -1};
      for (int64_t base = 0; base < r.length; base += kTop1Threads) {
        const int64_t i = base + t;
        Arg<T> a{T(0), -1};
        if (i < r.length) {
          const T v = r.start[i * r.ss];
          if (!is_nan(v)) a = Arg<T>{v, i};
        }
        scan[t] = a;
        __syncthreads();
        // Hillis-Steele inclusive scan; the max is associative and the tie rule
        // (smaller index) makes it commutative, so the order of folds is free.
        for (int off = 1; off < kTop1Threads; off <<= 1) {
          Arg<T> other = t >= off ? scan[t - off] : Arg<T>{T(0), -1};
          __syncthreads();
          scan[t] = arg_max(scan[t], other);
          __syncthreads();
        }
        const Arg<T> prefix = arg_max(carry, scan[t]);
        const int64_t j = i + p.min_len - 1;
        if (i < r.length && j < r.length && prefix.idx >= 0) {
          const T ej = r.end[j * r.es];
          if (!is_nan(ej)) {
            int64_t b_j = exact_best_start(r, ej, 0, prefix.idx);
            if (ej == -INFINITY && r.start[b_j * r.ss] == INFINITY) {
              // +inf + -inf is NaN, but the prefix's other usable starts
              // still make -inf spans with this end: the first of them.
              b_j = first_start_for_neg_inf_end(r, 0, i);
            }
            const T score = b_j >= 0 ? r.start[b_j * r.ss] + ej : ej;
            if (b_j >= 0 && !is_nan(score)) {
              Cand<T> c{score, b_j, j};
              if (cand_better(c, mine)) mine = c;
            }
          }
        }
        carry = arg_max(carry, scan[kTop1Threads - 1]);
        __syncthreads();
      }
    } else {
      for (int64_t j = t; j < r.length; j += kTop1Threads) {
        const T ej = r.end[j * r.es];
        if (is_nan(ej)) continue;
        int64_t lo, hi;
        start_window(j, p.min_len, p.max_len, &lo, &hi);
        // Comparing the sums themselves (not the start scores) keeps the tie
        // rule exact when different start scores round to the same sum.
        for (int64_t i = lo; i <= hi; ++i) {
          const T score = r.start[i * r.ss] + ej;
          if (is_nan(score)) continue;
          Cand<T> c{score, i, j};
          if (cand_better(c, mine)) mine = c;
        }
      }
    }
    red[t] = mine;
    __syncthreads();
    for (int off = kTop1Threads / 2; off > 0; off >>= 1) {
      if (t < off && cand_better(red[t + off], red[t])) red[t] = red[t + off];
      __syncthreads();
    }
    if (t == 0) {
      int64_t* spans = p.out_spans + b * 2;
      T* scores = p.out_scores + b;
      const Cand<T> best = red[0];
      if (best.i >= 0) {
        spans[0] = best.i;
        spans[1] = best.j;
        scores[0] = best.score;
      } else {
        fill_missing<T>(0, 1, spans, scores);
      }
    }
    __syncthreads();
  }
}

template <typename T>
__global__ void topk_kernel(Params<T> p) {
  for (const int64_t b : grid_stride(p.batch)) {
    int64_t* spans = p.out_spans + b * p.k * 2;
    T* scores = p.out_scores + b * p.k;
    const int64_t count = topk_row(p.row(b), p.min_len, p.max_len, p.k, spans, scores);
    fill_missing(count, p.k, spans, scores);
  }
}

}  // namespace

template <typename T>
void span_argmax_cuda(const Params<T>& p, std::uintptr_t stream) {
  if (p.batch == 0) return;
  const cudaStream_t s = as_stream(stream);
  if (p.k == 1) {
    top1_kernel<T><<<block_per_item(p.batch), kTop1Threads, 0, s>>>(p);
  } else {
    topk_kernel<T><<<blocks_for(p.batch, 64), 64, 0, s>>>(p);
  }
  FASTVQA_CUDA_CHECK_LAUNCH();
}

template void span_argmax_cuda<float>(const Params<float>&, std::uintptr_t);
template void span_argmax_cuda<double>(const Params<double>&, std::uintptr_t);

}  // namespace span_argmax
}  // namespace fastvqa
