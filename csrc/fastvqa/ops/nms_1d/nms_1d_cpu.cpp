// SPDX-License-Identifier: Apache-2.0
// CPU 1-D NMS: groups in parallel; per group a sort by the shared total order
// and the greedy scan (hard, with the kept spans indexed by start: see
// hard_group), or the sequential soft-NMS of nms_1d_math.h.
#include <algorithm>
#include <cmath>
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

// The plain greedy loop runs while fewer spans than this are kept (each
// candidate costs at most this many IoUs, about what the indexed path costs
// per candidate); from there on the group takes the indexed path.
constexpr int64_t kPlainKeptMax = 64;

// Per-thread scratch of hard NMS, reused across groups.
template <typename T>
struct HardScratch {
  std::vector<Key<T>> keys;     // the group in rank order
  std::vector<int64_t> by_start;  // positions in keys of the indexed spans, by start
  std::vector<int64_t> leaf;    // position in keys -> its leaf in the tree, or -1
  std::vector<T> leaf_start;    // leaf -> start (ascending)
  std::vector<T> leaf_end;      // leaf -> end if kept, else -inf
  std::vector<T> tree;          // max end of the kept spans under each node (-inf: none)
  std::vector<int64_t> kept;    // positions in keys of the kept spans
  std::vector<int64_t> odd;     // kept spans with an infinite (not NaN) endpoint
};

// Writes the group's keys in rank order (copied once, see Key).
template <typename T>
void sorted_keys(const Group<T>& g, std::vector<Key<T>>& keys) {
  const int64_t n = g.end - g.begin;
  keys.resize(n);
  for (int64_t q = 0; q < n; ++q) {
    const int64_t k = g.begin + q;
    keys[q] = Key<T>{g.score(k), g.start(k), g.stop(k), k};
  }
  std::sort(keys.begin(), keys.end(), [](const Key<T>& a, const Key<T>& b) {
    return ranks_before(a.score, a.start, a.stop, a.index, b.score, b.start, b.stop, b.index);
  });
}

