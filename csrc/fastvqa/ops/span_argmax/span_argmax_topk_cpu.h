// SPDX-License-Identifier: Apache-2.0
// CPU top-k span decoding by best-first search, O(n log w + k log n) per row
// (n starts, w = max_len - min_len + 1 the widest start window), whatever
// max_len is.
//
// Every end j owns the window of starts it may pair with. A candidate is an
// end j with a sub-window [a, c] of its starts, ranked by the best span inside
// it; the candidates' sub-windows partition the spans not yet returned. The
// best candidate's best span is therefore the best remaining span: it is
// returned and its sub-window splits into the two parts around the chosen
// start, which become candidates (the "k best subarrays" frontier). A
// candidate's score is (window maximum of the start scores) + e_j, exact
// because rounded addition is monotone; its start is only found when it
// reaches the top of the heap (until then the sub-window's first start stands
// in for it, a bound that ranks no later than the true one), so ends that
// never reach the top cost O(1) after the window maxima. Before the search,
// the ends whose best sum falls below the k-th best end's are dropped: k
// other ends each hold a better span, so the heap holds about k ends.
//
// Window maxima and "first start at least v" both come from one sparse table
// (levels of power-of-two window maxima, NaN read as -inf). The exact start
// of a candidate is the first start in its sub-window whose sum rounds to the
// candidate's score: the scores that do form an interval [v_lo, max], and
// v_lo is found by bisection on the float's bits when rounding can merge
// neighbours (when e_j dwarfs the start scores).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "fastvqa/common/scratch.h"
#include "fastvqa/ops/span_argmax/span_argmax_math.h"

