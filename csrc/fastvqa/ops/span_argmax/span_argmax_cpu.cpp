// SPDX-License-Identifier: Apache-2.0
// CPU span argmax: top-1 in O(T log max_len) vectorised sweeps per row.
//
// The best start of end j is the argmax of the start scores over the sliding
// window [j - max_len + 1, j - min_len + 1] (refined by exact_best_start for
// rounding ties). Window maxima come from the van Herk / Gil-Werman scheme:
// cut the starts into blocks as wide as the window, take running maxima
// forward (prefix) and backward (suffix) inside each block; a window then
// spans at most two blocks and its maximum is suffix[lo] combined with
// prefix[hi]. Unlike a monotonic deque this has no data-dependent branches,
// which is what makes it fast on random scores. Top-k is the best-first
// search of span_argmax_topk_cpu.h, whose cost does not grow with max_len.
#include <limits>
#include <vector>

#include "fastvqa/common/macros.h"
#include "fastvqa/common/op_costs.h"
#include "fastvqa/common/parallel.h"
#include "fastvqa/common/scratch.h"
#include "fastvqa/ops/span_argmax/span_argmax.h"
#include "fastvqa/ops/span_argmax/span_argmax_topk_cpu.h"

namespace fastvqa {
namespace span_argmax {

namespace {

// Block-wise running argmax of the start scores. idx < 0 marks "no usable
// start yet" (all NaN so far in the block). Ties keep the smaller index:
// forward with a strict >, backward with >=.
template <typename T>
struct BlockMax {
  std::vector<T> pre_val, suf_val;
  std::vector<int64_t> pre_idx, suf_idx;

  void resize(int64_t n) {
    pre_val.resize(n);
    suf_val.resize(n);
    pre_idx.resize(n);
    suf_idx.resize(n);
  }
  int64_t bytes() const { return vector_bytes(pre_val, suf_val, pre_idx, suf_idx); }

  void build(const RowView<T>& r, int64_t n, int64_t width) {
    for (int64_t block = 0; block < n; block += width) {
      const int64_t stop = block + width < n ? block + width : n;
      T v_best = T(0);
      int64_t i_best = -1;
      for (int64_t i = block; i < stop; ++i) {
        const T v = r.start[i * r.ss];
        const bool take = !is_nan(v) && (i_best < 0 || v > v_best);
        v_best = take ? v : v_best;
        i_best = take ? i : i_best;
        pre_val[i] = v_best;
        pre_idx[i] = i_best;
      }
      v_best = T(0);
      i_best = -1;
      for (int64_t i = stop - 1; i >= block; --i) {
        const T v = r.start[i * r.ss];
        const bool take = !is_nan(v) && (i_best < 0 || v >= v_best);
        v_best = take ? v : v_best;
        i_best = take ? i : i_best;
        suf_val[i] = v_best;
        suf_idx[i] = i_best;
      }
    }
  }

