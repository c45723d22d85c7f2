// SPDX-License-Identifier: Apache-2.0
// Validation and dispatch for span_similarity (explicit spans) and
// span_similarity_all (every span, banded), forward and backward.
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "fastvqa/bindings/arg_checks.h"
#include "fastvqa/bindings/array_arg.h"
#include "fastvqa/bindings/run_kernel.h"
#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/dispatch.h"
#include "fastvqa/ops/span_similarity/span_similarity.h"

namespace py = pybind11;

namespace fastvqa {
namespace span_similarity {

namespace {

Pool parse_pool(const std::string& pool, const char* op) {
  if (pool == "mean_of_cos") return Pool::kMeanOfCos;
  if (pool == "cos_of_mean") return Pool::kCosOfMean;
  throw ValueError(
      detail::concat(op, ": pool must be 'mean_of_cos' or 'cos_of_mean', got '", pool, "'"));
}

// Everything both passes check and hold: the inputs, kept alive, and the
// params filled in except for the outputs.
struct Call {
  const char* op;
  std::unique_ptr<ArrayArg> frames, query, spans;
  ValidatedIndex lengths;  // the checked copy the kernels read
  int64_t batch = 0, steps = 0, dim = 0, cells = 0, width = 0, min_len = 1, max_len = 0;
  Pool pool = Pool::kMeanOfCos;
  double eps = 0.0;
  std::uintptr_t stream = 0;

  const TensorView& fv() const { return frames->view(); }
  // The output (or upstream gradient) shape: (B, S) or (B, T, width).
  std::vector<int64_t> out_shape() const {
    return spans ? std::vector<int64_t>{batch, cells}
                 : std::vector<int64_t>{batch, steps, width};
  }