namespace fastvqa {
namespace span_argmax {

// Unsigned integers in the same order as the floats they encode (-0 just
// below +0), for bisection over float values.
template <typename T, typename Bits>
struct OrderedBits {
  static constexpr Bits kSign = Bits(1) << (8 * sizeof(Bits) - 1);
  static Bits key(T x) {
    Bits u;
    std::memcpy(&u, &x, sizeof(T));
    return (u & kSign) ? ~u : (u | kSign);
  }
  static T value(Bits k) {
    const Bits u = (k & kSign) ? (k & ~kSign) : ~k;
    T x;
    std::memcpy(&x, &u, sizeof(T));
    return x;
  }
};
template <typename T>
struct OrderedFor;
template <>
struct OrderedFor<float> : OrderedBits<float, uint32_t> {};
template <>
struct OrderedFor<double> : OrderedBits<double, uint64_t> {};

// The smallest start score v with v + e == target, given the window maximum m
// (m + e == target, target neither NaN nor -inf). Sums are monotone in v, so
// every v in [v_lo, m] reaches target and nothing below does.
template <typename T>
T lowest_start_reaching(T m, T e, T target) {
  const T lowest = std::numeric_limits<T>::lowest();
  if (e == std::numeric_limits<T>::infinity()) return lowest;  // any v > -inf
  if (next_down(m) + e < target) return m;  // the common case: no neighbour merges
  if (lowest + e == target) return lowest;
  using O = OrderedFor<T>;
  auto lo = O::key(lowest), hi = O::key(m);  // P(lo) false, P(hi) true
  while (hi - lo > 1) {
    const auto mid = lo + (hi - lo) / 2;
    if (O::value(mid) + e == target) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return O::value(hi);
}

inline int floor_log2(int64_t x) {  // x >= 1
#if defined(__GNUC__) || defined(__clang__)
  return 63 - __builtin_clzll(static_cast<unsigned long long>(x));
#else
  int l = 0;
  while ((int64_t(2) << l) <= x) ++l;
  return l;
#endif
}

template <typename T>
struct TopkCand {
  T score;      ///< the best sum in [a, c] (-inf where only -inf sums are left)
  T max_start;  ///< the largest start score in [a, c] (NaN read as -inf)
  int64_t i;    ///< the best start once `exact`, else a, a bound that ranks no later
  int64_t j;    ///< the end
  int64_t a, c; ///< the sub-window of starts, inclusive
  bool exact;
};

// Per-thread scratch of the best-first top-k, reused across rows.
template <typename T>
struct TopkSearch {
  std::vector<T> table;                      // levels x n window maxima; level 0: the starts
  std::vector<int64_t> next_valid, next_fin;  // first start >= i that is not NaN / nor +inf
  std::vector<TopkCand<T>> heap;
  std::vector<T> end_best, kth;               // per end: best sum (NaN: none); selection buffer
  int64_t bytes() const { return vector_bytes(table, next_valid, next_fin, heap, end_best, kth); }
  int64_t n = 0;
  int levels = 0;
  bool special = false;  // some start is NaN or +inf (else next_valid/next_fin are the identity)

  int64_t first_valid(int64_t i) const { return special ? next_valid[i] : i; }
  int64_t first_fin(int64_t i) const { return special ? next_fin[i] : i; }

  const T* level(int l) const { return table.data() + static_cast<int64_t>(l) * n; }

  // Largest start score over [a, c] (a <= c, c - a < 2^levels).
  T range_max(int64_t a, int64_t c) const {
    const int l = floor_log2(c - a + 1);
    const T* lv = level(l);
    return plain_max_of(lv[a], lv[c - (int64_t(1) << l) + 1]);
  }

  static T plain_max_of(T x, T y) { return y > x ? y : x; }

  // The first start in [a, c] whose score is >= v (v > -inf), or -1: skips
  // whole power-of-two blocks below v, largest first.
  int64_t first_at_least(int64_t a, int64_t c, T v) const {
    int64_t p = a;
    for (int l = levels - 1; l >= 0; --l) {
      const int64_t w = int64_t(1) << l;
      if (p + w - 1 <= c && level(l)[p] < v) p += w;
    }
    return p <= c ? p : -1;
  }

  void build(const RowView<T>& r, int64_t n_starts, int64_t width) {
    n = n_starts;
    levels = floor_log2(std::min(width, n)) + 1;
    table.resize(static_cast<size_t>(levels) * n);
    const T neg_inf = -std::numeric_limits<T>::infinity();
    const T pos_inf = std::numeric_limits<T>::infinity();
    T* lv0 = table.data();
    const T* src = r.start;
    const int64_t ss = r.ss;
    int odd = 0;
#pragma omp simd reduction(| : odd)
    for (int64_t i = 0; i < n; ++i) {
      const T v = src[i * ss];
      lv0[i] = v == v ? v : neg_inf;
      odd |= static_cast<int>(!(v == v) || v == pos_inf);
    }
    special = odd != 0;
    if (special) {  // rare (NaN or +inf starts): the "first usable start from i" tables
      next_valid.resize(n + 1);
      next_fin.resize(n + 1);
      next_valid[n] = next_fin[n] = n;
      for (int64_t i = n - 1; i >= 0; --i) {
        const T v = src[i * ss];
        next_valid[i] = is_nan(v) ? next_valid[i + 1] : i;
        next_fin[i] = is_nan(v) || v == pos_inf ? next_fin[i + 1] : i;
      }
    }
    for (int l = 1; l < levels; ++l) {
      const T* prev = table.data() + static_cast<int64_t>(l - 1) * n;
      T* cur = table.data() + static_cast<int64_t>(l) * n;
      const int64_t half = int64_t(1) << (l - 1), count = n - 2 * half + 1;
#pragma omp simd
      for (int64_t i = 0; i < count; ++i) cur[i] = plain_max_of(prev[i], prev[i + half]);
    }
  }

  // The candidate for end j (score e, not NaN) over starts [a, c]; false when
  // no span there has a non-NaN score.
  bool candidate(int64_t j, T e, int64_t a, int64_t c, TopkCand<T>* out) const {
    const T m = range_max(a, c);
    const T neg_inf = -std::numeric_limits<T>::infinity();
    if (m == neg_inf && first_valid(a) > c) return false;  // all NaN
    T score = m + e;
    if (is_nan(score)) {
      // +inf + -inf (-inf + +inf leaves nothing: every start there is -inf):
      // the other usable starts still make -inf spans with this -inf end.
      if (!(e == neg_inf && first_fin(a) <= c)) return false;
      score = neg_inf;
    }
    *out = TopkCand<T>{score, m, a, j, a, c, false};
    return true;
  }

  // The exact best start of a candidate: the first start of its sub-window
  // whose sum with e is the candidate's score.
  int64_t best_start(const TopkCand<T>& cand, T e) const {
    if (cand.score == -std::numeric_limits<T>::infinity())
      return first_fin(cand.a) <= cand.c ? first_fin(cand.a) : -1;  // every usable start ties
    return first_at_least(cand.a, cand.c, lowest_start_reaching(cand.max_start, e, cand.score));
  }
};

// end_best[j] = (largest start score of j's window) + e_j for every end j
// (NaN where e_j is NaN): branch-free sweeps over the sparse table, a running
// maximum for the windows clipped at step 0 and two lookups of one level for
// the full-width ones. Exact where > -inf; a -inf may stand for "no span".
template <typename T>
void best_sum_per_end(const RowView<T>& r, int64_t min_len, int64_t max_len, TopkSearch<T>& ts) {
  T* m = ts.end_best.data();
  const T* lv0 = ts.level(0);
  const int64_t j0 = min_len - 1, j_end = r.length;
  const int64_t j_split = std::max(j0, std::min(max_len - 1, j_end));
  T run = -std::numeric_limits<T>::infinity();
  for (int64_t j = j0; j < j_split; ++j) {  // window [0, j - min_len + 1]
    run = TopkSearch<T>::plain_max_of(run, lv0[j - min_len + 1]);
    m[j] = run + r.end[j * r.es];
  }
  if (j_split >= j_end) return;
  const int64_t width = max_len - min_len + 1;  // full windows [j - max_len + 1, j - min_len + 1]
  const int l = floor_log2(width);
  const T* lv = ts.level(l) - (max_len - 1);  // lv[j] = level l at the window's first start
  const int64_t off = width - (int64_t(1) << l);
  const T* e = r.end;
  const int64_t es = r.es;
#pragma omp simd
  for (int64_t j = j_split; j < j_end; ++j)
    m[j] = TopkSearch<T>::plain_max_of(lv[j], lv[j + off]) + e[j * es];
}

// The k-th largest of the non-NaN end_best[j0 .. j_end), or -inf when there are
// fewer than k. An end whose best sum is below it cannot place a span in the
// top k: k other ends each hold a strictly better span.
template <typename T>
T kth_best_end(TopkSearch<T>& ts, int64_t j0, int64_t j_end, int64_t k) {
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const T* m = ts.end_best.data();
  auto& buf = ts.kth;
  if (k <= 64) {  // a sorted list of the k best: few inserts on most rows
    buf.assign(k, neg_inf);
    int64_t seen = 0;
    for (int64_t j = j0; j < j_end; ++j) {
      const T v = m[j];
      if (is_nan(v)) continue;
      ++seen;
      if (!(v > buf[k - 1])) continue;
      int64_t pos = k - 1;
      while (pos > 0 && v > buf[pos - 1]) {
        buf[pos] = buf[pos - 1];
        --pos;
      }
      buf[pos] = v;
    }
    return seen >= k ? buf[k - 1] : neg_inf;
  }
  buf.clear();
  for (int64_t j = j0; j < j_end; ++j)
    if (!is_nan(m[j])) buf.push_back(m[j]);
  if (static_cast<int64_t>(buf.size()) < k) return neg_inf;
  std::nth_element(buf.begin(), buf.begin() + (k - 1), buf.end(), [](T x, T y) { return x > y; });
  return buf[k - 1];
}

// Heap order: x below y when x ranks after y.
template <typename T>
inline bool ranks_after(const TopkCand<T>& x, const TopkCand<T>& y) {
  return ranks_before(y.score, y.i, y.j, x.score, x.i, x.j);
}

// The exact top-k of one row into out_spans (k x 2) / out_scores (k), best
// first; returns how many were found (fewer than k when the row has fewer
// valid spans).
template <typename T>
int64_t topk_row_best_first(const RowView<T>& r, int64_t min_len, int64_t max_len, int64_t k,
                            TopkSearch<T>& ts, int64_t* out_spans, T* out_scores) {
  const int64_t n = r.length - min_len + 1;  // starts that can pair with an end
  if (n <= 0) return 0;
  ts.build(r, n, max_len - min_len + 1);
  ts.end_best.resize(r.length);
  best_sum_per_end(r, min_len, max_len, ts);
  // Only the ends whose best sum reaches the k-th best end's enter the search
  // (all of them when that is -inf, where end_best cannot tell -inf spans
  // from none).
  const T tau = kth_best_end(ts, min_len - 1, r.length, k);
  const bool prune = tau > -std::numeric_limits<T>::infinity();
  auto& heap = ts.heap;
  heap.clear();
  for (int64_t j = min_len - 1; j < r.length; ++j) {
    if (prune && !(ts.end_best[j] >= tau)) continue;
    const T e = r.end[j * r.es];
    if (is_nan(e)) continue;
    int64_t lo, hi;
    start_window(j, min_len, max_len, &lo, &hi);
    TopkCand<T> cand;
    if (ts.candidate(j, e, lo, hi, &cand)) heap.push_back(cand);
  }
  std::make_heap(heap.begin(), heap.end(), ranks_after<T>);
  int64_t count = 0;
  while (count < k && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), ranks_after<T>);
    TopkCand<T> top = heap.back();
    heap.pop_back();
    const T e = r.end[top.j * r.es];
    if (!top.exact) {  // find its start, then let it compete with its true rank
      top.i = ts.best_start(top, e);
      if (top.i < 0) continue;  // not reached: candidate() checked a usable start exists
      top.exact = true;
      heap.push_back(top);
      std::push_heap(heap.begin(), heap.end(), ranks_after<T>);
      continue;
    }
    // The score as start + end of this very span (fixes the sign of a zero sum).
    out_scores[count] = r.start[top.i * r.ss] + e;
    out_spans[2 * count] = top.i;
    out_spans[2 * count + 1] = top.j;
    ++count;
    TopkCand<T> part;
    if (top.a < top.i && ts.candidate(top.j, e, top.a, top.i - 1, &part)) {
      heap.push_back(part);
      std::push_heap(heap.begin(), heap.end(), ranks_after<T>);
    }
    if (top.i < top.c && ts.candidate(top.j, e, top.i + 1, top.c, &part)) {
      heap.push_back(part);
      std::push_heap(heap.begin(), heap.end(), ranks_after<T>);
    }
  }
  return count;
}

}  // namespace span_argmax
}  // namespace fastvqa
