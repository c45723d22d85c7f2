// SPDX-License-Identifier: Apache-2.0
// I/O tag decoding: entry points and the params the kernels see.
//
// io_to_spans runs in two phases because the number of spans is known only
// afterwards: "count" writes the runs per row, the binding turns the counts
// into row offsets and allocates exact-size outputs, "fill" writes each row's
// runs at its offset and sorts them.
#pragma once

#include <cstdint>
#include <vector>

#include "fastvqa/ops/io_tags/io_tags_math.h"

namespace fastvqa {
namespace io_tags {

template <typename T>
struct RowsParams {
  const T* probs;          ///< batch x steps, strides p_s0, p_s1 (elements)
  int64_t p_s0, p_s1;
  const int64_t* lengths;  ///< batch valid lengths (stride len_s0), or null for all `steps`
  int64_t len_s0;
  int64_t batch, steps;

  FASTVQA_HD RowView<T> row(int64_t b) const {
    return RowView<T>{probs + b * p_s0, p_s1, lengths ? lengths[b * len_s0] : steps};
  }
};

template <typename T>
struct SpansParams {
  RowsParams<T> rows;
  double threshold;
  int64_t min_len;
  int64_t* counts;             ///< batch: runs per row (count phase)
  const int64_t* row_offsets;  ///< batch + 1 (fill phase)
  int64_t* out_spans;          ///< total x 2 inclusive (start, end), contiguous
  T* out_scores;               ///< total, contiguous
};

template <typename T>
struct StartEndParams {
  RowsParams<T> rows;
  T* out_start;  ///< batch x steps, contiguous
  T* out_end;
};

template <typename T>
void io_count_cpu(const SpansParams<T>& p);
template <typename T>
void io_fill_cpu(const SpansParams<T>& p);
template <typename T>
void io_start_end_cpu(const StartEndParams<T>& p);

template <typename T>
void io_count_cuda(const SpansParams<T>& p, std::uintptr_t stream);
// Copies the host row offsets to the device array p.row_offsets first.
template <typename T>
void io_fill_cuda(const SpansParams<T>& p, const std::vector<int64_t>& row_offsets,
                  std::uintptr_t stream);
template <typename T>
void io_start_end_cuda(const StartEndParams<T>& p, std::uintptr_t stream);

}  // namespace io_tags
}  // namespace fastvqa
