// SPDX-License-Identifier: Apache-2.0
// Validation and dispatch for the temporal IoU family. Every caller-facing
// check lives here, once.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <vector>

#include "fastvqa/bindings/arg_checks.h"
#include "fastvqa/bindings/array_arg.h"
#include "fastvqa/bindings/run_kernel.h"
#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/dispatch.h"
#include "fastvqa/common/pairwise_sum.h"
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
    FASTVQA_RUN_KERNEL(av, overlap_cuda(p, stream), overlap_cpu(p));
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
      FASTVQA_RUN_KERNEL(pv, grounding_cuda(p, stream), grounding_cpu(p));
    });
  }
  return py::make_tuple(iou.object(), iop.object());
}

// fastvqa.metrics.grounded_qa's single pass (NExT-GQA mode, spans in
// seconds): float64 host spans and int64 answers, which the metric's own
// checks have made of its inputs. Returns a dict (see GroundingScan).
py::dict grounding_scan(py::object pred_obj, py::object gt_obj, py::object off_obj,
                        py::array_t<double, py::array::c_style | py::array::forcecast> thr,
                        py::object pred_answers, py::object gt_answers, int64_t no_answer,
                        double gqa_iop) {
  const char* op = "grounded_qa";
  ArrayArg pred(pred_obj, op, "preds", 0), gt(gt_obj, op, "gt_spans", 0),
      off(off_obj, op, "gt_offsets", 0);
  const TensorView &pv = pred.view(), &gv = gt.view(), &ov = off.view();
  check_spans(pv, op, "preds");
  check_spans(gv, op, "gt_spans");
  FASTVQA_CHECK_TYPE(pv.dtype == DType::kFloat64 && gv.dtype == DType::kFloat64 &&
                         !pv.is_cuda() && !gv.is_cuda(),
                     op, ": the scan takes float64 host spans, got ", pv.dtype_str, " and ",
                     gv.dtype_str);
  check_int64(ov, op, "gt_offsets");
  const int64_t n = pv.shape[0], k = gv.shape[0];
  FASTVQA_CHECK(ov.ndim == 1 && ov.shape[0] == n + 1, op,
                ": gt_offsets must have shape (N + 1,) = (", n + 1, ",) for N = ", n,
                " predictions, got shape ", ov.shape_str());
  FASTVQA_CHECK(thr.ndim() == 1, op, ": thresholds must be 1-D");
  FASTVQA_CHECK(!ov.is_cuda(), op, ": gt_offsets must be a host array");
  const int64_t n_t = thr.shape(0);
  py::array_t<double> iou(n), iop(n);
  py::array_t<bool> missing(n);
  py::array_t<int64_t> counts(2 * n_t);
  GroundingParams<double> p{static_cast<const double*>(pv.data), pv.strides[0], pv.strides[1],
                            static_cast<const double*>(gv.data), gv.strides[0], gv.strides[1],
                            static_cast<const int64_t*>(ov.data), ov.strides[0],
                            iou.mutable_data(), iop.mutable_data(), n};
  GroundingScan scan{reinterpret_cast<uint8_t*>(missing.mutable_data()), thr.data(), n_t,
                     counts.mutable_data()};
  scan.gt_rows = k;
  // Answers are only compared, never used as addresses, so the pass reads the
  // caller's arrays (held here) like the spans, not a checked copy.
  using Int64s = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
  Int64s pa, ga;
  py::array_t<bool> answered, correct;
  const bool with_answers = !pred_answers.is_none();
  if (with_answers) {
    pa = Int64s::ensure(pred_answers);
    ga = Int64s::ensure(gt_answers);
    FASTVQA_CHECK(pa && ga && pa.ndim() == 1 && ga.ndim() == 1 && pa.shape(0) == n &&
                      ga.shape(0) == n,
                  op, ": pred_answers and gt_answers must be (N,) integers");
    answered = py::array_t<bool>(n);
    correct = py::array_t<bool>(n);
    scan.pred_answers = pa.data();
    scan.gt_answers = ga.data();
    scan.no_answer = no_answer;
    scan.gqa_iop = gqa_iop;
    scan.answered = reinterpret_cast<uint8_t*>(answered.mutable_data());
    scan.correct = reinterpret_cast<uint8_t*>(correct.mutable_data());
  }
  {
    py::gil_scoped_release release;
    grounding_scan_cpu(p, &scan);
  }
  // The pass read the caller's offsets in place, each checked against the
  // rows of gt before use; the full rule (0 first, k last, non-decreasing)
  // is checked here, with host_row_offsets' message.
  const int64_t* o = static_cast<const int64_t*>(ov.data);
  if (scan.bad_offsets || o[0] != 0 || o[n * ov.strides[0]] != k) {
    host_row_offsets(ov, k, op, "gt_offsets", "ground-truth spans", 0);
    FASTVQA_CHECK(false, op, ": gt_offsets changed while the call read it");
  }
  py::dict out;
  out["iou"] = iou;
  out["iop"] = iop;
  out["missing"] = missing;
  out["counts"] = counts;
  out["bad_pred"] = scan.bad_pred;
  out["bad_gt"] = scan.bad_gt;
  out["sum_iou"] = scan.sum_iou;
  out["sum_iop"] = scan.sum_iop;
  if (with_answers) {
    out["answered"] = answered;
    out["correct"] = correct;
    out["n_answered"] = scan.n_answered;
    out["n_correct"] = scan.n_correct;
    out["n_gqa"] = scan.n_gqa;
    out["unanswered"] = scan.unanswered;
    out["bad_gt_answer"] = scan.bad_gt_answer;
  }
  return out;
}

// NumPy's pairwise sum of the float64 values of `x` whose `skip` flag is
// false (common/pairwise_sum.h); fastvqa.metrics checks it against
// np.add.reduce before it trusts the scan's sums.
double pairwise_sum(py::array_t<double, py::array::c_style | py::array::forcecast> x,
                    py::object skip_obj) {
  FASTVQA_CHECK(x.ndim() == 1, "pairwise_sum: x must be 1-D");
  const int64_t n = x.shape(0);
  std::vector<uint8_t> skip;
  int64_t kept = n;
  if (!skip_obj.is_none()) {
    auto s = py::array_t<bool, py::array::c_style | py::array::forcecast>::ensure(skip_obj);
    FASTVQA_CHECK(s && s.ndim() == 1 && s.shape(0) == n, "pairwise_sum: skip must be (n,) bools");
    skip.assign(reinterpret_cast<const uint8_t*>(s.data()),
                reinterpret_cast<const uint8_t*>(s.data()) + n);
    for (uint8_t f : skip) kept -= f != 0;
  }
  double sx, sy;
  MaskedPairwiseSum2(x.data(), x.data(), skip.empty() ? nullptr : skip.data())
      .sum(kept, &sx, &sy);
  return sx;
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
  m.def("_grounding_scan", &grounding_scan, py::arg("pred"), py::arg("gt"),
        py::arg("gt_offsets"), py::arg("thresholds"), py::arg("pred_answers"),
        py::arg("gt_answers"), py::arg("no_answer"), py::arg("gqa_iop"),
        "grounded_qa's one pass; see fastvqa.ops.temporal_iou.grounding_scan.");
  m.def("_pairwise_sum", &pairwise_sum, py::arg("x"), py::arg("skip"),
        "NumPy's pairwise float64 sum of x where skip is false (fastvqa.metrics' parity check).");
}

}  // namespace temporal_iou
}  // namespace fastvqa
