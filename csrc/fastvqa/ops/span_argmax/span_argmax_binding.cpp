// SPDX-License-Identifier: Apache-2.0
// Validation and dispatch for span_argmax.
#include <pybind11/pybind11.h>

#include <vector>

#include "fastvqa/bindings/arg_checks.h"
#include "fastvqa/bindings/array_arg.h"
#include "fastvqa/bindings/run_kernel.h"
#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/dispatch.h"
#include "fastvqa/ops/span_argmax/span_argmax.h"

namespace py = pybind11;

namespace fastvqa {
namespace span_argmax {

namespace {

constexpr const char* kOp = "span_argmax";

py::tuple run(py::object start_obj, py::object end_obj, py::object max_len_obj, int64_t min_len,
              int64_t topk, py::object lengths_obj, std::uintptr_t stream, py::object alloc) {
  ArrayArg start(start_obj, kOp, "start", stream), end(end_obj, kOp, "end", stream);
  const TensorView &sv = start.view(), &ev = end.view();
  check_float(sv, kOp, "start");
  check_float(ev, kOp, "end");
  check_ndim(sv, 2, kOp, "start", "(B, T)");
  check_ndim(ev, 2, kOp, "end", "(B, T)");
  FASTVQA_CHECK(sv.shape[0] == ev.shape[0] && sv.shape[1] == ev.shape[1], kOp,
                ": start and end must have the same shape, got ", sv.shape_str(), " and ",
                ev.shape_str());
  FASTVQA_CHECK_TYPE(sv.dtype == ev.dtype, kOp, ": start and end must have the same dtype, got ",
                     sv.dtype_str, " and ", ev.dtype_str);
  check_same_device(sv, ev, kOp, "start", "end");
  FASTVQA_CHECK(topk >= 1, kOp, ": k must be >= 1, got ", topk);
  const int64_t batch = sv.shape[0], steps = sv.shape[1];
  int64_t max_len = max_len_arg(max_len_obj, min_len, steps, kOp, "no limit");
  if (max_len > steps) max_len = steps;
  if (sv.is_cuda()) require_cuda(kOp);

  // The kernels read this checked copy, never the caller's array.
  const ValidatedIndex lengths =
      lengths_arg(lengths_obj, sv, "start", batch, steps, kOp, stream, alloc);

  ArrayArg spans = allocate_output(alloc, {batch, topk, 2}, "int64", kOp, stream);
  ArrayArg scores = allocate_output(alloc, {batch, topk}, dtype_name(sv.dtype), kOp, stream);
  if (batch == 0) return py::make_tuple(spans.object(), scores.object());

  FASTVQA_DISPATCH_FLOAT(sv.dtype, scalar_t, [&] {
    Params<scalar_t> p{static_cast<const scalar_t*>(sv.data),
                       sv.strides[0],
                       sv.strides[1],
                       static_cast<const scalar_t*>(ev.data),
                       ev.strides[0],
                       ev.strides[1],
                       lengths.data(),
                       1,
                       batch,
                       steps,
                       min_len,
                       max_len,
                       topk,
                       static_cast<int64_t*>(spans.view().data),
                       static_cast<scalar_t*>(scores.view().data)};
    FASTVQA_RUN_KERNEL(sv, span_argmax_cuda(p, stream), span_argmax_cpu(p));
  });
  return py::make_tuple(spans.object(), scores.object());
}

}  // namespace

void register_span_argmax(py::module_& m) {
  m.def("span_argmax", &run, py::arg("start"), py::arg("end"), py::arg("max_len"),
        py::arg("min_len"), py::arg("topk"), py::arg("lengths"), py::arg("stream"),
        py::arg("alloc"), "Best start/end spans per row; see fastvqa.ops.span_argmax.");
}

}  // namespace span_argmax
}  // namespace fastvqa
