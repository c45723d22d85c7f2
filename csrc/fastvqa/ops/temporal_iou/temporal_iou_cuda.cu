// SPDX-License-Identifier: Apache-2.0
// CUDA kernels for the temporal IoU family; the math is in temporal_iou_math.h,
// so these kernels only index.
#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/cuda_utils.cuh"
#include "fastvqa/ops/temporal_iou/temporal_iou.h"

namespace fastvqa {
namespace temporal_iou {

namespace {

template <Mode kMode, typename T>
__global__ void pairwise_kernel(OverlapParams<T> p) {
  // One thread per output cell along a grid-stride loop over the flattened
  // n x m matrix: consecutive threads write consecutive cells of a row.
  const long long total = static_cast<long long>(p.n) * p.m;
  for (const long long idx : grid_stride(total)) {
    const long long i = idx / p.m;
    const long long j = idx - i * p.m;
    p.out[idx] = pair_overlap_any<kMode>(p.a[i * p.a_s0], p.a[i * p.a_s0 + p.a_s1],
                                         p.b[j * p.b_s0], p.b[j * p.b_s0 + p.b_s1]);
  }
}

template <Mode kMode, typename T>
__global__ void paired_kernel(OverlapParams<T> p) {
  for (const long long i : grid_stride(p.n)) {
    p.out[i] = pair_overlap_any<kMode>(p.a[i * p.a_s0], p.a[i * p.a_s0 + p.a_s1], p.b[i * p.b_s0],
                                       p.b[i * p.b_s0 + p.b_s1]);
  }
}

template <typename T>
__global__ void grounding_kernel(GroundingParams<T> p) {
  for (const long long i : grid_stride(p.n)) {
    grounding_row(p.pred[i * p.p_s0], p.pred[i * p.p_s0 + p.p_s1], p.gt, p.g_s0, p.g_s1,
                  p.offsets[i * p.off_s0], p.offsets[(i + 1) * p.off_s0], &p.iou[i], &p.iop[i]);
  }
}

template <Mode kMode, typename T>
void launch(const OverlapParams<T>& p, cudaStream_t stream) {
  if (p.paired) {
    paired_kernel<kMode, T><<<blocks_for(p.n), kThreadsPerBlock, 0, stream>>>(p);
  } else {
    pairwise_kernel<kMode, T>
        <<<blocks_for(static_cast<long long>(p.n) * p.m), kThreadsPerBlock, 0, stream>>>(p);
  }
  FASTVQA_CUDA_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void overlap_cuda(const OverlapParams<T>& p, std::uintptr_t stream) {
  if (p.n == 0 || (!p.paired && p.m == 0)) return;
  const cudaStream_t s = as_stream(stream);
  switch (p.mode) {
    case Mode::kIoU: launch<Mode::kIoU>(p, s); break;
    case Mode::kIoP: launch<Mode::kIoP>(p, s); break;
    case Mode::kIoG: launch<Mode::kIoG>(p, s); break;
    case Mode::kGIoU: launch<Mode::kGIoU>(p, s); break;
  }
}

template <typename T>
void grounding_cuda(const GroundingParams<T>& p, std::uintptr_t stream) {
  if (p.n == 0) return;
  grounding_kernel<T><<<blocks_for(p.n), kThreadsPerBlock, 0, as_stream(stream)>>>(p);
  FASTVQA_CUDA_CHECK_LAUNCH();
}

template void overlap_cuda<float>(const OverlapParams<float>&, std::uintptr_t);
template void overlap_cuda<double>(const OverlapParams<double>&, std::uintptr_t);
template void grounding_cuda<float>(const GroundingParams<float>&, std::uintptr_t);
template void grounding_cuda<double>(const GroundingParams<double>&, std::uintptr_t);

}  // namespace temporal_iou
}  // namespace fastvqa
