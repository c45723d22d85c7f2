// SPDX-License-Identifier: Apache-2.0
// TensorView: the small typed view through which arrays cross into kernels.
// It holds no reference; the binding keeps the owning Python object alive.
#pragma once

#include <cstdint>
#include <string>

#include "fastvqa/common/macros.h"

namespace fastvqa {

enum class DType { kFloat32, kFloat64, kInt64, kOther };
enum class DeviceKind { kCPU, kCUDA };

inline const char* dtype_name(DType d) {
  switch (d) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kInt64: return "int64";
    default: return "unsupported";
  }
}

constexpr int kMaxDims = 4;

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kOther;
  std::string dtype_str;  // as the producer named it, for messages
  int ndim = 0;
  int64_t shape[kMaxDims] = {0, 0, 0, 0};
  int64_t strides[kMaxDims] = {0, 0, 0, 0};  // in elements
  DeviceKind device = DeviceKind::kCPU;
  int device_index = 0;
  bool writable = true;

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
  }
  bool is_cuda() const { return device == DeviceKind::kCUDA; }
  std::string shape_str() const {
    std::string s = "(";
    for (int i = 0; i < ndim; ++i) {
      s += std::to_string(shape[i]);
      if (i + 1 < ndim || ndim == 1) s += ",";
      if (i + 1 < ndim) s += " ";
    }
    return s + ")";
  }
  std::string device_str() const {
    return is_cuda() ? "cuda:" + std::to_string(device_index) : std::string("cpu");
  }
  bool is_row_contiguous() const {
    if (numel() == 0) return true;  // an empty array has no layout to get wrong
    int64_t expected = 1;
    for (int i = ndim - 1; i >= 0; --i) {
      if (shape[i] != 1 && strides[i] != expected) return false;
      expected *= shape[i];
    }
    return true;
  }
};

// Checks shared by the ops' bindings. `op` and `arg` name the caller's call.
inline void check_ndim(const TensorView& t, int ndim, const char* op, const char* arg,
                       const char* layout) {
  FASTVQA_CHECK(t.ndim == ndim, op, ": ", arg, " must have shape ", layout, ", got shape ",
                t.shape_str());
}

inline void check_float(const TensorView& t, const char* op, const char* arg) {
  FASTVQA_CHECK_TYPE(t.dtype == DType::kFloat32 || t.dtype == DType::kFloat64, op, ": ", arg,
                     " must be float32 or float64, got ", t.dtype_str);
}

inline void check_int64(const TensorView& t, const char* op, const char* arg) {
  FASTVQA_CHECK_TYPE(t.dtype == DType::kInt64, op, ": ", arg, " must be int64, got ",
                     t.dtype_str);
}

inline void check_same_device(const TensorView& a, const TensorView& b, const char* op,
                              const char* arg_a, const char* arg_b) {
  FASTVQA_CHECK(a.device == b.device && (!a.is_cuda() || a.device_index == b.device_index), op,
                ": ", arg_a, " and ", arg_b, " must be on the same device, got ",
                a.device_str(), " and ", b.device_str());
}

}  // namespace fastvqa
