// SPDX-License-Identifier: Apache-2.0
// Validation and dispatch for span_scores, span_scores_backward and top_spans.
#include <pybind11/pybind11.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fastvqa/bindings/arg_checks.h"
#include "fastvqa/bindings/array_arg.h"
#include "fastvqa/bindings/run_kernel.h"
#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/dispatch.h"
#include "fastvqa/ops/span_scores/span_scores.h"

namespace py = pybind11;

namespace fastvqa {
namespace span_scores {

namespace {

Reduce parse_reduce(const std::string& name, const char* op) {
  if (name == "sum") return Reduce::kSum;
  if (name == "mean") return Reduce::kMean;
  if (name == "contrast") return Reduce::kContrast;
  throw ValueError(detail::concat(op, ": reduce must be one of 'sum', 'mean', 'contrast', got '",
                                  name, "'"));
}

// Kernels read the checked copy of lengths (ValidatedIndex), never the caller's array.
template <typename T>
RowInput<T> row_input(const TensorView& xv, const ValidatedIndex& lengths) {
  return RowInput<T>{static_cast<const T*>(xv.data),
                     xv.strides[0],
                     xv.strides[1],
                     lengths.data(),
                     1,
                     xv.shape[0],
                     xv.shape[1]};
}

template <typename T>
T* data_of(const ArrayArg& a) {
  return static_cast<T*>(a.view().data);
}

py::object forward(py::object x_obj, const std::string& reduce_name, int64_t min_len,
                   py::object max_len_obj, py::object lengths_obj, std::uintptr_t stream,
                   py::object alloc) {
  const char* op = "span_scores";
  const Reduce reduce = parse_reduce(reduce_name, op);
  ArrayArg x(x_obj, op, "x", stream);
  const TensorView& xv = x.view();
  check_float(xv, op, "x");
  check_ndim(xv, 2, op, "x", "(B, T)");
  const int64_t batch = xv.shape[0], steps = xv.shape[1];
  const int64_t width = max_len_arg(max_len_obj, min_len, steps, op);
  if (xv.is_cuda()) require_cuda(op);
  const ValidatedIndex lengths =
      lengths_arg(lengths_obj, xv, "x", batch, steps, op, stream, alloc);

  checked_product({batch, steps, width}, op, "the output (B, T, max_len)");
  ArrayArg out = allocate_output(alloc, {batch, steps, width}, dtype_name(xv.dtype), op, stream);
  if (out.view().numel() == 0) return out.object();

  FASTVQA_DISPATCH_FLOAT(xv.dtype, scalar_t, [&] {
    ForwardParams<scalar_t> p{row_input<scalar_t>(xv, lengths),
                              width,
                              min_len,
                              reduce,
                              data_of<scalar_t>(out),
                              nullptr,
                              nullptr};
    std::optional<ArrayArg> prefix, counts;  // CUDA scratch
    if (xv.is_cuda()) {
      prefix.emplace(
          allocate_output(alloc, {batch, row_sums_size(steps)}, "float64", op, stream));
      counts.emplace(allocate_output(alloc, {batch, steps + 1, 3}, "int64", op, stream));
      p.prefix = data_of<double>(*prefix);
      p.counts = data_of<int64_t>(*counts);
    }
    FASTVQA_RUN_KERNEL(xv, forward_cuda(p, stream), forward_cpu(p));
  });
  return out.object();
}

py::object backward(py::object grad_obj, const std::string& reduce_name, int64_t min_len,
                    py::object lengths_obj, std::uintptr_t stream, py::object alloc) {
  const char* op = "span_scores_backward";
  const Reduce reduce = parse_reduce(reduce_name, op);
  ArrayArg grad(grad_obj, op, "grad", stream);
  const TensorView& gv = grad.view();
  check_float(gv, op, "grad");
  check_ndim(gv, 3, op, "grad", "(B, T, max_len)");
  FASTVQA_CHECK(min_len >= 1, op, ": min_len must be >= 1, got ", min_len);
  const int64_t batch = gv.shape[0], steps = gv.shape[1], width = gv.shape[2];
  if (gv.is_cuda()) require_cuda(op);
  const ValidatedIndex lengths =
      lengths_arg(lengths_obj, gv, "grad", batch, steps, op, stream, alloc);

  ArrayArg gx = allocate_output(alloc, {batch, steps}, dtype_name(gv.dtype), op, stream);
  if (gx.view().numel() == 0) return gx.object();

  FASTVQA_DISPATCH_FLOAT(gv.dtype, scalar_t, [&] {
    BackwardParams<scalar_t> p{static_cast<const scalar_t*>(gv.data),
                               gv.strides[0],
                               gv.strides[1],
                               gv.strides[2],
                               lengths.data(),
                               1,
                               batch,
                               steps,
                               width,
                               min_len,
                               reduce,
                               data_of<scalar_t>(gx),
                               nullptr,
                               nullptr};
    std::optional<ArrayArg> colsum, rowsum;  // CUDA scratch
    if (gv.is_cuda()) {
      colsum.emplace(allocate_output(alloc, {batch, steps, width}, "float64", op, stream));
      rowsum.emplace(allocate_output(alloc, {batch, 3, steps}, "float64", op, stream));
      p.colsum = data_of<double>(*colsum);
      p.rowsum = data_of<double>(*rowsum);
    }
    FASTVQA_RUN_KERNEL(gv, backward_cuda(p, stream), backward_cpu(p));
  });
  return gx.object();
}

py::tuple top_spans(py::object x_obj, int64_t k, const std::string& reduce_name, int64_t min_len,
                    py::object max_len_obj, py::object lengths_obj, py::object nms_obj,
                    std::uintptr_t stream, py::object alloc) {
  const char* op = "top_spans";
  const Reduce reduce = parse_reduce(reduce_name, op);
  ArrayArg x(x_obj, op, "x", stream);
  const TensorView& xv = x.view();
  check_float(xv, op, "x");
  check_ndim(xv, 2, op, "x", "(B, T)");
  FASTVQA_CHECK(k >= 1, op, ": k must be >= 1, got ", k);
  const int64_t batch = xv.shape[0], steps = xv.shape[1];
  int64_t max_len = max_len_arg(max_len_obj, min_len, steps, op);
  if (max_len > steps) max_len = steps;
  const bool nms = !nms_obj.is_none();
  const double nms_iou = nms ? nms_obj.cast<double>() : 1.0;
  FASTVQA_CHECK(nms_iou >= 0.0 && nms_iou <= 1.0, op,
                ": nms_iou must lie in [0, 1] (or be None for no NMS), got ", nms_iou);
  if (xv.is_cuda()) require_cuda(op);
  const ValidatedIndex lengths =
      lengths_arg(lengths_obj, xv, "x", batch, steps, op, stream, alloc);

  ArrayArg spans = allocate_output(alloc, {batch, k, 2}, "int64", op, stream);
  ArrayArg scores = allocate_output(alloc, {batch, k}, dtype_name(xv.dtype), op, stream);
  if (batch == 0) return py::make_tuple(spans.object(), scores.object());

  FASTVQA_DISPATCH_FLOAT(xv.dtype, scalar_t, [&] {
    TopParams<scalar_t> p{row_input<scalar_t>(xv, lengths),
                          min_len,
                          max_len,
                          k,
                          reduce,
                          nms,
                          nms_iou,
                          data_of<int64_t>(spans),
                          data_of<scalar_t>(scores),
                          nullptr,
                          nullptr,
                          nms_round_size(k),
                          nullptr,
                          nullptr};
    std::optional<ArrayArg> prefix, counts, cs, cv;  // CUDA scratch
    if (xv.is_cuda()) {
      const int64_t cap = nms ? p.cap : 1;  // no candidate list without NMS
      p.cap = cap;
      prefix.emplace(
          allocate_output(alloc, {batch, row_sums_size(steps)}, "float64", op, stream));
      counts.emplace(allocate_output(alloc, {batch, steps + 1, 3}, "int64", op, stream));
      cs.emplace(allocate_output(alloc, {batch, cap, 2}, "int64", op, stream));
      cv.emplace(allocate_output(alloc, {batch, cap}, dtype_name(xv.dtype), op, stream));
      p.prefix = data_of<double>(*prefix);
      p.counts = data_of<int64_t>(*counts);
      p.cand_spans = data_of<int64_t>(*cs);
      p.cand_scores = data_of<scalar_t>(*cv);
    }
    FASTVQA_RUN_KERNEL(xv, top_spans_cuda(p, stream), top_spans_cpu(p));
  });
  return py::make_tuple(spans.object(), scores.object());
}

}  // namespace

void register_span_scores(py::module_& m) {
  m.def("span_scores", &forward, py::arg("x"), py::arg("reduce"), py::arg("min_len"),
        py::arg("max_len"), py::arg("lengths"), py::arg("stream"), py::arg("alloc"),
        "Scores of every span as a band; see fastvqa.ops.span_scores.");
  m.def("span_scores_backward", &backward, py::arg("grad"), py::arg("reduce"),
        py::arg("min_len"), py::arg("lengths"), py::arg("stream"), py::arg("alloc"),
        "Gradient of span_scores with respect to x, from the band's gradient.");
  m.def("top_spans", &top_spans, py::arg("x"), py::arg("k"), py::arg("reduce"),
        py::arg("min_len"), py::arg("max_len"), py::arg("lengths"), py::arg("nms_iou"),
        py::arg("stream"), py::arg("alloc"),
        "The k best spans per row, optionally with NMS; see fastvqa.ops.top_spans.");
}

}  // namespace span_scores
}  // namespace fastvqa
