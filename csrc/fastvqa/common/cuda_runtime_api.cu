// SPDX-License-Identifier: Apache-2.0
// The CUDA runtime behind cuda_runtime_api.h, for CUDA builds. The runtime is
// linked statically, so this library loads on machines without a driver; the
// calls below then report "no device" rather than failing to import.
#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/cuda_utils.cuh"

namespace fastvqa {

bool built_with_cuda() { return true; }

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

int cuda_driver_version() {
  int version = 0;
  if (cudaDriverGetVersion(&version) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return version;
}

void require_cuda(const char* op) {
  if (cuda_device_count() == 0)
    throw std::runtime_error(detail::concat(
        op, ": got a CUDA array, but fastvqa's CUDA runtime sees no device (no GPU, no "
            "driver, or CUDA_VISIBLE_DEVICES hides them); driver version reported: ",
        cuda_driver_version()));
}

void copy_device_to_host(void* dst, const void* src, std::size_t bytes, int device,
                         std::uintptr_t stream) {
  if (bytes == 0) return;
  DeviceGuard guard(device);
  FASTVQA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, as_stream(stream)));
  FASTVQA_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
}

void copy_host_to_device(void* dst, const void* src, std::size_t bytes, int device,
                         std::uintptr_t stream) {
  if (bytes == 0) return;
  DeviceGuard guard(device);
  // Pageable host memory: the call returns once `src` has been staged.
  FASTVQA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, as_stream(stream)));
}

DeviceGuard::DeviceGuard(int device) {
  FASTVQA_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) FASTVQA_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current != previous_ && previous_ >= 0)
    cudaSetDevice(previous_);
}

}  // namespace fastvqa
