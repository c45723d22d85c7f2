// SPDX-License-Identifier: Apache-2.0
// CUDA 1-D NMS.
//
// hard: the torchvision/mmcv bitmask algorithm, batched over ragged groups.
//   1. rank:   each span counts the spans of its group that rank before it
//              (the shared total order) and writes itself to that position.
//              O(n_g^2) per group like the mask below, so the sort costs no
//              more in order, needs no library sort, and is exact.
//   2. mask:   per group, a t_g x t_g grid of 64-thread blocks; thread r of
//              block (rt, ct) sets bit c of word (rt*64 + r, ct) when sorted
//              span ct*64 + c comes later and its IoU with sorted span
//              rt*64 + r exceeds the threshold.
//   3. reduce: one block per group runs the sequential greedy pass on the
//              GPU (no mask copy to the host): walking the sorted spans, a
//              span not yet marked removed is kept and its mask row is ORed
//              into the group's removed bits, by all threads of the block.
// soft: one thread per group runs soft_nms_group from nms_1d_math.h (the
//   algorithm is sequential within a group).
// gather: one thread per span copies the kept prefix of each group's segment
//   to its place in the packed output.
#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/cuda_utils.cuh"
#include "fastvqa/ops/nms_1d/nms_1d.h"

namespace fastvqa {
namespace nms_1d {

namespace {

constexpr int kReduceThreads = 128;

// Largest g in [0, count) with prefix[g] <= x (prefix non-decreasing, prefix[0] <= x).
__device__ int64_t last_at_or_below(const int64_t* prefix, int64_t count, int64_t x) {
  int64_t lo = 0, hi = count - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (prefix[mid] <= x) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// order[k] = k before the ranks are written: ranks of inputs that another
// thread changes during the call may collide and leave slots unwritten, and
// every slot must still hold an index of its own group (the scratch arrives
// uninitialised), so that no later kernel reads outside the inputs.
__global__ void identity_kernel(int64_t* order, int64_t n) {
  for (const int64_t k : grid_stride(n))
    order[k] = k;
}

template <typename T>
__global__ void rank_kernel(Params<T> p, int64_t* order) {
  for (const int64_t k : grid_stride(p.n)) {
    const Group<T> g = p.group(p.group_of(k));
    int64_t rank = 0;
    for (int64_t q = g.begin; q < g.end; ++q) rank += g.before(q, k) ? 1 : 0;
    order[g.begin + rank] = k;
  }
}

template <typename T>
__global__ void mask_kernel(Params<T> p, const int64_t* table, const int64_t* order,
                            unsigned long long* mask) {
  __shared__ T col_start[kTile], col_stop[kTile];
  const int64_t* block_prefix = table;
  const int64_t* mask_offset = table + (p.groups + 1);
  const int r = threadIdx.x;
  for (int64_t blk = blockIdx.x; blk < block_prefix[p.groups]; blk += gridDim.x) {
    const int64_t gi = last_at_or_below(block_prefix, p.groups, blk);
    const Group<T> g = p.group(gi);
    const int64_t n = g.end - g.begin, t = (n + kTile - 1) / kTile;
    const int64_t local = blk - block_prefix[gi];
    const int64_t rt = local / t, ct = local % t;
    const int64_t col0 = ct * kTile;
    const int64_t cols = n - col0 < kTile ? n - col0 : kTile;
    if (r < cols) {
      const int64_t k = order[g.begin + col0 + r];
      col_start[r] = g.start(k);
      col_stop[r] = g.stop(k);
    }
    __syncthreads();
    const int64_t i = rt * kTile + r;
    if (i < n) {
      const int64_t k = order[g.begin + i];
      const T s = g.start(k), e = g.stop(k);
      unsigned long long bits = 0;
      for (int c = 0; c < cols; ++c) {
        if (col0 + c > i &&
            suppresses(span_iou(s, e, col_start[c], col_stop[c]), p.iou_threshold))
          bits |= 1ULL << c;
      }
      mask[mask_offset[gi] + i * t + ct] = bits;
    }
    __syncthreads();  // the tile in shared memory is reused by the next block
  }
}

template <typename T>
__global__ void reduce_kernel(Params<T> p, const int64_t* table, const int64_t* order,
                              const unsigned long long* mask, unsigned long long* removed_all) {
  const int64_t* mask_offset = table + (p.groups + 1);
  const int64_t* removed_offset = table + 2 * (p.groups + 1);
  for (int64_t gi = blockIdx.x; gi < p.groups; gi += gridDim.x) {
    const Group<T> g = p.group(gi);
    const int64_t n = g.end - g.begin, t = (n + kTile - 1) / kTile;
    unsigned long long* removed = removed_all + removed_offset[gi];
    const unsigned long long* rows = mask + mask_offset[gi];
    for (int64_t w = threadIdx.x; w < t; w += blockDim.x) removed[w] = 0;
    __syncthreads();
    int64_t count = 0;  // every thread tracks it; the decisions below are block-uniform
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = order[g.begin + i];
      const bool gone = (removed[i / kTile] >> (i % kTile)) & 1ULL;
      if (gone || !score_alive(g.score(k), p.score_threshold)) continue;
      if (threadIdx.x == 0) {
        p.sel_keep[g.begin + count] = k;
        p.sel_scores[g.begin + count] = g.score(k);
      }
      ++count;
      __syncthreads();  // everyone has read removed[] for span i before it changes
      for (int64_t w = i / kTile + threadIdx.x; w < t; w += blockDim.x)
        removed[w] |= rows[i * t + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) p.counts[gi] = count;
    __syncthreads();
  }
}

template <typename T>
__global__ void soft_kernel(Params<T> p, int64_t* idx, T* cur) {
  for (const int64_t gi : grid_stride(p.groups)) {
    const Group<T> g = p.group(gi);
    p.counts[gi] = soft_nms_group(g, p.method, p.iou_threshold, p.sigma, p.score_threshold,
                                  idx + g.begin, cur + g.begin, p.sel_keep + g.begin,
                                  p.sel_scores + g.begin);
  }
}

template <typename T>
__global__ void gather_kernel(Params<T> p, const int64_t* out_offsets, int64_t* keep, T* scores) {
  for (const int64_t k : grid_stride(p.n)) {
    const int64_t gi = p.group_of(k);
    const int64_t local = k - p.group_begin(gi);
    if (local < p.counts[gi]) {
      keep[out_offsets[gi] + local] = p.sel_keep[k];
      scores[out_offsets[gi] + local] = p.sel_scores[k];
    }
  }
}

}  // namespace

template <typename T>
void nms_1d_cuda_select(const Params<T>& p, const HardPlan* plan, const CudaScratch& s,
                        std::uintptr_t stream) {
  if (p.groups == 0) return;
  const cudaStream_t st = as_stream(stream);
  if (p.method != Method::kHard) {
    soft_kernel<T><<<blocks_for(p.groups, 64), 64, 0, st>>>(p, s.idx, static_cast<T*>(s.cur));
    FASTVQA_CUDA_CHECK_LAUNCH();
    return;
  }
  // Pageable host memory: the call returns once the table has been staged.
  FASTVQA_CUDA_CHECK(cudaMemcpyAsync(s.table, plan->table.data(),
                                     plan->table.size() * sizeof(int64_t),
                                     cudaMemcpyHostToDevice, st));
  auto* mask = reinterpret_cast<unsigned long long*>(s.mask);
  if (p.n > 0) {
    identity_kernel<<<blocks_for(p.n), kThreadsPerBlock, 0, st>>>(s.order, p.n);
    FASTVQA_CUDA_CHECK_LAUNCH();
    rank_kernel<T><<<blocks_for(p.n), kThreadsPerBlock, 0, st>>>(p, s.order);
    FASTVQA_CUDA_CHECK_LAUNCH();
  }
  if (plan->blocks() > 0) {
    mask_kernel<T><<<block_per_item(plan->blocks()), kTile, 0, st>>>(p, s.table, s.order, mask);
    FASTVQA_CUDA_CHECK_LAUNCH();
  }
  reduce_kernel<T><<<block_per_item(p.groups), kReduceThreads, 0, st>>>(
      p, s.table, s.order, mask, reinterpret_cast<unsigned long long*>(s.removed));
  FASTVQA_CUDA_CHECK_LAUNCH();
}

template <typename T>
void nms_1d_cuda_gather(const Params<T>& p, const std::vector<int64_t>& out_offsets,
                        int64_t* dev_out_offsets, int64_t* keep, T* scores,
                        std::uintptr_t stream) {
  const cudaStream_t st = as_stream(stream);
  FASTVQA_CUDA_CHECK(cudaMemcpyAsync(dev_out_offsets, out_offsets.data(),
                                     out_offsets.size() * sizeof(int64_t),
                                     cudaMemcpyHostToDevice, st));
  if (p.n == 0 || p.groups == 0) return;
  gather_kernel<T><<<blocks_for(p.n), kThreadsPerBlock, 0, st>>>(p, dev_out_offsets, keep, scores);
  FASTVQA_CUDA_CHECK_LAUNCH();
}

template void nms_1d_cuda_select<float>(const Params<float>&, const HardPlan*,
                                        const CudaScratch&, std::uintptr_t);
template void nms_1d_cuda_select<double>(const Params<double>&, const HardPlan*,
                                         const CudaScratch&, std::uintptr_t);
template void nms_1d_cuda_gather<float>(const Params<float>&, const std::vector<int64_t>&,
                                        int64_t*, int64_t*, float*, std::uintptr_t);
template void nms_1d_cuda_gather<double>(const Params<double>&, const std::vector<int64_t>&,
                                         int64_t*, int64_t*, double*, std::uintptr_t);

}  // namespace nms_1d
}  // namespace fastvqa
