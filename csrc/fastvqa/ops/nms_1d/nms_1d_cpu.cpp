// SPDX-License-Identifier: Apache-2.0
// CPU 1-D NMS: groups in parallel; per group a sort by the shared total order
// and the greedy scan (hard), or the sequential soft-NMS of nms_1d_math.h.
#include <algorithm>
#include <cstring>
#include <vector>

#include "fastvqa/ops/nms_1d/nms_1d.h"

namespace fastvqa {
namespace nms_1d {

namespace {

// Greedy hard NMS of one group; `order` is scratch for the group's size.
// Cost O(n log n + n * kept): a candidate is compared with the kept spans only.
template <typename T>
int64_t hard_group(const Params<T>& p, const Group<T>& g, int64_t* order) {
  const int64_t n = g.end - g.begin;
  for (int64_t q = 0; q < n; ++q) order[q] = g.begin + q;
  std::sort(order, order + n, [&](int64_t a, int64_t b) { return g.before(a, b); });
  int64_t* keep = p.sel_keep + g.begin;
  T* kept_scores = p.sel_scores + g.begin;
  int64_t count = 0;
  for (int64_t q = 0; q < n; ++q) {
    const int64_t k = order[q];
    if (!score_alive(g.score(k), p.score_threshold)) continue;
    const T ks = g.start(k), ke = g.stop(k);
    bool kept = true;
    for (int64_t c = 0; c < count && kept; ++c)
      kept = !suppresses(span_iou(g.start(keep[c]), g.stop(keep[c]), ks, ke), p.iou_threshold);
    if (kept) {
      keep[count] = k;
      kept_scores[count] = g.score(k);
      ++count;
    }
  }
  return count;
}

}  // namespace

template <typename T>
void nms_1d_cpu_select(const Params<T>& p) {
  int64_t largest = 0;
  for (int64_t g = 0; g < p.groups; ++g)
    largest = std::max(largest, p.group_begin(g + 1) - p.group_begin(g));
  const int64_t groups = p.groups;
#pragma omp parallel if (groups > 1 && p.n >= 2048)
  {
    std::vector<int64_t> order(largest);
    std::vector<T> cur(p.method == Method::kHard ? 0 : largest);
    // Group sizes vary, so groups are handed out one at a time.
#pragma omp for schedule(dynamic, 1)
    for (int64_t gi = 0; gi < groups; ++gi) {
      const Group<T> g = p.group(gi);
      if (p.method == Method::kHard) {
        p.counts[gi] = hard_group(p, g, order.data());
      } else {
        p.counts[gi] = soft_nms_group(g, p.method, p.iou_threshold, p.sigma, p.score_threshold,
                                      order.data(), cur.data(), p.sel_keep + g.begin,
                                      p.sel_scores + g.begin);
      }
    }
  }
}

template <typename T>
void nms_1d_cpu_gather(const Params<T>& p, const int64_t* out_offsets, int64_t* keep, T* scores) {
  for (int64_t g = 0; g < p.groups; ++g) {
    const int64_t begin = p.group_begin(g), count = p.counts[g];
    std::memcpy(keep + out_offsets[g], p.sel_keep + begin, count * sizeof(int64_t));
    std::memcpy(scores + out_offsets[g], p.sel_scores + begin, count * sizeof(T));
  }
}

template void nms_1d_cpu_select<float>(const Params<float>&);
template void nms_1d_cpu_select<double>(const Params<double>&);
template void nms_1d_cpu_gather<float>(const Params<float>&, const int64_t*, int64_t*, float*);
template void nms_1d_cpu_gather<double>(const Params<double>&, const int64_t*, int64_t*,
                                        double*);

}  // namespace nms_1d
}  // namespace fastvqa
