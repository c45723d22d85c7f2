// SPDX-License-Identifier: Apache-2.0
// cuda_runtime_api.h for builds without CUDA: every CUDA request explains how
// to get a CUDA build instead of failing obscurely.
#include <stdexcept>

#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/macros.h"

namespace fastvqa {

namespace {
[[noreturn]] void no_cuda(const char* op) {
  throw std::runtime_error(detail::concat(
      op, ": got a CUDA array, but this fastvqa build has no CUDA kernels "
          "(built with FASTVQA_ENABLE_CUDA=OFF, or nvcc was not found at build time). "
          "Install a CUDA wheel (pip install fastvqa-cu12 or fastvqa-cu13), or rebuild from "
          "source with nvcc on PATH: FASTVQA_ENABLE_CUDA=ON pip install . ; "
          "or move the inputs to the CPU."));
}
}  // namespace

bool built_with_cuda() { return false; }
int cuda_device_count() { return 0; }
int cuda_driver_version() { return 0; }
void require_cuda(const char* op) { no_cuda(op); }
void copy_device_to_host(void*, const void*, std::size_t, int, std::uintptr_t) {
  no_cuda("copy_device_to_host");
}
void copy_host_to_device(void*, const void*, std::size_t, int, std::uintptr_t) {
  no_cuda("copy_host_to_device");
}
DeviceGuard::DeviceGuard(int) { no_cuda("DeviceGuard"); }
DeviceGuard::~DeviceGuard() = default;

}  // namespace fastvqa
