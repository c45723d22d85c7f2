// SPDX-License-Identifier: Apache-2.0
// Writing large outputs past the caches (non-temporal, "streaming" stores).
//
// An ordinary store to memory that is not in the cache first reads the line
// (a read for ownership), so filling a large output costs two passes over
// memory; memset avoids that, and temporal_iou's 64 MiB output took 3.3x a
// memset of it (BENCHMARKS.md). Streaming stores write whole lines without
// reading them. Only for outputs far larger than a core's cache: a small
// output that the caller reads next is better left in the cache.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "fastvqa/common/macros.h"

namespace fastvqa {

// Outputs from this size up (bytes) are streamed (several times a core's L2).
constexpr int64_t kStreamBytes = int64_t(8) << 20;

// dst[0, count) = src[0, count) with streaming stores where the CPU has them
// (x86-64: SSE2's movntps/movntpd on the 16-byte-aligned middle), plain
// stores elsewhere. Call stream_fence() before another thread reads dst.
template <typename T>
FASTVQA_ALWAYS_INLINE void stream_copy(const T* __restrict src, T* __restrict dst, int64_t count) {
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    int64_t j = 0;
    for (; j < count && (reinterpret_cast<uintptr_t>(dst + j) & 15) != 0; ++j) dst[j] = src[j];
    constexpr int64_t kLanes = 16 / sizeof(T);
    for (; j + kLanes <= count; j += kLanes) {
      if constexpr (sizeof(T) == 4) {
        _mm_stream_ps(reinterpret_cast<float*>(dst + j),
                      _mm_loadu_ps(reinterpret_cast<const float*>(src + j)));
      } else {
        _mm_stream_pd(reinterpret_cast<double*>(dst + j),
                      _mm_loadu_pd(reinterpret_cast<const double*>(src + j)));
      }
    }
    for (; j < count; ++j) dst[j] = src[j];
    return;
  }
#endif
  std::memcpy(dst, src, sizeof(T) * count);
}

// Orders earlier streaming stores before later stores (they are weakly
// ordered on x86): call once a thread has written its part.
FASTVQA_ALWAYS_INLINE void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace fastvqa
