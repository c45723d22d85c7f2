// SPDX-License-Identifier: Apache-2.0
#include "fastvqa/bindings/array_arg.h"

#include <Python.h>

#include <cstring>
#include <string>

#include "fastvqa/common/cuda_runtime_api.h"
#include "fastvqa/common/dlpack.h"

namespace py = pybind11;

namespace fastvqa {

namespace {

DType dtype_from_format(const std::string& raw, py::ssize_t itemsize, std::string* name) {
  std::string fmt = raw;
  if (!fmt.empty() && (fmt[0] == '@' || fmt[0] == '=' || fmt[0] == '<')) fmt = fmt.substr(1);
  *name = "buffer format '" + raw + "'";
  if (fmt == "f" && itemsize == 4) return *name = "float32", DType::kFloat32;
  if (fmt == "d" && itemsize == 8) return *name = "float64", DType::kFloat64;
  if ((fmt == "q" || fmt == "l") && itemsize == 8) return *name = "int64", DType::kInt64;
  if (fmt == "e") *name = "float16";
  if (fmt == "i" || fmt == "l" || fmt == "h" || fmt == "b") *name = "int" + std::to_string(itemsize * 8);
  return DType::kOther;
}

DType dtype_from_dlpack(const DLDataType& t, std::string* name) {
  if (t.lanes != 1) return *name = "vector dtype", DType::kOther;
  switch (t.code) {
    case kDLFloat:
      *name = "float" + std::to_string(t.bits);
      if (t.bits == 32) return DType::kFloat32;
      if (t.bits == 64) return DType::kFloat64;
      return DType::kOther;
    case kDLInt:
      *name = "int" + std::to_string(t.bits);
      return t.bits == 64 ? DType::kInt64 : DType::kOther;
    case kDLUInt: *name = "uint" + std::to_string(t.bits); return DType::kOther;
    case kDLBfloat: *name = "bfloat16"; return DType::kOther;
    default: *name = "dlpack type code " + std::to_string(t.code); return DType::kOther;
  }
}

}  // namespace

ArrayArg::ArrayArg(py::handle obj, const char* op, const char* name, std::uintptr_t stream,
                   bool writable)
    : owner_(py::reinterpret_borrow<py::object>(obj)) {
  if (PyObject_CheckBuffer(obj.ptr())) {
    from_buffer(op, name, writable);
  } else if (py::hasattr(obj, "__dlpack__")) {
    from_dlpack(op, name, stream);
  } else {
    throw TypeError(detail::concat(op, ": ", name,
                                   " must be an array (NumPy array, torch tensor or an object "
                                   "with __dlpack__), got ",
                                   std::string(py::str(py::type::of(obj).attr("__name__")))));
  }
  FASTVQA_CHECK(view_.ndim <= kMaxDims, op, ": ", name, " has ", view_.ndim,
                " dimensions, at most ", kMaxDims, " are supported");
  align(op, name, writable);
}

ArrayArg::~ArrayArg() = default;

// Kernels load elements through typed pointers, which must be aligned to the
// item size. A buffer may start anywhere (a field of a packed NumPy record, a
// view at an odd byte offset): a CPU input that does is copied, element by
// element with memcpy, into aligned contiguous storage this object owns. A
// misaligned output or CUDA array is refused instead.
void ArrayArg::align(const char* op, const char* name, bool writable) {
  std::size_t itemsize = 0;
  switch (view_.dtype) {
    case DType::kFloat32: itemsize = 4; break;
    case DType::kFloat64:
    case DType::kInt64: itemsize = 8; break;
    default: return;  // rejected by the op's dtype check
  }
  if (reinterpret_cast<std::uintptr_t>(view_.data) % itemsize == 0) return;
  FASTVQA_CHECK(!writable && !view_.is_cuda(), op, ": ", name,
                " is not aligned to its item size (", itemsize, " bytes); pass a copy");
  const int64_t n = view_.numel();
  aligned_.assign(static_cast<std::size_t>((n * static_cast<int64_t>(itemsize) + 7) / 8), 0);
  char* dst = reinterpret_cast<char*>(aligned_.data());
  const char* base = static_cast<const char*>(view_.data);
  int64_t index[kMaxDims] = {0, 0, 0, 0};
  for (int64_t e = 0; e < n; ++e) {  // row-major walk over the view's elements
    int64_t offset = 0;
    for (int d = 0; d < view_.ndim; ++d) offset += index[d] * view_.strides[d];
    std::memcpy(dst + e * static_cast<int64_t>(itemsize),
                base + offset * static_cast<int64_t>(itemsize), itemsize);
    for (int d = view_.ndim - 1; d >= 0; --d) {
      if (++index[d] < view_.shape[d]) break;
      index[d] = 0;
    }
  }
  view_.data = dst;
  int64_t stride = 1;
  for (int d = view_.ndim - 1; d >= 0; --d) {
    view_.strides[d] = stride;
    stride *= view_.shape[d];
  }
}

void ArrayArg::from_buffer(const char* op, const char* name, bool writable) {
  try {
    buffer_ = std::make_unique<py::buffer_info>(
        py::reinterpret_borrow<py::buffer>(owner_).request(writable));
  } catch (py::error_already_set& e) {
    throw ValueError(detail::concat(op, ": ", name, " could not be read as a ",
                                    writable ? "writable " : "", "buffer: ", e.what()));
  }
  const py::buffer_info& info = *buffer_;
  view_.data = info.ptr;
  view_.dtype = dtype_from_format(info.format, info.itemsize, &view_.dtype_str);
  view_.ndim = static_cast<int>(info.ndim);
  FASTVQA_CHECK(view_.ndim <= kMaxDims, op, ": ", name, " has ", view_.ndim,
                " dimensions, at most ", kMaxDims, " are supported");
  for (int i = 0; i < view_.ndim; ++i) {
    view_.shape[i] = info.shape[i];
    // Buffer strides are in bytes; kernels index in elements.
    FASTVQA_CHECK(info.strides[i] % info.itemsize == 0, op, ": ", name,
                  " has a stride that is not a multiple of its item size (", info.strides[i],
                  " bytes); pass a copy");
    view_.strides[i] = info.strides[i] / info.itemsize;
  }
  view_.device = DeviceKind::kCPU;
  view_.writable = !info.readonly;
}

void ArrayArg::from_dlpack(const char* op, const char* name, std::uintptr_t stream) {
  py::tuple dev = owner_.attr("__dlpack_device__")();
  const int dev_type = dev[0].cast<int>();
  const int dev_id = dev[1].cast<int>();
  if (dev_type == kDLCUDA) {
    // DLPack reserves stream 0; the legacy default stream is spelled 1.
    capsule_ = owner_.attr("__dlpack__")(py::arg("stream") = stream == 0 ? 1 : stream);
  } else {
    capsule_ = owner_.attr("__dlpack__")();
  }
  auto* managed =
      static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule_.ptr(), "dltensor"));
  if (managed == nullptr) {
    PyErr_Clear();
    throw TypeError(detail::concat(op, ": ", name,
                                   " exported a DLPack capsule fastvqa cannot read (expected an "
                                   "unconsumed 'dltensor' capsule)"));
  }
  const DLTensor& t = managed->dl_tensor;
  if (t.device.device_type == kDLCUDA || t.device.device_type == kDLCUDAManaged) {
    view_.device = DeviceKind::kCUDA;
  } else if (t.device.device_type == kDLCPU || t.device.device_type == kDLCUDAHost) {
    view_.device = DeviceKind::kCPU;
  } else {
    throw TypeError(detail::concat(op, ": ", name, " lives on DLPack device type ",
                                   t.device.device_type, "; fastvqa runs on CPU and CUDA only"));
  }
  view_.device_index = t.device.device_id;
  (void)dev_id;
  view_.data = static_cast<char*>(t.data) + t.byte_offset;
  view_.dtype = dtype_from_dlpack(t.dtype, &view_.dtype_str);
  view_.ndim = t.ndim;
  FASTVQA_CHECK(view_.ndim <= kMaxDims, op, ": ", name, " has ", view_.ndim,
                " dimensions, at most ", kMaxDims, " are supported");
  int64_t compact = 1;
  for (int i = view_.ndim - 1; i >= 0; --i) {
    view_.shape[i] = t.shape[i];
    view_.strides[i] = t.strides ? t.strides[i] : compact;
    compact *= t.shape[i];
  }
}

