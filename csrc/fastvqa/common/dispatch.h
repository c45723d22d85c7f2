// SPDX-License-Identifier: Apache-2.0
// Turns a runtime dtype into a template parameter, in the manner of
// flash-attention's static switches: the lambda body is compiled once per type.
#pragma once

#include "fastvqa/common/tensor_view.h"

#define FASTVQA_DISPATCH_FLOAT(dtype, scalar_t, ...)                \
  [&] {                                                             \
    switch (dtype) {                                                \
      case ::fastvqa::DType::kFloat32: {                            \
        using scalar_t = float;                                     \
        return __VA_ARGS__();                                       \
      }                                                             \
      case ::fastvqa::DType::kFloat64: {                            \
        using scalar_t = double;                                    \
        return __VA_ARGS__();                                       \
      }                                                             \
      default:                                                      \
        FASTVQA_ASSERT(false && "unsupported dtype reached dispatch"); \
    }                                                               \
  }()