  // Smallest index of the maximum over [lo, hi] (a window of at most `width`
  // starts; wider windows begin at 0 and lie in the first block), or -1 when
  // every start there is NaN. The maximum itself goes to *value.
  int64_t window_argmax(int64_t lo, int64_t hi, int64_t width, T* value) const {
    if (lo == 0 && hi < width) {  // inside the first block
      *value = pre_val[hi];
      return pre_idx[hi];
    }
    const int64_t a = suf_idx[lo], b = pre_idx[hi];
    // Ties go to the suffix side, whose indices are the earlier ones.
    const bool take_b = a < 0 || (b >= 0 && pre_val[hi] > suf_val[lo]);
    *value = take_b ? pre_val[hi] : suf_val[lo];
    return take_b ? b : a;
  }
};

// Calls visit(j, lo, e_j, b, m) for every end j that has a usable span: b is
// the smallest index of the window's largest start score and m = start[b] + e_j
// the largest sum ending at j (addition is monotone). Whether a smaller start
// ties at m is left to the visitor (exact_best_start), which top-1 asks only
// for ends that can still win. Where that largest score is +inf and e_j is
// -inf, b is instead the first start making a (-inf) span with j, and m = -inf.
template <typename T, typename Visit>
void for_each_end(const RowView<T>& r, int64_t min_len, int64_t max_len, BlockMax<T>& bm,
                  Visit&& visit) {
  // Start i pairs only with ends up to length - 1, so starts past
  // length - min_len never matter; a window spans max_len - min_len + 1 starts.
  const int64_t n_starts = r.length - min_len + 1;
  if (n_starts <= 0) return;
  const int64_t width = max_len - min_len + 1;
  bm.build(r, n_starts, width);
  for (int64_t j = min_len - 1; j < r.length; ++j) {
    int64_t lo, hi;
    start_window(j, min_len, max_len, &lo, &hi);
    const T e_j = r.end[j * r.es];
    if (is_nan(e_j)) continue;
    T s_b;
    const int64_t b = bm.window_argmax(lo, hi, width, &s_b);
    if (b < 0) continue;
    const T m = s_b + e_j;
    if (is_nan(m)) {
      // +inf + -inf: the window's other usable starts still form -inf spans
      // (-inf + +inf leaves none: the window's starts are all -inf or NaN).
      if (e_j != -std::numeric_limits<T>::infinity()) continue;
      const int64_t i = first_start_for_neg_inf_end(r, lo, hi);
      if (i >= 0) visit(j, lo, e_j, i, e_j);
      continue;
    }
    visit(j, lo, e_j, b, m);
  }
}

// The exact top-1 of a row by the block-wise running argmax (any scores);
// top1_row hands it the rows whose best score is -inf, or that have no span.
template <typename T>
void top1_row_exact(const RowView<T>& r, int64_t min_len, int64_t max_len, BlockMax<T>& bm,
                    int64_t* out_span, T* out_score) {
  bm.resize(r.length > 0 ? r.length : 1);
  bool found = false;
  T best = T(0);
  int64_t bi = -1, bj = -1;
  for_each_end(r, min_len, max_len, bm, [&](int64_t j, int64_t lo, T e_j, int64_t b, T m) {
    if (found && m < best) return;  // cannot win, nor tie
    const int64_t i = exact_best_start(r, e_j, lo, b);
    if (!found || ranks_before(m, i, j, best, bi, bj)) {
      found = true;
      best = m;
      bi = i;
      bj = j;
    }
  });
  if (found) {
    out_span[0] = bi;
    out_span[1] = bj;
    out_score[0] = best;
  }
  fill_missing<T>(found ? 1 : 0, 1, out_span, out_score);
}

// max(acc, x) for numbers without NaN: a single max instruction once vectorised.
template <typename T>
FASTVQA_ALWAYS_INLINE T plain_max(T acc, T x) {
  return x > acc ? x : acc;
}

// Scratch rows of top-1, reused across the rows of one thread.
template <typename T>
struct Top1Scratch {
  std::vector<T> s, e, pre, win, tmp, m;
  void resize(int64_t n) {
    for (auto* v : {&s, &e, &pre, &win, &tmp, &m}) v->resize(n);
  }
  int64_t bytes() const { return vector_bytes(s, e, pre, win, tmp, m); }
};

// pre[t] = plain_max of v[0..t], t < n. Eight independent chains over eight
// contiguous segments (so the max latency overlaps), then each segment is
// raised to the maximum of the segments before it (a contiguous sweep).
template <typename T>
FASTVQA_ALWAYS_INLINE void prefix_max(const T* v, int64_t n, T* pre) {
  constexpr int kLanes = 8;
  const int64_t seg = (n + kLanes - 1) / kLanes;
  const T none = -std::numeric_limits<T>::infinity();
  T acc[kLanes];
  for (int l = 0; l < kLanes; ++l) acc[l] = none;
  for (int64_t t = 0; t < seg; ++t) {
    for (int l = 0; l < kLanes; ++l) {
      const int64_t i = l * seg + t;
      if (i < n) {
        acc[l] = plain_max(acc[l], v[i]);
        pre[i] = acc[l];
      }
    }
  }
  T carry = none;
  for (int l = 1; l < kLanes && l * seg < n; ++l) {
    carry = plain_max(carry, pre[l * seg - 1]);
    const int64_t stop = (l + 1) * seg < n ? (l + 1) * seg : n;
#pragma omp simd
    for (int64_t i = l * seg; i < stop; ++i) pre[i] = plain_max(carry, pre[i]);
  }
}

// The window maxima max(v[i .. i + width - 1]) for i <= n - width, by doubling
// (four at a time): about log4(width) contiguous, branch-free sweeps
// (vectorised), then, unless width is a power of four, one sweep combining
// two overlapping power-of-two windows. Needs 1 <= width <= n. Returns where
// they are: `a` or `b` (two scratch rows of n), or v itself when width is 1;
// no sweep is spent copying them into place.
//
// v may hold NaN (an unusable start): the first sweep folds each window into
// a running maximum that starts at -inf, which a NaN never replaces, so the
// maxima are those of v with NaN read as -inf (and -inf where a window holds
// nothing else); later sweeps see no NaN. With width 1, v is returned as is.
template <typename T>
FASTVQA_ALWAYS_INLINE const T* window_max(const T* v, int64_t n, int64_t width, T* a, T* b) {
  const T none = -std::numeric_limits<T>::infinity();
  const T* cur = v;
  int64_t p = 1;
  T* bufs[2] = {a, b};
  int which = 0;
  while (4 * p <= width) {  // four windows at a time: half the sweeps
    T* dst = bufs[which];
    const int64_t len = n - 4 * p + 1;  // dst[i] = max of v[i .. i + 4p - 1]
    if (cur == v) {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i)
        dst[i] = plain_max(plain_max(plain_max(plain_max(none, cur[i]), cur[i + p]),
                                     cur[i + 2 * p]),
                           cur[i + 3 * p]);
    } else {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i)
        dst[i] =
            plain_max(plain_max(cur[i], cur[i + p]), plain_max(cur[i + 2 * p], cur[i + 3 * p]));
    }
    cur = dst;
    which ^= 1;
    p *= 4;
  }
  while (2 * p <= width) {
    T* dst = bufs[which];
    const int64_t len = n - 2 * p + 1;  // dst[i] = max of v[i .. i + 2p - 1]
    if (cur == v) {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) dst[i] = plain_max(plain_max(none, cur[i]), cur[i + p]);
    } else {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) dst[i] = plain_max(cur[i], cur[i + p]);
    }
    cur = dst;
    which ^= 1;
    p *= 2;
  }
  if (p == width) return cur;
  const int64_t count = n - width + 1, shift = width - p;
  T* dst = bufs[which];
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) dst[i] = plain_max(cur[i], cur[i + shift]);
  return dst;
}