ArrayArg allocate_output(const py::object& alloc, const std::vector<int64_t>& shape,
                         const char* dtype, const char* op, std::uintptr_t stream) {
  py::tuple py_shape(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) py_shape[i] = py::int_(shape[i]);
  py::object out;
  try {
    out = alloc(py_shape, dtype);
  } catch (py::error_already_set& e) {
    // An output too large for the machine (max_len or k far beyond what the
    // caller meant): one line naming the op, not the allocator's words alone.
    if (!e.matches(PyExc_MemoryError)) throw;
    const std::string what = py::str(e.value());
    PyErr_SetString(PyExc_MemoryError, (std::string(op) + ": cannot allocate the result: " +
                                        what).c_str());
    throw py::error_already_set();
  }
  ArrayArg arg(out, op, "output", stream, /*writable=*/true);
  FASTVQA_ASSERT(arg.view().is_row_contiguous());
  return arg;
}

std::vector<int64_t> int64_to_host(const TensorView& v, std::uintptr_t stream) {
  FASTVQA_ASSERT(v.ndim == 1 && v.dtype == DType::kInt64);
  const int64_t n = v.shape[0];
  std::vector<int64_t> host(n);
  if (v.is_cuda()) {
    // The Python layer hands CUDA index arrays over contiguous.
    FASTVQA_ASSERT(v.strides[0] == 1 || n <= 1);
    copy_device_to_host(host.data(), v.data, n * sizeof(int64_t), v.device_index, stream);
  } else {
    const int64_t* src = static_cast<const int64_t*>(v.data);
    for (int64_t i = 0; i < n; ++i) host[i] = src[i * v.strides[0]];
  }
  return host;
}

}  // namespace fastvqa
