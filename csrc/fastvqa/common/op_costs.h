// SPDX-License-Identifier: Apache-2.0
// What each CPU loop costs on one thread, for parallel.h's cost model.
//
// Measured by benchmarks/calibrate_threads.py: the median single-thread time
// of a call of about 1 ms (four times the split size) divided by its
// elements, two digits, on the 2-vCPU Xeon VM of BENCHMARKS.md, "Threading",
// which has the run. A loop splits when rows x ns_per_row reaches kSplitNs,
// so a cost off by 2x only moves the cut-over by 2x, where one thread or two
// cost about the same anyway. The binding lists the table as
// fastvqa._C._op_costs() so tests can check each op's cut-over.
#pragma once

#include <cstdint>

#include "fastvqa/common/parallel.h"

namespace fastvqa {
namespace op_costs {

struct Entry {
  const char* name;
  double ns;
  const char* per;  // the element the cost is counted in
};

// span_scores by reduce: "mean" divides every cell, "contrast" also adds
// the row total's complement (about 3.3x the sum's forward).
constexpr Entry kSpanScoresForward{"span_scores", 0.30, "band cell"};
constexpr Entry kSpanScoresForwardMean{"span_scores_mean", 0.50, "band cell"};
constexpr Entry kSpanScoresForwardContrast{"span_scores_contrast", 0.99, "band cell"};
constexpr Entry kSpanScoresBackward{"span_scores_backward", 0.40, "band cell"};
constexpr Entry kSpanScoresBackwardContrast{"span_scores_backward_contrast", 0.59, "band cell"};
constexpr Entry kTopSpans{"top_spans", 2.1, "band cell"};
constexpr Entry kSpanArgmaxTop1{"span_argmax", 1.4, "step"};
constexpr Entry kSpanArgmaxTopk{"span_argmax_topk", 6.2, "step"};
constexpr Entry kSpanSimilarity{"span_similarity", 0.92, "band cell x (dim + 1)"};
constexpr Entry kNms1d{"nms_1d", 160.0, "span"};
constexpr Entry kTemporalIou{"temporal_iou", 0.40, "pair"};
constexpr Entry kGroundingOverlap{"grounding_overlap", 4.9, "prediction x (1 + its ground truths)"};
constexpr Entry kIoToSpans{"io_to_spans", 11.0, "step (each of its two passes)"};
constexpr Entry kIoStartEnd{"io_to_start_end", 1.0, "step"};

// A loop of `rows` rows of `elements` (in `entry`'s unit) each; the entry's
// name is the loop's kind, which keeps its own back-off (parallel.h).
inline LoopCost loop_cost(const Entry& entry, int64_t rows, double elements) {
  return LoopCost{rows, entry.ns * elements, entry.name};
}

constexpr Entry kAll[] = {kSpanScoresForward,  kSpanScoresForwardMean, kSpanScoresForwardContrast,
                          kSpanScoresBackward, kSpanScoresBackwardContrast,
                          kTopSpans,           kSpanArgmaxTop1,        kSpanArgmaxTopk,
                          kSpanSimilarity,     kNms1d,                 kTemporalIou,
                          kGroundingOverlap,   kIoToSpans,             kIoStartEnd};

}  // namespace op_costs
}  // namespace fastvqa
