// SPDX-License-Identifier: Apache-2.0
// CPU loops for span_scores (forward and backward) and top_spans; the
// semantics are in span_scores_math.h. Rows run in parallel (OpenMP); each
// thread keeps its own row buffers.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "fastvqa/common/op_costs.h"
#include "fastvqa/common/parallel.h"
#include "fastvqa/common/scratch.h"
#include "fastvqa/ops/span_scores/span_scores.h"

namespace fastvqa {
namespace span_scores {

namespace {

template <typename T>
bool sums_are_exact(double smallest, double total);  // below

// One row as double and its outside sums (span_scores_math.h).
struct RowBuffers {
  std::vector<double> xd, pre, suf, pre_s, suf_s;
  std::vector<int64_t> cnt;

  void resize(int64_t steps) {
    xd.resize(steps);
    for (auto* v : {&pre, &suf, &pre_s, &suf_s}) v->resize(steps + 1);
    cnt.resize(3 * (steps + 1));
  }
  int64_t bytes() const { return vector_bytes(xd, pre, suf, pre_s, suf_s, cnt); }

  // The row's sums; P and Q only where they are read (contrast, careful rows).
  template <typename T>
  RowSums build(const RowInput<T>& in, int64_t b, bool contrast) {
    const int64_t length = in.length(b);
    const bool careful = scan_row(in.x + b * in.x_s0, in.x_s1, length, xd.data());
    if (careful) {
      build_careful_sums(xd.data(), 1, length, pre.data(), suf.data(), pre_s.data(),
                         suf_s.data(), cnt.data());
    } else if (contrast) {
      build_plain_sums(xd.data(), 1, length, pre.data(), suf.data());
    }
    return RowSums{pre.data(), suf.data(), pre_s.data(), suf_s.data(), cnt.data(), length,
                   careful};
  }

