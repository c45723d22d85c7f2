// SPDX-License-Identifier: Apache-2.0
// CPU loops for the temporal IoU family; the math is in temporal_iou_math.h.
#include <vector>

#include "fastvqa/common/op_costs.h"
#include "fastvqa/common/parallel.h"
#include "fastvqa/common/stream_store.h"
#include "fastvqa/ops/temporal_iou/temporal_iou.h"

namespace fastvqa {
namespace temporal_iou {

namespace {

// Pairs per block of a streamed row: the block stays in L1 (8 KiB of doubles).
constexpr int64_t kBlock = 1024;

// One row of pairs with no special endpoint, in the vectorised plain loop
// (built for AVX2 and for the baseline, FASTVQA_VECTOR_CLONES). With
// `stream`, each block of the row is computed into an L1 buffer and written
// with streaming stores (stream_store.h): the same values, one pass over
// memory instead of two.
template <Mode kMode, typename T>
FASTVQA_VECTOR_CLONES void plain_row(T as, T ae, const T* __restrict bs, const T* __restrict be,
                                     int64_t m, T* __restrict row, bool stream) {
  if (!stream) {
#pragma omp simd
    for (int64_t j = 0; j < m; ++j) row[j] = pair_overlap<kMode>(as, ae, bs[j], be[j]);
    return;
  }
  alignas(64) T block[kBlock];
  for (int64_t c = 0; c < m; c += kBlock) {
    const int64_t len = m - c < kBlock ? m - c : kBlock;
    const T* __restrict s = bs + c;
    const T* __restrict e = be + c;
#pragma omp simd
    for (int64_t j = 0; j < len; ++j) block[j] = pair_overlap<kMode>(as, ae, s[j], e[j]);
    stream_copy(block, row + c, len);
  }
}

template <Mode kMode, typename T>
void pairwise(const OverlapParams<T>& p) {
  // b is packed into contiguous columns once (O(m)) so the inner loop is a
  // unit-stride, vectorisable sweep whatever the caller's strides were.
  // A row or column with an infinite or huge endpoint takes the extended
  // path (pair_overlap_any); every other row keeps the plain, vectorised loop.
  std::vector<T> bs(p.m), be(p.m);
  bool b_special = false;
  for (int64_t j = 0; j < p.m; ++j) {
    bs[j] = p.b[j * p.b_s0];
    be[j] = p.b[j * p.b_s0 + p.b_s1];
    b_special |= special(bs[j]) | special(be[j]);
  }
  const T* bs_ptr = bs.data();
  const T* be_ptr = be.data();
  const int64_t n = p.n, m = p.m;
  // Only into the caller's out=: a fresh allocation's pages are zeroed by the
  // OS on first touch, which leaves their lines in the cache, where plain
  // stores cost nothing more and streaming ones evict them (2.4x slower).
  const bool stream = p.caller_out && n * m * int64_t(sizeof(T)) >= kStreamBytes;
  parallel_rows(LoopCost{n, op_costs::kTemporalIou.ns * double(m)}, [&](Chunks& chunks) {
    int64_t lo, hi;
    while (chunks.next(&lo, &hi)) {
      for (int64_t i = lo; i < hi; ++i) {
        const T as = p.a[i * p.a_s0];
        const T ae = p.a[i * p.a_s0 + p.a_s1];
        T* row = p.out + i * m;
        if (b_special || special(as) || special(ae)) {
          for (int64_t j = 0; j < m; ++j)
            row[j] = pair_overlap_any<kMode>(as, ae, bs_ptr[j], be_ptr[j]);
        } else {
          plain_row<kMode>(as, ae, bs_ptr, be_ptr, m, row, stream);
        }
      }
    }
    if (stream) stream_fence();  // before the caller (another thread) reads the rows
  });
}

template <Mode kMode, typename T>
void paired(const OverlapParams<T>& p) {
  const int64_t n = p.n;
  // One branch-free sweep decides whether any pair needs the extended path,
  // so the common case keeps the plain (vectorisable) loop.
  // A sweep over the inputs costs about a tenth of computing the pairs.
  bool any = false;
  for (int64_t i = 0; i < n; ++i)
    any |= any_special(p.a[i * p.a_s0], p.a[i * p.a_s0 + p.a_s1], p.b[i * p.b_s0],
                       p.b[i * p.b_s0 + p.b_s1]);
  if (any) {
    parallel_for(LoopCost{n, op_costs::kTemporalIou.ns}, [&](int64_t i) {
      p.out[i] = pair_overlap_any<kMode>(p.a[i * p.a_s0], p.a[i * p.a_s0 + p.a_s1],
                                         p.b[i * p.b_s0], p.b[i * p.b_s0 + p.b_s1]);
    });
    return;
  }
  parallel_rows(LoopCost{n, op_costs::kTemporalIou.ns}, [&](Chunks& chunks) {
    int64_t lo, hi;
    while (chunks.next(&lo, &hi)) {
      for (int64_t i = lo; i < hi; ++i) {
        p.out[i] = pair_overlap<kMode>(p.a[i * p.a_s0], p.a[i * p.a_s0 + p.a_s1],
                                       p.b[i * p.b_s0], p.b[i * p.b_s0 + p.b_s1]);
      }
    }
  });
}

template <Mode kMode, typename T>
void run(const OverlapParams<T>& p) {
  if (p.paired)
    paired<kMode>(p);
  else
    pairwise<kMode>(p);
}

}  // namespace

template <typename T>
void overlap_cpu(const OverlapParams<T>& p) {
  if (p.n == 0 || (!p.paired && p.m == 0)) return;
  switch (p.mode) {
    case Mode::kIoU: run<Mode::kIoU>(p); break;
    case Mode::kIoP: run<Mode::kIoP>(p); break;
    case Mode::kIoG: run<Mode::kIoG>(p); break;
    case Mode::kGIoU: run<Mode::kGIoU>(p); break;
  }
}

template <typename T>
void grounding_cpu(const GroundingParams<T>& p) {
  const int64_t n = p.n;
  // Predictions own different numbers of ground-truth spans: the mean count
  // prices a row.
  const double per_row = n > 0 ? double(p.offsets[n * p.off_s0] - p.offsets[0]) / double(n) : 0;
  parallel_for(LoopCost{n, op_costs::kGroundingOverlap.ns * (1.0 + per_row)}, [&](int64_t i) {
    grounding_row(p.pred[i * p.p_s0], p.pred[i * p.p_s0 + p.p_s1], p.gt, p.g_s0, p.g_s1,
                  p.offsets[i * p.off_s0], p.offsets[(i + 1) * p.off_s0], &p.iou[i], &p.iop[i]);
  });
}

template void overlap_cpu<float>(const OverlapParams<float>&);
template void overlap_cpu<double>(const OverlapParams<double>&);
template void grounding_cpu<float>(const GroundingParams<float>&);
template void grounding_cpu<double>(const GroundingParams<double>&);

}  // namespace temporal_iou
}  // namespace fastvqa
