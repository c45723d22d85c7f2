// SPDX-License-Identifier: Apache-2.0
// Validation and dispatch for the temporal IoU family. Every caller-facing
// check lives here, once.
#include <pybind11/pybind11.h>

#include <vector>

#include "fastvqa/bindings/arg_checks.h"
#include "fastvqa/bindings/array_arg.h"
#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/dispatch.h"
#include "fastvqa/ops/temporal_iou/temporal_iou.h"

namespace py = pybind11;

namespace fastvqa {
namespace temporal_iou {

namespace {

Mode parse_mode(const std::string& mode, const char* op) {
  if (mode == "iou") return Mode::kIoU;
  if (mode == "iop") return Mode::kIoP;
  if (mode == "iog") return Mode::kIoG;
  if (mode == "giou") return Mode::kGIoU;
  throw ValueError(detail::concat(op, ": mode must be one of 'iou', 'iop', 'iog', 'giou', got '",
                                  mode, "'"));
}

void check_spans(const TensorView& t, const char* op, const char* arg) {
  check_float(t, op, arg);
  FASTVQA_CHECK(t.ndim == 2 && t.shape[1] == 2, op, ": ", arg,
                " must have shape (N, 2) holding [start, end] in seconds, got shape ",
                t.shape_str());
}

py::object overlap(py::object a_obj, py::object b_obj, const std::string& mode_name, bool paired,
                   std::uintptr_t stream, py::object alloc, bool caller_out) {
  const char* op = paired ? "paired_temporal_iou" : "temporal_iou";
  const Mode mode = parse_mode(mode_name, op);
  ArrayArg a(a_obj, op, "a", stream), b(b_obj, op, "b", stream);
  const TensorView &av = a.view(), &bv = b.view();
  check_spans(av, op, "a");
  check_spans(bv, op, "b");
  FASTVQA_CHECK_TYPE(av.dtype == bv.dtype, op, ": a and b must have the same dtype, got ",
                     av.dtype_str, " and ", bv.dtype_str);
  check_same_device(av, bv, op, "a", "b");
  if (paired)
    FASTVQA_CHECK(av.shape[0] == bv.shape[0], op,
                  ": a and b must have the same number of spans, got ", av.shape[0], " and ",
                  bv.shape[0]);

  if (av.is_cuda()) require_cuda(op);
  std::vector<int64_t> out_shape = paired ? std::vector<int64_t>{av.shape[0]}
                                          : std::vector<int64_t>{av.shape[0], bv.shape[0]};
  ArrayArg out = allocate_output(alloc, out_shape, dtype_name(av.dtype), op, stream);
  if (out.view().numel() == 0) return out.object();

  FASTVQA_DISPATCH_FLOAT(av.dtype, scalar_t, [&] {
    OverlapParams<scalar_t> p{static_cast<const scalar_t*>(av.data),
                              av.strides[0],
                              av.strides[1],
                              static_cast<const scalar_t*>(bv.data),
                              bv.strides[0],
                              bv.strides[1],
                              static_cast<scalar_t*>(out.view().data),
                              av.shape[0],
                              bv.shape[0],
                              mode,
                              paired,
                              caller_out};
    py::gil_scoped_release release;
    if (av.is_cuda()) {
      DeviceGuard guard(av.device_index);
      FASTVQA_CUDA_CALL(overlap_cuda(p, stream));
    } else {
      overlap_cpu(p);
    }
  });
  return out.object();
}

py::tuple grounding(py::object pred_obj, py::object gt_obj, py::object off_obj,
                    std::uintptr_t stream, py::object alloc) {
  const char* op = "grounding_overlap";
  ArrayArg pred(pred_obj, op, "pred", stream), gt(gt_obj, op, "gt", stream),
      off(off_obj, op, "gt_offsets", stream);
  const TensorView &pv = pred.view(), &gv = gt.view(), &ov = off.view();
  check_spans(pv, op, "pred");
  check_spans(gv, op, "gt");
  FASTVQA_CHECK_TYPE(pv.dtype == gv.dtype, op, ": pred and gt must have the same dtype, got ",
                     pv.dtype_str, " and ", gv.dtype_str);
  check_int64(ov, op, "gt_offsets");
  check_same_device(pv, gv, op, "pred", "gt");
  check_same_device(pv, ov, op, "pred", "gt_offsets");
  const int64_t n = pv.shape[0], k = gv.shape[0];
  FASTVQA_CHECK(ov.ndim == 1 && ov.shape[0] == n + 1, op,
                ": gt_offsets must have shape (N + 1,) = (", n + 1, ",) for N = ", n,
                " predictions, got shape ", ov.shape_str());
  if (pv.is_cuda()) require_cuda(op);
  // The kernels read this checked copy, never the caller's array (which
  // another thread may change while the GIL is released).
  const ValidatedIndex offsets(host_row_offsets(ov, k, op, "gt_offsets", "ground-truth spans",
                                                stream),
                               pv, alloc, op, stream);

  ArrayArg iou = allocate_output(alloc, {n}, dtype_name(pv.dtype), op, stream);
  ArrayArg iop = allocate_output(alloc, {n}, dtype_name(pv.dtype), op, stream);
  if (n > 0) {
    FASTVQA_DISPATCH_FLOAT(pv.dtype, scalar_t, [&] {
      GroundingParams<scalar_t> p{static_cast<const scalar_t*>(pv.data),
                                  pv.strides[0],
                                  pv.strides[1],
                                  static_cast<const scalar_t*>(gv.data),
                                  gv.strides[0],
                                  gv.strides[1],
                                  offsets.data(),
                                  1,
                                  static_cast<scalar_t*>(iou.view().data),
                                  static_cast<scalar_t*>(iop.view().data),
                                  n};
      py::gil_scoped_release release;
      if (pv.is_cuda()) {
        DeviceGuard guard(pv.device_index);
        FASTVQA_CUDA_CALL(grounding_cuda(p, stream));
      } else {
        grounding_cpu(p);
      }
    });
  }
  return py::make_tuple(iou.object(), iop.object());
}

}  // namespace

void register_temporal_iou(py::module_& m) {
  m.def("temporal_iou", &overlap, py::arg("a"), py::arg("b"), py::arg("mode"),
        py::arg("paired"), py::arg("stream"), py::arg("alloc"), py::arg("caller_out") = false,
        "Pairwise or paired temporal overlap; see fastvqa.ops.temporal_iou. caller_out: alloc "
        "returns the caller's out= array (large ones are then written past the caches).");
  m.def("grounding_overlap", &grounding, py::arg("pred"), py::arg("gt"), py::arg("gt_offsets"),
        py::arg("stream"), py::arg("alloc"),
        "NExT-GQA max-over-ground-truth IoU and IoP; see fastvqa.ops.grounding_overlap.");
}

}  // namespace temporal_iou
}  // namespace fastvqa
