// SPDX-License-Identifier: Apache-2.0
// Start/end span argmax: entry points and the params the kernels see.
#pragma once

#include <cstdint>

#include "fastvqa/ops/span_argmax/span_argmax_math.h"

namespace fastvqa {
namespace span_argmax {

template <typename T>
struct Params {
  const T* start;            ///< batch x steps start scores, strides s_s0, s_s1 (elements)
  int64_t s_s0, s_s1;
  const T* end;              ///< batch x steps end scores, strides e_s0, e_s1
  int64_t e_s0, e_s1;
  const int64_t* lengths;    ///< batch valid lengths (stride len_s0), or null for all `steps`
  int64_t len_s0;
  int64_t batch, steps;
  int64_t min_len, max_len;  ///< 1 <= min_len; max_len already capped at `steps`
  int64_t k;                 ///< spans per row
  int64_t* out_spans;        ///< batch x k x 2 inclusive (start, end), contiguous
  T* out_scores;             ///< batch x k, contiguous

  FASTVQA_HD RowView<T> row(int64_t b) const {
    return RowView<T>{start + b * s_s0, s_s1, end + b * e_s0, e_s1,
                      lengths ? lengths[b * len_s0] : steps};
  }
};

template <typename T>
void span_argmax_cpu(const Params<T>& p);
template <typename T>
void span_argmax_cuda(const Params<T>& p, std::uintptr_t stream);

}  // namespace span_argmax
}  // namespace fastvqa