// The smallest i in [lo, stop] with s[i] + e == target, or -1; checked
// sixteen at a time (a vectorised test) before the exact position is sought.
template <typename T>
FASTVQA_ALWAYS_INLINE int64_t first_sum_equal(const T* s, int64_t lo, int64_t stop, T e, T target) {
  constexpr int64_t kChunk = 16;
  int64_t i = lo;
  for (; i + kChunk - 1 <= stop; i += kChunk) {
    int hit = 0;
#pragma omp simd reduction(| : hit)
    for (int64_t t = 0; t < kChunk; ++t) hit |= (s[i + t] + e == target);
    if (hit) break;
  }
  for (; i <= stop; ++i)
    if (s[i] + e == target) return i;  // NaN never compares equal
  return -1;
}

// Step 2 over the ends j in [from, to): m_at_j[j] = best_at_j[j] + e[j] (NaN
// where no span ends at j); raises `top` to the largest non-NaN sum and sets
// `any` when one exists. Vectorised, in blocks of 64 ends: `first` becomes the
// first end of the first block that holds `top` (where the search for the
// ends at the best score can begin), -1 while top is -inf.
template <typename T>
FASTVQA_ALWAYS_INLINE void sums_at_ends(const T* best_at_j, const T* e, int64_t from, int64_t to,
                                        T* m_at_j, T& top_io, int& any_io, int64_t& first_io) {
  constexpr int64_t kBlock = 64;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  for (int64_t block = from; block < to; block += kBlock) {
    const int64_t stop = block + kBlock < to ? block + kBlock : to;
    T top = neg_inf;
    int any = 0;
#pragma omp simd reduction(max : top) reduction(| : any)
    for (int64_t j = block; j < stop; ++j) {
      const T mj = best_at_j[j] + e[j];
      m_at_j[j] = mj;
      const T v = mj == mj ? mj : neg_inf;  // NaN: no span ends at j
      top = v > top ? v : top;
      any |= static_cast<int>(mj == mj);
    }
    any_io |= any;
    if (top > top_io) {
      top_io = top;
      first_io = block;
    }
  }
}

