// SPDX-License-Identifier: Apache-2.0
// CPU 1-D NMS: groups in parallel; per group a sort by the shared total order
// and the greedy scan (hard, with the kept spans indexed in time buckets: see
// hard_group), or the sequential soft-NMS of nms_1d_math.h.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "fastvqa/common/op_costs.h"
#include "fastvqa/common/parallel.h"
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

// Writes the group's keys in rank order (copied once, see Key).
template <typename T>
void sorted_keys(const Group<T>& g, std::vector<Key<T>>& keys) {
  const int64_t n = g.end - g.begin;
  keys.resize(n);
  for (int64_t q = 0; q < n; ++q) {
    const int64_t k = g.begin + q;
    keys[q] = Key<T>{g.score(k), g.start(k), g.stop(k), k};
  }
  const Ties ties = g.ties;
  std::sort(keys.begin(), keys.end(), [ties](const Key<T>& a, const Key<T>& b) {
    return ranks_before(ties, a.score, a.start, a.stop, a.index, b.score, b.start, b.stop,
                        b.index);
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

// A max-end segment tree over spans ordered by start: leaf l holds the l-th
// span's start and, once that span is kept, its end (-inf before); the tree
// holds the max end of each block of kBlock leaves and above. The leaves
// starting before a candidate's end are a prefix (binary search), and the walk
// descends only into nodes whose max end is after the candidate's start, so it
// visits O(log n) nodes per kept span of the tree that overlaps the candidate
// (and stops at the first suppressor).
constexpr int64_t kBlock = 8;

template <typename T>
struct EndTree {
  bool built = false;
  int64_t size = 1;             // blocks of the bottom level (a power of 2)
  int64_t leaves = 0;
  std::vector<int64_t> leaf;    // position in keys -> its leaf, or -1
  std::vector<T> leaf_start;    // leaf -> start (ascending)
  std::vector<T> leaf_end;      // leaf -> end if kept, else -inf
  std::vector<T> tree;          // max end of the kept spans under each node (-inf: none)

  // Leaves for the spans at positions `pos` of keys (reordered here by start).
  void build(const std::vector<Key<T>>& keys, std::vector<int64_t>& pos) {
    std::sort(pos.begin(), pos.end(),
              [&keys](int64_t a, int64_t b) { return keys[a].start < keys[b].start; });
    leaves = static_cast<int64_t>(pos.size());
    size = 1;
    while (size * kBlock < leaves) size *= 2;
    leaf.assign(keys.size(), -1);
    leaf_start.resize(size * kBlock);
    leaf_end.assign(size * kBlock, -T(INFINITY));
    for (int64_t l = 0; l < leaves; ++l) {
      leaf[pos[l]] = l;
      leaf_start[l] = keys[pos[l]].start;
    }
    tree.assign(2 * size, -T(INFINITY));
    built = true;
  }
  void clear() { built = false; }

  // Span q (key c) was kept: its end goes to its leaf, if it has one.
  void insert(const Key<T>& c, int64_t q) {
    if (!built || leaf[q] < 0) return;
    leaf_end[leaf[q]] = c.stop;
    // Ends only grow along the path, so the update stops where they already reach.
    for (int64_t node = size + leaf[q] / kBlock; node >= 1 && tree[node] < c.stop; node /= 2)
      tree[node] = c.stop;
  }

  // Does a kept span of the tree suppress the finite candidate c?
  bool suppressed(const Key<T>& c, double iou_threshold) const {
    if (!built || !(tree[1] > c.start)) return false;
    const int64_t limit =
        std::lower_bound(leaf_start.begin(), leaf_start.begin() + leaves, c.stop) -
        leaf_start.begin();
    return walk(1, 0, size, limit, c, iou_threshold);
  }

 private:
  // Node `node` covers blocks [lo, hi); only leaves [0, limit) start before c ends.
  bool walk(int64_t node, int64_t lo, int64_t hi, int64_t limit, const Key<T>& c,
            double iou_threshold) const {
    if (lo * kBlock >= limit || !(tree[node] > c.start)) return false;
    if (node >= size) {  // a block: kept spans starting before c ends, ending after c starts
      const int64_t first = lo * kBlock, last = std::min(first + kBlock, limit);
      for (int64_t l = last - 1; l >= first; --l)
        if (leaf_end[l] > c.start &&
            suppresses(plain_span_iou(leaf_start[l], leaf_end[l], c.start, c.stop), iou_threshold))
          return true;
      return false;
    }
    const int64_t mid = lo + (hi - lo) / 2;
    // The right half first: spans starting closer to c suppress it more often.
    return walk(2 * node + 1, mid, hi, limit, c, iou_threshold) ||
           walk(2 * node, lo, mid, limit, c, iou_threshold);
  }
};

// Buckets of equal width in time over the group's finite spans. bucket(x) is
// a composition of monotone roundings (x - origin, times inv, truncation,
// clamp), so x <= y gives bucket(x) <= bucket(y) exactly, whatever the
// rounding: two spans that overlap (each starts before the other ends) share
// the bucket of the later start, which lies in both spans' bucket ranges
// [bucket(start), bucket(end)].
struct Grid {
  double origin = 0, inv = 0;
  int64_t buckets = 0;  // 0: no grid (every span takes the trees)
  int64_t bucket(double x) const {
    const double t = (x - origin) * inv;
    if (!(t > 0)) return 0;
    return t >= static_cast<double>(buckets) ? buckets - 1 : static_cast<int64_t>(t);
  }
};

// A kept span as stored in each bucket it covers, with its first bucket (so a
// candidate that scans several buckets tests it once, at the first it shares).
template <typename T>
struct Slot {
  T start, stop;
  int64_t first;
};

// A bucket's kept spans: slots [begin, begin + used) of the arena, with room
// for `room`. A full bucket moves to the arena's end with twice the room, so
// a bucket's spans stay contiguous and the arena stays within a small factor
// of the spans stored: reserving room for every span that could be kept
// would spread the few kept ones over many more pages (TLB misses) in large
// groups. One struct, so a candidate's bucket costs one cache miss before its
// slots.
struct Bucket {
  int64_t begin, used, room;
};

// Prefetch (for reading) where the compiler offers it.
inline void prefetch(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p);
#else
  (void)p;
#endif
}

// Candidates are taken in rank order, which is random in time, so each one's
// buckets are a cache miss in a large group: the bucket headers of the
// candidate kAhead places ahead, and the first slots of the one kAhead / 2
// ahead, are prefetched (two steps, as the slots' address is in the header).
constexpr int64_t kAhead = 16;

// A kept span covering at most this many buckets is stored in them; longer
// ones go to a tree (rare: the bucket width is the median span length).
constexpr int64_t kStoredBuckets = 4;
// A candidate covering at most this many buckets scans them; a longer one
// asks a tree of every kept span instead (built when first needed).
constexpr int64_t kScannedBuckets = 64;

// Per-thread scratch of hard NMS, reused across groups.
template <typename T>
struct HardScratch {
  std::vector<Key<T>> keys;        // the group in rank order
  std::vector<int64_t> indexed;    // positions in keys of the indexed spans
  std::vector<double> lengths;     // their lengths (for the median)
  std::vector<Bucket> buckets;
  std::vector<Slot<T>> slots;
  std::vector<int64_t> pos;        // scratch: a tree's spans
  EndTree<T> long_tree;            // kept spans covering > kStoredBuckets buckets
  EndTree<T> all_tree;             // every kept indexed span (for long candidates)
  std::vector<int64_t> kept;       // positions in keys of the kept spans
  std::vector<int64_t> odd;        // kept spans with an infinite (not NaN) endpoint
};

// The bucket grid of the indexed spans keys[s.indexed]: the width is their
// median length (a typical span covers one or two buckets, and a candidate
// meets about as many kept spans per bucket as it overlaps), with at most one
// bucket per span. No grid when the extent overflows or is degenerate.
template <typename T>
Grid make_grid(HardScratch<T>& s) {
  Grid grid;
  const int64_t m = static_cast<int64_t>(s.indexed.size());
  if (m == 0) return grid;
  double lo = INFINITY, hi = -INFINITY;
  s.lengths.resize(m);
  for (int64_t i = 0; i < m; ++i) {
    const Key<T>& k = s.keys[s.indexed[i]];
    lo = std::min(lo, static_cast<double>(k.start));
    hi = std::max(hi, static_cast<double>(k.stop));
    s.lengths[i] = static_cast<double>(k.stop) - static_cast<double>(k.start);
  }
  std::nth_element(s.lengths.begin(), s.lengths.begin() + m / 2, s.lengths.end());
  const double width = s.lengths[m / 2], extent = hi - lo;
  if (!(width > 0) || !std::isfinite(width) || !(extent > 0) || !std::isfinite(extent))
    return grid;
  const double buckets = std::min(std::ceil(extent / width), static_cast<double>(m));
  grid.origin = lo;
  grid.buckets = std::max<int64_t>(1, static_cast<int64_t>(buckets));
  grid.inv = static_cast<double>(grid.buckets) / extent;
  if (!std::isfinite(grid.inv) || !(grid.inv > 0)) grid.buckets = 0;
  return grid;
}

// Greedy hard NMS of one group: the same kept spans in the same order as the
// plain loop, in O(n log n) (the sort) when each candidate overlaps O(1) kept
// spans.
//
// The plain loop runs while fewer than kPlainKeptMax spans are kept (small
// groups end there), then the rest of the group takes the indexed path, with
// the spans kept so far (keys[0, count)) and the candidates left (keys[q, n)).
// The decision stays the plain loop's: a candidate is dropped iff some kept
// span suppresses it by suppresses(span_iou(kept, candidate)); the index only
// skips kept spans that cannot (the order of the tests does not matter):
//
// A candidate with a NaN endpoint has a NaN IoU with every span, so nothing
// suppresses it; one with an infinite or huge endpoint (not plain_span) is
// compared with every kept span (the plain loop; rare). A plain candidate can
// be suppressed only by kept spans that are not plain (the `odd` list,
// compared one by one) and, by the overlap rule in nms_1d_math.h
// (iou_threshold >= 0), by plain kept spans of positive length ("indexed") that overlap it. Those are found
// in the bucket grid (Grid: an overlapping pair shares a bucket), where each
// kept indexed span covering <= kStoredBuckets buckets is stored in all of
// them; longer kept spans are in long_tree (EndTree). A candidate covering
// <= kScannedBuckets buckets scans its buckets and asks long_tree; a longer
// one asks all_tree, which holds every kept indexed span.
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

  auto is_indexed = [&keys](int64_t q) {
    return plain_span(keys[q].start, keys[q].stop) && keys[q].start < keys[q].stop;
  };
  // The spans kept so far (keys[0, count)) and the candidates left (keys[q0, n)).
  s.indexed.clear();
  for (int64_t q = 0; q < count; ++q)
    if (is_indexed(q)) s.indexed.push_back(q);
  for (int64_t q = q0; q < n; ++q)
    if (is_indexed(q)) s.indexed.push_back(q);
  const Grid grid = make_grid(s);
  // [first, last] buckets of an indexed span; without a grid every span is long.
  auto range = [&grid](const Key<T>& k, int64_t* first, int64_t* last) {
    if (grid.buckets == 0) {
      *first = 0;
      *last = kScannedBuckets;  // > both limits
      return;
    }
    *first = grid.bucket(static_cast<double>(k.start));
    *last = grid.bucket(static_cast<double>(k.stop));
  };

  // The buckets start empty; the long spans get their tree.
  std::vector<Bucket>& heads = s.buckets;
  heads.assign(grid.buckets, Bucket{0, 0, 0});
  s.slots.clear();
  s.pos.clear();
  for (const int64_t q : s.indexed) {
    int64_t b0, b1;
    range(keys[q], &b0, &b1);
    if (b1 - b0 >= kStoredBuckets) s.pos.push_back(q);
  }
  s.long_tree.clear();
  if (!s.pos.empty()) s.long_tree.build(keys, s.pos);
  s.all_tree.clear();

  auto store = [&s](Bucket& h, const Slot<T>& slot) {
    if (h.used == h.room) {
      const int64_t begin = static_cast<int64_t>(s.slots.size());
      h.room = std::max<int64_t>(4, 2 * h.room);
      s.slots.resize(begin + h.room);
      std::copy(s.slots.begin() + h.begin, s.slots.begin() + h.begin + h.used,
                s.slots.begin() + begin);
      h.begin = begin;
    }
    s.slots[h.begin + h.used++] = slot;
  };
  s.kept.clear();
  s.odd.clear();
  auto add_kept = [&](int64_t q) {
    const Key<T>& c = keys[q];
    s.kept.push_back(q);
    if (is_indexed(q)) {
      int64_t b0, b1;
      range(c, &b0, &b1);
      if (b1 - b0 < kStoredBuckets) {
        for (int64_t b = b0; b <= b1; ++b)
          store(heads[b], Slot<T>{c.start, c.stop, b0});
      } else {
        s.long_tree.insert(c, q);
      }
      s.all_tree.insert(c, q);
    } else if (!is_nan(c.start) && !is_nan(c.stop) && !plain_span(c.start, c.stop)) {
      s.odd.push_back(q);
    }
  };
  for (int64_t j = 0; j < count; ++j) add_kept(j);

  // Does a kept indexed span suppress the indexed candidate c?
  auto indexed_suppressed = [&](const Key<T>& c) {
    int64_t b0, b1;
    range(c, &b0, &b1);
    if (b1 - b0 >= kScannedBuckets) {
      if (!s.all_tree.built) {  // first long candidate: index every kept span
        s.pos = s.indexed;
        s.all_tree.build(keys, s.pos);
        for (const int64_t j : s.kept) s.all_tree.insert(keys[j], j);
      }
      return s.all_tree.suppressed(c, p.iou_threshold);
    }
    for (int64_t b = b0; b <= b1; ++b) {
      const Slot<T>* slot = s.slots.data() + heads[b].begin;
      const Slot<T>* end = slot + heads[b].used;
      for (; slot != end; ++slot)
        if ((b == b0 || slot->first == b) &&
            suppresses(plain_span_iou(slot->start, slot->stop, c.start, c.stop), p.iou_threshold))
          return true;
    }
    return s.long_tree.suppressed(c, p.iou_threshold);
  };

  // The first bucket of candidate r, or -1 (not indexed, or no grid).
  auto first_bucket = [&](int64_t r) -> int64_t {
    if (r >= n || grid.buckets == 0 || !is_indexed(r)) return -1;
    return grid.bucket(static_cast<double>(keys[r].start));
  };
  for (int64_t q = q0; q < n; ++q) {
    const int64_t far = first_bucket(q + kAhead), near = first_bucket(q + kAhead / 2);
    if (far >= 0) prefetch(&heads[far]);
    if (near >= 0 && heads[near].used > 0) {
      const Bucket& h = heads[near];
      prefetch(&s.slots[h.begin]);
      const int64_t line = 64 / static_cast<int64_t>(sizeof(Slot<T>));
      if (h.used > line) prefetch(&s.slots[h.begin + line]);
    }
    const Key<T>& c = keys[q];
    if (!score_alive(c.score, p.score_threshold)) continue;
    bool kept = true;
    if (is_nan(c.start) || is_nan(c.stop)) {
      // span_iou is NaN: never suppressed.
    } else if (!plain_span(c.start, c.stop)) {
      for (size_t j = 0; j < s.kept.size() && kept; ++j) {
        const Key<T>& k = keys[s.kept[j]];
        kept = !suppresses(span_iou(k.start, k.stop, c.start, c.stop), p.iou_threshold);
      }
    } else {
      for (size_t j = 0; j < s.odd.size() && kept; ++j) {
        const Key<T>& k = keys[s.odd[j]];
        kept = !suppresses(span_iou(k.start, k.stop, c.start, c.stop), p.iou_threshold);
      }
      if (kept && c.start < c.stop) kept = !indexed_suppressed(c);
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
  const LoopCost cost = op_costs::loop_cost(op_costs::kNms1d, groups, double(p.n) / double(groups));
  parallel_rows(cost, [&](Chunks& chunks) {
    HardScratch<T> hard;
    std::vector<int64_t> order(p.method == Method::kHard ? 0 : largest);
    std::vector<T> cur(p.method == Method::kHard ? 0 : largest);
    // Group sizes vary, so groups are handed out one at a time.
    int64_t lo, hi;
    while (chunks.next(&lo, &hi)) {
      for (int64_t gi = lo; gi < hi; ++gi) {
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
  });
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
