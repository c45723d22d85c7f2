// SPDX-License-Identifier: Apache-2.0
// How every binding ends: its kernel runs without the GIL, on the device of
// the array it works on.
//
// Outputs and scratch are allocated before (through the caller's Python
// allocator, which needs the GIL). FASTVQA_RUN_KERNEL(view, cuda, cpu) then
// releases the GIL and runs `cuda` under a guard for `view`'s GPU when `view`
// is a CUDA array, else `cpu`. In a build without CUDA kernels the `cuda`
// statements are not compiled at all (FASTVQA_CUDA_CALL); the binding has
// already refused CUDA arrays there (require_cuda), so that branch only
// repeats the refusal. `cuda` and `cpu` may be several statements.
#pragma once

#include <pybind11/pybind11.h>

#include "fastvqa/common/cuda_runtime_api.h"

#define FASTVQA_RUN_KERNEL(view, cuda, cpu)                             \
  do {                                                                  \
    ::pybind11::gil_scoped_release fastvqa_no_gil_;                     \
    if ((view).is_cuda()) {                                             \
      ::fastvqa::DeviceGuard fastvqa_device_guard_((view).device_index); \
      FASTVQA_CUDA_CALL(cuda);                                          \
    } else {                                                            \
      cpu;                                                              \
    }                                                                   \
  } while (0)
