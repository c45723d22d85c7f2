// SPDX-License-Identifier: Apache-2.0
// Span scoring over all spans (span_scores, its backward) and the top spans
// with optional NMS (top_spans): entry points and the params the kernels see.
#pragma once

#include <cstdint>

#include "fastvqa/ops/span_scores/span_scores_math.h"

namespace fastvqa {
namespace span_scores {

/// The row input shared by the ops: x (batch x steps) and the valid lengths.
template <typename T>
struct RowInput {
  const T* x;               ///< batch x steps scores, strides x_s0, x_s1 (elements)
  int64_t x_s0, x_s1;
  const int64_t* lengths;   ///< batch valid lengths (stride len_s0), or null for all steps
  int64_t len_s0;
  int64_t batch, steps;

  FASTVQA_HD int64_t length(int64_t b) const { return lengths ? lengths[b * len_s0] : steps; }
};

/// span_scores forward: out[b, i, d] = score of [i, i + d], -inf where invalid.
template <typename T>
struct ForwardParams {
  RowInput<T> in;
  int64_t width;     ///< band width = max_len (as given; offsets past the row are invalid)
  int64_t min_len;   ///< >= 1
  Reduce reduce;
  T* out;            ///< batch x steps x width, contiguous
  double* prefix;    ///< CUDA scratch: batch x row_sums_size(steps)
  int64_t* counts;   ///< CUDA scratch: batch x (steps + 1) x 3
};

/// span_scores backward: grad_x from grad_out; invalid cells contribute nothing.
template <typename T>
struct BackwardParams {
  const T* grad;     ///< batch x steps x width, strides g_s0, g_s1, g_s2 (any, even 0)
  int64_t g_s0, g_s1, g_s2;
  const int64_t* lengths;
  int64_t len_s0;
  int64_t batch, steps, width, min_len;
  Reduce reduce;
  T* grad_x;         ///< batch x steps, contiguous
  double* colsum;    ///< CUDA scratch: batch x steps x width, C(j, t) at [t, j - t]
  double* rowsum;    ///< CUDA scratch: batch x 3 x steps (inside(t), E(j), F(i))

  FASTVQA_HD int64_t length(int64_t b) const { return lengths ? lengths[b * len_s0] : steps; }
  FASTVQA_HD T g(int64_t b, int64_t i, int64_t d) const {
    return grad[b * g_s0 + i * g_s1 + d * g_s2];
  }
};

/// top_spans: the k best spans per row, optionally with greedy NMS.
template <typename T>
struct TopParams {
  RowInput<T> in;
  int64_t min_len, max_len;  ///< max_len capped at steps
  int64_t k;
  Reduce reduce;
  bool nms;
  double nms_iou;
  int64_t* out_spans;        ///< batch x k x 2, contiguous
  T* out_scores;             ///< batch x k, contiguous
  // CUDA scratch (unused on CPU): row sums and one candidate list per row.
  double* prefix;            ///< batch x row_sums_size(steps)
  int64_t* counts;           ///< batch x (steps + 1) x 3
  int64_t cap;               ///< candidates per NMS round
  int64_t* cand_spans;       ///< batch x cap x 2
  T* cand_scores;            ///< batch x cap
};

/// Doubles of CUDA row-sum scratch per row: P, Q, their scaled copies
/// (steps + 1 each) and the careful flag.
FASTVQA_HD int64_t row_sums_size(int64_t steps) { return 4 * (steps + 1) + 1; }

/// Candidates scanned per NMS round: enough that k survive in the usual case.
inline int64_t nms_round_size(int64_t k) { return 4 * k > 32 ? 4 * k : 32; }

template <typename T>
void forward_cpu(const ForwardParams<T>& p);
template <typename T>
void backward_cpu(const BackwardParams<T>& p);
template <typename T>
void top_spans_cpu(const TopParams<T>& p);

template <typename T>
void forward_cuda(const ForwardParams<T>& p, std::uintptr_t stream);
template <typename T>
void backward_cuda(const BackwardParams<T>& p, std::uintptr_t stream);
template <typename T>
void top_spans_cuda(const TopParams<T>& p, std::uintptr_t stream);

}  // namespace span_scores
}  // namespace fastvqa
