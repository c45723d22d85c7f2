// SPDX-License-Identifier: Apache-2.0
// Validation and dispatch for nms_1d.
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "fastvqa/bindings/arg_checks.h"
#include "fastvqa/bindings/array_arg.h"
#include "fastvqa/bindings/run_kernel.h"
#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/dispatch.h"
#include "fastvqa/ops/nms_1d/nms_1d.h"

namespace py = pybind11;

namespace fastvqa {
namespace nms_1d {

namespace {

constexpr const char* kOp = "nms_1d";

Method parse_method(const std::string& method) {
  if (method == "hard") return Method::kHard;
  if (method == "linear") return Method::kLinear;
  if (method == "gaussian") return Method::kGaussian;
  throw ValueError(detail::concat(
      kOp, ": method must be one of 'hard', 'linear', 'gaussian', got '", method, "'"));
}

Ties parse_ties(const std::string& ties) {
  if (ties == "start") return Ties::kStart;
  if (ties == "stable") return Ties::kStable;
  throw ValueError(detail::concat(kOp, ": ties must be one of 'start', 'stable', got '", ties,
                                  "'"));
}

// Host copy of the group offsets, checked before any kernel trusts them;
// no offsets means one group holding every span.
std::vector<int64_t> host_offsets(const ArrayArg* off, int64_t n, std::uintptr_t stream) {
  if (off == nullptr) return {0, n};
  const TensorView& ov = off->view();
  check_int64(ov, kOp, "offsets");
  FASTVQA_CHECK(ov.ndim == 1 && ov.shape[0] >= 1, kOp,
                ": offsets must have shape (G + 1,) with G >= 0 groups, got shape ",
                ov.shape_str());
  return host_row_offsets(ov, n, kOp, "offsets", "spans", stream);
}

py::tuple run(py::object spans_obj, py::object scores_obj, py::object offsets_obj,
              double iou_threshold, const std::string& method_name, double sigma,
              double score_threshold, const std::string& ties_name, std::uintptr_t stream,
              py::object alloc) {
  const Method method = parse_method(method_name);
  const Ties ties = parse_ties(ties_name);
  FASTVQA_CHECK(!std::isnan(iou_threshold), kOp, ": iou_threshold must be a number, got nan");
  FASTVQA_CHECK(sigma > 0, kOp, ": sigma must be > 0, got ", sigma);
  FASTVQA_CHECK(!std::isnan(score_threshold), kOp,
                ": score_threshold must be a number (-inf keeps every score), got nan");
  ArrayArg spans(spans_obj, kOp, "spans", stream), scores(scores_obj, kOp, "scores", stream);
  const TensorView &sv = spans.view(), &cv = scores.view();
  check_float(sv, kOp, "spans");
  check_float(cv, kOp, "scores");
  FASTVQA_CHECK(sv.ndim == 2 && sv.shape[1] == 2, kOp,
                ": spans must have shape (N, 2) holding [start, end] in seconds, got shape ",
                sv.shape_str());
  check_ndim(cv, 1, kOp, "scores", "(N,)");
  const int64_t n = sv.shape[0];
  FASTVQA_CHECK(cv.shape[0] == n, kOp, ": scores must have shape (N,) = (", n,
                ",) for N = ", n, " spans, got shape ", cv.shape_str());
  FASTVQA_CHECK_TYPE(sv.dtype == cv.dtype, kOp, ": spans and scores must have the same dtype, got ",
                     sv.dtype_str, " and ", cv.dtype_str);
  check_same_device(sv, cv, kOp, "spans", "scores");
  std::unique_ptr<ArrayArg> off;
  if (!offsets_obj.is_none()) {
    off = std::make_unique<ArrayArg>(offsets_obj, kOp, "offsets", stream);
    check_same_device(sv, off->view(), kOp, "spans", "offsets");
  }
  const bool cuda = sv.is_cuda();
  if (cuda) require_cuda(kOp);
  // The kernels read only this checked copy (on the host, or copied to the
  // device), never the caller's offsets: another thread may change those
  // while the GIL is released.
  const ValidatedIndex v_off(host_offsets(off.get(), n, stream), sv, alloc, kOp, stream);
  const std::vector<int64_t>& h_off = v_off.host();
  const int64_t groups = static_cast<int64_t>(h_off.size()) - 1;
  const char* fdt = dtype_name(sv.dtype);

  // Phase 1 scratch: each group's kept spans at the start of its segment.
  ArrayArg sel_keep = allocate_output(alloc, {n}, "int64", kOp, stream);
  ArrayArg sel_scores = allocate_output(alloc, {n}, fdt, kOp, stream);
  ArrayArg counts = allocate_output(alloc, {groups}, "int64", kOp, stream);
  std::unique_ptr<HardPlan> plan;
  std::vector<ArrayArg> scratch;  // CUDA only; kept alive until the kernels are queued
  [[maybe_unused]] CudaScratch cs{};  // read by the CUDA call only (compiled out without CUDA)
  if (cuda) {
    if (method == Method::kHard) {
      plan = std::make_unique<HardPlan>(plan_hard(h_off));
      const int64_t table_size = static_cast<int64_t>(plan->table.size());
      scratch.push_back(allocate_output(alloc, {table_size}, "int64", kOp, stream));
      scratch.push_back(allocate_output(alloc, {n}, "int64", kOp, stream));
      scratch.push_back(allocate_output(alloc, {plan->mask_words()}, "int64", kOp, stream));
      scratch.push_back(allocate_output(alloc, {plan->removed_words()}, "int64", kOp, stream));
      cs.table = static_cast<int64_t*>(scratch[0].view().data);
      cs.order = static_cast<int64_t*>(scratch[1].view().data);
      cs.mask = static_cast<int64_t*>(scratch[2].view().data);
      cs.removed = static_cast<int64_t*>(scratch[3].view().data);
    } else {
      scratch.push_back(allocate_output(alloc, {n}, "int64", kOp, stream));
      scratch.push_back(allocate_output(alloc, {n}, fdt, kOp, stream));
      cs.idx = static_cast<int64_t*>(scratch[0].view().data);
      cs.cur = scratch[1].view().data;
    }
  }

  std::vector<int64_t> out_off(groups + 1, 0);
  py::object keep_obj, keep_scores_obj, out_off_obj;
  FASTVQA_DISPATCH_FLOAT(sv.dtype, scalar_t, [&] {
    Params<scalar_t> p{static_cast<const scalar_t*>(sv.data),
                       sv.strides[0],
                       sv.strides[1],
                       static_cast<const scalar_t*>(cv.data),
                       cv.strides[0],
                       v_off.data(),
                       1,
                       n,
                       groups,
                       method,
                       ties,
                       iou_threshold,
                       static_cast<scalar_t>(sigma),
                       score_threshold,
                       static_cast<int64_t*>(sel_keep.view().data),
                       static_cast<scalar_t*>(sel_scores.view().data),
                       static_cast<int64_t*>(counts.view().data)};
    std::vector<int64_t> h_counts;
    if (groups > 0) {
      FASTVQA_RUN_KERNEL(sv, {
        nms_1d_cuda_select(p, plan.get(), cs, stream);
        h_counts = int64_to_host(counts.view(), stream);  // waits for the kernels
      }, {
        nms_1d_cpu_select(p);
        h_counts.assign(p.counts, p.counts + groups);
      });
    }
    for (int64_t g = 0; g < groups; ++g) out_off[g + 1] = out_off[g] + h_counts[g];

    // Phase 2: exact-size outputs, packed group after group.
    const int64_t total = out_off[groups];
    ArrayArg keep = allocate_output(alloc, {total}, "int64", kOp, stream);
    ArrayArg keep_scores = allocate_output(alloc, {total}, fdt, kOp, stream);
    ArrayArg offsets_out = allocate_output(alloc, {groups + 1}, "int64", kOp, stream);
    int64_t* keep_data = static_cast<int64_t*>(keep.view().data);
    scalar_t* keep_scores_data = static_cast<scalar_t*>(keep_scores.view().data);
    int64_t* offsets_data = static_cast<int64_t*>(offsets_out.view().data);
    FASTVQA_RUN_KERNEL(
        sv, nms_1d_cuda_gather(p, out_off, offsets_data, keep_data, keep_scores_data, stream), {
          std::copy(out_off.begin(), out_off.end(), offsets_data);
          if (groups > 0) nms_1d_cpu_gather(p, out_off.data(), keep_data, keep_scores_data);
        });
    keep_obj = keep.object();
    keep_scores_obj = keep_scores.object();
    out_off_obj = offsets_out.object();
  });
  return py::make_tuple(keep_obj, out_off_obj, keep_scores_obj);
}

}  // namespace

void register_nms_1d(py::module_& m) {
  m.def("nms_1d", &run, py::arg("spans"), py::arg("scores"), py::arg("offsets"),
        py::arg("iou_threshold"), py::arg("method"), py::arg("sigma"),
        py::arg("score_threshold"), py::arg("ties"), py::arg("stream"), py::arg("alloc"),
        "Temporal NMS over ragged groups; see fastvqa.ops.nms_1d.");
}

}  // namespace nms_1d
}  // namespace fastvqa
