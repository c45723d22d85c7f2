// SPDX-License-Identifier: Apache-2.0
// What this build contains; the values come from CMake as definitions.
#include <pybind11/pybind11.h>

#include <string>

#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/macros.h"
#include "fastvqa/common/parallel.h"


namespace py = pybind11;

#ifndef FASTVQA_VERSION
#define FASTVQA_VERSION "0+unknown"
#endif
#ifndef FASTVQA_CUDA_VERSION
#define FASTVQA_CUDA_VERSION ""
#endif
#ifndef FASTVQA_CUDA_ARCHS
#define FASTVQA_CUDA_ARCHS ""
#endif
#ifndef FASTVQA_CUDA_MAJOR
#define FASTVQA_CUDA_MAJOR ""
#endif
#ifndef FASTVQA_CUDA_MIN_DRIVER
#define FASTVQA_CUDA_MIN_DRIVER ""
#endif
#ifndef FASTVQA_DISTRIBUTION
#define FASTVQA_DISTRIBUTION "fastvqa"
#endif
#ifndef FASTVQA_COMPILER
#define FASTVQA_COMPILER "unknown"
#endif
#ifndef FASTVQA_CUDA_HOST_COMPILER
#define FASTVQA_CUDA_HOST_COMPILER ""
#endif

namespace fastvqa {

namespace {
// An empty compile definition (unknown, or a CPU-only build) becomes None.
py::object str_or_none(const char* s) { return *s ? py::object(py::str(s)) : py::none(); }
}  // namespace

py::dict build_info() {
  py::dict d;
  d["version"] = FASTVQA_VERSION;
  d["distribution"] = FASTVQA_DISTRIBUTION;
  d["cuda"] = built_with_cuda();
  d["cuda_version"] = built_with_cuda() ? str_or_none(FASTVQA_CUDA_VERSION) : py::none();
  const std::string major = FASTVQA_CUDA_MAJOR;
  d["cuda_major"] = built_with_cuda() && !major.empty() ? py::object(py::int_(std::stoi(major)))
                                                         : py::none();
  d["cuda_min_driver"] = built_with_cuda() ? str_or_none(FASTVQA_CUDA_MIN_DRIVER) : py::none();
  py::list archs;
  if (built_with_cuda()) {
    std::string s = FASTVQA_CUDA_ARCHS;
    size_t pos = 0;
    while (pos <= s.size()) {
      size_t next = s.find(',', pos);  // CMake passes the list comma-separated
      if (next == std::string::npos) next = s.size();
      if (next > pos) archs.append(s.substr(pos, next - pos));
      pos = next + 1;
    }
  }
  d["cuda_archs"] = archs;
  // The kernels' threads: fastvqa's own pool (parallel.h), no OpenMP runtime.
  d["threads"] = num_threads();
  d["compiler"] = FASTVQA_COMPILER;
  d["cuda_host_compiler"] =
      built_with_cuda() ? py::object(py::str(FASTVQA_CUDA_HOST_COMPILER)) : py::none();
  d["cuda_runtime"] = built_with_cuda() ? py::object(py::str("static")) : py::none();
  return d;
}

}  // namespace fastvqa
