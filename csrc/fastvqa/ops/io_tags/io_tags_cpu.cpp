// SPDX-License-Identifier: Apache-2.0
// CPU loops for I/O tag decoding; the semantics are in io_tags_math.h.
#include <algorithm>
#include <numeric>
#include <vector>

#include "fastvqa/common/op_costs.h"
#include "fastvqa/common/parallel.h"
#include "fastvqa/ops/io_tags/io_tags.h"

namespace fastvqa {
namespace io_tags {

template <typename T>
void io_count_cpu(const SpansParams<T>& p) {
  const int64_t batch = p.rows.batch;
  parallel_for(op_costs::loop_cost(op_costs::kIoToSpans, batch, p.rows.steps), [&](int64_t b) {
    p.counts[b] = row_runs<T>(p.rows.row(b), p.threshold, p.min_len, nullptr, nullptr);
  });
}

template <typename T>
void io_fill_cpu(const SpansParams<T>& p) {
  const int64_t batch = p.rows.batch;
  const LoopCost cost = op_costs::loop_cost(op_costs::kIoToSpans, batch, p.rows.steps);
  parallel_rows(cost, [&](Chunks& chunks) {
    std::vector<int64_t> perm;
    std::vector<int64_t> spans;
    std::vector<T> scores;
    int64_t lo, hi;
    while (chunks.next(&lo, &hi)) {
      for (int64_t b = lo; b < hi; ++b) {
        const int64_t begin = p.row_offsets[b];
        const int64_t count = p.row_offsets[b + 1] - begin;
        if (count == 0) continue;
        spans.resize(2 * count);
        scores.resize(count);
        // At most `count` runs are written (see row_runs); fewer are found only
        // when another thread changed the row since the count pass.
        const int64_t found = std::min(
            count, row_runs<T>(p.rows.row(b), p.threshold, p.min_len, spans.data(), scores.data(),
                               count));
        // Sort a permutation (runs are in start order) with the shared total order.
        perm.resize(found);
        std::iota(perm.begin(), perm.end(), int64_t(0));
        std::sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) {
          return run_before(scores[x], spans[2 * x], scores[y], spans[2 * y]);
        });
        for (int64_t q = 0; q < found; ++q) {
          p.out_spans[2 * (begin + q)] = spans[2 * perm[q]];
          p.out_spans[2 * (begin + q) + 1] = spans[2 * perm[q] + 1];
          p.out_scores[begin + q] = scores[perm[q]];
        }
        fill_missing_runs(found, count, p.out_spans + 2 * begin, p.out_scores + begin);
      }
    }
  });
}

template <typename T>
void io_start_end_cpu(const StartEndParams<T>& p) {
  const int64_t batch = p.rows.batch, steps = p.rows.steps;
  parallel_for(op_costs::loop_cost(op_costs::kIoStartEnd, batch, steps), [&](int64_t b) {
    const RowView<T> r = p.rows.row(b);
    for (int64_t t = 0; t < steps; ++t)
      start_end_at(r, t, &p.out_start[b * steps + t], &p.out_end[b * steps + t]);
  });
}

template void io_count_cpu<float>(const SpansParams<float>&);
template void io_count_cpu<double>(const SpansParams<double>&);
template void io_fill_cpu<float>(const SpansParams<float>&);
template void io_fill_cpu<double>(const SpansParams<double>&);
template void io_start_end_cpu<float>(const StartEndParams<float>&);
template void io_start_end_cpu<double>(const StartEndParams<double>&);

}  // namespace io_tags
}  // namespace fastvqa
