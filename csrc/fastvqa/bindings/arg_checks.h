// SPDX-License-Identifier: Apache-2.0
// Caller-facing checks that several ops' bindings share: valid lengths, CSR
// row pointers and the min_len / max_len pair. Index arrays are read on the
// host, so a kernel never trusts a malformed one as a bound; and kernels read
// only the copy that was checked (ValidatedIndex), never the caller's array
// again: the GIL is released while they run, so another thread may write the
// caller's array after the checks.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "fastvqa/bindings/array_arg.h"
#include "fastvqa/common/cuda_runtime_api.h"

namespace fastvqa {

// (B,) int64 lengths, each in [0, steps]; returns the host copy that was checked.
inline std::vector<int64_t> check_lengths(const TensorView& lv, int64_t batch, int64_t steps,
                                          const char* op, std::uintptr_t stream) {
  check_int64(lv, op, "lengths");
  FASTVQA_CHECK(lv.ndim == 1 && lv.shape[0] == batch, op, ": lengths must have shape (B,) = (",
                batch, ",), got shape ", lv.shape_str());
  std::vector<int64_t> h = int64_to_host(lv, stream);
  for (int64_t b = 0; b < batch; ++b)
    FASTVQA_CHECK(0 <= h[b] && h[b] <= steps, op, ": lengths must lie in [0, T] = [0, ", steps,
                  "], got lengths[", b, "] = ", h[b]);
  return h;
}

// Checked index values (lengths, offsets) where a kernel reads them: the host
// copy itself for CPU work, or a device copy of it (allocated through `alloc`
// on the caller's device) for CUDA work. data() has unit stride and stays
// valid while this object lives; it is null when absent() (no array given).
class ValidatedIndex {
 public:
  ValidatedIndex() = default;
  ValidatedIndex(std::vector<int64_t> host, const TensorView& like, const pybind11::object& alloc,
                 const char* op, std::uintptr_t stream)
      : present_(true), host_(std::move(host)) {
    if (!like.is_cuda()) return;
    device_ = std::make_unique<ArrayArg>(allocate_output(
        alloc, {static_cast<int64_t>(host_.size())}, "int64", op, stream));
    copy_host_to_device(device_->view().data, host_.data(), host_.size() * sizeof(int64_t),
                        like.device_index, stream);
  }

  bool absent() const { return !present_; }
  const std::vector<int64_t>& host() const { return host_; }
  const int64_t* data() const {
    if (!present_) return nullptr;
    return device_ ? static_cast<const int64_t*>(device_->view().data) : host_.data();
  }

 private:
  bool present_ = false;
  std::vector<int64_t> host_;
  std::unique_ptr<ArrayArg> device_;
};

// Optional (B,) lengths in [0, steps] on the device of `like`, checked and
// copied (see ValidatedIndex); absent when `obj` is None.
inline ValidatedIndex lengths_arg(const pybind11::object& obj, const TensorView& like,
                                  const char* like_name, int64_t batch, int64_t steps,
                                  const char* op, std::uintptr_t stream,
                                  const pybind11::object& alloc) {
  if (obj.is_none()) return ValidatedIndex();
  ArrayArg lengths(obj, op, "lengths", stream);
  check_same_device(like, lengths.view(), op, like_name, "lengths");
  return ValidatedIndex(check_lengths(lengths.view(), batch, steps, op, stream), like, alloc, op,
                        stream);
}

// The product of `dims` (each >= 0), or a ValueError naming `what` when it
// does not fit in int64: sizes derived from caller values (B * T * max_len)
// must not wrap around into a small allocation.
inline int64_t checked_product(std::initializer_list<int64_t> dims, const char* op,
                               const char* what) {
  for (const int64_t d : dims) {
    FASTVQA_ASSERT(d >= 0);
    if (d == 0) return 0;
  }
  int64_t n = 1;
  for (const int64_t d : dims) {
    FASTVQA_CHECK(n <= std::numeric_limits<int64_t>::max() / d, op, ": ", what,
                  " is too large (more than 2^63 - 1 elements)");
    n *= d;
  }
  return n;
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
// message) gives `steps`, else max_len >= 1 and >= min_len, returned clamped
// to `steps`: no span is longer than its row, so a longer limit means the
// same as `steps` (and a band of width 2^40 is never allocated for it).
inline int64_t max_len_arg(const pybind11::object& obj, int64_t min_len, int64_t steps,
                           const char* op, const char* none_means = "T") {
  FASTVQA_CHECK(min_len >= 1, op, ": min_len must be >= 1, got ", min_len);
  if (obj.is_none()) return steps;
  const int64_t max_len = obj.cast<int64_t>();
  FASTVQA_CHECK(max_len >= 1, op, ": max_len must be >= 1 (or None for ", none_means, "), got ",
                max_len);
  FASTVQA_CHECK(max_len >= min_len, op, ": max_len must be >= min_len, got max_len = ", max_len,
                " and min_len = ", min_len);
  return max_len < steps ? max_len : steps;
}

}  // namespace fastvqa
