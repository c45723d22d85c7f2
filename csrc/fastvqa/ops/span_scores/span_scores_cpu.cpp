// SPDX-License-Identifier: Apache-2.0
// CPU loops for span_scores (forward and backward) and top_spans; the
// semantics are in span_scores_math.h. Rows run in parallel (OpenMP); each
// thread keeps its own prefix-sum buffers.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fastvqa/ops/span_scores/span_scores.h"

namespace fastvqa {
namespace span_scores {

namespace {

// Below this much work (band cells), starting OpenMP threads costs more than it saves.
constexpr int64_t kParallelWork = 1 << 15;

struct PrefixBuffers {
  std::vector<double> sum;
  std::vector<int64_t> cnt;

  explicit PrefixBuffers(int64_t steps) : sum(steps + 1), cnt(3 * (steps + 1)) {}

  template <typename T>
  PrefixRow build(const RowInput<T>& in, int64_t b) {
    const int64_t length = in.length(b);
    const bool special =
        build_prefix(in.x + b * in.x_s0, in.x_s1, length, sum.data(), cnt.data());
    return PrefixRow{sum.data(), cnt.data(), length, special};
  }
};

// The exact division S / n bounds the mean and contrast loops; AVX2 divides
// four doubles at a time where SSE2 (the portable baseline) divides two, so
// GCC builds both and picks one at load time.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define FASTVQA_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FASTVQA_VECTOR_CLONES
#endif

// out[lo..hi] of one band row of a finite row (no NaN or inf).
// (The band is narrower than 2^31: the offset is an int, so n = d + 1
// converts to double with a vector instruction.)
template <Reduce R, typename T>
FASTVQA_VECTOR_CLONES void finite_band_row(const double* sum, int64_t i, int64_t length,
                                           int lo, int hi, T* out) {
  const double length_d = static_cast<double>(length);
#pragma omp simd
  for (int d = lo; d <= hi; ++d)
    out[d] = static_cast<T>(
        finite_span_value<R>(sum, i, i + d, length, static_cast<double>(d + 1), length_d));
}

template <Reduce R, typename T>
void forward_rows(const ForwardParams<T>& p) {
  const int64_t batch = p.in.batch, steps = p.in.steps, width = p.width;
  const T neg_inf = -std::numeric_limits<T>::infinity();
#pragma omp parallel if (batch * steps * width >= kParallelWork)
  {
    PrefixBuffers buf(steps);
#pragma omp for schedule(static)
    for (int64_t b = 0; b < batch; ++b) {
      const PrefixRow pr = buf.build(p.in, b);
      for (int64_t i = 0; i < steps; ++i) {
        T* o = p.out + (b * steps + i) * width;
        int64_t lo, hi;
        offset_range(i, pr.length, p.min_len, width, &lo, &hi);
        if (lo > hi) {  // padding, or too close to the row's end
          std::fill(o, o + width, neg_inf);
          continue;
        }
        std::fill(o, o + lo, neg_inf);
        if (pr.special) {
          for (int64_t d = lo; d <= hi; ++d) o[d] = static_cast<T>(span_value<R>(pr, i, i + d));
        } else if (hi < std::numeric_limits<int>::max()) {  // the common case, vectorised
          finite_band_row<R>(pr.sum, i, pr.length, static_cast<int>(lo), static_cast<int>(hi), o);
        } else {
          for (int64_t d = lo; d <= hi; ++d) o[d] = static_cast<T>(span_value<R>(pr, i, i + d));
        }
        std::fill(o + hi + 1, o + width, neg_inf);
      }
    }
  }
}

template <typename T>
struct RowGrad {
  const BackwardParams<T>* p;
  int64_t b;
  T operator()(int64_t i, int64_t d) const { return p->g(b, i, d); }
};

// One band row (start i, offsets lo..hi, gradient stride gs): subtracts each
// span's c = g * step_c at its end (diff_end[d] = diff[i + d + 1]), adds the
// out_c terms to *every, and returns the sum of the c (added at diff[i]).
template <Reduce R, typename T>
inline double scatter_offsets(const T* grow, int64_t gs, int64_t lo, int64_t hi,
                              const double* step_c, const double* out_c, double* diff_end,
                              double* every) {
  double starts = 0.0, ev = 0.0;
#pragma omp simd reduction(+ : starts, ev)
  for (int64_t d = lo; d <= hi; ++d) {
    const double g = static_cast<double>(grow[d * gs]);
    const double c = g * step_c[d];
    starts += c;
    diff_end[d] -= c;
    // Only contrast has this term; adding g * 0 would turn an infinite g into NaN.
    if (R == Reduce::kContrast) ev += out_c[d] != 0.0 ? g * out_c[d] : 0.0;
  }
  *every += ev;
  return starts;
}

template <Reduce R, typename T>
void backward_rows(const BackwardParams<T>& p) {
  const int64_t batch = p.batch, steps = p.steps, width = p.width;
#pragma omp parallel if (batch * steps * width >= kParallelWork)
  {
    std::vector<double> diff(steps + 1), step_c(width), out_c(width);
#pragma omp for schedule(static)
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t length = p.length(b);
      T* gx = p.grad_x + b * steps;
      for (int64_t d = 0; d < width; ++d) {
        double in_c;
        grad_coef<R>(d + 1, length, &in_c, &out_c[d]);
        step_c[d] = in_c - out_c[d];
      }
      std::fill(diff.begin(), diff.begin() + length + 1, 0.0);
      double every = 0.0;
      // Scatter: span [i, i + d] adds c on steps i..i+d (a difference pair).
      for (int64_t i = 0; i < length; ++i) {
        int64_t lo, hi;
        offset_range(i, length, p.min_len, width, &lo, &hi);
        const T* grow = p.grad + b * p.g_s0 + i * p.g_s1;
        if (p.g_s2 == 1) {  // the usual layout: unit stride, so the loop vectorises
          diff[i] += scatter_offsets<R>(grow, 1, lo, hi, step_c.data(), out_c.data(),
                                        diff.data() + i + 1, &every);
        } else {
          diff[i] += scatter_offsets<R>(grow, p.g_s2, lo, hi, step_c.data(), out_c.data(),
                                        diff.data() + i + 1, &every);
        }
      }
      double run = 0.0;
      for (int64_t t = 0; t < length; ++t) {
        run += diff[t];
        gx[t] = static_cast<T>(run + every);
      }
      run += diff[length];  // all pairs closed: 0 up to rounding, unless non-finite
      if (!is_finite(run) || !is_finite(every)) {
        const RowGrad<T> g{&p, b};
        const IeeeSum all_out = outside_total<R>(g, length, p.min_len, width);
        for (int64_t t = 0; t < length; ++t)
          gx[t] = static_cast<T>(grad_direct<R>(g, t, length, p.min_len, width, all_out));
      }
      std::fill(gx + length, gx + steps, T(0));
    }
  }
}

// Exact greedy NMS past the first round: every remaining valid span, sorted
// in rank order (O(N log N) for the N spans of the row).
template <Reduce R, typename T>
void nms_full_scan(const TopParams<T>& p, const PrefixRow& pr, const Cursor<T>& after,
                   int64_t* kept, int64_t* spans, T* scores) {
  struct Cand {
    T s;
    int64_t i, j;
  };
  std::vector<Cand> all;
  for (int64_t i = 0; i < pr.length; ++i) {
    int64_t lo, hi;
    offset_range(i, pr.length, p.min_len, p.max_len, &lo, &hi);
    for (int64_t d = lo; d <= hi; ++d) {
      const T s = static_cast<T>(span_value<R>(pr, i, i + d));
      if (is_nan(s) || !ranks_before(after.score, after.i, after.j, s, i, i + d)) continue;
      all.push_back(Cand{s, i, i + d});
    }
  }
  std::sort(all.begin(), all.end(),
            [](const Cand& a, const Cand& b) { return ranks_before(a.s, a.i, a.j, b.s, b.i, b.j); });
  for (const Cand& c : all) {
    if (*kept == p.k) break;
    keep_unless_suppressed(c.s, c.i, c.j, p.nms_iou, kept, spans, scores);
  }
}

template <Reduce R, typename T>
void top_rows(const TopParams<T>& p) {
  const int64_t batch = p.in.batch, steps = p.in.steps;
  const Cursor<T> none{false, T(0), 0, 0};
#pragma omp parallel if (batch * steps * p.max_len >= kParallelWork)
  {
    PrefixBuffers buf(steps);
    const int64_t cap = p.nms ? nms_round_size(p.k) : p.k;
    std::vector<int64_t> cand_spans(2 * cap);
    std::vector<T> cand_scores(cap);
#pragma omp for schedule(static)
    for (int64_t b = 0; b < batch; ++b) {
      const PrefixRow pr = buf.build(p.in, b);
      int64_t* spans = p.out_spans + b * p.k * 2;
      T* scores = p.out_scores + b * p.k;
      if (!p.nms) {
        const int64_t count = scan_ranked<R>(pr, p.min_len, p.max_len, p.k, none, spans, scores);
        fill_missing(count, p.k, spans, scores);
        continue;
      }
      const int64_t count = scan_ranked<R>(pr, p.min_len, p.max_len, cap, none,
                                           cand_spans.data(), cand_scores.data());
      int64_t kept = 0;
      for (int64_t c = 0; c < count && kept < p.k; ++c)
        keep_unless_suppressed(cand_scores[c], cand_spans[2 * c], cand_spans[2 * c + 1],
                               p.nms_iou, &kept, spans, scores);
      if (kept < p.k && count == cap) {  // the round ran out; more spans may remain
        const Cursor<T> after{true, cand_scores[cap - 1], cand_spans[2 * (cap - 1)],
                              cand_spans[2 * (cap - 1) + 1]};
        nms_full_scan<R>(p, pr, after, &kept, spans, scores);
      }
      fill_missing(kept, p.k, spans, scores);
    }
  }
}

}  // namespace

template <typename T>
void forward_cpu(const ForwardParams<T>& p) {
  switch (p.reduce) {
    case Reduce::kSum: forward_rows<Reduce::kSum>(p); break;
    case Reduce::kMean: forward_rows<Reduce::kMean>(p); break;
    case Reduce::kContrast: forward_rows<Reduce::kContrast>(p); break;
  }
}

template <typename T>
void backward_cpu(const BackwardParams<T>& p) {
  switch (p.reduce) {
    case Reduce::kSum: backward_rows<Reduce::kSum>(p); break;
    case Reduce::kMean: backward_rows<Reduce::kMean>(p); break;
    case Reduce::kContrast: backward_rows<Reduce::kContrast>(p); break;
  }
}

template <typename T>
void top_spans_cpu(const TopParams<T>& p) {
  switch (p.reduce) {
    case Reduce::kSum: top_rows<Reduce::kSum>(p); break;
    case Reduce::kMean: top_rows<Reduce::kMean>(p); break;
    case Reduce::kContrast: top_rows<Reduce::kContrast>(p); break;
  }
}

template void forward_cpu<float>(const ForwardParams<float>&);
template void forward_cpu<double>(const ForwardParams<double>&);
template void backward_cpu<float>(const BackwardParams<float>&);
template void backward_cpu<double>(const BackwardParams<double>&);
template void top_spans_cpu<float>(const TopParams<float>&);
template void top_spans_cpu<double>(const TopParams<double>&);

}  // namespace span_scores
}  // namespace fastvqa