// The plain greedy loop: each candidate against every kept span, O(n * kept),
// from candidate 0 until `max_kept` spans are kept (max_kept < 0: to the end).
// The kept keys move to the front of `keys` (count <= q), where the scan finds
// them. Returns the count and sets *next to the first candidate not taken.
template <typename T>
int64_t hard_plain(const Params<T>& p, std::vector<Key<T>>& keys, int64_t max_kept,
                   int64_t* keep, T* kept_scores, int64_t* next) {
  const int64_t n = static_cast<int64_t>(keys.size());
  int64_t count = 0, q = 0;
  for (; q < n && count != max_kept; ++q) {
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
  *next = q;
  return count;
}

// Leaves per block: the tree holds the max end of each block of kBlock
// leaves, which are scanned in a row (fewer tree levels, contiguous reads).
constexpr int64_t kBlock = 8;

// Does a kept span under tree node `node` (blocks [lo, hi)) among the leaves
// [0, limit) suppress the candidate c? leaf_end holds each kept span's end at
// its leaf (-inf elsewhere) and the tree each block's max, so a node whose max
// end is <= c.start holds no span that ends after c starts (see nms_1d_math.h) and
// is skipped whole.
template <typename T>
bool tree_suppresses(const std::vector<T>& tree, const std::vector<T>& leaf_start,
                     const std::vector<T>& leaf_end, int64_t size, int64_t node, int64_t lo,
                     int64_t hi, int64_t limit, const Key<T>& c, double iou_threshold) {
  if (lo * kBlock >= limit || !(tree[node] > c.start)) return false;
  if (node >= size) {  // a block: kept spans starting before c ends, ending after c starts
    const int64_t first = lo * kBlock, last = std::min(first + kBlock, limit);
    for (int64_t l = last - 1; l >= first; --l)
      if (leaf_end[l] > c.start &&
          suppresses(span_iou(leaf_start[l], leaf_end[l], c.start, c.stop), iou_threshold))
        return true;
    return false;
  }
  const int64_t mid = lo + (hi - lo) / 2;
  // The right half first: spans starting closer to c suppress it more often.
  return tree_suppresses(tree, leaf_start, leaf_end, size, 2 * node + 1, mid, hi, limit, c,
                         iou_threshold) ||
         tree_suppresses(tree, leaf_start, leaf_end, size, 2 * node, lo, mid, limit, c,
                         iou_threshold);
}

// Greedy hard NMS of one group: the same kept spans in the same order as the
// plain loop, in O(n log n) when each candidate overlaps O(1) kept spans.
//
// The plain loop runs while fewer than kPlainKeptMax spans are kept (small
// groups end there), then the rest of the group takes the indexed path, with
// the spans kept so far (keys[0, count)) and the candidates left (keys[q, n)):
//
// A candidate with a NaN endpoint has a NaN IoU with every span, so nothing
// suppresses it; one with an infinite endpoint is compared with every kept
// span (the plain loop; rare). A finite candidate can be suppressed only by
// kept spans with an infinite endpoint (the `odd` list, compared one by one)
// and, by the overlap rule in nms_1d_math.h (iou_threshold >= 0), by finite kept
// spans of positive length that start before it ends and end after it starts.
// Those are indexed: every finite span of positive length has a leaf of a
// max-end segment tree, the leaves ordered by start; a kept span writes its
// end at its leaf. The leaves starting before the candidate's end are a
// prefix found by binary search, and the tree descends only into nodes whose
// max end is after the candidate's start, so it visits O(log n) nodes per
// kept span that overlaps the candidate (and stops at the first suppressor).
// Whichever kept span is found first, the decision is the exact
// suppresses(span_iou(kept, candidate)) of the plain loop.
template <typename T>
int64_t hard_group(const Params<T>& p, const Group<T>& g, HardScratch<T>& s) {
  const int64_t n = g.end - g.begin;
  int64_t* keep = p.sel_keep + g.begin;
  T* kept_scores = p.sel_scores + g.begin;
  std::vector<Key<T>>& keys = s.keys;
  sorted_keys(g, keys);
  // A negative threshold (IoU 0 suppresses) has no overlap test to index.
  int64_t q0 = 0;
  int64_t count = hard_plain(p, keys, p.iou_threshold >= 0 ? kPlainKeptMax : -1, keep,
                             kept_scores, &q0);
  if (q0 == n) return count;

  auto indexed = [&keys](int64_t q) {
    return finite_span(keys[q].start, keys[q].stop) && keys[q].start < keys[q].stop;
  };
  s.by_start.clear();
  // The spans kept so far (keys[0, count)) and the candidates left (keys[q0, n)).
  for (int64_t q = 0; q < count; ++q)
    if (indexed(q)) s.by_start.push_back(q);
  for (int64_t q = q0; q < n; ++q)
    if (indexed(q)) s.by_start.push_back(q);
  std::sort(s.by_start.begin(), s.by_start.end(),
            [&keys](int64_t a, int64_t b) { return keys[a].start < keys[b].start; });
  const int64_t m = static_cast<int64_t>(s.by_start.size());
  int64_t size = 1;
  while (size * kBlock < m) size *= 2;
  s.leaf.assign(n, -1);
  s.leaf_start.resize(size * kBlock);
  s.leaf_end.assign(size * kBlock, -T(INFINITY));
  for (int64_t l = 0; l < m; ++l) {
    s.leaf[s.by_start[l]] = l;
    s.leaf_start[l] = keys[s.by_start[l]].start;
  }
  const auto starts_end = s.leaf_start.begin() + m;
  s.tree.assign(2 * size, -T(INFINITY));
  s.kept.clear();
  s.odd.clear();
  auto add_kept = [&](int64_t q) {
    const Key<T>& c = keys[q];
    s.kept.push_back(q);
    if (s.leaf[q] >= 0) {
      // Ends only grow along the path, so the update stops where they already reach.
      s.leaf_end[s.leaf[q]] = c.stop;
      for (int64_t node = size + s.leaf[q] / kBlock; node >= 1 && s.tree[node] < c.stop;
           node /= 2)
        s.tree[node] = c.stop;
    } else if (!is_nan(c.start) && !is_nan(c.stop) && !finite_span(c.start, c.stop)) {
      s.odd.push_back(q);
    }
  };
  for (int64_t j = 0; j < count; ++j) add_kept(j);

  for (int64_t q = q0; q < n; ++q) {
    const Key<T>& c = keys[q];
    if (!score_alive(c.score, p.score_threshold)) continue;
    bool kept = true;
    if (is_nan(c.start) || is_nan(c.stop)) {
      // span_iou is NaN: never suppressed.
    } else if (!finite_span(c.start, c.stop)) {
      for (size_t j = 0; j < s.kept.size() && kept; ++j) {
        const Key<T>& k = keys[s.kept[j]];
        kept = !suppresses(span_iou(k.start, k.stop, c.start, c.stop), p.iou_threshold);
      }
    } else {
      for (size_t j = 0; j < s.odd.size() && kept; ++j) {
        const Key<T>& k = keys[s.odd[j]];
        kept = !suppresses(span_iou(k.start, k.stop, c.start, c.stop), p.iou_threshold);
      }
      if (kept && c.start < c.stop) {
        const int64_t limit = std::lower_bound(s.leaf_start.begin(), starts_end, c.stop) -
                              s.leaf_start.begin();
        kept = !tree_suppresses(s.tree, s.leaf_start, s.leaf_end, size, 1, 0, size, limit, c,
                                p.iou_threshold);
      }
    }
    if (!kept) continue;
    keep[count] = c.index;
    kept_scores[count] = c.score;
    ++count;
    add_kept(q);
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
    HardScratch<T> hard;
    std::vector<int64_t> order(p.method == Method::kHard ? 0 : largest);
    std::vector<T> cur(p.method == Method::kHard ? 0 : largest);
    // Group sizes vary, so groups are handed out one at a time.
#pragma omp for schedule(dynamic, 1)
    for (int64_t gi = 0; gi < groups; ++gi) {
      const Group<T> g = p.group(gi);
      if (p.method == Method::kHard) {
        p.counts[gi] = hard_group(p, g, hard);
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
