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

/// What fastvqa.metrics.grounded_qa needs besides the overlaps, gathered in
/// the same pass over the rows (host float64 only).
struct GroundingScan {
  uint8_t* missing;          ///< n: 1 where the prediction row is two NaNs ("no prediction")
  const double* thresholds;  ///< n_thresholds values compared with >=
  int64_t n_thresholds;
  int64_t* counts;           ///< 2 * n_thresholds: rows with IoU >= t, then with IoP >= t
  int64_t bad_pred = -1;     ///< first prediction row neither finite nor two NaNs, or -1
  int64_t bad_gt = -1;       ///< first ground-truth row with a NaN or an infinity, or -1
  /// The rows of gt. The scan reads the caller's offsets in place, each one
  /// once, and addresses gt only with offsets inside [0, gt_rows].
  int64_t gt_rows = 0;
  /// Some row's offsets were decreasing or outside [0, gt_rows]; it was read
  /// as empty (the binding then raises the offsets' error).
  bool bad_offsets = false;
  // Answers (optional: pred_answers == nullptr skips them).
  const int64_t* pred_answers = nullptr;  ///< n predicted option indices
  const int64_t* gt_answers = nullptr;    ///< n gold option indices
  int64_t no_answer = -1;    ///< the pred_answers value meaning "no answer prediction"
  double gqa_iop = 0.5;      ///< Acc@GQA: a right answer with IoP >= this
  uint8_t* answered = nullptr;  ///< n: pred_answers != no_answer
  uint8_t* correct = nullptr;   ///< n: answered and pred_answers == gt_answers
  int64_t n_answered = 0, n_correct = 0, n_gqa = 0;
  int64_t unanswered = -1;   ///< first row with a span prediction and no answer, or -1
  int64_t bad_gt_answer = -1;  ///< first negative gt_answers value, or -1
  // NumPy-order sums of IoU and IoP over the rows with a span prediction.
  double sum_iou = 0, sum_iop = 0;
};

template <typename T>
void overlap_cpu(const OverlapParams<T>& p);
/// grounding_cpu's overlaps (bit for bit) plus `scan`; NaN compares false
/// with every threshold, so a "no prediction" row is counted nowhere. The
/// sums follow common/pairwise_sum.h; nothing depends on the thread count.
void grounding_scan_cpu(const GroundingParams<double>& p, GroundingScan* scan);
template <typename T>
void grounding_cpu(const GroundingParams<T>& p);

template <typename T>
void overlap_cuda(const OverlapParams<T>& p, std::uintptr_t stream);
template <typename T>
void grounding_cuda(const GroundingParams<T>& p, std::uintptr_t stream);

}  // namespace temporal_iou
}  // namespace fastvqa