  // build() for the forward pass: a plain row's xd, P (and Q for contrast) and
  // whether its sums are exact (*exact, sums_are_exact) from one pass over x,
  // the same sums build_plain_sums makes (a careful row as in build()).
  template <typename T>
  RowSums build_forward(const RowInput<T>& in, int64_t b, bool contrast, bool* exact) {
    const int64_t length = in.length(b);
    const T* x = in.x + b * in.x_s0;
    const int64_t xs = in.x_s1;
    double* v_out = xd.data();
    double* p = pre.data();
    bool special = false;
    double total = 0.0, smallest = std::numeric_limits<double>::infinity();
    p[0] = -0.0;
    for (int64_t t = 0; t < length; ++t) {
      const double v = static_cast<double>(x[t * xs]);
      v_out[t] = v;
      p[t + 1] = v + p[t];
      const double a = std::fabs(v);
      if (is_finite(v)) {
        total += a;  // scan_row's total
        if (a != 0.0 && a < smallest) smallest = a;
      } else {
        special = true;
      }
    }
    const bool careful = special || !(total < kCarefulTotal);  // scan_row's rule
    *exact = false;
    if (careful) {
      build_careful_sums(v_out, 1, length, p, suf.data(), pre_s.data(), suf_s.data(),
                         cnt.data());
    } else {
      *exact = sums_are_exact<T>(smallest, total);
      if (contrast) {
        double* q = suf.data();
        q[length] = -0.0;
        for (int64_t t = length - 1; t >= 0; --t) q[t] = v_out[t] + q[t + 1];
      }
    }
    return RowSums{pre.data(), suf.data(), pre_s.data(), suf_s.data(), cnt.data(), length,
                   careful};
  }
};

// The exact division S / n bounds the mean and contrast loops; AVX2 divides
// four doubles at a time where SSE2 (the portable baseline) divides two, so
// the band rows are FASTVQA_VECTOR_CLONES (common/macros.h).

// Running sums indexed by the absolute end j are updated row after row with
// a one-step shift. Vector loads that straddle the previous row's vector
// stores cannot be forwarded from the store buffer (a stall of ~15 cycles
// per vector): every vector loop over them runs on groups aligned in j (the
// buffer itself 32-byte aligned), with scalar heads and tails.
constexpr int64_t kGroup = 4;
inline int64_t align_up(int64_t j) { return (j + kGroup - 1) / kGroup * kGroup; }

struct AlignedBuffer {
  std::vector<double> raw;
  double* data = nullptr;
  void resize(int64_t n) {
    raw.resize(n + kGroup);
    const auto addr = reinterpret_cast<std::uintptr_t>(raw.data());
    data = reinterpret_cast<double*>((addr + 31) / 32 * 32);
  }
  int64_t bytes() const { return vector_bytes(raw); }
};

// Band row of start i of a plain row (no non-finite value, no overflow):
// acc[j] holds the sum of [i + 1, j] (-0.0 for j = i) and becomes that of
// [i, j] for j in [i, i + hi]; out[d] (d = j - i) is written for d in [lo, hi].
// (The band is narrower than 2^31: the offset is an int, so n = d + 1
// converts to double with a vector instruction.)
template <Reduce R, typename T>
FASTVQA_VECTOR_CLONES void plain_band_row(double xi, double* __restrict acc,
                                          const double* __restrict pre,
                                          const double* __restrict suf, int64_t i,
                                          int64_t length, int lo, int hi, T* __restrict out) {
  const double length_d = static_cast<double>(length);
  const int64_t j_end = i + hi + 1;  // exclusive
  int64_t j = i;
  for (const int64_t e = std::min(i + lo, j_end); j < e; ++j) acc[j] = xi + acc[j];  // too short
  for (const int64_t e = std::min(align_up(j), j_end); j < e; ++j) {
    const double s = xi + acc[j];
    acc[j] = s;
    out[j - i] = static_cast<T>(
        plain_score<R>(s, pre, suf, i, j, static_cast<double>(j - i + 1), length_d));
  }
  const int body = static_cast<int>((j_end - j) / kGroup * kGroup);
  double* a = acc + j;
  T* o = out + (j - i);
  const double* q = suf + j + 1;
  const double p = pre[i], n0 = static_cast<double>(j - i + 1);
#pragma omp simd aligned(a : 32)
  for (int k = 0; k < body; ++k) {
    const double s = xi + a[k];
    a[k] = s;
    const double outside = R == Reduce::kContrast ? p + q[k] : 0.0;
    o[k] = static_cast<T>(combine<R>(s, outside, n0 + static_cast<double>(k), length_d));
  }
  for (j += body; j < j_end; ++j) {
    const double s = xi + acc[j];
    acc[j] = s;
    out[j - i] = static_cast<T>(
        plain_score<R>(s, pre, suf, i, j, static_cast<double>(j - i + 1), length_d));
  }
}

// Whether every sum of a plain row's terms is exact in float64, from the
// row's smallest nonzero |x| and its sum of |x|: each term is
// a multiple of q (a power of two dividing the smallest nonzero |x|, from
// the mantissa width of the input type), and sum |x| < 2^53 q, so every
// partial sum, and every difference or sum of two of them, is a multiple of
// q below 2^53 q, which float64 holds exactly. Then P[j + 1] - P[i] is the
// span's exact sum: the same value the running sum of plain_band_row gives,
// at the cost of one independent subtraction per cell. Typical attention
// rows (float32 values within ~25 binades of each other) qualify; a row with
// a mask like finfo.min, or float64 values of mixed magnitudes, does not.
template <typename T>
bool sums_are_exact(double smallest, double total) {
  constexpr int kMantissa = std::numeric_limits<T>::digits - 1;  // 23 or 52
  if (total == 0.0) return true;  // all zeros
  int exponent;
  std::frexp(smallest, &exponent);  // smallest in [2^(exponent-1), 2^exponent)
  const int q_exp = exponent - 1 - kMantissa;
  // q must itself be a float64 (it is, for float32 input) and total is an
  // upper bound of every |partial sum| up to its own rounding (a relative
  // 2^-52 per term at most, covered by the factor 2 of headroom).
  return q_exp >= -1074 && total < std::ldexp(1.0, 52 + q_exp);
}

// Band row of start i from the prefix sums of a row whose sums are exact
// (sums_are_exact): the values of plain_band_row, vectorised over d.
template <Reduce R, typename T>
FASTVQA_VECTOR_CLONES void exact_band_row(const double* __restrict pre,
                                          const double* __restrict suf, int64_t i,
                                          int64_t length, int lo, int hi, T* __restrict out) {
  const double length_d = static_cast<double>(length);
  const double p = pre[i];
  const double* pe = pre + i + 1;
  const double* q = suf + i + 1;
#pragma omp simd
  for (int d = lo; d <= hi; ++d) {
    const double inside = pe[d] - p;
    const double outside = R == Reduce::kContrast ? p + q[d] : 0.0;
    out[d] = static_cast<T>(combine<R>(inside, outside, static_cast<double>(d + 1), length_d));
  }
}

// Writes a careful row's scores into its band (already -inf).
template <typename T>
struct BandEmit {
  T* out;
  int64_t width;
  void operator()(int64_t i, int64_t d, double v) const {
    out[i * width + d] = static_cast<T>(v);
  }
};

template <Reduce R, typename T>
void forward_rows(const ForwardParams<T>& p) {
  const int64_t batch = p.in.batch, steps = p.in.steps, width = p.width;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const op_costs::Entry& per_cell = R == Reduce::kContrast ? op_costs::kSpanScoresForwardContrast
                                    : R == Reduce::kMean   ? op_costs::kSpanScoresForwardMean
                                                           : op_costs::kSpanScoresForward;
  const LoopCost cost = op_costs::loop_cost(per_cell, batch, steps * width);
  parallel_rows(cost, [&](Chunks& chunks) {
    ThreadScratch<RowBuffers> row_scratch;
    ThreadScratch<AlignedBuffer> acc_scratch;
    RowBuffers& buf = *row_scratch;
    buf.resize(steps);
    acc_scratch->resize(steps);
    double* acc = acc_scratch->data;
    int64_t lo, hi;
    while (chunks.next(&lo, &hi)) {
      for (int64_t b = lo; b < hi; ++b) {
        bool exact;
        const RowSums r = buf.build_forward(p.in, b, R == Reduce::kContrast, &exact);
        const int64_t length = r.length;
        T* ob = p.out + b * steps * width;
        if (r.careful || width - 1 > std::numeric_limits<int>::max()) {
          std::fill(ob, ob + steps * width, neg_inf);
          BandEmit<T> emit{ob, width};
          for (int64_t j = 0; j < length; ++j)
            spans_ending_at<R>(buf.xd.data(), 1, r, j, p.min_len, width, emit);
          continue;
        }
        std::fill(ob + length * width, ob + steps * width, neg_inf);  // padding rows
        if (exact) {
          for (int64_t i = 0; i < length; ++i) {
            T* o = ob + i * width;
            int64_t lo, hi;
            offset_range(i, length, p.min_len, width, &lo, &hi);
            exact_band_row<R>(buf.pre.data(), buf.suf.data(), i, length, static_cast<int>(lo),
                              static_cast<int>(hi), o);
            std::fill(o, o + std::min(lo, hi + 1), neg_inf);  // too short
            std::fill(o + hi + 1, o + width, neg_inf);        // past the row's end
          }
          continue;
        }
        std::fill(acc, acc + length, -0.0);
        for (int64_t i = length - 1; i >= 0; --i) {
          T* o = ob + i * width;
          int64_t lo, hi;
          offset_range(i, length, p.min_len, width, &lo, &hi);  // hi >= 0: i < length
          plain_band_row<R>(buf.xd[i], acc, r.pre, r.suf, i, length,
                            static_cast<int>(lo), static_cast<int>(hi), o);
          std::fill(o, o + std::min(lo, hi + 1), neg_inf);  // too short
          std::fill(o + hi + 1, o + width, neg_inf);        // past the row's end
        }
      }
    }
  });
}

// ------------------------------------------------------------------ backward
//
// One row's gradient (span_scores_math.h). Step t adds row t's terms to the
// running column sums col[j] (C(j, t)) and col_out[j] (E(j)), j = t + d, and
// reads inside(t) (and F(t)) off the same pass: one pass over the band.

// A thread's scratch for the backward rows.
struct BackwardBuffers {
  AlignedBuffer col, col_out;
  std::vector<double> partial, f, in_c, out_c;
  void resize(int64_t steps, int64_t width) {
    col.resize(steps);
    col_out.resize(steps);
    partial.resize(steps);
    f.resize(steps);
    in_c.resize(width);
    out_c.resize(width);
  }
  int64_t bytes() const {
    return col.bytes() + col_out.bytes() + vector_bytes(partial, f, in_c, out_c);
  }
};

// col[j] summed over [j0, j1): aligned groups, scalar head and tail.
FASTVQA_VECTOR_CLONES double sum_range(const double* __restrict col, int64_t j0, int64_t j1) {
  double s = -0.0;
  int64_t j = j0;
  for (const int64_t e = std::min(align_up(j), j1); j < e; ++j) s += col[j];
  const int body = static_cast<int>((j1 - j) / kGroup * kGroup);
  const double* c = col + j;
  double v = -0.0;
#pragma omp simd aligned(c : 32) reduction(+ : v)
  for (int k = 0; k < body; ++k) v += c[k];
  s += v;
  for (j += body; j < j1; ++j) s += col[j];
  return s;
}

// Adds row t's terms g(t, d) (at g + d * gs) to col[t + d] (times in_c[d];
// contrast: times out_c[d] to col_out[t + d], and their sum, F(t), to
// *f_out) for d in [lo, hi], and returns the sum of the updated
// col[t + lo .. t + hi]. Aligned groups in j, as in plain_band_row.
template <Reduce R, typename T>
FASTVQA_VECTOR_CLONES double add_and_sum(const T* __restrict g, int64_t gs, int64_t t, int64_t lo,
                                         int64_t hi, const double* __restrict in_c,
                                         const double* __restrict out_c, double* __restrict col,
                                         double* __restrict col_out, double* __restrict f_out) {
  const int64_t j_end = t + hi + 1;
  int64_t j = t + lo;
  double s = -0.0, f = -0.0;
  auto one = [&](int64_t jj) {
    const int64_t d = jj - t;
    const double gv = static_cast<double>(g[d * gs]);
    const double c = gv * in_c[d] + col[jj];
    col[jj] = c;
    s += c;
    if (R == Reduce::kContrast) {
      const double o = term(gv, out_c[d]);
      col_out[jj] = o + col_out[jj];
      f += o;
    }
  };
  for (const int64_t e = std::min(align_up(j), j_end); j < e; ++j) one(j);
  if (gs == 1) {
    const int body = static_cast<int>((j_end - j) / kGroup * kGroup);
    double* c = col + j;
    double* co = col_out + j;
    const int64_t d0 = j - t;
    const T* gg = g + d0;
    const double* ic = in_c + d0;
    const double* oc = out_c + d0;
    double v = -0.0, vf = -0.0;
#pragma omp simd aligned(c, co : 32) reduction(+ : v, vf)
    for (int k = 0; k < body; ++k) {
      const double gv = static_cast<double>(gg[k]);
      const double cv = gv * ic[k] + c[k];
      c[k] = cv;
      v += cv;
      if (R == Reduce::kContrast) {
        const double o = term(gv, oc[k]);
        co[k] = o + co[k];
        vf += o;
      }
    }
    s += v;
    f += vf;
    j += body;
  }
  for (; j < j_end; ++j) one(j);
  if (R == Reduce::kContrast) *f_out = f;
  return s;
}

// One row: inside(t) for t ascending (and, for contrast, left(t) and F(t)),
// then, for contrast, right(t) for t descending (span_scores_math.h).
template <Reduce R, typename T>
void backward_row(const BackwardParams<T>& p, int64_t b, BackwardBuffers& buf) {
  const int64_t steps = p.steps, width = p.width;
  const int64_t length = p.length(b);
  T* gx = p.grad_x + b * steps;
  std::fill(gx + length, gx + steps, T(0));
  if (length == 0) return;
  const T* grow = p.grad + b * p.g_s0;
  double* col = buf.col.data;
  double* col_out = buf.col_out.data;
  double* in_c = buf.in_c.data();
  double* out_c = buf.out_c.data();
  double* partial = buf.partial.data();  // contrast: inside(t) + left(t)
  double* f = buf.f.data();              // contrast: F(t)
  // Offsets past the row never count: they need no coefficients.
  const int64_t w = std::min(width, length);
  for (int64_t d = 0; d < w; ++d) grad_coef<R>(d + 1, length, &in_c[d], &out_c[d]);
  std::fill(col, col + length, -0.0);
  if (R == Reduce::kContrast) std::fill(col_out, col_out + length, -0.0);
  double left = -0.0;
  for (int64_t t = 0; t < length; ++t) {
    int64_t lo, hi;  // hi + 1 = min(w, length - t): the ends whose C(j, t) is complete
    offset_range(t, length, p.min_len, width, &lo, &hi);
    // Ends t .. t + lo - 1 get no term from row t (too short); the others do.
    double inside = sum_range(col, t, t + std::min(lo, hi + 1));
    f[t] = -0.0;
    if (lo <= hi)
      inside += add_and_sum<R>(grow + t * p.g_s1, p.g_s2, t, lo, hi, in_c, out_c, col, col_out,
                               &f[t]);
    if (R == Reduce::kContrast) {
      partial[t] = inside + left;
      left = col_out[t] + left;  // E(t) is complete: no later start ends at t
    } else {
      gx[t] = static_cast<T>(inside);
    }
  }
  if (R == Reduce::kContrast) {
    double right = -0.0;  // the F(i) of starts i > t
    for (int64_t t = length - 1; t >= 0; --t) {
      gx[t] = static_cast<T>(partial[t] + right);
      right = f[t] + right;
    }
  }
}

template <Reduce R, typename T>
void backward_rows(const BackwardParams<T>& p) {
  const op_costs::Entry& per_cell = R == Reduce::kContrast ? op_costs::kSpanScoresBackwardContrast
                                                           : op_costs::kSpanScoresBackward;
  const LoopCost cost = op_costs::loop_cost(per_cell, p.batch, p.steps * p.width);
  parallel_rows(cost, [&](Chunks& chunks) {
    ThreadScratch<BackwardBuffers> scratch;
    BackwardBuffers& buf = *scratch;
    buf.resize(p.steps, p.width);
    int64_t lo, hi;
    while (chunks.next(&lo, &hi)) {
      for (int64_t b = lo; b < hi; ++b) backward_row<R>(p, b, buf);
    }
  });
}

// Collects every span ranking after a cursor (nms_full_scan).
template <typename T>
struct Cand {
  T s;
  int64_t i, j;
};
template <typename T>
struct CollectEmit {
  const Cursor<T>* after;
  std::vector<Cand<T>>* all;
  void operator()(int64_t i, int64_t d, double v) const {
    const T s = static_cast<T>(v);
    if (is_nan(s) || !ranks_before(after->score, after->i, after->j, s, i, i + d)) return;
    all->push_back(Cand<T>{s, i, i + d});
  }
};

// Exact greedy NMS past the first round: every remaining valid span, sorted
// in rank order (O(N log N) for the N spans of the row).
template <Reduce R, typename T>
void nms_full_scan(const TopParams<T>& p, const double* xd, const RowSums& r,
                   const Cursor<T>& after, int64_t* kept, int64_t* spans, T* scores) {
  std::vector<Cand<T>> all;
  CollectEmit<T> emit{&after, &all};
  for (int64_t j = 0; j < r.length; ++j)
    spans_ending_at<R>(xd, 1, r, j, p.min_len, p.max_len, emit);
  std::sort(all.begin(), all.end(), [](const Cand<T>& a, const Cand<T>& b) {
    return ranks_before(a.s, a.i, a.j, b.s, b.i, b.j);
  });
  for (const Cand<T>& c : all) {
    if (*kept == p.k) break;
    keep_unless_suppressed(c.s, c.i, c.j, p.nms_iou, kept, spans, scores);
  }
}

template <Reduce R, typename T>
void top_rows(const TopParams<T>& p) {
  const int64_t batch = p.in.batch, steps = p.in.steps;
  const Cursor<T> none{false, T(0), 0, 0};
  const LoopCost cost = op_costs::loop_cost(op_costs::kTopSpans, batch, steps * p.max_len);
  parallel_rows(cost, [&](Chunks& chunks) {
    ThreadScratch<RowBuffers> row_scratch;
    RowBuffers& buf = *row_scratch;
    buf.resize(steps);
    const int64_t cap = p.nms ? nms_round_size(p.k) : p.k;
    std::vector<int64_t> cand_spans(2 * cap);
    std::vector<T> cand_scores(cap);
    int64_t lo, hi;
    while (chunks.next(&lo, &hi)) {
      for (int64_t b = lo; b < hi; ++b) {
        const RowSums r = buf.build(p.in, b, R == Reduce::kContrast);
        const double* xd = buf.xd.data();
        int64_t* spans = p.out_spans + b * p.k * 2;
        T* scores = p.out_scores + b * p.k;
        if (!p.nms) {
          const int64_t count =
              scan_ranked<R>(xd, 1, r, p.min_len, p.max_len, p.k, none, spans, scores);
          fill_missing(count, p.k, spans, scores);
          continue;
        }
        const int64_t count = scan_ranked<R>(xd, 1, r, p.min_len, p.max_len, cap, none,
                                             cand_spans.data(), cand_scores.data());
        int64_t kept = 0;
        for (int64_t c = 0; c < count && kept < p.k; ++c)
          keep_unless_suppressed(cand_scores[c], cand_spans[2 * c], cand_spans[2 * c + 1],
                                 p.nms_iou, &kept, spans, scores);
        if (kept < p.k && count == cap) {  // the round ran out; more spans may remain
          const Cursor<T> after{true, cand_scores[cap - 1], cand_spans[2 * (cap - 1)],
                                cand_spans[2 * (cap - 1) + 1]};
          nms_full_scan<R>(p, xd, r, after, &kept, spans, scores);
        }
        fill_missing(kept, p.k, spans, scores);
      }
    }
  });
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