// Top-1 in branch-free, vectorised passes over contiguous rows, then an exact
// tie-break among the ends that reach the maximum:
//   1. window maxima of the start scores, values only (an unusable NaN
//      start counts as -inf): a prefix maximum for the windows clipped at
//      step 0 and doubling sweeps for the full-width ones;
//   2. for every end j, m[j] = (window maximum) + end[j], whose largest value
//      is the best score (addition is monotone); NaN where j has no span;
//   3. for the ends with m[j] == best, in order, the smallest start i with
//      start[i] + end[j] == best (this also finds a smaller start whose lower
//      score rounds to the same sum): the first (i, j) in the contract's
//      order (higher score, then smaller start, then smaller end).
// A row whose best sum is -inf (where -inf starts and unusable ones would
// differ) goes to top1_row_exact. Built for AVX2 and for the baseline, the
// sweeps above inlined into each (FASTVQA_VECTOR_CLONES): 1.4x on one thread.
template <typename T>
FASTVQA_VECTOR_CLONES void top1_row(const RowView<T>& r, int64_t min_len, int64_t max_len,
                                    Top1Scratch<T>& w, BlockMax<T>& bm, int64_t* out_span,
                                    T* out_score) {
  const int64_t n = r.length - min_len + 1;  // starts that can pair with an end
  const int64_t width = max_len - min_len + 1;
  bool found = false;
  T best = T(0);
  int64_t bi = -1, bj = -1;
  if (n > 0) {
    T* m = w.m.data();
    const T neg_inf = -std::numeric_limits<T>::infinity();
    // The start scores, contiguous (copied only when strided). A NaN start
    // (unusable) reads as -inf in every pass below: the maxima start from
    // -inf and a NaN never beats it, a NaN sum never equals the best score,
    // and a best score of -inf, where the two could differ, is left to
    // top1_row_exact.
    const T* s = r.start;
    if (r.ss != 1) {
      T* sc = w.s.data();
      const int64_t ss = r.ss;
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) sc[i] = s[i * ss];
      s = sc;
    }
    // Ends j in [min_len - 1, length), window [max(j - max_len + 1, 0), j - min_len + 1]:
    // clipped at 0 (a prefix) for j < j_split, full width from j_split on.
    const int64_t j0 = min_len - 1, j_end = r.length;
    const int64_t j_split = max_len - 1 < j_end ? (max_len - 1 > j0 ? max_len - 1 : j0) : j_end;
    // A contiguous end row (copied only when strided) keeps the sweeps below vectorised.
    const T* e = r.end;
    if (r.es != 1) {
      T* ec = w.e.data();
      const int64_t es = r.es;
      for (int64_t j = j0; j < j_end; ++j) ec[j] = e[j * es];
      e = ec;
    }
    T top = neg_inf;
    int any = 0;
    int64_t first = -1;
    if (j_split > j0) {
      T* pre = w.pre.data();
      prefix_max(s, j_split - j0, pre);
      const T* pre_at_j = pre - j0;  // pre_at_j[j] = max of s[0 .. j - min_len + 1]
      sums_at_ends(pre_at_j, e, j0, j_split, m - j0, top, any, first);
    }
    if (j_end > j_split) {
      const T* win = window_max(s, n, width, w.win.data(), w.tmp.data());
      const T* win_at_j = win - (max_len - 1);  // win_at_j[j] = max of the window of j
      sums_at_ends(win_at_j, e, j_split, j_end, m - j0, top, any, first);
    }
    // Only -inf sums, or none: the exact path decides (the sums above are NaN
    // where a +inf start meets a -inf end, hiding that end's -inf spans).
    if (!(top > neg_inf)) {
      top1_row_exact(r, min_len, max_len, bm, out_span, out_score);
      return;
    }
    if (any) {
      found = true;
      best = top;
      for (int64_t j = first; j < j_end; ++j) {  // no end before `first` is at best
        // Once a start bi is found, an end from bi + max_len - 1 on has no
        // start before bi in its window, so it cannot win: the search for the
        // next end at the best score stops there.
        const int64_t last = bi >= 0 && bi + max_len - 2 < j_end - 1 ? bi + max_len - 2 : j_end - 1;
        if (j > last) break;
        j = j0 + first_sum_equal(m, j - j0, last - j0, T(0), best);  // next end at best
        if (j < j0) break;
        int64_t lo, hi;
        start_window(j, min_len, max_len, &lo, &hi);
        if (bi >= 0 && lo >= bi) break;  // later ends start later still: none can win
        const int64_t stop = bi >= 0 && bi - 1 < hi ? bi - 1 : hi;
        const int64_t i = first_sum_equal(s, lo, stop, e[j], best);
        if (i >= 0) {
          bi = i;
          bj = j;
        }
      }
      // The score, as the block-argmax path forms it: start[b] + end[bj] with b
      // the first start at the window's maximum (this fixes the sign of a zero
      // sum, which the value-only maxima above leave open).
      int64_t lo, hi;
      start_window(bj, min_len, max_len, &lo, &hi);
      T wmax = neg_inf;
#pragma omp simd reduction(max : wmax)
      for (int64_t i = lo; i <= hi; ++i) wmax = plain_max(wmax, s[i]);
      int64_t b = lo;
      while (!(s[b] == wmax)) ++b;
      best = s[b] + e[bj];
    }
  }
  if (found) {
    out_span[0] = bi;
    out_span[1] = bj;
    out_score[0] = best;
  }
  fill_missing<T>(found ? 1 : 0, 1, out_span, out_score);
}

