# SPDX-License-Identifier: Apache-2.0
"""Array interop: array kinds, layouts and the CUDA-array error paths."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import fastvqa
from fastvqa import _C
from fastvqa.ops import grounding_overlap, span_argmax, temporal_iou
from tests.conftest import cuda_skip_reason


def _numpy_alloc(shape, dtype):
    return np.empty(shape, dtype=dtype)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class FakeCudaSpans:
    """A (n, 2) float32 array that claims, through DLPack, to live on cuda:0.

    It lets a machine without a GPU exercise the path a CUDA tensor takes
    into the extension; its data pointer must never be dereferenced.
    """

    def __init__(self, n: int):
        self._shape = (ctypes.c_int64 * 2)(n, 2)
        self._managed = _DLManagedTensor()
        t = self._managed.dl_tensor
        t.data = ctypes.c_void_p(0x1000)  # never read: the call must fail first
        t.device = _DLDevice(2, 0)  # kDLCUDA
        t.ndim = 2
        t.dtype = _DLDataType(2, 32, 1)  # float32
        t.shape = self._shape
        t.strides = None

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self._managed), b"dltensor", None)


def test_cuda_array_without_usable_cuda_gives_clear_error():
    if cuda_skip_reason() is None:
        pytest.skip("a GPU is present; the fake CUDA array would be dereferenced")
    a = FakeCudaSpans(3)
    if fastvqa.build_info()["cuda"]:
        match = "sees no device"
    else:
        match = "no CUDA kernels.*pip install fastvqa-cu1"
    with pytest.raises(RuntimeError, match=match):
        _C.temporal_iou(a, FakeCudaSpans(2), "iou", False, 0, _numpy_alloc)


def test_non_array_input_is_a_type_error():
    with pytest.raises(TypeError, match="temporal_iou: a must be an array"):
        _C.temporal_iou(object(), np.zeros((1, 2)), "iou", False, 0, _numpy_alloc)


def test_lists_readonly_fortran_and_byteswapped_numpy_inputs():
    spans = [[0.0, 10.0], [5.0, 15.0]]
    expected = np.array([[1.0, 1 / 3], [1 / 3, 1.0]])
    np.testing.assert_allclose(temporal_iou(spans, spans), expected)
    ro = np.array(spans)
    ro.setflags(write=False)
    np.testing.assert_allclose(temporal_iou(ro, ro), expected)
    fortran = np.asfortranarray(np.array(spans))
    np.testing.assert_allclose(temporal_iou(fortran, fortran), expected)
    swapped = np.array(spans, dtype=">f8")
    np.testing.assert_allclose(temporal_iou(swapped, swapped), expected)


def test_numpy_integer_spans_are_promoted_to_float64():
    out = temporal_iou(np.array([[0, 10]]), np.array([[5, 15]]))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, [[1 / 3]])


def test_torch_cpu_returns_torch():
    torch = pytest.importorskip("torch")
    a = torch.tensor([[0.0, 10.0], [5.0, 15.0]])
    out = temporal_iou(a, a)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    torch.testing.assert_close(out, torch.tensor([[1.0, 1 / 3], [1 / 3, 1.0]]))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_torch_half_inputs_compute_in_float32_and_keep_dtype(dtype):
    torch = pytest.importorskip("torch")
    dt = getattr(torch, dtype)
    s = torch.tensor([[0.0, 2.0, 1.0]], dtype=dt)
    e = torch.tensor([[1.0, 0.0, 3.0]], dtype=dt)
    spans, scores = span_argmax(s, e)
    assert spans.tolist() == [[1, 2]] and scores.dtype == dt and scores.item() == 5.0
    iou, iop = grounding_overlap(
        torch.tensor([[0.0, 4.0]], dtype=dt), torch.tensor([[2.0, 6.0]], dtype=dt), torch.tensor([0, 1])
    )
    assert iou.dtype == dt and iou.item() == pytest.approx(1 / 3, rel=1e-2)
    assert iop.item() == 0.5
