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

// A span's sort key, copied once from the caller's arrays: the sort and the
// greedy scan read only these copies. Sorting by comparisons that re-read the
// inputs would let another thread writing them meanwhile make the comparator
// inconsistent, and std::sort may then run past the range it sorts.
template <typename T>
struct Key {
  T score, start, stop;
  int64_t index;  // global
};

// Greedy hard NMS of one group; `keys` is scratch for the group's size.
// Cost O(n log n + n * kept): a candidate is compared with the kept spans only.
template <typename T>
int64_t hard_group(const Params<T>& p, const Group<T>& g, std::vector<Key<T>>& keys) {
  const int64_t n = g.end - g.begin;
  keys.resize(n);
  for (int64_t q = 0; q < n; ++q) {
    const int64_t k = g.begin + q;
    keys[q] = Key<T>{g.score(k), g.start(k), g.stop(k), k};
  }
  std::sort(keys.begin(), keys.end(), [](const Key<T>& a, const Key<T>& b) {
    return ranks_before(a.score, a.start, a.stop, a.index, b.score, b.start, b.stop, b.index);
  });
  int64_t* keep = p.sel_keep + g.begin;
  T* kept_scores = p.sel_scores + g.begin;
  // Kept keys move to the front of `keys` (count <= q), where the scan finds them.
  int64_t count = 0;
  for (int64_t q = 0; q < n; ++q) {
    const Key<T> c = keys[q];
    if (!score_alive(c.score, p.score_threshold)) continue;
    bool kept = true;
    for (int64_t m = 0; m < count && kept; ++m)
      kept = !suppresses(span_iou(keys[m].start, keys[m].stop, c.start, c.stop), p.iou_threshold);
    if (kept) {
      keys[count] = c;
      keep[count] = c.index;
      kept_scores[count] = c.score;
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
    std::vector<Key<T>> keys;
    std::vector<int64_t> order(p.method == Method::kHard ? 0 : largest);
    std::vector<T> cur(p.method == Method::kHard ? 0 : largest);
    // Group sizes vary, so groups are handed out one at a time.
#pragma omp for schedule(dynamic, 1)
    for (int64_t gi = 0; gi < groups; ++gi) {
      const Group<T> g = p.group(gi);
      if (p.method == Method::kHard) {
        p.counts[gi] = hard_group(p, g, keys);
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
    if (count == 0) continue;  // the pointers may be null then (empty arrays)
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
