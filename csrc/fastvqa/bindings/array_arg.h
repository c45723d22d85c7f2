// SPDX-License-Identifier: Apache-2.0
// ArrayArg: turns any Python array into a TensorView without copying, through
// the buffer protocol (NumPy and friends) or DLPack (torch, CuPy, JAX), and
// keeps what it borrowed alive for as long as the view is used.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fastvqa/common/tensor_view.h"

namespace fastvqa {

class ArrayArg {
 public:
  // `op` and `name` are used in messages. `stream` is the caller's CUDA stream
  // (0 for CPU work), handed to a DLPack producer so it orders its own work
  // before ours. `writable` asks for a mutable view (outputs).
  ArrayArg(pybind11::handle obj, const char* op, const char* name, std::uintptr_t stream,
           bool writable = false);
  ArrayArg(ArrayArg&&) = default;
  ~ArrayArg();

  const TensorView& view() const { return view_; }
  pybind11::object object() const { return owner_; }

 private:
  void from_buffer(const char* op, const char* name, bool writable);
  void from_dlpack(const char* op, const char* name, std::uintptr_t stream);
  void align(const char* op, const char* name, bool writable);

  pybind11::object owner_;
  std::vector<std::uint64_t> aligned_;  // an aligned copy of a misaligned CPU input
  std::unique_ptr<pybind11::buffer_info> buffer_;
  pybind11::object capsule_;
  TensorView view_;
};

// Asks the Python allocator for an output array of `shape` and `dtype`
// ("float32", "float64" or "int64") in the caller's framework and device.
ArrayArg allocate_output(const pybind11::object& alloc, const std::vector<int64_t>& shape,
                         const char* dtype, const char* op, std::uintptr_t stream);

// A 1-D int64 array (offsets, lengths) copied to the host, CPU or CUDA, so
// the binding can validate it before a kernel trusts it as an index.
std::vector<int64_t> int64_to_host(const TensorView& v, std::uintptr_t stream);

}  // namespace fastvqa
