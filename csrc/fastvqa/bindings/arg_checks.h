// SPDX-License-Identifier: Apache-2.0
// Caller-facing checks that several ops' bindings share: valid lengths, CSR
// row pointers and the min_len / max_len pair. Index arrays are read on the
// host, so a kernel never trusts a malformed one as a bound.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

#include "fastvqa/bindings/array_arg.h"

namespace fastvqa {

// (B,) int64 lengths, each in [0, steps].
inline void check_lengths(const TensorView& lv, int64_t batch, int64_t steps, const char* op,
                          std::uintptr_t stream) {
  check_int64(lv, op, "lengths");
  FASTVQA_CHECK(lv.ndim == 1 && lv.shape[0] == batch, op, ": lengths must have shape (B,) = (",
                batch, ",), got shape ", lv.shape_str());
  const std::vector<int64_t> h = int64_to_host(lv, stream);
  for (int64_t b = 0; b < batch; ++b)
    FASTVQA_CHECK(0 <= h[b] && h[b] <= steps, op, ": lengths must lie in [0, T] = [0, ", steps,
                  "], got lengths[", b, "] = ", h[b]);
}

// Host copy of 1-D int64 row pointers `arg` (shape already checked): they start
// at 0, never decrease and end at `total`, the number of `items`.
inline std::vector<int64_t> host_row_offsets(const TensorView& ov, int64_t total, const char* op,
                                             const char* arg, const char* items,
                                             std::uintptr_t stream) {
  std::vector<int64_t> h = int64_to_host(ov, stream);
  const int64_t rows = static_cast<int64_t>(h.size()) - 1;
  FASTVQA_CHECK(h[0] == 0, op, ": ", arg, " must start at 0, got ", h[0]);
  for (int64_t i = 0; i < rows; ++i)
    FASTVQA_CHECK(h[i] <= h[i + 1], op, ": ", arg, " must be non-decreasing, got ", h[i],
                  " then ", h[i + 1], " at positions ", i, " and ", i + 1);
  FASTVQA_CHECK(h[rows] == total, op, ": ", arg, " must end at the number of ", items, " (",
                total, "), got ", h[rows]);
  return h;
}

// min_len >= 1; max_len None (`none_means` says what that stands for in the
// message) gives `steps`, else max_len >= 1 and >= min_len, returned as given.
inline int64_t max_len_arg(const pybind11::object& obj, int64_t min_len, int64_t steps,
                           const char* op, const char* none_means = "T") {
  FASTVQA_CHECK(min_len >= 1, op, ": min_len must be >= 1, got ", min_len);
  if (obj.is_none()) return steps;
  const int64_t max_len = obj.cast<int64_t>();
  FASTVQA_CHECK(max_len >= 1, op, ": max_len must be >= 1 (or None for ", none_means, "), got ",
                max_len);
  FASTVQA_CHECK(max_len >= min_len, op, ": max_len must be >= min_len, got max_len = ", max_len,
                " and min_len = ", min_len);
  return max_len;
}

}  // namespace fastvqa
