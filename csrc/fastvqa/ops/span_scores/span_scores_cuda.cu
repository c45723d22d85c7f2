// SPDX-License-Identifier: Apache-2.0
// CUDA kernels for span_scores and top_spans; the semantics are in
// span_scores_math.h, so these kernels only index. The row sums (P, Q, their
// scaled copies, counts, careful flag) are built by one thread per row into
// scratch the binding allocates; the band is then filled by one thread per
// (row, end step j), streaming the spans ending at j (one add per cell, the
// same sums as the CPU, bit for bit). The backward runs one thread per (row,
// end) for the column sums C(j, t), one per (row, step) for inside(t), then
// one per row for the outside terms. top_spans runs one thread per row.
#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/cuda_utils.cuh"
#include "fastvqa/ops/span_scores/span_scores.h"

namespace fastvqa {
namespace span_scores {

namespace {

// Row b's sums in the scratch laid out by row_sums_size.
__device__ RowSums row_sums_at(double* prefix, int64_t* counts, int64_t steps, int64_t length,
                               int64_t b) {
  double* base = prefix + b * row_sums_size(steps);
  const int64_t n = steps + 1;
  return RowSums{base, base + n, base + 2 * n, base + 3 * n, counts + b * 3 * n, length,
                 base[4 * n] != 0.0};
}

template <typename T>
__device__ void build_row(const RowInput<T>& in, double* prefix, int64_t* counts, int64_t b) {
  double* base = prefix + b * row_sums_size(in.steps);
  const int64_t n = in.steps + 1;
  const T* x = in.x + b * in.x_s0;
  const int64_t length = in.length(b);
  const bool careful = scan_row(x, in.x_s1, length, static_cast<double*>(nullptr));
  if (careful) {
    build_careful_sums(x, in.x_s1, length, base, base + n, base + 2 * n, base + 3 * n,
                       counts + b * 3 * n);
  } else {
    build_plain_sums(x, in.x_s1, length, base, base + n);
  }
  base[4 * n] = careful ? 1.0 : 0.0;
}

template <typename T>
__global__ void prefix_kernel(RowInput<T> in, double* prefix, int64_t* counts) {
  for (const long long b : grid_stride(in.batch))
    build_row(in, prefix, counts, b);
}

template <typename T>
struct BandEmit {
  T* out;
  int64_t width;
  __device__ void operator()(int64_t i, int64_t d, double v) const {
    out[i * width + d] = static_cast<T>(v);
  }
};

// One thread per (b, j), j in [0, steps + width - 1): the cells (j - d, d) of
// the band, i.e. the spans ending at j (-inf where invalid).
template <Reduce R, typename T>
__global__ void forward_kernel(ForwardParams<T> p) {
  const long long ends = p.in.steps + p.width - 1;
  const long long total = static_cast<long long>(p.in.batch) * ends;
  const T neg_inf = static_cast<T>(-INFINITY);
  for (const long long idx : grid_stride(total)) {
    const long long b = idx / ends;
    const long long j = idx % ends;
    const int64_t length = p.in.length(b);
    T* ob = p.out + b * p.in.steps * p.width;
    const long long d_lo = j - (p.in.steps - 1) > 0 ? j - (p.in.steps - 1) : 0;
    const long long d_hi = p.width - 1 < j ? p.width - 1 : j;
    if (j >= length) {
      for (long long d = d_lo; d <= d_hi; ++d) ob[(j - d) * p.width + d] = neg_inf;
      continue;
    }
    const long long short_end = p.min_len - 1 < d_hi + 1 ? p.min_len - 1 : d_hi + 1;
    for (long long d = 0; d < short_end; ++d) ob[(j - d) * p.width + d] = neg_inf;
    const RowSums r = row_sums_at(p.prefix, p.counts, p.in.steps, length, b);
    BandEmit<T> emit{ob, p.width};
    spans_ending_at<R>(p.in.x + b * p.in.x_s0, p.in.x_s1, r, j, p.min_len, p.width, emit);
  }
}

// C(j, t) for the spans ending at j into colsum[b, t, j - t] (every t with
// j - t < width, t >= 0), and E(j) into rowsum[b, 1, j].
template <Reduce R, typename T>
__global__ void column_kernel(BackwardParams<T> p) {
  const long long total = static_cast<long long>(p.batch) * p.steps;
  for (const long long idx : grid_stride(total)) {
    const long long b = idx / p.steps;
    const long long j = idx % p.steps;
    const int64_t length = p.length(b);
    if (j >= length) continue;
    double c = -0.0, e = -0.0;
    double* col = p.colsum + b * p.steps * p.width;
    for (long long i = j - p.width + 1 > 0 ? j - p.width + 1 : 0; i <= j; ++i) {
      const long long d = j - i;
      if (d + 1 >= p.min_len) {  // valid: d < width and j < length already hold
        double in_c, out_c;
        grad_coef<R>(d + 1, length, &in_c, &out_c);
        const double gv = static_cast<double>(p.g(b, i, d));
        c = gv * in_c + c;
        if (R == Reduce::kContrast) e = term(gv, out_c) + e;
      }
      col[i * p.width + d] = c;
    }
    p.rowsum[(b * 3 + 1) * p.steps + j] = e;
  }
}

// inside(t) (the column sums of ends t..t+W-1) and F(t); sum and mean write
// the gradient directly.
template <Reduce R, typename T>
__global__ void inside_kernel(BackwardParams<T> p) {
  const long long total = static_cast<long long>(p.batch) * p.steps;
  for (const long long idx : grid_stride(total)) {
    const long long b = idx / p.steps;
    const long long t = idx % p.steps;
    const int64_t length = p.length(b);
    if (t >= length) {
      p.grad_x[idx] = T(0);
      continue;
    }
    int64_t lo, hi;
    offset_range(t, length, p.min_len, p.width, &lo, &hi);
    const double* col = p.colsum + (b * p.steps + t) * p.width;
    double inside = -0.0;
    for (int64_t d = 0; d <= hi; ++d) inside += col[d];
    if (R != Reduce::kContrast) {
      p.grad_x[idx] = static_cast<T>(inside);
      continue;
    }
    double f = -0.0;
    for (int64_t d = lo; d <= hi; ++d) {
      double in_c, out_c;
      grad_coef<R>(d + 1, length, &in_c, &out_c);
      f += term(static_cast<double>(p.g(b, t, d)), out_c);
    }
    p.rowsum[(b * 3) * p.steps + t] = inside;
    p.rowsum[(b * 3 + 2) * p.steps + t] = f;
  }
}

// Contrast: grad[t] = (inside(t) + left(t)) + right(t), one thread per row.
template <typename T>
__global__ void outside_kernel(BackwardParams<T> p) {
  for (const long long b : grid_stride(p.batch)) {
    const int64_t length = p.length(b);
    const double* inside = p.rowsum + (b * 3) * p.steps;
    const double* e = p.rowsum + (b * 3 + 1) * p.steps;
    double* f = p.rowsum + (b * 3 + 2) * p.steps;
    double right = -0.0;
    for (int64_t t = length - 1; t >= 0; --t) {  // f[t] becomes right(t)
      const double ft = f[t];
      f[t] = right;
      right = ft + right;
    }
    double left = -0.0;
    T* gx = p.grad_x + b * p.steps;
    for (int64_t t = 0; t < length; ++t) {
      gx[t] = static_cast<T>((inside[t] + left) + f[t]);
      left = e[t] + left;
    }
  }
}

template <Reduce R, typename T>
__global__ void top_kernel(TopParams<T> p) {
  for (const long long b : grid_stride(p.in.batch)) {
    build_row(p.in, p.prefix, p.counts, b);
    const RowSums r = row_sums_at(p.prefix, p.counts, p.in.steps, p.in.length(b), b);
    const T* x = p.in.x + b * p.in.x_s0;
    int64_t* spans = p.out_spans + b * p.k * 2;
    T* scores = p.out_scores + b * p.k;
    Cursor<T> after{false, T(0), 0, 0};
    if (!p.nms) {
      fill_missing(scan_ranked<R>(x, p.in.x_s1, r, p.min_len, p.max_len, p.k, after, spans,
                                  scores),
                   p.k, spans, scores);
      continue;
    }
    // Rounds of `cap` candidates in rank order, each resuming after the last
    // one: greedy NMS sees every span in rank order, so the result is exact.
    int64_t* cs = p.cand_spans + b * p.cap * 2;
    T* cv = p.cand_scores + b * p.cap;
    int64_t kept = 0;
    while (kept < p.k) {
      const int64_t count =
          scan_ranked<R>(x, p.in.x_s1, r, p.min_len, p.max_len, p.cap, after, cs, cv);
      for (int64_t c = 0; c < count && kept < p.k; ++c)
        keep_unless_suppressed(cv[c], cs[2 * c], cs[2 * c + 1], p.nms_iou, &kept, spans,
                               scores);
      if (count < p.cap) break;  // no spans left
      after = Cursor<T>{true, cv[p.cap - 1], cs[2 * (p.cap - 1)], cs[2 * (p.cap - 1) + 1]};
    }
    fill_missing(kept, p.k, spans, scores);
  }
}

template <Reduce R, typename T>
void forward_launch(const ForwardParams<T>& p, cudaStream_t s) {
  prefix_kernel<T><<<blocks_for(p.in.batch, 64), 64, 0, s>>>(p.in, p.prefix, p.counts);
  FASTVQA_CUDA_CHECK_LAUNCH();
  const long long total = static_cast<long long>(p.in.batch) * (p.in.steps + p.width - 1);
  forward_kernel<R, T><<<blocks_for(total), kThreadsPerBlock, 0, s>>>(p);
  FASTVQA_CUDA_CHECK_LAUNCH();
}

template <Reduce R, typename T>
void backward_launch(const BackwardParams<T>& p, cudaStream_t s) {
  const long long total = static_cast<long long>(p.batch) * p.steps;
  column_kernel<R, T><<<blocks_for(total), kThreadsPerBlock, 0, s>>>(p);
  FASTVQA_CUDA_CHECK_LAUNCH();
  inside_kernel<R, T><<<blocks_for(total), kThreadsPerBlock, 0, s>>>(p);
  FASTVQA_CUDA_CHECK_LAUNCH();
  if (R == Reduce::kContrast) {
    outside_kernel<T><<<blocks_for(p.batch, 64), 64, 0, s>>>(p);
    FASTVQA_CUDA_CHECK_LAUNCH();
  }
}

template <Reduce R, typename T>
void top_launch(const TopParams<T>& p, cudaStream_t s) {
  top_kernel<R, T><<<blocks_for(p.in.batch, 64), 64, 0, s>>>(p);
  FASTVQA_CUDA_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void forward_cuda(const ForwardParams<T>& p, std::uintptr_t stream) {
  if (p.in.batch == 0 || p.in.steps == 0) return;
  const cudaStream_t s = as_stream(stream);
  switch (p.reduce) {
    case Reduce::kSum: forward_launch<Reduce::kSum>(p, s); break;
    case Reduce::kMean: forward_launch<Reduce::kMean>(p, s); break;
    case Reduce::kContrast: forward_launch<Reduce::kContrast>(p, s); break;
  }
}

template <typename T>
void backward_cuda(const BackwardParams<T>& p, std::uintptr_t stream) {
  if (p.batch == 0 || p.steps == 0) return;
  const cudaStream_t s = as_stream(stream);
  switch (p.reduce) {
    case Reduce::kSum: backward_launch<Reduce::kSum>(p, s); break;
    case Reduce::kMean: backward_launch<Reduce::kMean>(p, s); break;
    case Reduce::kContrast: backward_launch<Reduce::kContrast>(p, s); break;
  }
}

template <typename T>
void top_spans_cuda(const TopParams<T>& p, std::uintptr_t stream) {
  if (p.in.batch == 0) return;
  const cudaStream_t s = as_stream(stream);
  switch (p.reduce) {
    case Reduce::kSum: top_launch<Reduce::kSum>(p, s); break;
    case Reduce::kMean: top_launch<Reduce::kMean>(p, s); break;
    case Reduce::kContrast: top_launch<Reduce::kContrast>(p, s); break;
  }
}

template void forward_cuda<float>(const ForwardParams<float>&, std::uintptr_t);
template void forward_cuda<double>(const ForwardParams<double>&, std::uintptr_t);
template void backward_cuda<float>(const BackwardParams<float>&, std::uintptr_t);
template void backward_cuda<double>(const BackwardParams<double>&, std::uintptr_t);
template void top_spans_cuda<float>(const TopParams<float>&, std::uintptr_t);
template void top_spans_cuda<double>(const TopParams<double>&, std::uintptr_t);

}  // namespace span_scores
}  // namespace fastvqa