  template <typename T>
  Params<T> params() const {
    const TensorView &f = fv(), &q = query->view();
    Params<T> p{};
    p.frames = static_cast<const T*>(f.data);
    p.f_s0 = f.strides[0];
    p.f_s1 = f.strides[1];
    p.f_s2 = f.strides[2];
    p.query = static_cast<const T*>(q.data);
    p.q_s0 = q.strides[0];
    p.q_s1 = q.strides[1];
    if (spans) {
      const TensorView& s = spans->view();
      p.spans = static_cast<const int64_t*>(s.data);
      p.sp_s0 = s.strides[0];
      p.sp_s1 = s.strides[1];
      p.sp_s2 = s.strides[2];
    }
    p.lengths = lengths.data();
    p.len_s0 = 1;
    p.batch = batch;
    p.steps = steps;
    p.dim = dim;
    p.cells = cells;
    p.width = width;
    p.min_len = min_len;
    p.max_len = max_len;
    p.pool = pool;
    p.eps = eps;
    return p;
  }
};

Call check_call(py::object frames_obj, py::object query_obj, py::object spans_obj,
                const std::string& pool, int64_t min_len, py::object max_len_obj,
                py::object lengths_obj, double eps, std::uintptr_t stream,
                const py::object& alloc) {
  Call c;
  c.op = spans_obj.is_none() ? "span_similarity_all" : "span_similarity";
  const char* op = c.op;
  c.stream = stream;
  c.pool = parse_pool(pool, op);
  c.frames = std::make_unique<ArrayArg>(frames_obj, op, "frames", stream);
  c.query = std::make_unique<ArrayArg>(query_obj, op, "query", stream);
  const TensorView &f = c.frames->view(), &q = c.query->view();
  check_float(f, op, "frames");
  check_float(q, op, "query");
  check_ndim(f, 3, op, "frames", "(B, T, D)");
  check_ndim(q, 2, op, "query", "(B, D)");
  FASTVQA_CHECK_TYPE(f.dtype == q.dtype, op, ": frames and query must have the same dtype, got ",
                     f.dtype_str, " and ", q.dtype_str);
  check_same_device(f, q, op, "frames", "query");
  FASTVQA_CHECK(q.shape[0] == f.shape[0] && q.shape[1] == f.shape[2], op,
                ": query must have shape (B, D) = (", f.shape[0], ", ", f.shape[2],
                ") to match frames ", f.shape_str(), ", got shape ", q.shape_str());
  FASTVQA_CHECK(eps >= 0.0, op, ": eps must be >= 0, got ", eps);
  c.eps = eps;
  c.batch = f.shape[0];
  c.steps = f.shape[1];
  c.dim = f.shape[2];
  if (f.is_cuda()) require_cuda(op);
  if (!spans_obj.is_none()) {
    c.spans = std::make_unique<ArrayArg>(spans_obj, op, "spans", stream);
    const TensorView& s = c.spans->view();
    check_int64(s, op, "spans");
    check_same_device(f, s, op, "frames", "spans");
    FASTVQA_CHECK(s.ndim == 3 && s.shape[0] == c.batch && s.shape[2] == 2, op,
                  ": spans must have shape (B, S, 2) = (", c.batch,
                  ", S, 2) of inclusive step indices, got shape ", s.shape_str());
    c.cells = s.shape[1];
    return c;
  }
  c.width = max_len_arg(max_len_obj, min_len, c.steps, op);
  c.min_len = min_len;
  c.max_len = c.width;
  c.cells = checked_product({c.steps, c.width}, op, "the output (B, T, max_len)");
  checked_product({c.batch, c.cells}, op, "the output (B, T, max_len)");
  c.lengths = lengths_arg(lengths_obj, f, "frames", c.batch, c.steps, op, stream, alloc);
  return c;
}

// CUDA scratch: one RowWork of doubles per row (the CPU path keeps its own).
std::unique_ptr<ArrayArg> cuda_work(const Call& c, bool backward, const py::object& alloc) {
  if (!c.fv().is_cuda()) return nullptr;
  const int64_t size = RowWork::size(c.steps, c.dim, c.cells, c.pool, backward);
  return std::make_unique<ArrayArg>(allocate_output(
      alloc, {checked_product({c.batch, size}, c.op, "the CUDA scratch")}, "float64", c.op,
      c.stream));
}

py::object forward(py::object frames, py::object query, py::object spans, const std::string& pool,
                   int64_t min_len, py::object max_len, py::object lengths, double eps,
                   std::uintptr_t stream, py::object alloc) {
  Call c = check_call(frames, query, spans, pool, min_len, max_len, lengths, eps, stream, alloc);
  const TensorView& f = c.fv();
  ArrayArg out = allocate_output(alloc, c.out_shape(), dtype_name(f.dtype), c.op, stream);
  if (out.view().numel() == 0) return out.object();
  std::unique_ptr<ArrayArg> work = cuda_work(c, false, alloc);
  FASTVQA_DISPATCH_FLOAT(f.dtype, scalar_t, [&] {
    Params<scalar_t> p = c.params<scalar_t>();
    p.out = static_cast<scalar_t*>(out.view().data);
    if (work) p.work = static_cast<double*>(work->view().data);  // CUDA scratch
    FASTVQA_RUN_KERNEL(f, forward_cuda(p, stream), forward_cpu(p));
  });
  return out.object();
}

py::tuple backward(py::object grad_obj, py::object frames, py::object query, py::object spans,
                   const std::string& pool, int64_t min_len, py::object max_len,
                   py::object lengths, double eps, std::uintptr_t stream, py::object alloc) {
  Call c = check_call(frames, query, spans, pool, min_len, max_len, lengths, eps, stream, alloc);
  const TensorView& f = c.fv();
  ArrayArg grad(grad_obj, c.op, "grad", stream);
  const TensorView& g = grad.view();
  const std::vector<int64_t> shape = c.out_shape();
  bool same_shape = g.ndim == static_cast<int>(shape.size());
  for (int d = 0; same_shape && d < g.ndim; ++d) same_shape = g.shape[d] == shape[d];
  FASTVQA_CHECK(same_shape, c.op, ": grad must have the output's shape, got ", g.shape_str());
  FASTVQA_CHECK_TYPE(g.dtype == f.dtype, c.op, ": grad must have the dtype of frames (",
                     f.dtype_str, "), got ", g.dtype_str);
  check_same_device(f, g, c.op, "frames", "grad");
  ArrayArg gf = allocate_output(alloc, {c.batch, c.steps, c.dim}, dtype_name(f.dtype), c.op,
                                stream);
  ArrayArg gq = allocate_output(alloc, {c.batch, c.dim}, dtype_name(f.dtype), c.op, stream);
  if (gq.view().numel() == 0 && gf.view().numel() == 0)
    return py::make_tuple(gf.object(), gq.object());
  std::unique_ptr<ArrayArg> work = cuda_work(c, true, alloc);
  FASTVQA_DISPATCH_FLOAT(f.dtype, scalar_t, [&] {
    Params<scalar_t> p = c.params<scalar_t>();
    p.grad = static_cast<const scalar_t*>(g.data);
    p.g_s0 = g.strides[0];
    p.g_s1 = g.ndim > 1 ? g.strides[1] : 0;
    p.g_s2 = g.ndim > 2 ? g.strides[2] : 0;
    p.grad_frames = static_cast<scalar_t*>(gf.view().data);
    p.grad_query = static_cast<scalar_t*>(gq.view().data);
    if (work) p.work = static_cast<double*>(work->view().data);  // CUDA scratch
    FASTVQA_RUN_KERNEL(f, backward_cuda(p, stream), backward_cpu(p));
  });
  return py::make_tuple(gf.object(), gq.object());
}

}  // namespace

void register_span_similarity(py::module_& m) {
  m.def("span_similarity", &forward, py::arg("frames"), py::arg("query"), py::arg("spans"),
        py::arg("pool"), py::arg("min_len"), py::arg("max_len"), py::arg("lengths"),
        py::arg("eps"), py::arg("stream"), py::arg("alloc"),
        "Span-to-query cosine similarity (spans=None: every span, banded); see "
        "fastvqa.ops.span_similarity.");
  m.def("span_similarity_backward", &backward, py::arg("grad"), py::arg("frames"),
        py::arg("query"), py::arg("spans"), py::arg("pool"), py::arg("min_len"),
        py::arg("max_len"), py::arg("lengths"), py::arg("eps"), py::arg("stream"),
        py::arg("alloc"), "Gradients of span_similarity w.r.t. frames and query.");
}

}  // namespace span_similarity
}  // namespace fastvqa
