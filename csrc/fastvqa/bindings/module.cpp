// SPDX-License-Identifier: Apache-2.0
// The extension module: a list of registrations, one per op, plus build info.
#include <pybind11/pybind11.h>

#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/macros.h"
#include "fastvqa/common/op_costs.h"
#include "fastvqa/common/parallel.h"

namespace py = pybind11;

namespace fastvqa {
namespace temporal_iou {
void register_temporal_iou(py::module_& m);
}
namespace span_argmax {
void register_span_argmax(py::module_& m);
}
namespace span_similarity {
void register_span_similarity(py::module_& m);
}
namespace nms_1d {
void register_nms_1d(py::module_& m);
}
namespace io_tags {
void register_io_tags(py::module_& m);
}
namespace span_scores {
void register_span_scores(py::module_& m);
}
py::dict build_info();
}  // namespace fastvqa

PYBIND11_MODULE(_C, m) {
  m.doc() = "fastvqa compiled kernels (CPU and, in CUDA builds, CUDA).";
  // fastvqa::ValueError derives from std::invalid_argument, which pybind11
  // already maps to ValueError; TypeError needs its own translator.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const fastvqa::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    }
  });
  m.def("build_info", &fastvqa::build_info, "What this build contains.");
  m.def("get_num_threads", &fastvqa::num_threads,
        "Threads of fastvqa's CPU kernels (its own pool).");
  m.def(
      "set_num_threads",
      [](int n) {
        FASTVQA_CHECK(n >= 1, "set_num_threads: n must be >= 1, got ", n);
        fastvqa::set_num_threads(n);
      },
      py::arg("n"), "Set the threads of fastvqa's CPU kernels.");
  m.def(
      "_loop_counts",
      [] {
        const fastvqa::LoopCounts c = fastvqa::loop_counts();
        return py::make_tuple(c.sized_to_split, c.split);
      },
      "(loops the cost model sized to split, loops that split) so far; for tests.");
  m.def(
      "_op_costs",
      [] {
        py::dict d;
        for (const auto& e : fastvqa::op_costs::kAll) d[e.name] = py::make_tuple(e.ns, e.per);
        d["split_ns"] = py::make_tuple(fastvqa::kSplitNs, "call");
        return d;
      },
      "The cost model: {loop: (ns per element on one thread, element)}, and split_ns.");
  m.def("cuda_device_count", &fastvqa::cuda_device_count,
        "CUDA devices visible to fastvqa's runtime (0 without a driver, GPU or CUDA build).");
  m.def("cuda_driver_version", &fastvqa::cuda_driver_version);
  fastvqa::temporal_iou::register_temporal_iou(m);
  fastvqa::span_argmax::register_span_argmax(m);
  fastvqa::span_similarity::register_span_similarity(m);
  fastvqa::nms_1d::register_nms_1d(m);
  fastvqa::io_tags::register_io_tags(m);
  fastvqa::span_scores::register_span_scores(m);
}
