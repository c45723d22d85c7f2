// SPDX-License-Identifier: Apache-2.0
// Host-side view of the CUDA runtime that plain C++ translation units may
// include: they see only these declarations, never the CUDA headers. The
// definitions live in cuda_runtime_api.cu (CUDA builds) or report "not built".
#pragma once

#include <cstdint>
#include <string>

namespace fastvqa {

// True when this build compiled the CUDA kernels.
bool built_with_cuda();
// Number of CUDA devices the runtime sees; 0 without a driver or a GPU, never throws.
int cuda_device_count();
// Driver version as reported by the runtime (e.g. 13000), 0 when unavailable.
int cuda_driver_version();
// Raises RuntimeError, saying how to fix it, when a CUDA array reaches a build
// without CUDA kernels or a process that sees no CUDA device.
void require_cuda(const char* op);
// Copies `bytes` from device memory to host memory on `stream` and waits for it.
void copy_device_to_host(void* dst, const void* src, std::size_t bytes, int device,
                         std::uintptr_t stream);
// Copies `bytes` from host memory to device memory, queued on `stream`. `src`
// may be freed once this returns (pageable memory is staged before the call
// returns), so a host vector of validated values can go out of scope before
// the kernels that read the copy have run.
void copy_host_to_device(void* dst, const void* src, std::size_t bytes, int device,
                         std::uintptr_t stream);

// Makes `device` current for the lifetime of the guard and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace fastvqa

// Wraps a call into a CUDA launcher (defined in a .cu file). CPU-only builds do
// not compile the .cu files, so there the call must not be emitted at all: it
// would otherwise link only where link-time optimisation happens to drop the
// unreachable branch, and fail to import with an undefined symbol elsewhere
// (Debug or non-LTO builds). Callers have already run require_cuda(), which
// throws in CPU-only builds; the fallback repeats it for safety.
#if defined(FASTVQA_WITH_CUDA) && FASTVQA_WITH_CUDA
#define FASTVQA_CUDA_CALL(...) __VA_ARGS__
#else
#define FASTVQA_CUDA_CALL(...) ::fastvqa::require_cuda(__func__)
#endif
