// SPDX-License-Identifier: Apache-2.0
// 1-D NMS: entry points and the params the kernels see.
//
// Both paths run in two phases because the number of kept spans is known only
// afterwards: "select" writes each group's kept spans to the start of that
// group's own segment [begin, end) of N-sized scratch arrays and its count;
// the binding then computes the output offsets, allocates exact-size outputs
// and "gather" packs the segments into them.
#pragma once

#include <cstdint>
#include <vector>

#include "fastvqa/ops/nms_1d/nms_1d_math.h"

namespace fastvqa {
namespace nms_1d {

template <typename T>
struct Params {
  const T* spans;           ///< N x 2 [start, end] seconds, strides s0, s1 (elements)
  int64_t s0, s1;
  const T* scores;          ///< N, stride sc0
  int64_t sc0;
  const int64_t* offsets;   ///< G + 1 CSR group offsets (stride off_s0), or null: one group
  int64_t off_s0;
  int64_t n, groups;
  Method method;
  Ties ties;                 ///< how equal scores are ordered (nms_1d_math.h)
  double iou_threshold;      ///< compared exactly with the widened IoU
  T sigma;
  double score_threshold;
  int64_t* sel_keep;        ///< N scratch: kept global indices per group segment
  T* sel_scores;            ///< N scratch: their (decayed) scores
  int64_t* counts;          ///< G: kept per group

  FASTVQA_HD int64_t group_begin(int64_t g) const {
    return offsets ? offsets[g * off_s0] : (g == 0 ? 0 : n);
  }
  FASTVQA_HD Group<T> group(int64_t g) const {
    return Group<T>{spans, s0, s1, scores, sc0, group_begin(g), group_begin(g + 1), ties};
  }
  // The group holding span k: the largest g with group_begin(g) <= k (empty
  // groups share a begin with the next one and are skipped that way).
  FASTVQA_HD int64_t group_of(int64_t k) const {
    int64_t lo = 0, hi = groups - 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (group_begin(mid) <= k) lo = mid; else hi = mid - 1;
    }
    return lo;
  }
};

// CUDA hard NMS works on 64-wide tiles of each group's sorted spans: group g
// with n_g spans has t_g = ceil(n_g / 64) tiles, a t_g x t_g grid of mask
// blocks, n_g x t_g 64-bit mask words and t_g "removed" words. The plan holds
// the running sums of those (3 arrays of G + 1, the device's lookup table).
constexpr int64_t kTile = 64;

struct HardPlan {
  std::vector<int64_t> table;  ///< [block prefix | mask word offset | removed word offset]
  int64_t groups = 0;
  int64_t blocks() const { return table[groups]; }
  int64_t mask_words() const { return table[2 * (groups + 1) - 1]; }
  int64_t removed_words() const { return table[3 * (groups + 1) - 1]; }
};

inline HardPlan plan_hard(const std::vector<int64_t>& offsets) {
  HardPlan plan;
  plan.groups = static_cast<int64_t>(offsets.size()) - 1;
  const int64_t G = plan.groups;
  plan.table.assign(3 * (G + 1), 0);
  int64_t* blocks = plan.table.data();
  int64_t* mask = blocks + (G + 1);
  int64_t* removed = mask + (G + 1);
  for (int64_t g = 0; g < G; ++g) {
    const int64_t n = offsets[g + 1] - offsets[g];
    const int64_t t = (n + kTile - 1) / kTile;
    blocks[g + 1] = blocks[g] + t * t;
    mask[g + 1] = mask[g] + n * t;
    removed[g + 1] = removed[g] + t;
  }
  return plan;
}

/// Device scratch of the CUDA paths (null where a method does not use it).
struct CudaScratch {
  int64_t* table;    ///< hard: 3 (G + 1), filled from the plan
  int64_t* order;    ///< hard: N, each group's spans in rank order
  int64_t* mask;     ///< hard: plan.mask_words() (64-bit masks)
  int64_t* removed;  ///< hard: plan.removed_words()
  int64_t* idx;      ///< soft: N live candidates
  void* cur;         ///< soft: N current scores (T)
};

template <typename T>
void nms_1d_cpu_select(const Params<T>& p);
template <typename T>
void nms_1d_cpu_gather(const Params<T>& p, const int64_t* out_offsets, int64_t* keep, T* scores);

template <typename T>
void nms_1d_cuda_select(const Params<T>& p, const HardPlan* plan, const CudaScratch& s,
                        std::uintptr_t stream);
template <typename T>
void nms_1d_cuda_gather(const Params<T>& p, const std::vector<int64_t>& out_offsets,
                        int64_t* dev_out_offsets, int64_t* keep, T* scores,
                        std::uintptr_t stream);

}  // namespace nms_1d
}  // namespace fastvqa