template <typename T>
LoopCost loop_cost(const Params<T>& p) {
  return op_costs::loop_cost(p.k == 1 ? op_costs::kSpanArgmaxTop1 : op_costs::kSpanArgmaxTopk,
                             p.batch, p.steps);
}

}  // namespace

template <typename T>
void span_argmax_cpu(const Params<T>& p) {
  parallel_rows(loop_cost(p), [&](Chunks& chunks) {
    ThreadScratch<BlockMax<T>> bm_scratch;
    ThreadScratch<Top1Scratch<T>> top1_scratch;
    ThreadScratch<TopkSearch<T>> topk_scratch;
    BlockMax<T>& bm = *bm_scratch;
    Top1Scratch<T>& top1 = *top1_scratch;
    TopkSearch<T>& topk = *topk_scratch;
    if (p.k == 1) top1.resize(p.steps);
    int64_t lo, hi;
    while (chunks.next(&lo, &hi)) {
      for (int64_t b = lo; b < hi; ++b) {
        const RowView<T> r = p.row(b);
        int64_t* spans = p.out_spans + b * p.k * 2;
        T* scores = p.out_scores + b * p.k;
        if (p.k == 1) {
          top1_row(r, p.min_len, p.max_len, top1, bm, spans, scores);
        } else {
          const int64_t count =
              topk_row_best_first(r, p.min_len, p.max_len, p.k, topk, spans, scores);
          fill_missing(count, p.k, spans, scores);
        }
      }
    }
  });
}

template void span_argmax_cpu<float>(const Params<float>&);
template void span_argmax_cpu<double>(const Params<double>&);

}  // namespace span_argmax
}  // namespace fastvqa
