// SPDX-License-Identifier: Apache-2.0
// CPU loops for the temporal IoU family; the math is in temporal_iou_math.h.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

#include "fastvqa/common/op_costs.h"
#include "fastvqa/common/pairwise_sum.h"
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
  parallel_rows(op_costs::loop_cost(op_costs::kTemporalIou, n, m), [&](Chunks& chunks) {
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
    parallel_for(op_costs::loop_cost(op_costs::kTemporalIou, n, 1), [&](int64_t i) {
      p.out[i] = pair_overlap_any<kMode>(p.a[i * p.a_s0], p.a[i * p.a_s0 + p.a_s1],
                                         p.b[i * p.b_s0], p.b[i * p.b_s0 + p.b_s1]);
    });
    return;
  }
  parallel_rows(op_costs::loop_cost(op_costs::kTemporalIou, n, 1), [&](Chunks& chunks) {
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

namespace {

// Rows [lo, hi) of p against k rows of gt, one by one (the per-row loop's
// data-dependent trip count costs a mispredicted branch on most rows; a
// block-wise vectorised form and a four-lane masked form were both measured
// slower on 1-3 segments per row). Each offset is read once and checked
// before it addresses gt, so the scan reads the caller's own offsets (no
// checked copy: 16 bytes per row written and read again) and another thread
// changing them while the GIL is released cannot send a read out of bounds.
// A row whose offsets are decreasing or outside [0, k] is read as empty, and
// the return value says so. The one caller of grounding_row on the CPU: with
// two, GCC stops inlining nextgqa_pair (a call per pair, 8% slower).
template <typename T>
bool grounding_rows(const GroundingParams<T>& p, int64_t k, int64_t lo, int64_t hi) {
  bool bad = false;
  for (int64_t i = lo; i < hi; ++i) {
    const int64_t b = p.offsets[i * p.off_s0], e = p.offsets[(i + 1) * p.off_s0];
    const bool ok = (b >= 0) & (b <= e) & (e <= k);
    bad |= !ok;
    grounding_row(p.pred[i * p.p_s0], p.pred[i * p.p_s0 + p.p_s1], p.gt, p.g_s0, p.g_s1,
                  ok ? b : 0, ok ? e : 0, &p.iou[i], &p.iop[i]);
  }
  return bad;
}

}  // namespace

template <typename T>
void grounding_cpu(const GroundingParams<T>& p) {
  const int64_t n = p.n;
  // Predictions own different numbers of ground-truth spans: the mean count
  // prices a row.
  const double per_row = n > 0 ? double(p.offsets[n * p.off_s0] - p.offsets[0]) / double(n) : 0;
  parallel_rows(op_costs::loop_cost(op_costs::kGroundingOverlap, n, 1.0 + per_row), [&](Chunks& c) {
    int64_t lo, hi;
    while (c.next(&lo, &hi)) grounding_rows(p, p.offsets[n * p.off_s0], lo, hi);
  });
}

namespace {

// Rows per block of grounding_scan_cpu's passes.
constexpr int64_t kScanBlock = 2048;

// missing[i] = row i is two NaNs; true when some row is neither that nor
// finite (the caller then finds the first one).
FASTVQA_VECTOR_CLONES bool classify_predictions(const double* __restrict pred, int64_t s0,
                                                int64_t s1, int64_t n,
                                                uint8_t* __restrict missing) {
  const double big = std::numeric_limits<double>::max();
  int64_t bad = 0;
#pragma omp simd reduction(| : bad)
  for (int64_t i = 0; i < n; ++i) {
    const double a = pred[i * s0], b = pred[i * s0 + s1];
    const bool two_nan = (a != a) & (b != b);
    const bool finite = (std::fabs(a) <= big) & (std::fabs(b) <= big);
    missing[i] = two_nan;
    bad |= static_cast<int64_t>(!(two_nan | finite));
  }
  return bad != 0;
}

// Rows [k0, k1) of (K, 2) spans hold no NaN and no infinity.
FASTVQA_VECTOR_CLONES bool all_finite(const double* __restrict x, int64_t s0, int64_t s1,
                                      int64_t k0, int64_t k1) {
  const double big = std::numeric_limits<double>::max();
  int64_t bad = 0;
#pragma omp simd reduction(| : bad)
  for (int64_t k = k0; k < k1; ++k) {
    const bool finite = (std::fabs(x[k * s0]) <= big) & (std::fabs(x[k * s0 + s1]) <= big);
    bad |= static_cast<int64_t>(!finite);
  }
  return bad == 0;
}

// Answers of rows [0, n): flags and counts (see GroundingScan). tallies:
// answered, correct, Acc@GQA hits, rows with a span and no answer, negative
// gold answers.
FASTVQA_VECTOR_CLONES void score_answers(const int64_t* __restrict pa,
                                         const int64_t* __restrict ga,
                                         const double* __restrict iop,
                                         const uint8_t* __restrict missing, int64_t n,
                                         int64_t no_answer, double gqa_iop,
                                         uint8_t* __restrict answered,
                                         uint8_t* __restrict correct, int64_t* tallies) {
  int64_t n_ans = 0, n_ok = 0, n_gqa = 0, n_unans = 0, n_neg = 0;
#pragma omp simd reduction(+ : n_ans, n_ok, n_gqa, n_unans, n_neg)
  for (int64_t i = 0; i < n; ++i) {
    const bool ans = pa[i] != no_answer;
    const bool ok = ans & (pa[i] == ga[i]);
    answered[i] = ans;
    correct[i] = ok;
    n_ans += ans;
    n_ok += ok;
    n_gqa += ok & (iop[i] >= gqa_iop);
    n_unans += !ans & (missing[i] == 0);
    n_neg += ga[i] < 0;
  }
  tallies[0] += n_ans;
  tallies[1] += n_ok;
  tallies[2] += n_gqa;
  tallies[3] = n_unans;
  tallies[4] = n_neg;
}

// Values >= t (NaN counts nowhere).
FASTVQA_VECTOR_CLONES int64_t count_at_least(const double* __restrict x, int64_t n, double t) {
  int64_t c = 0;
#pragma omp simd reduction(+ : c)
  for (int64_t i = 0; i < n; ++i) c += static_cast<int64_t>(x[i] >= t);
  return c;
}

}  // namespace

void grounding_scan_cpu(const GroundingParams<double>& p, GroundingScan* scan) {
  const int64_t n = p.n, n_t = scan->n_thresholds;
  std::fill(scan->counts, scan->counts + 2 * n_t, int64_t{0});
  if (n == 0) return;
  const int64_t k = scan->gt_rows;
  const double per_row = double(k) / double(n);
  const int64_t *pa = scan->pred_answers, *ga = scan->gt_answers;
  std::atomic<bool> bad_offsets{false};
  std::mutex merge;
  parallel_rows(op_costs::loop_cost(op_costs::kGroundingOverlap, n, 1.0 + per_row), [&](Chunks& c) {
    std::vector<int64_t> counts(2 * n_t, 0);
    int64_t tallies[5] = {0, 0, 0, 0, 0};
    int64_t bad_pred = -1, bad_gt = -1, unanswered = -1, bad_gt_answer = -1;
    // Rows [lo, hi): the overlaps, then the passes that read them again
    // while they are still in L1/L2. The first-bad-row searches run only in a
    // block whose vectorised pass found one.
    auto block = [&](int64_t lo, int64_t hi) {
      if (grounding_rows(p, k, lo, hi)) bad_offsets.store(true, std::memory_order_relaxed);
      const int64_t k0 = std::clamp<int64_t>(p.offsets[lo * p.off_s0], 0, k);
      const int64_t k1 = std::clamp<int64_t>(p.offsets[hi * p.off_s0], k0, k);
      if (bad_gt < 0 && !all_finite(p.gt, p.g_s0, p.g_s1, k0, k1)) {
        for (int64_t k = k0; k < k1 && bad_gt < 0; ++k)
          if (!(std::isfinite(p.gt[k * p.g_s0]) && std::isfinite(p.gt[k * p.g_s0 + p.g_s1])))
            bad_gt = k;
      }
      if (classify_predictions(p.pred + lo * p.p_s0, p.p_s0, p.p_s1, hi - lo,
                               scan->missing + lo) &&
          bad_pred < 0) {
        for (int64_t i = lo; i < hi && bad_pred < 0; ++i) {
          const double ps = p.pred[i * p.p_s0], pe = p.pred[i * p.p_s0 + p.p_s1];
          if (!(std::isnan(ps) && std::isnan(pe)) && !(std::isfinite(ps) && std::isfinite(pe)))
            bad_pred = i;
        }
      }
      for (int64_t t = 0; t < n_t; ++t) {
        counts[t] += count_at_least(p.iou + lo, hi - lo, scan->thresholds[t]);
        counts[n_t + t] += count_at_least(p.iop + lo, hi - lo, scan->thresholds[t]);
      }
      if (pa == nullptr) return;
      score_answers(pa + lo, ga + lo, p.iop + lo, scan->missing + lo, hi - lo, scan->no_answer,
                    scan->gqa_iop, scan->answered + lo, scan->correct + lo, tallies);
      for (int64_t i = lo; i < hi && tallies[3] > 0 && unanswered < 0; ++i)
        if (pa[i] == scan->no_answer && !scan->missing[i]) unanswered = i;
      for (int64_t i = lo; i < hi && tallies[4] > 0 && bad_gt_answer < 0; ++i)
        if (ga[i] < 0) bad_gt_answer = i;
    };
    int64_t lo, hi;
    while (c.next(&lo, &hi))  // a call that does not split is one chunk of every row
      for (int64_t b = lo; b < hi; b += kScanBlock) block(b, std::min(hi, b + kScanBlock));
    // Chunks are claimed in increasing order by each thread, so a thread's
    // first bad row is its smallest; the smallest over threads is the first.
    std::lock_guard<std::mutex> lock(merge);
    for (int64_t t = 0; t < 2 * n_t; ++t) scan->counts[t] += counts[t];
    auto first = [](int64_t a, int64_t b) { return a < 0 ? b : (b < 0 ? a : std::min(a, b)); };
    scan->bad_pred = first(scan->bad_pred, bad_pred);
    scan->bad_gt = first(scan->bad_gt, bad_gt);
    scan->unanswered = first(scan->unanswered, unanswered);
    scan->bad_gt_answer = first(scan->bad_gt_answer, bad_gt_answer);
    scan->n_answered += tallies[0];
    scan->n_correct += tallies[1];
    scan->n_gqa += tallies[2];
  });
  scan->bad_offsets = bad_offsets.load();
  // One more pass, in order: the sums of the rows with a span prediction.
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) kept += scan->missing[i] == 0;
  MaskedPairwiseSum2(p.iou, p.iop, scan->missing).sum(kept, &scan->sum_iou, &scan->sum_iop);
}

template void overlap_cpu<float>(const OverlapParams<float>&);
template void overlap_cpu<double>(const OverlapParams<double>&);
template void grounding_cpu<float>(const GroundingParams<float>&);
template void grounding_cpu<double>(const GroundingParams<double>&);

}  // namespace temporal_iou
}  // namespace fastvqa
