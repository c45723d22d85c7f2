// SPDX-License-Identifier: Apache-2.0
// Temporal IoU family: entry points and the params the kernels see.
#pragma once

#include <cstdint>

#include "fastvqa/ops/temporal_iou/temporal_iou_math.h"

namespace fastvqa {
namespace temporal_iou {

/// Pairwise (out[i, j] = overlap(a[i], b[j])) or paired (out[i] = overlap(a[i], b[i])).
template <typename T>
struct OverlapParams {
  const T* a;         ///< n x 2 spans [start, end] in seconds, strides a_s0, a_s1 (elements)
  int64_t a_s0, a_s1;
  const T* b;         ///< m x 2 spans, strides b_s0, b_s1
  int64_t b_s0, b_s1;
  T* out;             ///< n x m (pairwise) or n (paired), contiguous
  int64_t n, m;
  Mode mode;
  bool paired;
  bool caller_out = false;  ///< out is the caller's (out=), not a fresh allocation
};

/// Per-prediction max over a ragged row of ground truth (NExT-GQA rules).
template <typename T>
struct GroundingParams {
  const T* pred;      ///< n x 2, strides p_s0, p_s1
  int64_t p_s0, p_s1;
  const T* gt;        ///< k x 2, strides g_s0, g_s1
  int64_t g_s0, g_s1;
  const int64_t* offsets;  ///< n + 1 CSR offsets into gt, stride off_s0
  int64_t off_s0;
  T* iou;             ///< n, contiguous
  T* iop;             ///< n, contiguous
  int64_t n;
};

template <typename T>
void overlap_cpu(const OverlapParams<T>& p);
template <typename T>
void grounding_cpu(const GroundingParams<T>& p);

template <typename T>
void overlap_cuda(const OverlapParams<T>& p, std::uintptr_t stream);
template <typename T>
void grounding_cuda(const GroundingParams<T>& p, std::uintptr_t stream);

}  // namespace temporal_iou
}  // namespace fastvqa
