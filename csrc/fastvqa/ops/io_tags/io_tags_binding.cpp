// SPDX-License-Identifier: Apache-2.0
// Validation and dispatch for io_to_spans and io_to_start_end.
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "fastvqa/bindings/arg_checks.h"
#include "fastvqa/bindings/array_arg.h"
#include "fastvqa/bindings/run_kernel.h"
#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/dispatch.h"
#include "fastvqa/ops/io_tags/io_tags.h"

namespace py = pybind11;

namespace fastvqa {
namespace io_tags {

namespace {

// The probabilities and optional lengths, checked; the kernels read the
// checked copy of lengths, never the caller's array.
TensorView check_rows(const ArrayArg& probs, const py::object& lengths_obj, const char* op,
                      std::uintptr_t stream, const py::object& alloc, ValidatedIndex* lengths) {
  const TensorView& pv = probs.view();
  check_float(pv, op, "probs");
  check_ndim(pv, 2, op, "probs", "(B, T)");
  if (pv.is_cuda()) require_cuda(op);
  *lengths = lengths_arg(lengths_obj, pv, "probs", pv.shape[0], pv.shape[1], op, stream, alloc);
  return pv;
}

template <typename T>
RowsParams<T> rows_params(const TensorView& pv, const ValidatedIndex& lengths) {
  return RowsParams<T>{static_cast<const T*>(pv.data),
                       pv.strides[0],
                       pv.strides[1],
                       lengths.data(),
                       1,
                       pv.shape[0],
                       pv.shape[1]};
}

py::tuple to_spans(py::object probs_obj, double threshold, int64_t min_len,
                   py::object lengths_obj, std::uintptr_t stream, py::object alloc) {
  const char* op = "io_to_spans";
  FASTVQA_CHECK(!std::isnan(threshold), op, ": threshold must be a number, got nan");
  FASTVQA_CHECK(min_len >= 1, op, ": min_len must be >= 1, got ", min_len);
  ArrayArg probs(probs_obj, op, "probs", stream);
  ValidatedIndex lengths;
  const TensorView pv = check_rows(probs, lengths_obj, op, stream, alloc, &lengths);
  const int64_t batch = pv.shape[0];
  const char* fdt = dtype_name(pv.dtype);

  ArrayArg counts = allocate_output(alloc, {batch}, "int64", op, stream);
  ArrayArg offsets = allocate_output(alloc, {batch + 1}, "int64", op, stream);
  py::object spans_obj, scores_obj;
  FASTVQA_DISPATCH_FLOAT(pv.dtype, scalar_t, [&] {
    SpansParams<scalar_t> p{rows_params<scalar_t>(pv, lengths),
                            threshold,
                            min_len,
                            static_cast<int64_t*>(counts.view().data),
                            static_cast<const int64_t*>(offsets.view().data),
                            nullptr,
                            nullptr};
    std::vector<int64_t> h_counts;
    if (batch > 0) {
      FASTVQA_RUN_KERNEL(pv, {
        io_count_cuda(p, stream);
        h_counts = int64_to_host(counts.view(), stream);  // waits for the kernel
      }, {
        io_count_cpu(p);
        h_counts.assign(p.counts, p.counts + batch);
      });
    }
    std::vector<int64_t> h_off(batch + 1, 0);
    for (int64_t b = 0; b < batch; ++b) h_off[b + 1] = h_off[b] + h_counts[b];
    ArrayArg spans = allocate_output(alloc, {h_off[batch], 2}, "int64", op, stream);
    ArrayArg scores = allocate_output(alloc, {h_off[batch]}, fdt, op, stream);
    p.out_spans = static_cast<int64_t*>(spans.view().data);
    p.out_scores = static_cast<scalar_t*>(scores.view().data);
    FASTVQA_RUN_KERNEL(pv, io_fill_cuda(p, h_off, stream), {
      std::copy(h_off.begin(), h_off.end(), static_cast<int64_t*>(offsets.view().data));
      if (h_off[batch] > 0) io_fill_cpu(p);
    });
    spans_obj = spans.object();
    scores_obj = scores.object();
  });
  return py::make_tuple(spans_obj, scores_obj, offsets.object());
}

py::tuple to_start_end(py::object probs_obj, py::object lengths_obj, std::uintptr_t stream,
                       py::object alloc) {
  const char* op = "io_to_start_end";
  ArrayArg probs(probs_obj, op, "probs", stream);
  ValidatedIndex lengths;
  const TensorView pv = check_rows(probs, lengths_obj, op, stream, alloc, &lengths);
  const int64_t batch = pv.shape[0], steps = pv.shape[1];
  ArrayArg start = allocate_output(alloc, {batch, steps}, dtype_name(pv.dtype), op, stream);
  ArrayArg end = allocate_output(alloc, {batch, steps}, dtype_name(pv.dtype), op, stream);
  if (batch * steps == 0) return py::make_tuple(start.object(), end.object());
  FASTVQA_DISPATCH_FLOAT(pv.dtype, scalar_t, [&] {
    StartEndParams<scalar_t> p{rows_params<scalar_t>(pv, lengths),
                               static_cast<scalar_t*>(start.view().data),
                               static_cast<scalar_t*>(end.view().data)};
    FASTVQA_RUN_KERNEL(pv, io_start_end_cuda(p, stream), io_start_end_cpu(p));
  });
  return py::make_tuple(start.object(), end.object());
}

}  // namespace

void register_io_tags(py::module_& m) {
  m.def("io_to_spans", &to_spans, py::arg("probs"), py::arg("threshold"), py::arg("min_len"),
        py::arg("lengths"), py::arg("stream"), py::arg("alloc"),
        "Runs of inside steps as scored spans; see fastvqa.ops.io_to_spans.");
  m.def("io_to_start_end", &to_start_end, py::arg("probs"), py::arg("lengths"),
        py::arg("stream"), py::arg("alloc"),
        "IO probabilities to start/end scores; see fastvqa.ops.io_to_start_end.");
}

}  // namespace io_tags
}  // namespace fastvqa
